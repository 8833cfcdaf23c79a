//! Asynchronous output transfer (issue 16): a job's outputs move back in
//! the background while its claim starts the next job; the job shows
//! TransferringOutput (JobStatus 6) meanwhile and completes only with its
//! outputs in place. Whole pools through `skua`, with
//! `SKUA_ASYNC_OUTPUT_TRANSFER` on and a test-only pause before each
//! background transfer (`SKUA_TEST_OUTPUT_TRANSFER_DELAY_MS`) that keeps a
//! transfer pending long enough to be seen.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use common::{job_pool, kill, pids_of, wait_for, Pool};

/// The bytes job `proc` writes: its number repeated, `len` bytes.
fn expected(proc: u32, len: usize) -> Vec<u8> {
    format!("{proc}\n")
        .into_bytes()
        .into_iter()
        .cycle()
        .take(len)
        .collect()
}

const LEN: usize = 30_000_000;

fn pool_with(name: &str, delay_ms: &str) -> Pool {
    job_pool(
        name,
        "1",
        &[
            ("_CONDOR_NEGOTIATOR_INTERVAL", "2"),
            ("_CONDOR_SKUA_ASYNC_OUTPUT_TRANSFER", "true"),
            ("_CONDOR_SKUA_TEST_OUTPUT_TRANSFER_DELAY_MS", delay_ms),
        ],
    )
}

/// A job script writing `big.$1`: [`expected`]`($1, LEN)`.
fn writer(work: &Path) {
    std::fs::create_dir_all(work).unwrap();
    let path = work.join("job.sh");
    std::fs::write(
        &path,
        format!("#!/bin/sh\nset -e\nyes \"$1\" | head -c {LEN} > \"big.$1\"\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

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

/// The position in the user log of the first event `code` of proc `proc`.
fn event_at(log: &str, code: &str, proc: u32) -> usize {
    let tag = format!("{code} (");
    log.lines()
        .position(|l| {
            l.starts_with(&tag)
                && l.get(4..)
                    .and_then(|r| r.split(')').next())
                    .and_then(|id| id.split('.').nth(1))
                    .and_then(|p| p.parse::<u32>().ok())
                    == Some(proc)
        })
        .unwrap_or_else(|| panic!("no event {code} of proc {proc} in:\n{log}"))
}

#[test]
fn the_claim_runs_its_next_jobs_while_outputs_transfer_two_pending_at_most() {
    let pool = pool_with("asyncout", "3000");
    let work = pool.home.join("work");
    writer(&work);
    let cluster = pool.submit_job(
        &work,
        "executable = job.sh\n\
         arguments = $(Process)\n\
         should_transfer_files = YES\n\
         log = job.log\n\
         request_disk = 1024\n\
         queue 4\n",
    );
    // the first job shows TransferringOutput while its output is pending
    wait_for(
        "a job transferring its output",
        Duration::from_secs(60),
        || {
            let out = pool.skua(&[
                "q",
                &cluster,
                "-af",
                "ProcId",
                "JobStatus",
                "TransferringOutput",
            ]);
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l == "0 6 true")
        },
    );
    let shown = pool.ok(&["q", "-nobatch", &cluster]);
    assert!(
        shown
            .lines()
            .any(|l| l.contains(&format!("{cluster}.0")) && l.contains(" > ")),
        "{shown}"
    );
    wait_empty(&pool, 120);
    let rows = history(
        &pool,
        &[
            "ProcId",
            "ExitCode",
            "NumJobStarts",
            "JobStatus",
            "TransferringOutput",
        ],
    );
    assert_eq!(
        rows,
        vec![
            "0 0 1 4 false",
            "1 0 1 4 false",
            "2 0 1 4 false",
            "3 0 1 4 false"
        ],
        "{}",
        pool.logs()
    );
    for proc in 0..4 {
        let got = std::fs::read(work.join(format!("big.{proc}"))).unwrap();
        assert!(got == expected(proc, LEN), "big.{proc} differs");
    }
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    // the second job started while the first one's output was transferring
    assert!(event_at(&log, "001", 1) < event_at(&log, "005", 0), "{log}");
    // two pending (jobs 0 and 1) while the third runs: its exit waits for
    // one of them, so the fourth starts only after the first's transfer
    // ended
    assert!(event_at(&log, "005", 0) < event_at(&log, "001", 3), "{log}");
}

#[test]
fn a_missing_output_holds_the_job_with_transfer_output_error() {
    let pool = pool_with("asyncmiss", "0");
    let work = pool.home.join("work");
    writer(&work);
    let cluster = pool.submit_job(
        &work,
        "executable = job.sh\n\
         arguments = 0\n\
         should_transfer_files = YES\n\
         transfer_output_files = big.0, not-made.txt\n\
         request_disk = 1024\n\
         queue\n",
    );
    wait_for("the job held", Duration::from_secs(60), || {
        pool.skua(&["q", &cluster, "-af", "JobStatus"]).stdout == b"5\n"
    });
    let held = pool.ok(&["q", &cluster, "-af", "HoldReasonCode", "HoldReasonSubCode"]);
    assert_eq!(held.trim(), "12 2");
    let reason = pool.ok(&["q", &cluster, "-af", "HoldReason"]);
    assert!(reason.contains("not-made.txt"), "{reason}");
}

#[test]
fn a_startd_killed_with_an_output_pending_never_loses_the_output() {
    let pool = pool_with("asynckill", "4000");
    let work = pool.home.join("work");
    writer(&work);
    let cluster = pool.submit_job(
        &work,
        "executable = job.sh\n\
         arguments = 0\n\
         should_transfer_files = YES\n\
         request_disk = 1024\n\
         queue\n",
    );
    wait_for(
        "the job transferring its output",
        Duration::from_secs(60),
        || pool.skua(&["q", &cluster, "-af", "JobStatus"]).stdout == b"6\n",
    );
    let startds = pids_of(&pool, "startd");
    assert_eq!(startds.len(), 1);
    kill(startds[0], "-KILL");
    // the master starts a new startd; the output arrives, or the job runs
    // again: it completes only with its output
    wait_empty(&pool, 120);
    let rows = history(&pool, &["ExitCode", "JobStatus"]);
    assert_eq!(rows, vec!["0 4"], "{}", pool.logs());
    let got = std::fs::read(work.join("big.0")).unwrap();
    assert!(got == expected(0, LEN), "big.0 differs");
}

#[test]
fn a_pending_output_sandbox_shrinks_the_slots_disk() {
    let pool = job_pool(
        "asyncdisk",
        "1",
        &[
            ("_CONDOR_NEGOTIATOR_INTERVAL", "2"),
            ("_CONDOR_POLLING_INTERVAL", "1"),
            ("_CONDOR_SKUA_ASYNC_OUTPUT_TRANSFER", "true"),
            ("_CONDOR_SKUA_TEST_OUTPUT_TRANSFER_DELAY_MS", "8000"),
        ],
    );
    let disk = || -> i64 { pool.ok(&["status", "-af", "Disk"]).trim().parse().unwrap() };
    let before = disk();
    let work = pool.home.join("work");
    writer(&work);
    let cluster = pool.submit_job(
        &work,
        "executable = job.sh\n\
         arguments = 0\n\
         should_transfer_files = YES\n\
         request_disk = 1024\n\
         queue\n",
    );
    wait_for(
        "the job transferring its output",
        Duration::from_secs(60),
        || pool.skua(&["q", &cluster, "-af", "JobStatus"]).stdout == b"6\n",
    );
    // the slot's Disk is smaller by (at least most of) the pending sandbox
    let sandbox_kb = (LEN / 1024) as i64;
    wait_for("the Disk to shrink", Duration::from_secs(20), || {
        disk() <= before - sandbox_kb * 9 / 10
    });
    wait_empty(&pool, 60);
    // and comes back once the output has left
    wait_for("the Disk to come back", Duration::from_secs(20), || {
        disk() > before - sandbox_kb / 2
    });
    let got = std::fs::read(work.join("big.0")).unwrap();
    assert!(got == expected(0, LEN), "big.0 differs");
}

#[test]
fn a_starter_killed_with_an_output_pending_requeues_the_job() {
    let pool = pool_with("asyncstarter", "4000");
    let work = pool.home.join("work");
    writer(&work);
    let cluster = pool.submit_job(
        &work,
        "executable = job.sh\n\
         arguments = 0\n\
         should_transfer_files = YES\n\
         request_disk = 1024\n\
         queue\n",
    );
    wait_for(
        "the job transferring its output",
        Duration::from_secs(60),
        || pool.skua(&["q", &cluster, "-af", "JobStatus"]).stdout == b"6\n",
    );
    for pid in pids_of(&pool, "starter") {
        kill(pid, "-KILL");
    }
    // the startd reports the pending transfer's job: it runs again and
    // completes with its output
    wait_empty(&pool, 120);
    let rows = history(&pool, &["ExitCode", "JobStatus", "NumJobStarts"]);
    assert_eq!(rows, vec!["0 4 2"], "{}", pool.logs());
    let got = std::fs::read(work.join("big.0")).unwrap();
    assert!(got == expected(0, LEN), "big.0 differs");
}
