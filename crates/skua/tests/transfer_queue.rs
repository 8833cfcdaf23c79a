//! The submit side's transfer queue through the real daemons: with
//! `MAX_CONCURRENT_DOWNLOADS = 1` and every transfer queued
//! (`BYTES_REQUIRED_TO_QUEUE_FOR_TRANSFER = 0`), jobs that end together
//! send their output one after another; the user log has every step of
//! every transfer (event 040's forms) and reads with HTCondor's reader;
//! the jobs' transfer attributes are kept.

#![allow(clippy::unwrap_used)]
// This test runs python3 (HTCondor's reader of the user log).
#![allow(clippy::disallowed_methods)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{job_pool, wait_for};

/// HTCondor's reader of the user log, printing JSON.
const READ_USERLOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../skua-queue/tests/read_userlog.py"
);

/// The events of the user log as HTCondor's `JobEventLog` reads them:
/// (type, proc, attributes); `None` (with a loud notice) when python3 or
/// htcondor2 is missing, unless `SKUA_REQUIRE_HTCONDOR_PY=1`.
fn htcondor_events(log: &Path) -> Option<Vec<(String, i64, serde_json::Value)>> {
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
        "HTCondor's reader failed on the user log: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    Some(
        got.into_iter()
            .map(|e| {
                (
                    e["type"].as_str().unwrap_or("").to_string(),
                    e["proc"].as_i64().unwrap_or(-1),
                    e["attrs"].clone(),
                )
            })
            .collect(),
    )
}

const JOBS: usize = 3;
const MB: usize = 40;

#[test]
fn outputs_are_sent_one_at_a_time_and_every_step_is_logged() {
    let pool = job_pool(
        "xferq",
        "3",
        &[
            ("_CONDOR_MAX_CONCURRENT_DOWNLOADS", "1"),
            ("_CONDOR_BYTES_REQUIRED_TO_QUEUE_FOR_TRANSFER", "0"),
        ],
    );
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let job = work.join("job.sh");
    // the jobs end together (at the next multiple of 3 seconds), each
    // with MB megabytes of output
    std::fs::write(
        &job,
        format!(
            "#!/bin/sh\n\
             now=$(date +%s)\n\
             sleep $((3 - now % 3 + 3))\n\
             dd if=/dev/zero of=big.$1 bs=1048576 count={MB} 2>/dev/null\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&job, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cluster = pool.submit_job(
        &work,
        &format!(
            "executable = job.sh\n\
             arguments = $(Process)\n\
             should_transfer_files = YES\n\
             when_to_transfer_output = ON_EXIT\n\
             log = job.log\n\
             queue {JOBS}\n"
        ),
    );
    wait_for("the jobs to finish", Duration::from_secs(120), || {
        pool.skua(&["q", "-allusers", "-af", "ClusterId"])
            .stdout
            .is_empty()
    });
    for p in 0..JOBS {
        let len = std::fs::metadata(work.join(format!("big.{p}")))
            .unwrap()
            .len();
        assert_eq!(len, (MB * 1048576) as u64, "output of job {p}");
    }

    // the log's order is the order of the queue's decisions: no output
    // transfer starts before the previous one finished
    let log_path = work.join("job.log");
    let text = std::fs::read_to_string(&log_path).unwrap();
    let outs: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.ends_with("transferring output files")
                || l.ends_with("queue to transfer output files")
        })
        .collect();
    let mut running = 0;
    let (mut started, mut queued) = (0, 0);
    for l in &outs {
        if l.ends_with("Started transferring output files") {
            running += 1;
            started += 1;
            assert_eq!(running, 1, "two output transfers at once:\n{text}");
        } else if l.ends_with("Finished transferring output files") {
            running -= 1;
        } else {
            queued += 1;
        }
    }
    assert_eq!(started, JOBS, "{text}");
    assert!(
        queued >= 1,
        "jobs ending together: at least one output waited its turn:\n{text}"
    );
    // every step of every job, in order
    for p in 0..JOBS {
        let id = format!("({cluster:0>3}.{p:03}.000)");
        let mine: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("040 ") && l.contains(&id))
            .map(|l| l.splitn(4, ' ').nth(3).unwrap_or(""))
            .map(|l| l.split_once(' ').map(|x| x.1).unwrap_or(""))
            .collect();
        let first = &mine[..2];
        assert_eq!(
            first,
            [
                "Started transferring input files",
                "Finished transferring input files"
            ],
            "{id}:\n{text}"
        );
        let last: Vec<&str> = mine[2..]
            .iter()
            .copied()
            .filter(|l| !l.starts_with("Entered queue"))
            .collect();
        assert_eq!(
            last,
            [
                "Started transferring output files",
                "Finished transferring output files"
            ],
            "{id}:\n{text}"
        );
        // the termination comes after the output is in
        let fin = text.find(&format!("040 {id}")).unwrap();
        let term = text.find(&format!("005 {id}")).unwrap();
        assert!(fin < term, "{text}");
    }
    assert!(text.contains("\tSeconds spent in queue: "), "{text}");
    assert!(text.contains("\tTransferring to host: <"), "{text}");

    // the jobs' attributes
    let rows = pool.ok(&[
        "history",
        "-af",
        "ProcId",
        "NumInputTransferStarts",
        "NumOutputTransferStarts",
        "BytesSent",
        "TransferQueued",
        "TransferringOutput",
        "TransferringInput",
        "(TransferOutFinished >= TransferOutStarted) && (TransferInFinished >= TransferInStarted)",
    ]);
    let mut rows: Vec<&str> = rows.lines().collect();
    rows.sort();
    let want: Vec<String> = (0..JOBS)
        .map(|p| format!("{p} 1 1 {}.0 false false false true", MB * 1048576))
        .collect();
    assert_eq!(rows, want);

    // HTCondor's reader reads every event; the queued outputs' start
    // says how long they waited
    let Some(events) = htcondor_events(&log_path) else {
        return;
    };
    assert_eq!(events.len(), text.lines().filter(|l| *l == "...").count());
    let types = |ty: i64| {
        events
            .iter()
            .filter(|(t, _, a)| t == "FILE_TRANSFER" && a["Type"] == serde_json::json!(ty))
            .count()
    };
    assert_eq!(
        (types(2), types(3), types(5), types(6)),
        (JOBS, JOBS, JOBS, JOBS)
    );
    assert_eq!(types(4), queued);
    let delays = events
        .iter()
        .filter(|(t, _, a)| t == "FILE_TRANSFER" && a["Type"] == serde_json::json!(5))
        .filter(|(_, _, a)| a["QueueingDelay"].is_i64())
        .count();
    assert_eq!(delays, queued, "each queued output's start has its wait");
}
