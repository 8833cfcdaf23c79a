//! TLS configuration (rustls with the `ring` provider; no process-wide
//! state) and self-signed certificates (rcgen).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::NetError;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn config_err(what: &str, e: impl std::fmt::Display) -> NetError {
    NetError::Config(format!("{what}: {e}"))
}

fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| config_err(what, e))?;
    if certs.is_empty() {
        return Err(NetError::Config(format!("{what}: no certificate in PEM")));
    }
    Ok(certs)
}

/// A server TLS configuration from a PEM certificate chain and a PEM
/// private key (PKCS#8, PKCS#1 or SEC1).
pub fn server_config(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, NetError> {
    let certs = certificates(cert_chain_pem, "server certificate")?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| config_err("server key", e))?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| config_err("tls", e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| config_err("server certificate and key", e))?;
    Ok(Arc::new(config))
}

/// [`server_config`] from files.
pub fn server_config_from_files(
    cert_chain_path: &Path,
    key_path: &Path,
) -> Result<Arc<rustls::ServerConfig>, NetError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| NetError::Io {
            context: format!("reading {}", p.display()),
            source,
        })
    };
    server_config(&read(cert_chain_path)?, &read(key_path)?)
}

/// A client TLS configuration trusting exactly the CA certificates in
/// `ca_pem` (the pool's CA, or a server's self-signed certificate).
pub fn client_config(ca_pem: &[u8]) -> Result<Arc<rustls::ClientConfig>, NetError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(ca_pem, "CA certificate")? {
        roots
            .add(cert)
            .map_err(|e| config_err("CA certificate", e))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| config_err("tls", e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The name a client checks the server certificate against: the IP
/// address it connects to (so certificates carry IP subject alternative
/// names).
pub(crate) fn server_name(addr: &SocketAddr) -> ServerName<'static> {
    ServerName::IpAddress(addr.ip().into())
}

/// A PEM certificate and its PEM (PKCS#8) private key.
#[derive(Clone)]
pub struct CertifiedKeyPem {
    /// The certificate.
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

impl std::fmt::Debug for CertifiedKeyPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertifiedKeyPem")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<secret>")
            .finish()
    }
}

/// A self-signed certificate valid for `names`: each is an IP address
/// (`"127.0.0.1"`, `"::1"`) or a DNS name (`"localhost"`).
pub fn self_signed(names: &[&str]) -> Result<CertifiedKeyPem, NetError> {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let ck = rcgen::generate_simple_self_signed(names).map_err(|e| config_err("certificate", e))?;
    Ok(CertifiedKeyPem {
        cert_pem: ck.cert.pem(),
        key_pem: ck.signing_key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_certificate_loads_on_both_sides() {
        let ck = self_signed(&["127.0.0.1", "localhost"]).unwrap();
        server_config(ck.cert_pem.as_bytes(), ck.key_pem.as_bytes()).unwrap();
        client_config(ck.cert_pem.as_bytes()).unwrap();
        assert!(!format!("{ck:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn garbage_is_a_config_error() {
        assert!(matches!(
            server_config(b"nope", b"nope"),
            Err(NetError::Config(_))
        ));
        assert!(matches!(client_config(b""), Err(NetError::Config(_))));
        let ck = self_signed(&["localhost"]).unwrap();
        assert!(server_config(
            ck.cert_pem.as_bytes(),
            b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        )
        .is_err());
    }
}
