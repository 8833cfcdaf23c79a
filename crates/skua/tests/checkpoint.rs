//! Preemptive resume (issue 15, "How it is checked"): the counter of
//! `tests/data/ckpt_counter.sh`, a self-checkpointing job (it saves its
//! count to `counter.state` every few steps and exits 85, its
//! `checkpoint_exit_code`), runs through a whole personal pool:
//!
//! - evicted by its machine's owner several times (HTCondor's desktop
//!   policy, the owner played in through `STARTD_ATTRIBUTE_FILE`), it
//!   finishes with the right count, having done less work than restarts
//!   from zero would, and `CommittedTime < RemoteWallClockTime`;
//! - vacated (`skua vacate`) on one slot, it resumes on the other from its
//!   last checkpoint; with `+WantCheckpointSignal` it checkpoints on the
//!   vacate itself (its checkpoint signal instead of its kill signal);
//! - held, its stored checkpoint is shown by `skua q -l` and copied out by
//!   `skua evicted_files get`; released, it completes, and its store is
//!   removed when it leaves the queue;
//! - its starter killed in the middle of a checkpoint's transfer, the
//!   previous checkpoint stays and the job finishes from it;
//! - `when_to_transfer_output = ON_EXIT_OR_EVICT`: the sandbox of an
//!   evicted job comes back at its next start;
//! - with `CHECKPOINT_SIGNAL_INTERVAL` the execute side's periodic
//!   checkpoint signal makes it checkpoint;
//! - `checkpoint_destination = file://DIR` keeps its checkpoints in DIR;
//!   a checkpoint that cannot be stored holds it (36), one lacking a file
//!   it names holds it (12, ENOENT);
//! - checkpointed on one execute host, it resumes on another when the
//!   first crashes (test hosts over network namespaces, as in
//!   tests/multihost.rs);
//! - the user log reads with HTCondor's own reader (`htcondor2`).
//!
//! Every start, step, checkpoint and end of the counter is appended to
//! `counter.log` in the submitting account's working directory (outside
//! the sandbox, which travels), so the work of all runs is counted.

#![allow(clippy::unwrap_used)]
// This test runs python3 (HTCondor's reader of the user log).
#![allow(clippy::disallowed_methods)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{job_env, kill, pids_of, wait_for, Pool};

/// The counter program.
pub const COUNTER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/ckpt_counter.sh");

/// HTCondor's reader of the user log, printing JSON.
const READ_USERLOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../skua-queue/tests/read_userlog.py"
);

/// How one process of the counter ended, as `counter.log` tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// It took a checkpoint and exited 85.
    Checkpoint,
    /// It got SIGTERM (a vacate's kill signal).
    Term,
    /// It counted to its target.
    Done,
    /// No end logged: killed hard, or still running.
    None,
}

/// One process of the counter.
#[derive(Clone, Debug)]
struct Run {
    /// The count it started from.
    start: u32,
    /// The host it ran on.
    host: String,
    /// Its steps.
    steps: u32,
    /// The count it reached.
    last: u32,
    end: End,
}

/// The processes of the counter in `log`, in order.
fn parse_runs(log: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut runs: Vec<Run> = Vec::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(what), Some(n)) = (w.next(), w.next().and_then(|n| n.parse::<u32>().ok())) else {
            continue;
        };
        if what == "start" {
            runs.push(Run {
                start: n,
                host: w.next().unwrap_or("").to_string(),
                steps: 0,
                last: n,
                end: End::None,
            });
            continue;
        }
        let Some(run) = runs.last_mut() else { continue };
        match what {
            "step" => {
                assert_eq!(n, run.last + 1, "steps of one process follow: {text}");
                run.steps += 1;
                run.last = n;
            }
            "ckpt" => run.end = End::Checkpoint,
            "term" => run.end = End::Term,
            "done" => run.end = End::Done,
            _ => {}
        }
    }
    runs
}

/// The checks every finished counter passes: its last process counted to
/// `target`; every process started from 0 or from a count it checkpointed
/// earlier (`allowed`: further counts a process may legitimately start
/// from, such as a count saved at a vacate). Returns (the processes ended
/// by an eviction: no checkpoint exit, the steps counted in all).
fn check_counter(log: &Path, target: u32, allowed: &[u32]) -> (Vec<Run>, u32) {
    let runs = parse_runs(log);
    let text = std::fs::read_to_string(log).unwrap_or_default();
    assert!(!runs.is_empty(), "the counter never ran");
    let last = runs.last().unwrap();
    assert_eq!(
        (last.end, last.last),
        (End::Done, target),
        "the last process counted to {target}: {text}"
    );
    assert_eq!(runs[0].start, 0, "{text}");
    let mut checkpointed: Vec<u32> = vec![0];
    checkpointed.extend_from_slice(allowed);
    for (i, r) in runs.iter().enumerate() {
        assert!(
            checkpointed.contains(&r.start),
            "process {i} started from {} (checkpoints so far: {checkpointed:?}): {text}",
            r.start
        );
        if r.end == End::Checkpoint {
            checkpointed.push(r.last);
        }
    }
    let evictions: Vec<Run> = runs
        .iter()
        .filter(|r| matches!(r.end, End::Term | End::None))
        .cloned()
        .collect();
    let steps = runs.iter().map(|r| r.steps).sum();
    (evictions, steps)
}

/// Puts the counter program and its log in `work` (made the submitting
/// account's, and writable by the job whatever account it runs as).
fn counter_files(work: &Path) -> PathBuf {
    common::user_dir(work);
    std::fs::set_permissions(work, std::fs::Permissions::from_mode(0o777)).unwrap();
    let exe = work.join("ckpt_counter.sh");
    std::fs::copy(COUNTER, &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = work.join("counter.log");
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
    if let Some(u) = common::submitter() {
        for f in [&exe, &log] {
            std::os::unix::fs::chown(f, Some(u.uid), Some(u.gid)).unwrap();
        }
    }
    log
}

/// The submit description of the counter counting to `target` in steps of
/// `step` seconds, checkpointing every `every` steps, with `extra` lines
/// (and `env`, more `NAME=value` words of its environment).
fn counter_job(work: &Path, target: u32, every: u32, step: &str, env: &str, extra: &str) -> String {
    format!(
        "executable = ckpt_counter.sh\n\
         arguments = {target} {every} {step}\n\
         checkpoint_exit_code = 85\n\
         transfer_checkpoint_files = counter.state\n\
         transfer_output_files = counter.out\n\
         should_transfer_files = YES\n\
         when_to_transfer_output = ON_EXIT\n\
         environment = \"COUNTER_LOG={log} {env}\"\n\
         output = out.txt\n\
         error = err.txt\n\
         log = job.log\n\
         request_disk = 1024\n\
         {extra}\n\
         queue\n",
        log = work.join("counter.log").display()
    )
}

fn q_af(pool: &Pool, attrs: &[&str]) -> String {
    let mut args = vec!["q", "-allusers", "-af"];
    args.extend_from_slice(attrs);
    pool.ok(&args).trim().to_string()
}

/// An integer attribute of the (only) job in the queue; `None` while it is
/// undefined.
fn q_int(pool: &Pool, attr: &str) -> Option<i64> {
    q_af(pool, &[attr]).parse().ok()
}

fn queue_empty(pool: &Pool) -> bool {
    pool.skua(&["q", "-allusers", "-af", "ClusterId"])
        .stdout
        .is_empty()
}

/// The finished job's attributes `attrs` from the history, as numbers.
fn history_numbers(pool: &Pool, attrs: &[&str]) -> Vec<f64> {
    let mut args = vec!["history", "-af"];
    args.extend_from_slice(attrs);
    let row = pool.ok(&args);
    let v: Vec<f64> = row
        .split_whitespace()
        .map(|w| {
            w.parse()
                .unwrap_or_else(|_| panic!("{attrs:?} are not numbers: {row}"))
        })
        .collect();
    assert_eq!(v.len(), attrs.len(), "{attrs:?}: {row}");
    v
}

/// The job's checkpoint store in the schedd's spool.
fn store(pool: &Pool, cluster: &str) -> PathBuf {
    pool.dir.join(format!("spool/checkpoints/{cluster}.0"))
}

/// The events of the user log `log` as HTCondor's `JobEventLog` reads
/// them: (type, attributes). `None` (with a loud notice) when python3 or
/// htcondor2 is missing, unless `SKUA_REQUIRE_HTCONDOR_PY=1`.
fn htcondor_events(log: &Path) -> Option<Vec<(String, serde_json::Value)>> {
    let out = Command::new("python3")
        .arg(READ_USERLOG)
        .arg(log)
        .env("TZ", "UTC")
        .output();
    let missing = match &out {
        Err(e) => Some(format!("python3 could not be run ({e})")),
        Ok(o) if o.status.code() == Some(3) => Some("htcondor2 is not installed".to_string()),
        Ok(_) => None,
    };
    if let Some(why) = missing {
        if std::env::var("SKUA_REQUIRE_HTCONDOR_PY").as_deref() == Ok("1") {
            panic!("SKUA_REQUIRE_HTCONDOR_PY=1 but {why}");
        }
        eprintln!("\n!!!!!!!! SKIPPED: {why}; the user log was NOT read with HTCondor's reader !!!!!!!!\n");
        return None;
    }
    let out = out.unwrap();
    assert!(
        out.status.success(),
        "HTCondor's reader failed on the user log: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(log).unwrap_or_default()
    );
    let got: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    Some(
        got.into_iter()
            .map(|e| {
                (
                    e["type"].as_str().unwrap_or("").to_string(),
                    e["attrs"].clone(),
                )
            })
            .collect(),
    )
}

/// Checks that HTCondor's reader reads the whole user log and finds in it
/// what a checkpointed, evicted, completed job leaves: its executions,
/// `evictions` evictions (at least; with `checkpointed` of them marked
/// "Job was checkpointed"), the transfers of its `stored` checkpoints (at
/// least), its end.
fn check_user_log(work: &Path, evictions: usize, checkpointed: usize, stored: usize) {
    let path = work.join("job.log");
    let text = std::fs::read_to_string(&path).unwrap();
    let events_in_text = text.lines().filter(|l| *l == "...").count();
    let Some(events) = htcondor_events(&path) else {
        return;
    };
    assert_eq!(events.len(), events_in_text, "every event read: {text}");
    let count = |t: &str| events.iter().filter(|(ty, _)| ty == t).count();
    assert_eq!(count("SUBMIT"), 1, "{text}");
    assert!(
        count("EXECUTE") > evictions,
        "an execution per start: {text}"
    );
    assert!(count("JOB_EVICTED") >= evictions, "{text}");
    let marked = events
        .iter()
        .filter(|(ty, a)| ty == "JOB_EVICTED" && a["Checkpointed"] == serde_json::json!(true))
        .count();
    assert!(
        marked >= checkpointed,
        "{checkpointed} evictions marked checkpointed: {text}"
    );
    // each stored checkpoint is a transfer of the job's files (040:
    // "Started transferring output files" (5), then "Finished" (6))
    let transfers = |kind: i64| {
        events
            .iter()
            .filter(|(ty, a)| ty == "FILE_TRANSFER" && a["Type"] == serde_json::json!(kind))
            .count()
    };
    assert!(
        transfers(6) >= stored && transfers(5) >= transfers(6),
        "{stored} checkpoints' transfers in the log: {text}"
    );
    assert_eq!(count("JOB_TERMINATED"), 1, "{text}");
    assert_eq!(events.last().unwrap().0, "JOB_TERMINATED", "{text}");
}

/// The counter's final output came back.
fn check_output(work: &Path, target: u32) {
    let out = std::fs::read_to_string(work.join("counter.out")).unwrap_or_default();
    assert_eq!(out, format!("final count {target}\n"));
    let stdout = std::fs::read_to_string(work.join("out.txt")).unwrap_or_default();
    assert!(
        stdout.ends_with(&format!("final count {target}\n")),
        "{stdout}"
    );
}

// ---- the owner's policy ------------------------------------------------------

/// A pool of `cpus` slots whose configuration ends with `extra`; the
/// owner's activity comes from `<home>/owner` (as in tests/policy.rs).
fn policy_pool(name: &str, cpus: &str, extra: &str) -> (Pool, PathBuf) {
    let env = job_env(cpus, &[("_CONDOR_POLLING_INTERVAL", "1")]);
    let mut pool = Pool::new(name, &env);
    let owner = pool.home.join("owner");
    set_owner(&owner, 100_000);
    pool.start();
    let dir = pool.dir.to_string_lossy().into_owned();
    pool.ok(&["pool", "stop", "--dir", &dir]);
    let mut text = std::fs::read_to_string(pool.config()).unwrap();
    text.push_str(&format!(
        "\nSTARTD_ATTRIBUTE_FILE = {}\n{extra}\n",
        owner.display()
    ));
    std::fs::write(pool.config(), text).unwrap();
    pool.start();
    let want: usize = cpus.parse().unwrap();
    wait_for("the slots", Duration::from_secs(30), || {
        pool.ok(&["status", "-af", "Name"]).lines().count() == want
    });
    wait_for("the schedd's address file", Duration::from_secs(30), || {
        pool.dir.join("spool/.schedd_address").exists()
    });
    (pool, owner)
}

/// Plays the owner: keyboard idle for `idle` seconds, no load.
fn set_owner(file: &Path, idle: i64) {
    let tmp = file.with_extension("tmp");
    std::fs::write(
        &tmp,
        format!(
            "KeyboardIdle = {idle}\nConsoleIdle = {idle}\nLoadAvg = 0.0\nCondorLoadAvg = 0.0\n\
             TotalLoadAvg = 0.0\nTotalCondorLoadAvg = 0.0\n"
        ),
    )
    .unwrap();
    std::fs::rename(tmp, file).unwrap();
}

#[test]
fn evicted_by_its_owner_three_times_the_counter_resumes_and_loses_little() {
    // HTCondor's desktop policy, times scaled down: the owner's return
    // suspends the job, two seconds of it vacate it
    let (pool, owner) = policy_pool(
        "ckpt-owner",
        "1",
        "use POLICY : Desktop\nStartIdleTime = 60\nContinueIdleTime = 2\n\
         MaxSuspendTime = 2\nMaxVacateTime = 5\n",
    );
    let work = pool.home.join("work");
    let log = counter_files(&work);
    let target = 100;
    pool.submit_job(&work, &counter_job(&work, target, 5, "0.2", "", ""));
    let mut stored = 0;
    for round in 1..=3 {
        // a checkpoint stored since the last eviction, and the counter
        // running on beyond it
        wait_for("a new checkpoint stored", Duration::from_secs(60), || {
            q_int(&pool, "CheckpointNumber").is_some_and(|n| n > stored)
                && q_int(&pool, "JobStatus") == Some(2)
        });
        stored = q_int(&pool, "CheckpointNumber").unwrap();
        // the owner returns
        set_owner(&owner, 0);
        wait_for(
            &format!("eviction {round}"),
            Duration::from_secs(30),
            || {
                let runs = parse_runs(&log);
                q_int(&pool, "JobStatus") == Some(1)
                    && runs
                        .last()
                        .is_some_and(|r| matches!(r.end, End::Term | End::None))
            },
        );
        assert!(
            parse_runs(&log).last().unwrap().last < target,
            "the counter finished before eviction {round}: make it longer"
        );
        set_owner(&owner, 100_000);
    }
    wait_for("the job to complete", Duration::from_secs(120), || {
        queue_empty(&pool)
    });
    check_output(&work, target);
    let (evictions, steps) = check_counter(&log, target, &[]);
    assert!(evictions.len() >= 3, "{:?}", parse_runs(&log));
    // restarts from zero would have counted every evicted process's count
    // again; resumed from checkpoints, only the steps after the last one
    let from_zero: u32 = target + evictions.iter().map(|r| r.last).sum::<u32>();
    assert!(
        steps >= target && steps < from_zero,
        "{steps} steps counted; restarts from zero: {from_zero}"
    );
    let runs = parse_runs(&log);
    for (i, r) in runs.iter().enumerate().skip(1) {
        if matches!(runs[i - 1].end, End::Term | End::None) {
            assert!(r.start > 0, "resumed after eviction, not from 0: {runs:?}");
        }
    }
    let h = history_numbers(
        &pool,
        &[
            "ExitCode",
            "CommittedTime",
            "RemoteWallClockTime",
            "NumCkpts",
            "CheckpointNumber",
            "LastCkptTime",
            "CommittedSlotTime",
            "CumulativeSlotTime",
        ],
    );
    let [code, committed, wall, num, number, last_time, committed_slot, cumulative] = h[..] else {
        unreachable!()
    };
    assert_eq!(code, 0.0);
    eprintln!(
        "counter to {target}: {steps} steps in {} processes ({} evictions; restarts from zero: \
         {from_zero}); CommittedTime {committed} s of RemoteWallClockTime {wall} s; NumCkpts {num}",
        runs.len(),
        evictions.len()
    );
    // badput: the work lost to the evictions
    assert!(
        committed > 0.0 && committed < wall,
        "CommittedTime {committed}, RemoteWallClockTime {wall}"
    );
    assert!(
        committed_slot > 0.0 && committed_slot <= cumulative,
        "{h:?}"
    );
    let ckpt_exits = runs.iter().filter(|r| r.end == End::Checkpoint).count() as f64;
    assert!(num >= 3.0 && num <= ckpt_exits, "NumCkpts {num}: {runs:?}");
    assert!(number >= num, "{h:?}");
    assert!(last_time > 1_700_000_000.0, "{h:?}");
    check_user_log(&work, 3, 0, num as usize);
}

// ---- vacate ------------------------------------------------------------------

/// The job avoids the slot that last ran it (HTCondor's `LastRemoteHost`).
const AVOID_LAST_SLOT: &str =
    "requirements = (MY.LastRemoteHost =?= undefined) || (TARGET.Name =!= MY.LastRemoteHost)";

/// Waits for the job to run with a stored checkpoint, then vacates its
/// slot; returns (the slot, the checkpoint number stored then).
fn vacate_after_a_checkpoint(pool: &Pool) -> (String, i64) {
    wait_for("a checkpoint stored", Duration::from_secs(60), || {
        q_int(pool, "CheckpointNumber").is_some_and(|n| n >= 1)
            && q_int(pool, "JobStatus") == Some(2)
    });
    let slot = q_af(pool, &["RemoteHost"]);
    assert!(slot.contains('@'), "{slot}");
    let stored = q_int(pool, "CheckpointNumber").unwrap();
    let out = pool.ok(&["vacate", &slot]);
    assert!(out.contains(&slot), "{out}");
    (slot, stored)
}

#[test]
fn vacated_on_one_slot_the_counter_resumes_on_the_other_from_its_checkpoint() {
    let (pool, _owner) = policy_pool("ckpt-vacate", "2", "");
    let work = pool.home.join("work");
    let log = counter_files(&work);
    let target = 60;
    let cluster = pool.submit_job(
        &work,
        &counter_job(&work, target, 5, "0.2", "", AVOID_LAST_SLOT),
    );
    let (slot, _) = vacate_after_a_checkpoint(&pool);
    wait_for("the job running elsewhere", Duration::from_secs(30), || {
        let now = q_af(&pool, &["JobStatus", "RemoteHost"]);
        now.starts_with("2 ") && !now.ends_with(&slot)
    });
    wait_for("the job to complete", Duration::from_secs(90), || {
        queue_empty(&pool)
    });
    check_output(&work, target);
    let (evictions, _) = check_counter(&log, target, &[]);
    assert_eq!(evictions.len(), 1, "{:?}", parse_runs(&log));
    let runs = parse_runs(&log);
    let after = runs
        .iter()
        .position(|r| matches!(r.end, End::Term | End::None))
        .unwrap()
        + 1;
    assert!(runs[after].start > 0, "resumed, not from 0: {runs:?}");
    let last = pool.ok(&["history", "-af", "LastRemoteHost"]);
    assert_ne!(last.trim(), slot, "ended on the other slot");
    // the job's store went with it
    assert!(!store(&pool, &cluster).exists());
    let stored = history_numbers(&pool, &["NumCkpts"])[0];
    check_user_log(&work, 1, 0, stored as usize);
}

#[test]
fn with_a_checkpoint_signal_a_vacated_counter_checkpoints_where_it_is() {
    let (pool, _owner) = policy_pool("ckpt-vacate-signal", "2", "");
    let work = pool.home.join("work");
    let log = counter_files(&work);
    let target = 60;
    // it would checkpoint by itself only every 1000 steps: whatever
    // checkpoint it has comes from its checkpoint signal
    pool.submit_job(
        &work,
        &counter_job(
            &work,
            target,
            1000,
            "0.2",
            "",
            &format!(
                "{AVOID_LAST_SLOT}\n+WantCheckpointSignal = true\n+CheckpointSig = \"SIGUSR2\""
            ),
        ),
    );
    wait_for("the counter running", Duration::from_secs(60), || {
        parse_runs(&log).last().is_some_and(|r| r.last >= 5)
    });
    let slot = q_af(&pool, &["RemoteHost"]);
    pool.ok(&["vacate", &slot]);
    wait_for("the job running elsewhere", Duration::from_secs(30), || {
        let now = q_af(&pool, &["JobStatus", "RemoteHost"]);
        now.starts_with("2 ") && !now.ends_with(&slot)
    });
    let runs = parse_runs(&log);
    assert_eq!(
        runs[0].end,
        End::Checkpoint,
        "the vacate sent the checkpoint signal, not SIGTERM: {runs:?}"
    );
    let saved = runs[0].last;
    assert!(saved >= 5, "{runs:?}");
    wait_for("the job to complete", Duration::from_secs(90), || {
        queue_empty(&pool)
    });
    check_output(&work, target);
    check_counter(&log, target, &[]);
    let runs = parse_runs(&log);
    assert_eq!(
        runs[1].start, saved,
        "resumed exactly where it was: {runs:?}"
    );
    let h = history_numbers(&pool, &["NumCkpts", "CommittedTime", "RemoteWallClockTime"]);
    assert_eq!(h[0], 1.0, "{h:?}");
    assert!(h[1] > 0.0 && h[1] <= h[2], "{h:?}");
    let text = std::fs::read_to_string(work.join("job.log")).unwrap();
    assert!(text.contains("(1) Job was checkpointed."), "{text}");
    check_user_log(&work, 1, 1, 1);
}

#[test]
fn the_periodic_checkpoint_signal_makes_the_counter_checkpoint_on_its_own() {
    // the execute side's knob: a checkpoint signal every 2 seconds
    let pool = common::job_pool(
        "ckpt-periodic",
        "1",
        &[("_CONDOR_CHECKPOINT_SIGNAL_INTERVAL", "2")],
    );
    let work = pool.home.join("work");
    let log = counter_files(&work);
    let target = 50;
    // it never checkpoints by itself (every 1000 steps): only on the signal
    pool.submit_job(
        &work,
        &counter_job(
            &work,
            target,
            1000,
            "0.2",
            "",
            "+WantCheckpointSignal = true\n+CheckpointSig = \"SIGUSR2\"",
        ),
    );
    wait_for("the job to complete", Duration::from_secs(90), || {
        queue_empty(&pool)
    });
    check_output(&work, target);
    check_counter(&log, target, &[]);
    let runs = parse_runs(&log);
    let signalled = runs.iter().filter(|r| r.end == End::Checkpoint).count();
    // 10 s of counting, a signal every 2 s
    assert!(signalled >= 2, "{runs:?}");
    let h = history_numbers(&pool, &["NumCkpts", "ExitCode"]);
    assert_eq!(h, vec![signalled as f64, 0.0]);
}

#[test]
fn on_exit_or_evict_brings_an_evicted_sandbox_back() {
    let (pool, _owner) = policy_pool("ckpt-on-evict", "2", "");
    let work = pool.home.join("work");
    let log = counter_files(&work);
    let target = 40;
    // no checkpoint exit code: the counter saves its count on SIGTERM,
    // and the evicted sandbox's changed files are kept for the next start
    let sub = format!(
        "executable = ckpt_counter.sh\n\
         arguments = {target} 1000 0.2\n\
         should_transfer_files = YES\n\
         when_to_transfer_output = ON_EXIT_OR_EVICT\n\
         environment = \"COUNTER_LOG={log}\"\n\
         output = out.txt\n\
         log = job.log\n\
         request_disk = 1024\n\
         {AVOID_LAST_SLOT}\n\
         queue\n",
        log = log.display()
    );
    pool.submit_job(&work, &sub);
    wait_for("the counter running", Duration::from_secs(60), || {
        parse_runs(&log).last().is_some_and(|r| r.last >= 5)
    });
    let slot = q_af(&pool, &["RemoteHost"]);
    pool.ok(&["vacate", &slot]);
    wait_for("the job to complete", Duration::from_secs(90), || {
        queue_empty(&pool)
    });
    let runs = parse_runs(&log);
    assert_eq!(runs[0].end, End::Term, "{runs:?}");
    assert!(runs.len() >= 2, "{runs:?}");
    assert_eq!(
        runs[1].start, runs[0].last,
        "the saved count came back: {runs:?}"
    );
    check_counter(&log, target, &[runs[0].last]);
    assert_eq!(
        std::fs::read_to_string(work.join("counter.out")).unwrap(),
        format!("final count {target}\n")
    );
}

// ---- the stored checkpoint ---------------------------------------------------

#[test]
fn a_held_jobs_checkpoint_is_shown_and_copied_out_then_it_completes() {
    let (pool, _owner) = policy_pool("ckpt-evicted-files", "1", "");
    let work = pool.home.join("work");
    let log = counter_files(&work);
    let target = 40;
    let cluster = pool.submit_job(&work, &counter_job(&work, target, 5, "0.2", "", ""));
    let id = format!("{cluster}.0");
    wait_for("a checkpoint stored", Duration::from_secs(60), || {
        q_int(&pool, "CheckpointNumber").is_some_and(|n| n >= 1)
    });
    pool.ok(&["hold", &id]);
    wait_for("the job held and stopped", Duration::from_secs(30), || {
        q_int(&pool, "JobStatus") == Some(5) && pool_has_no_starter(&pool)
    });
    // skua q -l shows the checkpoint's attributes
    let long = pool.ok(&["q", "-l", &id]);
    let attr = |name: &str| -> String {
        long.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} = ")))
            .unwrap_or_else(|| panic!("no {name} in skua q -l:\n{long}"))
            .trim()
            .to_string()
    };
    let number: u32 = attr("CheckpointNumber").parse().unwrap();
    assert!(number >= 1);
    assert!(attr("NumCkpts").parse::<u32>().unwrap() >= 1);
    assert!(attr("LastCkptTime").parse::<i64>().unwrap() > 1_700_000_000);
    assert!(attr("CommittedTime").parse::<f64>().unwrap() > 0.0);
    assert_eq!(attr("SuccessCheckpointExitCode"), "85");
    assert_eq!(attr("WantFTOnCheckpoint"), "true");
    assert_eq!(attr("TransferCheckpoint"), "\"counter.state\"");
    // the count the counter saved at its checkpoint `number`
    let saved: Vec<u32> = parse_runs(&log)
        .iter()
        .filter(|r| r.end == End::Checkpoint)
        .map(|r| r.last)
        .collect();
    let want = saved[number as usize - 1];
    // skua evicted_files get copies it to <id>/ in the current directory
    let out = pool.skua_user_in(&work, &["evicted_files", "get", &id]);
    assert!(
        out.status.success(),
        "skua evicted_files get: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copied = std::fs::read_to_string(work.join(&id).join("counter.state")).unwrap();
    assert_eq!(copied.trim(), want.to_string());
    let listed = pool.skua_user_in(&work, &["evicted_files", "list", &id]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("counter.state"),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    // released, it resumes from that checkpoint and completes
    pool.ok(&["release", &id]);
    wait_for("the job to complete", Duration::from_secs(90), || {
        queue_empty(&pool)
    });
    check_output(&work, target);
    check_counter(&log, target, &[]);
    let runs = parse_runs(&log);
    // the run the hold stopped: killed mid-count (term, or before it
    // logged a step), or stopped between its checkpoint exit and its
    // restart (the hold came while the checkpoint was being stored)
    let held = runs
        .iter()
        .position(|r| matches!(r.end, End::Term | End::None))
        .or_else(|| {
            runs.iter()
                .position(|r| matches!(r.end, End::Checkpoint) && r.last == want)
        })
        .unwrap_or_else(|| panic!("no run stopped by the hold: {runs:?}"));
    assert_eq!(runs[held + 1].start, want, "{runs:?}");
    wait_for("the job's store removed", Duration::from_secs(10), || {
        !store(&pool, &cluster).exists()
    });
}

#[test]
fn checkpoint_destination_keeps_the_checkpoints_in_the_named_directory() {
    let pool = common::job_pool("ckpt-destination", "1", &[]);
    let work = pool.home.join("work");
    let log = counter_files(&work);
    // a directory of the job's owner, outside the spool
    let dest = pool.home.join("ckpts");
    common::user_dir(&dest);
    let target = 30;
    let cluster = pool.submit_job(
        &work,
        &counter_job(
            &work,
            target,
            5,
            "0.2",
            "",
            &format!("checkpoint_destination = file://{}", dest.display()),
        ),
    );
    wait_for("a checkpoint stored", Duration::from_secs(60), || {
        q_int(&pool, "CheckpointNumber").is_some_and(|n| n >= 1)
    });
    let n = q_int(&pool, "CheckpointNumber").unwrap();
    let here = dest.join(format!("{cluster}.0"));
    // stored there (a newer one may replace it any moment: either is whole)
    let stored: Vec<String> = std::fs::read_dir(&here)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.parse::<i64>().is_ok())
        .collect();
    assert!(
        stored.iter().any(|s| s.parse::<i64>().unwrap() >= n),
        "checkpoint {n} not in {}: {stored:?}",
        here.display()
    );
    // written with the owner's rights, not root's
    if let Some(u) = common::submitter() {
        use std::os::unix::fs::MetadataExt;
        let dir = here.join(&stored[0]);
        if let Ok(m) = std::fs::metadata(dir.join("counter.state")) {
            assert_eq!(m.uid(), u.uid, "the checkpoint is the owner's");
        }
    }
    assert!(
        !store(&pool, &cluster).exists(),
        "nothing in the spool's store"
    );
    wait_for("the job to complete", Duration::from_secs(90), || {
        queue_empty(&pool)
    });
    check_output(&work, target);
    check_counter(&log, target, &[]);
    wait_for(
        "the job's checkpoints removed",
        Duration::from_secs(10),
        || !here.exists(),
    );
}

#[test]
fn a_checkpoint_that_cannot_be_stored_or_lacks_a_file_holds_the_job() {
    let pool = common::job_pool("ckpt-holds", "2", &[]);
    // a destination the job's owner may not write
    let locked = pool.home.join("locked");
    std::fs::create_dir_all(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let work = pool.home.join("work-locked");
    counter_files(&work);
    let refused = pool.submit_job(
        &work,
        &counter_job(
            &work,
            30,
            5,
            "0.1",
            "",
            &format!("checkpoint_destination = file://{}", locked.display()),
        ),
    );
    // a checkpoint naming a file the job never writes
    let work2 = pool.home.join("work-missing");
    counter_files(&work2);
    let missing = pool.submit_job(
        &work2,
        &counter_job(&work2, 30, 5, "0.1", "", "").replace(
            "transfer_checkpoint_files = counter.state\n",
            "transfer_checkpoint_files = counter.state, never-written.dat\n",
        ),
    );
    let held = |cluster: &str| -> Vec<String> {
        pool.ok(&[
            "q",
            cluster,
            "-af",
            "JobStatus",
            "HoldReasonCode",
            "HoldReasonSubCode",
            "HoldReason",
        ])
        .split_whitespace()
        .map(str::to_string)
        .collect()
    };
    wait_for("both jobs held", Duration::from_secs(60), || {
        held(&refused).first().map(String::as_str) == Some("5")
            && held(&missing).first().map(String::as_str) == Some("5")
    });
    let h = held(&refused);
    assert_eq!(h[1], "36", "FailedToCheckpoint: {h:?}");
    let reason = h[3..].join(" ");
    assert!(
        reason.contains("counter.state") || reason.contains(&locked.display().to_string()),
        "the reason names the file or the directory: {reason}"
    );
    let h = held(&missing);
    assert_eq!(h[1..3], ["12", "2"], "TransferOutputError, ENOENT: {h:?}");
    assert!(h[3..].join(" ").contains("never-written.dat"), "{h:?}");
    // nothing was stored for either
    assert!(!store(&pool, &missing).join("1").exists());
    let with_checkpoint = pool.ok(&[
        "q",
        "-allusers",
        "-constraint",
        "CheckpointNumber =!= undefined",
        "-af",
        "ClusterId",
    ]);
    assert_eq!(with_checkpoint.trim(), "", "no job has a stored checkpoint");
}

fn pool_has_no_starter(pool: &Pool) -> bool {
    pids_of(pool, "starter").is_empty()
}

/// The files staged for checkpoint `n` in the job's store, and their
/// total size.
fn staged(store: &Path, n: i64) -> (usize, u64) {
    let dir = store.join(format!("incoming-{n}"));
    let mut count = 0;
    let mut bytes = 0;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            count += 1;
            bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    (count, bytes)
}

#[test]
fn a_starter_killed_mid_transfer_leaves_the_previous_checkpoint_and_the_job_finishes() {
    let pool = common::job_pool("ckpt-killed", "1", &[]);
    let work = pool.home.join("work");
    let log = counter_files(&work);
    let target = 30;
    // each checkpoint: the count and 200 MiB in 40 files
    let (mb, files) = (200u64, 40usize);
    let cluster = pool.submit_job(
        &work,
        &counter_job(
            &work,
            target,
            10,
            "0.1",
            &format!("COUNTER_PAYLOAD_MB={mb} COUNTER_PAYLOAD_FILES={files}"),
            "",
        )
        .replace(
            "transfer_checkpoint_files = counter.state\n",
            "transfer_checkpoint_files = counter.state, payload.done, \
             payload.1, payload.2, payload.3, payload.4, payload.5, payload.6, payload.7, \
             payload.8, payload.9, payload.10, payload.11, payload.12, payload.13, payload.14, \
             payload.15, payload.16, payload.17, payload.18, payload.19, payload.20, \
             payload.21, payload.22, payload.23, payload.24, payload.25, payload.26, \
             payload.27, payload.28, payload.29, payload.30, payload.31, payload.32, \
             payload.33, payload.34, payload.35, payload.36, payload.37, payload.38, \
             payload.39, payload.40\n",
        ),
    );
    let store = store(&pool, &cluster);
    wait_for("checkpoint 1 stored", Duration::from_secs(120), || {
        q_int(&pool, "CheckpointNumber") == Some(1)
    });
    // checkpoint 2 on its way: some of its files staged, not all
    let mut seen = (0, 0);
    wait_for("checkpoint 2 half sent", Duration::from_secs(120), || {
        seen = staged(&store, 2);
        seen.0 >= 2 && seen.1 < mb << 20
    });
    for pid in pids_of(&pool, "starter") {
        kill(pid, "-KILL");
    }
    // the previous checkpoint stays whole, and the job's ad still names it
    assert!(
        q_int(&pool, "CheckpointNumber") == Some(1),
        "killed with {seen:?} staged"
    );
    let kept = store.join("1");
    assert_eq!(
        std::fs::read_to_string(kept.join("counter.state"))
            .unwrap()
            .trim(),
        "10"
    );
    assert_eq!(
        std::fs::metadata(kept.join("payload.1")).unwrap().len(),
        (mb / files as u64) << 20
    );
    wait_for("the job to complete", Duration::from_secs(240), || {
        queue_empty(&pool)
    });
    check_output(&work, target);
    check_counter(&log, target, &[]);
    // the process that checkpointed at 20 exited; that checkpoint was cut
    // off in transfer, so the next process started from 10
    let runs = parse_runs(&log);
    let cut = runs
        .windows(2)
        .position(|w| w[0].end == End::Checkpoint && w[0].last == 20 && w[1].start == 10)
        .unwrap_or_else(|| panic!("no restart from 10 after the checkpoint at 20: {runs:?}"));
    assert!(
        runs[..cut].iter().all(|r| r.last < 20),
        "the first checkpoint at 20 is the one cut: {runs:?}"
    );
    let h = history_numbers(&pool, &["ExitCode", "NumShadowExceptions"]);
    assert_eq!(h[0], 0.0);
    wait_for("the job's store removed", Duration::from_secs(10), || {
        !store.exists()
    });
}

// ---- across hosts ------------------------------------------------------------

#[test]
fn checkpointed_on_one_execute_host_the_counter_resumes_on_another_when_it_crashes() {
    use common::multihost::{MultiPool, Role};
    let pool = MultiPool::start(
        "ckpt-hosts",
        &[
            &[Role::CentralManager],
            &[Role::Submit],
            &[Role::Execute],
            &[Role::Execute],
        ],
        &[],
    );
    let work = pool.work_dir("ckpt");
    let log = counter_files(&work);
    let target = 60;
    pool.submit(
        &work,
        &counter_job(&work, target, 5, "0.2", "", "job_lease_duration = 8"),
    );
    let stored = || -> i64 {
        pool.q(&["-af", "CheckpointNumber"])
            .trim()
            .parse()
            .unwrap_or(0)
    };
    pool.wait_for("a checkpoint stored", 90, || stored() >= 1);
    let first = parse_runs(&log).last().unwrap().host.clone();
    let host = (3..=4)
        .find(|i| pool.hosts.name(*i) == first)
        .unwrap_or_else(|| panic!("the counter ran on {first}, not an execute host"));
    let other = pool.hosts.name(if host == 3 { 4 } else { 3 });
    pool.hosts.crash(host);
    pool.wait_for("the job done", 120, || {
        pool.q(&["-af", "ClusterId"]).trim().is_empty()
    });
    check_output(&work, target);
    check_counter(&log, target, &[]);
    let runs = parse_runs(&log);
    let moved = runs
        .iter()
        .position(|r| r.host == other)
        .unwrap_or_else(|| panic!("never ran on {other}: {runs:?}"));
    assert!(
        runs[moved].start > 0,
        "resumed on {other} from the checkpoint made on {first}: {runs:?}"
    );
    assert!(runs[moved..].iter().all(|r| r.host == other), "{runs:?}");
    check_user_log(&work, 0, 0, 1);
}
