//! The engine's side of admission fair sharing (see
//! [`crate::queueing::admission_fair_sharing`]): the usage ledger of every
//! LocalQueue whose ClusterQueue orders by usage, charged at admission,
//! sampled by the shell's queue-status writer, and read when a queue's head
//! is chosen.

use super::*;
use crate::queueing::admission_fair_sharing::{
    self as afs, AdmissionFairSharing, Amounts, LocalQueueUsage,
};
use crate::queueing::cluster_queue::AdmissionFairSharingStatus;

impl Engine {
    /// The Configuration's `admissionFairSharing`; `None` (the default)
    /// turns it off whatever the ClusterQueues say.
    pub fn set_admission_fair_sharing(&mut self, config: Option<AdmissionFairSharing>) {
        self.join_added();
        if config.is_none() {
            self.lq_usage.clear();
        }
        self.afs = config;
        let seeds: Vec<LocalQueue> = self.local_queues().cloned().collect();
        for lq in &seeds {
            self.seed_local_queue_usage(lq);
        }
    }

    pub fn admission_fair_sharing(&self) -> Option<&AdmissionFairSharing> {
        self.afs.as_ref()
    }

    fn uses_admission_fair_sharing(&self, cq: &str) -> bool {
        self.afs.is_some()
            && self
                .cluster_queues
                .get(cq)
                .is_some_and(|q| q.admission_fair_sharing)
    }

    /// `initializeAfsIfNeeded`: a LocalQueue first met starts from the
    /// usage its status records.
    pub(super) fn seed_local_queue_usage(&mut self, lq: &LocalQueue) {
        if !self.uses_admission_fair_sharing(&lq.cluster_queue) {
            return;
        }
        let key = (lq.namespace.clone(), lq.name.clone());
        if self.lq_usage.contains_key(&key) {
            return;
        }
        let entry = match &lq.fair_sharing.status {
            Some((consumed, last_update)) => LocalQueueUsage {
                consumed: consumed
                    .iter()
                    .map(|(r, milli)| (r.clone(), *milli as f64 / 1000.0))
                    .collect(),
                last_update: *last_update,
                penalties: BTreeMap::new(),
            },
            None => LocalQueueUsage::default(),
        };
        self.lq_usage.insert(key, entry);
    }

    /// For a ClusterQueue ordered by usage: the LocalQueue usage of each
    /// of its queued workloads (`CalcLocalQueueFSUsage`), by key.
    pub(super) fn admission_fair_sharing_ranks(
        &self,
        cq: &ClusterQueue,
    ) -> Option<BTreeMap<Arc<str>, f64>> {
        if !self.uses_admission_fair_sharing(&cq.name) {
            return None;
        }
        let config = self.afs.as_ref()?;
        let mut by_queue: BTreeMap<(&str, &str), f64> = BTreeMap::new();
        let mut ranks = BTreeMap::new();
        for key in self.queues.get(&cq.name)?.keys() {
            let Some((key, rec)) = self.workloads.get_key_value(key) else {
                continue;
            };
            let (ns, lq) = (&*rec.wl.namespace, &*rec.wl.queue_name);
            let rank = *by_queue.entry((ns, lq)).or_insert_with(|| {
                let weight = self
                    .local_queue(ns, lq)
                    .map_or(1.0, |q| q.fair_sharing.weight as f64 / 1000.0);
                let empty = LocalQueueUsage::default();
                let u = self
                    .lq_usage
                    .get(&(ns.to_string(), lq.to_string()))
                    .unwrap_or(&empty);
                afs::usage(
                    &u.consumed,
                    &u.pending_penalty(),
                    weight,
                    &config.resource_weights,
                )
            });
            ranks.insert(key.clone(), rank);
        }
        Some(ranks)
    }

    /// `PushPenalty` at admission: the workload's requests, scaled by one
    /// sampling interval's share, count for its LocalQueue at once.
    pub(super) fn charge_admission(&mut self, key: &str, usage: &Usage) {
        let Some(config) = &self.afs else { return };
        let Some(rec) = self.workloads.get(key) else {
            return;
        };
        let cq = self
            .local_queue(&rec.wl.namespace, &rec.wl.queue_name)
            .map(|lq| lq.cluster_queue.clone());
        if !cq.is_some_and(|cq| self.uses_admission_fair_sharing(&cq)) {
            return;
        }
        let mut requests = Amounts::new();
        for (fr, milli) in usage {
            *requests.entry(fr.resource.clone()).or_default() += *milli as f64 / 1000.0;
        }
        let penalty = afs::entry_penalty(&requests, config);
        let lq = (rec.wl.namespace.to_string(), rec.wl.queue_name.to_string());
        self.lq_usage
            .entry(lq)
            .or_default()
            .push_penalty(key, penalty);
    }

    /// The queue-status writer's sampling tick at `now` (ms): every
    /// LocalQueue whose sample is due folds in what its admitted workloads
    /// hold. Returns whether any usage changed (statuses to write).
    pub fn sample_admission_fair_sharing(&mut self, now: i64) -> bool {
        self.join_added();
        let Some(config) = self.afs.clone() else {
            return false;
        };
        let mut admitted: BTreeMap<(String, String), Amounts> = BTreeMap::new();
        for rec in self.workloads.values() {
            if let State::Holding(h) = &rec.state {
                if !h.admitted() {
                    continue;
                }
                let sums = admitted
                    .entry((rec.wl.namespace.to_string(), rec.wl.queue_name.to_string()))
                    .or_default();
                for (fr, milli) in &h.usage {
                    *sums.entry(fr.resource.clone()).or_default() += *milli as f64 / 1000.0;
                }
            }
        }
        let mut changed = false;
        let queues: Vec<LocalQueue> = self.local_queues().cloned().collect();
        for lq in queues {
            if !self.uses_admission_fair_sharing(&lq.cluster_queue) {
                continue;
            }
            self.seed_local_queue_usage(&lq);
            let key = (lq.namespace.clone(), lq.name.clone());
            let Some(entry) = self.lq_usage.get_mut(&key) else {
                continue;
            };
            if entry.sample_due(now, &config) {
                let current = admitted.remove(&key).unwrap_or_default();
                entry.sample(&current, now, &config);
                changed = true;
            }
        }
        changed
    }

    /// `status.fairSharing.admissionFairSharingStatus` of a LocalQueue.
    pub(super) fn admission_fair_sharing_status(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<AdmissionFairSharingStatus> {
        let lq = self.local_queue(namespace, name)?;
        if !self.uses_admission_fair_sharing(&lq.cluster_queue) {
            return None;
        }
        let u = self
            .lq_usage
            .get(&(namespace.to_string(), name.to_string()))?;
        Some(AdmissionFairSharingStatus {
            consumed_resources: u
                .consumed
                .iter()
                .map(|(r, v)| (r.clone(), afs::quantity(*v)))
                .collect(),
            last_update: u.last_update,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queueing::cluster_queue::{
        FlavorQuotas, LocalQueueFairSharing, ResourceGroup, ResourceQuota, StopPolicy,
    };
    use crate::queueing::workload::PodSet;

    const NS: &str = "default";

    /// (LocalQueue, weight, consumed status: resource → whole units)
    type Lq = (&'static str, f64, &'static [(&'static str, f64)]);

    fn config(weights: &[(&str, f64)]) -> AdmissionFairSharing {
        AdmissionFairSharing {
            usage_half_life_time: 600.0,
            usage_sampling_interval: 300.0,
            resource_weights: weights.iter().map(|(r, w)| (r.to_string(), *w)).collect(),
        }
    }

    fn engine(afs_mode: bool, cpu: i64, lqs: &[Lq], afs: Option<AdmissionFairSharing>) -> Engine {
        let mut e = Engine::new();
        e.set_admission_fair_sharing(afs);
        e.upsert_flavor(crate::queueing::ResourceFlavor {
            name: "default".into(),
            node_labels: BTreeMap::new(),
            node_taints: vec![],
            tolerations: vec![],
            topology_name: None,
            topology_levels: None,
        });
        e.upsert_cluster_queue(ClusterQueue {
            name: "cq".into(),
            cohort: None,
            queueing_strategy: Default::default(),
            namespace_selector: Some(Default::default()),
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".into()],
                flavors: vec![FlavorQuotas {
                    name: "default".into(),
                    resources: vec![ResourceQuota {
                        name: "cpu".into(),
                        nominal: cpu * 1000,
                        borrowing_limit: None,
                        lending_limit: None,
                    }],
                }],
            }],
            preemption: Default::default(),
            flavor_fungibility: Default::default(),
            stop_policy: StopPolicy::None,
            admission_fair_sharing: afs_mode,
            terminating: false,
        });
        for (name, weight, consumed) in lqs {
            e.upsert_local_queue(LocalQueue {
                namespace: NS.into(),
                name: name.to_string(),
                cluster_queue: "cq".into(),
                stop_policy: StopPolicy::None,
                fair_sharing: LocalQueueFairSharing {
                    weight: (weight * 1000.0) as i64,
                    status: (!consumed.is_empty()).then(|| {
                        (
                            consumed
                                .iter()
                                .map(|(r, v)| (r.to_string(), (v * 1000.0) as i64))
                                .collect(),
                            0,
                        )
                    }),
                },
            });
        }
        e
    }

    fn wl(name: &str, lq: &str, priority: i32, created: i64) -> Workload {
        Workload {
            unhealthy_nodes: Vec::new(),
            single_pod_owned: false,
            namespace: NS.into(),
            name: name.into(),
            uid: format!("uid-{name}").into(),
            job_uid: None,
            copy_chain: None,
            queue_name: lq.into(),
            priority,
            created,
            active: true,
            finished: false,
            readiness: Default::default(),
            replaces: None,
            pod_sets: vec![PodSet {
                name: "main".into(),
                count: 1,
                min_count: None,
                requests: [("cpu".to_string(), 1000)].into(),
                node_selector: BTreeMap::new(),
                node_affinity: Default::default(),
                tolerations: vec![],
                topology: None,
            }],
            admission: None,
        }
    }

    fn admitted(c: &Cycle) -> Vec<String> {
        c.decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Admit { workload, .. } => {
                    Some(workload.trim_start_matches("default/").to_string())
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_head_is_taken_by_local_queue_usage_as_upstream() {
        // TestFsAdmission (pkg/cache/queue), case by case: the workload
        // popped first, here the one admitted in a cycle with room for one.
        struct Case {
            upstream: &'static str,
            afs_mode: bool,
            afs: Option<AdmissionFairSharing>,
            lqs: Vec<Lq>,
            wls: Vec<(&'static str, &'static str, i32)>,
            want: &'static str,
        }
        let two = || vec![("wlA-high", "lqA", 2), ("wlB-low", "lqB", 1)];
        let one = || vec![("wlA-low", "lqA", 1), ("wlA-high", "lqA", 2)];
        let cases = [
            Case {
                upstream: "workloads are ordered by LQ usage, instead of priorities",
                afs_mode: true,
                afs: Some(config(&[])),
                lqs: vec![("lqA", 1.0, &[("cpu", 2.0)]), ("lqB", 1.0, &[("cpu", 1.0)])],
                wls: two(),
                want: "wlB-low",
            },
            Case {
                upstream: "workloads are ordered by LQ usage with respect to resource weights",
                afs_mode: true,
                afs: Some(config(&[("cpu", 0.0), ("example.com/gpu", 1.0)])),
                lqs: vec![
                    ("lqA", 1.0, &[("cpu", 1.0), ("example.com/gpu", 10.0)]),
                    ("lqB", 1.0, &[("cpu", 1000.0), ("example.com/gpu", 1.0)]),
                ],
                wls: two(),
                want: "wlB-low",
            },
            Case {
                upstream:
                    "workloads are ordered by LQ usage with respect to LQs' fair sharing weights",
                afs_mode: true,
                afs: Some(config(&[])),
                lqs: vec![
                    ("lqA", 1.0, &[("cpu", 10.0)]),
                    ("lqB", 2.0, &[("cpu", 6.0)]),
                ],
                wls: two(),
                want: "wlB-low",
            },
            Case {
                upstream: "workloads with the same LQ usage are ordered by priority",
                afs_mode: true,
                afs: Some(config(&[])),
                lqs: vec![("lqA", 1.0, &[("cpu", 10.0)])],
                wls: one(),
                want: "wlA-high",
            },
            Case {
                upstream: "workloads with NoFairSharing CQ are ordered by priority",
                afs_mode: false,
                afs: Some(config(&[])),
                lqs: vec![("lqA", 1.0, &[])],
                wls: one(),
                want: "wlA-high",
            },
            Case {
                upstream: "workloads with no FS config are ordered by priority",
                afs_mode: false,
                afs: None,
                lqs: vec![("lqA", 1.0, &[])],
                wls: one(),
                want: "wlA-high",
            },
            Case {
                // Ours: the ClusterQueue asks for it, the Configuration does
                // not enable it (`afs.Enabled` is false): priority order.
                upstream: "(ours) admissionScope without the Configuration's admissionFairSharing",
                afs_mode: true,
                afs: None,
                lqs: vec![("lqA", 1.0, &[("cpu", 2.0)]), ("lqB", 1.0, &[("cpu", 1.0)])],
                wls: two(),
                want: "wlA-high",
            },
        ];
        for case in cases {
            let mut e = engine(case.afs_mode, 1, &case.lqs, case.afs);
            for (i, (name, lq, prio)) in case.wls.iter().enumerate() {
                e.upsert_workload(wl(name, lq, *prio, i as i64));
            }
            assert_eq!(
                admitted(&e.schedule(1_000)),
                [case.want],
                "TestFsAdmission/{}",
                case.upstream
            );
        }
    }

    #[test]
    fn each_admission_counts_for_its_queue_before_the_next_sample() {
        // The entry penalty: two idle LocalQueues alternate, though the
        // older workloads are all in the first.
        let mut e = engine(
            true,
            10,
            &[("lqA", 1.0, &[]), ("lqB", 1.0, &[])],
            Some(config(&[])),
        );
        for (i, (name, lq)) in [("a1", "lqA"), ("a2", "lqA"), ("b1", "lqB"), ("b2", "lqB")]
            .iter()
            .enumerate()
        {
            e.upsert_workload(wl(name, lq, 0, i as i64));
        }
        let mut order = Vec::new();
        for t in 0..4 {
            order.extend(admitted(&e.schedule(1_000 + t)));
        }
        assert_eq!(order, ["a1", "b1", "a2", "b2"]);
    }

    #[test]
    fn samples_decay_usage_into_the_local_queue_status() {
        let mut e = engine(true, 10, &[("lqA", 1.0, &[])], Some(config(&[])));
        e.upsert_workload(wl("a1", "lqA", 0, 0));
        assert_eq!(admitted(&e.schedule(0)), ["a1"]);
        e.confirm_admission("default/a1");
        // The admission is due at once; 300 s of a 600 s half-life later the
        // queue has consumed 1 - 0.5^0.5 of the 1 cpu its workload holds.
        assert!(e.sample_admission_fair_sharing(300_000));
        let status = |e: &Engine| {
            e.local_queue_statuses()
                .into_iter()
                .find(|s| s.name == "lqA")
                .and_then(|s| s.admission_fair_sharing)
        };
        let s = status(&e).unwrap();
        assert_eq!(s.last_update, 300_000);
        assert_eq!(s.consumed_resources["cpu"], "292893218n");
        // Not due again before the sampling interval.
        assert!(!e.sample_admission_fair_sharing(400_000));
        // The workload finishes: usage decays by half each half-life.
        e.finish_workload("default/a1");
        assert!(e.sample_admission_fair_sharing(900_000));
        assert_eq!(status(&e).unwrap().consumed_resources["cpu"], "146446609n");
    }

    #[test]
    fn a_status_echo_changes_nothing_but_a_first_status_seeds() {
        let mut e = engine(
            true,
            10,
            &[("lqA", 1.0, &[("cpu", 4.0)])],
            Some(config(&[])),
        );
        let seeded = |e: &Engine| {
            e.local_queue_statuses()[0]
                .admission_fair_sharing
                .clone()
                .unwrap()
                .consumed_resources["cpu"]
                .clone()
        };
        assert_eq!(seeded(&e), "4");
        // Our own status coming back (another value) keeps the ledger.
        let mut lq = e.local_queue(NS, "lqA").unwrap().clone();
        lq.fair_sharing.status = Some(([("cpu".to_string(), 1000)].into(), 5));
        e.upsert_local_queue(lq);
        assert_eq!(seeded(&e), "4");
    }
}
