//! The startd's configuration, read once from the knobs: the slot layout,
//! the owner's policy expressions, timeouts, leases and the attributes
//! slot ads carry.

use std::collections::BTreeMap;

use classad::{Expr, Value};

use crate::layout::{self, SlotDef};
use crate::machine::evaluator;
use crate::state::Timeouts;
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
