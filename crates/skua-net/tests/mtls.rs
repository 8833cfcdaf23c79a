//! Mutual TLS with the pool's CA: client certificates make daemons
//! `condor@HOST`, revoked or foreign certificates are refused, a caller
//! without one is anonymous.

// Test helpers outside #[test] functions panic on purpose too.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use common::pool::*;
use skua_net::pki::{self, PoolCa};
use skua_net::{
    issue_token, AuthLevel, AuthMethod, Client, ClientIdentity, Endpoint, ErrorCode, NetError,
};

#[tokio::test]
async fn a_host_certificate_from_the_pool_ca_makes_a_daemon_of_that_host() {
    let p = pool(policy()).await;
    let (c, id) = p.host_client(&p.ca, "exec1.example");
    let me: Who = c.get("/who").await.unwrap();
    assert_eq!(me.identity, "condor@exec1.example");
    assert_eq!(me.method, AuthMethod::Ssl);
    assert!(me.levels.contains(&AuthLevel::Daemon), "{:?}", me.levels);
    assert_eq!(me.credential_id.as_deref(), Some(id.as_str()));
    assert_eq!(me.peer_ip, Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    let v: u32 = c.post("/daemon", &7u32).await.unwrap();
    assert_eq!(v, 7);
    let hello = c.hello().await.unwrap();
    assert_eq!(hello.method, AuthMethod::Ssl);
    p.server.shutdown().await;
}

#[tokio::test]
async fn without_a_certificate_a_tls_caller_is_anonymous() {
    let p = pool(policy()).await;
    let c = p.client(None);
    let me: Who = c.get("/who").await.unwrap();
    assert_eq!(me.method, AuthMethod::Anonymous);
    assert_eq!(me.credential_id, None);
    let e = c.post::<_, u32>("/write", &1u32).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unauthenticated, "{e}");
    let e = c.post::<_, u32>("/daemon", &1u32).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unauthenticated, "{e}");
    p.server.shutdown().await;

    // where the policy does not allow anonymous READ, not even that
    let p = pool(policy().with_anonymous_read(false)).await;
    let e = p.client(None).get::<Who>("/who").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unauthenticated, "{e}");
    p.server.shutdown().await;
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused_at_the_handshake() {
    let p = pool(policy()).await;
    let other = PoolCa::generate("test pool").unwrap();
    let (c, _) = p.host_client(&other, "exec1.example");
    let e = c.get::<Who>("/who").await.unwrap_err();
    assert!(matches!(e, NetError::Tls { .. }), "{e:?}");
    assert!(
        e.to_string().contains("the server refused our certificate"),
        "{e}"
    );
    // the server still serves everyone else
    let (good, _) = p.host_client(&p.ca, "exec2.example");
    let me: Who = good.get("/who").await.unwrap();
    assert_eq!(me.identity, "condor@exec2.example");
    p.server.shutdown().await;
}

#[tokio::test]
async fn a_revoked_certificate_is_refused() {
    let p = pool(policy()).await;
    let (c, id) = p.host_client(&p.ca, "exec1.example");
    let (other, _) = p.host_client(&p.ca, "exec2.example");
    let _: Who = c.get("/who").await.unwrap();
    p.revocations.insert(&id);
    // refused at the next request, on the connection already open too
    let e = c.get::<Who>("/who").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::PermissionDenied, "{e}");
    let text = e.to_string();
    assert!(text.contains("revoked") && text.contains(&id), "{text}");
    assert!(text.contains("exec1.example"), "{text}");
    // other hosts are not affected
    let me: Who = other.get("/who").await.unwrap();
    assert_eq!(me.identity, "condor@exec2.example");
    p.server.shutdown().await;
}

#[tokio::test]
async fn a_token_decides_the_identity_but_not_over_a_revoked_certificate() {
    let p = pool(policy()).await;
    let (private, public) = pki::generate_key().unwrap();
    let issued =
        p.ca.issue_host("exec1.example", &localhost(), Some(&public), DAY)
            .unwrap();
    let identity = ClientIdentity {
        cert_pem: issued.cert_pem,
        key_pem: private,
    };
    let token = issue_token(&key(), "alice@pool.test", &[AuthLevel::Read], None).unwrap();
    let c = p.client(Some(token)).with_identity(identity).unwrap();
    let me: Who = c.get("/who").await.unwrap();
    assert_eq!(me.identity, "alice@pool.test");
    assert_eq!(me.method, AuthMethod::Token);
    assert_eq!(me.credential_id, None);
    // the token's scope holds: no DAEMON through the certificate
    let e = c.post::<_, u32>("/daemon", &1u32).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::PermissionDenied, "{e}");
    p.revocations.replace([issued.id.as_str()]);
    let e = c.get::<Who>("/who").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::PermissionDenied, "{e}");
    assert!(e.to_string().contains("revoked"), "{e}");
    p.server.shutdown().await;
}

#[tokio::test]
async fn a_client_trusting_another_ca_refuses_the_server() {
    let p = pool(policy()).await;
    let other = PoolCa::generate("test pool").unwrap();
    let c = Client::new(Endpoint::Tls(p.addr, other.cert_pem().to_string()), None, T).unwrap();
    let e = c.get::<Who>("/who").await.unwrap_err();
    assert!(matches!(e, NetError::Tls { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("we refused the server's certificate"),
        "{e}"
    );
    p.server.shutdown().await;
}

#[tokio::test]
async fn a_joining_host_fetches_the_ca_from_a_server_by_its_hash() {
    let p = pool(policy()).await;
    let pem = pki::fetch_pinned_ca(p.addr, &p.ca.hash(), T).await.unwrap();
    assert_eq!(pki::ca_hash(&pem).unwrap(), p.ca.hash());
    let wrong = PoolCa::generate("test pool").unwrap().hash();
    let e = pki::fetch_pinned_ca(p.addr, &wrong, T).await.unwrap_err();
    assert!(e.to_string().contains(&wrong), "{e}");
    // the server is not disturbed by the probes
    let me: Who = p.client(None).get("/who").await.unwrap();
    assert_eq!(me.method, AuthMethod::Anonymous);
    p.server.shutdown().await;
}

#[tokio::test]
async fn an_expired_host_certificate_is_refused_at_the_handshake() {
    let p = pool(policy()).await;
    // signed by the pool's CA, but its validity ended an hour ago
    let ca_key = rcgen::KeyPair::from_pem(p.ca.key_pem()).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(p.ca.cert_pem(), ca_key).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["exec1.example".to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "exec1.example");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let now = std::time::SystemTime::now();
    params.not_before = (now - Duration::from_secs(7200)).into();
    params.not_after = (now - Duration::from_secs(3600)).into();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let c = p
        .client(None)
        .with_identity(ClientIdentity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
        .unwrap();
    let e = c.get::<Who>("/who").await.unwrap_err();
    assert!(matches!(e, NetError::Tls { .. }), "{e:?}");
    assert!(
        e.to_string().contains("the server refused our certificate"),
        "{e}"
    );
    p.server.shutdown().await;
}
