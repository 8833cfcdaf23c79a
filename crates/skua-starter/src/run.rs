//! The starter's shell: scratch directory, transfers, the job's process,
//! signals, updates and the final report.

use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use anyhow::Context as _;
use classad::ClassAd;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use skua_daemon::context::knob_u64;
use skua_daemon::DaemonContext;
use skua_net::Client;
use skua_proto::{
    routes, Ack, BeginReply, CheckpointKind, EntryKind, InputFileRequest, JobExit, JobUpdate,
    OutputFileMeta, RunOutcome, ShadowBegin, ShadowMoved, StarterDone, StarterMessage, StarterSpec,
    UpdateKind, STARTER_EXIT_LOST_SHADOW, STDERR_NAME, STDOUT_NAME, TRANSFER_HEADER,
};
use tokio::signal::unix::{signal, Signal as SignalStream, SignalKind};
use tokio::sync::mpsc;

use crate::checkpoint::{CheckpointError, TransferError, ENOENT, HOLD_TRANSFER_OUTPUT_ERROR};

mod transparent;
use crate::plan::{self, RunAs, Stamp};
use crate::usage::UsageMeter;
use crate::xferq::Transfer;
use skua_daemon::account::{run_as_thread, Account, AsUser, Rights};
use skua_proto::TransferDirection;
use std::sync::Arc;

/// What the starter was asked to do by a signal (or by the startd going
/// away).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Request {
    /// SIGTERM: soft vacate.
    Vacate,
    /// SIGQUIT, or EOF on standard input: hard kill.
    Kill { startd_gone: bool },
    /// SIGUSR1.
    Suspend,
    /// SIGUSR2.
    Continue,
    /// The startd passed on the shadow's new address (a schedd's
    /// reconnect): [`Inbox::moved`].
    Reconnect,
}

/// The signals the starter listens to. Registered before anything else,
/// so none of them takes its default action (terminating the starter).
pub struct Signals {
    term: SignalStream,
    quit: SignalStream,
    usr1: SignalStream,
    usr2: SignalStream,
}

impl Signals {
    /// Installs the handlers for SIGTERM, SIGQUIT, SIGUSR1 and SIGUSR2.
    pub fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            quit: signal(SignalKind::quit())?,
            usr1: signal(SignalKind::user_defined1())?,
            usr2: signal(SignalKind::user_defined2())?,
        })
    }
}

/// The startd's side of the conversation: the claim's next jobs, one
/// [`StarterSpec`] per activation, and its end (the startd closed our
/// standard input: it is gone, or the claim is over).
pub struct Inbox {
    specs: mpsc::UnboundedReceiver<StarterMessage>,
    /// A spec that arrived while a job was running (the startd sends one
    /// only to an idle starter; kept rather than lost).
    pending: Option<StarterSpec>,
    /// The shadow's latest address, passed on by the startd.
    moved: Option<ShadowMoved>,
    closed: bool,
}

impl Inbox {
    /// The specs as the startd sends them; the channel's end is the end of
    /// standard input.
    pub fn new(specs: mpsc::UnboundedReceiver<StarterMessage>) -> Inbox {
        Inbox {
            specs,
            pending: None,
            moved: None,
            closed: false,
        }
    }
}

/// Waits for the next request: a signal, or (once) the end of standard
/// input.
async fn next_request(signals: &mut Signals, inbox: &mut Inbox) -> Request {
    loop {
        tokio::select! {
            _ = signals.term.recv() => return Request::Vacate,
            _ = signals.quit.recv() => return Request::Kill { startd_gone: false },
            _ = signals.usr1.recv() => return Request::Suspend,
            _ = signals.usr2.recv() => return Request::Continue,
            spec = inbox.specs.recv(), if !inbox.closed => match spec {
                Some(StarterMessage::Job(spec)) => inbox.pending = Some(spec),
                Some(StarterMessage::Shadow { shadow }) => {
                    inbox.moved = Some(shadow);
                    return Request::Reconnect;
                }
                None => {
                    inbox.closed = true;
                    return Request::Kill { startd_gone: true };
                }
            },
        }
    }
}

/// Between jobs: waits for the claim's next job. `None`: the starter is
/// done (the startd closed standard input, or asked it to stop).
async fn next_job(signals: &mut Signals, inbox: &mut Inbox) -> Option<StarterSpec> {
    if let Some(spec) = inbox.pending.take() {
        return Some(spec);
    }
    loop {
        tokio::select! {
            _ = signals.term.recv() => return None,
            _ = signals.quit.recv() => return None,
            _ = signals.usr1.recv() => {}
            _ = signals.usr2.recv() => {}
            msg = inbox.specs.recv(), if !inbox.closed => match msg {
                Some(StarterMessage::Job(spec)) => return Some(spec),
                // no job runs: nothing to send anywhere
                Some(StarterMessage::Shadow { .. }) => {}
                None => return None,
            },
        }
    }
}

/// Settings from the configuration.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `STARTER_UPDATE_INTERVAL` (seconds, default 300): usage updates.
    pub update_interval: Duration,
    /// `STARTER_SHADOW_TIMEOUT` (seconds, default 60): each call to the
    /// shadow (idle time for file transfers).
    pub shadow_timeout: Duration,
    /// `JOB_RENICE_INCREMENT`, unevaluated.
    pub renice: Option<String>,
    /// `SLOT<N>_USER` for this slot.
    pub slot_user: Option<String>,
    /// `BASE_CGROUP` (empty: no cgroups).
    pub base_cgroup: String,
    /// `SOFT_UID_DOMAIN`: an owner without an account here runs under the
    /// submit side's uid and gid.
    pub soft_uid_domain: bool,
    /// `SKUA_CRIU`: the `criu` program (a transparent checkpoint backend).
    pub criu: PathBuf,
    /// The pool signing key, which seals transparent checkpoint images
    /// (`None`: none readable here, no such checkpoint is made or restored).
    pub checkpoint_key: Option<skua_net::SigningKey>,
    /// `CHECKPOINT_SIGNAL_INTERVAL` (seconds, default 3600; 0: never):
    /// how often a job with `WantCheckpointSignal` gets its
    /// `CheckpointSig` while it runs.
    pub checkpoint_signal_interval: u64,
    /// `ENABLE_CHIRP`, `ENABLE_CHIRP_IO`, `ENABLE_CHIRP_UPDATES`.
    pub chirp: crate::chirp::ChirpSettings,
    /// File-transfer plugins (URL inputs, `OutputDestination`).
    pub plugins: crate::plugins::PluginSettings,
}

impl Settings {
    /// Reads the settings for the slot named `slot_name`.
    pub fn from_context(ctx: &DaemonContext, slot_name: &str) -> anyhow::Result<Settings> {
        let update = knob_u64(&ctx.config, "STARTER_UPDATE_INTERVAL", 300)?.max(1);
        let timeout = knob_u64(&ctx.config, "STARTER_SHADOW_TIMEOUT", 60)?.max(1);
        let slot_user = match plan::slot_number(slot_name) {
            Some(n) => ctx.knob(&format!("SLOT{n}_USER"))?,
            None => None,
        };
        Ok(Settings {
            update_interval: Duration::from_secs(update),
            shadow_timeout: Duration::from_secs(timeout),
            renice: ctx.knob("JOB_RENICE_INCREMENT")?,
            slot_user,
            base_cgroup: ctx.knob("BASE_CGROUP")?.unwrap_or_default(),
            chirp: crate::chirp::ChirpSettings::from_context(ctx)?,
            soft_uid_domain: skua_daemon::context::knob_bool(
                &ctx.config,
                "SOFT_UID_DOMAIN",
                false,
            )?,
            criu: ctx
                .knob("SKUA_CRIU")?
                .filter(|c| !c.trim().is_empty())
                .unwrap_or_else(|| crate::backend::CRIU.to_string())
                .into(),
            checkpoint_key: skua_daemon::security::load_signing_key(&ctx.config, false)
                .unwrap_or_else(|e| {
                    tracing::debug!(error = %e, "no pool signing key for checkpoint images");
                    None
                }),
            checkpoint_signal_interval: knob_u64(&ctx.config, "CHECKPOINT_SIGNAL_INTERVAL", 3600)?,
            plugins: crate::plugins::PluginSettings {
                builtin: std::env::current_exe()
                    .ok()
                    .map(crate::plugins::Plugin::builtin),
                site: crate::plugins::site_plugins(ctx.knob("FILETRANSFER_PLUGINS")?.as_deref()),
                lifetime: Duration::from_secs(knob_u64(
                    &ctx.config,
                    "MAX_FILE_TRANSFER_PLUGIN_LIFETIME",
                    crate::plugins::DEFAULT_PLUGIN_LIFETIME,
                )?),
            },
        })
    }
}

/// A run that could not happen through no fault of the job.
struct Failure {
    reason: String,
    permanent: bool,
    /// Hold the job with this code and subcode (a file the owner may not
    /// open, say) instead of failing the run.
    hold: Option<(i64, i64)>,
}

impl Failure {
    fn retry(reason: impl Into<String>) -> Failure {
        Failure {
            reason: reason.into(),
            permanent: false,
            hold: None,
        }
    }
    fn permanent(reason: impl Into<String>) -> Failure {
        Failure {
            reason: reason.into(),
            permanent: true,
            hold: None,
        }
    }
    /// HTCondor's hold `code` with the errno of `error` as subcode.
    fn hold(code: i64, reason: String, error: &std::io::Error) -> Failure {
        Failure {
            reason,
            permanent: true,
            hold: Some((code, error.raw_os_error().map(i64::from).unwrap_or(0))),
        }
    }
}

/// HTCondor's HoldReasonCode for a standard output or error the job's
/// owner may not open.
const HOLD_UNABLE_TO_OPEN_OUTPUT: i64 = 7;
/// ... and for a standard input.
const HOLD_UNABLE_TO_OPEN_INPUT: i64 = 8;

/// Serves one claim: runs `first`, then each further job the startd sends
/// (claim reuse), until the startd closes standard input or a job is
/// vacated or killed. `done` tells the startd a job's run is over (a
/// [`StarterDone`] line); it returns false when the startd cannot be told.
/// Returns the starter's exit code: 0 when the shadow acknowledged the
/// last [`JobExit`], 1 otherwise.
pub async fn run(
    ctx: DaemonContext,
    first: StarterSpec,
    mut signals: Signals,
    mut inbox: Inbox,
    mut done: impl FnMut(&StarterDone) -> bool,
) -> anyhow::Result<i32> {
    let mut spec = first;
    let mut client: Option<(String, Client)> = None;
    // one worker per account for the whole claim, not one per job
    let as_user = AsUser::new();
    // asynchronous output transfer (sandbox_manager.rs), when switched on
    let mut manager = if crate::sandbox_manager::enabled(&ctx)? {
        Some(crate::sandbox_manager::SandboxManager::new(&ctx)?)
    } else {
        None
    };
    let code = loop {
        let (acked, more, lost) = run_job(
            &ctx,
            &as_user,
            &spec,
            &mut signals,
            &mut inbox,
            &mut client,
            &mut done,
            &mut manager,
        )
        .await?;
        if lost {
            break STARTER_EXIT_LOST_SHADOW;
        }
        if !more || !acked {
            break if acked { 0 } else { 1 };
        }
        match next_job(&mut signals, &mut inbox).await {
            Some(next) => spec = next,
            None => break 0,
        }
    };
    // the pending output transfers end before the starter does
    if let Some(m) = manager.as_mut() {
        m.finish().await;
    }
    Ok(code)
}

/// Runs one job: from the spec to the shadow's acknowledgement of its
/// exit. Returns (acknowledged, the starter may take another job, the
/// job was given up because the shadow stayed unreachable for its lease).
// (the claim's state the starter keeps between jobs, one argument each)
#[allow(clippy::too_many_arguments)]
async fn run_job(
    ctx: &DaemonContext,
    as_user: &AsUser,
    spec: &StarterSpec,
    signals: &mut Signals,
    inbox: &mut Inbox,
    client: &mut Option<(String, Client)>,
    done: &mut impl FnMut(&StarterDone) -> bool,
    manager: &mut Option<crate::sandbox_manager::SandboxManager>,
) -> anyhow::Result<(bool, bool, bool)> {
    let job = classad::parse_ad(&spec.job_ad).context("parsing the job ad")?;
    let slot = classad::parse_ad(&spec.slot_ad).context("parsing the slot ad")?;
    let slot_name = plan::string_attr(&slot, "Name").unwrap_or_default();
    let settings = Settings::from_context(ctx, &slot_name)?;
    let shadow = match client.take() {
        Some((addr, c)) if addr == spec.shadow_addr => c,
        _ => ctx
            .client_at(&spec.shadow_addr, settings.shadow_timeout)
            .context("the shadow's address")?,
    };
    *client = Some((spec.shadow_addr.clone(), shadow.clone()));
    let scratch = Path::new(&spec.execute_dir).join(format!("dir_{}", std::process::id()));
    let pgid_file = Path::new(&spec.execute_dir).join(format!("dir_{}.pgid", std::process::id()));
    tracing::info!(job = %spec.job_id, slot = %slot_name, scratch = %scratch.display(), "starting the job");

    let lease = job_lease(&job);
    let mut starter = Starter {
        ctx,
        spec,
        lease,
        last_contact: ctx.clock.now(),
        lost_since: None,
        lost_shadow: false,
        stop_asked: false,
        shadow_addr: spec.shadow_addr.clone(),
        job,
        slot,
        slot_name,
        settings,
        client: shadow,
        scratch: scratch.clone(),
        pgid_file: pgid_file.clone(),
        signals,
        inbox,
        meter: UsageMeter::default(),
        startd_gone: false,
        spawned: false,
        executing_reported: false,
        account: None,
        as_user: as_user.clone(),
        policy: plan::CheckpointPolicy::default(),
        next_checkpoint: 1,
        baseline: BTreeMap::new(),
        executable: None,
        restored: Vec::new(),
        suspend_requested: false,
        transparent: Default::default(),
        chirp: None,
        deferred_outputs: None,
        defer_outputs: manager.is_some(),
    };
    let outcome = starter.go().await;
    // the job's last delayed attributes before its exit report
    if let Some(proxy) = &starter.chirp {
        proxy.flush_delayed().await;
    }
    starter.transparent_cleanup();
    let usage = starter.meter.final_usage();
    let outcome = match outcome {
        Ok(o) => o,
        Err(Failure {
            reason,
            hold: Some((code, subcode)),
            ..
        }) => RunOutcome::Held {
            reason,
            code,
            subcode,
        },
        Err(f) => RunOutcome::Failed {
            reason: f.reason,
            permanent: f.permanent,
        },
    };
    let _ = std::fs::remove_file(&pgid_file);
    if let (Some(baseline), Some(m)) = (starter.deferred_outputs.take(), manager.as_mut()) {
        // the outputs go in the background (sandbox_manager.rs)
        let more = !starter.startd_gone
            && done(&StarterDone {
                done: spec.job_id.clone(),
            });
        let pending = crate::sandbox_manager::Pending {
            shadow_addr: starter.shadow_addr.clone(),
            client: starter.client.clone(),
            as_user: as_user.clone(),
            rights: starter.rights(),
            job: starter.job.clone(),
            claim_id: spec.claim_id.clone(),
            job_id: spec.job_id.clone(),
            baseline,
            executable: starter.executable.clone(),
            outcome,
            usage,
            executed: starter.spawned && !starter.executing_reported,
        };
        if let Err((pending, reason)) = m.hand_over(&scratch, pending).await {
            tracing::warn!(job = %spec.job_id, %reason, "sending the outputs now");
            crate::sandbox_manager::transfer_now(&scratch, pending).await;
            remove_scratch(&scratch).await;
        }
        return Ok((true, more, false));
    }
    remove_scratch(&scratch).await;
    if starter.lost_shadow {
        // the job was killed: nothing is reported to anyone
        tracing::warn!(job = %spec.job_id, "the job was given up: its shadow stayed unreachable for its lease");
        *client = None;
        return Ok((false, false, true));
    }
    tracing::info!(job = %spec.job_id, ?outcome, "the job's run is over");
    // A job that ended by itself leaves the claim ready for the next one;
    // a vacated or killed one ends the starter (the startd waits for that).
    let mut more = !starter.startd_gone
        && matches!(
            outcome,
            RunOutcome::Exited { .. } | RunOutcome::Signaled { .. } | RunOutcome::Failed { .. }
        );
    if more {
        more = done(&StarterDone {
            done: spec.job_id.clone(),
        });
    }
    let exit = JobExit {
        claim_id: spec.claim_id.clone(),
        outcome,
        usage,
        executed: starter.spawned && !starter.executing_reported,
        job_id: Some(spec.job_id.clone()),
    };
    if starter.lease.is_some() {
        // with a lease: the exit is kept until the shadow takes it, or
        // the lease runs out
        loop {
            match starter
                .client
                .command::<_, Ack>(&routes::SHADOW_EXIT, Some(&exit))
                .await
            {
                Ok(_) => {
                    starter.contact_ok();
                    *client = Some((starter.shadow_addr.clone(), starter.client.clone()));
                    return Ok((true, more, false));
                }
                Err(e) if is_transient(&e) => {
                    starter.contact_lost(&e);
                    if !starter.await_shadow().await {
                        *client = None;
                        if starter.lost_shadow {
                            return Ok((false, false, true));
                        }
                        return Ok((false, false, false));
                    }
                }
                Err(e) => {
                    tracing::error!(job = %spec.job_id, error = %e, "the shadow refused the job's exit");
                    return Ok((false, false, false));
                }
            }
        }
    }
    let mut last_err = None;
    for attempt in 0..3 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        match starter
            .client
            .command::<_, Ack>(&routes::SHADOW_EXIT, Some(&exit))
            .await
        {
            Ok(_) => return Ok((true, more, false)),
            Err(e) => {
                let retry = matches!(
                    e.code(),
                    skua_proto::ErrorCode::Unavailable | skua_proto::ErrorCode::Timeout
                );
                last_err = Some(e);
                if !retry {
                    break;
                }
            }
        }
    }
    if let Some(e) = last_err {
        tracing::error!(job = %spec.job_id, error = %e, "the shadow did not acknowledge the job's exit");
    }
    Ok((false, false, false))
}

/// The job's `JobLeaseDuration`, when defined and positive.
fn job_lease(job: &ClassAd) -> Option<Duration> {
    match classad::Evaluator::default().eval_attr("JobLeaseDuration", job, None) {
        classad::Value::Int(n) if n > 0 => Some(Duration::from_secs(n.unsigned_abs())),
        classad::Value::Real(r) if r.is_finite() && r >= 1.0 => Some(Duration::from_secs(r as u64)),
        _ => None,
    }
}

/// Whether a call to the shadow failed on the way (refused, reset, timed
/// out) rather than being answered with an error.
pub(crate) fn is_transient(e: &skua_net::NetError) -> bool {
    match e.remote() {
        None => true,
        Some(b) => matches!(
            b.code,
            skua_proto::ErrorCode::Unavailable | skua_proto::ErrorCode::Timeout
        ),
    }
}

pub(crate) async fn remove_scratch(dir: &Path) {
    // (a scratch directory is small: removed in place, on the one thread)
    if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
        return;
    }
    // The job may have left directories without write permission: only a
    // starter that is not root needs to open them (as root, the removal
    // above cannot fail on permissions, and chmod must never follow a link
    // the job planted).
    if nix::unistd::geteuid().is_root() {
        tracing::warn!(dir = %dir.display(), "cannot remove the scratch directory");
        return;
    }
    let d = dir.to_path_buf();
    let _ = tokio::task::spawn_blocking(move || {
        fn open_up(p: &Path) {
            if let Ok(meta) = std::fs::symlink_metadata(p) {
                if meta.is_dir() {
                    let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700));
                    if let Ok(rd) = std::fs::read_dir(p) {
                        for e in rd.flatten() {
                            open_up(&e.path());
                        }
                    }
                }
            }
        }
        open_up(&d);
        std::fs::remove_dir_all(&d)
    })
    .await;
    if dir.exists() {
        tracing::warn!(dir = %dir.display(), "cannot remove the scratch directory");
    }
}

struct Starter<'a> {
    ctx: &'a DaemonContext,
    spec: &'a StarterSpec,
    /// The job's `JobLeaseDuration` (`None`: no reconnect; a lost shadow
    /// ends the run as before).
    lease: Option<Duration>,
    /// The last call the shadow answered (the daemon's clock).
    last_contact: std::time::SystemTime,
    /// Since when the shadow does not answer.
    lost_since: Option<std::time::SystemTime>,
    /// The lease ran out without the shadow: the job was given up.
    lost_shadow: bool,
    /// The startd asked the starter to stop while it waited for the
    /// shadow: it waits no more.
    stop_asked: bool,
    /// Where the shadow is (changed by a reconnect).
    shadow_addr: String,
    job: ClassAd,
    slot: ClassAd,
    slot_name: String,
    settings: Settings,
    client: Client,
    scratch: PathBuf,
    pgid_file: PathBuf,
    signals: &'a mut Signals,
    inbox: &'a mut Inbox,
    meter: UsageMeter,
    startd_gone: bool,
    /// The job's process was started.
    spawned: bool,
    /// Asynchronous output transfer is on (`SKUA_ASYNC_OUTPUT_TRANSFER`).
    defer_outputs: bool,
    /// The job exited and its outputs are left for the sandbox manager
    /// (the baseline of its input files).
    deferred_outputs: Option<BTreeMap<String, Stamp>>,
    /// The `executing` update was sent (else the exit report carries it).
    executing_reported: bool,
    /// The account the job runs as (`None`: the starter's own, it is not
    /// root). Every file of the job is touched with its rights.
    account: Option<Account>,
    /// Runs file operations with the account's rights.
    as_user: AsUser,
    /// How the job checkpoints itself.
    policy: plan::CheckpointPolicy,
    /// The number the next checkpoint gets.
    next_checkpoint: u64,
    /// The scratch directory's top-level files after the input transfer:
    /// what the job changed since is its output (and, without a list, its
    /// checkpoint).
    baseline: BTreeMap<String, Stamp>,
    /// The job's executable in the scratch directory, if transferred.
    executable: Option<String>,
    /// The files of the stored checkpoint the job started from.
    restored: Vec<String>,
    /// The startd suspended the job between two of its processes (during
    /// a checkpoint): the next one is suspended as soon as it starts.
    suspend_requested: bool,
    /// The job's transparent checkpoint backend ([`transparent`]).
    transparent: transparent::Transparent,
    /// The job's Chirp proxy, once opened (`WantIOProxy`).
    chirp: Option<crate::chirp::Proxy>,
}

/// How the job's process ended, as the starter saw it.
enum Ending {
    Exited(ExitStatus),
    /// Vacated; how the process ended within the vacate time (`None`: it
    /// had to be killed).
    Vacated(Option<ExitStatus>),
    Killed,
}

/// The job's process, once spawned.
struct Running {
    child: tokio::process::Child,
    pgid: Pid,
    cgroup: Option<skua_daemon::cgroup::JobCgroup>,
}

impl Starter<'_> {
    /// The shadow answered a call.
    fn contact_ok(&mut self) {
        let now = self.ctx.clock.now();
        if let Some(since) = self.lost_since.take() {
            let secs = now.duration_since(since).unwrap_or_default().as_secs();
            tracing::info!("Recovered connection to shadow after {secs} seconds");
        }
        self.last_contact = now;
    }

    /// A call to the shadow failed on the way. With a lease, the starter
    /// is disconnected from now (logged once).
    fn contact_lost(&mut self, e: &skua_net::NetError) {
        let Some(lease) = self.lease else {
            return;
        };
        if self.lost_since.is_some() {
            return;
        }
        let now = self.ctx.clock.now();
        self.lost_since = Some(now);
        let ago = now.duration_since(self.last_contact).unwrap_or_default();
        let left = lease.saturating_sub(ago);
        tracing::warn!(
            error = %e,
            "Lost connection to shadow, last activity was {} secs ago, waiting {} secs for reconnect",
            ago.as_secs(),
            left.as_secs()
        );
    }

    /// What is left of the lease since the last answered call.
    fn lease_left(&self) -> Duration {
        let lease = self.lease.unwrap_or_default();
        let since = self
            .ctx
            .clock
            .now()
            .duration_since(self.last_contact)
            .unwrap_or_default();
        lease.saturating_sub(since)
    }

    /// The pause before the next try while disconnected: doubling from a
    /// second, at most a quarter of the lease (and 30 s).
    fn retry_pause(&self) -> Duration {
        let lost_for = self
            .lost_since
            .and_then(|t| self.ctx.clock.now().duration_since(t).ok())
            .unwrap_or_default();
        let cap = (self.lease.unwrap_or_default() / 4)
            .clamp(Duration::from_secs(1), Duration::from_secs(30));
        lost_for
            .max(Duration::from_secs(1))
            .min(cap)
            .min(self.lease_left().max(Duration::from_millis(100)))
    }

    /// The lease ran out while disconnected: logged, and the run is given
    /// up.
    fn give_up(&mut self) {
        let secs = self
            .ctx
            .clock
            .now()
            .duration_since(self.last_contact)
            .unwrap_or_default()
            .as_secs();
        tracing::error!("No reconnect from shadow for {secs} seconds, aborting job execution!");
        self.lost_shadow = true;
    }

    /// Takes the shadow's new address the startd passed on.
    fn take_new_address(&mut self) {
        let Some(moved) = self.inbox.moved.take() else {
            return;
        };
        if moved.claim_id != self.spec.claim_id || moved.job_id != self.spec.job_id {
            return;
        }
        if moved.shadow_addr != self.shadow_addr {
            match self
                .ctx
                .client_at(&moved.shadow_addr, self.settings.shadow_timeout)
            {
                Ok(c) => {
                    tracing::info!(addr = %moved.shadow_addr, "the shadow moved");
                    if let Some(proxy) = &self.chirp {
                        proxy.set_client(c.clone());
                    }
                    self.client = c;
                    self.shadow_addr = moved.shadow_addr;
                }
                Err(e) => tracing::warn!(error = %e, "the shadow's new address"),
            }
        }
    }

    /// Disconnected, between two tries of a call that must get through
    /// (outputs, exit): waits for the pause, or for the shadow's new
    /// address. False when the run is given up (the lease ran out, or the
    /// startd wants the starter gone).
    async fn await_shadow(&mut self) -> bool {
        if self.stop_asked {
            return false;
        }
        if self.lease_left().is_zero() {
            self.give_up();
            return false;
        }
        let pause = self.retry_pause();
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            req = next_request(self.signals, self.inbox) => match req {
                Request::Reconnect => self.take_new_address(),
                Request::Kill { startd_gone } => {
                    self.startd_gone |= startd_gone;
                    self.stop_asked = true;
                    tracing::info!("asked to stop while waiting for the shadow");
                    return false;
                }
                Request::Vacate => {
                    self.stop_asked = true;
                    tracing::info!("asked to stop while waiting for the shadow");
                    return false;
                }
                Request::Suspend => {
                    tracing::info!("suspended between two processes of the job");
                    self.suspend_requested = true;
                }
                Request::Continue => self.suspend_requested = false,
            },
        }
        if self.lease_left().is_zero() {
            self.give_up();
            return false;
        }
        true
    }

    /// Everything from the scratch directory to the outputs; the outcome
    /// to report.
    async fn go(&mut self) -> Result<RunOutcome, Failure> {
        // the previous job's directory, if it could not be removed
        if self.scratch.exists() {
            remove_scratch(&self.scratch).await;
        }
        self.account = self.choose_account()?;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&self.scratch)
            .map_err(|e| {
                Failure::retry(format!(
                    "cannot create the scratch directory {}: {e}",
                    self.scratch.display()
                ))
            })?;
        // a fresh, empty directory: handed to the job's account, which
        // makes everything inside it
        if let Some(a) = &self.account {
            std::os::unix::fs::lchown(&self.scratch, Some(a.uid), Some(a.gid)).map_err(|e| {
                Failure::retry(format!(
                    "cannot give the scratch directory to {}: {e}",
                    a.name
                ))
            })?;
        }
        let shared_fs = plan::uses_shared_fs(&self.job, &self.slot);
        let begin = ShadowBegin {
            claim_id: self.spec.claim_id.clone(),
            job_id: self.spec.job_id.clone(),
            transfer: !shared_fs,
            slot: self.slot_name.clone(),
        };
        let reply: BeginReply = self
            .client
            .command(&routes::SHADOW_BEGIN, Some(&begin))
            .await
            .map_err(|e| Failure::retry(format!("the shadow refused to begin: {e}")))?;

        self.policy = plan::checkpoint_policy(&self.job);
        self.next_checkpoint = plan::first_checkpoint_number(reply.checkpoint.as_ref());

        // The input transfer, interruptible by a vacate or kill.
        let inputs = if shared_fs { Vec::new() } else { reply.inputs };
        let client = self.client.clone();
        let scratch = self.scratch.clone();
        let claim_id = self.spec.claim_id.clone();
        let (as_user, rights) = (self.as_user.clone(), self.rights());
        let job_id = self.spec.job_id.clone();
        let fetch = async {
            // a turn in the submit side's transfer queue first
            let mut xfer = Transfer::new(&client, &claim_id, &job_id, TransferDirection::In);
            if !shared_fs {
                xfer.turn(inputs.iter().map(|e| e.size).sum()).await;
            }
            fetch_inputs(
                &client, &claim_id, &scratch, &inputs, &as_user, &rights, &mut xfer,
            )
            .await?;
            if !shared_fs {
                xfer.done().await;
            }
            Ok::<(), Failure>(())
        };
        tokio::pin!(fetch);
        loop {
            tokio::select! {
                r = &mut fetch => { r?; break; }
                req = next_request(self.signals, self.inbox) => match req {
                    Request::Vacate | Request::Kill { .. } => {
                        if let Request::Kill { startd_gone: true } = req {
                            self.startd_gone = true;
                        }
                        return Ok(RunOutcome::Evicted {
                            reason: "the job was stopped while its input was transferred".into(),
                        });
                    }
                    Request::Suspend | Request::Continue => {}
                    Request::Reconnect => self.take_new_address(),
                },
            }
        }
        self.write_ad_files().await.map_err(Failure::retry)?;
        // URL inputs, through the file-transfer plugins
        if !shared_fs {
            let (job, scratch, slot) = (&self.job, &self.scratch, &self.slot_name);
            let settings = &self.settings.plugins;
            let fetched = crate::plugins::fetch_url_inputs(
                settings,
                job,
                scratch,
                self.account.as_ref(),
                slot,
            );
            if let Err(h) = fetched.await {
                return Err(Failure {
                    reason: h.reason,
                    permanent: true,
                    hold: Some((h.code, h.subcode)),
                });
            }
        }
        // (checkpoint files restored among the inputs are part of it: one
        // the job leaves untouched is not an output)
        self.baseline = if shared_fs {
            BTreeMap::new()
        } else {
            top_level_files(&self.scratch)
        };

        self.executable = inputs.iter().find(|e| e.executable).map(|e| e.path.clone());
        self.restored = inputs
            .iter()
            .filter(|e| e.checkpoint && e.kind == EntryKind::File)
            .map(|e| e.path.clone())
            .collect();
        let stored_backend = reply.checkpoint.as_ref().and_then(|c| c.backend.as_deref());
        self.transparent_setup(stored_backend)?;
        let executable = self.executable.clone();
        let mut restarts = 0u32;
        let ending = loop {
            // a restart after a checkpoint appends to the job's streams
            // a checkpoint of a transparent backend is restored instead
            let mut running = match self.transparent_restore()? {
                Some(r) => r,
                None => self.spawn(shared_fs, &inputs, executable.as_deref(), restarts > 0)?,
            };
            // The startd kills what a crashed starter leaves: by its cgroup
            // when the job has one, else by the process group named here.
            if running.cgroup.is_none() {
                let _ = std::fs::write(&self.pgid_file, format!("{}\n", running.pgid));
            }
            self.renice(running.pgid);
            if restarts == 0 {
                self.meter.start(running.pgid);
            } else {
                // usage keeps accumulating over the run's restarts
                self.meter.restart(running.pgid);
            }
            self.meter
                .watch_cgroup(running.cgroup.as_ref().map(|g| g.path()));
            self.spawned = true;

            let ending = self.supervise(&mut running).await;
            // stopped at the startd's request: its report is not worth
            // holding for the lease (the startd waits for the starter to go)
            if matches!(ending, Ending::Vacated(_) | Ending::Killed) {
                self.stop_asked = true;
            }
            // No process of the job survives it.
            let _ = killpg(running.pgid, Signal::SIGKILL);
            crate::cgroup::close(running.cgroup.take(), &mut self.meter).await;
            self.meter.finish();
            self.transparent_check_restore(&ending)?;
            let Ending::Exited(status) = ending else {
                break ending;
            };
            if !self
                .policy
                .is_checkpoint_exit(status.code(), status.signal())
            {
                break ending;
            }
            // A self-checkpoint: its files go to the shadow, then the job
            // starts again in the same directory with the same arguments.
            tracing::info!(?status, restarts, "the job exited to checkpoint");
            if !shared_fs {
                if let Err(e) = self.checkpoint_job_files(CheckpointKind::Exit).await {
                    return self.checkpoint_failed(e);
                }
            }
            restarts += 1;
        };

        // the startd's WANT_HOLD: it wrote why before stopping the job
        if matches!(ending, Ending::Vacated(_) | Ending::Killed) {
            if let Some(h) = self.startd_hold() {
                tracing::info!(reason = %h.reason, "the startd holds the job");
                return Ok(RunOutcome::Held {
                    reason: h.reason,
                    code: h.code,
                    subcode: h.subcode,
                });
            }
        }
        let (outcome, send_outputs) = match ending {
            Ending::Exited(status) => (outcome_of(status), true),
            Ending::Vacated(status) => {
                // its files are kept as a checkpoint for its next start
                // (ON_EXIT_OR_EVICT, or it checkpointed on its signal)
                let exit = status.map(|s| (s.code(), s.signal()));
                if self.transparent_dumped() {
                    // dumped by its backend: the image and its files
                    if let Err(e) = self.send_transparent_checkpoint().await {
                        return self.checkpoint_failed(e);
                    }
                } else if !shared_fs
                    && self
                        .policy
                        .checkpoint_on_vacate(plan::transfer_on_evict(&self.job), exit)
                {
                    if let Err(e) = self.checkpoint_job_files(CheckpointKind::Evict).await {
                        return self.checkpoint_failed(e);
                    }
                }
                (
                    RunOutcome::Evicted {
                        reason: "the job was vacated".into(),
                    },
                    false,
                )
            }
            Ending::Killed => (
                RunOutcome::Evicted {
                    reason: if self.startd_gone {
                        "the startd went away; the job was killed".into()
                    } else {
                        "the job was killed".into()
                    },
                },
                false,
            ),
        };
        if send_outputs && !shared_fs && self.defer_outputs {
            // handed to the sandbox manager once the run is over
            self.deferred_outputs = Some(std::mem::take(&mut self.baseline));
            return Ok(outcome);
        }
        if send_outputs && !shared_fs {
            let baseline = std::mem::take(&mut self.baseline);
            let sent = loop {
                match self.send_outputs(&baseline, executable.as_deref()).await {
                    Ok(sent) => break sent,
                    Err(OutputError::Lost(e)) if self.lease.is_some() => {
                        // the results stay in the scratch directory until
                        // the shadow takes them
                        self.contact_lost(&e);
                        if !self.await_shadow().await {
                            return Err(Failure::retry(format!("sending the outputs: {e}")));
                        }
                    }
                    Err(OutputError::Lost(e)) => {
                        return Err(Failure::retry(format!("sending the outputs: {e}")))
                    }
                    Err(OutputError::Failed(f)) => return Err(f),
                }
            };
            if let Some(reason) = sent {
                // HTCondor holds a job whose named output is missing
                // (HoldReasonCode 12, the errno as subcode).
                tracing::info!(%reason, "an output file the job names is missing; the job is held");
                return Ok(RunOutcome::Held {
                    reason,
                    code: HOLD_TRANSFER_OUTPUT_ERROR,
                    subcode: ENOENT,
                });
            }
        }
        Ok(outcome)
    }

    /// The run's end after a checkpoint that was not stored.
    fn checkpoint_failed(&mut self, e: CheckpointError) -> Result<RunOutcome, Failure> {
        tracing::warn!(error = %e, "the checkpoint was not stored");
        match e {
            CheckpointError::Refused { reason, subcode } => Ok(RunOutcome::Held {
                reason,
                code: crate::checkpoint::HOLD_FAILED_TO_CHECKPOINT,
                subcode,
            }),
            CheckpointError::Missing { reason } => Ok(RunOutcome::Held {
                reason,
                code: HOLD_TRANSFER_OUTPUT_ERROR,
                subcode: ENOENT,
            }),
            CheckpointError::Interrupted => Ok(RunOutcome::Evicted {
                reason: CheckpointError::Interrupted.to_string(),
            }),
            e @ (CheckpointError::Lost(_) | CheckpointError::Failed(_)) => {
                Err(Failure::retry(e.to_string()))
            }
        }
    }

    /// The startd's hold request (`dir_<pid>.hold`), if it wrote one.
    fn startd_hold(&self) -> Option<skua_proto::StarterHold> {
        let path =
            Path::new(&self.spec.execute_dir).join(format!("dir_{}.hold", std::process::id()));
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }

    async fn write_ad_files(&self) -> Result<(), String> {
        for (name, ad) in [(".job.ad", &self.job), (".machine.ad", &self.slot)] {
            let mut text = String::new();
            for (attr, expr) in ad.iter_chained() {
                text.push_str(&format!("{attr} = {}\n", classad::unparse_old(expr)));
            }
            let path = self.scratch.join(name);
            let p = path.clone();
            self.as_user
                .run_async(&self.rights(), move || std::fs::write(&p, text))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// The rights the job's files are touched with.
    fn rights(&self) -> Rights {
        match &self.account {
            Some(a) => Rights::User(Arc::new(a.clone())),
            None => Rights::Daemon,
        }
    }

    /// The account the job runs as, by HTCondor's UID domain rules
    /// ([`plan::choose_user`]); `None` when the starter is not root.
    fn choose_account(&self) -> Result<Option<Account>, Failure> {
        let is_root = nix::unistd::geteuid().is_root();
        let owner = plan::string_attr(&self.job, "Owner").unwrap_or_default();
        // looked up once: the owner is usually the account chosen
        let owner_account = (is_root && !owner.is_empty())
            .then(|| Account::lookup(&owner).ok())
            .flatten()
            .filter(|a| !a.is_root());
        let owner_exists = owner_account.is_some();
        let facts = plan::UserFacts {
            is_root,
            owner_exists,
            slot_user: self.settings.slot_user.as_deref(),
            soft_uid_domain: self.settings.soft_uid_domain,
            owner_ids: self.spec.owner_ids,
        };
        let account = match plan::choose_user(&self.job, &self.slot, &facts) {
            RunAs::Myself => return Ok(None),
            RunAs::Refuse(why) => return Err(Failure::retry(why)),
            RunAs::Never(why) => return Err(Failure::permanent(why)),
            RunAs::Ids { name, uid, gid } => Account {
                name,
                uid,
                gid,
                groups: vec![gid],
            },
            RunAs::User(name) => match owner_account.filter(|a| a.name == name) {
                Some(a) => a,
                None => Account::lookup(&name).map_err(|e| Failure::retry(e.to_string()))?,
            },
        };
        if account.is_root() {
            return Err(Failure::permanent(format!(
                "refusing to run the job as root (account `{}`)",
                account.name
            )));
        }
        tracing::debug!(user = %account.name, uid = account.uid, "the job's account");
        Ok(Some(account))
    }

    /// Opens the job's Chirp proxy if it wants one (once per job): the
    /// path of its `.chirp.config`.
    fn chirp_proxy(&mut self) -> Result<Option<String>, String> {
        if !self
            .settings
            .chirp
            .wanted(plan::bool_attr(&self.job, "WantIOProxy"))
        {
            return Ok(None);
        }
        if self.chirp.is_none() {
            let job = crate::chirp::ProxyJob {
                claim_id: self.spec.claim_id.clone(),
                job_id: self.spec.job_id.clone(),
                owner: plan::string_attr(&self.job, "Owner").unwrap_or_default(),
            };
            let proxy = crate::chirp::start(
                self.settings.chirp.clone(),
                self.client.clone(),
                job,
                &self.scratch,
                self.account.as_ref(),
            )?;
            self.chirp = Some(proxy);
        }
        Ok(self
            .chirp
            .as_ref()
            .map(|p| p.config_path.display().to_string()))
    }

    fn spawn(
        &mut self,
        shared_fs: bool,
        inputs: &[skua_proto::InputEntry],
        executable: Option<&str>,
        append: bool,
    ) -> Result<Running, Failure> {
        let iwd = plan::string_attr(&self.job, "Iwd").unwrap_or_else(|| "/".into());
        let iwd = PathBuf::from(iwd);
        let workdir = if shared_fs {
            iwd.clone()
        } else {
            self.scratch.clone()
        };
        let program = match executable {
            Some(name) if !shared_fs => self.scratch.join(name),
            _ => {
                let cmd = plan::string_attr(&self.job, "Cmd")
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| Failure::permanent("the job ad has no Cmd"))?;
                iwd.join(cmd)
            }
        };
        let args = plan::job_arguments(&self.job).map_err(Failure::permanent)?;
        let facts = plan::EnvFacts {
            scratch_dir: self.scratch.display().to_string(),
            slot_name: self
                .slot_name
                .split('@')
                .next()
                .unwrap_or_default()
                .to_string(),
            job_ad_path: self.scratch.join(".job.ad").display().to_string(),
            machine_ad_path: self.scratch.join(".machine.ad").display().to_string(),
            cpus: plan::int_attr(&self.slot, "Cpus")
                .or_else(|| plan::int_attr(&self.job, "RequestCpus"))
                .unwrap_or(1),
            iwd: workdir.display().to_string(),
        };
        let mut env = plan::job_environment(&self.job, &facts).map_err(Failure::permanent)?;
        if let Some(config) = self.chirp_proxy().map_err(Failure::retry)? {
            env.push((skua_proto::CHIRP_CONFIG_ENV.to_string(), config));
        }
        // A parallel job's node: its place among the nodes, and Skua's tools in its PATH.
        let env = crate::parallel::add_node_environment(&self.job, env, &node_facts())
            .map_err(Failure::permanent)?;

        // The standard streams, opened with the job's rights: a path the
        // owner may not open holds the job (HTCondor's codes 7 and 8).
        let stdin_path = if shared_fs {
            plan::stream_path(&self.job, "In").map(|p| iwd.join(p))
        } else {
            inputs
                .iter()
                .find(|e| e.stdin)
                .map(|e| self.scratch.join(&e.path))
        };
        let out_path = |attr: &str, name: &str| {
            plan::stream_path(&self.job, attr).map(|p| {
                if shared_fs {
                    iwd.join(p)
                } else {
                    self.scratch.join(name)
                }
            })
        };
        let (stdout_path, stderr_path) =
            (out_path("Out", STDOUT_NAME), out_path("Err", STDERR_NAME));
        let streams = {
            let (i, o, e) = (stdin_path.clone(), stdout_path.clone(), stderr_path.clone());
            let open = move || -> Result<[Option<std::fs::File>; 3], (usize, std::io::Error)> {
                let input = i
                    .map(|p| std::fs::File::open(&p))
                    .transpose()
                    .map_err(|err| (0, err))?;
                let create = |p: &Path| {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create(true)
                        .append(append)
                        .truncate(!append)
                        .open(p)
                };
                let out = o
                    .as_deref()
                    .map(create)
                    .transpose()
                    .map_err(|err| (1, err))?;
                let err = match (&e, &o) {
                    // the same file for both: one description, as a shell
                    // `>f 2>&1` would do
                    (Some(pe), Some(po)) if pe == po => match &out {
                        Some(f) => Some(f.try_clone().map_err(|err| (2, err))?),
                        None => None,
                    },
                    _ => e
                        .as_deref()
                        .map(create)
                        .transpose()
                        .map_err(|err| (2, err))?,
                };
                Ok([input, out, err])
            };
            match &self.account {
                Some(a) => run_as_thread(a, open).map_err(|e| Failure::retry(e.to_string()))?,
                None => open(),
            }
        };
        let [stdin, stdout, stderr] = match streams {
            Ok(s) => s,
            Err((which, err)) => {
                let (code, path) = match which {
                    0 => (HOLD_UNABLE_TO_OPEN_INPUT, &stdin_path),
                    1 => (HOLD_UNABLE_TO_OPEN_OUTPUT, &stdout_path),
                    _ => (HOLD_UNABLE_TO_OPEN_OUTPUT, &stderr_path),
                };
                let path = path
                    .as_deref()
                    .unwrap_or(Path::new("?"))
                    .display()
                    .to_string();
                let what = if which == 0 {
                    "standard input"
                } else {
                    "standard output or error"
                };
                return Err(Failure::hold(
                    code,
                    format!("cannot open the job's {what} {path}: {err}"),
                    &err,
                ));
            }
        };
        let stdio = |f: Option<std::fs::File>| f.map(Stdio::from).unwrap_or_else(Stdio::null);

        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&args)
            .env_clear()
            .envs(env)
            .current_dir(&workdir)
            .stdin(stdio(stdin))
            .stdout(stdio(stdout))
            .stderr(stdio(stderr))
            .process_group(0)
            .kill_on_drop(false);
        let execute = Path::new(&self.spec.execute_dir);
        // Spawned from a thread that has become the job's account, so the
        // job is born with the account's whole identity (uid, gid, groups,
        // no capabilities) and enters its working directory with its own
        // rights.
        let runtime = tokio::runtime::Handle::current();
        let account = self.account.clone();
        let spawn = move || match &account {
            None => cmd.spawn(),
            Some(a) => run_as_thread(a, || {
                let _entered = runtime.enter();
                cmd.spawn()
            })
            .map_err(std::io::Error::other)
            .and_then(|r| r),
        };
        let (child, cgroup) =
            crate::cgroup::spawn_job(&self.settings.base_cgroup, execute, &self.slot_name, spawn)
                .map_err(|e| {
                // HTCondor's FailedToCreateProcess hold, the errno as subcode
                let reason = plan::exec_failure_reason(&self.slot_name, &program, &args, &e);
                Failure::hold(plan::HOLD_FAILED_TO_CREATE_PROCESS, reason, &e)
            })?;
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| Failure::retry("the job's process vanished at once"))?;
        tracing::info!(pid, program = %program.display(), "the job is running");
        Ok(Running {
            child,
            pgid: Pid::from_raw(pid),
            cgroup,
        })
    }

    fn renice(&self, pgid: Pid) {
        let Some(text) = &self.settings.renice else {
            return;
        };
        let value = match classad::parse_expr(text) {
            Ok(e) => classad::Evaluator::default().eval(&e, Some(&self.slot), Some(&self.job)),
            Err(e) => {
                tracing::warn!(error = %e, "JOB_RENICE_INCREMENT is not an expression");
                return;
            }
        };
        let n = plan::renice_increment(&value);
        if n == 0 {
            return;
        }
        if let Some(pid) = rustix::process::Pid::from_raw(pgid.as_raw()) {
            if let Err(e) = rustix::process::setpriority_process(Some(pid), n) {
                tracing::warn!(error = %e, "cannot renice the job");
            }
        }
    }

    /// Sends the `executing` update, once. A request (signal) that
    /// arrives meanwhile abandons it and is returned (see
    /// [`Starter::update_or_request`]); the execution is then reported
    /// with the exit.
    async fn report_executing(&mut self) -> Option<Request> {
        if self.executing_reported {
            return None;
        }
        self.executing_reported = true;
        let req = self.update_or_request(UpdateKind::Executing).await;
        if req.is_some() {
            self.executing_reported = false;
        }
        req
    }

    /// Sends an update to the shadow, unless a request (a signal, the
    /// startd closing standard input) arrives first: the update is then
    /// abandoned and the request returned. A shadow that hangs never
    /// delays a kill (the startd kills the job when its claim's lease runs
    /// out because that shadow's schedd is stuck).
    async fn update_or_request(&mut self, kind: UpdateKind) -> Option<Request> {
        let update = JobUpdate {
            claim_id: self.spec.claim_id.clone(),
            kind,
            usage: self.meter.usage(),
        };
        let client = self.client.clone();
        let call = async move {
            client
                .command::<_, Ack>(&routes::SHADOW_UPDATE, Some(&update))
                .await
        };
        tokio::pin!(call);
        tokio::select! {
            r = &mut call => match r {
                Ok(_) => {
                    self.contact_ok();
                    // the job's delayed attributes go with its update
                    if let Some(proxy) = &self.chirp {
                        proxy.flush_delayed_in_background();
                    }
                    None
                }
                // The shadow gave this run up (its schedd restarted, or
                // declared the claim lost when the startd stopped
                // answering): the job may already run elsewhere, so this
                // copy must end now, whatever the startd does.
                Err(e) if e.code() == skua_proto::ErrorCode::NotFound => {
                    tracing::warn!(error = %e, "the shadow no longer knows this run: the job is killed");
                    Some(Request::Kill { startd_gone: false })
                }
                Err(e) => {
                    if is_transient(&e) && self.lease.is_some() {
                        self.contact_lost(&e);
                    } else {
                        tracing::warn!(error = %e, ?kind, "the shadow did not take an update");
                    }
                    None
                }
            },
            req = next_request(self.signals, self.inbox) => {
                tracing::info!(?kind, ?req, "an update to the shadow is abandoned for a request");
                Some(req)
            }
        }
    }

    /// Waits for the job, serving updates and signals.
    async fn supervise(&mut self, running: &mut Running) -> Ending {
        // with a lease, the shadow hears from the starter at least three
        // times per lease, so a lost connection is seen in time
        let mut interval = self.settings.update_interval;
        if let Some(lease) = self.lease {
            interval = interval.min((lease / 3).max(Duration::from_secs(1)));
        }
        // the next try to reach a lost shadow
        let mut retry_at: Option<tokio::time::Instant> = None;
        let mut updates =
            tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        let sample_every = interval.min(Duration::from_secs(2));
        let mut samples =
            tokio::time::interval_at(tokio::time::Instant::now() + sample_every, sample_every);
        let mut suspended = false;
        // a job that ends sooner has its execution reported with its exit
        let report_execution =
            tokio::time::sleep(Duration::from_millis(skua_proto::EXECUTE_REPORT_DELAY_MS));
        tokio::pin!(report_execution);
        // the periodic checkpoint signal of a job that wants one
        let checkpoint_sig = self
            .policy
            .signal
            .and_then(|s| Signal::try_from(s).ok())
            .unwrap_or(Signal::SIGTERM);
        let mut checkpoint_ticks = self
            .policy
            .signal_period(self.settings.checkpoint_signal_interval)
            .map(|p| tokio::time::interval_at(tokio::time::Instant::now() + p, p));
        // a request that interrupted an update (or a suspension that
        // came while the job was between two processes)
        let mut pending: Option<Request> =
            std::mem::take(&mut self.suspend_requested).then_some(Request::Suspend);
        loop {
            match (self.lost_since.is_some(), retry_at) {
                (true, None) => {
                    retry_at = Some(tokio::time::Instant::now() + self.retry_pause());
                }
                (false, Some(_)) => retry_at = None,
                _ => {}
            }
            let req = match pending.take() {
                Some(req) => req,
                None => tokio::select! {
                    _ = tokio::time::sleep_until(retry_at.unwrap_or_else(tokio::time::Instant::now)), if retry_at.is_some() => {
                        retry_at = None;
                        if self.lease_left().is_zero() {
                            self.give_up();
                            hard_kill(running).await;
                            return Ending::Killed;
                        }
                        pending = self.update_or_request(UpdateKind::Usage).await;
                        continue;
                    }
                    status = running.child.wait() => {
                        return match status {
                            Ok(s) => Ending::Exited(s),
                            Err(e) => {
                                tracing::error!(error = %e, "cannot wait for the job");
                                Ending::Killed
                            }
                        };
                    }
                    _ = &mut report_execution, if !self.executing_reported => {
                        pending = self.report_executing().await;
                        continue;
                    }
                    _ = updates.tick() => {
                        self.meter.sample();
                        pending = self.report_executing().await;
                        if pending.is_none() {
                            pending = self.update_or_request(UpdateKind::Usage).await;
                        }
                        continue;
                    }
                    _ = samples.tick() => {
                        self.meter.sample();
                        continue;
                    }
                    _ = tick_if_any(&mut checkpoint_ticks) => {
                        if !suspended {
                            tracing::info!(signal = %checkpoint_sig, "asking the job to checkpoint");
                            let _ = killpg(running.pgid, checkpoint_sig);
                        }
                        continue;
                    }
                    req = next_request(self.signals, self.inbox) => req,
                },
            };
            match req {
                Request::Suspend if !suspended => {
                    let _ = killpg(running.pgid, Signal::SIGSTOP);
                    // A process frozen before it took the SIGSTOP would
                    // not show as stopped: let the leader stop first.
                    if running.cgroup.is_some() {
                        wait_stopped(running.pgid).await;
                    }
                    crate::cgroup::freeze(running.cgroup.as_ref(), true);
                    suspended = true;
                    pending = self.report_executing().await;
                    if pending.is_none() {
                        pending = self.update_or_request(UpdateKind::Suspended).await;
                    }
                }
                Request::Continue if suspended => {
                    crate::cgroup::freeze(running.cgroup.as_ref(), false);
                    let _ = killpg(running.pgid, Signal::SIGCONT);
                    suspended = false;
                    pending = self.update_or_request(UpdateKind::Unsuspended).await;
                }
                Request::Suspend | Request::Continue => {}
                Request::Reconnect => {
                    self.take_new_address();
                    if self.lost_since.is_some() {
                        retry_at = None;
                        pending = self.update_or_request(UpdateKind::Usage).await;
                    }
                }
                Request::Kill { startd_gone } => {
                    self.startd_gone |= startd_gone;
                    hard_kill(running).await;
                    return Ending::Killed;
                }
                Request::Vacate => return self.vacate(running).await,
            }
        }
    }

    /// Soft vacate: the job's kill signal, `max_vacate_secs` of grace,
    /// then SIGKILL. A hard kill request during the grace escalates.
    async fn vacate(&mut self, running: &mut Running) -> Ending {
        // a job with a transparent checkpoint backend is dumped instead
        if let Some(ending) = self.transparent_dump(running).await {
            return ending;
        }
        // a job that wants a checkpoint signal gets it instead
        let kill_sig = plan::signal_attr(&self.job, "KillSig").unwrap_or(15);
        let sig = self.policy.vacate_signal(kill_sig);
        let sig = Signal::try_from(sig).unwrap_or(Signal::SIGTERM);
        tracing::info!(signal = %sig, grace = self.spec.max_vacate_secs, "vacating the job");
        crate::cgroup::freeze(running.cgroup.as_ref(), false);
        let _ = killpg(running.pgid, sig);
        let _ = killpg(running.pgid, Signal::SIGCONT);
        let deadline = tokio::time::sleep(Duration::from_secs(self.spec.max_vacate_secs));
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                status = running.child.wait() => return Ending::Vacated(status.ok()),
                _ = &mut deadline => {
                    hard_kill(running).await;
                    return Ending::Vacated(None);
                }
                req = next_request(self.signals, self.inbox) => {
                    if let Request::Kill { startd_gone } = req {
                        self.startd_gone |= startd_gone;
                        hard_kill(running).await;
                        return Ending::Killed;
                    }
                }
            }
        }
    }

    /// The files of a checkpoint of `kind` the job asks for
    /// ([`plan::checkpoint_source`]): the named files (a directory sends
    /// every file below it), or every top-level file created or changed
    /// since the input transfer; never the ad files, the streams or the
    /// executable. A named file that does not exist is
    /// [`CheckpointError::Missing`] (except an output not yet written when
    /// a vacated job's outputs are kept, see
    /// [`plan::missing_checkpoint_file_holds`]).
    pub(crate) fn checkpoint_files(
        &self,
        kind: CheckpointKind,
    ) -> Result<Vec<String>, CheckpointError> {
        let exe = self.executable.as_deref();
        let mut out: Vec<String> = Vec::new();
        match plan::checkpoint_source(&self.job) {
            plan::CheckpointSource::Changed => {
                out = plan::changed_outputs(&self.baseline, &top_level_files(&self.scratch), exe);
                // the files of the checkpoint it started from, still
                // there, belong to the new one (it replaces the old)
                for name in &self.restored {
                    if self.scratch.join(name).is_file() {
                        out.push(name.clone());
                    }
                }
                out.sort();
            }
            plan::CheckpointSource::Listed {
                items,
                named_for_checkpoint,
            } => {
                for item in items {
                    if !plan::is_safe_relative(&item) {
                        tracing::warn!(file = %item, "not checkpointing a file outside the scratch directory");
                        continue;
                    }
                    let path = self.scratch.join(&item);
                    match std::fs::metadata(&path) {
                        Ok(m) if m.is_dir() => files_below(&self.scratch, &item, &mut out),
                        Ok(m) if m.is_file() => out.push(item),
                        _ if plan::missing_checkpoint_file_holds(kind, named_for_checkpoint) => {
                            return Err(CheckpointError::Missing {
                                reason: crate::checkpoint::missing_reason(&path),
                            });
                        }
                        _ => {}
                    }
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|n| plan::checkpointable(n, exe) && seen.insert(n.clone()));
        Ok(out)
    }

    /// Sends checkpoint `files` (names relative to the scratch
    /// directory), numbered after the last one, then commits it. While
    /// it goes, a kill (or a vacate, unless the checkpoint is the
    /// vacate's own) stops it: [`CheckpointError::Interrupted`], the
    /// previous checkpoint stays. A shadow that cannot be reached is
    /// waited for within the job's lease, as for outputs; the transfer
    /// then goes on from the first file it had not acknowledged.
    pub(crate) async fn send_checkpoint(
        &mut self,
        kind: CheckpointKind,
        files: &[String],
        backend: Option<&str>,
    ) -> Result<(), CheckpointError> {
        let ckpt = crate::checkpoint::Checkpoint {
            number: self.next_checkpoint,
            kind,
            files: files.to_vec(),
            backend: backend.map(str::to_string),
            usage: self.meter.usage(),
        };
        tracing::info!(
            number = ckpt.number,
            ?kind,
            files = files.len(),
            "sending a checkpoint"
        );
        let mut progress = crate::checkpoint::Progress::default();
        loop {
            let transfer = crate::checkpoint::Transfer {
                client: self.client.clone(),
                claim_id: self.spec.claim_id.clone(),
                job_id: self.spec.job_id.clone(),
                scratch: self.scratch.clone(),
                as_user: self.as_user.clone(),
                rights: self.rights(),
            };
            let result = {
                let send = crate::checkpoint::send(&transfer, &ckpt, &mut progress);
                tokio::pin!(send);
                loop {
                    tokio::select! {
                            r = &mut send => break r,
                            req = next_request(self.signals, self.inbox) => match req {
                                Request::Kill { startd_gone } => {
                                    self.startd_gone |= startd_gone;
                                    self.stop_asked = true;
                                    return Err(CheckpointError::Interrupted);
                                }
                                Request::Vacate if kind != CheckpointKind::Evict => {
                                    self.stop_asked = true;
                                    return Err(CheckpointError::Interrupted);
                                }
                                Request::Suspend => {
                        tracing::info!("suspended between two processes of the job");
                        self.suspend_requested = true;
                    }
                                Request::Continue => self.suspend_requested = false,
                                Request::Vacate => {}
                                Request::Reconnect => self.take_new_address(),
                            },
                        }
                }
            };
            match result {
                Ok(_) => {
                    self.contact_ok();
                    self.next_checkpoint += 1;
                    return Ok(());
                }
                Err(TransferError::Unreachable(e)) if self.lease.is_some() => {
                    self.contact_lost(&e);
                    if !self.await_shadow().await {
                        return Err(if self.stop_asked {
                            CheckpointError::Interrupted
                        } else {
                            CheckpointError::Lost(e.to_string())
                        });
                    }
                }
                Err(TransferError::Unreachable(e)) => {
                    return Err(CheckpointError::Lost(e.to_string()))
                }
                Err(TransferError::Final(e)) => return Err(e),
            }
        }
    }

    /// Takes a checkpoint of `kind` of the job's own files
    /// ([`Starter::checkpoint_files`]) and sends it.
    async fn checkpoint_job_files(&mut self, kind: CheckpointKind) -> Result<(), CheckpointError> {
        let files = self.checkpoint_files(kind)?;
        self.send_checkpoint(kind, &files, None).await
    }

    /// Sends the outputs back. `Some(reason)`: a file named in
    /// `TransferOutput` does not exist (the others were sent).
    async fn send_outputs(
        &mut self,
        baseline: &BTreeMap<String, Stamp>,
        executable: Option<&str>,
    ) -> Result<Option<String>, OutputError> {
        let mut missing: Vec<String> = Vec::new();
        let mut names: Vec<String> = match plan::string_attr(&self.job, "TransferOutput") {
            Some(list) => {
                let mut out = Vec::new();
                for item in plan::split_list(&list) {
                    let item = item.trim_end_matches('/').to_string();
                    if !plan::is_safe_relative(&item) {
                        tracing::warn!(file = %item, "not sending an output outside the scratch directory");
                        continue;
                    }
                    let path = self.scratch.join(&item);
                    match std::fs::metadata(&path) {
                        Ok(m) if m.is_dir() => files_below(&self.scratch, &item, &mut out),
                        Ok(m) if m.is_file() => out.push(item),
                        _ => missing.push(item),
                    }
                }
                out
            }
            None => plan::changed_outputs(baseline, &top_level_files(&self.scratch), executable),
        };
        for (attr, name) in [("Out", STDOUT_NAME), ("Err", STDERR_NAME)] {
            if plan::stream_path(&self.job, attr).is_some() && self.scratch.join(name).is_file() {
                names.push(name.to_string());
            }
        }
        // outputs remapped to a URL, and with an `OutputDestination`
        // everything but stdout and stderr, go there through a plugin
        let to_url = plan::outputs_to_urls(&self.job, &mut names, &[STDOUT_NAME, STDERR_NAME]);
        if !to_url.is_empty() {
            let settings = &self.settings.plugins;
            let (scratch, slot) = (&self.scratch, &self.slot_name);
            let sent = crate::plugins::send_to_urls(
                settings,
                &to_url,
                scratch,
                self.account.as_ref(),
                slot,
            );
            if let Err(h) = sent.await {
                return Err(OutputError::Failed(Failure {
                    reason: h.reason,
                    permanent: true,
                    hold: Some((h.code, h.subcode)),
                }));
            }
        }
        // a turn in the submit side's transfer queue first
        let total = names
            .iter()
            .filter_map(|n| std::fs::symlink_metadata(self.scratch.join(n)).ok())
            .map(|m| m.len())
            .sum();
        let (claim_id, job_id) = (&self.spec.claim_id, &self.spec.job_id);
        let mut xfer = Transfer::new(&self.client, claim_id, job_id, TransferDirection::Out);
        xfer.turn(total).await;
        for name in names {
            let n = self.send_output(&name).await?;
            xfer.moved(n).await;
        }
        xfer.done().await;
        Ok(missing.first().map(|item| {
            format!(
                "transferring output files failed: error reading from {}: (errno {ENOENT}) No such file or directory",
                self.scratch.join(item).display()
            )
        }))
    }

    /// Sends the output `name`; gives its size.
    async fn send_output(&mut self, name: &str) -> Result<u64, OutputError> {
        let path = self.scratch.join(name);
        // with the job's rights: a link to a file it may not read sends
        // nothing
        let p = path.clone();
        let file = self
            .as_user
            .run_async(&self.rights(), move || std::fs::File::open(&p))
            .await
            .map_err(|e| OutputError::failed(e.to_string()))?
            .map_err(|e| OutputError::failed(format!("cannot open output {name}: {e}")))?;
        let file = tokio::fs::File::from_std(file);
        let meta = file
            .metadata()
            .await
            .map_err(|e| OutputError::failed(format!("cannot inspect output {name}: {e}")))?;
        let header = OutputFileMeta {
            claim_id: self.spec.claim_id.clone(),
            name: name.to_string(),
            mode: meta.mode() & 0o777,
            job_id: Some(self.spec.job_id.clone()),
        };
        let header =
            serde_json::to_string(&header).map_err(|e| OutputError::failed(e.to_string()))?;
        match self
            .client
            .upload::<Ack>(
                &routes::SHADOW_OUTPUT_FILE,
                (TRANSFER_HEADER, header),
                file,
                meta.len(),
            )
            .await
        {
            Ok(_) => self.contact_ok(),
            Err(e) if is_transient(&e) => return Err(OutputError::Lost(e)),
            Err(e) => return Err(OutputError::failed(format!("sending output {name}: {e}"))),
        }
        tracing::debug!(file = %name, bytes = meta.len(), "output sent");
        Ok(meta.len())
    }
}

/// Why the outputs did not all reach the shadow.
enum OutputError {
    /// The shadow could not be reached (refused, reset, timed out).
    Lost(skua_net::NetError),
    /// Anything else: the run fails.
    Failed(Failure),
}

impl OutputError {
    fn failed(reason: String) -> OutputError {
        OutputError::Failed(Failure::retry(reason))
    }
}

/// The next tick of `interval`; never, without one.
async fn tick_if_any(interval: &mut Option<tokio::time::Interval>) {
    match interval {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Waits (two seconds at most: a loaded machine may take a while to
/// schedule the stop) until process `pid` is stopped by a signal.
async fn wait_stopped(pid: Pid) {
    let path = format!("/proc/{pid}/stat");
    for _ in 0..2000 {
        let state = std::fs::read_to_string(&path).ok().and_then(|line| {
            let rest = &line[line.rfind(')')? + 1..];
            rest.split_whitespace().next().map(str::to_string)
        });
        match state.as_deref() {
            Some("T") | Some("t") | None => return,
            _ => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
}

async fn hard_kill(running: &mut Running) {
    let _ = killpg(running.pgid, Signal::SIGKILL);
    crate::cgroup::kill(running.cgroup.as_ref());
    let _ = running.child.wait().await;
}

fn outcome_of(status: ExitStatus) -> RunOutcome {
    match (status.code(), status.signal()) {
        (Some(code), _) => RunOutcome::Exited { code },
        (None, Some(signal)) => RunOutcome::Signaled {
            signal,
            core_dumped: status.core_dumped(),
        },
        (None, None) => RunOutcome::Exited { code: -1 },
    }
}

/// Fetches every input entry into `scratch`, each directory and file made
/// with `rights` (the job's account).
async fn fetch_inputs(
    client: &Client,
    claim_id: &str,
    scratch: &Path,
    inputs: &[skua_proto::InputEntry],
    as_user: &AsUser,
    rights: &Rights,
    xfer: &mut Transfer,
) -> Result<(), Failure> {
    for (index, entry) in inputs.iter().enumerate() {
        if !plan::is_safe_relative(&entry.path) {
            return Err(Failure::permanent(format!(
                "the shadow sent an input path outside the scratch directory: `{}`",
                entry.path
            )));
        }
        let path = scratch.join(&entry.path);
        let mut mode = entry.mode & 0o777;
        if mode == 0 {
            mode = if entry.kind == EntryKind::Dir {
                0o755
            } else {
                0o644
            };
        }
        if entry.executable {
            mode |= 0o700;
        }
        if entry.kind == EntryKind::Dir {
            mode |= 0o700; // the starter still writes inside it
        }
        let (p, kind) = (path.clone(), entry.kind);
        // the directories, and the file created new (never through a link)
        let made = as_user
            .run_async(rights, move || -> std::io::Result<Option<std::fs::File>> {
                use std::os::unix::fs::OpenOptionsExt;
                if kind == EntryKind::Dir {
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(&p)?;
                    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))?;
                    return Ok(None);
                }
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&p)
                    .map(Some)
            })
            .await
            .map_err(|e| Failure::retry(e.to_string()))?
            .map_err(|e| Failure::retry(format!("cannot create input {}: {e}", entry.path)))?;
        let Some(file) = made else {
            continue;
        };
        let mut file = tokio::fs::File::from_std(file);
        let req = InputFileRequest {
            claim_id: claim_id.to_string(),
            index,
        };
        let n = client
            .download(&routes::SHADOW_INPUT_FILE, &req, &mut file)
            .await
            .map_err(|e| Failure::retry(format!("fetching input {}: {e}", entry.path)))?;
        file.sync_all()
            .await
            .map_err(|e| Failure::retry(format!("cannot write input {}: {e}", entry.path)))?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .await
            .map_err(|e| Failure::retry(format!("cannot set the mode of {}: {e}", entry.path)))?;
        xfer.moved(n).await;
        tracing::debug!(file = %entry.path, bytes = n, "input fetched");
    }
    Ok(())
}

/// The regular files at the top of `dir`, by name, with size and
/// modification time.
pub(crate) fn top_level_files(dir: &Path) -> BTreeMap<String, Stamp> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        out.insert(name, (meta.len(), mtime));
    }
    out
}

/// Every regular file below `root/rel`, as paths relative to `root`.
pub(crate) fn files_below(root: &Path, rel: &str, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    let mut names: Vec<String> = rd
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        let child = format!("{rel}/{name}");
        match std::fs::symlink_metadata(root.join(&child)) {
            Ok(m) if m.is_dir() => files_below(root, &child, out),
            Ok(m) if m.is_file() => out.push(child),
            _ => {}
        }
    }
}

/// The facts a parallel node's environment needs from this process: the directory of the
/// running binaries (`skua` beside `skuad`), the starter's own `PATH` and its configuration
/// variable.
fn node_facts() -> crate::parallel::NodeFacts {
    crate::parallel::NodeFacts {
        bin_dir: std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.display().to_string()))
            .unwrap_or_default(),
        starter_path: std::env::var("PATH").ok(),
        config_var: ["SKUA_CONFIG", "CONDOR_CONFIG"]
            .into_iter()
            .find_map(|name| {
                std::env::var(name)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| (name.to_string(), v))
            }),
    }
}
