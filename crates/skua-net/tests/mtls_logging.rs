//! The server's log names who it refused and why (a test binary of its
//! own: a thread-local log subscriber).

// Test helpers outside #[test] functions panic on purpose too.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::pool::*;
use skua_net::pki::PoolCa;
use skua_net::ErrorCode;

#[derive(Clone, Default)]
struct LogBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

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
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The log once it holds `needle` (the server may log just after the
    /// client saw the refusal), or as it is after a while.
    async fn text_with(&self, needle: &str) -> String {
        for _ in 0..200 {
            if self.text().contains(needle) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.text()
    }
}

// current-thread runtime: every task runs on this thread, under the
// thread-local subscriber
#[tokio::test(flavor = "current_thread")]
async fn the_server_logs_who_it_refused_and_why() {
    let buf = LogBuffer::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let p = pool(policy()).await;
    let other = PoolCa::generate("test pool").unwrap();
    let (foreign, _) = p.host_client(&other, "intruder.example");
    assert!(foreign.get::<Who>("/who").await.is_err());
    let log = buf.text_with("tls handshake failed").await;
    assert!(log.contains("tls handshake failed"), "{log}");
    assert!(log.contains("we refused the client's certificate"), "{log}");
    assert!(log.contains("peer=127.0.0.1:"), "{log}");

    let (c, id) = p.host_client(&p.ca, "exec1.example");
    p.revocations.insert(&id);
    let e = c.get::<Who>("/who").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::PermissionDenied, "{e}");
    let log = buf.text_with("refused a revoked").await;
    assert!(log.contains("refused a revoked host certificate"), "{log}");
    assert!(log.contains(&format!("credential_id={id}")), "{log}");
    assert!(
        log.contains("host=\"exec1.example\"") || log.contains("host=exec1.example"),
        "{log}"
    );
    p.server.shutdown().await;
}
