//! Authorization policy: HTCondor's `ALLOW_<LEVEL>` / `DENY_<LEVEL>` lists
//! over identities and the hosts they call from, with the level hierarchy.
//!
//! Pure: no I/O, no clock. Host names in the lists are resolved by the
//! caller's resolver when the policy is compiled ([`SecurityPolicy::compile`]).
//!
//! The rule for a caller (identity and host) and a level L:
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
//! An entry is `user@domain/host`, read as HTCondor reads it:
//! - two `/`: `user/network/mask`;
//! - one `/`: `user/host` when an `@` comes before it or the entry starts
//!   with `*`; otherwise `network/mask` when that is what it is (any user);
//!   otherwise `user/host`;
//! - no `/`: a user when the entry has an `@` (any host), else a host (any
//!   user); `*` alone is everyone from everywhere.
//!
//! The user part is `*` (anyone, anonymous callers included) or
//! `user@domain` with at most one `*` on each side (`*@pool.org`,
//! `alice@*`, `condor@*.pool.org`); case is ignored. Anonymous callers
//! (`unauthenticated@unmapped`) are matched only by the universal user
//! patterns `*` and `*@*`, and are granted nothing but READ, and that only
//! when [`SecurityPolicy::allow_anonymous_read`] is set.
//!
//! The host part is one of: `*`; an IP address (`10.77.1.5`, `fd00::5`);
//! an IPv4 prefix with a trailing `*` (`10.77.*`); a network with a mask
//! (`10.77.0.0/24`, `10.77.0.0/255.255.255.0`, `fd00::/64`); a host name
//! (`submit.pool.org`, resolved to its addresses when the policy is
//! compiled; a name that does not resolve matches nothing); a host name
//! with a leading `*` (`*.pool.org`, matched against the names the peer is
//! known by); `{:local_ips:}` (this host's own addresses).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};
use skua_proto::AuthLevel;

use crate::Identity;

/// Who holds which authorization level: the lists as configured.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecurityPolicy {
    /// `ALLOW_<LEVEL>`: entries granted the level.
    #[serde(default)]
    pub allow: BTreeMap<AuthLevel, Vec<String>>,
    /// `DENY_<LEVEL>`: entries refused the level, whatever the allow lists
    /// say.
    #[serde(default)]
    pub deny: BTreeMap<AuthLevel, Vec<String>>,
    /// Whether callers without credentials may use READ commands (when the
    /// READ lists grant `*`). Off by default.
    #[serde(default)]
    pub allow_anonymous_read: bool,
}

/// An invalid entry in a policy.
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

/// Where a request comes from, as host entries see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerHost {
    /// The addresses the peer is known by: its address for a TCP peer; for
    /// a Unix-socket peer, this host's (loopback included).
    pub ips: Vec<IpAddr>,
    /// Host names the peer is known by (lower case), for `*.domain`
    /// entries: for a TCP peer, its confirmed reverse name (found only when
    /// the policy has such entries); for a Unix-socket peer, this host's
    /// names.
    pub names: Vec<String>,
}

impl PeerHost {
    /// A TCP peer at `ip`.
    pub fn ip(ip: IpAddr) -> Self {
        PeerHost {
            ips: vec![canonical(ip)],
            names: Vec::new(),
        }
    }

    /// A peer on this host (a Unix socket): 127.0.0.1, ::1, `local_ips`
    /// and `names`.
    pub fn local(local_ips: &[IpAddr], names: &[String]) -> Self {
        let mut ips = vec![
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ];
        for ip in local_ips {
            let ip = canonical(*ip);
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
        let mut all_names = vec!["localhost".to_string()];
        all_names.extend(names.iter().map(|n| n.to_ascii_lowercase()));
        PeerHost {
            ips,
            names: all_names,
        }
    }
}

/// An IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`, as a dual-stack
/// listener reports IPv4 peers) is its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// The user part of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
enum UserPat {
    /// `*` or `*@*`: everyone, anonymous callers included.
    Any,
    /// `user@domain`, each side with at most one `*`.
    Glob { user: String, domain: String },
}

/// The host part of an entry, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
enum HostSpec {
    Any,
    Ip(IpAddr),
    /// `10.77.*`: the leading octets.
    Prefix(Vec<u8>),
    Net {
        addr: IpAddr,
        bits: u8,
    },
    /// A host name, resolved at compile time.
    Name(String),
    /// `*.pool.org`: the suffix, `.pool.org`.
    NameSuffix(String),
    LocalIps,
}

/// The host part of an entry, ready to match.
#[derive(Clone, Debug, PartialEq, Eq)]
enum HostPat {
    Any,
    Ip(IpAddr),
    Prefix(Vec<u8>),
    Net {
        addr: IpAddr,
        bits: u8,
    },
    /// A name and the addresses it resolved to (none if it did not).
    Name {
        name: String,
        ips: Vec<IpAddr>,
    },
    NameSuffix(String),
}

type ParsedLists = BTreeMap<AuthLevel, Vec<Entry<HostSpec>>>;

/// One parsed entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry<H> {
    user: UserPat,
    host: H,
}

/// A policy ready to answer: every entry parsed, host names resolved.
/// Built once, when a server starts ([`SecurityPolicy::compile`]).
#[derive(Clone, Debug, Default)]
pub struct CompiledPolicy {
    allow: BTreeMap<AuthLevel, Vec<Entry<HostPat>>>,
    deny: BTreeMap<AuthLevel, Vec<Entry<HostPat>>>,
    allow_anonymous_read: bool,
    unresolved: Vec<(String, String)>,
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

    /// Checks every entry. A server refuses to start with an invalid
    /// policy: an entry that matched nothing would silently weaken a DENY
    /// list.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.parsed().map(|_| ())
    }

    /// Whether any entry names a host by name (so compiling resolves).
    pub fn names_hosts(&self) -> bool {
        self.parsed().is_ok_and(|(allow, deny)| {
            allow
                .values()
                .chain(deny.values())
                .flatten()
                .any(|e| matches!(e.host, HostSpec::Name(_)))
        })
    }

    /// Every entry parsed, by list.
    fn parsed(&self) -> Result<(ParsedLists, ParsedLists), PolicyError> {
        let parse = |list: &'static str, lists: &BTreeMap<AuthLevel, Vec<String>>| {
            let mut out: ParsedLists = BTreeMap::new();
            for (level, patterns) in lists {
                let entries = out.entry(*level).or_default();
                for p in patterns {
                    entries.push(parse_entry(p).map_err(|reason| PolicyError {
                        list,
                        level: *level,
                        pattern: p.clone(),
                        reason,
                    })?);
                }
            }
            Ok(out)
        };
        Ok((parse("ALLOW", &self.allow)?, parse("DENY", &self.deny)?))
    }

    /// Parses every entry and resolves host names once, through `resolve`
    /// (a name to its addresses, or why not); `local_ips` are this host's
    /// addresses, for `{:local_ips:}`. A name that does not resolve matches
    /// nothing; it is listed in [`CompiledPolicy::unresolved`] for the log.
    pub fn compile(
        &self,
        resolve: &mut dyn FnMut(&str) -> Result<Vec<IpAddr>, String>,
        local_ips: &[IpAddr],
    ) -> Result<CompiledPolicy, PolicyError> {
        let (allow, deny) = self.parsed()?;
        let mut resolved: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
        let mut unresolved = Vec::new();
        let mut lower = |lists: BTreeMap<AuthLevel, Vec<Entry<HostSpec>>>| {
            let mut out: BTreeMap<AuthLevel, Vec<Entry<HostPat>>> = BTreeMap::new();
            for (level, entries) in lists {
                let list = out.entry(level).or_default();
                for e in entries {
                    let hosts = match e.host {
                        HostSpec::Any => vec![HostPat::Any],
                        HostSpec::Ip(ip) => vec![HostPat::Ip(ip)],
                        HostSpec::Prefix(p) => vec![HostPat::Prefix(p)],
                        HostSpec::Net { addr, bits } => vec![HostPat::Net { addr, bits }],
                        HostSpec::NameSuffix(s) => vec![HostPat::NameSuffix(s)],
                        HostSpec::LocalIps => local_ips
                            .iter()
                            .map(|ip| HostPat::Ip(canonical(*ip)))
                            .collect(),
                        HostSpec::Name(name) => {
                            let ips = match resolved.get(&name) {
                                Some(ips) => ips.clone(),
                                None => {
                                    let ips = match resolve(&name) {
                                        Ok(ips) if !ips.is_empty() => {
                                            ips.into_iter().map(canonical).collect()
                                        }
                                        Ok(_) => {
                                            unresolved
                                                .push((name.clone(), "no address".to_string()));
                                            Vec::new()
                                        }
                                        Err(why) => {
                                            unresolved.push((name.clone(), why));
                                            Vec::new()
                                        }
                                    };
                                    resolved.insert(name.clone(), ips.clone());
                                    ips
                                }
                            };
                            vec![HostPat::Name { name, ips }]
                        }
                    };
                    list.extend(hosts.into_iter().map(|host| Entry {
                        user: e.user.clone(),
                        host,
                    }));
                }
            }
            out
        };
        let allow = lower(allow);
        let deny = lower(deny);
        Ok(CompiledPolicy {
            allow,
            deny,
            allow_anonymous_read: self.allow_anonymous_read,
            unresolved,
        })
    }
}

impl CompiledPolicy {
    /// Whether callers without credentials may use READ commands.
    pub fn allow_anonymous_read(&self) -> bool {
        self.allow_anonymous_read
    }

    /// Host names of the lists that did not resolve, with why: they match
    /// nothing (a server logs them at start).
    pub fn unresolved(&self) -> &[(String, String)] {
        &self.unresolved
    }

    /// Whether any entry matches peers by a name pattern (`*.pool.org`), so
    /// the peer's names are worth finding.
    pub fn matches_names(&self) -> bool {
        self.allow
            .values()
            .chain(self.deny.values())
            .flatten()
            .any(|e| matches!(e.host, HostPat::NameSuffix(_)))
    }

    /// Whether `who` calling from `peer` holds `level`.
    pub fn permits(&self, who: &Identity, peer: &PeerHost, level: AuthLevel) -> bool {
        self.check(who, peer, level).is_ok()
    }

    /// `Ok` if `who` calling from `peer` holds `level`; otherwise why not,
    /// for the log and the caller (lowercase, no trailing period).
    pub fn check(&self, who: &Identity, peer: &PeerHost, level: AuthLevel) -> Result<(), String> {
        if who.is_anonymous() && !(level == AuthLevel::Read && self.allow_anonymous_read) {
            return Err(format!(
                "anonymous requests are not allowed {level}; authentication is required"
            ));
        }
        let from = match peer.ips.as_slice() {
            [ip] => format!(" from {ip}"),
            _ if peer.ips.is_empty() => String::new(),
            _ => " from this host".to_string(),
        };
        if self.denied_here(who, peer, level) {
            return Err(format!("{who}{from} is listed in DENY_{level}"));
        }
        if self.granted(who, peer, level) {
            Ok(())
        } else {
            Err(format!(
                "no ALLOW_{level} entry (nor one of a level implying {level}) matches {who}{from}"
            ))
        }
    }

    /// Every level `who` calling from `peer` holds, in declaration order.
    pub fn levels(&self, who: &Identity, peer: &PeerHost) -> Vec<AuthLevel> {
        AuthLevel::ALL
            .into_iter()
            .filter(|l| self.permits(who, peer, *l))
            .collect()
    }

    fn denied_here(&self, who: &Identity, peer: &PeerHost, level: AuthLevel) -> bool {
        self.deny
            .get(&level)
            .is_some_and(|es| es.iter().any(|e| e.matches(who, peer)))
    }

    fn granted(&self, who: &Identity, peer: &PeerHost, level: AuthLevel) -> bool {
        if self.denied_here(who, peer, level) {
            return false;
        }
        if self
            .allow
            .get(&level)
            .is_some_and(|es| es.iter().any(|e| e.matches(who, peer)))
        {
            return true;
        }
        // The hierarchy is a finite DAG (see `AuthLevel::implied_by`), so
        // this recursion ends.
        level
            .implied_by()
            .iter()
            .any(|up| self.granted(who, peer, *up))
    }
}

impl Entry<HostPat> {
    fn matches(&self, who: &Identity, peer: &PeerHost) -> bool {
        self.user.matches(who) && self.host.matches(peer)
    }
}

impl UserPat {
    fn matches(&self, who: &Identity) -> bool {
        match self {
            UserPat::Any => true,
            UserPat::Glob { .. } if who.is_anonymous() => false,
            UserPat::Glob { user, domain } => {
                glob_matches(user, &who.user) && glob_matches(domain, &who.domain)
            }
        }
    }
}

impl HostPat {
    fn matches(&self, peer: &PeerHost) -> bool {
        match self {
            HostPat::Any => true,
            HostPat::Ip(ip) => peer.ips.contains(ip),
            HostPat::Prefix(octets) => peer.ips.iter().any(|ip| match ip {
                IpAddr::V4(v4) => v4.octets().starts_with(octets),
                IpAddr::V6(_) => false,
            }),
            HostPat::Net { addr, bits } => peer.ips.iter().any(|ip| in_network(*ip, *addr, *bits)),
            HostPat::Name { name, ips } => {
                peer.ips.iter().any(|ip| ips.contains(ip))
                    || peer.names.iter().any(|n| n.eq_ignore_ascii_case(name))
            }
            HostPat::NameSuffix(suffix) => peer.names.iter().any(|n| {
                n.len() > suffix.len()
                    && n.to_ascii_lowercase()
                        .ends_with(&suffix.to_ascii_lowercase())
            }),
        }
    }
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Parses one entry (see the module documentation).
fn parse_entry(p: &str) -> Result<Entry<HostSpec>, &'static str> {
    if p.is_empty() {
        return Err("empty entry");
    }
    if p.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("entries contain no whitespace");
    }
    let (user, host) = match p.matches('/').count() {
        0 if p == "*" => ("*", "*"),
        0 if p.contains('@') => (p, "*"),
        0 => ("*", p),
        1 => {
            let (before, after) = p.split_once('/').unwrap_or((p, ""));
            if before.contains('@') || before.starts_with('*') {
                (before, after)
            } else if parse_network(p).is_ok() {
                ("*", p)
            } else {
                (before, after)
            }
        }
        2 => {
            let (user, net) = p.split_once('/').unwrap_or((p, ""));
            (user, net)
        }
        _ => return Err("more than two `/` (expected user@domain/host or user/network/mask)"),
    };
    Ok(Entry {
        user: parse_user(user)?,
        host: parse_host(host)?,
    })
}

fn parse_user(u: &str) -> Result<UserPat, &'static str> {
    if u == "*" || u == "*@*" {
        return Ok(UserPat::Any);
    }
    let Some((user, domain)) = u.split_once('@') else {
        return Err("the user part is user@domain or `*`");
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
    Ok(UserPat::Glob {
        user: user.to_string(),
        domain: domain.to_string(),
    })
}

fn parse_host(h: &str) -> Result<HostSpec, &'static str> {
    if h.is_empty() {
        return Err("empty host (use `*`)");
    }
    if h == "*" {
        return Ok(HostSpec::Any);
    }
    if h.eq_ignore_ascii_case("{:local_ips:}") {
        return Ok(HostSpec::LocalIps);
    }
    if h.contains('/') {
        return parse_network(h);
    }
    if let Ok(ip) = h.parse::<IpAddr>() {
        return Ok(HostSpec::Ip(canonical(ip)));
    }
    if let Some(prefix) = h.strip_suffix(".*") {
        if prefix.chars().all(|c| c.is_ascii_digit() || c == '.') {
            let octets: Result<Vec<u8>, _> = prefix.split('.').map(str::parse::<u8>).collect();
            return match octets {
                Ok(o) if !o.is_empty() && o.len() < 4 => Ok(HostSpec::Prefix(o)),
                _ => Err("an address with a trailing `*` is 1 to 3 octets then `.*` (10.77.*)"),
            };
        }
    }
    if let Some(suffix) = h.strip_prefix('*') {
        if !suffix.starts_with('.') || !valid_host_name(&suffix[1..]) {
            return Err("a host name with a wildcard is `*.domain` (the `*` leading)");
        }
        return Ok(HostSpec::NameSuffix(suffix.to_ascii_lowercase()));
    }
    if h.contains('*') {
        return Err(
            "a `*` in a host goes at the end of an address (10.77.*) or the start of a name (*.pool.org)",
        );
    }
    if !valid_host_name(h) || h.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err("not an address, a network/mask or a host name");
    }
    Ok(HostSpec::Name(h.to_ascii_lowercase()))
}

fn valid_host_name(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// `network/bits` or `network/mask` (a dotted IPv4 mask of contiguous
/// ones).
fn parse_network(h: &str) -> Result<HostSpec, &'static str> {
    const BAD: &str =
        "a network is address/bits or address/mask (10.0.0.0/24, 10.0.0.0/255.255.255.0)";
    let (net, mask) = h.split_once('/').ok_or(BAD)?;
    let addr: IpAddr = net.parse().map_err(|_| BAD)?;
    let addr = canonical(addr);
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits = if let Ok(bits) = mask.parse::<u8>() {
        bits
    } else {
        let m: Ipv4Addr = mask.parse().map_err(|_| BAD)?;
        if !addr.is_ipv4() {
            return Err(BAD);
        }
        let m = u32::from(m);
        if m.leading_ones() + m.trailing_zeros() != 32 {
            return Err("a network mask is contiguous ones (255.255.192.0)");
        }
        m.leading_ones() as u8
    };
    if bits > max {
        return Err("a network's prefix is longer than its address");
    }
    Ok(HostSpec::Net { addr, bits })
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

    fn ip(s: &str) -> PeerHost {
        PeerHost::ip(s.parse().unwrap())
    }

    /// A resolver that knows `submit.pool.test` (10.77.0.5, fd00::5) and
    /// nothing else.
    fn resolver(name: &str) -> Result<Vec<IpAddr>, String> {
        match name {
            "submit.pool.test" => Ok(vec![
                "10.77.0.5".parse().unwrap(),
                "fd00::5".parse().unwrap(),
            ]),
            other => Err(format!("{other}: unknown host")),
        }
    }

    const LOCAL: &[&str] = &["10.77.0.9"];

    fn compiled(p: &SecurityPolicy) -> CompiledPolicy {
        let local: Vec<IpAddr> = LOCAL.iter().map(|s| s.parse().unwrap()).collect();
        p.compile(&mut resolver, &local).unwrap()
    }

    /// Whether the single entry `entry` in ALLOW_READ lets `who` read from
    /// `peer`.
    fn matches(entry: &str, who: &Identity, peer: &PeerHost) -> bool {
        let p = SecurityPolicy::default()
            .allowing(Read, [entry])
            .with_anonymous_read(true);
        compiled(&p).permits(who, peer, Read)
    }

    fn anywhere() -> PeerHost {
        ip("192.0.2.1")
    }

    #[test]
    fn user_patterns() {
        let alice = id("alice@pool.org");
        let at = anywhere();
        assert!(matches("*", &alice, &at));
        assert!(matches("*@*", &alice, &at));
        assert!(matches("*@pool.org", &alice, &at));
        assert!(matches("ALICE@POOL.ORG", &alice, &at));
        assert!(matches("alice@*", &alice, &at));
        assert!(matches("al*@*.org", &alice, &at));
        assert!(matches("alice@*pool.org", &alice, &at));
        assert!(!matches("bob@*", &alice, &at));
        assert!(!matches("*@other.org", &alice, &at));
        // prefix and suffix must not overlap
        assert!(!matches("alice*alice@*", &alice, &at));
    }

    #[test]
    fn anonymous_matches_only_universal_user_patterns() {
        let anon = Identity::anonymous();
        let at = anywhere();
        assert!(matches("*", &anon, &at));
        assert!(matches("*@*", &anon, &at));
        assert!(matches("*/192.0.2.1", &anon, &at));
        assert!(matches("192.0.2.*", &anon, &at));
        assert!(!matches("*@unmapped", &anon, &at));
        assert!(!matches("unauthenticated@*", &anon, &at));
        assert!(!matches("*@*/10.0.0.0/8", &anon, &at));
    }

    #[test]
    fn an_entry_with_two_slashes_is_user_network_mask() {
        let e = parse_entry("alice@pool.org/10.77.0.0/16").unwrap();
        assert_eq!(
            e.user,
            UserPat::Glob {
                user: "alice".into(),
                domain: "pool.org".into()
            }
        );
        assert_eq!(
            e.host,
            HostSpec::Net {
                addr: "10.77.0.0".parse().unwrap(),
                bits: 16
            }
        );
        let e = parse_entry("*/10.77.0.0/255.255.192.0").unwrap();
        assert_eq!(e.user, UserPat::Any);
        assert_eq!(
            e.host,
            HostSpec::Net {
                addr: "10.77.0.0".parse().unwrap(),
                bits: 18
            }
        );
    }

    #[test]
    fn an_entry_with_one_slash() {
        // an `@` before the slash: user/host
        let e = parse_entry("alice@pool.org/10.77.0.5").unwrap();
        assert!(matches!(e.user, UserPat::Glob { .. }));
        assert_eq!(e.host, HostSpec::Ip("10.77.0.5".parse().unwrap()));
        // a leading `*`: user/host
        let e = parse_entry("*/submit.pool.test").unwrap();
        assert_eq!(e.user, UserPat::Any);
        assert_eq!(e.host, HostSpec::Name("submit.pool.test".into()));
        // otherwise a network when it is one
        let e = parse_entry("10.77.0.0/24").unwrap();
        assert_eq!(e.user, UserPat::Any);
        assert_eq!(
            e.host,
            HostSpec::Net {
                addr: "10.77.0.0".parse().unwrap(),
                bits: 24
            }
        );
        let e = parse_entry("10.77.0.0/255.255.255.0").unwrap();
        assert_eq!(
            e.host,
            HostSpec::Net {
                addr: "10.77.0.0".parse().unwrap(),
                bits: 24
            }
        );
        // else user/host, and a user without `@` is an error
        let err = parse_entry("alice/submit.pool.test").unwrap_err();
        assert!(err.contains("user@domain"), "{err}");
    }

    #[test]
    fn an_entry_without_slash_is_a_user_with_at_else_a_host() {
        let e = parse_entry("alice@pool.org").unwrap();
        assert!(matches!(e.user, UserPat::Glob { .. }));
        assert_eq!(e.host, HostSpec::Any);
        let e = parse_entry("submit.pool.test").unwrap();
        assert_eq!(e.user, UserPat::Any);
        assert_eq!(e.host, HostSpec::Name("submit.pool.test".into()));
        let e = parse_entry("10.77.*").unwrap();
        assert_eq!(e.user, UserPat::Any);
        assert_eq!(e.host, HostSpec::Prefix(vec![10, 77]));
        let e = parse_entry("*.pool.test").unwrap();
        assert_eq!(e.host, HostSpec::NameSuffix(".pool.test".into()));
        let e = parse_entry("*").unwrap();
        assert_eq!((e.user, e.host), (UserPat::Any, HostSpec::Any));
        let e = parse_entry("{:local_ips:}").unwrap();
        assert_eq!(e.host, HostSpec::LocalIps);
    }

    #[test]
    fn host_patterns_match_addresses() {
        let alice = id("alice@pool.org");
        let inside = ip("10.77.0.5");
        let outside = ip("10.78.0.5");
        for entry in [
            "10.77.0.5",
            "10.77.*",
            "10.77.0.0/24",
            "10.77.0.0/255.255.0.0",
            "alice@*/10.77.0.5",
            "alice@pool.org/10.77.0.0/16",
            "*/10.77.0.0/16",
            "submit.pool.test",
            "*/submit.pool.test",
        ] {
            assert!(
                matches(entry, &alice, &inside),
                "{entry} should match 10.77.0.5"
            );
            assert!(
                !matches(entry, &alice, &outside),
                "{entry} should not match 10.78.0.5"
            );
        }
        assert!(matches("10.*", &alice, &outside));
        assert!(!matches("10.*", &alice, &ip("11.77.0.5")));
        // the user part still counts
        assert!(!matches("bob@*/10.77.0.5", &alice, &inside));
        // IPv6, and IPv4 peers seen through a dual-stack socket
        assert!(matches("fd00::/64", &alice, &ip("fd00::5")));
        assert!(!matches("fd00::/64", &alice, &ip("fd01::5")));
        assert!(matches("submit.pool.test", &alice, &ip("fd00::5")));
        assert!(matches("10.77.*", &alice, &ip("::ffff:10.77.0.5")));
        assert!(!matches("10.77.*", &alice, &ip("fd00::5")));
        // /0 is everyone of that family, /32 one address
        assert!(matches("0.0.0.0/0", &alice, &outside));
        assert!(matches("10.77.0.5/32", &alice, &inside));
        assert!(!matches("10.77.0.4/32", &alice, &inside));
    }

    #[test]
    fn name_patterns_match_the_peers_names() {
        let alice = id("alice@pool.org");
        let named = PeerHost {
            ips: vec!["10.77.0.7".parse().unwrap()],
            names: vec!["exec1.pool.test".into()],
        };
        assert!(matches("*.pool.test", &alice, &named));
        assert!(matches("*.POOL.test", &alice, &named));
        assert!(!matches("*.other.test", &alice, &named));
        // a peer known by no name matches no name pattern
        assert!(!matches("*.pool.test", &alice, &ip("10.77.0.7")));
        // the suffix must follow a label: `xpool.test` is not `*.pool.test`
        let near = PeerHost {
            ips: vec![],
            names: vec!["xpool.test".into()],
        };
        assert!(!matches("*.pool.test", &alice, &near));
    }

    #[test]
    fn a_name_that_does_not_resolve_matches_nothing_and_is_reported() {
        let p = SecurityPolicy::default()
            .allowing(Read, ["nowhere.invalid"])
            .allowing(Write, ["submit.pool.test"]);
        assert!(p.names_hosts());
        let c = compiled(&p);
        assert_eq!(c.unresolved().len(), 1);
        assert_eq!(c.unresolved()[0].0, "nowhere.invalid");
        assert!(c.unresolved()[0].1.contains("unknown host"));
        let alice = id("alice@pool.org");
        assert_eq!(c.levels(&alice, &ip("10.77.0.5")), vec![Read, Write]);
        assert!(c.levels(&alice, &ip("10.77.0.6")).is_empty());
        // a name is resolved once however often it appears
        let mut calls = 0;
        let p = SecurityPolicy::default()
            .allowing(Read, ["submit.pool.test"])
            .denying(Write, ["submit.pool.test"]);
        p.compile(
            &mut |n| {
                calls += 1;
                resolver(n)
            },
            &[],
        )
        .unwrap();
        assert_eq!(calls, 1);
    }

    #[test]
    fn the_local_host_is_loopback_and_its_own_addresses() {
        let alice = id("alice@pool.org");
        let local = PeerHost::local(&["10.77.0.9".parse().unwrap()], &["cm.pool.test".into()]);
        assert!(matches("127.0.0.1", &alice, &local));
        assert!(matches("::1", &alice, &local));
        assert!(matches("10.77.0.9", &alice, &local));
        assert!(matches("10.77.0.0/24", &alice, &local));
        assert!(matches("{:local_ips:}", &alice, &local));
        assert!(matches("*.pool.test", &alice, &local));
        assert!(!matches("10.78.*", &alice, &local));
        // {:local_ips:} is this host's addresses, not any peer's
        assert!(matches("{:local_ips:}", &alice, &ip("10.77.0.9")));
        assert!(!matches("{:local_ips:}", &alice, &ip("10.77.0.5")));
    }

    #[test]
    fn deny_by_host_beats_allow() {
        let p = SecurityPolicy::default()
            .allowing(Read, ["*"])
            .allowing(Write, ["*"])
            .denying(Write, ["10.78.*"]);
        let c = compiled(&p);
        let alice = id("alice@pool.org");
        assert_eq!(c.levels(&alice, &ip("10.77.0.5")), vec![Read, Write]);
        assert_eq!(c.levels(&alice, &ip("10.78.0.5")), vec![Read]);
        let err = c.check(&alice, &ip("10.78.0.5"), Write).unwrap_err();
        assert!(err.contains("DENY_WRITE"), "{err}");
        assert!(err.contains("10.78.0.5"), "{err}");
        // a host outside ALLOW_WRITE: the message names who and where from
        let p = SecurityPolicy::default()
            .allowing(Read, ["*"])
            .allowing(Write, ["*/10.77.0.0/16"]);
        let err = compiled(&p)
            .check(&alice, &ip("10.78.0.5"), Write)
            .unwrap_err();
        assert!(err.contains("ALLOW_WRITE"), "{err}");
        assert!(err.contains("alice@pool.org from 10.78.0.5"), "{err}");
    }

    #[test]
    fn empty_policy_refuses_everything() {
        let c = compiled(&SecurityPolicy::deny_all());
        for l in AuthLevel::ALL {
            assert!(!c.permits(&id("root@x"), &anywhere(), l));
        }
        assert!(c.levels(&id("root@x"), &anywhere()).is_empty());
    }

    #[test]
    fn implications_grant_lower_levels() {
        let p = SecurityPolicy::default()
            .allowing(Write, ["*@pool.org"])
            .allowing(Administrator, ["admin@pool.org"])
            .allowing(Daemon, ["condor@*"])
            .allowing(Negotiator, ["neg@pool.org"]);
        let c = compiled(&p);
        let at = anywhere();
        assert_eq!(c.levels(&id("alice@pool.org"), &at), vec![Read, Write]);
        assert_eq!(
            c.levels(&id("admin@pool.org"), &at),
            vec![Read, Write, Administrator]
        );
        assert_eq!(c.levels(&id("condor@else"), &at), vec![Read, Write, Daemon]);
        assert_eq!(
            c.levels(&id("neg@pool.org"), &at),
            vec![Read, Write, Negotiator]
        );
        assert!(c.levels(&id("alice@else"), &at).is_empty());
    }

    #[test]
    fn negotiator_does_not_imply_write() {
        let c = compiled(&SecurityPolicy::default().allowing(Negotiator, ["neg@x"]));
        assert_eq!(c.levels(&id("neg@x"), &anywhere()), vec![Read, Negotiator]);
    }

    #[test]
    fn deny_beats_allow_and_blocks_the_chain() {
        let p = SecurityPolicy::default()
            .allowing(Read, ["*"])
            .allowing(Write, ["*"])
            .allowing(Administrator, ["bob@x"])
            .denying(Write, ["bob@*"]);
        let c = compiled(&p);
        let at = anywhere();
        assert_eq!(c.levels(&id("bob@x"), &at), vec![Read, Administrator]);
        let err = c.check(&id("bob@x"), &at, Write).unwrap_err();
        assert!(err.contains("DENY_WRITE"), "{err}");
        // without ALLOW_READ, bob's READ would have come only through WRITE
        let p = SecurityPolicy::default()
            .allowing(Administrator, ["bob@x"])
            .denying(Write, ["bob@x"]);
        assert_eq!(compiled(&p).levels(&id("bob@x"), &at), vec![Administrator]);
    }

    #[test]
    fn anonymous_only_reads_and_only_when_allowed() {
        let at = anywhere();
        let p = SecurityPolicy::default()
            .allowing(Read, ["*"])
            .allowing(Write, ["*"]);
        let anon = Identity::anonymous();
        assert!(compiled(&p).levels(&anon, &at).is_empty());
        let p = p.with_anonymous_read(true);
        assert_eq!(compiled(&p).levels(&anon, &at), vec![Read]);
        let p = SecurityPolicy::default()
            .allowing(Read, ["*@pool.org"])
            .with_anonymous_read(true);
        assert!(compiled(&p).levels(&anon, &at).is_empty());
        // host entries grant anonymous READ only from their hosts
        let p = SecurityPolicy::default()
            .allowing(Read, ["10.77.*"])
            .with_anonymous_read(true);
        assert_eq!(compiled(&p).levels(&anon, &ip("10.77.0.1")), vec![Read]);
        assert!(compiled(&p).levels(&anon, &ip("10.78.0.1")).is_empty());
    }

    #[test]
    fn validate_rejects_bad_entries() {
        for bad in [
            "",
            "alice/host.test",
            "a@b@c",
            "a**@b",
            "*a*@b",
            "a@",
            "@b",
            "a b@c",
            "a@b/",
            "a@b/h*st.test",
            "a@b/10.*.0.1",
            "a@b/*pool.test",
            "10.0.0.0/33",
            "*/10.0.0.0/255.0.255.0",
            "*/fd00::/255.255.0.0",
            "a@b/c/d/e",
            "1.2.3.4.*",
            "a@b/24",
            "under_score!.test",
        ] {
            let p = SecurityPolicy::default().denying(Read, [bad]);
            assert!(p.validate().is_err(), "{bad:?}");
        }
        let p = SecurityPolicy::recommended(&["condor@*"], &["root@*"]);
        p.validate().unwrap();
        assert!(!p.names_hosts());
        let c = compiled(&p);
        assert_eq!(
            c.levels(&id("condor@h"), &anywhere()),
            vec![Read, Write, Administrator, Daemon, Negotiator]
        );
        assert_eq!(c.levels(&id("u@h"), &anywhere()), vec![Read, Write]);
    }

    #[test]
    fn policy_serializes_with_level_names() {
        let p = SecurityPolicy::default().allowing(Read, ["*"]);
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains(r#""READ":["*"]"#), "{text}");
        assert_eq!(serde_json::from_str::<SecurityPolicy>(&text).unwrap(), p);
    }
}
