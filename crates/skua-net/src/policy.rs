//! Authorization policy: HTCondor's `ALLOW_<LEVEL>` / `DENY_<LEVEL>` lists
//! over identities, with the level hierarchy.
//!
//! Pure: no I/O, no clock.
//!
//! The rule for an identity and a level L:
//! 1. if an entry of `DENY_L` matches, L is refused (DENY beats ALLOW);
//! 2. otherwise if an entry of `ALLOW_L` matches, L is granted;
//! 3. otherwise L is granted exactly when a level that directly implies L is
//!    granted by this same rule (WRITE or NEGOTIATOR for READ, ADMINISTRATOR
//!    or DAEMON for WRITE). So `ALLOW_WRITE = alice@*` lets alice read, but
//!    `DENY_WRITE = alice@*` also stops her reading through ALLOW_ADMINISTRATOR.
//!
//! A level without lists is refused to everyone (HTCondor's current
//! semantics: an omitted list denies).
//!
//! Patterns are `user@domain` with at most one `*` on each side (`*@pool.org`,
//! `alice@*`, `condor@*.pool.org`), or `*` alone (everyone). Case is ignored.
//! Host restrictions (`user@domain/host`) are not supported and are rejected
//! by [`SecurityPolicy::validate`].
//!
//! Anonymous callers (`unauthenticated@unmapped`) are matched only by the
//! universal patterns `*` and `*@*`, and are granted nothing but READ, and
//! that only when [`SecurityPolicy::allow_anonymous_read`] is set.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use skua_proto::AuthLevel;

use crate::Identity;

/// Who holds which authorization level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecurityPolicy {
    /// `ALLOW_<LEVEL>`: patterns of identities granted the level.
    #[serde(default)]
    pub allow: BTreeMap<AuthLevel, Vec<String>>,
    /// `DENY_<LEVEL>`: patterns of identities refused the level, whatever
    /// the allow lists say.
    #[serde(default)]
    pub deny: BTreeMap<AuthLevel, Vec<String>>,
    /// Whether callers without credentials may use READ commands (when the
    /// READ lists grant `*`). Off by default.
    #[serde(default)]
    pub allow_anonymous_read: bool,
}

/// An invalid pattern in a policy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{list}_{level}: invalid entry `{pattern}`: {reason}")]
pub struct PolicyError {
    /// `ALLOW` or `DENY`.
    pub list: &'static str,
    /// The level whose list holds the entry.
    pub level: AuthLevel,
    /// The entry.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl SecurityPolicy {
    /// A policy granting nothing to anyone.
    pub fn deny_all() -> Self {
        SecurityPolicy::default()
    }

    /// HTCondor's recommended shape: everyone authenticated may read and
    /// write; `admins` administer; `daemons` hold DAEMON, NEGOTIATOR and
    /// ADMINISTRATOR.
    pub fn recommended<S: AsRef<str>>(daemons: &[S], admins: &[S]) -> Self {
        let daemons: Vec<String> = daemons.iter().map(|s| s.as_ref().to_string()).collect();
        let mut admin_list: Vec<String> = admins.iter().map(|s| s.as_ref().to_string()).collect();
        admin_list.extend(daemons.iter().cloned());
        SecurityPolicy::default()
            .allowing(AuthLevel::Read, ["*"])
            .allowing(AuthLevel::Write, ["*"])
            .allowing(AuthLevel::Administrator, admin_list)
            .allowing(AuthLevel::Daemon, daemons.clone())
            .allowing(AuthLevel::Negotiator, daemons)
    }

    /// Adds `patterns` to `ALLOW_<level>`.
    pub fn allowing<I, S>(mut self, level: AuthLevel, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow
            .entry(level)
            .or_default()
            .extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Adds `patterns` to `DENY_<level>`.
    pub fn denying<I, S>(mut self, level: AuthLevel, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deny
            .entry(level)
            .or_default()
            .extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Sets [`SecurityPolicy::allow_anonymous_read`].
    pub fn with_anonymous_read(mut self, allowed: bool) -> Self {
        self.allow_anonymous_read = allowed;
        self
    }

    /// Checks every pattern. A server refuses to start with an invalid
    /// policy: an entry that matched nothing would silently weaken a DENY
    /// list.
    pub fn validate(&self) -> Result<(), PolicyError> {
        for (list, lists) in [("ALLOW", &self.allow), ("DENY", &self.deny)] {
            for (level, patterns) in lists {
                for p in patterns {
                    check_pattern(p).map_err(|reason| PolicyError {
                        list,
                        level: *level,
                        pattern: p.clone(),
                        reason,
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Whether `who` holds `level`.
    pub fn permits(&self, who: &Identity, level: AuthLevel) -> bool {
        self.check(who, level).is_ok()
    }

    /// `Ok` if `who` holds `level`; otherwise why not, for the log and the
    /// caller (lowercase, no trailing period).
    pub fn check(&self, who: &Identity, level: AuthLevel) -> Result<(), String> {
        if who.is_anonymous() && !(level == AuthLevel::Read && self.allow_anonymous_read) {
            return Err(format!(
                "anonymous requests are not allowed {level}; authentication is required"
            ));
        }
        if self.denied_here(who, level) {
            return Err(format!("{who} is listed in DENY_{level}"));
        }
        if self.granted(who, level) {
            Ok(())
        } else {
            Err(format!(
                "no ALLOW_{level} entry (nor one of a level implying {level}) matches {who}"
            ))
        }
    }

    /// Every level `who` holds, in declaration order.
    pub fn levels(&self, who: &Identity) -> Vec<AuthLevel> {
        AuthLevel::ALL
            .into_iter()
            .filter(|l| self.permits(who, *l))
            .collect()
    }

    fn denied_here(&self, who: &Identity, level: AuthLevel) -> bool {
        self.deny
            .get(&level)
            .is_some_and(|ps| ps.iter().any(|p| pattern_matches(p, who)))
    }

    fn granted(&self, who: &Identity, level: AuthLevel) -> bool {
        if self.denied_here(who, level) {
            return false;
        }
        if self
            .allow
            .get(&level)
            .is_some_and(|ps| ps.iter().any(|p| pattern_matches(p, who)))
        {
            return true;
        }
        // The hierarchy is a finite DAG (see `AuthLevel::implied_by`), so
        // this recursion ends.
        level.implied_by().iter().any(|up| self.granted(who, *up))
    }
}

fn is_universal(pattern: &str) -> bool {
    pattern == "*" || pattern == "*@*"
}

fn check_pattern(p: &str) -> Result<(), &'static str> {
    if p.is_empty() {
        return Err("empty entry");
    }
    if p.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("entries contain no whitespace");
    }
    if p.contains('/') {
        return Err("host restrictions (user@domain/host) are not supported");
    }
    if p == "*" {
        return Ok(());
    }
    let Some((user, domain)) = p.split_once('@') else {
        return Err("expected user@domain or `*`");
    };
    if domain.contains('@') {
        return Err("more than one `@`");
    }
    if user.is_empty() || domain.is_empty() {
        return Err("empty user or domain (use `*`)");
    }
    if user.matches('*').count() > 1 || domain.matches('*').count() > 1 {
        return Err("at most one `*` on each side of the `@`");
    }
    Ok(())
}

/// Whether `pattern` matches `who` (see the module documentation). Invalid
/// patterns match nothing.
pub fn pattern_matches(pattern: &str, who: &Identity) -> bool {
    if who.is_anonymous() {
        return is_universal(pattern);
    }
    if pattern == "*" {
        return true;
    }
    if check_pattern(pattern).is_err() {
        return false;
    }
    let Some((user_pat, domain_pat)) = pattern.split_once('@') else {
        return false;
    };
    glob_matches(user_pat, &who.user) && glob_matches(domain_pat, &who.domain)
}

/// `pat` with at most one `*`, matched case-insensitively (ASCII).
fn glob_matches(pat: &str, text: &str) -> bool {
    let (pat, text) = (pat.to_ascii_lowercase(), text.to_ascii_lowercase());
    match pat.split_once('*') {
        None => pat == text,
        Some((prefix, suffix)) => {
            text.len() >= prefix.len() + suffix.len()
                && text.starts_with(prefix)
                && text.ends_with(suffix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skua_proto::AuthMethod;
    use AuthLevel::*;

    fn id(s: &str) -> Identity {
        Identity::parse(s, AuthMethod::Token).unwrap()
    }

    #[test]
    fn patterns() {
        let alice = id("alice@pool.org");
        assert!(pattern_matches("*", &alice));
        assert!(pattern_matches("*@*", &alice));
        assert!(pattern_matches("*@pool.org", &alice));
        assert!(pattern_matches("ALICE@POOL.ORG", &alice));
        assert!(pattern_matches("alice@*", &alice));
        assert!(pattern_matches("al*@*.org", &alice));
        assert!(pattern_matches("alice@*pool.org", &alice));
        assert!(!pattern_matches("bob@*", &alice));
        assert!(!pattern_matches("*@other.org", &alice));
        assert!(!pattern_matches("alice", &alice));
        assert!(!pattern_matches("a*e*@*", &alice));
        // prefix and suffix must not overlap
        assert!(!pattern_matches("alice*alice@*", &alice));
    }

    #[test]
    fn anonymous_matches_only_universal_patterns() {
        let anon = Identity::anonymous();
        assert!(pattern_matches("*", &anon));
        assert!(pattern_matches("*@*", &anon));
        assert!(!pattern_matches("*@unmapped", &anon));
        assert!(!pattern_matches("unauthenticated@*", &anon));
    }

    #[test]
    fn empty_policy_refuses_everything() {
        let p = SecurityPolicy::deny_all();
        for l in AuthLevel::ALL {
            assert!(!p.permits(&id("root@x"), l));
        }
        assert!(p.levels(&id("root@x")).is_empty());
    }

    #[test]
    fn implications_grant_lower_levels() {
        let p = SecurityPolicy::default()
            .allowing(Write, ["*@pool.org"])
            .allowing(Administrator, ["admin@pool.org"])
            .allowing(Daemon, ["condor@*"])
            .allowing(Negotiator, ["neg@pool.org"]);
        assert_eq!(p.levels(&id("alice@pool.org")), vec![Read, Write]);
        assert_eq!(
            p.levels(&id("admin@pool.org")),
            vec![Read, Write, Administrator]
        );
        assert_eq!(p.levels(&id("condor@else")), vec![Read, Write, Daemon]);
        assert_eq!(p.levels(&id("neg@pool.org")), vec![Read, Write, Negotiator]);
        assert!(p.levels(&id("alice@else")).is_empty());
    }

    #[test]
    fn negotiator_does_not_imply_write() {
        let p = SecurityPolicy::default().allowing(Negotiator, ["neg@x"]);
        assert_eq!(p.levels(&id("neg@x")), vec![Read, Negotiator]);
    }

    #[test]
    fn deny_beats_allow_and_blocks_the_chain() {
        let p = SecurityPolicy::default()
            .allowing(Read, ["*"])
            .allowing(Write, ["*"])
            .allowing(Administrator, ["bob@x"])
            .denying(Write, ["bob@*"]);
        assert_eq!(p.levels(&id("bob@x")), vec![Read, Administrator]);
        let err = p.check(&id("bob@x"), Write).unwrap_err();
        assert!(err.contains("DENY_WRITE"), "{err}");
        // without ALLOW_READ, bob's READ would have come only through WRITE
        let p = SecurityPolicy::default()
            .allowing(Administrator, ["bob@x"])
            .denying(Write, ["bob@x"]);
        assert_eq!(p.levels(&id("bob@x")), vec![Administrator]);
    }

    #[test]
    fn anonymous_only_reads_and_only_when_allowed() {
        let p = SecurityPolicy::default()
            .allowing(Read, ["*"])
            .allowing(Write, ["*"]);
        let anon = Identity::anonymous();
        assert!(p.levels(&anon).is_empty());
        let p = p.with_anonymous_read(true);
        assert_eq!(p.levels(&anon), vec![Read]);
        let p = SecurityPolicy::default()
            .allowing(Read, ["*@pool.org"])
            .with_anonymous_read(true);
        assert!(p.levels(&anon).is_empty());
    }

    #[test]
    fn validate_rejects_bad_entries() {
        for bad in [
            "", "alice", "a@b@c", "a@b/host", "a**@b", "*a*@b", "a@", "@b", "a b@c",
        ] {
            let p = SecurityPolicy::default().denying(Read, [bad]);
            assert!(p.validate().is_err(), "{bad:?}");
        }
        let p = SecurityPolicy::recommended(&["condor@*"], &["root@*"]);
        p.validate().unwrap();
        assert_eq!(
            p.levels(&id("condor@h")),
            vec![Read, Write, Administrator, Daemon, Negotiator]
        );
        assert_eq!(p.levels(&id("u@h")), vec![Read, Write]);
    }

    #[test]
    fn policy_serializes_with_level_names() {
        let p = SecurityPolicy::default().allowing(Read, ["*"]);
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains(r#""READ":["*"]"#), "{text}");
        assert_eq!(serde_json::from_str::<SecurityPolicy>(&text).unwrap(), p);
    }
}
