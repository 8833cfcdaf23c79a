//! Shared test fixtures: a small service with one route per level.

#![allow(dead_code, clippy::unwrap_used)]

pub mod pool;

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use skua_net::routing::{get, post};
use skua_net::{
    issue_token, AuthLevel, Caller, Client, Endpoint, Json, Listener, Routes, SecurityPolicy,
    Server, ServerConfig, ServerHandle, SigningKey, State,
};

pub const DOMAIN: &str = "pool.test";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Echo {
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub identity: String,
    pub levels: Vec<AuthLevel>,
    pub greeting: String,
}

#[derive(Clone)]
struct AppState {
    greeting: String,
}

async fn seen(State(st): State<AppState>, caller: Caller) -> Json<Seen> {
    Json(Seen {
        identity: caller.identity.name(),
        levels: caller.levels,
        greeting: st.greeting,
    })
}

async fn echo(Json(e): Json<Echo>) -> Json<Echo> {
    Json(e)
}

async fn panics() -> Json<Echo> {
    panic!("handler bug")
}

async fn slow() -> Json<Echo> {
    tokio::time::sleep(Duration::from_secs(3)).await;
    Json(Echo {
        text: "late".into(),
    })
}

/// `GET /read` (READ), `POST /write` (WRITE), `POST /admin`
/// (ADMINISTRATOR), `POST /daemon` (DAEMON), `POST /negotiator`
/// (NEGOTIATOR), `GET /slow` (READ, answers after 3 s), `GET /panic`
/// (READ, panics).
pub fn routes() -> Routes {
    Routes::new()
        .route("/read", AuthLevel::Read, get(seen))
        .route("/write", AuthLevel::Write, post(echo))
        .route("/admin", AuthLevel::Administrator, post(echo))
        .route("/daemon", AuthLevel::Daemon, post(echo))
        .route("/negotiator", AuthLevel::Negotiator, post(echo))
        .route("/slow", AuthLevel::Read, get(slow))
        .route("/panic", AuthLevel::Read, get(panics))
        .with_state(AppState {
            greeting: "hi".into(),
        })
}

pub fn policy() -> SecurityPolicy {
    SecurityPolicy::default()
        .allowing(AuthLevel::Read, ["*"])
        .allowing(AuthLevel::Write, ["*@pool.test"])
        .allowing(AuthLevel::Administrator, ["admin@pool.test"])
        .allowing(AuthLevel::Daemon, ["condor@*"])
        .allowing(AuthLevel::Negotiator, ["neg@*"])
        .denying(AuthLevel::Write, ["mallory@*"])
}

pub fn key() -> SigningKey {
    SigningKey::from_bytes(*b"0123456789abcdef0123456789abcdef").unwrap()
}

pub fn config(policy: SecurityPolicy) -> ServerConfig {
    ServerConfig::new(policy, Some(key()), DOMAIN)
}

pub async fn start(config: ServerConfig, listeners: Vec<Listener>) -> ServerHandle {
    Server::new(config, routes()).unwrap().spawn(listeners)
}

pub async fn tcp_server(config: ServerConfig) -> (ServerHandle, SocketAddr) {
    let l = Listener::tcp("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = l.local_addr().unwrap();
    (start(config, vec![l]).await, addr)
}

pub fn token(identity: &str, scope: &[AuthLevel]) -> String {
    issue_token(&key(), identity, scope, Some(Duration::from_secs(600))).unwrap()
}

pub fn client(addr: SocketAddr, token: Option<String>) -> Client {
    Client::new(Endpoint::Tcp(addr), token, Duration::from_secs(5)).unwrap()
}

pub fn echo_body(text: &str) -> Echo {
    Echo { text: text.into() }
}

/// What was logged on this thread while a [`capture_warnings`] guard lived.
#[derive(Clone, Default)]
pub struct LogBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogBuffer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The log once it holds `needle` (the server may log just after the
    /// client saw the refusal), or as it is after a while.
    pub async fn text_with(&self, needle: &str) -> String {
        for _ in 0..200 {
            if self.text().contains(needle) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.text()
    }
}

/// Captures what is logged at WARN and above on this thread (plain text,
/// no colours) until the guard is dropped. Tests using it run on a
/// current-thread runtime, so that every task logs under this subscriber.
pub fn capture_warnings() -> (LogBuffer, tracing::subscriber::DefaultGuard) {
    let buf = LogBuffer::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    (buf, tracing::subscriber::set_default(subscriber))
}
