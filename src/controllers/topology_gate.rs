//! The topology ungater (Kueue's `TopologyUngater`): releases the pods of
//! a Workload admitted by topology-aware scheduling from the
//! `kueue.x-k8s.io/topology` gate, each onto its domain. The decision is
//! `jobs::topology_gate::plan`; this shell feeds it and sends its patches.
//!
//! It watches the pods batchgate started (label `kueue.x-k8s.io/podset`),
//! cached without what it never reads, and keeps no Workload cache: a pass
//! reads its Workload once. A pass runs for a Workload when one of its
//! pods is gated, or when a release it waits for is seen (the gate gone,
//! or the pod deleted); passes are batched a short moment, so a job's
//! pods created together are released in one pass. While a release is
//! unseen the Workload's next pass waits, so a stale cache never releases
//! a pod twice or too many.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{future::Either, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::{
    api::Patch,
    runtime::{
        reflector::{self, Store},
        watcher::{self, Event},
        WatchStreamExt,
    },
    Api, Client, ResourceExt,
};
use serde_json::Value;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::context::{params, Shared};
use crate::{
    api::kueue::v1beta2 as api,
    jobs::topology_gate::{self, Expectations},
    vocabulary::{keys, patch::PatchOp},
};

/// How long a woken Workload waits for its other pods' events (Kueue's
/// `UpdatesBatchPeriod` plays this part).
const BATCH: Duration = Duration::from_millis(200);
/// A Workload whose pass could not finish is looked at again after this.
const RETRY: Duration = Duration::from_secs(2);
/// Patches in flight at once.
const PARALLEL: usize = 8;

/// `namespace/name` of a Workload.
type Key = (String, String);

#[derive(Default)]
struct State {
    expectations: Expectations,
    /// Workloads to pass over, and from when.
    due: BTreeMap<Key, Instant>,
}

impl State {
    fn wake(&mut self, key: Key, at: Instant) {
        let when = self.due.entry(key).or_insert(at);
        *when = (*when).min(at);
    }
}

fn expectation_key((ns, name): &Key) -> String {
    format!("{ns}/{name}")
}

/// Keeps what the ungater reads of a pod (metadata, node selector, gates,
/// phase) and drops the rest from the cache.
fn trim(pod: &mut Pod) {
    pod.managed_fields_mut().clear();
    if let Some(spec) = pod.spec.as_mut() {
        *spec = k8s_openapi::api::core::v1::PodSpec {
            node_selector: spec.node_selector.take(),
            scheduling_gates: spec.scheduling_gates.take(),
            node_name: spec.node_name.take(),
            ..Default::default()
        };
    }
    if let Some(status) = pod.status.as_mut() {
        *status = k8s_openapi::api::core::v1::PodStatus {
            phase: status.phase.take(),
            ..Default::default()
        };
    }
}

/// Runs the ungater until the process ends.
pub async fn run(shared: Shared) {
    let (reader, writer) = reflector::store::<Pod>();
    let pods = Api::<Pod>::all(shared.client.clone());
    let events = watcher::watcher(pods, watcher::Config::default().labels(keys::PODSET_LABEL))
        .default_backoff()
        .modify(trim)
        .reflect(writer);
    let mut events = std::pin::pin!(events);
    let state = Arc::new(Mutex::new(State::default()));
    loop {
        let next = state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .due
            .values()
            .min()
            .copied();
        let sleep = match next {
            Some(at) => Either::Left(tokio::time::sleep_until(at)),
            None => Either::Right(std::future::pending::<()>()),
        };
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(ev)) => seen(&state, ev),
                Some(Err(e)) => debug!(error = %e, "topology ungater: pod watch"),
                None => return,
            },
            () = sleep => {
                let now = Instant::now();
                let ready: Vec<Key> = {
                    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
                    let ready: Vec<Key> = s
                        .due
                        .iter()
                        .filter(|(_, at)| **at <= now)
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in &ready {
                        s.due.remove(k);
                    }
                    ready
                };
                for key in ready {
                    if !shared.leads() {
                        // A standby decides nothing; it looks again once it may.
                        state.lock().unwrap_or_else(|e| e.into_inner()).wake(key, now + RETRY);
                        continue;
                    }
                    if let Err(e) = pass(&shared.client, &reader, &state, &key).await {
                        debug!(workload = %expectation_key(&key), error = %e, "topology ungater; retrying");
                        state.lock().unwrap_or_else(|e| e.into_inner()).wake(key, Instant::now() + RETRY);
                    }
                }
            }
        }
    }
}

/// A pod event: a release seen (the gate gone, or the pod deleted) is
/// struck from the expectations; a Workload with a gated pod, or one still
/// waiting on a release, is woken.
fn seen(state: &Mutex<State>, ev: Event<Pod>) {
    let (pod, deleted) = match ev {
        Event::Apply(p) | Event::InitApply(p) => (p, false),
        Event::Delete(p) => (p, true),
        Event::Init => return,
        Event::InitDone => {
            // A relist shows every release made so far; a pod deleted while
            // the watch was down sends no event, so nothing is waited for.
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            s.expectations = Expectations::default();
            return;
        }
    };
    let Some(wl) = pod.annotations().get(keys::WORKLOAD_ANNOTATION) else {
        return;
    };
    let key = (pod.namespace().unwrap_or_default(), wl.clone());
    let ek = expectation_key(&key);
    let gated = pod.spec.as_ref().is_some_and(|s| {
        s.scheduling_gates
            .iter()
            .flatten()
            .any(|g| g.name == keys::TOPOLOGY_GATE)
    });
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    let waiting = !s.expectations.satisfied(&ek);
    if deleted || !gated {
        s.expectations.observed(&ek, &pod.name_any());
    }
    if (gated && !deleted) || waiting {
        s.wake(key, Instant::now() + BATCH);
    }
}

#[derive(Debug, thiserror::Error)]
enum PassError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Gate(#[from] topology_gate::GateError),
    #[error("encoding: {0}")]
    Json(#[from] serde_json::Error),
    #[error("releases of an earlier pass not seen yet")]
    Waiting,
}

/// One pass over a Workload: read it, decide, patch the pods to release.
async fn pass(
    client: &Client,
    pods: &Store<Pod>,
    state: &Mutex<State>,
    key: &Key,
) -> Result<(), PassError> {
    let ek = expectation_key(key);
    if !state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .expectations
        .satisfied(&ek)
    {
        return Err(PassError::Waiting);
    }
    let (ns, name) = key;
    let wl_api = Api::<api::Workload>::namespaced(client.clone(), ns);
    let Some(named) = wl_api.get_opt(name).await? else {
        return Ok(());
    };
    // A scaled-up elastic job's pods keep its first slice's name: once that
    // slice is replaced, they are released by the slice replacing it.
    let wl = if topology_gate::replaced(&named) {
        let Some(uid) = named.labels().get(keys::JOB_UID_LABEL) else {
            return Ok(());
        };
        let lp = kube::api::ListParams::default().labels(&format!("{}={uid}", keys::JOB_UID_LABEL));
        let listed = wl_api.list(&lp).await?.items;
        match topology_gate::successor(&named, &listed) {
            Some(next) => next.clone(),
            None => return Ok(()),
        }
    } else {
        named
    };
    let listed: Vec<Value> = pods
        .state()
        .iter()
        .filter(|p| {
            p.namespace().as_deref() == Some(ns.as_str())
                && p.annotations().get(keys::WORKLOAD_ANNOTATION) == Some(name)
        })
        .map(|p| serde_json::to_value(&**p))
        .collect::<Result<_, _>>()?;
    let refs: Vec<&Value> = listed.iter().collect();
    let plan = topology_gate::plan_as(&wl, name, &refs)?;
    if plan.is_empty() {
        if topology_gate::successor_due(&wl, &refs) {
            // Granted by a newer slice whose admission just landed: the
            // replaced one's finish follows, and no pod event will say so.
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            s.wake(key.clone(), Instant::now() + RETRY);
        }
        return Ok(());
    }
    state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .expectations
        .expect(&ek, plan.iter().map(|(p, _)| p.clone()));
    let failed = release(client, ns, plan).await;
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    for pod in &failed {
        // No event will say so: the release is not waited for.
        s.expectations.observed(&ek, pod);
    }
    if !failed.is_empty() {
        s.wake(key.clone(), Instant::now() + RETRY);
    }
    Ok(())
}

/// Sends each pod's patch; returns the pods not released (changed under
/// the patch, gone, or refused).
async fn release(client: &Client, ns: &str, plan: Vec<(String, Vec<PatchOp>)>) -> Vec<String> {
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    futures::stream::iter(plan)
        .map(|(pod, ops)| {
            let api = api.clone();
            async move {
                let sent = match serde_json::to_value(&ops)
                    .and_then(serde_json::from_value::<json_patch::Patch>)
                {
                    Ok(p) => api.patch(&pod, &params(), &Patch::<()>::Json(p)).await,
                    Err(e) => {
                        warn!(%pod, error = %e, "topology ungater: patch not encoded");
                        return Some(pod);
                    }
                };
                match sent {
                    Ok(_) => None,
                    Err(e) => {
                        debug!(%pod, error = %e, "topology ungater: pod not released");
                        Some(pod)
                    }
                }
            }
        })
        .buffer_unordered(PARALLEL)
        .filter_map(futures::future::ready)
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::controllers::vetting::testing::scripted_client;

    /// The executor sends one JSON patch per released pod, and a pod whose
    /// patch is refused is not waited for.
    #[tokio::test]
    async fn a_release_is_one_json_patch_per_pod() {
        let (client, sent) = scripted_client(|_, path, _| {
            if path.ends_with("/p2") {
                (
                    422,
                    json!({"kind": "Status", "code": 422, "message": "test failed"}),
                )
            } else {
                (
                    200,
                    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"}}),
                )
            }
        });
        let ops = |rv: &str| {
            vec![PatchOp {
                op: "test",
                path: "/metadata/resourceVersion".into(),
                value: json!(rv),
            }]
        };
        let failed = release(
            &client,
            "ns",
            vec![("p1".into(), ops("1")), ("p2".into(), ops("2"))],
        )
        .await;
        assert_eq!(failed, ["p2"]);
        let mut lines: Vec<_> = sent
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.line.clone())
            .collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                "PATCH /api/v1/namespaces/ns/pods/p1?&fieldManager=batchgate",
                "PATCH /api/v1/namespaces/ns/pods/p2?&fieldManager=batchgate",
            ]
        );
        let bodies: Vec<_> = sent
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.body.clone())
            .collect();
        assert!(bodies
            .contains(&json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}])));
    }
}
