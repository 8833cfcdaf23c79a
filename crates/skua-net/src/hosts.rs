//! What host entries of a policy need from the system: this host's
//! addresses and names, and host names resolved to addresses.

use std::net::{IpAddr, ToSocketAddrs};

/// One address of one of this host's interfaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceAddress {
    /// The interface's device name (`lo`, `eth0`...).
    pub name: String,
    pub ip: IpAddr,
    /// Whether the interface is up.
    pub up: bool,
}

/// Every IPv4 and IPv6 address of this host's interfaces (loopback and
/// interfaces that are down included), in the order the system lists
/// them, or why they cannot be listed.
pub fn interface_addresses() -> Result<Vec<InterfaceAddress>, String> {
    use nix::net::if_::InterfaceFlags;
    let addrs = nix::ifaddrs::getifaddrs().map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for ifa in addrs {
        let Some(addr) = ifa.address else { continue };
        let ip = if let Some(v4) = addr.as_sockaddr_in() {
            IpAddr::V4(v4.ip())
        } else if let Some(v6) = addr.as_sockaddr_in6() {
            IpAddr::V6(v6.ip())
        } else {
            continue;
        };
        out.push(InterfaceAddress {
            up: ifa.flags.contains(InterfaceFlags::IFF_UP),
            name: ifa.interface_name,
            ip,
        });
    }
    Ok(out)
}

/// The addresses of this host's interfaces (loopback included), each
/// once; empty (with a warning) if they cannot be listed.
pub(crate) fn local_ips() -> Vec<IpAddr> {
    let addrs = match interface_addresses() {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list this host's addresses for the security policy");
            return Vec::new();
        }
    };
    let mut ips = Vec::new();
    for a in addrs {
        if !ips.contains(&a.ip) {
            ips.push(a.ip);
        }
    }
    ips
}

/// This host's name (as `gethostname` gives it), if it has one.
pub(crate) fn host_names() -> Vec<String> {
    match nix::unistd::gethostname() {
        Ok(name) => name
            .into_string()
            .ok()
            .filter(|n| !n.is_empty())
            .map(|n| vec![n.to_ascii_lowercase()])
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// The addresses `name` resolves to (the system resolver: /etc/hosts,
/// DNS...), or why not.
pub(crate) fn resolve(name: &str) -> Result<Vec<IpAddr>, String> {
    let addrs = (name, 0u16).to_socket_addrs().map_err(|e| e.to_string())?;
    let mut ips: Vec<IpAddr> = Vec::new();
    for a in addrs {
        if !ips.contains(&a.ip()) {
            ips.push(a.ip());
        }
    }
    Ok(ips)
}

/// The names `ip` is known by, for `*.domain` entries: its name from a
/// reverse lookup, kept only if that name resolves back to `ip` (so a peer
/// that controls its own reverse zone cannot claim another domain's
/// name). Empty when it has none. Blocking: call off the async threads.
pub(crate) fn names_of(ip: IpAddr) -> Vec<String> {
    let Some(name) = reverse_lookup(ip) else {
        return Vec::new();
    };
    let canonical = |a: IpAddr| match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(a),
        v4 => v4,
    };
    match resolve(&name) {
        Ok(ips) if ips.iter().any(|a| canonical(*a) == canonical(ip)) => {
            vec![name.to_ascii_lowercase()]
        }
        _ => {
            tracing::debug!(%ip, name, "the peer's reverse name does not resolve back to it; ignored");
            Vec::new()
        }
    }
}

/// The host name of `ip` by a reverse lookup (`getnameinfo` with
/// `NI_NAMEREQD`, through `dns-lookup`), if it has one.
fn reverse_lookup(ip: IpAddr) -> Option<String> {
    let name = dns_lookup::lookup_addr(&ip).ok()?;
    let name = name.trim_end_matches('.').to_string();
    (!name.is_empty() && name.parse::<IpAddr>().is_err()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_known_by_a_name_that_resolves_back_to_it() {
        // every system resolver maps 127.0.0.1 to a name (`localhost` in
        // /etc/hosts); whatever the name, it must resolve back
        let names = names_of(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
        assert_eq!(names.len(), 1, "{names:?}");
        let back = resolve(&names[0]).unwrap();
        assert!(
            back.contains(&IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
            "{back:?}"
        );
    }

    #[test]
    fn this_host_has_addresses_and_a_name() {
        let ips = local_ips();
        assert!(
            ips.contains(&IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
            "{ips:?}"
        );
        assert!(!host_names().is_empty());
    }
}
