//! The collector's side of joining: the join route (a join token and a
//! public key in, a host certificate signed by the pool CA out), the
//! credential registry's routes (list, revoke) and the revocation list
//! every daemon fetches.
//!
//! The handlers check what they can alone (the request's shape, the
//! token's signature, expiry and scope) and sign the certificate; the
//! collector's loop owns the [`Registry`] and decides, one event at a time,
//! whether the token is still unused, recording the token and the
//! credential in one atomic write before the certificate is sent.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use skua_daemon::{Clock, DaemonContext};
use skua_net::pki::PoolCa;
use skua_net::{ApiError, ErrorCode, Json, PeerAddress, Revocations, SigningKey, State};
use skua_proto::{
    CredentialList, CredentialQuery, CredentialRecord, JoinReply, JoinRequest, PoolRole,
    RevocationList, RevocationQuery, RevokeReply, RevokeRequest,
};
use tokio::sync::{mpsc, oneshot};

use crate::registry::{Registry, RegistryError, REGISTRY_FILE_NAME};

/// How long a host certificate issued through the join route is valid:
/// five years (a host's credential is long-lived; an administrator ends
/// it early with `skua token revoke`).
pub const HOST_CERT_VALIDITY_SECS: u64 = 5 * 365 * 24 * 3600;

/// Most addresses a joining host may list.
const MAX_ADDRESSES: usize = 32;

/// What the collector's loop is asked about the registry.
pub(crate) enum RegistryEvent {
    /// Record a credential issued for the join token `jti`, unless the
    /// token was used.
    Redeem {
        jti: String,
        exp: u64,
        record: CredentialRecord,
        reply: oneshot::Sender<Result<(), RegistryError>>,
    },
    /// The whole registry.
    List {
        reply: oneshot::Sender<Vec<CredentialRecord>>,
    },
    /// Revoke a credential by id, or every credential of a host.
    Revoke {
        target: String,
        reply: oneshot::Sender<Result<Vec<CredentialRecord>, RegistryError>>,
    },
    /// The revoked ids.
    Revoked { reply: oneshot::Sender<Vec<String>> },
}

/// The registry as the collector's loop holds it: the records, the file
/// they are kept in, and the collector's own revocation set (so a revoked
/// credential is refused at once).
pub(crate) struct RegistryShell {
    registry: Registry,
    path: Option<PathBuf>,
    revocations: Revocations,
}

impl RegistryShell {
    /// Loads the registry from `$(SPOOL)/credentials.json` (none without
    /// `SPOOL`: nothing is recorded, so nothing can be joined) and fills
    /// `revocations` with its revoked ids.
    pub(crate) fn load(
        ctx: &DaemonContext,
        revocations: Revocations,
    ) -> anyhow::Result<RegistryShell> {
        let path = ctx
            .knob("SPOOL")?
            .map(|spool| PathBuf::from(spool).join(REGISTRY_FILE_NAME));
        Ok(RegistryShell::open(path, revocations)?)
    }

    /// The registry kept in `path` (none: nothing can be recorded), its
    /// revoked ids put into `revocations`.
    fn open(
        path: Option<PathBuf>,
        revocations: Revocations,
    ) -> Result<RegistryShell, RegistryError> {
        let registry = match &path {
            Some(p) => Registry::load(p)?,
            None => Registry::default(),
        };
        revocations.replace(registry.revoked_ids());
        Ok(RegistryShell {
            registry,
            path,
            revocations,
        })
    }

    fn save(&self) -> Result<(), RegistryError> {
        match &self.path {
            Some(p) => {
                if let Some(dir) = p.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| RegistryError::File {
                        path: p.clone(),
                        message: e.to_string(),
                    })?;
                }
                self.registry.save(p)
            }
            None => Err(RegistryError::File {
                path: PathBuf::from(REGISTRY_FILE_NAME),
                message: "SPOOL is not configured".into(),
            }),
        }
    }

    /// Carries out one event at `now` (seconds since the epoch). A change
    /// is kept only if it could be written.
    pub(crate) fn handle(&mut self, event: RegistryEvent, now: u64) {
        match event {
            RegistryEvent::Redeem {
                jti,
                exp,
                record,
                reply,
            } => {
                let before = self.registry.clone();
                self.registry.prune(now);
                let result = self
                    .registry
                    .redeem(&jti, exp, record)
                    .and_then(|()| self.save());
                if result.is_err() {
                    self.registry = before;
                }
                let _ = reply.send(result);
            }
            RegistryEvent::List { reply } => {
                let _ = reply.send(self.registry.credentials.clone());
            }
            RegistryEvent::Revoke { target, reply } => {
                let before = self.registry.clone();
                let result = self.registry.revoke(&target, now).and_then(|revoked| {
                    self.save()?;
                    Ok(revoked)
                });
                match &result {
                    Ok(revoked) => {
                        for c in revoked {
                            self.revocations.insert(&c.id);
                        }
                    }
                    Err(_) => self.registry = before,
                }
                let _ = reply.send(result);
            }
            RegistryEvent::Revoked { reply } => {
                let _ = reply.send(self.registry.revoked_ids());
            }
        }
    }
}

/// What the join handlers hold.
#[derive(Clone)]
pub(crate) struct JoinState {
    events: mpsc::Sender<RegistryEvent>,
    /// The pool signing key (join tokens are signed with it).
    key: Option<SigningKey>,
    /// The pool CA, when this collector holds its key.
    ca: Option<Arc<PoolCa>>,
    clock: Clock,
    facts: Arc<PoolFacts>,
}

/// What a joining host is told about the pool.
struct PoolFacts {
    condor_host: String,
    collector_host: String,
    uid_domain: String,
    trust_domain: String,
}

impl JoinState {
    /// Reads the pool CA (`TRUST_DOMAIN_CAFILE`, `TRUST_DOMAIN_CAKEY`: only
    /// on the central manager) and the pool's facts from the context.
    pub(crate) fn new(
        ctx: &DaemonContext,
        events: mpsc::Sender<RegistryEvent>,
    ) -> anyhow::Result<JoinState> {
        let ca = match (
            ctx.configured_knob("TRUST_DOMAIN_CAFILE")?,
            ctx.configured_knob("TRUST_DOMAIN_CAKEY")?,
        ) {
            (Some(cert), Some(key)) if std::path::Path::new(&key).exists() => {
                let read = |p: &str| {
                    std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("reading {p}: {e}"))
                };
                let ca = PoolCa::from_pem(&read(&cert)?, &read(&key)?)
                    .map_err(|e| anyhow::anyhow!("the pool CA ({cert}, {key}): {e}"))?;
                tracing::info!("hosts may join: pool CA {} loaded from {cert}", ca.hash());
                Some(Arc::new(ca))
            }
            _ => None,
        };
        let condor_host = ctx.knob("CONDOR_HOST")?.unwrap_or_default();
        let collector_host = ctx
            .knob("COLLECTOR_HOST")?
            .unwrap_or_else(|| condor_host.clone());
        let trust_domain = ctx
            .knob("TRUST_DOMAIN")?
            .unwrap_or_else(|| ctx.uid_domain.clone());
        Ok(JoinState {
            events,
            key: ctx.signing_key.clone(),
            ca,
            clock: ctx.clock.clone(),
            facts: Arc::new(PoolFacts {
                condor_host,
                collector_host,
                uid_domain: ctx.uid_domain.clone(),
                trust_domain,
            }),
        })
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> RegistryEvent,
    ) -> Result<T, ApiError> {
        let gone = || ApiError::unavailable("the collector is shutting down");
        let (tx, rx) = oneshot::channel();
        self.events.send(make(tx)).await.map_err(|_| gone())?;
        rx.await.map_err(|_| gone())
    }
}

/// Checks a join request's shape: a host name that can be a certificate's
/// common name, parseable addresses, roles a joined host may take, a
/// public key. Returns the addresses.
pub fn check_request(req: &JoinRequest) -> Result<Vec<IpAddr>, String> {
    let host = req.host.as_str();
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && !host.starts_with(['-', '.'])
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if !host_ok {
        return Err(format!(
            "host name {host:?} is not a host name (letters, digits, `-`, `.`, `_`)"
        ));
    }
    if req.addresses.is_empty() || req.addresses.len() > MAX_ADDRESSES {
        return Err(format!(
            "a joining host gives between 1 and {MAX_ADDRESSES} addresses, not {}",
            req.addresses.len()
        ));
    }
    let addresses = req
        .addresses
        .iter()
        .map(|a| {
            a.trim()
                .parse::<IpAddr>()
                .map_err(|_| format!("{a:?} is not an IP address"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if req.roles.is_empty() {
        return Err("a joining host takes at least one role (submit, execute)".into());
    }
    if req.roles.contains(&PoolRole::CentralManager) {
        return Err("a host cannot join as a central manager: a pool has one".into());
    }
    if req.public_key_pem.trim().is_empty() || req.public_key_pem.len() > 16 * 1024 {
        return Err("the request carries no usable public key".into());
    }
    Ok(addresses)
}

fn refuse(peer: &str, host: &str, code: ErrorCode, why: String) -> ApiError {
    tracing::warn!(peer, host, "join refused: {why}");
    ApiError::new(code, format!("join refused: {why}"))
}

/// `POST /collector/join`.
pub(crate) async fn join(
    State(state): State<JoinState>,
    PeerAddress(peer): PeerAddress,
    Json(req): Json<JoinRequest>,
) -> Result<Json<JoinReply>, ApiError> {
    let host = req.host.clone();
    let addresses =
        check_request(&req).map_err(|why| refuse(&peer, &host, ErrorCode::BadRequest, why))?;
    let (Some(key), Some(ca)) = (&state.key, &state.ca) else {
        return Err(refuse(
            &peer,
            &host,
            ErrorCode::NotFound,
            "this collector does not admit hosts (it holds no pool CA key, TRUST_DOMAIN_CAKEY)"
                .into(),
        ));
    };
    let now = u64::try_from(state.clock.now_secs()).unwrap_or(0);
    let claims = skua_net::verify_join_token_at(key, &req.token, now).map_err(|e| {
        refuse(
            &peer,
            &host,
            ErrorCode::PermissionDenied,
            format!("join token: {e}"),
        )
    })?;
    let issued = ca
        .issue_host(
            &req.host,
            &addresses,
            Some(&req.public_key_pem),
            HOST_CERT_VALIDITY_SECS,
        )
        .map_err(|e| {
            refuse(
                &peer,
                &host,
                ErrorCode::BadRequest,
                format!("cannot certify the host: {e}"),
            )
        })?;
    let mut roles = req.roles.clone();
    roles.sort();
    roles.dedup();
    let record = CredentialRecord {
        id: issued.id.clone(),
        host: req.host.clone(),
        addresses: addresses.iter().map(ToString::to_string).collect(),
        roles,
        issued: now,
        token_jti: claims.jti.clone(),
        revoked: None,
    };
    let jti = claims.jti.clone();
    state
        .ask(|reply| RegistryEvent::Redeem {
            jti,
            exp: claims.exp,
            record,
            reply,
        })
        .await?
        .map_err(|e| match e {
            RegistryError::TokenUsed { .. } => {
                refuse(&peer, &host, ErrorCode::PermissionDenied, e.to_string())
            }
            RegistryError::HostTaken { .. } => {
                refuse(&peer, &host, ErrorCode::Conflict, e.to_string())
            }
            other => {
                tracing::error!(peer, host, "join: {other}");
                ApiError::internal(format!("join: {other}"))
            }
        })?;
    tracing::info!(
        peer,
        host,
        credential = issued.id,
        token = claims.jti,
        "host joined the pool"
    );
    Ok(Json(JoinReply {
        cert_pem: issued.cert_pem,
        ca_pem: ca.cert_pem().to_string(),
        credential_id: issued.id,
        condor_host: state.facts.condor_host.clone(),
        collector_host: state.facts.collector_host.clone(),
        uid_domain: state.facts.uid_domain.clone(),
        trust_domain: state.facts.trust_domain.clone(),
    }))
}

/// `POST /collector/credentials`.
pub(crate) async fn credentials(
    State(state): State<JoinState>,
    Json(_): Json<CredentialQuery>,
) -> Result<Json<CredentialList>, ApiError> {
    let credentials = state.ask(|reply| RegistryEvent::List { reply }).await?;
    Ok(Json(CredentialList { credentials }))
}

/// `POST /collector/revoke`.
pub(crate) async fn revoke(
    State(state): State<JoinState>,
    caller: skua_net::Caller,
    Json(req): Json<RevokeRequest>,
) -> Result<Json<RevokeReply>, ApiError> {
    let target = req.target.trim().to_string();
    if target.is_empty() {
        return Err(ApiError::bad_request("revoke what? give an id or a host"));
    }
    let revoked = state
        .ask(|reply| RegistryEvent::Revoke {
            target: target.clone(),
            reply,
        })
        .await?
        .map_err(|e| match e {
            RegistryError::UnknownTarget(_) => ApiError::not_found(e.to_string()),
            other => ApiError::internal(other.to_string()),
        })?;
    for c in &revoked {
        tracing::info!(
            credential = c.id,
            host = c.host,
            "credential revoked by {}",
            caller.identity
        );
    }
    Ok(Json(RevokeReply { revoked }))
}

/// `POST /collector/revocations`.
pub(crate) async fn revocations(
    State(state): State<JoinState>,
    Json(_): Json<RevocationQuery>,
) -> Result<Json<RevocationList>, ApiError> {
    let revoked = state.ask(|reply| RegistryEvent::Revoked { reply }).await?;
    Ok(Json(RevocationList { revoked }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(dir: &std::path::Path, revocations: &Revocations) -> RegistryShell {
        RegistryShell::open(Some(dir.join(REGISTRY_FILE_NAME)), revocations.clone()).unwrap()
    }

    fn record(id: &str, host: &str) -> CredentialRecord {
        CredentialRecord {
            id: id.into(),
            host: host.into(),
            addresses: vec![],
            roles: vec![PoolRole::Execute],
            issued: 1,
            token_jti: format!("jti-{id}"),
            revoked: None,
        }
    }

    fn redeem(
        s: &mut RegistryShell,
        jti: &str,
        rec: CredentialRecord,
    ) -> Result<(), RegistryError> {
        let (reply, rx) = oneshot::channel();
        s.handle(
            RegistryEvent::Redeem {
                jti: jti.into(),
                exp: 100,
                record: rec,
                reply,
            },
            10,
        );
        rx.blocking_recv().unwrap()
    }

    #[test]
    fn a_revocation_reaches_the_servers_set_at_once_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let revocations = Revocations::new();
        let mut s = shell(dir.path(), &revocations);
        redeem(&mut s, "j1", record("0a", "exec1")).unwrap();
        assert!(matches!(
            redeem(&mut s, "j1", record("0b", "exec2")),
            Err(RegistryError::TokenUsed { .. })
        ));
        let (reply, rx) = oneshot::channel();
        s.handle(
            RegistryEvent::Revoke {
                target: "exec1".into(),
                reply,
            },
            20,
        );
        assert_eq!(rx.blocking_recv().unwrap().unwrap().len(), 1);
        assert!(revocations.contains("0a"));
        // a restarted collector: the used token and the revocation are
        // remembered
        let after = Revocations::new();
        let mut s = shell(dir.path(), &after);
        assert!(after.contains("0a"));
        assert!(matches!(
            redeem(&mut s, "j1", record("0c", "exec3")),
            Err(RegistryError::TokenUsed { .. })
        ));
    }

    #[test]
    fn a_change_that_cannot_be_written_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let revocations = Revocations::new();
        let mut s = shell(dir.path(), &revocations);
        s.path = Some(std::path::PathBuf::from(
            "/proc/no-such-dir/credentials.json",
        ));
        assert!(matches!(
            redeem(&mut s, "j1", record("0a", "exec1")),
            Err(RegistryError::File { .. })
        ));
        // not recorded: the token is still unused and nothing is listed
        assert!(!s.registry.token_used("j1"));
        assert!(s.registry.credentials.is_empty());
    }

    fn request() -> JoinRequest {
        JoinRequest {
            token: "t".into(),
            host: "exec1.example".into(),
            addresses: vec!["10.0.0.2".into()],
            roles: vec![PoolRole::Execute],
            public_key_pem: "-----BEGIN PUBLIC KEY-----".into(),
        }
    }

    #[test]
    fn well_formed_requests_pass_and_malformed_ones_say_why() {
        assert_eq!(
            check_request(&request()).unwrap(),
            vec!["10.0.0.2".parse::<IpAddr>().unwrap()]
        );
        type Spoil = fn(&mut JoinRequest);
        let cases: Vec<(Spoil, &str)> = vec![
            (|r| r.host = String::new(), "not a host name"),
            (|r| r.host = "a b".into(), "not a host name"),
            (|r| r.host = "-x".into(), "not a host name"),
            (|r| r.addresses.clear(), "addresses"),
            (
                |r| r.addresses = vec!["nowhere".into()],
                "not an IP address",
            ),
            (|r| r.roles.clear(), "at least one role"),
            (
                |r| r.roles = vec![PoolRole::CentralManager],
                "central manager",
            ),
            (|r| r.public_key_pem.clear(), "public key"),
        ];
        for (spoil, why) in cases {
            let mut r = request();
            spoil(&mut r);
            let e = check_request(&r).unwrap_err();
            assert!(e.contains(why), "{e} should say {why}");
        }
    }
}
