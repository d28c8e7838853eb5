//! Node failures under topology-aware scheduling (Kueue v0.19.2's TAS
//! node controller, default gates: `TASFailedNodeReplacement`,
//! `TASReplaceNodeOnPodTermination` and `TASReplaceNodeOnNodeTaints` on,
//! `TASReplaceNodeDueToNotReadyOverFixedTime` off).
//!
//! For one node, every admitted Workload whose topology assignment names it
//! is judged: a node gone or without a `Ready` condition fails it at once;
//! a NotReady node, or a NoSchedule/NoExecute taint its pod sets do not
//! tolerate for good, fails it once none of its pods there is still
//! progressing. A failed node goes into `status.unhealthyNodes` (the
//! scheduler then replaces its pods); a second one evicts the Workload; a
//! node healthy again leaves the list. Pods still pending towards a node
//! by a hostname selector, never bound and no longer gated, are marked
//! Failed, as Kueue does, so their job makes new ones.
//!
//! Core: the node, the Workloads and the pods in; [`Action`]s out. The
//! shell (`controllers::node_failure`) reads and writes.

use crate::vocabulary::pointer::At;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{json, Value};

use crate::api::kueue::conversion::topology::expand;
use crate::api::kueue::v1beta2::{self as api, condition, eviction_reason, Conditions};
use crate::vocabulary::keys::{
    HOSTNAME_LABEL, PODSET_PREFERRED_TOPOLOGY_ANNOTATION, PODSET_REQUIRED_TOPOLOGY_ANNOTATION,
    PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION, PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
    TOPOLOGY_GATE, WORKLOAD_ANNOTATION,
};

/// Kueue's eviction message for a second failed node; `%s` is every
/// unhealthy node, the new one last, joined with ", ".
pub fn multiple_failures_message(nodes: &[String]) -> String {
    format!(
        "Workload eviction triggered due to multiple TAS assigned node failures, including: {}",
        nodes.join(", ")
    )
}

/// The pod condition, reason, message and event reason Kueue leaves on a
/// pod it fails.
pub const POD_CONDITION: &str = "TerminatedByKueue";
pub const POD_REASON: &str = "UnschedulableOnAssignedNode";
pub const POD_MESSAGE: &str = "Pod terminated by Kueue NodeController due to node taint";
pub const POD_EVENT_REASON: &str = "PodTerminatedByKueue";
pub const POD_EVENT_ACTION: &str = "PodTerminated";

/// `namespace`, `name`.
pub type Key = (String, String);

/// What to write, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Merge-patch the Workload's status (`resourceVersion` included).
    WorkloadStatus { workload: Key, patch: Value },
    /// A Normal event on the Workload.
    WorkloadEvent {
        workload: Key,
        reason: String,
        note: String,
    },
    /// Merge-patch the pod's status to Failed (`resourceVersion` included),
    /// then tell it with [`POD_EVENT_REASON`].
    FailPod { pod: Key, patch: Value },
}

/// What the node controller reads.
pub struct Facts<'a> {
    pub node_name: &'a str,
    /// `None`: the node is gone.
    pub node: Option<&'a Value>,
    /// Admitted Workloads naming the node, and those with pods pending
    /// towards it (the shell may give more: the rest are ignored).
    pub workloads: &'a [&'a api::Workload],
    /// Pods bound to the node or selecting it by hostname.
    pub pods: &'a [&'a Value],
    /// Each ResourceFlavor's `spec.tolerations`, by name.
    pub flavor_tolerations: &'a BTreeMap<String, Vec<Toleration>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Health {
    Healthy,
    Unhealthy,
}

/// The writes one node's state calls for.
pub fn step(f: &Facts<'_>, now: &Time) -> Vec<Action> {
    let node = f.node_name;
    let ready = f.node.and_then(ready_status);
    let live: Vec<&api::Workload> = f
        .workloads
        .iter()
        .copied()
        .filter(|w| !finished(w) && !evicted(w))
        .collect();
    let assigned: Vec<&api::Workload> = live
        .iter()
        .copied()
        .filter(|w| assigned_nodes(w).contains(node))
        .collect();
    let mut out = Vec::new();
    if f.node.is_none() || ready.is_none() {
        // Gone, or no Ready condition: failed at once, stray pods aside.
        for wl in assigned {
            unhealthy(wl, node, now, &mut out);
        }
        return out;
    }
    let ready = ready == Some(true);
    let selecting: Vec<&Value> = f
        .pods
        .iter()
        .copied()
        .filter(|p| is_tas(p) && selector_host(p) == Some(node))
        .collect();
    let late: BTreeSet<Key> = selecting.iter().filter_map(|p| workload_of(p)).collect();
    let judged = live
        .iter()
        .copied()
        .filter(|w| assigned.iter().any(|a| key(a) == key(w)) || late.contains(&key(w)));
    for wl in judged {
        let k = key(wl);
        let theirs: Vec<&Value> = selecting
            .iter()
            .copied()
            .filter(|p| workload_of(p).as_ref() == Some(&k))
            .collect();
        let (health, stray) = judge(wl, node, ready, f, &theirs);
        let evicted_now = match health {
            Health::Unhealthy => unhealthy(wl, node, now, &mut out),
            Health::Healthy => {
                healthy(wl, node, &mut out);
                false
            }
        };
        if evicted_now {
            continue;
        }
        for pod in stray {
            out.push(Action::FailPod {
                pod: pod_key(pod),
                patch: failed_pod_patch(pod, now),
            });
        }
    }
    out
}

/// A Workload's health on the node, and its pods to fail (Kueue's
/// `getWorkloadStatus`).
fn judge<'p>(
    wl: &api::Workload,
    node: &str,
    ready: bool,
    f: &Facts<'_>,
    selecting: &[&'p Value],
) -> (Health, Vec<&'p Value>) {
    let assigned = assigned_nodes(wl).contains(node);
    let pods = || check_pods(wl, node, assigned, f.pods, selecting);
    if !assigned || !ready {
        return pods();
    }
    let taints: Vec<Taint> = f
        .node
        .and_then(|n| n.at("/spec/taints"))
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default();
    let scheduling: Vec<&Taint> = taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .collect();
    if scheduling.is_empty() {
        return (Health::Healthy, Vec::new());
    }
    let pod_sets = tolerations_on_node(wl, node, f.flavor_tolerations);
    let mut temporarily = false;
    for taint in scheduling {
        match toleration_of(taint, &pod_sets) {
            Tolerated::Not => return pods(),
            Tolerated::Temporarily => temporarily = true,
            Tolerated::Permanently => {}
        }
    }
    if temporarily {
        return pods();
    }
    (Health::Healthy, Vec::new())
}

/// Kueue's `checkPodsOnNode`: unhealthy once none of the Workload's pods
/// bound to the node is progressing; the pods pending towards it, unbound
/// and ungated, are to fail either way.
fn check_pods<'p>(
    wl: &api::Workload,
    node: &str,
    assigned: bool,
    all: &[&Value],
    selecting: &[&'p Value],
) -> (Health, Vec<&'p Value>) {
    let stray: Vec<&Value> = selecting
        .iter()
        .copied()
        .filter(|p| {
            p.at("/spec/nodeName")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
                && phase(p) == Some("Pending")
                && !gated(p)
        })
        .collect();
    let k = key(wl);
    let progressing = all.iter().any(|p| {
        workload_of(p).as_ref() == Some(&k)
            && p.at("/spec/nodeName").and_then(Value::as_str) == Some(node)
            && p.at("/metadata/deletionTimestamp").is_none()
            && !matches!(phase(p), Some("Succeeded" | "Failed"))
    });
    if !assigned || progressing {
        return (Health::Healthy, stray);
    }
    (Health::Unhealthy, stray)
}

enum Tolerated {
    Not,
    Temporarily,
    Permanently,
}

/// Kueue's `checkTaintTolerations`: untolerated when any pod set on the
/// node does not tolerate it; temporarily when one tolerates it only for
/// `tolerationSeconds` (its pods will be evicted then).
fn toleration_of(taint: &Taint, pod_sets: &[Vec<Toleration>]) -> Tolerated {
    let mut permanent = true;
    for tolerations in pod_sets {
        if !tolerations.iter().any(|t| tolerates(t, taint)) {
            return Tolerated::Not;
        }
        if !tolerations
            .iter()
            .any(|t| t.toleration_seconds.is_none() && tolerates(t, taint))
        {
            permanent = false;
        }
    }
    if permanent {
        Tolerated::Permanently
    } else {
        Tolerated::Temporarily
    }
}

/// `corev1.Toleration.ToleratesTaint`.
fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if t.effect
        .as_deref()
        .is_some_and(|e| !e.is_empty() && e != taint.effect)
    {
        return false;
    }
    let key = t.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref() {
        Some("Exists") => true,
        None | Some("" | "Equal") => {
            t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        Some(_) => false,
    }
}

/// The tolerations each pod set with pods on the node runs with: its
/// template's, its flavors', and those admission checks added.
fn tolerations_on_node(
    wl: &api::Workload,
    node: &str,
    flavors: &BTreeMap<String, Vec<Toleration>>,
) -> Vec<Vec<Toleration>> {
    let status = wl.status.as_ref();
    let mut out = Vec::new();
    for psa in assignments(wl) {
        if !nodes_of(psa).contains(node) {
            continue;
        }
        let Some(ps) = wl
            .spec
            .pod_sets
            .iter()
            .flatten()
            .find(|p| p.name == psa.name)
        else {
            continue;
        };
        let mut tolerations: Vec<Toleration> = ps
            .template
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.clone())
            .unwrap_or_default();
        for flavor in psa.flavors.iter().flat_map(|m| m.values()) {
            tolerations.extend(flavors.get(flavor).cloned().unwrap_or_default());
        }
        let updates = status
            .and_then(|s| s.admission_checks.as_ref())
            .into_iter()
            .flatten()
            .flat_map(|c| c.pod_set_updates.iter().flatten())
            .filter(|u| u.name == psa.name);
        for u in updates {
            tolerations.extend(u.tolerations.clone().unwrap_or_default());
        }
        out.push(tolerations);
    }
    out
}

/// Marks the node failed for the Workload; a second failed node evicts it
/// instead. Returns whether it was evicted.
fn unhealthy(wl: &api::Workload, node: &str, now: &Time, out: &mut Vec<Action>) -> bool {
    let listed = unhealthy_nodes(wl);
    if listed.iter().any(|n| n == node) {
        return false;
    }
    let k = key(wl);
    if !listed.is_empty() {
        let mut all = listed;
        all.push(node.to_string());
        let message = multiple_failures_message(&all);
        out.push(Action::WorkloadStatus {
            workload: k.clone(),
            patch: eviction_patch(wl, &message, now),
        });
        out.push(Action::WorkloadEvent {
            workload: k,
            reason: format!(
                "{}DueTo{}",
                condition::EVICTED,
                eviction_reason::NODE_FAILURES
            ),
            note: message,
        });
        return true;
    }
    out.push(Action::WorkloadStatus {
        workload: k,
        patch: unhealthy_patch(wl, &[node.to_string()]),
    });
    false
}

/// The node is fine for the Workload: it leaves `unhealthyNodes`.
fn healthy(wl: &api::Workload, node: &str, out: &mut Vec<Action>) {
    let listed = unhealthy_nodes(wl);
    if !listed.iter().any(|n| n == node) {
        return;
    }
    let rest: Vec<String> = listed.into_iter().filter(|n| n != node).collect();
    out.push(Action::WorkloadStatus {
        workload: key(wl),
        patch: unhealthy_patch(wl, &rest),
    });
}

/// `status.unhealthyNodes` set to `nodes` (dropped when empty), tested
/// against the Workload's `resourceVersion`.
fn unhealthy_patch(wl: &api::Workload, nodes: &[String]) -> Value {
    let list = if nodes.is_empty() {
        Value::Null
    } else {
        nodes.iter().map(|n| json!({"name": n})).collect()
    };
    json!({
        "metadata": {"resourceVersion": wl.metadata.resource_version},
        "status": {"unhealthyNodes": list},
    })
}

/// Kueue's `Evict` for `NodeFailures`: `Evicted=True`, the eviction
/// counted in `schedulingStats`, `unhealthyNodes` cleared. The job
/// reconciler stops the job and the quota is released as for any other
/// eviction.
fn eviction_patch(wl: &api::Workload, message: &str, now: &Time) -> Value {
    let status = wl.status.as_ref();
    let mut c = Conditions::of(status.and_then(|s| s.conditions.as_ref()));
    c.set(
        condition::EVICTED,
        true,
        eviction_reason::NODE_FAILURES,
        message,
        now,
        wl.metadata.generation,
    );
    let mut evictions = status
        .and_then(|s| s.scheduling_stats.as_ref())
        .and_then(|s| s.evictions.clone())
        .unwrap_or_default();
    match evictions
        .iter_mut()
        .find(|e| e.reason == eviction_reason::NODE_FAILURES && e.underlying_cause.is_empty())
    {
        Some(e) => e.count += 1,
        None => evictions.push(api::WorkloadSchedulingStatsEviction {
            reason: eviction_reason::NODE_FAILURES.into(),
            underlying_cause: String::new(),
            count: 1,
        }),
    }
    json!({
        "metadata": {"resourceVersion": wl.metadata.resource_version},
        "status": {
            "conditions": c.0,
            "unhealthyNodes": null,
            "schedulingStats": {"evictions": evictions},
        },
    })
}

/// `status.phase: Failed` and the `TerminatedByKueue` condition added to
/// the pod's, tested against its `resourceVersion`.
fn failed_pod_patch(pod: &Value, now: &Time) -> Value {
    let mut conditions: Vec<Value> = pod
        .at("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    conditions.push(json!({
        "type": POD_CONDITION,
        "status": "True",
        "reason": POD_REASON,
        "message": POD_MESSAGE,
        "lastTransitionTime": now,
    }));
    json!({
        "metadata": {"resourceVersion": pod.at("/metadata/resourceVersion")},
        "status": {"phase": "Failed", "conditions": conditions},
    })
}

fn ready_status(node: &Value) -> Option<bool> {
    node.at("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        .map(|c| c.get("status").and_then(Value::as_str) == Some("True"))
}

fn key(wl: &api::Workload) -> Key {
    (
        wl.metadata.namespace.clone().unwrap_or_default(),
        wl.metadata.name.clone().unwrap_or_default(),
    )
}

fn pod_key(pod: &Value) -> Key {
    let s = |p: &str| {
        pod.at(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (s("/metadata/namespace"), s("/metadata/name"))
}

fn conditions(wl: &api::Workload) -> Conditions {
    Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()))
}

fn finished(wl: &api::Workload) -> bool {
    conditions(wl).is_true(condition::FINISHED)
}

fn evicted(wl: &api::Workload) -> bool {
    conditions(wl).is_true(condition::EVICTED)
}

fn unhealthy_nodes(wl: &api::Workload) -> Vec<String> {
    wl.status
        .as_ref()
        .and_then(|s| s.unhealthy_nodes.as_ref())
        .into_iter()
        .flatten()
        .map(|n| n.name.clone())
        .collect()
}

fn assignments(wl: &api::Workload) -> impl Iterator<Item = &api::PodSetAssignment> {
    wl.status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .and_then(|a| a.pod_set_assignments.as_ref())
        .into_iter()
        .flatten()
}

/// The nodes a pod set's topology assignment names: only one whose lowest
/// level is the hostname names nodes.
fn nodes_of(psa: &api::PodSetAssignment) -> BTreeSet<String> {
    let Some(t) = &psa.topology_assignment else {
        return BTreeSet::new();
    };
    if t.levels.last().map(String::as_str) != Some(HOSTNAME_LABEL) {
        return BTreeSet::new();
    }
    serde_json::to_value(&t.slices)
        .ok()
        .and_then(|s| expand(&s, t.levels.len()).ok())
        .into_iter()
        .flatten()
        .filter_map(|d| d.values.last().cloned())
        .collect()
}

/// Kueue's `TASAssignedNodeNames`.
pub fn assigned_nodes(wl: &api::Workload) -> BTreeSet<String> {
    assignments(wl).flat_map(nodes_of).collect()
}

fn annotation<'a>(pod: &'a Value, name: &str) -> Option<&'a str> {
    pod.at("/metadata/annotations")?.get(name)?.as_str()
}

/// Kueue's `IsTAS` for a pod: its pod set asked for topology, explicitly
/// or as the unconstrained default.
fn is_tas(pod: &Value) -> bool {
    [
        PODSET_REQUIRED_TOPOLOGY_ANNOTATION,
        PODSET_PREFERRED_TOPOLOGY_ANNOTATION,
        PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
        PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION,
    ]
    .iter()
    .any(|a| annotation(pod, a).is_some())
}

fn selector_host(pod: &Value) -> Option<&str> {
    pod.at("/spec/nodeSelector")?.get(HOSTNAME_LABEL)?.as_str()
}

/// The pod's Workload, from its `kueue.x-k8s.io/workload` annotation.
pub fn workload_of(pod: &Value) -> Option<Key> {
    let name = annotation(pod, WORKLOAD_ANNOTATION)?;
    let ns = pod.at("/metadata/namespace").and_then(Value::as_str)?;
    Some((ns.to_string(), name.to_string()))
}

fn phase(pod: &Value) -> Option<&str> {
    pod.at("/status/phase").and_then(Value::as_str)
}

fn gated(pod: &Value) -> bool {
    pod.at("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|gs| {
            gs.iter()
                .any(|g| g.get("name").and_then(Value::as_str) == Some(TOPOLOGY_GATE))
        })
}

/// Which nodes a pod event asks to look at (Kueue's pod handler): a pod
/// pending towards a node by hostname, or one bound to a node and
/// terminated or being deleted. Pods outside TAS ask for none.
pub fn nodes_to_check(pod: &Value) -> Option<String> {
    if !is_tas(pod) {
        return None;
    }
    let bound = pod
        .at("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    match bound {
        None => selector_host(pod).map(str::to_string),
        Some(n) => {
            let ending = pod.at("/metadata/deletionTimestamp").is_some()
                || matches!(phase(pod), Some("Succeeded" | "Failed"));
            ending.then(|| n.to_string())
        }
    }
}

/// Whether a node update matters (Kueue's update predicate): its
/// readiness or its taints changed.
pub fn node_changed(old: &Value, new: &Value) -> bool {
    ready_status(old) != ready_status(new) || old.at("/spec/taints") != new.at("/spec/taints")
}

#[cfg(test)]
mod cases;
