//! AppWrapper (`workload.codeflare.dev/v1beta2`), field for field as
//! project-codeflare/appwrapper's `api/v1beta2/appwrapper_types.go`, so
//! upstream manifests apply unchanged and read back without losing fields.
//! Short name `aw`.
//!
//! Each component's `template` is an embedded resource kept as raw JSON:
//! the apiserver checks its `apiVersion`, `kind` and `metadata`, and keeps
//! every other field as written.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{PodSchedulingGate, Toleration},
    apimachinery::pkg::apis::meta::v1::Condition,
};
use kube::CustomResource;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::schema;

/// The version served and stored.
pub const VERSION: &str = "v1beta2";

/// `spec.managedBy` of AppWrappers this project's controller reconciles
/// (an absent value means the same).
pub const CONTROLLER_NAME: &str = "workload.codeflare.dev/appwrapper-controller";

/// Put by the controller on every wrapped object and pod template, with
/// the AppWrapper's name as value.
pub const APPWRAPPER_LABEL: &str = "workload.codeflare.dev/appwrapper";

/// The requester's user name and uid, set by the webhook (sanitized).
pub const USER_LABEL: &str = "workload.codeflare.dev/user";
pub const USER_ID_LABEL: &str = "workload.codeflare.dev/userid";

/// The desired state of an AppWrapper.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "workload.codeflare.dev",
    version = "v1beta2",
    kind = "AppWrapper",
    plural = "appwrappers",
    namespaced,
    shortname = "aw",
    status = "AppWrapperStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "AppWrapper is the Schema for the appwrappers API",
    printcolumn(name = "Status", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Quota Reserved",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"QuotaReserved\")].status"
    ),
    printcolumn(
        name = "Resources Deployed",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"ResourcesDeployed\")].status"
    ),
    printcolumn(
        name = "Unhealthy",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Unhealthy\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperSpec {
    /// The wrapped objects, created together once the AppWrapper runs.
    pub components: Vec<AppWrapperComponent>,

    /// While true, no wrapped object exists (Kueue's suspend protocol).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// The controller that reconciles this AppWrapper; absent or
    /// `workload.codeflare.dev/appwrapper-controller` for this project's.
    /// Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
}

/// One wrapped object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperComponent {
    /// Free-form annotations of the component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,

    /// The pod templates of the object and how many pods each runs, for
    /// kinds whose pod sets cannot be inferred.
    #[serde(default, rename = "podSets", skip_serializing_if = "Option::is_none")]
    pub declared_pod_sets: Option<Vec<AppWrapperPodSet>>,

    /// What Kueue injects into each pod set's template on admission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_infos: Option<Vec<AppWrapperPodSetInfo>>,

    /// The wrapped object.
    #[schemars(schema_with = "embedded_resource")]
    pub template: Value,
}

/// A pod template inside a component and its pod count.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperPodSet {
    /// Pods in this pod set (absent means 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// Where the PodTemplateSpec is, e.g. `template.spec.template`.
    pub path: String,

    /// Annotations of the pod set (the topology-aware scheduling ones are
    /// read by Kueue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// What Kueue puts into one pod set's template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperPodSetInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_gates: Option<Vec<PodSchedulingGate>>,
}

/// The observed state of an AppWrapper.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperStatus {
    /// Suspended, Resuming, Running, Resetting, Suspending, Succeeded,
    /// Failed or Terminating; absent before the first reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,

    /// How many times the AppWrapper entered Resetting.
    #[serde(
        default,
        rename = "resettingCount",
        skip_serializing_if = "Option::is_none"
    )]
    pub retries: Option<i32>,

    /// QuotaReserved, ResourcesDeployed, PodsReady, Unhealthy,
    /// DeletingResources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "conditions")]
    pub conditions: Option<Vec<Condition>>,

    /// One entry per component, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_status: Option<Vec<AppWrapperComponentStatus>>,
}

/// What became of one component.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperComponentStatus {
    /// The created object's name.
    pub name: String,
    pub kind: String,
    pub api_version: String,
    /// The component's pod sets (declared, else inferred), as Kueue reads them.
    pub pod_sets: Vec<AppWrapperPodSet>,
    /// ResourcesDeployed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "conditions")]
    pub conditions: Option<Vec<Condition>>,
}

/// An embedded object: the apiserver checks apiVersion, kind and metadata
/// and keeps everything else.
fn embedded_resource(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// `metav1.Condition` list keyed by type, without Kueue's 16-item bound
/// (upstream sets none).
fn conditions(g: &mut SchemaGenerator) -> Schema {
    let mut s = schema::conditions(g);
    s.remove("maxItems");
    s
}
