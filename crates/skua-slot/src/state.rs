//! The per-slot state machine: `(status, event, now) -> (status, actions)`.
//!
//! This release covers matching, claiming, activation, the starter's exit,
//! deactivation and release, and the timeouts of a match and of an idle
//! claim. The owner policy (SUSPEND, PREEMPT, ...) will add events and
//! actions.

/// HTCondor's slot states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Owner,
    Unclaimed,
    Matched,
    Claimed,
    Preempting,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Owner => "Owner",
            State::Unclaimed => "Unclaimed",
            State::Matched => "Matched",
            State::Claimed => "Claimed",
            State::Preempting => "Preempting",
        }
    }
}

/// HTCondor's slot activities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Idle,
    Busy,
    Vacating,
    Killing,
}

impl Activity {
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Idle => "Idle",
            Activity::Busy => "Busy",
            Activity::Vacating => "Vacating",
            Activity::Killing => "Killing",
        }
    }
}

/// A slot's place in the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub state: State,
    pub activity: Activity,
    /// When the slot entered `state` (`EnteredCurrentState`).
    pub entered_state: i64,
    /// When the slot entered `activity` (`EnteredCurrentActivity`).
    pub entered_activity: i64,
    /// The claim goes away once the starter has exited (a release while
    /// a job runs).
    pub release_after_exit: bool,
}

impl Status {
    /// A fresh slot: Unclaimed/Idle since `now`.
    pub fn new(now: i64) -> Status {
        Status {
            state: State::Unclaimed,
            activity: Activity::Idle,
            entered_state: now,
            entered_activity: now,
            release_after_exit: false,
        }
    }

    fn to(mut self, state: State, activity: Activity, now: i64) -> Status {
        if state != self.state {
            self.entered_state = now;
            self.entered_activity = now;
        } else if activity != self.activity {
            self.entered_activity = now;
        }
        self.state = state;
        self.activity = activity;
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
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            match_timeout: 120,
            max_claim_idle: 600,
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
    /// Stop the job, keep the claim.
    Deactivate { graceful: bool },
    /// Give up the claim.
    Release,
    /// Time passes; `is_owner` is IS_OWNER evaluated with no job.
    Tick { is_owner: bool },
}

/// What the daemon must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Start a starter for the claim's job.
    SpawnStarter,
    /// Ask the starter to vacate (SIGTERM).
    SoftKillStarter,
    /// Kill the starter and its job at once (SIGQUIT).
    HardKillStarter,
    /// Forget the claim (and remove a dynamic slot).
    DropClaim,
}

/// Why an event does not apply in the slot's current state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub String);

/// The transition function.
pub fn step(
    s: Status,
    event: Event,
    now: i64,
    t: &Timeouts,
) -> Result<(Status, Vec<Action>), Refused> {
    use Activity::*;
    use State::*;
    let here = format!("the slot is {}/{}", s.state.as_str(), s.activity.as_str());
    let out = match (s.state, s.activity, event) {
        (Unclaimed, _, Event::Match) => (s.to(Matched, Idle, now), vec![]),
        (_, _, Event::Match) => return Err(Refused(format!("{here}, not Unclaimed"))),
        (Matched, _, Event::Claim) => (s.to(Claimed, Idle, now), vec![]),
        (Unclaimed, _, Event::Claim) => (s.to(Claimed, Idle, now), vec![]),
        (_, _, Event::Claim) => return Err(Refused(format!("{here}, not Matched"))),
        (Claimed, Idle, Event::Activate) => (s.to(Claimed, Busy, now), vec![Action::SpawnStarter]),
        (_, _, Event::Activate) => return Err(Refused(format!("{here}, not Claimed/Idle"))),
        (Claimed, Busy, Event::StarterExited) => (s.to(Claimed, Idle, now), vec![]),
        (Preempting, _, Event::StarterExited) => {
            if s.release_after_exit {
                let mut n = s.to(Unclaimed, Idle, now);
                n.release_after_exit = false;
                (n, vec![Action::DropClaim])
            } else {
                (s.to(Claimed, Idle, now), vec![])
            }
        }
        (_, _, Event::StarterExited) => (s, vec![]),
        (Claimed, Busy, Event::Deactivate { graceful: true }) => (
            s.to(Preempting, Vacating, now),
            vec![Action::SoftKillStarter],
        ),
        (Claimed, Busy, Event::Deactivate { graceful: false })
        | (Preempting, Vacating, Event::Deactivate { graceful: false }) => (
            s.to(Preempting, Killing, now),
            vec![Action::HardKillStarter],
        ),
        (Preempting, _, Event::Deactivate { .. }) => (s, vec![]),
        (Claimed, Idle, Event::Deactivate { .. }) => (s, vec![]),
        (_, _, Event::Deactivate { .. }) => {
            return Err(Refused(format!("{here}: no job to deactivate")))
        }
        (Claimed, Busy, Event::Release) | (Preempting, _, Event::Release) => {
            let mut n = s.to(Preempting, Killing, now);
            n.release_after_exit = true;
            let act = if s.activity == Killing {
                vec![]
            } else {
                vec![Action::HardKillStarter]
            };
            (n, act)
        }
        (Claimed, Idle, Event::Release) | (Matched, _, Event::Release) => {
            (s.to(Unclaimed, Idle, now), vec![Action::DropClaim])
        }
        (_, _, Event::Release) => return Err(Refused(format!("{here}: no claim to release"))),
        (Matched, _, Event::Tick { .. }) if now - s.entered_state >= t.match_timeout => {
            (s.to(Unclaimed, Idle, now), vec![Action::DropClaim])
        }
        (Claimed, Idle, Event::Tick { .. })
            if t.max_claim_idle >= 0 && now - s.entered_activity >= t.max_claim_idle =>
        {
            (s.to(Unclaimed, Idle, now), vec![Action::DropClaim])
        }
        (Unclaimed, _, Event::Tick { is_owner: true }) => (s.to(Owner, Idle, now), vec![]),
        (Owner, _, Event::Tick { is_owner: false }) => (s.to(Unclaimed, Idle, now), vec![]),
        (_, _, Event::Tick { .. }) => (s, vec![]),
    };
    Ok(out)
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
    };

    /// Runs events at the given times from a fresh slot at t=0 and checks
    /// the state and actions after each.
    fn run(steps: &[(i64, Event, State, Activity, &[Action])]) -> Status {
        let mut s = Status::new(0);
        for (i, (now, ev, st, act, actions)) in steps.iter().enumerate() {
            let (n, a) = step(s, *ev, *now, &T).unwrap_or_else(|r| panic!("step {i}: {r:?}"));
            assert_eq!((n.state, n.activity), (*st, *act), "step {i} ({ev:?})");
            assert_eq!(a.as_slice(), *actions, "step {i} ({ev:?})");
            s = n;
        }
        s
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
    }

    #[test]
    fn a_match_expires_after_match_timeout() {
        let mut s = run(&[(10, Event::Match, Matched, Idle, &[])]);
        let tick = Event::Tick { is_owner: false };
        let (n, a) = step(s, tick, 129, &T).unwrap();
        assert_eq!((n.state, a.len()), (Matched, 0));
        s = n;
        let (n, a) = step(s, tick, 130, &T).unwrap();
        assert_eq!((n.state, n.activity), (Unclaimed, Idle));
        assert_eq!(a, vec![Action::DropClaim]);
    }

    #[test]
    fn an_idle_claim_is_released_after_max_claim_idle_but_a_busy_one_is_not() {
        let s = run(&[
            (0, Event::Match, Matched, Idle, &[]),
            (0, Event::Claim, Claimed, Idle, &[]),
            (100, Event::Activate, Claimed, Busy, &[Action::SpawnStarter]),
        ]);
        let tick = Event::Tick { is_owner: false };
        let (s, a) = step(s, tick, 5000, &T).unwrap();
        assert_eq!((s.state, s.activity, a.len()), (Claimed, Busy, 0));
        let (s, _) = step(s, Event::StarterExited, 5000, &T).unwrap();
        let (s2, a) = step(s, tick, 5599, &T).unwrap();
        assert_eq!((s2.state, a.len()), (Claimed, 0));
        let (s3, a) = step(s2, tick, 5600, &T).unwrap();
        assert_eq!((s3.state, a), (Unclaimed, vec![Action::DropClaim]));
        // negative: never
        let never = Timeouts {
            max_claim_idle: -1,
            ..T
        };
        let (s4, _) = step(s2, tick, 1_000_000, &never).unwrap();
        assert_eq!(s4.state, Claimed);
    }

    #[test]
    fn deactivate_goes_through_preempting_and_keeps_the_claim() {
        run(&[
            (0, Event::Match, Matched, Idle, &[]),
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
            (0, Event::Match, Matched, Idle, &[]),
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
    fn stale_events_are_refused_with_a_reason() {
        let s = Status::new(0);
        let r = step(s, Event::Activate, 1, &T).unwrap_err();
        assert!(r.0.contains("Unclaimed/Idle"), "{r:?}");
        let (m, _) = step(s, Event::Match, 1, &T).unwrap();
        let r = step(m, Event::Match, 2, &T).unwrap_err();
        assert!(r.0.contains("Matched"), "{r:?}");
        assert!(step(s, Event::Release, 1, &T).is_err());
        assert!(step(s, Event::Deactivate { graceful: true }, 1, &T).is_err());
        let (c, _) = step(m, Event::Claim, 2, &T).unwrap();
        assert!(step(c, Event::Claim, 3, &T).is_err());
    }

    #[test]
    fn owner_when_is_owner_holds_and_back() {
        let s = Status::new(0);
        let (o, _) = step(s, Event::Tick { is_owner: true }, 5, &T).unwrap();
        assert_eq!((o.state, o.entered_state), (Owner, 5));
        assert!(step(o, Event::Match, 6, &T).is_err());
        let (u, _) = step(o, Event::Tick { is_owner: false }, 7, &T).unwrap();
        assert_eq!(u.state, Unclaimed);
    }
}
