//! Malformed tokens, headers and bodies never panic and never get anything
//! but a 4xx answer.

// Test helpers outside #[test] functions panic on purpose too.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use skua_net::proto::ErrorBody;
use skua_net::{verify_token, AuthLevel, ErrorCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn jwt_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_-]{0,60}\\.[A-Za-z0-9_-]{0,60}\\.[A-Za-z0-9_-]{0,60}",
        "[ -~]{0,120}",
        // a real header and claims with a random signature
        "[A-Za-z0-9_-]{0,43}".prop_map(|sig| format!(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhQGIiLCJpYXQiOjEsImp0aSI6IngifQ.{sig}"
        )),
    ]
}

proptest! {
    #[test]
    fn verify_never_panics(token in jwt_like()) {
        let _ = verify_token(&key(), &token);
    }

    #[test]
    fn altered_tokens_do_not_verify(pos in 0usize..400, replacement in "[A-Za-z0-9_.-]") {
        let good = token("alice@pool.test", &[AuthLevel::Read]);
        let pos = pos % good.len();
        let mut altered = good.clone();
        altered.replace_range(pos..pos + 1, &replacement);
        if let Ok(claims) = verify_token(&key(), &altered) {
            prop_assert_eq!(altered, good, "altered token verified as {:?}", claims);
        }
    }
}

async fn raw(addr: std::net::SocketAddr, auth: Option<&str>, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "POST /write HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(a) = auth {
        head.push_str(&format!("Authorization: {a}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .expect("server answers")
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body_start = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| p + 4)
        .unwrap_or(out.len());
    (status, out[body_start..].to_vec())
}

#[test]
fn server_answers_garbage_with_4xx() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (srv, addr) = rt.block_on(tcp_server(config(policy())));
    let valid = format!("Bearer {}", token("alice@pool.test", &[AuthLevel::Write]));
    let mut runner = TestRunner::new(Config {
        cases: 96,
        ..Config::default()
    });
    let strategy = (
        prop_oneof![
            Just(None),
            Just(Some(valid.clone())),
            "[ -~]{0,100}".prop_map(Some),
            jwt_like().prop_map(|t| Some(format!("Bearer {t}"))),
        ],
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..200),
            r#"[{}\[\]":,a-z0-9 ]{0,60}"#.prop_map(String::into_bytes),
            Just(br#"{"text":"ok"}"#.to_vec()),
        ],
    );
    runner
        .run(&strategy, |(auth, body)| {
            let (status, reply) = rt.block_on(raw(addr, auth.as_deref(), &body));
            prop_assert!((200..500).contains(&status), "status {}", status);
            if status >= 400 {
                let e: ErrorBody = serde_json::from_slice(&reply)
                    .map_err(|e| TestCaseError::fail(format!("error body: {e}")))?;
                prop_assert_eq!(e.code.http_status(), status);
                if auth.as_deref() != Some(valid.as_str()) {
                    prop_assert_eq!(e.code, ErrorCode::Unauthenticated);
                }
            } else {
                prop_assert_eq!(auth.as_deref(), Some(valid.as_str()));
                prop_assert_eq!(body.as_slice(), &br#"{"text":"ok"}"#[..]);
            }
            Ok(())
        })
        .unwrap();
    rt.block_on(srv.shutdown());
}
