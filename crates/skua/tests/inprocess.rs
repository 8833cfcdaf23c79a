//! The daemons' protocols in one process: the collector, negotiator,
//! schedd and startd of `skua-testkit`'s in-process pool, the real
//! starter (`skuad starter`) spawned by the startd, and faults between the
//! daemons made by the pool's fault filter.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use classad::{ClassAd, Evaluator};
use skua_net::{Fault, Rule};
use skua_proto::{
    routes, Ack, ActivateRequest, ClaimAlive, ClaimReply, ClaimRequest, ClaimStatus, MatchNotice,
    ReleaseRequest, StarterSpec,
};
use skua_testkit::starter::StarterMode;
use skua_testkit::{FakeStarter, InProcessPool, JobAdBuilder, PoolBuilder, SubmitBuilder};

/// Who submits: the tests' account when they run as root (root may not
/// submit), else the account running them.
fn submitter(pool: &InProcessPool) -> String {
    common::submitter()
        .map(|u| u.name)
        .unwrap_or_else(|| pool.owner().to_string())
}

fn int(ad: &ClassAd, attr: &str) -> Option<i64> {
    Evaluator::default().eval_attr(attr, ad, None).as_int()
}

/// The queue's ad of job `cluster.0`, if it is still queued.
async fn queued(pool: &InProcessPool, user: &str, cluster: u32) -> Option<ClassAd> {
    pool.queue(user)
        .await
        .ok()?
        .into_iter()
        .find(|ad| int(ad, "ClusterId") == Some(i64::from(cluster)))
}

/// A pool whose startd runs the real starter.
async fn pool(name: &str) -> InProcessPool {
    PoolBuilder::new(name)
        .real_starter(Path::new(common::SKUAD))
        .start()
        .await
        .unwrap()
}

/// Submits one `/bin/sh -c 'exit <code>'` job from a working directory of
/// the submitter's; returns the cluster.
async fn submit_exit(pool: &InProcessPool, user: &str, code: i32) -> u32 {
    let work = pool.dir.join("work");
    common::user_dir(&work);
    let jobs = SubmitBuilder::new("/bin/sh")
        .arguments(&format!("\"-c 'exit {code}'\""))
        .requests(1, 1)
        .job_ads(user, 1, 0, &work.display().to_string())
        .unwrap();
    pool.submit(user, &jobs).await.unwrap()
}

/// Waits for job `cluster.0` to leave the queue; returns its history ad.
async fn finished(pool: &InProcessPool, user: &str, cluster: u32) -> ClassAd {
    pool.wait_for(
        "the job in the history",
        Duration::from_secs(30),
        || async {
            pool.history(user)
                .await
                .ok()?
                .into_iter()
                .find(|ad| int(ad, "ClusterId") == Some(i64::from(cluster)))
        },
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_is_matched_claimed_activated_and_completes() {
    let pool = pool("one-job").await;
    let user = submitter(&pool);
    let t = Instant::now();
    let cluster = submit_exit(&pool, &user, 3).await;
    let ad = finished(&pool, &user, cluster).await;
    eprintln!("submitted to completed in {:?}", t.elapsed());
    assert_eq!(int(&ad, "JobStatus"), Some(4), "Completed");
    assert_eq!(int(&ad, "ExitCode"), Some(3));
    assert_eq!(int(&ad, "NumJobStarts"), Some(1));
    // the slot is given back once the claim has no more work
    pool.wait_for("the slot unclaimed", Duration::from_secs(30), || async {
        (slot_state(&pool).await? == "Unclaimed").then_some(())
    })
    .await
    .unwrap();
    pool.shutdown().await.unwrap();
}

/// The state of the pool's (only) slot, as the collector has it.
async fn slot_state(pool: &InProcessPool) -> Option<String> {
    let ads = pool.ads("Machine").await.ok()?;
    Evaluator::default()
        .eval_attr("State", ads.first()?, None)
        .as_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_refused_by_a_cut_leaves_the_slot_matched_until_its_match_times_out() {
    // MATCH_TIMEOUT: how long the startd keeps a match nobody claims
    let pool = PoolBuilder::new("cut-claim")
        .real_starter(Path::new(common::SKUAD))
        .knob("MATCH_TIMEOUT", "2")
        .start()
        .await
        .unwrap();
    let user = submitter(&pool);
    let [schedd_to_startd, _] = pool.faults.cut("SCHEDD", "STARTD");
    let t = Instant::now();
    let cluster = submit_exit(&pool, &user, 0).await;
    // the negotiator matches the job (its notices are not cut), and the
    // schedd's claim fails as a refused connection
    pool.wait_for("a refused claim", Duration::from_secs(30), || async {
        (pool.faults.hits(schedd_to_startd) >= 1).then_some(())
    })
    .await
    .unwrap();
    pool.wait_for("the slot matched", Duration::from_secs(10), || async {
        (slot_state(&pool).await? == "Matched").then_some(())
    })
    .await
    .unwrap();
    let job = queued(&pool, &user, cluster)
        .await
        .expect("the job is still queued");
    assert_eq!(int(&job, "JobStatus"), Some(1), "still Idle");
    assert_eq!(int(&job, "NumJobStarts").unwrap_or(0), 0);
    // healed: once the unclaimed match times out at the startd, the slot is
    // matched again, claimed, and the job runs to completion
    eprintln!("matched and refused after {:?}", t.elapsed());
    pool.faults.heal();
    pool.advance(Duration::from_secs(2));
    let ad = finished(&pool, &user, cluster).await;
    eprintln!("completed after {:?}", t.elapsed());
    assert_eq!(int(&ad, "JobStatus"), Some(4));
    assert_eq!(int(&ad, "ExitCode"), Some(0));
    assert_eq!(int(&ad, "NumJobStarts"), Some(1));
    pool.shutdown().await.unwrap();
}

/// A startd (and its collector) in process, with a fake starter; the
/// name of its first slot.
async fn startd_pool(
    name: &str,
    mode: StarterMode,
    knobs: &[(&str, &str)],
) -> (InProcessPool, FakeStarter, String) {
    let mut builder = PoolBuilder::new(name)
        .only(&["COLLECTOR", "STARTD"])
        .fake_starter(mode);
    for (k, v) in knobs {
        builder = builder.knob(k, v);
    }
    let pool = builder.start().await.unwrap();
    let fake = pool.fake_starter.clone().unwrap();
    let slot = pool
        .wait_for("the slot ad", Duration::from_secs(10), || async {
            let ads = pool.ads("Machine").await.ok()?;
            Evaluator::default()
                .eval_attr("Name", ads.first()?, None)
                .as_string()
        })
        .await
        .unwrap();
    (pool, fake, slot)
}

fn notice(slot: &str, claim: &str, submitter: &str, preempting: bool) -> MatchNotice {
    MatchNotice {
        slot: slot.into(),
        claim_id: claim.into(),
        submitter: submitter.into(),
        schedd_addr: "<127.0.0.1:1>".into(),
        preempting,
    }
}

fn claim(claim: &str, owner: &str) -> ClaimRequest {
    ClaimRequest {
        claim_id: claim.into(),
        job_ad: JobAdBuilder::new().owner(owner).text(),
        schedd_addr: "<127.0.0.1:1>".into(),
        alive_interval_secs: 0,
    }
}

fn activate(claim: &str, job_id: &str) -> ActivateRequest {
    ActivateRequest {
        claim_id: claim.into(),
        job_ad: JobAdBuilder::new().owner("alice").text(),
        job_id: job_id.into(),
        shadow_addr: "<127.0.0.1:1>".into(),
        owner_ids: None,
    }
}

fn status(e: &skua_net::NetError) -> u16 {
    match e {
        skua_net::NetError::Remote { status, .. } => *status,
        other => panic!("not an answer from the startd: {other}"),
    }
}

const CLAIM: &str = "inprocess-claim-0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_is_matched_claimed_activated_and_released() {
    let (pool, fake, slot) = startd_pool("claim", StarterMode::Hold, &[]).await;
    let startd = pool.daemon_client("STARTD").unwrap();
    let _: Ack = startd
        .command(
            &routes::STARTD_MATCH,
            Some(&notice(&slot, CLAIM, "alice@test", false)),
        )
        .await
        .unwrap();
    // a claim under another id is refused; a second match is stale
    let e = startd
        .command::<_, ClaimReply>(
            &routes::STARTD_CLAIM,
            Some(&claim("inprocess-claim-wrong-000000", "alice")),
        )
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404, "{e}");
    let e = startd
        .command::<_, Ack>(
            &routes::STARTD_MATCH,
            Some(&notice(
                &slot,
                "inprocess-claim-other-00000",
                "bob@test",
                false,
            )),
        )
        .await
        .unwrap_err();
    assert_eq!(status(&e), 409, "{e}");
    let reply: ClaimReply = startd
        .command(&routes::STARTD_CLAIM, Some(&claim(CLAIM, "alice")))
        .await
        .unwrap();
    assert_eq!(reply.slot, slot);
    assert!(
        reply.slot_ad.contains("State = \"Claimed\""),
        "{}",
        reply.slot_ad
    );
    // activation hands the starter its spec; a second one is put off
    let _: Ack = startd
        .command(&routes::STARTD_ACTIVATE, Some(&activate(CLAIM, "1.0")))
        .await
        .unwrap();
    let (pid, _, spec) = pool
        .wait_for("the starter's spec", Duration::from_secs(10), || async {
            fake.specs().pop()
        })
        .await
        .unwrap();
    let spec: StarterSpec = serde_json::from_str(&spec).unwrap();
    assert_eq!(
        (spec.claim_id.as_str(), spec.job_id.as_str()),
        (CLAIM, "1.0")
    );
    let e = startd
        .command::<_, Ack>(&routes::STARTD_ACTIVATE, Some(&activate(CLAIM, "1.0")))
        .await
        .unwrap_err();
    assert_eq!(status(&e), 503, "{e}");
    // released while busy: the job's process group is killed, the claim gone
    let job = fake.job_pid(pid).unwrap();
    assert!(common::alive(job));
    let release = ReleaseRequest {
        claim_id: CLAIM.into(),
    };
    let _: Ack = startd
        .command(&routes::STARTD_RELEASE, Some(&release))
        .await
        .unwrap();
    pool.wait_for("the job killed", Duration::from_secs(10), || async {
        (!common::alive(job)).then_some(())
    })
    .await
    .unwrap();
    // once the startd has seen its starter go, the claim is gone (the
    // startd's own view: the collector's ad may still be the one from
    // before the match) and the slot is free again
    let alive = ClaimAlive {
        claim_id: CLAIM.into(),
    };
    pool.wait_for("the claim gone", Duration::from_secs(10), || async {
        match startd
            .command::<_, ClaimStatus>(&routes::STARTD_ALIVE, Some(&alive))
            .await
        {
            Err(e) if status(&e) == 404 => Some(()),
            _ => None,
        }
    })
    .await
    .unwrap();
    let e = startd
        .command::<_, Ack>(&routes::STARTD_RELEASE, Some(&release))
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404, "{e}");
    pool.wait_for("the slot unclaimed", Duration::from_secs(10), || async {
        (slot_state(&pool).await? == "Unclaimed").then_some(())
    })
    .await
    .unwrap();
    pool.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preempting_match_vacates_the_job_then_the_new_claim_is_granted() {
    let (pool, fake, slot) = startd_pool(
        "preempt",
        StarterMode::RunUntilTerm,
        &[("MAXJOBRETIREMENTTIME", "0")],
    )
    .await;
    let startd = pool.daemon_client("STARTD").unwrap();
    let _: Ack = startd
        .command(
            &routes::STARTD_MATCH,
            Some(&notice(&slot, CLAIM, "alice@test", false)),
        )
        .await
        .unwrap();
    let _: ClaimReply = startd
        .command(&routes::STARTD_CLAIM, Some(&claim(CLAIM, "alice")))
        .await
        .unwrap();
    let _: Ack = startd
        .command(&routes::STARTD_ACTIVATE, Some(&activate(CLAIM, "1.0")))
        .await
        .unwrap();
    pool.wait_for("the job running", Duration::from_secs(10), || async {
        (!fake.marks("run.").is_empty()).then_some(())
    })
    .await
    .unwrap();
    let new_claim = "inprocess-preempting-claim-00000";
    let _: Ack = startd
        .command(
            &routes::STARTD_MATCH,
            Some(&notice(&slot, new_claim, "bob@test", true)),
        )
        .await
        .unwrap();
    // the job is vacated (SIGTERM), then the new claim is granted; until
    // then the startd says "not yet"
    let reply = pool
        .wait_for("the new claim", Duration::from_secs(15), || async {
            match startd
                .command::<_, ClaimReply>(&routes::STARTD_CLAIM, Some(&claim(new_claim, "bob")))
                .await
            {
                Ok(r) => Some(r),
                Err(e) => {
                    assert_eq!(status(&e), 503, "{e}");
                    None
                }
            }
        })
        .await
        .unwrap();
    assert!(!fake.marks("term.").is_empty(), "the job got SIGTERM");
    assert!(
        reply.slot_ad.contains("RemoteUser = \"bob@test\""),
        "{}",
        reply.slot_ad
    );
    let old = ReleaseRequest {
        claim_id: CLAIM.into(),
    };
    let e = startd
        .command::<_, Ack>(&routes::STARTD_RELEASE, Some(&old))
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404, "the old claim is gone: {e}");
    pool.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_granted_but_its_reply_lost_expires_at_the_startd_and_the_job_runs() {
    // the startd drops a claim whose schedd sends no keep-alive for
    // MAX_CLAIM_ALIVES_MISSED intervals of ALIVE_INTERVAL
    let pool = PoolBuilder::new("lost-claim-reply")
        .real_starter(Path::new(common::SKUAD))
        .knob("MAX_CLAIM_ALIVES_MISSED", "2")
        .start()
        .await
        .unwrap();
    let user = submitter(&pool);
    let lost = pool.faults.add(
        Rule::new("SCHEDD", "STARTD", Fault::DropReply)
            .on_route(routes::STARTD_CLAIM.path)
            .times(1),
    );
    let cluster = submit_exit(&pool, &user, 0).await;
    // the startd granted the claim; the schedd never heard
    pool.wait_for("the lost reply", Duration::from_secs(30), || async {
        (pool.faults.hits(lost) == 1).then_some(())
    })
    .await
    .unwrap();
    pool.wait_for("the slot claimed", Duration::from_secs(10), || async {
        (slot_state(&pool).await? == "Claimed").then_some(())
    })
    .await
    .unwrap();
    // the unused claim's lease runs out, the slot is matched again, and
    // the job runs once
    pool.advance(Duration::from_secs(2));
    let ad = finished(&pool, &user, cluster).await;
    assert_eq!(int(&ad, "JobStatus"), Some(4));
    assert_eq!(int(&ad, "NumJobStarts"), Some(1));
    pool.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_negotiator_cut_from_the_collector_matches_nothing_until_healed() {
    let pool = pool("cut-negotiator").await;
    let user = submitter(&pool);
    // wait for the slot, so that only the cut stands between job and slot
    pool.wait_for("the slot ad", Duration::from_secs(10), || async {
        (slot_state(&pool).await? == "Unclaimed").then_some(())
    })
    .await
    .unwrap();
    let [negotiator_to_collector, _] = pool.faults.cut("NEGOTIATOR", "COLLECTOR");
    let cluster = submit_exit(&pool, &user, 0).await;
    // two cycles find no collector: the job stays idle, the slot unclaimed
    pool.wait_for("two cycles refused", Duration::from_secs(30), || async {
        (pool.faults.hits(negotiator_to_collector) >= 2).then_some(())
    })
    .await
    .unwrap();
    let job = queued(&pool, &user, cluster)
        .await
        .expect("the job is still queued");
    assert_eq!(int(&job, "JobStatus"), Some(1), "still Idle");
    assert_eq!(slot_state(&pool).await.as_deref(), Some("Unclaimed"));
    pool.faults.heal();
    let ad = finished(&pool, &user, cluster).await;
    assert_eq!(int(&ad, "JobStatus"), Some(4));
    assert_eq!(int(&ad, "NumJobStarts"), Some(1));
    pool.shutdown().await.unwrap();
}

/// Whether `pid` runs a process whose command line contains `marker`.
fn running_with(marker: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name()
            .to_str()
            .is_some_and(|n| n.parse::<u32>().is_ok())
            && std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
    })
}

/// Submits one job of `user` running the shell script `script` (given the
/// job's work directory) under a 600-s lease (`JobLeaseDuration`), far
/// beyond what a test waits in real time: only the pool's clock lets it
/// run out. Its events go to `job.log` in the work directory, which anyone
/// may write (the job runs as the in-process startd's account, `nobody`:
/// its UID_DOMAIN is not the submitter's). Returns the work directory, the
/// tag that names the job's process, and the cluster.
async fn submit_leased(
    pool: &InProcessPool,
    user: &str,
    name: &str,
    script: impl FnOnce(&Path) -> String,
) -> (std::path::PathBuf, String, u32) {
    let work = pool.dir.join("work");
    common::user_dir(&work);
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let tag = format!("{name}-{}", std::process::id());
    let file = work.join(format!("{tag}.sh"));
    std::fs::write(&file, script(&work)).unwrap();
    let jobs = SubmitBuilder::new("/bin/sh")
        .arguments(&file.display().to_string())
        .set("job_lease_duration", "600")
        .set("log", "job.log")
        .requests(1, 1)
        .job_ads(user, 1, 0, &work.display().to_string())
        .unwrap();
    let cluster = pool.submit(user, &jobs).await.unwrap();
    (work, tag, cluster)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cut_off_longer_than_its_lease_is_killed_requeued_and_runs_again() {
    // keep-alives every second; the job's own lease (JobLeaseDuration) is
    // 600 s, far beyond what the test could wait for in real time: only
    // the pool's clock lets it run out
    let pool = pool("lease-expiry").await;
    let user = submitter(&pool);
    // the first run marks itself and waits for ever; the second completes
    let (work, tag, cluster) = submit_leased(&pool, &user, "lease-expiry", |work| {
        format!(
            "if [ -e {first} ]; then exit 0; fi\ntouch {first}\nsleep 100000\nexit 1\n",
            first = work.join("first-run").display()
        )
    })
    .await;
    let first = work.join("first-run");
    pool.wait_for("the first run", Duration::from_secs(30), || async {
        (first.exists() && running_with(&tag)).then_some(())
    })
    .await
    .unwrap();
    // and the schedd has heard it executes (the execute event)
    pool.wait_for(
        "the first run executing",
        Duration::from_secs(30),
        || async {
            let job = queued(&pool, &user, cluster).await?;
            (int(&job, "NumJobStarts") == Some(1)).then_some(())
        },
    )
    .await
    .unwrap();
    // the network between the schedd and the startd fails both ways
    pool.faults.cut("SCHEDD", "STARTD");
    // less than the lease: the job keeps running, still Running in the queue
    pool.advance(Duration::from_secs(300));
    let later = pool.clock.now_secs();
    // the startd has evaluated its policy at the new time (its slot ad
    // says so) and kept the claim
    pool.wait_for(
        "the startd at the new time",
        Duration::from_secs(20),
        || async {
            let ads = pool.ads("Machine").await.ok()?;
            (int(ads.first()?, "MyCurrentTime")? >= later).then_some(())
        },
    )
    .await
    .unwrap();
    assert!(running_with(&tag), "killed before its lease ran out");
    let job = queued(&pool, &user, cluster)
        .await
        .expect("the job is queued");
    assert_eq!(int(&job, "JobStatus"), Some(2), "still Running");
    // past the lease: the startd kills the job and frees the slot, the
    // schedd gives the run up and the job is Idle again
    pool.advance(Duration::from_secs(400));
    pool.wait_for("the job killed", Duration::from_secs(20), || async {
        (!running_with(&tag)).then_some(())
    })
    .await
    .unwrap();
    pool.wait_for("the job idle again", Duration::from_secs(20), || async {
        let job = queued(&pool, &user, cluster).await?;
        (int(&job, "JobStatus") == Some(1)).then_some(())
    })
    .await
    .unwrap();
    // the user log tells it: disconnected (022), then the reconnection
    // failed when the lease ran out (024); the job is Idle, not held
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    assert!(
        log.contains("Job disconnected, attempting to reconnect\n    Socket between submit and execute hosts closed unexpectedly\n    Trying to reconnect to slot1@"),
        "{log}"
    );
    assert!(
        log.contains("Job reconnection failed\n    Job disconnected too long: JobLeaseDuration (600 seconds) expired\n    Can not reconnect to slot1@"),
        "{log}"
    );
    assert!(!log.contains("Job reconnected"), "{log}");
    // healed: it runs again, this time to completion, two starts in all
    pool.faults.heal();
    let ad = finished(&pool, &user, cluster).await;
    assert_eq!(int(&ad, "JobStatus"), Some(4));
    assert_eq!(int(&ad, "ExitCode"), Some(0));
    assert_eq!(int(&ad, "NumJobStarts"), Some(2));
    pool.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cut_off_for_less_than_its_lease_reconnects_and_completes_once() {
    let pool = pool("lease-reconnect").await;
    let user = submitter(&pool);
    // the job waits for the test's word, then exits 5
    let (work, tag, cluster) = submit_leased(&pool, &user, "lease-reconnect", |work| {
        format!(
            "while [ ! -e {go} ]; do sleep 0.1; done\nexit 5\n",
            go = work.join("go").display()
        )
    })
    .await;
    let go = work.join("go");
    pool.wait_for("the job executing", Duration::from_secs(30), || async {
        let job = queued(&pool, &user, cluster).await?;
        (running_with(&tag) && int(&job, "NumJobStarts") == Some(1)).then_some(())
    })
    .await
    .unwrap();
    let log = || std::fs::read_to_string(work.join("job.log")).unwrap_or_default();
    // cut: the schedd's keep-alives fail, it is disconnected (022)
    pool.faults.cut("SCHEDD", "STARTD");
    pool.advance(Duration::from_secs(60));
    pool.wait_for("the disconnection", Duration::from_secs(20), || async {
        log()
            .contains("Job disconnected, attempting to reconnect")
            .then_some(())
    })
    .await
    .unwrap();
    let job = queued(&pool, &user, cluster).await.unwrap();
    assert_eq!(int(&job, "JobStatus"), Some(2), "still Running");
    assert!(int(&job, "JobDisconnectedDate").is_some());
    assert!(running_with(&tag), "the job keeps running");
    // healed within the lease: the next try (HTCondor's back-off: 8 s)
    // reaches the startd (023)
    pool.faults.heal();
    pool.advance(Duration::from_secs(10));
    pool.wait_for("the reconnection", Duration::from_secs(20), || async {
        log().contains("Job reconnected to slot1@").then_some(())
    })
    .await
    .unwrap();
    let job = queued(&pool, &user, cluster).await.unwrap();
    assert_eq!(int(&job, "NumJobReconnects"), Some(1));
    assert_eq!(int(&job, "JobDisconnectedDate"), None);
    // the job ends: once, with its exit code
    std::fs::write(&go, "").unwrap();
    let ad = finished(&pool, &user, cluster).await;
    assert_eq!(int(&ad, "JobStatus"), Some(4));
    assert_eq!(int(&ad, "ExitCode"), Some(5));
    assert_eq!(int(&ad, "NumJobStarts"), Some(1));
    let log = log();
    assert_eq!(log.matches("Job executing on host").count(), 1, "{log}");
    assert_eq!(log.matches("Job terminated").count(), 1, "{log}");
    assert!(!log.contains("Job was evicted"), "{log}");
    pool.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_exit_report_is_acknowledged_and_the_job_completes_once() {
    // the fake starter holds the job; the test speaks for it to the shadow
    let pool = PoolBuilder::new("repeat-exit")
        .fake_starter(StarterMode::Hold)
        .start()
        .await
        .unwrap();
    let fake = pool.fake_starter.clone().unwrap();
    let user = submitter(&pool);
    let cluster = submit_exit(&pool, &user, 0).await;
    let (_, _, spec) = pool
        .wait_for("the starter's spec", Duration::from_secs(30), || async {
            fake.specs().pop()
        })
        .await
        .unwrap();
    let spec: StarterSpec = serde_json::from_str(&spec).unwrap();
    let shadow = pool.daemon_client("SCHEDD").unwrap();
    let exit = |job_id: &str| skua_proto::JobExit {
        claim_id: spec.claim_id.clone(),
        outcome: skua_proto::RunOutcome::Exited { code: 9 },
        usage: skua_proto::JobUsage::default(),
        executed: true,
        job_id: Some(job_id.to_string()),
    };
    // another job's report under this claim is refused
    let other = format!("{cluster}.7");
    let e = shadow
        .command::<_, Ack>(&routes::SHADOW_EXIT, Some(&exit(&other)))
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404, "{e}");
    // the report, then its repeat (the first answer lost): both
    // acknowledged, recorded once
    let _: Ack = shadow
        .command(&routes::SHADOW_EXIT, Some(&exit(&spec.job_id)))
        .await
        .unwrap();
    let _: Ack = shadow
        .command(&routes::SHADOW_EXIT, Some(&exit(&spec.job_id)))
        .await
        .unwrap();
    let ad = finished(&pool, &user, cluster).await;
    assert_eq!(int(&ad, "ExitCode"), Some(9));
    assert_eq!(int(&ad, "NumJobStarts"), Some(1));
    let history = pool.history(&user).await.unwrap();
    let runs = history
        .iter()
        .filter(|ad| int(ad, "ClusterId") == Some(i64::from(cluster)))
        .count();
    assert_eq!(runs, 1, "completed once");
    pool.shutdown().await.unwrap();
}
