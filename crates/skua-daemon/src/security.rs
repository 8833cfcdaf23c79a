//! The security setup of a daemon: the ALLOW/DENY policy from the
//! configuration, the pool signing key, the daemon's own token, and where
//! users' tokens are found.

use std::path::{Path, PathBuf};
use std::time::Duration;

use skua_config::Config;
use skua_net::{AuthLevel, SecurityPolicy, SigningKey};

use crate::context::DaemonError;

/// The identity daemons use among themselves (HTCondor's `condor@domain`).
pub const DAEMON_USER: &str = "condor";

/// Splits an HTCondor list value (commas and/or blanks).
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split([',', ' ', '\t', '\n'])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn knob(config: &Config, name: &str) -> Result<Option<String>, DaemonError> {
    config
        .get(name)
        .map_err(|e| DaemonError::Config(e.to_string()))
}

/// `ALLOW_<LEVEL>` / `DENY_<LEVEL>` for every level. Unset lists default to
/// HTCondor's recommended policy: anyone authenticated may READ and WRITE;
/// ADMINISTRATOR, DAEMON and NEGOTIATOR belong to the daemons' identity
/// (`condor@*`) and to `owner`, the account the daemons run as (in a
/// personal pool, its user).
pub fn policy_from_config(config: &Config, owner: &str) -> Result<SecurityPolicy, DaemonError> {
    let mut policy = SecurityPolicy::deny_all();
    for level in AuthLevel::ALL {
        let allow = match knob(config, &format!("ALLOW_{}", level.as_str()))? {
            Some(v) => split_list(&v),
            None => match level {
                AuthLevel::Read | AuthLevel::Write => vec!["*".to_string()],
                _ => vec![format!("{DAEMON_USER}@*"), format!("{owner}@*")],
            },
        };
        policy = policy.allowing(level, allow);
        if let Some(v) = knob(config, &format!("DENY_{}", level.as_str()))? {
            policy = policy.denying(level, split_list(&v));
        }
    }
    policy.allow_anonymous_read = anonymous_read(config)?;
    policy
        .validate()
        .map_err(|e| DaemonError::Config(format!("security policy: {e}")))?;
    Ok(policy)
}

/// Whether callers without credentials may READ (where `ALLOW_READ`
/// grants `*`): HTCondor's `SEC_READ_AUTHENTICATION` (default
/// `SEC_DEFAULT_AUTHENTICATION`) set to `OPTIONAL` or `NEVER`, as
/// `use SECURITY : recommended` does. Unset, authentication is required.
fn anonymous_read(config: &Config) -> Result<bool, DaemonError> {
    let value = match knob(config, "SEC_READ_AUTHENTICATION")? {
        Some(v) => Some(v),
        None => knob(config, "SEC_DEFAULT_AUTHENTICATION")?,
    };
    Ok(value.is_some_and(|v| {
        let v = v.trim();
        v.eq_ignore_ascii_case("optional") || v.eq_ignore_ascii_case("never")
    }))
}

/// The pool signing key file (`SEC_TOKEN_POOL_SIGNING_KEY_FILE`).
pub fn signing_key_path(config: &Config) -> Result<Option<PathBuf>, DaemonError> {
    Ok(knob(config, "SEC_TOKEN_POOL_SIGNING_KEY_FILE")?.map(PathBuf::from))
}

/// Loads the pool signing key, creating it (mode 0600) if `create` and it
/// does not exist yet, as HTCondor's central manager does at first start.
pub fn load_signing_key(config: &Config, create: bool) -> Result<Option<SigningKey>, DaemonError> {
    let Some(path) = signing_key_path(config)? else {
        return Ok(None);
    };
    if !create && !path.exists() {
        return Ok(None);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| DaemonError::Io(format!("creating {}: {e}", parent.display())))?;
    }
    let key = if create {
        SigningKey::load_or_create(&path)
    } else {
        SigningKey::load(&path)
    };
    key.map(Some)
        .map_err(|e| DaemonError::Security(format!("{}: {e}", path.display())))
}

/// A token for the daemons' own identity, valid at the daemon levels.
pub fn daemon_token(key: &SigningKey, uid_domain: &str) -> Result<String, DaemonError> {
    skua_net::issue_token(
        key,
        &format!("{DAEMON_USER}@{uid_domain}"),
        &[
            AuthLevel::Daemon,
            AuthLevel::Administrator,
            AuthLevel::Negotiator,
        ],
        Some(Duration::from_secs(24 * 3600)),
    )
    .map_err(|e| DaemonError::Security(e.to_string()))
}

/// Directories searched for a user's token: `SEC_TOKEN_DIRECTORY` (default
/// `~/.skua/tokens.d`), then `SEC_TOKEN_SYSTEM_DIRECTORY`.
pub fn token_dirs(config: &Config, home: Option<&Path>) -> Result<Vec<PathBuf>, DaemonError> {
    let mut dirs = Vec::new();
    match knob(config, "SEC_TOKEN_DIRECTORY")? {
        Some(d) => dirs.push(PathBuf::from(d)),
        None => {
            if let Some(h) = home {
                dirs.push(h.join(".skua").join("tokens.d"));
            }
        }
    }
    if let Some(d) = knob(config, "SEC_TOKEN_SYSTEM_DIRECTORY")? {
        dirs.push(PathBuf::from(d));
    }
    Ok(dirs)
}

/// The first readable token in `dirs` (files in name order).
pub fn find_token(dirs: &[PathBuf]) -> Option<String> {
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut names: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        names.sort();
        for p in names {
            if let Ok(t) = std::fs::read_to_string(&p) {
                let t = t.trim();
                if !t.is_empty() {
                    return Some(t.to_string());
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use skua_config::{LoadOptions, MemoryFiles};
    use skua_net::{AuthMethod, Identity, PeerHost};

    fn config(text: &str) -> Config {
        let files = MemoryFiles::new().with("/etc/skua/skua_config", text);
        Config::load(
            &files,
            &LoadOptions::new().main_file("/etc/skua/skua_config"),
        )
        .expect("configuration")
    }

    fn levels(text: &str, who: &Identity, from: &str) -> Vec<AuthLevel> {
        let policy = policy_from_config(&config(text), "owner").expect("policy");
        let compiled = policy
            .compile(&mut |n| Err(format!("{n}: not resolved in tests")), &[])
            .expect("compiled");
        compiled.levels(who, &PeerHost::ip(from.parse().expect("ip")))
    }

    #[test]
    fn anonymous_reads_only_when_read_authentication_is_optional() {
        let anon = Identity::anonymous();
        assert!(levels("", &anon, "10.0.0.1").is_empty());
        assert_eq!(
            levels("SEC_READ_AUTHENTICATION = OPTIONAL", &anon, "10.0.0.1"),
            vec![AuthLevel::Read]
        );
        assert_eq!(
            levels("SEC_DEFAULT_AUTHENTICATION = never", &anon, "10.0.0.1"),
            vec![AuthLevel::Read]
        );
        assert!(levels(
            "SEC_DEFAULT_AUTHENTICATION = OPTIONAL\nSEC_READ_AUTHENTICATION = REQUIRED",
            &anon,
            "10.0.0.1"
        )
        .is_empty());
        // `use SECURITY : recommended` makes READ authentication optional
        assert_eq!(
            levels("use SECURITY : recommended", &anon, "10.0.0.1"),
            vec![AuthLevel::Read]
        );
    }

    #[test]
    fn host_entries_come_from_the_configuration() {
        let alice = Identity::new("alice", "pool.test", AuthMethod::Token).expect("identity");
        let text = "ALLOW_WRITE = *@pool.test/10.77.0.0/16\nDENY_WRITE = 10.77.9.*";
        assert_eq!(
            levels(text, &alice, "10.77.0.5"),
            vec![AuthLevel::Read, AuthLevel::Write]
        );
        assert_eq!(levels(text, &alice, "10.78.0.5"), vec![AuthLevel::Read]);
        assert_eq!(levels(text, &alice, "10.77.9.5"), vec![AuthLevel::Read]);
        let err = policy_from_config(&config("ALLOW_READ = 10.77.*.1"), "owner").unwrap_err();
        assert!(err.to_string().contains("ALLOW_READ"), "{err}");
    }
}
