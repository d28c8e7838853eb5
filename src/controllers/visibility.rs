//! Publishes, per LocalQueue, the ordered pending Workloads of the
//! queueing engine as a ConfigMap (format: [`crate::visibility`]), for
//! `kubectl kueue list workload`'s "Position in Queue".
//!
//! Cheap at scale: at most one pass a second over the engine's pending
//! queues, a write only for a LocalQueue whose list changed since its last
//! write landed, at most one write in flight per LocalQueue (server-side
//! apply, so a missing ConfigMap is created), and a LocalQueue gone from
//! the engine has its ConfigMap deleted.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    api::{DeleteParams, Patch, PatchParams},
    Api, Client,
};
use serde_json::json;
use tracing::debug;

use super::queueing::MANAGER;
use crate::{
    queueing::Engine,
    visibility::{self, Entry, Pending},
};

/// At most one pass this often.
const EVERY: Duration = Duration::from_secs(1);

type QueueId = (String, String);

#[derive(Default)]
struct State {
    /// What landed last, per LocalQueue.
    published: HashMap<QueueId, Pending>,
    in_flight: HashSet<QueueId>,
}

#[derive(Default)]
pub struct Publisher {
    state: Arc<Mutex<State>>,
    last_pass: Option<Instant>,
}

/// Every LocalQueue's pending list, from the engine.
pub fn pending_lists(engine: &Engine) -> BTreeMap<QueueId, Pending> {
    let mut out: BTreeMap<QueueId, Pending> = engine
        .local_queues()
        .map(|lq| {
            (
                (lq.namespace.clone(), lq.name.clone()),
                Pending {
                    cluster_queue: lq.cluster_queue.clone(),
                    ..Pending::default()
                },
            )
        })
        .collect();
    let cluster_queues: std::collections::BTreeSet<&str> = engine
        .local_queues()
        .map(|lq| lq.cluster_queue.as_str())
        .collect();
    for cq in cluster_queues {
        let entries: Vec<Entry> = engine
            .pending_workloads(cq)
            .iter()
            .filter_map(|k| engine.workload(k))
            .map(|w| Entry {
                namespace: w.namespace.to_string(),
                local_queue: w.queue_name.to_string(),
                name: w.name.clone(),
                priority: w.priority,
                created: w.created,
                uid: w.uid.to_string(),
            })
            .collect();
        for (id, p) in visibility::by_local_queue(cq, entries) {
            // A Workload waits in its LocalQueue's ClusterQueue only.
            if let Some(slot) = out.get_mut(&id) {
                if slot.cluster_queue == cq {
                    *slot = p;
                }
            }
        }
    }
    out
}

impl Publisher {
    /// Called from the queueing controller's status tick.
    pub fn tick(&mut self, engine: &Engine, client: &Client) {
        if self.last_pass.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        self.last_pass = Some(Instant::now());
        let lists = pending_lists(engine);
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let gone: Vec<QueueId> = state
            .published
            .keys()
            .filter(|id| !lists.contains_key(*id))
            .cloned()
            .collect();
        for id in gone {
            if !state.in_flight.insert(id.clone()) {
                continue;
            }
            let shared = self.state.clone();
            let client = client.clone();
            tokio::spawn(async move {
                let api = Api::<ConfigMap>::namespaced(client, &id.0);
                let r = api
                    .delete(
                        &visibility::config_map_name(&id.1),
                        &DeleteParams::default(),
                    )
                    .await;
                let done = match r {
                    Ok(_) => true,
                    Err(kube::Error::Api(e)) => e.code == 404,
                    Err(_) => false,
                };
                if let Ok(mut s) = shared.lock() {
                    s.in_flight.remove(&id);
                    if done {
                        s.published.remove(&id);
                    }
                }
            });
        }
        for (id, pending) in lists {
            if state.published.get(&id) == Some(&pending) || state.in_flight.contains(&id) {
                continue;
            }
            state.in_flight.insert(id.clone());
            let shared = self.state.clone();
            let client = client.clone();
            tokio::spawn(async move {
                let name = visibility::config_map_name(&id.1);
                let cm = json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": name,
                        "namespace": id.0,
                        "labels": {visibility::LABEL: "true", "app.kubernetes.io/managed-by": "batchgate"},
                        "annotations": {visibility::LOCAL_QUEUE_ANNOTATION: id.1},
                    },
                    "data": pending.encode(),
                });
                let api = Api::<ConfigMap>::namespaced(client, &id.0);
                let r = api
                    .patch(
                        &name,
                        &PatchParams::apply(MANAGER).force(),
                        &Patch::Apply(cm),
                    )
                    .await;
                if let Err(e) = &r {
                    debug!(namespace = %id.0, local_queue = %id.1, error = %e, "pending list not published");
                }
                if let Ok(mut s) = shared.lock() {
                    s.in_flight.remove(&id);
                    if r.is_ok() {
                        s.published.insert(id, pending);
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::queueing::{
        ClusterQueue, FlavorQuotas, LocalQueue, PodSet, Preemption, QueueingStrategy,
        ResourceFlavor, ResourceGroup, ResourceQuota, StopPolicy, Workload,
    };
    use crate::selector::LabelSelector;

    fn cq(name: &str) -> ClusterQueue {
        ClusterQueue {
            name: name.into(),
            cohort: None,
            queueing_strategy: QueueingStrategy::BestEffortFIFO,
            namespace_selector: Some(LabelSelector::default()),
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".into()],
                flavors: vec![FlavorQuotas {
                    name: "f".into(),
                    resources: vec![ResourceQuota {
                        name: "cpu".into(),
                        nominal: 1000,
                        borrowing_limit: None,
                        lending_limit: None,
                    }],
                }],
            }],
            preemption: Preemption::default(),
            flavor_fungibility: Default::default(),
            stop_policy: StopPolicy::None,
        }
    }

    fn lq(name: &str, cq: &str) -> LocalQueue {
        LocalQueue {
            namespace: "ns".into(),
            name: name.into(),
            cluster_queue: cq.into(),
            stop_policy: StopPolicy::None,
        }
    }

    fn wl(name: &str, queue: &str, priority: i32, created: i64) -> Workload {
        Workload {
            namespace: "ns".into(),
            name: name.into(),
            uid: format!("uid-{name}").into(),
            job_uid: None,
            queue_name: queue.into(),
            priority,
            created,
            active: true,
            finished: false,
            pod_sets: vec![PodSet {
                name: "main".into(),
                count: 1,
                requests: [("cpu".to_string(), 1000)].into(),
                node_selector: BTreeMap::new(),
                tolerations: vec![],
            }],
            admission: None,
        }
    }

    #[test]
    fn every_local_queue_gets_its_pending_workloads_in_queue_order() {
        let mut e = Engine::new();
        e.upsert_namespace("ns", BTreeMap::new());
        e.upsert_flavor(ResourceFlavor {
            name: "f".into(),
            node_labels: BTreeMap::new(),
            node_taints: vec![],
            tolerations: vec![],
        });
        e.upsert_cluster_queue(cq("cq"));
        e.upsert_cluster_queue(cq("idle"));
        e.upsert_local_queue(lq("a", "cq"));
        e.upsert_local_queue(lq("b", "cq"));
        e.upsert_local_queue(lq("quiet", "idle"));
        for w in [
            wl("a-old", "a", 0, 10),
            wl("a-new", "a", 0, 30),
            wl("a-urgent", "a", 5, 40),
            wl("b-1", "b", 0, 20),
            wl("lost", "nowhere", 0, 5),
        ] {
            e.upsert_workload(w);
        }
        let lists = pending_lists(&e);
        let id = |n: &str| ("ns".to_string(), n.to_string());
        assert_eq!(lists.len(), 3);
        assert_eq!(lists[&id("a")].workloads, ["a-urgent", "a-old", "a-new"]);
        assert_eq!(lists[&id("a")].cluster_queue, "cq");
        assert_eq!(lists[&id("b")].workloads, ["b-1"]);
        assert!(lists[&id("quiet")].workloads.is_empty());
        assert_eq!(lists[&id("quiet")].cluster_queue, "idle");

        // Admitting the head takes it off its list.
        let cycle = e.schedule(1_000);
        assert!(!cycle.decisions.is_empty());
        let lists = pending_lists(&e);
        assert_eq!(lists[&id("a")].workloads, ["a-old", "a-new"]);
    }
}
