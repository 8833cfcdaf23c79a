//! A pool's TLS server for the mutual-TLS tests: a CA, a server with the
//! central manager's host certificate, clients with host certificates.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use skua_net::pki::{self, PoolCa};
use skua_net::routing::{get, post};
use skua_net::{
    tls, AuthLevel, AuthMethod, Caller, Client, ClientIdentity, Endpoint, Json, Listener,
    Revocations, Routes, SecurityPolicy, Server, ServerConfig, ServerHandle, SigningKey,
};

pub const DAY: u64 = 24 * 3600;
pub const T: Duration = Duration::from_secs(5);

#[derive(Debug, Serialize, Deserialize)]
pub struct Who {
    pub identity: String,
    pub method: AuthMethod,
    pub levels: Vec<AuthLevel>,
    pub peer_ip: Option<IpAddr>,
    pub credential_id: Option<String>,
}

async fn who(caller: Caller) -> Json<Who> {
    Json(Who {
        identity: caller.identity.name(),
        method: caller.identity.method,
        levels: caller.levels,
        peer_ip: caller.peer_ip,
        credential_id: caller.credential_id,
    })
}

async fn ok(Json(v): Json<u32>) -> Json<u32> {
    Json(v)
}

fn routes() -> Routes {
    Routes::new()
        .route("/who", AuthLevel::Read, get(who))
        .route("/write", AuthLevel::Write, post(ok))
        .route("/daemon", AuthLevel::Daemon, post(ok))
}

/// HTCondor's recommended policy for a pool: anyone may READ (anonymous
/// too), authenticated users WRITE, the daemons (`condor@*`) DAEMON.
pub fn policy() -> SecurityPolicy {
    SecurityPolicy::default()
        .allowing(AuthLevel::Read, ["*"])
        .allowing(AuthLevel::Write, ["*"])
        .allowing(AuthLevel::Daemon, ["condor@*"])
        .with_anonymous_read(true)
}

pub fn key() -> SigningKey {
    SigningKey::from_bytes(*b"0123456789abcdef0123456789abcdef").unwrap()
}

pub fn localhost() -> Vec<IpAddr> {
    vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]
}

pub struct Pool {
    pub ca: PoolCa,
    pub server: ServerHandle,
    pub addr: SocketAddr,
    pub revocations: Revocations,
}

/// A server on 127.0.0.1 with the host certificate of `cm.example`
/// (without the CA in its file: the server adds it to the chain),
/// verifying client certificates against the pool CA.
pub async fn pool(policy: SecurityPolicy) -> Pool {
    let ca = PoolCa::generate("test pool").unwrap();
    let host = ca
        .issue_host("cm.example", &localhost(), None, DAY)
        .unwrap();
    let config = tls::server_config_mtls(
        host.cert_pem.as_bytes(),
        host.key_pem.unwrap().as_bytes(),
        Some(ca.cert_pem().as_bytes()),
    )
    .unwrap();
    let listener = Listener::tls("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let revocations = Revocations::new();
    let mut sc = ServerConfig::new(policy, Some(key()), "pool.test");
    sc.revocations = revocations.clone();
    let server = Server::new(sc, routes()).unwrap().spawn(vec![listener]);
    Pool {
        ca,
        server,
        addr,
        revocations,
    }
}

impl Pool {
    pub fn client(&self, token: Option<String>) -> Client {
        Client::new(
            Endpoint::Tls(self.addr, self.ca.cert_pem().to_string()),
            token,
            T,
        )
        .unwrap()
    }

    /// A client presenting a certificate for `host` from `ca`, and its
    /// credential id.
    pub fn host_client(&self, ca: &PoolCa, host: &str) -> (Client, String) {
        let (private, public) = pki::generate_key().unwrap();
        let issued = ca
            .issue_host(host, &localhost(), Some(&public), DAY)
            .unwrap();
        let id = ClientIdentity {
            cert_pem: issued.cert_pem,
            key_pem: private,
        };
        (self.client(None).with_identity(id).unwrap(), issued.id)
    }
}
