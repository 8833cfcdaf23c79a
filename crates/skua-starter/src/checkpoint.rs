//! Sending a checkpoint to the shadow: each file streamed on
//! `POST /shadow/checkpoint_file` (a [`CheckpointFileMeta`] in the
//! `Skua-Transfer` header, as output files travel), then
//! `POST /shadow/checkpoint_commit`. The shadow stores a checkpoint whole
//! or not at all; until the commit is acknowledged the previous one
//! stays the job's.
//!
//! `Starter::send_checkpoint` in [`mod@crate::run`] drives this with the job's
//! lease and the starter's signals; this module holds the transfer and
//! its errors.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use skua_daemon::account::{AsUser, Rights};
use skua_net::Client;
use skua_proto::{
    routes, Ack, CheckpointCommit, CheckpointFileMeta, CheckpointKind, ErrorCode, JobUsage,
    LocalSource, TRANSFER_HEADER,
};

/// HTCondor's HoldReasonCode FailedToCheckpoint.
pub const HOLD_FAILED_TO_CHECKPOINT: i64 = 36;
/// HTCondor's HoldReasonCode TransferOutputError (a named file missing).
pub const HOLD_TRANSFER_OUTPUT_ERROR: i64 = 12;
/// errno of a missing file.
pub const ENOENT: i64 = 2;

/// Why a checkpoint was not stored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The shadow could not store it (it answered `Conflict`), or the
    /// starter could not read one of its files: the job is held
    /// (HoldReasonCode 36, FailedToCheckpoint; `subcode` the errno when
    /// known).
    #[error("{reason}")]
    Refused {
        /// The shadow's message, or the file and the error.
        reason: String,
        /// errno, 0 when unknown.
        subcode: i64,
    },
    /// A file the job names for its checkpoint does not exist: held with
    /// HoldReasonCode 12, subcode 2 (ENOENT).
    #[error("{reason}")]
    Missing {
        /// Names the file.
        reason: String,
    },
    /// The shadow could not be reached (without a lease, or for all of
    /// it): the run fails and the job goes back to idle.
    #[error("sending the checkpoint: {0}")]
    Lost(String),
    /// A vacate or kill stopped the transfer: the run ends evicted, the
    /// previous checkpoint stays the job's.
    #[error("the job was stopped while its checkpoint was transferred")]
    Interrupted,
    /// The shadow no longer knows the run, or refused for another reason:
    /// the run fails (the job may run elsewhere).
    #[error("sending the checkpoint: {0}")]
    Failed(String),
}

/// What a transfer needs, cloned out of the starter so the transfer can
/// run beside its signal handling.
#[derive(Clone)]
pub struct Transfer {
    /// The shadow.
    pub client: Client,
    /// The claim.
    pub claim_id: String,
    /// `"C.P"`.
    pub job_id: String,
    /// The scratch directory the names are relative to.
    pub scratch: PathBuf,
    /// Opens the files with the job's rights.
    pub as_user: AsUser,
    /// The job's rights.
    pub rights: Rights,
}

/// One checkpoint's contents.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// Its number.
    pub number: u64,
    /// Why it is taken.
    pub kind: CheckpointKind,
    /// Its files, relative to the scratch directory.
    pub files: Vec<String>,
    /// The transparent backend that made it (`"criu"`), if any.
    pub backend: Option<String>,
    /// The job's usage so far in this run.
    pub usage: JobUsage,
}

/// Why a transfer stopped: the shadow was unreachable (try again within
/// the lease), or a final error.
#[derive(Debug)]
pub enum TransferError {
    /// Refused connection, reset, timeout, 503.
    Unreachable(skua_net::NetError),
    /// Anything else.
    Final(CheckpointError),
}

fn transient(e: &skua_net::NetError) -> bool {
    match e.remote() {
        None => true,
        Some(b) => matches!(b.code, ErrorCode::Unavailable | ErrorCode::Timeout),
    }
}

/// A failed call, classified: unreachable, refused (409: hold), or
/// failed.
fn classify(what: &str, e: skua_net::NetError) -> TransferError {
    if transient(&e) {
        return TransferError::Unreachable(e);
    }
    match e.remote() {
        Some(b) if b.code == ErrorCode::Conflict => {
            TransferError::Final(CheckpointError::Refused {
                reason: format!("{what}: {}", b.message),
                subcode: 0,
            })
        }
        _ => TransferError::Final(CheckpointError::Failed(format!("{what}: {e}"))),
    }
}

/// How far a checkpoint's transfer went: tried again after the shadow
/// was unreachable, it goes on from there (a file sent again replaces
/// the staged copy, so the one cut halfway is simply sent again).
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// The files the shadow acknowledged, in order.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// Sends the files of `ckpt` not yet acknowledged (`progress`), then its
/// commit. Returns the bytes of the checkpoint.
pub async fn send(
    t: &Transfer,
    ckpt: &Checkpoint,
    progress: &mut Progress,
) -> Result<u64, TransferError> {
    // on the shadow's own host the files are named, not sent, until the
    // shadow declines
    let mut local = same_host(&t.client);
    for name in ckpt.files.iter().skip(progress.files) {
        progress.bytes += send_file(t, ckpt.number, name, &mut local).await?;
        progress.files += 1;
    }
    let bytes = progress.bytes;
    let commit = CheckpointCommit {
        claim_id: t.claim_id.clone(),
        job_id: t.job_id.clone(),
        number: ckpt.number,
        files: ckpt.files.clone(),
        bytes,
        kind: ckpt.kind,
        backend: ckpt.backend.clone(),
        usage: ckpt.usage,
    };
    t.client
        .command::<_, Ack>(&routes::SHADOW_CHECKPOINT_COMMIT, Some(&commit))
        .await
        .map_err(|e| classify(&format!("committing checkpoint {}", ckpt.number), e))?;
    tracing::info!(
        number = ckpt.number,
        kind = ?ckpt.kind,
        files = ckpt.files.len(),
        bytes,
        "checkpoint stored"
    );
    Ok(bytes)
}

/// Whether the shadow is on this host (reached over loopback or a Unix
/// socket), so a checkpoint file can be named rather than sent.
fn same_host(client: &Client) -> bool {
    match client.endpoint() {
        skua_net::Endpoint::Unix(_) => true,
        skua_net::Endpoint::Tcp(addr) | skua_net::Endpoint::Tls(addr, _) => addr.ip().is_loopback(),
    }
}

/// Names the open `file` at `path` to a shadow on this host: its
/// [`LocalSource`]. `None` when the file cannot be named that way.
fn local_source(path: &std::path::Path, meta: &std::fs::Metadata) -> Option<LocalSource> {
    let path = std::path::absolute(path).ok()?;
    Some(LocalSource {
        path: path.to_str()?.to_string(),
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
    })
}

async fn send_file(
    t: &Transfer,
    number: u64,
    name: &str,
    local: &mut bool,
) -> Result<u64, TransferError> {
    let path = t.scratch.join(name);
    // with the job's rights: a link to a file it may not read sends nothing
    let p = path.clone();
    let opened = t
        .as_user
        .run_async(&t.rights, move || std::fs::File::open(&p))
        .await
        .map_err(|e| TransferError::Final(CheckpointError::Failed(e.to_string())))?;
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(TransferError::Final(CheckpointError::Missing {
                reason: missing_reason(&path),
            }))
        }
        Err(e) => {
            return Err(TransferError::Final(CheckpointError::Refused {
                reason: format!("cannot read checkpoint file {}: {e}", path.display()),
                subcode: e.raw_os_error().map(i64::from).unwrap_or(0),
            }))
        }
    };
    let file = tokio::fs::File::from_std(file);
    let meta = file.metadata().await.map_err(|e| {
        TransferError::Final(CheckpointError::Refused {
            reason: format!("cannot inspect checkpoint file {}: {e}", path.display()),
            subcode: e.raw_os_error().map(i64::from).unwrap_or(0),
        })
    })?;
    let mut header = CheckpointFileMeta {
        claim_id: t.claim_id.clone(),
        job_id: t.job_id.clone(),
        number,
        name: name.to_string(),
        mode: meta.mode() & 0o777,
        local: None,
    };
    if *local {
        if let Some(src) = local_source(&path, &meta) {
            header.local = Some(src);
            let text = serde_json::to_string(&header)
                .map_err(|e| TransferError::Final(CheckpointError::Failed(e.to_string())))?;
            let named = t
                .client
                .upload::<Ack>(
                    &routes::SHADOW_CHECKPOINT_FILE,
                    (TRANSFER_HEADER, text),
                    tokio::io::empty(),
                    0,
                )
                .await;
            match named {
                Ok(_) => {
                    tracing::debug!(file = %name, number, bytes = meta.len(), "checkpoint file copied on this host");
                    return Ok(meta.len());
                }
                Err(e) if e.remote().is_some_and(|b| b.code == ErrorCode::BadRequest) => {
                    tracing::info!(
                        "the shadow copies no file on this host ({e}): sending the bytes"
                    );
                    *local = false;
                    header.local = None;
                }
                Err(e) => {
                    return Err(classify(&format!("sending checkpoint file {name}"), e));
                }
            }
        }
    }
    let header = serde_json::to_string(&header)
        .map_err(|e| TransferError::Final(CheckpointError::Failed(e.to_string())))?;
    t.client
        .upload::<Ack>(
            &routes::SHADOW_CHECKPOINT_FILE,
            (TRANSFER_HEADER, header),
            file,
            meta.len(),
        )
        .await
        .map_err(|e| classify(&format!("sending checkpoint file {name}"), e))?;
    tracing::debug!(file = %name, number, bytes = meta.len(), "checkpoint file sent");
    Ok(meta.len())
}

/// The hold reason for a checkpoint file that does not exist (worded as
/// for a missing output).
pub fn missing_reason(path: &std::path::Path) -> String {
    format!(
        "transferring checkpoint files failed: error reading from {}: (errno {ENOENT}) No such file or directory",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use skua_proto::ErrorBody;

    fn remote(code: ErrorCode, message: &str) -> skua_net::NetError {
        skua_net::NetError::Remote {
            endpoint: "<127.0.0.1:1>".into(),
            status: code.http_status(),
            body: ErrorBody::new(code, message),
        }
    }

    #[test]
    fn a_conflict_holds_an_unreachable_shadow_is_waited_for_and_the_rest_fails() {
        match classify(
            "sending checkpoint file state",
            remote(ErrorCode::Conflict, "disk full"),
        ) {
            TransferError::Final(CheckpointError::Refused { reason, subcode }) => {
                assert!(
                    reason.contains("state") && reason.contains("disk full"),
                    "{reason}"
                );
                assert_eq!(subcode, 0);
            }
            other => panic!("{other:?}"),
        }
        for code in [ErrorCode::Unavailable, ErrorCode::Timeout] {
            assert!(matches!(
                classify("x", remote(code, "busy")),
                TransferError::Unreachable(_)
            ));
        }
        let timeout = skua_net::NetError::Timeout {
            endpoint: "e".into(),
            after: std::time::Duration::from_secs(1),
        };
        assert!(matches!(
            classify("x", timeout),
            TransferError::Unreachable(_)
        ));
        // the shadow no longer knows the run: the run fails, no hold
        assert!(matches!(
            classify("x", remote(ErrorCode::NotFound, "no such claim")),
            TransferError::Final(CheckpointError::Failed(_))
        ));
    }
}
