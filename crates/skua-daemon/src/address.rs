//! Address files: a daemon listening on a port chosen by the operating
//! system publishes its address in a file (HTCondor's
//! `<SUBSYS>_ADDRESS_FILE`), where clients on the same host read it.
//!
//! The file holds one line, the socket address (`127.0.0.1:40123`), or for a
//! daemon behind the shared port its sinful string (`<10.0.0.5:9618?sock=schedd>`); readers
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
    parse_address_sinful(text).map(|s| s.addr)
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

/// Writes an address file for a daemon at `sinful`, atomically: its
/// socket address (`10.0.0.5:40123`), or behind the shared port its sinful
/// string with the id (`<10.0.0.5:9618?sock=schedd>`); the alias is left
/// out.
pub fn write_address_file_sinful(path: &Path, sinful: &Sinful) -> Result<(), AddressError> {
    let io = |source| AddressError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = match &sinful.sock {
        // the plain form, as before the shared port
        None => format_address_file(sinful.addr),
        Some(sock) => format!("{}\n", Sinful::new(sinful.addr).with_sock(sock.as_str())),
    };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// The sinful string of an address file: its first non-blank line.
pub fn parse_address_sinful(text: &str) -> Result<Sinful, String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .ok_or_else(|| "it is empty".to_string())?;
    Sinful::parse(line).map_err(|e| e.to_string())
}

/// Reads an address file as a sinful string (keeping `sock`).
pub fn read_address_file_sinful(path: &Path) -> Result<Sinful, AddressError> {
    let text = std::fs::read_to_string(path).map_err(|source| AddressError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_address_sinful(&text).map_err(|reason| AddressError::Malformed {
        path: path.to_path_buf(),
        text: reason,
    })
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

/// A daemon's address as HTCondor writes it in `MyAddress`, a "sinful
/// string": `<ip:port>`, or `<ip:port?sock=ID&alias=HOST>` where `sock`
/// names the daemon behind the host's shared port (the id a client sends
/// in the shared-port preamble) and `alias` is the host's name. Values are
/// URL-encoded; keys other than `sock` and `alias` (HTCondor's `addrs`,
/// `noUDP`, `CCBID`...) are accepted and ignored. A bare `ip:port` is
/// accepted too (Skua's address files before the shared port).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sinful {
    /// Where to connect: the daemon's own port, or the shared port.
    pub addr: SocketAddr,
    /// The shared-port id of the daemon (`collector`, `schedd`...).
    pub sock: Option<String>,
    /// The host's name.
    pub alias: Option<String>,
}

/// Why a text is not a sinful string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a daemon address (<ip:port?sock=ID>): {reason}")]
pub struct SinfulError {
    /// The text, shortened.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The longest sinful string parsed (HTCondor's are well under this).
const MAX_SINFUL_LEN: usize = 4096;

impl Sinful {
    /// `<addr>`, no parameters.
    pub fn new(addr: SocketAddr) -> Sinful {
        Sinful {
            addr,
            sock: None,
            alias: None,
        }
    }

    /// The same address with the shared-port id `sock`.
    pub fn with_sock(mut self, sock: impl Into<String>) -> Sinful {
        self.sock = Some(sock.into());
        self
    }

    /// The same address with the host name `alias`.
    pub fn with_alias(mut self, alias: impl Into<String>) -> Sinful {
        self.alias = Some(alias.into());
        self
    }

    /// Parses a sinful string (see [`Sinful`]).
    pub fn parse(text: &str) -> Result<Sinful, SinfulError> {
        let fail = |reason: &str| SinfulError {
            text: text.chars().take(100).collect(),
            reason: reason.to_string(),
        };
        if text.len() > MAX_SINFUL_LEN {
            return Err(fail("it is too long"));
        }
        let t = text.trim();
        let inner = match t.strip_prefix('<') {
            Some(rest) => rest
                .strip_suffix('>')
                .ok_or_else(|| fail("no closing `>`"))?,
            None if t.ends_with('>') => return Err(fail("no opening `<`")),
            None => t,
        };
        let (addr_text, params) = match inner.split_once('?') {
            Some((a, p)) => (a, Some(p)),
            None => (inner, None),
        };
        if addr_text.is_empty() {
            return Err(fail("it is empty"));
        }
        let addr: SocketAddr = addr_text
            .parse()
            .map_err(|_| fail(&format!("`{addr_text}` is not an ip:port")))?;
        let mut sinful = Sinful::new(addr);
        for pair in params.into_iter().flat_map(|p| p.split('&')) {
            if pair.is_empty() {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |v: &str| {
                url_decode(v).ok_or_else(|| fail(&format!("bad URL encoding in `{pair}`")))
            };
            match key {
                "sock" => {
                    let v = decode(value)?;
                    if v.is_empty() {
                        return Err(fail("`sock` is empty"));
                    }
                    sinful.sock = Some(v);
                }
                "alias" => {
                    let v = decode(value)?;
                    sinful.alias = (!v.is_empty()).then_some(v);
                }
                _ => {}
            }
        }
        Ok(sinful)
    }
}

impl std::str::FromStr for Sinful {
    type Err = SinfulError;
    fn from_str(s: &str) -> Result<Sinful, SinfulError> {
        Sinful::parse(s)
    }
}

impl std::fmt::Display for Sinful {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{}", self.addr)?;
        let mut sep = '?';
        for (key, value) in [("sock", &self.sock), ("alias", &self.alias)] {
            if let Some(v) = value {
                write!(f, "{sep}{key}={}", url_encode(v))?;
                sep = '&';
            }
        }
        f.write_str(">")
    }
}

/// Percent-encodes every byte but the URL's unreserved ones.
fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (and `+` as a space); `None` for a broken escape
/// or bytes that are not UTF-8.
fn url_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
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
        let e = parse_address_text("<127.0.0.1:9618").unwrap_err();
        assert!(
            e.contains("<127.0.0.1:9618") && e.contains("no closing `>`"),
            "{e}"
        );
    }

    #[test]
    fn sinful_strings_parse_in_htcondors_forms() {
        let s = Sinful::parse("<10.0.0.5:9618>").unwrap();
        assert_eq!(s, Sinful::new("10.0.0.5:9618".parse().unwrap()));
        let s = Sinful::parse("<10.0.0.5:9618?sock=schedd&alias=submit.example.org>").unwrap();
        assert_eq!(s.addr, "10.0.0.5:9618".parse().unwrap());
        assert_eq!(s.sock.as_deref(), Some("schedd"));
        assert_eq!(s.alias.as_deref(), Some("submit.example.org"));
        // HTCondor's other keys are ignored; values are URL-decoded
        let s = Sinful::parse(
            "<10.0.0.5:9618?addrs=10.0.0.5-9618+[--1]-9618&noUDP&sock=startd%5F1&alias=a%2Eb>",
        )
        .unwrap();
        assert_eq!(s.sock.as_deref(), Some("startd_1"));
        assert_eq!(s.alias.as_deref(), Some("a.b"));
        let s = Sinful::parse("<[2001:db8::1]:9618?sock=collector>").unwrap();
        assert_eq!(s.addr, "[2001:db8::1]:9618".parse().unwrap());
        // bare ip:port, as older address files hold it
        assert_eq!(
            Sinful::parse(" 127.0.0.1:40123 ").unwrap(),
            Sinful::new("127.0.0.1:40123".parse().unwrap())
        );
    }

    #[test]
    fn sinful_strings_print_and_parse_back() {
        let plain = Sinful::new("10.0.0.5:40123".parse().unwrap());
        assert_eq!(plain.to_string(), "<10.0.0.5:40123>");
        let full = Sinful::new("10.0.0.5:9618".parse().unwrap())
            .with_sock("schedd")
            .with_alias("submit.example.org");
        assert_eq!(
            full.to_string(),
            "<10.0.0.5:9618?sock=schedd&alias=submit.example.org>"
        );
        let odd = Sinful::new("[::1]:9618".parse().unwrap())
            .with_sock("a b&c=d")
            .with_alias("h%st");
        assert_eq!(
            odd.to_string(),
            "<[::1]:9618?sock=a%20b%26c%3Dd&alias=h%25st>"
        );
        for s in [plain, full, odd] {
            assert_eq!(Sinful::parse(&s.to_string()).unwrap(), s);
        }
    }

    #[test]
    fn garbage_is_not_a_sinful_string() {
        for text in [
            "",
            "<>",
            "<10.0.0.5:9618",
            "10.0.0.5:9618>",
            "<host.example.org:9618>",
            "<10.0.0.5>",
            "<10.0.0.5:99999>",
            "<10.0.0.5:9618?sock=>",
            "<10.0.0.5:9618?sock=%zz>",
            "<10.0.0.5:9618?sock=%ff>",
        ] {
            let e = Sinful::parse(text).unwrap_err();
            assert!(e.to_string().contains("is not a daemon address"), "{e}");
        }
        let e = Sinful::parse("<10.0.0.5:9618").unwrap_err();
        assert_eq!(e.reason, "no closing `>`");
        let long = format!("<10.0.0.5:9618?alias={}>", "x".repeat(5000));
        assert_eq!(Sinful::parse(&long).unwrap_err().reason, "it is too long");
    }

    #[test]
    fn address_files_keep_the_shared_port_id() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".schedd_address");
        let s = Sinful::new("10.0.0.5:9618".parse().unwrap()).with_sock("schedd");
        write_address_file_sinful(&p, &s.clone().with_alias("h")).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "<10.0.0.5:9618?sock=schedd>\n"
        );
        assert_eq!(read_address_file_sinful(&p).unwrap(), s);
        // readers of the plain address still find the port
        assert_eq!(read_address_file(&p).unwrap(), s.addr);
        // without an id, the plain form, which the sinful reader takes too
        write_address_file_sinful(&p, &Sinful::new(s.addr).with_alias("h")).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "10.0.0.5:9618\n");
        assert_eq!(read_address_file_sinful(&p).unwrap(), Sinful::new(s.addr));
    }

    #[test]
    fn port_zero_means_address_file() {
        assert!(collector_host_uses_address_file("127.0.0.1:0"));
        assert!(!collector_host_uses_address_file("cm.example.org:9618"));
        assert!(!collector_host_uses_address_file("cm.example.org"));
    }
}
