//! Topology-aware scheduling (TAS) placement: where on a flavor's topology
//! the pods of an admitted workload go, as Kueue v0.19.2 computes it
//! (`pkg/cache/scheduler/tas_flavor_snapshot.go`).
//!
//! Plain data in, decisions out: the shell builds a [`Snapshot`] from the
//! flavor's Topology levels and its nodes (allocatable, labels, taints,
//! readiness), records the usage of non-TAS pods and admitted TAS
//! workloads on it, and calls [`place`] with the pod sets' requests. Each
//! pod set gets a leaf-level [`Assignment`] (encoded for the wire by
//! `api::kueue::conversion::topology::encode`) or Kueue's reason, word for
//! word.
//!
//! Covered: required, preferred and unconstrained (and implied) requests;
//! slices and multi-layer slices; pod set groups (a leader and its workers
//! placed together); assumed usage within a cycle; the default
//! `TASProfileMixed` profile (BestFit, LeastFreeCapacity for
//! unconstrained); node selectors, required node affinity and taints on
//! hostname leaves;
//! replacing the pods of a failed node.
//!
//! Left out, all off by default in v0.19.2 or handled elsewhere:
//! balanced placement (`TASBalancedPlacement`, alpha), preferred node
//! affinity (`TASRespectNodeAffinityPreferred`), the scheduler-library
//! fit check (`SchedulerLibraryIntegration`); elastic workload slices
//! (`ElasticJobsViaWorkloadSlicesWithTAS`).
//!
//! Node-failure replacement (`findReplacementAssignment`) is [`replace`]:
//! the pods of a failed node placed again near the ones that stay.

mod placement;
mod replacement;
mod snapshot;

#[cfg(test)]
mod cases;

pub use placement::{
    place, Assignment, DomainUsage, PodSetPlacement, PodSetRequest, SliceLayer, TopologyRequest,
};
pub use replacement::{owned_by_single_pod, replace, Replaced, Replacement};
pub use snapshot::{FlavorTopology, Node, Resources, Snapshot, HOSTNAME, ONE_POD, PODS};
