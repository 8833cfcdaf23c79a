//! One negotiation cycle: fair share (the pie), the candidate order, and
//! preemption.
//!
//! 1. The pool's size is the total `SlotWeight` (default `Cpus`) of every
//!    slot ad; what each user has in use is counted from the claimed slot
//!    ads (`RemoteUser`).
//! 2. Submitters are served in order of effective priority (lower first).
//!    In each *pie spin* every submitter still wanting slots gets a
//!    *slice*: its share of the pool, inversely proportional to its
//!    effective priority among the submitters still negotiating, less what
//!    it already has in use and was given this cycle. Spins repeat with
//!    the leftover while any submitter gets something. A last round then
//!    hands out idle slots nobody could take within their slice (fractions
//!    of a slot), one job per submitter in turn, without preempting.
//! 3. Within a submitter, requests (autoclusters) come in the schedd's
//!    order, every job of one before the next.
//! 4. For a request every slot is examined once (the list of candidates
//!    is kept for the request's other jobs): both Requirements must hold
//!    (and a partitionable slot must fit the job's requests). An idle
//!    (Unclaimed) slot is a candidate; a Claimed/Busy slot is one by *rank
//!    preemption* when its Rank of the job is higher than its CurrentRank,
//!    or by *priority preemption* when it runs a job of another user whose
//!    effective priority is worse than the submitter's, its Rank of the
//!    job is not lower than CurrentRank, and `PREEMPTION_REQUIREMENTS`
//!    (slot as MY, job as TARGET) is true. Candidates are sorted by
//!    `NEGOTIATOR_PRE_JOB_RANK`, the job's Rank, `NEGOTIATOR_POST_JOB_RANK`,
//!    the kind of match (idle before rank preemption before priority
//!    preemption) and `PREEMPTION_RANK`, higher first; the best is given
//!    to the job and to no one else in this cycle.
//!
//! The ephemeral attributes `RemoteUserPrio` and `RemoteUserResourcesInUse`
//! are inserted in claimed slot ads, `SubmitterUserPrio`, `SubmittorPrio`
//! and `SubmitterUserResourcesInUse` in the request's job ad, all with
//! their values at the start of the cycle.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use classad::{parse_expr, rank, symmetric_match, ClassAd, Evaluator, Expr, Value};

use skua_types::{Activity, SlotState as State};

use crate::accountant::InUse;

/// One autocluster of a submitter's idle jobs.
#[derive(Clone, Debug)]
pub struct Request {
    /// The schedd's autocluster id.
    pub autocluster: u64,
    /// A representative job ad.
    pub ad: ClassAd,
    /// How many idle jobs it stands for.
    pub count: u64,
}

/// A submitter (`user@uiddomain`) and its requests, in the schedd's order.
#[derive(Clone, Debug)]
pub struct Submitter {
    /// The submitter's name.
    pub name: String,
    /// Its effective user priority: lower is better (served first).
    pub priority: f64,
    /// Its requests, the one to serve first first.
    pub requests: Vec<Request>,
}

/// The pool administrator's negotiation policy (the negotiator's knobs).
#[derive(Clone, Debug)]
pub struct Policy {
    /// `NEGOTIATOR_CONSIDER_PREEMPTION`: claimed slots are candidates.
    pub consider_preemption: bool,
    /// `PREEMPTION_REQUIREMENTS` (slot MY, job TARGET).
    pub preemption_requirements: Expr,
    /// `PREEMPTION_RANK` (slot MY, job TARGET): the preferred victim.
    pub preemption_rank: Expr,
    /// `NEGOTIATOR_PRE_JOB_RANK` (slot MY, job TARGET).
    pub pre_job_rank: Option<Expr>,
    /// `NEGOTIATOR_POST_JOB_RANK` (slot MY, job TARGET).
    pub post_job_rank: Option<Expr>,
    /// `NEGOTIATOR_USE_SLOT_WEIGHTS`: a slot counts by its weight (else 1).
    pub use_slot_weights: bool,
    /// `SLOT_WEIGHT`, for slot ads that do not advertise `SlotWeight`.
    pub slot_weight: Expr,
}

/// HTCondor's default `NEGOTIATOR_PRE_JOB_RANK`.
pub const DEFAULT_PRE_JOB_RANK: &str =
    "(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory";
/// HTCondor's default `NEGOTIATOR_POST_JOB_RANK`.
pub const DEFAULT_POST_JOB_RANK: &str = "(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - 1.0e10*(Offline=?=True))";
/// HTCondor's default `PREEMPTION_RANK`.
pub const DEFAULT_PREEMPTION_RANK: &str =
    "(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)";

/// A policy knob that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{knob} = {text:?} is not a valid expression: {message}")]
pub struct PolicyError {
    /// The knob.
    pub knob: String,
    /// Its value.
    pub text: String,
    /// The parser's message.
    pub message: String,
}

fn constant(text: &str) -> Expr {
    // The defaults are fixed texts that parse.
    parse_expr(text).unwrap_or(Expr::Lit(Value::Undefined))
}

impl Default for Policy {
    /// HTCondor's defaults: preemption considered, but
    /// `PREEMPTION_REQUIREMENTS = False` (no priority preemption; rank
    /// preemption needs none).
    fn default() -> Self {
        Policy {
            consider_preemption: true,
            preemption_requirements: Expr::Lit(Value::Bool(false)),
            preemption_rank: constant(DEFAULT_PREEMPTION_RANK),
            pre_job_rank: Some(constant(DEFAULT_PRE_JOB_RANK)),
            post_job_rank: Some(constant(DEFAULT_POST_JOB_RANK)),
            use_slot_weights: true,
            slot_weight: constant("Cpus"),
        }
    }
}

impl Policy {
    /// The policy from knob values (`knob(name)` gives a knob's text, `None`
    /// when unset): unset knobs keep HTCondor's defaults; an empty
    /// `NEGOTIATOR_PRE_JOB_RANK`/`POST_JOB_RANK` means none.
    pub fn from_knobs(mut knob: impl FnMut(&str) -> Option<String>) -> Result<Policy, PolicyError> {
        let mut p = Policy::default();
        let parse = |name: &str, text: &str| {
            parse_expr(text).map_err(|e| PolicyError {
                knob: name.into(),
                text: text.into(),
                message: e.to_string(),
            })
        };
        let boolean = |name: &str, text: &str| match text.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Ok(true),
            "false" | "no" | "0" => Ok(false),
            _ => Err(PolicyError {
                knob: name.into(),
                text: text.into(),
                message: "expected True or False".into(),
            }),
        };
        if let Some(t) = knob("NEGOTIATOR_CONSIDER_PREEMPTION") {
            p.consider_preemption = boolean("NEGOTIATOR_CONSIDER_PREEMPTION", &t)?;
        }
        if let Some(t) = knob("NEGOTIATOR_USE_SLOT_WEIGHTS") {
            p.use_slot_weights = boolean("NEGOTIATOR_USE_SLOT_WEIGHTS", &t)?;
        }
        if let Some(t) = knob("PREEMPTION_REQUIREMENTS") {
            p.preemption_requirements = parse("PREEMPTION_REQUIREMENTS", &t)?;
        }
        if let Some(t) = knob("PREEMPTION_RANK") {
            p.preemption_rank = parse("PREEMPTION_RANK", &t)?;
        }
        if let Some(t) = knob("SLOT_WEIGHT") {
            p.slot_weight = parse("SLOT_WEIGHT", &t)?;
        }
        for (name, slot) in [
            ("NEGOTIATOR_PRE_JOB_RANK", &mut p.pre_job_rank),
            ("NEGOTIATOR_POST_JOB_RANK", &mut p.post_job_rank),
        ] {
            if let Some(t) = knob(name) {
                *slot = if t.trim().is_empty() {
                    None
                } else {
                    Some(parse(name, &t)?)
                };
            }
        }
        Ok(p)
    }
}

/// What a cycle works on.
#[derive(Clone, Debug, Default)]
pub struct CycleInput {
    /// Every slot ad the collector holds.
    pub slots: Vec<ClassAd>,
    /// The submitters with idle jobs.
    pub submitters: Vec<Submitter>,
    /// The negotiation policy.
    pub policy: Policy,
    /// The effective priority of every user the accountant knows (for
    /// the users running jobs: `RemoteUserPrio`). A running user missing
    /// here has an undefined `RemoteUserPrio` and is never
    /// priority-preempted.
    pub priorities: BTreeMap<String, f64>,
}

/// Why a claimed slot is given to a new job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PreemptionKind {
    /// The slot prefers the new job (its Rank is higher).
    Rank,
    /// The new job's submitter has a better priority.
    Priority,
}

/// Who a preempting match evicts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preemption {
    /// Rank or priority preemption.
    pub kind: PreemptionKind,
    /// The user running on the slot (`RemoteUser`).
    pub remote_user: String,
    /// Its job (`JobId`), if the slot says.
    pub job: Option<String>,
}

/// One match: a job of `autocluster` goes to `slot`.
#[derive(Clone, Debug)]
pub struct Match {
    /// The submitter's name.
    pub submitter: String,
    /// The autocluster.
    pub autocluster: u64,
    /// The slot's index in [`CycleInput::slots`].
    pub slot: usize,
    /// The slot ad as matched (a partitionable slot's, with what was left
    /// of its resources before this match).
    pub slot_ad: ClassAd,
    /// The slot's weight charged to the submitter.
    pub weight: f64,
    /// Set when the slot is claimed and the match preempts its claim.
    pub preemption: Option<Preemption>,
}

impl Match {
    /// The match preempts a running job.
    pub fn preempting(&self) -> bool {
        self.preemption.is_some()
    }
}

/// Jobs of a request for which no slot was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmatched {
    /// The submitter's name.
    pub submitter: String,
    /// The autocluster.
    pub autocluster: u64,
    /// How many of its jobs got no slot.
    pub count: u64,
}

/// One submitter's part of the cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct SubmitterFigures {
    /// The submitter.
    pub name: String,
    /// Its effective priority.
    pub priority: f64,
    /// Its share of the pool in the first spin (0..1).
    pub share: f64,
    /// Its slice in the first spin (weight), less what it had in use.
    pub limit: f64,
    /// Weighted resources it had in use at the start.
    pub in_use: f64,
    /// Weight it was given this cycle.
    pub matched_weight: f64,
    /// Matches it got.
    pub matches: usize,
}

/// The decisions of a cycle.
#[derive(Clone, Debug, Default)]
pub struct CycleOutcome {
    /// The matches, in the order they were made.
    pub matches: Vec<Match>,
    /// Requests left (partly) unserved.
    pub unmatched: Vec<Unmatched>,
    /// Pie spins run (the final idle-slot round not counted).
    pub spins: u32,
    /// The pool's total slot weight.
    pub pool_weight: f64,
    /// Slots that could be candidates at all (idle, or claimed and
    /// preemptible by some job).
    pub candidate_slots: usize,
    /// Per submitter, in the order served.
    pub submitters: Vec<SubmitterFigures>,
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(_) | Value::Real(_) | Value::Bool(_) => v.as_real().filter(|x| !x.is_nan()),
        _ => None,
    }
}

fn text(ev: &mut Evaluator, ad: &ClassAd, name: &str) -> Option<String> {
    ev.eval_attr(name, ad, None).as_string()
}

/// The user a claimed slot works for: `RemoteUser`, else `RemoteOwner`.
fn remote_user(ev: &mut Evaluator, slot: &ClassAd) -> Option<String> {
    text(ev, slot, "RemoteUser").or_else(|| text(ev, slot, "RemoteOwner"))
}

/// A slot's weight: its `SlotWeight`, else `SLOT_WEIGHT` evaluated on it
/// (at least 0); 1 without slot weights.
pub fn slot_weight(ev: &mut Evaluator, slot: &ClassAd, policy: &Policy) -> f64 {
    if !policy.use_slot_weights {
        return 1.0;
    }
    number(&ev.eval_attr("SlotWeight", slot, None))
        .or_else(|| number(&ev.eval(&policy.slot_weight, Some(slot), None)))
        .unwrap_or(1.0)
        .max(0.0)
}

/// A slot ad's `State`, parsed once: a slot ad without one counts as
/// Unclaimed (a candidate); a value that is not one of HTCondor's states
/// (any case) is `None`.
fn slot_state(ev: &mut Evaluator, slot: &ClassAd) -> Option<State> {
    match ev.eval_attr("State", slot, None) {
        Value::Undefined => Some(State::Unclaimed),
        v => v.as_string().as_deref().and_then(State::from_name),
    }
}

/// A slot ad's `Activity`, if it is one of HTCondor's (any case).
fn slot_activity(ev: &mut Evaluator, slot: &ClassAd) -> Option<Activity> {
    ev.eval_attr("Activity", slot, None)
        .as_string()
        .as_deref()
        .and_then(Activity::from_name)
}

/// Resources in use per user, counted from the claimed slot ads (State
/// Claimed or Preempting, with a `RemoteUser`).
pub fn usage_from_slots(
    ev: &mut Evaluator,
    slots: &[ClassAd],
    policy: &Policy,
) -> BTreeMap<String, InUse> {
    let states: Vec<Option<State>> = slots.iter().map(|s| slot_state(ev, s)).collect();
    usage_from_states(ev, slots, &states, policy)
}

/// [`usage_from_slots`] with each slot's state already read.
fn usage_from_states(
    ev: &mut Evaluator,
    slots: &[ClassAd],
    states: &[Option<State>],
    policy: &Policy,
) -> BTreeMap<String, InUse> {
    let mut out: BTreeMap<String, InUse> = BTreeMap::new();
    for (s, state) in slots.iter().zip(states) {
        if !matches!(state, Some(State::Claimed | State::Preempting)) {
            continue;
        }
        let Some(user) = remote_user(ev, s) else {
            continue;
        };
        let w = slot_weight(ev, s, policy);
        let e = out.entry(user).or_default();
        e.slots += 1.0;
        e.weighted += w;
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Unclaimed: a candidate without preemption.
    Idle,
    /// Claimed and running a job: a candidate by preemption.
    Busy,
    /// Never a candidate.
    Out,
}

struct SlotState {
    ad: ClassAd,
    kind: Kind,
    partitionable: bool,
    weight: f64,
    taken: bool,
    remote_user: Option<String>,
    remote_prio: Option<f64>,
    current_rank: f64,
    /// The slot's Rank when it does not depend on the job.
    static_rank: Option<f64>,
    static_pre: Option<f64>,
    static_post: Option<f64>,
}

/// The candidate order: every component higher is better.
#[derive(Clone, Copy, Debug)]
struct Key {
    pre: f64,
    job: f64,
    post: f64,
    /// 2 idle, 1 rank preemption, 0 priority preemption.
    class: u8,
    preemption_rank: f64,
}

fn cmp_key(a: &Key, b: &Key) -> Ordering {
    a.pre
        .total_cmp(&b.pre)
        .then(a.job.total_cmp(&b.job))
        .then(a.post.total_cmp(&b.post))
        .then(a.class.cmp(&b.class))
        .then(a.preemption_rank.total_cmp(&b.preemption_rank))
}

#[derive(Clone, Copy, Debug)]
struct Cand {
    slot: usize,
    key: Key,
    preempt: Option<PreemptionKind>,
}

struct RequestState {
    left: u64,
    cands: Option<Vec<Cand>>,
    cursor: usize,
}

struct SubState {
    idx: usize,
    done: bool,
    reqs: Vec<RequestState>,
    priority: f64,
    in_use: f64,
    matched: f64,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Within the submitter's slice: give at most this much weight, but
    /// at least one slot (`true`: nothing given yet in this spin), so
    /// slices round up to whole slots.
    Pie(f64, bool),
    /// The final round: one idle slot, no limit.
    Leftover,
}

enum Next {
    Found(Cand),
    Limit,
    Exhausted,
}

/// An expression that refers to no attribute: its value, once.
fn constant_value(ev: &mut Evaluator, e: &Expr) -> Option<Value> {
    let refs = classad::references(e, &ClassAd::new());
    (refs.internal.is_empty() && refs.external.is_empty()).then(|| ev.eval(e, None, None))
}

/// `e` evaluated in `slot` when it does not depend on the job.
fn slot_only(ev: &mut Evaluator, e: &Expr, slot: &ClassAd) -> Option<f64> {
    if classad::references(e, slot).external.is_empty() {
        Some(number(&ev.eval(e, Some(slot), None)).unwrap_or(f64::MIN))
    } else {
        None
    }
}

/// A request's evaluation against one (static) slot, shared by every
/// request with the same match signature.
#[derive(Clone, Copy, Debug)]
struct Eval {
    slot: usize,
    /// The slot's Rank of the job.
    slot_rank: f64,
    job_rank: f64,
    pre: f64,
    post: f64,
}

/// The ephemeral attributes of the candidate's submitter.
const SUBMITTER_ATTRS: [&str; 3] = [
    "submitteruserprio",
    "submittorprio",
    "submitteruserresourcesinuse",
];

struct Cycle<'a> {
    input: &'a CycleInput,
    slots: Vec<SlotState>,
    subs: Vec<SubState>,
    /// Submitter indices in service order.
    order: Vec<usize>,
    /// Slots that may still be given (candidates not yet taken).
    free: usize,
    prio_preemption: bool,
    /// Job attributes that matter to matching beside the job's own
    /// Requirements and Rank: what the slots and the policy's rank
    /// expressions refer to.
    significant: BTreeSet<String>,
    /// The ranks refer to the submitter's ephemeral attributes: requests
    /// of different submitters never share evaluations.
    per_submitter: bool,
    /// Evaluations against the static slots, by match signature.
    evals: std::collections::HashMap<String, std::rc::Rc<Vec<Eval>>>,
    out: CycleOutcome,
}

impl<'a> Cycle<'a> {
    fn new(input: &'a CycleInput, ev: &mut Evaluator) -> Cycle<'a> {
        let policy = &input.policy;
        let prio_preemption = policy.consider_preemption
            && constant_value(ev, &policy.preemption_requirements).is_none_or(|v| v.is_true());
        let states: Vec<Option<State>> = input.slots.iter().map(|ad| slot_state(ev, ad)).collect();
        let usage = usage_from_states(ev, &input.slots, &states, policy);
        let mut slots = Vec::with_capacity(input.slots.len());
        let mut pool_weight = 0.0;
        for (ad, state) in input.slots.iter().zip(&states) {
            let weight = slot_weight(ev, ad, policy);
            pool_weight += weight;
            let kind = match state {
                Some(State::Unclaimed) => Kind::Idle,
                Some(State::Claimed)
                    if policy.consider_preemption
                        && slot_activity(ev, ad) == Some(Activity::Busy) =>
                {
                    Kind::Busy
                }
                _ => Kind::Out,
            };
            let partitionable = ev.eval_attr("PartitionableSlot", ad, None).is_true();
            let mut ad = ad.clone();
            let mut remote = None;
            let mut remote_prio = None;
            let mut current_rank = 0.0;
            let mut kind = kind;
            if kind == Kind::Busy {
                remote = remote_user(ev, &ad);
                if remote.is_none() {
                    kind = Kind::Out;
                }
                current_rank = number(&ev.eval_attr("CurrentRank", &ad, None)).unwrap_or(0.0);
            }
            let mut static_rank = None;
            if kind != Kind::Out {
                static_rank = match ad.lookup("Rank") {
                    None => Some(0.0),
                    Some(e) => slot_only(ev, e, &ad).map(|r| if r == f64::MIN { 0.0 } else { r }),
                };
            }
            if kind == Kind::Busy
                && !prio_preemption
                && static_rank.is_some_and(|r| r <= current_rank)
            {
                // Neither kind of preemption can ever apply.
                kind = Kind::Out;
            }
            if kind == Kind::Busy {
                if let Some(u) = &remote {
                    remote_prio = input.priorities.get(u).copied();
                    if let Some(p) = remote_prio {
                        ad.insert_value("RemoteUserPrio", p);
                    }
                    let in_use = usage.get(u).map_or(0.0, |x| x.weighted);
                    ad.insert_value("RemoteUserResourcesInUse", in_use);
                }
            }
            let (mut static_pre, mut static_post) = (None, None);
            if kind != Kind::Out {
                static_pre = match &policy.pre_job_rank {
                    None => Some(0.0),
                    Some(e) => slot_only(ev, e, &ad),
                };
                static_post = match &policy.post_job_rank {
                    None => Some(0.0),
                    Some(e) => slot_only(ev, e, &ad),
                };
            }
            slots.push(SlotState {
                ad,
                kind,
                partitionable,
                weight,
                taken: false,
                remote_user: remote,
                remote_prio,
                current_rank,
                static_rank,
                static_pre,
                static_post,
            });
        }
        let free = slots.iter().filter(|s| s.kind != Kind::Out).count();
        let mut order: Vec<usize> = (0..input.submitters.len()).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&input.submitters[a], &input.submitters[b]);
            a.priority
                .total_cmp(&b.priority)
                .then_with(|| a.name.cmp(&b.name))
        });
        let subs = input
            .submitters
            .iter()
            .map(|s| SubState {
                idx: 0,
                done: s.requests.is_empty(),
                reqs: s
                    .requests
                    .iter()
                    .map(|r| RequestState {
                        left: r.count,
                        cands: None,
                        cursor: 0,
                    })
                    .collect(),
                priority: if s.priority.is_finite() && s.priority > 0.0 {
                    s.priority
                } else {
                    f64::MIN_POSITIVE
                },
                in_use: usage.get(&s.name).map_or(0.0, |u| u.weighted),
                matched: 0.0,
            })
            .collect();
        let out = CycleOutcome {
            pool_weight,
            candidate_slots: free,
            ..CycleOutcome::default()
        };
        let candidates: Vec<ClassAd> = slots
            .iter()
            .filter(|s| s.kind != Kind::Out)
            .map(|s| s.ad.clone())
            .collect();
        let mut significant: BTreeSet<String> =
            significant_attributes(&candidates).into_iter().collect();
        for e in [&policy.pre_job_rank, &policy.post_job_rank]
            .into_iter()
            .flatten()
        {
            let r = classad::references(e, &ClassAd::new());
            significant.extend(r.internal);
            significant.extend(r.external);
        }
        for name in ["requestcpus", "requestmemory", "requestdisk"] {
            significant.insert(name.into());
        }
        let per_submitter = SUBMITTER_ATTRS.iter().any(|a| significant.contains(*a));
        Cycle {
            input,
            slots,
            subs,
            order,
            free,
            prio_preemption,
            significant,
            per_submitter,
            evals: std::collections::HashMap::new(),
            out,
        }
    }

    /// What makes two requests alike for matching: their Requirements and
    /// Rank, the values of every job attribute those refer to, and of the
    /// attributes the slots and ranks refer to.
    fn signature(&self, k: usize, job: &ClassAd) -> String {
        let mut names = self.significant.clone();
        let mut key = String::new();
        for attr in ["Requirements", "Rank"] {
            let r = classad::attribute_references(job, attr);
            names.extend(r.internal);
        }
        if self.per_submitter {
            key.push_str(&self.input.submitters[k].name);
            key.push('\n');
        }
        for n in &names {
            if SUBMITTER_ATTRS.contains(&n.as_str()) {
                continue;
            }
            key.push_str(n);
            key.push('=');
            match job.lookup(n) {
                Some(e) => key.push_str(&e.to_string()),
                None => key.push('\u{0}'),
            }
            key.push('\n');
        }
        key
    }

    /// The evaluations of `job` against every static slot not yet taken
    /// that it matches (both Requirements).
    fn evaluate(&self, ev: &mut Evaluator, job: &ClassAd) -> Vec<Eval> {
        let policy = &self.input.policy;
        let mut out = Vec::new();
        for (i, s) in self.slots.iter().enumerate() {
            if s.taken || s.kind == Kind::Out || s.partitionable {
                continue;
            }
            if let Some(e) = Self::evaluate_one(ev, policy, job, i, s) {
                out.push(e);
            }
        }
        out
    }

    fn evaluate_one(
        ev: &mut Evaluator,
        policy: &Policy,
        job: &ClassAd,
        i: usize,
        s: &SlotState,
    ) -> Option<Eval> {
        if !symmetric_match(ev, job, &s.ad).matched {
            return None;
        }
        if s.partitionable && !Self::fits(ev, job, &s.ad) {
            return None;
        }
        let slot_rank = match s.static_rank {
            Some(r) => r,
            None if s.kind == Kind::Busy => number(&rank(ev, &s.ad, job)).unwrap_or(0.0),
            None => 0.0,
        };
        let eval_or = |ev: &mut Evaluator, e: &Option<Expr>, fixed: Option<f64>| match fixed {
            Some(v) => v,
            None => e
                .as_ref()
                .and_then(|e| number(&ev.eval(e, Some(&s.ad), Some(job))))
                .unwrap_or(f64::MIN),
        };
        Some(Eval {
            slot: i,
            slot_rank,
            job_rank: number(&rank(ev, job, &s.ad)).unwrap_or(0.0),
            pre: eval_or(ev, &policy.pre_job_rank, s.static_pre),
            post: eval_or(ev, &policy.post_job_rank, s.static_post),
        })
    }

    /// The job ad with the submitter's ephemeral attributes.
    fn job_ad(&self, k: usize, req: &Request) -> ClassAd {
        let sub = &self.subs[k];
        let mut job = req.ad.clone();
        job.insert_value("SubmitterUserPrio", sub.priority);
        job.insert_value("SubmittorPrio", sub.priority);
        job.insert_value("SubmitterUserResourcesInUse", sub.in_use);
        job
    }

    /// Whether a partitionable slot still has room for the job.
    fn fits(ev: &mut Evaluator, job: &ClassAd, slot: &ClassAd) -> bool {
        let want = requests_of(ev, job, slot);
        let have = resources_of(ev, slot);
        want.cpus <= have.cpus && want.memory <= have.memory && want.disk <= have.disk
    }

    /// Every candidate slot for the job, best first.
    fn candidates(&mut self, ev: &mut Evaluator, k: usize, job: &ClassAd) -> Vec<Cand> {
        let sig = self.signature(k, job);
        let shared = match self.evals.get(&sig) {
            Some(e) => e.clone(),
            None => {
                let e = std::rc::Rc::new(self.evaluate(ev, job));
                self.evals.insert(sig, e.clone());
                e
            }
        };
        let policy = &self.input.policy;
        let mut evals: Vec<Eval> = shared
            .iter()
            .filter(|e| !self.slots[e.slot].taken)
            .copied()
            .collect();
        // Partitionable slots change as they are carved: evaluated anew.
        for (i, s) in self.slots.iter().enumerate() {
            if s.partitionable && !s.taken && s.kind != Kind::Out {
                evals.extend(Self::evaluate_one(ev, policy, job, i, s));
            }
        }
        let name = &self.input.submitters[k].name;
        let sub_prio = self.subs[k].priority;
        let mut out = Vec::with_capacity(evals.len());
        for e in evals {
            let s = &self.slots[e.slot];
            let mut preempt = None;
            if s.kind == Kind::Busy {
                if e.slot_rank > s.current_rank {
                    preempt = Some(PreemptionKind::Rank);
                } else if self.prio_preemption
                    && e.slot_rank >= s.current_rank
                    && s.remote_user.as_deref() != Some(name.as_str())
                    && s.remote_prio.is_some_and(|p| sub_prio < p)
                    && ev
                        .eval(&policy.preemption_requirements, Some(&s.ad), Some(job))
                        .is_true()
                {
                    preempt = Some(PreemptionKind::Priority);
                } else {
                    continue;
                }
            }
            let (class, preemption_rank) = match preempt {
                None => (2, 0.0),
                Some(kind) => (
                    if kind == PreemptionKind::Rank { 1 } else { 0 },
                    number(&ev.eval(&policy.preemption_rank, Some(&s.ad), Some(job)))
                        .unwrap_or(f64::MIN),
                ),
            };
            out.push(Cand {
                slot: e.slot,
                key: Key {
                    pre: e.pre,
                    job: e.job_rank,
                    post: e.post,
                    class,
                    preemption_rank,
                },
                preempt,
            });
        }
        out.sort_by(|a, b| cmp_key(&b.key, &a.key).then(a.slot.cmp(&b.slot)));
        out
    }

    /// The next slot for a job of request `r` of submitter `k`.
    fn next(&mut self, ev: &mut Evaluator, k: usize, r: usize, job: &ClassAd, mode: Mode) -> Next {
        if self.subs[k].reqs[r].cands.is_none() {
            let c = self.candidates(ev, k, job);
            self.subs[k].reqs[r].cands = Some(c);
        }
        let mut cursor = self.subs[k].reqs[r].cursor;
        let found = loop {
            let Some(c) = self.subs[k].reqs[r]
                .cands
                .as_ref()
                .and_then(|c| c.get(cursor))
                .copied()
            else {
                break Next::Exhausted;
            };
            let s = &self.slots[c.slot];
            if s.taken {
                cursor += 1;
                continue;
            }
            if s.partitionable
                && !(symmetric_match(ev, job, &s.ad).matched && Self::fits(ev, job, &s.ad))
            {
                cursor += 1;
                continue;
            }
            match mode {
                Mode::Leftover if c.preempt.is_some() => {
                    cursor += 1;
                    continue;
                }
                Mode::Pie(left, first) if !first && self.charge(ev, job, c.slot) > left + 1e-9 => {
                    break Next::Limit;
                }
                _ => break Next::Found(c),
            }
        };
        self.subs[k].reqs[r].cursor = cursor;
        found
    }

    /// The weight a match on `slot` charges: a partitionable slot's share
    /// is what the job takes of its CPUs.
    fn charge(&self, ev: &mut Evaluator, job: &ClassAd, slot: usize) -> f64 {
        let s = &self.slots[slot];
        if s.partitionable {
            if !self.input.policy.use_slot_weights {
                return 1.0;
            }
            requests_of(ev, job, &s.ad).cpus.max(0.0)
        } else {
            s.weight
        }
    }

    /// Gives jobs of submitter `k` slots: within `limit` of weight
    /// (`Mode::Pie`) or one idle slot (`Mode::Leftover`). Returns how many
    /// matches were made.
    fn serve(&mut self, ev: &mut Evaluator, k: usize, mode: Mode) -> usize {
        let input = self.input;
        let sub = &input.submitters[k];
        let mut made = 0;
        let mut used = 0.0;
        while !self.subs[k].done {
            if self.free == 0 {
                return made;
            }
            let r = self.subs[k].idx;
            let Some(req) = sub.requests.get(r) else {
                self.subs[k].done = true;
                break;
            };
            if self.subs[k].reqs[r].left == 0 {
                self.subs[k].idx += 1;
                if self.subs[k].idx >= sub.requests.len() {
                    self.subs[k].done = true;
                }
                continue;
            }
            let job = self.job_ad(k, req);
            let limit = match mode {
                Mode::Pie(l, _) => Mode::Pie(l - used, made == 0),
                Mode::Leftover => Mode::Leftover,
            };
            match self.next(ev, k, r, &job, limit) {
                Next::Found(c) => {
                    let w = self.charge(ev, &job, c.slot);
                    let s = &mut self.slots[c.slot];
                    let slot_ad = s.ad.clone();
                    let preemption = c.preempt.map(|kind| Preemption {
                        kind,
                        remote_user: s.remote_user.clone().unwrap_or_default(),
                        job: None,
                    });
                    if s.partitionable {
                        match carve(ev, &slot_ad, &job) {
                            Some(left) => s.ad = left,
                            None => s.taken = true,
                        }
                    } else {
                        s.taken = true;
                    }
                    if s.taken {
                        self.free -= 1;
                    }
                    let preemption = preemption.map(|mut p| {
                        p.job = text(ev, &slot_ad, "JobId");
                        p
                    });
                    self.out.matches.push(Match {
                        submitter: sub.name.clone(),
                        autocluster: req.autocluster,
                        slot: c.slot,
                        slot_ad,
                        weight: w,
                        preemption,
                    });
                    self.subs[k].reqs[r].left -= 1;
                    self.subs[k].matched += w;
                    used += w;
                    made += 1;
                    if mode == Mode::Leftover {
                        return made;
                    }
                }
                Next::Limit => return made,
                Next::Exhausted => {
                    let left = self.subs[k].reqs[r].left;
                    self.out.unmatched.push(Unmatched {
                        submitter: sub.name.clone(),
                        autocluster: req.autocluster,
                        count: left,
                    });
                    self.subs[k].reqs[r].left = 0;
                    self.subs[k].reqs[r].cands = None;
                }
            }
        }
        made
    }

    fn run(mut self, ev: &mut Evaluator) -> CycleOutcome {
        let pool = self.out.pool_weight;
        let order = self.order.clone();
        let mut figures: BTreeMap<usize, SubmitterFigures> = BTreeMap::new();
        loop {
            let active: Vec<usize> = order
                .iter()
                .copied()
                .filter(|&k| !self.subs[k].done)
                .collect();
            if active.is_empty() || self.free == 0 {
                break;
            }
            self.out.spins += 1;
            let normal: f64 = active.iter().map(|&k| 1.0 / self.subs[k].priority).sum();
            let mut progress = 0;
            for &k in &active {
                let s = &self.subs[k];
                let share = (1.0 / s.priority) / normal;
                let limit = share * pool - (s.in_use + s.matched);
                figures.entry(k).or_insert_with(|| SubmitterFigures {
                    name: self.input.submitters[k].name.clone(),
                    priority: s.priority,
                    share,
                    limit,
                    in_use: s.in_use,
                    matched_weight: 0.0,
                    matches: 0,
                });
                if limit <= 0.0 {
                    continue;
                }
                progress += self.serve(ev, k, Mode::Pie(limit, true));
            }
            if progress == 0 {
                break;
            }
        }
        // Idle slots left over (fractions of slices): in turn, one each.
        loop {
            let mut progress = 0;
            for &k in &order {
                if !self.subs[k].done && self.free > 0 {
                    progress += self.serve(ev, k, Mode::Leftover);
                }
            }
            if progress == 0 {
                break;
            }
        }
        // What is left is unmatched.
        for &k in &order {
            let sub = &self.input.submitters[k];
            for (r, req) in sub.requests.iter().enumerate().skip(self.subs[k].idx) {
                let left = self.subs[k].reqs[r].left;
                if left > 0 {
                    self.out.unmatched.push(Unmatched {
                        submitter: sub.name.clone(),
                        autocluster: req.autocluster,
                        count: left,
                    });
                }
            }
        }
        for &k in &order {
            let s = &self.subs[k];
            let mut f = figures.remove(&k).unwrap_or_else(|| SubmitterFigures {
                name: self.input.submitters[k].name.clone(),
                priority: s.priority,
                share: 0.0,
                limit: 0.0,
                in_use: s.in_use,
                matched_weight: 0.0,
                matches: 0,
            });
            f.matched_weight = s.matched;
            f.matches = self
                .out
                .matches
                .iter()
                .filter(|m| m.submitter == f.name)
                .count();
            self.out.submitters.push(f);
        }
        self.out
    }
}

fn request(ev: &mut Evaluator, job: &ClassAd, slot: &ClassAd, name: &str, default: f64) -> f64 {
    number(&ev.eval_attr(name, job, Some(slot))).unwrap_or(default)
}

/// The resources a partitionable slot has left, and the job's requests.
struct Fit {
    cpus: f64,
    memory: f64,
    disk: f64,
}

fn requests_of(ev: &mut Evaluator, job: &ClassAd, slot: &ClassAd) -> Fit {
    Fit {
        cpus: request(ev, job, slot, "RequestCpus", 1.0),
        memory: request(ev, job, slot, "RequestMemory", 0.0),
        disk: request(ev, job, slot, "RequestDisk", 0.0),
    }
}

fn resources_of(ev: &mut Evaluator, slot: &ClassAd) -> Fit {
    let mut get = |n: &str| number(&ev.eval_attr(n, slot, None)).unwrap_or(0.0);
    Fit {
        cpus: get("Cpus"),
        memory: get("Memory"),
        disk: get("Disk"),
    }
}

/// What is left of a partitionable slot after a job took its requests;
/// `None` when too little is left for anything (no CPU or no memory).
fn carve(ev: &mut Evaluator, slot: &ClassAd, job: &ClassAd) -> Option<ClassAd> {
    let want = requests_of(ev, job, slot);
    let have = resources_of(ev, slot);
    let left = Fit {
        cpus: have.cpus - want.cpus,
        memory: have.memory - want.memory,
        disk: have.disk - want.disk,
    };
    if left.cpus < 1.0 || left.memory <= 0.0 {
        return None;
    }
    let mut ad = slot.clone();
    ad.insert_value("Cpus", left.cpus.floor() as i64);
    ad.insert_value("Memory", left.memory.floor() as i64);
    ad.insert_value("Disk", left.disk.floor() as i64);
    Some(ad)
}

/// Runs one cycle (see the module documentation for the rules).
pub fn negotiate(input: &CycleInput, ev: &mut Evaluator) -> CycleOutcome {
    Cycle::new(input, ev).run(ev)
}

/// The job attributes that matter for matching against these slots: what
/// the slots' Requirements (START) and Rank refer to in the job (through
/// `TARGET.` or names the slot ad does not define), sorted, lower case.
pub fn significant_attributes(slots: &[ClassAd]) -> Vec<String> {
    let mut names = BTreeSet::new();
    for slot in slots {
        for attr in ["Requirements", "Rank", "Start"] {
            names.extend(classad::attribute_references(slot, attr).external);
        }
    }
    names.into_iter().collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use classad::parse_ad;

    const NOW: i64 = 1_700_000_000;

    fn ev() -> Evaluator {
        crate::evaluator(NOW, classad::time::utc_zone)
    }

    fn slot(name: &str, extra: &str) -> ClassAd {
        parse_ad(&format!(
            "[ Name = \"{name}\"; State = \"Unclaimed\"; Activity = \"Idle\"; Rank = 0; SlotID = 1; Cpus = 1; Memory = 1024; Disk = 100000; Arch = \"X86_64\"; OpSys = \"LINUX\"; Start = true; Requirements = START; {extra} ]"
        ))
        .unwrap()
    }

    /// A slot running a job of `user` since `started`.
    fn busy(name: &str, user: &str, started: i64, extra: &str) -> ClassAd {
        slot(
            name,
            &format!(
                "State = \"Claimed\"; Activity = \"Busy\"; RemoteUser = \"{user}\"; RemoteOwner = \"{user}\"; JobId = \"7.0\"; JobStart = {started}; CurrentRank = 0.0; {extra}"
            ),
        )
    }

    fn job(extra: &str) -> ClassAd {
        parse_ad(&format!(
            "[ Owner = \"u\"; RequestCpus = 1; RequestMemory = 100; RequestDisk = 10; Requirements = TARGET.Arch == \"X86_64\" && TARGET.Memory >= RequestMemory; {extra} ]"
        ))
        .unwrap()
    }

    fn sub(name: &str, prio: f64, reqs: Vec<(u64, ClassAd, u64)>) -> Submitter {
        Submitter {
            name: name.into(),
            priority: prio,
            requests: reqs
                .into_iter()
                .map(|(autocluster, ad, count)| Request {
                    autocluster,
                    ad,
                    count,
                })
                .collect(),
        }
    }

    fn input(slots: Vec<ClassAd>, submitters: Vec<Submitter>) -> CycleInput {
        CycleInput {
            slots,
            submitters,
            ..CycleInput::default()
        }
    }

    fn names(input: &CycleInput, out: &CycleOutcome) -> Vec<String> {
        out.matches
            .iter()
            .map(|m| {
                let n = input.slots[m.slot].lookup("Name").unwrap().to_string();
                let tag = match &m.preemption {
                    None => "",
                    Some(p) if p.kind == PreemptionKind::Rank => "!rank",
                    Some(_) => "!prio",
                };
                format!(
                    "{}:{}:{}{tag}",
                    m.submitter,
                    m.autocluster,
                    n.trim_matches('"')
                )
            })
            .collect()
    }

    fn count_of(out: &CycleOutcome, who: &str) -> usize {
        out.matches.iter().filter(|m| m.submitter == who).count()
    }

    fn no_ranks() -> Policy {
        Policy {
            pre_job_rank: None,
            post_job_rank: None,
            ..Policy::default()
        }
    }

    #[test]
    fn matches_as_many_jobs_as_free_slots_and_no_slot_twice() {
        let input = input(
            vec![
                slot("s1", ""),
                slot("s2", ""),
                slot("s3", "State = \"Claimed\""),
            ],
            vec![sub("u@d", 0.5, vec![(1, job(""), 5)])],
        );
        let out = negotiate(&input, &mut ev());
        assert_eq!(names(&input, &out), ["u@d:1:s1", "u@d:1:s2"]);
        assert_eq!(
            out.unmatched,
            vec![Unmatched {
                submitter: "u@d".into(),
                autocluster: 1,
                count: 3
            }]
        );
    }

    #[test]
    fn requirements_both_ways() {
        let input = input(
            vec![
                slot("small", "Memory = 50"),
                slot("picky", "Start = TARGET.Owner == \"other\""),
                slot("ok", ""),
            ],
            vec![sub("u@d", 0.5, vec![(1, job(""), 3)])],
        );
        let out = negotiate(&input, &mut ev());
        assert_eq!(names(&input, &out), ["u@d:1:ok"]);
    }

    #[test]
    fn pre_job_rank_comes_before_the_job_rank() {
        // The default NEGOTIATOR_PRE_JOB_RANK puts the machine's Rank of
        // the job first: slot c (Rank 10) wins over the job's favourite b.
        let input = input(
            vec![
                slot("a", "Kind = \"slow\""),
                slot("b", "Kind = \"fast\""),
                slot("c", "Kind = \"slow\"; Rank = 10"),
            ],
            vec![sub(
                "u@d",
                0.5,
                vec![(1, job("Rank = TARGET.Kind == \"fast\""), 3)],
            )],
        );
        let out = negotiate(&input, &mut ev());
        assert_eq!(names(&input, &out), ["u@d:1:c", "u@d:1:b", "u@d:1:a"]);
    }

    #[test]
    fn the_default_pre_job_rank_prefers_the_smallest_fitting_slot() {
        let input = input(
            vec![slot("big", "Memory = 4096"), slot("small", "Memory = 512")],
            vec![sub("u@d", 0.5, vec![(1, job(""), 1)])],
        );
        let out = negotiate(&input, &mut ev());
        assert_eq!(names(&input, &out), ["u@d:1:small"]);
    }

    #[test]
    fn job_rank_comes_before_the_post_job_rank() {
        let policy = Policy {
            pre_job_rank: None,
            post_job_rank: Some(parse_expr("- SlotID").unwrap()),
            ..Policy::default()
        };
        let mut inp = input(
            vec![
                slot("s1", "SlotID = 1; Kind = \"slow\""),
                slot("s2", "SlotID = 2; Kind = \"fast\""),
                slot("s3", "SlotID = 3; Kind = \"slow\""),
            ],
            vec![sub(
                "u@d",
                0.5,
                vec![(1, job("Rank = TARGET.Kind == \"fast\""), 3)],
            )],
        );
        inp.policy = policy;
        let out = negotiate(&inp, &mut ev());
        // fast first by job Rank, then the lower SlotID by the post rank.
        assert_eq!(names(&inp, &out), ["u@d:1:s2", "u@d:1:s1", "u@d:1:s3"]);
    }

    #[test]
    fn post_job_rank_breaks_ties_of_the_job_rank() {
        let mut inp = input(
            vec![
                slot("s1", "SlotID = 1; KFlops = 10"),
                slot("s2", "SlotID = 2; KFlops = 900"),
            ],
            vec![sub("u@d", 0.5, vec![(1, job(""), 1)])],
        );
        inp.policy.pre_job_rank = None;
        let out = negotiate(&inp, &mut ev());
        // The default post rank: the faster slot.
        assert_eq!(names(&inp, &out), ["u@d:1:s2"]);
    }

    #[test]
    fn at_equal_rank_less_preemption_wins() {
        // Idle before rank preemption before priority preemption.
        let mut inp = input(
            vec![
                busy("prio", "bad@d", NOW - 10_000, ""),
                busy(
                    "rank",
                    "bad@d",
                    NOW - 10_000,
                    "Rank = TARGET.Owner == \"u\"",
                ),
                slot("idle", "Rank = TARGET.Owner == \"u\""),
            ],
            vec![sub("u@d", 1.0, vec![(1, job(""), 3)])],
        );
        inp.policy = no_ranks();
        inp.policy.preemption_requirements = parse_expr("true").unwrap();
        inp.priorities.insert("bad@d".into(), 100.0);
        // The idle and the rank slots have the same Rank (1) of the job;
        // the priority slot has 0 = CurrentRank: all three are candidates,
        // and without pre/post ranks the job's Rank (0) ties everywhere.
        let out = negotiate(&inp, &mut ev());
        assert_eq!(
            names(&inp, &out),
            ["u@d:1:idle", "u@d:1:rank!rank", "u@d:1:prio!prio"]
        );
        let p = out.matches[2].preemption.clone().unwrap();
        assert_eq!(p.remote_user, "bad@d");
        assert_eq!(p.job.as_deref(), Some("7.0"));
    }

    #[test]
    fn preemption_rank_chooses_the_victim() {
        // The default PREEMPTION_RANK: the worst-priority user first.
        let mut inp = input(
            vec![
                busy("meh", "meh@d", NOW - 10_000, ""),
                busy("worst", "worst@d", NOW - 10_000, ""),
            ],
            vec![sub("u@d", 1.0, vec![(1, job(""), 1)])],
        );
        inp.policy = no_ranks();
        inp.policy.preemption_requirements = parse_expr("true").unwrap();
        inp.priorities.insert("meh@d".into(), 10.0);
        inp.priorities.insert("worst@d".into(), 50.0);
        let out = negotiate(&inp, &mut ev());
        assert_eq!(names(&inp, &out), ["u@d:1:worst!prio"]);
    }

    #[test]
    fn rank_preemption_needs_a_higher_rank_and_no_preemption_requirements() {
        let physics = "Rank = TARGET.Group =?= \"physics\"";
        let mut inp = input(
            vec![busy("s1", "outsider@d", NOW - 5, physics)],
            vec![
                sub("out2@d", 0.5, vec![(1, job("Group = \"chem\""), 1)]),
                sub("phys@d", 1000.0, vec![(2, job("Group = \"physics\""), 1)]),
            ],
        );
        // PREEMPTION_REQUIREMENTS is False (the default) and the physics
        // submitter has the worse priority: still it gets the slot.
        inp.priorities.insert("outsider@d".into(), 0.5);
        let out = negotiate(&inp, &mut ev());
        assert_eq!(names(&inp, &out), ["phys@d:2:s1!rank"]);
        // A running job the slot ranks as high is not rank-preempted.
        inp.slots = vec![busy(
            "s1",
            "outsider@d",
            NOW - 5,
            &format!("{physics}; CurrentRank = 1.0"),
        )];
        let out = negotiate(&inp, &mut ev());
        assert!(out.matches.is_empty());
    }

    #[test]
    fn priority_preemption_needs_a_better_priority_and_preemption_requirements() {
        let mk = |req: &str, running: &str, prio_running: f64, prio_new: f64| {
            let mut inp = input(
                vec![busy("s1", running, NOW - 10_000, "")],
                vec![sub("new@d", prio_new, vec![(1, job(""), 1)])],
            );
            inp.policy.preemption_requirements = parse_expr(req).unwrap();
            inp.priorities.insert(running.into(), prio_running);
            inp.priorities.insert("new@d".into(), prio_new);
            let out = negotiate(&inp, &mut ev());
            names(&inp, &out)
        };
        let classic = "RemoteUserPrio > SubmitterUserPrio * 1.2";
        assert_eq!(mk(classic, "old@d", 100.0, 10.0), ["new@d:1:s1!prio"]);
        // Not 20 % better.
        assert!(mk(classic, "old@d", 11.0, 10.0).is_empty());
        // A worse priority never preempts, whatever the requirements say.
        assert!(mk("true", "old@d", 10.0, 100.0).is_empty());
        // The same user never preempts itself.
        assert!(mk("true", "new@d", 100.0, 10.0).is_empty());
        // PREEMPTION_REQUIREMENTS False: no priority preemption.
        assert!(mk("false", "old@d", 100.0, 10.0).is_empty());
        // The old spelling SubmittorPrio and the usage figures are there.
        assert_eq!(
            mk(
                "SubmittorPrio < RemoteUserPrio && RemoteUserResourcesInUse == 1 && SubmitterUserResourcesInUse == 0",
                "old@d",
                100.0,
                10.0
            ),
            ["new@d:1:s1!prio"]
        );
    }

    #[test]
    fn priority_preemption_needs_the_slot_not_to_rank_the_job_lower() {
        let mut inp = input(
            vec![busy(
                "s1",
                "old@d",
                NOW - 10_000,
                "Rank = TARGET.Owner == \"old\"; CurrentRank = 1.0",
            )],
            vec![sub("new@d", 1.0, vec![(1, job(""), 1)])],
        );
        inp.policy.preemption_requirements = parse_expr("true").unwrap();
        inp.priorities.insert("old@d".into(), 100.0);
        assert!(negotiate(&inp, &mut ev()).matches.is_empty());
    }

    #[test]
    fn the_thrashing_guard_keeps_a_young_job() {
        let guard = "(CurrentTime - JobStart) > 3600 && RemoteUserPrio > SubmitterUserPrio * 1.2";
        let mut inp = input(
            vec![
                busy("young", "old@d", NOW - 600, ""),
                busy("aged", "old@d", NOW - 7200, ""),
            ],
            vec![sub("new@d", 1.0, vec![(1, job(""), 2)])],
        );
        inp.policy.preemption_requirements = parse_expr(guard).unwrap();
        inp.priorities.insert("old@d".into(), 100.0);
        let out = negotiate(&inp, &mut ev());
        assert_eq!(names(&inp, &out), ["new@d:1:aged!prio"]);
    }

    #[test]
    fn consider_preemption_false_turns_both_kinds_off() {
        let mut inp = input(
            vec![
                busy("r", "old@d", NOW - 10_000, "Rank = 5"),
                busy("p", "old@d", NOW - 10_000, ""),
            ],
            vec![sub("new@d", 1.0, vec![(1, job(""), 2)])],
        );
        inp.policy.preemption_requirements = parse_expr("true").unwrap();
        inp.priorities.insert("old@d".into(), 100.0);
        assert_eq!(negotiate(&inp, &mut ev()).matches.len(), 2);
        inp.policy.consider_preemption = false;
        let out = negotiate(&inp, &mut ev());
        assert!(out.matches.is_empty());
        assert_eq!(out.candidate_slots, 0);
    }

    #[test]
    fn preempting_matched_and_idle_claimed_slots_are_never_candidates() {
        let mut inp = input(
            vec![
                busy(
                    "pre",
                    "old@d",
                    NOW - 10_000,
                    "State = \"Preempting\"; Activity = \"Vacating\"",
                ),
                slot("mat", "State = \"Matched\""),
                busy("cli", "old@d", NOW - 10_000, "Activity = \"Idle\""),
                slot("own", "State = \"Owner\""),
            ],
            vec![sub("new@d", 1.0, vec![(1, job(""), 4)])],
        );
        inp.policy.preemption_requirements = parse_expr("true").unwrap();
        inp.priorities.insert("old@d".into(), 100.0);
        let out = negotiate(&inp, &mut ev());
        assert!(out.matches.is_empty());
    }

    #[test]
    fn a_slot_is_given_once_even_when_preempted() {
        let mut inp = input(
            vec![busy("s1", "old@d", NOW - 10_000, "Rank = 1")],
            vec![
                sub("a@d", 1.0, vec![(1, job(""), 3)]),
                sub("b@d", 2.0, vec![(2, job(""), 3)]),
            ],
        );
        inp.policy.preemption_requirements = parse_expr("true").unwrap();
        inp.priorities.insert("old@d".into(), 100.0);
        let out = negotiate(&inp, &mut ev());
        assert_eq!(out.matches.len(), 1);
    }

    #[test]
    fn the_pie_is_shared_inversely_to_priority() {
        // Priorities 1 and 3: shares 3/4 and 1/4 of 8 slots.
        let inp = input(
            (1..=8).map(|i| slot(&format!("s{i}"), "")).collect(),
            vec![
                sub("b@d", 3.0, vec![(2, job(""), 100)]),
                sub("a@d", 1.0, vec![(1, job(""), 100)]),
            ],
        );
        let out = negotiate(&inp, &mut ev());
        assert_eq!(count_of(&out, "a@d"), 6);
        assert_eq!(count_of(&out, "b@d"), 2);
        assert_eq!(out.submitters[0].name, "a@d");
        assert!((out.submitters[0].share - 0.75).abs() < 1e-12);
        assert!((out.submitters[0].limit - 6.0).abs() < 1e-12);
        // Served in priority order: a's first match comes first.
        assert_eq!(out.matches[0].submitter, "a@d");
    }

    #[test]
    fn an_unused_share_goes_to_the_others_in_a_later_spin() {
        let inp = input(
            (1..=10).map(|i| slot(&format!("s{i}"), "")).collect(),
            vec![
                sub("a@d", 1.0, vec![(1, job(""), 2)]),
                sub("b@d", 1.0, vec![(2, job(""), 100)]),
                sub("c@d", 1.0, vec![(3, job(""), 100)]),
            ],
        );
        let out = negotiate(&inp, &mut ev());
        // Spin 1: 10/3 each: a takes 2 (all it wants), b and c 3 each.
        // Spin 2: b and c have slices of 5 (less their 3): b, first in
        // order, takes the 2 left, as HTCondor's slices are of the whole
        // pool.
        assert_eq!(count_of(&out, "a@d"), 2);
        assert_eq!(count_of(&out, "b@d"), 5);
        assert_eq!(count_of(&out, "c@d"), 3);
        assert_eq!(out.spins, 2);
    }

    #[test]
    fn fractions_of_slices_are_handed_out_in_a_last_round() {
        // 10 slots, 3 equal submitters: 3 each within the slices (3.33),
        // the last slot to the first in order.
        let inp = input(
            (1..=10).map(|i| slot(&format!("s{i}"), "")).collect(),
            vec![
                sub("c@d", 1.0, vec![(3, job(""), 100)]),
                sub("b@d", 1.0, vec![(2, job(""), 100)]),
                sub("a@d", 1.0, vec![(1, job(""), 100)]),
            ],
        );
        let out = negotiate(&inp, &mut ev());
        assert_eq!(count_of(&out, "a@d"), 4);
        assert_eq!(count_of(&out, "b@d"), 3);
        assert_eq!(count_of(&out, "c@d"), 3);
        assert_eq!(out.matches.len(), 10);
    }

    #[test]
    fn resources_in_use_count_against_the_slice() {
        // b already runs 2 of the 10 slots; equal priorities: 5 each, so
        // b gets 3 of the 8 idle ones and a 5.
        let mut slots: Vec<ClassAd> = (1..=8).map(|i| slot(&format!("s{i}"), "")).collect();
        slots.push(busy("r1", "b@d", NOW - 1, ""));
        slots.push(busy("r2", "b@d", NOW - 1, ""));
        let inp = input(
            slots,
            vec![
                sub("a@d", 1.0, vec![(1, job(""), 100)]),
                sub("b@d", 1.0, vec![(2, job(""), 100)]),
            ],
        );
        let out = negotiate(&inp, &mut ev());
        assert_eq!(count_of(&out, "a@d"), 5);
        assert_eq!(count_of(&out, "b@d"), 3);
        assert!((out.pool_weight - 10.0).abs() < 1e-12);
    }

    #[test]
    fn slot_weights_count_cpus() {
        // A 4-CPU slot weighs 4: with a slice of 3 it goes in the last
        // round, after the 1-CPU ones.
        let inp = input(
            vec![
                slot("big", "Cpus = 4; Memory = 100"),
                slot("s1", ""),
                slot("s2", ""),
            ],
            vec![
                sub("a@d", 1.0, vec![(1, job(""), 100)]),
                sub("b@d", 1.0, vec![(2, job("RequestMemory = 2000"), 100)]),
            ],
        );
        let out = negotiate(&inp, &mut ev());
        assert!((out.pool_weight - 6.0).abs() < 1e-12);
        // b matches nothing (memory); a: s1, s2 within its slice of 3,
        // then "big" in the last round.
        assert_eq!(names(&inp, &out), ["a@d:1:s1", "a@d:1:s2", "a@d:1:big"]);
    }

    #[test]
    fn a_request_that_fits_nothing_does_not_block_the_next() {
        let inp = input(
            vec![slot("s1", "")],
            vec![sub(
                "u@d",
                0.5,
                vec![(1, job("RequestMemory = 1000000"), 2), (2, job(""), 1)],
            )],
        );
        let out = negotiate(&inp, &mut ev());
        assert_eq!(names(&inp, &out), ["u@d:2:s1"]);
        assert_eq!(out.unmatched[0].autocluster, 1);
        assert_eq!(out.unmatched[0].count, 2);
    }

    #[test]
    fn partitionable_slot_is_shared_until_its_resources_run_out() {
        let p = slot(
            "p",
            "PartitionableSlot = true; Cpus = 4; Memory = 1000; Disk = 1000",
        );
        let inp = input(
            vec![p],
            vec![sub(
                "u@d",
                0.5,
                vec![(1, job("RequestCpus = 1; RequestMemory = 300"), 5)],
            )],
        );
        let out = negotiate(&inp, &mut ev());
        assert_eq!(out.matches.len(), 3, "memory for three jobs only");
        let mem: Vec<String> = out
            .matches
            .iter()
            .map(|m| m.slot_ad.lookup("Memory").unwrap().to_string())
            .collect();
        assert_eq!(mem, ["1000", "700", "400"]);
        assert_eq!(out.unmatched[0].count, 2);
        assert!(out.matches.iter().all(|m| (m.weight - 1.0).abs() < 1e-12));
    }

    #[test]
    fn slot_states_are_read_in_any_case_and_only_unclaimed_slots_are_offered() {
        let input = input(
            vec![
                slot("lower", "State = \"unclaimed\""),
                slot("nostate", "State = undefined"),
                slot("owner", "State = \"Owner\""),
                slot("matched", "State = \"Matched\""),
                slot("backfill", "State = \"Backfill\""),
                slot("drained", "State = \"Drained\""),
                slot("unknown", "State = \"Unclaimedish\""),
                slot("number", "State = 2"),
            ],
            vec![sub("u@d", 0.5, vec![(1, job(""), 8)])],
        );
        let out = negotiate(&input, &mut ev());
        let mut got = names(&input, &out);
        got.sort();
        assert_eq!(got, ["u@d:1:lower", "u@d:1:nostate"]);
    }

    #[test]
    fn usage_counts_claimed_and_preempting_slots_in_any_case() {
        let slots = vec![
            busy("a", "x@d", NOW, "State = \"CLAIMED\""),
            busy(
                "b",
                "x@d",
                NOW,
                "State = \"Preempting\"; Activity = \"Vacating\"",
            ),
            busy("c", "y@d", NOW, "State = \"Owner\""),
            busy("d", "z@d", NOW, "State = \"Matched\""),
        ];
        let u = usage_from_slots(&mut ev(), &slots, &Policy::default());
        assert_eq!(u.keys().collect::<Vec<_>>(), ["x@d"]);
        assert_eq!(u["x@d"].slots, 2.0);
    }

    #[test]
    fn usage_is_counted_from_claimed_slots() {
        let slots = vec![
            busy("a", "x@d", NOW, "Cpus = 2"),
            busy("b", "x@d", NOW, "SlotWeight = 5"),
            busy("c", "y@d", NOW, ""),
            slot("d", ""),
        ];
        let u = usage_from_slots(&mut ev(), &slots, &Policy::default());
        assert_eq!(
            u["x@d"],
            InUse {
                slots: 2.0,
                weighted: 7.0
            }
        );
        assert_eq!(
            u["y@d"],
            InUse {
                slots: 1.0,
                weighted: 1.0
            }
        );
        assert_eq!(u.len(), 2);
    }

    #[test]
    fn policy_from_knobs() {
        let knobs: BTreeMap<&str, &str> = [
            ("NEGOTIATOR_CONSIDER_PREEMPTION", "False"),
            ("PREEMPTION_REQUIREMENTS", "RemoteUserPrio > 2"),
            ("NEGOTIATOR_POST_JOB_RANK", ""),
        ]
        .into_iter()
        .collect();
        let p = Policy::from_knobs(|n| knobs.get(n).map(|s| s.to_string())).unwrap();
        assert!(!p.consider_preemption);
        assert_eq!(p.preemption_requirements.to_string(), "RemoteUserPrio > 2");
        assert!(p.post_job_rank.is_none());
        assert!(p.pre_job_rank.is_some());
        let bad = Policy::from_knobs(|n| (n == "PREEMPTION_RANK").then(|| "1 +".to_string()));
        assert_eq!(bad.unwrap_err().knob, "PREEMPTION_RANK");
    }

    #[test]
    fn significant_attributes_come_from_slot_policy() {
        let s = slot(
            "s",
            "Start = IsLocal && TARGET.ImageSize < 10; IsLocal = Department == \"physics\"; Rank = TARGET.Prio",
        );
        assert_eq!(
            significant_attributes(&[s]),
            ["department", "imagesize", "prio"]
        );
    }
}
