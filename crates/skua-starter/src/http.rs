//! The built-in plugin's `http` transfers (hyper, HTTP/1.1): GET into a
//! file, PUT from a file; both streamed, never held in memory.

use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::BodyExt;
use hyper::body::{Bytes, Frame};
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};

/// Bytes read from the file per body frame.
const CHUNK: usize = 64 * 1024;

/// A request body read from a file, one chunk per frame.
struct FileBody {
    file: tokio::fs::File,
    remaining: u64,
}

impl hyper::body::Body for FileBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        let want = CHUNK.min(usize::try_from(self.remaining).unwrap_or(CHUNK));
        let mut buf = vec![0u8; want];
        let mut rb = ReadBuf::new(&mut buf);
        match Pin::new(&mut self.file).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                if n == 0 {
                    return Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the file shrank while it was sent",
                    ))));
                }
                self.remaining -= n as u64;
                buf.truncate(n);
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))))
            }
        }
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.remaining)
    }
}

/// Either body the client sends.
type AnyBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// GET `url` into `local` (download) or PUT `local` to `url` (upload).
/// Returns the bytes moved.
pub async fn transfer(url: &str, local: &Path, upload: bool) -> Result<u64, String> {
    let uri: hyper::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let host = uri
        .host()
        .ok_or_else(|| format!("{url}: no host"))?
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_else(|| host.clone());
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let stream = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("{url}: cannot connect to {host}:{port}: {e}"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake::<_, AnyBody>(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("{url}: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let builder = hyper::Request::builder()
        .uri(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::USER_AGENT, "skua-transfer-plugin");
    let request = if upload {
        let file = tokio::fs::File::open(local)
            .await
            .map_err(|e| format!("cannot open {}: {e}", local.display()))?;
        let len = file
            .metadata()
            .await
            .map_err(|e| format!("cannot inspect {}: {e}", local.display()))?
            .len();
        builder
            .method(hyper::Method::PUT)
            .header(hyper::header::CONTENT_LENGTH, len)
            .body(
                FileBody {
                    file,
                    remaining: len,
                }
                .boxed(),
            )
    } else {
        builder.method(hyper::Method::GET).body(
            http_body_util::Empty::<Bytes>::new()
                .map_err(|never| match never {})
                .boxed(),
        )
    }
    .map_err(|e| format!("{url}: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url}: the server answered {status}"));
    }
    if upload {
        return Ok(std::fs::metadata(local).map(|m| m.len()).unwrap_or(0));
    }
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(local)
        .await
        .map_err(|e| format!("cannot create {}: {e}", local.display()))?;
    let mut body = response.into_body();
    let mut n = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("{url}: {e}"))?;
        if let Ok(data) = frame.into_data() {
            file.write_all(&data)
                .await
                .map_err(|e| format!("writing {}: {e}", local.display()))?;
            n += data.len() as u64;
        }
    }
    file.sync_all()
        .await
        .map_err(|e| format!("writing {}: {e}", local.display()))?;
    Ok(n)
}
