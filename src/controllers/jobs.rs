//! The job reconciler, one per integration policy (Kueue's
//! `ReconcileGenericJob`): for a job with a queue name it creates the
//! Workload and keeps it in step; once the Workload is admitted it starts
//! the job with its pod sets' flavors; when the Workload is evicted it
//! stops the job, restores its templates and only then gives the quota
//! back; when the job finishes it marks the Workload finished. Everything
//! kind-specific comes from the policy, so a new kind needs no code here.

use std::{sync::Arc, time::Duration};

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    api::{DeleteParams, DynamicObject, Patch, Preconditions},
    core::{ApiResource, GroupVersionKind},
    runtime::{
        controller::Action,
        events::{Event as KEvent, EventType},
        reflector::{self, ObjectRef, Store},
        watcher, WatchStreamExt,
    },
    Api, Client, ResourceExt,
};
use serde_json::{json, Value};
use tracing::{debug, info, warn};

use super::{
    context::{
        admission_pod_set_infos, create_workload, finish_failed_to_start, params, release,
        remove_workload_finalizer, served, write_workload_status, JobError, Shared,
    },
    translation::Conditions,
};
use crate::vocabulary::{
    keys::{self, QUEUE_NAME_LABEL},
    patch::PatchOp,
};
use crate::{
    api::{
        appwrapper::v1beta2::AppWrapper,
        kueue::v1beta2::{self as api, condition},
    },
    appwrapper::{APPWRAPPER_API_VERSION, APPWRAPPER_KIND},
    jobs::{
        execution,
        policy::{Policy, PolicySet, Progress},
        readiness::{self, Expiry, Settings as Readiness, Timeout},
        reference::ReferenceError,
        workload::{self, JobPodSet, PodSetInfo, PriorityClasses},
    },
};

struct Ctx {
    shared: Shared,
    policy: Arc<Policy>,
    resource: ApiResource,
    /// Every integrated kind, to recognise a job whose parent is one.
    policies: PolicySet,
    /// waitForPodsReady in force (`None`: turned off).
    readiness: Option<Arc<Readiness>>,
}

/// Starts a reconciler for every policy (on `shared`, its stores already
/// read) and the Workload watch that wakes them and the AppWrapper
/// controller (through `appwrappers`); runs until the process ends.
/// `gated`: the wake-ups of the reconcilers of gated kinds (pods), which
/// run on their own: their Workloads' changes are sent there.
pub async fn run(
    shared: Shared,
    policies: PolicySet,
    appwrappers: futures::channel::mpsc::UnboundedSender<ObjectRef<AppWrapper>>,
    readiness: Option<Readiness>,
    gated: Vec<(
        ApiResource,
        futures::channel::mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
    )>,
) {
    let readiness = readiness.map(Arc::new);
    let client = shared.client.clone();
    let mut all = Vec::new();
    let mut triggers = OwnerTriggers::default();
    triggers.kinds.extend(gated);
    for policy in policies
        .iter()
        .filter(|p| p.gate.is_none() && p.pod_owner.is_none())
    {
        let t = &policy.target;
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&t.group, &t.version, &t.kind),
            &t.resource,
        );
        let jobs = Api::<DynamicObject>::all_with(client.clone(), &resource);
        let ctx = Arc::new(Ctx {
            shared: shared.clone(),
            policy: policy.clone(),
            resource: resource.clone(),
            policies: policies.clone(),
            readiness: readiness.clone(),
        });
        let name = policy.name.clone();
        // A kind whose CRD is not installed yet has nothing to reconcile;
        // its reconciler starts once the kind is served (Kueue's WaitForAPI).
        let served = served(jobs.clone(), name.clone());
        let (wake, wakes) = triggers.add(resource.clone());
        let controller =
            crate::cluster::watch::controller(jobs, watcher::Config::default(), resource.clone())
                .reconcile_on(wakes);
        triggers.resync.push(Resync {
            policy: policy.clone(),
            resource,
            jobs: controller.store(),
            wake,
        });
        let fut = controller
            .run(reconcile, error_policy, ctx)
            .for_each(move |r| {
                if let Err(e) = r {
                    debug!(integration = %name, error = %e, "reconcile");
                }
                futures::future::ready(())
            });
        all.push(tokio::spawn(async move {
            served.await;
            fut.await
        }));
    }
    triggers.appwrappers = Some(appwrappers);
    triggers.policies = policies;
    tokio::spawn(triggers.run(shared.clone()));
    for h in all {
        let _ = h.await;
    }
}

/// How often the backstop looks for queued jobs without a Workload
/// ([`crate::jobs::resync`]), and how long a job may go without one before
/// it is found: past the reconciler's own retries.
const RESYNC_EVERY: Duration = Duration::from_secs(60);
const RESYNC_GRACE: Duration = Duration::from_secs(30);

/// One job kind as the backstop sees it.
struct Resync {
    policy: Arc<Policy>,
    resource: ApiResource,
    jobs: Store<DynamicObject>,
    wake: futures::channel::mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
}

/// One metadata-only watch of Workloads wakes the reconciler of each
/// Workload's owner. `.owns()` per reconciler would open one full watch of
/// every Workload per integrated kind — the same events decoded N times
/// here and served N times by the apiserver. Its store (without
/// managedFields) also tells the backstop which jobs own a Workload.
#[derive(Default)]
struct OwnerTriggers {
    kinds: Vec<(
        ApiResource,
        futures::channel::mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
    )>,
    /// The AppWrapper controller's wake-ups (its Workloads are owned by
    /// AppWrappers, a kind without a policy).
    appwrappers: Option<futures::channel::mpsc::UnboundedSender<ObjectRef<AppWrapper>>>,
    /// The job kinds the backstop looks through.
    resync: Vec<Resync>,
    policies: PolicySet,
}

impl OwnerTriggers {
    /// The wake-ups for jobs of `resource`. Unbounded: a kind whose
    /// reconciler waits for its CRD has no jobs, so nothing piles up.
    fn add(
        &mut self,
        resource: ApiResource,
    ) -> (
        futures::channel::mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
        futures::channel::mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>,
    ) {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        self.kinds.push((resource, tx.clone()));
        (tx, rx)
    }

    async fn run(self, shared: Shared) {
        let client = shared.client.clone();
        let writer = reflector::store::Writer::default();
        let workloads = writer.as_reader();
        let mut health = crate::cluster::watch::Health::new("workloads.kueue.x-k8s.io");
        let stream = watcher(
            Api::<kube::core::PartialObjectMeta<api::Workload>>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .modify(|w| w.metadata.managed_fields = None)
        .reflect(writer)
        .touched_objects();
        futures::pin_mut!(stream);
        let mut tick = tokio::time::interval(RESYNC_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut reported = std::collections::HashSet::new();
        loop {
            let ev = tokio::select! {
                ev = stream.next() => ev,
                _ = tick.tick() => {
                    if shared.leads() {
                        self.resync(&workloads, &mut reported);
                    }
                    continue;
                }
            };
            let Some(ev) = ev else { return };
            let wl = match ev {
                Ok(wl) => {
                    health.delivered();
                    wl
                }
                Err(e) => {
                    health.failed(&e);
                    continue;
                }
            };
            // A pod group's Workload has its pods as plain owners (no
            // controller): the first one wakes the group's reconciler.
            let owners = wl.metadata.owner_references.iter().flatten();
            let (Some(ns), Some(owner)) = (
                wl.metadata.namespace.as_deref(),
                owners
                    .clone()
                    .find(|o| o.controller == Some(true))
                    .or_else(|| owners.clone().next()),
            ) else {
                continue;
            };
            if owner.api_version == APPWRAPPER_API_VERSION && owner.kind == APPWRAPPER_KIND {
                if let Some(tx) = &self.appwrappers {
                    let _ = tx.unbounded_send(ObjectRef::new(&owner.name).within(ns));
                }
                continue;
            }
            for (resource, tx) in &self.kinds {
                if resource.api_version == owner.api_version && resource.kind == owner.kind {
                    let _ = tx.unbounded_send(
                        ObjectRef::new_with(&owner.name, resource.clone()).within(ns),
                    );
                    if wl.metadata.deletion_timestamp.is_some() {
                        // A job that is gone is never reconciled again: its
                        // Workload is let go here.
                        let (shared, resource, owner, meta) = (
                            shared.clone(),
                            resource.clone(),
                            owner.clone(),
                            wl.metadata.clone(),
                        );
                        tokio::spawn(async move {
                            let _ = shared.leading().await;
                            release_orphan(shared.client.clone(), resource, owner, meta).await
                        });
                    }
                }
            }
        }
    }
}

impl OwnerTriggers {
    /// The backstop: every queued job that has gone [`RESYNC_GRACE`]
    /// without a Workload is counted, logged (once a job at info) and its
    /// reconciler woken. Nothing is read from the API: the controllers'
    /// stores and the Workload store have what it needs.
    fn resync(
        &self,
        workloads: &Store<kube::core::PartialObjectMeta<api::Workload>>,
        reported: &mut std::collections::HashSet<String>,
    ) {
        // Before the first list every job would look orphaned.
        if workloads.wait_until_ready().now_or_never().is_none() {
            return;
        }
        let all = workloads.state();
        let owners: std::collections::HashSet<&str> = all
            .iter()
            .flat_map(|w| w.metadata.owner_references.iter().flatten())
            .map(|o| o.uid.as_str())
            .collect();
        let now = k8s_openapi::jiff::Timestamp::now().as_millisecond();
        let grace = RESYNC_GRACE.as_millis() as i64;
        for kind in &self.resync {
            for job in kind.jobs.state() {
                // Cheap checks first: most jobs own a Workload.
                let uid = job.metadata.uid.as_deref().unwrap_or_default();
                if owners.contains(uid) || !job.labels().contains_key(QUEUE_NAME_LABEL) {
                    continue;
                }
                let Ok(value) = serde_json::to_value(&*job) else {
                    continue;
                };
                if !crate::jobs::resync::needs_workload(
                    &kind.policy,
                    &self.policies,
                    &value,
                    &owners,
                    now,
                    grace,
                ) {
                    continue;
                }
                crate::cluster::watch::found_by_resync(&kind.policy.name);
                let (ns, name) = (job.namespace().unwrap_or_default(), job.name_any());
                if reported.insert(uid.to_string()) {
                    info!(integration = %kind.policy.name, namespace = %ns, job = %name, "queued job without a Workload found by the resync; reconciling it");
                } else {
                    debug!(integration = %kind.policy.name, namespace = %ns, job = %name, "queued job still without a Workload");
                }
                let _ = kind
                    .wake
                    .unbounded_send(ObjectRef::new_with(&name, kind.resource.clone()).within(&ns));
            }
        }
    }
}

/// Removes the `resource-in-use` finalizer of a Workload being deleted
/// whose job no longer exists (jobframework's `finalizeWorkloads` for a
/// job that is not found).
async fn release_orphan(
    client: Client,
    resource: ApiResource,
    owner: k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
    meta: kube::api::ObjectMeta,
) {
    let held = meta
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == keys::RESOURCE_IN_USE_FINALIZER);
    let Some(ns) = meta.namespace.clone().filter(|_| held) else {
        return;
    };
    let jobs = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &resource);
    let gone = match jobs.get_metadata_opt(&owner.name).await {
        Ok(None) => true,
        Ok(Some(job)) => job.metadata.uid.as_deref() != Some(owner.uid.as_str()),
        Err(e) => {
            debug!(error = %e, "owner of a deleted Workload not read");
            false
        }
    };
    if gone {
        let api = Api::<api::Workload>::namespaced(client, &ns);
        if let Err(e) = remove_workload_finalizer(&api, &meta).await {
            warn!(error = %e, "resource-in-use finalizer of an orphaned Workload not removed");
        }
    }
}

fn error_policy(job: Arc<DynamicObject>, err: &JobError, _ctx: Arc<Ctx>) -> Action {
    warn!(job = %job.name_any(), namespace = job.namespace().unwrap_or_default(), error = %err, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(2))
}

impl Ctx {
    fn classes(&self) -> PriorityClasses {
        self.shared.classes()
    }

    async fn job_event(&self, job: &Value, type_: EventType, reason: &str, note: String) {
        let reference = ObjectReference {
            api_version: Some(self.policy.target.api_version()),
            kind: Some(self.policy.target.kind.clone()),
            name: job
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(String::from),
            namespace: job
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .map(String::from),
            uid: job
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(String::from),
            ..Default::default()
        };
        let ev = KEvent {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: reason.into(),
            secondary: None,
        };
        if let Err(e) = self.shared.recorder.publish(&ev, &reference).await {
            debug!(error = %e, "event not recorded");
        }
    }

    async fn patch_job(&self, ns: &str, name: &str, ops: &[PatchOp]) -> Result<bool, JobError> {
        if ops.is_empty() {
            return Ok(false);
        }
        let api =
            Api::<DynamicObject>::namespaced_with(self.shared.client.clone(), ns, &self.resource);
        let p: json_patch::Patch = serde_json::from_value(serde_json::to_value(ops)?)?;
        match api.patch(name, &params(), &Patch::<()>::Json(p)).await {
            Ok(_) => Ok(true),
            // The `test` of resourceVersion failed: the job changed; the
            // watch brings the new version and we decide again.
            Err(kube::Error::Api(e)) if e.code == 422 || e.code == 409 => {
                debug!(job = name, message = %e.message, "job changed under the patch");
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Suspends a job running without an admission (the webhook was
    /// bypassed, or the admission was taken back), as Kueue does.
    async fn stop_unadmitted(&self, ns: &str, name: &str, job: &Value) -> Result<(), JobError> {
        if self
            .patch_job(ns, name, &workload::suspend_patch(&self.policy, job))
            .await?
        {
            self.job_event(
                job,
                EventType::Normal,
                "Stopped",
                "Not admitted by cluster queue".into(),
            )
            .await;
        }
        Ok(())
    }

    /// Puts a suspended job's templates back as its Workload recorded them
    /// (clearing the status fields that block it first). `Some` with when
    /// to look again while there was something to do.
    async fn restore_templates(
        &self,
        ns: &str,
        name: &str,
        job: &Value,
        wl: &api::Workload,
    ) -> Result<Option<Action>, JobError> {
        let restore = workload::restore_patch(&self.policy, job, &recorded_pod_sets(wl));
        if restore.is_empty() {
            return Ok(None);
        }
        if self.reset_status(ns, name, job).await? {
            return Ok(Some(Action::requeue(Duration::from_millis(100))));
        }
        self.patch_job(ns, name, &restore).await?;
        Ok(Some(Action::requeue(Duration::from_secs(1))))
    }

    /// Clears the policy's `reset` status fields of a suspended job, so its
    /// templates may be restored. `true` when a write was made.
    async fn reset_status(&self, ns: &str, name: &str, job: &Value) -> Result<bool, JobError> {
        let Some(rule) = &self.policy.status else {
            return Ok(false);
        };
        let mut status = serde_json::Map::new();
        for p in &rule.reset {
            if p.resolve(job).is_some_and(|v| !v.is_null()) {
                if let [first, leaf] = p.tokens() {
                    if first == "status" {
                        status.insert(leaf.clone(), Value::Null);
                    }
                }
            }
        }
        if status.is_empty() {
            return Ok(false);
        }
        let api =
            Api::<DynamicObject>::namespaced_with(self.shared.client.clone(), ns, &self.resource);
        let patch = json!({"status": status});
        match api
            .patch_status(name, &params(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Kueue's `reconcileMaxExecutionTime` for an admitted Workload: when
    /// to look again while time is left, and once it has run out, the
    /// Workload marked `DeactivationTarget` (its accumulated time cleared)
    /// with Kueue's Warning event.
    async fn check_execution_time(
        &self,
        api: &Api<api::Workload>,
        wl: &api::Workload,
        conds: &Conditions,
        now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    ) -> Result<Option<Duration>, JobError> {
        let (Some(max), Some(admitted)) = (
            wl.spec.maximum_execution_time_seconds,
            conds.get(condition::ADMITTED),
        ) else {
            return Ok(None);
        };
        if conds.is_true(condition::DEACTIVATION_TARGET) {
            return Ok(None);
        }
        let accumulated = wl
            .status
            .as_ref()
            .and_then(|s| s.accumulated_past_execution_time_seconds)
            .unwrap_or(0);
        let left = execution::remaining_ms(
            max,
            accumulated,
            admitted.last_transition_time.0.as_millisecond(),
            now.0.as_millisecond(),
        );
        if left > 0 {
            return Ok(Some(Duration::from_millis(left.unsigned_abs())));
        }
        let mut c = conds.clone();
        c.set(
            condition::DEACTIVATION_TARGET,
            true,
            execution::EXCEEDED_REASON,
            execution::EXCEEDED_MESSAGE,
            now,
            wl.metadata.generation,
        );
        let status = json!({"conditions": c.0, "accumulatedPastExecutionTimeSeconds": null});
        write_workload_status(api, wl, status).await?;
        let reference = ObjectReference {
            api_version: Some("kueue.x-k8s.io/v1beta2".into()),
            kind: Some("Workload".into()),
            name: wl.metadata.name.clone(),
            namespace: wl.metadata.namespace.clone(),
            uid: wl.metadata.uid.clone(),
            ..Default::default()
        };
        let ev = KEvent {
            type_: EventType::Warning,
            reason: execution::EXCEEDED_REASON.into(),
            note: Some(execution::exceeded_note(max)),
            action: execution::EXCEEDED_REASON.into(),
            secondary: None,
        };
        if let Err(e) = self.shared.recorder.publish(&ev, &reference).await {
            debug!(error = %e, "event not recorded");
        }
        Ok(None)
    }

    /// Kueue's jobframework steps 4 and 5: `status.reclaimablePods` from
    /// the job's status (its policy's `reclaimablePods`), then the
    /// `PodsReady` condition (its policy's `podsReady`, with waitForPodsReady
    /// on). Written only when changed; `true` when a write was made.
    async fn sync_readiness(
        &self,
        api: &Api<api::Workload>,
        wl: &api::Workload,
        job: &Value,
        conds: &Conditions,
        now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    ) -> Result<bool, JobError> {
        let Some(rule) = &self.policy.status else {
            return Ok(false);
        };
        let counts: Vec<(String, i64)> = wl
            .spec
            .pod_sets
            .iter()
            .flatten()
            .map(|ps| (ps.name.clone(), i64::from(ps.count)))
            .collect();
        if let Some(reclaim) = &rule.reclaimable_pods {
            let want = readiness::limit_reclaimable(&[reclaim.reclaimable(job)], &counts);
            let have: Vec<(String, i32)> = wl
                .status
                .as_ref()
                .and_then(|s| s.reclaimable_pods.as_ref())
                .into_iter()
                .flatten()
                .filter(|r| r.count > 0)
                .map(|r| (r.name.clone(), r.count))
                .collect();
            if want != have {
                let list: Vec<Value> = want
                    .iter()
                    .map(|(n, c)| json!({"name": n, "count": c}))
                    .collect();
                let value = if list.is_empty() {
                    Value::Null
                } else {
                    json!(list)
                };
                write_workload_status(api, wl, json!({ "reclaimablePods": value })).await?;
                return Ok(true);
            }
        }
        let (Some(_), Some(ready_rule)) = (&self.readiness, &rule.pods_ready) else {
            return Ok(false);
        };
        let admitted = conds.is_true(condition::ADMITTED);
        let current = conds.get(condition::PODS_READY);
        if !admitted && current.is_none() {
            // Kueue writes WaitForStart on every Workload; here it waits
            // for the first admission (one write less per Workload that
            // never runs; the timeout reads a missing condition the same).
            return Ok(false);
        }
        let total: i64 = counts.iter().map(|(_, c)| c).sum();
        let (status, reason, message) = readiness::pods_ready_condition(
            admitted,
            current.map(|c| (c.status == "True", c.reason.as_str())),
            ready_rule.ready(job) >= total,
        );
        let mut c = conds.clone();
        if !c.set(
            condition::PODS_READY,
            status,
            reason,
            message,
            now,
            wl.metadata.generation,
        ) {
            return Ok(false);
        }
        write_workload_status(api, wl, json!({"conditions": c.0})).await?;
        Ok(true)
    }

    /// Kueue's `reconcileNotReadyTimeout` for an admitted Workload of a kind
    /// that reports readiness: `After` while time is left; once it ran
    /// out, either `DeactivationTarget` (`RequeuingLimitExceeded`) or the
    /// eviction (`PodsReadyTimeout`, with `status.requeueState` moved on
    /// by the backoff), then `Done`.
    async fn check_pods_ready(
        &self,
        api: &Api<api::Workload>,
        wl: &api::Workload,
        conds: &Conditions,
        now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    ) -> Result<Option<Recheck>, JobError> {
        let (Some(settings), Some(_)) = (
            &self.readiness,
            self.policy
                .status
                .as_ref()
                .and_then(|s| s.pods_ready.as_ref()),
        ) else {
            return Ok(None);
        };
        if wl.spec.active == Some(false)
            || conds.is_true(condition::EVICTED)
            || conds.is_true(condition::DEACTIVATION_TARGET)
        {
            return Ok(None);
        }
        let ms = |t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time| t.0.as_millisecond();
        let admitted_at = conds
            .get(condition::ADMITTED)
            .filter(|c| c.status == "True")
            .map(|c| ms(&c.last_transition_time));
        let pods_ready = conds.get(condition::PODS_READY).map(|c| {
            (
                c.status == "True",
                c.reason.as_str(),
                ms(&c.last_transition_time),
            )
        });
        let now_ms = ms(now);
        let cause = match readiness::timeout(settings, admitted_at, pods_ready, now_ms) {
            Timeout::None => return Ok(None),
            Timeout::Running { left_ms, .. } => {
                return Ok(Some(Recheck::After(Duration::from_millis(
                    left_ms.unsigned_abs(),
                ))))
            }
            Timeout::Expired { cause } => cause,
        };
        let state = wl.status.as_ref().and_then(|s| s.requeue_state.as_ref());
        let expiry = readiness::on_expiry(
            settings,
            state.and_then(|r| r.count),
            state.and_then(|r| r.requeue_at.as_ref()).map(ms),
            now_ms,
            jitter(),
        );
        let mut c = conds.clone();
        match expiry {
            Expiry::Deactivate => {
                c.set(
                    condition::DEACTIVATION_TARGET,
                    true,
                    readiness::LIMIT_REASON,
                    readiness::LIMIT_MESSAGE,
                    now,
                    wl.metadata.generation,
                );
                write_workload_status(api, wl, json!({"conditions": c.0})).await?;
            }
            Expiry::Requeue { count, requeue_at } => {
                let (ns, name) = (
                    wl.metadata.namespace.as_deref().unwrap_or_default(),
                    wl.metadata.name.as_deref().unwrap_or_default(),
                );
                let message = readiness::timeout_message(ns, name);
                c.set(
                    condition::EVICTED,
                    true,
                    readiness::TIMEOUT_REASON,
                    &message,
                    now,
                    wl.metadata.generation,
                );
                let at = k8s_openapi::jiff::Timestamp::from_millisecond(requeue_at)
                    .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time)
                    .unwrap_or_else(|_| now.clone());
                let mut evictions = wl
                    .status
                    .as_ref()
                    .and_then(|s| s.scheduling_stats.as_ref())
                    .and_then(|s| s.evictions.clone())
                    .unwrap_or_default();
                match evictions
                    .iter_mut()
                    .find(|e| e.reason == readiness::TIMEOUT_REASON && e.underlying_cause == cause)
                {
                    Some(e) => e.count += 1,
                    None => evictions.push(api::WorkloadSchedulingStatsEviction {
                        reason: readiness::TIMEOUT_REASON.into(),
                        underlying_cause: cause.into(),
                        count: 1,
                    }),
                }
                let status = json!({
                    "conditions": c.0,
                    "requeueState": {"count": count, "requeueAt": at},
                    "schedulingStats": {"evictions": evictions},
                });
                write_workload_status(api, wl, status).await?;
                let reason = format!("{}DueTo{}", condition::EVICTED, readiness::TIMEOUT_REASON);
                self.workload_event(wl, EventType::Normal, &reason, message)
                    .await;
            }
        }
        Ok(Some(Recheck::Done))
    }

    /// Once `status.requeueState.requeueAt` has passed, the Workload may
    /// queue again: `requeueAt` is cleared and, after a `PodsReadyTimeout`
    /// eviction, `Requeued=True` (`BackoffFinished`), as Kueue's workload
    /// controller does. `Some` while there was something to wait for or
    /// write.
    async fn finish_backoff(
        &self,
        api: &Api<api::Workload>,
        wl: &api::Workload,
        conds: &Conditions,
        now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    ) -> Result<Option<Action>, JobError> {
        let Some(state) = wl.status.as_ref().and_then(|s| s.requeue_state.as_ref()) else {
            return Ok(None);
        };
        let Some(at) = &state.requeue_at else {
            return Ok(None);
        };
        if wl.spec.active == Some(false) {
            return Ok(None);
        }
        let left = at.0.as_millisecond() - now.0.as_millisecond();
        if left > 0 {
            return Ok(Some(Action::requeue(Duration::from_millis(
                left.unsigned_abs(),
            ))));
        }
        let mut c = conds.clone();
        let timed_out = c
            .get(condition::REQUEUED)
            .is_some_and(|r| r.status == "False" && r.reason == readiness::TIMEOUT_REASON);
        if timed_out {
            c.set(
                condition::REQUEUED,
                true,
                readiness::BACKOFF_FINISHED_REASON,
                readiness::BACKOFF_FINISHED_MESSAGE,
                now,
                wl.metadata.generation,
            );
        }
        let status = json!({
            "conditions": c.0,
            "requeueState": {"count": state.count, "requeueAt": null},
        });
        write_workload_status(api, wl, status).await?;
        Ok(Some(Action::await_change()))
    }

    async fn workload_event(
        &self,
        wl: &api::Workload,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        let reference = ObjectReference {
            api_version: Some("kueue.x-k8s.io/v1beta2".into()),
            kind: Some("Workload".into()),
            name: wl.metadata.name.clone(),
            namespace: wl.metadata.namespace.clone(),
            uid: wl.metadata.uid.clone(),
            ..Default::default()
        };
        let ev = KEvent {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: reason.into(),
            secondary: None,
        };
        if let Err(e) = self.shared.recorder.publish(&ev, &reference).await {
            debug!(error = %e, "event not recorded");
        }
    }

    /// The job as its pod sets are read: itself, or for a kind whose
    /// templates live in a referenced object (a TrainJob's runtime), itself
    /// with that object mounted and patched (`jobs::reference`). `Ok(None)`
    /// when the reference cannot be followed: a Warning event in Kueue's
    /// words was sent, and the job is looked at again later.
    async fn view(&self, job: &Value) -> Result<Option<Value>, JobError> {
        let Some(rule) = &self.policy.runtime_ref else {
            return Ok(Some(job.clone()));
        };
        let found = match rule.reference(job) {
            Ok(r) => {
                let resource = ApiResource::from_gvk_with_plural(
                    &GroupVersionKind::gvk(&rule.group, &rule.version, &r.kind.kind),
                    &r.kind.resource,
                );
                let api = if r.kind.namespaced {
                    let ns = job
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    Api::<DynamicObject>::namespaced_with(self.shared.client.clone(), ns, &resource)
                } else {
                    Api::<DynamicObject>::all_with(self.shared.client.clone(), &resource)
                };
                match api.get_opt(&r.name).await {
                    Ok(Some(obj)) => Ok(serde_json::to_value(&obj)?),
                    Ok(None) => Err(ReferenceError::NotFound(r.name).to_string()),
                    Err(kube::Error::Api(e)) if e.code == 404 => {
                        Err(ReferenceError::NotFound(r.name).to_string())
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        match found {
            Ok(referenced) => Ok(Some(rule.view(job, &referenced))),
            Err(message) => {
                self.job_event(job, EventType::Warning, "ErrWorkloadCompose", message)
                    .await;
                Ok(None)
            }
        }
    }

    /// What the admission adds to each pod set's template.
    fn pod_set_infos(&self, wl: &api::Workload, queue: &str) -> Option<Vec<PodSetInfo>> {
        admission_pod_set_infos(&self.shared.flavors, wl, queue)
    }
}

/// What [`Ctx::check_pods_ready`] asks of the reconcile.
enum Recheck {
    /// Something was written: look again once the watch brings it.
    Done,
    /// Not ready yet: look again after this long.
    After(Duration),
}

/// The backoff's random jitter in [0, 1), from the clock's nanoseconds
/// (the core takes it as a parameter; no randomness crate is needed for
/// 0.0001 of a wait).
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    f64::from(nanos % 1_000_000) / 1_000_000.0
}

/// Kueue's `FinalizeOrphanedWorkload` for a Workload whose job is going:
/// finished (`OwnerNotFound`) unless already finished or being deleted,
/// then its `resource-in-use` finalizer removed.
async fn finalize_orphan(api: &Api<api::Workload>, wl: &api::Workload) -> Result<(), JobError> {
    let conds = Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()));
    if wl.metadata.deletion_timestamp.is_none() && !conds.is_true(condition::FINISHED) {
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        );
        let mut c = conds.clone();
        c.set(
            condition::FINISHED,
            true,
            "OwnerNotFound",
            "The workload's owner no longer exists",
            &now,
            wl.metadata.generation,
        );
        write_workload_status(api, wl, json!({"conditions": c.0})).await?;
        // The finalizer goes on the next pass, from the Workload as the
        // write left it.
        return Ok(());
    }
    remove_workload_finalizer(api, &wl.metadata).await?;
    Ok(())
}

fn recorded_pod_sets(wl: &api::Workload) -> Vec<JobPodSet> {
    wl.spec
        .pod_sets
        .iter()
        .flatten()
        .map(|ps| JobPodSet {
            name: ps.name.clone(),
            count: i64::from(ps.count),
            min_count: ps.min_count.map(i64::from),
            template: serde_json::to_value(&ps.template).unwrap_or(Value::Null),
        })
        .collect()
}

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let policy = &ctx.policy;
    let job = serde_json::to_value(&*obj)?;
    if !ctx.policies.governs(policy, &job) {
        return Ok(Action::await_change());
    }
    let queue = obj
        .labels()
        .get(QUEUE_NAME_LABEL)
        .cloned()
        .unwrap_or_default();
    let (Some(ns), name, Some(uid)) = (obj.namespace(), obj.name_any(), obj.uid()) else {
        return Ok(Action::await_change());
    };
    let t = &policy.target;
    let wl_name = workload::name_for(&t.kind, &t.group, &name, &uid);
    let wl_api = Api::<api::Workload>::namespaced(ctx.shared.client.clone(), &ns);
    if obj.metadata.deletion_timestamp.is_some() {
        // The job is going (jobframework's `finalize`): its Workload is
        // finished as orphaned and let go.
        if let Some(wl) = wl_api.get_opt(&wl_name).await? {
            if workload::is_owned_by(wl.metadata.owner_references.as_deref(), &uid) {
                finalize_orphan(&wl_api, &wl).await?;
            }
        }
        return Ok(Action::await_change());
    }
    let suspended = matches!(policy.suspend.resolve(&job), Some(Value::Bool(true)));
    let progress = policy
        .status
        .as_ref()
        .map_or(Progress::Running, |s| s.progress(&job));
    let active = policy.status.as_ref().is_some_and(|s| s.is_active(&job));

    let Some(wl) = wl_api.get_opt(&wl_name).await? else {
        if progress != Progress::Running {
            return Ok(Action::await_change());
        }
        if !suspended {
            // Started without an admission (the webhook was bypassed).
            ctx.stop_unadmitted(&ns, &name, &job).await?;
            return Ok(Action::await_change());
        }
        let prio = match workload::priority(policy, &job, &ctx.classes()) {
            Ok(p) => p,
            Err(e) => {
                ctx.job_event(
                    &job,
                    EventType::Warning,
                    "ErrWorkloadCompose",
                    e.to_string(),
                )
                .await;
                return Ok(Action::requeue(Duration::from_secs(5)));
            }
        };
        let Some(view) = ctx.view(&job).await? else {
            return Ok(Action::requeue(Duration::from_secs(5)));
        };
        let body = workload::for_job(policy, &view, &prio)?;
        if create_workload(&ctx.shared.client, &ns, body).await? {
            ctx.job_event(
                &job,
                EventType::Normal,
                "CreatedWorkload",
                format!("Created Workload: {ns}/{wl_name}"),
            )
            .await;
        }
        return Ok(Action::await_change());
    };
    if !workload::is_owned_by(wl.metadata.owner_references.as_deref(), &uid) {
        // The Workload's name is taken by an object that is not this job's:
        // it is neither changed nor deleted, and the job stays suspended.
        ctx.job_event(
            &job,
            EventType::Warning,
            "ErrWorkloadCompose",
            format!("Workload {ns}/{wl_name} exists, but is not owned by this job"),
        )
        .await;
        return Ok(Action::await_change());
    }

    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    if conds.is_true(condition::FINISHED) {
        // Kueue's job reconciler lets go of a finished Workload.
        remove_workload_finalizer(&wl_api, &wl.metadata).await?;
        return Ok(Action::await_change());
    }
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    if wl.metadata.deletion_timestamp.is_some() {
        // The Workload is being deleted (jobframework: "The workload is
        // marked for deletion"): the job is stopped, its templates put
        // back, and the Workload let go; a new one queues the job again.
        if !suspended {
            if ctx
                .patch_job(&ns, &name, &workload::suspend_patch(policy, &job))
                .await?
            {
                ctx.job_event(
                    &job,
                    EventType::Normal,
                    "Stopped",
                    "Workload is deleted".into(),
                )
                .await;
            }
            return Ok(Action::requeue(Duration::from_millis(200)));
        }
        if let Some(next) = ctx.restore_templates(&ns, &name, &job, &wl).await? {
            return Ok(next);
        }
        remove_workload_finalizer(&wl_api, &wl.metadata).await?;
        return Ok(Action::await_change());
    }
    if conds.is_true(condition::DEACTIVATION_TARGET) && wl.spec.active != Some(false) {
        // Kueue's workload controller deactivates a DeactivationTarget;
        // the queueing engine then evicts it for the target's reason.
        let patch = json!({"spec": {"active": false}});
        super::vetting::merge_patch(&serde_json::to_value(&wl)?, &patch)?;
        wl_api
            .patch(&wl.name_any(), &params(), &Patch::Merge(&patch))
            .await?;
        return Ok(Action::await_change());
    }
    let finished = match &progress {
        Progress::Running => None,
        Progress::Succeeded(m) => Some((
            "Succeeded",
            if m.is_empty() {
                "Job finished successfully"
            } else {
                m.as_str()
            },
        )),
        Progress::Failed(m) => Some((
            "Failed",
            if m.is_empty() {
                "Job failed"
            } else {
                m.as_str()
            },
        )),
    };
    if let Some((reason, message)) = finished {
        let mut c = conds.clone();
        c.set(
            condition::FINISHED,
            true,
            reason,
            message,
            &now,
            wl.metadata.generation,
        );
        write_workload_status(&wl_api, &wl, json!({"conditions": c.0})).await?;
        ctx.job_event(
            &job,
            EventType::Normal,
            "FinishedWorkload",
            format!("Workload '{ns}/{wl_name}' is declared finished"),
        )
        .await;
        return Ok(Action::await_change());
    }

    if ctx.sync_readiness(&wl_api, &wl, &job, &conds, &now).await? {
        // Looked at again with the Workload as the write left it.
        return Ok(Action::await_change());
    }

    let reserved = conds.is_true(condition::QUOTA_RESERVED) && status.admission.is_some();
    let evicted = conds.is_true(condition::EVICTED);
    if reserved && evicted {
        if !suspended {
            let msg = conds
                .get(condition::EVICTED)
                .map(|c| c.message.clone())
                .unwrap_or_default();
            if ctx
                .patch_job(&ns, &name, &workload::suspend_patch(policy, &job))
                .await?
            {
                ctx.job_event(&job, EventType::Normal, "Stopped", msg).await;
            }
            return Ok(Action::await_change());
        }
        if let Some(next) = ctx.restore_templates(&ns, &name, &job, &wl).await? {
            return Ok(next);
        }
        if active {
            // Pods are still stopping; their quota is not free yet.
            return Ok(Action::requeue(Duration::from_millis(500)));
        }
        let accumulated = status.accumulated_past_execution_time_seconds;
        if let Some(s) = release(&conds.0, wl.metadata.generation, &now, accumulated) {
            write_workload_status(&wl_api, &wl, s).await?;
        }
        return Ok(Action::await_change());
    }

    if reserved && conds.is_true(condition::ADMITTED) {
        let exec = ctx.check_execution_time(&wl_api, &wl, &conds, &now).await?;
        let ready = match ctx.check_pods_ready(&wl_api, &wl, &conds, &now).await? {
            Some(Recheck::Done) => return Ok(Action::await_change()),
            Some(Recheck::After(d)) => Some(d),
            None => None,
        };
        let next = match exec.into_iter().chain(ready).min() {
            Some(d) => Action::requeue(d),
            None => Action::await_change(),
        };
        if suspended {
            let Some(mut infos) = ctx.pod_set_infos(&wl, &queue) else {
                return Ok(Action::requeue(Duration::from_millis(200)));
            };
            let checks = status.admission_checks.as_deref().unwrap_or_default();
            let Some(view) = ctx.view(&job).await? else {
                return Ok(Action::requeue(Duration::from_secs(5)));
            };
            match workload::with_check_updates(&mut infos, checks)
                .and_then(|()| workload::start_patch(policy, &view, &infos))
            {
                Ok(ops) => {
                    // A kind started in two writes (TrainJob) says so once.
                    let starts = ops.iter().any(|o| o.path == policy.suspend.as_str());
                    if ctx.patch_job(&ns, &name, &ops).await? && starts {
                        let cq = status
                            .admission
                            .as_ref()
                            .and_then(|a| a.cluster_queue.clone())
                            .unwrap_or_default();
                        ctx.job_event(
                            &job,
                            EventType::Normal,
                            "Started",
                            format!("Admitted by clusterQueue {cq}"),
                        )
                        .await;
                    }
                }
                Err(e) => {
                    finish_failed_to_start(&wl_api, &wl, &conds, &e.to_string(), &now).await?;
                    ctx.job_event(&job, EventType::Warning, "FailedToStart", e.to_string())
                        .await;
                }
            }
        }
        return Ok(next);
    }
    if reserved {
        // Quota reserved, admission checks pending: nothing to do yet.
        return Ok(Action::await_change());
    }

    // Not admitted.
    if !suspended {
        ctx.stop_unadmitted(&ns, &name, &job).await?;
        return Ok(Action::await_change());
    }
    if let Some(next) = ctx.restore_templates(&ns, &name, &job, &wl).await? {
        return Ok(next);
    }
    if let Some(next) = ctx.finish_backoff(&wl_api, &wl, &conds, &now).await? {
        return Ok(next);
    }
    // Keep the Workload in step with the suspended job.
    let Some(view) = ctx.view(&job).await? else {
        return Ok(Action::requeue(Duration::from_secs(5)));
    };
    let current = workload::pod_sets(policy, &view)?;
    let recorded = recorded_pod_sets(&wl);
    let same_shape = current.len() == recorded.len()
        && current
            .iter()
            .zip(&recorded)
            .all(|(a, b)| a.name == b.name && a.count == b.count && a.min_count == b.min_count);
    if !same_shape {
        // Kueue re-creates an out-of-sync Workload; the next pass does.
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: wl.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match wl_api.delete(&wl.name_any(), &dp).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        return Ok(Action::requeue(Duration::from_millis(200)));
    }
    let mut spec_patch = serde_json::Map::new();
    if wl.spec.queue_name.as_deref() != Some(queue.as_str()) {
        spec_patch.insert("queueName".into(), json!(queue));
    }
    if let Ok(prio) = workload::priority(policy, &job, &ctx.classes()) {
        if let workload::PrioritySource::WorkloadPriorityClass(_) = prio.source {
            if wl.spec.priority != Some(prio.value) {
                spec_patch.insert("priority".into(), json!(prio.value));
            }
        }
    }
    if !spec_patch.is_empty() {
        let patch = json!({"spec": spec_patch});
        super::vetting::merge_patch(&serde_json::to_value(&wl)?, &patch)?;
        wl_api
            .patch(&wl.name_any(), &params(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(Action::await_change())
}
