//! The reconciler of a gated kind (Kueue's pod integration): for a managed
//! pod, or a whole pod group, it creates the Workload; once the Workload is
//! admitted it ungates the pods with their pod set's flavor (node
//! selector, tolerations, labels); when the Workload is evicted it deletes
//! the running pods (a pod cannot be suspended) and gives the quota back
//! once none runs; when the pods have finished it marks the Workload
//! finished, and once it is, lets go of the pods' finalizers. It keeps the
//! Workload's deadlines (maximum execution time, waitForPodsReady) and a
//! group's reclaimable pods as a job's reconciler does. What a pod
//! is and how it is gated comes from the policy's `gate` and the core in
//! `jobs::pod`.

use crate::vocabulary::pointer::At;
use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kube::{
    api::{DeleteParams, DynamicObject, Patch, Preconditions},
    core::{ApiResource, GroupVersionKind},
    runtime::{
        controller::Action,
        reflector::{ObjectRef, Store},
        watcher,
    },
    Api, ResourceExt,
};
use serde_json::Value;
use tracing::{debug, warn};

use super::context::{
    admission_pod_set_infos, create_workload, now_time, params, reference_of,
    remove_workload_finalizer, workload_status_written, write_workload_spec, JobError, Shared,
    STALE,
};
use crate::{
    api::kueue::v1beta2 as api,
    jobs::{
        machine::{pods, Note, Then},
        pod,
        policy::{Gate, Policy},
        readiness::Settings as Readiness,
    },
    vocabulary::{keys, patch::PatchOp},
};

struct Ctx {
    shared: Shared,
    policy: Arc<Policy>,
    gate: Gate,
    resource: ApiResource,
    /// Every managed pod (the watch's cache), to find a group's members.
    pods: Store<DynamicObject>,
    /// waitForPodsReady in force (`None`: turned off).
    readiness: Option<Arc<Readiness>>,
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
    readiness: Option<Arc<Readiness>>,
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
        readiness,
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

    async fn event(&self, pod: &Value, note: Note) {
        let reference = reference_of(&self.policy.target, pod);
        self.shared.publish(&reference, note).await
    }

    /// Sends a JSON patch; `false` when the pod changed or went meanwhile
    /// (the watch brings it again).
    async fn patch(&self, ns: &str, pod: &Value, ops: &[PatchOp]) -> Result<bool, JobError> {
        if ops.is_empty() {
            return Ok(false);
        }
        let name = pod
            .at("/metadata/name")
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

    /// Deletes a pod (this uid only).
    async fn delete(&self, ns: &str, pod: &Value) -> Result<(), JobError> {
        let name = pod
            .at("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pod
                    .at("/metadata/uid")
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
                    v.at("/metadata/creationTimestamp")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    v.at("/metadata/name")
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

/// One pass: the pod, its group's members and their Workload read, the
/// step decided in the core (`jobs::machine::pods`), its writes made in
/// order until one on the Workload is refused.
async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let this = serde_json::to_value(&*obj)?;
    if !pods::managed(&ctx.gate, &this) {
        return Ok(Action::await_change());
    }
    let ns = obj.namespace().unwrap_or_default();
    let members = ctx.members(&ns, &this);
    let wl_name = pod::workload_name(&ctx.gate, &this);
    let wl_api = Api::<api::Workload>::namespaced(ctx.shared.client.clone(), &ns);
    let wl = wl_api.get_opt(&wl_name).await?;
    let now = now_time();
    let classes = ctx.shared.classes();
    let flavors = &ctx.shared.flavors;
    let infos = |wl: &api::Workload, queue: &str| admission_pod_set_infos(flavors, wl, queue);
    let facts = pods::Facts {
        policy: &ctx.policy,
        gate: &ctx.gate,
        classes: &classes,
        infos: &infos,
        readiness: ctx.readiness.as_deref(),
        now: &now,
        jitter: super::jobs::jitter(),
    };
    let step = pods::step(&facts, &this, &members, wl.as_ref());
    let pod_of = |p: pods::Pod| match p {
        pods::Pod::This => &this,
        pods::Pod::Member(i) => &members[i],
    };
    for write in step.writes {
        match write {
            pods::Write::Patch { pod, ops, event } => {
                if ctx.patch(&ns, pod_of(pod), &ops).await? {
                    if let Some(note) = event {
                        ctx.event(pod_of(pod), note).await;
                    }
                }
            }
            pods::Write::Delete { pod, event } => {
                ctx.delete(&ns, pod_of(pod)).await?;
                if let Some(note) = event {
                    ctx.event(pod_of(pod), note).await;
                }
            }
            pods::Write::CreateWorkload { body, event } => {
                if create_workload(&ctx.shared.client, &ns, body).await? {
                    ctx.event(&this, event).await;
                }
            }
            pods::Write::Event { pod, note } => ctx.event(pod_of(pod), note).await,
            pods::Write::WorkloadStatus(status) => {
                if let Some(wl) = &wl {
                    if !workload_status_written(&wl_api, wl, status).await? {
                        return Ok(Action::requeue(STALE));
                    }
                }
            }
            pods::Write::WorkloadSpec(spec) => {
                if let Some(wl) = &wl {
                    write_workload_spec(&wl_api, wl, spec).await?;
                }
            }
            pods::Write::WorkloadEvent(note) => {
                if let Some(wl) = &wl {
                    let reference = super::context::workload_reference(wl);
                    ctx.shared.publish(&reference, note).await;
                }
            }
            pods::Write::RemoveFinalizer => {
                if let Some(wl) = &wl {
                    remove_workload_finalizer(&wl_api, &wl.metadata).await?;
                }
            }
            pods::Write::AdoptWorkload(patch) => {
                if let Some(wl) = &wl {
                    let sent = wl_api
                        .patch(&wl.name_any(), &params(), &Patch::Merge(&patch))
                        .await;
                    match sent {
                        Err(kube::Error::Api(e)) if e.code == 409 => {
                            return Ok(Action::requeue(STALE));
                        }
                        r => {
                            r?;
                        }
                    }
                }
            }
        }
    }
    Ok(match step.then {
        Then::Wait | Then::ReadView => Action::await_change(),
        Then::After(d) => Action::requeue(d),
    })
}

/// The executor against a scripted apiserver: the exact requests of a
/// pass (the decisions are `jobs::machine::pods`'s tests).
#[cfg(test)]
mod tests {
    use kube::runtime::reflector;
    use serde_json::json;

    use super::*;
    use crate::{
        controllers::vetting::testing::{scripted_client, status},
        jobs::policy::PolicySet,
    };

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "a", "namespace": "ns", "uid": "uid-a", "resourceVersion": "7",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/managed": "true"},
                         "finalizers": ["kueue.x-k8s.io/managed"]},
            "spec": {"containers": [{"name": "c", "image": "i",
                                     "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Running"},
        })
    }

    fn ctx(client: kube::Client) -> Arc<Ctx> {
        let policy = PolicySet::embedded()
            .unwrap()
            .find("", "v1", "Pod")
            .unwrap()
            .clone();
        let resource = resource_of(&policy);
        Arc::new(Ctx {
            shared: Shared::without_kueue(client),
            gate: policy.gate.clone().unwrap(),
            pods: reflector::store::Writer::new(resource.clone()).as_reader(),
            resource,
            policy,
            readiness: None,
        })
    }

    /// The Workload of `this` pod, admitted and evicted with `message`,
    /// and its path.
    fn evicted(this: &Value, message: &str) -> (Value, String) {
        let policy = PolicySet::embedded()
            .unwrap()
            .find("", "v1", "Pod")
            .unwrap()
            .clone();
        let gate = policy.gate.clone().unwrap();
        let mut wl = pod::workload_for(&policy, &gate, &[this], &Default::default()).unwrap();
        let c = |ty: &str, m: &str| {
            json!({"type": ty, "status": "True", "reason": ty, "message": m,
            "lastTransitionTime": "2026-01-01T00:00:00Z"})
        };
        wl["metadata"]["uid"] = json!("wl-uid");
        wl["metadata"]["resourceVersion"] = json!("3");
        wl["status"] = json!({"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
                "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}]},
            "conditions": [c("QuotaReserved", "m"), c("Admitted", "m"), c("Evicted", message)]});
        let path = format!(
            "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{}",
            wl["metadata"]["name"].as_str().unwrap()
        );
        (wl, path)
    }

    #[tokio::test]
    async fn an_evicted_running_pod_is_deleted_on_its_uid_then_told_why() {
        let (wl, wl_path) = evicted(&pod(), "Preempted here");
        let path = wl_path.clone();
        let (client, sent) = scripted_client(move |method, p, body| match method {
            "GET" if p == path => (200, wl.clone()),
            "DELETE" => (200, status(200, "Success")),
            "POST" => (201, body.clone()),
            _ => (500, status(500, "unexpected")),
        });
        let obj: DynamicObject = serde_json::from_value(pod()).unwrap();
        let out = reconcile(Arc::new(obj), ctx(client)).await.unwrap();
        assert_eq!(out, Action::requeue(Duration::from_millis(500)));
        let sent = sent.lock().unwrap().clone();
        let lines: Vec<&str> = sent.iter().map(|r| r.line.as_str()).collect();
        assert_eq!(
            lines,
            [
                format!("GET {wl_path}").as_str(),
                "DELETE /api/v1/namespaces/ns/pods/a",
                "POST /apis/events.k8s.io/v1/namespaces/ns/events",
            ]
        );
        assert_eq!(sent[1].body["preconditions"]["uid"], "uid-a");
        assert_eq!(sent[2].body["note"], "Preempted here");
    }

    /// An evicted pod already going has its quota released, then is let
    /// go; when another write to the Workload came first (409), the pod
    /// keeps its finalizer and the pass is decided again: let go after a
    /// refused release, nothing would ever release the quota it held.
    #[tokio::test]
    async fn a_pod_is_let_go_only_after_its_quotas_release_applied() {
        let mut this = pod();
        this["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:01Z");
        this["spec"]["nodeName"] = json!("node-a");
        let (wl, wl_path) = evicted(&this, "m");
        for (answer, released) in [(409, false), (200, true)] {
            let path = wl_path.clone();
            let body = wl.clone();
            let (client, sent) = scripted_client(move |method, p, _| match method {
                "GET" if p == path => (200, body.clone()),
                "PATCH" if p.starts_with(&format!("{path}/status")) => match answer {
                    200 => (200, body.clone()),
                    _ => (answer, status(answer, "Conflict")),
                },
                "PATCH" => (200, pod()),
                _ => (500, status(500, "unexpected")),
            });
            let obj: DynamicObject = serde_json::from_value(this.clone()).unwrap();
            let out = reconcile(Arc::new(obj), ctx(client)).await.unwrap();
            let sent = sent.lock().unwrap().clone();
            let lines: Vec<&str> = sent.iter().map(|r| r.line.as_str()).collect();
            let status_patch = format!("PATCH {wl_path}/status?&fieldManager=batchgate");
            if released {
                assert_eq!(
                    lines,
                    [
                        format!("GET {wl_path}").as_str(),
                        status_patch.as_str(),
                        "PATCH /api/v1/namespaces/ns/pods/a?&fieldManager=batchgate",
                    ]
                );
                assert_eq!(out, Action::await_change());
            } else {
                assert_eq!(lines, [format!("GET {wl_path}"), status_patch]);
                assert_eq!(out, Action::requeue(STALE));
            }
        }
    }
}
