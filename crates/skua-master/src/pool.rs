//! The layout of a personal pool: what `skua pool start [--dir DIR]` writes
//! and creates.
//!
//! A personal pool is a whole pool for one user on one machine: every
//! daemon runs as that user, listens on the loopback interface only, and
//! keeps its files under one directory `DIR` (default
//! [`default_pool_dir`], `~/.skua/pool`):
//!
//! ```text
//! DIR/skua_config        the pool's configuration (pool_config)
//! DIR/log/               LOG: daemon logs and address files
//! DIR/spool/             SPOOL: the job queue and job sandboxes
//! DIR/execute/           EXECUTE: job scratch directories
//! DIR/lock/              LOCK: lock files (the master's instance lock)
//! DIR/passwords.d/       SEC_PASSWORD_DIRECTORY, mode 0700: the pool
//!                        signing key POOL
//! DIR/tokens.d/          SEC_TOKEN_SYSTEM_DIRECTORY and SEC_TOKEN_DIRECTORY,
//!                        mode 0700: tokens of the daemons and of the user
//! ```
//!
//! # Finding daemons on ports chosen by the operating system
//!
//! Nothing in a personal pool listens on a fixed port, so two pools (or a
//! pool and a real HTCondor) never collide. The configuration says
//! `COLLECTOR_HOST = $(CONDOR_HOST):0`: port 0 is not an address a client
//! can use, it means "the collector binds a port the operating system
//! chooses and publishes it". The convention, HTCondor's
//! `<SUBSYS>_ADDRESS_FILE`:
//!
//! 1. Before spawning a daemon, the master deletes its address file, so a
//!    file that exists was written by the daemon now running.
//! 2. A daemon binds `NETWORK_INTERFACE:0`, then writes its actual address
//!    to `<SUBSYS>_ADDRESS_FILE` (`$(LOG)/.collector_address` for the
//!    collector, `$(LOG)/.master_address` for the master) atomically: it
//!    writes a temporary file in the same directory, then renames it over
//!    the address file. The content is [`format_address_file`]: one line,
//!    the socket address (`127.0.0.1:40123`); readers ignore any further
//!    lines, which are reserved.
//! 3. A daemon removes its address file when it exits cleanly.
//! 4. A client (a `skua` command, or a daemon looking for the collector)
//!    whose `COLLECTOR_HOST` has port 0
//!    ([`collector_host_uses_address_file`]) reads `COLLECTOR_ADDRESS_FILE`
//!    and parses it with [`parse_address_text`]. No file means the pool is
//!    not running (or its collector is not up yet: a client that has just
//!    started the pool retries for a few seconds). A stale file left by a
//!    crash gives "connection refused" until the master starts the next
//!    collector, which replaces the file.
//!
//! Everything here is pure: the caller creates the directories and writes
//! the files.

pub use skua_daemon::address::{
    collector_host_uses_address_file, format_address_file, parse_address_text,
};
use std::path::{Path, PathBuf};

/// Name of the configuration file in the pool directory.
pub const CONFIG_FILE_NAME: &str = "skua_config";
/// Name of the collector's address file in `LOG`.
pub const COLLECTOR_ADDRESS_FILE_NAME: &str = ".collector_address";
/// Name of the master's address file in `LOG`.
pub const MASTER_ADDRESS_FILE_NAME: &str = ".master_address";
/// Name of the pool signing key in `SEC_PASSWORD_DIRECTORY` (HTCondor's
/// default key name).
pub const POOL_SIGNING_KEY_NAME: &str = "POOL";
/// Default `UPDATE_INTERVAL` of a personal pool, in seconds: 5, so that
/// `skua status` shows a change within seconds (HTCondor's default, for
/// real pools, is 300).
pub const DEFAULT_UPDATE_INTERVAL: u64 = 5;
/// Default `CLASSAD_LIFETIME` of a personal pool, in seconds: 60, twelve
/// missed updates (HTCondor's default is 900, three missed updates of 300
/// s; a personal pool can afford more slack and still forget a dead daemon
/// within a minute).
pub const DEFAULT_CLASSAD_LIFETIME: u64 = 60;

/// The default pool directory: `HOME/.skua/pool`. The caller supplies the
/// home directory (this crate does not read the environment).
pub fn default_pool_dir(home: &Path) -> PathBuf {
    home.join(".skua").join("pool")
}

/// A directory of the pool and the permissions to create it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolDir {
    /// The directory.
    pub path: PathBuf,
    /// Unix permission bits (0o755, or 0o700 for key and token
    /// directories).
    pub mode: u32,
}

/// The directories of the pool rooted at `dir`, parents first: `dir`,
/// `log`, `spool`, `execute`, `lock` (0o755) and `passwords.d`,
/// `tokens.d` (0o700: they hold the pool signing key and tokens). The
/// caller creates the missing ones and tightens the mode of existing key
/// and token directories.
pub fn directories_to_create(dir: &Path) -> Vec<PoolDir> {
    PoolLayout::new(dir).directories()
}

/// Where everything of a personal pool lives, derived from its directory.
/// The paths agree with the text of [`pool_config`] for the same directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolLayout {
    dir: PathBuf,
}

impl PoolLayout {
    /// The layout of the pool in `dir` (`LOCAL_DIR`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        PoolLayout { dir: dir.into() }
    }

    /// `LOCAL_DIR`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `DIR/skua_config`.
    pub fn config_file(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE_NAME)
    }

    /// `LOG = $(LOCAL_DIR)/log`.
    pub fn log_dir(&self) -> PathBuf {
        self.dir.join("log")
    }

    /// `SPOOL = $(LOCAL_DIR)/spool`.
    pub fn spool_dir(&self) -> PathBuf {
        self.dir.join("spool")
    }

    /// `EXECUTE = $(LOCAL_DIR)/execute`.
    pub fn execute_dir(&self) -> PathBuf {
        self.dir.join("execute")
    }

    /// `LOCK = $(LOCAL_DIR)/lock`.
    pub fn lock_dir(&self) -> PathBuf {
        self.dir.join("lock")
    }

    /// `SEC_PASSWORD_DIRECTORY = $(LOCAL_DIR)/passwords.d`.
    pub fn password_dir(&self) -> PathBuf {
        self.dir.join("passwords.d")
    }

    /// `SEC_TOKEN_SYSTEM_DIRECTORY` and `SEC_TOKEN_DIRECTORY`:
    /// `$(LOCAL_DIR)/tokens.d`.
    pub fn token_dir(&self) -> PathBuf {
        self.dir.join("tokens.d")
    }

    /// `SEC_TOKEN_POOL_SIGNING_KEY_FILE = $(SEC_PASSWORD_DIRECTORY)/POOL`.
    pub fn pool_signing_key(&self) -> PathBuf {
        self.password_dir().join(POOL_SIGNING_KEY_NAME)
    }

    /// `MASTER_INSTANCE_LOCK = $(LOCK)/InstanceLock` (HTCondor's default
    /// name): held by the running master, so one pool has one master.
    pub fn master_instance_lock(&self) -> PathBuf {
        self.lock_dir().join("InstanceLock")
    }

    /// `COLLECTOR_ADDRESS_FILE = $(LOG)/.collector_address`.
    pub fn collector_address_file(&self) -> PathBuf {
        self.log_dir().join(COLLECTOR_ADDRESS_FILE_NAME)
    }

    /// `MASTER_ADDRESS_FILE = $(LOG)/.master_address`.
    pub fn master_address_file(&self) -> PathBuf {
        self.log_dir().join(MASTER_ADDRESS_FILE_NAME)
    }

    /// See [`directories_to_create`].
    pub fn directories(&self) -> Vec<PoolDir> {
        let open = |path| PoolDir { path, mode: 0o755 };
        let private = |path| PoolDir { path, mode: 0o700 };
        vec![
            open(self.dir.clone()),
            open(self.log_dir()),
            open(self.spool_dir()),
            open(self.execute_dir()),
            open(self.lock_dir()),
            private(self.password_dir()),
            private(self.token_dir()),
        ]
    }

    /// The text of `DIR/skua_config`; see [`pool_config`].
    pub fn config_text(&self, options: &PoolOptions) -> Result<String, PoolError> {
        pool_config(&self.dir, options)
    }
}

/// What may vary between personal pools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOptions {
    /// `DAEMON_LIST`, starting with `MASTER`. Default `MASTER, COLLECTOR,
    /// NEGOTIATOR, SCHEDD, STARTD`: a whole pool on one machine.
    pub daemons: Vec<String>,
    /// `UPDATE_INTERVAL`, in seconds (> 0); default
    /// [`DEFAULT_UPDATE_INTERVAL`].
    pub update_interval: u64,
    /// `CLASSAD_LIFETIME`, in seconds (>= `update_interval`); default
    /// [`DEFAULT_CLASSAD_LIFETIME`].
    pub classad_lifetime: u64,
    /// The `skuad` program. When given, the configuration says
    /// `SKUAD = <path>` and, for each daemon but the master,
    /// `<NAME> = $(SKUAD)` and `<NAME>_ARGS = <name in lowercase>`: the
    /// program the master runs for it, as HTCondor's `<SUBSYS>` and
    /// `<SUBSYS>_ARGS`. When `None`, the master decides (e.g. the `skuad`
    /// next to its own executable).
    pub skuad: Option<PathBuf>,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            daemons: ["MASTER", "COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD"]
                .into_iter()
                .map(String::from)
                .collect(),
            update_interval: DEFAULT_UPDATE_INTERVAL,
            classad_lifetime: DEFAULT_CLASSAD_LIFETIME,
            skuad: None,
        }
    }
}

/// Errors producing the pool configuration or reading an address file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// A path that cannot be written as a configuration value.
    #[error("pool path `{path}` cannot be used: {reason}")]
    BadPath {
        /// The path, lossily.
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// A bad `DAEMON_LIST`.
    #[error("invalid daemon list: {0}")]
    BadDaemonList(String),
    /// Intervals out of range.
    #[error("invalid {knob}: {reason}")]
    BadInterval {
        /// The configuration knob.
        knob: &'static str,
        /// Why.
        reason: String,
    },
}

/// The text of `DIR/skua_config` for a personal pool in `dir`, in
/// HTCondor's configuration syntax: `NAME = value` lines and `#` comment
/// lines; `$(NAME)` refers to another entry (`$(FULL_HOSTNAME)` is
/// predefined).
///
/// `dir` must be absolute, valid UTF-8, and free of characters the
/// configuration language would interpret: `$` (macro expansion), line
/// breaks, leading or trailing blanks (trimmed from values) and a trailing
/// `\` (line continuation).
pub fn pool_config(dir: &Path, options: &PoolOptions) -> Result<String, PoolError> {
    config_text(dir, options, None)
}

/// [`pool_config`], or with `net` a network pool's
/// ([`network::network_pool_config`]).
fn config_text(
    dir: &Path,
    options: &PoolOptions,
    net: Option<network::NetworkParts>,
) -> Result<String, PoolError> {
    let local_dir = config_path(dir, true)?;
    let skuad = options
        .skuad
        .as_deref()
        .map(|p| config_path(p, false))
        .transpose()?;
    check_daemons(&options.daemons)?;
    if options.update_interval == 0 {
        return Err(PoolError::BadInterval {
            knob: "UPDATE_INTERVAL",
            reason: "must be at least 1 second".into(),
        });
    }
    if options.classad_lifetime < options.update_interval {
        return Err(PoolError::BadInterval {
            knob: "CLASSAD_LIFETIME",
            reason: format!(
                "{} s is shorter than UPDATE_INTERVAL ({} s): ads would expire between updates",
                options.classad_lifetime, options.update_interval
            ),
        });
    }

    let mut c = Config::default();
    if net.is_some() {
        c.comment("Skua pool configuration of this host, written by `skua pool start` or `skua pool join`.");
    } else {
        c.comment("Skua personal pool configuration, written by `skua pool start`.");
    }
    c.comment("HTCondor configuration syntax: `NAME = value` lines, `#` comment lines,");
    c.comment("`$(NAME)` stands for the value of NAME.");

    c.section("Directories");
    c.set("LOCAL_DIR", local_dir);
    c.set("LOG", "$(LOCAL_DIR)/log");
    c.set("SPOOL", "$(LOCAL_DIR)/spool");
    c.set("EXECUTE", "$(LOCAL_DIR)/execute");
    c.set("LOCK", "$(LOCAL_DIR)/lock");
    c.set("MASTER_INSTANCE_LOCK", "$(LOCK)/InstanceLock");

    match &net {
        Some(parts) => c.text.push_str(&parts.network.text),
        None => {
            c.section("Network: loopback only, every port chosen by the operating system");
            c.set("CONDOR_HOST", "127.0.0.1");
            c.set("NETWORK_INTERFACE", "127.0.0.1");
            c.set("BIND_ALL_INTERFACES", "False");
            c.comment("Port 0: the collector listens on a port the operating system picks and");
            c.comment("writes its address to COLLECTOR_ADDRESS_FILE, where clients read it.");
            c.set("COLLECTOR_HOST", "$(CONDOR_HOST):0");
        }
    }
    c.set(
        "COLLECTOR_ADDRESS_FILE",
        format!("$(LOG)/{COLLECTOR_ADDRESS_FILE_NAME}"),
    );
    c.set(
        "MASTER_ADDRESS_FILE",
        format!("$(LOG)/{MASTER_ADDRESS_FILE_NAME}"),
    );

    c.section("Daemons");
    match &net {
        Some(parts) => c.text.push_str(&parts.daemons.text),
        None => c.set("DAEMON_LIST", options.daemons.join(", ")),
    }
    if let Some(skuad) = skuad {
        c.set("SKUAD", skuad);
    }
    for name in &options.daemons {
        let upper = name.to_ascii_uppercase();
        c.set(
            &format!("{upper}_LOG"),
            format!("$(LOG)/{}", log_name(&upper)),
        );
        if options.skuad.is_some() && upper != "MASTER" {
            c.set(&upper, "$(SKUAD)");
            c.set(&format!("{upper}_ARGS"), upper.to_ascii_lowercase());
        }
        if upper != "MASTER" && upper != "COLLECTOR" {
            c.set(&format!("{upper}_ADDRESS_FILE"), address_file_value(&upper));
        }
    }

    match &net {
        Some(parts) => {
            c.text.push_str(&parts.domains.text);
            c.text.push_str(&parts.security.text);
        }
        None => {
            c.section("Domains: this machine alone");
            c.set("UID_DOMAIN", "$(FULL_HOSTNAME)");
            c.set("FILESYSTEM_DOMAIN", "$(FULL_HOSTNAME)");

            c.section("Security: the pool signing key and tokens, readable by this user only");
            c.set("SEC_PASSWORD_DIRECTORY", "$(LOCAL_DIR)/passwords.d");
            c.set(
                "SEC_TOKEN_POOL_SIGNING_KEY_FILE",
                format!("$(SEC_PASSWORD_DIRECTORY)/{POOL_SIGNING_KEY_NAME}"),
            );
            c.set("SEC_TOKEN_SYSTEM_DIRECTORY", "$(LOCAL_DIR)/tokens.d");
            c.set("SEC_TOKEN_DIRECTORY", "$(LOCAL_DIR)/tokens.d");
        }
    }

    c.section("Collector updates");
    c.set("UPDATE_INTERVAL", options.update_interval.to_string());
    c.set("MASTER_UPDATE_INTERVAL", "$(UPDATE_INTERVAL)");
    c.set("CLASSAD_LIFETIME", options.classad_lifetime.to_string());

    c.section("Matchmaking: a cycle every 20 s, and 1 s after new jobs are submitted");
    c.set("NEGOTIATOR_INTERVAL", "20");
    c.set("NEGOTIATOR_CYCLE_DELAY", "1");
    Ok(c.text)
}

// ----- helpers ---------------------------------------------------------------

/// Accumulates configuration text.
#[derive(Default)]
struct Config {
    text: String,
}

impl Config {
    fn comment(&mut self, text: &str) {
        self.text.push_str("# ");
        self.text.push_str(text);
        self.text.push('\n');
    }

    fn section(&mut self, title: &str) {
        self.text.push_str("\n## ");
        self.text.push_str(title);
        self.text.push('\n');
    }

    fn set(&mut self, name: &str, value: impl AsRef<str>) {
        self.text.push_str(name);
        self.text.push_str(" = ");
        self.text.push_str(value.as_ref());
        self.text.push('\n');
    }
}

/// A path as a configuration value, refusing what the configuration
/// language would change.
fn config_path(path: &Path, must_be_absolute: bool) -> Result<&str, PoolError> {
    let bad = |reason| PoolError::BadPath {
        path: path.to_string_lossy().into_owned(),
        reason,
    };
    let s = path.to_str().ok_or_else(|| bad("it is not valid UTF-8"))?;
    if s.is_empty() {
        return Err(bad("it is empty"));
    }
    if must_be_absolute && !path.is_absolute() {
        return Err(bad("it must be absolute"));
    }
    if s.contains(['\n', '\r', '\0']) {
        return Err(bad("it contains a line break or NUL"));
    }
    if s.contains('$') {
        return Err(bad("`$` would start a macro in the configuration"));
    }
    if s.trim() != s {
        return Err(bad("leading or trailing blanks would be trimmed"));
    }
    if s.ends_with('\\') {
        return Err(bad("a trailing `\\` would continue the line"));
    }
    Ok(s)
}

fn check_daemons(daemons: &[String]) -> Result<(), PoolError> {
    let first = daemons
        .first()
        .ok_or_else(|| PoolError::BadDaemonList("it is empty".into()))?;
    if !first.eq_ignore_ascii_case("MASTER") {
        return Err(PoolError::BadDaemonList(format!(
            "it must start with MASTER, not `{first}`"
        )));
    }
    for (i, name) in daemons.iter().enumerate() {
        let ident = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ident {
            return Err(PoolError::BadDaemonList(format!(
                "`{name}` is not a daemon name (letters, digits and `_`)"
            )));
        }
        if daemons[..i].iter().any(|d| d.eq_ignore_ascii_case(name)) {
            return Err(PoolError::BadDaemonList(format!("`{name}` appears twice")));
        }
    }
    Ok(())
}

/// HTCondor's log file names (`SCHEDD_LOG = $(LOG)/SchedLog`, ...);
/// `FooLog` for a daemon `FOO` it does not know.
fn log_name(upper: &str) -> String {
    match upper {
        "MASTER" => "MasterLog".into(),
        "COLLECTOR" => "CollectorLog".into(),
        "NEGOTIATOR" => "NegotiatorLog".into(),
        "SCHEDD" => "SchedLog".into(),
        "STARTD" => "StartLog".into(),
        "SHARED_PORT" => "SharedPortLog".into(),
        _ => {
            let mut name = String::new();
            for word in upper.split('_').filter(|w| !w.is_empty()) {
                let lower = word.to_ascii_lowercase();
                let mut chars = lower.chars();
                if let Some(first) = chars.next() {
                    name.push(first.to_ascii_uppercase());
                    name.extend(chars);
                }
            }
            name.push_str("Log");
            name
        }
    }
}

/// Where a daemon other than the master and the collector publishes its
/// address: in `SPOOL` for the schedd (HTCondor's default), in `LOG`
/// otherwise.
fn address_file_value(upper: &str) -> String {
    let lower = upper.to_ascii_lowercase();
    if upper == "SCHEDD" {
        format!("$(SPOOL)/.{lower}_address")
    } else {
        format!("$(LOG)/.{lower}_address")
    }
}

pub mod network;

#[cfg(test)]
mod tests;
