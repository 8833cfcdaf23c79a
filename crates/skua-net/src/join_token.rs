//! Join tokens: short-lived, single-use HS256 JWTs signed with the pool
//! signing key whose only scope is [`JOIN_SCOPE`]. The collector redeems
//! one for a host certificate ([`skua_proto::routes::COLLECTOR_JOIN`]);
//! it remembers the `jti` of every token redeemed, so each works once.
//!
//! A join token's `scope` is a string where an ordinary token's is a list
//! of levels, so [`crate::verify_token`] refuses it as malformed: a join
//! token authenticates no one anywhere.

use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use skua_proto::{JoinClaims, JOIN_SCOPE, JOIN_SUBJECT};

use crate::token::{check_times, decode_hs256, hex, install_crypto_provider};
use crate::{SigningKey, TokenError};

/// Default lifetime of a join token: one hour.
pub const DEFAULT_JOIN_LIFETIME: Duration = Duration::from_secs(3600);

/// Makes a join token valid for `lifetime` from `now` (seconds since the
/// epoch), with a random `jti`.
pub fn issue_join_token_at(
    key: &SigningKey,
    lifetime: Duration,
    now: u64,
) -> Result<String, TokenError> {
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).map_err(|e| TokenError::Random(e.to_string()))?;
    let claims = JoinClaims {
        sub: JOIN_SUBJECT.to_string(),
        iat: now,
        exp: now.saturating_add(lifetime.as_secs()),
        scope: JOIN_SCOPE.to_string(),
        jti: hex(&jti),
    };
    sign_join_claims(key, &claims)
}

/// Signs join claims as given (tests, and [`issue_join_token_at`]).
pub fn sign_join_claims(key: &SigningKey, claims: &JoinClaims) -> Result<String, TokenError> {
    install_crypto_provider();
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(key.as_bytes()),
    )
    .map_err(|e| TokenError::Sign(e.to_string()))
}

/// Verifies a join token at `now`: signature (HS256 with `key`), expiry
/// (no leeway), issue time (at most [`MAX_CLOCK_SKEW`] ahead), subject and
/// scope exactly [`JOIN_SUBJECT`] and [`JOIN_SCOPE`]. Whether its `jti`
/// was used already is the collector's to check. Never panics.
pub fn verify_join_token_at(
    key: &SigningKey,
    token: &str,
    now: u64,
) -> Result<JoinClaims, TokenError> {
    let claims: JoinClaims = decode_hs256(key, token, false, |e| format!("not a join token: {e}"))?;
    if claims.scope != JOIN_SCOPE || claims.sub != JOIN_SUBJECT {
        return Err(TokenError::Malformed(format!(
            "not a join token (scope `{}`, subject `{}`)",
            claims.scope, claims.sub
        )));
    }
    check_times(now, Some(claims.exp), &[("iat", Some(claims.iat))])?;
    if claims.jti.is_empty() {
        return Err(TokenError::Malformed("join token without a jti".into()));
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{issue_token, verify_token_at, MAX_TOKEN_LEN};
    use skua_proto::AuthLevel;

    fn key() -> SigningKey {
        SigningKey::from_bytes(vec![3u8; 32]).unwrap()
    }

    const NOW: u64 = 1_800_000_000;

    #[test]
    fn issued_tokens_verify_with_their_key_until_they_expire() {
        let k = key();
        let t = issue_join_token_at(&k, Duration::from_secs(600), NOW).unwrap();
        let c = verify_join_token_at(&k, &t, NOW + 600).unwrap();
        assert_eq!(c.scope, JOIN_SCOPE);
        assert_eq!(c.exp, NOW + 600);
        assert_eq!(c.jti.len(), 32);
        assert!(matches!(
            verify_join_token_at(&k, &t, NOW + 601),
            Err(TokenError::Expired)
        ));
        let other = SigningKey::from_bytes(vec![4u8; 32]).unwrap();
        assert!(matches!(
            verify_join_token_at(&other, &t, NOW),
            Err(TokenError::BadSignature)
        ));
        let t2 = issue_join_token_at(&k, Duration::from_secs(600), NOW).unwrap();
        assert_ne!(verify_join_token_at(&k, &t2, NOW).unwrap().jti, c.jti);
    }

    #[test]
    fn a_join_token_is_no_ordinary_token_and_the_reverse() {
        let k = key();
        let join = issue_join_token_at(&k, Duration::from_secs(600), NOW).unwrap();
        assert!(matches!(
            verify_token_at(&k, &join, NOW),
            Err(TokenError::Malformed(_))
        ));
        let admin = issue_token(&k, "condor@pool", &[AuthLevel::Administrator], None).unwrap();
        assert!(matches!(
            verify_join_token_at(&k, &admin, NOW),
            Err(TokenError::Malformed(_))
        ));
        // the right shape with another scope or subject is refused too
        for (scope, sub) in [("condor:/READ", JOIN_SUBJECT), (JOIN_SCOPE, "root@pool")] {
            let forged = sign_join_claims(
                &k,
                &JoinClaims {
                    sub: sub.into(),
                    iat: NOW,
                    exp: NOW + 60,
                    scope: scope.into(),
                    jti: "j".into(),
                },
            )
            .unwrap();
            assert!(matches!(
                verify_join_token_at(&k, &forged, NOW),
                Err(TokenError::Malformed(_))
            ));
        }
    }

    #[test]
    fn future_tokens_and_junk_are_refused() {
        let k = key();
        let future = issue_join_token_at(&k, Duration::from_secs(600), NOW + 3600).unwrap();
        assert!(matches!(
            verify_join_token_at(&k, &future, NOW),
            Err(TokenError::NotYetValid { claim: "iat", .. })
        ));
        for junk in ["", "x.y.z", &"a".repeat(MAX_TOKEN_LEN + 1)] {
            assert!(verify_join_token_at(&k, junk, NOW).is_err());
        }
    }
}
