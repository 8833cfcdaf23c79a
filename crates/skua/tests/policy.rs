//! The owner's policy in a whole personal pool: HTCondor's desktop policy
//! (`use POLICY : Desktop`, times scaled down) with the owner's activity
//! played in through `STARTD_ATTRIBUTE_FILE` (the same code path reacts to
//! measured keyboard idle time); a PREEMPT policy; WANT_HOLD; `skua
//! vacate`, `skua drain` and `skua status -state`.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{job_env, wait_for, Pool};

/// A pool of `cpus` slots whose configuration file ends with `extra`
/// (HTCondor syntax: `use POLICY : ...` cannot come from the
/// environment); the owner's activity comes from `<home>/owner`.
fn policy_pool(name: &str, cpus: &str, extra: &str) -> (Pool, PathBuf) {
    let env = job_env(cpus, &[("_CONDOR_POLLING_INTERVAL", "1")]);
    let mut pool = Pool::new(name, &env);
    let owner = pool.home.join("owner");
    set_owner(&owner, 100_000, 0.0);
    // write the pool's configuration (kept by later starts), then add ours
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
    (pool, owner)
}

/// Plays the owner: keyboard idle for `idle` seconds, a non-Skua load of
/// `load` (the machine's real load on a busy test machine would decide
/// otherwise).
fn set_owner(file: &Path, idle: i64, load: f64) {
    let tmp = file.with_extension("tmp");
    std::fs::write(
        &tmp,
        format!(
            "KeyboardIdle = {idle}\nConsoleIdle = {idle}\nLoadAvg = {load:.2}\nCondorLoadAvg = 0.0\nTotalLoadAvg = {load:.2}\nTotalCondorLoadAvg = 0.0\n"
        ),
    )
    .unwrap();
    std::fs::rename(tmp, file).unwrap();
}

fn submit(pool: &Pool, dir: &Path, text: &str) {
    std::fs::write(dir.join("job.sub"), text).unwrap();
    common::user_dir(dir);
    let out = pool.skua_user_in(dir, &["submit", "job.sub"]);
    assert!(
        out.status.success(),
        "submit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn q_af(pool: &Pool, attrs: &[&str]) -> String {
    let mut args = vec!["q", "-allusers", "-af"];
    args.extend_from_slice(attrs);
    pool.ok(&args).trim().to_string()
}

fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A job on the shared file system that writes its pid and counts
/// `steps` seconds of running time into `progress`.
fn counting_job(work: &Path, steps: u32) -> String {
    std::fs::create_dir_all(work).unwrap();
    // the job may run as another account (never root): let it write here
    for d in [work, work.parent().unwrap()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let script = work.join("count.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ntrap 'echo TERM >> signals; exit 143' TERM\necho $$ > pid\ni=0\n\
             while [ $i -lt {steps} ]; do echo $i >> progress; sleep 1; i=$((i+1)); done\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    "executable = count.sh\nshould_transfer_files = NO\nlog = job.log\nrequest_disk = 1024\nqueue\n"
        .to_string()
}

/// HTCondor's desktop policy, its times scaled down (CONTINUE still asks
/// for 10 s in the Suspended activity, as HTCondor's expression does).
fn desktop(max_suspend: u32) -> String {
    format!(
        "use POLICY : Desktop\nStartIdleTime = 60\nContinueIdleTime = 2\n\
         MaxSuspendTime = {max_suspend}\nMaxVacateTime = 5\n"
    )
}

#[test]
fn desktop_owner_returns_then_leaves_the_job_continues_where_it_was() {
    let (pool, owner) = policy_pool("desktop-continue", "1", &desktop(60));
    let work = pool.home.join("work");
    let sub = counting_job(&work, 8);
    submit(&pool, &work, &sub);
    wait_for("the job to run", Duration::from_secs(20), || {
        q_af(&pool, &["JobStatus"]) == "2" && read_pid(&work.join("pid")).is_some()
    });
    let pid = read_pid(&work.join("pid")).unwrap();
    // the owner is back: suspended within a polling interval or two
    set_owner(&owner, 0, 0.0);
    wait_for("the job suspended", Duration::from_secs(8), || {
        q_af(&pool, &["JobStatus"]) == "7" && proc_state(pid) == Some('T')
    });
    // the collector hears of it within an update (ads are coalesced)
    wait_for("the slot shown suspended", Duration::from_secs(5), || {
        let status = pool.ok(&["status", "-state"]);
        status.contains("Claimed") && status.contains("Suspe")
    });
    let status = pool.ok(&["status", "-state"]);
    assert!(
        status.lines().next().unwrap().contains("KbdIdle"),
        "{status}"
    );
    let counted = std::fs::read_to_string(work.join("progress")).unwrap();
    // the startd's own ad, published 3 s on by its clock (at least 2 s,
    // two of the job's steps), still shows the slot Suspended
    pool.wait_suspended_until(common::unix_now() + 3, Duration::from_secs(20));
    assert_eq!(
        std::fs::read_to_string(work.join("progress")).unwrap(),
        counted,
        "a suspended job does not run"
    );
    // the owner leaves: CONTINUE (after 10 s suspended, as HTCondor's)
    set_owner(&owner, 100_000, 0.0);
    wait_for("the job continued", Duration::from_secs(20), || {
        q_af(&pool, &["JobStatus"]) == "2" && proc_state(pid).is_some_and(|s| s != 'T')
    });
    assert_eq!(read_pid(&work.join("pid")), Some(pid), "the same process");
    wait_for("the job to complete", Duration::from_secs(30), || {
        q_af(&pool, &["ClusterId"]).is_empty()
    });
    let progress = std::fs::read_to_string(work.join("progress")).unwrap();
    let expected: String = (0..8).map(|i| format!("{i}\n")).collect();
    assert_eq!(progress, expected, "counted once, never restarted");
    let h = pool.ok(&["history", "-af", "NumJobStarts", "TotalSuspensions"]);
    assert_eq!(h.trim(), "1 1");
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    assert!(
        log.contains("010 (") && log.contains("Job was suspended."),
        "{log}"
    );
    assert!(
        log.contains("011 (") && log.contains("Job was unsuspended."),
        "{log}"
    );
}

#[test]
fn desktop_owner_stays_the_job_is_vacated_and_runs_again() {
    let (pool, owner) = policy_pool("desktop-vacate", "1", &desktop(3));
    let work = pool.home.join("work");
    let sub = counting_job(&work, 3);
    submit(&pool, &work, &sub);
    wait_for("the job to run", Duration::from_secs(20), || {
        q_af(&pool, &["JobStatus"]) == "2" && read_pid(&work.join("pid")).is_some()
    });
    set_owner(&owner, 0, 0.0);
    wait_for("the job suspended", Duration::from_secs(8), || {
        q_af(&pool, &["JobStatus"]) == "7"
    });
    // suspended past MaxSuspendTime: PREEMPT, vacated with its kill signal,
    // back to Idle; the slot is the owner's
    wait_for("the job vacated", Duration::from_secs(15), || {
        q_af(&pool, &["JobStatus", "NumJobStarts"]) == "1 1"
    });
    assert_eq!(
        std::fs::read_to_string(work.join("signals"))
            .unwrap()
            .trim(),
        "TERM"
    );
    wait_for(
        "the slot in the Owner state",
        Duration::from_secs(10),
        || pool.ok(&["status", "-af", "State"]).trim() == "Owner",
    );
    // the owner leaves: it runs again and completes
    set_owner(&owner, 100_000, 0.0);
    wait_for("the job to complete", Duration::from_secs(30), || {
        q_af(&pool, &["ClusterId"]).is_empty()
    });
    let h = pool.ok(&["history", "-af", "NumJobStarts", "JobStatus"]);
    assert_eq!(h.trim(), "2 4");
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    assert!(log.contains("004 ("), "an evicted event: {log}");
}

#[test]
fn preempt_vacates_a_job_back_to_idle_with_its_wall_clock() {
    let (pool, _owner) = policy_pool(
        "preempt",
        "1",
        "PREEMPT = (Activity == \"Busy\") && (ActivityTimer > 2)\n\
         START = (TARGET.RemoteWallClockTime =?= undefined) || (TARGET.RemoteWallClockTime == 0)\n",
    );
    let work = pool.home.join("work");
    let sub = counting_job(&work, 60);
    submit(&pool, &work, &sub);
    wait_for("the job vacated", Duration::from_secs(25), || {
        q_af(&pool, &["JobStatus", "NumJobStarts"]) == "1 1"
    });
    let wall: f64 = q_af(&pool, &["RemoteWallClockTime"]).parse().unwrap();
    assert!(wall >= 2.0, "wall clock {wall}");
    assert!(std::fs::read_to_string(work.join("signals"))
        .unwrap()
        .contains("TERM"));
    let reason = q_af(&pool, &["LastVacateReason"]);
    assert!(!reason.is_empty());
    pool.ok(&["rm", "-all"]);
}

#[test]
fn want_hold_holds_the_job_with_code_21() {
    let (pool, _owner) = policy_pool(
        "want-hold",
        "1",
        "TooLong = (time() - JobStart) > 2\n\
         use POLICY : WANT_HOLD_IF(TooLong, 42, ran too long)\n\
         WANT_HOLD_REASON = \"ran too long\"\n",
    );
    let work = pool.home.join("work");
    let sub = counting_job(&work, 60);
    submit(&pool, &work, &sub);
    wait_for("the job held", Duration::from_secs(25), || {
        q_af(&pool, &["JobStatus"]) == "5"
    });
    assert_eq!(
        q_af(&pool, &["HoldReasonCode", "HoldReasonSubCode"]),
        "21 42"
    );
    assert_eq!(q_af(&pool, &["HoldReason"]), "ran too long");
    wait_for("the slot free again", Duration::from_secs(10), || {
        pool.ok(&["status", "-af", "State"]).trim() == "Unclaimed"
    });
}

#[test]
fn vacate_and_drain_by_command() {
    let (pool, _owner) = policy_pool("vacate-drain", "2", "");
    let work = pool.home.join("work");
    let sub = counting_job(&work, 60);
    submit(&pool, &work, &sub);
    wait_for("the job to run", Duration::from_secs(20), || {
        q_af(&pool, &["JobStatus"]) == "2"
    });
    let claimed = || {
        pool.ok(&[
            "status",
            "-constraint",
            "State == \"Claimed\"",
            "-af",
            "Name",
        ])
        .trim()
        .to_string()
    };
    wait_for(
        "the collector to show the claim",
        Duration::from_secs(5),
        || !claimed().is_empty(),
    );
    let slot = claimed();
    // START false from now on, so the vacated job stays idle
    pool.ok(&["drain"]);
    let out = pool.ok(&["vacate", &slot]);
    assert!(out.contains(&slot), "{out}");
    wait_for("the job back to idle", Duration::from_secs(15), || {
        q_af(&pool, &["JobStatus"]) == "1"
    });
    wait_for("every slot drained", Duration::from_secs(15), || {
        pool.ok(&["status", "-af", "State", "Activity"])
            .lines()
            .all(|l| l == "Drained Idle")
    });
    pool.ok(&["drain", "-cancel"]);
    wait_for("the job running again", Duration::from_secs(20), || {
        q_af(&pool, &["JobStatus", "NumJobStarts"]) == "2 2"
    });
    pool.ok(&["rm", "-all"]);
}
