//! The dedicated scheduler's pure core: which held claims go to which
//! parallel job, in what order, when backfilled claims are taken back and
//! which claims are given up.
//!
//! The schedd holds claims on dedicated slots (slots advertising
//! `DedicatedScheduler = "DedicatedScheduler@<schedd>"`) and calls
//! [`schedule`] once a pass with the idle parallel jobs in queue order,
//! the claims it holds and the time. The plan it gets back says:
//!
//! - **starts**: jobs all of whose nodes have an idle claim now (all or
//!   nothing), with the claim of every node;
//! - **take back**: backfilled claims (running an ordinary job) whose
//!   vanilla job must be evicted so that a parallel job can start on them
//!   at a later pass;
//! - **requests**: per proc, how many more nodes to ask the negotiator for
//!   (submitter `DedicatedScheduler`, the ad from [`node_request_ad`]);
//! - **release**: idle claims no job needs that have been unused for
//!   `UNUSED_CLAIM_TIMEOUT` seconds (0 = kept forever);
//! - **backfill**: idle claims that may run an ordinary job meanwhile;
//! - **waiting**: why each job that did not start waits (for
//!   `skua q -better-analyze`).
//!
//! FIFO (`DEDICATED_SCHEDULER_USE_FIFO`, HTCondor's default): the first job
//! that cannot start blocks the jobs behind it: the claims it matches are
//! kept for it (they may run backfill), later jobs never start ahead of
//! it, and only it asks the negotiator for more machines. Without FIFO
//! (best fit), later jobs start on whatever the blocked ones cannot use.
//!
//! [`node_lost`] and [`node_exited`] decide what the loss or exit of one
//! node means for the whole job (whole-job restart; the shutdown policy).
//!
//! No clock, no I/O: time is an argument.

use classad::{parse_expr, symmetric_match, ClassAd, Evaluator, Value};

/// What a held dedicated claim is doing now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimUse {
    /// Claimed and idle since `since` (seconds since the epoch).
    Idle { since: i64 },
    /// Running an ordinary job (backfill): `cluster.proc`.
    Backfill { job: (u32, u32) },
    /// Running a node of parallel job `cluster`.
    Parallel { cluster: u32 },
    /// Matched by the negotiator; the claim is being requested at the startd.
    Acquiring,
    /// Its backfill job is being evicted (taken back); idle soon.
    Vacating,
}

/// A claim the dedicated scheduler holds.
#[derive(Clone, Debug)]
pub struct HeldClaim {
    /// The claim id.
    pub id: String,
    /// The slot's ad (as matched): the node's Requirements are evaluated
    /// against it.
    pub slot: ClassAd,
    /// What the claim is doing.
    pub state: ClaimUse,
}

/// One proc of a parallel job: `count` nodes with the proc's ad.
#[derive(Clone, Debug)]
pub struct NodeGroup {
    /// The proc id.
    pub proc: u32,
    /// The proc's job ad (its Requirements select slots).
    pub ad: ClassAd,
    /// Its machine count (`MaxHosts`).
    pub count: u32,
}

/// An idle parallel job (a cluster with `JobUniverse = 11`), its procs in
/// proc order; nodes are numbered 0..N-1 across them.
#[derive(Clone, Debug)]
pub struct ParallelJob {
    /// The cluster id.
    pub cluster: u32,
    /// Its procs, in proc order.
    pub procs: Vec<NodeGroup>,
}

impl ParallelJob {
    /// Its node count.
    pub fn nodes(&self) -> u32 {
        self.procs.iter().map(|p| p.count).sum()
    }
}

/// The dedicated scheduler's settings.
#[derive(Clone, Debug)]
pub struct DedicatedPolicy {
    /// `DEDICATED_SCHEDULER_USE_FIFO` (default true).
    pub use_fifo: bool,
    /// `UNUSED_CLAIM_TIMEOUT` in seconds (default 600; 0 = forever).
    pub unused_claim_timeout: i64,
}

impl Default for DedicatedPolicy {
    fn default() -> DedicatedPolicy {
        DedicatedPolicy {
            use_fifo: true,
            unused_claim_timeout: 600,
        }
    }
}

/// A dedicated scheduler knob with a bad value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{knob}: `{value}` is not {expected}")]
pub struct DedicatedKnobError {
    /// The knob.
    pub knob: &'static str,
    /// Its value.
    pub value: String,
    /// What it should be.
    pub expected: &'static str,
}

impl DedicatedPolicy {
    /// From `DEDICATED_SCHEDULER_USE_FIFO` and `UNUSED_CLAIM_TIMEOUT`
    /// (expanded values; `None` when undefined: HTCondor's defaults).
    pub fn from_knobs(
        knob: impl Fn(&str) -> Option<String>,
    ) -> Result<DedicatedPolicy, DedicatedKnobError> {
        let mut p = DedicatedPolicy::default();
        if let Some(v) = knob("DEDICATED_SCHEDULER_USE_FIFO") {
            p.use_fifo = match v.trim().to_ascii_lowercase().as_str() {
                "true" | "t" | "yes" | "1" => true,
                "false" | "f" | "no" | "0" => false,
                _ => {
                    return Err(DedicatedKnobError {
                        knob: "DEDICATED_SCHEDULER_USE_FIFO",
                        value: v,
                        expected: "a boolean",
                    })
                }
            };
        }
        if let Some(v) = knob("UNUSED_CLAIM_TIMEOUT") {
            p.unused_claim_timeout =
                v.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or(DedicatedKnobError {
                        knob: "UNUSED_CLAIM_TIMEOUT",
                        value: v,
                        expected: "a number of seconds (0 = keep claims forever)",
                    })?;
        }
        Ok(p)
    }
}

/// Node `node` (of proc `proc`) runs on claim `claim`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAssignment {
    /// The node number, 0..N-1 across the job's procs.
    pub node: u32,
    /// The proc the node belongs to.
    pub proc: u32,
    /// The claim id.
    pub claim: String,
}

/// A job to start now, every node with its claim, in node order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    /// The cluster id.
    pub cluster: u32,
    /// Its nodes, node order.
    pub nodes: Vec<NodeAssignment>,
}

/// Ask the negotiator for `count` more nodes for a proc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRequest {
    /// The cluster id.
    pub cluster: u32,
    /// The proc id.
    pub proc: u32,
    /// Nodes wanted beyond the claims held or being acquired.
    pub count: u32,
}

/// Why a parallel job did not start at this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitReason {
    /// Its nodes are claimed but some still run backfill jobs being
    /// evicted.
    TakingBack {
        /// Claims being vacated for it.
        vacating: u32,
    },
    /// Not enough claims match; more were asked for (or are being acquired).
    AcquiringClaims {
        /// Nodes with a claim ready (idle or backfilled).
        matched: u32,
        /// Its node count.
        needed: u32,
        /// Matched claims still being acquired.
        acquiring: u32,
    },
    /// FIFO: an earlier parallel job waits for machines; this one waits
    /// behind it.
    BehindFifoHead {
        /// The cluster at the head.
        head: u32,
    },
}

impl WaitReason {
    /// A sentence for `skua q -better-analyze`.
    pub fn describe(&self) -> String {
        match self {
            WaitReason::TakingBack { vacating } => format!(
                "all nodes have dedicated claims; waiting for {vacating} backfill job(s) to be evicted from them"
            ),
            WaitReason::AcquiringClaims {
                matched,
                needed,
                acquiring,
            } => format!(
                "{matched} of {needed} nodes have a dedicated claim ({acquiring} more being acquired); asking the negotiator for dedicated machines"
            ),
            WaitReason::BehindFifoHead { head } => format!(
                "waiting in FIFO order behind parallel job {head}, which is waiting for machines (DEDICATED_SCHEDULER_USE_FIFO)"
            ),
        }
    }

    /// The text stored in the job ad (`DedicatedWaitReason`).
    pub fn code(&self) -> &'static str {
        match self {
            WaitReason::TakingBack { .. } => "TakingBack",
            WaitReason::AcquiringClaims { .. } => "AcquiringClaims",
            WaitReason::BehindFifoHead { .. } => "BehindFifoHead",
        }
    }
}

/// The decisions of one pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DedicatedPlan {
    /// Jobs to start now.
    pub starts: Vec<Start>,
    /// Backfilled claims whose ordinary job is to be evicted.
    pub take_back: Vec<String>,
    /// More nodes to ask the negotiator for.
    pub requests: Vec<NodeRequest>,
    /// Idle claims to release (unused for `UNUSED_CLAIM_TIMEOUT`).
    pub release: Vec<String>,
    /// Idle claims that may run an ordinary job meanwhile.
    pub backfill: Vec<String>,
    /// Jobs that did not start, with why.
    pub waiting: Vec<(u32, WaitReason)>,
}

/// The per-node request ad HTCondor's dedicated scheduler negotiates with:
/// the proc's ad with `MinHosts = MaxHosts = 1`, `CurrentHosts = 0` and
/// Requirements `(TARGET.DedicatedScheduler == "<ds>") &&
/// (TARGET.RemoteOwner =!= "<ds>") && (<original>)`.
pub fn node_request_ad(proc_ad: &ClassAd, ds: &str) -> ClassAd {
    let mut ad = proc_ad.flatten();
    ad.insert_value("MinHosts", 1i64);
    ad.insert_value("MaxHosts", 1i64);
    ad.insert_value("CurrentHosts", 0i64);
    let orig = ad
        .lookup("Requirements")
        .map(|e| e.to_string())
        .unwrap_or_else(|| "true".to_string());
    let quoted = Value::from(ds.to_string()).to_string();
    let text = format!(
        "(TARGET.DedicatedScheduler == {quoted}) && (TARGET.RemoteOwner =!= {quoted}) && ({orig})"
    );
    if let Ok(e) = parse_expr(&text) {
        ad.insert("Requirements", e);
    }
    ad
}

/// The slot is usable for a node of a job with `ad` (both Requirements).
fn fits(ev: &mut Evaluator, ad: &ClassAd, slot: &ClassAd) -> bool {
    symmetric_match(ev, ad, slot).matched
}

/// Rank of a claim for assignment: idle claims first, then backfilled
/// ones (whose job must be evicted), then those being vacated.
fn preference(state: &ClaimUse) -> Option<u8> {
    match state {
        ClaimUse::Idle { .. } => Some(0),
        ClaimUse::Vacating => Some(1),
        ClaimUse::Backfill { .. } => Some(2),
        ClaimUse::Parallel { .. } | ClaimUse::Acquiring => None,
    }
}

/// A maximum matching of the job's nodes to usable claims (Kuhn's
/// augmenting paths over the candidates each proc accepts, claims tried
/// in preference order). Returns, per node in node order, the claim index.
fn match_nodes(job: &ParallelJob, accepts: &[Vec<usize>], taken: &[bool]) -> Vec<Option<usize>> {
    let nodes: Vec<usize> = job
        .procs
        .iter()
        .enumerate()
        .flat_map(|(i, p)| std::iter::repeat_n(i, p.count as usize))
        .collect();
    let mut owner: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let mut of_node: Vec<Option<usize>> = vec![None; nodes.len()];
    for n in 0..nodes.len() {
        let mut seen = std::collections::HashSet::new();
        augment(
            n,
            &nodes,
            accepts,
            taken,
            &mut owner,
            &mut of_node,
            &mut seen,
        );
    }
    of_node
}

fn augment(
    n: usize,
    nodes: &[usize],
    accepts: &[Vec<usize>],
    taken: &[bool],
    owner: &mut std::collections::HashMap<usize, usize>,
    of_node: &mut Vec<Option<usize>>,
    seen: &mut std::collections::HashSet<usize>,
) -> bool {
    for &c in &accepts[nodes[n]] {
        if taken[c] || !seen.insert(c) {
            continue;
        }
        let free = match owner.get(&c) {
            None => true,
            Some(&other) => augment(other, nodes, accepts, taken, owner, of_node, seen),
        };
        if free {
            owner.insert(c, n);
            of_node[n] = Some(c);
            return true;
        }
    }
    false
}

/// One scheduling pass. `jobs`: the idle parallel jobs in queue order
/// (cluster order); `claims`: every claim the dedicated scheduler holds.
pub fn schedule(
    jobs: &[ParallelJob],
    claims: &[HeldClaim],
    policy: &DedicatedPolicy,
    now: i64,
    ev: &mut Evaluator,
) -> DedicatedPlan {
    let mut plan = DedicatedPlan::default();
    // Claims spoken for at this pass (started on, being assembled for a
    // job, kept for the FIFO head); `reserved`: kept for a job that waits
    // for more machines, free for backfill meanwhile.
    let mut taken = vec![false; claims.len()];
    let mut reserved = vec![false; claims.len()];
    // Usable claims, in preference order.
    let mut usable: Vec<usize> = (0..claims.len())
        .filter(|&i| preference(&claims[i].state).is_some())
        .collect();
    usable.sort_by_key(|&i| preference(&claims[i].state));
    let acquiring: Vec<usize> = (0..claims.len())
        .filter(|&i| claims[i].state == ClaimUse::Acquiring)
        .collect();
    let mut acquiring_used = vec![false; claims.len()];
    let mut head: Option<u32> = None;

    for job in jobs {
        if let (true, Some(h)) = (policy.use_fifo, head) {
            plan.waiting
                .push((job.cluster, WaitReason::BehindFifoHead { head: h }));
            continue;
        }
        let accepts: Vec<Vec<usize>> = job
            .procs
            .iter()
            .map(|p| {
                usable
                    .iter()
                    .copied()
                    .filter(|&c| !taken[c] && fits(ev, &p.ad, &claims[c].slot))
                    .collect()
            })
            .collect();
        let assignment = match_nodes(job, &accepts, &taken);
        let needed = job.nodes();
        let matched = assignment.iter().filter(|a| a.is_some()).count() as u32;
        if matched == needed {
            let all_idle = assignment
                .iter()
                .flatten()
                .all(|&c| matches!(claims[c].state, ClaimUse::Idle { .. }));
            if all_idle {
                let mut nodes = Vec::with_capacity(needed as usize);
                let mut node = 0u32;
                for p in &job.procs {
                    for _ in 0..p.count {
                        if let Some(c) = assignment[node as usize] {
                            taken[c] = true;
                            nodes.push(NodeAssignment {
                                node,
                                proc: p.proc,
                                claim: claims[c].id.clone(),
                            });
                        }
                        node += 1;
                    }
                }
                plan.starts.push(Start {
                    cluster: job.cluster,
                    nodes,
                });
                continue;
            }
            // Every node has a claim, some busy with backfill: take those
            // back; the job starts at a later pass. Its idle claims get no
            // new backfill job meanwhile.
            let mut vacating = 0;
            for &c in assignment.iter().flatten() {
                taken[c] = true;
                match claims[c].state {
                    ClaimUse::Backfill { .. } => {
                        plan.take_back.push(claims[c].id.clone());
                        vacating += 1;
                    }
                    ClaimUse::Vacating => vacating += 1,
                    _ => {}
                }
            }
            plan.waiting
                .push((job.cluster, WaitReason::TakingBack { vacating }));
            if policy.use_fifo {
                head = Some(job.cluster);
            }
            continue;
        }
        // Not enough claims: under FIFO keep the matched ones for the job
        // (they may run backfill meanwhile); ask for the rest, minus claims
        // being acquired that would fit.
        let mut node = 0usize;
        let mut acquiring_matched = 0u32;
        for p in &job.procs {
            let mut missing = 0u32;
            for _ in 0..p.count {
                match assignment[node] {
                    // FIFO keeps them for the head; best fit lets later
                    // jobs take them.
                    Some(c) if policy.use_fifo => {
                        taken[c] = true;
                        reserved[c] = true;
                    }
                    Some(_) => {}
                    None => missing += 1,
                }
                node += 1;
            }
            for &a in &acquiring {
                if missing == 0 {
                    break;
                }
                if !acquiring_used[a] && fits(ev, &p.ad, &claims[a].slot) {
                    acquiring_used[a] = true;
                    acquiring_matched += 1;
                    missing -= 1;
                }
            }
            if missing > 0 {
                plan.requests.push(NodeRequest {
                    cluster: job.cluster,
                    proc: p.proc,
                    count: missing,
                });
            }
        }
        plan.waiting.push((
            job.cluster,
            WaitReason::AcquiringClaims {
                matched,
                needed,
                acquiring: acquiring_matched,
            },
        ));
        if policy.use_fifo {
            head = Some(job.cluster);
        }
    }

    for (i, c) in claims.iter().enumerate() {
        if taken[i] && !reserved[i] {
            continue;
        }
        if let ClaimUse::Idle { since } = c.state {
            let expired = policy.unused_claim_timeout > 0
                && now.saturating_sub(since) >= policy.unused_claim_timeout;
            if expired && !reserved[i] {
                plan.release.push(c.id.clone());
            } else {
                plan.backfill.push(c.id.clone());
            }
        }
    }
    plan
}

/// A running parallel job's nodes: node number and claim id.
#[derive(Clone, Debug)]
pub struct RunningNode {
    /// The node number.
    pub node: u32,
    /// Its claim id.
    pub claim: String,
    /// The node's process has exited (by itself).
    pub exited: bool,
}

/// What the loss of one node (host crash, node process killed, claim
/// lost) means: every other node is stopped, the job goes back to Idle
/// (whole-job restart), and the claims that still work stay held (idle,
/// for the next pass), the lost one is dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLoss {
    /// Claims whose node is to be killed.
    pub kill: Vec<String>,
    /// Claims kept (idle once their node is gone).
    pub keep: Vec<String>,
    /// The lost claim, to be forgotten.
    pub drop: String,
}

/// The whole-job restart after node `lost` was lost.
pub fn node_lost(nodes: &[RunningNode], lost: u32) -> NodeLoss {
    let mut out = NodeLoss {
        kill: Vec::new(),
        keep: Vec::new(),
        drop: String::new(),
    };
    for n in nodes {
        if n.node == lost {
            out.drop = n.claim.clone();
            continue;
        }
        if !n.exited {
            out.kill.push(n.claim.clone());
        }
        out.keep.push(n.claim.clone());
    }
    out
}

/// `+ParallelShutdownPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownPolicy {
    /// HTCondor's default: the job ends when node 0 exits; the others are
    /// killed.
    WaitForNode0,
    /// `"WAIT_FOR_ALL"`: the job ends when every node has exited.
    WaitForAll,
}

impl ShutdownPolicy {
    /// From the job ad's `ParallelShutdownPolicy` (case-insensitive;
    /// anything but `WAIT_FOR_ALL` is the default, as in HTCondor).
    pub fn of(ad: &ClassAd, ev: &mut Evaluator) -> ShutdownPolicy {
        match ev.eval_attr("ParallelShutdownPolicy", ad, None).as_string() {
            Some(s) if s.eq_ignore_ascii_case("WAIT_FOR_ALL") => ShutdownPolicy::WaitForAll,
            _ => ShutdownPolicy::WaitForNode0,
        }
    }
}

/// After node `exited` finished by itself (and is marked `exited` in
/// `nodes`): `None` while the job goes on, else the claims of nodes still
/// running, to kill as the job ends. The job's exit code is node 0's.
pub fn node_exited(
    nodes: &[RunningNode],
    exited: u32,
    policy: ShutdownPolicy,
) -> Option<Vec<String>> {
    let ends = match policy {
        ShutdownPolicy::WaitForNode0 => exited == 0 || nodes.iter().all(|n| n.exited),
        ShutdownPolicy::WaitForAll => nodes.iter().all(|n| n.exited),
    };
    ends.then(|| {
        nodes
            .iter()
            .filter(|n| !n.exited)
            .map(|n| n.claim.clone())
            .collect()
    })
}

/// Slots of `slots` (collector ads) that could host a node of `proc_ad`
/// for dedicated scheduler `ds`: `(dedicated slots, of which match)`.
pub fn dedicated_matches(
    proc_ad: &ClassAd,
    slots: &[ClassAd],
    ds: &str,
    ev: &mut Evaluator,
) -> (usize, usize) {
    let mut dedicated = 0;
    let mut matching = 0;
    for s in slots {
        let is_ours = ev
            .eval_attr("DedicatedScheduler", s, None)
            .as_string()
            .is_some_and(|v| v == ds);
        if !is_ours {
            continue;
        }
        dedicated += 1;
        // Whoever holds the slot now, it is a machine that could serve
        // the job later.
        if fits(ev, proc_ad, s) {
            matching += 1;
        }
    }
    (dedicated, matching)
}

/// Why a parallel job waits, as `skua q -better-analyze` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParallelAnalysis {
    /// The job's dedicated scheduler (`Scheduler`), if it names one.
    pub scheduler: Option<String>,
    /// The proc's node count (`MaxHosts`).
    pub nodes: u32,
    /// Slots advertising this dedicated scheduler.
    pub dedicated: usize,
    /// Of those, slots whose Requirements and the job's both hold.
    pub matching: usize,
    /// An earlier idle parallel job (the FIFO head this one waits behind).
    pub fifo_head: Option<u32>,
}

impl ParallelAnalysis {
    /// The explanation, one sentence a line.
    pub fn describe(&self) -> Vec<String> {
        let Some(ds) = &self.scheduler else {
            return vec![
                "The job names no dedicated scheduler (Scheduler): no machine is claimed for it."
                    .to_string(),
            ];
        };
        let mut out = vec![
            format!("Parallel job of {} node(s), scheduled by {ds}.", self.nodes),
            format!(
                "{} slot(s) advertise this dedicated scheduler; {} of them match the job.",
                self.dedicated, self.matching
            ),
        ];
        if (self.matching as u64) < u64::from(self.nodes) {
            out.push(format!(
                "Not enough dedicated machines match: the job needs {} and only {} match; it cannot start until more do.",
                self.nodes, self.matching
            ));
        } else if let Some(head) = self.fifo_head {
            out.push(format!(
                "Enough dedicated machines match; the job waits in FIFO order behind parallel job {head}, which is waiting for machines (DEDICATED_SCHEDULER_USE_FIFO)."
            ));
        } else {
            out.push(format!(
                "Enough dedicated machines match; the job starts once all {} nodes are claimed at once (claims are being acquired, or the machines are busy).",
                self.nodes
            ));
        }
        out
    }
}

/// The analysis of one proc of a parallel job against the pool's slot ads;
/// `earlier_idle`: clusters of idle parallel jobs of the same scheduler
/// ahead of it in the queue.
pub fn analyze_parallel(
    job: &ClassAd,
    slots: &[ClassAd],
    earlier_idle: &[u32],
    ev: &mut Evaluator,
) -> ParallelAnalysis {
    let scheduler = ev.eval_attr("Scheduler", job, None).as_string();
    let nodes = ev
        .eval_attr("MaxHosts", job, None)
        .as_int()
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(1);
    let (dedicated, matching) = match &scheduler {
        Some(ds) => dedicated_matches(job, slots, ds, ev),
        None => (0, 0),
    };
    ParallelAnalysis {
        scheduler,
        nodes,
        dedicated,
        matching,
        fifo_head: earlier_idle.iter().min().copied(),
    }
}

/// HTCondor's placeholder for `$(Node)` in a parallel job's ad.
pub const NODE_PLACEHOLDER: &str = "#pArAlLeLnOdE#";

/// What node `node` of a parallel job is told about the whole job.
#[derive(Clone, Debug)]
pub struct NodeContext<'a> {
    /// The job's node count (`CurrentHosts`).
    pub nodes: u32,
    /// The job's directory on the submit host (`RemoteSpoolDir`).
    pub spool_dir: &'a str,
    /// The execute hosts' names in node order (`ParallelHosts`).
    pub hosts: &'a [String],
}

/// The ad node `node` starts with: the proc's ad with [`NODE_PLACEHOLDER`]
/// replaced by the node number everywhere, plus `ParallelNode`,
/// `CurrentHosts`, `RemoteSpoolDir` and `ParallelHosts`. An attribute
/// that no longer parses once replaced is left as it was.
pub fn node_ad(proc_ad: &ClassAd, node: u32, ctx: &NodeContext<'_>) -> ClassAd {
    let mut ad = proc_ad.flatten();
    let number = node.to_string();
    let replaced: Vec<(String, classad::Expr)> = ad
        .iter()
        .filter_map(|(name, e)| {
            let text = e.to_string();
            if !text.contains(NODE_PLACEHOLDER) {
                return None;
            }
            parse_expr(&text.replace(NODE_PLACEHOLDER, &number))
                .ok()
                .map(|e| (name.as_str().to_string(), e))
        })
        .collect();
    for (name, e) in replaced {
        ad.insert(name.as_str(), e);
    }
    ad.insert_value("ParallelNode", i64::from(node));
    ad.insert_value("CurrentHosts", i64::from(ctx.nodes));
    ad.insert_value("RemoteSpoolDir", ctx.spool_dir.to_string());
    ad.insert_value("ParallelHosts", ctx.hosts.join(","));
    ad
}

#[cfg(test)]
mod tests;
