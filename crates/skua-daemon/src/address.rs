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
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not an address: {text:?}")]
    Malformed { path: PathBuf, text: String },
}

/// The content of an address file for `addr`.
pub fn format_address_file(addr: SocketAddr) -> String {
    format!("{addr}\n")
}

/// The address in an address file's text (first line; `<...>` and `?...`
/// parts of HTCondor's sinful strings are accepted).
pub fn parse_address_file(text: &str) -> Option<SocketAddr> {
    let first = text.lines().next()?.trim();
    let first = first.strip_prefix('<').unwrap_or(first);
    let first = first.split(['?', '>']).next().unwrap_or(first);
    first.parse().ok()
}

/// Whether a `COLLECTOR_HOST` value names port 0, i.e. "read the address
/// file".
pub fn collector_host_uses_address_file(collector_host: &str) -> bool {
    collector_host.trim().rsplit_once(':').is_some_and(|(_, port)| port.trim() == "0")
}

/// Writes an address file atomically.
pub fn write_address_file(path: &Path, addr: SocketAddr) -> Result<(), AddressError> {
    let io = |source| AddressError::Io { path: path.to_path_buf(), source };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, format_address_file(addr)).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Reads an address file.
pub fn read_address_file(path: &Path) -> Result<SocketAddr, AddressError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| AddressError::Io { path: path.to_path_buf(), source })?;
    parse_address_file(&text)
        .ok_or_else(|| AddressError::Malformed { path: path.to_path_buf(), text: text.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_files_round_trip() {
        let addr: SocketAddr = "127.0.0.1:40123".parse().unwrap();
        assert_eq!(parse_address_file(&format_address_file(addr)), Some(addr));
        assert_eq!(parse_address_file("<127.0.0.1:9618?addrs=x>\nmore"), Some("127.0.0.1:9618".parse().unwrap()));
        assert_eq!(parse_address_file("garbage"), None);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".collector_address");
        write_address_file(&p, addr).unwrap();
        assert_eq!(read_address_file(&p).unwrap(), addr);
    }

    #[test]
    fn port_zero_means_address_file() {
        assert!(collector_host_uses_address_file("127.0.0.1:0"));
        assert!(!collector_host_uses_address_file("cm.example.org:9618"));
        assert!(!collector_host_uses_address_file("cm.example.org"));
    }
}
