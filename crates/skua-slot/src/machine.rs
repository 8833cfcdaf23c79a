//! The machine: its slots, their claims and their ads.

use std::collections::BTreeMap;

use classad::{ClassAd, EvalOptions, Evaluator, Expr, Value};

use crate::layout::{self, SlotDef};
use crate::state::{self, Action, Activity, Event, HoldRequest, Policy, State, Status, Timeouts};
use crate::{MachineFacts, SlotError};

/// The startd's configuration, read once from the knobs.
#[derive(Clone, Debug)]
pub struct StartdConfig {
    /// The slots at start.
    pub slots: Vec<SlotDef>,
    /// `NUM_CPUS`, `MEMORY` (MB), disk (KB): the `Total*` attributes.
    pub total_cpus: i64,
    pub total_memory_mb: i64,
    pub total_disk_kb: i64,
    /// `START` (default `true`).
    pub start: Expr,
    /// `RANK` (default `0`).
    pub rank: Expr,
    /// `IS_OWNER` (default `false`).
    pub is_owner: Expr,
    /// The policy expressions of each slot (by `SlotID`), `SLOT<N>_`
    /// prefixed knobs first.
    pub policies: BTreeMap<u32, PolicyExprs>,
    /// `STARTD_ATTRS` and `STARTD_EXPRS`: knob name and its value as an
    /// expression.
    pub extra_attrs: Vec<(String, Expr)>,
    /// `STARTD_JOB_ATTRS`: attributes of the running job copied into the
    /// slot ad.
    pub job_attrs: Vec<String>,
    /// `STARTD_LATCH_EXPRS`: name and expression; the ad carries
    /// `<name>Value` and `<name>Time` (when the value last changed).
    pub latches: Vec<(String, Expr)>,
    pub timeouts: Timeouts,
    /// `CLAIM_WORKLIFE`: no new activation after a claim is this old
    /// (seconds); negative: no limit.
    pub claim_worklife: i64,
    /// `MachineMaxVacateTime` evaluated without a job (seconds), the
    /// starter's grace when the slot's expression does not evaluate.
    pub max_vacate_secs: i64,
    /// `POLLING_INTERVAL` (seconds): how often the policy is evaluated.
    pub polling_interval: i64,
    /// `ALIVE_INTERVAL` (seconds, HTCondor's default 300): the keep-alive
    /// interval assumed for a claim whose schedd did not say its own.
    pub alive_interval: i64,
    /// `MAX_CLAIM_ALIVES_MISSED` (default 6): a claim without a running
    /// job's `JobLeaseDuration` lasts this many alive intervals without a
    /// keep-alive.
    pub max_claim_alives_missed: i64,
}

/// The policy knobs: knob name, slot ad attribute, HTCondor's default,
/// whether a `<KNOB>_VANILLA` variant applies to vanilla jobs.
pub const POLICY_KNOBS: &[(&str, &str, &str, bool)] = &[
    ("START", "Start", "true", false),
    ("RANK", "Rank", "0", false),
    ("IS_OWNER", "IsOwner", "false", false),
    ("WANT_SUSPEND", "WANT_SUSPEND", "false", true),
    ("SUSPEND", "Suspend", "false", true),
    ("CONTINUE", "Continue", "true", true),
    ("PREEMPT", "Preempt", "false", true),
    ("WANT_VACATE", "WANT_VACATE", "true", true),
    ("KILL", "Kill", "false", true),
    ("WANT_HOLD", "WANT_HOLD", "false", false),
    ("WANT_HOLD_REASON", "WANT_HOLD_REASON", "undefined", false),
    ("WANT_HOLD_SUBCODE", "WANT_HOLD_SUBCODE", "undefined", false),
    ("MAXJOBRETIREMENTTIME", "MaxJobRetirementTime", "0", false),
    ("MachineMaxVacateTime", "MachineMaxVacateTime", "600", false),
];

/// One slot's policy expressions, by slot ad attribute: the expression
/// and its `_VANILLA` variant.
#[derive(Clone, Debug, Default)]
pub struct PolicyExprs {
    pub exprs: Vec<(&'static str, Expr, Option<Expr>)>,
}

impl PolicyExprs {
    /// The expression of `attr` for a job of `universe` (5: vanilla).
    pub fn get(&self, attr: &str, vanilla: bool) -> Option<&Expr> {
        self.exprs
            .iter()
            .find(|(a, _, _)| *a == attr)
            .map(|(_, e, v)| if vanilla { v.as_ref().unwrap_or(e) } else { e })
    }
}

fn cfg_err(knob: &str, message: impl Into<String>) -> SlotError {
    SlotError::Config {
        knob: knob.to_string(),
        message: message.into(),
    }
}

impl StartdConfig {
    /// Reads the configuration through `knob` (expanded values; `None`
    /// when undefined).
    pub fn from_knobs(
        knob: &dyn Fn(&str) -> Option<String>,
        facts: &MachineFacts,
    ) -> Result<StartdConfig, SlotError> {
        let lc = layout::layout_config(knob, facts.cpus, facts.memory_mb, facts.disk_kb)?;
        let slots = layout::layout(&lc)?;
        let defined = |name: &str| knob(name).filter(|v| !v.trim().is_empty());
        let expr = |name: &str, default: &str| -> Result<Expr, SlotError> {
            let text = defined(name).unwrap_or_else(|| default.to_string());
            classad::parse_expr(&text)
                .map_err(|e| cfg_err(name, format!("`{text}` is not a ClassAd expression: {e}")))
        };
        let int = |name: &str, default: i64| -> Result<i64, SlotError> {
            match defined(name) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse()
                    .map_err(|_| cfg_err(name, format!("`{v}` is not an integer"))),
            }
        };
        let list_of = |name: &str| -> Vec<String> {
            defined(name)
                .unwrap_or_default()
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect()
        };
        let mut policies = BTreeMap::new();
        for d in &slots {
            let mut exprs = Vec::new();
            for (knob_name, attr, default, has_vanilla) in POLICY_KNOBS {
                let per_slot = format!("SLOT{}_{knob_name}", d.id);
                let (name, text) = match defined(&per_slot) {
                    Some(t) => (per_slot, t),
                    None => (
                        knob_name.to_string(),
                        defined(knob_name).unwrap_or_else(|| default.to_string()),
                    ),
                };
                let parse = |name: &str, text: &str| -> Result<Expr, SlotError> {
                    match classad::parse_expr(text) {
                        Ok(e) => Ok(e),
                        // a reason written as plain text
                        Err(_) if *attr == "WANT_HOLD_REASON" => {
                            Ok(Expr::Lit(Value::from(text.trim())))
                        }
                        Err(e) => Err(cfg_err(
                            name,
                            format!("`{text}` is not a ClassAd expression: {e}"),
                        )),
                    }
                };
                let e = parse(&name, &text)?;
                let vanilla = if *has_vanilla {
                    let vname = format!("{knob_name}_VANILLA");
                    match defined(&vname) {
                        Some(t) => Some(parse(&vname, &t)?),
                        None => None,
                    }
                } else {
                    None
                };
                exprs.push((*attr, e, vanilla));
            }
            policies.insert(d.id, PolicyExprs { exprs });
        }
        let mut latches = Vec::new();
        for name in list_of("STARTD_LATCH_EXPRS") {
            if let Some(text) = defined(&name) {
                let e = classad::parse_expr(&text).map_err(|e| {
                    cfg_err(
                        &name,
                        format!(
                            "(in STARTD_LATCH_EXPRS) `{text}` is not a ClassAd expression: {e}"
                        ),
                    )
                })?;
                if !latches
                    .iter()
                    .any(|(n, _): &(String, Expr)| n.eq_ignore_ascii_case(&name))
                {
                    latches.push((name, e));
                }
            }
        }
        let max_vacate_secs = match defined("MachineMaxVacateTime")
            .and_then(|t| classad::parse_expr(&t).ok())
            .map(|e| evaluator(0).eval(&e, None, None))
        {
            Some(Value::Int(i)) => i.max(0),
            Some(Value::Real(r)) if r.is_finite() => (r as i64).max(0),
            _ => 600,
        };
        let mut extra_attrs = Vec::new();
        for list in ["STARTD_ATTRS", "STARTD_EXPRS"] {
            let Some(names) = defined(list) else {
                continue;
            };
            for name in names
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|n| !n.is_empty())
            {
                let Some(text) = defined(name) else {
                    continue;
                };
                let e = classad::parse_expr(&text).map_err(|e| {
                    cfg_err(
                        name,
                        format!("(in {list}) `{text}` is not a ClassAd expression: {e}"),
                    )
                })?;
                extra_attrs.push((name.to_string(), e));
            }
        }
        Ok(StartdConfig {
            slots,
            total_cpus: lc.cpus,
            total_memory_mb: lc.memory_mb,
            total_disk_kb: lc.disk_kb,
            start: expr("START", "true")?,
            rank: expr("RANK", "0")?,
            is_owner: expr("IS_OWNER", "false")?,
            policies,
            extra_attrs,
            job_attrs: list_of("STARTD_JOB_ATTRS"),
            latches,
            timeouts: Timeouts {
                match_timeout: int("MATCH_TIMEOUT", 120)?,
                max_claim_idle: int("MAX_CLAIM_IDLE", 600)?,
                killing_timeout: int("KILLING_TIMEOUT", 30)?.max(0),
            },
            claim_worklife: int("CLAIM_WORKLIFE", -1)?,
            max_vacate_secs,
            polling_interval: int("POLLING_INTERVAL", 5)?.max(1),
            alive_interval: int("ALIVE_INTERVAL", 300)?.max(1),
            max_claim_alives_missed: int("MAX_CLAIM_ALIVES_MISSED", 6)?.max(1),
        })
    }
}

/// Static, partitionable or dynamic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    Static,
    Partitionable,
    Dynamic,
}

impl SlotKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SlotKind::Static => "Static",
            SlotKind::Partitionable => "Partitionable",
            SlotKind::Dynamic => "Dynamic",
        }
    }
}

/// A job running under a claim.
#[derive(Clone, Debug)]
pub struct RunningJob {
    pub job_ad: ClassAd,
    /// `"C.P"`.
    pub job_id: String,
    pub shadow_addr: String,
    pub started: i64,
}

/// A match or a claim on a slot.
#[derive(Clone, Debug)]
pub struct Claim {
    pub id: String,
    /// `user@uiddomain`.
    pub submitter: String,
    pub schedd_addr: String,
    pub matched_at: i64,
    /// When the schedd claimed it (`None`: only matched).
    pub claimed_at: Option<i64>,
    /// The job ad of the claim or of the last activation.
    pub job_ad: Option<ClassAd>,
    pub job: Option<RunningJob>,
    /// When the claim's schedd last renewed its lease (claimed it,
    /// activated it, sent a keep-alive).
    pub renewed: i64,
    /// The keep-alive interval the schedd announced when it claimed the
    /// slot (seconds; 0: none, `ALIVE_INTERVAL` applies).
    pub alive_interval: i64,
}

impl Claim {
    /// A match the negotiator just made, not yet claimed.
    fn matched(id: &str, submitter: &str, schedd_addr: &str, now: i64) -> Claim {
        Claim {
            id: id.to_string(),
            submitter: submitter.to_string(),
            schedd_addr: schedd_addr.to_string(),
            matched_at: now,
            claimed_at: None,
            job_ad: None,
            job: None,
            renewed: now,
            alive_interval: 0,
        }
    }
}

/// One slot.
#[derive(Clone, Debug)]
pub struct Slot {
    /// `slotN@host` or `slotN_M@host`.
    pub name: String,
    pub id: u32,
    /// `M` of a dynamic slot.
    pub sub_id: Option<u32>,
    pub type_id: u32,
    pub kind: SlotKind,
    /// What the slot has now (a partitionable slot: what it has left).
    pub cpus: i64,
    pub memory_mb: i64,
    pub disk_kb: i64,
    /// What a partitionable slot had at the start.
    pub total: (i64, i64, i64),
    pub status: Status,
    pub claim: Option<Claim>,
    /// The matches waiting for a claim on a partitionable slot (it stays
    /// Unclaimed: each claim carves a dynamic slot).
    pub pending: Vec<Claim>,
    /// A match preempting the slot's claim, waiting for its job to go.
    pub preempting: Option<Claim>,
    /// `STARTD_LATCH_EXPRS`: the last value and when it last changed.
    pub latches: BTreeMap<String, (Value, i64)>,
    next_child: u32,
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No such slot or claim id.
    NotFound(String),
    /// The slot's state or policy does not allow it (a stale match).
    Conflict(String),
    /// The request itself is malformed.
    BadRequest(String),
    /// Not yet: ask again later (a claim for a slot still being preempted).
    Unavailable(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotFound(m)
            | Refusal::Conflict(m)
            | Refusal::BadRequest(m)
            | Refusal::Unavailable(m) => f.write_str(m),
        }
    }
}

/// What the daemon needs to start a starter.
#[derive(Clone, Debug)]
pub struct Launch {
    pub slot: String,
    pub slot_ad: ClassAd,
    pub max_vacate_secs: i64,
}

/// Compares two claim ids in time that does not depend on where they
/// differ.
pub fn claim_ids_equal(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn evaluator(now: i64) -> Evaluator {
    Evaluator::new(EvalOptions {
        now: now as f64,
        ..EvalOptions::default()
    })
}

/// The job's `RequestCpus`, `RequestMemory` (MB) and `RequestDisk` (KB),
/// evaluated in the job ad with the slot as TARGET, rounded up to
/// integers; a missing or non-numeric request counts as 1.
pub fn job_requests(job_ad: &ClassAd, slot_ad: &ClassAd, now: i64) -> (i64, i64, i64) {
    let mut ev = evaluator(now);
    let mut get = |name: &str| -> i64 {
        match ev.eval_attr(name, job_ad, Some(slot_ad)) {
            Value::Int(i) => i.max(1),
            Value::Real(r) if r.is_finite() => (r.ceil() as i64).max(1),
            _ => 1,
        }
    };
    (get("RequestCpus"), get("RequestMemory"), get("RequestDisk"))
}

/// Whether `slot_ad` accepts `job_ad` now: START (slot as MY, job as
/// TARGET) is true, both Requirements hold, and for a partitionable slot
/// the job's requests fit in what it has left. `Err` says why not.
pub fn check_claim(slot_ad: &ClassAd, job_ad: &ClassAd, now: i64) -> Result<(), String> {
    let mut ev = evaluator(now);
    let start = ev.eval_attr("Start", slot_ad, Some(job_ad));
    if !start.is_true() {
        return Err(format!("the slot's START is {start:?} for this job"));
    }
    let m = classad::symmetric_match(&mut ev, job_ad, slot_ad);
    if !m.job_requirements_ok {
        return Err("the job's Requirements do not hold against the slot".into());
    }
    if !m.machine_requirements_ok {
        return Err("the slot's Requirements do not hold against the job".into());
    }
    if ev.eval_attr("PartitionableSlot", slot_ad, None).is_true() {
        let (c, m, d) = job_requests(job_ad, slot_ad, now);
        let mut have = |n: &str| ev.eval_attr(n, slot_ad, None).as_int().unwrap_or(0);
        let (hc, hm, hd) = (have("Cpus"), have("Memory"), have("Disk"));
        if c > hc || m > hm || d > hd {
            return Err(format!(
                "the job asks for {c} CPUs, {m} MB, {d} KB; the slot has {hc} CPUs, {hm} MB, {hd} KB left"
            ));
        }
    }
    Ok(())
}

/// The machine's slots.
#[derive(Clone, Debug)]
pub struct Machine {
    pub facts: MachineFacts,
    pub config: StartdConfig,
    pub slots: Vec<Slot>,
    /// The startd's address, `<ip:port>`.
    pub address: String,
    /// Attributes from STARTD_CRON scripts (they override measured ones).
    pub cron: BTreeMap<String, Expr>,
    /// Attributes from `STARTD_ATTRIBUTE_FILE`, read at each poll (they
    /// override measured and cron ones).
    pub overrides: BTreeMap<String, Expr>,
}

impl Machine {
    /// The machine at `now`, every slot Unclaimed.
    pub fn new(facts: MachineFacts, config: StartdConfig, now: i64) -> Machine {
        let slots = config
            .slots
            .iter()
            .map(|d| Slot {
                name: format!("slot{}@{}", d.id, facts.hostname),
                id: d.id,
                sub_id: None,
                type_id: d.type_id,
                kind: if d.partitionable {
                    SlotKind::Partitionable
                } else {
                    SlotKind::Static
                },
                cpus: d.cpus,
                memory_mb: d.memory_mb,
                disk_kb: d.disk_kb,
                total: (d.cpus, d.memory_mb, d.disk_kb),
                status: Status::new(now),
                claim: None,
                pending: Vec::new(),
                preempting: None,
                latches: BTreeMap::new(),
                next_child: 1,
            })
            .collect();
        Machine {
            facts,
            config,
            slots,
            address: String::new(),
            cron: BTreeMap::new(),
            overrides: BTreeMap::new(),
        }
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.name == name)
    }

    /// The slot holding claim `id` (claimed or matched), or the
    /// partitionable slot with a pending match of that id.
    fn find_claim(&self, id: &str) -> Option<(usize, bool)> {
        let mut found = None;
        for (i, s) in self.slots.iter().enumerate() {
            if s.claim.as_ref().is_some_and(|c| claim_ids_equal(&c.id, id)) {
                found = Some((i, false));
            }
            if s.pending.iter().any(|c| claim_ids_equal(&c.id, id)) {
                found = Some((i, true));
            }
        }
        found
    }

    /// The slot whose claim the match `id` is preempting.
    fn find_preempting(&self, id: &str) -> Option<usize> {
        self.slots.iter().position(|s| {
            s.preempting
                .as_ref()
                .is_some_and(|c| claim_ids_equal(&c.id, id))
        })
    }

    fn being_preempted() -> Refusal {
        Refusal::Unavailable("being preempted: the slot's current job is leaving; ask again".into())
    }

    /// The state of the slot holding claim `id` and the job whose starter
    /// runs under it (the schedd's keep-alive, `/startd/alive`).
    pub fn claim_status(&self, id: &str) -> Result<(String, Status, Option<String>), Refusal> {
        if self.find_claim(id).is_none() && self.find_preempting(id).is_some() {
            return Err(Self::being_preempted());
        }
        let (i, pending) = self.find_claim(id).ok_or_else(Self::not_found)?;
        let slot = &self.slots[i];
        let job = if pending {
            None
        } else {
            slot.claim
                .as_ref()
                .and_then(|c| c.job.as_ref())
                .map(|j| j.job_id.clone())
        };
        Ok((slot.name.clone(), slot.status, job))
    }

    /// The schedd's keep-alive for claim `id` (`/startd/alive`): renews
    /// the claim's lease and returns what [`Machine::claim_status`] does.
    pub fn keep_alive(
        &mut self,
        id: &str,
        now: i64,
    ) -> Result<(String, Status, Option<String>), Refusal> {
        let status = self.claim_status(id)?;
        self.renew(id, now);
        Ok(status)
    }

    /// Renews the lease of claim `id` (a claimed claim) at `now`.
    fn renew(&mut self, id: &str, now: i64) {
        if let Some((i, false)) = self.find_claim(id) {
            if let Some(c) = self.slots[i].claim.as_mut() {
                c.renewed = c.renewed.max(now);
            }
        }
    }

    /// Records the keep-alive interval the schedd announced for claim
    /// `id` (seconds; 0 or less: none).
    pub fn set_alive_interval(&mut self, id: &str, secs: i64) {
        if let Some((i, false)) = self.find_claim(id) {
            if let Some(c) = self.slots[i].claim.as_mut() {
                c.alive_interval = secs.max(0);
            }
        }
    }

    /// The length of the lease of slot `i`'s claim, in seconds (`None`:
    /// no claimed claim). HTCondor's rule: the running job's
    /// `JobLeaseDuration` when it is defined and positive; otherwise
    /// `MAX_CLAIM_ALIVES_MISSED` keep-alive intervals (the schedd's, or
    /// `ALIVE_INTERVAL` when it announced none).
    pub fn claim_lease(&self, i: usize, now: i64) -> Option<i64> {
        let c = self.slots.get(i)?.claim.as_ref()?;
        c.claimed_at?;
        let job_lease = c.job.as_ref().and_then(|j| {
            match evaluator(now).eval_attr("JobLeaseDuration", &j.job_ad, None) {
                Value::Int(n) if n > 0 => Some(n),
                Value::Real(r) if r.is_finite() && r >= 1.0 => Some(r as i64),
                _ => None,
            }
        });
        let interval = if c.alive_interval > 0 {
            c.alive_interval
        } else {
            self.config.alive_interval
        };
        Some(
            job_lease
                .unwrap_or_else(|| self.config.max_claim_alives_missed.saturating_mul(interval)),
        )
    }

    /// Drops the claims whose lease ran out at `now` (their jobs are
    /// killed). Each expiry is announced by [`Action::LeaseExpired`]
    /// before the actions carrying it out.
    fn expire_leases(&mut self, now: i64) -> Vec<(String, Action)> {
        let mut out = Vec::new();
        let names: Vec<String> = self.slots.iter().map(|s| s.name.clone()).collect();
        for name in names {
            let Some(i) = self.index(&name) else { continue };
            let Some(lease) = self.claim_lease(i, now) else {
                continue;
            };
            let s = &self.slots[i];
            let expired = s.claim.as_ref().is_some_and(|c| now - c.renewed >= lease);
            let killing = s.status.state == State::Preempting && s.status.starter_killed;
            if !expired || killing {
                continue;
            }
            let before = s.status;
            let Ok(actions) = self.apply(i, Event::LeaseExpired, now) else {
                continue;
            };
            if self.slots.get(i).is_some_and(|s| s.status == before) && actions.is_empty() {
                continue;
            }
            out.push((name.clone(), Action::LeaseExpired { lease_secs: lease }));
            out.extend(self.settle(i, actions, now));
        }
        out
    }

    fn not_found() -> Refusal {
        Refusal::NotFound("no such claim".into())
    }

    fn apply(&mut self, i: usize, event: Event, now: i64) -> Result<Vec<Action>, Refusal> {
        let policy = if event == Event::Tick {
            self.policy(i, now)
        } else {
            Policy::default()
        };
        let (status, actions) = state::step(
            self.slots[i].status,
            &policy,
            event,
            now,
            &self.config.timeouts,
        )
        .map_err(|r| Refusal::Conflict(r.0))?;
        self.slots[i].status = status;
        Ok(actions)
    }

    /// The running job's ad of slot `i`.
    fn job_ad(&self, i: usize) -> Option<&ClassAd> {
        self.slots[i]
            .claim
            .as_ref()
            .and_then(|c| c.job.as_ref())
            .map(|j| &j.job_ad)
    }

    /// The owner's policy of slot `i` at `now`: its expressions evaluated
    /// with the slot ad as MY and the running job (if any) as TARGET.
    pub fn policy(&self, i: usize, now: i64) -> Policy {
        let ad = self.slot_ad(i, now);
        let job = self.job_ad(i);
        let mut ev = evaluator(now);
        let mut truth = |attr: &str| ev.eval_attr(attr, &ad, job).is_true();
        let is_owner = truth("IsOwner");
        let want_suspend = truth("WANT_SUSPEND");
        let suspend = truth("Suspend");
        let continue_ = truth("Continue");
        let preempt = truth("Preempt");
        let want_vacate = truth("WANT_VACATE");
        let kill = truth("Kill");
        let want_hold = truth("WANT_HOLD");
        // START "locally" false: with the claim's job ad when the slot is
        // claimed (as HTCondor evaluates it against the claim's request),
        // else with no job at all
        let claim_job = self.slots[i].claim.as_ref().and_then(|c| c.job_ad.as_ref());
        let start_locally_false = matches!(
            ev.eval_attr("Start", &ad, job.or(claim_job)),
            Value::Bool(false)
        );
        let number = |v: Value| -> Option<i64> {
            match v {
                Value::Int(i) => Some(i),
                Value::Real(r) if r.is_finite() => Some(r as i64),
                _ => None,
            }
        };
        let mut retirement = number(ev.eval_attr("MaxJobRetirementTime", &ad, job)).unwrap_or(0);
        let mut vacate = number(ev.eval_attr("MachineMaxVacateTime", &ad, job))
            .unwrap_or(self.config.max_vacate_secs)
            .max(0);
        if let Some(j) = job {
            // a job may ask for less, never for more
            if let Some(r) = number(ev.eval_attr("MaxJobRetirementTime", j, Some(&ad))) {
                retirement = retirement.min(r);
            }
            if let Some(v) = number(ev.eval_attr("JobMaxVacateTime", j, Some(&ad))) {
                vacate = vacate.min(v.max(0));
            }
        }
        let want_hold = want_hold.then(|| HoldRequest {
            reason: ev
                .eval_attr("WANT_HOLD_REASON", &ad, job)
                .as_string()
                .unwrap_or_else(|| "The startd put the job on hold (WANT_HOLD)".to_string()),
            subcode: number(ev.eval_attr("WANT_HOLD_SUBCODE", &ad, job)).unwrap_or(0),
        });
        let all_drained = !self.slots.iter().any(|s| {
            matches!(
                s.status.state,
                State::Claimed | State::Matched | State::Preempting
            )
        });
        Policy {
            is_owner,
            start_locally_false,
            want_suspend,
            suspend,
            continue_,
            preempt,
            want_vacate,
            kill,
            want_hold,
            max_job_retirement_time: retirement,
            max_vacate_time: vacate,
            all_drained,
        }
    }

    /// Carries out the claim drops among `actions` (removing a dynamic
    /// slot and giving its resources back); returns the others, with the
    /// slot's name.
    fn settle(&mut self, i: usize, actions: Vec<Action>, now: i64) -> Vec<(String, Action)> {
        let name = self.slots[i].name.clone();
        let mut out = Vec::new();
        let promote = actions.contains(&Action::PromoteClaim);
        for a in actions {
            if a == Action::PromoteClaim {
                let s = &mut self.slots[i];
                s.claim = s.preempting.take().map(|mut c| {
                    c.matched_at = now;
                    c
                });
                out.push((name.clone(), a));
                continue;
            }
            if a == Action::DropClaim {
                self.slots[i].claim = None;
                if self.slots[i].kind == SlotKind::Dynamic && !promote {
                    let (id, c, m, d) = {
                        let s = &self.slots[i];
                        (s.id, s.cpus, s.memory_mb, s.disk_kb)
                    };
                    if let Some(p) = self
                        .slots
                        .iter_mut()
                        .find(|p| p.id == id && p.kind == SlotKind::Partitionable)
                    {
                        p.cpus += c;
                        p.memory_mb += m;
                        p.disk_kb += d;
                    }
                    self.slots.remove(i);
                    out.push((name.clone(), a));
                    return out;
                }
            }
            out.push((name.clone(), a));
        }
        out
    }

    /// The negotiator matched `slot` under `claim_id`.
    pub fn match_notice(
        &mut self,
        slot: &str,
        claim_id: &str,
        submitter: &str,
        schedd_addr: &str,
        now: i64,
    ) -> Result<(), Refusal> {
        if claim_id.len() < 16 {
            return Err(Refusal::BadRequest(
                "a claim id has at least 16 characters".into(),
            ));
        }
        let i = self
            .index(slot)
            .ok_or_else(|| Refusal::NotFound(format!("no slot {slot}")))?;
        if self.find_claim(claim_id).is_some() || self.find_preempting(claim_id).is_some() {
            return Err(Refusal::Conflict("this claim id is already in use".into()));
        }
        let claim = Claim::matched(claim_id, submitter, schedd_addr, now);
        match self.slots[i].kind {
            SlotKind::Partitionable => {
                let s = &self.slots[i];
                if s.status.state != State::Unclaimed {
                    return Err(Refusal::Conflict(format!(
                        "stale match: {} is {}",
                        s.name,
                        s.status.state.as_str()
                    )));
                }
                self.slots[i].pending.push(claim);
            }
            SlotKind::Static => {
                self.apply(i, Event::Match, now)
                    .map_err(|r| Refusal::Conflict(format!("stale match: {r}")))?;
                self.slots[i].claim = Some(claim);
            }
            SlotKind::Dynamic => {
                return Err(Refusal::Conflict(format!(
                    "{slot} is a dynamic slot: match its partitionable slot"
                )))
            }
        }
        Ok(())
    }

    /// The negotiator matched the Claimed `slot` under `claim_id`,
    /// preempting its claim (rank or priority preemption): the running
    /// job retires (MaxJobRetirementTime), is vacated, the old claim is
    /// dropped and the slot becomes Matched to `claim_id`. Refused when
    /// the slot is already being preempted. A slot that became Unclaimed
    /// meanwhile takes it as an ordinary match.
    pub fn preempting_match(
        &mut self,
        slot: &str,
        claim_id: &str,
        submitter: &str,
        schedd_addr: &str,
        now: i64,
    ) -> Result<Vec<(String, Action)>, Refusal> {
        let i = self
            .index(slot)
            .ok_or_else(|| Refusal::NotFound(format!("no slot {slot}")))?;
        if self.slots[i].status.state != State::Claimed
            || self.slots[i].kind == SlotKind::Partitionable
        {
            return self
                .match_notice(slot, claim_id, submitter, schedd_addr, now)
                .map(|()| Vec::new());
        }
        if claim_id.len() < 16 {
            return Err(Refusal::BadRequest(
                "a claim id has at least 16 characters".into(),
            ));
        }
        if self.find_claim(claim_id).is_some() || self.find_preempting(claim_id).is_some() {
            return Err(Refusal::Conflict("this claim id is already in use".into()));
        }
        let actions = self.apply(i, Event::PreemptClaim, now)?;
        self.slots[i].preempting = Some(Claim::matched(claim_id, submitter, schedd_addr, now));
        let mut out = self.settle(i, actions, now);
        out.extend(self.evaluate_slot_named(slot, now));
        Ok(out)
    }

    /// The owner asks for the machine back (`skua vacate`): the jobs of
    /// the named slots (all when `slots` is empty) are evicted, their
    /// claims end and the slots go to the Owner state.
    pub fn vacate(
        &mut self,
        slots: &[String],
        graceful: bool,
        now: i64,
    ) -> Result<Vec<(String, Action)>, Refusal> {
        let names = self.targets(slots)?;
        let mut out = Vec::new();
        for name in names {
            if let Some(i) = self.index(&name) {
                if self.slots[i].kind == SlotKind::Partitionable {
                    continue;
                }
                let actions = self.apply(i, Event::Vacate { graceful }, now)?;
                out.extend(self.settle(i, actions, now));
            }
        }
        Ok(out)
    }

    /// Draining starts (`cancel`: it is cancelled) on every slot.
    pub fn drain(&mut self, cancel: bool, now: i64) -> Result<Vec<(String, Action)>, Refusal> {
        let names: Vec<String> = self.slots.iter().map(|s| s.name.clone()).collect();
        let mut out = Vec::new();
        for name in names {
            if let Some(i) = self.index(&name) {
                let ev = if cancel {
                    Event::CancelDrain
                } else {
                    Event::Drain
                };
                let actions = self.apply(i, ev, now)?;
                out.extend(self.settle(i, actions, now));
            }
        }
        out.extend(self.tick(now));
        Ok(out)
    }

    /// Whether any slot is being drained.
    pub fn draining(&self) -> bool {
        self.slots.iter().any(|s| {
            s.status.state == State::Drained || s.status.retire == Some(state::Retire::Drain)
        })
    }

    /// The slot names a request names: every slot when empty; each name is
    /// a slot name (`slot1@host`), a slot's short name (`slot1`) or the
    /// host name (every slot).
    fn targets(&self, names: &[String]) -> Result<Vec<String>, Refusal> {
        if names.is_empty() {
            return Ok(self.slots.iter().map(|s| s.name.clone()).collect());
        }
        let mut out = Vec::new();
        for n in names {
            if n.eq_ignore_ascii_case(&self.facts.hostname) {
                out.extend(self.slots.iter().map(|s| s.name.clone()));
                continue;
            }
            let found: Vec<String> = self
                .slots
                .iter()
                .filter(|s| s.name == *n || s.name.split('@').next() == Some(n.as_str()))
                .map(|s| s.name.clone())
                .collect();
            if found.is_empty() {
                return Err(Refusal::NotFound(format!("no slot {n} on this machine")));
            }
            out.extend(found);
        }
        Ok(out)
    }

    /// The schedd claims the slot matched under `claim_id` for `job_ad`.
    /// Returns the claimed slot's name and ad (a dynamic slot carved from
    /// a partitionable one).
    pub fn claim(
        &mut self,
        claim_id: &str,
        job_ad: &ClassAd,
        schedd_addr: &str,
        now: i64,
    ) -> Result<(String, ClassAd), Refusal> {
        if self.find_claim(claim_id).is_none() && self.find_preempting(claim_id).is_some() {
            return Err(Self::being_preempted());
        }
        let (i, pending) = self.find_claim(claim_id).ok_or_else(Self::not_found)?;
        let ad = self.slot_ad(i, now);
        check_claim(&ad, job_ad, now)
            .map_err(|why| Refusal::Conflict(format!("stale match: {why}")))?;
        if !pending {
            self.apply(i, Event::Claim, now)
                .map_err(|r| Refusal::Conflict(format!("stale match: {r}")))?;
            let s = &mut self.slots[i];
            if let Some(c) = s.claim.as_mut() {
                c.claimed_at = Some(now);
                c.renewed = now;
                c.job_ad = Some(job_ad.clone());
                if !schedd_addr.is_empty() {
                    c.schedd_addr = schedd_addr.to_string();
                }
            }
            return Ok((s.name.clone(), self.slot_ad(i, now)));
        }
        // carve a dynamic slot
        let (c, m, d) = job_requests(job_ad, &ad, now);
        let p = &mut self.slots[i];
        let pos = p
            .pending
            .iter()
            .position(|c| claim_ids_equal(&c.id, claim_id))
            .ok_or_else(Self::not_found)?;
        let mut claim = p.pending.remove(pos);
        claim.claimed_at = Some(now);
        claim.renewed = now;
        claim.job_ad = Some(job_ad.clone());
        if !schedd_addr.is_empty() {
            claim.schedd_addr = schedd_addr.to_string();
        }
        p.cpus -= c;
        p.memory_mb -= m;
        p.disk_kb -= d;
        let sub = p.next_child;
        p.next_child += 1;
        let mut status = Status::new(now);
        status.state = State::Claimed;
        let child = Slot {
            name: format!("slot{}_{}@{}", p.id, sub, self.facts.hostname),
            id: p.id,
            sub_id: Some(sub),
            type_id: p.type_id,
            kind: SlotKind::Dynamic,
            cpus: c,
            memory_mb: m,
            disk_kb: d,
            total: (c, m, d),
            status,
            claim: Some(claim),
            pending: Vec::new(),
            preempting: None,
            latches: BTreeMap::new(),
            next_child: 1,
        };
        let name = child.name.clone();
        // dynamic slots follow their partitionable slot and its earlier children
        let mut at = i + 1;
        while at < self.slots.len() && self.slots[at].kind == SlotKind::Dynamic {
            at += 1;
        }
        self.slots.insert(at, child);
        Ok((name, self.slot_ad(at, now)))
    }

    /// Runs a job under a claim: the slot becomes Claimed/Busy and the
    /// daemon starts a starter with the returned [`Launch`].
    pub fn activate(
        &mut self,
        claim_id: &str,
        job_ad: &ClassAd,
        job_id: &str,
        shadow_addr: &str,
        now: i64,
    ) -> Result<Launch, Refusal> {
        let (i, pending) = self.find_claim(claim_id).ok_or_else(Self::not_found)?;
        if pending {
            return Err(Refusal::Conflict("the match has not been claimed".into()));
        }
        let claimed_at = self.slots[i]
            .claim
            .as_ref()
            .and_then(|c| c.claimed_at)
            .ok_or_else(|| Refusal::Conflict("the match has not been claimed".into()))?;
        if self.config.claim_worklife >= 0 && now - claimed_at > self.config.claim_worklife {
            return Err(Refusal::Conflict(format!(
                "the claim is older than CLAIM_WORKLIFE ({} s)",
                self.config.claim_worklife
            )));
        }
        // The previous job's starter has not reported yet: not now, but
        // soon (the schedd asks again).
        if self.slots[i]
            .claim
            .as_ref()
            .is_some_and(|c| c.job.is_some())
        {
            return Err(Refusal::Unavailable(
                "the claim's previous job is still running".into(),
            ));
        }
        let ad = self.slot_ad(i, now);
        check_claim(&ad, job_ad, now).map_err(Refusal::Conflict)?;
        self.apply(i, Event::Activate, now)?;
        if let Some(c) = self.slots[i].claim.as_mut() {
            c.renewed = c.renewed.max(now);
            c.job_ad = Some(job_ad.clone());
            c.job = Some(RunningJob {
                job_ad: job_ad.clone(),
                job_id: job_id.to_string(),
                shadow_addr: shadow_addr.to_string(),
                started: now,
            });
        }
        Ok(Launch {
            slot: self.slots[i].name.clone(),
            slot_ad: self.slot_ad(i, now),
            max_vacate_secs: self.policy(i, now).max_vacate_time,
        })
    }

    fn claimed(&self, claim_id: &str) -> Result<usize, Refusal> {
        match self.find_claim(claim_id) {
            Some((i, false)) => Ok(i),
            _ => Err(Self::not_found()),
        }
    }

    /// Stops the claim's job, keeping the claim.
    pub fn deactivate(
        &mut self,
        claim_id: &str,
        graceful: bool,
        now: i64,
    ) -> Result<Vec<(String, Action)>, Refusal> {
        let i = self.claimed(claim_id)?;
        self.renew(claim_id, now);
        let actions = self.apply(i, Event::Deactivate { graceful }, now)?;
        Ok(self.settle(i, actions, now))
    }

    /// Gives the claim up (a match, a claim, a pending match of a
    /// partitionable slot).
    pub fn release(&mut self, claim_id: &str, now: i64) -> Result<Vec<(String, Action)>, Refusal> {
        match self.find_claim(claim_id) {
            None => Err(Self::not_found()),
            Some((i, true)) => {
                self.slots[i]
                    .pending
                    .retain(|c| !claim_ids_equal(&c.id, claim_id));
                Ok(Vec::new())
            }
            Some((i, false)) => {
                let actions = self.apply(i, Event::Release, now)?;
                Ok(self.settle(i, actions, now))
            }
        }
    }

    /// The starter of `slot` exited.
    pub fn starter_exited(&mut self, slot: &str, now: i64) -> Vec<(String, Action)> {
        let Some(i) = self.index(slot) else {
            return Vec::new();
        };
        if let Some(c) = self.slots[i].claim.as_mut() {
            c.job = None;
        }
        match self.apply(i, Event::StarterExited, now) {
            Ok(actions) => self.settle(i, actions, now),
            Err(_) => Vec::new(),
        }
    }

    /// Time passes (every `POLLING_INTERVAL`): matches, claim leases and
    /// idle claims time out, latches are updated and every slot's policy
    /// is evaluated until it settles.
    pub fn tick(&mut self, now: i64) -> Vec<(String, Action)> {
        let timeout = self.config.timeouts.match_timeout;
        for s in &mut self.slots {
            s.pending.retain(|c| now - c.matched_at < timeout);
        }
        let mut out = self.expire_leases(now);
        self.update_latches(now);
        let names: Vec<String> = self.slots.iter().map(|s| s.name.clone()).collect();
        for name in names {
            out.extend(self.evaluate_slot_named(&name, now));
        }
        out
    }

    /// Evaluates the policy of slot `name` alone (after an event that
    /// concerns only it); [`Machine::tick`] evaluates every slot.
    pub fn evaluate_slot(&mut self, name: &str, now: i64) -> Vec<(String, Action)> {
        self.evaluate_slot_named(name, now)
    }

    /// Evaluates the policy of one slot until it settles (each transition
    /// changes the timers and states the expressions see).
    fn evaluate_slot_named(&mut self, name: &str, now: i64) -> Vec<(String, Action)> {
        let mut out = Vec::new();
        for _ in 0..8 {
            let Some(i) = self.index(name) else { break };
            let before = self.slots[i].status;
            let Ok(actions) = self.apply(i, Event::Tick, now) else {
                break;
            };
            let quiet = actions.is_empty() && self.slots[i].status == before;
            out.extend(self.settle(i, actions, now));
            if quiet {
                break;
            }
        }
        out
    }

    fn update_latches(&mut self, now: i64) {
        if self.config.latches.is_empty() {
            return;
        }
        for i in 0..self.slots.len() {
            let ad = self.slot_ad(i, now);
            let job = self.job_ad(i).cloned();
            let mut ev = evaluator(now);
            let mut values = Vec::new();
            for (name, e) in &self.config.latches {
                let v = match ev.eval(e, Some(&ad), job.as_ref()) {
                    Value::Bool(b) => Value::Int(i64::from(b)),
                    v => v,
                };
                values.push((name.clone(), v));
            }
            let latches = &mut self.slots[i].latches;
            for (name, v) in values {
                match latches.get(&name) {
                    Some((old, _)) if classad::unparse_value(old) == classad::unparse_value(&v) => {
                    }
                    _ => {
                        latches.insert(name, (v, now));
                    }
                }
            }
        }
    }

    /// Every slot's ad, with its name.
    pub fn ads(&self, now: i64) -> Vec<(String, ClassAd)> {
        (0..self.slots.len())
            .map(|i| (self.slots[i].name.clone(), self.slot_ad(i, now)))
            .collect()
    }

    /// The slot with this name.
    pub fn slot(&self, name: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.name == name)
    }

    /// The ad of slot `i` at `now`.
    pub fn slot_ad(&self, i: usize, now: i64) -> ClassAd {
        let s = &self.slots[i];
        let f = &self.facts;
        let c = &self.config;
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Machine");
        ad.insert_value("TargetType", "Job");
        ad.insert_value("Name", s.name.as_str());
        ad.insert_value("Machine", f.hostname.as_str());
        ad.insert_value("SlotID", i64::from(s.id));
        ad.insert_value("VirtualMachineID", i64::from(s.id));
        ad.insert_value("SlotTypeID", i64::from(s.type_id));
        if let Some(sub) = s.sub_id {
            ad.insert_value("DSlotId", i64::from(sub));
        }
        ad.insert_value("SlotType", s.kind.as_str());
        ad.insert_value("PartitionableSlot", s.kind == SlotKind::Partitionable);
        ad.insert_value("DynamicSlot", s.kind == SlotKind::Dynamic);
        ad.insert_value("Cpus", s.cpus);
        ad.insert_value("Memory", s.memory_mb);
        ad.insert_value("Disk", s.disk_kb);
        ad.insert_value("TotalSlotCpus", s.total.0);
        ad.insert_value("TotalSlotMemory", s.total.1);
        ad.insert_value("TotalSlotDisk", s.total.2);
        if s.kind == SlotKind::Partitionable {
            let children = self
                .slots
                .iter()
                .filter(|d| d.kind == SlotKind::Dynamic && d.id == s.id)
                .count() as i64;
            ad.insert_value("NumDynamicSlots", children);
        }
        ad.insert_value("TotalCpus", c.total_cpus);
        ad.insert_value("TotalMemory", c.total_memory_mb);
        ad.insert_value("TotalDisk", c.total_disk_kb);
        ad.insert_value(
            "TotalSlots",
            self.slots
                .iter()
                .filter(|s| s.kind != SlotKind::Dynamic)
                .count() as i64,
        );
        ad.insert_value("DetectedCpus", f.cpus);
        ad.insert_value("DetectedMemory", f.memory_mb);
        ad.insert_value("Arch", f.arch.as_str());
        ad.insert_value("OpSys", f.opsys.as_str());
        ad.insert_value("OpSysAndVer", f.opsys_and_ver.as_str());
        ad.insert_value("OpSysName", f.opsys_name.as_str());
        ad.insert_value("OpSysMajorVer", f.opsys_major_ver);
        ad.insert_value("OpSysLongName", f.opsys_long_name.as_str());
        // load: a busy slot's job accounts for up to its CPUs of the
        // machine's load; the rest is the owner's, spread evenly
        let running = |s: &Slot| {
            s.status.state == State::Claimed
                && matches!(s.status.activity, Activity::Busy | Activity::Retiring)
        };
        let busy_cpus: i64 = self
            .slots
            .iter()
            .filter(|s| running(s))
            .map(|s| s.cpus)
            .sum();
        let condor_total = f.load_avg.min(busy_cpus as f64);
        let owner_share = (f.load_avg - condor_total).max(0.0) / self.slots.len().max(1) as f64;
        let condor = if running(s) && busy_cpus > 0 {
            condor_total * s.cpus as f64 / busy_cpus as f64
        } else {
            0.0
        };
        ad.insert_value("CondorLoadAvg", condor);
        ad.insert_value("LoadAvg", condor + owner_share);
        ad.insert_value("TotalLoadAvg", f.load_avg);
        ad.insert_value("TotalCondorLoadAvg", condor_total);
        ad.insert_value("KeyboardIdle", f.keyboard_idle);
        ad.insert_value("ConsoleIdle", f.console_idle);
        if let Some(m) = f.mips {
            ad.insert_value("Mips", m);
        }
        if let Some(k) = f.kflops {
            ad.insert_value("KFlops", k);
        }
        ad.insert_value("FileSystemDomain", f.filesystem_domain.as_str());
        ad.insert_value("UidDomain", f.uid_domain.as_str());
        ad.insert_value("HasFileTransfer", true);
        // HTCondor's form, with Skua's own version number: condor_submit's
        // default Requirements read the second word (`split(...)[1]`) and
        // compare it with HTCondor releases.
        ad.insert_value("CondorVersion", f.condor_version.as_str());
        ad.insert_value("CondorPlatform", "$CondorPlatform: X86_64-Linux $");
        ad.insert_value("StartdIpAddr", self.address.as_str());
        ad.insert_value("MyAddress", self.address.as_str());
        ad.insert_value("State", s.status.state.as_str());
        ad.insert_value("Activity", s.status.activity.as_str());
        ad.insert_value("EnteredCurrentState", s.status.entered_state);
        ad.insert_value("EnteredCurrentActivity", s.status.entered_activity);
        ad.insert_value("StateTimer", now - s.status.entered_state);
        ad.insert_value("ActivityTimer", now - s.status.entered_activity);
        ad.insert_value("MyCurrentTime", now);
        ad.insert_value("DaemonStartTime", f.start_time);
        ad.insert_value("Draining", self.draining());
        let job = s.claim.as_ref().and_then(|c| c.job.as_ref());
        let vanilla = job.is_some_and(|j| {
            evaluator(now)
                .eval_attr("JobUniverse", &j.job_ad, None)
                .as_int()
                == Some(5)
        });
        if let Some(p) = c.policies.get(&s.id) {
            for (attr, _, _) in &p.exprs {
                if let Some(e) = p.get(attr, vanilla) {
                    ad.insert(*attr, e.clone());
                }
            }
        } else {
            ad.insert("Start", c.start.clone());
            ad.insert("Rank", c.rank.clone());
            ad.insert("IsOwner", c.is_owner.clone());
        }
        // HTCondor's slot Requirements: START, except while the slot cannot
        // take a job (Owner, Preempting, Drained)
        let req = match s.status.state {
            State::Owner | State::Preempting | State::Drained => "false",
            _ => "START",
        };
        if let Ok(req) = classad::parse_expr(req) {
            ad.insert("Requirements", req);
        }
        for (name, e) in &c.extra_attrs {
            ad.insert(name.as_str(), e.clone());
        }
        for (name, (v, t)) in &s.latches {
            ad.insert_value(&format!("{name}Value"), v.clone());
            ad.insert_value(&format!("{name}Time"), *t);
        }
        for (name, e) in self.cron.iter().chain(self.overrides.iter()) {
            ad.insert(name.as_str(), e.clone());
        }
        if let Some(j) = job {
            let st = &s.status;
            ad.insert_value("TotalJobRunTime", st.job_started.map_or(0, |t| now - t));
            ad.insert_value("TotalJobSuspendTime", st.job_suspend_secs(now));
            ad.insert_value("JobRunTimeNotSuspended", st.job_run_secs(now));
            ad.insert_value("NumSuspensions", st.suspensions);
            for name in &c.job_attrs {
                if let Some(e) = j.job_ad.lookup(name) {
                    ad.insert(name.as_str(), e.clone());
                }
            }
        }
        if let Some(t) = s.claim.as_ref().and_then(|c| c.claimed_at) {
            ad.insert_value("TotalClaimRunTime", now - t);
        }
        let mut current_rank = 0.0;
        if let Some(cl) = &s.claim {
            if cl.claimed_at.is_some() {
                ad.insert_value("RemoteUser", cl.submitter.as_str());
                ad.insert_value("RemoteOwner", cl.submitter.as_str());
                let host = cl
                    .schedd_addr
                    .trim_start_matches('<')
                    .split([':', '>'])
                    .next()
                    .unwrap_or("");
                ad.insert_value("ClientMachine", host);
                if let Some(job_ad) = &cl.job_ad {
                    current_rank = match classad::rank(&mut evaluator(now), &ad, job_ad) {
                        Value::Int(i) => i as f64,
                        Value::Real(r) => r,
                        _ => 0.0,
                    };
                }
            }
            if let Some(j) = &cl.job {
                ad.insert_value("JobId", j.job_id.as_str());
                ad.insert_value("JobStart", j.started);
                let mut ev = evaluator(now);
                if let Some(g) = ev.eval_attr("GlobalJobId", &j.job_ad, None).as_string() {
                    ad.insert_value("GlobalJobId", g);
                }
            }
        }
        ad.insert_value("CurrentRank", current_rank);
        ad
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const CLAIM: &str = "claim-0123456789abcdef";
    const CLAIM2: &str = "claim-fedcba9876543210";

    fn facts() -> MachineFacts {
        MachineFacts {
            cpus: 4,
            memory_mb: 4096,
            disk_kb: 400_000,
            hostname: "node.example".into(),
            load_avg: 1.5,
            start_time: 100,
            ..MachineFacts::default()
        }
    }

    fn machine(knobs: &[(&str, &str)]) -> Machine {
        let map: BTreeMap<String, String> = knobs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let lookup = move |k: &str| map.get(k).cloned();
        let f = facts();
        let cfg = StartdConfig::from_knobs(&lookup, &f).unwrap();
        let mut m = Machine::new(f, cfg, 1000);
        m.address = "<127.0.0.1:5555>".into();
        m
    }

    fn job(text: &str) -> ClassAd {
        classad::parse_ad(text).unwrap()
    }

    fn simple_job() -> ClassAd {
        job(
            "[ Owner = \"alice\"; RequestCpus = 1; RequestMemory = 100; RequestDisk = 1000; \
              Requirements = TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory; \
              GlobalJobId = \"sub#1.0#5\" ]",
        )
    }

    fn attr(ad: &ClassAd, name: &str) -> String {
        classad::unparse_value(&evaluator(0).eval_attr(name, ad, None))
    }

    fn v(x: impl Into<Value>) -> String {
        classad::unparse_value(&x.into())
    }

    fn pslot() -> Machine {
        machine(&[
            ("NUM_SLOTS_TYPE_1", "1"),
            ("SLOT_TYPE_1", "100%"),
            ("SLOT_TYPE_1_PARTITIONABLE", "true"),
        ])
    }

    #[test]
    fn slot_ads_carry_htcondor_attributes() {
        let m = machine(&[("NUM_CPUS", "6"), ("START", "TARGET.Owner == \"alice\"")]);
        let ads = m.ads(1234);
        assert_eq!(ads.len(), 6);
        let (name, ad) = &ads[1];
        assert_eq!(name, "slot2@node.example");
        for (a, v) in [
            ("MyType", v("Machine")),
            ("TargetType", v("Job")),
            ("Name", v("slot2@node.example")),
            ("Machine", v("node.example")),
            ("SlotID", v(2_i64)),
            ("VirtualMachineID", v(2_i64)),
            ("SlotType", v("Static")),
            ("PartitionableSlot", v(false)),
            ("Cpus", v(1_i64)),
            ("Memory", v(682_i64)),
            ("TotalCpus", v(6_i64)),
            ("TotalSlots", v(6_i64)),
            ("State", v("Unclaimed")),
            ("Activity", v("Idle")),
            ("EnteredCurrentState", v(1000_i64)),
            ("MyCurrentTime", v(1234_i64)),
            ("DaemonStartTime", v(100_i64)),
            ("MyAddress", v("<127.0.0.1:5555>")),
            ("StartdIpAddr", v("<127.0.0.1:5555>")),
            ("HasFileTransfer", v(true)),
            ("OpSys", v("LINUX")),
            ("TotalLoadAvg", v(1.5)),
            ("IsOwner", v(false)),
            ("CurrentRank", v(0.0)),
        ] {
            assert_eq!(attr(ad, a), v, "{a}");
        }
        // Requirements is START, evaluated against the job
        let alice = job("[ Owner = \"alice\" ]");
        let bob = job("[ Owner = \"bob\" ]");
        let mut ev = evaluator(0);
        assert!(ev.eval_attr("Requirements", ad, Some(&alice)).is_true());
        assert!(!ev.eval_attr("Requirements", ad, Some(&bob)).is_true());
    }

    #[test]
    fn startd_attrs_and_cron_attributes_are_merged() {
        let mut m = machine(&[
            ("STARTD_ATTRS", "HasBlast, Site"),
            ("HasBlast", "true"),
            ("Site", "\"lab\""),
            ("STARTD_EXPRS", "Undefined_Knob"),
        ]);
        m.cron
            .insert("Temperature".into(), classad::parse_expr("42").unwrap());
        let ad = &m.ads(0)[0].1;
        assert_eq!(attr(ad, "HasBlast"), v(true));
        assert_eq!(attr(ad, "Site"), v("lab"));
        assert_eq!(attr(ad, "Temperature"), v(42_i64));
        assert!(ad.lookup("Undefined_Knob").is_none());
    }

    #[test]
    fn a_bad_start_expression_names_the_knob() {
        let lookup = |k: &str| (k == "START").then(|| "((".to_string());
        let e = StartdConfig::from_knobs(&lookup, &facts()).unwrap_err();
        assert!(e.to_string().starts_with("START:"), "{e}");
    }

    #[test]
    fn static_slot_match_claim_activate_release() {
        let mut m = machine(&[]);
        let slot = "slot1@node.example";
        m.match_notice(slot, CLAIM, "alice@dom", "<127.0.0.1:9>", 1000)
            .unwrap();
        assert_eq!(m.slot(slot).unwrap().status.state, State::Matched);
        // a second match on the same slot is stale
        let r = m
            .match_notice(slot, CLAIM2, "bob@dom", "<127.0.0.1:9>", 1001)
            .unwrap_err();
        assert!(
            matches!(r, Refusal::Conflict(ref m) if m.contains("stale")),
            "{r:?}"
        );
        // a wrong claim id is not found
        let r = m.claim(CLAIM2, &simple_job(), "", 1002).unwrap_err();
        assert!(matches!(r, Refusal::NotFound(_)), "{r:?}");
        let (name, ad) = m
            .claim(CLAIM, &simple_job(), "<127.0.0.1:9>", 1002)
            .unwrap();
        assert_eq!(name, slot);
        assert_eq!(attr(&ad, "State"), v("Claimed"));
        assert_eq!(attr(&ad, "RemoteUser"), v("alice@dom"));
        assert_eq!(attr(&ad, "ClientMachine"), v("127.0.0.1"));
        let launch = m
            .activate(CLAIM, &simple_job(), "1.0", "<127.0.0.1:9>", 1003)
            .unwrap();
        assert_eq!(launch.slot, slot);
        assert_eq!(attr(&launch.slot_ad, "Activity"), v("Busy"));
        assert_eq!(attr(&launch.slot_ad, "JobId"), v("1.0"));
        assert_eq!(attr(&launch.slot_ad, "GlobalJobId"), v("sub#1.0#5"));
        assert_eq!(attr(&launch.slot_ad, "JobStart"), v(1003_i64));
        // busy: a second activation is put off until the first job is done
        assert!(matches!(
            m.activate(CLAIM, &simple_job(), "1.1", "", 1004),
            Err(Refusal::Unavailable(_))
        ));
        let a = m.starter_exited(slot, 1010);
        assert!(a.is_empty());
        assert_eq!(m.slot(slot).unwrap().status.activity, Activity::Idle);
        // claim reuse
        m.activate(CLAIM, &simple_job(), "1.1", "", 1011).unwrap();
        let a = m.release(CLAIM, 1012).unwrap();
        assert_eq!(a, vec![(slot.to_string(), Action::HardKillStarter)]);
        assert_eq!(m.slot(slot).unwrap().status.state, State::Preempting);
        let a = m.starter_exited(slot, 1013);
        assert_eq!(a, vec![(slot.to_string(), Action::DropClaim)]);
        let s = m.slot(slot).unwrap();
        assert_eq!(
            (s.status.state, s.claim.is_none()),
            (State::Unclaimed, true)
        );
        assert!(matches!(m.release(CLAIM, 1014), Err(Refusal::NotFound(_))));
    }

    #[test]
    fn a_stale_match_is_refused_with_the_reason() {
        let mut m = machine(&[("START", "TARGET.Owner != \"mallory\"")]);
        let slot = "slot1@node.example";
        m.match_notice(slot, CLAIM, "m@dom", "", 0).unwrap();
        let r = m
            .claim(
                CLAIM,
                &job("[ Owner = \"mallory\"; Requirements = true ]"),
                "",
                1,
            )
            .unwrap_err();
        assert!(
            matches!(&r, Refusal::Conflict(m) if m.contains("START")),
            "{r:?}"
        );
        let r = m
            .claim(
                CLAIM,
                &job("[ Owner = \"a\"; Requirements = TARGET.Memory > 100000 ]"),
                "",
                1,
            )
            .unwrap_err();
        assert!(
            matches!(&r, Refusal::Conflict(m) if m.contains("job's Requirements")),
            "{r:?}"
        );
        // still Matched: the refusal changed nothing
        assert_eq!(m.slot(slot).unwrap().status.state, State::Matched);
    }

    #[test]
    fn matches_expire_and_idle_claims_are_released() {
        let mut m = machine(&[("MATCH_TIMEOUT", "30"), ("MAX_CLAIM_IDLE", "50")]);
        m.match_notice("slot1@node.example", CLAIM, "a@d", "", 0)
            .unwrap();
        m.match_notice("slot2@node.example", CLAIM2, "a@d", "", 0)
            .unwrap();
        m.claim(CLAIM2, &simple_job(), "", 10).unwrap();
        assert!(m.tick(29).is_empty());
        let a = m.tick(30);
        assert_eq!(a, vec![("slot1@node.example".into(), Action::DropClaim)]);
        assert!(matches!(
            m.claim(CLAIM, &simple_job(), "", 31),
            Err(Refusal::NotFound(_))
        ));
        assert!(m.tick(59).is_empty());
        let a = m.tick(60);
        assert_eq!(a, vec![("slot2@node.example".into(), Action::DropClaim)]);
    }

    #[test]
    fn a_claim_without_keep_alives_is_dropped_after_its_lease() {
        let slot = "slot1@node.example";
        // no JobLeaseDuration: MAX_CLAIM_ALIVES_MISSED x the schedd's
        // announced interval (3 x 4 = 12 s)
        let mut m = machine(&[("MAX_CLAIM_ALIVES_MISSED", "3"), ("ALIVE_INTERVAL", "300")]);
        m.match_notice(slot, CLAIM, "a@d", "", 0).unwrap();
        m.claim(CLAIM, &simple_job(), "", 10).unwrap();
        m.set_alive_interval(CLAIM, 4);
        assert_eq!(m.claim_lease(0, 10), Some(12));
        m.activate(CLAIM, &simple_job(), "1.0", "", 11).unwrap();
        // keep-alives renew it
        m.keep_alive(CLAIM, 20).unwrap();
        assert!(m.tick(31).is_empty());
        assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Busy));
        // none for 12 s: the job is killed, then the claim goes
        let a = m.tick(32);
        assert_eq!(
            a,
            vec![
                (slot.into(), Action::LeaseExpired { lease_secs: 12 }),
                (slot.into(), Action::KillStarterTree)
            ]
        );
        assert_eq!(state_of(&m, slot), (State::Preempting, Activity::Killing));
        // announced once
        assert!(m.tick(33).is_empty());
        let a = m.starter_exited(slot, 34);
        assert_eq!(a, vec![(slot.into(), Action::DropClaim)]);
        m.tick(34);
        assert_eq!(state_of(&m, slot), (State::Unclaimed, Activity::Idle));
        assert!(matches!(m.keep_alive(CLAIM, 35), Err(Refusal::NotFound(_))));
    }

    #[test]
    fn the_running_jobs_lease_duration_is_the_claims_lease() {
        let slot = "slot1@node.example";
        let mut m = machine(&[]);
        m.match_notice(slot, CLAIM, "a@d", "", 0).unwrap();
        m.claim(CLAIM, &simple_job(), "", 0).unwrap();
        // no announced interval: HTCondor's defaults, 6 x 300 s
        assert_eq!(m.claim_lease(0, 0), Some(1800));
        let mut j = simple_job();
        j.insert_value("JobLeaseDuration", 20);
        m.activate(CLAIM, &j, "1.0", "", 0).unwrap();
        assert_eq!(m.claim_lease(0, 0), Some(20));
        assert!(m.tick(19).is_empty());
        let a = m.tick(20);
        assert_eq!(a[0], (slot.into(), Action::LeaseExpired { lease_secs: 20 }));
        // an idle claim goes at once, to Owner then Unclaimed
        let mut m = machine(&[("ALIVE_INTERVAL", "5")]);
        m.match_notice(slot, CLAIM, "a@d", "", 0).unwrap();
        m.claim(CLAIM, &simple_job(), "", 0).unwrap();
        let a = m.tick(30);
        assert_eq!(
            a,
            vec![
                (slot.into(), Action::LeaseExpired { lease_secs: 30 }),
                (slot.into(), Action::DropClaim)
            ]
        );
        assert_eq!(state_of(&m, slot), (State::Unclaimed, Activity::Idle));
    }

    #[test]
    fn claim_worklife_stops_new_activations() {
        let mut m = machine(&[("CLAIM_WORKLIFE", "100")]);
        m.match_notice("slot1@node.example", CLAIM, "a@d", "", 0)
            .unwrap();
        m.claim(CLAIM, &simple_job(), "", 0).unwrap();
        m.activate(CLAIM, &simple_job(), "1.0", "", 50).unwrap();
        m.starter_exited("slot1@node.example", 90);
        let r = m
            .activate(CLAIM, &simple_job(), "1.1", "", 101)
            .unwrap_err();
        assert!(
            matches!(&r, Refusal::Conflict(m) if m.contains("CLAIM_WORKLIFE")),
            "{r:?}"
        );
    }

    #[test]
    fn partitionable_slot_carves_and_gets_resources_back() {
        let mut m = pslot();
        let p = "slot1@node.example";
        let ad = &m.ads(0)[0].1;
        assert_eq!(attr(ad, "SlotType"), v("Partitionable"));
        assert_eq!(attr(ad, "PartitionableSlot"), v(true));
        assert_eq!(attr(ad, "Cpus"), v(4_i64));
        m.match_notice(p, CLAIM, "a@d", "", 0).unwrap();
        m.match_notice(p, CLAIM2, "a@d", "", 0).unwrap();
        // the partitionable slot stays Unclaimed and takes both matches
        assert_eq!(m.slot(p).unwrap().status.state, State::Unclaimed);
        let big = job(
            "[ RequestCpus = 3; RequestMemory = 1000.5; RequestDisk = 10; Requirements = true ]",
        );
        let (d1, ad1) = m.claim(CLAIM, &big, "", 1).unwrap();
        assert_eq!(d1, "slot1_1@node.example");
        assert_eq!(attr(&ad1, "SlotType"), v("Dynamic"));
        assert_eq!(attr(&ad1, "DynamicSlot"), v(true));
        assert_eq!(attr(&ad1, "Cpus"), v(3_i64));
        assert_eq!(attr(&ad1, "Memory"), v(1001_i64));
        assert_eq!(attr(&ad1, "Disk"), v(10_i64));
        assert_eq!(attr(&ad1, "State"), v("Claimed"));
        let pad = &m.ads(1)[0].1;
        assert_eq!(attr(pad, "Cpus"), v(1_i64));
        assert_eq!(attr(pad, "Memory"), v(4096_i64 - 1001));
        assert_eq!(attr(pad, "NumDynamicSlots"), v(1_i64));
        // the second job no longer fits
        let r = m.claim(CLAIM2, &big, "", 2).unwrap_err();
        assert!(
            matches!(&r, Refusal::Conflict(m) if m.contains("3 CPUs")),
            "{r:?}"
        );
        // a small one does, and gets the next name
        let (d2, _) = m.claim(CLAIM2, &simple_job(), "", 2).unwrap();
        assert_eq!(d2, "slot1_2@node.example");
        assert_eq!(m.slot(p).unwrap().cpus, 0);
        // releasing the first dynamic slot removes it and gives its share back
        let a = m.release(CLAIM, 3).unwrap();
        assert_eq!(a, vec![(d1.clone(), Action::DropClaim)]);
        assert!(m.slot(&d1).is_none());
        let ps = m.slot(p).unwrap();
        assert_eq!(
            (ps.cpus, ps.memory_mb, ps.disk_kb),
            (3, 4096 - 100, 400_000 - 1000)
        );
        // a busy dynamic slot released: killed first, removed after its starter exits
        m.activate(CLAIM2, &simple_job(), "2.0", "", 4).unwrap();
        m.release(CLAIM2, 5).unwrap();
        assert!(m.slot(&d2).is_some());
        m.starter_exited(&d2, 6);
        assert!(m.slot(&d2).is_none());
        let ps = m.slot(p).unwrap();
        assert_eq!((ps.cpus, ps.memory_mb, ps.disk_kb), (4, 4096, 400_000));
    }

    #[test]
    fn pending_partitionable_matches_expire() {
        let mut m = pslot();
        m.match_notice("slot1@node.example", CLAIM, "a@d", "", 0)
            .unwrap();
        m.tick(119);
        assert_eq!(m.slot("slot1@node.example").unwrap().pending.len(), 1);
        m.tick(120);
        assert!(matches!(
            m.claim(CLAIM, &simple_job(), "", 121),
            Err(Refusal::NotFound(_))
        ));
    }

    #[test]
    fn match_notice_refusals() {
        let mut m = machine(&[]);
        assert!(matches!(
            m.match_notice("slot9@node.example", CLAIM, "a@d", "", 0),
            Err(Refusal::NotFound(_))
        ));
        assert!(matches!(
            m.match_notice("slot1@node.example", "short", "a@d", "", 0),
            Err(Refusal::BadRequest(_))
        ));
        m.match_notice("slot1@node.example", CLAIM, "a@d", "", 0)
            .unwrap();
        assert!(matches!(
            m.match_notice("slot2@node.example", CLAIM, "a@d", "", 0),
            Err(Refusal::Conflict(_))
        ));
    }

    #[test]
    fn claim_ids_compare_exactly() {
        assert!(claim_ids_equal(CLAIM, CLAIM));
        assert!(!claim_ids_equal(CLAIM, CLAIM2));
        assert!(!claim_ids_equal(CLAIM, &CLAIM[1..]));
    }

    #[test]
    fn owner_state_when_is_owner_holds() {
        let mut m = machine(&[("IS_OWNER", "KeyboardIdle < 60")]);
        m.tick(1);
        assert_eq!(m.slots[0].status.state, State::Owner);
        m.facts.keyboard_idle = 600;
        m.tick(2);
        assert_eq!(m.slots[0].status.state, State::Unclaimed);
    }

    fn running(m: &mut Machine, claim: &str, job_ad: &ClassAd, now: i64) {
        m.match_notice("slot1@node.example", claim, "a@d", "", now)
            .unwrap();
        m.claim(claim, job_ad, "", now).unwrap();
        m.activate(claim, job_ad, "1.0", "", now).unwrap();
    }

    fn state_of(m: &Machine, slot: &str) -> (State, Activity) {
        let s = m.slot(slot).unwrap();
        (s.status.state, s.status.activity)
    }

    /// HTCondor's desktop expressions (POLICY : Desktop with its fragments
    /// expanded), times scaled down.
    fn desktop() -> Vec<(&'static str, &'static str)> {
        vec![
            ("NUM_CPUS", "1"),
            ("START", "((KeyboardIdle > 60) && ((LoadAvg - CondorLoadAvg) <= 0.3 || (State != \"Unclaimed\" && State != \"Owner\")))"),
            ("SUSPEND", "((KeyboardIdle < 60) || (((time() - CpuBusyTime) > 120) && CpuBusyValue == 1))"),
            ("CONTINUE", "(((LoadAvg - CondorLoadAvg) <= 0.3) && ((time() - EnteredCurrentActivity) > 10) && (KeyboardIdle > 30))"),
            ("PREEMPT", "(((Activity == \"Suspended\") && ((time() - EnteredCurrentActivity) > 100)) || (SUSPEND && (WANT_SUSPEND == False)))"),
            ("WANT_SUSPEND", "(TARGET.ImageSize < 15 * 1024 || KeyboardIdle >= 60 || TARGET.JobUniverse == 5) && (SUSPEND)"),
            ("WANT_VACATE", "true"),
            ("IS_OWNER", "(START =?= False)"),
            ("STARTD_LATCH_EXPRS", "CpuBusy"),
            ("CpuBusy", "((LoadAvg - CondorLoadAvg) >= 0.5)"),
        ]
    }

    #[test]
    fn desktop_policy_suspends_continues_and_vacates() {
        let mut m = machine(&desktop());
        m.facts.load_avg = 0.0;
        m.facts.keyboard_idle = 1000;
        m.tick(1000);
        let slot = "slot1@node.example";
        assert_eq!(state_of(&m, slot), (State::Unclaimed, Activity::Idle));
        let j = job("[ Owner = \"a\"; JobUniverse = 5; ImageSize = 100; Requirements = true ]");
        running(&mut m, CLAIM, &j, 1000);
        // the latch is published
        let ad = &m.ads(1001)[0].1;
        assert_eq!(attr(ad, "CpuBusyValue"), v(0_i64));
        // the owner is back: suspended at the next poll
        m.facts.keyboard_idle = 0;
        let a = m.tick(1005);
        assert_eq!(a, vec![(slot.to_string(), Action::Suspend)]);
        assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Suspended));
        // still busy: stays suspended
        assert!(m.tick(1050).is_empty());
        // the owner leaves: continued
        m.facts.keyboard_idle = 100;
        let a = m.tick(1060);
        assert_eq!(a, vec![(slot.to_string(), Action::Continue)]);
        assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Busy));
        // back again, and stays past the max suspend time: vacated
        m.facts.keyboard_idle = 0;
        m.tick(1070);
        assert_eq!(state_of(&m, slot).1, Activity::Suspended);
        assert!(m.tick(1170).is_empty());
        let a = m.tick(1171);
        assert_eq!(
            a,
            vec![
                (slot.to_string(), Action::Continue),
                (slot.to_string(), Action::SoftKillStarter)
            ]
        );
        assert_eq!(state_of(&m, slot), (State::Preempting, Activity::Vacating));
        let ad = &m.ads(1171)[0].1;
        assert_eq!(attr(ad, "Requirements"), v(false));
        let a = m.starter_exited(slot, 1172);
        assert_eq!(a, vec![(slot.to_string(), Action::DropClaim)]);
        // the owner is still there: Owner (START is false)
        m.tick(1173);
        assert_eq!(state_of(&m, slot), (State::Owner, Activity::Idle));
        m.facts.keyboard_idle = 100;
        m.tick(1180);
        assert_eq!(state_of(&m, slot), (State::Unclaimed, Activity::Idle));
    }

    #[test]
    fn per_slot_knobs_and_slot_id_in_expressions() {
        let mut m = machine(&[
            ("NUM_CPUS", "3"),
            ("START", "SlotID <= 2"),
            ("SLOT2_START", "TARGET.Owner == \"bob\""),
        ]);
        let alice = job("[ Owner = \"alice\"; Requirements = true ]");
        let bob = job("[ Owner = \"bob\"; Requirements = true ]");
        let ads = m.ads(0);
        let mut ev = evaluator(0);
        let ok = |ev: &mut Evaluator, i: usize, j: &ClassAd| {
            ev.eval_attr("Requirements", &ads[i].1, Some(j)).is_true()
        };
        assert!(ok(&mut ev, 0, &alice));
        assert!(!ok(&mut ev, 1, &alice));
        assert!(ok(&mut ev, 1, &bob));
        assert!(!ok(&mut ev, 2, &bob));
        // slot 3's START is locally false: IS_OWNER stays false (default)
        m.tick(1);
        assert_eq!(m.slots[2].status.state, State::Unclaimed);
    }

    #[test]
    fn startd_job_attrs_are_copied_from_the_running_job() {
        let mut m = machine(&[
            ("NUM_CPUS", "1"),
            ("STARTD_JOB_ATTRS", "BolognaBatchJob LongRunningJob"),
        ]);
        let j = job("[ Owner = \"a\"; BolognaBatchJob = true; Requirements = true ]");
        running(&mut m, CLAIM, &j, 10);
        let ad = &m.ads(20)[0].1;
        assert_eq!(attr(ad, "BolognaBatchJob"), v(true));
        assert!(ad.lookup("LongRunningJob").is_none());
        assert_eq!(attr(ad, "ActivityTimer"), v(10_i64));
        assert_eq!(attr(ad, "TotalJobRunTime"), v(10_i64));
        m.starter_exited("slot1@node.example", 30);
        assert!(m.ads(31)[0].1.lookup("BolognaBatchJob").is_none());
    }

    #[test]
    fn the_job_may_lower_retirement_and_vacate_times_but_not_raise_them() {
        let mut m = machine(&[
            ("NUM_CPUS", "1"),
            ("MAXJOBRETIREMENTTIME", "100"),
            ("MachineMaxVacateTime", "50"),
        ]);
        let j = job("[ Owner = \"a\"; MaxJobRetirementTime = 10; JobMaxVacateTime = 500; Requirements = true ]");
        running(&mut m, CLAIM, &j, 0);
        let p = m.policy(0, 5);
        assert_eq!((p.max_job_retirement_time, p.max_vacate_time), (10, 50));
    }

    #[test]
    fn want_hold_with_reason_and_subcode() {
        let mut m = machine(&[
            ("NUM_CPUS", "1"),
            ("PREEMPT", "TARGET.Big =?= true"),
            ("WANT_HOLD", "TARGET.Big =?= true"),
            ("WANT_HOLD_REASON", "too big for this machine"),
            ("WANT_HOLD_SUBCODE", "7"),
        ]);
        let j = job("[ Owner = \"a\"; Big = true; Requirements = true ]");
        running(&mut m, CLAIM, &j, 0);
        let a = m.tick(1);
        let slot = "slot1@node.example".to_string();
        assert_eq!(
            a,
            vec![
                (
                    slot.clone(),
                    Action::Hold {
                        reason: "too big for this machine".into(),
                        subcode: 7
                    }
                ),
                (slot, Action::SoftKillStarter)
            ]
        );
    }

    #[test]
    fn a_preempting_match_waits_for_the_job_then_takes_the_slot() {
        let mut m = machine(&[("NUM_CPUS", "1"), ("MAXJOBRETIREMENTTIME", "60")]);
        let slot = "slot1@node.example";
        running(&mut m, CLAIM, &simple_job(), 0);
        // an ordinary match on a claimed slot is stale
        assert!(matches!(
            m.match_notice(slot, CLAIM2, "b@d", "", 1),
            Err(Refusal::Conflict(_))
        ));
        let a = m
            .preempting_match(slot, CLAIM2, "b@d", "<1.2.3.4:5>", 10)
            .unwrap();
        assert!(a.is_empty());
        assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Retiring));
        // a second one is refused: already being preempted
        let third = "claim-aaaaaaaaaaaaaaaaaaaa";
        assert!(matches!(
            m.preempting_match(slot, third, "c@d", "", 11),
            Err(Refusal::Conflict(_))
        ));
        // the new schedd must wait
        assert!(matches!(
            m.claim(CLAIM2, &simple_job(), "", 12),
            Err(Refusal::Unavailable(_))
        ));
        // the old claim still works for the keep-alive
        assert!(m.claim_status(CLAIM).is_ok());
        assert!(m.tick(59).is_empty());
        let a = m.tick(60);
        assert_eq!(a, vec![(slot.to_string(), Action::SoftKillStarter)]);
        let a = m.starter_exited(slot, 61);
        assert_eq!(
            a,
            vec![
                (slot.to_string(), Action::DropClaim),
                (slot.to_string(), Action::PromoteClaim)
            ]
        );
        assert_eq!(state_of(&m, slot), (State::Matched, Activity::Idle));
        assert!(matches!(m.claim_status(CLAIM), Err(Refusal::NotFound(_))));
        let (_, ad) = m.claim(CLAIM2, &simple_job(), "", 62).unwrap();
        assert_eq!(attr(&ad, "RemoteUser"), v("b@d"));
    }

    #[test]
    fn vacate_and_drain_by_command() {
        let mut m = machine(&[("NUM_CPUS", "2")]);
        running(&mut m, CLAIM, &simple_job(), 0);
        let a = m.vacate(&["slot1".to_string()], true, 5).unwrap();
        assert_eq!(
            a,
            vec![("slot1@node.example".to_string(), Action::SoftKillStarter)]
        );
        assert!(matches!(
            m.vacate(&["slot9".to_string()], true, 5),
            Err(Refusal::NotFound(_))
        ));
        // draining: slot 2 drains at once, slot 1 once its job is gone
        m.drain(false, 6).unwrap();
        assert_eq!(
            state_of(&m, "slot2@node.example"),
            (State::Drained, Activity::Retiring)
        );
        m.starter_exited("slot1@node.example", 7);
        m.tick(8);
        assert_eq!(
            state_of(&m, "slot1@node.example"),
            (State::Drained, Activity::Idle)
        );
        assert_eq!(
            state_of(&m, "slot2@node.example"),
            (State::Drained, Activity::Idle)
        );
        assert!(m
            .match_notice("slot2@node.example", CLAIM2, "a@d", "", 9)
            .is_err());
        m.drain(true, 10).unwrap();
        assert_eq!(
            state_of(&m, "slot2@node.example"),
            (State::Unclaimed, Activity::Idle)
        );
    }

    #[test]
    fn an_idle_claim_evaluates_start_against_its_job() {
        let mut m = machine(&[("NUM_CPUS", "1"), ("START", "TARGET.Owner == \"a\"")]);
        let slot = "slot1@node.example";
        m.match_notice(slot, CLAIM, "a@d", "", 0).unwrap();
        m.claim(CLAIM, &job("[ Owner = \"a\"; Requirements = true ]"), "", 0)
            .unwrap();
        assert!(m.tick(1).is_empty());
        assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Idle));
    }
}
