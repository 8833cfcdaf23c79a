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
