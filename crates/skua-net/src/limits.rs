//! What bounds a server's memory: request bodies read against their
//! route's limit (never preallocated from `Content-Length`), and
//! admission: at most so many requests at once per peer and in all, the
//! rest waiting briefly in a bounded line or refused with `Unavailable`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use http::header::CONTENT_LENGTH;
use http::HeaderMap;
use http_body_util::BodyExt;
use skua_proto::ErrorCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::ApiError;

/// The most bytes reserved up front for a request body, whatever its
/// `Content-Length` says; the buffer grows as bytes actually arrive.
const INITIAL_BODY_CAPACITY: usize = 64 * 1024;

/// A refused request's body is read and thrown away, up to this many
/// bytes, before the refusal is sent: a server that answers and closes
/// while the client is still sending makes the client see a broken
/// connection rather than the refusal.
const DRAIN_MAX: u64 = 64 * 1024 * 1024;
/// How long a refused request's body is drained at most.
const DRAIN_TIME: Duration = Duration::from_secs(5);

/// Reads and discards what is left of a refused request's body (at most
/// [`DRAIN_MAX`] bytes for [`DRAIN_TIME`]; a body announced longer is left
/// unread). Holds no more than one frame at a time.
pub(crate) async fn drain<B>(headers: &HeaderMap, body: B)
where
    B: http_body::Body + Unpin,
{
    if declared_length(headers).is_some_and(|n| n > DRAIN_MAX) {
        return;
    }
    let mut body = body;
    let mut seen = 0u64;
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                seen += bytes::Buf::remaining(data) as u64;
                if seen > DRAIN_MAX {
                    break;
                }
            }
        }
    })
    .await;
}

/// The body limit of the route a request reached (a request extension).
#[derive(Clone, Debug)]
pub(crate) struct BodyLimit {
    /// The route's path, for the error message.
    pub route: Arc<str>,
    /// The most bytes its body may have.
    pub max: usize,
}

impl BodyLimit {
    /// The refusal, with the body's length when it was announced.
    pub(crate) fn too_large(&self, declared: Option<u64>) -> ApiError {
        let what = declared
            .map(|n| format!(" of {n} bytes"))
            .unwrap_or_default();
        ApiError::new(
            ErrorCode::TooLarge,
            format!(
                "request body{what} exceeds the limit of {} for {}",
                show_bytes(self.max),
                self.route
            ),
        )
    }

    /// Refuses a request whose declared `Content-Length` is over the
    /// limit, before any of its body is read.
    pub(crate) fn check_declared(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        match declared_length(headers) {
            Some(n) if n > self.max as u64 => Err(self.too_large(Some(n))),
            _ => Ok(()),
        }
    }
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// `n` bytes for people: `1 MiB`, `64 KiB`, `1000 bytes`.
pub(crate) fn show_bytes(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// Reads a whole request body, at most `limit.max` bytes. Memory grows
/// with the bytes received, not with what `Content-Length` announces.
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: &BodyLimit,
) -> Result<Bytes, ApiError> {
    limit.check_declared(headers)?;
    let declared = declared_length(headers).unwrap_or(0);
    let initial = usize::try_from(declared)
        .unwrap_or(usize::MAX)
        .min(INITIAL_BODY_CAPACITY);
    let mut buf = Vec::with_capacity(initial);
    let mut body = body;
    while let Some(frame) = BodyExt::frame(&mut body).await {
        let frame = frame.map_err(|e| {
            ApiError::bad_request(format!(
                "cannot read request body after {} bytes: {e}",
                buf.len()
            ))
        })?;
        if let Ok(data) = frame.into_data() {
            if buf.len().saturating_add(data.len()) > limit.max {
                drop(buf);
                drain(headers, body).await;
                return Err(limit.too_large(None));
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(buf))
}

/// How many requests a server serves at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConcurrencyLimits {
    /// At most this many requests at once in all (every caller, the
    /// pool's own daemons included); 0: no limit.
    pub total: usize,
    /// At most this many requests at once from one peer (one identity
    /// from one host; a local user by uid); callers holding DAEMON are
    /// not limited per peer. 0: no limit.
    pub per_peer: usize,
    /// How long a request over a limit waits for a turn before it is
    /// refused with `Unavailable`. At most [`WAITING_PER_TURN`] times as
    /// many requests wait as the limit lets run; any more are refused at
    /// once.
    pub wait: Duration,
}

impl Default for ConcurrencyLimits {
    /// 256 in all, 16 per peer, 2 s of waiting.
    fn default() -> Self {
        ConcurrencyLimits {
            total: 256,
            per_peer: 16,
            wait: Duration::from_secs(2),
        }
    }
}

/// How many requests may wait for each one a limit lets run. A waiting
/// request holds only its connection and headers (its body is read once
/// it has its turn).
pub const WAITING_PER_TURN: usize = 4;

/// One bounded line: a semaphore and the count of those waiting on it.
struct Gate {
    sem: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_waiting: usize,
}

impl Gate {
    fn new(max: usize) -> Self {
        Gate {
            sem: Arc::new(Semaphore::new(max)),
            waiting: AtomicUsize::new(0),
            max_waiting: max.saturating_mul(WAITING_PER_TURN),
        }
    }

    /// A turn, at once, after a wait of at most `wait`, or `None`.
    async fn enter(&self, wait: Duration) -> Option<OwnedSemaphorePermit> {
        if let Ok(p) = self.sem.clone().try_acquire_owned() {
            return Some(p);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let got = tokio::time::timeout(wait, self.sem.clone().acquire_owned()).await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        got.ok().and_then(Result::ok)
    }
}

/// Admission control for one server.
pub(crate) struct Admission {
    limits: ConcurrencyLimits,
    total: Option<Gate>,
    peers: Mutex<HashMap<String, Arc<Gate>>>,
}

/// A request's turn; dropping it (when its reply has been sent) lets the
/// next one in.
pub(crate) struct Admitted {
    _total: Option<OwnedSemaphorePermit>,
    peer: Option<(OwnedSemaphorePermit, Arc<Gate>, String, Arc<Admission>)>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if let Some((permit, gate, key, admission)) = self.peer.take() {
            drop(permit);
            let mut peers = admission.lock_peers();
            // The map holds one reference and this turn another: nobody
            // else runs or waits for this peer, so forget it.
            if Arc::strong_count(&gate) == 2 && gate.waiting.load(Ordering::Acquire) == 0 {
                peers.remove(&key);
            }
        }
    }
}

impl Admission {
    pub(crate) fn new(limits: ConcurrencyLimits) -> Arc<Self> {
        Arc::new(Admission {
            limits,
            total: (limits.total > 0).then(|| Gate::new(limits.total)),
            peers: Mutex::new(HashMap::new()),
        })
    }

    fn lock_peers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Gate>>> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits a request from `peer` (`None`: not limited per peer), or
    /// refuses it with `Unavailable`.
    pub(crate) async fn admit(self: &Arc<Self>, peer: Option<&str>) -> Result<Admitted, ApiError> {
        let wait = self.limits.wait;
        let mut admitted = Admitted {
            _total: None,
            peer: None,
        };
        if let Some(key) = peer.filter(|_| self.limits.per_peer > 0) {
            let gate = self
                .lock_peers()
                .entry(key.to_string())
                .or_insert_with(|| Arc::new(Gate::new(self.limits.per_peer)))
                .clone();
            match gate.enter(wait).await {
                Some(permit) => {
                    admitted.peer = Some((permit, gate, key.to_string(), self.clone()));
                }
                None => {
                    // let the entry go if nobody else uses it
                    let mut peers = self.lock_peers();
                    if Arc::strong_count(&gate) == 2 && gate.waiting.load(Ordering::Acquire) == 0 {
                        peers.remove(key);
                    }
                    return Err(ApiError::unavailable(format!(
                        "too many concurrent requests from {key}: at most {} are served at once \
                         per peer (MAX_CONCURRENT_REQUESTS_PER_PEER); retry later",
                        self.limits.per_peer
                    )));
                }
            }
        }
        if let Some(total) = &self.total {
            match total.enter(wait).await {
                Some(permit) => admitted._total = Some(permit),
                None => {
                    return Err(ApiError::unavailable(format!(
                        "the server is busy: at most {} requests are served at once \
                         (MAX_CONCURRENT_REQUESTS); retry later",
                        self.limits.total
                    )))
                }
            }
        }
        Ok(admitted)
    }
}

/// A reply body that holds its request's turn until it has been sent
/// (or dropped), so streamed replies count against the limits too.
pub(crate) struct AdmittedBody {
    pub inner: Body,
    pub _turn: Admitted,
}

impl http_body::Body for AdmittedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_shown_for_people() {
        assert_eq!(show_bytes(1024 * 1024), "1 MiB");
        assert_eq!(show_bytes(64 * 1024), "64 KiB");
        assert_eq!(show_bytes(1000), "1000 bytes");
    }

    #[tokio::test]
    async fn waiting_line_is_bounded_and_entries_are_forgotten() {
        let a = Admission::new(ConcurrencyLimits {
            total: 0,
            per_peer: 1,
            wait: Duration::from_millis(600),
        });
        let first = a.admit(Some("p")).await.unwrap();
        // over the limit: waits, then is refused
        let e = a.admit(Some("p")).await.err().unwrap();
        assert_eq!(e.0.code, ErrorCode::Unavailable);
        assert!(e.0.message.contains("from p"), "{}", e.0.message);
        // the line is bounded: with it full, one more is refused at once
        let waiters: Vec<_> = (0..WAITING_PER_TURN)
            .map(|_| {
                let a = a.clone();
                tokio::spawn(async move { a.admit(Some("p")).await.is_ok() })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let started = tokio::time::Instant::now();
        assert!(a.admit(Some("p")).await.is_err());
        assert!(
            started.elapsed() < Duration::from_millis(300),
            "refused at once"
        );
        for w in waiters {
            assert!(!w.await.unwrap());
        }
        // another peer is served meanwhile
        let other = a.admit(Some("q")).await.unwrap();
        drop(other);
        drop(first);
        assert!(a.lock_peers().is_empty());
        // a waiter gets the turn when it is released
        let first = a.admit(Some("p")).await.unwrap();
        let a2 = a.clone();
        let waiter = tokio::spawn(async move { a2.admit(Some("p")).await.is_ok() });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(first);
        assert!(waiter.await.unwrap());
        assert!(a.lock_peers().is_empty());
    }
}
