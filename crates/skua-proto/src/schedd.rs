//! Schedd messages: submitting jobs, querying the queue and its history,
//! acting on jobs (hold, release, remove), editing job attributes.
//!
//! Job ads travel as canonical new-style ClassAd text. The schedd decides
//! who may do what: the caller's identity names the owner; a caller
//! authorized at ADMINISTRATOR may act on every user's jobs.

use serde::{Deserialize, Serialize};

/// `POST /schedd/new_cluster`: reserve the next cluster id. The submit
/// tool needs it before it builds the job ads (`$(Cluster)` appears in
/// them). A reserved id that is never submitted is simply skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewCluster {}

/// The reply to [`NewCluster`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewClusterReply {
    /// The reserved cluster id.
    pub cluster: u32,
}

/// `POST /schedd/submit`: queue one cluster of jobs, all or nothing. The
/// reply comes after the cluster is durably committed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submit {
    /// A cluster id obtained from [`NewCluster`].
    pub cluster: u32,
    /// The job ads in ProcId order, canonical new-style text: complete
    /// ads, or with `cluster_ad` only the attributes of each job that are
    /// not in it.
    pub jobs: Vec<String>,
    /// The attributes every job shares, sent once.
    #[serde(default)]
    pub cluster_ad: Option<String>,
    /// A key unique to this submission, chosen by the tool (1 to 128 of
    /// `A-Z a-z 0-9 . _ : -`). The schedd records it with the cluster (the
    /// jobs' `SubmissionId`); sending the same request again is answered
    /// with the cluster already made instead of queueing the jobs twice.
    #[serde(default)]
    pub submission_id: Option<String>,
}

/// The reply to [`Submit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitReply {
    /// The cluster the jobs were queued in.
    pub cluster: u32,
    /// How many jobs were queued.
    pub jobs: u32,
    /// True when the submission key named a submission already made: the
    /// reply describes it and nothing new was queued.
    #[serde(default)]
    pub repeated: bool,
}

/// Which jobs a command applies to. Every part that is present must hold
/// (the job ids and owners are alternatives among themselves): `jobs`
/// names `C` (a whole cluster) or `C.P`; `owners` selects by `Owner`;
/// `constraint` is a ClassAd expression evaluated in each job ad; `all`
/// selects every job the caller may touch. An empty selector selects
/// nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSelector {
    /// `"C"` or `"C.P"` ids.
    #[serde(default)]
    pub jobs: Vec<String>,
    /// Owner names.
    #[serde(default)]
    pub owners: Vec<String>,
    /// A ClassAd constraint.
    #[serde(default)]
    pub constraint: Option<String>,
    /// Every job (of the caller, unless an administrator).
    #[serde(default)]
    pub all: bool,
}

/// `POST /schedd/query` (the queue) and `POST /schedd/history` (jobs that
/// left it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobQuery {
    /// Restricts the jobs; for a query an empty selector means every job
    /// (unlike the commands that change jobs).
    #[serde(default)]
    pub selector: JobSelector,
    /// Attribute names to return; empty returns whole ads.
    #[serde(default)]
    pub projection: Vec<String>,
    /// At most this many ads (history: the newest first).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Queue queries: answer with [`JobQueryReply::batches`] (condor_q's
    /// default view) instead of the ads.
    #[serde(default)]
    pub summary: bool,
}

/// One line of condor_q's batch view: the jobs of one owner and batch
/// (`JobBatchName`, else one cluster).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRow {
    /// `Owner`.
    pub owner: String,
    /// `JobBatchName`, or `ID: <cluster>`.
    pub name: String,
    /// The earliest `QDate`.
    pub submitted: i64,
    /// Jobs of its clusters that already left the queue.
    pub done: u64,
    /// Jobs by state.
    pub idle: u64,
    /// Running (and transferring output).
    pub running: u64,
    /// Held.
    pub held: u64,
    /// Suspended.
    pub suspended: u64,
    /// Removed, still in the queue.
    pub removed: u64,
    /// Completed, still in the queue.
    pub completed: u64,
    /// The first job, `(cluster, proc)`.
    pub first: (u32, u32),
    /// The last job.
    pub last: (u32, u32),
}

/// The reply to a [`JobQuery`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobQueryReply {
    /// The matching ads, each in canonical new-style ClassAd text, in
    /// job-id order (history: newest first).
    pub ads: Vec<String>,
    /// Queue queries: every job in the queue (whatever the selector) by
    /// `JobStatus` code, index 0..=7, for condor_q's "Total for all
    /// users" line.
    #[serde(default)]
    pub status_counts: Vec<u64>,
    /// With [`JobQuery::summary`]: the batches, in order of their first job.
    #[serde(default)]
    pub batches: Vec<BatchRow>,
}

/// What [`JobAction`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobActionKind {
    /// `skua hold`.
    Hold,
    /// `skua release`.
    Release,
    /// `skua rm`.
    Remove,
    /// `skua rm -forcex`: drop jobs already in the Removed state.
    RemoveForce,
}

/// `POST /schedd/act`: hold, release or remove jobs. The selector's parts
/// are alternatives here: `skua rm 3 4.1 alice` acts on their union.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobAction {
    /// What to do.
    pub action: JobActionKind,
    /// To which jobs.
    pub selector: JobSelector,
    /// The reason recorded in the job (`HoldReason`, `RemoveReason`, ...).
    #[serde(default)]
    pub reason: Option<String>,
}

/// One job's outcome in a [`JobActionReply`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOutcome {
    /// `"C.P"`, or what the caller named when nothing matched it.
    pub job: String,
    /// True when the job changed.
    pub done: bool,
    /// Why not, when not done.
    #[serde(default)]
    pub message: Option<String>,
}

/// The reply to [`JobAction`] and [`SetAttribute`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobActionReply {
    /// The jobs that changed, in job-id order.
    #[serde(default)]
    pub outcomes: Vec<JobOutcome>,
    /// What the tool prints, one line each (`Job 3.0 held`, `Job 4.1 not
    /// found`, ...).
    #[serde(default)]
    pub messages: Vec<String>,
    /// True when every named job was found and changed.
    #[serde(default)]
    pub all_done: bool,
}

/// `POST /schedd/set_attribute`: `skua qedit` and `skua prio`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAttribute {
    /// To which jobs.
    pub selector: JobSelector,
    /// The attribute.
    pub name: String,
    /// The new value, a ClassAd expression.
    pub value: String,
}

/// `POST /schedd/evicted_files` (WRITE): what is stored of a job's last
/// checkpoint (HTCondor's `condor_evicted_files`). Only the job's owner
/// or a queue administrator may ask.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictedFilesQuery {
    /// `"C.P"`.
    pub job_id: String,
}

/// One file or directory of a stored checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictedFile {
    /// Its path inside the checkpoint: relative, `/`-separated.
    pub path: String,
    /// File or directory (directories come before their contents).
    pub kind: crate::EntryKind,
    /// Size in bytes (files).
    #[serde(default)]
    pub size: u64,
    /// Unix permission bits.
    #[serde(default)]
    pub mode: u32,
}

/// The reply to [`EvictedFilesQuery`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictedFilesReply {
    /// The stored checkpoint's number (`None`: the job has none).
    #[serde(default)]
    pub number: Option<u64>,
    /// The directory holding it on the submit host.
    #[serde(default)]
    pub directory: Option<String>,
    /// Its entries.
    #[serde(default)]
    pub files: Vec<EvictedFile>,
}

/// `POST /schedd/evicted_file` (WRITE): the bytes of one file of a job's
/// stored checkpoint (`application/octet-stream`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictedFileRequest {
    /// `"C.P"`.
    pub job_id: String,
    /// The checkpoint's number, as [`EvictedFilesReply::number`] gave it.
    pub number: u64,
    /// The file's path, as [`EvictedFile::path`] gave it.
    pub path: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_defaults_to_nothing() {
        let q: JobQuery = serde_json::from_str("{}").unwrap();
        assert_eq!(q.selector, JobSelector::default());
        assert!(!q.selector.all);
        assert_eq!(q.limit, None);
    }

    #[test]
    fn action_names_are_snake_case() {
        let a = JobAction {
            action: JobActionKind::RemoveForce,
            selector: JobSelector {
                jobs: vec!["3.1".into()],
                ..JobSelector::default()
            },
            reason: None,
        };
        let text = serde_json::to_string(&a).unwrap();
        assert!(text.contains("\"remove_force\""), "{text}");
        assert_eq!(serde_json::from_str::<JobAction>(&text).unwrap(), a);
    }
}
