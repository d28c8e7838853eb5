//! cert-manager (controller and CA injector) as an optional component of the
//! local control plane: its binaries and CRDs come from
//! `tests/cluster/build-cert-manager.sh` (or `$BATCHGATE_CERT_MANAGER_DIR`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Error;

/// Environment variable naming a directory laid out as build-cert-manager.sh
/// leaves it (`cert-manager-controller`, `cert-manager-cainjector`,
/// `crds/`); when set, the script is not run.
pub const DIR_ENV: &str = "BATCHGATE_CERT_MANAGER_DIR";

/// The programs started, in order.
pub const PROGRAMS: &[&str] = &["cert-manager-controller", "cert-manager-cainjector"];

/// The namespace ClusterIssuers keep their Secrets in (cert-manager's
/// `--cluster-resource-namespace` default).
pub const NAMESPACE: &str = "cert-manager";

/// The CRDs cert-manager serves, as `crd/<name>` for `kubectl wait`.
pub const CRDS: &[&str] = &[
    "crd/certificaterequests.cert-manager.io",
    "crd/certificates.cert-manager.io",
    "crd/clusterissuers.cert-manager.io",
    "crd/issuers.cert-manager.io",
    "crd/challenges.acme.cert-manager.io",
    "crd/orders.acme.cert-manager.io",
];

/// Where cert-manager's binaries and CRDs are.
#[derive(Debug, Clone)]
pub struct CertManager {
    pub dir: PathBuf,
}

impl CertManager {
    /// Uses `$BATCHGATE_CERT_MANAGER_DIR` if set, else runs
    /// `tests/cluster/build-cert-manager.sh` (a stamp check when its cache is
    /// warm; a cold build compiles cert-manager and takes minutes, its
    /// progress goes to stderr).
    pub fn locate_or_build() -> Result<CertManager, Error> {
        if let Some(dir) = std::env::var_os(DIR_ENV) {
            return CertManager {
                dir: PathBuf::from(dir),
            }
            .checked(&format!("${DIR_ENV}"));
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("build-cert-manager.sh");
        let output = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| Error::io(format!("running {}", script.display()), e))?;
        if !output.status.success() {
            return Err(Error::Build(format!(
                "{} failed ({}); its messages are on stderr above",
                script.display(),
                output.status
            )));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let Some(last) = stdout.lines().rev().find(|l| !l.trim().is_empty()) else {
            return Err(Error::Build(format!(
                "{} printed no directory",
                script.display()
            )));
        };
        CertManager {
            dir: PathBuf::from(last.trim()),
        }
        .checked(&script.display().to_string())
    }

    fn checked(self, origin: &str) -> Result<CertManager, Error> {
        let mut missing: Vec<String> = PROGRAMS
            .iter()
            .filter(|p| !self.dir.join(p).is_file())
            .map(|p| p.to_string())
            .collect();
        if !self
            .crds()
            .join("cert-manager.io_certificates.yaml")
            .is_file()
        {
            missing.push("crds/cert-manager.io_certificates.yaml".into());
        }
        if !missing.is_empty() {
            return Err(Error::Build(format!(
                "{} (from {origin}) lacks {}; run tests/cluster/build-cert-manager.sh",
                self.dir.display(),
                missing.join(", ")
            )));
        }
        Ok(self)
    }

    pub fn program(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// cert-manager's CRDs, as taken from its module source.
    pub fn crds(&self) -> PathBuf {
        self.dir.join("crds")
    }
}
