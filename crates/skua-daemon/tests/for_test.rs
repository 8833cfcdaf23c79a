//! `DaemonContext::for_test`: a daemon's context from what the test gives
//! (configuration, owner, clock), and clients that carry its fault filter.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use skua_config::{Config, LoadOptions, MemoryFiles};
use skua_daemon::{DaemonContext, ManualClock};
use skua_net::{ErrorCode, FaultFilter, Listener, Routes, Server};

fn config(dir: &std::path::Path, subsystem: &str) -> Config {
    let text = format!(
        "LOG = {d}/log\nLOCK = {d}/lock\nUID_DOMAIN = test.domain\n\
         SEC_TOKEN_POOL_SIGNING_KEY_FILE = {d}/key\nUPDATE_INTERVAL = 7\n",
        d = dir.display()
    );
    let files = MemoryFiles::new().with("/test/skua_config", &text);
    let opts = LoadOptions::new()
        .main_file("/test/skua_config")
        .subsystem(subsystem);
    Config::load(&files, &opts).unwrap()
}

#[test]
fn the_context_is_made_of_what_the_test_gives() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::frozen(1_000_000);
    let ctx = DaemonContext::for_test(
        "schedd",
        config(dir.path(), "SCHEDD"),
        "tester",
        clock.clock(),
    )
    .unwrap();
    assert_eq!(ctx.subsystem, "SCHEDD");
    assert_eq!(ctx.owner, "tester");
    assert_eq!(ctx.uid_domain, "test.domain");
    assert_eq!(ctx.update_interval, Duration::from_secs(7));
    assert!(ctx.log_dir.is_dir() && ctx.lock_dir.is_dir());
    // the pool key is made, and the daemon speaks with a token signed by it
    assert!(dir.path().join("key").exists());
    let token = ctx.daemon_token.clone().unwrap();
    let key = ctx.signing_key.clone().unwrap();
    let claims = skua_net::verify_token(&key, &token).unwrap();
    assert!(claims.sub.ends_with("@test.domain"), "{}", claims.sub);
    // the test's clock is the context's
    assert_eq!(ctx.clock.now_secs(), 1_000_000);
    clock.advance(Duration::from_secs(300));
    assert_eq!(ctx.clock.now_secs(), 1_000_300);
    assert!(ctx.faults.is_none());
}

#[tokio::test]
async fn every_client_the_context_makes_carries_its_fault_filter() {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultFilter::new();
    let clock = ManualClock::frozen(1_000_000);
    let ctx = DaemonContext::for_test(
        "schedd",
        config(dir.path(), "SCHEDD"),
        "tester",
        clock.clock(),
    )
    .unwrap()
    .with_faults(faults.clone());
    // a server standing for the startd, on loopback port 0
    let startd_ctx = DaemonContext::for_test(
        "startd",
        config(dir.path(), "STARTD"),
        "tester",
        clock.clock(),
    )
    .unwrap();
    let l = Listener::tcp("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let server = Server::new(startd_ctx.server_config(), Routes::new())
        .unwrap()
        .spawn(vec![l]);
    let addr = server.local_addr().unwrap();
    faults.name_address(addr, "STARTD");
    let at = ctx
        .client_at(&format!("<{addr}>"), Duration::from_secs(5))
        .unwrap();
    let dialed = ctx
        .dialer()
        .unwrap()
        .client_at(&format!("{addr}"), Duration::from_secs(5))
        .unwrap();
    at.hello().await.unwrap();
    faults.cut("SCHEDD", "STARTD");
    for c in [&at, &dialed] {
        let e = c.hello().await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Unavailable, "{e}");
    }
    // a context without the filter is not cut
    let other = DaemonContext::for_test(
        "schedd",
        config(dir.path(), "SCHEDD"),
        "tester",
        clock.clock(),
    )
    .unwrap();
    other
        .client_at(&format!("<{addr}>"), Duration::from_secs(5))
        .unwrap()
        .hello()
        .await
        .unwrap();
    faults.heal();
    at.hello().await.unwrap();
    dialed.hello().await.unwrap();
    server.shutdown().await;
}
