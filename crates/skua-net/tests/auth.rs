//! Authentication and authorization over loopback TCP.

// Test helpers outside #[test] functions panic on purpose too.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use skua_net::proto::{Ack, TokenClaims, WhoAmI};
use skua_net::{
    issue_token, sign_claims, AuthLevel, AuthMethod, ErrorCode, NetError, SecurityPolicy,
    SigningKey,
};

use AuthLevel::*;

fn code<T: std::fmt::Debug>(r: Result<T, NetError>) -> ErrorCode {
    match r {
        Err(e) => e.code(),
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

fn message<T: std::fmt::Debug>(r: Result<T, NetError>) -> String {
    match r {
        Err(NetError::Remote { body, .. }) => body.message,
        other => panic!("expected a remote error, got {other:?}"),
    }
}

#[tokio::test]
async fn valid_token_succeeds() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let c = client(addr, Some(token("alice@pool.test", &[Write])));
    let seen: Seen = c.get("/read").await.unwrap();
    assert_eq!(seen.identity, "alice@pool.test");
    assert_eq!(seen.levels, vec![Read, Write]);
    assert_eq!(seen.greeting, "hi");
    let back: Echo = c.post("/write", &echo_body("x")).await.unwrap();
    assert_eq!(back, echo_body("x"));
    let me: WhoAmI = c.hello().await.unwrap();
    assert_eq!(me.identity, "alice@pool.test");
    assert_eq!(me.method, AuthMethod::Token);
    assert_eq!(me.levels, vec![Read, Write]);
}

#[tokio::test]
async fn missing_token_is_unauthenticated() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let c = client(addr, None);
    let r = c.get::<Seen>("/read").await;
    assert_eq!(
        code(c.get::<Seen>("/read").await),
        ErrorCode::Unauthenticated
    );
    assert!(message(r).contains("anonymous"));
    assert_eq!(code(c.hello().await), ErrorCode::Unauthenticated);
    assert_eq!(
        code(c.post::<_, Echo>("/write", &echo_body("x")).await),
        ErrorCode::Unauthenticated
    );
}

#[tokio::test]
async fn forged_token_is_unauthenticated() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let other = SigningKey::from_bytes(vec![9u8; 32]).unwrap();
    let forged = issue_token(&other, "admin@pool.test", &[Administrator], None).unwrap();
    let c = client(addr, Some(forged));
    let r = c.get::<Seen>("/read").await;
    let msg = message(r);
    assert!(msg.contains("signature"), "{msg}");
    assert_eq!(code(c.hello().await), ErrorCode::Unauthenticated);
}

#[tokio::test]
async fn expired_token_is_unauthenticated() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let expired = sign_claims(
        &key(),
        &TokenClaims {
            sub: "alice@pool.test".into(),
            iat: 1_000,
            nbf: None,
            exp: Some(2_000),
            scope: vec![Read],
            jti: "old".into(),
        },
    )
    .unwrap();
    let c = client(addr, Some(expired));
    let r = c.get::<Seen>("/read").await;
    assert_eq!(
        r.as_ref().err().map(|e| e.code()),
        Some(ErrorCode::Unauthenticated)
    );
    assert!(message(r).contains("expired"));
}

#[tokio::test]
async fn malformed_tokens_are_unauthenticated() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    for junk in ["abc", "a.b.c", "", "eyJhbGciOiJub25lIn0.e30.", "...."] {
        let c = client(addr, Some(junk.to_string()));
        assert_eq!(
            code(c.get::<Seen>("/read").await),
            ErrorCode::Unauthenticated,
            "{junk:?}"
        );
    }
}

#[tokio::test]
async fn server_without_key_refuses_tokens() {
    let mut cfg = config(policy());
    cfg.signing_key = None;
    let (_srv, addr) = tcp_server(cfg).await;
    let c = client(addr, Some(token("alice@pool.test", &[Read])));
    let msg = message(c.get::<Seen>("/read").await);
    assert!(msg.contains("accepts no tokens"), "{msg}");
}

#[tokio::test]
async fn token_scope_must_cover_the_level() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    // alice may write by policy, but this token is for reading only
    let c = client(addr, Some(token("alice@pool.test", &[Read])));
    let _: Seen = c.get("/read").await.unwrap();
    let r = c.post::<_, Echo>("/write", &echo_body("x")).await;
    assert_eq!(
        r.as_ref().err().map(|e| e.code()),
        Some(ErrorCode::PermissionDenied)
    );
    assert!(message(r).contains("scope"));
    assert_eq!(c.hello().await.unwrap().levels, vec![Read]);
    // an empty scope is good for nothing but hello
    let c = client(addr, Some(token("alice@pool.test", &[])));
    assert_eq!(
        code(c.get::<Seen>("/read").await),
        ErrorCode::PermissionDenied
    );
    assert_eq!(c.hello().await.unwrap().levels, Vec::<AuthLevel>::new());
    // an ADMINISTRATOR token also writes and reads (implication), but the
    // policy still decides: alice is no administrator
    let c = client(addr, Some(token("alice@pool.test", &[Administrator])));
    let _: Echo = c.post("/write", &echo_body("x")).await.unwrap();
    assert_eq!(
        code(c.post::<_, Echo>("/admin", &echo_body("x")).await),
        ErrorCode::PermissionDenied
    );
}

#[tokio::test]
async fn allow_lists_are_honoured_with_implications() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let all = AuthLevel::ALL;
    // identity -> levels it should hold under `policy()`
    let table: &[(&str, &[AuthLevel])] = &[
        ("alice@pool.test", &[Read, Write]),
        ("admin@pool.test", &[Read, Write, Administrator]),
        ("condor@elsewhere", &[Read, Write, Daemon]),
        ("neg@central", &[Read, Negotiator]),
        ("mallory@pool.test", &[Read]),
        ("stranger@elsewhere", &[Read]),
    ];
    for (who, expected) in table {
        let c = client(addr, Some(token(who, &all)));
        let me = c.hello().await.unwrap();
        assert_eq!(&me.levels, expected, "{who}");
        let r = c.get::<Seen>("/read").await;
        assert_eq!(r.is_ok(), expected.contains(&Read), "{who} read");
        for (path, level) in [
            ("/write", Write),
            ("/admin", Administrator),
            ("/daemon", Daemon),
            ("/negotiator", Negotiator),
        ] {
            let r = c.post::<_, Echo>(path, &echo_body(who)).await;
            if expected.contains(&level) {
                assert_eq!(r.unwrap(), echo_body(who), "{who} {path}");
            } else {
                assert_eq!(code(r), ErrorCode::PermissionDenied, "{who} {path}");
            }
        }
    }
    let c = client(addr, Some(token("mallory@pool.test", &all)));
    let msg = message(c.post::<_, Echo>("/write", &echo_body("x")).await);
    assert!(msg.contains("DENY_WRITE"), "{msg}");
}

#[tokio::test]
async fn anonymous_reads_only_when_the_policy_says_so() {
    let (_srv, addr) = tcp_server(config(policy().with_anonymous_read(true))).await;
    let c = client(addr, None);
    let seen: Seen = c.get("/read").await.unwrap();
    assert_eq!(seen.identity, "unauthenticated@unmapped");
    let me = c.hello().await.unwrap();
    assert_eq!(me.method, AuthMethod::Anonymous);
    assert_eq!(me.levels, vec![Read]);
    assert_eq!(
        code(c.post::<_, Echo>("/write", &echo_body("x")).await),
        ErrorCode::Unauthenticated
    );

    // anonymous reads need `*` in ALLOW_READ, not just the flag
    let strict = SecurityPolicy::default()
        .allowing(Read, ["*@pool.test"])
        .with_anonymous_read(true);
    let (_srv2, addr2) = tcp_server(config(strict)).await;
    let c = client(addr2, None);
    assert_eq!(
        code(c.get::<Seen>("/read").await),
        ErrorCode::Unauthenticated
    );
}

#[tokio::test]
async fn invalid_policy_is_refused_at_startup() {
    let bad = SecurityPolicy::default().denying(Read, ["alice@pool/ho*st"]);
    let err = skua_net::Server::new(config(bad), routes()).err().unwrap();
    assert!(err.to_string().contains("DENY_READ"), "{err}");
}

#[tokio::test]
async fn unknown_path_and_wrong_method() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let c = client(addr, Some(token("alice@pool.test", &[Write])));
    assert_eq!(code(c.get::<Ack>("/nowhere").await), ErrorCode::NotFound);
    assert_eq!(code(c.get::<Echo>("/write").await), ErrorCode::BadRequest);
}

#[tokio::test]
async fn bad_body_is_bad_request() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let c = client(addr, Some(token("alice@pool.test", &[Write])));
    let r = c.post::<_, Echo>("/write", "not an echo").await;
    assert_eq!(
        r.as_ref().err().map(|e| e.code()),
        Some(ErrorCode::BadRequest)
    );
    assert!(message(r).contains("invalid request body"));
    let r = c
        .call::<(), Echo>(skua_net::Method::POST, "/write", None)
        .await;
    assert_eq!(code(r), ErrorCode::BadRequest);
}

#[tokio::test]
async fn token_issued_in_the_future_is_refused() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = |iat: u64, nbf: Option<u64>| TokenClaims {
        sub: "alice@pool.test".into(),
        iat,
        nbf,
        exp: None,
        scope: vec![Read, Write],
        jti: "future".into(),
    };
    for (c, claim) in [
        (claims(now + 3600, None), "iat"),
        (claims(now, Some(now + 3600)), "nbf"),
    ] {
        let t = sign_claims(&key(), &c).unwrap();
        let r = client(addr, Some(t))
            .post::<_, Echo>("/write", &echo_body("x"))
            .await;
        let m = message(r);
        assert!(
            m.contains("not valid yet") && m.contains(claim),
            "{claim}: {m}"
        );
    }
    // a token issued a moment ago on a host whose clock is slightly ahead
    let t = sign_claims(&key(), &claims(now + 2, None)).unwrap();
    let _: Echo = client(addr, Some(t))
        .post("/write", &echo_body("x"))
        .await
        .unwrap();
}

#[tokio::test]
async fn token_without_expiry_works() {
    let (_srv, addr) = tcp_server(config(policy())).await;
    let t = issue_token(&key(), "condor@pool.test", &[Daemon], None).unwrap();
    let c = client(addr, Some(t));
    let _: Echo = c.post("/daemon", &echo_body("x")).await.unwrap();
}
