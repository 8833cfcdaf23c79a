//! The condor_master's child-management policy as a pure state machine.
//!
//! A [`Supervisor`] owns one entry per daemon of `DAEMON_LIST` (the master
//! itself excluded) and answers every [`Event`] with the [`Action`]s the
//! caller must carry out. Time is an argument (`now`, a [`Duration`] since
//! any fixed origin the caller chooses, e.g. the master's start), so the
//! same code runs in the daemon and in tests with simulated time.
//!
//! # The protocol with the caller
//!
//! 1. Build the supervisor from `DAEMON_LIST` and a [`SupervisorConfig`]
//!    filled from the configuration, then send [`Event::Start`].
//! 2. For every [`Action::Spawn`], start the daemon and report
//!    [`Event::ChildStarted`] with its pid, or [`Event::SpawnFailed`].
//! 3. Report every child's exit with [`Event::ChildExited`].
//! 4. Send [`Event::Tick`] no later than [`Supervisor::next_deadline`]
//!    (sending it more often is harmless): restarts after a backoff, the
//!    SIGKILL escalation and the reset of the backoff all happen on ticks.
//! 5. Forward administrator commands ([`Event::Command`]) and, on SIGTERM
//!    or `skua pool stop`, [`Event::Shutdown`]; exit after [`Action::Exit`].
//!
//! # Semantics (HTCondor's condor_master)
//!
//! - Start: every daemon is spawned, in `DAEMON_LIST` order.
//! - A daemon that exits while nobody asked it to stop is restarted after a
//!   backoff ([`BackoffPolicy::delay`]: `MASTER_BACKOFF_CONSTANT +
//!   ceil(MASTER_BACKOFF_FACTOR ^ n)` seconds, capped at
//!   `MASTER_BACKOFF_CEILING`, where `n` counts the restarts already made).
//!   A daemon that stays up `MASTER_RECOVER_FACTOR` seconds has recovered:
//!   its count returns to zero.
//! - A daemon that exits with status [`DAEMON_NO_RESTART`] (99) asked not to
//!   be restarted, as in HTCondor.
//! - After [`SupervisorConfig::max_restarts`] consecutive restarts the next
//!   failure gives up ([`Action::GiveUp`]). HTCondor's master never gives up
//!   (it retries every `MASTER_BACKOFF_CEILING` forever); `None` keeps that
//!   behaviour.
//! - Stopping a daemon sends SIGTERM, then SIGKILL if it is still alive
//!   `SHUTDOWN_GRACEFUL_TIMEOUT` later. HTCondor inserts a "fast shutdown"
//!   stage (SIGQUIT, `SHUTDOWN_FAST_TIMEOUT`) between the two; Skua's
//!   daemons treat SIGTERM as their only polite request, so the middle stage
//!   is left out.
//! - Stopping everything (`off`, `restart` of all, shutdown) stops the
//!   STARTDs first and the other daemons once the STARTDs are gone, as
//!   HTCondor does, so that a startd can still reach the schedd and the
//!   collector while it vacates its jobs.
//! - `off` stops and keeps down, `on` starts, `restart` stops then starts
//!   (a command restart resets the backoff count), `reconfig` sends SIGHUP
//!   to running daemons. A command naming no daemon applies to all of them.
//! - Shutdown stops every daemon and emits [`Action::Exit`] exactly once,
//!   after the last one is gone.
//!
//! References: HTCondor manual, "Master Daemon Configuration Options"
//! (`DAEMON_LIST`, `MASTER_BACKOFF_CONSTANT`, `MASTER_BACKOFF_FACTOR`,
//! `MASTER_BACKOFF_CEILING`, `MASTER_RECOVER_FACTOR`, and the closing
//! discussion of the backoff formula `t = c + k^n`), and "DaemonCore
//! Configuration File Entries" (`SHUTDOWN_GRACEFUL_TIMEOUT`).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// Exit status with which a daemon says "do not restart me automatically"
/// (HTCondor's `DAEMON_NO_RESTART`, 99, used e.g. when `DAEMON_SHUTDOWN`
/// becomes true). The daemon stays down until an `on` or `restart`.
pub const DAEMON_NO_RESTART: i32 = 99;

/// Default of [`SupervisorConfig::max_restarts`] (`MASTER_MAX_RESTARTS`, a
/// Skua knob): 12. With HTCondor's default backoff the 12 restarts are
/// spread over about 70 minutes (10 + 11 + 13 + ... + 2057 s), exactly the
/// point at which the delay would reach the one-hour ceiling and HTCondor
/// would go on retrying once an hour; a daemon that has failed that long
/// needs a person, so Skua says so instead.
pub const DEFAULT_MAX_RESTARTS: u32 = 12;

/// Default `SHUTDOWN_GRACEFUL_TIMEOUT`: 1800 s (HTCondor's default).
pub const DEFAULT_SHUTDOWN_GRACEFUL_TIMEOUT: Duration = Duration::from_secs(1800);

/// How long to wait before restarting a daemon that failed, and when to
/// forget its failures.
///
/// One policy applies to all daemons; HTCondor's per-daemon forms
/// (`MASTER_<NAME>_BACKOFF_CONSTANT`, ...) go in
/// [`SupervisorConfig::per_daemon`].
#[derive(Debug, Clone, PartialEq)]
pub struct BackoffPolicy {
    /// `MASTER_BACKOFF_CONSTANT`, default 9 s.
    pub constant: Duration,
    /// `MASTER_BACKOFF_FACTOR`, default 2.0; must be finite and >= 0.
    pub factor: f64,
    /// `MASTER_BACKOFF_CEILING`, default 3600 s: no delay is longer.
    pub ceiling: Duration,
    /// `MASTER_RECOVER_FACTOR`, default 300 s: a daemon up this long has
    /// recovered and its restart count returns to zero.
    pub recover_time: Duration,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        BackoffPolicy {
            constant: Duration::from_secs(9),
            factor: 2.0,
            ceiling: Duration::from_secs(3600),
            recover_time: Duration::from_secs(300),
        }
    }
}

impl BackoffPolicy {
    /// The delay before the restart that follows `restarts` restarts
    /// already made since the daemon last recovered.
    ///
    /// HTCondor's formula: `constant + ceil(factor ^ restarts)` seconds,
    /// replaced by `ceiling` when larger (or when it overflows). With the
    /// defaults: 10, 11, 13, 17, 25, 41, 73, 137, 265, 521, 1033, 2057,
    /// then 3600 s (9 + 4096 exceeds the ceiling).
    pub fn delay(&self, restarts: u32) -> Duration {
        let grow = self.factor.powf(f64::from(restarts)).ceil();
        if !grow.is_finite() || grow < 0.0 || grow > self.ceiling.as_secs_f64() {
            return self.ceiling;
        }
        // `grow` is a whole number in [0, ceiling], so the cast is exact.
        let delay = self
            .constant
            .saturating_add(Duration::from_secs(grow as u64));
        delay.min(self.ceiling)
    }

    fn validate(&self, knob_prefix: &str) -> Result<(), SupervisorError> {
        if !self.factor.is_finite() || self.factor < 0.0 {
            return Err(SupervisorError::InvalidConfig {
                knob: format!("{knob_prefix}BACKOFF_FACTOR"),
                reason: format!("must be a finite number >= 0, not {}", self.factor),
            });
        }
        Ok(())
    }
}

/// The supervision policy, filled by the caller from the configuration.
/// `Default` gives HTCondor's defaults (and Skua's for `max_restarts`).
#[derive(Debug, Clone, PartialEq)]
pub struct SupervisorConfig {
    /// `MASTER_BACKOFF_CONSTANT`, `MASTER_BACKOFF_FACTOR`,
    /// `MASTER_BACKOFF_CEILING`, `MASTER_RECOVER_FACTOR`.
    pub backoff: BackoffPolicy,
    /// Per-daemon policies (`MASTER_<NAME>_BACKOFF_*`,
    /// `MASTER_<NAME>_RECOVER_FACTOR`), keyed by daemon name (any case). The
    /// caller fills a daemon's entry with the generic values for the knobs
    /// that have no per-daemon form.
    pub per_daemon: BTreeMap<String, BackoffPolicy>,
    /// `MASTER_MAX_RESTARTS` (a Skua knob; HTCondor has none): how many
    /// automatic restarts in a row a daemon gets before the supervisor gives
    /// up on it. `None` retries forever, as HTCondor does; `Some(0)` never
    /// restarts. Default [`DEFAULT_MAX_RESTARTS`]. A caller may map a
    /// negative configured value to `None`.
    pub max_restarts: Option<u32>,
    /// `SHUTDOWN_GRACEFUL_TIMEOUT`: how long a daemon has between SIGTERM
    /// and SIGKILL. Default 1800 s.
    pub shutdown_graceful_timeout: Duration,
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        SupervisorConfig {
            backoff: BackoffPolicy::default(),
            per_daemon: BTreeMap::new(),
            max_restarts: Some(DEFAULT_MAX_RESTARTS),
            shutdown_graceful_timeout: DEFAULT_SHUTDOWN_GRACEFUL_TIMEOUT,
        }
    }
}

impl SupervisorConfig {
    /// The backoff policy of `daemon`: its own entry in
    /// [`per_daemon`](Self::per_daemon) if any (names compare
    /// case-insensitively), the generic one otherwise.
    pub fn policy_for(&self, daemon: &str) -> &BackoffPolicy {
        self.per_daemon
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(daemon))
            .map_or(&self.backoff, |(_, policy)| policy)
    }

    /// Checks the values a configuration file could get wrong.
    pub fn validate(&self) -> Result<(), SupervisorError> {
        self.backoff.validate("MASTER_")?;
        for (name, policy) in &self.per_daemon {
            policy.validate(&format!("MASTER_{}_", name.to_ascii_uppercase()))?;
        }
        Ok(())
    }
}

/// Errors building a [`Supervisor`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SupervisorError {
    /// An empty entry in `DAEMON_LIST`.
    #[error("empty daemon name in DAEMON_LIST")]
    EmptyName,
    /// A name that is not an identifier.
    #[error("invalid daemon name `{0}` in DAEMON_LIST: use letters, digits and `_`")]
    InvalidName(String),
    /// The same daemon twice (names compare case-insensitively).
    #[error("daemon `{0}` appears twice in DAEMON_LIST")]
    Duplicate(String),
    /// A policy value out of range.
    #[error("invalid {knob}: {reason}")]
    InvalidConfig {
        /// The configuration knob.
        knob: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// How a child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// It exited with this status.
    Code(i32),
    /// It was killed by this signal number.
    Signal(i32),
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExitStatus::Code(code) => write!(f, "exited with status {code}"),
            ExitStatus::Signal(sig) => match signal_name(sig) {
                Some(name) => write!(f, "died on signal {sig} ({name})"),
                None => write!(f, "died on signal {sig}"),
            },
        }
    }
}

/// Names of the signals whose numbers POSIX systems share.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// An administrator command (`skua off`, `skua on`, `skua restart`,
/// `skua reconfig`, HTCondor's `condor_off` and friends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Stop and keep down (until `On`).
    Off,
    /// Start whatever is down, clearing a give-up or a no-restart exit.
    On,
    /// Stop, then start again; resets the backoff count.
    Restart,
    /// Tell running daemons to re-read their configuration (SIGHUP).
    Reconfig,
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Command::Off => "off",
            Command::On => "on",
            Command::Restart => "restart",
            Command::Reconfig => "reconfig",
        })
    }
}

/// Everything the supervisor reacts to. `now` is the time of the event, as
/// a [`Duration`] since an origin the caller keeps fixed (monotonic time).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The master has started: spawn every daemon, in order. Only the first
    /// `Start` counts.
    Start,
    /// The caller started `name` (after an [`Action::Spawn`]).
    ChildStarted {
        /// Daemon name, as in `DAEMON_LIST` (any case).
        name: String,
        /// Its process id.
        pid: u32,
        /// When it started.
        now: Duration,
    },
    /// The caller could not start `name` (after an [`Action::Spawn`]); it
    /// counts as a failure, restarted after a backoff like a crash.
    SpawnFailed {
        /// Daemon name.
        name: String,
        /// Why, for the log.
        error: String,
        /// When.
        now: Duration,
    },
    /// A child exited (the caller reaped it).
    ChildExited {
        /// Daemon name.
        name: String,
        /// How it ended.
        status: ExitStatus,
        /// When.
        now: Duration,
    },
    /// Time passes: due restarts, SIGKILL escalations and recoveries.
    Tick {
        /// The current time.
        now: Duration,
    },
    /// An administrator command for one daemon (`Some`) or all (`None`).
    /// `MASTER` names the master itself: `Off` then means shutdown.
    Command {
        /// What to do.
        command: Command,
        /// Which daemon, by name (any case); `None` for all.
        daemon: Option<String>,
        /// When.
        now: Duration,
    },
    /// Stop every daemon, then exit.
    Shutdown {
        /// When.
        now: Duration,
    },
}

/// A signal the caller sends to a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: shut down gracefully.
    Term,
    /// SIGKILL: the graceful shutdown took too long.
    Kill,
    /// SIGHUP: re-read the configuration.
    Hup,
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signal::Term => "SIGTERM",
            Signal::Kill => "SIGKILL",
            Signal::Hup => "SIGHUP",
        })
    }
}

/// Importance of a [`Action::Log`] message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Routine detail.
    Debug,
    /// Normal operation (a daemon started, stopped, recovered).
    Info,
    /// Something went wrong and is being handled (a crash, a SIGKILL, an
    /// ignored command).
    Warn,
    /// A request that cannot be honoured (an unknown daemon name).
    Error,
}

/// What the caller must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Start the daemon `name`, then report [`Event::ChildStarted`] or
    /// [`Event::SpawnFailed`].
    Spawn {
        /// Daemon name, as in `DAEMON_LIST`.
        name: String,
    },
    /// Send `signal` to the daemon's process.
    Signal {
        /// Daemon name.
        name: String,
        /// Its process id.
        pid: u32,
        /// Which signal.
        signal: Signal,
    },
    /// Write `message` to the master's log.
    Log {
        /// Importance.
        level: LogLevel,
        /// The message, lowercase first word unless a name.
        message: String,
    },
    /// The supervisor stopped restarting `name`; tell the administrator.
    GiveUp {
        /// Daemon name.
        name: String,
        /// What happened and what to do about it.
        message: String,
    },
    /// Every daemon is gone after a shutdown: the master exits.
    Exit,
}

/// What a daemon is doing, for status displays ([`Supervisor::daemons`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DaemonState {
    /// Not started yet (before [`Event::Start`]).
    NotStarted,
    /// Spawn requested, pid not yet known.
    Starting,
    /// Running.
    Running,
    /// SIGTERM sent, waiting for it to exit.
    Stopping,
    /// SIGKILL sent, waiting for it to exit.
    Killing,
    /// Failed; will be restarted at [`DaemonStatus::next_restart`].
    WaitingToRestart,
    /// Stopped by a command or a shutdown.
    Off,
    /// Exited with [`DAEMON_NO_RESTART`].
    NoRestart,
    /// Failed too often; the supervisor gave up.
    GaveUp,
}

/// One daemon's state, for status displays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonStatus {
    /// Name, as in `DAEMON_LIST`.
    pub name: String,
    /// What it is doing.
    pub state: DaemonState,
    /// Its pid when it has one.
    pub pid: Option<u32>,
    /// Automatic restarts since it last recovered.
    pub restarts: u32,
    /// When it will be restarted ([`DaemonState::WaitingToRestart`]).
    pub next_restart: Option<Duration>,
}

/// What happens once a stopping daemon has exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterStop {
    StayDown,
    Respawn,
}

/// Why a daemon is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Down {
    NotStarted,
    Off,
    NoRestart,
    GaveUp,
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Down(Down),
    /// Spawn emitted; `pending` is a stop requested before the pid arrived.
    Spawning {
        pending: Option<AfterStop>,
    },
    Running {
        pid: u32,
        since: Duration,
    },
    Stopping {
        pid: u32,
        term_at: Duration,
        killed: bool,
        then: AfterStop,
    },
    Backoff {
        until: Duration,
    },
}

#[derive(Debug, Clone)]
struct Child {
    name: String,
    phase: Phase,
    /// HTCondor's `restarts`: automatic restarts since the last recovery.
    restarts: u32,
}

impl Child {
    fn alive(&self) -> bool {
        matches!(
            self.phase,
            Phase::Spawning { .. } | Phase::Running { .. } | Phase::Stopping { .. }
        )
    }

    fn is_startd(&self) -> bool {
        self.name.eq_ignore_ascii_case("STARTD")
    }
}

/// The master's child-management policy. See the [module](self) docs.
#[derive(Debug, Clone)]
pub struct Supervisor {
    config: SupervisorConfig,
    children: Vec<Child>,
    started: bool,
    /// A stop of every daemon (off, restart or shutdown) is under way.
    stopping_all: bool,
    /// In a stop of everything, the non-STARTD daemons wait for the
    /// STARTDs to be gone.
    rest_waits_for_startds: bool,
    /// Restart of everything: start all once all are down.
    restart_all_pending: bool,
    shutting_down: bool,
    exited: bool,
}

impl Supervisor {
    /// A supervisor for the daemons of `daemon_list` (`DAEMON_LIST` order).
    /// `MASTER` may appear in the list, as it does in `DAEMON_LIST`; it is
    /// skipped, the master not being its own child.
    pub fn new<I, S>(daemon_list: I, config: SupervisorConfig) -> Result<Self, SupervisorError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        config.validate()?;
        let mut children: Vec<Child> = Vec::new();
        for name in daemon_list {
            let name = name.as_ref().trim();
            if name.is_empty() {
                return Err(SupervisorError::EmptyName);
            }
            if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(SupervisorError::InvalidName(name.to_string()));
            }
            if name.eq_ignore_ascii_case("MASTER") {
                continue;
            }
            if children.iter().any(|c| c.name.eq_ignore_ascii_case(name)) {
                return Err(SupervisorError::Duplicate(name.to_string()));
            }
            children.push(Child {
                name: name.to_string(),
                phase: Phase::Down(Down::NotStarted),
                restarts: 0,
            });
        }
        Ok(Supervisor {
            config,
            children,
            started: false,
            stopping_all: false,
            rest_waits_for_startds: false,
            restart_all_pending: false,
            shutting_down: false,
            exited: false,
        })
    }

    /// The policy in force.
    pub fn config(&self) -> &SupervisorConfig {
        &self.config
    }

    /// True once [`Action::Exit`] has been emitted; later events are
    /// ignored.
    pub fn is_finished(&self) -> bool {
        self.exited
    }

    /// True from [`Event::Shutdown`] on.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// Every daemon's state, in `DAEMON_LIST` order.
    pub fn daemons(&self) -> Vec<DaemonStatus> {
        self.children
            .iter()
            .map(|c| {
                let (state, pid, next_restart) = match c.phase {
                    Phase::Down(Down::NotStarted) => (DaemonState::NotStarted, None, None),
                    Phase::Down(Down::Off) => (DaemonState::Off, None, None),
                    Phase::Down(Down::NoRestart) => (DaemonState::NoRestart, None, None),
                    Phase::Down(Down::GaveUp) => (DaemonState::GaveUp, None, None),
                    Phase::Spawning { .. } => (DaemonState::Starting, None, None),
                    Phase::Running { pid, .. } => (DaemonState::Running, Some(pid), None),
                    Phase::Stopping { pid, killed, .. } => {
                        let state = if killed {
                            DaemonState::Killing
                        } else {
                            DaemonState::Stopping
                        };
                        (state, Some(pid), None)
                    }
                    Phase::Backoff { until } => (DaemonState::WaitingToRestart, None, Some(until)),
                };
                DaemonStatus {
                    name: c.name.clone(),
                    state,
                    pid,
                    restarts: c.restarts,
                    next_restart,
                }
            })
            .collect()
    }

    /// The earliest time at which a [`Event::Tick`] has something to do (a
    /// restart due, a SIGKILL due, a recovery to record), or `None` if no
    /// timer is pending. The caller ticks no later than this.
    pub fn next_deadline(&self) -> Option<Duration> {
        if self.exited {
            return None;
        }
        self.children
            .iter()
            .filter_map(|c| match c.phase {
                Phase::Backoff { until } => Some(until),
                Phase::Stopping {
                    term_at,
                    killed: false,
                    ..
                } => Some(term_at.saturating_add(self.config.shutdown_graceful_timeout)),
                Phase::Running { since, .. } if c.restarts > 0 => {
                    Some(since.saturating_add(self.config.policy_for(&c.name).recover_time))
                }
                _ => None,
            })
            .min()
    }

    /// Reacts to one event; the caller carries out the returned actions in
    /// order.
    pub fn handle(&mut self, event: Event) -> Vec<Action> {
        let mut out = Vec::new();
        if self.exited {
            log(
                &mut out,
                LogLevel::Debug,
                format!("master has exited; ignoring {}", event_label(&event)),
            );
            return out;
        }
        match event {
            Event::Start => self.on_start(&mut out),
            Event::ChildStarted { name, pid, now } => {
                self.on_child_started(&name, pid, now, &mut out)
            }
            Event::SpawnFailed { name, error, now } => {
                self.on_spawn_failed(&name, &error, now, &mut out)
            }
            Event::ChildExited { name, status, now } => {
                self.on_child_exited(&name, status, now, &mut out)
            }
            Event::Tick { now } => self.on_tick(now, &mut out),
            Event::Command {
                command,
                daemon,
                now,
            } => self.on_command(command, daemon.as_deref(), now, &mut out),
            Event::Shutdown { now } => self.on_shutdown(now, &mut out),
        }
        out
    }

    // ----- events -------------------------------------------------------

    fn on_start(&mut self, out: &mut Vec<Action>) {
        if self.started {
            log(
                out,
                LogLevel::Warn,
                "already started; ignoring start".into(),
            );
            return;
        }
        self.started = true;
        if self.shutting_down {
            log(
                out,
                LogLevel::Warn,
                "shutting down; not starting daemons".into(),
            );
            return;
        }
        let names: Vec<&str> = self.children.iter().map(|c| c.name.as_str()).collect();
        if names.is_empty() {
            log(out, LogLevel::Info, "no daemons to start".into());
        } else {
            log(
                out,
                LogLevel::Info,
                format!("starting daemons: {}", names.join(", ")),
            );
        }
        self.start_all(out);
    }

    fn on_child_started(&mut self, name: &str, pid: u32, now: Duration, out: &mut Vec<Action>) {
        let Some(i) = self.find(name) else {
            log(
                out,
                LogLevel::Warn,
                format!("start report for unknown daemon `{name}` (pid {pid}); ignored"),
            );
            return;
        };
        let child = &mut self.children[i];
        match child.phase {
            Phase::Spawning { pending: None } => {
                child.phase = Phase::Running { pid, since: now };
                log(
                    out,
                    LogLevel::Info,
                    format!("started {} (pid {pid})", child.name),
                );
            }
            Phase::Spawning {
                pending: Some(then),
            } => {
                child.phase = Phase::Running { pid, since: now };
                log(
                    out,
                    LogLevel::Info,
                    format!(
                        "started {} (pid {pid}); stopping it as requested meanwhile",
                        child.name
                    ),
                );
                Self::stop_child(child, now, then, out);
            }
            _ => log(
                out,
                LogLevel::Warn,
                format!(
                    "unexpected start report for {} (pid {pid}): no start was pending; ignored",
                    child.name
                ),
            ),
        }
    }

    fn on_spawn_failed(&mut self, name: &str, error: &str, now: Duration, out: &mut Vec<Action>) {
        let Some(i) = self.find(name) else {
            log(
                out,
                LogLevel::Warn,
                format!("spawn failure for unknown daemon `{name}`; ignored"),
            );
            return;
        };
        let Phase::Spawning { pending } = self.children[i].phase else {
            log(
                out,
                LogLevel::Warn,
                format!(
                    "unexpected spawn failure report for {}: no start was pending; ignored",
                    self.children[i].name
                ),
            );
            return;
        };
        let what = format!("could not start {}: {error}", self.children[i].name);
        if self.stopping_all || pending == Some(AfterStop::StayDown) {
            self.children[i].phase = Phase::Down(Down::Off);
            log(out, LogLevel::Warn, what);
            self.after_child_down(now, out);
        } else {
            self.failed(i, what, Duration::ZERO, now, out);
        }
    }

    fn on_child_exited(
        &mut self,
        name: &str,
        status: ExitStatus,
        now: Duration,
        out: &mut Vec<Action>,
    ) {
        let Some(i) = self.find(name) else {
            log(
                out,
                LogLevel::Warn,
                format!("exit report for unknown daemon `{name}` ({status}); ignored"),
            );
            return;
        };
        let child = &mut self.children[i];
        match child.phase {
            Phase::Stopping { pid, then, .. } => {
                log(
                    out,
                    LogLevel::Info,
                    format!("{} (pid {pid}) {status} after being stopped", child.name),
                );
                if then == AfterStop::Respawn && !self.stopping_all {
                    child.restarts = 0;
                    Self::spawn(child, out);
                } else {
                    child.phase = Phase::Down(Down::Off);
                    self.after_child_down(now, out);
                }
            }
            Phase::Running { pid, since } => {
                let what = format!("{} (pid {pid}) {status}", child.name);
                if self.stopping_all {
                    child.phase = Phase::Down(Down::Off);
                    log(out, LogLevel::Warn, what);
                    self.after_child_down(now, out);
                } else if status == ExitStatus::Code(DAEMON_NO_RESTART) {
                    child.phase = Phase::Down(Down::NoRestart);
                    log(
                        out,
                        LogLevel::Warn,
                        format!("{what}: it asked not to be restarted; `on` starts it again"),
                    );
                } else {
                    self.failed(i, what, now.saturating_sub(since), now, out);
                }
            }
            Phase::Spawning { pending } => {
                // Exit reported before the start: treat as a failed start.
                let what = format!("{} {status} before its start was reported", child.name);
                if self.stopping_all || pending == Some(AfterStop::StayDown) {
                    child.phase = Phase::Down(Down::Off);
                    log(out, LogLevel::Warn, what);
                    self.after_child_down(now, out);
                } else {
                    self.failed(i, what, Duration::ZERO, now, out);
                }
            }
            Phase::Down(_) | Phase::Backoff { .. } => log(
                out,
                LogLevel::Warn,
                format!(
                    "exit report for {} ({status}), which is not running; ignored",
                    child.name
                ),
            ),
        }
    }

    fn on_tick(&mut self, now: Duration, out: &mut Vec<Action>) {
        let grace = self.config.shutdown_graceful_timeout;
        for i in 0..self.children.len() {
            let recover_time = self.config.policy_for(&self.children[i].name).recover_time;
            let child = &mut self.children[i];
            match child.phase {
                Phase::Backoff { until } if now >= until => {
                    log(
                        out,
                        LogLevel::Info,
                        format!("restarting {} (restart {})", child.name, child.restarts),
                    );
                    Self::spawn(child, out);
                }
                Phase::Stopping {
                    pid,
                    term_at,
                    killed: false,
                    then,
                } if now >= term_at.saturating_add(grace) => {
                    child.phase = Phase::Stopping {
                        pid,
                        term_at,
                        killed: true,
                        then,
                    };
                    log(
                        out,
                        LogLevel::Warn,
                        format!(
                            "{} (pid {pid}) still running {} s after SIGTERM \
                             (SHUTDOWN_GRACEFUL_TIMEOUT); sending SIGKILL",
                            child.name,
                            grace.as_secs()
                        ),
                    );
                    out.push(Action::Signal {
                        name: child.name.clone(),
                        pid,
                        signal: Signal::Kill,
                    });
                }
                Phase::Running { since, .. }
                    if child.restarts > 0 && now >= since.saturating_add(recover_time) =>
                {
                    log(
                        out,
                        LogLevel::Info,
                        format!(
                            "{} recovered: up {} s (MASTER_RECOVER_FACTOR) after {} restart(s); \
                             backoff reset",
                            child.name,
                            recover_time.as_secs(),
                            child.restarts
                        ),
                    );
                    child.restarts = 0;
                }
                _ => {}
            }
        }
    }

    fn on_command(
        &mut self,
        command: Command,
        daemon: Option<&str>,
        now: Duration,
        out: &mut Vec<Action>,
    ) {
        if self.shutting_down {
            log(
                out,
                LogLevel::Warn,
                format!("shutting down; ignoring {command} command"),
            );
            return;
        }
        let target = match daemon {
            None => None,
            Some(name) if name.trim().eq_ignore_ascii_case("MASTER") => {
                if command == Command::Off {
                    log(out, LogLevel::Info, "off MASTER: shutting down".into());
                    self.on_shutdown(now, out);
                } else {
                    log(
                        out,
                        LogLevel::Error,
                        format!(
                            "MASTER is not one of the master's children; \
                             `{command} MASTER` is for the master's caller to handle"
                        ),
                    );
                }
                return;
            }
            Some(name) => match self.find(name.trim()) {
                Some(i) => Some(i),
                None => {
                    let known: Vec<&str> = self.children.iter().map(|c| c.name.as_str()).collect();
                    let known = if known.is_empty() {
                        "it is empty".to_string()
                    } else {
                        known.join(", ")
                    };
                    log(
                        out,
                        LogLevel::Error,
                        format!(
                            "{command}: unknown daemon `{name}` (DAEMON_LIST: MASTER, {known})"
                        ),
                    );
                    return;
                }
            },
        };
        if self.stopping_all && command != Command::Reconfig {
            log(
                out,
                LogLevel::Warn,
                format!(
                    "all daemons are being stopped; ignoring {command} command \
                     (try again once they are down)"
                ),
            );
            return;
        }
        match (command, target) {
            (Command::Off, Some(i)) => self.off_one(i, now, out),
            (Command::Off, None) => {
                log(out, LogLevel::Info, "off: stopping all daemons".into());
                self.stop_all(now, out);
            }
            (Command::On, Some(i)) => self.on_one(i, out),
            (Command::On, None) => {
                log(out, LogLevel::Info, "on: starting all daemons".into());
                self.start_all(out);
            }
            (Command::Restart, Some(i)) => self.restart_one(i, now, out),
            (Command::Restart, None) => {
                log(out, LogLevel::Info, "restart: stopping all daemons".into());
                self.restart_all_pending = true;
                self.stop_all(now, out);
            }
            (Command::Reconfig, Some(i)) => self.reconfig_one(i, true, out),
            (Command::Reconfig, None) => {
                log(
                    out,
                    LogLevel::Info,
                    "reconfig: sending SIGHUP to running daemons".into(),
                );
                for i in 0..self.children.len() {
                    self.reconfig_one(i, false, out);
                }
            }
        }
    }

    fn on_shutdown(&mut self, now: Duration, out: &mut Vec<Action>) {
        if self.shutting_down {
            log(out, LogLevel::Info, "already shutting down".into());
            return;
        }
        self.shutting_down = true;
        self.restart_all_pending = false;
        log(
            out,
            LogLevel::Info,
            "shutting down: stopping all daemons".into(),
        );
        self.stop_all(now, out);
    }

    // ----- commands on one daemon ----------------------------------------

    fn off_one(&mut self, i: usize, now: Duration, out: &mut Vec<Action>) {
        let child = &mut self.children[i];
        match child.phase {
            Phase::Down(_) => {
                child.phase = Phase::Down(Down::Off);
                log(
                    out,
                    LogLevel::Info,
                    format!("{} is already off", child.name),
                );
            }
            Phase::Backoff { .. } => {
                child.phase = Phase::Down(Down::Off);
                log(
                    out,
                    LogLevel::Info,
                    format!("off: cancelled the pending restart of {}", child.name),
                );
            }
            _ => {
                log(out, LogLevel::Info, format!("off: stopping {}", child.name));
                Self::stop_child(child, now, AfterStop::StayDown, out);
            }
        }
    }

    fn on_one(&mut self, i: usize, out: &mut Vec<Action>) {
        let child = &mut self.children[i];
        match child.phase {
            Phase::Down(_) | Phase::Backoff { .. } => {
                log(out, LogLevel::Info, format!("on: starting {}", child.name));
                child.restarts = 0;
                Self::spawn(child, out);
            }
            Phase::Stopping {
                pid,
                term_at,
                killed,
                then: AfterStop::StayDown,
            } => {
                child.phase = Phase::Stopping {
                    pid,
                    term_at,
                    killed,
                    then: AfterStop::Respawn,
                };
                log(
                    out,
                    LogLevel::Info,
                    format!(
                        "on: {} is stopping; it will start again once gone",
                        child.name
                    ),
                );
            }
            Phase::Spawning {
                pending: Some(AfterStop::StayDown),
            } => {
                child.phase = Phase::Spawning { pending: None };
                log(
                    out,
                    LogLevel::Info,
                    format!("on: {} keeps starting", child.name),
                );
            }
            _ => log(
                out,
                LogLevel::Info,
                format!("on: {} is already running", child.name),
            ),
        }
    }

    fn restart_one(&mut self, i: usize, now: Duration, out: &mut Vec<Action>) {
        let child = &mut self.children[i];
        match child.phase {
            Phase::Down(_) | Phase::Backoff { .. } => {
                log(
                    out,
                    LogLevel::Info,
                    format!("restart: {} is not running; starting it", child.name),
                );
                child.restarts = 0;
                Self::spawn(child, out);
            }
            _ => {
                log(
                    out,
                    LogLevel::Info,
                    format!("restart: stopping {}", child.name),
                );
                Self::stop_child(child, now, AfterStop::Respawn, out);
            }
        }
    }

    fn reconfig_one(&mut self, i: usize, explicit: bool, out: &mut Vec<Action>) {
        let child = &self.children[i];
        match child.phase {
            Phase::Running { pid, .. } => out.push(Action::Signal {
                name: child.name.clone(),
                pid,
                signal: Signal::Hup,
            }),
            Phase::Spawning { .. } if explicit => log(
                out,
                LogLevel::Info,
                format!(
                    "reconfig: {} is starting and will read the current configuration",
                    child.name
                ),
            ),
            _ if explicit => log(
                out,
                LogLevel::Info,
                format!("reconfig: {} is not running; nothing to do", child.name),
            ),
            _ => {}
        }
    }

    // ----- building blocks -----------------------------------------------

    fn find(&self, name: &str) -> Option<usize> {
        self.children
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    fn spawn(child: &mut Child, out: &mut Vec<Action>) {
        child.phase = Phase::Spawning { pending: None };
        out.push(Action::Spawn {
            name: child.name.clone(),
        });
    }

    /// Starts, in order, every daemon that is down or waiting to restart
    /// (clearing give-ups, no-restart exits and backoffs, as `condor_on`
    /// does); a daemon being stopped starts again once gone.
    fn start_all(&mut self, out: &mut Vec<Action>) {
        for child in &mut self.children {
            match child.phase {
                Phase::Down(_) | Phase::Backoff { .. } => {
                    child.restarts = 0;
                    Self::spawn(child, out);
                }
                Phase::Stopping {
                    pid,
                    term_at,
                    killed,
                    then: AfterStop::StayDown,
                } => {
                    child.phase = Phase::Stopping {
                        pid,
                        term_at,
                        killed,
                        then: AfterStop::Respawn,
                    }
                }
                Phase::Spawning {
                    pending: Some(AfterStop::StayDown),
                } => child.phase = Phase::Spawning { pending: None },
                _ => {}
            }
        }
    }

    /// Asks a daemon to stop: SIGTERM now if its pid is known, as soon as
    /// it is otherwise. `then` says what follows its exit.
    fn stop_child(child: &mut Child, now: Duration, then: AfterStop, out: &mut Vec<Action>) {
        match child.phase {
            Phase::Running { pid, .. } => {
                child.phase = Phase::Stopping {
                    pid,
                    term_at: now,
                    killed: false,
                    then,
                };
                out.push(Action::Signal {
                    name: child.name.clone(),
                    pid,
                    signal: Signal::Term,
                });
            }
            Phase::Spawning { .. } => {
                child.phase = Phase::Spawning {
                    pending: Some(then),
                }
            }
            Phase::Stopping {
                pid,
                term_at,
                killed,
                ..
            } => {
                child.phase = Phase::Stopping {
                    pid,
                    term_at,
                    killed,
                    then,
                }
            }
            Phase::Backoff { .. } | Phase::Down(_) => match then {
                AfterStop::StayDown => child.phase = Phase::Down(Down::Off),
                AfterStop::Respawn => {
                    child.restarts = 0;
                    Self::spawn(child, out);
                }
            },
        }
    }

    /// Stops everything: pending restarts are cancelled, STARTDs are asked
    /// first, the others once the STARTDs are gone.
    fn stop_all(&mut self, now: Duration, out: &mut Vec<Action>) {
        self.stopping_all = true;
        for child in &mut self.children {
            if let Phase::Backoff { .. } = child.phase {
                child.phase = Phase::Down(Down::Off);
            }
        }
        let startds_alive = self.children.iter().any(|c| c.is_startd() && c.alive());
        self.rest_waits_for_startds = startds_alive;
        for child in &mut self.children {
            if child.alive() && (!startds_alive || child.is_startd()) {
                Self::stop_child(child, now, AfterStop::StayDown, out);
            }
        }
        if startds_alive {
            log(
                out,
                LogLevel::Info,
                "stopping the STARTD first; the other daemons follow once it is gone".into(),
            );
        }
        self.after_child_down(now, out);
    }

    /// Bookkeeping after a daemon went down: the second stage of a stop of
    /// everything, and its completion (exit, restart of all, or "all off").
    fn after_child_down(&mut self, now: Duration, out: &mut Vec<Action>) {
        if !self.stopping_all {
            return;
        }
        if self.rest_waits_for_startds && !self.children.iter().any(|c| c.is_startd() && c.alive())
        {
            self.rest_waits_for_startds = false;
            for child in &mut self.children {
                if child.alive() {
                    Self::stop_child(child, now, AfterStop::StayDown, out);
                }
            }
        }
        if self.children.iter().any(Child::alive) {
            return;
        }
        self.stopping_all = false;
        if self.shutting_down {
            log(out, LogLevel::Info, "all daemons are gone; exiting".into());
            self.exited = true;
            out.push(Action::Exit);
        } else if self.restart_all_pending {
            self.restart_all_pending = false;
            log(
                out,
                LogLevel::Info,
                "restart: all daemons are down; starting them".into(),
            );
            self.start_all(out);
        } else {
            log(out, LogLevel::Info, "all daemons are off".into());
        }
    }

    /// A daemon failed (crash, unexpected exit, failed spawn) after being up
    /// `uptime`: restart it after a backoff, or give up.
    fn failed(
        &mut self,
        i: usize,
        what: String,
        uptime: Duration,
        now: Duration,
        out: &mut Vec<Action>,
    ) {
        let policy = self.config.policy_for(&self.children[i].name).clone();
        let max = self.config.max_restarts;
        let child = &mut self.children[i];
        if child.restarts > 0 && uptime >= policy.recover_time {
            // It had recovered even if no tick recorded it.
            child.restarts = 0;
        }
        if let Some(max) = max {
            if child.restarts >= max {
                child.phase = Phase::Down(Down::GaveUp);
                out.push(Action::GiveUp {
                    name: child.name.clone(),
                    message: format!(
                        "{what}; giving up on {} after {} consecutive restart(s) \
                         (MASTER_MAX_RESTARTS = {max}); `on {}` tries again",
                        child.name, child.restarts, child.name
                    ),
                });
                return;
            }
        }
        let delay = policy.delay(child.restarts);
        child.restarts = child.restarts.saturating_add(1);
        child.phase = Phase::Backoff {
            until: now.saturating_add(delay),
        };
        let of = match max {
            Some(max) => format!(" of {max}"),
            None => String::new(),
        };
        log(
            out,
            LogLevel::Warn,
            format!(
                "{what}; restarting it in {} s (restart {}{of})",
                fmt_secs(delay),
                child.restarts
            ),
        );
    }
}

fn log(out: &mut Vec<Action>, level: LogLevel, message: String) {
    out.push(Action::Log { level, message });
}

/// Seconds, without a fraction when whole.
fn fmt_secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.3}", d.as_secs_f64())
    }
}

fn event_label(event: &Event) -> String {
    match event {
        Event::Start => "start".into(),
        Event::ChildStarted { name, .. } => format!("start report for {name}"),
        Event::SpawnFailed { name, .. } => format!("spawn failure for {name}"),
        Event::ChildExited { name, .. } => format!("exit report for {name}"),
        Event::Tick { .. } => "tick".into(),
        Event::Command { command, .. } => format!("{command} command"),
        Event::Shutdown { .. } => "shutdown".into(),
    }
}

#[cfg(test)]
mod tests;
