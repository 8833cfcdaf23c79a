//! The `skua` user commands and the `skuad` daemon launcher.
//!
//! Binaries are thin: `crates/skua/src/bin/*.rs` call [`main_skua`] and
//! [`main_skuad`]; argument parsing and output formats live here.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod ad_output;
mod chirp_cmd;
mod classad_cmd;
mod config_cmd;
mod evicted_cmd;
mod join_cmd;
mod openmpi_cmd;
mod pool_cmd;
mod print_fmt;
mod q_fmt;
mod q_source;
mod queue_cmd;
mod spool_cmd;
mod startd_cmd;
mod status_fmt;
mod submit_checks;
mod submit_cmd;
mod table;
mod tools_cmd;
mod userprio;
mod watch_cmd;
mod watch_view;

pub use submit_cmd::build_submission;

/// Skua: a high-throughput batch system speaking HTCondor's language.
#[derive(Parser)]
#[command(name = "skua", version = skua_proto::SKUA_VERSION, about, infer_long_args = true)]
struct SkuaCli {
    #[command(subcommand)]
    command: SkuaCommand,
}

#[derive(Subcommand)]
enum SkuaCommand {
    /// Evaluate ClassAd expressions.
    #[command(subcommand)]
    Classad(classad_cmd::ClassadCommand),
    /// Query the configuration (HTCondor's configuration language).
    Config(config_cmd::ConfigArgs),
    /// List the pool's machines (or other daemons' ads), like condor_status.
    Status(pool_cmd::StatusArgs),
    /// Start or stop a personal pool.
    #[command(subcommand)]
    Pool(pool_cmd::PoolCommand),
    /// Turn a submit description into jobs (`-dry-run` prints the job ads), like condor_submit.
    Submit(submit_cmd::SubmitArgs),
    /// Issue tokens.
    #[command(subcommand)]
    Token(pool_cmd::TokenCommand),
    /// Stop a daemon (or all) through the master.
    Off(pool_cmd::DaemonArgs),
    /// Start a daemon (or all) again through the master.
    On(pool_cmd::DaemonArgs),
    /// Restart a daemon (or all) through the master.
    Restart(pool_cmd::DaemonArgs),
    /// Make the daemons re-read their configuration.
    Reconfig(pool_cmd::DaemonArgs),
    /// Show the job queue, like condor_q.
    Q(queue_cmd::QArgs),
    /// Remove jobs, like condor_rm.
    Rm(queue_cmd::ActArgs),
    /// Hold jobs, like condor_hold.
    Hold(queue_cmd::ActArgs),
    /// Release held jobs, like condor_release.
    Release(queue_cmd::ActArgs),
    /// Jobs that left the queue, like condor_history.
    History(queue_cmd::HistoryArgs),
    /// Change job attributes, like condor_qedit.
    Qedit(queue_cmd::QeditArgs),
    /// Change job priorities, like condor_prio.
    #[command(allow_negative_numbers = true)]
    Prio(queue_cmd::PrioArgs),
    /// The owner takes machines back: evict the jobs of slots, like condor_vacate.
    Vacate(startd_cmd::VacateArgs),
    /// Drain machines (or cancel draining), like condor_drain.
    Drain(startd_cmd::DrainArgs),
    /// Show or change user priorities, like condor_userprio.
    Userprio(userprio::UserprioArgs),
    /// A job's stored checkpoint (dir, list, get), like condor_evicted_files.
    #[command(name = "evicted_files", subcommand)]
    EvictedFiles(evicted_cmd::EvictedCommand),
    /// Authenticate to a daemon and show what it grants, like condor_ping.
    Ping(tools_cmd::PingArgs),
    /// The jobs running on this machine's slots, like condor_who.
    Who(tools_cmd::WhoArgs),
    /// Skua's version in HTCondor's form, like condor_version.
    Version(tools_cmd::VersionArgs),
    /// Ask the negotiator for a negotiation cycle now, like condor_reschedule.
    Reschedule(tools_cmd::RescheduleArgs),
    /// Inside a job: remote I/O on the submit side, like condor_chirp.
    Chirp(chirp_cmd::ChirpArgs),
    /// A parallel job's Open MPI wrapper and mpirun's launcher agent (openmpiscript).
    Openmpi(openmpi_cmd::OpenMpiArgs),
    /// Print configuration values, like condor_config_val (`skua config get`).
    #[command(name = "config_val")]
    ConfigVal(config_cmd::ConfigValArgs),
    /// Show a running job's output, like condor_tail.
    Tail(watch_cmd::TailArgs),
    /// Run a command in a running job's sandbox as its user, like condor_ssh_to_job.
    #[command(name = "ssh_to_job")]
    SshToJob(watch_cmd::SshArgs),
    /// Wait for the jobs of a job event log to end, like condor_wait.
    Wait(watch_cmd::WaitArgs),
    /// Follow jobs through their event logs, like condor_watch_q.
    #[command(name = "watch_q")]
    WatchQ(watch_cmd::WatchQArgs),
    /// Fetch the output of jobs submitted with -spool, like condor_transfer_data.
    #[command(name = "transfer_data")]
    TransferData(spool_cmd::TransferDataArgs),
}

/// Commands whose long options may be written with one dash, as
/// HTCondor's tools take them.
const HTCONDOR_STYLE_COMMANDS: &[&str] = &[
    "status",
    "q",
    "rm",
    "hold",
    "release",
    "history",
    "qedit",
    "prio",
    "submit",
    "vacate",
    "drain",
    "userprio",
    "token",
    "ping",
    "who",
    "version",
    "config_val",
    "reschedule",
    "tail",
    "wait",
    "watch_q",
    "transfer_data",
];

/// The command line as clap is given it, and the spelling the user typed
/// of each argument rewritten for clap (`--total` typed as `-total`).
struct Rewritten {
    args: Vec<std::ffi::OsString>,
    typed: Vec<(String, String)>,
    single_dash: bool,
}

/// HTCondor's tools take long options with one dash (`-constraint`,
/// `-af`); accept them as well as `--constraint`. `-af:QUALIFIERS` (and
/// `-autoformat:`) becomes `--af-qualifiers=QUALIFIERS --af`; `-help`
/// asks for help with every command.
fn htcondor_style_args(args: impl Iterator<Item = std::ffi::OsString>) -> Rewritten {
    let mut out = Rewritten {
        args: Vec::new(),
        typed: Vec::new(),
        single_dash: false,
    };
    let mut htcondor_style = false;
    let mut after_double_dash = false;
    for a in args {
        let s = a.to_string_lossy().into_owned();
        if out.args.len() == 1 {
            htcondor_style = HTCONDOR_STYLE_COMMANDS.contains(&s.as_str());
        }
        if s == "--" {
            after_double_dash = true;
        }
        if after_double_dash || out.args.is_empty() {
            out.args.push(a);
            continue;
        }
        if s == "-help" {
            out.typed.push(("--help".into(), s));
            out.args.push("--help".into());
            continue;
        }
        if htcondor_style
            && s.len() > 2
            && s.starts_with('-')
            && !s.starts_with("--")
            && s.as_bytes()[1].is_ascii_alphabetic()
        {
            out.single_dash = true;
            let name = &s[1..];
            if let Some((opt, quals)) = name.split_once(':') {
                if opt == "af" || opt == "autoformat" {
                    out.args.push(format!("--af-qualifiers={quals}").into());
                    out.typed.push(("--af".into(), s.clone()));
                    out.typed.push(("--af-qualifiers".into(), s));
                    out.args.push("--af".into());
                    continue;
                }
            }
            let mapped = format!("--{name}");
            let flag = mapped.split('=').next().unwrap_or(&mapped).to_string();
            let typed = s.split('=').next().unwrap_or(&s).to_string();
            out.typed.push((flag, typed));
            out.args.push(mapped.into());
        } else {
            out.args.push(a);
        }
    }
    out
}

/// A clap error's message with each option quoted as the user typed it
/// (`'-total'`, not `'--total'`); with one-dash options on the command
/// line, clap's suggestions are spelled with one dash too.
fn as_typed(message: &str, rw: &Rewritten) -> String {
    let mut msg = message.to_string();
    for (mapped, typed) in &rw.typed {
        for end in ['\'', ' ', '=', '<'] {
            msg = msg.replace(&format!("'{mapped}{end}"), &format!("'{typed}{end}"));
        }
    }
    if rw.single_dash {
        msg = msg
            .split_inclusive('\n')
            .map(|line| {
                let line = line.replace("'--", "'-");
                if line.starts_with("Usage:") {
                    line.replace(" --", " -")
                } else {
                    line
                }
            })
            .collect();
    }
    msg
}

/// Whether this command line spells long options with one dash (HTCondor's
/// way): the commands' own messages then name options that way too.
static ONE_DASH: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// A long option's name as the user's command line spells options
/// (`-join` or `--join`), for the commands' own error messages.
pub(crate) fn opt(name: &str) -> String {
    if ONE_DASH.get().copied().unwrap_or(false) {
        format!("-{name}")
    } else {
        format!("--{name}")
    }
}

/// Entry point of the `skua` binary.
pub fn main_skua() -> ExitCode {
    let rw = htcondor_style_args(std::env::args_os());
    let _ = ONE_DASH.set(rw.single_dash);
    let cli = match SkuaCli::try_parse_from(&rw.args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            eprint!("{}", as_typed(&e.render().to_string(), &rw));
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match cli.command {
        SkuaCommand::Classad(cmd) => classad_cmd::run(cmd),
        SkuaCommand::Config(args) => config_cmd::run(args),
        SkuaCommand::ConfigVal(args) => config_cmd::config_val(args),
        SkuaCommand::Status(args) => pool_cmd::status(args),
        SkuaCommand::Pool(cmd) => pool_cmd::pool(cmd),
        SkuaCommand::Token(cmd) => pool_cmd::token(cmd),
        SkuaCommand::Submit(args) => submit_cmd::run(args),
        SkuaCommand::TransferData(args) => spool_cmd::run(args),
        SkuaCommand::Off(a) => pool_cmd::master_command(skua_proto::MasterCommand::Off, a),
        SkuaCommand::On(a) => pool_cmd::master_command(skua_proto::MasterCommand::On, a),
        SkuaCommand::Restart(a) => pool_cmd::master_command(skua_proto::MasterCommand::Restart, a),
        SkuaCommand::Reconfig(a) => {
            pool_cmd::master_command(skua_proto::MasterCommand::Reconfig, a)
        }
        SkuaCommand::Q(a) => queue_cmd::q(a),
        SkuaCommand::Rm(a) => queue_cmd::act(skua_proto::JobActionKind::Remove, a),
        SkuaCommand::Hold(a) => queue_cmd::act(skua_proto::JobActionKind::Hold, a),
        SkuaCommand::Release(a) => queue_cmd::act(skua_proto::JobActionKind::Release, a),
        SkuaCommand::History(a) => queue_cmd::history(a),
        SkuaCommand::Qedit(a) => queue_cmd::qedit(a),
        SkuaCommand::Prio(a) => queue_cmd::prio(a),
        SkuaCommand::Vacate(a) => startd_cmd::vacate(a),
        SkuaCommand::Drain(a) => startd_cmd::drain(a),
        SkuaCommand::Userprio(a) => userprio::run(a),
        SkuaCommand::EvictedFiles(c) => evicted_cmd::run(c),
        SkuaCommand::Ping(a) => tools_cmd::ping(a),
        SkuaCommand::Who(a) => tools_cmd::who(a),
        SkuaCommand::Version(a) => tools_cmd::version(a),
        SkuaCommand::Reschedule(a) => tools_cmd::reschedule(a),
        SkuaCommand::Tail(a) => watch_cmd::tail(a),
        SkuaCommand::SshToJob(a) => watch_cmd::ssh_to_job(a),
        SkuaCommand::Wait(a) => watch_cmd::wait(a),
        SkuaCommand::WatchQ(a) => watch_cmd::watch_q(a),
        SkuaCommand::Chirp(a) => chirp_cmd::run(a),
        SkuaCommand::Openmpi(a) => openmpi_cmd::run(a),
    }
}

/// `skuad`: runs a daemon by role.
#[derive(Parser)]
#[command(name = "skuad", version = skua_proto::SKUA_VERSION, about)]
struct SkuadCli {
    /// The daemon to run: `master`, `collector`, `negotiator`, `schedd`,
    /// `startd` or `starter` (one job; its spec as JSON on standard input).
    role: String,
}

/// The daemon roles `skuad` can run.
pub const DAEMON_ROLES: &[&str] = &[
    "master",
    "collector",
    "negotiator",
    "schedd",
    "startd",
    "starter",
];

/// The log filter of a `<SUBSYS>_DEBUG` value: HTCondor's category flags
/// (`D_FULLDEBUG`, `D_ALL`: debug; other `D_` flags: info), else a
/// `tracing` filter (`info`, `skua_schedd=debug`...).
fn log_filter(value: &str) -> String {
    let tokens: Vec<&str> = value
        .split(|c: char| c == ',' || c == '|' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        return "info".into();
    }
    if tokens
        .iter()
        .any(|t| t.to_ascii_uppercase().starts_with("D_"))
    {
        let verbose = tokens.iter().any(|t| {
            let t = t.to_ascii_uppercase();
            t.starts_with("D_FULLDEBUG") || t.starts_with("D_ALL")
        });
        return if verbose { "debug" } else { "info" }.into();
    }
    value.trim().to_string()
}

/// `skua reconfig` reaches a daemon as SIGHUP (the master forwards it).
/// The master and the collector apply a new configuration themselves; for
/// the others this re-reads and checks it, reports a broken file (the
/// running configuration stays), and says which knobs wait for a restart.
/// Without it SIGHUP's default action would kill the daemon.
fn reconfig_on_sighup(subsystem: String) {
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            tracing::warn!("cannot listen for SIGHUP: reconfig will not reach this daemon");
            return;
        };
        while hup.recv().await.is_some() {
            match skua_daemon::DaemonContext::load(&subsystem) {
                Ok(_) => tracing::info!(
                    "reconfig: configuration re-read and valid; this daemon applies changed \
                     knobs when it restarts (skua restart {})",
                    subsystem.to_ascii_lowercase()
                ),
                Err(e) => tracing::error!(
                    "reconfig: configuration error, keeping the running configuration: {e}"
                ),
            }
        }
    });
}

/// Entry point of the `skuad` binary.
pub fn main_skuad() -> ExitCode {
    // the built-in file-transfer plugin (HTCondor's plugin arguments)
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("transfer_plugin") {
        let code = skua_starter::plugins::builtin_main(&args[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let cli = SkuadCli::parse();
    let role = cli.role.to_ascii_lowercase();
    if !DAEMON_ROLES.contains(&role.as_str()) {
        eprintln!(
            "skuad: unknown daemon role `{}` (known: {})",
            cli.role,
            DAEMON_ROLES.join(", ")
        );
        return ExitCode::from(2);
    }
    let subsystem = role.to_ascii_uppercase();
    if role == "master" {
        match pool_cmd::personal_pool_without_config() {
            Ok(Some(dir)) => eprintln!(
                "skuad master: no configuration file found; running the personal pool in {}",
                dir.display()
            ),
            Ok(None) => {}
            Err(e) => {
                eprintln!("skuad master: {e:#}");
                return ExitCode::from(2);
            }
        }
    }
    // An invalid configuration stops the daemon before it starts.
    let ctx = match skua_daemon::DaemonContext::load(&subsystem) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skuad {role}: {e}");
            return ExitCode::from(2);
        }
    };
    let filter = ctx
        .knob(&format!("{subsystem}_DEBUG"))
        .ok()
        .flatten()
        .map(|v| log_filter(&v))
        .or_else(|| std::env::var("SKUA_LOG").ok())
        .unwrap_or_else(|| "info".to_string());
    let configured = ctx.knob(&format!("{subsystem}_LOG")).ok().flatten();
    let (log_dir, log_name) =
        skua_daemon::logging::log_location(&ctx.log_dir, &subsystem, configured.as_deref());
    let _log = match skua_daemon::logging::init(&log_dir, &log_name, &filter, 7) {
        Ok(g) => g,
        Err(e) => {
            eprintln!(
                "skuad {role}: cannot open its log {} in {}: {e}",
                log_name,
                log_dir.display()
            );
            return ExitCode::from(2);
        }
    };
    // A starter serves one claim, one job at a time: one thread is plenty,
    // and a small process forks its jobs faster.
    let runtime = if role == "starter" {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skuad {role}: {e}");
            return ExitCode::from(1);
        }
    };
    if role == "starter" {
        return runtime.block_on(starter_main(ctx));
    }
    let result = runtime.block_on(async move {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                return;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            tracing::info!("termination signal received");
            let _ = tx.send(true);
        });
        if !matches!(role.as_str(), "master" | "collector") {
            reconfig_on_sighup(subsystem.clone());
        }
        match role.as_str() {
            "master" => skua_master::daemon::serve(ctx, rx).await,
            "schedd" => skua_schedd::daemon::serve(ctx, rx).await,
            "negotiator" => skua_negotiator::daemon::serve(ctx, rx).await,
            "startd" => skua_startd::daemon::serve(ctx, rx).await,
            _ => skua_collector::daemon::serve(ctx, rx).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("skuad {}: {e:#}", cli.role);
            ExitCode::from(1)
        }
    }
}

/// `skuad starter`: one JSON document ([`skua_proto::StarterSpec`]) per
/// job on standard input, the first at once; a [`skua_proto::StarterDone`]
/// line on standard output when a job's run is over. The end of standard
/// input means the claim is over (between jobs) or the startd is gone
/// (during one: the job is killed).
async fn starter_main(ctx: skua_daemon::DaemonContext) -> ExitCode {
    // The signals first: none of them may take its default action.
    let signals = match skua_starter::Signals::install() {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("cannot install signal handlers: {e}");
            return ExitCode::from(1);
        }
    };
    let (spec_tx, spec_rx) = tokio::sync::mpsc::unbounded_channel();
    let (first_tx, first_rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        let mut docs = serde_json::Deserializer::from_reader(&mut lock)
            .into_iter::<skua_proto::StarterMessage>();
        let first = docs.next().map(|d| match d {
            Ok(skua_proto::StarterMessage::Job(spec)) => Ok(spec),
            Ok(_) => Err("the first message is not a job".to_string()),
            Err(e) => Err(e.to_string()),
        });
        let _ = first_tx.send(first);
        for doc in docs {
            match doc {
                Ok(msg) => {
                    if spec_tx.send(msg).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    tracing::error!("a bad starter spec on standard input: {e}");
                    break;
                }
            }
        }
        // dropping the sender tells the starter standard input is over
    });
    let spec = match first_rx.await {
        Ok(Some(Ok(spec))) => spec,
        Ok(Some(Err(e))) => {
            tracing::error!("cannot read the starter spec from standard input: {e}");
            eprintln!("skuad starter: cannot read the spec from standard input: {e}");
            return ExitCode::from(2);
        }
        _ => {
            tracing::error!("no starter spec on standard input");
            eprintln!("skuad starter: no spec on standard input");
            return ExitCode::from(2);
        }
    };
    let inbox = skua_starter::Inbox::new(spec_rx);
    let done = |d: &skua_proto::StarterDone| -> bool {
        use std::io::Write as _;
        let Ok(line) = serde_json::to_string(d) else {
            return false;
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").is_ok() && out.flush().is_ok()
    };
    match skua_starter::run(ctx, spec, signals, inbox, done).await {
        Ok(0) => ExitCode::SUCCESS,
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("skuad starter: {e:#}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod log_filter_tests {
    use super::log_filter;

    #[test]
    fn htcondor_debug_flags_become_levels() {
        assert_eq!(log_filter("D_PID"), "info");
        assert_eq!(log_filter("D_MATCH D_FULLDEBUG"), "debug");
        assert_eq!(log_filter("D_ALL:2"), "debug");
        assert_eq!(log_filter(""), "info");
        assert_eq!(log_filter("skua_schedd=debug"), "skua_schedd=debug");
    }
}
