//! The dedicated scheduler's shell: it carries out the plans of the pure
//! core (`skua_negotiation::dedicated`) so that parallel-universe jobs run
//! their N nodes at once.
//!
//! - **Negotiation.** The schedd negotiates as submitter
//!   `DedicatedScheduler@<UID_DOMAIN>` (advertised while nodes are
//!   wanted): its resource requests are the core's per-node request ads
//!   ([`resource_requests`]); each match becomes a dedicated claim task
//!   ([`matched`]).
//! - **Held claims.** A dedicated claim task claims the slot with the
//!   claim machine of `claim.rs`, then holds it: keep-alives every
//!   interval, and it runs what the pass sends it (a node of a parallel
//!   job, through `claim::run_one` with a queue handle of the node
//!   ([`NodeQueue`])) or releases it.
//! - **The pass** ([`run`]): on wake-ups (submissions, claims becoming
//!   idle, nodes ending) and every second, the idle parallel jobs and the
//!   held claims go to `schedule()`; jobs all of whose nodes have an idle
//!   claim start ([`start_job`]); unused claims are released.
//! - **Nodes.** Each node runs under its own claim (the starter's requests
//!   find the node's run by claim id; its job id is the proc's). A node's
//!   executing report writes 001 (first node) and 014; its exit by itself
//!   writes 015 and, by the shutdown policy, may end the job (the others
//!   are killed; the job's exit is node 0's). A node lost, or stopped by
//!   anything but its own exit, stops every node and puts the job back to
//!   Idle (whole-job restart).
//!
//! Not done yet: backfill (idle dedicated claims running ordinary jobs)
//! and taking such claims back.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use classad::{parse_ad, ClassAd, Evaluator};
use skua_daemon::account::Rights;
use skua_negotiation::dedicated::{
    node_ad, node_exited, node_lost, node_request_ad, schedule, ClaimUse, DedicatedPolicy,
    HeldClaim, NodeContext, NodeGroup, ParallelJob, RunningNode, ShutdownPolicy, Start,
};
use skua_proto::{ClaimRequest, JobExit, MatchInfo, ResourceRequest, RunOutcome};
use skua_queue::userlog::{ExitStatus, Termination};
use skua_queue::{ExitInfo, JobId, Mutation, RunEnd, Rusage, Txn, UserLogEvent};
use tokio::sync::{mpsc, Notify};

use crate::claim::{self, ClaimQueue, ShadowError, Startd, StartdClient, StartdError};
use crate::runs::RunResult;
use crate::shared::{with_queue, with_schedd, Shared};

/// The owner part of the dedicated scheduler's submitter name.
pub(crate) const SUBMITTER_OWNER: &str = "DedicatedScheduler";

/// How often the pass runs without a wake-up.
const PASS_INTERVAL: Duration = Duration::from_secs(1);

/// What the pass asks of a held claim's task.
enum Cmd {
    /// Run node `node` of `job` with the node's ad.
    Run { job: JobId, node: u32, ad: ClassAd },
    /// Run an ordinary job (already marked busy) meanwhile (backfill).
    Backfill { job: JobId },
    /// Give the claim back.
    Release,
}

/// A claim the dedicated scheduler holds.
struct Held {
    slot_ad: ClassAd,
    slot: String,
    startd_addr: String,
    use_: ClaimUse,
    tx: mpsc::UnboundedSender<Cmd>,
}

/// A parallel job whose nodes run.
struct RunningJob {
    nodes: Vec<RunningNode>,
    /// The proc of each node, node order.
    proc_of: Vec<u32>,
    policy: ShutdownPolicy,
    /// 001 was written.
    executing: bool,
    /// Node 0's exit, once it exited by itself.
    node0: Option<RunOutcome>,
    spool: Option<PathBuf>,
    owner: String,
}

#[derive(Default)]
struct State {
    claims: HashMap<String, Held>,
    running: HashMap<u32, RunningJob>,
    /// The node a claim runs: (cluster, node).
    node_of: HashMap<String, (u32, u32)>,
    /// The current resource requests: (request ad, count).
    requests: Vec<(ClassAd, u32)>,
}

/// The dedicated scheduler's state, shared by the pass, the claim tasks and
/// the starter-facing hooks.
#[derive(Default)]
pub(crate) struct Dedicated {
    state: Mutex<State>,
    /// Asks for a pass soon.
    pub(crate) wake: Notify,
    /// `DedicatedScheduler@<schedd name>`: what submit writes in `Scheduler`
    /// and the dedicated hosts advertise.
    pub(crate) name: OnceLock<String>,
    /// `DEDICATED_SCHEDULER_USE_FIFO`, `UNUSED_CLAIM_TIMEOUT`.
    pub(crate) policy: OnceLock<DedicatedPolicy>,
    /// Where parallel jobs' `RemoteSpoolDir`s are made (`$(SPOOL)/parallel`).
    pub(crate) spool: OnceLock<PathBuf>,
}

impl Dedicated {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many nodes the dedicated scheduler asks the negotiator for.
    pub(crate) fn wanted(&self) -> u32 {
        self.state().requests.iter().map(|(_, n)| *n).sum()
    }
}

/// Reads the dedicated scheduler's knobs: its name from the schedd's
/// (`DedicatedScheduler@<SCHEDD_NAME or host>`, as submit writes it),
/// `DEDICATED_SCHEDULER_USE_FIFO`, `UNUSED_CLAIM_TIMEOUT`, and where the
/// jobs' spool directories go (`$(SPOOL)/parallel`).
pub(crate) fn configure(
    ctx: &skua_daemon::DaemonContext,
    d: &Dedicated,
    schedd_name: &str,
) -> anyhow::Result<()> {
    let fifo = ctx.knob("DEDICATED_SCHEDULER_USE_FIFO")?;
    let unused = ctx.knob("UNUSED_CLAIM_TIMEOUT")?;
    let policy = DedicatedPolicy::from_knobs(|k| match k {
        "DEDICATED_SCHEDULER_USE_FIFO" => fifo.clone(),
        "UNUSED_CLAIM_TIMEOUT" => unused.clone(),
        _ => None,
    })?;
    let _ = d.policy.set(policy);
    let _ = d.name.set(format!("{SUBMITTER_OWNER}@{schedd_name}"));
    if let Some(spool) = ctx.knob("SPOOL")? {
        let _ = d.spool.set(PathBuf::from(spool).join("parallel"));
    }
    Ok(())
}

/// The dedicated scheduler's Submitter ad, while it wants nodes.
pub(crate) fn submitter_ad(
    st: &Shared,
    schedd_name: &str,
    uid_domain: &str,
    addr: &str,
) -> Option<(String, ClassAd)> {
    let wanted = st.shadows.dedicated.wanted();
    if wanted == 0 {
        return None;
    }
    let name = format!("{SUBMITTER_OWNER}@{uid_domain}");
    let mut s = ClassAd::new();
    s.insert_value("MyType", "Submitter");
    s.insert_value("Name", name.as_str());
    s.insert_value("Owner", SUBMITTER_OWNER);
    s.insert_value("ScheddName", schedd_name);
    s.insert_value(
        "Machine",
        schedd_name.rsplit('@').next().unwrap_or(schedd_name),
    );
    s.insert_value("MyAddress", addr);
    s.insert_value("ScheddIpAddr", addr);
    s.insert_value("IdleJobs", i64::from(wanted));
    s.insert_value("RunningJobs", 0i64);
    s.insert_value("HeldJobs", 0i64);
    s.insert_value("WeightedIdleJobs", i64::from(wanted));
    Some((name, s))
}

/// `/schedd/resource_requests` for the dedicated scheduler: one request
/// per proc that needs nodes, the autocluster being its index.
pub(crate) fn resource_requests(st: &Shared) -> Vec<ResourceRequest> {
    st.shadows
        .dedicated
        .state()
        .requests
        .iter()
        .enumerate()
        .filter(|(_, (_, n))| *n > 0)
        .map(|(i, (ad, n))| ResourceRequest {
            autocluster: i as u64,
            ad: ad.to_string(),
            count: u64::from(*n),
        })
        .collect()
}

/// `/schedd/matches` for the dedicated scheduler: each match becomes a held
/// claim.
pub(crate) fn matched(st: &Shared, info: MatchInfo, slot_ad: ClassAd) {
    let request = {
        let mut s = st.shadows.dedicated.state();
        let i = usize::try_from(info.autocluster).unwrap_or(usize::MAX);
        match s.requests.get_mut(i) {
            Some((ad, n)) => {
                *n = n.saturating_sub(1);
                Some(ad.clone())
            }
            None => None,
        }
    };
    let startd = match StartdClient::dial(&st.shadows, &info.startd_addr) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot reach the startd of {}: {e}", info.slot);
            return;
        }
    };
    let Some(request) = request else {
        // no request of ours: give the match back
        tokio::spawn(async move { startd.release(&info.claim_id).await });
        return;
    };
    let (tx, rx) = mpsc::unbounded_channel();
    st.shadows.dedicated.state().claims.insert(
        info.claim_id.clone(),
        Held {
            slot_ad: slot_ad.clone(),
            slot: info.slot.clone(),
            startd_addr: info.startd_addr.clone(),
            use_: ClaimUse::Acquiring,
            tx,
        },
    );
    let st = st.clone();
    tokio::spawn(async move { claim_task(st, startd, info, request, rx).await });
}

/// Forgets a claim and asks for a pass.
fn drop_claim(st: &Shared, claim_id: &str) {
    let d = &st.shadows.dedicated;
    let mut s = d.state();
    s.claims.remove(claim_id);
    s.node_of.remove(claim_id);
    drop(s);
    d.wake.notify_one();
}

fn set_use(st: &Shared, claim_id: &str, use_: ClaimUse) {
    let d = &st.shadows.dedicated;
    if let Some(h) = d.state().claims.get_mut(claim_id) {
        h.use_ = use_;
    }
    d.wake.notify_one();
}

/// Claims the slot, then holds it: keep-alives, nodes to run, release.
async fn claim_task(
    st: Shared,
    startd: StartdClient,
    info: MatchInfo,
    request_ad: ClassAd,
    mut rx: mpsc::UnboundedReceiver<Cmd>,
) {
    let shadows = st.shadows.clone();
    let Some(addr) = shadows.addr.get().cloned() else {
        drop_claim(&st, &info.claim_id);
        return;
    };
    let mut interval = shadows.alive.interval_for(&request_ad);
    let request = ClaimRequest {
        claim_id: info.claim_id.clone(),
        job_ad: request_ad.to_string(),
        schedd_addr: addr.clone(),
        alive_interval_secs: interval.as_secs(),
    };
    let id_of = |ad: &ClassAd, name: &str| {
        ad.lookup(name)
            .and_then(|e| match e {
                classad::Expr::Lit(v) => v.as_int(),
                _ => None,
            })
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    };
    let for_job = JobId::new(
        id_of(&request_ad, "ClusterId"),
        id_of(&request_ad, "ProcId"),
    );
    let (slot, slot_ad) = match claim::claim(&shadows, &startd, &info, &request, for_job).await {
        Ok(r) => {
            let parsed = parse_ad(&r.slot_ad).ok();
            let mut s = st.shadows.dedicated.state();
            if let Some(h) = s.claims.get_mut(&info.claim_id) {
                if let Some(ad) = &parsed {
                    h.slot_ad = ad.clone();
                }
                h.slot = r.slot.clone();
            }
            (r.slot, parsed.unwrap_or_default())
        }
        Err(e) => {
            tracing::info!("dedicated claim of {} failed: {e}", info.slot);
            if matches!(e, ShadowError::ClaimTimedOut { .. }) {
                startd.release(&info.claim_id).await;
            }
            drop_claim(&st, &info.claim_id);
            return;
        }
    };
    tracing::info!("dedicated scheduler claimed {slot}");
    set_use(
        &st,
        &info.claim_id,
        ClaimUse::Idle {
            since: st.clock.now_secs(),
        },
    );
    let lease = shadows.alive.lease_for(&request_ad, interval);
    let mut tick = st.clock.ticker(interval);
    tick.tick().await;
    let mut last_answer = st.clock.now();
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                None | Some(Cmd::Release) => break,
                Some(Cmd::Run { job, node, ad }) => {
                    let q = NodeQueue { st: st.clone(), claim_id: info.claim_id.clone(), ad };
                    let outcome = claim::run_one(&shadows, &q, &startd, &info, &slot, &addr, job, &slot_ad, &mut interval).await;
                    st.shadows.dedicated.state().node_of.remove(&info.claim_id);
                    let usable = match outcome {
                        Ok(()) => true,
                        // a node stopped on purpose (or whose starter went
                        // when it was stopped): the claim stays if the
                        // startd still holds it, idle
                        Err(ShadowError::Stopped(_) | ShadowError::Lost(_)) => {
                            claim_idle(&startd, &info.claim_id).await
                        }
                        Err(e) => {
                            tracing::info!("dedicated claim on {slot} (node {node}): {e}");
                            false
                        }
                    };
                    if !usable {
                        break;
                    }
                    last_answer = st.clock.now();
                    set_use(&st, &info.claim_id, ClaimUse::Idle { since: st.clock.now_secs() });
                }
                Some(Cmd::Backfill { job }) => {
                    tracing::info!("backfill: job {job} runs on the idle dedicated claim of {slot}");
                    let outcome = claim::run_one(&shadows, &st, &startd, &info, &slot, &addr, job, &slot_ad, &mut interval).await;
                    st.done_with(job);
                    let usable = match outcome {
                        Ok(()) => true,
                        // taken back (evicted) for a parallel job
                        Err(ShadowError::Stopped(_)) => claim_idle(&startd, &info.claim_id).await,
                        Err(e) => {
                            tracing::info!("dedicated claim on {slot} (backfill job {job}): {e}");
                            false
                        }
                    };
                    if !usable {
                        break;
                    }
                    last_answer = st.clock.now();
                    set_use(&st, &info.claim_id, ClaimUse::Idle { since: st.clock.now_secs() });
                }
            },
            _ = tick.tick() => {
                match startd.alive(&info.claim_id).await {
                    Ok(_) => last_answer = st.clock.now(),
                    Err(StartdError::NotFound(_)) => {
                        tracing::info!("the startd of {slot} no longer knows the dedicated claim");
                        drop_claim(&st, &info.claim_id);
                        return;
                    }
                    Err(e) => {
                        let silent = st.clock.now().duration_since(last_answer).unwrap_or_default();
                        if silent >= lease {
                            tracing::info!("dedicated claim on {slot}: no answer for the claim's lease: {e}");
                            drop_claim(&st, &info.claim_id);
                            return;
                        }
                    }
                }
            }
        }
    }
    startd.release(&info.claim_id).await;
    drop_claim(&st, &info.claim_id);
    tracing::debug!("dedicated scheduler released {slot}");
}

/// Whether the claim is idle at its startd (waiting a little for the
/// stopped starter to go).
async fn claim_idle(startd: &StartdClient, claim_id: &str) -> bool {
    for _ in 0..50 {
        match startd.alive(claim_id).await {
            Ok(s) if s.job_id.is_none() && s.state.eq_ignore_ascii_case("Claimed") => return true,
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(_) => return false,
        }
    }
    false
}

/// The queue as a node's run sees it: the job is already Running (the
/// pass marked it); the node's end outside its job is a lost node.
struct NodeQueue {
    st: Shared,
    claim_id: String,
    ad: ClassAd,
}

impl ClaimQueue for NodeQueue {
    async fn job_ad(&self, _job: JobId) -> Option<ClassAd> {
        Some(self.ad.clone())
    }

    async fn start_run(
        &self,
        _job: JobId,
        _slot: &str,
        _claim_id: &str,
        _startd_addr: &str,
        _slot_ad: &ClassAd,
    ) -> Result<Option<ClassAd>, ShadowError> {
        // (a node's `$$()` is not expanded yet: docs/parallel.md)
        Ok(Some(self.ad.clone()))
    }

    async fn executing(&self, _job: JobId, _addr: &str, _slot: &str) -> Result<(), ShadowError> {
        Ok(())
    }

    async fn end_run(&self, _job: JobId, end: RunEnd) {
        let reason = match end {
            RunEnd::Evicted { reason }
            | RunEnd::Failed { reason, .. }
            | RunEnd::Held { reason, .. }
            | RunEnd::ReconnectFailed { reason, .. } => reason,
        };
        let node = self
            .st
            .shadows
            .dedicated
            .state()
            .node_of
            .get(&self.claim_id)
            .copied();
        if let Some((cluster, node)) = node {
            lose(&self.st, cluster, node, &reason).await;
        }
    }

    async fn next_job(&self, _owner: &str, _slot_ad: &ClassAd) -> Option<JobId> {
        None
    }

    fn done_with(&self, _job: JobId) {}

    async fn disconnected(&self, _job: JobId, _slot: &str, _addr: &str) {}

    async fn reconnected(&self, _job: JobId, _slot: &str, _addr: &str) {}

    async fn lease_renewed(&self, _job: JobId) {}
}

/// Runs the pass on wake-ups and every [`PASS_INTERVAL`].
pub(crate) async fn run(st: Shared) {
    let mut tick = st.clock.ticker(PASS_INTERVAL);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = st.shadows.dedicated.wake.notified() => {}
        }
        pass(&st).await;
    }
}

fn int(ad: &ClassAd, name: &str) -> Option<i64> {
    match ad.lookup(name) {
        Some(classad::Expr::Lit(v)) => v.as_int(),
        _ => None,
    }
}

fn text(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.lookup(name) {
        Some(classad::Expr::Lit(v)) => v.as_string(),
        _ => None,
    }
}

/// One pass of the dedicated scheduler.
pub(crate) async fn pass(st: &Shared) {
    let running: Vec<u32> = st
        .shadows
        .dedicated
        .state()
        .running
        .keys()
        .copied()
        .collect();
    let jobs = with_schedd(st, move |s| {
        let mut by_cluster: Vec<ParallelJob> = Vec::new();
        for (id, ad) in s.queue().jobs() {
            if int(ad, "JobUniverse") != Some(11) || int(ad, "JobStatus") != Some(1) {
                continue;
            }
            if running.contains(&id.cluster) {
                continue;
            }
            let Some(ad) = s.job_ad(id) else { continue };
            let count = int(&ad, "MaxHosts").unwrap_or(1).clamp(0, 100_000) as u32;
            let group = NodeGroup {
                proc: id.proc,
                ad,
                count,
            };
            match by_cluster.last_mut() {
                Some(j) if j.cluster == id.cluster => j.procs.push(group),
                _ => by_cluster.push(ParallelJob {
                    cluster: id.cluster,
                    procs: vec![group],
                }),
            }
        }
        Ok(by_cluster)
    })
    .await;
    let jobs = match jobs {
        Ok(j) => j,
        Err(e) => {
            tracing::error!("dedicated scheduler: reading the queue: {}", e.0.message);
            return;
        }
    };
    let d = &st.shadows.dedicated;
    let Some(name) = d.name.get() else { return };
    let policy = d.policy.get().cloned().unwrap_or_default();
    let claims: Vec<HeldClaim> = d
        .state()
        .claims
        .iter()
        .map(|(id, h)| HeldClaim {
            id: id.clone(),
            slot: h.slot_ad.clone(),
            state: h.use_.clone(),
        })
        .collect();
    if jobs.is_empty() && claims.is_empty() {
        if !d.state().requests.is_empty() {
            d.state().requests.clear();
            st.changed.notify_one();
        }
        return;
    }
    let now = st.clock.now_secs();
    let mut ev = Evaluator::new(classad::EvalOptions::default());
    let plan = schedule(&jobs, &claims, &policy, now, &mut ev);
    // the resource requests for the next negotiation
    let requests: Vec<(ClassAd, u32)> = plan
        .requests
        .iter()
        .filter_map(|r| {
            let job = jobs.iter().find(|j| j.cluster == r.cluster)?;
            let group = job.procs.iter().find(|p| p.proc == r.proc)?;
            Some((node_request_ad(&group.ad, name), r.count))
        })
        .collect();
    let before: u32 = d.state().requests.iter().map(|(_, n)| *n).sum();
    let after: u32 = requests.iter().map(|(_, n)| *n).sum();
    d.state().requests = requests;
    if after > 0 && after != before {
        // advertise the Submitter ad and ask for a cycle
        st.reschedule.notify_one();
    } else if after == 0 && before > 0 {
        st.changed.notify_one();
    }
    for c in &plan.release {
        if let Some(h) = d.state().claims.get(c) {
            let _ = h.tx.send(Cmd::Release);
        }
    }
    // taking backfilled claims back: their ordinary jobs are evicted
    for c in &plan.take_back {
        if let Some(h) = d.state().claims.get_mut(c) {
            if matches!(h.use_, ClaimUse::Backfill { .. }) {
                h.use_ = ClaimUse::Vacating;
            }
        }
        stop_claims(st, std::slice::from_ref(c));
    }
    for start in plan.starts {
        if let Some(job) = jobs.iter().find(|j| j.cluster == start.cluster) {
            if let Err(e) = start_job(st, job, &start).await {
                tracing::error!("starting parallel job {}: {e}", start.cluster);
            }
        }
    }
    backfill(st, &plan.backfill).await;
}

/// Gives each idle claim of `claims` an ordinary idle job that fits its
/// slot, if any (chosen and marked busy in one step, as a claim's next job).
async fn backfill(st: &Shared, claims: &[String]) {
    let d = &st.shadows.dedicated;
    for c in claims {
        let slot_ad = match d.state().claims.get(c) {
            Some(h) if matches!(h.use_, ClaimUse::Idle { .. }) => h.slot_ad.clone(),
            _ => continue,
        };
        let now = st.clock.now_secs();
        let job = with_queue(st, move |q| {
            let owners: Vec<String> = q
                .schedd
                .queue()
                .submitter_counts()
                .into_iter()
                .filter(|(o, n)| n.idle > 0 && !o.is_empty())
                .map(|(o, _)| o)
                .collect();
            for owner in owners {
                let job = q.schedd.next_job_for(&owner, &slot_ad, &q.busy, now);
                if let Some(j) = job.filter(|j| q.busy.insert(*j)) {
                    return Ok(Some(j));
                }
            }
            Ok(None)
        })
        .await
        .ok()
        .flatten();
        let Some(job) = job else {
            // no ordinary job fits: none will fit the other claims either
            // in most pools; try again at the next pass
            return;
        };
        let mut s = d.state();
        match s.claims.get_mut(c) {
            Some(h) => {
                h.use_ = ClaimUse::Backfill {
                    job: (job.cluster, job.proc),
                };
                let _ = h.tx.send(Cmd::Backfill { job });
            }
            None => {
                drop(s);
                st.done_with(job);
            }
        }
    }
}

/// Makes the job's `RemoteSpoolDir`: `$(SPOOL)/parallel/<cluster>`, owned
/// by the owner, mode 0700 (made by the schedd in its own spool, then
/// given to the owner: the path names nothing the user chose).
fn make_spool(root: &std::path::Path, cluster: u32, rights: &Rights) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::create_dir_all(root)?;
    let dir = root.join(cluster.to_string());
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    if let Rights::User(a) = rights {
        std::os::unix::fs::lchown(&dir, Some(a.uid), Some(a.gid))?;
    }
    Ok(dir)
}

/// Removes a job's `RemoteSpoolDir`: its content (the job's) with the
/// owner's rights, then the emptied directory itself (in the schedd's
/// spool) with the schedd's.
async fn remove_spool(st: &Shared, dir: PathBuf, owner: &str) {
    let rights = st
        .shadows
        .as_user
        .rights_of(owner)
        .unwrap_or(Rights::Daemon);
    let d = dir.clone();
    let emptied = st
        .shadows
        .as_user
        .run_async(&rights, move || -> std::io::Result<()> {
            for e in std::fs::read_dir(&d)? {
                let e = e?;
                if e.file_type()?.is_dir() {
                    std::fs::remove_dir_all(e.path())?;
                } else {
                    std::fs::remove_file(e.path())?;
                }
            }
            Ok(())
        })
        .await;
    let result = match emptied {
        Ok(Ok(())) => std::fs::remove_dir(&dir),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(std::io::Error::other(e.to_string())),
    };
    match result {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("removing {}: {e}", dir.display()),
    }
}

/// Starts every node of `job` on its claim.
async fn start_job(st: &Shared, job: &ParallelJob, start: &Start) -> Result<(), String> {
    let d = &st.shadows.dedicated;
    // node k: (claim, slot, startd address, host)
    let placed: Vec<(String, String, String, String)> = {
        let s = d.state();
        start
            .nodes
            .iter()
            .map(|n| {
                let h = s
                    .claims
                    .get(&n.claim)
                    .ok_or_else(|| format!("claim {} is gone", n.claim))?;
                let host = text(&h.slot_ad, "Machine").unwrap_or_else(|| h.slot.clone());
                Ok((n.claim.clone(), h.slot.clone(), h.startd_addr.clone(), host))
            })
            .collect::<Result<_, String>>()?
    };
    let first = job.procs.first().ok_or("a job without procs")?;
    let owner = text(&first.ad, "Owner").unwrap_or_default();
    let rights = st
        .shadows
        .as_user
        .rights_of(&owner)
        .map_err(|e| format!("the owner {owner}: {e}"))?;
    let spool = match d.spool.get() {
        Some(root) => Some(make_spool(root, job.cluster, &rights).map_err(|e| {
            format!(
                "making the job's spool directory in {}: {e}",
                root.display()
            )
        })?),
        None => None,
    };
    let spool_text = spool
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let hosts: Vec<String> = placed.iter().map(|p| p.3.clone()).collect();
    let remote_hosts: Vec<String> = placed.iter().map(|p| p.1.clone()).collect();
    let nodes = start.nodes.len() as u32;
    let ctx = NodeContext {
        nodes,
        spool_dir: &spool_text,
        hosts: &hosts,
    };
    let mut ev = Evaluator::new(classad::EvalOptions::default());
    let policy = ShutdownPolicy::of(&first.ad, &mut ev);
    // the queue: every proc Running, with its hosts
    let cluster = job.cluster;
    let procs: Vec<u32> = job.procs.iter().map(|p| p.proc).collect();
    let slot0 = placed.first().map(|p| p.1.clone()).unwrap_or_default();
    let rh = classad::Value::from(remote_hosts.join(",")).to_string();
    let now = st.clock.now_secs();
    with_schedd(st, move |s| {
        let mut txn = Txn::default();
        for p in &procs {
            let id = JobId::new(cluster, *p);
            txn.extend(s.queue().plan_start(id, &slot0, now)?);
            txn.mutations.push(Mutation::SetAttr {
                id,
                name: "RemoteHosts".into(),
                value: rh.clone(),
            });
            txn.mutations.push(Mutation::SetAttr {
                id,
                name: "CurrentHosts".into(),
                value: nodes.to_string(),
            });
        }
        s.commit(txn, now)
    })
    .await
    .map_err(|e| e.0.message)?;
    let mut s = d.state();
    let mut proc_of = Vec::new();
    let mut sends = Vec::new();
    for (n, (claim, ..)) in start.nodes.iter().zip(&placed) {
        let Some(group) = job.procs.iter().find(|p| p.proc == n.proc) else {
            continue;
        };
        proc_of.push(n.proc);
        s.node_of.insert(claim.clone(), (cluster, n.node));
        if let Some(h) = s.claims.get_mut(claim) {
            h.use_ = ClaimUse::Parallel { cluster };
            sends.push((
                h.tx.clone(),
                n.node,
                n.proc,
                node_ad(&group.ad, n.node, &ctx),
            ));
        }
    }
    s.running.insert(
        cluster,
        RunningJob {
            nodes: start
                .nodes
                .iter()
                .map(|n| RunningNode {
                    node: n.node,
                    claim: n.claim.clone(),
                    exited: false,
                })
                .collect(),
            proc_of,
            policy,
            executing: false,
            node0: None,
            spool,
            owner: owner.clone(),
        },
    );
    drop(s);
    for (tx, node, proc, ad) in sends {
        let _ = tx.send(Cmd::Run {
            job: JobId::new(cluster, proc),
            node,
            ad,
        });
    }
    tracing::info!("parallel job {cluster}: {nodes} node(s) starting");
    Ok(())
}

/// The starter's executing report under `claim_id`. `None`: the claim runs
/// no node (the ordinary route handles it).
pub(crate) async fn node_update(st: &Shared, claim_id: &str) -> Option<Result<(), String>> {
    st.shadows.dedicated.state().node_of.get(claim_id)?;
    if let Some(run) = st.shadows.runs().get_mut(claim_id) {
        run.executing = true;
    }
    Some(node_executing(st, claim_id).await.unwrap_or(Ok(())))
}

/// The node's process started: 001 for the job (first node), 014 for the
/// node. `None`: the claim runs no node of a running job.
async fn node_executing(st: &Shared, claim_id: &str) -> Option<Result<(), String>> {
    let (cluster, node, first, slot, addr) = {
        let mut s = st.shadows.dedicated.state();
        let (cluster, node) = *s.node_of.get(claim_id)?;
        let (slot, addr) = s
            .claims
            .get(claim_id)
            .map(|h| (h.slot.clone(), h.startd_addr.clone()))
            .unwrap_or_default();
        let job = s.running.get_mut(&cluster)?;
        let first = !job.executing;
        job.executing = true;
        (cluster, node, first, slot, addr)
    };
    let now = st.clock.now_secs();
    let r = with_schedd(st, move |s| {
        let id = JobId::new(cluster, 0);
        if first {
            s.executing(id, &addr, &slot, now)?;
        }
        let txn = Txn {
            mutations: Vec::new(),
            events: vec![(
                id,
                UserLogEvent::node_executing(node, &addr, Some(slot.as_str())),
            )],
        };
        s.commit(txn, now)
    })
    .await
    .map_err(|e| e.0.message);
    Some(r)
}

fn exit_status(outcome: &RunOutcome, usage: Rusage) -> Option<ExitStatus> {
    let termination = match outcome {
        RunOutcome::Exited { code } => Termination::Normal {
            return_value: i64::from(*code),
        },
        RunOutcome::Signaled {
            signal,
            core_dumped,
        } => Termination::Signal {
            signal: i64::from(*signal),
            core_file: core_dumped.then(|| "core".to_string()),
        },
        _ => return None,
    };
    Some(ExitStatus {
        termination,
        run_remote: usage,
        run_local: Rusage::default(),
        total_remote: usage,
        total_local: Rusage::default(),
        sent_bytes: 0,
        received_bytes: 0,
        total_sent_bytes: 0,
        total_received_bytes: 0,
        resources: Vec::new(),
    })
}

/// A node's starter reports its exit. `None`: the claim runs no node (the
/// ordinary exit route handles it).
pub(crate) async fn node_exit(st: &Shared, x: &JobExit) -> Option<Result<(), String>> {
    let (cluster, node) = *st.shadows.dedicated.state().node_of.get(&x.claim_id)?;
    let (done, executed, job) = {
        let mut runs = st.shadows.runs();
        let run = runs.get_mut(&x.claim_id)?;
        let executed = x.executed && !run.executing;
        run.executing = true;
        (run.done.take(), executed, run.job)
    };
    if executed {
        if let Some(Err(e)) = node_executing(st, &x.claim_id).await {
            tracing::warn!("parallel job {cluster} node {node}: {e}");
        }
    }
    let usage = Rusage {
        user_secs: x.usage.user_cpu_secs as i64,
        sys_secs: x.usage.sys_cpu_secs as i64,
    };
    // A node that exits is done; one killed by a signal (not by us: the
    // nodes we stop report an eviction) is a lost node, as are the other
    // ends: every node stops and the job runs again from the start.
    let mut result = Ok(());
    match &x.outcome {
        RunOutcome::Exited { .. } => {
            result = node_ended(st, cluster, node, &x.outcome, usage).await;
        }
        RunOutcome::Signaled { signal, .. } => {
            lose(
                st,
                cluster,
                node,
                &format!("its process was killed by signal {signal}"),
            )
            .await;
        }
        RunOutcome::Failed { reason, .. }
        | RunOutcome::Evicted { reason }
        | RunOutcome::Held { reason, .. } => lose(st, cluster, node, reason).await,
    }
    let reusable = matches!(
        x.outcome,
        RunOutcome::Exited { .. } | RunOutcome::Signaled { .. } | RunOutcome::Failed { .. }
    );
    st.shadows.remember_finished(&x.claim_id, job);
    if let Some(tx) = done {
        let _ = tx.send(RunResult::Reported { reusable });
    }
    st.changed.notify_one();
    Some(result)
}

/// Node `node` exited by itself: 015, and the job ends if the shutdown
/// policy says so (the other nodes are killed).
async fn node_ended(
    st: &Shared,
    cluster: u32,
    node: u32,
    outcome: &RunOutcome,
    usage: Rusage,
) -> Result<(), String> {
    let d = &st.shadows.dedicated;
    let ended = {
        let mut s = d.state();
        let Some(job) = s.running.get_mut(&cluster) else {
            // the job ended already (this node was being stopped)
            return Ok(());
        };
        if let Some(n) = job.nodes.iter_mut().find(|n| n.node == node) {
            n.exited = true;
        }
        if node == 0 {
            job.node0 = Some(outcome.clone());
        }
        match node_exited(&job.nodes, node, job.policy) {
            None => None,
            Some(kill) => {
                let mut procs = job.proc_of.clone();
                procs.sort_unstable();
                procs.dedup();
                let node0 = job.node0.clone().unwrap_or_else(|| outcome.clone());
                let spool = job.spool.take();
                let owner = std::mem::take(&mut job.owner);
                s.running.remove(&cluster);
                Some((kill, procs, node0, spool, owner))
            }
        }
    };
    let Some((kill, procs, node0, spool, owner)) = ended else {
        return log_node_terminated(st, cluster, node, outcome, usage).await;
    };
    log_node_terminated(st, cluster, node, outcome, usage).await?;
    stop_claims(st, &kill);
    let exit = match node0 {
        RunOutcome::Signaled {
            signal,
            core_dumped,
        } => ExitInfo {
            signal: Some(i64::from(signal)),
            core_file: core_dumped.then(|| "core".to_string()),
            remote_usage: usage,
            ..ExitInfo::default()
        },
        RunOutcome::Exited { code } => ExitInfo {
            exit_code: Some(i64::from(code)),
            remote_usage: usage,
            ..ExitInfo::default()
        },
        _ => ExitInfo::default(),
    };
    let now = st.clock.now_secs();
    with_schedd(st, move |s| {
        for p in procs {
            s.job_exited(JobId::new(cluster, p), &exit, now)?;
        }
        Ok(())
    })
    .await
    .map_err(|e| e.0.message)?;
    tracing::info!("parallel job {cluster} ended");
    if let Some(dir) = spool {
        remove_spool(st, dir, &owner).await;
    }
    d.wake.notify_one();
    Ok(())
}

async fn log_node_terminated(
    st: &Shared,
    cluster: u32,
    node: u32,
    outcome: &RunOutcome,
    usage: Rusage,
) -> Result<(), String> {
    let Some(status) = exit_status(outcome, usage) else {
        return Ok(());
    };
    let now = st.clock.now_secs();
    with_schedd(st, move |s| {
        let txn = Txn {
            mutations: Vec::new(),
            events: vec![(
                JobId::new(cluster, 0),
                UserLogEvent::node_terminated(node, status),
            )],
        };
        s.commit(txn, now)
    })
    .await
    .map_err(|e| e.0.message)
}

/// Asks the runs under `claims` to stop.
fn stop_claims(st: &Shared, claims: &[String]) {
    let runs = st.shadows.runs();
    for c in claims {
        if let Some(r) = runs.get(c) {
            r.vacate.notify_one();
        }
    }
}

/// Node `node` of `cluster` was lost (or stopped by anything but its own
/// exit): every node stops and the job goes back to Idle.
async fn lose(st: &Shared, cluster: u32, node: u32, reason: &str) {
    let d = &st.shadows.dedicated;
    let (kill, procs, spool, owner) = {
        let mut s = d.state();
        let Some(job) = s.running.remove(&cluster) else {
            return;
        };
        let loss = node_lost(&job.nodes, node);
        let mut procs = job.proc_of.clone();
        procs.sort_unstable();
        procs.dedup();
        (loss.kill, procs, job.spool, job.owner)
    };
    tracing::warn!("parallel job {cluster}: node {node} lost ({reason}); every node stops, the job goes back to idle");
    stop_claims(st, &kill);
    let now = st.clock.now_secs();
    let reason = format!("node {node} of the parallel job was lost: {reason}");
    let left = with_schedd(st, move |s| {
        for p in &procs {
            let id = JobId::new(cluster, *p);
            let end = RunEnd::Evicted {
                reason: reason.clone(),
            };
            if let Err(e) = s.run_ended(id, &end, Rusage::default(), now) {
                tracing::debug!("parallel job {id}: {e}");
            }
        }
        // the spool directory goes with the job
        Ok(s.job_ad(JobId::new(cluster, 0)).is_some())
    })
    .await;
    if let (Ok(false), Some(dir)) = (left, spool) {
        remove_spool(st, dir, &owner).await;
    }
    d.wake.notify_one();
}
