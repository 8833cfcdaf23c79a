//! What host entries of a policy need from the system: this host's
//! addresses and names, and host names resolved to addresses.

use std::net::{IpAddr, ToSocketAddrs};

/// The addresses of this host's interfaces (loopback included); empty
/// (with a warning) if they cannot be listed.
pub(crate) fn local_ips() -> Vec<IpAddr> {
    let addrs = match nix::ifaddrs::getifaddrs() {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list this host's addresses for the security policy");
            return Vec::new();
        }
    };
    let mut ips = Vec::new();
    for ifa in addrs {
        let Some(addr) = ifa.address else { continue };
        let ip = if let Some(v4) = addr.as_sockaddr_in() {
            IpAddr::V4(v4.ip())
        } else if let Some(v6) = addr.as_sockaddr_in6() {
            IpAddr::V6(v6.ip())
        } else {
            continue;
        };
        if !ips.contains(&ip) {
            ips.push(ip);
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
