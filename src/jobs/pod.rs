//! Kueue's pod integration, pure: a Pod cannot be suspended, so a queued
//! one is held by a scheduling gate (see [`Gate`]) until its Workload is
//! admitted. One Workload per pod, or per pod group (pods sharing the
//! group-name label, as many as the group's total-count annotation), with
//! Kueue's names and pod sets (a group's pods grouped by role hash); the
//! patch that ungates an admitted pod with its flavor's node selector and
//! tolerations; when a pod or a group has finished. Raw JSON in, JSON or
//! patches out.

pub use super::role::role_hash;
use crate::vocabulary::pointer::At;
use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::{
    policy::{Gate, GroupRule, Policy},
    workload::{
        name_for, priority, set_priority, PodSetInfo, Priority, PriorityClasses, WorkloadError,
    },
};
use crate::vocabulary::{
    keys::{
        GROUP_FAST_ADMISSION_ANNOTATION, GROUP_SERVING_ANNOTATION, GROUP_WORKLOAD_ANNOTATION,
        JOB_UID_LABEL, MAX_EXEC_TIME_LABEL, POD_GROUP_POD_INDEX_LABEL, PREBUILT_WORKLOAD_LABEL,
        QUEUE_NAME_LABEL, RESOURCE_IN_USE_FINALIZER, RETRIABLE_IN_GROUP_ANNOTATION,
        ROLE_HASH_ANNOTATION, TOPOLOGY_GATE,
    },
    patch::PatchOp,
};

/// Kueue's pod set name for a single pod.
pub const POD_SET_NAME: &str = "main";

fn meta<'a>(obj: &'a Value, section: &str, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(section)?.get(key)?.as_str()
}

pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    meta(obj, "labels", key)
}

pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    meta(obj, "annotations", key)
}

fn name_of(obj: &Value) -> &str {
    obj.at("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The group a pod belongs to (`None`: a single pod): Kueue's
/// `GetPodGroupName`, the annotation of the same key first (gate
/// WorkloadIdentifierAnnotations, on by default), then the label.
pub fn group_name<'a>(rule: Option<&GroupRule>, pod: &'a Value) -> Option<&'a str> {
    let key = &rule?.name_label;
    annotation(pod, key)
        .filter(|g| !g.is_empty())
        .or_else(|| label(pod, key).filter(|g| !g.is_empty()))
}

/// Kueue's `isServing`: a group pod marked serving.
pub fn is_serving(rule: Option<&GroupRule>, pod: &Value) -> bool {
    group_name(rule, pod).is_some() && annotation(pod, GROUP_SERVING_ANNOTATION) == Some("true")
}

/// Kueue's `fastAdmission`.
pub fn fast_admission(pod: &Value) -> bool {
    annotation(pod, GROUP_FAST_ADMISSION_ANNOTATION) == Some("true")
}

/// Kueue's `constructGroupPodSetsFast`: the first runnable pod's role, with
/// the group's total count.
pub fn group_pod_sets_fast(pods: &[&Value], total: i64) -> Vec<RolePodSet> {
    pods.iter()
        .find(|p| is_runnable_or_succeeded(p))
        .map(|p| RolePodSet {
            name: role_of(p),
            count: total,
            template: template_of(p),
        })
        .into_iter()
        .collect()
}

/// Kueue's `groupTotalCount`, with its messages.
pub fn group_total_count(rule: &GroupRule, pod: &Value) -> Result<i64, String> {
    if group_name(Some(rule), pod).is_none() {
        return Err(format!("pod doesn't have a '{}' label", rule.name_label));
    }
    let Some(v) = annotation(pod, &rule.total_count_annotation) else {
        return Err(format!(
            "failed to extract '{}' annotation",
            rule.total_count_annotation
        ));
    };
    let n = crate::vocabulary::go::go_atoi(v)?;
    if n < 1 {
        return Err(format!(
            "incorrect annotation value '{}={v}': group total count should be greater than zero",
            rule.total_count_annotation
        ));
    }
    Ok(n)
}

/// The pod's role: its annotation when set (the webhook sets it), else
/// computed.
pub fn role_of(pod: &Value) -> String {
    annotation(pod, ROLE_HASH_ANNOTATION)
        .map(String::from)
        .unwrap_or_else(|| role_hash(pod))
}

/// Is the pod held by the gate?
pub fn is_gated(gate: &Gate, pod: &Value) -> bool {
    pod.at("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|gs| {
            gs.iter()
                .any(|g| g.get("name").and_then(Value::as_str) == Some(&gate.scheduling_gate))
        })
}

pub fn phase(pod: &Value) -> Option<&str> {
    pod.at("/status/phase").and_then(Value::as_str)
}

/// Kueue's `IsTerminated`.
pub fn is_terminated(pod: &Value) -> bool {
    matches!(phase(pod), Some("Succeeded" | "Failed"))
}

fn deleting(pod: &Value) -> bool {
    !matches!(
        pod.at("/metadata/deletionTimestamp"),
        None | Some(Value::Null)
    )
}

/// Kueue's `isPodRunnableOrSucceeded`: not failed, and not a pod being
/// deleted before it was ever placed on a node.
pub fn is_runnable_or_succeeded(pod: &Value) -> bool {
    let placed = pod
        .at("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if deleting(pod) && !placed {
        return false;
    }
    phase(pod) != Some("Failed")
}

/// The Workload's name: the prebuilt one when named, the group's name for
/// a group, else Kueue's `pod-<name>-<hash>`.
pub fn workload_name(gate: &Gate, pod: &Value) -> String {
    if let Some(n) = annotation(pod, PREBUILT_WORKLOAD_LABEL)
        .or_else(|| label(pod, PREBUILT_WORKLOAD_LABEL))
        .filter(|n| !n.is_empty())
    {
        return n.to_string();
    }
    if let Some(g) = group_name(gate.group.as_ref(), pod) {
        return g.to_string();
    }
    let uid = pod
        .at("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    name_for("Pod", "", name_of(pod), uid)
}

/// A pod set's template as Kueue records a pod's: its spec only.
fn template_of(pod: &Value) -> Value {
    json!({"spec": pod.get("spec").cloned().unwrap_or_else(|| json!({}))})
}

/// A pod's rank for the topology ungater: the label the pod webhook
/// copies from the one the group names (Kueue's pod `PodSets`), read from
/// the pod's own annotations.
fn pod_ranks() -> super::policy::Ranks {
    super::policy::Ranks {
        pod_index_label: Some(POD_GROUP_POD_INDEX_LABEL.into()),
        ..Default::default()
    }
}

/// One pod set of a group's Workload (role hash, count, template).
#[derive(Debug, Clone, PartialEq)]
pub struct RolePodSet {
    pub name: String,
    pub count: i64,
    pub template: Value,
}

/// Kueue's `constructGroupPodSets`: the runnable (or succeeded) pods by
/// role, sorted by role hash.
pub fn group_pod_sets(pods: &[&Value]) -> Vec<RolePodSet> {
    let mut by_role: BTreeMap<String, RolePodSet> = BTreeMap::new();
    for p in pods.iter().filter(|p| is_runnable_or_succeeded(p)) {
        let role = role_of(p);
        by_role
            .entry(role.clone())
            .and_modify(|ps| ps.count += 1)
            .or_insert_with(|| RolePodSet {
                name: role,
                count: 1,
                template: template_of(p),
            });
    }
    by_role.into_values().collect()
}

/// Why a group's Workload cannot be made yet, or at all (Kueue's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupProblem {
    /// Wait for more pods (Kueue's `ErrWorkloadCompose` event).
    TooFew(String),
    /// Never: the group's pods disagree.
    Inconsistent(String),
}

/// Kueue's `validatePodGroupMetadata` for a group about to get its
/// Workload: enough runnable pods, one queue and one total count.
pub fn check_group(rule: &GroupRule, pods: &[&Value]) -> Result<i64, GroupProblem> {
    let Some(first) = pods.first() else {
        return Err(GroupProblem::TooFew(String::new()));
    };
    let total = group_total_count(rule, first).map_err(GroupProblem::Inconsistent)?;
    let group = group_name(Some(rule), first).unwrap_or("");
    let runnable = pods.iter().filter(|p| is_runnable_or_succeeded(p)).count() as i64;
    if !fast_admission(first) && runnable < total {
        return Err(GroupProblem::TooFew(format!(
            "'{group}' group has fewer runnable pods than expected"
        )));
    }
    let queue = label(first, QUEUE_NAME_LABEL).unwrap_or("");
    for p in pods.iter().filter(|p| phase(p) != Some("Failed")) {
        let q = label(p, QUEUE_NAME_LABEL).unwrap_or("");
        if q != queue {
            return Err(GroupProblem::Inconsistent(format!(
                "pods '{}' and '{}' has different queue names: {queue}!={q}",
                name_of(first),
                name_of(p)
            )));
        }
        let tc = annotation(p, &rule.total_count_annotation).unwrap_or("");
        match crate::vocabulary::go::go_atoi(tc) {
            Ok(n) if n == total => {}
            Ok(n) => {
                return Err(GroupProblem::Inconsistent(format!(
                    "pods '{}' and '{}' has different '{}' values: {total}!={n}",
                    name_of(first),
                    name_of(p),
                    rule.total_count_annotation
                )))
            }
            Err(e) => {
                return Err(GroupProblem::Inconsistent(format!(
                    "failed to extract '{}' annotation from the pod '{}': {e}",
                    rule.total_count_annotation,
                    name_of(p)
                )))
            }
        }
    }
    Ok(total)
}

/// Who owns a pod Workload, as metadata: a single pod is its controller
/// (and its UID the `kueue.x-k8s.io/job-uid` label); a group's pods are
/// all plain owners.
pub fn ownership(pods: &[&Value], group: bool) -> Value {
    let owner = |p: &Value, controller: bool| {
        let mut o = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "name": name_of(p),
            "uid": p.at("/metadata/uid").cloned().unwrap_or(Value::Null),
        });
        if controller {
            o["controller"] = json!(true);
            o["blockOwnerDeletion"] = json!(true);
        }
        o
    };
    if group {
        let refs: Vec<Value> = pods.iter().map(|p| owner(p, false)).collect();
        return json!({"ownerReferences": refs});
    }
    let Some(first) = pods.first() else {
        return json!({});
    };
    let mut metadata = json!({"ownerReferences": [owner(first, true)]});
    if let Some(uid) = first.at("/metadata/uid").and_then(Value::as_str) {
        metadata["labels"] = json!({JOB_UID_LABEL: uid});
    }
    metadata
}

/// The Workload of a single pod (`pods` of one) or of a group: owned by
/// its pods (a single pod as controller, as jobframework's
/// `ConstructWorkload`; a group's pods each as plain owners, as
/// `NewGroupWorkload`), held by Kueue's `resource-in-use` finalizer.
pub fn workload_for(
    policy: &Policy,
    gate: &Gate,
    pods: &[&Value],
    classes: &PriorityClasses,
) -> Result<Value, WorkloadError> {
    let Some(first) = pods.first().copied() else {
        return Err(WorkloadError::Missing("metadata.name"));
    };
    let namespace = first
        .at("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(WorkloadError::Missing("metadata.namespace"))?;
    let group = group_name(gate.group.as_ref(), first).is_some();
    let prio: Priority = priority(policy, first, classes)?;
    let pod_sets: Vec<Value> = if group {
        let fast = match gate.group.as_ref().filter(|_| fast_admission(first)) {
            Some(rule) => Some(
                group_total_count(rule, first)
                    .map_err(|_| WorkloadError::Missing("metadata.annotations"))?,
            ),
            None => None,
        };
        match fast {
            Some(total) => group_pod_sets_fast(pods, total),
            None => group_pod_sets(pods),
        }
        .into_iter()
        .map(|ps| {
            let mut v = json!({"name": ps.name, "count": ps.count, "template": ps.template});
            let member = pods
                .iter()
                .find(|p| role_of(p) == ps.name)
                .copied()
                .unwrap_or(first);
            if let Some(tr) = super::workload::topology_request(member, &pod_ranks()) {
                v["topologyRequest"] = tr;
            }
            v
        })
        .collect()
    } else {
        let mut v = json!({"name": POD_SET_NAME, "count": 1, "template": template_of(first)});
        if let Some(tr) = super::workload::topology_request(first, &pod_ranks()) {
            v["topologyRequest"] = tr;
        }
        vec![v]
    };
    let mut metadata = json!({
        "name": workload_name(gate, first),
        "namespace": namespace,
        "finalizers": [RESOURCE_IN_USE_FINALIZER],
    });
    if let (Value::Object(m), Value::Object(owners)) = (&mut metadata, ownership(pods, group)) {
        m.extend(owners);
    }
    if group {
        metadata["annotations"] = json!({GROUP_WORKLOAD_ANNOTATION: "true"});
    }
    let mut spec = json!({
        "queueName": label(first, QUEUE_NAME_LABEL).unwrap_or(""),
        "podSets": pod_sets,
        "active": true,
    });
    set_priority(&mut spec, &prio);
    if let Some(secs) = label(first, MAX_EXEC_TIME_LABEL).and_then(|s| s.parse::<i32>().ok()) {
        spec["maximumExecutionTimeSeconds"] = json!(secs);
    }
    Ok(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": metadata,
        "spec": spec,
    }))
}

/// The pod's scheduling gates other than Kueue's admission and topology
/// gates: what stays once Kueue lets the pod go.
pub fn other_gates(gate: &Gate, pod: &Value) -> Vec<Value> {
    pod.at("/spec/schedulingGates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|g| {
            let n = g.get("name").and_then(Value::as_str);
            n != Some(gate.scheduling_gate.as_str()) && n != Some(TOPOLOGY_GATE)
        })
        .cloned()
        .collect()
}

/// The patch that starts an admitted, gated pod (Kueue's `prepare`): its
/// pod set's labels, node selector and tolerations merged in (a different
/// value already there is a conflict, in Kueue's words), then the gate
/// removed, with the topology gate unless the pod set was placed by
/// topology. The first operation tests the pod's
/// `resourceVersion`.
pub fn ungate_patch(
    gate: &Gate,
    pod: &Value,
    info: &PodSetInfo,
) -> Result<Vec<PatchOp>, WorkloadError> {
    let mut ops = Vec::new();
    if let Some(rv @ Value::String(_)) = pod.at("/metadata/resourceVersion") {
        ops.push(PatchOp {
            op: "test",
            path: "/metadata/resourceVersion".into(),
            value: rv.clone(),
        });
    }
    merged_map(pod, "/metadata/labels", "labels", &info.labels, &mut ops)?;
    // Admission checks' podSetUpdates may carry annotations too.
    merged_map(
        pod,
        "/metadata/annotations",
        "annotations",
        &info.annotations,
        &mut ops,
    )?;
    merged_map(
        pod,
        "/spec/nodeSelector",
        "nodeSelector",
        &info.node_selector,
        &mut ops,
    )?;
    if let Some(tolerations) =
        super::workload::with_tolerations(pod.at("/spec/tolerations"), &info.tolerations)
    {
        ops.push(PatchOp {
            op: "add",
            path: "/spec/tolerations".into(),
            value: Value::Array(tolerations),
        });
    }
    // The topology gate stays when the pod set was placed by topology
    // (the ungater releases it), as any gate the admission adds.
    let others = Value::Array(other_gates(gate, pod));
    let gates = super::workload::with_gates(Some(&others), &info.scheduling_gates)
        .unwrap_or_else(|| others.as_array().cloned().unwrap_or_default());
    if gates.is_empty() {
        ops.push(PatchOp {
            op: "remove",
            path: "/spec/schedulingGates".into(),
            value: Value::Null,
        });
    } else {
        ops.push(PatchOp {
            op: "add",
            path: "/spec/schedulingGates".into(),
            value: Value::Array(gates),
        });
    }
    Ok(ops)
}

fn merged_map(
    pod: &Value,
    at: &str,
    what: &'static str,
    add: &BTreeMap<String, String>,
    ops: &mut Vec<PatchOp>,
) -> Result<(), WorkloadError> {
    let missing = super::workload::missing_entries(pod.at(at), what, add)?;
    if !missing.is_empty() {
        let mut out: Map<String, Value> = pod
            .at(at)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, v) in missing {
            out.insert(k.clone(), Value::String(v.clone()));
        }
        ops.push(PatchOp {
            op: "add",
            path: at.into(),
            value: Value::Object(out),
        });
    }
    Ok(())
}

/// The patch that lets go of the pod's finalizer (keeping everyone
/// else's), tested against its `resourceVersion`; empty when it holds none.
pub fn release_patch(gate: &Gate, pod: &Value) -> Vec<PatchOp> {
    let Some(fs) = pod.at("/metadata/finalizers").and_then(Value::as_array) else {
        return Vec::new();
    };
    if !fs.iter().any(|f| f.as_str() == Some(&gate.finalizer)) {
        return Vec::new();
    }
    let rest: Vec<Value> = fs
        .iter()
        .filter(|f| f.as_str() != Some(&gate.finalizer))
        .cloned()
        .collect();
    let mut ops = Vec::new();
    if let Some(rv @ Value::String(_)) = pod.at("/metadata/resourceVersion") {
        ops.push(PatchOp {
            op: "test",
            path: "/metadata/resourceVersion".into(),
            value: rv.clone(),
        });
    }
    ops.push(PatchOp {
        op: "add",
        path: "/metadata/finalizers".into(),
        value: Value::Array(rest),
    });
    ops
}

/// How a pod or group has ended: `Some((succeeded, message))` once it has
/// (Kueue's `Finished`: a single pod when terminated, with its status
/// message; a group when every pod succeeded, or when none is active and
/// the group is not retriable).
pub fn finished(gate: &Gate, pods: &[&Value]) -> Option<(bool, String)> {
    let first = pods.first()?;
    if is_serving(gate.group.as_ref(), first) {
        return None;
    }
    let Some(rule) = gate
        .group
        .as_ref()
        .filter(|r| group_name(Some(r), first).is_some())
    else {
        if !is_terminated(first) {
            return None;
        }
        let message = first
            .at("/status/message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        return Some((phase(first) == Some("Succeeded"), message));
    };
    let total = group_total_count(rule, first).ok()?;
    let succeeded = pods
        .iter()
        .filter(|p| phase(p) == Some("Succeeded"))
        .count() as i64;
    let active = pods.iter().any(|p| !is_terminated(p));
    let unretriable = pods
        .iter()
        .any(|p| annotation(p, RETRIABLE_IN_GROUP_ANNOTATION) == Some("false"));
    (succeeded == total || (!active && unretriable))
        .then(|| (true, format!("Pods succeeded: {succeeded}/{total}.")))
}

/// A group's pods against its Workload's pod sets, as Kueue's pod group
/// reconciler sorts them (`FindMatchingWorkloads`): per role, runnable
/// pods beyond the pod set's count are excess; the role keeps as many
/// pods as its count, runnable ones first, and the failed pods (or pods
/// going before they were placed) beyond that are replaced; the runnable
/// pods the counts still miss are absent. Indices into the pods given.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Roster {
    /// What the group is now: the pods neither excess nor replaced (a pod
    /// of no pod set's role is in none of the lists).
    pub kept: Vec<usize>,
    /// To be let go and deleted (Kueue's `removeExcessPods`).
    pub excess: Vec<usize>,
    /// To be let go (Kueue's `finalizePods` of replaced inactive pods).
    pub replaced: Vec<usize>,
    /// Kueue's `absentPods`: with fast admission, 1 for a pod set that
    /// has no runnable pod at all.
    pub absent: i64,
}

/// See [`Roster`]: `pod_sets` the Workload's (name, count), `fast` the
/// reconciled pod's fast-admission switch, `now` for the last time a pod
/// that is still failing was active.
pub fn roster(
    gate: &Gate,
    pod_sets: &[(&str, i64)],
    pods: &[&Value],
    fast: bool,
    now: k8s_openapi::jiff::Timestamp,
) -> Roster {
    let holds = |p: &Value| {
        p.at("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|fs| fs.iter().any(|f| f.as_str() == Some(&gate.finalizer)))
    };
    let created = |p: &Value| time_at(p, "/metadata/creationTimestamp");
    // A pod without the role-hash annotation has its hash computed: once.
    let roles: Vec<String> = pods.iter().map(|p| role_of(p)).collect();
    let mut r = Roster::default();
    for &(name, count) in pod_sets {
        let (mut active, mut inactive): (Vec<usize>, Vec<usize>) = (0..pods.len())
            .filter(|&i| roles[i] == name)
            .partition(|&i| is_runnable_or_succeeded(pods[i]));
        let n_active = active.len() as i64;
        r.absent += if fast {
            i64::from(count > 0 && n_active == 0)
        } else {
            (count - n_active).max(0)
        };
        // Kept first: holding the finalizer, ungated, older.
        active.sort_by_key(|&i| (!holds(pods[i]), is_gated(gate, pods[i]), created(pods[i])));
        let excess = (n_active - count).max(0) as usize;
        r.excess.extend(active.split_off(active.len() - excess));
        r.kept.extend(active);
        // Kept first: holding the finalizer, active last, older.
        inactive.sort_by_key(|&i| {
            (
                !holds(pods[i]),
                std::cmp::Reverse(last_active(pods[i], now)),
                created(pods[i]),
            )
        });
        let n_inactive = inactive.len() as i64;
        let replaced = n_inactive.min(n_inactive + n_active - count).max(0) as usize;
        r.replaced
            .extend(inactive.split_off(inactive.len() - replaced));
        r.kept.extend(inactive);
    }
    r.kept.sort_unstable();
    r
}

fn time_at(p: &Value, at: &str) -> Option<k8s_openapi::jiff::Timestamp> {
    p.at(at)?.as_str()?.parse().ok()
}

/// Kueue's `lastActiveTime`: when the pod was declared failed
/// (`ContainersReady=False`, reason `PodFailed`) or its deletion, the
/// earlier; `now` for either not known.
fn last_active(p: &Value, now: k8s_openapi::jiff::Timestamp) -> k8s_openapi::jiff::Timestamp {
    let failed = p
        .at("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("ContainersReady"))
        })
        .filter(|c| {
            c.get("status").and_then(Value::as_str) == Some("False")
                && c.get("reason").and_then(Value::as_str) == Some("PodFailed")
        })
        .and_then(|c| time_at(c, "/lastTransitionTime"))
        .unwrap_or(now);
    let deleted = time_at(p, "/metadata/deletionTimestamp").unwrap_or(now);
    failed.min(deleted)
}

/// Is a pod still running (Kueue's `IsActive`: Running, and not stuck
/// terminating)? Time is not read: a deleting pod counts as inactive
/// (Kueue's FastQuotaReleaseInPodIntegration).
pub fn is_active(pod: &Value) -> bool {
    phase(pod) == Some("Running") && !deleting(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::{policy::PolicySet, workload::apply};

    fn policy() -> std::sync::Arc<Policy> {
        PolicySet::embedded()
            .unwrap()
            .find("", "v1", "Pod")
            .unwrap()
            .clone()
    }

    fn gate() -> Gate {
        policy().gate.clone().unwrap()
    }

    fn pod(name: &str, cpu: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                         "resourceVersion": "7",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq", "app": "a"},
                         "finalizers": ["other", "kueue.x-k8s.io/managed"]},
            "spec": {"containers": [{"name": "c", "image": "i",
                                     "resources": {"requests": {"cpu": cpu}}}],
                     "priority": 0,
                     "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
        })
    }

    fn grouped(name: &str, cpu: &str, group: &str, total: &str) -> Value {
        let mut p = pod(name, cpu);
        p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = json!(group);
        p["metadata"]["annotations"] = json!({"kueue.x-k8s.io/pod-group-total-count": total});
        p
    }

    /// Kueue v0.19.2 pkg/util/pod: the hash is over Go's JSON of
    /// `{"spec": shape}`; for this spec the document is fixed, so is its
    /// sha256 (`printf '%s' "$doc" | sha256sum | cut -c1-8`).
    #[test]
    fn the_role_hash_is_over_kueues_shape() {
        let p = pod("a", "1");
        let doc = r#"{"spec":{"affinity":null,"containers":[{"ports":null,"resources":{"requests":{"cpu":"1"}}}],"initContainers":null,"nodeSelector":null,"overhead":null,"priority":0,"resourceClaims":null,"runtimeClassName":null,"tolerations":null,"topologySpreadConstraints":null}}"#;
        let digest = ring::digest::digest(&ring::digest::SHA256, doc.as_bytes());
        let want: String = digest.as_ref()[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(role_hash(&p), want);
        // Only the shape counts: names, images, labels do not.
        let mut q = pod("b", "1");
        q["spec"]["containers"][0]["image"] = json!("other");
        assert_eq!(role_hash(&q), want);
        assert_ne!(role_hash(&pod("c", "2")), want);
        // Ports and tolerations in Go's field order.
        let mut t = pod("t", "1");
        t["spec"]["tolerations"] =
            json!([{"effect": "NoSchedule", "key": "k", "operator": "Exists"}]);
        t["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}]);
        let doc = r#"{"spec":{"affinity":null,"containers":[{"ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"requests":{"cpu":"1"}}}],"initContainers":null,"nodeSelector":null,"overhead":null,"priority":0,"resourceClaims":null,"runtimeClassName":null,"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule"}],"topologySpreadConstraints":null}}"#;
        let digest = ring::digest::digest(&ring::digest::SHA256, doc.as_bytes());
        let want: String = digest.as_ref()[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(role_hash(&t), want);
        // The annotation, when set, is the role.
        let mut r = pod("r", "1");
        r["metadata"]["annotations"] = json!({ROLE_HASH_ANNOTATION: "abcd1234"});
        assert_eq!(role_of(&r), "abcd1234");
    }

    #[test]
    fn a_single_pods_workload_follows_kueue() {
        let p = pod("sample", "1");
        let wl = workload_for(&policy(), &gate(), &[&p], &PriorityClasses::default()).unwrap();
        // GetWorkloadNameForPod: pod-<name>-<sha1("Pod\n\nsample\nuid-sample")[:5]>.
        assert_eq!(
            wl["metadata"]["name"],
            name_for("Pod", "", "sample", "uid-sample")
        );
        assert!(wl["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("pod-sample-"));
        assert_eq!(wl["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(wl["metadata"]["ownerReferences"][0]["kind"], "Pod");
        assert_eq!(wl["spec"]["queueName"], "lq");
        assert_eq!(wl["spec"]["podSets"][0]["name"], "main");
        assert_eq!(wl["spec"]["podSets"][0]["count"], 1);
        // The template is the pod's spec, no metadata.
        assert_eq!(
            wl["spec"]["podSets"][0]["template"],
            json!({"spec": p["spec"]})
        );
        assert_eq!(wl["metadata"]["labels"][JOB_UID_LABEL], "uid-sample");
    }

    #[test]
    fn a_group_is_one_workload_with_a_pod_set_per_role() {
        let g = gate();
        let rule = g.group.clone().unwrap();
        let a = grouped("a", "1", "team", "3");
        let b = grouped("b", "1", "team", "3");
        let c = grouped("c", "2", "team", "3");
        assert_eq!(
            check_group(&rule, &[&a, &b]),
            Err(GroupProblem::TooFew(
                "'team' group has fewer runnable pods than expected".into()
            ))
        );
        assert_eq!(check_group(&rule, &[&a, &b, &c]), Ok(3));
        let wl = workload_for(&policy(), &g, &[&a, &b, &c], &PriorityClasses::default()).unwrap();
        assert_eq!(wl["metadata"]["name"], "team");
        assert_eq!(
            wl["metadata"]["annotations"][GROUP_WORKLOAD_ANNOTATION],
            "true"
        );
        assert_eq!(
            wl["metadata"]["ownerReferences"].as_array().unwrap().len(),
            3
        );
        assert!(wl["metadata"]["ownerReferences"][0]["controller"].is_null());
        let sets = wl["spec"]["podSets"].as_array().unwrap();
        let mut want = vec![(role_hash(&a), 2), (role_hash(&c), 1)];
        want.sort();
        let got: Vec<(String, i64)> = sets
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap().into(),
                    s["count"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want);
        // Kueue's words for pods that disagree.
        let mut d = grouped("d", "1", "team", "3");
        d["metadata"]["labels"][QUEUE_NAME_LABEL] = json!("other");
        assert_eq!(
            check_group(&rule, &[&a, &b, &d]),
            Err(GroupProblem::Inconsistent(
                "pods 'a' and 'd' has different queue names: lq!=other".into()
            ))
        );
        let e = grouped("e", "1", "team", "4");
        assert_eq!(
            check_group(&rule, &[&a, &b, &e]),
            Err(GroupProblem::Inconsistent(
                "pods 'a' and 'e' has different 'kueue.x-k8s.io/pod-group-total-count' values: 3!=4"
                    .into()
            ))
        );
        // A failed pod is not runnable.
        let mut f = grouped("f", "1", "team", "3");
        f["status"] = json!({"phase": "Failed"});
        assert!(matches!(
            check_group(&rule, &[&a, &b, &f]),
            Err(GroupProblem::TooFew(_))
        ));
    }

    fn info() -> PodSetInfo {
        PodSetInfo {
            name: "main".into(),
            count: None,
            annotations: Default::default(),
            labels: [("kueue.x-k8s.io/podset".to_string(), "main".to_string())].into(),
            node_selector: [("zone".to_string(), "a".to_string())].into(),
            tolerations: vec![json!({"key": "spot", "operator": "Exists"})],
            scheduling_gates: Vec::new(),
        }
    }

    #[test]
    fn ungating_injects_the_flavor_and_removes_only_kueues_gates() {
        let g = gate();
        let mut p = pod("p", "1");
        p["spec"]["schedulingGates"] = json!([{"name": "kueue.x-k8s.io/admission"},
                                              {"name": "someone-else"}]);
        let ops = ungate_patch(&g, &p, &info()).unwrap();
        assert_eq!(ops[0].op, "test");
        let out = apply(&p, &ops).unwrap();
        assert_eq!(out["spec"]["nodeSelector"], json!({"zone": "a"}));
        assert_eq!(out["spec"]["tolerations"][0]["key"], "spot");
        assert_eq!(out["metadata"]["labels"]["app"], "a");
        assert_eq!(out["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main");
        assert_eq!(
            out["spec"]["schedulingGates"],
            json!([{"name": "someone-else"}])
        );
        assert!(!is_gated(&g, &out));
        let only = apply(
            &pod("q", "1"),
            &ungate_patch(&g, &pod("q", "1"), &info()).unwrap(),
        )
        .unwrap();
        assert!(only["spec"].get("schedulingGates").is_none());
        let mut clash = pod("x", "1");
        clash["spec"]["nodeSelector"] = json!({"zone": "b"});
        assert_eq!(
            ungate_patch(&g, &clash, &info()).unwrap_err().to_string(),
            "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=zone, value1=b, value2=a"
        );
    }

    #[test]
    fn the_finalizer_goes_alone() {
        let g = gate();
        let p = pod("p", "1");
        let out = apply(&p, &release_patch(&g, &p)).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["other"]));
        assert!(release_patch(&g, &out).is_empty());
    }

    #[test]
    fn finished_as_kueue_says() {
        let g = gate();
        let mut p = pod("p", "1");
        assert_eq!(finished(&g, &[&p]), None);
        p["status"] = json!({"phase": "Failed", "message": "oom"});
        assert_eq!(finished(&g, &[&p]), Some((false, "oom".into())));
        let mut a = grouped("a", "1", "g", "2");
        let mut b = grouped("b", "1", "g", "2");
        a["status"] = json!({"phase": "Succeeded"});
        assert_eq!(finished(&g, &[&a, &b]), None);
        b["status"] = json!({"phase": "Succeeded"});
        assert_eq!(
            finished(&g, &[&a, &b]),
            Some((true, "Pods succeeded: 2/2.".into()))
        );
        b["status"] = json!({"phase": "Failed"});
        assert_eq!(finished(&g, &[&a, &b]), None);
        b["metadata"]["annotations"][RETRIABLE_IN_GROUP_ANNOTATION] = json!("false");
        assert_eq!(
            finished(&g, &[&a, &b]),
            Some((true, "Pods succeeded: 1/2.".into()))
        );
    }

    /// Kueue v0.19.2 `pod_controller_test.go` "the failed pods are
    /// finalized in order" and "no unnecessary additional failed pods are
    /// finalized": a role keeps as many pods as its count, runnable ones
    /// first; of the failed pods beyond, those without the finalizer,
    /// then the ones active longest ago, are let go.
    #[test]
    fn the_roster_lets_go_of_the_failed_pods_replaced_oldest_first() {
        let gate = PolicySet::embedded()
            .unwrap()
            .find("", "v1", "Pod")
            .unwrap()
            .gate
            .clone()
            .unwrap();
        let p = |name: &str, phase: &str, failed_at: Option<&str>| {
            let mut v = json!({"metadata": {"name": name, "finalizers": ["kueue.x-k8s.io/managed"],
                    "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": phase}});
            if let Some(t) = failed_at {
                v["status"]["conditions"] = json!([{"type": "ContainersReady", "status": "False",
                    "reason": "PodFailed", "lastTransitionTime": t}]);
            }
            v
        };
        let pods = [
            p("active", "Running", None),
            p("failed-late", "Failed", Some("2026-01-01T00:05:00Z")),
            p("failed-early", "Failed", Some("2026-01-01T00:01:00Z")),
            p("replacement", "Running", None),
            p("failed-mid", "Failed", Some("2026-01-01T00:03:00Z")),
        ];
        let refs: Vec<&Value> = pods.iter().collect();
        let role = role_of(&pods[0]);
        let now: k8s_openapi::jiff::Timestamp = "2026-01-01T01:00:00Z".parse().unwrap();
        let sorted = |mut v: Vec<usize>| {
            v.sort_unstable();
            v
        };
        // Three to run, two running: three pods kept, so two of the failed
        // ones are let go, those active longest ago; one pod is missing.
        let r = roster(&gate, &[(role.as_str(), 3)], &refs, false, now);
        assert_eq!(sorted(r.replaced.clone()), [2, 4]);
        assert_eq!(r.absent, 1);
        assert_eq!(r.kept, [0, 1, 3]);
        assert!(r.excess.is_empty());
        // A pod without the finalizer goes before any holding it.
        let mut let_go = pods.clone();
        let_go[1]["metadata"]["finalizers"] = json!([]);
        let refs: Vec<&Value> = let_go.iter().collect();
        let r = roster(&gate, &[(role.as_str(), 3)], &refs, false, now);
        assert_eq!(sorted(r.replaced), [1, 2]);
        // Two to run: every failed pod is replaced.
        let refs: Vec<&Value> = pods.iter().collect();
        let r = roster(&gate, &[(role.as_str(), 2)], &refs, false, now);
        assert_eq!(sorted(r.replaced), [1, 2, 4]);
        assert_eq!(r.absent, 0);
        // Fast admission: absent only when no pod of the role runs.
        let r = roster(&gate, &[(role.as_str(), 3)], &refs, true, now);
        assert_eq!(r.absent, 0);
        let r = roster(&gate, &[(role.as_str(), 3)], &refs[1..3], true, now);
        assert_eq!(r.absent, 1);
    }
}
