//! Property test: random sequences of events never make the engine admit
//! past a ClusterQueue's nominal + borrowable quota or a cohort's total, nor
//! admit a workload twice, nor admit what may not run.
//!
//! The cluster's shape is generated too: 1 to 6 ClusterQueues, 0 to 3
//! cohorts (a queue may stand alone), 1 to 4 flavors, each queue with its
//! own subset of the flavors in its own order, and its own limits.
//!
//! The test keeps its own model of who holds quota, built only from the
//! engine's decisions and the confirmations it sends back, and checks the
//! limits with its own arithmetic after every cycle.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

const NS: &str = "ns";

/// The most flavors a shape has (and so a queue's quotas).
const MAX_FLAVORS: usize = 4;

/// One ClusterQueue of a shape: its cohort and its flavors, in order.
#[derive(Debug, Clone)]
struct QueueShape {
    name: String,
    cohort: Option<String>,
    flavors: Vec<String>,
}

/// The cluster: the flavors and the ClusterQueues.
#[derive(Debug, Clone)]
struct Shape {
    flavors: Vec<String>,
    queues: Vec<QueueShape>,
}

fn shape() -> impl Strategy<Value = Shape> {
    (1usize..=MAX_FLAVORS, 0usize..=3, 1usize..=6).prop_flat_map(|(nf, nc, nq)| {
        let cohort = if nc == 0 {
            Just(None).boxed()
        } else {
            proptest::option::weighted(0.8, 0..nc).boxed()
        };
        let flavors =
            proptest::sample::subsequence((0..nf).collect::<Vec<_>>(), 1..=nf).prop_shuffle();
        proptest::collection::vec((cohort, flavors), nq).prop_map(move |queues| Shape {
            flavors: (0..nf).map(|f| format!("f{f}")).collect(),
            queues: queues
                .into_iter()
                .enumerate()
                .map(|(i, (cohort, flavors))| QueueShape {
                    name: format!("q{i}"),
                    cohort: cohort.map(|c| format!("c{c}")),
                    flavors: flavors.into_iter().map(|f| format!("f{f}")).collect(),
                })
                .collect(),
        })
    })
}

#[derive(Debug, Clone)]
struct QuotaSpec {
    nominal: i64,
    borrowing_limit: Option<i64>,
    lending_limit: Option<i64>,
}

#[derive(Debug, Clone)]
struct QueueSpec {
    strict: bool,
    within: PreemptionPolicy,
    reclaim: PreemptionPolicy,
    quotas: Vec<QuotaSpec>,
}

#[derive(Debug, Clone)]
enum Op {
    Add {
        queue: usize,
        cpu: i64,
        pods: u32,
        priority: i32,
    },
    Cycle,
    ConfirmAdmissions,
    RejectAdmission(usize),
    ConfirmEvictions,
    Finish(usize),
    Delete(usize),
    SetActive(usize, bool),
    StopQueue(usize, StopPolicy),
    StopLocalQueue(usize, StopPolicy),
    EditQuota {
        queue: usize,
        flavor: usize,
        quota: QuotaSpec,
    },
}

fn quota_spec() -> impl Strategy<Value = QuotaSpec> {
    (
        0i64..=8,
        proptest::option::of(0i64..=6),
        proptest::option::of(0i64..=8),
    )
        .prop_map(|(n, b, l)| QuotaSpec {
            nominal: n * 1000,
            borrowing_limit: b.map(|b| b * 1000),
            lending_limit: l.map(|l| l.min(n) * 1000),
        })
}

fn policy() -> impl Strategy<Value = PreemptionPolicy> {
    prop_oneof![
        Just(PreemptionPolicy::Never),
        Just(PreemptionPolicy::LowerPriority),
        Just(PreemptionPolicy::LowerOrNewerEqualPriority),
        Just(PreemptionPolicy::Any),
    ]
}

fn queue_spec() -> impl Strategy<Value = QueueSpec> {
    (
        any::<bool>(),
        policy(),
        policy(),
        proptest::collection::vec(quota_spec(), MAX_FLAVORS),
    )
        .prop_map(|(strict, within, reclaim, quotas)| QueueSpec {
            strict,
            // Any is not a valid withinClusterQueue policy.
            within: if within == PreemptionPolicy::Any {
                PreemptionPolicy::LowerPriority
            } else {
                within
            },
            reclaim,
            quotas,
        })
}

fn stop_policy() -> impl Strategy<Value = StopPolicy> {
    prop_oneof![
        Just(StopPolicy::None),
        Just(StopPolicy::Hold),
        Just(StopPolicy::HoldAndDrain)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<usize>(), 1i64..=5, 1u32..=2, 0i32..3)
            .prop_map(|(queue, cpu, pods, priority)| Op::Add { queue, cpu, pods, priority }),
        6 => Just(Op::Cycle),
        3 => Just(Op::ConfirmAdmissions),
        1 => any::<usize>().prop_map(Op::RejectAdmission),
        3 => Just(Op::ConfirmEvictions),
        3 => any::<usize>().prop_map(Op::Finish),
        1 => any::<usize>().prop_map(Op::Delete),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(i, a)| Op::SetActive(i, a)),
        1 => (any::<usize>(), stop_policy()).prop_map(|(q, p)| Op::StopQueue(q, p)),
        1 => (any::<usize>(), stop_policy()).prop_map(|(q, p)| Op::StopLocalQueue(q, p)),
        2 => (any::<usize>(), any::<usize>(), quota_spec())
            .prop_map(|(queue, flavor, quota)| Op::EditQuota { queue, flavor, quota }),
    ]
}

fn cluster_queue(shape: &QueueShape, spec: &QueueSpec, stop: StopPolicy) -> ClusterQueue {
    let cohort = shape.cohort.as_deref();
    ClusterQueue {
        name: shape.name.clone(),
        cohort: cohort.map(Into::into),
        queueing_strategy: if spec.strict {
            QueueingStrategy::StrictFIFO
        } else {
            QueueingStrategy::BestEffortFIFO
        },
        namespace_selector: Some(Default::default()),
        resource_groups: vec![ResourceGroup {
            covered_resources: vec!["cpu".into()],
            flavors: shape
                .flavors
                .iter()
                .zip(&spec.quotas)
                .map(|(f, q)| FlavorQuotas {
                    name: f.to_string(),
                    resources: vec![ResourceQuota {
                        name: "cpu".into(),
                        nominal: q.nominal,
                        // Kueue rejects a borrowing limit without a cohort.
                        borrowing_limit: q.borrowing_limit.filter(|_| cohort.is_some()),
                        lending_limit: q.lending_limit.filter(|_| cohort.is_some()),
                    }],
                })
                .collect(),
        }],
        preemption: Preemption {
            within_cluster_queue: spec.within,
            reclaim_within_cohort: spec.reclaim,
            ..Default::default()
        },
        flavor_fungibility: Default::default(),
        stop_policy: stop,
        admission_fair_sharing: false,
        terminating: false,
    }
}

fn local_queue(shape: &QueueShape, stop: StopPolicy) -> LocalQueue {
    LocalQueue {
        namespace: NS.into(),
        name: format!("lq-{}", shape.name),
        cluster_queue: shape.name.clone(),
        stop_policy: stop,
        fair_sharing: Default::default(),
    }
}

struct Held {
    admission: Admission,
    confirmed: bool,
}

/// What the test knows, from decisions and its own confirmations.
struct Model {
    shape: Shape,
    engine: Engine,
    queues: Vec<ClusterQueue>,
    local_queues: Vec<LocalQueue>,
    workloads: BTreeMap<String, Workload>,
    held: BTreeMap<String, Held>,
    evicting: BTreeSet<String>,
    /// Each ClusterQueue's status as the cycles have reported it.
    reported: BTreeMap<String, ClusterQueueStatus>,
    now: i64,
    next: u32,
}

impl Model {
    fn new(shape: &Shape, specs: &[QueueSpec]) -> Self {
        let mut engine = Engine::new();
        for f in &shape.flavors {
            engine.upsert_flavor(ResourceFlavor {
                name: f.into(),
                node_labels: BTreeMap::new(),
                node_taints: vec![],
                tolerations: vec![],
                topology_name: None,
                topology_levels: None,
            });
        }
        let queues: Vec<_> = shape
            .queues
            .iter()
            .zip(specs)
            .map(|(q, s)| cluster_queue(q, s, StopPolicy::None))
            .collect();
        let local_queues: Vec<_> = shape
            .queues
            .iter()
            .map(|q| local_queue(q, StopPolicy::None))
            .collect();
        for q in &queues {
            engine.upsert_cluster_queue(q.clone());
        }
        for l in &local_queues {
            engine.upsert_local_queue(l.clone());
        }
        Model {
            shape: shape.clone(),
            engine,
            queues,
            local_queues,
            workloads: BTreeMap::new(),
            held: BTreeMap::new(),
            evicting: BTreeSet::new(),
            reported: BTreeMap::new(),
            now: 0,
            next: 0,
        }
    }

    /// The object as the API would show it: `status.admission` only once
    /// the admission was written.
    fn api_object(&self, key: &str) -> Option<Workload> {
        let mut wl = self.workloads.get(key)?.clone();
        wl.admission = self
            .held
            .get(key)
            .filter(|h| h.confirmed)
            .map(|h| h.admission.clone());
        Some(wl)
    }

    fn nth<'a>(keys: impl ExactSizeIterator<Item = &'a String>, i: usize) -> Option<String> {
        let n = keys.len();
        if n == 0 {
            return None;
        }
        let mut keys = keys;
        keys.nth(i % n).cloned()
    }

    fn forget(&mut self, key: &str) {
        self.workloads.remove(key);
        self.held.remove(key);
        self.evicting.remove(key);
    }

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        let n = self.shape.queues.len();
        match op {
            Op::Add {
                queue,
                cpu,
                pods,
                priority,
            } => {
                self.next += 1;
                self.now += 1;
                let name = format!("w{}", self.next);
                let wl = Workload {
                    unhealthy_nodes: Vec::new(),
                    single_pod_owned: false,
                    namespace: NS.into(),
                    name: name.clone(),
                    uid: format!("uid-{name}").into(),
                    job_uid: None,
                    copy_chain: None,
                    queue_name: self.local_queues[queue % n].name.as_str().into(),
                    priority,
                    created: self.now,
                    active: true,
                    finished: false,
                    readiness: Default::default(),
                    replaces: None,
                    pod_sets: vec![PodSet {
                        name: "main".into(),
                        count: pods,
                        // Some may run with fewer pods (partial admission).
                        min_count: (pods > 1 && priority == 1).then_some(1),
                        requests: [("cpu".to_string(), cpu * 500)].into(),
                        node_selector: BTreeMap::new(),
                        node_affinity: Default::default(),
                        tolerations: vec![],
                        topology: None,
                    }],
                    admission: None,
                };
                self.workloads.insert(wl.key(), wl.clone());
                self.engine.upsert_workload(wl);
            }
            Op::Cycle => {
                self.now += 1;
                let cycle = self.engine.schedule(self.now);
                self.check(&cycle)?;
            }
            Op::ConfirmAdmissions => {
                for (key, h) in self.held.iter_mut().filter(|(_, h)| !h.confirmed) {
                    h.confirmed = true;
                    self.engine.confirm_admission(key);
                }
            }
            Op::RejectAdmission(i) => {
                let unconfirmed = self
                    .held
                    .iter()
                    .filter(|(_, h)| !h.confirmed)
                    .map(|(k, _)| k);
                let picked = Model::nth(unconfirmed.collect::<Vec<_>>().into_iter(), i);
                if let Some(key) = picked {
                    self.held.remove(&key);
                    self.evicting.remove(&key);
                    self.engine.reject_admission(&key);
                }
            }
            Op::ConfirmEvictions => {
                for key in std::mem::take(&mut self.evicting) {
                    self.held.remove(&key);
                    self.engine.confirm_eviction(&key);
                }
            }
            Op::Finish(i) => {
                if let Some(key) = Model::nth(self.held.keys(), i) {
                    self.forget(&key);
                    self.engine.finish_workload(&key);
                }
            }
            Op::Delete(i) => {
                if let Some(key) = Model::nth(self.workloads.keys(), i) {
                    self.forget(&key);
                    self.engine.delete_workload(&key);
                }
            }
            Op::SetActive(i, active) => {
                if let Some(key) = Model::nth(self.workloads.keys(), i) {
                    if let Some(wl) = self.workloads.get_mut(&key) {
                        wl.active = active;
                    }
                    if let Some(obj) = self.api_object(&key) {
                        self.engine.upsert_workload(obj);
                    }
                }
            }
            Op::StopQueue(i, stop) => {
                self.queues[i % n].stop_policy = stop;
                self.engine.upsert_cluster_queue(self.queues[i % n].clone());
            }
            Op::StopLocalQueue(i, stop) => {
                self.local_queues[i % n].stop_policy = stop;
                self.engine
                    .upsert_local_queue(self.local_queues[i % n].clone());
            }
            Op::EditQuota {
                queue,
                flavor,
                quota,
            } => {
                let has_cohort = self.shape.queues[queue % n].cohort.is_some();
                let q = &mut self.queues[queue % n];
                let flavors = &mut q.resource_groups[0].flavors;
                let at = flavor % flavors.len().max(1);
                if let Some(f) = flavors.get_mut(at) {
                    let r = &mut f.resources[0];
                    r.nominal = quota.nominal;
                    r.borrowing_limit = quota.borrowing_limit.filter(|_| has_cohort);
                    r.lending_limit = quota.lending_limit.filter(|_| has_cohort);
                }
                self.engine.upsert_cluster_queue(q.clone());
            }
        }
        Ok(())
    }

    fn queue(&self, name: &str) -> &ClusterQueue {
        self.queues
            .iter()
            .find(|q| q.name == name)
            .expect("known queue")
    }

    fn limits(&self, cq: &str, fr: &FlavorResource) -> (i64, Option<i64>, Option<i64>) {
        self.queue(cq)
            .resource_groups
            .iter()
            .flat_map(|g| &g.flavors)
            .filter(|f| f.name == fr.flavor)
            .flat_map(|f| &f.resources)
            .find(|r| r.name == fr.resource)
            .map_or((0, None, None), |r| {
                (r.nominal, r.borrowing_limit, r.lending_limit)
            })
    }

    /// Quota held in `cq` by workloads not on their way out.
    fn used(&self, cq: &str, fr: &FlavorResource) -> i64 {
        self.held
            .iter()
            .filter(|(k, h)| h.admission.cluster_queue == cq && !self.evicting.contains(*k))
            .map(|(_, h)| h.admission.usage().get(fr).copied().unwrap_or(0))
            .sum()
    }

    /// Held (not evicting) total, nominal total, lent in use and lendable
    /// quota of `fr` over the cohort's `members`.
    fn cohort_totals(&self, members: &[String], fr: &FlavorResource) -> (i64, i64, i64, i64) {
        let (mut total_used, mut total_nominal, mut lent_used, mut lendable) = (0, 0, 0, 0);
        for m in members {
            let (n, _, lending) = self.limits(m, fr);
            let u = self.used(m, fr);
            let local = lending.map_or(0, |l| (n - l).max(0));
            total_used += u;
            total_nominal += n;
            lent_used += (u - local).max(0);
            lendable += n - local;
        }
        (total_used, total_nominal, lent_used, lendable)
    }

    fn check(&mut self, cycle: &Cycle) -> Result<(), TestCaseError> {
        // A cycle reports every status that changed since the last one:
        // what it reported so far is each queue's status now.
        for s in &cycle.statuses {
            self.reported.insert(s.name.clone(), s.clone());
        }
        for q in &self.queues {
            let now = self.engine.cluster_queue_status(&q.name);
            prop_assert_eq!(
                self.reported.get(&q.name),
                now.as_ref(),
                "the status last reported for {}",
                &q.name
            );
        }
        let mut lent_before = BTreeMap::new();
        let cohorts: BTreeSet<String> = self
            .queues
            .iter()
            .filter_map(|q| q.cohort.clone())
            .collect();
        for cohort in cohorts {
            let members: Vec<String> = self
                .queues
                .iter()
                .filter(|q| q.cohort.as_deref() == Some(&cohort))
                .map(|q| q.name.clone())
                .collect();
            for f in &self.shape.flavors {
                let fr = FlavorResource::new(f, "cpu");
                let (_, _, lent, _) = self.cohort_totals(&members, &fr);
                lent_before.insert((cohort.clone(), fr), lent);
            }
        }
        let mut touched = BTreeSet::new();
        for d in &cycle.decisions {
            match d {
                Decision::Admit {
                    workload,
                    admission,
                } => {
                    prop_assert!(
                        !self.held.contains_key(workload),
                        "{workload} admitted twice"
                    );
                    let wl = self.workloads.get(workload);
                    prop_assert!(wl.is_some(), "{workload} admitted after it was gone");
                    let wl = wl.expect("checked");
                    prop_assert!(wl.active, "{workload} admitted while inactive");
                    let lq = self
                        .local_queues
                        .iter()
                        .find(|l| *l.name == *wl.queue_name)
                        .expect("known lq");
                    prop_assert_eq!(&lq.cluster_queue, &admission.cluster_queue);
                    prop_assert!(
                        !lq.stop_policy.is_stopped(),
                        "{workload} admitted from a stopped LocalQueue"
                    );
                    let cq = self.queue(&admission.cluster_queue);
                    prop_assert!(
                        !cq.stop_policy.is_stopped(),
                        "{workload} admitted in a stopped ClusterQueue"
                    );
                    // At the admitted counts: between minCount and count.
                    let mut requested = 0;
                    for (p, psa) in wl.pod_sets.iter().zip(&admission.pod_set_assignments) {
                        prop_assert!(
                            psa.count <= p.count && psa.count >= p.min_count.unwrap_or(p.count),
                            "{workload} admitted with {} of {} pods",
                            psa.count,
                            p.count
                        );
                        requested += p.requests["cpu"] * i64::from(psa.count);
                    }
                    prop_assert_eq!(admission.usage().values().sum::<i64>(), requested);
                    for fr in admission.usage().keys() {
                        touched.insert((admission.cluster_queue.clone(), fr.clone()));
                    }
                    self.held.insert(
                        workload.clone(),
                        Held {
                            admission: admission.clone(),
                            confirmed: false,
                        },
                    );
                }
                Decision::Evict { workload, .. } => {
                    prop_assert!(
                        self.held.contains_key(workload),
                        "{workload} evicted without quota"
                    );
                    prop_assert!(
                        self.evicting.insert(workload.clone()),
                        "{workload} evicted twice"
                    );
                }
                Decision::Pending { workload, .. } => {
                    prop_assert!(
                        !self.held.contains_key(workload),
                        "{workload} pending while holding quota"
                    );
                }
                // No TAS and no failed nodes here.
                Decision::Replace { workload, .. } => {
                    prop_assert!(false, "{workload} replaced without a failed node");
                }
            }
        }
        for (cq, fr) in &touched {
            let (nominal, borrowing_limit, _) = self.limits(cq, fr);
            let used = self.used(cq, fr);
            let cohort = self.queue(cq).cohort.clone();
            let own_limit = match (&cohort, borrowing_limit) {
                (None, _) => Some(nominal),
                (Some(_), Some(bl)) => Some(nominal + bl),
                (Some(_), None) => None,
            };
            if let Some(limit) = own_limit {
                prop_assert!(used <= limit, "{cq} holds {used} of {fr:?}, limit {limit}");
            }
            let Some(cohort) = cohort else { continue };
            let members: Vec<String> = self
                .queues
                .iter()
                .filter(|q| q.cohort.as_deref() == Some(&cohort))
                .map(|q| q.name.clone())
                .collect();
            let (total_used, total_nominal, lent_used, lendable) = self.cohort_totals(&members, fr);
            prop_assert!(
                total_used <= total_nominal,
                "cohort {cohort} holds {total_used} of {fr:?}, nominal total {total_nominal}"
            );
            // A quota edit can leave a queue above its new nominal quota,
            // which counts as lending the cohort does not have: then the
            // cycle may not add to it, only stay clear of it.
            let before = lent_before
                .get(&(cohort.clone(), fr.clone()))
                .copied()
                .unwrap_or(0);
            prop_assert!(
                lent_used <= lendable || lent_used <= before,
                "cohort {cohort} lends {lent_used} of {fr:?} (was {before}), lendable {lendable}"
            );
        }
        // The engine's own accounting agrees with what it decided.
        for q in &self.queues {
            let status = self
                .engine
                .cluster_queue_status(&q.name)
                .expect("queue exists");
            prop_assert_eq!(
                status.reserving_workloads,
                self.held
                    .values()
                    .filter(|h| h.admission.cluster_queue == q.name)
                    .count()
            );
            for f in &status.flavors_usage {
                let fr = FlavorResource::new(&f.name, "cpu");
                let all: i64 = self
                    .held
                    .values()
                    .filter(|h| h.admission.cluster_queue == q.name)
                    .map(|h| h.admission.usage().get(&fr).copied().unwrap_or(0))
                    .sum();
                prop_assert_eq!(
                    f.resources[0].total,
                    all,
                    "usage of {} in {}",
                    f.name,
                    q.name
                );
            }
        }
        self.counts_agree()
    }

    /// The counts the queues and records keep for the status tick agree
    /// with a walk over every workload.
    fn counts_agree(&self) -> Result<(), TestCaseError> {
        prop_assert_eq!(
            self.engine.pending_counts(),
            self.engine.pending_counts_by_walk()
        );
        prop_assert_eq!(
            self.engine.local_queue_statuses(),
            self.engine.local_queue_statuses_by_walk()
        );
        for q in &self.queues {
            prop_assert_eq!(
                self.engine.cluster_queue_status(&q.name),
                self.engine.cluster_queue_status_by_walk(&q.name)
            );
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_admits_past_quota_or_twice(
        (shape, specs) in shape().prop_flat_map(|s| {
            let n = s.queues.len();
            (Just(s), proptest::collection::vec(queue_spec(), n))
        }),
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let mut model = Model::new(&shape, &specs);
        for op in ops {
            model.apply(op)?;
            model.counts_agree()?;
        }
        // Drain: with everything confirmed, cycles come to rest.
        for _ in 0..200 {
            model.apply(Op::ConfirmAdmissions)?;
            model.apply(Op::ConfirmEvictions)?;
            model.now += 1;
            let cycle = model.engine.schedule(model.now);
            model.check(&cycle)?;
            if !cycle.progress && model.evicting.is_empty() {
                return Ok(());
            }
        }
        prop_assert!(false, "cycles never came to rest");
    }
}
