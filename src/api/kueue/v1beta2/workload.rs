//! Workload: the unit of admission. One per queued job, created by the
//! reconciler from the job's pod sets; quota is reserved for it and its
//! admission recorded in its status. Namespaced, short names `kwl`,
//! `kueueworkload`, `kueueworkloads`.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{PodTemplateSpec, Toleration},
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{resource_flavor::toleration_rules, ResourceList};
use crate::api::schema;

/// At most this many pod sets per Workload (and per list indexed by pod set).
pub const MAX_POD_SETS: u32 = 18;

/// The default pod set name.
pub const DEFAULT_POD_SET_NAME: &str = "main";

/// Workload condition types.
pub mod condition {
    /// Quota is reserved and every admission check of the ClusterQueue is
    /// satisfied.
    pub const ADMITTED: &str = "Admitted";
    /// Quota is reserved in a ClusterQueue.
    pub const QUOTA_RESERVED: &str = "QuotaReserved";
    /// The job finished (failed or succeeded).
    pub const FINISHED: &str = "Finished";
    /// At least `spec.podSets[*].count` pods are ready or succeeded.
    pub const PODS_READY: &str = "PodsReady";
    /// The Workload was evicted.
    pub const EVICTED: &str = "Evicted";
    /// The Workload was preempted.
    pub const PREEMPTED: &str = "Preempted";
    /// The Workload was requeued after an eviction.
    pub const REQUEUED: &str = "Requeued";
    /// The Workload is to be deactivated.
    pub const DEACTIVATION_TARGET: &str = "DeactivationTarget";
    /// A pod group misses pods (failed, or stopped by an eviction) that
    /// are to be replaced; while true it is not queued.
    pub const WAITING_FOR_REPLACEMENT_PODS: &str = "WaitingForReplacementPods";
}

/// Conditions as written back: `meta.SetStatusCondition` semantics (the
/// transition time moves only when the status does).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conditions(pub Vec<Condition>);

impl Conditions {
    pub fn of(conds: Option<&Vec<Condition>>) -> Self {
        Conditions(conds.cloned().unwrap_or_default())
    }

    pub fn get(&self, ty: &str) -> Option<&Condition> {
        self.0.iter().find(|c| c.type_ == ty)
    }

    pub fn is_true(&self, ty: &str) -> bool {
        self.get(ty).is_some_and(|c| c.status == "True")
    }

    /// Returns whether anything changed.
    pub fn set(
        &mut self,
        ty: &str,
        status: bool,
        reason: &str,
        message: &str,
        now: &Time,
        generation: Option<i64>,
    ) -> bool {
        let status = if status { "True" } else { "False" };
        // Kueue truncates condition messages to the API's 32 KiB limit.
        let message: String = message.chars().take(32 * 1024).collect();
        match self.0.iter_mut().find(|c| c.type_ == ty) {
            Some(c) => {
                let changed = c.status != status
                    || c.reason != reason
                    || c.message != message
                    || c.observed_generation != generation;
                if c.status != status {
                    c.last_transition_time = now.clone();
                }
                c.status = status.into();
                c.reason = reason.into();
                c.message = message;
                c.observed_generation = generation;
                changed
            }
            None => {
                self.0.push(Condition {
                    type_: ty.into(),
                    status: status.into(),
                    reason: reason.into(),
                    message,
                    last_transition_time: now.clone(),
                    observed_generation: generation,
                });
                true
            }
        }
    }
}

/// Reasons of the `Evicted` condition (and of `Requeued`).
pub mod eviction_reason {
    pub const PREEMPTED: &str = "Preempted";
    pub const PODS_READY_TIMEOUT: &str = "PodsReadyTimeout";
    pub const ADMISSION_CHECK: &str = "AdmissionCheck";
    pub const CLUSTER_QUEUE_STOPPED: &str = "ClusterQueueStopped";
    pub const LOCAL_QUEUE_STOPPED: &str = "LocalQueueStopped";
    pub const NODE_FAILURES: &str = "NodeFailures";
    pub const DEACTIVATED: &str = "Deactivated";
    pub const WORKLOAD_SLICE_REPLACED: &str = "WorkloadSliceReplaced";
    pub const REQUEUING_LIMIT_EXCEEDED: &str = "RequeuingLimitExceeded";
    pub const MAXIMUM_EXECUTION_TIME_EXCEEDED: &str = "MaximumExecutionTimeExceeded";
}

/// Reasons of the `Preempted` condition.
pub mod preempted_reason {
    pub const IN_CLUSTER_QUEUE: &str = "InClusterQueue";
    pub const IN_COHORT_RECLAMATION: &str = "InCohortReclamation";
    pub const IN_COHORT_FAIR_SHARING: &str = "InCohortFairSharing";
    pub const IN_COHORT_RECLAIM_WHILE_BORROWING: &str = "InCohortReclaimWhileBorrowing";
}

/// Reasons of the `Finished` condition.
pub mod finished_reason {
    pub const SUCCEEDED: &str = "Succeeded";
    pub const FAILED: &str = "Failed";
    pub const OUT_OF_SYNC: &str = "OutOfSync";
}

/// `spec.priorityClassRef` groups and kinds.
pub mod priority_class {
    pub const WORKLOAD_PRIORITY_CLASS_GROUP: &str = "kueue.x-k8s.io";
    pub const WORKLOAD_PRIORITY_CLASS_KIND: &str = "WorkloadPriorityClass";
    pub const POD_PRIORITY_CLASS_GROUP: &str = "scheduling.k8s.io";
    pub const POD_PRIORITY_CLASS_KIND: &str = "PriorityClass";
}

/// `status.admissionChecks[].state` values.
pub mod check_state {
    pub const PENDING: &str = "Pending";
    pub const READY: &str = "Ready";
    pub const RETRY: &str = "Retry";
    pub const REJECTED: &str = "Rejected";
}

/// Kueue's rules on the whole Workload (pod set assignments match the pod
/// sets; what may not change while quota is reserved or admitted). The
/// derive cannot attach rules to the generated root type, so
/// [`crate::api::crd`] adds these at the top of the Workload schema.
pub fn workload_root_validation_rules() -> serde_json::Value {
    serde_json::json!([
        {
            "rule": "has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(self.status.admission) ? size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
            "message": "podSetAssignments must have the same number of podSets as the spec",
        },
        {
            "rule": "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')) ? (!has(oldSelf.spec.priorityClassRef) && !has(self.spec.priorityClassRef)) || (has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) : true",
            "message": "priorityClassRef is immutable while workload quota reserved",
        },
        {
            "rule": "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.group == self.spec.priorityClassRef.group : true",
            "message": "priorityClassRef.group is immutable while workload quota reserved",
        },
        {
            "rule": "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.kind == self.spec.priorityClassRef.kind : true",
            "message": "priorityClassRef.kind is immutable while workload quota reserved",
        },
        {
            "rule": "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef) && self.spec.priorityClassRef.group == 'scheduling.k8s.io' && self.spec.priorityClassRef.kind == 'PriorityClass') ? oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name : true",
            "message": "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved",
        },
        {
            "rule": "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True'))) ? ((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true",
            "message": "queueName is immutable while workload quota reserved",
        },
        {
            "rule": "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')))?((has(oldSelf.spec.maximumExecutionTimeSeconds)?oldSelf.spec.maximumExecutionTimeSeconds:0) ==  (has(self.spec.maximumExecutionTimeSeconds)?self.spec.maximumExecutionTimeSeconds:0)):true",
            "message": "maximumExecutionTimeSeconds is immutable while workload quota reserved",
        },
    ])
}

/// The desired state of a Workload.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Workload",
    plural = "workloads",
    namespaced,
    shortname = "kwl",
    shortname = "kueueworkload",
    shortname = "kueueworkloads",
    status = "WorkloadStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "Workload is the Schema for the workloads API",
    printcolumn(
        name = "Queue",
        type_ = "string",
        json_path = ".spec.queueName",
        description = "Name of the queue this workload was submitted to"
    ),
    printcolumn(
        name = "Reserved in",
        type_ = "string",
        json_path = ".status.admission.clusterQueue",
        description = "Name of the ClusterQueue where the workload is reserving quota"
    ),
    printcolumn(
        name = "Admitted",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Admitted')].status",
        description = "Admission status"
    ),
    printcolumn(
        name = "Finished",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Finished')].status",
        description = "Workload finished"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time this workload was created"
    )
)]
#[serde(rename_all = "camelCase", remote = "Self")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.priorityClassRef) || has(self.priority)",
    "message": "priority should not be nil when priorityClassRef is set",
}]))]
pub struct WorkloadSpec {
    /// Sets of identical pods, each a pod template and a count: 1 to 18,
    /// unique names. Cannot change while quota is reserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = MAX_POD_SETS),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub pod_sets: Option<Vec<PodSet>>,

    /// The LocalQueue, in the Workload's namespace, it is submitted to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_name")]
    pub queue_name: Option<String>,

    /// The priority class the priority comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_ref: Option<PriorityClassRef>,

    /// Order of access to the ClusterQueue's resources, higher first; filled
    /// from the priority class and required with priorityClassRef.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,

    /// Whether the Workload may be admitted (default true). Setting false
    /// evicts it if it is running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub active: Option<bool>,

    /// Seconds the Workload may stay admitted before it is deactivated;
    /// absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub maximum_execution_time_seconds: Option<i32>,

    /// Gates that, while closed, keep the Workload from preempting others
    /// (MultiKueue orchestrated preemption). Gates without a status are
    /// closed. At most 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub preemption_gates: Option<Vec<PreemptionGate>>,
}

super::spec_may_be_absent!(WorkloadSpec);

/// A reference to a WorkloadPriorityClass or a pod PriorityClass.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
        "message": "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
    },
    {
        "rule": "(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
        "message": "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
    },
]))]
pub struct PriorityClassRef {
    /// kueue.x-k8s.io (WorkloadPriorityClass) or scheduling.k8s.io (pod
    /// PriorityClass).
    #[schemars(extend("enum" = ["kueue.x-k8s.io", "scheduling.k8s.io"]))]
    pub group: String,

    /// WorkloadPriorityClass or PriorityClass.
    #[schemars(extend("enum" = ["WorkloadPriorityClass", "PriorityClass"]))]
    pub kind: String,

    /// The class's name.
    #[schemars(length(min = 1, max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub name: String,
}

/// A preemption gate on a Workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionGate {
    /// The gate's name.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,
}

/// A set of identical pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.minCount) ? self.minCount <= self.count : true",
    "message": "minCount should be positive and less or equal to count",
}]))]
pub struct PodSet {
    /// The pod set's name, a DNS label; defaults to `main`.
    #[serde(default = "default_pod_set_name")]
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,

    /// The pods' template. Only labels and annotations are kept in its
    /// metadata. Requests left out default to the limits. Node selector and
    /// required node affinity terms on the flavors' node label keys decide
    /// which flavors the pod set can get.
    pub template: PodTemplateSpec,

    /// How many pods; defaults to 1.
    #[serde(default = "default_count")]
    #[schemars(range(min = 0))]
    pub count: i32,

    /// The fewest pods acceptable when the Workload supports partial
    /// admission; at most one pod set may have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_count: Option<i32>,

    /// Topology the pods must or should be placed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_request: Option<PodSetTopologyRequest>,
}

fn default_pod_set_name() -> String {
    DEFAULT_POD_SET_NAME.into()
}

fn default_count() -> i32 {
    1
}

/// A pod set's topology request (topology-aware scheduling).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetTopologyRequest {
    /// The level all pods must be placed within
    /// (`kueue.x-k8s.io/podset-required-topology`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub required: Option<String>,

    /// The level pods should preferably be placed within
    /// (`kueue.x-k8s.io/podset-preferred-topology`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub preferred: Option<String>,

    /// No compactness constraint (`kueue.x-k8s.io/podset-unconstrained-topology`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<bool>,

    /// The label holding each pod's index, e.g.
    /// kubernetes.io/job-completion-index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 317))]
    pub pod_index_label: Option<String>,

    /// The label holding the index of a replicated job within the pod set,
    /// e.g. jobset.sigs.k8s.io/job-index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 317))]
    pub sub_group_index_label: Option<String>,

    /// How many replicated jobs the pod set has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_count: Option<i32>,

    /// Pod sets with the same group name get the same flavor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub pod_set_group_name: Option<String>,

    /// The level each slice of the pod set must be placed within
    /// (`kueue.x-k8s.io/podset-slice-required-topology`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub pod_set_slice_required_topology: Option<String>,

    /// Pods per slice; only with podSetSliceRequiredTopology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_slice_size: Option<i32>,

    /// Layers of slice constraints, outermost first, at most 3; exclusive
    /// with podSetSliceRequiredTopology and podSetSliceSize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 3), extend("x-kubernetes-list-type" = "atomic"))]
    pub podset_slice_required_topology_constraints:
        Option<Vec<PodsetSliceRequiredTopologyConstraint>>,
}

/// One layer of slice topology constraints.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodsetSliceRequiredTopologyConstraint {
    /// The topology level of this layer.
    #[schemars(length(min = 1, max = 63))]
    pub topology: String,

    /// Pods in each group of this layer.
    #[schemars(range(min = 1))]
    pub size: i32,
}

/// The observed state of a Workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
        "message": "clusterName is immutable once set",
    },
    {
        "rule": "!has(self.clusterName) || (!has(self.nominatedClusterNames) || (has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
        "message": "clusterName and nominatedClusterNames are mutually exclusive",
    },
]))]
pub struct WorkloadStatus {
    /// Latest observations: QuotaReserved, Admitted, PodsReady, Evicted,
    /// Preempted, Requeued, Finished. At most 16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Option<Vec<Condition>>,

    /// Where and how quota was reserved. May go back to null, but its
    /// fields do not change once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,

    /// Requeueing state after evictions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_state: Option<RequeueState>,

    /// Pods per pod set whose reservation is no longer needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = MAX_POD_SETS),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub reclaimable_pods: Option<Vec<ReclaimablePod>>,

    /// The state of each admission check the Workload needs. At most 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub admission_checks: Option<Vec<AdmissionCheckState>>,

    /// Resources requested per pod set when last considered for admission
    /// (empty once admitted: see `admission`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = MAX_POD_SETS),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub resource_requests: Option<Vec<PodSetRequest>>,

    /// Seconds spent admitted in earlier admit-evict cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulated_past_execution_time_seconds: Option<i32>,

    /// Scheduling statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_stats: Option<SchedulingStats>,

    /// MultiKueue: clusters nominated for the Workload; exclusive with
    /// clusterName. At most 20.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 20),
        inner(length(max = 256)),
        extend("x-kubernetes-list-type" = "atomic")
    )]
    pub nominated_cluster_names: Option<Vec<String>>,

    /// MultiKueue: the cluster the Workload is assigned to; cannot change
    /// once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub cluster_name: Option<String>,

    /// Failed nodes running pods of this Workload (topology-aware
    /// scheduling). At most 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub unhealthy_nodes: Option<Vec<UnhealthyNode>>,

    /// The state of the gates in `spec.preemptionGates`. At most 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub preemption_gates: Option<Vec<PreemptionGateState>>,
}

/// Where a Workload reserved quota.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    /// The ClusterQueue that reserved the quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_name")]
    pub cluster_queue: Option<String>,

    /// One assignment per `spec.podSets` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = MAX_POD_SETS),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub pod_set_assignments: Option<Vec<PodSetAssignment>>,
}

/// The admission of one pod set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetAssignment {
    /// The pod set; defaults to `main`.
    #[serde(default = "default_pod_set_name")]
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,

    /// The flavor assigned for each resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::flavor_by_resource")]
    pub flavors: Option<BTreeMap<String, String>>,

    /// Total resources of all the pods of the pod set at admission
    /// (including LimitRange defaults and RuntimeClass overhead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::resource_list")]
    pub resource_usage: Option<ResourceList>,

    /// Pods counted at admission; absent on old Workloads (then
    /// `spec.podSets[*].count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub count: Option<i32>,

    /// Pods per topology domain (topology-aware scheduling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_assignment: Option<TopologyAssignment>,

    /// Pending or Ready: the topology assignment waits for a second
    /// scheduling pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 7), extend("enum" = ["Pending", "Ready"]))]
    pub delayed_topology_request: Option<String>,
}

/// Pods per topology domain, in slices.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
    "message": "valuesPerLevel must have the same length as the number of levels in this TopologyAssignment",
}]))]
pub struct TopologyAssignment {
    /// Node label keys of the topology levels, highest first.
    #[schemars(
        length(min = 1, max = 16),
        inner(length(max = 317)),
        extend("x-kubernetes-list-type" = "atomic")
    )]
    pub levels: Vec<String>,

    /// Parts of the assignment; the whole is their union.
    #[schemars(length(max = 1000), extend("x-kubernetes-list-type" = "atomic"))]
    pub slices: Vec<TopologyAssignmentSlice>,
}

/// A part of a topology assignment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.podCounts.individual) || size(self.podCounts.individual) == self.domainCount",
        "message": "podCounts.individual must have length equal to domainCount",
    },
    {
        "rule": "self.valuesPerLevel.all(x, !has(x.individual) || size(x.individual.roots) == self.domainCount)",
        "message": "valuesPerLevel.individual, if set, must have roots of length equal to domainCount of this TopologyAssignmentSlice",
    },
]))]
pub struct TopologyAssignmentSlice {
    /// Domains in this slice.
    #[schemars(range(min = 1))]
    pub domain_count: i32,

    /// Node label values, one entry per level.
    #[schemars(length(min = 1, max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub values_per_level: Vec<TopologyAssignmentSliceLevelValues>,

    /// Pods per domain.
    pub pod_counts: TopologyAssignmentSlicePodCounts,
}

/// Node label values of one level in a slice: one value for every domain,
/// or one per domain.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.universal) != has(self.individual)",
    "message": "exactly one of the fields in [universal individual] must be set",
}]))]
pub struct TopologyAssignmentSliceLevelValues {
    /// The value of every domain in the slice; exclusive with individual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub universal: Option<String>,

    /// One value per domain; exclusive with universal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub individual: Option<TopologyAssignmentSliceLevelIndividualValues>,
}

/// One node label value per domain, with a common prefix and suffix.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologyAssignmentSliceLevelIndividualValues {
    /// Common prefix of the values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub prefix: Option<String>,

    /// Common suffix of the values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub suffix: Option<String>,

    /// The values without prefix and suffix, one per domain.
    #[schemars(
        length(min = 1, max = 100000),
        inner(length(max = 63)),
        extend("x-kubernetes-list-type" = "atomic")
    )]
    pub roots: Vec<String>,
}

/// Pods per domain of a slice: one count for every domain, or one per
/// domain.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "[has(self.universal),has(self.individual)].filter(x,x==true).size() == 1",
    "message": "exactly one of the fields in [universal individual] must be set",
}]))]
pub struct TopologyAssignmentSlicePodCounts {
    /// Pods in every domain; exclusive with individual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub universal: Option<i32>,

    /// Pods per domain, one per domain; exclusive with universal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 100000),
        inner(range(min = 1)),
        extend("x-kubernetes-list-type" = "atomic")
    )]
    pub individual: Option<Vec<i32>>,
}

/// Requeueing state.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequeueState {
    /// Times requeued; reset when the Workload is reactivated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub count: Option<i32>,

    /// When the Workload is requeued next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_at: Option<Time>,
}

/// Pods of a pod set that no longer need their reservation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReclaimablePod {
    /// The pod set.
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,

    /// How many pods.
    #[schemars(range(min = 0))]
    pub count: i32,
}

/// The state of one admission check.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckState {
    /// The AdmissionCheck.
    #[schemars(length(min = 1, max = 316))]
    pub name: String,

    /// Pending, Ready, Retry or Rejected.
    #[schemars(extend("enum" = ["Pending", "Ready", "Retry", "Rejected"]))]
    pub state: String,

    /// When the state last changed.
    pub last_transition_time: Time,

    /// Why, for humans; may be empty.
    #[schemars(length(max = 32768))]
    pub message: String,

    /// With Retry: wait at least this long after lastTransitionTime before
    /// trying again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub requeue_after_seconds: Option<i32>,

    /// Times the check went to Retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retry_count: Option<i32>,

    /// Changes to pod sets the check asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_POD_SETS), extend("x-kubernetes-list-type" = "atomic"))]
    pub pod_set_updates: Option<Vec<PodSetUpdate>>,
}

/// Additions to one pod set asked for by an admission check; they may not
/// change existing keys or conflict with another check's.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetUpdate {
    /// The pod set.
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,

    /// Labels to add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,

    /// Annotations to add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,

    /// Node selector entries to add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,

    /// Tolerations to add. At most 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "atomic", "x-kubernetes-validations" = toleration_rules())
    )]
    pub tolerations: Option<Vec<Toleration>>,
}

/// Resources requested by one pod set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetRequest {
    /// The pod set.
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,

    /// Total resources of all its pods, after LimitRange defaults, overhead
    /// and the configured resource exclusions and transformations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::resource_list")]
    pub resources: Option<ResourceList>,
}

/// Scheduling statistics.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingStats {
    /// Evictions by reason and underlying cause. At most 256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 256),
        extend(
            "x-kubernetes-list-type" = "map",
            "x-kubernetes-list-map-keys" = ["reason", "underlyingCause"]
        )
    )]
    pub evictions: Option<Vec<WorkloadSchedulingStatsEviction>>,
}

/// Evictions counted for one reason and cause.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSchedulingStatsEviction {
    /// The eviction reason.
    #[schemars(length(max = 316))]
    pub reason: String,

    /// A finer-grained cause; may be empty.
    #[schemars(length(max = 316))]
    pub underlying_cause: String,

    /// How many evictions.
    #[schemars(range(min = 0))]
    pub count: i32,
}

/// A node that failed while running pods of the Workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnhealthyNode {
    /// The node's name.
    #[schemars(length(max = 63))]
    pub name: String,
}

/// The state of one preemption gate.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionGateState {
    /// The gate's name.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,

    /// Closed (blocks preempting) or Open.
    #[schemars(extend("enum" = ["Closed", "Open"]))]
    pub position: String,

    /// When the state last changed.
    pub last_transition_time: Time,
}
