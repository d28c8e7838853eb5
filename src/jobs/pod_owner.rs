//! Kinds queued through their pods as one pod group (a policy with
//! `podOwner.group`: Kueue's StatefulSet integration), pure: the group's
//! Workload made from the owner (one pod set `main`, count = replicas,
//! Kueue's name for the owner), the marks a pod of the owner gets to join
//! that group (Kueue's `statefulset_pod_reconciler` `setDefault`), and the
//! rollout rule that lets an old-revision pod go (`UngateAndFinalizePod`).
//! Raw JSON in, JSON or patches out.

use serde_json::{json, Map, Value};

use super::{
    pod::{
        annotation, group_name, label, GROUP_FAST_ADMISSION_ANNOTATION, GROUP_SERVING_ANNOTATION,
        GROUP_WORKLOAD_ANNOTATION, POD_INDEX_LABEL_ANNOTATION, POD_SET_NAME, ROLE_HASH_ANNOTATION,
        SUSPENDED_BY_PARENT_ANNOTATION,
    },
    policy::{Gate, OwnerGroup, PodOwner, Policy},
    workload::{
        name_for, priority_of, set_priority, PriorityClasses, WorkloadError, JOB_UID_LABEL,
        RESOURCE_IN_USE_FINALIZER,
    },
};
use crate::admission::{
    object::{PREBUILT_WORKLOAD_LABEL, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL},
    patch::PatchOp,
};

/// On the owner's Workload: the owner's kind and name.
pub const JOB_OWNER_GVK_ANNOTATION: &str = "kueue.x-k8s.io/job-owner-gvk";
pub const JOB_OWNER_NAME_ANNOTATION: &str = "kueue.x-k8s.io/job-owner-name";
/// The label of a pod's controller revision (set by the StatefulSet
/// controller).
pub const REVISION_LABEL: &str = "controller-revision-hash";

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
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
        .and_then(|t| t.pointer("/metadata/annotations"))
        .and_then(|a| a.get(SUSPENDED_BY_PARENT_ANNOTATION))
        .and_then(Value::as_str)
        == Some(policy.name.as_str())
}

/// Kueue's `GetWorkloadNameForOwnerWithGVK`.
pub fn workload_name(policy: &Policy, obj: &Value) -> String {
    let t = &policy.target;
    name_for(
        &t.kind,
        &t.group,
        str_at(obj, "/metadata/name"),
        str_at(obj, "/metadata/uid"),
    )
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
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(WorkloadError::Missing("metadata.namespace"))?;
    let t = &policy.target;
    let template = owner.template.resolve(obj).unwrap_or(&Value::Null);
    let prio = priority_of(obj, &[template], classes)?;
    let uid = str_at(obj, "/metadata/uid");
    let name = str_at(obj, "/metadata/name");
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
    Ok(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": workload_name(policy, obj),
            "namespace": namespace,
            "labels": {JOB_UID_LABEL: uid},
            "annotations": {
                GROUP_WORKLOAD_ANNOTATION: "true",
                JOB_OWNER_GVK_ANNOTATION: t.to_string(),
                JOB_OWNER_NAME_ANNOTATION: name,
            },
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
/// queue name kept in step. Empty when nothing changes, or when the owner
/// is not queued (`manage_all`: manageJobsWithoutQueueName).
pub fn member_patch(
    gate: &Gate,
    owner: &PodOwner,
    obj: &Value,
    pod: &Value,
    manage_all: bool,
) -> Vec<PatchOp> {
    let Some(group) = &owner.group else {
        return Vec::new();
    };
    let wl_name = workload_name_of(obj);
    let queue = label(obj, QUEUE_NAME_LABEL).filter(|q| !q.is_empty());
    let mut labels = BTreeEntries::of(pod, "labels");
    let mut annotations = BTreeEntries::of(pod, "annotations");
    if group_name(gate.group.as_ref(), pod) == Some(wl_name.as_str()) {
        if let Some(q) = queue {
            labels.set(QUEUE_NAME_LABEL, q);
        }
    } else {
        if queue.is_none() && !manage_all {
            return Vec::new();
        }
        labels.set(&gate.managed_label, crate::admission::pod::MANAGED_VALUE);
        if let Some(q) = queue {
            labels.set(QUEUE_NAME_LABEL, q);
        }
        if let Some(p) = label(obj, PRIORITY_CLASS_LABEL).filter(|p| !p.is_empty()) {
            labels.set(PRIORITY_CLASS_LABEL, p);
        }
        annotations.set(PREBUILT_WORKLOAD_LABEL, &wl_name);
        if let Some(rule) = &gate.group {
            annotations.set(&rule.name_label, &wl_name);
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
        if let Some(rv @ Value::String(_)) = pod.pointer("/metadata/resourceVersion") {
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

/// The Workload name a pod of `obj` is put into.
fn workload_name_of(obj: &Value) -> String {
    // The owner's policy target is not known here: the owner's kind and
    // group come from the object itself.
    let (group, _) = str_at(obj, "/apiVersion")
        .rsplit_once('/')
        .unwrap_or(("", ""));
    name_for(
        str_at(obj, "/kind"),
        group,
        str_at(obj, "/metadata/name"),
        str_at(obj, "/metadata/uid"),
    )
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

/// A string map being edited, and whether it changed.
struct BTreeEntries {
    map: Map<String, Value>,
    changed: bool,
}

impl BTreeEntries {
    fn of(pod: &Value, section: &str) -> Self {
        BTreeEntries {
            map: pod
                .pointer(&format!("/metadata/{section}"))
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
        let ops = member_patch(&g, &owner, &s, &pod, false);
        assert_eq!(ops[0].op, "test");
        let out = apply(&pod, &ops).unwrap();
        let wl = workload_name(&p, &s);
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
        assert!(member_patch(&g, &owner, &s, &out, false).is_empty());
        let mut moved = s.clone();
        moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("other");
        let again = apply(&out, &member_patch(&g, &owner, &moved, &out, false)).unwrap();
        assert_eq!(
            again["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
            "other"
        );
        // Not queued: left alone, unless every object is managed.
        let mut bare = s.clone();
        bare["metadata"]["labels"] = json!({});
        assert!(member_patch(&g, &owner, &bare, &pod, false).is_empty());
        assert!(!member_patch(&g, &owner, &bare, &pod, true).is_empty());
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
}
