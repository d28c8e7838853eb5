//! Finding (and if needed building) the control-plane binaries.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Error;

/// The binaries `tests/cluster/build.sh` produces.
pub const BINARIES: &[&str] = &[
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "etcd",
    "kwok",
];

/// Environment variable naming a directory that already holds all of
/// [`BINARIES`]; when set, build.sh is not run. The KWOK stage file is then
/// taken from `BATCHGATE_CLUSTER_STAGES`, or `<bin>/../stages.yaml`.
pub const BIN_ENV: &str = "BATCHGATE_CLUSTER_BIN";
/// Environment variable naming the KWOK stage file (see [`BIN_ENV`]).
pub const STAGES_ENV: &str = "BATCHGATE_CLUSTER_STAGES";

/// The build script, located relative to this crate's sources.
pub fn build_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("build.sh")
}

/// Where the control-plane binaries and the KWOK stage file are.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// Directory holding every name in [`BINARIES`].
    pub bin_dir: PathBuf,
    /// KWOK's Stage documents (node and pod "fast" stages).
    pub stages: PathBuf,
}

impl Binaries {
    /// Uses `$BATCHGATE_CLUSTER_BIN` if set, else runs `tests/cluster/build.sh`
    /// (seconds when its cache is warm; a cold build compiles Kubernetes and
    /// takes many minutes, its progress goes to stderr).
    pub fn locate_or_build() -> Result<Binaries, Error> {
        if let Some(dir) = std::env::var_os(BIN_ENV) {
            let bin_dir = PathBuf::from(dir);
            let stages = std::env::var_os(STAGES_ENV)
                .map(PathBuf::from)
                .unwrap_or_else(|| bin_dir.join("..").join("stages.yaml"));
            return Binaries { bin_dir, stages }.checked(&format!("${BIN_ENV}"));
        }
        let script = build_script();
        if !script.is_file() {
            return Err(Error::Build(format!(
                "{} not found; run tests/cluster/build.sh from the batchgate checkout, \
                 or set {BIN_ENV} to a directory with {}",
                script.display(),
                BINARIES.join(", ")
            )));
        }
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
        let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
        let Some(last) = last else {
            return Err(Error::Build(format!(
                "{} printed no bin directory",
                script.display()
            )));
        };
        let bin_dir = PathBuf::from(last.trim());
        let stages = bin_dir.join("..").join("stages.yaml");
        Binaries { bin_dir, stages }.checked(&script.display().to_string())
    }

    fn checked(self, origin: &str) -> Result<Binaries, Error> {
        let missing: Vec<&str> = BINARIES
            .iter()
            .copied()
            .filter(|b| !self.bin_dir.join(b).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(Error::Build(format!(
                "{} (from {origin}) lacks {}; run tests/cluster/build.sh",
                self.bin_dir.display(),
                missing.join(", ")
            )));
        }
        if !self.stages.is_file() {
            return Err(Error::Build(format!(
                "KWOK stage file {} (from {origin}) is missing; run tests/cluster/build.sh",
                self.stages.display()
            )));
        }
        Ok(self)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }
}
