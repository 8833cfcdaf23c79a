//! The credential registry: every host credential the collector issued
//! through the join route, the join tokens already redeemed, and which
//! credentials are revoked.
//!
//! The rules ([`Registry::redeem`], [`Registry::revoke`],
//! [`Registry::prune`]) are pure; [`Registry::load`] and [`Registry::save`]
//! keep the whole registry in one JSON file in `SPOOL`
//! ([`REGISTRY_FILE_NAME`]), replaced atomically (a private temporary file
//! beside it, synced, then renamed over it), so a redeemed token and the
//! credential it paid for are recorded together or not at all.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use skua_proto::CredentialRecord;

/// The registry's file in `SPOOL`.
pub const REGISTRY_FILE_NAME: &str = "credentials.json";

/// Why the registry refused a change or could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The join token was redeemed before.
    #[error("join token {jti} was already used (a join token works once)")]
    TokenUsed {
        /// The token's id.
        jti: String,
    },
    /// The host already holds a credential that is not revoked: a second
    /// one would let two machines speak as the same host.
    #[error(
        "host {host} already holds credential {id}: revoke it first (`skua token revoke {host}`), \
         then join with a new token"
    )]
    HostTaken {
        /// The host name.
        host: String,
        /// Its live credential.
        id: String,
    },
    /// Nothing matches a revocation target.
    #[error("no credential has the id or host name `{0}`")]
    UnknownTarget(String),
    /// The file could not be read or written.
    #[error("credential registry {path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The registry's content, as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registry {
    /// Every credential issued, in issue order.
    #[serde(default)]
    pub credentials: Vec<CredentialRecord>,
    /// Redeemed join tokens: `jti` → the token's expiry (after which the
    /// token is refused as expired anyway, so the entry may be pruned).
    #[serde(default)]
    pub used_tokens: BTreeMap<String, u64>,
}

impl Registry {
    /// Records `record`, issued for the join token `jti` (expiring at
    /// `exp`), unless that token was redeemed before or the host already
    /// holds a credential that is not revoked (host names compared without
    /// case; a refused host keeps its token for a later try).
    pub fn redeem(
        &mut self,
        jti: &str,
        exp: u64,
        record: CredentialRecord,
    ) -> Result<(), RegistryError> {
        if self.used_tokens.contains_key(jti) {
            return Err(RegistryError::TokenUsed {
                jti: jti.to_string(),
            });
        }
        if let Some(live) = self
            .credentials
            .iter()
            .find(|c| c.revoked.is_none() && c.host.eq_ignore_ascii_case(&record.host))
        {
            return Err(RegistryError::HostTaken {
                host: record.host.clone(),
                id: live.id.clone(),
            });
        }
        self.used_tokens.insert(jti.to_string(), exp);
        self.credentials.push(record);
        Ok(())
    }

    /// Whether the join token `jti` was redeemed.
    pub fn token_used(&self, jti: &str) -> bool {
        self.used_tokens.contains_key(jti)
    }

    /// Revokes, at `now`, the credential whose id is `target` or every
    /// credential of the host named `target` (case-insensitively). Returns
    /// the credentials revoked now; those revoked before stay as they
    /// were. Refuses a target that names nothing.
    pub fn revoke(
        &mut self,
        target: &str,
        now: u64,
    ) -> Result<Vec<CredentialRecord>, RegistryError> {
        let target = target.trim();
        let id = target.to_ascii_lowercase();
        let matches = |c: &CredentialRecord| c.id == id || c.host.eq_ignore_ascii_case(target);
        if !self.credentials.iter().any(matches) {
            return Err(RegistryError::UnknownTarget(target.to_string()));
        }
        let mut revoked = Vec::new();
        for c in self.credentials.iter_mut().filter(|c| matches(c)) {
            if c.revoked.is_none() {
                c.revoked = Some(now);
                revoked.push(c.clone());
            }
        }
        Ok(revoked)
    }

    /// The ids of every revoked credential.
    pub fn revoked_ids(&self) -> Vec<String> {
        self.credentials
            .iter()
            .filter(|c| c.revoked.is_some())
            .map(|c| c.id.clone())
            .collect()
    }

    /// Forgets redeemed tokens that expired before `now` (they are refused
    /// as expired anyway). Returns whether anything was forgotten.
    pub fn prune(&mut self, now: u64) -> bool {
        let before = self.used_tokens.len();
        self.used_tokens.retain(|_, exp| *exp >= now);
        self.used_tokens.len() != before
    }

    /// Reads the registry from `path`; an absent file is an empty
    /// registry.
    pub fn load(path: &Path) -> Result<Registry, RegistryError> {
        let err = |message: String| RegistryError::File {
            path: path.to_path_buf(),
            message,
        };
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| err(e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registry::default()),
            Err(e) => Err(err(e.to_string())),
        }
    }

    /// Writes the registry to `path` atomically (mode 0600).
    pub fn save(&self, path: &Path) -> Result<(), RegistryError> {
        use std::os::unix::fs::OpenOptionsExt;
        let err = |message: String| RegistryError::File {
            path: path.to_path_buf(),
            message,
        };
        let text = serde_json::to_vec_pretty(self).map_err(|e| err(e.to_string()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let written = (|| -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&text)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)?;
            if let Some(dir) = path.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(err(e.to_string()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skua_proto::PoolRole;

    fn record(id: &str, host: &str, jti: &str) -> CredentialRecord {
        CredentialRecord {
            id: id.into(),
            host: host.into(),
            addresses: vec!["10.0.0.2".into()],
            roles: vec![PoolRole::Execute],
            issued: 100,
            token_jti: jti.into(),
            revoked: None,
        }
    }

    #[test]
    fn a_join_token_is_redeemed_once() {
        let mut r = Registry::default();
        r.redeem("j1", 500, record("0a", "exec1", "j1")).unwrap();
        assert!(r.token_used("j1"));
        let e = r
            .redeem("j1", 500, record("0b", "exec2", "j1"))
            .unwrap_err();
        assert!(matches!(e, RegistryError::TokenUsed { .. }));
        assert!(e.to_string().contains("already used"), "{e}");
        // the refused redemption recorded nothing
        assert_eq!(r.credentials.len(), 1);
        r.redeem("j2", 500, record("0b", "exec2", "j2")).unwrap();
        assert_eq!(r.credentials.len(), 2);
    }

    #[test]
    fn revoking_by_id_or_by_host() {
        let mut r = Registry::default();
        r.redeem("j1", 500, record("0a", "exec1", "j1")).unwrap();
        // a host with a live credential cannot get a second one, whatever
        // the case of its name; its token stays unused
        let e = r
            .redeem("j2", 500, record("0b", "Exec1", "j2"))
            .unwrap_err();
        assert!(matches!(e, RegistryError::HostTaken { .. }), "{e}");
        assert!(e.to_string().contains("revoke it first"), "{e}");
        assert!(!r.token_used("j2"));
        // once its credential is revoked (here by hand), it joins again
        r.credentials[0].revoked = Some(100);
        r.redeem("j2", 500, record("0b", "Exec1", "j2")).unwrap();
        r.credentials[0].revoked = None;
        r.redeem("j3", 500, record("0c", "exec2", "j3")).unwrap();
        let by_id = r.revoke("0C", 200).unwrap();
        assert_eq!(by_id.len(), 1);
        assert_eq!(by_id[0].revoked, Some(200));
        assert_eq!(r.revoked_ids(), vec!["0c".to_string()]);
        // a host name revokes every credential of that host
        let by_host = r.revoke("EXEC1", 300).unwrap();
        let ids: Vec<&str> = by_host.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["0a", "0b"]);
        // again: nothing new, and the first revocation time stays
        assert!(r.revoke("exec1", 400).unwrap().is_empty());
        assert_eq!(r.credentials[0].revoked, Some(300));
        assert!(matches!(
            r.revoke("nobody", 400),
            Err(RegistryError::UnknownTarget(_))
        ));
        assert_eq!(r.revoked_ids().len(), 3);
    }

    #[test]
    fn expired_tokens_are_pruned_but_credentials_stay() {
        let mut r = Registry::default();
        r.redeem("old", 100, record("0a", "h", "old")).unwrap();
        r.redeem("new", 1000, record("0b", "h2", "new")).unwrap();
        assert!(!r.prune(100));
        assert!(r.prune(101));
        assert!(!r.token_used("old"));
        assert!(r.token_used("new"));
        assert_eq!(r.credentials.len(), 2);
    }

    #[test]
    fn the_file_round_trips_privately_and_atomically() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REGISTRY_FILE_NAME);
        assert_eq!(Registry::load(&path).unwrap(), Registry::default());
        let mut r = Registry::default();
        r.redeem("j1", 500, record("0a", "exec1", "j1")).unwrap();
        r.save(&path).unwrap();
        r.revoke("0a", 7).unwrap();
        r.save(&path).unwrap();
        assert_eq!(Registry::load(&path).unwrap(), r);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // only the file itself: no temporary file left behind
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        std::fs::write(&path, b"{ not json").unwrap();
        let e = Registry::load(&path).unwrap_err();
        assert!(e.to_string().contains(REGISTRY_FILE_NAME), "{e}");
    }
}
