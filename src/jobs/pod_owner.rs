//! Kinds queued through their pods as one pod group (a policy with
//! `podOwner.group`: Kueue's StatefulSet integration), pure: the group's
//! Workload made from the owner (one pod set `main`, count = replicas,
//! Kueue's name for the owner), the marks a pod of the owner gets to join
//! that group (Kueue's `statefulset_pod_reconciler` `setDefault`), and the
//! rollout rule that lets an old-revision pod go (`UngateAndFinalizePod`).
//! Raw JSON in, JSON or patches out.

use crate::vocabulary::pointer::At;
use serde_json::{json, Map, Value};

use super::{
    pod::{annotation, group_name, label, POD_SET_NAME},
    policy::{Gate, OwnerGroup, PodOwner, Policy, ReplicaGroups},
    workload::{name_for, priority_of, set_priority, PriorityClasses, WorkloadError},
};
use crate::api::kueue::v1beta2::MULTIKUEUE_ORIGIN_LABEL;
use crate::vocabulary::{
    keys::{
        self, COMPONENT_WORKLOAD_INDEX_ANNOTATION, GROUP_FAST_ADMISSION_ANNOTATION,
        GROUP_SERVING_ANNOTATION, GROUP_WORKLOAD_ANNOTATION, JOB_OWNER_GVK_ANNOTATION,
        JOB_OWNER_NAME_ANNOTATION, JOB_UID_LABEL, MULTIKUEUE_ORIGIN_UID_ANNOTATION,
        POD_INDEX_LABEL_ANNOTATION, PREBUILT_WORKLOAD_LABEL, PRIORITY_CLASS_LABEL,
        QUEUE_NAME_LABEL, RESOURCE_IN_USE_FINALIZER, ROLE_HASH_ANNOTATION,
        SUSPENDED_BY_PARENT_ANNOTATION,
    },
    patch::PatchOp,
};

/// The label of a pod's controller revision (set by the StatefulSet
/// controller).
pub const REVISION_LABEL: &str = "controller-revision-hash";

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.at(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The owner's group size (absent: 1).
pub fn replicas(group: &OwnerGroup, obj: &Value) -> i64 {
    group
        .replicas
        .resolve(obj)
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// Does the owner's template carry this integration's parent mark?
pub fn marked(policy: &Policy, owner: &PodOwner, obj: &Value) -> bool {
    owner
        .template
        .resolve(obj)
        .and_then(|t| t.at("/metadata/annotations"))
        .and_then(|a| a.get(SUSPENDED_BY_PARENT_ANNOTATION))
        .and_then(Value::as_str)
        == Some(policy.name.as_str())
}

/// The MultiKueue origin of an owner a manager copied here (its origin
/// label).
pub fn multikueue_origin(obj: &Value) -> Option<&str> {
    obj.at("/metadata/labels")
        .and_then(|l| l.get(MULTIKUEUE_ORIGIN_LABEL))
        .and_then(Value::as_str)
}

/// Is the owner a MultiKueue manager's copy? Its Workloads are the
/// manager's copies, never made here.
pub fn is_multikueue_copy(obj: &Value) -> bool {
    multikueue_origin(obj).is_some()
}

/// Kueue's `GetOwnerUID`: the UID its Workloads' names are made from — on
/// a MultiKueue worker the manager's object's (the origin-uid annotation),
/// so the copies the manager sends carry the names this side looks for.
pub fn owner_uid(obj: &Value) -> &str {
    let origin = obj
        .at("/metadata/annotations")
        .and_then(|a| a.get(MULTIKUEUE_ORIGIN_UID_ANNOTATION))
        .and_then(Value::as_str);
    match origin {
        Some(uid) if is_multikueue_copy(obj) => uid,
        _ => str_at(obj, "/metadata/uid"),
    }
}

/// Kueue's `GetWorkloadNameForOwnerWithGVK`.
pub fn workload_name(policy: &Policy, obj: &Value) -> String {
    let t = &policy.target;
    name_for(
        &t.kind,
        &t.group,
        str_at(obj, "/metadata/name"),
        owner_uid(obj),
    )
}

/// Kueue's legacy name of the owner's Workload (no UID in it), still
/// followed in v0.19.2 when no Workload has the current name: Workloads
/// made by a Kueue before the UID was part of the name.
pub fn legacy_workload_name(policy: &Policy, obj: &Value) -> String {
    let t = &policy.target;
    name_for(&t.kind, &t.group, str_at(obj, "/metadata/name"), "")
}

/// The owner's label selector as `key=value,…` (its `matchLabels`; Kueue
/// lists the group's pods by name, the StatefulSet's selector finds the
/// same ones).
pub fn selector(group: &OwnerGroup, obj: &Value) -> Option<String> {
    let m = group
        .selector
        .resolve(obj)?
        .get("matchLabels")?
        .as_object()?;
    let parts: Vec<String> = m
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
        .collect();
    (!parts.is_empty()).then(|| parts.join(","))
}

/// Kueue's `constructWorkload` for a StatefulSet: one pod set `main` of
/// `replicas` pods with the template's spec, owned (not controlled) by the
/// owner, marked a group Workload with the owner's kind and name.
pub fn workload_for(
    policy: &Policy,
    owner: &PodOwner,
    obj: &Value,
    classes: &PriorityClasses,
) -> Result<Value, WorkloadError> {
    let group = owner.group.as_ref().ok_or(WorkloadError::Missing("spec"))?;
    let template = owner.template.resolve(obj).unwrap_or(&Value::Null);
    let prio = priority_of(obj, &[template], classes)?;
    let mut spec = json!({
        "queueName": label(obj, QUEUE_NAME_LABEL).unwrap_or(""),
        "podSets": [{
            "name": POD_SET_NAME,
            "count": replicas(group, obj),
            "template": {"spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))},
        }],
        "active": true,
    });
    set_priority(&mut spec, &prio);
    owned_workload(policy, obj, workload_name(policy, obj), spec, None)
}

/// A group Workload of the owner `obj` (`is-group-workload`, the owner's
/// kind and name, and a replica group's index when there is one), owned
/// (not controlled) by it and kept by the resource-in-use finalizer.
fn owned_workload(
    policy: &Policy,
    obj: &Value,
    wl_name: String,
    spec: Value,
    index: Option<i64>,
) -> Result<Value, WorkloadError> {
    let namespace = obj
        .at("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(WorkloadError::Missing("metadata.namespace"))?;
    let t = &policy.target;
    let uid = str_at(obj, "/metadata/uid");
    let name = str_at(obj, "/metadata/name");
    let mut annotations = json!({
        GROUP_WORKLOAD_ANNOTATION: "true",
        JOB_OWNER_GVK_ANNOTATION: t.to_string(),
        JOB_OWNER_NAME_ANNOTATION: name,
    });
    if let Some(i) = index {
        annotations[COMPONENT_WORKLOAD_INDEX_ANNOTATION] = json!(i.to_string());
    }
    Ok(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": wl_name,
            "namespace": namespace,
            "labels": {JOB_UID_LABEL: uid},
            "annotations": annotations,
            "finalizers": [RESOURCE_IN_USE_FINALIZER],
            "ownerReferences": [{
                "apiVersion": t.api_version(),
                "kind": t.kind,
                "name": name,
                "uid": uid,
            }],
        },
        "spec": spec,
    }))
}

/// Kueue's `setDefault` for a pod of the owner: the patch that makes it a
/// member of the owner's group (managed, queued, named into the prebuilt
/// Workload, total count = replicas, serving and fast admission as the
/// policy says, role `main`); for a pod already in the group, only the
/// queue name kept in step. `wl_name` is the Workload the owner follows
/// (its own name, or the legacy one). Empty when nothing changes, or when
/// the owner is not queued (`manage_all`: manageJobsWithoutQueueName).
pub fn member_patch(
    gate: &Gate,
    owner: &PodOwner,
    obj: &Value,
    pod: &Value,
    wl_name: &str,
    manage_all: bool,
) -> Vec<PatchOp> {
    let Some(group) = &owner.group else {
        return Vec::new();
    };
    let queue = label(obj, QUEUE_NAME_LABEL).filter(|q| !q.is_empty());
    let mut labels = BTreeEntries::of(pod, "labels");
    let mut annotations = BTreeEntries::of(pod, "annotations");
    if group_name(gate.group.as_ref(), pod) == Some(wl_name) {
        if let Some(q) = queue {
            labels.set(QUEUE_NAME_LABEL, q);
        }
    } else {
        if queue.is_none() && !manage_all {
            return Vec::new();
        }
        labels.set(&gate.managed_label, keys::MANAGED_VALUE);
        if let Some(q) = queue {
            labels.set(QUEUE_NAME_LABEL, q);
        }
        if let Some(p) = label(obj, PRIORITY_CLASS_LABEL).filter(|p| !p.is_empty()) {
            labels.set(PRIORITY_CLASS_LABEL, p);
        }
        annotations.set(PREBUILT_WORKLOAD_LABEL, wl_name);
        if let Some(rule) = &gate.group {
            annotations.set(&rule.name_label, wl_name);
            annotations.set(
                &rule.total_count_annotation,
                &replicas(group, obj).to_string(),
            );
        }
        if group.fast_admission {
            annotations.set(GROUP_FAST_ADMISSION_ANNOTATION, "true");
        }
        if group.serving {
            annotations.set(GROUP_SERVING_ANNOTATION, "true");
        }
        if let Some(l) = &group.pod_index_label {
            annotations.set(POD_INDEX_LABEL_ANNOTATION, l);
        }
        annotations.set(ROLE_HASH_ANNOTATION, POD_SET_NAME);
    }
    marking_ops(pod, labels, annotations)
}

/// Kueue's `shouldUngatePod`: during a rollout, a pod of the current
/// (old) revision is let go of its gate (it is being replaced).
pub fn old_revision(obj: &Value, pod: &Value) -> bool {
    let current = str_at(obj, "/status/currentRevision");
    let update = str_at(obj, "/status/updateRevision");
    current != update && label(pod, REVISION_LABEL) == Some(current)
}

/// Is the pod one of the owner's, created from a marked template?
pub fn from_owner(policy: &Policy, pod: &Value) -> bool {
    annotation(pod, SUSPENDED_BY_PARENT_ANNOTATION) == Some(policy.name.as_str())
}

fn int_or(ptr: &crate::vocabulary::pointer::Pointer, obj: &Value, default: i64) -> i64 {
    ptr.resolve(obj).and_then(Value::as_i64).unwrap_or(default)
}

/// The number of replica groups (absent: 1, as the LWS API defaults it).
pub fn group_count(groups: &ReplicaGroups, obj: &Value) -> i64 {
    int_or(&groups.replicas, obj, 1)
}

/// The pods per group (absent: 1).
pub fn group_size(groups: &ReplicaGroups, obj: &Value) -> i64 {
    int_or(&groups.size, obj, 1)
}

/// The leader's template, when the object has one.
pub fn leader_template<'a>(groups: &ReplicaGroups, obj: &'a Value) -> Option<&'a Value> {
    groups
        .leader
        .as_ref()?
        .template
        .resolve(obj)
        .filter(|t| !t.is_null())
}

/// Kueue's `GetWorkloadName` for a LeaderWorkerSet: the owner's name and
/// the group index, hashed with the owner's kind, group and uid
/// (`leaderworkerset-<name>-<index>-<hash>`).
pub fn group_workload_name(policy: &Policy, obj: &Value, index: i64) -> String {
    let t = &policy.target;
    name_for(
        &t.kind,
        &t.group,
        &format!("{}-{index}", str_at(obj, "/metadata/name")),
        owner_uid(obj),
    )
}

/// Kueue's `SanitizePodSet`: a container's env keeps one entry per name
/// (the last value, at the first one's place).
fn sanitize_env(template: &mut Value) {
    for list in ["containers", "initContainers"] {
        let Some(cs) = template
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in cs {
            let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) else {
                continue;
            };
            let mut order: Vec<String> = Vec::new();
            let mut last: std::collections::HashMap<String, Value> = Default::default();
            for e in env.iter() {
                let n = e
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if !last.contains_key(&n) {
                    order.push(n.clone());
                }
                last.insert(n, e.clone());
            }
            *env = order.into_iter().filter_map(|n| last.remove(&n)).collect();
        }
    }
}

/// A pod set of a replica group's Workload: the template without the
/// owner's own keys (Kueue's `dropLWSPrefixedKeys`, the name label kept),
/// env de-duplicated.
fn group_pod_set(groups: &ReplicaGroups, name: &str, count: i64, template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(prefix) = &groups.drop_template_prefix {
        for section in ["labels", "annotations"] {
            if let Some(m) = t
                .pointer_mut(&format!("/metadata/{section}"))
                .and_then(Value::as_object_mut)
            {
                m.retain(|k, _| !k.starts_with(prefix.as_str()) || *k == groups.owner_label);
            }
        }
    }
    sanitize_env(&mut t);
    if t.get("spec").is_none() {
        t["spec"] = json!({});
    }
    json!({"name": name, "count": count, "template": t})
}

/// Kueue's `podSets` for a LeaderWorkerSet: with a leader template,
/// `leader` (1) and `worker` (size − 1); without, `main` (size).
pub fn group_pod_sets(groups: &ReplicaGroups, owner: &PodOwner, obj: &Value) -> Vec<Value> {
    let size = group_size(groups, obj);
    let worker = owner.template.resolve(obj).unwrap_or(&Value::Null);
    match (&groups.leader, leader_template(groups, obj)) {
        (Some(role), Some(leader)) => vec![
            group_pod_set(groups, &role.pod_set, 1, leader),
            group_pod_set(groups, &role.others_pod_set, size - 1, worker),
        ],
        _ => vec![group_pod_set(groups, POD_SET_NAME, size, worker)],
    }
}

/// A replica group's priority: the object's WorkloadPriorityClass, else
/// the leader's or workers' `priorityClassName`, else the default.
pub fn group_priority(
    owner: &PodOwner,
    obj: &Value,
    classes: &PriorityClasses,
) -> Result<super::workload::Priority, WorkloadError> {
    let mut templates: Vec<&Value> = owner
        .replica_groups
        .as_ref()
        .and_then(|g| leader_template(g, obj))
        .into_iter()
        .collect();
    templates.extend(owner.template.resolve(obj));
    priority_of(obj, &templates, classes)
}

/// Kueue's `constructWorkload` for one replica group of a LeaderWorkerSet:
/// a group Workload (`is-group-workload`) owned (not controlled) by the
/// object, with the owner's kind, name and the group's index.
pub fn group_workload_for(
    policy: &Policy,
    owner: &PodOwner,
    obj: &Value,
    index: i64,
    classes: &PriorityClasses,
) -> Result<Value, WorkloadError> {
    let groups = owner
        .replica_groups
        .as_ref()
        .ok_or(WorkloadError::Missing("spec"))?;
    let prio = group_priority(owner, obj, classes)?;
    let mut spec = json!({
        "queueName": label(obj, QUEUE_NAME_LABEL).unwrap_or(""),
        "podSets": group_pod_sets(groups, owner, obj),
        "active": true,
    });
    set_priority(&mut spec, &prio);
    let wl_name = group_workload_name(policy, obj, index);
    owned_workload(policy, obj, wl_name, spec, Some(index))
}

/// How many groups keep a Workload: `replicas`, or during a rolling
/// update with surge the groups that exist, when more (Kueue's
/// `filterWorkloads` with `isRollingUpdateWithSurge`).
pub fn groups_kept(groups: &ReplicaGroups, obj: &Value) -> i64 {
    let replicas = group_count(groups, obj);
    let Some(surge) = &groups.surge else {
        return replicas;
    };
    // Go's IntOrString.IntValue: a string is read by Atoi (0 if it is not
    // an integer, as "25%").
    let max_surge = match surge.max_surge.resolve(obj) {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => crate::vocabulary::go::go_atoi(s).unwrap_or(0),
        _ => 0,
    };
    let existing = int_or(&surge.existing, obj, 0);
    if existing > replicas && max_surge > 0 && int_or(&surge.updated, obj, 0) < replicas {
        existing
    } else {
        replicas
    }
}

/// Kueue's `filterWorkloads`: of the object's Workloads (`existing`
/// names), the groups to create (name, index), the ones kept and the ones
/// to delete (beyond `replicas`).
pub fn group_plan(
    policy: &Policy,
    groups: &ReplicaGroups,
    obj: &Value,
    existing: &[String],
) -> (Vec<(String, i64)>, Vec<String>, Vec<String>) {
    let mut create = Vec::new();
    let mut keep = Vec::new();
    for i in 0..groups_kept(groups, obj).max(0) {
        let n = group_workload_name(policy, obj, i);
        if existing.contains(&n) {
            keep.push(n);
        } else {
            create.push((n, i));
        }
    }
    let delete = existing
        .iter()
        .filter(|n| !keep.contains(n))
        .cloned()
        .collect();
    (create, keep, delete)
}

/// Kueue's `setDefault` for a pod of a LeaderWorkerSet: a pod with its
/// group index joins that group's Workload (managed, queued while gated,
/// group and prebuilt Workload named, total count = size, role = the pod
/// set it belongs to); a pod already managed only gets the queue name
/// back-filled while gated. Empty when nothing changes or the pod has no
/// group index yet.
pub fn group_member_patch(
    gate: &Gate,
    policy: &Policy,
    owner: &PodOwner,
    obj: &Value,
    pod: &Value,
) -> Vec<PatchOp> {
    let Some(groups) = &owner.replica_groups else {
        return Vec::new();
    };
    let queue = label(obj, QUEUE_NAME_LABEL).filter(|q| !q.is_empty());
    let gated = super::pod::is_gated(gate, pod);
    let mut labels = BTreeEntries::of(pod, "labels");
    let mut annotations = BTreeEntries::of(pod, "annotations");
    if label(pod, &gate.managed_label).is_some() {
        if let (Some(q), true) = (queue, gated) {
            labels.set(QUEUE_NAME_LABEL, q);
        }
    } else {
        let Some(index) = label(pod, &groups.index_label) else {
            return Vec::new();
        };
        let wl_name = name_for(
            &policy.target.kind,
            &policy.target.group,
            &format!("{}-{index}", str_at(obj, "/metadata/name")),
            owner_uid(obj),
        );
        labels.set(&gate.managed_label, keys::MANAGED_VALUE);
        if let (Some(q), true) = (queue, gated) {
            labels.set(QUEUE_NAME_LABEL, q);
        }
        if let Some(rule) = &gate.group {
            annotations.set(&rule.name_label, &wl_name);
            annotations.set(
                &rule.total_count_annotation,
                &group_size(groups, obj).to_string(),
            );
        }
        annotations.set(PREBUILT_WORKLOAD_LABEL, &wl_name);
        let role = match (&groups.leader, leader_template(groups, obj)) {
            (Some(r), Some(_)) if annotation(pod, &r.follower_annotation).is_some() => {
                r.others_pod_set.as_str()
            }
            (Some(r), Some(_)) => r.pod_set.as_str(),
            _ => POD_SET_NAME,
        };
        annotations.set(ROLE_HASH_ANNOTATION, role);
    }
    marking_ops(pod, labels, annotations)
}

/// What the reconciler does with a pod of a LeaderWorkerSet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupPod {
    /// Kueue's `UngateAndFinalizePod`: its controlling StatefulSet is not
    /// one of the owner's (or it has none), or it rolls the pod out as an
    /// old revision: the gates come off, no admission is waited for.
    LetGo,
    /// Ended or going: left alone.
    Leave,
    /// Marked into its group (`group_member_patch`).
    Mark,
}

/// Kueue's `ShouldFinalizePod` / `shouldUngatePod` for a pod whose
/// controlling StatefulSet among the owner's is `sts`.
pub fn group_pod(sts: Option<&Value>, pod: &Value) -> GroupPod {
    let let_go = match sts {
        None => true,
        Some(s) => old_revision(s, pod),
    };
    if let_go {
        GroupPod::LetGo
    } else if super::pod::is_terminated(pod)
        || !matches!(
            pod.at("/metadata/deletionTimestamp"),
            None | Some(Value::Null)
        )
    {
        GroupPod::Leave
    } else {
        GroupPod::Mark
    }
}

/// The patch that writes a pod's changed labels and annotations, guarded
/// by its resourceVersion (a pod changed meanwhile is looked at again).
fn marking_ops(pod: &Value, labels: BTreeEntries, annotations: BTreeEntries) -> Vec<PatchOp> {
    let mut ops = Vec::new();
    for (at, m) in [
        ("/metadata/labels", labels),
        ("/metadata/annotations", annotations),
    ] {
        if m.changed {
            ops.push(PatchOp {
                op: "add",
                path: at.into(),
                value: Value::Object(m.map),
            });
        }
    }
    if !ops.is_empty() {
        if let Some(rv @ Value::String(_)) = pod.at("/metadata/resourceVersion") {
            ops.insert(
                0,
                PatchOp {
                    op: "test",
                    path: "/metadata/resourceVersion".into(),
                    value: rv.clone(),
                },
            );
        }
    }
    ops
}

/// A string map being edited, and whether it changed.
struct BTreeEntries {
    map: Map<String, Value>,
    changed: bool,
}

impl BTreeEntries {
    fn of(pod: &Value, section: &str) -> Self {
        BTreeEntries {
            map: pod
                .at(&format!("/metadata/{section}"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            changed: false,
        }
    }
    fn set(&mut self, k: &str, v: &str) {
        if self.map.get(k).and_then(Value::as_str) != Some(v) {
            self.map.insert(k.to_string(), Value::String(v.to_string()));
            self.changed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::{policy::PolicySet, workload::apply};

    fn sts_policy() -> std::sync::Arc<Policy> {
        PolicySet::embedded()
            .unwrap()
            .find("apps", "v1", "StatefulSet")
            .unwrap()
            .clone()
    }

    fn gate() -> Gate {
        PolicySet::embedded()
            .unwrap()
            .find("", "v1", "Pod")
            .unwrap()
            .gate
            .clone()
            .unwrap()
    }

    fn sts() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "sts-uid",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"},
                                  "annotations": {SUSPENDED_BY_PARENT_ANNOTATION: "statefulset"}},
                                  "spec": {"containers": [{"name": "c", "image": "i",
                                           "resources": {"requests": {"cpu": "1"}}}]}}},
        })
    }

    /// Kueue v0.19.2 statefulset_reconciler_test.go ("should create
    /// prebuilt workload"): one pod set main of replicas pods, owned by the
    /// StatefulSet, named statefulset-<name>-<hash>.
    #[test]
    fn the_group_workload_is_made_from_the_owner() {
        let p = sts_policy();
        let owner = p.pod_owner.clone().unwrap();
        let s = sts();
        assert!(marked(&p, &owner, &s));
        let wl = workload_for(&p, &owner, &s, &PriorityClasses::default()).unwrap();
        assert_eq!(
            wl["metadata"]["name"],
            name_for("StatefulSet", "apps", "web", "sts-uid")
        );
        assert!(wl["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("statefulset-web-"));
        assert_eq!(wl["spec"]["podSets"][0]["name"], "main");
        assert_eq!(wl["spec"]["podSets"][0]["count"], 3);
        assert_eq!(
            wl["spec"]["podSets"][0]["template"],
            json!({"spec": s["spec"]["template"]["spec"]})
        );
        assert_eq!(wl["spec"]["queueName"], "lq");
        assert_eq!(wl["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
        assert!(wl["metadata"]["ownerReferences"][0]["controller"].is_null());
        assert_eq!(
            wl["metadata"]["annotations"][JOB_OWNER_GVK_ANNOTATION],
            "apps/v1, Kind=StatefulSet"
        );
        assert_eq!(
            wl["metadata"]["annotations"][GROUP_WORKLOAD_ANNOTATION],
            "true"
        );
        assert_eq!(
            selector(owner.group.as_ref().unwrap(), &s).as_deref(),
            Some("app=web")
        );
    }

    /// Kueue v0.19.2 statefulset_pod_reconciler_test.go: the pod joins the
    /// group with Kueue's marks; a member only follows the queue name.
    #[test]
    fn a_pod_of_the_owner_joins_its_group() {
        let p = sts_policy();
        let owner = p.pod_owner.clone().unwrap();
        let g = gate();
        let s = sts();
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "ns", "resourceVersion": "4",
                         "labels": {"app": "web"},
                         "annotations": {SUSPENDED_BY_PARENT_ANNOTATION: "statefulset"}},
            "spec": {}});
        assert!(from_owner(&p, &pod));
        let wl = workload_name(&p, &s);
        let ops = member_patch(&g, &owner, &s, &pod, &wl, false);
        assert_eq!(ops[0].op, "test");
        let out = apply(&pod, &ops).unwrap();
        let l = &out["metadata"]["labels"];
        let a = &out["metadata"]["annotations"];
        assert_eq!(l["app"], "web");
        assert_eq!(l["kueue.x-k8s.io/managed"], "true");
        assert_eq!(l["kueue.x-k8s.io/queue-name"], "lq");
        assert_eq!(a["kueue.x-k8s.io/prebuilt-workload-name"], wl.as_str());
        assert_eq!(a["kueue.x-k8s.io/pod-group-name"], wl.as_str());
        assert_eq!(a["kueue.x-k8s.io/pod-group-total-count"], "3");
        assert_eq!(a["kueue.x-k8s.io/pod-group-fast-admission"], "true");
        assert_eq!(a["kueue.x-k8s.io/pod-group-serving"], "true");
        assert_eq!(
            a["kueue.x-k8s.io/pod-group-pod-index-label"],
            "apps.kubernetes.io/pod-index"
        );
        assert_eq!(a["kueue.x-k8s.io/role-hash"], "main");
        assert_eq!(group_name(g.group.as_ref(), &out), Some(wl.as_str()));
        // Once a member: nothing more, but the queue name follows.
        assert!(member_patch(&g, &owner, &s, &out, &wl, false).is_empty());
        let mut moved = s.clone();
        moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("other");
        let again = apply(&out, &member_patch(&g, &owner, &moved, &out, &wl, false)).unwrap();
        assert_eq!(
            again["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
            "other"
        );
        // Not queued: left alone, unless every object is managed.
        let mut bare = s.clone();
        bare["metadata"]["labels"] = json!({});
        assert!(member_patch(&g, &owner, &bare, &pod, &wl, false).is_empty());
        assert!(!member_patch(&g, &owner, &bare, &pod, &wl, true).is_empty());
    }

    #[test]
    fn an_old_revision_pod_is_let_go_during_a_rollout() {
        let mut s = sts();
        let pod = json!({"metadata": {"labels": {REVISION_LABEL: "r1"}}});
        s["status"] = json!({"currentRevision": "r1", "updateRevision": "r1"});
        assert!(!old_revision(&s, &pod));
        s["status"]["updateRevision"] = json!("r2");
        assert!(old_revision(&s, &pod));
    }

    // ---- LeaderWorkerSet (Kueue v0.19.2 leaderworkerset_reconciler_test.go) ----

    fn lws_policy() -> std::sync::Arc<Policy> {
        PolicySet::embedded()
            .unwrap()
            .find("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet")
            .unwrap()
            .clone()
    }

    fn lws(size: i64, leader: bool) -> Value {
        let mut l = json!({
            "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "lws", "namespace": "ns", "uid": "lws-uid",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": 2, "leaderWorkerTemplate": {
                "size": size,
                "workerTemplate": {
                    "metadata": {"labels": {"app": "w", "leaderworkerset.sigs.k8s.io/name": "lws",
                                            "leaderworkerset.sigs.k8s.io/group-index": "0"},
                                 "annotations": {"custom": "x",
                                                 "leaderworkerset.sigs.k8s.io/size": "3"}},
                    "spec": {"containers": [{"name": "c", "image": "i",
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"},
                                {"name": "A", "value": "3"}],
                        "resources": {"requests": {"cpu": "1"}}}]}}}},
        });
        if leader {
            l["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = json!({
                "spec": {"containers": [{"name": "l", "image": "i"}]}});
        }
        l
    }

    /// "should create prebuilt workload", "should create prebuilt workload
    /// with leader template", "... with custom annotations propagated to
    /// podsets": Kueue's name per group index, pod sets main (size) or
    /// leader (1) + worker (size − 1), the owner's annotations, the LWS keys
    /// dropped from the templates but the name label, env de-duplicated.
    #[test]
    fn each_replica_group_gets_kueues_workload() {
        let p = lws_policy();
        let owner = p.pod_owner.clone().unwrap();
        let l = lws(3, false);
        let wl = group_workload_for(&p, &owner, &l, 1, &PriorityClasses::default()).unwrap();
        let name = name_for(
            "LeaderWorkerSet",
            "leaderworkerset.x-k8s.io",
            "lws-1",
            "lws-uid",
        );
        assert!(name.starts_with("leaderworkerset-lws-1-"), "{name}");
        assert_eq!(wl["metadata"]["name"], name.as_str());
        assert_eq!(group_workload_name(&p, &l, 1), name);
        let a = &wl["metadata"]["annotations"];
        assert_eq!(a[GROUP_WORKLOAD_ANNOTATION], "true");
        assert_eq!(
            a[JOB_OWNER_GVK_ANNOTATION],
            "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet"
        );
        assert_eq!(a[JOB_OWNER_NAME_ANNOTATION], "lws");
        assert_eq!(a[COMPONENT_WORKLOAD_INDEX_ANNOTATION], "1");
        assert_eq!(wl["metadata"]["labels"][JOB_UID_LABEL], "lws-uid");
        assert_eq!(
            wl["metadata"]["finalizers"],
            json!([RESOURCE_IN_USE_FINALIZER])
        );
        assert!(wl["metadata"]["ownerReferences"][0]["controller"].is_null());
        assert_eq!(
            wl["metadata"]["ownerReferences"][0]["kind"],
            "LeaderWorkerSet"
        );
        assert_eq!(wl["spec"]["queueName"], "lq");
        let sets = wl["spec"]["podSets"].as_array().unwrap();
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0]["name"], "main");
        assert_eq!(sets[0]["count"], 3);
        let t = &sets[0]["template"];
        assert_eq!(
            t["metadata"]["labels"],
            json!({"app": "w", "leaderworkerset.sigs.k8s.io/name": "lws"})
        );
        assert_eq!(t["metadata"]["annotations"], json!({"custom": "x"}));
        assert_eq!(
            t["spec"]["containers"][0]["env"],
            json!([{"name": "A", "value": "3"}, {"name": "B", "value": "2"}])
        );

        let l = lws(3, true);
        let wl = group_workload_for(&p, &owner, &l, 0, &PriorityClasses::default()).unwrap();
        let sets = wl["spec"]["podSets"].as_array().unwrap();
        let got: Vec<(&str, i64)> = sets
            .iter()
            .map(|s| (s["name"].as_str().unwrap(), s["count"].as_i64().unwrap()))
            .collect();
        assert_eq!(got, vec![("leader", 1), ("worker", 2)]);
        assert_eq!(sets[0]["template"]["spec"]["containers"][0]["name"], "l");
    }

    /// "should delete excess workload on scale down ...": the groups below
    /// replicas are kept or made, the rest deleted.
    #[test]
    fn groups_follow_replicas() {
        let p = lws_policy();
        let groups = p.pod_owner.clone().unwrap().replica_groups.unwrap();
        let mut l = lws(2, true);
        let w = |i| group_workload_name(&p, &l, i);
        let existing = vec![w(0), w(2), "other".to_string()];
        let (create, keep, delete) = group_plan(&p, &groups, &l, &existing);
        assert_eq!(create, vec![(w(1), 1)]);
        assert_eq!(keep, vec![w(0)]);
        assert_eq!(delete, vec![w(2), "other".to_string()]);
        l["spec"]["replicas"] = json!(0);
        let (create, keep, delete) = group_plan(&p, &groups, &l, &existing);
        assert!(create.is_empty() && keep.is_empty());
        assert_eq!(delete.len(), 3);
        // Absent: one group (the API's default).
        l["spec"].as_object_mut().unwrap().remove("replicas");
        assert_eq!(group_count(&groups, &l), 1);
    }

    /// "should keep surge workloads during active rolling update with
    /// maxSurge", "should delete excess workload on scale down with
    /// maxSurge configured but no active rolling update".
    #[test]
    fn surge_groups_keep_their_workloads_during_a_rollout() {
        let p = lws_policy();
        let groups = p.pod_owner.clone().unwrap().replica_groups.unwrap();
        let mut l = lws(1, false);
        l["spec"]["replicas"] = json!(2);
        l["spec"]["rolloutStrategy"] = json!({"rollingUpdateConfiguration": {"maxSurge": 1}});
        l["status"] = json!({"replicas": 3, "updatedReplicas": 1});
        let existing: Vec<String> = (0..3).map(|i| group_workload_name(&p, &l, i)).collect();
        let (create, keep, delete) = group_plan(&p, &groups, &l, &existing);
        assert!(create.is_empty() && delete.is_empty());
        assert_eq!(keep.len(), 3);
        // No rollout going on (every group updated): back to replicas.
        l["spec"]["replicas"] = json!(1);
        l["status"] = json!({"replicas": 2, "updatedReplicas": 1});
        let (_, keep, delete) = group_plan(&p, &groups, &l, &existing[..2]);
        assert_eq!(keep, vec![existing[0].clone()]);
        assert_eq!(delete, vec![existing[1].clone()]);
        // A percentage reads as 0 (Go's IntValue): no surge.
        l["spec"]["replicas"] = json!(2);
        l["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxSurge"] = json!("50%");
        l["status"] = json!({"replicas": 3, "updatedReplicas": 1});
        assert_eq!(groups_kept(&groups, &l), 2);
    }

    fn lws_pod(name: &str, index: Option<&str>, follower: bool) -> Value {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "3",
                         "labels": {"leaderworkerset.sigs.k8s.io/name": "lws"},
                         "annotations": {SUSPENDED_BY_PARENT_ANNOTATION: "leaderworkerset.x-k8s.io/leaderworkerset",
                                         GROUP_SERVING_ANNOTATION: "true"}},
            "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}});
        if let Some(i) = index {
            p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"] = json!(i);
        }
        if follower {
            p["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/leader-name"] =
                json!("lws-0");
        }
        p
    }

    /// "should set default values (leader+worker template, leader pod)",
    /// "(... worker pod)", "(worker template, leader pod)", "shouldn't set
    /// default values without group index label", "shouldn't set default
    /// values with managed-by-kueue label", "should backfill queue-name on
    /// an already adopted pod", "should not backfill queue-name on an
    /// ungated pod".
    #[test]
    fn a_pod_joins_its_replica_group() {
        let p = lws_policy();
        let owner = p.pod_owner.clone().unwrap();
        let g = gate();
        let l = lws(3, true);
        let wl = group_workload_name(&p, &l, 1);
        let leader = lws_pod("lws-1", Some("1"), false);
        assert!(from_owner(&p, &leader));
        let out = apply(&leader, &group_member_patch(&g, &p, &owner, &l, &leader)).unwrap();
        let (lb, an) = (&out["metadata"]["labels"], &out["metadata"]["annotations"]);
        assert_eq!(lb["kueue.x-k8s.io/managed"], "true");
        assert_eq!(lb["kueue.x-k8s.io/queue-name"], "lq");
        assert_eq!(an["kueue.x-k8s.io/pod-group-name"], wl.as_str());
        assert_eq!(an["kueue.x-k8s.io/prebuilt-workload-name"], wl.as_str());
        assert_eq!(an["kueue.x-k8s.io/pod-group-total-count"], "3");
        assert_eq!(an[ROLE_HASH_ANNOTATION], "leader");
        assert_eq!(group_name(g.group.as_ref(), &out), Some(wl.as_str()));
        // Marked once: nothing more.
        assert!(group_member_patch(&g, &p, &owner, &l, &out).is_empty());
        let worker = lws_pod("lws-1-1", Some("1"), true);
        let out = apply(&worker, &group_member_patch(&g, &p, &owner, &l, &worker)).unwrap();
        assert_eq!(
            out["metadata"]["annotations"][ROLE_HASH_ANNOTATION],
            "worker"
        );
        // Without a leader template every pod is main.
        let solo = lws(3, false);
        let out = apply(&worker, &group_member_patch(&g, &p, &owner, &solo, &worker)).unwrap();
        assert_eq!(out["metadata"]["annotations"][ROLE_HASH_ANNOTATION], "main");
        // No group index yet: left for later.
        let early = lws_pod("lws-2", None, false);
        assert!(group_member_patch(&g, &p, &owner, &l, &early).is_empty());
        // Managed already: only the queue back-filled, and only while gated.
        let mut adopted = lws_pod("lws-0", Some("0"), false);
        adopted["metadata"]["labels"]["kueue.x-k8s.io/managed"] = json!("true");
        let out = apply(&adopted, &group_member_patch(&g, &p, &owner, &l, &adopted)).unwrap();
        assert_eq!(out["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "lq");
        assert!(out["metadata"]["annotations"]
            .get("kueue.x-k8s.io/pod-group-name")
            .is_none());
        adopted["spec"]["schedulingGates"] = json!([]);
        assert!(group_member_patch(&g, &p, &owner, &l, &adopted).is_empty());
    }

    /// "should finalize pods if statefulSet is deleted", "should finalize
    /// succeeded pod", "should finalize deleted pod": a pod whose
    /// StatefulSet is not the owner's is let go; ended ones left alone.
    #[test]
    fn a_pod_without_its_statefulset_is_let_go() {
        let pod = lws_pod("lws-0", Some("0"), false);
        assert_eq!(group_pod(None, &pod), GroupPod::LetGo);
        let sts = json!({"status": {"currentRevision": "r1", "updateRevision": "r1"}});
        assert_eq!(group_pod(Some(&sts), &pod), GroupPod::Mark);
        let mut done = pod.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert_eq!(group_pod(Some(&sts), &done), GroupPod::Leave);
        let mut going = pod.clone();
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(group_pod(Some(&sts), &going), GroupPod::Leave);
        let mut old = pod.clone();
        old["metadata"]["labels"][REVISION_LABEL] = json!("r1");
        let rolling = json!({"status": {"currentRevision": "r1", "updateRevision": "r2"}});
        assert_eq!(group_pod(Some(&rolling), &old), GroupPod::LetGo);
    }
}
