//! Preemption through real daemons: rank preemption (a machine that ranks
//! a group's jobs higher evicts an outsider's job for them), priority
//! preemption (PREEMPTION_REQUIREMENTS true, a user with a better priority
//! evicts), and the thrashing guard (a job that has run less than the
//! configured time is not preempted). The evicted job goes back to Idle.
//!
//! These need the startd's side of claim preemption (a match notice with
//! `preempting` vacates the running claim).

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{job_pool, wait_for, Pool};

fn start_pool(name: &str, extra: &[(&'static str, &'static str)]) -> Pool {
    let mut env = vec![
        ("_CONDOR_MAXJOBRETIREMENTTIME", "0"),
        ("_CONDOR_MACHINEMAXVACATETIME", "2"),
        common::EXECUTE_IN_OTHER_UID_DOMAIN,
    ];
    env.extend_from_slice(extra);
    job_pool(name, "1", &env)
}

/// `Owner JobStatus` per job.
fn states(pool: &Pool) -> Vec<String> {
    let mut v: Vec<String> = pool
        .ok(&["q", "-allusers", "-af", "Owner", "JobStatus"])
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

const LONG: &str = "executable = /bin/sleep\narguments = 600\nrequest_disk = 1000\n";

fn bob_runs(pool: &Pool) {
    let bob = pool.user_token("bob");
    pool.submit_as(&bob, "b.sub", &format!("{LONG}queue\n"));
    wait_for("bob's job running", Duration::from_secs(60), || {
        states(pool) == ["bob 2"]
    });
}

/// Bob runs on the only slot with a poor priority (50); then alice, with a
/// better one, submits under `PREEMPTION_REQUIREMENTS = requirements`.
fn alice_against_bob(name: &str, requirements: &'static str) -> Pool {
    let pool = start_pool(name, &[("_CONDOR_PREEMPTION_REQUIREMENTS", requirements)]);
    let domain = pool.ok(&["config", "get", "UID_DOMAIN"]).trim().to_string();
    bob_runs(&pool);
    pool.ok(&["userprio", "-setprio", &format!("bob@{domain}"), "50"]);
    let alice = pool.user_token("alice");
    pool.submit_as(&alice, "a.sub", &format!("{LONG}queue\n"));
    pool
}

#[test]
fn a_machine_that_ranks_a_group_higher_evicts_an_outsider() {
    let pool = start_pool(
        "rankpre",
        &[("_CONDOR_RANK", "TARGET.Group =?= \"physics\"")],
    );
    bob_runs(&pool);
    let alice = pool.user_token("alice");
    pool.submit_as(
        &alice,
        "a.sub",
        &format!("{LONG}+Group = \"physics\"\nqueue\n"),
    );
    wait_for(
        "alice's job in bob's place",
        Duration::from_secs(90),
        || states(&pool) == ["alice 2", "bob 1"],
    );
    pool.ok(&["rm", "-all"]);
}

#[test]
fn a_user_with_a_better_priority_evicts_when_preemption_requirements_allow() {
    let pool = alice_against_bob("priopre", "RemoteUserPrio > SubmitterUserPrio * 1.2");
    wait_for(
        "alice's job in bob's place",
        Duration::from_secs(90),
        || states(&pool) == ["alice 2", "bob 1"],
    );
    pool.ok(&["rm", "-all"]);
}

#[test]
fn the_thrashing_guard_keeps_a_young_job() {
    let pool = alice_against_bob(
        "guard",
        "(CurrentTime - JobStart) > 3600 && RemoteUserPrio > SubmitterUserPrio * 1.2",
    );
    // Several cycles consider alice's job and reject it: the thrashing
    // guard (bob's job is young) keeps alice from preempting it.
    let cycles = pool.wait_for_cycles(
        "three cycles rejecting alice",
        3,
        Duration::from_secs(60),
        |c| c.rejections > 0,
    );
    assert!(
        cycles.iter().all(|c| c.matches == 0 && c.preemptions == 0),
        "{cycles:?}"
    );
    assert_eq!(states(&pool), ["alice 1", "bob 2"]);
    pool.ok(&["rm", "-all"]);
}
