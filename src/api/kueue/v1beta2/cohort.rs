//! Cohort: a named group of ClusterQueues (and of other Cohorts, through
//! `parentName`) that lend each other unused quota; a Cohort can add quota
//! of its own. Cluster-scoped.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FairSharing, FairSharingStatus, ResourceGroup};
use crate::api::schema;

/// The desired state of a Cohort.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Cohort",
    plural = "cohorts",
    shortname = "co",
    status = "CohortStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "Cohort defines the Cohorts API.\n\nHierarchical Cohorts (any Cohort which has a parent) are compatible\nwith Fair Sharing as of v0.11."
)]
#[serde(rename_all = "camelCase", remote = "Self")]
pub struct CohortSpec {
    /// The parent Cohort. Absent: this Cohort is a root. A parent that does
    /// not exist behaves as a Cohort without limits. While the parents form
    /// a cycle, every member is disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_name")]
    pub parent_name: Option<String>,

    /// Quota this Cohort adds on top of its members', shared by them and
    /// lendable to the parent. borrowingLimit and lendingLimit apply towards
    /// the parent and need one. At most 16 groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub resource_groups: Option<Vec<ResourceGroup>>,

    /// Properties used when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
}

super::spec_may_be_absent!(CohortSpec);

/// The observed state of a Cohort.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CohortStatus {
    /// Fair sharing state, when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharingStatus>,
}
