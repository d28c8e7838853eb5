//! The `kueue.x-k8s.io/resource-in-use` finalizer on ClusterQueues,
//! ResourceFlavors and Topologies (Kueue's ClusterQueue, ResourceFlavor
//! and Topology reconcilers):
//! the core says which change each one needs ([`finalizers::change`]);
//! this writes it, one write per object at a time, looked at on the status
//! tick.

use super::*;
use crate::queueing::finalizers::{self, Guarded};
use crate::vocabulary::keys;

/// What the controller keeps of a guarded object: what a finalizer write
/// needs.
#[derive(Debug, Clone)]
pub(super) struct Guard {
    resource_version: String,
    finalizers: Vec<String>,
    deleting: bool,
}

impl Guard {
    pub(super) fn of<K: Resource>(o: &K) -> Guard {
        let m = o.meta();
        Guard {
            resource_version: m.resource_version.clone().unwrap_or_default(),
            finalizers: m.finalizers.clone().unwrap_or_default(),
            deleting: m.deletion_timestamp.is_some(),
        }
    }
}

impl Controller {
    pub(super) fn sync_finalizers(&mut self) {
        let mut due = Vec::new();
        for ((kind, name), g) in &self.guarded {
            if self.guard_in_flight.contains(&(*kind, name.clone())) {
                continue;
            }
            let has = g
                .finalizers
                .iter()
                .any(|f| f == keys::RESOURCE_IN_USE_FINALIZER);
            if let Some(c) = finalizers::change(&self.engine, *kind, name, has, g.deleting) {
                due.push((*kind, name.clone(), g.clone(), c));
            }
        }
        for (kind, name, g, change) in due {
            self.guard_in_flight.insert((kind, name.clone()));
            let list = finalizers::apply(&g.finalizers, change);
            let client = self.client.clone();
            let tx = self.tx.clone();
            tokio::spawn(async move {
                let patch = json!([
                    {"op": "test", "path": "/metadata/resourceVersion", "value": g.resource_version},
                    {"op": "add", "path": "/metadata/finalizers", "value": list},
                ]);
                let result = match serde_json::from_value::<json_patch::Patch>(patch) {
                    Ok(p) => match kind {
                        Guarded::ClusterQueue => Api::<api::ClusterQueue>::all(client)
                            .patch(&name, &params(), &Patch::<()>::Json(p))
                            .await
                            .map(|_| ()),
                        Guarded::ResourceFlavor => Api::<api::ResourceFlavor>::all(client)
                            .patch(&name, &params(), &Patch::<()>::Json(p))
                            .await
                            .map(|_| ()),
                        Guarded::Topology => Api::<api::Topology>::all(client)
                            .patch(&name, &params(), &Patch::<()>::Json(p))
                            .await
                            .map(|_| ()),
                    },
                    Err(e) => {
                        warn!(error = %e, "finalizer patch not built");
                        Ok(())
                    }
                };
                match result {
                    Ok(()) => debug!(?kind, %name, ?change, "resource-in-use finalizer written"),
                    // Changed or gone since: the watch brings the news and
                    // the next tick decides again.
                    Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409 | 422) => {}
                    Err(e) => {
                        warn!(?kind, %name, error = %e, "resource-in-use finalizer not written")
                    }
                }
                let _ = tx.send(Input::GuardWritten { kind, name });
            });
        }
    }
}
