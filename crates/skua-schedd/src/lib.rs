//! The schedd: the user's agent. It keeps the job queue (decided by the
//! `skua-queue` core, persisted by [`store`]) and answers the queue tools.
//!
//! - [`store`]: the durable queue and history in SQLite.
//! - [`schedd`]: decide, commit, apply, tell (synchronous).
//! - [`userlog`]: appending job events to users' logs.
//! - [`daemon`]: the network shell (`skuad schedd`): the queue tools'
//!   routes, the periodic timer, the Scheduler and Submitter ads.
//! - `shared.rs`: what handlers and tasks share (the schedd behind its
//!   lock, `with_schedd`, the API error mapping); a leaf.
//! - `snapshot.rs`: the read-only views of the queue queries are served
//!   from, off the queue's thread.
//! - `runs.rs`: the claim registry (runs by claim id, busy jobs) and the
//!   dialer every client to another daemon is made by.
//! - `negotiator.rs`: the routes the negotiator calls (resource requests,
//!   matches).
//! - `claim.rs`: the per-claim state machine (claim, start run, activate,
//!   keep alive, end run, next job for the claim), behind a narrow queue
//!   handle and a startd handle.
//! - `shadow.rs`: the routes the starter calls (files, updates, exit).
//! - `match_start.rs`: `$$()` match-time substitution when a job starts
//!   on a slot (around `skua_queue::matchsubst`).
//! - `lease.rs`: keep-alive intervals and claim leases; releasing the
//!   claims of runs a restart interrupted before their jobs run again.
//! - [`sandbox`]: the shadow's file rules (input sandbox, output paths).
//! - [`checkpoint`]: the checkpoint store (staging, atomic commit,
//!   pruning, removal).
//! - `evicted.rs`: the routes of `skua evicted_files`.
//! - [`spool`]: spooled jobs' routes (`skua submit -spool`, `skua
//!   transfer_data`) and their per-job spool directories.
//! - `local_univ.rs`: the scheduler and local universes (jobs the schedd
//!   runs itself on the submit host, as their owner).
//! - `dedicated.rs`: the dedicated scheduler's shell (negotiating as
//!   `DedicatedScheduler`, holding claims, starting parallel jobs' nodes,
//!   whole-job restart).

mod async_output;
pub mod checkpoint;
pub mod chirp;
mod claim;
pub mod daemon;
mod dedicated;
mod evicted;
mod job_access;
mod lease;
mod local_copy;
mod local_univ;
mod match_start;
mod negotiator;
mod runs;
pub mod sandbox;
pub mod schedd;
mod shadow;
mod shared;
mod snapshot;
pub mod spool;
pub mod store;
pub mod userlog;
mod xferq;

pub use schedd::{JobFilter, Schedd, ScheddError, ScheddSettings, Submitted};
