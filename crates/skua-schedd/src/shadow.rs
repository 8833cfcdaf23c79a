//! The shadow's side of a run: the routes a starter calls (`/shadow/*`),
//! finding their run by claim id in the claim registry (`runs.rs`). They
//! serve the job's input files, take its output back with the owner's
//! rights, record its updates and its exit in the queue, and tell the
//! claim task (`claim.rs`) how the run ended. `/shadow/starter_gone` is
//! the startd saying a starter went away without a report.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use classad::ClassAd;
use skua_daemon::account::Rights;
use skua_net::{ApiError, Body, HeaderMap, Json, Response, State};
use skua_proto::{
    Ack, BeginReply, InputFileRequest, JobExit, JobUpdate, OutputFileMeta, RunOutcome, ShadowBegin,
    StarterGone, UpdateKind, TRANSFER_HEADER,
};
use skua_queue::{ExitInfo, RunEnd, Rusage};

use crate::claim::ClaimQueue as _;
use crate::runs::{RunResult, ShadowFailure};
use crate::sandbox::{self, InputPlan};
use crate::shared::{with_schedd, Shared};

/// The errno of an I/O error (0 when it has none), a hold's subcode.
fn errno_of(e: &std::io::Error) -> i64 {
    e.raw_os_error().map(i64::from).unwrap_or(0)
}

/// `/shadow/starter_gone`: the startd says the starter of the job under
/// the claim exited without a report. The run is lost now (a report that
/// already arrived wins).
pub(crate) async fn starter_gone(
    State(st): State<Shared>,
    Json(g): Json<StarterGone>,
) -> Result<Json<Ack>, ApiError> {
    {
        let runs = st.shadows.runs();
        let run = runs.get(&g.claim_id).ok_or_else(unknown_claim)?;
        if run.job.to_string() != g.job_id {
            return Err(unknown_claim());
        }
    }
    if st
        .shadows
        .finish(&g.claim_id, RunResult::Lost(g.reason.clone()))
    {
        tracing::warn!("job {}: {}", g.job_id, g.reason);
    }
    Ok(Json(Ack {}))
}

// ---------------------------------------------------------------------
// Starter-facing routes.

fn unknown_claim() -> ApiError {
    ApiError::not_found("no job runs under this claim here")
}

pub(crate) async fn begin(
    State(st): State<Shared>,
    Json(req): Json<ShadowBegin>,
) -> Result<Json<BeginReply>, ApiError> {
    let job_ad = {
        let mut runs = st.shadows.runs();
        let run = runs.get_mut(&req.claim_id).ok_or_else(unknown_claim)?;
        if run.job.to_string() != req.job_id {
            return Err(unknown_claim());
        }
        if !req.transfer {
            run.inputs = Some(InputPlan::default());
            return Ok(Json(BeginReply::default()));
        }
        run.job_ad.clone()
    };
    // the inputs are looked at with the owner's rights
    let rights = owner_rights(&st, &job_ad)
        .map_err(|e| fail_run(&st, &req.claim_id, input_failure(e, None)))?;
    let planned = st
        .shadows
        .as_user
        .run_async(&rights, move || sandbox::plan_inputs(&job_ad))
        .await
        .map_err(|e| fail_run(&st, &req.claim_id, input_failure(e.to_string(), None)))?;
    match planned {
        Ok(plan) => {
            let inputs = plan.entries.clone();
            let mut runs = st.shadows.runs();
            let run = runs.get_mut(&req.claim_id).ok_or_else(unknown_claim)?;
            run.inputs = Some(plan);
            Ok(Json(BeginReply {
                inputs,
                checkpoint: None,
            }))
        }
        Err(e) => Err(fail_run(
            &st,
            &req.claim_id,
            ShadowFailure {
                reason: format!("transferring input files failed: {e}"),
                code: i64::from(e.hold_reason_code()),
                subcode: e.errno(),
                permanent: true,
            },
        )),
    }
}

pub(crate) async fn input_file(
    State(st): State<Shared>,
    Json(req): Json<InputFileRequest>,
) -> Result<Response, ApiError> {
    let (source, job_ad) = {
        let runs = st.shadows.runs();
        let run = runs.get(&req.claim_id).ok_or_else(unknown_claim)?;
        let plan = run
            .inputs
            .as_ref()
            .ok_or_else(|| ApiError::conflict("ask /shadow/begin first"))?;
        let source = plan
            .sources
            .get(req.index)
            .cloned()
            .flatten()
            .ok_or_else(|| ApiError::not_found(format!("no input file #{}", req.index)))?;
        (source, run.job_ad.clone())
    };
    // opened with the owner's rights: a file the owner cannot read is
    // refused exactly as it would be to them
    let rights = owner_rights(&st, &job_ad)
        .map_err(|e| fail_run(&st, &req.claim_id, input_failure(e, None)))?;
    let path = source.clone();
    let opened = st
        .shadows
        .as_user
        .run_async(&rights, move || std::fs::File::open(&path))
        .await
        .map_err(|e| fail_run(&st, &req.claim_id, input_failure(e.to_string(), None)))?;
    let file = opened.map_err(|e| {
        fail_run(
            &st,
            &req.claim_id,
            input_failure(
                format!("cannot read input file {}: {e}", source.display()),
                Some(&e),
            ),
        )
    })?;
    let result = skua_net::open_file_response(tokio::fs::File::from_std(file), &source).await;
    if let Err(e) = &result {
        let _ = fail_run(
            &st,
            &req.claim_id,
            input_failure(format!("input file {}: {e}", source.display()), None),
        );
    }
    result
}

/// The failure of an input transfer (HTCondor's hold code 13, the errno
/// as subcode): the job is held, a retry cannot help.
fn input_failure(reason: String, error: Option<&std::io::Error>) -> ShadowFailure {
    ShadowFailure {
        reason: format!("transferring input files failed: {reason}"),
        code: i64::from(sandbox::HOLD_TRANSFER_INPUT_ERROR),
        subcode: error.map(errno_of).unwrap_or(0),
        permanent: true,
    }
}

/// The failure of an output transfer (hold code 12, the errno as subcode).
fn output_failure(
    reason: String,
    error: Option<&std::io::Error>,
    permanent: bool,
) -> ShadowFailure {
    ShadowFailure {
        reason: format!("transferring output files failed: {reason}"),
        code: i64::from(sandbox::HOLD_TRANSFER_OUTPUT_ERROR),
        subcode: error.map(errno_of).unwrap_or(0),
        permanent,
    }
}

/// Records `failure` on the run of `claim_id` (reported when the starter
/// gives up) and gives the error to answer the starter with.
fn fail_run(st: &Shared, claim_id: &str, failure: ShadowFailure) -> ApiError {
    let err = ApiError::not_found(failure.reason.clone());
    if let Some(run) = st.shadows.runs().get_mut(claim_id) {
        run.failure = Some(failure);
    }
    err
}

/// The rights the shadow uses for the files of the job `ad`: its owner's
/// (the daemon's own when the schedd is not root).
fn owner_rights(st: &Shared, ad: &ClassAd) -> Result<Rights, String> {
    let owner = sandbox::string_attr(ad, "Owner").unwrap_or_default();
    st.shadows
        .as_user
        .rights_of(&owner)
        .map_err(|e| format!("the job's owner: {e}"))
}

pub(crate) async fn output_file(
    State(st): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Ack>, ApiError> {
    let meta: OutputFileMeta = headers
        .get(TRANSFER_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::bad_request(format!("the {TRANSFER_HEADER} header is missing")))
        .and_then(|v| {
            serde_json_from_str(v)
                .map_err(|e| ApiError::bad_request(format!("the {TRANSFER_HEADER} header: {e}")))
        })?;
    if let Some(job) = meta.job_id.as_deref() {
        let current = st
            .shadows
            .runs()
            .get(&meta.claim_id)
            .is_some_and(|r| r.job.to_string() == job);
        if !current && st.shadows.finished(&meta.claim_id, job) {
            // a repeat for a run already over (its starter did not hear
            // the answer): taken and dropped
            let mut sink = tokio::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .await
                .map_err(|e| ApiError::internal(format!("/dev/null: {e}")))?;
            skua_net::receive_into(
                body,
                &mut sink,
                Path::new("/dev/null"),
                skua_net::RECEIVE_IDLE_TIMEOUT,
            )
            .await?;
            return Ok(Json(Ack {}));
        }
    }
    let (dest, job_ad) = {
        let runs = st.shadows.runs();
        let run = runs
            .get(&meta.claim_id)
            .filter(|r| {
                meta.job_id
                    .as_deref()
                    .is_none_or(|j| j == r.job.to_string())
            })
            .ok_or_else(unknown_claim)?;
        let dest = sandbox::output_path(&run.job_ad, &meta.name)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        (dest, run.job_ad.clone())
    };
    let claim = meta.claim_id.as_str();
    let rights = owner_rights(&st, &job_ad)
        .map_err(|e| fail_run(&st, claim, output_failure(e, None, true)))?;
    // Everything with the owner's rights: the directories, a temporary file
    // beside the destination (never following a link), the rename over it.
    let as_user = st.shadows.as_user.clone();
    let d = dest.clone();
    let opened = as_user
        .run_async(&rights, move || create_beside(&d))
        .await
        .map_err(|e| fail_run(&st, claim, output_failure(e.to_string(), None, true)))?;
    let (file, tmp) = opened.map_err(|e| {
        fail_run(
            &st,
            claim,
            output_failure(
                format!("cannot write {}: {e}", dest.display()),
                Some(&e),
                true,
            ),
        )
    })?;
    let mut file = tokio::fs::File::from_std(file);
    let received =
        skua_net::receive_into(body, &mut file, &dest, skua_net::RECEIVE_IDLE_TIMEOUT).await;
    // the mode the job gave it, without set-user-id, set-group-id or
    // sticky bits: a file comes back as the owner's plain file
    let mode = if meta.mode == 0 {
        0o644
    } else {
        meta.mode & 0o777
    };
    let stored = match received {
        Ok(_) => file
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .await
            .map_err(|e| {
                (
                    format!("cannot set the mode of {}: {e}", dest.display()),
                    Some(e),
                )
            }),
        Err(e) => Err((e.to_string(), None)),
    };
    drop(file);
    let (t, d) = (tmp.clone(), dest.clone());
    let renamed = match stored {
        Ok(()) => as_user
            .run_async(&rights, move || std::fs::rename(&t, &d))
            .await
            .map_err(|e| (e.to_string(), None))
            .and_then(|r| {
                r.map_err(|e| {
                    (
                        format!("cannot rename into {}: {e}", dest.display()),
                        Some(e),
                    )
                })
            }),
        Err(e) => Err(e),
    };
    match renamed {
        Ok(()) => Ok(Json(Ack {})),
        Err((reason, error)) => {
            let t = tmp.clone();
            let _ = as_user
                .run_async(&rights, move || std::fs::remove_file(&t))
                .await;
            // a broken-off transfer may succeed again; a refused file not
            let permanent = error.is_some();
            Err(fail_run(
                &st,
                claim,
                output_failure(
                    format!("output file {}: {reason}", dest.display()),
                    error.as_ref(),
                    permanent,
                ),
            ))
        }
    }
}

/// Creates the directories of `dest` and a new temporary file beside it
/// (`.NAME.part-PID-N`, mode 0600, created exclusively, never through a
/// symbolic link). Runs with the owner's rights.
fn create_beside(dest: &Path) -> std::io::Result<(std::fs::File, std::path::PathBuf)> {
    use std::os::unix::fs::OpenOptionsExt;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = dest.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")
    })?;
    if let Some(parent) = dest.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)?;
        }
    }
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".part-{}-{n}", std::process::id()));
    let tmp = dest.with_file_name(tmp_name);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    Ok((file, tmp))
}

fn serde_json_from_str<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, String> {
    serde_json::from_str(s).map_err(|e| e.to_string())
}

pub(crate) async fn update(
    State(st): State<Shared>,
    Json(u): Json<JobUpdate>,
) -> Result<Json<Ack>, ApiError> {
    let (job, slot, startd) = {
        let mut runs = st.shadows.runs();
        let run = runs.get_mut(&u.claim_id).ok_or_else(unknown_claim)?;
        if u.kind == UpdateKind::Executing {
            run.executing = true;
        }
        (run.job, run.slot.clone(), run.startd_addr.clone())
    };
    let usage = u.usage;
    let now = st.clock.now_secs();
    match u.kind {
        UpdateKind::Executing => {
            st.executing(job, &startd, &slot).await?;
        }
        UpdateKind::Suspended | UpdateKind::Unsuspended => {
            let on = u.kind == UpdateKind::Suspended;
            with_schedd(&st, move |s| s.suspended(job, on, now)).await?;
        }
        UpdateKind::Usage => {
            if usage.image_size_kb > 0 {
                with_schedd(&st, move |s| {
                    s.usage(
                        job,
                        usage.image_size_kb as i64,
                        usage.resident_set_size_kb as i64,
                        now,
                    )
                })
                .await?;
            }
        }
    }
    Ok(Json(Ack {}))
}

pub(crate) async fn exit(
    State(st): State<Shared>,
    Json(x): Json<JobExit>,
) -> Result<Json<Ack>, ApiError> {
    // a run being reconnected: its reconnection is logged first (waited
    // for a few seconds at most)
    let gate = st
        .shadows
        .runs()
        .get(&x.claim_id)
        .and_then(|r| r.gate.clone());
    if let Some(mut g) = gate {
        let _ =
            tokio::time::timeout(std::time::Duration::from_secs(5), g.wait_for(|open| *open)).await;
    }
    let repeat = {
        let runs = st.shadows.runs();
        let run = runs
            .get(&x.claim_id)
            .filter(|r| x.job_id.as_deref().is_none_or(|j| j == r.job.to_string()));
        let job = x.job_id.clone().or_else(|| run.map(|r| r.job.to_string()));
        let over = run.is_none_or(|r| r.done.is_none());
        over && job.is_some_and(|j| st.shadows.finished(&x.claim_id, &j))
    };
    if repeat {
        // recorded already; its acknowledgement was lost
        tracing::info!("a repeated exit report under a finished run: acknowledged again");
        return Ok(Json(Ack {}));
    }
    let (job, failure, done, executed) = {
        let mut runs = st.shadows.runs();
        let run = runs
            .get_mut(&x.claim_id)
            .filter(|r| x.job_id.as_deref().is_none_or(|j| j == r.job.to_string()))
            .ok_or_else(unknown_claim)?;
        // a short job's execution comes with its exit
        let executed = (x.executed && !run.executing).then(|| {
            run.executing = true;
            (run.startd_addr.clone(), run.slot.clone())
        });
        (run.job, run.failure.clone(), run.done.take(), executed)
    };
    let rusage = Rusage {
        user_secs: x.usage.user_cpu_secs as i64,
        sys_secs: x.usage.sys_cpu_secs as i64,
    };
    let usage = x.usage;
    let outcome = x.outcome;
    let reusable = matches!(
        outcome,
        RunOutcome::Exited { .. } | RunOutcome::Signaled { .. } | RunOutcome::Failed { .. }
    );
    let now = st.clock.now_secs();
    let result = with_schedd(&st, move |s| {
        if let Some((startd, slot)) = executed {
            s.executing(job, &startd, &slot, now)?;
        }
        if usage.image_size_kb > 0 {
            s.usage(
                job,
                usage.image_size_kb as i64,
                usage.resident_set_size_kb as i64,
                now,
            )?;
        }
        match outcome {
            RunOutcome::Exited { code } => s.job_exited(
                job,
                &ExitInfo {
                    exit_code: Some(i64::from(code)),
                    remote_usage: rusage,
                    ..ExitInfo::default()
                },
                now,
            ),
            RunOutcome::Signaled {
                signal,
                core_dumped,
            } => s.job_exited(
                job,
                &ExitInfo {
                    signal: Some(i64::from(signal)),
                    core_file: core_dumped.then(|| "core".to_string()),
                    remote_usage: rusage,
                    ..ExitInfo::default()
                },
                now,
            ),
            RunOutcome::Evicted { reason } => {
                s.run_ended(job, &RunEnd::Evicted { reason }, rusage, now)
            }
            RunOutcome::Held {
                reason,
                code,
                subcode,
            } => s.run_ended(
                job,
                &RunEnd::Held {
                    reason,
                    code,
                    subcode,
                },
                rusage,
                now,
            ),
            RunOutcome::Failed { reason, permanent } => {
                let end = match failure {
                    Some(f) => RunEnd::Failed {
                        reason: f.reason,
                        hold_code: f.code,
                        hold_subcode: f.subcode,
                        permanent: f.permanent || permanent,
                    },
                    None => RunEnd::Failed {
                        reason,
                        hold_code: 0,
                        hold_subcode: 0,
                        permanent,
                    },
                };
                s.run_ended(job, &end, rusage, now)
            }
        }
    })
    .await;
    if result.is_ok() {
        st.shadows.remember_finished(&x.claim_id, job);
    }
    st.changed.notify_one();
    if let Some(tx) = done {
        let _ = tx.send(RunResult::Reported { reusable });
    }
    result.map(|_| Json(Ack {}))
}
