//! Asynchronous output transfer, the submit side: a starter whose job
//! exited reports "output transferring" (`/shadow/transferring`) before it
//! sends the job's outputs. The job becomes TransferringOutput (JobStatus
//! 6), its run leaves the claim's place in the registry for a place of its
//! own (its *draining* key, `<claim id>#<job>`), and the claim task is told
//! the run is over, so that the claim starts its next job while the
//! outputs still arrive. The outputs and the final exit are then taken
//! under the draining key (`shadow.rs` looks it up with [`run_key`]); the
//! job completes only with that exit, its outputs all in place.

use skua_net::{ApiError, Json, State};
use skua_proto::{Ack, JobExit, RunOutcome, StarterGone};
use skua_queue::RunEnd;

use crate::runs::{RunResult, Shadows};
use crate::shared::{with_schedd, Shared};

/// The registry key of the draining run of `job` under `claim_id`.
pub(crate) fn draining_key(claim_id: &str, job: &str) -> String {
    format!("{claim_id}#{job}")
}

/// The registry key a starter's request about `job` (if named) under
/// `claim_id` is found with: the claim's own when its current run is that
/// job (or no job is named), else the job's draining key when that run is
/// draining.
pub(crate) fn run_key(shadows: &Shadows, claim_id: &str, job: Option<&str>) -> String {
    let Some(job) = job else {
        return claim_id.to_string();
    };
    let runs = shadows.runs();
    let current = runs.get(claim_id).is_some_and(|r| r.job.to_string() == job);
    let key = draining_key(claim_id, job);
    if !current && runs.contains_key(&key) {
        key
    } else {
        claim_id.to_string()
    }
}

/// Removes a draining run once its final exit is recorded.
pub(crate) fn drained(shadows: &Shadows, key: &str, claim_id: &str) {
    if key != claim_id {
        shadows.runs().remove(key);
    }
}

/// `/shadow/transferring`: the job of the claim's current run exited
/// (`x.outcome`, recorded later with the final exit) and its outputs are
/// on their way. The job becomes TransferringOutput, its run drains under
/// its own key, and the claim goes on to its next job.
pub(crate) async fn transferring(
    State(st): State<Shared>,
    Json(x): Json<JobExit>,
) -> Result<Json<Ack>, ApiError> {
    if !matches!(
        x.outcome,
        RunOutcome::Exited { .. } | RunOutcome::Signaled { .. }
    ) {
        return Err(ApiError::bad_request(
            "only a job that exited by itself transfers its output in the background",
        ));
    }
    let job_name = x
        .job_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("a transferring report names its job"))?;
    let key = draining_key(&x.claim_id, &job_name);
    let (job, executed, done) = {
        let mut runs = st.shadows.runs();
        if runs.contains_key(&key) {
            // a repeat whose acknowledgement was lost
            return Ok(Json(Ack {}));
        }
        let current = runs
            .get(&x.claim_id)
            .is_some_and(|r| r.job.to_string() == job_name);
        if !current {
            return Err(ApiError::not_found("no run of that job under this claim"));
        }
        let Some(mut run) = runs.remove(&x.claim_id) else {
            return Err(ApiError::not_found("no run of that job under this claim"));
        };
        let executed = (x.executed && !run.executing).then(|| {
            run.executing = true;
            (run.startd_addr.clone(), run.slot.clone())
        });
        let done = run.done.take();
        let job = run.job;
        runs.insert(key, run);
        (job, executed, done)
    };
    let now = st.clock.now_secs();
    let result = with_schedd(&st, move |s| {
        if let Some((startd, slot)) = executed {
            s.executing(job, &startd, &slot, now)?;
        }
        s.transferring_output(job, now)
    })
    .await;
    st.changed.notify_one();
    if let Some(tx) = done {
        let _ = tx.send(RunResult::Reported { reusable: true });
    }
    result.map(|_| Json(Ack {}))
}

/// `/shadow/starter_gone` for a draining run: the starter went away before
/// the outputs all arrived. The job is never completed without them: its
/// run failed outside the job, and it goes back to Idle (or is held after
/// too many such failures). Whether `g` named a draining run.
pub(crate) async fn starter_gone(st: &Shared, g: &StarterGone) -> bool {
    let key = draining_key(&g.claim_id, &g.job_id);
    let Some(run) = st.shadows.runs().remove(&key) else {
        return false;
    };
    let job = run.job;
    let reason = format!("the job's output transfer was interrupted: {}", g.reason);
    tracing::warn!("job {job}: {reason}");
    let now = st.clock.now_secs();
    let end = RunEnd::Failed {
        reason,
        hold_code: 0,
        hold_subcode: 0,
        permanent: false,
    };
    let _ = with_schedd(st, move |s| {
        s.run_ended(job, &end, skua_queue::Rusage::default(), now)
    })
    .await;
    st.changed.notify_one();
    true
}
