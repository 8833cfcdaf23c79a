//! The machine: its slots and the events that move them (policy
//! evaluation, vacating, draining, starters exiting, time passing). The
//! configuration is `config.rs`, the claim protocol `claim.rs`, the owner's
//! policy `policy.rs`, the slot ads `slot_ad.rs`.

use std::collections::BTreeMap;

use classad::{ClassAd, EvalOptions, Evaluator, Expr, Value};

use crate::claim::{Claim, Refusal};
use crate::config::StartdConfig;
use crate::state::{self, Action, Event, Policy, State, Status};
use crate::MachineFacts;

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
    pub(crate) next_child: u32,
}

/// The `Disk` a slot advertises: what it has less what the pending output
/// sandboxes of its earlier jobs take (never below zero).
pub fn advertised_disk(disk_kb: i64, pending_output_kb: i64) -> i64 {
    disk_kb.saturating_sub(pending_output_kb.max(0)).max(0)
}

pub(crate) fn evaluator(now: i64) -> Evaluator {
    Evaluator::new(EvalOptions {
        now: now as f64,
        ..EvalOptions::default()
    })
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
    /// The KB of finished jobs' sandboxes whose output is still being
    /// transferred (asynchronous output transfer), by slot name: the
    /// slot's advertised `Disk` is smaller by as much.
    pub pending_output_kb: BTreeMap<String, i64>,
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
            pending_output_kb: BTreeMap::new(),
        }
    }

    pub(crate) fn index(&self, name: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.name == name)
    }

    pub(crate) fn apply(
        &mut self,
        i: usize,
        event: Event,
        now: i64,
    ) -> Result<Vec<Action>, Refusal> {
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
    pub(crate) fn job_ad(&self, i: usize) -> Option<&ClassAd> {
        self.slots[i]
            .claim
            .as_ref()
            .and_then(|c| c.job.as_ref())
            .map(|j| &j.job_ad)
    }

    /// Carries out the claim drops among `actions` (removing a dynamic
    /// slot and giving its resources back); returns the others, with the
    /// slot's name.
    pub(crate) fn settle(
        &mut self,
        i: usize,
        actions: Vec<Action>,
        now: i64,
    ) -> Vec<(String, Action)> {
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
    pub(crate) fn evaluate_slot_named(&mut self, name: &str, now: i64) -> Vec<(String, Action)> {
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

    /// The slot with this name.
    pub fn slot(&self, name: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.name == name)
    }
}

#[cfg(test)]
mod tests;
