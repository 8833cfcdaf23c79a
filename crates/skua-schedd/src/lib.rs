//! The schedd: the user's agent. It keeps the job queue (decided by the
//! `skua-queue` core, persisted by [`store`]) and answers the queue tools.
//!
//! - [`store`]: the durable queue and history in SQLite.
//! - [`schedd`]: decide, commit, apply, tell (synchronous).
//! - [`userlog`]: appending job events to users' logs.
//! - [`daemon`]: the network shell (`skuad schedd`); `shadow.rs`, the
//!   shadows: one task per claim, running jobs on it and moving their files.
//! - [`sandbox`]: which files a job's sandbox holds, both ways.
//! - `lease.rs`: keep-alive intervals and claim leases; releasing the
//!   claims of runs a restart interrupted before their jobs run again.
//! - [`sandbox`]: the shadow's file rules (input sandbox, output paths).

pub mod daemon;
mod lease;
pub mod sandbox;
pub mod schedd;
mod shadow;
pub mod store;
pub mod userlog;

pub use schedd::{JobFilter, Schedd, ScheddError, ScheddSettings, Submitted};
