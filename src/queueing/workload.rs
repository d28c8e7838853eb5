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
    node_affinity::NodeAffinity,
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

    /// Drops `resource`; returns its quantity.
    pub fn remove(&mut self, resource: &str) -> Option<i64> {
        self.find(resource).ok().map(|i| self.0.remove(i).1)
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
    /// `template.spec.affinity.nodeAffinity`'s required terms.
    pub node_affinity: NodeAffinity,
    /// `template.spec.tolerations`.
    pub tolerations: Vec<Toleration>,
    /// `topologyRequest` (topology-aware scheduling), if any.
    pub topology: Option<TopologyRequest>,
}

/// `podSets[].topologyRequest`: where the pods must or should be placed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TopologyRequest {
    pub required: Option<String>,
    pub preferred: Option<String>,
    /// Set at all, even `false`, it makes the request explicit, as in Kueue.
    pub unconstrained: Option<bool>,
    pub pod_set_group: Option<String>,
    /// `podSetSliceRequiredTopology`.
    pub slice_required: Option<String>,
    /// `podSetSliceSize`.
    pub slice_size: Option<i32>,
    /// `podsetSliceRequiredTopologyConstraints` (multi-layer); when set it
    /// replaces `slice_required` and `slice_size`.
    pub slice_layers: Vec<SliceLayer>,
}

/// One layer of slices: pods in groups of `size` within one `level` domain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SliceLayer {
    /// The node-label key the slice must stay within.
    pub level: String,
    /// Pods per slice.
    pub size: i32,
}

impl TopologyRequest {
    /// Kueue's `IsExplicitlyRequestingTAS` for one pod set.
    pub fn is_explicit(&self) -> bool {
        self.unconstrained.is_some()
            || self.required.is_some()
            || self.preferred.is_some()
            || self.slice_required.is_some()
            || self.slice_size.is_some()
            || !self.slice_layers.is_empty()
    }

    /// The slice layers, outermost first, whichever way they were asked
    /// (Kueue's `PodSetSliceRequiredTopologyConstraints`); size 0 when the
    /// single layer names no size.
    pub fn layers(&self) -> Vec<SliceLayer> {
        if !self.slice_layers.is_empty() {
            return self.slice_layers.clone();
        }
        self.slice_required
            .iter()
            .map(|level| SliceLayer {
                level: level.clone(),
                size: self.slice_size.unwrap_or(0),
            })
            .collect()
    }

    /// Slices asked for, and no required or preferred level.
    pub fn slices_only(&self) -> bool {
        self.required.is_none() && self.preferred.is_none() && !self.layers().is_empty()
    }

    /// The level the placement is constrained to in a topology with
    /// `levels` (highest first), as Kueue's `levelKey` reads it.
    pub fn level<'a>(&'a self, levels: &'a [String]) -> Option<&'a str> {
        if let Some(l) = self.required.as_deref().or(self.preferred.as_deref()) {
            return Some(l);
        }
        if !self.layers().is_empty() {
            return levels.first().map(String::as_str);
        }
        if self.unconstrained == Some(true) {
            return levels.last().map(String::as_str);
        }
        None
    }

    /// Kueue's `HasLevel`: the topology has every level the request names.
    pub fn levels_exist(&self, levels: &[String]) -> bool {
        let has = |l: &str| levels.iter().any(|x| x == l);
        let Some(main) = self.level(levels) else {
            return false;
        };
        let layers = self.layers();
        let slice = layers
            .first()
            .map(|l| l.level.as_str())
            .or(levels.last().map(String::as_str));
        has(main) && slice.is_some_and(has) && layers.iter().all(|l| has(&l.level))
    }
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
    /// `topologyAssignment`: the pod set's leaf domains (topology-aware
    /// scheduling).
    pub topology: Option<super::topology::Assignment>,
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
    /// A MultiKueue worker's copy of a workload slice, which arrives
    /// without the job-uid label: the manager's origin and the chain's
    /// first slice's name (`kueue.x-k8s.io/workload-slice-name`), which
    /// the copies of one job's slices share.
    pub copy_chain: Option<String>,
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
    /// What waitForPodsReady and dynamic reclaim tell the engine.
    pub readiness: Readiness,
    /// `kueue.x-k8s.io/workload-slice-replacement-for`: the key of the
    /// admitted slice of the same elastic job this one replaces once
    /// admitted (KEP-77). It asks only for what it adds to that slice,
    /// on the same flavors.
    pub replaces: Option<String>,
    /// `status.unhealthyNodes[].name` of an Admitted Workload: nodes
    /// failed under its topology assignment, whose pods the scheduler
    /// places again.
    pub unhealthy_nodes: Vec<String>,
    /// Owned by a single Pod (not a pod group): its topology assignment is
    /// kept as it is (see `topology::owned_by_single_pod`).
    pub single_pod_owned: bool,
}

/// A Workload's `PodsReady` condition, `status.requeueState.requeueAt` and
/// `status.reclaimablePods`, as the engine needs them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Readiness {
    /// The `PodsReady` condition's status; `None` without the condition
    /// (kinds whose policy reports no readiness never get one).
    pub pods_ready: Option<bool>,
    /// `status.requeueState.requeueAt` (ms since the epoch): a Workload
    /// backing off after a `PodsReadyTimeout` eviction is not queued until
    /// the job reconciler clears it (Kueue's workload controller keeps it
    /// out of the queue until then).
    pub requeue_at: Option<i64>,
    /// `status.reclaimablePods`: pods per pod set whose quota is given back
    /// while the Workload still runs.
    pub reclaimable: Vec<(String, u32)>,
    /// `WaitingForReplacementPods` is true: a pod group missing pods is
    /// not queued until they are back (Kueue's `IsAdmissible`); one that
    /// holds quota keeps it.
    pub awaiting_replacements: bool,
}

impl Readiness {
    fn reclaimable_of(&self, pod_set: &str) -> u32 {
        self.reclaimable
            .iter()
            .find(|(n, _)| n == pod_set)
            .map_or(0, |(_, c)| *c)
    }
}

impl Workload {
    /// The quota an admission of this Workload holds now: each pod set's
    /// usage scaled down to the pods not reclaimable yet (Kueue's
    /// `totalRequestsFromAdmission`: usage divided by the admitted count
    /// and multiplied by the count after reclaim, when that is lower).
    pub fn held_usage(&self, admission: &Admission) -> Usage {
        let mut usage = Usage::new();
        for psa in &admission.pod_set_assignments {
            let spec_count = self
                .pod_sets
                .iter()
                .find(|ps| *ps.name == *psa.name)
                .map_or(psa.count, |ps| ps.count);
            let after = spec_count - self.readiness.reclaimable_of(&psa.name).min(spec_count);
            for (resource, flavor) in &psa.flavors {
                let mut q = psa.resource_usage.get(resource).copied().unwrap_or(0);
                if after < psa.count && psa.count > 0 {
                    q = q / i64::from(psa.count) * i64::from(after);
                }
                *usage
                    .entry(FlavorResource::new(flavor, resource))
                    .or_default() += q;
            }
        }
        usage
    }

    /// What it asks for when it is not admitted: each pod set's count less
    /// its reclaimable pods (Kueue's `podSetsCountsAfterReclaim`, which
    /// `NewInfo` applies to every workload it queues), `min_count` kept
    /// within it.
    pub fn after_reclaim(&self) -> std::borrow::Cow<'_, Workload> {
        if self.readiness.reclaimable.iter().all(|(_, c)| *c == 0) {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut wl = self.clone();
        for ps in &mut wl.pod_sets {
            let r = self.readiness.reclaimable_of(&ps.name).min(ps.count);
            ps.count -= r;
            ps.min_count = ps.min_count.map(|m| m.min(ps.count));
        }
        std::borrow::Cow::Owned(wl)
    }

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
    /// namespace, priority and pod sets): workloads alike here fail alike
    /// (Kueue's scheduling equivalence). Deterministic (fixed-key SipHash).
    pub(crate) fn shape_hash(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.namespace.hash(&mut h);
        // A higher priority may preempt where its like could not (Kueue's
        // scheduling hash has the effective priority too).
        self.priority.hash(&mut h);
        self.pod_sets.hash(&mut h);
        // Reclaimable pods change what it asks for (`after_reclaim`).
        self.readiness.reclaimable.hash(&mut h);
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod set of `spec` pods (10m cpu each) admitted at `count` pods,
    /// `reclaimable` of them reclaimable.
    fn admitted(spec: u32, count: u32, reclaimable: u32) -> (Workload, Admission) {
        let wl = Workload {
            unhealthy_nodes: Vec::new(),
            single_pod_owned: false,
            namespace: "ns".into(),
            name: "wl".into(),
            uid: "u".into(),
            job_uid: None,
            copy_chain: None,
            queue_name: "lq".into(),
            priority: 0,
            created: 0,
            active: true,
            finished: false,
            pod_sets: vec![PodSet {
                name: "main".into(),
                count: spec,
                min_count: None,
                requests: [("cpu", 10)].into(),
                node_selector: BTreeMap::new(),
                node_affinity: Default::default(),
                tolerations: Vec::new(),
                topology: None,
            }],
            admission: None,
            readiness: Readiness {
                reclaimable: vec![("main".into(), reclaimable)],
                ..Readiness::default()
            },
            replaces: None,
        };
        let admission = Admission {
            cluster_queue: "cq".into(),
            pod_set_assignments: vec![PodSetAssignment {
                name: "main".into(),
                flavors: [("cpu".to_string(), "f1".to_string())].into(),
                resource_usage: [("cpu".to_string(), i64::from(count) * 10)].into(),
                count,
                topology: None,
            }],
        };
        (wl, admission)
    }

    /// Kueue v0.19.2 pkg/workload/workload_test.go, TestNewInfo: "pending
    /// with reclaim; reclaimablePods on" (5 pods, 2 reclaimable: it asks
    /// for 3 pods' worth); a stale count never goes below zero, and a
    /// `min_count` stays within what is left.
    #[test]
    fn a_pending_workload_asks_for_its_pods_less_the_reclaimable_ones() {
        let (mut wl, _) = admitted(5, 5, 2);
        let asked = wl.after_reclaim();
        assert_eq!(asked.pod_sets[0].count, 3);
        assert_eq!(asked.pod_sets[0].total_requests_at(3)["cpu"], 30);
        wl.readiness.reclaimable = vec![("main".into(), 9)];
        wl.pod_sets[0].min_count = Some(4);
        let asked = wl.after_reclaim();
        assert_eq!(
            (asked.pod_sets[0].count, asked.pod_sets[0].min_count),
            (0, Some(0))
        );
        wl.readiness.reclaimable.clear();
        assert!(matches!(wl.after_reclaim(), std::borrow::Cow::Borrowed(_)));
    }

    /// Kueue v0.19.2 pkg/workload/workload_test.go, TestNewInfo:
    /// "admitted with reclaim; reclaimablePods on" (5 pods, 3 admitted, 2
    /// reclaimable: the 3 admitted keep their 30m), "admitted with stale
    /// reclaim exceeding scaled-down podSet count" (2 pods, 5 admitted, 5
    /// reclaimable: nothing held, never below zero), and a full admission
    /// with 2 of 5 pods done holding 3 pods' worth.
    #[test]
    fn reclaimable_pods_scale_the_held_usage_down() {
        let cpu = FlavorResource::new("f1", "cpu");
        let (wl, a) = admitted(5, 3, 2);
        assert_eq!(wl.held_usage(&a)[&cpu], 30);
        let (wl, a) = admitted(2, 5, 5);
        assert_eq!(wl.held_usage(&a)[&cpu], 0);
        let (wl, a) = admitted(5, 5, 2);
        assert_eq!(wl.held_usage(&a)[&cpu], 30);
        let (wl, a) = admitted(5, 5, 0);
        assert_eq!(wl.held_usage(&a), a.usage());
    }

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
