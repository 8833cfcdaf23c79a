//! The configuration as read from the real system: files, environment and
//! host facts, handed to the pure `skua-config` language.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use skua_config::{Config, ConfigError, DirEntry, FileSource, LoadOptions};

/// Where the main configuration file is looked for when neither `SKUA_CONFIG` nor
/// `CONDOR_CONFIG` is set.
pub const DEFAULT_CONFIG_PATHS: &[&str] = &["/etc/skua/skua_config"];

/// Reads files from the real file system (relative paths against the working directory).
pub struct RealFiles;

impl FileSource for RealFiles {
    fn read(&self, path: &str) -> io::Result<String> {
        // HTCondor opens a directory named as a configuration source without complaint and
        // reads nothing from it.
        if Path::new(path).is_dir() {
            return Ok(String::new());
        }
        let bytes = std::fs::read(path)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            // Follow symbolic links: a link to a regular file counts as a file.
            if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(names)
    }

    fn list_entries(&self, path: &str) -> io::Result<Vec<DirEntry>> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            // Follow symbolic links, as for `list_dir`.
            let Ok(meta) = std::fs::metadata(entry.path()) else {
                continue;
            };
            entries.push(DirEntry {
                name: entry.file_name().to_string_lossy().into_owned(),
                is_dir: meta.is_dir(),
            });
        }
        Ok(entries)
    }

    fn is_dir(&self, path: &str) -> bool {
        Path::new(path).is_dir()
    }

    fn file_size(&self, path: &str) -> Option<u64> {
        std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len())
    }

    /// Runs the command (split at whitespace, no shell) and returns its standard output.
    fn run_command(&self, command: &str) -> io::Result<String> {
        let mut words = command.split_whitespace();
        let program = words
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
        let output = std::process::Command::new(program)
            .args(words)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .output()?;
        if !output.status.success() {
            return Err(io::Error::other(format!("exited with {}", output.status)));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// The name of the user running this process (`USERNAME`), from the password database.
pub fn current_username(env: &BTreeMap<String, String>) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok().map(|m| m.uid());
    let from_passwd = uid.and_then(|uid| {
        std::fs::read_to_string("/etc/passwd")
            .ok()
            .and_then(|passwd| {
                passwd.lines().find_map(|line| {
                    let mut fields = line.split(':');
                    let name = fields.next()?;
                    let id: u32 = fields.nth(1)?.parse().ok()?;
                    (id == uid).then(|| name.to_string())
                })
            })
    });
    from_passwd.or_else(|| env.get("USER").or_else(|| env.get("LOGNAME")).cloned())
}

/// The main configuration file: `$SKUA_CONFIG`, else `$CONDOR_CONFIG`, else the first existing
/// [`DEFAULT_CONFIG_PATHS`] entry, else the default personal pool's `~/.skua/pool/skua_config`
/// if it exists, else none (built-in defaults only). `ONLY_ENV` means none.
pub fn main_file(env: &BTreeMap<String, String>) -> Option<String> {
    for var in ["SKUA_CONFIG", "CONDOR_CONFIG"] {
        if let Some(path) = env.get(var).filter(|p| !p.is_empty()) {
            return (path != "ONLY_ENV").then(|| path.clone());
        }
    }
    DEFAULT_CONFIG_PATHS
        .iter()
        .find(|p| Path::new(p).is_file())
        .map(|p| p.to_string())
        .or_else(|| {
            // the default personal pool (`skua pool start` without --dir)
            let home = env.get("HOME")?;
            let pool = Path::new(home).join(".skua/pool/skua_config");
            pool.is_file().then(|| pool.to_string_lossy().into_owned())
        })
}

/// Host facts offered to the configuration as predefined macros.
pub fn host_facts(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut host = BTreeMap::new();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| env.get("HOSTNAME").cloned());
    if let Some(full) = hostname {
        let short = full.split('.').next().unwrap_or(&full).to_string();
        host.insert("FULL_HOSTNAME".to_string(), full);
        host.insert("HOSTNAME".to_string(), short);
    }
    if let Some(user) = current_username(env) {
        host.insert("USERNAME".to_string(), user);
    }
    if let Ok(n) = std::thread::available_parallelism() {
        for name in ["DETECTED_CPUS", "DETECTED_CORES", "DETECTED_PHYSICAL_CPUS"] {
            host.insert(name.to_string(), n.to_string());
        }
    }
    if let Some(mb) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb / 1024)
    {
        host.insert("DETECTED_MEMORY".to_string(), mb.to_string());
    }
    host.insert("PID".to_string(), std::process::id().to_string());
    host.insert(
        "OPSYS".to_string(),
        std::env::consts::OS.to_ascii_uppercase(),
    );
    host.insert(
        "ARCH".to_string(),
        std::env::consts::ARCH.to_ascii_uppercase(),
    );
    host
}

/// The process environment as a map.
pub fn environment() -> BTreeMap<String, String> {
    std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// Loads the configuration as the given subsystem (daemon or tool) and
/// local name would: the main file from `SKUA_CONFIG` / `CONDOR_CONFIG` /
/// [`DEFAULT_CONFIG_PATHS`], the real file system, the environment's
/// `_CONDOR_`/`_SKUA_` overrides and this host's facts. Warnings are kept
/// in the returned configuration.
pub fn load(subsystem: Option<&str>, local_name: Option<&str>) -> Result<Config, ConfigError> {
    let env = environment();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ u64::from(std::process::id());
    let opts = LoadOptions {
        main_file: main_file(&env),
        subsystem: subsystem.map(str::to_string),
        local_name: local_name.map(str::to_string),
        host: host_facts(&env),
        env,
        random_seed: seed,
    };
    Config::load(&RealFiles, &opts)
}
