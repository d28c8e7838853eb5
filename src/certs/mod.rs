//! Certificates: generating a CA and a serving certificate with rcgen, and
//! reading a serving pair from PEM for the TLS listener. The files are
//! written and read by the shell (`server::tls`).

use std::{
    net::IpAddr,
    path::{Path, PathBuf},
    sync::Arc,
};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber, PKCS_ECDSA_P256_SHA256,
};
use rustls::{crypto::CryptoProvider, pki_types::CertificateDer, sign::CertifiedKey};
use time::{Duration, OffsetDateTime};

pub mod rotation;

pub const CA_FILE: &str = "ca.crt";
pub const CERT_FILE: &str = "tls.crt";
pub const KEY_FILE: &str = "tls.key";

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{message}")]
    Mismatch { message: String },
}

pub fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CertError + '_ {
    move |source| CertError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What the serving certificate must be valid for.
#[derive(Debug, Clone)]
pub struct CertOptions {
    pub service: String,
    pub namespace: String,
    pub dns: Vec<String>,
    pub ips: Vec<IpAddr>,
    pub ca_validity_secs: i64,
    pub cert_validity_secs: i64,
}

impl Default for CertOptions {
    fn default() -> Self {
        CertOptions {
            service: "batchgate-webhook".into(),
            namespace: "batchgate-system".into(),
            dns: Vec::new(),
            ips: Vec::new(),
            ca_validity_secs: 3650 * 86_400,
            cert_validity_secs: 365 * 86_400,
        }
    }
}

impl CertOptions {
    /// `<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`,
    /// `localhost`, `127.0.0.1`, then what was asked for.
    pub fn subject_alt_names(&self) -> (Vec<String>, Vec<IpAddr>) {
        let (s, n) = (&self.service, &self.namespace);
        let mut dns = vec![
            s.clone(),
            format!("{s}.{n}"),
            format!("{s}.{n}.svc"),
            format!("{s}.{n}.svc.cluster.local"),
            "localhost".to_string(),
        ];
        for d in &self.dns {
            if !dns.contains(d) {
                dns.push(d.clone());
            }
        }
        let mut ips: Vec<IpAddr> = vec![IpAddr::from([127, 0, 0, 1])];
        for ip in &self.ips {
            if !ips.contains(ip) {
                ips.push(*ip);
            }
        }
        (dns, ips)
    }
}

/// A CA and a serving certificate it signed, PEM-encoded.
#[derive(Clone)]
pub struct Bundle {
    pub ca_pem: String,
    pub ca_key_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

fn random_serial() -> Result<SerialNumber, CertError> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| CertError::Generate(rcgen::Error::RingUnspecified))?;
    bytes[0] &= 0x7f; // a positive INTEGER
    Ok(SerialNumber::from_slice(&bytes))
}

/// Generates an ECDSA P-256 CA and a serving certificate signed by it.
pub fn generate(opts: &CertOptions, now: OffsetDateTime) -> Result<Bundle, CertError> {
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut ca = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "batchgate");
    dn.push(DnType::CommonName, "batchgate-ca");
    ca.distinguished_name = dn;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.not_before = now - Duration::hours(1);
    ca.not_after = now + Duration::seconds(opts.ca_validity_secs);
    ca.serial_number = Some(random_serial()?);
    let ca_cert = ca.self_signed(&ca_key)?;
    let ca_pem = ca_cert.pem();
    let issuer = Issuer::new(ca, &ca_key);
    let (cert_pem, key_pem) = sign_serving(&issuer, opts, now)?;
    Ok(Bundle {
        ca_pem,
        ca_key_pem: ca_key.serialize_pem(),
        cert_pem,
        key_pem,
    })
}

/// A new serving certificate from an existing CA (leaf rotation keeps the
/// CA, so webhook configurations need no change).
pub fn sign_with_ca(
    ca_pem: &str,
    ca_key_pem: &str,
    opts: &CertOptions,
    now: OffsetDateTime,
) -> Result<(String, String), CertError> {
    let ca_key = KeyPair::from_pem(ca_key_pem)?;
    let issuer = Issuer::from_ca_cert_pem(ca_pem, &ca_key)?;
    sign_serving(&issuer, opts, now)
}

fn sign_serving<S: rcgen::SigningKey>(
    issuer: &Issuer<'_, S>,
    opts: &CertOptions,
    now: OffsetDateTime,
) -> Result<(String, String), CertError> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let (dns, ips) = opts.subject_alt_names();
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "batchgate");
    dn.push(
        DnType::CommonName,
        format!("{}.{}.svc", opts.service, opts.namespace),
    );
    params.distinguished_name = dn;
    params.subject_alt_names = dns
        .into_iter()
        .map(|d| d.try_into().map(SanType::DnsName))
        .collect::<Result<_, _>>()?;
    params
        .subject_alt_names
        .extend(ips.into_iter().map(SanType::IpAddress));
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::seconds(opts.cert_validity_secs);
    params.serial_number = Some(random_serial()?);
    let cert = params.signed_by(&key, issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// base64 of the CA PEM, as a webhook configuration's `caBundle` wants it.
pub fn ca_bundle(ca_pem: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes())
}

/// Facts about the serving certificate, for logs and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// Hex serial number.
    pub serial: String,
    /// Expiry as seconds since the Unix epoch.
    pub not_after: i64,
}

/// Every certificate in a PEM text (garbage blocks are skipped).
pub fn pem_certs(pem: &str) -> Vec<CertificateDer<'static>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .filter_map(Result::ok)
        .collect()
}

/// Serial and expiry of the first certificate in a PEM text.
pub fn pem_info(pem: &str) -> Result<CertInfo, CertError> {
    let invalid = |message: String| CertError::Invalid {
        path: PathBuf::from("<pem>"),
        message,
    };
    let der = pem_certs(pem)
        .into_iter()
        .next()
        .ok_or_else(|| invalid("no CERTIFICATE block found".into()))?;
    cert_info(&der).map_err(invalid)
}

fn cert_info(der: &CertificateDer<'_>) -> Result<CertInfo, String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("not an X.509 certificate: {e}"))?;
    Ok(CertInfo {
        serial: parsed.raw_serial_as_string().replace(':', ""),
        not_after: parsed.validity().not_after.timestamp(),
    })
}

/// A serving pair read from disk, checked and ready for rustls.
pub struct ServingCert {
    pub key: Arc<CertifiedKey>,
    pub info: CertInfo,
}

/// Parses a PEM certificate chain and private key and checks that they belong
/// together.
pub fn load_pem(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> Result<ServingCert, CertError> {
    let invalid = |path: &Path, message: String| CertError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<_, _>>()
        .map_err(|e| invalid(cert_path, format!("not PEM: {e}")))?;
    let Some(leaf) = chain.first() else {
        return Err(invalid(cert_path, "no CERTIFICATE block found".into()));
    };
    let key_der = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|e| invalid(key_path, format!("not PEM: {e}")))?
        .ok_or_else(|| invalid(key_path, "no PRIVATE KEY block found".into()))?;
    let info = cert_info(leaf).map_err(|m| invalid(cert_path, m))?;
    let signing = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| invalid(key_path, format!("unusable private key: {e}")))?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(|e| CertError::Mismatch {
        message: format!(
            "{} does not match the certificate in {}: {e}",
            key_path.display(),
            cert_path.display()
        ),
    })?;
    Ok(ServingCert {
        key: Arc::new(certified),
        info,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> CryptoProvider {
        rustls::crypto::ring::default_provider()
    }

    #[test]
    fn generated_pair_loads_and_has_the_sans() {
        let now = OffsetDateTime::now_utc();
        let opts = CertOptions {
            dns: vec!["webhook.example".into()],
            ..CertOptions::default()
        };
        let b = generate(&opts, now).unwrap();
        let sc = load_pem(
            b.cert_pem.as_bytes(),
            b.key_pem.as_bytes(),
            Path::new("c"),
            Path::new("k"),
            &provider(),
        )
        .unwrap();
        assert!(sc.info.not_after > now.unix_timestamp() + 364 * 86400);
        let der = rustls_pemfile::certs(&mut b.cert_pem.as_bytes())
            .next()
            .unwrap()
            .unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let san = cert.subject_alternative_name().unwrap().unwrap().value;
        let names: Vec<String> = san.general_names.iter().map(|g| g.to_string()).collect();
        for want in [
            "DNSName(batchgate-webhook)",
            "DNSName(batchgate-webhook.batchgate-system)",
            "DNSName(batchgate-webhook.batchgate-system.svc)",
            "DNSName(batchgate-webhook.batchgate-system.svc.cluster.local)",
            "DNSName(localhost)",
            "DNSName(webhook.example)",
            "IPAddress(7f:00:00:01)",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "missing {want} in {names:?}"
            );
        }
    }

    #[test]
    fn mismatched_key_is_refused() {
        let now = OffsetDateTime::now_utc();
        let a = generate(&CertOptions::default(), now).unwrap();
        let b = generate(&CertOptions::default(), now).unwrap();
        let err = load_pem(
            a.cert_pem.as_bytes(),
            b.key_pem.as_bytes(),
            Path::new("tls.crt"),
            Path::new("tls.key"),
            &provider(),
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("does not match"), "{err}");
    }

    #[test]
    fn garbage_is_refused_with_the_file_named() {
        let err = load_pem(
            b"garbage",
            b"garbage",
            Path::new("tls.crt"),
            Path::new("tls.key"),
            &provider(),
        )
        .err()
        .unwrap();
        assert!(err.to_string().starts_with("tls.crt:"), "{err}");
    }

    #[test]
    fn leaf_rotation_keeps_the_ca() {
        let now = OffsetDateTime::now_utc();
        let b = generate(&CertOptions::default(), now).unwrap();
        let (cert, key) =
            sign_with_ca(&b.ca_pem, &b.ca_key_pem, &CertOptions::default(), now).unwrap();
        let first = load_pem(
            b.cert_pem.as_bytes(),
            b.key_pem.as_bytes(),
            Path::new("c"),
            Path::new("k"),
            &provider(),
        )
        .unwrap();
        let second = load_pem(
            cert.as_bytes(),
            key.as_bytes(),
            Path::new("c"),
            Path::new("k"),
            &provider(),
        )
        .unwrap();
        assert_ne!(first.info.serial, second.info.serial);
    }
}
