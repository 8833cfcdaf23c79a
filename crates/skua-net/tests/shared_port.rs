//! The shared port: servers behind one TCP port, reached by id through the
//! preamble, a plain TLS connection reaching the default id, and bad
//! preambles refused without harming the listener.

#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use skua_net::routing::get;
use skua_net::shared_port::preamble;
use skua_net::{
    tls, AuthLevel, Client, Endpoint, Json, Listener, Routes, SecurityPolicy, Server, ServerConfig,
    ServerHandle, SharedPort, SharedPortConfig, SharedPortHandle, State,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use common::capture_warnings;

async fn who(State(name): State<String>) -> Json<String> {
    Json(name)
}

/// A server answering `GET /who` with `name`, behind the shared port as
/// `name` (its handoff socket in `dir`).
async fn server_behind(
    dir: &Path,
    name: &str,
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
) -> ServerHandle {
    let routes = Routes::new()
        .route("/who", AuthLevel::Read, get(who))
        .route("/write", AuthLevel::Write, get(who))
        .with_state(name.to_string());
    let mut policy = SecurityPolicy::default().allowing(AuthLevel::Read, ["*"]);
    policy.allow_anonymous_read = true;
    let config = ServerConfig::new(policy, None, "pool.test");
    let listener = Listener::handoff(&dir.join(name), tls).await.unwrap();
    Server::new(config, routes).unwrap().spawn(vec![listener])
}

async fn shared_port(dir: &Path, preamble_timeout: Duration) -> (SharedPortHandle, SocketAddr) {
    let mut config = SharedPortConfig::new(dir);
    config.preamble_timeout = preamble_timeout;
    let port = SharedPort::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    let addr = port.local_addr().unwrap();
    (port.spawn(), addr)
}

fn client(endpoint: Endpoint) -> Client {
    Client::new(endpoint, None, Duration::from_secs(5)).unwrap()
}

async fn whom(c: &Client) -> String {
    c.get::<String>("/who").await.unwrap()
}

#[tokio::test]
async fn servers_behind_one_port_are_each_reached_by_their_id() {
    let dir = tempfile::tempdir().unwrap();
    let a = server_behind(dir.path(), "schedd", None).await;
    let b = server_behind(dir.path(), "startd", None).await;
    let (port, addr) = shared_port(dir.path(), Duration::from_secs(5)).await;

    let to_a = client(Endpoint::Tcp(addr))
        .with_shared_port_id("schedd")
        .unwrap();
    let to_b = client(Endpoint::Tcp(addr))
        .with_shared_port_id("startd")
        .unwrap();
    assert_eq!(to_a.shared_port_id(), Some("schedd"));
    for _ in 0..3 {
        assert_eq!(whom(&to_a).await, "schedd");
        assert_eq!(whom(&to_b).await, "startd");
    }
    // many connections at once, each on its own
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let c = if i % 2 == 0 {
                to_a.clone()
            } else {
                to_b.clone()
            };
            tokio::spawn(async move { (i, whom(&c).await) })
        })
        .collect();
    for call in calls {
        let (i, name) = call.await.unwrap();
        assert_eq!(name, if i % 2 == 0 { "schedd" } else { "startd" });
    }

    // a server that stops is no longer reached; the other still is
    a.shutdown().await;
    let fresh = client(Endpoint::Tcp(addr))
        .with_shared_port_id("schedd")
        .unwrap();
    assert!(fresh.get::<String>("/who").await.is_err());
    assert_eq!(whom(&to_b).await, "startd");
    port.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn tls_without_a_preamble_reaches_the_default_id() {
    let dir = tempfile::tempdir().unwrap();
    let ck = tls::self_signed(&["127.0.0.1"]).unwrap();
    let tls_config = tls::server_config(ck.cert_pem.as_bytes(), ck.key_pem.as_bytes()).unwrap();
    let collector = server_behind(dir.path(), "collector", Some(tls_config.clone())).await;
    let schedd = server_behind(dir.path(), "schedd", Some(tls_config)).await;
    let (port, addr) = shared_port(dir.path(), Duration::from_secs(5)).await;

    // HOST:PORT with TLS and no preamble: the collector, as if it listened there
    let plain = client(Endpoint::Tls(addr, ck.cert_pem.clone()));
    assert_eq!(whom(&plain).await, "collector");
    // TLS after a preamble, to another daemon
    let to_schedd = plain.with_shared_port_id("schedd").unwrap();
    assert_eq!(whom(&to_schedd).await, "schedd");
    let to_collector = plain.with_shared_port_id("collector").unwrap();
    assert_eq!(whom(&to_collector).await, "collector");
    port.shutdown().await;
    collector.shutdown().await;
    schedd.shutdown().await;
}

/// Sends `bytes`, then waits for the shared port to close the connection
/// (the read ends with 0 bytes or a reset, never with data).
async fn refused(addr: SocketAddr, bytes: &[u8]) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(bytes).await;
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
    match read {
        Ok(Ok(_)) => assert!(buf.is_empty(), "got a reply to {bytes:?}: {buf:?}"),
        Ok(Err(_)) => {}
        Err(_) => panic!("the connection sending {bytes:?} was not closed"),
    }
}

#[tokio::test]
async fn bad_preambles_are_refused_and_the_listener_carries_on() {
    let dir = tempfile::tempdir().unwrap();
    let good = server_behind(dir.path(), "schedd", None).await;
    let (port, addr) = shared_port(dir.path(), Duration::from_millis(300)).await;
    let to_good = client(Endpoint::Tcp(addr))
        .with_shared_port_id("schedd")
        .unwrap();
    assert_eq!(whom(&to_good).await, "schedd");

    let too_long = [b"SKSP\x01\xff".as_slice(), &[b'x'; 255]].concat();
    let cases: Vec<Vec<u8>> = vec![
        // plain HTTP with no preamble: not for the default id (that takes TLS)
        b"GET /who HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        // garbage
        b"\x00\x01\x02\x03garbage".to_vec(),
        // a bad magic that starts like the real one
        b"SKXX\x01\x06schedd".to_vec(),
        // another version
        b"SKSP\x02\x06schedd".to_vec(),
        // an id longer than allowed
        too_long,
        // an empty id
        b"SKSP\x01\x00".to_vec(),
        // an id that is not a name
        b"SKSP\x01\x05../xx".to_vec(),
        // nobody behind the port with that id
        preamble("negotiator").unwrap(),
        // slow: half a preamble, then nothing (the deadline closes it)
        b"SKSP\x01".to_vec(),
        // slow: nothing at all
        Vec::new(),
    ];
    for case in &cases {
        refused(addr, case).await;
        // the listener still routes good connections
        let fresh = client(Endpoint::Tcp(addr))
            .with_shared_port_id("schedd")
            .unwrap();
        assert_eq!(whom(&fresh).await, "schedd");
    }
    // bad connections held open at the same time do not block good ones
    let mut stalled = Vec::new();
    for _ in 0..10 {
        stalled.push(TcpStream::connect(addr).await.unwrap());
    }
    assert_eq!(whom(&to_good).await, "schedd");
    drop(stalled);
    port.shutdown().await;
    good.shutdown().await;
}

#[tokio::test]
async fn an_invalid_id_is_refused_by_the_client() {
    let c = client(Endpoint::Tcp("127.0.0.1:9".parse().unwrap()));
    for bad in ["", "a/b", "x y", &"z".repeat(65)] {
        assert!(c.with_shared_port_id(bad).is_err(), "{bad:?}");
    }
}

#[tokio::test]
async fn handoff_sockets_are_private_and_replaced_when_stale() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let first = server_behind(dir.path(), "schedd", None).await;
    let path = dir.path().join("schedd");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    first.shutdown().await;
    assert!(!path.exists(), "the handoff socket is removed at shutdown");
    // a stale socket (a server that died) is replaced by a restarted one
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let second = server_behind(dir.path(), "schedd", None).await;
    let (port, addr) = shared_port(dir.path(), Duration::from_secs(5)).await;
    let c = client(Endpoint::Tcp(addr))
        .with_shared_port_id("schedd")
        .unwrap();
    assert_eq!(whom(&c).await, "schedd");
    // a file that is not a socket is not replaced
    std::fs::write(dir.path().join("plain"), b"x").unwrap();
    assert!(Listener::handoff(&dir.path().join("plain"), None)
        .await
        .is_err());
    port.shutdown().await;
    second.shutdown().await;
}

// current-thread runtime: every task runs under the thread-local subscriber
#[tokio::test(flavor = "current_thread")]
async fn the_daemon_sees_the_real_peer_and_refusals_name_it() {
    let (buf, _guard) = capture_warnings();

    let dir = tempfile::tempdir().unwrap();
    let server = server_behind(dir.path(), "schedd", None).await;
    let (port, addr) = shared_port(dir.path(), Duration::from_secs(5)).await;

    // an anonymous write through the shared port: the daemon refuses it and
    // logs the caller's own address, not the shared port's
    let mut s = TcpStream::connect(addr).await.unwrap();
    let me = s.local_addr().unwrap();
    s.write_all(&preamble("schedd").unwrap()).await.unwrap();
    s.write_all(b"GET /write HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).await.unwrap();
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 401"), "{reply}");
    let log = buf.text();
    assert!(log.contains("request refused"), "{log}");
    assert!(log.contains(&format!("peer={me}")), "{log}");

    // the shared port's own refusal names the caller and the reason
    let mut s = TcpStream::connect(addr).await.unwrap();
    let me = s.local_addr().unwrap();
    s.write_all(&preamble("nobody").unwrap()).await.unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest).await;
    let log = buf.text();
    assert!(log.contains(&format!("peer={me}")), "{log}");
    assert!(
        log.contains("shared port: connection refused: no daemon `nobody` behind the shared port"),
        "{log}"
    );
    port.shutdown().await;
    server.shutdown().await;
}
