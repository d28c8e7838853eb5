//! The throw-away PKI of one local cluster: a CA, the apiserver's serving
//! certificate, the service-account signing key pair and client certificates
//! for the admin and the controller-manager and scheduler identities.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::Error;

/// Paths of the files written by [`Pki::generate`].
#[derive(Debug, Clone)]
pub(crate) struct Pki {
    pub ca_cert: PathBuf,
    pub ca_cert_pem: String,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub sa_key: PathBuf,
    pub sa_pub: PathBuf,
    pub admin: ClientCert,
    pub controller_manager: ClientCert,
    pub scheduler: ClientCert,
    /// The requestheader CA (its own, as kubeadm's: a client certificate
    /// of the cluster CA must not pass for the front proxy) and the
    /// apiserver's client certificate for aggregated APIs.
    pub front_proxy_ca: PathBuf,
    pub front_proxy_client: ClientCert,
}

#[derive(Debug, Clone)]
pub(crate) struct ClientCert {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Names the apiserver answers to; the IP SANs matter most (Go ignores CN).
const SERVING_NAMES: &[&str] = &[
    "127.0.0.1",
    "::1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    // first address of --service-cluster-ip-range, the `kubernetes` Service
    "10.0.0.1",
];

impl Pki {
    pub fn generate(dir: &Path) -> Result<Pki, Error> {
        fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;

        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::default();
        ca_params.distinguished_name = dn("batchgate-local-ca", None);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let ca_cert_pem = ca_cert.pem();
        let issuer = Issuer::new(ca_params, ca_key);

        let serving_key = KeyPair::generate()?;
        let mut serving = CertificateParams::new(
            SERVING_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        )?;
        serving.distinguished_name = dn("kube-apiserver", None);
        serving.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        serving.use_authority_key_identifier_extension = true;
        let serving_cert = serving.signed_by(&serving_key, &issuer)?;

        let sa_key = KeyPair::generate()?;

        let fp_key = KeyPair::generate()?;
        let mut fp_params = CertificateParams::default();
        fp_params.distinguished_name = dn("batchgate-local-front-proxy-ca", None);
        fp_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        fp_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let fp_cert = fp_params.self_signed(&fp_key)?;
        let fp_issuer = Issuer::new(fp_params, fp_key);
        let front_proxy_ca = dir.join("front-proxy-ca.crt");
        write(&front_proxy_ca, &fp_cert.pem(), false)?;

        let pki = Pki {
            ca_cert: dir.join("ca.crt"),
            ca_cert_pem: ca_cert_pem.clone(),
            serving_cert: dir.join("apiserver.crt"),
            serving_key: dir.join("apiserver.key"),
            sa_key: dir.join("sa.key"),
            sa_pub: dir.join("sa.pub"),
            admin: client(dir, "admin", "admin", Some("system:masters"), &issuer)?,
            controller_manager: client(
                dir,
                "controller-manager",
                "system:kube-controller-manager",
                None,
                &issuer,
            )?,
            scheduler: client(dir, "scheduler", "system:kube-scheduler", None, &issuer)?,
            front_proxy_ca,
            front_proxy_client: client(
                dir,
                "front-proxy-client",
                FRONT_PROXY_CLIENT,
                None,
                &fp_issuer,
            )?,
        };
        write(&pki.ca_cert, &ca_cert_pem, false)?;
        write(&pki.serving_cert, &serving_cert.pem(), false)?;
        write(&pki.serving_key, &serving_key.serialize_pem(), true)?;
        write(&pki.sa_key, &sa_key.serialize_pem(), true)?;
        write(&pki.sa_pub, &sa_key.public_key_pem(), false)?;
        Ok(pki)
    }
}

/// The front proxy's common name (`--requestheader-allowed-names`).
pub(crate) const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

fn dn(cn: &str, org: Option<&str>) -> rcgen::DistinguishedName {
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    if let Some(org) = org {
        dn.push(DnType::OrganizationName, org);
    }
    dn
}

fn client(
    dir: &Path,
    file: &str,
    cn: &str,
    org: Option<&str>,
    issuer: &Issuer<'_, KeyPair>,
) -> Result<ClientCert, Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = dn(cn, org);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, issuer)?;
    let out = ClientCert {
        cert: dir.join(format!("{file}.crt")),
        key: dir.join(format!("{file}.key")),
    };
    write(&out.cert, &cert.pem(), false)?;
    write(&out.key, &key.serialize_pem(), true)?;
    Ok(out)
}

fn write(path: &Path, contents: &str, secret: bool) -> Result<(), Error> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if secret { 0o600 } else { 0o644 })
        .open(path)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    file.write_all(contents.as_bytes())
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}
