//! The job reconciler, one per integration policy (Kueue's
//! `ReconcileGenericJob`): for a job with a queue name it creates the
//! Workload and keeps it in step; once the Workload is admitted it starts
//! the job with its pod sets' flavors; when the Workload is evicted it
//! stops the job, restores its templates and only then gives the quota
//! back; when the job finishes it marks the Workload finished. Everything
//! kind-specific comes from the policy, so a new kind needs no code here.

use crate::vocabulary::pointer::At;
use std::{collections::HashMap, sync::Arc, time::Duration};

use futures::{FutureExt, StreamExt};
use kube::{
    api::{DynamicObject, Patch},
    core::{ApiResource, GroupVersionKind},
    runtime::{
        controller::Action,
        reflector::{self, ObjectRef, Store},
        watcher, WatchStreamExt,
    },
    Api, Client, ResourceExt,
};
use serde_json::Value;
use tracing::{debug, info, warn};

use super::context::{
    admission_pod_set_infos, create_workload, delete_by_uid, now_time, params, reference_of,
    remove_workload_finalizer, served, workload_reference, workload_status_written,
    write_workload_spec, JobError, Shared,
};
use crate::{
    api::appwrapper::v1beta2::AppWrapper,
    api::kueue::v1beta2 as api,
    appwrapper::{APPWRAPPER_API_VERSION, APPWRAPPER_KIND},
    jobs::ancestry::{self, Ancestry, Look, ParentKey},
    jobs::machine::{self, Facts, Note, Step, Subject, Then, Write},
    jobs::policy::{Autoscaled, Policy, PolicySet},
    jobs::readiness::Settings as Readiness,
    jobs::reference::ReferenceError,
    vocabulary::{
        keys::{self, QUEUE_NAME_LABEL},
        patch::PatchOp,
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
    /// manageJobsWithoutQueueName, for owner chains as the webhook walks
    /// them.
    manage_all: bool,
    /// The kinds whose elastic jobs follow this kind's objects (a RayJob
    /// its RayCluster): an object's change wakes its owner among them, as
    /// Kueue's RayJob reconciler watches RayClusters.
    followers: Vec<Follower>,
    /// This kind follows objects no reconciler here watches (their
    /// integration is off): looked at again every [`FOLLOW_POLL`] instead.
    poll_followed: bool,
}

/// A kind that follows another's objects, and its reconciler's wake-ups.
struct Follower {
    target: crate::jobs::policy::Target,
    resource: ApiResource,
    wake: futures::channel::mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
}

/// How often an elastic job re-reads the object it follows when no watch
/// here wakes it.
const FOLLOW_POLL: Duration = Duration::from_secs(30);

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
    manage_all: bool,
) {
    let readiness = readiness.map(Arc::new);
    let client = shared.client.clone();
    let mut all = Vec::new();
    let mut triggers = OwnerTriggers::default();
    triggers.kinds.extend(gated);
    let kinds: Vec<_> = policies
        .iter()
        .filter(|p| p.gate.is_none() && p.pod_owner.is_none())
        .map(|policy| {
            let t = &policy.target;
            let resource = ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(&t.group, &t.version, &t.kind),
                &t.resource,
            );
            let (wake, wakes) = triggers.add(resource.clone());
            (policy.clone(), resource, wake, wakes)
        })
        .collect();
    let same = |a: &crate::jobs::policy::Target, b: &crate::jobs::policy::Target| {
        a.group == b.group && a.kind == b.kind
    };
    let followers = |target: &crate::jobs::policy::Target| -> Vec<Follower> {
        kinds
            .iter()
            .filter(|(p, ..)| {
                p.autoscaled
                    .as_ref()
                    .is_some_and(|a| same(&a.object, target))
            })
            .map(|(p, resource, wake, _)| Follower {
                target: p.target.clone(),
                resource: resource.clone(),
                wake: wake.clone(),
            })
            .collect()
    };
    let mut ctxs = Vec::new();
    for (policy, resource, ..) in &kinds {
        let poll_followed = policy
            .autoscaled
            .as_ref()
            .is_some_and(|a| !kinds.iter().any(|(p, ..)| same(&p.target, &a.object)));
        ctxs.push(Ctx {
            shared: shared.clone(),
            policy: policy.clone(),
            resource: resource.clone(),
            policies: policies.clone(),
            readiness: readiness.clone(),
            manage_all,
            followers: followers(&policy.target),
            poll_followed,
        });
    }
    for (ctx, (policy, resource, wake, wakes)) in ctxs.into_iter().zip(kinds) {
        let ctx = Arc::new(ctx);
        let jobs = Api::<DynamicObject>::all_with(client.clone(), &resource);
        let name = policy.name.clone();
        // A kind whose CRD is not installed yet has nothing to reconcile;
        // its reconciler starts once the kind is served (Kueue's WaitForAPI).
        let served = served(jobs.clone(), name.clone());
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
/// The name the Workload watch of the owner triggers is counted under.
const WORKLOADS_WATCH: &str = "workloads.kueue.x-k8s.io";

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
        let mut health = crate::cluster::watch::Health::new(WORKLOADS_WATCH);
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
                        self.resync(&client, &workloads, &mut reported).await;
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
            let Some(ns) = wl.metadata.namespace.as_deref() else {
                continue;
            };
            let Some(owner) = owners
                .clone()
                .find(|o| o.controller == Some(true))
                .or_else(|| owners.clone().next())
            else {
                self.wake_prebuilt(ns, wl.metadata.name.as_deref().unwrap_or_default());
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
    /// A Workload no object owns yet may be a prebuilt one (made by a
    /// MultiKueue manager or the user): the jobs in its namespace that name
    /// it are woken to take it. Owned Workloads, nearly all, never come
    /// here.
    fn wake_prebuilt(&self, ns: &str, name: &str) {
        const PREBUILT: &str = keys::PREBUILT_WORKLOAD_LABEL;
        for kind in self.resync.iter().filter(|k| k.policy.prebuilt_workloads) {
            for job in kind.jobs.state() {
                if job.metadata.namespace.as_deref() == Some(ns)
                    && crate::jobs::machine::prebuilt_name(
                        job.annotations().get(PREBUILT).map(String::as_str),
                        job.labels().get(PREBUILT).map(String::as_str),
                    ) == Some(name)
                {
                    let _ = kind.wake.unbounded_send(
                        ObjectRef::new_with(&job.name_any(), kind.resource.clone()).within(ns),
                    );
                }
            }
        }
    }

    /// The backstop: every queued job that has gone [`RESYNC_GRACE`]
    /// without a Workload is counted, logged (once a job at info) and its
    /// reconciler woken. The stores say which jobs to suspect; the API
    /// confirms each (a Workload store still catching up after a watch
    /// error would otherwise report jobs nothing lost).
    async fn resync(
        &self,
        client: &Client,
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
        let settled_for = crate::cluster::watch::settled_for;
        for kind in &self.resync {
            let watch = crate::cluster::watch::name_of::<DynamicObject>(&kind.resource);
            if !crate::jobs::resync::watches_settled(
                [settled_for(WORKLOADS_WATCH), settled_for(&watch)],
                RESYNC_GRACE,
            ) {
                debug!(%watch, "a watch failed or came back within the resync's grace; its jobs wait for the next resync");
                continue;
            }
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
                let (ns, name) = (job.namespace().unwrap_or_default(), job.name_any());
                match without_workload(client, &ns, uid).await {
                    Some(true) => {}
                    Some(false) => {
                        info!(namespace = %ns, job = %name, "its Workload exists; the Workload watch is catching up");
                        continue;
                    }
                    None => continue,
                }
                crate::cluster::watch::found_by_resync(&kind.policy.name);
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
    async fn job_event(&self, job: &Value, note: Note) {
        let reference = reference_of(&self.policy.target, job);
        self.shared.publish(&reference, note).await
    }

    fn jobs(&self, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.shared.client.clone(), ns, &self.resource)
    }

    /// `true` when the patch applied.
    async fn patch_job(&self, ns: &str, name: &str, ops: &[PatchOp]) -> Result<bool, JobError> {
        if ops.is_empty() {
            return Ok(false);
        }
        let p: json_patch::Patch = serde_json::from_value(serde_json::to_value(ops)?)?;
        match self
            .jobs(ns)
            .patch(name, &params(), &Patch::<()>::Json(p))
            .await
        {
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

    /// The object a job's pod templates live in, mounted into the job
    /// (`jobs::reference`); `Ok(Err)` with Kueue's words when the
    /// reference cannot be followed.
    async fn view(&self, job: &Value) -> Result<Result<Value, String>, JobError> {
        let Some(rule) = &self.policy.runtime_ref else {
            return Ok(Ok(job.clone()));
        };
        let r = match rule.reference(job) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&rule.group, &rule.version, &r.kind.kind),
            &r.kind.resource,
        );
        let api = if r.kind.namespaced {
            let ns = job
                .at("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            Api::<DynamicObject>::namespaced_with(self.shared.client.clone(), ns, &resource)
        } else {
            Api::<DynamicObject>::all_with(self.shared.client.clone(), &resource)
        };
        match api.get_opt(&r.name).await {
            Ok(Some(obj)) => Ok(Ok(rule.view(job, &serde_json::to_value(&obj)?))),
            Ok(None) => Ok(Err(ReferenceError::NotFound(r.name).to_string())),
            Err(kube::Error::Api(e)) if e.code == 404 => {
                Ok(Err(ReferenceError::NotFound(r.name).to_string()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Makes a step's writes in order; the first error ends the pass (the
    /// controller retries it), as does a Workload status write refused for
    /// a newer version (decided again shortly).
    async fn execute(
        &self,
        subject: &Subject,
        job: &Value,
        wl: Option<&api::Workload>,
        step: Step,
    ) -> Result<Action, JobError> {
        let ns = subject.namespace.as_str();
        let wl_api = Api::<api::Workload>::namespaced(self.shared.client.clone(), ns);
        // A job patch that did not apply (the job changed meanwhile) keeps
        // the Workload a deletion was to follow it.
        let mut job_unchanged = false;
        for write in step.writes {
            match write {
                Write::CreateWorkload { body, event } => {
                    if create_workload(&self.shared.client, ns, body).await? {
                        self.job_event(job, event).await;
                    }
                }
                Write::PatchJob { ops, event } => {
                    if self.patch_job(ns, &subject.name, &ops).await? {
                        if let Some(event) = event {
                            self.job_event(job, event).await;
                        }
                    } else {
                        job_unchanged = true;
                    }
                }
                Write::DeleteWorkload { event } => {
                    if let (Some(wl), false) = (wl, job_unchanged) {
                        delete_by_uid(&wl_api, &wl.name_any(), wl.metadata.uid.clone()).await?;
                        self.job_event(job, event).await;
                    }
                }
                Write::ResetJobStatus(patch) => {
                    match self
                        .jobs(ns)
                        .patch_status(&subject.name, &params(), &Patch::Merge(&patch))
                        .await
                    {
                        Ok(_) => {}
                        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Write::JobEvent(note) => self.job_event(job, note).await,
                // The rest are the Workload's: a step names them only with
                // the Workload it was given.
                write => {
                    let Some(wl) = wl else {
                        warn!(job = %subject.name, ?write, "a Workload write without a Workload; skipped");
                        continue;
                    };
                    if !self.write_workload(&wl_api, wl, write).await? {
                        // Decided on the version another write replaced:
                        // the rest of the step is decided again.
                        return Ok(Action::requeue(super::context::STALE));
                    }
                }
            }
        }
        Ok(match step.then {
            Then::Wait | Then::ReadView => Action::await_change(),
            Then::After(d) => Action::requeue(d),
        })
    }

    async fn write_workload(
        &self,
        api: &Api<api::Workload>,
        wl: &api::Workload,
        write: Write,
    ) -> Result<bool, JobError> {
        match write {
            Write::WorkloadStatus(status) => return workload_status_written(api, wl, status).await,
            Write::WorkloadSpec(spec) => write_workload_spec(api, wl, spec).await?,
            Write::RemoveFinalizer => {
                remove_workload_finalizer(api, &wl.metadata).await?;
            }
            Write::AdoptWorkload(patch) => {
                api.patch(&wl.name_any(), &params(), &Patch::Merge(&patch))
                    .await?;
            }
            Write::WorkloadEvent(note) => {
                self.shared.publish(&workload_reference(wl), note).await;
            }
            Write::CreateWorkload { .. }
            | Write::DeleteWorkload { .. }
            | Write::PatchJob { .. }
            | Write::ResetJobStatus(_)
            | Write::JobEvent(_) => unreachable!("the job's writes are made by execute"),
        }
        Ok(true)
    }
}

/// Does the API hold no Workload of the job `uid` in `ns`? `None` when it
/// cannot tell (the apiserver did not answer): asked again next time.
async fn without_workload(client: &Client, ns: &str, uid: &str) -> Option<bool> {
    let api = Api::<api::Workload>::namespaced(client.clone(), ns);
    let lp = kube::api::ListParams::default()
        .labels(&format!("{}={uid}", keys::JOB_UID_LABEL))
        .limit(1);
    match api.list_metadata(&lp).await {
        Ok(list) => Some(list.items.is_empty()),
        Err(e) => {
            debug!(namespace = %ns, error = %e, "confirming a job without a Workload");
            None
        }
    }
}

/// The backoff's random jitter in [0, 1), from the clock's nanoseconds
/// (the core takes it as a parameter; no randomness crate is needed for
/// 0.0001 of a wait).
pub(super) fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    f64::from(nanos % 1_000_000) / 1_000_000.0
}

impl Ctx {
    /// Wakes the job of a kind that follows this one's objects, if it is
    /// the object's controller.
    fn wake_followers(&self, obj: &Value) {
        if self.followers.is_empty() {
            return;
        }
        let Some(ns) = obj.at("/metadata/namespace").and_then(Value::as_str) else {
            return;
        };
        let owners = obj
            .at("/metadata/ownerReferences")
            .and_then(Value::as_array);
        let controller = owners
            .into_iter()
            .flatten()
            .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true));
        let Some(o) = controller else {
            return;
        };
        let text = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or_default();
        for f in &self.followers {
            if text("apiVersion") == f.target.api_version() && text("kind") == f.target.kind {
                let _ = f.wake.unbounded_send(
                    ObjectRef::new_with(text("name"), f.resource.clone()).within(ns),
                );
            }
        }
    }

    /// The object an elastic job's autoscaler scales, read live as Kueue
    /// reads it on every pass; `None` while the job names none or once it
    /// is gone.
    async fn autoscaled(&self, rule: &Autoscaled, job: &Value) -> Result<Option<Value>, JobError> {
        let Some(name) = rule.object_name(job) else {
            return Ok(None);
        };
        let t = &rule.object;
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&t.group, &t.version, &t.kind),
            &t.resource,
        );
        let ns = job
            .at("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let api = Api::<DynamicObject>::namespaced_with(self.shared.client.clone(), ns, &resource);
        match api.get_opt(name).await {
            Ok(found) => Ok(found.map(serde_json::to_value).transpose()?),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Is a queued child of an integrated kind its own job (no ancestor
    /// queued, `jobs::ancestry`)? Its parents read live, one by one, as
    /// the webhook reads them; `false` for any other job (governed as
    /// before: a top-level job needs no walk). A chain Kueue refuses
    /// (missing parent, cycle, too deep) is not governed here either.
    async fn top_level(&self, job: &Value) -> Result<bool, JobError> {
        let queued = job
            .at("/metadata/labels")
            .and_then(|l| l.get(QUEUE_NAME_LABEL))
            .and_then(Value::as_str)
            .is_some_and(|q| !q.is_empty());
        if !queued || !ancestry::has_integrated_controller(&self.policies, job) {
            return Ok(false);
        }
        let ns = job
            .at("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut known: HashMap<ParentKey, Look> = HashMap::new();
        loop {
            let mut read = |k: &ParentKey| known.get(k).cloned().unwrap_or(Look::NotYet);
            match ancestry::walk(&self.policies, self.manage_all, job, &mut read) {
                Ancestry::TopLevel => return Ok(true),
                Ancestry::Managed => return Ok(false),
                Ancestry::Refused(why) => {
                    debug!(job = ?job.at("/metadata/name"), %why, "owner chain not followed");
                    return Ok(false);
                }
                Ancestry::Read(key) => {
                    let gvk = GroupVersionKind::gvk(&key.group, &key.version, "");
                    let resource = ApiResource::from_gvk_with_plural(&gvk, &key.resource);
                    let api = Api::<DynamicObject>::namespaced_with(
                        self.shared.client.clone(),
                        ns,
                        &resource,
                    );
                    let look = match api.get_opt(&key.name).await? {
                        Some(o) => Look::Found(serde_json::to_value(o)?),
                        None => Look::Missing,
                    };
                    known.insert(key, look);
                }
            }
        }
    }
}

/// One pass: the job and its Workload read, the step decided in the core
/// (`jobs::machine`), its writes made.
async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let job = serde_json::to_value(&*obj)?;
    ctx.wake_followers(&job);
    // Just took the Lease: a pass per job is due at once; the finished
    // jobs' go first. Waiting here holds back a trigger that came
    // meanwhile too; the pass then reads the job afresh.
    if let Some(wait) = ctx
        .shared
        .takeover_turn(|| machine::after_takeover(&ctx.policy, &job))
    {
        tokio::time::sleep(wait).await;
        return Ok(Action::requeue(Duration::ZERO));
    }
    let top_level = ctx.top_level(&job).await?;
    let Some(mut subject) = machine::subject_as(&ctx.policy, &ctx.policies, &job, top_level) else {
        return Ok(Action::await_change());
    };
    let job = match (&ctx.policy.autoscaled, &subject.slice) {
        (Some(rule), Some(_)) => {
            let object = ctx.autoscaled(rule, &job).await?;
            match machine::following(&ctx.policy, &job, object.as_ref()) {
                machine::Following::Step(step) => {
                    return ctx.execute(&subject, &job, None, step).await
                }
                machine::Following::Job(followed) => {
                    // Named again: the object's generation names its slice.
                    let Some(s) =
                        machine::subject_as(&ctx.policy, &ctx.policies, &followed, top_level)
                    else {
                        return Ok(Action::await_change());
                    };
                    subject = s;
                    followed
                }
            }
        }
        _ => job,
    };
    let wl_api = Api::<api::Workload>::namespaced(ctx.shared.client.clone(), &subject.namespace);
    let now = now_time();
    let mut slices = Vec::new();
    let wl = if subject.slice.is_some() {
        slices = job_slices(&wl_api, &subject.uid).await?;
        match machine::slice_pass(&ctx.policy, &mut subject, &job, &slices, &now) {
            machine::SlicePass::Writes(writes) => {
                for (i, w) in writes {
                    ctx.write_workload(&wl_api, &slices[i], w).await?;
                }
                return Ok(Action::await_change());
            }
            machine::SlicePass::Step(i) => i.map(|i| slices[i].clone()),
            machine::SlicePass::Told(step) => return ctx.execute(&subject, &job, None, step).await,
        }
    } else {
        wl_api.get_opt(&subject.workload).await?
    };
    let classes = ctx.shared.classes();
    let flavors = &ctx.shared.flavors;
    let infos = |wl: &api::Workload, queue: &str| admission_pod_set_infos(flavors, wl, queue);
    let facts = Facts {
        policy: &ctx.policy,
        policies: &ctx.policies,
        classes: &classes,
        readiness: ctx.readiness.as_deref(),
        infos: &infos,
        now: &now,
        jitter: jitter(),
    };
    let mut read = None;
    loop {
        let step = machine::step(&facts, &subject, &job, wl.as_ref(), read.as_ref())?;
        if step.then == Then::ReadView && read.is_none() {
            read = Some(ctx.view(&job).await?);
            continue;
        }
        let mut action = ctx.execute(&subject, &job, wl.as_ref(), step).await?;
        if ctx.poll_followed && subject.slice.is_some() && action == Action::await_change() {
            action = Action::requeue(FOLLOW_POLL);
        }
        let granting = machine::ungated_by(&ctx.policy, &subject, &job, &slices, wl.as_ref());
        if let Some(active) = granting {
            if let Some(again) = ctx.ungate(&job, active).await? {
                return Ok(again);
            }
        }
        return Ok(action);
    }
}

/// An elastic job's unfinished Workloads (by its UID label, owned by it),
/// oldest first: creation time, then UID (Kueue's
/// `FindNotFinishedWorkloads`).
async fn job_slices(api: &Api<api::Workload>, uid: &str) -> Result<Vec<api::Workload>, JobError> {
    let lp = kube::api::ListParams::default().labels(&format!("{}={uid}", keys::JOB_UID_LABEL));
    let mut list: Vec<api::Workload> = api
        .list(&lp)
        .await?
        .items
        .into_iter()
        .filter(|wl| {
            crate::jobs::workload::is_owned_by(wl.metadata.owner_references.as_deref(), uid)
                && !api::Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()))
                    .is_true(api::condition::FINISHED)
        })
        .collect();
    list.sort_by(|a, b| {
        let at = |w: &api::Workload| w.metadata.creation_timestamp.as_ref().map(|t| t.0);
        at(a)
            .cmp(&at(b))
            .then_with(|| a.metadata.uid.cmp(&b.metadata.uid))
    });
    Ok(list)
}

impl Ctx {
    /// Kueue's ElasticJobUngater: the job's pods still behind the
    /// elastic-job scheduling gate are let go, as many as `active` (the
    /// slice [`machine::granting`] names) grants beyond those already
    /// running ([`crate::jobs::slices::to_ungate`]). `Some`: look again
    /// soon (pods were let go).
    async fn ungate(
        &self,
        job: &Value,
        active: &api::Workload,
    ) -> Result<Option<Action>, JobError> {
        use crate::jobs::slices;
        let Some(selector) = self.policy.elastic_pod_selector(job) else {
            return Ok(None);
        };
        let ns = job
            .at("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let pods_api =
            Api::<k8s_openapi::api::core::v1::Pod>::namespaced(self.shared.client.clone(), ns);
        let pods = pods_api
            .list(&kube::api::ListParams::default().labels(&selector))
            .await?
            .items;
        let facts: Vec<slices::PodFacts> = pods
            .iter()
            .map(|p| {
                let spec = p.spec.as_ref();
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                slices::PodFacts {
                    name: p.name_any(),
                    pod_set: p.labels().get(keys::PODSET_LABEL).cloned(),
                    gated: gate_index(spec).is_some(),
                    terminated: matches!(phase, Some("Succeeded" | "Failed")),
                }
            })
            .collect();
        let granted = slices::counts_of(active);
        let names = slices::to_ungate(&granted, &facts);
        for name in &names {
            let Some(pod) = pods.iter().find(|p| p.name_any() == *name) else {
                continue;
            };
            let Some(i) = gate_index(pod.spec.as_ref()) else {
                continue;
            };
            let p: json_patch::Patch = serde_json::from_value(slices::ungate_patch(i))?;
            match pods_api.patch(name, &params(), &Patch::<()>::Json(p)).await {
                Ok(_) => debug!(pod = %name, "elastic pod ungated"),
                Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409 | 422) => {}
                Err(e) => return Err(e.into()),
            }
        }
        // A second look confirms what was let go. Pods still to come wake a
        // Job's pass through its status (its active count), not every
        // kind's (a RayCluster's pods): looked for again meanwhile.
        if !names.is_empty() {
            return Ok(Some(Action::requeue(Duration::from_secs(1))));
        }
        Ok(slices::awaiting_pods(&granted, &facts).then(|| Action::requeue(PODS_AWAITED)))
    }
}

/// How soon an elastic job whose slice grants more pods than exist looks
/// for them again.
const PODS_AWAITED: Duration = Duration::from_secs(3);

/// Where the elastic-job scheduling gate is in a pod's gates.
fn gate_index(spec: Option<&k8s_openapi::api::core::v1::PodSpec>) -> Option<usize> {
    spec?
        .scheduling_gates
        .as_ref()?
        .iter()
        .position(|g| g.name == keys::ELASTIC_JOB_SCHEDULING_GATE)
}

/// The executor against a scripted apiserver: each case asserts the exact
/// requests a pass sends (the decisions themselves are `jobs::machine`'s
/// tests).
#[cfg(test)]
mod tests {
    use kube::runtime::watcher;
    use serde_json::json;

    use super::*;
    use crate::controllers::vetting::testing::{scripted_client, status, Script};
    use crate::jobs::workload;

    const UID: &str = "6f1c3ad2-0000-4000-8000-000000000001";

    /// The backstop asks the API before it reports a job lost: one list of
    /// the job's Workloads by its UID label, metadata only.
    #[tokio::test]
    async fn a_suspect_job_is_confirmed_with_one_list_before_it_is_reported() {
        for (code, items, want) in [
            (
                200,
                json!([{"metadata": {"name": "job-sample-1"}}]),
                Some(false),
            ),
            (200, json!([]), Some(true)),
            (503, json!([]), None),
        ] {
            let (client, script) = scripted_client(move |_, _, _| {
                if code == 200 {
                    (
                        200,
                        json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
                                 "metadata": {}, "items": items.clone()}),
                    )
                } else {
                    (code, status(code, "ServiceUnavailable"))
                }
            });
            assert_eq!(without_workload(&client, "ns", UID).await, want);
            let lines: Vec<String> = script
                .lock()
                .unwrap()
                .iter()
                .map(|r| r.line.clone())
                .collect();
            assert_eq!(lines.len(), 1, "{lines:?}");
            assert!(
                lines[0].starts_with("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads?")
                    && lines[0]
                        .contains(&format!("labelSelector=kueue.x-k8s.io%2Fjob-uid%3D{UID}"))
                    && lines[0].contains("limit=1"),
                "{lines:?}"
            );
        }
    }

    fn job() -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "sample", "namespace": "ns", "uid": UID, "resourceVersion": "42",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"parallelism": 2, "completions": 2, "suspend": true,
                     "template": {"spec": {"containers": [{"name": "c", "image": "i",
                         "resources": {"requests": {"cpu": "1"}}}]}}}
        })
    }

    fn ctx(client: Client) -> Arc<Ctx> {
        ctx_of("Job", client)
    }

    fn ctx_of(kind: &str, client: Client) -> Arc<Ctx> {
        let policies = PolicySet::embedded().unwrap();
        let policy = policies
            .iter()
            .find(|p| p.target.kind == kind)
            .unwrap()
            .clone();
        let t = &policy.target;
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&t.group, &t.version, &t.kind),
            &t.resource,
        );
        let mut shared = Shared::without_kueue(client);
        // The flavor the admissions below name, as the watch would have it.
        let (flavors, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Apply(
            serde_json::from_value(json!({"apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor", "metadata": {"name": "default"}, "spec": {}}))
            .unwrap(),
        ));
        shared.flavors = flavors;
        Arc::new(Ctx {
            shared,
            policy,
            resource,
            policies,
            readiness: None,
            manage_all: false,
            followers: Vec::new(),
            poll_followed: false,
        })
    }

    fn wl_name() -> String {
        workload::name_for("Job", "batch", "sample", UID)
    }

    fn wl_path() -> String {
        format!(
            "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{}",
            wl_name()
        )
    }

    const JOB_PATH: &str = "/apis/batch/v1/namespaces/ns/jobs/sample";
    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";

    /// The Workload of `job()` as the apiserver holds it, with `status`.
    fn workload(status: Value) -> Value {
        let set = PolicySet::embedded().unwrap();
        let p = set.iter().find(|p| p.target.kind == "Job").unwrap();
        let prio = workload::priority(p, &job(), &Default::default()).unwrap();
        let mut wl = workload::for_job(p, &job(), &prio).unwrap();
        wl["metadata"]["uid"] = json!("wl-uid");
        wl["metadata"]["resourceVersion"] = json!("7");
        wl["metadata"]["finalizers"] = json!([keys::RESOURCE_IN_USE_FINALIZER]);
        wl["status"] = status;
        wl
    }

    fn admitted() -> Value {
        let c = |ty: &str| {
            json!({"type": ty, "status": "True", "reason": ty, "message": "m",
                   "lastTransitionTime": "2026-01-01T00:00:00Z"})
        };
        json!({"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
                "count": 2, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}}]},
               "conditions": [c("QuotaReserved"), c("Admitted")]})
    }

    /// An apiserver holding `wl` (or none), answering writes with `write`.
    fn apiserver(
        wl: Option<Value>,
        write: u16,
    ) -> impl Fn(&str, &str, &Value) -> (u16, Value) + Send + Sync + 'static {
        move |method, path, body| match (method, path) {
            ("GET", p) if p == wl_path() => match &wl {
                Some(w) => (200, w.clone()),
                None => (404, status(404, "NotFound")),
            },
            ("POST", p) if p.ends_with("/events") => (201, body.clone()),
            ("POST", _) if write < 300 => (201, body.clone()),
            ("PATCH", p) if write < 300 && p.starts_with("/apis/batch") => (200, job()),
            ("PATCH", _) if write < 300 => (200, wl.clone().unwrap_or_default()),
            ("DELETE", _) if write < 300 => (200, status(200, "Success")),
            _ => (write, status(write, "Failure")),
        }
    }

    async fn pass(
        obj: Value,
        sent_by: (Client, Script),
    ) -> (Result<Action, JobError>, Vec<(String, Value)>) {
        let (client, sent) = sent_by;
        let obj: DynamicObject = serde_json::from_value(obj).unwrap();
        let out = reconcile(Arc::new(obj), ctx(client)).await;
        let requests = sent
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.line.clone(), r.body.clone()))
            .collect();
        (out, requests)
    }

    fn lines(requests: &[(String, Value)]) -> Vec<String> {
        requests.iter().map(|(l, _)| l.clone()).collect()
    }

    #[tokio::test]
    async fn a_queued_job_reads_then_creates_its_workload_and_says_so() {
        let (out, sent) = pass(job(), scripted_client(apiserver(None, 200))).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            lines(&sent),
            [
                format!("GET {}", wl_path()),
                "POST /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads?&fieldManager=batchgate"
                    .into(),
                format!("POST {EVENTS}"),
            ]
        );
        assert_eq!(sent[1].1["metadata"]["name"], json!(wl_name()));
        assert_eq!(sent[2].1["reason"], "CreatedWorkload");
    }

    /// A queued Job a JobSet made: its parent read first (one GET, as the
    /// webhook reads it); no ancestor queued, the Job is its own and gets
    /// its Workload; a queued JobSet governs it and nothing more is asked.
    #[tokio::test]
    async fn a_queued_childs_owner_chain_is_read_before_it_is_governed() {
        const JS: &str = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/js";
        let mut child = job();
        child["metadata"]["ownerReferences"] = json!([{"apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet", "name": "js", "uid": "js-uid", "controller": true}]);
        for (queued, governed) in [(false, true), (true, false)] {
            let jobs = apiserver(None, 200);
            let api = move |method: &str, path: &str, body: &Value| {
                if method == "GET" && path == JS {
                    let mut js = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2",
                        "kind": "JobSet", "metadata": {"name": "js", "namespace": "ns",
                        "uid": "js-uid"}});
                    if queued {
                        js["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "lq"});
                    }
                    return (200, js);
                }
                jobs(method, path, body)
            };
            let (out, sent) = pass(child.clone(), scripted_client(api)).await;
            assert_eq!(out.unwrap(), Action::await_change());
            let mut want = vec![format!("GET {JS}")];
            if governed {
                want.extend([
                    format!("GET {}", wl_path()),
                    "POST /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads?&fieldManager=batchgate"
                        .into(),
                    format!("POST {EVENTS}"),
                ]);
            }
            assert_eq!(lines(&sent), want, "JobSet queued: {queued}");
        }
        // A JobSet that is gone: not governed, nothing written.
        let jobs = apiserver(None, 200);
        let gone = move |method: &str, path: &str, body: &Value| match (method, path) {
            ("GET", JS) => (404, status(404, "NotFound")),
            _ => jobs(method, path, body),
        };
        let (out, sent) = pass(child, scripted_client(gone)).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(lines(&sent), [format!("GET {JS}")]);
    }

    /// An elastic RayJob under in-tree autoscaling: each pass reads the
    /// RayCluster KubeRay made for it; the job's annotations (its pod sets'
    /// counts, the cluster's generation) are written first, on the version
    /// read; once it carries them, its slice is made with the cluster's
    /// worker count and named with the cluster's generation.
    #[tokio::test]
    async fn an_autoscaled_rayjob_reads_its_cluster_then_records_and_follows_its_counts() {
        const CLUSTER: &str = "/apis/ray.io/v1/namespaces/ns/rayclusters/rj-cluster";
        const RAYJOB: &str = "/apis/ray.io/v1/namespaces/ns/rayjobs/rj";
        const SIZES: &str = "kueue.x-k8s.io/raycluster-podset-replica-sizes";
        let rayjob = |annotations: Value| {
            let mut ann = json!({"kueue.x-k8s.io/elastic-job": "true"});
            ann.as_object_mut()
                .unwrap()
                .extend(annotations.as_object().cloned().unwrap_or_default());
            json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
                "metadata": {"name": "rj", "namespace": "ns", "uid": "rj-uid", "generation": 1,
                    "resourceVersion": "5", "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                    "annotations": ann},
                "spec": {"suspend": true, "submissionMode": "HTTPMode",
                    "rayClusterSpec": {"enableInTreeAutoscaling": true,
                        "autoscalerOptions": {"resources": {"requests": {"cpu": "100m"}}},
                        "headGroupSpec": {"rayStartParams": {}, "template": {"spec":
                            {"containers": [{"name": "head", "resources": {"requests": {"cpu": "100m"}}}]}}},
                        "workerGroupSpecs": [{"groupName": "workers", "replicas": 1,
                            "rayStartParams": {}, "template": {"spec": {"containers":
                            [{"name": "w", "resources": {"requests": {"cpu": "100m"}}}]}}}]}},
                "status": {"rayClusterName": "rj-cluster"}})
        };
        let api = |method: &str, path: &str, body: &Value| match (method, path) {
            ("GET", CLUSTER) => (
                200,
                json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                    "metadata": {"name": "rj-cluster", "namespace": "ns", "generation": 2},
                    "spec": {"workerGroupSpecs": [{"groupName": "workers", "replicas": 3}]}}),
            ),
            ("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads") => (
                200,
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadList",
                    "metadata": {}, "items": []}),
            ),
            ("PATCH", _) if path.starts_with(RAYJOB) => (
                200,
                json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
                    "metadata": {"name": "rj", "namespace": "ns"}}),
            ),
            ("POST", _) => (201, body.clone()),
            _ => (500, status(500, "unexpected")),
        };
        let run = |obj: Value| async move {
            let (client, sent) = scripted_client(api);
            let obj: DynamicObject = serde_json::from_value(obj).unwrap();
            let out = reconcile(Arc::new(obj), ctx_of("RayJob", client)).await;
            let sent: Vec<(String, Value)> = sent
                .lock()
                .unwrap()
                .iter()
                .map(|r| (r.line.clone(), r.body.clone()))
                .collect();
            (out.unwrap(), sent)
        };
        let (out, sent) = run(rayjob(json!({}))).await;
        assert_eq!(out, Action::await_change());
        assert_eq!(
            lines(&sent),
            [
                format!("GET {CLUSTER}"),
                format!("PATCH {RAYJOB}?&fieldManager=batchgate")
            ]
        );
        let sizes = r#"[{"name":"head","count":1},{"name":"workers","count":3}]"#;
        assert_eq!(
            sent[1].1,
            json!([
                {"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
                {"op": "add", "path": "/metadata/annotations/kueue.x-k8s.io~1raycluster-podset-replica-sizes",
                 "value": sizes},
                {"op": "add", "path": "/metadata/annotations/kueue.x-k8s.io~1raycluster-generation",
                 "value": "2"},
            ])
        );
        let recorded = json!({SIZES: sizes, "kueue.x-k8s.io/raycluster-generation": "2"});
        let (out, sent) = run(rayjob(recorded)).await;
        assert_eq!(out, Action::await_change());
        let l = lines(&sent);
        assert_eq!(l[0], format!("GET {CLUSTER}"));
        assert!(
            l[1].starts_with("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads?"),
            "{l:?}"
        );
        assert_eq!(
            l[2],
            "POST /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads?&fieldManager=batchgate"
        );
        assert_eq!(l.len(), 4, "{l:?}");
        let slice = &sent[2].1;
        assert_eq!(
            slice["metadata"]["name"],
            workload::name_with_extra("RayJob", "ray.io", "rj", "rj-uid", "1_2")
        );
        let counts: Vec<(&str, i64)> = slice["spec"]["podSets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ps| (ps["name"].as_str().unwrap(), ps["count"].as_i64().unwrap()))
            .collect();
        assert_eq!(counts, [("head", 1), ("workers", 3)]);
    }

    /// A RayCluster's change wakes the RayJob that controls it (Kueue's
    /// RayJob reconciler watches the RayClusters it owns); another owner's
    /// does not.
    #[tokio::test]
    async fn a_clusters_change_wakes_the_rayjob_that_controls_it() {
        let (client, _) = scripted_client(|_: &str, _: &str, _: &Value| (500, status(500, "none")));
        let rj = ctx_of("RayJob", client.clone());
        let (wake, mut wakes) = futures::channel::mpsc::unbounded();
        let mut rc = Arc::try_unwrap(ctx_of("RayCluster", client)).ok().unwrap();
        rc.followers.push(Follower {
            target: rj.policy.target.clone(),
            resource: rj.resource.clone(),
            wake,
        });
        let owned = |kind: &str| {
            json!({"metadata": {"name": "c", "namespace": "ns", "ownerReferences": [
                {"apiVersion": "ray.io/v1", "kind": kind, "name": "rj", "uid": "u", "controller": true}]}})
        };
        rc.wake_followers(&owned("RayService"));
        assert!(wakes.try_recv().is_err(), "nothing sent");
        rc.wake_followers(&owned("RayJob"));
        let r = wakes.try_recv().unwrap();
        assert_eq!(
            (r.name.as_str(), r.namespace.as_deref()),
            ("rj", Some("ns"))
        );
    }

    #[tokio::test]
    async fn a_workload_that_exists_already_is_not_announced() {
        let (out, sent) = pass(job(), scripted_client(apiserver(None, 409))).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(sent.len(), 2, "{sent:?}");
    }

    #[tokio::test]
    async fn an_admitted_job_is_started_by_one_conditioned_patch_then_the_event() {
        let api = apiserver(Some(workload(admitted())), 200);
        let (out, sent) = pass(job(), scripted_client(api)).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            lines(&sent),
            [
                format!("GET {}", wl_path()),
                format!("PATCH {JOB_PATH}?&fieldManager=batchgate"),
                format!("POST {EVENTS}"),
            ]
        );
        let ops = sent[1].1.as_array().unwrap();
        assert_eq!(
            ops[0],
            json!({"op": "test", "path": "/metadata/resourceVersion", "value": "42"})
        );
        assert_eq!(
            ops.last(),
            Some(&json!({"op": "add", "path": "/spec/suspend", "value": false})),
            "{ops:?}"
        );
        assert_eq!(sent[2].1["note"], "Admitted by clusterQueue cq");
    }

    #[tokio::test]
    async fn a_start_that_lost_the_race_is_not_announced() {
        // The job changed since it was read: the test op fails (422).
        let api = apiserver(Some(workload(admitted())), 422);
        let (out, sent) = pass(job(), scripted_client(api)).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            sent.len(),
            2,
            "no event after a patch that did not apply: {sent:?}"
        );
    }

    /// A suspended job whose pod sets changed: its Workload (holding no
    /// quota) is patched to match in place, and the job told so.
    #[tokio::test]
    async fn a_changed_job_updates_its_workload_in_place() {
        let mut wider = job();
        wider["spec"]["parallelism"] = json!(4);
        wider["spec"]["completions"] = json!(4);
        let api = apiserver(Some(workload(json!({}))), 200);
        let (out, sent) = pass(wider, scripted_client(api)).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            lines(&sent),
            [
                format!("GET {}", wl_path()),
                format!("PATCH {}?&fieldManager=batchgate", wl_path()),
                format!("POST {EVENTS}")
            ]
        );
        assert_eq!(sent[1].1["spec"]["podSets"][0]["count"], 4);
        assert_eq!(sent[2].1["reason"], "UpdatedWorkload");
    }

    /// A running job that no longer matches its admitted Workload: one
    /// conditioned patch suspends it, then the Workload is deleted on its
    /// UID, each with its event; a stop that did not apply (the job
    /// changed) deletes nothing.
    #[tokio::test]
    async fn a_running_job_no_longer_matching_is_stopped_then_its_workload_deleted() {
        let mut wider = job();
        wider["spec"]["suspend"] = json!(false);
        wider["spec"]["parallelism"] = json!(3);
        wider["spec"]["completions"] = json!(3);
        let api = apiserver(Some(workload(admitted())), 200);
        let (out, sent) = pass(wider.clone(), scripted_client(api)).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            lines(&sent),
            [
                format!("GET {}", wl_path()),
                format!("PATCH {JOB_PATH}?&fieldManager=batchgate"),
                format!("POST {EVENTS}"),
                format!("DELETE {}", wl_path()),
                format!("POST {EVENTS}"),
            ]
        );
        assert_eq!(
            sent[1].1.as_array().unwrap().last(),
            Some(&json!({"op": "add", "path": "/spec/suspend", "value": true}))
        );
        assert_eq!(sent[3].1["preconditions"]["uid"], "wl-uid");
        assert_eq!(sent[4].1["reason"], "DeletedWorkload");
        let api = apiserver(Some(workload(admitted())), 422);
        let (_, sent) = pass(wider, scripted_client(api)).await;
        assert_eq!(
            lines(&sent),
            [
                format!("GET {}", wl_path()),
                format!("PATCH {JOB_PATH}?&fieldManager=batchgate"),
            ]
        );
    }

    /// A job naming a prebuilt Workload that no object owns takes it with
    /// one merge patch conditioned on the version read, and makes none.
    #[tokio::test]
    async fn a_prebuilt_workload_is_taken_with_one_conditioned_patch() {
        let mut j = job();
        j["metadata"]["labels"][keys::PREBUILT_WORKLOAD_LABEL] = json!(wl_name());
        let mut theirs = workload(json!({}));
        let meta = theirs["metadata"].as_object_mut().unwrap();
        meta.remove("ownerReferences");
        meta.remove("labels");
        let (out, sent) = pass(j, scripted_client(apiserver(Some(theirs), 200))).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            lines(&sent),
            [
                format!("GET {}", wl_path()),
                format!("PATCH {}?&fieldManager=batchgate", wl_path()),
            ]
        );
        assert_eq!(
            sent[1].1,
            json!({"metadata": {
                "resourceVersion": "7",
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "sample",
                    "uid": UID, "controller": true, "blockOwnerDeletion": true}],
                "labels": {"kueue.x-k8s.io/job-uid": UID},
            }})
        );
    }

    #[tokio::test]
    async fn a_workload_of_another_owner_gets_no_write() {
        let mut theirs = workload(admitted());
        theirs["metadata"]["ownerReferences"][0]["uid"] = json!("someone-else");
        let (out, sent) = pass(running(), scripted_client(apiserver(Some(theirs), 200))).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            lines(&sent),
            [format!("GET {}", wl_path()), format!("POST {EVENTS}")]
        );
        assert_eq!(sent[1].1["type"], "Warning");
    }

    fn running() -> Value {
        let mut j = job();
        j["spec"]["suspend"] = json!(false);
        j
    }

    #[tokio::test]
    async fn a_failed_write_ends_the_pass_with_the_error() {
        // A finished job: the Workload's status write fails (500); the
        // event that follows it is not sent, and the controller retries.
        let mut done = running();
        done["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
        let api = apiserver(Some(workload(admitted())), 500);
        let (out, sent) = pass(done, scripted_client(api)).await;
        assert!(matches!(out, Err(JobError::Kube(_))), "{out:?}");
        assert_eq!(
            lines(&sent),
            [
                format!("GET {}", wl_path()),
                format!("PATCH {}/status?&fieldManager=batchgate", wl_path()),
            ]
        );
        assert_eq!(sent[1].1["metadata"]["resourceVersion"], "7");
    }

    #[tokio::test]
    async fn a_finished_workload_lets_go_of_its_finalizer_only() {
        let done = json!({"conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded",
            "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        let api = apiserver(Some(workload(done)), 200);
        let (out, sent) = pass(job(), scripted_client(api)).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            lines(&sent),
            [
                format!("GET {}", wl_path()),
                format!("PATCH {}?&fieldManager=batchgate", wl_path())
            ]
        );
        assert_eq!(
            sent[1].1,
            json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                   {"op": "add", "path": "/metadata/finalizers", "value": []}])
        );
    }

    /// An elastic Job running on an admitted slice of 2: its slices are
    /// listed by its UID label, its pods by theirs, and exactly one gated
    /// pod (the lower name) is let go, the gate removed on the condition
    /// that it is still there; the pass looks again in a second.
    #[tokio::test]
    async fn an_elastic_jobs_gated_pods_are_let_go_up_to_its_admitted_slice() {
        let mut j = job();
        j["metadata"]["annotations"] = json!({"kueue.x-k8s.io/elastic-job": "true"});
        j["metadata"]["generation"] = json!(2);
        j["spec"]["suspend"] = json!(false);
        let mut slice = workload(admitted());
        slice["metadata"]["name"] = json!("job-sample-s1");
        slice["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        slice["metadata"]["annotations"] = json!({"kueue.x-k8s.io/elastic-job": "true"});
        let pod = |name: &str, gated: bool| {
            let gates = if gated {
                json!([{"name": "other"}, {"name": keys::ELASTIC_JOB_SCHEDULING_GATE}])
            } else {
                json!([])
            };
            json!({"metadata": {"name": name, "namespace": "ns",
                                "labels": {"kueue.x-k8s.io/podset": "main"}},
                   "spec": {"containers": [], "schedulingGates": gates},
                   "status": {"phase": "Pending"}})
        };
        let pods = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {},
            "items": [pod("sample-z", true), pod("sample-y", true), pod("sample-x", false)]});
        let ungated = pod("sample-y", false);
        let list = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadList",
                          "metadata": {}, "items": [slice]});
        let (out, sent) = pass(
            j,
            scripted_client(move |method, path, _| match (method, path) {
                ("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads") => {
                    (200, list.clone())
                }
                ("GET", "/api/v1/namespaces/ns/pods") => (200, pods.clone()),
                ("PATCH", _) => (200, ungated.clone()),
                _ => (404, status(404, "NotFound")),
            }),
        )
        .await;
        assert_eq!(out.unwrap(), Action::requeue(Duration::from_secs(1)));
        assert_eq!(
            lines(&sent),
            [
                format!("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads?&labelSelector=kueue.x-k8s.io%2Fjob-uid%3D{UID}"),
                format!("GET /api/v1/namespaces/ns/pods?&labelSelector=batch.kubernetes.io%2Fcontroller-uid%3D{UID}"),
                "PATCH /api/v1/namespaces/ns/pods/sample-y?&fieldManager=batchgate".into(),
            ]
        );
        assert_eq!(
            sent[2].1,
            json!([{"op": "test", "path": "/spec/schedulingGates/1/name",
                    "value": keys::ELASTIC_JOB_SCHEDULING_GATE},
                   {"op": "remove", "path": "/spec/schedulingGates/1"}])
        );
    }
}
