//! Who a caller is: `user@domain`, and how we know.

use std::fmt;

use skua_proto::AuthMethod;

/// The user part of the identity every unauthenticated caller gets.
pub const ANONYMOUS_USER: &str = "unauthenticated";
/// The domain of the identity every unauthenticated caller gets (HTCondor's
/// `unmapped`).
pub const ANONYMOUS_DOMAIN: &str = "unmapped";

/// Longest identity accepted, `user@domain` together.
const MAX_IDENTITY_LEN: usize = 256;

/// An authenticated (or anonymous) caller, as handlers see it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The user name, left of the `@`.
    pub user: String,
    /// The domain, right of the `@` (`UID_DOMAIN` for local callers).
    pub domain: String,
    /// How the identity was established.
    pub method: AuthMethod,
}

/// A string that is not a valid `user@domain` identity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an identity of the form user@domain")]
pub struct IdentityError(pub String);

impl Identity {
    /// An identity from its parts, checked as [`Identity::parse`] checks.
    pub fn new(
        user: impl Into<String>,
        domain: impl Into<String>,
        method: AuthMethod,
    ) -> Result<Self, IdentityError> {
        let (user, domain) = (user.into(), domain.into());
        if !valid_part(&user)
            || !valid_part(&domain)
            || user.len() + domain.len() >= MAX_IDENTITY_LEN
        {
            return Err(IdentityError(format!("{user}@{domain}")));
        }
        Ok(Identity {
            user,
            domain,
            method,
        })
    }

    /// Parses `user@domain`: exactly one `@`, both sides non-empty, no
    /// whitespace, control characters, `*` or `/`, at most 256 bytes.
    pub fn parse(text: &str, method: AuthMethod) -> Result<Self, IdentityError> {
        let Some((user, domain)) = text.split_once('@') else {
            return Err(IdentityError(text.to_string()));
        };
        Identity::new(user, domain, method).map_err(|_| IdentityError(text.to_string()))
    }

    /// `unauthenticated@unmapped`, the identity of a caller that presented
    /// no credentials.
    pub fn anonymous() -> Self {
        Identity {
            user: ANONYMOUS_USER.to_string(),
            domain: ANONYMOUS_DOMAIN.to_string(),
            method: AuthMethod::Anonymous,
        }
    }

    /// Whether the caller presented no credentials.
    pub fn is_anonymous(&self) -> bool {
        self.method == AuthMethod::Anonymous
    }

    /// `user@domain`.
    pub fn name(&self) -> String {
        format!("{}@{}", self.user, self.domain)
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.user, self.domain)
    }
}

fn valid_part(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !matches!(c, '@' | '*' | '/'))
}

/// The local account name of `uid` (through the system's user database,
/// so NSS sources such as LDAP count), or `None` if it has none.
pub fn local_user_name(uid: u32) -> Option<String> {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(user)) => Some(user.name),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(uid, error = %e, "cannot look up local user");
            None
        }
    }
}

/// The identity of a local peer with `uid`: `name@uid_domain` with method
/// `local`, or anonymous when the uid has no account name (or the name
/// does not make a valid identity).
pub fn local_identity(uid: u32, uid_domain: &str) -> Identity {
    match local_user_name(uid) {
        Some(name) => Identity::new(name, uid_domain, AuthMethod::Local).unwrap_or_else(|e| {
            tracing::warn!(uid, error = %e, "local peer has no usable identity; treating as anonymous");
            Identity::anonymous()
        }),
        None => {
            tracing::warn!(uid, "local peer's uid has no account name; treating as anonymous");
            Identity::anonymous()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_user_at_domain() {
        let id = Identity::parse("alice@example.org", AuthMethod::Token).unwrap();
        assert_eq!(id.user, "alice");
        assert_eq!(id.domain, "example.org");
        assert_eq!(id.to_string(), "alice@example.org");
        assert!(!id.is_anonymous());
    }

    #[test]
    fn parse_rejects_bad_shapes() {
        for bad in [
            "", "alice", "@x", "a@", "a@b@c", "a b@c", "*@c", "a@*", "a/b@c", "a@b\n",
        ] {
            assert!(Identity::parse(bad, AuthMethod::Token).is_err(), "{bad:?}");
        }
        let long = format!("{}@x", "a".repeat(300));
        assert!(Identity::parse(&long, AuthMethod::Token).is_err());
    }

    #[test]
    fn root_has_a_name() {
        assert_eq!(local_user_name(0).as_deref(), Some("root"));
        let id = local_identity(0, "pool.test");
        assert_eq!(id.to_string(), "root@pool.test");
        assert_eq!(id.method, AuthMethod::Local);
    }

    #[test]
    fn anonymous_identity() {
        let a = Identity::anonymous();
        assert!(a.is_anonymous());
        assert_eq!(a.name(), "unauthenticated@unmapped");
    }
}
