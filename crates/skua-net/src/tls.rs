//! TLS configuration (rustls with the `ring` provider; no process-wide
//! state) and self-signed certificates (rcgen).
//!
//! Mutual TLS: a server made with [`server_config_mtls`] asks every client
//! for a certificate and verifies one, when sent, against the pool CA
//! (a client without one still connects, as an anonymous caller); a
//! client made with [`client_config_with_identity`] presents its host
//! certificate. A handshake that fails is described by [`describe`] in
//! words that say which side refused which certificate.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::NetError;

pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
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

/// A server's TLS configuration, as [`crate::Listener::tls`] takes it.
pub type ServerTls = Arc<rustls::ServerConfig>;

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

/// A server TLS configuration that sends `cert_chain_pem` (the host
/// certificate, then the CA certificate(s) of `client_ca_pem` not already
/// in it, so that clients see the whole chain) and, with `client_ca_pem`,
/// asks clients for a certificate and verifies one, when sent, against
/// those CA certificates (a client that sends none is let through:
/// it is anonymous). A client certificate from another CA, expired, or
/// unparsable fails the handshake.
pub fn server_config_mtls(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
) -> Result<Arc<rustls::ServerConfig>, NetError> {
    let Some(ca_pem) = client_ca_pem else {
        return server_config(cert_chain_pem, key_pem);
    };
    let mut certs = certificates(cert_chain_pem, "server certificate")?;
    let cas = certificates(ca_pem, "client CA certificate")?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in cas {
        roots
            .add(ca.clone())
            .map_err(|e| config_err("client CA certificate", e))?;
        if !certs.contains(&ca) {
            certs.push(ca);
        }
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| config_err("server key", e))?;
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .allow_unauthenticated()
            .build()
            .map_err(|e| config_err("client CA certificate", e))?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| config_err("tls", e))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| config_err("server certificate and key", e))?;
    Ok(Arc::new(config))
}

/// [`server_config_mtls`] from files.
pub fn server_config_mtls_from_files(
    cert_chain_path: &Path,
    key_path: &Path,
    client_ca_path: Option<&Path>,
) -> Result<Arc<rustls::ServerConfig>, NetError> {
    let ca = client_ca_path.map(read_file).transpose()?;
    server_config_mtls(
        &read_file(cert_chain_path)?,
        &read_file(key_path)?,
        ca.as_deref(),
    )
}

fn read_file(p: &Path) -> Result<Vec<u8>, NetError> {
    std::fs::read(p).map_err(|source| NetError::Io {
        context: format!("reading {}", p.display()),
        source,
    })
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

/// A certificate and its private key (PEM) that a client presents to the
/// servers it calls: on a joined host, the host's certificate from the
/// pool CA, which makes its daemons `condor@HOST` to the pool.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate (chain), PEM.
    pub cert_pem: String,
    /// Its private key, PEM.
    pub key_pem: String,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<secret>")
            .finish()
    }
}

impl ClientIdentity {
    /// The identity read from a certificate file and a key file.
    pub fn from_files(cert_path: &Path, key_path: &Path) -> Result<Self, NetError> {
        let text = |p: &Path| {
            String::from_utf8(read_file(p)?)
                .map_err(|_| NetError::Config(format!("{} is not PEM text", p.display())))
        };
        Ok(ClientIdentity {
            cert_pem: text(cert_path)?,
            key_pem: text(key_path)?,
        })
    }
}

/// [`client_config`] that also presents `identity` when the server asks
/// for a client certificate.
pub fn client_config_with_identity(
    ca_pem: &[u8],
    identity: Option<&ClientIdentity>,
) -> Result<Arc<rustls::ClientConfig>, NetError> {
    let Some(identity) = identity else {
        return client_config(ca_pem);
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(ca_pem, "CA certificate")? {
        roots
            .add(cert)
            .map_err(|e| config_err("CA certificate", e))?;
    }
    let certs = certificates(identity.cert_pem.as_bytes(), "client certificate")?;
    let key = PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes())
        .map_err(|e| config_err("client key", e))?;
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| config_err("tls", e))?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|e| config_err("client certificate and key", e))?;
    Ok(Arc::new(config))
}

/// Which end of a connection describes a TLS failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The client (we dialed).
    Client,
    /// The server (we accepted).
    Server,
}

/// A TLS failure in words that say who refused what: "the server refused
/// our certificate", "we refused the server's certificate: ...".
pub fn describe(e: &rustls::Error, side: Side) -> String {
    use rustls::AlertDescription as A;
    let (peer, peers) = match side {
        Side::Client => ("server", "the server's"),
        Side::Server => ("client", "the client's"),
    };
    match e {
        rustls::Error::InvalidCertificate(c) => {
            format!("we refused {peers} certificate: {c}")
        }
        rustls::Error::NoCertificatesPresented => {
            format!("the {peer} presented no certificate")
        }
        rustls::Error::AlertReceived(alert) => match alert {
            A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::CertificateRequired
            | A::UnknownCA
            | A::AccessDenied
            | A::DecryptError => format!(
                "the {peer} refused our certificate (alert: {alert:?}); \
                 is it signed by the pool's CA and still valid?"
            ),
            other => format!("the {peer} ended the handshake (alert: {other:?})"),
        },
        rustls::Error::General(m) => m.clone(),
        other => other.to_string(),
    }
}

/// The rustls error inside an I/O or hyper error chain, if any.
pub(crate) fn find_rustls_error<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a rustls::Error> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if let Some(inner) = io.get_ref() {
                if let Some(r) = inner.downcast_ref::<rustls::Error>() {
                    return Some(r);
                }
            }
        }
        cur = err.source();
    }
    None
}

/// A client's failed TLS handshake with `endpoint` as a [`NetError::Tls`].
pub(crate) fn tls_error(endpoint: &str, e: &std::io::Error) -> NetError {
    let message = match find_rustls_error(e) {
        Some(r) => describe(r, Side::Client),
        None => e.to_string(),
    };
    NetError::Tls {
        endpoint: endpoint.to_string(),
        message,
    }
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
