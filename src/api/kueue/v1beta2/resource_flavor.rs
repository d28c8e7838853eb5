//! ResourceFlavor: a kind of node (labels, taints) quota is given for; the
//! flavor's node labels and tolerations are added to admitted pods.
//! Cluster-scoped, short names `flavor`, `flavors`, `rf`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;

/// The CEL rules Kueue puts on toleration lists (ResourceFlavor
/// `spec.tolerations`, Workload admission check `podSetUpdates[].tolerations`).
pub(crate) fn toleration_rules() -> serde_json::Value {
    serde_json::json!([
        {
            "rule": "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
            "message": "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
        },
        {
            "rule": "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
            "message": "effect must be 'NoExecute' when 'tolerationSeconds' is set",
        },
        {
            "rule": "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
            "message": "supported toleration values: 'Equal'(default), 'Exists'",
        },
        {
            "rule": "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
            "message": "a value must be empty when 'operator' is 'Exists'",
        },
        {
            "rule": "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
            "message": "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        },
    ])
}

/// The desired state of a ResourceFlavor.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ResourceFlavor",
    plural = "resourceflavors",
    shortname = "flavor",
    shortname = "flavors",
    shortname = "rf",
    derive = "Default",
    derive = "PartialEq",
    doc = "ResourceFlavor is the Schema for the resourceflavors API."
)]
#[serde(rename_all = "camelCase", remote = "Self")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.topologyName) || self.nodeLabels.size() >= 1",
        "message": "at least one nodeLabel is required when topology is set",
    },
    {
        "rule": "!has(oldSelf.topologyName) || (has(self.nodeLabels) == has(oldSelf.nodeLabels) && (!has(self.nodeLabels) || self.nodeLabels == oldSelf.nodeLabels))",
        "message": "nodeLabels are immutable when topologyName is set",
    },
    {
        "rule": "!has(oldSelf.topologyName) || (has(self.tolerations) == has(oldSelf.tolerations) && (!has(self.tolerations) || self.tolerations == oldSelf.tolerations))",
        "message": "tolerations are immutable when topologyName is set",
    },
    {
        "rule": "!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == oldSelf.topologyName)",
        "message": "topologyName is immutable when topologyName is set",
    },
]))]
pub struct ResourceFlavorSpec {
    /// Labels of the nodes this flavor stands for. A PodSet can only get
    /// this flavor if its nodeSelector and required node affinity agree with
    /// these labels; they are added to the admitted pods' nodeSelector.
    /// At most 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 8, "x-kubernetes-map-type" = "atomic"))]
    pub node_labels: Option<BTreeMap<String, String>>,

    /// Taints of the nodes this flavor stands for. A PodSet can only get
    /// this flavor if it tolerates them (NoSchedule and NoExecute are
    /// considered; taints matched by the flavor's own tolerations are
    /// ignored). At most 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 8),
        extend(
            "x-kubernetes-list-type" = "atomic",
            "x-kubernetes-validations" = [{
                "rule": "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
                "message": "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
            }]
        )
    )]
    pub node_taints: Option<Vec<Taint>>,

    /// Tolerations added to the pods admitted with this flavor. At most 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "atomic", "x-kubernetes-validations" = toleration_rules())
    )]
    pub tolerations: Option<Vec<Toleration>>,

    /// The Topology of this flavor, for topology-aware scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_name")]
    pub topology_name: Option<String>,
}

super::spec_may_be_absent!(ResourceFlavorSpec);
