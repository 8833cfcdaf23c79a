//! Raw file bodies: download and upload stream large files both ways with
//! bounded memory, error replies decode, and a broken upload leaves no file.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use serde::{Deserialize, Serialize};
use skua_net::proto::{Ack, RawBytes, RequestBody, Route};
use skua_net::routing::post;
use skua_net::{
    file_response, receive_file, ApiError, AuthLevel, Body, Client, Endpoint, ErrorCode, HeaderMap,
    Json, Listener, NetError, Response, Routes, Server, State,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DOWNLOAD: Route<Want, RawBytes> = Route::new(
    "POST",
    "/file/get",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(skua_net::proto::routes::COMMAND_BODY_LIMIT),
);
// uploads are streamed to their file, never buffered: no size limit
const UPLOAD: Route<RawBytes, Ack> = Route::new(
    "POST",
    "/file/put",
    Some(AuthLevel::Daemon),
    RequestBody::Streamed,
);
const META: &str = "Skua-Transfer";

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Want {
    name: String,
}

#[derive(Clone)]
struct Dir(PathBuf);

async fn get_file(State(dir): State<Dir>, Json(w): Json<Want>) -> Result<Response, ApiError> {
    if w.name.contains('/') {
        return Err(ApiError::bad_request("no slashes"));
    }
    file_response(&dir.0.join(w.name)).await
}

async fn put_file(
    State(dir): State<Dir>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Ack>, ApiError> {
    let meta = headers
        .get(META)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::bad_request("missing header"))?;
    let w: Want = serde_json::from_str(meta).map_err(|e| ApiError::bad_request(e.to_string()))?;
    receive_file(body, &dir.0.join(w.name)).await?;
    Ok(Json(Ack {}))
}

async fn serve(dir: &Path, listener: Listener) -> skua_net::ServerHandle {
    let routes = Routes::new()
        .command(&DOWNLOAD, post(get_file))
        .command(&UPLOAD, post(put_file))
        .with_state(Dir(dir.to_path_buf()));
    Server::new(config(policy()), routes)
        .unwrap()
        .spawn(vec![listener])
}

fn daemon_token() -> Option<String> {
    Some(token("condor@pool.test", &[AuthLevel::Daemon]))
}

/// Writes `len` bytes of a recognizable pattern, 1 MiB at a time.
fn write_pattern(path: &Path, len: u64) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let block: Vec<u8> = (0..1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let mut left = len;
    let mut n = 0u8;
    while left > 0 {
        let take = left.min(block.len() as u64) as usize;
        let mut b = block[..take].to_vec();
        b[0] = n; // every block differs
        n = n.wrapping_add(1);
        f.write_all(&b).unwrap();
        left -= take as u64;
    }
    f.flush().unwrap();
}

fn same_contents(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    let (mut fa, mut fb) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let na = fa.read(&mut ba).unwrap();
        let mut nb = 0;
        while nb < na {
            let k = fb.read(&mut bb[nb..na]).unwrap();
            if k == 0 {
                return false;
            }
            nb += k;
        }
        if na == 0 {
            return fb.read(&mut bb).unwrap() == 0;
        }
        if ba[..na] != bb[..na] {
            return false;
        }
    }
}

/// The process's peak resident set size, KiB.
fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_files_round_trip_both_ways_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    let local = dir.path().join("local");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::create_dir_all(&local).unwrap();
    const LEN: u64 = 300 * 1024 * 1024;
    write_pattern(&served.join("big.bin"), LEN);

    let listener = Listener::tcp("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let srv = serve(&served, listener).await;
    let c = Client::new(Endpoint::Tcp(addr), daemon_token(), Duration::from_secs(10)).unwrap();

    let before = peak_rss_kb();
    // download
    let got = local.join("big.bin");
    let mut f = tokio::fs::File::create(&got).await.unwrap();
    let n = c
        .download(
            &DOWNLOAD,
            &Want {
                name: "big.bin".into(),
            },
            &mut f,
        )
        .await
        .unwrap();
    drop(f);
    assert_eq!(n, LEN);
    assert!(same_contents(&served.join("big.bin"), &got));

    // upload it back under another name
    let src = tokio::fs::File::open(&got).await.unwrap();
    let meta = serde_json::to_string(&Want {
        name: "back.bin".into(),
    })
    .unwrap();
    let _: Ack = c.upload(&UPLOAD, (META, meta), src, LEN).await.unwrap();
    assert!(same_contents(&got, &served.join("back.bin")));
    let leftovers: Vec<_> = std::fs::read_dir(&served)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

    // 600 MB moved; memory grew by far less than one file.
    let grown = peak_rss_kb().saturating_sub(before);
    assert!(grown < 64 * 1024, "peak RSS grew by {grown} KiB");
    srv.shutdown().await;
}

#[tokio::test]
async fn streaming_works_over_unix_sockets_and_tls() {
    let dir = tempfile::tempdir().unwrap();
    write_pattern(&dir.path().join("f"), 3 * 1024 * 1024 + 17);
    let meta = || serde_json::to_string(&Want { name: "g".into() }).unwrap();

    // Unix socket
    let sock = dir.path().join("s.sock");
    let srv = serve(dir.path(), Listener::unix(&sock).await.unwrap()).await;
    let c = Client::new(Endpoint::Unix(sock), daemon_token(), Duration::from_secs(5)).unwrap();
    let mut buf = Vec::new();
    let n = c
        .download(&DOWNLOAD, &Want { name: "f".into() }, &mut buf)
        .await
        .unwrap();
    assert_eq!(n, buf.len() as u64);
    assert_eq!(buf, std::fs::read(dir.path().join("f")).unwrap());
    let len = buf.len() as u64;
    let _: Ack = c
        .upload(&UPLOAD, (META, meta()), std::io::Cursor::new(buf), len)
        .await
        .unwrap();
    assert!(same_contents(&dir.path().join("f"), &dir.path().join("g")));
    srv.shutdown().await;

    // TLS
    let ck = skua_net::tls::self_signed(&["127.0.0.1"]).unwrap();
    let tls = skua_net::tls::server_config(ck.cert_pem.as_bytes(), ck.key_pem.as_bytes()).unwrap();
    let listener = Listener::tls("127.0.0.1:0".parse().unwrap(), tls)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let srv = serve(dir.path(), listener).await;
    let c = Client::new(
        Endpoint::Tls(addr, ck.cert_pem.clone()),
        daemon_token(),
        Duration::from_secs(5),
    )
    .unwrap();
    let mut buf = Vec::new();
    c.download(&DOWNLOAD, &Want { name: "g".into() }, &mut buf)
        .await
        .unwrap();
    assert_eq!(buf, std::fs::read(dir.path().join("f")).unwrap());
    let meta = serde_json::to_string(&Want { name: "h".into() }).unwrap();
    let _: Ack = c
        .upload(&UPLOAD, (META, meta), std::io::Cursor::new(buf), len)
        .await
        .unwrap();
    assert!(same_contents(&dir.path().join("f"), &dir.path().join("h")));
    srv.shutdown().await;
}

#[tokio::test]
async fn error_replies_decode_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let listener = Listener::tcp("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let srv = serve(dir.path(), listener).await;
    let c = Client::new(Endpoint::Tcp(addr), daemon_token(), Duration::from_secs(5)).unwrap();

    let mut buf = Vec::new();
    let err = c
        .download(
            &DOWNLOAD,
            &Want {
                name: "missing".into(),
            },
            &mut buf,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
    assert!(buf.is_empty());

    let err = c
        .download(&DOWNLOAD, &Want { name: "a/b".into() }, &mut buf)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::BadRequest);

    // without a daemon token: refused before any byte moves
    let anon = Client::new(Endpoint::Tcp(addr), None, Duration::from_secs(5)).unwrap();
    let err = anon
        .download(&DOWNLOAD, &Want { name: "x".into() }, &mut buf)
        .await
        .unwrap_err();
    assert!(matches!(err, NetError::Remote { status: 401, .. }), "{err}");

    // an upload the handler refuses
    let err = c
        .upload::<Ack>(
            &UPLOAD,
            ("X-Other", "1".into()),
            std::io::Cursor::new(vec![1u8; 10]),
            10,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::BadRequest);
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    srv.shutdown().await;
}

fn dir_is_empty(p: &Path) -> bool {
    std::fs::read_dir(p).unwrap().next().is_none()
}

#[tokio::test]
async fn a_truncated_upload_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let listener = Listener::tcp("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let srv = serve(dir.path(), listener).await;
    let c = Client::new(Endpoint::Tcp(addr), daemon_token(), Duration::from_secs(5)).unwrap();
    let meta = serde_json::to_string(&Want { name: "t".into() }).unwrap();

    // The source has fewer bytes than announced: the client breaks off.
    let err = c
        .upload::<Ack>(
            &UPLOAD,
            (META, meta.clone()),
            std::io::Cursor::new(vec![7u8; 100_000]),
            200_000,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, NetError::Http { .. } | NetError::Remote { .. }),
        "{err}"
    );

    // A raw peer announces 1 MB, sends half and hangs up.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /file/put HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: 1000000\r\n{META}: {meta}\r\n\r\n",
        daemon_token().unwrap()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(&vec![1u8; 500_000]).await.unwrap();
    s.shutdown().await.unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest).await;
    drop(s);

    // The handler runs to its end in its own task: wait for the cleanup.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !dir_is_empty(dir.path()) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(dir_is_empty(dir.path()), "a partial file was left behind");

    // An existing file is not harmed by a failed upload over it.
    std::fs::write(dir.path().join("t"), b"old").unwrap();
    let _ = c
        .upload::<Ack>(
            &UPLOAD,
            (META, meta),
            std::io::Cursor::new(vec![7u8; 10]),
            20,
        )
        .await
        .unwrap_err();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(std::fs::read(dir.path().join("t")).unwrap(), b"old");
    srv.shutdown().await;
}

#[tokio::test]
async fn raw_bodies_are_not_held_to_the_json_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let listener = Listener::tcp("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let srv = serve(dir.path(), listener).await;
    let c = Client::new(Endpoint::Tcp(addr), daemon_token(), Duration::from_secs(5)).unwrap();
    let len = 20 * 1024 * 1024u64; // over the 16 MiB JSON body limit
    let meta = serde_json::to_string(&Want { name: "z".into() }).unwrap();
    let _: Ack = c
        .upload(&UPLOAD, (META, meta), tokio::io::repeat(3).take(len), len)
        .await
        .unwrap();
    assert_eq!(std::fs::metadata(dir.path().join("z")).unwrap().len(), len);
    srv.shutdown().await;
}
