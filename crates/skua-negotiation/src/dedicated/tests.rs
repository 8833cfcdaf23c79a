use super::*;
use classad::parse_ad;

const DS: &str = "DedicatedScheduler@submit.example.org";
const NOW: i64 = 1_700_000_000;

fn ev() -> Evaluator {
    crate::evaluator(NOW, classad::time::utc_zone)
}

fn slot(host: usize, n: usize, extra: &str) -> ClassAd {
    parse_ad(&format!(
        "[ Name = \"slot{n}@host{host}\"; Machine = \"host{host}\"; Cpus = 1; Memory = 1024; \
           DedicatedScheduler = \"{DS}\"; Start = Scheduler =?= \"{DS}\" || true; Requirements = Start; {extra} ]"
    ))
    .expect("slot ad")
}

fn claim(id: &str, host: usize, state: ClaimUse) -> HeldClaim {
    HeldClaim {
        id: id.to_string(),
        slot: slot(host, 1, ""),
        state,
    }
}

fn idle(id: &str, host: usize) -> HeldClaim {
    claim(id, host, ClaimUse::Idle { since: NOW - 10 })
}

fn job(cluster: u32, counts: &[(u32, &str)]) -> ParallelJob {
    ParallelJob {
        cluster,
        procs: counts
            .iter()
            .enumerate()
            .map(|(i, (count, req))| NodeGroup {
                proc: i as u32,
                ad: parse_ad(&format!(
                    "[ JobUniverse = 11; Scheduler = \"{DS}\"; MinHosts = {count}; MaxHosts = {count}; Requirements = {req} ]"
                ))
                .expect("job ad"),
                count: *count,
            })
            .collect(),
    }
}

fn fifo() -> DedicatedPolicy {
    DedicatedPolicy::default()
}

#[test]
fn a_job_starts_only_when_every_node_has_an_idle_claim() {
    let claims = vec![idle("c1", 1), idle("c2", 2)];
    let plan = schedule(&[job(7, &[(3, "true")])], &claims, &fifo(), NOW, &mut ev());
    assert!(plan.starts.is_empty(), "2 claims for 3 nodes: no start");
    assert_eq!(
        plan.requests,
        vec![NodeRequest {
            cluster: 7,
            proc: 0,
            count: 1
        }]
    );
    assert_eq!(
        plan.waiting,
        vec![(
            7,
            WaitReason::AcquiringClaims {
                matched: 2,
                needed: 3,
                acquiring: 0
            }
        )]
    );
    // The two claims held for it may run backfill meanwhile, and are not
    // released.
    assert_eq!(plan.backfill, vec!["c1".to_string(), "c2".to_string()]);

    let claims = vec![idle("c1", 1), idle("c2", 2), idle("c3", 3)];
    let plan = schedule(&[job(7, &[(3, "true")])], &claims, &fifo(), NOW, &mut ev());
    assert_eq!(plan.starts.len(), 1);
    let nodes: Vec<u32> = plan.starts[0].nodes.iter().map(|n| n.node).collect();
    assert_eq!(nodes, vec![0, 1, 2]);
    let mut used: Vec<&str> = plan.starts[0]
        .nodes
        .iter()
        .map(|n| n.claim.as_str())
        .collect();
    used.sort();
    assert_eq!(used, vec!["c1", "c2", "c3"]);
    assert!(plan.requests.is_empty() && plan.backfill.is_empty());
}

#[test]
fn nodes_are_numbered_across_procs_and_each_proc_gets_slots_it_accepts() {
    // Proc 0 (1 node) wants host 3; proc 1 (2 nodes) anything. A greedy
    // pick of host 3 for proc 1 would leave proc 0 without a slot.
    let claims = vec![idle("c3", 3), idle("c1", 1), idle("c2", 2)];
    let j = job(4, &[(1, "TARGET.Machine == \"host3\""), (2, "true")]);
    let plan = schedule(&[j], &claims, &fifo(), NOW, &mut ev());
    assert_eq!(plan.starts.len(), 1, "{plan:?}");
    let nodes = &plan.starts[0].nodes;
    assert_eq!(
        nodes[0],
        NodeAssignment {
            node: 0,
            proc: 0,
            claim: "c3".into()
        }
    );
    assert_eq!((nodes[1].node, nodes[1].proc), (1, 1));
    assert_eq!((nodes[2].node, nodes[2].proc), (2, 1));
}

#[test]
fn fifo_keeps_later_small_jobs_from_starving_the_head() {
    // Four idle claims; a 6-node job at the head, then two 1-node jobs.
    let claims: Vec<HeldClaim> = (0..4).map(|i| idle(&format!("c{i}"), i)).collect();
    let jobs = [
        job(1, &[(6, "true")]),
        job(2, &[(1, "true")]),
        job(3, &[(1, "true")]),
    ];
    let plan = schedule(&jobs, &claims, &fifo(), NOW, &mut ev());
    assert!(
        plan.starts.is_empty(),
        "nothing starts ahead of the head: {plan:?}"
    );
    assert_eq!(
        plan.requests,
        vec![NodeRequest {
            cluster: 1,
            proc: 0,
            count: 2
        }],
        "only the head asks for machines"
    );
    assert_eq!(plan.waiting[1], (2, WaitReason::BehindFifoHead { head: 1 }));
    assert_eq!(plan.waiting[2], (3, WaitReason::BehindFifoHead { head: 1 }));

    // Once six claims are held, the head starts first, and the small jobs
    // wait for the next free claims.
    let claims: Vec<HeldClaim> = (0..6).map(|i| idle(&format!("c{i}"), i)).collect();
    let plan = schedule(&jobs, &claims, &fifo(), NOW, &mut ev());
    assert_eq!(plan.starts.len(), 1);
    assert_eq!(plan.starts[0].cluster, 1);
    assert_eq!(plan.starts[0].nodes.len(), 6);
    assert_eq!(
        plan.requests,
        vec![NodeRequest {
            cluster: 2,
            proc: 0,
            count: 1
        },],
        "the next job becomes the head and asks"
    );
    assert_eq!(plan.waiting[1], (3, WaitReason::BehindFifoHead { head: 2 }));
}

#[test]
fn best_fit_lets_later_jobs_use_claims_the_blocked_one_cannot() {
    let claims: Vec<HeldClaim> = (0..4).map(|i| idle(&format!("c{i}"), i)).collect();
    let jobs = [job(1, &[(6, "true")]), job(2, &[(1, "true")])];
    let policy = DedicatedPolicy {
        use_fifo: false,
        ..fifo()
    };
    let plan = schedule(&jobs, &claims, &policy, NOW, &mut ev());
    // The big job cannot start and keeps nothing: the small one starts
    // ahead of it (the starvation FIFO prevents).
    assert_eq!(plan.starts.len(), 1);
    assert_eq!(plan.starts[0].cluster, 2);
    assert_eq!(
        plan.requests,
        vec![NodeRequest {
            cluster: 1,
            proc: 0,
            count: 2
        }]
    );
    assert_eq!(plan.backfill.len(), 3);
}

#[test]
fn backfilled_claims_are_taken_back_only_when_the_job_can_then_start() {
    let claims = vec![
        idle("c0", 0),
        claim("c1", 1, ClaimUse::Backfill { job: (50, 0) }),
        claim("c2", 2, ClaimUse::Backfill { job: (51, 0) }),
    ];
    // A 4-node job cannot start even with every claim: nothing is evicted.
    let plan = schedule(&[job(9, &[(4, "true")])], &claims, &fifo(), NOW, &mut ev());
    assert!(plan.take_back.is_empty(), "{plan:?}");
    assert_eq!(plan.requests[0].count, 1);

    // A 2-node job: the idle claim plus one backfilled one; only one
    // vanilla job is evicted.
    let plan = schedule(&[job(9, &[(2, "true")])], &claims, &fifo(), NOW, &mut ev());
    assert!(plan.starts.is_empty());
    assert_eq!(plan.take_back.len(), 1);
    assert_eq!(
        plan.waiting,
        vec![(9, WaitReason::TakingBack { vacating: 1 })]
    );
    assert!(plan.requests.is_empty());
    assert!(
        !plan.backfill.contains(&"c0".to_string()),
        "the idle claim kept for the job must not get a new backfill job"
    );

    // Next pass: the evicted one is vacating; no second eviction.
    let taken = plan.take_back[0].clone();
    let claims2: Vec<HeldClaim> = claims
        .iter()
        .cloned()
        .map(|mut c| {
            if c.id == taken {
                c.state = ClaimUse::Vacating;
            }
            c
        })
        .collect();
    let plan = schedule(&[job(9, &[(2, "true")])], &claims2, &fifo(), NOW, &mut ev());
    assert!(plan.take_back.is_empty(), "{plan:?}");
    assert_eq!(
        plan.waiting,
        vec![(9, WaitReason::TakingBack { vacating: 1 })]
    );

    // Then idle: the job starts on the two idle claims.
    let claims3: Vec<HeldClaim> = claims2
        .into_iter()
        .map(|mut c| {
            if c.state == ClaimUse::Vacating {
                c.state = ClaimUse::Idle { since: NOW };
            }
            c
        })
        .collect();
    let plan = schedule(&[job(9, &[(2, "true")])], &claims3, &fifo(), NOW, &mut ev());
    assert_eq!(plan.starts.len(), 1);
    assert!(plan.take_back.is_empty());
}

#[test]
fn idle_claims_are_released_after_the_unused_claim_timeout() {
    let claims = vec![
        claim("old", 1, ClaimUse::Idle { since: NOW - 600 }),
        claim("young", 2, ClaimUse::Idle { since: NOW - 599 }),
        claim("busy", 3, ClaimUse::Parallel { cluster: 5 }),
    ];
    let plan = schedule(&[], &claims, &fifo(), NOW, &mut ev());
    assert_eq!(plan.release, vec!["old".to_string()]);
    assert_eq!(plan.backfill, vec!["young".to_string()]);

    // 0 = kept forever.
    let forever = DedicatedPolicy {
        unused_claim_timeout: 0,
        ..fifo()
    };
    let plan = schedule(&[], &claims, &forever, NOW, &mut ev());
    assert!(plan.release.is_empty());

    // An old claim a waiting job is holding on to is not released.
    let plan = schedule(&[job(1, &[(3, "true")])], &claims, &fifo(), NOW, &mut ev());
    assert!(plan.release.is_empty(), "{plan:?}");
}

#[test]
fn claims_being_acquired_count_against_the_request() {
    let claims = vec![idle("c1", 1), claim("c2", 2, ClaimUse::Acquiring)];
    let plan = schedule(&[job(3, &[(3, "true")])], &claims, &fifo(), NOW, &mut ev());
    assert_eq!(plan.requests[0].count, 1);
    assert_eq!(
        plan.waiting[0].1,
        WaitReason::AcquiringClaims {
            matched: 1,
            needed: 3,
            acquiring: 1
        }
    );
}

#[test]
fn slots_the_job_rejects_or_running_parallel_nodes_are_not_used() {
    let claims = vec![
        idle("c1", 1),
        claim("c2", 2, ClaimUse::Parallel { cluster: 1 }),
        idle("c3", 3),
    ];
    let plan = schedule(
        &[job(2, &[(2, "TARGET.Machine != \"host3\"")])],
        &claims,
        &fifo(),
        NOW,
        &mut ev(),
    );
    assert!(plan.starts.is_empty());
    assert_eq!(plan.requests[0].count, 1);
}

#[test]
fn losing_a_node_stops_every_other_node_and_keeps_their_claims() {
    let nodes = vec![
        RunningNode {
            node: 0,
            claim: "a".into(),
            exited: false,
        },
        RunningNode {
            node: 1,
            claim: "b".into(),
            exited: false,
        },
        RunningNode {
            node: 2,
            claim: "c".into(),
            exited: true,
        },
    ];
    let loss = node_lost(&nodes, 1);
    assert_eq!(loss.kill, vec!["a".to_string()]);
    assert_eq!(loss.keep, vec!["a".to_string(), "c".to_string()]);
    assert_eq!(loss.drop, "b");
}

#[test]
fn the_job_ends_with_node_0_or_with_all_nodes_by_policy() {
    let mut nodes = vec![
        RunningNode {
            node: 0,
            claim: "a".into(),
            exited: false,
        },
        RunningNode {
            node: 1,
            claim: "b".into(),
            exited: false,
        },
    ];
    nodes[1].exited = true;
    assert_eq!(node_exited(&nodes, 1, ShutdownPolicy::WaitForNode0), None);
    assert_eq!(node_exited(&nodes, 1, ShutdownPolicy::WaitForAll), None);
    nodes[1].exited = false;
    nodes[0].exited = true;
    assert_eq!(
        node_exited(&nodes, 0, ShutdownPolicy::WaitForNode0),
        Some(vec!["b".to_string()])
    );
    assert_eq!(node_exited(&nodes, 0, ShutdownPolicy::WaitForAll), None);
    nodes[1].exited = true;
    assert_eq!(
        node_exited(&nodes, 1, ShutdownPolicy::WaitForAll),
        Some(vec![])
    );

    let ad = parse_ad("[ ParallelShutdownPolicy = \"wait_for_all\" ]").expect("ad");
    assert_eq!(
        ShutdownPolicy::of(&ad, &mut ev()),
        ShutdownPolicy::WaitForAll
    );
    let ad = parse_ad("[ ParallelShutdownPolicy = \"WAIT_FOR_ANY\" ]").expect("ad");
    assert_eq!(
        ShutdownPolicy::of(&ad, &mut ev()),
        ShutdownPolicy::WaitForNode0
    );
}

#[test]
fn the_node_request_ad_asks_for_one_dedicated_slot_not_already_ours() {
    let j = job(1, &[(4, "TARGET.Memory >= 512")]);
    let ad = node_request_ad(&j.procs[0].ad, DS);
    let mut e = ev();
    assert_eq!(e.eval_attr("MaxHosts", &ad, None).as_int(), Some(1));
    assert_eq!(e.eval_attr("MinHosts", &ad, None).as_int(), Some(1));
    assert_eq!(e.eval_attr("CurrentHosts", &ad, None).as_int(), Some(0));
    assert!(fits(&mut e, &ad, &slot(1, 1, "")));
    let not_dedicated = parse_ad("[ Memory = 1024; Requirements = true ]").expect("ad");
    assert!(!fits(&mut e, &ad, &not_dedicated));
    let ours = slot(1, 1, &format!("RemoteOwner = \"{DS}\";"));
    assert!(!fits(&mut e, &ad, &ours));
    let small = parse_ad(&format!(
        "[ Memory = 100; DedicatedScheduler = \"{DS}\"; Requirements = true ]"
    ))
    .expect("ad");
    assert!(!fits(&mut e, &ad, &small));
}

#[test]
fn dedicated_matches_counts_only_this_schedulers_slots() {
    let j = job(1, &[(2, "TARGET.Memory >= 2048")]);
    let slots = vec![
        slot(1, 1, ""),
        parse_ad("[ Memory = 4096; Requirements = true ]").expect("ad"),
        parse_ad(&format!(
            "[ Memory = 4096; DedicatedScheduler = \"{DS}\"; Requirements = true ]"
        ))
        .expect("ad"),
    ];
    assert_eq!(
        dedicated_matches(&j.procs[0].ad, &slots, DS, &mut ev()),
        (2, 1)
    );
}

#[test]
fn the_analysis_says_why_a_parallel_job_waits() {
    let slots: Vec<ClassAd> = (0..3).map(|h| slot(h, 1, "")).collect();
    let j = job(5, &[(4, "true")]);
    let a = analyze_parallel(&j.procs[0].ad, &slots, &[], &mut ev());
    assert_eq!((a.nodes, a.dedicated, a.matching), (4, 3, 3));
    assert!(
        a.describe()[2].starts_with("Not enough dedicated machines match"),
        "{a:?}"
    );

    let j = job(5, &[(2, "true")]);
    let a = analyze_parallel(&j.procs[0].ad, &slots, &[3, 2], &mut ev());
    assert_eq!(a.fifo_head, Some(2));
    assert!(
        a.describe()[2].contains("behind parallel job 2"),
        "{:?}",
        a.describe()
    );

    let a = analyze_parallel(&j.procs[0].ad, &slots, &[], &mut ev());
    assert!(
        a.describe()[2].contains("all 2 nodes are claimed"),
        "{:?}",
        a.describe()
    );

    let none = parse_ad("[ JobUniverse = 11; MaxHosts = 2; Requirements = true ]").expect("ad");
    let a = analyze_parallel(&none, &slots, &[], &mut ev());
    assert_eq!(a.scheduler, None);
    assert!(a.describe()[0].contains("names no dedicated scheduler"));
}

#[test]
fn the_knobs_default_to_htcondors_values_and_bad_ones_are_named() {
    let p = DedicatedPolicy::from_knobs(|_| None).expect("defaults");
    assert!(p.use_fifo);
    assert_eq!(p.unused_claim_timeout, 600);
    let p = DedicatedPolicy::from_knobs(|k| match k {
        "DEDICATED_SCHEDULER_USE_FIFO" => Some("False".into()),
        "UNUSED_CLAIM_TIMEOUT" => Some("0".into()),
        _ => None,
    })
    .expect("valid");
    assert!(!p.use_fifo);
    assert_eq!(p.unused_claim_timeout, 0);
    let e = DedicatedPolicy::from_knobs(|k| (k == "UNUSED_CLAIM_TIMEOUT").then(|| "-5".into()))
        .unwrap_err();
    assert!(
        e.to_string().starts_with("UNUSED_CLAIM_TIMEOUT: `-5`"),
        "{e}"
    );
    let e = DedicatedPolicy::from_knobs(|k| {
        (k == "DEDICATED_SCHEDULER_USE_FIFO").then(|| "maybe".into())
    })
    .unwrap_err();
    assert!(
        e.to_string().starts_with("DEDICATED_SCHEDULER_USE_FIFO"),
        "{e}"
    );
}

#[test]
fn a_node_ad_has_its_number_and_the_whole_jobs_context() {
    let proc_ad = parse_ad(
        "[ JobUniverse = 11; Arguments = \"rank #pArAlLeLnOdE# of 3\"; Out = \"out.#pArAlLeLnOdE#\"; MaxHosts = 3 ]",
    )
    .expect("ad");
    let hosts = vec![
        "exec1".to_string(),
        "exec2".to_string(),
        "exec2".to_string(),
    ];
    let ctx = NodeContext {
        nodes: 3,
        spool_dir: "/var/lib/skua/spool/7/parallel",
        hosts: &hosts,
    };
    let ad = node_ad(&proc_ad, 2, &ctx);
    let mut e = ev();
    let s = |e: &mut Evaluator, n: &str| e.eval_attr(n, &ad, None).as_string();
    assert_eq!(s(&mut e, "Arguments").as_deref(), Some("rank 2 of 3"));
    assert_eq!(s(&mut e, "Out").as_deref(), Some("out.2"));
    assert_eq!(e.eval_attr("ParallelNode", &ad, None).as_int(), Some(2));
    assert_eq!(e.eval_attr("CurrentHosts", &ad, None).as_int(), Some(3));
    assert_eq!(
        s(&mut e, "RemoteSpoolDir").as_deref(),
        Some("/var/lib/skua/spool/7/parallel")
    );
    assert_eq!(
        s(&mut e, "ParallelHosts").as_deref(),
        Some("exec1,exec2,exec2")
    );
    // The proc's own ad is untouched.
    assert!(proc_ad.lookup("ParallelNode").is_none());
}
