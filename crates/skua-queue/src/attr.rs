//! Job attribute names the queue core reads or writes (HTCondor's names).

pub const CLUSTER_ID: &str = "ClusterId";
pub const PROC_ID: &str = "ProcId";
pub const OWNER: &str = "Owner";
pub const MY_TYPE: &str = "MyType";
pub const JOB_STATUS: &str = "JobStatus";
pub const LAST_JOB_STATUS: &str = "LastJobStatus";
pub const ENTERED_CURRENT_STATUS: &str = "EnteredCurrentStatus";
pub const Q_DATE: &str = "QDate";
pub const COMPLETION_DATE: &str = "CompletionDate";
pub const JOB_PRIO: &str = "JobPrio";
pub const USER_LOG: &str = "UserLog";
pub const USER: &str = "User";
pub const GLOBAL_JOB_ID: &str = "GlobalJobId";
pub const TOTAL_SUBMIT_PROCS: &str = "TotalSubmitProcs";
/// The key `skua submit` sends with a submission (a retry with the same
/// key gets the cluster already made); kept in the cluster ad.
pub const SUBMISSION_ID: &str = "SubmissionId";

pub const HOLD_REASON: &str = "HoldReason";
pub const HOLD_REASON_CODE: &str = "HoldReasonCode";
pub const HOLD_REASON_SUBCODE: &str = "HoldReasonSubCode";
pub const LAST_HOLD_REASON: &str = "LastHoldReason";
pub const LAST_HOLD_REASON_CODE: &str = "LastHoldReasonCode";
pub const LAST_HOLD_REASON_SUBCODE: &str = "LastHoldReasonSubCode";
pub const NUM_HOLDS: &str = "NumHolds";
pub const NUM_HOLDS_BY_REASON: &str = "NumHoldsByReason";
pub const RELEASE_REASON: &str = "ReleaseReason";
pub const REMOVE_REASON: &str = "RemoveReason";

pub const PERIODIC_HOLD: &str = "PeriodicHold";
pub const PERIODIC_HOLD_REASON: &str = "PeriodicHoldReason";
pub const PERIODIC_HOLD_SUBCODE: &str = "PeriodicHoldSubCode";
pub const PERIODIC_RELEASE: &str = "PeriodicRelease";
pub const PERIODIC_REMOVE: &str = "PeriodicRemove";
pub const ON_EXIT_HOLD: &str = "OnExitHold";
pub const ON_EXIT_HOLD_REASON: &str = "OnExitHoldReason";
pub const ON_EXIT_HOLD_SUBCODE: &str = "OnExitHoldSubCode";
pub const ON_EXIT_REMOVE: &str = "OnExitRemove";

pub const EXIT_BY_SIGNAL: &str = "ExitBySignal";
pub const EXIT_CODE: &str = "ExitCode";
pub const EXIT_SIGNAL: &str = "ExitSignal";
pub const JOB_CORE_DUMPED: &str = "JobCoreDumped";
pub const REMOTE_USER_CPU: &str = "RemoteUserCpu";
pub const REMOTE_SYS_CPU: &str = "RemoteSysCpu";

/// HTCondor's `HoldReasonCode` values the queue core uses.
pub mod hold_code {
    /// `condor_hold` by a user or an administrator.
    pub const USER_REQUEST: i64 = 1;
    /// `periodic_hold` or `on_exit_hold` fired.
    pub const JOB_POLICY: i64 = 3;
    /// A job policy expression evaluated to UNDEFINED (or ERROR).
    pub const JOB_POLICY_UNDEFINED: i64 = 5;
    /// The job's standard output or error could not be opened.
    pub const UNABLE_TO_OPEN_OUTPUT: i64 = 7;
    /// The job's standard input could not be opened.
    pub const UNABLE_TO_OPEN_INPUT: i64 = 8;
    /// An output file could not be stored on the submit side.
    pub const TRANSFER_OUTPUT_ERROR: i64 = 12;
    /// A checkpoint could not be stored.
    pub const FAILED_TO_CHECKPOINT: i64 = 36;
    /// An input file could not be read on the submit side.
    pub const TRANSFER_INPUT_ERROR: i64 = 13;
    /// Submitted with `hold = true`.
    pub const SUBMITTED_ON_HOLD: i64 = 15;
    /// `SYSTEM_PERIODIC_HOLD` fired.
    pub const SYSTEM_POLICY: i64 = 26;
    /// A system policy expression evaluated to UNDEFINED.
    pub const SYSTEM_POLICY_UNDEFINED: i64 = 27;

    /// The label HTCondor uses for a code in `NumHoldsByReason`.
    pub fn label(code: i64) -> &'static str {
        match code {
            USER_REQUEST => "UserRequest",
            JOB_POLICY => "JobPolicy",
            JOB_POLICY_UNDEFINED => "JobPolicyUndefined",
            UNABLE_TO_OPEN_OUTPUT => "UnableToOpenOutput",
            UNABLE_TO_OPEN_INPUT => "UnableToOpenInput",
            TRANSFER_OUTPUT_ERROR => "TransferOutputError",
            TRANSFER_INPUT_ERROR => "TransferInputError",
            FAILED_TO_CHECKPOINT => "FailedToCheckpoint",
            SUBMITTED_ON_HOLD => "SubmittedOnHold",
            SYSTEM_POLICY => "SystemPolicy",
            SYSTEM_POLICY_UNDEFINED => "SystemPolicyUndefined",
            _ => "Unspecified",
        }
    }
}

/// Attributes that always live in proc ads, never in a cluster ad: the
/// per-job identity and the state bookkeeping the rules rewrite or delete.
pub const PROC_ONLY: &[&str] = &[
    PROC_ID,
    JOB_STATUS,
    LAST_JOB_STATUS,
    ENTERED_CURRENT_STATUS,
    HOLD_REASON,
    HOLD_REASON_CODE,
    HOLD_REASON_SUBCODE,
    LAST_HOLD_REASON,
    LAST_HOLD_REASON_CODE,
    LAST_HOLD_REASON_SUBCODE,
    NUM_HOLDS,
    NUM_HOLDS_BY_REASON,
    RELEASE_REASON,
    REMOVE_REASON,
    COMPLETION_DATE,
    EXIT_BY_SIGNAL,
    EXIT_CODE,
    EXIT_SIGNAL,
    JOB_CORE_DUMPED,
];

/// Attributes the schedd owns: whatever value a submitted ad carries (a
/// `+User` line, a forged `GlobalJobId`, a run count) is discarded, and the
/// schedd writes its own where it has one ([`crate::Queue::plan_submit`]):
/// the job's identity (`ClusterId`, `ProcId`, `Owner`, `User`,
/// `GlobalJobId`, `SubmissionId`, `MyType`), its submission bookkeeping
/// (`QDate`, `EnteredCurrentStatus`, `TotalSubmitProcs`), the bookkeeping of
/// its runs and holds that only the schedd writes later, and HTCondor's
/// secure attributes (which only the schedd sets, from the credentials).
/// `JobStatus` is the schedd's too, but a submitted `JobStatus = 5` (submit
/// on hold) is honoured.
pub const SCHEDD_OWNED: &[&str] = &[
    CLUSTER_ID,
    PROC_ID,
    OWNER,
    USER,
    GLOBAL_JOB_ID,
    SUBMISSION_ID,
    MY_TYPE,
    Q_DATE,
    ENTERED_CURRENT_STATUS,
    TOTAL_SUBMIT_PROCS,
    LAST_JOB_STATUS,
    COMPLETION_DATE,
    NUM_HOLDS,
    NUM_HOLDS_BY_REASON,
    LAST_HOLD_REASON,
    LAST_HOLD_REASON_CODE,
    LAST_HOLD_REASON_SUBCODE,
    RELEASE_REASON,
    REMOVE_REASON,
    crate::run::REMOTE_HOST,
    crate::run::LAST_REMOTE_HOST,
    crate::run::JOB_START_DATE,
    crate::run::JOB_CURRENT_START_DATE,
    crate::run::JOB_CURRENT_START_EXECUTING_DATE,
    crate::run::NUM_JOB_MATCHES,
    crate::run::JOB_RUN_COUNT,
    crate::run::SHADOW_BDAY,
    crate::run::LAST_MATCH_TIME,
    crate::run::NUM_SHADOW_EXCEPTIONS,
    crate::run::LAST_VACATE_REASON,
    crate::run::CHECKPOINT_NUMBER,
    crate::run::NUM_CKPTS,
    crate::run::LAST_CKPT_TIME,
    crate::run::COMMITTED_TIME,
    crate::run::COMMITTED_SLOT_TIME,
    crate::run::CHECKPOINT_BACKEND,
    "x509userProxySubject",
    "x509UserProxyEmail",
    "x509UserProxyVOName",
    "x509UserProxyFirstFQAN",
    "x509UserProxyFQAN",
    "AuthTokenSubject",
    "AuthTokenIssuer",
    "AuthTokenGroups",
    "AuthTokenId",
    "AuthTokenScopes",
    "AuthTokenProject",
];

/// Attributes nobody may change with `qedit` (HTCondor's
/// `SYSTEM_IMMUTABLE_JOB_ATTRS` default).
pub const IMMUTABLE: &[&str] = &[
    OWNER,
    CLUSTER_ID,
    PROC_ID,
    "JobUniverse",
    MY_TYPE,
    "TargetType",
    "User",
    "OsUser",
    crate::run::CLAIM_ID,
    crate::run::STARTD_IP_ADDR,
];

/// Attributes only an administrator may change with `qedit`: the state the
/// schedd keeps (changing it by hand bypasses the state rules) and the
/// identity facts the schedd records (HTCondor's `SYSTEM_SECURE_JOB_ATTRS`
/// default; HTCondor silently ignores attempts to set those).
pub const PROTECTED: &[&str] = &[
    JOB_STATUS,
    LAST_JOB_STATUS,
    ENTERED_CURRENT_STATUS,
    Q_DATE,
    COMPLETION_DATE,
    HOLD_REASON,
    HOLD_REASON_CODE,
    HOLD_REASON_SUBCODE,
    LAST_HOLD_REASON,
    LAST_HOLD_REASON_CODE,
    LAST_HOLD_REASON_SUBCODE,
    NUM_HOLDS,
    NUM_HOLDS_BY_REASON,
    RELEASE_REASON,
    REMOVE_REASON,
    GLOBAL_JOB_ID,
    SUBMISSION_ID,
    "x509userProxySubject",
    "x509UserProxyEmail",
    "x509UserProxyVOName",
    "x509UserProxyFirstFQAN",
    "x509UserProxyFQAN",
    "TotalSubmitProcs",
    "AuthTokenSubject",
    "AuthTokenIssuer",
    "AuthTokenGroups",
    "AuthTokenId",
    "AuthTokenScopes",
    "AuthTokenProject",
];

pub(crate) fn is_in(list: &[&str], name: &str) -> bool {
    list.iter().any(|a| a.eq_ignore_ascii_case(name))
}

/// Whether `name` is one of the schedd's private attributes ([`PRIVATE`]).
pub fn is_private(name: &str) -> bool {
    is_in(PRIVATE, name)
}

/// The attributes of a job's runs (see `Queue::plan_start` and friends).
pub use crate::run::{
    CHECKPOINT_BACKEND, CHECKPOINT_NUMBER, CLAIM_ID, COMMITTED_SLOT_TIME, COMMITTED_TIME,
    CUMULATIVE_SLOT_TIME, IMAGE_SIZE, JOB_CURRENT_START_DATE, JOB_CURRENT_START_EXECUTING_DATE,
    JOB_RUN_COUNT, JOB_START_DATE, LAST_CKPT_TIME, LAST_MATCH_TIME, LAST_REMOTE_HOST,
    LAST_VACATE_REASON, NUM_CKPTS, NUM_JOB_MATCHES, NUM_JOB_STARTS, NUM_SHADOW_EXCEPTIONS, PRIVATE,
    REMOTE_HOST, REMOTE_WALL_CLOCK_TIME, RESIDENT_SET_SIZE, SHADOW_BDAY, STARTD_IP_ADDR,
};
