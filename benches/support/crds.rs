//! batchgate's CRDs as the cluster benches install them. Shared with
//! `#[path = "support/crds.rs"] mod crds;`.

use std::path::{Path, PathBuf};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `manifests/crds` as Kueue's `crd/bases` are: without a conversion
/// webhook. These benches run batchgate without its webhooks, and a
/// conversion webhook the apiserver cannot reach fails the decoding of its
/// watch cache's events ("failed to prepare current and previous objects:
/// conversion webhook ... failed"): the caches of Workloads, ClusterQueues
/// and LocalQueues relist and re-watch etcd from old revisions again and
/// again (16x Kueue's bytes out of etcd per Workload, BENCHMARKS.md).
/// Written into `dir`/crds; returns that directory.
pub fn without_conversion_webhook(dir: &Path) -> Result<PathBuf, BoxError> {
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/crds"));
    let out = dir.join("crds");
    std::fs::create_dir_all(&out)?;
    for entry in std::fs::read_dir(src)? {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let mut crd: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&path)?)?;
        if let Some(spec) = crd
            .get_mut("spec")
            .and_then(serde_yaml::Value::as_mapping_mut)
        {
            spec.remove("conversion");
        }
        let name = path.file_name().ok_or("a CRD file without a name")?;
        std::fs::write(out.join(name), serde_yaml::to_string(&crd)?)?;
    }
    Ok(out)
}
