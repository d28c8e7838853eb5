//! Kueue v0.19.2's metrics (`pkg/metrics/metrics.go`), served beside
//! batchgate's own on `/metrics`, so Kueue's dashboards and alerts read
//! batchgate unchanged.
//!
//! The queueing controller reports facts: what landed (a quota
//! reservation, an eviction, a preemption), each scheduling attempt, and
//! a [`QueueSnapshot`] of its queues. Counters and histograms are kept
//! here as they happen; gauges are rendered at scrape time from the last
//! snapshot, so a deleted queue's series vanish with it (Kueue's
//! `Clear*Metrics`) without bookkeeping.
//!
//! Kept as upstream: names, types, label names and order, histogram
//! buckets, `replica_role` (`leader`: only the Lease holder runs the
//! reconciler), the optional ClusterQueue resource metrics behind
//! `metrics.enableClusterQueueResources`, LocalQueue metrics on by default
//! (`LocalQueueMetrics` is Beta, on, in v0.19) and off with
//! `metrics.localQueueMetrics.enable: false`.

use std::sync::Arc;

use arc_swap::ArcSwap;
use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};

/// Every series' `replica_role`: the reconciler runs on the Lease holder
/// only, so everything reported is the leader's.
pub const REPLICA_ROLE: &str = "leader";

/// A label set in upstream's label order.
pub type Labels = Vec<(&'static str, String)>;

type Counters = Family<Labels, Counter>;
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// Kueue's `generateExponentialBuckets(14)`: 1, then 2.5 doubling 13 times.
fn wait_buckets() -> Histogram {
    Histogram::new(std::iter::once(1.0).chain(exponential_buckets(2.5, 2.0, 13)))
}

/// client_golang's `DefBuckets` (upstream sets none for attempt durations).
fn default_buckets() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ])
}

/// A Workload as the metrics name it.
#[derive(Debug, Clone, Default)]
pub struct WorkloadLabels {
    pub namespace: String,
    /// `spec.queueName`.
    pub local_queue: String,
    /// `status.admission.clusterQueue` (for an eviction: the one it held).
    pub cluster_queue: String,
    /// `spec.priorityClassRef.name`, or empty.
    pub priority_class: String,
}

/// One flavor/resource of a ClusterQueue, in the resource's units (cores,
/// bytes: Kueue's `AsApproximateFloat64`).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceSample {
    pub flavor: String,
    pub resource: String,
    pub nominal: f64,
    /// `None`: unset, reported as +Inf as upstream does.
    pub borrowing_limit: Option<f64>,
    pub lending_limit: Option<f64>,
    /// Held by every Workload with quota reserved (`flavorsReservation`).
    pub reservation: f64,
    /// Held by the admitted Workloads (`flavorsUsage`).
    pub usage: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClusterQueueSample {
    pub name: String,
    /// `spec.cohortName`, or empty.
    pub cohort: String,
    /// The root of its Cohort tree, or empty.
    pub root_cohort: String,
    pub pending_active: usize,
    pub pending_inadmissible: usize,
    pub reserving: usize,
    pub admitted: usize,
    /// Finished Workloads still in the API.
    pub finished: usize,
    /// `pending`, `active` or `terminating`.
    pub status: &'static str,
    pub resources: Vec<ResourceSample>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LocalQueueSample {
    pub namespace: String,
    pub name: String,
    pub pending_active: usize,
    pub pending_inadmissible: usize,
    pub reserving: usize,
    pub admitted: usize,
    /// Finished Workloads still in the API.
    pub finished: usize,
    /// The `Active` condition's status: `True`, `False` or `Unknown`.
    pub active: &'static str,
    /// (flavor, resource, reserved, admitted), in the resource's units.
    pub resources: Vec<(String, String, f64, f64)>,
}

/// The queues as the controller last saw them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueSnapshot {
    pub cluster_queues: Vec<ClusterQueueSample>,
    pub local_queues: Vec<LocalQueueSample>,
    pub cohorts: Vec<CohortSample>,
}

/// A Cohort (object or implicit) of a tree without a cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct CohortSample {
    pub name: String,
    /// Its parent, or empty for a root.
    pub parent: String,
    pub root: String,
    /// (flavor, resource, amount) of its `SubtreeQuota`, in the resource's
    /// unit.
    pub quota: Vec<(String, String, f64)>,
    /// (flavor, resource, amount) reserved by every ClusterQueue under it.
    pub reservations: Vec<(String, String, f64)>,
    /// Admitted active Workloads of every ClusterQueue under it.
    pub admitted: usize,
}

/// What Kueue's `metrics` configuration turns on.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// `metrics.enableClusterQueueResources` (default false).
    pub cluster_queue_resources: bool,
    /// `metrics.localQueueMetrics.enable` (default true).
    pub local_queues: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cluster_queue_resources: false,
            local_queues: true,
        }
    }
}

pub struct KueueMetrics {
    options: Options,
    snapshot: Arc<ArcSwap<QueueSnapshot>>,
    admission_attempts: Counters,
    admission_attempt_duration: Histograms,
    quota_reserved: Counters,
    quota_reserved_wait: Histograms,
    admitted: Counters,
    admission_wait: Histograms,
    evicted: Counters,
    evicted_once: Counters,
    preempted: Counters,
    cohort_admitted: Counters,
    lq_quota_reserved: Counters,
    lq_quota_reserved_wait: Histograms,
    lq_admitted: Counters,
    lq_admission_wait: Histograms,
    lq_evicted: Counters,
    multikueue_dispatched: Counters,
    multikueue_admitted: Counters,
}

fn role() -> (&'static str, String) {
    ("replica_role", REPLICA_ROLE.to_string())
}

impl KueueMetrics {
    /// Registers Kueue's metrics in `registry` (which must have no prefix:
    /// the names carry `kueue_`).
    pub fn register(registry: &mut Registry, options: Options) -> Arc<KueueMetrics> {
        let counters = |registry: &mut Registry, name: &str, help: &str| {
            let f = Counters::default();
            registry.register(name, help, f.clone());
            f
        };
        let histograms =
            |registry: &mut Registry, name: &str, help: &str, buckets: fn() -> Histogram| {
                let f = Histograms::new_with_constructor(buckets);
                registry.register(name, help, f.clone());
                f
            };
        let r = registry;
        let m = KueueMetrics {
            options,
            snapshot: Arc::default(),
            admission_attempts: counters(r, "kueue_admission_attempts", "The total number of attempts to admit workloads. The label 'result' can have the following values: 'success' means that at least one workload was admitted, 'inadmissible' means that no workload was admitted."),
            admission_attempt_duration: histograms(r, "kueue_admission_attempt_duration_seconds", "The latency of an admission attempt. The label 'result' can have the following values: 'success' means that at least one workload was admitted, 'inadmissible' means that no workload was admitted.", default_buckets),
            quota_reserved: counters(r, "kueue_quota_reserved_workloads", "The total number of quota reserved workloads per 'cluster_queue'"),
            quota_reserved_wait: histograms(r, "kueue_quota_reserved_wait_time_seconds", "The time between a workload was created or requeued until it got quota reservation, per 'cluster_queue'", wait_buckets),
            admitted: counters(r, "kueue_admitted_workloads", "The total number of admitted workloads per 'cluster_queue'"),
            admission_wait: histograms(r, "kueue_admission_wait_time_seconds", "The time between a workload was created or requeued until admission, per 'cluster_queue'", wait_buckets),
            evicted: counters(r, "kueue_evicted_workloads", "The number of evicted workloads per 'cluster_queue'"),
            evicted_once: counters(r, "kueue_evicted_workloads_once", "The number of unique workload evictions per 'cluster_queue'"),
            preempted: counters(r, "kueue_preempted_workloads", "The number of preempted workloads per 'preempting_cluster_queue'"),
            cohort_admitted: counters(r, "kueue_cohort_subtree_admitted_workloads", "The total number of admitted workloads per cohort's subtree"),
            lq_quota_reserved: counters(r, "kueue_local_queue_quota_reserved_workloads", "The total number of quota reserved workloads per 'local_queue'"),
            lq_quota_reserved_wait: histograms(r, "kueue_local_queue_quota_reserved_wait_time_seconds", "The time between a workload was created or requeued until it got quota reservation, per 'local_queue'", wait_buckets),
            lq_admitted: counters(r, "kueue_local_queue_admitted_workloads", "The total number of admitted workloads per 'local_queue'"),
            lq_admission_wait: histograms(r, "kueue_local_queue_admission_wait_time_seconds", "The time between a workload was created or requeued until admission, per 'local_queue'", wait_buckets),
            lq_evicted: counters(r, "kueue_local_queue_evicted_workloads", "The number of evicted workloads per 'local_queue'"),
            multikueue_dispatched: counters(r, "kueue_multikueue_workloads_dispatched", "The total number of remote workloads created by the MultiKueue manager on a worker cluster, per 'cluster_queue' and 'cluster'."),
            multikueue_admitted: counters(r, "kueue_multikueue_workloads_admitted", "The total number of remote workload admissions on a worker cluster, per 'cluster_queue' and 'cluster'. A workload may be counted more than once if it is evicted and re-admitted."),
        };
        let m = Arc::new(m);
        r.register_collector(Box::new(Gauges {
            options,
            snapshot: m.snapshot.clone(),
        }));
        r.register_collector(Box::new(BuildInfo));
        m
    }

    pub fn options(&self) -> Options {
        self.options
    }

    /// A scheduling cycle that looked at pending Workloads: `admitted` if
    /// it admitted one (Kueue's `AdmissionAttempt`).
    pub fn admission_attempt(&self, admitted: bool, seconds: f64) {
        let l = vec![
            (
                "result",
                if admitted { "success" } else { "inadmissible" }.to_string(),
            ),
            role(),
        ];
        self.admission_attempts.get_or_create(&l).inc();
        self.admission_attempt_duration
            .get_or_create(&l)
            .observe(seconds);
    }

    /// An admission landed. batchgate reserves quota and admits in one
    /// write (no admission checks), so both of Kueue's records are made:
    /// `QuotaReservedWorkload` and `AdmittedWorkload`, with the same wait
    /// (since creation or the last requeue) and the subtree count of every
    /// Cohort above its ClusterQueue (`cohorts`, parent to root).
    pub fn admitted(&self, wl: &WorkloadLabels, cohorts: &[String], wait_seconds: f64) {
        let cq = vec![
            ("cluster_queue", wl.cluster_queue.clone()),
            ("priority_class", wl.priority_class.clone()),
            role(),
        ];
        self.quota_reserved.get_or_create(&cq).inc();
        self.quota_reserved_wait
            .get_or_create(&cq)
            .observe(wait_seconds);
        self.admitted.get_or_create(&cq).inc();
        self.admission_wait.get_or_create(&cq).observe(wait_seconds);
        for cohort in cohorts {
            let l = vec![
                ("cohort", cohort.to_string()),
                ("priority_class", wl.priority_class.clone()),
                role(),
            ];
            self.cohort_admitted.get_or_create(&l).inc();
        }
        if self.options.local_queues {
            let lq = vec![
                ("name", wl.local_queue.clone()),
                ("namespace", wl.namespace.clone()),
                ("priority_class", wl.priority_class.clone()),
                role(),
            ];
            self.lq_quota_reserved.get_or_create(&lq).inc();
            self.lq_quota_reserved_wait
                .get_or_create(&lq)
                .observe(wait_seconds);
            self.lq_admitted.get_or_create(&lq).inc();
            self.lq_admission_wait
                .get_or_create(&lq)
                .observe(wait_seconds);
        }
    }

    /// An eviction landed. `first` when the Workload had not been evicted
    /// for this reason before (`evicted_workloads_once_total`). None of
    /// batchgate's evictions has an underlying cause.
    pub fn evicted(&self, wl: &WorkloadLabels, reason: &str, first: bool) {
        let cq = vec![
            ("cluster_queue", wl.cluster_queue.clone()),
            ("reason", reason.to_string()),
            ("underlying_cause", String::new()),
            ("priority_class", wl.priority_class.clone()),
            role(),
        ];
        self.evicted.get_or_create(&cq).inc();
        if first {
            self.evicted_once.get_or_create(&cq).inc();
        }
        if self.options.local_queues {
            let lq = vec![
                ("name", wl.local_queue.clone()),
                ("namespace", wl.namespace.clone()),
                ("reason", reason.to_string()),
                ("underlying_cause", String::new()),
                ("priority_class", wl.priority_class.clone()),
                role(),
            ];
            self.lq_evicted.get_or_create(&lq).inc();
        }
    }

    /// A preemption's eviction landed: `preempting_cluster_queue` is the
    /// preemptor's queue, `reason` the `Preempted` condition's reason.
    pub fn preempted(&self, preempting_cluster_queue: &str, reason: &str) {
        let l = vec![
            (
                "preempting_cluster_queue",
                preempting_cluster_queue.to_string(),
            ),
            ("reason", reason.to_string()),
            role(),
        ];
        self.preempted.get_or_create(&l).inc();
    }

    /// MultiKueue created a Workload's copy on worker `cluster`.
    pub fn multikueue_dispatched(&self, cluster_queue: &str, cluster: &str) {
        let l = vec![
            ("cluster_queue", cluster_queue.to_string()),
            ("cluster", cluster.to_string()),
            role(),
        ];
        self.multikueue_dispatched.get_or_create(&l).inc();
    }

    /// Worker `cluster` admitted a Workload's copy (its MultiKueue check
    /// turned Ready).
    pub fn multikueue_admitted(&self, cluster_queue: &str, cluster: &str) {
        let l = vec![
            ("cluster_queue", cluster_queue.to_string()),
            ("cluster", cluster.to_string()),
            role(),
        ];
        self.multikueue_admitted.get_or_create(&l).inc();
    }

    /// The queues' gauges from now on.
    pub fn publish(&self, snapshot: QueueSnapshot) {
        self.snapshot.store(Arc::new(snapshot));
    }
}

/// The gauges, rendered from the last [`QueueSnapshot`] at each scrape.
#[derive(Debug)]
struct Gauges {
    options: Options,
    snapshot: Arc<ArcSwap<QueueSnapshot>>,
}

/// Encodes one gauge family from its rows (a family with no rows is not
/// written, as client_golang writes none).
fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels, f64)>,
) -> Result<(), std::fmt::Error> {
    let family = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    for (labels, v) in rows {
        family.get_or_create(&labels).set(v);
    }
    if family.is_empty() {
        return Ok(());
    }
    let m = encoder.encode_descriptor(name, help, None, family.metric_type())?;
    family.encode(m)
}

impl Collector for Gauges {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = self.snapshot.load();
        let cq = |name: &str| vec![("cluster_queue", name.to_string()), role()];
        let cq_status = |name: &str, status: &str| {
            vec![
                ("cluster_queue", name.to_string()),
                ("status", status.to_string()),
                role(),
            ]
        };
        gauge(
            &mut e,
            "kueue_pending_workloads",
            "The number of pending workloads, per 'cluster_queue' and 'status'. 'status' can have the following values: \"active\" means that the workloads are in the admission queue; \"inadmissible\" means there was a failed admission attempt for these workloads and they won't be retried until cluster conditions, which could make this workload admissible, change",
            s.cluster_queues.iter().flat_map(|q| {
                [
                    (cq_status(&q.name, "active"), q.pending_active as f64),
                    (cq_status(&q.name, "inadmissible"), q.pending_inadmissible as f64),
                ]
            }),
        )?;
        gauge(
            &mut e,
            "kueue_reserving_active_workloads",
            "The number of Workloads that are reserving quota, per 'cluster_queue'",
            s.cluster_queues
                .iter()
                .map(|q| (cq(&q.name), q.reserving as f64)),
        )?;
        gauge(
            &mut e,
            "kueue_admitted_active_workloads",
            "The number of admitted Workloads that are active, per 'cluster_queue'",
            s.cluster_queues
                .iter()
                .map(|q| (cq(&q.name), q.admitted as f64)),
        )?;
        gauge(
            &mut e,
            "kueue_finished_workloads",
            "The number of finished workloads per 'cluster_queue'.",
            s.cluster_queues
                .iter()
                .map(|q| (cq(&q.name), q.finished as f64)),
        )?;
        gauge(
            &mut e,
            "kueue_cluster_queue_status",
            "Reports 'cluster_queue' with its 'status' (with possible values 'pending', 'active' or 'terminated'). For a ClusterQueue, the metric only reports a value of 1 for one of the statuses.",
            s.cluster_queues.iter().flat_map(|q| {
                ["pending", "active", "terminating"]
                    .into_iter()
                    .map(|st| (cq_status(&q.name, st), f64::from(u8::from(q.status == st))))
            }),
        )?;
        gauge(
            &mut e,
            "kueue_cluster_queue_info",
            "Reports ClusterQueue hierarchy information. The metric has value 1 and can be joined using labels.",
            s.cluster_queues.iter().map(|q| {
                (
                    vec![
                        ("cluster_queue", q.name.clone()),
                        ("parent_cohort", q.cohort.clone()),
                        ("root_cohort", q.root_cohort.clone()),
                        role(),
                    ],
                    1.0,
                )
            }),
        )?;
        gauge(
            &mut e,
            "kueue_cohort_info",
            "Reports Cohort hierarchy information. The metric has value 1 and can be joined using labels.",
            s.cohorts.iter().map(|c| {
                (
                    vec![
                        ("cohort", c.name.clone()),
                        ("parent_cohort", c.parent.clone()),
                        ("root_cohort", c.root.clone()),
                        role(),
                    ],
                    1.0,
                )
            }),
        )?;
        gauge(
            &mut e,
            "kueue_cohort_subtree_admitted_active_workloads",
            "The number of admitted Workloads that are active, per cohort's subtree",
            s.cohorts
                .iter()
                .map(|c| (vec![("cohort", c.name.clone()), role()], c.admitted as f64)),
        )?;
        // Kueue clears a subtree's quota or reservation series at zero.
        let cohort_fr = |c: &CohortSample, (f, r, v): &(String, String, f64)| {
            (
                vec![
                    ("cohort", c.name.clone()),
                    ("flavor", f.clone()),
                    ("resource", r.clone()),
                    role(),
                ],
                *v,
            )
        };
        gauge(
            &mut e,
            "kueue_cohort_subtree_quota",
            "Reports the cohort's nominal quota aggregated within the cohort's subtree. The values are reported per resource and flavor",
            s.cohorts.iter().flat_map(|c| {
                c.quota
                    .iter()
                    .filter(|q| q.2 > 0.0)
                    .map(move |q| cohort_fr(c, q))
            }),
        )?;
        gauge(
            &mut e,
            "kueue_cohort_subtree_resource_reservations",
            "Reports the cohort's resource reservations aggregated within the cohort's subtree. The values are reported per resource and flavor",
            s.cohorts.iter().flat_map(|c| {
                c.reservations
                    .iter()
                    .filter(|q| q.2 > 0.0)
                    .map(move |q| cohort_fr(c, q))
            }),
        )?;
        if self.options.cluster_queue_resources {
            let fr = |q: &ClusterQueueSample, r: &ResourceSample| {
                vec![
                    ("cohort", q.cohort.clone()),
                    ("cluster_queue", q.name.clone()),
                    ("flavor", r.flavor.clone()),
                    ("resource", r.resource.clone()),
                    role(),
                ]
            };
            let rows = |pick: fn(&ResourceSample) -> f64| {
                s.cluster_queues
                    .iter()
                    .flat_map(move |q| q.resources.iter().map(move |r| (fr(q, r), pick(r))))
                    .collect::<Vec<_>>()
            };
            gauge(
                &mut e,
                "kueue_cluster_queue_resource_reservation",
                "Reports the cluster_queue's total resource reservation within all the flavors",
                rows(|r| r.reservation),
            )?;
            gauge(
                &mut e,
                "kueue_cluster_queue_resource_usage",
                "Reports the cluster_queue's total resource usage within all the flavors",
                rows(|r| r.usage),
            )?;
            gauge(
                &mut e,
                "kueue_cluster_queue_nominal_quota",
                "Reports the cluster_queue's resource nominal quota within all the flavors",
                rows(|r| r.nominal),
            )?;
            gauge(&mut e, "kueue_cluster_queue_borrowing_limit", "Reports the cluster_queue's resource borrowing limit within all the flavors. If borrowingLimit is unset, this metric reports +Inf.", rows(|r| r.borrowing_limit.unwrap_or(f64::INFINITY)))?;
            gauge(&mut e, "kueue_cluster_queue_lending_limit", "Reports the cluster_queue's resource lending limit within all the flavors. If lendingLimit is unset, this metric reports +Inf.", rows(|r| r.lending_limit.unwrap_or(f64::INFINITY)))?;
        }
        if !self.options.local_queues {
            return Ok(());
        }
        let lq = |q: &LocalQueueSample| {
            vec![
                ("name", q.name.clone()),
                ("namespace", q.namespace.clone()),
                role(),
            ]
        };
        let lq_with = |q: &LocalQueueSample, k: &'static str, v: &str| {
            vec![
                ("name", q.name.clone()),
                ("namespace", q.namespace.clone()),
                (k, v.to_string()),
                role(),
            ]
        };
        gauge(
            &mut e,
            "kueue_local_queue_pending_workloads",
            "The number of pending workloads, per 'local_queue' and 'status'. 'status' can have the following values: \"active\" means that the workloads are in the admission queue; \"inadmissible\" means there was a failed admission attempt for these workloads and they won't be retried until cluster conditions, which could make this workload admissible, change",
            s.local_queues.iter().flat_map(|q| {
                [
                    (lq_with(q, "status", "active"), q.pending_active as f64),
                    (lq_with(q, "status", "inadmissible"), q.pending_inadmissible as f64),
                ]
            }),
        )?;
        gauge(
            &mut e,
            "kueue_local_queue_reserving_active_workloads",
            "The number of Workloads that are reserving quota, per 'localQueue'",
            s.local_queues.iter().map(|q| (lq(q), q.reserving as f64)),
        )?;
        gauge(
            &mut e,
            "kueue_local_queue_admitted_active_workloads",
            "The number of admitted Workloads that are active, per 'localQueue'",
            s.local_queues.iter().map(|q| (lq(q), q.admitted as f64)),
        )?;
        gauge(
            &mut e,
            "kueue_local_queue_finished_workloads",
            "The number of finished workloads, per 'local_queue'.",
            s.local_queues.iter().map(|q| (lq(q), q.finished as f64)),
        )?;
        gauge(
            &mut e,
            "kueue_local_queue_status",
            "Reports 'localQueue' with its 'active' status (with possible values 'True', 'False', or 'Unknown'). For a LocalQueue, the metric only reports a value of 1 for one of the statuses.",
            s.local_queues.iter().flat_map(|q| {
                ["True", "False", "Unknown"]
                    .into_iter()
                    .map(|st| (lq_with(q, "active", st), f64::from(u8::from(q.active == st))))
            }),
        )?;
        let lq_fr = |q: &LocalQueueSample, f: &str, r: &str| {
            vec![
                ("name", q.name.clone()),
                ("namespace", q.namespace.clone()),
                ("flavor", f.to_string()),
                ("resource", r.to_string()),
                role(),
            ]
        };
        gauge(
            &mut e,
            "kueue_local_queue_resource_reservation",
            "Reports the localQueue's total resource reservation within all the flavors",
            s.local_queues.iter().flat_map(|q| {
                q.resources
                    .iter()
                    .map(move |(f, r, reserved, _)| (lq_fr(q, f, r), *reserved))
            }),
        )?;
        gauge(
            &mut e,
            "kueue_local_queue_resource_usage",
            "Reports the localQueue's total resource usage within all the flavors",
            s.local_queues.iter().flat_map(|q| {
                q.resources
                    .iter()
                    .map(move |(f, r, _, admitted)| (lq_fr(q, f, r), *admitted))
            }),
        )
    }
}

/// `kueue_build_info`: batchgate's version where Kueue puts its own (the
/// series exists so dashboards that join on it find one).
#[derive(Debug)]
struct BuildInfo;

impl Collector for BuildInfo {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let platform = format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH);
        gauge(
            &mut e,
            "kueue_build_info",
            "Kueue build information. 1 labeled by git version, git commit, build date, go version, compiler, platform",
            [(
                vec![
                    (
                        "git_version",
                        format!("batchgate-v{}", env!("CARGO_PKG_VERSION")),
                    ),
                    ("git_commit", String::new()),
                    ("build_date", String::new()),
                    ("go_version", String::new()),
                    ("compiler", "rustc".to_string()),
                    ("platform", platform),
                ],
                1.0,
            )],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use std::collections::BTreeMap;

    const CQ: &[&str] = &["cluster_queue", "replica_role"];
    const CQ_STATUS: &[&str] = &["cluster_queue", "status", "replica_role"];
    const CQ_PRIORITY: &[&str] = &["cluster_queue", "priority_class", "replica_role"];
    const CQ_EVICTED: &[&str] = &[
        "cluster_queue",
        "reason",
        "underlying_cause",
        "priority_class",
        "replica_role",
    ];
    const CQ_RESOURCE: &[&str] = &[
        "cohort",
        "cluster_queue",
        "flavor",
        "resource",
        "replica_role",
    ];
    const LQ: &[&str] = &["name", "namespace", "replica_role"];
    const LQ_PRIORITY: &[&str] = &["name", "namespace", "priority_class", "replica_role"];
    const LQ_RESOURCE: &[&str] = &["name", "namespace", "flavor", "resource", "replica_role"];
    const COHORT_FR: &[&str] = &["cohort", "flavor", "resource", "replica_role"];

    /// Kueue v0.19.2's metrics that batchgate reports: name, type and label
    /// names in order, written from `pkg/metrics/metrics.go` at v0.19.2
    /// (`InitMetricVectors`, no custom labels configured).
    const UPSTREAM: &[(&str, &str, &[&str])] = &[
        (
            "kueue_admission_attempts_total",
            "counter",
            &["result", "replica_role"],
        ),
        (
            "kueue_admission_attempt_duration_seconds",
            "histogram",
            &["result", "replica_role"],
        ),
        (
            "kueue_build_info",
            "gauge",
            &[
                "git_version",
                "git_commit",
                "build_date",
                "go_version",
                "compiler",
                "platform",
            ],
        ),
        ("kueue_pending_workloads", "gauge", CQ_STATUS),
        (
            "kueue_quota_reserved_workloads_total",
            "counter",
            CQ_PRIORITY,
        ),
        (
            "kueue_quota_reserved_wait_time_seconds",
            "histogram",
            CQ_PRIORITY,
        ),
        ("kueue_admitted_workloads_total", "counter", CQ_PRIORITY),
        (
            "kueue_admission_wait_time_seconds",
            "histogram",
            CQ_PRIORITY,
        ),
        ("kueue_evicted_workloads_total", "counter", CQ_EVICTED),
        ("kueue_evicted_workloads_once_total", "counter", CQ_EVICTED),
        (
            "kueue_preempted_workloads_total",
            "counter",
            &["preempting_cluster_queue", "reason", "replica_role"],
        ),
        (
            "kueue_multikueue_workloads_dispatched_total",
            "counter",
            &["cluster_queue", "cluster", "replica_role"],
        ),
        (
            "kueue_multikueue_workloads_admitted_total",
            "counter",
            &["cluster_queue", "cluster", "replica_role"],
        ),
        ("kueue_reserving_active_workloads", "gauge", CQ),
        ("kueue_admitted_active_workloads", "gauge", CQ),
        ("kueue_cluster_queue_status", "gauge", CQ_STATUS),
        (
            "kueue_cluster_queue_resource_reservation",
            "gauge",
            CQ_RESOURCE,
        ),
        ("kueue_cluster_queue_resource_usage", "gauge", CQ_RESOURCE),
        ("kueue_cluster_queue_nominal_quota", "gauge", CQ_RESOURCE),
        ("kueue_cluster_queue_borrowing_limit", "gauge", CQ_RESOURCE),
        ("kueue_cluster_queue_lending_limit", "gauge", CQ_RESOURCE),
        (
            "kueue_cluster_queue_info",
            "gauge",
            &[
                "cluster_queue",
                "parent_cohort",
                "root_cohort",
                "replica_role",
            ],
        ),
        (
            "kueue_cohort_info",
            "gauge",
            &["cohort", "parent_cohort", "root_cohort", "replica_role"],
        ),
        ("kueue_cohort_subtree_quota", "gauge", COHORT_FR),
        (
            "kueue_cohort_subtree_resource_reservations",
            "gauge",
            COHORT_FR,
        ),
        (
            "kueue_cohort_subtree_admitted_workloads_total",
            "counter",
            &["cohort", "priority_class", "replica_role"],
        ),
        (
            "kueue_cohort_subtree_admitted_active_workloads",
            "gauge",
            &["cohort", "replica_role"],
        ),
        (
            "kueue_local_queue_pending_workloads",
            "gauge",
            &["name", "namespace", "status", "replica_role"],
        ),
        (
            "kueue_local_queue_quota_reserved_workloads_total",
            "counter",
            LQ_PRIORITY,
        ),
        (
            "kueue_local_queue_quota_reserved_wait_time_seconds",
            "histogram",
            LQ_PRIORITY,
        ),
        (
            "kueue_local_queue_admitted_workloads_total",
            "counter",
            LQ_PRIORITY,
        ),
        (
            "kueue_local_queue_admission_wait_time_seconds",
            "histogram",
            LQ_PRIORITY,
        ),
        (
            "kueue_local_queue_evicted_workloads_total",
            "counter",
            &[
                "name",
                "namespace",
                "reason",
                "underlying_cause",
                "priority_class",
                "replica_role",
            ],
        ),
        ("kueue_local_queue_reserving_active_workloads", "gauge", LQ),
        ("kueue_local_queue_admitted_active_workloads", "gauge", LQ),
        (
            "kueue_local_queue_status",
            "gauge",
            &["name", "namespace", "active", "replica_role"],
        ),
        ("kueue_finished_workloads", "gauge", CQ),
        ("kueue_local_queue_finished_workloads", "gauge", LQ),
        (
            "kueue_local_queue_resource_reservation",
            "gauge",
            LQ_RESOURCE,
        ),
        ("kueue_local_queue_resource_usage", "gauge", LQ_RESOURCE),
    ];

    /// The rest of v0.19.2's list, and why batchgate reports none of it.
    const NOT_REPORTED: &[(&str, &str)] = &[
        (
            "kueue_admission_cycle_preemption_skips",
            "no preemption candidates are skipped in a cycle",
        ),
        // client_golang writes Prometheus text, where these counters and
        // the finished_workloads gauges are four names; /metrics is
        // OpenMetrics, where a counter's family drops `_total` and would
        // clash with the gauge of the same name. The gauges are reported.
        (
            "kueue_finished_workloads_total",
            "its OpenMetrics family name is the kueue_finished_workloads gauge's",
        ),
        (
            "kueue_local_queue_finished_workloads_total",
            "its OpenMetrics family name is the kueue_local_queue_finished_workloads gauge's",
        ),
        (
            "kueue_pods_ready_to_evicted_time_seconds",
            "waitForPodsReady's readiness timings are not recorded yet",
        ),
        (
            "kueue_ready_wait_time_seconds",
            "waitForPodsReady's readiness timings are not recorded yet",
        ),
        (
            "kueue_admitted_until_ready_wait_time_seconds",
            "waitForPodsReady's readiness timings are not recorded yet",
        ),
        (
            "kueue_local_queue_ready_wait_time_seconds",
            "waitForPodsReady's readiness timings are not recorded yet",
        ),
        (
            "kueue_local_queue_admitted_until_ready_wait_time_seconds",
            "waitForPodsReady's readiness timings are not recorded yet",
        ),
        (
            "kueue_admission_checks_wait_time_seconds",
            "not yet recorded",
        ),
        (
            "kueue_local_queue_admission_checks_wait_time_seconds",
            "not yet recorded",
        ),
        (
            "kueue_workload_creation_latency_seconds",
            "not yet recorded",
        ),
        (
            "kueue_pod_scheduling_gate_removal_seconds",
            "not yet recorded for any of the ungaters (pod groups, elastic jobs, TAS)",
        ),
        (
            "kueue_replaced_workload_slices_total",
            "not yet recorded (slices are replaced; the count is not kept)",
        ),
        (
            "kueue_workload_eviction_latency_seconds",
            "not yet recorded",
        ),
        (
            "kueue_unadmitted_workloads",
            "UnadmittedWorkloadsObservability is off by default",
        ),
        (
            "kueue_local_queue_unadmitted_workloads",
            "UnadmittedWorkloadsObservability is off by default",
        ),
        ("kueue_cluster_queue_resource_pending", "not yet recorded"),
        (
            "kueue_local_queue_admission_fair_sharing_usage",
            "not yet reported (the usage is in the LocalQueue's status.fairSharing)",
        ),
        (
            "kueue_cluster_queue_weighted_share",
            "not yet reported (the shares are in status.fairSharing)",
        ),
        (
            "kueue_cohort_weighted_share",
            "not yet reported (the shares are in status.fairSharing)",
        ),
    ];

    fn snapshot() -> QueueSnapshot {
        QueueSnapshot {
            cluster_queues: vec![ClusterQueueSample {
                name: "cq".into(),
                cohort: "co".into(),
                root_cohort: "root".into(),
                pending_active: 2,
                pending_inadmissible: 1,
                reserving: 3,
                admitted: 2,
                finished: 1,
                status: "active",
                resources: vec![ResourceSample {
                    flavor: "f".into(),
                    resource: "cpu".into(),
                    nominal: 4.0,
                    borrowing_limit: None,
                    lending_limit: Some(1.5),
                    reservation: 3.0,
                    usage: 2.0,
                }],
            }],
            local_queues: vec![LocalQueueSample {
                namespace: "ns".into(),
                name: "lq".into(),
                pending_active: 2,
                pending_inadmissible: 1,
                reserving: 3,
                admitted: 2,
                finished: 1,
                active: "True",
                resources: vec![("f".into(), "cpu".into(), 3.0, 2.0)],
            }],
            cohorts: vec![CohortSample {
                name: "co".into(),
                parent: "root".into(),
                root: "root".into(),
                quota: vec![("f".into(), "cpu".into(), 2.5)],
                reservations: vec![("f".into(), "cpu".into(), 3.0)],
                admitted: 2,
            }],
        }
    }

    fn exercised(options: Options) -> String {
        let m = Metrics::with_kueue(options);
        let k = &m.kueue;
        let wl = WorkloadLabels {
            namespace: "ns".into(),
            local_queue: "lq".into(),
            cluster_queue: "cq".into(),
            priority_class: "high".into(),
        };
        k.admission_attempt(true, 0.01);
        k.admitted(&wl, &["co".into(), "root".into()], 3.0);
        k.evicted(&wl, "Preempted", true);
        k.preempted("cq", "InClusterQueue");
        k.multikueue_dispatched("cq", "worker1");
        k.multikueue_admitted("cq", "worker1");
        k.publish(snapshot());
        m.render()
    }

    /// Family name → (type, label names of its samples, in order).
    fn families(text: &str) -> BTreeMap<String, (String, Vec<Vec<String>>)> {
        let mut out: BTreeMap<String, (String, Vec<Vec<String>>)> = BTreeMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, ty) = rest.split_once(' ').unwrap();
                out.entry(name.to_string()).or_default().0 = ty.to_string();
            } else if !line.starts_with('#') && line.starts_with("kueue_") {
                let name = line.split(['{', ' ']).next().unwrap();
                let labels = line
                    .split_once('{')
                    .map(|(_, rest)| {
                        let set = rest.rsplit_once('}').unwrap().0;
                        set.split("\",")
                            .map(|kv| kv.split_once('=').unwrap().0.to_string())
                            .filter(|k| k != "le")
                            .collect()
                    })
                    .unwrap_or_default();
                let family = ["_total", "_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s).filter(|f| out.contains_key(*f)))
                    .unwrap_or(name);
                out.entry(family.to_string()).or_default().1.push(labels);
            }
        }
        out
    }

    #[test]
    fn kueue_metric_names_types_and_labels_are_v0_19_2s() {
        let text = exercised(Options {
            cluster_queue_resources: true,
            local_queues: true,
        });
        let got = families(&text);
        for (name, ty, labels) in UPSTREAM {
            // OpenMetrics names a counter's family without `_total`.
            let family = match *ty {
                "counter" => name.strip_suffix("_total").unwrap(),
                _ => name,
            };
            let (got_ty, samples) = got
                .get(family)
                .unwrap_or_else(|| panic!("{name} is not exported:\n{text}"));
            assert_eq!(got_ty, ty, "{name}");
            assert!(!samples.is_empty(), "{name} has no sample");
            for s in samples {
                assert_eq!(s, labels, "{name}'s labels");
            }
        }
        // Nothing else under Kueue's prefix, and nothing listed twice.
        let reported: Vec<&str> = UPSTREAM.iter().map(|(n, ..)| *n).collect();
        for family in got.keys().filter(|f| f.starts_with("kueue_")) {
            assert!(
                reported.contains(&family.as_str())
                    || reported.contains(&format!("{family}_total").as_str()),
                "{family} is not in v0.19.2's list"
            );
        }
        for (name, _) in NOT_REPORTED {
            assert!(!reported.contains(name), "{name} listed twice");
        }
        assert_eq!(UPSTREAM.len() + NOT_REPORTED.len(), 60);
        // batchgate's own are still there.
        assert!(got.contains_key("batchgate_certificate_expiry_timestamp_seconds"));
    }

    #[test]
    fn cohort_metrics_follow_the_tree() {
        // cohort_metrics.go: every Cohort reports its parent and root, its
        // SubtreeQuota and reservations; an admission counts in the subtree
        // of every Cohort above the queue.
        let text = exercised(Options::default());
        let has = |l: &str| text.lines().any(|x| x.starts_with(l));
        assert!(has("kueue_cluster_queue_info{cluster_queue=\"cq\",parent_cohort=\"co\",root_cohort=\"root\""), "{text}");
        assert!(
            has("kueue_cohort_info{cohort=\"co\",parent_cohort=\"root\",root_cohort=\"root\""),
            "{text}"
        );
        assert!(has("kueue_cohort_subtree_quota{cohort=\"co\",flavor=\"f\",resource=\"cpu\",replica_role=\"leader\"} 2.5"), "{text}");
        assert!(has("kueue_cohort_subtree_resource_reservations{cohort=\"co\",flavor=\"f\",resource=\"cpu\",replica_role=\"leader\"} 3.0"), "{text}");
        assert!(has("kueue_cohort_subtree_admitted_active_workloads{cohort=\"co\",replica_role=\"leader\"} 2"), "{text}");
        for c in ["co", "root"] {
            assert!(has(&format!("kueue_cohort_subtree_admitted_workloads_total{{cohort=\"{c}\",priority_class=\"high\"")), "{c}: {text}");
        }
    }

    #[test]
    fn values_are_upstreams_units_and_defaults() {
        let text = exercised(Options {
            cluster_queue_resources: true,
            local_queues: true,
        });
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no {prefix}"))
                .rsplit_once(' ')
                .unwrap()
                .1
                .to_string()
        };
        assert_eq!(
            line("kueue_pending_workloads{cluster_queue=\"cq\",status=\"active\""),
            "2.0"
        );
        assert_eq!(
            line("kueue_pending_workloads{cluster_queue=\"cq\",status=\"inadmissible\""),
            "1.0"
        );
        assert_eq!(
            line("kueue_cluster_queue_status{cluster_queue=\"cq\",status=\"active\""),
            "1.0"
        );
        assert_eq!(
            line("kueue_cluster_queue_status{cluster_queue=\"cq\",status=\"pending\""),
            "0.0"
        );
        assert_eq!(line("kueue_cluster_queue_nominal_quota{"), "4.0");
        assert_eq!(line("kueue_cluster_queue_lending_limit{"), "1.5");
        assert_eq!(
            line("kueue_cluster_queue_borrowing_limit{").to_lowercase(),
            "inf"
        );
        assert_eq!(line("kueue_admitted_workloads_total{"), "1");
        // Kueue's wait buckets: 1, then 2.5 doubling.
        assert_eq!(
            line("kueue_admission_wait_time_seconds_bucket{le=\"2.5\","),
            "0"
        );
        assert_eq!(
            line("kueue_admission_wait_time_seconds_bucket{le=\"5.0\","),
            "1"
        );
        assert!(text.contains("le=\"10240.0\""));
        // Upstream's defaults: no resource metrics, LocalQueue metrics on.
        let default = exercised(Options::default());
        assert!(!default.contains("kueue_cluster_queue_nominal_quota"));
        assert!(default.contains("kueue_local_queue_pending_workloads"));
        let no_lq = exercised(Options {
            cluster_queue_resources: false,
            local_queues: false,
        });
        assert!(!no_lq.contains("kueue_local_queue_"));
    }
}
