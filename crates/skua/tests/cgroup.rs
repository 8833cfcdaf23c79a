//! Jobs in cgroup v2 groups, in a whole personal pool: a process that
//! leaves the job's process group (`setsid`) is still the job's: it is
//! killed when the job ends, frozen when the job is suspended, and its CPU
//! time is the job's. Runs where this host offers cgroup v2 to root (CI
//! does); elsewhere each test says why it skips.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::cgroup::{cgroup_of, cpu_ticks, job_groups_dir, usable_cgroup2};
use common::{alive, job_pool, wait_for, Pool};

fn start_pool(name: &str, extra: &[(&str, &str)]) -> Pool {
    let mut env = vec![("_CONDOR_POLLING_INTERVAL", "1")];
    env.extend_from_slice(extra);
    job_pool(name, "1", &env)
}

/// A job on the shared file system (in `work`, open to the account it
/// runs as) that writes its pid, starts a busy process in a session of its
/// own that writes its pid too, and waits for the file `release`.
fn escaping_job(pool: &Pool, work: &Path) {
    std::fs::create_dir_all(work).unwrap();
    for d in [work, work.parent().unwrap()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let script = work.join("escape.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho $$ > job.pid\n\
         setsid sh -c 'echo $$ > escaped.pid; while :; do :; done' &\n\
         while [ ! -e release ]; do sleep 0.1; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        work.join("job.sub"),
        "executable = escape.sh\nshould_transfer_files = NO\nrequest_disk = 1024\nqueue\n",
    )
    .unwrap();
    common::user_dir(work);
    let out = pool.skua_user_in(work, &["submit", "job.sub"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The job's and the escaped process's pids, once both run.
fn running_pids(pool: &Pool, work: &Path) -> (i32, i32) {
    wait_for(
        "the job and its escaped child",
        Duration::from_secs(30),
        || {
            read_pid(&work.join("job.pid")).is_some()
                && read_pid(&work.join("escaped.pid")).is_some()
        },
    );
    let _ = pool;
    (
        read_pid(&work.join("job.pid")).unwrap(),
        read_pid(&work.join("escaped.pid")).unwrap(),
    )
}

fn pgrp(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

fn q_af(pool: &Pool, attr: &str) -> String {
    pool.ok(&["q", "-allusers", "-af", attr]).trim().to_string()
}

/// The job's group directory, checked to be where docs/starter.md says.
fn job_group(mount: &Path, pool: &Pool, pid: i32) -> PathBuf {
    let group = cgroup_of(pid).unwrap();
    let expected = job_groups_dir(mount, &pool.dir.join("execute"));
    let path = mount.join(group.trim_start_matches('/'));
    assert_eq!(path.parent(), Some(expected.as_path()), "{group}");
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("slot1@"), "{name}");
    path
}

#[test]
fn a_process_that_escapes_the_job_s_process_group_dies_with_the_job() {
    let Some(mount) = usable_cgroup2() else {
        eprintln!("skipped: this host offers no cgroup v2 to root, so an escaped process would outlive its job");
        return;
    };
    let pool = start_pool("cgroup-escape", &[]);
    let work = pool.home.join("work");
    escaping_job(&pool, &work);
    let (job, escaped) = running_pids(&pool, &work);
    assert_ne!(pgrp(escaped), pgrp(job), "the child left the process group");
    // both in the job's own group
    let group = job_group(&mount, &pool, job);
    assert_eq!(cgroup_of(escaped), cgroup_of(job));
    // the escaped child burns a second of CPU, then the job ends
    wait_for("a second of CPU", Duration::from_secs(30), || {
        cpu_ticks(escaped).is_some_and(|t| t >= 100)
    });
    std::fs::write(work.join("release"), "").unwrap();
    wait_for("the job to complete", Duration::from_secs(30), || {
        q_af(&pool, "ClusterId").is_empty()
    });
    wait_for("the escaped process gone", Duration::from_secs(5), || {
        !alive(escaped)
    });
    assert!(!group.exists(), "the job's group is removed");
    // the escaped child's CPU time is the job's
    let h = pool.ok(&["history", "-af", "ExitCode", "RemoteUserCpu"]);
    let mut it = h.split_whitespace();
    assert_eq!(it.next(), Some("0"), "{h}");
    let cpu: f64 = it.next().unwrap().parse().unwrap();
    assert!(cpu >= 0.9, "RemoteUserCpu {cpu} counts the escaped process");
}

#[test]
fn a_suspended_job_is_frozen_with_its_escaped_processes() {
    let Some(mount) = usable_cgroup2() else {
        eprintln!("skipped: this host offers no cgroup v2 to root (no cgroup.freeze)");
        return;
    };
    let base = common::scratch("cgroup-freeze-owner");
    let owner = base.join("owner");
    let set_owner = |idle: i64| {
        let tmp = owner.with_extension("tmp");
        std::fs::write(
            &tmp,
            format!("KeyboardIdle = {idle}\nConsoleIdle = {idle}\n"),
        )
        .unwrap();
        std::fs::rename(tmp, &owner).unwrap();
    };
    set_owner(100_000);
    let owner_s = owner.display().to_string();
    let pool = start_pool(
        "cgroup-freeze",
        &[
            ("_CONDOR_STARTD_ATTRIBUTE_FILE", &owner_s),
            ("_CONDOR_WANT_SUSPEND", "True"),
            ("_CONDOR_SUSPEND", "KeyboardIdle < 60"),
            ("_CONDOR_CONTINUE", "KeyboardIdle > 60"),
        ],
    );
    let work = pool.home.join("work");
    escaping_job(&pool, &work);
    let (job, escaped) = running_pids(&pool, &work);
    let group = job_group(&mount, &pool, job);
    let events = || std::fs::read_to_string(group.join("cgroup.events")).unwrap_or_default();

    // the owner is back: suspended, the whole group frozen
    set_owner(0);
    wait_for("the job suspended", Duration::from_secs(15), || {
        q_af(&pool, "JobStatus") == "7" && events().contains("frozen 1")
    });
    let ticks = cpu_ticks(escaped).unwrap();
    // the startd's own ad, published 2 s on by its clock (at least 1 s),
    // still shows the slot Suspended
    pool.wait_suspended_until(common::unix_now() + 2, Duration::from_secs(20));
    assert_eq!(
        cpu_ticks(escaped).unwrap(),
        ticks,
        "the escaped process is frozen with its job"
    );

    // the owner leaves: thawed, it runs again
    set_owner(100_000);
    wait_for("the job continued", Duration::from_secs(15), || {
        q_af(&pool, "JobStatus") == "2" && events().contains("frozen 0")
    });
    wait_for(
        "the escaped process to run",
        Duration::from_secs(10),
        || cpu_ticks(escaped).is_some_and(|t| t > ticks + 10),
    );

    std::fs::write(work.join("release"), "").unwrap();
    wait_for("the job to complete", Duration::from_secs(30), || {
        q_af(&pool, "ClusterId").is_empty()
    });
    wait_for("the escaped process gone", Duration::from_secs(5), || {
        !alive(escaped)
    });
    let _ = std::fs::remove_dir_all(base);
}
