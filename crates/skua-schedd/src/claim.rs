//! The per-claim state machine: what a shadow does with a claim the
//! negotiator gave it.
//!
//! 1. **Claim.** The first job's ad goes to the startd with the claim id
//!    and the claim's keep-alive interval. A slot being preempted for this
//!    match answers `Unavailable` until its old job is gone (retirement,
//!    then vacate): the claim is asked again every second until it is
//!    granted, refused, or `REQUEST_CLAIM_TIMEOUT` (default 30 minutes) has
//!    passed; then the claim is released at the startd and given up. A job
//!    whose claim failed is no longer busy: it is Idle for the next cycle.
//! 2. **Start run.** The job is marked Running in the queue with the claim
//!    recorded ([`ClaimQueue::start_run`]); a job that left Idle meanwhile
//!    is skipped.
//! 3. **Activate.** The run is registered under the claim id (the
//!    starter's requests find it there) and the startd starts a starter.
//!    A startd still busy with the previous job of a reused claim answers
//!    `Unavailable`: it is polled until the claim is idle.
//! 4. **Executing.** The claim task keeps the claim alive every interval
//!    and waits for the run's end, reported by the starter-facing routes
//!    (`shadow.rs`) or seen here (the startd forgot the claim, the starter
//!    vanished, the startd was silent for the claim's whole lease).
//! 5. **End run.** A run lost outside the job is recorded
//!    ([`ClaimQueue::end_run`]) and ends the claim; a job that ended by
//!    itself leaves the claim usable.
//! 6. **Next job for the claim.** The user's next idle job that fits the
//!    slot is chosen and marked busy in one step
//!    ([`ClaimQueue::next_job`]) and runs from step 2; with none left, the
//!    claim is released.
//!
//! The machine reaches the queue only through [`ClaimQueue`] and the startd
//! only through [`Startd`], so its unit tests run it against fakes with a
//! test's clock.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use classad::{parse_ad, ClassAd};
use skua_daemon::account::Rights;
use skua_net::Client;
use skua_proto::{
    routes, Ack, ActivateRequest, ClaimAlive, ClaimReply, ClaimRequest, ClaimStatus,
    DeactivateRequest, ErrorCode, MatchInfo, ReleaseRequest,
};
use skua_queue::{JobId, RunEnd, Rusage};
use tokio::sync::{oneshot, Notify};

use crate::runs::{Run, RunResult, Shadows};
use crate::sandbox;
use crate::shared::{with_queue, with_schedd, Shared};

/// Timeout of a call to a startd.
pub(crate) const STARTD_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a claim or a run on it ended early.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShadowError {
    /// The startd cannot be dialed.
    #[error("cannot reach the startd at {address}: {reason}")]
    Unreachable { address: String, reason: String },
    /// The startd refused the claim.
    #[error("the startd refused the claim: {0}")]
    ClaimRefused(String),
    /// The slot was still being preempted when `REQUEST_CLAIM_TIMEOUT` ran out.
    #[error("the slot was not ready within {secs} s (REQUEST_CLAIM_TIMEOUT)")]
    ClaimTimedOut { secs: u64 },
    /// A reused claim's slot did not become idle for the next job.
    #[error("claim on {slot}: {reason}")]
    NotIdle { slot: String, reason: String },
    /// The startd did not start the job.
    #[error("the startd of {slot} did not start the job: {reason}")]
    NotActivated { slot: String, reason: String },
    /// The job was vacated, killed or held: its starter is gone.
    #[error("job {0} was stopped")]
    Stopped(JobId),
    /// The run was lost outside the job (startd or starter gone).
    #[error("{0}")]
    Lost(String),
    /// The queue refused a change (the code the schedd would answer).
    #[error("{message}")]
    Queue { code: ErrorCode, message: String },
}

impl ShadowError {
    fn queue(e: skua_net::ApiError) -> ShadowError {
        ShadowError::Queue {
            code: e.0.code,
            message: e.0.message,
        }
    }
}

impl From<ShadowError> for skua_net::ApiError {
    fn from(e: ShadowError) -> skua_net::ApiError {
        match e {
            ShadowError::Queue { code, message } => skua_net::ApiError::new(code, message),
            other => skua_net::ApiError::internal(other.to_string()),
        }
    }
}

/// A startd's answer, as the claim machine reads it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartdError {
    /// "Not yet": ask again later.
    #[error("{0}")]
    Unavailable(String),
    /// The startd does not know the claim.
    #[error("{0}")]
    NotFound(String),
    /// Anything else (refused, unreachable, timed out).
    #[error("{0}")]
    Failed(String),
}

impl From<skua_net::NetError> for StartdError {
    fn from(e: skua_net::NetError) -> StartdError {
        let unavailable = e.remote().is_some_and(|b| b.code == ErrorCode::Unavailable);
        if unavailable {
            StartdError::Unavailable(e.to_string())
        } else if e.code() == ErrorCode::NotFound {
            StartdError::NotFound(e.to_string())
        } else {
            StartdError::Failed(e.to_string())
        }
    }
}

/// The queue as a claim sees it: exactly the operations of the claim
/// machine.
pub(crate) trait ClaimQueue: Send + Sync {
    /// The job's whole ad, if it is still in the queue.
    fn job_ad(&self, job: JobId) -> impl Future<Output = Option<ClassAd>> + Send;
    /// Marks `job` Running on `slot` (whose ad is `slot_ad`) under the
    /// claim (recorded for a restart); its ad to send to the startd, with
    /// `$$()` expanded. `Ok(None)`: the job is gone, or held because a
    /// `$$()` of it cannot be expanded.
    fn start_run(
        &self,
        job: JobId,
        slot: &str,
        claim_id: &str,
        startd_addr: &str,
        slot_ad: &ClassAd,
    ) -> impl Future<Output = Result<Option<ClassAd>, ShadowError>> + Send;
    /// The job's process started on `slot` at `startd_addr`.
    fn executing(
        &self,
        job: JobId,
        startd_addr: &str,
        slot: &str,
    ) -> impl Future<Output = Result<(), ShadowError>> + Send;
    /// The run ended without the job's own report.
    fn end_run(&self, job: JobId, end: RunEnd) -> impl Future<Output = ()> + Send;
    /// The next idle job of `owner` that fits `slot_ad`, chosen and marked
    /// busy in one step (two claims never pick the same job).
    fn next_job(
        &self,
        owner: &str,
        slot_ad: &ClassAd,
    ) -> impl Future<Output = Option<JobId>> + Send;
    /// No claim holds `job` any more.
    fn done_with(&self, job: JobId);
    /// The run's startd stopped answering: event 022.
    fn disconnected(
        &self,
        job: JobId,
        slot: &str,
        startd_addr: &str,
    ) -> impl Future<Output = ()> + Send;
    /// The run's startd answers again: event 023.
    fn reconnected(
        &self,
        job: JobId,
        slot: &str,
        startd_addr: &str,
    ) -> impl Future<Output = ()> + Send;
    /// The run's startd answered a keep-alive (`LastJobLeaseRenewal`).
    fn lease_renewed(&self, job: JobId) -> impl Future<Output = ()> + Send;
}

/// HTCondor's reason in event 022.
pub(crate) const DISCONNECT_REASON: &str =
    "Socket between submit and execute hosts closed unexpectedly";

/// HTCondor's reason in event 024 when the lease ran out.
pub(crate) fn lease_expired_reason(lease: Duration) -> String {
    format!(
        "Job disconnected too long: JobLeaseDuration ({} seconds) expired",
        lease.as_secs()
    )
}

/// The pause before reconnect attempt `n` (0 first): HTCondor's
/// `RECONNECT_BACKOFF_FACTOR` (forced to 2) to the power `n + 2`, at most
/// `RECONNECT_BACKOFF_CEILING`; the first attempt at once.
pub(crate) fn reconnect_delay(n: u32, ceiling: Duration) -> Duration {
    if n == 0 {
        return Duration::ZERO;
    }
    let secs = 2u64.saturating_pow(n.saturating_add(2).min(40));
    Duration::from_secs(secs).min(ceiling)
}

/// The startd of a claim, as the claim machine speaks to it.
pub(crate) trait Startd: Send + Sync {
    fn claim(
        &self,
        request: &ClaimRequest,
    ) -> impl Future<Output = Result<ClaimReply, StartdError>> + Send;
    fn activate(
        &self,
        request: &ActivateRequest,
    ) -> impl Future<Output = Result<(), StartdError>> + Send;
    fn alive(
        &self,
        claim_id: &str,
    ) -> impl Future<Output = Result<ClaimStatus, StartdError>> + Send;
    fn deactivate(&self, claim_id: &str) -> impl Future<Output = Result<(), StartdError>> + Send;
    /// Releases the claim; best effort.
    fn release(&self, claim_id: &str) -> impl Future<Output = ()> + Send;
}

/// A startd over the network.
pub(crate) struct StartdClient {
    pub client: Client,
    pub address: String,
}

impl StartdClient {
    /// A client for the startd at `address`, made by the schedd's dialer.
    pub(crate) fn dial(shadows: &Shadows, address: &str) -> Result<StartdClient, ShadowError> {
        let client = shadows
            .dialer
            .client_at(address, STARTD_TIMEOUT)
            .map_err(|reason| ShadowError::Unreachable {
                address: address.to_string(),
                reason,
            })?;
        Ok(StartdClient {
            client,
            address: address.to_string(),
        })
    }
}

impl Startd for StartdClient {
    async fn claim(&self, request: &ClaimRequest) -> Result<ClaimReply, StartdError> {
        Ok(self
            .client
            .command(&routes::STARTD_CLAIM, Some(request))
            .await?)
    }

    async fn activate(&self, request: &ActivateRequest) -> Result<(), StartdError> {
        self.client
            .command::<_, Ack>(&routes::STARTD_ACTIVATE, Some(request))
            .await?;
        Ok(())
    }

    async fn alive(&self, claim_id: &str) -> Result<ClaimStatus, StartdError> {
        let alive = ClaimAlive {
            claim_id: claim_id.to_string(),
        };
        Ok(self
            .client
            .command(&routes::STARTD_ALIVE, Some(&alive))
            .await?)
    }

    async fn deactivate(&self, claim_id: &str) -> Result<(), StartdError> {
        let request = DeactivateRequest {
            claim_id: claim_id.to_string(),
            graceful: false,
        };
        self.client
            .command::<_, Ack>(&routes::STARTD_DEACTIVATE, Some(&request))
            .await?;
        Ok(())
    }

    async fn release(&self, claim_id: &str) {
        let request = ReleaseRequest {
            claim_id: claim_id.to_string(),
        };
        if let Err(e) = self
            .client
            .command::<_, Ack>(&routes::STARTD_RELEASE, Some(&request))
            .await
        {
            tracing::debug!("releasing a claim at {}: {e}", self.address);
        }
    }
}

/// The schedd's queue, on the thread that owns it with the busy jobs.
impl ClaimQueue for Shared {
    async fn job_ad(&self, job: JobId) -> Option<ClassAd> {
        with_schedd(self, move |s| Ok(s.job_ad(job)))
            .await
            .ok()
            .flatten()
    }

    async fn start_run(
        &self,
        job: JobId,
        slot: &str,
        claim_id: &str,
        startd_addr: &str,
        slot_ad: &ClassAd,
    ) -> Result<Option<ClassAd>, ShadowError> {
        let now = self.clock.now_secs();
        let (slot, claim_id, startd_addr, machine) = (
            slot.to_string(),
            claim_id.to_string(),
            startd_addr.to_string(),
            slot_ad.clone(),
        );
        with_schedd(self, move |s| {
            s.start_matched_run(job, &slot, &claim_id, &startd_addr, Some(&machine), now)
        })
        .await
        .map_err(ShadowError::queue)
    }

    async fn executing(
        &self,
        job: JobId,
        startd_addr: &str,
        slot: &str,
    ) -> Result<(), ShadowError> {
        let now = self.clock.now_secs();
        let (startd, slot) = (startd_addr.to_string(), slot.to_string());
        with_schedd(self, move |s| s.executing(job, &startd, &slot, now))
            .await
            .map_err(ShadowError::queue)
    }

    async fn end_run(&self, job: JobId, end: RunEnd) {
        let now = self.clock.now_secs();
        if let Err(e) = with_schedd(self, move |s| {
            s.run_ended(job, &end, Rusage::default(), now)
        })
        .await
        {
            tracing::error!("recording the end of job {job}'s run: {}", e.0.message);
        }
        self.changed.notify_one();
        self.reschedule.notify_one();
    }

    async fn next_job(&self, owner: &str, slot_ad: &ClassAd) -> Option<JobId> {
        let now = self.clock.now_secs();
        let (owner, ad) = (owner.to_string(), slot_ad.clone());
        with_queue(self, move |q| {
            // chosen and marked busy in one operation (see `negotiator::matches`)
            let job = q.schedd.next_job_for(&owner, &ad, &q.busy, now);
            Ok(job.filter(|j| q.busy.insert(*j)))
        })
        .await
        .ok()
        .flatten()
    }

    fn done_with(&self, job: JobId) {
        self.queue.send(move |q| {
            q.busy.remove(&job);
        });
    }

    async fn disconnected(&self, job: JobId, slot: &str, startd_addr: &str) {
        let now = self.clock.now_secs();
        let (slot, addr) = (slot.to_string(), startd_addr.to_string());
        if let Err(e) = with_schedd(self, move |s| {
            s.disconnected(job, DISCONNECT_REASON, &slot, &addr, now)
        })
        .await
        {
            tracing::error!("recording job {job}'s disconnection: {}", e.0.message);
        }
    }

    async fn reconnected(&self, job: JobId, slot: &str, startd_addr: &str) {
        let now = self.clock.now_secs();
        let (slot, addr) = (slot.to_string(), startd_addr.to_string());
        if let Err(e) = with_schedd(self, move |s| s.reconnected(job, &slot, &addr, now)).await {
            tracing::error!("recording job {job}'s reconnection: {}", e.0.message);
        }
        self.changed.notify_one();
    }

    async fn lease_renewed(&self, job: JobId) {
        let now = self.clock.now_secs();
        if let Err(e) = with_schedd(self, move |s| s.lease_renewed(job, now)).await {
            tracing::debug!("renewing job {job}'s lease: {}", e.0.message);
        }
    }
}

/// Claims the slot of `info` for `first` (already marked busy), then runs
/// jobs on it until none is left to run, and releases it.
pub(crate) async fn claim_task<Q: ClaimQueue, S: Startd>(
    shadows: &Shadows,
    queue: &Q,
    startd: &S,
    info: &MatchInfo,
    slot_ad: ClassAd,
    owner: &str,
    first: JobId,
) {
    let Some(addr) = shadows.addr.get().cloned() else {
        queue.done_with(first);
        return;
    };
    let Some(first_ad) = queue.job_ad(first).await else {
        queue.done_with(first);
        startd.release(&info.claim_id).await;
        return;
    };
    // the claim's keep-alive interval, announced to the startd (its
    // lease without a job lease is MAX_CLAIM_ALIVES_MISSED of them)
    let mut interval = shadows.alive.interval_for(&first_ad);
    let request = ClaimRequest {
        claim_id: info.claim_id.clone(),
        job_ad: first_ad.to_string(),
        schedd_addr: addr.clone(),
        alive_interval_secs: interval.as_secs(),
    };
    let (slot, mut slot_ad) = match claim(shadows, startd, info, &request, first).await {
        Ok(r) => {
            let ad = parse_ad(&r.slot_ad).unwrap_or(slot_ad);
            (r.slot, ad)
        }
        Err(e) => {
            tracing::info!("claiming {} for job {first} failed: {e}", info.slot);
            queue.done_with(first);
            if matches!(e, ShadowError::ClaimTimedOut { .. }) {
                // the startd may still grant it once its old job is gone
                startd.release(&info.claim_id).await;
            }
            return;
        }
    };
    tracing::info!("claimed {slot} for {owner}");
    let mut job = first;
    loop {
        let outcome = run_one(
            shadows,
            queue,
            startd,
            info,
            &slot,
            &addr,
            job,
            &slot_ad,
            &mut interval,
        )
        .await;
        queue.done_with(job);
        if let Err(e) = outcome {
            tracing::info!("claim on {slot}: {e}; releasing it");
            break;
        }
        // Claim reuse: the next idle job of the same user that fits.
        match queue.next_job(owner, &slot_ad).await {
            Some(j) => job = j,
            None => break,
        }
        // The slot ad's State is Claimed now; matching uses the rest.
        slot_ad.insert_value("State", "Claimed");
    }
    startd.release(&info.claim_id).await;
    tracing::debug!("released {slot}");
}

/// Asks the startd for the claim until it grants it, refuses it, or the
/// slot is still not ready after `REQUEST_CLAIM_TIMEOUT`.
pub(crate) async fn claim<S: Startd>(
    shadows: &Shadows,
    startd: &S,
    info: &MatchInfo,
    request: &ClaimRequest,
    job: JobId,
) -> Result<ClaimReply, ShadowError> {
    let deadline = shadows.clock.now() + shadows.claim_timeout;
    loop {
        match startd.claim(request).await {
            Ok(reply) => return Ok(reply),
            // A slot being preempted for this match answers Unavailable
            // until its old job is gone: ask again, up to the deadline.
            Err(StartdError::Unavailable(_)) => {
                if shadows.clock.now() >= deadline {
                    return Err(ShadowError::ClaimTimedOut {
                        secs: shadows.claim_timeout.as_secs(),
                    });
                }
                tracing::debug!("{} is being preempted for job {job}; waiting", info.slot);
                shadows.clock.sleep(shadows.claim_retry).await;
            }
            Err(e) => return Err(ShadowError::ClaimRefused(e.to_string())),
        }
    }
}

/// Polls the startd until no starter runs under the claim. The deadline
/// is the clock's; the pauses between polls only pace them.
async fn wait_until_idle<S: Startd>(
    shadows: &Shadows,
    startd: &S,
    claim_id: &str,
) -> Result<(), String> {
    let deadline = shadows.clock.now() + STARTD_TIMEOUT;
    let mut pause = Duration::from_millis(2);
    loop {
        match startd.alive(claim_id).await {
            Ok(s) if s.job_id.is_none() && s.state.eq_ignore_ascii_case("Claimed") => return Ok(()),
            Ok(_) => {}
            Err(StartdError::NotFound(_)) => {
                return Err("the startd no longer knows the claim".into())
            }
            Err(e) => return Err(format!("the startd does not answer: {e}")),
        }
        if shadows.clock.now() >= deadline {
            return Err("the slot did not become idle".into());
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Runs `job` under the claim, keeping it alive every `interval` (lowered
/// for a job with a shorter lease). `Err`: the claim is no longer usable.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_one<Q: ClaimQueue, S: Startd>(
    shadows: &Shadows,
    queue: &Q,
    startd: &S,
    info: &MatchInfo,
    slot: &str,
    addr: &str,
    job: JobId,
    slot_ad: &ClassAd,
    interval: &mut Duration,
) -> Result<(), ShadowError> {
    let started = queue
        .start_run(job, slot, &info.claim_id, &info.startd_addr, slot_ad)
        .await;
    let job_ad = match started {
        Ok(Some(ad)) => ad,
        Ok(None) => return Ok(()),
        Err(e) => {
            // The job left the idle state meanwhile: try another.
            tracing::debug!("job {job} cannot start: {e}");
            return Ok(());
        }
    };
    let (done_tx, done_rx) = oneshot::channel();
    let vacate = Arc::new(Notify::new());
    shadows.runs().insert(
        info.claim_id.clone(),
        Run {
            job,
            job_ad: job_ad.clone(),
            slot: slot.to_string(),
            startd_addr: info.startd_addr.clone(),
            inputs: None,
            checkpoint_upload: None,
            failure: None,
            executing: false,
            gate: None,
            done: Some(done_tx),
            vacate: vacate.clone(),
        },
    );
    // The starter learns the submit side's UID domain from the job ad (the
    // schedd's value wins over anything the user wrote), and the owner's
    // ids for a host in that domain that does not know the account.
    let mut sent_ad = job_ad.clone();
    sent_ad.insert_value("UidDomain", shadows.uid_domain.as_str());
    let owner = sandbox::string_attr(&job_ad, "Owner").unwrap_or_default();
    let owner_ids = match shadows.as_user.rights_of(&owner) {
        Ok(Rights::User(a)) => Some((a.uid, a.gid)),
        _ => None,
    };
    let request = ActivateRequest {
        claim_id: info.claim_id.clone(),
        job_ad: sent_ad.to_string(),
        job_id: job.to_string(),
        shadow_addr: addr.to_string(),
        owner_ids,
    };
    let mut activated = startd.activate(&request).await;
    // The starter tells the startd its job is done before it reports the
    // exit here, so the claim is normally idle again by now; if the startd
    // has not heard yet it answers Unavailable: wait until it has.
    if matches!(activated, Err(StartdError::Unavailable(_))) {
        activated = match wait_until_idle(shadows, startd, &info.claim_id).await {
            Ok(()) => startd.activate(&request).await,
            Err(reason) => {
                shadows.runs().remove(&info.claim_id);
                let e = ShadowError::NotIdle {
                    slot: slot.to_string(),
                    reason,
                };
                run_lost(queue, job, e.to_string()).await;
                return Err(e);
            }
        };
    }
    if let Err(e) = activated {
        shadows.runs().remove(&info.claim_id);
        let e = ShadowError::NotActivated {
            slot: slot.to_string(),
            reason: e.to_string(),
        };
        run_lost(queue, job, e.to_string()).await;
        return Err(e);
    }
    *interval = (*interval).min(shadows.alive.interval_for(&job_ad));
    let lease = shadows.alive.lease_for(&job_ad, *interval);
    let watch = Watch {
        info,
        job,
        interval: *interval,
        lease,
        reconnect: crate::lease::job_lease(&job_ad).is_some(),
    };
    let result = watch_run(shadows, queue, startd, &watch, done_rx, vacate).await;
    shadows.runs().remove(&info.claim_id);
    match result {
        RunResult::Reported { reusable: true } => Ok(()),
        RunResult::Reported { reusable: false } => Err(ShadowError::Stopped(job)),
        RunResult::Lost(reason) => {
            run_lost(queue, job, reason.clone()).await;
            Err(ShadowError::Lost(reason))
        }
        RunResult::ReconnectFailed(reason) => {
            let end = RunEnd::ReconnectFailed {
                reason: reason.clone(),
                startd_name: slot.to_string(),
            };
            queue.end_run(job, end).await;
            Err(ShadowError::Lost(reason))
        }
    }
}

/// What [`watch_run`] watches.
pub(crate) struct Watch<'a> {
    pub info: &'a MatchInfo,
    pub job: JobId,
    /// The keep-alive interval.
    pub interval: Duration,
    /// The claim's lease at the startd.
    pub lease: Duration,
    /// The job has a `JobLeaseDuration`: a silent startd is a
    /// disconnection (events 022, 023, 024), retried with HTCondor's
    /// back-off until the lease runs out.
    pub reconnect: bool,
}

/// Waits for the run's report, keeping the claim alive every `interval`
/// of the clock and watching it. A startd that does not answer for the
/// claim's whole `lease` has killed the job (HTCondor's rule): the run is
/// lost then, not before, so the job never runs twice at once. For a job
/// with a `JobLeaseDuration` the silence is a disconnection: event 022 at
/// the first failed keep-alive, tries again after HTCondor's back-off
/// delays, 023 when the startd answers again, and the run's
/// [`RunResult::ReconnectFailed`] (024) when the lease runs out.
pub(crate) async fn watch_run<Q: ClaimQueue, S: Startd>(
    shadows: &Shadows,
    queue: &Q,
    startd: &S,
    w: &Watch<'_>,
    mut done: oneshot::Receiver<RunResult>,
    vacate: Arc<Notify>,
) -> RunResult {
    let (info, job, interval, lease) = (w.info, w.job, w.interval, w.lease);
    let clock = &shadows.clock;
    let mut tick = clock.ticker(interval);
    tick.tick().await;
    let mut misses = 0u32;
    let mut last_answer = clock.now();
    let mut recorded = clock.now();
    let mut job_gone: Option<std::time::SystemTime> = None;
    // while disconnected: how many tries so far, and when the next is due
    let mut disconnected = false;
    let mut attempts = 0u32;
    let mut next_try = clock.now();
    let silent_for = |since| clock.now().duration_since(since).unwrap_or_default();
    loop {
        tokio::select! {
            r = &mut done => {
                return r.unwrap_or(RunResult::Lost("the run's report was lost".into()));
            }
            _ = vacate.notified() => {
                tracing::info!("stopping job {job} on {}", info.slot);
                if let Err(e) = startd.deactivate(&info.claim_id).await {
                    tracing::warn!("stopping job {job}: {e}");
                }
            }
            _ = tick.tick() => {
                if disconnected && clock.now() < next_try {
                    if silent_for(last_answer) >= lease {
                        tracing::warn!("job {job}: no answer from the startd of {} within the job's lease", info.slot);
                        return RunResult::ReconnectFailed(lease_expired_reason(lease));
                    }
                    continue;
                }
                // a keep-alive waits no longer than what is left of the
                // lease (a frozen startd must not hold the verdict back),
                // nor than a third of the lease: one unanswered that long
                // is a missed keep-alive, so a silent network (a cut link
                // drops packets without an error) is seen as a
                // disconnection (022) while two thirds of the lease are
                // left to reconnect, not only when the lease has run out
                let left = lease
                    .saturating_sub(silent_for(last_answer))
                    .min(lease / 3)
                    .max(Duration::from_secs(1));
                let status: Result<ClaimStatus, String> = tokio::select! {
                    r = startd.alive(&info.claim_id) => match r {
                        Ok(s) => Ok(s),
                        Err(StartdError::NotFound(_)) => {
                            let reason = format!("the startd of {} no longer knows the claim", info.slot);
                            if disconnected {
                                return RunResult::ReconnectFailed("Claim not found at execution machine".into());
                            }
                            return RunResult::Lost(reason);
                        }
                        Err(e) => Err(e.to_string()),
                    },
                    _ = clock.sleep(left) => Err(format!("no answer within {} s", left.as_secs())),
                };
                if status.is_ok() {
                    last_answer = clock.now();
                    if disconnected {
                        disconnected = false;
                        attempts = 0;
                        tracing::info!("job {job}: reconnected to the startd of {}", info.slot);
                        queue.reconnected(job, &info.slot, &info.startd_addr).await;
                        recorded = clock.now();
                    } else if w.reconnect && silent_for(recorded) >= interval {
                        queue.lease_renewed(job).await;
                        recorded = clock.now();
                    }
                }
                match status {
                    Ok(s) if s.job_id.as_deref() == Some(&job.to_string()) => {
                        misses = 0;
                        job_gone = None;
                    }
                    Ok(_) => {
                        // No starter runs the job any more. Its report may
                        // be in flight (or, with a lease, held by a starter
                        // that could not reach us): give it one more
                        // interval, or the lease.
                        misses += 1;
                        let gone = *job_gone.get_or_insert_with(|| clock.now());
                        if misses >= 2 && !w.reconnect {
                            return RunResult::Lost(format!("the starter of job {job} on {} went away", info.slot));
                        }
                        if misses >= 2 && silent_for(gone) >= lease {
                            // its starter never got through to us
                            return RunResult::ReconnectFailed(lease_expired_reason(lease));
                        }
                    }
                    Err(e) => {
                        let silent = silent_for(last_answer);
                        if silent >= lease {
                            if w.reconnect {
                                return RunResult::ReconnectFailed(lease_expired_reason(lease));
                            }
                            return RunResult::Lost(format!(
                                "the startd of {} has not answered for {} s, the claim's lease: {e}",
                                info.slot,
                                silent.as_secs()
                            ));
                        }
                        if w.reconnect {
                            if !disconnected {
                                disconnected = true;
                                tracing::warn!("job {job}: the startd of {} does not answer ({e}): disconnected, reconnecting", info.slot);
                                queue.disconnected(job, &info.slot, &info.startd_addr).await;
                            }
                            attempts += 1;
                            next_try = clock.now() + reconnect_delay(attempts, shadows.reconnect_ceiling);
                        } else {
                            tracing::warn!(
                                "job {job}: the startd of {} does not answer ({e}); the claim's lease ends in {} s",
                                info.slot,
                                (lease - silent).as_secs()
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The run failed outside the job (a retry may help): records it.
async fn run_lost<Q: ClaimQueue>(queue: &Q, job: JobId, reason: String) {
    let end = RunEnd::Failed {
        reason,
        hold_code: 0,
        hold_subcode: 0,
        permanent: false,
    };
    queue.end_run(job, end).await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    //! The claim machine against a fake queue and a fake startd, on a
    //! test's clock. The tests run on tokio's current-thread runtime and
    //! the fakes never wait, so a claim task runs until it waits on the
    //! clock (or ends) before the test looks again: what the test sees is
    //! where the task stands.

    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use skua_daemon::ManualClock;

    use super::*;
    use crate::lease::AliveConfig;
    use crate::runs::Dialer;

    const CLAIM: &str = "claim-1";

    fn job(text: &str) -> JobId {
        text.parse().unwrap()
    }

    /// The queue: idle jobs in order, running ones, finished ones.
    #[derive(Default)]
    struct FakeQueue {
        state: Mutex<QueueState>,
        /// `JobLeaseDuration` of every job ad, if any.
        lease: Option<i64>,
    }

    #[derive(Default)]
    struct QueueState {
        idle: Vec<JobId>,
        running: HashSet<JobId>,
        completed: Vec<JobId>,
        busy: HashSet<JobId>,
        started: Vec<JobId>,
        ended: Vec<(JobId, RunEnd)>,
        /// The user log events 022 and 023 the claim task asked for.
        events: Vec<(JobId, u32)>,
    }

    impl FakeQueue {
        fn with_idle(jobs: &[&str], lease: Option<i64>) -> Arc<FakeQueue> {
            let q = FakeQueue {
                lease,
                ..FakeQueue::default()
            };
            q.state.lock().unwrap().idle = jobs.iter().map(|j| job(j)).collect();
            Arc::new(q)
        }

        fn ad(&self, id: JobId) -> ClassAd {
            let mut ad = ClassAd::new();
            ad.insert_value("ClusterId", i64::from(id.cluster));
            ad.insert_value("ProcId", i64::from(id.proc));
            ad.insert_value("Owner", "nobody-here");
            if let Some(l) = self.lease {
                ad.insert_value("JobLeaseDuration", l);
            }
            ad
        }

        /// What the negotiator-facing route does with a match: the first
        /// idle job, marked busy.
        fn take_for_match(&self) -> JobId {
            let mut s = self.state.lock().unwrap();
            let j = s.idle[0];
            s.busy.insert(j);
            j
        }

        /// The starter reported the job's exit (the exit route's part).
        fn complete(&self, id: JobId) {
            let mut s = self.state.lock().unwrap();
            s.running.remove(&id);
            s.completed.push(id);
        }

        fn state<T>(&self, f: impl FnOnce(&QueueState) -> T) -> T {
            f(&self.state.lock().unwrap())
        }
    }

    impl ClaimQueue for FakeQueue {
        async fn job_ad(&self, id: JobId) -> Option<ClassAd> {
            let known = self.state(|s| s.idle.contains(&id) || s.running.contains(&id));
            known.then(|| self.ad(id))
        }

        async fn start_run(
            &self,
            id: JobId,
            _slot: &str,
            _claim_id: &str,
            _startd_addr: &str,
            _slot_ad: &ClassAd,
        ) -> Result<Option<ClassAd>, ShadowError> {
            let mut s = self.state.lock().unwrap();
            let Some(at) = s.idle.iter().position(|j| *j == id) else {
                return Err(ShadowError::Queue {
                    code: ErrorCode::Conflict,
                    message: format!("job {id} is not idle"),
                });
            };
            s.idle.remove(at);
            s.running.insert(id);
            s.started.push(id);
            Ok(Some(self.ad(id)))
        }

        async fn executing(&self, _: JobId, _: &str, _: &str) -> Result<(), ShadowError> {
            Ok(())
        }

        async fn end_run(&self, id: JobId, end: RunEnd) {
            let mut s = self.state.lock().unwrap();
            s.running.remove(&id);
            s.idle.push(id);
            s.ended.push((id, end));
        }

        async fn next_job(&self, _owner: &str, _slot_ad: &ClassAd) -> Option<JobId> {
            let mut s = self.state.lock().unwrap();
            let j = s.idle.iter().copied().find(|j| !s.busy.contains(j))?;
            s.busy.insert(j);
            Some(j)
        }

        fn done_with(&self, id: JobId) {
            self.state.lock().unwrap().busy.remove(&id);
        }

        async fn disconnected(&self, id: JobId, _slot: &str, _startd_addr: &str) {
            self.state.lock().unwrap().events.push((id, 22));
        }

        async fn reconnected(&self, id: JobId, _slot: &str, _startd_addr: &str) {
            self.state.lock().unwrap().events.push((id, 23));
        }

        async fn lease_renewed(&self, _id: JobId) {}
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum ClaimAnswer {
        Grant,
        NotYet,
        Refuse,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum RunBehaviour {
        /// The starter runs the job and reports its exit at once.
        Exits,
        /// The job runs; the startd stops answering keep-alives.
        GoesSilent,
        /// The job runs; the startd answers keep-alives unless the test
        /// made it silent ([`FakeStartd::silent`]).
        Runs,
    }

    struct FakeStartd {
        shadows: Arc<Shadows>,
        queue: Arc<FakeQueue>,
        answer: Mutex<ClaimAnswer>,
        run: RunBehaviour,
        claims: AtomicUsize,
        alives: AtomicUsize,
        activated: Mutex<Vec<String>>,
        released: Mutex<Vec<String>>,
        silent: std::sync::atomic::AtomicBool,
        /// Keep-alives are never answered (not even with an error).
        hangs: std::sync::atomic::AtomicBool,
    }

    impl FakeStartd {
        fn new(
            shadows: &Arc<Shadows>,
            queue: &Arc<FakeQueue>,
            answer: ClaimAnswer,
            run: RunBehaviour,
        ) -> Arc<FakeStartd> {
            Arc::new(FakeStartd {
                shadows: shadows.clone(),
                queue: queue.clone(),
                answer: Mutex::new(answer),
                run,
                claims: AtomicUsize::new(0),
                alives: AtomicUsize::new(0),
                activated: Mutex::new(Vec::new()),
                released: Mutex::new(Vec::new()),
                silent: std::sync::atomic::AtomicBool::new(false),
                hangs: std::sync::atomic::AtomicBool::new(false),
            })
        }

        fn claims(&self) -> usize {
            self.claims.load(Ordering::SeqCst)
        }
        fn alives(&self) -> usize {
            self.alives.load(Ordering::SeqCst)
        }
        fn activated(&self) -> Vec<String> {
            self.activated.lock().unwrap().clone()
        }
        fn released(&self) -> Vec<String> {
            self.released.lock().unwrap().clone()
        }
    }

    impl Startd for FakeStartd {
        async fn claim(&self, _request: &ClaimRequest) -> Result<ClaimReply, StartdError> {
            self.claims.fetch_add(1, Ordering::SeqCst);
            match *self.answer.lock().unwrap() {
                ClaimAnswer::Grant => Ok(ClaimReply {
                    slot: "slot1@execute".into(),
                    slot_ad: "[Name = \"slot1@execute\"; State = \"Claimed\"]".into(),
                }),
                ClaimAnswer::NotYet => Err(StartdError::Unavailable(
                    "the slot is being preempted".into(),
                )),
                ClaimAnswer::Refuse => Err(StartdError::Failed("START is false".into())),
            }
        }

        async fn activate(&self, request: &ActivateRequest) -> Result<(), StartdError> {
            self.activated.lock().unwrap().push(request.job_id.clone());
            if self.run == RunBehaviour::Exits {
                self.queue.complete(job(&request.job_id));
                assert!(self
                    .shadows
                    .finish(&request.claim_id, RunResult::Reported { reusable: true }));
            }
            Ok(())
        }

        async fn alive(&self, _claim_id: &str) -> Result<ClaimStatus, StartdError> {
            self.alives.fetch_add(1, Ordering::SeqCst);
            if self.hangs.load(Ordering::SeqCst) {
                // a cut link: the call is never answered
                std::future::pending::<()>().await;
            }
            if self.run == RunBehaviour::GoesSilent || self.silent.load(Ordering::SeqCst) {
                return Err(StartdError::Failed("connection refused".into()));
            }
            Ok(ClaimStatus {
                slot: "slot1@execute".into(),
                state: "Claimed".into(),
                activity: "Busy".into(),
                job_id: self.activated.lock().unwrap().last().cloned(),
            })
        }

        async fn deactivate(&self, _claim_id: &str) -> Result<(), StartdError> {
            Ok(())
        }

        async fn release(&self, claim_id: &str) {
            self.released.lock().unwrap().push(claim_id.to_string());
        }
    }

    fn shadows(clock: &ManualClock) -> Arc<Shadows> {
        let alive = AliveConfig {
            interval: Duration::from_secs(300),
            max_missed: 6,
        };
        let shadows = Shadows::new(Dialer::default(), alive, clock.clock());
        shadows.addr.set("<127.0.0.1:9618>".into()).unwrap();
        Arc::new(shadows)
    }

    fn match_info() -> MatchInfo {
        MatchInfo {
            autocluster: 1,
            claim_id: CLAIM.into(),
            slot: "slot1@execute".into(),
            slot_ad: "[Name = \"slot1@execute\"]".into(),
            startd_addr: "<127.0.0.1:9619>".into(),
            preempting: false,
        }
    }

    /// Runs the claim task of the first idle job on its own task.
    fn spawn_claim(
        shadows: &Arc<Shadows>,
        queue: &Arc<FakeQueue>,
        startd: &Arc<FakeStartd>,
    ) -> tokio::task::JoinHandle<()> {
        let first = queue.take_for_match();
        let (shadows, queue, startd) = (shadows.clone(), queue.clone(), startd.clone());
        tokio::spawn(async move {
            let info = match_info();
            let slot_ad = parse_ad(&info.slot_ad).unwrap();
            claim_task(&shadows, &*queue, &*startd, &info, slot_ad, "alice", first).await
        })
    }

    /// Lets the claim task run until it waits (on the clock) or ends.
    async fn settle() {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_claim_whose_run_ends_takes_the_next_job_for_the_claim() {
        let clock = ManualClock::frozen(1_000_000);
        let shadows = shadows(&clock);
        let queue = FakeQueue::with_idle(&["7.0", "7.1", "7.2"], None);
        let startd = FakeStartd::new(&shadows, &queue, ClaimAnswer::Grant, RunBehaviour::Exits);
        spawn_claim(&shadows, &queue, &startd).await.unwrap();

        assert_eq!(startd.claims(), 1, "one claim for all three jobs");
        assert_eq!(startd.activated(), ["7.0", "7.1", "7.2"]);
        assert_eq!(
            queue.state(|s| s.completed.clone()),
            [job("7.0"), job("7.1"), job("7.2")]
        );
        // with no job left the claim is released, and no job stays busy
        assert_eq!(startd.released(), [CLAIM]);
        assert!(queue.state(|s| s.busy.is_empty()));
        assert!(shadows.runs().is_empty());
    }

    #[tokio::test]
    async fn a_refused_claim_gives_the_job_back_to_idle() {
        let clock = ManualClock::frozen(1_000_000);
        let shadows = shadows(&clock);
        let queue = FakeQueue::with_idle(&["3.0"], None);
        let startd = FakeStartd::new(&shadows, &queue, ClaimAnswer::Refuse, RunBehaviour::Exits);
        spawn_claim(&shadows, &queue, &startd).await.unwrap();

        assert_eq!(startd.claims(), 1, "a refusal is not asked again");
        assert!(startd.activated().is_empty());
        queue.state(|s| {
            assert!(s.started.is_empty(), "the job never ran");
            assert_eq!(s.idle, [job("3.0")]);
            assert!(s.busy.is_empty(), "the next cycle may match it again");
        });
    }

    #[tokio::test]
    async fn a_slot_still_preempted_at_the_claim_deadline_is_given_up() {
        let clock = ManualClock::frozen(1_000_000);
        let shadows = shadows(&clock);
        assert_eq!(shadows.claim_timeout, Duration::from_secs(1800));
        let queue = FakeQueue::with_idle(&["5.0"], None);
        let startd = FakeStartd::new(&shadows, &queue, ClaimAnswer::NotYet, RunBehaviour::Exits);
        let task = spawn_claim(&shadows, &queue, &startd);
        settle().await;
        assert_eq!(startd.claims(), 1);

        // asked again every second of the clock, the job held for the claim
        clock.advance(Duration::from_secs(1));
        settle().await;
        assert_eq!(startd.claims(), 2);
        clock.advance(Duration::from_secs(1797));
        settle().await;
        assert_eq!(startd.claims(), 3);
        clock.advance(Duration::from_secs(1));
        settle().await;
        assert_eq!(
            startd.claims(),
            4,
            "still asking a second before the deadline"
        );
        assert!(!task.is_finished());
        assert!(queue.state(|s| s.busy.contains(&job("5.0"))));

        // REQUEST_CLAIM_TIMEOUT after the first request: given up
        clock.advance(Duration::from_secs(1));
        settle().await;
        assert!(
            task.is_finished(),
            "still asking after REQUEST_CLAIM_TIMEOUT"
        );
        task.await.unwrap();
        assert_eq!(startd.claims(), 5);
        assert!(startd.activated().is_empty());
        assert_eq!(
            startd.released(),
            [CLAIM],
            "the claim is released at the startd"
        );
        queue.state(|s| {
            assert!(s.started.is_empty());
            assert_eq!(s.idle, [job("5.0")], "the job is idle for the next cycle");
            assert!(s.busy.is_empty());
        });
    }

    #[tokio::test]
    async fn a_slot_preempted_in_time_runs_the_job() {
        let clock = ManualClock::frozen(1_000_000);
        let shadows = shadows(&clock);
        let queue = FakeQueue::with_idle(&["5.0"], None);
        let startd = FakeStartd::new(&shadows, &queue, ClaimAnswer::NotYet, RunBehaviour::Exits);
        let task = spawn_claim(&shadows, &queue, &startd);
        settle().await;
        clock.advance(Duration::from_secs(600));
        settle().await;
        assert_eq!(startd.claims(), 2);
        *startd.answer.lock().unwrap() = ClaimAnswer::Grant;
        clock.advance(Duration::from_secs(1));
        settle().await;
        assert!(task.is_finished());
        task.await.unwrap();
        assert_eq!(startd.activated(), ["5.0"]);
        assert_eq!(queue.state(|s| s.completed.clone()), [job("5.0")]);
    }

    #[tokio::test]
    async fn a_startd_silent_for_less_than_the_lease_is_a_disconnection_then_a_reconnection() {
        let clock = ManualClock::frozen(1_000_000);
        let shadows = shadows(&clock);
        // JobLeaseDuration 60: a keep-alive every 20 s
        let queue = FakeQueue::with_idle(&["9.0"], Some(60));
        let startd = FakeStartd::new(&shadows, &queue, ClaimAnswer::Grant, RunBehaviour::Runs);
        let task = spawn_claim(&shadows, &queue, &startd);
        settle().await;
        clock.advance(Duration::from_secs(20));
        settle().await;
        assert_eq!(startd.alives(), 1);
        // silent: disconnected (022) at the first failed keep-alive
        startd.silent.store(true, Ordering::SeqCst);
        clock.advance(Duration::from_secs(20));
        settle().await;
        assert_eq!(startd.alives(), 2);
        assert_eq!(queue.state(|s| s.events.clone()), [(job("9.0"), 22)]);
        // tried again 8 s later (at the next tick), still silent
        clock.advance(Duration::from_secs(20));
        settle().await;
        assert_eq!(startd.alives(), 3);
        // the next try is due 16 s after that, so at the next tick: the
        // startd answers, reconnected (023)
        startd.silent.store(false, Ordering::SeqCst);
        clock.advance(Duration::from_secs(20));
        settle().await;
        assert_eq!(startd.alives(), 4);
        assert_eq!(
            queue.state(|s| s.events.clone()),
            [(job("9.0"), 22), (job("9.0"), 23)]
        );
        assert!(!task.is_finished());
        assert!(queue.state(|s| s.ended.is_empty()), "the run goes on");
        // the job ends by itself: completed once, the claim released
        queue.complete(job("9.0"));
        assert!(shadows.finish(CLAIM, RunResult::Reported { reusable: true }));
        settle().await;
        assert!(task.is_finished());
        task.await.unwrap();
        assert_eq!(queue.state(|s| s.completed.clone()), [job("9.0")]);
        assert!(queue.state(|s| s.ended.is_empty()));
        assert_eq!(startd.released(), [CLAIM]);
    }

    #[tokio::test]
    async fn a_keep_alive_unanswered_for_a_third_of_the_lease_is_a_disconnection() {
        let clock = ManualClock::frozen(1_000_000);
        let shadows = shadows(&clock);
        // JobLeaseDuration 60: a keep-alive every 20 s
        let queue = FakeQueue::with_idle(&["9.0"], Some(60));
        let startd = FakeStartd::new(&shadows, &queue, ClaimAnswer::Grant, RunBehaviour::Runs);
        let task = spawn_claim(&shadows, &queue, &startd);
        settle().await;
        // the link is cut: the keep-alive at 20 s is never answered
        startd.hangs.store(true, Ordering::SeqCst);
        clock.advance(Duration::from_secs(20));
        settle().await;
        assert_eq!(startd.alives(), 1);
        assert!(queue.state(|s| s.events.is_empty()));
        // a third of the lease later it counts as missed: disconnected
        // (022), with 40 s of the lease left to reconnect
        clock.advance(Duration::from_secs(20));
        settle().await;
        assert_eq!(queue.state(|s| s.events.clone()), [(job("9.0"), 22)]);
        assert!(!task.is_finished());
        // the link returns: the next try reconnects (023), the run goes on
        startd.hangs.store(false, Ordering::SeqCst);
        for _ in 0..2 {
            clock.advance(Duration::from_secs(20));
            settle().await;
        }
        assert_eq!(
            queue.state(|s| s.events.clone()),
            [(job("9.0"), 22), (job("9.0"), 23)]
        );
        assert!(!task.is_finished());
        assert!(queue.state(|s| s.ended.is_empty()), "the run goes on");
        queue.complete(job("9.0"));
        assert!(shadows.finish(CLAIM, RunResult::Reported { reusable: true }));
        settle().await;
        assert!(task.is_finished());
        task.await.unwrap();
        assert_eq!(queue.state(|s| s.completed.clone()), [job("9.0")]);
    }

    #[tokio::test]
    async fn a_startd_silent_for_the_whole_lease_loses_the_run() {
        let clock = ManualClock::frozen(1_000_000);
        let shadows = shadows(&clock);
        // JobLeaseDuration 60: a keep-alive every 20 s, the lease 60 s
        let queue = FakeQueue::with_idle(&["9.0"], Some(60));
        let startd = FakeStartd::new(
            &shadows,
            &queue,
            ClaimAnswer::Grant,
            RunBehaviour::GoesSilent,
        );
        let task = spawn_claim(&shadows, &queue, &startd);
        settle().await;
        assert_eq!(startd.activated(), ["9.0"]);
        for n in 1..=2 {
            clock.advance(Duration::from_secs(20));
            settle().await;
            assert_eq!(startd.alives(), n);
            assert!(!task.is_finished(), "lost before the lease ran out");
            assert!(queue.state(|s| s.ended.is_empty()));
        }
        clock.advance(Duration::from_secs(20));
        settle().await;
        assert!(task.is_finished(), "the run outlived the claim's lease");
        task.await.unwrap();
        assert_eq!(startd.alives(), 3);
        queue.state(|s| {
            // a job with a lease: disconnected (022) at the first silence,
            // tried again after HTCondor's back-off (8 s, 16 s), given up
            // when the lease ran out (024), back to Idle
            assert_eq!(s.events, [(job("9.0"), 22)]);
            let [(
                j,
                RunEnd::ReconnectFailed {
                    reason,
                    startd_name,
                },
            )] = s.ended.as_slice()
            else {
                panic!("one failed reconnect expected, got {:?}", s.ended);
            };
            assert_eq!(*j, job("9.0"));
            assert_eq!(
                reason,
                "Job disconnected too long: JobLeaseDuration (60 seconds) expired"
            );
            assert_eq!(startd_name, "slot1@execute");
            assert_eq!(s.idle, [job("9.0")]);
            assert!(s.busy.is_empty());
        });
        assert_eq!(startd.released(), [CLAIM]);
    }
}
