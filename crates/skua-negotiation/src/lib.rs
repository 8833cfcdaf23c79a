//! The matchmaker's pure core.
//!
//! - [`negotiate`]: one negotiation cycle, a pure function of the slot ads,
//!   the submitters' resource requests (autoclusters with counts) and their
//!   priorities, and the time. It returns the matches it made and, per
//!   request, how many jobs found no slot.
//! - [`significant_attributes`]: the job attributes slot ads refer to, which
//!   the schedd groups its idle jobs by.
//! - [`analyze`]: why a job does or does not match (`skua q -better-analyze`):
//!   per-clause slot counts and the run analysis summary, as data.
//!
//! No I/O, no clock: the daemon (`skua-negotiator`) gathers the ads and
//! carries out the matches.

mod analyze;
mod cycle;

pub use analyze::{analyze, Analysis, ClauseCount};
pub use cycle::{
    negotiate, significant_attributes, CycleInput, CycleOutcome, Match, Request, Submitter,
    Unmatched,
};

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
