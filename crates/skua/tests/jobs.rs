//! Jobs run: a whole personal pool (collector, negotiator, schedd, startd,
//! starters) driven through `skua` as a user would, on loopback, with
//! short intervals from `_CONDOR_` settings.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use common::{alive, job_pool, kill, pids_of, wait_for, Pool};

fn start_pool(name: &str, cpus: &str) -> Pool {
    job_pool(name, cpus, &[("_CONDOR_NEGOTIATOR_INTERVAL", "2")])
}

fn script(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn submit(pool: &Pool, dir: &Path, text: &str) -> String {
    pool.submit_job(dir, text)
}

/// Waits until no job of the queue is left.
fn wait_empty(pool: &Pool, secs: u64) {
    wait_for("the queue to empty", Duration::from_secs(secs), || {
        pool.skua(&["q", "-allusers", "-af", "ClusterId"])
            .stdout
            .is_empty()
    });
}

fn history(pool: &Pool, attrs: &[&str]) -> Vec<String> {
    let mut args = vec!["history", "-af"];
    args.extend_from_slice(attrs);
    let mut lines: Vec<String> = pool.ok(&args).lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[test]
fn a_cluster_runs_with_its_files_moved_both_ways() {
    let pool = start_pool("transfer", "4");
    let work = pool.home.join("work");
    std::fs::create_dir_all(work.join("data/nested")).unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    std::fs::write(work.join("blob.bin"), &binary).unwrap();
    std::fs::write(work.join("data/nested/deep.txt"), "deep\n").unwrap();
    script(
        &work,
        "job.sh",
        "#!/bin/sh\n\
         set -e\n\
         cmp blob.bin blob.bin\n\
         cat data/nested/deep.txt\n\
         mkdir -p made\n\
         cp blob.bin copy.bin\n\
         echo \"job $1\" > \"result.$1\"\n\
         echo to-stderr >&2\n\
         exit $2\n",
    );
    let cluster = submit(
        &pool,
        &work,
        "executable = job.sh\n\
         arguments = $(Process) $(Process)\n\
         transfer_input_files = blob.bin, data\n\
         should_transfer_files = YES\n\
         when_to_transfer_output = ON_EXIT\n\
         output = out.$(Process)\n\
         error = err.$(Process)\n\
         log = job.log\n\
         request_disk = 1024\n\
         queue 6\n",
    );
    wait_empty(&pool, 60);
    for p in 0..6 {
        let out = std::fs::read_to_string(work.join(format!("out.{p}"))).unwrap();
        assert_eq!(out, "deep\n", "stdout of job {p}");
        let err = std::fs::read_to_string(work.join(format!("err.{p}"))).unwrap();
        assert_eq!(err, "to-stderr\n");
        let result = std::fs::read_to_string(work.join(format!("result.{p}"))).unwrap();
        assert_eq!(result, format!("job {p}\n"));
    }
    // New output files come back byte for byte; unchanged inputs do not.
    assert_eq!(std::fs::read(work.join("copy.bin")).unwrap(), binary);
    let rows = history(&pool, &["ProcId", "ExitCode", "JobStatus", "NumJobStarts"]);
    let expect: Vec<String> = (0..6).map(|p| format!("{p} {p} 4 1")).collect();
    assert_eq!(rows, expect, "{}", pool.logs());
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    for p in 0..6 {
        let id = format!("({cluster:0>3}.{p:03}.000)");
        for code in ["000", "001", "005"] {
            assert!(
                log.contains(&format!("{code} {id}")),
                "event {code} of {id} missing:\n{log}"
            );
        }
    }
    assert!(log.contains("(1) Normal termination (return value 5)"));
}

#[test]
fn signals_rank_and_an_unmatchable_job() {
    let pool = start_pool("rank", "3");
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    // Rank: the job prefers slot 3. It kills itself with a signal.
    script(&work, "kill.sh", "#!/bin/sh\nkill -9 $$\n");
    submit(
        &pool,
        &work,
        "executable = kill.sh\n\
         rank = TARGET.SlotID == 3\n\
         request_disk = 1024\n\
         queue\n",
    );
    wait_empty(&pool, 60);
    let rows = history(&pool, &["ExitBySignal", "ExitSignal", "LastRemoteHost"]);
    assert_eq!(rows.len(), 1);
    assert!(
        rows[0].starts_with("true 9 slot3@"),
        "{rows:?}\n{}",
        pool.logs()
    );

    // A job no slot can take stays Idle, and -better-analyze says why.
    let cluster = submit(
        &pool,
        &work,
        "executable = /bin/true\nrequest_disk = 1024\nrequest_memory = 100000000\nqueue\n",
    );
    // a negotiation cycle begun after the submission sees the job (the
    // only idle one) and finds no slot for it
    let cycles = pool.wait_for_cycles(
        "a cycle rejecting the job",
        1,
        Duration::from_secs(30),
        |c| c.idle_jobs >= 1 && c.rejections >= 1,
    );
    assert!(cycles.iter().all(|c| c.matches == 0), "{cycles:?}");
    let st = pool.ok(&["q", &cluster, "-af", "JobStatus"]);
    assert_eq!(st.trim(), "1");
    let why = pool.ok(&["q", "-better-analyze", &format!("{cluster}.0")]);
    assert!(why.contains("TARGET.Memory >= RequestMemory"), "{why}");
    let clause = why
        .lines()
        .find(|l| l.starts_with('[') && l.contains("TARGET.Memory >= RequestMemory"))
        .unwrap();
    assert!(
        clause.contains("  0  "),
        "no slot has that memory: {clause}"
    );
    assert!(
        why.contains("3 are rejected by your job's requirements"),
        "{why}"
    );
    assert!(why.contains("0 are able to run your job"), "{why}");
}

/// Submits a job (shared file system, log `job.log`) that sleeps a minute
/// on its first run and exits 0 on its second; returns the directory
/// where its first run leaves the mark `second`.
fn submit_sleeper_that_ends_on_its_second_run(pool: &Pool, work: &Path) -> std::path::PathBuf {
    // The job may run as an unprivileged account: its marks go in a
    // directory anyone may write.
    let marks = work.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    std::fs::set_permissions(&marks, std::fs::Permissions::from_mode(0o777)).unwrap();
    script(
        work,
        "run.sh",
        "#!/bin/sh\nif [ -e marks/second ]; then exit 0; fi\ntouch marks/second\nsleep 60\n",
    );
    submit(
        pool,
        work,
        "executable = run.sh\n\
         should_transfer_files = NO\n\
         log = job.log\n\
         request_disk = 1024\n\
         queue\n",
    );
    marks
}

#[test]
fn a_killed_starter_puts_the_job_back_and_it_completes() {
    let pool = start_pool("starterkill", "1");
    let work = pool.home.join("work");
    let marks = submit_sleeper_that_ends_on_its_second_run(&pool, &work);
    // mid-job: running, and its execution recorded (the execute event)
    wait_for("a starter", Duration::from_secs(30), || {
        !pids_of(&pool, "starter").is_empty()
            && marks.join("second").exists()
            && std::fs::read_to_string(work.join("job.log"))
                .is_ok_and(|l| l.contains("Job executing on host"))
    });
    for pid in pids_of(&pool, "starter") {
        kill(pid, "-KILL");
    }
    wait_empty(&pool, 60);
    let rows = history(&pool, &["NumJobStarts", "ExitCode", "NumShadowExceptions"]);
    assert_eq!(rows, vec!["2 0 1".to_string()], "{}", pool.logs());
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    assert!(log.contains("Job was evicted"), "{log}");
    // No process of the killed run survives.
    assert!(pids_of(&pool, "starter").iter().all(|p| !alive(*p)));
    // nor its cgroup: the startd removed the killed starter's job group
    if let Some(mount) = common::cgroup::usable_cgroup2() {
        let groups = common::cgroup::job_groups_dir(&mount, &pool.dir.join("execute"));
        assert!(!groups.exists(), "{} is left", groups.display());
    }
}

#[test]
fn a_killed_startd_puts_the_job_back_and_it_completes() {
    let pool = start_pool("startdkill", "1");
    let work = pool.home.join("work");
    let marks = submit_sleeper_that_ends_on_its_second_run(&pool, &work);
    wait_for("the job to run", Duration::from_secs(30), || {
        marks.join("second").exists()
    });
    let startds = pids_of(&pool, "startd");
    assert_eq!(startds.len(), 1);
    kill(startds[0], "-KILL");
    // The master starts a new startd; the job runs again and completes.
    wait_empty(&pool, 90);
    let rows = history(&pool, &["NumJobStarts", "ExitCode"]);
    assert_eq!(rows, vec!["2 0".to_string()], "{}", pool.logs());
}

#[test]
fn claims_keep_the_queue_flowing_without_negotiator_and_collector() {
    let pool = start_pool("reuse", "2");
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    submit(
        &pool,
        &work,
        "executable = /bin/sleep\narguments = 2\nrequest_disk = 1024\nqueue 8\n",
    );
    // Both slots have been claimed once a job has run (or is running) on
    // each: sampling for two jobs running at the same instant would race
    // with the short jobs' turnover.
    wait_for("jobs on both slots", Duration::from_secs(60), || {
        let mut hosts: Vec<String> = Vec::new();
        for out in [
            pool.skua(&["q", "-allusers", "-af", "RemoteHost", "LastRemoteHost"]),
            pool.skua(&["history", "-af", "RemoteHost", "LastRemoteHost"]),
        ] {
            for word in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                if word.contains('@') && !hosts.iter().any(|h| h == word) {
                    hosts.push(word.to_string());
                }
            }
        }
        hosts.len() == 2
    });
    pool.ok(&["off", "negotiator"]);
    pool.ok(&["off", "collector"]);
    wait_empty(&pool, 60);
    let rows = history(&pool, &["ExitCode", "NumJobStarts"]);
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().all(|r| r == "0 1"), "{rows:?}");
}

#[test]
fn removing_a_running_job_stops_it() {
    let pool = start_pool("rmrun", "1");
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let cluster = submit(
        &pool,
        &work,
        "executable = /bin/sleep\narguments = 300\nlog = job.log\nrequest_disk = 1024\nqueue\n",
    );
    wait_for("the job to run", Duration::from_secs(30), || {
        pool.skua(&["q", &cluster, "-af", "JobStatus"]).stdout == b"2\n"
    });
    pool.ok(&["rm", &cluster]);
    wait_empty(&pool, 30);
    wait_for("the starter to go", Duration::from_secs(10), || {
        pids_of(&pool, "starter").is_empty()
    });
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    assert!(log.contains("Job was aborted"), "{log}");
    let rows = history(&pool, &["JobStatus"]);
    assert_eq!(rows, vec!["3".to_string()]);
}

/// The peak resident memory (`VmHWM`, in KB) of a process.
fn peak_rss_kb(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_gigabyte_each_way_is_streamed_not_held_in_memory() {
    const GIB: u64 = 1 << 30;
    let pool = start_pool("bigfile", "1");
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    // A sparse input: 1 GiB on the wire, no disk until it is copied.
    let input = std::fs::File::create(work.join("big.in")).unwrap();
    input.set_len(GIB).unwrap();
    drop(input);
    script(
        &work,
        "job.sh",
        "#!/bin/sh\n\
         set -e\n\
         test \"$(stat -c %s big.in)\" = 1073741824\n\
         truncate -s 1G big.out\n\
         echo written\n",
    );
    submit(
        &pool,
        &work,
        "executable = job.sh\n\
         transfer_input_files = big.in\n\
         should_transfer_files = YES\n\
         output = out.txt\n\
         request_disk = 1024\n\
         queue\n",
    );
    wait_empty(&pool, 240);
    let rows = history(&pool, &["ExitCode", "NumJobStarts"]);
    assert_eq!(rows, vec!["0 1".to_string()], "{}", pool.logs());
    assert_eq!(std::fs::metadata(work.join("big.out")).unwrap().len(), GIB);
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "written\n"
    );
    // The schedd sent and received the gigabyte through bounded buffers.
    let schedd = pids_of(&pool, "schedd");
    assert_eq!(schedd.len(), 1);
    let peak = peak_rss_kb(schedd[0]);
    assert!(
        peak > 0 && peak < 200 * 1024,
        "the schedd's peak memory was {peak} KB"
    );
    let _ = std::fs::remove_file(work.join("big.out"));
}

#[test]
fn usage_is_measured_and_a_missing_output_holds_the_job() {
    let pool = start_pool("usage", "2");
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    // (as root the job runs as `nobody`: the log goes where anyone writes)
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
    // a couple of seconds of the shell's own CPU (HTCondor counts whole
    // seconds; a fast machine counts to a million in half a second of it)
    script(
        &work,
        "burn.sh",
        "#!/bin/sh\ni=0\nwhile [ $i -lt 2000000 ]; do i=$((i+1)); done\necho $i > made.txt\n",
    );
    let burn = submit(
        &pool,
        &work,
        "executable = burn.sh\nshould_transfer_files = YES\nrequest_disk = 1024\n\
         log = job.log\nqueue\n",
    );
    let missing = submit(
        &pool,
        &work,
        "executable = burn.sh\nshould_transfer_files = YES\nrequest_disk = 1024\n\
         transfer_output_files = made.txt, nowhere.txt\nlog = job.log\nqueue\n",
    );
    // the job that names a file it never makes is held, code 12, errno 2
    wait_for("the hold", Duration::from_secs(60), || {
        pool.ok(&["q", &missing, "-af", "JobStatus"]).trim() == "5"
    });
    let held = pool.ok(&[
        "q",
        &missing,
        "-af",
        "HoldReasonCode",
        "HoldReasonSubCode",
        "HoldReason",
    ]);
    assert!(held.starts_with("12 2 "), "{held}");
    assert!(held.contains("nowhere.txt"), "{held}");
    // the file it did make came back anyway
    assert!(work.join("made.txt").exists());
    wait_for("the other job", Duration::from_secs(60), || {
        !pool
            .ok(&["history", &burn, "-af", "ExitCode"])
            .trim()
            .is_empty()
    });
    let row = pool.ok(&[
        "history",
        &burn,
        "-af",
        "ExitCode",
        "RemoteUserCpu",
        "RemoteWallClockTime",
        "ImageSize",
        "ResidentSetSize",
    ]);
    let f: Vec<f64> = row.split_whitespace().map(|v| v.parse().unwrap()).collect();
    assert_eq!(f[0], 0.0, "{row}");
    assert!(f[1] >= 1.0, "the shell's CPU is counted: {row}");
    assert!(f[2] >= f[1], "{row}");
    assert!(f[3] > 0.0 && f[4] > 0.0, "sizes are measured: {row}");
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    assert!(log.contains("012 ("), "a held event: {log}");
    pool.ok(&["rm", &missing]);
}
