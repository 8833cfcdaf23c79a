//! Spooled jobs: the routes of `skua submit -spool` (input files uploaded
//! into the job's spool directory, then the job released to run from
//! there) and `skua transfer_data` (a completed job's output listed and
//! read from there, then the job leaves the queue).
//!
//! Layout (HTCondor's): `$(SPOOL)/<C mod 10000>/<P mod 10000>/
//! cluster<C>.proc<P>.subproc0`, the per-job directory owned by the job's
//! owner, mode 0700. The two levels above it are the schedd's (made with
//! its rights, mode 0755); the job's directory is made by the schedd in
//! its own directory and given to the owner, and everything inside it is
//! written, read and removed with the owner's rights, never root's.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use classad::ClassAd;
use skua_daemon::account::{AsUser, Rights};
use skua_net::{ApiError, AuthLevel, Body, Caller, HeaderMap, Json, Response, State};
use skua_proto::{
    Ack, OutputFetched, SpoolCommit, SpoolFileMeta, SpooledFile, SpooledFileRequest,
    SpooledOutputQuery, SpooledOutputReply,
};
/// The queue's rules for spooled jobs (names, the hold code, the inputs).
pub use skua_queue::spool as rules;
use skua_queue::{JobId, JobStatus};

use crate::shadow::{create_beside, owner_rights, transfer_meta};
use crate::shared::{with_schedd, Shared};

/// The job's spool directory below `spool` (`$(SPOOL)`).
pub fn job_dir(spool: &Path, job: JobId) -> PathBuf {
    spool
        .join((job.cluster % 10000).to_string())
        .join((job.proc % 10000).to_string())
        .join(format!("cluster{}.proc{}.subproc0", job.cluster, job.proc))
}

/// `$(SPOOL)`: the parent of the checkpoint root (`$(SPOOL)/checkpoints`).
pub(crate) fn spool_root(checkpoint_root: Option<&Path>) -> Option<&Path> {
    checkpoint_root.and_then(Path::parent)
}

fn root_of(st: &Shared) -> Result<PathBuf, ApiError> {
    spool_root(st.shadows.checkpoint_root.as_deref())
        .map(Path::to_path_buf)
        .ok_or_else(|| ApiError::conflict("the schedd has no SPOOL to spool jobs' files in"))
}

/// Makes the job's spool directory if it is not there: its two parents
/// with the schedd's rights, the directory itself (mode 0700) in them and
/// given to the owner. An existing one must be a real directory owned by
/// the owner (never a link). Runs with the schedd's rights.
fn ensure_job_dir(spool: &Path, job: JobId, owner: &Rights) -> io::Result<PathBuf> {
    let dir = job_dir(spool, job);
    let parent = dir
        .parent()
        .ok_or_else(|| io::Error::other("the spool directory has no parent"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(parent)?;
    let (uid, gid) = match owner {
        Rights::User(a) => (Some(a.uid), Some(a.gid)),
        Rights::Daemon => (None, None),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {
            if uid.is_some() {
                std::os::unix::fs::lchown(&dir, uid, gid)?;
            }
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(&dir)?;
            let owned = uid.is_none_or(|u| meta.uid() == u);
            if !meta.is_dir() || !owned {
                return Err(io::Error::other(format!(
                    "{} is not a directory of the job's owner",
                    dir.display()
                )));
            }
        }
        Err(e) => return Err(e),
    }
    Ok(dir)
}

/// Removes job `id`'s spool directory, if any, when it left the queue:
/// its contents with the owner's rights, then the emptied directory (and
/// its emptied parents) with the schedd's. In the background.
pub(crate) fn remove_job_dir(as_user: &AsUser, spool: &Path, id: JobId, ad: &ClassAd) {
    let dir = job_dir(spool, id);
    if std::fs::symlink_metadata(&dir).is_err() {
        return;
    }
    let owner = crate::sandbox::string_attr(ad, "Owner").unwrap_or_default();
    let rights = match as_user.rights_of(&owner) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("job {id}: not removing its spool directory: {e}");
            return;
        }
    };
    let as_user = as_user.clone();
    let spawned = std::thread::Builder::new()
        .name("spool-removal".into())
        .spawn(move || {
            let d = dir.clone();
            let emptied = as_user.run(&rights, move || -> io::Result<()> {
                for entry in std::fs::read_dir(&d)? {
                    let path = entry?.path();
                    if std::fs::symlink_metadata(&path)?.is_dir() {
                        std::fs::remove_dir_all(&path)?;
                    } else {
                        std::fs::remove_file(&path)?;
                    }
                }
                Ok(())
            });
            match emptied {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("job {id}: emptying {}: {e}", dir.display()),
                Err(e) => tracing::warn!("job {id}: emptying {}: {e}", dir.display()),
            }
            if let Err(e) = std::fs::remove_dir(&dir) {
                tracing::warn!("job {id}: removing {}: {e}", dir.display());
            }
            // the per-cluster and per-proc levels, when nothing else uses them
            let mut up = dir.parent();
            for _ in 0..2 {
                match up {
                    Some(p) if std::fs::remove_dir(p).is_ok() => up = p.parent(),
                    _ => break,
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("job {id}: removing its spool directory: {e}");
    }
}

/// A spooled file's name: one plain component (inputs are spooled under
/// their base names).
fn input_name(name: &str) -> Result<PathBuf, ApiError> {
    let rel =
        crate::checkpoint::check_name(name).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if rel.components().count() != 1 {
        return Err(ApiError::bad_request(format!(
            "spooled input name {name:?} must be a plain file name"
        )));
    }
    Ok(rel)
}

/// `/schedd/spool_file`: one input file, streamed into the job's spool
/// directory with the owner's rights (a temporary file beside it, renamed
/// over it when whole).
pub(crate) async fn spool_file(
    State(st): State<Shared>,
    caller: Caller,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Ack>, ApiError> {
    let meta: SpoolFileMeta = transfer_meta(&headers)?;
    let (job, ad) = crate::shared::owned_job(&st, &caller, &meta.job_id).await?;
    if !rules::is_spooling(&ad) {
        return Err(ApiError::conflict(format!(
            "job {job} is not waiting for its input files to be spooled"
        )));
    }
    let rel = input_name(&meta.name)?;
    let spool = root_of(&st)?;
    let rights = owner_rights(&st, &ad).map_err(ApiError::internal)?;
    let r = rights.clone();
    let dir = tokio::task::spawn_blocking(move || ensure_job_dir(&spool, job, &r))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| ApiError::internal(format!("the spool directory of job {job}: {e}")))?;
    let dest = dir.join(rel);
    let as_user = st.shadows.as_user.clone();
    let d = dest.clone();
    let (file, tmp) = as_user
        .run_async(&rights, move || create_beside(&d))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| ApiError::internal(format!("cannot write {}: {e}", dest.display())))?;
    let mut file = tokio::fs::File::from_std(file);
    let mode = if meta.mode == 0 {
        0o644
    } else {
        meta.mode & 0o777
    };
    let received =
        skua_net::receive_into(body, &mut file, &dest, skua_net::RECEIVE_IDLE_TIMEOUT).await;
    let stored = match received {
        Ok(_) => file
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .await
            .map_err(|e| ApiError::internal(format!("{}: {e}", dest.display()))),
        Err(e) => Err(e),
    };
    drop(file);
    let (t, d) = (tmp.clone(), dest.clone());
    let result = match stored {
        Ok(()) => as_user
            .run_async(&rights, move || std::fs::rename(&t, &d))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(|e| ApiError::internal(format!("cannot rename into {}: {e}", dest.display()))),
        Err(e) => Err(e),
    };
    if result.is_err() {
        let t = tmp.clone();
        let _ = as_user
            .run_async(&rights, move || std::fs::remove_file(&t))
            .await;
    }
    result.map(|()| Json(Ack {}))
}

/// `/schedd/spool_commit`: checks that every input file of the job is in
/// its spool directory, then releases it (its paths moved to the spool).
pub(crate) async fn spool_commit(
    State(st): State<Shared>,
    caller: Caller,
    Json(c): Json<SpoolCommit>,
) -> Result<Json<Ack>, ApiError> {
    let (job, ad) = crate::shared::owned_job(&st, &caller, &c.job_id).await?;
    if !rules::is_spooling(&ad) {
        return Err(ApiError::conflict(format!(
            "job {job} is not waiting for its input files to be spooled"
        )));
    }
    let spool = root_of(&st)?;
    let rights = owner_rights(&st, &ad).map_err(ApiError::internal)?;
    let r = rights.clone();
    let dir = tokio::task::spawn_blocking(move || ensure_job_dir(&spool, job, &r))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| ApiError::internal(format!("the spool directory of job {job}: {e}")))?;
    let names: Vec<String> = rules::spool_inputs(&ad)
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    let d = dir.clone();
    // every input there, as a regular file; the first one's time is
    // when the stage-in began
    let checked = st
        .shadows
        .as_user
        .run_async(&rights, move || -> Result<i64, String> {
            let mut first = i64::MAX;
            for name in &names {
                let meta = std::fs::symlink_metadata(d.join(name))
                    .map_err(|e| format!("input file {name} was not spooled: {e}"))?;
                if !meta.is_file() {
                    return Err(format!("spooled input {name} is not a regular file"));
                }
                first = first.min(meta.mtime());
            }
            Ok(first)
        })
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| ApiError::bad_request(format!("job {job}: {e}")))?;
    let now = st.clock.now_secs();
    let owner = caller.identity.user.clone();
    let admin = caller.has(AuthLevel::Administrator);
    let dir_text = dir.display().to_string();
    with_schedd(&st, move |s| {
        s.spool_complete(job, &dir_text, checked.min(now), &owner, admin, now)
    })
    .await?;
    st.changed.notify_one();
    st.reschedule.notify_one();
    Ok(Json(Ack {}))
}

/// A completed spooled job the caller may fetch, with its spool directory
/// and owner's rights.
async fn completed_spooled(
    st: &Shared,
    caller: &Caller,
    text: &str,
) -> Result<(JobId, ClassAd, PathBuf, Rights), ApiError> {
    let (job, ad) = crate::shared::owned_job(st, caller, text).await?;
    if !rules::is_spooled(&ad) {
        return Err(ApiError::conflict(format!(
            "job {job} was not submitted with -spool"
        )));
    }
    let status = skua_queue::int_attr(&ad, "JobStatus").and_then(JobStatus::from_code);
    if status != Some(JobStatus::Completed) {
        return Err(ApiError::conflict(format!(
            "job {job} is {}, not completed: its output is not ready",
            status.map(|s| s.name()).unwrap_or("in an unknown state")
        )));
    }
    let dir = job_dir(&root_of(st)?, job);
    let rights = owner_rights(st, &ad).map_err(ApiError::internal)?;
    Ok((job, ad, dir, rights))
}

/// The regular files below `dir` (relative paths, sorted), leaving out
/// the spooled inputs at its top, temporary files of a transfer, and
/// links. Runs with the owner's rights.
fn output_files(dir: &Path, inputs: &[String]) -> io::Result<Vec<SpooledFile>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = rel.join(&name);
            let meta = entry.metadata()?;
            if meta.is_dir() {
                stack.push(path);
                continue;
            }
            let top = rel.as_os_str().is_empty();
            if !meta.is_file()
                || (top && inputs.contains(&name))
                || (name.starts_with('.') && name.contains(".part-"))
            {
                continue;
            }
            out.push(SpooledFile {
                path: path.to_string_lossy().into_owned(),
                size: meta.len(),
                mode: meta.mode() & 0o777,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// `/schedd/spooled_output`.
pub(crate) async fn spooled_output(
    State(st): State<Shared>,
    caller: Caller,
    Json(q): Json<SpooledOutputQuery>,
) -> Result<Json<SpooledOutputReply>, ApiError> {
    let (job, ad, dir, rights) = completed_spooled(&st, &caller, &q.job_id).await?;
    let inputs: Vec<String> = rules::spool_inputs(&ad)
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    let d = dir.clone();
    let files = st
        .shadows
        .as_user
        .run_async(&rights, move || match output_files(&d, &inputs) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            other => other,
        })
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| ApiError::internal(format!("the spool of job {job}: {e}")))?;
    Ok(Json(SpooledOutputReply {
        ad: classad::unparse_ad(&ad.flatten()),
        files,
    }))
}

/// `/schedd/spooled_file`: read with the owner's rights, never through a
/// link, streamed.
pub(crate) async fn spooled_file(
    State(st): State<Shared>,
    caller: Caller,
    Json(r): Json<SpooledFileRequest>,
) -> Result<Response, ApiError> {
    let (_, _, dir, rights) = completed_spooled(&st, &caller, &r.job_id).await?;
    let rel =
        crate::checkpoint::check_name(&r.path).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let path = dir.join(rel);
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

/// `/schedd/output_fetched`: the job leaves the queue (and its spool
/// directory is removed as it leaves).
pub(crate) async fn output_fetched(
    State(st): State<Shared>,
    caller: Caller,
    Json(f): Json<OutputFetched>,
) -> Result<Json<Ack>, ApiError> {
    let (job, _, _, _) = completed_spooled(&st, &caller, &f.job_id).await?;
    let now = st.clock.now_secs();
    let owner = caller.identity.user.clone();
    let admin = caller.has(AuthLevel::Administrator);
    with_schedd(&st, move |s| {
        s.output_fetched(job, &owner, admin, f.started, now)
    })
    .await?;
    st.changed.notify_one();
    Ok(Json(Ack {}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spooled_input_names_are_plain_file_names() {
        assert_eq!(input_name("in.txt").ok(), Some(PathBuf::from("in.txt")));
        for bad in ["", "../x", "/etc/passwd", "a/b", "a/../b", "..", "a\0b"] {
            assert!(input_name(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_job_directory_is_htcondors_layout_and_never_a_link() {
        let job = JobId::new(12345, 7);
        let root = std::env::temp_dir().join(format!("skua-spool-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(
            job_dir(&root, job),
            root.join("2345/7/cluster12345.proc7.subproc0")
        );
        let dir = ensure_job_dir(&root, job, &Rights::Daemon).expect("made");
        let meta = std::fs::symlink_metadata(&dir).expect("there");
        assert!(meta.is_dir());
        assert_eq!(meta.mode() & 0o777, 0o700);
        // made again: the same directory
        assert_eq!(
            ensure_job_dir(&root, job, &Rights::Daemon).expect("again"),
            dir
        );
        // a link in its place is refused, not followed
        let other = JobId::new(3, 0);
        let target = root.join("elsewhere");
        std::fs::create_dir_all(&target).expect("target");
        let link = job_dir(&root, other);
        std::fs::create_dir_all(link.parent().expect("parent")).expect("parents");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        assert!(ensure_job_dir(&root, other, &Rights::Daemon).is_err());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn output_files_leave_out_the_spooled_inputs_and_partial_transfers() {
        let dir = std::env::temp_dir().join(format!("skua-spool-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).expect("dir");
        for f in [
            "prog.sh",
            "in.txt",
            "out.txt",
            "sub/in.txt",
            ".out.txt.part-1-2",
        ] {
            std::fs::write(dir.join(f), f).expect("write");
        }
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).expect("link");
        let inputs = vec!["prog.sh".to_string(), "in.txt".to_string()];
        let names: Vec<String> = output_files(&dir, &inputs)
            .expect("listed")
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(names, ["out.txt", "sub/in.txt"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
