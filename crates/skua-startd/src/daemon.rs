//! `skuad startd`: the shell around `skua-slot`, brought up by [`serve`].
//!
//! The shell is split by concern: [`crate::event`] (the one closed
//! `Event` enum), [`crate::shell`] (the loop that owns the slots and
//! handles the events), [`crate::routes`] (requests become events),
//! [`crate::starters`] (starter processes), [`crate::poll`] (the
//! `POLLING_INTERVAL` timer and the owner's activity), [`crate::cron`]
//! (STARTD_CRON scripts), [`crate::advertise`] (the coalescing advertiser)
//! and [`crate::peers`] (every client to another daemon). `serve` measures
//! the machine, builds the core, binds, starts those tasks and runs the
//! loop until shutdown.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use skua_daemon::DaemonContext;
use skua_slot::{Machine, StartdConfig};
use tokio::sync::{mpsc, watch};

use crate::advertise::Advertiser;
use crate::cron;
use crate::event::Event;
use crate::facts::{self, FactSources};
use crate::peers::Peers;
use crate::poll::{self, Poller};
use crate::shell::Shell;
use crate::starters::{self, StarterSetup};

/// Runs the startd until `shutdown` turns true.
pub async fn serve(ctx: DaemonContext, shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let clock = ctx.clock.clone();
    let start = clock.now_secs();
    let speed = tokio::task::spawn_blocking(crate::bench::measure);
    let execute = PathBuf::from(
        ctx.knob("EXECUTE")?
            .context("EXECUTE is not defined: the startd runs jobs there")?,
    );
    std::fs::create_dir_all(&execute).with_context(|| format!("creating {}", execute.display()))?;
    starters::clean_execute(&execute);
    skua_daemon::cgroup::clean_leftover_job_groups(
        &ctx.knob("BASE_CGROUP")?.unwrap_or_default(),
        &execute,
    );
    // the transparent checkpoint backends: checked once (criu check)
    let checkpoint = {
        let configured = ctx.knob("SKUA_CHECKPOINT_BACKENDS")?;
        let criu = ctx.knob("SKUA_CRIU")?;
        let can_seal = matches!(
            skua_daemon::security::load_signing_key(&ctx.config, false),
            Ok(Some(_))
        );
        tokio::task::spawn_blocking(move || {
            facts::detect_checkpoint_backends(configured.as_deref(), criu.as_deref(), can_seal)
        })
        .await
        .context("checking the checkpoint backends")?
    };
    // the file-transfer plugins' schemes: asked once (`-classad`)
    let transfer_plugin_methods = {
        let site =
            skua_starter::plugins::site_plugins(ctx.knob("FILETRANSFER_PLUGINS")?.as_deref());
        let builtin = std::env::current_exe()
            .ok()
            .map(skua_starter::plugins::Plugin::builtin);
        tokio::task::spawn_blocking(move || {
            skua_starter::plugins::PluginTable::discover(builtin, &site).methods()
        })
        .await
        .context("asking the file-transfer plugins")?
    };
    let host = skua_daemon::host_name();
    let sources = FactSources {
        execute: execute.clone(),
        console_devices: ctx
            .knob("CONSOLE_DEVICES")?
            .unwrap_or_default()
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .collect(),
        hostname: host.clone(),
        filesystem_domain: ctx
            .knob("FILESYSTEM_DOMAIN")?
            .unwrap_or_else(|| host.clone()),
        uid_domain: ctx.knob("UID_DOMAIN")?.unwrap_or_else(|| host.clone()),
        start_time: start,
        checkpoint,
        transfer_plugin_methods,
    };
    let mut facts = facts::measure(&sources);
    (facts.mips, facts.kflops) = crate::bench::results(speed).await;
    let knob = |name: &str| ctx.knob(name).ok().flatten();
    let config = StartdConfig::from_knobs(&knob, &facts).context("startd configuration")?;
    let cron_jobs = cron::jobs(&knob).map_err(|e| anyhow::anyhow!("startd configuration: {e}"))?;
    let setup = StarterSetup::from_context(&ctx, execute.clone())?;
    let peers = Peers::new(&ctx).context("startd")?;
    let mut machine = Machine::new(facts, config, start);

    let (events_tx, events) = mpsc::channel::<Event>(256);
    let access = crate::job_access::Access {
        enable_ssh: match ctx.knob("ENABLE_SSH_TO_JOB")? {
            Some(v) if !v.trim().is_empty() => Some(
                classad::parse_expr(v.trim())
                    .map_err(|e| anyhow::anyhow!("ENABLE_SSH_TO_JOB = {v:?}: {e}"))?,
            ),
            _ => None,
        },
        as_user: skua_daemon::account::AsUser::new(),
    };
    let up = skua_daemon::bring_up(&ctx, 0, crate::routes::routes(events_tx.clone(), access))
        .await
        .context("startd")?;
    machine.address = up.sinful.clone();
    tracing::info!(
        "startd: {} slot(s), starter {}",
        machine.slots.len(),
        setup.program.display()
    );

    // the owner's played activity counts from the first ad on
    let attribute_file = ctx
        .knob("STARTD_ATTRIBUTE_FILE")?
        .filter(|f| !f.trim().is_empty())
        .map(PathBuf::from);
    if let Some(file) = &attribute_file {
        machine.overrides = poll::read_attribute_file(file);
    }
    let (ads_tx, ads_rx) = watch::channel(machine.ads(clock.now_secs()));
    let advertiser = tokio::spawn(
        Advertiser {
            peers: peers.clone(),
            clock: clock.clone(),
            lifetime: ctx.classad_lifetime,
            interval: ctx.update_interval,
        }
        .run(ads_rx, shutdown.clone()),
    );
    for job in cron_jobs {
        cron::spawn(job, clock.clone(), events_tx.clone());
    }
    // the policy is evaluated every POLLING_INTERVAL (and after every
    // event); the owner's activity is measured (and the attribute file
    // read) at each poll
    let polling = u64::try_from(machine.config.polling_interval)
        .unwrap_or(5)
        .max(1);
    Poller {
        sources,
        attribute_file,
        period: Duration::from_secs(polling),
        clock: clock.clone(),
    }
    .spawn(events_tx.clone());

    Shell::new(machine, setup, events_tx, peers, clock)
        .run(events, ads_tx, shutdown)
        .await;
    let _ = tokio::time::timeout(Duration::from_secs(10), advertiser).await;
    up.shut_down().await;
    Ok(())
}
