//! Skua's transport: how daemons and tools reach each other, prove who
//! they are, and are allowed or refused.
//!
//! - [`Server`]: an axum router behind authentication and authorization,
//!   served on TCP ([`Listener::tcp`]), TLS ([`Listener::tls`]) and
//!   Unix-domain sockets ([`Listener::unix`]). Routes are declared with the
//!   [`AuthLevel`] they need ([`Routes::route`], [`Routes::command`]);
//!   handlers get the caller through the [`Caller`] or [`Identity`]
//!   extractors, read bodies with [`Json`] and fail with [`ApiError`].
//! - Authentication: `Authorization: Bearer <token>` with HS256 tokens
//!   signed by the pool [`SigningKey`] ([`issue_token`], [`verify_token`]);
//!   on a Unix socket without a token, the kernel's peer credentials
//!   (`name@UID_DOMAIN`, method `local`); over TLS, a client certificate
//!   signed by the pool CA (`condor@HOST`, method `ssl`, refused when its
//!   credential id is in the server's [`Revocations`]); otherwise
//!   anonymous. [`pki`] makes the pool CA and host certificates.
//! - Authorization: [`SecurityPolicy`], HTCondor's ALLOW/DENY lists with
//!   the level hierarchy, narrowed by the token's scope.
//! - [`shared_port`]: one TCP port per host in front of every daemon
//!   ([`SharedPort`]), connections passed to each daemon's
//!   [`Listener::handoff`] socket; clients name the daemon with
//!   [`Client::with_shared_port_id`].
//! - [`Client`]: typed JSON calls to an [`Endpoint`], each bounded by a
//!   timeout, failing with [`NetError`]; in tests, through a
//!   [`FaultFilter`] that drops, delays or cuts calls between daemons.
//!
//! The wire contract itself (messages, paths, error codes) is `skua-proto`,
//! re-exported as [`proto`]; `docs/protocol.md` describes it.

mod client;
mod error;
mod fault;
mod handler;
mod hosts;
mod identity;
mod join_token;
mod limits;
pub mod pki;
mod policy;
mod revocation;
mod server;
pub mod shared_port;
mod stream;
pub mod tls;
mod token;

pub use client::{Client, Endpoint};
pub use error::NetError;
pub use fault::{Fault, FaultFilter, Peer, Rule, RuleId};
pub use handler::{JsonStream, Reply, RequestOf, Typed, TypedHandler};
pub use hosts::{interface_addresses, InterfaceAddress};
pub use identity::{
    local_identity, local_user_name, Identity, IdentityError, ANONYMOUS_DOMAIN, ANONYMOUS_USER,
};
pub use join_token::{
    issue_join_token_at, sign_join_claims, verify_join_token_at, DEFAULT_JOIN_LIFETIME,
};
pub use limits::{ConcurrencyLimits, WAITING_PER_TURN};
pub use policy::{CompiledPolicy, PeerHost, PolicyError, SecurityPolicy};
pub use revocation::Revocations;
pub use server::{
    ApiError, Caller, Json, Listener, PeerAddress, Routes, Server, ServerConfig, ServerHandle,
    CERTIFICATE_USER,
};
pub use shared_port::{SharedPort, SharedPortConfig, SharedPortHandle};
pub use stream::{
    file_response, json_array_response, open_file_response, receive_file,
    receive_file_with_timeout, receive_into, receive_unsynced, OCTET_STREAM, RECEIVE_IDLE_TIMEOUT,
};
pub use tls::ClientIdentity;
pub use token::{
    issue_token, sign_claims, verify_token, verify_token_at, SigningKey, TokenError, KEY_LEN,
    MAX_CLOCK_SKEW, MAX_TOKEN_LEN, MIN_KEY_LEN,
};

/// The wire contract.
pub use skua_proto as proto;
pub use skua_proto::{AuthLevel, AuthMethod, ErrorBody, ErrorCode};

/// What a handler needs to take a raw body and headers and to answer with
/// one: the request body, the headers, a response.
pub use axum::body::Body;
/// `FromRef`, so a handler may take a part of its router's state
/// (`State<Part>` where `Part: FromRef<Whole>`).
pub use axum::extract::FromRef;
/// `State`, so daemons need no direct axum dependency for ordinary
/// handlers.
pub use axum::extract::State;
pub use axum::response::{IntoResponse, Response};
pub use http::HeaderMap;
/// Handlers for [`Routes`]: [`routing::post`] types an `async fn` with the
/// messages of the protocol route it serves (see [`Typed`]); axum's `get`
/// and `MethodRouter` for untyped routes.
pub mod routing {
    pub use crate::handler::post;
    pub use axum::routing::{get, MethodRouter};
}

/// HTTP methods, for [`Client::call`].
pub use http::Method;
