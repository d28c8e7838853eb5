//! The reconciler of a gated kind (Kueue's pod integration): for a managed
//! pod, or a whole pod group, it creates the Workload; once the Workload is
//! admitted it ungates the pods with their pod set's flavor (node
//! selector, tolerations, labels); when the Workload is evicted it deletes
//! the running pods (a pod cannot be suspended) and gives the quota back
//! once none runs; when the pods have finished it marks the Workload
//! finished, and once it is, lets go of the pods' finalizers. What a pod
//! is and how it is gated comes from the policy's `gate` and the core in
//! `jobs::pod`.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    api::{DeleteParams, DynamicObject, Patch, Preconditions},
    core::{ApiResource, GroupVersionKind},
    runtime::{
        controller::Action,
        events::{Event as KEvent, EventType},
        reflector::{ObjectRef, Store},
        watcher,
    },
    Api, ResourceExt,
};
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::{
    context::{
        admission_pod_set_infos, create_workload, finish_failed_to_start, params, release,
        remove_workload_finalizer, write_workload_status, JobError, Shared,
    },
    translation::Conditions,
};
use crate::vocabulary::{
    keys::{self, PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL},
    patch::PatchOp,
};
use crate::{
    api::kueue::v1beta2::{self as api, condition},
    jobs::{
        pod::{self, GroupProblem},
        policy::{Gate, Policy},
    },
};

struct Ctx {
    shared: Shared,
    policy: Arc<Policy>,
    gate: Gate,
    resource: ApiResource,
    /// Every managed pod (the watch's cache), to find a group's members.
    pods: Store<DynamicObject>,
}

/// The API resource of a policy's kind.
pub fn resource_of(policy: &Policy) -> ApiResource {
    let t = &policy.target;
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&t.group, &t.version, &t.kind),
        &t.resource,
    )
}

/// Runs the reconciler of the gated `policy` until the process ends,
/// woken by pod changes (only managed pods are watched) and by `wakes`
/// (their Workloads' changes, from the job controllers' Workload watch).
pub async fn run(
    shared: Shared,
    policy: Arc<Policy>,
    wakes: futures::channel::mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>,
) {
    let Some(gate) = policy.gate.clone() else {
        return;
    };
    let resource = resource_of(&policy);
    let api = Api::<DynamicObject>::all_with(shared.client.clone(), &resource);
    let selector = format!("{}={}", gate.managed_label, keys::MANAGED_VALUE);
    let controller = crate::cluster::watch::controller(
        api,
        watcher::Config::default().labels(&selector),
        resource.clone(),
    );
    let ctx = Arc::new(Ctx {
        pods: controller.store(),
        shared,
        policy: policy.clone(),
        gate,
        resource,
    });
    let name = policy.name.clone();
    controller
        .reconcile_on(wakes)
        .run(reconcile, error_policy, ctx)
        .for_each(move |r| {
            if let Err(e) = r {
                debug!(integration = %name, error = %e, "reconcile");
            }
            futures::future::ready(())
        })
        .await;
}

fn error_policy(pod: Arc<DynamicObject>, err: &JobError, _ctx: Arc<Ctx>) -> Action {
    warn!(pod = %pod.name_any(), namespace = pod.namespace().unwrap_or_default(), error = %err, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(2))
}

impl Ctx {
    fn api(&self, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.shared.client.clone(), ns, &self.resource)
    }

    async fn event(&self, pod: &Value, type_: EventType, reason: &str, note: String) {
        let at = |p: &str| pod.pointer(p).and_then(Value::as_str).map(String::from);
        let reference = ObjectReference {
            api_version: Some(self.policy.target.api_version()),
            kind: Some(self.policy.target.kind.clone()),
            name: at("/metadata/name"),
            namespace: at("/metadata/namespace"),
            uid: at("/metadata/uid"),
            ..Default::default()
        };
        let ev = KEvent {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: reason.into(),
            secondary: None,
        };
        if let Err(e) = self.shared.recorder.publish(&ev, &reference).await {
            debug!(error = %e, "event not recorded");
        }
    }

    /// Sends a JSON patch; `false` when the pod changed or went meanwhile
    /// (the watch brings it again).
    async fn patch(&self, ns: &str, pod: &Value, ops: &[PatchOp]) -> Result<bool, JobError> {
        if ops.is_empty() {
            return Ok(false);
        }
        let name = pod
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let p: json_patch::Patch = serde_json::from_value(serde_json::to_value(ops)?)?;
        match self
            .api(ns)
            .patch(name, &params(), &Patch::<()>::Json(p))
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409 | 422) => {
                debug!(pod = name, message = %e.message, "pod changed under the patch");
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Lets go of the finalizer of each pod in `pods` that holds it.
    async fn release_pods(&self, ns: &str, pods: &[&Value]) -> Result<(), JobError> {
        for p in pods {
            self.patch(ns, p, &pod::release_patch(&self.gate, p))
                .await?;
        }
        Ok(())
    }

    /// Deletes a pod (this uid only).
    async fn delete(&self, ns: &str, pod: &Value) -> Result<(), JobError> {
        let name = pod
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pod
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(String::from),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.api(ns).delete(name, &dp).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The pod itself, or every pod of its group in the cache.
    fn members(&self, ns: &str, pod: &Value) -> Vec<Value> {
        let Some(group) = pod::group_name(self.gate.group.as_ref(), pod) else {
            return vec![pod.clone()];
        };
        let rule = self.gate.group.as_ref();
        let mut out: Vec<Value> = self
            .pods
            .state()
            .iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(ns))
            .filter_map(|p| serde_json::to_value(&**p).ok())
            .filter(|p| pod::group_name(rule, p) == Some(group))
            .collect();
        // Oldest first: the first pod speaks for the group (its queue,
        // priority and count).
        out.sort_by(|a, b| {
            let key = |v: &Value| {
                (
                    v.pointer("/metadata/creationTimestamp")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    v.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            };
            key(a).cmp(&key(b))
        });
        if out.is_empty() {
            out.push(pod.clone());
        }
        out
    }
}

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let gate = &ctx.gate;
    if obj.labels().get(&gate.managed_label).map(String::as_str) != Some(keys::MANAGED_VALUE) {
        return Ok(Action::await_change());
    }
    let Some(ns) = obj.namespace() else {
        return Ok(Action::await_change());
    };
    let this = serde_json::to_value(&*obj)?;
    let members = ctx.members(&ns, &this);
    let pods: Vec<&Value> = members.iter().collect();
    let group = pod::group_name(gate.group.as_ref(), &this).is_some();
    let wl_name = pod::workload_name(gate, &this);
    let wl_api = Api::<api::Workload>::namespaced(ctx.shared.client.clone(), &ns);

    let Some(wl) = wl_api.get_opt(&wl_name).await? else {
        // Pods that ended or are going without a Workload hold nothing.
        let done: Vec<&Value> = pods
            .iter()
            .copied()
            .filter(|p| {
                !pod::is_runnable_or_succeeded(p)
                    || (!group && (pod::is_terminated(p) || deleting(p)))
            })
            .collect();
        ctx.release_pods(&ns, &done).await?;
        if !group && (pod::is_terminated(&this) || deleting(&this)) {
            return Ok(Action::await_change());
        }
        if !pods.iter().any(|p| pod::is_gated(gate, p)) {
            // Started without a Workload (its gate was taken off by hand):
            // nothing to queue.
            return Ok(Action::await_change());
        }
        if pod::annotation(&this, PREBUILT_WORKLOAD_LABEL)
            .or_else(|| pod::label(&this, PREBUILT_WORKLOAD_LABEL))
            .is_some_and(|n| !n.is_empty())
        {
            // A prebuilt Workload (a StatefulSet's) is made by its owner's
            // reconciler, which wakes the pods once it is there.
            return Ok(Action::requeue(Duration::from_secs(5)));
        }
        if let (true, Some(rule)) = (group, &gate.group) {
            match pod::check_group(rule, &pods) {
                Ok(_) => {}
                Err(GroupProblem::TooFew(_)) => {
                    // Kueue waits for the rest of the group.
                    return Ok(Action::await_change());
                }
                Err(GroupProblem::Inconsistent(m)) => {
                    ctx.event(&this, EventType::Warning, "ErrWorkloadCompose", m)
                        .await;
                    return Ok(Action::await_change());
                }
            }
        }
        let runnable: Vec<&Value> = pods
            .iter()
            .copied()
            .filter(|p| pod::is_runnable_or_succeeded(p))
            .collect();
        let body = match pod::workload_for(&ctx.policy, gate, &runnable, &ctx.shared.classes()) {
            Ok(b) => b,
            Err(e) => {
                ctx.event(
                    &this,
                    EventType::Warning,
                    "ErrWorkloadCompose",
                    e.to_string(),
                )
                .await;
                return Ok(Action::requeue(Duration::from_secs(5)));
            }
        };
        if create_workload(&ctx.shared.client, &ns, body).await? {
            ctx.event(
                &this,
                EventType::Normal,
                "CreatedWorkload",
                format!("Created Workload: {ns}/{wl_name}"),
            )
            .await;
        }
        return Ok(Action::await_change());
    };

    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    if conds.is_true(condition::FINISHED) {
        // Accounted for: the pods and the Workload are let go.
        ctx.release_pods(&ns, &pods).await?;
        remove_workload_finalizer(&wl_api, &wl.metadata).await?;
        return Ok(Action::await_change());
    }
    if wl.metadata.deletion_timestamp.is_some() {
        // The Workload is going: its pods stop with it (Kueue's
        // StopReasonWorkloadDeleted deletes even gated ones).
        for p in pods.iter().filter(|p| !deleting(p)) {
            ctx.delete(&ns, p).await?;
        }
        ctx.release_pods(&ns, &pods).await?;
        remove_workload_finalizer(&wl_api, &wl.metadata).await?;
        return Ok(Action::await_change());
    }
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    if let Some((succeeded, message)) = pod::finished(gate, &pods) {
        let reason = if succeeded { "Succeeded" } else { "Failed" };
        let mut c = conds.clone();
        c.set(
            condition::FINISHED,
            true,
            reason,
            &message,
            &now,
            wl.metadata.generation,
        );
        write_workload_status(&wl_api, &wl, json!({"conditions": c.0})).await?;
        ctx.event(
            &this,
            EventType::Normal,
            "FinishedWorkload",
            format!("Workload '{ns}/{wl_name}' is declared finished"),
        )
        .await;
        return Ok(Action::await_change());
    }
    let reserved = conds.is_true(condition::QUOTA_RESERVED) && status.admission.is_some();
    if reserved && conds.is_true(condition::EVICTED) {
        // A pod cannot be suspended: the running ones are deleted (gated
        // ones stay gated), and the quota goes back once none runs.
        let msg = conds
            .get(condition::EVICTED)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        let mut waiting = false;
        for p in &pods {
            if pod::is_gated(gate, p) || pod::is_terminated(p) || deleting(p) {
                continue;
            }
            ctx.delete(&ns, p).await?;
            ctx.event(p, EventType::Normal, "Stopped", msg.clone())
                .await;
            waiting = true;
        }
        if waiting {
            // Looked at again once the deletions are seen.
            return Ok(Action::requeue(Duration::from_millis(500)));
        }
        let accumulated = status.accumulated_past_execution_time_seconds;
        if let Some(s) = release(&conds.0, wl.metadata.generation, &now, accumulated) {
            write_workload_status(&wl_api, &wl, s).await?;
        }
        // Accounted for: the deleted pods may go.
        let going: Vec<&Value> = pods.iter().copied().filter(|p| deleting(p)).collect();
        ctx.release_pods(&ns, &going).await?;
        return Ok(Action::await_change());
    }
    if !group && deleting(&this) {
        // A single pod deleted before it finished: its Workload goes with
        // it (garbage collected); the pod is let go now.
        ctx.release_pods(&ns, &pods).await?;
        return Ok(Action::await_change());
    }
    if reserved && conds.is_true(condition::ADMITTED) {
        let queue = this
            .pointer(&format!(
                "/metadata/labels/{}",
                QUEUE_NAME_LABEL.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let Some(infos) = admission_pod_set_infos(&ctx.shared.flavors, &wl, &queue) else {
            return Ok(Action::requeue(Duration::from_millis(200)));
        };
        let cq = status
            .admission
            .as_ref()
            .and_then(|a| a.cluster_queue.clone())
            .unwrap_or_default();
        for p in pods.iter().filter(|p| pod::is_gated(gate, p)) {
            let info = if group {
                let role = pod::role_of(p);
                infos.iter().find(|i| i.name == role)
            } else {
                infos.first()
            };
            let started = match info {
                Some(info) => pod::ungate_patch(gate, p, info),
                None => Err(crate::jobs::workload::WorkloadError::PodSetCount {
                    expected: 1,
                    got: 0,
                }),
            };
            match started {
                Ok(ops) => {
                    if ctx.patch(&ns, p, &ops).await? {
                        ctx.event(
                            p,
                            EventType::Normal,
                            "Started",
                            format!("Admitted by clusterQueue {cq}"),
                        )
                        .await;
                    }
                }
                Err(e) => {
                    finish_failed_to_start(&wl_api, &wl, &conds, &e.to_string(), &now).await?;
                    ctx.event(p, EventType::Warning, "FailedToStart", e.to_string())
                        .await;
                    return Ok(Action::await_change());
                }
            }
        }
        return Ok(Action::await_change());
    }
    // Pending: the pods stay gated.
    Ok(Action::await_change())
}

fn deleting(p: &Value) -> bool {
    !matches!(
        p.pointer("/metadata/deletionTimestamp"),
        None | Some(Value::Null)
    )
}
