//! The starter's side of the submit side's transfer queue
//! (`/shadow/transfer_queue`): wait for a turn before a transfer, report
//! its progress while it runs, free the turn at its end. Called wherever
//! the input download and the output upload happen (`run.rs`).
//!
//! The queue orders transfers, it guards nothing: when the shadow cannot
//! be asked (an older schedd, a lost connection) the transfer goes ahead.

use std::time::{Duration, Instant};

use skua_net::Client;
use skua_proto::{routes, TransferDirection, TransferQueueRequest, TransferStep};

/// How often a transfer's progress is reported at most.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// One transfer (a job's input or its output) in the transfer queue.
pub(crate) struct Transfer {
    client: Client,
    claim_id: String,
    job_id: String,
    direction: TransferDirection,
    /// Bytes moved so far.
    moved: u64,
    last_report: Instant,
}

impl Transfer {
    pub(crate) fn new(
        client: &Client,
        claim_id: &str,
        job_id: &str,
        direction: TransferDirection,
    ) -> Transfer {
        Transfer {
            client: client.clone(),
            claim_id: claim_id.to_string(),
            job_id: job_id.to_string(),
            direction,
            moved: 0,
            last_report: Instant::now(),
        }
    }

    async fn send(&self, step: TransferStep, bytes: u64) -> Option<skua_proto::TransferQueueReply> {
        let req = TransferQueueRequest {
            claim_id: self.claim_id.clone(),
            job_id: self.job_id.clone(),
            direction: self.direction,
            step,
            bytes,
        };
        match self
            .client
            .command(&routes::SHADOW_TRANSFER_QUEUE, Some(&req))
            .await
        {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(?step, "the shadow's transfer queue did not answer: {e}");
                None
            }
        }
    }

    /// Waits for the turn of a transfer of `bytes` in all.
    pub(crate) async fn turn(&mut self, bytes: u64) {
        loop {
            match self.send(TransferStep::Ask, bytes).await {
                Some(r) if !r.granted => {
                    let pause = Duration::from_millis(r.retry_ms.clamp(50, 10_000));
                    tokio::time::sleep(pause).await;
                }
                _ => break,
            }
        }
        self.last_report = Instant::now();
    }

    /// `bytes` more were moved: reported when a report is due.
    pub(crate) async fn moved(&mut self, bytes: u64) {
        self.moved = self.moved.saturating_add(bytes);
        if self.last_report.elapsed() >= PROGRESS_EVERY {
            self.last_report = Instant::now();
            self.send(TransferStep::Progress, self.moved).await;
        }
    }

    /// The transfer ended: its bytes in all, and its turn freed.
    pub(crate) async fn done(&mut self) {
        self.send(TransferStep::Done, self.moved).await;
    }
}
