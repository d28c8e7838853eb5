//! The queueing controller: watches ResourceFlavors, ClusterQueues,
//! LocalQueues, Namespaces and Workloads into the pure [`Engine`], runs its
//! cycles, and writes what they decide — Workload status first (the
//! admission is recorded before anything starts), then ClusterQueue and
//! LocalQueue status. One task owns the engine; writes run beside it and
//! report back.
//!
//! Crash safety follows from the order: the engine is rebuilt from the API
//! on start (every Workload with `status.admission` and `QuotaReserved=True`
//! holds its quota again), an admission counts as soon as it is decided
//! (before its write lands), and every Workload status write carries the
//! `resourceVersion` it was computed from, so a stale decision never lands.
//!
//! What each Workload costs the apiserver: an admission is one
//! merge patch (`status.admission`, `QuotaReserved` and `Admitted` together);
//! a pending reason is written only when its condition would change
//! (status, reason or message — Kueue's `SetStatusCondition` rule), only
//! once it has held [`PENDING_DELAY`], only the latest one, and one at a
//! time ([`PENDING_WRITES`]); events go
//! as Kueue records them ([`super::events`]); queue statuses at most once
//! a second per queue, only on change.
//!
//! Why merge patches with a `resourceVersion`, not server-side apply: Kueue
//! v0.19.2 applies admissions and pending reasons loosely (no
//! `resourceVersion`, field manager `kueue-admission`, forced), which is
//! where its writes avoid conflicts — and exactly what would let a stale
//! decision land (a deposed leader's admission, or a pending reason over
//! an admission). The conflicts the benchmark's runner sees come from its
//! own strict `Finished` apply racing an eviction of the same Workload:
//! batchgate writes nothing else to an admitted Workload, so they fall
//! with the evictions, not with the write form.

use crate::cluster::positions::Ask;
use std::{
    collections::{BTreeMap, HashMap, HashSet, VecDeque},
    sync::Arc,
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::{
    api::core::v1::Namespace,
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
};
use kube::{
    api::Patch,
    runtime::{
        watcher::{self, Event},
        WatchStreamExt,
    },
    Api, Client, Resource, ResourceExt,
};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};
use tracing::{debug, info, warn};

use super::{
    context::params,
    devices::{Gate, Verdict},
    events::{Events, Occurrence},
    translation,
};
use crate::metrics::kueue::KueueMetrics;
use crate::{
    api::kueue::v1beta2::{self as api, condition, Conditions},
    queueing::reservation::release,
    queueing::{
        quantity, ClusterObjects, ClusterQueueStatus, Decision, Engine, EvictionReason,
        LocalQueueStatus, PendingReason, PreemptedReason,
    },
};

mod check_feed;
mod claims;
mod decisions;
mod fair;
mod feed;
mod finalizers;
mod jobless;
mod metrics;
/// Kueue's queue gauges from the engine alone (benches time it).
pub use metrics::snapshot as metrics_snapshot;
mod priorities;
mod status;

// The children name their siblings and the other controllers' modules
// through here, as they did when this was one file.
use super::{devices, vetting};
use decisions::drained_by;
use feed::{watch, watch_with};
// What the tests below call, from where it moved.
#[cfg(test)]
use decisions::{count_eviction, digits_only_change, occurrences, render, write_workload};
#[cfg(test)]
use status::{cq_status_json, lq_status_json, queue_status_due};

/// Writes in flight at once, per lane. Admissions go a few at a time on
/// purpose: a deep pipeline of them takes the apiserver from the
/// controllers that start and finish what was admitted, so quota stays held
/// by work that is done but not yet marked so, and higher-priority arrivals
/// preempt it: many in flight keep most of the quota held and multiply
/// the evictions on Kueue's scheduler benchmark (the figures are in
/// BENCHMARKS.md, Preemption, and its history). An admission
/// waiting for room is still withdrawn unsent by a preemption that picks it,
/// and a preemptor takes such admissions back before it evicts anything
/// written (`Engine::set_unsent`).
const ADMISSION_WRITES: usize = 2;
/// Evictions (and requeue marks) have their own lane: a preemptor waits for
/// them, so they never queue behind admissions.
const EVICTION_WRITES: usize = 2;
/// Pending-reason updates: many, and never urgent. One at a time, at most
/// one per [`PENDING_EVERY`]: each costs the apiserver a Workload write
/// as an admission does, and under a burst most of them would go to
/// Workloads admitted seconds later; Kueue writes one per head its
/// scheduler could not admit, inside its rate-limited cycle.
const PENDING_WRITES: usize = 1;
/// Queue statuses are looked at this often and written at most this many
/// at once (one per queue): under load, the queues written longest ago go
/// first.
const STATUS_EVERY: Duration = Duration::from_millis(250);
const QUEUE_STATUS_WRITES: usize = 8;
/// One queue's status is written at most once per this period, with what
/// changed in it coalesced: Kueue's ClusterQueue and LocalQueue controllers
/// enqueue a status update `UpdatesBatchPeriod` (1 s) after a change.
const QUEUE_STATUS_PERIOD: Duration = Duration::from_secs(1);
/// A pending reason is written once it has held this long (a Workload
/// admitted sooner never gets one), and only into a free pending lane:
/// under load they are the writes that wait, never admissions.
const PENDING_DELAY: Duration = Duration::from_millis(250);
const PENDING_EVERY: Duration = Duration::from_millis(100);
/// Released quota lets set-aside Workloads try again at most this often
/// per Cohort tree, this long after the first release, as Kueue's
/// `requeueBatchPeriod` does; the loop wakes when a batch is due, as
/// Kueue's delaying queue does. Each try of a head that still does not fit
/// is a pending reason written. A quarter of Kueue's 1 s on purpose: the
/// released quota stands idle until the batch, and while every head of a
/// Cohort waits set aside, Kueue's second after each release kept the
/// highest priorities longest from quota that was free (BENCHMARKS.md,
/// Kueue's scheduler benchmark).
const REQUEUE_BATCH: Duration = Duration::from_millis(250);

enum Input {
    Flavor(Event<api::ResourceFlavor>),
    Topology(Event<api::Topology>),
    /// Nodes and bound pods: topology-aware scheduling's node view.
    Node(Box<Event<k8s_openapi::api::core::v1::Node>>),
    Pod(Box<Event<k8s_openapi::api::core::v1::Pod>>),
    ClusterQueue(Event<api::ClusterQueue>),
    LocalQueue(Event<api::LocalQueue>),
    Namespace(Event<Namespace>),
    Workload(Event<api::Workload>),
    Cohort(Event<api::Cohort>),
    AdmissionCheck(Event<api::AdmissionCheck>),
    PriorityClass(Event<api::WorkloadPriorityClass>),
    /// A priority write failed: check the Workload again.
    PriorityRecheck(Key),
    /// A jobless Workload's deactivation failed: try it again.
    Deactivate(Key, String),
    ClaimTemplate(Event<k8s_openapi::api::resource::v1::ResourceClaimTemplate>),
    ResourceSlice(Event<k8s_openapi::api::resource::v1::ResourceSlice>),
    DeviceClass(Event<k8s_openapi::api::resource::v1::DeviceClass>),
    Written {
        key: Key,
        outcome: Outcome,
        /// The Workload as the write left it, and the resourceVersion the
        /// controller held when it started the write.
        written: Option<Box<api::Workload>>,
        based_on: String,
    },
    StatusWritten {
        queue: QueueKey,
        ok: bool,
    },
    /// A finalizer write on a ClusterQueue or ResourceFlavor was answered.
    GuardWritten {
        kind: crate::queueing::finalizers::Guarded,
        name: String,
    },
}

/// A ClusterQueue (name) or LocalQueue (namespace, name) whose status is
/// written; at most one write per queue is in flight.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum QueueKey {
    Cluster(String),
    Local(String, String),
    /// A Cohort's status (fair sharing's weighted share).
    Cohort(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Admitted,
    AdmissionRefused,
    /// A node-failure replacement not written: the old admission stands.
    ReplacementRefused,
    Done,
}

/// What the controller keeps of a Workload besides the engine's view: what
/// a status write needs. Its namespace and name are in its key, its
/// LocalQueue in the engine's view.
#[derive(Debug, Clone)]
struct Meta {
    resource_version: String,
    conditions: Vec<Condition>,
    generation: Option<i64>,
    /// A job owns it (its controller, or a pod group's pods); the job's
    /// reconciler stops the job and then releases the quota. Without one,
    /// an eviction releases it at once.
    owned: bool,
    created_ms: i64,
    /// `status.schedulingStats.evictions`, counted on by an eviction.
    evictions: Vec<api::WorkloadSchedulingStatsEviction>,
    /// `spec.priorityClassRef.name` (Kueue's metrics' `priority_class`).
    priority_class: String,
    /// `status.accumulatedPastExecutionTimeSeconds`, added to when a
    /// jobless Workload's admission is released.
    accumulated: Option<i32>,
    /// An admission being written waits for admission checks: no
    /// `Admitted` yet (set per write, see [`checks`]).
    held_by_checks: bool,
    /// `status.clusterName`: the MultiKueue worker it runs on.
    cluster_name: Option<String>,
    /// An admission being written replaces a workload slice that runs on
    /// this MultiKueue worker: the new slice goes there too (set per
    /// write, see [`Controller::inherited_cluster`]).
    inherited_cluster: Option<String>,
}

impl Meta {
    fn of(wl: &api::Workload, engine_wl: &crate::queueing::Workload) -> Meta {
        // A pod group's pods own its Workload without being its
        // controller; they are its job all the same.
        let owned = wl
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) || (o.kind == "Pod" && o.api_version == "v1"));
        let mut meta = Meta {
            resource_version: String::new(),
            conditions: Vec::new(),
            generation: None,
            owned,
            created_ms: engine_wl.created,
            evictions: Vec::new(),
            priority_class: wl
                .spec
                .priority_class_ref
                .as_ref()
                .map(|r| r.name.clone())
                .unwrap_or_default(),
            accumulated: None,
            held_by_checks: false,
            cluster_name: wl.status.as_ref().and_then(|s| s.cluster_name.clone()),
            inherited_cluster: None,
        };
        meta.refresh(wl);
        meta
    }

    /// What a write reads of the Workload, from a newer version of it.
    fn refresh(&mut self, wl: &api::Workload) {
        let status = wl.status.as_ref();
        self.resource_version = wl.resource_version().unwrap_or_default();
        self.conditions = status
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        self.generation = wl.metadata.generation;
        self.evictions = status
            .and_then(|s| s.scheduling_stats.as_ref())
            .and_then(|s| s.evictions.clone())
            .unwrap_or_default();
        self.accumulated = status.and_then(|s| s.accumulated_past_execution_time_seconds);
    }
}

/// Workloads as the watch delivered them while a write for them was
/// waiting or in flight. The write bases itself on the newest version the
/// watch has seen instead of the one it was decided on: an eviction
/// waiting behind others for its lane would otherwise often meet a
/// Workload its runner had finished meanwhile, be refused (409) and read
/// the Workload again. The write keeps its `resourceVersion`
/// precondition: this only picks which version it is conditioned on.
#[derive(Clone, Default)]
struct Newer(Arc<std::sync::Mutex<HashMap<Key, api::Workload>>>);

impl Newer {
    fn note(&self, k: &Key, wl: &api::Workload) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(k.clone(), wl.clone());
        }
    }

    fn forget(&self, k: &str) {
        if let Ok(mut m) = self.0.lock() {
            m.remove(k);
        }
    }

    fn take(&self, k: &str) -> Option<api::Workload> {
        self.0.lock().ok()?.remove(k)
    }
}

#[derive(Debug, Clone)]
enum Write {
    Admit(crate::queueing::Admission),
    Evict {
        reason: EvictionReason,
        message: String,
        preempted: Option<PreemptedReason>,
    },
    Pending {
        reason: PendingReason,
        message: String,
    },
    /// `Requeued=True` once the queue that drained the Workload runs again
    /// (`from` is the `Requeued=False` reason it replaces).
    Requeued {
        from: &'static str,
        reason: &'static str,
        message: &'static str,
    },
    /// A Workload made without a job ran out of its maximum execution
    /// time: `DeactivationTarget` (see [`jobless`]).
    Exceeded {
        max_secs: i32,
    },
    /// A workload slice whose replacement was admitted: `Finished=True`,
    /// reason `WorkloadSliceReplaced` (Kueue's scheduler writes it right
    /// after the replacement's admission).
    Replaced {
        message: String,
    },
    /// A node-failure replacement: the new admission (only topology
    /// assignments differ) and `status.unhealthyNodes` cleared, as Kueue's
    /// scheduler writes it after a second pass.
    Replace(crate::queueing::Admission),
}

/// `namespace/name`, or `name` for a cluster-scoped object. A Workload's
/// key is one allocation shared by every set and map here that holds it.
type Key = Arc<str>;

/// Kinds whose first full list has arrived, and the keys seen in a re-list.
#[derive(Default)]
struct Listing {
    done: bool,
    seen: Option<HashSet<Key>>,
}

pub struct Controller {
    client: Client,
    engine: Engine,
    /// waitForPodsReady's `requeuingStrategy.timestamp` (`Creation` when
    /// it is off: the queue order is the creation time).
    requeuing_timestamp: crate::jobs::readiness::RequeuingTimestamp,
    started: bool,
    initial: ClusterObjects,
    listings: [Listing; 12],
    known: [HashSet<Key>; 12],
    /// Nodes and non-TAS pod usage seen before the engine starts.
    initial_nodes: BTreeMap<String, crate::queueing::topology::Node>,
    initial_pods: BTreeMap<String, crate::queueing::nodes::PodUsage>,
    meta: HashMap<Key, Meta>,
    /// Workloads drained by a stopped queue or deactivated
    /// (`Requeued=False`), waiting for the queue to run again or the
    /// Workload to be active again.
    drained: HashSet<Key>,
    /// Per Workload, the writes waiting for the one in flight.
    queued: HashMap<Key, VecDeque<Write>>,
    /// Pending reasons decided and not written yet (the latest per
    /// Workload, and since when one has been due), oldest first in
    /// `pending_order`; see [`PENDING_DELAY`].
    pending_due: HashMap<Key, (Write, Instant)>,
    pending_order: VecDeque<(Instant, Key)>,
    busy: HashSet<Key>,
    /// Newer versions of busy Workloads, for their writes.
    newer: Newer,
    /// Admissions decided and still waiting for room in the admission
    /// lane: a preemption of one withdraws it unsent (see
    /// [`decisions::Unsent`]).
    unsent: HashMap<Key, Arc<decisions::Unsent>>,
    admission_lane: Arc<Semaphore>,
    eviction_lane: Arc<Semaphore>,
    pending_lane: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Input>,
    cq_status: BTreeMap<String, ClusterQueueStatus>,
    cq_written: BTreeMap<String, Value>,
    lq_written: BTreeMap<(String, String), Value>,
    /// Queue status writes not answered yet: the next one for the same
    /// queue waits, so a slow apiserver sees one write per queue, not a
    /// pile of concurrent patches to the same object.
    status_in_flight: HashSet<QueueKey>,
    status_written_at: HashMap<QueueKey, Instant>,
    status_due: bool,
    recorder: Events,
    /// Workload status writes landed, by kind; logged as they grow.
    tally: Arc<std::sync::Mutex<BTreeMap<&'static str, u64>>>,
    tally_logged: u64,
    /// The pending queues as the visibility API serves them (snapshotted
    /// on the status tick when asked for; see [`crate::queueing::visibility`]).
    visibility: crate::cluster::positions::Positions,
    /// Device placement before admission (see [`super::devices`]).
    devices: Gate,
    /// Kueue's metrics (see [`metrics`]).
    metrics: Arc<KueueMetrics>,
    /// The preemptor's ClusterQueue of each eviction decided for a
    /// preemption, until its write is sent.
    preempting: HashMap<Key, String>,
    /// Finished Workloads still in the API, by their LocalQueue
    /// (namespace, name): Kueue's `finished_workloads` gauges.
    finished: HashMap<Key, (String, String)>,
    /// ClusterQueues and ResourceFlavors as their `resource-in-use`
    /// finalizer needs them, and those with a finalizer write in flight.
    guarded: BTreeMap<(crate::queueing::finalizers::Guarded, String), finalizers::Guard>,
    guard_in_flight: HashSet<(crate::queueing::finalizers::Guarded, String)>,
    /// AdmissionChecks and ClusterQueue check rules (see [`checks`]).
    checks: check_feed::Feed,
    /// Fair sharing's settings and the weights seen so far; `None` while
    /// it is off (see [`fair`]).
    fair: Option<crate::queueing::fair_sharing::FairSharing>,
    /// Cohort statuses (`fairSharing.weightedShare`) last written.
    cohort_written: BTreeMap<String, Value>,
    /// DRA claims counted as quota (see [`claims`]).
    claims: claims::Claims,
    /// Workloads following a WorkloadPriorityClass's value (see
    /// [`priorities`]).
    priorities: priorities::Priorities,
    /// Deadlines and deactivations of Workloads made without a job (see
    /// [`jobless`]).
    jobless: jobless::Jobless,
}

const FLAVORS: usize = 0;
const CLUSTER_QUEUES: usize = 1;
const LOCAL_QUEUES: usize = 2;
const NAMESPACES: usize = 3;
const WORKLOADS: usize = 4;
const COHORTS: usize = 5;
const TEMPLATES: usize = 6;
const SLICES: usize = 7;
const CLASSES: usize = 8;
const TOPOLOGIES: usize = 9;
const NODES: usize = 10;
const PODS: usize = 11;

use crate::controllers::context::now_time;

/// Sleeps until `at`; never wakes without one.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn now_ms() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_millisecond()
}

fn key(ns: Option<&str>, name: &str) -> String {
    match ns {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// A Workload's namespace and name, from its key.
fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

/// What the configuration sets for the queueing controller.
pub struct Settings {
    /// waitForPodsReady (`None`: off).
    pub readiness: Option<crate::jobs::readiness::Settings>,
    /// Fair sharing (`None`: off).
    pub fair: Option<crate::queueing::fair_sharing::FairSharing>,
    pub admission_fair_sharing:
        Option<crate::queueing::admission_fair_sharing::AdmissionFairSharing>,
    /// DRA claims as quota.
    pub claims: crate::queueing::claims::Settings,
    /// Kueue's `SchedulingEquivalenceHashing` gate.
    pub equivalence_hashing: bool,
}

impl Controller {
    /// Starts the watches and runs until the process ends.
    pub async fn run(
        client: Client,
        positions: crate::cluster::positions::Positions,
        metrics: Arc<KueueMetrics>,
        settings: Settings,
        mut leading: tokio::sync::watch::Receiver<bool>,
    ) {
        let Settings {
            readiness,
            fair,
            admission_fair_sharing,
            claims,
            equivalence_hashing,
        } = settings;
        let (tx, mut rx) = mpsc::unbounded_channel();
        watch(
            Api::<api::ResourceFlavor>::all(client.clone()),
            tx.clone(),
            Input::Flavor,
        );
        watch(
            Api::<api::Topology>::all(client.clone()),
            tx.clone(),
            Input::Topology,
        );
        watch(Api::all(client.clone()), tx.clone(), |e| {
            Input::Node(Box::new(e))
        });
        // Bound pods only: what runs outside TAS takes node room from it.
        watch_with(
            Api::all(client.clone()),
            watcher::Config::default().fields("spec.nodeName!="),
            tx.clone(),
            |e| Input::Pod(Box::new(e)),
        );
        watch(
            Api::<api::ClusterQueue>::all(client.clone()),
            tx.clone(),
            Input::ClusterQueue,
        );
        watch(
            Api::<api::LocalQueue>::all(client.clone()),
            tx.clone(),
            Input::LocalQueue,
        );
        watch(
            Api::<Namespace>::all(client.clone()),
            tx.clone(),
            Input::Namespace,
        );
        watch(
            Api::<api::Workload>::all(client.clone()),
            tx.clone(),
            Input::Workload,
        );
        watch(
            Api::<api::Cohort>::all(client.clone()),
            tx.clone(),
            Input::Cohort,
        );
        watch(
            Api::<api::AdmissionCheck>::all(client.clone()),
            tx.clone(),
            Input::AdmissionCheck,
        );
        watch(
            Api::<api::WorkloadPriorityClass>::all(client.clone()),
            tx.clone(),
            Input::PriorityClass,
        );
        let templates =
            Api::<k8s_openapi::api::resource::v1::ResourceClaimTemplate>::all(client.clone());
        // A cluster that does not serve resource.k8s.io/v1 has no claims
        // to count: nothing to wait for before the engine starts.
        let dra_served = !matches!(
            templates.list(&kube::api::ListParams::default().limit(1)).await,
            Err(kube::Error::Api(ref e)) if e.code == 404
        );
        if dra_served {
            watch(templates, tx.clone(), Input::ClaimTemplate);
            watch(Api::all(client.clone()), tx.clone(), Input::ResourceSlice);
            watch(Api::all(client.clone()), tx.clone(), Input::DeviceClass);
        } else {
            info!("resource.k8s.io/v1 is not served: no ResourceClaimTemplates to count");
        }
        let mut c = Controller {
            recorder: Events::start(client.clone()),
            tally: Arc::default(),
            tally_logged: 0,
            devices: Gate::start(&client).await,
            client,
            engine: Engine::new(),
            requeuing_timestamp: readiness
                .as_ref()
                .map_or(crate::jobs::readiness::RequeuingTimestamp::Creation, |r| {
                    r.timestamp
                }),
            started: false,
            initial: ClusterObjects::default(),
            listings: Default::default(),
            known: Default::default(),
            initial_nodes: BTreeMap::new(),
            initial_pods: BTreeMap::new(),
            meta: HashMap::new(),
            drained: HashSet::new(),
            queued: HashMap::new(),
            pending_due: HashMap::new(),
            pending_order: VecDeque::new(),
            busy: HashSet::new(),
            newer: Newer::default(),
            unsent: HashMap::new(),
            admission_lane: Arc::new(Semaphore::new(ADMISSION_WRITES)),
            eviction_lane: Arc::new(Semaphore::new(EVICTION_WRITES)),
            pending_lane: Arc::new(Semaphore::new(PENDING_WRITES)),
            tx,
            cq_status: BTreeMap::new(),
            cq_written: BTreeMap::new(),
            lq_written: BTreeMap::new(),
            status_in_flight: HashSet::new(),
            status_written_at: HashMap::new(),
            status_due: false,
            visibility: positions,
            metrics,
            preempting: HashMap::new(),
            finished: HashMap::new(),
            guarded: BTreeMap::new(),
            guard_in_flight: HashSet::new(),
            checks: check_feed::Feed::default(),
            fair,
            cohort_written: BTreeMap::new(),
            claims: claims::Claims::new(claims),
            priorities: priorities::Priorities::default(),
            jobless: jobless::Jobless::default(),
        };
        for kind in [TEMPLATES, SLICES, CLASSES] {
            c.listings[kind].done = !dra_served;
        }
        // Kept through the rebuild from the API (`Engine::rebuilt`).
        c.engine
            .set_block_admission(readiness.as_ref().is_some_and(|r| r.block_admission));
        c.engine.set_admission_fair_sharing(admission_fair_sharing);
        c.engine
            .set_requeue_batch(Some(REQUEUE_BATCH.as_millis() as i64));
        c.engine.set_equivalence_hashing(equivalence_hashing);
        let mut status_tick = tokio::time::interval(STATUS_EVERY);
        status_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut pending_tick = tokio::time::interval(PENDING_EVERY);
        pending_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A standby keeps the engine in step with the watches (so it admits
        // at once when it takes the Lease) and answers the visibility API
        // from it; it decides and writes nothing until it leads.
        let mut leads = *leading.borrow();
        loop {
            // The next requeue batch, in the runtime's clock.
            let batch_due = c.engine.next_requeue_at().map(|at| {
                let wait = u64::try_from(at - now_ms()).unwrap_or(0);
                tokio::time::Instant::now() + Duration::from_millis(wait)
            });
            tokio::select! {
                _ = sleep_until_some(batch_due), if leads && c.started => {
                    if c.engine.requeue_due(now_ms()) {
                        c.cycle();
                    }
                }
                first = rx.recv() => {
                    let Some(first) = first else { return };
                    // Take everything that is already waiting before a
                    // cycle; ClusterQueues created together join the quota
                    // tree together.
                    c.engine.defer();
                    c.input(first);
                    while let Ok(more) = rx.try_recv() {
                        c.input(more);
                    }
                    c.engine.settle();
                    if leads {
                        c.cycle();
                        c.sync_priorities();
                        c.sync_jobless();
                    }
                }
                changed = leading.changed(), if !leads => {
                    if changed.is_err() {
                        // The elector is gone: this replica never leads.
                        std::future::pending::<()>().await;
                    }
                    leads = *leading.borrow_and_update();
                    if leads {
                        info!(started = c.started, "leading: the queueing engine admits from the state it kept");
                        c.status_due = true;
                        c.cycle();
                        c.priorities.recheck();
                        c.sync_priorities();
                    }
                }
                _ = status_tick.tick() => {
                    if leads {
                        // Admission fair sharing's sampling (the engine
                        // knows which LocalQueues are due).
                        if c.started && c.engine.sample_admission_fair_sharing(now_ms()) {
                            c.status_due = true;
                        }
                        if c.status_due {
                            // One walk of the Workloads for both.
                            let lqs = c.engine.local_queue_statuses();
                            c.publish_metrics(&lqs);
                            c.write_statuses(lqs);
                        }
                        c.log_tally();
                        if c.started {
                            c.sync_finalizers();
                            c.sync_jobless();
                        }
                    }
                    if c.started {
                        for (ask, answer) in c.visibility.questions() {
                            let _ = answer.send(match ask {
                                Ask::Explain { namespace, name } => Ok(c
                                    .engine
                                    .explain(&namespace, &name)
                                    .or_else(|| {
                                        let (lq, message) =
                                            c.claims.held(&key(Some(&namespace), &name))?;
                                        Some(crate::queueing::scheduler::Explanation::held_for_devices(lq, message))
                                    })),
                                Ask::Simulate(wl) => super::translation::workload(&wl)
                                    .map(|w| Some(c.simulate(&wl, w)))
                                    .map_err(|e| e.to_string()),
                            });
                        }
                    }
                    if c.started && c.visibility.wanted() {
                        c.visibility.publish(crate::queueing::visibility::Snapshot::of(&c.engine));
                    }
                }
                _ = pending_tick.tick(), if leads => {
                    if c.started && c.engine.requeue_due(now_ms()) {
                        c.cycle();
                    }
                    c.flush_pending();
                    if c.devices.pools_changed() {
                        c.engine.requeue_set_aside();
                        c.cycle();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queueing::{Admission, PodSetAssignment};

    /// A job-owned Workload's meta at `rv`, with `conditions`.
    fn test_meta(rv: &str, conditions: Vec<Condition>) -> Meta {
        Meta {
            resource_version: rv.into(),
            conditions,
            generation: Some(1),
            owned: true,
            created_ms: 0,
            evictions: Vec::new(),
            priority_class: String::new(),
            accumulated: None,
            held_by_checks: false,
            cluster_name: None,
            inherited_cluster: None,
        }
    }

    fn at(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
    }

    fn admission() -> Admission {
        Admission {
            cluster_queue: "cq".into(),
            pod_set_assignments: vec![PodSetAssignment {
                name: "main".into(),
                flavors: [("cpu".to_string(), "f".to_string())].into(),
                resource_usage: [("cpu".to_string(), 2000)].into(),
                count: 2,
                topology: None,
            }],
        }
    }

    fn conds(v: &Value) -> Vec<Condition> {
        serde_json::from_value(v["conditions"].clone()).unwrap()
    }

    /// Who releases an evicted Workload's quota: the engine at once for
    /// one made without a job; the job's reconciler, once the job has
    /// stopped, for a job's (its controller) and for a pod group's (its
    /// pods own it, none as controller).
    #[test]
    fn a_pod_groups_workload_is_its_pods_to_release() {
        let wl = |owners: Value| {
            let wl: api::Workload = serde_json::from_value(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": "w", "namespace": "ns", "ownerReferences": owners},
                "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
                    "template": {"spec": {"containers": []}}}]},
            }))
            .unwrap();
            let engine = translation::workload(&wl).unwrap();
            Meta::of(&wl, &engine).owned
        };
        let owner = |kind: &str, controller: Option<bool>| {
            json!({"apiVersion": if kind == "Pod" {"v1"} else {"batch/v1"}, "kind": kind,
                   "name": "o", "uid": "u", "controller": controller})
        };
        assert!(!wl(json!([])));
        assert!(wl(json!([owner("Job", Some(true))])));
        assert!(wl(json!([owner("Pod", None), owner("Pod", None)])));
        assert!(!wl(json!([owner("ConfigMap", None)])));
    }

    #[test]
    fn an_admission_is_written_with_kueues_conditions_and_only_once() {
        let s = render(&Write::Admit(admission()), &[], Some(1), &at(10)).unwrap();
        assert_eq!(s["admission"]["clusterQueue"], "cq");
        assert_eq!(
            s["admission"]["podSetAssignments"][0]["resourceUsage"]["cpu"],
            "2"
        );
        let c = Conditions(conds(&s));
        let qr = c.get("QuotaReserved").unwrap();
        assert_eq!(
            (qr.status.as_str(), qr.reason.as_str(), qr.message.as_str()),
            ("True", "QuotaReserved", "Quota reserved in ClusterQueue cq")
        );
        assert!(c.is_true("Admitted"));
        // Already reserved (our own write came back, or someone else's):
        // a second admission is not written.
        assert!(render(&Write::Admit(admission()), &c.0, Some(1), &at(11)).is_none());
    }

    /// The engine's admissions skip the Workload webhook: one it would
    /// refuse (a pod set the Workload does not have) is not sent.
    #[tokio::test]
    async fn an_admission_the_workload_webhook_would_refuse_is_not_sent() {
        use crate::controllers::vetting::testing::{recording_client, view};
        let none = Newer::default();
        let (client, sent) = recording_client();
        let meta = test_meta("1", Vec::new());
        let mut wrong = admission();
        wrong.pod_set_assignments[0].name = "workers".into();
        let w = Write::Admit(wrong);
        let (outcome, written) = write_workload(
            &client,
            "ns/wl",
            meta.clone(),
            &w,
            None,
            Some(view()),
            &none,
        )
        .await;
        assert_eq!(outcome, Outcome::AdmissionRefused);
        assert!(written.is_none() && sent.lock().unwrap().is_empty());
        // The right one is sent (and answered 404 here).
        let w = Write::Admit(admission());
        write_workload(&client, "ns/wl", meta, &w, None, Some(view()), &none).await;
        assert_eq!(
            *sent.lock().unwrap(),
            ["PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status"]
        );
    }

    /// A slice that replaces one running on a MultiKueue worker is
    /// admitted onto that worker: `clusterName` goes out with the
    /// admission (Kueue's scheduler copies it from the old slice), which
    /// the Workload webhook allows only for a replacing slice.
    #[tokio::test]
    async fn a_replacing_slices_admission_names_the_old_slices_worker() {
        use crate::controllers::vetting::testing::{scripted_client, status, view};
        let none = Newer::default();
        let meta = |replacing: bool| Meta {
            inherited_cluster: replacing.then(|| "worker1".to_string()),
            ..test_meta("3", Vec::new())
        };
        let mut replacing = view();
        replacing.replaces = Some("ns/old".into());
        let (client, sent) = scripted_client(|_, _, _| (404, status(404, "NotFound")));
        let w = Write::Admit(admission());
        write_workload(
            &client,
            "ns/wl",
            meta(true),
            &w,
            None,
            Some(replacing),
            &none,
        )
        .await;
        // Not a replacement: the webhook would refuse a cluster name that was
        // never nominated, so none is written.
        write_workload(&client, "ns/wl", meta(true), &w, None, Some(view()), &none).await;
        write_workload(&client, "ns/wl", meta(false), &w, None, Some(view()), &none).await;
        let sent = sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(sent[0].body["status"]["clusterName"], "worker1");
        assert_eq!(sent[1].body["status"].get("clusterName"), None);
    }

    /// A node-failure replacement goes out as one status merge patch: the
    /// new admission (only its topology assignment differs) and
    /// `unhealthyNodes` cleared, on the Workload's `resourceVersion`; one
    /// not written (gone here) is reported refused, so the engine puts the
    /// old admission back.
    #[tokio::test]
    async fn a_replacement_is_one_status_patch_clearing_unhealthy_nodes() {
        use crate::api::kueue::conversion::topology::Domain;
        use crate::controllers::vetting::testing::{scripted_client, status, view};
        use crate::queueing::topology::Assignment as Placement;
        let none = Newer::default();
        let on = |nodes: &[&str]| Placement {
            levels: vec!["kubernetes.io/hostname".into()],
            domains: nodes
                .iter()
                .map(|n| Domain {
                    values: vec![n.to_string()],
                    count: 1,
                })
                .collect(),
        };
        let mut before = admission();
        before.pod_set_assignments[0].topology = Some(on(&["x1", "x2"]));
        let mut after = before.clone();
        after.pod_set_assignments[0].topology = Some(on(&["x2", "x3"]));
        let mut view = view();
        view.admission = Some(before);
        view.unhealthy_nodes = vec!["x1".into()];
        let admitted = conds(&render(&Write::Admit(admission()), &[], Some(1), &at(1)).unwrap());
        let meta = test_meta("5", admitted);
        let (client, sent) = scripted_client(|_, _, _| (404, status(404, "NotFound")));
        let w = Write::Replace(after.clone());
        let (outcome, written) =
            write_workload(&client, "ns/wl", meta, &w, None, Some(view), &none).await;
        assert_eq!(outcome, Outcome::ReplacementRefused);
        assert!(written.is_none());
        let sent = sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 1);
        assert_eq!(
            sent[0].line,
            "PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status?&fieldManager=batchgate"
        );
        assert_eq!(
            sent[0].body,
            json!({
                "metadata": {"resourceVersion": "5"},
                "status": {
                    "admission": translation::admission_json(&after),
                    "unhealthyNodes": null,
                },
            })
        );
        assert_eq!(
            sent[0].body["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
                ["levels"],
            json!(["kubernetes.io/hostname"])
        );
    }

    /// An eviction that waited for its lane is based on the version the
    /// watch brought meanwhile: none is sent for a Workload its runner has
    /// finished; one newer but unfinished gets one patch on its
    /// resourceVersion; after a conflict, the version the watch brought
    /// since saves reading it again.
    #[tokio::test]
    async fn an_eviction_is_based_on_the_newest_version_the_watch_brought() {
        use crate::controllers::vetting::testing::{scripted_client, sent, status, view};
        let admitted = conds(&render(&Write::Admit(admission()), &[], Some(1), &at(1)).unwrap());
        let evict = Write::Evict {
            reason: EvictionReason::Preempted,
            message: "Preempted to accommodate a workload".into(),
            preempted: Some(PreemptedReason::InClusterQueue),
        };
        let version = {
            let admitted = admitted.clone();
            move |rv: &str, finished: bool| -> api::Workload {
                let mut c = admitted.clone();
                if finished {
                    c.push(Condition {
                        type_: "Finished".into(),
                        status: "True".into(),
                        reason: "Succeeded".into(),
                        message: "done".into(),
                        last_transition_time: at(2),
                        observed_generation: Some(1),
                    });
                }
                let wl: api::Workload = serde_json::from_value(json!({
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                    "metadata": {"name": "wl", "namespace": "ns", "resourceVersion": rv,
                                 "generation": 1},
                    "spec": {"queueName": "lq", "podSets": []},
                    "status": {"conditions": c},
                }))
                .unwrap();
                wl
            }
        };
        let key: Key = Arc::from("ns/wl");
        let newer = Newer::default();
        // The eviction, decided on resourceVersion 5.
        let write = |client: kube::Client| {
            let (meta, evict, newer) = (test_meta("5", admitted.clone()), &evict, &newer);
            async move { write_workload(&client, "ns/wl", meta, evict, None, Some(view()), newer).await }
        };

        // Finished while the eviction waited: nothing is sent.
        newer.note(&key, &version("7", true));
        let (client, script) = scripted_client(|_, _, _| (404, status(404, "NotFound")));
        let (outcome, written) = write(client).await;
        assert_eq!((outcome, written.is_none()), (Outcome::Done, true));
        assert!(sent(&script).is_empty(), "{:?}", sent(&script));

        // Newer, not finished: one patch on the newer resourceVersion.
        newer.note(&key, &version("7", false));
        let (client, script) = scripted_client(|_, _, _| (404, status(404, "NotFound")));
        write(client).await;
        let got = sent(&script);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].1["metadata"]["resourceVersion"], "7");

        // Refused (409), and the watch has brought the Workload finished
        // since: no second patch, no read.
        let (n, v) = (newer.clone(), version.clone());
        let (client, script) = scripted_client(move |method, _, _| {
            if method == "PATCH" {
                n.note(&Arc::from("ns/wl"), &v("9", true));
                (409, status(409, "Conflict"))
            } else {
                (404, status(404, "NotFound"))
            }
        });
        let (outcome, _) = write(client).await;
        assert_eq!(outcome, Outcome::Done);
        let got: Vec<String> = sent(&script).into_iter().map(|(l, _)| l).collect();
        assert_eq!(
            got,
            ["PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status"]
        );
    }

    /// An admission waiting for room in a full admission lane is withdrawn
    /// by a preemption: the task gives up at once and sends nothing.
    #[tokio::test]
    async fn an_unsent_admission_is_withdrawn_and_a_sent_one_is_not() {
        use decisions::{Unsent, Withdrawn};
        let lane = Arc::new(Semaphore::new(1));
        let busy = lane.clone().acquire_owned().await.unwrap();
        let u = Arc::new(Unsent::default());
        let waiting = tokio::spawn({
            let (u, lane) = (u.clone(), lane.clone());
            async move { u.room(lane).await.map(|p| p.is_some()) }
        });
        tokio::task::yield_now().await;
        assert!(u.withdraw());
        let got = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        assert_eq!(got.unwrap().unwrap(), Err(Withdrawn));
        assert!(!u.withdraw(), "withdrawn once");
        drop(busy);

        // Withdrawn before the task even waits: it never takes the room.
        let early = Unsent::default();
        assert!(early.withdraw());
        assert_eq!(early.room(lane.clone()).await.map(|_| ()), Err(Withdrawn));
        assert_eq!(lane.available_permits(), 1);

        // With room it is sent, and can no longer be withdrawn.
        let sent = Unsent::default();
        let permit = sent.room(lane.clone()).await;
        assert!(matches!(permit, Ok(Some(_))));
        assert!(!sent.withdraw());
    }

    #[test]
    fn the_tally_tells_a_changed_number_from_a_changed_message() {
        let was = "insufficient unused quota for cpu in flavor rf, 3 more needed";
        assert!(digits_only_change(
            was,
            "insufficient unused quota for cpu in flavor rf, 15 more needed"
        ));
        assert!(!digits_only_change(was, was));
        assert!(!digits_only_change(
            was,
            "insufficient quota for cpu in flavor rf, 3 more needed"
        ));
    }

    #[test]
    fn an_eviction_then_release_gives_the_quota_back() {
        let admitted = conds(&render(&Write::Admit(admission()), &[], None, &at(10)).unwrap());
        let evict = Write::Evict {
            reason: EvictionReason::Preempted,
            message: "Preempted to accommodate a workload".into(),
            preempted: Some(PreemptedReason::InClusterQueue),
        };
        let s = render(&evict, &admitted, None, &at(20)).unwrap();
        let c = Conditions(conds(&s));
        assert_eq!(c.get("Evicted").unwrap().reason, "Preempted");
        assert_eq!(c.get("Preempted").unwrap().reason, "InClusterQueue");
        // Still reserved until the job is stopped.
        assert!(c.is_true("QuotaReserved"));
        assert!(s.get("admission").is_none());
        // Evicting twice writes nothing.
        assert!(render(&evict, &c.0, None, &at(21)).is_none());
        let r = release(&c.0, None, &at(30), Some(5)).unwrap();
        // Admitted at 10, released at 30: 20 s more.
        assert_eq!(r["accumulatedPastExecutionTimeSeconds"], 25);
        assert!(r["admission"].is_null());
        let c = Conditions(conds(&r));
        assert!(!c.is_true("QuotaReserved") && !c.is_true("Admitted"));
        let rq = c.get("Requeued").unwrap();
        assert_eq!(
            (rq.status.as_str(), rq.reason.as_str()),
            ("True", "Preempted")
        );
        // Admitted again: the old eviction is kept as history.
        let again = render(&Write::Admit(admission()), &c.0, None, &at(40)).unwrap();
        let c = Conditions(conds(&again));
        let ev = c.get("Evicted").unwrap();
        assert_eq!(ev.status, "False");
        assert_eq!(
            ev.message,
            "Previously: Preempted to accommodate a workload"
        );
    }

    /// Kueue v0.19.2 workload_controller.go: an inactive Workload with a
    /// `DeactivationTarget` is evicted as `DeactivatedDueTo<its reason>`,
    /// "The workload is deactivated due to <its message>", and the target
    /// condition is dropped; a plain deactivation keeps Kueue's plain words.
    #[test]
    fn a_deactivation_for_a_cause_is_evicted_in_its_name() {
        let mut c = Conditions(conds(
            &render(&Write::Admit(admission()), &[], None, &at(1)).unwrap(),
        ));
        let plain = Write::Evict {
            reason: EvictionReason::Deactivated,
            message: "The workload is deactivated".into(),
            preempted: None,
        };
        let e = Conditions(conds(&render(&plain, &c.0, None, &at(2)).unwrap()));
        let ev = e.get("Evicted").unwrap();
        assert_eq!(
            (ev.reason.as_str(), ev.message.as_str()),
            ("Deactivated", "The workload is deactivated")
        );
        c.set(
            "DeactivationTarget",
            true,
            "MaximumExecutionTimeExceeded",
            "exceeding the maximum execution time",
            &at(2),
            None,
        );
        let e = Conditions(conds(&render(&plain, &c.0, None, &at(3)).unwrap()));
        let ev = e.get("Evicted").unwrap();
        assert_eq!(
            (ev.reason.as_str(), ev.message.as_str()),
            (
                "DeactivatedDueToMaximumExecutionTimeExceeded",
                "The workload is deactivated due to exceeding the maximum execution time"
            )
        );
        assert!(e.get("DeactivationTarget").is_none());
        assert_eq!(
            serde_json::to_value(count_eviction(
                &[],
                "Deactivated",
                "MaximumExecutionTimeExceeded"
            ))
            .unwrap(),
            json!([{"reason": "Deactivated", "underlyingCause": "MaximumExecutionTimeExceeded", "count": 1}])
        );
    }

    #[test]
    fn pending_reasons_are_written_only_when_they_change_and_never_over_an_admission() {
        let p = Write::Pending {
            reason: PendingReason::WaitingForQuota,
            message: "couldn't assign flavors".into(),
        };
        let s = render(&p, &[], None, &at(1)).unwrap();
        let c = Conditions(conds(&s));
        let qr = c.get("QuotaReserved").unwrap();
        assert_eq!(
            (qr.status.as_str(), qr.reason.as_str()),
            ("False", "Pending")
        );
        assert!(render(&p, &c.0, None, &at(2)).is_none());
        let admitted = conds(&render(&Write::Admit(admission()), &[], None, &at(3)).unwrap());
        assert!(render(&p, &admitted, None, &at(4)).is_none());
        // Nothing is written to a finished Workload.
        let mut done = Conditions(admitted);
        done.set("Finished", true, "Succeeded", "", &at(5), None);
        assert!(render(&Write::Admit(admission()), &done.0, None, &at(6)).is_none());
    }

    #[test]
    fn a_drained_workload_is_marked_requeued_once_its_queue_runs_again() {
        let admitted = conds(&render(&Write::Admit(admission()), &[], None, &at(1)).unwrap());
        let evict = Write::Evict {
            reason: EvictionReason::ClusterQueueStopped,
            message: "The ClusterQueue is stopped".into(),
            preempted: None,
        };
        let evicted = conds(&render(&evict, &admitted, None, &at(2)).unwrap());
        let released = conds(&release(&evicted, None, &at(3), None).unwrap());
        assert_eq!(drained_by(&released), Some("ClusterQueueStopped"));
        let restarted = Write::Requeued {
            from: "ClusterQueueStopped",
            reason: "ClusterQueueRestarted",
            message: "The ClusterQueue was restarted after being stopped",
        };
        let c = Conditions(conds(&render(&restarted, &released, None, &at(4)).unwrap()));
        let rq = c.get("Requeued").unwrap();
        assert_eq!(
            (rq.status.as_str(), rq.reason.as_str(), rq.message.as_str()),
            (
                "True",
                "ClusterQueueRestarted",
                "The ClusterQueue was restarted after being stopped"
            )
        );
        assert_eq!(drained_by(&c.0), None);
        // Written once; never over another queue's stop or a preemption.
        assert!(render(&restarted, &c.0, None, &at(5)).is_none());
        let lq = Write::Requeued {
            from: "LocalQueueStopped",
            reason: "LocalQueueRestarted",
            message: "The LocalQueue was restarted after being stopped",
        };
        assert!(render(&lq, &released, None, &at(5)).is_none());
    }

    /// Kueue v0.19.2 pkg/controller/core/workload_controller_requeue_test.go
    /// and test/integration/singlecluster/controller/jobs/job/
    /// job_controller_test.go ("...the Active field back to true"): a
    /// Workload deactivated and released reads `Requeued=False`
    /// (`Deactivated`); reactivated, `Requeued=True` (`Reactivated`, "The
    /// workload was reactivated"). A deactivation for a cause is not
    /// marked reactivated (its reason is `DeactivatedDueTo<cause>`).
    #[test]
    fn a_deactivated_workload_is_marked_reactivated() {
        let admitted = conds(&render(&Write::Admit(admission()), &[], None, &at(1)).unwrap());
        let evict = Write::Evict {
            reason: EvictionReason::Deactivated,
            message: "The workload is deactivated".into(),
            preempted: None,
        };
        let evicted = conds(&render(&evict, &admitted, None, &at(2)).unwrap());
        let released = conds(&release(&evicted, None, &at(3), None).unwrap());
        let rq = Conditions(released.clone())
            .get("Requeued")
            .unwrap()
            .clone();
        assert_eq!(
            (rq.status.as_str(), rq.reason.as_str(), rq.message.as_str()),
            ("False", "Deactivated", "The workload is deactivated")
        );
        assert_eq!(drained_by(&released), Some("Deactivated"));
        let reactivated = Write::Requeued {
            from: "Deactivated",
            reason: "Reactivated",
            message: "The workload was reactivated",
        };
        let c = Conditions(conds(
            &render(&reactivated, &released, None, &at(4)).unwrap(),
        ));
        let rq = c.get("Requeued").unwrap();
        assert_eq!(
            (rq.status.as_str(), rq.reason.as_str(), rq.message.as_str()),
            ("True", "Reactivated", "The workload was reactivated")
        );
        assert!(render(&reactivated, &c.0, None, &at(5)).is_none());
        let mut caused = Conditions(admitted);
        caused.set(
            "DeactivationTarget",
            true,
            "MaximumExecutionTimeExceeded",
            "exceeding the maximum execution time",
            &at(2),
            None,
        );
        let evicted = conds(&render(&evict, &caused.0, None, &at(3)).unwrap());
        let released = conds(&release(&evicted, None, &at(4), None).unwrap());
        assert_eq!(drained_by(&released), None);
    }

    #[test]
    fn cluster_queue_usage_is_what_admitted_workloads_hold() {
        use crate::queueing::{ActiveCondition, FlavorUsage, ResourceUsage};
        let flavor = |total| {
            vec![FlavorUsage {
                name: "default".into(),
                resources: vec![ResourceUsage {
                    name: "cpu".into(),
                    total,
                    borrowed: 0,
                }],
            }]
        };
        let s = ClusterQueueStatus {
            name: "cq".into(),
            pending_workloads: 0,
            reserving_workloads: 2,
            admitted_workloads: 1,
            flavors_usage: flavor(5000),
            flavors_admitted: flavor(2000),
            active: ActiveCondition {
                status: true,
                reason: "Ready",
                message: "Can admit new workloads".into(),
            },
            weighted_share: None,
        };
        let v = cq_status_json(&s, None);
        assert!(
            v.get("fairSharing").is_none(),
            "fair sharing off: not written"
        );
        let fair = ClusterQueueStatus {
            weighted_share: Some(250),
            ..s.clone()
        };
        assert_eq!(
            cq_status_json(&fair, None)["fairSharing"],
            json!({"weightedShare": 250})
        );
        assert_eq!(v["flavorsReservation"][0]["resources"][0]["total"], "5");
        assert_eq!(v["flavorsUsage"][0]["resources"][0]["total"], "2");
        assert_eq!(
            (
                v["reservingWorkloads"].clone(),
                v["admittedWorkloads"].clone()
            ),
            (json!(2), json!(1))
        );
        let lq = LocalQueueStatus {
            namespace: "ns".into(),
            name: "lq".into(),
            reserving_workloads: 2,
            admitted_workloads: 1,
            usage: [("default".to_string(), [("cpu".to_string(), 5000)].into())].into(),
            admitted_usage: [("default".to_string(), [("cpu".to_string(), 2000)].into())].into(),
            ..LocalQueueStatus::default()
        };
        let v = lq_status_json(&lq, Some(true), false, None);
        assert_eq!(v["flavorsReservation"][0]["resources"][0]["total"], "5");
        assert_eq!(v["flavorsUsage"][0]["resources"][0]["total"], "2");
    }

    #[test]
    fn a_queue_status_is_written_at_most_once_per_period() {
        let t0 = Instant::now();
        assert!(queue_status_due(None, t0));
        assert!(!queue_status_due(Some(t0), t0));
        assert!(!queue_status_due(
            Some(t0),
            t0 + QUEUE_STATUS_PERIOD - Duration::from_millis(1)
        ));
        assert!(queue_status_due(Some(t0), t0 + QUEUE_STATUS_PERIOD));
    }

    #[test]
    fn events_are_kueues_reasons_and_notes() {
        let admit = occurrences("ns/wl", 3.4, &Write::Admit(admission()));
        let got: Vec<(&str, bool, &str)> = admit
            .iter()
            .map(|o| (o.reason.as_str(), o.warning, o.note.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "QuotaReserved",
                    false,
                    "Quota reserved in ClusterQueue cq, wait time since queued was 3s"
                ),
                (
                    "Admitted",
                    false,
                    "Admitted by ClusterQueue cq, wait time since reservation was 0s"
                ),
            ]
        );
        assert!(admit.iter().all(|o| o.regarding == "ns/wl"));
        let evict = occurrences(
            "ns/wl",
            0.0,
            &Write::Evict {
                reason: EvictionReason::Preempted,
                message: "Preempted to accommodate a workload".into(),
                preempted: Some(PreemptedReason::InClusterQueue),
            },
        );
        let reasons: Vec<&str> = evict.iter().map(|o| o.reason.as_str()).collect();
        assert_eq!(reasons, vec!["Preempted", "EvictedDueToPreempted"]);
        let pending = occurrences(
            "ns/wl",
            0.0,
            &Write::Pending {
                reason: PendingReason::WaitingForQuota,
                message: "x".repeat(2000),
            },
        );
        assert_eq!(pending.len(), 1);
        assert_eq!(
            (pending[0].reason.as_str(), pending[0].warning),
            ("Pending", true)
        );
        // Kueue's TruncateEventMessage.
        assert_eq!(pending[0].note.len(), 1024);
        assert!(pending[0].note.ends_with("x ..."));
    }

    #[test]
    fn evictions_are_counted_by_reason() {
        let one = count_eviction(&[], "Preempted", "");
        assert_eq!(
            serde_json::to_value(&one).unwrap(),
            json!([{"reason": "Preempted", "underlyingCause": "", "count": 1}])
        );
        let two = count_eviction(
            &count_eviction(&one, "ClusterQueueStopped", ""),
            "Preempted",
            "",
        );
        assert_eq!(
            serde_json::to_value(&two).unwrap(),
            json!([
                {"reason": "Preempted", "underlyingCause": "", "count": 2},
                {"reason": "ClusterQueueStopped", "underlyingCause": "", "count": 1},
            ])
        );
    }
}
