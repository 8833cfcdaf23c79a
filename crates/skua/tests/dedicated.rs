//! Dedicated execute hosts through the real daemons on one host: slots
//! configured as docs/parallel.md tells advertise the dedicated scheduler,
//! a parallel job is never run as an ordinary job, and
//! `skua q -better-analyze` says why it waits.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{job_pool, wait_for, Pool};
use skua_testkit::JobAdBuilder;

const DS: &str = "DedicatedScheduler@dedicated-test.example";

fn start_pool() -> Pool {
    let start = "(Scheduler =?= $(DedicatedScheduler)) || (TARGET.JobUniverse =!= 11)";
    job_pool(
        "dedicated",
        "2",
        &[
            ("_CONDOR_NEGOTIATOR_INTERVAL", "2"),
            ("_CONDOR_DedicatedScheduler", &format!("\"{DS}\"")),
            ("_CONDOR_STARTD_ATTRS", "DedicatedScheduler"),
            ("_CONDOR_START", start),
            ("_CONDOR_RANK", "Scheduler =?= $(DedicatedScheduler)"),
            ("_CONDOR_SUSPEND", "False"),
            ("_CONDOR_WANT_SUSPEND", "False"),
            ("_CONDOR_PREEMPT", "False"),
        ],
    )
}

/// Submits a parallel job of `nodes` nodes through the schedd's submit
/// route as the user of `token` (`skua submit` refuses the parallel
/// universe until the schedd runs its nodes); returns its cluster.
fn submit_parallel(pool: &Pool, token: &str, nodes: i64) -> String {
    let addr = std::fs::read_to_string(pool.dir.join("spool/.schedd_address")).unwrap();
    let addr = addr.trim().trim_start_matches('<').trim_end_matches('>');
    let client = skua_net::Client::new(
        skua_net::Endpoint::Tcp(addr.parse().unwrap()),
        Some(token.to_string()),
        Duration::from_secs(10),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reserved: skua_proto::NewClusterReply = rt
        .block_on(client.command(
            &skua_proto::routes::SCHEDD_NEW_CLUSTER,
            Some(&skua_proto::NewCluster {}),
        ))
        .unwrap();
    let ad = JobAdBuilder::new()
        .id(i64::from(reserved.cluster), 0)
        .attr("JobUniverse", 11i64)
        .attr("MinHosts", nodes)
        .attr("MaxHosts", nodes)
        .attr("Scheduler", DS)
        .text();
    let submit = skua_proto::Submit {
        cluster: reserved.cluster,
        jobs: vec![ad],
        cluster_ad: None,
        submission_id: None,
    };
    let reply: skua_proto::SubmitReply = rt
        .block_on(client.command(&skua_proto::routes::SCHEDD_SUBMIT, Some(&submit)))
        .unwrap();
    reply.cluster.to_string()
}

#[test]
fn parallel_jobs_wait_for_the_dedicated_scheduler_and_say_why() {
    let pool = start_pool();
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();

    // Both slots advertise the dedicated scheduler.
    let ads = pool.ok(&["status", "-af", "DedicatedScheduler"]);
    let lines: Vec<&str> = ads.lines().collect();
    assert_eq!(lines, vec![DS, DS], "{ads}");

    let token = std::fs::read_to_string(pool.user_token("paralleluser")).unwrap();
    let big = submit_parallel(&pool, &token, 3);
    let small = submit_parallel(&pool, &token, 1);
    // A whole cycle begun after both were queued, both slots free: nothing
    // matched, so neither was offered as its owner's ordinary job.
    let cycles = pool.wait_for_cycles(
        "a cycle seeing the parallel jobs",
        1,
        Duration::from_secs(30),
        |_| true,
    );
    assert!(
        cycles.iter().all(|c| c.matches == 0),
        "{cycles:?}\n{}",
        pool.logs()
    );
    // An ordinary job submitted after them runs on the same slots.
    let vanilla = pool.submit_job(
        &work,
        "executable = /bin/true\nrequest_disk = 1024\nqueue\n",
    );
    wait_for(
        "the ordinary job to finish",
        Duration::from_secs(60),
        || {
            pool.skua(&["q", &vanilla, "-af", "ClusterId"])
                .stdout
                .is_empty()
        },
    );
    let done = pool.ok(&["history", &vanilla, "-af", "JobStatus", "ExitCode"]);
    assert_eq!(done.trim(), "4 0", "{done}");
    // The parallel jobs were never run as their owner's ordinary jobs.
    for c in [&big, &small] {
        let row = pool.ok(&["q", "-allusers", c, "-af", "JobStatus"]);
        assert_eq!(row.trim(), "1", "job {c}: {row}\n{}", pool.logs());
    }

    let why = pool.ok(&["q", "-better-analyze", &format!("{big}.0")]);
    assert!(
        why.contains("Dedicated scheduling (parallel universe):"),
        "{why}"
    );
    assert!(
        why.contains("2 slot(s) advertise this dedicated scheduler; 2 of them match the job."),
        "{why}"
    );
    assert!(
        why.contains("Not enough dedicated machines match: the job needs 3 and only 2 match"),
        "{why}"
    );
    let why = pool.ok(&["q", "-better-analyze", &format!("{small}.0")]);
    assert!(why.contains(&format!("behind parallel job {big}")), "{why}");
}

/// HTCondor's reader of the user log, printing JSON.
const READ_USERLOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../skua-queue/tests/read_userlog.py"
);

/// A pool of `slots` dedicated slots whose schedd is the dedicated
/// scheduler they name (submit writes `DedicatedScheduler@<SCHEDD_NAME>`).
fn dedicated_pool(name: &str, slots: &str, extra: &[(&str, &str)]) -> Pool {
    let start = "(Scheduler =?= $(DedicatedScheduler)) || (TARGET.JobUniverse =!= 11)";
    let ds = format!("\"{DS}\"");
    let mut env = vec![
        ("_CONDOR_SCHEDD_NAME", "dedicated-test.example"),
        ("_CONDOR_DedicatedScheduler", ds.as_str()),
        ("_CONDOR_STARTD_ATTRS", "DedicatedScheduler"),
        ("_CONDOR_START", start),
        ("_CONDOR_RANK", "Scheduler =?= $(DedicatedScheduler)"),
        ("_CONDOR_SUSPEND", "False"),
        ("_CONDOR_WANT_SUSPEND", "False"),
        ("_CONDOR_PREEMPT", "False"),
    ];
    env.extend_from_slice(extra);
    job_pool(name, slots, &env)
}

/// A node's program: says who it is, marks itself up in the job's
/// `RemoteSpoolDir` (shared by the nodes here: one host), waits until
/// every node is up (so the nodes ran at once), then exits; node 0 last,
/// with status 7.
const NODE_SH: &str = r#"#!/bin/sh
echo "node $_CONDOR_PROCNO of $_CONDOR_NPROCS arg $1 hosts $SKUA_PARALLEL_HOSTS"
touch "$_CONDOR_REMOTE_SPOOL_DIR/up.$_CONDOR_PROCNO"
i=0
while [ "$(ls "$_CONDOR_REMOTE_SPOOL_DIR" | grep -c '^up\.')" -lt "$_CONDOR_NPROCS" ]; do
  i=$((i+1)); [ $i -gt 600 ] && { echo "not all up"; exit 1; }
  sleep 0.1
done
echo "all $_CONDOR_NPROCS up"
if [ "$_CONDOR_PROCNO" = 0 ]; then sleep 1; exit 7; fi
exit 0
"#;

fn write_node_sh(work: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let path = work.join("node.sh");
    std::fs::write(&path, NODE_SH).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The event types of `log` as HTCondor's own reader reads them, or `None`
/// when python3 or htcondor2 is missing.
fn htcondor_event_types(log: &std::path::Path) -> Option<Vec<(String, i64)>> {
    let out = std::process::Command::new("python3")
        .arg(READ_USERLOG)
        .arg(log)
        .output()
        .ok()?;
    if out.status.code() == Some(3) {
        eprintln!("\n!!!!!!!! SKIPPED: htcondor2 is not installed; the user log was NOT read with HTCondor's reader !!!!!!!!\n");
        return None;
    }
    assert!(
        out.status.success(),
        "HTCondor's reader failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    Some(
        got.iter()
            .map(|e| {
                let node = e["attrs"]["Node"].as_i64().unwrap_or(-1);
                (e["type"].as_str().unwrap_or("").to_string(), node)
            })
            .collect(),
    )
}

#[test]
fn a_three_node_job_runs_its_nodes_at_once_and_ends_with_node_0() {
    let pool = dedicated_pool("dedicated-run", "3", &[]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    write_node_sh(&work);
    let cluster = pool.submit_job(
        &work,
        "universe = parallel\nmachine_count = 3\nexecutable = node.sh\narguments = $(Node)\n\
         output = out.$(Node)\nerror = err.$(Node)\nlog = job.log\nrequest_disk = 1024\nqueue\n",
    );
    wait_for(
        "the parallel job to finish",
        Duration::from_secs(90),
        || {
            pool.skua(&["q", &cluster, "-af", "ClusterId"])
                .stdout
                .is_empty()
        },
    );
    // the job's exit is node 0's
    let done = pool.ok(&["history", &cluster, "-af", "JobStatus", "ExitCode"]);
    assert_eq!(done.trim(), "4 7", "{done}\n{}", pool.logs());
    // every node's output came back under its own name, and every node saw
    // the others up at the same time
    for k in 0..3 {
        let out = std::fs::read_to_string(work.join(format!("out.{k}"))).unwrap_or_default();
        assert!(
            out.starts_with(&format!("node {k} of 3 arg {k} hosts ")),
            "node {k}: {out}\n{}",
            pool.logs()
        );
        assert!(out.contains("all 3 up"), "node {k}: {out}");
    }
    // the job's spool directory is gone with the job
    let spool = pool.dir.join(format!("spool/parallel/{cluster}"));
    wait_for(
        "the job's spool directory to be removed",
        Duration::from_secs(10),
        || !spool.exists(),
    );
    // the user log: 000, 001, 014 per node, 015 per node, 005
    let log = work.join("job.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let count = |head: &str| text.lines().filter(|l| l.starts_with(head)).count();
    assert_eq!(count("000 "), 1, "{text}");
    assert_eq!(count("001 "), 1, "{text}");
    assert_eq!(count("014 "), 3, "{text}");
    assert_eq!(count("015 "), 3, "{text}");
    assert_eq!(count("005 "), 1, "{text}");
    for k in 0..3 {
        assert!(
            text.contains(&format!("Node {k} executing on host: ")),
            "{text}"
        );
    }
    if let Some(events) = htcondor_event_types(&log) {
        let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(types.first(), Some(&"SUBMIT"), "{types:?}");
        assert_eq!(types.last(), Some(&"JOB_TERMINATED"), "{types:?}");
        let n = |t: &str| types.iter().filter(|x| **x == t).count();
        assert_eq!(n("NODE_EXECUTE"), 3, "{types:?}");
        assert_eq!(n("NODE_TERMINATED"), 3, "{types:?}");
        let mut nodes: Vec<i64> = events
            .iter()
            .filter(|(t, _)| t == "NODE_EXECUTE")
            .map(|(_, n)| *n)
            .collect();
        nodes.sort_unstable();
        assert_eq!(nodes, vec![0, 1, 2], "{events:?}");
    }
}

/// Waits until `job` has left the queue; its (JobStatus, ExitCode) in the
/// history.
fn wait_done(pool: &Pool, job: &str, secs: u64) -> String {
    wait_for(
        &format!("job {job} to finish"),
        Duration::from_secs(secs),
        || pool.skua(&["q", job, "-af", "ClusterId"]).stdout.is_empty(),
    );
    pool.ok(&["history", job, "-af", "JobStatus", "ExitCode"])
        .trim()
        .to_string()
}

/// A node that, on the job's first run, records its pid and sleeps (the
/// test kills one of them); on a later run (the test leaves `again` in the
/// job's spool directory) it says so and exits.
const SLEEPY_NODE_SH: &str = r#"#!/bin/sh
if [ -e "$_CONDOR_REMOTE_SPOOL_DIR/again" ]; then
  echo "node $_CONDOR_PROCNO ran again"
  exit 0
fi
echo $$ > "$_CONDOR_REMOTE_SPOOL_DIR/pid.$_CONDOR_PROCNO"
exec sleep 300
"#;

#[test]
fn killing_one_node_stops_every_node_and_the_job_runs_again() {
    use std::os::unix::fs::PermissionsExt;
    let pool = dedicated_pool("dedicated-kill", "3", &[]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let path = work.join("node.sh");
    std::fs::write(&path, SLEEPY_NODE_SH).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cluster = pool.submit_job(
        &work,
        // every node finishes its second run (with node 0's default policy
        // the others may be stopped before they write)
        "universe = parallel\nmachine_count = 3\nexecutable = node.sh\n\
         output = out.$(Node)\nlog = job.log\nrequest_disk = 1024\n\
         +ParallelShutdownPolicy = \"WAIT_FOR_ALL\"\nqueue\n",
    );
    let spool = pool.dir.join(format!("spool/parallel/{cluster}"));
    wait_for("every node to run", Duration::from_secs(60), || {
        (0..3).all(|k| spool.join(format!("pid.{k}")).exists())
    });
    let row = pool.ok(&["q", &cluster, "-af", "JobStatus", "CurrentHosts"]);
    assert_eq!(row.trim(), "2 3", "{row}");
    let pids: Vec<String> = (0..3)
        .map(|k| {
            std::fs::read_to_string(spool.join(format!("pid.{k}")))
                .unwrap()
                .trim()
                .to_string()
        })
        .collect();
    std::fs::write(spool.join("again"), "").unwrap();
    // node 1's process dies
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pids[1]])
        .status()
        .unwrap();
    assert!(killed.success());
    // every other node stops, the job runs again from the start and ends
    let done = wait_done(&pool, &cluster, 90);
    assert_eq!(done, "4 0", "{}", pool.logs());
    for pid in [&pids[0], &pids[2]] {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .map(|c| !c.contains("sleep"))
                    .unwrap_or(true),
            "node process {pid} still runs"
        );
    }
    for k in 0..3 {
        let out = std::fs::read_to_string(work.join(format!("out.{k}"))).unwrap_or_default();
        assert_eq!(out.trim(), format!("node {k} ran again"), "{}", pool.logs());
    }
    let text = std::fs::read_to_string(work.join("job.log")).unwrap();
    let count = |head: &str| text.lines().filter(|l| l.starts_with(head)).count();
    // two runs of the whole job: the first one evicted
    assert_eq!(count("001 "), 2, "{text}");
    // (a node of the second run that has not reported its start when node
    // 0 ends the job gets no 014)
    assert!(count("014 ") >= 4, "{text}");
    assert_eq!(count("004 "), 1, "{text}");
    assert_eq!(count("005 "), 1, "{text}");
}

/// A job that runs until `release` appears in its directory.
const UNTIL_SH: &str = r#"#!/bin/sh
while [ ! -e "$1" ]; do sleep 0.2; done
exit 0
"#;

#[test]
fn fifo_a_big_job_at_the_head_starts_before_later_small_ones() {
    use std::os::unix::fs::PermissionsExt;
    let pool = dedicated_pool("dedicated-fifo", "3", &[]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let path = work.join("until.sh");
    std::fs::write(&path, UNTIL_SH).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let gate = work.join("release");
    let sub = |nodes: u32, name: &str| {
        let dir = work.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        pool.submit_job(
            &dir,
            &format!(
                "universe = parallel\nmachine_count = {nodes}\nexecutable = {}\narguments = {}\n\
                 log = job.log\nrequest_disk = 1024\nshould_transfer_files = NO\nqueue\n",
                path.display(),
                gate.display()
            ),
        )
    };
    // two of the three slots run a job that waits for the gate
    let first = sub(2, "first");
    wait_for("the first job to run", Duration::from_secs(60), || {
        pool.ok(&["q", &first, "-af", "JobStatus"]).trim() == "2"
    });
    // a 3-node job at the head, then a 1-node job that would fit the free slot
    let big = sub(3, "big");
    let small = sub(1, "small");
    // several passes later the small job still waits behind the big one
    pool.wait_for_cycles(
        "cycles with the big job waiting",
        3,
        Duration::from_secs(30),
        |_| true,
    );
    let row = pool.ok(&["q", &small, "-af", "JobStatus"]);
    assert_eq!(row.trim(), "1", "the small job ran ahead of the FIFO head");
    std::fs::write(&gate, "").unwrap();
    assert_eq!(wait_done(&pool, &first, 60), "4 0");
    assert_eq!(wait_done(&pool, &big, 60), "4 0");
    assert_eq!(wait_done(&pool, &small, 60), "4 0");
    let started = |c: &str| -> i64 {
        pool.ok(&["history", c, "-af", "JobStartDate"])
            .trim()
            .parse()
            .unwrap()
    };
    assert!(started(&big) <= started(&small), "{}", pool.logs());
}

#[test]
fn backfill_runs_on_idle_dedicated_claims_and_is_evicted_for_a_parallel_job() {
    use std::os::unix::fs::PermissionsExt;
    let pool = dedicated_pool("dedicated-backfill", "2", &[]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let path = work.join("until.sh");
    std::fs::write(&path, UNTIL_SH).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    // a parallel job leaves both slots claimed by the dedicated scheduler
    let pdir = work.join("p1");
    std::fs::create_dir_all(&pdir).unwrap();
    let p1 = pool.submit_job(
        &pdir,
        "universe = parallel\nmachine_count = 2\nexecutable = /bin/true\n\
         request_disk = 1024\nqueue\n",
    );
    assert_eq!(wait_done(&pool, &p1, 60), "4 0");
    // an ordinary job runs on one of the idle dedicated claims
    let vdir = work.join("v");
    std::fs::create_dir_all(&vdir).unwrap();
    let gate = work.join("never");
    let vanilla = pool.submit_job(
        &vdir,
        &format!(
            "executable = {}\narguments = {}\nlog = job.log\nrequest_disk = 1024\n\
             should_transfer_files = NO\nqueue\n",
            path.display(),
            gate.display()
        ),
    );
    wait_for("the backfill job to run", Duration::from_secs(60), || {
        pool.ok(&["q", &vanilla, "-af", "JobStatus"]).trim() == "2"
    });
    // a parallel job needing both slots takes the claim back and runs
    let p2dir = work.join("p2");
    std::fs::create_dir_all(&p2dir).unwrap();
    let p2 = pool.submit_job(
        &p2dir,
        "universe = parallel\nmachine_count = 2\nexecutable = /bin/true\n\
         log = job.log\nrequest_disk = 1024\nqueue\n",
    );
    assert_eq!(wait_done(&pool, &p2, 60), "4 0", "{}", pool.logs());
    let text = std::fs::read_to_string(vdir.join("job.log")).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("004 ")),
        "the backfill job was not evicted: {text}"
    );
    wait_for(
        "the backfill job to run again",
        Duration::from_secs(60),
        || pool.ok(&["q", &vanilla, "-af", "JobStatus"]).trim() == "2",
    );
}

/// A node across hosts: on the job's first run (no `JobRunCount` yet in
/// its ad) it says where it runs and sleeps; on a later run it says so and
/// exits.
const HOST_NODE_SH: &str = r#"#!/bin/sh
if grep -Eq 'JobRunCount *= *[1-9]' "$_CONDOR_JOB_AD"; then
  echo "node $_CONDOR_PROCNO of $_CONDOR_NPROCS ran again on $(hostname)"
  exit 0
fi
echo "node $_CONDOR_PROCNO on $(hostname)" >> "$1"
exec sleep 300
"#;

#[test]
fn a_job_across_three_hosts_restarts_whole_when_one_host_crashes() {
    use common::multihost::{chown_to_submitter, MultiPool, Role};
    use std::os::unix::fs::PermissionsExt;
    const CM: Role = Role::CentralManager;
    const SUBMIT: Role = Role::Submit;
    const EXEC: Role = Role::Execute;
    let mut pool = MultiPool::new(
        "dedicated-hosts",
        &[&[CM], &[SUBMIT], &[EXEC], &[EXEC], &[EXEC]],
        &[],
    );
    // every execute host is dedicated to the submit host's schedd
    let ds = format!("\"DedicatedScheduler@{}\"", pool.hosts.name(2));
    pool.add_knob("DedicatedScheduler", &ds);
    pool.add_knob("STARTD_ATTRS", "DedicatedScheduler");
    pool.add_knob(
        "START",
        "(Scheduler =?= $(DedicatedScheduler)) || (TARGET.JobUniverse =!= 11)",
    );
    pool.add_knob("RANK", "Scheduler =?= $(DedicatedScheduler)");
    pool.add_knob("SUSPEND", "False");
    pool.add_knob("WANT_SUSPEND", "False");
    pool.add_knob("PREEMPT", "False");
    pool.join_all(&[]);
    pool.wait_ready();

    let dir = pool.work_dir("hosts");
    let script = dir.join("node.sh");
    std::fs::write(&script, HOST_NODE_SH).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    chown_to_submitter(&script);
    let runs = dir.join("runs");
    // one node on each execute host (a section per node)
    let mut text = format!(
        "universe = parallel\nexecutable = node.sh\narguments = {}\noutput = out.$(Node)\n\
         log = job.log\nshould_transfer_files = YES\nwhen_to_transfer_output = ON_EXIT\n\
         request_disk = 1024\nmachine_count = 1\njob_lease_duration = 6\n\
         +ParallelShutdownPolicy = \"WAIT_FOR_ALL\"\n",
        runs.display()
    );
    for h in 3..=5 {
        text.push_str(&format!(
            "requirements = Machine == \"{}\"\nqueue\n",
            pool.hosts.name(h)
        ));
    }
    let cluster = pool.submit(&dir, &text);
    let started = || std::fs::read_to_string(&runs).unwrap_or_default();
    pool.wait_for("every node running", 60, || started().lines().count() == 3);
    let mut hosts: Vec<String> = started()
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect();
    hosts.sort();
    let want: Vec<String> = (3..=5).map(|h| pool.hosts.name(h)).collect();
    assert_eq!(hosts, want, "{}", started());
    let row = pool.q(&[&cluster, "-af", "JobStatus", "RemoteHosts"]);
    assert!(row.starts_with("2 "), "{row}");

    // host 5 dies: once the node's lease is over (the schedd waits that
    // long for it to come back), every node stops and the job goes back to
    // idle
    pool.hosts.crash(5);
    pool.wait_for("the job back to idle", 60, || {
        pool.q(&[&format!("{cluster}.0"), "-af", "JobStatus"])
            .trim()
            == "1"
    });
    for h in [3, 4] {
        pool.wait_for(&format!("no node left on host {h}"), 30, || {
            pool.hosts.pids(h).iter().all(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .map(|c| !c.starts_with("sleep\x00300"))
                    .unwrap_or(true)
            })
        });
    }
    // the host comes back; the job runs again on all three and completes
    pool.start_host(5);
    pool.wait_for("the job done", 120, || {
        pool.q(&[&cluster, "-af", "ClusterId"]).trim().is_empty()
    });
    for k in 0..3 {
        let out = std::fs::read_to_string(dir.join(format!("out.{k}"))).unwrap_or_default();
        assert!(
            out.starts_with(&format!("node {k} of 3 ran again on ")),
            "node {k}: {out}\n{}",
            pool.logs()
        );
    }
    let log = std::fs::read_to_string(dir.join("job.log")).unwrap();
    let count = |head: &str| log.lines().filter(|l| l.starts_with(head)).count();
    // every node of the first run reported its start before the crash;
    // in the second run a node whose start report comes after node 0 has
    // ended the job gets no 014 (docs/parallel.md, "Not yet")
    let first_run: String = log.split("\n004 ").next().unwrap_or_default().to_string();
    assert_eq!(
        first_run.lines().filter(|l| l.starts_with("014 ")).count(),
        3,
        "{log}"
    );
    assert!(count("014 ") >= 4, "{log}");
    assert!(count("005 ") >= 1, "{log}");
}

/// Node 0 exits at once; the others a moment later, each with its number
/// as exit status.
const STAGGERED_SH: &str = r#"#!/bin/sh
[ "$_CONDOR_PROCNO" = 0 ] || sleep 2
echo "node $_CONDOR_PROCNO done"
exit "$_CONDOR_PROCNO"
"#;

#[test]
fn wait_for_all_ends_the_job_when_every_node_has_exited() {
    use std::os::unix::fs::PermissionsExt;
    let pool = dedicated_pool("dedicated-waitall", "3", &[]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let path = work.join("node.sh");
    std::fs::write(&path, STAGGERED_SH).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cluster = pool.submit_job(
        &work,
        "universe = parallel\nmachine_count = 3\nexecutable = node.sh\n\
         +ParallelShutdownPolicy = \"WAIT_FOR_ALL\"\n\
         output = out.$(Node)\nlog = job.log\nrequest_disk = 1024\nqueue\n",
    );
    // node 0's exit does not end the job: the others finish their work
    assert_eq!(wait_done(&pool, &cluster, 60), "4 0", "{}", pool.logs());
    for k in 0..3 {
        let out = std::fs::read_to_string(work.join(format!("out.{k}"))).unwrap_or_default();
        assert_eq!(out.trim(), format!("node {k} done"), "{}", pool.logs());
    }
    let text = std::fs::read_to_string(work.join("job.log")).unwrap();
    let count = |head: &str| text.lines().filter(|l| l.starts_with(head)).count();
    assert_eq!(count("015 "), 3, "{text}");
    assert_eq!(count("005 "), 1, "{text}");
}
