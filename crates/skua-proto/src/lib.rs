//! The Skua wire contract: what daemons and tools say to each other.
//!
//! Serde types only; no I/O. Every request is HTTP/1.1 with a JSON body,
//! one path per command ([`routes`]), the version header
//! [`PROTOCOL_HEADER`]` = `[`PROTOCOL_VERSION`], and errors answered with an
//! [`ErrorBody`] whose [`ErrorCode`] fixes the HTTP status. The full
//! description is `docs/protocol.md`.
//!
//! Compatibility: a field may be added to a message only with
//! `#[serde(default)]`, so older peers keep decoding newer messages (unknown
//! fields are ignored everywhere). Anything else bumps [`PROTOCOL_VERSION`].

mod auth;
mod collector;
mod error;
mod join;
mod master;
mod negotiator;
pub mod routes;
mod schedd;
mod shadow;
mod startd;

pub use auth::{AuthLevel, AuthMethod, ParseLevelError, TokenClaims, WhoAmI};
pub use collector::{AdUpdate, Invalidate, Query, QueryReply, ANY_AD_TYPE};
pub use error::{ErrorBody, ErrorCode};
pub use join::{
    CredentialList, CredentialQuery, CredentialRecord, JoinClaims, JoinReply, JoinRequest,
    PoolRole, RevocationList, RevocationQuery, RevokeReply, RevokeRequest, JOIN_SCOPE,
    JOIN_SUBJECT,
};
pub use master::{CommandReply, DaemonCommand, MasterCommand};
pub use negotiator::{
    MatchInfo, Matches, Reschedule, ResourceRequest, ResourceRequests, ResourceRequestsReply,
    UserPrioChange, UserPrioEdit, UserPrioQuery, UserPrioRecord, UserPrioReply,
};
pub use routes::{RawBytes, RequestBody, Route, RouteSpec};
pub use schedd::{
    BatchRow, EvictedFile, EvictedFileRequest, EvictedFilesQuery, EvictedFilesReply, JobAction,
    JobActionKind, JobActionReply, JobOutcome, JobQuery, JobQueryReply, JobSelector, NewCluster,
    NewClusterReply, SetAttribute, Submit, SubmitReply,
};
pub use shadow::{
    BeginReply, CheckpointCommit, CheckpointFileMeta, CheckpointInfo, CheckpointKind, EntryKind,
    InputEntry, InputFileRequest, JobExit, JobUpdate, JobUsage, OutputFileMeta, RunOutcome,
    ShadowBegin, StarterGone, UpdateKind, CRIU_IMAGE_DIR, EXECUTE_REPORT_DELAY_MS, STDERR_NAME,
    STDOUT_NAME, TRANSFER_HEADER,
};
pub use startd::{
    ActivateRequest, ClaimAlive, ClaimReply, ClaimRequest, ClaimStatus, DeactivateRequest,
    DrainRequest, MatchNotice, ReconnectRequest, ReleaseRequest, ShadowMoved, SlotStates,
    StarterDone, StarterHold, StarterMessage, StarterSpec, VacateRequest, STARTER_EXIT_LOST_SHADOW,
};

use serde::{Deserialize, Serialize};

/// The reply of a command that has nothing to say beyond success: `{}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {}

/// The protocol version this build speaks. Sent by clients and servers in
/// the [`PROTOCOL_HEADER`] header of every request and response.
pub const PROTOCOL_VERSION: u32 = 1;

/// Skua's release (the workspace's version): what `skua --version` and
/// `skuad --version` print.
pub const SKUA_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `CondorVersion` of every Skua ad: HTCondor's `$CondorVersion: ... $`
/// form with Skua's release as its second word, which is what
/// condor_submit's default Requirements read
/// (`versionGE(split(TARGET.CondorVersion)[1], ...)`) and what `skua status`
/// shows as a daemon's version.
pub const CONDOR_VERSION: &str = concat!("$CondorVersion: ", env!("CARGO_PKG_VERSION"), " Skua $");

/// Name of the HTTP header carrying [`PROTOCOL_VERSION`].
pub const PROTOCOL_HEADER: &str = "Skua-Protocol";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condor_version_carries_skuas_release_as_its_second_word() {
        let words: Vec<&str> = CONDOR_VERSION.split_whitespace().collect();
        assert_eq!(words.first(), Some(&"$CondorVersion:"));
        assert_eq!(words.get(1), Some(&SKUA_VERSION));
        assert_eq!(words.last(), Some(&"$"));
    }
}
