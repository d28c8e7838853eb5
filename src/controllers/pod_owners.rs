//! The reconciler of a kind queued through its pods as one pod group (a
//! policy with `podOwner.group`: Kueue's StatefulSet reconcilers): it makes
//! the group's Workload from the owner (replicas > 0, queued), keeps its
//! queue name in step, marks each pod the owner creates into the group (the
//! pod integration's reconciler then ungates it once the Workload is
//! admitted, and keeps ungating replaced pods in serving mode), lets an
//! old-revision pod go during a rollout, and wakes the group's pods when
//! the Workload changes. What is written comes from `jobs::pod_owner`.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    api::{DeleteParams, DynamicObject, ListParams, Patch, Preconditions},
    core::{ApiResource, GroupVersionKind},
    runtime::{
        controller::Action,
        events::{Event as KEvent, EventType},
        reflector::ObjectRef,
        watcher,
    },
    Api, ResourceExt,
};
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::{
    context::{create_workload, params, remove_workload_finalizer, JobError, Shared},
    pods::resource_of,
    translation::Conditions,
};
use crate::vocabulary::{keys, patch::PatchOp};
use crate::{
    api::kueue::v1beta2::{self as api, condition},
    jobs::{
        pod as core_pod, pod_owner,
        policy::{Gate, PodOwner, Policy},
    },
};

struct Ctx {
    shared: Shared,
    policy: Arc<Policy>,
    owner: PodOwner,
    gate: Gate,
    pods: ApiResource,
    /// Wakes the pod integration's reconciler for a group's pods.
    pod_wakes: futures::channel::mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
}

/// Runs the reconciler of `policy` (with `podOwner.group`) until the
/// process ends, woken by the owners' changes and by `wakes` (their
/// Workloads' changes); `pod_policy` is the pod integration whose
/// reconciler `pod_wakes` reaches.
pub async fn run(
    shared: Shared,
    policy: Arc<Policy>,
    pod_policy: Arc<Policy>,
    wakes: futures::channel::mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>,
    pod_wakes: futures::channel::mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
) {
    let (Some(owner), Some(gate)) = (policy.pod_owner.clone(), pod_policy.gate.clone()) else {
        return;
    };
    if owner.group.is_none() && owner.replica_groups.is_none() {
        return;
    }
    let resource = resource_of(&policy);
    let api = Api::<DynamicObject>::all_with(shared.client.clone(), &resource);
    let pods = resource_of(&pod_policy);
    let ctx = Arc::new(Ctx {
        shared: shared.clone(),
        policy: policy.clone(),
        owner: owner.clone(),
        gate,
        pods: pods.clone(),
        pod_wakes,
    });
    let name = policy.name.clone();
    let log = move |r: Result<_, _>| {
        if let Err(e) = r {
            debug!(integration = %name, error = %e, "reconcile");
        }
        futures::future::ready(())
    };
    let controller =
        crate::cluster::watch::controller(api, watcher::Config::default(), resource.clone())
            .reconcile_on(wakes);
    match owner.replica_groups {
        // One group per replica (LeaderWorkerSet): the owner's pods wake it
        // too (Kueue's lwsPodHandler: the pods its name label points to).
        Some(groups) => {
            let pod_api = Api::<DynamicObject>::all_with(shared.client.clone(), &pods);
            let label = groups.owner_label.clone();
            controller
                .watches_with(
                    pod_api,
                    pods,
                    watcher::Config::default().labels(&groups.owner_label),
                    move |pod: DynamicObject| {
                        let ns = pod.namespace();
                        pod.labels()
                            .get(&label)
                            .cloned()
                            .zip(ns)
                            .map(|(n, ns)| ObjectRef::new_with(&n, resource.clone()).within(&ns))
                    },
                )
                .run(reconcile_groups, error_policy, ctx)
                .for_each(log)
                .await
        }
        None => {
            controller
                .run(reconcile, error_policy, ctx)
                .for_each(log)
                .await
        }
    }
}

fn error_policy(obj: Arc<DynamicObject>, err: &JobError, _ctx: Arc<Ctx>) -> Action {
    warn!(object = %obj.name_any(), namespace = obj.namespace().unwrap_or_default(), error = %err, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(2))
}

impl Ctx {
    async fn event(&self, obj: &Value, reason: &str, note: String) {
        let at = |p: &str| obj.pointer(p).and_then(Value::as_str).map(String::from);
        let reference = ObjectReference {
            api_version: Some(self.policy.target.api_version()),
            kind: Some(self.policy.target.kind.clone()),
            name: at("/metadata/name"),
            namespace: at("/metadata/namespace"),
            uid: at("/metadata/uid"),
            ..Default::default()
        };
        let ev = KEvent {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note),
            action: reason.into(),
            secondary: None,
        };
        if let Err(e) = self.shared.recorder.publish(&ev, &reference).await {
            debug!(error = %e, "event not recorded");
        }
    }

    async fn patch_pod(&self, ns: &str, pod: &Value, ops: &[PatchOp]) -> Result<(), JobError> {
        if ops.is_empty() {
            return Ok(());
        }
        let name = pod
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let p: json_patch::Patch = serde_json::from_value(serde_json::to_value(ops)?)?;
        let api = Api::<DynamicObject>::namespaced_with(self.shared.client.clone(), ns, &self.pods);
        match api.patch(name, &params(), &Patch::<()>::Json(p)).await {
            Ok(_) => Ok(()),
            // Changed or gone meanwhile: the next pass sees it again.
            Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409 | 422) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// The patch that takes the gates off an old-revision pod.
fn ungate_ops(gate: &Gate, pod: &Value) -> Vec<PatchOp> {
    if !core_pod::is_gated(gate, pod) {
        return Vec::new();
    }
    let rest: Vec<Value> = pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|g| {
            let n = g.get("name").and_then(Value::as_str);
            n != Some(gate.scheduling_gate.as_str()) && n != Some(keys::TOPOLOGY_GATE)
        })
        .cloned()
        .collect();
    vec![PatchOp {
        op: "add",
        path: "/spec/schedulingGates".into(),
        value: Value::Array(rest),
    }]
}

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let Some(ns) = obj.namespace() else {
        return Ok(Action::await_change());
    };
    let this = serde_json::to_value(&*obj)?;
    let (policy, owner) = (&ctx.policy, &ctx.owner);
    let Some(group) = &owner.group else {
        return Ok(Action::await_change());
    };
    if !pod_owner::marked(policy, owner, &this) {
        return Ok(Action::await_change());
    }
    let replicas = pod_owner::replicas(group, &this);
    let queue = core_pod::label(&this, keys::QUEUE_NAME_LABEL)
        .filter(|q| !q.is_empty())
        .map(String::from);
    let wl_name = pod_owner::workload_name(policy, &this);

    // The owner's pods: marked into its group as they appear.
    let pod_api = Api::<DynamicObject>::namespaced_with(ctx.shared.client.clone(), &ns, &ctx.pods);
    let mut members = Vec::new();
    if let Some(sel) = pod_owner::selector(group, &this) {
        let list = pod_api.list(&ListParams::default().labels(&sel)).await?;
        for p in list.items {
            let pod = serde_json::to_value(&p)?;
            if !pod_owner::from_owner(policy, &pod) {
                continue;
            }
            if core_pod::is_terminated(&pod) || p.metadata.deletion_timestamp.is_some() {
                continue;
            }
            if pod_owner::old_revision(&this, &pod) {
                ctx.patch_pod(&ns, &pod, &ungate_ops(&ctx.gate, &pod))
                    .await?;
                continue;
            }
            ctx.patch_pod(
                &ns,
                &pod,
                &pod_owner::member_patch(&ctx.gate, owner, &this, &pod, false),
            )
            .await?;
            members.push(p);
        }
    }

    let wl_api = Api::<api::Workload>::namespaced(ctx.shared.client.clone(), &ns);
    let Some(wl) = wl_api.get_opt(&wl_name).await? else {
        if replicas > 0 && queue.is_some() {
            let body = pod_owner::workload_for(policy, owner, &this, &ctx.shared.classes())?;
            if create_workload(&ctx.shared.client, &ns, body).await? {
                ctx.event(
                    &this,
                    "CreatedWorkload",
                    format!("Created Workload: {ns}/{wl_name}"),
                )
                .await;
            }
        }
        return Ok(Action::requeue(Duration::from_secs(2)));
    };
    if !crate::jobs::workload::is_owned_by(
        wl.metadata.owner_references.as_deref(),
        obj.uid().as_deref().unwrap_or_default(),
    ) {
        // The name is taken by a Workload that is not this object's: left
        // alone, never changed on its behalf.
        return Ok(Action::await_change());
    }
    if replicas > 0 {
        if let Some(q) = &queue {
            if wl.spec.queue_name.as_deref() != Some(q.as_str()) {
                wl_api
                    .patch(
                        &wl_name,
                        &params(),
                        &Patch::Merge(json!({"spec": {"queueName": q}})),
                    )
                    .await?;
            }
        }
    }
    // The pod integration ungates the group's pods once admitted.
    let status = wl.status.clone().unwrap_or_default();
    if Conditions::of(status.conditions.as_ref()).is_true(condition::ADMITTED) {
        for p in &members {
            let _ = ctx
                .pod_wakes
                .unbounded_send(ObjectRef::new_with(&p.name_any(), ctx.pods.clone()).within(&ns));
        }
    }
    // Pods appear one by one: looked at again until the whole group is in.
    if (members.len() as i64) < replicas {
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    Ok(Action::await_change())
}

/// The reconciler of an owner with one pod group per replica (Kueue's
/// LeaderWorkerSet reconciler): the groups' Workloads made, kept in step
/// (queue name) and deleted beyond `replicas`; each pod of the owner
/// marked into its group's Workload, or let go when its StatefulSet is not
/// the owner's or rolls it out; the group's pods woken once admitted.
async fn reconcile_groups(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let Some(ns) = obj.namespace() else {
        return Ok(Action::await_change());
    };
    let this = serde_json::to_value(&*obj)?;
    let (policy, owner) = (&ctx.policy, &ctx.owner);
    let Some(groups) = &owner.replica_groups else {
        return Ok(Action::await_change());
    };
    // Kueue's predicate: only an object it would suspend (queued).
    let queue = core_pod::label(&this, keys::QUEUE_NAME_LABEL)
        .filter(|q| !q.is_empty())
        .map(String::from);
    let Some(queue) = queue else {
        return Ok(Action::await_change());
    };
    let uid = obj.uid().unwrap_or_default();
    let name = obj.name_any();

    // The Workloads, one per group: those the object owns (Kueue's owner
    // index; older ones may lack the job-uid label).
    let wl_api = Api::<api::Workload>::namespaced(ctx.shared.client.clone(), &ns);
    let owned: Vec<api::Workload> = wl_api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|w| {
            crate::jobs::workload::is_owned_by(w.metadata.owner_references.as_deref(), &uid)
        })
        .collect();
    let names: Vec<String> = owned.iter().map(ResourceExt::name_any).collect();
    let (create, keep, delete) = pod_owner::group_plan(policy, groups, &this, &names);
    for (wl_name, index) in create {
        let body =
            pod_owner::group_workload_for(policy, owner, &this, index, &ctx.shared.classes())?;
        if create_workload(&ctx.shared.client, &ns, body).await? {
            ctx.event(
                &this,
                "CreatedWorkload",
                format!("Created Workload: {ns}/{wl_name}"),
            )
            .await;
        }
    }
    let mut admitted = Vec::new();
    for wl in owned.iter() {
        let wl_name = wl.name_any();
        if delete.contains(&wl_name) {
            // Kueue's workload.Delete: the finalizer goes first, so the
            // quota is returned at once.
            remove_workload_finalizer(&wl_api, &wl.metadata).await?;
            if wl.metadata.deletion_timestamp.is_none() {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: wl.metadata.uid.clone(),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                match wl_api.delete(&wl_name, &dp).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(e.into()),
                }
            }
            continue;
        }
        if keep.contains(&wl_name) {
            // Kueue's updateWorkload: the queue name, and the priority of a
            // WorkloadPriorityClass (UpdateWorkloadPriority), follow the set.
            let mut spec_patch = serde_json::Map::new();
            if wl.spec.queue_name.as_deref() != Some(queue.as_str()) {
                spec_patch.insert("queueName".into(), json!(queue));
            }
            if let Ok(prio) = pod_owner::group_priority(owner, &this, &ctx.shared.classes()) {
                if let crate::jobs::workload::PrioritySource::WorkloadPriorityClass(_) = prio.source
                {
                    if wl.spec.priority != Some(prio.value) {
                        spec_patch.insert("priority".into(), json!(prio.value));
                    }
                }
            }
            if !spec_patch.is_empty() {
                let patch = json!({"spec": spec_patch});
                super::vetting::merge_patch(&serde_json::to_value(wl)?, &patch)?;
                wl_api
                    .patch(&wl_name, &params(), &Patch::Merge(&patch))
                    .await?;
            }
            let status = wl.status.clone().unwrap_or_default();
            if Conditions::of(status.conditions.as_ref()).is_true(condition::ADMITTED) {
                admitted.push(wl_name);
            }
        }
    }

    // The owner's pods, then its StatefulSets (their rollouts let old pods
    // go). In this order a listed pod's StatefulSet, created before it, is
    // listed too: the other way round, one created between the two lists
    // would be missing, and its new pod let go unmarked.
    let selector = format!("{}={name}", groups.owner_label);
    let pod_api = Api::<DynamicObject>::namespaced_with(ctx.shared.client.clone(), &ns, &ctx.pods);
    let pods = pod_api
        .list(&ListParams::default().labels(&selector))
        .await?
        .items;
    let sts_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps", "v1", "StatefulSet"),
        "statefulsets",
    );
    let sts_api =
        Api::<DynamicObject>::namespaced_with(ctx.shared.client.clone(), &ns, &sts_resource);
    let sets: Vec<Value> = sts_api
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .iter()
        .filter_map(|s| serde_json::to_value(s).ok())
        .collect();
    let mut waiting = false;
    for p in pods {
        let pod = serde_json::to_value(&p)?;
        if !pod_owner::from_owner(policy, &pod) {
            continue;
        }
        let sts = p
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true) && o.kind == "StatefulSet")
            .and_then(|o| {
                sets.iter().find(|s| {
                    s.pointer("/metadata/name").and_then(Value::as_str) == Some(o.name.as_str())
                })
            });
        match pod_owner::group_pod(sts, &pod) {
            pod_owner::GroupPod::LetGo => {
                ctx.patch_pod(&ns, &pod, &ungate_ops(&ctx.gate, &pod))
                    .await?;
            }
            pod_owner::GroupPod::Leave => {}
            pod_owner::GroupPod::Mark => {
                let ops = pod_owner::group_member_patch(&ctx.gate, policy, owner, &this, &pod);
                if core_pod::label(&pod, &groups.index_label).is_none() {
                    // The group index comes from the LWS pod webhook; Kueue
                    // waits for it.
                    waiting = true;
                }
                ctx.patch_pod(&ns, &pod, &ops).await?;
                let in_admitted = core_pod::annotation(&pod, keys::PREBUILT_WORKLOAD_LABEL)
                    .is_some_and(|w| admitted.iter().any(|a| a == w));
                if in_admitted && core_pod::is_gated(&ctx.gate, &pod) {
                    let _ = ctx.pod_wakes.unbounded_send(
                        ObjectRef::new_with(&p.name_any(), ctx.pods.clone()).within(&ns),
                    );
                }
            }
        }
    }
    if waiting {
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    Ok(Action::await_change())
}
