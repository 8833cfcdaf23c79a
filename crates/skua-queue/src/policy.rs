//! Job policy: the periodic expressions and the exit policy.
//!
//! HTCondor's rules (its `UserPolicy`), as implemented here:
//!
//! - Order, first to fire wins: `PeriodicHold` (only for jobs not Held),
//!   `PeriodicRelease` (only for Held jobs, and not when they were held by
//!   a user, `HoldReasonCode` 1), `PeriodicRemove`; at exit these are
//!   checked first, then `OnExitHold`, then `OnExitRemove`. For each
//!   periodic check the job's attribute comes first, then the system
//!   expression (`SYSTEM_PERIODIC_*`).
//! - A job expression fires when it evaluates to a non-zero number (`true`
//!   counts). One that evaluates to anything else (UNDEFINED, ERROR, a
//!   string) fires too, as "undefined": the job is held with
//!   `HoldReasonCode` 5 (JobPolicyUndefined), unless the expression is the
//!   literal `undefined`, which is false. A system expression fires only on
//!   a non-zero number.
//! - Reasons: a firing job expression `X` takes its reason from `XReason`
//!   and subcode from `XSubCode` when they evaluate to a string / number,
//!   else the reason is "The job attribute X expression '…' evaluated to
//!   TRUE" (or UNDEFINED); hold code 3 (JobPolicy). A system expression
//!   uses the configured `_REASON`/`_SUBCODE` expressions, else "The system
//!   macro SYSTEM_PERIODIC_X expression '…' evaluated to TRUE"; hold code
//!   26 (SystemPolicy).
//! - `OnExitRemove` missing means true (the job completes); false puts the
//!   job back to Idle (a "terminated and requeued" eviction event).
//! - Removed and Completed jobs are not evaluated. Running jobs are (there
//!   is no shadow evaluating them yet).

use classad::{ClassAd, Evaluator, Expr, Value};

use crate::attr::{self, hold_code};
use crate::mutation::Txn;
use crate::plan::{as_number, Planner};
use crate::queue::{int_attr, status_of, Queue};
use crate::userlog::{ExitStatus, ResourceUsage, Rusage, Termination, UserLogEvent};
use crate::{JobId, JobStatus, QueueError};

/// The schedd's system-wide periodic policy (`SYSTEM_PERIODIC_HOLD`, its
/// `_REASON` and `_SUBCODE`, `SYSTEM_PERIODIC_RELEASE`,
/// `SYSTEM_PERIODIC_REMOVE` and their `_REASON`), parsed from the
/// configuration. `None` is HTCondor's default (false).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SystemPolicy {
    pub periodic_hold: Option<Expr>,
    pub periodic_hold_reason: Option<Expr>,
    pub periodic_hold_subcode: Option<Expr>,
    pub periodic_release: Option<Expr>,
    pub periodic_release_reason: Option<Expr>,
    pub periodic_remove: Option<Expr>,
    pub periodic_remove_reason: Option<Expr>,
}

/// How a job's process ended, as the starter reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExitInfo {
    /// The exit code of a normal exit.
    pub exit_code: Option<i64>,
    /// The signal that killed the process (then `exit_code` is ignored).
    pub signal: Option<i64>,
    /// Where the core file went, if one was written.
    pub core_file: Option<String>,
    /// CPU time of the job's process (the "remote" usage).
    pub remote_usage: Rusage,
    /// CPU time the schedd side spent (the "local" usage).
    pub local_usage: Rusage,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// The resource usage table of the Terminated event.
    pub resources: Vec<ResourceUsage>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Hold,
    Release,
    Remove,
}

/// A fired policy expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Fired {
    kind: Kind,
    code: i64,
    subcode: i64,
    reason: String,
}

/// A periodic policy expression that fired for a job, found by
/// [`periodic_decisions`].
#[derive(Clone, Debug)]
pub struct PeriodicDecision {
    id: JobId,
    /// The job ad the expressions were evaluated in.
    ad: ClassAd,
    /// `None`: a completed job whose `LeaveJobInQueue` no longer holds
    /// leaves the queue.
    fired: Option<Fired>,
}

/// Evaluates the periodic policy of each job of `jobs` at `now` (the pure
/// half of [`Queue::plan_periodic`]); `stop` is asked between jobs and
/// ends the work early when it says so.
pub fn periodic_decisions(
    ev: &mut Evaluator,
    now: i64,
    system: &SystemPolicy,
    jobs: &[(JobId, ClassAd)],
    mut stop: impl FnMut() -> bool,
) -> Vec<PeriodicDecision> {
    let clock = Clock::set(ev, now);
    let mut out = Vec::new();
    for (id, ad) in jobs {
        if stop() {
            break;
        }
        if status_of(ad) == JobStatus::Completed {
            // kept by LeaveJobInQueue until it stops holding
            if !crate::spool::leave_in_queue(clock.ev, ad) {
                out.push(PeriodicDecision {
                    id: *id,
                    ad: ad.clone(),
                    fired: None,
                });
            }
            continue;
        }
        if status_of(ad) == JobStatus::Removed {
            continue;
        }
        if let Some(fired) = periodic(clock.ev, ad, system) {
            out.push(PeriodicDecision {
                id: *id,
                ad: ad.clone(),
                fired: Some(fired),
            });
        }
    }
    out
}

/// The job policy check `X` of the job itself.
fn job_check(ev: &mut Evaluator, ad: &ClassAd, name: &str, kind: Kind) -> Option<Fired> {
    let expr = ad.lookup(name)?.clone();
    let v = ev.eval(&expr, Some(ad), None);
    let text = classad::unparse(&expr);
    match as_number(&v) {
        Some(n) if n != 0.0 => {
            let reason = match ev.eval_attr(&format!("{name}Reason"), ad, None) {
                Value::Str(s) if !s.is_empty() => String::from_utf8_lossy(&s).into_owned(),
                _ => format!("The job attribute {name} expression '{text}' evaluated to TRUE"),
            };
            let subcode = as_number(&ev.eval_attr(&format!("{name}SubCode"), ad, None))
                .map_or(0, |n| n as i64);
            Some(Fired {
                kind,
                code: hold_code::JOB_POLICY,
                subcode,
                reason,
            })
        }
        Some(_) => None,
        None if matches!(expr, Expr::Lit(Value::Undefined)) => None,
        None => Some(Fired {
            kind: Kind::Hold,
            code: hold_code::JOB_POLICY_UNDEFINED,
            subcode: 0,
            reason: format!("The job attribute {name} expression '{text}' evaluated to UNDEFINED"),
        }),
    }
}

/// The system policy check `SYSTEM_PERIODIC_X`.
fn system_check(
    ev: &mut Evaluator,
    ad: &ClassAd,
    macro_name: &str,
    expr: Option<&Expr>,
    reason_expr: Option<&Expr>,
    subcode_expr: Option<&Expr>,
    kind: Kind,
) -> Option<Fired> {
    let expr = expr?;
    let fires = as_number(&ev.eval(expr, Some(ad), None)).is_some_and(|n| n != 0.0);
    if !fires {
        return None;
    }
    let reason = match reason_expr.map(|e| ev.eval(e, Some(ad), None)) {
        Some(Value::Str(s)) if !s.is_empty() => String::from_utf8_lossy(&s).into_owned(),
        _ => format!(
            "The system macro {macro_name} expression '{}' evaluated to TRUE",
            classad::unparse(expr)
        ),
    };
    let subcode = subcode_expr
        .and_then(|e| as_number(&ev.eval(e, Some(ad), None)))
        .map_or(0, |n| n as i64);
    Some(Fired {
        kind,
        code: hold_code::SYSTEM_POLICY,
        subcode,
        reason,
    })
}

/// The periodic checks in HTCondor's order.
fn periodic(ev: &mut Evaluator, ad: &ClassAd, system: &SystemPolicy) -> Option<Fired> {
    let status = status_of(ad);
    if status != JobStatus::Held {
        if let Some(f) = job_check(ev, ad, attr::PERIODIC_HOLD, Kind::Hold).or_else(|| {
            system_check(
                ev,
                ad,
                "SYSTEM_PERIODIC_HOLD",
                system.periodic_hold.as_ref(),
                system.periodic_hold_reason.as_ref(),
                system.periodic_hold_subcode.as_ref(),
                Kind::Hold,
            )
        }) {
            return Some(f);
        }
    }
    if status == JobStatus::Held
        && int_attr(ad, attr::HOLD_REASON_CODE) != Some(hold_code::USER_REQUEST)
    {
        if let Some(f) = job_check(ev, ad, attr::PERIODIC_RELEASE, Kind::Release).or_else(|| {
            system_check(
                ev,
                ad,
                "SYSTEM_PERIODIC_RELEASE",
                system.periodic_release.as_ref(),
                system.periodic_release_reason.as_ref(),
                None,
                Kind::Release,
            )
        }) {
            return Some(f);
        }
    }
    job_check(ev, ad, attr::PERIODIC_REMOVE, Kind::Remove).or_else(|| {
        system_check(
            ev,
            ad,
            "SYSTEM_PERIODIC_REMOVE",
            system.periodic_remove.as_ref(),
            system.periodic_remove_reason.as_ref(),
            None,
            Kind::Remove,
        )
    })
}

/// Carries out a fired expression; false if it changed nothing (holding a
/// job that is held already).
fn carry_out(
    p: &mut Planner<'_>,
    id: JobId,
    ad: &ClassAd,
    f: &Fired,
    now: i64,
    ended: bool,
) -> bool {
    let status = status_of(ad);
    match f.kind {
        Kind::Hold if status == JobStatus::Held => false,
        Kind::Hold => {
            p.hold(id, ad, f.code, f.subcode, &f.reason, now);
            true
        }
        Kind::Release => {
            p.release(id, ad, &f.reason, now);
            true
        }
        Kind::Remove => {
            p.remove(id, ad, &f.reason, now, ended);
            true
        }
    }
}

/// Sets the evaluator's clock for one planning call and restores it.
struct Clock<'e> {
    ev: &'e mut Evaluator,
    saved: classad::EvalOptions,
}

impl<'e> Clock<'e> {
    fn set(ev: &'e mut Evaluator, now: i64) -> Clock<'e> {
        let saved = *ev.options();
        let mut opts = saved;
        opts.now = now as f64;
        ev.set_options(opts);
        Clock { ev, saved }
    }
}

impl Drop for Clock<'_> {
    fn drop(&mut self) {
        self.ev.set_options(self.saved);
    }
}

impl Queue {
    /// Plans one pass of the periodic policy over the queue at time `now`
    /// (the evaluator's clock is set to `now` for the pass). See the
    /// module documentation for the rules.
    pub fn plan_periodic(&self, ev: &mut Evaluator, now: i64, system: &SystemPolicy) -> Txn {
        self.plan_periodic_of(ev, now, system, self.jobs())
    }

    /// [`Queue::plan_periodic`] for the named jobs only (those a state
    /// change just touched); ids no longer in the queue are skipped.
    pub fn plan_periodic_jobs(
        &self,
        ev: &mut Evaluator,
        now: i64,
        system: &SystemPolicy,
        ids: &[JobId],
    ) -> Txn {
        let jobs = ids
            .iter()
            .filter_map(|id| self.jobs.get(id).map(|ad| (*id, ad)));
        self.plan_periodic_of(ev, now, system, jobs)
    }

    /// The periodic policy in two halves, so that the expressions can be
    /// evaluated without holding the queue: [`periodic_decisions`] on a
    /// snapshot of the job ads ([`Queue::job_snapshot`]), then this plan,
    /// which carries out the decisions whose job ad is still the one that
    /// was evaluated (a job changed meanwhile waits for the next round).
    pub fn plan_periodic_decided(&self, decisions: &[PeriodicDecision], now: i64) -> Txn {
        let mut p = Planner::new(self);
        for d in decisions {
            let Some(ad) = self.jobs.get(&d.id) else {
                continue;
            };
            if !ad.same_ad(&d.ad) {
                continue;
            }
            match &d.fired {
                Some(f) => {
                    carry_out(&mut p, d.id, ad, f, now, false);
                }
                None => p.destroy(d.id, true),
            }
        }
        p.finish()
    }

    /// Every job ad (a cheap shared handle each), in job-id order.
    pub fn job_snapshot(&self) -> Vec<(JobId, ClassAd)> {
        self.jobs().map(|(id, ad)| (id, ad.clone())).collect()
    }

    fn plan_periodic_of<'a>(
        &'a self,
        ev: &mut Evaluator,
        now: i64,
        system: &SystemPolicy,
        jobs: impl Iterator<Item = (JobId, &'a ClassAd)>,
    ) -> Txn {
        let clock = Clock::set(ev, now);
        let mut p = Planner::new(self);
        for (id, ad) in jobs {
            if status_of(ad) == JobStatus::Completed {
                // kept by LeaveJobInQueue until it stops holding
                if !crate::spool::leave_in_queue(clock.ev, ad) {
                    p.destroy(id, true);
                }
                continue;
            }
            if status_of(ad) == JobStatus::Removed {
                continue;
            }
            if let Some(f) = periodic(clock.ev, ad, system) {
                carry_out(&mut p, id, ad, &f, now, false);
            }
        }
        p.finish()
    }

    /// Plans what happens when a job's process has ended: records the exit
    /// (`ExitBySignal`, `ExitCode` or `ExitSignal`, `JobCoreDumped`, CPU
    /// usage), then applies the policy: the periodic checks, then
    /// `OnExitHold` (Held, code 3, `OnExitHoldReason`/`OnExitHoldSubCode`),
    /// then `OnExitRemove` (missing or true: Completed with
    /// `CompletionDate`, a Terminated event, and the job leaves the queue to
    /// the history; false: back to Idle with a "terminated and requeued"
    /// Evicted event). A job already Removed just leaves the queue.
    pub fn plan_exit(&self, id: JobId, exit: &ExitInfo, now: i64) -> Result<Txn, QueueError> {
        let ad = self
            .jobs
            .get(&id)
            .ok_or_else(|| QueueError::NotFound(format!("job {id}")))?;
        let status = status_of(ad);
        let mut p = Planner::new(self);
        if status == JobStatus::Removed {
            p.destroy(id, true);
            return Ok(p.finish());
        }
        if !status.is_active() {
            return Err(QueueError::Conflict(format!(
                "job {id} is {}, not running",
                status.name().to_ascii_lowercase()
            )));
        }
        // the output has arrived: the transfer is over
        if status == JobStatus::TransferringOutput {
            p.set(id, crate::run::TRANSFERRING_OUTPUT, &Expr::boolean(false));
        }
        let termination = match (exit.signal, exit.exit_code) {
            (Some(signal), _) => Termination::Signal {
                signal,
                core_file: exit.core_file.clone(),
            },
            (None, Some(code)) => Termination::Normal { return_value: code },
            (None, None) => {
                return Err(QueueError::BadRequest(
                    "an exit needs an exit code or a signal".into(),
                ))
            }
        };
        // The exit attributes, in the transaction and in a scratch copy the
        // policy is evaluated on.
        let mut scratch = ad.clone();
        let mut sets: Vec<(&str, Expr)> = Vec::new();
        match &termination {
            Termination::Normal { return_value } => {
                sets.push((attr::EXIT_BY_SIGNAL, Expr::boolean(false)));
                sets.push((attr::EXIT_CODE, Expr::int(*return_value)));
            }
            Termination::Signal { signal, core_file } => {
                sets.push((attr::EXIT_BY_SIGNAL, Expr::boolean(true)));
                sets.push((attr::EXIT_SIGNAL, Expr::int(*signal)));
                sets.push((attr::JOB_CORE_DUMPED, Expr::boolean(core_file.is_some())));
            }
        }
        let cpu = |name: &str, add: i64| {
            let old = match ad.lookup(name) {
                Some(Expr::Lit(v)) => v.as_real().unwrap_or(0.0),
                _ => 0.0,
            };
            Expr::Lit(Value::Real(old + add as f64))
        };
        sets.push((
            attr::REMOTE_USER_CPU,
            cpu(attr::REMOTE_USER_CPU, exit.remote_usage.user_secs),
        ));
        sets.push((
            attr::REMOTE_SYS_CPU,
            cpu(attr::REMOTE_SYS_CPU, exit.remote_usage.sys_secs),
        ));
        for (name, e) in &sets {
            scratch.insert(*name, e.clone());
            p.set(id, name, e);
        }
        // the run's start, kept in the finished job's ad as HTCondor keeps it
        let run_start = match ad.lookup(crate::run::JOB_CURRENT_START_DATE) {
            Some(Expr::Lit(v)) => v.as_int(),
            _ => None,
        };
        self.account_run(&mut p, id, now, Some(&mut scratch), true);

        let mut ev = crate::plan::evaluator(now);
        let decision = if let Some(f) = periodic(&mut ev, &scratch, &SystemPolicy::default()) {
            Decision::Fire(f)
        } else if let Some(f) = job_check(&mut ev, &scratch, attr::ON_EXIT_HOLD, Kind::Hold) {
            Decision::Fire(f)
        } else if scratch.lookup(attr::ON_EXIT_REMOVE).is_none() {
            Decision::Complete
        } else {
            match job_check(&mut ev, &scratch, attr::ON_EXIT_REMOVE, Kind::Remove) {
                Some(f) if f.kind == Kind::Remove => Decision::Complete,
                Some(f) => Decision::Fire(f),
                None => Decision::Requeue,
            }
        };
        let exit_status = ExitStatus {
            termination: termination.clone(),
            run_remote: exit.remote_usage,
            run_local: exit.local_usage,
            total_remote: exit.remote_usage,
            total_local: exit.local_usage,
            sent_bytes: exit.sent_bytes,
            received_bytes: exit.received_bytes,
            total_sent_bytes: exit.sent_bytes,
            total_received_bytes: exit.received_bytes,
            resources: exit.resources.clone(),
        };
        match decision {
            Decision::Complete => {
                p.set_int(id, attr::LAST_JOB_STATUS, status.code());
                p.set_int(id, attr::JOB_STATUS, JobStatus::Completed.code());
                p.set_int(id, attr::ENTERED_CURRENT_STATUS, now);
                p.set_int(id, attr::COMPLETION_DATE, now);
                if let Some(start) = run_start {
                    p.set_int(id, crate::run::JOB_CURRENT_START_DATE, start);
                }
                p.event(id, UserLogEvent::Terminated(Box::new(exit_status)));
                // LeaveJobInQueue, on the job as it now is: kept as Completed
                scratch.insert_value(attr::JOB_STATUS, JobStatus::Completed.code());
                scratch.insert_value(attr::COMPLETION_DATE, now);
                if !crate::spool::leave_in_queue(&mut ev, &scratch) {
                    p.destroy(id, true);
                }
            }
            Decision::Fire(f) => {
                carry_out(&mut p, id, &scratch, &f, now, true);
            }
            Decision::Requeue => {
                // OnExitRemove was false: back to Idle.
                p.set_int(id, attr::LAST_JOB_STATUS, status.code());
                p.set_int(id, attr::JOB_STATUS, JobStatus::Idle.code());
                p.set_int(id, attr::ENTERED_CURRENT_STATUS, now);
                p.event(
                    id,
                    UserLogEvent::Evicted {
                        checkpointed: false,
                        requeued: Some(termination),
                        run_remote: exit.remote_usage,
                        run_local: exit.local_usage,
                        sent_bytes: exit.sent_bytes,
                        received_bytes: exit.received_bytes,
                        reason: None,
                        code: 0,
                        subcode: 0,
                    },
                );
            }
        }
        Ok(p.finish())
    }
}

/// What the exit policy decided.
enum Decision {
    /// A policy expression fired (hold, remove, or undefined: hold).
    Fire(Fired),
    /// `OnExitRemove`: the job completed.
    Complete,
    /// `OnExitRemove` was false: the job goes back to Idle.
    Requeue,
}
