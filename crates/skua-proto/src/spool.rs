//! Spooled jobs (`skua submit -spool`, `skua transfer_data`): a job's
//! input files uploaded into the schedd's spool before it runs, its
//! output fetched from there after it completes. Every route acts only on
//! the caller's own jobs (an administrator's on every job); the files are
//! written and read with the job owner's rights.

use serde::{Deserialize, Serialize};

/// The description of one uploaded input file, JSON in the
/// [`crate::TRANSFER_HEADER`] header of `/schedd/spool_file` (the body is
/// the file's bytes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpoolFileMeta {
    /// `"C.P"`: a job held for spooling (HoldReasonCode 16).
    pub job_id: String,
    /// The file's name in the job's spool directory: relative, without
    /// `..`.
    pub name: String,
    /// Unix permission bits (0: 0644).
    #[serde(default)]
    pub mode: u32,
}

/// `POST /schedd/spool_commit`: every input file of the job is uploaded;
/// the schedd releases it to run from its spool directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpoolCommit {
    /// `"C.P"`.
    pub job_id: String,
}

/// `POST /schedd/spooled_output`: the output files of a completed
/// spooled job, waiting in its spool directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpooledOutputQuery {
    /// `"C.P"`.
    pub job_id: String,
}

/// One output file of a spooled job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpooledFile {
    /// Its path below the spool directory: relative, `/`-separated.
    pub path: String,
    /// Size in bytes.
    #[serde(default)]
    pub size: u64,
    /// Unix permission bits.
    #[serde(default)]
    pub mode: u32,
}

/// The reply to [`SpooledOutputQuery`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpooledOutputReply {
    /// The job's ad (canonical new-style text): `SUBMIT_Iwd`,
    /// `SUBMIT_Out`, `SUBMIT_Err`, `SUBMIT_TransferOutputRemaps` say where
    /// each file goes.
    pub ad: String,
    /// The output files (the spooled input files left out).
    pub files: Vec<SpooledFile>,
}

/// `POST /schedd/spooled_file`: one output file's bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpooledFileRequest {
    /// `"C.P"`.
    pub job_id: String,
    /// A path from [`SpooledOutputReply::files`].
    pub path: String,
}

/// `POST /schedd/output_fetched`: the output of a completed spooled job
/// is safely fetched; it leaves the queue (its spool directory removed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFetched {
    /// `"C.P"`.
    pub job_id: String,
    /// When the fetch began (Unix seconds): `StageOutStart`.
    pub started: i64,
}
