//! `skuad master`: starts the daemons of `DAEMON_LIST` as child processes,
//! restarts them as the [`Supervisor`] decides, answers `skua
//! off|on|restart|reconfig`, advertises a Master ad, and stops everything on
//! SIGTERM.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use classad::ClassAd;
use skua_daemon::{now_secs, Advertiser, DaemonContext};
use skua_net::routing::post;
use skua_net::{ApiError, Caller, Json, Listener, Routes, Server, State};
use skua_proto::{routes, CommandReply, DaemonCommand, MasterCommand};
use tokio::sync::{mpsc, oneshot, watch, Notify};

use crate::supervisor::{
    Action, Command, Event, ExitStatus, LogLevel, Signal, Supervisor, SupervisorConfig,
};

/// A request to the supervisor loop from the command handler.
struct CommandRequest {
    command: Command,
    daemon: Option<String>,
    reply: oneshot::Sender<String>,
}

#[derive(Clone)]
struct HandlerState {
    commands: mpsc::UnboundedSender<CommandRequest>,
}

async fn command(
    State(st): State<HandlerState>,
    caller: Caller,
    Json(c): Json<DaemonCommand>,
) -> Result<Json<CommandReply>, ApiError> {
    let command = match c.command {
        MasterCommand::Off => Command::Off,
        MasterCommand::On => Command::On,
        MasterCommand::Restart => Command::Restart,
        MasterCommand::Reconfig => Command::Reconfig,
    };
    tracing::info!(
        "{:?} {} requested by {}",
        c.command,
        c.daemon.as_deref().unwrap_or("(all)"),
        caller.identity
    );
    let (tx, rx) = oneshot::channel();
    st.commands
        .send(CommandRequest {
            command,
            daemon: c.daemon,
            reply: tx,
        })
        .map_err(|_| ApiError::unavailable("the master is shutting down"))?;
    let message = rx
        .await
        .map_err(|_| ApiError::unavailable("the master is shutting down"))?;
    Ok(Json(CommandReply { message }))
}

/// The supervision policy from the configuration (HTCondor's knobs and
/// defaults): `MASTER_BACKOFF_CONSTANT`, `MASTER_BACKOFF_FACTOR`,
/// `MASTER_BACKOFF_CEILING`, `MASTER_RECOVER_FACTOR`,
/// `SHUTDOWN_GRACEFUL_TIMEOUT` (seconds) and Skua's `MASTER_MAX_RESTARTS`.
fn supervisor_config(ctx: &DaemonContext) -> anyhow::Result<SupervisorConfig> {
    let mut c = SupervisorConfig::default();
    let secs = |name: &str, default: Duration| -> anyhow::Result<Duration> {
        Ok(match ctx.knob(name)? {
            Some(v) => Duration::from_secs_f64(
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|f| *f >= 0.0 && f.is_finite())
                    .with_context(|| format!("{name} = {v:?} is not a number of seconds"))?,
            ),
            None => default,
        })
    };
    c.backoff.constant = secs("MASTER_BACKOFF_CONSTANT", c.backoff.constant)?;
    c.backoff.ceiling = secs("MASTER_BACKOFF_CEILING", c.backoff.ceiling)?;
    c.backoff.recover_time = secs("MASTER_RECOVER_FACTOR", c.backoff.recover_time)?;
    c.shutdown_graceful_timeout = secs("SHUTDOWN_GRACEFUL_TIMEOUT", c.shutdown_graceful_timeout)?;
    if let Some(v) = ctx.knob("MASTER_BACKOFF_FACTOR")? {
        c.backoff.factor = v
            .trim()
            .parse()
            .with_context(|| format!("MASTER_BACKOFF_FACTOR = {v:?}"))?;
    }
    if let Some(v) = ctx.knob("MASTER_MAX_RESTARTS")? {
        c.max_restarts = max_restarts(&v)?;
    }
    c.validate()
        .map_err(|e| anyhow::anyhow!("master configuration: {e}"))?;
    Ok(c)
}

/// `MASTER_MAX_RESTARTS`: a whole number of restarts in a row, or a
/// negative one (`-1`) for no limit (HTCondor's behaviour: restart forever).
fn max_restarts(text: &str) -> anyhow::Result<Option<u32>> {
    let n: i64 = text.trim().parse().with_context(|| {
        format!("MASTER_MAX_RESTARTS = {text:?} is not a whole number (-1: no limit)")
    })?;
    if n < 0 {
        return Ok(None);
    }
    u32::try_from(n)
        .map(Some)
        .with_context(|| format!("MASTER_MAX_RESTARTS = {text:?} is too large"))
}

/// Re-reads the configuration before a reconfig is passed on: a broken
/// file is reported (and logged) and the running configuration kept.
fn check_configuration() -> Result<(), String> {
    match skua_daemon::system_config::load(Some("MASTER"), None) {
        Ok(_) => Ok(()),
        Err(e) => {
            let msg = format!("configuration error, keeping the running configuration: {e}");
            tracing::error!("{msg}");
            Err(msg)
        }
    }
}

/// The program and arguments that run daemon `name`: the `<NAME>` and
/// `<NAME>_ARGS` knobs, else this executable with the role.
fn program_for(ctx: &DaemonContext, name: &str) -> anyhow::Result<(PathBuf, Vec<String>)> {
    let upper = name.to_ascii_uppercase();
    let exe = std::env::current_exe().context("locating skuad")?;
    // `STARTD = $(SBIN)/condor_startd` and the like in HTCondor's default
    // table name programs Skua does not have: only a configured program
    // replaces `skuad <role>`.
    let program = ctx
        .configured_knob(&upper)?
        .map(PathBuf::from)
        .unwrap_or(exe);
    let args = match ctx.configured_knob(&format!("{upper}_ARGS"))? {
        Some(a) => a.split_whitespace().map(str::to_string).collect(),
        None => vec![name.to_ascii_lowercase()],
    };
    Ok((program, args))
}

fn exit_status(s: std::process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => ExitStatus::Code(c),
        (None, Some(sig)) => ExitStatus::Signal(sig),
        (None, None) => ExitStatus::Code(-1),
    }
}

struct Children {
    pids: BTreeMap<String, u32>,
}

/// Runs the master until the supervisor says every child is gone after a
/// shutdown (`shutdown` turning true, or `skua off master`).
pub async fn serve(ctx: DaemonContext, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let list = ctx
        .knob("DAEMON_LIST")?
        .unwrap_or_else(|| "MASTER".to_string());
    let names = skua_daemon::security::split_list(&list);
    let mut sup = Supervisor::new(&names, supervisor_config(&ctx)?).context("DAEMON_LIST")?;
    let origin = Instant::now();
    let start_time = now_secs();

    let (cmd_tx, mut cmd_rx) = mpsc::unbounded_channel::<CommandRequest>();
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<Event>();

    let tcp = ctx.tcp_listener(0).await.context("master")?;
    let sock = ctx.socket_path()?;
    let unix = Listener::unix(&sock)
        .await
        .context("master: binding its Unix socket")?;
    let routes = Routes::new()
        .command(&routes::MASTER_COMMAND, post(command))
        .with_state(HandlerState { commands: cmd_tx });
    let handle = Server::new(ctx.server_config(), routes)?.spawn(vec![tcp, unix]);
    let addr = handle.local_addr().context("master: no TCP address")?;
    let addr_file = ctx.address_file()?;
    skua_daemon::write_address_file(&addr_file, addr)?;
    tracing::info!(
        "master listening on {addr} and {}; daemons: {}",
        sock.display(),
        names.join(", ")
    );

    // the Master ad
    let host = skua_daemon::system_config::host_facts(&skua_daemon::system_config::environment())
        .get("FULL_HOSTNAME")
        .cloned()
        .unwrap_or_else(|| "localhost".into());
    let children = Arc::new(Mutex::new(Children {
        pids: BTreeMap::new(),
    }));
    let changed = Arc::new(Notify::new());
    let (adv_tx, adv_rx) = watch::channel(false);
    let advertiser = Advertiser::new(&ctx, "Master", &host)?;
    let ad_children = children.clone();
    let daemon_list = names.join(", ");
    let my_addr = format!("<{addr}>");
    let ad_host = host.clone();
    let adv_task = tokio::spawn(advertiser.run(
        move || {
            let mut ad = ClassAd::new();
            ad.insert_value("MyType", "DaemonMaster");
            ad.insert_value("Name", ad_host.as_str());
            ad.insert_value("Machine", ad_host.as_str());
            ad.insert_value("MyAddress", my_addr.as_str());
            ad.insert_value("DaemonStartTime", start_time);
            ad.insert_value("DaemonList", daemon_list.as_str());
            let pids = ad_children
                .lock()
                .map(|c| c.pids.clone())
                .unwrap_or_default();
            for (name, pid) in pids {
                ad.insert_value(&format!("{}_PID", name.to_ascii_uppercase()), pid as i64);
            }
            ad.insert_value(
                "CondorVersion",
                concat!("$SkuaVersion: ", env!("CARGO_PKG_VERSION"), " $"),
            );
            ad
        },
        ctx.update_interval,
        changed.clone(),
        adv_rx,
    ));

    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let now = |o: Instant| o.elapsed();
    let mut pending = sup.handle(Event::Start);
    let mut exit = false;
    let mut shutting_down = false;
    while !exit {
        for action in std::mem::take(&mut pending) {
            match action {
                Action::Spawn { name } => {
                    let event = spawn_child(&ctx, &name, &ev_tx, now(origin));
                    if let Event::ChildStarted { pid, .. } = &event {
                        if let Ok(mut c) = children.lock() {
                            c.pids.insert(name.clone(), *pid);
                        }
                        changed.notify_one();
                    }
                    pending.extend(sup.handle(event));
                }
                Action::Signal { name, pid, signal } => {
                    let sig = match signal {
                        Signal::Term => nix::sys::signal::Signal::SIGTERM,
                        Signal::Kill => nix::sys::signal::Signal::SIGKILL,
                        Signal::Hup => nix::sys::signal::Signal::SIGHUP,
                    };
                    tracing::info!("sending {signal} to {name} (pid {pid})");
                    if let Ok(p) = i32::try_from(pid) {
                        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), sig);
                    }
                }
                Action::Log { level, message } => match level {
                    LogLevel::Debug => tracing::debug!("{message}"),
                    LogLevel::Info => tracing::info!("{message}"),
                    LogLevel::Warn => tracing::warn!("{message}"),
                    LogLevel::Error => tracing::error!("{message}"),
                },
                Action::GiveUp { name, message } => {
                    tracing::error!("giving up on {name}: {message}");
                }
                Action::Exit => exit = true,
            }
        }
        if exit {
            break;
        }
        let wait = sup
            .next_deadline()
            .map(|d| d.saturating_sub(now(origin)))
            .unwrap_or(Duration::from_secs(1))
            .min(Duration::from_secs(1));
        tokio::select! {
            Some(ev) = ev_rx.recv() => {
                if let Event::ChildExited { name, status, .. } = &ev {
                    tracing::warn!("{name} exited ({status})");
                    if let Ok(mut c) = children.lock() { c.pids.remove(name); }
                    changed.notify_one();
                }
                pending = sup.handle(ev);
            }
            Some(req) = cmd_rx.recv() => {
                if req.command == Command::Reconfig {
                    if let Err(e) = check_configuration() {
                        let _ = req.reply.send(e);
                        continue;
                    }
                }
                pending = sup.handle(Event::Command { command: req.command, daemon: req.daemon, now: now(origin) });
                let summary = pending.iter().filter_map(|a| match a {
                    Action::Log { level, message } if *level >= LogLevel::Info => Some(message.clone()),
                    Action::GiveUp { message, .. } => Some(message.clone()),
                    Action::Signal { name, signal, .. } => Some(format!("sent {signal} to {name}")),
                    _ => None,
                }).collect::<Vec<_>>().join("; ");
                let _ = req.reply.send(if summary.is_empty() { "done".to_string() } else { summary });
            }
            _ = hup.recv() => {
                tracing::info!("SIGHUP: reconfig");
                if check_configuration().is_ok() {
                    pending = sup.handle(Event::Command { command: Command::Reconfig, daemon: None, now: now(origin) });
                }
            }
            _ = shutdown.changed(), if !shutting_down => {
                if *shutdown.borrow() {
                    shutting_down = true;
                    tracing::info!("shutting down");
                    pending = sup.handle(Event::Shutdown { now: now(origin) });
                }
            }
            _ = tokio::time::sleep(wait) => {
                pending = sup.handle(Event::Tick { now: now(origin) });
            }
        }
    }
    let _ = adv_tx.send(true);
    let _ = adv_task.await;
    let _ = std::fs::remove_file(&addr_file);
    handle.shutdown().await;
    tracing::info!("master exiting");
    Ok(())
}

/// Spawns one child; reports its exit on `events`.
fn spawn_child(
    ctx: &DaemonContext,
    name: &str,
    events: &mpsc::UnboundedSender<Event>,
    now: Duration,
) -> Event {
    let spawned = (|| -> anyhow::Result<tokio::process::Child> {
        let (program, args) = program_for(ctx, name)?;
        // a daemon's address file is removed before it starts, so a file
        // that exists was written by the daemon now running
        if let Ok(f) = skua_daemon::context::address_file(&ctx.config, name) {
            let _ = std::fs::remove_file(f);
        }
        let log = ctx
            .log_dir
            .join(format!("{}.out", name.to_ascii_lowercase()));
        let out = skua_daemon::logging::open_private_append(&log)
            .with_context(|| format!("opening {}", log.display()))?;
        let err = out.try_clone()?;
        let child = tokio::process::Command::new(&program)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {} {}", program.display(), args.join(" ")))?;
        Ok(child)
    })();
    match spawned {
        Ok(mut child) => {
            let pid = child.id().unwrap_or(0);
            let tx = events.clone();
            let n = name.to_string();
            let origin_offset = now;
            let started = Instant::now();
            tokio::spawn(async move {
                let status = match child.wait().await {
                    Ok(s) => exit_status(s),
                    Err(_) => ExitStatus::Code(-1),
                };
                let _ = tx.send(Event::ChildExited {
                    name: n,
                    status,
                    now: origin_offset + started.elapsed(),
                });
            });
            tracing::info!("started {name} (pid {pid})");
            Event::ChildStarted {
                name: name.to_string(),
                pid,
                now,
            }
        }
        Err(e) => {
            tracing::error!("cannot start {name}: {e:#}");
            Event::SpawnFailed {
                name: name.to_string(),
                error: format!("{e:#}"),
                now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn max_restarts_minus_one_means_no_limit() {
        assert_eq!(super::max_restarts("-1").unwrap(), None);
        assert_eq!(super::max_restarts(" -5 ").unwrap(), None);
        assert_eq!(super::max_restarts("0").unwrap(), Some(0));
        assert_eq!(super::max_restarts("12").unwrap(), Some(12));
        let e = super::max_restarts("often").unwrap_err().to_string();
        assert!(e.contains("MASTER_MAX_RESTARTS"), "{e}");
        assert!(super::max_restarts("99999999999").is_err());
    }
}
