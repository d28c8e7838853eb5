//! Kueue's workload controller's share for Workloads made without a job
//! (decided by [`crate::jobs::deactivation`]): the maximum execution time,
//! timed here and written as `DeactivationTarget` ([`Write::Exceeded`]),
//! and a `DeactivationTarget` turned into `spec.active: false`, which the
//! engine then evicts. A job's Workload gets both from its job's step.

use std::collections::HashMap;

use kube::{api::Patch, Api, Client};
use serde_json::json;
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::{now_ms, now_time, params, split_key, Controller, Input, Key, Write};
use crate::api::kueue::v1beta2 as api;
use crate::jobs::deactivation::{step, Step};

#[derive(Default)]
pub(super) struct Jobless {
    /// When each admitted jobless Workload with a maximum runs out (ms
    /// since the epoch), and its maximum.
    deadlines: HashMap<Key, (i64, i32)>,
    /// Workloads to make inactive, with the resourceVersion decided on.
    deactivate: HashMap<Key, String>,
}

impl Jobless {
    pub fn forget(&mut self, k: &str) {
        self.deadlines.remove(k);
        self.deactivate.remove(k);
    }
}

impl Controller {
    /// A Workload as the watch brings it; `owned`: a job owns it.
    pub(super) fn observe_jobless(&mut self, k: &Key, wl: &api::Workload, owned: bool) {
        self.jobless.forget(k);
        if owned {
            return;
        }
        let status = wl.status.as_ref();
        let conds = status
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        let max = wl.spec.maximum_execution_time_seconds;
        let now = now_time();
        match step(
            wl.spec.active.unwrap_or(true),
            max,
            status.and_then(|s| s.accumulated_past_execution_time_seconds),
            conds,
            &now,
        ) {
            Step::Idle => {}
            Step::At(at) => {
                self.jobless
                    .deadlines
                    .insert(k.clone(), (at, max.unwrap_or_default()));
            }
            Step::Exceeded { max_secs } => {
                self.jobless
                    .deadlines
                    .insert(k.clone(), (now.0.as_millisecond(), max_secs));
            }
            Step::Deactivate => {
                let rv = kube::ResourceExt::resource_version(wl).unwrap_or_default();
                self.jobless.deactivate.insert(k.clone(), rv);
            }
        }
    }

    /// Sends what is due (on the leader only): the `DeactivationTarget` of
    /// each Workload whose time ran out, through the Workload's write
    /// queue, and each `spec.active: false`.
    pub(super) fn sync_jobless(&mut self) {
        let now = now_ms();
        let mut expired: Vec<(Key, i32)> = self
            .jobless
            .deadlines
            .iter()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(k, (_, max))| (k.clone(), *max))
            .collect();
        expired.sort();
        for (k, max_secs) in expired {
            self.jobless.deadlines.remove(&k);
            self.push_write(k, Write::Exceeded { max_secs });
        }
        for (k, rv) in self.jobless.deactivate.drain() {
            tokio::spawn(deactivate(self.client.clone(), k, rv, self.tx.clone()));
        }
    }

    /// A deactivation to try again (its write failed).
    pub(super) fn deactivate_again(&mut self, k: Key, resource_version: String) {
        self.jobless.deactivate.insert(k, resource_version);
    }
}

/// `spec.active: false` on the resourceVersion decided on. A conflict
/// needs nothing more (the watch brings the newer Workload, decided on
/// again); another failure is tried again after a pause.
pub(super) async fn deactivate(
    client: Client,
    key: Key,
    resource_version: String,
    tx: mpsc::UnboundedSender<Input>,
) {
    let (namespace, name) = split_key(&key);
    let api = Api::<api::Workload>::namespaced(client, namespace);
    let patch = json!({
        "metadata": {"resourceVersion": resource_version},
        "spec": {"active": false},
    });
    match api.patch(name, &params(), &Patch::Merge(&patch)).await {
        Ok(_) => debug!(workload = %key, "deactivated for its DeactivationTarget"),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
        Err(e) => {
            warn!(workload = %key, error = %e, "deactivation not written; trying again");
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            let _ = tx.send(Input::Deactivate(key, resource_version));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The executor: one merge patch of `spec.active`, on the
    /// resourceVersion decided on.
    #[tokio::test]
    async fn a_deactivation_is_one_patch_of_spec_active() {
        use crate::controllers::vetting::testing::recording_client;
        let (client, sent) = recording_client();
        let (tx, _rx) = mpsc::unbounded_channel();
        deactivate(client, "ns/wl".into(), "5".into(), tx).await;
        assert_eq!(
            *sent.lock().unwrap(),
            ["PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl"]
        );
    }
}
