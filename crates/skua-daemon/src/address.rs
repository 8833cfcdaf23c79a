//! Address files: a daemon listening on a port chosen by the operating
//! system publishes its address in a file (HTCondor's
//! `<SUBSYS>_ADDRESS_FILE`), where clients on the same host read it.
//!
//! The file holds one line, the socket address (`127.0.0.1:40123`); readers
//! ignore further lines and also accept HTCondor's `<addr?params>` form. It
//! is written atomically (temporary file, then rename) and removed when the
//! daemon exits cleanly.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Errors reading or writing an address file.
#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {text}")]
    Malformed { path: PathBuf, text: String },
}

/// The content of an address file for `addr`.
pub fn format_address_file(addr: SocketAddr) -> String {
    format!("{addr}\n")
}

/// The address in an address file: its first non-blank line, a socket
/// address, optionally in HTCondor's `<...>` form with `?parameters`
/// (which are ignored, as are further lines).
pub fn parse_address_text(text: &str) -> Result<SocketAddr, String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .ok_or_else(|| "it is empty".to_string())?;
    let inner = match line.strip_prefix('<') {
        Some(rest) => rest
            .strip_suffix('>')
            .ok_or_else(|| format!("unterminated address `{line}`"))?,
        None => line,
    };
    let addr = inner.split_once('?').map_or(inner, |(addr, _)| addr);
    addr.parse()
        .map_err(|_| format!("`{line}` is not a socket address"))
}

/// [`parse_address_text`], without the reason.
pub fn parse_address_file(text: &str) -> Option<SocketAddr> {
    parse_address_text(text).ok()
}

/// Whether a client must read the address file to find the daemon named by
/// `host` (e.g. `COLLECTOR_HOST`): true when its port is 0 (the personal
/// pool's `127.0.0.1:0`). A host without a port means the default port.
pub fn collector_host_uses_address_file(host: &str) -> bool {
    let host = host.trim();
    let host = host
        .strip_prefix('<')
        .and_then(|h| h.strip_suffix('>'))
        .unwrap_or(host);
    let host = host.split_once('?').map_or(host, |(h, _)| h);
    let port = if let Some(bracketed) = host.strip_prefix('[') {
        // `[v6]:port`, or `[v6]` without a port.
        bracketed.split_once("]:").map(|(_, port)| port)
    } else if host.matches(':').count() == 1 {
        host.rsplit_once(':').map(|(_, port)| port)
    } else {
        // no port, or a bare IPv6 address
        None
    };
    port.is_some_and(|p| p.parse::<u16>() == Ok(0))
}

/// Writes an address file atomically.
pub fn write_address_file(path: &Path, addr: SocketAddr) -> Result<(), AddressError> {
    let io = |source| AddressError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, format_address_file(addr)).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Reads an address file.
pub fn read_address_file(path: &Path) -> Result<SocketAddr, AddressError> {
    let text = std::fs::read_to_string(path).map_err(|source| AddressError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_address_text(&text).map_err(|reason| AddressError::Malformed {
        path: path.to_path_buf(),
        text: reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_files_round_trip() {
        let addr: SocketAddr = "127.0.0.1:40123".parse().unwrap();
        assert_eq!(parse_address_file(&format_address_file(addr)), Some(addr));
        assert_eq!(
            parse_address_file("<127.0.0.1:9618?addrs=x>\nmore"),
            Some("127.0.0.1:9618".parse().unwrap())
        );
        assert_eq!(parse_address_file("garbage"), None);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".collector_address");
        write_address_file(&p, addr).unwrap();
        assert_eq!(read_address_file(&p).unwrap(), addr);
    }

    #[test]
    fn address_files_hold_one_socket_address_v4_or_v6() {
        for addr in ["127.0.0.1:40123", "[::1]:9618"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let text = format_address_file(addr);
            assert_eq!(text, format!("{addr}\n"));
            assert_eq!(parse_address_text(&text), Ok(addr));
        }
    }

    #[test]
    fn address_files_accept_htcondor_sinful_strings_and_extra_lines() {
        let want: SocketAddr = "127.0.0.1:9618".parse().unwrap();
        assert_eq!(
            parse_address_text(
                "<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=host>\n$CondorVersion: 24.0 $\n"
            ),
            Ok(want)
        );
        assert_eq!(parse_address_text("\n  127.0.0.1:9618  \nlater"), Ok(want));
    }

    #[test]
    fn bad_address_files_are_errors_with_a_reason() {
        for text in ["", "\n \n", "localhost", "<127.0.0.1:9618", "127.0.0.1"] {
            assert!(parse_address_text(text).is_err(), "{text:?}");
        }
        assert_eq!(parse_address_text(""), Err("it is empty".to_string()));
        assert_eq!(
            parse_address_text("<127.0.0.1:9618"),
            Err("unterminated address `<127.0.0.1:9618`".to_string())
        );
    }

    #[test]
    fn port_zero_means_address_file() {
        assert!(collector_host_uses_address_file("127.0.0.1:0"));
        assert!(!collector_host_uses_address_file("cm.example.org:9618"));
        assert!(!collector_host_uses_address_file("cm.example.org"));
    }
}
