//! Refusals are logged through `tracing`.

// Test helpers outside #[test] functions panic on purpose too.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use skua_net::{issue_token, AuthLevel, SigningKey};

// current-thread runtime: every task runs on this thread, under the
// thread-local subscriber
#[tokio::test(flavor = "current_thread")]
async fn refusals_are_logged() {
    let (buf, _guard) = capture_warnings();

    let (_srv, addr) = tcp_server(config(policy())).await;
    let other = SigningKey::from_bytes(vec![1u8; 32]).unwrap();
    let forged = issue_token(&other, "alice@pool.test", &[AuthLevel::Read], None).unwrap();
    assert!(client(addr, Some(forged)).hello().await.is_err());
    let log = buf.text();
    assert!(log.contains("authentication failed"), "{log}");
    assert!(log.contains("signature"), "{log}");

    let c = client(addr, Some(token("alice@pool.test", &[AuthLevel::Read])));
    assert!(c.post::<_, Echo>("/write", &echo_body("x")).await.is_err());
    let log = buf.text();
    assert!(log.contains("request refused"), "{log}");
    assert!(log.contains("alice@pool.test"), "{log}");
    assert!(log.contains("permission_denied"), "{log}");
}

// A host outside ALLOW_WRITE is refused WRITE with a message and a log
// line naming the caller and its address, and may still READ; a
// Unix-socket caller counts as this host (127.0.0.1).
#[tokio::test(flavor = "current_thread")]
async fn a_host_outside_allow_write_is_refused_and_logged() {
    let (buf, _guard) = capture_warnings();

    let only_the_lan = skua_net::SecurityPolicy::default()
        .allowing(AuthLevel::Read, ["*"])
        .allowing(AuthLevel::Write, ["*/10.77.0.0/16"]);
    let (_srv, addr) = tcp_server(config(only_the_lan)).await;
    let c = client(addr, Some(token("alice@pool.test", &[AuthLevel::Write])));
    let seen: Seen = c.get("/read").await.unwrap();
    assert_eq!(seen.levels, vec![AuthLevel::Read]);
    let err = c
        .post::<_, Echo>("/write", &echo_body("x"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), skua_net::ErrorCode::PermissionDenied);
    let msg = err.to_string();
    assert!(msg.contains("ALLOW_WRITE"), "{msg}");
    assert!(msg.contains("alice@pool.test from 127.0.0.1"), "{msg}");
    let log = buf.text();
    assert!(log.contains("request refused"), "{log}");
    assert!(log.contains("ALLOW_WRITE"), "{log}");
    assert!(log.contains("peer=127.0.0.1:"), "{log}");

    // the same caller from a listed host: the loopback address
    let loopback = skua_net::SecurityPolicy::default()
        .allowing(AuthLevel::Read, ["*"])
        .allowing(AuthLevel::Write, ["*@pool.test/127.0.0.1"]);
    let (_srv2, addr2) = tcp_server(config(loopback.clone())).await;
    let c = client(addr2, Some(token("alice@pool.test", &[AuthLevel::Write])));
    let echoed: Echo = c.post("/write", &echo_body("x")).await.unwrap();
    assert_eq!(echoed.text, "x");

    // a Unix-socket caller is on this host
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let l = skua_net::Listener::unix(&path).await.unwrap();
    let _srv3 = start(config(loopback), vec![l]).await;
    let c = skua_net::Client::new(
        skua_net::Endpoint::Unix(path),
        None,
        std::time::Duration::from_secs(5),
    )
    .unwrap();
    let echoed: Echo = c.post("/write", &echo_body("y")).await.unwrap();
    assert_eq!(echoed.text, "y");
}
