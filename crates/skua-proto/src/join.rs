//! Joining a pool and the credentials it hands out: join tokens, the
//! collector's join route, the credential registry and revocation.

use serde::{Deserialize, Serialize};

/// The only scope a join token carries. A join token is a JWT (HS256, the
/// pool signing key) whose `scope` is this *string*, where an ordinary
/// token's scope is a list of levels: an ordinary token's decoder refuses
/// it as malformed, so a join token grants nothing anywhere but at the
/// collector's join route.
pub const JOIN_SCOPE: &str = "condor:/JOIN";

/// The subject of every join token (the token names no one: whoever holds
/// it may join once).
pub const JOIN_SUBJECT: &str = "join@pool";

/// The claims of a join token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinClaims {
    /// Always [`JOIN_SUBJECT`].
    pub sub: String,
    /// Issue time, seconds since the Unix epoch.
    pub iat: u64,
    /// Expiry, seconds since the Unix epoch (always present: join tokens
    /// are short-lived).
    pub exp: u64,
    /// Always [`JOIN_SCOPE`].
    pub scope: String,
    /// Random id: the collector redeems each id at most once.
    pub jti: String,
}

/// The roles a host takes in the pool (HTCondor's `use ROLE : ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolRole {
    /// Collector and negotiator (`use ROLE : CentralManager`).
    CentralManager,
    /// A schedd (`use ROLE : Submit`).
    Submit,
    /// A startd (`use ROLE : Execute`).
    Execute,
}

impl PoolRole {
    /// The name of HTCondor's role metaknob (`use ROLE : <name>`).
    pub fn metaknob(self) -> &'static str {
        match self {
            PoolRole::CentralManager => "CentralManager",
            PoolRole::Submit => "Submit",
            PoolRole::Execute => "Execute",
        }
    }

    /// The command-line and wire spelling (`central-manager`, `submit`,
    /// `execute`).
    pub fn as_str(self) -> &'static str {
        match self {
            PoolRole::CentralManager => "central-manager",
            PoolRole::Submit => "submit",
            PoolRole::Execute => "execute",
        }
    }

    /// Parses a role as written on a command line: `central-manager`
    /// (also `centralmanager`, `central_manager`, `cm`), `submit`,
    /// `execute`, in any case.
    pub fn parse(text: &str) -> Option<PoolRole> {
        let t = text.trim().to_ascii_lowercase().replace(['-', '_'], "");
        match t.as_str() {
            "centralmanager" | "cm" => Some(PoolRole::CentralManager),
            "submit" => Some(PoolRole::Submit),
            "execute" => Some(PoolRole::Execute),
            _ => None,
        }
    }
}

/// `POST /collector/join`: a host asks to join the pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinRequest {
    /// The join token (`skua token create --join`).
    pub token: String,
    /// The joining host's name (it becomes the certificate's common name and
    /// the host's daemon identity `condor@<host>`).
    pub host: String,
    /// The host's IP addresses (they go into the certificate, which clients
    /// check against the address they dial).
    pub addresses: Vec<String>,
    /// The roles the host takes (`submit`, `execute`).
    pub roles: Vec<PoolRole>,
    /// The host's public key (PEM); its private key never leaves the host.
    pub public_key_pem: String,
}

/// The reply to a [`JoinRequest`]: what the host needs to be part of the
/// pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinReply {
    /// The host's certificate, signed by the pool CA (PEM).
    pub cert_pem: String,
    /// The pool CA's certificate (PEM).
    pub ca_pem: String,
    /// The credential id (the certificate's serial, lowercase hex).
    pub credential_id: String,
    /// The pool's `CONDOR_HOST`.
    pub condor_host: String,
    /// The pool's `COLLECTOR_HOST`.
    pub collector_host: String,
    /// The pool's `UID_DOMAIN`.
    pub uid_domain: String,
    /// The pool's `TRUST_DOMAIN`.
    pub trust_domain: String,
}

/// One credential the collector issued, as its registry keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialRecord {
    /// The credential id: the certificate's serial, lowercase hex.
    pub id: String,
    /// The host it was issued to.
    pub host: String,
    /// The host's addresses, as requested.
    #[serde(default)]
    pub addresses: Vec<String>,
    /// The host's roles.
    #[serde(default)]
    pub roles: Vec<PoolRole>,
    /// When it was issued, seconds since the Unix epoch.
    pub issued: u64,
    /// The `jti` of the join token it was issued for.
    pub token_jti: String,
    /// When it was revoked (seconds since the Unix epoch); `None`: valid.
    #[serde(default)]
    pub revoked: Option<u64>,
}

/// `POST /collector/credentials` (ADMINISTRATOR) with [`CredentialQuery`]
/// → [`CredentialList`]: the registry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialQuery {}

/// The credential registry, in issue order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialList {
    /// Every credential issued, revoked ones included.
    pub credentials: Vec<CredentialRecord>,
}

/// `POST /collector/revoke` (ADMINISTRATOR): revoke a credential by id, or
/// every credential of a host by its name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeRequest {
    /// A credential id or a host name.
    pub target: String,
}

/// The reply to a [`RevokeRequest`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeReply {
    /// The credentials revoked now (those revoked before are not repeated).
    pub revoked: Vec<CredentialRecord>,
}

/// `POST /collector/revocations` (DAEMON) with [`RevocationQuery`] →
/// [`RevocationList`]: what every daemon refuses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevocationQuery {}

/// The ids of every revoked credential.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevocationList {
    /// Credential ids (certificate serials, lowercase hex).
    pub revoked: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse_as_written_on_a_command_line() {
        for (text, role) in [
            ("central-manager", PoolRole::CentralManager),
            ("CentralManager", PoolRole::CentralManager),
            ("central_manager", PoolRole::CentralManager),
            ("Submit", PoolRole::Submit),
            ("execute", PoolRole::Execute),
        ] {
            assert_eq!(PoolRole::parse(text), Some(role), "{text}");
        }
        assert_eq!(PoolRole::parse("personal"), None);
        assert_eq!(PoolRole::parse(""), None);
        for role in [
            PoolRole::CentralManager,
            PoolRole::Submit,
            PoolRole::Execute,
        ] {
            assert_eq!(PoolRole::parse(role.as_str()), Some(role));
            assert_eq!(PoolRole::parse(role.metaknob()), Some(role));
            let json = serde_json::to_string(&role).unwrap();
            assert_eq!(serde_json::from_str::<PoolRole>(&json).unwrap(), role);
        }
    }

    #[test]
    fn a_join_token_does_not_decode_as_ordinary_claims() {
        let join = JoinClaims {
            sub: JOIN_SUBJECT.into(),
            iat: 1,
            exp: 2,
            scope: JOIN_SCOPE.into(),
            jti: "x".into(),
        };
        let text = serde_json::to_string(&join).unwrap();
        assert!(serde_json::from_str::<crate::TokenClaims>(&text).is_err());
    }

    #[test]
    fn records_without_optional_fields_decode() {
        let r: CredentialRecord =
            serde_json::from_str(r#"{"id":"0a","host":"h","issued":5,"token_jti":"j"}"#).unwrap();
        assert_eq!(r.revoked, None);
        assert!(r.roles.is_empty());
    }
}
