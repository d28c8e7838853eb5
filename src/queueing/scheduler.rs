//! The engine: objects and events in, admission cycles out
//! (`pkg/scheduler/scheduler.go` and the parts of the queue manager and
//! workload controller that decide).
//!
//! The shell feeds every change it observes through the `upsert_*`,
//! `delete_*` and confirmation methods, and calls [`Engine::schedule`] to
//! run a cycle. A cycle pops one head per active ClusterQueue, assigns
//! flavors against a snapshot of the quota, orders the entries (less
//! borrowing, higher priority, older first) and admits them one by one on
//! that snapshot, so admissions in one cycle never add up past quota.
//!
//! An admission is *assumed* as soon as it is decided: its quota counts
//! until the shell reports it written ([`Engine::confirm_admission`]) or
//! failed ([`Engine::reject_admission`]). An eviction keeps counting until
//! the shell reports the job stopped ([`Engine::confirm_eviction`]). That
//! is what makes "write state before acting on it" safe on both sides, and
//! why [`Engine::rebuild`] from the API's objects counts every workload
//! with `status.admission` as holding quota.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use super::{
    cluster_queue::{
        ActiveCondition, ClusterQueue, ClusterQueueStatus, FlavorUsage, LocalQueue,
        LocalQueueStatus, ResourceUsage,
    },
    cohort::Cohort,
    flavors::ResourceFlavor,
    queues::{PendingQueue, QueueOrder},
    quota::{FlavorResource, QuotaTree, Usage},
    workload::{Admission, Workload},
};

/// Why a workload holds no quota (`QuotaReserved=False` reasons, v1beta2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PendingReason {
    /// Some quota is missing; it may free up.
    WaitingForQuota,
    /// No flavor is compatible with the pod sets.
    NoMatchingFlavor,
    /// More than the ClusterQueue could ever hold.
    ExceedsMaxQuota,
    /// Preemptions were issued; waiting for the victims to stop.
    WaitingForPreemptedWorkloads,
    /// The ClusterQueue or LocalQueue is stopped or inactive.
    Suspended,
    /// The queue setup does not admit it (missing LocalQueue or
    /// ClusterQueue).
    Misconfigured,
    /// The ClusterQueue's namespace selector does not select the
    /// Workload's namespace (found by Kueue's scheduler, not its workload
    /// controller: so `Pending`, not `Inadmissible`, with the gate off).
    NamespaceMismatch,
    /// waitForPodsReady's `blockAdmission` holds it back while an
    /// admitted workload's pods are not ready.
    WaitingForPodsReady,
}

impl PendingReason {
    /// The granular reason (Kueue's `UnadmittedWorkloadsObservability`).
    pub fn as_str(self) -> &'static str {
        match self {
            PendingReason::WaitingForQuota => "WaitingForQuota",
            PendingReason::NoMatchingFlavor => "NoMatchingFlavor",
            PendingReason::ExceedsMaxQuota => "ExceedsMaxQuota",
            PendingReason::WaitingForPreemptedWorkloads => "WaitingForPreemptedWorkloads",
            PendingReason::Suspended => "Suspended",
            PendingReason::Misconfigured | PendingReason::NamespaceMismatch => "Misconfigured",
            PendingReason::WaitingForPodsReady => "WaitingForPodsReady",
        }
    }

    /// The reason Kueue writes while that feature gate is off (its default
    /// up to v0.19): `Pending` from the scheduler, `Inadmissible` from the
    /// queue setup, `Waiting` from blockAdmission.
    pub fn legacy_str(self) -> &'static str {
        match self {
            PendingReason::Suspended | PendingReason::Misconfigured => "Inadmissible",
            PendingReason::WaitingForPodsReady => "Waiting",
            _ => "Pending",
        }
    }

    /// Kueue's `reasonSeverity`, for picking one reason among flavors.
    pub(crate) fn severity(self) -> u8 {
        match self {
            PendingReason::NoMatchingFlavor => 4,
            PendingReason::ExceedsMaxQuota => 3,
            PendingReason::WaitingForQuota => 2,
            _ => 0,
        }
    }
}

/// `Evicted=True` reasons the engine issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvictionReason {
    Preempted,
    Deactivated,
    ClusterQueueStopped,
    LocalQueueStopped,
    /// No replacement for a failed node's pods (Kueue's
    /// `TASFailedNodeReplacementFailFast`).
    NodeFailures,
}

impl EvictionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EvictionReason::Preempted => "Preempted",
            EvictionReason::Deactivated => "Deactivated",
            EvictionReason::ClusterQueueStopped => "ClusterQueueStopped",
            EvictionReason::LocalQueueStopped => "LocalQueueStopped",
            EvictionReason::NodeFailures => "NodeFailures",
        }
    }
}

/// `Preempted=True` reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PreemptedReason {
    InClusterQueue,
    InCohortReclamation,
    InCohortFairSharing,
    /// Reclaimed by a workload that still borrows (`borrowWithinCohort`).
    InCohortReclaimWhileBorrowing,
}

impl PreemptedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptedReason::InClusterQueue => "InClusterQueue",
            PreemptedReason::InCohortReclamation => "InCohortReclamation",
            PreemptedReason::InCohortFairSharing => "InCohortFairSharing",
            PreemptedReason::InCohortReclaimWhileBorrowing => "InCohortReclaimWhileBorrowing",
        }
    }

    /// The phrase Kueue puts in the preemption message.
    fn human(self) -> &'static str {
        match self {
            PreemptedReason::InClusterQueue => "prioritization in the ClusterQueue",
            PreemptedReason::InCohortReclamation => "reclamation within the cohort",
            PreemptedReason::InCohortFairSharing => "Fair Sharing within the cohort",
            PreemptedReason::InCohortReclaimWhileBorrowing => {
                "reclamation within the cohort while borrowing"
            }
        }
    }
}

/// What the shell must write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Set `status.admission` (and `QuotaReserved`/`Admitted`), then start
    /// the job; report the write with `confirm_admission`/`reject_admission`.
    Admit {
        workload: String,
        admission: Admission,
    },
    /// Set `Evicted=True` (and `Preempted=True` when `preempted_reason` is
    /// set) and stop the job; report with `confirm_eviction`.
    Evict {
        workload: String,
        reason: EvictionReason,
        message: String,
        preempted_reason: Option<PreemptedReason>,
        /// The workload the room is made for (preemptions only).
        preemptor: Option<String>,
    },
    /// Replace the admission of a Workload that keeps its quota by this
    /// one (a failed node's pods placed again) and clear
    /// `status.unhealthyNodes`; report with `confirm_replacement`.
    Replace {
        workload: String,
        admission: Admission,
    },
    /// Set `QuotaReserved=False` with this reason and message. Only issued
    /// when they change.
    Pending {
        workload: String,
        reason: PendingReason,
        message: String,
    },
}

/// The result of one [`Engine::schedule`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cycle {
    pub decisions: Vec<Decision>,
    /// Status of every ClusterQueue whose status changed since last reported.
    pub statuses: Vec<ClusterQueueStatus>,
    /// Something moved (an admission, an eviction, a head set aside): run
    /// another cycle now. Otherwise wait for an event, or back off (Kueue
    /// retries after 1–10 ms) while StrictFIFO heads are blocked.
    pub progress: bool,
}

/// See [`Engine::pending_counts`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingCounts {
    pub cluster_queues: BTreeMap<String, (usize, usize)>,
    pub local_queues: BTreeMap<(String, String), (usize, usize)>,
}

/// Everything the engine is rebuilt from after a restart.
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    pub flavors: Vec<ResourceFlavor>,
    /// Topology names and levels.
    pub topologies: Vec<(String, Vec<String>)>,
    pub cluster_queues: Vec<ClusterQueue>,
    pub cohorts: Vec<Cohort>,
    pub local_queues: Vec<LocalQueue>,
    /// Namespace name and labels.
    pub namespaces: Vec<(String, BTreeMap<String, String>)>,
    pub workloads: Vec<Workload>,
}

#[derive(Debug, Clone)]
struct Holding {
    cq: Arc<str>,
    usage: Usage,
    admission: Admission,
    reserved_at: i64,
    /// The shell wrote the admission (or it came from the API).
    confirmed: bool,
    /// Decided with no admission check to wait for: Kueue's scheduler sets
    /// `Admitted` on the copy it assumes into its cache, so its queue
    /// statuses count such a workload admitted before the write lands.
    admitted_at_once: bool,
    evicting: bool,
    /// What its topology assignments take on their leaves, by flavor
    /// (empty outside TAS): the release takes back exactly this.
    topology: topology::HeldTopology,
    /// The admission a node-failure replacement replaced, until the
    /// replacement is seen written: echoes still carrying it are stale.
    replaced: Option<Admission>,
}

impl Holding {
    /// Counted in `admittedWorkloads` and `flavorsUsage`, as Kueue's cache
    /// counts it (`workload.IsAdmitted` on the cached copy).
    fn admitted(&self) -> bool {
        self.confirmed || self.admitted_at_once
    }
}

#[derive(Debug, Clone)]
enum State {
    /// In no queue: inactive, or its queues are missing or stopped.
    Parked,
    Queued {
        cq: Arc<str>,
    },
    /// Boxed: few workloads hold quota at a time, many wait.
    Holding(Box<Holding>),
}

#[derive(Debug, Clone)]
struct Record {
    wl: Workload,
    state: State,
    /// The pending status to report, and the one last reported (sharing
    /// the message).
    pending: Option<(PendingReason, Arc<str>)>,
    reported: Option<(PendingReason, Arc<str>)>,
}

/// Everything a ClusterQueue's status ([`Engine::cluster_queue_status`])
/// is built from, read without building it: the configuration's
/// generation, the queue's counts, and per flavor/resource of its groups
/// the quota it holds and the admitted part of it (the weighted share is
/// a function of these and the configuration).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct StatusInputs {
    config: u64,
    pending: usize,
    reserving: usize,
    admitted: usize,
    usage: Vec<i64>,
}

/// The queueing engine. Pure: time comes in as a parameter of
/// [`Engine::schedule`], decisions go out as values.
#[derive(Debug, Default)]
pub struct Engine {
    flavors: BTreeMap<String, ResourceFlavor>,
    /// Each Topology's levels (node-label keys, highest first), by name.
    topologies: BTreeMap<String, Vec<String>>,
    /// The nodes TAS places pods on, and non-TAS pods' usage on them.
    nodes: super::nodes::Nodes,
    /// TAS usage taken within the current cycle by workloads that are not
    /// admitted: preemptors waiting for their victims, and those that keep
    /// room without victims (Kueue's `cq.AddUsage` of their TAS usage).
    cycle_tas: super::topology::DomainUsage,
    /// What admitted workloads hold on each TAS flavor's leaves, kept on
    /// hold and release: a placement reads it instead of walking holders.
    tas_held: BTreeMap<String, super::topology::DomainUsage>,
    cluster_queues: BTreeMap<String, ClusterQueue>,
    cohorts: BTreeMap<String, Cohort>,
    /// By namespace, then name.
    local_queues: BTreeMap<String, BTreeMap<String, LocalQueue>>,
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// By `namespace/name`; the key is shared with the queues and sets below.
    /// Hashed: a cycle looks records up many times, and keys share long
    /// prefixes. Kept in the order they came, so a walk over every record
    /// stays sequential in memory. Each LocalQueue's counts are kept with
    /// them (see [`records`]): the status tick reads those.
    workloads: records::Records,
    /// Keys of the workloads holding quota, by ClusterQueue name (also for
    /// queues that were deleted under them).
    holders: HashMap<String, BTreeSet<Arc<str>>, super::Hasher>,
    /// Pending workloads of every existing ClusterQueue.
    queues: BTreeMap<String, PendingQueue>,
    /// The ClusterQueues in a Cohort that may have set-aside workloads, by
    /// the root of their tree: a release requeues its tree's set-aside
    /// workloads without walking the tree (see [`Engine::requeue_tree_of`]).
    set_aside_by_root: BTreeMap<String, BTreeSet<String>>,
    /// Tests only: requeue by walking the tree and rebuild it on every
    /// change, as before the index and in-place adds (the reference the
    /// equivalence test compares with).
    #[cfg(test)]
    pub(crate) by_walk: bool,
    quota: QuotaTree,
    /// Workloads whose pending status changed since the last cycle.
    dirty: BTreeSet<Arc<str>>,
    /// Holding workloads that may have to be evicted (drain, deactivation).
    drain: BTreeSet<Arc<str>>,
    /// Each ClusterQueue's status as last reported, with what it was built
    /// from: a queue whose inputs are the same at the end of a cycle is not
    /// built again.
    reported: HashMap<String, (StatusInputs, ClusterQueueStatus), super::Hasher>,
    /// Bumped by every change a status reads besides a queue's workloads
    /// and usage: ClusterQueues, Cohorts, flavors, Topologies, checks,
    /// fair sharing.
    config_generation: u64,
    /// The ClusterQueues that may not admit, as of the configuration's
    /// generation in the pair (see [`Engine::is_active`]).
    inactive: Option<(u64, HashSet<String, super::Hasher>)>,
    /// The names workloads share (see [`Names`]).
    names: Names,
    /// See [`Engine::set_block_admission`].
    block_admission: bool,
    /// The AdmissionChecks that exist, and each ClusterQueue's
    /// `admissionChecksStrategy` rules (see [`super::admission_checks`]).
    admission_checks: BTreeMap<String, super::admission_checks::CheckInfo>,
    cq_checks: BTreeMap<String, Vec<(String, Vec<String>)>>,
    /// Fair sharing's settings, while it is on (see [`fair`]).
    fair: Option<super::fair_sharing::FairSharing>,
    /// See [`Engine::set_admission_fair_sharing`].
    afs: Option<super::admission_fair_sharing::AdmissionFairSharing>,
    /// The usage ledger of admission fair sharing, by (namespace, name).
    lq_usage: BTreeMap<(String, String), super::admission_fair_sharing::LocalQueueUsage>,
    /// Each preemption victim's preemptor, until the victim holds quota
    /// again or is gone (see `preemptors_before_their_victims`).
    preempted_by: BTreeMap<Arc<str>, Arc<str>>,
    /// Workload slices replaced by a slice that holds quota now, each with
    /// its replacement: they count for nothing and queue nowhere until the
    /// job reconciler finishes them (or the replacement lets go).
    superseded: BTreeMap<String, Arc<str>>,
    /// See [`Engine::defer`].
    deferring: bool,
    /// See [`Engine::set_requeue_batch`].
    requeue_batch: Option<i64>,
    /// Kueue's `SchedulingEquivalenceHashing` turned off (see
    /// [`Engine::set_equivalence_hashing`]).
    no_equivalence: bool,
    /// Released quota not yet given a due time (see [`Engine::requeue_due`]).
    requeue_asked: BTreeSet<RequeueTree>,
    /// When each tree's set-aside workloads go back to their queues.
    requeue_at: BTreeMap<RequeueTree, i64>,
    /// ClusterQueues added while deferring, not yet in the quota tree.
    added: BTreeSet<String>,
    /// Admissions decided whose writes wait to be sent (see
    /// [`Engine::set_unsent`]).
    unsent: std::collections::HashSet<Arc<str>, super::Hasher>,
}

/// What a batched requeue puts back: a Cohort tree by its root, or a
/// ClusterQueue without a Cohort (the names may be alike).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum RequeueTree {
    Tree(String),
    Alone(String),
}

/// Whether two Workloads are slices of one job: same namespace and a
/// non-empty `kueue.x-k8s.io/job-uid` in common, or (MultiKueue copies on
/// a worker, which arrive without the job UID and get the worker's job's
/// only once it adopts them) the same origin and slice chain.
fn one_job(a: &Workload, b: &Workload) -> bool {
    fn uid(w: &Workload) -> Option<&str> {
        w.job_uid.as_deref().filter(|u| !u.is_empty())
    }
    a.namespace == b.namespace
        && ((uid(a).is_some() && uid(a) == uid(b))
            || (a.copy_chain.is_some() && a.copy_chain == b.copy_chain))
}

/// One shared copy of each name that many workloads repeat: namespaces,
/// LocalQueue, ClusterQueue, pod set and resource names. Names no workload
/// uses any more are dropped as the set grows.
#[derive(Debug, Default)]
struct Names {
    set: std::collections::HashSet<Arc<str>, super::Hasher>,
    /// Size after the last sweep: the next one waits until it doubles.
    swept: usize,
}

impl Names {
    fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.set.get(name) {
            return n.clone();
        }
        if self.set.len() >= 2 * self.swept.max(64) {
            self.set.retain(|n| Arc::strong_count(n) > 1);
            self.swept = self.set.len();
        }
        let n: Arc<str> = name.into();
        self.set.insert(n.clone());
        n
    }

    /// Replaces `name` by the shared copy.
    fn share(&mut self, name: &mut Arc<str>) {
        if let Some(n) = self.set.get(&**name) {
            *name = n.clone();
        } else {
            *name = self.intern(name);
        }
    }

    /// The workload's repeated names replaced by shared copies, and its
    /// lists without spare capacity: it is kept as long as it waits.
    fn share_workload(&mut self, wl: &mut Workload) {
        self.share(&mut wl.namespace);
        self.share(&mut wl.queue_name);
        wl.pod_sets.shrink_to_fit();
        for ps in &mut wl.pod_sets {
            self.share(&mut ps.name);
            ps.requests.shrink_to_fit();
            for r in ps.requests.names_mut() {
                self.share(r);
            }
            ps.tolerations.shrink_to_fit();
        }
    }
}

impl Engine {
    pub fn new() -> Self {
        Engine::default()
    }

    /// The engine after a restart: every workload with `status.admission`
    /// holds its quota again, everything else queues.
    pub fn rebuild(objects: ClusterObjects) -> Self {
        let mut e = Engine::new();
        e.topologies.extend(objects.topologies);
        for mut f in objects.flavors {
            f.topology_levels = f
                .topology_name
                .as_ref()
                .and_then(|t| e.topologies.get(t).cloned());
            e.flavors.insert(f.name.clone(), f);
        }
        for cq in objects.cluster_queues {
            e.queues.entry(cq.name.clone()).or_default();
            e.cluster_queues.insert(cq.name.clone(), cq);
        }
        for c in objects.cohorts {
            e.cohorts.insert(c.name.clone(), c);
        }
        for lq in objects.local_queues {
            e.local_queues
                .entry(lq.namespace.clone())
                .or_default()
                .insert(lq.name.clone(), lq);
        }
        for (name, labels) in objects.namespaces {
            e.namespaces.insert(name, labels);
        }
        e.rebuild_quota();
        for wl in objects.workloads {
            e.upsert_workload(wl);
        }
        e
    }

    /// [`Engine::rebuild`] with this engine's settings, which come from the
    /// configuration, not from the API's objects.
    pub fn rebuilt(&self, objects: ClusterObjects) -> Self {
        let mut e = Engine::rebuild(objects);
        e.set_block_admission(self.block_admission);
        e.set_fair_sharing(self.fair.clone());
        e.set_admission_fair_sharing(self.afs.clone());
        e.set_requeue_batch(self.requeue_batch);
        e.set_equivalence_hashing(!self.no_equivalence);
        e
    }

    // ---- events: configuration -------------------------------------------

    pub fn upsert_flavor(&mut self, mut flavor: ResourceFlavor) {
        self.join_added();
        flavor.topology_levels = flavor
            .topology_name
            .as_ref()
            .and_then(|t| self.topologies.get(t).cloned());
        if self.flavors.get(&flavor.name) == Some(&flavor) {
            return; // an echo of a status write: nothing to redo
        }
        self.flavors.insert(flavor.name.clone(), flavor);
        self.after_flavor_change();
    }

    pub fn delete_flavor(&mut self, name: &str) {
        self.join_added();
        if self.flavors.remove(name).is_some() {
            self.after_flavor_change();
        }
    }

    /// A Topology's levels, highest first.
    pub fn upsert_topology(&mut self, name: &str, levels: Vec<String>) {
        self.join_added();
        if self.topologies.get(name) == Some(&levels) {
            return;
        }
        self.topologies.insert(name.to_string(), levels);
        self.after_topology_change(name);
    }

    pub fn delete_topology(&mut self, name: &str) {
        self.join_added();
        if self.topologies.remove(name).is_some() {
            self.after_topology_change(name);
        }
    }

    fn after_topology_change(&mut self, name: &str) {
        let levels = self.topologies.get(name).cloned();
        let mut changed = false;
        for f in self.flavors.values_mut() {
            if f.topology_name.as_deref() == Some(name) {
                f.topology_levels.clone_from(&levels);
                changed = true;
            }
        }
        if changed {
            self.after_flavor_change();
        }
    }

    /// The ResourceFlavors whose `spec.topologyName` is `topology`.
    pub fn flavors_naming_topology(&self, topology: &str) -> Vec<&str> {
        self.flavors
            .values()
            .filter(|f| f.topology_name.as_deref() == Some(topology))
            .map(|f| f.name.as_str())
            .collect()
    }

    /// Kueue's `TopologyNotFound` parts: the queue's TAS flavors whose
    /// Topology does not exist. A MultiKueue queue places on its workers,
    /// so it does not need them here.
    fn missing_topologies(&self, cq: &ClusterQueue) -> Vec<String> {
        if self.has_multikueue_check(cq) {
            return Vec::new();
        }
        cq.flavor_names()
            .into_iter()
            .filter_map(|f| self.flavors.get(f))
            .filter(|f| f.topology_levels.is_none())
            .filter_map(|f| {
                let t = f.topology_name.as_ref()?;
                Some(format!(
                    "there is no Topology {t:?} for TAS flavor {:?}",
                    f.name
                ))
            })
            .collect()
    }

    fn after_flavor_change(&mut self) {
        self.config_generation += 1;
        let names: Vec<String> = self.cluster_queues.keys().cloned().collect();
        for cq in &names {
            self.refresh_queued_status(cq);
        }
        self.requeue_inadmissible(names.iter().map(String::as_str));
    }

    /// From here until [`Engine::settle`], ClusterQueues new to the engine
    /// are stored at once and joined to the quota tree together: joining
    /// one rebuilds the tree and places every workload again, so a burst of
    /// N added one by one cost N rebuilds (quadratic). Any other change
    /// joins them first, so it sees them; nothing is to be read before
    /// `settle`.
    pub fn defer(&mut self) {
        self.deferring = true;
    }

    /// Joins the ClusterQueues added since [`Engine::defer`] and ends it.
    pub fn settle(&mut self) {
        self.join_added();
        self.deferring = false;
    }

    /// The ClusterQueues added while deferring, joined to the tree with one
    /// rebuild; then what joining each one one by one does.
    fn join_added(&mut self) {
        if self.added.is_empty() {
            return;
        }
        let added = std::mem::take(&mut self.added);
        self.rebuild_quota();
        self.replace_all();
        for name in added {
            self.after_queue_joined(&name, None);
        }
    }

    pub fn upsert_cluster_queue(&mut self, cq: ClusterQueue) {
        if self.cluster_queues.get(&cq.name) == Some(&cq) {
            return; // status writes come back as updates; only spec changes count
        }
        let name = cq.name.clone();
        let is_new = !self.cluster_queues.contains_key(&name);
        #[cfg(test)]
        let deferring = self.deferring && !self.by_walk;
        #[cfg(not(test))]
        let deferring = self.deferring;
        if is_new && deferring {
            self.queues.entry(name.clone()).or_default();
            self.cluster_queues.insert(name.clone(), cq);
            self.added.insert(name);
            return;
        }
        self.join_added();
        let old_root = self.quota.root_of(&name).map(str::to_string);
        self.queues.entry(name.clone()).or_default();
        self.cluster_queues.insert(name.clone(), cq);
        // Every change rebuilds the tree. Joining a new queue in place
        // (`QuotaTree::insert_queue`) decided differently from a rebuild in
        // `tree_index_cases` once (a queue added under a Cohort with a parent
        // and a lending limit), so it is not used until that is understood.
        self.rebuild_quota();
        if is_new {
            self.replace_all();
        }
        self.after_queue_joined(&name, old_root);
    }

    /// After the ClusterQueue `name` joined the tree (its root was
    /// `old_root` before): its status, its holders checked against its new
    /// spec, and what was set aside in the trees it left and joined.
    fn after_queue_joined(&mut self, name: &str, old_root: Option<String>) {
        let name = name.to_string();
        self.refresh_queued_status(&name);
        let holders: Vec<Arc<str>> = self
            .holders
            .get(&name)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        self.drain.extend(holders);
        // New quota (or cohort) can fit what was set aside, here and in
        // the trees the queue left and joined.
        let mut affected: BTreeSet<String> = [name.clone()].into();
        #[cfg(test)]
        if self.by_walk {
            let walk: Vec<String> = old_root
                .iter()
                .chain(self.quota.root_of(&name).map(str::to_string).iter())
                .flat_map(|r| self.quota.tree_members(r))
                .collect();
            affected.extend(walk);
            self.requeue_inadmissible(affected.iter().map(String::as_str));
            return;
        }
        let new_root = self.quota.root_of(&name).map(str::to_string);
        for root in old_root.iter().chain(&new_root) {
            affected.extend(self.set_aside_by_root.remove(root).into_iter().flatten());
        }
        self.requeue_inadmissible(affected.iter().map(String::as_str));
    }

    pub fn delete_cluster_queue(&mut self, name: &str) {
        self.join_added();
        let Some(old) = self.cluster_queues.remove(name) else {
            return;
        };
        self.queues.remove(name);
        self.reported.remove(name);
        self.rebuild_quota();
        self.replace_all();
        if let Some(cohort) = &old.cohort {
            let peers = self.quota.tree_members(cohort);
            self.requeue_inadmissible(peers.iter().map(String::as_str));
        }
    }

    /// A Cohort created or changed: the trees it leaves and joins get new
    /// quota, and a cycle its parent closes (or opens) stops (or resumes)
    /// admission in every ClusterQueue under it.
    pub fn upsert_cohort(&mut self, cohort: Cohort) {
        self.join_added();
        if self.cohorts.get(&cohort.name) == Some(&cohort) {
            return;
        }
        let name = cohort.name.clone();
        let before = self.quota.tree_members(&name);
        self.cohorts.insert(name.clone(), cohort);
        self.after_cohort_change(&name, before);
    }

    pub fn delete_cohort(&mut self, name: &str) {
        self.join_added();
        let before = self.quota.tree_members(name);
        if self.cohorts.remove(name).is_some() {
            self.after_cohort_change(name, before);
        }
    }

    fn after_cohort_change(&mut self, name: &str, before: Vec<String>) {
        self.rebuild_quota();
        let mut affected: BTreeSet<String> = before.into_iter().collect();
        affected.extend(self.quota.tree_members(name));
        for cq in &affected {
            self.refresh_queued_status(cq);
        }
        self.requeue_inadmissible(affected.iter().map(String::as_str));
    }

    pub fn cohort(&self, name: &str) -> Option<&Cohort> {
        self.cohorts.get(name)
    }

    /// The ClusterQueue's Cohorts, parent first, root last (none while
    /// they form a cycle).
    pub fn cohort_ancestors(&self, cq: &str) -> Vec<String> {
        self.quota.ancestor_names(cq)
    }

    /// Every Cohort (objects and implicit ones) outside a cycle, with its
    /// subtree's quota and reservations.
    pub fn cohort_subtrees(&self) -> Vec<super::quota::CohortSubtree> {
        self.quota.cohort_subtrees()
    }

    pub fn upsert_local_queue(&mut self, lq: LocalQueue) {
        self.seed_local_queue_usage(&lq);
        // The status this engine wrote coming back changes nothing else.
        let same = self
            .local_queue(&lq.namespace, &lq.name)
            .is_some_and(|old| {
                old.cluster_queue == lq.cluster_queue
                    && old.stop_policy == lq.stop_policy
                    && old.fair_sharing.weight == lq.fair_sharing.weight
            });
        if same {
            return;
        }
        let (ns, name) = (lq.namespace.clone(), lq.name.clone());
        self.local_queues
            .entry(ns.clone())
            .or_default()
            .insert(name.clone(), lq);
        self.after_local_queue_change(&ns, &name);
    }

    pub fn delete_local_queue(&mut self, namespace: &str, name: &str) {
        let Some(in_ns) = self.local_queues.get_mut(namespace) else {
            return;
        };
        if in_ns.remove(name).is_some() {
            if in_ns.is_empty() {
                self.local_queues.remove(namespace);
            }
            self.after_local_queue_change(namespace, name);
        }
    }

    fn after_local_queue_change(&mut self, ns: &str, name: &str) {
        let members: Vec<Arc<str>> = self
            .workloads
            .iter()
            .filter(|(_, r)| &*r.wl.namespace == ns && &*r.wl.queue_name == name)
            .map(|(k, _)| k.clone())
            .collect();
        // A LocalQueue created with its ClusterQueue has no workloads yet:
        // it leaves the queues added meanwhile to join together.
        if !members.is_empty() {
            self.join_added();
        }
        for key in members {
            self.place(&key);
            self.drain.insert(key);
        }
    }

    pub fn upsert_namespace(&mut self, name: &str, labels: BTreeMap<String, String>) {
        self.join_added();
        if self.namespaces.get(name) == Some(&labels) {
            return;
        }
        self.namespaces.insert(name.to_string(), labels);
        let all: Vec<String> = self.queues.keys().cloned().collect();
        self.requeue_inadmissible(all.iter().map(String::as_str));
    }

    pub fn delete_namespace(&mut self, name: &str) {
        self.join_added();
        self.namespaces.remove(name);
    }

    // ---- events: workloads -----------------------------------------------

    /// A workload was created or changed (including its `status.admission`
    /// as written by anyone).
    pub fn upsert_workload(&mut self, mut wl: Workload) {
        self.join_added();
        let key = wl.key();
        if wl.finished {
            self.finish_workload(&key);
            return;
        }
        if self.workloads.get(&*key).is_some_and(|r| r.wl == wl) {
            // Unchanged (e.g. our own Pending write coming back): keep its
            // place, stickiness and set-aside state.
            return;
        }
        self.names.share_workload(&mut wl);
        let Some(key) = self.workloads.get_key_value(&*key).map(|(k, _)| k.clone()) else {
            let key: Arc<str> = key.into();
            let admission = wl.admission.clone();
            let created = wl.created;
            self.workloads.insert(
                key.clone(),
                Box::new(Record {
                    wl,
                    state: State::Parked,
                    pending: None,
                    reported: None,
                }),
            );
            match admission {
                Some(a) => self.hold(&key, a, created, true),
                None => self.place(&key),
            }
            return;
        };
        let Some(rec) = self.workloads.get(&key) else {
            return;
        };
        match &rec.state {
            State::Holding(h) => {
                let ours = h.admission.clone();
                let confirmed = h.confirmed;
                let replaced = h.replaced.clone();
                let incoming = wl.admission.clone();
                if let Some(mut rec) = self.workloads.get_mut(&key) {
                    rec.wl = wl;
                }
                match incoming {
                    // The admission was cleared after its eviction.
                    None if confirmed => self.requeue_after_release(&key),
                    // Our own write has not come back through the watch yet.
                    None => {}
                    Some(a) if a == ours => {
                        if let Some(mut rec) = self.workloads.get_mut(&key) {
                            if let State::Holding(h) = &mut rec.state {
                                h.confirmed = true;
                                h.replaced = None;
                            }
                        }
                        self.refresh_held_usage(&key);
                    }
                    // Written before our replacement landed: ours stands.
                    Some(a) if replaced.as_ref() == Some(&a) => {}
                    // Someone else's admission is the truth.
                    Some(a) => {
                        let at = self.workloads[&key].wl.created;
                        self.release(&key);
                        self.hold(&key, a, at, true);
                    }
                }
                self.drain.insert(key);
            }
            State::Queued { .. } | State::Parked => {
                self.unqueue(&key);
                if let Some(mut rec) = self.workloads.get_mut(&key) {
                    rec.wl = wl;
                }
                match self.workloads[&key].wl.admission.clone() {
                    Some(a) => {
                        let at = self.workloads[&key].wl.created;
                        self.hold(&key, a, at, true);
                    }
                    None => self.place(&key),
                }
            }
        }
    }

    pub fn delete_workload(&mut self, key: &str) {
        self.join_added();
        self.finish_workload(key);
    }

    /// The workload finished (or is gone): its quota is released and it is
    /// forgotten.
    pub fn finish_workload(&mut self, key: &str) {
        self.join_added();
        self.superseded.remove(key);
        if !self.workloads.contains_key(key) {
            return;
        }
        self.preempted_by.remove(key);
        self.unqueue(key);
        self.release(key);
        self.workloads.swap_remove(key);
        self.dirty.remove(key);
        self.drain.remove(key);
    }

    /// The shell wrote an `Admit` decision.
    pub fn confirm_admission(&mut self, key: &str) {
        self.join_added();
        self.workloads.with_holding(key, |h| h.confirmed = true);
    }

    /// The shell could not write a `Replace` decision: the admission it
    /// replaced holds again (a later update of the Workload tries anew).
    pub fn refuse_replacement(&mut self, key: &str) {
        self.join_added();
        let old = self
            .workloads
            .with_holding(key, |h| h.replaced.take())
            .flatten();
        if let Some(old) = old {
            self.swap_held_admission(key, old);
        }
    }

    /// The shell could not write an `Admit` decision: forget the assumption
    /// and queue the workload again.
    pub fn reject_admission(&mut self, key: &str) {
        self.join_added();
        let assumed = matches!(
            self.workloads.get(key).map(|r| &r.state),
            Some(State::Holding(h)) if !h.confirmed
        );
        if assumed {
            self.requeue_after_release(key);
        }
    }

    /// The shell refused an `Admit` decision for a reason outside quota
    /// (device placement found no node): forget the assumption and set the
    /// workload aside in its ClusterQueue until quota frees up in the queue
    /// or its cohort, or until [`Engine::requeue_set_aside`].
    pub fn set_aside_admission(&mut self, key: &str, reason: PendingReason, message: String) {
        self.join_added();
        let cq = match self.workloads.get(key).map(|r| &r.state) {
            Some(State::Holding(h)) if !h.confirmed => h.cq.clone(),
            _ => return,
        };
        self.release(key);
        let Some((k, rec)) = self.workloads.get_key_value(key) else {
            return;
        };
        let order = QueueOrder::of(k, &rec.wl);
        if let Some(q) = self.queues.get_mut(&*cq) {
            q.set_aside(order);
        }
        self.note_set_aside(&cq);
        if let Some(mut rec) = self.workloads.get_mut(key) {
            rec.state = State::Queued { cq };
        }
        self.set_pending(key, Some((reason, message)));
    }

    /// Every set-aside workload tries again (something outside quota that
    /// kept them out changed: devices were freed, pools appeared).
    pub fn requeue_set_aside(&mut self) {
        self.join_added();
        let all: Vec<String> = self.queues.keys().cloned().collect();
        self.requeue_inadmissible(all.iter().map(String::as_str));
    }

    /// The evicted workload's job is stopped and its admission cleared: the
    /// quota is free and the workload queues again (if still active).
    pub fn confirm_eviction(&mut self, key: &str) {
        self.join_added();
        let evicting = matches!(
            self.workloads.get(key).map(|r| &r.state),
            Some(State::Holding(h)) if h.evicting
        );
        if evicting {
            if let Some(mut rec) = self.workloads.get_mut(key) {
                rec.wl.admission = None;
            }
            self.requeue_after_release(key);
        }
    }

    // ---- queries ---------------------------------------------------------

    /// A ClusterQueue's status. What its admitted workloads hold is read
    /// from the counts the records keep: each cycle asks this of every
    /// ClusterQueue, so it costs the queue's flavors, not its workloads.
    pub fn cluster_queue_status(&self, name: &str) -> Option<ClusterQueueStatus> {
        let admitted = self.workloads.admitted(name);
        self.cluster_queue_status_of(name, admitted.map_or(0, |a| a.workloads), |fr| {
            admitted.map_or(0, |a| a.of(fr))
        })
    }

    /// The queue's [`StatusInputs`] into `out`.
    fn status_inputs(&self, name: &str, out: &mut StatusInputs) {
        let admitted = self.workloads.admitted(name);
        out.config = self.config_generation;
        out.pending = self.queues.get(name).map_or(0, PendingQueue::len);
        out.reserving = self.holders.get(name).map_or(0, BTreeSet::len);
        out.admitted = admitted.map_or(0, |a| a.workloads);
        out.usage.clear();
        let Some(cq) = self.cluster_queues.get(name) else {
            return;
        };
        for g in &cq.resource_groups {
            for f in &g.flavors {
                for r in &f.resources {
                    let fr = FlavorResource::new(&f.name, &r.name);
                    out.usage.push(self.quota.usage(name, &fr));
                    out.usage.push(admitted.map_or(0, |a| a.of(&fr)));
                }
            }
        }
    }

    /// [`Self::cluster_queue_status`] by a walk over the queue's holders,
    /// as before the records kept the counts: the reference the tests
    /// compare with.
    #[doc(hidden)]
    pub fn cluster_queue_status_by_walk(&self, name: &str) -> Option<ClusterQueueStatus> {
        let mut admitted = 0;
        let mut admitted_usage = Usage::new();
        for k in self.holders.get(name).into_iter().flatten() {
            if let Some(State::Holding(h)) = self.workloads.get(&**k).map(|r| &r.state) {
                if h.admitted() {
                    admitted += 1;
                    for (fr, q) in &h.usage {
                        *admitted_usage.entry(fr.clone()).or_default() += *q;
                    }
                }
            }
        }
        self.cluster_queue_status_of(name, admitted, |fr| {
            admitted_usage.get(fr).copied().unwrap_or(0)
        })
    }

    fn cluster_queue_status_of(
        &self,
        name: &str,
        admitted: usize,
        admitted_usage: impl Fn(&FlavorResource) -> i64,
    ) -> Option<ClusterQueueStatus> {
        let cq = self.cluster_queues.get(name)?;
        let holders = self.holders.get(name);
        let mut flavors_usage = Vec::new();
        let mut flavors_admitted = Vec::new();
        for g in &cq.resource_groups {
            for f in &g.flavors {
                let mut resources = Vec::with_capacity(f.resources.len());
                let mut admitted_resources = Vec::with_capacity(f.resources.len());
                for r in &f.resources {
                    let fr = FlavorResource::new(&f.name, &r.name);
                    for (total, out) in [
                        (self.quota.usage(name, &fr), &mut resources),
                        (admitted_usage(&fr), &mut admitted_resources),
                    ] {
                        out.push(ResourceUsage {
                            name: r.name.clone(),
                            total,
                            borrowed: (total - r.nominal).max(0),
                        });
                    }
                }
                flavors_usage.push(FlavorUsage {
                    name: f.name.clone(),
                    resources,
                });
                flavors_admitted.push(FlavorUsage {
                    name: f.name.clone(),
                    resources: admitted_resources,
                });
            }
        }
        Some(ClusterQueueStatus {
            name: name.to_string(),
            pending_workloads: self.queues.get(name).map_or(0, PendingQueue::len),
            reserving_workloads: holders.map_or(0, BTreeSet::len),
            admitted_workloads: admitted,
            flavors_usage,
            flavors_admitted,
            active: self.active_condition(cq),
            weighted_share: self.cluster_queue_weighted_share(name),
        })
    }

    /// Status of every LocalQueue: counts of pending (queued or parked
    /// behind the queue), reserving and admitted workloads, and the quota
    /// its workloads hold per flavor, read from the counts the records keep
    /// (no walk over the workloads).
    pub fn local_queue_statuses(&self) -> Vec<LocalQueueStatus> {
        let held = |h: &records::Held| -> BTreeMap<String, BTreeMap<String, i64>> {
            h.iter()
                .map(|(f, rs)| {
                    (
                        f.clone(),
                        rs.iter().map(|(r, q)| (r.clone(), q.0)).collect(),
                    )
                })
                .collect()
        };
        self.local_queues()
            .map(|lq| {
                let mut st = LocalQueueStatus {
                    namespace: lq.namespace.clone(),
                    name: lq.name.clone(),
                    ..LocalQueueStatus::default()
                };
                if let Some(t) = self.workloads.tally(&lq.namespace, &lq.name) {
                    st.pending_workloads = t.queued + t.parked_active;
                    st.reserving_workloads = t.reserving;
                    st.admitted_workloads = t.admitted;
                    st.usage = held(&t.usage);
                    st.admitted_usage = held(&t.admitted_usage);
                }
                st.admission_fair_sharing =
                    self.admission_fair_sharing_status(&st.namespace, &st.name);
                st
            })
            .collect()
    }

    /// Pending workloads as Kueue's `pending_workloads` metrics split them:
    /// `(active, inadmissible)` per ClusterQueue and per LocalQueue
    /// (namespace, name). Active: waiting in the queue; inadmissible: set
    /// aside after a failed attempt, or (per LocalQueue) parked behind a
    /// stopped or missing queue. Read from the counts the queues and the
    /// records keep: the cost is the queues', not the workloads'.
    pub fn pending_counts(&self) -> PendingCounts {
        let mut lqs: HashMap<(&str, &str), (usize, usize)> = HashMap::new();
        let mut out = PendingCounts::default();
        for (cq, q) in &self.queues {
            let set_aside = q.set_aside_len();
            for ((ns, name), w) in q.waiting() {
                let n = lqs.entry((ns, name)).or_default();
                n.0 += w.members - w.set_aside;
                n.1 += w.set_aside;
            }
            out.cluster_queues
                .insert(cq.clone(), (q.len() - set_aside, set_aside));
        }
        for (ns, name, t) in self.workloads.tallies() {
            if t.parked_active > 0 {
                lqs.entry((ns, name)).or_default().1 += t.parked_active;
            }
        }
        out.local_queues = lqs
            .into_iter()
            .map(|((ns, name), n)| ((ns.to_string(), name.to_string()), n))
            .collect();
        out
    }

    /// [`Self::pending_counts`] by a walk over every waiting workload, as
    /// before the queues kept counts: the reference the tests compare
    /// with, and the bench's before.
    #[doc(hidden)]
    pub fn pending_counts_by_walk(&self) -> PendingCounts {
        // Counted under the Workloads' own names, owned once per
        // LocalQueue at the end: no allocation per Workload.
        let mut lqs: HashMap<(&str, &str), (usize, usize)> = HashMap::new();
        let lq_of = |k: &str| {
            self.workloads
                .get(k)
                .map(|rec| (&*rec.wl.namespace, &*rec.wl.queue_name))
        };
        let mut out = PendingCounts::default();
        for (cq, q) in &self.queues {
            let mut set_aside = 0;
            for k in q.set_aside_keys() {
                set_aside += 1;
                if let Some(lq) = lq_of(k) {
                    lqs.entry(lq).or_default().1 += 1;
                }
            }
            for k in q.keys() {
                if let Some(lq) = lq_of(k) {
                    lqs.entry(lq).or_default().0 += 1;
                }
            }
            out.cluster_queues
                .insert(cq.clone(), (q.len() - set_aside, set_aside));
        }
        // `keys` counted the set-aside ones as active too.
        for (active, set_aside) in lqs.values_mut() {
            *active -= *set_aside;
        }
        for rec in self.workloads.values() {
            if matches!(rec.state, State::Parked) && rec.wl.active {
                lqs.entry((&rec.wl.namespace, &rec.wl.queue_name))
                    .or_default()
                    .1 += 1;
            }
        }
        out.local_queues = lqs
            .into_iter()
            .map(|((ns, name), n)| ((ns.to_string(), name.to_string()), n))
            .collect();
        out
    }

    /// [`Self::local_queue_statuses`] by a walk over every workload, as
    /// before the records kept counts: the reference the tests compare
    /// with, and the bench's before.
    #[doc(hidden)]
    pub fn local_queue_statuses_by_walk(&self) -> Vec<LocalQueueStatus> {
        // In namespace, then name order; found by hash for each Workload.
        let mut out: Vec<LocalQueueStatus> = self
            .local_queues()
            .map(|lq| LocalQueueStatus {
                namespace: lq.namespace.clone(),
                name: lq.name.clone(),
                ..LocalQueueStatus::default()
            })
            .collect();
        let at: HashMap<(&str, &str), usize> = self
            .local_queues()
            .enumerate()
            .map(|(i, lq)| ((lq.namespace.as_str(), lq.name.as_str()), i))
            .collect();
        for rec in self.workloads.values() {
            let Some(&i) = at.get(&(&*rec.wl.namespace, &*rec.wl.queue_name)) else {
                continue;
            };
            let st = &mut out[i];
            match &rec.state {
                State::Queued { .. } => st.pending_workloads += 1,
                State::Parked => {
                    if rec.wl.active {
                        st.pending_workloads += 1;
                    }
                }
                State::Holding(h) => {
                    st.reserving_workloads += 1;
                    if h.admitted() {
                        st.admitted_workloads += 1;
                    }
                    for (fr, q) in &h.usage {
                        *st.usage
                            .entry(fr.flavor.clone())
                            .or_default()
                            .entry(fr.resource.clone())
                            .or_default() += *q;
                        if h.admitted() {
                            *st.admitted_usage
                                .entry(fr.flavor.clone())
                                .or_default()
                                .entry(fr.resource.clone())
                                .or_default() += *q;
                        }
                    }
                }
            }
        }
        for st in &mut out {
            st.admission_fair_sharing = self.admission_fair_sharing_status(&st.namespace, &st.name);
        }
        out
    }

    /// In namespace, then name order.
    pub fn local_queues(&self) -> impl Iterator<Item = &LocalQueue> {
        self.local_queues.values().flat_map(BTreeMap::values)
    }

    pub fn local_queue(&self, namespace: &str, name: &str) -> Option<&LocalQueue> {
        self.local_queues.get(namespace)?.get(name)
    }

    /// The workload as last upserted, while the engine knows it.
    pub fn workload(&self, key: &str) -> Option<&Workload> {
        Some(&self.workloads.get(key)?.wl)
    }

    pub fn cluster_queue(&self, name: &str) -> Option<&ClusterQueue> {
        self.cluster_queues.get(name)
    }

    /// Names of every ClusterQueue the engine knows (the visibility API's
    /// snapshot).
    pub fn cluster_queue_names(&self) -> impl Iterator<Item = &str> {
        self.cluster_queues.keys().map(String::as_str)
    }

    /// Keys of the workloads waiting in the ClusterQueue.
    pub fn pending_workloads(&self, cq: &str) -> Vec<String> {
        self.queues
            .get(cq)
            .map(|q| q.keys().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// The admission a workload holds quota with, if any.
    /// Kueue's `ClusterQueueEmpty`: no workload holds quota in the queue
    /// (true for a queue not known), so its `resource-in-use` finalizer may
    /// go.
    pub fn cluster_queue_empty(&self, name: &str) -> bool {
        self.holders.get(name).is_none_or(BTreeSet::is_empty)
    }

    /// Kueue's `ClusterQueuesUsingFlavor`: the ClusterQueues whose resource
    /// groups name the flavor (a deleted flavor keeps its finalizer while
    /// one does).
    pub fn cluster_queues_using_flavor(&self, flavor: &str) -> Vec<&str> {
        self.cluster_queues
            .values()
            .filter(|cq| cq.flavor_names().contains(&flavor))
            .map(|cq| cq.name.as_str())
            .collect()
    }

    pub fn admission(&self, key: &str) -> Option<&Admission> {
        match &self.workloads.get(key)?.state {
            State::Holding(h) => Some(&h.admission),
            _ => None,
        }
    }

    fn missing_flavors(&self, cq: &ClusterQueue) -> Vec<String> {
        cq.flavor_names()
            .into_iter()
            .filter(|f| !self.flavors.contains_key(*f))
            .map(str::to_string)
            .collect()
    }

    /// The ClusterQueues that may not admit: [`Self::is_active`] reads
    /// only the configuration, so this is worked out once per change of it.
    fn refresh_inactive(&mut self) {
        if matches!(&self.inactive, Some((g, _)) if *g == self.config_generation) {
            return;
        }
        let inactive = self
            .cluster_queues
            .values()
            .filter(|cq| !self.is_active(cq))
            .map(|cq| cq.name.clone())
            .collect();
        self.inactive = Some((self.config_generation, inactive));
    }

    /// May the queue admit? Kueue leaves a queue whose Cohort's parents
    /// loop out of the scheduling snapshot (`HasCycle`) while its Active
    /// condition stays as it is.
    fn is_active(&self, cq: &ClusterQueue) -> bool {
        !cq.terminating
            && !cq.stop_policy.is_stopped()
            && self.missing_flavors(cq).is_empty()
            && !self.quota.in_cycle(&cq.name)
            && self.unusable_checks(cq).is_empty()
            && self.missing_topologies(cq).is_empty()
    }

    fn active_condition(&self, cq: &ClusterQueue) -> ActiveCondition {
        if cq.terminating {
            // Kueue's `inactiveReason` for a terminating ClusterQueue.
            return ActiveCondition {
                status: false,
                reason: "Terminating",
                message: "Can't admit new workloads; clusterQueue is terminating".into(),
            };
        }
        let mut reasons = Vec::new();
        let mut messages = Vec::new();
        if cq.stop_policy.is_stopped() {
            reasons.push("Stopped");
            messages.push("is stopped".to_string());
        }
        let missing = self.missing_flavors(cq);
        if !missing.is_empty() {
            reasons.push("FlavorNotFound");
            messages.push(format!(
                "references missing ResourceFlavor(s): {}",
                missing.join(",")
            ));
        }
        for (reason, message) in self.unusable_checks(cq) {
            reasons.push(reason);
            messages.push(message);
        }
        for message in self.missing_topologies(cq) {
            reasons.push("TopologyNotFound");
            messages.push(message);
        }
        match reasons.first() {
            None => ActiveCondition {
                status: true,
                reason: "Ready",
                message: "Can admit new workloads".into(),
            },
            Some(reason) => ActiveCondition {
                status: false,
                reason,
                message: format!("Can't admit new workloads: {}.", messages.join(", ")),
            },
        }
    }

    // ---- bookkeeping -----------------------------------------------------

    fn rebuild_quota(&mut self) {
        self.config_generation += 1;
        let usage: Vec<(&str, &Usage)> = self
            .workloads
            .values()
            .filter_map(|r| match &r.state {
                State::Holding(h) => Some((&*h.cq, &h.usage)),
                _ => None,
            })
            .collect();
        self.quota = QuotaTree::build_with_cohorts(
            self.cluster_queues.values(),
            self.cohorts.values(),
            usage,
        );
        self.attach_fair();
        // Roots may have changed.
        self.set_aside_by_root.clear();
        let names: Vec<String> = self.queues.keys().cloned().collect();
        for cq in names {
            self.note_set_aside(&cq);
        }
    }

    /// Indexes the queue under its tree's root if it has set-aside
    /// workloads. Called wherever workloads are set aside.
    pub(super) fn note_set_aside(&mut self, cq: &str) {
        if !self
            .queues
            .get(cq)
            .is_some_and(PendingQueue::awaits_requeue)
        {
            return;
        }
        if let Some(root) = self.quota.root_of(cq) {
            if let Some(set) = self.set_aside_by_root.get_mut(root) {
                set.insert(cq.to_string());
            } else {
                let root = root.to_string();
                self.set_aside_by_root.insert(root, [cq.to_string()].into());
            }
        }
    }

    /// Requeues the set-aside workloads of `cq` and of every ClusterQueue in
    /// its Cohort tree (Kueue's `requeueWorkloadsCohort` on the root), from
    /// the index rather than the tree: the cost is the queues that have
    /// some, not the size of the tree.
    fn requeue_tree_of(&mut self, cq: &str) {
        if self.requeue_batch.is_some() {
            let tree = match self.quota.root_of(cq) {
                Some(root) => RequeueTree::Tree(root.to_string()),
                None => RequeueTree::Alone(cq.to_string()),
            };
            self.requeue_asked.insert(tree);
            return;
        }
        self.requeue_inadmissible([cq]);
        #[cfg(test)]
        if self.by_walk {
            let peers = self
                .quota
                .root_of(cq)
                .map(|r| self.quota.tree_members(r))
                .unwrap_or_default();
            self.requeue_inadmissible(peers.iter().map(String::as_str));
            return;
        }
        let Some(root) = self.quota.root_of(cq) else {
            return;
        };
        if let Some(set) = self.set_aside_by_root.remove(root) {
            self.requeue_inadmissible(set.iter().map(String::as_str));
        }
    }

    /// Requeues released quota batches (see [`Engine::set_requeue_batch`]):
    /// those asked for since the last look are due `batch` from `now`
    /// (an earlier due time is kept, as a delaying workqueue does); those
    /// due by `now` put their set-aside workloads back. Returns whether a
    /// queue got any back: the shell runs a cycle then.
    pub fn requeue_due(&mut self, now: i64) -> bool {
        self.join_added();
        let Some(batch) = self.requeue_batch else {
            return false;
        };
        for tree in std::mem::take(&mut self.requeue_asked) {
            self.requeue_at.entry(tree).or_insert(now + batch);
        }
        let due: Vec<RequeueTree> = self
            .requeue_at
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(t, _)| t.clone())
            .collect();
        let mut moved = false;
        for tree in due {
            self.requeue_at.remove(&tree);
            let cqs: Vec<String> = match tree {
                RequeueTree::Alone(cq) => vec![cq],
                RequeueTree::Tree(root) => self
                    .set_aside_by_root
                    .remove(&root)
                    .into_iter()
                    .flatten()
                    .collect(),
            };
            moved |= self.requeue_inadmissible(cqs.iter().map(String::as_str));
        }
        moved
    }

    /// When the next batch is due (ms since the epoch), for the shell to
    /// wake then; batches asked for since the last look have no time yet.
    pub fn next_requeue_at(&self) -> Option<i64> {
        self.requeue_at.values().min().copied()
    }

    /// Set-aside workloads try again at most once per `batch` (ms) per
    /// Cohort tree after quota is released, `batch` after the first
    /// release (Kueue's inadmissible-workload requeuer, 1 s there; the
    /// queueing controller's period is its own); `None`, as
    /// in tests, at once. Changes of configuration requeue at once
    /// either way.
    pub fn set_requeue_batch(&mut self, batch: Option<i64>) {
        self.requeue_batch = batch;
    }

    /// Kueue's `SchedulingEquivalenceHashing` (on by default since 0.18):
    /// a head that fails to fit sets aside the queued workloads shaped
    /// like it, and newcomers of that shape, until quota is released.
    /// Off, as in Kueue before 0.18, only the head that failed is set
    /// aside, and each of the others is tried in its turn.
    pub fn set_equivalence_hashing(&mut self, on: bool) {
        self.no_equivalence = !on;
    }

    /// The map's own copy of `key`, to share.
    fn shared_key(&self, key: &str) -> Option<Arc<str>> {
        self.workloads.get_key_value(key).map(|(k, _)| k.clone())
    }

    fn set_pending(&mut self, key: &str, status: Option<(PendingReason, String)>) {
        let Some(key) = self.shared_key(key) else {
            return;
        };
        if let Some(pending) = self.workloads.pending_mut(&key) {
            *pending = status.map(|(reason, message)| (reason, message.into()));
            self.dirty.insert(key);
        }
    }

    /// Takes the workload out of whatever queue it waits in.
    fn unqueue(&mut self, key: &str) {
        let Some((k, rec)) = self.workloads.get_key_value(key) else {
            return;
        };
        let State::Queued { cq } = &rec.state else {
            return;
        };
        if let Some(q) = self.queues.get_mut(&**cq) {
            q.remove(k, &rec.wl);
        }
        if let Some(mut rec) = self.workloads.get_mut(key) {
            rec.state = State::Parked;
        }
    }

    /// Puts a workload that holds no quota where it belongs: the queue of
    /// its LocalQueue's ClusterQueue, or parked with the reason why not.
    fn place(&mut self, key: &str) {
        let Some(rec) = self.workloads.get(key) else {
            return;
        };
        if matches!(rec.state, State::Holding(_)) || self.superseded.contains_key(key) {
            return;
        }
        let wl = &rec.wl;
        let lq = self.local_queue(&wl.namespace, &wl.queue_name);
        // Inactive, backing off after a PodsReadyTimeout eviction, or a pod
        // group waiting for its replacement pods: out of every queue, with
        // no pending reason of its own.
        let target = if !wl.active
            || wl.readiness.requeue_at.is_some()
            || wl.readiness.awaiting_replacements
        {
            Err(None)
        } else {
            match lq {
                None => Err(Some((
                    PendingReason::Misconfigured,
                    format!("LocalQueue {} doesn't exist", wl.queue_name),
                ))),
                Some(lq) if lq.stop_policy.is_stopped() => Err(Some((
                    PendingReason::Suspended,
                    format!("LocalQueue {} is stopped", lq.name),
                ))),
                Some(lq) => match self.cluster_queues.get(&lq.cluster_queue) {
                    None => Err(Some((
                        PendingReason::Misconfigured,
                        format!("ClusterQueue {} doesn't exist", lq.cluster_queue),
                    ))),
                    Some(cq) => Ok(cq.name.as_str()),
                },
            }
        };
        let queued_in = match &rec.state {
            State::Queued { cq } => Some(&**cq),
            _ => None,
        };
        match target {
            Ok(cq) if queued_in == Some(cq) => {}
            Ok(cq) => {
                let cq = self.names.intern(cq);
                self.unqueue(key);
                let Some((k, rec)) = self.workloads.get_key_value(key) else {
                    return;
                };
                let order = QueueOrder::of(k, &rec.wl);
                if let Some(q) = self.queues.get_mut(&*cq) {
                    if q.push_new(order) {
                        self.note_set_aside(&cq);
                    }
                }
                if let Some(mut rec) = self.workloads.get_mut(key) {
                    rec.state = State::Queued { cq: cq.clone() };
                }
                let inactive = self
                    .cluster_queues
                    .get(&*cq)
                    .and_then(|c| self.inactive_status(c));
                if inactive.is_some() {
                    self.set_pending(key, inactive);
                }
            }
            Err(why) => {
                self.unqueue(key);
                if why.is_some() {
                    self.set_pending(key, why);
                }
            }
        }
    }

    fn replace_all(&mut self) {
        let keys: Vec<Arc<str>> = self.workloads.keys().cloned().collect();
        for key in keys {
            self.place(&key);
        }
    }

    /// Why a queued workload of an inactive ClusterQueue waits.
    fn inactive_status(&self, cq: &ClusterQueue) -> Option<(PendingReason, String)> {
        if cq.stop_policy.is_stopped() {
            Some((
                PendingReason::Suspended,
                format!("ClusterQueue {} is stopped", cq.name),
            ))
        } else if !self.is_active(cq) {
            Some((
                PendingReason::Suspended,
                format!("ClusterQueue {} is inactive", cq.name),
            ))
        } else {
            None
        }
    }

    fn refresh_queued_status(&mut self, cq: &str) {
        let Some(status) = self
            .cluster_queues
            .get(cq)
            .and_then(|c| self.inactive_status(c))
        else {
            return;
        };
        let keys = self.pending_workloads(cq);
        for key in keys {
            self.set_pending(&key, Some(status.clone()));
        }
    }

    /// Starts holding quota for an admission.
    fn hold(&mut self, key: &str, admission: Admission, now: i64, confirmed: bool) {
        let Some(key) = self.shared_key(key) else {
            return;
        };
        self.preempted_by.remove(&key);
        self.unqueue(&key);
        match self.superseded.get(&*key).cloned() {
            // Its replacement holds the quota of both.
            Some(new) if self.same_job(&new, &key) => return,
            Some(_) => {
                self.superseded.remove(&*key);
            }
            None => {}
        }
        if let Some(old) = self.workloads.get(&key).and_then(|r| r.wl.replaces.clone()) {
            // Checked again when the old slice arrives, if it is not here.
            if !self.workloads.contains_key(old.as_str()) || self.same_job(&key, &old) {
                self.superseded.insert(old.clone(), key.clone());
                self.release(&old);
            }
        }
        let usage = match self.workloads.get(&key) {
            Some(rec) => rec.wl.held_usage(&admission),
            None => admission.usage(),
        };
        let admitted_at_once = !confirmed && self.checks_for_admission(&admission).is_empty();
        let cq = self.names.intern(&admission.cluster_queue);
        self.quota.add(&cq, &usage);
        match self.holders.get_mut(&*cq) {
            Some(keys) => {
                keys.insert(key.clone());
            }
            None => {
                self.holders
                    .insert(cq.to_string(), BTreeSet::from([key.clone()]));
            }
        }
        if let Some(mut rec) = self.workloads.get_mut(&key) {
            let topology = topology::held_topology(&rec.wl, &admission);
            topology::add_held(&mut self.tas_held, &topology, 1);
            rec.state = State::Holding(Box::new(Holding {
                cq,
                usage,
                admission,
                reserved_at: now,
                confirmed,
                admitted_at_once,
                evicting: false,
                topology,
                replaced: None,
            }));
            rec.pending = None;
            rec.reported = None;
        }
        self.dirty.remove(&key);
        self.drain.insert(key);
    }

    /// Dynamic reclaim: a holding workload whose reclaimable pods changed
    /// holds only what its remaining pods need; quota it gives back lets
    /// the set-aside workloads of its queue and cohort try again.
    fn refresh_held_usage(&mut self, key: &str) {
        let Some(mut guard) = self.workloads.get_mut(key) else {
            return;
        };
        let rec: &mut Record = &mut guard;
        let State::Holding(h) = &mut rec.state else {
            return;
        };
        let usage = rec.wl.held_usage(&h.admission);
        if usage == h.usage {
            return;
        }
        let old = std::mem::replace(&mut h.usage, usage.clone());
        let cq = h.cq.clone();
        drop(guard);
        self.quota.remove(&cq, &old);
        self.quota.add(&cq, &usage);
        self.requeue_tree_of(&cq);
    }

    /// `new` names `old` as the slice it replaces, and both are slices of
    /// one job: same namespace and `kueue.x-k8s.io/job-uid`. A Workload
    /// annotated to replace another's is not taken at its word (no quota
    /// of another job's is dropped, no other Workload finished).
    pub fn same_job(&self, new: &str, old: &str) -> bool {
        let (Some(n), Some(o)) = (self.workloads.get(new), self.workloads.get(old)) else {
            return false;
        };
        n.wl.replaces.as_deref() == Some(old) && one_job(&n.wl, &o.wl)
    }

    /// The admissions whose writes still wait to be sent, as the shell
    /// sees them before a round: nobody has seen those, so a preemptor
    /// takes them back before it evicts anything (see
    /// `preemption::unsent_room`). Any other holder counts as written.
    pub fn set_unsent(&mut self, keys: impl IntoIterator<Item = Arc<str>>) {
        self.unsent.clear();
        self.unsent.extend(keys);
    }

    /// waitForPodsReady's `blockAdmission`: while it is set, no workload is
    /// admitted as long as one holding quota is not `PodsReady=True`
    /// (Kueue's scheduler waits in `waitForPodsReadyIfNeeded`; its cache
    /// counts every reserving workload without the condition as not ready,
    /// one admitted a moment ago included).
    pub fn set_block_admission(&mut self, block: bool) {
        self.join_added();
        self.block_admission = block;
    }

    /// A holding workload is not ready yet, and `blockAdmission` is set.
    pub(crate) fn admission_blocked(&self) -> bool {
        self.block_admission
            && self.holders.values().flatten().any(|k| {
                self.workloads
                    .get(k)
                    .is_some_and(|r| r.wl.readiness.pods_ready != Some(true))
            })
    }

    /// Stops holding quota and lets set-aside workloads of the queue and
    /// its cohort try again. The workload itself is left parked.
    fn release(&mut self, key: &str) {
        let Some(mut rec) = self.workloads.get_mut(key) else {
            return;
        };
        let State::Holding(h) = std::mem::replace(&mut rec.state, State::Parked) else {
            return;
        };
        // A replacement letting go before the slice it replaced finished
        // (its admission refused): that slice holds its quota again.
        let replaced = rec
            .wl
            .replaces
            .clone()
            .filter(|old| self.superseded.get(old.as_str()).map(|k| &**k) == Some(key));
        drop(rec);
        self.quota.remove(&h.cq, &h.usage);
        topology::add_held(&mut self.tas_held, &h.topology, -1);
        if let Some(set) = self.holders.get_mut(&*h.cq) {
            set.remove(key);
            if set.is_empty() {
                self.holders.remove(&*h.cq);
            }
        }
        if let Some(old) = replaced {
            self.superseded.remove(&old);
            if let Some(rec) = self.workloads.get(old.as_str()) {
                if let (State::Parked, Some(a)) = (&rec.state, rec.wl.admission.clone()) {
                    let at = rec.wl.created;
                    self.hold(&old, a, at, true);
                }
            }
        }
        self.requeue_tree_of(&h.cq);
    }

    /// Releases the quota and queues the workload again.
    fn requeue_after_release(&mut self, key: &str) {
        self.release(key);
        self.place(key);
    }

    /// Puts the set-aside workloads of `cqs` back; whether any came back.
    fn requeue_inadmissible<'a>(&mut self, cqs: impl IntoIterator<Item = &'a str>) -> bool {
        let mut moved = false;
        for cq in cqs {
            if let Some(q) = self.queues.get_mut(cq) {
                moved |= q.requeue_inadmissible();
            }
        }
        moved
    }
}

mod check_gate;
mod cycle;
mod explanation;
mod records;
mod topology;
pub use explanation::Explanation;
mod fair;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod preemption_cases;

#[cfg(test)]
mod partial_admission_cases;

#[cfg(test)]
mod hierarchy_cases;

#[cfg(test)]
mod tree_index_cases;

#[cfg(test)]
mod fair_cases;

#[cfg(test)]
mod fungibility_cases;

mod admission_fair_sharing;
