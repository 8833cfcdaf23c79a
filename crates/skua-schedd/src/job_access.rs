//! `skua tail` and `skua ssh_to_job` (issue 16, "watching jobs"): the
//! schedd checks that the caller owns the job (or is a queue
//! administrator), finds the job's run (its claim and startd) and asks
//! that startd, naming the claim, to read the job's file or run the
//! command in the job's sandbox (docs/protocol.md, "Reaching a running
//! job").

use std::time::Duration;

use classad::ClassAd;
use skua_net::{ApiError, Caller, Json, State};
use skua_proto::{
    routes, JobCommandReply, JobCommandRequest, SandboxChunk, SandboxFile, SandboxReadRequest,
    StartdJobCommand, StartdSandboxRead,
};
use skua_queue::JobId;

use crate::sandbox::{split_list, string_attr};
use crate::shared::Shared;

/// How long a sandbox read at the startd may take.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a job command may take (the startd kills it after an hour).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(3660);

fn denied(msg: String) -> ApiError {
    ApiError::new(skua_proto::ErrorCode::PermissionDenied, msg)
}

/// Job `text` (`C.P`, or `C` for proc 0) and its ad, if the caller owns it
/// or is a queue administrator.
async fn owned_job(st: &Shared, caller: &Caller, text: &str) -> Result<(JobId, ClassAd), ApiError> {
    let full = if text.contains('.') {
        text.to_string()
    } else {
        format!("{text}.0")
    };
    crate::shared::owned_job(st, caller, &full).await
}

/// The claim id and startd address of job `job`'s run, once it executes.
fn run_of(st: &Shared, job: JobId) -> Result<(String, String), ApiError> {
    st.shadows
        .runs()
        .iter()
        .find(|(_, r)| r.job == job && r.executing)
        .map(|(claim, r)| (claim.clone(), r.startd_addr.clone()))
        .ok_or_else(|| ApiError::conflict(format!("job {job} is not running")))
}

fn startd_error(e: skua_net::NetError) -> ApiError {
    match e {
        skua_net::NetError::Remote { body, .. } => ApiError::new(body.code, body.message),
        other => ApiError::unavailable(format!("the job's execute host: {other}")),
    }
}

/// `/schedd/job_sandbox_read`.
pub(crate) async fn sandbox_read(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<SandboxReadRequest>,
) -> Result<Json<SandboxChunk>, ApiError> {
    let (job, ad) = owned_job(&st, &caller, &req.job_id).await?;
    if let SandboxFile::Named(name) = &req.file {
        let listed = string_attr(&ad, "TransferOutput")
            .map(|l| split_list(&l))
            .unwrap_or_default();
        if !listed.iter().any(|l| l.trim_end_matches('/') == name) {
            return Err(ApiError::bad_request(format!(
                "`{name}` is not in the transfer_output_files of job {job}"
            )));
        }
    }
    let (claim_id, addr) = run_of(&st, job)?;
    let client = st
        .shadows
        .dialer
        .client_at(&addr, READ_TIMEOUT)
        .map_err(ApiError::unavailable)?;
    let request = StartdSandboxRead {
        claim_id,
        job_id: job.to_string(),
        file: req.file,
        offset: req.offset,
        max_bytes: req.max_bytes,
    };
    client
        .command(&routes::STARTD_SANDBOX_READ, Some(&request))
        .await
        .map(Json)
        .map_err(startd_error)
}

/// Whether `SCHEDD_ENABLE_SSH_TO_JOB` (evaluated in the job's ad) lets the
/// job be entered: true unless it is false or not a boolean.
fn ssh_enabled(st: &Shared, ad: &ClassAd) -> bool {
    let Some(expr) = &st.shadows.ssh_to_job else {
        return true;
    };
    match classad::Evaluator::default().eval(expr, Some(ad), None) {
        classad::Value::Bool(b) => b,
        classad::Value::Int(i) => i != 0,
        _ => false,
    }
}

/// `/schedd/ssh_to_job`.
pub(crate) async fn ssh_to_job(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<JobCommandRequest>,
) -> Result<Json<JobCommandReply>, ApiError> {
    let (job, ad) = owned_job(&st, &caller, &req.job_id).await?;
    if !ssh_enabled(&st, &ad) {
        return Err(denied(format!(
            "Job {}.{} is denied by SCHEDD_ENABLE_SSH_TO_JOB.",
            job.cluster, job.proc
        )));
    }
    let (claim_id, addr) = run_of(&st, job)?;
    tracing::info!(
        "{} enters job {job} (ssh_to_job) at {addr}",
        caller.identity
    );
    let client = st
        .shadows
        .dialer
        .client_at(&addr, COMMAND_TIMEOUT)
        .map_err(ApiError::unavailable)?;
    let request = StartdJobCommand {
        claim_id,
        job_id: job.to_string(),
        argv: req.argv,
        stdin: req.stdin,
    };
    client
        .command(&routes::STARTD_JOB_COMMAND, Some(&request))
        .await
        .map(Json)
        .map_err(startd_error)
}
