//! The scheduler and local universes' queue rules: never offered to the
//! negotiator, started by the schedd's own start test.

#![allow(clippy::unwrap_used)]

use classad::{parse_ad, parse_expr, ClassAd, Evaluator};
use skua_queue::local::{
    may_start, submit_host_universe, SubmitHostRunning, SubmitHostUniverse,
    DEFAULT_START_LOCAL_UNIVERSE, DEFAULT_START_SCHEDULER_UNIVERSE,
};
use skua_queue::{JobId, Queue, Txn};

const NOW: i64 = 1_800_000_000;
const HOST: &str = "<127.0.0.1:9618>";

fn job(universe: i64, extra: &str) -> ClassAd {
    parse_ad(&format!(
        "[Cmd = \"/bin/true\"; JobUniverse = {universe}; RequestCpus = 1; \
          Requirements = true; {extra}]"
    ))
    .unwrap()
}

fn commit(q: &mut Queue, txn: &Txn) {
    q.apply(&txn.mutations).unwrap();
}

fn submit(q: &mut Queue, ads: Vec<ClassAd>) -> u32 {
    let c = q.next_cluster_id();
    let r = q.reserve_cluster_id();
    commit(q, &r);
    let txn = q.plan_submit(c, ads, "alice", NOW, HOST).unwrap();
    commit(q, &txn);
    c
}

#[test]
fn universes_are_told_apart() {
    assert_eq!(
        submit_host_universe(&job(7, "")),
        Some(SubmitHostUniverse::Scheduler)
    );
    assert_eq!(
        submit_host_universe(&job(12, "")),
        Some(SubmitHostUniverse::Local)
    );
    for other in [5, 9, 10, 11, 13] {
        assert_eq!(submit_host_universe(&job(other, "")), None);
    }
}

#[test]
fn submit_host_jobs_are_never_offered_to_the_negotiator() {
    let mut q = Queue::new();
    let c = submit(&mut q, vec![job(7, ""), job(5, ""), job(12, "")]);
    let mut ev = Evaluator::default();
    assert_eq!(
        q.idle_jobs_in_order(&mut ev, Some("alice"), None),
        vec![JobId::new(c, 1)]
    );
    let groups = q.autoclusters(&mut ev, "alice", &[], None);
    let offered: Vec<JobId> = groups.into_iter().flat_map(|g| g.jobs).collect();
    assert_eq!(offered, vec![JobId::new(c, 1)]);
    assert_eq!(
        q.submit_host_idle(),
        vec![
            (JobId::new(c, 0), SubmitHostUniverse::Scheduler),
            (JobId::new(c, 2), SubmitHostUniverse::Local)
        ]
    );
}

#[test]
fn running_counts_follow_the_jobs_states() {
    let mut q = Queue::new();
    let c = submit(
        &mut q,
        vec![job(7, ""), job(12, ""), job(12, ""), job(5, "")],
    );
    for p in [0, 1, 3] {
        let txn = q.plan_start(JobId::new(c, p), "local", NOW).unwrap();
        commit(&mut q, &txn);
    }
    assert_eq!(
        q.submit_host_running(),
        SubmitHostRunning {
            scheduler: 1,
            local: 1
        }
    );
    assert_eq!(
        q.submit_host_idle(),
        vec![(JobId::new(c, 2), SubmitHostUniverse::Local)]
    );
    let mut ad = ClassAd::new();
    q.submit_host_running().insert_into(&mut ad);
    assert_eq!(
        skua_queue::int_attr(&ad, "TotalSchedulerJobsRunning"),
        Some(1)
    );
    assert_eq!(skua_queue::int_attr(&ad, "TotalLocalJobsRunning"), Some(1));
}

#[test]
fn the_start_test_needs_the_universe_knob_then_requirements_against_the_schedd_ad() {
    let mut ev = Evaluator::default();
    let sched_start = parse_expr(DEFAULT_START_SCHEDULER_UNIVERSE).unwrap();
    let local_start = parse_expr(DEFAULT_START_LOCAL_UNIVERSE).unwrap();
    let schedd = |sched: i64, local: i64| {
        parse_ad(&format!(
            "[MyType = \"Scheduler\"; Name = \"submit.example\"; \
              TotalSchedulerJobsRunning = {sched}; TotalLocalJobsRunning = {local}]"
        ))
        .unwrap()
    };
    let plain = job(7, "");
    assert!(may_start(&mut ev, &sched_start, &schedd(0, 0), &plain));
    // HTCondor's default limits: 500 scheduler, 200 local jobs at once
    assert!(may_start(&mut ev, &sched_start, &schedd(499, 0), &plain));
    assert!(!may_start(&mut ev, &sched_start, &schedd(500, 0), &plain));
    assert!(may_start(
        &mut ev,
        &local_start,
        &schedd(0, 199),
        &job(12, "")
    ));
    assert!(!may_start(
        &mut ev,
        &local_start,
        &schedd(0, 200),
        &job(12, "")
    ));
    // Requirements see the schedd's ad as TARGET
    let wants_this = job(12, "Requirements = TARGET.Name == \"submit.example\"");
    assert!(may_start(&mut ev, &local_start, &schedd(0, 0), &wants_this));
    let wants_other = job(12, "Requirements = TARGET.Name == \"elsewhere\"");
    assert!(!may_start(
        &mut ev,
        &local_start,
        &schedd(0, 0),
        &wants_other
    ));
    // undefined (an attribute the schedd ad lacks) is no start
    let undefined = job(7, "Requirements = TARGET.Memory > 1024");
    assert!(!may_start(&mut ev, &sched_start, &schedd(0, 0), &undefined));
    // a start expression that is not true is no start
    let never = parse_expr("false").unwrap();
    assert!(!may_start(&mut ev, &never, &schedd(0, 0), &plain));
}
