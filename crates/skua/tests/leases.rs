//! Keep-alives, claim leases and schedd restarts (issue 18, points 4 and
//! 5): a job never runs twice at once, a dead starter is noticed at once,
//! and a startd drops the claims of a schedd that stopped keeping them
//! alive, killing their jobs.
//!
//! Jobs are `/bin/sleep <seconds>` with a fractional argument unique to
//! the test and the job, so their copies are counted from `/proc` whoever
//! runs them.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{alive, job_pool, kill, pids_of, wait_for, Pool};

fn submit(pool: &Pool, dir: &Path, text: &str) -> String {
    pool.submit_job(dir, text)
}

/// The argument of job `proc`'s sleep: `secs` seconds and a fraction
/// unique to this test process and job.
fn sleep_arg(secs: u32, proc: u32) -> String {
    format!("{secs}.{proc}{}", std::process::id())
}

/// The PIDs of the live `sleep <arg>` processes: the copies of one job.
fn copies(arg: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.first().is_some_and(|a| a.ends_with(b"sleep"))
            && args.get(1).is_some_and(|a| *a == arg.as_bytes())
            && alive(pid)
        {
            out.push(pid);
        }
    }
    out
}

/// The schedd answers and has no job left.
fn queue_empty(pool: &Pool) -> bool {
    let out = pool.skua(&["q", "-allusers", "-af", "ClusterId"]);
    out.status.success() && out.stdout.is_empty()
}

fn log_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("job.log")).unwrap_or_default()
}

#[test]
fn a_schedd_killed_under_running_jobs_without_a_lease_never_runs_a_job_twice_at_once() {
    // four slots for two jobs: free slots to rematch them at once
    let pool = job_pool("lease-restart", "4", &[("_CONDOR_POLLING_INTERVAL", "1")]);
    let work = pool.home.join("work");
    let args: Vec<String> = (0..2).map(|p| sleep_arg(8, p)).collect();
    let cluster = submit(
        &pool,
        &work,
        &format!(
            "executable = /bin/sleep\n\
             arguments = $(Arg)\n\
             should_transfer_files = NO\n\
             job_lease_duration = 0\n\
             log = job.log\n\
             request_disk = 1024\n\
             queue Arg in ({})\n",
            args.join(", ")
        ),
    );
    wait_for("both jobs running", Duration::from_secs(30), || {
        args.iter().all(|a| copies(a).len() == 1)
            && log_of(&work).matches("Job executing on host").count() == 2
    });
    let schedds = pids_of(&pool, "schedd");
    assert_eq!(schedds.len(), 1);
    kill(schedds[0], "-KILL");
    // The master starts a new schedd; without a job lease it does not
    // reconnect: it releases the claims and runs the jobs again. Until every
    // job is done, no job has two copies at any moment.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut restarted = false;
    while !(restarted && queue_empty(&pool)) {
        for a in &args {
            let c = copies(a);
            assert!(
                c.len() <= 1,
                "job `sleep {a}` runs twice at once: {c:?}\n{}",
                pool.logs()
            );
        }
        restarted = restarted || pids_of(&pool, "schedd").iter().any(|p| *p != schedds[0]);
        assert!(
            Instant::now() < deadline,
            "the jobs did not finish\n{}",
            pool.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Each completed exactly once: one history record, one termination
    // event; the run the crash interrupted was evicted, then ran again.
    let mut rows: Vec<String> = pool
        .ok(&[
            "history",
            "-af",
            "ProcId",
            "JobStatus",
            "ExitCode",
            "NumJobStarts",
        ])
        .lines()
        .map(str::to_string)
        .collect();
    rows.sort();
    assert_eq!(rows, vec!["0 4 0 2", "1 4 0 2"], "{}", pool.logs());
    let log = log_of(&work);
    for p in 0..2 {
        let id = format!("({cluster:0>3}.{p:03}.000)");
        assert_eq!(
            log.matches(&format!("005 {id}")).count(),
            1,
            "termination events of {id}:\n{log}"
        );
        assert_eq!(log.matches(&format!("004 {id}")).count(), 1, "{log}");
    }
    assert!(log.contains("claim at"), "{log}");
}

#[test]
fn a_dead_starter_is_noticed_at_once_with_htcondors_alive_interval() {
    // HTCondor's ALIVE_INTERVAL (300 s): keep-alives alone would take 10
    // minutes to notice; the startd tells the shadow when the starter dies
    let pool = job_pool("lease-starter", "1", &[("_CONDOR_ALIVE_INTERVAL", "300")]);
    let work = pool.home.join("work");
    let arg = sleep_arg(60, 0);
    submit(
        &pool,
        &work,
        &format!(
            "executable = /bin/sleep\narguments = {arg}\nshould_transfer_files = NO\n\
             log = job.log\nrequest_disk = 1024\nqueue\n"
        ),
    );
    wait_for("the job to run", Duration::from_secs(30), || {
        copies(&arg).len() == 1 && log_of(&work).contains("Job executing on host")
    });
    let job = copies(&arg)[0];
    let starters = pids_of(&pool, "starter");
    assert_eq!(starters.len(), 1);
    kill(starters[0], "-KILL");
    wait_for("the run to be given up", Duration::from_secs(15), || {
        log_of(&work).contains("Job was evicted")
    });
    assert!(!alive(job), "the killed starter's job survived");
    let reason = pool.ok(&["q", "-allusers", "-af", "LastVacateReason"]);
    assert!(reason.contains("starter"), "{reason}");
}

/// Continues a stopped process when dropped (so the pool can stop).
struct Resume(i32);

impl Drop for Resume {
    fn drop(&mut self) {
        kill(self.0, "-CONT");
    }
}

#[test]
fn a_startd_drops_the_claim_of_a_schedd_that_stopped_keeping_it_alive() {
    let pool = job_pool("lease-startd", "1", &[("_CONDOR_POLLING_INTERVAL", "1")]);
    let work = pool.home.join("work");
    let arg = sleep_arg(60, 0);
    // the claim's lease is the job's: 4 s without a keep-alive
    submit(
        &pool,
        &work,
        &format!(
            "executable = /bin/sleep\narguments = {arg}\nshould_transfer_files = NO\n\
             job_lease_duration = 4\nlog = job.log\nrequest_disk = 1024\nqueue\n"
        ),
    );
    wait_for("the job to run", Duration::from_secs(30), || {
        copies(&arg).len() == 1
    });
    let job = copies(&arg)[0];
    let schedds = pids_of(&pool, "schedd");
    assert_eq!(schedds.len(), 1);
    // the schedd hangs: no more keep-alives (and the master sees nothing)
    kill(schedds[0], "-STOP");
    let _resume = Resume(schedds[0]);
    let stopped = Instant::now();
    while alive(job) {
        assert!(
            stopped.elapsed() < Duration::from_secs(15),
            "the startd did not kill the job\n{}",
            pool.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        stopped.elapsed() >= Duration::from_secs(3),
        "killed before the lease ran out"
    );
    wait_for("the slot to be free", Duration::from_secs(10), || {
        pool.ok(&["status", "-af", "State"]).trim() == "Unclaimed"
    });
    let logs = pool.logs();
    assert!(
        logs.contains("no keep-alive from the claim's schedd for 4 s"),
        "{logs}"
    );
}

#[test]
fn a_job_whose_shadow_gave_it_up_ends_though_its_startd_is_frozen() {
    let pool = job_pool("lease-frozen-startd", "1", &[]);
    let work = pool.home.join("work");
    let arg = sleep_arg(60, 1);
    let id = submit(
        &pool,
        &work,
        &format!(
            "executable = /bin/sleep\narguments = {arg}\nshould_transfer_files = NO\n\
             job_lease_duration = 4\nrequest_disk = 1024\nqueue\n"
        ),
    );
    wait_for("the job to run", Duration::from_secs(30), || {
        copies(&arg).len() == 1
    });
    let job = copies(&arg)[0];
    let startds = pids_of(&pool, "startd");
    assert_eq!(startds.len(), 1);
    // the startd hangs: it can neither answer the schedd nor kill the job
    kill(startds[0], "-STOP");
    let _resume = Resume(startds[0]);
    let stopped = Instant::now();
    // the schedd gives the run up once the lease ran out; the starter hears
    // it at its next update and ends the job itself, which may be matched
    // elsewhere now
    while alive(job) {
        assert!(
            stopped.elapsed() < Duration::from_secs(40),
            "the job outlived its lease\n{}",
            pool.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        stopped.elapsed() >= Duration::from_secs(3),
        "killed before the lease ran out"
    );
    wait_for("the job idle again", Duration::from_secs(20), || {
        pool.ok(&["q", &format!("{id}.0"), "-af", "JobStatus"])
            .trim()
            == "1"
    });
    assert!(pool.logs().contains("the shadow no longer knows this run"));
}

/// The history row of the pool's only job: the attributes `attrs`.
fn history_row(pool: &Pool, attrs: &[&str]) -> String {
    let mut args = vec!["history", "-af"];
    args.extend_from_slice(attrs);
    pool.ok(&args).trim().to_string()
}

/// Stops the master (so that it does not restart a killed daemon) and
/// continues it when dropped.
struct Paused(i32);

impl Paused {
    fn master(pool: &Pool) -> Paused {
        let masters = pids_of(pool, "master");
        assert_eq!(masters.len(), 1);
        kill(masters[0], "-STOP");
        Paused(masters[0])
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        kill(self.0, "-CONT");
    }
}

#[test]
fn a_schedd_killed_while_its_job_runs_reconnects_and_the_job_completes_once() {
    let pool = job_pool("lease-reconnect", "1", &[("_CONDOR_POLLING_INTERVAL", "1")]);
    let work = pool.home.join("work");
    let arg = sleep_arg(4, 0);
    // the job sleeps, then writes its output and exits 7; its lease (30 s)
    // outlasts the schedd's absence
    std::fs::create_dir_all(&work).unwrap();
    let script = work.join("job.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\n/bin/sleep {arg}\nprintf 'line one\\nline two\\n\\001\\377'\nexit 7\n"),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    common::user_dir(&work);
    submit(
        &pool,
        &work,
        "executable = job.sh\noutput = out.txt\nshould_transfer_files = YES\n\
         when_to_transfer_output = ON_EXIT\njob_lease_duration = 30\nlog = job.log\n\
         request_disk = 1024\nqueue\n",
    );
    wait_for("the job to run", Duration::from_secs(30), || {
        copies(&arg).len() == 1 && log_of(&work).contains("Job executing on host")
    });
    let schedds = pids_of(&pool, "schedd");
    assert_eq!(schedds.len(), 1);
    // the schedd dies and stays away until the job has ended: the starter
    // keeps its exit and output
    let paused = Paused::master(&pool);
    kill(schedds[0], "-KILL");
    wait_for("the job's process to end", Duration::from_secs(20), || {
        copies(&arg).is_empty()
    });
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !work.join("out.txt").exists(),
        "output before the schedd returned"
    );
    drop(paused);
    // the master starts a new schedd (on another port), which reconnects
    wait_for("the job to complete", Duration::from_secs(60), || {
        queue_empty(&pool) && log_of(&work).contains("Job terminated")
    });
    assert_eq!(
        history_row(
            &pool,
            &["JobStatus", "ExitCode", "NumJobStarts", "NumJobReconnects"]
        ),
        "4 7 1 1",
        "{}",
        pool.logs()
    );
    assert_eq!(
        std::fs::read(work.join("out.txt")).unwrap(),
        b"line one\nline two\n\x01\xff"
    );
    // its usage: the whole run, across the schedd's absence
    let wall: f64 = history_row(&pool, &["RemoteWallClockTime"])
        .parse()
        .unwrap();
    assert!(wall >= 4.0, "RemoteWallClockTime {wall}");
    let cpu = history_row(&pool, &["RemoteUserCpu", "RemoteSysCpu"]);
    assert!(
        cpu.split_whitespace().count() == 2
            && cpu.split_whitespace().all(|v| v.parse::<f64>().is_ok()),
        "the run's CPU usage recorded: {cpu}"
    );
    let log = log_of(&work);
    assert_eq!(log.matches("Job executing on host").count(), 1, "{log}");
    assert_eq!(log.matches("Job terminated").count(), 1, "{log}");
    assert_eq!(log.matches("Job was evicted").count(), 0, "{log}");
    assert!(log.contains("Job reconnected to slot1@"), "{log}");
    assert!(
        log.find("Job reconnected") < log.find("Job terminated"),
        "the reconnection is logged before the exit:\n{log}"
    );
    assert!(!log.contains("Job reconnection failed"), "{log}");
    assert!(log.contains("    startd address: <"), "{log}");
    assert!(log.contains("    starter address: <"), "{log}");
    let logs = pool.logs();
    assert!(logs.contains("Lost connection to shadow"), "{logs}");
    assert!(
        logs.contains("Recovered connection to shadow after"),
        "{logs}"
    );
}

#[test]
fn a_schedd_away_longer_than_the_lease_finds_the_job_killed_and_runs_it_again() {
    let pool = job_pool(
        "lease-reconnect-late",
        "1",
        &[("_CONDOR_POLLING_INTERVAL", "1")],
    );
    let work = pool.home.join("work");
    let arg = sleep_arg(120, 1);
    std::fs::create_dir_all(&work).unwrap();
    // the first run waits (its mark made); the second completes at once
    let mark = work.join("first-run");
    let script = work.join("job.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ -e {m} ]; then exit 0; fi\ntouch {m}\n/bin/sleep {arg}\nexit 1\n",
            m = mark.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    common::user_dir(&work);
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    submit(
        &pool,
        &work,
        "executable = job.sh\nshould_transfer_files = NO\njob_lease_duration = 4\n\
         log = job.log\nrequest_disk = 1024\nqueue\n",
    );
    wait_for("the job to run", Duration::from_secs(30), || {
        copies(&arg).len() == 1 && log_of(&work).contains("Job executing on host")
    });
    let job = copies(&arg)[0];
    let schedds = pids_of(&pool, "schedd");
    assert_eq!(schedds.len(), 1);
    let paused = Paused::master(&pool);
    kill(schedds[0], "-KILL");
    let killed = Instant::now();
    // the execute side gives the job up once its lease (4 s) ran out
    while alive(job) {
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "the job outlived its lease\n{}",
            pool.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        killed.elapsed() >= Duration::from_secs(3),
        "killed before the lease ran out"
    );
    wait_for("the slot to be free", Duration::from_secs(15), || {
        pool.ok(&["status", "-af", "State"]).trim() == "Unclaimed"
    });
    drop(paused);
    // the new schedd cannot reconnect (024), the job is Idle, runs again
    wait_for("the job to complete", Duration::from_secs(60), || {
        queue_empty(&pool) && log_of(&work).contains("Job terminated")
    });
    assert_eq!(
        history_row(&pool, &["JobStatus", "ExitCode", "NumJobStarts"]),
        "4 0 2",
        "{}",
        pool.logs()
    );
    let log = log_of(&work);
    assert!(log.contains("Job reconnection failed"), "{log}");
    assert!(log.contains("Can not reconnect to slot1@"), "{log}");
    assert!(log.contains("rescheduling job"), "{log}");
    assert!(!log.contains("Job was held"), "{log}");
}
