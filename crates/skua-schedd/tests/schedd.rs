//! The schedd's state over a real SQLite store, with simulated time: what
//! is acknowledged survives a reopen, changes reach the history and the
//! user log, and refused changes leave no trace.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use classad::ClassAd;
use skua_queue::{Action, Actor, JobId, Selector, SubmitLimits};
use skua_schedd::{JobFilter, Schedd, ScheddSettings};

const T0: i64 = 1_795_262_400; // 2026-11-21 12:00:00 UTC

fn utc(_: i64) -> i32 {
    0
}

fn settings() -> ScheddSettings {
    ScheddSettings {
        submit_host: "<127.0.0.1:9618>".into(),
        utc_offset: Some(utc),
        ..ScheddSettings::default()
    }
}

fn open(dir: &Path) -> Schedd {
    Schedd::open(&dir.join("job_queue.db"), settings()).unwrap()
}

fn job(proc: u32, extra: &str, log: Option<&Path>) -> ClassAd {
    let log = log
        .map(|p| format!("UserLog = \"{}\";", p.display()))
        .unwrap_or_default();
    classad::parse_ad(&format!(
        "[ Cmd = \"/bin/sleep\"; Args = \"60\"; JobStatus = 1; ProcId = {proc}; JobUniverse = 5; \
           RequestMemory = 128; Iwd = \"/tmp\"; {log} {extra} ]"
    ))
    .unwrap()
}

fn submit(s: &mut Schedd, owner: &str, n: u32, extra: &str, log: Option<&Path>) -> u32 {
    let c = s.new_cluster(T0).unwrap();
    let jobs = (0..n).map(|p| job(p, extra, log)).collect();
    assert_eq!(s.submit(owner, c, jobs, T0).unwrap(), n as usize);
    c
}

fn status(s: &Schedd, id: JobId) -> Option<i64> {
    s.queue()
        .job(id)
        .and_then(|ad| match ad.lookup("JobStatus") {
            Some(classad::Expr::Lit(v)) => v.as_int(),
            _ => None,
        })
}

fn attr(s: &mut Schedd, id: JobId, name: &str) -> Option<String> {
    let filter = JobFilter {
        ids: vec![id],
        ..JobFilter::default()
    };
    let ads = s.query(&filter, &[name.to_string()], T0);
    let ad = classad::parse_ad(ads.first()?).ok()?;
    ad.lookup(name).map(classad::unparse)
}

#[test]
fn a_submitted_cluster_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let c = {
        let mut s = open(dir.path());
        submit(&mut s, "ann", 3, "", None)
    };
    let mut s = open(dir.path());
    assert_eq!(s.queue().len(), 3);
    for p in 0..3 {
        assert_eq!(status(&s, JobId::new(c, p)), Some(1));
        assert_eq!(
            attr(&mut s, JobId::new(c, p), "Owner").as_deref(),
            Some("\"ann\"")
        );
        assert_eq!(
            attr(&mut s, JobId::new(c, p), "ProcId").as_deref(),
            Some(p.to_string().as_str())
        );
    }
    // the next cluster id is not reused after a restart
    let next = s.new_cluster(T0).unwrap();
    assert!(next > c);
}

#[test]
fn a_reserved_but_unsubmitted_cluster_id_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let mut s = open(dir.path());
        s.new_cluster(T0).unwrap()
    };
    let mut s = open(dir.path());
    assert_eq!(s.queue().len(), 0);
    assert!(s.new_cluster(T0).unwrap() > first);
}

#[test]
fn submitting_into_an_unreserved_cluster_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let e = s.submit("ann", 42, vec![job(0, "", None)], T0).unwrap_err();
    assert!(e.to_string().contains("42"), "{e}");
    drop(s);
    assert_eq!(open(dir.path()).queue().len(), 0);
}

#[test]
fn hold_release_remove_reach_the_store_the_history_and_the_user_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("job.log");
    let mut s = open(dir.path());
    // the log is written with its owner's rights: as root, the owner must
    // be an account that may write in the directory
    let root = std::fs::metadata("/proc/self").map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    });
    let owner = if root.unwrap_or(false) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        "nobody"
    } else {
        "ann"
    };
    let c = submit(&mut s, owner, 2, "", Some(&log));
    let ann = Actor::user(owner);
    let j0 = JobId::new(c, 0);
    let r = s
        .act(
            Action::Hold,
            &Selector::Jobs(vec![j0]),
            &ann,
            Some("lunch"),
            T0 + 10,
        )
        .unwrap();
    assert_eq!(r.done(), vec![j0]);
    assert_eq!(status(&s, j0), Some(5));
    s.act(
        Action::Release,
        &Selector::Jobs(vec![j0]),
        &ann,
        None,
        T0 + 20,
    )
    .unwrap();
    assert_eq!(status(&s, j0), Some(1));
    s.act(
        Action::Remove,
        &Selector::Cluster(c),
        &ann,
        Some("done"),
        T0 + 30,
    )
    .unwrap();
    drop(s);

    let mut s = open(dir.path());
    assert_eq!(s.queue().len(), 0, "removed idle jobs leave the queue");
    let hist = s
        .history(&JobFilter::default(), &[], None, T0 + 40)
        .unwrap();
    assert_eq!(hist.len(), 2);
    let newest = classad::parse_ad(&hist[0]).unwrap();
    assert_eq!(
        newest.lookup("JobStatus").map(classad::unparse).as_deref(),
        Some("3")
    );
    assert_eq!(
        newest.lookup("Owner").map(classad::unparse).as_deref(),
        Some(format!("\"{owner}\"").as_str())
    );

    let text = std::fs::read_to_string(&log).unwrap();
    let headers: Vec<&str> = text
        .lines()
        .filter(|l| l.len() > 4 && l.as_bytes()[3] == b' ' && l.starts_with('0'))
        .map(|l| &l[..3])
        .collect();
    assert_eq!(
        headers,
        ["000", "000", "012", "013", "009", "009"],
        "submit x2, held, released, aborted x2:\n{text}"
    );
    assert!(
        text.contains(&format!(
            "000 ({c:03}.000.000) 2026-11-21 12:00:00 Job submitted from host: <127.0.0.1:9618>"
        )),
        "{text}"
    );
    assert!(text.contains("lunch"), "{text}");
}

#[test]
fn another_users_job_is_refused_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let c = submit(&mut s, "ann", 1, "", None);
    let j = JobId::new(c, 0);
    let e = s
        .act(
            Action::Remove,
            &Selector::Jobs(vec![j]),
            &Actor::user("bob"),
            None,
            T0,
        )
        .unwrap_err();
    assert!(e.to_string().contains(&j.to_string()), "{e}");
    assert!(s
        .set_attr(
            &Selector::Jobs(vec![j]),
            &Actor::user("bob"),
            "JobPrio",
            "5",
            T0
        )
        .is_err());
    drop(s);
    let mut s = open(dir.path());
    assert_eq!(status(&s, j), Some(1));
    assert_eq!(attr(&mut s, j, "JobPrio"), None);
    // an administrator may
    s.act(
        Action::Hold,
        &Selector::Jobs(vec![j]),
        &Actor::admin("root"),
        None,
        T0,
    )
    .unwrap();
    assert_eq!(status(&s, j), Some(5));
}

#[test]
fn periodic_remove_and_hold_fire_with_simulated_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let removed = submit(
        &mut s,
        "ann",
        1,
        "PeriodicRemove = time() > QDate + 100;",
        None,
    );
    let held = submit(
        &mut s,
        "ann",
        1,
        "PeriodicHold = time() > QDate + 50; PeriodicHoldReason = \"too slow\"; PeriodicHoldSubCode = 7;",
        None,
    );
    assert_eq!(s.periodic(T0 + 10).unwrap(), 0, "nothing due yet");
    assert!(s.periodic(T0 + 60).unwrap() > 0);
    let h = JobId::new(held, 0);
    assert_eq!(status(&s, h), Some(5));
    assert_eq!(attr(&mut s, h, "HoldReasonCode").as_deref(), Some("3"));
    assert_eq!(attr(&mut s, h, "HoldReasonSubCode").as_deref(), Some("7"));
    assert_eq!(
        attr(&mut s, h, "HoldReason").as_deref(),
        Some("\"too slow\"")
    );
    assert_eq!(status(&s, JobId::new(removed, 0)), Some(1));
    s.periodic(T0 + 200).unwrap();
    assert_eq!(s.queue().job(JobId::new(removed, 0)), None);
    drop(s);
    let mut s = open(dir.path());
    let hist = s
        .history(&JobFilter::default(), &["RemoveReason".into()], None, T0)
        .unwrap();
    assert_eq!(hist.len(), 1);
    assert!(hist[0].contains("PeriodicRemove"), "{}", hist[0]);
}

#[test]
fn qedit_persists() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let c = submit(&mut s, "ann", 2, "", None);
    let n = s
        .set_attr(
            &Selector::Cluster(c),
            &Actor::user("ann"),
            "JobPrio",
            "10",
            T0,
        )
        .unwrap();
    assert_eq!(n, 2);
    drop(s);
    let mut s = open(dir.path());
    assert_eq!(
        attr(&mut s, JobId::new(c, 1), "JobPrio").as_deref(),
        Some("10")
    );
}

#[test]
fn max_jobs_per_submission_refuses_a_larger_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Schedd::open(
        &dir.path().join("q.db"),
        ScheddSettings {
            limits: SubmitLimits {
                max_jobs_per_submission: Some(2),
                ..SubmitLimits::default()
            },
            ..settings()
        },
    )
    .unwrap();
    let c = s.new_cluster(T0).unwrap();
    let e = s
        .submit("ann", c, (0..3).map(|p| job(p, "", None)).collect(), T0)
        .unwrap_err();
    assert!(e.to_string().contains("MAX_JOBS_PER_SUBMISSION"), "{e}");
    assert_eq!(s.queue().len(), 0);
}

#[test]
fn max_jobs_per_owner_refuses_the_submission_that_would_pass_it_even_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let limited = || ScheddSettings {
        limits: SubmitLimits {
            max_jobs_per_owner: Some(4),
            ..SubmitLimits::default()
        },
        ..settings()
    };
    let path = dir.path().join("q.db");
    let mut s = Schedd::open(&path, limited()).unwrap();
    submit(&mut s, "ann", 3, "", None);
    drop(s);
    // the count comes from the queue itself, so a restart does not reset it
    let mut s = Schedd::open(&path, limited()).unwrap();
    let c = s.new_cluster(T0).unwrap();
    let e = s
        .submit("ann", c, (0..2).map(|p| job(p, "", None)).collect(), T0)
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("MAX_JOBS_PER_OWNER") && msg.contains("ann has 3 jobs"),
        "{msg}"
    );
    assert_eq!(s.queue().len(), 3);
    drop(s);
    assert_eq!(Schedd::open(&path, limited()).unwrap().queue().len(), 3);
}

#[test]
fn a_submission_sent_twice_with_its_key_makes_one_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job_queue.db");
    let mut s = open(dir.path());
    let c = s.new_cluster(T0).unwrap();
    let jobs = || (0..3).map(|p| job(p, "", None)).collect::<Vec<_>>();
    let first = s.submit_keyed("ann", c, jobs(), Some("k-1"), T0).unwrap();
    assert_eq!((first.cluster, first.jobs, first.repeated), (c, 3, false));
    assert_eq!(
        attr(&mut s, JobId::new(c, 0), "SubmissionId").as_deref(),
        Some("\"k-1\"")
    );
    // the answer was lost; the tool sends the same request again
    let again = s
        .submit_keyed("ann", c, jobs(), Some("k-1"), T0 + 5)
        .unwrap();
    assert_eq!((again.cluster, again.jobs, again.repeated), (c, 3, true));
    assert_eq!(s.queue().len(), 3);
    // even after the jobs left the queue and the schedd restarted
    s.act(
        Action::RemoveForce,
        &Selector::Cluster(c),
        &Actor::admin("root"),
        None,
        T0 + 6,
    )
    .unwrap();
    assert_eq!(s.queue().len(), 0);
    drop(s);
    let mut s = Schedd::open(&path, settings()).unwrap();
    let later = s
        .submit_keyed("ann", c, jobs(), Some("k-1"), T0 + 60)
        .unwrap();
    assert_eq!((later.cluster, later.repeated), (c, true));
    assert_eq!(s.queue().len(), 0);
    // another user's key is not an answer for them
    let c2 = s.new_cluster(T0).unwrap();
    assert!(s.submit_keyed("bob", c2, jobs(), Some("k-1"), T0).is_err());
    assert!(s
        .submit_keyed("bob", c2, jobs(), Some("bad key!"), T0)
        .is_err());
    let fresh = s.submit_keyed("bob", c2, jobs(), Some("k-2"), T0).unwrap();
    assert_eq!((fresh.cluster, fresh.repeated), (c2, false));
}

#[test]
fn batch_view_groups_by_owner_and_batch_and_counts_jobs_that_left() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let a = submit(&mut s, "ann", 3, "", None);
    let b1 = submit(&mut s, "ann", 2, "JobBatchName = \"sweep\";", None);
    let b2 = submit(&mut s, "ann", 1, "JobBatchName = \"sweep\";", None);
    let bob = submit(&mut s, "bob", 1, "", None);
    let ann = Actor::user("ann");
    s.act(
        Action::Remove,
        &Selector::Jobs(vec![JobId::new(a, 0)]),
        &ann,
        None,
        T0,
    )
    .unwrap();
    s.act(
        Action::Hold,
        &Selector::Jobs(vec![JobId::new(a, 1)]),
        &ann,
        None,
        T0,
    )
    .unwrap();
    let rows = s.batches(&JobFilter::default(), T0);
    type Row = (String, String, u64, u64, u64, (u32, u32), (u32, u32));
    let summary: Vec<Row> = rows
        .iter()
        .map(|r| {
            (
                r.owner.clone(),
                r.name.clone(),
                r.idle,
                r.held,
                r.done,
                r.first,
                r.last,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("ann".into(), format!("ID: {a}"), 1, 1, 1, (a, 1), (a, 2)),
            ("ann".into(), "sweep".into(), 3, 0, 0, (b1, 0), (b2, 0)),
            (
                "bob".into(),
                format!("ID: {bob}"),
                1,
                0,
                0,
                (bob, 0),
                (bob, 0)
            ),
        ]
    );
    let only_bob = JobFilter {
        owners: vec!["bob".into()],
        ..JobFilter::default()
    };
    assert_eq!(s.batches(&only_bob, T0).len(), 1);
}

#[test]
fn the_periodic_policy_is_checked_at_each_state_change_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    // true from the start: checked when the job arrives
    let c = submit(
        &mut s,
        "ann",
        1,
        "JobPrio = 0; PeriodicHold = JobPrio > 5;",
        None,
    );
    let j = JobId::new(c, 0);
    assert_eq!(status(&s, j), Some(1));
    // an edit that makes it true takes effect at once, not at the next pass
    s.set_attr(
        &Selector::Jobs(vec![j]),
        &Actor::user("ann"),
        "JobPrio",
        "9",
        T0 + 1,
    )
    .unwrap();
    assert_eq!(status(&s, j), Some(5));
    assert_eq!(attr(&mut s, j, "HoldReasonCode").as_deref(), Some("3"));
    let gone = submit(&mut s, "ann", 2, "PeriodicRemove = true;", None);
    assert_eq!(s.queue().job(JobId::new(gone, 0)), None);
    assert_eq!(s.queue().job(JobId::new(gone, 1)), None);
}

/// Waits (a bounded number of short polls) for `path` to be gone: the
/// schedd removes a job's checkpoints in the background.
fn gone(path: &Path) -> bool {
    for _ in 0..500 {
        if !path.exists() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

#[test]
fn a_jobs_checkpoints_are_removed_when_it_leaves_the_queue() {
    use skua_schedd::checkpoint;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("checkpoints");
    let settings = ScheddSettings {
        checkpoint_root: Some(store.clone()),
        ..settings()
    };
    let mut s = Schedd::open(&dir.path().join("job_queue.db"), settings).unwrap();
    let c = submit(&mut s, "ann", 2, "", None);
    let (kept, removed) = (JobId::new(c, 0), JobId::new(c, 1));
    for id in [kept, removed] {
        let (mut f, _) = checkpoint::create_staged(&store, id, 1, "state.txt").unwrap();
        std::io::Write::write_all(&mut f, b"state").unwrap();
        checkpoint::commit(&store, id, 1, &["state.txt".into()]).unwrap();
    }
    let r = s
        .act(
            Action::Remove,
            &Selector::Jobs(vec![removed]),
            &Actor::user("ann"),
            None,
            T0 + 1,
        )
        .unwrap();
    assert!(r.all_done());
    assert!(
        gone(&checkpoint::job_dir(&store, removed)),
        "the removed job's checkpoints are still there"
    );
    // the other job's are untouched
    assert!(checkpoint::stored_dir(&store, kept, 1)
        .join("state.txt")
        .is_file());
}

#[test]
fn parallel_jobs_are_never_offered_as_their_owners_ordinary_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let c = s.new_cluster(T0).unwrap();
    let parallel = classad::parse_ad(
        "[ Cmd = \"/bin/sleep\"; JobStatus = 1; ProcId = 0; JobUniverse = 11; MinHosts = 2; MaxHosts = 2; \
           RequestMemory = 128; Iwd = \"/tmp\"; Requirements = true ]",
    )
    .unwrap();
    s.submit("ann", c, vec![parallel], T0).unwrap();
    let vanilla = submit(&mut s, "ann", 1, "Requirements = true;", None);
    assert!(s.is_parallel(JobId::new(c, 0)));
    assert!(!s.is_parallel(JobId::new(vanilla, 0)));

    let mut busy = std::collections::HashSet::new();
    let requests = s.resource_requests("ann", &[], &busy, T0);
    let offered: u64 = requests.iter().map(|(_, _, n)| n).sum();
    assert_eq!(
        offered, 1,
        "only the vanilla job is requested: {requests:?}"
    );

    let slot = classad::parse_ad("[ Requirements = true; Memory = 1024; Cpus = 1 ]").unwrap();
    assert_eq!(
        s.next_job_for("ann", &slot, &busy, T0),
        Some(JobId::new(vanilla, 0))
    );
    busy.insert(JobId::new(vanilla, 0));
    assert_eq!(
        s.next_job_for("ann", &slot, &busy, T0),
        None,
        "a reused claim never picks the parallel job"
    );
}
