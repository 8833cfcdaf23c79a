//! Keep-alives and claim leases on the schedd's side (HTCondor's rules),
//! and what a restarted schedd does with the claims of the runs it
//! interrupted.
//!
//! - The keep-alive interval of a claim is `ALIVE_INTERVAL`, lowered to a
//!   third of the job's `JobLeaseDuration` when that is shorter (never
//!   below one second); a claim's interval only ever decreases, as jobs
//!   with shorter leases run on it.
//! - The startd keeps a claim as long as its lease: the running job's
//!   `JobLeaseDuration`, else `MAX_CLAIM_ALIVES_MISSED` keep-alive
//!   intervals. When the lease runs out it kills the job and drops the
//!   claim. So a schedd that cannot reach the startd concludes the run is
//!   over (and the job may run elsewhere) only once that lease has run out
//!   since the last keep-alive the startd answered.
//! - A silent startd is a disconnection for a job with a
//!   `JobLeaseDuration` (`claim.rs`'s `watch_run`): events 022, then 023
//!   when it answers again or 024 when the lease runs out (the job goes
//!   back to Idle), tries paced by HTCondor's back-off
//!   ([`crate::claim::reconnect_delay`], `RECONNECT_BACKOFF_CEILING`).
//! - A schedd that restarts finds jobs marked Running with the claim of
//!   their run (`ClaimId`, `StartdIpAddr`, `RemoteHost`). For a job with a
//!   `JobLeaseDuration` it reconnects ([`split_interrupted`],
//!   [`start_reconnects`]): the run is registered under its claim before
//!   the schedd serves (the starter's calls find it), `/startd/reconnect`
//!   tells the startd the shadow's address (the startd passes it to the
//!   starter) and answers whether the claim still runs that job; then the
//!   run is watched as a claim task would. It fails (024, Idle) when the
//!   startd does not know the claim or the job, or does not answer before
//!   the lease (from `LastJobLeaseRenewal`, plus an alive interval) has
//!   run out.
//! - A job without a lease (or removed while it ran) keeps the older rule
//!   ([`release_interrupted`]): the schedd releases the claim at its
//!   startd, which kills the old run, and waits until the startd no longer
//!   knows the claim (or, if the startd does not answer, until the claim's
//!   lease has surely run out there) before the job goes back to Idle. A
//!   job therefore never runs twice at once.

use std::time::Duration;

use classad::{ClassAd, Value};
use std::time::SystemTime;

use std::sync::Arc;

use skua_proto::{
    routes, Ack, ClaimAlive, ClaimStatus, ErrorCode, MatchInfo, ReconnectRequest, ReleaseRequest,
};
use skua_queue::{JobId, RunEnd};
use tokio::sync::{oneshot, Notify};

use crate::claim::{reconnect_delay, watch_run, ClaimQueue as _, Startd as _, StartdClient, Watch};
use crate::runs::{Run, RunResult, Shadows};
use crate::shared::{with_schedd, Shared};

/// The shortest keep-alive interval (HTCondor never goes below 10 s;
/// Skua allows short leases, e.g. in tests, so it goes down to 1 s).
const MIN_ALIVE: Duration = Duration::from_secs(1);

/// Added to a claim's lease before a restarted schedd, unable to reach
/// the startd, takes the claim for gone: the startd notices an expired
/// lease at its next policy evaluation (`POLLING_INTERVAL`) and kills the
/// job then.
pub(crate) const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// The keep-alive settings of the schedd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AliveConfig {
    /// `ALIVE_INTERVAL` (HTCondor's default: 300 s).
    pub interval: Duration,
    /// `MAX_CLAIM_ALIVES_MISSED` (default 6).
    pub max_missed: u32,
}

/// The job's `JobLeaseDuration` in seconds, when defined and positive
/// (`job_lease_duration = 0` leaves it undefined).
pub(crate) fn job_lease(job_ad: &ClassAd) -> Option<u64> {
    // an expression (`job_lease_duration = 5 * 60`) is evaluated, as the
    // startd and the starter do
    match classad::Evaluator::default().eval_attr("JobLeaseDuration", job_ad, None) {
        Value::Int(n) if n > 0 => u64::try_from(n).ok(),
        Value::Real(r) if r.is_finite() && r >= 1.0 => Some(r as u64),
        _ => None,
    }
}

impl AliveConfig {
    /// The keep-alive interval for a claim running `job_ad`:
    /// `min(ALIVE_INTERVAL, JobLeaseDuration / 3)`, at least [`MIN_ALIVE`].
    pub(crate) fn interval_for(&self, job_ad: &ClassAd) -> Duration {
        let mut i = self.interval;
        if let Some(lease) = job_lease(job_ad) {
            i = i.min(Duration::from_secs(lease / 3));
        }
        i.max(MIN_ALIVE)
    }

    /// The claim's lease at the startd while `job_ad` runs under it with
    /// keep-alives every `interval`: the job's `JobLeaseDuration`, else
    /// `MAX_CLAIM_ALIVES_MISSED` intervals.
    pub(crate) fn lease_for(&self, job_ad: &ClassAd, interval: Duration) -> Duration {
        match job_lease(job_ad) {
            Some(l) => Duration::from_secs(l),
            None => interval.saturating_mul(self.max_missed.max(1)),
        }
    }
}

/// A run interrupted by the restart: the job, its claim id, its startd's
/// address, its (public) ad.
pub(crate) type Interrupted = (JobId, String, String, ClassAd);

/// A run interrupted by the restart that the schedd reconnects to.
pub(crate) struct Reconnect {
    job: JobId,
    claim_id: String,
    startd_addr: String,
    slot: String,
    ad: ClassAd,
    done: oneshot::Receiver<RunResult>,
    vacate: Arc<Notify>,
    gate: tokio::sync::watch::Sender<bool>,
}

/// Splits the runs interrupted by the restart (whose claim is recorded):
/// a job with a `JobLeaseDuration` that still ran gets its run registered
/// at once (before the schedd serves: its starter's calls find it) and is
/// reconnected to ([`start_reconnects`]); the others have their claims
/// released ([`release_interrupted`]).
pub(crate) fn split_interrupted(
    schedd: &crate::Schedd,
    shadows: &Shadows,
) -> (Vec<Reconnect>, Vec<Interrupted>) {
    let mut reconnects = Vec::new();
    let mut releases = Vec::new();
    for (job, claim_id, startd, ad) in schedd.interrupted_claims() {
        let removed = schedd.queue().status(job) == Some(skua_queue::JobStatus::Removed);
        if removed || job_lease(&ad).is_none() {
            releases.push((job, claim_id, startd, ad));
            continue;
        }
        let slot = match ad.lookup("RemoteHost") {
            Some(classad::Expr::Lit(v)) => v.as_string().unwrap_or_else(|| startd.clone()),
            _ => startd.clone(),
        };
        let (tx, rx) = oneshot::channel();
        let vacate = Arc::new(Notify::new());
        let (gate, gate_rx) = tokio::sync::watch::channel(false);
        shadows.runs().insert(
            claim_id.clone(),
            Run {
                job,
                // `$$()` as expanded at the match (recorded in the queue)
                job_ad: crate::match_start::recorded_expansion(&ad, shadows.clock.now_secs()),
                slot: slot.clone(),
                startd_addr: startd.clone(),
                inputs: None,
                checkpoint_upload: None,
                failure: None,
                executing: true,
                gate: Some(gate_rx),
                done: Some(tx),
                vacate: vacate.clone(),
            },
        );
        reconnects.push(Reconnect {
            job,
            claim_id,
            startd_addr: startd,
            slot,
            ad,
            done: rx,
            vacate,
            gate,
        });
    }
    (reconnects, releases)
}

/// Reconnects to each run of `reconnects` in the background.
pub(crate) fn start_reconnects(st: &Shared, reconnects: Vec<Reconnect>) {
    if !reconnects.is_empty() {
        tracing::info!(
            "{} job(s) ran before the restart: reconnecting to them",
            reconnects.len()
        );
    }
    for r in reconnects {
        let st = st.clone();
        tokio::spawn(async move { reconnect(&st, r).await });
    }
}

/// Finds the run again at its startd (`/startd/reconnect`, with HTCondor's
/// back-off while the startd does not answer, until the job's lease runs
/// out), then watches it as a claim task would; the claim is released
/// once the run is over. A failure is event 024 and the job goes back to
/// Idle.
async fn reconnect(st: &Shared, r: Reconnect) {
    let Reconnect {
        job,
        claim_id,
        startd_addr,
        slot,
        ad,
        done,
        vacate,
        gate,
    } = r;
    // whatever happens below, the run's exit may go on once it is decided
    let open_gate = OpenOnDrop(gate);
    let shadows = &st.shadows;
    let lease = Duration::from_secs(job_lease(&ad).unwrap_or(0));
    let interval = shadows.alive.interval_for(&ad);
    let renewed = ["LastJobLeaseRenewal", "JobCurrentStartDate"]
        .iter()
        .find_map(|a| match ad.lookup(a) {
            Some(classad::Expr::Lit(Value::Int(t))) => Some(*t),
            _ => None,
        })
        .unwrap_or_else(|| st.clock.now_secs());
    // the startd kills the job a lease after the last keep-alive it
    // answered, which came at most an interval after the renewal recorded
    let deadline = SystemTime::UNIX_EPOCH
        + Duration::from_secs(u64::try_from(renewed).unwrap_or(0))
        + lease
        + interval;
    let fail = |reason: String| {
        let (st, claim_id, slot) = (st.clone(), claim_id.clone(), slot.clone());
        async move {
            let pending = st
                .shadows
                .runs()
                .remove(&claim_id)
                .is_some_and(|r| r.done.is_some());
            if pending {
                tracing::warn!("job {job}: reconnection failed: {reason}");
                let end = RunEnd::ReconnectFailed {
                    reason,
                    startd_name: slot,
                };
                st.end_run(job, end).await;
            }
        }
    };
    let startd = match StartdClient::dial(shadows, &startd_addr) {
        Ok(c) => c,
        Err(e) => {
            fail(format!("Startd sent bad reply to reconnect: {e}")).await;
            return;
        }
    };
    let Some(addr) = shadows.addr.get().cloned() else {
        return;
    };
    let request = ReconnectRequest {
        claim_id: claim_id.clone(),
        job_id: job.to_string(),
        shadow_addr: addr,
    };
    let mut attempts = 0u32;
    loop {
        // the run may have reported its end meanwhile
        let over = shadows
            .runs()
            .get(&claim_id)
            .is_none_or(|r| r.done.is_none());
        if over {
            break;
        }
        match startd
            .client
            .command::<_, ClaimStatus>(&routes::STARTD_RECONNECT, Some(&request))
            .await
        {
            Ok(_) => {
                tracing::info!("job {job}: reconnected to {slot}");
                st.reconnected(job, &slot, &startd_addr).await;
                open_gate.open();
                break;
            }
            Err(e) if e.code() == ErrorCode::NotFound => {
                let reason = e
                    .remote()
                    .map(|b| b.message.clone())
                    .unwrap_or_else(|| "Claim not found at execution machine".into());
                fail(reason).await;
                startd.release(&claim_id).await;
                return;
            }
            Err(e) => {
                let now = st.clock.now();
                if now >= deadline {
                    fail(crate::claim::lease_expired_reason(lease)).await;
                    return;
                }
                attempts += 1;
                let pause = reconnect_delay(attempts, shadows.reconnect_ceiling)
                    .min(deadline.duration_since(now).unwrap_or_default())
                    .max(Duration::from_millis(100));
                tracing::info!(
                    "job {job}: cannot reach the startd of {slot} ({e}); trying again in {} s",
                    pause.as_secs()
                );
                st.clock.sleep(pause).await;
            }
        }
    }
    let info = MatchInfo {
        autocluster: 0,
        claim_id: claim_id.clone(),
        slot: slot.clone(),
        slot_ad: String::new(),
        startd_addr: startd_addr.clone(),
        preempting: false,
    };
    let watch = Watch {
        info: &info,
        job,
        interval,
        lease,
        reconnect: true,
    };
    let result = watch_run(shadows, st, &startd, &watch, done, vacate).await;
    shadows.runs().remove(&claim_id);
    match result {
        RunResult::Reported { .. } => {}
        RunResult::Lost(reason) => {
            let end = RunEnd::Failed {
                reason,
                hold_code: 0,
                hold_subcode: 0,
                permanent: false,
            };
            st.end_run(job, end).await;
        }
        RunResult::ReconnectFailed(reason) => {
            let end = RunEnd::ReconnectFailed {
                reason,
                startd_name: slot.clone(),
            };
            st.end_run(job, end).await;
        }
    }
    // no claim reuse after a reconnect: the claim ends with its run
    startd.release(&claim_id).await;
    st.changed.notify_one();
    st.reschedule.notify_one();
}

/// Opens a run's gate when dropped.
struct OpenOnDrop(tokio::sync::watch::Sender<bool>);

impl OpenOnDrop {
    fn open(&self) {
        let _ = self.0.send(true);
    }
}

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.open();
    }
}

/// For every run interrupted by the restart whose claim is to be released
/// (`claims`, from [`split_interrupted`]), releases the claim at its
/// startd and, once the old run is surely over, puts the job back to
/// Idle. The releases run in the background; returns once they are
/// started.
pub(crate) async fn release_interrupted(st: &Shared, claims: Vec<Interrupted>) {
    if claims.is_empty() {
        return;
    }
    tracing::info!(
        "{} job(s) ran before the restart: releasing their claims before they run again",
        claims.len()
    );
    let restarted = st.clock.now();
    for (job, claim_id, startd, ad) in claims {
        let alive = st.shadows.alive;
        let interval = alive.interval_for(&ad);
        let deadline = restarted + alive.lease_for(&ad, interval) + LEASE_MARGIN;
        let st = st.clone();
        tokio::spawn(async move {
            let reason = release_old_run(&st, job, &claim_id, &startd, deadline).await;
            let claim = claim_id.clone();
            let now = st.clock.now_secs();
            let r = with_schedd(&st, move |s| s.requeue_released(job, &claim, &reason, now)).await;
            match r {
                Ok(()) => tracing::info!("job {job}: its old run is over; it may run again"),
                Err(e) => {
                    tracing::error!("job {job}: requeueing after the restart: {}", e.0.message)
                }
            }
            st.changed.notify_one();
            st.reschedule.notify_one();
        });
    }
}

/// Releases `claim_id` at `startd` and waits until the startd no longer
/// knows it (its job killed, its starter gone), or until `deadline` when
/// the startd does not answer (`deadline` read on the daemon's clock).
/// Returns the reason recorded with the eviction.
async fn release_old_run(
    st: &Shared,
    job: JobId,
    claim_id: &str,
    startd: &str,
    deadline: SystemTime,
) -> String {
    let mut pause = Duration::from_millis(100);
    let mut released = false;
    loop {
        let step = match st.shadows.dialer.client_at(startd, Duration::from_secs(10)) {
            Err(e) => Err(e),
            Ok(c) if !released => c
                .command::<_, Ack>(
                    &routes::STARTD_RELEASE,
                    Some(&ReleaseRequest {
                        claim_id: claim_id.to_string(),
                    }),
                )
                .await
                .map_or_else(claim_unknown, |_| Ok(false)),
            Ok(c) => c
                .command::<_, ClaimStatus>(
                    &routes::STARTD_ALIVE,
                    Some(&ClaimAlive {
                        claim_id: claim_id.to_string(),
                    }),
                )
                .await
                .map_or_else(claim_unknown, |_| Ok(false)),
        };
        match step {
            Ok(true) => {
                return format!(
                    "the schedd restarted while the job ran; its claim at {startd} is released"
                )
            }
            Ok(false) => {
                if !released {
                    tracing::info!(
                        "job {job}: claim at {startd} released; waiting for its run to end"
                    );
                }
                released = true;
            }
            Err(e) => {
                if st.clock.now() >= deadline {
                    return format!(
                        "the schedd restarted while the job ran; the startd {startd} does not \
                         answer ({e}) and the claim's lease has run out"
                    );
                }
                tracing::debug!("job {job}: releasing its claim at {startd}: {e}");
            }
        }
        // the pauses only pace the polls; the deadline is the clock's
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// A startd's error as the release loop reads it: `Ok(true)` when it no
/// longer knows the claim, `Err` when it did not answer usefully.
fn claim_unknown(e: skua_net::NetError) -> Result<bool, String> {
    match e.code() {
        ErrorCode::NotFound => Ok(true),
        _ => Err(e.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_ad(text).unwrap()
    }

    const HTCONDOR: AliveConfig = AliveConfig {
        interval: Duration::from_secs(300),
        max_missed: 6,
    };

    #[test]
    fn the_alive_interval_follows_htcondor() {
        // the default lease (2400 s) leaves ALIVE_INTERVAL as it is
        let job = ad("[JobLeaseDuration = 2400]");
        assert_eq!(HTCONDOR.interval_for(&job), Duration::from_secs(300));
        assert_eq!(
            HTCONDOR.lease_for(&job, Duration::from_secs(300)),
            Duration::from_secs(2400)
        );
        // a short lease: a third of it
        let job = ad("[JobLeaseDuration = 60]");
        assert_eq!(HTCONDOR.interval_for(&job), Duration::from_secs(20));
        assert_eq!(
            HTCONDOR.lease_for(&job, Duration::from_secs(20)),
            Duration::from_secs(60)
        );
        // no lease (job_lease_duration = 0): MAX_CLAIM_ALIVES_MISSED intervals
        for job in [ad("[]"), ad("[JobLeaseDuration = 0]")] {
            assert_eq!(HTCONDOR.interval_for(&job), Duration::from_secs(300));
            assert_eq!(
                HTCONDOR.lease_for(&job, Duration::from_secs(300)),
                Duration::from_secs(1800)
            );
        }
        // an expression is evaluated
        let job = ad("[JobLeaseDuration = 2 * 30]");
        assert_eq!(HTCONDOR.interval_for(&job), Duration::from_secs(20));
        // never below a second
        let job = ad("[JobLeaseDuration = 2]");
        assert_eq!(HTCONDOR.interval_for(&job), Duration::from_secs(1));
    }
}
