//! The scheduler and local universes through the real daemons: the schedd
//! runs the job itself on the submit host, as its owner, with the user
//! log, exit code, holds and removal of any other job.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use common::{job_pool, submitter, wait_for, Pool};

fn pool(name: &str) -> Pool {
    // a start pass every second (HTCondor's SCHEDD_INTERVAL is 300)
    job_pool(name, "1", &[("_CONDOR_SCHEDD_INTERVAL", "1")])
}

fn script(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn q_attr(pool: &Pool, job: &str, attr: &str) -> String {
    let out = pool.skua(&["q", "-allusers", job, "-af", attr]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn history_attr(pool: &Pool, job: &str, attr: &str) -> String {
    let out = pool.skua(&["history", job, "-af", attr]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The owner's account name as `id -un` prints it.
fn owner_name() -> String {
    match submitter() {
        Some(u) => u.name,
        None => String::from_utf8_lossy(
            &std::process::Command::new("id")
                .arg("-un")
                .output()
                .unwrap()
                .stdout,
        )
        .trim()
        .to_string(),
    }
}

fn wait_gone(pool: &Pool, job: &str) {
    wait_for(
        &format!("job {job} to leave the queue"),
        Duration::from_secs(60),
        || q_attr(pool, job, "ClusterId").is_empty(),
    );
}

/// The event numbers of a user log, in order.
fn events(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            l.len() > 4 && l.as_bytes()[3] == b' ' && l[..3].bytes().all(|b| b.is_ascii_digit())
        })
        .map(|l| l[..3].to_string())
        .collect()
}

#[test]
fn scheduler_and_local_jobs_run_as_their_owner_with_log_and_exit_code() {
    let pool = pool("local-run");
    let me = owner_name();
    for (universe, code) in [("scheduler", 3), ("local", 4)] {
        let dir = pool.home.join(universe);
        common::user_dir(&dir);
        script(
            &dir,
            "job.sh",
            &format!("#!/bin/sh\nid -un\necho \"id=$CONDOR_ID arg=$1\"\npwd\necho oops >&2\nsleep 1\nexit {code}\n"),
        );
        let cluster = pool.submit_job(
            &dir,
            &format!(
                "universe = {universe}\nexecutable = job.sh\narguments = hello\n\
                 output = out.txt\nerror = err.txt\nlog = job.log\nqueue\n"
            ),
        );
        let job = format!("{cluster}.0");
        wait_gone(&pool, &job);
        let out = std::fs::read_to_string(dir.join("out.txt")).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines.first().copied(),
            Some(me.as_str()),
            "{universe}: {out}"
        );
        assert_eq!(
            lines.get(1).copied(),
            Some(format!("id={job} arg=hello").as_str())
        );
        // the job ran in its initial directory
        assert_eq!(
            Path::new(lines.get(2).unwrap()).canonicalize().unwrap(),
            dir.canonicalize().unwrap()
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("err.txt")).unwrap(),
            "oops\n"
        );
        // the output files are the owner's
        if let Some(u) = submitter() {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(std::fs::metadata(dir.join("out.txt")).unwrap().uid(), u.uid);
        }
        assert_eq!(
            events(&dir.join("job.log")),
            ["000", "001", "005"],
            "{universe}"
        );
        let log = std::fs::read_to_string(dir.join("job.log")).unwrap();
        assert!(log.contains(&format!("(return value {code})")), "{log}");
        assert_eq!(history_attr(&pool, &job, "ExitCode"), code.to_string());
        assert_eq!(
            history_attr(&pool, &job, "JobUniverse"),
            if universe == "scheduler" { "7" } else { "12" }
        );
        // accounted as a run (the job sleeps a second)
        let wall: f64 = history_attr(&pool, &job, "RemoteWallClockTime")
            .parse()
            .unwrap();
        assert!(wall >= 1.0, "RemoteWallClockTime {wall}");
        let cpu: f64 = history_attr(&pool, &job, "RemoteUserCpu").parse().unwrap();
        assert!((0.0..wall + 1.0).contains(&cpu), "RemoteUserCpu {cpu}");
        assert_eq!(history_attr(&pool, &job, "NumJobStarts"), "1");
    }
}

#[test]
fn requirements_against_the_schedd_ad_missing_programs_and_removal() {
    let pool = pool("local-rules");
    let dir = pool.home.join("work");
    common::user_dir(&dir);
    // Requirements the Scheduler ad does not satisfy: stays idle
    let never = pool.submit_job(
        &dir,
        "universe = local\nexecutable = /bin/true\nrequirements = TARGET.Name == \"elsewhere\"\nqueue\n",
    );
    // a program that is not executable: held with code 6, subcode EACCES
    script(&dir, "plain.txt", "#!/bin/sh\nexit 0\n");
    std::fs::set_permissions(
        dir.join("plain.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let bad = pool.submit_job(
        &dir,
        "universe = scheduler\nexecutable = plain.txt\nlog = bad.log\nqueue\n",
    );
    let bad_job = format!("{bad}.0");
    wait_for("the bad job's hold", Duration::from_secs(60), || {
        q_attr(&pool, &bad_job, "JobStatus") == "5"
    });
    assert_eq!(q_attr(&pool, &bad_job, "HoldReasonCode"), "6");
    assert_eq!(q_attr(&pool, &bad_job, "HoldReasonSubCode"), "13");
    let reason = q_attr(&pool, &bad_job, "HoldReason");
    assert!(
        reason.contains("plain.txt' is missing or not executable"),
        "{reason}"
    );
    assert_eq!(events(&dir.join("bad.log")), ["000", "012"]);

    // a running local job is killed by skua rm
    let pidfile = dir.join("pid");
    script(
        &dir,
        "long.sh",
        "#!/bin/sh\necho $$ > pid\nexec sleep 600\n",
    );
    let long = pool.submit_job(
        &dir,
        "universe = local\nexecutable = long.sh\nlog = long.log\nqueue\n",
    );
    let long_job = format!("{long}.0");
    wait_for("the long job to run", Duration::from_secs(60), || {
        q_attr(&pool, &long_job, "JobStatus") == "2" && pidfile.exists()
    });
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(common::alive(pid));
    pool.ok(&["rm", &long_job]);
    wait_for(
        "the removed job's process to end",
        Duration::from_secs(30),
        || !common::alive(pid),
    );
    wait_gone(&pool, &long_job);
    assert_eq!(events(&dir.join("long.log")), ["000", "001", "009"]);

    // a universe Skua does not run: refused, naming the file and the line
    std::fs::write(
        dir.join("java.sub"),
        "executable = /bin/true\nuniverse = java\nqueue\n",
    )
    .unwrap();
    let out = pool.skua_user_in(&dir, &["submit", "java.sub"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("java.sub:2:") && err.contains("java universe"),
        "{err}"
    );

    // the idle one never started
    let never_job = format!("{never}.0");
    assert_eq!(q_attr(&pool, &never_job, "JobStatus"), "1");
    assert_eq!(q_attr(&pool, &never_job, "NumJobStarts"), "0");
}

/// The real-world submit files (HTCondor's own tests, from the project's
/// corpus of public submit files) that use these universes: each submits,
/// and runs to completion unless it asks to be held. Their programs are
/// stand-ins written here (`x_sleep.pl` sleeps its argument).
const REAL_WORLD: &[(&str, &str, bool)] = &[
    (
        "job_core_initialdir_sched",
        "universe = scheduler\nexecutable =  x_sleep.pl\ninitialdir = initd_sched\nlog = job_core_initialdir_sched.log\noutput = job_core_initialdir_sched.out\nerror = job_core_initialdir_sched.err\narguments = 1\ngetenv=true\nNotification = NEVER\nqueue\n",
        true,
    ),
    (
        "job_core_onexithold-true_sched",
        "universe   = scheduler\nexecutable = x_sleep.pl\nlog = job_core_onexithold-true_sched.log\noutput = job_core_onexithold-true_sched.out\nerror = job_core_onexithold-true_sched.err\non_exit_hold = (time() - QDate) < (2 * 60)\nNotification = NEVER\narguments  = 1\nqueue\n",
        false,
    ),
    (
        "job_core_plus_sched",
        "universe   = scheduler\nexecutable = x_sleep.pl\nlog = job_core_plus_sched.log\noutput = job_core_plus_sched.out\nerror = job_core_plus_sched.err\nhold = true\n+foo\t\t= \"bar\"\n+bar\t\t= \"foo\"\n+last\t\t= \"first\"\n+done\t\t= FALSE\nNotification = NEVER\narguments  = 3600\nqueue\n",
        false,
    ),
    (
        "job_dagman_abort-A-node-succeed",
        "executable     \t= $CHOICE(IsWindows,/bin/echo,appendmsg)\narguments\t\t= job_dagman_abort-A-node.cmd $(nodename) OK\nuniverse       \t= local\nlog\t\t\t= job_dagman_abort-A-node.log\nnotification   \t= NEVER\ngetenv = CONDOR*,PATH\noutput\t\t\t= job_dagman_abort-A-node.$(nodename).out\nerror\t\t\t= job_dagman_abort-A-node.err\nqueue\n",
        true,
    ),
    (
        "job_dagman_node_status_rm_node",
        "executable = job_dagman_node_status_rm_node.pl\noutput = job_dagman_node_status_rm_node.out\nerror = job_dagman_node_status_rm_node.err\nlog = job_dagman_node_status_rm_node.log\narguments =  \"A $(DAGManJobId)\"\nuniverse = scheduler\ngetenv = CONDOR*,PATH\nnotification = NEVER\nqueue\n",
        true,
    ),
    (
        "job_dagman_rm-nodeF",
        "universe = scheduler\nexecutable = ./job_dagman_rm-nodeF.pl\narguments = \"job_dagman_rm-NodeF-job $(DAGManJobId)\"\ntransfer_input_files = CondorTest.pm, Condor.pm, CondorUtils.pm, CondorPersonal.pm\nlog = job_dagman_rm-nodeF.log\noutput = job_dagman_rm-nodeF.out\nerror = job_dagman_rm-nodeF.err\ngetenv = CONDOR*,PATH\nnotification = NEVER\nqueue\n",
        true,
    ),
];

#[test]
fn real_world_scheduler_and_local_submit_files_run() {
    let pool = pool("local-realworld");
    for (name, text, completes) in REAL_WORLD {
        let dir = pool.home.join("rw").join(name);
        common::user_dir(&dir);
        common::user_dir(&dir.join("initd_sched"));
        for program in [
            "x_sleep.pl",
            "initd_sched/x_sleep.pl",
            "job_dagman_node_status_rm_node.pl",
            "job_dagman_rm-nodeF.pl",
        ] {
            script(
                &dir,
                program,
                "#!/bin/sh\nsleep \"${1:-0}\" 2>/dev/null\nexit 0\n",
            );
        }
        for input in [
            "CondorTest.pm",
            "Condor.pm",
            "CondorUtils.pm",
            "CondorPersonal.pm",
        ] {
            std::fs::write(dir.join(input), "1;\n").unwrap();
        }
        let cluster = pool.submit_job(&dir, text);
        let job = format!("{cluster}.0");
        let log = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("log")
                    .map(|r| r.trim_start_matches([' ', '\t', '=']))
            })
            .unwrap()
            .to_string();
        let log = if text.contains("initialdir = initd_sched") {
            dir.join("initd_sched").join(log)
        } else {
            dir.join(log)
        };
        if *completes {
            wait_gone(&pool, &job);
            assert_eq!(history_attr(&pool, &job, "ExitCode"), "0", "{name}");
            assert_eq!(events(&log), ["000", "001", "005"], "{name}");
        } else if text.contains("hold = true") {
            // submitted on hold: never runs
            assert_eq!(q_attr(&pool, &job, "JobStatus"), "5", "{name}");
            assert_eq!(q_attr(&pool, &job, "HoldReasonCode"), "15", "{name}");
            pool.ok(&["rm", &job]);
        } else {
            // on_exit_hold true within two minutes of submission: held
            // after its exit, with HTCondor's code 3 (the hold event
            // replaces the termination event, as the exit policy does for
            // any job)
            wait_for(
                &format!("{name} held on exit"),
                Duration::from_secs(60),
                || q_attr(&pool, &job, "JobStatus") == "5",
            );
            assert_eq!(q_attr(&pool, &job, "HoldReasonCode"), "3", "{name}");
            assert_eq!(events(&log), ["000", "001", "012"], "{name}");
            pool.ok(&["rm", &job]);
        }
    }
}

#[test]
fn a_schedd_restart_kills_the_running_job_and_runs_it_again() {
    let pool = pool("local-restart");
    let dir = pool.home.join("work");
    common::user_dir(&dir);
    script(
        &dir,
        "long.sh",
        "#!/bin/sh\necho $$ >> pids\nexec sleep 600\n",
    );
    let cluster = pool.submit_job(
        &dir,
        "universe = scheduler\nexecutable = long.sh\nlog = job.log\nqueue\n",
    );
    let job = format!("{cluster}.0");
    let pids = |n: usize| -> Vec<i32> {
        std::fs::read_to_string(dir.join("pids"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .take(n)
            .collect()
    };
    wait_for("the job to run", Duration::from_secs(60), || {
        pids(1).len() == 1
    });
    let first = pids(1)[0];
    let schedds = common::pids_of(&pool, "schedd");
    assert_eq!(schedds.len(), 1);
    common::kill(schedds[0], "-KILL");
    // the restarted schedd kills the old process and starts the job again
    wait_for(
        "the old process to be killed",
        Duration::from_secs(60),
        || !common::alive(first),
    );
    wait_for("the job to run again", Duration::from_secs(60), || {
        pids(2).len() == 2
    });
    let second = pids(2)[1];
    assert!(common::alive(second));
    assert_ne!(first, second);
    wait_for("the job to be running", Duration::from_secs(30), || {
        q_attr(&pool, &job, "JobStatus") == "2"
    });
    assert_eq!(events(&dir.join("job.log")), ["000", "001", "004", "001"]);
    pool.ok(&["rm", &job]);
    wait_for(
        "the removed job's process to end",
        Duration::from_secs(30),
        || !common::alive(second),
    );
}

#[test]
fn a_periodic_hold_stops_a_running_local_job() {
    let pool = job_pool(
        "local-periodic",
        "1",
        &[
            ("_CONDOR_SCHEDD_INTERVAL", "1"),
            ("_CONDOR_PERIODIC_EXPR_INTERVAL", "1"),
        ],
    );
    let dir = pool.home.join("work");
    common::user_dir(&dir);
    script(
        &dir,
        "long.sh",
        "#!/bin/sh\necho $$ > pid\nexec sleep 600\n",
    );
    let cluster = pool.submit_job(
        &dir,
        "universe = local\nexecutable = long.sh\nlog = job.log\n\
         periodic_hold = JobStatus == 2 && NumJobStarts > 0\nqueue\n",
    );
    let job = format!("{cluster}.0");
    wait_for("the job's hold", Duration::from_secs(60), || {
        q_attr(&pool, &job, "JobStatus") == "5"
    });
    // the script may have been killed before it wrote its pid: then its
    // process is gone already
    let Ok(text) = std::fs::read_to_string(dir.join("pid")) else {
        assert_eq!(events(&dir.join("job.log")), ["000", "001", "012"]);
        return;
    };
    let pid: i32 = text.trim().parse().unwrap();
    wait_for(
        "the held job's process to end",
        Duration::from_secs(30),
        || !common::alive(pid),
    );
    assert_eq!(q_attr(&pool, &job, "HoldReasonCode"), "3");
    assert_eq!(events(&dir.join("job.log")), ["000", "001", "012"]);
}

#[test]
fn stopping_the_pool_stops_the_running_job() {
    let pool = pool("local-stop");
    let dir = pool.home.join("work");
    common::user_dir(&dir);
    script(
        &dir,
        "long.sh",
        "#!/bin/sh\necho $$ > pid\nexec sleep 600\n",
    );
    pool.submit_job(&dir, "universe = scheduler\nexecutable = long.sh\nqueue\n");
    wait_for("the job to run", Duration::from_secs(60), || {
        std::fs::read_to_string(dir.join("pid")).is_ok_and(|t| t.ends_with('\n'))
    });
    let pid: i32 = std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(common::alive(pid));
    let pool_dir = pool.dir.to_string_lossy().into_owned();
    pool.ok(&["pool", "stop", "--dir", &pool_dir]);
    wait_for("the job's process to end", Duration::from_secs(30), || {
        !common::alive(pid)
    });
}
