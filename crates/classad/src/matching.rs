//! Matchmaking: two ads evaluating each other's Requirements and Rank.

use crate::ad::ClassAd;
use crate::eval::Evaluator;
use crate::name::well_known as wk;
use crate::value::Value;

/// The outcome of matching a job ad against a machine ad.
#[derive(Clone, Debug)]
pub struct MatchResult {
    /// Both Requirements hold.
    pub matched: bool,
    /// The job's Requirements hold against the machine.
    pub job_requirements_ok: bool,
    /// The machine's Requirements hold against the job.
    pub machine_requirements_ok: bool,
}

/// `symmetricMatch`: the job's Requirements with the machine as TARGET and
/// the machine's Requirements with the job as TARGET must both be true
/// (`true` or a non-zero number; a missing Requirements is false).
pub fn symmetric_match(ev: &mut Evaluator, job: &ClassAd, machine: &ClassAd) -> MatchResult {
    let (job_req, machine_req) = ev.eval_pair(job, wk::REQUIREMENTS, machine, wk::REQUIREMENTS);
    let (job_ok, machine_ok) = (job_req.is_true(), machine_req.is_true());
    MatchResult {
        matched: job_ok && machine_ok,
        job_requirements_ok: job_ok,
        machine_requirements_ok: machine_ok,
    }
}

/// `my`'s Rank evaluated with `target` as TARGET (UNDEFINED if absent).
pub fn rank(ev: &mut Evaluator, my: &ClassAd, target: &ClassAd) -> Value {
    ev.eval_sym(wk::RANK, my, Some(target))
}
