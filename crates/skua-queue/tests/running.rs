//! A job's runs as the shadow reports them: start, execute, usage, evicted,
//! failed (retried, then held), exit with wall-clock accounting; and the
//! autoclusters the negotiator is offered.

#![allow(clippy::unwrap_used)]

use classad::{parse_ad, ClassAd, EvalOptions, Evaluator, Expr};
use skua_queue::{
    ExitInfo, FileTransfer, JobId, JobStatus, Queue, QueueError, RunEnd, Rusage, Txn, UserLogEvent,
};

const NOW: i64 = 1_800_000_000;
const HOST: &str = "<127.0.0.1:9618>";

fn job(extra: &str) -> ClassAd {
    parse_ad(&format!(
        "[Cmd = \"/bin/true\"; RequestCpus = 1; RequestMemory = 128; RequestDisk = 100; JobUniverse = 5; \
          Requirements = TARGET.Memory >= RequestMemory; OnExitHold = false; OnExitRemove = true; {extra}]"
    ))
    .unwrap()
}

fn commit(q: &mut Queue, txn: &Txn) {
    q.apply(&txn.mutations).unwrap();
}

fn submit(q: &mut Queue, owner: &str, ads: Vec<ClassAd>) -> u32 {
    let c = q.next_cluster_id();
    let r = q.reserve_cluster_id();
    commit(q, &r);
    let txn = q.plan_submit(c, ads, owner, NOW, HOST).unwrap();
    commit(q, &txn);
    c
}

fn num(q: &Queue, id: JobId, name: &str) -> Option<f64> {
    match q.job(id)?.lookup(name)? {
        Expr::Lit(v) => v.as_real(),
        _ => None,
    }
}

fn text(q: &Queue, id: JobId, name: &str) -> Option<String> {
    match q.job(id)?.lookup(name)? {
        Expr::Lit(v) => v.as_string(),
        _ => None,
    }
}

fn ev() -> Evaluator {
    Evaluator::new(EvalOptions {
        now: NOW as f64,
        ..EvalOptions::default()
    })
}

#[test]
fn a_run_from_start_to_exit_is_accounted() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", vec![job("")]);
    let id = JobId::new(c, 0);
    let t = q.plan_start(id, "slot1@host", NOW + 10).unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(id), Some(JobStatus::Running));
    assert_eq!(text(&q, id, "RemoteHost").as_deref(), Some("slot1@host"));
    // Claimed, not yet executing: a run began, the job did not start yet.
    assert_eq!(num(&q, id, "JobRunCount"), Some(1.0));
    assert_eq!(num(&q, id, "NumJobStarts").unwrap_or(0.0), 0.0);
    assert_eq!(num(&q, id, "JobStartDate"), Some((NOW + 10) as f64));
    // Starting a running job again is refused.
    assert!(matches!(
        q.plan_start(id, "slot2@host", NOW + 11),
        Err(QueueError::Conflict(_))
    ));

    let t = q
        .plan_executing(id, "<127.0.0.1:5000>", "slot1@host", NOW + 11)
        .unwrap();
    assert!(matches!(t.events[0].1, UserLogEvent::Execute { .. }));
    commit(&mut q, &t);
    assert_eq!(num(&q, id, "NumJobStarts"), Some(1.0));

    let t = q.plan_usage(id, 5000, 2000).unwrap();
    assert!(matches!(
        t.events[0].1,
        UserLogEvent::ImageSize {
            image_size_kb: 5000,
            ..
        }
    ));
    commit(&mut q, &t);
    // A smaller size changes nothing: the peak is kept.
    assert!(q.plan_usage(id, 4000, 1000).unwrap().is_empty());
    assert_eq!(num(&q, id, "ImageSize"), Some(5000.0));

    let exit = ExitInfo {
        exit_code: Some(3),
        ..ExitInfo::default()
    };
    let t = q.plan_exit(id, &exit, NOW + 70).unwrap();
    assert!(matches!(
        t.events.last().unwrap().1,
        UserLogEvent::Terminated(_)
    ));
    commit(&mut q, &t);
    assert!(q.job(id).is_none(), "a completed job leaves the queue");
}

#[test]
fn exit_policy_sees_the_run_wall_clock() {
    let mut q = Queue::new();
    let c = submit(
        &mut q,
        "alice",
        vec![job("OnExitRemove = RemoteWallClockTime >= 100")],
    );
    let id = JobId::new(c, 0);
    let t = q.plan_start(id, "slot1@h", NOW).unwrap();
    commit(&mut q, &t);
    let exit = ExitInfo {
        exit_code: Some(0),
        ..ExitInfo::default()
    };
    // A 60 s run: OnExitRemove is false, the job is requeued.
    let t = q.plan_exit(id, &exit, NOW + 60).unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(id), Some(JobStatus::Idle));
    assert_eq!(num(&q, id, "RemoteWallClockTime"), Some(60.0));
    assert_eq!(text(&q, id, "LastRemoteHost").as_deref(), Some("slot1@h"));
    assert!(q.job(id).unwrap().lookup("RemoteHost").is_none());
    // A second 50 s run brings the total to 110: it completes.
    let t = q.plan_start(id, "slot2@h", NOW + 100).unwrap();
    commit(&mut q, &t);
    let t = q.plan_exit(id, &exit, NOW + 150).unwrap();
    commit(&mut q, &t);
    assert!(q.job(id).is_none());
}

#[test]
fn eviction_requeues_and_failures_hold_after_the_limit() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", vec![job(""), job("")]);
    let (a, b) = (JobId::new(c, 0), JobId::new(c, 1));
    let t = q.plan_start(a, "slot1@h", NOW).unwrap();
    commit(&mut q, &t);
    let t = q
        .plan_run_ended(
            a,
            &RunEnd::Evicted {
                reason: "the startd went away".into(),
            },
            Rusage::default(),
            3,
            NOW + 30,
        )
        .unwrap();
    assert!(matches!(t.events[0].1, UserLogEvent::Evicted { .. }));
    commit(&mut q, &t);
    assert_eq!(q.status(a), Some(JobStatus::Idle));
    assert_eq!(num(&q, a, "RemoteWallClockTime"), Some(30.0));
    assert_eq!(num(&q, a, "NumShadowExceptions"), None);

    let fail = RunEnd::Failed {
        reason: "transfer of output failed".into(),
        hold_code: 12,
        hold_subcode: 0,
        permanent: false,
    };
    for round in 1..=3 {
        let t = q.plan_start(b, "slot1@h", NOW).unwrap();
        commit(&mut q, &t);
        let t = q
            .plan_run_ended(b, &fail, Rusage::default(), 3, NOW + 1)
            .unwrap();
        commit(&mut q, &t);
        let expect = if round < 3 {
            JobStatus::Idle
        } else {
            JobStatus::Held
        };
        assert_eq!(q.status(b), Some(expect), "round {round}");
    }
    assert_eq!(num(&q, b, "HoldReasonCode"), Some(12.0));
    assert!(text(&q, b, "HoldReason").unwrap().contains("3 times"));

    // A permanent failure holds at once.
    let c2 = submit(&mut q, "alice", vec![job("")]);
    let d = JobId::new(c2, 0);
    let t = q.plan_start(d, "slot1@h", NOW).unwrap();
    commit(&mut q, &t);
    let t = q
        .plan_run_ended(
            d,
            &RunEnd::Failed {
                reason: "input file x missing".into(),
                hold_code: 13,
                hold_subcode: 13,
                permanent: true,
            },
            Rusage::default(),
            3,
            NOW + 1,
        )
        .unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(d), Some(JobStatus::Held));
    assert_eq!(num(&q, d, "HoldReasonCode"), Some(13.0));
    // the errno of the failed file operation is the subcode
    assert_eq!(num(&q, d, "HoldReasonSubCode"), Some(13.0));
}

#[test]
fn a_job_removed_while_running_leaves_when_its_run_ends() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", vec![job("")]);
    let id = JobId::new(c, 0);
    let t = q.plan_start(id, "slot1@h", NOW).unwrap();
    commit(&mut q, &t);
    let (t, _) = q
        .plan_action(
            skua_queue::Action::Remove,
            &skua_queue::Selector::Jobs(vec![id]),
            &skua_queue::Actor::user("alice"),
            NOW + 5,
            None,
        )
        .unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(id), Some(JobStatus::Removed), "kept while it runs");
    let t = q
        .plan_run_ended(
            id,
            &RunEnd::Evicted {
                reason: "removed".into(),
            },
            Rusage::default(),
            3,
            NOW + 6,
        )
        .unwrap();
    commit(&mut q, &t);
    assert!(q.job(id).is_none());
}

#[test]
fn autoclusters_group_alike_jobs_in_queue_order() {
    let mut q = Queue::new();
    let c1 = submit(
        &mut q,
        "alice",
        vec![
            job("Kind = 1"),
            job("Kind = 2"),
            job("Kind = 1; RequestMemory = 4096"),
        ],
    );
    let c2 = submit(&mut q, "alice", vec![job("Kind = 1")]);
    submit(&mut q, "bob", vec![job("")]);
    // Kind is not significant: only the memory request splits them.
    let acs = q.autoclusters(&mut ev(), "alice", &[], None);
    let groups: Vec<Vec<String>> = acs
        .iter()
        .map(|a| a.jobs.iter().map(|j| j.to_string()).collect())
        .collect();
    assert_eq!(
        groups,
        vec![
            vec![format!("{c1}.0"), format!("{c1}.1"), format!("{c2}.0")],
            vec![format!("{c1}.2")],
        ]
    );
    // Slots that look at Kind make it significant.
    let acs = q.autoclusters(&mut ev(), "alice", &["kind".to_string()], None);
    assert_eq!(acs.len(), 3);
    // Running jobs are not offered.
    let t = q.plan_start(JobId::new(c1, 0), "s", NOW).unwrap();
    commit(&mut q, &t);
    let acs = q.autoclusters(&mut ev(), "alice", &[], None);
    assert_eq!(acs[0].jobs.len(), 2);
}

#[test]
fn suspension_and_a_startd_hold() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", vec![job("")]);
    let id = JobId::new(c, 0);
    let t = q.plan_start(id, "slot1@host", NOW).unwrap();
    commit(&mut q, &t);
    let t = q.plan_suspended(id, true, NOW + 10).unwrap();
    assert!(matches!(t.events[0].1, UserLogEvent::Suspended { n: 1 }));
    commit(&mut q, &t);
    assert_eq!(q.status(id), Some(JobStatus::Suspended));
    assert_eq!(num(&q, id, "TotalSuspensions"), Some(1.0));
    // a second report changes nothing
    assert!(q
        .plan_suspended(id, true, NOW + 11)
        .unwrap()
        .events
        .is_empty());
    let t = q.plan_suspended(id, false, NOW + 40).unwrap();
    assert!(matches!(t.events[0].1, UserLogEvent::Unsuspended));
    commit(&mut q, &t);
    assert_eq!(q.status(id), Some(JobStatus::Running));
    assert_eq!(num(&q, id, "CumulativeSuspensionTime"), Some(30.0));
    let end = RunEnd::Held {
        reason: "too big".into(),
        code: 21,
        subcode: 7,
    };
    let t = q
        .plan_run_ended(id, &end, Rusage::default(), 3, NOW + 50)
        .unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(id), Some(JobStatus::Held));
    assert_eq!(num(&q, id, "HoldReasonCode"), Some(21.0));
    assert_eq!(num(&q, id, "HoldReasonSubCode"), Some(7.0));
    assert_eq!(text(&q, id, "HoldReason").as_deref(), Some("too big"));
    assert_eq!(num(&q, id, "RemoteWallClockTime"), Some(50.0));
}

#[test]
fn a_runs_claim_is_recorded_for_a_restart_then_cleared_and_never_qedited() {
    let mut q = Queue::new();
    // a claim id given at submission is not the run's
    let c = submit(&mut q, "alice", vec![job("ClaimId = \"forged\""), job("")]);
    let id = JobId::new(c, 0);
    assert_eq!(Queue::claim_of(q.job(id).unwrap()), None);
    let mut t = q.plan_start(id, "slot1@host", NOW).unwrap();
    t.extend(
        q.plan_claim(id, "claim-secret", "<127.0.0.1:7000>")
            .unwrap(),
    );
    commit(&mut q, &t);
    assert_eq!(
        Queue::claim_of(q.job(id).unwrap()),
        Some(("claim-secret".into(), "<127.0.0.1:7000>".into()))
    );
    // nobody may change it, not even an administrator
    for name in ["ClaimId", "StartdIpAddr"] {
        let r = q.plan_set_attr(
            &skua_queue::Selector::Jobs(vec![id]),
            &skua_queue::Actor::admin("root"),
            name,
            "\"other\"",
            NOW + 1,
        );
        assert!(
            matches!(r, Err(QueueError::PermissionDenied(_))),
            "{name}: {r:?}"
        );
    }
    let t = q
        .plan_run_ended(
            id,
            &RunEnd::Evicted {
                reason: "vacated".into(),
            },
            Rusage::default(),
            5,
            NOW + 5,
        )
        .unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(id), Some(JobStatus::Idle));
    assert_eq!(Queue::claim_of(q.job(id).unwrap()), None);
    assert_eq!(text(&q, id, "StartdIpAddr"), None);
    // an exit clears it too
    let id = JobId::new(c, 1);
    let mut t = q.plan_start(id, "slot2@host", NOW).unwrap();
    t.extend(q.plan_claim(id, "claim-2", "<127.0.0.1:7000>").unwrap());
    commit(&mut q, &t);
    let exit = ExitInfo {
        exit_code: Some(0),
        ..ExitInfo::default()
    };
    let t = q.plan_exit(id, &exit, NOW + 9).unwrap();
    commit(&mut q, &t);
    assert!(q.job(id).is_none_or(|ad| Queue::claim_of(ad).is_none()));
}

#[test]
fn a_disconnection_is_logged_once_then_a_reconnection_or_a_failed_one() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", vec![job("JobLeaseDuration = 60")]);
    let a = JobId::new(c, 0);
    let t = q.plan_start(a, "slot1@h", NOW).unwrap();
    commit(&mut q, &t);
    assert_eq!(num(&q, a, "LastJobLeaseRenewal"), Some(NOW as f64));
    // 022 once per disconnection, with JobDisconnectedDate
    let reason = "Socket between submit and execute hosts closed unexpectedly";
    let t = q
        .plan_disconnected(a, reason, "slot1@h", HOST, NOW + 10)
        .unwrap();
    assert!(
        matches!(&t.events[..], [(_, UserLogEvent::Disconnected { startd_name, .. })] if startd_name == "slot1@h")
    );
    commit(&mut q, &t);
    assert_eq!(num(&q, a, "JobDisconnectedDate"), Some((NOW + 10) as f64));
    let again = q
        .plan_disconnected(a, reason, "slot1@h", HOST, NOW + 20)
        .unwrap();
    assert!(again.events.is_empty() && again.mutations.is_empty());
    // 023: counted, the date cleared, the lease renewed
    let t = q
        .plan_reconnected(a, "slot1@h", HOST, HOST, NOW + 30)
        .unwrap();
    assert!(matches!(
        &t.events[..],
        [(_, UserLogEvent::Reconnected { .. })]
    ));
    commit(&mut q, &t);
    assert_eq!(num(&q, a, "NumJobReconnects"), Some(1.0));
    assert_eq!(num(&q, a, "JobDisconnectedDate"), None);
    assert_eq!(num(&q, a, "LastJobLeaseRenewal"), Some((NOW + 30) as f64));
    // disconnected again, then the lease runs out: 024, Idle, not held and
    // not counted as a failure
    let t = q
        .plan_disconnected(a, reason, "slot1@h", HOST, NOW + 40)
        .unwrap();
    commit(&mut q, &t);
    let end = RunEnd::ReconnectFailed {
        reason: "Job disconnected too long: JobLeaseDuration (60 seconds) expired".into(),
        startd_name: "slot1@h".into(),
    };
    let t = q
        .plan_run_ended(a, &end, Rusage::default(), 1, NOW + 100)
        .unwrap();
    assert!(matches!(
        &t.events[..],
        [(_, UserLogEvent::ReconnectFailed { .. })]
    ));
    commit(&mut q, &t);
    assert_eq!(q.status(a), Some(JobStatus::Idle));
    assert_eq!(num(&q, a, "JobDisconnectedDate"), None);
    assert_eq!(num(&q, a, "NumShadowExceptions"), None);
    assert_eq!(num(&q, a, "RemoteWallClockTime"), Some(100.0));
    assert_eq!(
        text(&q, a, "LastVacateReason").as_deref(),
        Some("Job disconnected too long: JobLeaseDuration (60 seconds) expired")
    );
}

#[test]
fn checkpoints_are_counted_and_commit_the_work_they_keep() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", vec![job("")]);
    let id = JobId::new(c, 0);
    // run 1: starts at +0, checkpoints at +40 and +70, evicted at +100
    let t = q.plan_start(id, "slot1@h", NOW).unwrap();
    commit(&mut q, &t);
    let t = q.plan_checkpoint_upload(id).unwrap();
    assert!(matches!(
        t.events[..],
        [(_, UserLogEvent::FileTransfer(FileTransfer::OutputStarted))]
    ));
    assert!(t.mutations.is_empty());
    let t = q.plan_checkpoint(id, 1, None, NOW + 40).unwrap();
    assert!(matches!(
        t.events[..],
        [(_, UserLogEvent::FileTransfer(FileTransfer::OutputFinished))]
    ));
    commit(&mut q, &t);
    let t = q.plan_checkpoint(id, 2, Some("criu"), NOW + 70).unwrap();
    commit(&mut q, &t);
    // a repeated commit of 2 (or an older number) changes nothing
    assert!(q.plan_checkpoint(id, 2, None, NOW + 75).unwrap().is_empty());
    assert!(q.plan_checkpoint(id, 1, None, NOW + 75).unwrap().is_empty());
    assert_eq!(num(&q, id, "CheckpointNumber"), Some(2.0));
    assert_eq!(num(&q, id, "NumCkpts"), Some(2.0));
    assert_eq!(num(&q, id, "LastCkptTime"), Some((NOW + 70) as f64));
    assert_eq!(
        text(&q, id, "SkuaCheckpointBackend").as_deref(),
        Some("criu")
    );
    let evicted = RunEnd::Evicted {
        reason: "vacated".into(),
    };
    let t = q
        .plan_run_ended(id, &evicted, Rusage::default(), 0, NOW + 100)
        .unwrap();
    assert!(matches!(
        t.events.last().unwrap().1,
        UserLogEvent::Evicted {
            checkpointed: true,
            ..
        }
    ));
    commit(&mut q, &t);
    assert_eq!(num(&q, id, "RemoteWallClockTime"), Some(100.0));
    assert_eq!(num(&q, id, "CommittedTime"), Some(70.0));
    assert_eq!(num(&q, id, "CommittedSlotTime"), Some(70.0));
    // run 2: no checkpoint before its eviction: nothing more committed,
    // and its evicted event says so
    let t = q.plan_start(id, "slot1@h", NOW + 200).unwrap();
    commit(&mut q, &t);
    let t = q
        .plan_run_ended(id, &evicted, Rusage::default(), 0, NOW + 230)
        .unwrap();
    assert!(matches!(
        t.events.last().unwrap().1,
        UserLogEvent::Evicted {
            checkpointed: false,
            ..
        }
    ));
    commit(&mut q, &t);
    assert_eq!(num(&q, id, "RemoteWallClockTime"), Some(130.0));
    assert_eq!(num(&q, id, "CommittedTime"), Some(70.0));
    // run 3 completes: all of it counts
    let t = q.plan_start(id, "slot1@h", NOW + 300).unwrap();
    commit(&mut q, &t);
    let exit = ExitInfo {
        exit_code: Some(0),
        ..ExitInfo::default()
    };
    let t = q.plan_exit(id, &exit, NOW + 350).unwrap();
    // the history gets the final ad: read the totals from the plan
    let committed = t.mutations.iter().find_map(|m| match m {
        skua_queue::Mutation::SetAttr { name, value, .. } if name == "CommittedTime" => {
            value.parse::<f64>().ok()
        }
        _ => None,
    });
    assert_eq!(committed, Some(120.0));
    // a job not running takes no checkpoint
    let c2 = submit(&mut q, "alice", vec![job("")]);
    assert!(q
        .plan_checkpoint_upload(JobId::new(c2, 0))
        .unwrap()
        .is_empty());
    assert!(matches!(
        q.plan_checkpoint(JobId::new(c2, 0), 1, None, NOW),
        Err(QueueError::Conflict(_))
    ));
}

#[test]
fn transfer_steps_keep_htcondors_attributes_and_write_their_events() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", vec![job("")]);
    let id = JobId::new(c, 0);
    let t = q.plan_start(id, "slot1@h", NOW).unwrap();
    commit(&mut q, &t);
    let flag = |q: &Queue, name: &str| q.job(id).unwrap().lookup(name).map(classad::unparse);
    let host = Some("<10.0.0.2:9618>");
    // input: queued at +0, started at +5, 300 bytes in two reports
    let t = q
        .plan_transfer(id, FileTransfer::InputQueued, host, 0, NOW)
        .unwrap();
    commit(&mut q, &t);
    assert_eq!(flag(&q, "TransferQueued").as_deref(), Some("true"));
    assert_eq!(num(&q, id, "TransferInQueued"), Some(NOW as f64));
    let t = q
        .plan_transfer(id, FileTransfer::InputStarted, host, 0, NOW + 5)
        .unwrap();
    match &t.events[..] {
        [(
            _,
            UserLogEvent::Transfer {
                step: FileTransfer::InputStarted,
                seconds_in_queue: Some(5),
                host: Some(h),
            },
        )] => assert_eq!(h, "<10.0.0.2:9618>"),
        other => panic!("unexpected events {other:?}"),
    }
    commit(&mut q, &t);
    assert_eq!(flag(&q, "TransferQueued").as_deref(), Some("false"));
    assert_eq!(flag(&q, "TransferringInput").as_deref(), Some("true"));
    assert_eq!(num(&q, id, "NumInputTransferStarts"), Some(1.0));
    let t = q.plan_transfer_progress(id, true, 100).unwrap();
    commit(&mut q, &t);
    assert!(t.events.is_empty());
    assert_eq!(num(&q, id, "BytesRecvd"), Some(100.0));
    let t = q
        .plan_transfer(id, FileTransfer::InputFinished, host, 200, NOW + 9)
        .unwrap();
    commit(&mut q, &t);
    assert_eq!(flag(&q, "TransferringInput").as_deref(), Some("false"));
    assert_eq!(num(&q, id, "TransferInFinished"), Some((NOW + 9) as f64));
    assert_eq!(num(&q, id, "BytesRecvd"), Some(300.0));
    // output that bypassed the queue: no seconds in queue, no host
    let t = q
        .plan_transfer(id, FileTransfer::OutputStarted, host, 0, NOW + 20)
        .unwrap();
    assert!(matches!(
        t.events[..],
        [(
            _,
            UserLogEvent::Transfer {
                step: FileTransfer::OutputStarted,
                seconds_in_queue: None,
                host: None,
            },
        )]
    ));
    commit(&mut q, &t);
    assert_eq!(flag(&q, "TransferringOutput").as_deref(), Some("true"));
    assert_eq!(num(&q, id, "NumOutputTransferStarts"), Some(1.0));
    let t = q
        .plan_transfer(id, FileTransfer::OutputFinished, None, 42, NOW + 21)
        .unwrap();
    commit(&mut q, &t);
    assert_eq!(num(&q, id, "BytesSent"), Some(42.0));
    assert_eq!(num(&q, id, "TransferOutFinished"), Some((NOW + 21) as f64));
    assert_eq!(flag(&q, "TransferringOutput").as_deref(), Some("false"));
}

#[test]
fn a_run_that_ends_mid_transfer_leaves_no_transfer_flag_set() {
    let mut q = Queue::new();
    let c = submit(&mut q, "alice", vec![job("")]);
    let id = JobId::new(c, 0);
    let t = q.plan_start(id, "slot1@h", NOW).unwrap();
    commit(&mut q, &t);
    let t = q
        .plan_transfer(id, FileTransfer::InputQueued, None, 0, NOW)
        .unwrap();
    commit(&mut q, &t);
    let t = q
        .plan_run_ended(
            id,
            &RunEnd::Evicted {
                reason: "vacated".into(),
            },
            Rusage::default(),
            5,
            NOW + 3,
        )
        .unwrap();
    commit(&mut q, &t);
    let flag = |name: &str| q.job(id).unwrap().lookup(name).map(classad::unparse);
    assert_eq!(flag("TransferQueued").as_deref(), Some("false"));
    assert_eq!(flag("TransferringInput").as_deref(), Some("false"));
}

fn flag(q: &Queue, id: JobId, name: &str) -> Option<bool> {
    match q.job(id)?.lookup(name)? {
        Expr::Lit(classad::Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

#[test]
fn an_exited_job_transfers_its_output_then_its_exit_is_recorded() {
    let mut q = Queue::new();
    let c = submit(
        &mut q,
        "alice",
        vec![job(""), job("OnExitRemove = false"), job("")],
    );
    let (a, b, idle) = (JobId::new(c, 0), JobId::new(c, 1), JobId::new(c, 2));
    for id in [a, b] {
        let t = q.plan_start(id, "slot1@h", NOW).unwrap();
        commit(&mut q, &t);
        let t = q.plan_transferring_output(id, NOW + 5).unwrap();
        commit(&mut q, &t);
        assert_eq!(q.status(id), Some(JobStatus::TransferringOutput));
        assert_eq!(flag(&q, id, "TransferringOutput"), Some(true));
        assert_eq!(num(&q, id, "LastJobStatus"), Some(2.0));
    }
    // only a running job transfers its output
    let t = q.plan_transferring_output(idle, NOW + 5).unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(idle), Some(JobStatus::Idle));
    assert_eq!(flag(&q, idle, "TransferringOutput"), None);
    // the exit, once the output arrived: completed (a is gone to the
    // history), or requeued with the transfer over
    let exit = ExitInfo {
        exit_code: Some(0),
        ..ExitInfo::default()
    };
    let t = q.plan_exit(a, &exit, NOW + 9).unwrap();
    assert!(t
        .events
        .iter()
        .any(|(id, e)| *id == a && matches!(e, UserLogEvent::Terminated(_))));
    commit(&mut q, &t);
    assert_eq!(q.status(a), None);
    let t = q.plan_exit(b, &exit, NOW + 9).unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(b), Some(JobStatus::Idle));
    assert_eq!(flag(&q, b, "TransferringOutput"), Some(false));
    // a transfer that failed outside the job: back to Idle, not completed
    let t = q.plan_start(b, "slot1@h", NOW + 20).unwrap();
    commit(&mut q, &t);
    let t = q.plan_transferring_output(b, NOW + 25).unwrap();
    commit(&mut q, &t);
    let end = RunEnd::Failed {
        reason: "the output transfer was interrupted".into(),
        hold_code: 0,
        hold_subcode: 0,
        permanent: false,
    };
    let t = q
        .plan_run_ended(b, &end, Rusage::default(), 10, NOW + 30)
        .unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(b), Some(JobStatus::Idle));
    assert_eq!(flag(&q, b, "TransferringOutput"), Some(false));
}
