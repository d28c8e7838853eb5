//! The facts Kueue's metrics are recorded from (see
//! [`crate::metrics::kueue`]): what a landed Workload write was,
//! and the queues as the engine holds them.

use super::status::local_queue_specs;
use super::*;
use crate::metrics::kueue::{
    ClusterQueueSample, CohortSample, LocalQueueSample, QueueSnapshot, ResourceSample,
    WorkloadLabels,
};

/// What a Workload write tells Kueue's metrics once it has landed (Kueue
/// records after its patch succeeds).
#[derive(Debug, Clone)]
pub(super) enum Landing {
    Admitted {
        wl: WorkloadLabels,
        /// The Cohorts above its ClusterQueue, parent to root.
        cohorts: Vec<String>,
        /// Creation, or the last `Requeued` transition (Kueue's
        /// `QueuedWaitTime`), in Unix milliseconds.
        queued_ms: i64,
    },
    Evicted {
        wl: WorkloadLabels,
        reason: &'static str,
        /// Its first eviction for this reason.
        first: bool,
        /// The preemptor's ClusterQueue and the `Preempted` reason.
        preempted: Option<(String, &'static str)>,
    },
}

impl Landing {
    pub(super) fn record(&self, m: &KueueMetrics, now_ms: i64) {
        match self {
            Landing::Admitted {
                wl,
                cohorts,
                queued_ms,
            } => {
                let wait = (now_ms - queued_ms).max(0) as f64 / 1000.0;
                m.admitted(wl, cohorts, wait);
            }
            Landing::Evicted {
                wl,
                reason,
                first,
                preempted,
            } => {
                m.evicted(wl, reason, *first);
                if let Some((cq, why)) = preempted {
                    m.preempted(cq, why);
                }
            }
        }
    }
}

/// When the Workload was last queued: its `Requeued` condition's last
/// transition, else its creation (Kueue's `workload.QueuedWaitTime`).
pub(super) fn queued_ms(conds: &[Condition], created_ms: i64) -> i64 {
    conds
        .iter()
        .find(|c| c.type_ == condition::REQUEUED)
        .map_or(created_ms, |c| c.last_transition_time.0.as_millisecond())
}

/// Milli-units in the resource's own units (Kueue's `AsApproximateFloat64`).
fn units(milli: i64) -> f64 {
    milli as f64 / 1000.0
}

impl Controller {
    /// The ClusterQueue a Workload queues in, through its LocalQueue.
    pub(super) fn cluster_queue_of(&self, key: &str) -> Option<String> {
        let wl = self.engine.workload(key)?;
        self.engine
            .local_queue(&wl.namespace, &wl.queue_name)
            .map(|lq| lq.cluster_queue.clone())
    }

    /// What `w` will tell the metrics if it lands; `None` for writes Kueue
    /// counts nothing for.
    pub(super) fn landing(
        &mut self,
        key: &str,
        w: &Write,
        meta: &Meta,
        view: Option<&crate::queueing::Workload>,
    ) -> Option<Landing> {
        let (namespace, _) = split_key(key);
        let labels = |cq: &str| WorkloadLabels {
            namespace: namespace.to_string(),
            local_queue: view.map(|v| v.queue_name.to_string()).unwrap_or_default(),
            cluster_queue: cq.to_string(),
            priority_class: meta.priority_class.clone(),
        };
        match w {
            Write::Admit(a) => Some(Landing::Admitted {
                wl: labels(&a.cluster_queue),
                cohorts: self.engine.cohort_ancestors(&a.cluster_queue),
                queued_ms: queued_ms(&meta.conditions, meta.created_ms),
            }),
            Write::Evict {
                reason, preempted, ..
            } => {
                let preempting = self.preempting.remove(key);
                // The queue it held quota in, as its admission names it
                // (else the one its LocalQueue points to).
                let cq = view
                    .and_then(|v| v.admission.as_ref())
                    .map(|a| a.cluster_queue.clone())
                    .or_else(|| self.cluster_queue_of(key))?;
                let first = !meta
                    .evictions
                    .iter()
                    .any(|e| e.reason == reason.as_str() && e.underlying_cause.is_empty());
                Some(Landing::Evicted {
                    wl: labels(&cq),
                    reason: reason.as_str(),
                    first,
                    preempted: preempted.and_then(|p| Some((preempting?, p.as_str()))),
                })
            }
            Write::Pending { .. }
            | Write::Requeued { .. }
            | Write::Exceeded { .. }
            | Write::Replaced { .. }
            | Write::Replace(_) => None,
        }
    }

    /// The queues' gauges as the engine holds them now.
    /// `lqs`: the engine's LocalQueue statuses of this tick (the status
    /// writes read the same).
    pub(super) fn publish_metrics(&self, lqs: &[LocalQueueStatus]) {
        if !self.started {
            return;
        }
        self.metrics
            .publish(snapshot(&self.engine, lqs, self.finished.values()));
    }
}

/// Kueue's queue gauges as `engine` holds the queues now; `lqs`: its
/// [`Engine::local_queue_statuses`]; `finished`: the LocalQueue
/// (namespace, name) of each finished Workload.
pub fn snapshot<'a>(
    engine: &Engine,
    lqs: &[LocalQueueStatus],
    finished: impl IntoIterator<Item = &'a (String, String)>,
) -> QueueSnapshot {
    let pending = engine.pending_counts();
    let specs = local_queue_specs(engine);
    // Finished Workloads per LocalQueue, and per ClusterQueue through it.
    let mut lq_finished: BTreeMap<(String, String), usize> = BTreeMap::new();
    for lq in finished {
        *lq_finished.entry(lq.clone()).or_default() += 1;
    }
    let mut cq_finished: BTreeMap<&str, usize> = BTreeMap::new();
    for (lq, n) in &lq_finished {
        if let Some((cq, _)) = specs.get(lq) {
            *cq_finished.entry(cq.as_str()).or_default() += n;
        }
    }
    let mut cluster_queues = Vec::new();
    for name in engine.cluster_queue_names() {
        let (Some(cq), Some(s)) = (
            engine.cluster_queue(name),
            engine.cluster_queue_status(name),
        ) else {
            continue;
        };
        let (mut active, mut inadmissible) = pending
            .cluster_queues
            .get(name)
            .copied()
            .unwrap_or_default();
        if !s.active.status {
            // Kueue: a queue that cannot admit has nothing active.
            inadmissible += active;
            active = 0;
        }
        let held = |usage: &[crate::queueing::FlavorUsage], f: &str, r: &str| {
            usage
                .iter()
                .filter(|u| u.name == f)
                .flat_map(|u| &u.resources)
                .find(|x| x.name == r)
                .map_or(0, |x| x.total)
        };
        let resources = cq
            .resource_groups
            .iter()
            .flat_map(|g| &g.flavors)
            .flat_map(|f| f.resources.iter().map(move |r| (f, r)))
            .map(|(f, r)| ResourceSample {
                flavor: f.name.clone(),
                resource: r.name.clone(),
                nominal: units(r.nominal),
                borrowing_limit: r.borrowing_limit.map(units),
                lending_limit: r.lending_limit.map(units),
                reservation: units(held(&s.flavors_usage, &f.name, &r.name)),
                usage: units(held(&s.flavors_admitted, &f.name, &r.name)),
            })
            .collect();
        cluster_queues.push(ClusterQueueSample {
            name: name.to_string(),
            cohort: cq.cohort.clone().unwrap_or_default(),
            root_cohort: engine.cohort_ancestors(name).pop().unwrap_or_default(),
            pending_active: active,
            pending_inadmissible: inadmissible,
            reserving: s.reserving_workloads,
            admitted: s.admitted_workloads,
            finished: cq_finished.get(name).copied().unwrap_or(0),
            // Kueue's cache status: a deleted queue held by its
            // finalizer is `terminating` before anything else.
            status: if cq.terminating {
                "terminating"
            } else if s.active.status {
                "active"
            } else {
                "pending"
            },
            resources,
        });
    }
    let cq_active: BTreeMap<&str, bool> = cluster_queues
        .iter()
        .map(|q| (q.name.as_str(), q.status == "active"))
        .collect();
    let local_queues = lqs
        .iter()
        .map(|s| {
            let id = (s.namespace.clone(), s.name.clone());
            let (active, inadmissible) = pending.local_queues.get(&id).copied().unwrap_or_default();
            let (cq, stopped) = specs.get(&id).cloned().unwrap_or_default();
            let runs = !stopped && cq_active.get(cq.as_str()).copied().unwrap_or(false);
            let mut resources = Vec::new();
            for (f, rs) in &s.usage {
                for (r, q) in rs {
                    let admitted = s
                        .admitted_usage
                        .get(f)
                        .and_then(|x| x.get(r))
                        .copied()
                        .unwrap_or(0);
                    resources.push((f.clone(), r.clone(), units(*q), units(admitted)));
                }
            }
            LocalQueueSample {
                namespace: id.0.clone(),
                name: id.1.clone(),
                pending_active: if runs { active } else { 0 },
                pending_inadmissible: if runs {
                    inadmissible
                } else {
                    active + inadmissible
                },
                reserving: s.reserving_workloads,
                admitted: s.admitted_workloads,
                finished: lq_finished.get(&id).copied().unwrap_or(0),
                active: if runs { "True" } else { "False" },
                resources,
            }
        })
        .collect();
    let admitted: BTreeMap<&str, usize> = cluster_queues
        .iter()
        .map(|q| (q.name.as_str(), q.admitted))
        .collect();
    let amounts = |u: &crate::queueing::Usage| {
        u.iter()
            .map(|(fr, v)| (fr.flavor.clone(), fr.resource.clone(), units(*v)))
            .collect()
    };
    let cohorts = engine
        .cohort_subtrees()
        .into_iter()
        .map(|c| CohortSample {
            admitted: c
                .queues
                .iter()
                .filter_map(|q| admitted.get(q.as_str()))
                .sum(),
            quota: amounts(&c.quota),
            reservations: amounts(&c.reservations),
            parent: c.parent.unwrap_or_default(),
            root: c.root,
            name: c.name,
        })
        .collect();
    QueueSnapshot {
        cluster_queues,
        local_queues,
        cohorts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(ty: &str, secs: i64) -> Condition {
        Condition {
            type_: ty.into(),
            status: "True".into(),
            reason: "x".into(),
            message: String::new(),
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap()),
            observed_generation: None,
        }
    }

    #[test]
    fn a_workload_is_queued_since_its_creation_or_its_last_requeue() {
        assert_eq!(queued_ms(&[], 5_000), 5_000);
        assert_eq!(queued_ms(&[cond("Evicted", 9)], 5_000), 5_000);
        assert_eq!(queued_ms(&[cond("Requeued", 9)], 5_000), 9_000);
    }
}
