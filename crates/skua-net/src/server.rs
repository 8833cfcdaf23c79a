//! The server: an axum router served over TCP, TLS and Unix-domain sockets,
//! with authentication before routing and per-route authorization.
//!
//! Every request goes through, in order:
//! 1. the protocol version check (a `Skua-Protocol` header, when present,
//!    must name [`PROTOCOL_VERSION`]);
//! 2. authentication: a `Bearer` token if one is presented (refused with 401
//!    if it does not verify); otherwise, on a Unix socket, the peer's
//!    kernel credentials; otherwise, over TLS, the client certificate the
//!    handshake verified against the pool CA (`condor@<common name>`,
//!    method `ssl`); otherwise the anonymous identity. A client
//!    certificate whose credential id (serial) is in the server's
//!    [`Revocations`] is refused (403) whatever else the request carries;
//!    a token, when present with a valid certificate, decides the
//!    identity (one method per request, as HTCondor's negotiation picks
//!    one);
//! 3. routing; unknown paths are 404, wrong methods 400;
//! 4. authorization against the level the route was declared with: token
//!    scope, then [`SecurityPolicy`] (401 for anonymous callers, 403 for
//!    others), every refusal logged through `tracing`;
//! 5. admission ([`ConcurrencyLimits`]): at most so many requests at once
//!    per peer and in all; over a limit a request waits briefly in a
//!    bounded line, then is refused with `Unavailable` (503). The turn is
//!    held until the reply has been sent, streamed replies included;
//! 6. the body limit the route declares ([`RequestBody`]): a body over it
//!    is refused with `TooLarge` (413) naming the route and the limit,
//!    before it is read when `Content-Length` announces it; memory grows
//!    with the bytes that actually arrive;
//! 7. the handler, in a task of its own, bounded by
//!    [`ServerConfig::handler_timeout`] (except requests with a raw
//!    `application/octet-stream` body, which [`crate::receive_file`] bounds
//!    by an idle timeout instead): a caller that disconnects does not
//!    cancel it, and a panic in it answers `Internal` (500). Raw bodies
//!    taken as [`axum::body::Body`] on a [`RequestBody::Streamed`] route
//!    are not size-limited here.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodRouter};
use axum::Router;
use http::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::de::DeserializeOwned;
use serde::Serialize;
use skua_proto::{
    routes, AuthLevel, AuthMethod, ErrorBody, ErrorCode, RequestBody, Route, WhoAmI,
    PROTOCOL_HEADER, PROTOCOL_VERSION,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::handler::Typed;
use crate::identity::local_identity;
use crate::limits::{drain, read_body, Admission, AdmittedBody, BodyLimit, ConcurrencyLimits};
use crate::pki::CertInfo;
use crate::token::verify_token;
use crate::{
    CompiledPolicy, Identity, NetError, PeerHost, Revocations, SecurityPolicy, SigningKey,
};

/// The user part of the identity a client certificate from the pool CA
/// gives: the pool's daemons on the host the certificate names
/// (`condor@HOST`).
pub const CERTIFICATE_USER: &str = "condor";

/// How long a connection may take to send a request's headers (and how
/// long an idle keep-alive connection is kept).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connections get to finish after shutdown is asked.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Pause after a failed `accept` (out of file descriptors...), so the loop
/// does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What a server needs besides its routes.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Who holds which level.
    pub policy: SecurityPolicy,
    /// The pool signing key, to verify bearer tokens; `None` refuses every
    /// token.
    pub signing_key: Option<SigningKey>,
    /// The domain of local (Unix-socket) identities, HTCondor's `UID_DOMAIN`.
    pub uid_domain: String,
    /// How many requests are served at once.
    pub concurrency: ConcurrencyLimits,
    /// Longest a handler may run before the caller gets `Timeout`.
    pub handler_timeout: Duration,
    /// Longest a TLS handshake may take.
    pub tls_handshake_timeout: Duration,
    /// Credential ids (client certificate serials) refused; shared with
    /// whoever refreshes it.
    pub revocations: Revocations,
}

impl ServerConfig {
    /// A configuration with the default [`ConcurrencyLimits`], a 60 s
    /// handler timeout and a 10 s TLS handshake timeout.
    pub fn new(
        policy: SecurityPolicy,
        signing_key: Option<SigningKey>,
        uid_domain: impl Into<String>,
    ) -> Self {
        ServerConfig {
            policy,
            signing_key,
            uid_domain: uid_domain.into(),
            concurrency: ConcurrencyLimits::default(),
            handler_timeout: Duration::from_secs(60),
            tls_handshake_timeout: Duration::from_secs(10),
            revocations: Revocations::new(),
        }
    }
}

/// What authentication established for one request (a request extension).
#[derive(Clone)]
struct Authenticated {
    identity: Identity,
    /// The token's scope; `None` when the caller used no token.
    scope: Option<Arc<[AuthLevel]>>,
    policy: Arc<CompiledPolicy>,
    peer: Arc<str>,
    /// The peer's host, for host entries of the policy.
    from: Arc<PeerHost>,
    peer_ip: Option<IpAddr>,
    /// The client certificate's credential id, when the identity came
    /// from it.
    credential_id: Option<String>,
}

impl Authenticated {
    fn scope_covers(&self, level: AuthLevel) -> bool {
        match &self.scope {
            None => true,
            Some(scope) => scope.iter().any(|granted| granted.implies(level)),
        }
    }

    fn levels(&self) -> Vec<AuthLevel> {
        self.policy
            .levels(&self.identity, &self.from)
            .into_iter()
            .filter(|l| self.scope_covers(*l))
            .collect()
    }

    /// Whether the caller may use a route requiring `required`.
    fn authorize(&self, required: Option<AuthLevel>) -> Result<(), ApiError> {
        let who = &self.identity;
        let Some(level) = required else {
            if who.is_anonymous() && !self.policy.allow_anonymous_read() {
                return Err(ApiError::new(
                    ErrorCode::Unauthenticated,
                    "authentication required: present a token",
                ));
            }
            return Ok(());
        };
        if who.is_anonymous() {
            return self
                .policy
                .check(who, &self.from, level)
                .map_err(|m| ApiError::new(ErrorCode::Unauthenticated, m));
        }
        if !self.scope_covers(level) {
            let scope: Vec<&str> = self
                .scope
                .iter()
                .flat_map(|s| s.iter().map(|l| l.as_str()))
                .collect();
            return Err(ApiError::new(
                ErrorCode::PermissionDenied,
                format!(
                    "the token of {who} is not valid for {level} (its scope: [{}])",
                    scope.join(", ")
                ),
            ));
        }
        self.policy.check(who, &self.from, level).map_err(|m| {
            ApiError::new(
                ErrorCode::PermissionDenied,
                format!("permission denied for {level}: {m}"),
            )
        })
    }
}

/// The authorized caller of a request: its identity and every level it
/// holds here (policy, narrowed by the token's scope). An extractor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// Who.
    pub identity: Identity,
    /// The levels held, in declaration order.
    pub levels: Vec<AuthLevel>,
    /// The peer's IP address (`None` on a Unix socket).
    pub peer_ip: Option<IpAddr>,
    /// The credential id (certificate serial, lowercase hex) of the
    /// client certificate the identity came from (method `ssl`).
    pub credential_id: Option<String>,
}

impl Caller {
    /// Whether the caller holds `level`.
    pub fn has(&self, level: AuthLevel) -> bool {
        self.levels.contains(&level)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::new(
                ErrorCode::Internal,
                "handler is not behind skua-net authorization",
            )
        })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Identity {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Caller::from_request_parts(parts, state)
            .await
            .map(|c| c.identity)
    }
}

/// The caller's address as the server saw it (`ip:port`, or `unix` on
/// the Unix socket), for handlers that log who asked. An extractor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerAddress(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PeerAddress {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<PeerAddress>()
            .cloned()
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::Internal,
                    "handler is not behind skua-net authorization",
                )
            })
    }
}

/// An error a handler returns: becomes an [`ErrorBody`] response with the
/// code's HTTP status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError(pub ErrorBody);

impl ApiError {
    /// An error with `code` and `message` (lowercase, no trailing period).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError(ErrorBody::new(code, message))
    }
    /// `BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::BadRequest, message)
    }
    /// `NotFound`.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::NotFound, message)
    }
    /// `Conflict`.
    pub fn conflict(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Conflict, message)
    }
    /// `Unavailable`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Unavailable, message)
    }
    /// `Internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Internal, message)
    }
}

impl From<ErrorBody> for ApiError {
    fn from(body: ErrorBody) -> Self {
        ApiError(body)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let unauthenticated = self.0.code == ErrorCode::Unauthenticated;
        let mut resp = json_response(status, &self.0);
        if unauthenticated {
            resp.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

fn json_response<T: Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => {
            let mut resp = Response::new(Body::from(bytes));
            *resp.status_mut() = status;
            resp.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            resp
        }
        Err(e) => {
            let body = format!(
                r#"{{"code":"internal","message":"cannot encode reply: {}"}}"#,
                e.to_string().replace(['"', '\\'], "'")
            );
            let mut resp = Response::new(Body::from(body));
            *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            resp.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            resp
        }
    }
}

/// A JSON request body (extractor) or reply (response). A body that does
/// not decode is refused with `BadRequest`, one larger than its route's
/// limit with `TooLarge`; the `Content-Type` is not checked. For a reply
/// of many items, [`crate::json_array_response`] streams them instead.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T, S> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let limit = parts
            .extensions
            .get::<BodyLimit>()
            .cloned()
            .unwrap_or(BodyLimit {
                route: Arc::from(parts.uri.path()),
                max: routes::COMMAND_BODY_LIMIT,
            });
        let bytes = read_body(&parts.headers, body, &limit).await?;
        serde_json::from_slice(&bytes)
            .map(Json)
            .map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")))
    }
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        json_response(StatusCode::OK, &self.0)
    }
}

/// The commands a server answers, each declared with the level it needs.
/// Every `Routes` answers [`routes::HELLO`] already.
pub struct Routes<S = ()> {
    router: Router<S>,
}

impl Default for Routes<()> {
    fn default() -> Self {
        Routes::new()
    }
}

impl<S> Routes<S>
where
    S: Clone + Send + Sync + 'static,
{
    /// Routes holding only `GET /hello`.
    pub fn new() -> Self {
        Routes {
            router: Router::new(),
        }
        .add(
            routes::HELLO.path,
            routes::HELLO.level,
            routes::HELLO.body,
            get(hello),
        )
    }

    /// Adds `handler` at `path`, callable by those holding `level`, with
    /// bodies of at most [`routes::COMMAND_BODY_LIMIT`].
    /// Panics (like axum) if `path` is taken or malformed: routes are
    /// code, not input.
    pub fn route(self, path: &str, level: AuthLevel, handler: impl Into<MethodRouter<S>>) -> Self {
        let body = RequestBody::Buffered(routes::COMMAND_BODY_LIMIT);
        self.add(path, Some(level), body, handler.into())
    }

    /// [`Routes::route`] with another request body rule.
    pub fn route_with_body(
        self,
        path: &str,
        level: AuthLevel,
        body: RequestBody,
        handler: impl Into<MethodRouter<S>>,
    ) -> Self {
        self.add(path, Some(level), body, handler.into())
    }

    /// Adds `handler` at a protocol route, at the level and with the body
    /// limit the protocol declares for it. The handler ([`crate::routing::post`]
    /// of an `async fn`) must take the route's request and answer its
    /// reply. Panics if the route is not a `POST` one: routes are code.
    ///
    /// ```
    /// use skua_net::proto::{routes, Ack, AdUpdate};
    /// use skua_net::{routing::post, Json, Routes};
    /// async fn update(Json(_): Json<AdUpdate>) -> Json<Ack> {
    ///     Json(Ack {})
    /// }
    /// let _ = Routes::<()>::new().command(&routes::COLLECTOR_UPDATE, post(update));
    /// ```
    ///
    /// ```compile_fail,E0308
    /// use skua_net::proto::{routes, Ack, AdUpdate};
    /// use skua_net::{routing::post, Json, Routes};
    /// async fn update(Json(_): Json<AdUpdate>) -> Json<Ack> {
    ///     Json(Ack {})
    /// }
    /// // a query takes a `Query` and answers a `QueryReply`
    /// let _ = Routes::<()>::new().command(&routes::COLLECTOR_QUERY, post(update));
    /// ```
    pub fn command<Req, Resp>(
        self,
        route: &Route<Req, Resp>,
        handler: Typed<Req, Resp, S>,
    ) -> Self {
        assert_eq!(
            route.method, "POST",
            "{} is a {} route; typed handlers answer POST",
            route.path, route.method
        );
        self.add_with_access(
            route.path,
            route.level,
            route.open,
            route.body,
            handler.router,
        )
    }

    /// Supplies the state the handlers extract with `axum::extract::State`.
    pub fn with_state<S2>(self, state: S) -> Routes<S2> {
        Routes {
            router: self.router.with_state(state),
        }
    }

    fn add(
        self,
        path: &str,
        required: Option<AuthLevel>,
        body: RequestBody,
        handler: MethodRouter<S>,
    ) -> Self {
        self.add_with_access(path, required, false, body, handler)
    }

    /// [`Routes::add`]; `open`: every caller passes authorization (the
    /// handler authorizes by what the request carries, see
    /// [`skua_proto::RouteSpec::open`]).
    fn add_with_access(
        self,
        path: &str,
        required: Option<AuthLevel>,
        open: bool,
        body: RequestBody,
        handler: MethodRouter<S>,
    ) -> Self {
        let limit = body.limit().map(|max| BodyLimit {
            route: Arc::from(path),
            max,
        });
        // axum's own extractors (`Bytes`, `String`...) keep to the limit
        // too; a streamed body has none
        let handler = match &limit {
            Some(l) => handler.layer(DefaultBodyLimit::max(l.max)),
            None => handler.layer(DefaultBodyLimit::disable()),
        };
        let handler = handler.route_layer(axum::middleware::from_fn(
            move |req: Request, next: Next| authorize(required, open, limit.clone(), req, next),
        ));
        Routes {
            router: self.router.route(path, handler),
        }
    }
}

async fn authorize(
    required: Option<AuthLevel>,
    open: bool,
    limit: Option<BodyLimit>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(auth) = req.extensions().get::<Authenticated>().cloned() else {
        return ApiError::internal("request reached routing without authentication")
            .into_response();
    };
    req.extensions_mut()
        .insert(PeerAddress(auth.peer.to_string()));
    if let Err(e) = auth
        .authorize(required)
        .or_else(|e| if open { Ok(()) } else { Err(e) })
    {
        tracing::warn!(
            identity = %auth.identity,
            method = %auth.identity.method,
            peer = %auth.peer,
            path = %req.uri().path(),
            level = required.map(|l| l.as_str()).unwrap_or("authenticated"),
            code = %e.0.code,
            "request refused: {}",
            e.0.message
        );
        return e.into_response();
    }
    if let Some(limit) = limit {
        if let Err(e) = limit.check_declared(req.headers()) {
            tracing::warn!(
                identity = %auth.identity,
                peer = %auth.peer,
                path = %req.uri().path(),
                "request refused: {}",
                e.0.message
            );
            let (parts, body) = req.into_parts();
            drain(&parts.headers, body).await;
            return e.into_response();
        }
        req.extensions_mut().insert(limit);
    }
    let caller = Caller {
        identity: auth.identity.clone(),
        levels: auth.levels(),
        peer_ip: auth.peer_ip,
        credential_id: auth.credential_id.clone(),
    };
    req.extensions_mut().insert(caller);
    next.run(req).await
}

async fn hello(caller: Caller) -> Json<WhoAmI> {
    Json(WhoAmI {
        identity: caller.identity.name(),
        method: caller.identity.method,
        levels: caller.levels,
    })
}

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(format!("no command at {}", req.uri().path()))
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::bad_request(format!(
        "method {} is not allowed for {}",
        req.method(),
        req.uri().path()
    ))
}

/// A bound socket a server will accept connections on.
pub struct Listener {
    kind: ListenerKind,
}

enum ListenerKind {
    Tcp {
        listener: TcpListener,
        tls: Option<TlsAcceptor>,
    },
    Unix {
        listener: UnixListener,
        path: PathBuf,
    },
    /// A handoff socket: TCP connections passed by the host's shared port
    /// (see [`crate::shared_port`]), served like accepted ones.
    Handoff {
        listener: UnixListener,
        path: PathBuf,
        tls: Option<TlsAcceptor>,
    },
}

impl Listener {
    /// Plain TCP on `addr` (port 0 picks a free port; see
    /// [`Listener::local_addr`]).
    pub async fn tcp(addr: SocketAddr) -> Result<Self, NetError> {
        Ok(Listener {
            kind: ListenerKind::Tcp {
                listener: bind_tcp(addr).await?,
                tls: None,
            },
        })
    }

    /// TLS over TCP on `addr`, with a configuration from
    /// [`crate::tls::server_config`].
    pub async fn tls(
        addr: SocketAddr,
        config: Arc<rustls::ServerConfig>,
    ) -> Result<Self, NetError> {
        Ok(Listener {
            kind: ListenerKind::Tcp {
                listener: bind_tcp(addr).await?,
                tls: Some(TlsAcceptor::from(config)),
            },
        })
    }

    /// TLS over TCP on `addr`, certificate chain and key read from PEM files.
    pub async fn tls_from_files(
        addr: SocketAddr,
        cert_chain_path: &Path,
        key_path: &Path,
    ) -> Result<Self, NetError> {
        let config = crate::tls::server_config_from_files(cert_chain_path, key_path)?;
        Listener::tls(addr, config).await
    }

    /// A Unix-domain socket at `path`, where callers are identified by the
    /// kernel's peer credentials. A stale socket file is replaced; any
    /// other file there is an error. The socket is made connectable by
    /// every local user (mode 0666): identity, not file access, decides
    /// what a caller may do.
    pub async fn unix(path: &Path) -> Result<Self, NetError> {
        let listener = bind_unix(path, 0o666)?;
        Ok(Listener {
            kind: ListenerKind::Unix {
                listener,
                path: path.to_path_buf(),
            },
        })
    }

    /// A handoff socket at `path` (mode 0600; its directory should be the
    /// daemon's own) on which the host's shared port passes the TCP
    /// connections meant for this server, which serves them as if it had
    /// accepted them: with TLS when `tls` is given, the peer being the
    /// connection's remote address. A stale socket file is replaced.
    pub async fn handoff(
        path: &Path,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Result<Self, NetError> {
        let listener = bind_unix(path, 0o600)?;
        Ok(Listener {
            kind: ListenerKind::Handoff {
                listener,
                path: path.to_path_buf(),
                tls: tls.map(TlsAcceptor::from),
            },
        })
    }

    /// The bound address of a TCP or TLS listener.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.kind {
            ListenerKind::Tcp { listener, .. } => listener.local_addr().ok(),
            ListenerKind::Unix { .. } | ListenerKind::Handoff { .. } => None,
        }
    }

    /// The path of a Unix-socket (or handoff) listener.
    pub fn unix_path(&self) -> Option<&Path> {
        match &self.kind {
            ListenerKind::Tcp { .. } => None,
            ListenerKind::Unix { path, .. } | ListenerKind::Handoff { path, .. } => Some(path),
        }
    }
}

/// Binds a Unix-domain socket at `path` and gives it `mode`, replacing a
/// stale socket file; any other file there is an error.
fn bind_unix(path: &Path, mode: u32) -> Result<UnixListener, NetError> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let io_err = |what: &str, source| NetError::Io {
        context: format!("{what} {}", path.display()),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(|e| io_err("removing stale socket", e))?;
        }
        Ok(_) => {
            return Err(NetError::Config(format!(
                "{} exists and is not a socket",
                path.display()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("inspecting", e)),
    }
    let listener = UnixListener::bind(path).map_err(|e| io_err("binding", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| io_err("setting permissions of", e))?;
    Ok(listener)
}

async fn bind_tcp(addr: SocketAddr) -> Result<TcpListener, NetError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| NetError::Io {
            context: format!("binding {addr}"),
            source,
        })
}

struct Shared {
    router: Router,
    admission: Arc<Admission>,
    policy: Arc<CompiledPolicy>,
    /// A Unix-socket peer's host: this one.
    local_host: Arc<PeerHost>,
    signing_key: Option<SigningKey>,
    uid_domain: String,
    handler_timeout: Duration,
    tls_handshake_timeout: Duration,
    revocations: Revocations,
}

/// Per-connection facts.
#[derive(Clone)]
struct ConnInfo {
    peer: Arc<str>,
    /// The peer's host for the per-peer limit: its IP address, or `local`
    /// on a Unix socket.
    host: Arc<str>,
    /// The peer's identity from kernel credentials (Unix sockets only).
    local: Option<Identity>,
    /// The peer's host, for host entries of the policy.
    from: Arc<PeerHost>,
    /// The peer's IP address (TCP and TLS).
    ip: Option<IpAddr>,
    /// The client certificate the TLS handshake verified, if any.
    cert: Option<Arc<PeerCert>>,
}

/// What a verified client certificate says.
struct PeerCert {
    /// The common name: the host the certificate was issued for.
    host: Option<String>,
    /// The credential id (serial, lowercase hex).
    id: String,
}

/// A server ready to be spawned on listeners.
pub struct Server {
    shared: Arc<Shared>,
}

impl Server {
    /// Checks the policy, resolves the host names it lists (once; a name
    /// that does not resolve is logged and matches nothing) and assembles
    /// the service.
    pub fn new(config: ServerConfig, routes: Routes) -> Result<Self, NetError> {
        let local_ips = crate::hosts::local_ips();
        let policy = config
            .policy
            .compile(&mut crate::hosts::resolve, &local_ips)
            .map_err(|e| NetError::Config(e.to_string()))?;
        for (name, why) in policy.unresolved() {
            tracing::warn!(host = %name, "security policy: host name does not resolve ({why}); its entries match nothing");
        }
        let local_host = PeerHost::local(&local_ips, &crate::hosts::host_names());
        let router = routes
            .router
            .fallback(not_found)
            .method_not_allowed_fallback(method_not_allowed);
        Ok(Server {
            shared: Arc::new(Shared {
                router,
                admission: Admission::new(config.concurrency),
                policy: Arc::new(policy),
                local_host: Arc::new(local_host),
                signing_key: config.signing_key,
                uid_domain: config.uid_domain,
                handler_timeout: config.handler_timeout,
                tls_handshake_timeout: config.tls_handshake_timeout,
                revocations: config.revocations,
            }),
        })
    }

    /// Starts accepting on every listener (one task each, one task per
    /// connection). Must be called inside a Tokio runtime.
    pub fn spawn(self, listeners: Vec<Listener>) -> ServerHandle {
        let (tx, rx) = watch::channel(false);
        let mut handle = ServerHandle {
            shutdown: tx,
            tasks: Vec::new(),
            addrs: Vec::new(),
            unix_paths: Vec::new(),
        };
        for l in listeners {
            if let Some(a) = l.local_addr() {
                handle.addrs.push(a);
            }
            if let Some(p) = l.unix_path() {
                handle.unix_paths.push(p.to_path_buf());
            }
            let shared = self.shared.clone();
            let rx = rx.clone();
            handle
                .tasks
                .push(tokio::spawn(accept_loop(shared, l.kind, rx)));
        }
        handle
    }
}

/// A running server. Dropping it stops the accept loops too, without
/// waiting; [`ServerHandle::shutdown`] waits for connections to finish.
pub struct ServerHandle {
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    addrs: Vec<SocketAddr>,
    unix_paths: Vec<PathBuf>,
}

impl ServerHandle {
    /// The bound addresses of the TCP and TLS listeners, in the order given.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The first TCP or TLS address.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addrs.first().copied()
    }

    /// The Unix socket paths.
    pub fn unix_paths(&self) -> &[PathBuf] {
        &self.unix_paths
    }

    /// Stops accepting, lets open connections finish their current request
    /// (at most 5 s), removes the Unix socket files, and returns.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

async fn shutdown_requested(rx: &mut watch::Receiver<bool>) {
    // An error means the handle is gone: shut down too.
    let _ = rx.wait_for(|stop| *stop).await;
}

enum Accepted {
    Tcp(TcpStream, SocketAddr),
    Unix(UnixStream),
    /// A connection on a handoff socket, carrying a TCP connection.
    Handoff(UnixStream),
}

async fn accept_loop(shared: Arc<Shared>, kind: ListenerKind, mut shutdown: watch::Receiver<bool>) {
    let mut conns = JoinSet::new();
    let (tls, unix_path) = match &kind {
        ListenerKind::Tcp { tls, .. } => (tls.clone(), None),
        ListenerKind::Unix { path, .. } => (None, Some(path.clone())),
        ListenerKind::Handoff { path, tls, .. } => (tls.clone(), Some(path.clone())),
    };
    loop {
        let accepted = tokio::select! {
            _ = shutdown_requested(&mut shutdown) => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
            accepted = accept(&kind) => accepted,
        };
        match accepted {
            Ok(accepted) => {
                let shared = shared.clone();
                let rx = shutdown.clone();
                let tls = tls.clone();
                conns.spawn(connection(shared, accepted, tls, rx));
            }
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
    drop(kind);
    if let Some(path) = unix_path {
        let _ = std::fs::remove_file(path);
    }
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            open = conns.len(),
            "connections still open after the shutdown grace period; closing them"
        );
    }
    conns.shutdown().await;
}

async fn accept(kind: &ListenerKind) -> std::io::Result<Accepted> {
    match kind {
        ListenerKind::Tcp { listener, .. } => {
            let (s, a) = listener.accept().await?;
            Ok(Accepted::Tcp(s, a))
        }
        ListenerKind::Unix { listener, .. } => {
            let (s, _) = listener.accept().await?;
            Ok(Accepted::Unix(s))
        }
        ListenerKind::Handoff { listener, .. } => {
            let (s, _) = listener.accept().await?;
            Ok(Accepted::Handoff(s))
        }
    }
}

async fn connection(
    shared: Arc<Shared>,
    accepted: Accepted,
    tls: Option<TlsAcceptor>,
    shutdown: watch::Receiver<bool>,
) {
    match accepted {
        Accepted::Tcp(stream, peer) => serve_tcp(shared, stream, peer, tls, shutdown).await,
        Accepted::Handoff(unix) => match crate::shared_port::receive(unix).await {
            Ok((stream, peer)) => serve_tcp(shared, stream, peer, tls, shutdown).await,
            Err(e) => tracing::warn!("handoff from the shared port refused: {e}"),
        },
        Accepted::Unix(stream) => {
            let (identity, peer) = match stream.peer_cred() {
                Ok(cred) => {
                    let uid = cred.uid();
                    let domain = shared.uid_domain.clone();
                    let identity =
                        tokio::task::spawn_blocking(move || local_identity(uid, &domain))
                            .await
                            .unwrap_or_else(|_| Identity::anonymous());
                    let pid = cred.pid().map(|p| format!(" pid {p}")).unwrap_or_default();
                    (identity, format!("unix uid {uid}{pid}"))
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read peer credentials; treating peer as anonymous");
                    (Identity::anonymous(), "unix".to_string())
                }
            };
            let info = ConnInfo {
                peer: peer.into(),
                host: "local".into(),
                local: Some(identity),
                from: shared.local_host.clone(),
                ip: None,
                cert: None,
            };
            serve_connection(shared, stream, info, shutdown).await
        }
    }
}

async fn serve_tcp(
    shared: Arc<Shared>,
    stream: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let mut info = ConnInfo {
        peer: peer.to_string().into(),
        host: peer.ip().to_string().into(),
        local: None,
        from: Arc::new(tcp_peer_host(&shared, peer.ip()).await),
        ip: Some(peer.ip()),
        cert: None,
    };
    let Some(acceptor) = tls else {
        return serve_connection(shared, stream, info, shutdown).await;
    };
    match tokio::time::timeout(shared.tls_handshake_timeout, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => {
            if let Some(der) = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
            {
                match CertInfo::parse(der, "client certificate") {
                    Ok(c) => {
                        // the pool CA vouches for the host name:
                        // `*.domain` entries may match it
                        if let Some(host) = &c.common_name {
                            let mut from = (*info.from).clone();
                            from.names.push(host.to_ascii_lowercase());
                            info.from = Arc::new(from);
                        }
                        info.cert = Some(Arc::new(PeerCert {
                            host: c.common_name,
                            id: c.serial_hex,
                        }))
                    }
                    Err(e) => {
                        tracing::warn!(peer = %peer, error = %e, "refused a client certificate that does not parse");
                        return;
                    }
                }
            }
            serve_connection(shared, stream, info, shutdown).await
        }
        Ok(Err(e)) => {
            let reason = match crate::tls::find_rustls_error(&e) {
                Some(r) => crate::tls::describe(r, crate::tls::Side::Server),
                None => e.to_string(),
            };
            tracing::warn!(peer = %peer, "tls handshake failed: {reason}")
        }
        Err(_) => tracing::warn!(peer = %peer, "tls handshake timed out"),
    }
}

/// A TCP peer as host entries see it: its address, and, when the policy
/// has `*.domain` entries, the name it is known by (a reverse lookup that
/// resolves back to it).
async fn tcp_peer_host(shared: &Shared, ip: std::net::IpAddr) -> PeerHost {
    let mut host = PeerHost::ip(ip);
    if shared.policy.matches_names() {
        if let Ok(names) = tokio::task::spawn_blocking(move || crate::hosts::names_of(ip)).await {
            host.names = names;
        }
    }
    host
}

async fn serve_connection<IO>(
    shared: Arc<Shared>,
    io: IO,
    info: ConnInfo,
    mut shutdown: watch::Receiver<bool>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let peer = info.peer.clone();
    let service = service_fn(move |req| handle(shared.clone(), info.clone(), req));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        _ = shutdown_requested(&mut shutdown) => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(peer = %peer, error = %e, "connection ended with an error");
    }
}

async fn handle(
    shared: Arc<Shared>,
    info: ConnInfo,
    req: http::Request<Incoming>,
) -> Result<Response, Infallible> {
    let mut resp = respond(&shared, &info, req).await;
    resp.headers_mut()
        .insert(PROTOCOL_HEADER, HeaderValue::from(PROTOCOL_VERSION));
    Ok(resp)
}

async fn respond(shared: &Shared, info: &ConnInfo, req: http::Request<Incoming>) -> Response {
    let (mut parts, body) = req.into_parts();
    if let Some(v) = parts.headers.get(PROTOCOL_HEADER) {
        let version = v.to_str().ok().and_then(|s| s.trim().parse::<u32>().ok());
        if version != Some(PROTOCOL_VERSION) {
            let shown = String::from_utf8_lossy(v.as_bytes()).into_owned();
            tracing::warn!(peer = %info.peer, version = %shown, "unsupported protocol version");
            return ApiError::bad_request(format!(
                "unsupported protocol version `{shown}`; this server speaks {PROTOCOL_VERSION}"
            ))
            .into_response();
        }
    }
    let auth = match authenticate(shared, info, &parts.headers) {
        Ok(auth) => auth,
        Err(e) => {
            tracing::warn!(
                peer = %info.peer,
                path = %parts.uri.path(),
                "authentication failed: {}",
                e.0.message
            );
            return e.into_response();
        }
    };
    let path = parts.uri.path().to_string();
    let identity = auth.identity.clone();
    // The pool's own daemons (DAEMON holders) are limited only in total.
    let peer_key = (!auth.levels().contains(&AuthLevel::Daemon))
        .then(|| format!("{identity} at {}", info.host));
    let turn = match shared.admission.admit(peer_key.as_deref()).await {
        Ok(turn) => turn,
        Err(e) => {
            tracing::warn!(peer = %info.peer, identity = %identity, path, "request refused: {}", e.0.message);
            drain(&parts.headers, body).await;
            return e.into_response();
        }
    };
    parts.extensions.insert(auth);
    let req = Request::from_parts(parts, Body::new(body));
    // The handler runs in its own task: a caller that goes away does not
    // cancel it halfway (only the handler timeout does), and a panic in it
    // becomes a 500 instead of a dropped connection.
    // A raw (octet-stream) request body may take longer than any fixed
    // bound to arrive: its handler is bounded by the idle timeout of
    // `receive_file` instead, chunk by chunk.
    let raw_body = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(crate::stream::OCTET_STREAM));
    let router = shared.router.clone();
    let limit = if raw_body {
        Duration::MAX
    } else {
        shared.handler_timeout
    };
    let task = tokio::spawn(async move { tokio::time::timeout(limit, router.oneshot(req)).await });
    match task.await {
        Ok(Ok(Ok(resp))) => {
            let (parts, body) = resp.into_parts();
            let body = Body::new(AdmittedBody {
                inner: body,
                _turn: turn,
            });
            Response::from_parts(parts, body)
        }
        Ok(Ok(Err(never))) => match never {},
        Ok(Err(_elapsed)) => {
            tracing::warn!(peer = %info.peer, identity = %identity, path, "handler timed out");
            ApiError::new(
                ErrorCode::Timeout,
                format!("the server did not finish within {limit:?}"),
            )
            .into_response()
        }
        Err(e) => {
            tracing::error!(peer = %info.peer, identity = %identity, path, error = %e, "handler failed");
            ApiError::internal("the handler failed unexpectedly").into_response()
        }
    }
}

fn authenticate(
    shared: &Shared,
    info: &ConnInfo,
    headers: &HeaderMap,
) -> Result<Authenticated, ApiError> {
    let unauthenticated = |m: String| ApiError::new(ErrorCode::Unauthenticated, m);
    let mut credential_id = None;
    if let Some(cert) = &info.cert {
        let host = cert.host.as_deref().unwrap_or("(no common name)");
        if shared.revocations.contains(&cert.id) {
            tracing::warn!(
                peer = %info.peer,
                host,
                credential_id = %cert.id,
                "refused a revoked host certificate"
            );
            return Err(ApiError::new(
                ErrorCode::PermissionDenied,
                format!(
                    "the certificate of {host} (credential {}) has been revoked",
                    cert.id
                ),
            ));
        }
    }
    let (identity, scope) = match headers.get(AUTHORIZATION) {
        None => match (&info.local, &info.cert) {
            (Some(local), _) => (local.clone(), None),
            (None, Some(cert)) => {
                let host = cert.host.as_deref().unwrap_or_default();
                let identity =
                    Identity::new(CERTIFICATE_USER, host, AuthMethod::Ssl).map_err(|_| {
                        unauthenticated(format!(
                            "the client certificate (credential {}) names no usable host: `{host}`",
                            cert.id
                        ))
                    })?;
                credential_id = Some(cert.id.clone());
                (identity, None)
            }
            (None, None) => (Identity::anonymous(), None),
        },
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| unauthenticated("the authorization header is not ascii".into()))?;
            let token = match text.split_once(' ') {
                Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
                _ => {
                    return Err(unauthenticated(
                        "unsupported authorization scheme; expected `Bearer <token>`".into(),
                    ))
                }
            };
            let Some(key) = &shared.signing_key else {
                return Err(unauthenticated(
                    "this server accepts no tokens (it has no signing key)".into(),
                ));
            };
            let claims = verify_token(key, token).map_err(|e| unauthenticated(e.to_string()))?;
            let identity = Identity::parse(&claims.sub, AuthMethod::Token)
                .map_err(|e| unauthenticated(e.to_string()))?;
            tracing::debug!(identity = %identity, jti = %claims.jti, peer = %info.peer, "token accepted");
            (identity, Some(Arc::from(claims.scope)))
        }
    };
    Ok(Authenticated {
        identity,
        scope,
        policy: shared.policy.clone(),
        peer: info.peer.clone(),
        from: info.from.clone(),
        peer_ip: info.ip,
        credential_id,
    })
}
