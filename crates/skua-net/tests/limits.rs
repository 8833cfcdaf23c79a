//! What bounds a server's memory: body limits per route, concurrency
//! limits per peer and in total, streamed replies.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use serde::{Deserialize, Serialize};
use skua_net::proto::RequestBody;
use skua_net::routing::{get, post};
use skua_net::{
    json_array_response, AuthLevel, ConcurrencyLimits, ErrorCode, Json, Listener, NetError,
    Response, Routes, Server, ServerConfig, ServerHandle, State,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

const SMALL: usize = 1024;
const ITEMS: usize = 20_000;

#[derive(Debug, Serialize, Deserialize)]
struct Items {
    items: Vec<String>,
}

async fn echo(Json(e): Json<Echo>) -> Json<Echo> {
    Json(e)
}

/// Answers once the test opens the gate.
async fn hold(State(gate): State<watch::Receiver<bool>>) -> Json<Echo> {
    let mut gate = gate;
    let _ = gate.wait_for(|open| *open).await;
    Json(echo_body("released"))
}

fn item(i: usize) -> String {
    format!("[ Name = \"slot{i}@node\"; Cpus = {i} ]")
}

async fn many() -> Response {
    json_array_response("items", (0..ITEMS).map(item))
}

fn limited_routes(gate: watch::Receiver<bool>) -> Routes {
    Routes::new()
        .route_with_body(
            "/small",
            AuthLevel::Write,
            RequestBody::Buffered(SMALL),
            post(echo),
        )
        .route("/hold", AuthLevel::Read, get(hold))
        .route("/write", AuthLevel::Write, post(echo))
        .route("/many", AuthLevel::Read, get(many))
        .with_state(gate)
}

struct Fixture {
    _srv: ServerHandle,
    addr: std::net::SocketAddr,
    sock: std::path::PathBuf,
    open: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

async fn server(cfg: ServerConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("s.sock");
    let tcp = Listener::tcp("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let unix = Listener::unix(&sock).await.unwrap();
    let (open, gate) = watch::channel(false);
    let srv = Server::new(cfg, limited_routes(gate))
        .unwrap()
        .spawn(vec![tcp, unix]);
    Fixture {
        _srv: srv,
        addr,
        sock,
        open,
        _dir: dir,
    }
}

fn remote(r: Result<Echo, NetError>) -> (ErrorCode, String) {
    match r {
        Err(NetError::Remote { status, body, .. }) => {
            assert_eq!(status, body.code.http_status());
            (body.code, body.message)
        }
        other => panic!("expected an error reply, got {other:?}"),
    }
}

/// Sends raw bytes on the Unix socket and returns the reply's status line.
async fn raw(sock: &std::path::Path, request: &[u8]) -> String {
    let mut s = tokio::net::UnixStream::connect(sock).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    // the status line and headers come first; the server may close after
    let read = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => reply.extend_from_slice(&buf[..n]),
            }
            if reply.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .expect("the server answers without waiting for the announced body");
    String::from_utf8_lossy(&reply).into_owned()
}

#[tokio::test]
async fn body_over_the_route_limit_is_refused_and_the_server_still_serves() {
    let f = server(config(policy())).await;
    let c = client(f.addr, Some(token("alice@pool.test", &[AuthLevel::Write])));
    let ok: Echo = c.post("/small", &echo_body("fits")).await.unwrap();
    assert_eq!(ok.text, "fits");

    let (code, message) = remote(c.post("/small", &echo_body(&"x".repeat(4 * SMALL))).await);
    assert_eq!(code, ErrorCode::TooLarge);
    assert!(
        message.contains("/small") && message.contains("1 KiB"),
        "{message}"
    );
    // other routes keep their own (larger) limit; the server still serves
    let big: Echo = c
        .post("/write", &echo_body(&"x".repeat(4 * SMALL)))
        .await
        .unwrap();
    assert_eq!(big.text.len(), 4 * SMALL);
    let ok: Echo = c.post("/small", &echo_body("again")).await.unwrap();
    assert_eq!(ok.text, "again");

    // A declared length far over the limit is refused at once, before any
    // of the body is sent (nothing is allocated for it).
    let head = raw(
        &f.sock,
        b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n{\"text\":",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    // A chunked body without a length is cut off at the limit.
    let mut chunked =
        b"POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..4 {
        chunked.extend_from_slice(format!("{:x}\r\n{}\r\n", SMALL, "x".repeat(SMALL)).as_bytes());
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let head = raw(&f.sock, &chunked).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    let ok: Echo = c.post("/small", &echo_body("still")).await.unwrap();
    assert_eq!(ok.text, "still");
}

#[tokio::test]
async fn per_peer_limit_holds_one_peer_while_another_is_served() {
    let mut cfg = config(policy());
    cfg.concurrency = ConcurrencyLimits {
        total: 0,
        per_peer: 2,
        wait: Duration::from_millis(200),
    };
    let f = server(cfg).await;
    let alice = client(f.addr, Some(token("alice@pool.test", &[AuthLevel::Write])));
    let bob = client(f.addr, Some(token("bob@pool.test", &[AuthLevel::Write])));
    let held: Vec<_> = (0..2)
        .map(|_| {
            let alice = alice.clone();
            tokio::spawn(async move { alice.get::<Echo>("/hold").await })
        })
        .collect();
    // wait until both of alice's requests are in their handlers
    tokio::time::sleep(Duration::from_millis(300)).await;

    let (code, message) = remote(alice.post("/write", &echo_body("third")).await);
    assert_eq!(code, ErrorCode::Unavailable);
    assert!(
        message.contains("alice@pool.test") && message.contains("at most 2"),
        "{message}"
    );
    // bob is another peer: served at once
    let ok: Echo = bob.post("/write", &echo_body("bob")).await.unwrap();
    assert_eq!(ok.text, "bob");
    // the pool's daemons are limited only in total
    let daemon = client(
        f.addr,
        Some(token("condor@pool.test", &[AuthLevel::Daemon])),
    );
    let ok: Echo = daemon.post("/write", &echo_body("daemon")).await.unwrap();
    assert_eq!(ok.text, "daemon");

    f.open.send(true).unwrap();
    for h in held {
        assert_eq!(h.await.unwrap().unwrap().text, "released");
    }
    let ok: Echo = alice.post("/write", &echo_body("later")).await.unwrap();
    assert_eq!(ok.text, "later");
}

#[tokio::test]
async fn over_the_limit_a_request_waits_for_a_turn() {
    let mut cfg = config(policy());
    cfg.concurrency = ConcurrencyLimits {
        total: 1,
        per_peer: 0,
        wait: Duration::from_secs(5),
    };
    let f = server(cfg).await;
    let alice = client(f.addr, Some(token("alice@pool.test", &[AuthLevel::Write])));
    let a2 = alice.clone();
    let held = tokio::spawn(async move { a2.get::<Echo>("/hold").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let a3 = alice.clone();
    let waiting = tokio::spawn(async move { a3.post::<_, Echo>("/write", &echo_body("w")).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "the second request waits its turn");
    f.open.send(true).unwrap();
    assert_eq!(held.await.unwrap().unwrap().text, "released");
    assert_eq!(waiting.await.unwrap().unwrap().text, "w");
}

#[tokio::test]
async fn streamed_reply_arrives_whole() {
    let f = server(config(policy())).await;
    let c = client(f.addr, Some(token("alice@pool.test", &[AuthLevel::Read])));
    let reply: Items = c.get("/many").await.unwrap();
    assert_eq!(reply.items.len(), ITEMS);
    for (i, text) in reply.items.iter().enumerate() {
        assert_eq!(text, &item(i));
    }
    // the same over the Unix socket, and an empty list
    let head = raw(&f.sock, b"GET /many HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "a streamed reply has no length known up front: {head}"
    );
    let empty = json_array_response("items", std::iter::empty::<String>());
    let bytes = http_body_util::BodyExt::collect(empty.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&bytes[..], br#"{"items":[]}"#);
}
