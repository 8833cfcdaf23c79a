//! Which address a daemon listens on and which it advertises, from
//! HTCondor's `NETWORK_INTERFACE` and `BIND_ALL_INTERFACES`.
//!
//! The choice is a pure function ([`plan_listen`], [`choose_address`]) over
//! the host's interfaces given as `(device name, address)` pairs, so it is
//! tested without the machine's own; [`host_interfaces`] reads those
//! (`getifaddrs`).
//!
//! - `NETWORK_INTERFACE` (HTCondor's default `*`) is an IP address, a device
//!   name (`eth0`), `*`, or a pattern with `*` matched against addresses
//!   and device names (`10.77.*`, `eth*`). Among the matching addresses the
//!   advertised one is the first public address, else the first private
//!   one, else loopback; IPv4 before IPv6 (HTCondor's `PREFER_IPV4`).
//!   IPv6 link-local addresses (`fe80::/10`) are chosen only when named.
//! - `BIND_ALL_INTERFACES` (default true): listen on every address,
//!   advertising the chosen one; false: listen only on the chosen one.
//! - Skua's rules: a chosen loopback address is listened on alone (a daemon
//!   never listens on every interface while advertising loopback), and the
//!   personal pool stays on loopback: when `NETWORK_INTERFACE` is not
//!   configured and nothing says the host serves a network (no
//!   `AUTH_SSL_SERVER_CERTFILE`), daemons listen on and advertise
//!   127.0.0.1.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where a daemon listens and what it advertises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListenPlan {
    /// The address to bind (the unspecified address: every interface).
    pub bind: IpAddr,
    /// The address other hosts are told (`MyAddress`).
    pub advertise: IpAddr,
}

impl ListenPlan {
    /// 127.0.0.1 for both: the personal pool.
    pub const LOOPBACK: ListenPlan = ListenPlan {
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        advertise: IpAddr::V4(Ipv4Addr::LOCALHOST),
    };

    /// Whether the daemon listens on loopback only.
    pub fn is_loopback(&self) -> bool {
        self.bind.is_loopback()
    }
}

/// What decides the plan, read from the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenKnobs {
    /// `NETWORK_INTERFACE`'s value.
    pub network_interface: String,
    /// Whether `NETWORK_INTERFACE` was configured (not HTCondor's default).
    pub interface_configured: bool,
    /// Whether the host serves a network (`AUTH_SSL_SERVER_CERTFILE`).
    pub serves_network: bool,
    /// `BIND_ALL_INTERFACES`.
    pub bind_all: bool,
}

/// The plan for `knobs` on a host with `interfaces` (see the module
/// documentation).
pub fn plan_listen(
    knobs: &ListenKnobs,
    interfaces: &[(String, IpAddr)],
) -> Result<ListenPlan, String> {
    if !knobs.interface_configured && !knobs.serves_network {
        return Ok(ListenPlan::LOOPBACK);
    }
    let chosen = choose_address(&knobs.network_interface, interfaces)?;
    let bind = if chosen.is_loopback() || !knobs.bind_all {
        chosen
    } else if chosen.is_ipv4() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    };
    Ok(ListenPlan {
        bind,
        advertise: chosen,
    })
}

/// The address `NETWORK_INTERFACE = spec` chooses among `interfaces`.
pub fn choose_address(spec: &str, interfaces: &[(String, IpAddr)]) -> Result<IpAddr, String> {
    let spec = spec.trim();
    let listed = || {
        let all: Vec<String> = interfaces
            .iter()
            .map(|(name, ip)| format!("{name} {ip}"))
            .collect();
        if all.is_empty() {
            "none".to_string()
        } else {
            all.join(", ")
        }
    };
    if spec.is_empty() {
        return Err("NETWORK_INTERFACE is empty".into());
    }
    if let Ok(ip) = spec.parse::<IpAddr>() {
        if ip.is_unspecified() {
            return choose_address("*", interfaces);
        }
        return if interfaces.iter().any(|(_, a)| *a == ip) {
            Ok(ip)
        } else {
            Err(format!(
                "NETWORK_INTERFACE = {spec} is not an address of this host (its interfaces: {})",
                listed()
            ))
        };
    }
    let matching: Vec<IpAddr> = interfaces
        .iter()
        .filter(|(name, ip)| {
            if spec.contains('*') {
                glob(spec, name) || glob(spec, &ip.to_string())
            } else {
                name == spec
            }
        })
        .map(|(_, ip)| *ip)
        .filter(|ip| !is_ipv6_link_local(ip))
        .collect();
    matching
        .iter()
        .copied()
        .enumerate()
        .min_by_key(|(i, ip)| (class(ip), !ip.is_ipv4(), *i))
        .map(|(_, ip)| ip)
        .ok_or_else(|| {
            format!(
                "NETWORK_INTERFACE = {spec} matches no usable address of this host (its interfaces: {})",
                listed()
            )
        })
}

/// 0 public, 1 private, 2 loopback.
fn class(ip: &IpAddr) -> u8 {
    if ip.is_loopback() {
        return 2;
    }
    let private = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_private() || v4.is_link_local() || (o[0] == 100 && (o[1] & 0xc0) == 64)
        }
        IpAddr::V6(v6) => (v6.segments()[0] & 0xfe00) == 0xfc00 || is_ipv6_link_local(ip),
    };
    u8::from(private)
}

fn is_ipv6_link_local(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80)
}

/// Whether `text` matches `pattern`, where each `*` stands for any run of
/// characters (ASCII case-insensitively).
fn glob(pattern: &str, text: &str) -> bool {
    let p = pattern.to_ascii_lowercase();
    let t = text.to_ascii_lowercase();
    let parts: Vec<&str> = p.split('*').collect();
    let (first, rest) = match parts.split_first() {
        Some(x) => x,
        None => return t.is_empty(),
    };
    let Some(mut remaining) = t.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}

/// This host's interfaces as `(device name, address)` pairs (IPv4 and
/// IPv6, interfaces that are up).
pub fn host_interfaces() -> Result<Vec<(String, IpAddr)>, String> {
    let all = skua_net::interface_addresses().map_err(|e| format!("listing interfaces: {e}"))?;
    Ok(all
        .into_iter()
        .filter(|a| a.up)
        .map(|a| (a.name, a.ip))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Vec<(String, IpAddr)> {
        [
            ("lo", "127.0.0.1"),
            ("lo", "::1"),
            ("eth0", "fe80::1"),
            ("eth0", "10.77.2.5"),
            ("eth1", "2001:db8::5"),
            ("eth1", "192.0.2.7"),
            ("docker0", "172.17.0.1"),
        ]
        .iter()
        .map(|(n, ip)| (n.to_string(), ip.parse().unwrap()))
        .collect()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_star_prefers_public_then_private_then_loopback_and_ipv4() {
        assert_eq!(choose_address("*", &host()), Ok(ip("192.0.2.7")));
        let private: Vec<_> = host().into_iter().filter(|(n, _)| n != "eth1").collect();
        assert_eq!(choose_address("*", &private), Ok(ip("10.77.2.5")));
        let lo: Vec<_> = host().into_iter().filter(|(n, _)| n == "lo").collect();
        assert_eq!(choose_address("*", &lo), Ok(ip("127.0.0.1")));
        let v6: Vec<_> = host().into_iter().filter(|(_, a)| a.is_ipv6()).collect();
        assert_eq!(choose_address("*", &v6), Ok(ip("2001:db8::5")));
        assert_eq!(choose_address("0.0.0.0", &host()), Ok(ip("192.0.2.7")));
    }

    #[test]
    fn an_address_a_device_or_a_pattern_names_the_interface() {
        assert_eq!(choose_address("10.77.2.5", &host()), Ok(ip("10.77.2.5")));
        assert_eq!(choose_address("fe80::1", &host()), Ok(ip("fe80::1")));
        assert_eq!(choose_address("eth0", &host()), Ok(ip("10.77.2.5")));
        assert_eq!(choose_address("eth1", &host()), Ok(ip("192.0.2.7")));
        assert_eq!(choose_address("10.77.*", &host()), Ok(ip("10.77.2.5")));
        assert_eq!(choose_address("172.*", &host()), Ok(ip("172.17.0.1")));
        assert_eq!(choose_address("dock*", &host()), Ok(ip("172.17.0.1")));
        assert_eq!(choose_address("2001:db8:*", &host()), Ok(ip("2001:db8::5")));
    }

    #[test]
    fn an_interface_the_host_lacks_is_an_error_listing_its_interfaces() {
        for spec in ["10.1.1.1", "wlan0", "10.99.*", ""] {
            let e = choose_address(spec, &host()).unwrap_err();
            assert!(e.contains("NETWORK_INTERFACE"), "{e}");
        }
        let e = choose_address("10.1.1.1", &host()).unwrap_err();
        assert!(e.contains("eth0 10.77.2.5"), "{e}");
        // a device with only a link-local address offers nothing usable
        let only_ll = vec![("eth0".to_string(), ip("fe80::1"))];
        assert!(choose_address("eth0", &only_ll).is_err());
    }

    fn knobs(spec: &str, configured: bool, network: bool, bind_all: bool) -> ListenKnobs {
        ListenKnobs {
            network_interface: spec.into(),
            interface_configured: configured,
            serves_network: network,
            bind_all,
        }
    }

    #[test]
    fn the_personal_pool_stays_on_loopback() {
        // HTCondor's default `*`, not configured, no certificate: loopback
        let plan = plan_listen(&knobs("*", false, false, true), &host()).unwrap();
        assert_eq!(plan, ListenPlan::LOOPBACK);
        assert!(plan.is_loopback());
        // a configured loopback interface is listened on alone
        let plan = plan_listen(&knobs("127.0.0.1", true, false, true), &host()).unwrap();
        assert_eq!(plan, ListenPlan::LOOPBACK);
    }

    #[test]
    fn bind_all_listens_everywhere_and_advertises_the_chosen_address() {
        // a host with a certificate serves the network even with the default `*`
        let plan = plan_listen(&knobs("*", false, true, true), &host()).unwrap();
        assert_eq!(plan.bind, ip("0.0.0.0"));
        assert_eq!(plan.advertise, ip("192.0.2.7"));
        let plan = plan_listen(&knobs("10.77.*", true, false, true), &host()).unwrap();
        assert_eq!(plan.bind, ip("0.0.0.0"));
        assert_eq!(plan.advertise, ip("10.77.2.5"));
        let v6 = vec![("eth1".to_string(), ip("2001:db8::5"))];
        let plan = plan_listen(&knobs("*", true, false, true), &v6).unwrap();
        assert_eq!(plan.bind, ip("::"));
    }

    #[test]
    fn without_bind_all_only_the_chosen_address_is_listened_on() {
        let plan = plan_listen(&knobs("eth0", true, false, false), &host()).unwrap();
        assert_eq!(plan.bind, ip("10.77.2.5"));
        assert_eq!(plan.advertise, ip("10.77.2.5"));
    }

    #[test]
    fn a_host_with_only_loopback_never_listens_everywhere() {
        let lo = vec![("lo".to_string(), ip("127.0.0.1"))];
        let plan = plan_listen(&knobs("*", true, true, true), &lo).unwrap();
        assert_eq!(plan, ListenPlan::LOOPBACK);
    }

    #[test]
    fn patterns_match_with_stars_anywhere() {
        assert!(glob("10.77.*", "10.77.2.5"));
        assert!(!glob("10.77.*", "10.78.2.5"));
        assert!(glob("*", ""));
        assert!(glob("e*0", "eth0"));
        assert!(!glob("e*0", "eth1"));
        assert!(glob("*.2.*", "10.77.2.5"));
        assert!(!glob("a*a", "a"));
    }

    #[test]
    fn this_hosts_interfaces_include_loopback() {
        let all = host_interfaces().unwrap();
        assert!(all.iter().any(|(_, a)| a.is_loopback()), "{all:?}");
    }
}
