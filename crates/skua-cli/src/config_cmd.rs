//! `skua config`: query the configuration (HTCondor's configuration language).
//!
//! This is the edge where the real file system, environment and host are read; the language
//! itself lives in the pure `skua-config` crate.
//!
//! Exit status of `skua config get NAME`: 0 and the raw expanded value on stdout when the knob is
//! defined; 1 and nothing on stdout when it is undefined or empty; 2 with a message naming the
//! file and line on stderr when the configuration itself is invalid.

use std::io::{self, Write};

use std::process::ExitCode;

use skua_config::{Config, ConfigError, Knob, Origin};

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

fn load(context: &Context) -> Result<Config, ConfigError> {
    // Like HTCondor's tools and bindings, which read the configuration as a tool before taking
    // on a daemon's identity, a configuration that is invalid for the default (tool) context is
    // invalid for every subsystem and local name too.
    if context.subsystem.is_some() || context.local_name.is_some() {
        skua_daemon::system_config::load(None, None)?;
    }
    let config = skua_daemon::system_config::load(
        context.subsystem.as_deref(),
        context.local_name.as_deref(),
    )?;
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

// ----- skua config_val: condor_config_val's spelling ---------------------------

/// `skua config_val`: condor_config_val's common forms over the same
/// configuration as `skua config get|dump`.
#[derive(clap::Args)]
pub struct ConfigValArgs {
    /// The knobs to print (one value per line, in this order).
    names: Vec<String>,
    /// With each value, where it was defined and its raw text.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// Print every knob the configuration sets (only those whose names
    /// contain the given words, case-insensitively, when names are given).
    #[arg(long)]
    dump: bool,
    /// Print the configuration files read.
    #[arg(long)]
    config: bool,
    /// Read the configuration as this daemon or tool would (STARTD, SCHEDD, ...; default TOOL).
    #[arg(long, value_name = "SUBSYS")]
    subsystem: Option<String>,
    /// Read the configuration as the daemon instance with this local name would.
    #[arg(long = "local-name", value_name = "NAME")]
    local_name: Option<String>,
}

/// The files named in the knobs' origins, in the order first seen.
fn config_files(config: &Config) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for knob in config.defined_knobs() {
        if let Origin::File(at) = &knob.origin {
            if !files.contains(&at.file) {
                files.push(at.file.clone());
            }
        }
    }
    files
}

/// `-config`: condor_config_val's list of the configuration sources.
pub(crate) fn render_config_sources(main: Option<&str>, files: &[String]) -> String {
    let mut out = String::from("Configuration source:\n");
    match main {
        Some(m) => out.push_str(&format!("\t{m}\n")),
        None => out.push_str("\t<environment only>\n"),
    }
    let local: Vec<&String> = files.iter().filter(|f| Some(f.as_str()) != main).collect();
    if !local.is_empty() {
        out.push_str("\nLocal configuration sources:\n");
        for f in local {
            out.push_str(&format!("\t{f}\n"));
        }
    }
    out
}

/// `-v`: a value followed by where it was defined and its raw text, as
/// condor_config_val prints it.
pub(crate) fn render_verbose(name: &str, value: &str, knob: Option<&Knob>) -> String {
    let mut out = format!("{name} = {value}\n");
    if let Some(k) = knob {
        out.push_str(&format!(" # at: {}\n", k.origin));
        out.push_str(&format!(" # raw: {} = {}\n", k.name, k.raw));
    }
    out
}

pub fn config_val(args: ConfigValArgs) -> ExitCode {
    let context = Context {
        subsystem: args.subsystem.clone(),
        local_name: args.local_name.clone(),
    };
    let config = match load(&context) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skua config_val: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = io::stdout().lock();
    if args.config {
        let env = skua_daemon::system_config::environment();
        let main = skua_daemon::system_config::main_file(&env);
        let _ = write!(
            out,
            "{}",
            render_config_sources(main.as_deref(), &config_files(&config))
        );
        return ExitCode::SUCCESS;
    }
    if args.dump {
        let words: Vec<String> = args.names.iter().map(|n| n.to_ascii_lowercase()).collect();
        let host = skua_daemon::host_name();
        let _ = writeln!(out, "# Configuration from machine: {host}");
        if !words.is_empty() {
            let _ = writeln!(
                out,
                "\n# Parameters with names that match {}:",
                args.names.join(" ")
            );
        }
        let dump = DumpArgs {
            context: Context {
                subsystem: None,
                local_name: None,
            },
            verbose: args.verbose,
            raw: false,
            defaults: false,
        };
        for knob in config.defined_knobs() {
            let lower = knob.name.to_ascii_lowercase();
            if words.is_empty() || words.iter().any(|w| lower.contains(w.as_str())) {
                let _ = print_knob(&mut out, &config, &knob, &dump);
            }
        }
        return ExitCode::SUCCESS;
    }
    if args.names.is_empty() {
        eprintln!("skua config_val: give the names of knobs, -dump or -config (see -help)");
        return ExitCode::from(1);
    }
    let mut code = ExitCode::SUCCESS;
    for name in &args.names {
        match config.get(name) {
            Ok(Some(v)) if args.verbose => {
                let _ = write!(
                    out,
                    "{}",
                    render_verbose(name, &v, config.knob(name).as_ref())
                );
            }
            Ok(Some(v)) => {
                let _ = writeln!(out, "{v}");
            }
            Ok(None) => {
                let _ = out.flush();
                eprintln!("Not defined: {name}");
                code = ExitCode::from(1);
            }
            Err(e) => {
                eprintln!("skua config_val: {name}: {e}");
                code = ExitCode::from(2);
            }
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_sources_list_the_main_file_then_the_others() {
        let files = vec![
            "/etc/skua/skua_config".to_string(),
            "/etc/skua/config.d/10-x".to_string(),
        ];
        assert_eq!(
            render_config_sources(Some("/etc/skua/skua_config"), &files),
            "Configuration source:\n\t/etc/skua/skua_config\n\n\
             Local configuration sources:\n\t/etc/skua/config.d/10-x\n"
        );
        assert_eq!(
            render_config_sources(Some("/c"), &["/c".to_string()]),
            "Configuration source:\n\t/c\n"
        );
    }

    #[test]
    fn verbose_value_says_where_and_how_it_was_written() {
        let knob = Knob {
            name: "START".into(),
            raw: "$(X) && true".into(),
            origin: Origin::Environment {
                variable: "_CONDOR_START".into(),
            },
        };
        assert_eq!(
            render_verbose("start", "1 && true", Some(&knob)),
            "start = 1 && true\n # at: environment variable _CONDOR_START\n # raw: START = $(X) && true\n"
        );
        assert_eq!(render_verbose("X", "1", None), "X = 1\n");
    }
}
