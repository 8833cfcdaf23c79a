//! Shadow messages: what a starter says to the schedd's shadow of its job.
//!
//! Every request carries the claim id under which the job was activated;
//! the schedd answers only for a job it activated under that claim
//! (`NotFound` otherwise). The calls come in this order: [`ShadowBegin`],
//! one [`InputFileRequest`] per input entry that is a file, then
//! [`JobUpdate`] (`executing`, then periodically), for each checkpoint the
//! job takes its files ([`CheckpointFileMeta`]) and a
//! [`CheckpointCommit`], one output upload per output file, and last
//! [`JobExit`].
//!
//! Files travel as raw bytes (`application/octet-stream`), never whole in
//! memory: `POST /shadow/input_file` answers with the file's bytes;
//! `POST /shadow/output_file` carries an [`OutputFileMeta`] as JSON in the
//! [`TRANSFER_HEADER`] header and the file's bytes as the body.

use serde::{Deserialize, Serialize};

/// The header carrying an [`OutputFileMeta`] on `POST /shadow/output_file`.
pub const TRANSFER_HEADER: &str = "Skua-Transfer";

/// The name of the job's standard output in its scratch directory, as the
/// starter sends it back (the shadow writes it to the job's `Out`).
pub const STDOUT_NAME: &str = "_condor_stdout";
/// The name of the job's standard error in its scratch directory.
pub const STDERR_NAME: &str = "_condor_stderr";

/// `POST /shadow/begin` (DAEMON): the starter has the job and asks what to
/// fetch. `transfer` is false when the job runs on a shared file system
/// (`should_transfer_files = NO`, or `IF_NEEDED` with the same
/// `FileSystemDomain`): then no input entries are returned and no output
/// is sent back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowBegin {
    /// The claim.
    pub claim_id: String,
    /// `"C.P"`.
    pub job_id: String,
    /// Whether files are transferred.
    pub transfer: bool,
    /// The execute machine's name (`slot1@host`), for RemoteHost.
    pub slot: String,
}

/// What an input entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file: fetch it with [`InputFileRequest`].
    File,
    /// A directory to create (entries inside it follow it).
    Dir,
}

/// One entry of the input sandbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputEntry {
    /// Its path inside the scratch directory: relative, `/`-separated, no
    /// `..` component (the starter refuses any other).
    pub path: String,
    /// File or directory.
    pub kind: EntryKind,
    /// Size in bytes (files).
    #[serde(default)]
    pub size: u64,
    /// Unix permission bits.
    #[serde(default)]
    pub mode: u32,
    /// This entry is the job's executable (run as `./<path>`).
    #[serde(default)]
    pub executable: bool,
    /// This entry is the job's standard input.
    #[serde(default)]
    pub stdin: bool,
    /// This entry is a file of the job's stored checkpoint.
    #[serde(default)]
    pub checkpoint: bool,
}

/// The reply to [`ShadowBegin`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeginReply {
    /// The input sandbox, directories before their contents. When the job
    /// has a stored checkpoint its files come last, flagged
    /// [`InputEntry::checkpoint`]: the starter puts them in the scratch
    /// directory like any input, so the job finds them where it left them.
    pub inputs: Vec<InputEntry>,
    /// The job's last stored checkpoint, if any (its files are among
    /// `inputs`). The starter numbers the checkpoints it sends after it
    /// `number + 1`, `number + 2`, ...; with no checkpoint, from 1.
    #[serde(default)]
    pub checkpoint: Option<CheckpointInfo>,
}

/// A stored checkpoint, as [`BeginReply`] names it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointInfo {
    /// Its number (`CheckpointNumber` in the job ad).
    pub number: u64,
    /// The transparent backend that made it (`"criu"`: its image
    /// directory, [`CRIU_IMAGE_DIR`], is among the files and the starter
    /// restores the process from it instead of starting the executable);
    /// `None` for a checkpoint the job wrote itself.
    #[serde(default)]
    pub backend: Option<String>,
}

/// The directory, inside the scratch directory and the stored checkpoint,
/// that holds a transparent (CRIU) checkpoint's image.
pub const CRIU_IMAGE_DIR: &str = ".skua_criu_image";

/// The header of `POST /shadow/checkpoint_file` (DAEMON): one file of
/// checkpoint `number`. The shadow writes it into that checkpoint's
/// staging area (never over a stored checkpoint); a file sent again
/// replaces the staged copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointFileMeta {
    /// The claim.
    pub claim_id: String,
    /// `"C.P"` of the job.
    pub job_id: String,
    /// The checkpoint's number (see [`BeginReply::checkpoint`]).
    pub number: u64,
    /// Its path relative to the scratch directory: relative,
    /// `/`-separated, no `..` component (the shadow refuses any other).
    pub name: String,
    /// Unix permission bits.
    #[serde(default)]
    pub mode: u32,
    /// Set when the starter and the shadow share the host (the starter
    /// reaches the shadow over loopback or a Unix socket): the file is not
    /// in the body (which is empty) but at this place, and the shadow
    /// copies it in the kernel, as `cp` does. A shadow that cannot (the
    /// request did not come over loopback, the file is not the one named)
    /// refuses with `BadRequest`, and the starter sends the bytes instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalSource>,
}

/// A file on the host both sides share, named so that the reader can
/// check it opened the very file the sender meant (not one put there
/// since): its absolute path, device and inode numbers, and length.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalSource {
    /// The absolute path.
    pub path: String,
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// The bytes to copy (`st_size`).
    pub len: u64,
}

/// Why a checkpoint was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointKind {
    /// The job exited with its `SuccessCheckpointExitCode` (or by its
    /// `SuccessCheckpointExitSignal`): it is restarted in the same
    /// sandbox once the checkpoint is stored.
    Exit,
    /// The job was being vacated: its files (`ON_EXIT_OR_EVICT`, or the
    /// checkpoint it wrote on its checkpoint signal) are kept for its next
    /// start elsewhere.
    Evict,
    /// A transparent backend (CRIU) dumped the job's processes.
    Backend,
}

/// `POST /shadow/checkpoint_commit` (DAEMON): every file of checkpoint
/// `number` has been sent. The shadow makes it the job's checkpoint in
/// one atomic step (a checkpoint is whole or absent: one cut halfway
/// leaves the previous one in place), records it in the job ad, and then
/// removes the older ones. A commit repeated after its acknowledgement was
/// lost is acknowledged again and changes nothing. A checkpoint the shadow
/// cannot store is refused with `Conflict` (409) and a message naming the
/// file and the cause: the starter holds the job (HoldReasonCode 36,
/// FailedToCheckpoint) rather than retry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointCommit {
    /// The claim.
    pub claim_id: String,
    /// `"C.P"` of the job.
    pub job_id: String,
    /// The checkpoint's number.
    pub number: u64,
    /// Every file sent for it (names as in [`CheckpointFileMeta::name`]);
    /// the shadow refuses a commit that names a file it has not received.
    pub files: Vec<String>,
    /// Their total size in bytes.
    #[serde(default)]
    pub bytes: u64,
    /// Why it was taken.
    pub kind: CheckpointKind,
    /// The transparent backend that made it, if any (`"criu"`).
    #[serde(default)]
    pub backend: Option<String>,
    /// The job's usage so far in this run (the time it covers counts as
    /// committed: `CommittedTime`).
    #[serde(default)]
    pub usage: JobUsage,
}

/// `POST /shadow/input_file` (DAEMON): the bytes of input entry `index`
/// (of [`BeginReply::inputs`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFileRequest {
    /// The claim.
    pub claim_id: String,
    /// The entry's index.
    pub index: usize,
}

/// The header of `POST /shadow/output_file` (DAEMON): one output file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFileMeta {
    /// The claim.
    pub claim_id: String,
    /// Its path relative to the scratch directory (`out.txt`,
    /// `results/a.dat`, [`STDOUT_NAME`], [`STDERR_NAME`]).
    pub name: String,
    /// Unix permission bits.
    #[serde(default)]
    pub mode: u32,
    /// `"C.P"` of the job (see [`JobExit::job_id`]).
    #[serde(default)]
    pub job_id: Option<String>,
}

/// Resource usage of the job's processes, as the starter measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobUsage {
    /// Peak virtual size of the process tree, KiB (`ImageSize`).
    #[serde(default)]
    pub image_size_kb: u64,
    /// Peak resident set size, KiB (`ResidentSetSize`).
    #[serde(default)]
    pub resident_set_size_kb: u64,
    /// User CPU seconds of the job's processes (`RemoteUserCpu`).
    #[serde(default)]
    pub user_cpu_secs: f64,
    /// System CPU seconds (`RemoteSysCpu`).
    #[serde(default)]
    pub sys_cpu_secs: f64,
    /// Seconds since the job's process started.
    #[serde(default)]
    pub wall_secs: f64,
}

/// What a [`JobUpdate`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateKind {
    /// The job's process started (the shadow writes the execute event).
    Executing,
    /// Periodic usage.
    Usage,
    /// The job was suspended.
    Suspended,
    /// The job was continued.
    Unsuspended,
}

/// `POST /shadow/update` (DAEMON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobUpdate {
    /// The claim.
    pub claim_id: String,
    /// What happened.
    pub kind: UpdateKind,
    /// Usage so far.
    #[serde(default)]
    pub usage: JobUsage,
}

/// How a job's run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "how")]
pub enum RunOutcome {
    /// The process exited by itself with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// The process was killed by a signal it was not sent by Skua.
    Signaled {
        /// The signal number.
        signal: i32,
        /// Whether it dumped core.
        #[serde(default)]
        core_dumped: bool,
    },
    /// Skua stopped the job (vacate, kill, release): it goes back to Idle.
    Evicted {
        /// Why.
        reason: String,
    },
    /// The startd's policy (WANT_HOLD) stopped the job and holds it.
    Held {
        /// `WANT_HOLD_REASON`.
        reason: String,
        /// HoldReasonCode (21).
        code: i64,
        /// HoldReasonSubCode (`WANT_HOLD_SUBCODE`).
        #[serde(default)]
        subcode: i64,
    },
    /// The job could not run through no fault of its own code (a transfer
    /// failed, the scratch directory could not be made, the executable is
    /// missing...): the shadow retries it elsewhere or holds it.
    Failed {
        /// What failed, naming the file or step.
        reason: String,
        /// True when retrying cannot help (the executable does not exist
        /// on the submit side...): the job is held at once.
        #[serde(default)]
        permanent: bool,
    },
}

/// `POST /shadow/exit` (DAEMON): the job's run is over; every output file
/// has been sent. The starter exits after the reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobExit {
    /// The claim.
    pub claim_id: String,
    /// How it ended.
    pub outcome: RunOutcome,
    /// Usage at the end.
    #[serde(default)]
    pub usage: JobUsage,
    /// The job's process started but the starter had not sent its
    /// `executing` update yet (a job that ends within
    /// [`EXECUTE_REPORT_DELAY_MS`] of its start): the shadow records the
    /// execution first, then the exit.
    #[serde(default)]
    pub executed: bool,
    /// `"C.P"` of the job (a repeated report of a run already recorded,
    /// whose acknowledgement was lost, is acknowledged again and changes
    /// nothing; it never counts for a later job of the same claim).
    #[serde(default)]
    pub job_id: Option<String>,
}

/// `POST /shadow/starter_gone` (DAEMON), from the startd: the starter of
/// the job activated under `claim_id` exited without reporting the job's
/// end (it was killed or crashed; the startd has killed what was left of
/// the job). The shadow ends the run at once (the job goes back to Idle)
/// instead of waiting for its keep-alives to notice. A notice for a run
/// already reported, or for another job, changes nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterGone {
    /// The claim.
    pub claim_id: String,
    /// `"C.P"`.
    pub job_id: String,
    /// How the starter ended (`killed by signal 9`...).
    pub reason: String,
}

/// How long a starter waits after the job's process started before it
/// sends the `executing` update; a job that ends sooner has its execution
/// reported with its exit, which saves a round trip and a queue update per
/// short job.
pub const EXECUTE_REPORT_DELAY_MS: u64 = 50;
