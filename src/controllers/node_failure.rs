//! The TAS node controller (Kueue's `tas_node_controller`): notices a
//! node failing under Workloads placed by topology-aware scheduling and
//! writes what `jobs::node_failure::step` decides: `status.unhealthyNodes`
//! added or removed, the eviction on a second failed node, stray pending
//! pods marked Failed.
//!
//! A pass runs for a node when it appears, goes, or changes readiness or
//! taints, and when a TAS pod is pending towards it or one bound to it
//! ends; passes are batched a short moment. Nodes, batchgate's pods and
//! Workloads are cached (without managedFields); a pass reads the caches
//! and writes with `resourceVersion` preconditions, so a stale cache
//! loses a write (retried) rather than overwriting anything.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{future::Either, FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{
    api::Patch,
    runtime::{
        reflector::{self, Store},
        watcher::{self, Event},
        WatchStreamExt,
    },
    Api, ResourceExt,
};
use serde_json::Value;
use tokio::time::Instant;
use tracing::{debug, info};

use super::context::{params, Shared};
use crate::{
    api::kueue::v1beta2 as api,
    jobs::{
        machine::Note,
        node_failure::{self, Action, Facts},
    },
    vocabulary::keys,
};

/// How long a woken node waits for more events (Kueue's
/// `reconcileBatchPeriod`).
const BATCH: Duration = Duration::from_millis(100);
/// A node whose pass could not finish is looked at again after this.
const RETRY: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
enum PassError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("encoding: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0} changed under the write")]
    Conflict(String),
    #[error("the pod and Workload caches are not filled yet")]
    NotSynced,
}

/// Nodes to pass over, and from when.
type Due = Arc<Mutex<BTreeMap<String, Instant>>>;

fn wake(due: &Due, node: String, at: Instant) {
    let mut d = due.lock().unwrap_or_else(|e| e.into_inner());
    let when = d.entry(node).or_insert(at);
    *when = (*when).min(at);
}

fn trim<K: ResourceExt>(obj: &mut K) {
    obj.managed_fields_mut().clear();
}

/// Runs the node controller until the process ends.
pub async fn run(shared: Shared) {
    let client = shared.client.clone();
    let (nodes, node_writer) = reflector::store::<Node>();
    let (pods, pod_writer) = reflector::store::<Pod>();
    let workloads = shared.workloads().store();
    let node_events = watcher::watcher(Api::<Node>::all(client.clone()), Default::default())
        .default_backoff()
        .modify(trim);
    let pod_events = watcher::watcher(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(keys::PODSET_LABEL),
    )
    .default_backoff()
    .modify(trim)
    .reflect(pod_writer);
    let mut pods_synced = false;
    let mut node_writer = node_writer;
    let mut node_events = std::pin::pin!(node_events);
    let mut pod_events = std::pin::pin!(pod_events);
    let due: Due = Arc::default();
    loop {
        let next = due
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .min()
            .copied();
        let sleep = match next {
            Some(at) => Either::Left(tokio::time::sleep_until(at)),
            None => Either::Right(std::future::pending::<()>()),
        };
        tokio::select! {
            ev = node_events.next() => match ev {
                Some(Ok(ev)) => {
                    node_seen(&nodes, &ev, &due);
                    node_writer.apply_watcher_event(&ev);
                }
                Some(Err(e)) => debug!(error = %e, "node controller: node watch"),
                None => return,
            },
            ev = pod_events.next() => match ev {
                Some(Ok(Event::InitDone)) => pods_synced = true,
                Some(Ok(Event::Apply(p) | Event::InitApply(p) | Event::Delete(p))) => {
                    if let Some(node) = serde_json::to_value(&p).ok().as_ref().and_then(node_failure::nodes_to_check) {
                        wake(&due, node, Instant::now() + BATCH);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => debug!(error = %e, "node controller: pod watch"),
                None => return,
            },
            () = sleep => {
                let now = Instant::now();
                let ready: Vec<String> = {
                    let mut d = due.lock().unwrap_or_else(|e| e.into_inner());
                    let ready: Vec<String> =
                        d.iter().filter(|(_, at)| **at <= now).map(|(k, _)| k.clone()).collect();
                    for k in &ready {
                        d.remove(k);
                    }
                    ready
                };
                for node in ready {
                    if !shared.leads() {
                        wake(&due, node, now + RETRY);
                        continue;
                    }
                    // A pass on empty caches would see no Workload on the
                    // node and never look again: passes wait for both
                    // first lists.
                    let synced = pods_synced
                        && workloads.wait_until_ready().now_or_never().is_some();
                    let done = if synced {
                        pass(&shared, &nodes, &pods, &workloads, &node).await
                    } else {
                        Err(PassError::NotSynced)
                    };
                    if let Err(e) = done {
                        debug!(%node, error = %e, "node controller; retrying");
                        wake(&due, node, Instant::now() + RETRY);
                    }
                }
            }
        }
    }
}

/// A node event, seen before the cache takes it: a node that appears or
/// goes, or whose readiness or taints changed, is woken.
fn node_seen(cache: &Store<Node>, ev: &Event<Node>, due: &Due) {
    let at = Instant::now() + BATCH;
    match ev {
        Event::Apply(n) => {
            let before = cache.get(&reflector::ObjectRef::from_obj(n));
            let changed = match (before, serde_json::to_value(n)) {
                (Some(old), Ok(new)) => serde_json::to_value(&*old)
                    .map_or(true, |old| node_failure::node_changed(&old, &new)),
                _ => true,
            };
            if changed {
                wake(due, n.name_any(), at);
            }
        }
        Event::InitApply(n) | Event::Delete(n) => wake(due, n.name_any(), at),
        Event::Init | Event::InitDone => {}
    }
}

/// One pass over a node: gather the facts, decide, write.
async fn pass(
    shared: &Shared,
    nodes: &Store<Node>,
    pods: &Store<Pod>,
    workloads: &Store<api::Workload>,
    node: &str,
) -> Result<(), PassError> {
    let node_value = nodes
        .get(&reflector::ObjectRef::new(node))
        .map(|n| serde_json::to_value(&*n))
        .transpose()?;
    let pods: Vec<Value> = pods
        .state()
        .iter()
        .filter(|p| {
            let spec = p.spec.as_ref();
            spec.and_then(|s| s.node_name.as_deref()) == Some(node)
                || spec
                    .and_then(|s| s.node_selector.as_ref())
                    .and_then(|s| s.get(keys::HOSTNAME_LABEL))
                    .map(String::as_str)
                    == Some(node)
        })
        .map(|p| serde_json::to_value(&**p))
        .collect::<Result<_, _>>()?;
    let pod_refs: Vec<&Value> = pods.iter().collect();
    let wanted: Vec<(String, String)> = pods.iter().filter_map(node_failure::workload_of).collect();
    let all = workloads.state();
    let relevant: Vec<&api::Workload> = all
        .iter()
        .map(|w| &**w)
        .filter(|w| {
            node_failure::assigned_nodes(w).contains(node)
                || wanted.iter().any(|(ns, name)| {
                    w.metadata.namespace.as_deref() == Some(ns.as_str())
                        && w.metadata.name.as_deref() == Some(name.as_str())
                })
        })
        .collect();
    if relevant.is_empty() {
        return Ok(());
    }
    let flavor_tolerations = shared
        .flavors
        .state()
        .iter()
        .map(|f| (f.name_any(), f.spec.tolerations.clone().unwrap_or_default()))
        .collect();
    let facts = Facts {
        node_name: node,
        node: node_value.as_ref(),
        workloads: &relevant,
        pods: &pod_refs,
        flavor_tolerations: &flavor_tolerations,
    };
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let actions = node_failure::step(&facts, &now);
    execute(shared, actions).await
}

/// Sends the step's writes in order. A write refused for a stale
/// `resourceVersion` fails the pass (it is retried from fresh caches); a
/// pod or Workload gone is nothing to do.
async fn execute(shared: &Shared, actions: Vec<Action>) -> Result<(), PassError> {
    let client = &shared.client;
    for action in actions {
        match action {
            Action::WorkloadStatus {
                workload: (ns, name),
                patch,
            } => {
                info!(workload = %format!("{ns}/{name}"), status = %patch["status"], "node failure: Workload status");
                let api = Api::<api::Workload>::namespaced(client.clone(), &ns);
                send(
                    api.patch_status(&name, &params(), &Patch::Merge(&patch))
                        .await,
                    &name,
                )?;
            }
            Action::WorkloadEvent {
                workload: (ns, name),
                reason,
                note,
            } => {
                let reference = ObjectReference {
                    api_version: Some("kueue.x-k8s.io/v1beta2".into()),
                    kind: Some("Workload".into()),
                    name: Some(name),
                    namespace: Some(ns),
                    ..Default::default()
                };
                shared
                    .publish(&reference, Note::normal(&reason, note))
                    .await;
            }
            Action::FailPod {
                pod: (ns, name),
                patch,
            } => {
                // The pod belongs to the job of a Workload batchgate
                // admitted (its workload annotation): failing it is what
                // Kueue does, so the job makes a new one elsewhere.
                let api = Api::<Pod>::namespaced(client.clone(), &ns);
                let sent = api
                    .patch_status(&name, &params(), &Patch::Merge(&patch))
                    .await;
                if !matches!(&sent, Err(kube::Error::Api(e)) if e.code == 404) {
                    send(sent, &name)?;
                    let reference = ObjectReference {
                        api_version: Some("v1".into()),
                        kind: Some("Pod".into()),
                        name: Some(name),
                        namespace: Some(ns),
                        ..Default::default()
                    };
                    let note = Note::normal(
                        node_failure::POD_EVENT_REASON,
                        node_failure::POD_MESSAGE.to_string(),
                    );
                    shared.publish(&reference, note).await;
                }
            }
        }
    }
    Ok(())
}

fn send<T>(sent: Result<T, kube::Error>, name: &str) -> Result<(), PassError> {
    match sent {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Err(PassError::Conflict(name.to_string())),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::controllers::vetting::testing::scripted_client;

    /// The executor sends each write as the step gives it: the Workload's
    /// status merge patch with its precondition, the eviction's event, the
    /// pod's status patch then its event; a pod gone is skipped quietly.
    #[tokio::test]
    async fn writes_go_out_as_decided() {
        let (client, sent) = scripted_client(|method, path, body| match method {
            "PATCH" if path.ends_with("/pods/gone/status") => (
                404,
                json!({"kind": "Status", "code": 404, "message": "not found"}),
            ),
            _ => (200, body.clone()),
        });
        let shared = Shared::without_kueue(client);
        let key = ("ns".to_string(), "wl".to_string());
        let add = json!({"metadata": {"resourceVersion": "7"},
            "status": {"unhealthyNodes": [{"name": "n1"}]}});
        let remove = json!({"metadata": {"resourceVersion": "8"},
            "status": {"unhealthyNodes": null}});
        let evict = json!({"metadata": {"resourceVersion": "9"},
            "status": {"conditions": [], "unhealthyNodes": null}});
        let fail = json!({"metadata": {"resourceVersion": "3"},
            "status": {"phase": "Failed", "conditions": []}});
        execute(
            &shared,
            vec![
                Action::WorkloadStatus {
                    workload: key.clone(),
                    patch: add.clone(),
                },
                Action::WorkloadStatus {
                    workload: key.clone(),
                    patch: remove.clone(),
                },
                Action::WorkloadStatus {
                    workload: key.clone(),
                    patch: evict.clone(),
                },
                Action::WorkloadEvent {
                    workload: key.clone(),
                    reason: "EvictedDueToNodeFailures".into(),
                    note: "Workload eviction triggered due to multiple TAS assigned node failures, including: n1, n2".into(),
                },
                Action::FailPod {
                    pod: ("ns".into(), "p".into()),
                    patch: fail.clone(),
                },
                Action::FailPod {
                    pod: ("ns".into(), "gone".into()),
                    patch: fail.clone(),
                },
            ],
        )
        .await
        .unwrap();
        let sent = sent.lock().unwrap().clone();
        let lines: Vec<&str> = sent.iter().map(|r| r.line.as_str()).collect();
        let wl = "PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status?&fieldManager=batchgate";
        assert_eq!(
            lines,
            [
                wl,
                wl,
                wl,
                "POST /apis/events.k8s.io/v1/namespaces/ns/events",
                "PATCH /api/v1/namespaces/ns/pods/p/status?&fieldManager=batchgate",
                "POST /apis/events.k8s.io/v1/namespaces/ns/events",
                "PATCH /api/v1/namespaces/ns/pods/gone/status?&fieldManager=batchgate",
            ]
        );
        assert_eq!(sent[0].body, add);
        assert_eq!(sent[1].body, remove);
        assert_eq!(sent[2].body, evict);
        assert_eq!(sent[3].body["reason"], "EvictedDueToNodeFailures");
        assert_eq!(sent[3].body["regarding"]["kind"], "Workload");
        assert_eq!(sent[4].body, fail);
        assert_eq!(sent[5].body["reason"], "PodTerminatedByKueue");
        assert_eq!(
            sent[5].body["note"],
            "Pod terminated by Kueue NodeController due to node taint"
        );
        assert_eq!(sent[5].body["regarding"]["name"], "p");
    }

    /// A Workload changed since it was read fails the pass, to be retried
    /// from fresh caches; nothing after it is sent.
    #[tokio::test]
    async fn a_stale_write_stops_the_pass() {
        let (client, sent) = scripted_client(|_, _, _| {
            (
                409,
                json!({"kind": "Status", "code": 409, "message": "conflict"}),
            )
        });
        let shared = Shared::without_kueue(client);
        let patch = json!({"metadata": {"resourceVersion": "7"}, "status": {"unhealthyNodes": [{"name": "n1"}]}});
        let out = execute(
            &shared,
            vec![
                Action::WorkloadStatus {
                    workload: ("ns".into(), "wl".into()),
                    patch: patch.clone(),
                },
                Action::FailPod {
                    pod: ("ns".into(), "p".into()),
                    patch,
                },
            ],
        )
        .await;
        assert!(matches!(out, Err(PassError::Conflict(n)) if n == "wl"));
        assert_eq!(sent.lock().unwrap().len(), 1);
    }
}
