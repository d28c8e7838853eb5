//! Workloads as the engine sees them: what they ask for and, once admitted,
//! where their quota was reserved.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::{
    flavors::Toleration,
    quota::{FlavorResource, Usage},
};

/// `spec.podSets[]`: `count` pods, each requesting `requests`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PodSet {
    pub name: String,
    pub count: u32,
    /// Per pod, in milli-units, by resource name.
    pub requests: BTreeMap<String, i64>,
    /// `template.spec.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// `template.spec.tolerations`.
    pub tolerations: Vec<Toleration>,
}

impl PodSet {
    /// Requests of all `count` pods together.
    pub(crate) fn total_requests(&self) -> BTreeMap<String, i64> {
        self.requests
            .iter()
            .map(|(r, q)| (r.clone(), q.saturating_mul(i64::from(self.count))))
            .collect()
    }
}

/// `status.admission.podSetAssignments[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSetAssignment {
    pub name: String,
    /// Flavor assigned to each requested resource.
    pub flavors: BTreeMap<String, String>,
    /// Quota reserved for the whole pod set, by resource, in milli-units.
    pub resource_usage: BTreeMap<String, i64>,
    pub count: u32,
}

/// `status.admission`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    pub cluster_queue: String,
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

impl Admission {
    /// The quota this admission holds, per flavor and resource.
    pub fn usage(&self) -> Usage {
        let mut usage = Usage::new();
        for psa in &self.pod_set_assignments {
            for (resource, flavor) in &psa.flavors {
                let q = psa.resource_usage.get(resource).copied().unwrap_or(0);
                *usage
                    .entry(FlavorResource::new(flavor, resource))
                    .or_default() += q;
            }
        }
        usage
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The `kueue.x-k8s.io/job-uid` label, quoted in preemption messages.
    pub job_uid: Option<String>,
    /// `spec.queueName`: the LocalQueue in `namespace`.
    pub queue_name: String,
    /// `spec.priority`.
    pub priority: i32,
    /// `metadata.creationTimestamp`, milliseconds since the Unix epoch: the
    /// queue order among equal priorities.
    pub created: i64,
    /// `spec.active`; `false` is never admitted, and evicted if admitted.
    pub active: bool,
    /// The `Finished` condition is true: it holds no quota and never queues.
    pub finished: bool,
    pub pod_sets: Vec<PodSet>,
    /// `status.admission` as last written.
    pub admission: Option<Admission>,
}

impl Workload {
    /// `namespace/name`, how decisions name a workload.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// A hash of what decides whether and where the workload fits (its
    /// namespace and pod sets): workloads alike here fail alike (Kueue's
    /// scheduling equivalence). Deterministic (fixed-key SipHash).
    pub(crate) fn shape_hash(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.namespace.hash(&mut h);
        self.pod_sets.hash(&mut h);
        h.finish()
    }
}
