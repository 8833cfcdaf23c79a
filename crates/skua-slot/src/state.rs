//! The per-slot state machine: `(status, policy, event, now) -> (status,
//! actions)`.
//!
//! HTCondor's startd states and activities with the transitions of its
//! documented state diagram (letters A..O for states, numbers 1..37 for
//! activities; see `docs/policy.md` for the table). The owner's policy
//! arrives already evaluated as a [`Policy`] (START, IS_OWNER, SUSPEND,
//! CONTINUE, PREEMPT, KILL, WANT_SUSPEND, WANT_VACATE, WANT_HOLD,
//! MaxJobRetirementTime, MachineMaxVacateTime evaluated with the slot ad as
//! MY and the running job as TARGET at `now`): [`step`] makes at most one
//! transition, and the caller ([`crate::Machine`]) evaluates again and
//! steps again until nothing changes, so every expression sees the state
//! and timers of the moment.

/// HTCondor's slot states and activities, shared with the other crates
/// (see `skua-types`). The state machine never enters `Backfill`.
pub use skua_types::{Activity, SlotState as State};

/// Where a slot goes once its job is gone (the end of Preempting, or of a
/// retirement whose job finished by itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// The claim stays: Claimed/Idle (the schedd deactivated the claim).
    ClaimedIdle,
    /// The claim goes: Unclaimed/Idle (the schedd released it).
    Unclaimed,
    /// The claim goes: Owner/Idle (PREEMPT, `skua vacate`, START false on
    /// an idle claim); the next evaluation of IS_OWNER usually brings the
    /// slot back to Unclaimed (transitions J then A).
    Owner,
    /// The claim goes and the preempting claim takes the slot:
    /// Matched/Idle (rank or priority preemption).
    NewClaim,
    /// The claim goes: Drained/Retiring (the machine is being drained).
    Drained,
}

/// Why a claimed slot is retiring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retire {
    /// A preempting claim waits: the job may retire (and the slot may
    /// unretire if that claim goes away).
    ForClaim,
    /// PREEMPT became true: the job retires, then is evicted (no way back).
    Policy,
    /// The machine is being drained.
    Drain,
}

/// A slot's place in the state machine, and the clocks of its job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub state: State,
    pub activity: Activity,
    /// When the slot entered `state` (`EnteredCurrentState`).
    pub entered_state: i64,
    /// When the slot entered `activity` (`EnteredCurrentActivity`).
    pub entered_activity: i64,
    /// Where the slot goes when its job is gone.
    pub after: After,
    /// Set once the slot is retiring (or was asked to while suspended).
    pub retire: Option<Retire>,
    /// When the current job was activated (`JobStart`).
    pub job_started: Option<i64>,
    /// Seconds the current job spent suspended, not counting a suspension
    /// in progress.
    pub suspended_secs: i64,
    /// When the current suspension began.
    pub suspended_since: Option<i64>,
    /// The number of times the current job was suspended.
    pub suspensions: i64,
    /// The starter was killed hard after `KILLING_TIMEOUT` in Killing.
    pub starter_killed: bool,
    /// The eviction holds the job (WANT_HOLD).
    pub holding: bool,
}

impl Status {
    /// A fresh slot: Unclaimed/Idle since `now`.
    pub fn new(now: i64) -> Status {
        Status {
            state: State::Unclaimed,
            activity: Activity::Idle,
            entered_state: now,
            entered_activity: now,
            after: After::ClaimedIdle,
            retire: None,
            job_started: None,
            suspended_secs: 0,
            suspended_since: None,
            suspensions: 0,
            starter_killed: false,
            holding: false,
        }
    }

    fn to(mut self, state: State, activity: Activity, now: i64) -> Status {
        if state != self.state {
            self.entered_state = now;
            self.entered_activity = now;
        } else if activity != self.activity {
            self.entered_activity = now;
        }
        if activity == Activity::Suspended && self.activity != Activity::Suspended {
            self.suspended_since = Some(now);
            self.suspensions += 1;
        }
        if activity != Activity::Suspended {
            if let Some(since) = self.suspended_since.take() {
                self.suspended_secs += (now - since).max(0);
            }
        }
        if state == State::Preempting && self.state != State::Preempting {
            self.starter_killed = false;
        }
        self.state = state;
        self.activity = activity;
        self
    }

    /// The job's run time at `now` minus its suspensions
    /// (`TotalJobRunTime` less `TotalJobSuspendTime`).
    pub fn job_run_secs(&self, now: i64) -> i64 {
        let Some(start) = self.job_started else {
            return 0;
        };
        (now - start - self.job_suspend_secs(now)).max(0)
    }

    /// Seconds the current job has been suspended, including now.
    pub fn job_suspend_secs(&self, now: i64) -> i64 {
        self.suspended_secs + self.suspended_since.map_or(0, |s| (now - s).max(0))
    }

    /// Whether a starter runs under the slot.
    pub fn has_job(&self) -> bool {
        matches!(
            (self.state, self.activity),
            (
                State::Claimed,
                Activity::Busy | Activity::Suspended | Activity::Retiring
            ) | (State::Preempting, _)
        )
    }

    /// The slot is being preempted (retiring, or Preempting).
    pub fn being_preempted(&self) -> bool {
        self.state == State::Preempting || self.retire.is_some()
    }

    fn job_gone(mut self) -> Status {
        self.job_started = None;
        self.suspended_secs = 0;
        self.suspended_since = None;
        self.suspensions = 0;
        self.retire = None;
        self.holding = false;
        self.after = After::ClaimedIdle;
        self
    }
}

/// The timing knobs of the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// `MATCH_TIMEOUT`: a match not claimed within this many seconds is
    /// dropped.
    pub match_timeout: i64,
    /// `MAX_CLAIM_IDLE` (Skua): a claim left Claimed/Idle this long is
    /// released. Negative: never.
    pub max_claim_idle: i64,
    /// `KILLING_TIMEOUT`: seconds in Preempting/Killing before the startd
    /// kills the starter and the job's processes itself.
    pub killing_timeout: i64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            match_timeout: 120,
            max_claim_idle: 600,
            killing_timeout: 30,
        }
    }
}

/// A hold asked by WANT_HOLD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldRequest {
    /// `WANT_HOLD_REASON` (a default naming the startd's policy otherwise).
    pub reason: String,
    /// `WANT_HOLD_SUBCODE` (0 when undefined).
    pub subcode: i64,
}

/// The owner's policy, evaluated at `now` against the slot's ad (MY) and
/// its running job (TARGET) where there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// `IS_OWNER`, evaluated with no job.
    pub is_owner: bool,
    /// `START` evaluates to False with no job ("locally false"; for a
    /// claimed slot, against the claim's job ad).
    pub start_locally_false: bool,
    pub want_suspend: bool,
    pub suspend: bool,
    pub continue_: bool,
    pub preempt: bool,
    pub want_vacate: bool,
    pub kill: bool,
    /// `WANT_HOLD` is true (with its reason and subcode).
    pub want_hold: Option<HoldRequest>,
    /// `MaxJobRetirementTime` with the job's own value when smaller
    /// (seconds of the job's run, suspensions excluded).
    pub max_job_retirement_time: i64,
    /// `MachineMaxVacateTime` with the job's `JobMaxVacateTime` when
    /// smaller.
    pub max_vacate_time: i64,
    /// Every slot of the machine is drained (no job left): Drained/Retiring
    /// may become Drained/Idle.
    pub all_drained: bool,
}

impl Default for Policy {
    /// HTCondor's built-in defaults: START True, IS_OWNER False, no
    /// suspension, no preemption, WANT_VACATE True, KILL False,
    /// MaxJobRetirementTime 0, MachineMaxVacateTime 600.
    fn default() -> Self {
        Policy {
            is_owner: false,
            start_locally_false: false,
            want_suspend: false,
            suspend: false,
            continue_: true,
            preempt: false,
            want_vacate: true,
            kill: false,
            want_hold: None,
            max_job_retirement_time: 0,
            max_vacate_time: 600,
            all_drained: true,
        }
    }
}

/// What happens to a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The negotiator matched the slot.
    Match,
    /// The matched schedd claimed it.
    Claim,
    /// A job is to run under the claim.
    Activate,
    /// The slot's starter exited.
    StarterExited,
    /// Stop the job, keep the claim (the schedd).
    Deactivate { graceful: bool },
    /// Give up the claim (the schedd).
    Release,
    /// A match preempting the slot's claim arrived (rank or priority
    /// preemption): the job retires, is evicted, and the slot becomes
    /// Matched to the new claim.
    PreemptClaim,
    /// The owner wants the machine back (`skua vacate`): the job is
    /// evicted (soft unless `graceful` is false) and the claim ends.
    Vacate { graceful: bool },
    /// Draining starts (`skua drain`): jobs retire, slots become Drained.
    Drain,
    /// Draining is cancelled (`skua drain -cancel`).
    CancelDrain,
    /// The claim's lease ran out: its schedd sent no keep-alive for the
    /// lease's length. The job is killed and the claim dropped (the slot
    /// goes to Owner, then Unclaimed unless IS_OWNER holds).
    LeaseExpired,
    /// Time passes (POLLING_INTERVAL): the policy is evaluated.
    Tick,
}

/// What the daemon must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Start a starter for the claim's job.
    SpawnStarter,
    /// Ask the starter to vacate: the job's kill signal, then SIGKILL
    /// (SIGTERM to the starter).
    SoftKillStarter,
    /// Kill the job at once (SIGQUIT to the starter).
    HardKillStarter,
    /// `KILLING_TIMEOUT` ran out, or the claim's lease did: SIGKILL the
    /// starter and the job's process group.
    KillStarterTree,
    /// Stop the job's processes (SIGUSR1 to the starter: SIGSTOP to the
    /// job's process group).
    Suspend,
    /// Continue them (SIGUSR2: SIGCONT).
    Continue,
    /// The eviction that follows puts the job on hold (hold code 21, this
    /// subcode and reason); given before the kill action.
    Hold { reason: String, subcode: i64 },
    /// Forget the claim (and remove a dynamic slot).
    DropClaim,
    /// The preempting claim takes the slot (after [`Action::DropClaim`]).
    PromoteClaim,
    /// The claim's lease (this many seconds) ran out without a keep-alive
    /// from its schedd: announced (by [`crate::Machine`]) before the kill
    /// and the claim drop that follow.
    LeaseExpired { lease_secs: i64 },
}

/// Why an event does not apply in the slot's current state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub String);

/// HTCondor's hold code for a job the startd's WANT_HOLD put on hold
/// (`StartdHeldJob`).
pub const HOLD_CODE_STARTD: i64 = 21;

/// The transition function: at most one transition.
pub fn step(
    s: Status,
    p: &Policy,
    event: Event,
    now: i64,
    t: &Timeouts,
) -> Result<(Status, Vec<Action>), Refused> {
    use Activity::*;
    use State::*;
    let here = format!("the slot is {}/{}", s.state.as_str(), s.activity.as_str());
    let out = match (s.state, s.activity, event) {
        // ---- matching and claiming (C, D, G; 5, 6, 9)
        (Unclaimed, _, Event::Match) => (s.to(Matched, Idle, now), vec![]),
        (_, _, Event::Match) => return Err(Refused(format!("{here}, not Unclaimed"))),
        (Matched, _, Event::Claim) | (Unclaimed, _, Event::Claim) => {
            (s.to(Claimed, Idle, now), vec![])
        }
        (_, _, Event::Claim) => return Err(Refused(format!("{here}, not Matched"))),
        // ---- activation (11)
        (Claimed, Idle, Event::Activate) => {
            let mut n = s.job_gone().to(Claimed, Busy, now);
            n.job_started = Some(now);
            (n, vec![Action::SpawnStarter])
        }
        (_, _, Event::Activate) => return Err(Refused(format!("{here}, not Claimed/Idle"))),
        // ---- the starter exits (12; 18: a retiring job finished)
        (Claimed, Busy | Suspended, Event::StarterExited) if s.retire.is_none() => {
            (s.to(Claimed, Idle, now).job_gone(), vec![])
        }
        (Claimed, Busy | Suspended | Retiring, Event::StarterExited) => finish(s, now),
        (Preempting, _, Event::StarterExited) => finish(s, now),
        (_, _, Event::StarterExited) => (s, vec![]),
        // ---- the schedd deactivates the claim (keeps it)
        (Claimed, Busy | Suspended | Retiring, Event::Deactivate { graceful }) => {
            let mut n = s;
            n.after = if s.retire.is_some() {
                s.after
            } else {
                After::ClaimedIdle
            };
            preempt(n, graceful, None, now)
        }
        (Preempting, Vacating, Event::Deactivate { graceful: false }) => (
            s.to(Preempting, Killing, now),
            vec![Action::HardKillStarter],
        ),
        (Preempting, _, Event::Deactivate { .. }) | (Claimed, Idle, Event::Deactivate { .. }) => {
            (s, vec![])
        }
        (_, _, Event::Deactivate { .. }) => {
            return Err(Refused(format!("{here}: no job to deactivate")))
        }
        // ---- the schedd releases the claim (H; the job is killed)
        (Claimed, Busy | Suspended | Retiring, Event::Release) => {
            let mut n = s;
            if n.after != After::NewClaim && n.after != After::Drained {
                n.after = After::Unclaimed;
            }
            preempt(n, false, None, now)
        }
        (Preempting, _, Event::Release) => {
            let mut n = s;
            if n.after == After::ClaimedIdle {
                n.after = After::Unclaimed;
            }
            if s.activity == Killing {
                (n, vec![])
            } else {
                (
                    n.to(Preempting, Killing, now),
                    vec![Action::HardKillStarter],
                )
            }
        }
        (Claimed, Idle, Event::Release) | (Matched, _, Event::Release) => {
            let mut n = s;
            n.after = match s.after {
                After::NewClaim | After::Drained => s.after,
                _ => After::Unclaimed,
            };
            finish(n, now)
        }
        (_, _, Event::Release) => return Err(Refused(format!("{here}: no claim to release"))),
        // ---- a preempting match (H, I; 13 for a busy slot)
        (Claimed, _, Event::PreemptClaim) | (Preempting, _, Event::PreemptClaim)
            if s.being_preempted() =>
        {
            return Err(Refused(format!("{here}: already being preempted")))
        }
        (Claimed, Idle, Event::PreemptClaim) => {
            let mut n = s;
            n.after = After::NewClaim;
            finish(n, now)
        }
        (Claimed, Busy, Event::PreemptClaim) => {
            let mut n = s.to(Claimed, Retiring, now);
            n.retire = Some(Retire::ForClaim);
            n.after = After::NewClaim;
            (n, vec![])
        }
        (Claimed, Suspended, Event::PreemptClaim) => {
            // 16: retires once CONTINUE (or PREEMPT) moves it on
            let mut n = s;
            n.retire = Some(Retire::ForClaim);
            n.after = After::NewClaim;
            (n, vec![])
        }
        (_, _, Event::PreemptClaim) => return Err(Refused(format!("{here}, not Claimed"))),
        // ---- the owner asks for the machine (`skua vacate`; H, J; 10)
        (Claimed, Idle, Event::Vacate { .. }) | (Matched, _, Event::Vacate { .. }) => {
            let mut n = s;
            n.after = After::Owner;
            finish(n, now)
        }
        (Claimed, Busy | Suspended | Retiring, Event::Vacate { graceful }) => {
            let mut n = s;
            n.after = After::Owner;
            n.retire = Some(Retire::Policy);
            preempt(n, graceful, None, now)
        }
        (Preempting, _, Event::Vacate { .. }) => {
            let mut n = s;
            if n.after != After::Drained {
                n.after = After::Owner;
            }
            (n, vec![])
        }
        (Unclaimed, _, Event::Vacate { .. }) => (s.to(Owner, Idle, now), vec![]),
        (_, _, Event::Vacate { .. }) => (s, vec![]),
        // ---- draining (N, P; 33, 36, 37)
        (Owner | Unclaimed, _, Event::Drain) => (s.to(Drained, Retiring, now), vec![]),
        (Matched, _, Event::Drain) | (Claimed, Idle, Event::Drain) => {
            let mut n = s;
            n.after = After::Drained;
            finish(n, now)
        }
        (Claimed, Busy | Suspended | Retiring, Event::Drain) => {
            let mut n = if s.activity == Busy {
                s.to(Claimed, Retiring, now)
            } else {
                s
            };
            n.retire = Some(Retire::Drain);
            n.after = After::Drained;
            (n, vec![])
        }
        (Preempting, _, Event::Drain) => {
            let mut n = s;
            n.after = After::Drained;
            (n, vec![])
        }
        (Drained, _, Event::Drain) | (_, _, Event::Drain) => (s, vec![]),
        // O; 34, 35 (and 19: a retirement for draining is taken back)
        (Drained, _, Event::CancelDrain) => (s.to(Owner, Idle, now), vec![]),
        (Claimed, Retiring, Event::CancelDrain) if s.retire == Some(Retire::Drain) => {
            let mut n = s.to(Claimed, Busy, now);
            n.retire = None;
            n.after = After::ClaimedIdle;
            (n, vec![])
        }
        (Claimed, Suspended, Event::CancelDrain) if s.retire == Some(Retire::Drain) => {
            let mut n = s;
            n.retire = None;
            n.after = After::ClaimedIdle;
            (n, vec![])
        }
        (Preempting, _, Event::CancelDrain) if s.after == After::Drained => {
            let mut n = s;
            n.after = After::Owner;
            (n, vec![])
        }
        (_, _, Event::CancelDrain) => (s, vec![]),
        // ---- the claim's lease ran out: its schedd is gone, so the
        // starter (which would wait to report to it) and the job are
        // killed outright
        (Claimed, Busy | Suspended | Retiring, Event::LeaseExpired) => {
            let mut n = s;
            if n.after != After::NewClaim && n.after != After::Drained {
                n.after = After::Owner;
            }
            let mut n = n.to(Preempting, Killing, now);
            n.starter_killed = true;
            (n, vec![Action::KillStarterTree])
        }
        (Preempting, _, Event::LeaseExpired) => {
            let mut n = s;
            if matches!(n.after, After::ClaimedIdle | After::Unclaimed) {
                n.after = After::Owner;
            }
            if s.starter_killed {
                (n, vec![])
            } else {
                let mut n = n.to(Preempting, Killing, now);
                n.starter_killed = true;
                (n, vec![Action::KillStarterTree])
            }
        }
        (Claimed, Idle, Event::LeaseExpired) | (Matched, _, Event::LeaseExpired) => {
            let mut n = s;
            n.after = match s.after {
                After::NewClaim | After::Drained => s.after,
                _ => After::Owner,
            };
            finish(n, now)
        }
        (_, _, Event::LeaseExpired) => (s, vec![]),
        // ---- time passes: the policy
        (_, _, Event::Tick) => tick(s, p, now, t),
    };
    Ok(out)
}

/// Entering Preempting with a job: Vacating (soft kill) when `graceful`
/// and WANT_VACATE, else Killing (hard kill); a hold first when asked.
fn preempt(
    s: Status,
    graceful: bool,
    hold: Option<&HoldRequest>,
    now: i64,
) -> (Status, Vec<Action>) {
    let mut actions = Vec::new();
    let mut n = s;
    if let Some(h) = hold {
        n.holding = true;
        actions.push(Action::Hold {
            reason: h.reason.clone(),
            subcode: h.subcode,
        });
    }
    if graceful {
        actions.push(Action::SoftKillStarter);
        (n.to(State::Preempting, Activity::Vacating, now), actions)
    } else {
        actions.push(Action::HardKillStarter);
        (n.to(State::Preempting, Activity::Killing, now), actions)
    }
}

/// The job is gone: the slot goes where `after` says.
fn finish(s: Status, now: i64) -> (Status, Vec<Action>) {
    let after = s.after;
    let n = s.job_gone();
    match after {
        After::ClaimedIdle => (n.to(State::Claimed, Activity::Idle, now), vec![]),
        After::Unclaimed => (
            n.to(State::Unclaimed, Activity::Idle, now),
            vec![Action::DropClaim],
        ),
        After::Owner => (
            n.to(State::Owner, Activity::Idle, now),
            vec![Action::DropClaim],
        ),
        After::NewClaim => (
            n.to(State::Matched, Activity::Idle, now),
            vec![Action::DropClaim, Action::PromoteClaim],
        ),
        After::Drained => (
            n.to(State::Drained, Activity::Retiring, now),
            vec![Action::DropClaim],
        ),
    }
}

/// The policy's transitions at a poll.
fn tick(s: Status, p: &Policy, now: i64, t: &Timeouts) -> (Status, Vec<Action>) {
    use Activity::*;
    use State::*;
    let retirement_over = || s.job_run_secs(now) >= p.max_job_retirement_time;
    match (s.state, s.activity) {
        // 1 / A
        (Owner, _) if !p.is_owner => (s.to(Unclaimed, Idle, now), vec![]),
        // 2 / B
        (Unclaimed, _) if p.is_owner => (s.to(Owner, Idle, now), vec![]),
        // 8 / F: the match times out, or the owner is back
        (Matched, _) if now - s.entered_state >= t.match_timeout || p.is_owner => {
            let mut n = s;
            n.after = if p.is_owner {
                After::Owner
            } else {
                After::Unclaimed
            };
            finish(n, now)
        }
        // 10: START locally false on an idle claim
        (Claimed, Idle) if p.start_locally_false => {
            let mut n = s;
            n.after = After::Owner;
            finish(n, now)
        }
        (Claimed, Idle)
            if t.max_claim_idle >= 0 && now - s.entered_activity >= t.max_claim_idle =>
        {
            let mut n = s;
            n.after = After::Unclaimed;
            finish(n, now)
        }
        // 14: suspend
        (Claimed, Busy) if p.want_suspend && p.suspend => {
            (s.to(Claimed, Suspended, now), vec![Action::Suspend])
        }
        // 13: PREEMPT without suspension: retire
        (Claimed, Busy) if !p.want_suspend && p.preempt => {
            let mut n = s.to(Claimed, Retiring, now);
            n.retire = Some(Retire::Policy);
            n.after = After::Owner;
            (n, vec![])
        }
        // 16: PREEMPT while suspended: retire (the job runs again)
        (Claimed, Suspended) if p.preempt => {
            let mut n = s.to(Claimed, Retiring, now);
            if n.retire != Some(Retire::Drain) {
                n.after = After::Owner;
            }
            n.retire = Some(Retire::Policy);
            (n, vec![Action::Continue])
        }
        // 15 (16 when a retirement waits)
        (Claimed, Suspended) if p.continue_ => {
            if s.retire.is_some() {
                (s.to(Claimed, Retiring, now), vec![Action::Continue])
            } else {
                (s.to(Claimed, Busy, now), vec![Action::Continue])
            }
        }
        // a retirement for a claim or a drain becomes one for the policy
        (Claimed, Retiring) if p.preempt && !p.want_suspend && s.retire != Some(Retire::Policy) => {
            let mut n = s;
            n.retire = Some(Retire::Policy);
            if n.after != After::Drained {
                n.after = After::Owner;
            }
            (n, vec![])
        }
        // 18: the retirement time is over: evict (with a hold if WANT_HOLD)
        (Claimed, Retiring) if retirement_over() => {
            let hold = if s.retire == Some(Retire::Policy) {
                p.want_hold.as_ref()
            } else {
                None
            };
            preempt(s, p.want_vacate, hold, now)
        }
        // 20: suspend while retiring
        (Claimed, Retiring) if p.want_suspend && p.suspend => {
            (s.to(Claimed, Suspended, now), vec![Action::Suspend])
        }
        // 21: KILL, or the vacate time is over
        (Preempting, Vacating) if p.kill || now - s.entered_activity >= p.max_vacate_time => (
            s.to(Preempting, Killing, now),
            vec![Action::HardKillStarter],
        ),
        // KILLING_TIMEOUT: the startd kills the starter itself
        (Preempting, Killing)
            if !s.starter_killed && now - s.entered_activity >= t.killing_timeout =>
        {
            let mut n = s;
            n.starter_killed = true;
            (n, vec![Action::KillStarterTree])
        }
        // 33
        (Drained, Retiring) if p.all_drained => (s.to(Drained, Idle, now), vec![]),
        _ => (s, vec![]),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use Activity::*;
    use State::*;

    const T: Timeouts = Timeouts {
        match_timeout: 120,
        max_claim_idle: 600,
        killing_timeout: 30,
    };

    fn dflt() -> Policy {
        Policy::default()
    }

    fn go(s: Status, p: &Policy, ev: Event, now: i64) -> (Status, Vec<Action>) {
        step(s, p, ev, now, &T).unwrap_or_else(|r| panic!("{ev:?} at {now}: {r:?}"))
    }

    /// Runs events at the given times from a fresh slot at t=0 with the
    /// default policy and checks the state and actions after each.
    fn run(steps: &[(i64, Event, State, Activity, &[Action])]) -> Status {
        let mut s = Status::new(0);
        for (i, (now, ev, st, act, actions)) in steps.iter().enumerate() {
            let (n, a) = go(s, &dflt(), *ev, *now);
            assert_eq!((n.state, n.activity), (*st, *act), "step {i} ({ev:?})");
            assert_eq!(a.as_slice(), *actions, "step {i} ({ev:?})");
            s = n;
        }
        s
    }

    /// A slot Claimed/Busy since `t`.
    fn busy(t: i64) -> Status {
        let p = dflt();
        let (s, _) = go(Status::new(0), &p, Event::Claim, t);
        let (s, _) = go(s, &p, Event::Activate, t);
        s
    }

    /// Ticks with `p` until nothing changes (as the machine does).
    fn settle(mut s: Status, p: &Policy, now: i64) -> (Status, Vec<Action>) {
        let mut all = Vec::new();
        for _ in 0..10 {
            let (n, a) = go(s, p, Event::Tick, now);
            all.extend(a);
            if n == s {
                break;
            }
            s = n;
        }
        (s, all)
    }

    #[test]
    fn a_job_runs_and_the_claim_is_reused_then_released() {
        let s = run(&[
            (10, Event::Match, Matched, Idle, &[]),
            (11, Event::Claim, Claimed, Idle, &[]),
            (12, Event::Activate, Claimed, Busy, &[Action::SpawnStarter]),
            (50, Event::StarterExited, Claimed, Idle, &[]),
            (51, Event::Activate, Claimed, Busy, &[Action::SpawnStarter]),
            (60, Event::StarterExited, Claimed, Idle, &[]),
            (61, Event::Release, Unclaimed, Idle, &[Action::DropClaim]),
        ]);
        assert_eq!(s.entered_state, 61);
    }

    #[test]
    fn entered_times_follow_state_and_activity() {
        let s = run(&[
            (10, Event::Match, Matched, Idle, &[]),
            (20, Event::Claim, Claimed, Idle, &[]),
            (30, Event::Activate, Claimed, Busy, &[Action::SpawnStarter]),
        ]);
        assert_eq!((s.entered_state, s.entered_activity), (20, 30));
        assert_eq!(s.job_started, Some(30));
    }

    #[test]
    fn f_a_match_expires_after_match_timeout() {
        let (s, _) = go(Status::new(0), &dflt(), Event::Match, 10);
        let (n, a) = go(s, &dflt(), Event::Tick, 129);
        assert_eq!((n.state, a.len()), (Matched, 0));
        let (n, a) = go(n, &dflt(), Event::Tick, 130);
        assert_eq!((n.state, n.activity), (Unclaimed, Idle));
        assert_eq!(a, vec![Action::DropClaim]);
    }

    #[test]
    fn f_a_match_goes_to_owner_when_the_owner_is_back() {
        let (s, _) = go(Status::new(0), &dflt(), Event::Match, 10);
        let owner = Policy {
            is_owner: true,
            ..dflt()
        };
        let (n, a) = go(s, &owner, Event::Tick, 11);
        assert_eq!((n.state, a), (Owner, vec![Action::DropClaim]));
    }

    #[test]
    fn an_idle_claim_is_released_after_max_claim_idle_but_a_busy_one_is_not() {
        let s = busy(100);
        let (s, a) = go(s, &dflt(), Event::Tick, 5000);
        assert_eq!((s.state, s.activity, a.len()), (Claimed, Busy, 0));
        let (s, _) = go(s, &dflt(), Event::StarterExited, 5000);
        let (s2, a) = go(s, &dflt(), Event::Tick, 5599);
        assert_eq!((s2.state, a.len()), (Claimed, 0));
        let (s3, a) = go(s2, &dflt(), Event::Tick, 5600);
        assert_eq!((s3.state, a), (Unclaimed, vec![Action::DropClaim]));
        let never = Timeouts {
            max_claim_idle: -1,
            ..T
        };
        let (s4, _) = step(s2, &dflt(), Event::Tick, 1_000_000, &never).unwrap();
        assert_eq!(s4.state, Claimed);
    }

    #[test]
    fn deactivate_goes_through_preempting_and_keeps_the_claim() {
        run(&[
            (0, Event::Claim, Claimed, Idle, &[]),
            (1, Event::Activate, Claimed, Busy, &[Action::SpawnStarter]),
            (
                2,
                Event::Deactivate { graceful: true },
                Preempting,
                Vacating,
                &[Action::SoftKillStarter],
            ),
            (
                3,
                Event::Deactivate { graceful: false },
                Preempting,
                Killing,
                &[Action::HardKillStarter],
            ),
            (4, Event::StarterExited, Claimed, Idle, &[]),
        ]);
    }

    #[test]
    fn release_while_busy_kills_then_unclaims() {
        run(&[
            (0, Event::Claim, Claimed, Idle, &[]),
            (1, Event::Activate, Claimed, Busy, &[Action::SpawnStarter]),
            (
                2,
                Event::Release,
                Preempting,
                Killing,
                &[Action::HardKillStarter],
            ),
            (3, Event::Release, Preempting, Killing, &[]),
            (
                4,
                Event::StarterExited,
                Unclaimed,
                Idle,
                &[Action::DropClaim],
            ),
        ]);
    }

    #[test]
    fn an_expired_lease_kills_the_job_and_drops_the_claim() {
        // busy: hard kill, then Owner once the starter is gone (IS_OWNER
        // false brings it back to Unclaimed at the next evaluation)
        let s = run(&[
            (0, Event::Claim, Claimed, Idle, &[]),
            (1, Event::Activate, Claimed, Busy, &[Action::SpawnStarter]),
            (
                9,
                Event::LeaseExpired,
                Preempting,
                Killing,
                &[Action::KillStarterTree],
            ),
            (9, Event::LeaseExpired, Preempting, Killing, &[]),
            (10, Event::StarterExited, Owner, Idle, &[Action::DropClaim]),
        ]);
        let (s, _) = settle(s, &dflt(), 11);
        assert_eq!((s.state, s.activity), (Unclaimed, Idle));
        // an idle claim goes at once
        run(&[
            (0, Event::Claim, Claimed, Idle, &[]),
            (5, Event::LeaseExpired, Owner, Idle, &[Action::DropClaim]),
        ]);
        // a slot being vacated softly is killed outright
        let (v, _) = go(busy(0), &dflt(), Event::Deactivate { graceful: true }, 1);
        assert_eq!((v.state, v.activity), (Preempting, Vacating));
        let (k, a) = go(v, &dflt(), Event::LeaseExpired, 2);
        assert_eq!((k.state, k.activity), (Preempting, Killing));
        assert_eq!(a, vec![Action::KillStarterTree]);
        // and KILLING_TIMEOUT does not kill it a second time
        let (_, a) = go(k, &dflt(), Event::Tick, 40);
        assert!(a.is_empty(), "{a:?}");
        let (o, a) = go(k, &dflt(), Event::StarterExited, 3);
        assert_eq!((o.state, a), (Owner, vec![Action::DropClaim]));
        // nothing to expire on an unclaimed slot
        let (u, a) = go(Status::new(0), &dflt(), Event::LeaseExpired, 1);
        assert_eq!((u.state, a), (Unclaimed, vec![]));
    }

    #[test]
    fn stale_events_are_refused_with_a_reason() {
        let s = Status::new(0);
        let p = dflt();
        let r = step(s, &p, Event::Activate, 1, &T).unwrap_err();
        assert!(r.0.contains("Unclaimed/Idle"), "{r:?}");
        let (m, _) = go(s, &p, Event::Match, 1);
        let r = step(m, &p, Event::Match, 2, &T).unwrap_err();
        assert!(r.0.contains("Matched"), "{r:?}");
        assert!(step(s, &p, Event::Release, 1, &T).is_err());
        assert!(step(s, &p, Event::Deactivate { graceful: true }, 1, &T).is_err());
        assert!(step(s, &p, Event::PreemptClaim, 1, &T).is_err());
        let (c, _) = go(m, &p, Event::Claim, 2);
        assert!(step(c, &p, Event::Claim, 3, &T).is_err());
    }

    #[test]
    fn a_b_owner_when_is_owner_holds_and_back() {
        let owner = Policy {
            is_owner: true,
            ..dflt()
        };
        let (o, _) = go(Status::new(0), &owner, Event::Tick, 5);
        assert_eq!((o.state, o.entered_state), (Owner, 5));
        assert!(step(o, &owner, Event::Match, 6, &T).is_err());
        assert!(step(o, &owner, Event::Claim, 6, &T).is_err());
        let (u, _) = go(o, &dflt(), Event::Tick, 7);
        assert_eq!(u.state, Unclaimed);
    }

    #[test]
    fn defaults_never_suspend_or_preempt() {
        let s = busy(0);
        let (n, a) = settle(s, &dflt(), 1_000_000);
        assert_eq!((n.state, n.activity, a.len()), (Claimed, Busy, 0));
    }

    #[test]
    fn t14_t15_suspend_then_continue_keeps_the_job() {
        let s = busy(0);
        let p = Policy {
            want_suspend: true,
            suspend: true,
            continue_: false,
            ..dflt()
        };
        let (s, a) = settle(s, &p, 100);
        assert_eq!((s.state, s.activity), (Claimed, Suspended));
        assert_eq!(a, vec![Action::Suspend]);
        assert_eq!(s.entered_activity, 100);
        // the suspension does not count as run time
        assert_eq!(s.job_run_secs(160), 100);
        let p2 = Policy {
            continue_: true,
            ..dflt()
        };
        let (s, a) = settle(s, &p2, 160);
        assert_eq!(
            (s.state, s.activity, a),
            (Claimed, Busy, vec![Action::Continue])
        );
        assert_eq!((s.suspended_secs, s.suspensions), (60, 1));
        assert_eq!(s.job_started, Some(0));
    }

    #[test]
    fn want_suspend_false_means_suspend_is_not_consulted() {
        let p = Policy {
            want_suspend: false,
            suspend: true,
            ..dflt()
        };
        let (s, a) = settle(busy(0), &p, 10);
        assert_eq!((s.activity, a.len()), (Busy, 0));
    }

    #[test]
    fn t13_t18_preempt_retires_then_vacates_then_owner() {
        let p = Policy {
            preempt: true,
            max_job_retirement_time: 100,
            ..dflt()
        };
        let (s, a) = settle(busy(0), &p, 30);
        assert_eq!((s.state, s.activity, a.len()), (Claimed, Retiring, 0));
        // PREEMPT false again: no unretire for a policy retirement
        let calm = Policy {
            max_job_retirement_time: 100,
            ..dflt()
        };
        let (s, _) = settle(s, &calm, 60);
        assert_eq!(s.activity, Retiring);
        let (s, a) = settle(s, &p, 99);
        assert_eq!(s.activity, Retiring, "{a:?}");
        let (s, a) = settle(s, &p, 100);
        assert_eq!((s.state, s.activity), (Preempting, Vacating));
        assert_eq!(a, vec![Action::SoftKillStarter]);
        let (s, a) = go(s, &p, Event::StarterExited, 105);
        assert_eq!(
            (s.state, s.activity, a),
            (Owner, Idle, vec![Action::DropClaim])
        );
        // J then A: back to Unclaimed once IS_OWNER is false
        let (s, _) = settle(s, &p, 106);
        assert_eq!(s.state, Unclaimed);
    }

    #[test]
    fn t18_a_retiring_job_that_finishes_ends_the_claim() {
        let p = Policy {
            preempt: true,
            max_job_retirement_time: 1000,
            ..dflt()
        };
        let (s, _) = settle(busy(0), &p, 30);
        let (s, a) = go(s, &p, Event::StarterExited, 40);
        assert_eq!((s.state, a), (Owner, vec![Action::DropClaim]));
    }

    #[test]
    fn retirement_excludes_suspended_time() {
        let s = busy(0);
        let susp = Policy {
            want_suspend: true,
            suspend: true,
            continue_: false,
            max_job_retirement_time: 100,
            ..dflt()
        };
        let (s, _) = settle(s, &susp, 50);
        assert_eq!(s.activity, Suspended);
        // PREEMPT while suspended: retire, the job runs again (16)
        let preempt = Policy {
            preempt: true,
            max_job_retirement_time: 100,
            ..dflt()
        };
        let (s, a) = settle(s, &preempt, 150);
        assert_eq!((s.state, s.activity), (Claimed, Retiring));
        assert_eq!(a, vec![Action::Continue]);
        // 50 s of run before, 100 s suspended: 50 s of run so far
        let (s, _) = settle(s, &preempt, 199);
        assert_eq!(s.activity, Retiring);
        let (s, a) = settle(s, &preempt, 200);
        assert_eq!(
            (s.state, s.activity, a),
            (Preempting, Vacating, vec![Action::SoftKillStarter])
        );
    }

    #[test]
    fn a_job_s_smaller_retirement_expires_at_once_with_zero() {
        let p = Policy {
            preempt: true,
            max_job_retirement_time: 0,
            want_vacate: false,
            ..dflt()
        };
        let (s, a) = settle(busy(0), &p, 5);
        assert_eq!((s.state, s.activity), (Preempting, Killing));
        assert_eq!(a, vec![Action::HardKillStarter]);
    }

    #[test]
    fn t21_vacating_becomes_killing_after_max_vacate_time_or_kill() {
        let p = Policy {
            preempt: true,
            max_vacate_time: 20,
            ..dflt()
        };
        let (s, _) = settle(busy(0), &p, 10);
        assert_eq!((s.state, s.activity), (Preempting, Vacating));
        let (s2, a) = settle(s, &p, 29);
        assert_eq!((s2.activity, a.len()), (Vacating, 0));
        let (s2, a) = settle(s2, &p, 30);
        assert_eq!((s2.activity, a), (Killing, vec![Action::HardKillStarter]));
        let kill = Policy {
            kill: true,
            ..p.clone()
        };
        let (s3, a) = settle(s, &kill, 11);
        assert_eq!((s3.activity, a), (Killing, vec![Action::HardKillStarter]));
        // KILLING_TIMEOUT: the startd kills the starter's tree, once
        let (s4, a) = settle(s3, &kill, 40);
        assert!(a.is_empty());
        let (s4, a) = settle(s4, &kill, 41);
        assert_eq!(a, vec![Action::KillStarterTree]);
        let (_, a) = settle(s4, &kill, 100);
        assert!(a.is_empty());
    }

    #[test]
    fn want_hold_holds_the_job_at_eviction() {
        let p = Policy {
            preempt: true,
            max_job_retirement_time: -1,
            want_hold: Some(HoldRequest {
                reason: "memory usage exceeded request_memory".into(),
                subcode: 102,
            }),
            ..dflt()
        };
        let (s, a) = settle(busy(0), &p, 1);
        assert_eq!((s.state, s.activity), (Preempting, Vacating));
        assert_eq!(
            a,
            vec![
                Action::Hold {
                    reason: "memory usage exceeded request_memory".into(),
                    subcode: 102
                },
                Action::SoftKillStarter
            ]
        );
        assert!(s.holding);
    }

    #[test]
    fn t10_start_locally_false_on_an_idle_claim() {
        let (s, _) = go(Status::new(0), &dflt(), Event::Claim, 0);
        let p = Policy {
            start_locally_false: true,
            ..dflt()
        };
        let (s, a) = go(s, &p, Event::Tick, 5);
        assert_eq!((s.state, a), (Owner, vec![Action::DropClaim]));
        // a busy claim does not care about START
        let (s, a) = settle(busy(0), &p, 5);
        assert_eq!((s.activity, a.len()), (Busy, 0));
    }

    #[test]
    fn preempting_claim_retires_then_the_slot_is_matched_to_it() {
        let p = Policy {
            max_job_retirement_time: 50,
            ..dflt()
        };
        let s = busy(0);
        let (s, a) = go(s, &p, Event::PreemptClaim, 10);
        assert_eq!((s.state, s.activity, a.len()), (Claimed, Retiring, 0));
        // a second preempting match is refused
        assert!(step(s, &p, Event::PreemptClaim, 11, &T).is_err());
        let (s, _) = settle(s, &p, 49);
        assert_eq!(s.activity, Retiring);
        let (s, a) = settle(s, &p, 50);
        assert_eq!(
            (s.state, s.activity, a),
            (Preempting, Vacating, vec![Action::SoftKillStarter])
        );
        assert!(step(s, &p, Event::PreemptClaim, 51, &T).is_err());
        let (s, a) = go(s, &p, Event::StarterExited, 52);
        assert_eq!((s.state, s.activity), (Matched, Idle));
        assert_eq!(a, vec![Action::DropClaim, Action::PromoteClaim]);
        assert_eq!(s.entered_state, 52);
        // then claimed by the new schedd
        let (s, _) = go(s, &p, Event::Claim, 53);
        assert_eq!(s.state, Claimed);
    }

    #[test]
    fn preempting_an_idle_claim_matches_at_once() {
        let (s, _) = go(Status::new(0), &dflt(), Event::Claim, 0);
        let (s, a) = go(s, &dflt(), Event::PreemptClaim, 1);
        assert_eq!(s.state, Matched);
        assert_eq!(a, vec![Action::DropClaim, Action::PromoteClaim]);
    }

    #[test]
    fn preempting_a_suspended_job_waits_for_continue() {
        let susp = Policy {
            want_suspend: true,
            suspend: true,
            continue_: false,
            max_job_retirement_time: 1000,
            ..dflt()
        };
        let (s, _) = settle(busy(0), &susp, 10);
        let (s, _) = go(s, &susp, Event::PreemptClaim, 11);
        assert_eq!(s.activity, Suspended);
        let calm = Policy {
            max_job_retirement_time: 1000,
            ..dflt()
        };
        let (s, a) = settle(s, &calm, 20);
        assert_eq!((s.activity, a), (Retiring, vec![Action::Continue]));
    }

    #[test]
    fn vacate_by_the_owner_evicts_and_ends_the_claim() {
        let (s, a) = go(busy(0), &dflt(), Event::Vacate { graceful: true }, 5);
        assert_eq!(
            (s.state, s.activity, a),
            (Preempting, Vacating, vec![Action::SoftKillStarter])
        );
        let (s, a) = go(s, &dflt(), Event::StarterExited, 6);
        assert_eq!((s.state, a), (Owner, vec![Action::DropClaim]));
        let (s, a) = go(busy(0), &dflt(), Event::Vacate { graceful: false }, 5);
        assert_eq!((s.activity, a), (Killing, vec![Action::HardKillStarter]));
    }

    #[test]
    fn drain_retires_jobs_then_drained_idle_and_cancel() {
        // an unclaimed slot: 37 then 33
        let (s, _) = go(Status::new(0), &dflt(), Event::Drain, 1);
        assert_eq!((s.state, s.activity), (Drained, Retiring));
        let waiting = Policy {
            all_drained: false,
            ..dflt()
        };
        let (s2, _) = settle(s, &waiting, 2);
        assert_eq!(s2.activity, Retiring);
        assert!(step(s2, &dflt(), Event::Match, 2, &T).is_err());
        let (s2, _) = settle(s2, &dflt(), 3);
        assert_eq!((s2.state, s2.activity), (Drained, Idle));
        // 34/35 then 1
        let (s3, _) = go(s2, &dflt(), Event::CancelDrain, 4);
        assert_eq!(s3.state, Owner);
        let (s3, _) = settle(s3, &dflt(), 5);
        assert_eq!(s3.state, Unclaimed);
        // a busy slot: the job retires (MaxJobRetirementTime), then the slot is drained
        let p = Policy {
            max_job_retirement_time: 100,
            ..dflt()
        };
        let (b, _) = go(busy(0), &p, Event::Drain, 10);
        assert_eq!((b.state, b.activity), (Claimed, Retiring));
        let (b2, a) = go(b, &p, Event::StarterExited, 20);
        assert_eq!(
            (b2.state, b2.activity, a),
            (Drained, Retiring, vec![Action::DropClaim])
        );
        // cancelled while retiring: the job goes on (19)
        let (b3, _) = go(b, &p, Event::CancelDrain, 20);
        assert_eq!((b3.state, b3.activity, b3.retire), (Claimed, Busy, None));
        // retirement over: evicted, then drained
        let (b4, a) = settle(b, &p, 100);
        assert_eq!((b4.state, a), (Preempting, vec![Action::SoftKillStarter]));
        let (b4, _) = go(b4, &p, Event::StarterExited, 101);
        assert_eq!(b4.state, Drained);
    }

    #[test]
    fn schedd_release_during_retirement_kills_and_keeps_the_destination() {
        let p = Policy {
            max_job_retirement_time: 100,
            ..dflt()
        };
        let (s, _) = go(busy(0), &p, Event::PreemptClaim, 1);
        let (s, a) = go(s, &p, Event::Release, 2);
        assert_eq!(
            (s.state, s.activity, a),
            (Preempting, Killing, vec![Action::HardKillStarter])
        );
        let (s, a) = go(s, &p, Event::StarterExited, 3);
        assert_eq!(
            (s.state, a),
            (Matched, vec![Action::DropClaim, Action::PromoteClaim])
        );
    }
}
