//! The reconciler of a kind queued through its pods as one pod group (a
//! policy with `podOwner.group`: Kueue's StatefulSet reconcilers): it makes
//! the group's Workload from the owner (replicas > 0, queued), keeps its
//! queue name in step, marks each pod the owner creates into the group (the
//! pod integration's reconciler then ungates it once the Workload is
//! admitted, and keeps ungating replaced pods in serving mode), lets an
//! old-revision pod go during a rollout, and wakes the group's pods when
//! the Workload changes. What is written comes from `jobs::pod_owner`.

use crate::vocabulary::pointer::At;
use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kube::{
    api::{DeleteParams, DynamicObject, ListParams, Patch, Preconditions},
    core::{ApiResource, GroupVersionKind},
    runtime::{controller::Action, reflector::ObjectRef, watcher},
    Api, ResourceExt,
};
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::{
    context::{
        create_workload, now_time, params, reference_of, remove_workload_finalizer,
        write_workload_spec, write_workload_status, JobError, Shared,
    },
    pods::resource_of,
};
use crate::{
    api::kueue::v1beta2 as api,
    jobs::{
        machine::{owners, Note, Then},
        pod_owner,
        policy::{Gate, PodOwner, Policy},
        workload::PriorityClasses,
    },
    vocabulary::patch::PatchOp,
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
    async fn event(&self, obj: &Value, note: Note) {
        let reference = reference_of(&self.policy.target, obj);
        self.shared.publish(&reference, note).await
    }

    async fn patch_pod(&self, ns: &str, pod: &Value, ops: &[PatchOp]) -> Result<(), JobError> {
        if ops.is_empty() {
            return Ok(());
        }
        let name = pod
            .at("/metadata/name")
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

/// Makes a step's writes in order: `pods` and `workloads` are the lists
/// its indices name.
async fn execute(
    ctx: &Ctx,
    obj: &Value,
    ns: &str,
    pods: &[Value],
    workloads: &[&api::Workload],
    step: owners::Step,
) -> Result<Action, JobError> {
    let wl_api = Api::<api::Workload>::namespaced(ctx.shared.client.clone(), ns);
    for write in step.writes {
        match write {
            owners::Write::PatchPod { pod, ops } => ctx.patch_pod(ns, &pods[pod], &ops).await?,
            owners::Write::CreateWorkload { body, event } => {
                if create_workload(&ctx.shared.client, ns, body).await? {
                    ctx.event(obj, event).await;
                }
            }
            owners::Write::WorkloadSpec { workload, spec } => {
                write_workload_spec(&wl_api, workloads[workload], spec).await?;
            }
            owners::Write::WorkloadStatus { workload, status } => {
                write_workload_status(&wl_api, workloads[workload], status).await?;
            }
            owners::Write::AdoptWorkload { workload, metadata } => {
                let wl = workloads[workload];
                let patch = json!({ "metadata": metadata });
                match wl_api
                    .patch(&wl.name_any(), &params(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => {}
                    // Changed meanwhile: the next pass reads it again.
                    Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(e.into()),
                }
            }
            owners::Write::RemoveFinalizer { workload } => {
                remove_workload_finalizer(&wl_api, &workloads[workload].metadata).await?;
            }
            owners::Write::DeleteWorkload { workload } => {
                let wl = workloads[workload];
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: wl.metadata.uid.clone(),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                match wl_api.delete(&wl.name_any(), &dp).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(e.into()),
                }
            }
            owners::Write::WakePod { pod } => {
                let name = pods[pod]
                    .at("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let _ = ctx
                    .pod_wakes
                    .unbounded_send(ObjectRef::new_with(name, ctx.pods.clone()).within(ns));
            }
        }
    }
    Ok(match step.then {
        Then::Wait | Then::ReadView => Action::await_change(),
        Then::After(d) => Action::requeue(d),
    })
}

impl Ctx {
    fn facts<'a>(
        &'a self,
        classes: &'a PriorityClasses,
        now: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    ) -> owners::Facts<'a> {
        owners::Facts {
            policy: &self.policy,
            owner: &self.owner,
            gate: &self.gate,
            classes,
            now,
        }
    }

    async fn list(&self, api: Api<DynamicObject>, selector: &str) -> Result<Vec<Value>, JobError> {
        let items = api
            .list(&ListParams::default().labels(selector))
            .await?
            .items;
        Ok(items
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?)
    }
}

/// One pass of the one-group reconciler: the owner's pods and its Workload
/// read, the step decided in the core (`jobs::machine::owners`), its
/// writes made.
async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let Some(ns) = obj.namespace() else {
        return Ok(Action::await_change());
    };
    let this = serde_json::to_value(&*obj)?;
    let classes = ctx.shared.classes();
    let now = now_time();
    let facts = ctx.facts(&classes, &now);
    let Some(selector) = owners::group_selector(&facts, &this) else {
        return Ok(Action::await_change());
    };
    let pod_api = Api::<DynamicObject>::namespaced_with(ctx.shared.client.clone(), &ns, &ctx.pods);
    let pods = match selector {
        Some(sel) => ctx.list(pod_api, &sel).await?,
        None => Vec::new(),
    };
    let wl_api = Api::<api::Workload>::namespaced(ctx.shared.client.clone(), &ns);
    let current = wl_api
        .get_opt(&pod_owner::workload_name(&ctx.policy, &this))
        .await?;
    // Kueue's legacy name is read only while there is none under the
    // current one.
    let legacy = match current {
        Some(_) => None,
        None => {
            wl_api
                .get_opt(&pod_owner::legacy_workload_name(&ctx.policy, &this))
                .await?
        }
    };
    let wl = owners::followed(&this, current.as_ref(), legacy.as_ref());
    let step = owners::group_step(&facts, &this, &pods, wl)?;
    let workloads: Vec<&api::Workload> = wl.into_iter().collect();
    execute(&ctx, &this, &ns, &pods, &workloads, step).await
}

/// One pass of the reconciler of an owner with one pod group per replica
/// (Kueue's LeaderWorkerSet reconciler): the Workloads it owns, its pods
/// and its StatefulSets listed, the step decided in the core, its writes
/// made.
async fn reconcile_groups(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let Some(ns) = obj.namespace() else {
        return Ok(Action::await_change());
    };
    let Some(groups) = &ctx.owner.replica_groups else {
        return Ok(Action::await_change());
    };
    let this = serde_json::to_value(&*obj)?;
    let uid = obj.uid().unwrap_or_default();
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
    // The owner's pods, then its StatefulSets (their rollouts let old pods
    // go). In this order a listed pod's StatefulSet, created before it, is
    // listed too: the other way round, one created between the two lists
    // would be missing, and its new pod let go unmarked.
    let selector = format!("{}={}", groups.owner_label, obj.name_any());
    let pod_api = Api::<DynamicObject>::namespaced_with(ctx.shared.client.clone(), &ns, &ctx.pods);
    let pods = ctx.list(pod_api, &selector).await?;
    let sts_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps", "v1", "StatefulSet"),
        "statefulsets",
    );
    let sts_api =
        Api::<DynamicObject>::namespaced_with(ctx.shared.client.clone(), &ns, &sts_resource);
    let sets = ctx.list(sts_api, &selector).await?;
    let classes = ctx.shared.classes();
    let now = now_time();
    let step = owners::groups_step(
        &ctx.facts(&classes, &now),
        groups,
        &this,
        &owned,
        &pods,
        &sets,
    )?;
    let workloads: Vec<&api::Workload> = owned.iter().collect();
    execute(&ctx, &this, &ns, &pods, &workloads, step).await
}
