//! The pool's own certificate authority (HTCondor's collector bootstraps
//! its certificate the same way): a CA made on the central manager at first
//! start, per-host certificates it signs, the hash that pins it
//! (`sha256:` + hex of the CA certificate), and a first contact that
//! fetches the CA from a server only if it matches a pinned hash.
//!
//! Host certificates name the host (common name and DNS subject
//! alternative name) and its IP addresses, serve for both TLS server and
//! client authentication, and carry a random serial number: the
//! credential id (lowercase hex) that an administrator lists and revokes.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData, SanType, SerialNumber, SubjectPublicKeyInfo,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::NetError;

/// The prefix of a CA hash.
pub const HASH_PREFIX: &str = "sha256:";

/// How far back a new certificate's validity starts, for clocks that are
/// a little behind.
const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// How long a pool CA is valid (ten years).
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Largest PEM text accepted.
const MAX_PEM_LEN: usize = 64 * 1024;

fn err(what: &str, e: impl fmt::Display) -> NetError {
    NetError::Config(format!("{what}: {e}"))
}

/// The pool's certificate authority: its certificate and private key.
pub struct PoolCa {
    cert_pem: String,
    key_pem: String,
    hash: String,
    issuer: Issuer<'static, KeyPair>,
}

impl fmt::Debug for PoolCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolCa")
            .field("hash", &self.hash)
            .field("key_pem", &"<secret>")
            .finish()
    }
}

/// A certificate issued for a host.
#[derive(Clone)]
pub struct IssuedCert {
    /// The host's certificate (PEM).
    pub cert_pem: String,
    /// The private key (PEM), when the CA generated it; `None` when the
    /// host sent its public key (its private key never left it).
    pub key_pem: Option<String>,
    /// The credential id: the certificate's serial number, lowercase hex.
    pub id: String,
}

impl fmt::Debug for IssuedCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedCert")
            .field("id", &self.id)
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &self.key_pem.as_ref().map(|_| "<secret>"))
            .finish()
    }
}

impl PoolCa {
    /// A new CA named `name` (its common name): a self-signed certificate
    /// that may sign host certificates only (path length 0), valid ten
    /// years, with a new ECDSA P-256 key.
    pub fn generate(name: &str) -> Result<PoolCa, NetError> {
        if name.trim().is_empty() {
            return Err(NetError::Config("the CA needs a name".into()));
        }
        let key = KeyPair::generate().map_err(|e| err("generating the CA key", e))?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name.trim());
        dn.push(DnType::OrganizationName, "Skua pool");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.serial_number = Some(random_serial()?);
        let now = SystemTime::now();
        params.not_before = (now - BACKDATE).into();
        params.not_after = (now + CA_VALIDITY).into();
        let cert = params
            .self_signed(&key)
            .map_err(|e| err("signing the CA certificate", e))?;
        let cert_pem = cert.pem();
        let key_pem = key.serialize_pem();
        let hash = sha256_hash(cert.der());
        Ok(PoolCa {
            cert_pem,
            key_pem,
            hash,
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA from its certificate and private key (PEM), as written by
    /// [`PoolCa::cert_pem`] and [`PoolCa::key_pem`]. Fails if the
    /// certificate is not a CA or the key is not its key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<PoolCa, NetError> {
        let der = first_certificate(cert_pem, "CA certificate")?;
        let info = CertInfo::parse(&der, "CA certificate")?;
        if !info.is_ca {
            return Err(NetError::Config(
                "CA certificate: the certificate is not a CA (basic constraints)".into(),
            ));
        }
        if key_pem.len() > MAX_PEM_LEN {
            return Err(NetError::Config("CA key: PEM text too long".into()));
        }
        let key = KeyPair::from_pem(key_pem).map_err(|e| err("CA key", e))?;
        if key.subject_public_key_info() != info.spki {
            return Err(NetError::Config(
                "CA key: the key does not belong to the CA certificate".into(),
            ));
        }
        let issuer = Issuer::from_ca_cert_der(&der, key).map_err(|e| err("CA certificate", e))?;
        Ok(PoolCa {
            cert_pem: cert_pem.to_string(),
            key_pem: key_pem.to_string(),
            hash: sha256_hash(&der),
            issuer,
        })
    }

    /// The CA certificate (PEM): what every host trusts.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA private key (PEM): stays on the central manager.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// `sha256:` and the 64 lowercase hex digits of the SHA-256 of the CA
    /// certificate (DER): what a joining host pins.
    pub fn hash(&self) -> String {
        self.hash.clone()
    }

    /// A certificate for `host_name` signed by this CA: common name and
    /// DNS subject alternative name `host_name`, an IP subject alternative
    /// name for each of `ips`, a random serial, valid from now (less a few
    /// minutes for clock skew) for `validity_secs`, for TLS server and
    /// client authentication. With `public_key_pem` (a `PUBLIC KEY` PEM,
    /// see [`generate_key`]) the certificate is for that key and no
    /// private key is returned; without it, a key is generated and
    /// returned.
    pub fn issue_host(
        &self,
        host_name: &str,
        ips: &[IpAddr],
        public_key_pem: Option<&str>,
        validity_secs: u64,
    ) -> Result<IssuedCert, NetError> {
        let host = host_name.trim();
        if host.is_empty() || host.len() > 253 || !valid_host_name(host) {
            return Err(NetError::Config(format!(
                "`{host_name}` is not a host name (letters, digits, `-`, `.`, `_`)"
            )));
        }
        if validity_secs == 0 {
            return Err(NetError::Config(
                "a certificate needs a validity of at least 1 s".into(),
            ));
        }
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, host);
        params.distinguished_name = dn;
        let dns = host
            .to_string()
            .try_into()
            .map_err(|e| err(&format!("host name `{host}`"), e))?;
        params.subject_alt_names = std::iter::once(SanType::DnsName(dns))
            .chain(ips.iter().map(|ip| SanType::IpAddress(*ip)))
            .collect();
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(random_serial()?);
        let now = SystemTime::now();
        let validity = Duration::from_secs(validity_secs.min(100 * 365 * 24 * 3600));
        params.not_before = (now - BACKDATE).into();
        params.not_after = (now + validity).into();
        let (cert, key_pem) = match public_key_pem {
            Some(pem) => {
                if pem.len() > MAX_PEM_LEN {
                    return Err(NetError::Config("public key: PEM text too long".into()));
                }
                let spki = SubjectPublicKeyInfo::from_pem(pem).map_err(|e| err("public key", e))?;
                let cert = params
                    .signed_by(&spki, &self.issuer)
                    .map_err(|e| err("signing the host certificate", e))?;
                (cert, None)
            }
            None => {
                let key = KeyPair::generate().map_err(|e| err("generating a host key", e))?;
                let cert = params
                    .signed_by(&key, &self.issuer)
                    .map_err(|e| err("signing the host certificate", e))?;
                (cert, Some(key.serialize_pem()))
            }
        };
        let id = CertInfo::parse(cert.der(), "host certificate")?.serial_hex;
        Ok(IssuedCert {
            cert_pem: cert.pem(),
            key_pem,
            id,
        })
    }
}

/// A new private key for a host (ECDSA P-256): `(private key PEM, public
/// key PEM)`. The host keeps the first and sends the second to the CA.
pub fn generate_key() -> Result<(String, String), NetError> {
    let key = KeyPair::generate().map_err(|e| err("generating a key", e))?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

/// The hash of the (first) certificate in `ca_pem`, which must be a CA
/// certificate: `sha256:` and 64 lowercase hex digits of its DER.
pub fn ca_hash(ca_pem: &str) -> Result<String, NetError> {
    let der = first_certificate(ca_pem, "CA certificate")?;
    if !CertInfo::parse(&der, "CA certificate")?.is_ca {
        return Err(NetError::Config(
            "CA certificate: the certificate is not a CA (basic constraints)".into(),
        ));
    }
    Ok(sha256_hash(&der))
}

/// The credential id of the (first) certificate in `cert_pem`: its serial
/// number in lowercase hex.
pub fn credential_id(cert_pem: &str) -> Result<String, NetError> {
    let der = first_certificate(cert_pem, "certificate")?;
    Ok(CertInfo::parse(&der, "certificate")?.serial_hex)
}

/// A hash as given by a user, checked and normalized (`sha256:` and 64
/// lowercase hex digits).
pub fn parse_hash(text: &str) -> Result<String, NetError> {
    let t = text.trim().to_ascii_lowercase();
    let ok = t
        .strip_prefix(HASH_PREFIX)
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if !ok {
        return Err(NetError::Config(format!(
            "`{}` is not a CA hash (expected {HASH_PREFIX} and 64 hex digits)",
            text.chars().take(100).collect::<String>()
        )));
    }
    Ok(t)
}

/// Connects to `addr`, makes a TLS handshake and returns the server's CA
/// certificate (PEM) if and only if the chain the server presents holds a
/// CA certificate whose hash is `expected_hash` and the server's own
/// certificate is validly signed by it (and within its validity). Sends
/// no application data; the host name in the certificate is not checked
/// (the pin is the trust; later connections check names as usual). A
/// mismatch is a [`NetError::Tls`] naming the expected and the presented
/// hashes. The whole exchange is bounded by `timeout`.
pub async fn fetch_pinned_ca(
    addr: SocketAddr,
    expected_hash: &str,
    timeout: Duration,
) -> Result<String, NetError> {
    let expected = parse_hash(expected_hash)?;
    let endpoint = format!("tls://{addr}");
    let verifier = Arc::new(PinVerifier {
        expected,
        provider: crate::tls::provider(),
        outcome: Mutex::new(None),
    });
    let config = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| err("tls", e))?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let exchange = async {
        let tcp = TcpStream::connect(addr)
            .await
            .map_err(|source| NetError::Connect {
                endpoint: endpoint.clone(),
                source,
            })?;
        let result = connector.connect(crate::tls::server_name(&addr), tcp).await;
        let outcome = verifier
            .outcome
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match (result, outcome) {
            (Ok(mut stream), Some(Ok(ca_pem))) => {
                let _ = stream.shutdown().await;
                Ok(ca_pem)
            }
            (_, Some(Err(message))) => Err(NetError::Tls {
                endpoint: endpoint.clone(),
                message,
            }),
            (Err(e), _) => Err(crate::tls::tls_error(&endpoint, &e)),
            (Ok(_), None) => Err(NetError::Tls {
                endpoint: endpoint.clone(),
                message: "the server presented no certificate".into(),
            }),
        }
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(r) => r,
        Err(_) => Err(NetError::Timeout {
            endpoint,
            after: timeout,
        }),
    }
}

/// The server verifier of [`fetch_pinned_ca`]: accepts a chain only if it
/// holds the pinned CA and the server certificate is signed by it.
struct PinVerifier {
    expected: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
    /// The CA (PEM) or why the chain was refused.
    outcome: Mutex<Option<Result<String, String>>>,
}

impl fmt::Debug for PinVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinVerifier")
            .field("expected", &self.expected)
            .finish()
    }
}

impl PinVerifier {
    fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<String, String> {
        let mut presented = Vec::new();
        let mut pinned = None;
        for cert in intermediates {
            let hash = sha256_hash(cert);
            let is_ca = CertInfo::parse(cert, "certificate").is_ok_and(|i| i.is_ca);
            if is_ca && hash == self.expected {
                pinned = Some(cert);
            }
            if is_ca {
                presented.push(hash);
            }
        }
        let Some(ca) = pinned else {
            let shown = if presented.is_empty() {
                format!(
                    "no CA certificate (its own certificate has hash {})",
                    sha256_hash(end_entity)
                )
            } else {
                presented.join(", ")
            };
            return Err(format!(
                "the server's CA does not match the pinned hash: expected {}, the server presented {shown}",
                self.expected
            ));
        };
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(ca.clone().into_owned())
            .map_err(|e| format!("the pinned CA certificate is unusable: {e}"))?;
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)
            .map_err(|e| format!("the server's certificate does not parse: {e}"))?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &parsed,
            &roots,
            &[],
            now,
            self.provider.signature_verification_algorithms.all,
        )
        .map_err(|e| {
            format!(
                "the server's certificate is not validly signed by the pinned CA {}: {e}",
                self.expected
            )
        })?;
        Ok(to_pem(ca))
    }
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let outcome = self.check(end_entity, intermediates, now);
        let result = match &outcome {
            Ok(_) => Ok(ServerCertVerified::assertion()),
            Err(m) => Err(rustls::Error::General(m.clone())),
        };
        *self.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
        result
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// What Skua reads from a certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CertInfo {
    /// The subject's common name, if any.
    pub common_name: Option<String>,
    /// The serial number, lowercase hex without leading zero bytes.
    pub serial_hex: String,
    /// Whether the basic constraints say CA.
    pub is_ca: bool,
    /// The subject public key info (DER).
    pub spki: Vec<u8>,
}

impl CertInfo {
    /// Parses a DER certificate; `what` names it in the error.
    pub fn parse(der: &[u8], what: &str) -> Result<CertInfo, NetError> {
        let (rest, cert) = x509_parser::parse_x509_certificate(der)
            .map_err(|e| err(what, format!("not an X.509 certificate ({e})")))?;
        if !rest.is_empty() {
            return Err(NetError::Config(format!(
                "{what}: trailing bytes after the certificate"
            )));
        }
        let common_name = cert
            .subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .map(str::to_string);
        let raw = cert.raw_serial();
        let start = raw
            .iter()
            .position(|b| *b != 0)
            .unwrap_or(raw.len().saturating_sub(1));
        let serial_hex = hex(&raw[start..]);
        let is_ca = match cert.basic_constraints() {
            Ok(Some(bc)) => bc.value.ca,
            Ok(None) => false,
            Err(e) => return Err(err(what, format!("bad basic constraints ({e})"))),
        };
        Ok(CertInfo {
            common_name,
            serial_hex,
            is_ca,
            spki: cert.public_key().raw.to_vec(),
        })
    }
}

/// The DER of the first certificate in `pem`.
fn first_certificate(pem: &str, what: &str) -> Result<CertificateDer<'static>, NetError> {
    if pem.len() > MAX_PEM_LEN {
        return Err(NetError::Config(format!("{what}: PEM text too long")));
    }
    match CertificateDer::pem_slice_iter(pem.as_bytes()).next() {
        Some(Ok(der)) => Ok(der),
        Some(Err(e)) => Err(err(what, format!("bad PEM ({e})"))),
        None => Err(NetError::Config(format!(
            "{what}: no `BEGIN CERTIFICATE` block in the PEM text"
        ))),
    }
}

/// A DER certificate as PEM.
pub(crate) fn to_pem(der: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::with_capacity(der.len() * 4 / 3 + 4);
    for chunk in der.chunks(3) {
        let n = match chunk.len() {
            3 => (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8) | u32::from(chunk[2]),
            2 => (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8),
            _ => u32::from(chunk[0]) << 16,
        };
        for i in 0..4 {
            if i <= chunk.len() {
                b64.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

fn sha256_hash(der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    format!("{HASH_PREFIX}{}", hex(digest.as_ref()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A random positive 16-byte serial with a non-zero first byte (so its
/// DER form and its hex are the same bytes).
fn random_serial() -> Result<SerialNumber, NetError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| err("random serial", e))?;
    bytes[0] = (bytes[0] & 0x7f) | 0x10;
    Ok(SerialNumber::from_slice(&bytes))
}

fn valid_host_name(host: &str) -> bool {
    host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use tokio::io::AsyncReadExt;

    const DAY: u64 = 24 * 3600;

    fn localhost() -> Vec<IpAddr> {
        vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]
    }

    fn parsed(pem: &str) -> CertInfo {
        let der = first_certificate(pem, "test").unwrap();
        CertInfo::parse(&der, "test").unwrap()
    }

    /// Whether `cert_pem` is a valid server certificate for 127.0.0.1
    /// under `ca_pem`, by rustls's own verifier.
    fn verifies(cert_pem: &str, ca_pem: &str) -> bool {
        let der = first_certificate(cert_pem, "test").unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(first_certificate(ca_pem, "test").unwrap())
            .unwrap();
        let parsed = rustls::server::ParsedCertificate::try_from(&der).unwrap();
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &parsed,
            &roots,
            &[],
            UnixTime::now(),
            crate::tls::provider().signature_verification_algorithms.all,
        )
        .is_ok()
    }

    #[test]
    fn a_new_ca_is_a_ca_and_its_hash_pins_its_certificate() {
        let ca = PoolCa::generate("pool.example").unwrap();
        let info = parsed(ca.cert_pem());
        assert!(info.is_ca);
        assert_eq!(info.common_name.as_deref(), Some("pool.example"));
        let hash = ca.hash();
        assert!(hash.starts_with("sha256:"));
        assert_eq!(hash.len(), 7 + 64);
        assert_eq!(parse_hash(&hash).unwrap(), hash);
        assert_eq!(ca_hash(ca.cert_pem()).unwrap(), hash);
        let other = PoolCa::generate("pool.example").unwrap();
        assert_ne!(other.hash(), hash);
        assert!(!format!("{ca:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn a_reloaded_ca_issues_certificates_its_original_verifies() {
        let ca = PoolCa::generate("pool").unwrap();
        let again = PoolCa::from_pem(ca.cert_pem(), ca.key_pem()).unwrap();
        assert_eq!(again.hash(), ca.hash());
        let host = again
            .issue_host("exec1.example", &localhost(), None, DAY)
            .unwrap();
        assert!(verifies(&host.cert_pem, ca.cert_pem()));
    }

    #[test]
    fn from_pem_refuses_a_foreign_key_a_non_ca_and_garbage() {
        let ca = PoolCa::generate("pool").unwrap();
        let other = PoolCa::generate("pool").unwrap();
        let e = PoolCa::from_pem(ca.cert_pem(), other.key_pem()).unwrap_err();
        assert!(e.to_string().contains("does not belong"), "{e}");
        let host = ca.issue_host("h", &[], None, DAY).unwrap();
        let e = PoolCa::from_pem(&host.cert_pem, host.key_pem.as_deref().unwrap()).unwrap_err();
        assert!(e.to_string().contains("not a CA"), "{e}");
        for bad in [
            "",
            "garbage",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        ] {
            let e = PoolCa::from_pem(bad, ca.key_pem()).unwrap_err();
            assert!(matches!(e, NetError::Config(_)), "{e}");
            assert!(e.to_string().contains("CA certificate"), "{e}");
        }
        let e = PoolCa::from_pem(ca.cert_pem(), "nope").unwrap_err();
        assert!(e.to_string().contains("CA key"), "{e}");
    }

    #[test]
    fn a_host_certificate_names_the_host_and_its_addresses() {
        let ca = PoolCa::generate("pool").unwrap();
        let ips = vec![
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7)),
            IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ];
        let issued = ca.issue_host("exec1.example", &ips, None, DAY).unwrap();
        assert!(issued.key_pem.is_some());
        let der = first_certificate(&issued.cert_pem, "test").unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let cn = cert.subject().iter_common_name().next().unwrap();
        assert_eq!(cn.as_str().unwrap(), "exec1.example");
        let san = cert.subject_alternative_name().unwrap().unwrap();
        let names: Vec<String> = san
            .value
            .general_names
            .iter()
            .map(|n| format!("{n}"))
            .collect();
        assert!(
            names.iter().any(|n| n.contains("exec1.example")),
            "{names:?}"
        );
        assert!(names.iter().any(|n| n.contains("0a:00:00:07")), "{names:?}");
        assert_eq!(names.len(), 3, "{names:?}");
        assert!(!cert.is_ca());
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.server_auth && eku.client_auth);
        // the id is the serial, and serials are random
        assert_eq!(credential_id(&issued.cert_pem).unwrap(), issued.id);
        assert_eq!(issued.id, hex(cert.raw_serial()));
        let second = ca.issue_host("exec1.example", &ips, None, DAY).unwrap();
        assert_ne!(second.id, issued.id);
        // the validity asked for, less the backdating
        let validity = cert.validity();
        let span = validity.not_after.timestamp() - validity.not_before.timestamp();
        assert_eq!(span as u64, DAY + BACKDATE.as_secs());
    }

    #[test]
    fn a_certificate_for_the_requesters_key_carries_no_private_key() {
        let ca = PoolCa::generate("pool").unwrap();
        let (private, public) = generate_key().unwrap();
        assert!(private.contains("PRIVATE KEY") && public.contains("PUBLIC KEY"));
        let issued = ca
            .issue_host("submit.example", &localhost(), Some(&public), DAY)
            .unwrap();
        assert!(issued.key_pem.is_none());
        assert!(!format!("{issued:?}").contains(&private));
        let key = KeyPair::from_pem(&private).unwrap();
        assert_eq!(parsed(&issued.cert_pem).spki, key.subject_public_key_info());
        assert!(verifies(&issued.cert_pem, ca.cert_pem()));
        // the certificate and the requester's key make a client identity
        let id = crate::tls::ClientIdentity {
            cert_pem: issued.cert_pem,
            key_pem: private,
        };
        crate::tls::client_config_with_identity(ca.cert_pem().as_bytes(), Some(&id)).unwrap();
    }

    #[test]
    fn bad_requests_are_clear_errors() {
        let ca = PoolCa::generate("pool").unwrap();
        for bad in ["", "a b", "x/y", "a..b", "*.example"] {
            let e = ca.issue_host(bad, &[], None, DAY).unwrap_err();
            assert!(e.to_string().contains("not a host name"), "{bad}: {e}");
        }
        let e = ca.issue_host("h", &[], None, 0).unwrap_err();
        assert!(e.to_string().contains("validity"), "{e}");
        let e = ca
            .issue_host(
                "h",
                &[],
                Some("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"),
                DAY,
            )
            .unwrap_err();
        assert!(e.to_string().contains("public key"), "{e}");
        assert!(ca.issue_host("h", &[], Some("garbage"), DAY).is_err());
        assert!(PoolCa::generate(" ").is_err());
        let host = ca.issue_host("h", &[], None, DAY).unwrap();
        let e = ca_hash(&host.cert_pem).unwrap_err();
        assert!(e.to_string().contains("not a CA"), "{e}");
    }

    #[test]
    fn garbage_certificates_and_hashes_are_errors_not_panics() {
        let mut inputs: Vec<String> = vec![
            String::new(),
            "hello".into(),
            "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n".into(),
            "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n".into(),
            "x".repeat(MAX_PEM_LEN + 1),
        ];
        // a real certificate cut short
        let ca = PoolCa::generate("pool").unwrap();
        let der = first_certificate(ca.cert_pem(), "test").unwrap();
        inputs.push(to_pem(&der[..der.len() / 2]));
        for input in &inputs {
            let e = ca_hash(input).unwrap_err();
            assert!(matches!(e, NetError::Config(_)), "{e}");
            let e = credential_id(input).unwrap_err();
            assert!(matches!(e, NetError::Config(_)), "{e}");
        }
        for bad in [
            "",
            "sha256:",
            "md5:00",
            "sha256:zz",
            &format!("sha256:{}", "0".repeat(63)),
        ] {
            assert!(parse_hash(bad).is_err(), "{bad}");
        }
        let upper = ca.hash().to_uppercase().replace("SHA256:", "sha256:");
        assert_eq!(parse_hash(&format!(" {upper} ")).unwrap(), ca.hash());
    }

    proptest::proptest! {
        /// Hostile certificate bytes (random, or a real certificate with
        /// one byte changed) are an error or a certificate, never a panic.
        #[test]
        fn hostile_certificates_never_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            at in 0usize..2000,
            byte in proptest::prelude::any::<u8>(),
        ) {
            let _ = credential_id(&to_pem(&bytes));
            let _ = ca_hash(&to_pem(&bytes));
            let mut real = first_certificate(REAL_CA.cert_pem(), "test").unwrap().to_vec();
            let i = at % real.len();
            real[i] = byte;
            let pem = to_pem(&real);
            let _ = credential_id(&pem);
            let _ = PoolCa::from_pem(&pem, REAL_CA.key_pem());
        }
    }

    static REAL_CA: std::sync::LazyLock<PoolCa> =
        std::sync::LazyLock::new(|| PoolCa::generate("pool").unwrap());

    #[test]
    fn pem_encoding_round_trips() {
        for len in [1usize, 2, 3, 4, 47, 48, 49, 300] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 % 256) as u8).collect();
            let pem = to_pem(&bytes);
            let back = CertificateDer::pem_slice_iter(pem.as_bytes())
                .next()
                .unwrap()
                .unwrap();
            assert_eq!(back.as_ref(), &bytes[..], "{len}");
        }
    }

    /// A TLS server on 127.0.0.1 presenting `chain` with `key` to every
    /// connection; returns its address and a count of the application
    /// bytes it received.
    async fn tls_server(
        chain: String,
        key: String,
    ) -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
        let config = crate::tls::server_config(chain.as_bytes(), key.as_bytes()).unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = received.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let count = count.clone();
                tokio::spawn(async move {
                    if let Ok(mut s) = acceptor.accept(tcp).await {
                        let mut buf = Vec::new();
                        let _ = s.read_to_end(&mut buf).await;
                        count.fetch_add(buf.len(), std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        (addr, received)
    }

    fn host_chain(ca: &PoolCa, name: &str) -> (String, String) {
        let h = ca.issue_host(name, &localhost(), None, DAY).unwrap();
        (
            format!("{}{}", h.cert_pem, ca.cert_pem()),
            h.key_pem.unwrap(),
        )
    }

    const T: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn the_pinned_ca_is_fetched_without_sending_data() {
        let ca = PoolCa::generate("pool").unwrap();
        let (chain, key) = host_chain(&ca, "cm.example");
        let (addr, received) = tls_server(chain, key).await;
        let pem = fetch_pinned_ca(addr, &ca.hash(), T).await.unwrap();
        assert_eq!(ca_hash(&pem).unwrap(), ca.hash());
        // the fetched CA verifies the server on a normal connection
        crate::tls::client_config(pem.as_bytes()).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(received.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_wrong_hash_is_refused_naming_both_hashes() {
        let ca = PoolCa::generate("pool").unwrap();
        let (chain, key) = host_chain(&ca, "cm.example");
        let (addr, _) = tls_server(chain, key).await;
        let wrong = PoolCa::generate("pool").unwrap().hash();
        let e = fetch_pinned_ca(addr, &wrong, T).await.unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, NetError::Tls { .. }), "{text}");
        assert!(text.contains(&wrong) && text.contains(&ca.hash()), "{text}");
    }

    #[tokio::test]
    async fn a_server_of_another_ca_is_refused() {
        let ours = PoolCa::generate("pool").unwrap();
        let theirs = PoolCa::generate("pool").unwrap();
        let (chain, key) = host_chain(&theirs, "cm.example");
        let (addr, _) = tls_server(chain, key).await;
        let e = fetch_pinned_ca(addr, &ours.hash(), T).await.unwrap_err();
        assert!(e.to_string().contains(&ours.hash()), "{e}");
        assert!(e.to_string().contains(&theirs.hash()), "{e}");
    }

    #[tokio::test]
    async fn a_server_showing_our_ca_but_signed_by_another_is_refused() {
        let ours = PoolCa::generate("pool").unwrap();
        let theirs = PoolCa::generate("pool").unwrap();
        let forged = theirs
            .issue_host("cm.example", &localhost(), None, DAY)
            .unwrap();
        // the genuine CA certificate, copied into a forger's chain
        let chain = format!("{}{}", forged.cert_pem, ours.cert_pem());
        let (addr, _) = tls_server(chain, forged.key_pem.unwrap()).await;
        let e = fetch_pinned_ca(addr, &ours.hash(), T).await.unwrap_err();
        assert!(e.to_string().contains("not validly signed"), "{e}");
    }

    #[tokio::test]
    async fn a_server_without_a_ca_in_its_chain_is_refused() {
        let ca = PoolCa::generate("pool").unwrap();
        let h = ca
            .issue_host("cm.example", &localhost(), None, DAY)
            .unwrap();
        let (addr, _) = tls_server(h.cert_pem, h.key_pem.unwrap()).await;
        let e = fetch_pinned_ca(addr, &ca.hash(), T).await.unwrap_err();
        assert!(e.to_string().contains("no CA certificate"), "{e}");
    }

    #[tokio::test]
    async fn a_server_speaking_garbage_is_an_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\nnot tls at all").await;
            }
        });
        let ca = PoolCa::generate("pool").unwrap();
        let e = fetch_pinned_ca(addr, &ca.hash(), T).await.unwrap_err();
        assert!(matches!(e, NetError::Tls { .. }), "{e}");
        let e = fetch_pinned_ca(addr, "sha256:nothex", T).await.unwrap_err();
        assert!(matches!(e, NetError::Config(_)), "{e}");
    }
}
