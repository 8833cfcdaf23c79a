//! The in-process pool itself: its daemons come up, find each other and
//! go down on request; a cut between two of them shows, and heals.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use skua_testkit::PoolBuilder;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemons_come_up_advertise_and_stop_cleanly() {
    let mut pool = PoolBuilder::new("up-down")
        .knob("NUM_CPUS", "2")
        .start()
        .await
        .unwrap();
    for d in skua_testkit::pool::DAEMONS {
        assert!(pool.is_running(d), "{d}");
        assert!(pool.address(d).ip().is_loopback());
    }
    // the startd's two slots and the schedd's ad reach the collector
    let slots = pool
        .wait_for("two slot ads", Duration::from_secs(10), || async {
            let ads = pool.ads("Machine").await.ok()?;
            (ads.len() == 2).then_some(ads)
        })
        .await
        .unwrap();
    let addr = pool.address("STARTD");
    for ad in &slots {
        let mut ev = classad::Evaluator::default();
        let my_address = ev.eval_attr("MyAddress", ad, None).as_string().unwrap();
        let sinful = skua_daemon::address::Sinful::parse(&my_address).unwrap();
        assert_eq!(sinful.addr, addr, "{my_address}");
        assert_eq!(
            ev.eval_attr("State", ad, None).as_string().as_deref(),
            Some("Unclaimed")
        );
    }
    pool.wait_for("the schedd's ad", Duration::from_secs(10), || async {
        let ads = pool.ads("Scheduler").await.ok()?;
        (ads.len() == 1).then_some(())
    })
    .await
    .unwrap();
    // a clean stop withdraws the startd's ads
    pool.stop("STARTD").await.unwrap();
    assert!(!pool.is_running("STARTD"));
    pool.wait_for(
        "the slot ads withdrawn",
        Duration::from_secs(10),
        || async {
            let ads = pool.ads("Machine").await.ok()?;
            ads.is_empty().then_some(())
        },
    )
    .await
    .unwrap();
    pool.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_killed_and_started_again_gets_the_startds_ads_again() {
    let mut pool = PoolBuilder::new("collector-restart")
        .only(&["COLLECTOR", "STARTD"])
        .start()
        .await
        .unwrap();
    pool.wait_for("the slot ad", Duration::from_secs(10), || async {
        (pool.ads("Machine").await.ok()?.len() == 1).then_some(())
    })
    .await
    .unwrap();
    // a crash: nothing withdrawn, nothing kept
    pool.kill("COLLECTOR").await;
    assert!(!pool.is_running("COLLECTOR"));
    let again = pool.start_daemon("COLLECTOR").await.unwrap();
    assert_eq!(pool.address("COLLECTOR"), again);
    // the startd finds the new collector and advertises its slot there
    pool.wait_for("the slot ad again", Duration::from_secs(10), || async {
        (pool.ads("Machine").await.ok()?.len() == 1).then_some(())
    })
    .await
    .unwrap();
    pool.shutdown().await.unwrap();
}
