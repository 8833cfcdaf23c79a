//! The master's pure cores.
//!
//! - [`supervisor`]: the condor_master's child-management policy as a state
//!   machine. The caller feeds it [`Event`]s (daemon started, daemon exited,
//!   timer tick, administrator command, shutdown) with the current time and
//!   carries out the [`Action`]s it returns (spawn, signal, log, give up,
//!   exit).
//!
//! Like every Skua core this crate does no I/O: it never reads the clock,
//! the environment or the filesystem, and never starts a process. See
//! `docs/master.md` for the policy as a table of events and actions.

pub mod supervisor;

pub use supervisor::{
    Action, BackoffPolicy, Command, DaemonState, DaemonStatus, Event, ExitStatus, LogLevel, Signal,
    Supervisor, SupervisorConfig, SupervisorError,
};
