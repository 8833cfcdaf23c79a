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
mod chirp;
mod collector;
mod error;
mod join;
mod master;
mod negotiator;
pub mod routes;
mod sandbox;
mod schedd;
mod shadow;
mod spool;
mod startd;
mod xferq;

pub use auth::{AuthLevel, AuthMethod, ParseLevelError, TokenClaims, WhoAmI};
pub use chirp::{
    ChirpJobReply, ChirpJobRequest, ChirpOp, ChirpStat, ShadowChirp, ShadowChirpReply,
    CHIRP_CONFIG_ENV, CHIRP_CONFIG_NAME, CHIRP_COOKIE_LEN, CHIRP_HEADER, CHIRP_LINE_LIMIT,
    CHIRP_ULOG_LIMIT,
};
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
pub use sandbox::{
    JobCommandReply, JobCommandRequest, SandboxChunk, SandboxFile, SandboxReadRequest,
    StartdJobCommand, StartdSandboxRead, JOB_COMMAND_OUTPUT_MAX, SANDBOX_READ_MAX,
};
pub use schedd::{
    BatchRow, EvictedFile, EvictedFileRequest, EvictedFilesQuery, EvictedFilesReply, JobAction,
    JobActionKind, JobActionReply, JobOutcome, JobQuery, JobQueryReply, JobSelector, NewCluster,
    NewClusterReply, SetAttribute, Submit, SubmitReply,
};
pub use shadow::{
    BeginReply, CheckpointCommit, CheckpointFileMeta, CheckpointInfo, CheckpointKind, EntryKind,
    InputEntry, InputFileRequest, JobExit, JobUpdate, JobUsage, LocalSource, OutputFileMeta,
    RunOutcome, ShadowBegin, StarterGone, UpdateKind, CRIU_IMAGE_DIR, EXECUTE_REPORT_DELAY_MS,
    STDERR_NAME, STDOUT_NAME, TRANSFER_HEADER,
};
pub use spool::{
    OutputFetched, SpoolCommit, SpoolFileMeta, SpooledFile, SpooledFileRequest, SpooledOutputQuery,
    SpooledOutputReply,
};
pub use startd::{
    ActivateRequest, ClaimAlive, ClaimReply, ClaimRequest, ClaimStatus, DeactivateRequest,
    DrainRequest, MatchNotice, ReconnectRequest, ReleaseRequest, ShadowMoved, SlotStates,
    StarterDone, StarterHold, StarterMessage, StarterSpec, VacateRequest, STARTER_EXIT_LOST_SHADOW,
};
pub use xferq::{TransferDirection, TransferQueueReply, TransferQueueRequest, TransferStep};

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

/// The HTCondor release whose behaviour Skua follows (the configuration's
/// `CONDOR_VERSION` default is the same): the version number every Skua ad
/// carries, so that expressions written for HTCondor that compare versions
/// (condor_submit's default Requirements test
/// `versionGE(split(TARGET.CondorVersion)[1], "25.12.0")`) treat a Skua
/// daemon as that release.
pub const HTCONDOR_COMPATIBLE_VERSION: &str = "25.14.1";

/// The `CondorVersion` of every Skua ad, in HTCondor's form
/// `$CondorVersion: <version> <date> BuildID: <id> $`: the second word is
/// [`HTCONDOR_COMPATIBLE_VERSION`] (what version comparisons read and what
/// `skua status -master` shows), the build id names Skua's own release.
pub const CONDOR_VERSION: &str = concat!(
    "$CondorVersion: 25.14.1 2026-11-24 BuildID: Skua-",
    env!("CARGO_PKG_VERSION"),
    " $"
);

/// HTCondor's `$CondorPlatform: <ARCH>-<OS> $` for this build
/// (`$CondorPlatform: X86_64-Linux $`), as `skua version` prints it.
pub fn condor_platform() -> String {
    let os = match std::env::consts::OS {
        "linux" => "Linux".to_string(),
        "macos" => "MacOSX".to_string(),
        other => other.to_string(),
    };
    format!(
        "$CondorPlatform: {}-{os} $",
        std::env::consts::ARCH.to_ascii_uppercase()
    )
}

/// Name of the HTTP header carrying [`PROTOCOL_VERSION`].
pub const PROTOCOL_HEADER: &str = "Skua-Protocol";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condor_version_is_htcondors_form_with_skuas_release_as_build_id() {
        let words: Vec<&str> = CONDOR_VERSION.split_whitespace().collect();
        assert_eq!(words.first(), Some(&"$CondorVersion:"));
        assert_eq!(words.get(1), Some(&HTCONDOR_COMPATIBLE_VERSION));
        // a date in HTCondor's ISO form, then the build id
        let date = words.get(2).expect("a date");
        assert_eq!(date.len(), 10, "{date}");
        assert_eq!(date.matches('-').count(), 2, "{date}");
        assert_eq!(words.get(3), Some(&"BuildID:"));
        assert_eq!(
            words.get(4).copied(),
            Some(format!("Skua-{SKUA_VERSION}").as_str())
        );
        assert_eq!(words.last(), Some(&"$"));
        if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            assert_eq!(condor_platform(), "$CondorPlatform: X86_64-Linux $");
        }
    }
}
