//! The shadows: for every claim the schedd holds, a task (not a process)
//! that claims the slot, activates it with a job, serves the starter the
//! job's input files and takes its output back, records the run in the
//! queue, and when the job is done runs the next idle job of the same user
//! on the same claim (claim reuse) or releases the claim.
//!
//! The starter's requests (`/shadow/*`) find their run by claim id. The
//! claim task keeps the claim alive and watches its startd with
//! `/startd/alive` at the claim's keep-alive interval (see `lease.rs`): a
//! startd that forgot the claim, a starter that went away without
//! reporting (the startd also says so at once, `/shadow/starter_gone`), or
//! a startd silent for the claim's whole lease puts the job back to
//! Idle.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use classad::{parse_ad, ClassAd};
use std::os::unix::fs::PermissionsExt;

use skua_daemon::account::{AsUser, Rights};
use skua_daemon::now_secs;
use skua_net::{ApiError, Body, Client, HeaderMap, Json, Response, State};
use skua_proto::{
    routes, Ack, ActivateRequest, BeginReply, ClaimAlive, ClaimReply, ClaimRequest, ClaimStatus,
    DeactivateRequest, InputFileRequest, JobExit, JobUpdate, MatchInfo, Matches, OutputFileMeta,
    ReleaseRequest, ResourceRequest, ResourceRequests, ResourceRequestsReply, RunOutcome,
    ShadowBegin, StarterGone, UpdateKind, TRANSFER_HEADER,
};
use skua_queue::{ExitInfo, JobId, RunEnd, Rusage};
use tokio::sync::{oneshot, Notify};

use crate::daemon::{with_schedd, Shared};
use crate::lease::AliveConfig;
use crate::sandbox::{self, InputPlan};

/// Timeout of a call to a startd.
const STARTD_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a claim on a slot being preempted for us is asked again.
const PREEMPTED_CLAIM_RETRY: Duration = Duration::from_secs(1);

/// How a run ended, as the claim task learns it.
#[derive(Debug)]
enum RunResult {
    /// The exit was reported and committed. `reusable`: the job ended by
    /// itself, so its starter waits for the claim's next job (a vacated,
    /// killed or held job's starter exits, and the claim ends with it).
    Reported { reusable: bool },
    /// The starter or the startd went away without a report.
    Lost(String),
}

/// One job running (or starting) under a claim.
struct Run {
    job: JobId,
    job_ad: ClassAd,
    slot: String,
    startd_addr: String,
    inputs: Option<InputPlan>,
    /// A failure the shadow saw itself (missing input...), reported when
    /// the starter gives up.
    failure: Option<ShadowFailure>,
    executing: bool,
    done: Option<oneshot::Sender<RunResult>>,
    /// Asks the claim task to stop the job (rm, hold).
    vacate: Arc<Notify>,
}

/// A failure the shadow saw itself, with HTCondor's hold code and
/// subcode (the errno of a failed file operation).
#[derive(Clone, Debug)]
struct ShadowFailure {
    reason: String,
    code: i64,
    subcode: i64,
    permanent: bool,
}

/// The errno of an I/O error (0 when it has none), a hold's subcode.
fn errno_of(e: &std::io::Error) -> i64 {
    e.raw_os_error().map(i64::from).unwrap_or(0)
}

/// What the daemon needs to dial startds.
#[derive(Clone)]
pub(crate) struct Dialer(pub skua_daemon::context::Dialer);

impl Dialer {
    pub(crate) fn client(&self, address: &str, timeout: Duration) -> Result<Client, String> {
        self.0
            .client_at(address, timeout)
            .map_err(|e| e.to_string())
    }
}

/// Every claim and run of the schedd.
pub(crate) struct Shadows {
    runs: Mutex<HashMap<String, Run>>,
    /// Jobs with a claim being made or a run under way.
    busy: Mutex<HashSet<JobId>>,
    /// This schedd's address (`<ip:port>`), known once it listens.
    pub addr: OnceLock<String>,
    pub dialer: Dialer,
    /// `ALIVE_INTERVAL` and `MAX_CLAIM_ALIVES_MISSED`.
    pub alive: AliveConfig,
    /// This schedd's `UID_DOMAIN`, given to the starter with each job
    /// (`UidDomain`): an execute host in the same domain runs the job as
    /// its owner.
    pub uid_domain: String,
    /// Acts with a job owner's rights on the owner's files.
    pub as_user: AsUser,
}

impl Shadows {
    pub(crate) fn new(dialer: Dialer, alive: AliveConfig) -> Shadows {
        Shadows {
            runs: Mutex::new(HashMap::new()),
            busy: Mutex::new(HashSet::new()),
            addr: OnceLock::new(),
            dialer,
            alive,
            uid_domain: String::new(),
            as_user: AsUser::new(),
        }
    }

    fn busy(&self) -> std::sync::MutexGuard<'_, HashSet<JobId>> {
        self.busy.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Run>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the runs of `jobs` to stop (their jobs were removed or held).
    pub(crate) fn vacate(&self, jobs: &[JobId]) {
        let runs = self.runs();
        for run in runs.values() {
            if jobs.contains(&run.job) {
                run.vacate.notify_one();
            }
        }
    }
}

fn owner_of(submitter: &str) -> &str {
    submitter.split('@').next().unwrap_or(submitter)
}

// ---------------------------------------------------------------------
// Negotiator-facing routes.

pub(crate) async fn resource_requests(
    State(st): State<Shared>,
    Json(req): Json<ResourceRequests>,
) -> Result<Json<ResourceRequestsReply>, ApiError> {
    let owner = owner_of(&req.submitter).to_string();
    let busy = st.shadows.busy().clone();
    let groups = with_schedd(&st, move |s| {
        Ok(s.resource_requests(&owner, &req.significant_attributes, &busy, now_secs()))
    })
    .await?;
    Ok(Json(ResourceRequestsReply {
        requests: groups
            .into_iter()
            .map(|(autocluster, ad, count)| ResourceRequest {
                autocluster,
                ad: ad.to_string(),
                count,
            })
            .collect(),
    }))
}

pub(crate) async fn matches(
    State(st): State<Shared>,
    Json(m): Json<Matches>,
) -> Result<Json<Ack>, ApiError> {
    let owner = owner_of(&m.submitter).to_string();
    for info in m.matches {
        let slot_ad = parse_ad(&info.slot_ad)
            .map_err(|e| ApiError::bad_request(format!("slot ad of {}: {e}", info.slot)))?;
        let st2 = st.clone();
        let owner2 = owner.clone();
        let autocluster = info.autocluster;
        let slot_ad2 = slot_ad.clone();
        // Pick the job and mark it busy in one step (under the queue's lock,
        // then the busy set's), so that two claims never pick the same job.
        let shadows = st.shadows.clone();
        let job = with_schedd(&st2, move |s| {
            let mut busy = shadows.busy();
            let job = s.job_for_match(autocluster, &owner2, &slot_ad2, &busy, now_secs());
            Ok(job.filter(|j| busy.insert(*j)))
        })
        .await?;
        let Some(job) = job else {
            // Nothing to run: give the match back at once.
            let st3 = st.clone();
            tokio::spawn(async move { release(&st3, &info.startd_addr, &info.claim_id).await });
            continue;
        };
        let st3 = st.clone();
        let owner3 = owner.clone();
        tokio::spawn(async move { claim_task(st3, info, slot_ad, owner3, job).await });
    }
    Ok(Json(Ack {}))
}

async fn release(st: &Shared, startd: &str, claim_id: &str) {
    match st.shadows.dialer.client(startd, STARTD_TIMEOUT) {
        Ok(c) => {
            if let Err(e) = c
                .command::<_, Ack>(
                    &routes::STARTD_RELEASE,
                    Some(&ReleaseRequest {
                        claim_id: claim_id.to_string(),
                    }),
                )
                .await
            {
                tracing::debug!("releasing a claim at {startd}: {e}");
            }
        }
        Err(e) => tracing::debug!("releasing a claim at {startd}: {e}"),
    }
}

/// Claims the slot, then runs jobs on it until none is left to run.
async fn claim_task(st: Shared, info: MatchInfo, slot_ad: ClassAd, owner: String, first: JobId) {
    let shadows = st.shadows.clone();
    let Some(addr) = shadows.addr.get().cloned() else {
        shadows.busy().remove(&first);
        return;
    };
    let client = match shadows.dialer.client(&info.startd_addr, STARTD_TIMEOUT) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("cannot reach the startd of {}: {e}", info.slot);
            shadows.busy().remove(&first);
            return;
        }
    };
    let Some(first_ad) = with_schedd(&st, move |s| Ok(s.job_ad(first)))
        .await
        .ok()
        .flatten()
    else {
        shadows.busy().remove(&first);
        release(&st, &info.startd_addr, &info.claim_id).await;
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
    let mut claimed: Result<ClaimReply, _> =
        client.command(&routes::STARTD_CLAIM, Some(&request)).await;
    // A slot being preempted for this match answers Unavailable until its
    // old job is gone (retirement, then vacate): ask again until it is
    // ready or refuses for good.
    while is_unavailable(&claimed) {
        tracing::debug!("{} is being preempted for job {first}; waiting", info.slot);
        tokio::time::sleep(PREEMPTED_CLAIM_RETRY).await;
        claimed = client.command(&routes::STARTD_CLAIM, Some(&request)).await;
    }
    let (slot, mut slot_ad) = match claimed {
        Ok(r) => {
            let ad = parse_ad(&r.slot_ad).unwrap_or(slot_ad);
            (r.slot, ad)
        }
        Err(e) => {
            tracing::info!("claiming {} for job {first} failed: {e}", info.slot);
            shadows.busy().remove(&first);
            return;
        }
    };
    tracing::info!("claimed {slot} for {owner}");
    let mut job = first;
    loop {
        let outcome = run_one(&st, &client, &info, &slot, &addr, job, &mut interval).await;
        shadows.busy().remove(&job);
        if let Err(e) = outcome {
            tracing::info!("claim on {slot}: {e}; releasing it");
            break;
        }
        // Claim reuse: the next idle job of the same user that fits.
        let owner2 = owner.clone();
        let ad2 = slot_ad.clone();
        let shadows2 = shadows.clone();
        let next = with_schedd(&st, move |s| {
            // chosen and marked busy in one step (see `matches`)
            let mut busy = shadows2.busy();
            let job = s.next_job_for(&owner2, &ad2, &busy, now_secs());
            Ok(job.filter(|j| busy.insert(*j)))
        })
        .await
        .ok()
        .flatten();
        match next {
            Some(j) => job = j,
            None => break,
        }
        // The slot ad's State is Claimed now; matching uses the rest.
        slot_ad.insert_value("State", "Claimed");
    }
    release(&st, &info.startd_addr, &info.claim_id).await;
    tracing::debug!("released {slot}");
}

/// The startd answered "not yet" (`Unavailable`): ask again later.
fn is_unavailable<T>(r: &Result<T, skua_net::NetError>) -> bool {
    r.as_ref()
        .err()
        .and_then(|e| e.remote())
        .is_some_and(|b| b.code == skua_proto::ErrorCode::Unavailable)
}

/// Polls the startd until no starter runs under the claim.
async fn wait_until_idle(client: &Client, claim_id: &str) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + STARTD_TIMEOUT;
    let mut pause = Duration::from_millis(2);
    loop {
        let status: Result<ClaimStatus, _> = client
            .command(
                &routes::STARTD_ALIVE,
                Some(&ClaimAlive {
                    claim_id: claim_id.to_string(),
                }),
            )
            .await;
        match status {
            Ok(s) if s.job_id.is_none() && s.state.eq_ignore_ascii_case("Claimed") => return Ok(()),
            Ok(_) => {}
            Err(e) if e.code() == skua_proto::ErrorCode::NotFound => {
                return Err("the startd no longer knows the claim".into())
            }
            Err(e) => return Err(format!("the startd does not answer: {e}")),
        }
        if tokio::time::Instant::now() >= deadline {
            return Err("the slot did not become idle".into());
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Runs `job` under the claim, keeping it alive every `interval` (lowered
/// for a job with a shorter lease). `Err`: the claim is no longer usable.
async fn run_one(
    st: &Shared,
    client: &Client,
    info: &MatchInfo,
    slot: &str,
    addr: &str,
    job: JobId,
    interval: &mut Duration,
) -> Result<(), String> {
    let shadows = st.shadows.clone();
    let slot_name = slot.to_string();
    let (claim_id, startd_addr) = (info.claim_id.clone(), info.startd_addr.clone());
    let started = with_schedd(st, move |s| {
        s.start_run(job, &slot_name, &claim_id, &startd_addr, now_secs())?;
        Ok(s.job_ad(job))
    })
    .await;
    let job_ad = match started {
        Ok(Some(ad)) => ad,
        Ok(None) => return Ok(()),
        Err(e) => {
            // The job left the idle state meanwhile: try another.
            tracing::debug!("job {job} cannot start: {}", e.0.message);
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
            failure: None,
            executing: false,
            done: Some(done_tx),
            vacate: vacate.clone(),
        },
    );
    // The starter learns the submit side's UID domain from the job ad (the
    // schedd's value wins over anything the user wrote), and the owner's
    // ids for a host in that domain that does not know the account.
    let mut sent_ad = job_ad.clone();
    sent_ad.insert_value("UidDomain", st.shadows.uid_domain.as_str());
    let owner = sandbox::string_attr(&job_ad, "Owner").unwrap_or_default();
    let owner_ids = match st.shadows.as_user.rights_of(&owner) {
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
    let mut activated: Result<Ack, _> = client
        .command(&routes::STARTD_ACTIVATE, Some(&request))
        .await;
    // The starter tells the startd its job is done before it reports the
    // exit here, so the claim is normally idle again by now; if the startd
    // has not heard yet it answers Unavailable: wait until it has.
    if is_unavailable(&activated) {
        activated = match wait_until_idle(client, &info.claim_id).await {
            Ok(()) => {
                client
                    .command(&routes::STARTD_ACTIVATE, Some(&request))
                    .await
            }
            Err(e) => {
                shadows.runs().remove(&info.claim_id);
                return Err(run_lost(st, job, format!("claim on {slot}: {e}")).await);
            }
        };
    }
    if let Err(e) = activated {
        shadows.runs().remove(&info.claim_id);
        return Err(run_lost(
            st,
            job,
            format!("the startd of {slot} did not start the job: {e}"),
        )
        .await);
    }
    *interval = (*interval).min(shadows.alive.interval_for(&job_ad));
    let lease = shadows.alive.lease_for(&job_ad, *interval);
    let result = watch_run(client, info, job, done_rx, vacate, *interval, lease).await;
    shadows.runs().remove(&info.claim_id);
    match result {
        RunResult::Reported { reusable: true } => Ok(()),
        RunResult::Reported { reusable: false } => Err(format!("job {job} was stopped")),
        RunResult::Lost(reason) => Err(run_lost(st, job, reason).await),
    }
}

/// Waits for the run's report, keeping the claim alive every `interval`
/// and watching it. A startd that does not answer for the claim's whole
/// `lease` has killed the job (HTCondor's rule): the run is lost then,
/// not before, so the job never runs twice at once.
async fn watch_run(
    client: &Client,
    info: &MatchInfo,
    job: JobId,
    mut done: oneshot::Receiver<RunResult>,
    vacate: Arc<Notify>,
    interval: Duration,
    lease: Duration,
) -> RunResult {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut misses = 0u32;
    let mut last_answer = tokio::time::Instant::now();
    loop {
        tokio::select! {
            r = &mut done => {
                return r.unwrap_or(RunResult::Lost("the run's report was lost".into()));
            }
            _ = vacate.notified() => {
                tracing::info!("stopping job {job} on {}", info.slot);
                if let Err(e) = client
                    .command::<_, Ack>(
                        &routes::STARTD_DEACTIVATE,
                        Some(&DeactivateRequest { claim_id: info.claim_id.clone(), graceful: false }),
                    )
                    .await
                {
                    tracing::warn!("stopping job {job}: {e}");
                }
            }
            _ = tick.tick() => {
                // a keep-alive waits no longer than what is left of the
                // lease (a frozen startd must not hold the verdict back)
                let left = lease.saturating_sub(last_answer.elapsed()).max(Duration::from_secs(1));
                let alive = ClaimAlive { claim_id: info.claim_id.clone() };
                let call = client.command(&routes::STARTD_ALIVE, Some(&alive));
                let status: Result<ClaimStatus, String> = match tokio::time::timeout(left, call).await {
                    Ok(Ok(s)) => Ok(s),
                    Ok(Err(e)) if e.code() == skua_proto::ErrorCode::NotFound => {
                        return RunResult::Lost(format!("the startd of {} no longer knows the claim", info.slot));
                    }
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("no answer within {} s", left.as_secs())),
                };
                if status.is_ok() {
                    last_answer = tokio::time::Instant::now();
                }
                match status {
                    Ok(s) if s.job_id.as_deref() == Some(&job.to_string()) => misses = 0,
                    Ok(_) => {
                        // No starter runs the job any more. Its report may
                        // be in flight: give it one more interval.
                        misses += 1;
                        if misses >= 2 {
                            return RunResult::Lost(format!("the starter of job {job} on {} went away", info.slot));
                        }
                    }
                    Err(e) => {
                        let silent = last_answer.elapsed();
                        if silent >= lease {
                            return RunResult::Lost(format!(
                                "the startd of {} has not answered for {} s, the claim's lease: {e}",
                                info.slot,
                                silent.as_secs()
                            ));
                        }
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

/// The run failed outside the job (a retry may help): records it and
/// gives the reason back.
async fn run_lost(st: &Shared, job: JobId, reason: String) -> String {
    let end = RunEnd::Failed {
        reason: reason.clone(),
        hold_code: 0,
        hold_subcode: 0,
        permanent: false,
    };
    end_run(st, job, end).await;
    reason
}

async fn end_run(st: &Shared, job: JobId, end: RunEnd) {
    if let Err(e) = with_schedd(st, move |s| {
        s.run_ended(job, &end, Rusage::default(), now_secs())
    })
    .await
    {
        tracing::error!("recording the end of job {job}'s run: {}", e.0.message);
    }
    st.changed.notify_one();
    st.reschedule.notify_one();
}

/// `/shadow/starter_gone`: the startd says the starter of the job under
/// the claim exited without a report. The run is lost now (a report that
/// already arrived wins).
pub(crate) async fn starter_gone(
    State(st): State<Shared>,
    Json(g): Json<StarterGone>,
) -> Result<Json<Ack>, ApiError> {
    let done = {
        let mut runs = st.shadows.runs();
        let run = runs.get_mut(&g.claim_id).ok_or_else(unknown_claim)?;
        if run.job.to_string() != g.job_id {
            return Err(unknown_claim());
        }
        run.done.take()
    };
    if let Some(tx) = done {
        tracing::warn!("job {}: {}", g.job_id, g.reason);
        let _ = tx.send(RunResult::Lost(g.reason));
    }
    Ok(Json(Ack {}))
}

// ---------------------------------------------------------------------
// Starter-facing routes.

fn unknown_claim() -> ApiError {
    ApiError::not_found("no job runs under this claim here")
}

pub(crate) async fn begin(
    State(st): State<Shared>,
    Json(req): Json<ShadowBegin>,
) -> Result<Json<BeginReply>, ApiError> {
    let job_ad = {
        let mut runs = st.shadows.runs();
        let run = runs.get_mut(&req.claim_id).ok_or_else(unknown_claim)?;
        if run.job.to_string() != req.job_id {
            return Err(unknown_claim());
        }
        if !req.transfer {
            run.inputs = Some(InputPlan::default());
            return Ok(Json(BeginReply { inputs: Vec::new() }));
        }
        run.job_ad.clone()
    };
    // the inputs are looked at with the owner's rights
    let rights = owner_rights(&st, &job_ad)
        .map_err(|e| fail_run(&st, &req.claim_id, input_failure(e, None)))?;
    let planned = st
        .shadows
        .as_user
        .run_async(&rights, move || sandbox::plan_inputs(&job_ad))
        .await
        .map_err(|e| fail_run(&st, &req.claim_id, input_failure(e.to_string(), None)))?;
    match planned {
        Ok(plan) => {
            let inputs = plan.entries.clone();
            let mut runs = st.shadows.runs();
            let run = runs.get_mut(&req.claim_id).ok_or_else(unknown_claim)?;
            run.inputs = Some(plan);
            Ok(Json(BeginReply { inputs }))
        }
        Err(e) => Err(fail_run(
            &st,
            &req.claim_id,
            ShadowFailure {
                reason: format!("transferring input files failed: {e}"),
                code: i64::from(e.hold_reason_code()),
                subcode: e.errno(),
                permanent: true,
            },
        )),
    }
}

pub(crate) async fn input_file(
    State(st): State<Shared>,
    Json(req): Json<InputFileRequest>,
) -> Result<Response, ApiError> {
    let (source, job_ad) = {
        let runs = st.shadows.runs();
        let run = runs.get(&req.claim_id).ok_or_else(unknown_claim)?;
        let plan = run
            .inputs
            .as_ref()
            .ok_or_else(|| ApiError::conflict("ask /shadow/begin first"))?;
        let source = plan
            .sources
            .get(req.index)
            .cloned()
            .flatten()
            .ok_or_else(|| ApiError::not_found(format!("no input file #{}", req.index)))?;
        (source, run.job_ad.clone())
    };
    // opened with the owner's rights: a file the owner cannot read is
    // refused exactly as it would be to them
    let rights = owner_rights(&st, &job_ad)
        .map_err(|e| fail_run(&st, &req.claim_id, input_failure(e, None)))?;
    let path = source.clone();
    let opened = st
        .shadows
        .as_user
        .run_async(&rights, move || std::fs::File::open(&path))
        .await
        .map_err(|e| fail_run(&st, &req.claim_id, input_failure(e.to_string(), None)))?;
    let file = opened.map_err(|e| {
        fail_run(
            &st,
            &req.claim_id,
            input_failure(
                format!("cannot read input file {}: {e}", source.display()),
                Some(&e),
            ),
        )
    })?;
    let result = skua_net::open_file_response(tokio::fs::File::from_std(file), &source).await;
    if let Err(e) = &result {
        let _ = fail_run(
            &st,
            &req.claim_id,
            input_failure(format!("input file {}: {e}", source.display()), None),
        );
    }
    result
}

/// The failure of an input transfer (HTCondor's hold code 13, the errno
/// as subcode): the job is held, a retry cannot help.
fn input_failure(reason: String, error: Option<&std::io::Error>) -> ShadowFailure {
    ShadowFailure {
        reason: format!("transferring input files failed: {reason}"),
        code: i64::from(sandbox::HOLD_TRANSFER_INPUT_ERROR),
        subcode: error.map(errno_of).unwrap_or(0),
        permanent: true,
    }
}

/// The failure of an output transfer (hold code 12, the errno as subcode).
fn output_failure(
    reason: String,
    error: Option<&std::io::Error>,
    permanent: bool,
) -> ShadowFailure {
    ShadowFailure {
        reason: format!("transferring output files failed: {reason}"),
        code: i64::from(sandbox::HOLD_TRANSFER_OUTPUT_ERROR),
        subcode: error.map(errno_of).unwrap_or(0),
        permanent,
    }
}

/// Records `failure` on the run of `claim_id` (reported when the starter
/// gives up) and gives the error to answer the starter with.
fn fail_run(st: &Shared, claim_id: &str, failure: ShadowFailure) -> ApiError {
    let err = ApiError::not_found(failure.reason.clone());
    if let Some(run) = st.shadows.runs().get_mut(claim_id) {
        run.failure = Some(failure);
    }
    err
}

/// The rights the shadow uses for the files of the job `ad`: its owner's
/// (the daemon's own when the schedd is not root).
fn owner_rights(st: &Shared, ad: &ClassAd) -> Result<Rights, String> {
    let owner = sandbox::string_attr(ad, "Owner").unwrap_or_default();
    st.shadows
        .as_user
        .rights_of(&owner)
        .map_err(|e| format!("the job's owner: {e}"))
}

pub(crate) async fn output_file(
    State(st): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Ack>, ApiError> {
    let meta: OutputFileMeta = headers
        .get(TRANSFER_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::bad_request(format!("the {TRANSFER_HEADER} header is missing")))
        .and_then(|v| {
            serde_json_from_str(v)
                .map_err(|e| ApiError::bad_request(format!("the {TRANSFER_HEADER} header: {e}")))
        })?;
    let (dest, job_ad) = {
        let runs = st.shadows.runs();
        let run = runs.get(&meta.claim_id).ok_or_else(unknown_claim)?;
        let dest = sandbox::output_path(&run.job_ad, &meta.name)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        (dest, run.job_ad.clone())
    };
    let claim = meta.claim_id.as_str();
    let rights = owner_rights(&st, &job_ad)
        .map_err(|e| fail_run(&st, claim, output_failure(e, None, true)))?;
    // Everything with the owner's rights: the directories, a temporary file
    // beside the destination (never following a link), the rename over it.
    let as_user = st.shadows.as_user.clone();
    let d = dest.clone();
    let opened = as_user
        .run_async(&rights, move || create_beside(&d))
        .await
        .map_err(|e| fail_run(&st, claim, output_failure(e.to_string(), None, true)))?;
    let (file, tmp) = opened.map_err(|e| {
        fail_run(
            &st,
            claim,
            output_failure(
                format!("cannot write {}: {e}", dest.display()),
                Some(&e),
                true,
            ),
        )
    })?;
    let mut file = tokio::fs::File::from_std(file);
    let received =
        skua_net::receive_into(body, &mut file, &dest, skua_net::RECEIVE_IDLE_TIMEOUT).await;
    // the mode the job gave it, without set-user-id, set-group-id or
    // sticky bits: a file comes back as the owner's plain file
    let mode = if meta.mode == 0 {
        0o644
    } else {
        meta.mode & 0o777
    };
    let stored = match received {
        Ok(_) => file
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .await
            .map_err(|e| {
                (
                    format!("cannot set the mode of {}: {e}", dest.display()),
                    Some(e),
                )
            }),
        Err(e) => Err((e.to_string(), None)),
    };
    drop(file);
    let (t, d) = (tmp.clone(), dest.clone());
    let renamed = match stored {
        Ok(()) => as_user
            .run_async(&rights, move || std::fs::rename(&t, &d))
            .await
            .map_err(|e| (e.to_string(), None))
            .and_then(|r| {
                r.map_err(|e| {
                    (
                        format!("cannot rename into {}: {e}", dest.display()),
                        Some(e),
                    )
                })
            }),
        Err(e) => Err(e),
    };
    match renamed {
        Ok(()) => Ok(Json(Ack {})),
        Err((reason, error)) => {
            let t = tmp.clone();
            let _ = as_user
                .run_async(&rights, move || std::fs::remove_file(&t))
                .await;
            // a broken-off transfer may succeed again; a refused file not
            let permanent = error.is_some();
            Err(fail_run(
                &st,
                claim,
                output_failure(
                    format!("output file {}: {reason}", dest.display()),
                    error.as_ref(),
                    permanent,
                ),
            ))
        }
    }
}

/// Creates the directories of `dest` and a new temporary file beside it
/// (`.NAME.part-PID-N`, mode 0600, created exclusively, never through a
/// symbolic link). Runs with the owner's rights.
fn create_beside(dest: &Path) -> std::io::Result<(std::fs::File, std::path::PathBuf)> {
    use std::os::unix::fs::OpenOptionsExt;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = dest.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")
    })?;
    if let Some(parent) = dest.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)?;
        }
    }
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".part-{}-{n}", std::process::id()));
    let tmp = dest.with_file_name(tmp_name);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    Ok((file, tmp))
}

fn serde_json_from_str<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, String> {
    serde_json::from_str(s).map_err(|e| e.to_string())
}

pub(crate) async fn update(
    State(st): State<Shared>,
    Json(u): Json<JobUpdate>,
) -> Result<Json<Ack>, ApiError> {
    let (job, slot, startd) = {
        let mut runs = st.shadows.runs();
        let run = runs.get_mut(&u.claim_id).ok_or_else(unknown_claim)?;
        if u.kind == UpdateKind::Executing {
            run.executing = true;
        }
        (run.job, run.slot.clone(), run.startd_addr.clone())
    };
    let usage = u.usage;
    match u.kind {
        UpdateKind::Executing => {
            with_schedd(&st, move |s| s.executing(job, &startd, &slot, now_secs())).await?;
        }
        UpdateKind::Suspended | UpdateKind::Unsuspended => {
            let on = u.kind == UpdateKind::Suspended;
            with_schedd(&st, move |s| s.suspended(job, on, now_secs())).await?;
        }
        UpdateKind::Usage => {
            if usage.image_size_kb > 0 {
                with_schedd(&st, move |s| {
                    s.usage(
                        job,
                        usage.image_size_kb as i64,
                        usage.resident_set_size_kb as i64,
                        now_secs(),
                    )
                })
                .await?;
            }
        }
    }
    Ok(Json(Ack {}))
}

pub(crate) async fn exit(
    State(st): State<Shared>,
    Json(x): Json<JobExit>,
) -> Result<Json<Ack>, ApiError> {
    let (job, failure, done, executed) = {
        let mut runs = st.shadows.runs();
        let run = runs.get_mut(&x.claim_id).ok_or_else(unknown_claim)?;
        // a short job's execution comes with its exit
        let executed = (x.executed && !run.executing).then(|| {
            run.executing = true;
            (run.startd_addr.clone(), run.slot.clone())
        });
        (run.job, run.failure.clone(), run.done.take(), executed)
    };
    let rusage = Rusage {
        user_secs: x.usage.user_cpu_secs as i64,
        sys_secs: x.usage.sys_cpu_secs as i64,
    };
    let usage = x.usage;
    let outcome = x.outcome;
    let reusable = matches!(
        outcome,
        RunOutcome::Exited { .. } | RunOutcome::Signaled { .. } | RunOutcome::Failed { .. }
    );
    let result = with_schedd(&st, move |s| {
        let now = now_secs();
        if let Some((startd, slot)) = executed {
            s.executing(job, &startd, &slot, now)?;
        }
        if usage.image_size_kb > 0 {
            s.usage(
                job,
                usage.image_size_kb as i64,
                usage.resident_set_size_kb as i64,
                now,
            )?;
        }
        match outcome {
            RunOutcome::Exited { code } => s.job_exited(
                job,
                &ExitInfo {
                    exit_code: Some(i64::from(code)),
                    remote_usage: rusage,
                    ..ExitInfo::default()
                },
                now,
            ),
            RunOutcome::Signaled {
                signal,
                core_dumped,
            } => s.job_exited(
                job,
                &ExitInfo {
                    signal: Some(i64::from(signal)),
                    core_file: core_dumped.then(|| "core".to_string()),
                    remote_usage: rusage,
                    ..ExitInfo::default()
                },
                now,
            ),
            RunOutcome::Evicted { reason } => {
                s.run_ended(job, &RunEnd::Evicted { reason }, rusage, now)
            }
            RunOutcome::Held {
                reason,
                code,
                subcode,
            } => s.run_ended(
                job,
                &RunEnd::Held {
                    reason,
                    code,
                    subcode,
                },
                rusage,
                now,
            ),
            RunOutcome::Failed { reason, permanent } => {
                let end = match failure {
                    Some(f) => RunEnd::Failed {
                        reason: f.reason,
                        hold_code: f.code,
                        hold_subcode: f.subcode,
                        permanent: f.permanent || permanent,
                    },
                    None => RunEnd::Failed {
                        reason,
                        hold_code: 0,
                        hold_subcode: 0,
                        permanent,
                    },
                };
                s.run_ended(job, &end, rusage, now)
            }
        }
    })
    .await;
    st.changed.notify_one();
    if let Some(tx) = done {
        let _ = tx.send(RunResult::Reported { reusable });
    }
    result.map(|_| Json(Ack {}))
}
