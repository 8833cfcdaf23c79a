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
