//! The shared port: one inbound TCP port per host, in front of every
//! daemon of the host (HTCondor's `condor_shared_port`).
//!
//! The [`SharedPort`] accepts TCP connections, learns from each which
//! daemon it is for, and passes the connection's file descriptor to that
//! daemon over the daemon's handoff socket (`<socket dir>/<id>`, a Unix
//! socket, with `SCM_RIGHTS`). The daemon ([`crate::Listener::handoff`])
//! then serves the connection exactly as if it had accepted it: the TLS
//! handshake, authentication and authorization all happen in the daemon,
//! and the peer address is the real remote one. The shared port itself
//! never reads past the routing preamble and never authenticates anyone.
//!
//! Routing, on the first bytes the client sends:
//! - the Skua preamble: the 4 bytes `SKSP`, a version byte (1), a length
//!   byte `n` (1..=64) and `n` bytes of the target id (ASCII letters,
//!   digits, `_`, `-`, `.`); the client then speaks as it would to the
//!   daemon directly (TLS or HTTP). [`preamble`] builds it;
//!   [`crate::Client::with_shared_port_id`] sends it.
//! - a TLS ClientHello (first byte `0x16`) without a preamble: the default
//!   id (HTCondor's `SHARED_PORT_DEFAULT_ID`, `collector`), so `HOST:9618`
//!   reaches the collector behind it like a collector listening there.
//! - anything else, a preamble not complete within the read deadline, an
//!   id with no daemon behind it: the connection is closed and a line
//!   naming the peer and the reason logged. The listener carries on.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use tokio::io::{AsyncReadExt, Interest};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::NetError;

/// The first bytes of a shared-port preamble.
pub const PREAMBLE_MAGIC: &[u8; 4] = b"SKSP";
/// The preamble's version.
pub const PREAMBLE_VERSION: u8 = 1;
/// The longest target id.
pub const MAX_ID_LEN: usize = 64;
/// The first byte of a TLS handshake record (a ClientHello).
pub const TLS_HANDSHAKE: u8 = 0x16;
/// HTCondor's `SHARED_PORT_DEFAULT_ID`.
pub const DEFAULT_ID: &str = "collector";
/// How long a client has to send its preamble (or its first byte).
pub const PREAMBLE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long passing a connection to its daemon may take.
const HANDOFF_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections being routed at once; more wait in the listen backlog.
const MAX_ROUTING: usize = 256;
/// Pause after a failed `accept`.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Whether `id` may name a daemon behind the shared port: 1 to 64 ASCII
/// letters, digits, `_`, `-` or `.`, not `.` or `..`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// The preamble that routes a connection to the daemon `id`.
pub fn preamble(id: &str) -> Result<Vec<u8>, NetError> {
    if !valid_id(id) {
        return Err(NetError::Config(format!(
            "`{id}` is not a shared-port id (1 to {MAX_ID_LEN} letters, digits, `_`, `-`, `.`)"
        )));
    }
    let mut out = Vec::with_capacity(6 + id.len());
    out.extend_from_slice(PREAMBLE_MAGIC);
    out.push(PREAMBLE_VERSION);
    out.push(id.len() as u8);
    out.extend_from_slice(id.as_bytes());
    Ok(out)
}

/// How the shared port routes.
#[derive(Clone, Debug)]
pub struct SharedPortConfig {
    /// Where the daemons' handoff sockets are (`$(LOCK)/daemon_sock`).
    pub socket_dir: PathBuf,
    /// Where a connection without a preamble that begins with a TLS
    /// ClientHello goes.
    pub default_id: String,
    /// How long a client has to send its preamble.
    pub preamble_timeout: Duration,
}

impl SharedPortConfig {
    /// Routing to the handoff sockets in `socket_dir`, with the default id
    /// `collector` and a 5 s preamble deadline.
    pub fn new(socket_dir: impl Into<PathBuf>) -> Self {
        SharedPortConfig {
            socket_dir: socket_dir.into(),
            default_id: DEFAULT_ID.to_string(),
            preamble_timeout: PREAMBLE_TIMEOUT,
        }
    }
}

/// The shared port's TCP listener, bound.
pub struct SharedPort {
    listener: TcpListener,
    config: SharedPortConfig,
}

impl SharedPort {
    /// Binds `addr` (port 0: any).
    pub async fn bind(addr: SocketAddr, config: SharedPortConfig) -> Result<Self, NetError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| NetError::Io {
                context: format!("binding the shared port {addr}"),
                source,
            })?;
        Ok(SharedPort { listener, config })
    }

    /// The bound address.
    pub fn local_addr(&self) -> Result<SocketAddr, NetError> {
        self.listener.local_addr().map_err(|source| NetError::Io {
            context: "the shared port's address".into(),
            source,
        })
    }

    /// Starts routing connections (in a task). Must be called inside a
    /// Tokio runtime.
    pub fn spawn(self) -> SharedPortHandle {
        let (tx, rx) = watch::channel(false);
        let addr = self.listener.local_addr().ok();
        let task = tokio::spawn(accept_loop(self.listener, self.config, rx));
        SharedPortHandle {
            shutdown: tx,
            task: Some(task),
            addr,
        }
    }
}

/// A running shared port; dropping it stops it too.
pub struct SharedPortHandle {
    shutdown: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    addr: Option<SocketAddr>,
}

impl SharedPortHandle {
    /// The bound address.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Stops accepting and waits for the routing task to end.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for SharedPortHandle {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

async fn accept_loop(
    listener: TcpListener,
    config: SharedPortConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut routing = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => break,
            Some(_) = routing.join_next(), if !routing.is_empty() => continue,
            accepted = listener.accept(), if routing.len() < MAX_ROUTING => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let config = config.clone();
                routing.spawn(async move {
                    match route(stream, &config).await {
                        Ok(id) => {
                            tracing::debug!(peer = %peer, "shared port: connection passed to {id}")
                        }
                        Err(reason) => tracing::warn!(
                            peer = %peer,
                            "shared port: connection refused: {reason}"
                        ),
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "shared port: accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
    routing.shutdown().await;
}

/// Reads the target of `stream`, passes it on; the id it went to, or why
/// not.
async fn route(mut stream: TcpStream, config: &SharedPortConfig) -> Result<String, String> {
    let id = tokio::time::timeout(config.preamble_timeout, read_target(&mut stream, config))
        .await
        .map_err(|_| format!("no complete preamble within {:?}", config.preamble_timeout))??;
    let path = config.socket_dir.join(&id);
    tokio::time::timeout(HANDOFF_TIMEOUT, hand_off(&path, stream))
        .await
        .map_err(|_| format!("passing it to `{id}` took over {HANDOFF_TIMEOUT:?}"))?
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                format!("no daemon `{id}` behind the shared port")
            }
            _ => format!("passing it to `{id}` ({}): {e}", path.display()),
        })?;
    Ok(id)
}

/// The target id of a connection: its preamble, or the default id for a
/// TLS ClientHello. Reads nothing past the preamble (the ClientHello is
/// only peeked at).
async fn read_target(stream: &mut TcpStream, config: &SharedPortConfig) -> Result<String, String> {
    let mut first = [0u8; 1];
    let n = stream
        .peek(&mut first)
        .await
        .map_err(|e| format!("reading: {e}"))?;
    if n == 0 {
        return Err("closed before sending anything".into());
    }
    if first[0] == TLS_HANDSHAKE {
        return Ok(config.default_id.clone());
    }
    if first[0] != PREAMBLE_MAGIC[0] {
        return Err(format!(
            "neither a shared-port preamble nor a TLS ClientHello (first byte {:#04x})",
            first[0]
        ));
    }
    let mut head = [0u8; 6];
    stream
        .read_exact(&mut head)
        .await
        .map_err(|e| format!("reading the preamble: {e}"))?;
    if &head[..4] != PREAMBLE_MAGIC {
        return Err("not a shared-port preamble (bad magic)".into());
    }
    if head[4] != PREAMBLE_VERSION {
        return Err(format!(
            "shared-port preamble version {} (this host speaks {PREAMBLE_VERSION})",
            head[4]
        ));
    }
    let len = usize::from(head[5]);
    if len == 0 || len > MAX_ID_LEN {
        return Err(format!(
            "a target id of {len} bytes (1 to {MAX_ID_LEN} allowed)"
        ));
    }
    let mut id = vec![0u8; len];
    stream
        .read_exact(&mut id)
        .await
        .map_err(|e| format!("reading the preamble: {e}"))?;
    match String::from_utf8(id) {
        Ok(id) if valid_id(&id) => Ok(id),
        Ok(id) => Err(format!("`{}` is not a shared-port id", id.escape_debug())),
        Err(_) => Err("the target id is not text".into()),
    }
}

/// Passes `stream` to the daemon listening on the handoff socket `path`.
async fn hand_off(path: &Path, stream: TcpStream) -> std::io::Result<()> {
    let unix = UnixStream::connect(path).await?;
    let tcp = stream.into_std()?;
    send_fd(&unix, tcp.as_fd()).await
    // our copy of the connection closes here; the daemon holds its own
}

async fn send_fd(unix: &UnixStream, fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<()> {
    unix.async_io(Interest::WRITABLE, || {
        let fds = [fd];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(std::io::Error::other("no room for the descriptor"));
        }
        let sent = rustix::net::sendmsg(
            unix,
            &[IoSlice::new(b"F")],
            &mut control,
            SendFlags::NOSIGNAL,
        )?;
        if sent == 1 {
            Ok(())
        } else {
            Err(std::io::Error::other("the handoff message was not sent"))
        }
    })
    .await
}

/// Receives one connection passed by the shared port on `unix` (a
/// connection accepted on a daemon's handoff socket): the TCP stream and
/// the real remote address. The sender must run as this process's user
/// or as root.
pub(crate) async fn receive(unix: UnixStream) -> Result<(TcpStream, SocketAddr), String> {
    let cred = unix
        .peer_cred()
        .map_err(|e| format!("reading the sender's credentials: {e}"))?;
    let me = nix::unistd::geteuid().as_raw();
    if cred.uid() != me && cred.uid() != 0 {
        return Err(format!(
            "a handoff from uid {} (only uid {me} or root may pass connections)",
            cred.uid()
        ));
    }
    let fd = tokio::time::timeout(HANDOFF_TIMEOUT, receive_fd(&unix))
        .await
        .map_err(|_| "no descriptor arrived on the handoff socket".to_string())?
        .map_err(|e| format!("receiving the descriptor: {e}"))?;
    let std_stream = std::net::TcpStream::from(fd);
    let peer = std_stream
        .peer_addr()
        .map_err(|e| format!("the passed descriptor is not a connected TCP socket: {e}"))?;
    std_stream
        .set_nonblocking(true)
        .map_err(|e| format!("setting the connection non-blocking: {e}"))?;
    let stream =
        TcpStream::from_std(std_stream).map_err(|e| format!("registering the connection: {e}"))?;
    Ok((stream, peer))
}

async fn receive_fd(unix: &UnixStream) -> std::io::Result<OwnedFd> {
    unix.async_io(Interest::READABLE, || {
        let mut byte = [0u8; 1];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let msg = rustix::net::recvmsg(
            unix,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )?;
        if msg.bytes == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the sender closed without passing a descriptor",
            ));
        }
        // every descriptor received is owned (and closed unless kept)
        let mut received: Vec<OwnedFd> = Vec::new();
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = message {
                received.extend(fds);
            }
        }
        if received.len() != 1 {
            return Err(std::io::Error::other(format!(
                "{} descriptors passed (one expected)",
                received.len()
            )));
        }
        received
            .pop()
            .ok_or_else(|| std::io::Error::other("no descriptor passed"))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preambles_carry_a_valid_id() {
        assert_eq!(preamble("schedd").unwrap(), b"SKSP\x01\x06schedd".to_vec());
        for bad in ["", ".", "..", "a/b", "a b", &"x".repeat(65), "é"] {
            assert!(preamble(bad).is_err(), "{bad:?}");
        }
        assert!(valid_id(&"x".repeat(64)));
        assert!(valid_id("startd_1.x-y"));
    }
}
