//! LocalQueue: the namespaced queue users submit to (label
//! `kueue.x-k8s.io/queue-name`), backed by one ClusterQueue. Short names
//! `queue`, `queues`, `lq`.

use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Condition};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AdmissionFairSharingStatus, FairSharing};
use crate::api::schema;

/// The desired state of a LocalQueue.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "LocalQueue",
    plural = "localqueues",
    namespaced,
    shortname = "queue",
    shortname = "queues",
    shortname = "lq",
    status = "LocalQueueStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "LocalQueue is the Schema for the localQueues API",
    printcolumn(
        name = "ClusterQueue",
        type_ = "string",
        json_path = ".spec.clusterQueue",
        description = "Backing ClusterQueue"
    ),
    printcolumn(
        name = "Pending Workloads",
        type_ = "integer",
        json_path = ".status.pendingWorkloads",
        description = "Number of pending workloads"
    ),
    printcolumn(
        name = "Admitted Workloads",
        type_ = "integer",
        json_path = ".status.admittedWorkloads",
        description = "Number of admitted workloads that haven't finished yet."
    )
)]
#[serde(rename_all = "camelCase", remote = "Self")]
pub struct LocalQueueSpec {
    /// The ClusterQueue backing this queue. Cannot be changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "schema::object_name",
        extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "field is immutable"}])
    )]
    pub cluster_queue: Option<String>,

    /// None (the default), Hold or HoldAndDrain. Anything but None makes the
    /// queue inactive: no new reservations; HoldAndDrain also evicts the
    /// admitted Workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["None", "Hold", "HoldAndDrain"], "default" = "None"))]
    pub stop_policy: Option<String>,

    /// Properties used when admission fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
}

super::spec_may_be_absent!(LocalQueueSpec);

/// The observed state of a LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueStatus {
    /// Latest observations; `Active` says whether the backing ClusterQueue
    /// accepts this queue's Workloads. At most 16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Option<Vec<Condition>>,

    /// Workloads not yet admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_workloads: Option<i32>,

    /// Workloads reserving quota and not finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserving_workloads: Option<i32>,

    /// Workloads admitted and not finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_workloads: Option<i32>,

    /// Quota reserved per flavor by this queue's Workloads. At most 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors_reservation: Option<Vec<LocalQueueFlavorUsage>>,

    /// Quota used per flavor by this queue's admitted Workloads. At most 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors_usage: Option<Vec<LocalQueueFlavorUsage>>,

    /// Fair sharing state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<LocalQueueFairSharingStatus>,
}

/// Usage of one flavor by a LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueFlavorUsage {
    /// The flavor.
    #[schemars(schema_with = "schema::object_name")]
    pub name: String,

    /// Usage per resource. At most 64.
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub resources: Vec<LocalQueueResourceUsage>,
}

/// Usage of one resource by a LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueResourceUsage {
    /// The resource.
    pub name: String,

    /// Total quota used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub total: Option<Quantity>,
}

/// The fair sharing state of a LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueFairSharingStatus {
    /// See `FairSharingStatus.weightedShare`.
    pub weighted_share: i64,

    /// Admission fair sharing state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_fair_sharing_status: Option<AdmissionFairSharingStatus>,
}
