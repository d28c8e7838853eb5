//! ClusterQueue: quota, queueing and preemption policy for the Workloads of
//! the LocalQueues that point at it. Cluster-scoped, short name `cq`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AdmissionScope, FairSharing, FairSharingStatus, ResourceGroup};
use crate::api::schema;

/// `spec.queueingStrategy` values.
pub mod queueing_strategy {
    /// Workloads are admitted strictly in order; an older one that does not
    /// fit blocks newer ones.
    pub const STRICT_FIFO: &str = "StrictFIFO";
    /// Workloads are tried in order; one that does not fit does not block
    /// newer ones that do.
    pub const BEST_EFFORT_FIFO: &str = "BestEffortFIFO";
}

/// `spec.preemption.*` policy values.
pub mod preemption_policy {
    pub const NEVER: &str = "Never";
    pub const ANY: &str = "Any";
    pub const LOWER_PRIORITY: &str = "LowerPriority";
    pub const LOWER_OR_NEWER_EQUAL_PRIORITY: &str = "LowerOrNewerEqualPriority";
}

/// `spec.flavorFungibility` values.
pub mod flavor_fungibility {
    pub const MAY_STOP_SEARCH: &str = "MayStopSearch";
    pub const TRY_NEXT_FLAVOR: &str = "TryNextFlavor";
    pub const BORROWING_OVER_PREEMPTION: &str = "BorrowingOverPreemption";
    pub const PREEMPTION_OVER_BORROWING: &str = "PreemptionOverBorrowing";
}

/// ClusterQueue `Active` condition reasons.
pub mod cluster_queue_active_reason {
    pub const READY: &str = "Ready";
    pub const STOPPED: &str = "Stopped";
    pub const TERMINATING: &str = "Terminating";
    pub const FLAVOR_NOT_FOUND: &str = "FlavorNotFound";
    pub const ADMISSION_CHECK_NOT_FOUND: &str = "AdmissionCheckNotFound";
    pub const ADMISSION_CHECK_INACTIVE: &str = "AdmissionCheckInactive";
    pub const TOPOLOGY_NOT_FOUND: &str = "TopologyNotFound";
    pub const UNKNOWN: &str = "Unknown";
}

/// The desired state of a ClusterQueue.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ClusterQueue",
    plural = "clusterqueues",
    shortname = "cq",
    status = "ClusterQueueStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "ClusterQueue is the Schema for the clusterQueue API.",
    printcolumn(
        name = "Cohort",
        type_ = "string",
        json_path = ".spec.cohortName",
        description = "Cohort that this ClusterQueue belongs to"
    ),
    printcolumn(
        name = "Strategy",
        type_ = "string",
        json_path = ".spec.queueingStrategy",
        description = "The queueing strategy used to prioritize workloads",
        priority = 1
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
        description = "Number of admitted workloads that haven't finished yet",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase", remote = "Self")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
    "message": "borrowingLimit must be nil when cohort is empty",
}]))]
pub struct ClusterQueueSpec {
    /// Groups of resources, each with the flavors that provide quota for
    /// them. A resource or flavor belongs to one group only. At most 16
    /// groups and 256 flavors in total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub resource_groups: Option<Vec<ResourceGroup>>,

    /// The cohort this queue belongs to; queues of one cohort borrow unused
    /// quota from each other. Empty: no borrowing or lending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_name")]
    pub cohort_name: Option<String>,

    /// StrictFIFO: strictly in order, an older Workload that does not fit
    /// blocks newer ones. BestEffortFIFO (the default): in order, but one
    /// that does not fit does not block newer ones that do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["StrictFIFO", "BestEffortFIFO"], "default" = "BestEffortFIFO"))]
    pub queueing_strategy: Option<String>,

    /// Which namespaces may submit Workloads. Absent: none; `{}`: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        transform = schema::atomic_label_selector,
        extend("x-kubernetes-map-type" = "atomic")
    )]
    pub namespace_selector: Option<LabelSelector>,

    /// Whether to try the next flavor before borrowing or preempting in the
    /// flavor being considered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub flavor_fungibility: Option<FlavorFungibility>,

    /// Preemption policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub preemption: Option<ClusterQueuePreemption>,

    /// Which AdmissionChecks Workloads need, per flavor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_checks_strategy: Option<AdmissionChecksStrategy>,

    /// None (the default), Hold or HoldAndDrain. Anything but None makes the
    /// queue inactive: no new reservations; HoldAndDrain also evicts the
    /// admitted Workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["None", "Hold", "HoldAndDrain"], "default" = "None"))]
    pub stop_policy: Option<String>,

    /// Properties used when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,

    /// Whether this queue uses admission fair sharing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_scope: Option<AdmissionScope>,

    /// Concurrent admission: Workloads pursue several flavors at once and
    /// may later migrate to a preferred one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_admission_policy: Option<ConcurrentAdmissionPolicy>,
}

super::spec_may_be_absent!(ClusterQueueSpec);

/// Which AdmissionChecks apply to which flavors.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionChecksStrategy {
    /// One rule per AdmissionCheck, 1 to 64.
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub admission_checks: Vec<AdmissionCheckStrategyRule>,
}

/// The flavors one AdmissionCheck runs for.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckStrategyRule {
    /// The AdmissionCheck's name.
    #[schemars(length(min = 1, max = 316))]
    pub name: String,

    /// ResourceFlavor names; empty: every Workload of the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 64),
        inner(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN)),
        extend("x-kubernetes-list-type" = "set")
    )]
    pub on_flavors: Option<Vec<String>>,
}

/// Concurrent admission settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcurrentAdmissionPolicy {
    /// Constraints on migrating an admitted Workload to a preferred flavor.
    pub migration: ConcurrentAdmissionMigration,
}

/// How admitted Workloads migrate between flavors.
// The released schema requires `mode`; the apiserver refuses it missing
// before any validating webhook, so decoding takes it as empty, as Go does.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["mode"]))]
pub struct ConcurrentAdmissionMigration {
    /// TryPreferredFlavors or RetainFirstAdmission.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(
        length(max = 253),
        extend("enum" = ["TryPreferredFlavors", "RetainFirstAdmission"])
    )]
    pub mode: String,

    /// Limits on the flavors a Workload may migrate to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<ConcurrentAdmissionConstraints>,
}

/// Limits on migration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcurrentAdmissionConstraints {
    /// The least preferred flavor (in the queue's order) a Workload may
    /// migrate to; only with TryPreferredFlavors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_name")]
    pub last_acceptable_flavor_name: Option<String>,
}

/// Whether a Workload tries the next flavor before borrowing or preempting.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
    "message": "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
}]))]
pub struct FlavorFungibility {
    /// MayStopSearch (the default): stop at a flavor that fits or fits by
    /// borrowing. TryNextFlavor: try the next flavor rather than borrow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["MayStopSearch", "TryNextFlavor"], "default" = "MayStopSearch"))]
    pub when_can_borrow: Option<String>,

    /// MayStopSearch: stop at a flavor that fits or fits by preempting.
    /// TryNextFlavor (the default): try the next flavor rather than preempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["MayStopSearch", "TryNextFlavor"], "default" = "TryNextFlavor"))]
    pub when_can_preempt: Option<String>,

    /// When every flavor needs borrowing or preemption:
    /// BorrowingOverPreemption (the default) or PreemptionOverBorrowing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["BorrowingOverPreemption", "PreemptionOverBorrowing"]))]
    pub preference: Option<String>,
}

/// Which Workloads a pending Workload may preempt.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  self.borrowWithinCohort.policy != 'Never')",
    "message": "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
}]))]
pub struct ClusterQueuePreemption {
    /// Whether a Workload that fits in this queue's nominal quota may
    /// preempt Workloads of other queues in the cohort that borrow: Never
    /// (the default), LowerPriority or Any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Never", "LowerPriority", "Any"], "default" = "Never"))]
    pub reclaim_within_cohort: Option<String>,

    /// Whether a Workload that needs to borrow may preempt in the cohort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub borrow_within_cohort: Option<BorrowWithinCohort>,

    /// Whether a Workload that does not fit the nominal quota may preempt
    /// Workloads of this queue: Never (the default), LowerPriority or
    /// LowerOrNewerEqualPriority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "enum" = ["Never", "LowerPriority", "LowerOrNewerEqualPriority"],
        "default" = "Never"
    ))]
    pub within_cluster_queue: Option<String>,
}

/// Preemption in the cohort by a Workload that borrows (classic preemption
/// only, not with fair sharing).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BorrowWithinCohort {
    /// Never (the default) or LowerPriority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Never", "LowerPriority"], "default" = "Never"))]
    pub policy: Option<String>,

    /// Only Workloads with at most this priority may be preempted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_priority_threshold: Option<i32>,
}

/// The observed state of a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueStatus {
    /// Latest observations; the `Active` condition says whether the queue
    /// admits Workloads. At most 16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Option<Vec<Condition>>,

    /// Quota reserved per flavor by the Workloads of this queue. At most 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors_reservation: Option<Vec<FlavorUsage>>,

    /// Quota used per flavor by the admitted Workloads. At most 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors_usage: Option<Vec<FlavorUsage>>,

    /// Workloads waiting for admission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_workloads: Option<i32>,

    /// Workloads reserving quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserving_workloads: Option<i32>,

    /// Workloads admitted and not finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_workloads: Option<i32>,

    /// Fair sharing state, when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharingStatus>,
}

/// Usage of one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlavorUsage {
    /// The flavor.
    #[schemars(schema_with = "schema::object_name")]
    pub name: String,

    /// Usage per resource. At most 64.
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub resources: Vec<ResourceUsage>,
}

/// Usage of one resource in one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsage {
    /// The resource.
    pub name: String,

    /// Total quota used, including what is borrowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub total: Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>,

    /// Quota used above the nominal quota, borrowed from the cohort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub borrowed: Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
}
