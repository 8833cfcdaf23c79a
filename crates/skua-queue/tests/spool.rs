//! Jobs submitted with `-spool`: held for spooling (code 16) until the
//! schedd has their input files, released with their paths moved to the
//! spool; kept in the queue when complete while `LeaveJobInQueue` holds;
//! leaving once their output is fetched.

#![allow(clippy::unwrap_used)]

use classad::{parse_ad, ClassAd, EvalOptions, Evaluator, Expr};
use skua_queue::spool::{self, HOLD_SPOOLING_INPUT, SPOOLED_LEAVE_IN_QUEUE};
use skua_queue::{
    Action, Actor, ExitInfo, JobId, JobStatus, Outcome, Queue, QueueError, Selector, SystemPolicy,
    Txn,
};

const NOW: i64 = 1_800_000_000;
const HOST: &str = "<127.0.0.1:9618>";

fn spooled_job(extra: &str) -> ClassAd {
    parse_ad(&format!(
        "[Cmd = \"/home/ada/run/prog.sh\"; Iwd = \"/home/ada/run\"; JobUniverse = 5; \
          RequestCpus = 1; OnExitHold = false; OnExitRemove = true; \
          TransferInput = \"in.txt, data/table.csv,/abs/ref.dat\"; In = \"stdin.txt\"; \
          Out = \"out.txt\"; Err = \"/home/ada/logs/err.txt\"; \
          TransferOutputRemaps = \"result = res/result.txt\"; \
          JobStatus = 5; HoldReasonCode = 16; HoldReasonSubCode = 0; \
          HoldReason = \"Spooling input data files\"; \
          LeaveJobInQueue = {SPOOLED_LEAVE_IN_QUEUE}; {extra}]"
    ))
    .unwrap()
}

fn commit(q: &mut Queue, txn: &Txn) {
    q.apply(&txn.mutations).unwrap();
}

fn submit(q: &mut Queue, owner: &str, ad: ClassAd) -> JobId {
    let c = q.next_cluster_id();
    let r = q.reserve_cluster_id();
    commit(q, &r);
    let txn = q.plan_submit(c, vec![ad], owner, NOW, HOST).unwrap();
    commit(q, &txn);
    JobId::new(c, 0)
}

fn text(q: &Queue, id: JobId, name: &str) -> Option<String> {
    match q.job(id)?.lookup(name)? {
        Expr::Lit(v) => v.as_string(),
        _ => None,
    }
}

fn int(q: &Queue, id: JobId, name: &str) -> Option<i64> {
    match q.job(id)?.lookup(name)? {
        Expr::Lit(v) => v.as_int(),
        _ => None,
    }
}

fn ev(now: i64) -> Evaluator {
    Evaluator::new(EvalOptions {
        now: now as f64,
        ..EvalOptions::default()
    })
}

/// Submits, spools, runs and exits a job; returns its id.
fn completed(q: &mut Queue, extra: &str) -> JobId {
    let id = submit(q, "ada", spooled_job(extra));
    let t = q
        .plan_spool_complete(
            id,
            "/spool/1/0/cluster1.proc0.subproc0",
            NOW,
            "ada",
            false,
            NOW + 1,
        )
        .unwrap();
    commit(q, &t);
    let t = q.plan_start(id, "slot1@host", NOW + 2).unwrap();
    commit(q, &t);
    let exit = ExitInfo {
        exit_code: Some(0),
        ..ExitInfo::default()
    };
    let t = q.plan_exit(id, &exit, NOW + 10).unwrap();
    commit(q, &t);
    id
}

#[test]
fn the_inputs_of_a_spooled_job_are_its_executable_stdin_and_transfer_inputs() {
    let ad = spooled_job("TransferInput = \"in.txt, data/table.csv,/abs/ref.dat,https://x/y\"");
    assert_eq!(
        spool::spool_inputs(&ad),
        vec![
            ("/home/ada/run/prog.sh".into(), "prog.sh".into()),
            ("/home/ada/run/stdin.txt".into(), "stdin.txt".into()),
            ("/home/ada/run/in.txt".into(), "in.txt".into()),
            ("/home/ada/run/data/table.csv".into(), "table.csv".into()),
            ("/abs/ref.dat".into(), "ref.dat".into()),
        ]
    );
    // an executable that is not transferred is not spooled
    let ad =
        spooled_job("TransferExecutable = false; TransferInput = undefined; In = \"/dev/null\"");
    assert!(spool::spool_inputs(&ad).is_empty());
}

#[test]
fn a_spooled_job_waits_held_then_runs_from_the_spool() {
    let mut q = Queue::new();
    let id = submit(&mut q, "ada", spooled_job(""));
    assert_eq!(q.status(id), Some(JobStatus::Held));
    assert_eq!(int(&q, id, "HoldReasonCode"), Some(HOLD_SPOOLING_INPUT));
    assert!(spool::is_spooling(q.job(id).unwrap()));

    // only the owner (or an administrator) completes the spooling
    assert!(matches!(
        q.plan_spool_complete(id, "/spool/x", NOW, "bob", false, NOW + 1),
        Err(QueueError::PermissionDenied(_))
    ));
    let dir = "/spool/1/0/cluster1.proc0.subproc0";
    let t = q
        .plan_spool_complete(id, dir, NOW - 5, "ada", false, NOW + 1)
        .unwrap();
    commit(&mut q, &t);
    assert_eq!(q.status(id), Some(JobStatus::Idle));
    assert_eq!(text(&q, id, "Iwd").as_deref(), Some(dir));
    assert_eq!(text(&q, id, "SUBMIT_Iwd").as_deref(), Some("/home/ada/run"));
    assert_eq!(text(&q, id, "Cmd").as_deref(), Some("prog.sh"));
    assert_eq!(
        text(&q, id, "SUBMIT_Cmd").as_deref(),
        Some("/home/ada/run/prog.sh")
    );
    assert_eq!(
        text(&q, id, "TransferInput").as_deref(),
        Some("in.txt,table.csv,ref.dat")
    );
    assert_eq!(text(&q, id, "In").as_deref(), Some("stdin.txt"));
    // a relative Out stays (below the new Iwd); an absolute Err is kept aside
    assert_eq!(text(&q, id, "Out").as_deref(), Some("out.txt"));
    assert_eq!(text(&q, id, "Err").as_deref(), Some("err.txt"));
    assert_eq!(
        text(&q, id, "SUBMIT_Err").as_deref(),
        Some("/home/ada/logs/err.txt")
    );
    // remaps apply when the output is fetched, not in the spool
    assert_eq!(text(&q, id, "TransferOutputRemaps"), None);
    assert_eq!(
        text(&q, id, "SUBMIT_TransferOutputRemaps").as_deref(),
        Some("result = res/result.txt")
    );
    assert_eq!(int(&q, id, "StageInStart"), Some(NOW - 5));
    assert_eq!(int(&q, id, "StageInFinish"), Some(NOW + 1));
    assert!(q.job(id).unwrap().lookup("HoldReasonCode").is_none());
    assert_eq!(int(&q, id, "LastHoldReasonCode"), Some(16));
    // a second completion is refused: it is no longer spooling
    assert!(matches!(
        q.plan_spool_complete(id, dir, NOW, "ada", false, NOW + 2),
        Err(QueueError::Conflict(_))
    ));
}

#[test]
fn leave_job_in_queue_keeps_a_completed_job_until_its_output_is_fetched() {
    let mut q = Queue::new();
    let id = completed(&mut q, "");
    assert_eq!(q.status(id), Some(JobStatus::Completed));
    assert_eq!(int(&q, id, "CompletionDate"), Some(NOW + 10));
    // the periodic round keeps it while the expression holds (ten days)
    let t = q.plan_periodic(&mut ev(NOW + 100), NOW + 100, &SystemPolicy::default());
    commit(&mut q, &t);
    assert_eq!(q.status(id), Some(JobStatus::Completed));

    // another user may not fetch it
    assert!(matches!(
        q.plan_output_fetched(id, "bob", false, NOW + 200, NOW + 201),
        Err(QueueError::PermissionDenied(_))
    ));
    let t = q
        .plan_output_fetched(id, "ada", false, NOW + 200, NOW + 201)
        .unwrap();
    assert_eq!(t.history_jobs().collect::<Vec<_>>(), vec![id]);
    commit(&mut q, &t);
    assert!(q.job(id).is_none(), "the job left the queue");
}

#[test]
fn a_completed_job_leaves_once_leave_job_in_queue_stops_holding() {
    let mut q = Queue::new();
    let id = completed(&mut q, "");
    // eleven days later the default expression no longer holds
    let later = NOW + 10 + 11 * 86_400;
    let t = q.plan_periodic(&mut ev(later), later, &SystemPolicy::default());
    assert_eq!(t.history_jobs().collect::<Vec<_>>(), vec![id]);
    commit(&mut q, &t);
    assert!(q.job(id).is_none());
}

#[test]
fn the_periodic_timer_lets_an_expired_completed_job_go() {
    // the timer's two halves: decisions on a snapshot, then the plan
    let mut q = Queue::new();
    let id = completed(&mut q, "");
    let soon = NOW + 100;
    let d = skua_queue::periodic_decisions(
        &mut ev(soon),
        soon,
        &SystemPolicy::default(),
        &q.job_snapshot(),
        || false,
    );
    assert!(q.plan_periodic_decided(&d, soon).is_empty());
    let later = NOW + 10 + 11 * 86_400;
    let d = skua_queue::periodic_decisions(
        &mut ev(later),
        later,
        &SystemPolicy::default(),
        &q.job_snapshot(),
        || false,
    );
    let t = q.plan_periodic_decided(&d, later);
    assert_eq!(t.history_jobs().collect::<Vec<_>>(), vec![id]);
    commit(&mut q, &t);
    assert!(q.job(id).is_none());
}

#[test]
fn without_leave_job_in_queue_a_completed_job_leaves_at_once() {
    for value in ["false", "undefined", "JobStatus == 5", "\"yes\""] {
        let mut q = Queue::new();
        let id = completed(&mut q, &format!("LeaveJobInQueue = {value}"));
        assert!(q.job(id).is_none(), "LeaveJobInQueue = {value} kept it");
    }
    // true, or an expression true on the completed job, keeps it
    for value in ["true", "JobStatus == 4 && ExitCode == 0", "1"] {
        let mut q = Queue::new();
        let id = completed(&mut q, &format!("LeaveJobInQueue = {value}"));
        assert_eq!(q.status(id), Some(JobStatus::Completed), "{value}");
    }
}

#[test]
fn a_completed_job_kept_in_the_queue_can_be_removed_but_not_fetched_twice() {
    let mut q = Queue::new();
    let id = completed(&mut q, "");
    let (t, report) = q
        .plan_action(
            Action::Remove,
            &Selector::Jobs(vec![id]),
            &Actor::user("ada"),
            NOW + 20,
            Some("done with it"),
        )
        .unwrap();
    assert_eq!(report.entries[0].jobs, vec![(id, Outcome::Done)]);
    commit(&mut q, &t);
    assert!(q.job(id).is_none());
    assert!(matches!(
        q.plan_output_fetched(id, "ada", false, NOW + 30, NOW + 31),
        Err(QueueError::NotFound(_))
    ));
}
