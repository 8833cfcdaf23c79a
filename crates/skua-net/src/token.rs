//! Tokens: HS256 JWTs signed with the pool signing key (HTCondor's
//! IDTOKENS), and the key itself.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use skua_proto::{AuthLevel, AuthMethod, TokenClaims};

use crate::Identity;

/// Length of a generated signing key, in bytes.
pub const KEY_LEN: usize = 32;
/// Shortest signing key accepted, in bytes.
pub const MIN_KEY_LEN: usize = 32;
/// Longest token accepted, in bytes; longer ones are refused unread.
pub const MAX_TOKEN_LEN: usize = 8 * 1024;
/// How far in the future a token's `iat` or `nbf` may lie and the token
/// still be accepted: the clocks of a pool's hosts may differ by this
/// much (a token made on one host is often used on another at once).
/// Expiry (`exp`) gets no such allowance.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(5);

/// Why a token could not be made or was refused, or the key could not be
/// had. Messages are meant for the log and the refused caller.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The token's `exp` has passed.
    #[error("token has expired")]
    Expired,
    /// The token's `iat` or `nbf` lies in the future, further than
    /// [`MAX_CLOCK_SKEW`].
    #[error(
        "token is not valid yet: its {claim} is {ahead} s in the future \
         (at most {} s of clock difference between hosts is allowed)",
        MAX_CLOCK_SKEW.as_secs()
    )]
    NotYetValid {
        /// `"iat"` or `"nbf"`.
        claim: &'static str,
        /// Seconds between this host's clock and the claim.
        ahead: u64,
    },
    /// The signature does not verify: forged, altered, or signed with
    /// another pool's key.
    #[error("token signature does not verify (forged, altered, or signed with another key)")]
    BadSignature,
    /// Not a well-formed Skua token.
    #[error("malformed token: {0}")]
    Malformed(String),
    /// The subject is not `user@domain`.
    #[error("token subject `{0}` is not an identity of the form user@domain")]
    BadSubject(String),
    /// The signing key file could not be read or written.
    #[error("signing key {path}: {source}")]
    KeyIo {
        /// The key file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// The key is shorter than [`MIN_KEY_LEN`].
    #[error("signing key {origin} has {len} bytes; at least {MIN_KEY_LEN} are needed")]
    KeyTooShort {
        /// Where the key came from.
        origin: String,
        /// Its length.
        len: usize,
    },
    /// The system's random generator failed.
    #[error("cannot draw random bytes: {0}")]
    Random(String),
    /// Signing failed.
    #[error("cannot sign token: {0}")]
    Sign(String),
}

/// The pool signing key: at least [`MIN_KEY_LEN`] secret bytes. Cheap to
/// clone; never printed.
#[derive(Clone)]
pub struct SigningKey {
    bytes: Arc<[u8]>,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey(<{} bytes>)", self.bytes.len())
    }
}

impl SigningKey {
    /// A fresh key of [`KEY_LEN`] random bytes from the operating system.
    pub fn generate() -> Result<Self, TokenError> {
        let mut bytes = vec![0u8; KEY_LEN];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        Ok(SigningKey {
            bytes: bytes.into(),
        })
    }

    /// A key from raw bytes (at least [`MIN_KEY_LEN`]).
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Result<Self, TokenError> {
        let bytes = bytes.into();
        if bytes.len() < MIN_KEY_LEN {
            return Err(TokenError::KeyTooShort {
                origin: "given".into(),
                len: bytes.len(),
            });
        }
        Ok(SigningKey {
            bytes: bytes.into(),
        })
    }

    /// Reads the key file: its whole content is the key. Warns (through
    /// `tracing`) when the file is readable by group or others.
    pub fn load(path: &Path) -> Result<Self, TokenError> {
        let io_err = |source| TokenError::KeyIo {
            path: path.to_path_buf(),
            source,
        };
        let meta = fs::metadata(path).map_err(io_err)?;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                mode = format_args!("{:o}", meta.permissions().mode() & 0o777),
                "signing key file is accessible to group or others; it should be 0600"
            );
        }
        let bytes = fs::read(path).map_err(io_err)?;
        if bytes.len() < MIN_KEY_LEN {
            return Err(TokenError::KeyTooShort {
                origin: path.display().to_string(),
                len: bytes.len(),
            });
        }
        Ok(SigningKey {
            bytes: bytes.into(),
        })
    }

    /// Reads the key file, or, if there is none, creates it with
    /// [`KEY_LEN`] random bytes and mode 0600 (as HTCondor's central
    /// manager creates its pool key at first start). The directory must
    /// exist. Creation is atomic: concurrent callers end up with the same
    /// key and nobody ever reads a partly written file.
    pub fn load_or_create(path: &Path) -> Result<Self, TokenError> {
        match fs::symlink_metadata(path) {
            Ok(_) => return SigningKey::load(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(TokenError::KeyIo {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
        let key = SigningKey::generate()?;
        let io_err = |source| TokenError::KeyIo {
            path: path.to_path_buf(),
            source,
        };
        // Write a private temporary file beside the target, then link it
        // into place: the link fails if another process won the race.
        let mut suffix = [0u8; 8];
        getrandom::fill(&mut suffix).map_err(|e| TokenError::Random(e.to_string()))?;
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{file_name}.{}.tmp", hex(&suffix)));
        let written = (|| -> io::Result<()> {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&key.bytes)?;
            f.sync_all()
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(io_err(e));
        }
        let linked = fs::hard_link(&tmp, path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                tracing::info!(path = %path.display(), "created pool signing key");
                Ok(key)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => SigningKey::load(path),
            Err(e) => Err(io_err(e)),
        }
    }

    /// The raw key bytes (to copy the key to another host).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

pub(crate) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means a provider is installed already; keep it.
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    });
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Creates a token for `identity` (`user@domain`), usable for `scopes`
/// (and the levels they imply), expiring after `lifetime` (`None`: never).
/// Used by `skua token create` and by daemons for their own token.
pub fn issue_token(
    key: &SigningKey,
    identity: &str,
    scopes: &[AuthLevel],
    lifetime: Option<Duration>,
) -> Result<String, TokenError> {
    Identity::parse(identity, AuthMethod::Token)
        .map_err(|_| TokenError::BadSubject(identity.to_string()))?;
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).map_err(|e| TokenError::Random(e.to_string()))?;
    let iat = now_secs();
    let mut scope = scopes.to_vec();
    scope.sort();
    scope.dedup();
    let claims = TokenClaims {
        sub: identity.to_string(),
        iat,
        nbf: None,
        exp: lifetime.map(|l| iat.saturating_add(l.as_secs())),
        scope,
        jti: hex(&jti),
    };
    sign_claims(key, &claims)
}

/// Signs arbitrary claims (tests, and tools that set `iat`/`exp` exactly).
pub fn sign_claims(key: &SigningKey, claims: &TokenClaims) -> Result<String, TokenError> {
    install_crypto_provider();
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(&key.bytes),
    )
    .map_err(|e| TokenError::Sign(e.to_string()))
}

/// Verifies `token` against `key` and the clock: signature (HS256 only),
/// shape, expiry (no leeway), issue and not-before times (at most
/// [`MAX_CLOCK_SKEW`] in the future) and subject. Never panics, whatever
/// `token` holds.
pub fn verify_token(key: &SigningKey, token: &str) -> Result<TokenClaims, TokenError> {
    verify_token_at(key, token, now_secs())
}

/// [`verify_token`] against the clock reading `now` (seconds since the
/// epoch).
pub fn verify_token_at(key: &SigningKey, token: &str, now: u64) -> Result<TokenClaims, TokenError> {
    let claims: TokenClaims = decode_hs256(key, token, true, |e| e.to_string())?;
    // `decode` checks `exp` only when it parses as an unsigned integer,
    // which our claims type requires; check again against our own clock
    // reading so the rule is visible here. `iat` and `nbf` are checked
    // here too, with the allowed skew.
    check_times(
        now,
        claims.exp,
        &[("iat", Some(claims.iat)), ("nbf", claims.nbf)],
    )?;
    Identity::parse(&claims.sub, AuthMethod::Token)
        .map_err(|_| TokenError::BadSubject(claims.sub.clone()))?;
    Ok(claims)
}

/// The first steps of verifying any token (ordinary or join): at most
/// [`MAX_TOKEN_LEN`] bytes, an HS256 signature by `key` (no other
/// algorithm), claims that decode as `C`. With `validate_exp` the decoder
/// also refuses an `exp` already past by the system clock; `nbf` and the audience it leaves
/// alone. `describe` words any other decoding error. Never panics.
pub(crate) fn decode_hs256<C: serde::de::DeserializeOwned>(
    key: &SigningKey,
    token: &str,
    validate_exp: bool,
    describe: impl FnOnce(jsonwebtoken::errors::Error) -> String,
) -> Result<C, TokenError> {
    install_crypto_provider();
    if token.len() > MAX_TOKEN_LEN {
        return Err(TokenError::Malformed(format!(
            "token is {} bytes long; at most {MAX_TOKEN_LEN} are accepted",
            token.len()
        )));
    }
    let mut validation = Validation::new(Algorithm::HS256);
    validation.required_spec_claims.clear();
    validation.leeway = 0;
    validation.validate_exp = validate_exp;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let data = jsonwebtoken::decode::<C>(token, &DecodingKey::from_secret(&key.bytes), &validation)
        .map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => TokenError::Expired,
            ErrorKind::InvalidSignature => TokenError::BadSignature,
            ErrorKind::InvalidAlgorithm => {
                TokenError::Malformed("only HS256 tokens are accepted".into())
            }
            _ => TokenError::Malformed(describe(e)),
        })?;
    Ok(data.claims)
}

/// Refuses a token expired at `now` (`exp` before it, no leeway) or one
/// of whose `not_before` times (`(claim, time)`: `iat`, `nbf`) lies more
/// than [`MAX_CLOCK_SKEW`] after `now`.
pub(crate) fn check_times(
    now: u64,
    exp: Option<u64>,
    not_before: &[(&'static str, Option<u64>)],
) -> Result<(), TokenError> {
    if exp.is_some_and(|exp| exp < now) {
        return Err(TokenError::Expired);
    }
    let latest = now.saturating_add(MAX_CLOCK_SKEW.as_secs());
    for &(claim, at) in not_before {
        if let Some(at) = at.filter(|at| *at > latest) {
            return Err(TokenError::NotYetValid {
                claim,
                ahead: at - now,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::from_bytes(vec![7u8; 32]).unwrap()
    }

    #[test]
    fn issue_and_verify() {
        let k = key();
        let t = issue_token(
            &k,
            "alice@pool",
            &[AuthLevel::Write, AuthLevel::Read, AuthLevel::Write],
            Some(Duration::from_secs(60)),
        )
        .unwrap();
        let c = verify_token(&k, &t).unwrap();
        assert_eq!(c.sub, "alice@pool");
        assert_eq!(c.scope, vec![AuthLevel::Read, AuthLevel::Write]);
        assert_eq!(c.exp, Some(c.iat + 60));
        assert_eq!(c.jti.len(), 32);
        let t2 = issue_token(&k, "alice@pool", &[], None).unwrap();
        let c2 = verify_token(&k, &t2).unwrap();
        assert_eq!(c2.exp, None);
        assert_ne!(c.jti, c2.jti);
    }

    #[test]
    fn refusals() {
        let k = key();
        let other = SigningKey::from_bytes(vec![8u8; 32]).unwrap();
        let t = issue_token(&other, "a@b", &[AuthLevel::Read], None).unwrap();
        assert!(matches!(
            verify_token(&k, &t),
            Err(TokenError::BadSignature)
        ));
        let expired = sign_claims(
            &k,
            &TokenClaims {
                sub: "a@b".into(),
                iat: 1,
                nbf: None,
                exp: Some(2),
                scope: vec![AuthLevel::Read],
                jti: "x".into(),
            },
        )
        .unwrap();
        assert!(matches!(
            verify_token(&k, &expired),
            Err(TokenError::Expired)
        ));
        let bad_sub = sign_claims(
            &k,
            &TokenClaims {
                sub: "nobody".into(),
                iat: 1,
                nbf: None,
                exp: None,
                scope: vec![],
                jti: "x".into(),
            },
        )
        .unwrap();
        assert!(matches!(
            verify_token(&k, &bad_sub),
            Err(TokenError::BadSubject(_))
        ));
        for junk in ["", "a.b.c", "....", "x", &"a".repeat(MAX_TOKEN_LEN + 1)] {
            assert!(matches!(
                verify_token(&k, junk),
                Err(TokenError::Malformed(_))
            ));
        }
        assert!(matches!(
            issue_token(&k, "not-an-identity", &[], None),
            Err(TokenError::BadSubject(_))
        ));
    }

    fn claims_at(iat: u64, nbf: Option<u64>) -> TokenClaims {
        TokenClaims {
            sub: "a@b".into(),
            iat,
            nbf,
            exp: None,
            scope: vec![AuthLevel::Read],
            jti: "x".into(),
        }
    }

    #[test]
    fn future_iat_or_nbf_is_refused_beyond_the_skew() {
        let k = key();
        let now = 1_700_000_000;
        let skew = MAX_CLOCK_SKEW.as_secs();
        let verify = |c: &TokenClaims| verify_token_at(&k, &sign_claims(&k, c).unwrap(), now);
        // within the skew: accepted
        assert!(verify(&claims_at(now + skew, None)).is_ok());
        assert!(verify(&claims_at(now, Some(now + skew))).is_ok());
        assert!(verify(&claims_at(now - 100, Some(now - 50))).is_ok());
        // beyond it: refused, naming the claim
        let e = verify(&claims_at(now + skew + 1, None)).unwrap_err();
        assert!(matches!(
            e,
            TokenError::NotYetValid { claim: "iat", ahead } if ahead == skew + 1
        ));
        assert!(e.to_string().contains("not valid yet"), "{e}");
        let e = verify(&claims_at(now, Some(now + 3600))).unwrap_err();
        assert!(matches!(
            e,
            TokenError::NotYetValid {
                claim: "nbf",
                ahead: 3600
            }
        ));
        assert!(e.to_string().contains("nbf is 3600 s in the future"), "{e}");
        // the real clock: a token issued a day from now
        let later = now_secs() + 86_400;
        let t = sign_claims(&k, &claims_at(later, None)).unwrap();
        assert!(matches!(
            verify_token(&k, &t),
            Err(TokenError::NotYetValid { claim: "iat", .. })
        ));
    }

    #[test]
    fn alg_none_is_refused() {
        // header {"alg":"none","typ":"JWT"}, claims {"sub":"a@b","iat":1,"jti":"x"}
        let t = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhQGIiLCJpYXQiOjEsImp0aSI6IngifQ.";
        assert!(verify_token(&key(), t).is_err());
    }

    #[test]
    fn key_file_is_created_private_and_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("POOL");
        let k1 = SigningKey::load_or_create(&path).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(k1.as_bytes().len(), KEY_LEN);
        let k2 = SigningKey::load_or_create(&path).unwrap();
        assert_eq!(k1.as_bytes(), k2.as_bytes());
        // no temporary files left behind
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(!format!("{k1:?}").contains('7'));
    }

    #[test]
    fn concurrent_creation_agrees_on_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("POOL");
        let keys: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| SigningKey::load_or_create(&path).unwrap()))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap().as_bytes().to_vec())
                .collect()
        });
        assert!(keys.iter().all(|k| k == &keys[0]));
        assert_eq!(fs::read(&path).unwrap(), keys[0]);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn short_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short");
        fs::write(&path, b"too short").unwrap();
        assert!(matches!(
            SigningKey::load(&path),
            Err(TokenError::KeyTooShort { len: 9, .. })
        ));
        assert!(SigningKey::from_bytes(vec![0u8; 31]).is_err());
        assert!(matches!(
            SigningKey::load(&dir.path().join("missing")),
            Err(TokenError::KeyIo { .. })
        ));
    }
}
