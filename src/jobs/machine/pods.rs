//! The gated kind's reconciler's decisions (Kueue's pod integration),
//! pure: a managed pod, the pods of its group (the watch's cache, oldest
//! first) and their Workload in; the writes, each naming the pod it is
//! about, and when to look again out. `controllers::pods` executes them.

use crate::vocabulary::pointer::At;
use std::time::Duration;

use serde_json::{json, Value};

use super::{deadlines, finished_status, reclaim_status, Note, Timer};
use crate::queueing::reservation::release;
use crate::{
    api::kueue::v1beta2::{self as api, condition, Conditions},
    jobs::{
        pod::{self, GroupProblem},
        policy::{Gate, Policy},
        readiness::Settings as Readiness,
        workload::{PodSetInfo, PriorityClasses, WorkloadError},
    },
    vocabulary::{
        keys::{self, PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL},
        patch::PatchOp,
    },
};

/// What a step knows besides the pods and their Workload.
pub struct Facts<'a> {
    pub policy: &'a Policy,
    pub gate: &'a Gate,
    pub classes: &'a PriorityClasses,
    /// What an admission adds to each pod set's template, from the cached
    /// flavors; `None` while one of its flavors is not cached yet.
    pub infos: &'a (dyn Fn(&api::Workload, &str) -> Option<Vec<PodSetInfo>> + Sync),
    /// waitForPodsReady in force (`None`: turned off).
    pub readiness: Option<&'a Readiness>,
    pub now: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    /// In [0, 1): the requeue backoff's jitter.
    pub jitter: f64,
}

/// Which pod a write is about: the one reconciled, or a member of its
/// group (an index into the members given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pod {
    This,
    Member(usize),
}

/// One write of a step, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// JSON-patch the pod; `event` on it when the patch applied.
    Patch {
        pod: Pod,
        ops: Vec<PatchOp>,
        event: Option<Note>,
    },
    /// Delete the pod (on the condition of its UID), then `event` on it.
    Delete { pod: Pod, event: Option<Note> },
    /// Create the Workload from this body; `event` on the reconciled pod
    /// once created.
    CreateWorkload { body: Value, event: Note },
    /// Merge-patch the Workload's status (on the resourceVersion read).
    WorkloadStatus(Value),
    /// Merge-patch the Workload's `spec` with this object.
    WorkloadSpec(Value),
    /// An event on the Workload.
    WorkloadEvent(Note),
    /// Let go of the Workload's `resource-in-use` finalizer.
    RemoveFinalizer,
    /// Merge-patch the Workload's metadata with this (a prebuilt Workload
    /// taken by its pods).
    AdoptWorkload(Value),
    /// An event on a pod.
    Event { pod: Pod, note: Note },
}

pub type Step = super::Step<Write>;

/// Whether the reconciler looks at this pod: a managed one, with a
/// namespace.
pub fn managed(gate: &Gate, this: &Value) -> bool {
    pod::label(this, &gate.managed_label) == Some(keys::MANAGED_VALUE)
        && this.at("/metadata/namespace").is_some()
}

pub fn deleting(p: &Value) -> bool {
    !matches!(
        p.at("/metadata/deletionTimestamp"),
        None | Some(Value::Null)
    )
}

/// The finalizer of each pod that holds it let go.
fn let_go<'a>(gate: &Gate, pods: impl Iterator<Item = (usize, &'a Value)>) -> Vec<Write> {
    pods.filter_map(|(i, p)| {
        let ops = pod::release_patch(gate, p);
        (!ops.is_empty()).then_some(Write::Patch {
            pod: Pod::Member(i),
            ops,
            event: None,
        })
    })
    .collect()
}

/// One reconcile of a managed pod: `members` the pods of its group (the
/// pod itself when it has none), oldest first; `wl` their Workload as read.
pub fn step(facts: &Facts, this: &Value, members: &[Value], wl: Option<&api::Workload>) -> Step {
    let gate = facts.gate;
    let group = pod::group_name(gate.group.as_ref(), this).is_some();
    let pods: Vec<&Value> = members.iter().collect();
    let all = || members.iter().enumerate();
    let ns = this
        .at("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let wl_name = pod::workload_name(gate, this);

    let Some(wl) = wl else {
        // Pods that ended or are going without a Workload hold nothing.
        let mut writes = let_go(
            gate,
            all().filter(|(_, p)| {
                !pod::is_runnable_or_succeeded(p)
                    || (!group && (pod::is_terminated(p) || deleting(p)))
            }),
        );
        if !group && (pod::is_terminated(this) || deleting(this)) {
            return Step::wait(writes);
        }
        if !pods.iter().any(|p| pod::is_gated(gate, p)) {
            // Started without a Workload (its gate was taken off by hand):
            // nothing to queue.
            return Step::wait(writes);
        }
        if names_prebuilt(this) {
            // A prebuilt Workload (a StatefulSet's) is made by its owner's
            // reconciler, which wakes the pods once it is there.
            return Step::after(writes, Duration::from_secs(5));
        }
        if let (true, Some(rule)) = (group, &gate.group) {
            match pod::check_group(rule, &pods) {
                Ok(_) => {}
                // Kueue waits for the rest of the group.
                Err(GroupProblem::TooFew(_)) => return Step::wait(writes),
                Err(GroupProblem::Inconsistent(m)) => {
                    writes.push(Write::Event {
                        pod: Pod::This,
                        note: Note::warning("ErrWorkloadCompose", m),
                    });
                    return Step::wait(writes);
                }
            }
        }
        let runnable: Vec<&Value> = pods
            .iter()
            .copied()
            .filter(|p| pod::is_runnable_or_succeeded(p))
            .collect();
        match pod::workload_for(facts.policy, gate, &runnable, facts.classes) {
            Ok(body) => {
                let event = Note::normal(
                    "CreatedWorkload",
                    format!("Created Workload: {ns}/{wl_name}"),
                );
                writes.push(Write::CreateWorkload { body, event });
                return Step::wait(writes);
            }
            Err(e) => {
                writes.push(Write::Event {
                    pod: Pod::This,
                    note: Note::warning("ErrWorkloadCompose", e.to_string()),
                });
                return Step::after(writes, Duration::from_secs(5));
            }
        }
    };

    if let Some(adopt) = adoption(this, members, wl, group) {
        // Owned, its changes wake these pods (a MultiKueue worker's copy
        // has no owner until they take it).
        return Step::after(vec![adopt], Duration::from_secs(1));
    }
    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    let now = facts.now;
    if conds.is_true(condition::FINISHED) {
        // Accounted for: the pods and the Workload are let go.
        let mut writes = let_go(gate, all());
        writes.push(Write::RemoveFinalizer);
        return Step::wait(writes);
    }
    if wl.metadata.deletion_timestamp.is_some() {
        // The Workload is going: its pods stop with it (Kueue's
        // StopReasonWorkloadDeleted deletes even gated ones).
        let mut writes: Vec<Write> = all()
            .filter(|(_, p)| !deleting(p))
            .map(|(i, _)| Write::Delete {
                pod: Pod::Member(i),
                event: None,
            })
            .collect();
        writes.extend(let_go(gate, all()));
        writes.push(Write::RemoveFinalizer);
        return Step::wait(writes);
    }
    // A group's own Workload (not a prebuilt one: Kueue keeps those in
    // sync by their owner) against its pods: excess pods deleted,
    // replaced ones let go, missing ones waited for; the rest of the step
    // sees the pods kept.
    let kept = match (group, names_prebuilt(this)) {
        (true, false) => {
            let sets: Vec<(&str, i64)> = wl
                .spec
                .pod_sets
                .iter()
                .flatten()
                .map(|ps| (ps.name.as_str(), i64::from(ps.count)))
                .collect();
            let r = pod::roster(gate, &sets, &pods, pod::fast_admission(this), now.0);
            let mut writes = Vec::new();
            // One Workload write a pass: each is conditioned on the
            // version read.
            if let Some(w) = new_owners(wl, &r.kept, &pods) {
                writes.extend(w);
            } else if let Some(conds) = replacement_condition(&conds, r.absent > 0, wl, now) {
                writes.push(Write::WorkloadStatus(json!({ "conditions": conds.0 })));
            }
            writes.extend(roster_writes(gate, &pods, &r));
            if !writes.is_empty() {
                return Step::wait(writes);
            }
            Some(r.kept)
        }
        _ => None,
    };
    let kept = |i: usize| kept.as_ref().is_none_or(|k| k.binary_search(&i).is_ok());
    let all = || members.iter().enumerate().filter(|(i, _)| kept(*i));
    let pods: Vec<&Value> = all().map(|(_, p)| p).collect();
    if let Some((succeeded, message)) = pod::finished(gate, &pods) {
        let reason = if succeeded { "Succeeded" } else { "Failed" };
        return Step::wait(vec![
            Write::WorkloadStatus(finished_status(wl, &conds, reason, &message, now)),
            Write::Event {
                pod: Pod::This,
                note: Note::normal(
                    "FinishedWorkload",
                    format!("Workload '{ns}/{wl_name}' is declared finished"),
                ),
            },
        ]);
    }
    // Dispatched by MultiKueue, the pods here stay gated: their readiness
    // and reclaim are the worker's to keep; the maximum execution time
    // and a deactivation are kept here too, as for a dispatched job.
    let dispatched = status.cluster_name.is_some();
    if let (false, true, Some(rule)) = (dispatched, group, &gate.group) {
        if !pod::is_serving(Some(rule), this) {
            let found = succeeded_by_role(&pods);
            if let Some(s) = reclaim_status(wl, &found) {
                return Step::wait(vec![Write::WorkloadStatus(s)]);
            }
        }
    }
    let ready = facts
        .readiness
        .filter(|_| !dispatched)
        .map(|settings| (settings, all_ready(gate, this, &pods, group)));
    let mut next = None;
    match deadlines(ready, wl, &conds, now, facts.jitter) {
        Timer::Expired(writes) => {
            return Step::wait(writes.into_iter().filter_map(workload_write).collect())
        }
        Timer::Left(d) => next = Some(d),
        Timer::Idle => {}
    }
    let then = |writes: Vec<Write>| match next {
        Some(d) => Step::after(writes, d),
        None => Step::wait(writes),
    };
    let reserved = conds.is_true(condition::QUOTA_RESERVED) && status.admission.is_some();
    if reserved && conds.is_true(condition::EVICTED) {
        // A pod cannot be suspended: the running ones are deleted (gated
        // ones stay gated), and the quota goes back once none runs.
        let msg = conds
            .get(condition::EVICTED)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        let stops: Vec<Write> = all()
            .filter(|(_, p)| !(pod::is_gated(gate, p) || pod::is_terminated(p) || deleting(p)))
            .map(|(i, _)| Write::Delete {
                pod: Pod::Member(i),
                event: Some(Note::normal("Stopped", msg.clone())),
            })
            .collect();
        if !stops.is_empty() {
            // Looked at again once the deletions are seen.
            return Step::after(stops, Duration::from_millis(500));
        }
        let mut writes: Vec<Write> = release(
            &conds.0,
            wl.metadata.generation,
            now,
            status.accumulated_past_execution_time_seconds,
        )
        .map(Write::WorkloadStatus)
        .into_iter()
        .collect();
        // Accounted for: the deleted pods may go.
        writes.extend(let_go(gate, all().filter(|(_, p)| deleting(p))));
        return Step::wait(writes);
    }
    if !group && deleting(this) {
        // A single pod deleted before it finished: its Workload goes with
        // it (garbage collected); the pod is let go now.
        return Step::wait(let_go(gate, all()));
    }
    if !reserved {
        // Holding no quota, a pod going holds nothing: let go. The pass
        // that released the quota let go only the pods it saw going, and a
        // concurrent pass's release of the same quota was refused.
        let writes = let_go(gate, all().filter(|(_, p)| deleting(p)));
        if !writes.is_empty() {
            return then(writes);
        }
    }
    if !(reserved && conds.is_true(condition::ADMITTED)) {
        // Pending: the pods stay gated.
        return then(Vec::new());
    }
    if status.cluster_name.is_some() {
        // Admitted on a MultiKueue worker, which runs the copies: here the
        // pods stay gated, their status mirrored (Kueue's
        // `ShouldSkipLocalExecution`).
        return Step::wait(Vec::new());
    }
    let queue = pod::label(this, QUEUE_NAME_LABEL).unwrap_or_default();
    let Some(infos) = (facts.infos)(wl, queue) else {
        return Step::after(Vec::new(), Duration::from_millis(200));
    };
    let cq = status
        .admission
        .as_ref()
        .and_then(|a| a.cluster_queue.clone())
        .unwrap_or_default();
    let mut writes = Vec::new();
    for (i, p) in all().filter(|(_, p)| pod::is_gated(gate, p)) {
        let info = if group {
            let role = pod::role_of(p);
            infos.iter().find(|info| info.name == role)
        } else {
            infos.first()
        };
        let started = match info {
            Some(info) => pod::ungate_patch(gate, p, info),
            None => Err(WorkloadError::PodSetCount {
                expected: 1,
                got: 0,
            }),
        };
        match started {
            Ok(ops) => writes.push(Write::Patch {
                pod: Pod::Member(i),
                ops,
                event: Some(Note::normal(
                    "Started",
                    format!("Admitted by clusterQueue {cq}"),
                )),
            }),
            Err(e) => {
                let message = e.to_string();
                let status = finished_status(wl, &conds, "FailedToStart", &message, now);
                writes.push(Write::WorkloadStatus(status));
                writes.push(Write::Event {
                    pod: Pod::Member(i),
                    note: Note::warning("FailedToStart", e.to_string()),
                });
                break;
            }
        }
    }
    then(writes)
}

/// Kueue's `removeExcessPods` and `finalizePods`: excess and replaced
/// pods are let go, then the excess ones deleted (event `ExcessPodDeleted`).
fn roster_writes(gate: &Gate, pods: &[&Value], r: &pod::Roster) -> Vec<Write> {
    let mut writes = let_go(
        gate,
        r.excess.iter().chain(&r.replaced).map(|&i| (i, pods[i])),
    );
    writes.extend(
        r.excess
            .iter()
            .filter(|&&i| !deleting(pods[i]))
            .map(|&i| Write::Delete {
                pod: Pod::Member(i),
                event: Some(Note::normal("ExcessPodDeleted", "Excess pod deleted")),
            }),
    );
    writes
}

/// Kueue's `EnsureWorkloadOwnedByAllMembers`: a group's Workload is owned
/// by every pod kept in it, replacements included (else it would be
/// collected with the pods they replace); event `OwnerReferencesAdded`.
fn new_owners(wl: &api::Workload, kept: &[usize], pods: &[&Value]) -> Option<Vec<Write>> {
    let refs = wl.metadata.owner_references.as_deref().unwrap_or_default();
    let missing: Vec<&Value> = kept
        .iter()
        .map(|&i| pods[i])
        .filter(|p| {
            let uid = p.at("/metadata/uid").and_then(Value::as_str);
            uid.is_some_and(|u| !refs.iter().any(|r| r.uid == u))
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut all: Vec<Value> = refs
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect();
    if let Some(Value::Array(added)) = pod::ownership(&missing, true).get("ownerReferences") {
        all.extend(added.iter().cloned());
    }
    Some(vec![
        Write::AdoptWorkload(json!({"metadata": {
            "resourceVersion": wl.metadata.resource_version,
            "ownerReferences": all,
        }})),
        Write::WorkloadEvent(Note::normal(
            "OwnerReferencesAdded",
            format!("Added {} owner reference(s)", missing.len()),
        )),
    ])
}

/// Kueue's `waitingForReplacementPodsCondition`: `WaitingForReplacementPods`
/// true while pods are missing (with the eviction's reason and message
/// when the Workload is evicted, else `PodsFailed`, "Some Failed pods need
/// replacement"), false (`PodsReady`, "No pods need replacement") once
/// none is; never written for a group that never missed one. The
/// conditions to write when they change.
fn replacement_condition(
    conds: &Conditions,
    waiting: bool,
    wl: &api::Workload,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> Option<Conditions> {
    let ty = condition::WAITING_FOR_REPLACEMENT_PODS;
    let current = conds.get(ty);
    let (reason, message) = match (waiting, current) {
        (false, None) => return None,
        (false, Some(c)) if c.status == "False" => return None,
        (false, Some(_)) => (
            "PodsReady".to_string(),
            "No pods need replacement".to_string(),
        ),
        (true, _) => match (conds.get(condition::EVICTED), current) {
            (Some(e), _) if e.status == "True" => (e.reason.clone(), e.message.clone()),
            (_, Some(c)) if c.status == "True" => return None,
            _ => (
                "PodsFailed".to_string(),
                "Some Failed pods need replacement".to_string(),
            ),
        },
    };
    if current.is_some_and(|c| {
        (c.status == "True") == waiting && c.reason == reason && c.message == message
    }) {
        return None;
    }
    let mut out = conds.clone();
    out.set(ty, waiting, &reason, &message, now, wl.metadata.generation);
    Some(out)
}

/// The job machine's Workload writes as this reconciler's.
fn workload_write(w: super::Write) -> Option<Write> {
    match w {
        super::Write::WorkloadStatus(s) => Some(Write::WorkloadStatus(s)),
        super::Write::WorkloadSpec(s) => Some(Write::WorkloadSpec(s)),
        super::Write::WorkloadEvent(n) => Some(Write::WorkloadEvent(n)),
        _ => None,
    }
}

/// Kueue's pod `PodsReady`: a single pod's `Ready` condition; a group's
/// pods all there (at least its total count) and all `Ready`.
fn all_ready(gate: &Gate, this: &Value, pods: &[&Value], group: bool) -> bool {
    let ready = |p: &Value| {
        p.at("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
            })
            .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
    };
    if !group {
        return ready(this);
    }
    let total = gate
        .group
        .as_ref()
        .and_then(|rule| pod::group_total_count(rule, this).ok());
    let Some(total) = total else {
        return false;
    };
    i64::try_from(pods.len()).is_ok_and(|n| n >= total) && pods.iter().all(|p| ready(p))
}

/// Kueue's pod group `ReclaimablePods`: the succeeded pods, by role (the
/// group's pod sets are its roles).
fn succeeded_by_role(pods: &[&Value]) -> Vec<(String, i64)> {
    let mut found: Vec<(String, i64)> = Vec::new();
    for p in pods.iter().filter(|p| pod::phase(p) == Some("Succeeded")) {
        let role = pod::role_of(p);
        match found.iter_mut().find(|(r, _)| *r == role) {
            Some((_, n)) => *n += 1,
            None => found.push((role, 1)),
        }
    }
    found
}

/// Kueue's `EnsurePrebuiltWorkloadOwnership` for pods: a prebuilt Workload
/// nobody owns yet is taken by the pod (its controller) or, for a group,
/// by every member (owners, as a group's own Workload is), conditioned on
/// the version read. One another object owns (a StatefulSet's) is left as
/// it is.
fn adoption(this: &Value, members: &[Value], wl: &api::Workload, group: bool) -> Option<Write> {
    let owned = wl
        .metadata
        .owner_references
        .as_ref()
        .is_some_and(|r| !r.is_empty());
    if !names_prebuilt(this) || owned || wl.metadata.deletion_timestamp.is_some() {
        return None;
    }
    // Owned as the pods' own Workload would be.
    let pods: Vec<&Value> = members.iter().collect();
    let mut metadata = pod::ownership(&pods, group);
    metadata["resourceVersion"] = serde_json::json!(wl.metadata.resource_version);
    Some(Write::AdoptWorkload(
        serde_json::json!({ "metadata": metadata }),
    ))
}

/// Does the pod name a prebuilt Workload (annotation, else label)?
fn names_prebuilt(this: &Value) -> bool {
    pod::annotation(this, PREBUILT_WORKLOAD_LABEL)
        .or_else(|| pod::label(this, PREBUILT_WORKLOAD_LABEL))
        .is_some_and(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use serde_json::json;

    use crate::jobs::machine::Then;
    use crate::jobs::policy::PolicySet;

    fn policy() -> Arc<Policy> {
        PolicySet::embedded()
            .unwrap()
            .find("", "v1", "Pod")
            .unwrap()
            .clone()
    }

    /// A gated managed pod in queue `lq`.
    fn pod(name: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                         "resourceVersion": "7", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/managed": "true"},
                         "finalizers": ["kueue.x-k8s.io/managed"]},
            "spec": {"containers": [{"name": "c", "image": "i",
                                     "resources": {"requests": {"cpu": "1"}}}],
                     "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
        })
    }

    fn grouped(name: &str, total: u32) -> Value {
        let mut p = pod(name);
        p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = json!("g");
        p["metadata"]["annotations"] =
            json!({"kueue.x-k8s.io/pod-group-total-count": total.to_string()});
        p
    }

    fn ungated(mut p: Value) -> Value {
        p["spec"]["schedulingGates"] = json!([]);
        p["status"] = json!({"phase": "Running"});
        p
    }

    fn phase(mut p: Value, phase: &str) -> Value {
        p["status"] = json!({"phase": phase});
        p
    }

    fn at(secs: i64) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::from_second(1_767_225_600 + secs).unwrap(),
        )
    }

    fn cond(ty: &str, status: bool, message: &str) -> Value {
        json!({"type": ty, "status": if status {"True"} else {"False"}, "reason": ty,
               "message": message, "lastTransitionTime": at(0)})
    }

    /// The Workload of `members` with `status`.
    fn workload(members: &[Value], status: Value) -> api::Workload {
        let p = policy();
        let gate = p.gate.clone().unwrap();
        let refs: Vec<&Value> = members.iter().collect();
        let mut body = pod::workload_for(&p, &gate, &refs, &PriorityClasses::default()).unwrap();
        body["metadata"]["uid"] = json!("wl-uid");
        body["metadata"]["resourceVersion"] = json!("3");
        body["status"] = status;
        serde_json::from_value(body).unwrap()
    }

    fn admitted() -> Value {
        json!({"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
                "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}]},
               "conditions": [cond("QuotaReserved", true, "m"), cond("Admitted", true, "m")]})
    }

    fn step_with(
        this: &Value,
        members: &[Value],
        wl: Option<&api::Workload>,
        flavors_known: bool,
    ) -> Step {
        step_under(this, members, wl, flavors_known, None)
    }

    fn step_under(
        this: &Value,
        members: &[Value],
        wl: Option<&api::Workload>,
        flavors_known: bool,
        readiness: Option<&Readiness>,
    ) -> Step {
        let p = policy();
        let gate = p.gate.clone().unwrap();
        let classes = PriorityClasses::default();
        let infos = move |wl: &api::Workload, _: &str| {
            flavors_known.then(|| {
                wl.status
                    .iter()
                    .flat_map(|s| s.admission.iter())
                    .flat_map(|a| a.pod_set_assignments.iter().flatten())
                    .map(|psa| PodSetInfo {
                        name: psa.name.clone(),
                        count: psa.count.map(i64::from),
                        ..PodSetInfo::default()
                    })
                    .collect()
            })
        };
        let now = at(100);
        let facts = Facts {
            policy: &p,
            gate: &gate,
            classes: &classes,
            infos: &infos,
            readiness,
            now: &now,
            jitter: 0.0,
        };
        step(&facts, this, members, wl)
    }

    fn run(this: &Value, members: &[Value], wl: Option<&api::Workload>) -> Step {
        step_with(this, members, wl, true)
    }

    fn releases(w: &Write) -> bool {
        matches!(w, Write::Patch { ops, event: None, .. }
            if ops.iter().any(|o| o.path.starts_with("/metadata/finalizers")))
    }

    #[test]
    fn only_managed_pods_are_the_reconcilers() {
        let gate = policy().gate.clone().unwrap();
        assert!(managed(&gate, &pod("a")));
        let mut p = pod("a");
        p["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "lq"});
        assert!(!managed(&gate, &p));
    }

    #[test]
    fn a_gated_pod_gets_its_workload() {
        let p = pod("a");
        let s = run(&p, std::slice::from_ref(&p), None);
        let [Write::CreateWorkload { body, event }] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        assert_eq!(body["spec"]["queueName"], "lq");
        assert!(
            event.message.starts_with("Created Workload: ns/pod-a-"),
            "{event:?}"
        );
    }

    #[test]
    fn a_pod_ungated_by_hand_or_ended_without_a_workload_holds_nothing() {
        let free = ungated(pod("a"));
        assert_eq!(run(&free, std::slice::from_ref(&free), None).writes, []);
        let failed = phase(pod("a"), "Failed");
        let s = run(&failed, std::slice::from_ref(&failed), None);
        assert!(s.writes.len() == 1 && releases(&s.writes[0]), "{s:?}");
    }

    #[test]
    fn a_group_waits_for_all_its_pods_and_refuses_inconsistent_ones() {
        let a = grouped("a", 2);
        assert_eq!(
            run(&a, std::slice::from_ref(&a), None),
            Step::wait(Vec::new())
        );
        let b = grouped("b", 3);
        let s = run(&a, &[a.clone(), b], None);
        let [Write::Event { note, .. }] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        assert!(
            note.warning && note.reason == "ErrWorkloadCompose",
            "{note:?}"
        );
        let both = [a.clone(), grouped("b", 2)];
        assert!(matches!(
            run(&a, &both, None).writes.as_slice(),
            [Write::CreateWorkload { .. }]
        ));
    }

    #[test]
    fn a_prebuilt_workload_is_waited_for() {
        let mut p = pod("a");
        p["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] = json!("sts-wl");
        assert_eq!(
            run(&p, std::slice::from_ref(&p), None),
            Step::after(Vec::new(), Duration::from_secs(5))
        );
    }

    #[test]
    fn an_admitted_pod_is_ungated_and_told_where() {
        let p = pod("a");
        let wl = workload(std::slice::from_ref(&p), admitted());
        let s = run(&p, std::slice::from_ref(&p), Some(&wl));
        let [Write::Patch {
            pod,
            ops,
            event: Some(n),
        }] = s.writes.as_slice()
        else {
            panic!("{s:?}");
        };
        assert_eq!(*pod, Pod::Member(0));
        assert!(
            ops.iter()
                .any(|o| o.path.starts_with("/spec/schedulingGates")),
            "{ops:?}"
        );
        assert_eq!(n.message, "Admitted by clusterQueue cq");
        // A flavor not cached yet: nothing now, soon again.
        let s = step_with(&p, std::slice::from_ref(&p), Some(&wl), false);
        assert_eq!(s, Step::after(Vec::new(), Duration::from_millis(200)));
        // Pending: the pod stays gated.
        let pending = workload(std::slice::from_ref(&p), json!({}));
        assert_eq!(
            run(&p, std::slice::from_ref(&p), Some(&pending)),
            Step::wait(Vec::new())
        );
    }

    /// Kueue's `EnsurePrebuiltWorkloadOwnership`: a pod naming a prebuilt
    /// Workload nobody owns (a MultiKueue worker's copy) takes it, the
    /// pod its controller; a group's members all become its owners; one
    /// owned by another object (a StatefulSet's) is left alone.
    #[test]
    fn an_ownerless_prebuilt_workload_is_taken_by_its_pods() {
        let named = |mut p: Value, wl: &str| {
            p["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] = json!(wl);
            p
        };
        let ownerless = |members: &[Value]| {
            let mut wl = workload(members, admitted());
            wl.metadata.owner_references = None;
            wl
        };
        let p = named(pod("a"), "wl1");
        let wl = ownerless(std::slice::from_ref(&p));
        let s = run(&p, std::slice::from_ref(&p), Some(&wl));
        let [Write::AdoptWorkload(patch)] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        assert_eq!(
            patch["metadata"]["ownerReferences"],
            json!([{"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": "uid-a",
                    "controller": true, "blockOwnerDeletion": true}])
        );
        assert_eq!(patch["metadata"]["resourceVersion"], "3");

        let members = [named(grouped("g0", 2), "g"), named(grouped("g1", 2), "g")];
        let wl = ownerless(&members);
        let s = run(&members[0], &members, Some(&wl));
        let [Write::AdoptWorkload(patch)] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        let names: Vec<&Value> = patch["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["name"])
            .collect();
        assert_eq!(names, [&json!("g0"), &json!("g1")]);

        // Owned by another object: not taken; the admitted pod starts.
        let owned = workload(std::slice::from_ref(&p), admitted());
        let s = run(&p, std::slice::from_ref(&p), Some(&owned));
        assert!(
            !s.writes
                .iter()
                .any(|w| matches!(w, Write::AdoptWorkload(_))),
            "{s:?}"
        );
    }

    /// Kueue's `ShouldSkipLocalExecution`: a pod whose Workload a
    /// MultiKueue worker admitted (`status.clusterName`) stays gated here;
    /// the copy runs there and its status is mirrored to this one.
    #[test]
    fn a_pod_admitted_on_a_multikueue_worker_stays_gated_here() {
        let p = pod("a");
        let mut status = admitted();
        status["clusterName"] = json!("worker1");
        let wl = workload(std::slice::from_ref(&p), status);
        assert_eq!(
            run(&p, std::slice::from_ref(&p), Some(&wl)),
            Step::wait(Vec::new())
        );
        // Its mirrored end finishes the Workload as any pod's.
        let done = phase(p.clone(), "Succeeded");
        let s = run(&done, std::slice::from_ref(&done), Some(&wl));
        assert!(
            matches!(s.writes.first(), Some(Write::WorkloadStatus(_))),
            "{s:?}"
        );
    }

    #[test]
    fn an_evicted_pod_is_deleted_and_the_quota_goes_back_once_it_is_gone() {
        let running = ungated(pod("a"));
        let mut st = admitted();
        st["conditions"]
            .as_array_mut()
            .unwrap()
            .push(cond("Evicted", true, "Preempted here"));
        let wl = workload(std::slice::from_ref(&running), st);
        let s = run(&running, std::slice::from_ref(&running), Some(&wl));
        let [Write::Delete {
            pod: Pod::Member(0),
            event: Some(n),
        }] = s.writes.as_slice()
        else {
            panic!("{s:?}");
        };
        assert_eq!(
            (n.reason.as_str(), n.message.as_str()),
            ("Stopped", "Preempted here")
        );
        assert_eq!(s.then, Then::After(Duration::from_millis(500)));
        // Going: the quota is released, then the pod let go.
        let mut going = running.clone();
        going["metadata"]["deletionTimestamp"] = json!(at(50));
        let s = run(&going, std::slice::from_ref(&going), Some(&wl));
        let [Write::WorkloadStatus(st), last] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        assert_eq!(st["admission"], Value::Null);
        assert!(releases(last), "{last:?}");
    }

    #[test]
    fn finished_pods_finish_their_workload_then_everything_is_let_go() {
        let done = phase(ungated(pod("a")), "Succeeded");
        let wl = workload(std::slice::from_ref(&done), admitted());
        let s = run(&done, std::slice::from_ref(&done), Some(&wl));
        let [Write::WorkloadStatus(st), Write::Event { note, .. }] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        assert_eq!(
            st["conditions"].as_array().unwrap().last().unwrap()["reason"],
            "Succeeded"
        );
        assert_eq!(note.reason, "FinishedWorkload");
        let mut st = admitted();
        st["conditions"]
            .as_array_mut()
            .unwrap()
            .push(cond("Finished", true, "done"));
        let finished = workload(std::slice::from_ref(&done), st);
        let s = run(&done, std::slice::from_ref(&done), Some(&finished));
        assert!(releases(&s.writes[0]), "{s:?}");
        assert_eq!(s.writes.last(), Some(&Write::RemoveFinalizer));
    }

    fn ready(mut p: Value) -> Value {
        p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        p
    }

    /// Kueue v0.19.2 `pod_controller_test.go` `TestPodsReady`, each case
    /// by its name.
    #[test]
    fn pods_ready_is_the_pods_ready_condition_and_a_whole_group() {
        let p = policy();
        let gate = p.gate.clone().unwrap();
        let member = |name: &str, total: &str, is_ready: bool| {
            let mut m = grouped(name, 3);
            m["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = json!(total);
            if is_ready {
                ready(m)
            } else {
                m
            }
        };
        let group = |total: &str, members: &[(&str, bool)]| -> (Value, Vec<Value>) {
            let pods: Vec<Value> = members.iter().map(|(n, r)| member(n, total, *r)).collect();
            (member("driver", total, false), pods)
        };
        let cases: Vec<(&str, Value, Vec<Value>, bool, bool)> = vec![
            ("single pod is ready", ready(pod("a")), vec![], false, true),
            ("single pod is not ready", pod("a"), vec![], false, false),
            {
                let (d, m) = group(
                    "3",
                    &[("driver", true), ("worker-1", true), ("worker-2", true)],
                );
                ("pod group with all pods ready", d, m, true, true)
            },
            {
                let (d, m) = group("3", &[("driver", true)]);
                ("pod group with fewer pods than expected", d, m, true, false)
            },
            {
                let (d, m) = group(
                    "3",
                    &[("driver", true), ("worker-1", false), ("worker-2", false)],
                );
                (
                    "pod group with all pods present but not all ready",
                    d,
                    m,
                    true,
                    false,
                )
            },
            {
                let (mut d, mut m) = group("3", &[("driver", true), ("worker-1", true)]);
                for p in std::iter::once(&mut d).chain(m.iter_mut()) {
                    p["metadata"]["annotations"] = json!({});
                }
                (
                    "pod group without total count annotation",
                    d,
                    m,
                    true,
                    false,
                )
            },
            {
                let (d, m) = group("invalid", &[("driver", true), ("worker-1", true)]);
                (
                    "pod group with malformed total count annotation",
                    d,
                    m,
                    true,
                    false,
                )
            },
        ];
        for (name, this, members, is_group, want) in cases {
            let members: Vec<&Value> = if members.is_empty() {
                vec![&this]
            } else {
                members.iter().collect()
            };
            assert_eq!(all_ready(&gate, &this, &members, is_group), want, "{name}");
        }
    }

    fn readiness(timeout_secs: i64) -> Readiness {
        Readiness {
            timeout_ms: timeout_secs * 1000,
            ..Readiness::default()
        }
    }

    /// Kueue's jobframework under waitForPodsReady for pods: the
    /// `PodsReady` condition follows the group, and a group admitted but
    /// not ready within the timeout is evicted `PodsReadyTimeout`.
    #[test]
    fn a_pod_group_admitted_but_not_ready_in_time_is_evicted() {
        let settings = readiness(60);
        let members = vec![ungated(grouped("a", 2)), ungated(grouped("b", 2))];
        let wl = workload(&members, admitted());
        // Admitted at 0, now 100: first the condition is written.
        let s = step_under(&members[0], &members, Some(&wl), true, Some(&settings));
        let [Write::WorkloadStatus(st)] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        let c = st["conditions"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            (c["type"].as_str(), c["status"].as_str()),
            (Some("PodsReady"), Some("False"))
        );
        // Then, 100 s > 60 s after admission, the eviction.
        let mut status = admitted();
        status["conditions"].as_array_mut().unwrap().push(c);
        let wl = workload(&members, status.clone());
        let s = step_under(&members[0], &members, Some(&wl), true, Some(&settings));
        let [Write::WorkloadStatus(st), Write::WorkloadEvent(note)] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        let evicted = st["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Evicted")
            .unwrap();
        assert_eq!(evicted["reason"], "PodsReadyTimeout");
        assert_eq!(note.reason, "EvictedDueToPodsReadyTimeout");
        // Ready in time, the condition turns true and nothing is evicted.
        let both: Vec<Value> = members.iter().cloned().map(ready).collect();
        let s = step_under(&both[0], &both, Some(&wl), true, Some(&settings));
        assert_eq!(pods_ready_written(&s), Some("True"));
        // Not yet timed out (a timeout of 200 s): looked at again in time.
        let s = step_under(
            &members[0],
            &members,
            Some(&wl),
            true,
            Some(&readiness(200)),
        );
        assert_eq!(s, Step::after(Vec::new(), Duration::from_secs(100)));
        // waitForPodsReady off: no condition, no deadline.
        assert_eq!(
            run(&members[0], &members, Some(&wl)),
            Step::wait(Vec::new())
        );
    }

    /// A single pod's Workload (the pod its controller) keeps Kueue's
    /// deadlines too: its maximum execution time marks it
    /// `DeactivationTarget`, then it is made inactive.
    #[test]
    fn a_single_pods_maximum_execution_time_deactivates_its_workload() {
        let p = ungated(pod("a"));
        let mut wl = workload(std::slice::from_ref(&p), admitted());
        wl.spec.maximum_execution_time_seconds = Some(50);
        let s = run(&p, std::slice::from_ref(&p), Some(&wl));
        let [Write::WorkloadStatus(st), Write::WorkloadEvent(note)] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        assert!(st["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "DeactivationTarget" && c["status"] == "True"));
        assert_eq!(note.reason, "MaximumExecutionTimeExceeded");
        let mut status = admitted();
        status["conditions"].as_array_mut().unwrap().push(cond(
            "DeactivationTarget",
            true,
            "exceeded",
        ));
        let wl = workload(std::slice::from_ref(&p), status);
        let s = run(&p, std::slice::from_ref(&p), Some(&wl));
        assert_eq!(
            s,
            Step::wait(vec![Write::WorkloadSpec(json!({"active": false}))])
        );
        // With time left, it is looked at again when it runs out.
        let mut wl = workload(std::slice::from_ref(&p), admitted());
        wl.spec.maximum_execution_time_seconds = Some(130);
        assert_eq!(
            run(&p, std::slice::from_ref(&p), Some(&wl)),
            Step::after(Vec::new(), Duration::from_secs(30))
        );
    }

    /// A group's Workload admitted with its one role at `count` pods.
    fn group_workload(members: &[Value], count: i32, mut status: Value) -> api::Workload {
        let role = pod::role_of(&members[0]);
        status["admission"]["podSetAssignments"][0]["name"] = json!(role);
        status["admission"]["podSetAssignments"][0]["count"] = json!(count);
        let mut wl = workload(members, status);
        for ps in wl.spec.pod_sets.iter_mut().flatten() {
            ps.count = count;
        }
        wl
    }

    /// A group evicted while its pods ran: the pass that released its
    /// quota let go only the pod it saw going; the other pod, going too,
    /// is let go by its own pass once the quota is released (its own
    /// release was refused for the newer version).
    #[test]
    fn a_going_pod_of_a_released_group_is_let_go() {
        let mut a = ungated(grouped("a", 2));
        let mut b = ungated(grouped("b", 2));
        for p in [&mut a, &mut b] {
            p["spec"]["nodeName"] = json!("n");
            p["metadata"]["deletionTimestamp"] = json!(at(5));
        }
        a["metadata"]["finalizers"] = json!([]);
        let members = vec![a, b];
        let mut wl = group_workload(&members, 2, admitted());
        wl.status = serde_json::from_value(json!({"conditions": [
            cond("QuotaReserved", false, "m"),
            cond("Admitted", false, "m"),
            cond("Evicted", true, "Preempted")
        ]}))
        .unwrap();
        let s = run(&members[1], &members, Some(&wl));
        assert!(
            s.writes.len() == 1 && releases_member(&s, 1),
            "{:?}",
            s.writes
        );
    }

    /// The `PodsReady` status a step's one write gives (the last condition).
    fn pods_ready_written(s: &Step) -> Option<&str> {
        let [Write::WorkloadStatus(st)] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        let c = st["conditions"].as_array()?.last()?;
        (c["type"] == "PodsReady").then(|| c["status"].as_str())?
    }

    /// A condition's status, reason and message.
    fn said(c: &Value) -> [&str; 3] {
        ["status", "reason", "message"].map(|k| c[k].as_str().unwrap_or_default())
    }

    fn releases_member(s: &Step, i: usize) -> bool {
        s.writes.iter().any(|w| {
            matches!(w, Write::Patch { pod: Pod::Member(m), .. } if *m == i) && releases(w)
        })
    }

    fn replacement_condition_of(s: &Step) -> Option<Value> {
        s.writes.iter().find_map(|w| match w {
            Write::WorkloadStatus(st) => st["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "WaitingForReplacementPods")
                .cloned(),
            _ => None,
        })
    }

    /// Kueue v0.19.2 `pod_controller_test.go` `TestReconciler` "replacement
    /// pod should be started for set of Running, Failed, Succeeded pods"
    /// (and "replacement pods are owning the workload"): the failed pod a
    /// replacement stands in for is let go, the replacement becomes an
    /// owner of the Workload (`OwnerReferencesAdded`, "Added 1 owner
    /// reference(s)") and is ungated under the same admission.
    #[test]
    fn a_failed_pod_of_a_retriable_group_is_replaced_under_the_same_admission() {
        let members = vec![
            ungated(grouped("a", 3)),
            phase(ungated(grouped("b", 3)), "Failed"),
            phase(ungated(grouped("c", 3)), "Succeeded"),
        ];
        let role = pod::role_of(&members[0]);
        let mut status = admitted();
        status["reclaimablePods"] = json!([{"name": role, "count": 1}]);
        let wl = group_workload(&members, 3, status);
        let mut all = members.clone();
        all.push(grouped("d", 3));
        let s = run(&all[3], &all, Some(&wl));
        let [Write::AdoptWorkload(meta), Write::WorkloadEvent(note), release] = s.writes.as_slice()
        else {
            panic!("{s:?}");
        };
        let refs: Vec<&str> = meta["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(refs, ["a", "b", "c", "d"]);
        assert_eq!(meta["metadata"]["resourceVersion"], "3");
        assert_eq!(
            (note.reason.as_str(), note.message.as_str()),
            ("OwnerReferencesAdded", "Added 1 owner reference(s)")
        );
        assert!(
            matches!(
                release,
                Write::Patch {
                    pod: Pod::Member(1),
                    ..
                }
            ) && releases(release),
            "{release:?}"
        );
        // Owned by the replacement and the failed pod let go: it starts.
        let mut wl = wl;
        wl.metadata.owner_references =
            serde_json::from_value(meta["metadata"]["ownerReferences"].clone()).unwrap();
        all[1]["metadata"]["finalizers"] = json!([]);
        let s = run(&all[3], &all, Some(&wl));
        assert!(
            matches!(s.writes.as_slice(), [Write::Patch { pod: Pod::Member(3), event: Some(n), .. }]
                if n.reason == "Started"),
            "{s:?}"
        );
        assert_eq!(replacement_condition_of(&s), None, "never missed a pod");
    }

    /// Kueue v0.19.2 `pod_controller_test.go` "should set waiting for pods
    /// ready condition to true when at least one pod failed" and "...to
    /// false when pods was replaced"; with an eviction, its reason and
    /// message (`waitingForReplacementPodsCondition`).
    #[test]
    fn a_group_missing_a_failed_pod_waits_for_its_replacement() {
        let members = vec![
            ungated(grouped("a", 2)),
            phase(ungated(grouped("b", 2)), "Failed"),
        ];
        let wl = group_workload(&members, 2, admitted());
        let s = run(&members[0], &members, Some(&wl));
        let c = replacement_condition_of(&s).expect("condition written");
        assert_eq!(
            said(&c),
            ["True", "PodsFailed", "Some Failed pods need replacement"]
        );
        // Not replaced yet: the failed pod keeps its finalizer.
        assert!(!s.writes.iter().any(releases), "{s:?}");
        // Written: nothing more.
        let mut status = admitted();
        status["conditions"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::to_value(&c).unwrap());
        let waiting = group_workload(&members, 2, status.clone());
        assert_eq!(
            run(&members[0], &members, Some(&waiting)).writes,
            Vec::new()
        );
        // Evicted: the eviction's reason and message.
        let mut evicted = status.clone();
        evicted["conditions"].as_array_mut().unwrap().push(json!({
            "type": "Evicted", "status": "True", "reason": "Preempted",
            "message": "Preempted to accommodate a workload", "lastTransitionTime": at(0)}));
        let s = run(
            &members[0],
            &members,
            Some(&group_workload(&members, 2, evicted)),
        );
        let c = replacement_condition_of(&s).expect("condition written");
        assert_eq!(
            said(&c),
            ["True", "Preempted", "Preempted to accommodate a workload"]
        );
        // Replaced: false, and the failed pod let go.
        let mut all = members.clone();
        all.push(ungated(grouped("c", 2)));
        let mut owned = waiting.clone();
        owned.metadata.owner_references = pod::ownership(&all.iter().collect::<Vec<_>>(), true)
            ["ownerReferences"]
            .as_array()
            .map(|r| serde_json::from_value(Value::Array(r.clone())).unwrap());
        let s = run(&all[0], &all, Some(&owned));
        let c = replacement_condition_of(&s).expect("condition written");
        assert_eq!(said(&c), ["False", "PodsReady", "No pods need replacement"]);
        assert!(releases_member(&s, 1), "{s:?}");
        // The failed pod, let go, no longer counts: the pods kept are the
        // group (Kueue's PodsReady over them), and it is ready.
        let mut status = admitted();
        status["conditions"].as_array_mut().unwrap().push(cond(
            "WaitingForReplacementPods",
            false,
            "No pods need replacement",
        ));
        let mut owned = owned.clone();
        owned.status = serde_json::from_value(status).unwrap();
        let mut done: Vec<Value> = all.iter().cloned().map(ready).collect();
        done[1] = phase(all[1].clone(), "Failed");
        done[1]["metadata"]["finalizers"] = json!([]);
        let s = step_under(&done[0], &done, Some(&owned), true, Some(&readiness(200)));
        assert_eq!(pods_ready_written(&s), Some("True"));
    }

    /// Kueue v0.19.2 `pod_controller_test.go` "excess pods in pod set after
    /// admission, youngest pods are deleted" and "delete excess pod that is
    /// gated": beyond the pod set's count, the gated, newer pod is let go
    /// and deleted (`ExcessPodDeleted`, "Excess pod deleted"); once it is
    /// going it is not deleted again.
    #[test]
    fn excess_pods_of_a_group_are_deleted_youngest_first() {
        let a = ungated(grouped("a", 1));
        let mut b = grouped("b", 1);
        b["metadata"]["creationTimestamp"] = json!("2026-01-01T00:02:00Z");
        let wl = group_workload(std::slice::from_ref(&a), 1, admitted());
        let members = vec![b.clone(), a.clone()];
        let s = run(&members[0], &members, Some(&wl));
        let owners = s
            .writes
            .iter()
            .any(|w| matches!(w, Write::AdoptWorkload(_)));
        assert!(!owners, "an excess pod is not made an owner: {s:?}");
        assert!(releases_member(&s, 0), "{s:?}");
        assert!(
            s.writes.iter().any(|w| matches!(w,
                Write::Delete { pod: Pod::Member(0), event: Some(n) }
                    if n.reason == "ExcessPodDeleted" && n.message == "Excess pod deleted")),
            "{s:?}"
        );
        assert!(!s.writes.iter().any(|w| matches!(
            w,
            Write::Delete {
                pod: Pod::Member(1),
                ..
            }
        )));
        // Going, let go: nothing more.
        b["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:03:00Z");
        b["metadata"]["finalizers"] = json!([]);
        let s = run(&b, &[b.clone(), a.clone()], Some(&wl));
        assert!(
            !s.writes.iter().any(|w| matches!(w, Write::Delete { .. })),
            "{s:?}"
        );
    }

    /// Kueue v0.19.2 `pod_controller_test.go` `TestReconciler` "reclaimable
    /// pods updated for pod group" and "reclaimablePods field is not
    /// updated for a serving pod group".
    #[test]
    fn a_groups_succeeded_pods_are_reclaimable_unless_it_serves() {
        let mut heavy = grouped("c", 3);
        heavy["spec"]["containers"][0]["resources"]["requests"]["memory"] = json!("1Gi");
        let members = vec![
            phase(ungated(grouped("a", 3)), "Failed"),
            ungated(grouped("b", 3)),
            phase(ungated(heavy), "Succeeded"),
        ];
        // As Kueue's case: the failed pod already awaits its replacement.
        let admitted = || {
            let mut status = admitted();
            status["conditions"].as_array_mut().unwrap().push(cond(
                "WaitingForReplacementPods",
                true,
                "PodsFailed",
            ));
            status
        };
        // Kueue's pod sets: two of the failed pod's role, one of the other.
        let workload = |members: &[Value], status: Value| {
            let mut wl = workload(members, status);
            let role = pod::role_of(&members[0]);
            for ps in wl.spec.pod_sets.iter_mut().flatten() {
                if ps.name == role {
                    ps.count = 2;
                }
            }
            wl
        };
        let wl = workload(&members, admitted());
        let role = pod::role_of(&members[2]);
        let s = run(&members[1], &members, Some(&wl));
        assert_eq!(
            s,
            Step::wait(vec![Write::WorkloadStatus(
                json!({"reclaimablePods": [{"name": role, "count": 1}]})
            )])
        );
        // Recorded: nothing more.
        let mut status = admitted();
        status["reclaimablePods"] = json!([{"name": role, "count": 1}]);
        let wl = workload(&members, status);
        assert_eq!(
            run(&members[1], &members, Some(&wl)),
            Step::wait(Vec::new())
        );
        // A serving group reclaims nothing.
        let serving: Vec<Value> = members
            .iter()
            .cloned()
            .map(|mut p| {
                p["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-serving"] = json!("true");
                p
            })
            .collect();
        let wl = workload(&serving, admitted());
        assert_eq!(
            run(&serving[1], &serving, Some(&wl)),
            Step::wait(Vec::new())
        );
    }

    /// Dispatched by MultiKueue (`status.clusterName`), the pods here stay
    /// gated: no readiness is read from them, but the Workload's maximum
    /// execution time is kept here, as for a dispatched job.
    #[test]
    fn a_dispatched_pods_workload_keeps_its_execution_time_but_not_readiness() {
        let p = pod("a");
        let mut st = admitted();
        st["clusterName"] = json!("worker1");
        let mut wl = workload(std::slice::from_ref(&p), st);
        let settings = readiness(60);
        assert_eq!(
            step_under(
                &p,
                std::slice::from_ref(&p),
                Some(&wl),
                true,
                Some(&settings)
            ),
            Step::wait(Vec::new())
        );
        wl.spec.maximum_execution_time_seconds = Some(50);
        let s = step_under(
            &p,
            std::slice::from_ref(&p),
            Some(&wl),
            true,
            Some(&settings),
        );
        assert!(
            matches!(s.writes.as_slice(), [Write::WorkloadStatus(_), Write::WorkloadEvent(n)] if n.reason == "MaximumExecutionTimeExceeded"),
            "{s:?}"
        );
    }

    #[test]
    fn a_deleted_workload_takes_its_pods_with_it() {
        let p = pod("a");
        let mut wl = workload(std::slice::from_ref(&p), admitted());
        wl.metadata.deletion_timestamp = Some(at(40));
        let s = run(&p, std::slice::from_ref(&p), Some(&wl));
        assert_eq!(
            s.writes[0],
            Write::Delete {
                pod: Pod::Member(0),
                event: None
            }
        );
        assert!(releases(&s.writes[1]));
        assert_eq!(s.writes[2], Write::RemoveFinalizer);
    }

    #[test]
    fn a_single_pod_deleted_before_it_finished_is_let_go() {
        let mut p = ungated(pod("a"));
        p["metadata"]["deletionTimestamp"] = json!(at(50));
        let wl = workload(std::slice::from_ref(&p), admitted());
        let s = run(&p, std::slice::from_ref(&p), Some(&wl));
        assert!(s.writes.len() == 1 && releases(&s.writes[0]), "{s:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever the states: a pod is deleted only when its Workload is
        /// going or evicted with quota, and ungated only with a live
        /// admission.
        #[test]
        fn pods_are_deleted_or_started_only_by_their_workloads_state(
            flags in proptest::collection::vec(any::<bool>(), 4),
            gated in any::<bool>(),
            going in any::<bool>(),
            has_admission in any::<bool>(),
            wl_going in any::<bool>(),
        ) {
            let mut p = if gated { pod("a") } else { ungated(pod("a")) };
            if going {
                p["metadata"]["deletionTimestamp"] = json!(at(1));
            }
            let types = ["QuotaReserved", "Admitted", "Evicted", "Finished"];
            let conds: Vec<Value> = types.iter().zip(&flags).map(|(t, on)| cond(t, *on, "m")).collect();
            let mut st = json!({"conditions": conds});
            if has_admission {
                st["admission"] = admitted()["admission"].clone();
            }
            let mut wl = workload(std::slice::from_ref(&p), st);
            if wl_going {
                wl.metadata.deletion_timestamp = Some(at(2));
            }
            let s = run(&p, std::slice::from_ref(&p), Some(&wl));
            let [reserved, admitted, evicted, finished] = flags[..] else { unreachable!() };
            for w in &s.writes {
                if matches!(w, Write::Delete { .. }) {
                    prop_assert!(!finished && (wl_going || (reserved && has_admission && evicted)), "{w:?} {flags:?}");
                }
                if let Write::Patch { event: Some(n), .. } = w {
                    prop_assert!(n.reason == "Started");
                    prop_assert!(reserved && admitted && has_admission && !evicted && !finished && !wl_going);
                }
                prop_assert!(!matches!(w, Write::CreateWorkload { .. }), "a second Workload");
            }
        }
    }
}
