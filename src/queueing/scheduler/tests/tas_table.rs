//! The table form of Kueue v0.19.2 `pkg/scheduler/scheduler_tas_test.go`:
//! a case is the cluster (topologies, flavors, queues, nodes, pods,
//! workloads, admitted ones with their assignments) and what one scheduling
//! cycle must decide — the admissions (flavors, usage, counts, topology
//! assignments), the workloads left in each queue and those set aside
//! (`wantLeft`, `wantInadmissibleLeft`), the pending messages (the
//! `Warning` events) and the preemptions (the `Preempted` conditions).
//! Every case carries its upstream name; the runner reports every case
//! that disagrees, by name.
//!
//! The file's other two tests are not ported: `TestScheduleForTASWhenWorkloadModifiedConcurrently`
//! ("use patch in evictWorkloadAfterFailedTASReplacement") and
//! `TestSecondPassSkipsWaitForPodsReadyBlock` ("delayed topology
//! assignment", "failed node replacement") need node-failure replacement
//! and delayed topology requests, which batchgate does not have.

use super::*;
use crate::api::kueue::conversion::topology::Domain;
use crate::queueing::{
    cluster_queue::BorrowWithinCohort,
    nodes::PodUsage,
    quantity,
    topology::{Assignment as Topo, Node},
    workload::{PodSetAssignment, SliceLayer, TopologyRequest},
};

pub(super) const HOST: &str = "kubernetes.io/hostname";
pub(super) const BLOCK: &str = "cloud.com/topology-block";
pub(super) const RACK: &str = "cloud.provider.com/rack";
pub(super) const NOW: i64 = 1_000_000;

/// A quantity as upstream writes it (`"1"`, `"500m"`, `"1Gi"`).
pub(super) fn q(s: &str) -> i64 {
    quantity::parse(s).expect("a quantity")
}

pub(super) fn res(list: &[(&str, &str)]) -> BTreeMap<String, i64> {
    list.iter().map(|(r, v)| (r.to_string(), q(v))).collect()
}

/// `testingnode.MakeNode(name)...Ready()`.
pub(super) fn node(name: &str, labels: &[(&str, &str)], allocatable: &[(&str, &str)]) -> Node {
    Node {
        name: name.into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        allocatable: res(allocatable),
        ready: true,
        ..Default::default()
    }
}

/// A node of a `tas-node: "true"` flavor with a hostname.
pub(super) fn tas_node(
    name: &str,
    host: &str,
    more: &[(&str, &str)],
    alloc: &[(&str, &str)],
) -> Node {
    let mut labels = vec![("tas-node", "true"), (HOST, host)];
    labels.extend_from_slice(more);
    node(name, &labels, alloc)
}

/// `MakeResourceFlavor(name).NodeLabel("tas-node", "true").TopologyName(topology)`.
pub(super) fn tas_flavor(name: &str, topology: &str) -> ResourceFlavor {
    ResourceFlavor {
        topology_name: Some(topology.into()),
        node_labels: [("tas-node".to_string(), "true".to_string())].into(),
        ..flavor(name)
    }
}

pub(super) fn plain_flavor(name: &str) -> ResourceFlavor {
    flavor(name)
}

/// `MakeClusterQueue(name)` with one resource group per entry: the
/// flavors, each with its (resource, nominal) quotas.
/// One resource group: each flavor with its (resource, nominal) quotas.
pub(super) type Group<'a> = &'a [(&'a str, &'a [(&'a str, &'a str)])];

pub(super) fn queue(name: &str, groups: &[Group<'_>]) -> ClusterQueue {
    let mut queue = cq(name, None, &[]);
    queue.resource_groups = groups
        .iter()
        .map(|flavors| {
            let mut covered: Vec<String> = Vec::new();
            let flavors = flavors
                .iter()
                .map(|(f, quotas)| FlavorQuotas {
                    name: f.to_string(),
                    resources: quotas
                        .iter()
                        .map(|(r, v)| {
                            if !covered.iter().any(|c| c == r) {
                                covered.push(r.to_string());
                            }
                            ResourceQuota {
                                name: r.to_string(),
                                nominal: q(v),
                                borrowing_limit: None,
                                lending_limit: None,
                            }
                        })
                        .collect(),
                })
                .collect();
            ResourceGroup {
                covered_resources: covered,
                flavors,
            }
        })
        .collect();
    queue
}

pub(super) trait QueueExt {
    fn cohort(self, cohort: &str) -> Self;
    fn preemption(
        self,
        within: PreemptionPolicy,
        reclaim: PreemptionPolicy,
        borrow_within: Option<BorrowWithinCohort>,
    ) -> Self;
    /// `BorrowingLimit` of `resource` in `flavor`.
    fn borrowing_limit(self, flavor: &str, resource: &str, limit: &str) -> Self;
}

impl QueueExt for ClusterQueue {
    fn cohort(mut self, cohort: &str) -> Self {
        self.cohort = Some(cohort.into());
        self
    }
    fn preemption(
        mut self,
        within: PreemptionPolicy,
        reclaim: PreemptionPolicy,
        borrow_within: Option<BorrowWithinCohort>,
    ) -> Self {
        self.preemption = Preemption {
            within_cluster_queue: within,
            reclaim_within_cohort: reclaim,
            borrow_within_cohort: borrow_within,
        };
        self
    }
    fn borrowing_limit(mut self, flavor: &str, resource: &str, limit: &str) -> Self {
        for g in &mut self.resource_groups {
            for f in g.flavors.iter_mut().filter(|f| f.name == flavor) {
                for r in f.resources.iter_mut().filter(|r| r.name == resource) {
                    r.borrowing_limit = Some(q(limit));
                }
            }
        }
        self
    }
}

pub(super) fn required(level: &str) -> Option<TopologyRequest> {
    Some(TopologyRequest {
        required: Some(level.into()),
        ..Default::default()
    })
}

pub(super) fn preferred(level: &str) -> Option<TopologyRequest> {
    Some(TopologyRequest {
        preferred: Some(level.into()),
        ..Default::default()
    })
}

pub(super) fn unconstrained() -> Option<TopologyRequest> {
    Some(TopologyRequest {
        unconstrained: Some(true),
        ..Default::default()
    })
}

/// Multi-layer slices (`podsetSliceRequiredTopologyConstraints`) under a
/// required level.
pub(super) fn layered(level: &str, layers: &[(&str, i32)]) -> Option<TopologyRequest> {
    Some(TopologyRequest {
        required: Some(level.into()),
        slice_layers: layers
            .iter()
            .map(|(l, s)| SliceLayer {
                level: l.to_string(),
                size: *s,
            })
            .collect(),
        ..Default::default()
    })
}

/// `MakePodSet(name, count)` with a topology request and requests.
pub(super) fn pod_set(
    name: &str,
    count: u32,
    topology: Option<TopologyRequest>,
    requests: &[(&str, &str)],
) -> PodSet {
    PodSet {
        name: name.into(),
        count,
        min_count: None,
        requests: res(requests).into(),
        node_selector: BTreeMap::new(),
        node_affinity: Default::default(),
        tolerations: vec![],
        topology,
    }
}

/// `MakeWorkload(name).Queue(local queue)`: the local queues of the cases
/// are named after their ClusterQueues.
pub(super) fn workload(name: &str, cq: &str, pod_sets: Vec<PodSet>) -> Workload {
    let mut w = wl(name, cq, 0, 0, 0);
    w.uid = "".into();
    w.pod_sets = pod_sets;
    w
}

pub(super) trait WorkloadExt {
    fn priority(self, p: i32) -> Self;
    fn uid(self, uid: &str) -> Self;
    fn job_uid(self, uid: &str) -> Self;
    fn created(self, at: i64) -> Self;
    /// `ReserveQuotaAt(admission).AdmittedAt(true)`.
    fn admitted(self, admission: Admission) -> Self;
}

impl WorkloadExt for Workload {
    fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }
    fn uid(mut self, uid: &str) -> Self {
        self.uid = uid.into();
        self
    }
    fn job_uid(mut self, uid: &str) -> Self {
        self.job_uid = Some(uid.into());
        self
    }
    fn created(mut self, at: i64) -> Self {
        self.created = at;
        self
    }
    fn admitted(mut self, admission: Admission) -> Self {
        self.admission = Some(admission);
        self
    }
}

/// `MakeAdmission(cq).PodSets(...)`.
pub(super) fn admission(cq: &str, pod_sets: Vec<PodSetAssignment>) -> Admission {
    Admission {
        cluster_queue: cq.into(),
        pod_set_assignments: pod_sets,
    }
}

/// `MakePodSetAssignment(name).Assignment(resource, flavor, qty)...
/// .Count(count).TopologyAssignment(...)`.
pub(super) fn psa(
    name: &str,
    assignments: &[(&str, &str, &str)],
    count: u32,
    topology: Option<Topo>,
) -> PodSetAssignment {
    PodSetAssignment {
        name: name.into(),
        flavors: assignments
            .iter()
            .map(|(r, f, _)| (r.to_string(), f.to_string()))
            .collect(),
        resource_usage: assignments
            .iter()
            .map(|(r, _, v)| (r.to_string(), q(v)))
            .collect(),
        count,
        topology,
    }
}

/// On hostname domains: `[("x1", 2), ...]`.
pub(super) fn on_hosts(domains: &[(&str, i64)]) -> Option<Topo> {
    Some(Topo {
        levels: vec![HOST.into()],
        domains: domains
            .iter()
            .map(|(h, count)| Domain {
                values: vec![h.to_string()],
                count: *count,
            })
            .collect(),
    })
}

/// A non-TAS pod: its key, node and requests.
pub(super) type BoundPod = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str)>,
);

/// One upstream case.
#[derive(Default)]
pub(super) struct Case {
    /// The upstream case name, word for word.
    pub name: &'static str,
    pub topologies: Vec<(&'static str, Vec<&'static str>)>,
    pub flavors: Vec<ResourceFlavor>,
    pub queues: Vec<ClusterQueue>,
    pub cohorts: Vec<Cohort>,
    pub nodes: Vec<Node>,
    /// Non-TAS pods bound to nodes: (key, node, requests).
    pub pods: Vec<BoundPod>,
    pub workloads: Vec<Workload>,
    /// Anything else the cluster has (admission checks), before the
    /// nodes and workloads are added.
    pub setup: Option<fn(&mut Engine)>,
    /// `wantNewAssignments`.
    pub admitted: Vec<(&'static str, Admission)>,
    /// `wantLeft`: per ClusterQueue, the workloads waiting in order.
    pub left: Vec<(&'static str, Vec<&'static str>)>,
    /// `wantInadmissibleLeft`: per ClusterQueue, the workloads set aside.
    pub inadmissible: Vec<(&'static str, Vec<&'static str>)>,
    /// The `Warning` events: each pending workload's message.
    pub pending: Vec<(&'static str, &'static str)>,
    /// The preempted workloads, with their `Preempted` reason and message.
    pub preempted: Vec<(&'static str, PreemptedReason, &'static str)>,
    /// Evictions for failed nodes (`EvictedDueToNodeFailures` events).
    pub node_failures: Vec<(&'static str, &'static str)>,
}

impl Case {
    fn engine(&self) -> Engine {
        let mut e = Engine::new();
        for (name, levels) in &self.topologies {
            e.upsert_topology(name, levels.iter().map(|l| l.to_string()).collect());
        }
        for f in &self.flavors {
            e.upsert_flavor(f.clone());
        }
        for c in &self.cohorts {
            e.upsert_cohort(c.clone());
        }
        for q in &self.queues {
            e.upsert_local_queue(lq(&q.name));
            e.upsert_cluster_queue(q.clone());
        }
        if let Some(setup) = self.setup {
            setup(&mut e);
        }
        for n in &self.nodes {
            e.sync_node(n.clone());
        }
        for (key, node, requests) in &self.pods {
            e.update_pod_usage(
                key,
                Some(PodUsage {
                    node: node.to_string(),
                    requests: res(requests),
                }),
            );
        }
        for (i, w) in self.workloads.iter().enumerate() {
            let mut w = w.clone();
            if w.created == 0 {
                w.created = i as i64 + 1;
            }
            e.upsert_workload(w);
        }
        e
    }

    /// One scheduling cycle; what disagrees with upstream, one line each.
    pub fn check(&self) -> Vec<String> {
        let mut e = self.engine();
        let c = e.schedule(NOW);
        let mut diffs = Vec::new();
        if e.tas_held != e.tas_held_walked() {
            diffs.push(format!(
                "TAS usage index:\n  kept   {:?}\n  walked {:?}",
                e.tas_held,
                e.tas_held_walked()
            ));
        }
        let mut got_admitted: Vec<(String, Admission)> = c
            .decisions
            .iter()
            .filter_map(|d| match d {
                // A second pass's new assignment is one of upstream's
                // `wantNewAssignments` too.
                Decision::Admit {
                    workload,
                    admission,
                }
                | Decision::Replace {
                    workload,
                    admission,
                } => Some((workload.clone(), admission.clone())),
                _ => None,
            })
            .collect();
        got_admitted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want_admitted: Vec<(String, Admission)> = self
            .admitted
            .iter()
            .map(|(n, a)| (key(n), a.clone()))
            .collect();
        want_admitted.sort_by(|a, b| a.0.cmp(&b.0));
        if got_admitted != want_admitted {
            diffs.push(format!(
                "admitted:\n  got  {got_admitted:?}\n  want {want_admitted:?}"
            ));
        }
        for (want, set_aside) in [(&self.left, false), (&self.inadmissible, true)] {
            let mut got: Vec<(String, Vec<String>)> = Vec::new();
            for (name, pq) in e.queues.iter() {
                let aside: BTreeSet<&str> = pq.set_aside_keys().collect();
                let mut keys: Vec<String> = pq
                    .keys()
                    .filter(|k| aside.contains(k) == set_aside)
                    .map(str::to_string)
                    .collect();
                keys.sort();
                if !keys.is_empty() {
                    got.push((name.clone(), keys));
                }
            }
            let mut want: Vec<(String, Vec<String>)> = want
                .iter()
                .map(|(q, ws)| {
                    let mut ks: Vec<String> = ws.iter().map(|w| key(w)).collect();
                    ks.sort();
                    (q.to_string(), ks)
                })
                .collect();
            want.sort();
            got.sort();
            if got != want {
                let what = if set_aside { "inadmissible" } else { "left" };
                diffs.push(format!("{what}:\n  got  {got:?}\n  want {want:?}"));
            }
        }
        let mut got_pending: Vec<(String, String)> = c
            .decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Pending {
                    workload, message, ..
                } => Some((workload.clone(), message.clone())),
                _ => None,
            })
            .collect();
        got_pending.sort();
        let mut want_pending: Vec<(String, String)> = self
            .pending
            .iter()
            .map(|(n, m)| (key(n), m.to_string()))
            .collect();
        want_pending.sort();
        if got_pending != want_pending {
            diffs.push(format!(
                "pending:\n  got  {got_pending:?}\n  want {want_pending:?}"
            ));
        }
        let mut got_preempted: Vec<(String, PreemptedReason, String)> = evictions(&c)
            .into_iter()
            .filter(|e| e.1 == EvictionReason::Preempted)
            .map(|(k, _, m, r)| (k, r.unwrap_or(PreemptedReason::InClusterQueue), m))
            .collect();
        got_preempted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want_preempted: Vec<(String, PreemptedReason, String)> = self
            .preempted
            .iter()
            .map(|(n, r, m)| (key(n), *r, m.to_string()))
            .collect();
        want_preempted.sort_by(|a, b| a.0.cmp(&b.0));
        if got_preempted != want_preempted {
            diffs.push(format!(
                "preempted:\n  got  {got_preempted:?}\n  want {want_preempted:?}"
            ));
        }
        let got_failed: Vec<(String, String)> = evictions(&c)
            .into_iter()
            .filter(|e| e.1 == EvictionReason::NodeFailures)
            .map(|(k, _, m, _)| (k, m))
            .collect();
        let want_failed: Vec<(String, String)> = self
            .node_failures
            .iter()
            .map(|(n, m)| (key(n), m.to_string()))
            .collect();
        if got_failed != want_failed {
            diffs.push(format!(
                "evicted for node failures:\n  got  {got_failed:?}\n  want {want_failed:?}"
            ));
        }
        diffs
    }
}

/// Runs every case; fails listing each that disagrees.
pub(super) fn run_table(table: &str, cases: Vec<Case>) {
    let total = cases.len();
    let mut failed = Vec::new();
    for case in &cases {
        let diffs = case.check();
        if !diffs.is_empty() {
            failed.push(format!("{table} {:?}:\n{}", case.name, diffs.join("\n")));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {total} cases disagree with what they expect:\n\n{}",
        failed.len(),
        failed.join("\n\n")
    );
}
