//! The shadow's Chirp routes: a running job's remote I/O, forwarded by
//! its starter (`/shadow/chirp`, `/shadow/chirp_fetch`,
//! `/shadow/chirp_put`). Each call is bound to the claim and the job
//! running under it; every file operation runs with the job owner's
//! rights (a relative path is taken from the job's Iwd, an absolute one
//! as it is: the owner's rights decide); attribute changes go through the
//! queue's qedit rules as the owner; `ulog` writes event 008.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use classad::ClassAd;
use skua_net::{ApiError, Body, HeaderMap, Json, Response, State};
use skua_proto::{Ack, ChirpOp, ChirpStat, ShadowChirp, ShadowChirpReply, CHIRP_HEADER};
use skua_queue::{Actor, JobId, Selector};

use crate::sandbox;
use crate::shadow::{owner_rights, run_of};
use crate::shared::{with_schedd, Shared};

/// Why a remote path cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    /// The path is empty.
    #[error("the remote path is empty")]
    Empty,
    /// The path holds a NUL byte.
    #[error("the remote path {0:?} holds a NUL byte")]
    Nul(String),
    /// A relative path, but the job has no absolute Iwd.
    #[error("the relative path {path:?} needs the job's Iwd, which is {iwd:?}")]
    NoIwd {
        /// The path.
        path: String,
        /// The job's Iwd (empty: none).
        iwd: String,
    },
}

/// Where the job's remote `path` is on this host: an absolute path as it
/// is, a relative one below the job's `iwd`. (No further check: the
/// operation runs with the owner's rights, which decide.)
pub fn resolve(iwd: Option<&str>, path: &str) -> Result<PathBuf, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.contains('\0') {
        return Err(PathError::Nul(path.to_string()));
    }
    let p = Path::new(path);
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    match iwd {
        Some(iwd) if Path::new(iwd).is_absolute() => Ok(Path::new(iwd).join(p)),
        _ => Err(PathError::NoIwd {
            path: path.to_string(),
            iwd: iwd.unwrap_or_default().to_string(),
        }),
    }
}

/// How `put`'s mode letters open a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PutMode {
    /// `c`: create it if missing.
    pub create: bool,
    /// `t`: truncate it.
    pub truncate: bool,
    /// `a`: append to it.
    pub append: bool,
    /// `x`: with `c`, it must not exist.
    pub exclusive: bool,
}

/// Parses `condor_chirp put -mode` letters (`w`, `c`, `t`, `a`, `x`, any
/// order; empty: `cwt`).
pub fn put_mode(text: &str) -> Result<PutMode, String> {
    let text = if text.is_empty() { "cwt" } else { text };
    let mut m = PutMode::default();
    for c in text.chars() {
        match c {
            'w' => {}
            'c' => m.create = true,
            't' => m.truncate = true,
            'a' => m.append = true,
            'x' => m.exclusive = true,
            other => {
                return Err(format!(
                    "unknown put mode letter `{other}` in `{text}` (w, c, t, a, x)"
                ))
            }
        }
    }
    if m.append && m.truncate {
        return Err(format!("put mode `{text}`: append and truncate together"));
    }
    Ok(m)
}

/// The run's job, its ad and the path its operation names.
fn job_path(
    st: &Shared,
    req: &ShadowChirp,
    path: &str,
) -> Result<(JobId, ClassAd, PathBuf), ApiError> {
    let (job, ad) = run_of(st, &req.claim_id, &req.job_id)?;
    let iwd = sandbox::string_attr(&ad, "Iwd");
    let p = resolve(iwd.as_deref(), path).map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((job, ad, p))
}

/// An I/O error as the job sees it: the path and the cause, with the
/// code a missing file or a refusal deserves.
fn io_error(what: &str, path: &Path, e: &std::io::Error) -> ApiError {
    let message = format!("cannot {what} {}: {e}", path.display());
    match e.kind() {
        std::io::ErrorKind::NotFound => ApiError::not_found(message),
        std::io::ErrorKind::PermissionDenied => {
            ApiError::new(skua_proto::ErrorCode::PermissionDenied, message)
        }
        _ => ApiError::conflict(message),
    }
}

/// Runs `f` with the rights of the owner of the job `ad`.
async fn as_owner<R: Send + 'static>(
    st: &Shared,
    ad: &ClassAd,
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, ApiError> {
    let rights = owner_rights(st, ad).map_err(ApiError::internal)?;
    st.shadows
        .as_user
        .run_async(&rights, f)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// `/shadow/chirp`: `stat`, `remove`, `get_job_attr`, `set_job_attr`,
/// `ulog`.
pub(crate) async fn call(
    State(st): State<Shared>,
    Json(req): Json<ShadowChirp>,
) -> Result<Json<ShadowChirpReply>, ApiError> {
    match &req.op {
        ChirpOp::Stat { path } => {
            let (_, ad, p) = job_path(&st, &req, path)?;
            let q = p.clone();
            let meta = as_owner(&st, &ad, move || std::fs::metadata(&q))
                .await?
                .map_err(|e| io_error("stat", &p, &e))?;
            Ok(Json(ShadowChirpReply {
                stat: Some(ChirpStat {
                    size: meta.len(),
                    mode: meta.mode(),
                    is_dir: meta.is_dir(),
                    mtime: meta.mtime(),
                }),
                value: None,
            }))
        }
        ChirpOp::Remove { path } => {
            let (job, ad, p) = job_path(&st, &req, path)?;
            let q = p.clone();
            as_owner(&st, &ad, move || std::fs::remove_file(&q))
                .await?
                .map_err(|e| io_error("remove", &p, &e))?;
            tracing::info!("job {job}: chirp removed {}", p.display());
            Ok(Json(ShadowChirpReply::default()))
        }
        ChirpOp::GetJobAttr { name } => {
            let (job, _) = run_of(&st, &req.claim_id, &req.job_id)?;
            let ad = with_schedd(&st, move |s| Ok(s.job_ad(job))).await?;
            let ad =
                ad.ok_or_else(|| ApiError::not_found(format!("job {job} is not in the queue")))?;
            let expr = ad
                .lookup(name)
                .ok_or_else(|| ApiError::not_found(format!("job {job} has no attribute {name}")))?;
            Ok(Json(ShadowChirpReply {
                value: Some(expr.to_string()),
                stat: None,
            }))
        }
        ChirpOp::SetJobAttr { name, value } => {
            let (job, ad) = run_of(&st, &req.claim_id, &req.job_id)?;
            let owner = sandbox::string_attr(&ad, "Owner").unwrap_or_default();
            let who = Actor::user(&owner);
            let (n, v) = (name.clone(), value.clone());
            let now = st.clock.now_secs();
            with_schedd(&st, move |s| {
                s.set_attr(&Selector::Jobs(vec![job]), &who, &n, &v, now)
            })
            .await?;
            tracing::info!("job {job}: chirp set {name} = {value}");
            Ok(Json(ShadowChirpReply::default()))
        }
        ChirpOp::Ulog { message } => {
            let (job, _) = run_of(&st, &req.claim_id, &req.job_id)?;
            let m = message.clone();
            let now = st.clock.now_secs();
            with_schedd(&st, move |s| s.generic_event(job, &m, now)).await?;
            Ok(Json(ShadowChirpReply::default()))
        }
        other => Err(ApiError::bad_request(format!(
            "chirp {} is not served on /shadow/chirp",
            other.name()
        ))),
    }
}

/// `/shadow/chirp_fetch`: the bytes of a file, read with the owner's
/// rights, streamed.
pub(crate) async fn fetch(
    State(st): State<Shared>,
    Json(req): Json<ShadowChirp>,
) -> Result<Response, ApiError> {
    let ChirpOp::Fetch { path } = &req.op else {
        return Err(ApiError::bad_request("/shadow/chirp_fetch takes a fetch"));
    };
    let (_, ad, p) = job_path(&st, &req, path)?;
    let q = p.clone();
    let file = as_owner(&st, &ad, move || std::fs::File::open(&q))
        .await?
        .map_err(|e| io_error("read", &p, &e))?;
    skua_net::open_file_response(tokio::fs::File::from_std(file), &p).await
}

/// `/shadow/chirp_put`: writes the body to a file opened with the owner's
/// rights as the mode letters say, streamed.
pub(crate) async fn put(
    State(st): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Ack>, ApiError> {
    let text = headers
        .get(CHIRP_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::bad_request(format!("the {CHIRP_HEADER} header is missing")))?;
    let req: ShadowChirp = serde_json::from_str(text)
        .map_err(|e| ApiError::bad_request(format!("the {CHIRP_HEADER} header: {e}")))?;
    let ChirpOp::Put {
        path, mode, perm, ..
    } = &req.op
    else {
        return Err(ApiError::bad_request("/shadow/chirp_put takes a put"));
    };
    let m = put_mode(mode).map_err(ApiError::bad_request)?;
    let perm = perm.unwrap_or(0o644) & 0o777;
    let (job, ad, p) = job_path(&st, &req, path)?;
    let q = p.clone();
    let opened = as_owner(&st, &ad, move || {
        std::fs::OpenOptions::new()
            .write(true)
            .create(m.create && !m.exclusive)
            .create_new(m.create && m.exclusive)
            .truncate(m.truncate)
            .append(m.append)
            .mode(perm)
            .open(&q)
    })
    .await?
    .map_err(|e| io_error("write", &p, &e))?;
    let mut file = tokio::fs::File::from_std(opened);
    let n = skua_net::receive_into(body, &mut file, &p, skua_net::RECEIVE_IDLE_TIMEOUT).await?;
    tracing::info!("job {job}: chirp put {n} bytes into {}", p.display());
    Ok(Json(Ack {}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_below_the_iwd_and_absolute_ones_stay() {
        assert_eq!(
            resolve(Some("/home/u/run"), "data/in.txt").unwrap(),
            PathBuf::from("/home/u/run/data/in.txt")
        );
        assert_eq!(
            resolve(Some("/home/u/run"), "/etc/hosts").unwrap(),
            PathBuf::from("/etc/hosts")
        );
        assert_eq!(resolve(Some("/home/u"), ""), Err(PathError::Empty));
        assert!(matches!(
            resolve(Some("/h"), "a\0b"),
            Err(PathError::Nul(_))
        ));
        assert!(matches!(resolve(None, "x"), Err(PathError::NoIwd { .. })));
        assert!(matches!(
            resolve(Some("rel"), "x"),
            Err(PathError::NoIwd { .. })
        ));
        assert_eq!(resolve(None, "/abs").unwrap(), PathBuf::from("/abs"));
    }

    #[test]
    fn put_mode_letters() {
        assert_eq!(
            put_mode("").unwrap(),
            PutMode {
                create: true,
                truncate: true,
                ..PutMode::default()
            }
        );
        assert_eq!(
            put_mode("wa").unwrap(),
            PutMode {
                append: true,
                ..PutMode::default()
            }
        );
        let x = put_mode("wcx").unwrap();
        assert!(x.create && x.exclusive && !x.truncate);
        assert!(put_mode("wq").unwrap_err().contains("`q`"));
        assert!(put_mode("wat").is_err());
    }
}
