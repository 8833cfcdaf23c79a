//! The owner's policy of a slot: its expressions evaluated against the
//! slot ad and the running job, and the latched expressions
//! (`STARTD_LATCH_EXPRS`).

use classad::Value;

use crate::machine::{evaluator, Machine};
use crate::state::{HoldRequest, Policy, State};

impl Machine {
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

    pub(crate) fn update_latches(&mut self, now: i64) {
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
}
