//! The starter: one process per active claim on the execute side
//! (`skuad starter`). The startd spawns it with a
//! [`skua_proto::StarterSpec`] on standard input, and sends the claim's
//! further jobs the same way; for each job it makes the job's
//! scratch directory, fetches the input sandbox from the shadow, runs the
//! job in its own process group, reports updates, sends the output back
//! and reports how the run ended. `docs/starter.md` describes it.
//!
//! - [`plan`]: the decisions, pure (shared file system or transfer,
//!   arguments, environment, kill signal, account, outputs).
//! - [`usage`]: resource usage from `/proc` (and the job's cgroup).
//! - [`backend`]: transparent checkpoint backends (CRIU): dump, restore, detection.
//! - [`cgroup`]: the job's cgroup v2 group, where the machine offers one.
//! - [`checkpoint`]: a checkpoint's files and commit, sent to the shadow.
//! - [`chirp`]: the job's Chirp proxy (`WantIOProxy`), forwarding to the shadow.
//! - [`parallel`]: the environment of a parallel job's node, pure.
//! - [`plugins`]: file-transfer plugins (URL inputs, `output_destination`).
//! - [`run`]: the shell.

pub mod backend;
pub mod cgroup;
pub mod checkpoint;
pub mod chirp;
mod http;
pub mod parallel;
pub mod plan;
pub mod plugins;
pub mod run;
pub mod sandbox_manager;
pub mod usage;
mod xferq;

pub use run::{run, Inbox, Settings, Signals};
