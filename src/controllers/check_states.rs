//! The admission-check half of Kueue's workload controller: for each
//! Workload of a ClusterQueue with `admissionChecksStrategy`, keeps
//! `status.admissionChecks` in step with the checks it needs (a `Pending`
//! state per check), writes `Admitted=True` once its quota is reserved and
//! every check is `Ready`, evicts it when a check asks to `Retry` (the quota
//! goes back, the Workload queues again, its checks reset to `Pending`) and
//! marks it `DeactivationTarget` when a check is `Rejected` (the job
//! reconciler then deactivates it). The decisions are the pure
//! [`crate::queueing::check_states`] step (on the rules of
//! [`crate::queueing::admission_checks`]); this module reads and writes.
//!
//! The checks' own controllers (an external one, or the ProvisioningRequest
//! check) set each state; the queueing engine reserves the quota without
//! `Admitted` (see `queueing::admission_checks`).

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kube::{
    runtime::{
        controller::Action,
        predicates,
        reflector::{self, ObjectRef, Store},
        watcher::{self, watcher},
        WatchStreamExt,
    },
    Api, Client, ResourceExt,
};
use tracing::debug;

use super::context::{has_check_states, store, write_workload_status, JobError, Shared};
use crate::{
    api::kueue::v1beta2 as api,
    queueing::check_states::{step, Step},
};

struct Ctx {
    shared: Shared,
    cluster_queues: Store<api::ClusterQueue>,
    local_queues: Store<api::LocalQueue>,
}

/// Runs until the process ends.
pub async fn run(shared: Shared) {
    let client: Client = shared.client.clone();
    let local_queues = store(Api::<api::LocalQueue>::all(client.clone()));
    let _ = local_queues.wait_until_ready().await;
    // The ClusterQueue store is fed by the stream that triggers on a
    // queue's spec change (not on its status, written up to once a
    // second), so a reconcile it triggers reads the new spec.
    let writer = reflector::store::Writer::default();
    let cluster_queues = writer.as_reader();
    let queue_changes = crate::cluster::watch::ready_objects(
        "clusterqueues.kueue.x-k8s.io".into(),
        watcher(
            Api::<api::ClusterQueue>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff(),
        writer,
        (),
    )
    .predicate_filter(predicates::generation, Default::default());
    let ctx = Arc::new(Ctx {
        shared,
        cluster_queues,
        local_queues,
    });
    // Only a Workload with check states, or on a queue that has checks,
    // can get anything but `Wait` from the step: the others (most, and
    // every one in a cluster without checks) skip the controller's queue
    // without a step run for them.
    let wanted = {
        let ctx = ctx.clone();
        move |wl: &api::Workload| {
            has_check_states(wl)
                || ctx.cluster_queue(wl).is_some_and(|cq| {
                    cq.spec
                        .admission_checks_strategy
                        .iter()
                        .any(|s| !s.admission_checks.is_empty())
                })
        }
    };
    let controller = ctx.shared.workloads().controller_where(wanted);
    let all = controller.store();
    // A queue's checks changed: look at its Workloads again.
    let by_queue = move |cq: api::ClusterQueue| {
        let name = cq.name_any();
        all.state()
            .into_iter()
            .filter(|w| {
                w.status
                    .as_ref()
                    .and_then(|s| s.admission.as_ref())
                    .and_then(|a| a.cluster_queue.as_deref())
                    .is_none_or(|c| c == name)
            })
            .map(|w| ObjectRef::from_obj(&*w))
            .collect::<Vec<_>>()
    };
    controller
        .watches_stream(queue_changes, by_queue)
        .run(reconcile, error_policy, ctx)
        .for_each(|r| {
            if let Err(e) = r {
                debug!(error = %e, "admission checks reconcile");
            }
            futures::future::ready(())
        })
        .await;
}

fn error_policy(_: Arc<api::Workload>, _: &JobError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

use crate::controllers::context::now_time;

impl Ctx {
    /// The ClusterQueue a Workload is admitted to, else the one its
    /// LocalQueue points to.
    fn cluster_queue(&self, wl: &api::Workload) -> Option<Arc<api::ClusterQueue>> {
        let admitted = wl
            .status
            .as_ref()
            .and_then(|s| s.admission.as_ref())
            .and_then(|a| a.cluster_queue.clone());
        let name = match admitted {
            Some(n) => n,
            None => {
                let lq = self.local_queues.get(
                    &ObjectRef::new(wl.spec.queue_name.as_deref()?)
                        .within(&wl.namespace().unwrap_or_default()),
                )?;
                lq.spec.cluster_queue.clone()?
            }
        };
        self.cluster_queues.get(&ObjectRef::new(&name))
    }
}

/// One pass: the step ([`step`]) decides, this writes and records.
async fn reconcile(wl: Arc<api::Workload>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let cq = ctx.cluster_queue(&wl);
    match step(&wl, cq.as_deref(), &now_time()) {
        Step::Wait => Ok(Action::await_change()),
        Step::After(left) => Ok(Action::requeue(left)),
        Step::Write { status, note } => {
            let wl_api = Api::<api::Workload>::namespaced(
                ctx.shared.client.clone(),
                &wl.namespace().unwrap_or_default(),
            );
            write_workload_status(&wl_api, &wl, status).await?;
            if let Some(n) = note {
                ctx.shared
                    .workload_event(&wl, n.warning, n.reason, n.message)
                    .await;
            }
            Ok(Action::await_change())
        }
    }
}

/// The executor against a scripted apiserver: the exact requests of a pass.
#[cfg(test)]
mod tests {
    use kube::runtime::watcher::Event;
    use serde_json::{json, Value};

    use super::*;
    use crate::controllers::vetting::testing::{scripted_client, sent as requests, status, Script};

    const STATUS: &str = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status";
    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";

    fn stores(cq: Value) -> (Store<api::ClusterQueue>, Store<api::LocalQueue>) {
        let (cqs, mut w) = reflector::store();
        w.apply_watcher_event(&Event::Apply(serde_json::from_value(cq).unwrap()));
        let (lqs, mut w) = reflector::store();
        w.apply_watcher_event(&Event::Apply(
            serde_json::from_value(json!({"apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}}))
            .unwrap(),
        ));
        (cqs, lqs)
    }

    fn cq() -> Value {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]},
                "resourceGroups": [{"coveredResources": ["cpu"],
                "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}})
    }

    /// Reserved on `cq` through `lq`, its check `prov` in `check`.
    fn wl(check: &str) -> api::Workload {
        serde_json::from_value(
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "ns", "generation": 1, "resourceVersion": "5"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True",
                    "reason": "QuotaReserved", "message": "",
                    "lastTransitionTime": "2026-11-28T12:00:00Z"}],
                "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
                    "count": 1, "flavors": {"cpu": "f"}}]},
                "admissionChecks": [{"name": "prov", "state": check, "message": "",
                    "lastTransitionTime": "2026-11-28T12:00:00Z"}]}}),
        )
        .unwrap()
    }

    async fn pass(wl: api::Workload) -> (Action, Vec<(String, Value)>) {
        let (client, sent): (Client, Script) =
            scripted_client(|method, path, body| match (method, path) {
                ("PATCH", STATUS) => (200, body.clone()),
                ("POST", EVENTS) => (201, body.clone()),
                _ => (404, status(404, "NotFound")),
            });
        let (cluster_queues, local_queues) = stores(cq());
        let ctx = Arc::new(Ctx {
            shared: Shared::without_kueue(client),
            cluster_queues,
            local_queues,
        });
        let out = reconcile(Arc::new(wl), ctx).await.unwrap();
        let sent = requests(&sent);
        (out, sent)
    }

    #[tokio::test]
    async fn a_ready_check_admits_with_one_guarded_status_patch_then_the_event() {
        let (out, sent) = pass(wl("Ready")).await;
        assert_eq!(out, Action::await_change());
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(lines, [format!("PATCH {STATUS}"), format!("POST {EVENTS}")]);
        assert_eq!(sent[0].1["metadata"]["resourceVersion"], "5");
        assert!(sent[0].1["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Admitted" && c["status"] == "True"));
        assert_eq!(sent[1].1["reason"], "Admitted");
    }

    #[tokio::test]
    async fn a_pending_check_sends_nothing() {
        let (out, sent) = pass(wl("Pending")).await;
        assert_eq!(out, Action::await_change());
        assert!(sent.is_empty(), "{sent:?}");
    }
}
