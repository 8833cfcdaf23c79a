//! A client carrying a test's fault filter: cut, dropped replies, delays,
//! healing; a client without one is untouched.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use skua_net::{AuthLevel, ErrorCode, Fault, FaultFilter, NetError, Peer, Rule};

/// `POST /write` with `text`, echoed back.
fn write(
    c: &skua_net::Client,
    text: &str,
) -> impl std::future::Future<Output = Result<Echo, NetError>> {
    let c = c.clone();
    let body = echo_body(text);
    async move { c.post("/write", &body).await }
}

#[tokio::test]
async fn a_cut_fails_calls_as_a_refused_connection_until_healed() {
    let (srv, addr) = tcp_server(config(policy())).await;
    let faults = FaultFilter::new();
    faults.name_address(addr, "STARTD");
    let plain = client(addr, Some(token("alice@pool.test", &[AuthLevel::Write])));
    let schedd = plain.with_faults(faults.clone(), "SCHEDD", None);
    let negotiator = plain.with_faults(faults.clone(), "NEGOTIATOR", Some("STARTD"));

    faults.cut("SCHEDD", "STARTD");
    let e = write(&schedd, "a").await.unwrap_err();
    assert!(matches!(e, NetError::Connect { .. }), "{e}");
    assert_eq!(e.code(), ErrorCode::Unavailable);
    // another daemon, and a client without the filter, still get through
    assert_eq!(write(&negotiator, "b").await.unwrap().text, "b");
    assert_eq!(write(&plain, "c").await.unwrap().text, "c");

    faults.heal();
    assert_eq!(write(&schedd, "d").await.unwrap().text, "d");
    srv.shutdown().await;
}

#[tokio::test]
async fn a_lost_reply_fails_the_call_as_a_broken_exchange_once() {
    let (srv, addr) = tcp_server(config(policy())).await;
    let faults = FaultFilter::new();
    let id = faults.add(
        Rule::new("SCHEDD", Peer::Addr(addr), Fault::DropReply)
            .on_route("/write")
            .times(1),
    );
    let c = client(addr, Some(token("alice@pool.test", &[AuthLevel::Write]))).with_faults(
        faults.clone(),
        "SCHEDD",
        None,
    );
    // a route the rule does not name passes
    let _: Seen = c.get("/read").await.unwrap();
    let e = write(&c, "lost").await.unwrap_err();
    assert!(matches!(e, NetError::Http { .. }), "{e}");
    assert_eq!(faults.hits(id), 1);
    // the rule was for one call only
    assert_eq!(write(&c, "kept").await.unwrap().text, "kept");
    srv.shutdown().await;
}

#[tokio::test]
async fn a_delay_holds_the_request_and_a_drop_waits_out_the_timeout() {
    let (srv, addr) = tcp_server(config(policy())).await;
    let faults = FaultFilter::new();
    let c = skua_net::Client::new(
        skua_net::Endpoint::Tcp(addr),
        Some(token("alice@pool.test", &[AuthLevel::Write])),
        Duration::from_millis(300),
    )
    .unwrap()
    .with_faults(faults.clone(), "SCHEDD", Some("STARTD"));
    let delay = faults.add(Rule::new(
        Peer::Any,
        "STARTD",
        Fault::Delay(Duration::from_millis(100)),
    ));
    let t = Instant::now();
    assert_eq!(write(&c, "late").await.unwrap().text, "late");
    assert!(t.elapsed() >= Duration::from_millis(100));
    faults.remove(delay);
    faults.add(Rule::new(Peer::Any, "STARTD", Fault::Drop));
    let t = Instant::now();
    let e = write(&c, "dropped").await.unwrap_err();
    assert!(matches!(e, NetError::Timeout { .. }), "{e}");
    assert!(t.elapsed() >= Duration::from_millis(300));
    srv.shutdown().await;
}
