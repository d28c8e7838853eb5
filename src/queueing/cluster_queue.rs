//! ClusterQueues and LocalQueues as the engine sees them: the quota, the
//! policies and the status the shell writes back.
//!
//! Plain data: the shell converts from the Kueue CRDs (`kueue.x-k8s.io`
//! v1beta2). Quantities are milli-units (see [`super::quantity`]).

use std::collections::BTreeMap;

use crate::api::selector::LabelSelector;

/// `spec.queueingStrategy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QueueingStrategy {
    /// The head blocks its queue while it does not fit.
    StrictFIFO,
    /// An unfit head is set aside and the next workload is tried; set-aside
    /// workloads come back when quota is released in the ClusterQueue or its
    /// cohort. Kueue's default.
    #[default]
    BestEffortFIFO,
}

/// `spec.stopPolicy` of a ClusterQueue or LocalQueue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StopPolicy {
    #[default]
    None,
    /// Admit nothing new; admitted workloads keep running.
    Hold,
    /// Admit nothing new and evict the admitted workloads.
    HoldAndDrain,
}

impl StopPolicy {
    pub fn is_stopped(self) -> bool {
        self != StopPolicy::None
    }
}

/// `spec.preemption.withinClusterQueue` / `reclaimWithinCohort`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PreemptionPolicy {
    #[default]
    Never,
    LowerPriority,
    LowerOrNewerEqualPriority,
    /// Only meaningful for `reclaimWithinCohort`.
    Any,
}

/// `spec.preemption`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Preemption {
    pub within_cluster_queue: PreemptionPolicy,
    pub reclaim_within_cohort: PreemptionPolicy,
    /// `borrowWithinCohort` with policy `LowerPriority`; `None` is `Never`.
    pub borrow_within_cohort: Option<BorrowWithinCohort>,
}

/// `spec.preemption.borrowWithinCohort` with `policy: LowerPriority`: a
/// workload that still borrows after preempting may reclaim from queues of
/// its cohort tree that borrow, taking workloads of lower priority than its
/// own and, when `max_priority_threshold` is set, at most that priority.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BorrowWithinCohort {
    pub max_priority_threshold: Option<i32>,
}

impl Preemption {
    /// `!IsBorrowingWithinCohortForbidden`: may a preemptor that still
    /// borrows afterwards reclaim in the cohort? (Kueue's flavor assigner
    /// then also asks the preemption oracle for requests above the nominal
    /// quota.)
    pub(crate) fn can_preempt_while_borrowing(&self) -> bool {
        self.borrow_within_cohort.is_some()
    }
}

/// `spec.flavorFungibility` values (v1beta2 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FungibilityPolicy {
    /// Stop at the first flavor where the workload can be admitted this way.
    MayStopSearch,
    TryNextFlavor,
}

/// `spec.flavorFungibility.preference`: when the search goes on past
/// flavors that need borrowing or preemption, which of them is best.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FlavorPreference {
    /// The better preemption mode first (fit, reclaim, preempt), then less
    /// borrowing. Kueue's default.
    #[default]
    BorrowingOverPreemption,
    /// Less borrowing first, then the better preemption mode.
    PreemptionOverBorrowing,
}

/// `spec.flavorFungibility`: whether to look past a flavor that needs
/// borrowing or preemption. Defaults: borrow rather than look further;
/// look further rather than preempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlavorFungibility {
    pub when_can_borrow: FungibilityPolicy,
    pub when_can_preempt: FungibilityPolicy,
    pub preference: FlavorPreference,
}

impl Default for FlavorFungibility {
    fn default() -> Self {
        FlavorFungibility {
            when_can_borrow: FungibilityPolicy::MayStopSearch,
            when_can_preempt: FungibilityPolicy::TryNextFlavor,
            preference: FlavorPreference::BorrowingOverPreemption,
        }
    }
}

/// `spec.resourceGroups[].flavors[].resources[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceQuota {
    pub name: String,
    pub nominal: i64,
    /// How much more than `nominal` may be borrowed from the cohort; `None`
    /// is unlimited (up to what the cohort has).
    pub borrowing_limit: Option<i64>,
    /// How much of `nominal` the cohort may lend to others; `None` is all.
    pub lending_limit: Option<i64>,
}

/// `spec.resourceGroups[].flavors[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlavorQuotas {
    pub name: String,
    pub resources: Vec<ResourceQuota>,
}

/// `spec.resourceGroups[]`: resources that are always assigned the same
/// flavor, and the flavors to try in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceGroup {
    pub covered_resources: Vec<String>,
    pub flavors: Vec<FlavorQuotas>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterQueue {
    pub name: String,
    /// `spec.cohortName` (v1beta1 `cohort`). Its parent in the cohort tree.
    pub cohort: Option<String>,
    pub queueing_strategy: QueueingStrategy,
    /// `None` admits from no namespace; `Some(empty)` from all (as upstream).
    pub namespace_selector: Option<LabelSelector>,
    pub resource_groups: Vec<ResourceGroup>,
    pub preemption: Preemption,
    pub flavor_fungibility: FlavorFungibility,
    pub stop_policy: StopPolicy,
    /// `spec.admissionScope.admissionMode: UsageBasedAdmissionFairSharing`:
    /// pending workloads are ordered by their LocalQueue's usage when the
    /// Configuration enables admission fair sharing.
    pub admission_fair_sharing: bool,
    /// Deleted and held by its `resource-in-use` finalizer: admits nothing
    /// new (Kueue's `terminating` status) until its workloads are gone.
    pub terminating: bool,
}

impl ClusterQueue {
    /// The group covering `resource`.
    pub(crate) fn group_for(&self, resource: &str) -> Option<&ResourceGroup> {
        self.resource_groups
            .iter()
            .find(|g| g.covered_resources.iter().any(|r| r == resource))
    }

    /// Every flavor the queue names, in spec order, without repeats.
    pub(crate) fn flavor_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for f in self.resource_groups.iter().flat_map(|g| &g.flavors) {
            if !names.contains(&f.name.as_str()) {
                names.push(&f.name);
            }
        }
        names
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalQueue {
    pub namespace: String,
    pub name: String,
    pub cluster_queue: String,
    pub stop_policy: StopPolicy,
    pub fair_sharing: LocalQueueFairSharing,
}

/// A LocalQueue's admission fair sharing inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalQueueFairSharing {
    /// `spec.fairSharing.weight` in milli-units (default 1).
    pub weight: i64,
    /// `status.fairSharing.admissionFairSharingStatus` as last written
    /// (resource → milli-units, `lastUpdate` in ms): where the engine's
    /// usage starts when it first meets the queue.
    pub status: Option<(BTreeMap<String, i64>, i64)>,
}

impl Default for LocalQueueFairSharing {
    fn default() -> Self {
        LocalQueueFairSharing {
            weight: 1000,
            status: None,
        }
    }
}

/// `status.fairSharing.admissionFairSharingStatus` to write.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionFairSharingStatus {
    /// Resource → quantity (`consumedResources`).
    pub consumed_resources: BTreeMap<String, String>,
    /// `lastUpdate` (ms).
    pub last_update: i64,
}

/// `status.flavorsUsage[].resources[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceUsage {
    pub name: String,
    /// Quota reserved by admitted workloads.
    pub total: i64,
    /// The part of `total` above the nominal quota.
    pub borrowed: i64,
}

/// `status.flavorsUsage[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlavorUsage {
    pub name: String,
    pub resources: Vec<ResourceUsage>,
}

/// `status.conditions[type=Active]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveCondition {
    pub status: bool,
    /// `Ready`, `Stopped` or `FlavorNotFound`.
    pub reason: &'static str,
    pub message: String,
}

/// What the shell writes to a ClusterQueue's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterQueueStatus {
    pub name: String,
    pub pending_workloads: usize,
    /// Workloads holding quota (admitted or assumed, not yet released).
    pub reserving_workloads: usize,
    /// Admitted workloads, as Kueue's cache counts them: written, or
    /// decided with no admission check to wait for.
    pub admitted_workloads: usize,
    /// Quota held by the reserving workloads, assumed admissions included
    /// (Kueue's `flavorsReservation`).
    pub flavors_usage: Vec<FlavorUsage>,
    /// Quota held by the admitted workloads, as `admitted_workloads`
    /// counts them (Kueue's `flavorsUsage`).
    pub flavors_admitted: Vec<FlavorUsage>,
    pub active: ActiveCondition,
    /// `status.fairSharing.weightedShare`, while fair sharing is on.
    pub weighted_share: Option<i64>,
}

/// What the shell writes to a LocalQueue's status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalQueueStatus {
    pub namespace: String,
    pub name: String,
    pub pending_workloads: usize,
    pub reserving_workloads: usize,
    pub admitted_workloads: usize,
    /// Flavor → resource → milli-units held by the queue's workloads.
    pub usage: BTreeMap<String, BTreeMap<String, i64>>,
    /// The same, of its admitted workloads only (as `admitted_workloads`
    /// counts them).
    pub admitted_usage: BTreeMap<String, BTreeMap<String, i64>>,
    /// Set when its ClusterQueue uses admission fair sharing.
    pub admission_fair_sharing: Option<AdmissionFairSharingStatus>,
}
