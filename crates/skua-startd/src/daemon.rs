//! `skuad startd`: the shell around `skua-slot`.
//!
//! One event loop owns the [`Machine`]: requests from the routes, timer
//! ticks, starter exits and STARTD_CRON results arrive as [`Event`]s on one
//! channel and are handled in order. Slot ads are published on a watch
//! channel; an advertiser task sends them to the collector at every
//! change (coalesced), every `UPDATE_INTERVAL`, and withdraws them at a
//! clean shutdown.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use classad::{ClassAd, Expr};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use skua_daemon::context::Locator;
use skua_daemon::{now_secs, DaemonContext};
use skua_net::routing::post;
use skua_net::{ApiError, Caller, Json, Listener, Routes, Server, State};
use skua_proto::{
    routes, Ack, ActivateRequest, AdUpdate, ClaimAlive, ClaimReply, ClaimRequest, ClaimStatus,
    DeactivateRequest, DrainRequest, Invalidate, MatchNotice, ReleaseRequest, SlotStates,
    StarterDone, StarterGone, StarterHold, StarterSpec, VacateRequest,
};
use skua_slot::{Action, Machine, Refusal, StartdConfig};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::{mpsc, oneshot, watch};

use crate::cron::{self, CronJob};
use crate::facts::{self, FactSources};

/// A request from a route.
#[derive(Debug)]
pub enum Request {
    Match(MatchNotice),
    Claim(ClaimRequest),
    Activate(ActivateRequest),
    Deactivate(DeactivateRequest),
    Release(ReleaseRequest),
    Alive(ClaimAlive),
    Vacate(VacateRequest),
    Drain(DrainRequest),
}

/// A route's answer.
#[derive(Debug)]
pub enum Reply {
    Ack,
    Claim(ClaimReply),
    Status(ClaimStatus),
    States(SlotStates),
}

/// Everything the loop reacts to.
#[derive(Debug)]
pub enum Event {
    Request {
        request: Request,
        caller: String,
        reply: oneshot::Sender<Result<Reply, ApiError>>,
    },
    /// A starter reported its job's run over; it waits for the claim's
    /// next job.
    StarterDone { slot: String, pid: u32 },
    /// A starter exited.
    StarterExited {
        slot: String,
        pid: u32,
        status: Option<std::process::ExitStatus>,
    },
    /// A STARTD_CRON job produced attributes.
    Cron {
        job: String,
        attrs: BTreeMap<String, Expr>,
    },
}

#[derive(Clone)]
struct Shared {
    events: mpsc::Sender<Event>,
}

async fn ask(st: &Shared, caller: &Caller, request: Request) -> Result<Reply, ApiError> {
    let (tx, rx) = oneshot::channel();
    st.events
        .send(Event::Request {
            request,
            caller: caller.identity.to_string(),
            reply: tx,
        })
        .await
        .map_err(|_| ApiError::unavailable("the startd is shutting down"))?;
    rx.await
        .map_err(|_| ApiError::unavailable("the startd is shutting down"))?
}

async fn ack(st: &Shared, caller: &Caller, request: Request) -> Result<Json<Ack>, ApiError> {
    ask(st, caller, request).await.map(|_| Json(Ack {}))
}

async fn match_route(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<MatchNotice>,
) -> Result<Json<Ack>, ApiError> {
    ack(&st, &caller, Request::Match(req)).await
}

async fn claim_route(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<ClaimRequest>,
) -> Result<Json<ClaimReply>, ApiError> {
    match ask(&st, &caller, Request::Claim(req)).await? {
        Reply::Claim(r) => Ok(Json(r)),
        _ => Err(ApiError::internal("no claim reply")),
    }
}

async fn activate_route(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<ActivateRequest>,
) -> Result<Json<Ack>, ApiError> {
    ack(&st, &caller, Request::Activate(req)).await
}

async fn deactivate_route(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<DeactivateRequest>,
) -> Result<Json<Ack>, ApiError> {
    ack(&st, &caller, Request::Deactivate(req)).await
}

async fn release_route(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<ReleaseRequest>,
) -> Result<Json<Ack>, ApiError> {
    ack(&st, &caller, Request::Release(req)).await
}

async fn alive_route(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<ClaimAlive>,
) -> Result<Json<ClaimStatus>, ApiError> {
    match ask(&st, &caller, Request::Alive(req)).await? {
        Reply::Status(s) => Ok(Json(s)),
        _ => Err(ApiError::internal("no claim status")),
    }
}

async fn vacate_route(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<VacateRequest>,
) -> Result<Json<SlotStates>, ApiError> {
    match ask(&st, &caller, Request::Vacate(req)).await? {
        Reply::States(s) => Ok(Json(s)),
        _ => Err(ApiError::internal("no slot states")),
    }
}

async fn drain_route(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<DrainRequest>,
) -> Result<Json<SlotStates>, ApiError> {
    match ask(&st, &caller, Request::Drain(req)).await? {
        Reply::States(s) => Ok(Json(s)),
        _ => Err(ApiError::internal("no slot states")),
    }
}

fn api_error(r: Refusal) -> ApiError {
    match r {
        Refusal::NotFound(m) => ApiError::not_found(m),
        Refusal::Conflict(m) => ApiError::conflict(m),
        Refusal::BadRequest(m) => ApiError::bad_request(m),
        Refusal::Unavailable(m) => ApiError::unavailable(m),
    }
}

/// A starter: one per active claim, running the claim's jobs one after
/// another.
struct Starter {
    pid: u32,
    /// The claim it serves.
    claim_id: String,
    /// A job is running (false: the starter reported it done and waits).
    busy: bool,
    /// The next jobs' specs; dropping it closes the starter's standard
    /// input, which ends an idle starter (and kills a busy one's job).
    input: mpsc::UnboundedSender<Vec<u8>>,
}

impl Starter {
    /// Hands an idle starter the claim's next job.
    fn send(&mut self, spec: &StarterSpec) -> bool {
        let Ok(mut doc) = serde_json::to_vec(spec) else {
            return false;
        };
        doc.push(b'\n');
        if self.input.send(doc).is_err() {
            return false;
        }
        self.busy = true;
        true
    }
}

/// How starters are run and where.
#[derive(Clone, Debug)]
pub struct StarterSetup {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub execute: PathBuf,
    /// Where the starters put their jobs' cgroups (when they do).
    pub cgroups: Option<skua_daemon::cgroup::CgroupTree>,
}

/// The starter program: `STARTER` when the configuration sets it (not the
/// built-in default, which names HTCondor's own starter), with
/// `STARTER_ARGS`; otherwise this executable with the argument `starter`.
fn starter_setup(ctx: &DaemonContext, execute: PathBuf) -> anyhow::Result<StarterSetup> {
    let configured = |name: &str| {
        ctx.config
            .knob(name)
            .is_some_and(|k| !matches!(k.origin, skua_config::Origin::Default))
    };
    let (program, args) = match ctx.knob("STARTER")? {
        Some(p) if configured("STARTER") => {
            let args = match ctx.knob("STARTER_ARGS")? {
                Some(a) if configured("STARTER_ARGS") => {
                    a.split_whitespace().map(str::to_string).collect()
                }
                _ => Vec::new(),
            };
            (PathBuf::from(p), args)
        }
        _ => (
            std::env::current_exe().context("locating skuad")?,
            vec!["starter".to_string()],
        ),
    };
    let base_cgroup = ctx.knob("BASE_CGROUP")?.unwrap_or_default();
    Ok(StarterSetup {
        program,
        args,
        cgroups: skua_daemon::cgroup::CgroupTree::discover(&base_cgroup, &execute).ok(),
        execute,
    })
}

fn pgid_file(execute: &Path, pid: u32) -> PathBuf {
    execute.join(format!("dir_{pid}.pgid"))
}

fn hold_file(execute: &Path, pid: u32) -> PathBuf {
    execute.join(format!("dir_{pid}.hold"))
}

/// Kills the process group named in `file` (if any) and removes it.
fn kill_group_of(file: &Path) {
    if let Ok(text) = std::fs::read_to_string(file) {
        if let Ok(pgid) = text.trim().parse::<i32>() {
            if pgid > 1 {
                match killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
                    Ok(()) => tracing::info!("killed the leftover process group {pgid}"),
                    Err(nix::errno::Errno::ESRCH) => {}
                    Err(e) => tracing::warn!("killing process group {pgid}: {e}"),
                }
            }
        }
    }
    let _ = std::fs::remove_file(file);
}

/// At start-up: kills the process groups of leftover `dir_*.pgid` files
/// and removes every `dir_*` in the execute directory.
pub fn clean_execute(execute: &Path) {
    let Ok(entries) = std::fs::read_dir(execute) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "hold"))
    {
        let _ = std::fs::remove_file(p);
    }
    for p in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "pgid"))
    {
        if p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("dir_"))
        {
            kill_group_of(p);
        }
    }
    for p in &entries {
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.starts_with("dir_") || !p.exists() {
            continue;
        }
        let r = if p.is_dir() {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        };
        match r {
            Ok(()) => tracing::info!("removed the leftover {}", p.display()),
            Err(e) => tracing::warn!("removing the leftover {}: {e}", p.display()),
        }
    }
}

/// After a starter exited: an abnormal exit leaves its job's process
/// group behind, so it is killed; the scratch directory goes either way.
fn clean_after_starter(execute: &Path, pid: u32, abnormal: bool) {
    let _ = std::fs::remove_file(hold_file(execute, pid));
    let file = pgid_file(execute, pid);
    if abnormal {
        kill_group_of(&file);
    } else {
        let _ = std::fs::remove_file(&file);
    }
    let dir = execute.join(format!("dir_{pid}"));
    if dir.exists() {
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            tracing::warn!("removing {}: {e}", dir.display());
        }
    }
}

/// Signals the starter running `slot`'s job. False when no job runs there
/// (an idle starter is not signalled: it has nothing to stop).
fn signal_starter(starters: &BTreeMap<String, Starter>, slot: &str, sig: Signal) -> bool {
    let Some(s) = starters.get(slot).filter(|s| s.busy) else {
        return false;
    };
    let Ok(pid) = i32::try_from(s.pid) else {
        return false;
    };
    // the starter leads its own process group
    match nix::sys::signal::kill(Pid::from_raw(pid), sig) {
        Ok(()) => {
            tracing::info!("sent {sig} to the starter {pid} of {slot}");
            true
        }
        Err(e) => {
            tracing::warn!("sending {sig} to the starter {pid} of {slot}: {e}");
            false
        }
    }
}

/// Spawns a starter for `slot` with its first job's spec on standard input.
/// Further specs go through [`Starter::send`]; each [`StarterDone`] line on
/// its standard output comes back as an [`Event::StarterDone`], its exit as
/// an [`Event::StarterExited`].
async fn spawn_starter(
    setup: &StarterSetup,
    slot: &str,
    spec: &StarterSpec,
    events: mpsc::Sender<Event>,
) -> anyhow::Result<Starter> {
    let mut cmd = tokio::process::Command::new(&setup.program);
    cmd.args(&setup.args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", setup.program.display()))?;
    let pid = child.id().context("the starter has no pid")?;
    let mut stdin = child.stdin.take().context("the starter has no stdin")?;
    let stdout = child.stdout.take().context("the starter has no stdout")?;
    let (input, mut docs) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        // until the startd drops the sender: then standard input closes
        while let Some(doc) = docs.recv().await {
            if let Err(e) = stdin.write_all(&doc).await {
                tracing::warn!("writing a spec to starter {pid}: {e}");
                break;
            }
            let _ = stdin.flush().await;
        }
        drop(stdin);
    });
    let slot_name = slot.to_string();
    let done_events = events.clone();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            match serde_json::from_str::<StarterDone>(&line) {
                Ok(_) => {
                    let ev = Event::StarterDone {
                        slot: slot_name.clone(),
                        pid,
                    };
                    if done_events.send(ev).await.is_err() {
                        break;
                    }
                }
                Err(_) => tracing::debug!("starter {pid} wrote: {line}"),
            }
        }
    });
    let slot_name = slot.to_string();
    tokio::spawn(async move {
        let status = child.wait().await.ok();
        let _ = events
            .send(Event::StarterExited {
                slot: slot_name,
                pid,
                status,
            })
            .await;
    });
    let mut starter = Starter {
        pid,
        claim_id: spec.claim_id.clone(),
        busy: false,
        input,
    };
    if !starter.send(spec) {
        anyhow::bail!("cannot hand starter {pid} its job");
    }
    Ok(starter)
}

/// Attributes that follow the clock rather than the slot's state: a change
/// in them alone does not make an ad worth sending before the next
/// periodic update. (`KeyboardIdle` and `ConsoleIdle` are not among them:
/// they change only when the owner's activity is measured, and START
/// often depends on them, so the matchmaker must see them.)
const CLOCK_ATTRS: &[&str] = &[
    "MyCurrentTime",
    "StateTimer",
    "ActivityTimer",
    "TotalJobRunTime",
    "TotalJobSuspendTime",
    "JobRunTimeNotSuspended",
    "TotalClaimRunTime",
    "TotalTimeClaimedBusy",
    "TotalTimeClaimedIdle",
];

/// What decides whether a slot ad changed: its text without the clock
/// attributes.
fn ad_signature(ad: &ClassAd) -> String {
    let mut ad = ad.clone();
    for a in CLOCK_ATTRS {
        ad.remove(a);
    }
    classad::unparse_ad(&ad)
}

/// The shortest gap between two rounds of updates: changes that come
/// faster (a job ending and the next starting on a reused claim) are
/// coalesced into one update.
const MIN_UPDATE_GAP: Duration = Duration::from_millis(100);

/// Sends the slot ads to the collector: the ads that changed (apart from
/// their clock attributes) at every change, coalesced to one round per
/// [`MIN_UPDATE_GAP`]; every ad every `interval`; withdraws ads of slots
/// that are gone, and all of them at the end.
async fn advertise(
    collector: Locator,
    token: Option<String>,
    lifetime: u64,
    interval: Duration,
    mut ads: watch::Receiver<Vec<(String, ClassAd)>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let client = || -> Result<skua_net::Client, String> {
        collector
            .client(token.clone(), Duration::from_secs(10))
            .map_err(|e| e.to_string())
    };
    // what the collector last accepted, by slot name
    let mut advertised: BTreeMap<String, String> = BTreeMap::new();
    let mut failing = false;
    let mut last_full = tokio::time::Instant::now();
    let mut full = true;
    loop {
        let current = ads.borrow_and_update().clone();
        let mut ok = true;
        match client() {
            Ok(c) => {
                for (name, ad) in &current {
                    let sig = ad_signature(ad);
                    if !full && advertised.get(name) == Some(&sig) {
                        continue;
                    }
                    let update = AdUpdate {
                        ad_type: "Machine".into(),
                        name: name.clone(),
                        ad: classad::unparse_ad(ad),
                        lifetime_secs: lifetime,
                    };
                    let r: Result<Ack, _> =
                        c.command(&routes::COLLECTOR_UPDATE, Some(&update)).await;
                    if let Err(e) = r {
                        if !failing {
                            tracing::warn!("cannot advertise {name}: {e}");
                        }
                        ok = false;
                        break;
                    }
                    advertised.insert(name.clone(), sig);
                }
                let names: BTreeSet<&String> = current.iter().map(|(n, _)| n).collect();
                let gone: Vec<String> = advertised
                    .keys()
                    .filter(|n| !names.contains(n))
                    .cloned()
                    .collect();
                for name in gone {
                    let inv = Invalidate {
                        ad_type: "Machine".into(),
                        name: name.clone(),
                    };
                    let _: Result<Ack, _> =
                        c.command(&routes::COLLECTOR_INVALIDATE, Some(&inv)).await;
                    advertised.remove(&name);
                }
            }
            Err(e) => {
                if !failing {
                    tracing::warn!("cannot reach the collector: {e}");
                }
                ok = false;
            }
        }
        if ok && full {
            last_full = tokio::time::Instant::now();
        }
        if !ok {
            // send everything again once the collector answers
            advertised.clear();
        }
        failing = !ok;
        let next_full = if failing {
            tokio::time::Instant::now() + interval.min(Duration::from_secs(1))
        } else {
            last_full + interval
        };
        tokio::time::sleep(MIN_UPDATE_GAP).await;
        full = tokio::select! {
            _ = tokio::time::sleep_until(next_full) => true,
            r = ads.changed() => {
                if r.is_err() { break; }
                false
            }
            _ = shutdown.changed() => false,
        };
        if *shutdown.borrow() {
            break;
        }
    }
    if let Ok(c) = client() {
        for name in advertised.keys() {
            let inv = Invalidate {
                ad_type: "Machine".into(),
                name: name.clone(),
            };
            let _: Result<Ack, _> = c.command(&routes::COLLECTOR_INVALIDATE, Some(&inv)).await;
        }
    }
}

fn run_cron(job: CronJob, events: mpsc::Sender<Event>) {
    tokio::spawn(async move {
        loop {
            match cron::run_once(&job).await {
                Ok(attrs) => {
                    if events
                        .send(Event::Cron {
                            job: job.name.clone(),
                            attrs,
                        })
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Err(e) => tracing::warn!("STARTD_CRON {}: {e}", job.name),
            }
            if job.one_shot {
                return;
            }
            tokio::time::sleep(job.period).await;
        }
    });
}

/// What the startd needs to call shadows (schedds).
#[derive(Clone)]
struct Dialer(skua_daemon::context::Dialer);

impl Dialer {
    /// Tells the shadow at `shadow_addr` that the starter of `job_id`
    /// under `claim_id` is gone without a report (in the background; a
    /// schedd that does not answer learns it from its keep-alives).
    fn starter_gone(&self, shadow_addr: &str, gone: StarterGone) {
        let client = self.0.client_at(shadow_addr, Duration::from_secs(10));
        let addr = shadow_addr.to_string();
        tokio::spawn(async move {
            let r = match client {
                Ok(c) => c
                    .command::<_, Ack>(&routes::SHADOW_STARTER_GONE, Some(&gone))
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match r {
                Ok(()) => tracing::info!(
                    "told the shadow at {addr} that job {}'s starter is gone",
                    gone.job_id
                ),
                Err(e) => tracing::debug!(
                    "telling the shadow at {addr} that job {}'s starter is gone: {e}",
                    gone.job_id
                ),
            }
        });
    }
}

/// The loop's state besides the machine.
struct Shell {
    machine: Machine,
    starters: BTreeMap<String, Starter>,
    setup: StarterSetup,
    events: mpsc::Sender<Event>,
    cron: BTreeMap<String, BTreeMap<String, Expr>>,
    dialer: Dialer,
}

impl Shell {
    /// Carries out the core's actions.
    fn act(&mut self, actions: Vec<(String, Action)>, now: i64) {
        for (slot, a) in actions {
            match a {
                Action::SoftKillStarter | Action::HardKillStarter => {
                    let sig = if a == Action::SoftKillStarter {
                        Signal::SIGTERM
                    } else {
                        Signal::SIGQUIT
                    };
                    if !signal_starter(&self.starters, &slot, sig) {
                        // no starter to wait for
                        let more = self.machine.starter_exited(&slot, now);
                        self.act(more, now);
                    }
                }
                Action::Suspend => {
                    tracing::info!("{slot}: suspending the job");
                    signal_starter(&self.starters, &slot, Signal::SIGUSR1);
                }
                Action::Continue => {
                    tracing::info!("{slot}: continuing the job");
                    signal_starter(&self.starters, &slot, Signal::SIGUSR2);
                }
                Action::Hold { reason, subcode } => {
                    tracing::info!("{slot}: WANT_HOLD holds the job: {reason}");
                    if let Some(st) = self.starters.get(&slot) {
                        let hold = StarterHold {
                            reason,
                            code: skua_slot::HOLD_CODE_STARTD,
                            subcode,
                        };
                        let path = hold_file(&self.setup.execute, st.pid);
                        match serde_json::to_vec(&hold) {
                            Ok(doc) => {
                                if let Err(e) = std::fs::write(&path, doc) {
                                    tracing::warn!("writing {}: {e}", path.display());
                                }
                            }
                            Err(e) => tracing::warn!("encoding the hold: {e}"),
                        }
                    }
                }
                Action::KillStarterTree => {
                    if let Some(st) = self.starters.get(&slot) {
                        tracing::warn!("{slot}: killing starter {} and its job outright", st.pid);
                        kill_group_of(&pgid_file(&self.setup.execute, st.pid));
                        if let Ok(pid) = i32::try_from(st.pid) {
                            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                        }
                    }
                }
                Action::DropClaim => tracing::info!("{slot}: claim dropped"),
                Action::LeaseExpired { lease_secs } => tracing::warn!(
                    "{slot}: no keep-alive from the claim's schedd for {lease_secs} s (its lease): \
                     killing its job and dropping the claim"
                ),
                Action::PromoteClaim => {
                    tracing::info!("{slot}: matched to the preempting claim")
                }
                Action::SpawnStarter => {}
            }
        }
    }

    /// Every slot's name, state and activity.
    fn states(&self) -> SlotStates {
        SlotStates {
            slots: self
                .machine
                .slots
                .iter()
                .map(|s| {
                    (
                        s.name.clone(),
                        s.status.state.as_str().to_string(),
                        s.status.activity.as_str().to_string(),
                    )
                })
                .collect(),
        }
    }

    async fn request(&mut self, request: Request, caller: &str) -> Result<Reply, ApiError> {
        let now = now_secs();
        let refused = |what: &str, r: Refusal| {
            match &r {
                Refusal::NotFound(_) => {
                    tracing::warn!("{what} from {caller} with an unknown claim id refused")
                }
                other => tracing::info!("{what} from {caller} refused: {other}"),
            }
            api_error(r)
        };
        match request {
            Request::Match(m) if m.preempting => {
                let actions = self
                    .machine
                    .preempting_match(&m.slot, &m.claim_id, &m.submitter, &m.schedd_addr, now)
                    .map_err(|r| refused("preempting match", r))?;
                tracing::info!(
                    "{} matched to {} ({}), preempting its claim",
                    m.slot,
                    m.submitter,
                    m.schedd_addr
                );
                self.act(actions, now);
                Ok(Reply::Ack)
            }
            Request::Match(m) => {
                self.machine
                    .match_notice(&m.slot, &m.claim_id, &m.submitter, &m.schedd_addr, now)
                    .map_err(|r| refused("match", r))?;
                tracing::info!("{} matched to {} ({})", m.slot, m.submitter, m.schedd_addr);
                Ok(Reply::Ack)
            }
            Request::Vacate(v) => {
                tracing::info!("vacate {:?} asked by {caller}", v.slots);
                let actions = self
                    .machine
                    .vacate(&v.slots, !v.fast, now)
                    .map_err(|r| refused("vacate", r))?;
                self.act(actions, now);
                Ok(Reply::States(self.states()))
            }
            Request::Drain(d) => {
                tracing::info!(
                    "{} asked by {caller}",
                    if d.cancel { "drain cancel" } else { "drain" }
                );
                let actions = self
                    .machine
                    .drain(d.cancel, now)
                    .map_err(|r| refused("drain", r))?;
                self.act(actions, now);
                Ok(Reply::States(self.states()))
            }
            Request::Claim(c) => {
                let job = classad::parse_ad(&c.job_ad)
                    .map_err(|e| ApiError::bad_request(format!("job ad: {e}")))?;
                let (slot, ad) = self
                    .machine
                    .claim(&c.claim_id, &job, &c.schedd_addr, now)
                    .map_err(|r| refused("claim", r))?;
                self.machine.set_alive_interval(
                    &c.claim_id,
                    i64::try_from(c.alive_interval_secs).unwrap_or(i64::MAX),
                );
                tracing::info!("{slot} claimed by {}", c.schedd_addr);
                Ok(Reply::Claim(ClaimReply {
                    slot,
                    slot_ad: classad::unparse_ad(&ad),
                }))
            }
            Request::Activate(a) => {
                let job = classad::parse_ad(&a.job_ad)
                    .map_err(|e| ApiError::bad_request(format!("job ad: {e}")))?;
                let launch = self
                    .machine
                    .activate(&a.claim_id, &job, &a.job_id, &a.shadow_addr, now)
                    .map_err(|r| refused("activation", r))?;
                let spec = StarterSpec {
                    claim_id: a.claim_id.clone(),
                    job_id: a.job_id.clone(),
                    job_ad: a.job_ad.clone(),
                    slot_ad: classad::unparse_ad(&launch.slot_ad),
                    shadow_addr: a.shadow_addr.clone(),
                    execute_dir: self.setup.execute.to_string_lossy().into_owned(),
                    max_vacate_secs: u64::try_from(launch.max_vacate_secs).unwrap_or(0),
                    owner_ids: a.owner_ids,
                };
                if let Some(st) = self
                    .starters
                    .get_mut(&launch.slot)
                    .filter(|st| !st.busy && st.claim_id == a.claim_id)
                {
                    if st.send(&spec) {
                        tracing::info!(
                            "{}: job {} started (starter pid {}, reused)",
                            launch.slot,
                            a.job_id,
                            st.pid
                        );
                        return Ok(Reply::Ack);
                    }
                }
                // a new claim, or the old starter is gone: a new starter
                self.starters.remove(&launch.slot);
                match spawn_starter(&self.setup, &launch.slot, &spec, self.events.clone()).await {
                    Ok(starter) => {
                        tracing::info!(
                            "{}: job {} started (starter pid {})",
                            launch.slot,
                            a.job_id,
                            starter.pid
                        );
                        self.starters.insert(launch.slot, starter);
                        Ok(Reply::Ack)
                    }
                    Err(e) => {
                        tracing::error!("{}: cannot start a starter: {e:#}", launch.slot);
                        let more = self.machine.starter_exited(&launch.slot, now);
                        self.act(more, now);
                        Err(ApiError::internal(format!("cannot start a starter: {e:#}")))
                    }
                }
            }
            Request::Deactivate(d) => {
                let actions = self
                    .machine
                    .deactivate(&d.claim_id, d.graceful, now)
                    .map_err(|r| refused("deactivation", r))?;
                self.act(actions, now);
                Ok(Reply::Ack)
            }
            Request::Alive(a) => {
                let (slot, status, job_id) = self
                    .machine
                    .keep_alive(&a.claim_id, now)
                    .map_err(|r| refused("keep-alive", r))?;
                Ok(Reply::Status(ClaimStatus {
                    slot,
                    state: status.state.as_str().to_string(),
                    activity: status.activity.as_str().to_string(),
                    job_id,
                }))
            }
            Request::Release(r) => {
                let actions = self
                    .machine
                    .release(&r.claim_id, now)
                    .map_err(|x| refused("release", x))?;
                self.act(actions, now);
                Ok(Reply::Ack)
            }
        }
    }

    fn starter_exited(&mut self, slot: &str, pid: u32, status: Option<std::process::ExitStatus>) {
        let abnormal = !status.is_some_and(|s| s.success());
        match status {
            Some(s) if s.success() => tracing::info!("{slot}: starter {pid} exited"),
            Some(s) => tracing::warn!("{slot}: starter {pid} exited abnormally ({s})"),
            None => tracing::warn!("{slot}: starter {pid}: exit status lost"),
        }
        clean_after_starter(&self.setup.execute, pid, abnormal);
        if let Some(cgroups) = &self.setup.cgroups {
            cgroups.clean_leftovers(Some(pid), Duration::from_secs(2));
        }
        // Only the exit of the starter running the slot's job ends that
        // job; an idle starter, or one already replaced, leaves no job.
        let running = self
            .starters
            .get(slot)
            .is_some_and(|s| s.pid == pid && s.busy);
        if self.starters.get(slot).is_some_and(|s| s.pid == pid) {
            self.starters.remove(slot);
        }
        if running {
            let now = now_secs();
            if abnormal {
                // the shadow has no report from it: tell it now
                let job = self
                    .machine
                    .slot(slot)
                    .and_then(|s| s.claim.as_ref())
                    .and_then(|c| c.job.as_ref().map(|j| (c.id.clone(), j.clone())));
                if let Some((claim_id, job)) = job {
                    let reason = match status {
                        Some(s) => format!(
                            "the starter of job {} on {slot} exited without a report ({s})",
                            job.job_id
                        ),
                        None => format!(
                            "the starter of job {} on {slot} exited without a report",
                            job.job_id
                        ),
                    };
                    self.dialer.starter_gone(
                        &job.shadow_addr,
                        StarterGone {
                            claim_id,
                            job_id: job.job_id.clone(),
                            reason,
                        },
                    );
                }
            }
            let actions = self.machine.starter_exited(slot, now);
            self.act(actions, now);
        }
    }

    /// A starter finished its job and waits for the claim's next one.
    fn starter_done(&mut self, slot: &str, pid: u32) {
        let Some(st) = self.starters.get_mut(slot).filter(|s| s.pid == pid) else {
            return;
        };
        if !st.busy {
            return;
        }
        st.busy = false;
        tracing::info!("{slot}: the job of starter {pid} is done");
        let now = now_secs();
        let actions = self.machine.starter_exited(slot, now);
        self.act(actions, now);
    }

    /// Idle starters whose claim is over are let go (their standard input
    /// closes and they exit).
    fn let_go_of_idle_starters(&mut self) {
        let machine = &self.machine;
        self.starters.retain(|slot, st| {
            if st.busy {
                return true;
            }
            let same_claim = machine
                .slots
                .iter()
                .find(|s| &s.name == slot)
                .and_then(|s| s.claim.as_ref())
                .is_some_and(|c| c.id == st.claim_id);
            if !same_claim {
                tracing::debug!("{slot}: the claim is over; starter {} ends", st.pid);
            }
            same_claim
        });
    }
}

/// `STARTD_ATTRIBUTE_FILE`: `Name = expression` lines (old ClassAd
/// syntax, `#` comments) that override the slot ads' measured and cron
/// attributes, e.g. `KeyboardIdle = 0` to play an owner at the keyboard.
/// A missing or unreadable file overrides nothing; a bad line is skipped.
pub fn read_attribute_file(path: &Path) -> BTreeMap<String, Expr> {
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        match classad::parse_expr(value.trim()) {
            Ok(e) => {
                out.insert(name.to_string(), e);
            }
            Err(e) => tracing::warn!("{}: {name}: {e}", path.display()),
        }
    }
    out
}

fn host_name() -> String {
    skua_daemon::system_config::host_facts(&skua_daemon::system_config::environment())
        .get("FULL_HOSTNAME")
        .cloned()
        .unwrap_or_else(|| "localhost".into())
}

/// Runs the startd until `shutdown` turns true.
pub async fn serve(ctx: DaemonContext, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let start = now_secs();
    let speed = tokio::task::spawn_blocking(crate::bench::measure);
    let execute = PathBuf::from(
        ctx.knob("EXECUTE")?
            .context("EXECUTE is not defined: the startd runs jobs there")?,
    );
    std::fs::create_dir_all(&execute).with_context(|| format!("creating {}", execute.display()))?;
    clean_execute(&execute);
    skua_daemon::cgroup::clean_leftover_job_groups(
        &ctx.knob("BASE_CGROUP")?.unwrap_or_default(),
        &execute,
    );
    let host = host_name();
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
    };
    let mut facts = facts::measure(&sources);
    (facts.mips, facts.kflops) = crate::bench::results(speed).await;
    let knob = |name: &str| ctx.knob(name).ok().flatten();
    let config = StartdConfig::from_knobs(&knob, &facts).context("startd configuration")?;
    let cron_jobs = cron::jobs(&knob).map_err(|e| anyhow::anyhow!("startd configuration: {e}"))?;
    let setup = starter_setup(&ctx, execute.clone())?;
    let mut machine = Machine::new(facts, config, start);

    let tcp = ctx.tcp_listener(0).await.context("startd")?;
    let sock = ctx.socket_path()?;
    let unix = Listener::unix(&sock)
        .await
        .context("startd: binding its Unix socket")?;
    let (events_tx, mut events) = mpsc::channel::<Event>(256);
    let routes = Routes::new()
        .command(&routes::STARTD_MATCH, post(match_route))
        .command(&routes::STARTD_CLAIM, post(claim_route))
        .command(&routes::STARTD_ACTIVATE, post(activate_route))
        .command(&routes::STARTD_DEACTIVATE, post(deactivate_route))
        .command(&routes::STARTD_RELEASE, post(release_route))
        .command(&routes::STARTD_ALIVE, post(alive_route))
        .command(&routes::STARTD_VACATE, post(vacate_route))
        .command(&routes::STARTD_DRAIN, post(drain_route))
        .with_state(Shared {
            events: events_tx.clone(),
        });
    let server = Server::new(ctx.server_config(), routes).context("startd: server setup")?;
    let handle = server.spawn(vec![tcp, unix]);
    let addr = handle.local_addr().context("startd: no TCP address")?;
    machine.address = format!("<{addr}>");
    let addr_file = ctx.address_file()?;
    skua_daemon::write_address_file(&addr_file, addr)?;
    tracing::info!(
        "startd listening on {addr} and {}; {} slot(s), starter {}",
        sock.display(),
        machine.slots.len(),
        setup.program.display()
    );

    // the owner's played activity counts from the first ad on
    let attribute_file = ctx
        .knob("STARTD_ATTRIBUTE_FILE")?
        .filter(|f| !f.trim().is_empty())
        .map(PathBuf::from);
    if let Some(file) = &attribute_file {
        machine.overrides = read_attribute_file(file);
    }
    let (ads_tx, ads_rx) = watch::channel(machine.ads(now_secs()));
    let advertiser = tokio::spawn(advertise(
        ctx.locator("COLLECTOR")?,
        ctx.daemon_token.clone(),
        ctx.classad_lifetime,
        ctx.update_interval,
        ads_rx,
        shutdown.clone(),
    ));
    for job in cron_jobs {
        run_cron(job, events_tx.clone());
    }

    let mut shell = Shell {
        machine,
        starters: BTreeMap::new(),
        setup,
        events: events_tx,
        cron: BTreeMap::new(),
        dialer: Dialer(ctx.dialer().context("startd: dialing shadows")?),
    };
    // the policy is evaluated every POLLING_INTERVAL (and after every
    // event); the owner's activity is measured (and the attribute file
    // read) at each poll
    let polling = u64::try_from(shell.machine.config.polling_interval)
        .unwrap_or(5)
        .max(1);
    let mut tick = tokio::time::interval(Duration::from_secs(polling));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_publish = tokio::time::Instant::now();
    // Slot ads are rebuilt for the advertiser at most every MIN_UPDATE_GAP
    // (it sends no more often): a burst of changes costs one rebuild.
    let mut dirty = false;
    let mut publish = tokio::time::interval(MIN_UPDATE_GAP);
    publish.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let mut changed = false;
        tokio::select! {
            Some(ev) = events.recv() => {
                changed = true;
                match ev {
                    Event::Request { request, caller, reply } => {
                        // A keep-alive changes nothing; an activation
                        // concerns one slot, evaluated at once (every slot
                        // is at each POLLING_INTERVAL).
                        let (mutating, focus) = match &request {
                            Request::Alive(_) => (false, None),
                            Request::Activate(a) => (
                                true,
                                shell.machine.claim_status(&a.claim_id).ok().map(|(slot, _, _)| slot),
                            ),
                            _ => (true, None),
                        };
                        let r = shell.request(request, &caller).await;
                        changed = mutating && r.is_ok();
                        let _ = reply.send(r);
                        if mutating {
                            let now = now_secs();
                            let actions = match focus {
                                Some(slot) => shell.machine.evaluate_slot(&slot, now),
                                None => shell.machine.tick(now),
                            };
                            shell.act(actions, now);
                        }
                    }
                    Event::StarterDone { slot, pid } => {
                        shell.starter_done(&slot, pid);
                        let now = now_secs();
                        let actions = shell.machine.evaluate_slot(&slot, now);
                        shell.act(actions, now);
                    }
                    Event::StarterExited { slot, pid, status } => {
                        shell.starter_exited(&slot, pid, status);
                        let now = now_secs();
                        let actions = shell.machine.tick(now);
                        shell.act(actions, now);
                    }
                    Event::Cron { job, attrs } => {
                        shell.cron.insert(job, attrs);
                        shell.machine.cron = shell
                            .cron
                            .values()
                            .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
                            .collect();
                    }
                }
            }
            _ = tick.tick() => {
                let f = facts::measure(&sources);
                shell.machine.facts.load_avg = f.load_avg;
                shell.machine.facts.keyboard_idle = f.keyboard_idle;
                shell.machine.facts.console_idle = f.console_idle;
                if let Some(file) = &attribute_file {
                    shell.machine.overrides = read_attribute_file(file);
                }
                let now = now_secs();
                let actions = shell.machine.tick(now);
                shell.act(actions, now);
                // the measured facts changed: the advertiser sends the ads
                // that differ
                changed = true;
            }
            _ = publish.tick(), if dirty => {}
            _ = shutdown.changed() => {
                if *shutdown.borrow() { break; }
            }
        }
        shell.let_go_of_idle_starters();
        dirty |= changed;
        if dirty && last_publish.elapsed() >= MIN_UPDATE_GAP {
            let _ = ads_tx.send(shell.machine.ads(now_secs()));
            last_publish = tokio::time::Instant::now();
            dirty = false;
        }
    }
    tracing::info!("startd shutting down");
    for (slot, s) in &shell.starters {
        tracing::info!("{slot}: killing starter {}", s.pid);
        signal_starter(&shell.starters, slot, Signal::SIGQUIT);
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), advertiser).await;
    let _ = std::fs::remove_file(&addr_file);
    handle.shutdown().await;
    Ok(())
}
