//! ClusterQueue and LocalQueue status: written at most once per period
//! per queue, only on change.

use super::*;
use crate::vocabulary::pointer::At;

impl Controller {
    /// Logs the Workload status writes so far when a thousand more landed
    /// (what each kind costs the apiserver).
    pub(super) fn log_tally(&mut self) {
        let Ok(t) = self.tally.lock() else { return };
        let total: u64 = t.values().sum();
        if total >= self.tally_logged + 1000 {
            self.tally_logged = total;
            info!(total, writes = ?*t, "Workload status writes");
        }
    }

    /// `lqs`: the engine's LocalQueue statuses of this tick.
    pub(super) fn write_statuses(&mut self, lqs: Vec<LocalQueueStatus>) {
        self.status_due = false;
        // Every queue whose status changed since it was last written, and
        // when that was.
        let mut changed: Vec<(Option<Instant>, QueueKey, Value)> = Vec::new();
        let now = Instant::now();
        // A change to a queue written less than a period ago waits for a
        // later tick.
        let mut waiting = false;
        let mut due = |at: Option<&Instant>| {
            let ok = queue_status_due(at.copied(), now);
            waiting |= !ok;
            ok
        };
        for (name, s) in &self.cq_status {
            let queue = QueueKey::Cluster(name.clone());
            if self.status_in_flight.contains(&queue) {
                continue;
            }
            let prev = self.cq_written.get(name);
            let status = cq_status_json(s, prev);
            if prev != Some(&status) && due(self.status_written_at.get(&queue)) {
                changed.push((self.status_written_at.get(&queue).copied(), queue, status));
            }
        }
        let cq_active: BTreeMap<&str, bool> = self
            .cq_status
            .values()
            .map(|s| (s.name.as_str(), s.active.status))
            .collect();
        let specs = self.local_queue_specs();
        for s in lqs {
            let id = (s.namespace.clone(), s.name.clone());
            let queue = QueueKey::Local(id.0.clone(), id.1.clone());
            if self.status_in_flight.contains(&queue) {
                continue;
            }
            let (cq, stopped) = specs.get(&id).cloned().unwrap_or_default();
            let prev = self.lq_written.get(&id);
            let status = lq_status_json(&s, cq_active.get(cq.as_str()).copied(), stopped, prev);
            if prev != Some(&status) && due(self.status_written_at.get(&queue)) {
                changed.push((self.status_written_at.get(&queue).copied(), queue, status));
            }
        }
        for (queue, status) in self.cohort_statuses() {
            if !self.status_in_flight.contains(&queue) && due(self.status_written_at.get(&queue)) {
                changed.push((self.status_written_at.get(&queue).copied(), queue, status));
            }
        }
        // Within the budget, the queues written longest ago first; the
        // rest at a later tick.
        let room = QUEUE_STATUS_WRITES.saturating_sub(self.status_in_flight.len());
        if changed.len() > room || waiting {
            self.status_due = true;
        }
        changed.sort_by_key(|(at, ..)| *at);
        for (_, queue, status) in changed.into_iter().take(room) {
            match &queue {
                QueueKey::Cluster(name) => self.cq_written.insert(name.clone(), status.clone()),
                QueueKey::Local(ns, name) => self
                    .lq_written
                    .insert((ns.clone(), name.clone()), status.clone()),
                QueueKey::Cohort(name) => self.cohort_written.insert(name.clone(), status.clone()),
            };
            self.status_in_flight.insert(queue.clone());
            self.status_written_at.insert(queue.clone(), Instant::now());
            let client = self.client.clone();
            let tx = self.tx.clone();
            tokio::spawn(async move {
                let patch = Patch::Merge(json!({ "status": status }));
                let written = match &queue {
                    QueueKey::Cluster(name) => Api::<api::ClusterQueue>::all(client)
                        .patch_status(name, &params(), &patch)
                        .await
                        .map(|_| ()),
                    QueueKey::Local(ns, name) => Api::<api::LocalQueue>::namespaced(client, ns)
                        .patch_status(name, &params(), &patch)
                        .await
                        .map(|_| ()),
                    QueueKey::Cohort(name) => Api::<api::Cohort>::all(client)
                        .patch_status(name, &params(), &patch)
                        .await
                        .map(|_| ()),
                };
                if let Err(e) = &written {
                    debug!(queue = ?queue, error = %e, "queue status not written");
                }
                let _ = tx.send(Input::StatusWritten {
                    queue,
                    ok: written.is_ok(),
                });
            });
        }
    }

    pub(super) fn local_queue_specs(&self) -> BTreeMap<(String, String), (String, bool)> {
        local_queue_specs(&self.engine)
    }
}

/// Each LocalQueue's ClusterQueue and whether it is stopped, by (namespace, name).
pub(super) fn local_queue_specs(engine: &Engine) -> BTreeMap<(String, String), (String, bool)> {
    engine
        .local_queues()
        .map(|lq| {
            (
                (lq.namespace.clone(), lq.name.clone()),
                (lq.cluster_queue.clone(), lq.stop_policy.is_stopped()),
            )
        })
        .collect()
}

/// Whether a queue whose status changed may be written at `now`, its last
/// write having been at `last`: once per [`QUEUE_STATUS_PERIOD`].
pub(super) fn queue_status_due(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|t| now.saturating_duration_since(t) >= QUEUE_STATUS_PERIOD)
}

/// Keeps an `Active` condition's transition time when its status holds.
pub(super) fn active_condition(
    status: bool,
    reason: &str,
    message: &str,
    prev: Option<&Value>,
) -> Value {
    let s = if status { "True" } else { "False" };
    let time = prev
        .and_then(|p| p.at("/conditions/0"))
        .filter(|c| c["status"] == s)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now_time()));
    json!({"type": "Active", "status": s, "reason": reason, "message": message, "lastTransitionTime": time})
}

pub(super) fn flavors_json(flavors: &[crate::queueing::FlavorUsage]) -> Vec<Value> {
    flavors
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "resources": f.resources.iter().map(|r| json!({
                    "name": r.name,
                    "total": quantity::format(&r.name, r.total),
                    "borrowed": quantity::format(&r.name, r.borrowed),
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// `flavorsReservation` is the quota the reserving workloads hold, assumed
/// admissions included; `flavorsUsage` what the admitted ones hold (Kueue's
/// `ReservedResources` and `AdmittedResources`). Like Kueue's, both count
/// an admission with no check to wait for from its decision, before its
/// Workload shows it.
pub(super) fn cq_status_json(s: &ClusterQueueStatus, prev: Option<&Value>) -> Value {
    let mut status = json!({
        "pendingWorkloads": s.pending_workloads,
        "reservingWorkloads": s.reserving_workloads,
        "admittedWorkloads": s.admitted_workloads,
        "flavorsReservation": flavors_json(&s.flavors_usage),
        "flavorsUsage": flavors_json(&s.flavors_admitted),
        "conditions": [active_condition(s.active.status, s.active.reason, &s.active.message, prev)],
    });
    if let Some(share) = s.weighted_share {
        status["fairSharing"] = json!({"weightedShare": share});
    }
    status
}

pub(super) fn lq_status_json(
    s: &LocalQueueStatus,
    cq_active: Option<bool>,
    stopped: bool,
    prev: Option<&Value>,
) -> Value {
    let flavors = |usage: &BTreeMap<String, BTreeMap<String, i64>>| -> Vec<Value> {
        usage
            .iter()
            .map(|(flavor, res)| {
                json!({
                    "name": flavor,
                    "resources": res.iter().map(|(r, q)| json!({
                        "name": r, "total": quantity::format(r, *q),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect()
    };
    let active = if stopped {
        active_condition(false, "Stopped", "LocalQueue is stopped", prev)
    } else {
        match cq_active {
            Some(true) => active_condition(
                true,
                "Ready",
                "Can submit new workloads to localQueue",
                prev,
            ),
            Some(false) => active_condition(
                false,
                "ClusterQueueIsInactive",
                "Can't submit new workloads to clusterQueue",
                prev,
            ),
            None => active_condition(
                false,
                "ClusterQueueDoesNotExist",
                "Can't submit new workloads to clusterQueue",
                prev,
            ),
        }
    };
    let mut status = json!({
        "pendingWorkloads": s.pending_workloads,
        "reservingWorkloads": s.reserving_workloads,
        "admittedWorkloads": s.admitted_workloads,
        "flavorsReservation": flavors(&s.usage),
        "flavorsUsage": flavors(&s.admitted_usage),
        "conditions": [active],
    });
    if let Some(afs) = &s.admission_fair_sharing {
        // Kueue's LocalQueue reconciler: the decayed usage and when it was
        // sampled (weightedShare is the ClusterQueue-level fair sharing's).
        let at = k8s_openapi::jiff::Timestamp::from_millisecond(afs.last_update)
            .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        status["fairSharing"] = json!({
            "weightedShare": 0,
            "admissionFairSharingStatus": {
                "consumedResources": afs.consumed_resources,
                "lastUpdate": Time(at),
            },
        });
    }
    status
}
