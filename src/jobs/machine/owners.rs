//! The decisions of the reconcilers of kinds queued through their pods
//! (`podOwner`: Kueue's StatefulSet and LeaderWorkerSet reconcilers),
//! pure: the owner, the pods and Workloads listed for it in; the writes,
//! each naming the object it is about by its index in those lists, out.
//! `controllers::pod_owners` lists and executes.

use crate::vocabulary::pointer::At;
use std::time::Duration;

use serde_json::{json, Value};

use super::{Note, Then};
use crate::{
    api::kueue::v1beta2::{self as api, condition, Conditions},
    jobs::{
        pod::{self as core_pod},
        pod_owner,
        policy::{Gate, PodOwner, Policy, ReplicaGroups},
        workload::{self, PriorityClasses, WorkloadError},
    },
    queueing::reservation,
    vocabulary::{
        keys::{
            JOB_OWNER_GVK_ANNOTATION, JOB_OWNER_NAME_ANNOTATION, PREBUILT_WORKLOAD_LABEL,
            QUEUE_NAME_LABEL,
        },
        patch::PatchOp,
    },
};

/// What a step knows besides the objects listed.
pub struct Facts<'a> {
    pub policy: &'a Policy,
    pub owner: &'a PodOwner,
    /// The pod integration's gate.
    pub gate: &'a Gate,
    pub classes: &'a PriorityClasses,
    pub now: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
}

/// One write of a step, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// JSON-patch the listed pod (changed or gone meanwhile: left to the
    /// next pass).
    PatchPod { pod: usize, ops: Vec<PatchOp> },
    /// Create a Workload; `event` on the owner once created.
    CreateWorkload { body: Value, event: Note },
    /// Merge-patch the listed Workload's `spec` with this object.
    WorkloadSpec { workload: usize, spec: Value },
    /// Merge-patch the listed Workload's status (on the resourceVersion
    /// read).
    WorkloadStatus { workload: usize, status: Value },
    /// Merge-patch the listed Workload's `metadata` with this object (the
    /// owner taking a MultiKueue copy made for it; conditioned on the
    /// version read).
    AdoptWorkload { workload: usize, metadata: Value },
    /// Let go of the listed Workload's `resource-in-use` finalizer.
    RemoveFinalizer { workload: usize },
    /// Delete the listed Workload, on the condition of its UID.
    DeleteWorkload { workload: usize },
    /// Wake the pod integration's reconciler for the listed pod.
    WakePod { pod: usize },
}

pub type Step = super::Step<Write>;

/// Pods appear one by one: how soon an owner whose group is not whole yet
/// is looked at again.
const GROUP_FILLING: Duration = Duration::from_secs(2);

fn queue_of(obj: &Value) -> Option<&str> {
    core_pod::label(obj, QUEUE_NAME_LABEL).filter(|q| !q.is_empty())
}

/// The patch that takes the gates off an old-revision pod.
fn ungate_ops(gate: &Gate, pod: &Value) -> Vec<PatchOp> {
    if !core_pod::is_gated(gate, pod) {
        return Vec::new();
    }
    vec![PatchOp {
        op: "add",
        path: "/spec/schedulingGates".into(),
        value: Value::Array(core_pod::other_gates(gate, pod)),
    }]
}

fn patch(pod: usize, ops: Vec<PatchOp>) -> Option<Write> {
    (!ops.is_empty()).then_some(Write::PatchPod { pod, ops })
}

/// Whether the one-group reconciler looks at `obj`: its pod template is
/// marked as queued by the webhook. `None` otherwise; the label selector
/// of its pods when it has one.
pub fn group_selector(facts: &Facts, obj: &Value) -> Option<Option<String>> {
    let group = facts.owner.group.as_ref()?;
    if !pod_owner::marked(facts.policy, facts.owner, obj) {
        return None;
    }
    Some(pod_owner::selector(group, obj))
}

/// Kueue's `findWorkloadName` for a StatefulSet: the Workload under the
/// set's name, else one under Kueue's legacy name (made before the UID
/// was part of the name). Unlike Kueue, a legacy Workload that is not the
/// set's (no owner reference with its UID) is not taken: the set makes
/// its own under the current name.
pub fn followed<'a>(
    obj: &Value,
    current: Option<&'a api::Workload>,
    legacy: Option<&'a api::Workload>,
) -> Option<&'a api::Workload> {
    let uid = obj
        .at("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    current.or(legacy.filter(|w| {
        !uid.is_empty() && workload::is_owned_by(w.metadata.owner_references.as_deref(), uid)
    }))
}

/// One pass of the one-group reconciler (a StatefulSet): `pods` the pods
/// its selector lists, `wl` the group's Workload as read ([`followed`]:
/// its pods are marked into the group of that Workload's name).
pub fn group_step(
    facts: &Facts,
    obj: &Value,
    pods: &[Value],
    wl: Option<&api::Workload>,
) -> Result<Step, WorkloadError> {
    let Some(group) = &facts.owner.group else {
        return Ok(Step {
            writes: Vec::new(),
            then: Then::Wait,
        });
    };
    let replicas = pod_owner::replicas(group, obj);
    let queue = queue_of(obj);
    let wl_name = match wl {
        Some(w) => w.metadata.name.clone().unwrap_or_default(),
        None => pod_owner::workload_name(facts.policy, obj),
    };
    // The owner's pods: marked into its group as they appear.
    let mut writes = Vec::new();
    let mut members = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        if !pod_owner::from_owner(facts.policy, pod)
            || core_pod::is_terminated(pod)
            || super::pods::deleting(pod)
        {
            continue;
        }
        if pod_owner::old_revision(obj, pod) {
            writes.extend(patch(i, ungate_ops(facts.gate, pod)));
            continue;
        }
        writes.extend(patch(
            i,
            pod_owner::member_patch(facts.gate, facts.owner, obj, pod, &wl_name, false),
        ));
        members.push(i);
    }
    let Some(wl) = wl else {
        // A MultiKueue worker's copy waits for the manager's Workload copy.
        if replicas > 0 && queue.is_some() && !pod_owner::is_multikueue_copy(obj) {
            let body = pod_owner::workload_for(facts.policy, facts.owner, obj, facts.classes)?;
            writes.push(Write::CreateWorkload {
                event: created(obj, &body),
                body,
            });
        }
        return Ok(Step {
            writes,
            then: Then::After(GROUP_FILLING),
        });
    };
    let uid = obj
        .at("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !workload::is_owned_by(wl.metadata.owner_references.as_deref(), uid) {
        if let Some(metadata) = multikueue_adoption(facts.policy, obj, wl, replicas) {
            writes.push(Write::AdoptWorkload {
                workload: 0,
                metadata,
            });
            // Looked at again: a patch refused on the version read leaves
            // a copy whose changes wake nobody yet.
            return Ok(Step {
                writes,
                then: Then::After(GROUP_FILLING),
            });
        }
        // The name is taken by a Workload that is not this object's: left
        // alone, never changed on its behalf.
        return Ok(Step {
            writes,
            then: Then::Wait,
        });
    }
    // Kueue's rule for a Workload marked for deletion: the job stopped and
    // the finalizer let go. With pods, the pods reconciler stops them and
    // lets go; without any (a set scaled to zero), nothing else would.
    if wl.metadata.deletion_timestamp.is_some() {
        if members.is_empty() && super::holds_quota_finalizer(wl) {
            writes.push(Write::RemoveFinalizer { workload: 0 });
        }
        return Ok(Step {
            writes,
            then: Then::Wait,
        });
    }
    if let (true, Some(q)) = (replicas > 0, queue) {
        if wl.spec.queue_name.as_deref() != Some(q) {
            writes.push(Write::WorkloadSpec {
                workload: 0,
                spec: json!({ "queueName": q }),
            });
        }
    }
    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    if let Some(status) = hold(wl, &conds, replicas, facts.now) {
        writes.push(Write::WorkloadStatus {
            workload: 0,
            status,
        });
        return Ok(Step {
            writes,
            then: Then::Wait,
        });
    }
    // The pod integration ungates the group's pods once admitted.
    if conds.is_true(condition::ADMITTED) {
        writes.extend(members.iter().map(|&pod| Write::WakePod { pod }));
    }
    let then = if (members.len() as i64) < replicas {
        Then::After(GROUP_FILLING)
    } else {
        Then::Wait
    };
    Ok(Step { writes, then })
}

/// Kueue's StatefulSet reconciler on a scale to zero: the Workload keeps
/// its owner and gives its quota back, on hold (`QuotaReserved=False`,
/// `OnHold`) so it is not queued; scaled up again, it is taken off hold
/// (`Pending`) and queues for a new admission.
fn hold(
    wl: &api::Workload,
    conds: &Conditions,
    replicas: i64,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> Option<Value> {
    let unset = |reason: &str, message: &str| {
        reservation::unset(
            &conds.0,
            wl.metadata.generation,
            now,
            wl.status
                .as_ref()
                .and_then(|s| s.accumulated_past_execution_time_seconds),
            reason,
            message,
        )
    };
    if replicas == 0
        && conds.is_true(condition::QUOTA_RESERVED)
        && !conds.is_true(condition::FINISHED)
        && wl.spec.active != Some(false)
    {
        return unset(
            reservation::ON_HOLD,
            "StatefulSet scaled to zero; workload on hold",
        );
    }
    if replicas > 0 && reservation::is_on_hold(&conds.0) {
        return unset(
            "Pending",
            "Workload no longer on hold; waiting for quota reservation",
        );
    }
    None
}

/// Kueue's StatefulSet reconciler on a MultiKueue worker: the copy of the
/// manager's Workload made for this set (carrying the set's origin, under
/// the name made from the manager's UID) becomes the set's, as its own
/// Workload is, while it has replicas. Its pods may have taken it first
/// (as owners, never as its controller); a copy another object controls,
/// or of another origin, is left alone.
fn multikueue_adoption(
    policy: &Policy,
    obj: &Value,
    wl: &api::Workload,
    replicas: i64,
) -> Option<Value> {
    use crate::api::kueue::v1beta2::MULTIKUEUE_ORIGIN_LABEL as ORIGIN;
    let theirs = wl.metadata.labels.as_ref().and_then(|l| l.get(ORIGIN));
    let ours = pod_owner::multikueue_origin(obj);
    if replicas <= 0
        || ours.is_none()
        || theirs.map(String::as_str) != ours
        || workload::controller_of(wl).is_some()
        || wl.metadata.deletion_timestamp.is_some()
    {
        return None;
    }
    let t = &policy.target;
    let name = obj.at("/metadata/name").cloned().unwrap_or_default();
    let mut refs: Vec<Value> = wl
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect();
    refs.push(json!({
        "apiVersion": t.api_version(),
        "kind": t.kind,
        "name": name,
        "uid": obj.at("/metadata/uid").cloned().unwrap_or_default(),
    }));
    Some(json!({
        "resourceVersion": wl.metadata.resource_version,
        "ownerReferences": refs,
        "annotations": {
            JOB_OWNER_GVK_ANNOTATION: t.to_string(),
            JOB_OWNER_NAME_ANNOTATION: name,
        },
    }))
}

fn created(obj: &Value, body: &Value) -> Note {
    let ns = obj
        .at("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = body
        .at("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Note::normal("CreatedWorkload", format!("Created Workload: {ns}/{name}"))
}

/// One pass of the reconciler of an owner with one pod group per replica
/// (Kueue's LeaderWorkerSet reconciler): `workloads` the Workloads the
/// object owns, `pods` its pods, `sets` its StatefulSets. The groups'
/// Workloads made, kept in step (queue name, priority) and deleted beyond
/// `replicas`; each pod marked into its group's Workload, or let go when
/// its StatefulSet is not the owner's or rolls it out; the gated pods of
/// an admitted group woken.
pub fn groups_step(
    facts: &Facts,
    groups: &ReplicaGroups,
    obj: &Value,
    workloads: &[api::Workload],
    pods: &[Value],
    sets: &[Value],
) -> Result<Step, WorkloadError> {
    let mut writes = Vec::new();
    // Kueue's predicate: only an object it would suspend (queued).
    let Some(queue) = queue_of(obj) else {
        return Ok(Step {
            writes,
            then: Then::Wait,
        });
    };
    let names: Vec<String> = workloads
        .iter()
        .map(|w| w.metadata.name.clone().unwrap_or_default())
        .collect();
    let (create, keep, delete) = pod_owner::group_plan(facts.policy, groups, obj, &names);
    // A MultiKueue worker's copy gets the manager's Workload copies.
    let create = if pod_owner::is_multikueue_copy(obj) {
        Vec::new()
    } else {
        create
    };
    for (_, index) in create {
        let body =
            pod_owner::group_workload_for(facts.policy, facts.owner, obj, index, facts.classes)?;
        writes.push(Write::CreateWorkload {
            event: created(obj, &body),
            body,
        });
    }
    let mut admitted = Vec::new();
    for (i, wl) in workloads.iter().enumerate() {
        let name = &names[i];
        if delete.contains(name) {
            // Kueue's workload.Delete: the finalizer goes first, so the
            // quota is returned at once.
            if super::holds_quota_finalizer(wl) {
                writes.push(Write::RemoveFinalizer { workload: i });
            }
            if wl.metadata.deletion_timestamp.is_none() {
                writes.push(Write::DeleteWorkload { workload: i });
            }
            continue;
        }
        if !keep.contains(name) {
            continue;
        }
        // Kueue's updateWorkload: the queue name, and the priority of a
        // WorkloadPriorityClass (UpdateWorkloadPriority), follow the set.
        let mut spec = serde_json::Map::new();
        if wl.spec.queue_name.as_deref() != Some(queue) {
            spec.insert("queueName".into(), json!(queue));
        }
        if let Ok(prio) = pod_owner::group_priority(facts.owner, obj, facts.classes) {
            if let workload::PrioritySource::WorkloadPriorityClass(_) = prio.source {
                if wl.spec.priority != Some(prio.value) {
                    spec.insert("priority".into(), json!(prio.value));
                }
            }
        }
        if !spec.is_empty() {
            writes.push(Write::WorkloadSpec {
                workload: i,
                spec: Value::Object(spec),
            });
        }
        let status = wl.status.clone().unwrap_or_default();
        if Conditions::of(status.conditions.as_ref()).is_true(condition::ADMITTED) {
            admitted.push(name.as_str());
        }
    }
    let mut waiting = false;
    for (i, pod) in pods.iter().enumerate() {
        if !pod_owner::from_owner(facts.policy, pod) {
            continue;
        }
        let sts = pod
            .at("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|o| o["controller"] == json!(true) && o["kind"] == "StatefulSet")
            .and_then(|o| {
                sets.iter()
                    .find(|s| s.at("/metadata/name") == o.get("name"))
            });
        match pod_owner::group_pod(sts, pod) {
            pod_owner::GroupPod::LetGo => writes.extend(patch(i, ungate_ops(facts.gate, pod))),
            pod_owner::GroupPod::Leave => {}
            pod_owner::GroupPod::Mark => {
                if core_pod::label(pod, &groups.index_label).is_none() {
                    // The group index comes from the LWS pod webhook; Kueue
                    // waits for it.
                    waiting = true;
                }
                let ops =
                    pod_owner::group_member_patch(facts.gate, facts.policy, facts.owner, obj, pod);
                writes.extend(patch(i, ops));
                let in_admitted = core_pod::annotation(pod, PREBUILT_WORKLOAD_LABEL)
                    .is_some_and(|w| admitted.contains(&w));
                if in_admitted && core_pod::is_gated(facts.gate, pod) {
                    writes.push(Write::WakePod { pod: i });
                }
            }
        }
    }
    let then = if waiting {
        Then::After(GROUP_FILLING)
    } else {
        Then::Wait
    };
    Ok(Step { writes, then })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::jobs::policy::PolicySet;

    fn policy(group: &str, kind: &str) -> Arc<Policy> {
        PolicySet::embedded()
            .unwrap()
            .find(group, "v1", kind)
            .unwrap()
            .clone()
    }

    fn gate() -> Gate {
        policy("", "Pod").gate.clone().unwrap()
    }

    fn sts() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "sts-uid",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"},
                                  "annotations": {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}},
                                  "spec": {"containers": [{"name": "c", "image": "i",
                                           "resources": {"requests": {"cpu": "1"}}}]}}},
        })
    }

    fn sts_pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "4",
                         "labels": {"app": "web"},
                         "annotations": {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}},
            "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}})
    }

    fn run(obj: &Value, pods: &[Value], wl: Option<&api::Workload>) -> Step {
        let p = policy("apps", "StatefulSet");
        let owner = p.pod_owner.clone().unwrap();
        let (gate, classes) = (gate(), PriorityClasses::default());
        let facts = Facts {
            policy: &p,
            owner: &owner,
            gate: &gate,
            classes: &classes,
            now: &now(),
        };
        group_step(&facts, obj, pods, wl).unwrap()
    }

    fn workload_of(obj: &Value, status: Value) -> api::Workload {
        let p = policy("apps", "StatefulSet");
        let owner = p.pod_owner.clone().unwrap();
        let mut body =
            pod_owner::workload_for(&p, &owner, obj, &PriorityClasses::default()).unwrap();
        body["metadata"]["uid"] = json!("wl-uid");
        body["status"] = status;
        serde_json::from_value(body).unwrap()
    }

    fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::from_second(1_767_225_610).unwrap(),
        )
    }

    fn admitted() -> Value {
        let c = |ty: &str| {
            json!({"type": ty, "status": "True", "reason": ty, "message": "m",
            "lastTransitionTime": "2026-01-01T00:00:00Z"})
        };
        json!({"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
                "count": 2, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}}]},
               "conditions": [c("QuotaReserved"), c("Admitted")]})
    }

    /// Kueue's jobframework rule 1.1 ("If the workload is pending
    /// deletion, suspend the job if needed and drop the finalizer") for a
    /// set scaled to zero: no pods to stop, the finalizer let go, nothing
    /// else written (no hold, no queue name).
    #[test]
    fn a_deleted_workload_of_a_set_without_pods_lets_go_of_its_finalizer() {
        let mut zero = sts();
        zero["spec"]["replicas"] = json!(0);
        let mut wl = workload_of(&zero, admitted());
        wl.metadata.deletion_timestamp = Some(now());
        wl.metadata.finalizers = Some(vec!["kueue.x-k8s.io/resource-in-use".into()]);
        let s = run(&zero, &[], Some(&wl));
        assert_eq!(s.writes, vec![Write::RemoveFinalizer { workload: 0 }]);
        assert_eq!(s.then, Then::Wait);
        // With a pod left, the pods reconciler stops it and lets go.
        let s = run(&zero, &[sts_pod("web-0")], Some(&wl));
        assert!(
            !s.writes
                .iter()
                .any(|w| matches!(w, Write::RemoveFinalizer { .. })),
            "{s:?}"
        );
        // Without the finalizer: nothing.
        wl.metadata.finalizers = None;
        assert!(run(&zero, &[], Some(&wl)).writes.is_empty());
    }

    /// Kueue v0.19.2 statefulset_reconciler_test.go "should adopt legacy
    /// workload instead of creating duplicate" and "should list pods by
    /// legacy workload name", statefulset_pod_reconciler_test.go "should
    /// label new pod with legacy name when legacy workload exists" and
    /// "shouldn't relabel pod with legacy workload name when legacy
    /// workload exists": a Workload under the legacy name (no UID) is
    /// followed while none has the current name; no second Workload is
    /// made, new pods join the legacy group, members keep it. Better than
    /// Kueue: a legacy Workload the set does not own is not taken over
    /// (Kueue writes its owner reference onto it).
    #[test]
    fn a_workload_under_kueues_legacy_name_is_followed() {
        let p = policy("apps", "StatefulSet");
        let s0 = sts();
        let legacy_name = pod_owner::legacy_workload_name(&p, &s0);
        assert_eq!(
            legacy_name,
            crate::jobs::workload::name_for("StatefulSet", "apps", "web", "")
        );
        assert_ne!(legacy_name, pod_owner::workload_name(&p, &s0));
        let mut legacy = workload_of(&s0, json!({}));
        legacy.metadata.name = Some(legacy_name.clone());
        let mut current = workload_of(&s0, json!({}));
        current.metadata.uid = Some("current-uid".into());
        // Followed: the current name first, else an owned legacy one.
        assert_eq!(followed(&s0, None, Some(&legacy)), Some(&legacy));
        assert_eq!(followed(&s0, Some(&current), Some(&legacy)), Some(&current));
        assert_eq!(followed(&s0, None, None), None);
        let mut foreign = legacy.clone();
        foreign.metadata.owner_references = None;
        assert_eq!(followed(&s0, None, Some(&foreign)), None);
        let mut other_set = legacy.clone();
        other_set.metadata.owner_references.as_mut().unwrap()[0].uid = "old-uid".into();
        assert_eq!(followed(&s0, None, Some(&other_set)), None);

        // A new pod joins the legacy group; nothing is created.
        let s = run(&s0, &[sts_pod("web-0")], Some(&legacy));
        assert!(
            !s.writes
                .iter()
                .any(|w| matches!(w, Write::CreateWorkload { .. })),
            "{s:?}"
        );
        let Write::PatchPod { pod: 0, ops } = &s.writes[0] else {
            panic!("{s:?}")
        };
        let out = crate::jobs::workload::apply(&sts_pod("web-0"), ops).unwrap();
        let a = &out["metadata"]["annotations"];
        assert_eq!(a["kueue.x-k8s.io/pod-group-name"], legacy_name.as_str());
        assert_eq!(
            a["kueue.x-k8s.io/prebuilt-workload-name"],
            legacy_name.as_str()
        );
        // A member of the legacy group is not relabelled.
        let s = run(&s0, &[out], Some(&legacy));
        assert!(
            !s.writes.iter().any(|w| matches!(w, Write::PatchPod { .. })),
            "{s:?}"
        );
        // Scaled to zero and back: the legacy Workload is held and freed.
        let mut zero = s0.clone();
        zero["spec"]["replicas"] = json!(0);
        let mut held = workload_of(&s0, admitted());
        held.metadata.name = Some(legacy_name.clone());
        let s = run(&zero, &[], Some(&held));
        assert!(
            matches!(&s.writes[..], [Write::WorkloadStatus { workload: 0, .. }]),
            "{s:?}"
        );
        // Without a Workload, the set's own is made under the current name.
        let s = run(&s0, &[], None);
        let Some(Write::CreateWorkload { body, .. }) = s.writes.last() else {
            panic!("{s:?}")
        };
        assert_eq!(
            body["metadata"]["name"],
            pod_owner::workload_name(&p, &s0).as_str()
        );
    }

    #[test]
    fn an_unmarked_owner_is_not_looked_at() {
        let p = policy("apps", "StatefulSet");
        let owner = p.pod_owner.clone().unwrap();
        let (g, classes) = (gate(), PriorityClasses::default());
        let facts = Facts {
            policy: &p,
            owner: &owner,
            gate: &g,
            classes: &classes,
            now: &now(),
        };
        assert_eq!(group_selector(&facts, &sts()), Some(Some("app=web".into())));
        let mut bare = sts();
        bare["spec"]["template"]["metadata"]["annotations"] = json!({});
        assert_eq!(group_selector(&facts, &bare), None);
    }

    #[test]
    fn the_groups_workload_is_created_and_its_pods_marked_as_they_appear() {
        let pods = [sts_pod("web-0")];
        let s = run(&sts(), &pods, None);
        let [Write::PatchPod { pod: 0, ops }, Write::CreateWorkload { body, event }] =
            s.writes.as_slice()
        else {
            panic!("{s:?}");
        };
        assert_eq!(ops[0].op, "test");
        assert_eq!(body["spec"]["podSets"][0]["count"], 2);
        assert!(event
            .message
            .starts_with("Created Workload: ns/statefulset-web-"));
        assert_eq!(s.then, Then::After(GROUP_FILLING));
        // Scaled to zero or not queued: no Workload.
        let mut zero = sts();
        zero["spec"]["replicas"] = json!(0);
        assert!(run(&zero, &[], None).writes.is_empty());
    }

    /// Kueue v0.19.2 pkg/controller/jobs/statefulset:
    /// `TestReleaseScaleDownReservation` ("releases admitted workload",
    /// "ignores workload without active reservation", "ignores finished
    /// workload") and `TestReconciler_ClearOnHoldSetsReason`: scaled to
    /// zero, the admitted Workload gives its quota back on hold; scaled up
    /// again, it is taken off hold to queue.
    #[test]
    fn a_statefulset_scaled_to_zero_puts_its_workload_on_hold_until_scaled_up() {
        let mut zero = sts();
        zero["spec"]["replicas"] = json!(0);
        let wl = workload_of(&sts(), admitted());
        let s = run(&zero, &[], Some(&wl));
        let [Write::WorkloadStatus {
            workload: 0,
            status,
        }] = s.writes.as_slice()
        else {
            panic!("{s:?}");
        };
        assert_eq!(status["admission"], Value::Null);
        let conds: Vec<Value> = status["conditions"].as_array().unwrap().clone();
        let find = |ty: &str| conds.iter().find(|c| c["type"] == ty).unwrap().clone();
        let qr = find("QuotaReserved");
        assert_eq!(
            (&qr["status"], &qr["reason"], &qr["message"]),
            (
                &json!("False"),
                &json!("OnHold"),
                &json!("StatefulSet scaled to zero; workload on hold")
            )
        );
        assert_eq!(find("Admitted")["status"], "False");
        // The 10 s it was admitted are kept.
        assert_eq!(status["accumulatedPastExecutionTimeSeconds"], 10);
        // On hold: nothing more while at zero.
        let held: api::Workload = {
            let mut w = serde_json::to_value(&wl).unwrap();
            w["status"] = status.clone();
            serde_json::from_value(w).unwrap()
        };
        assert_eq!(run(&zero, &[], Some(&held)).writes, []);
        // Scaled up: off hold, to queue again.
        let s = run(&sts(), &[], Some(&held));
        let [Write::WorkloadStatus { status, .. }] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        let qr = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "QuotaReserved")
            .unwrap()
            .clone();
        assert_eq!(
            (&qr["status"], &qr["reason"], &qr["message"]),
            (
                &json!("False"),
                &json!("Pending"),
                &json!("Workload no longer on hold; waiting for quota reservation")
            )
        );
        // A finished, inactive or unreserved one is left as it is.
        let mut inactive = wl.clone();
        inactive.spec.active = Some(false);
        assert_eq!(run(&zero, &[], Some(&inactive)).writes, []);
        let mut st = admitted();
        st["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Finished",
            "status": "True", "reason": "Succeeded", "message": "Job finished successfully",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}));
        assert_eq!(run(&zero, &[], Some(&workload_of(&sts(), st))).writes, []);
        assert_eq!(
            run(&zero, &[], Some(&workload_of(&sts(), json!({})))).writes,
            []
        );
    }

    #[test]
    fn an_admitted_group_wakes_its_pods_and_follows_the_queue() {
        let s0 = sts();
        let wl = workload_of(&s0, admitted());
        let marked: Vec<Value> = ["web-0", "web-1"]
            .iter()
            .map(|n| {
                let p = sts_pod(n);
                let g = gate();
                let o = policy("apps", "StatefulSet").pod_owner.clone().unwrap();
                crate::jobs::workload::apply(
                    &p,
                    &pod_owner::member_patch(
                        &g,
                        &o,
                        &s0,
                        &p,
                        wl.metadata.name.as_deref().unwrap(),
                        false,
                    ),
                )
                .unwrap()
            })
            .collect();
        let s = run(&s0, &marked, Some(&wl));
        assert_eq!(
            s.writes,
            [Write::WakePod { pod: 0 }, Write::WakePod { pod: 1 }]
        );
        assert_eq!(s.then, Then::Wait);
        let mut moved = s0.clone();
        moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("other");
        let s = run(&moved, &[], Some(&wl));
        assert_eq!(
            s.writes[0],
            Write::WorkloadSpec {
                workload: 0,
                spec: json!({"queueName": "other"})
            }
        );
        assert_eq!(s.then, Then::After(GROUP_FILLING), "2 replicas, no pod yet");
    }

    #[test]
    fn a_workload_of_another_owner_is_left_alone() {
        let mut wl = workload_of(&sts(), admitted());
        wl.metadata.owner_references.as_mut().unwrap()[0].uid = "x".into();
        let mut moved = sts();
        moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("other");
        assert_eq!(run(&moved, &[], Some(&wl)).writes, []);
    }

    #[test]
    fn an_old_revision_pod_is_ungated_not_marked() {
        let mut s0 = sts();
        s0["status"] = json!({"currentRevision": "r1", "updateRevision": "r2"});
        let mut old = sts_pod("web-0");
        old["metadata"]["labels"]["controller-revision-hash"] = json!("r1");
        let wl = workload_of(&s0, json!({}));
        let s = run(&s0, &[old], Some(&wl));
        assert_eq!(
            s.writes,
            [Write::PatchPod {
                pod: 0,
                ops: vec![PatchOp {
                    op: "add",
                    path: "/spec/schedulingGates".into(),
                    value: json!([])
                }]
            }]
        );
    }

    /// A StatefulSet MultiKueue copied to this worker: its origin, the
    /// manager's UID, its own UID here.
    fn sts_copy() -> Value {
        let mut s = sts();
        s["metadata"]["uid"] = json!("worker-uid");
        s["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] = json!("mgr");
        s["metadata"]["annotations"] = json!({"kueue.x-k8s.io/multikueue-origin-uid": "sts-uid"});
        s
    }

    /// Kueue's StatefulSet reconciler on a worker (`isMultiKueueRemote`):
    /// no Workload of its own; the manager's copy, named from the
    /// manager's UID, becomes the set's; its pods are marked into it.
    #[test]
    fn a_multikueue_workers_statefulset_takes_the_managers_copy() {
        let copy = sts_copy();
        let pods = [sts_pod("web-0")];
        let s = run(&copy, &pods, None);
        assert!(
            !s.writes
                .iter()
                .any(|w| matches!(w, Write::CreateWorkload { .. })),
            "{s:?}"
        );
        // The manager's Workload, as copied: same name, no owner, the origin.
        let mut wl = workload_of(&sts(), json!({}));
        wl.metadata.owner_references = None;
        wl.metadata.labels = Some(
            [(
                "kueue.x-k8s.io/multikueue-origin".to_string(),
                "mgr".to_string(),
            )]
            .into(),
        );
        wl.metadata.resource_version = Some("7".into());
        assert_eq!(
            pod_owner::workload_name(&policy("apps", "StatefulSet"), &copy),
            wl.metadata.name.clone().unwrap(),
            "the worker looks for the manager's name"
        );
        let marked = s.writes.iter().find_map(|w| match w {
            Write::PatchPod { ops, .. } => Some(ops.clone()),
            _ => None,
        });
        let marked = crate::jobs::workload::apply(&pods[0], &marked.unwrap()).unwrap();
        assert_eq!(
            marked["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"],
            json!(wl.metadata.name)
        );
        let s = run(&copy, std::slice::from_ref(&marked), Some(&wl));
        let [Write::AdoptWorkload {
            workload: 0,
            metadata,
        }] = s.writes.as_slice()
        else {
            panic!("{s:?}");
        };
        assert_eq!(
            metadata,
            &json!({"resourceVersion": "7",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                         "name": "web", "uid": "worker-uid"}],
                    "annotations": {"kueue.x-k8s.io/job-owner-gvk": "apps/v1, Kind=StatefulSet",
                                    "kueue.x-k8s.io/job-owner-name": "web"}})
        );
        // Its pods took it first: the set joins them.
        wl.metadata.owner_references = Some(vec![serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "p0"}),
        )
        .unwrap()]);
        let s = run(&copy, std::slice::from_ref(&marked), Some(&wl));
        let [Write::AdoptWorkload { metadata, .. }] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        assert_eq!(metadata["ownerReferences"].as_array().unwrap().len(), 2);
        // Another object's controller, another origin, or not a copy: left.
        let mut theirs = wl.clone();
        theirs.metadata.owner_references = Some(vec![serde_json::from_value(
            json!({"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j", "controller": true}),
        )
        .unwrap()]);
        assert_eq!(
            run(&copy, std::slice::from_ref(&marked), Some(&theirs)).writes,
            []
        );
        let mut other = wl.clone();
        other.metadata.labels = Some(
            [(
                "kueue.x-k8s.io/multikueue-origin".to_string(),
                "other".to_string(),
            )]
            .into(),
        );
        assert_eq!(
            run(&copy, std::slice::from_ref(&marked), Some(&other)).writes,
            []
        );
        let mut local = sts_copy();
        local["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove("kueue.x-k8s.io/multikueue-origin");
        assert!(!run(&local, &[], Some(&wl))
            .writes
            .iter()
            .any(|w| matches!(w, Write::AdoptWorkload { .. })));
    }

    fn lws(replicas: i64) -> Value {
        json!({
            "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "lws", "namespace": "ns", "uid": "lws-uid",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": 2,
                "workerTemplate": {"spec": {"containers": [{"name": "c", "image": "i",
                    "resources": {"requests": {"cpu": "1"}}}]}}}},
        })
    }

    #[test]
    fn replica_groups_beyond_the_replicas_lose_their_workload_finalizer_first() {
        let p = policy("leaderworkerset.x-k8s.io", "LeaderWorkerSet");
        let owner = p.pod_owner.clone().unwrap();
        let groups = owner.replica_groups.clone().unwrap();
        let (g, classes) = (gate(), PriorityClasses::default());
        let facts = Facts {
            policy: &p,
            owner: &owner,
            gate: &g,
            classes: &classes,
            now: &now(),
        };
        let two = lws(2);
        let wls: Vec<api::Workload> = (0..2)
            .map(|i| {
                let mut b = pod_owner::group_workload_for(&p, &owner, &two, i, &classes).unwrap();
                b["metadata"]["uid"] = json!(format!("wl-{i}"));
                serde_json::from_value(b).unwrap()
            })
            .collect();
        // Scaled to one: the second group's Workload goes.
        let s = groups_step(&facts, &groups, &lws(1), &wls, &[], &[]).unwrap();
        assert_eq!(
            s.writes,
            [
                Write::RemoveFinalizer { workload: 1 },
                Write::DeleteWorkload { workload: 1 }
            ]
        );
        // Scaled to three: one more is created, none deleted.
        let s = groups_step(&facts, &groups, &lws(3), &wls, &[], &[]).unwrap();
        let [Write::CreateWorkload { body, .. }] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        assert_eq!(
            body["metadata"]["annotations"]["kueue.x-k8s.io/component-workload-index"],
            "2"
        );
        // A MultiKueue worker's copy: the manager's copies, none created
        // here.
        let mut copy = lws(3);
        copy["metadata"]["uid"] = json!("worker-uid");
        copy["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] = json!("mgr");
        copy["metadata"]["annotations"] =
            json!({"kueue.x-k8s.io/multikueue-origin-uid": "lws-uid"});
        assert!(groups_step(&facts, &groups, &copy, &[], &[], &[])
            .unwrap()
            .writes
            .is_empty());
        assert_eq!(
            pod_owner::group_workload_name(&p, &copy, 1),
            pod_owner::group_workload_name(&p, &lws(3), 1),
            "named from the manager's UID"
        );
        // Not queued: nothing at all.
        let mut bare = lws(1);
        bare["metadata"]["labels"] = json!({});
        assert!(groups_step(&facts, &groups, &bare, &wls, &[], &[])
            .unwrap()
            .writes
            .is_empty());
    }
}
