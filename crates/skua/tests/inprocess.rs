//! The daemons' protocols in one process: the collector, negotiator,
//! schedd and startd of `skua-testkit`'s in-process pool, the real
//! starter (`skuad starter`) spawned by the startd, and faults between the
//! daemons made by the pool's fault filter.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use classad::{ClassAd, Evaluator};
use skua_testkit::{InProcessPool, PoolBuilder, SubmitBuilder};

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
    let queue = pool.queue(&user).await.unwrap();
    let job = queue
        .iter()
        .find(|ad| int(ad, "ClusterId") == Some(i64::from(cluster)))
        .expect("the job is still queued");
    assert_eq!(int(job, "JobStatus"), Some(1), "still Idle");
    assert_eq!(int(job, "NumJobStarts").unwrap_or(0), 0);
    // healed: once the unclaimed match times out at the startd, the slot is
    // matched again, claimed, and the job runs to completion
    pool.faults.heal();
    pool.advance(Duration::from_secs(2));
    let ad = finished(&pool, &user, cluster).await;
    assert_eq!(int(&ad, "JobStatus"), Some(4));
    assert_eq!(int(&ad, "ExitCode"), Some(0));
    assert_eq!(int(&ad, "NumJobStarts"), Some(1));
    pool.shutdown().await.unwrap();
}
