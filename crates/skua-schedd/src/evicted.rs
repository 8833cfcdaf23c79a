//! `skua evicted_files` (HTCondor's `condor_evicted_files`): what is
//! stored of a job's last checkpoint, and its files one by one, for the
//! job's owner or a queue administrator. The files are read with the
//! store's rights (the schedd's in its spool, the owner's at a
//! `checkpoint_destination`) and streamed, never held whole.

use std::os::unix::fs::OpenOptionsExt;

use skua_net::{ApiError, Caller, Json, Response, State};
use skua_proto::{EvictedFile, EvictedFileRequest, EvictedFilesQuery, EvictedFilesReply};

use crate::checkpoint;
use crate::shadow::{checkpoint_number, checkpoint_store};
use crate::shared::{owned_job, Shared};

/// `/schedd/evicted_files`.
pub(crate) async fn evicted_files(
    State(st): State<Shared>,
    caller: Caller,
    Json(q): Json<EvictedFilesQuery>,
) -> Result<Json<EvictedFilesReply>, ApiError> {
    let (job, ad) = owned_job(&st, &caller, &q.job_id).await?;
    let Some(number) = checkpoint_number(&ad) else {
        return Ok(Json(EvictedFilesReply::default()));
    };
    let (loc, rights) = checkpoint_store(&st, &ad).map_err(ApiError::conflict)?;
    let root = loc.root.clone();
    let listed = st
        .shadows
        .as_user
        .run_async(&rights, move || checkpoint::entries(&root, job, number))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| ApiError::internal(format!("checkpoint {number} of job {job}: {e}")))?;
    Ok(Json(EvictedFilesReply {
        number: Some(number),
        directory: Some(
            checkpoint::stored_dir(&loc.root, job, number)
                .display()
                .to_string(),
        ),
        files: listed
            .into_iter()
            .map(|(e, _)| EvictedFile {
                path: e.path,
                kind: e.kind,
                size: e.size,
                mode: e.mode,
            })
            .collect(),
    }))
}

/// `/schedd/evicted_file`.
pub(crate) async fn evicted_file(
    State(st): State<Shared>,
    caller: Caller,
    Json(r): Json<EvictedFileRequest>,
) -> Result<Response, ApiError> {
    let (job, ad) = owned_job(&st, &caller, &r.job_id).await?;
    if checkpoint_number(&ad) != Some(r.number) {
        return Err(ApiError::not_found(format!(
            "checkpoint {} of job {job} is not stored",
            r.number
        )));
    }
    let rel = checkpoint::check_name(&r.path).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let (loc, rights) = checkpoint_store(&st, &ad).map_err(ApiError::conflict)?;
    let path = checkpoint::stored_dir(&loc.root, job, r.number).join(rel);
    let p = path.clone();
    let file = st
        .shadows
        .as_user
        .run_async(&rights, move || {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&p)
        })
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| ApiError::not_found(format!("{}: {e}", path.display())))?;
    skua_net::open_file_response(tokio::fs::File::from_std(file), &path).await
}
