//! The one open route: reachable by anonymous callers whatever the policy
//! says, with the peer's address for the handler's log; a join token
//! opens nothing else.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use skua_net::proto::{routes, JoinReply, JoinRequest};
use skua_net::routing::post;
use skua_net::{
    issue_join_token_at, ApiError, Caller, ErrorCode, Json, Listener, PeerAddress, Routes,
    SecurityPolicy, Server,
};

async fn join(
    caller: Caller,
    PeerAddress(peer): PeerAddress,
    Json(req): Json<JoinRequest>,
) -> Result<Json<JoinReply>, ApiError> {
    if req.token != "good" {
        return Err(ApiError::new(ErrorCode::PermissionDenied, "bad token"));
    }
    Ok(Json(JoinReply {
        cert_pem: String::new(),
        ca_pem: String::new(),
        credential_id: caller.identity.name(),
        condor_host: peer,
        collector_host: String::new(),
        uid_domain: String::new(),
        trust_domain: String::new(),
    }))
}

fn request(token: &str) -> JoinRequest {
    JoinRequest {
        token: token.into(),
        host: "exec1".into(),
        addresses: vec![],
        roles: vec![],
        public_key_pem: String::new(),
    }
}

#[tokio::test]
async fn anonymous_callers_reach_the_open_route_and_nothing_else() {
    // no anonymous READ in this policy
    let policy = SecurityPolicy::default()
        .allowing(skua_net::AuthLevel::Read, ["*@pool.test"])
        .with_anonymous_read(false);
    let routes = Routes::new().command(&routes::COLLECTOR_JOIN, post(join));
    let routes = routes.route(
        "/read",
        skua_net::AuthLevel::Read,
        skua_net::routing::get(|| async { "x" }),
    );
    let l = Listener::tcp("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let _srv = Server::new(config(policy), routes).unwrap().spawn(vec![l]);

    let anon = client(addr, None);
    let reply = anon
        .command(&routes::COLLECTOR_JOIN, Some(&request("good")))
        .await
        .unwrap();
    assert_eq!(reply.credential_id, "unauthenticated@unmapped");
    assert!(reply.condor_host.starts_with("127.0.0.1:"), "{reply:?}");
    // the handler's refusal reaches the caller
    let e = anon
        .command(&routes::COLLECTOR_JOIN, Some(&request("bad")))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::PermissionDenied);
    // other routes stay closed to anonymous callers
    assert_eq!(
        anon.hello().await.unwrap_err().code(),
        ErrorCode::Unauthenticated
    );
    // a join token is no bearer token
    let join_token = issue_join_token_at(&key(), Duration::from_secs(60), now_secs()).unwrap();
    let with_join = client(addr, Some(join_token));
    assert_eq!(
        with_join.hello().await.unwrap_err().code(),
        ErrorCode::Unauthenticated
    );
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}
