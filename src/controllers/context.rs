//! What the controllers share, at the bottom of `controllers/`: the
//! manager identity (field manager), the Workload status writer and its
//! error, the shared watch-backed stores, the quota release of an evicted
//! Workload, and what an admission adds to a job's pod sets. It imports no
//! controller; every controller may import it (see `tests/architecture.rs`).

use crate::vocabulary::pointer::At;
use std::{
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use futures::{channel::mpsc, Stream, StreamExt};

use k8s_openapi::api::{core::v1::ObjectReference, scheduling::v1::PriorityClass};
use kube::{
    api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams},
    runtime::{
        events::{Event as KEvent, EventType, Recorder, Reporter},
        reflector::{self, ObjectRef, Store},
        watcher, WatchStreamExt,
    },
    Api, Client, Resource, ResourceExt,
};
use serde_json::{json, Value};
use tracing::{debug, info};

use crate::vocabulary::keys;
use crate::{
    api::kueue::v1beta2 as api,
    devices::allocation,
    jobs::workload::{self, PodSetInfo, PriorityClasses},
    jobs::{
        machine::{Note, TAKEOVER_BEAT},
        policy::Target,
    },
};

/// Field manager of every write.
pub const MANAGER: &str = "batchgate";

pub fn params() -> PatchParams {
    PatchParams {
        field_manager: Some(MANAGER.into()),
        ..PatchParams::default()
    }
}

/// What a PreScaledCronJob controller's pass (the CronJob's or the primed
/// pods') can fail with.
#[derive(Debug, thiserror::Error)]
pub enum PrescaleError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("encoding: {0}")]
    Json(#[from] serde_json::Error),
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Workload(#[from] workload::WorkloadError),
    #[error("encoding: {0}")]
    Json(#[from] serde_json::Error),
    /// A Workload write the Workload webhook would refuse: not sent.
    #[error(transparent)]
    Refused(#[from] super::vetting::Refused),
}

/// What every job reconciler shares: caches of the objects a start or a
/// Workload needs (flavors, priority classes), and the event recorder.
#[derive(Clone)]
pub struct Shared {
    pub client: Client,
    pub flavors: Store<api::ResourceFlavor>,
    workload_classes: Store<api::WorkloadPriorityClass>,
    pod_classes: Store<PriorityClass>,
    pub recorder: Recorder,
    /// Whether this replica holds the reconciler Lease.
    leading: tokio::sync::watch::Receiver<bool>,
    /// When a reconcile that waited for the Lease saw it taken.
    took_over: std::sync::Arc<std::sync::OnceLock<tokio::time::Instant>>,
    /// Started by the first controller that asks for it.
    workloads: Arc<OnceLock<WorkloadFeed>>,
}

impl Shared {
    /// Records an event on `reference`, its note cut at 1,024 bytes' worth
    /// of characters as Kueue's are. A failure is logged, not returned: an
    /// event is never worth a retried reconcile.
    pub async fn publish(&self, reference: &ObjectReference, note: Note) {
        let ev = KEvent {
            type_: if note.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            action: note.reason.clone(),
            reason: note.reason,
            note: Some(note.message.chars().take(1024).collect()),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, reference).await {
            debug!(error = %e, "event not recorded");
        }
    }

    /// An event on a Workload (the admission-check controllers' events).
    pub async fn workload_event(
        &self,
        wl: &api::Workload,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        let note = Note {
            warning,
            reason: reason.into(),
            message: note,
        };
        self.publish(&workload_reference(wl), note).await
    }

    /// Watches flavors and priority classes and waits for their first
    /// lists, so no Workload is written from an empty cache.
    /// `leading`: whether this replica holds the Lease; the controllers
    /// start on a standby too (their caches warm) and act once it leads.
    pub async fn start(client: Client, leading: tokio::sync::watch::Receiver<bool>) -> Self {
        let shared = Shared {
            flavors: store(Api::all(client.clone())),
            workload_classes: store(Api::all(client.clone())),
            pod_classes: store(Api::all(client.clone())),
            recorder: job_recorder(&client),
            client,
            leading,
            took_over: Default::default(),
            workloads: Default::default(),
        };
        let _ = shared.flavors.wait_until_ready().await;
        let _ = shared.workload_classes.wait_until_ready().await;
        let _ = shared.pod_classes.wait_until_ready().await;
        shared
    }

    /// Without Kueue's caches (empty stores, never filled): for the
    /// AppWrapper controller alone under `admission: external`, which reads
    /// no flavor or priority class. Started once the Lease is held.
    pub fn without_kueue(client: Client) -> Self {
        Shared {
            flavors: reflector::store().0,
            workload_classes: reflector::store().0,
            pod_classes: reflector::store().0,
            recorder: job_recorder(&client),
            client,
            leading: tokio::sync::watch::channel(true).1,
            took_over: Default::default(),
            workloads: Default::default(),
        }
    }

    /// Resolves once this replica leads: every reconcile waits here, so a
    /// standby's controllers keep their caches and queues warm and write
    /// nothing (the fence would refuse it anyway). `true` when it had to
    /// wait: the object the reconcile was handed may be long stale, so it
    /// is reconciled again from the cache instead.
    pub async fn leading(&self) -> bool {
        let mut leading = self.leading.clone();
        if *leading.borrow() {
            return false;
        }
        if leading.wait_for(|l| *l).await.is_err() {
            // The elector is gone without this replica ever leading.
            std::future::pending::<()>().await;
        }
        self.took_over.get_or_init(tokio::time::Instant::now);
        true
    }

    /// How much longer a pass whose turn comes `after` the takeover waits
    /// (`jobs::machine::after_takeover`, asked only within its
    /// [`TAKEOVER_BEAT`] of the takeover); `None` once its turn has come,
    /// or when this replica led from the start.
    pub fn takeover_turn(&self, after: impl FnOnce() -> Duration) -> Option<Duration> {
        let took = *self.took_over.get()?;
        if took.elapsed() >= TAKEOVER_BEAT {
            return None;
        }
        (took + after())
            .checked_duration_since(tokio::time::Instant::now())
            .filter(|d| !d.is_zero())
    }

    /// Whether this replica leads now.
    pub fn leads(&self) -> bool {
        *self.leading.borrow()
    }

    /// The watch of every Workload, started on the first call.
    pub fn workloads(&self) -> &WorkloadFeed {
        self.workloads
            .get_or_init(|| WorkloadFeed::start(self.client.clone()))
    }
}

impl Shared {
    /// The priority classes known now, for a Workload's priority.
    pub fn classes(&self) -> PriorityClasses {
        let mut c = PriorityClasses::default();
        for w in self.workload_classes.state() {
            c.workload.insert(w.name_any(), w.spec.value);
        }
        for p in self.pod_classes.state() {
            if p.global_default == Some(true) {
                c.global_default = Some(p.name_any());
            }
            c.pod.insert(p.name_any(), p.value);
        }
        c
    }
}

/// The reference of an object of `target`'s kind, read from its JSON.
pub fn reference_of(target: &Target, obj: &Value) -> ObjectReference {
    let text = |p: &str| obj.at(p).and_then(Value::as_str).map(String::from);
    ObjectReference {
        api_version: Some(target.api_version()),
        kind: Some(target.kind.clone()),
        name: text("/metadata/name"),
        namespace: text("/metadata/namespace"),
        uid: text("/metadata/uid"),
        ..Default::default()
    }
}

/// The reference of a Workload.
pub fn workload_reference(wl: &api::Workload) -> ObjectReference {
    ObjectReference {
        api_version: Some("kueue.x-k8s.io/v1beta2".into()),
        kind: Some("Workload".into()),
        name: wl.metadata.name.clone(),
        namespace: wl.metadata.namespace.clone(),
        uid: wl.metadata.uid.clone(),
        ..Default::default()
    }
}

pub fn store<K>(api: Api<K>) -> Store<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (reader, writer) = reflector::store();
    crate::cluster::drive(
        crate::cluster::watch::name_of::<K>(&()),
        watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .touched_objects(),
    );
    reader
}

/// One watch of every Workload, shared by the controllers that read them
/// all (admission checks, provisioning, MultiKueue dispatch, node
/// failure): one list, one cache and one decode per change instead of one
/// per controller. Its cache keeps each Workload without its
/// managedFields: three managers write a Workload, so they are most of it,
/// and nothing that reads this cache looks at them (a status patch is
/// vetted against the rest of the object).
#[derive(Clone)]
pub struct WorkloadFeed {
    store: Store<api::Workload>,
    subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<Arc<api::Workload>>>>>,
}

impl WorkloadFeed {
    fn start(client: Client) -> Self {
        let writer = reflector::store::Writer::default();
        let store = writer.as_reader();
        let events = watcher(
            Api::<api::Workload>::all(client),
            watcher::Config::default(),
        )
        .default_backoff()
        .modify(|w: &mut api::Workload| w.managed_fields_mut().clear());
        let changes = crate::cluster::watch::ready_objects(
            "workloads.kueue.x-k8s.io".into(),
            events,
            writer,
            (),
        );
        Self::over(store, changes)
    }

    /// A feed of `changes`, each already in `store` when it comes.
    pub fn over<S>(store: Store<api::Workload>, changes: S) -> Self
    where
        S: Stream<Item = Result<api::Workload, watcher::Error>> + Send + 'static,
    {
        let feed = WorkloadFeed {
            store,
            subscribers: Arc::default(),
        };
        let subscribers = feed.subscribers.clone();
        tokio::spawn(async move {
            let mut changes = std::pin::pin!(changes);
            while let Some(change) = changes.next().await {
                // Errors are logged and counted where the watch is read.
                let Ok(wl) = change else { continue };
                let wl = Arc::new(wl);
                let mut subs = subscribers.lock().unwrap_or_else(|e| e.into_inner());
                subs.retain(|tx| tx.unbounded_send(wl.clone()).is_ok());
            }
        });
        feed
    }

    /// Every change from now on, after what the cache holds now: a
    /// controller started late misses nothing. Under the subscribers' lock,
    /// so no change falls between the replay and the first one sent.
    pub fn subscribe(&self) -> impl Stream<Item = Arc<api::Workload>> + Send + 'static {
        let (tx, rx) = mpsc::unbounded();
        let mut subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        for wl in self.store.state() {
            let _ = tx.unbounded_send(wl);
        }
        subs.push(tx);
        rx
    }

    /// The cache (filled once the first list is in).
    pub fn store(&self) -> Store<api::Workload> {
        self.store.clone()
    }

    /// A controller over every Workload, triggered by this feed.
    pub fn controller(&self) -> kube::runtime::Controller<api::Workload> {
        kube::runtime::Controller::for_shared_stream(self.subscribe(), self.store())
    }

    /// [`Self::controller`] triggered only by the changes `wanted` keeps:
    /// a controller whose pass would do nothing for most Workloads (no
    /// admission check on them) skips the reconcile machinery for those.
    /// Its other triggers, and a requeue a pass asked for, still reconcile
    /// any Workload from the whole cache.
    pub fn controller_where(
        &self,
        wanted: impl Fn(&api::Workload) -> bool + Send + 'static,
    ) -> kube::runtime::Controller<api::Workload> {
        let changes = self
            .subscribe()
            .filter(move |wl| futures::future::ready(wanted(wl)));
        kube::runtime::Controller::for_shared_stream(changes, self.store())
    }
}

/// Whether a Workload carries admission check states: without them, and
/// without checks on its queue, the check controllers have nothing to do.
pub fn has_check_states(wl: &api::Workload) -> bool {
    wl.status
        .as_ref()
        .and_then(|s| s.admission_checks.as_ref())
        .is_some_and(|c| !c.is_empty())
}

/// Resolves once the kind is served, polling while its CRD is missing.
pub async fn served(jobs: Api<DynamicObject>, integration: String) {
    let mut told = false;
    loop {
        match jobs
            .list_metadata(&kube::api::ListParams::default().limit(1))
            .await
        {
            Err(kube::Error::Api(e)) if e.code == 404 => {
                if !told {
                    info!(%integration, "kind not served yet; its reconciler starts when its CRD is installed");
                    told = true;
                }
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            _ => {
                if told {
                    info!(%integration, "kind served; its reconciler starts");
                }
                return;
            }
        }
    }
}

/// Creates a job's Workload from `body` once the Workload webhook's rules
/// (which it skips) pass it. `true` when it was created; `false` when one
/// of that name exists already (an earlier pass created it; the watch
/// brings it).
pub async fn create_workload(client: &Client, ns: &str, body: Value) -> Result<bool, JobError> {
    super::vetting::create(&body)?;
    let api = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::erase::<api::Workload>(&()),
    );
    let obj: DynamicObject = serde_json::from_value(body)?;
    let params = PostParams {
        field_manager: Some(MANAGER.into()),
        ..PostParams::default()
    };
    match api.create(&params, &obj).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Merge-patches the Workload's `spec` with `spec`; not sent if the
/// Workload webhook would refuse it.
pub async fn write_workload_spec(
    api: &Api<api::Workload>,
    wl: &api::Workload,
    spec: Value,
) -> Result<(), JobError> {
    let patch = json!({ "spec": spec });
    super::vetting::merge_patch(&serde_json::to_value(wl)?, &patch)?;
    api.patch(&wl.name_any(), &params(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// The time now, as Kubernetes writes it.
pub fn now_time() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
}

pub async fn write_workload_status(
    api: &Api<api::Workload>,
    wl: &api::Workload,
    status: Value,
) -> Result<(), JobError> {
    workload_status_written(api, wl, status).await.map(|_| ())
}

/// The wait before deciding again once a Workload write of a pass was
/// refused: the pass's later writes (a pod let go after its quota's
/// release) were decided on the version another write replaced.
pub const STALE: std::time::Duration = std::time::Duration::from_millis(200);

/// A Workload's status written on the version read: `false` when another
/// write came first (409) or the Workload is gone (404), so whatever was
/// decided on that version after this write is stale.
pub async fn workload_status_written(
    api: &Api<api::Workload>,
    wl: &api::Workload,
    status: Value,
) -> Result<bool, JobError> {
    // Not sent if the Workload webhook (which it skips) would refuse it.
    super::vetting::merge_patch(&serde_json::to_value(wl)?, &json!({ "status": &status }))?;
    let patch = json!({
        "metadata": {"resourceVersion": wl.resource_version()},
        "status": status,
    });
    match api
        .patch_status(&wl.name_any(), &params(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Deletes an object read as ours, in the background, with its UID as the
/// precondition so a same-named successor is never hit: gone already, or
/// a Conflict (not ours any more), is no error.
pub async fn delete_by_uid<K>(api: &Api<K>, name: &str, uid: Option<String>) -> Result<(), JobError>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut dp = kube::api::DeleteParams::background();
    dp.preconditions = Some(kube::api::Preconditions {
        uid,
        resource_version: None,
    });
    match api.delete(name, &dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Lets go of Kueue's `resource-in-use` finalizer on a Workload
/// (`workload.RemoveFinalizer`), keeping everyone else's. `true` when a
/// write was made; a Workload changed or gone since `meta` was read is
/// left to the next pass.
pub async fn remove_workload_finalizer(
    api: &Api<api::Workload>,
    meta: &kube::api::ObjectMeta,
) -> Result<bool, JobError> {
    let finalizers = meta.finalizers.clone().unwrap_or_default();
    if !finalizers
        .iter()
        .any(|f| f == keys::RESOURCE_IN_USE_FINALIZER)
    {
        return Ok(false);
    }
    let rest: Vec<&String> = finalizers
        .iter()
        .filter(|f| *f != keys::RESOURCE_IN_USE_FINALIZER)
        .collect();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta.resource_version},
        {"op": "add", "path": "/metadata/finalizers", "value": rest},
    ]))?;
    let name = meta.name.clone().unwrap_or_default();
    match api.patch(&name, &params(), &Patch::<()>::Json(patch)).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409 | 422) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What a Workload's admission adds to each pod set's template: the pod
/// set and queue labels, the flavors' node labels and tolerations.
pub fn admission_pod_set_infos(
    flavors: &Store<api::ResourceFlavor>,
    wl: &api::Workload,
    queue: &str,
) -> Option<Vec<PodSetInfo>> {
    let Some(a) = wl.status.as_ref().and_then(|s| s.admission.as_ref()) else {
        return Some(Vec::new());
    };
    // A flavor created a moment ago may not have reached this watch yet
    // (the queueing engine's own watch saw it first): starting now would
    // leave its node labels out of the templates. `None`: look again soon.
    let all_known = a
        .pod_set_assignments
        .iter()
        .flatten()
        .flat_map(|psa| psa.flavors.iter().flatten().map(|(_, f)| f))
        .all(|f| flavors.get(&ObjectRef::new(f)).is_some());
    if !all_known {
        return None;
    }
    let cq = a.cluster_queue.clone().unwrap_or_default();
    a.pod_set_assignments
        .iter()
        .flatten()
        .map(|psa| {
            let mut info = PodSetInfo {
                name: psa.name.clone(),
                count: psa.count.map(i64::from),
                ..PodSetInfo::default()
            };
            info.labels
                .insert(keys::PODSET_LABEL.into(), psa.name.clone());
            if !queue.is_empty() {
                info.labels
                    .insert(keys::LOCAL_QUEUE_LABEL.into(), queue.to_string());
            }
            // Kueue labels pods with the ClusterQueue's name only when it
            // is a DNS-1123 label.
            if crate::vocabulary::names::is_dns1123_label(&cq) {
                info.labels
                    .insert(keys::CLUSTER_QUEUE_LABEL.into(), cq.clone());
            }
            // A pod set placed by implied TAS says so on its pods (Kueue's
            // `FromAssignment`), so they count as TAS pods, not as node
            // usage outside TAS.
            // Kueue names the Workload on every pod (its TAS gate is on by
            // default); the topology ungater finds a pod's placement by it.
            info.annotations
                .insert(keys::WORKLOAD_ANNOTATION.into(), wl.name_any());
            if psa.topology_assignment.is_some() {
                info.scheduling_gates.push(keys::TOPOLOGY_GATE.into());
                let request = wl
                    .spec
                    .pod_sets
                    .iter()
                    .flatten()
                    .find(|p| p.name == psa.name)
                    .and_then(|p| p.topology_request.as_ref());
                if request.is_none_or(|r| {
                    r.required.is_none() && r.preferred.is_none() && r.unconstrained.is_none()
                }) {
                    info.annotations.insert(
                        keys::PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION.into(),
                        "true".into(),
                    );
                }
            }
            // Pods with devices go to the node holding them.
            if let Some(node) = pinned_node(wl, &psa.name) {
                info.node_selector
                    .insert("kubernetes.io/hostname".into(), node);
            }
            let mut seen = Vec::new();
            for flavor in psa.flavors.iter().flatten().map(|(_, f)| f) {
                if seen.contains(flavor) {
                    continue;
                }
                seen.push(flavor.clone());
                if let Some(rf) = flavors.get(&ObjectRef::new(flavor)) {
                    for (k, v) in rf.spec.node_labels.iter().flatten() {
                        info.node_selector.insert(k.clone(), v.clone());
                    }
                    for t in rf.spec.tolerations.iter().flatten() {
                        if let Ok(v) = serde_json::to_value(t) {
                            if !info.tolerations.contains(&v) {
                                info.tolerations.push(v);
                            }
                        }
                    }
                }
            }
            info
        })
        .collect::<Vec<_>>()
        .into()
}

/// The node a Workload's allocation pins a pod set to
/// (`kubernetes.io/hostname`), if it has one.
pub fn pinned_node(wl: &api::Workload, pod_set: &str) -> Option<String> {
    let allocs = allocation::parse(wl.annotations().get(allocation::ANNOTATION)?).ok()?;
    allocation::node_of(&allocs, pod_set).map(String::from)
}

/// The job controllers' event recorder, reporting as this replica.
fn job_recorder(client: &Client) -> Recorder {
    Recorder::new(
        client.clone(),
        Reporter {
            controller: "batchgate-job-controller".into(),
            instance: std::env::var("HOSTNAME").ok(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::watcher::Event;

    fn wl(name: &str, rv: &str) -> api::Workload {
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}]}
        }))
        .unwrap()
    }

    /// A feed over a channel of watch events, as the apiserver would send.
    fn feed() -> (
        WorkloadFeed,
        mpsc::UnboundedSender<Result<Event<api::Workload>, watcher::Error>>,
    ) {
        let (tx, rx) = mpsc::unbounded();
        let writer = reflector::store::Writer::default();
        let store = writer.as_reader();
        let changes = crate::cluster::watch::ready_objects("workloads.test".into(), rx, writer, ());
        (WorkloadFeed::over(store, changes), tx)
    }

    /// The first list of a watch: `workloads`, then its end.
    fn list(
        tx: &mpsc::UnboundedSender<Result<Event<api::Workload>, watcher::Error>>,
        workloads: impl IntoIterator<Item = api::Workload>,
    ) {
        let evs = std::iter::once(Event::Init)
            .chain(workloads.into_iter().map(Event::InitApply))
            .chain([Event::InitDone]);
        for ev in evs {
            tx.unbounded_send(Ok(ev)).unwrap();
        }
    }

    async fn next(s: &mut (impl Stream<Item = Arc<api::Workload>> + Unpin)) -> String {
        let wl = tokio::time::timeout(Duration::from_secs(5), s.next())
            .await
            .expect("a change within 5 s")
            .expect("the feed is open");
        format!(
            "{}@{}",
            wl.name_any(),
            wl.resource_version().unwrap_or_default()
        )
    }

    /// Each controller on the shared watch must see what its own watch
    /// would have shown it: one subscribed before the first list and one
    /// subscribed after it both see every Workload, and both see a later
    /// change.
    #[tokio::test]
    async fn every_subscriber_sees_every_change_early_or_late() {
        let (feed, tx) = feed();
        let mut early = Box::pin(feed.subscribe());
        list(&tx, [wl("a", "1"), wl("b", "2")]);
        let mut seen = vec![next(&mut early).await, next(&mut early).await];
        seen.sort();
        assert_eq!(seen, ["a@1", "b@2"]);
        feed.store().wait_until_ready().await.unwrap();

        let mut late = Box::pin(feed.subscribe());
        let mut seen = vec![next(&mut late).await, next(&mut late).await];
        seen.sort();
        assert_eq!(seen, ["a@1", "b@2"], "a late subscriber is given the cache");

        tx.unbounded_send(Ok(Event::Apply(wl("a", "3")))).unwrap();
        assert_eq!(next(&mut early).await, "a@3");
        assert_eq!(next(&mut late).await, "a@3");
    }

    /// A filtered controller passes over the changes it does not want,
    /// and its other triggers still reach every Workload in the cache.
    #[tokio::test]
    async fn a_filtered_controller_reconciles_only_what_it_wants() {
        let (feed, tx) = feed();
        let (all, all_on) = mpsc::unbounded::<()>();
        let (seen_tx, mut seen) = mpsc::unbounded::<String>();
        let controller = feed
            .controller_where(|w| w.name_any() != "skipped")
            .reconcile_all_on(all_on);
        tokio::spawn(
            controller
                .run(
                    |w: Arc<api::Workload>, seen: Arc<mpsc::UnboundedSender<String>>| async move {
                        let _ = seen.unbounded_send(w.name_any());
                        Ok::<_, JobError>(kube::runtime::controller::Action::await_change())
                    },
                    |_, _, _| kube::runtime::controller::Action::await_change(),
                    Arc::new(seen_tx),
                )
                .for_each(|_| futures::future::ready(())),
        );
        async fn reconciled(seen: &mut mpsc::UnboundedReceiver<String>) -> String {
            tokio::time::timeout(Duration::from_secs(5), seen.next())
                .await
                .expect("a reconcile within 5 s")
                .expect("the controller runs")
        }
        list(&tx, [wl("skipped", "1"), wl("wanted", "2")]);
        assert_eq!(reconciled(&mut seen).await, "wanted");
        tx.unbounded_send(Ok(Event::Apply(wl("skipped", "3"))))
            .unwrap();
        tx.unbounded_send(Ok(Event::Apply(wl("wanted", "4"))))
            .unwrap();
        assert_eq!(
            reconciled(&mut seen).await,
            "wanted",
            "a change not wanted is passed over"
        );

        all.unbounded_send(()).unwrap();
        let mut both = vec![reconciled(&mut seen).await, reconciled(&mut seen).await];
        both.sort();
        assert_eq!(
            both,
            ["skipped", "wanted"],
            "another trigger reaches every Workload"
        );
    }

    #[tokio::test]
    async fn a_subscriber_gone_does_not_stop_the_others() {
        let (feed, tx) = feed();
        let gone = feed.subscribe();
        let mut kept = Box::pin(feed.subscribe());
        drop(gone);
        tx.unbounded_send(Ok(Event::Apply(wl("a", "1")))).unwrap();
        tx.unbounded_send(Ok(Event::Apply(wl("b", "2")))).unwrap();
        assert_eq!(next(&mut kept).await, "a@1");
        assert_eq!(next(&mut kept).await, "b@2");
        assert_eq!(
            feed.subscribers.lock().unwrap().len(),
            1,
            "the closed subscriber is dropped"
        );
    }
}
