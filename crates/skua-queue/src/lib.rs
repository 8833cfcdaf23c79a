//! The schedd's pure core: the job queue and the rules that change it.
//!
//! Nothing here does I/O, reads the clock or the environment: the current
//! time (`now`, Unix seconds) and the caller's identity are arguments, and
//! every decision comes back as data. The schedd daemon gathers requests,
//! calls a `plan_*` method, commits the returned [`Txn`]'s mutations in one
//! store transaction, applies them to its in-memory [`Queue`] with
//! [`Queue::apply`], and writes the transaction's events to the jobs' user
//! logs ([`userlog::format_event`]).
//!
//! # The queue
//!
//! - One *cluster ad* per cluster holds the attributes that all its jobs
//!   submitted together share; each job's *proc ad* holds the rest and is
//!   chained to the cluster ad ([`classad::ClassAd::chain_to`]), so a job's
//!   lookups and evaluations see the merged ad while 100,000 jobs of one
//!   cluster share one copy of the common attributes.
//! - Cluster ads never change after [`Mutation::NewCluster`]: every later
//!   change ([`Mutation::SetAttr`], [`Mutation::DeleteAttr`]) goes to a proc
//!   ad. Setting an attribute shadows the cluster's value; deleting one
//!   removes only the proc's own value. The attributes the state rules
//!   rewrite or delete (status, hold and release bookkeeping, see
//!   [`attr::PROC_ONLY`]) are therefore never factored into cluster ads.
//! - A cluster exists exactly while it has jobs: the transaction that
//!   destroys its last job also destroys it ([`Mutation::DestroyCluster`]).
//! - Cluster ids come from [`Queue::reserve_cluster_id`] and are never handed
//!   out twice: the next id only grows.
//! - Replaying the mutations of every committed transaction, in order, into
//!   a fresh queue rebuilds an equal queue (the store's recovery path), and
//!   [`Queue::apply`] applies a transaction wholly or not at all.
//!
//! # Decisions
//!
//! - [`Queue::plan_submission`] — a new cluster from complete job ads, within
//!   the job-count limits, with the attributes the schedd owns set by it.
//! - [`Queue::plan_action`] — hold, release, remove (HTCondor's
//!   `condor_hold`, `condor_release`, `condor_rm`), with authorization: a
//!   non-admin acts only on their own jobs.
//! - [`Queue::plan_set_attr`] — `condor_qedit`.
//! - [`Queue::plan_periodic`] — the periodic job policy (user and system).
//! - [`Queue::plan_start`], [`Queue::plan_executing`], [`Queue::plan_usage`],
//!   [`Queue::plan_run_ended`] — a run on a claimed slot, as the shadow
//!   reports it.
//! - [`Queue::plan_exit`] — the exit policy when a job's process ends.
//! - [`Queue::idle_jobs_in_order`], [`Queue::submitter_counts`],
//!   [`Queue::query`]: what the schedd offers and advertises.
//!
//! - [`local`]: the scheduler and local universes (jobs the schedd runs
//!   on the submit host, never matched).
//!
//! The job event log's text format is in [`userlog`].

pub mod attr;
mod autocluster;
pub mod local;
pub mod matchsubst;
mod mutation;
mod plan;
mod policy;
mod queue;
mod run;
pub mod spool;
mod transfer;
pub mod userlog;
pub mod xferq;
pub use transfer::{BYTES_RECVD, BYTES_SENT};

pub use autocluster::AutoCluster;
pub use matchsubst::{expand_match, MatchExpansion, Unexpandable};
pub use mutation::{Mutation, Txn};
pub use plan::{
    Action, ActionReport, Actor, Outcome, ReportEntry, Selector, SubmitContext, SubmitLimits,
    Target,
};
pub use policy::{periodic_decisions, ExitInfo, PeriodicDecision, SystemPolicy};
pub use queue::{int_attr, str_attr, Queue, SubmitterCounts};
pub use run::RunEnd;
pub use userlog::Rusage;
pub use userlog::{FileTransfer, UserLogEvent};

/// The job vocabulary is shared with the other crates (see `skua-types`).
pub use skua_types::{BadJobId, JobId, JobRef, JobStatus};

/// The queue core's errors (messages lowercase, no trailing period).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("conflict: {0}")]
    Conflict(String),
    /// A job-count limit (`MAX_JOBS_PER_OWNER` and the like) refuses the
    /// request; the message names the limit and the numbers.
    #[error("{0}")]
    LimitExceeded(String),
}
