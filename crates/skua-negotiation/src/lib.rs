//! The matchmaker's pure core.
//!
//! - [`negotiate`]: one negotiation cycle, a pure function of the slot ads,
//!   the submitters' resource requests (autoclusters with counts), their
//!   priorities, the policy and the time. It returns the matches it made
//!   (some preempting running jobs) and, per request, how many jobs found
//!   no slot. Fair share: HTCondor's pie spins; candidates in HTCondor's
//!   order; rank and priority preemption.
//! - [`Accountant`]: user priorities from usage (decaying with
//!   `PRIORITY_HALFLIFE`), priority factors, accumulated usage.
//! - [`significant_attributes`]: the job attributes slot ads refer to, which
//!   the schedd groups its idle jobs by.
//! - [`dedicated`]: the dedicated scheduler's decisions (which held claims
//!   go to which parallel job, FIFO, backfill take-back, claim release,
//!   whole-job restart, shutdown policy).
//! - [`analyze`]: why a job does or does not match (`skua q -better-analyze`):
//!   per-clause slot counts and the run analysis summary, as data.
//!
//! No I/O, no clock: the daemon (`skua-negotiator`) gathers the ads and
//! carries out the matches.

pub mod accountant;
mod analyze;
mod cycle;
pub mod dedicated;
mod undefined;

pub use accountant::{Accountant, AccountantError, Customer, InUse, Standing, MIN_PRIORITY};
pub use analyze::{analyze, Analysis, ClauseCount};
pub use cycle::{
    negotiate, significant_attributes, slot_weight, usage_from_slots, CycleInput, CycleOutcome,
    Match, Policy, PolicyError, Preemption, PreemptionKind, Request, Submitter, SubmitterFigures,
    Unmatched, DEFAULT_POST_JOB_RANK, DEFAULT_PREEMPTION_RANK, DEFAULT_PRE_JOB_RANK,
};
pub use undefined::{edit_distance, undefined_target_attrs, UndefinedAttr};

use classad::{EvalOptions, Evaluator};

/// An evaluator at time `now` (seconds since the epoch), with the local
/// time zone given as a function.
pub fn evaluator(now: i64, tz: classad::time::TzFn) -> Evaluator {
    Evaluator::new(EvalOptions {
        now: now as f64,
        tz,
        ..EvalOptions::default()
    })
}
