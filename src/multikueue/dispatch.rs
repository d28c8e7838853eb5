//! The manager's MultiKueue decision for one local Workload, pure: the
//! Workload, its MultiKueue admission check, each worker's copy and job as
//! read, the local job and the time in; an ordered list of actions out. The
//! remote clients, the memory of a lost worker and of an incremental round
//! stay in the shell, which reads, calls [`step`] and executes.
//!
//! Kueue v0.19.2's `multikueue/workload.go` (`wlReconciler.Reconcile` and
//! `reconcileGroup`) in its order: a deleted Workload's copies are removed;
//! a Workload without an adapter or whose job is not managed by MultiKueue
//! is rejected; a finished or unreserved one has its copies removed; a
//! remote `Finished` finishes it (an `OutOfSync` one sends the check back to
//! Retry); a remote eviction is mirrored; copies whose spec drifted are
//! removed; the first worker to admit wins — the others' copies go, the job
//! is created there and its status copied back, the check turns Ready; a
//! lost admitting worker gets `workerLostTimeout` before the check retries;
//! otherwise the dispatcher nominates workers and copies are created on the
//! nominated ones. The incremental dispatcher's round (its own controller,
//! `workloaddispatcher/incrementaldispatcher.go`) is [`next_round`].
//!
//! Per job kind MultiKueue only needs to know where things are: a
//! [`JobKind`] is data (the batch/v1 Job's is [`BATCH_JOB`]).
//!
//! Not decided here (gates off by default in v0.19.2, or not yet in
//! batchgate): orchestrated preemption (`MultiKueueOrchestratedPreemption`:
//! preemption gates on the copies) and multi-workload owners
//! (LeaderWorkerSet's component Workloads).

use crate::vocabulary::pointer::At;
use std::{collections::BTreeMap, fmt, time::Duration};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde_json::{json, Map, Value};

use crate::{
    api::kueue::v1beta2::{
        self as api, check_state, condition, finished_reason, AdmissionCheckState, Conditions,
    },
    vocabulary::{
        go::go_quote,
        keys,
        patch::{self, PatchOp},
        pointer::Pointer,
    },
};

/// The label every object MultiKueue creates on a worker carries: the
/// manager's origin, so its garbage collector and ownership checks find it.
pub use crate::api::kueue::v1beta2::MULTIKUEUE_ORIGIN_LABEL as ORIGIN_LABEL;

use super::dispatcher::{ALL_AT_ONCE, INCREMENTAL};

/// The incremental dispatcher's defaults: workers per round, round length.
pub const DEFAULT_STEP_SIZE: usize = super::DEFAULT_STEP_SIZE as usize;
pub const DEFAULT_ROUND_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How soon to look again when the local job is still suspended and the
/// remote job's status could not be copied yet: the local job's unsuspend
/// does not wake this controller (Kueue's `syncDeferredRequeueAfter`).
pub const SYNC_DEFERRED_REQUEUE: Duration = Duration::from_secs(2);

/// The reason of every Event this controller records.
pub const EVENT_REASON: &str = "MultiKueue";

/// The `DeactivationTarget` reason set on the admitting copy when the local
/// Workload was evicted.
pub const EVICTED_ON_MANAGER_CLUSTER: &str = "EvictedOnManagerCluster";

/// `delayedTopologyRequest` values.
const DELAYED_PENDING: &str = "Pending";
const DELAYED_READY: &str = "Ready";

/// The elastic-job annotation's value that turns workload slices on.
const ELASTIC_ENABLED: &str = "true";

/// Kueue truncates condition and check messages to 32 KiB, Events to 1 KiB.
const MAX_CONDITION_MESSAGE: usize = 32 * 1024;
const MAX_EVENT_MESSAGE: usize = 1024;

/// What MultiKueue needs to know about a job kind, as data: read from the
/// kind's policy ([`JobKind::from_policy`]), so a kind with `managedBy`
/// needs no code to be dispatched.
#[derive(Debug, Clone, PartialEq)]
pub struct JobKind {
    pub api_version: String,
    pub kind: String,
    /// The kind's plural resource name (for the shell's clients).
    pub resource: String,
    /// Where the kind names its controller: must be MultiKueue's on the
    /// manager, and is removed on the worker so the worker's controller runs
    /// the job. `None`: the kind has no such field and is always
    /// MultiKueue's to dispatch (Kueue's pod adapter); the manager's
    /// reconciler keeps it from running there instead.
    pub managed_by: Option<String>,
    /// Other fields removed from the worker's copy (e.g. a selector the
    /// worker's apiserver generates).
    pub cleared: Vec<String>,
    /// The pod template's labels, and the keys the kind's controller owns
    /// there (they would clash with the worker's own).
    pub template_labels: Option<String>,
    pub owned_template_labels: Vec<String>,
    /// Where `suspend` is.
    pub suspend: String,
    /// Where the status is that is copied from the worker's job.
    pub status: String,
    /// `status.conditions` types that, True, mean the job finished.
    pub finished_conditions: Vec<String>,
    /// A condition set True on a suspended local job whose remote runs, for
    /// the apiserver's validation (the batch/v1 Job's `Suspended`).
    pub suspended_condition: Option<String>,
    /// The status copy waits while the local job is suspended and the
    /// remote one runs (Kueue's Job adapter; the others copy at once).
    pub defer_status: bool,
    /// A scheduling gate (the pod's admission gate): while the local object
    /// carries it and the remote one is not `PodScheduled`, the local
    /// `PodScheduled` condition is kept rather than copied — a copied
    /// `Unschedulable` would make the manager's cluster autoscaler scale up
    /// for a pod that never runs there (Kueue's pod adapter).
    pub kept_while_gated: Option<String>,
    /// The label naming a pod group: its members are copied and mirrored
    /// together, under their one Workload.
    pub group_label: Option<String>,
    /// The worker's job's status is copied back. Not for a kind without
    /// `managedBy` whose own controller runs here too (a StatefulSet): it
    /// would overwrite the copy at once, so the job is created once and
    /// left alone.
    pub mirror_status: bool,
    /// The copy carries the local object's UID (Kueue's
    /// `multikueue-origin-uid` annotation): the worker names its Workloads
    /// from it, so they are the copies sent.
    pub origin_uid: bool,
    /// For an owner of several Workloads (a LeaderWorkerSet, one per
    /// group): where the object says how many (absent: 1). They are
    /// dispatched together, to one worker; the copy names none of them.
    pub components: Option<String>,
    /// Named in `multiKueue.externalFrameworks` (Kueue's generic adapter,
    /// whose messages name the field as `.spec.managedBy`).
    pub external: bool,
    /// An external kind with Kueue's `MultiKueueAdaptersForCustomJobs`
    /// gate off: never dispatched, the check rejected saying so.
    pub gate_off: bool,
    /// An elastic job's counts, which the worker's job follows along with
    /// the Workload slice it runs under (see [`JobKind::elastic_sync`]).
    pub elastic_counts: Vec<String>,
    /// An elastic job's counts per group (a RayCluster's worker groups).
    pub elastic_groups: Option<crate::jobs::policy::ElasticGroups>,
    /// Spec fields the worker's copy follows (see [`JobKind::spec_sync`]).
    pub synced_fields: Vec<Pointer>,
}

/// The batch/v1 Job, from its embedded policy (Kueue's
/// `job_multikueue_adapter.go`).
pub static BATCH_JOB: std::sync::LazyLock<JobKind> = std::sync::LazyLock::new(|| {
    let policies = crate::jobs::policy::PolicySet::embedded().expect("embedded policies parse");
    let job = policies
        .iter()
        .find(|p| p.target.group == "batch" && p.target.kind == "Job")
        .and_then(|p| JobKind::from_policy(p));
    job.expect("the batch/v1 Job policy has managedBy")
});

/// The AppWrapper (Kueue's `appwrapper_multikueue_adapter.go`): no policy
/// describes it, its controller is batchgate's own. Copied with
/// `spec.managedBy` removed, its whole status mirrored at once.
pub static APPWRAPPER: std::sync::LazyLock<JobKind> = std::sync::LazyLock::new(|| {
    use crate::appwrapper::{APPWRAPPER_API_VERSION, APPWRAPPER_KIND};
    JobKind {
        managed_by: Some("/spec/managedBy".into()),
        ..JobKind::copied_whole(APPWRAPPER_API_VERSION, APPWRAPPER_KIND, "appwrappers")
    }
});

/// The copy's groups take the count fields of the local group of the same
/// key (removed where the local group has none); groups only one side has
/// are left alone (Kueue's `syncWorkerReplicas`).
fn group_ops(
    g: &crate::jobs::policy::ElasticGroups,
    local: &Value,
    remote: &Value,
    ops: &mut Vec<PatchOp>,
) {
    let items = |job: &Value| -> Vec<Value> {
        g.list
            .resolve(job)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mine = items(local);
    for (i, theirs) in items(remote).iter().enumerate() {
        let key = g.key.resolve(theirs);
        let Some(ours) = mine
            .iter()
            .find(|m| key.is_some() && g.key.resolve(m) == key)
        else {
            continue;
        };
        for field in std::iter::once(&g.count).chain(g.hosts.as_ref()) {
            follow(remote, &g.list.join(i, field), field.resolve(ours), ops);
        }
    }
}

/// Makes `remote` hold `want` at `at` (absent: removed), when it does not.
fn follow(remote: &Value, at: &Pointer, want: Option<&Value>, ops: &mut Vec<PatchOp>) {
    if want == at.resolve(remote) {
        return;
    }
    match want {
        Some(v) => {
            let _ = patch::set(remote, at, v.clone(), ops);
        }
        None => ops.push(PatchOp {
            op: "remove",
            path: at.as_str().to_string(),
            value: Value::Null,
        }),
    }
}

/// `ops` after a `test` of the copy's `resourceVersion` as read (a copy
/// changed since is patched on a later pass); `None` when there are none.
fn tested_against(remote: &Value, mut ops: Vec<PatchOp>) -> Option<Vec<PatchOp>> {
    if ops.is_empty() {
        return None;
    }
    if let Some(rv) = remote.at("/metadata/resourceVersion") {
        let test = PatchOp {
            op: "test",
            path: "/metadata/resourceVersion".into(),
            value: rv.clone(),
        };
        ops.insert(0, test);
    }
    Some(ops)
}

/// What the adapter's `SyncJob` decides for the job on the admitting worker.
#[derive(Debug, Clone, PartialEq)]
pub enum JobSync {
    /// The worker has no job yet: create this one there.
    Create(Value),
    /// Write this status onto the local job; `deferred`: see [`JobKind::status_update`].
    CopyStatus { status: Value, deferred: bool },
    /// The local status is already this.
    InSync { deferred: bool },
}

impl JobKind {
    /// The adapter of a policy's kind: a kind whose policy says where
    /// `managedBy` is, a kind held by a scheduling gate (the pod), or one
    /// queued through its pods as pod groups; none for a kind whose pods
    /// are queued one by one (a Deployment: Kueue has no adapter).
    pub fn from_policy(p: &crate::jobs::policy::Policy) -> Option<JobKind> {
        if let Some(owner) = &p.pod_owner {
            return JobKind::pod_owner(p, owner);
        }
        if let Some(gate) = &p.gate {
            return Some(JobKind::gated(p, gate));
        }
        let managed_by = p.managed_by.as_ref()?;
        let status = p.status.as_ref();
        let finished = status
            .map(|s| s.succeeded.iter().chain(&s.failed).cloned().collect())
            .unwrap_or_default();
        let rule = &p.multi_kueue;
        Some(JobKind {
            managed_by: Some(managed_by.as_str().to_string()),
            cleared: rule
                .cleared
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            template_labels: rule
                .template_labels
                .as_ref()
                .map(|t| t.as_str().to_string()),
            owned_template_labels: rule.owned_template_labels.clone(),
            finished_conditions: finished,
            suspended_condition: rule.suspended_condition.clone(),
            defer_status: rule.defer_status,
            elastic_counts: rule
                .elastic_counts
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            elastic_groups: rule.elastic_groups.clone(),
            synced_fields: rule.synced_fields.clone(),
            ..JobKind::of_policy(p)
        })
    }

    /// A kind queued through its pods as pod groups (Kueue's StatefulSet
    /// and LeaderWorkerSet adapters): no `managedBy`, so always
    /// MultiKueue's; its pods here stay behind their gate while the copy
    /// runs on the worker; copied once with the origin UID, its status
    /// left to the worker's controller. A kind whose pods are queued one by
    /// one (a Deployment) has no adapter: its pods are dispatched as pods.
    fn pod_owner(
        p: &crate::jobs::policy::Policy,
        owner: &crate::jobs::policy::PodOwner,
    ) -> Option<JobKind> {
        let components = match (&owner.group, &owner.replica_groups) {
            (Some(_), _) => None,
            (None, Some(groups)) => Some(groups.replicas.as_str().to_string()),
            (None, None) => return None,
        };
        Some(JobKind {
            mirror_status: false,
            origin_uid: true,
            components,
            ..JobKind::of_policy(p)
        })
    }

    /// A kind held by a scheduling gate, the pod (Kueue's
    /// `pod_multikueue_adapter.go`): no `managedBy`, so always dispatched;
    /// on the manager it stays behind its gate (`jobs::machine::pods`)
    /// while the copy runs on the worker, its whole status mirrored but
    /// for the scheduling condition while gated.
    fn gated(p: &crate::jobs::policy::Policy, gate: &crate::jobs::policy::Gate) -> JobKind {
        JobKind {
            kept_while_gated: Some(gate.scheduling_gate.clone()),
            group_label: gate.group.as_ref().map(|g| g.name_label.clone()),
            ..JobKind::of_policy(p)
        }
    }

    /// A kind named in `multiKueue.externalFrameworks` as
    /// `Kind.version.group` (Kueue's `externalframeworks.Adapter`): another
    /// controller makes its Workloads; it is copied without
    /// `spec.managedBy`, its whole status mirrored back. `resource` is its
    /// plural, from discovery.
    pub fn external(name: &str, resource: String) -> Option<JobKind> {
        let (kind, group, version) = parse_kind_arg(name)?;
        Some(JobKind {
            managed_by: Some("/spec/managedBy".into()),
            external: true,
            ..JobKind::copied_whole(&format!("{group}/{version}"), kind, &resource)
        })
    }

    /// A kind copied with its spec whole and no `managedBy` (unless set),
    /// `spec.suspend`, its whole status mirrored at once: what the
    /// constructors start from.
    fn copied_whole(api_version: &str, kind: &str, resource: &str) -> JobKind {
        JobKind {
            api_version: api_version.into(),
            kind: kind.into(),
            resource: resource.into(),
            managed_by: None,
            cleared: Vec::new(),
            template_labels: None,
            owned_template_labels: Vec::new(),
            suspend: "/spec/suspend".into(),
            status: "/status".into(),
            finished_conditions: Vec::new(),
            suspended_condition: None,
            defer_status: false,
            kept_while_gated: None,
            group_label: None,
            mirror_status: true,
            origin_uid: false,
            components: None,
            external: false,
            gate_off: false,
            elastic_counts: Vec::new(),
            elastic_groups: None,
            synced_fields: Vec::new(),
        }
    }

    fn of_policy(p: &crate::jobs::policy::Policy) -> JobKind {
        let t = &p.target;
        JobKind {
            suspend: p.suspend.as_str().to_string(),
            ..JobKind::copied_whole(&t.api_version(), &t.kind, &t.resource)
        }
    }

    /// Kueue's adapter key: `schema.GroupVersionKind.String()`.
    fn gvk(&self) -> String {
        gvk_string(&self.api_version, &self.kind)
    }

    /// The group the object is a member of, for a kind that has groups.
    pub fn group_of<'j>(&self, job: &'j Value) -> Option<&'j str> {
        let label = self.group_label.as_deref()?;
        job.at("/metadata/labels")
            .and_then(|l| l.get(label))
            .and_then(Value::as_str)
            .filter(|g| !g.is_empty())
    }

    /// Kueue's `IsJobManagedByKueue`: `None` when the job names MultiKueue
    /// as its controller, else why not.
    pub fn unmanaged_reason(&self, job: &Value) -> Option<String> {
        if self.gate_off {
            return Some("MultiKueueAdaptersForCustomJobs feature gate is disabled".into());
        }
        let pointer = self.managed_by.as_deref()?;
        let managed_by = job.at(pointer).and_then(Value::as_str).unwrap_or_default();
        let field = if self.external {
            format!(".{}", field_name(pointer))
        } else {
            field_name(pointer)
        };
        (managed_by != keys::MULTIKUEUE_CONTROLLER).then(|| {
            format!(
                "Expecting {} to be {} not {}",
                field,
                go_quote(keys::MULTIKUEUE_CONTROLLER),
                go_quote(managed_by)
            )
        })
    }

    /// The adapter's `SyncJob`: create the job on the worker if absent
    /// (`remote` is the worker's job as read), else copy its status back.
    pub fn sync(
        &self,
        local: &Value,
        remote: Option<&Value>,
        workload_name: &str,
        origin: &str,
        identifier_annotations: bool,
        now: &Time,
    ) -> JobSync {
        let Some(remote) = remote else {
            return JobSync::Create(self.remote_job(
                local,
                workload_name,
                origin,
                identifier_annotations,
            ));
        };
        if !self.mirror_status {
            return JobSync::InSync { deferred: false };
        }
        let (status, deferred) = self.status_update(local, remote, now);
        let current = local.at(&self.status).cloned().unwrap_or_else(|| json!({}));
        if status == current {
            JobSync::InSync { deferred }
        } else {
            JobSync::CopyStatus { status, deferred }
        }
    }

    /// Kueue's `determineStatusUpdate`: the status the local job should
    /// have, and whether the copy is deferred. The remote status, unless the
    /// local job is suspended while the remote one runs unfinished — then
    /// the local status stays (a start time copied early would freeze the
    /// local spec), marked suspended for the apiserver's validation, and the
    /// copy waits for the local job to start.
    pub fn status_update(&self, local: &Value, remote: &Value, now: &Time) -> (Value, bool) {
        let remote_status = remote
            .at(&self.status)
            .cloned()
            .unwrap_or_else(|| json!({}));
        if !self.defer_status
            || !is_true_at(local, &self.suspend)
            || is_true_at(remote, &self.suspend)
            || self
                .finished_conditions
                .iter()
                .any(|t| job_condition_true(remote, &self.status, t))
        {
            return (self.scheduling_kept(local, remote_status), false);
        }
        let mut status = local.at(&self.status).cloned().unwrap_or_else(|| json!({}));
        if let Some(ty) = self.suspended_condition.as_deref() {
            if !job_condition_true(local, &self.status, ty) {
                let cond = json!({
                    "type": ty,
                    "status": "True",
                    "reason": "MultiKueueAdapter",
                    "message": "Set by MultiKueue adapter",
                    "lastTransitionTime": now,
                    "lastProbeTime": now,
                });
                put_condition(&mut status, cond);
            }
        }
        (status, true)
    }

    /// The remote status with the local `PodScheduled` condition kept, for
    /// a kind with [`JobKind::kept_while_gated`], while the local object is
    /// gated and the remote one is not scheduled.
    fn scheduling_kept(&self, local: &Value, mut status: Value) -> Value {
        const SCHEDULED: &str = "PodScheduled";
        let Some(gate) = &self.kept_while_gated else {
            return status;
        };
        let gated = local
            .at("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|gs| gs.iter().any(|g| g["name"] == gate.as_str()));
        let kept = local
            .at(&format!("{}/conditions", self.status))
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == SCHEDULED));
        let scheduled = job_condition_true(&status, "", SCHEDULED);
        if let (true, Some(kept), false) = (gated, kept, scheduled) {
            put_condition(&mut status, kept.clone());
        }
        status
    }

    /// Kueue's `needElasticJobSync` and `syncElasticJob` (its batch/v1 Job
    /// adapter; its Ray adapter's `ElasticReplicaSync` for groups): the
    /// worker's copy of an elastic job takes the local job's counts and
    /// names `workload_name`, the slice admitted for them, as its prebuilt
    /// Workload. A JSON patch tested against the copy's
    /// version; `None` when in sync, or when `workload_name` is a slice the
    /// job has outgrown (its counts went up since: the replacing slice's
    /// pass syncs once that slice is admitted there).
    pub fn elastic_sync(
        &self,
        local: &Value,
        remote: &Value,
        workload_name: &str,
        identifier_annotations: bool,
    ) -> Option<Vec<PatchOp>> {
        if !crate::jobs::machine::is_elastic(local)
            || (self.elastic_counts.is_empty() && self.elastic_groups.is_none())
        {
            return None;
        }
        let (have, want) = (self.elastic_sizes(remote), self.elastic_sizes(local));
        let total = |sizes: &BTreeMap<String, i64>| sizes.values().sum::<i64>();
        if total(&have) < total(&want) && workload_name != self.current_slice(local) {
            return None;
        }
        let text = |key: &str, field: &str| {
            remote
                .at(&format!("/metadata/{field}"))
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
        };
        let named = crate::jobs::machine::prebuilt_name(
            text(keys::PREBUILT_WORKLOAD_LABEL, "annotations"),
            text(keys::PREBUILT_WORKLOAD_LABEL, "labels"),
        );
        let mut ops = Vec::new();
        for at in &self.elastic_counts {
            let Ok(ptr) = crate::vocabulary::pointer::Pointer::parse(at) else {
                continue;
            };
            if let Some(v) = local.at(at) {
                // The copy's spec was checked when it was read.
                let _ = patch::set(remote, &ptr, v.clone(), &mut ops);
            }
        }
        // Groups of equal pod counts are left as they are, however those
        // counts are made up (Kueue compares the counts).
        if let (Some(g), false) = (&self.elastic_groups, have == want) {
            group_ops(g, local, remote, &mut ops);
        }
        if named != Some(workload_name) {
            // Where the copy was created with it (see `remote_job`).
            if identifier_annotations || workload_name.len() > 63 {
                patch::set_annotation(
                    remote,
                    keys::PREBUILT_WORKLOAD_LABEL,
                    workload_name,
                    &mut ops,
                );
            } else {
                patch::set_label(
                    remote,
                    keys::PREBUILT_WORKLOAD_LABEL,
                    workload_name,
                    &mut ops,
                );
            }
        }
        tested_against(remote, ops)
    }

    /// Each elastic count of `job` by its pointer, and each group's pods by
    /// its key.
    fn elastic_sizes(&self, job: &Value) -> BTreeMap<String, i64> {
        let count = |v: Option<&Value>, default: i64| v.and_then(Value::as_i64).unwrap_or(default);
        let mut out: BTreeMap<String, i64> = self
            .elastic_counts
            .iter()
            .map(|at| (at.clone(), count(job.at(at), 0)))
            .collect();
        if let Some(g) = &self.elastic_groups {
            for item in g
                .list
                .resolve(job)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(key) = g.key.resolve(item).and_then(Value::as_str) else {
                    continue;
                };
                let hosts = g
                    .hosts
                    .as_ref()
                    .map_or(1, |h| count(h.resolve(item), 1).max(1));
                out.insert(
                    format!("group:{key}"),
                    count(g.count.resolve(item), 1) * hosts,
                );
            }
        }
        out
    }

    /// Kueue's `RemoteSpecSyncer` (`NeedsSync` and `Apply`): the worker's
    /// copy takes the local job's value of each synced field, removed where
    /// the local job has none. A JSON patch tested against the copy's
    /// version; `None` when in sync.
    pub fn spec_sync(&self, local: &Value, remote: &Value) -> Option<Vec<PatchOp>> {
        let mut ops = Vec::new();
        for at in &self.synced_fields {
            follow(remote, at, at.resolve(local), &mut ops);
        }
        tested_against(remote, ops)
    }

    /// The Workload name the local job's current generation gives its
    /// slice (Kueue's `GetWorkloadNameForOwnerWithGVKAndGeneration`).
    pub(crate) fn current_slice(&self, local: &Value) -> String {
        let text = |p: &str| local.at(p).and_then(Value::as_str).unwrap_or_default();
        let generation = local
            .at("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let group = self.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        crate::jobs::workload::name_with_extra(
            &self.kind,
            group,
            text("/metadata/name"),
            text("/metadata/uid"),
            &generation.to_string(),
        )
    }

    /// The job as created on a worker: name, namespace, labels, annotations
    /// and spec of the local one; MultiKueue's origin and the prebuilt
    /// Workload's name added (Kueue's `SetMultiKueueMeta`); the kind's
    /// controller fields dropped.
    pub fn remote_job(
        &self,
        local: &Value,
        workload_name: &str,
        origin: &str,
        identifier_annotations: bool,
    ) -> Value {
        let meta = &local["metadata"];
        let mut labels = meta["labels"].as_object().cloned().unwrap_or_default();
        let mut annotations = meta["annotations"].as_object().cloned().unwrap_or_default();
        labels.insert(ORIGIN_LABEL.into(), json!(origin));
        // An owner of several Workloads names none (Kueue's LWS adapter).
        let prebuilt = self.components.is_none().then_some(json!(workload_name));
        // A label value holds 63 characters at most.
        if identifier_annotations || workload_name.len() > 63 {
            annotations.extend(prebuilt.map(|n| (keys::PREBUILT_WORKLOAD_LABEL.into(), n)));
        } else {
            labels.extend(prebuilt.map(|n| (keys::PREBUILT_WORKLOAD_LABEL.into(), n)));
        }
        if self.origin_uid {
            let uid = meta["uid"].as_str().unwrap_or_default();
            annotations.insert(keys::MULTIKUEUE_ORIGIN_UID_ANNOTATION.into(), json!(uid));
        }
        let mut metadata = Map::new();
        for key in ["name", "namespace"] {
            if let Some(v) = meta.get(key) {
                metadata.insert(key.into(), v.clone());
            }
        }
        metadata.insert("labels".into(), Value::Object(labels));
        if !annotations.is_empty() {
            metadata.insert("annotations".into(), Value::Object(annotations));
        }
        let mut job = json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": metadata,
            "spec": local["spec"].clone(),
        });
        if let Some(p) = &self.managed_by {
            remove_at(&mut job, p);
        }
        for p in &self.cleared {
            remove_at(&mut job, p);
        }
        let labels = self.template_labels.as_deref();
        if let Some(Value::Object(l)) = labels.and_then(|t| job.pointer_mut(t)) {
            for key in &self.owned_template_labels {
                l.remove(key);
            }
        }
        job
    }
}

/// Go's `schema.ParseKindArg` for `Kind.version.group` (the group may
/// hold dots): `(kind, group, version)`, none without all three.
pub fn parse_kind_arg(name: &str) -> Option<(&str, &str, &str)> {
    let mut parts = name.splitn(3, '.');
    let (kind, version, group) = (parts.next()?, parts.next()?, parts.next()?);
    (!kind.is_empty() && !version.is_empty() && !group.is_empty()).then_some((kind, group, version))
}

/// Go's `schema.FromAPIVersionAndKind(v, k).String()`.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// How workers are nominated (`Configuration.multiKueue.dispatcherName`).
#[derive(Debug, Clone, PartialEq)]
pub enum Dispatcher {
    /// Every active worker at once.
    AllAtOnce,
    /// `step_size` more workers each `round_timeout`, in the config's order.
    Incremental {
        step_size: usize,
        round_timeout: Duration,
    },
    /// Another controller writes `status.nominatedClusterNames`.
    External(String),
}

impl Dispatcher {
    /// From the configuration's name (and the incremental step size).
    pub fn named(name: &str, step_size: Option<usize>) -> Self {
        match name {
            ALL_AT_ONCE | "" => Dispatcher::AllAtOnce,
            INCREMENTAL => Dispatcher::Incremental {
                step_size: step_size.unwrap_or(DEFAULT_STEP_SIZE),
                round_timeout: DEFAULT_ROUND_TIMEOUT,
            },
            other => Dispatcher::External(other.to_string()),
        }
    }
}

/// The manager's settings for MultiKueue.
#[derive(Debug, Clone)]
pub struct Settings<'a> {
    /// `multiKueue.origin`: the value of [`ORIGIN_LABEL`].
    pub origin: &'a str,
    /// `multiKueue.workerLostTimeout`.
    pub worker_lost_timeout: Duration,
    pub dispatcher: Dispatcher,
    /// The kinds MultiKueue may dispatch.
    pub kinds: &'a [JobKind],
    /// Kueue's `WorkloadIdentifierAnnotations` (on by default): the
    /// prebuilt-workload name goes on the remote job as an annotation, else
    /// as a label (an annotation anyway when too long for a label).
    pub identifier_annotations: bool,
}

/// The manager's connection to a worker.
#[derive(Debug, Clone, PartialEq)]
pub enum Link {
    Connected,
    /// Not connected; since when, if the shell saw it go (a cluster that
    /// never connected has no time: its grace starts now).
    Lost(Option<Time>),
}

/// One worker of the Workload's MultiKueueConfig, as read.
#[derive(Debug, Clone)]
pub struct Worker<'a> {
    pub name: &'a str,
    pub link: Link,
    /// The Workload copy of the same name (absent, or unread when lost).
    pub workload: Option<&'a api::Workload>,
    /// The job of the local job's name.
    pub job: Option<&'a Value>,
    /// For a pod group: the worker's pods of the group (`job` among them).
    pub members: &'a [Value],
}

impl Worker<'_> {
    fn connected(&self) -> bool {
        self.link == Link::Connected
    }
}

/// What one pass sees.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub local: &'a api::Workload,
    /// The Workload is gone from the apiserver and `local` is its last copy.
    pub gone: bool,
    /// The name of the Workload's MultiKueue admission check, if its
    /// ClusterQueue has one.
    pub check: Option<&'a str>,
    /// The local job (the owner), as read.
    pub local_job: Option<&'a Value>,
    /// For a pod group: its pods here (`local_job` among them), which are
    /// copied and mirrored one by one (Kueue's `syncPodGroup`).
    pub local_members: &'a [Value],
    /// The config's clusters in order.
    pub workers: &'a [Worker<'a>],
    /// When the incremental dispatcher's current round began (the shell
    /// remembers it from [`Action::RoundStarted`]).
    pub round_started: Option<&'a Time>,
    /// For a kind with [`JobKind::components`]: the local Workloads the
    /// same object owns (`local` may be among them).
    pub components: &'a [&'a api::Workload],
    pub now: &'a Time,
}

/// A change to the local Workload's status, one write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalStatus {
    /// Replaces the check of its name in `status.admissionChecks`.
    pub check: Option<AdmissionCheckState>,
    /// `status.clusterName` (immutable once set).
    pub cluster_name: Option<String>,
    /// `status.nominatedClusterNames`; empty clears it.
    pub nominated: Option<Vec<String>>,
    /// The `Finished` condition to set.
    pub finished: Option<Condition>,
    /// `status.admission` to write whole: the delayed topology requests the
    /// admitting worker has placed turn Ready.
    pub admission: Option<api::Admission>,
}

impl LocalStatus {
    /// A JSON merge patch of the Workload's status for this change.
    pub fn merge_patch(&self, local: &api::Workload) -> Value {
        let status = local.status.clone().unwrap_or_default();
        let mut patch = Map::new();
        if let Some(check) = &self.check {
            let mut checks = status.admission_checks.clone().unwrap_or_default();
            match checks.iter_mut().find(|c| c.name == check.name) {
                Some(c) => *c = check.clone(),
                None => checks.push(check.clone()),
            }
            patch.insert("admissionChecks".into(), json!(checks));
        }
        if let Some(name) = &self.cluster_name {
            patch.insert("clusterName".into(), json!(name));
        }
        if let Some(names) = &self.nominated {
            let v = if names.is_empty() {
                Value::Null
            } else {
                json!(names)
            };
            patch.insert("nominatedClusterNames".into(), v);
        }
        if let Some(admission) = &self.admission {
            patch.insert("admission".into(), json!(admission));
        }
        if let Some(cond) = &self.finished {
            let mut conds = Conditions::of(status.conditions.as_ref());
            conds.0.retain(|c| c.type_ != cond.type_);
            conds.0.push(cond.clone());
            patch.insert("conditions".into(), json!(conds.0));
        }
        json!({ "status": Value::Object(patch) })
    }
}

/// One thing to do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create the Workload copy on `cluster`.
    CreateRemoteWorkload {
        cluster: String,
        workload: Box<api::Workload>,
    },
    /// Replace the copy's spec on `cluster` (a priority change, an elastic
    /// scale-down: the worker keeps its admission).
    UpdateRemoteWorkloadSpec {
        cluster: String,
        spec: Box<api::WorkloadSpec>,
    },
    /// Set this `DeactivationTarget` condition on the copy's status on
    /// `cluster`.
    DeactivateRemoteWorkload {
        cluster: String,
        condition: Condition,
    },
    /// Delete the job named `name` on `cluster`, background propagation. Only
    /// asked for a job that carries this manager's origin.
    DeleteRemoteJob { cluster: String, name: String },
    /// Delete the copy named `name` on `cluster`, its
    /// `kueue.x-k8s.io/resource-in-use` finalizer removed first.
    DeleteRemoteWorkload { cluster: String, name: String },
    /// Create this job on `cluster`.
    CreateRemoteJob { cluster: String, job: Value },
    /// Apply this JSON patch to the job `name` on `cluster` (an elastic
    /// job's counts and slice; only a job carrying this manager's origin).
    PatchRemoteJob {
        cluster: String,
        name: String,
        patch: Vec<PatchOp>,
    },
    /// Write this status onto the local job `name` (its status
    /// subresource; a pod group's member by name).
    CopyJobStatus { name: String, status: Value },
    /// Patch the local Workload's status.
    Local(LocalStatus),
    /// Record an Event on the local Workload.
    Event {
        warning: bool,
        reason: &'static str,
        message: String,
    },
    /// The incremental dispatcher started a round now: remember `now` as
    /// the round's start for this Workload.
    RoundStarted,
    /// Forget the Workload's round: it is gone, finished or lost its quota,
    /// so its next dispatch starts afresh.
    ForgetRound,
    /// Look at these local Workloads (the same object's) again.
    Wake(Vec<String>),
}

/// Why the pass could not finish; the shell retries with backoff (the
/// actions before it still apply).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Trouble {
    #[error("remote object is not owned by MultiKueue: expected {label}={origin} on {kind} {name} in cluster {cluster}", label = go_quote(ORIGIN_LABEL), origin = go_quote(.origin), name = go_quote(.name), cluster = go_quote(.cluster))]
    RemoteJobNotOwned {
        cluster: String,
        kind: String,
        name: String,
        origin: String,
    },
    #[error("{}", not_connected(.0))]
    NominatedClustersNotConnected(Vec<String>),
    #[error("the local job {} is not found", go_quote(.0))]
    LocalJobMissing(String),
    #[error("attempting to change immutable ClusterName from {} to {}", go_quote(.from), go_quote(.to))]
    ClusterNameImmutable { from: String, to: String },
    #[error("checking component workloads: component workloads assigned to different clusters: {} and {}", go_quote(.0), go_quote(.1))]
    ComponentsSplit(String, String),
    #[error("assigned worker cluster {} is not available", go_quote(.0))]
    AssignedClusterUnavailable(String),
}

fn not_connected(clusters: &[String]) -> String {
    let each: Vec<String> = clusters
        .iter()
        .map(|c| format!("cluster {c}: no remote client for nominated cluster"))
        .collect();
    each.join("\n")
}

/// A pass's decision.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    pub actions: Vec<Action>,
    /// Look again after this long.
    pub requeue_after: Option<Duration>,
    pub trouble: Option<Trouble>,
}

/// The incremental dispatcher's decision for a Workload.
#[derive(Debug, Clone, PartialEq)]
pub enum Round {
    /// The current round runs this much longer.
    InProgress(Duration),
    /// Nominate this list (the old one and the next workers after it).
    Next(Vec<String>),
    /// Every worker is nominated already (Kueue's `ErrNoMoreWorkers`).
    NoMoreWorkers,
}

/// The incremental dispatcher (Kueue's `nominateWorkers`): while a round
/// runs (up to and including `round_timeout` after it started) nothing
/// changes; then up to `step_size` workers not yet nominated join, in the
/// config's order (`MultiKueueIncrementalDispatcherRespectConfigOrder`).
pub fn next_round(
    nominated: &[String],
    clusters: &[&str],
    step_size: usize,
    round_timeout: Duration,
    round_started: Option<&Time>,
    now: &Time,
) -> Round {
    if let Some(started) = round_started {
        let elapsed = millis_between(started, now);
        let timeout = i64::try_from(round_timeout.as_millis()).unwrap_or(i64::MAX);
        if elapsed <= timeout {
            return Round::InProgress(Duration::from_millis((timeout - elapsed).unsigned_abs()));
        }
    }
    let rest: Vec<&str> = clusters
        .iter()
        .copied()
        .filter(|c| !nominated.iter().any(|n| n == c))
        .collect();
    if rest.is_empty() {
        return Round::NoMoreWorkers;
    }
    let mut next = nominated.to_vec();
    next.extend(rest.into_iter().take(step_size).map(String::from));
    Round::Next(next)
}

fn millis_between(from: &Time, to: &Time) -> i64 {
    to.0.as_millisecond() - from.0.as_millisecond()
}

/// Go's `truncateMessage`: at most `limit` bytes, ` ...` marking a cut.
fn truncate(message: String, limit: usize) -> String {
    if message.len() <= limit {
        return message;
    }
    let mut end = limit - 4;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} ...", &message[..end])
}

fn conditions(wl: &api::Workload) -> Conditions {
    Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()))
}

fn annotation<'a>(wl: &'a api::Workload, key: &str) -> Option<&'a str> {
    wl.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn pod_set_counts(wl: &api::Workload) -> Vec<(String, i32)> {
    wl.spec
        .pod_sets
        .iter()
        .flatten()
        .map(|p| (p.name.clone(), p.count))
        .collect()
}

/// Kueue's `PodSetsCounts.HasFewerReplicasThan`: some pod set of `a` has
/// fewer pods than the same one in `b`.
fn fewer(a: &[(String, i32)], b: &[(String, i32)]) -> bool {
    a.iter()
        .any(|(n, c)| b.iter().any(|(m, d)| m == n && c < d))
}

/// The remote spec differs from the local one, preemption gates aside
/// (each side keeps its own).
fn spec_out_of_sync(local: &api::WorkloadSpec, remote: &api::WorkloadSpec) -> bool {
    let mut l = local.clone();
    let mut r = remote.clone();
    l.preemption_gates = None;
    r.preemption_gates = None;
    l != r
}

/// Kueue's `workload.PriorityChanged(remote, local)`, for Workload priority
/// classes: the class or the priority moved.
fn priority_changed(remote: &api::WorkloadSpec, local: &api::WorkloadSpec) -> bool {
    use api::priority_class::{POD_PRIORITY_CLASS_GROUP, WORKLOAD_PRIORITY_CLASS_GROUP};
    let group = |s: &api::WorkloadSpec| s.priority_class_ref.as_ref().map(|r| r.group.clone());
    if group(remote).as_deref() == Some(POD_PRIORITY_CLASS_GROUP)
        || group(local).as_deref() != Some(WORKLOAD_PRIORITY_CLASS_GROUP)
    {
        return false;
    }
    let name = |s: &api::WorkloadSpec| s.priority_class_ref.as_ref().map(|r| r.name.clone());
    if name(local).is_some_and(|n| !n.is_empty()) && name(remote) != name(local) {
        return true;
    }
    remote.priority.unwrap_or(0) != local.priority.unwrap_or(0)
}

/// The Workload's owner: which kind handles it and the job's name.
enum Owner<'k> {
    Kind(&'k JobKind, String),
    /// An owner no kind handles (its `schema.GroupVersionKind.String()`).
    Unhandled(String),
    None,
}

/// The local job a Workload belongs to, when a kind in `kinds` handles
/// it: its kind and name (what the shell reads before a [`step`]).
pub fn local_job<'k>(wl: &api::Workload, kinds: &'k [JobKind]) -> Option<(&'k JobKind, String)> {
    match owner(wl, kinds) {
        Owner::Kind(kind, name) => Some((kind, name)),
        _ => None,
    }
}

/// Kueue's `wlReconciler.adapter`: the job-owner annotations (a Workload
/// of a multi-workload owner), else the controller, else the first owner.
fn owner<'k>(wl: &api::Workload, kinds: &'k [JobKind]) -> Owner<'k> {
    if let Some(gvk) = annotation(wl, keys::JOB_OWNER_GVK_ANNOTATION) {
        if let Some(kind) = kinds.iter().find(|k| k.gvk() == gvk) {
            if let Some(name) = annotation(wl, keys::JOB_OWNER_NAME_ANNOTATION) {
                if !name.is_empty() {
                    return Owner::Kind(kind, name.to_string());
                }
            }
        }
    }
    let refs = wl.metadata.owner_references.as_deref().unwrap_or_default();
    let Some(r) = refs
        .iter()
        .find(|r| r.controller == Some(true))
        .or_else(|| refs.first())
    else {
        return Owner::None;
    };
    match kinds
        .iter()
        .find(|k| k.api_version == r.api_version && k.kind == r.kind)
    {
        Some(kind) => Owner::Kind(kind, r.name.clone()),
        None => Owner::Unhandled(gvk_string(&r.api_version, &r.kind)),
    }
}

fn is_true_at(obj: &Value, pointer: &str) -> bool {
    obj.at(pointer).and_then(Value::as_bool) == Some(true)
}

fn job_condition_true(job: &Value, status: &str, ty: &str) -> bool {
    job.at(&format!("{status}/conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == ty && c["status"] == "True")
}

/// `cond` in a status's `conditions`, replacing the one of its type.
fn put_condition(status: &mut Value, cond: Value) {
    if !status.is_object() {
        *status = json!({});
    }
    let list = status
        .as_object_mut()
        .map(|m| m.entry("conditions").or_insert_with(|| json!([])));
    if let Some(Value::Array(list)) = list {
        match list.iter_mut().find(|c| c["type"] == cond["type"]) {
            Some(c) => *c = cond,
            None => list.push(cond),
        }
    }
}

fn name_of(obj: &Value) -> &str {
    obj.at("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn origin_of(obj: &Value) -> Option<&str> {
    obj.at("/metadata/labels")
        .and_then(|l| l.get(ORIGIN_LABEL))
        .and_then(Value::as_str)
}

/// Remove the value at `pointer`, if there.
fn remove_at(obj: &mut Value, pointer: &str) {
    if let Some((parent, key)) = pointer.rsplit_once('/') {
        if let Some(Value::Object(m)) = obj.pointer_mut(parent) {
            m.remove(key);
        }
    }
}

/// "/spec/managedBy" -> "spec.managedBy", as Kueue's messages name fields.
fn field_name(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

/// The pass over one Workload, from Kueue's workload controller.
struct Pass<'a, 'f> {
    f: &'f Facts<'a>,
    s: &'f Settings<'a>,
    kind: &'f JobKind,
    job_name: String,
    check: &'f AdmissionCheckState,
    /// The copies as the pass goes: one removed is absent afterwards.
    copies: Vec<Option<&'a api::Workload>>,
    out: Step,
}

/// Decide one pass for `f.local` on the manager.
pub fn step(f: &Facts<'_>, s: &Settings<'_>) -> Step {
    let mut out = Step::default();
    let local = f.local;
    let Some(check_name) = f.check else {
        return out;
    };
    let Some(check) = local
        .status
        .as_ref()
        .and_then(|st| st.admission_checks.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == check_name))
    else {
        return out;
    };
    if check.state == check_state::REJECTED {
        return out;
    }
    let deleted = f.gone || local.metadata.deletion_timestamp.is_some();
    let (kind, job_name) = match owner(local, s.kinds) {
        Owner::Kind(kind, name) => (kind, name),
        Owner::Unhandled(gvk) => {
            let message = format!(
                "No multikueue adapter found for owner kind {}",
                go_quote(&gvk)
            );
            out.actions
                .push(check_update(check, check_state::REJECTED, &message, f.now));
            return out;
        }
        Owner::None => {
            let message = "No multikueue adapter found";
            out.actions
                .push(check_update(check, check_state::REJECTED, message, f.now));
            return out;
        }
    };
    // A deleted Workload's owner may be gone too: its answer would mislead.
    if !deleted {
        let Some(job) = f.local_job else {
            out.trouble = Some(Trouble::LocalJobMissing(job_name));
            return out;
        };
        if let Some(reason) = kind.unmanaged_reason(job) {
            let message = format!("The owner is not managed by Kueue: {reason}");
            out.actions
                .push(check_update(check, check_state::REJECTED, &message, f.now));
            return out;
        }
    }
    let mut pass = Pass {
        f,
        s,
        kind,
        job_name,
        check,
        copies: f.workers.iter().map(|w| w.workload).collect(),
        out,
    };
    if deleted {
        // Copies on lost workers are the garbage collector's once they
        // reconnect.
        for i in pass.connected() {
            pass.remove(i);
        }
        pass.forget_round();
        return pass.out;
    }
    pass.group();
    pass.out
}

/// Kueue's `updateACS`: the new state, the message with the state left
/// behind, the transition time moved only with the state.
fn check_update(old: &AdmissionCheckState, state: &str, message: &str, now: &Time) -> Action {
    let message = truncate(
        format!("{message}, Previously: {}", go_quote(&old.state)),
        MAX_CONDITION_MESSAGE,
    );
    Action::Local(LocalStatus {
        check: Some(checked(old, state, message, now)),
        ..LocalStatus::default()
    })
}

fn checked(
    old: &AdmissionCheckState,
    state: &str,
    message: String,
    now: &Time,
) -> AdmissionCheckState {
    let mut c = old.clone();
    if c.state != state {
        c.last_transition_time = now.clone();
    }
    c.state = state.to_string();
    c.message = message;
    c
}

impl<'a> Pass<'a, '_> {
    fn workers(&self) -> &'a [Worker<'a>] {
        self.f.workers
    }

    fn connected(&self) -> Vec<usize> {
        (0..self.workers().len())
            .filter(|&i| self.workers()[i].connected())
            .collect()
    }

    fn name(&self, i: usize) -> String {
        self.workers()[i].name.to_string()
    }

    /// Kueue's `RemoveRemoteObjects`: the job first (if it is this
    /// manager's), so a copy already collected does not strand it; then the
    /// copy.
    fn remove(&mut self, i: usize) {
        let w = &self.workers()[i];
        for job in self.remote_jobs(i) {
            if origin_of(job) == Some(self.s.origin) {
                self.out.actions.push(Action::DeleteRemoteJob {
                    cluster: w.name.to_string(),
                    name: name_of(job).to_string(),
                });
            }
        }
        if self.copies[i].is_some() {
            self.out.actions.push(Action::DeleteRemoteWorkload {
                cluster: w.name.to_string(),
                name: self.f.local.metadata.name.clone().unwrap_or_default(),
            });
            self.copies[i] = None;
        }
    }

    /// The connected copy with `ty` True that got there first. Once the
    /// Workload has a `clusterName`, only that worker's copy counts: a copy
    /// left on a worker that was lost and came back (its Workload since
    /// requeued and run elsewhere) is stale, and would otherwise win by
    /// being older and have the running one deleted (Kueue's
    /// `bestMatchByCondition` does not look at the name).
    fn first_with(&self, ty: &str) -> Option<(usize, Condition)> {
        let chosen = self
            .f
            .local
            .status
            .as_ref()
            .and_then(|s| s.cluster_name.as_deref());
        let mut best: Option<(usize, Condition)> = None;
        for (i, copy) in self.copies.iter().enumerate() {
            if !self.workers()[i].connected() {
                continue;
            }
            if chosen.is_some_and(|c| c != self.workers()[i].name) {
                continue;
            }
            let Some(c) = copy.and_then(|wl| conditions(wl).get(ty).cloned()) else {
                continue;
            };
            if c.status != "True" {
                continue;
            }
            if best
                .as_ref()
                .is_none_or(|(_, b)| c.last_transition_time.0 < b.last_transition_time.0)
            {
                best = Some((i, c));
            }
        }
        best
    }

    /// The incremental dispatcher drops a remembered round once the
    /// Workload no longer dispatches (Kueue's `clearRoundStartTime`).
    fn forget_round(&mut self) {
        let incremental = matches!(self.s.dispatcher, Dispatcher::Incremental { .. });
        if incremental && self.f.round_started.is_some() {
            self.out.actions.push(Action::ForgetRound);
        }
    }

    fn elastic(&self) -> bool {
        annotation(self.f.local, keys::ELASTIC_JOB_ANNOTATION) == Some(ELASTIC_ENABLED)
    }

    fn event(&mut self, warning: bool, message: &str) {
        self.out.actions.push(Action::Event {
            warning,
            reason: EVENT_REASON,
            message: truncate(message.to_string(), MAX_EVENT_MESSAGE),
        });
    }

    fn retry(&mut self, message: &str) {
        let a = check_update(self.check, check_state::RETRY, message, self.f.now);
        self.out.actions.push(a);
    }

    /// Kueue's `reconcileGroup`.
    fn group(&mut self) {
        let local = self.f.local;
        let conds = conditions(local);
        let finished = conds.is_true(condition::FINISHED);
        let reserved = conds.is_true(condition::QUOTA_RESERVED);
        let elastic = self.elastic();
        let replaced = crate::jobs::slices::replaced(local);
        let scaled_up = annotation(local, keys::SLICE_REPLACEMENT_FOR_ANNOTATION).is_some();

        // An elastic slice replaced by its successor, or one scaling up
        // before its quota: the successor owns the copies.
        if elastic && ((finished && replaced) || (!finished && !reserved && scaled_up)) {
            return;
        }

        if finished || !reserved {
            for i in 0..self.workers().len() {
                if self.workers()[i].connected() {
                    self.remove(i);
                }
            }
            if self.workers().iter().any(|w| !w.connected()) {
                self.out.requeue_after = Some(self.s.worker_lost_timeout);
            }
            self.forget_round();
            return;
        }

        if let Some((i, done)) = self.first_with(condition::FINISHED) {
            self.remote_finished(i, done, elastic);
            return;
        }

        if let Some((i, _)) = self.first_with(condition::EVICTED) {
            if conds.is_true(condition::EVICTED) {
                // Evicted here too: mirror the worker's job status back.
                if self.owned_job_or_trouble(i) && self.sync_job(i) {
                    self.out.requeue_after = Some(SYNC_DEFERRED_REQUEUE);
                }
                return;
            }
            if self.check.state == check_state::READY {
                let cluster = local
                    .status
                    .as_ref()
                    .and_then(|s| s.cluster_name.clone())
                    .unwrap_or_default();
                let message = format!(
                    "Workload evicted on worker cluster: {}, resetting for re-admission. Previously: {}",
                    go_quote(&cluster),
                    go_quote(&self.check.state)
                );
                let c = checked(self.check, check_state::RETRY, message.clone(), self.f.now);
                self.out.actions.push(Action::Local(LocalStatus {
                    check: Some(c),
                    ..LocalStatus::default()
                }));
                self.out.actions.push(Action::Event {
                    warning: false,
                    reason: EVENT_REASON,
                    message,
                });
                return;
            }
        }

        self.out_of_sync(elastic);

        match self.first_with(condition::ADMITTED) {
            None if self.check.state == check_state::READY => self.admitting_gone(),
            None => self.nominate(elastic),
            Some((i, _)) => self.admitted(i),
        }
    }

    /// A worker's copy finished.
    fn remote_finished(&mut self, i: usize, done: Condition, elastic: bool) {
        // OutOfSync is a failed sync, not a finished job: dispatch again
        // (elastic Workloads use it for slice replacement).
        if done.reason == finished_reason::OUT_OF_SYNC && !elastic {
            if self.check.state != check_state::READY {
                return;
            }
            let message = format!(
                "Remote workload on worker cluster {} is out of sync with its user job, resetting for re-dispatch",
                go_quote(self.workers()[i].name)
            );
            let a = check_update(self.check, check_state::RETRY, &message, self.f.now);
            if let Action::Local(LocalStatus { check: Some(c), .. }) = &a {
                let m = c.message.clone();
                self.out.actions.push(a);
                self.event(true, &m);
            }
            return;
        }
        if !self.owned_job_or_trouble(i) {
            return;
        }
        let _ = self.sync_job(i);
        if self.out.trouble.is_some() {
            return;
        }
        let mut conds = conditions(self.f.local);
        let message = truncate(done.message.clone(), MAX_CONDITION_MESSAGE);
        conds.set(
            condition::FINISHED,
            true,
            &done.reason,
            &message,
            self.f.now,
            self.f.local.metadata.generation,
        );
        let finished = conds.get(condition::FINISHED).cloned();
        self.out.actions.push(Action::Local(LocalStatus {
            finished,
            ..LocalStatus::default()
        }));
    }

    /// Copies whose spec drifted from the local one are removed, but for a
    /// priority change or an elastic scale-down, which the copy takes.
    fn out_of_sync(&mut self, elastic: bool) {
        let local = self.f.local;
        for i in 0..self.workers().len() {
            if !self.workers()[i].connected() {
                continue;
            }
            let Some(copy) = self.copies[i] else {
                continue;
            };
            if !spec_out_of_sync(&local.spec, &copy.spec) {
                continue;
            }
            let mut spec = copy.spec.clone();
            let mut update = false;
            let (before, after) = (pod_set_counts(copy), pod_set_counts(local));
            if elastic && fewer(&after, &before) && !fewer(&before, &after) {
                spec = local.spec.clone();
                update = true;
            }
            if priority_changed(&copy.spec, &local.spec) {
                spec.priority_class_ref = local.spec.priority_class_ref.clone();
                spec.priority = local.spec.priority;
                update = true;
            }
            if update {
                self.out.actions.push(Action::UpdateRemoteWorkloadSpec {
                    cluster: self.name(i),
                    spec: Box::new(spec),
                });
                continue;
            }
            self.remove(i);
        }
    }

    /// The check is Ready but no copy is admitted.
    fn admitting_gone(&mut self) {
        let admitting = self
            .f
            .local
            .status
            .as_ref()
            .and_then(|s| s.cluster_name.clone())
            .unwrap_or_default();
        let lost = self
            .workers()
            .iter()
            .find(|w| w.name == admitting && !w.connected());
        if let (false, Some(w)) = (admitting.is_empty(), lost) {
            // Likely still running there: wait out the grace from when the
            // connection went.
            let since = match &w.link {
                Link::Lost(Some(t)) => t.clone(),
                _ => self.f.now.clone(),
            };
            let waited = millis_between(&since, self.f.now);
            let grace = i64::try_from(self.s.worker_lost_timeout.as_millis()).unwrap_or(i64::MAX);
            if grace - waited > 0 {
                let left = Duration::from_millis((grace - waited).unsigned_abs());
                self.out.requeue_after = Some(left);
                return;
            }
            self.retry("Admitting remote lost");
            return;
        }
        if admitting.is_empty() {
            self.retry(
                "Admission check is Ready but no admitting cluster is recorded; this is unexpected, please report it",
            );
            return;
        }
        self.retry("Admitting remote no longer exists");
    }

    /// Worker `i` admitted the copy: it alone keeps one, the job runs there.
    fn admitted(&mut self, i: usize) {
        for j in 0..self.workers().len() {
            if j != i && self.workers()[j].connected() && self.copies[j].is_some() {
                self.remove(j);
            }
        }
        let conds = conditions(self.f.local);
        if conds.is_true(condition::QUOTA_RESERVED) {
            if let Some(evicted) = conds.get(condition::EVICTED).filter(|c| c.status == "True") {
                // Evicted here: have the worker deactivate its copy.
                let copy_generation = self.copies[i].and_then(|c| c.metadata.generation);
                let message = truncate(
                    format!("Evicted on manager: {}", evicted.message),
                    MAX_CONDITION_MESSAGE,
                );
                let mut target = self.copies[i].map(conditions).unwrap_or_default();
                // Already asked: nothing to write.
                let changed = target.set(
                    condition::DEACTIVATION_TARGET,
                    true,
                    EVICTED_ON_MANAGER_CLUSTER,
                    &message,
                    self.f.now,
                    copy_generation,
                );
                let condition = target.get(condition::DEACTIVATION_TARGET).cloned();
                if let Some(condition) = condition.filter(|_| changed) {
                    self.out.actions.push(Action::DeactivateRemoteWorkload {
                        cluster: self.name(i),
                        condition,
                    });
                }
                return;
            }
        }
        if !self.owned_job_or_trouble(i) {
            return;
        }
        let deferred = self.sync_job(i);
        if self.out.trouble.is_some() {
            return;
        }
        let admission = self.delayed_topology_ready(i);
        let state = self.check.state.as_str();
        let needs_check = state != check_state::RETRY && state != check_state::REJECTED;
        if !needs_check && admission.is_some() {
            self.out.actions.push(Action::Local(LocalStatus {
                admission,
                ..LocalStatus::default()
            }));
        } else if needs_check {
            let cluster = self.name(i);
            let message = format!("The workload was admitted on {}", go_quote(&cluster));
            let current = self
                .f
                .local
                .status
                .as_ref()
                .and_then(|s| s.cluster_name.clone());
            if let Some(set) = current.as_ref().filter(|c| **c != cluster) {
                self.out.trouble = Some(Trouble::ClusterNameImmutable {
                    from: set.clone(),
                    to: cluster,
                });
                return;
            }
            let nominated = self
                .f
                .local
                .status
                .as_ref()
                .and_then(|s| s.nominated_cluster_names.clone())
                .unwrap_or_default();
            let c = checked(self.check, check_state::READY, message.clone(), self.f.now);
            // Kueue writes this, and records the event, on every pass (each
            // status change of the worker's job); batchgate only when the
            // check changes: an Event write per pass was a sixth of the
            // manager's requests per Workload (BENCHMARKS.md).
            if c != *self.check || current.is_none() || !nominated.is_empty() || admission.is_some()
            {
                let changed = c != *self.check;
                self.out.actions.push(Action::Local(LocalStatus {
                    check: Some(c),
                    cluster_name: current.is_none().then(|| cluster.clone()),
                    nominated: (!nominated.is_empty()).then(Vec::new),
                    finished: None,
                    admission,
                }));
                if changed {
                    self.event(false, &message);
                }
                if current.is_none() {
                    self.wake_components();
                }
            }
        }
        self.out.requeue_after = Some(if deferred {
            SYNC_DEFERRED_REQUEUE
        } else {
            self.s.worker_lost_timeout
        });
    }

    /// The local admission with its pending delayed topology requests
    /// turned Ready for the pod sets worker `i` placed, when Kueue's
    /// `needsDelayedTopologyUpdate` holds (a placed pod set whose local
    /// assignment has no topology yet or still waits).
    fn delayed_topology_ready(&self, i: usize) -> Option<api::Admission> {
        let mut admission = self.f.local.status.as_ref()?.admission.clone()?;
        let remote = self.copies[i]?.status.as_ref()?.admission.as_ref()?;
        let mut needed = false;
        for placed in remote.pod_set_assignments.iter().flatten() {
            if placed.topology_assignment.is_none() {
                continue;
            }
            let Some(mine) = admission
                .pod_set_assignments
                .iter_mut()
                .flatten()
                .find(|p| p.name == placed.name)
            else {
                continue;
            };
            let pending = mine.delayed_topology_request.as_deref() == Some(DELAYED_PENDING);
            needed |= mine.topology_assignment.is_none() || pending;
            if pending {
                mine.delayed_topology_request = Some(DELAYED_READY.to_string());
            }
        }
        needed.then_some(admission)
    }

    /// Kueue's `ValidateRemoteObjectOwnership`: a job of the same name on
    /// the worker must carry this manager's origin.
    fn owned_job_or_trouble(&mut self, i: usize) -> bool {
        let w = &self.workers()[i];
        match self
            .remote_jobs(i)
            .into_iter()
            .find(|job| origin_of(job) != Some(self.s.origin))
        {
            Some(job) => {
                self.out.trouble = Some(Trouble::RemoteJobNotOwned {
                    cluster: w.name.to_string(),
                    kind: self.kind.kind.to_string(),
                    name: name_of(job).to_string(),
                    origin: self.s.origin.to_string(),
                });
                false
            }
            None => true,
        }
    }

    /// What worker `i` holds of the job: its pods of the group, or the job.
    fn remote_jobs(&self, i: usize) -> Vec<&'a Value> {
        let w = &self.workers()[i];
        if w.members.is_empty() {
            w.job.into_iter().collect()
        } else {
            w.members.iter().collect()
        }
    }

    /// The adapter's `SyncJob` against worker `i`. Returns whether the
    /// status copy is deferred.
    fn sync_job(&mut self, i: usize) -> bool {
        let Some(local_job) = self.f.local_job else {
            self.out.trouble = Some(Trouble::LocalJobMissing(self.job_name.clone()));
            return false;
        };
        let locals: Vec<&Value> = if self.f.local_members.is_empty() {
            vec![local_job]
        } else {
            self.f.local_members.iter().collect()
        };
        let remotes = self.remote_jobs(i);
        let cluster = self.name(i);
        let wl_name = self.f.local.metadata.name.as_deref().unwrap_or_default();
        let mut deferred = false;
        for local in locals {
            let name = name_of(local);
            let remote = remotes.iter().copied().find(|r| name_of(r) == name);
            let sync = self.kind.sync(
                local,
                remote,
                wl_name,
                self.s.origin,
                self.s.identifier_annotations,
                self.f.now,
            );
            match sync {
                JobSync::Create(job) => {
                    let cluster = cluster.clone();
                    self.out
                        .actions
                        .push(Action::CreateRemoteJob { cluster, job });
                }
                JobSync::CopyStatus {
                    status,
                    deferred: d,
                } => {
                    let name = name.to_string();
                    self.out
                        .actions
                        .push(Action::CopyJobStatus { name, status });
                    deferred |= d;
                }
                JobSync::InSync { deferred: d } => deferred |= d,
            }
            let ids = self.s.identifier_annotations;
            // An elastic job's counts first, as Kueue's Ray adapter does;
            // its other synced fields on a later pass.
            if let Some(patch) = remote.and_then(|r| {
                self.kind
                    .elastic_sync(local, r, wl_name, ids)
                    .or_else(|| self.kind.spec_sync(local, r))
            }) {
                self.out.actions.push(Action::PatchRemoteJob {
                    cluster: cluster.clone(),
                    name: name.to_string(),
                    patch,
                });
            }
        }
        deferred
    }

    /// Kueue's `cloneForCreate`: the local Workload's name, namespace,
    /// labels (but the job's UID) and annotations, the origin, the spec.
    fn copy(&self) -> api::Workload {
        let local = self.f.local;
        let mut labels = local.metadata.labels.clone().unwrap_or_default();
        labels.remove(keys::JOB_UID_LABEL);
        labels.insert(ORIGIN_LABEL.into(), self.s.origin.to_string());
        let mut wl = api::Workload::new(
            local.metadata.name.as_deref().unwrap_or_default(),
            local.spec.clone(),
        );
        wl.metadata.namespace = local.metadata.namespace.clone();
        wl.metadata.labels = Some(labels);
        wl.metadata.annotations = local.metadata.annotations.clone();
        wl
    }

    /// Nominate workers and keep copies on exactly the nominated ones
    /// (Kueue's `nominateAndSynchronizeWorkers`).
    fn nominate(&mut self, elastic: bool) {
        let status = self.f.local.status.clone().unwrap_or_default();
        // Only a Pending check nominates, and not while an eviction still
        // holds the cluster name (an elastic slice keeps its cluster).
        if self.check.state != check_state::PENDING || (!elastic && status.cluster_name.is_some()) {
            return;
        }
        // Kueue's incremental dispatcher is its own controller and
        // nominates before the other checks are Ready (only the copies
        // wait); here nomination waits with them, so no round runs out
        // while nothing can be dispatched.
        let others_ready = status
            .admission_checks
            .iter()
            .flatten()
            .filter(|c| c.name != self.check.name)
            .all(|c| c.state == check_state::READY);
        if !others_ready {
            return;
        }
        if self.kind.components.is_some() {
            match self.components() {
                Components::Wait => return,
                Components::Join(cluster) => return self.join(&cluster),
                Components::Lead => {}
            }
        }
        let current = status.nominated_cluster_names.clone().unwrap_or_default();
        let nominated: Vec<String> = match (&status.cluster_name, &self.s.dispatcher) {
            (Some(cluster), _) if elastic && !cluster.is_empty() => vec![cluster.clone()],
            (_, Dispatcher::AllAtOnce) => {
                let all: Vec<String> = self.connected().into_iter().map(|i| self.name(i)).collect();
                let (mut a, mut b) = (all.clone(), current.clone());
                a.sort();
                b.sort();
                if a != b {
                    self.out.actions.push(Action::Local(LocalStatus {
                        nominated: Some(all.clone()),
                        ..LocalStatus::default()
                    }));
                }
                all
            }
            (
                _,
                Dispatcher::Incremental {
                    step_size,
                    round_timeout,
                },
            ) => {
                let clusters: Vec<&str> = self.workers().iter().map(|w| w.name).collect();
                let round = next_round(
                    &current,
                    &clusters,
                    *step_size,
                    *round_timeout,
                    self.f.round_started,
                    self.f.now,
                );
                match round {
                    Round::InProgress(left) => {
                        self.out.requeue_after = Some(left);
                        current
                    }
                    Round::Next(next) => {
                        self.out.actions.push(Action::Local(LocalStatus {
                            nominated: Some(next.clone()),
                            ..LocalStatus::default()
                        }));
                        self.out.actions.push(Action::RoundStarted);
                        next
                    }
                    Round::NoMoreWorkers => current,
                }
            }
            (_, Dispatcher::External(_)) => current,
        };
        let missing: Vec<String> = nominated
            .iter()
            .filter(|n| {
                !self
                    .workers()
                    .iter()
                    .any(|w| w.name == n.as_str() && w.connected())
            })
            .cloned()
            .collect();
        self.copies_on(&nominated);
        if !missing.is_empty() {
            self.out.trouble = Some(Trouble::NominatedClustersNotConnected(missing));
        }
    }

    /// A copy on each connected worker named in `on` that lacks one; the
    /// other connected workers' copies removed.
    fn copies_on(&mut self, on: &[String]) {
        for i in self.connected() {
            let name = self.workers()[i].name;
            if on.iter().any(|n| n == name) {
                if self.copies[i].is_none() {
                    let workload = Box::new(self.copy());
                    self.out.actions.push(Action::CreateRemoteWorkload {
                        cluster: name.to_string(),
                        workload,
                    });
                }
            } else if self.copies[i].is_some() {
                self.remove(i);
            }
        }
    }
}

/// Where a Workload of an owner of several goes (Kueue's
/// `nominateAndSynchronizeWorkers` for a `MultiKueueMultiWorkloadAdapter`).
enum Components {
    /// Not all of them exist yet, or another one leads.
    Wait,
    /// Another one is on this worker: there alone.
    Join(String),
    /// The first by index, none placed yet: nominated as any Workload.
    Lead,
}

fn component_index(wl: &api::Workload) -> Option<i64> {
    annotation(wl, keys::COMPONENT_WORKLOAD_INDEX_ANNOTATION)?
        .parse()
        .ok()
        .filter(|i: &i64| *i >= 0)
}

impl<'a> Pass<'a, '_> {
    /// Kueue's rules for the owner's Workloads: all of them exist before
    /// any is dispatched, they go where one already went, and the one of
    /// the lowest index chooses for them.
    /// The owner's Workloads but this one.
    fn other_components(&self) -> Vec<&'a api::Workload> {
        let name = self.f.local.metadata.name.as_deref();
        self.f
            .components
            .iter()
            .copied()
            .filter(|w| w.metadata.name.as_deref() != name)
            .collect()
    }

    fn components(&mut self) -> Components {
        let local = self.f.local;
        let others = self.other_components();
        let expected = self
            .kind
            .components
            .as_deref()
            .and_then(|p| self.f.local_job.and_then(|j| j.at(p)))
            .and_then(Value::as_i64)
            .unwrap_or(1);
        if ((others.len() + 1) as i64) < expected {
            return Components::Wait;
        }
        let mut placed: Option<&str> = None;
        for w in &others {
            let Some(c) = w
                .status
                .as_ref()
                .and_then(|s| s.cluster_name.as_deref())
                .filter(|c| !c.is_empty())
            else {
                continue;
            };
            if let Some(p) = placed.filter(|p| *p != c) {
                self.out.trouble = Some(Trouble::ComponentsSplit(p.to_string(), c.to_string()));
                return Components::Wait;
            }
            placed = Some(c);
        }
        if let Some(c) = placed {
            return Components::Join(c.to_string());
        }
        let mine = component_index(local);
        let lead = others
            .iter()
            .filter_map(|w| component_index(w).map(|i| (i, *w)))
            .min_by_key(|(i, _)| *i);
        match (mine, lead) {
            (Some(m), Some((i, _))) if i < m => {}
            (Some(_), _) => return Components::Lead,
            (None, _) => {}
        }
        // The leader is told the group is whole (it may have looked before
        // this one existed).
        if let Some((_, w)) = lead {
            let name = w.metadata.name.clone().unwrap_or_default();
            self.out.actions.push(Action::Wake(vec![name]));
        }
        Components::Wait
    }

    /// Kueue's `syncToSingleCluster`: nominated to `cluster` alone, the
    /// copy there and nowhere else.
    fn join(&mut self, cluster: &str) {
        if !self
            .connected()
            .into_iter()
            .any(|i| self.workers()[i].name == cluster)
        {
            self.out.trouble = Some(Trouble::AssignedClusterUnavailable(cluster.to_string()));
            return;
        }
        let nominated = self
            .f
            .local
            .status
            .as_ref()
            .and_then(|s| s.nominated_cluster_names.as_ref());
        if !nominated.is_some_and(|n| n.iter().any(|c| c == cluster)) {
            self.out.actions.push(Action::Local(LocalStatus {
                nominated: Some(vec![cluster.to_string()]),
                ..LocalStatus::default()
            }));
        }
        self.copies_on(&[cluster.to_string()]);
    }

    /// The owner's other Workloads not placed yet, once this one is
    /// admitted on a worker: they follow it there.
    fn wake_components(&mut self) {
        if self.kind.components.is_none() {
            return;
        }
        let waiting: Vec<String> = self
            .other_components()
            .into_iter()
            .filter(|w| w.status.as_ref().is_none_or(|s| s.cluster_name.is_none()))
            .filter_map(|w| w.metadata.name.clone())
            .collect();
        if !waiting.is_empty() {
            self.out.actions.push(Action::Wake(waiting));
        }
    }
}

impl fmt::Display for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dispatcher::AllAtOnce => f.write_str(ALL_AT_ONCE),
            Dispatcher::Incremental { .. } => f.write_str(INCREMENTAL),
            Dispatcher::External(name) => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests;
