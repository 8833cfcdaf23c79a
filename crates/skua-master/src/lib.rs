//! The master's pure cores.
//!
//! - [`supervisor`]: the condor_master's child-management policy as a state
//!   machine. The caller feeds it [`Event`]s (daemon started, daemon exited,
//!   timer tick, administrator command, shutdown) with the current time and
//!   carries out the [`Action`]s it returns (spawn, signal, log, give up,
//!   exit).
//! - [`pool`]: the layout of a personal pool (`skua pool start [--dir DIR]`):
//!   the text of `DIR/skua_config`, the directories to create, and the
//!   address-file convention by which clients find daemons listening on
//!   ports chosen by the operating system.
//!
//! [`daemon`] is the thin async shell (`skuad master`) around the
//! supervisor. Like every Skua core, the two cores do no I/O: it never reads the clock,
//! the environment or the filesystem, and never starts a process. See
//! `docs/master.md` for the policy as a table of events and actions.

// The shell is the one place in this crate that reads the clock, spawns
// processes and touches files; clippy.toml bans them in the cores.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
pub mod daemon;
pub mod pool;
pub mod supervisor;

pub use pool::network::{network_pool_config, NetworkOptions, COLLECTOR_PORT};
pub use pool::{
    collector_host_uses_address_file, default_pool_dir, directories_to_create, format_address_file,
    pool_config, PoolDir, PoolError, PoolLayout, PoolOptions,
};

pub use supervisor::{
    Action, BackoffPolicy, Command, DaemonState, DaemonStatus, Event, ExitStatus, LogLevel, Signal,
    Supervisor, SupervisorConfig, SupervisorError,
};
