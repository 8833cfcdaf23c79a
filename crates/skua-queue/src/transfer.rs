//! A running job's file transfers as the transfer queue sees them: the
//! attributes HTCondor keeps (`TransferQueued`, `TransferringInput`,
//! `TransferringOutput`, `TransferIn{Queued,Started,Finished}`,
//! `TransferOut{Queued,Started,Finished}`, `NumInputTransferStarts`,
//! `NumOutputTransferStarts`, `BytesRecvd` for input, `BytesSent` for
//! output) and the event 040 of each step.

use classad::{Expr, Value};

use crate::plan::Planner;
use crate::queue::{int_attr, status_of};
use crate::userlog::{FileTransfer, UserLogEvent};
use crate::{JobId, Queue, QueueError, Txn};

pub const TRANSFER_QUEUED: &str = "TransferQueued";
pub const TRANSFERRING_INPUT: &str = "TransferringInput";
pub const TRANSFERRING_OUTPUT: &str = "TransferringOutput";
pub const TRANSFER_IN_QUEUED: &str = "TransferInQueued";
pub const TRANSFER_IN_STARTED: &str = "TransferInStarted";
pub const TRANSFER_IN_FINISHED: &str = "TransferInFinished";
pub const TRANSFER_OUT_QUEUED: &str = "TransferOutQueued";
pub const TRANSFER_OUT_STARTED: &str = "TransferOutStarted";
pub const TRANSFER_OUT_FINISHED: &str = "TransferOutFinished";
pub const NUM_INPUT_TRANSFER_STARTS: &str = "NumInputTransferStarts";
pub const NUM_OUTPUT_TRANSFER_STARTS: &str = "NumOutputTransferStarts";
/// Bytes the job received (its input), over all its runs.
pub const BYTES_RECVD: &str = "BytesRecvd";
/// Bytes the job sent (its output), over all its runs.
pub const BYTES_SENT: &str = "BytesSent";

fn is_input(step: FileTransfer) -> bool {
    matches!(
        step,
        FileTransfer::InputQueued | FileTransfer::InputStarted | FileTransfer::InputFinished
    )
}

fn bool_lit(b: bool) -> Expr {
    Expr::Lit(Value::Bool(b))
}

/// A run ended: no transfer of it waits or runs any more (a flag left
/// true is set false).
pub(crate) fn clear_flags(p: &mut Planner<'_>, id: JobId, ad: &classad::ClassAd) {
    for name in [TRANSFER_QUEUED, TRANSFERRING_INPUT, TRANSFERRING_OUTPUT] {
        if matches!(ad.lookup(name), Some(Expr::Lit(Value::Bool(true)))) {
            p.set(id, name, &bool_lit(false));
        }
    }
}

impl Queue {
    /// A step of a file transfer of the running job `id` at `now`: its
    /// attributes and its event 040. `host` (the execute side's address)
    /// is written with the input's steps; `bytes` (moved since the last
    /// report) are added to `BytesRecvd` (input) or `BytesSent` (output).
    /// A job no longer active is left as it is.
    pub fn plan_transfer(
        &self,
        id: JobId,
        step: FileTransfer,
        host: Option<&str>,
        bytes: u64,
        now: i64,
    ) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        if !status_of(ad).is_active() {
            return Ok(p.finish());
        }
        let input = is_input(step);
        let (flag, queued, started, finished, starts) = if input {
            (
                TRANSFERRING_INPUT,
                TRANSFER_IN_QUEUED,
                TRANSFER_IN_STARTED,
                TRANSFER_IN_FINISHED,
                NUM_INPUT_TRANSFER_STARTS,
            )
        } else {
            (
                TRANSFERRING_OUTPUT,
                TRANSFER_OUT_QUEUED,
                TRANSFER_OUT_STARTED,
                TRANSFER_OUT_FINISHED,
                NUM_OUTPUT_TRANSFER_STARTS,
            )
        };
        let was_queued = matches!(
            ad.lookup(TRANSFER_QUEUED),
            Some(Expr::Lit(Value::Bool(true)))
        );
        let mut seconds_in_queue = None;
        match step {
            FileTransfer::InputQueued | FileTransfer::OutputQueued => {
                // (condor_q -io shows `<q` or `q>`: the direction's flag
                // and the queued one)
                p.set(id, TRANSFER_QUEUED, &bool_lit(true));
                p.set(id, flag, &bool_lit(true));
                p.set_int(id, queued, now);
            }
            FileTransfer::InputStarted | FileTransfer::OutputStarted => {
                if was_queued {
                    seconds_in_queue = int_attr(ad, queued).map(|q| (now - q).max(0));
                }
                p.set(id, TRANSFER_QUEUED, &bool_lit(false));
                p.set(id, flag, &bool_lit(true));
                p.set_int(id, started, now);
                p.set_int(
                    id,
                    starts,
                    int_attr(ad, starts).unwrap_or(0).saturating_add(1),
                );
            }
            FileTransfer::InputFinished | FileTransfer::OutputFinished => {
                p.set(id, flag, &bool_lit(false));
                p.set_int(id, finished, now);
            }
        }
        self.add_bytes(&mut p, id, input, bytes)?;
        let host = host.filter(|_| {
            input && matches!(step, FileTransfer::InputQueued | FileTransfer::InputStarted)
        });
        p.event(
            id,
            UserLogEvent::Transfer {
                step,
                seconds_in_queue,
                host: host.map(String::from),
            },
        );
        Ok(p.finish())
    }

    /// Progress of a transfer of the running job `id`: `bytes` more were
    /// moved (no event).
    pub fn plan_transfer_progress(
        &self,
        id: JobId,
        input: bool,
        bytes: u64,
    ) -> Result<Txn, QueueError> {
        let ad = self.job_ad(id)?;
        let mut p = Planner::new(self);
        if status_of(ad).is_active() {
            self.add_bytes(&mut p, id, input, bytes)?;
        }
        Ok(p.finish())
    }

    fn add_bytes(
        &self,
        p: &mut Planner<'_>,
        id: JobId,
        input: bool,
        bytes: u64,
    ) -> Result<(), QueueError> {
        if bytes == 0 {
            return Ok(());
        }
        let ad = self.job_ad(id)?;
        let name = if input { BYTES_RECVD } else { BYTES_SENT };
        let old = match ad.lookup(name) {
            Some(Expr::Lit(v)) => v.as_real().unwrap_or(0.0),
            _ => 0.0,
        };
        p.set(id, name, &Expr::Lit(Value::Real(old + bytes as f64)));
        Ok(())
    }
}
