//! Replaying the committed mutations into a fresh queue rebuilds the same
//! queue, and the mutations survive their serialized form.

// Test helpers unwrap freely: a failure is a test failure.
#![allow(clippy::unwrap_used)]

use classad::{parse_ad, parse_expr, Evaluator};
use proptest::prelude::*;
use skua_queue::userlog::Rusage;
use skua_queue::{Action, Actor, ExitInfo, JobId, Mutation, Queue, Selector, SystemPolicy};

#[derive(Clone, Debug)]
enum Step {
    Submit {
        owner: u8,
        n: u8,
        hold: bool,
    },
    Act {
        action: u8,
        who: u8,
        sel: u8,
        target: u8,
    },
    Edit {
        who: u8,
        target: u8,
        value: i64,
    },
    Periodic {
        dt: u16,
    },
    Run {
        target: u8,
    },
    Exit {
        target: u8,
        code: i8,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..3, 1u8..4, any::<bool>()).prop_map(|(owner, n, hold)| Step::Submit {
            owner,
            n,
            hold
        }),
        (0u8..4, 0u8..4, 0u8..4, any::<u8>()).prop_map(|(action, who, sel, target)| Step::Act {
            action,
            who,
            sel,
            target
        }),
        (0u8..4, any::<u8>(), -5i64..5).prop_map(|(who, target, value)| Step::Edit {
            who,
            target,
            value
        }),
        (0u16..4000).prop_map(|dt| Step::Periodic { dt }),
        any::<u8>().prop_map(|target| Step::Run { target }),
        (any::<u8>(), -2i8..3).prop_map(|(target, code)| Step::Exit { target, code }),
    ]
}

const OWNERS: [&str; 3] = ["alice", "bob", "carol"];

fn actor(who: u8) -> Actor {
    match who {
        3 => Actor::admin("root"),
        w => Actor::user(OWNERS[w as usize % 3]),
    }
}

fn pick(q: &Queue, target: u8) -> Option<JobId> {
    let ids: Vec<JobId> = q.jobs().map(|(id, _)| id).collect();
    if ids.is_empty() {
        None
    } else {
        Some(ids[target as usize % ids.len()])
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn replay_rebuilds_the_same_queue(steps in proptest::collection::vec(step(), 1..40)) {
        let mut q = Queue::new();
        let mut log: Vec<Mutation> = Vec::new();
        let mut now = 1_800_000_000i64;
        let system = SystemPolicy {
            periodic_remove: Some(parse_expr("NumHolds > 2").unwrap()),
            ..SystemPolicy::default()
        };
        let mut ev = Evaluator::default();
        for s in steps {
            now += 7;
            let txn = match s {
                Step::Submit { owner, n, hold } => {
                    let r = q.reserve_cluster_id();
                    let c = q.next_cluster_id();
                    q.apply(&r.mutations).unwrap();
                    log.extend(r.mutations);
                    let ads = (0..n).map(|p| parse_ad(&format!(
                        "[Cmd = \"/bin/true\"; Arguments = \"{p}\"; JobStatus = {}; \
                          PeriodicHold = time() - QDate > 3000; PeriodicRelease = true; \
                          OnExitRemove = ExitCode == 0]",
                        if hold { 5 } else { 1 }
                    )).unwrap()).collect();
                    Some(q.plan_submit(c, ads, OWNERS[owner as usize], now, "<127.0.0.1:1>").unwrap())
                }
                Step::Act { action, who, sel, target } => {
                    let action = [Action::Hold, Action::Release, Action::Remove, Action::RemoveForce][action as usize];
                    let sel = match (sel, pick(&q, target)) {
                        (0, Some(id)) => Selector::Jobs(vec![id]),
                        (1, Some(id)) => Selector::Cluster(id.cluster),
                        (2, _) => Selector::Owner(OWNERS[target as usize % 3].into()),
                        _ => Selector::All,
                    };
                    q.plan_action(action, &sel, &actor(who), now, None).ok().map(|(t, _)| t)
                }
                Step::Edit { who, target, value } => pick(&q, target).and_then(|id| {
                    q.plan_set_attr(&Selector::Jobs(vec![id]), &actor(who), "JobPrio", &value.to_string(), now)
                        .ok()
                        .map(|(t, _)| t)
                }),
                Step::Periodic { dt } => {
                    now += dt as i64;
                    Some(q.plan_periodic(&mut ev, now, &system))
                }
                Step::Run { target } => pick(&q, target)
                    .filter(|id| q.status(*id) == Some(skua_queue::JobStatus::Idle))
                    .map(|id| skua_queue::Txn {
                        mutations: vec![Mutation::SetAttr { id, name: "JobStatus".into(), value: "2".into() }],
                        events: vec![],
                    }),
                Step::Exit { target, code } => pick(&q, target).and_then(|id| {
                    let exit = ExitInfo {
                        exit_code: Some(code as i64),
                        remote_usage: Rusage { user_secs: 3, sys_secs: 1 },
                        ..ExitInfo::default()
                    };
                    q.plan_exit(id, &exit, now).ok()
                }),
            };
            if let Some(txn) = txn {
                q.apply(&txn.mutations).unwrap();
                log.extend(txn.mutations);
            }
            // a cluster exists exactly while it has jobs
            for c in q.clusters() {
                prop_assert!(q.cluster_jobs(c).next().is_some(), "empty cluster {}", c);
            }
        }
        let mut replayed = Queue::new();
        replayed.apply(&log).unwrap();
        prop_assert_eq!(&replayed, &q);
        // and through the serialized form the store keeps
        let text = serde_json::to_string(&log).unwrap();
        let back: Vec<Mutation> = serde_json::from_str(&text).unwrap();
        let mut from_text = Queue::new();
        from_text.apply(&back).unwrap();
        prop_assert_eq!(&from_text, &q);
    }
}
