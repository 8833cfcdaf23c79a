//! Authorization levels, authentication methods, token claims.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An authorization level (HTCondor's `DCpermission`): every command is
/// registered at one level, and `ALLOW_<LEVEL>` / `DENY_<LEVEL>` lists say
/// who holds it.
///
/// Levels imply others, as in HTCondor: WRITE implies READ; ADMINISTRATOR
/// and DAEMON imply WRITE (hence READ); NEGOTIATOR implies READ.
///
/// On the wire and in configuration a level is spelled in capitals
/// (`"READ"`); parsing accepts any case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AuthLevel {
    /// Queries: status, queue listing, user priorities.
    Read,
    /// Submitting and changing one's own jobs; implies READ.
    Write,
    /// Pool administration (on, off, restart, reconfig, priority factors);
    /// implies WRITE and READ.
    Administrator,
    /// Daemon-to-daemon commands (advertising, claiming); implies WRITE and
    /// READ. Should be held only by the daemons' identity.
    Daemon,
    /// Negotiator-to-schedd and negotiator-to-startd commands; implies READ.
    Negotiator,
}

impl AuthLevel {
    /// All levels, in declaration order.
    pub const ALL: [AuthLevel; 5] = [
        AuthLevel::Read,
        AuthLevel::Write,
        AuthLevel::Administrator,
        AuthLevel::Daemon,
        AuthLevel::Negotiator,
    ];

    /// The capitalised name used on the wire and in configuration
    /// (`ALLOW_<NAME>`).
    pub fn as_str(self) -> &'static str {
        match self {
            AuthLevel::Read => "READ",
            AuthLevel::Write => "WRITE",
            AuthLevel::Administrator => "ADMINISTRATOR",
            AuthLevel::Daemon => "DAEMON",
            AuthLevel::Negotiator => "NEGOTIATOR",
        }
    }

    /// The levels that imply this one directly (one step up the hierarchy).
    pub fn implied_by(self) -> &'static [AuthLevel] {
        match self {
            AuthLevel::Read => &[AuthLevel::Write, AuthLevel::Negotiator],
            AuthLevel::Write => &[AuthLevel::Administrator, AuthLevel::Daemon],
            AuthLevel::Administrator | AuthLevel::Daemon | AuthLevel::Negotiator => &[],
        }
    }

    /// Whether holding `self` grants `other` (reflexive and transitive).
    pub fn implies(self, other: AuthLevel) -> bool {
        self == other || other.implied_by().iter().any(|up| self.implies(*up))
    }

    /// Every level `self` grants, itself included, in declaration order.
    pub fn implied(self) -> Vec<AuthLevel> {
        AuthLevel::ALL
            .into_iter()
            .filter(|l| self.implies(*l))
            .collect()
    }
}

impl fmt::Display for AuthLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no authorization level.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown authorization level `{0}` (expected READ, WRITE, ADMINISTRATOR, DAEMON or NEGOTIATOR)"
)]
pub struct ParseLevelError(pub String);

impl FromStr for AuthLevel {
    type Err = ParseLevelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AuthLevel::ALL
            .into_iter()
            .find(|l| l.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseLevelError(s.to_string()))
    }
}

/// How the server learned who the caller is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMethod {
    /// A bearer token signed with the pool signing key (HTCondor's IDTOKENS).
    Token,
    /// The kernel's peer credentials on a Unix-domain socket (HTCondor's FS:
    /// same host only).
    Local,
    /// A TLS client certificate signed by the pool's CA (HTCondor's SSL):
    /// the caller is the pool's daemon identity on the host the
    /// certificate names, `condor@HOST`.
    Ssl,
    /// No credentials: the caller is `unauthenticated@unmapped`.
    Anonymous,
}

impl AuthMethod {
    /// The lowercase name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::Token => "token",
            AuthMethod::Local => "local",
            AuthMethod::Ssl => "ssl",
            AuthMethod::Anonymous => "anonymous",
        }
    }
}

impl fmt::Display for AuthMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The claims of a Skua token: an HS256 JWT signed with the pool signing key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenClaims {
    /// The identity the token stands for, `user@domain`.
    pub sub: String,
    /// Issue time, seconds since the Unix epoch. A token issued in the
    /// future (beyond the allowed clock skew) is refused.
    pub iat: u64,
    /// Not before, seconds since the Unix epoch: the token is refused
    /// until then (beyond the allowed clock skew); `None`: valid from
    /// `iat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    /// Expiry, seconds since the Unix epoch; `None` never expires (as
    /// HTCondor's auto-approved daemon tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<u64>,
    /// The levels the token may be used for. A request needing level L is
    /// accepted only if some level here implies L (a WRITE token also reads);
    /// an empty scope is good for nothing.
    #[serde(default)]
    pub scope: Vec<AuthLevel>,
    /// Unique token id, so a token can be named (and later revoked).
    pub jti: String,
}

/// The reply to `GET /hello`: who the server thinks the caller is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoAmI {
    /// `user@domain`.
    pub identity: String,
    /// How it was established.
    pub method: AuthMethod,
    /// The levels the caller holds at this server: granted by its policy
    /// and, for a token, within the token's scope. Declaration order.
    pub levels: Vec<AuthLevel>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use AuthLevel::*;

    #[test]
    fn implications_follow_htcondor() {
        assert_eq!(Read.implied(), vec![Read]);
        assert_eq!(Write.implied(), vec![Read, Write]);
        assert_eq!(Administrator.implied(), vec![Read, Write, Administrator]);
        assert_eq!(Daemon.implied(), vec![Read, Write, Daemon]);
        assert_eq!(Negotiator.implied(), vec![Read, Negotiator]);
        assert!(!Negotiator.implies(Write));
        assert!(!Administrator.implies(Daemon));
        assert!(!Daemon.implies(Administrator));
        assert!(!Read.implies(Write));
    }

    #[test]
    fn implied_by_is_consistent_with_implies() {
        for a in AuthLevel::ALL {
            for b in AuthLevel::ALL {
                if a.implied_by().contains(&b) {
                    assert!(b.implies(a), "{b} should imply {a}");
                }
            }
        }
    }

    #[test]
    fn level_names_round_trip() {
        for l in AuthLevel::ALL {
            assert_eq!(l.as_str().parse::<AuthLevel>(), Ok(l));
            assert_eq!(l.as_str().to_lowercase().parse::<AuthLevel>(), Ok(l));
            let json = serde_json::to_string(&l).unwrap();
            assert_eq!(json, format!("\"{}\"", l.as_str()));
            assert_eq!(serde_json::from_str::<AuthLevel>(&json).unwrap(), l);
        }
        assert!("CONFIG".parse::<AuthLevel>().is_err());
    }

    #[test]
    fn claims_without_exp_or_scope_decode() {
        let c: TokenClaims =
            serde_json::from_str(r#"{"sub":"a@b","iat":5,"jti":"x","extra":1}"#).unwrap();
        assert_eq!(c.exp, None);
        assert!(c.scope.is_empty());
        let text = serde_json::to_string(&c).unwrap();
        assert!(!text.contains("exp"));
    }

    #[test]
    fn method_names() {
        assert_eq!(
            serde_json::to_string(&AuthMethod::Local).unwrap(),
            "\"local\""
        );
        assert_eq!(AuthMethod::Token.to_string(), "token");
        assert_eq!(serde_json::to_string(&AuthMethod::Ssl).unwrap(), "\"ssl\"");
        assert_eq!(AuthMethod::Ssl.to_string(), "ssl");
    }
}
