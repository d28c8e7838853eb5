//! The `kueue.x-k8s.io/topology` scheduling gate: which gated pods of a
//! Workload admitted by topology-aware scheduling to release, and onto
//! which domain (Kueue v0.19.2's `TopologyUngater`). A released pod loses
//! the gate and gets `nodeSelector` = {level label: domain value} for every
//! level of its pod set's assignment, merged into what it has.
//!
//! Pods are matched to domains by rank when their pod set names a pod
//! index label (and, for replicated jobs, a sub-group index label and
//! count) and every pod's rank reads cleanly; otherwise greedily: each
//! domain takes gated pods until it holds its count. Pod sets of one
//! `podSetGroupName` (a leader and its workers) share one rank space, the
//! smaller set first. A domain on an unhealthy node takes no pod.
//!
//! Core: plain data in, releases out; the shell lists the pods, patches
//! them and keeps the expectations ([`Expectations`]) between passes.

use crate::vocabulary::pointer::At;
use std::collections::{BTreeMap, BTreeSet};

use kube::ResourceExt;
use serde_json::Value;

use crate::api::kueue::conversion::topology::expand;
pub use crate::api::kueue::conversion::topology::Domain;
use crate::api::kueue::v1beta2::{self as api, condition, Conditions};
pub use crate::jobs::slices::replaced;
use crate::vocabulary::{
    keys::{
        self, HOSTNAME_LABEL, PODSET_LABEL, POD_INDEX_OFFSET_ANNOTATION, TOPOLOGY_GATE,
        WORKLOAD_ANNOTATION,
    },
    patch::PatchOp,
};

/// What the gate reads of one admitted pod set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodSetPlacement {
    pub name: String,
    /// `podSetAssignments[].count`.
    pub count: i32,
    /// `topologyAssignment.levels` and its domains, in order.
    pub levels: Vec<String>,
    pub domains: Vec<Domain>,
    /// From the pod set's `topologyRequest`.
    pub pod_index_label: Option<String>,
    pub sub_group_index_label: Option<String>,
    pub sub_group_count: Option<i32>,
    pub group: Option<String>,
}

/// What the gate reads of one pod of a pod set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pod {
    pub name: String,
    /// `kueue.x-k8s.io/workload` (annotation) and `kueue.x-k8s.io/podset`
    /// (label): a pod without both is not the gate's to release.
    pub workload: Option<String>,
    pub pod_set: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// `kueue.x-k8s.io/pod-index-offset`, as written.
    pub index_offset: Option<String>,
    pub node_selector: BTreeMap<String, String>,
    /// Still carries the topology gate.
    pub gated: bool,
    /// Succeeded or Failed: it holds no place any more.
    pub terminated: bool,
}

/// A pod to release: remove the gate, merge `node_selector`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub pod: String,
    pub node_selector: BTreeMap<String, String>,
}

/// Why no pod was released.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// Kueue's `errParseOffsetAnnotation`.
    #[error("failed to parse offset annotation {value:?} of pod {pod:?}")]
    Offset { pod: String, value: String },
}

/// The releases for Workload `workload`: none unless it is `admitted` and
/// some pod set has a topology assignment (Kueue's `IsAdmittedByTAS`).
/// `unhealthy` is `status.unhealthyNodes[].name`.
pub fn releases(
    workload: &str,
    admitted: bool,
    placements: &[PodSetPlacement],
    pods: &[Pod],
    unhealthy: &BTreeSet<String>,
) -> Result<Vec<Release>, GateError> {
    if !admitted || placements.iter().all(|p| p.levels.is_empty()) {
        return Ok(Vec::new());
    }
    let mut by_set: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
    for pod in pods {
        if let (Some(w), Some(ps)) = (&pod.workload, &pod.pod_set) {
            if w == workload && !pod.terminated {
                by_set.entry(ps.as_str()).or_default().push(pod);
            }
        }
    }
    let (mut offsets, mut max_rank) = group_ranks(placements);
    let mut out = Vec::new();
    for p in placements.iter().filter(|p| !p.levels.is_empty()) {
        let live = by_set.get(p.name.as_str()).cloned().unwrap_or_default();
        if let Some(first) = live.first() {
            if let Some(v) = &first.index_offset {
                let offset: i32 = v.parse().map_err(|_| GateError::Offset {
                    pod: first.name.clone(),
                    value: v.clone(),
                })?;
                *offsets.entry(p.name.clone()).or_default() += offset;
                *max_rank.entry(p.name.clone()).or_default() += offset;
            }
        }
        let offset = offsets.get(&p.name).copied().unwrap_or(0);
        let bound = max_rank.get(&p.name).copied().unwrap_or(p.count);
        let by_rank = ranked(p, &live, offset, bound);
        let chosen = match by_rank {
            Some(r) => r,
            None => greedy(p, &live),
        };
        for (pod, domain) in chosen {
            let values = &p.domains[domain].values;
            if unhealthy_node(&p.levels, values, unhealthy) {
                continue;
            }
            out.push(Release {
                pod: pod.name.clone(),
                node_selector: p
                    .levels
                    .iter()
                    .cloned()
                    .zip(values.iter().cloned())
                    .collect(),
            });
        }
    }
    Ok(out)
}

/// Rank offsets and bounds: a pod set alone ranks from 0 to its count; of
/// two sets in one group, the smaller ranks first and the larger after it.
fn group_ranks(placements: &[PodSetPlacement]) -> (BTreeMap<String, i32>, BTreeMap<String, i32>) {
    let mut groups: BTreeMap<String, Vec<&PodSetPlacement>> = BTreeMap::new();
    for (i, p) in placements.iter().enumerate() {
        let g = p.group.clone().unwrap_or_else(|| i.to_string());
        groups.entry(g).or_default().push(p);
    }
    let (mut offsets, mut max_rank) = (BTreeMap::new(), BTreeMap::new());
    for sets in groups.values() {
        match sets.as_slice() {
            [a, b, ..] => {
                let (small, large) = if a.count > b.count { (b, a) } else { (a, b) };
                offsets.insert(small.name.clone(), 0);
                offsets.insert(large.name.clone(), small.count);
                max_rank.insert(small.name.clone(), small.count);
                max_rank.insert(large.name.clone(), large.count + small.count);
            }
            [a] => {
                offsets.insert(a.name.clone(), 0);
                max_rank.insert(a.name.clone(), a.count);
            }
            [] => {}
        }
    }
    (offsets, max_rank)
}

/// The domain of each rank, in assignment order.
fn rank_domains(p: &PodSetPlacement) -> Vec<usize> {
    p.domains
        .iter()
        .enumerate()
        .flat_map(|(i, d)| std::iter::repeat_n(i, d.count.max(0) as usize))
        .collect()
}

fn domain_of(p: &PodSetPlacement, node_selector: &BTreeMap<String, String>) -> Vec<String> {
    p.levels
        .iter()
        .map(|l| node_selector.get(l).cloned().unwrap_or_default())
        .collect()
}

/// Kueue's `readRanksIfAvailable`: the gated pods by rank, or `None` when
/// ranks cannot be used (a label missing or out of range, ranks clashing,
/// or a released pod not on its rank's domain).
fn ranked<'a>(
    p: &PodSetPlacement,
    pods: &[&'a Pod],
    offset: i32,
    bound: i32,
) -> Option<Vec<(&'a Pod, usize)>> {
    let index_label = p.pod_index_label.as_ref()?;
    let size = p.count;
    let job_size = match &p.sub_group_index_label {
        Some(_) => size / p.sub_group_count.filter(|c| *c > 0)?,
        None => size,
    };
    let read = |pod: &Pod, label: &str, below: i32| -> Option<i32> {
        let v: i32 = pod.labels.get(label)?.parse().ok()?;
        (0..below).contains(&v).then_some(v)
    };
    let mut by_rank: BTreeMap<i32, &Pod> = BTreeMap::new();
    for pod in pods {
        let index = read(pod, index_label, bound)?;
        let mut rank = index - offset;
        if let Some(sub) = &p.sub_group_index_label {
            let job = read(pod, sub, p.sub_group_count.unwrap_or(0))?;
            if index >= job_size {
                return None;
            }
            rank = index + job * job_size - offset;
        }
        if rank >= size || rank < 0 || by_rank.insert(rank, pod).is_some() {
            return None;
        }
    }
    let domains = rank_domains(p);
    let mut out = Vec::new();
    for (rank, pod) in by_rank {
        let domain = *domains.get(rank as usize)?;
        if pod.gated {
            out.push((pod, domain));
        } else if domain_of(p, &pod.node_selector) != p.domains[domain].values {
            return None;
        }
    }
    Some(out)
}

/// Kueue's greedy assignment: count the released pods per domain, then
/// fill each domain in order with gated pods up to its count.
fn greedy<'a>(p: &PodSetPlacement, pods: &[&'a Pod]) -> Vec<(&'a Pod, usize)> {
    let mut released: BTreeMap<Vec<String>, i64> = BTreeMap::new();
    let mut gated = Vec::new();
    for pod in pods {
        if pod.gated {
            gated.push(*pod);
        } else {
            *released
                .entry(domain_of(p, &pod.node_selector))
                .or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for (i, d) in p.domains.iter().enumerate() {
        let room = (d.count - released.get(&d.values).copied().unwrap_or(0)).max(0);
        let take = (room as usize).min(gated.len() - out.len());
        for pod in &gated[out.len()..out.len() + take] {
            out.push((*pod, i));
        }
    }
    out
}

/// Kueue's `NodeNameFromDomainID` checked against the unhealthy nodes: only
/// an assignment whose lowest level is the hostname names a node.
fn unhealthy_node(levels: &[String], values: &[String], unhealthy: &BTreeSet<String>) -> bool {
    levels.last().is_some_and(|l| l == HOSTNAME_LABEL)
        && values.last().is_some_and(|n| unhealthy.contains(n))
}

/// What the gate reads of a Workload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admitted {
    /// The `Admitted` condition is true.
    pub admitted: bool,
    pub placements: Vec<PodSetPlacement>,
    /// `status.unhealthyNodes[].name`.
    pub unhealthy: BTreeSet<String>,
}

/// The gate's view of a Workload: each assigned pod set with its topology
/// assignment decoded (an assignment that does not decode places nothing:
/// its pods stay gated) and its request's rank labels.
pub fn read_workload(wl: &api::Workload) -> Admitted {
    let status = wl.status.as_ref();
    let admitted =
        Conditions::of(status.and_then(|s| s.conditions.as_ref())).is_true(condition::ADMITTED);
    let requests: BTreeMap<&str, &api::PodSet> = wl
        .spec
        .pod_sets
        .iter()
        .flatten()
        .map(|p| (p.name.as_str(), p))
        .collect();
    let placements = status
        .and_then(|s| s.admission.as_ref())
        .and_then(|a| a.pod_set_assignments.as_ref())
        .into_iter()
        .flatten()
        .map(|psa| {
            let spec = requests.get(psa.name.as_str());
            let request = spec.and_then(|p| p.topology_request.as_ref());
            let (levels, domains) = psa
                .topology_assignment
                .as_ref()
                .and_then(|t| {
                    let slices = serde_json::to_value(&t.slices).ok()?;
                    let domains = expand(&slices, t.levels.len()).ok()?;
                    Some((t.levels.clone(), domains))
                })
                .unwrap_or_default();
            PodSetPlacement {
                name: psa.name.clone(),
                count: psa.count.or(spec.map(|p| p.count)).unwrap_or(0),
                levels,
                domains,
                pod_index_label: request.and_then(|r| r.pod_index_label.clone()),
                sub_group_index_label: request.and_then(|r| r.sub_group_index_label.clone()),
                sub_group_count: request.and_then(|r| r.sub_group_count),
                group: request.and_then(|r| r.pod_set_group_name.clone()),
            }
        })
        .collect();
    let unhealthy = status
        .and_then(|s| s.unhealthy_nodes.as_ref())
        .into_iter()
        .flatten()
        .map(|n| n.name.clone())
        .collect();
    Admitted {
        admitted,
        placements,
        unhealthy,
    }
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

/// Whether the pod still carries the topology gate.
pub fn is_gated(pod: &Value) -> bool {
    pod.at("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|gs| {
            gs.iter()
                .any(|g| g.get("name").and_then(Value::as_str) == Some(TOPOLOGY_GATE))
        })
}

/// The gate's view of a pod.
pub fn read_pod(pod: &Value) -> Pod {
    let labels = string_map(pod.at("/metadata/labels"));
    let annotations = string_map(pod.at("/metadata/annotations"));
    Pod {
        name: pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        workload: annotations.get(WORKLOAD_ANNOTATION).cloned(),
        pod_set: labels.get(PODSET_LABEL).cloned(),
        index_offset: annotations.get(POD_INDEX_OFFSET_ANNOTATION).cloned(),
        node_selector: string_map(pod.at("/spec/nodeSelector")),
        gated: is_gated(pod),
        terminated: matches!(
            pod.at("/status/phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        ),
        labels,
    }
}

/// The patch that releases `pod`: the topology gate removed (tested by
/// name at its index) and the domain's levels merged into its node
/// selector, all tested against the pod's `resourceVersion`, so a pod
/// changed since it was read is not written from stale data.
pub fn release_patch(pod: &Value, release: &Release) -> Vec<PatchOp> {
    let Some(at) = pod
        .at("/spec/schedulingGates")
        .and_then(Value::as_array)
        .and_then(|gs| {
            gs.iter()
                .position(|g| g.get("name").and_then(Value::as_str) == Some(TOPOLOGY_GATE))
        })
    else {
        return Vec::new();
    };
    let mut ops = super::workload::version_test(pod);
    ops.push(PatchOp {
        op: "test",
        path: format!("/spec/schedulingGates/{at}/name"),
        value: Value::String(TOPOLOGY_GATE.into()),
    });
    ops.push(PatchOp {
        op: "remove",
        path: format!("/spec/schedulingGates/{at}"),
        value: Value::Null,
    });
    let mut selector = pod
        .at("/spec/nodeSelector")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (k, v) in &release.node_selector {
        selector.insert(k.clone(), Value::String(v.clone()));
    }
    ops.push(PatchOp {
        op: "add",
        path: "/spec/nodeSelector".into(),
        value: Value::Object(selector),
    });
    ops
}

/// One pass over a Workload and its pods (JSON, as listed): the pods to
/// release, each with its patch. Nothing while expectations are out is the
/// caller's rule ([`Expectations`]).
pub fn plan(wl: &api::Workload, pods: &[&Value]) -> Result<Vec<(String, Vec<PatchOp>)>, GateError> {
    plan_as(wl, &wl.name_any(), pods)
}

/// [`plan`] by `wl`'s assignment for the pods that name `named` (a slice
/// `wl` replaced, see [`successor`]).
pub fn plan_as(
    wl: &api::Workload,
    named: &str,
    pods: &[&Value],
) -> Result<Vec<(String, Vec<PatchOp>)>, GateError> {
    let view = read_workload(wl);
    let read: Vec<Pod> = pods.iter().map(|p| read_pod(p)).collect();
    let out = releases(
        named,
        view.admitted,
        &view.placements,
        &read,
        &view.unhealthy,
    )?;
    Ok(out
        .iter()
        .filter_map(|r| {
            let pod = pods
                .iter()
                .find(|p| p["metadata"]["name"].as_str() == Some(r.pod.as_str()))?;
            let ops = release_patch(pod, r);
            (!ops.is_empty()).then(|| (r.pod.clone(), ops))
        })
        .collect())
}

/// The slice whose assignment the pods of `named`, a replaced slice, are
/// released by: of `listed` (the job's Workloads), the newest of the same
/// chain and controller that is admitted and not finished. A running
/// elastic job's pods keep the first slice's name (its templates are not
/// written again while it runs), so Kueue's ungater releases a scaled-up
/// job's new pods by the replaced slice's assignment, which has no room
/// for them: they would stay gated. `None`: `named` is not replaced, or
/// its successor is not admitted yet.
pub fn successor<'a>(
    named: &api::Workload,
    listed: &'a [api::Workload],
) -> Option<&'a api::Workload> {
    if !replaced(named) {
        return None;
    }
    let chain = crate::jobs::machine::slice_name;
    let owner = crate::jobs::workload::controller_of(named)?;
    let ns = named.namespace();
    listed
        .iter()
        .filter(|w| {
            let conds = Conditions::of(w.status.as_ref().and_then(|s| s.conditions.as_ref()));
            w.namespace() == ns
                && crate::jobs::workload::controller_of(w) == Some(owner)
                && chain(w) == chain(named)
                && conds.is_true(condition::ADMITTED)
                && !conds.is_true(condition::FINISHED)
        })
        .max_by(|a, b| {
            let at = |w: &api::Workload| w.metadata.creation_timestamp.as_ref().map(|t| t.0);
            at(a)
                .cmp(&at(b))
                .then_with(|| a.metadata.uid.cmp(&b.metadata.uid))
        })
}

/// An elastic slice not replaced yet, with a pod still behind the
/// topology gate but no longer behind the elastic-job gate: a newer slice
/// was admitted for it, and this one is about to be finished as replaced.
pub fn successor_due(wl: &api::Workload, pods: &[&Value]) -> bool {
    let gated = |p: &Value, gate: &str| {
        p.at("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|gs| gs.iter().any(|g| g["name"] == gate))
    };
    let elastic = wl
        .annotations()
        .get(keys::ELASTIC_JOB_ANNOTATION)
        .map(String::as_str)
        == Some("true");
    elastic
        && !replaced(wl)
        && pods
            .iter()
            .any(|p| gated(p, TOPOLOGY_GATE) && !gated(p, keys::ELASTIC_JOB_SCHEDULING_GATE))
}

/// Pods released but not yet seen released, by Workload: while any is
/// outstanding, the next pass waits (Kueue's ungating expectations), so a
/// stale pod list never releases a pod twice or too many.
#[derive(Debug, Default)]
pub struct Expectations {
    pending: BTreeMap<String, BTreeSet<String>>,
}

impl Expectations {
    pub fn expect(&mut self, workload: &str, pods: impl IntoIterator<Item = String>) {
        self.pending
            .entry(workload.to_string())
            .or_default()
            .extend(pods);
    }

    /// A pod seen without the gate, or gone.
    pub fn observed(&mut self, workload: &str, pod: &str) {
        if let Some(set) = self.pending.get_mut(workload) {
            set.remove(pod);
            if set.is_empty() {
                self.pending.remove(workload);
            }
        }
    }

    pub fn satisfied(&self, workload: &str) -> bool {
        !self.pending.contains_key(workload)
    }
}

#[cfg(test)]
mod cases;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn workload(admitted: bool) -> api::Workload {
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "ns"},
            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 3,
                "topologyRequest": {"required": "rack",
                    "podIndexLabel": "batch.kubernetes.io/job-completion-index"},
                "template": {"spec": {"containers": []}}}]},
            "status": {
                "conditions": [{"type": "Admitted", "status": if admitted { "True" } else { "False" },
                    "reason": "Admitted", "message": "", "lastTransitionTime": "2026-11-30T00:00:00Z"}],
                "admission": {"clusterQueue": "cq", "podSetAssignments": [{
                    "name": "main", "count": 3, "flavors": {"cpu": "tas"},
                    "topologyAssignment": {"levels": ["kubernetes.io/hostname"],
                        "slices": [{"domainCount": 2,
                            "valuesPerLevel": [{"individual": {"roots": ["n1", "n2"]}}],
                            "podCounts": {"individual": [2, 1]}}]}}]}}
        }))
        .unwrap()
    }

    fn pod(name: &str, index: &str, gates: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "resourceVersion": "7",
                "labels": {"kueue.x-k8s.io/podset": "main",
                           "batch.kubernetes.io/job-completion-index": index},
                "annotations": {"kueue.x-k8s.io/workload": "wl"}},
               "spec": {"nodeSelector": {"pool": "tas"}, "schedulingGates": gates}})
    }

    /// A Workload read as Kueue's ungater reads it, and each pod released
    /// by rank with one tested patch: the gate removed where it sits, the
    /// domain merged into the node selector it has.
    #[test]
    fn an_admitted_workloads_gated_pods_are_released_by_rank() {
        let view = read_workload(&workload(true));
        assert!(view.admitted);
        assert_eq!(view.placements[0].count, 3);
        assert_eq!(
            view.placements[0].pod_index_label.as_deref(),
            Some("batch.kubernetes.io/job-completion-index")
        );
        let gated = json!([{"name": "example.com/other"}, {"name": TOPOLOGY_GATE}]);
        let pods = [
            pod("p2", "2", gated.clone()),
            pod("p0", "0", gated.clone()),
            pod("p1", "1", gated),
        ];
        let refs: Vec<&Value> = pods.iter().collect();
        let plan = plan(&workload(true), &refs).unwrap();
        let by_pod: BTreeMap<&str, &Vec<PatchOp>> =
            plan.iter().map(|(p, ops)| (p.as_str(), ops)).collect();
        assert_eq!(by_pod.len(), 3);
        let ops = serde_json::to_value(by_pod["p2"]).unwrap();
        assert_eq!(
            ops,
            json!([
                {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                {"op": "test", "path": "/spec/schedulingGates/1/name", "value": TOPOLOGY_GATE},
                {"op": "remove", "path": "/spec/schedulingGates/1", "value": null},
                {"op": "add", "path": "/spec/nodeSelector",
                 "value": {"pool": "tas", "kubernetes.io/hostname": "n2"}},
            ])
        );
        let node = |p: &str| {
            serde_json::to_value(by_pod[p]).unwrap()[3]["value"]["kubernetes.io/hostname"].clone()
        };
        assert_eq!((node("p0"), node("p1")), (json!("n1"), json!("n1")));
        // Not admitted (evicted in between): nothing is released.
        assert!(super::plan(&workload(false), &refs).unwrap().is_empty());
    }

    /// A slice of an elastic job: `name`, created at `at` s, controlled by
    /// `owner`, of the chain `first`, admitted or finished as replaced.
    fn slice(name: &str, at: i64, owner: &str, first: &str, state: &str) -> api::Workload {
        let mut wl = workload(state == "admitted");
        wl.metadata.name = Some(name.into());
        wl.metadata.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::from_second(at).unwrap(),
            ));
        wl.metadata.owner_references = Some(vec![serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": owner, "controller": true}))
        .unwrap()]);
        wl.metadata.annotations = Some(
            [
                (keys::ELASTIC_JOB_ANNOTATION.to_string(), "true".to_string()),
                (
                    keys::WORKLOAD_SLICE_NAME_ANNOTATION.to_string(),
                    first.to_string(),
                ),
            ]
            .into(),
        );
        if state == "replaced" {
            let conds = wl.status.as_mut().unwrap().conditions.as_mut().unwrap();
            conds.push(serde_json::from_value(json!({"type": "Finished", "status": "True",
                "reason": "WorkloadSliceReplaced", "message": "", "lastTransitionTime": "2026-11-30T00:00:00Z"}))
                .unwrap());
        }
        wl
    }

    /// batchgate, beyond Kueue's ungater (which keeps to the replaced
    /// slice, leaving a scaled-up job's new pods gated): a replaced slice's
    /// pods are released by the newest admitted slice of its chain and
    /// controller; none while the successor waits, none of another chain
    /// or job, and a slice not replaced is its own.
    #[test]
    fn a_replaced_slices_pods_follow_the_newest_admitted_slice_of_its_chain() {
        let old = slice("s1", 1, "job", "s1", "replaced");
        let name = |w: Option<&api::Workload>| w.map(|w| w.name_any());
        let listed = vec![
            old.clone(),
            slice("s2", 2, "job", "s1", "admitted"),
            slice("s3", 3, "job", "s1", "pending"),
            slice("x9", 9, "other-job", "s1", "admitted"),
            slice("y9", 9, "job", "y1", "admitted"),
        ];
        assert_eq!(name(successor(&old, &listed)), Some("s2".into()));
        assert_eq!(
            name(successor(&old, &listed[2..3])),
            None,
            "the successor is not admitted yet"
        );
        let live = slice("s2", 2, "job", "s1", "admitted");
        assert_eq!(
            name(successor(&live, &listed)),
            None,
            "not replaced: its own pods"
        );
        // The pods name the replaced slice ("wl" here): released by the
        // successor's assignment for them.
        let gated = json!([{"name": TOPOLOGY_GATE}]);
        let pods = [pod("p0", "0", gated.clone()), pod("p1", "1", gated)];
        let refs: Vec<&Value> = pods.iter().collect();
        assert_eq!(plan_as(&live, "wl", &refs).unwrap().len(), 2);
        assert!(
            plan(&live, &refs).unwrap().is_empty(),
            "not s2's pods by name"
        );
    }

    /// While the replacing slice's admission has landed (its pods let go
    /// from the elastic gate) but the old slice is not finished yet, the
    /// pass looks again; not for a pod still behind the elastic gate, nor
    /// for a job that is not elastic.
    #[test]
    fn a_pod_granted_by_a_newer_slice_waits_for_the_old_ones_finish() {
        let topology = json!([{"name": TOPOLOGY_GATE}]);
        let both = json!([{"name": TOPOLOGY_GATE}, {"name": keys::ELASTIC_JOB_SCHEDULING_GATE}]);
        let granted = pod("p3", "3", topology);
        let held = pod("p4", "4", both);
        let live = slice("s1", 1, "job", "s1", "admitted");
        assert!(successor_due(&live, &[&held, &granted]));
        assert!(!successor_due(&live, &[&held]));
        assert!(!successor_due(
            &slice("s1", 1, "job", "s1", "replaced"),
            &[&granted]
        ));
        assert!(!successor_due(&workload(true), &[&granted]));
    }
}
