//! The running part of a job's life, as the schedd's shadow reports it:
//! start on a claimed slot, execution, usage, and the ways a run ends other
//! than the job's own exit ([`Queue::plan_exit`]): evicted, or failed
//! through no fault of the job (back to Idle, or held after too many).

use classad::{Expr, Value};

use crate::plan::Planner;
use crate::queue::{int_attr, status_of, str_attr};
use crate::userlog::{FileTransfer, Rusage, UserLogEvent};
use crate::{JobId, JobStatus, Queue, QueueError, Txn};

/// `RemoteHost` and friends, set while a job runs.
pub const REMOTE_HOST: &str = "RemoteHost";
/// The previous run's `RemoteHost`.
pub const LAST_REMOTE_HOST: &str = "LastRemoteHost";
/// The claim the current run holds (a secret: never shown by queries,
/// never sent to a starter; see [`PRIVATE`]).
pub const CLAIM_ID: &str = "ClaimId";
/// The address (`<ip:port>`) of the startd holding the current run's
/// claim.
pub const STARTD_IP_ADDR: &str = "StartdIpAddr";
/// Attributes the schedd keeps to itself (HTCondor's private
/// attributes): left out of every ad it shows or sends.
pub const PRIVATE: &[&str] = &[CLAIM_ID];
/// When the job first started running.
pub const JOB_START_DATE: &str = "JobStartDate";
/// When the current run started.
pub const JOB_CURRENT_START_DATE: &str = "JobCurrentStartDate";
/// When the current run's process started.
pub const JOB_CURRENT_START_EXECUTING_DATE: &str = "JobCurrentStartExecutingDate";
/// How many times a shadow started the job.
pub const NUM_JOB_STARTS: &str = "NumJobStarts";
/// How many runs began (HTCondor's `JobRunCount`).
pub const JOB_RUN_COUNT: &str = "JobRunCount";
/// How many times the job was matched.
pub const NUM_JOB_MATCHES: &str = "NumJobMatches";
/// When it was last matched.
pub const LAST_MATCH_TIME: &str = "LastMatchTime";
/// When the shadow of the current run started.
pub const SHADOW_BDAY: &str = "ShadowBday";
/// Wall-clock seconds of all runs so far.
pub const REMOTE_WALL_CLOCK_TIME: &str = "RemoteWallClockTime";
/// Slot-seconds of all runs so far.
pub const CUMULATIVE_SLOT_TIME: &str = "CumulativeSlotTime";
/// Runs that failed outside the job.
pub const NUM_SHADOW_EXCEPTIONS: &str = "NumShadowExceptions";
/// Peak virtual size, KiB.
pub const IMAGE_SIZE: &str = "ImageSize";
/// Peak resident set, KiB.
pub const RESIDENT_SET_SIZE: &str = "ResidentSetSize";
/// Why the last run ended, when not by the job's exit.
pub const LAST_VACATE_REASON: &str = "LastVacateReason";

/// When the schedd lost contact with the current run (set with event
/// 022, removed when it reconnects or gives up).
pub const JOB_DISCONNECTED_DATE: &str = "JobDisconnectedDate";
/// How many times the schedd reconnected to a run of the job.
pub const NUM_JOB_RECONNECTS: &str = "NumJobReconnects";
/// The last time the schedd heard from the current run's startd: a
/// restarted schedd reconnects while `now - LastJobLeaseRenewal <
/// JobLeaseDuration`.
pub const LAST_JOB_LEASE_RENEWAL: &str = "LastJobLeaseRenewal";

/// The number of the job's last stored checkpoint.
pub const CHECKPOINT_NUMBER: &str = "CheckpointNumber";
/// How many checkpoints were stored in the job's life.
pub const NUM_CKPTS: &str = "NumCkpts";
/// When the last checkpoint was stored (epoch seconds).
pub const LAST_CKPT_TIME: &str = "LastCkptTime";
/// Wall-clock seconds of work kept: every run that ended by the job's
/// own exit, and each other run up to its last stored checkpoint
/// (`RemoteWallClockTime - CommittedTime` is the work lost, badput).
pub const COMMITTED_TIME: &str = "CommittedTime";
/// `CommittedTime` in slot-seconds (weighted as `CumulativeSlotTime`).
pub const COMMITTED_SLOT_TIME: &str = "CommittedSlotTime";

/// The transparent backend (`"criu"`) that made the last stored
/// checkpoint; absent when the job wrote it itself.
pub const CHECKPOINT_BACKEND: &str = "SkuaCheckpointBackend";

/// How a run ended other than by the job's own exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Skua stopped it (vacate, claim lost by the owner's policy...): the
    /// job goes back to Idle.
    Evicted {
        /// Why.
        reason: String,
    },
    /// It failed outside the job (transfer, starter or startd gone): back to
    /// Idle, or held once `NumShadowExceptions` reaches `max_failures`, or
    /// held at once with `hold_code` when retrying cannot help.
    Failed {
        /// What failed.
        reason: String,
        /// HTCondor's HoldReasonCode for holding (e.g. 13 input transfer).
        hold_code: i64,
        /// Its HoldReasonSubCode (the errno of a failed file operation).
        hold_subcode: i64,
        /// Hold now.
        permanent: bool,
    },
    /// The execute side's policy (the startd's WANT_HOLD) stopped it and
    /// holds it (HoldReasonCode 21).
    Held {
        /// Why.
        reason: String,
        /// HoldReasonCode.
        code: i64,
        /// HoldReasonSubCode.
        subcode: i64,
    },
    /// The schedd could not reconnect to the run within the job's lease
    /// (event 024): the job goes back to Idle (never held, not counted as
    /// a failure).
    ReconnectFailed {
        /// Why (HTCondor's reason texts).
        reason: String,
        /// The slot the run was on.
        startd_name: String,
    },
}

/// How many times the job was suspended.
pub const TOTAL_SUSPENSIONS: &str = "TotalSuspensions";
/// When the current suspension began (0 when not suspended).
pub const LAST_SUSPENSION_TIME: &str = "LastSuspensionTime";
/// Seconds spent suspended, all runs.
pub const CUMULATIVE_SUSPENSION_TIME: &str = "CumulativeSuspensionTime";

impl Queue {
    /// A shadow claimed `slot` for job `id` (Idle): it is Running from now.
    pub fn plan_start(&self, id: JobId, slot: &str, now: i64) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let status = status_of(ad);
        if status != JobStatus::Idle {
            return Err(QueueError::Conflict(format!(
                "job {id} is {}, not idle",
                status.name().to_ascii_lowercase()
            )));
        }
        let mut p = Planner::new(self);
        p.new_status(id, ad, JobStatus::Running, now);
        p.set_str(id, REMOTE_HOST, slot);
        if int_attr(ad, JOB_START_DATE).is_none() {
            p.set_int(id, JOB_START_DATE, now);
        }
        p.set_int(id, JOB_CURRENT_START_DATE, now);
        p.set_int(id, LAST_JOB_LEASE_RENEWAL, now);
        p.set_int(id, SHADOW_BDAY, now);
        p.set_int(id, LAST_MATCH_TIME, now);
        // NumJobStarts counts runs whose job really began (the execute
        // event); a claim that fails before that is not a start.
        for counter in [JOB_RUN_COUNT, NUM_JOB_MATCHES] {
            let n = int_attr(ad, counter).unwrap_or(0);
            p.set_int(id, counter, n.saturating_add(1));
        }
        Ok(p.finish())
    }

    /// The run of `id` holds claim `claim_id` at the startd `startd_addr`:
    /// recorded with the start, so that a schedd restarted while the job
    /// runs can release the claim (killing the old run) before the job is
    /// matched again. Cleared when the run ends.
    pub fn plan_claim(
        &self,
        id: JobId,
        claim_id: &str,
        startd_addr: &str,
    ) -> Result<Txn, QueueError> {
        self.job_ad(id)?;
        let mut p = Planner::new(self);
        p.set_str(id, CLAIM_ID, claim_id);
        p.set_str(id, STARTD_IP_ADDR, startd_addr);
        Ok(p.finish())
    }

    /// The claim (id, startd address) recorded for the current run of the
    /// job with this ad, if any (the job's own attributes only).
    pub fn claim_of(ad: &classad::ClassAd) -> Option<(String, String)> {
        let own = |name: &str| match ad.lookup_own_sym(classad::intern(name)) {
            Some(Expr::Lit(v)) => v.as_string().filter(|s| !s.is_empty()),
            _ => None,
        };
        Some((own(CLAIM_ID)?, own(STARTD_IP_ADDR)?))
    }

    /// The schedd lost contact with the run of `id` on `startd_name` (the
    /// slot) at `startd_addr`: event 022 and `JobDisconnectedDate`, once
    /// per disconnection.
    pub fn plan_disconnected(
        &self,
        id: JobId,
        reason: &str,
        startd_name: &str,
        startd_addr: &str,
        now: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        if status_of(ad).is_active() && int_attr(ad, JOB_DISCONNECTED_DATE).is_none() {
            p.set_int(id, JOB_DISCONNECTED_DATE, now);
            p.event(
                id,
                UserLogEvent::Disconnected {
                    reason: reason.to_string(),
                    startd_name: startd_name.to_string(),
                    startd_addr: startd_addr.to_string(),
                },
            );
        }
        Ok(p.finish())
    }

    /// The schedd reached the run of `id` again (after a disconnection or
    /// its own restart): event 023, `NumJobReconnects` counted,
    /// `JobDisconnectedDate` cleared, the lease renewed.
    pub fn plan_reconnected(
        &self,
        id: JobId,
        startd_name: &str,
        startd_addr: &str,
        starter_addr: &str,
        now: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        if status_of(ad).is_active() {
            let n = int_attr(ad, NUM_JOB_RECONNECTS).unwrap_or(0);
            p.set_int(id, NUM_JOB_RECONNECTS, n.saturating_add(1));
            p.delete(id, ad, JOB_DISCONNECTED_DATE);
            p.set_int(id, LAST_JOB_LEASE_RENEWAL, now);
            p.event(
                id,
                UserLogEvent::Reconnected {
                    startd_name: startd_name.to_string(),
                    startd_addr: startd_addr.to_string(),
                    starter_addr: starter_addr.to_string(),
                },
            );
        }
        Ok(p.finish())
    }

    /// The run's startd answered a keep-alive at `now`
    /// (`LastJobLeaseRenewal`).
    pub fn plan_lease_renewed(&self, id: JobId, now: i64) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        if status_of(ad).is_active() {
            p.set_int(id, LAST_JOB_LEASE_RENEWAL, now);
        }
        Ok(p.finish())
    }

    /// The job's process started on `host` (the startd's address) in
    /// `slot`: the execute event.
    pub fn plan_executing(
        &self,
        id: JobId,
        host: &str,
        slot: &str,
        now: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        if status_of(ad).is_active() {
            p.set_int(id, JOB_CURRENT_START_EXECUTING_DATE, now);
            let starts = int_attr(ad, NUM_JOB_STARTS).unwrap_or(0);
            p.set_int(id, NUM_JOB_STARTS, starts.saturating_add(1));
            p.event(
                id,
                UserLogEvent::Execute {
                    host: host.to_string(),
                    slot_name: Some(slot.to_string()),
                },
            );
        }
        Ok(p.finish())
    }

    /// Usage measured by the starter: `ImageSize` and `ResidentSetSize` keep
    /// their peaks; an image size event when the peak grows.
    pub fn plan_usage(
        &self,
        id: JobId,
        image_size_kb: i64,
        resident_set_size_kb: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        if !status_of(ad).is_active() {
            return Ok(p.finish());
        }
        let old_image = int_attr(ad, IMAGE_SIZE).unwrap_or(0);
        let old_rss = int_attr(ad, RESIDENT_SET_SIZE).unwrap_or(0);
        if resident_set_size_kb > old_rss {
            p.set_int(id, RESIDENT_SET_SIZE, resident_set_size_kb);
        }
        if image_size_kb > old_image {
            p.set_int(id, IMAGE_SIZE, image_size_kb);
            p.event(
                id,
                UserLogEvent::ImageSize {
                    image_size_kb,
                    memory_usage_mb: Some((resident_set_size_kb.max(old_rss) + 1023) / 1024),
                    resident_set_size_kb: Some(resident_set_size_kb.max(old_rss)),
                    proportional_set_size_kb: None,
                },
            );
        }
        Ok(p.finish())
    }

    /// The run of job `id` ended without the job's own exit. A Running job
    /// goes back to Idle (or Held, see [`RunEnd::Failed`]) with its run's
    /// wall-clock time added and an evicted event; a job removed or held
    /// while it ran now leaves the queue or stays held.
    pub fn plan_run_ended(
        &self,
        id: JobId,
        end: &RunEnd,
        usage: Rusage,
        max_failures: i64,
        now: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let status = status_of(ad);
        let mut p = Planner::new(self);
        let checkpointed = Self::checkpointed_this_run(ad);
        self.account_run(&mut p, id, now, None, false);
        match status {
            JobStatus::Removed => {
                p.destroy(id, true);
                return Ok(p.finish());
            }
            JobStatus::Running | JobStatus::Suspended | JobStatus::TransferringOutput => {}
            _ => return Ok(p.finish()),
        }
        if let RunEnd::ReconnectFailed {
            reason,
            startd_name,
        } = end
        {
            p.set_str(id, LAST_VACATE_REASON, reason);
            p.event(
                id,
                UserLogEvent::ReconnectFailed {
                    reason: reason.clone(),
                    startd_name: startd_name.clone(),
                },
            );
            p.new_status(id, ad, JobStatus::Idle, now);
            return Ok(p.finish());
        }
        if let RunEnd::Held {
            reason,
            code,
            subcode,
        } = end
        {
            p.set_str(id, LAST_VACATE_REASON, reason);
            p.hold(id, ad, *code, *subcode, reason, now);
            return Ok(p.finish());
        }
        let (reason, failure) = match end {
            RunEnd::Held { .. } | RunEnd::ReconnectFailed { .. } => (String::new(), None),
            RunEnd::Evicted { reason } => (reason.clone(), None),
            RunEnd::Failed {
                reason,
                hold_code,
                hold_subcode,
                permanent,
            } => (
                reason.clone(),
                Some((*hold_code, *hold_subcode, *permanent)),
            ),
        };
        p.set_str(id, LAST_VACATE_REASON, &reason);
        p.event(
            id,
            UserLogEvent::Evicted {
                checkpointed,
                requeued: None,
                run_remote: usage,
                run_local: Rusage::default(),
                sent_bytes: 0,
                received_bytes: 0,
                reason: Some(reason.clone()),
                code: 0,
                subcode: 0,
            },
        );
        let hold = match failure {
            None => None,
            Some((code, subcode, permanent)) => {
                let n = int_attr(ad, NUM_SHADOW_EXCEPTIONS)
                    .unwrap_or(0)
                    .saturating_add(1);
                p.set_int(id, NUM_SHADOW_EXCEPTIONS, n);
                if permanent {
                    Some((code, subcode, reason.clone()))
                } else if max_failures > 0 && n >= max_failures {
                    Some((
                        code,
                        subcode,
                        format!("{reason} (the job failed to run {n} times)"),
                    ))
                } else {
                    None
                }
            }
        };
        match hold {
            Some((code, subcode, text)) => p.hold(id, ad, code, subcode, &text, now),
            None => p.new_status(id, ad, JobStatus::Idle, now),
        }
        Ok(p.finish())
    }

    /// The starter suspended (`true`) or continued the job: Running ↔
    /// Suspended (JobStatus 7) with the suspend or unsuspend event, and the
    /// suspension counted (`TotalSuspensions`, `LastSuspensionTime`,
    /// `CumulativeSuspensionTime`).
    pub fn plan_suspended(&self, id: JobId, suspended: bool, now: i64) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        match (status_of(ad), suspended) {
            (JobStatus::Running, true) => {
                p.new_status(id, ad, JobStatus::Suspended, now);
                let n = int_attr(ad, TOTAL_SUSPENSIONS).unwrap_or(0);
                p.set_int(id, TOTAL_SUSPENSIONS, n.saturating_add(1));
                p.set_int(id, LAST_SUSPENSION_TIME, now);
                p.event(id, UserLogEvent::Suspended { n: 1 });
            }
            (JobStatus::Suspended, false) => {
                p.new_status(id, ad, JobStatus::Running, now);
                if let Some(since) = int_attr(ad, LAST_SUSPENSION_TIME).filter(|t| *t > 0) {
                    let total = int_attr(ad, CUMULATIVE_SUSPENSION_TIME).unwrap_or(0);
                    p.set_int(id, CUMULATIVE_SUSPENSION_TIME, total + (now - since).max(0));
                }
                p.set_int(id, LAST_SUSPENSION_TIME, 0);
                p.event(id, UserLogEvent::Unsuspended);
            }
            _ => {}
        }
        Ok(p.finish())
    }

    /// A checkpoint of job `id` numbered `number` was stored at `now`
    /// (by the transparent `backend`, if any): `CheckpointNumber`,
    /// `NumCkpts`, `LastCkptTime` and the backend recorded, with the event
    /// 040 "Finished transferring output files" (the upload's start is
    /// [`Queue::plan_checkpoint_upload`]). A number not above the
    /// recorded one (a repeated commit) changes nothing.
    pub fn plan_checkpoint(
        &self,
        id: JobId,
        number: u64,
        backend: Option<&str>,
        now: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        let recorded = int_attr(ad, CHECKPOINT_NUMBER);
        if recorded.is_some_and(|r| r >= number as i64) {
            return Ok(p.finish());
        }
        if !status_of(ad).is_active() {
            return Err(QueueError::Conflict(format!(
                "job {id} is not running: its checkpoint is not taken"
            )));
        }
        p.set_int(id, CHECKPOINT_NUMBER, number as i64);
        let n = int_attr(ad, NUM_CKPTS).unwrap_or(0);
        p.set_int(id, NUM_CKPTS, n.saturating_add(1));
        p.set_int(id, LAST_CKPT_TIME, now);
        match backend {
            Some(b) => p.set_str(id, CHECKPOINT_BACKEND, b),
            None => p.delete(id, ad, CHECKPOINT_BACKEND),
        }
        p.event(id, UserLogEvent::FileTransfer(FileTransfer::OutputFinished));
        Ok(p.finish())
    }

    /// The upload of a checkpoint of job `id` began (its first file
    /// arrived): the event 040 "Started transferring output files" of a
    /// running job; [`Queue::plan_checkpoint`] writes the "Finished" one.
    pub fn plan_checkpoint_upload(&self, id: JobId) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        if status_of(ad).is_active() {
            p.event(id, UserLogEvent::FileTransfer(FileTransfer::OutputStarted));
        }
        Ok(p.finish())
    }

    /// Whether the current run of the job with this ad stored a
    /// checkpoint (its next run resumes from it).
    fn checkpointed_this_run(ad: &classad::ClassAd) -> bool {
        match (
            int_attr(ad, LAST_CKPT_TIME),
            int_attr(ad, JOB_CURRENT_START_DATE),
        ) {
            (Some(ckpt), Some(start)) => ckpt >= start,
            _ => false,
        }
    }

    /// Wall-clock accounting of the current run, and the move of
    /// `RemoteHost` to `LastRemoteHost`. `completed`: the run ended by
    /// the job's own exit, so all of it is committed; otherwise only the
    /// part up to the run's last stored checkpoint.
    pub(crate) fn account_run(
        &self,
        p: &mut Planner<'_>,
        id: JobId,
        now: i64,
        mut scratch: Option<&mut classad::ClassAd>,
        completed: bool,
    ) {
        let Some(ad) = self.job(id) else { return };
        if let Some(start) = int_attr(ad, JOB_CURRENT_START_DATE) {
            let run = (now - start).max(0);
            let committed = if completed {
                run
            } else if Self::checkpointed_this_run(ad) {
                int_attr(ad, LAST_CKPT_TIME).map_or(0, |t| (t - start).clamp(0, run))
            } else {
                0
            };
            let totals = [
                (REMOTE_WALL_CLOCK_TIME, run),
                (CUMULATIVE_SLOT_TIME, run),
                (COMMITTED_TIME, committed),
                (COMMITTED_SLOT_TIME, committed),
            ];
            for (total, add) in totals {
                let old = match ad.lookup(total) {
                    Some(Expr::Lit(v)) => v.as_real().unwrap_or(0.0),
                    _ => 0.0,
                };
                let e = Expr::Lit(Value::Real(old + add as f64));
                p.set(id, total, &e);
                if let Some(s) = scratch.as_deref_mut() {
                    s.insert(total, e);
                }
            }
            p.delete(id, ad, JOB_CURRENT_START_DATE);
        }
        if let Some(host) = str_attr(ad, REMOTE_HOST) {
            p.set_str(id, LAST_REMOTE_HOST, &host);
            p.delete(id, ad, REMOTE_HOST);
        }
        p.delete(id, ad, CLAIM_ID);
        p.delete(id, ad, STARTD_IP_ADDR);
        p.delete(id, ad, JOB_DISCONNECTED_DATE);
    }

    pub(crate) fn job_ad(&self, id: JobId) -> Result<&classad::ClassAd, QueueError> {
        self.job(id)
            .ok_or_else(|| QueueError::NotFound(format!("job {id} is not in the queue")))
    }
}
