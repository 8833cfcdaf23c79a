//! The schedd's claims and runs: one [`Run`] per claim whose job is
//! starting or running, found by claim id (the starter's requests name
//! it), and the settings every claim task shares ([`Shadows`]). (The jobs
//! some claim holds are kept with the queue, `shared.rs`.) The claim tasks (`claim.rs`) add and remove
//! runs; the starter-facing routes (`shadow.rs`) fill them in and finish
//! them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use classad::ClassAd;
use skua_daemon::account::AsUser;
use skua_daemon::context::Locator;
use skua_daemon::{Clock, DaemonContext};
use skua_net::Client;
use skua_queue::JobId;
use tokio::sync::{oneshot, Notify};

use crate::lease::AliveConfig;
use crate::sandbox::InputPlan;

/// How a run ended, as the claim task learns it.
#[derive(Debug)]
pub(crate) enum RunResult {
    /// The exit was reported and committed. `reusable`: the job ended by
    /// itself, so its starter waits for the claim's next job (a vacated,
    /// killed or held job's starter exits, and the claim ends with it).
    Reported { reusable: bool },
    /// The starter or the startd went away without a report.
    Lost(String),
    /// The schedd could not reach the run within the job's lease (event
    /// 024): the job goes back to Idle.
    ReconnectFailed(String),
}

/// One job running (or starting) under a claim.
pub(crate) struct Run {
    pub job: JobId,
    pub job_ad: ClassAd,
    pub slot: String,
    pub startd_addr: String,
    pub inputs: Option<InputPlan>,
    /// A failure the shadow saw itself (missing input...), reported when
    /// the starter gives up.
    pub failure: Option<ShadowFailure>,
    pub executing: bool,
    /// The checkpoint whose upload this run began (its "Started
    /// transferring" event is logged once).
    pub checkpoint_upload: Option<u64>,
    pub done: Option<oneshot::Sender<RunResult>>,
    /// A run a restarted schedd is reconnecting to: true once the
    /// reconnection is recorded (or given up), so that the job's exit,
    /// if its starter sends it at once, is logged after event 023.
    pub gate: Option<tokio::sync::watch::Receiver<bool>>,
    /// Asks the claim task to stop the job (rm, hold).
    pub vacate: Arc<Notify>,
}

/// A failure the shadow saw itself, with HTCondor's hold code and
/// subcode (the errno of a failed file operation).
#[derive(Clone, Debug)]
pub(crate) struct ShadowFailure {
    pub reason: String,
    pub code: i64,
    pub subcode: i64,
    pub permanent: bool,
}

/// How the schedd opens clients to other daemons: built once from the
/// daemon's context (its token, the CA it trusts, where the negotiator
/// is), so that the claim tasks, which outlive any borrow of the context,
/// dial startds the way the context would. Every client the schedd opens
/// to another daemon is made here.
#[derive(Clone, Default)]
pub(crate) struct Dialer {
    token: Option<String>,
    dialer: skua_daemon::context::Dialer,
    negotiator: Option<Locator>,
    collector: Option<Locator>,
}

impl Dialer {
    /// The context's way of dialing (`ctx.dialer()`: its daemon token, the
    /// CA of `AUTH_SSL_CLIENT_CAFILE` read once, a test's fault filter) and
    /// the negotiator's locator.
    pub(crate) fn from_context(ctx: &DaemonContext) -> anyhow::Result<Dialer> {
        Ok(Dialer {
            token: ctx.daemon_token.clone(),
            dialer: ctx.dialer()?,
            negotiator: Some(ctx.locator("NEGOTIATOR")?),
            collector: Some(ctx.locator("COLLECTOR")?),
        })
    }

    /// A client for the daemon at `address` (`<ip:port>`), as
    /// `DaemonContext::client_at` makes it.
    pub(crate) fn client_at(&self, address: &str, timeout: Duration) -> Result<Client, String> {
        self.dialer
            .client_at(address, timeout)
            .map_err(|e| e.to_string())
    }

    /// A client for the pool's negotiator: on this host (its Unix socket or
    /// address file) or at `NEGOTIATOR_HOST`, as `DaemonContext::client_for`
    /// makes it; otherwise (a submit host without a negotiator, as in
    /// HTCondor) at the `MyAddress` of the Negotiator ad in the collector.
    pub(crate) async fn negotiator(&self, timeout: Duration) -> Result<Client, String> {
        let locator = self
            .negotiator
            .as_ref()
            .ok_or_else(|| "no negotiator is configured".to_string())?;
        let local = match locator.endpoint() {
            Ok(_) => {
                return locator
                    .client(self.token.clone(), timeout)
                    .map_err(|e| e.to_string())
            }
            Err(e) => e.to_string(),
        };
        let collector = self
            .collector
            .as_ref()
            .ok_or_else(|| format!("{local}, and no collector is configured"))?
            .client(self.token.clone(), timeout)
            .map_err(|e| format!("{local}; finding the collector: {e}"))?;
        let reply: skua_proto::QueryReply = collector
            .command(
                &skua_proto::routes::COLLECTOR_QUERY,
                Some(&skua_proto::Query {
                    ad_type: "Negotiator".to_string(),
                    constraint: None,
                    projection: vec!["MyAddress".to_string()],
                }),
            )
            .await
            .map_err(|e| format!("{local}; asking the collector for the negotiator: {e}"))?;
        let address = reply
            .ads
            .iter()
            .filter_map(|text| classad::parse_ad(text).ok())
            .find_map(|ad| match ad.lookup("MyAddress") {
                Some(classad::Expr::Lit(v)) => v.as_string(),
                _ => None,
            })
            .ok_or_else(|| format!("{local}, and the collector knows no negotiator"))?;
        self.client_at(&address, timeout)
    }
}

/// Every claim and run of the schedd, and what claim tasks share.
pub(crate) struct Shadows {
    runs: Mutex<HashMap<String, Run>>,
    /// This schedd's address (`<ip:port>`), known once it listens.
    pub addr: OnceLock<String>,
    pub dialer: Dialer,
    /// `ALIVE_INTERVAL` and `MAX_CLAIM_ALIVES_MISSED`.
    pub alive: AliveConfig,
    /// `REQUEST_CLAIM_TIMEOUT`: how long a claim the startd answers
    /// "not yet" (its slot being preempted for us) is asked again before
    /// the schedd gives it up.
    pub claim_timeout: Duration,
    /// How often such a claim is asked again.
    pub claim_retry: Duration,
    /// This schedd's `UID_DOMAIN`, given to the starter with each job
    /// (`UidDomain`): an execute host in the same domain runs the job as
    /// its owner.
    pub uid_domain: String,
    /// Acts with a job owner's rights on the owner's files.
    pub as_user: AsUser,
    /// The daemon's clock: keep-alives, leases and claim deadlines.
    pub clock: Clock,
    /// `RECONNECT_BACKOFF_CEILING`: the longest pause between two
    /// reconnect attempts.
    pub reconnect_ceiling: Duration,
    /// Where jobs' checkpoints are stored (`$(SPOOL)/checkpoints`) unless
    /// a job names its own `checkpoint_destination`; `None`: no spool, no
    /// checkpoint is taken.
    pub checkpoint_root: Option<std::path::PathBuf>,
    /// `SCHEDD_ENABLE_SSH_TO_JOB`, evaluated in the job's ad (`None`:
    /// true, HTCondor's default).
    pub ssh_to_job: Option<classad::Expr>,
    /// The runs whose exit was recorded lately (claim id, job): a starter
    /// that repeats an exit (its acknowledgement lost) is answered again.
    finished: Mutex<std::collections::VecDeque<(String, JobId)>>,
    /// Per job with checkpoints being made durable after their replies:
    /// their order and outcome (see [`CommitLane`]).
    commit_lanes: Mutex<HashMap<JobId, CommitLane>>,
    /// The transfer queue (`xferq.rs`).
    pub transfers: crate::xferq::Transfers,
    /// The dedicated scheduler's claims and running parallel jobs.
    pub dedicated: crate::dedicated::Dedicated,
}

/// A job's checkpoint lane. Each commit answered before its checkpoint
/// is durable takes a ticket (in the order the commits came); its
/// durable step (sync, rename, record) runs after the previous ticket's.
/// Whatever needs the job's checkpoints settled (the begin of its next
/// run, the run's end) waits for every ticket taken so far. A failed
/// durable step leaves its reason here until the run is told (its next
/// checkpoint is refused with it, so the job is held as for any
/// checkpoint the store cannot take).
pub(crate) struct CommitLane {
    /// Tickets taken.
    scheduled: u64,
    /// The last ticket done.
    done: tokio::sync::watch::Sender<u64>,
    /// Why a durable step failed, until told.
    failure: Option<String>,
}

/// How many finished runs [`Shadows`] remembers.
const FINISHED_KEPT: usize = 4096;

/// HTCondor's `REQUEST_CLAIM_TIMEOUT` default: 30 minutes.
pub(crate) const DEFAULT_CLAIM_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How often a claim on a slot being preempted for us is asked again.
pub(crate) const PREEMPTED_CLAIM_RETRY: Duration = Duration::from_secs(1);

impl Shadows {
    pub(crate) fn new(dialer: Dialer, alive: AliveConfig, clock: Clock) -> Shadows {
        Shadows {
            runs: Mutex::new(HashMap::new()),
            addr: OnceLock::new(),
            dialer,
            alive,
            claim_timeout: DEFAULT_CLAIM_TIMEOUT,
            claim_retry: PREEMPTED_CLAIM_RETRY,
            uid_domain: String::new(),
            as_user: AsUser::new(),
            clock,
            reconnect_ceiling: Duration::from_secs(300),
            checkpoint_root: None,
            ssh_to_job: None,
            finished: Mutex::new(std::collections::VecDeque::new()),
            commit_lanes: Mutex::new(HashMap::new()),
            transfers: crate::xferq::Transfers::default(),
            dedicated: crate::dedicated::Dedicated::default(),
        }
    }

    fn lanes(&self) -> MutexGuard<'_, HashMap<JobId, CommitLane>> {
        self.commit_lanes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the next ticket of `job`'s checkpoint lane: waiting on the
    /// receiver until it shows `ticket - 1` is the turn of this ticket's
    /// durable step, which ends with [`Shadows::lane_done`].
    pub(crate) fn lane_ticket(&self, job: JobId) -> (u64, tokio::sync::watch::Receiver<u64>) {
        let mut lanes = self.lanes();
        let lane = lanes.entry(job).or_insert_with(|| CommitLane {
            scheduled: 0,
            done: tokio::sync::watch::Sender::new(0),
            failure: None,
        });
        lane.scheduled += 1;
        (lane.scheduled, lane.done.subscribe())
    }

    /// Ticket `ticket` of `job`'s lane is done, failed for `failure` if
    /// given. The lane is forgotten once nothing is pending or to tell.
    pub(crate) fn lane_done(&self, job: JobId, ticket: u64, failure: Option<String>) {
        let mut lanes = self.lanes();
        let Some(lane) = lanes.get_mut(&job) else {
            return;
        };
        if failure.is_some() {
            lane.failure = failure;
        }
        lane.done.send_replace(ticket);
        if lane.scheduled == ticket && lane.failure.is_none() {
            lanes.remove(&job);
        }
    }

    /// Why a durable step of `job`'s checkpoints failed, if one did since
    /// the last call (told once).
    pub(crate) fn lane_failure(&self, job: JobId) -> Option<String> {
        let mut lanes = self.lanes();
        let lane = lanes.get_mut(&job)?;
        let failure = lane.failure.take();
        if lane.scheduled == *lane.done.borrow() {
            lanes.remove(&job);
        }
        failure
    }

    /// Waits until every checkpoint of `job` committed so far is durable
    /// and recorded, or failed.
    pub(crate) async fn lane_settled(&self, job: JobId) {
        let (target, mut rx) = {
            let lanes = self.lanes();
            let Some(lane) = lanes.get(&job) else {
                return;
            };
            (lane.scheduled, lane.done.subscribe())
        };
        // a lane forgotten meanwhile was done
        let _ = rx.wait_for(|d| *d >= target).await;
    }

    /// Remembers that the exit of `job`'s run under `claim_id` was
    /// recorded.
    pub(crate) fn remember_finished(&self, claim_id: &str, job: JobId) {
        let mut f = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        if f.len() >= FINISHED_KEPT {
            f.pop_front();
        }
        f.push_back((claim_id.to_string(), job));
    }

    /// Whether the exit of `job`'s run under `claim_id` was recorded.
    pub(crate) fn finished(&self, claim_id: &str, job: &str) -> bool {
        let f = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        f.iter().any(|(c, j)| c == claim_id && j.to_string() == job)
    }

    pub(crate) fn runs(&self) -> MutexGuard<'_, HashMap<String, Run>> {
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

    /// Tells the claim task of `claim_id` how its run ended, unless it was
    /// told already. Whether it was told now.
    pub(crate) fn finish(&self, claim_id: &str, result: RunResult) -> bool {
        let done = self.runs().get_mut(claim_id).and_then(|r| r.done.take());
        match done {
            Some(tx) => tx.send(result).is_ok(),
            None => false,
        }
    }
}
