//! Jobs submitted with `skua submit -spool` (HTCondor's `condor_submit
//! -spool`) and `skua transfer_data`: the queue's rules, pure.
//!
//! - A spooled job is submitted held with `HoldReasonCode = 16`
//!   (SpoolingInput) while its input files are copied into the schedd's
//!   spool; [`Queue::plan_spool_complete`] releases it once they are all
//!   there, with its `Iwd` moved to the spool directory (the submitted one
//!   kept as `SUBMIT_Iwd`), its executable and input files named by their
//!   base names (the submitted ones kept as `SUBMIT_Cmd`,
//!   `SUBMIT_TransferInput`, `SUBMIT_In`), an absolute `Out`/`Err`
//!   likewise (`SUBMIT_Out`, `SUBMIT_Err`), `TransferOutputRemaps` moved
//!   to `SUBMIT_TransferOutputRemaps` (applied when the output is
//!   fetched), and `StageInStart`/`StageInFinish` recorded.
//! - `LeaveJobInQueue` ([`leave_in_queue`]) is evaluated on a job that
//!   completes: true keeps it in the queue as Completed (its output waits
//!   in the spool); otherwise, or once it stops being true, the job leaves.
//! - [`Queue::plan_output_fetched`]: `skua transfer_data` fetched the
//!   output; `StageOutStart`/`StageOutFinish` are recorded,
//!   `LeaveJobInQueue` becomes false and the job leaves the queue.

use classad::{ClassAd, Evaluator, Expr, Value};

use crate::attr;
use crate::plan::Planner;
use crate::queue::{int_attr, status_of, str_attr};
use crate::{JobId, JobStatus, Queue, QueueError, Txn};

/// HTCondor's HoldReasonCode while a job's input files are spooled
/// (`SpoolingInput`).
pub const HOLD_SPOOLING_INPUT: i64 = 16;
/// The hold reason of a job waiting for its input files.
pub const SPOOLING_HOLD_REASON: &str = "Spooling input data files";
/// The `LeaveJobInQueue` condor_submit gives a spooled job: kept while
/// Completed, for ten days after its completion.
pub const SPOOLED_LEAVE_IN_QUEUE: &str = "JobStatus == 4 && (CompletionDate =?= undefined || \
     CompletionDate == 0 || ((time() - CompletionDate) < 864000))";

/// `LeaveJobInQueue`.
pub const LEAVE_JOB_IN_QUEUE: &str = "LeaveJobInQueue";
/// The submitted `Iwd` of a spooled job.
pub const SUBMIT_IWD: &str = "SUBMIT_Iwd";
/// The submitted `Cmd` of a spooled job.
pub const SUBMIT_CMD: &str = "SUBMIT_Cmd";
/// The submitted `TransferInput`.
pub const SUBMIT_TRANSFER_INPUT: &str = "SUBMIT_TransferInput";
/// The submitted `In`.
pub const SUBMIT_IN: &str = "SUBMIT_In";
/// The submitted `Out` (when it was absolute).
pub const SUBMIT_OUT: &str = "SUBMIT_Out";
/// The submitted `Err` (when it was absolute).
pub const SUBMIT_ERR: &str = "SUBMIT_Err";
/// The submitted `TransferOutputRemaps`.
pub const SUBMIT_TRANSFER_OUTPUT_REMAPS: &str = "SUBMIT_TransferOutputRemaps";
/// When the first input file reached the spool.
pub const STAGE_IN_START: &str = "StageInStart";
/// When the last input file reached the spool.
pub const STAGE_IN_FINISH: &str = "StageInFinish";
/// When `skua transfer_data` began fetching the output.
pub const STAGE_OUT_START: &str = "StageOutStart";
/// When it finished.
pub const STAGE_OUT_FINISH: &str = "StageOutFinish";

/// True when `ad`'s `LeaveJobInQueue` evaluates to true (or a non-zero
/// number); missing, false, undefined or an error: false.
pub fn leave_in_queue(ev: &mut Evaluator, ad: &ClassAd) -> bool {
    if ad.lookup(LEAVE_JOB_IN_QUEUE).is_none() {
        return false;
    }
    match ev.eval_attr(LEAVE_JOB_IN_QUEUE, ad, None) {
        Value::Bool(b) => b,
        Value::Int(i) => i != 0,
        Value::Real(r) => r != 0.0,
        _ => false,
    }
}

/// True for a job submitted with `-spool` whose input is still being
/// spooled.
pub fn is_spooling(ad: &ClassAd) -> bool {
    status_of(ad) == JobStatus::Held
        && int_attr(ad, attr::HOLD_REASON_CODE) == Some(HOLD_SPOOLING_INPUT)
}

/// True for a job whose input was spooled (it has a `SUBMIT_Iwd`).
pub fn is_spooled(ad: &ClassAd) -> bool {
    str_attr(ad, SUBMIT_IWD).is_some()
}

/// The last path component of `path` (`path` itself if it has none).
fn base_name(path: &str) -> &str {
    let t = path.trim_end_matches('/');
    t.rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or(t)
}

/// The input files of a job as the spool receives them: each `(path on
/// the submit side, name in the spool)`. The executable unless
/// `TransferExecutable` is false, `In` unless it is `/dev/null`, each
/// entry of `TransferInput` (relative paths are below `Iwd`). URLs are
/// left out (they are fetched where the job runs).
pub fn spool_inputs(ad: &ClassAd) -> Vec<(String, String)> {
    let iwd = str_attr(ad, "Iwd").unwrap_or_default();
    let full = |p: &str| {
        if p.starts_with('/') {
            p.to_string()
        } else {
            format!("{}/{}", iwd.trim_end_matches('/'), p)
        }
    };
    let mut out = Vec::new();
    let transfer_exe = !matches!(
        ad.lookup("TransferExecutable"),
        Some(Expr::Lit(Value::Bool(false)))
    );
    if transfer_exe {
        if let Some(cmd) = str_attr(ad, "Cmd").filter(|c| !c.is_empty()) {
            out.push((full(&cmd), base_name(&cmd).to_string()));
        }
    }
    if let Some(input) = str_attr(ad, "In").filter(|i| !i.is_empty() && i != "/dev/null") {
        out.push((full(&input), base_name(&input).to_string()));
    }
    if let Some(list) = str_attr(ad, "TransferInput") {
        for entry in list
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|e| !e.is_empty())
        {
            if entry.contains("://") {
                continue;
            }
            out.push((full(entry), base_name(entry).to_string()));
        }
    }
    out
}

impl Queue {
    /// Plans the release of spooled job `id` whose input files are all in
    /// `spool_dir`: the attributes rewritten as the module says, then
    /// Idle. The job must be held with code 16 and owned by `owner`
    /// (unless `admin`).
    pub fn plan_spool_complete(
        &self,
        id: JobId,
        spool_dir: &str,
        stage_in_start: i64,
        owner: &str,
        admin: bool,
        now: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self
            .job(id)
            .ok_or_else(|| QueueError::NotFound(format!("job {id}")))?;
        check_owner(ad, id, owner, admin)?;
        if !is_spooling(ad) {
            return Err(QueueError::Conflict(format!(
                "job {id} is not waiting for its input files to be spooled"
            )));
        }
        let mut p = Planner::new(self);
        let iwd = str_attr(ad, "Iwd").unwrap_or_default();
        p.set_str(id, SUBMIT_IWD, &iwd);
        p.set_str(id, "Iwd", spool_dir);
        let transfer_exe = !matches!(
            ad.lookup("TransferExecutable"),
            Some(Expr::Lit(Value::Bool(false)))
        );
        if let Some(cmd) = str_attr(ad, "Cmd").filter(|c| transfer_exe && !c.is_empty()) {
            p.set_str(id, SUBMIT_CMD, &cmd);
            p.set_str(id, "Cmd", base_name(&cmd));
        }
        if let Some(input) = str_attr(ad, "In").filter(|i| !i.is_empty() && i != "/dev/null") {
            p.set_str(id, SUBMIT_IN, &input);
            p.set_str(id, "In", base_name(&input));
        }
        if let Some(list) = str_attr(ad, "TransferInput") {
            let names: Vec<&str> = list
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|e| !e.is_empty())
                .map(|e| if e.contains("://") { e } else { base_name(e) })
                .collect();
            p.set_str(id, SUBMIT_TRANSFER_INPUT, &list);
            p.set_str(id, "TransferInput", &names.join(","));
        }
        for (name, keep) in [("Out", SUBMIT_OUT), ("Err", SUBMIT_ERR)] {
            if let Some(path) =
                str_attr(ad, name).filter(|p| p.starts_with('/') && p != "/dev/null")
            {
                p.set_str(id, keep, &path);
                p.set_str(id, name, base_name(&path));
            }
        }
        if let Some(remaps) = str_attr(ad, "TransferOutputRemaps") {
            p.set_str(id, SUBMIT_TRANSFER_OUTPUT_REMAPS, &remaps);
            // (set, not deleted: a cluster ad's value would show through)
            p.set(id, "TransferOutputRemaps", &Expr::Lit(Value::Undefined));
        }
        p.set_int(id, STAGE_IN_START, stage_in_start.min(now));
        p.set_int(id, STAGE_IN_FINISH, now);
        p.release(id, ad, "Data files spooled", now);
        Ok(p.finish())
    }

    /// Plans the end of `skua transfer_data` for job `id`: its output was
    /// fetched (from `started` to `now`); it leaves the queue.
    pub fn plan_output_fetched(
        &self,
        id: JobId,
        owner: &str,
        admin: bool,
        started: i64,
        now: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self
            .job(id)
            .ok_or_else(|| QueueError::NotFound(format!("job {id}")))?;
        check_owner(ad, id, owner, admin)?;
        if status_of(ad) != JobStatus::Completed {
            return Err(QueueError::Conflict(format!(
                "job {id} is {}, not completed",
                status_of(ad).name().to_ascii_lowercase()
            )));
        }
        let mut p = Planner::new(self);
        p.set_int(id, STAGE_OUT_START, started.min(now));
        p.set_int(id, STAGE_OUT_FINISH, now);
        p.set(id, LEAVE_JOB_IN_QUEUE, &Expr::boolean(false));
        p.destroy(id, true);
        Ok(p.finish())
    }
}

fn check_owner(ad: &ClassAd, id: JobId, owner: &str, admin: bool) -> Result<(), QueueError> {
    let job_owner = str_attr(ad, attr::OWNER).unwrap_or_default();
    if admin || job_owner == owner {
        Ok(())
    } else {
        Err(QueueError::PermissionDenied(format!(
            "job {id} belongs to {job_owner}, not {owner}"
        )))
    }
}
