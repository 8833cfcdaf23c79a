//! Unix sockets, TLS, timeouts, the protocol header, shutdown.

// Test helpers outside #[test] functions panic on purpose too.
#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use common::*;
use skua_net::proto::WhoAmI;
use skua_net::{
    local_user_name, tls, AuthLevel, AuthMethod, Client, Endpoint, ErrorCode, Listener, NetError,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn current_user(dir: &std::path::Path) -> String {
    let probe = dir.join("probe");
    std::fs::write(&probe, b"").unwrap();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    local_user_name(uid).expect("the test user has an account name")
}

#[tokio::test]
async fn unix_socket_identifies_the_peer_by_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("skua.sock");
    let listener = Listener::unix(&path).await.unwrap();
    let srv = start(config(policy()), vec![listener]).await;
    assert_eq!(srv.unix_paths(), std::slice::from_ref(&path));

    let c = Client::new(Endpoint::Unix(path.clone()), None, Duration::from_secs(5)).unwrap();
    let me: WhoAmI = c.hello().await.unwrap();
    let user = current_user(dir.path());
    assert_eq!(me.identity, format!("{user}@{DOMAIN}"));
    assert_eq!(me.method, AuthMethod::Local);
    // local identities are not narrowed by any token scope
    let seen: Seen = c.get("/read").await.unwrap();
    assert_eq!(seen.identity, format!("{user}@{DOMAIN}"));
    let _: Echo = c.post("/write", &echo_body("local")).await.unwrap();

    // a token presented over the socket takes precedence
    let c = Client::new(
        Endpoint::Unix(path.clone()),
        Some(token("condor@pool.test", &[AuthLevel::Daemon])),
        Duration::from_secs(5),
    )
    .unwrap();
    let me = c.hello().await.unwrap();
    assert_eq!(me.identity, "condor@pool.test");
    assert_eq!(me.method, AuthMethod::Token);

    srv.shutdown().await;
    assert!(!path.exists(), "socket file removed at shutdown");
}

#[tokio::test]
async fn unix_listener_replaces_stale_sockets_but_not_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let first = Listener::unix(&path).await.unwrap();
    drop(first); // leaves the socket file behind
    assert!(path.exists());
    let _second = Listener::unix(&path).await.unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    assert!(Listener::unix(&file).await.is_err());
}

#[tokio::test]
async fn tls_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let ck = tls::self_signed(&["127.0.0.1", "localhost"]).unwrap();
    let (cert, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, &ck.cert_pem).unwrap();
    std::fs::write(&key_file, &ck.key_pem).unwrap();
    let listener = Listener::tls_from_files("127.0.0.1:0".parse().unwrap(), &cert, &key_file)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let _srv = start(config(policy()), vec![listener]).await;

    let c = Client::new(
        Endpoint::Tls(addr, ck.cert_pem.clone()),
        Some(token("alice@pool.test", &[AuthLevel::Write])),
        Duration::from_secs(5),
    )
    .unwrap();
    let back: Echo = c.post("/write", &echo_body("secret")).await.unwrap();
    assert_eq!(back, echo_body("secret"));
    assert_eq!(c.hello().await.unwrap().identity, "alice@pool.test");

    // a client trusting another CA refuses the server
    let other = tls::self_signed(&["127.0.0.1"]).unwrap();
    let c = Client::new(
        Endpoint::Tls(addr, other.cert_pem),
        None,
        Duration::from_secs(5),
    )
    .unwrap();
    let err = c.hello().await.unwrap_err();
    assert!(matches!(err, NetError::Tls { .. }), "{err:?}");

    // plain HTTP to the TLS port gets nowhere (and does not hang)
    let c = client(addr, None);
    assert!(c.hello().await.is_err());
}

#[tokio::test]
async fn slow_handler_hits_client_timeout_without_blocking_others() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let c = Client::new(
        Endpoint::Tcp(addr),
        Some(token("alice@pool.test", &[AuthLevel::Read])),
        Duration::from_millis(300),
    )
    .unwrap();
    let slow = {
        let c = c.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            (c.get::<Echo>("/slow").await, t.elapsed())
        })
    };
    // meanwhile, quick calls on the same client go through
    let t = Instant::now();
    for _ in 0..5 {
        let _: Seen = c.get("/read").await.unwrap();
    }
    assert!(t.elapsed() < Duration::from_millis(300));
    let (result, took) = slow.await.unwrap();
    let err = result.unwrap_err();
    assert!(matches!(err, NetError::Timeout { .. }), "{err:?}");
    assert_eq!(err.code(), ErrorCode::Timeout);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    // and the client still works afterwards
    let _: Seen = c.get("/read").await.unwrap();
}

#[tokio::test]
async fn slow_handler_hits_server_timeout() {
    let mut cfg = config(policy());
    cfg.handler_timeout = Duration::from_millis(100);
    let (_srv, addr) = tcp_server(cfg).await;
    let c = client(addr, Some(token("alice@pool.test", &[AuthLevel::Read])));
    let err = c.get::<Echo>("/slow").await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Timeout);
    assert!(
        matches!(err, NetError::Remote { status: 504, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn panicking_handler_answers_internal() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let c = client(addr, Some(token("alice@pool.test", &[AuthLevel::Read])));
    let err = c.get::<Echo>("/panic").await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Internal);
    let _: Seen = c.get("/read").await.unwrap();
}

#[tokio::test]
async fn connect_failure_is_unavailable() {
    // bind and drop to get a port nobody listens on
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let err = client(addr, None).hello().await.unwrap_err();
    assert!(matches!(err, NetError::Connect { .. }), "{err:?}");
    assert_eq!(err.code(), ErrorCode::Unavailable);
    let dir = tempfile::tempdir().unwrap();
    let c = Client::new(
        Endpoint::Unix(dir.path().join("none.sock")),
        None,
        Duration::from_secs(1),
    )
    .unwrap();
    assert!(matches!(c.hello().await, Err(NetError::Connect { .. })));
}

async fn raw_request(addr: std::net::SocketAddr, request: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn protocol_header_is_checked_and_sent() {
    let (_srv, addr) = tcp_server(config(policy().with_anonymous_read(true))).await;
    let reply = raw_request(
        addr,
        "GET /hello HTTP/1.1\r\nHost: x\r\nSkua-Protocol: 2\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    assert!(reply.contains("unsupported protocol version"), "{reply}");
    assert!(
        reply.to_ascii_lowercase().contains("skua-protocol: 1"),
        "{reply}"
    );

    // without the header (curl), the request is served
    let reply = raw_request(
        addr,
        "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("unauthenticated@unmapped"), "{reply}");

    // an unauthenticated refusal says how to authenticate
    let reply = raw_request(
        addr,
        "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    )
    .await;
    assert!(reply.starts_with("HTTP/1.1 401"), "{reply}");
    assert!(
        reply
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{reply}"
    );
    assert!(reply.contains(r#""code":"unauthenticated""#), "{reply}");

    // a non-Bearer scheme is refused
    let reply = raw_request(
        addr,
        "GET /hello HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YTpi\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(reply.starts_with("HTTP/1.1 401"), "{reply}");
    assert!(reply.contains("Bearer"), "{reply}");
}

#[tokio::test]
async fn pooled_connection_survives_a_server_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sock");
    let srv = start(config(policy()), vec![Listener::unix(&path).await.unwrap()]).await;
    let c = Client::new(Endpoint::Unix(path.clone()), None, Duration::from_secs(5)).unwrap();
    c.hello().await.unwrap();
    srv.shutdown().await;
    assert!(c.hello().await.is_err());
    let _srv = start(config(policy()), vec![Listener::unix(&path).await.unwrap()]).await;
    // the pooled connection is dead; the client must notice and reconnect
    c.hello().await.unwrap();
    c.hello().await.unwrap();
}

#[tokio::test]
async fn many_concurrent_calls() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let c = client(addr, Some(token("alice@pool.test", &[AuthLevel::Write])));
    let mut tasks = Vec::new();
    for i in 0..50 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let e: Echo = c.post("/write", &echo_body(&i.to_string())).await.unwrap();
            assert_eq!(e.text, i.to_string());
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn shutdown_stops_accepting() {
    let (srv, addr) = tcp_server(config(policy())).await;
    let c = client(addr, Some(token("alice@pool.test", &[AuthLevel::Read])));
    c.hello().await.unwrap();
    srv.shutdown().await;
    let fresh = client(addr, Some(token("alice@pool.test", &[AuthLevel::Read])));
    assert!(fresh.hello().await.is_err());
}
