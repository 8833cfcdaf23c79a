//! `$$()` match-time substitution through the real daemons: a pool with two
//! kinds of slot (different `Memory`), jobs whose arguments and environment
//! take the matched slot's values, the `MATCH_*` records in the queue and
//! the history, an unresolvable `$$()` held before it runs, and the
//! real-world submit files of `../shared/submit/public.jsonl` that use
//! `$$()`.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{job_pool, kill, pids_of, wait_for, Pool};

/// Two slots of one CPU each: 100 MB and 300 MB of memory.
fn two_kinds(name: &str) -> Pool {
    job_pool(
        name,
        "2",
        &[
            ("_CONDOR_MEMORY", "1000"),
            ("_CONDOR_NUM_SLOTS_TYPE_1", "1"),
            ("_CONDOR_SLOT_TYPE_1", "cpus=1, ram=100"),
            ("_CONDOR_NUM_SLOTS_TYPE_2", "1"),
            ("_CONDOR_SLOT_TYPE_2", "cpus=1, ram=300"),
        ],
    )
}

fn script(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The slots' names by their memory.
fn slot_names(pool: &Pool) -> BTreeMap<String, String> {
    pool.ok(&["status", "-af", "Memory", "Name"])
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(m, n)| (m.to_string(), n.to_string()))
        .collect()
}

fn wait_empty(pool: &Pool, secs: u64) {
    wait_for("the queue to empty", Duration::from_secs(secs), || {
        pool.skua(&["q", "-allusers", "-af", "ClusterId"])
            .stdout
            .is_empty()
    });
}

#[test]
fn arguments_and_environment_take_each_slots_values() {
    let pool = two_kinds("match-subst");
    let names = slot_names(&pool);
    assert_eq!(names.len(), 2, "{names:?}");
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let go = work.join("go");
    // each job waits (so that both are seen running) then prints what it got
    script(
        &work,
        "show.sh",
        &format!(
            "#!/bin/sh\n\
             while [ ! -e {go} ]; do sleep 0.1; done\n\
             echo \"$# $1 $2 X=$X Y=$Y Z=$Z\"\n\
             [ \"$S\" = \"$_CONDOR_SCRATCH_DIR/s\" ] && echo scratch-ok\n\
             exit 0\n",
            go = go.display()
        ),
    );
    let cluster = pool.submit_job(
        &work,
        "executable = show.sh\n\
         arguments = $$(Name) $$(OpSys)\n\
         environment = \"X=$$(Memory:0) Y=$$(NoSuchAttr:dflt) Z=$$([TARGET.Memory*2]) S=$$(CondorScratchDir)/s\"\n\
         output = out.$(Process)\n\
         request_memory = 50\n\
         match_list_length = 2\n\
         requirements = Memory < 200\n\
         queue\n\
         requirements = Memory > 200\n\
         queue\n",
    );
    wait_for("both jobs running", Duration::from_secs(60), || {
        pool.ok(&["q", &cluster, "-af", "JobStatus"]).trim() == "2\n2"
    });
    // the queue's ad keeps the text and records the match
    let long = pool.ok(&["q", &format!("{cluster}.0"), "-l"]);
    let small = &names["100"];
    assert!(long.contains("Args = \"$$(Name) $$(OpSys)\""), "{long}");
    assert!(
        long.contains(&format!("MATCH_EXP_Args = \"{small} LINUX\"")),
        "{long}"
    );
    assert!(
        long.contains(&format!("MATCH_Name = \"{small}\"")),
        "{long}"
    );
    assert!(long.contains("MATCH_Memory = 100"), "{long}");
    assert!(
        long.contains(&format!("LastMatchName0 = \"{small}\"")),
        "{long}"
    );
    std::fs::write(&go, "").unwrap();
    wait_empty(&pool, 60);
    for (proc, memory) in [(0, "100"), (1, "300")] {
        let out = std::fs::read_to_string(work.join(format!("out.{proc}"))).unwrap();
        let twice = 2 * memory.parse::<i64>().unwrap();
        assert_eq!(
            out,
            format!(
                "2 {} LINUX X={memory} Y=dflt Z={twice}\nscratch-ok\n",
                names[memory]
            ),
            "job {cluster}.{proc}"
        );
    }
    let history = pool.ok(&[
        "history",
        &format!("{cluster}.1"),
        "-af",
        "MATCH_EXP_Environment",
    ]);
    // (submit writes the entries in name order, as condor_submit does)
    assert_eq!(
        history.trim(),
        "S=$$(CondorScratchDir)/s X=300 Y=dflt Z=600"
    );
}

#[test]
fn an_unresolvable_reference_holds_the_job_and_the_claim_runs_another() {
    let pool = job_pool("match-hold", "1", &[]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(work.join("LINUX")).unwrap();
    // the other job's executable and input file are named by the machine
    script(
        &work.join("LINUX"),
        "say.sh",
        "#!/bin/sh\necho \"$@\"\ncat in.LINUX\n",
    );
    std::fs::write(work.join("in.LINUX"), "input for linux\n").unwrap();
    let cluster = pool.submit_job(
        &work,
        "executable = /bin/echo\n\
         arguments = $$(NoSuchAttr)\n\
         output = bad.out\n\
         queue\n\
         executable = $$(OpSys)/say.sh\n\
         arguments = $$(Name:none) fine\n\
         should_transfer_files = YES\n\
         transfer_input_files = in.$$(OpSys)\n\
         output = good.out\n\
         queue\n",
    );
    let bad = format!("{cluster}.0");
    wait_for("the hold", Duration::from_secs(60), || {
        pool.ok(&["q", &bad, "-af", "JobStatus"]).trim() == "5"
    });
    let held = pool.ok(&[
        "q",
        &bad,
        "-af",
        "HoldReasonCode",
        "HoldReasonSubCode",
        "NumJobStarts",
        "HoldReason",
    ]);
    assert_eq!(
        held.trim(),
        "0 0 0 Cannot expand $$ expression (NoSuchAttr)."
    );
    // the job never ran with the literal text
    assert!(!work.join("bad.out").exists());
    // the other job ran
    let good = format!("{cluster}.1");
    wait_for("the other job", Duration::from_secs(60), || {
        !pool
            .ok(&["history", &good, "-af", "ExitCode"])
            .trim()
            .is_empty()
    });
    let slot = pool.ok(&["status", "-af", "Name"]);
    assert_eq!(
        std::fs::read_to_string(work.join("good.out")).unwrap(),
        format!("{} fine\ninput for linux\n", slot.trim())
    );
}

#[test]
fn a_run_found_again_after_a_schedd_restart_keeps_its_expanded_names() {
    let pool = job_pool("match-reconnect", "1", &[("_CONDOR_POLLING_INTERVAL", "1")]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let go = work.join("go");
    script(
        &work,
        "job.sh",
        &format!(
            "#!/bin/sh\nwhile [ ! -e {go} ]; do sleep 0.1; done\n\
             echo \"$1\" > res.LINUX\necho done\n",
            go = go.display()
        ),
    );
    // the output files are named by the machine: the shadow of the run
    // found again must know the names the starter used
    pool.submit_job(
        &work,
        "executable = job.sh\n\
         arguments = $$(Memory)\n\
         output = out.$$(OpSys)\n\
         should_transfer_files = YES\n\
         transfer_output_files = res.$$(OpSys)\n\
         job_lease_duration = 60\n\
         log = job.log\n\
         queue\n",
    );
    let log = || std::fs::read_to_string(work.join("job.log")).unwrap_or_default();
    wait_for("the job to run", Duration::from_secs(60), || {
        log().contains("Job executing on host")
    });
    let schedds = pids_of(&pool, "schedd");
    assert_eq!(schedds.len(), 1);
    kill(schedds[0], "-KILL");
    // the master starts another schedd, which finds the run again
    wait_for("the reconnection", Duration::from_secs(60), || {
        log().contains("Job reconnected")
    });
    std::fs::write(&go, "").unwrap();
    wait_for("the job to complete", Duration::from_secs(60), || {
        log().contains("Job terminated")
    });
    let memory = pool.ok(&["status", "-af", "Memory"]);
    assert_eq!(
        std::fs::read_to_string(work.join("res.LINUX")).unwrap(),
        memory
    );
    assert_eq!(
        std::fs::read_to_string(work.join("out.LINUX")).unwrap(),
        "done\n"
    );
}

/// The submit texts of `../shared/submit/public.jsonl` whose cases are
/// named `id`, if the shared folder is there.
fn public_case(id: &str) -> Option<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = root.join("../shared/submit/public.jsonl");
    let Ok(text) = std::fs::read_to_string(&file) else {
        println!("skipped: {} not found", file.display());
        return None;
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|c| c["id"] == id)
        .map(|c| c["submit"].as_str().unwrap().to_string())
}

#[test]
fn the_real_world_files_that_use_dollar_dollar_run() {
    let Some(notification) =
        public_case("realworld/051-htcondor-job-dagman-suppress-notification-cmd-line-node-cmd")
    else {
        return;
    };
    let matchlist = public_case("realworld/029-htcondor-job-core-matchlist-van-cmd").unwrap();
    let pool = two_kinds("match-realworld");
    // an expression of the job's own attributes
    let a = pool.home.join("a");
    std::fs::create_dir_all(&a).unwrap();
    let cluster = pool.submit_job(&a, &notification);
    wait_empty(&pool, 60);
    let out = format!("job_dagman_suppress_notification-cmd_line-node.{cluster}.out");
    assert_eq!(
        std::fs::read_to_string(a.join(out)).unwrap(),
        "Notification = Always\n"
    );
    // the machine's name in the arguments, the last names matched kept; its own stand-in for the Perl test script
    let b = pool.home.join("b");
    std::fs::create_dir_all(&b).unwrap();
    script(&b, "job_core_matchlist.pl", "#!/bin/sh\necho \"$3\"\n");
    for f in ["CondorTest.pm", "CondorUtils.pm", "job_core_matchlist.data"] {
        std::fs::write(b.join(f), "stand-in\n").unwrap();
    }
    let cluster = pool.submit_job(&b, &matchlist);
    let id = format!("{cluster}.0");
    // on_exit_remove keeps it in the queue for hours: it runs again and
    // again; two runs are enough
    wait_for("two runs", Duration::from_secs(90), || {
        pool.ok(&["q", &id, "-af", "NumJobStarts"])
            .trim()
            .parse::<i64>()
            .is_ok_and(|n| n >= 2)
    });
    let names = slot_names(&pool);
    let got = pool.ok(&[
        "q",
        &id,
        "-af",
        "LastMatchName0",
        "LastMatchName1",
        "MATCH_EXP_Args",
    ]);
    let fields: Vec<&str> = got.split_whitespace().collect();
    assert_eq!(fields.len(), 5, "{got}");
    assert!(names.values().any(|n| n == fields[0]), "{got}");
    assert!(names.values().any(|n| n == fields[1]), "{got}");
    assert_eq!(fields[2..4], ["10", "job_core_matchlist.data"], "{got}");
    let out = std::fs::read_to_string(b.join("job_core_matchlist_van.out")).unwrap();
    assert!(names.values().any(|n| *n == out.trim()), "{out}");
    pool.ok(&["rm", &cluster]);
}
