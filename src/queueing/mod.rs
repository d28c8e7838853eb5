//! The queueing core: Kueue's quota engine as plain data in, decisions out.
//!
//! ClusterQueues, LocalQueues, ResourceFlavors, namespaces and Workloads come
//! in as this module's own types (the shell converts from the CRDs); each
//! [`Engine::schedule`] call runs one admission cycle at a given time and
//! returns [`Decision`]s (admit, evict, pending) and the ClusterQueue
//! statuses that changed. No clock, no client, no randomness: the same
//! events give the same decisions.
//!
//! Behaviour follows Kueue's scheduler (see shared/reference/kueue.md §4):
//! queue order, StrictFIFO and BestEffortFIFO, flavor assignment with taints
//! and node labels, hierarchical cohorts (`Cohort` objects with parents and
//! quota of their own) with borrowing and lending limits at every level,
//! within-queue preemption and reclaiming within a cohort tree, preemption
//! while borrowing (`borrowWithinCohort`), flavor fungibility (with its
//! `preference`), admission fair sharing (LocalQueue usage ordering inside a
//! ClusterQueue), partial
//! admission (`minCount`), stop policies and deactivation, dynamic reclaim
//! (a Workload holds only its pods not reclaimable yet), waitForPodsReady's
//! backoff (a Workload with `requeueAt` set waits out of the queue) and
//! `blockAdmission`, and fair sharing (see [`fair_sharing`]), with
//! Kueue's messages; topology-aware placement ([`topology`]) and elastic
//! workload slices are part of the cycle, and a pod set's required node
//! affinity is matched against flavors and nodes ([`node_affinity`]).
//! What is left out:
//!
//! - priority boost (`PriorityBoost`, off by default in Kueue);
//! - flavor search always starts at the first flavor (Kueue resumes where
//!   the last attempt stopped).

pub mod admission_checks;
pub mod admission_fair_sharing;
pub mod check_states;
pub mod claims;
pub mod cluster_queue;
pub mod cohort;
pub mod fair_sharing;
pub mod finalizers;
pub mod flavors;
pub mod node_affinity;
pub mod nodes;
mod partial_admission;
mod preemption;
pub mod provisioning;
pub mod quantity;
mod queues;
pub mod quota;
pub mod reservation;
pub mod scheduler;
pub mod topology;
pub mod visibility;
pub mod workload;

#[cfg(test)]
mod property_tests;

/// The hasher of the engine's maps looked up on every head of a cycle:
/// foldhash, seeded per process as hashbrown's default. SipHash showed in
/// every lookup; no decision depends on a hashed map's order.
pub(crate) type Hasher = foldhash::fast::RandomState;

pub use cluster_queue::{
    ActiveCondition, AdmissionFairSharingStatus, BorrowWithinCohort, ClusterQueue,
    ClusterQueueStatus, FlavorFungibility, FlavorPreference, FlavorQuotas, FlavorUsage,
    FungibilityPolicy, LocalQueue, LocalQueueFairSharing, LocalQueueStatus, Preemption,
    PreemptionPolicy, QueueingStrategy, ResourceGroup, ResourceQuota, ResourceUsage, StopPolicy,
};
pub use cohort::Cohort;
pub use flavors::{ResourceFlavor, Taint, TaintEffect, Toleration, TolerationOperator};
pub use quota::{CohortSubtree, FlavorResource, Usage};
pub use scheduler::{
    ClusterObjects, Cycle, Decision, Engine, EvictionReason, Explanation, PendingCounts,
    PendingReason, PreemptedReason,
};
pub use workload::{Admission, PodSet, PodSetAssignment, Workload};

/// Errors of the queueing core. Only input the shell converts can be wrong:
/// the engine itself turns every problem into a pending reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("invalid quantity {input:?}: {problem}")]
    Quantity { input: String, problem: String },
}
