//! The startd's loop: it owns the slots (`skua_slot::Machine`) and the
//! starters, takes one [`Event`] at a time, asks the core what to do and
//! carries out the core's [`Action`]s. Nothing else touches the slots: the
//! routes, the `POLLING_INTERVAL` timer, the starters' tasks and the
//! STARTD_CRON scripts only send events. Every time the loop decides by
//! comes from the daemon's clock.
//!
//! After each event the slot ads are published (at most every
//! [`MIN_UPDATE_GAP`]: a burst of changes costs one rebuild) on a watch
//! channel for the [advertiser](crate::advertise).

use std::collections::BTreeMap;

use classad::Expr;
use nix::sys::signal::Signal;
use skua_daemon::Clock;
use skua_net::ApiError;
use skua_proto::{ClaimReply, ClaimStatus, SlotStates, StarterGone, StarterHold, StarterSpec};
use skua_slot::{Action, Machine, Refusal};
use tokio::sync::{mpsc, watch};

use crate::advertise::MIN_UPDATE_GAP;
use crate::event::{Event, Measured, Reply, Request};
use crate::peers::Peers;
use crate::starters::{self, StarterSetup, Starters};

fn api_error(r: Refusal) -> ApiError {
    match r {
        Refusal::NotFound(m) => ApiError::not_found(m),
        Refusal::Conflict(m) => ApiError::conflict(m),
        Refusal::BadRequest(m) => ApiError::bad_request(m),
        Refusal::Unavailable(m) => ApiError::unavailable(m),
    }
}

/// The loop's state: the machine and what carries out its actions.
pub struct Shell {
    pub machine: Machine,
    starters: Starters,
    /// The slot of each starter started, by pid: a starter whose claim is
    /// over may still be sending its jobs' outputs (its pending sandboxes
    /// count against that slot's Disk until they are gone).
    starter_slots: std::collections::BTreeMap<u32, String>,
    setup: StarterSetup,
    /// Handed to the starters' tasks.
    events: mpsc::Sender<Event>,
    /// Each STARTD_CRON job's latest attributes.
    cron: BTreeMap<String, BTreeMap<String, Expr>>,
    peers: Peers,
    clock: Clock,
}

impl Shell {
    pub fn new(
        machine: Machine,
        setup: StarterSetup,
        events: mpsc::Sender<Event>,
        peers: Peers,
        clock: Clock,
    ) -> Shell {
        Shell {
            machine,
            starters: Starters::default(),
            starter_slots: Default::default(),
            setup,
            events,
            cron: BTreeMap::new(),
            peers,
            clock,
        }
    }

    /// Runs until `shutdown` turns true, publishing the slot ads on `ads`;
    /// then stops the running jobs' starters.
    pub async fn run(
        mut self,
        mut events: mpsc::Receiver<Event>,
        ads: watch::Sender<Vec<(String, classad::ClassAd)>>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        // Slot ads are rebuilt for the advertiser at most every
        // MIN_UPDATE_GAP (it sends no more often). The gap paces work and
        // runs on real time.
        let mut last_publish = tokio::time::Instant::now();
        let mut dirty = false;
        let mut publish = tokio::time::interval(MIN_UPDATE_GAP);
        publish.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let mut changed = false;
            tokio::select! {
                Some(ev) = events.recv() => changed = self.handle(ev).await,
                _ = publish.tick(), if dirty => {}
                _ = shutdown.changed() => {
                    if *shutdown.borrow() { break; }
                }
            }
            self.let_go_of_idle_starters();
            dirty |= changed;
            if dirty && last_publish.elapsed() >= MIN_UPDATE_GAP {
                let _ = ads.send(self.machine.ads(self.clock.now_secs()));
                last_publish = tokio::time::Instant::now();
                dirty = false;
            }
        }
        tracing::info!("startd shutting down");
        for (slot, s) in self.starters.iter() {
            tracing::info!("{slot}: killing starter {}", s.pid);
            self.starters.signal(slot, Signal::SIGQUIT);
        }
    }

    /// Handles one event; true when the slot ads may have changed.
    pub async fn handle(&mut self, ev: Event) -> bool {
        match ev {
            Event::Request {
                request,
                caller,
                reply,
            } => {
                // A keep-alive changes nothing; an activation concerns one
                // slot, evaluated at once (every slot is at each
                // POLLING_INTERVAL).
                let (mutating, focus) = match &request {
                    Request::Alive(_) | Request::Reconnect(_) | Request::Locate { .. } => {
                        (false, None)
                    }
                    Request::Activate(a) => (
                        true,
                        self.machine
                            .claim_status(&a.claim_id)
                            .ok()
                            .map(|(slot, _, _)| slot),
                    ),
                    _ => (true, None),
                };
                let r = self.request(request, &caller).await;
                let changed = mutating && r.is_ok();
                let _ = reply.send(r);
                if mutating {
                    let now = self.clock.now_secs();
                    let actions = match focus {
                        Some(slot) => self.machine.evaluate_slot(&slot, now),
                        None => self.machine.tick(now),
                    };
                    self.act(actions, now);
                }
                changed
            }
            Event::Poll(measured) => {
                self.poll(measured);
                // the measured facts changed: the advertiser sends the ads
                // that differ
                true
            }
            Event::StarterDone { slot, pid } => {
                self.starter_done(&slot, pid);
                let now = self.clock.now_secs();
                let actions = self.machine.evaluate_slot(&slot, now);
                self.act(actions, now);
                true
            }
            Event::StarterExited { slot, pid, status } => {
                self.starter_exited(&slot, pid, status);
                let now = self.clock.now_secs();
                let actions = self.machine.tick(now);
                self.act(actions, now);
                true
            }
            Event::Cron { job, attrs } => {
                self.cron.insert(job, attrs);
                self.machine.cron = self
                    .cron
                    .values()
                    .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
                    .collect();
                true
            }
        }
    }

    /// The `POLLING_INTERVAL` tick: the owner's activity and the load as
    /// just measured, then every slot's policy.
    fn poll(&mut self, measured: Measured) {
        let facts = &mut self.machine.facts;
        facts.load_avg = measured.load_avg;
        facts.keyboard_idle = measured.keyboard_idle;
        facts.console_idle = measured.console_idle;
        if let Some(overrides) = measured.overrides {
            self.machine.overrides = overrides;
        }
        // pending output sandboxes count against their slot's Disk
        let live: Vec<u32> = self.starters.iter().map(|(_, s)| s.pid).collect();
        let pending = &measured.pending_outputs;
        self.starter_slots
            .retain(|pid, _| live.contains(pid) || pending.contains_key(pid));
        let mut by_slot = std::collections::BTreeMap::new();
        for (pid, kb) in pending {
            if let Some(slot) = self.starter_slots.get(pid) {
                *by_slot.entry(slot.clone()).or_insert(0i64) += *kb;
            }
        }
        self.machine.pending_output_kb = by_slot;
        let now = self.clock.now_secs();
        let actions = self.machine.tick(now);
        self.act(actions, now);
    }

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
                    if !self.starters.signal(&slot, sig) {
                        // no starter to wait for
                        let more = self.machine.starter_exited(&slot, now);
                        self.act(more, now);
                    }
                }
                Action::Suspend => {
                    tracing::info!("{slot}: suspending the job");
                    self.starters.signal(&slot, Signal::SIGUSR1);
                }
                Action::Continue => {
                    tracing::info!("{slot}: continuing the job");
                    self.starters.signal(&slot, Signal::SIGUSR2);
                }
                Action::Hold { reason, subcode } => {
                    tracing::info!("{slot}: WANT_HOLD holds the job: {reason}");
                    if let Some(st) = self.starters.get(&slot) {
                        let hold = StarterHold {
                            reason,
                            code: skua_slot::HOLD_CODE_STARTD,
                            subcode,
                        };
                        self.setup.write_hold(st.pid, &hold);
                    }
                }
                Action::KillStarterTree => {
                    if let Some(st) = self.starters.get(&slot) {
                        tracing::warn!("{slot}: killing starter {} and its job outright", st.pid);
                        self.setup.kill_tree(st.pid);
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

    /// The running job of a claim (see [`crate::job_access`]).
    fn locate(&self, claim_id: &str, job_id: &str, now: i64) -> Result<Reply, ApiError> {
        let (slot, _, _) = self
            .machine
            .claim_status(claim_id)
            .map_err(|_| ApiError::not_found("Claim not found at execution machine"))?;
        let starter = self
            .starters
            .get(&slot)
            .filter(|st| skua_slot::claim_ids_equal(&st.claim_id, claim_id))
            .ok_or_else(|| ApiError::conflict(format!("job {job_id} is not running")))?;
        let pid = crate::job_access::process_of(
            &self.setup.pgid_file(starter.pid),
            starter.pid,
            starter.busy,
            &starter.job_id,
            job_id,
        )?;
        let i = self.machine.slots.iter().position(|s| s.name == slot);
        let job_ad = i.and_then(|i| {
            self.machine.slots[i]
                .claim
                .as_ref()
                .and_then(|c| c.job_ad.clone())
        });
        Ok(Reply::Job(crate::job_access::JobProcess {
            pid,
            starter_pid: starter.pid,
            slot_ad: i.map(|i| self.machine.slot_ad(i, now)).unwrap_or_default(),
            job_ad,
        }))
    }

    async fn request(&mut self, request: Request, caller: &str) -> Result<Reply, ApiError> {
        let now = self.clock.now_secs();
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
                match starters::spawn(&self.setup, &launch.slot, &spec, self.events.clone()).await {
                    Ok(starter) => {
                        tracing::info!(
                            "{}: job {} started (starter pid {})",
                            launch.slot,
                            a.job_id,
                            starter.pid
                        );
                        self.starter_slots.insert(starter.pid, launch.slot.clone());
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
            Request::Reconnect(r) => {
                let (slot, status, job_id) =
                    self.machine.claim_status(&r.claim_id).map_err(|_| {
                        tracing::info!("reconnect from {caller}: no such claim");
                        ApiError::not_found("Claim not found at execution machine")
                    })?;
                // the job runs, or its starter (idle now) may still hold
                // its results for the shadow
                let held = self.starters.get(&slot).is_some_and(|st| {
                    skua_slot::claim_ids_equal(&st.claim_id, &r.claim_id) && st.job_id == r.job_id
                });
                if job_id.as_deref() != Some(r.job_id.as_str()) && !held {
                    tracing::info!(
                        "reconnect from {caller}: job {} is not active under the claim",
                        r.job_id
                    );
                    return Err(ApiError::not_found("Job not found at execution machine"));
                }
                self.machine.reconnect(&r.claim_id, &r.shadow_addr, now);
                if let Some(st) = self.starters.get_mut(&slot) {
                    let msg = skua_proto::StarterMessage::Shadow {
                        shadow: skua_proto::ShadowMoved {
                            claim_id: r.claim_id.clone(),
                            job_id: r.job_id.clone(),
                            shadow_addr: r.shadow_addr.clone(),
                        },
                    };
                    if !st.send_message(&msg) {
                        tracing::warn!(
                            "{slot}: cannot pass the shadow's address to starter {}",
                            st.pid
                        );
                    }
                }
                tracing::info!(
                    "{slot}: job {} reconnected by {} ({caller})",
                    r.job_id,
                    r.shadow_addr
                );
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
            Request::Locate { claim_id, job_id } => self.locate(&claim_id, &job_id, now),
        }
    }

    /// A starter exited (its task has cleaned up after it).
    fn starter_exited(&mut self, slot: &str, pid: u32, status: Option<std::process::ExitStatus>) {
        // a hold written after the starter's task cleaned up must not
        // wait for the next starter given the same pid
        let _ = std::fs::remove_file(self.setup.hold_file(pid));
        let abnormal = !status.is_some_and(|s| s.success());
        let lost_shadow =
            status.and_then(|s| s.code()) == Some(skua_proto::STARTER_EXIT_LOST_SHADOW);
        // Only the exit of the starter running the slot's job ends that
        // job; an idle starter, or one already replaced, leaves no job.
        let running = self
            .starters
            .get(slot)
            .is_some_and(|s| s.pid == pid && s.busy);
        if self.starters.get(slot).is_some_and(|s| s.pid == pid) {
            self.starters.remove(slot);
        }
        if abnormal {
            // its pending output transfers will not end: their jobs go back
            for (shadow, gone) in starters::orphaned_transfers(&self.setup.execute, pid) {
                tracing::warn!("{}", gone.reason);
                self.peers.starter_gone(&shadow, gone);
            }
        }
        if !running {
            return;
        }
        let now = self.clock.now_secs();
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
                self.peers.starter_gone(
                    &job.shadow_addr,
                    StarterGone {
                        claim_id,
                        job_id: job.job_id.clone(),
                        reason,
                    },
                );
            }
        }
        let mut actions = self.machine.starter_exited(slot, now);
        if lost_shadow {
            // the job's shadow stayed unreachable for its lease: the claim
            // is over too, and the slot free
            let claim = self
                .machine
                .slot(slot)
                .and_then(|s| s.claim.as_ref())
                .map(|c| c.id.clone());
            if let Some(claim) = claim {
                tracing::warn!(
                    "{slot}: the starter lost its shadow for the job's lease: the claim is dropped"
                );
                if let Ok(more) = self.machine.release(&claim, now) {
                    actions.extend(more);
                }
            }
        }
        self.act(actions, now);
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
        let now = self.clock.now_secs();
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use skua_daemon::ManualClock;
    use skua_proto::{ActivateRequest, ClaimAlive, ClaimRequest, MatchNotice};
    use skua_slot::{MachineFacts, StartdConfig};
    use tokio::sync::oneshot;

    use super::*;

    const SLOT: &str = "slot1@node.example";
    const CLAIM: &str = "claim-0123456789abcdef";
    const JOB: &str = "[ Owner = \"alice\"; RequestCpus = 1; RequestMemory = 100; \
                       RequestDisk = 1000; Requirements = TARGET.Cpus >= RequestCpus ]";

    fn shell(clock: Clock, execute: &std::path::Path) -> Shell {
        starting(clock, execute, "exit 1").0
    }

    /// A shell whose starters are `sh -c script`, with the receiver of the
    /// events its starters send.
    fn starting(
        clock: Clock,
        execute: &std::path::Path,
        script: &str,
    ) -> (Shell, mpsc::Receiver<Event>) {
        let facts = MachineFacts {
            cpus: 1,
            memory_mb: 1024,
            disk_kb: 100_000,
            hostname: "node.example".into(),
            ..MachineFacts::default()
        };
        let config = StartdConfig::from_knobs(&|_: &str| None, &facts).unwrap();
        let machine = Machine::new(facts, config, clock.now_secs());
        let setup = StarterSetup {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            execute: execute.to_path_buf(),
            cgroups: None,
        };
        let (events, received) = mpsc::channel(16);
        let shell = Shell::new(machine, setup, events, Peers::nowhere(), clock);
        (shell, received)
    }

    /// The next event the starters send.
    async fn next(events: &mut mpsc::Receiver<Event>) -> Event {
        tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("an event from the starter")
            .expect("the shell keeps a sender")
    }

    async fn match_and_claim(shell: &mut Shell) {
        let notice = MatchNotice {
            slot: SLOT.into(),
            claim_id: CLAIM.into(),
            submitter: "alice@example".into(),
            schedd_addr: "<127.0.0.1:1>".into(),
            preempting: false,
        };
        ask(shell, Request::Match(notice)).await.unwrap();
        let claim = ClaimRequest {
            claim_id: CLAIM.into(),
            job_ad: JOB.into(),
            schedd_addr: "<127.0.0.1:1>".into(),
            // with MAX_CLAIM_ALIVES_MISSED = 6: a lease of 60 s
            alive_interval_secs: 10,
        };
        let Reply::Claim(reply) = ask(shell, Request::Claim(claim)).await.unwrap() else {
            panic!("a claim is answered with the slot");
        };
        assert_eq!(reply.slot, SLOT);
        assert_eq!(state(shell), ("Claimed", "Idle"));
    }

    fn activate(job_id: &str) -> Request {
        Request::Activate(ActivateRequest {
            claim_id: CLAIM.into(),
            job_ad: JOB.into(),
            job_id: job_id.into(),
            shadow_addr: "<127.0.0.1:1>".into(),
            owner_ids: None,
        })
    }

    async fn ask(shell: &mut Shell, request: Request) -> Result<Reply, ApiError> {
        let (reply, answer) = oneshot::channel();
        shell
            .handle(Event::Request {
                request,
                caller: "test".into(),
                reply,
            })
            .await;
        answer.await.unwrap()
    }

    fn state(shell: &Shell) -> (&'static str, &'static str) {
        let s = &shell.machine.slots[0];
        (s.status.state.as_str(), s.status.activity.as_str())
    }

    fn poll() -> Event {
        Event::Poll(Measured {
            load_avg: 0.0,
            keyboard_idle: 3600,
            console_idle: 3600,
            overrides: None,
            pending_outputs: Default::default(),
        })
    }

    #[tokio::test]
    async fn a_claims_lease_runs_on_the_daemons_clock() {
        let dir = tempfile::tempdir().unwrap();
        let manual = ManualClock::frozen(1_000_000);
        let mut shell = shell(manual.clock(), dir.path());
        match_and_claim(&mut shell).await;
        let alive = || {
            Request::Alive(ClaimAlive {
                claim_id: CLAIM.into(),
            })
        };
        // a keep-alive 30 s in renews the lease until 90 s in
        manual.advance(Duration::from_secs(30));
        ask(&mut shell, alive()).await.unwrap();
        manual.advance(Duration::from_secs(59));
        shell.handle(poll()).await;
        assert_eq!(state(&shell), ("Claimed", "Idle"));
        // a minute without one: the claim is dropped at the next poll
        manual.advance(Duration::from_secs(1));
        shell.handle(poll()).await;
        assert_ne!(state(&shell).0, "Claimed");
        let gone = ask(&mut shell, alive()).await.unwrap_err();
        assert_eq!(gone.0.code, skua_proto::ErrorCode::NotFound);
    }

    #[tokio::test]
    async fn the_loop_publishes_the_owners_activity_it_is_sent() {
        let dir = tempfile::tempdir().unwrap();
        let manual = ManualClock::frozen(1_000_000);
        let shell = shell(manual.clock(), dir.path());
        let (events_tx, events) = mpsc::channel(16);
        let (ads_tx, mut ads) = watch::channel(Vec::new());
        let (stop, shutdown) = watch::channel(false);
        let running = tokio::spawn(shell.run(events, ads_tx, shutdown));
        let overrides = [("Site".to_string(), classad::parse_expr("\"lab\"").unwrap())];
        events_tx
            .send(Event::Poll(Measured {
                load_avg: 0.5,
                keyboard_idle: 0,
                console_idle: 7,
                overrides: Some(overrides.into_iter().collect()),
                pending_outputs: Default::default(),
            }))
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(10), ads.changed())
            .await
            .expect("the ads are published")
            .unwrap();
        let published = ads.borrow().clone();
        let (name, ad) = &published[0];
        assert_eq!(name, SLOT);
        let attr = |a: &str| ad.lookup(a).map(classad::unparse);
        assert_eq!(attr("KeyboardIdle").as_deref(), Some("0"));
        assert_eq!(attr("ConsoleIdle").as_deref(), Some("7"));
        assert_eq!(attr("Site").as_deref(), Some("\"lab\""));
        assert_eq!(attr("MyCurrentTime").as_deref(), Some("1000000"));
        stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .expect("the loop ends at shutdown")
            .unwrap();
    }

    #[tokio::test]
    async fn a_claims_starter_runs_its_jobs_one_after_another_until_the_release() {
        let dir = tempfile::tempdir().unwrap();
        let manual = ManualClock::frozen(1_000_000);
        // reports each job done at once; exits when its input closes
        let script = "while IFS= read -r spec; do echo '{\"done\":\"x\"}'; done";
        let (mut shell, mut events) = starting(manual.clock(), dir.path(), script);
        match_and_claim(&mut shell).await;
        ask(&mut shell, activate("1.0")).await.unwrap();
        assert_eq!(state(&shell), ("Claimed", "Busy"));
        let pid = shell.starters.get(SLOT).unwrap().pid;
        // the next job waits for the first one's end
        let early = ask(&mut shell, activate("1.1")).await.unwrap_err();
        assert_eq!(early.0.code, skua_proto::ErrorCode::Unavailable);
        let done = next(&mut events).await;
        assert!(matches!(&done, Event::StarterDone { slot, pid: p } if slot == SLOT && *p == pid));
        shell.handle(done).await;
        assert_eq!(state(&shell), ("Claimed", "Idle"));
        // the same starter gets the claim's next job
        ask(&mut shell, activate("1.1")).await.unwrap();
        assert_eq!(state(&shell), ("Claimed", "Busy"));
        assert_eq!(shell.starters.get(SLOT).unwrap().pid, pid);
        shell.handle(next(&mut events).await).await;
        assert_eq!(state(&shell), ("Claimed", "Idle"));
        // the release lets the idle starter go: it exits
        let release = Request::Release(skua_proto::ReleaseRequest {
            claim_id: CLAIM.into(),
        });
        ask(&mut shell, release).await.unwrap();
        shell.let_go_of_idle_starters();
        assert!(shell.starters.get(SLOT).is_none());
        let exited = next(&mut events).await;
        assert!(
            matches!(&exited, Event::StarterExited { pid: p, status: Some(s), .. } if *p == pid && s.success()),
            "{exited:?}"
        );
        shell.handle(exited).await;
        assert_ne!(state(&shell).0, "Claimed");
    }

    #[tokio::test]
    async fn a_reconnect_finds_the_running_job_and_passes_the_shadows_address_to_its_starter() {
        let dir = tempfile::tempdir().unwrap();
        let manual = ManualClock::frozen(1_000_000);
        // records every line it is sent
        let lines = dir.path().join("lines");
        let script = format!(
            "while IFS= read -r l; do printf '%s\\n' \"$l\" >> {}; done",
            lines.display()
        );
        let (mut shell, _events) = starting(manual.clock(), dir.path(), &script);
        match_and_claim(&mut shell).await;
        ask(&mut shell, activate("1.0")).await.unwrap();
        let reconnect = |claim: &str, job: &str| {
            Request::Reconnect(skua_proto::ReconnectRequest {
                claim_id: claim.into(),
                job_id: job.into(),
                shadow_addr: "<10.0.0.9:4242>".into(),
            })
        };
        let e = ask(&mut shell, reconnect("claim-unknown-0123456789", "1.0"))
            .await
            .unwrap_err();
        assert_eq!(e.0.code, skua_proto::ErrorCode::NotFound);
        assert_eq!(e.0.message, "Claim not found at execution machine");
        let e = ask(&mut shell, reconnect(CLAIM, "1.1")).await.unwrap_err();
        assert_eq!(e.0.code, skua_proto::ErrorCode::NotFound);
        assert_eq!(e.0.message, "Job not found at execution machine");
        // 50 s later (the lease is 60 s): found, the lease renewed
        manual.advance(Duration::from_secs(50));
        let Reply::Status(status) = ask(&mut shell, reconnect(CLAIM, "1.0")).await.unwrap() else {
            panic!("a reconnect is answered with the claim's status");
        };
        assert_eq!(status.job_id.as_deref(), Some("1.0"));
        let claim = shell.machine.slots[0].claim.as_ref().unwrap();
        assert_eq!(claim.schedd_addr, "<10.0.0.9:4242>");
        assert_eq!(claim.job.as_ref().unwrap().shadow_addr, "<10.0.0.9:4242>");
        manual.advance(Duration::from_secs(50));
        shell.handle(poll()).await;
        assert_eq!(state(&shell), ("Claimed", "Busy"), "the lease was renewed");
        // the starter got its job, then the shadow's new address
        let want = "\"shadow\":{\"claim_id\":\"claim-0123456789abcdef\",\"job_id\":\"1.0\",\"shadow_addr\":\"<10.0.0.9:4242>\"}";
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let got = std::fs::read_to_string(&lines).unwrap_or_default();
            if got.lines().count() >= 2 {
                assert!(got.lines().nth(1).unwrap().contains(want), "{got}");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the starter got: {got}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn a_starter_that_lost_its_shadow_for_the_lease_frees_the_slot() {
        let dir = tempfile::tempdir().unwrap();
        let manual = ManualClock::frozen(1_000_000);
        // gives its job up at once, as after a lease without its shadow
        let script = format!(
            "read -r spec; exit {}",
            skua_proto::STARTER_EXIT_LOST_SHADOW
        );
        let (mut shell, mut events) = starting(manual.clock(), dir.path(), &script);
        match_and_claim(&mut shell).await;
        ask(&mut shell, activate("1.0")).await.unwrap();
        let exited = next(&mut events).await;
        assert!(matches!(&exited, Event::StarterExited { .. }), "{exited:?}");
        shell.handle(exited).await;
        // the claim is over: not Claimed/Idle waiting for a next job
        assert_ne!(state(&shell).0, "Claimed");
        let alive = Request::Alive(ClaimAlive {
            claim_id: CLAIM.into(),
        });
        let gone = ask(&mut shell, alive).await.unwrap_err();
        assert_eq!(gone.0.code, skua_proto::ErrorCode::NotFound);
    }

    #[tokio::test]
    async fn a_lease_that_runs_out_kills_the_running_starter_and_frees_the_slot() {
        let dir = tempfile::tempdir().unwrap();
        let manual = ManualClock::frozen(1_000_000);
        // runs its job until killed
        let script = "while IFS= read -r spec; do :; done";
        let (mut shell, mut events) = starting(manual.clock(), dir.path(), script);
        match_and_claim(&mut shell).await;
        ask(&mut shell, activate("1.0")).await.unwrap();
        assert_eq!(state(&shell), ("Claimed", "Busy"));
        let pid = shell.starters.get(SLOT).unwrap().pid;
        // no keep-alive for the lease (60 s): the starter is killed
        manual.advance(Duration::from_secs(60));
        shell.handle(poll()).await;
        assert_eq!(state(&shell), ("Preempting", "Killing"));
        let exited = next(&mut events).await;
        assert!(
            matches!(&exited, Event::StarterExited { pid: p, status: Some(s), .. } if *p == pid && !s.success()),
            "{exited:?}"
        );
        shell.handle(exited).await;
        assert!(shell.starters.get(SLOT).is_none());
        assert_ne!(state(&shell).0, "Claimed");
        assert_ne!(state(&shell).0, "Preempting");
    }
}
