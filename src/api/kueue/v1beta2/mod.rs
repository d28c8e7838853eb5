//! `kueue.x-k8s.io/v1beta2`: ClusterQueue, LocalQueue, ResourceFlavor,
//! Workload, WorkloadPriorityClass, Cohort, AdmissionCheck,
//! ProvisioningRequestConfig, Topology, MultiKueueCluster and
//! MultiKueueConfig.
//!
//! Conventions, so objects written by upstream tools round-trip exactly:
//!
//! - every optional field is an `Option` (absent stays absent, an explicit
//!   empty list or map stays explicit);
//! - enumerations are `String`s validated by the schema's `enum`, with the
//!   known values as constants here, so a value a newer Kueue adds does not
//!   make the object unreadable;
//! - quantities are k8s-openapi's [`Quantity`] (the original string is kept);
//! - embedded Kubernetes types (pod templates, taints, tolerations, label
//!   selectors, conditions) are k8s-openapi's.

/// Lets a kind's `spec` be absent (or null) on the wire, as Kueue allows (a
/// ResourceFlavor or Cohort is often just a name): the derived root type
/// requires the field, so the spec type itself reads a missing value as
/// its default. The spec struct derives serde with `remote = "Self"`; this
/// adds the trait impls around those derived functions.
macro_rules! spec_may_be_absent {
    ($spec:ident) => {
        impl<'de> ::serde::Deserialize<'de> for $spec {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Present($spec);
                impl<'de> ::serde::Deserialize<'de> for Present {
                    fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                        $spec::deserialize(d).map(Present)
                    }
                }
                Ok(Option::<Present>::deserialize(d)?
                    .map(|p| p.0)
                    .unwrap_or_default())
            }
        }

        impl ::serde::Serialize for $spec {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $spec::serialize(self, s)
            }
        }
    };
}
pub(crate) use spec_may_be_absent;

mod admission_check;
mod cluster_queue;
mod cohort;
mod local_queue;
mod multikueue;
mod provisioning_request_config;
mod resource_flavor;
mod topology;
mod workload;
mod workload_priority_class;

pub use admission_check::*;
pub use cluster_queue::*;
pub use cohort::*;
pub use local_queue::*;
pub use multikueue::*;
pub use provisioning_request_config::*;
pub use resource_flavor::*;
pub use topology::*;
pub use workload::*;
pub use workload_priority_class::*;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;

/// The version served and stored.
pub const VERSION: &str = "v1beta2";

/// `corev1.ResourceList`: resource name (`cpu`, `memory`, `nvidia.com/gpu`)
/// to quantity.
pub type ResourceList = BTreeMap<String, Quantity>;

/// `stopPolicy` values (ClusterQueue and LocalQueue).
pub mod stop_policy {
    pub const NONE: &str = "None";
    pub const HOLD: &str = "Hold";
    pub const HOLD_AND_DRAIN: &str = "HoldAndDrain";
}

/// The `Active` condition type of ClusterQueues and LocalQueues.
pub const CONDITION_ACTIVE: &str = "Active";

/// A group of resources and the flavors that provide quota for them
/// (ClusterQueue and Cohort `spec.resourceGroups[]`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
    "message": "flavors must have the same number of resources as the coveredResources",
}]))]
pub struct ResourceGroup {
    /// The resources this group covers, e.g. cpu, memory, vendor.com/gpu:
    /// 1 to 64, and at most 256 across the groups of a ClusterQueue.
    #[schemars(length(min = 1, max = 64), extend("x-kubernetes-list-type" = "atomic"))]
    pub covered_resources: Vec<String>,

    /// The flavors providing quota for the covered resources, in order of
    /// preference. Each lists every covered resource, in the same order.
    /// 1 to 64, and at most 256 across the groups of a ClusterQueue.
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors: Vec<FlavorQuotas>,
}

/// The quotas one flavor provides.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlavorQuotas {
    /// The name of a ResourceFlavor. While no ResourceFlavor has this name
    /// the ClusterQueue is not Active.
    #[schemars(schema_with = "schema::object_name")]
    pub name: String,

    /// One quota per covered resource, 1 to 64.
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub resources: Vec<ResourceQuota>,
}

/// The quota of one resource in one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceQuota {
    /// The resource name.
    pub name: String,

    /// How much of the resource Workloads admitted through this queue may
    /// use at once, before borrowing. Non-negative.
    #[schemars(schema_with = "schema::quantity")]
    pub nominal_quota: Quantity,

    /// How much more than nominalQuota may be borrowed from unused quota in
    /// the cohort; absent means no limit. Only allowed with a cohort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub borrowing_limit: Option<Quantity>,

    /// How much of the unused nominalQuota others in the cohort may borrow;
    /// absent means all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub lending_limit: Option<Quantity>,
}

/// Fair sharing properties of a ClusterQueue, Cohort or LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FairSharing {
    /// The comparative advantage when competing for unused resources: the
    /// share (dominant resource usage above nominal quota) is divided by the
    /// weight. Zero means an infinite share. Defaults to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity", extend("default" = 1))]
    pub weight: Option<Quantity>,
}

/// The observed fair sharing state of a ClusterQueue or Cohort.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FairSharingStatus {
    /// The largest ratio, over the resources, of usage above nominal quota
    /// to lendable resources in the cohort, divided by the weight. Zero when
    /// below nominal quota; 9223372036854775807 when borrowing with weight 0.
    pub weighted_share: i64,
}

/// Decayed resource consumption used by admission fair sharing.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionFairSharingStatus {
    /// Resource usage aggregated over time with decay applied.
    #[schemars(schema_with = "schema::resource_list")]
    pub consumed_resources: ResourceList,

    /// When the share and consumed resources were last updated.
    pub last_update: Time,
}

/// `admissionScope.admissionMode` values.
pub mod admission_mode {
    pub const USAGE_BASED_ADMISSION_FAIR_SHARING: &str = "UsageBasedAdmissionFairSharing";
    pub const NO_ADMISSION_FAIR_SHARING: &str = "NoAdmissionFairSharing";
}

/// Whether a ClusterQueue uses admission fair sharing.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionScope {
    /// UsageBasedAdmissionFairSharing or NoAdmissionFairSharing.
    #[schemars(extend("enum" = ["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]))]
    pub admission_mode: String,
}
