//! `skua submit -spool` and `skua transfer_data` through the real daemons:
//! the input files go to the schedd's spool, the job runs from there (its
//! submit directory's inputs gone), stays in the queue when complete
//! (`LeaveJobInQueue`) until `skua transfer_data` brings its output back
//! byte for byte; only the job's owner may fetch it.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use common::{job_pool, submitter, test_user, user_dir, wait_for, Pool};

fn give_to_submitter(path: &Path) {
    if let Some(u) = submitter() {
        std::os::unix::fs::chown(path, Some(u.uid), Some(u.gid)).unwrap();
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8], mode: u32) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    give_to_submitter(&path);
}

fn attrs(pool: &Pool, job: &str, names: &[&str]) -> String {
    let mut args = vec!["q", job, "-af"];
    args.extend_from_slice(names);
    pool.ok(&args).trim().to_string()
}

#[test]
fn a_spooled_job_runs_from_the_spool_and_transfer_data_brings_its_output_back() {
    let pool = job_pool("spool", "1", &[]);
    let work = pool.home.join("work");
    user_dir(&work);
    let blob: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    write(&work, "blob.bin", &blob, 0o644);
    write(&work, "input.txt", b"spooled input\n", 0o644);
    write(
        &work,
        "job.sh",
        b"#!/bin/sh\nset -e\ncat input.txt\ncp blob.bin copy.bin\necho to-stderr >&2\n",
        0o755,
    );
    write(
        &work,
        "job.sub",
        b"executable = job.sh\n\
          transfer_input_files = input.txt, blob.bin\n\
          should_transfer_files = YES\n\
          when_to_transfer_output = ON_EXIT\n\
          output = out.txt\n\
          error = err.txt\n\
          log = job.log\n\
          queue\n",
        0o644,
    );
    let out = pool.skua_user_in(&work, &["submit", "-spool", "job.sub"]);
    assert!(
        out.status.success(),
        "skua submit -spool: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        pool.logs()
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let cluster = text
        .split("cluster ")
        .nth(1)
        .and_then(|r| r.trim().strip_suffix('.'))
        .unwrap_or_else(|| panic!("no cluster in {text:?}"))
        .to_string();
    let job = format!("{cluster}.0");
    // the submit directory's inputs are gone: the job can only use the
    // spooled copies
    for f in ["blob.bin", "input.txt", "job.sh"] {
        std::fs::remove_file(work.join(f)).unwrap();
    }

    wait_for("the job to complete", Duration::from_secs(60), || {
        attrs(&pool, &job, &["JobStatus"]) == "4"
    });
    // it stays in the queue, its output waiting in its spool directory
    let spool = pool.dir.join("spool");
    let line = attrs(
        &pool,
        &job,
        &[
            "SUBMIT_Iwd",
            "Iwd",
            "SUBMIT_Cmd",
            "Cmd",
            "LastHoldReasonCode",
        ],
    );
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[0], work.to_str().unwrap(), "{line}");
    let spool_dir = Path::new(fields[1]).to_path_buf();
    assert!(spool_dir.starts_with(&spool), "{line}");
    assert_eq!(fields[2], work.join("job.sh").to_str().unwrap(), "{line}");
    assert_eq!(&fields[3..], ["job.sh", "16"], "{line}");
    let meta = std::fs::symlink_metadata(&spool_dir).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.mode() & 0o777, 0o700, "the spool directory's mode");
    if let Some(u) = submitter() {
        assert_eq!(
            meta.uid(),
            u.uid,
            "the spool directory belongs to the owner"
        );
    }
    assert!(
        !work.join("out.txt").exists(),
        "output came back before transfer_data"
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(attrs(&pool, &job, &["JobStatus"]), "4", "LeaveJobInQueue");

    // another user may not fetch it
    if let Some(other) = test_user("skuaother") {
        let out = pool.skua_account_in(&other, &std::env::temp_dir(), &["transfer_data", &job]);
        assert!(!out.status.success(), "another user fetched the output");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("belongs to"), "{err}");
        assert_eq!(attrs(&pool, &job, &["JobStatus"]), "4");
    }

    let out = pool.skua_user_in(&work, &["transfer_data", &cluster]);
    assert!(
        out.status.success(),
        "skua transfer_data: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        pool.logs()
    );
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "spooled input\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("err.txt")).unwrap(),
        "to-stderr\n"
    );
    assert_eq!(std::fs::read(work.join("copy.bin")).unwrap(), blob);
    // the inputs are not output
    assert!(!work.join("input.txt").exists());
    assert!(!work.join("blob.bin").exists());
    if let Some(u) = submitter() {
        let m = std::fs::metadata(work.join("copy.bin")).unwrap();
        assert_eq!(m.uid(), u.uid, "output is written with the user's rights");
    }
    // then the job leaves the queue, for the history, and its spool goes
    wait_for(
        "the job to leave the queue",
        Duration::from_secs(10),
        || {
            pool.skua(&["q", "-allusers", "-af", "ClusterId"])
                .stdout
                .is_empty()
        },
    );
    let hist = pool.ok(&["history", &job, "-af", "JobStatus", "StageOutFinish"]);
    let hist: Vec<&str> = hist.split_whitespace().collect();
    assert_eq!(hist.first(), Some(&"4"), "{hist:?}");
    assert!(
        hist.get(1).is_some_and(|t| t.parse::<i64>().is_ok()),
        "{hist:?}"
    );
    wait_for("the spool directory to go", Duration::from_secs(10), || {
        !spool_dir.exists()
    });
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    // released once its input was spooled, as HTCondor logs it
    assert!(log.contains("Job was released."), "{log}");
    assert!(log.contains("Job terminated."), "{log}");
}
