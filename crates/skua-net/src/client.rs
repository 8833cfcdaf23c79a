//! The client: JSON calls over TCP, TLS or a Unix socket, each bounded by a
//! timeout, on a small pool of keep-alive connections.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use serde::Serialize;
use skua_proto::{
    routes, ErrorBody, ErrorCode, RawBytes, Route, RouteSpec, WhoAmI, PROTOCOL_HEADER,
    PROTOCOL_VERSION,
};
use std::sync::atomic::Ordering;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::TlsConnector;

use crate::fault::{Call, Fault, FaultFilter, Tap};
use crate::stream::{ReaderBody, OCTET_STREAM};
use crate::tls::ClientIdentity;
use crate::NetError;

/// Idle connections kept per client.
const MAX_IDLE: usize = 4;
/// How long an idle connection is reused; well under the server's 30 s
/// keep-alive, so the server never closes one under a request.
const MAX_IDLE_AGE: Duration = Duration::from_secs(10);
/// Default largest reply accepted.
const DEFAULT_MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// Where a server listens.
#[derive(Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// Plain TCP.
    Tcp(SocketAddr),
    /// TLS over TCP, trusting the CA certificate(s) in the PEM text; the
    /// server's certificate must name the IP address.
    Tls(SocketAddr, String),
    /// A Unix-domain socket; the server identifies the caller by its uid.
    Unix(PathBuf),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "tcp://{a}"),
            Endpoint::Tls(a, _) => write!(f, "tls://{a}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A client of one endpoint. Cheap to clone (clones share connections);
/// calls may run concurrently, each on its own connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    endpoint: Endpoint,
    label: String,
    authorization: Option<HeaderValue>,
    timeout: Duration,
    tls: Option<(TlsConnector, SocketAddr)>,
    max_response_bytes: usize,
    idle: Mutex<Vec<Idle>>,
    /// A test's fault filter (see [`crate::FaultFilter`]).
    faults: Option<Tap>,
    /// The shared-port preamble sent first on each TCP connection
    /// ([`Client::with_shared_port_id`]).
    shared_port: Option<Arc<[u8]>>,
}

struct Idle {
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("endpoint", &self.inner.endpoint)
            .field(
                "token",
                &self.inner.authorization.as_ref().map(|_| "<secret>"),
            )
            .field("timeout", &self.inner.timeout)
            .finish()
    }
}

impl Client {
    /// A client of `endpoint`, presenting `token` (if any) as
    /// `Authorization: Bearer`, bounding every call by `timeout`
    /// (connecting, sending, and reading the whole reply). Fails on a bad
    /// CA PEM or a token that cannot be a header value.
    pub fn new(
        endpoint: Endpoint,
        token: Option<String>,
        timeout: Duration,
    ) -> Result<Self, NetError> {
        let authorization = match token {
            None => None,
            Some(t) => {
                let mut v =
                    HeaderValue::from_str(&format!("Bearer {}", t.trim())).map_err(|_| {
                        NetError::Config("the token contains invalid characters".into())
                    })?;
                v.set_sensitive(true);
                Some(v)
            }
        };
        let tls = match &endpoint {
            Endpoint::Tls(addr, ca_pem) => Some((
                TlsConnector::from(crate::tls::client_config(ca_pem.as_bytes())?),
                *addr,
            )),
            _ => None,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                label: endpoint.to_string(),
                endpoint,
                authorization,
                timeout,
                tls,
                max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
                idle: Mutex::new(Vec::new()),
                faults: None,
                shared_port: None,
            }),
        })
    }

    /// The same client named `label` in its errors (`the schedd at ...`), and waiting at most
    /// `timeout` for each answer. Connections are not shared with the original.
    pub fn with_label_and_timeout(&self, label: impl Into<String>, timeout: Duration) -> Client {
        Client {
            inner: Arc::new(Inner {
                endpoint: self.inner.endpoint.clone(),
                label: label.into(),
                authorization: self.inner.authorization.clone(),
                timeout,
                tls: self.inner.tls.clone(),
                max_response_bytes: self.inner.max_response_bytes,
                idle: Mutex::new(Vec::new()),
                faults: self.inner.faults.clone(),
                shared_port: self.inner.shared_port.clone(),
            }),
        }
    }

    /// The text that names the endpoint in errors.
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    /// The same client with another reply size limit (default 256 MiB).
    /// Connections are not shared with the original.
    pub fn with_max_response_bytes(&self, max: usize) -> Client {
        Client {
            inner: Arc::new(Inner {
                endpoint: self.inner.endpoint.clone(),
                label: self.inner.label.clone(),
                authorization: self.inner.authorization.clone(),
                timeout: self.inner.timeout,
                tls: self.inner.tls.clone(),
                max_response_bytes: max,
                idle: Mutex::new(Vec::new()),
                faults: self.inner.faults.clone(),
                shared_port: self.inner.shared_port.clone(),
            }),
        }
    }

    /// The same client presenting `identity` (a host certificate from the
    /// pool CA and its key) when a TLS server asks for a client
    /// certificate; TCP and Unix endpoints are unaffected. Fails on a bad
    /// certificate or key. Connections are not shared with the original.
    pub fn with_identity(&self, identity: ClientIdentity) -> Result<Client, NetError> {
        let tls = match &self.inner.endpoint {
            Endpoint::Tls(addr, ca_pem) => Some((
                TlsConnector::from(crate::tls::client_config_with_identity(
                    ca_pem.as_bytes(),
                    Some(&identity),
                )?),
                *addr,
            )),
            _ => None,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                endpoint: self.inner.endpoint.clone(),
                label: self.inner.label.clone(),
                authorization: self.inner.authorization.clone(),
                timeout: self.inner.timeout,
                tls,
                max_response_bytes: self.inner.max_response_bytes,
                idle: Mutex::new(Vec::new()),
                faults: self.inner.faults.clone(),
                shared_port: self.inner.shared_port.clone(),
            }),
        })
    }

    /// The same client, its calls passed through a test's fault `filter`
    /// as calls of the daemon `from` to the daemon `to` (when known;
    /// otherwise the filter knows the callee by its address).
    /// Connections are not shared with the original.
    pub fn with_faults(&self, filter: FaultFilter, from: &str, to: Option<&str>) -> Client {
        Client {
            inner: Arc::new(Inner {
                endpoint: self.inner.endpoint.clone(),
                label: self.inner.label.clone(),
                authorization: self.inner.authorization.clone(),
                timeout: self.inner.timeout,
                tls: self.inner.tls.clone(),
                max_response_bytes: self.inner.max_response_bytes,
                idle: Mutex::new(Vec::new()),
                faults: Some(Tap {
                    filter,
                    from: from.to_string(),
                    to: to.map(str::to_string),
                }),
                shared_port: self.inner.shared_port.clone(),
            }),
        }
    }

    /// The same client reaching the daemon `id` behind the shared port
    /// at its TCP address: each connection begins with the shared-port
    /// preamble naming `id` (see [`crate::shared_port`]), then TLS or HTTP
    /// as usual. Fails on an invalid id. Connections are not shared with
    /// the original.
    pub fn with_shared_port_id(&self, id: &str) -> Result<Client, NetError> {
        let preamble = crate::shared_port::preamble(id)?;
        let mut label = self.inner.label.clone();
        if matches!(self.inner.endpoint, Endpoint::Tcp(_) | Endpoint::Tls(..)) {
            label = format!("{label}?sock={id}");
        }
        Ok(Client {
            inner: Arc::new(Inner {
                endpoint: self.inner.endpoint.clone(),
                label,
                authorization: self.inner.authorization.clone(),
                timeout: self.inner.timeout,
                tls: self.inner.tls.clone(),
                max_response_bytes: self.inner.max_response_bytes,
                idle: Mutex::new(Vec::new()),
                faults: self.inner.faults.clone(),
                shared_port: Some(Arc::from(preamble)),
            }),
        })
    }

    /// The shared-port id this client's connections are routed to.
    pub fn shared_port_id(&self) -> Option<&str> {
        self.inner
            .shared_port
            .as_deref()
            .and_then(|p| p.get(6..))
            .and_then(|id| std::str::from_utf8(id).ok())
    }

    /// Asks the fault filter (if any) about a call to `path`: fails it
    /// (cut, dropped), holds it (delayed), or says its reply is to be lost
    /// (`Ok(true)`).
    async fn fault(&self, path: &str) -> Result<bool, NetError> {
        let Some(tap) = &self.inner.faults else {
            return Ok(false);
        };
        let to_addr = match &self.inner.endpoint {
            Endpoint::Tcp(a) | Endpoint::Tls(a, _) => Some(*a),
            Endpoint::Unix(_) => None,
        };
        let call = Call {
            from: &tap.from,
            to_name: tap.to.as_deref(),
            to_addr,
            path,
        };
        match tap.filter.check(&call) {
            None => Ok(false),
            Some(Fault::Cut) => Err(NetError::Connect {
                endpoint: self.inner.label.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    "cut by the test's fault filter",
                ),
            }),
            Some(Fault::Drop) => {
                tokio::time::sleep(self.inner.timeout).await;
                Err(self.timeout_error())
            }
            Some(Fault::DropReply) => Ok(true),
            Some(Fault::Delay(d)) => {
                tokio::time::sleep(d).await;
                Ok(false)
            }
        }
    }

    fn reply_lost(&self) -> NetError {
        NetError::Http {
            endpoint: self.inner.label.clone(),
            message: "the reply was lost (the test's fault filter)".into(),
        }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.inner.endpoint
    }

    /// The per-call timeout.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// Sends `body` (JSON) with `method` to `path` and decodes the JSON
    /// reply. An error status becomes [`NetError::Remote`] with the
    /// server's [`ErrorBody`].
    pub async fn call<Req, Resp>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Req>,
    ) -> Result<Resp, NetError>
    where
        Req: Serialize + ?Sized,
        Resp: DeserializeOwned,
    {
        let body = match body {
            Some(b) => Some(Bytes::from(
                serde_json::to_vec(b).map_err(NetError::Encode)?,
            )),
            None => None,
        };
        let lose_reply = self.fault(path).await?;
        let exchange = self.exchange(method, path, body);
        let (status, bytes) = match tokio::time::timeout(self.inner.timeout, exchange).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(NetError::Timeout {
                    endpoint: self.inner.label.clone(),
                    after: self.inner.timeout,
                })
            }
        };
        if lose_reply {
            return Err(self.reply_lost());
        }
        if !status.is_success() {
            return Err(NetError::Remote {
                endpoint: self.inner.label.clone(),
                status: status.as_u16(),
                body: error_body(status, &bytes),
            });
        }
        let bytes: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
        serde_json::from_slice(bytes).map_err(|e| NetError::Decode {
            endpoint: self.inner.label.clone(),
            message: e.to_string(),
        })
    }

    /// `GET path`.
    pub async fn get<Resp: DeserializeOwned>(&self, path: &str) -> Result<Resp, NetError> {
        self.call::<(), Resp>(Method::GET, path, None).await
    }

    /// `POST path` with `body`.
    pub async fn post<Req, Resp>(&self, path: &str, body: &Req) -> Result<Resp, NetError>
    where
        Req: Serialize + ?Sized,
        Resp: DeserializeOwned,
    {
        self.call(Method::POST, path, Some(body)).await
    }

    /// Calls a protocol route with its method, sending the route's request
    /// and decoding its reply: a caller expecting another reply does not
    /// compile.
    ///
    /// ```no_run
    /// # async fn f(c: &skua_net::Client, q: skua_net::proto::Query) -> Result<(), skua_net::NetError> {
    /// use skua_net::proto::{routes, QueryReply};
    /// let reply: QueryReply = c.command(&routes::COLLECTOR_QUERY, Some(&q)).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// ```compile_fail,E0308
    /// # async fn f(c: &skua_net::Client, q: skua_net::proto::Query) -> Result<(), skua_net::NetError> {
    /// use skua_net::proto::{routes, Ack};
    /// // the collector answers a query with a `QueryReply`, not an `Ack`
    /// let reply: Ack = c.command(&routes::COLLECTOR_QUERY, Some(&q)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn command<Req, Resp>(
        &self,
        route: &Route<Req, Resp>,
        body: Option<&Req>,
    ) -> Result<Resp, NetError>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
    {
        let method = route_method(route)?;
        self.call(method, route.path, body).await
    }

    /// `GET /hello`: who the server thinks we are.
    pub async fn hello(&self) -> Result<WhoAmI, NetError> {
        self.command(&routes::HELLO, None).await
    }

    fn request(&self, method: &Method, path: &str, body: &Option<Bytes>) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(body.clone().unwrap_or_default()));
        *req.method_mut() = method.clone();
        *req.uri_mut() = match path.parse() {
            Ok(uri) => uri,
            Err(_) => http::Uri::from_static("/"),
        };
        let h = req.headers_mut();
        let host = match &self.inner.endpoint {
            Endpoint::Tcp(a) | Endpoint::Tls(a, _) => HeaderValue::from_str(&a.to_string()).ok(),
            Endpoint::Unix(_) => None,
        };
        h.insert(HOST, host.unwrap_or(HeaderValue::from_static("localhost")));
        h.insert(PROTOCOL_HEADER, HeaderValue::from(PROTOCOL_VERSION));
        h.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if body.is_some() {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if let Some(a) = &self.inner.authorization {
            h.insert(AUTHORIZATION, a.clone());
        }
        req
    }

    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<(StatusCode, Bytes), NetError> {
        let (resp, sender) = self.send_pooled(method, path, body, false).await?;
        let status = resp.status();
        let collected = Limited::new(resp.into_body(), self.inner.max_response_bytes)
            .collect()
            .await
            .map_err(|e| NetError::Http {
                endpoint: self.inner.label.clone(),
                message: format!("reading reply: {e}"),
            })?;
        self.checkin(sender);
        Ok((status, collected.to_bytes()))
    }

    /// Sends a request on a pooled (or new) connection and returns the
    /// reply's head with its unread body, and the connection to check in
    /// once the body is read.
    async fn send_pooled(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        raw_reply: bool,
    ) -> Result<(http::Response<Incoming>, SendRequest<Full<Bytes>>), NetError> {
        if !path.starts_with('/') || path.parse::<http::Uri>().is_err() {
            return Err(NetError::Config(format!("invalid request path `{path}`")));
        }
        let make = |body: &Option<Bytes>| {
            let mut req = self.request(&method, path, body);
            if raw_reply {
                req.headers_mut()
                    .insert(ACCEPT, HeaderValue::from_static(OCTET_STREAM));
            }
            req
        };
        loop {
            match self.checkout() {
                Some(mut sender) => {
                    // A pooled connection may have been closed by the
                    // server; retry on a fresh one only if the request
                    // provably was not sent.
                    match sender.try_send_request(make(&body)).await {
                        Ok(resp) => return Ok((resp, sender)),
                        Err(mut e) => {
                            if e.take_message().is_some() {
                                continue;
                            }
                            return Err(self.http_error(e.into_error()));
                        }
                    }
                }
                None => {
                    let mut sender = self.connect().await?;
                    match sender.send_request(make(&body)).await {
                        Ok(resp) => return Ok((resp, sender)),
                        Err(e) => return Err(self.http_error(e)),
                    }
                }
            }
        }
    }

    fn timeout_error(&self) -> NetError {
        NetError::Timeout {
            endpoint: self.inner.label.clone(),
            after: self.inner.timeout,
        }
    }

    /// Reads an error reply (bounded) and makes it a [`NetError::Remote`].
    async fn remote_error(&self, status: StatusCode, body: Incoming) -> NetError {
        let read = Limited::new(body, 1024 * 1024).collect();
        let bytes = match tokio::time::timeout(self.inner.timeout, read).await {
            Ok(Ok(c)) => c.to_bytes(),
            _ => Bytes::new(),
        };
        NetError::Remote {
            endpoint: self.inner.label.clone(),
            status: status.as_u16(),
            body: error_body(status, &bytes),
        }
    }

    /// `POST`s `req` (JSON) to `route` and streams the raw reply
    /// (`200 application/octet-stream`) into `dest`, chunk by chunk.
    /// Returns the number of bytes written. An error status becomes
    /// [`NetError::Remote`]. The client's timeout bounds connecting, the
    /// reply's head, and each wait for the next chunk (the transfer may
    /// take as long as it keeps moving). `dest` is flushed at the end.
    pub async fn download<Req: Serialize>(
        &self,
        route: &Route<Req, RawBytes>,
        req: &Req,
        dest: &mut (impl AsyncWrite + Unpin),
    ) -> Result<u64, NetError> {
        let method = route_method(route)?;
        let body = Bytes::from(serde_json::to_vec(req).map_err(NetError::Encode)?);
        if self.fault(route.path).await? {
            // served, but the reply never arrives
            let _ = self.send_pooled(method, route.path, Some(body), true).await;
            return Err(self.reply_lost());
        }
        let send = self.send_pooled(method, route.path, Some(body), true);
        let (resp, sender) = tokio::time::timeout(self.inner.timeout, send)
            .await
            .map_err(|_| self.timeout_error())??;
        let status = resp.status();
        if !status.is_success() {
            return Err(self.remote_error(status, resp.into_body()).await);
        }
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !content_type.starts_with(OCTET_STREAM) {
            return Err(NetError::Decode {
                endpoint: self.inner.label.clone(),
                message: format!(
                    "expected an {OCTET_STREAM} reply from {}, got `{content_type}`",
                    route.path
                ),
            });
        }
        let mut body = resp.into_body();
        let mut total = 0u64;
        loop {
            let frame = tokio::time::timeout(self.inner.timeout, body.frame())
                .await
                .map_err(|_| self.timeout_error())?;
            match frame {
                None => break,
                Some(Err(e)) => {
                    return Err(NetError::Http {
                        endpoint: self.inner.label.clone(),
                        message: format!("reply broke off after {total} bytes: {e}"),
                    })
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        dest.write_all(&data).await.map_err(|source| NetError::Io {
                            context: format!("writing the reply of {}", route.path),
                            source,
                        })?;
                        total += data.len() as u64;
                    }
                }
            }
        }
        dest.flush().await.map_err(|source| NetError::Io {
            context: format!("writing the reply of {}", route.path),
            source,
        })?;
        self.checkin(sender);
        Ok(total)
    }

    /// `POST`s `len` bytes read from `src` to `route` as a raw body
    /// (`application/octet-stream`, `Content-Length: len`), with the extra
    /// header `header` (name, value; e.g. a JSON description of the
    /// file), and decodes the JSON reply. The body streams chunk by chunk
    /// on a connection of its own. A source with fewer than `len` bytes
    /// breaks the transfer (the server sees a truncated body). The
    /// client's timeout bounds connecting and each stretch with no
    /// progress (no bytes sent, no reply).
    pub async fn upload<Resp: DeserializeOwned>(
        &self,
        route: &Route<RawBytes, Resp>,
        header: (&str, String),
        src: impl AsyncRead + Send + Unpin + 'static,
        len: u64,
    ) -> Result<Resp, NetError> {
        let method = route_method(route)?;
        let lose_reply = self.fault(route.path).await?;
        let name = http::HeaderName::from_bytes(header.0.as_bytes())
            .map_err(|_| NetError::Config(format!("invalid header name `{}`", header.0)))?;
        let value = HeaderValue::from_str(&header.1)
            .map_err(|_| NetError::Config(format!("invalid value for header `{}`", header.0)))?;
        let body = ReaderBody::new(src, len);
        let progress = body.progress();
        let mut req = Request::new(body);
        *req.method_mut() = method;
        *req.uri_mut() = route
            .path
            .parse()
            .map_err(|_| NetError::Config(format!("invalid request path `{}`", route.path)))?;
        let template = self.request(&Method::POST, route.path, &None);
        *req.headers_mut() = template.headers().clone();
        let h = req.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static(OCTET_STREAM));
        h.insert(CONTENT_LENGTH, HeaderValue::from(len));
        h.insert(name, value);

        let mut sender: SendRequest<ReaderBody<_>> =
            tokio::time::timeout(self.inner.timeout, self.connect())
                .await
                .map_err(|_| self.timeout_error())??;
        let send = sender.send_request(req);
        tokio::pin!(send);
        // Idle detection: fail only when neither bytes moved nor a reply
        // came for a whole timeout.
        let mut last = progress.load(Ordering::Relaxed);
        let resp = loop {
            match tokio::time::timeout(self.inner.timeout, send.as_mut()).await {
                Ok(r) => break r.map_err(|e| self.http_error(e))?,
                Err(_) => {
                    let now = progress.load(Ordering::Relaxed);
                    if now == last {
                        return Err(self.timeout_error());
                    }
                    last = now;
                }
            }
        };
        if lose_reply {
            return Err(self.reply_lost());
        }
        let status = resp.status();
        if !status.is_success() {
            return Err(self.remote_error(status, resp.into_body()).await);
        }
        let read = Limited::new(resp.into_body(), self.inner.max_response_bytes).collect();
        let bytes = tokio::time::timeout(self.inner.timeout, read)
            .await
            .map_err(|_| self.timeout_error())?
            .map_err(|e| NetError::Http {
                endpoint: self.inner.label.clone(),
                message: format!("reading reply: {e}"),
            })?
            .to_bytes();
        let bytes: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
        serde_json::from_slice(bytes).map_err(|e| NetError::Decode {
            endpoint: self.inner.label.clone(),
            message: e.to_string(),
        })
    }

    fn http_error(&self, e: hyper::Error) -> NetError {
        // With TLS 1.3 the server checks our certificate after our side of
        // the handshake is done: its refusal arrives with the first reply.
        if let Some(r) = crate::tls::find_rustls_error(&e) {
            return NetError::Tls {
                endpoint: self.inner.label.clone(),
                message: crate::tls::describe(r, crate::tls::Side::Client),
            };
        }
        NetError::Http {
            endpoint: self.inner.label.clone(),
            message: e.to_string(),
        }
    }

    fn checkout(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.inner.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(conn) = idle.pop() {
            if conn.since.elapsed() < MAX_IDLE_AGE && conn.sender.is_ready() {
                return Some(conn.sender);
            }
        }
        None
    }

    fn checkin(&self, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.inner.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(Idle {
                sender,
                since: Instant::now(),
            });
        }
    }

    async fn connect<B>(&self) -> Result<SendRequest<B>, NetError>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let label = &self.inner.label;
        let connect_err = |source| NetError::Connect {
            endpoint: label.clone(),
            source,
        };
        match &self.inner.endpoint {
            Endpoint::Tcp(addr) => {
                let s = self.connect_tcp(addr).await?;
                self.handshake(s).await
            }
            Endpoint::Tls(addr, _) => {
                let s = self.connect_tcp(addr).await?;
                let Some((connector, _)) = &self.inner.tls else {
                    return Err(NetError::Config(
                        "tls endpoint without tls configuration".into(),
                    ));
                };
                let s = connector
                    .connect(crate::tls::server_name(addr), s)
                    .await
                    .map_err(|e| crate::tls::tls_error(label, &e))?;
                self.handshake(s).await
            }
            Endpoint::Unix(path) => {
                let s = UnixStream::connect(path).await.map_err(connect_err)?;
                self.handshake(s).await
            }
        }
    }

    /// A TCP connection to `addr`, the shared-port preamble sent if the
    /// client has one.
    async fn connect_tcp(&self, addr: &SocketAddr) -> Result<TcpStream, NetError> {
        let connect_err = |source| NetError::Connect {
            endpoint: self.inner.label.clone(),
            source,
        };
        let mut s = TcpStream::connect(addr).await.map_err(connect_err)?;
        let _ = s.set_nodelay(true);
        if let Some(preamble) = &self.inner.shared_port {
            s.write_all(preamble).await.map_err(connect_err)?;
        }
        Ok(s)
    }

    async fn handshake<IO, B>(&self, io: IO) -> Result<SendRequest<B>, NetError>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (sender, conn) = http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| self.http_error(e))?;
        let label = self.inner.label.clone();
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(endpoint = %label, error = %e, "client connection ended with an error");
            }
        });
        Ok(sender)
    }
}

fn route_method(route: &RouteSpec) -> Result<Method, NetError> {
    Method::from_bytes(route.method.as_bytes())
        .map_err(|_| NetError::Config(format!("bad method `{}`", route.method)))
}

/// The server's [`ErrorBody`], or one made from the status when the body
/// is not one.
fn error_body(status: StatusCode, bytes: &[u8]) -> ErrorBody {
    serde_json::from_slice::<ErrorBody>(bytes).unwrap_or_else(|_| {
        let text = String::from_utf8_lossy(bytes);
        let text: String = text.chars().take(200).collect();
        ErrorBody::new(
            ErrorCode::from_http_status(status.as_u16()),
            format!("http status {status}: {text}"),
        )
    })
}
