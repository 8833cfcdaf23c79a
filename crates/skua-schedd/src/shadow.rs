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
use skua_net::{ApiError, Body, Caller, HeaderMap, Json, Response, State};
use skua_proto::{
    Ack, BeginReply, CheckpointCommit, CheckpointFileMeta, CheckpointInfo, InputFileRequest,
    JobExit, JobUpdate, OutputFileMeta, RunOutcome, ShadowBegin, StarterGone, UpdateKind,
    TRANSFER_HEADER,
};
use skua_queue::{ExitInfo, JobId, RunEnd, Rusage};

use crate::checkpoint;
use crate::claim::ClaimQueue as _;
use crate::local_copy;
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
    if crate::async_output::starter_gone(&st, &g).await {
        return Ok(Json(Ack {}));
    }
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

pub(crate) fn unknown_claim() -> ApiError {
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
        run.job_ad.clone()
    };
    if !req.transfer {
        // a shared file system: no files travel (the job's files are in
        // place), but the numbering of its checkpoints goes on
        let checkpoint = add_checkpoint(&st, &req, &mut InputPlan::default()).await?;
        let mut runs = st.shadows.runs();
        let run = runs.get_mut(&req.claim_id).ok_or_else(unknown_claim)?;
        run.inputs = Some(InputPlan::default());
        return Ok(Json(BeginReply {
            inputs: Vec::new(),
            checkpoint,
        }));
    }
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
        Ok(mut plan) => {
            let checkpoint = add_checkpoint(&st, &req, &mut plan).await?;
            let inputs = plan.entries.clone();
            let mut runs = st.shadows.runs();
            let run = runs.get_mut(&req.claim_id).ok_or_else(unknown_claim)?;
            run.inputs = Some(plan);
            Ok(Json(BeginReply { inputs, checkpoint }))
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

/// The recorded checkpoint number of the job `ad`, if any.
pub(crate) fn checkpoint_number(ad: &ClassAd) -> Option<u64> {
    skua_queue::int_attr(ad, skua_queue::attr::CHECKPOINT_NUMBER)
        .and_then(|n| u64::try_from(n).ok())
}

/// Where the job `ad`'s checkpoints are stored and with whose rights
/// (the schedd's in its spool, the owner's at a `checkpoint_destination`).
pub(crate) fn checkpoint_store(
    st: &Shared,
    ad: &ClassAd,
) -> Result<(checkpoint::Location, Rights), String> {
    let spool = st
        .shadows
        .checkpoint_root
        .as_deref()
        .ok_or_else(|| "the schedd has no SPOOL to store checkpoints in".to_string())?;
    let loc = checkpoint::location(ad, spool).map_err(|e| e.to_string())?;
    let rights = if loc.as_owner {
        owner_rights(st, ad)?
    } else {
        Rights::Daemon
    };
    Ok((loc, rights))
}

/// At the start of a run: drops what an earlier run left unrecorded (a
/// cut transfer, a commit never recorded) and, when the job has a stored
/// checkpoint, appends its files to `plan` (a checkpoint file replaces an
/// input of the same name, never the executable) and names it.
async fn add_checkpoint(
    st: &Shared,
    req: &ShadowBegin,
    plan: &mut InputPlan,
) -> Result<Option<CheckpointInfo>, ApiError> {
    let (job, job_ad) = {
        let runs = st.shadows.runs();
        let run = runs.get(&req.claim_id).ok_or_else(unknown_claim)?;
        (run.job, run.job_ad.clone())
    };
    // A checkpoint of the job's last run may still be being made
    // durable: wait for it, then take the number the queue records now
    // (the run's ad is the queue's at the run's start, which may be older).
    st.shadows.lane_settled(job).await;
    // a failure of the last run's commit was that run's: this run starts
    // from the checkpoint recorded
    if st.shadows.lane_failure(job).is_some() {
        tracing::info!("job {job}: begins from its recorded checkpoint");
    }
    let recorded = with_schedd(st, move |s| {
        Ok(s.job_ad(job).as_ref().map(checkpoint_number))
    })
    .await?;
    let number = recorded.unwrap_or_else(|| checkpoint_number(&job_ad));
    let Some(spool) = st.shadows.checkpoint_root.as_deref() else {
        return Ok(number.map(|number| CheckpointInfo {
            number,
            backend: None,
        }));
    };
    let uses_destination = sandbox::string_attr(&job_ad, checkpoint::CHECKPOINT_DESTINATION)
        .is_some_and(|d| !d.is_empty());
    if number.is_none() && (uses_destination || !checkpoint::job_dir(spool, job).exists()) {
        return Ok(None);
    }
    let fail = |reason: String, errno: i64| {
        fail_run(
            st,
            &req.claim_id,
            ShadowFailure {
                reason: format!("transferring input files failed: {reason}"),
                code: i64::from(sandbox::HOLD_TRANSFER_INPUT_ERROR),
                subcode: errno,
                permanent: true,
            },
        )
    };
    let (loc, rights) = checkpoint_store(st, &job_ad).map_err(|e| fail(e, 0))?;
    let root = loc.root.clone();
    let listed = st
        .shadows
        .as_user
        .run_async(&rights, move || {
            checkpoint::prune(&root, job, number)?;
            match number {
                Some(n) => checkpoint::entries(&root, job, n),
                None => Ok(Vec::new()),
            }
        })
        .await
        .map_err(|e| fail(e.to_string(), 0))?;
    let listed = listed.map_err(|e| {
        let errno = e.errno();
        fail(
            format!(
                "checkpoint {} of job {job}: {e}",
                number.unwrap_or_default()
            ),
            errno,
        )
    })?;
    let Some(number) = number else {
        return Ok(None);
    };
    let backend = sandbox::string_attr(&job_ad, skua_queue::attr::CHECKPOINT_BACKEND)
        .filter(|b| !b.is_empty());
    for (entry, source) in listed {
        match plan.entries.iter().position(|e| e.path == entry.path) {
            Some(i) if plan.entries[i].executable => continue,
            Some(i) if entry.kind == skua_proto::EntryKind::Dir => {
                if plan.entries[i].kind == skua_proto::EntryKind::Dir {
                    continue;
                }
                plan.entries.remove(i);
                plan.sources.remove(i);
            }
            Some(i) => {
                plan.entries.remove(i);
                plan.sources.remove(i);
            }
            None => {}
        }
        plan.entries.push(entry);
        plan.sources.push(source);
    }
    Ok(Some(CheckpointInfo { number, backend }))
}

pub(crate) async fn input_file(
    State(st): State<Shared>,
    Json(req): Json<InputFileRequest>,
) -> Result<Response, ApiError> {
    let (source, job_ad, stored) = {
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
        let stored = plan.entries.get(req.index).is_some_and(|e| e.checkpoint);
        (source, run.job_ad.clone(), stored)
    };
    // opened with the owner's rights: a file the owner cannot read is
    // refused exactly as it would be to them; a stored checkpoint's file
    // with the store's rights
    let rights = if stored {
        checkpoint_store(&st, &job_ad).map(|(_, r)| r)
    } else {
        owner_rights(&st, &job_ad)
    }
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
pub(crate) fn owner_rights(st: &Shared, ad: &ClassAd) -> Result<Rights, String> {
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
    let meta: OutputFileMeta = transfer_meta(&headers)?;
    // a run draining its outputs has a key of its own
    let key = crate::async_output::run_key(&st.shadows, &meta.claim_id, meta.job_id.as_deref());
    if let Some(job) = meta.job_id.as_deref() {
        let current = st
            .shadows
            .runs()
            .get(&key)
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
            .get(&key)
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
    let claim = key.as_str();
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
pub(crate) fn create_beside(dest: &Path) -> std::io::Result<(std::fs::File, std::path::PathBuf)> {
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

/// The run of `claim_id` if it runs job `job_id`: its job and ad.
pub(crate) fn run_of(
    st: &Shared,
    claim_id: &str,
    job_id: &str,
) -> Result<(skua_queue::JobId, ClassAd), ApiError> {
    let runs = st.shadows.runs();
    let run = runs
        .get(claim_id)
        .filter(|r| r.job.to_string() == job_id)
        .ok_or_else(unknown_claim)?;
    Ok((run.job, run.job_ad.clone()))
}

/// Logs the start of checkpoint `number`'s upload by the run of
/// `claim_id`, once.
async fn upload_started(st: &Shared, claim_id: &str, job: skua_queue::JobId, number: u64) {
    let first = st
        .shadows
        .runs()
        .get_mut(claim_id)
        .is_some_and(|r| r.checkpoint_upload.replace(number) != Some(number));
    if first {
        let now = st.clock.now_secs();
        if let Err(e) = with_schedd(st, move |s| s.checkpoint_upload(job, now)).await {
            tracing::warn!("job {job}: logging its checkpoint upload: {}", e.0.message);
        }
    }
}

/// `/shadow/checkpoint_file`: one file of a checkpoint, streamed into the
/// checkpoint's staging area (never over a stored checkpoint). A file the
/// store cannot take is refused with `Conflict`, naming it.
pub(crate) async fn checkpoint_file(
    State(st): State<Shared>,
    caller: Caller,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Ack>, ApiError> {
    let meta: CheckpointFileMeta = transfer_meta(&headers)?;
    let (job, job_ad) = run_of(&st, &meta.claim_id, &meta.job_id)?;
    checkpoint::check_name(&meta.name).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let refuse = |what: String| {
        ApiError::conflict(format!(
            "cannot store checkpoint file {} (checkpoint {} of job {job}): {what}",
            meta.name, meta.number
        ))
    };
    // a checkpoint of this run whose durable step failed: told now
    if let Some(reason) = st.shadows.lane_failure(job) {
        return Err(refuse(reason));
    }
    let (loc, rights) = checkpoint_store(&st, &job_ad).map_err(refuse)?;
    // A file named on this host is opened first, with the owner's rights
    // (as the starter read it): one that is not the file named is
    // refused before anything is staged, and the starter sends the bytes.
    let local = match &meta.local {
        None => None,
        Some(src) => Some(open_local(&st, &caller, &job_ad, src).await?),
    };
    upload_started(&st, &meta.claim_id, job, meta.number).await;
    let as_user = st.shadows.as_user.clone();
    let (root, number, name) = (loc.root.clone(), meta.number, meta.name.clone());
    let (file, path) = as_user
        .run_async(&rights, move || {
            checkpoint::create_staged(&root, job, number, &name)
        })
        .await
        .map_err(|e| refuse(e.to_string()))?
        .map_err(|e| refuse(e.to_string()))?;
    // not synced here: the commit makes the whole checkpoint durable
    let received = match local {
        Some((mut from, len)) => {
            let mut to = file;
            let p = path.clone();
            tokio::task::spawn_blocking(move || {
                local_copy::copy(&mut from, &mut to, len)
                    .map_err(|e| ApiError::internal(format!("cannot write {}: {e}", p.display())))
            })
            .await
            .unwrap_or_else(|e| Err(ApiError::internal(format!("copying {}: {e}", meta.name))))
        }
        None => {
            let mut file = tokio::fs::File::from_std(file);
            skua_net::receive_unsynced(body, &mut file, &path, skua_net::RECEIVE_IDLE_TIMEOUT).await
        }
    };
    let result = match received {
        // a write that failed on this side is the store's failure
        Err(e) if e.0.code == skua_proto::ErrorCode::Internal => Err(refuse(e.0.message)),
        Err(e) => Err(e),
        Ok(_) => {
            let (p, mode) = (path.clone(), meta.mode);
            as_user
                .run_async(&rights, move || checkpoint::set_mode(&p, mode))
                .await
                .map_err(|e| refuse(e.to_string()))?
                .map_err(|e| refuse(e.to_string()))
        }
    };
    if result.is_err() {
        let p = path.clone();
        let _ = as_user
            .run_async(&rights, move || std::fs::remove_file(&p))
            .await;
    }
    result.map(|()| Json(Ack {}))
}

/// `/shadow/checkpoint_commit`: the files of a checkpoint are all sent;
/// it becomes the job's checkpoint at once (renamed into place), is
/// recorded in the job ad, and the older ones are removed. A commit of a
/// checkpoint already recorded is acknowledged again.
pub(crate) async fn checkpoint_commit(
    State(st): State<Shared>,
    Json(c): Json<CheckpointCommit>,
) -> Result<Json<Ack>, ApiError> {
    let (job, job_ad) = run_of(&st, &c.claim_id, &c.job_id)?;
    let refuse = |what: String| {
        ApiError::conflict(format!(
            "cannot store checkpoint {} of job {job}: {what}",
            c.number
        ))
    };
    // an earlier checkpoint of the run whose durable step failed
    if let Some(reason) = st.shadows.lane_failure(job) {
        return Err(refuse(reason));
    }
    let checked = async {
        let recorded = with_schedd(&st, move |s| {
            Ok(s.job_ad(job).as_ref().and_then(checkpoint_number))
        })
        .await?;
        if recorded.is_some_and(|r| r >= c.number) {
            tracing::info!(
                "job {job}: checkpoint {} is recorded already: acknowledged again",
                c.number
            );
            return Ok(None);
        }
        let (loc, rights) = checkpoint_store(&st, &job_ad).map_err(refuse)?;
        let (root, number, files) = (loc.root.clone(), c.number, c.files.clone());
        // Every file is here: the reply goes now, and the job restarts
        // while its checkpoint is made durable (synced, renamed into
        // place, then recorded) beside it. Until then the previous
        // checkpoint stays the job's, whole: a crash in between loses
        // only this one.
        st.shadows
            .as_user
            .run_async(&rights, move || {
                checkpoint::check_staged(&root, job, number, &files)
            })
            .await
            .map_err(|e| refuse(e.to_string()))?
            .map_err(|e| refuse(e.to_string()))?;
        Ok(Some((loc, rights)))
    }
    .await;
    let (loc, rights) = match checked {
        Ok(Some(store)) => store,
        other => return other.map(|_| Json(Ack {})),
    };
    // (a checkpoint of no files has its start logged now)
    upload_started(&st, &c.claim_id, job, c.number).await;
    let restarts = c.kind == skua_proto::CheckpointKind::Exit;
    let number = c.number;
    // the durable step runs after those of the job's earlier commits
    let (ticket, mut turn) = st.shadows.lane_ticket(job);
    let st2 = st.clone();
    let durable = tokio::spawn(async move {
        let _ = turn.wait_for(|d| *d + 1 >= ticket).await;
        let outcome = make_durable(&st2, &c, job, loc.root, rights).await;
        let failure = match &outcome {
            Err(reason) if restarts => {
                let reason = format!("checkpoint {} was not stored: {reason}", c.number);
                tracing::error!("job {job}: {reason}");
                Some(reason)
            }
            _ => None,
        };
        st2.shadows.lane_done(job, ticket, failure);
        outcome
    });
    if restarts {
        return Ok(Json(Ack {}));
    }
    // A checkpoint taken as the run ends (eviction, a transparent dump)
    // has no restart waiting on it: it is durable and recorded before the
    // reply, so the run's end finds it.
    let refuse = |what: String| {
        ApiError::conflict(format!(
            "cannot store checkpoint {number} of job {job}: {what}"
        ))
    };
    match durable.await {
        Ok(Ok(())) => Ok(Json(Ack {})),
        Ok(Err(reason)) => Err(refuse(reason)),
        Err(e) => Err(refuse(e.to_string())),
    }
}

/// The part of a commit after its reply: the staged checkpoint synced and
/// renamed into place, recorded in the job ad, then the older ones
/// removed. The error names what failed.
async fn make_durable(
    st: &Shared,
    c: &CheckpointCommit,
    job: JobId,
    root: std::path::PathBuf,
    rights: Rights,
) -> Result<(), String> {
    let as_user = st.shadows.as_user.clone();
    let (r, number, files) = (root.clone(), c.number, c.files.clone());
    as_user
        .run_async(&rights, move || checkpoint::commit(&r, job, number, &files))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let now = st.clock.now_secs();
    let backend = c.backend.clone();
    let recorded = with_schedd(st, move |s| {
        s.checkpoint_stored(job, number, backend.as_deref(), now)
    })
    .await;
    if let Err(e) = recorded {
        let gone = with_schedd(st, move |s| Ok(s.job_ad(job).is_none()))
            .await
            .unwrap_or(false);
        if gone {
            // the job left the queue meanwhile: its store goes with it
            let r = root.clone();
            let _ = as_user
                .run_async(&rights, move || checkpoint::remove_job(&r, job))
                .await;
        }
        // (otherwise the unrecorded number is swept at the next begin)
        return Err(format!("recording it: {}", e.0.message));
    }
    tracing::info!(
        "job {job}: checkpoint {number} stored ({} file(s), {} bytes, {:?})",
        c.files.len(),
        c.bytes,
        c.kind
    );
    // the older checkpoints go once this one is recorded
    match as_user
        .run_async(&rights, move || checkpoint::prune_older(&root, job, number))
        .await
    {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("job {job}: removing its older checkpoints: {e}"),
        Err(e) => tracing::warn!("job {job}: removing its older checkpoints: {e}"),
    }
    Ok(())
}

/// Opens the file a starter on this host names instead of sending it
/// ([`LocalSource`]), with the job owner's rights, and checks it is the
/// one named. Refused (`BadRequest`: the starter sends the bytes instead)
/// unless the starter called over loopback or the Unix socket.
async fn open_local(
    st: &Shared,
    caller: &Caller,
    job_ad: &ClassAd,
    src: &skua_proto::LocalSource,
) -> Result<(std::fs::File, u64), ApiError> {
    if caller.peer_ip.is_some_and(|ip| !ip.is_loopback()) {
        return Err(ApiError::bad_request(
            "a file is named instead of sent only on the shadow's own host",
        ));
    }
    let rights = owner_rights(st, job_ad).map_err(ApiError::bad_request)?;
    let s = src.clone();
    let opened = st
        .shadows
        .as_user
        .run_async(&rights, move || local_copy::open_source(&s))
        .await
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let file = opened.map_err(|e| ApiError::bad_request(format!("local copy: {e}")))?;
    Ok((file, src.len))
}

/// The description of an uploaded file, JSON in the [`TRANSFER_HEADER`]
/// header of `/shadow/output_file` and `/shadow/checkpoint_file`.
pub(crate) fn transfer_meta<T: serde::de::DeserializeOwned>(
    headers: &HeaderMap,
) -> Result<T, ApiError> {
    let text = headers
        .get(TRANSFER_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::bad_request(format!("the {TRANSFER_HEADER} header is missing")))?;
    serde_json::from_str(text)
        .map_err(|e| ApiError::bad_request(format!("the {TRANSFER_HEADER} header: {e}")))
}

pub(crate) async fn update(
    State(st): State<Shared>,
    Json(u): Json<JobUpdate>,
) -> Result<Json<Ack>, ApiError> {
    if u.kind == UpdateKind::Executing {
        if let Some(r) = crate::dedicated::node_update(&st, &u.claim_id).await {
            return r.map(|()| Json(Ack {})).map_err(ApiError::internal);
        }
    }
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
    // a run that drained its outputs has a key of its own
    let key = crate::async_output::run_key(&st.shadows, &x.claim_id, x.job_id.as_deref());
    // a run being reconnected: its reconnection is logged first (waited
    // for a few seconds at most)
    let gate = st.shadows.runs().get(&key).and_then(|r| r.gate.clone());
    if let Some(mut g) = gate {
        let _ =
            tokio::time::timeout(std::time::Duration::from_secs(5), g.wait_for(|open| *open)).await;
    }
    let repeat = {
        let runs = st.shadows.runs();
        let run = runs
            .get(&key)
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
    // a node of a parallel job: the dedicated scheduler decides
    if let Some(r) = crate::dedicated::node_exit(&st, &x).await {
        return r.map(|()| Json(Ack {})).map_err(ApiError::internal);
    }
    // a checkpoint of this run still being made durable is recorded
    // before the run's end (the end's events and accounting count it)
    let running = st.shadows.runs().get(&key).map(|r| r.job);
    if let Some(job) = running {
        st.shadows.lane_settled(job).await;
    }
    let (job, failure, done, executed) = {
        let mut runs = st.shadows.runs();
        let run = runs
            .get_mut(&key)
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
        crate::async_output::drained(&st.shadows, &key, &x.claim_id);
    }
    st.changed.notify_one();
    if let Some(tx) = done {
        let _ = tx.send(RunResult::Reported { reusable });
    }
    result.map(|_| Json(Ack {}))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use skua_proto::{CheckpointKind, EntryKind, ErrorCode, JobUsage};
    use skua_queue::JobId;

    use super::*;
    use crate::runs::{Dialer, Run, Shadows};
    use crate::schedd::{Schedd, ScheddSettings};
    use crate::shared::QueueOwner;

    const CLAIM: &str = "claim-1";

    /// A schedd with one running job under `CLAIM`, its checkpoints
    /// stored under `dir/checkpoints`.
    fn running_schedd(dir: &Path) -> (Shared, JobId) {
        running_schedd_with(dir, "")
    }

    /// [`running_schedd`] with `extra` job attributes.
    fn running_schedd_with(dir: &Path, extra: &str) -> (Shared, JobId) {
        let root = dir.join("checkpoints");
        let settings = ScheddSettings {
            submit_host: "<127.0.0.1:9618>".into(),
            checkpoint_root: Some(root.clone()),
            ..ScheddSettings::default()
        };
        let mut schedd = Schedd::open(&dir.join("job_queue.db"), settings).expect("schedd");
        let c = schedd.new_cluster(1).expect("cluster");
        // the user log is written with the owner's rights
        let logs = dir.join("logs");
        std::fs::create_dir(&logs).expect("log dir");
        std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o777)).expect("mode");
        let ad = classad::parse_ad(&format!(
            "[ Cmd = \"/bin/true\"; TransferExecutable = false; JobStatus = 1; ProcId = 0; \
               JobUniverse = 5; Iwd = \"/tmp\"; UserLog = \"{}\"; {extra} ]",
            logs.join("job.log").display()
        ))
        .expect("ad");
        schedd.submit("nobody", c, vec![ad], 1).expect("submitted");
        let job = JobId::new(c, 0);
        schedd
            .start_run(job, "slot1@h", CLAIM, "<127.0.0.1:1>", 2)
            .expect("started");
        let alive = crate::lease::AliveConfig {
            interval: std::time::Duration::from_secs(300),
            max_missed: 6,
        };
        let mut shadows = Shadows::new(Dialer::default(), alive, skua_daemon::Clock::system());
        shadows.checkpoint_root = Some(root);
        let shadows = Arc::new(shadows);
        let st = Shared {
            queue: QueueOwner::start(schedd).expect("queue thread"),
            changed: Arc::new(tokio::sync::Notify::new()),
            shadows,
            reschedule: Arc::new(tokio::sync::Notify::new()),
            clock: skua_daemon::Clock::system(),
            local: Arc::new(crate::local_univ::LocalRuns::new(
                skua_daemon::Clock::system(),
                std::env::temp_dir(),
            )),
        };
        (st, job)
    }

    /// A run of `job` begins under `CLAIM` (with the job's ad as the
    /// queue has it now, as a claim task does).
    async fn new_run(st: &Shared, job: JobId) {
        let job_ad = with_schedd(st, move |s| Ok(s.job_ad(job)))
            .await
            .expect("queue")
            .expect("job ad");
        st.shadows.runs().insert(
            CLAIM.to_string(),
            Run {
                job,
                job_ad,
                slot: "slot1@h".into(),
                startd_addr: "<127.0.0.1:1>".into(),
                inputs: None,
                checkpoint_upload: None,
                failure: None,
                executing: true,
                done: None,
                gate: None,
                vacate: Arc::new(tokio::sync::Notify::new()),
            },
        );
    }

    /// The starter, calling over the Unix socket (`peer_ip` None) or from
    /// another host.
    fn starter_caller(peer_ip: Option<std::net::IpAddr>) -> Caller {
        Caller {
            identity: skua_net::Identity {
                user: "root".into(),
                domain: "pool".into(),
                method: skua_proto::AuthMethod::Token,
            },
            levels: vec![skua_net::AuthLevel::Daemon],
            peer_ip,
            credential_id: None,
        }
    }

    async fn send(
        st: &Shared,
        claim: &str,
        job: JobId,
        number: u64,
        name: &str,
        data: &'static str,
    ) -> Result<Json<Ack>, ApiError> {
        let meta = CheckpointFileMeta {
            claim_id: claim.into(),
            job_id: job.to_string(),
            number,
            name: name.into(),
            mode: 0o640,
            local: None,
        };
        send_meta(st, meta, None, data).await
    }

    async fn send_meta(
        st: &Shared,
        meta: CheckpointFileMeta,
        peer_ip: Option<std::net::IpAddr>,
        data: &'static str,
    ) -> Result<Json<Ack>, ApiError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            TRANSFER_HEADER,
            serde_json::to_string(&meta)
                .expect("json")
                .parse()
                .expect("header"),
        );
        checkpoint_file(
            State(st.clone()),
            starter_caller(peer_ip),
            headers,
            Body::from(data),
        )
        .await
    }

    /// Waits until the checkpoints of `job` committed so far are durable
    /// and recorded (or failed).
    async fn settled(st: &Shared, job: JobId) {
        st.shadows.lane_settled(job).await;
    }

    async fn commit(
        st: &Shared,
        job: JobId,
        number: u64,
        files: &[&str],
    ) -> Result<Json<Ack>, ApiError> {
        let c = CheckpointCommit {
            claim_id: CLAIM.into(),
            job_id: job.to_string(),
            number,
            files: files.iter().map(|f| f.to_string()).collect(),
            bytes: 0,
            kind: CheckpointKind::Exit,
            backend: None,
            usage: JobUsage::default(),
        };
        let reply = checkpoint_commit(State(st.clone()), Json(c)).await;
        // made durable and recorded after the reply
        settled(st, job).await;
        reply
    }

    async fn job_attr(st: &Shared, job: JobId, name: &'static str) -> Option<i64> {
        with_schedd(st, move |s| {
            Ok(s.job_ad(job).and_then(|ad| skua_queue::int_attr(&ad, name)))
        })
        .await
        .expect("queue")
    }

    #[tokio::test]
    async fn checkpoints_are_received_committed_once_and_given_back_at_the_next_begin() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (st, job) = running_schedd(tmp.path());
        let root = tmp.path().join("checkpoints");
        new_run(&st, job).await;

        send(&st, CLAIM, job, 1, "state.txt", "one")
            .await
            .expect("file");
        // only the run's own claim and job, and plain relative names
        let e = send(&st, "other-claim", job, 1, "state.txt", "x")
            .await
            .expect_err("another claim");
        assert_eq!(e.0.code, ErrorCode::NotFound);
        let e = send(&st, CLAIM, job, 1, "../escape", "x")
            .await
            .expect_err("hostile name");
        assert_eq!(e.0.code, ErrorCode::BadRequest);
        assert!(!tmp.path().join("checkpoints/escape").exists());
        // a commit naming a file never received is refused, naming it
        let e = commit(&st, job, 1, &["state.txt", "lost.dat"])
            .await
            .expect_err("missing file");
        assert_eq!(e.0.code, ErrorCode::Conflict);
        assert!(e.0.message.contains("lost.dat"), "{}", e.0.message);
        assert_eq!(job_attr(&st, job, "CheckpointNumber").await, None);

        commit(&st, job, 1, &["state.txt"]).await.expect("commit 1");
        assert_eq!(job_attr(&st, job, "CheckpointNumber").await, Some(1));
        // repeated: acknowledged, nothing counted twice
        commit(&st, job, 1, &["state.txt"]).await.expect("again");
        assert_eq!(job_attr(&st, job, "NumCkpts").await, Some(1));

        send(&st, CLAIM, job, 2, "state.txt", "two")
            .await
            .expect("file");
        send(&st, CLAIM, job, 2, "sub/more.dat", "more")
            .await
            .expect("file");
        commit(&st, job, 2, &["state.txt", "sub/more.dat"])
            .await
            .expect("commit 2");
        assert_eq!(job_attr(&st, job, "NumCkpts").await, Some(2));
        // the older checkpoint is removed beside the job, after the reply
        let dir = checkpoint::job_dir(&root, job);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while dir.join("1").exists() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(!dir.join("1").exists(), "the older checkpoint is removed");
        // skua evicted_files: the owner sees it and reads its files,
        // another user does not
        let caller = |user: &str, levels: Vec<skua_net::AuthLevel>| skua_net::Caller {
            identity: skua_net::Identity {
                user: user.into(),
                domain: "pool".into(),
                method: skua_proto::AuthMethod::Token,
            },
            levels,
            peer_ip: None,
            credential_id: None,
        };
        let q = skua_proto::EvictedFilesQuery {
            job_id: job.to_string(),
        };
        let Json(listed) = crate::evicted::evicted_files(
            State(st.clone()),
            caller("nobody", vec![skua_net::AuthLevel::Write]),
            Json(q.clone()),
        )
        .await
        .expect("owner lists");
        assert_eq!(listed.number, Some(2));
        let names: Vec<&str> = listed.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["state.txt", "sub", "sub/more.dat"]);
        let e = crate::evicted::evicted_files(
            State(st.clone()),
            caller("mallory", vec![skua_net::AuthLevel::Write]),
            Json(q),
        )
        .await
        .expect_err("another user");
        assert_eq!(e.0.code, ErrorCode::PermissionDenied);
        let get = |user: &str, path: &str| {
            crate::evicted::evicted_file(
                State(st.clone()),
                caller(user, vec![skua_net::AuthLevel::Write]),
                Json(skua_proto::EvictedFileRequest {
                    job_id: job.to_string(),
                    number: 2,
                    path: path.into(),
                }),
            )
        };
        let resp = get("nobody", "sub/more.dat").await.expect("owner reads");
        assert_eq!(axum_body_bytes(resp).await, b"more");
        let e = get("nobody", "../../job_queue.db")
            .await
            .expect_err("escape");
        assert_eq!(e.0.code, ErrorCode::BadRequest);
        let e = get("mallory", "state.txt").await.expect_err("another user");
        assert_eq!(e.0.code, ErrorCode::PermissionDenied);

        // a third one cut halfway: staged, never committed
        send(&st, CLAIM, job, 3, "state.txt", "thr")
            .await
            .expect("file");

        // the user log: each upload's start (once, also the cut one) and
        // each stored checkpoint's end
        let log = std::fs::read_to_string(tmp.path().join("logs/job.log")).expect("user log");
        assert_eq!(log.matches("040 (").count(), 5, "{log}");
        assert_eq!(
            log.matches("Started transferring output files").count(),
            3,
            "{log}"
        );
        assert_eq!(
            log.matches("Finished transferring output files").count(),
            2,
            "{log}"
        );

        // the next run begins: checkpoint 2 comes back with the inputs
        new_run(&st, job).await;
        let begin_req = ShadowBegin {
            claim_id: CLAIM.into(),
            job_id: job.to_string(),
            transfer: true,
            slot: "slot1@h".into(),
        };
        let Json(reply) = begin(State(st.clone()), Json(begin_req))
            .await
            .expect("begin");
        assert_eq!(
            reply.checkpoint,
            Some(CheckpointInfo {
                number: 2,
                backend: None
            })
        );
        let paths: Vec<(&str, EntryKind, bool)> = reply
            .inputs
            .iter()
            .map(|e| (e.path.as_str(), e.kind, e.checkpoint))
            .collect();
        assert_eq!(
            paths,
            [
                ("state.txt", EntryKind::File, true),
                ("sub", EntryKind::Dir, true),
                ("sub/more.dat", EntryKind::File, true),
            ]
        );
        assert_eq!(reply.inputs[0].mode, 0o640);
        assert!(!dir.join("incoming-3").exists(), "the cut staging is swept");
        // its files are served by index, like any input
        let resp = input_file(
            State(st.clone()),
            Json(InputFileRequest {
                claim_id: CLAIM.into(),
                index: 0,
            }),
        )
        .await
        .expect("input file");
        let bytes = axum_body_bytes(resp).await;
        assert_eq!(bytes, b"two");

        // on a shared file system no file travels, the numbering goes on
        new_run(&st, job).await;
        let shared_fs = ShadowBegin {
            claim_id: CLAIM.into(),
            job_id: job.to_string(),
            transfer: false,
            slot: "slot1@h".into(),
        };
        let Json(reply) = begin(State(st.clone()), Json(shared_fs))
            .await
            .expect("begin");
        assert!(reply.inputs.is_empty());
        assert_eq!(reply.checkpoint.map(|c| c.number), Some(2));
    }

    #[tokio::test]
    async fn a_file_named_on_this_host_is_copied_and_another_file_or_host_refused() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("mode");
        let (st, job) = running_schedd(tmp.path());
        new_run(&st, job).await;
        // the job's file in its sandbox, readable by its owner (nobody)
        let sandbox = tmp.path().join("sandbox");
        std::fs::create_dir(&sandbox).expect("dir");
        std::fs::set_permissions(&sandbox, std::fs::Permissions::from_mode(0o755)).expect("mode");
        let file = sandbox.join("state.bin");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&file, &data).expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("mode");
        let m = std::fs::metadata(&file).expect("stat");
        let src = skua_proto::LocalSource {
            path: file.to_string_lossy().into_owned(),
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
        };
        let meta = |local| CheckpointFileMeta {
            claim_id: CLAIM.into(),
            job_id: job.to_string(),
            number: 1,
            name: "state.bin".into(),
            mode: 0o600,
            local,
        };
        // from another host: refused as BadRequest (the starter then sends
        // the bytes), nothing staged
        let far = Some(std::net::IpAddr::from([10, 0, 0, 7]));
        let e = send_meta(&st, meta(Some(src.clone())), far, "")
            .await
            .expect_err("another host");
        assert_eq!(e.0.code, ErrorCode::BadRequest, "{}", e.0.message);
        // a file that is not the one named (its length differs): refused
        let wrong = skua_proto::LocalSource {
            len: src.len + 1,
            ..src.clone()
        };
        let e = send_meta(&st, meta(Some(wrong)), None, "")
            .await
            .expect_err("not the file named");
        assert_eq!(e.0.code, ErrorCode::BadRequest, "{}", e.0.message);
        // on this host (loopback too): copied whole
        let lo = Some(std::net::IpAddr::from([127, 0, 0, 1]));
        send_meta(&st, meta(Some(src)), lo, "")
            .await
            .expect("copied on this host");
        commit(&st, job, 1, &["state.bin"]).await.expect("commit");
        let root = tmp.path().join("checkpoints");
        let stored = checkpoint::stored_dir(&root, job, 1).join("state.bin");
        assert_eq!(std::fs::read(&stored).expect("stored"), data);
        assert_eq!(job_attr(&st, job, "CheckpointNumber").await, Some(1));
    }

    #[tokio::test]
    async fn a_commit_that_fails_after_its_reply_refuses_the_runs_next_checkpoint() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (st, job) = running_schedd(tmp.path());
        let root = tmp.path().join("checkpoints");
        new_run(&st, job).await;
        send(&st, CLAIM, job, 1, "state.txt", "one")
            .await
            .expect("file");
        // something in the way of checkpoint 1's place: the rename fails
        // once every file is received and the reply has gone
        std::fs::write(checkpoint::stored_dir(&root, job, 1), "in the way").expect("write");
        commit(&st, job, 1, &["state.txt"])
            .await
            .expect("acknowledged: every file was received");
        assert_eq!(job_attr(&st, job, "CheckpointNumber").await, None);
        // the run's next checkpoint is refused with the reason: the
        // starter holds the job (FailedToCheckpoint)
        let e = send(&st, CLAIM, job, 2, "state.txt", "two")
            .await
            .expect_err("the failure is told");
        assert_eq!(e.0.code, ErrorCode::Conflict);
        assert!(e.0.message.contains("checkpoint 1"), "{}", e.0.message);
        // told once
        send(&st, CLAIM, job, 2, "state.txt", "two")
            .await
            .expect("the next try is taken");
    }

    #[tokio::test]
    async fn a_checkpoint_destination_is_written_with_the_owners_rights() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("mode");
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).expect("dir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("mode");
        let dest = open.join("ckpts");
        let extra = format!("CheckpointDestination = \"file://{}\";", dest.display());
        let (st, job) = running_schedd_with(tmp.path(), &extra);
        new_run(&st, job).await;
        send(&st, CLAIM, job, 1, "state.txt", "one")
            .await
            .expect("file");
        commit(&st, job, 1, &["state.txt"]).await.expect("commit");
        let stored = checkpoint::stored_dir(&dest, job, 1).join("state.txt");
        assert_eq!(std::fs::read_to_string(&stored).expect("stored"), "one");
        assert!(
            !tmp.path().join("checkpoints").exists(),
            "nothing in the spool"
        );
        let as_root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        if as_root {
            // the owner's file, made with the owner's rights
            let nobody = skua_daemon::account::Account::lookup("nobody").expect("nobody");
            let meta = std::fs::metadata(&stored).expect("meta");
            assert_eq!(meta.uid(), nobody.uid);
        }
        // a destination not the owner's is refused, never written as root
        let closed = tmp.path().join("closed");
        std::fs::create_dir(&closed).expect("dir");
        let extra = format!(
            "CheckpointDestination = \"file://{}\";",
            closed.join("ckpts").display()
        );
        let tmp2 = tempfile::tempdir().expect("tmp");
        let (st2, job2) = running_schedd_with(tmp2.path(), &extra);
        new_run(&st2, job2).await;
        let sent = send(&st2, CLAIM, job2, 1, "state.txt", "one").await;
        if as_root {
            let e = sent.expect_err("not the owner's directory");
            assert_eq!(e.0.code, ErrorCode::Conflict);
            assert!(e.0.message.contains("state.txt"), "{}", e.0.message);
            assert!(!closed.join("ckpts").exists());
        }
        // and a destination that is no file:// URL is refused, naming it
        let tmp3 = tempfile::tempdir().expect("tmp");
        let (st3, job3) =
            running_schedd_with(tmp3.path(), "CheckpointDestination = \"s3://bucket/x\";");
        new_run(&st3, job3).await;
        let e = send(&st3, CLAIM, job3, 1, "state.txt", "one")
            .await
            .expect_err("s3");
        assert_eq!(e.0.code, ErrorCode::Conflict);
        assert!(e.0.message.contains("s3://bucket/x"), "{}", e.0.message);
    }

    async fn axum_body_bytes(resp: Response) -> Vec<u8> {
        use http_body_util::BodyExt as _;
        resp.into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec()
    }
}
