//! Workloads as the engine sees them: what they ask for and, once admitted,
//! where their quota was reserved.
//!
//! Thousands of these wait at once, so the record is compact: names that
//! repeat across workloads (namespace, LocalQueue, pod set and resource
//! names) are shared `Arc<str>`s, interned by the engine, and a pod's
//! requests are a short sorted list rather than a map.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use super::{
    flavors::Toleration,
    quota::{FlavorResource, Usage},
};

/// Per pod, in milli-units, by resource name: a list sorted by name with
/// each name once (usually one or two resources), which reads like the
/// map it replaces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Requests(Vec<(Arc<str>, i64)>);

impl Requests {
    pub fn new() -> Self {
        Requests(Vec::new())
    }

    pub fn get(&self, resource: &str) -> Option<i64> {
        self.find(resource).ok().map(|i| self.0[i].1)
    }

    /// Sets `resource` to `quantity`; returns the quantity it replaces.
    pub fn insert(&mut self, resource: impl AsRef<str>, quantity: i64) -> Option<i64> {
        match self.find(resource.as_ref()) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, quantity)),
            Err(i) => {
                self.0.insert(i, (resource.as_ref().into(), quantity));
                None
            }
        }
    }

    /// In name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> + '_ {
        self.0.iter().map(|(r, q)| (&**r, *q))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn find(&self, resource: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(r, _)| (**r).cmp(resource))
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
    }

    /// The names, for the engine to share with every workload.
    pub(crate) fn names_mut(&mut self) -> impl Iterator<Item = &mut Arc<str>> {
        self.0.iter_mut().map(|(r, _)| r)
    }
}

impl<K: AsRef<str>> FromIterator<(K, i64)> for Requests {
    /// A later quantity for the same name replaces an earlier one, as
    /// collecting into a map does.
    fn from_iter<I: IntoIterator<Item = (K, i64)>>(iter: I) -> Self {
        let mut r = Requests::new();
        for (k, q) in iter {
            r.insert(k, q);
        }
        r
    }
}

impl<K: AsRef<str>, const N: usize> From<[(K, i64); N]> for Requests {
    fn from(items: [(K, i64); N]) -> Self {
        items.into_iter().collect()
    }
}

impl From<BTreeMap<String, i64>> for Requests {
    fn from(map: BTreeMap<String, i64>) -> Self {
        // Already sorted and unique.
        Requests(map.into_iter().map(|(k, q)| (k.into(), q)).collect())
    }
}

impl std::ops::Index<&str> for Requests {
    type Output = i64;

    fn index(&self, resource: &str) -> &i64 {
        match self.find(resource) {
            Ok(i) => &self.0[i].1,
            Err(_) => panic!("no request for {resource}"),
        }
    }
}

/// `spec.podSets[]`: `count` pods, each requesting `requests`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PodSet {
    pub name: Arc<str>,
    pub count: u32,
    /// `minCount`: partial admission may run as few as this many pods
    /// (`None`: all `count` or nothing).
    pub min_count: Option<u32>,
    /// Per pod, in milli-units, by resource name.
    pub requests: Requests,
    /// `template.spec.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// `template.spec.tolerations`.
    pub tolerations: Vec<Toleration>,
}

impl PodSet {
    /// Requests of `count` pods together (Kueue's `ScaledTo`: per-pod
    /// requests times the count).
    pub(crate) fn total_requests_at(&self, count: u32) -> BTreeMap<String, i64> {
        self.requests
            .iter()
            .map(|(r, q)| (r.to_string(), q.saturating_mul(i64::from(count))))
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
    pub namespace: Arc<str>,
    pub name: String,
    pub uid: Arc<str>,
    /// The `kueue.x-k8s.io/job-uid` label, quoted in preemption messages.
    pub job_uid: Option<String>,
    /// `spec.queueName`: the LocalQueue in `namespace`.
    pub queue_name: Arc<str>,
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

    /// Kueue's `CanBePartiallyAdmitted`: some pod set may run with fewer
    /// pods than its count.
    pub fn can_be_partially_admitted(&self) -> bool {
        self.pod_sets
            .iter()
            .any(|ps| ps.count > ps.min_count.unwrap_or(ps.count))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_like_a_sorted_map() {
        let mut r: Requests = [("memory", 2), ("cpu", 1), ("memory", 3)].into();
        assert_eq!(r.iter().collect::<Vec<_>>(), [("cpu", 1), ("memory", 3)]);
        assert_eq!(r.get("cpu"), Some(1));
        assert_eq!(r.get("gpu"), None);
        assert_eq!(r.insert("gpu", 4), None);
        assert_eq!(r.insert("cpu", 5), Some(1));
        assert_eq!(r["gpu"], 4);
        let map: BTreeMap<String, i64> = r.iter().map(|(k, q)| (k.to_string(), q)).collect();
        assert_eq!(Requests::from(map), r);
        assert_eq!(r.len(), 3);
    }
}
