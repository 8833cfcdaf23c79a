//! Reaching a running job's sandbox from outside (issue 16, "watching
//! jobs"): `skua tail` reads its output files, `skua ssh_to_job` runs a
//! command in it as the job's user. The tool asks the schedd (which
//! checks that the caller owns the job, or is a queue super-user); the
//! schedd asks the startd of the job's claim, naming the claim; the
//! startd acts on the claim's running job.

use serde::{Deserialize, Serialize};

/// Which file of a running job to read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "name")]
pub enum SandboxFile {
    /// The job's standard output (where it writes it now).
    Stdout,
    /// The job's standard error.
    Stderr,
    /// A file of the job's working directory: relative, without `..`.
    /// The schedd accepts only names in the job's `TransferOutput`.
    Named(String),
}

/// `POST /schedd/job_sandbox_read` (the tool to the schedd).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReadRequest {
    /// `"C.P"` (or `"C"`, proc 0).
    pub job_id: String,
    pub file: SandboxFile,
    /// Where to start reading; `None`: the last `max_bytes` of the file
    /// (condor_tail's first read).
    #[serde(default)]
    pub offset: Option<u64>,
    /// The most bytes returned (condor_tail's `-maxbytes`, 1024 by
    /// default); capped at [`SANDBOX_READ_MAX`].
    pub max_bytes: u64,
}

/// The most bytes one sandbox read returns: 1 MiB.
pub const SANDBOX_READ_MAX: u64 = 1024 * 1024;

/// `POST /startd/sandbox_read` (the schedd to the startd of the claim).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartdSandboxRead {
    pub claim_id: String,
    pub job_id: String,
    pub file: SandboxFile,
    #[serde(default)]
    pub offset: Option<u64>,
    pub max_bytes: u64,
}

/// A piece of a running job's file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxChunk {
    /// The bytes read (at most the request's `max_bytes`).
    pub data: Vec<u8>,
    /// The offset of the first byte of `data`.
    pub offset: u64,
    /// The file's size when it was read.
    pub size: u64,
}

/// `POST /schedd/ssh_to_job` (the tool to the schedd): run a command in
/// the running job's sandbox, as the job's user, with the job's
/// environment and working directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCommandRequest {
    /// `"C.P"` (or `"C"`, proc 0).
    pub job_id: String,
    /// The program and its arguments; empty: the user's shell, `-s`
    /// reading the standard input.
    pub argv: Vec<String>,
    /// The command's standard input, whole.
    #[serde(default)]
    pub stdin: Vec<u8>,
}

/// `POST /startd/job_command` (the schedd to the startd of the claim).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartdJobCommand {
    pub claim_id: String,
    pub job_id: String,
    pub argv: Vec<String>,
    #[serde(default)]
    pub stdin: Vec<u8>,
}

/// How the command ended and what it wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCommandReply {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The exit code; 128 + N when killed by signal N.
    pub exit_code: i32,
}

/// The most bytes of standard output (and of standard error) a job
/// command returns: 16 MiB; more is cut there.
pub const JOB_COMMAND_OUTPUT_MAX: usize = 16 * 1024 * 1024;
