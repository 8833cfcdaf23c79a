//! Asynchronous output transfer, the execute side: the sandbox manager.
//!
//! When a job exits by itself, its scratch directory is renamed to a
//! pending sandbox (`dir_<pid>.out<n>` in `EXECUTE`), the shadow is told
//! "exited, output transferring" (`/shadow/transferring`: the job becomes
//! TransferringOutput and the claim may start its next job at once), and a
//! background task sends the outputs, then the final exit (`/shadow/exit`):
//! the job completes only with its outputs in place. At most
//! [`MAX_PENDING_PER_CLAIM`] sandboxes are pending per claim (the starter
//! serves one claim): a further job's exit waits for one to finish before
//! it is reported, so the claim starts no other job meanwhile.
//!
//! A pending sandbox's name starts with `dir_`, so a startd that restarts
//! after a crash removes it with the other leftovers; its starter's
//! transfer then fails and reports a failed run (the job goes back to
//! Idle), and a starter that died reports nothing: the startd's
//! `/shadow/starter_gone` for the job requeues it. Never completed without
//! its outputs.
//!
//! `SKUA_ASYNC_OUTPUT_TRANSFER` (default false here) switches it on.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use classad::ClassAd;
use skua_daemon::account::{AsUser, Rights};
use skua_daemon::DaemonContext;
use skua_net::Client;
use skua_proto::{routes, Ack, JobExit, OutputFileMeta, RunOutcome, TRANSFER_HEADER};
use tokio::sync::Semaphore;

use crate::checkpoint::{ENOENT, HOLD_TRANSFER_OUTPUT_ERROR};
use crate::plan::{self, Stamp};

/// HTCondor's limit: two output transfers pending per claim.
pub const MAX_PENDING_PER_CLAIM: usize = 2;

/// The sandbox manager of one starter (one claim).
pub struct SandboxManager {
    permits: Arc<Semaphore>,
    tasks: tokio::task::JoinSet<()>,
    next: u32,
    /// `SKUA_TEST_OUTPUT_TRANSFER_DELAY_MS`: a pause before each background
    /// transfer (tests only: makes "still transferring" observable).
    delay: Duration,
}

/// What the background transfer of one exited job needs.
pub struct Pending {
    /// The shadow's address (written beside the pending sandbox, so that
    /// the startd can report the job if this starter dies).
    pub shadow_addr: String,
    pub client: Client,
    pub as_user: AsUser,
    pub rights: Rights,
    pub job: ClassAd,
    pub claim_id: String,
    pub job_id: String,
    pub baseline: BTreeMap<String, Stamp>,
    pub executable: Option<String>,
    pub outcome: RunOutcome,
    pub usage: skua_proto::JobUsage,
    /// The job's execution is not reported yet: it comes with this report.
    pub executed: bool,
}

/// Whether the asynchronous path is on (`SKUA_ASYNC_OUTPUT_TRANSFER`).
pub fn enabled(ctx: &DaemonContext) -> anyhow::Result<bool> {
    Ok(skua_daemon::context::knob_bool(
        &ctx.config,
        "SKUA_ASYNC_OUTPUT_TRANSFER",
        false,
    )?)
}

impl SandboxManager {
    pub fn new(ctx: &DaemonContext) -> anyhow::Result<SandboxManager> {
        let delay =
            skua_daemon::context::knob_u64(&ctx.config, "SKUA_TEST_OUTPUT_TRANSFER_DELAY_MS", 0)?;
        Ok(SandboxManager {
            permits: Arc::new(Semaphore::new(MAX_PENDING_PER_CLAIM)),
            tasks: tokio::task::JoinSet::new(),
            next: 0,
            delay: Duration::from_millis(delay),
        })
    }

    /// Hands the exited job's `scratch` directory over: waits for a free
    /// place (at most [`MAX_PENDING_PER_CLAIM`] pending), renames it to a
    /// pending sandbox, tells the shadow the output is transferring, and
    /// starts the background transfer. `Err`: the hand-over did not happen
    /// (the scratch directory is as it was): the caller sends the outputs
    /// itself.
    pub async fn hand_over(&mut self, scratch: &Path, p: Pending) -> Result<(), (Pending, String)> {
        // the finished transfers' tasks are reaped as we go
        while self.tasks.try_join_next().is_some() {}
        let permit = match self.permits.clone().acquire_owned().await {
            Ok(p) => p,
            Err(e) => return Err((p, e.to_string())),
        };
        self.next += 1;
        let mut pending_name = scratch.as_os_str().to_os_string();
        pending_name.push(format!(".out{}", self.next));
        let dir = PathBuf::from(pending_name);
        if let Err(e) = std::fs::rename(scratch, &dir) {
            return Err((p, format!("cannot rename {}: {e}", scratch.display())));
        }
        // `<sandbox>.job`: whom the startd tells if this starter dies
        // with the transfer pending
        let mut job_file = dir.clone().into_os_string();
        job_file.push(".job");
        let job_file = PathBuf::from(job_file);
        let record = serde_json::json!({
            "shadow_addr": p.shadow_addr,
            "claim_id": p.claim_id,
            "job_id": p.job_id,
        });
        let _ = std::fs::write(&job_file, record.to_string());
        let report = JobExit {
            claim_id: p.claim_id.clone(),
            outcome: p.outcome.clone(),
            usage: p.usage,
            executed: p.executed,
            job_id: Some(p.job_id.clone()),
        };
        if let Err(e) = p
            .client
            .command::<_, Ack>(&routes::SHADOW_TRANSFERRING, Some(&report))
            .await
        {
            // not handed over: the directory goes back where it was
            let _ = std::fs::rename(&dir, scratch);
            let _ = std::fs::remove_file(&job_file);
            return Err((
                p,
                format!("the shadow refused the transferring report: {e}"),
            ));
        }
        tracing::info!(job = %p.job_id, sandbox = %dir.display(), "the job's output transfers in the background");
        let delay = self.delay;
        self.tasks.spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            transfer(&dir, p).await;
            crate::run::remove_scratch(&dir).await;
            let _ = std::fs::remove_file(&job_file);
            drop(permit);
        });
        Ok(())
    }

    /// Waits for every pending transfer to end (before the starter exits).
    pub async fn finish(&mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

/// The synchronous fallback when a hand-over did not happen: sends the
/// outputs of `dir` and the exit now.
pub async fn transfer_now(dir: &Path, p: Pending) {
    transfer(dir, p).await
}

/// Sends the outputs of the pending sandbox `dir`, then the final exit:
/// the job's own outcome when every output arrived, else held with
/// HTCondor's TransferOutputError (12, the errno as subcode) and a reason
/// naming the file, or failed (requeued) when the shadow stayed
/// unreachable.
async fn transfer(dir: &Path, p: Pending) {
    let (names, missing) = output_names(&p.job, dir, &p.baseline, p.executable.as_deref());
    let mut outcome = p.outcome.clone();
    if !dir.is_dir() {
        // removed under us (a restarted startd cleans its leftovers): the
        // run failed, never a completion without the outputs
        outcome = gone(dir);
    } else if let Some(item) = missing.first() {
        outcome = RunOutcome::Held {
            reason: format!(
                "transferring output files failed: error reading from {}: (errno {ENOENT}) No such file or directory",
                dir.join(item).display()
            ),
            code: HOLD_TRANSFER_OUTPUT_ERROR,
            subcode: ENOENT,
        };
    }
    for name in &names {
        if let Err(e) = send_with_retries(dir, name, &p).await {
            tracing::warn!(job = %p.job_id, file = %name, outcome = ?e, "the output transfer failed");
            outcome = if dir.is_dir() { e } else { gone(dir) };
            break;
        }
    }
    if !dir.is_dir() {
        outcome = gone(dir);
    }
    let exit = JobExit {
        claim_id: p.claim_id.clone(),
        outcome,
        usage: p.usage,
        executed: p.executed,
        job_id: Some(p.job_id.clone()),
    };
    for attempt in 0..5u64 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(attempt)).await;
        }
        match p
            .client
            .command::<_, Ack>(&routes::SHADOW_EXIT, Some(&exit))
            .await
        {
            Ok(_) => return,
            Err(e) if crate::run::is_transient(&e) => {
                tracing::warn!(job = %p.job_id, error = %e, "the final exit report failed; trying again")
            }
            Err(e) => {
                tracing::error!(job = %p.job_id, error = %e, "the shadow refused the job's exit");
                return;
            }
        }
    }
    tracing::error!(job = %p.job_id, "the shadow did not acknowledge the job's exit");
}

/// The outcome of a run whose pending sandbox disappeared: failed outside
/// the job (it goes back to Idle).
fn gone(dir: &Path) -> RunOutcome {
    RunOutcome::Failed {
        reason: format!(
            "the pending output sandbox {} was removed before its transfer ended",
            dir.display()
        ),
        permanent: false,
    }
}

/// One output with a few tries when the shadow cannot be reached. The
/// error is the run's outcome to report.
async fn send_with_retries(dir: &Path, name: &str, p: &Pending) -> Result<(), RunOutcome> {
    let mut last = String::new();
    for attempt in 0..3u64 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(attempt)).await;
        }
        match send_one(dir, name, p).await {
            Ok(()) => return Ok(()),
            Err(SendError::Local(reason, errno)) => {
                return Err(RunOutcome::Held {
                    reason,
                    code: HOLD_TRANSFER_OUTPUT_ERROR,
                    subcode: errno,
                })
            }
            Err(SendError::Net(e)) if crate::run::is_transient(&e) => last = e.to_string(),
            Err(SendError::Net(e)) => {
                return Err(RunOutcome::Failed {
                    reason: format!("sending output {name}: {e}"),
                    permanent: false,
                })
            }
        }
    }
    Err(RunOutcome::Failed {
        reason: format!("sending output {name}: {last}"),
        permanent: false,
    })
}

enum SendError {
    /// The file could not be read here (reason naming it, errno).
    Local(String, i64),
    Net(skua_net::NetError),
}

async fn send_one(dir: &Path, name: &str, p: &Pending) -> Result<(), SendError> {
    let path = dir.join(name);
    let local = |e: std::io::Error, what: &str| {
        SendError::Local(
            format!(
                "transferring output files failed: {what} {}: {e}",
                path.display()
            ),
            i64::from(e.raw_os_error().unwrap_or(0)),
        )
    };
    // with the job's rights: a link to a file it may not read sends nothing
    let q = path.clone();
    let file = p
        .as_user
        .run_async(&p.rights, move || std::fs::File::open(&q))
        .await
        .map_err(|e| SendError::Local(format!("cannot open output {name}: {e}"), 0))?
        .map_err(|e| local(e, "error reading from"))?;
    let file = tokio::fs::File::from_std(file);
    let meta = file
        .metadata()
        .await
        .map_err(|e| local(e, "cannot inspect"))?;
    let header = OutputFileMeta {
        claim_id: p.claim_id.clone(),
        name: name.to_string(),
        mode: meta.mode() & 0o777,
        job_id: Some(p.job_id.clone()),
    };
    let header = serde_json::to_string(&header)
        .map_err(|e| SendError::Local(format!("output {name}: {e}"), 0))?;
    p.client
        .upload::<Ack>(
            &routes::SHADOW_OUTPUT_FILE,
            (TRANSFER_HEADER, header),
            file,
            meta.len(),
        )
        .await
        .map_err(SendError::Net)?;
    tracing::debug!(file = %name, bytes = meta.len(), "output sent");
    Ok(())
}

/// The outputs of the job in `dir` (relative names) and the named ones
/// that are missing: `TransferOutput`'s entries (a directory's files), or
/// the new and changed top-level files, plus the standard streams.
pub(crate) fn output_names(
    job: &ClassAd,
    dir: &Path,
    baseline: &BTreeMap<String, Stamp>,
    executable: Option<&str>,
) -> (Vec<String>, Vec<String>) {
    let mut missing: Vec<String> = Vec::new();
    let mut names: Vec<String> = match plan::string_attr(job, "TransferOutput") {
        Some(list) => {
            let mut out = Vec::new();
            for item in plan::split_list(&list) {
                let item = item.trim_end_matches('/').to_string();
                if !plan::is_safe_relative(&item) {
                    tracing::warn!(file = %item, "not sending an output outside the scratch directory");
                    continue;
                }
                match std::fs::metadata(dir.join(&item)) {
                    Ok(m) if m.is_dir() => crate::run::files_below(dir, &item, &mut out),
                    Ok(m) if m.is_file() => out.push(item),
                    _ => missing.push(item),
                }
            }
            out
        }
        None => plan::changed_outputs(baseline, &crate::run::top_level_files(dir), executable),
    };
    for (attr, name) in [
        ("Out", skua_proto::STDOUT_NAME),
        ("Err", skua_proto::STDERR_NAME),
    ] {
        if plan::stream_path(job, attr).is_some() && dir.join(name).is_file() {
            names.push(name.to_string());
        }
    }
    (names, missing)
}
