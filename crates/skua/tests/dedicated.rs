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
