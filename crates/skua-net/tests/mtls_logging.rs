//! The server's log names who it refused and why (a test binary of its
//! own: a thread-local log subscriber).

// Test helpers outside #[test] functions panic on purpose too.
#![allow(clippy::unwrap_used)]

mod common;

use common::capture_warnings;
use common::pool::*;
use skua_net::pki::PoolCa;
use skua_net::ErrorCode;

// current-thread runtime: every task runs on this thread, under the
// thread-local subscriber
#[tokio::test(flavor = "current_thread")]
async fn the_server_logs_who_it_refused_and_why() {
    let (buf, _guard) = capture_warnings();

    let p = pool(policy()).await;
    let other = PoolCa::generate("test pool").unwrap();
    let (foreign, _) = p.host_client(&other, "intruder.example");
    assert!(foreign.get::<Who>("/who").await.is_err());
    let log = buf.text_with("tls handshake failed").await;
    assert!(log.contains("tls handshake failed"), "{log}");
    assert!(log.contains("we refused the client's certificate"), "{log}");
    assert!(log.contains("peer=127.0.0.1:"), "{log}");

    let (c, id) = p.host_client(&p.ca, "exec1.example");
    p.revocations.insert(&id);
    let e = c.get::<Who>("/who").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::PermissionDenied, "{e}");
    let log = buf.text_with("refused a revoked").await;
    assert!(log.contains("refused a revoked host certificate"), "{log}");
    assert!(log.contains(&format!("credential_id={id}")), "{log}");
    assert!(
        log.contains("host=\"exec1.example\"") || log.contains("host=exec1.example"),
        "{log}"
    );
    p.server.shutdown().await;
}
