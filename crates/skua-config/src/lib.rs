//! HTCondor's configuration language, as a pure library.
//!
//! [`Config::load`] reads a main configuration file and everything it pulls in (includes,
//! metaknobs, `LOCAL_CONFIG_DIR`, `LOCAL_CONFIG_FILE`), then applies `_CONDOR_NAME` and
//! `_SKUA_NAME` environment overrides, exactly in HTCondor's order and with its quirks. Values
//! are stored raw and expanded lazily by [`Config::get`], which answers what HTCondor's `param()`
//! answers: the expanded value, or nothing for an undefined *or empty* knob.
//!
//! The crate is a pure core: it never reads the file system, the environment or the clock.
//! Files arrive through a [`FileSource`], the environment and host facts through
//! [`LoadOptions`]. See `docs/config.md` for the supported language.
//!
//! ```
//! use skua_config::{Config, LoadOptions, MemoryFiles};
//!
//! let files = MemoryFiles::new().with("/etc/skua/skua_config", "A = 1\nB = $(A) two\n");
//! let opts = LoadOptions::new().main_file("/etc/skua/skua_config");
//! let config = Config::load(&files, &opts).expect("valid configuration");
//! assert_eq!(config.get("b").expect("expands").as_deref(), Some("1 two"));
//! assert_eq!(config.get("START").expect("expands").as_deref(), Some("True"));
//! assert_eq!(config.get("NOT_DEFINED").expect("expands"), None);
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod cond;
mod defaults;
#[allow(clippy::all)]
mod defaults_table;
mod error;
mod expand;
mod expr;
mod funcs;
mod lines;
mod loader;
mod metaknob;
#[allow(clippy::all)]
mod metaknob_table;
mod printf;
mod source;

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

pub use error::{ConfigError, Location};
pub use expand::MacroScope;
pub use lines::{is_c_space, trim_c, LineReader};
pub use source::{DirEntry, FileSource, MemoryFiles};

/// Fully expands the macros in `text` against any [`MacroScope`] (the engine behind
/// [`Config::expand`], shared with the submit language).
pub fn expand_macros(scope: &dyn MacroScope, text: &str) -> Result<String, ConfigError> {
    expand::expand_at(scope, text, 0, None)
}

/// Like [`expand_macros`], with `text` being the value of macro `name` (meeting `name` again
/// while expanding is a recursion error).
pub fn expand_macro_value(
    scope: &dyn MacroScope,
    name: &str,
    text: &str,
) -> Result<String, ConfigError> {
    expand::expand_at(scope, text, 0, Some(name))
}

/// Replaces the self-references in a value being assigned to `self_names` (`A = $(A) x`) with
/// the previous value found by `lookup`; every other macro is left for lazy expansion.
pub fn expand_self_references(
    value: &str,
    self_names: &[&str],
    lookup: impl Fn(&str) -> Option<String>,
) -> String {
    expand::expand_self(value, self_names, lookup)
}

/// Evaluates the condition of an `if` / `elif` line against a [`MacroScope`]; `Err` holds the
/// reason the condition is invalid.
pub fn evaluate_condition(scope: &dyn MacroScope, condition: &str) -> Result<bool, String> {
    cond::evaluate(scope, condition)
}

/// A valid macro name: non-empty; letters, digits, `_`, `.`, `/`.
pub fn is_valid_macro_name(name: &str) -> bool {
    expand::is_valid_name(name)
}

/// A boolean literal as the configuration reader accepts it (`true`/`yes`/`t`, `false`/`no`/`f`).
pub fn bool_literal(text: &str) -> Option<bool> {
    cond::bool_literal(text)
}

/// The HTCondor version whose behaviour this crate reproduces; `if version >= X.Y` compares
/// against it.
pub const COMPATIBLE_VERSION: (u32, u32, u32) = (25, 14, 1);

/// The subsystem used when none is given (HTCondor tools run as `TOOL`).
pub const DEFAULT_SUBSYSTEM: &str = "TOOL";

/// Everything [`Config::load`] needs besides the files.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The main configuration file; `None` means "built-in defaults (and environment) only".
    pub main_file: Option<String>,
    /// The daemon or tool reading the configuration (`STARTD`, `SCHEDD`, ...); `TOOL` if `None`.
    pub subsystem: Option<String>,
    /// The local name of the daemon instance (`-local-name`), if any.
    pub local_name: Option<String>,
    /// The process environment: used by `$ENV(...)` and scanned for `_CONDOR_NAME` /
    /// `_SKUA_NAME` overrides.
    pub env: BTreeMap<String, String>,
    /// Host facts available as macros (`FULL_HOSTNAME`, `HOSTNAME`, `USERNAME`,
    /// `DETECTED_CPUS`, ...). Configuration files may override them.
    pub host: BTreeMap<String, String>,
    /// Seed of the generator behind `$RANDOM_CHOICE` and `$RANDOM_INTEGER`.
    pub random_seed: u64,
}

impl LoadOptions {
    /// Options with no main file, subsystem `TOOL`, empty environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the main configuration file.
    pub fn main_file(mut self, path: &str) -> Self {
        self.main_file = Some(path.to_string());
        self
    }

    /// Sets the subsystem.
    pub fn subsystem(mut self, subsystem: &str) -> Self {
        self.subsystem = Some(subsystem.to_string());
        self
    }

    /// Sets the local name.
    pub fn local_name(mut self, local_name: &str) -> Self {
        self.local_name = Some(local_name.to_string());
        self
    }

    /// Adds an environment variable.
    pub fn env_var(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_string(), value.to_string());
        self
    }

    /// Adds a host fact (a predefined macro such as `FULL_HOSTNAME`).
    pub fn host_fact(mut self, name: &str, value: &str) -> Self {
        self.host
            .insert(name.to_ascii_uppercase(), value.to_string());
        self
    }
}

/// Where a knob's definition came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A line of a configuration file (or of a metaknob expanded at that line).
    File(Location),
    /// An environment variable (`_CONDOR_NAME` or `_SKUA_NAME`).
    Environment {
        /// The variable's name.
        variable: String,
    },
    /// A host fact passed in [`LoadOptions::host`].
    Host,
    /// Set by the reader itself (`SUBSYSTEM`, `LOCALNAME`).
    Predefined,
    /// The built-in default table.
    Default,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(at) => write!(f, "{at}"),
            Origin::Environment { variable } => write!(f, "environment variable {variable}"),
            Origin::Host => write!(f, "host facts"),
            Origin::Predefined => write!(f, "predefined by the configuration reader"),
            Origin::Default => write!(f, "built-in default"),
        }
    }
}

/// A knob definition: its name as written, its raw (unexpanded) value and its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knob {
    /// The name as written where it was defined (for example `STARTD.FOO`).
    pub name: String,
    /// The value before macro expansion.
    pub raw: String,
    /// Where it was defined.
    pub origin: Origin,
}

/// A non-fatal message from reading the configuration (`warning : ...` lines, obsolete syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Where it was raised.
    pub at: Location,
    /// The message.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

#[derive(Debug, Clone)]
struct Entry {
    name: String,
    raw: String,
    origin: Origin,
}

/// A loaded configuration, for one subsystem and local name.
#[derive(Debug, Clone)]
pub struct Config {
    table: HashMap<String, Entry>,
    subsystem: String,
    local_name: Option<String>,
    env: BTreeMap<String, String>,
    host: BTreeMap<String, String>,
    warnings: Vec<Warning>,
    rng: Cell<u64>,
}

impl Config {
    /// Reads the configuration: the main file (if any) with its includes and metaknobs, then
    /// `LOCAL_CONFIG_DIR` and `LOCAL_CONFIG_FILE`, then the environment overrides.
    ///
    /// Fails as HTCondor does on an invalid configuration; the error names the file and line.
    pub fn load(files: &dyn FileSource, opts: &LoadOptions) -> Result<Config, ConfigError> {
        let config = Config {
            table: HashMap::new(),
            subsystem: opts
                .subsystem
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| DEFAULT_SUBSYSTEM.to_string()),
            local_name: opts.local_name.clone().filter(|s| !s.is_empty()),
            env: opts.env.clone(),
            host: opts
                .host
                .iter()
                .map(|(k, v)| (k.to_ascii_uppercase(), v.clone()))
                .collect(),
            warnings: Vec::new(),
            rng: Cell::new(opts.random_seed ^ 0x9e37_79b9_7f4a_7c15),
        };
        loader::load(config, files, opts.main_file.as_deref())
    }

    /// The subsystem this configuration was read for.
    pub fn subsystem(&self) -> &str {
        &self.subsystem
    }

    /// The local name this configuration was read for.
    pub fn local_name(&self) -> Option<&str> {
        self.local_name.as_deref()
    }

    /// Warnings raised while reading.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// What HTCondor's `param(name)` returns: the expanded value of the knob, looked up as
    /// `LOCALNAME.name`, `SUBSYSTEM.name`, `name`, then the built-in defaults; `None` when it is
    /// undefined or expands to the empty string.
    ///
    /// Fails only when expansion does not terminate (mutually recursive definitions).
    pub fn get(&self, name: &str) -> Result<Option<String>, ConfigError> {
        let Some(raw) = self.raw_lookup(name) else {
            return Ok(None);
        };
        let value = self.expand_named(name, raw)?;
        Ok(if value.is_empty() { None } else { Some(value) })
    }

    /// The definition a lookup of `name` uses (see [`Config::get`]), with its origin.
    pub fn knob(&self, name: &str) -> Option<Knob> {
        if let Some(v) = self.predefined(name) {
            return Some(Knob {
                name: name.to_ascii_uppercase(),
                raw: v.to_string(),
                origin: Origin::Predefined,
            });
        }
        for key in self.candidate_keys(name) {
            if let Some(e) = self.table.get(&key) {
                return Some(Knob {
                    name: e.name.clone(),
                    raw: e.raw.clone(),
                    origin: e.origin.clone(),
                });
            }
        }
        if let Some(v) = self.host.get(&name.to_ascii_uppercase()) {
            return Some(Knob {
                name: name.to_ascii_uppercase(),
                raw: v.clone(),
                origin: Origin::Host,
            });
        }
        defaults::lookup(&self.subsystem, name).map(|(n, raw)| Knob {
            name: n.to_string(),
            raw: raw.to_string(),
            origin: Origin::Default,
        })
    }

    /// Every knob set by the configuration itself (files, metaknobs, environment), sorted by
    /// name; built-in defaults are not included (see [`Config::default_knobs`]).
    pub fn defined_knobs(&self) -> Vec<Knob> {
        let mut out: Vec<Knob> = self
            .table
            .values()
            .map(|e| Knob {
                name: e.name.clone(),
                raw: e.raw.clone(),
                origin: e.origin.clone(),
            })
            .collect();
        out.sort_by(|a, b| {
            a.name
                .to_ascii_uppercase()
                .cmp(&b.name.to_ascii_uppercase())
        });
        out
    }

    /// The built-in default table: `(name, raw default)` pairs, sorted by name.
    pub fn default_knobs() -> impl Iterator<Item = (&'static str, &'static str)> {
        defaults::all()
    }

    /// Expands the macros in `text` in the context of this configuration (as a value would be
    /// expanded at lookup time).
    pub fn expand(&self, text: &str) -> Result<String, ConfigError> {
        expand::expand_at(self, text, 0, None)
    }

    fn expand_named(&self, name: &str, text: &str) -> Result<String, ConfigError> {
        expand::expand_at(self, text, 0, Some(name)).map_err(|e| match e {
            ConfigError::Recursion { .. } => ConfigError::Recursion {
                name: name.to_string(),
            },
            other => other,
        })
    }

    /// `SUBSYSTEM` and `LOCALNAME` cannot be overridden by the configuration.
    fn predefined(&self, name: &str) -> Option<&str> {
        if name.eq_ignore_ascii_case("SUBSYSTEM") {
            Some(&self.subsystem)
        } else if name.eq_ignore_ascii_case("LOCALNAME") {
            Some(self.local_name.as_deref().unwrap_or(&self.subsystem))
        } else {
            None
        }
    }

    /// Table keys a lookup of `name` tries, in order: `LOCALNAME.name`, `SUBSYS.name`, `name`.
    fn candidate_keys(&self, name: &str) -> Vec<String> {
        let upper = name.to_ascii_uppercase();
        let mut keys = Vec::with_capacity(3);
        if let Some(local) = &self.local_name {
            keys.push(format!("{}.{upper}", local.to_ascii_uppercase()));
        }
        keys.push(format!("{}.{upper}", self.subsystem.to_ascii_uppercase()));
        keys.push(upper);
        keys
    }

    /// The raw value a lookup of `name` finds (see [`Config::get`]); an empty value shadows
    /// lower-priority definitions.
    pub(crate) fn raw_lookup(&self, name: &str) -> Option<&str> {
        if let Some(v) = self.predefined(name) {
            return Some(v);
        }
        for key in self.candidate_keys(name) {
            if let Some(e) = self.table.get(&key) {
                return Some(&e.raw);
            }
        }
        if let Some(v) = self.host.get(&name.to_ascii_uppercase()) {
            return Some(v);
        }
        defaults::lookup(&self.subsystem, name).map(|(_, raw)| raw)
    }

    /// `if defined NAME`: a raw value is found and is not empty. Host facts other than the
    /// `DETECTED_*` ones are not yet known while the files are read (as in HTCondor).
    fn defined_for_if(&self, name: &str) -> bool {
        let upper = name.to_ascii_uppercase();
        if self.host.contains_key(&upper)
            && !upper.starts_with("DETECTED_")
            && !self.table.contains_key(&upper)
        {
            return false;
        }
        self.raw_lookup(name).is_some_and(|v| !v.is_empty())
    }

    fn insert(&mut self, name: &str, raw: String, origin: Origin) {
        self.table.insert(
            name.to_ascii_uppercase(),
            Entry {
                name: name.to_string(),
                raw,
                origin,
            },
        );
    }

    /// Next pseudo-random number (splitmix64), for `$RANDOM_*`.
    fn random(&self) -> u64 {
        let mut z = self.rng.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.rng.set(z);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl MacroScope for Config {
    fn raw_lookup(&self, name: &str) -> Option<&str> {
        Config::raw_lookup(self, name)
    }

    fn env_var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    fn next_random(&self) -> u64 {
        self.random()
    }

    fn is_defined_for_if(&self, name: &str) -> bool {
        self.defined_for_if(name)
    }
}
