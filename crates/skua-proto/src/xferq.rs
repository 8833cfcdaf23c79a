//! The submit side's transfer queue, as a starter asks it
//! (`POST /shadow/transfer_queue`).

use serde::{Deserialize, Serialize};

/// Which transfer, from the submit side: `in` (the job's input, an upload
/// from the submit side) or `out` (its output, a download to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferDirection {
    In,
    Out,
}

/// What the starter says of the transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferStep {
    /// May it start? `bytes`: its total size. Asked again (after the
    /// reply's `retry_ms`) until granted.
    Ask,
    /// It goes on: `bytes` moved so far.
    Progress,
    /// It ended: `bytes` moved in all; its turn is released.
    Done,
}

/// `POST /shadow/transfer_queue` (DAEMON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferQueueRequest {
    /// The claim.
    pub claim_id: String,
    /// The job the claim runs.
    pub job_id: String,
    pub direction: TransferDirection,
    pub step: TransferStep,
    /// Bytes (see [`TransferStep`]).
    #[serde(default)]
    pub bytes: u64,
}

/// The answer to [`TransferQueueRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferQueueReply {
    /// The transfer may start (always true for `progress` and `done`).
    pub granted: bool,
    /// Not granted: ask again after this many milliseconds.
    #[serde(default)]
    pub retry_ms: u64,
}
