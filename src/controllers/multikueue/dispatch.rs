//! MultiKueue's dispatch on the manager: each Workload with a
//! `kueue.x-k8s.io/multikueue` admission check is read with its local job
//! and what the workers hold of it, [`dispatch::step`] decides, and the
//! actions are carried out here in order. The workers are watched, not
//! read per pass: each connected worker has a watch of the Workload copies
//! and of the jobs that carry this manager's origin label, whose events
//! wake the local Workload of the same name. The garbage collector removes
//! what a worker holds of Workloads that are gone here ([`gc`]).

use crate::vocabulary::pointer::At;
use std::{sync::Arc, time::Duration};

use futures::{channel::mpsc, FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{
    api::{ApiResource, DynamicObject, ListParams, Patch, PostParams},
    runtime::{
        controller::Action as Requeue,
        reflector::{self, ObjectRef, Store},
        watcher, WatchStreamExt,
    },
    Api, Client, ResourceExt,
};
use serde_json::{json, Value};
use tracing::{debug, info};

use super::Ctx;
use crate::{
    api::kueue::v1beta2::{self as api, check_state, MULTIKUEUE_CONTROLLER},
    controllers::context::{delete_by_uid, params, remove_workload_finalizer, JobError},
    multikueue::{
        dispatch::{self, Action, Dispatcher, Facts, JobKind, Worker},
        gc,
    },
    vocabulary::keys,
};

/// A connected worker's client and what the manager watches there.
pub(super) struct Remote {
    pub client: Client,
    /// The Workload copies carrying this manager's origin.
    pub workloads: Store<api::Workload>,
    /// The jobs carrying it, per kind in the kinds' order, watched from
    /// the first time a Workload of the kind is dispatched (a kind the
    /// worker does not serve is never listed in vain).
    jobs: std::sync::Mutex<Vec<Option<Store<DynamicObject>>>>,
    selector: String,
    wake: mpsc::UnboundedSender<ObjectRef<api::Workload>>,
    tasks: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Drop for Remote {
    fn drop(&mut self) {
        for t in self.tasks.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            t.abort();
        }
    }
}

fn is_ready<K: kube::Resource + Clone + 'static>(store: &Store<K>) -> bool
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store.wait_until_ready().now_or_never().is_some()
}

pub(super) fn resource(kind: &JobKind) -> ApiResource {
    let (group, version) = kind
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", kind.api_version.as_str()));
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: kind.api_version.clone(),
        kind: kind.kind.clone(),
        plural: kind.resource.clone(),
    }
}

/// The local Workload a worker's object stands for: a copy has its name,
/// a job names it as its prebuilt Workload.
fn woken_by_job(job: &DynamicObject) -> Option<ObjectRef<api::Workload>> {
    let meta = &job.metadata;
    let key = keys::PREBUILT_WORKLOAD_LABEL;
    let name = crate::jobs::machine::prebuilt_name(
        meta.annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map(String::as_str),
        meta.labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str),
    )?;
    Some(ObjectRef::new(name).within(meta.namespace.as_deref().unwrap_or_default()))
}

impl Remote {
    /// Starts the watch of the worker's copies; every event wakes the
    /// local Workload of the same name.
    pub(super) fn start(
        client: Client,
        origin: &str,
        kinds: usize,
        wake: mpsc::UnboundedSender<ObjectRef<api::Workload>>,
    ) -> Remote {
        let selector = format!("{}={origin}", dispatch::ORIGIN_LABEL);
        let config = watcher::Config::default().labels(&selector);
        let (workloads, writer) = reflector::store();
        let copies = watcher(Api::<api::Workload>::all(client.clone()), config)
            .default_backoff()
            .modify(|wl: &mut api::Workload| wl.managed_fields_mut().clear())
            .reflect(writer)
            .touched_objects();
        let w = wake.clone();
        let task = tokio::spawn(async move {
            let mut copies = std::pin::pin!(copies);
            while let Some(ev) = copies.next().await {
                if let Ok(wl) = ev {
                    let _ = w.unbounded_send(ObjectRef::from_obj(&wl));
                }
            }
        });
        Remote {
            client,
            workloads,
            jobs: std::sync::Mutex::new(vec![None; kinds]),
            selector,
            wake,
            tasks: std::sync::Mutex::new(vec![task]),
        }
    }

    /// The store of the worker's jobs of kind `k`, its watch started on
    /// the first call; every event wakes the job's prebuilt Workload.
    fn jobs(&self, k: usize, kind: &JobKind) -> Store<DynamicObject> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Some(store)) = jobs.get(k) {
            return store.clone();
        }
        let ar = resource(kind);
        let writer = reflector::store::Writer::new(ar.clone());
        let store = writer.as_reader();
        let config = watcher::Config::default().labels(&self.selector);
        let events = watcher(
            Api::<DynamicObject>::all_with(self.client.clone(), &ar),
            config,
        )
        .default_backoff()
        .modify(|j: &mut DynamicObject| j.managed_fields_mut().clear())
        .reflect(writer)
        .touched_objects();
        let w = self.wake.clone();
        let task = tokio::spawn(async move {
            let mut events = std::pin::pin!(events);
            while let Some(ev) = events.next().await {
                if let Some(r) = ev.ok().as_ref().and_then(woken_by_job) {
                    let _ = w.unbounded_send(r);
                }
            }
        });
        self.tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(task);
        if let Some(slot) = jobs.get_mut(k) {
            *slot = Some(store.clone());
        }
        store
    }
}

impl Ctx {
    fn dispatch_settings(&self) -> dispatch::Settings<'_> {
        let s = &self.settings;
        dispatch::Settings {
            origin: &s.origin,
            worker_lost_timeout: s.worker_lost_timeout.to_std(),
            dispatcher: Dispatcher::named(
                &s.dispatcher_name,
                s.incremental_step_size
                    .and_then(|n| usize::try_from(n).ok()),
            ),
            kinds: &self.kinds,
            identifier_annotations: s.identifier_annotations,
        }
    }

    /// The Workload's MultiKueue check and its config's clusters, in order.
    fn multikueue_check(&self, wl: &api::Workload) -> Option<(String, Vec<String>)> {
        let states = wl.status.as_ref()?.admission_checks.as_ref()?;
        states.iter().find_map(|s| {
            let ac = self.checks.get(&ObjectRef::new(&s.name))?;
            if ac.spec.controller_name != MULTIKUEUE_CONTROLLER {
                return None;
            }
            let clusters = ac
                .spec
                .parameters
                .as_ref()
                .and_then(|p| self.configs.get(&ObjectRef::new(&p.name)))
                .map(|c| c.spec.clusters.clone())
                .unwrap_or_default();
            Some((s.name.clone(), clusters))
        })
    }

    async fn remote(&self, cluster: &str) -> Option<Arc<Remote>> {
        let workers = self.workers.lock().await;
        workers
            .get(cluster)
            .filter(|w| w.link.connected)
            .and_then(|w| w.remote.clone())
    }
}

/// The dispatch controller: woken by the local Workloads, by the workers'
/// watches, and by a worker connecting or going away.
pub(super) async fn run(
    ctx: Arc<Ctx>,
    controller: kube::runtime::Controller<api::Workload>,
    wakes: mpsc::UnboundedReceiver<ObjectRef<api::Workload>>,
    links: mpsc::UnboundedReceiver<()>,
) {
    controller
        .reconcile_on(wakes)
        .reconcile_all_on(links)
        .run(reconcile, error_policy, ctx)
        .for_each(|r| {
            if let Err(e) = r {
                debug!(error = %e, "MultiKueue dispatch reconcile");
            }
            futures::future::ready(())
        })
        .await;
}

fn error_policy(_: Arc<api::Workload>, e: &JobError, _: Arc<Ctx>) -> Requeue {
    debug!(error = %e, "MultiKueue dispatch");
    Requeue::requeue(Duration::from_secs(1))
}

/// How soon a pass that met trouble (a worker not connected, a job that is
/// not this manager's) looks again.
const TROUBLE_RETRY: Duration = Duration::from_secs(5);

use crate::controllers::context::now_time;

async fn reconcile(wl: Arc<api::Workload>, ctx: Arc<Ctx>) -> Result<Requeue, JobError> {
    if ctx.shared.leading().await {
        return Ok(Requeue::requeue(Duration::ZERO));
    }
    let Some((check, clusters)) = ctx.multikueue_check(&wl) else {
        return Ok(Requeue::await_change());
    };
    let ns = wl.namespace().unwrap_or_default();
    let name = wl.name_any();
    let client = ctx.shared.client.clone();
    let owner = dispatch::local_job(&wl, &ctx.kinds);
    let local_job = match &owner {
        Some((kind, job)) => {
            Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &resource(kind))
                .get_opt(job)
                .await?
                .map(serde_json::to_value)
                .transpose()?
        }
        None => None,
    };
    // A pod group's pods here, listed by their group label.
    let group = match (&owner, &local_job) {
        (Some((kind, _)), Some(job)) => kind
            .group_of(job)
            .zip(kind.group_label.as_deref())
            .map(|(g, label)| (label.to_string(), g.to_string())),
        _ => None,
    };
    let local_members: Vec<Value> = match (&owner, &group) {
        (Some((kind, _)), Some((label, g))) => {
            Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &resource(kind))
                .list(&ListParams::default().labels(&format!("{label}={g}")))
                .await?
                .items
                .into_iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()?
        }
        _ => Vec::new(),
    };
    let kind_index = owner
        .as_ref()
        .and_then(|(k, _)| ctx.kinds.iter().position(|x| x == *k));
    // What each worker holds, from its watches.
    let mut held = Vec::new();
    for cluster in &clusters {
        let link = {
            let workers = ctx.workers.lock().await;
            workers
                .get(cluster)
                .map(|w| (w.link.dispatch(), w.remote.clone()))
        };
        let (link, remote) = match link {
            Some((dispatch::Link::Connected, Some(r))) => (dispatch::Link::Connected, Some(r)),
            Some((dispatch::Link::Connected, None)) | None => (dispatch::Link::Lost(None), None),
            Some((lost, _)) => (lost, None),
        };
        let (copy, job, members) = match &remote {
            Some(r) => {
                let jobs = match (&owner, kind_index) {
                    (Some((kind, _)), Some(k)) => Some(r.jobs(k, kind)),
                    _ => None,
                };
                // Until the first lists are in, absent means unknown.
                if !is_ready(&r.workloads) || jobs.as_ref().is_some_and(|j| !is_ready(j)) {
                    return Ok(Requeue::requeue(Duration::from_secs(1)));
                }
                let copy = r.workloads.get(&ObjectRef::new(&name).within(&ns));
                let job = match (&owner, &jobs) {
                    (Some((kind, job)), Some(jobs)) => jobs
                        .get(&ObjectRef::new_with(job, resource(kind)).within(&ns))
                        .map(|j| serde_json::to_value(&*j))
                        .transpose()?,
                    _ => None,
                };
                let members = match (&group, &jobs) {
                    (Some((label, g)), Some(jobs)) => jobs
                        .state()
                        .iter()
                        .filter(|j| {
                            j.metadata.namespace.as_deref() == Some(ns.as_str())
                                && j.labels().get(label) == Some(g)
                        })
                        .map(|j| serde_json::to_value(&**j))
                        .collect::<Result<_, _>>()?,
                    _ => Vec::new(),
                };
                (copy, job, members)
            }
            None => (None, None, Vec::new()),
        };
        held.push((cluster.clone(), link, copy, job, members));
    }
    let workers: Vec<Worker<'_>> = held
        .iter()
        .map(|(cluster, link, copy, job, members)| Worker {
            name: cluster,
            link: link.clone(),
            workload: copy.as_deref(),
            job: job.as_ref(),
            members,
        })
        .collect();
    // An owner of several Workloads: its others here, from the store.
    let components: Vec<Arc<api::Workload>> = match &owner {
        Some((kind, _)) if kind.components.is_some() => {
            let uid = wl
                .owner_references()
                .iter()
                .find(|r| r.api_version == kind.api_version && r.kind == kind.kind)
                .map(|r| r.uid.clone())
                .unwrap_or_default();
            ctx.locals
                .state()
                .into_iter()
                .filter(|w| w.metadata.namespace.as_deref() == Some(ns.as_str()))
                .filter(|w| {
                    crate::jobs::workload::is_owned_by(w.metadata.owner_references.as_deref(), &uid)
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let components: Vec<&api::Workload> = components.iter().map(|w| &**w).collect();
    let key = (ns.clone(), name.clone());
    let round = ctx.rounds.lock().await.get(&key).cloned();
    let now = now_time();
    let settings = ctx.dispatch_settings();
    let step = dispatch::step(
        &Facts {
            local: &wl,
            gone: false,
            check: Some(&check),
            local_job: local_job.as_ref(),
            local_members: &local_members,
            workers: &workers,
            round_started: round.as_ref(),
            components: &components,
            now: &now,
        },
        &settings,
    );
    let mut current = (*wl).clone();
    for action in step.actions {
        if !execute(
            &ctx,
            &mut current,
            &held,
            &Local {
                job: local_job.as_ref(),
                members: &local_members,
            },
            owner.as_ref(),
            action,
            &now,
        )
        .await?
        {
            // The local Workload changed under the pass: decide again.
            return Ok(Requeue::requeue(Duration::ZERO));
        }
    }
    let mut after = step.requeue_after;
    if let Some(t) = &step.trouble {
        info!(workload = %format!("{ns}/{name}"), "MultiKueue: {t}");
        after = Some(after.map_or(TROUBLE_RETRY, |a| a.min(TROUBLE_RETRY)));
    }
    Ok(after.map_or_else(Requeue::await_change, Requeue::requeue))
}

/// The local job as read, and a pod group's pods.
struct Local<'a> {
    job: Option<&'a Value>,
    members: &'a [Value],
}

type Held = (
    String,
    dispatch::Link,
    Option<Arc<api::Workload>>,
    Option<Value>,
    Vec<Value>,
);

/// Carries out one action; `false` when the local Workload's version moved
/// (the rest of the pass is decided again).
async fn execute(
    ctx: &Ctx,
    current: &mut api::Workload,
    held: &[Held],
    local: &Local<'_>,
    owner: Option<&(&JobKind, String)>,
    action: Action,
    now: &Time,
) -> Result<bool, JobError> {
    let ns = current.namespace().unwrap_or_default();
    let copy_of = |cluster: &str| {
        held.iter()
            .find(|h| h.0 == cluster)
            .and_then(|h| h.2.clone())
    };
    match action {
        Action::CreateRemoteWorkload { cluster, workload } => {
            let Some(r) = ctx.remote(&cluster).await else {
                return Ok(true);
            };
            let api = Api::<api::Workload>::namespaced(r.client.clone(), &ns);
            if api
                .create(&PostParams::default(), &workload)
                .await
                .map_or_else(
                    |e| ignore::<()>(Err(e), &[409]).map(|()| false),
                    |_| Ok(true),
                )?
            {
                ctx.metrics
                    .multikueue_dispatched(&cluster_queue(current), &cluster);
            }
        }
        Action::UpdateRemoteWorkloadSpec { cluster, spec } => {
            let (Some(r), Some(copy)) = (ctx.remote(&cluster).await, copy_of(&cluster)) else {
                return Ok(true);
            };
            let api = Api::<api::Workload>::namespaced(r.client.clone(), &ns);
            let patch = json!({
                "metadata": {"resourceVersion": copy.resource_version()},
                "spec": spec,
            });
            let sent = api
                .patch(&copy.name_any(), &params(), &Patch::Merge(&patch))
                .await;
            ignore(sent, &[404, 409])?;
        }
        Action::DeactivateRemoteWorkload { cluster, condition } => {
            let (Some(r), Some(copy)) = (ctx.remote(&cluster).await, copy_of(&cluster)) else {
                return Ok(true);
            };
            let mut conditions = copy
                .status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default();
            conditions.retain(|c| c.type_ != condition.type_);
            conditions.push(condition);
            let patch = json!({
                "metadata": {"resourceVersion": copy.resource_version()},
                "status": {"conditions": conditions},
            });
            let api = Api::<api::Workload>::namespaced(r.client.clone(), &ns);
            let sent = api
                .patch_status(&copy.name_any(), &params(), &Patch::Merge(&patch))
                .await;
            ignore(sent, &[404, 409])?;
        }
        Action::DeleteRemoteJob { cluster, name } => {
            let (Some(r), Some((kind, _))) = (ctx.remote(&cluster).await, owner) else {
                return Ok(true);
            };
            let named = |j: &&Value| j.at("/metadata/name") == Some(&json!(name));
            let job = held
                .iter()
                .find(|h| h.0 == cluster)
                .and_then(|h| h.3.iter().chain(&h.4).find(named));
            let uid = job
                .and_then(|j| j.at("/metadata/uid"))
                .and_then(Value::as_str);
            delete_job(&r.client, kind, &ns, &name, uid).await?;
        }
        Action::DeleteRemoteWorkload { cluster, name } => {
            let (Some(r), Some(copy)) = (ctx.remote(&cluster).await, copy_of(&cluster)) else {
                return Ok(true);
            };
            debug_assert_eq!(copy.name_any(), name);
            delete_copy(&r.client, &copy).await?;
        }
        Action::CreateRemoteJob { cluster, job } => {
            let (Some(r), Some((kind, _))) = (ctx.remote(&cluster).await, owner) else {
                return Ok(true);
            };
            let api = Api::<DynamicObject>::namespaced_with(r.client.clone(), &ns, &resource(kind));
            let obj: DynamicObject = serde_json::from_value(job)?;
            ignore(api.create(&PostParams::default(), &obj).await, &[409])?;
        }
        Action::PatchRemoteJob {
            cluster,
            name,
            patch,
        } => {
            let (Some(r), Some((kind, _))) = (ctx.remote(&cluster).await, owner) else {
                return Ok(true);
            };
            let api = Api::<DynamicObject>::namespaced_with(r.client.clone(), &ns, &resource(kind));
            let patch: json_patch::Patch = serde_json::from_value(serde_json::to_value(patch)?)?;
            // A copy changed since it was read fails the test: the pass is
            // retried on what is read then.
            let sent = api.patch(&name, &params(), &Patch::<()>::Json(patch)).await;
            ignore(sent, &[404])?;
        }
        Action::CopyJobStatus { name, status } => {
            let named = |j: &&Value| j.at("/metadata/name") == Some(&json!(name));
            let (Some(job), Some((kind, _))) = (
                local.job.into_iter().chain(local.members).find(named),
                owner,
            ) else {
                return Ok(true);
            };
            // The status replaced whole, as Kueue's adapters do, on the
            // version read: a job changed since is copied on the next pass.
            let mut job = job.clone();
            job["status"] = status;
            let api = Api::<DynamicObject>::namespaced_with(
                ctx.shared.client.clone(),
                &ns,
                &resource(kind),
            );
            let body: DynamicObject = serde_json::from_value(job)?;
            let sent = api
                .replace_status(&name, &PostParams::default(), &body)
                .await;
            ignore(sent, &[404, 409])?;
        }
        Action::Local(change) => {
            let was_ready = change.check.as_ref().is_some_and(|c| {
                current
                    .status
                    .as_ref()
                    .and_then(|s| s.admission_checks.as_ref())
                    .and_then(|cs| cs.iter().find(|x| x.name == c.name))
                    .is_some_and(|x| x.state == check_state::READY)
            });
            let admitted_on = change
                .check
                .as_ref()
                .filter(|c| c.state == check_state::READY && !was_ready)
                .and(change.cluster_name.clone());
            let patch = change.merge_patch(current);
            let body = json!({
                "metadata": {"resourceVersion": current.resource_version()},
                "status": patch["status"],
            });
            // Not sent if the Workload webhook (which it skips) would refuse it.
            crate::controllers::vetting::merge_patch(&serde_json::to_value(&*current)?, &body)?;
            let api = Api::<api::Workload>::namespaced(ctx.shared.client.clone(), &ns);
            match api
                .patch_status(&current.name_any(), &params(), &Patch::Merge(&body))
                .await
            {
                Ok(mut written) => {
                    written.managed_fields_mut().clear();
                    *current = written;
                    if let Some(cluster) = admitted_on {
                        ctx.metrics
                            .multikueue_admitted(&cluster_queue(current), &cluster);
                    }
                }
                Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
        Action::Event {
            warning,
            reason,
            message,
        } => {
            ctx.shared
                .workload_event(current, warning, reason, message)
                .await;
        }
        Action::RoundStarted => {
            let key = (ns, current.name_any());
            ctx.rounds.lock().await.insert(key, now.clone());
        }
        Action::ForgetRound => {
            ctx.rounds.lock().await.remove(&(ns, current.name_any()));
        }
        Action::Wake(names) => {
            for name in names {
                let _ = ctx.wake.unbounded_send(ObjectRef::new(&name).within(&ns));
            }
        }
    }
    Ok(true)
}

/// The ClusterQueue a Workload holds quota in (the metrics' label).
fn cluster_queue(wl: &api::Workload) -> String {
    wl.status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .and_then(|a| a.cluster_queue.clone())
        .unwrap_or_default()
}

/// A write's outcome, the codes listed being no error (a create that
/// raced an earlier one, an object changed or gone since it was read).
fn ignore<T>(r: Result<T, kube::Error>, codes: &[u16]) -> Result<(), JobError> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if codes.contains(&e.code) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Deletes a worker's job read as this manager's, by its UID.
async fn delete_job(
    client: &Client,
    kind: &JobKind,
    ns: &str,
    name: &str,
    uid: Option<&str>,
) -> Result<(), JobError> {
    let Some(uid) = uid else {
        // Not read from the worker: nothing known to be ours to delete.
        return Ok(());
    };
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &resource(kind));
    delete_by_uid(&api, name, Some(uid.to_string())).await
}

/// Deletes a worker's copy: Kueue's `resource-in-use` finalizer first (the
/// worker would hold it while the copy has quota), then the copy, by UID.
async fn delete_copy(client: &Client, copy: &api::Workload) -> Result<(), JobError> {
    let ns = copy.namespace().unwrap_or_default();
    let api = Api::<api::Workload>::namespaced(client.clone(), &ns);
    remove_workload_finalizer(&api, &copy.metadata).await?;
    delete_by_uid(&api, &copy.name_any(), copy.metadata.uid.clone()).await
}

/// Every `gcInterval`, each connected worker's copies of Workloads gone
/// here are removed, with the job that owns each when it is this
/// manager's (Kueue's `runGC`; from the watches, so a pass reads nothing).
pub(super) async fn collect(ctx: Arc<Ctx>) {
    let every = ctx.settings.gc_interval.to_std();
    if every.is_zero() {
        info!("MultiKueue garbage collection is off (multiKueue.gcInterval: 0)");
        return;
    }
    let _ = ctx.locals.wait_until_ready().await;
    loop {
        tokio::time::sleep(every).await;
        if !ctx.shared.leads() {
            continue;
        }
        let remotes: Vec<(String, Arc<Remote>)> = {
            let workers = ctx.workers.lock().await;
            workers
                .iter()
                .filter(|(_, w)| w.link.connected)
                .filter_map(|(n, w)| w.remote.clone().map(|r| (n.clone(), r)))
                .collect()
        };
        for (cluster, r) in remotes {
            if !is_ready(&r.workloads) {
                continue;
            }
            let copies = r.workloads.state();
            let found = gc::orphans(
                copies.iter().map(|c| &**c),
                &ctx.settings.origin,
                &ctx.kinds,
                |ns, name| {
                    ctx.locals
                        .get(&ObjectRef::new(name).within(ns))
                        .is_some_and(|l| l.metadata.deletion_timestamp.is_none())
                },
                |k, ns, name| {
                    // A kind not watched yet is from now on; its job is
                    // collected by a later pass.
                    r.jobs(k, &ctx.kinds[k])
                        .get(&ObjectRef::new_with(name, resource(&ctx.kinds[k])).within(ns))
                        .and_then(|j| serde_json::to_value(&*j).ok())
                },
            );
            for o in found {
                info!(%cluster, workload = %format!("{}/{}", o.namespace, o.workload), "MultiKueue garbage collection: the local Workload is gone");
                if let Some(job) = &o.job {
                    let kind = &ctx.kinds[job.kind];
                    let uid = job.uid.as_deref();
                    if let Err(e) = delete_job(&r.client, kind, &o.namespace, &job.name, uid).await
                    {
                        debug!(error = %e, "MultiKueue garbage collection: the job");
                    }
                }
                if let Err(e) = delete_copy(&r.client, &copies[o.copy]).await {
                    debug!(error = %e, "MultiKueue garbage collection: the copy");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use kube::runtime::watcher::Event;
    use serde_json::json;
    use tokio::sync::Mutex;

    use super::*;
    use crate::{
        controllers::{
            context::Shared,
            multikueue::Worker as Held,
            vetting::testing::{scripted_client, sent, status},
        },
        multikueue::{cluster::Link, dispatch::BATCH_JOB, Settings},
    };

    fn ready<K>(objects: Vec<K>, dt: K::DynamicType) -> Store<K>
    where
        K: kube::Resource + Clone + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone,
    {
        let mut writer = reflector::store::Writer::new(dt);
        writer.apply_watcher_event(&Event::Init);
        for o in objects {
            writer.apply_watcher_event(&Event::InitApply(o));
        }
        writer.apply_watcher_event(&Event::InitDone);
        writer.as_reader()
    }

    fn check() -> api::AdmissionCheck {
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
            "metadata": {"name": "mk"},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                     "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                    "name": "cfg"}}}))
        .unwrap()
    }

    fn config() -> api::MultiKueueConfig {
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
            "metadata": {"name": "cfg"}, "spec": {"clusters": ["w1"]}}))
        .unwrap()
    }

    /// A Workload of Job `job1` holding quota in `cq`, its check `mk` in
    /// `state`, nominated to `nominated`.
    fn workload(state: &str, nominated: Option<&[&str]>) -> api::Workload {
        let mut wl: api::Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "wl1", "namespace": "ns", "resourceVersion": "10", "uid": "wu",
                         "labels": {"kueue.x-k8s.io/job-uid": "ju"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                             "name": "job1", "uid": "ju", "controller": true}]},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}]},
            "status": {
                "admission": {"clusterQueue": "cq", "podSetAssignments": [
                    {"name": "main", "count": 1, "flavors": {"cpu": "f"},
                     "resourceUsage": {"cpu": "1"}}]},
                "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "admissionChecks": [{"name": "mk", "state": state, "message": "",
                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
        .unwrap();
        if let Some(n) = nominated {
            wl.status.as_mut().unwrap().nominated_cluster_names =
                Some(n.iter().map(|s| s.to_string()).collect());
        }
        wl
    }

    fn local_job() -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "job1", "namespace": "ns", "uid": "ju", "resourceVersion": "3",
                            "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
               "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "suspend": true,
                        "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    }

    /// A manager connected to worker `w1`, whose watches hold `copies` and
    /// `jobs`.
    fn ctx(
        manager: Client,
        worker: Client,
        copies: Vec<api::Workload>,
        jobs: Vec<DynamicObject>,
    ) -> Arc<Ctx> {
        ctx_of(manager, worker, copies, jobs, BATCH_JOB.clone(), vec![]).0
    }

    /// [`ctx`] dispatching `kind` alone, the manager's Workloads `locals`
    /// in its store; the wakes it sends come out of the receiver.
    fn ctx_of(
        manager: Client,
        worker: Client,
        copies: Vec<api::Workload>,
        jobs: Vec<DynamicObject>,
        kind: JobKind,
        locals: Vec<api::Workload>,
    ) -> (Arc<Ctx>, mpsc::UnboundedReceiver<ObjectRef<api::Workload>>) {
        let (wake, woken) = mpsc::unbounded();
        let remote = Remote {
            client: worker,
            workloads: ready(copies, ()),
            jobs: std::sync::Mutex::new(vec![Some(ready(jobs, resource(&kind)))]),
            selector: String::new(),
            wake: wake.clone(),
            tasks: std::sync::Mutex::new(Vec::new()),
        };
        let mut link = Link::default();
        link.mark_connected();
        let held = Held {
            link,
            remote: Some(Arc::new(remote)),
            ..Held::default()
        };
        let ctx = Arc::new(Ctx {
            shared: Shared::without_kueue(manager),
            namespace: "kueue-system".into(),
            workers: Mutex::new(BTreeMap::from([("w1".to_string(), held)])),
            clusters: reflector::store().0,
            checks: ready(vec![check()], ()),
            configs: ready(vec![config()], ()),
            locals: ready(locals, ()),
            settings: Settings::default(),
            kinds: vec![kind],
            rounds: Mutex::new(HashMap::new()),
            wake,
            links: mpsc::unbounded().0,
            metrics: crate::metrics::Metrics::with_kueue(Default::default())
                .kueue
                .clone(),
        });
        (ctx, woken)
    }

    fn lines(sent: &[(String, Value)]) -> Vec<&str> {
        sent.iter().map(|(l, _)| l.as_str()).collect()
    }

    /// A Workload holding quota whose check is Pending: one read of its
    /// job, the nomination written conditioned on the version read, the
    /// copy created on the worker with the origin label and without the
    /// job's UID label; nothing read from the worker (its watch has it).
    #[tokio::test]
    async fn a_pending_workload_is_nominated_and_copied_in_two_writes() {
        let wl = workload("Pending", None);
        let written = serde_json::to_value(workload("Pending", Some(&["w1"]))).unwrap();
        let (manager, m) = scripted_client(move |method, _, _| match method {
            "GET" => (200, local_job()),
            _ => (200, written.clone()),
        });
        let (worker, w) = scripted_client(|_, _, body| (201, body.clone()));
        let out = reconcile(Arc::new(wl), ctx(manager, worker, vec![], vec![]))
            .await
            .unwrap();
        assert_eq!(out, Requeue::await_change());
        let m = sent(&m);
        assert_eq!(
            lines(&m),
            [
                "GET /apis/batch/v1/namespaces/ns/jobs/job1",
                "PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl1/status",
            ]
        );
        assert_eq!(
            m[1].1,
            json!({"metadata": {"resourceVersion": "10"},
                   "status": {"nominatedClusterNames": ["w1"]}})
        );
        let w = sent(&w);
        assert_eq!(
            lines(&w),
            ["POST /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"]
        );
        let copy = &w[0].1;
        assert_eq!(copy["metadata"]["name"], "wl1");
        assert_eq!(
            copy["metadata"]["labels"],
            json!({"kueue.x-k8s.io/multikueue-origin": "multikueue"})
        );
        assert_eq!(copy["spec"]["queueName"], "lq");
        assert!(copy.get("status").is_none(), "{copy}");
    }

    /// The worker admitted its copy: the job is created there (suspend
    /// kept, managedBy and the manager's selector dropped, origin label and
    /// prebuilt annotation added), then the check turns Ready with the
    /// cluster's name in one conditioned write, and the event is recorded.
    #[tokio::test]
    async fn an_admitted_copy_gets_its_job_and_the_check_turns_ready() {
        let wl = workload("Pending", Some(&["w1"]));
        let mut copy = workload("Pending", None);
        copy.metadata.labels = Some(BTreeMap::from([(
            dispatch::ORIGIN_LABEL.to_string(),
            "multikueue".to_string(),
        )]));
        copy.metadata.resource_version = Some("7".into());
        let conds = copy.status.as_mut().unwrap().conditions.as_mut().unwrap();
        conds.push(
            serde_json::from_value(json!({"type": "Admitted", "status": "True",
                "reason": "Admitted", "message": "", "lastTransitionTime": "2026-01-01T00:00:01Z"}))
            .unwrap(),
        );
        let written = serde_json::to_value(&wl).unwrap();
        let (manager, m) = scripted_client(move |method, path, _| match method {
            "GET" => (200, local_job()),
            "POST" if path.contains("/events") => (201, json!({})),
            _ => (200, written.clone()),
        });
        let (worker, w) = scripted_client(|_, _, body| (201, body.clone()));
        let out = reconcile(Arc::new(wl), ctx(manager, worker, vec![copy], vec![]))
            .await
            .unwrap();
        assert_eq!(
            out,
            Requeue::requeue(Settings::default().worker_lost_timeout.to_std())
        );
        let w = sent(&w);
        assert_eq!(lines(&w), ["POST /apis/batch/v1/namespaces/ns/jobs"]);
        let job = &w[0].1;
        assert_eq!(job["spec"]["suspend"], true);
        assert!(job["spec"].get("managedBy").is_none(), "{job}");
        assert_eq!(
            job["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"],
            "multikueue"
        );
        assert_eq!(
            job["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"],
            "wl1"
        );
        let m = sent(&m);
        let patches: Vec<&(String, Value)> =
            m.iter().filter(|(l, _)| l.starts_with("PATCH")).collect();
        assert_eq!(patches.len(), 1, "{m:?}");
        let st = &patches[0].1["status"];
        assert_eq!(patches[0].1["metadata"]["resourceVersion"], "10");
        assert_eq!(st["clusterName"], "w1");
        assert_eq!(st["nominatedClusterNames"], Value::Null);
        assert_eq!(st["admissionChecks"][0]["state"], "Ready");
        assert_eq!(
            st["admissionChecks"][0]["message"],
            "The workload was admitted on \"w1\""
        );
    }

    /// A job of the Workload's name on the worker that is not this
    /// manager's: nothing is written anywhere, the pass looks again later.
    #[tokio::test]
    async fn a_workers_job_of_another_origin_is_never_touched() {
        let wl = workload("Pending", Some(&["w1"]));
        let mut copy = workload("Pending", None);
        copy.metadata.labels = Some(BTreeMap::from([(
            dispatch::ORIGIN_LABEL.to_string(),
            "multikueue".to_string(),
        )]));
        let conds = copy.status.as_mut().unwrap().conditions.as_mut().unwrap();
        conds.push(
            serde_json::from_value(json!({"type": "Admitted", "status": "True",
                "reason": "Admitted", "message": "", "lastTransitionTime": "2026-01-01T00:00:01Z"}))
            .unwrap(),
        );
        let theirs: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "job1", "namespace": "ns", "uid": "someone-elses"}}))
        .unwrap();
        let (manager, m) = scripted_client(|method, _, _| match method {
            "GET" => (200, local_job()),
            _ => (500, status(500, "unexpected")),
        });
        let (worker, w) = scripted_client(|_, _, _| (500, status(500, "unexpected")));
        let out = reconcile(Arc::new(wl), ctx(manager, worker, vec![copy], vec![theirs]))
            .await
            .unwrap();
        assert_eq!(out, Requeue::requeue(TROUBLE_RETRY));
        assert!(sent(&w).is_empty());
        assert_eq!(
            lines(&sent(&m)),
            ["GET /apis/batch/v1/namespaces/ns/jobs/job1"]
        );
    }

    fn lws_kind() -> JobKind {
        let policies = crate::jobs::policy::PolicySet::embedded().unwrap();
        let kind = policies
            .iter()
            .find(|p| p.target.kind == "LeaderWorkerSet")
            .and_then(|p| JobKind::from_policy(p));
        kind.unwrap()
    }

    /// Group `index`'s Workload of LeaderWorkerSet `lws1` (uid `lu`).
    fn lws_workload(name: &str, index: &str, state: &str) -> api::Workload {
        let mut wl = workload(state, None);
        wl.metadata.name = Some(name.into());
        wl.metadata.owner_references = Some(vec![serde_json::from_value(json!({
            "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "name": "lws1", "uid": "lu"}))
        .unwrap()]);
        wl.metadata.annotations = Some(BTreeMap::from([
            (
                "kueue.x-k8s.io/job-owner-gvk".into(),
                "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet".into(),
            ),
            ("kueue.x-k8s.io/job-owner-name".into(), "lws1".into()),
            (
                "kueue.x-k8s.io/component-workload-index".into(),
                index.into(),
            ),
        ]));
        wl
    }

    fn local_lws() -> Value {
        json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
               "metadata": {"name": "lws1", "namespace": "ns", "uid": "lu", "resourceVersion": "3",
                            "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
               "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2,
                        "workerTemplate": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}})
    }

    /// A LeaderWorkerSet's second Workload, its first already admitted on
    /// w1 (read from the manager's store, not the apiserver): one read of
    /// the set, nominated to w1 alone on the version read, its copy
    /// created there.
    #[tokio::test]
    async fn a_leaderworkersets_second_workload_follows_the_first_to_its_worker() {
        let mut first = lws_workload("wl0", "0", "Ready");
        first.status.as_mut().unwrap().cluster_name = Some("w1".into());
        let second = lws_workload("wl1", "1", "Pending");
        let written = serde_json::to_value(&second).unwrap();
        let (manager, m) = scripted_client(move |method, _, _| match method {
            "GET" => (200, local_lws()),
            _ => (200, written.clone()),
        });
        let (worker, w) = scripted_client(|_, _, body| (201, body.clone()));
        let locals = vec![first, second.clone()];
        let (ctx, _) = ctx_of(manager, worker, vec![], vec![], lws_kind(), locals);
        reconcile(Arc::new(second), ctx).await.unwrap();
        let m = sent(&m);
        assert_eq!(
            lines(&m),
            [
                "GET /apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets/lws1",
                "PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl1/status",
            ]
        );
        assert_eq!(
            m[1].1,
            json!({"metadata": {"resourceVersion": "10"},
                   "status": {"nominatedClusterNames": ["w1"]}})
        );
        let w = sent(&w);
        assert_eq!(
            lines(&w),
            ["POST /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"]
        );
        assert_eq!(w[0].1["metadata"]["name"], "wl1");
    }

    /// The first Workload admitted on w1: the set is created there once
    /// (the manager's UID in its annotation, no Workload named), the check
    /// turns Ready, and the set's other Workload is woken to follow.
    #[tokio::test]
    async fn a_leaderworkersets_first_admitted_workload_creates_the_set_and_wakes_the_other() {
        let mut first = lws_workload("wl0", "0", "Pending");
        first.status.as_mut().unwrap().nominated_cluster_names = Some(vec!["w1".into()]);
        let mut copy = lws_workload("wl0", "0", "Pending");
        copy.metadata.owner_references = None;
        copy.metadata.labels = Some(BTreeMap::from([(
            dispatch::ORIGIN_LABEL.to_string(),
            "multikueue".to_string(),
        )]));
        let conds = copy.status.as_mut().unwrap().conditions.as_mut().unwrap();
        conds.push(
            serde_json::from_value(json!({"type": "Admitted", "status": "True",
                "reason": "Admitted", "message": "", "lastTransitionTime": "2026-01-01T00:00:01Z"}))
            .unwrap(),
        );
        let written = serde_json::to_value(&first).unwrap();
        let (manager, m) = scripted_client(move |method, path, _| match method {
            "GET" => (200, local_lws()),
            "POST" if path.contains("/events") => (201, json!({})),
            _ => (200, written.clone()),
        });
        let (worker, w) = scripted_client(|_, _, body| (201, body.clone()));
        let locals = vec![first.clone(), lws_workload("wl1", "1", "Pending")];
        let (ctx, mut woken) = ctx_of(manager, worker, vec![copy], vec![], lws_kind(), locals);
        reconcile(Arc::new(first), ctx).await.unwrap();
        let w = sent(&w);
        assert_eq!(
            lines(&w),
            ["POST /apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets"]
        );
        let set = &w[0].1["metadata"];
        assert_eq!(
            set["annotations"],
            json!({"kueue.x-k8s.io/multikueue-origin-uid": "lu"})
        );
        assert_eq!(
            set["labels"],
            json!({"kueue.x-k8s.io/queue-name": "lq",
                   "kueue.x-k8s.io/multikueue-origin": "multikueue"})
        );
        let patch = sent(&m)
            .into_iter()
            .find(|(l, _)| l.starts_with("PATCH"))
            .expect("the check written");
        assert_eq!(patch.1["status"]["clusterName"], "w1");
        assert_eq!(
            woken.try_recv().ok().map(|r| r.name),
            Some("wl1".to_string())
        );
    }
}
