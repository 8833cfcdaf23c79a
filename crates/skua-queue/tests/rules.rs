//! The queue's rules, table-driven: submit and factoring, authorization,
//! state transitions, qedit, periodic and exit policy, order, counts.

// Test helpers unwrap freely: a failure is a test failure.
#![allow(clippy::unwrap_used)]

use classad::{parse_ad, parse_expr, ClassAd, Evaluator, Expr};
use skua_queue::userlog::Rusage;
use skua_queue::{
    attr, Action, Actor, ExitInfo, JobId, JobStatus, Mutation, Outcome, Queue, QueueError,
    Selector, SubmitContext, SubmitLimits, SystemPolicy, Txn, UserLogEvent,
};

const NOW: i64 = 1_800_000_000;
const HOST: &str = "<127.0.0.1:9618>";

fn job(extra: &str) -> ClassAd {
    parse_ad(&format!(
        "[Cmd = \"/bin/sleep\"; Arguments = \"60\"; RequestCpus = 1; JobUniverse = 5; \
          PeriodicHold = false; PeriodicRelease = false; PeriodicRemove = false; \
          OnExitHold = false; OnExitRemove = true; {extra}]"
    ))
    .unwrap()
}

fn commit(q: &mut Queue, txn: &Txn) {
    q.apply(&txn.mutations).unwrap();
}

/// Submits `n` jobs (ads from `f(proc)`) as `owner`; returns the cluster.
fn submit(q: &mut Queue, owner: &str, n: u32, f: impl Fn(u32) -> ClassAd) -> u32 {
    let c = q.next_cluster_id();
    let r = q.reserve_cluster_id();
    commit(q, &r);
    let txn = q
        .plan_submit(c, (0..n).map(f).collect(), owner, NOW, HOST)
        .unwrap();
    commit(q, &txn);
    c
}

fn int(q: &Queue, id: JobId, name: &str) -> Option<i64> {
    match q.job(id)?.lookup(name)? {
        Expr::Lit(v) => v.as_int(),
        _ => None,
    }
}

fn string(q: &Queue, id: JobId, name: &str) -> Option<String> {
    match q.job(id)?.lookup(name)? {
        Expr::Lit(v) => v.as_string(),
        _ => None,
    }
}

fn set_status(q: &mut Queue, id: JobId, s: JobStatus) {
    q.apply(&[Mutation::SetAttr {
        id,
        name: "JobStatus".into(),
        value: s.code().to_string(),
    }])
    .unwrap();
}

#[test]
fn job_ids_and_statuses() {
    assert_eq!(JobId::new(12, 3).to_string(), "12.3");
    assert_eq!("12.3".parse::<JobId>(), Ok(JobId::new(12, 3)));
    for bad in ["12", "12.", ".3", "a.b", "1.2.3", "-1.0", "99999999999.0"] {
        assert!(bad.parse::<JobId>().is_err(), "{bad}");
    }
    assert!(JobId::new(2, 0) > JobId::new(1, 9));
    let table = [
        (1, 'I', "Idle"),
        (2, 'R', "Running"),
        (3, 'X', "Removed"),
        (4, 'C', "Completed"),
        (5, 'H', "Held"),
        (6, '>', "TransferringOutput"),
        (7, 'S', "Suspended"),
    ];
    for (code, letter, name) in table {
        let s = JobStatus::from_code(code).unwrap();
        assert_eq!((s.code(), s.letter(), s.name()), (code, letter, name));
    }
    assert_eq!(JobStatus::from_code(0), None);
    assert_eq!(JobStatus::from_code(8), None);
}

#[test]
fn submit_factors_common_attributes_into_the_cluster_ad() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", 3, |p| {
        job(&format!("Arguments = \"{p}\"; Owner = \"mallory\""))
    });
    assert_eq!(c, 1);
    assert_eq!(q.next_cluster_id(), 2);
    assert_eq!(q.len(), 3);
    let cluster = q.cluster_ad(c).unwrap();
    for name in [
        "Cmd",
        "RequestCpus",
        "Owner",
        "QDate",
        "ClusterId",
        "MyType",
    ] {
        assert!(cluster.lookup(name).is_some(), "{name} in the cluster ad");
    }
    for name in ["Arguments", "ProcId", "JobStatus", "EnteredCurrentStatus"] {
        assert!(
            cluster.lookup(name).is_none(),
            "{name} not in the cluster ad"
        );
    }
    for p in 0..3 {
        let id = JobId::new(c, p);
        let ad = q.job(id).unwrap();
        assert!(ad.parent_ad().is_some());
        assert_eq!(ad.iter().count(), 4, "{ad}"); // Arguments ProcId JobStatus EnteredCurrentStatus
        assert_eq!(string(&q, id, "Owner").as_deref(), Some("alice"));
        assert_eq!(string(&q, id, "Arguments"), Some(p.to_string()));
        assert_eq!(int(&q, id, "ProcId"), Some(p as i64));
        assert_eq!(int(&q, id, "ClusterId"), Some(c as i64));
        assert_eq!(int(&q, id, "QDate"), Some(NOW));
        assert_eq!(int(&q, id, "JobStatus"), Some(1));
    }
    // a one-job cluster keeps everything but the per-job attributes shared
    let c2 = submit(&mut q, "bob", 1, |_| job(""));
    assert_eq!(q.job(JobId::new(c2, 0)).unwrap().iter().count(), 3);
}

/// Plans a submission of `n` plain jobs as `owner` under `limits` into a
/// freshly reserved cluster; commits it when planned.
fn submit_within(
    q: &mut Queue,
    owner: &str,
    n: u32,
    limits: SubmitLimits,
) -> Result<u32, QueueError> {
    let c = q.next_cluster_id();
    let r = q.reserve_cluster_id();
    commit(q, &r);
    let ctx = SubmitContext {
        owner,
        now: NOW,
        submit_host: HOST,
        limits,
        ..SubmitContext::default()
    };
    let txn = q.plan_submission(c, (0..n).map(|_| job("")).collect(), &ctx)?;
    commit(q, &txn);
    Ok(c)
}

#[test]
fn job_count_limits_refuse_the_whole_submission_and_count_every_queued_job() {
    let per_owner = SubmitLimits {
        max_jobs_per_owner: Some(5),
        ..SubmitLimits::default()
    };
    let mut q = Queue::new();
    let c = submit_within(&mut q, "alice", 3, per_owner).unwrap();
    // held and removed-but-running jobs are still in the queue: they count
    set_status(&mut q, JobId::new(c, 0), JobStatus::Held);
    set_status(&mut q, JobId::new(c, 1), JobStatus::Removed);
    let before = q.clone();
    let e = submit_within(&mut q, "alice", 3, per_owner).unwrap_err();
    let QueueError::LimitExceeded(msg) = &e else {
        panic!("not a limit: {e:?}");
    };
    for part in [
        "MAX_JOBS_PER_OWNER",
        "alice has 3 jobs",
        "adds 3",
        "limit is 5",
    ] {
        assert!(msg.contains(part), "{part:?} missing from {msg:?}");
    }
    // nothing of the refused submission is in the queue
    assert_eq!(q.len(), before.len());
    assert_eq!(q.clusters().count(), 1);
    // exactly up to the limit is fine; another owner has their own count
    submit_within(&mut q, "alice", 2, per_owner).unwrap();
    submit_within(&mut q, "bob", 5, per_owner).unwrap();
    assert!(submit_within(&mut q, "alice", 1, per_owner).is_err());
    assert_eq!(q.owner_job_count("alice"), 5);

    // MAX_JOBS_SUBMITTED counts everybody's jobs
    let total = SubmitLimits {
        max_jobs_submitted: Some(12),
        ..SubmitLimits::default()
    };
    let e = submit_within(&mut q, "carol", 3, total).unwrap_err();
    assert!(
        e.to_string().contains("MAX_JOBS_SUBMITTED")
            && e.to_string().contains("the queue has 10 jobs"),
        "{e}"
    );
    submit_within(&mut q, "carol", 2, total).unwrap();

    // MAX_JOBS_PER_SUBMISSION bounds one submission only
    let one = SubmitLimits {
        max_jobs_per_submission: Some(2),
        ..SubmitLimits::default()
    };
    let e = submit_within(&mut q, "dave", 3, one).unwrap_err();
    assert!(e.to_string().contains("MAX_JOBS_PER_SUBMISSION"), "{e}");
    submit_within(&mut q, "dave", 2, one).unwrap();
    submit_within(&mut q, "dave", 2, one).unwrap();
    assert_eq!(q.owner_job_count("dave"), 4);
}

#[test]
fn attributes_the_schedd_owns_are_its_own_whatever_the_ad_said() {
    let mut q = Queue::new();
    let c = q.next_cluster_id();
    let r = q.reserve_cluster_id();
    commit(&mut q, &r);
    let forged = "User = \"bob@example.org\"; Owner = \"bob\"; ClusterId = 999; ProcId = 7; \
                  QDate = 1; EnteredCurrentStatus = 1; GlobalJobId = \"other#1.0#1\"; \
                  SubmissionId = \"forged\"; TotalSubmitProcs = 100; MyType = \"Machine\"; \
                  JobRunCount = 50; NumJobMatches = 50; NumShadowExceptions = -100; \
                  RemoteHost = \"slot1@elsewhere\"; NumHolds = 9; LastJobStatus = 4; \
                  AuthTokenSubject = \"root@pool\"";
    // once in the shared parent (as `skua submit` sends the common part),
    // once in a job's own part
    let common = parse_ad(&format!("[Cmd = \"/bin/true\"; {forged}]")).unwrap();
    let ads: Vec<ClassAd> = (0..2)
        .map(|p| {
            let mut ad = if p == 0 {
                parse_ad("[Arguments = \"0\"]").unwrap()
            } else {
                parse_ad(&format!("[Arguments = \"1\"; {forged}]")).unwrap()
            };
            ad.chain_to(common.clone());
            ad
        })
        .collect();
    let ctx = SubmitContext {
        owner: "alice",
        now: NOW,
        submit_host: HOST,
        uid_domain: Some("pool.example"),
        schedd_name: Some("sched.example"),
        submission_id: Some("key-1"),
        ..SubmitContext::default()
    };
    let txn = q.plan_submission(c, ads, &ctx).unwrap();
    commit(&mut q, &txn);
    for p in 0..2 {
        let id = JobId::new(c, p);
        assert_eq!(
            string(&q, id, "User").as_deref(),
            Some("alice@pool.example")
        );
        assert_eq!(string(&q, id, "Owner").as_deref(), Some("alice"));
        assert_eq!(int(&q, id, "ClusterId"), Some(c as i64));
        assert_eq!(int(&q, id, "ProcId"), Some(p as i64));
        assert_eq!(int(&q, id, "QDate"), Some(NOW));
        assert_eq!(int(&q, id, "EnteredCurrentStatus"), Some(NOW));
        assert_eq!(
            string(&q, id, "GlobalJobId"),
            Some(format!("sched.example#{c}.{p}#{NOW}"))
        );
        assert_eq!(string(&q, id, "SubmissionId").as_deref(), Some("key-1"));
        assert_eq!(int(&q, id, "TotalSubmitProcs"), Some(2));
        assert_eq!(string(&q, id, "MyType").as_deref(), Some("Job"));
        assert_eq!(string(&q, id, "Cmd").as_deref(), Some("/bin/true"));
        for gone in [
            "JobRunCount",
            "NumJobMatches",
            "NumShadowExceptions",
            "RemoteHost",
            "NumHolds",
            "LastJobStatus",
            "AuthTokenSubject",
        ] {
            assert!(
                q.job(id).unwrap().lookup(gone).is_none(),
                "{gone} kept in job {p}"
            );
        }
    }
    // without a UID domain or a key the forged values are still gone
    let c = q.next_cluster_id();
    let r = q.reserve_cluster_id();
    commit(&mut q, &r);
    let txn = q
        .plan_submit(
            c,
            vec![parse_ad(&format!("[{forged}]")).unwrap()],
            "alice",
            NOW,
            HOST,
        )
        .unwrap();
    commit(&mut q, &txn);
    let id = JobId::new(c, 0);
    for gone in ["User", "GlobalJobId", "SubmissionId"] {
        assert!(q.job(id).unwrap().lookup(gone).is_none(), "{gone} kept");
    }
    assert_eq!(string(&q, id, "Owner").as_deref(), Some("alice"));
}

#[test]
fn submit_events_hold_and_refusals() {
    let mut q = Queue::new();
    let c = q.next_cluster_id();
    // not reserved
    let e = q
        .plan_submit(c, vec![job("")], "alice", NOW, HOST)
        .unwrap_err();
    assert!(matches!(e, QueueError::Conflict(_)), "{e}");
    let r = q.reserve_cluster_id();
    commit(&mut q, &r);
    assert!(matches!(
        q.plan_submit(c, vec![], "alice", NOW, HOST),
        Err(QueueError::BadRequest(_))
    ));
    assert!(matches!(
        q.plan_submit(0, vec![job("")], "alice", NOW, HOST),
        Err(QueueError::Conflict(_))
    ));
    let txn = q
        .plan_submit(c, vec![job(""), job("JobStatus = 5")], "alice", NOW, HOST)
        .unwrap();
    assert_eq!(
        txn.events,
        vec![
            (JobId::new(c, 0), UserLogEvent::Submit { host: HOST.into() }),
            (JobId::new(c, 1), UserLogEvent::Submit { host: HOST.into() }),
        ]
    );
    commit(&mut q, &txn);
    // a parallel cluster is one job: one submit event, for its first proc
    let pc = q.next_cluster_id();
    let r = q.reserve_cluster_id();
    commit(&mut q, &r);
    let par = |n: u32| job(&format!("JobUniverse = 11; MinHosts = {n}; MaxHosts = {n}"));
    let ptxn = q
        .plan_submit(pc, vec![par(1), par(3)], "alice", NOW, HOST)
        .unwrap();
    assert_eq!(
        ptxn.events,
        vec![(
            JobId::new(pc, 0),
            UserLogEvent::Submit { host: HOST.into() }
        )]
    );
    assert_eq!(
        ptxn.mutations
            .iter()
            .filter(|m| matches!(m, Mutation::NewJob { .. }))
            .count(),
        2
    );
    // in use
    assert!(matches!(
        q.plan_submit(c, vec![job("")], "alice", NOW, HOST),
        Err(QueueError::Conflict(_))
    ));
    let held = JobId::new(c, 1);
    assert_eq!(q.status(held), Some(JobStatus::Held));
    assert_eq!(int(&q, held, "HoldReasonCode"), Some(15));
    assert_eq!(int(&q, held, "HoldReasonSubCode"), Some(0));
    assert!(string(&q, held, "HoldReason").is_some());
    assert_eq!(q.status(JobId::new(c, 0)), Some(JobStatus::Idle));
    // a user may release a job submitted on hold
    let (txn, rep) = q
        .plan_action(
            Action::Release,
            &Selector::Jobs(vec![held]),
            &Actor::user("alice"),
            NOW,
            None,
        )
        .unwrap();
    assert_eq!(rep.done(), vec![held]);
    commit(&mut q, &txn);
    assert_eq!(q.status(held), Some(JobStatus::Idle));
    assert_eq!(int(&q, held, "LastHoldReasonCode"), Some(15));
    assert_eq!(int(&q, held, "HoldReasonCode"), None);
}

/// Alice owns cluster 1 (two jobs), Bob cluster 2 (one job).
fn two_users() -> Queue {
    let mut q = Queue::new();
    submit(&mut q, "alice", 2, |_| job(""));
    submit(&mut q, "bob", 1, |_| job(""));
    q
}

#[test]
fn authorization_between_two_users_and_an_admin() {
    let q = two_users();
    let alice = Actor::user("alice");
    let bob = Actor::user("bob");
    let root = Actor::admin("root");
    let a0 = JobId::new(1, 0);
    let b0 = JobId::new(2, 0);
    // (selector, actor, Ok(jobs acted on) or Err)
    type Case<'a> = (Selector, &'a Actor, Result<Vec<JobId>, ()>);
    let cases: Vec<Case> = vec![
        (Selector::Jobs(vec![a0]), &alice, Ok(vec![a0])),
        (Selector::Jobs(vec![a0, b0]), &alice, Err(())),
        (Selector::Jobs(vec![b0]), &alice, Err(())),
        (Selector::Cluster(2), &alice, Err(())),
        (Selector::Cluster(1), &alice, Ok(vec![a0, JobId::new(1, 1)])),
        (Selector::Owner("bob".into()), &alice, Err(())),
        (
            Selector::Owner("alice".into()),
            &alice,
            Ok(vec![a0, JobId::new(1, 1)]),
        ),
        (Selector::All, &bob, Ok(vec![b0])),
        (
            Selector::Constraint(parse_expr("ProcId == 0").unwrap()),
            &bob,
            Ok(vec![b0]),
        ),
        (
            Selector::Union(vec![Selector::Cluster(1), Selector::Jobs(vec![b0])]),
            &alice,
            Err(()),
        ),
        (Selector::Jobs(vec![b0]), &root, Ok(vec![b0])),
        (Selector::All, &root, Ok(vec![a0, JobId::new(1, 1), b0])),
        (
            Selector::Constraint(parse_expr("ProcId == 0").unwrap()),
            &root,
            Ok(vec![a0, b0]),
        ),
    ];
    for (sel, who, want) in cases {
        let got = q.plan_action(Action::Hold, &sel, who, NOW, None);
        match (got, want) {
            (Ok((txn, rep)), Ok(ids)) => {
                assert_eq!(rep.done(), ids, "{sel:?} by {}", who.name);
                let mut q2 = q.clone();
                commit(&mut q2, &txn);
                for id in ids {
                    assert_eq!(q2.status(id), Some(JobStatus::Held));
                }
            }
            (Err(QueueError::PermissionDenied(_)), Err(())) => {}
            (got, want) => panic!("{sel:?} by {}: got {got:?}, want {want:?}", who.name),
        }
    }
    // the same rules for qedit
    assert!(matches!(
        q.plan_set_attr(&Selector::Jobs(vec![b0]), &alice, "Foo", "1", NOW),
        Err(QueueError::PermissionDenied(_))
    ));
    let (_, n) = q
        .plan_set_attr(&Selector::All, &alice, "Foo", "1", NOW)
        .unwrap();
    assert_eq!(n, 2);
}

#[test]
fn state_transitions() {
    use JobStatus::*;
    // (action, from, outcome, resulting status or None when it left the queue)
    let table: Vec<(Action, JobStatus, Outcome, Option<JobStatus>)> = vec![
        (Action::Hold, Idle, Outcome::Done, Some(Held)),
        (Action::Hold, Running, Outcome::Done, Some(Held)),
        (Action::Hold, Suspended, Outcome::Done, Some(Held)),
        (Action::Hold, Held, Outcome::WrongState(Held), Some(Held)),
        (
            Action::Hold,
            Removed,
            Outcome::WrongState(Removed),
            Some(Removed),
        ),
        (
            Action::Hold,
            Completed,
            Outcome::WrongState(Completed),
            Some(Completed),
        ),
        (Action::Release, Held, Outcome::Done, Some(Idle)),
        (Action::Release, Idle, Outcome::WrongState(Idle), Some(Idle)),
        (
            Action::Release,
            Running,
            Outcome::WrongState(Running),
            Some(Running),
        ),
        (Action::Remove, Idle, Outcome::Done, None),
        (Action::Remove, Held, Outcome::Done, None),
        (Action::Remove, Running, Outcome::Done, Some(Removed)),
        (Action::Remove, Suspended, Outcome::Done, Some(Removed)),
        (
            Action::Remove,
            Removed,
            Outcome::WrongState(Removed),
            Some(Removed),
        ),
        // a completed job kept in the queue (LeaveJobInQueue) leaves it
        (Action::Remove, Completed, Outcome::Done, None),
        (Action::RemoveForce, Completed, Outcome::Done, None),
        (Action::RemoveForce, Running, Outcome::Done, None),
        (Action::RemoveForce, Removed, Outcome::Done, None),
        (Action::RemoveForce, Idle, Outcome::Done, None),
    ];
    for (action, from, outcome, to) in table {
        let mut q = Queue::new();
        let c = submit(&mut q, "alice", 2, |_| job(""));
        let id = JobId::new(c, 0);
        set_status(&mut q, id, from);
        let (txn, rep) = q
            .plan_action(
                action,
                &Selector::Jobs(vec![id]),
                &Actor::user("alice"),
                NOW + 5,
                Some("testing"),
            )
            .unwrap();
        assert_eq!(
            rep.entries[0].jobs,
            vec![(id, outcome)],
            "{action:?} from {from:?}"
        );
        commit(&mut q, &txn);
        assert_eq!(q.status(id), to, "{action:?} from {from:?}");
        let events: Vec<u32> = txn.events.iter().map(|(_, e)| e.number()).collect();
        let want_event = match (outcome, action, from) {
            (Outcome::WrongState(_), _, _) => vec![],
            (_, Action::Hold, _) => vec![12],
            (_, Action::Release, _) => vec![13],
            (_, Action::RemoveForce, Removed) => vec![],
            // a completed job already has its terminated event
            (_, _, Completed) => vec![],
            _ => vec![9],
        };
        assert_eq!(events, want_event, "{action:?} from {from:?}");
        if outcome == Outcome::Done && to.is_some() {
            assert_eq!(int(&q, id, "LastJobStatus"), Some(from.code()));
            assert_eq!(int(&q, id, "EnteredCurrentStatus"), Some(NOW + 5));
        }
        if action == Action::Hold && outcome == Outcome::Done {
            assert_eq!(int(&q, id, "HoldReasonCode"), Some(1));
            assert_eq!(int(&q, id, "HoldReasonSubCode"), Some(0));
            assert_eq!(
                string(&q, id, "HoldReason").as_deref(),
                Some("testing (by user alice)")
            );
            assert_eq!(int(&q, id, "NumHolds"), Some(1));
        }
    }
}

#[test]
fn removing_the_last_job_destroys_the_cluster_and_reports() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", 2, |_| job(""));
    let (txn, rep) = q
        .plan_action(
            Action::Remove,
            &Selector::Cluster(c),
            &Actor::user("alice"),
            NOW,
            None,
        )
        .unwrap();
    assert_eq!(
        txn.history_jobs().collect::<Vec<_>>(),
        vec![JobId::new(c, 0), JobId::new(c, 1)]
    );
    assert_eq!(
        txn.mutations.last(),
        Some(&Mutation::DestroyCluster { cluster: c })
    );
    assert_eq!(
        rep.lines(),
        vec![format!(
            "All jobs in cluster {c} have been marked for removal"
        )]
    );
    commit(&mut q, &txn);
    assert!(q.is_empty());
    assert!(q.cluster_ad(c).is_none());
    // reports for missing targets
    let (txn, rep) = q
        .plan_action(
            Action::Hold,
            &Selector::Union(vec![
                Selector::Jobs(vec![JobId::new(9, 0)]),
                Selector::Cluster(9),
            ]),
            &Actor::user("alice"),
            NOW,
            None,
        )
        .unwrap();
    assert!(txn.is_empty());
    assert_eq!(
        rep.lines(),
        vec!["Job 9.0 not found", "No jobs in cluster 9 found"]
    );
    assert!(!rep.all_done());
}

#[test]
fn qedit_protects_attributes() {
    let q = two_users();
    let alice = Actor::user("alice");
    let root = Actor::admin("root");
    let a0 = Selector::Jobs(vec![JobId::new(1, 0)]);
    let cases: Vec<(&Actor, &str, &str, bool)> = vec![
        (&alice, "RequestMemory", "2048", true),
        (&alice, "Foo", "\"bar\" + 1", true),
        (&alice, "JobStatus", "1", false),
        (&alice, "QDate", "0", false),
        (&alice, "Owner", "\"bob\"", false),
        (&alice, "ClusterId", "7", false),
        (&root, "JobStatus", "1", true),
        (&root, "Owner", "\"bob\"", false),
        (&root, "ProcId", "3", false),
        (&alice, "Foo", "(1 +", false),
        (&alice, "bad name", "1", false),
    ];
    for (who, name, value, ok) in cases {
        let r = q.plan_set_attr(&a0, who, name, value, NOW);
        assert_eq!(r.is_ok(), ok, "{} sets {name} = {value}: {r:?}", who.name);
    }
    let (txn, n) = q
        .plan_set_attr(&a0, &alice, "RequestMemory", "1024*2", NOW)
        .unwrap();
    assert_eq!(n, 1);
    let mut q2 = q.clone();
    commit(&mut q2, &txn);
    let e = q2
        .job(JobId::new(1, 0))
        .unwrap()
        .lookup("RequestMemory")
        .cloned();
    assert_eq!(e, Some(parse_expr("1024 * 2").unwrap()));
    assert!(matches!(
        q.plan_set_attr(
            &Selector::Jobs(vec![JobId::new(5, 0)]),
            &alice,
            "Foo",
            "1",
            NOW
        ),
        Err(QueueError::NotFound(_))
    ));
}

fn periodic_case(
    extra: &str,
    status: JobStatus,
    system: &SystemPolicy,
    now: i64,
) -> (Queue, Txn, JobId) {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", 1, |_| job(extra));
    let id = JobId::new(c, 0);
    set_status(&mut q, id, status);
    let mut ev = Evaluator::default();
    let txn = q.plan_periodic(&mut ev, now, system);
    (q, txn, id)
}

#[test]
fn periodic_policy() {
    use JobStatus::*;
    let none = SystemPolicy::default();
    let sys = SystemPolicy {
        periodic_hold: Some(parse_expr("RequestCpus > 0 && JobStatus == 1").unwrap()),
        periodic_hold_subcode: Some(parse_expr("42").unwrap()),
        ..SystemPolicy::default()
    };
    let sys_reason = SystemPolicy {
        periodic_hold_reason: Some(parse_expr("\"too many cpus\"").unwrap()),
        ..sys.clone()
    };
    // (job attributes, status, system, now,
    //  expected status after (None: left the queue), hold code, reason/subcode checks)
    struct Case<'a> {
        extra: &'a str,
        status: JobStatus,
        system: &'a SystemPolicy,
        now: i64,
        to: Option<JobStatus>,
        code: Option<i64>,
        subcode: Option<i64>,
        reason: Option<&'a str>,
    }
    let later = NOW + 3600;
    let cases = [
        // nothing fires
        Case { extra: "", status: Idle, system: &none, now: later, to: Some(Idle), code: None, subcode: None, reason: None },
        // simulated time: the hold fires only once the hour has passed
        Case { extra: "PeriodicHold = time() - QDate > 1800", status: Idle, system: &none, now: NOW + 60, to: Some(Idle), code: None, subcode: None, reason: None },
        Case { extra: "PeriodicHold = time() - QDate > 1800", status: Idle, system: &none, now: later, to: Some(Held), code: Some(3), subcode: Some(0),
               reason: Some("The job attribute PeriodicHold expression 'time() - QDate > 1800' evaluated to TRUE") },
        Case { extra: "PeriodicHold = true; PeriodicHoldReason = \"custom\"; PeriodicHoldSubCode = 9", status: Running, system: &none, now: later, to: Some(Held), code: Some(3), subcode: Some(9), reason: Some("custom") },
        // hold beats remove
        Case { extra: "PeriodicHold = true; PeriodicRemove = true", status: Idle, system: &none, now: later, to: Some(Held), code: Some(3), subcode: None, reason: None },
        // remove: leaves the queue, or stays X while running
        Case { extra: "PeriodicRemove = JobStatus == 1", status: Idle, system: &none, now: later, to: None, code: None, subcode: None, reason: None },
        Case { extra: "PeriodicRemove = true", status: Running, system: &none, now: later, to: Some(Removed), code: None, subcode: None, reason: None },
        Case { extra: "PeriodicRemove = true", status: Held, system: &none, now: later, to: None, code: None, subcode: None, reason: None },
        // undefined fires as a hold with code 5; literal undefined does not
        Case { extra: "PeriodicHold = NoSuchAttr > 3", status: Idle, system: &none, now: later, to: Some(Held), code: Some(5), subcode: Some(0),
               reason: Some("The job attribute PeriodicHold expression 'NoSuchAttr > 3' evaluated to UNDEFINED") },
        Case { extra: "PeriodicRemove = \"yes\"", status: Idle, system: &none, now: later, to: Some(Held), code: Some(5), subcode: None, reason: None },
        Case { extra: "PeriodicHold = undefined", status: Idle, system: &none, now: later, to: Some(Idle), code: None, subcode: None, reason: None },
        // release, but never of a user hold
        Case { extra: "PeriodicRelease = true; HoldReasonCode = 3", status: Held, system: &none, now: later, to: Some(Idle), code: None, subcode: None, reason: None },
        Case { extra: "PeriodicRelease = true; HoldReasonCode = 1", status: Held, system: &none, now: later, to: Some(Held), code: None, subcode: None, reason: None },
        // a held job is not held again
        Case { extra: "PeriodicHold = true; HoldReasonCode = 1", status: Held, system: &none, now: later, to: Some(Held), code: None, subcode: None, reason: None },
        // system policy: code 26, configured subcode and reason
        Case { extra: "", status: Idle, system: &sys, now: later, to: Some(Held), code: Some(26), subcode: Some(42),
               reason: Some("The system macro SYSTEM_PERIODIC_HOLD expression 'RequestCpus > 0 && JobStatus == 1' evaluated to TRUE") },
        Case { extra: "", status: Idle, system: &sys_reason, now: later, to: Some(Held), code: Some(26), subcode: Some(42), reason: Some("too many cpus") },
        // the job's own expression comes first
        Case { extra: "PeriodicHold = true", status: Idle, system: &sys, now: later, to: Some(Held), code: Some(3), subcode: Some(0), reason: None },
        // removed and completed jobs are left alone
        Case { extra: "PeriodicHold = true", status: Removed, system: &none, now: later, to: Some(Removed), code: None, subcode: None, reason: None },
    ];
    for (i, c) in cases.iter().enumerate() {
        let (mut q, txn, id) = periodic_case(c.extra, c.status, c.system, c.now);
        commit(&mut q, &txn);
        assert_eq!(q.status(id), c.to, "case {i}: {}", c.extra);
        if let Some(code) = c.code {
            assert_eq!(int(&q, id, "HoldReasonCode"), Some(code), "case {i}");
            let held: Vec<&UserLogEvent> = txn.events.iter().map(|(_, e)| e).collect();
            assert!(
                matches!(held.as_slice(), [UserLogEvent::Held { code: c2, .. }] if *c2 == code),
                "case {i}: {held:?}"
            );
        }
        if let Some(sub) = c.subcode {
            assert_eq!(int(&q, id, "HoldReasonSubCode"), Some(sub), "case {i}");
        }
        if let Some(r) = c.reason {
            assert_eq!(string(&q, id, "HoldReason").as_deref(), Some(r), "case {i}");
        }
    }
    // remove reason and event
    let (_, txn, id) = periodic_case("PeriodicRemove = true", Idle, &none, later);
    assert_eq!(
        txn.events,
        vec![(
            id,
            UserLogEvent::Aborted {
                reason: Some(
                    "The job attribute PeriodicRemove expression 'true' evaluated to TRUE".into()
                )
            }
        )]
    );
}

fn exit_case(extra: &str, exit: &ExitInfo) -> (Queue, Txn, JobId) {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", 2, |_| job(extra));
    let id = JobId::new(c, 0);
    set_status(&mut q, id, JobStatus::Running);
    let txn = q.plan_exit(id, exit, NOW + 100).unwrap();
    commit(&mut q, &txn);
    (q, txn, id)
}

#[test]
fn exit_policy() {
    let ok = ExitInfo {
        exit_code: Some(0),
        remote_usage: Rusage {
            user_secs: 30,
            sys_secs: 1,
        },
        ..ExitInfo::default()
    };
    let failed = ExitInfo {
        exit_code: Some(2),
        ..ExitInfo::default()
    };
    let killed = ExitInfo {
        signal: Some(9),
        ..ExitInfo::default()
    };
    // (job attributes, exit, status after (None: left), event numbers, hold code)
    type Case<'a> = (
        &'a str,
        &'a ExitInfo,
        Option<JobStatus>,
        Vec<u32>,
        Option<i64>,
    );
    let cases: Vec<Case> = vec![
        ("", &ok, None, vec![5], None),
        ("OnExitRemove = ExitCode == 0", &ok, None, vec![5], None),
        (
            "OnExitRemove = ExitCode == 0",
            &failed,
            Some(JobStatus::Idle),
            vec![4],
            None,
        ),
        (
            "OnExitRemove = ExitBySignal == false",
            &killed,
            Some(JobStatus::Idle),
            vec![4],
            None,
        ),
        (
            "OnExitHold = ExitCode != 0",
            &failed,
            Some(JobStatus::Held),
            vec![12],
            Some(3),
        ),
        // on_exit_hold beats on_exit_remove
        (
            "OnExitHold = true; OnExitRemove = true",
            &ok,
            Some(JobStatus::Held),
            vec![12],
            Some(3),
        ),
        // periodic beats on_exit
        (
            "PeriodicHold = ExitCode == 2; OnExitHold = false",
            &failed,
            Some(JobStatus::Held),
            vec![12],
            Some(3),
        ),
        (
            "PeriodicRemove = ExitCode == 2; OnExitHold = true",
            &failed,
            None,
            vec![9],
            None,
        ),
        // undefined on_exit_remove holds with code 5
        (
            "OnExitRemove = NoSuch == 1",
            &ok,
            Some(JobStatus::Held),
            vec![12],
            Some(5),
        ),
    ];
    for (extra, exit, to, events, code) in cases {
        let (q, txn, id) = exit_case(extra, exit);
        assert_eq!(q.status(id), to, "{extra} {exit:?}");
        let got: Vec<u32> = txn.events.iter().map(|(_, e)| e.number()).collect();
        assert_eq!(got, events, "{extra} {exit:?}");
        if let Some(code) = code {
            assert_eq!(int(&q, id, "HoldReasonCode"), Some(code), "{extra}");
        }
        if to.is_some() {
            let exit_code = int(&q, id, "ExitCode");
            assert_eq!(exit_code, exit.exit_code.filter(|_| exit.signal.is_none()));
        }
    }
    let (q, txn, id) = exit_case(
        "OnExitHold = true; OnExitHoldReason = \"look at it\"; OnExitHoldSubCode = 4",
        &ok,
    );
    assert_eq!(string(&q, id, "HoldReason").as_deref(), Some("look at it"));
    assert_eq!(int(&q, id, "HoldReasonSubCode"), Some(4));
    assert!(txn.history_jobs().next().is_none());
    // completion: history, CompletionDate, the Terminated event's body
    let (_, txn, id) = exit_case("", &ok);
    assert_eq!(txn.history_jobs().collect::<Vec<_>>(), vec![id]);
    assert!(txn.mutations.contains(&Mutation::SetAttr {
        id,
        name: attr::COMPLETION_DATE.into(),
        value: (NOW + 100).to_string()
    }));
    match &txn.events[0].1 {
        UserLogEvent::Terminated(t) => assert_eq!(t.run_remote.user_secs, 30),
        e => panic!("{e:?}"),
    }
    // refusals and a removed job's process ending
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", 1, |_| job(""));
    let id = JobId::new(c, 0);
    assert!(matches!(
        q.plan_exit(id, &ok, NOW),
        Err(QueueError::Conflict(_))
    ));
    assert!(matches!(
        q.plan_exit(JobId::new(9, 9), &ok, NOW),
        Err(QueueError::NotFound(_))
    ));
    set_status(&mut q, id, JobStatus::Running);
    assert!(matches!(
        q.plan_exit(id, &ExitInfo::default(), NOW),
        Err(QueueError::BadRequest(_))
    ));
    set_status(&mut q, id, JobStatus::Removed);
    let txn = q.plan_exit(id, &ok, NOW).unwrap();
    assert_eq!(
        txn.mutations,
        vec![
            Mutation::DestroyJob { id, history: true },
            Mutation::DestroyCluster { cluster: c }
        ]
    );
}

#[test]
fn idle_job_order_and_submitter_counts() {
    let mut q = Queue::new();
    // cluster 1: alice, prio 0; cluster 2: bob, prio 5 on proc 1
    submit(&mut q, "alice", 2, |_| job(""));
    let c2 = submit(&mut q, "bob", 3, |p| {
        job(&format!(
            "JobPrio = {}; Rank2 = {}",
            if p == 1 { 5 } else { 0 },
            p
        ))
    });
    set_status(&mut q, JobId::new(c2, 2), JobStatus::Held);
    set_status(&mut q, JobId::new(1, 1), JobStatus::Running);
    let mut ev = Evaluator::default();
    assert_eq!(
        q.idle_jobs_in_order(&mut ev, None, None),
        vec![JobId::new(2, 1), JobId::new(1, 0), JobId::new(2, 0)]
    );
    assert_eq!(
        q.idle_jobs_in_order(&mut ev, Some("alice"), None),
        vec![JobId::new(1, 0)]
    );
    // a ranking expression orders within a priority: higher first, a
    // non-number last
    let rank = parse_expr("Rank2").unwrap();
    assert_eq!(
        q.idle_jobs_in_order(&mut ev, None, Some(&rank)),
        vec![JobId::new(2, 1), JobId::new(2, 0), JobId::new(1, 0)]
    );
    let counts = q.submitter_counts();
    assert_eq!(counts.len(), 2);
    let a = counts["alice"];
    assert_eq!((a.idle, a.running, a.held, a.total()), (1, 1, 0, 2));
    let b = counts["bob"];
    assert_eq!((b.idle, b.running, b.held, b.total()), (2, 0, 1, 3));
    // query
    let c = parse_expr("Owner == \"bob\" && JobStatus == 1").unwrap();
    let got: Vec<JobId> = q
        .query(&mut ev, Some(&c))
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(got, vec![JobId::new(2, 0), JobId::new(2, 1)]);
    assert_eq!(q.query(&mut ev, None).len(), 5);
}

#[test]
fn apply_is_all_or_nothing_and_recovery_loads_rows() {
    let mut q = two_users();
    let before = q.clone();
    let bad = [
        Mutation::SetAttr {
            id: JobId::new(1, 0),
            name: "Foo".into(),
            value: "1".into(),
        },
        Mutation::DestroyJob {
            id: JobId::new(1, 1),
            history: true,
        },
        Mutation::NewCluster {
            cluster: 2,
            ad: ClassAd::new(),
        },
    ];
    assert!(matches!(q.apply(&bad), Err(QueueError::Conflict(_))));
    assert_eq!(q, before);
    for bad in [
        Mutation::NewJob {
            id: JobId::new(7, 0),
            ad: ClassAd::new(),
        },
        Mutation::SetAttr {
            id: JobId::new(1, 0),
            name: "Foo".into(),
            value: "(".into(),
        },
        Mutation::DestroyCluster { cluster: 1 },
        Mutation::DeleteAttr {
            id: JobId::new(8, 0),
            name: "Foo".into(),
        },
    ] {
        assert!(q.apply(std::slice::from_ref(&bad)).is_err(), "{bad:?}");
        assert_eq!(q, before);
    }
    // the fast recovery path, rows in any order
    let mut r = Queue::new();
    for (id, ad) in q.jobs() {
        let mut own = ad.clone();
        own.unchain();
        r.load_job(id, own);
    }
    for c in q.clusters() {
        r.load_cluster(c, q.cluster_ad(c).unwrap().clone());
    }
    r.set_next_cluster_id(q.next_cluster_id());
    assert_eq!(r, q);
}
