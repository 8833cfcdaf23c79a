//! A test's fault filter on clients, in the spirit of TiKV's transport
//! filters: a test drops, delays or cuts the calls one daemon makes to
//! another, and heals them, without touching the network.
//!
//! A [`FaultFilter`] is shared by every client of a test pool (cheap to
//! clone; clones share rules). A client carries it with the name of the
//! daemon that calls ([`Client::with_faults`](crate::Client::with_faults))
//! and, when it knows it, the name of the daemon it calls; otherwise the
//! callee is found by its address in the filter's directory
//! ([`FaultFilter::name_address`]). Before each call the client asks the
//! filter; the first rule that matches decides:
//!
//! - [`Fault::Cut`]: the call fails at once as a refused connection would
//!   ([`NetError::Connect`](crate::NetError::Connect), code `Unavailable`);
//! - [`Fault::Drop`]: the request is lost: nothing reaches the server and
//!   the call fails with [`NetError::Timeout`](crate::NetError::Timeout)
//!   once the client's timeout has passed;
//! - [`Fault::DropReply`]: the request is served but its reply is lost: the
//!   call fails as a broken exchange
//!   ([`NetError::Http`](crate::NetError::Http));
//! - [`Fault::Delay`]: the request leaves after the delay.
//!
//! A client without a filter pays one `Option` test per call.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What happens to a call a rule matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Fails at once as a refused connection.
    Cut,
    /// The request is lost: the caller waits out its timeout.
    Drop,
    /// The request is served, its reply lost.
    DropReply,
    /// The request is held this long, then sent.
    Delay(Duration),
}

/// One side of a call, as a rule names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    /// Any daemon (or, on the calling side, any client carrying the filter).
    Any,
    /// A daemon by name (its subsystem, `SCHEDD`, or a name the test gave
    /// its address); case-insensitive.
    Named(String),
    /// The daemon listening at this address (the called side only).
    Addr(SocketAddr),
}

impl Peer {
    /// A daemon by name.
    pub fn named(name: &str) -> Peer {
        Peer::Named(name.to_ascii_uppercase())
    }
}

impl From<&str> for Peer {
    fn from(name: &str) -> Peer {
        Peer::named(name)
    }
}

impl From<SocketAddr> for Peer {
    fn from(addr: SocketAddr) -> Peer {
        Peer::Addr(addr)
    }
}

/// A rule: calls from `from` to `to` (to a path starting with `route`, if
/// given) meet `fault`, the next `times` times or until removed.
#[derive(Clone, Debug)]
pub struct Rule {
    pub from: Peer,
    pub to: Peer,
    pub fault: Fault,
    /// Only calls whose path starts with this.
    pub route: Option<String>,
    /// How many more calls the rule applies to (`None`: until removed).
    pub times: Option<u32>,
}

impl Rule {
    /// A rule for every call from `from` to `to`.
    pub fn new(from: impl Into<Peer>, to: impl Into<Peer>, fault: Fault) -> Rule {
        Rule {
            from: from.into(),
            to: to.into(),
            fault,
            route: None,
            times: None,
        }
    }

    /// Only for calls to paths starting with `prefix` (`/v1/startd/alive`).
    pub fn on_route(mut self, prefix: &str) -> Rule {
        self.route = Some(prefix.to_string());
        self
    }

    /// Only for the next `n` matching calls.
    pub fn times(mut self, n: u32) -> Rule {
        self.times = Some(n);
        self
    }
}

/// Identifies a rule added to a filter, to remove it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuleId(u64);

#[derive(Debug, Default)]
struct State {
    rules: Vec<(RuleId, Rule)>,
    next: u64,
    /// Which daemon listens where.
    names: HashMap<SocketAddr, String>,
    /// Calls each rule has met.
    hits: HashMap<RuleId, u64>,
}

/// The fault rules of a test; see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct FaultFilter {
    state: Arc<Mutex<State>>,
}

/// The call a client is about to make, as the filter sees it.
pub(crate) struct Call<'a> {
    pub from: &'a str,
    pub to_name: Option<&'a str>,
    pub to_addr: Option<SocketAddr>,
    pub path: &'a str,
}

impl FaultFilter {
    /// A filter with no rules (every call passes).
    pub fn new() -> FaultFilter {
        FaultFilter::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that the daemon `name` listens at `addr`, so rules naming it
    /// apply to clients that only know its address.
    pub fn name_address(&self, addr: SocketAddr, name: &str) {
        self.state().names.insert(addr, name.to_ascii_uppercase());
    }

    /// Adds a rule; later rules are consulted after earlier ones.
    pub fn add(&self, rule: Rule) -> RuleId {
        let mut s = self.state();
        s.next += 1;
        let id = RuleId(s.next);
        s.rules.push((id, rule));
        id
    }

    /// Removes a rule (no effect if it is gone already).
    pub fn remove(&self, id: RuleId) {
        self.state().rules.retain(|(r, _)| *r != id);
    }

    /// Cuts `a` and `b` apart, both ways; returns the two rules.
    pub fn cut(&self, a: &str, b: &str) -> [RuleId; 2] {
        [
            self.add(Rule::new(a, b, Fault::Cut)),
            self.add(Rule::new(b, a, Fault::Cut)),
        ]
    }

    /// Removes every rule: every call passes again.
    pub fn heal(&self) {
        self.state().rules.clear();
    }

    /// How many calls rule `id` has met so far.
    pub fn hits(&self, id: RuleId) -> u64 {
        self.state().hits.get(&id).copied().unwrap_or(0)
    }

    /// The fault for `call`, if a rule matches (counting it).
    pub(crate) fn check(&self, call: &Call<'_>) -> Option<Fault> {
        let mut s = self.state();
        let to_name = call
            .to_name
            .map(str::to_ascii_uppercase)
            .or_else(|| call.to_addr.and_then(|a| s.names.get(&a).cloned()));
        let from = call.from.to_ascii_uppercase();
        let found = s.rules.iter().position(|(_, r)| {
            let from_ok = match &r.from {
                Peer::Any => true,
                Peer::Named(n) => *n == from,
                Peer::Addr(_) => false,
            };
            let to_ok = match &r.to {
                Peer::Any => true,
                Peer::Named(n) => to_name.as_deref() == Some(n.as_str()),
                Peer::Addr(a) => call.to_addr == Some(*a),
            };
            let route_ok = r.route.as_deref().is_none_or(|p| call.path.starts_with(p));
            from_ok && to_ok && route_ok
        })?;
        let (id, fault) = {
            let (id, rule) = &mut s.rules[found];
            if let Some(n) = &mut rule.times {
                *n = n.saturating_sub(1);
            }
            (*id, rule.fault)
        };
        if s.rules[found].1.times == Some(0) {
            s.rules.remove(found);
        }
        *s.hits.entry(id).or_default() += 1;
        Some(fault)
    }
}

/// A client's view of the filter: who calls, and whom (when known).
#[derive(Clone, Debug)]
pub(crate) struct Tap {
    pub filter: FaultFilter,
    pub from: String,
    pub to: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(from: &'a str, to: Option<&'a str>, addr: Option<SocketAddr>) -> Call<'a> {
        Call {
            from,
            to_name: to,
            to_addr: addr,
            path: "/v1/startd/claim",
        }
    }

    #[test]
    fn a_cut_applies_both_ways_by_name_or_by_a_named_address_until_healed() {
        let f = FaultFilter::new();
        let startd: SocketAddr = "127.0.0.1:4000".parse().expect("address");
        f.name_address(startd, "startd");
        f.cut("SCHEDD", "STARTD");
        assert_eq!(
            f.check(&call("schedd", None, Some(startd))),
            Some(Fault::Cut)
        );
        assert_eq!(
            f.check(&call("STARTD", Some("schedd"), None)),
            Some(Fault::Cut)
        );
        // other pairs pass
        assert_eq!(f.check(&call("NEGOTIATOR", Some("STARTD"), None)), None);
        assert_eq!(f.check(&call("SCHEDD", Some("COLLECTOR"), None)), None);
        f.heal();
        assert_eq!(f.check(&call("SCHEDD", None, Some(startd))), None);
    }

    #[test]
    fn a_counted_rule_on_a_route_applies_that_many_times_then_goes() {
        let f = FaultFilter::new();
        let id = f.add(
            Rule::new(Peer::Any, "STARTD", Fault::DropReply)
                .on_route("/v1/startd/claim")
                .times(2),
        );
        let other = Call {
            path: "/v1/startd/alive",
            ..call("SCHEDD", Some("STARTD"), None)
        };
        assert_eq!(f.check(&other), None);
        for _ in 0..2 {
            assert_eq!(
                f.check(&call("SCHEDD", Some("STARTD"), None)),
                Some(Fault::DropReply)
            );
        }
        assert_eq!(f.check(&call("SCHEDD", Some("STARTD"), None)), None);
        assert_eq!(f.hits(id), 2);
    }

    #[test]
    fn the_first_matching_rule_decides_and_removing_it_uncovers_the_next() {
        let f = FaultFilter::new();
        let delay = f.add(Rule::new(
            "SCHEDD",
            Peer::Any,
            Fault::Delay(Duration::from_millis(5)),
        ));
        f.add(Rule::new(Peer::Any, Peer::Any, Fault::Drop));
        assert_eq!(
            f.check(&call("SCHEDD", Some("STARTD"), None)),
            Some(Fault::Delay(Duration::from_millis(5)))
        );
        assert_eq!(
            f.check(&call("STARTD", Some("SCHEDD"), None)),
            Some(Fault::Drop)
        );
        f.remove(delay);
        assert_eq!(
            f.check(&call("SCHEDD", Some("STARTD"), None)),
            Some(Fault::Drop)
        );
    }
}
