//! WorkloadPriorityClass: a named priority for Workloads, chosen with the
//! `kueue.x-k8s.io/priority-class` label, independent of pod priority.
//! Cluster-scoped.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The fields of a WorkloadPriorityClass (they sit at the top level of the
/// object; there is no `spec`).
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "WorkloadPriorityClass",
    plural = "workloadpriorityclasses",
    shortname = "wpc",
    no_spec,
    derive = "Default",
    derive = "PartialEq",
    doc = "WorkloadPriorityClass is the Schema for the workloadPriorityClass API",
    printcolumn(
        name = "Value",
        type_ = "integer",
        json_path = ".value",
        description = "Value of workloadPriorityClass's Priority"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadPriorityClassFields {
    /// The priority Workloads of this class get. Changing it does not change
    /// Workloads already created.
    pub value: i32,

    /// When this class should be used; at most 2048 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub description: Option<String>,
}
