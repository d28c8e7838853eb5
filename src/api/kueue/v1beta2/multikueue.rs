//! MultiKueueCluster and MultiKueueConfig: the worker clusters a manager
//! dispatches Workloads to, and the lists of them an AdmissionCheck with
//! controllerName `kueue.x-k8s.io/multikueue` names in its parameters.
//! Both cluster-scoped; short names `mkc` and `mkconf`.
//!
//! Upstream has no webhook for either: the rules are the CRD's (the
//! cluster source names exactly one of kubeConfig and clusterProfileRef;
//! a config's clusters are unique). MultiKueueCluster's v1beta1 keeps
//! `spec.kubeConfig` at the top of the spec and is converted by the
//! `/convert` webhook; MultiKueueConfig's versions differ only in
//! `quotaManagement` and the apiserver converts them itself, as upstream
//! registers them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;

/// `spec.controllerName` of the MultiKueue admission check.
pub const MULTIKUEUE_CONTROLLER: &str = "kueue.x-k8s.io/multikueue";

/// The Secret key holding a worker's kubeconfig.
pub const MULTIKUEUE_CONFIG_SECRET_KEY: &str = "kubeconfig";

/// `status.conditions[].type` of a MultiKueueCluster: the manager holds a
/// working client of the worker.
pub const MULTIKUEUE_CLUSTER_ACTIVE: &str = "Active";

/// The label marking the objects a manager created in a worker, valued
/// with the manager's origin (`multiKueue.origin` of its configuration).
pub const MULTIKUEUE_ORIGIN_LABEL: &str = "kueue.x-k8s.io/multikueue-origin";

/// `spec.clusterSource.kubeConfig.locationType` values.
pub mod location_type {
    /// The name of a Secret in the manager's namespace, key `kubeconfig`.
    pub const SECRET: &str = "Secret";
    /// A file path on the manager's disk.
    pub const PATH: &str = "Path";
}

/// `spec.quotaManagement` values of a MultiKueueConfig.
pub mod quota_management {
    pub const MANUAL: &str = "Manual";
    pub const AUTOMATED: &str = "Automated";
}

/// The desired state of a MultiKueueCluster.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "MultiKueueCluster",
    plural = "multikueueclusters",
    shortname = "mkc",
    status = "MultiKueueClusterStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "MultiKueueCluster is the Schema for the multikueue API",
    printcolumn(
        name = "Connected",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Active')].status",
        description = "MultiKueueCluster is connected"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time this workload was created"
    )
)]
#[serde(rename_all = "camelCase", remote = "Self")]
#[schemars(
    extend("required" = ["clusterSource"]),
    transform = cluster_source_without_default
)]
pub struct MultiKueueClusterSpec {
    /// How to connect to the worker cluster.
    // Go writes the struct even when empty, so it is always present.
    #[serde(default)]
    pub cluster_source: ClusterSource,
}

super::spec_may_be_absent!(MultiKueueClusterSpec);

/// `clusterSource` is read as empty when absent, but the schema declares
/// no default for it (upstream's requires it instead).
fn cluster_source_without_default(s: &mut schemars::Schema) {
    if let Some(cs) = s
        .get_mut("properties")
        .and_then(|p| p.get_mut("clusterSource"))
        .and_then(|c| c.as_object_mut())
    {
        cs.remove("default");
    }
}

/// Where the worker's client configuration comes from: exactly one of a
/// kubeconfig and a ClusterProfile.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
    "message": "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
}]))]
pub struct ClusterSource {
    /// A kubeconfig, in a Secret or at a path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfig>,

    /// A ClusterProfile (multicluster.x-k8s.io) in the manager's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_profile_ref: Option<ClusterProfileReference>,
}

/// Where a worker's kubeconfig is kept.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfig {
    /// With locationType Secret, the name of a Secret in the manager's
    /// namespace holding the kubeconfig under the key `kubeconfig`; with
    /// Path, a file path. 1 to 256 characters.
    #[schemars(length(min = 1, max = 256))]
    pub location: String,

    /// Secret (the default) or Path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Secret", "Path"], "default" = "Secret"))]
    pub location_type: Option<String>,
}

/// A ClusterProfile, by name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileReference {
    /// The ClusterProfile's name, 1 to 256 characters.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
}

/// The observed state of a MultiKueueCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueClusterStatus {
    /// Latest observations, at most 16; `Active` says whether the manager
    /// is connected to the worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Option<Vec<Condition>>,
}

/// The CEL rule on `spec.clusters`, verbatim from v0.19.2's marker.
fn unique_clusters() -> serde_json::Value {
    serde_json::json!([{
        "rule": "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
        "message": "must be unique",
    }])
}

/// The desired state of a MultiKueueConfig.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "MultiKueueConfig",
    plural = "multikueueconfigs",
    shortname = "mkconf",
    derive = "Default",
    derive = "PartialEq",
    doc = "MultiKueueConfig is the Schema for the multikueue API"
)]
#[serde(rename_all = "camelCase", remote = "Self")]
// `clusters` may be absent on the wire (Go's omitzero) but the schema
// requires it, as upstream's does.
#[schemars(extend("required" = ["clusters"]))]
pub struct MultiKueueConfigSpec {
    /// The MultiKueueClusters Workloads of the ClusterQueue are dispatched
    /// to, most preferred first (the incremental dispatcher nominates them
    /// in this order): 1 to 20 names, each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 20),
        inner(length(max = 256)),
        extend("x-kubernetes-list-type" = "atomic", "x-kubernetes-validations" = unique_clusters())
    )]
    pub clusters: Vec<String>,

    /// How the manager's ClusterQueue quotas are managed: Manual (when
    /// unset) or Automated (with the MultiKueueManagerQuotaAutomation
    /// feature gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Manual", "Automated"]))]
    pub quota_management: Option<String>,
}

super::spec_may_be_absent!(MultiKueueConfigSpec);

impl MultiKueueCluster {
    /// Whether its `Active` condition is `True` (the AdmissionCheck
    /// counts it as usable).
    pub fn is_active(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == MULTIKUEUE_CLUSTER_ACTIVE && c.status == "True")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_without_spec_read_and_write_as_go_writes_them() {
        let c: MultiKueueCluster = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
            "metadata": {"name": "w"}}))
        .unwrap();
        assert_eq!(c.spec, MultiKueueClusterSpec::default());
        assert_eq!(
            serde_json::to_value(&c.spec).unwrap(),
            json!({"clusterSource": {}})
        );
        let m: MultiKueueConfig = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
            "metadata": {"name": "m"}, "spec": {}}))
        .unwrap();
        assert!(m.spec.clusters.is_empty());
        assert_eq!(serde_json::to_value(&m.spec).unwrap(), json!({}));
    }

    #[test]
    fn a_cluster_is_active_only_with_active_true() {
        let with = |status: &str| -> MultiKueueCluster {
            serde_json::from_value(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
                "metadata": {"name": "w"},
                "spec": {"clusterSource": {"kubeConfig": {"location": "w", "locationType": "Secret"}}},
                "status": {"conditions": [{"type": "Active", "status": status, "reason": "Active",
                    "message": "Connected", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
            .unwrap()
        };
        assert!(with("True").is_active());
        assert!(!with("False").is_active());
        assert!(!MultiKueueCluster::default().is_active());
    }
}
