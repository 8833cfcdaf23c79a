//! `skuad master`: starts the daemons of `DAEMON_LIST` as child processes,
//! restarts them as the [`Supervisor`] decides, answers `skua
//! off|on|restart|reconfig`, advertises a Master ad, and stops everything on
//! SIGTERM.
//!
//! The shell's loop owns the supervisor and the children's pids: the
//! command handler and the tasks waiting for children send it an [`Event`],
//! it feeds the supervisor (with the time since start, by the daemon's
//! clock) and carries out the actions it returns; the Master ad is handed
//! to the advertiser whenever a child starts or exits.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use classad::ClassAd;
use skua_daemon::{Advertiser, Clock, DaemonContext, Listening};
use skua_net::routing::post;
use skua_net::{ApiError, Caller, Json, Routes, State};
use skua_proto::{routes, CommandReply, DaemonCommand, MasterCommand};
use tokio::sync::{mpsc, oneshot, watch, Notify};

use crate::supervisor::{
    self, Action, Command, ExitStatus, LogLevel, Signal, Supervisor, SupervisorConfig,
};

/// What the loop is told: an administrator's command (with its reply) or a
/// child's exit.
enum Event {
    /// `skua off|on|restart|reconfig`; the reply summarizes what was done.
    Command {
        command: Command,
        daemon: Option<String>,
        reply: oneshot::Sender<String>,
    },
    /// A child exited, at `at` by the daemon's clock.
    ChildExited {
        name: String,
        status: ExitStatus,
        at: SystemTime,
    },
}

#[derive(Clone)]
struct HandlerState {
    events: mpsc::UnboundedSender<Event>,
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
    st.events
        .send(Event::Command {
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

/// The Master ad: the common header, `DaemonList`, and each running
/// child's `<NAME>_PID`.
fn master_ad(up: &Listening, daemon_list: &str, pids: &BTreeMap<String, u32>) -> ClassAd {
    let mut ad = up.ad_header("DaemonMaster", &up.host);
    ad.insert_value("DaemonList", daemon_list);
    for (name, pid) in pids {
        ad.insert_value(
            &format!("{}_PID", name.to_ascii_uppercase()),
            i64::from(*pid),
        );
    }
    ad
}

/// Runs the master until the supervisor says every child is gone after a
/// shutdown (`shutdown` turning true, or `skua off master`).
pub async fn serve(
    mut ctx: DaemonContext,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let list = ctx
        .knob("DAEMON_LIST")?
        .unwrap_or_else(|| "MASTER".to_string());
    let mut names = skua_daemon::security::split_list(&list);
    // HTCondor runs the shared port as a daemon of DAEMON_LIST; here the
    // master hosts it itself (USE_SHARED_PORT), so the entry is not a child
    if names.iter().any(|n| n.eq_ignore_ascii_case("SHARED_PORT")) {
        tracing::info!(
            "SHARED_PORT in DAEMON_LIST: the master hosts the shared port itself (USE_SHARED_PORT)"
        );
        names.retain(|n| !n.eq_ignore_ascii_case("SHARED_PORT"));
    }
    let mut sup = Supervisor::new(&names, supervisor_config(&ctx)?).context("DAEMON_LIST")?;
    // the supervisor's time: since the start, by the daemon's clock
    let clock = ctx.clock.clone();
    let origin = clock.now();
    let since_start = |at: SystemTime| at.duration_since(origin).unwrap_or_default();

    let (ev_tx, mut events) = mpsc::unbounded_channel::<Event>();
    let routes = Routes::new()
        .command(&routes::MASTER_COMMAND, post(command))
        .with_state(HandlerState {
            events: ev_tx.clone(),
        });
    // the shared port opens before the children start, so each finds it
    let shared_port = start_shared_port(&mut ctx).await?;
    let up = skua_daemon::bring_up(&ctx, 0, routes)
        .await
        .context("master")?;
    let daemon_list = names.join(", ");
    tracing::info!("master's daemons: {daemon_list}");

    // the Master ad, rebuilt by the loop whenever a child starts or exits
    let mut pids: BTreeMap<String, u32> = BTreeMap::new();
    let changed = Arc::new(Notify::new());
    let (ad_tx, ad_rx) = watch::channel(master_ad(&up, &daemon_list, &pids));
    let (adv_tx, adv_rx) = watch::channel(false);
    let adv_task = tokio::spawn(Advertiser::new(&ctx, "Master", &up.host)?.run(
        move || ad_rx.borrow().clone(),
        ctx.update_interval,
        changed.clone(),
        adv_rx,
    ));
    let publish = |pids: &BTreeMap<String, u32>| {
        ad_tx.send_replace(master_ad(&up, &daemon_list, pids));
        changed.notify_one();
    };

    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut pending = sup.handle(supervisor::Event::Start);
    let mut exit = false;
    let mut shutting_down = false;
    while !exit {
        for action in std::mem::take(&mut pending) {
            match action {
                Action::Spawn { name } => {
                    let event = spawn_child(&ctx, &name, &ev_tx, since_start(clock.now()));
                    if let supervisor::Event::ChildStarted { pid, .. } = &event {
                        pids.insert(name.clone(), *pid);
                        publish(&pids);
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
        // the next tick: the supervisor's next deadline, or a second from
        // now if sooner; an instant on the daemon's clock, not a delay, so
        // a jump of a test's clock before the sleep starts is not lost
        let soon = clock.now() + Duration::from_secs(1);
        let wake_at = sup
            .next_deadline()
            .and_then(|d| origin.checked_add(d))
            .map_or(soon, |at| at.min(soon));
        tokio::select! {
            Some(event) = events.recv() => match event {
                Event::ChildExited { name, status, at } => {
                    tracing::warn!("{name} exited ({status})");
                    pids.remove(&name);
                    publish(&pids);
                    pending = sup.handle(supervisor::Event::ChildExited { name, status, now: since_start(at) });
                }
                Event::Command { command, daemon, reply } => {
                    if command == Command::Reconfig {
                        if let Err(e) = check_configuration() {
                            let _ = reply.send(e);
                            continue;
                        }
                    }
                    pending = sup.handle(supervisor::Event::Command { command, daemon, now: since_start(clock.now()) });
                    let summary = pending.iter().filter_map(|a| match a {
                        Action::Log { level, message } if *level >= LogLevel::Info => Some(message.clone()),
                        Action::GiveUp { message, .. } => Some(message.clone()),
                        Action::Signal { name, signal, .. } => Some(format!("sent {signal} to {name}")),
                        _ => None,
                    }).collect::<Vec<_>>().join("; ");
                    let _ = reply.send(if summary.is_empty() { "done".to_string() } else { summary });
                }
            },
            _ = hup.recv() => {
                tracing::info!("SIGHUP: reconfig");
                if check_configuration().is_ok() {
                    pending = sup.handle(supervisor::Event::Command { command: Command::Reconfig, daemon: None, now: since_start(clock.now()) });
                }
            }
            _ = shutdown.changed(), if !shutting_down => {
                if *shutdown.borrow() {
                    shutting_down = true;
                    tracing::info!("shutting down");
                    pending = sup.handle(supervisor::Event::Shutdown { now: since_start(clock.now()) });
                }
            }
            _ = clock.sleep_until(wake_at) => {
                pending = sup.handle(supervisor::Event::Tick { now: since_start(clock.now()) });
            }
        }
    }
    let _ = adv_tx.send(true);
    // the loop is gone: requests still waiting for it (or queued to it)
    // are answered `unavailable` at once, so the server's graceful stop
    // does not wait out its grace for them
    drop(events);
    let _ = adv_task.await;
    up.shut_down().await;
    if let Some(port) = shared_port {
        port.shutdown().await;
    }
    tracing::info!("master exiting");
    Ok(())
}

/// Opens the host's shared port when `USE_SHARED_PORT` says so (see
/// [`DaemonContext::use_shared_port`]): one TCP port in front of every
/// daemon of the host, the master's own server included. Records its port
/// in the context, from which the children learn it.
async fn start_shared_port(
    ctx: &mut DaemonContext,
) -> anyhow::Result<Option<skua_net::SharedPortHandle>> {
    if !ctx.use_shared_port()? {
        return Ok(None);
    }
    let plan = ctx.listen_plan()?;
    let port = ctx.shared_port_port()?;
    let dir = ctx.daemon_socket_dir()?;
    skua_daemon::context::create_private_dir(&dir)?;
    let mut config = skua_net::SharedPortConfig::new(&dir);
    config.default_id = ctx.shared_port_default_id()?;
    let addr = std::net::SocketAddr::new(plan.bind, port);
    let listener = skua_net::SharedPort::bind(addr, config)
        .await
        .with_context(|| format!("opening the shared port on {addr}"))?;
    let bound = listener.local_addr()?;
    tracing::info!(
        "shared port listening on {bound} (handoff sockets in {})",
        dir.display()
    );
    ctx.shared_port = Some(bound.port());
    Ok(Some(listener.spawn()))
}

/// Spawns one child; reports its exit on `events`.
fn spawn_child(
    ctx: &DaemonContext,
    name: &str,
    events: &mpsc::UnboundedSender<Event>,
    now: Duration,
) -> supervisor::Event {
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
        let mut command = tokio::process::Command::new(&program);
        match ctx.shared_port {
            Some(port) => command.env(skua_daemon::context::SHARED_PORT_ENV, port.to_string()),
            None => command.env_remove(skua_daemon::context::SHARED_PORT_ENV),
        };
        let child = command
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
            let clock: Clock = ctx.clock.clone();
            tokio::spawn(async move {
                let status = match child.wait().await {
                    Ok(s) => exit_status(s),
                    Err(_) => ExitStatus::Code(-1),
                };
                let _ = tx.send(Event::ChildExited {
                    name: n,
                    status,
                    at: clock.now(),
                });
            });
            tracing::info!("started {name} (pid {pid})");
            supervisor::Event::ChildStarted {
                name: name.to_string(),
                pid,
                now,
            }
        }
        Err(e) => {
            tracing::error!("cannot start {name}: {e:#}");
            supervisor::Event::SpawnFailed {
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
