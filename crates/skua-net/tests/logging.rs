//! Refusals are logged through `tracing`.

// Test helpers outside #[test] functions panic on purpose too.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use skua_net::{issue_token, AuthLevel, SigningKey};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

// current-thread runtime: every task runs on this thread, under the
// thread-local subscriber
#[tokio::test(flavor = "current_thread")]
async fn refusals_are_logged() {
    let buf = Buffer::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let (_srv, addr) = tcp_server(config(policy())).await;
    let other = SigningKey::from_bytes(vec![1u8; 32]).unwrap();
    let forged = issue_token(&other, "alice@pool.test", &[AuthLevel::Read], None).unwrap();
    assert!(client(addr, Some(forged)).hello().await.is_err());
    let log = buf.text();
    assert!(log.contains("authentication failed"), "{log}");
    assert!(log.contains("signature"), "{log}");

    let c = client(addr, Some(token("alice@pool.test", &[AuthLevel::Read])));
    assert!(c.post::<_, Echo>("/write", &echo_body("x")).await.is_err());
    let log = buf.text();
    assert!(log.contains("request refused"), "{log}");
    assert!(log.contains("alice@pool.test"), "{log}");
    assert!(log.contains("permission_denied"), "{log}");
}
