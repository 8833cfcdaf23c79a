//! Raw file bodies: streaming bytes between an `AsyncRead`/`AsyncWrite`
//! and an HTTP body chunk by chunk, never the whole body in memory.
//!
//! Server side: [`file_response`] answers with a file's bytes;
//! [`receive_file`] stores a request body in a file atomically. The client
//! side is [`crate::Client::download`] and [`crate::Client::upload`].

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};

use crate::ApiError;

/// The content type of raw file bodies.
pub const OCTET_STREAM: &str = "application/octet-stream";

/// Bytes read from the source per body frame.
const CHUNK: usize = 64 * 1024;

/// How long [`receive_file`] waits for the next chunk of a body before it
/// gives up (the transfer is idle, not slow).
pub const RECEIVE_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// An HTTP body reading `len` bytes from an `AsyncRead`, one chunk per
/// frame. A source that ends early, or has more bytes than `len`, fails
/// the body (the peer sees a broken transfer, never a short file).
pub(crate) struct ReaderBody<R> {
    reader: R,
    remaining: u64,
    /// Bytes handed to the connection so far (for idle detection).
    progress: Arc<AtomicU64>,
}

impl<R> ReaderBody<R> {
    pub(crate) fn new(reader: R, len: u64) -> Self {
        ReaderBody {
            reader,
            remaining: len,
            progress: Arc::new(AtomicU64::new(0)),
        }
    }

    pub(crate) fn progress(&self) -> Arc<AtomicU64> {
        self.progress.clone()
    }
}

impl<R: AsyncRead + Unpin> http_body::Body for ReaderBody<R> {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if this.remaining == 0 {
            return Poll::Ready(None);
        }
        let want = usize::try_from(this.remaining).unwrap_or(CHUNK).min(CHUNK);
        let mut buf = BytesMut::zeroed(want);
        let mut rb = ReadBuf::new(&mut buf);
        match Pin::new(&mut this.reader).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                if n == 0 {
                    return Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the source ended {} bytes short", this.remaining),
                    ))));
                }
                buf.truncate(n);
                this.remaining -= n as u64;
                this.progress.fetch_add(n as u64, Ordering::Relaxed);
                Poll::Ready(Some(Ok(Frame::data(buf.freeze()))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// A `200 application/octet-stream` response streaming the file at
/// `path`, with its `Content-Length`. A missing file is `NotFound`; any
/// other failure to open it is `Internal`.
pub async fn file_response(path: &Path) -> Result<Response, ApiError> {
    let file = tokio::fs::File::open(path).await.map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            ApiError::not_found(format!("no file {}", path.display()))
        } else {
            ApiError::internal(format!("cannot open {}: {e}", path.display()))
        }
    })?;
    open_file_response(file, path).await
}

/// A `200 application/octet-stream` response streaming `file`, already
/// open (by whoever had the right to open it), with its `Content-Length`.
/// `path` names it in errors; anything but a regular file is refused.
pub async fn open_file_response(file: tokio::fs::File, path: &Path) -> Result<Response, ApiError> {
    let meta = file
        .metadata()
        .await
        .map_err(|e| ApiError::internal(format!("cannot inspect {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(ApiError::bad_request(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let len = meta.len();
    let mut resp = Response::new(Body::new(ReaderBody::new(file, len)));
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(OCTET_STREAM));
    h.insert(CONTENT_LENGTH, HeaderValue::from(len));
    Ok(resp)
}

/// Streams a request body into `dest`: into a temporary file beside it,
/// then fsync and rename over `dest`. On any error (the body breaks off,
/// the disk fails, the body stalls for [`RECEIVE_IDLE_TIMEOUT`]) the
/// temporary file is removed and `dest` is left as it was. Returns the
/// number of bytes stored.
pub async fn receive_file(body: Body, dest: &Path) -> Result<u64, ApiError> {
    receive_file_with_timeout(body, dest, RECEIVE_IDLE_TIMEOUT).await
}

/// [`receive_file`] with another idle timeout.
pub async fn receive_file_with_timeout(
    body: Body,
    dest: &Path,
    idle: Duration,
) -> Result<u64, ApiError> {
    let tmp = temp_path(dest)?;
    let result = write_body(body, &tmp, dest, idle).await;
    if result.is_err() {
        let _ = tokio::fs::remove_file(&tmp).await;
    }
    result
}

fn temp_path(dest: &Path) -> Result<PathBuf, ApiError> {
    let name = dest
        .file_name()
        .ok_or_else(|| ApiError::bad_request(format!("{} names no file", dest.display())))?;
    let mut rand = [0u8; 8];
    getrandom::fill(&mut rand)
        .map_err(|e| ApiError::internal(format!("no random bytes for a temporary name: {e}")))?;
    let suffix: String = rand.iter().map(|b| format!("{b:02x}")).collect();
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".part-{suffix}"));
    Ok(dest.with_file_name(tmp_name))
}

async fn write_body(body: Body, tmp: &Path, dest: &Path, idle: Duration) -> Result<u64, ApiError> {
    let io_err = |what: &str, p: &Path, e: io::Error| {
        ApiError::internal(format!("{what} {}: {e}", p.display()))
    };
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .await
        .map_err(|e| io_err("cannot create", tmp, e))?;
    let total = receive_into(body, &mut file, dest, idle).await?;
    drop(file);
    tokio::fs::rename(tmp, dest)
        .await
        .map_err(|e| io_err("cannot rename into", dest, e))?;
    Ok(total)
}

/// Streams a request body into `file`, already open for writing (by
/// whoever had the right to create it), then flushes and syncs it.
/// `dest` names the file in errors. A body that breaks off or stalls for
/// `idle` is an error; the caller removes what was written.
pub async fn receive_into(
    body: Body,
    file: &mut tokio::fs::File,
    dest: &Path,
    idle: Duration,
) -> Result<u64, ApiError> {
    let total = receive_unsynced(body, file, dest, idle).await?;
    file.sync_all()
        .await
        .map_err(|e| ApiError::internal(format!("cannot sync {}: {e}", dest.display())))?;
    Ok(total)
}

/// [`receive_into`] without the final `fsync`: for a caller that makes
/// the file durable later itself (the checkpoint store syncs a whole
/// checkpoint once, after its reply).
pub async fn receive_unsynced(
    mut body: Body,
    file: &mut tokio::fs::File,
    dest: &Path,
    idle: Duration,
) -> Result<u64, ApiError> {
    let io_err = |what: &str, p: &Path, e: io::Error| {
        ApiError::internal(format!("{what} {}: {e}", p.display()))
    };
    let tmp = dest;
    let mut total = 0u64;
    loop {
        let frame = match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => {
                return Err(ApiError::new(
                    skua_proto::ErrorCode::Timeout,
                    format!("no data for {idle:?} while receiving {}", dest.display()),
                ))
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::bad_request(format!(
                    "the body broke off after {total} bytes: {e}"
                )))
            }
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            file.write_all(&data)
                .await
                .map_err(|e| io_err("cannot write", tmp, e))?;
            total += data.len() as u64;
        }
    }
    file.flush()
        .await
        .map_err(|e| io_err("cannot write", tmp, e))?;
    Ok(total)
}

/// Bytes of serialized items gathered before they are handed to the
/// connection as one frame.
const JSON_CHUNK: usize = 64 * 1024;

/// A `200 application/json` response `{"<field>": [item, item, ...]}`
/// whose items are serialized one by one as the connection takes them:
/// the reply is never held whole in memory, only about 64 KiB of it at a
/// time (plus whatever `items` itself holds). The text is what
/// serializing a struct with one `Vec` field `field` would give, so
/// clients decode it as that struct. An item that fails to serialize
/// breaks the transfer (the client sees an incomplete reply, never a
/// wrong one).
pub fn json_array_response<I>(field: &str, items: I) -> Response
where
    I: Iterator + Send + Unpin + 'static,
    I::Item: serde::Serialize,
{
    let mut head = Vec::with_capacity(field.len() + 8);
    head.push(b'{');
    // a field name is a JSON string like any other
    let _ = serde_json::to_writer(&mut head, field);
    head.extend_from_slice(b":[");
    let body = JsonArrayBody {
        items,
        buf: head,
        first: true,
        done: false,
    };
    let mut resp = Response::new(Body::new(body));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

struct JsonArrayBody<I> {
    items: I,
    buf: Vec<u8>,
    first: bool,
    done: bool,
}

impl<I> http_body::Body for JsonArrayBody<I>
where
    I: Iterator + Unpin,
    I::Item: serde::Serialize,
{
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        while this.buf.len() < JSON_CHUNK {
            match this.items.next() {
                Some(item) => {
                    if !this.first {
                        this.buf.push(b',');
                    }
                    this.first = false;
                    if let Err(e) = serde_json::to_writer(&mut this.buf, &item) {
                        this.done = true;
                        return Poll::Ready(Some(Err(io::Error::other(format!(
                            "cannot encode reply: {e}"
                        )))));
                    }
                }
                None => {
                    this.buf.extend_from_slice(b"]}");
                    this.done = true;
                    break;
                }
            }
        }
        let chunk = std::mem::take(&mut this.buf);
        if !this.done {
            this.buf.reserve(JSON_CHUNK);
        }
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}
