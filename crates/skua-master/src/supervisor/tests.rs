//! Supervisor tests with simulated time: `t(s)` is `s` seconds after the
//! origin, every event carries its own time, nothing sleeps.

use super::*;

fn t(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

const POOL: [&str; 5] = ["MASTER", "COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD"];

fn sup_with(list: &[&str], config: SupervisorConfig) -> Supervisor {
    Supervisor::new(list.iter().copied(), config).unwrap()
}

fn sup(list: &[&str]) -> Supervisor {
    sup_with(list, SupervisorConfig::default())
}

fn spawns(actions: &[Action]) -> Vec<&str> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Spawn { name } => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

fn signals(actions: &[Action]) -> Vec<(&str, u32, Signal)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Signal { name, pid, signal } => Some((name.as_str(), *pid, *signal)),
            _ => None,
        })
        .collect()
}

fn logs(actions: &[Action], level: LogLevel) -> Vec<&str> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Log { level: l, message } if *l == level => Some(message.as_str()),
            _ => None,
        })
        .collect()
}

fn gave_up(actions: &[Action]) -> Vec<(&str, &str)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::GiveUp { name, message } => Some((name.as_str(), message.as_str())),
            _ => None,
        })
        .collect()
}

fn exits(actions: &[Action]) -> usize {
    actions.iter().filter(|a| **a == Action::Exit).count()
}

fn started(s: &mut Supervisor, name: &str, pid: u32, now: Duration) -> Vec<Action> {
    s.handle(Event::ChildStarted {
        name: name.into(),
        pid,
        now,
    })
}

fn exited(s: &mut Supervisor, name: &str, status: ExitStatus, now: Duration) -> Vec<Action> {
    s.handle(Event::ChildExited {
        name: name.into(),
        status,
        now,
    })
}

fn tick(s: &mut Supervisor, now: Duration) -> Vec<Action> {
    s.handle(Event::Tick { now })
}

fn cmd(s: &mut Supervisor, command: Command, daemon: Option<&str>, now: Duration) -> Vec<Action> {
    s.handle(Event::Command {
        command,
        daemon: daemon.map(String::from),
        now,
    })
}

const SEGV: ExitStatus = ExitStatus::Signal(11);

/// Starts every daemon at t=0 with pids 100, 101, ... in list order.
fn boot(s: &mut Supervisor) -> Vec<(String, u32)> {
    let out = s.handle(Event::Start);
    let names: Vec<String> = spawns(&out).iter().map(|n| n.to_string()).collect();
    names
        .into_iter()
        .zip(100..)
        .map(|(name, pid)| {
            started(s, &name, pid, t(0));
            (name, pid)
        })
        .collect()
}

fn state_of(s: &Supervisor, name: &str) -> DaemonStatus {
    s.daemons()
        .into_iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no daemon {name}"))
}

/// Crashes `name` at `now`, returns the restart delay the supervisor chose
/// (found by ticking until the spawn), and reports the new start.
fn crash_and_restart(s: &mut Supervisor, name: &str, pid: u32, now: Duration) -> (u64, Duration) {
    exited(s, name, SEGV, now);
    let due = s.next_deadline().unwrap();
    assert!(
        spawns(&tick(s, due - Duration::from_millis(1))).is_empty(),
        "spawned before the backoff elapsed"
    );
    let out = tick(s, due);
    assert_eq!(spawns(&out), vec![name]);
    started(s, name, pid, due);
    ((due - now).as_secs(), due)
}

// ----- construction and configuration -----------------------------------

#[test]
fn new_skips_master_and_keeps_daemon_list_order() {
    let s = sup(&POOL);
    let names: Vec<String> = s.daemons().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD"]);
    assert!(s
        .daemons()
        .iter()
        .all(|d| d.state == DaemonState::NotStarted && d.pid.is_none()));
    assert_eq!(s.next_deadline(), None);
}

#[test]
fn new_rejects_bad_daemon_lists() {
    let err = |list: &[&str]| {
        Supervisor::new(list.iter().copied(), SupervisorConfig::default()).unwrap_err()
    };
    assert_eq!(err(&["COLLECTOR", ""]), SupervisorError::EmptyName);
    assert_eq!(
        err(&["COLL ECTOR"]),
        SupervisorError::InvalidName("COLL ECTOR".into())
    );
    assert_eq!(
        err(&["SCHEDD", "schedd"]),
        SupervisorError::Duplicate("schedd".into())
    );
    assert!(err(&["SCHEDD", "schedd"])
        .to_string()
        .contains("appears twice in DAEMON_LIST"));
}

#[test]
fn config_defaults_are_htcondors() {
    let c = SupervisorConfig::default();
    assert_eq!(c.backoff.constant, t(9));
    assert_eq!(c.backoff.factor, 2.0);
    assert_eq!(c.backoff.ceiling, t(3600));
    assert_eq!(c.backoff.recover_time, t(300));
    assert_eq!(c.shutdown_graceful_timeout, t(1800));
    assert_eq!(c.max_restarts, Some(DEFAULT_MAX_RESTARTS));
}

#[test]
fn config_rejects_bad_factor() {
    let mut c = SupervisorConfig::default();
    c.backoff.factor = f64::NAN;
    let e = Supervisor::new(["SCHEDD"], c).unwrap_err();
    assert!(e.to_string().contains("MASTER_BACKOFF_FACTOR"), "{e}");
    let mut c = SupervisorConfig::default();
    c.per_daemon.insert(
        "schedd".into(),
        BackoffPolicy {
            factor: -1.0,
            ..BackoffPolicy::default()
        },
    );
    let e = Supervisor::new(["SCHEDD"], c).unwrap_err();
    assert!(
        e.to_string().contains("MASTER_SCHEDD_BACKOFF_FACTOR"),
        "{e}"
    );
}

#[test]
fn backoff_delay_follows_htcondors_formula() {
    let p = BackoffPolicy::default();
    let delays: Vec<u64> = (0..16).map(|n| p.delay(n).as_secs()).collect();
    // 9 + 2^n, capped at 3600 from n = 12 (9 + 4096 > 3600).
    assert_eq!(
        delays,
        [10, 11, 13, 17, 25, 41, 73, 137, 265, 521, 1033, 2057, 3600, 3600, 3600, 3600]
    );
    assert_eq!(p.delay(u32::MAX), t(3600));
    // Factor 1: a constant delay of c + 1.
    let flat = BackoffPolicy {
        constant: t(1),
        factor: 1.0,
        ceiling: t(2),
        ..BackoffPolicy::default()
    };
    assert_eq!(flat.delay(0), t(2));
    assert_eq!(flat.delay(50), t(2));
    // ceil() of a fractional power.
    let frac = BackoffPolicy {
        constant: t(0),
        factor: 1.5,
        ..BackoffPolicy::default()
    };
    assert_eq!(frac.delay(1), t(2)); // ceil(1.5)
    assert_eq!(frac.delay(2), t(3)); // ceil(2.25)
}

#[test]
fn per_daemon_policy_overrides_generic_one() {
    let mut c = SupervisorConfig::default();
    c.per_daemon.insert(
        "Schedd".into(),
        BackoffPolicy {
            constant: t(1),
            ..BackoffPolicy::default()
        },
    );
    assert_eq!(c.policy_for("SCHEDD").constant, t(1));
    assert_eq!(c.policy_for("COLLECTOR").constant, t(9));
    let mut s = sup_with(&["COLLECTOR", "SCHEDD"], c);
    boot(&mut s);
    let (d, _) = crash_and_restart(&mut s, "SCHEDD", 200, t(50));
    assert_eq!(d, 2);
    let (d, _) = crash_and_restart(&mut s, "COLLECTOR", 201, t(50));
    assert_eq!(d, 10);
}

// ----- start -------------------------------------------------------------

#[test]
fn start_spawns_every_daemon_in_order_once() {
    let mut s = sup(&POOL);
    let out = s.handle(Event::Start);
    assert_eq!(
        spawns(&out),
        ["COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD"]
    );
    assert!(s.daemons().iter().all(|d| d.state == DaemonState::Starting));
    let again = s.handle(Event::Start);
    assert!(spawns(&again).is_empty());
    assert_eq!(
        logs(&again, LogLevel::Warn),
        ["already started; ignoring start"]
    );
    started(&mut s, "collector", 4242, t(1));
    let c = state_of(&s, "COLLECTOR");
    assert_eq!(
        (c.state, c.pid, c.restarts),
        (DaemonState::Running, Some(4242), 0)
    );
}

#[test]
fn empty_daemon_list_starts_nothing_and_shuts_down_at_once() {
    let mut s = sup(&["MASTER"]);
    assert!(spawns(&s.handle(Event::Start)).is_empty());
    let out = s.handle(Event::Shutdown { now: t(1) });
    assert_eq!(exits(&out), 1);
    assert!(s.is_finished());
}

// ----- crashes and backoff -------------------------------------------------

#[test]
fn crash_restarts_after_growing_backoff() {
    let mut s = sup_with(
        &["COLLECTOR"],
        SupervisorConfig {
            max_restarts: None,
            ..SupervisorConfig::default()
        },
    );
    boot(&mut s);
    let out = exited(&mut s, "COLLECTOR", SEGV, t(5));
    let warn = logs(&out, LogLevel::Warn);
    assert_eq!(
        warn,
        ["COLLECTOR (pid 100) died on signal 11 (SIGSEGV); restarting it in 10 s (restart 1)"]
    );
    let st = state_of(&s, "COLLECTOR");
    assert_eq!(st.state, DaemonState::WaitingToRestart);
    assert_eq!(st.next_restart, Some(t(15)));
    assert_eq!(s.next_deadline(), Some(t(15)));
    assert!(spawns(&tick(&mut s, t(14))).is_empty());
    assert_eq!(spawns(&tick(&mut s, t(15))), ["COLLECTOR"]);
    started(&mut s, "COLLECTOR", 101, t(15));

    // Crash immediately each time: 11, 13, 17, 25, 41, ... up to the ceiling.
    let mut now = t(15);
    let mut delays = vec![10];
    for pid in 102..116 {
        let (d, due) = crash_and_restart(&mut s, "COLLECTOR", pid, now + t(1));
        delays.push(d);
        now = due;
    }
    assert_eq!(
        delays,
        [10, 11, 13, 17, 25, 41, 73, 137, 265, 521, 1033, 2057, 3600, 3600, 3600]
    );
    assert_eq!(state_of(&s, "COLLECTOR").restarts, 15);
}

#[test]
fn any_unexpected_exit_is_a_failure() {
    // HTCondor restarts a daemon that exits, even with status 0, when
    // nobody asked it to stop.
    let mut s = sup(&["SCHEDD"]);
    boot(&mut s);
    let out = exited(&mut s, "SCHEDD", ExitStatus::Code(0), t(3));
    assert!(logs(&out, LogLevel::Warn)[0].starts_with("SCHEDD (pid 100) exited with status 0;"));
    assert_eq!(state_of(&s, "SCHEDD").state, DaemonState::WaitingToRestart);
}

#[test]
fn staying_up_recover_time_resets_backoff_on_tick() {
    let mut s = sup(&["SCHEDD"]);
    boot(&mut s);
    let (_, now) = crash_and_restart(&mut s, "SCHEDD", 101, t(10)); // 10 s
    let (_, now) = crash_and_restart(&mut s, "SCHEDD", 102, now + t(1)); // 11 s
    assert_eq!(state_of(&s, "SCHEDD").restarts, 2);
    // Up since `now`: recovery is due 300 s later.
    assert_eq!(s.next_deadline(), Some(now + t(300)));
    assert!(logs(&tick(&mut s, now + t(299)), LogLevel::Info).is_empty());
    assert_eq!(state_of(&s, "SCHEDD").restarts, 2);
    let out = tick(&mut s, now + t(300));
    assert!(logs(&out, LogLevel::Info)[0].starts_with("SCHEDD recovered"));
    assert_eq!(state_of(&s, "SCHEDD").restarts, 0);
    assert_eq!(s.next_deadline(), None);
    // The next crash starts the sequence again.
    let (d, _) = crash_and_restart(&mut s, "SCHEDD", 103, now + t(400));
    assert_eq!(d, 10);
}

#[test]
fn long_uptime_resets_backoff_even_without_tick() {
    let mut s = sup(&["SCHEDD"]);
    boot(&mut s);
    let (_, now) = crash_and_restart(&mut s, "SCHEDD", 101, t(10));
    let (_, now) = crash_and_restart(&mut s, "SCHEDD", 102, now);
    // No tick for a long time, then a crash: the daemon had recovered.
    let (d, _) = crash_and_restart(&mut s, "SCHEDD", 103, now + t(301));
    assert_eq!(d, 10);
    // A crash before the recover time keeps growing.
    let mut s = sup(&["SCHEDD"]);
    boot(&mut s);
    let (_, now) = crash_and_restart(&mut s, "SCHEDD", 101, t(10));
    let (d, _) = crash_and_restart(&mut s, "SCHEDD", 102, now + t(299));
    assert_eq!(d, 11);
}

#[test]
fn gives_up_after_max_restarts_and_on_tries_again() {
    let mut s = sup_with(
        &["COLLECTOR", "SCHEDD"],
        SupervisorConfig {
            max_restarts: Some(3),
            ..SupervisorConfig::default()
        },
    );
    boot(&mut s);
    let mut now = t(0);
    for pid in 200..203 {
        let (_, due) = crash_and_restart(&mut s, "SCHEDD", pid, now + t(1));
        now = due;
    }
    assert_eq!(state_of(&s, "SCHEDD").restarts, 3);
    let out = exited(&mut s, "SCHEDD", ExitStatus::Code(4), now + t(1));
    let g = gave_up(&out);
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].0, "SCHEDD");
    assert!(g[0].1.contains("exited with status 4"), "{}", g[0].1);
    assert!(g[0].1.contains("giving up"), "{}", g[0].1);
    assert!(g[0].1.contains("MASTER_MAX_RESTARTS = 3"), "{}", g[0].1);
    assert!(spawns(&out).is_empty());
    assert_eq!(state_of(&s, "SCHEDD").state, DaemonState::GaveUp);
    assert_eq!(s.next_deadline(), None);
    assert!(spawns(&tick(&mut s, now + t(100_000))).is_empty());
    // The other daemon is unaffected.
    assert_eq!(state_of(&s, "COLLECTOR").state, DaemonState::Running);
    // `on` clears the give-up and the count.
    let out = cmd(&mut s, Command::On, Some("schedd"), now + t(100_001));
    assert_eq!(spawns(&out), ["SCHEDD"]);
    started(&mut s, "SCHEDD", 300, now + t(100_001));
    assert_eq!(state_of(&s, "SCHEDD").restarts, 0);
    let (d, _) = crash_and_restart(&mut s, "SCHEDD", 301, now + t(100_002));
    assert_eq!(d, 10);
}

#[test]
fn max_restarts_zero_never_restarts() {
    let mut s = sup_with(
        &["SCHEDD"],
        SupervisorConfig {
            max_restarts: Some(0),
            ..SupervisorConfig::default()
        },
    );
    boot(&mut s);
    let out = exited(&mut s, "SCHEDD", SEGV, t(1));
    assert_eq!(gave_up(&out).len(), 1);
}

#[test]
fn default_limit_gives_up_after_twelve_restarts() {
    let mut s = sup(&["SCHEDD"]);
    boot(&mut s);
    let mut now = t(0);
    for pid in 200..212 {
        let (_, due) = crash_and_restart(&mut s, "SCHEDD", pid, now + t(1));
        now = due;
    }
    let out = exited(&mut s, "SCHEDD", SEGV, now + t(1));
    assert_eq!(gave_up(&out).len(), 1);
}

#[test]
fn daemon_no_restart_exit_is_not_restarted() {
    let mut s = sup(&["STARTD"]);
    boot(&mut s);
    let out = exited(&mut s, "STARTD", ExitStatus::Code(DAEMON_NO_RESTART), t(7));
    assert!(spawns(&out).is_empty());
    assert!(gave_up(&out).is_empty());
    assert!(logs(&out, LogLevel::Warn)[0].contains("asked not to be restarted"));
    assert_eq!(state_of(&s, "STARTD").state, DaemonState::NoRestart);
    assert!(spawns(&tick(&mut s, t(10_000))).is_empty());
    assert_eq!(
        spawns(&cmd(&mut s, Command::On, None, t(10_001))),
        ["STARTD"]
    );
}

#[test]
fn spawn_failure_is_a_failure_with_backoff() {
    let mut s = sup(&["COLLECTOR"]);
    s.handle(Event::Start);
    let out = s.handle(Event::SpawnFailed {
        name: "COLLECTOR".into(),
        error: "no such file".into(),
        now: t(0),
    });
    assert_eq!(
        logs(&out, LogLevel::Warn),
        ["could not start COLLECTOR: no such file; restarting it in 10 s (restart 1 of 12)"]
    );
    assert_eq!(spawns(&tick(&mut s, t(10))), ["COLLECTOR"]);
}

#[test]
fn stray_reports_are_logged_and_ignored() {
    let mut s = sup(&["COLLECTOR"]);
    boot(&mut s);
    let out = exited(&mut s, "NOPE", SEGV, t(1));
    assert!(logs(&out, LogLevel::Warn)[0].contains("unknown daemon `NOPE`"));
    let out = started(&mut s, "COLLECTOR", 999, t(1));
    assert!(logs(&out, LogLevel::Warn)[0].contains("unexpected start report"));
    assert_eq!(state_of(&s, "COLLECTOR").pid, Some(100));
    exited(&mut s, "COLLECTOR", SEGV, t(2));
    let out = exited(&mut s, "COLLECTOR", SEGV, t(3));
    assert!(logs(&out, LogLevel::Warn)[0].contains("which is not running"));
}

// ----- off / on / restart / reconfig -----------------------------------------

#[test]
fn off_one_daemon_terms_then_kills_and_keeps_it_down() {
    let mut s = sup(&POOL);
    boot(&mut s);
    let out = cmd(&mut s, Command::Off, Some("negotiator"), t(10));
    assert_eq!(signals(&out), [("NEGOTIATOR", 101, Signal::Term)]);
    assert_eq!(state_of(&s, "NEGOTIATOR").state, DaemonState::Stopping);
    assert_eq!(s.next_deadline(), Some(t(1810)));
    assert!(signals(&tick(&mut s, t(1809))).is_empty());
    let out = tick(&mut s, t(1810));
    assert_eq!(signals(&out), [("NEGOTIATOR", 101, Signal::Kill)]);
    assert!(logs(&out, LogLevel::Warn)[0].contains("sending SIGKILL"));
    assert_eq!(state_of(&s, "NEGOTIATOR").state, DaemonState::Killing);
    // Killed only once.
    assert!(signals(&tick(&mut s, t(5000))).is_empty());
    let out = exited(&mut s, "NEGOTIATOR", ExitStatus::Signal(9), t(5001));
    assert!(spawns(&out).is_empty());
    assert_eq!(state_of(&s, "NEGOTIATOR").state, DaemonState::Off);
    assert!(spawns(&tick(&mut s, t(100_000))).is_empty());
    // The others were left alone.
    for d in ["COLLECTOR", "SCHEDD", "STARTD"] {
        assert_eq!(state_of(&s, d).state, DaemonState::Running);
    }
    // Off again: already off.
    let out = cmd(&mut s, Command::Off, Some("NEGOTIATOR"), t(100_001));
    assert_eq!(logs(&out, LogLevel::Info), ["NEGOTIATOR is already off"]);
}

#[test]
fn off_cancels_a_pending_restart() {
    let mut s = sup(&["SCHEDD"]);
    boot(&mut s);
    exited(&mut s, "SCHEDD", SEGV, t(1));
    let out = cmd(&mut s, Command::Off, Some("SCHEDD"), t(2));
    assert!(signals(&out).is_empty());
    assert_eq!(state_of(&s, "SCHEDD").state, DaemonState::Off);
    assert!(spawns(&tick(&mut s, t(100))).is_empty());
}

#[test]
fn on_one_daemon_starts_it_again() {
    let mut s = sup(&POOL);
    boot(&mut s);
    cmd(&mut s, Command::Off, Some("SCHEDD"), t(1));
    exited(&mut s, "SCHEDD", ExitStatus::Code(0), t(2));
    let out = cmd(&mut s, Command::On, Some("SCHEDD"), t(3));
    assert_eq!(spawns(&out), ["SCHEDD"]);
    started(&mut s, "SCHEDD", 500, t(3));
    assert_eq!(state_of(&s, "SCHEDD").state, DaemonState::Running);
    let out = cmd(&mut s, Command::On, Some("SCHEDD"), t(4));
    assert!(spawns(&out).is_empty());
    assert_eq!(
        logs(&out, LogLevel::Info),
        ["on: SCHEDD is already running"]
    );
}

#[test]
fn on_while_stopping_starts_once_gone() {
    let mut s = sup(&["SCHEDD"]);
    boot(&mut s);
    cmd(&mut s, Command::Off, Some("SCHEDD"), t(1));
    let out = cmd(&mut s, Command::On, Some("SCHEDD"), t(2));
    assert!(spawns(&out).is_empty());
    let out = exited(&mut s, "SCHEDD", ExitStatus::Code(0), t(3));
    assert_eq!(spawns(&out), ["SCHEDD"]);
}

#[test]
fn off_all_stops_startd_first_then_the_rest_and_on_starts_all_in_order() {
    let mut s = sup(&POOL);
    boot(&mut s);
    let out = cmd(&mut s, Command::Off, None, t(10));
    assert_eq!(signals(&out), [("STARTD", 103, Signal::Term)]);
    let out = exited(&mut s, "STARTD", ExitStatus::Code(0), t(20));
    assert_eq!(
        signals(&out),
        [
            ("COLLECTOR", 100, Signal::Term),
            ("NEGOTIATOR", 101, Signal::Term),
            ("SCHEDD", 102, Signal::Term),
        ]
    );
    exited(&mut s, "SCHEDD", ExitStatus::Code(0), t(21));
    exited(&mut s, "COLLECTOR", ExitStatus::Code(0), t(22));
    let out = exited(&mut s, "NEGOTIATOR", ExitStatus::Code(0), t(23));
    assert_eq!(
        logs(&out, LogLevel::Info).last(),
        Some(&"all daemons are off")
    );
    assert_eq!(exits(&out), 0);
    assert!(!s.is_finished());
    assert!(s.daemons().iter().all(|d| d.state == DaemonState::Off));
    assert!(spawns(&tick(&mut s, t(100_000))).is_empty());
    let out = cmd(&mut s, Command::On, None, t(100_001));
    assert_eq!(
        spawns(&out),
        ["COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD"]
    );
}

#[test]
fn off_all_without_startd_stops_everything_at_once() {
    let mut s = sup(&["COLLECTOR", "SCHEDD"]);
    boot(&mut s);
    let out = cmd(&mut s, Command::Off, None, t(1));
    assert_eq!(
        signals(&out),
        [
            ("COLLECTOR", 100, Signal::Term),
            ("SCHEDD", 101, Signal::Term)
        ]
    );
}

#[test]
fn a_crash_during_a_stop_of_all_is_not_restarted() {
    let mut s = sup(&POOL);
    boot(&mut s);
    cmd(&mut s, Command::Off, None, t(1));
    // The schedd crashes while the startd is still shutting down.
    let out = exited(&mut s, "SCHEDD", SEGV, t(2));
    assert!(spawns(&out).is_empty());
    assert_eq!(state_of(&s, "SCHEDD").state, DaemonState::Off);
    assert_eq!(s.next_deadline(), Some(t(1801)));
}

#[test]
fn commands_during_a_stop_of_all_are_refused_except_reconfig() {
    let mut s = sup(&POOL);
    boot(&mut s);
    cmd(&mut s, Command::Off, None, t(1));
    let out = cmd(&mut s, Command::On, Some("STARTD"), t(2));
    assert!(spawns(&out).is_empty());
    assert!(logs(&out, LogLevel::Warn)[0].contains("ignoring on command"));
    let out = cmd(&mut s, Command::Reconfig, None, t(3));
    // The startd is stopping: only the three running daemons get SIGHUP.
    assert_eq!(
        signals(&out),
        [
            ("COLLECTOR", 100, Signal::Hup),
            ("NEGOTIATOR", 101, Signal::Hup),
            ("SCHEDD", 102, Signal::Hup),
        ]
    );
}

#[test]
fn restart_one_daemon_stops_then_starts_it_with_a_fresh_count() {
    let mut s = sup(&POOL);
    boot(&mut s);
    let (_, now) = crash_and_restart(&mut s, "SCHEDD", 200, t(1));
    assert_eq!(state_of(&s, "SCHEDD").restarts, 1);
    let out = cmd(&mut s, Command::Restart, Some("Schedd"), now + t(1));
    assert_eq!(signals(&out), [("SCHEDD", 200, Signal::Term)]);
    assert!(spawns(&out).is_empty());
    let out = exited(&mut s, "SCHEDD", ExitStatus::Code(0), now + t(2));
    assert_eq!(spawns(&out), ["SCHEDD"]);
    assert_eq!(state_of(&s, "SCHEDD").restarts, 0);
    started(&mut s, "SCHEDD", 201, now + t(2));
    // A restart that has to SIGKILL still starts it again.
    cmd(&mut s, Command::Restart, Some("SCHEDD"), now + t(3));
    let out = tick(&mut s, now + t(1803));
    assert_eq!(signals(&out), [("SCHEDD", 201, Signal::Kill)]);
    let out = exited(&mut s, "SCHEDD", ExitStatus::Signal(9), now + t(1804));
    assert_eq!(spawns(&out), ["SCHEDD"]);
}

#[test]
fn restart_of_a_daemon_that_is_down_starts_it() {
    let mut s = sup(&["SCHEDD"]);
    boot(&mut s);
    exited(&mut s, "SCHEDD", SEGV, t(1)); // waiting 10 s to restart
    let out = cmd(&mut s, Command::Restart, Some("SCHEDD"), t(2));
    assert_eq!(spawns(&out), ["SCHEDD"]);
    assert_eq!(state_of(&s, "SCHEDD").restarts, 0);
}

#[test]
fn restart_all_stops_everything_then_starts_in_order() {
    let mut s = sup(&POOL);
    boot(&mut s);
    let out = cmd(&mut s, Command::Restart, None, t(1));
    assert_eq!(signals(&out), [("STARTD", 103, Signal::Term)]);
    assert!(spawns(&exited(&mut s, "STARTD", ExitStatus::Code(0), t(2))).is_empty());
    assert!(spawns(&exited(&mut s, "SCHEDD", ExitStatus::Code(0), t(3))).is_empty());
    assert!(spawns(&exited(&mut s, "COLLECTOR", ExitStatus::Code(0), t(4))).is_empty());
    let out = exited(&mut s, "NEGOTIATOR", ExitStatus::Code(0), t(5));
    assert_eq!(
        spawns(&out),
        ["COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD"]
    );
}

#[test]
fn reconfig_sends_sighup_to_one_or_all_running_daemons() {
    let mut s = sup(&POOL);
    boot(&mut s);
    let out = cmd(&mut s, Command::Reconfig, Some("startd"), t(1));
    assert_eq!(signals(&out), [("STARTD", 103, Signal::Hup)]);
    exited(&mut s, "NEGOTIATOR", SEGV, t(2));
    let out = cmd(&mut s, Command::Reconfig, None, t(3));
    assert_eq!(
        signals(&out),
        [
            ("COLLECTOR", 100, Signal::Hup),
            ("SCHEDD", 102, Signal::Hup),
            ("STARTD", 103, Signal::Hup),
        ]
    );
    let out = cmd(&mut s, Command::Reconfig, Some("NEGOTIATOR"), t(4));
    assert!(signals(&out).is_empty());
    assert_eq!(
        logs(&out, LogLevel::Info),
        ["reconfig: NEGOTIATOR is not running; nothing to do"]
    );
    // Reconfig does not disturb the pending restart.
    assert_eq!(spawns(&tick(&mut s, t(12))), ["NEGOTIATOR"]);
}

#[test]
fn a_stop_requested_while_starting_is_sent_once_the_pid_is_known() {
    let mut s = sup(&["SCHEDD"]);
    s.handle(Event::Start);
    let out = cmd(&mut s, Command::Off, Some("SCHEDD"), t(0));
    assert!(signals(&out).is_empty());
    let out = started(&mut s, "SCHEDD", 77, t(1));
    assert_eq!(signals(&out), [("SCHEDD", 77, Signal::Term)]);
    assert_eq!(s.next_deadline(), Some(t(1801)));
    assert!(spawns(&exited(&mut s, "SCHEDD", ExitStatus::Code(0), t(2))).is_empty());
    assert_eq!(state_of(&s, "SCHEDD").state, DaemonState::Off);
}

#[test]
fn unknown_daemon_names_in_commands_are_errors() {
    let mut s = sup(&POOL);
    boot(&mut s);
    for c in [
        Command::Off,
        Command::On,
        Command::Restart,
        Command::Reconfig,
    ] {
        let out = cmd(&mut s, c, Some("SHADOWD"), t(1));
        assert!(spawns(&out).is_empty() && signals(&out).is_empty());
        let err = logs(&out, LogLevel::Error);
        assert_eq!(
            err,
            [format!(
                "{c}: unknown daemon `SHADOWD` \
                 (DAEMON_LIST: MASTER, COLLECTOR, NEGOTIATOR, SCHEDD, STARTD)"
            )]
        );
    }
}

#[test]
fn off_master_shuts_down_and_other_master_commands_are_refused() {
    let mut s = sup(&["COLLECTOR"]);
    boot(&mut s);
    let out = cmd(&mut s, Command::Restart, Some("master"), t(1));
    assert!(logs(&out, LogLevel::Error)[0].contains("MASTER is not one of"));
    assert!(signals(&out).is_empty());
    let out = cmd(&mut s, Command::Off, Some("MASTER"), t(2));
    assert_eq!(signals(&out), [("COLLECTOR", 100, Signal::Term)]);
    assert!(s.is_shutting_down());
    assert_eq!(
        exits(&exited(&mut s, "COLLECTOR", ExitStatus::Code(0), t(3))),
        1
    );
}

// ----- shutdown ----------------------------------------------------------------

#[test]
fn shutdown_terms_all_kills_stragglers_and_exits_after_the_last() {
    let mut s = sup(&POOL);
    boot(&mut s);
    let out = s.handle(Event::Shutdown { now: t(100) });
    assert_eq!(signals(&out), [("STARTD", 103, Signal::Term)]);
    assert_eq!(exits(&out), 0);
    // The startd is slow: SIGKILL after SHUTDOWN_GRACEFUL_TIMEOUT.
    assert_eq!(s.next_deadline(), Some(t(1900)));
    assert!(signals(&tick(&mut s, t(1899))).is_empty());
    assert_eq!(
        signals(&tick(&mut s, t(1900))),
        [("STARTD", 103, Signal::Kill)]
    );
    let out = exited(&mut s, "STARTD", ExitStatus::Signal(9), t(1901));
    assert_eq!(
        signals(&out),
        [
            ("COLLECTOR", 100, Signal::Term),
            ("NEGOTIATOR", 101, Signal::Term),
            ("SCHEDD", 102, Signal::Term),
        ]
    );
    assert_eq!(
        exits(&exited(&mut s, "COLLECTOR", ExitStatus::Code(0), t(1902))),
        0
    );
    assert_eq!(
        exits(&exited(&mut s, "NEGOTIATOR", ExitStatus::Code(0), t(1903))),
        0
    );
    // The schedd hangs too: its own timeout counts from its own SIGTERM.
    assert!(signals(&tick(&mut s, t(3700))).is_empty());
    assert_eq!(
        signals(&tick(&mut s, t(3701))),
        [("SCHEDD", 102, Signal::Kill)]
    );
    assert!(!s.is_finished());
    let out = exited(&mut s, "SCHEDD", ExitStatus::Signal(9), t(3702));
    assert_eq!(exits(&out), 1);
    assert_eq!(out.last(), Some(&Action::Exit));
    assert!(s.is_finished());
    assert_eq!(s.next_deadline(), None);
    // Nothing after the exit.
    let late = tick(&mut s, t(9999));
    assert!(late.iter().all(|a| matches!(
        a,
        Action::Log {
            level: LogLevel::Debug,
            ..
        }
    )));
    assert_eq!(exits(&s.handle(Event::Shutdown { now: t(9999) })), 0);
}

#[test]
fn shutdown_cancels_pending_restarts_and_exits_when_nothing_runs() {
    let mut s = sup(&["COLLECTOR", "SCHEDD"]);
    boot(&mut s);
    exited(&mut s, "SCHEDD", SEGV, t(1));
    let out = s.handle(Event::Shutdown { now: t(2) });
    assert_eq!(signals(&out), [("COLLECTOR", 100, Signal::Term)]);
    assert!(spawns(&tick(&mut s, t(50))).is_empty());
    let out = exited(&mut s, "COLLECTOR", ExitStatus::Code(0), t(51));
    assert_eq!(exits(&out), 1);

    let mut s = sup(&["COLLECTOR"]);
    boot(&mut s);
    exited(&mut s, "COLLECTOR", SEGV, t(1));
    let out = s.handle(Event::Shutdown { now: t(2) });
    assert_eq!(exits(&out), 1);
}

#[test]
fn shutdown_waits_for_a_daemon_still_starting() {
    let mut s = sup(&["COLLECTOR"]);
    s.handle(Event::Start);
    let out = s.handle(Event::Shutdown { now: t(0) });
    assert_eq!(exits(&out), 0);
    let out = started(&mut s, "COLLECTOR", 9, t(1));
    assert_eq!(signals(&out), [("COLLECTOR", 9, Signal::Term)]);
    assert_eq!(
        exits(&exited(&mut s, "COLLECTOR", ExitStatus::Code(0), t(2))),
        1
    );

    // Or whose start fails.
    let mut s = sup(&["COLLECTOR"]);
    s.handle(Event::Start);
    s.handle(Event::Shutdown { now: t(0) });
    let out = s.handle(Event::SpawnFailed {
        name: "COLLECTOR".into(),
        error: "boom".into(),
        now: t(1),
    });
    assert_eq!(exits(&out), 1);
}

#[test]
fn commands_and_start_during_shutdown_are_ignored() {
    let mut s = sup(&["COLLECTOR"]);
    boot(&mut s);
    s.handle(Event::Shutdown { now: t(1) });
    for c in [
        Command::On,
        Command::Restart,
        Command::Off,
        Command::Reconfig,
    ] {
        let out = cmd(&mut s, c, None, t(2));
        assert!(spawns(&out).is_empty() && signals(&out).is_empty());
        assert_eq!(
            logs(&out, LogLevel::Warn),
            [format!("shutting down; ignoring {c} command")]
        );
    }
    let out = s.handle(Event::Shutdown { now: t(3) });
    assert_eq!(logs(&out, LogLevel::Info), ["already shutting down"]);
    assert!(signals(&out).is_empty());
}

#[test]
fn shutdown_overrides_a_restart_of_all_in_progress() {
    let mut s = sup(&["COLLECTOR", "SCHEDD"]);
    boot(&mut s);
    cmd(&mut s, Command::Restart, None, t(1));
    s.handle(Event::Shutdown { now: t(2) });
    exited(&mut s, "COLLECTOR", ExitStatus::Code(0), t(3));
    let out = exited(&mut s, "SCHEDD", ExitStatus::Code(0), t(4));
    assert!(spawns(&out).is_empty());
    assert_eq!(exits(&out), 1);
}

#[test]
fn exit_status_display() {
    assert_eq!(ExitStatus::Code(3).to_string(), "exited with status 3");
    assert_eq!(
        ExitStatus::Signal(9).to_string(),
        "died on signal 9 (SIGKILL)"
    );
    assert_eq!(ExitStatus::Signal(64).to_string(), "died on signal 64");
}
