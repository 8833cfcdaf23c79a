//! `skua config`: query the configuration (HTCondor's configuration language).
//!
//! This is the edge where the real file system, environment and host are read; the language
//! itself lives in the pure `skua-config` crate.
//!
//! Exit status of `skua config get NAME`: 0 and the raw expanded value on stdout when the knob is
//! defined; 1 and nothing on stdout when it is undefined or empty; 2 with a message naming the
//! file and line on stderr when the configuration itself is invalid.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use skua_config::{Config, ConfigError, FileSource, Knob, LoadOptions, Origin};

/// Where the main configuration file is looked for when neither `SKUA_CONFIG` nor
/// `CONDOR_CONFIG` is set.
pub const DEFAULT_CONFIG_PATHS: &[&str] = &["/etc/skua/skua_config"];

#[derive(clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(clap::Subcommand)]
enum ConfigCommand {
    /// Print the expanded value of one knob (exit 1 if it is undefined or empty).
    Get(GetArgs),
    /// Print every knob the configuration sets, with expanded values.
    Dump(DumpArgs),
}

#[derive(clap::Args)]
struct Context {
    /// Read the configuration as this daemon or tool would (STARTD, SCHEDD, ...; default TOOL).
    #[arg(long, value_name = "SUBSYS")]
    subsystem: Option<String>,
    /// Read the configuration as the daemon instance with this local name would.
    #[arg(long = "local-name", value_name = "NAME")]
    local_name: Option<String>,
}

#[derive(clap::Args)]
struct GetArgs {
    /// The knob (case-insensitive), e.g. START or STARTD.START.
    name: String,
    #[command(flatten)]
    context: Context,
    /// Also print where the knob was defined and its raw value.
    #[arg(long, short)]
    verbose: bool,
}

#[derive(clap::Args)]
struct DumpArgs {
    #[command(flatten)]
    context: Context,
    /// Also print where each knob was defined.
    #[arg(long, short)]
    verbose: bool,
    /// Print values as written, without macro expansion.
    #[arg(long)]
    raw: bool,
    /// Also list the built-in defaults of knobs the configuration does not set.
    #[arg(long)]
    defaults: bool,
}

pub fn run(args: ConfigArgs) -> ExitCode {
    let result = match args.command {
        ConfigCommand::Get(get) => run_get(&get),
        ConfigCommand::Dump(dump) => run_dump(&dump),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("skua config: configuration error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Reads files from the real file system (relative paths against the working directory).
struct RealFiles;

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
fn current_username(env: &BTreeMap<String, String>) -> Option<String> {
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
/// [`DEFAULT_CONFIG_PATHS`] entry, else none (built-in defaults only). `ONLY_ENV` means none.
fn main_file(env: &BTreeMap<String, String>) -> Option<String> {
    for var in ["SKUA_CONFIG", "CONDOR_CONFIG"] {
        if let Some(path) = env.get(var).filter(|p| !p.is_empty()) {
            return (path != "ONLY_ENV").then(|| path.clone());
        }
    }
    DEFAULT_CONFIG_PATHS
        .iter()
        .find(|p| Path::new(p).is_file())
        .map(|p| p.to_string())
}

/// Host facts offered to the configuration as predefined macros.
fn host_facts(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
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

fn load(context: &Context) -> Result<Config, ConfigError> {
    let env: BTreeMap<String, String> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ u64::from(std::process::id());
    let opts = LoadOptions {
        main_file: main_file(&env),
        subsystem: context.subsystem.clone(),
        local_name: context.local_name.clone(),
        host: host_facts(&env),
        env,
        random_seed: seed,
    };
    // Like HTCondor's tools and bindings, which read the configuration as a tool before taking
    // on a daemon's identity, a configuration that is invalid for the default (tool) context is
    // invalid for every subsystem and local name too.
    if opts.subsystem.is_some() || opts.local_name.is_some() {
        let as_tool = LoadOptions {
            subsystem: None,
            local_name: None,
            ..opts.clone()
        };
        Config::load(&RealFiles, &as_tool)?;
    }
    let config = Config::load(&RealFiles, &opts)?;
    for w in config.warnings() {
        eprintln!("skua config: warning: {w}");
    }
    Ok(config)
}

fn run_get(args: &GetArgs) -> Result<ExitCode, ConfigError> {
    let config = load(&args.context)?;
    let value = config.get(&args.name)?;
    let mut out = io::stdout().lock();
    match value {
        Some(v) => {
            let _ = writeln!(out, "{v}");
            if args.verbose {
                if let Some(knob) = config.knob(&args.name) {
                    let _ = writeln!(out, "# {} defined at: {}", knob.name, knob.origin);
                    let _ = writeln!(out, "# raw value: {}", knob.raw);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        None => {
            if args.verbose {
                match config.knob(&args.name) {
                    Some(knob) => eprintln!(
                        "# {} expands to nothing (defined at: {}; raw value: {})",
                        knob.name, knob.origin, knob.raw
                    ),
                    None => eprintln!("# {} is not defined", args.name),
                }
            }
            Ok(ExitCode::from(1))
        }
    }
}

fn print_knob(
    out: &mut impl Write,
    config: &Config,
    knob: &Knob,
    args: &DumpArgs,
) -> io::Result<()> {
    let value = if args.raw {
        knob.raw.clone()
    } else {
        match config.expand(&knob.raw) {
            Ok(v) => v,
            Err(e) => {
                writeln!(out, "# {}: {e}", knob.name)?;
                return Ok(());
            }
        }
    };
    if value.is_empty() && !args.raw {
        return Ok(());
    }
    if value.contains('\n') {
        writeln!(out, "{} @=end\n{value}\n@end", knob.name)?;
    } else {
        writeln!(out, "{} = {value}", knob.name)?;
    }
    if args.verbose {
        writeln!(out, "  # at: {}", knob.origin)?;
    }
    Ok(())
}

fn run_dump(args: &DumpArgs) -> Result<ExitCode, ConfigError> {
    let config = load(&args.context)?;
    let mut out = io::stdout().lock();
    let defined = config.defined_knobs();
    for knob in &defined {
        let _ = print_knob(&mut out, &config, knob, args);
    }
    if args.defaults {
        let _ = writeln!(out, "# built-in defaults");
        for (name, raw) in Config::default_knobs() {
            if config
                .knob(name)
                .is_some_and(|k| k.origin == Origin::Default)
            {
                let knob = Knob {
                    name: name.to_string(),
                    raw: raw.to_string(),
                    origin: Origin::Default,
                };
                let _ = print_knob(&mut out, &config, &knob, args);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
