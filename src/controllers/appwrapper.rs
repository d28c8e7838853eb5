//! The AppWrapper controller: a thin shell around
//! the pure lifecycle core ([`crate::appwrapper::reconcile`]) and Kueue's
//! AppWrapper integration, in one reconcile per AppWrapper:
//!
//! 1. read the AppWrapper, GET each created component by its kind (resource
//!    names by discovery; the GETs are uncached, so reads are live) and
//!    list its pods (`workload.codeflare.dev/appwrapper=<name>`);
//! 2. call the core, write the status it returns (status subresource,
//!    resourceVersion precondition), then run its actions in order, calling
//!    the core again after a create batch or a live re-read;
//! 3. with a queue name: keep one Workload per AppWrapper (pod sets from
//!    `status.componentStatus[].podSets`, templates read at each path);
//!    once admitted write `podSetInfos` and `suspend=false` in one patch;
//!    when evicted `suspend=true` and clear `podSetInfos`, and give the
//!    quota back once the core's `QuotaReserved` is False; finish the
//!    Workload when the phase is Succeeded or Failed (Kueue's `Finished()`).
//!
//! With `autopilot.monitorNodes` a Node watch keeps Autopilot's node
//! health ([`core::node_health`]) for the reconciles to read; a node newly
//! flagged NoExecute wakes the AppWrappers with pods on it at once
//! (upstream notices at their next periodic check, up to a minute later).

use std::{
    collections::{BTreeSet, HashMap, HashSet},
    sync::{Arc, RwLock},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::{
    api::{
        DeleteParams, DynamicObject, ListParams, Patch, PostParams, Preconditions,
        PropagationPolicy,
    },
    core::{ApiResource, GroupVersionKind},
    runtime::{
        controller::Action as Requeue,
        events::{Event as KEvent, EventType},
        reflector::ObjectRef,
        watcher, WatchStreamExt,
    },
    Api, Client, Resource, ResourceExt,
};
use serde_json::{json, Value};
use tracing::{debug, info, warn};

use super::context::{
    admission_pod_set_infos, now_time, params, served, write_workload_spec, write_workload_status,
    JobError, Shared, MANAGER,
};
use crate::api::kueue::v1beta2::{finished_reason, Conditions};
use crate::queueing::reservation::release;
use crate::vocabulary::keys::{self, QUEUE_NAME_LABEL};
use crate::{
    admission::entitlement::ComponentCheck,
    api::{
        appwrapper::{v1beta2::AppWrapper as AppWrapperObject, GROUP},
        kueue::v1beta2::{self as api, condition},
    },
    appwrapper::{
        self as core,
        config::{Autopilot, OperatorConfig},
        kueue,
        node_health::{NodeFacts, NodeHealth},
        observe::{
            controller_ref, CreateResult, Observed, ObservedComponent, ObservedPod, OwnerLink,
            OwnerRef,
        },
        podsets::{self, raw_template_at, PodSetInfo},
        status::Status,
        Action, Propagation, APPWRAPPER_CONTROLLER_NAME, APPWRAPPER_FINALIZER, APPWRAPPER_KIND,
        APPWRAPPER_LABEL,
    },
    cluster::discovery::{KubeDiscovery, ResourceNames, ANY_RESOURCE},
    cluster::watch::Health,
    jobs::{machine, workload},
};

#[derive(Debug, thiserror::Error)]
pub enum AppWrapperError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("encoding: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Lifecycle(#[from] core::LifecycleError),
    #[error(transparent)]
    Job(#[from] JobError),
}

struct Ctx {
    shared: Shared,
    resources: ResourceNames,
    config: OperatorConfig,
    /// Autopilot's view of the nodes, kept by [`watch_nodes`]; empty when
    /// `autopilot.monitorNodes` is off.
    nodes: Arc<RwLock<NodeHealth>>,
    /// Kueue's side runs here (`admission: builtin`): one Workload per
    /// queued AppWrapper, started and stopped by its admission. `false`
    /// under `admission: external`, where an upstream Kueue does that
    /// through `spec.suspend` and `podSetInfos`.
    kueue: bool,
    /// The wrapped kinds watched so far (`None` in tests without a
    /// controller).
    components: Option<ComponentWatches>,
    /// waitForPodsReady, when on: the Workload's `PodsReady` follows the
    /// AppWrapper's, and one not ready in time is evicted.
    readiness: Option<crate::jobs::readiness::Settings>,
}

/// Watches of the kinds AppWrappers wrap, one per kind, started when the
/// controller first reads or creates an object of it: a component's own
/// change (a Job failing, a JobSet's status) wakes its AppWrapper at once,
/// not at its next pod event or timed look.
struct ComponentWatches {
    client: Client,
    /// `apiVersion/kind` of each kind watched.
    kinds: std::sync::Mutex<HashSet<String>>,
    wake: futures::channel::mpsc::UnboundedSender<ObjectRef<AppWrapperObject>>,
}

impl ComponentWatches {
    fn ensure(&self, ar: &ApiResource) {
        let fresh = self
            .kinds
            .lock()
            .is_ok_and(|mut k| k.insert(format!("{}/{}", ar.api_version, ar.kind)));
        if fresh {
            tokio::spawn(watch_components(
                self.client.clone(),
                ar.clone(),
                self.wake.clone(),
            ));
        }
    }
}

/// The metadata of one wrapped kind's labelled objects: each change wakes
/// the AppWrapper that controls the object. A kind the ServiceAccount may
/// not list or watch is given up with a warning (the pod watch and the
/// timed looks still see its objects' progress).
async fn watch_components(
    client: Client,
    ar: ApiResource,
    wake: futures::channel::mpsc::UnboundedSender<ObjectRef<AppWrapperObject>>,
) {
    let api = Api::<kube::core::PartialObjectMeta<DynamicObject>>::all_with(client, &ar);
    let events = watcher::watcher(api, watcher::Config::default().labels(APPWRAPPER_LABEL))
        .default_backoff();
    futures::pin_mut!(events);
    let mut watch = Health::new(format!("appwrapper components {}", ar.kind));
    while let Some(ev) = events.next().await {
        let meta = match ev {
            Ok(watcher::Event::Apply(m) | watcher::Event::Delete(m)) => m,
            Ok(_) => continue,
            Err(watcher::Error::InitialListFailed(kube::Error::Api(e)))
            | Err(watcher::Error::WatchStartFailed(kube::Error::Api(e)))
                if e.code == 403 =>
            {
                warn!(kind = %ar.kind, api_version = %ar.api_version, "the AppWrapper components of this kind are not watched: list and watch on them are forbidden ({})", e.message);
                return;
            }
            Err(e) => {
                watch.failed(&e);
                continue;
            }
        };
        watch.delivered();
        let owner = meta.owner_references().iter().find(|r| {
            r.controller == Some(true)
                && r.kind == APPWRAPPER_KIND
                && r.api_version == core::APPWRAPPER_API_VERSION
        });
        if let (Some(o), Some(ns)) = (owner, meta.namespace()) {
            let _ = wake.unbounded_send(ObjectRef::new(&o.name).within(&ns));
        }
    }
}

/// At most this many core steps per reconcile (a create batch and a live
/// re-read each ask for one more).
const MAX_STEPS: usize = 4;

/// How many controllers up a pod's chain is read (a pod of a Job of a
/// JobSet of an AppWrapper is three links).
const MAX_OWNER_DEPTH: usize = 5;

/// Runs the AppWrapper controller once the AppWrapper CRD is served.
/// `workloads` wakes an AppWrapper when its Workload changes (sent by the
/// job reconcilers' one metadata watch of Workloads, rather than a second
/// full watch and cache of every Workload here). With `kueue` false (an
/// upstream Kueue admits), only the lifecycle runs: no Workload is read,
/// created or finished here. `config` is the operator configuration
/// (`appwrapper:` of the configuration file).
pub async fn run(
    shared: Shared,
    workloads: futures::channel::mpsc::UnboundedReceiver<ObjectRef<AppWrapperObject>>,
    kueue: bool,
    config: OperatorConfig,
    readiness: Option<crate::jobs::readiness::Settings>,
) {
    let client = shared.client.clone();
    let resource = ApiResource::erase::<AppWrapperObject>(&());
    served(
        Api::<DynamicObject>::all_with(client.clone(), &resource),
        "appwrapper".into(),
    )
    .await;
    info!(kueue, "AppWrapper controller starts");
    let nodes = Arc::new(RwLock::new(NodeHealth::default()));
    let (wake, node_wakes) = futures::channel::mpsc::unbounded();
    match config.autopilot.as_ref().filter(|a| a.monitor_nodes) {
        Some(autopilot) => {
            tokio::spawn(watch_nodes(
                client.clone(),
                autopilot.clone(),
                nodes.clone(),
                wake,
            ));
        }
        None => info!("autopilot.monitorNodes is off: Nodes are not watched"),
    }
    let (component_wake, component_wakes) = futures::channel::mpsc::unbounded();
    let ctx = Arc::new(Ctx {
        resources: ResourceNames::new(Some(Arc::new(KubeDiscovery::new(client.clone())))),
        config,
        nodes,
        shared,
        kueue,
        components: Some(ComponentWatches {
            client: client.clone(),
            kinds: Default::default(),
            wake: component_wake,
        }),
        readiness,
    });
    let pods = Api::<Pod>::all(client.clone());
    crate::cluster::watch::controller(
        Api::<AppWrapperObject>::all(client.clone()),
        watcher::Config::default(),
        (),
    )
    .reconcile_on(workloads)
    .reconcile_on(node_wakes)
    .reconcile_on(component_wakes)
    .watches(
        pods,
        watcher::Config::default().labels(APPWRAPPER_LABEL),
        |pod: Pod| {
            let name = pod.labels().get(APPWRAPPER_LABEL)?.clone();
            let ns = pod.namespace()?;
            Some(ObjectRef::<AppWrapperObject>::new(&name).within(&ns))
        },
    )
    .run(reconcile, error_policy, ctx)
    .for_each(|r| {
        if let Err(e) = r {
            debug!(error = %e, "appwrapper reconcile");
        }
        futures::future::ready(())
    })
    .await;
}

fn error_policy(aw: Arc<AppWrapperObject>, err: &AppWrapperError, _ctx: Arc<Ctx>) -> Requeue {
    warn!(appwrapper = %aw.name_any(), namespace = aw.namespace().unwrap_or_default(), error = %err, "reconcile failed; retrying");
    Requeue::requeue(Duration::from_secs(2))
}

/// `group`, `version` of an apiVersion (`v1` is the core group).
fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// The core's view of the API object.
fn to_core(aw: &AppWrapperObject) -> Result<core::AppWrapper, AppWrapperError> {
    let spec: core::Spec = serde_json::from_value(serde_json::to_value(&aw.spec)?)?;
    let status: Status = match &aw.status {
        Some(s) => serde_json::from_value(serde_json::to_value(s)?)?,
        None => Status::default(),
    };
    Ok(core::AppWrapper {
        name: aw.name_any(),
        namespace: aw.namespace().unwrap_or_default(),
        uid: aw.uid().unwrap_or_default(),
        annotations: aw.annotations().clone(),
        has_finalizer: aw.finalizers().iter().any(|f| f == APPWRAPPER_FINALIZER),
        deletion_requested: aw.metadata.deletion_timestamp.is_some(),
        spec,
        status,
    })
}

/// NotFound: already gone. Conflict: the UID precondition failed, so the
/// name now belongs to another object, which is not ours to delete.
fn delete_tolerating_gone<T>(r: Result<T, kube::Error>) -> Result<(), AppWrapperError> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(a) if a.code == 409 || a.code == 422)
}

impl Ctx {
    fn client(&self) -> Client {
        self.shared.client.clone()
    }

    /// The namespaced API of a wrapped kind, or `None` when it is not served.
    async fn api_of(&self, ns: &str, api_version: &str, kind: &str) -> Option<Api<DynamicObject>> {
        let (group, version) = split_api_version(api_version);
        let plural = self
            .resources
            .resolve(&ComponentCheck {
                index: 0,
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
            })
            .await;
        if plural == ANY_RESOURCE {
            return None;
        }
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, kind),
            &plural,
        );
        if let Some(w) = &self.components {
            w.ensure(&ar);
        }
        Some(Api::namespaced_with(self.client(), ns, &ar))
    }

    /// Every component named in the status, by uncached GETs, and the
    /// labelled pods with their chains of controllers.
    async fn observe(&self, aw: &core::AppWrapper) -> Result<Observed, AppWrapperError> {
        let mut observed = Observed {
            components_read_live: true,
            ..Observed::default()
        };
        // uid -> controller of every object read in this observation, so a
        // pod's chain reuses the component GETs.
        let mut read: HashMap<String, Option<OwnerRef>> = HashMap::new();
        for cs in &aw.status.component_status {
            if cs.name.is_empty() || cs.kind.is_empty() {
                observed.components.push(ObservedComponent::MISSING);
                continue;
            }
            let found = match self.api_of(&aw.namespace, &cs.api_version, &cs.kind).await {
                Some(api) => api.get_opt(&cs.name).await?,
                None => None,
            };
            let value = found.map(|o| serde_json::to_value(&o)).transpose()?;
            let component =
                ObservedComponent::from_object(&cs.api_version, &cs.kind, value.as_ref());
            if let Some(v) = &value {
                read.insert(component.uid.clone(), controller_ref(v));
            }
            observed.components.push(component);
        }
        let pods = Api::<Pod>::namespaced(self.client(), &aw.namespace)
            .list(&ListParams::default().labels(&format!("{APPWRAPPER_LABEL}={}", aw.name)))
            .await?;
        for p in &pods.items {
            let value = serde_json::to_value(p)?;
            let mut pod = ObservedPod::from_pod(&value);
            pod.owners = self
                .owner_chain(&aw.namespace, &aw.uid, controller_ref(&value), &mut read)
                .await?;
            observed.pods.push(pod);
        }
        if let Ok(nodes) = self.nodes.read() {
            observed.no_execute_nodes =
                nodes.no_execute_of(observed.pods.iter().map(|p| p.node_name.as_str()));
        }
        Ok(observed)
    }

    /// Follows controller ownerReferences upward from `first`: stops at the
    /// AppWrapper's UID, at an owner that is gone (NotFound, a kind not
    /// served, or a same-named object with another UID), at an object with
    /// no controller, or after [`MAX_OWNER_DEPTH`] links.
    async fn owner_chain(
        &self,
        ns: &str,
        aw_uid: &str,
        first: Option<OwnerRef>,
        read: &mut HashMap<String, Option<OwnerRef>>,
    ) -> Result<Vec<OwnerLink>, AppWrapperError> {
        let mut chain = Vec::new();
        let mut next = first;
        while let Some(owner) = next.take() {
            if chain.len() >= MAX_OWNER_DEPTH {
                break;
            }
            if owner.uid == aw_uid {
                chain.push(OwnerLink { owner, found: true });
                break;
            }
            let controller = match read.get(&owner.uid) {
                Some(c) => Some(c.clone()),
                None => {
                    let got = match self.api_of(ns, &owner.api_version, &owner.kind).await {
                        Some(api) => api.get_opt(&owner.name).await?,
                        None => None,
                    };
                    match got {
                        Some(o) if o.uid().as_deref() == Some(owner.uid.as_str()) => {
                            let c = controller_ref(&serde_json::to_value(&o)?);
                            read.insert(owner.uid.clone(), c.clone());
                            Some(c)
                        }
                        _ => None,
                    }
                }
            };
            match controller {
                Some(c) => {
                    chain.push(OwnerLink { owner, found: true });
                    next = c;
                }
                None => {
                    chain.push(OwnerLink {
                        owner,
                        found: false,
                    });
                    break;
                }
            }
        }
        Ok(chain)
    }

    async fn event(&self, aw: &AppWrapperObject, type_: EventType, reason: &str, note: String) {
        let ev = KEvent {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: reason.into(),
            secondary: None,
        };
        if let Err(e) = self.shared.recorder.publish(&ev, &aw.object_ref(&())).await {
            debug!(error = %e, "event not recorded");
        }
    }

    /// Creates a batch in order, stopping at the first error.
    async fn create(
        &self,
        ns: &str,
        batch: &[core::machine::CreateComponent],
        n: usize,
    ) -> Vec<Option<CreateResult>> {
        let mut results = vec![None; n];
        for c in batch {
            let api_version = c
                .object
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let kind = c.object.get("kind").and_then(Value::as_str).unwrap_or("");
            let result = match self.api_of(ns, api_version, kind).await {
                None => CreateResult::Failed {
                    message: format!("no matches for kind \"{kind}\" in version \"{api_version}\""),
                    fatal: true,
                },
                Some(api) => self.create_one(&api, &c.object).await,
            };
            let failed = matches!(result, CreateResult::Failed { .. });
            if let Some(slot) = results.get_mut(c.index) {
                *slot = Some(result);
            }
            if failed {
                break;
            }
        }
        results
    }

    async fn create_one(&self, api: &Api<DynamicObject>, object: &Value) -> CreateResult {
        let obj: DynamicObject = match serde_json::from_value(object.clone()) {
            Ok(o) => o,
            Err(e) => {
                return CreateResult::Failed {
                    message: e.to_string(),
                    fatal: true,
                }
            }
        };
        let pp = PostParams {
            field_manager: Some(MANAGER.into()),
            ..PostParams::default()
        };
        match api.create(&pp, &obj).await {
            Ok(created) => CreateResult::Created {
                name: created.name_any(),
            },
            Err(kube::Error::Api(e)) if e.reason == "AlreadyExists" => {
                let name = obj.name_any();
                match api.get(&name).await {
                    Ok(existing) => CreateResult::AlreadyExists {
                        name,
                        controller_uid: existing
                            .owner_references()
                            .iter()
                            .find(|o| o.controller == Some(true))
                            .map(|o| o.uid.clone()),
                    },
                    Err(e) => CreateResult::Failed {
                        message: e.to_string(),
                        fatal: false,
                    },
                }
            }
            Err(kube::Error::Api(e)) => CreateResult::Failed {
                fatal: e.reason == "Invalid" || e.code == 422,
                message: e.message,
            },
            Err(e) => CreateResult::Failed {
                message: e.to_string(),
                fatal: false,
            },
        }
    }

    /// Replaces the status; the new resourceVersion, or `None` on conflict.
    async fn write_status(
        &self,
        aw: &core::AppWrapper,
        rv: &str,
        status: &Status,
    ) -> Result<Option<String>, AppWrapperError> {
        let api = Api::<AppWrapperObject>::namespaced(self.client(), &aw.namespace);
        let ops = json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "add", "path": "/status", "value": status},
        ]);
        let p: json_patch::Patch = serde_json::from_value(ops)?;
        match api
            .patch_status(&aw.name, &params(), &Patch::<()>::Json(p))
            .await
        {
            Ok(o) => Ok(Some(o.resource_version().unwrap_or_default())),
            Err(e) if is_conflict(&e) => Ok(None),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// A JSON patch of the AppWrapper guarded by its resourceVersion; the
    /// new resourceVersion, or `None` when it changed underneath.
    async fn patch_aw(
        &self,
        ns: &str,
        name: &str,
        rv: &str,
        mut ops: Vec<Value>,
    ) -> Result<Option<String>, AppWrapperError> {
        ops.insert(
            0,
            json!({"op": "test", "path": "/metadata/resourceVersion", "value": rv}),
        );
        let api = Api::<AppWrapperObject>::namespaced(self.client(), ns);
        let p: json_patch::Patch = serde_json::from_value(Value::Array(ops))?;
        match api.patch(name, &params(), &Patch::<()>::Json(p)).await {
            Ok(o) => Ok(Some(o.resource_version().unwrap_or_default())),
            Err(e) if is_conflict(&e) => Ok(None),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn set_finalizer(
        &self,
        aw: &AppWrapperObject,
        rv: &str,
        present: bool,
    ) -> Result<Option<String>, AppWrapperError> {
        let mut finalizers: Vec<String> = aw
            .finalizers()
            .iter()
            .filter(|f| *f != APPWRAPPER_FINALIZER)
            .cloned()
            .collect();
        if present {
            finalizers.push(APPWRAPPER_FINALIZER.into());
        }
        self.patch_aw(
            &aw.namespace().unwrap_or_default(),
            &aw.name_any(),
            rv,
            vec![json!({"op": "add", "path": "/metadata/finalizers", "value": finalizers})],
        )
        .await
    }
}

/// Upstream's `NodeHealthMonitor`: every Node event updates `health`;
/// changes are logged as upstream logs them, and a node newly flagged
/// NoExecute wakes the AppWrappers whose pods are on it. Runs for good;
/// watch errors are logged and retried.
async fn watch_nodes(
    client: Client,
    autopilot: Autopilot,
    health: Arc<RwLock<NodeHealth>>,
    wake: futures::channel::mpsc::UnboundedSender<ObjectRef<AppWrapperObject>>,
) {
    let events = watcher::watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
        .default_backoff();
    futures::pin_mut!(events);
    let mut watch = Health::new("nodes");
    // The nodes a relist returned so far (to forget the others at its end).
    let mut listed: Option<BTreeSet<String>> = None;
    while let Some(ev) = events.next().await {
        let ev = match ev {
            Ok(ev) => {
                watch.delivered();
                ev
            }
            Err(e) => {
                watch.failed(&e);
                continue;
            }
        };
        let node = match &ev {
            watcher::Event::InitApply(n) => {
                if let Some(l) = listed.as_mut() {
                    l.insert(n.name_any());
                }
                n.name_any()
            }
            watcher::Event::Apply(n) | watcher::Event::Delete(n) => n.name_any(),
            watcher::Event::Init | watcher::Event::InitDone => String::new(),
        };
        let newly = node_event(&autopilot, &health, ev, &mut listed);
        if newly {
            match appwrappers_on(&client, &node).await {
                Ok(refs) => {
                    for r in refs {
                        let _ = wake.unbounded_send(r);
                    }
                }
                // Their periodic check (a minute at most) finds the node.
                Err(e) => {
                    warn!(%node, error = %e, "listing the AppWrapper pods on a NoExecute node")
                }
            }
        }
    }
}

/// Applies one Node event to `health`, logging what changed; whether the
/// node was newly flagged NoExecute for some resource.
fn node_event(
    autopilot: &Autopilot,
    health: &RwLock<NodeHealth>,
    ev: watcher::Event<Node>,
    listed: &mut Option<BTreeSet<String>>,
) -> bool {
    let Ok(mut h) = health.write() else {
        return false;
    };
    let change = match ev {
        watcher::Event::Apply(n) | watcher::Event::InitApply(n) => {
            h.observe(&NodeFacts::from_node(&n), autopilot)
        }
        watcher::Event::Delete(n) => h.forget(&n.name_any()),
        watcher::Event::Init => {
            *listed = Some(BTreeSet::new());
            return false;
        }
        watcher::Event::InitDone => match listed.take() {
            Some(l) => h.retain(&l),
            None => return false,
        },
    };
    if change.no_execute {
        info!(nodes = h.no_execute().len(), details = ?h.no_execute(), "Updated NoExecute information");
    }
    if change.no_schedule {
        info!(nodes = h.no_schedule().len(), details = ?h.no_schedule(), "Updated NoSchedule information");
    }
    !change.newly_no_execute.is_empty()
}

/// The AppWrappers with a labelled pod on `node`, each once.
async fn appwrappers_on(
    client: &Client,
    node: &str,
) -> Result<Vec<ObjectRef<AppWrapperObject>>, kube::Error> {
    let pods = Api::<Pod>::all(client.clone())
        .list_metadata(
            &ListParams::default()
                .labels(APPWRAPPER_LABEL)
                .fields(&format!("spec.nodeName={node}")),
        )
        .await?;
    let refs: BTreeSet<(String, String)> = pods
        .items
        .iter()
        .filter_map(|p| Some((p.namespace()?, p.labels().get(APPWRAPPER_LABEL)?.clone())))
        .collect();
    Ok(refs
        .into_iter()
        .map(|(ns, name)| ObjectRef::new(&name).within(&ns))
        .collect())
}

async fn reconcile(obj: Arc<AppWrapperObject>, ctx: Arc<Ctx>) -> Result<Requeue, AppWrapperError> {
    if ctx.shared.leading().await {
        return Ok(Requeue::requeue(Duration::ZERO));
    }
    let mut aw = to_core(&obj)?;
    let mut rv = obj.resource_version().unwrap_or_default();
    let mut observed = ctx.observe(&aw).await?;
    let mut requeue = None;
    for _ in 0..MAX_STEPS {
        let now = k8s_openapi::jiff::Timestamp::now();
        let step = core::reconcile(&aw, &observed, &ctx.config, now)?;
        for (key, line) in &step.malformed_annotations {
            warn!(appwrapper = %aw.name, annotation = %key, "{line}");
        }
        observed.create_results.clear();
        if step.status_changed {
            match ctx.write_status(&aw, &rv, &step.status).await? {
                Some(new_rv) => {
                    rv = new_rv;
                    aw.status = step.status.clone();
                }
                // Changed underneath: the watch brings the new version.
                None => return Ok(Requeue::requeue(Duration::from_millis(200))),
            }
        }
        requeue = step.requeue_after;
        let mut again = false;
        for action in step.actions {
            match action {
                Action::AddFinalizer | Action::RemoveFinalizer => {
                    let add = matches!(action, Action::AddFinalizer);
                    match ctx.set_finalizer(&obj, &rv, add).await? {
                        Some(new_rv) => {
                            rv = new_rv;
                            aw.has_finalizer = add;
                        }
                        None => return Ok(Requeue::requeue(Duration::from_millis(200))),
                    }
                }
                Action::CreateComponents(batch) => {
                    observed.create_results = ctx
                        .create(&aw.namespace, &batch, aw.spec.components.len())
                        .await;
                    again = true;
                }
                Action::DeleteComponent {
                    name,
                    api_version,
                    kind,
                    uid,
                    propagation,
                    ..
                } => {
                    if let Some(api) = ctx.api_of(&aw.namespace, &api_version, &kind).await {
                        let dp = DeleteParams {
                            grace_period_seconds: match propagation {
                                Propagation::Background => None,
                                Propagation::Forceful => Some(0),
                            },
                            propagation_policy: Some(PropagationPolicy::Background),
                            preconditions: Some(Preconditions {
                                uid: Some(uid),
                                resource_version: None,
                            }),
                            ..DeleteParams::default()
                        };
                        delete_tolerating_gone(api.delete(&name, &dp).await)?;
                    }
                }
                Action::DeletePodsForcefully(pods) => {
                    let api = Api::<Pod>::namespaced(ctx.client(), &aw.namespace);
                    for pod in pods {
                        let dp = DeleteParams {
                            grace_period_seconds: Some(0),
                            preconditions: Some(Preconditions {
                                uid: Some(pod.uid),
                                resource_version: None,
                            }),
                            ..DeleteParams::default()
                        };
                        delete_tolerating_gone(api.delete(&pod.name, &dp).await)?;
                    }
                }
                Action::ReadComponentsLive => {
                    let results = std::mem::take(&mut observed.create_results);
                    observed = ctx.observe(&aw).await?;
                    observed.create_results = results;
                    again = true;
                }
                Action::Event { reason, message } => {
                    ctx.event(&obj, EventType::Normal, &reason, message).await;
                }
            }
        }
        if !again {
            break;
        }
        // The next step sees what this one did.
        let results = std::mem::take(&mut observed.create_results);
        observed = ctx.observe(&aw).await?;
        observed.create_results = results;
    }
    let queued = if ctx.kueue {
        kueue_step(&ctx, &obj, &aw, &rv).await?
    } else {
        None
    };
    let next = match (requeue, queued) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(next.map_or_else(Requeue::await_change, Requeue::requeue))
}

/// The Workload's pod sets, as Kueue's AppWrapper integration builds them:
/// `<name>-<k>` with `k` counted across components, the template at each
/// pod set's path (templates that cannot be read are skipped, as upstream),
/// and the rank labels the AppWrapper's pod set annotations name (a
/// malformed count is left out, as Kueue logs and ignores it).
pub fn aw_pod_sets(aw: &core::AppWrapper) -> Vec<workload::JobPodSet> {
    let mut out = Vec::new();
    let mut k = 0usize;
    for (c, cs) in aw.spec.components.iter().zip(&aw.status.component_status) {
        for ps in &cs.pod_sets {
            if let Ok(t) = raw_template_at(&c.template, &ps.path) {
                let a = &ps.annotations;
                out.push(workload::JobPodSet {
                    name: format!("{}-{k}", aw.name).to_lowercase(),
                    count: i64::from(ps.replicas()),
                    min_count: None,
                    template: Value::Object(t.clone()),
                    ranks: crate::jobs::policy::Ranks {
                        pod_index_label: a.get(podsets::TAS_POD_INDEX_LABEL).cloned(),
                        sub_group_index_label: a.get(podsets::TAS_SUB_GROUP_INDEX_LABEL).cloned(),
                        sub_group_count: a
                            .get(podsets::TAS_SUB_GROUP_COUNT)
                            .and_then(|v| crate::vocabulary::go::go_atoi(v).ok()),
                    },
                });
            }
            k += 1;
        }
    }
    out
}

/// [`aw_pod_sets`] as the Workload's `spec.podSets`.
pub fn workload_pod_sets(aw: &core::AppWrapper) -> Vec<Value> {
    workload::pod_sets_json(aw_pod_sets(aw))
}

/// The AppWrapper's `kueue.x-k8s.io/max-exec-time-seconds`, as its
/// Workload's `spec.maximumExecutionTimeSeconds`.
fn max_exec(obj: &AppWrapperObject) -> Option<i32> {
    obj.labels()
        .get(keys::MAX_EXEC_TIME_LABEL)
        .and_then(|s| s.parse().ok())
}

/// The Workload of an AppWrapper.
pub fn workload_for(
    aw: &core::AppWrapper,
    queue: &str,
    prio: &workload::Priority,
    max_exec: Option<i32>,
) -> Value {
    let mut wl = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": workload::name_for(APPWRAPPER_KIND, GROUP, &aw.name, &aw.uid),
            "namespace": aw.namespace,
            "labels": { keys::JOB_UID_LABEL: aw.uid },
            "ownerReferences": [{
                "apiVersion": core::APPWRAPPER_API_VERSION,
                "kind": APPWRAPPER_KIND,
                "name": aw.name,
                "uid": aw.uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "queueName": queue,
            "podSets": workload_pod_sets(aw),
            "active": true,
        },
    });
    workload::set_priority(&mut wl["spec"], prio);
    if let Some(secs) = max_exec {
        wl["spec"]["maximumExecutionTimeSeconds"] = json!(secs);
    }
    wl
}

/// The Workload's priority, in Kueue's order: the AppWrapper's
/// WorkloadPriorityClass label, else its first pod template's
/// `priorityClassName`, else the global default PriorityClass.
fn priority_for(
    obj: &AppWrapperObject,
    aw: &core::AppWrapper,
    classes: &workload::PriorityClasses,
) -> Result<workload::Priority, workload::WorkloadError> {
    let pod_sets = workload_pod_sets(aw);
    let templates: Vec<&Value> = pod_sets.iter().map(|p| &p["template"]).collect();
    let labels = json!({"metadata": {"labels": obj.labels()}});
    workload::priority_of(&labels, &templates, classes)
}

/// The patch ops that set `podSetInfos` from an admission and resume.
pub fn start_ops(
    aw: &core::AppWrapper,
    infos: &[workload::PodSetInfo],
) -> Result<Vec<Value>, String> {
    let infos: Vec<PodSetInfo> = infos
        .iter()
        .map(|i| PodSetInfo {
            annotations: i.annotations.clone(),
            labels: i.labels.clone(),
            node_selector: i.node_selector.clone(),
            tolerations: i.tolerations.clone(),
            scheduling_gates: i
                .scheduling_gates
                .iter()
                .map(|g| json!({ "name": g }))
                .collect(),
        })
        .collect();
    let mut components = aw.spec.components.clone();
    kueue::set_pod_set_infos(&mut components, &aw.status.component_status, &infos)?;
    let mut ops = Vec::new();
    for (i, c) in components.iter().enumerate() {
        ops.push(json!({
            "op": "add",
            "path": format!("/spec/components/{i}/podSetInfos"),
            "value": c.pod_set_infos,
        }));
    }
    ops.push(json!({"op": "add", "path": "/spec/suspend", "value": false}));
    Ok(ops)
}

/// The patch ops that suspend and clear `podSetInfos`.
pub fn stop_ops(aw: &core::AppWrapper) -> Vec<Value> {
    let mut ops = vec![json!({"op": "add", "path": "/spec/suspend", "value": true})];
    for (i, c) in aw.spec.components.iter().enumerate() {
        if !c.pod_set_infos.is_empty() {
            ops.push(json!({"op": "remove", "path": format!("/spec/components/{i}/podSetInfos")}));
        }
    }
    ops
}

/// Kueue's side for an AppWrapper with a queue name. `Some` when to look again.
async fn kueue_step(
    ctx: &Ctx,
    obj: &AppWrapperObject,
    aw: &core::AppWrapper,
    rv: &str,
) -> Result<Option<Duration>, AppWrapperError> {
    let Some(queue) = obj.labels().get(QUEUE_NAME_LABEL).cloned() else {
        return Ok(None);
    };
    if aw.deletion_requested || aw.uid.is_empty() {
        return Ok(None);
    }
    const PREBUILT: &str = keys::PREBUILT_WORKLOAD_LABEL;
    let prebuilt = crate::jobs::machine::prebuilt_name(
        obj.annotations().get(PREBUILT).map(String::as_str),
        obj.labels().get(PREBUILT).map(String::as_str),
    );
    // Kueue's integration queues an AppWrapper whoever runs it: on a
    // MultiKueue manager the Workload is held here while a worker runs the
    // copy. The core writes no status for such an AppWrapper, so its pod
    // sets are computed here as Kueue does, in memory; so are a prebuilt
    // Workload's, compared before the core's first status write.
    let managed_elsewhere = aw
        .spec
        .managed_by
        .as_deref()
        .is_some_and(|m| m != APPWRAPPER_CONTROLLER_NAME);
    let filled;
    let aw = if (managed_elsewhere || prebuilt.is_some())
        && aw.status.component_status.len() != aw.spec.components.len()
    {
        let Ok(status) = core::initial_component_status(&aw.spec) else {
            // Unreadable components: the webhook refuses them; nothing to queue.
            return Ok(None);
        };
        let mut copy = aw.clone();
        copy.status.component_status = status;
        filled = copy;
        &filled
    } else {
        aw
    };
    let ns = aw.namespace.as_str();
    let wl_name = match prebuilt {
        Some(name) => name.to_string(),
        None => workload::name_for(APPWRAPPER_KIND, GROUP, &aw.name, &aw.uid),
    };
    let wl_api = Api::<api::Workload>::namespaced(ctx.client(), ns);
    let (_, success, finished) = kueue::finished(&aw.status);
    let wl = wl_api.get_opt(&wl_name).await?;
    if prebuilt.is_some() {
        if let Some(next) = prebuilt_step(ctx, obj, aw, rv, wl.as_ref(), &wl_api).await? {
            return Ok(next);
        }
    }
    let Some(wl) = wl else {
        if finished || aw.status.component_status.len() != aw.spec.components.len() {
            // The core fills the pod sets first; its status write wakes us.
            return Ok(None);
        }
        if !aw.spec.suspend {
            // Running without an admission (the webhook was bypassed).
            ctx.patch_aw(ns, &aw.name, rv, stop_ops(aw)).await?;
            return Ok(None);
        }
        let prio = match priority_for(obj, aw, &ctx.shared.classes()) {
            Ok(p) => p,
            Err(e) => {
                // A priority class named that does not exist (yet): Kueue
                // does not create the Workload either.
                ctx.event(obj, EventType::Warning, "ErrWorkloadCompose", e.to_string())
                    .await;
                return Ok(Some(Duration::from_secs(5)));
            }
        };
        let body = workload_for(aw, &queue, &prio, max_exec(obj));
        super::vetting::create(&body).map_err(JobError::from)?;
        let body: DynamicObject = serde_json::from_value(body)?;
        let raw = Api::<DynamicObject>::namespaced_with(
            ctx.client(),
            ns,
            &ApiResource::erase::<api::Workload>(&()),
        );
        let pp = PostParams {
            field_manager: Some(MANAGER.into()),
            ..PostParams::default()
        };
        match raw.create(&pp, &body).await {
            Ok(_) => {
                ctx.event(
                    obj,
                    EventType::Normal,
                    "CreatedWorkload",
                    format!("Created Workload: {ns}/{wl_name}"),
                )
                .await
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        return Ok(None);
    };
    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    if conds.is_true(condition::FINISHED) {
        return Ok(None);
    }
    let now = now_time();
    if finished {
        let (message, _, _) = kueue::finished(&aw.status);
        let mut c = conds.clone();
        c.set(
            condition::FINISHED,
            true,
            if success { "Succeeded" } else { "Failed" },
            message,
            &now,
            wl.metadata.generation,
        );
        write_workload_status(&wl_api, &wl, json!({"conditions": c.0})).await?;
        return Ok(None);
    }
    // The Workload follows the AppWrapper (Kueue's `ensureOneWorkload`); a
    // prebuilt one is checked by `prebuilt_step`, a MultiKueue manager's
    // copy describes the spec as dispatched.
    if prebuilt.is_none() && !managed_elsewhere {
        let sets = aw_pod_sets(aw);
        let wl_name = wl.name_any();
        match workload::follow(&sets, max_exec(obj), &wl, aw.spec.suspend) {
            workload::Follow::Matches => {}
            workload::Follow::Update => {
                let mut spec = json!({
                    "queueName": queue,
                    "podSets": workload::pod_sets_json(sets),
                    "maximumExecutionTimeSeconds": max_exec(obj),
                });
                if let Ok(prio) = priority_for(obj, aw, &ctx.shared.classes()) {
                    workload::set_priority(&mut spec, &prio);
                }
                let patch = json!({"metadata": {"resourceVersion": wl.metadata.resource_version},
                                   "spec": spec});
                match wl_api
                    .patch(&wl_name, &params(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => {
                        let msg = format!(
                            "Updated not matching Workload for suspended job: {ns}/{wl_name}"
                        );
                        ctx.event(obj, EventType::Normal, "UpdatedWorkload", msg)
                            .await;
                    }
                    Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409) => {}
                    Err(e) => return Err(e.into()),
                }
                return Ok(None);
            }
            workload::Follow::Replace => {
                if !aw.spec.suspend {
                    // Kueue's stopJob with StopReasonNoMatchingWorkload.
                    if ctx
                        .patch_aw(ns, &aw.name, rv, stop_ops(aw))
                        .await?
                        .is_none()
                    {
                        return Ok(None);
                    }
                    let msg = "No matching Workload; restoring pod templates according to existent Workload";
                    ctx.event(obj, EventType::Normal, "Stopped", msg.into())
                        .await;
                }
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: wl.metadata.uid.clone(),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                delete_tolerating_gone(wl_api.delete(&wl_name, &dp).await)?;
                let msg = format!("Deleted not matching Workload: {ns}/{wl_name}");
                ctx.event(obj, EventType::Normal, "DeletedWorkload", msg)
                    .await;
                return Ok(None);
            }
        }
    }
    // A MultiKueue manager's AppWrapper runs on a worker, whose Workload
    // keeps these deadlines.
    let timed = if managed_elsewhere {
        Timers::Idle
    } else {
        workload_timers(ctx, &wl_api, &wl, &conds, aw, &now).await?
    };
    if let Timers::Wrote = timed {
        return Ok(None);
    }
    let reserved = conds.is_true(condition::QUOTA_RESERVED) && status.admission.is_some();
    let evicted = conds.is_true(condition::EVICTED);
    if reserved && evicted {
        if !aw.spec.suspend {
            if ctx
                .patch_aw(ns, &aw.name, rv, stop_ops(aw))
                .await?
                .is_some()
            {
                let msg = conds
                    .get(condition::EVICTED)
                    .map(|c| c.message.clone())
                    .unwrap_or_default();
                ctx.event(obj, EventType::Normal, "Stopped", msg).await;
            }
            return Ok(None);
        }
        // A MultiKueue manager's status is the worker's, mirrored: a lost
        // worker's would never say inactive (Kueue would wait for it).
        let mirrored = aw.spec.managed_by.as_deref() == Some(keys::MULTIKUEUE_CONTROLLER);
        if kueue::is_active(&aw.status) && !mirrored {
            // Components and pods are still going; their quota is not free.
            return Ok(Some(Duration::from_millis(500)));
        }
        let accumulated = wl
            .status
            .as_ref()
            .and_then(|s| s.accumulated_past_execution_time_seconds);
        if let Some(s) = release(&conds.0, wl.metadata.generation, &now, accumulated) {
            write_workload_status(&wl_api, &wl, s).await?;
        }
        return Ok(None);
    }
    if reserved && conds.is_true(condition::ADMITTED) {
        if let Timers::Next(left) = timed {
            if !aw.spec.suspend {
                return Ok(Some(left));
            }
        }
        if aw.spec.suspend {
            let Some(infos) = admission_pod_set_infos(&ctx.shared.flavors, &wl, &queue) else {
                // A flavor not seen yet by this watch: look again soon.
                return Ok(Some(Duration::from_millis(200)));
            };
            match start_ops(aw, &infos) {
                Ok(ops) => {
                    if ctx.patch_aw(ns, &aw.name, rv, ops).await?.is_some() {
                        let cq = status
                            .admission
                            .as_ref()
                            .and_then(|a| a.cluster_queue.clone())
                            .unwrap_or_default();
                        ctx.event(
                            obj,
                            EventType::Normal,
                            "Started",
                            format!("Admitted by clusterQueue {cq}"),
                        )
                        .await;
                    }
                }
                Err(e) => {
                    ctx.event(obj, EventType::Warning, "FailedToStart", e).await;
                }
            }
        }
        return Ok(None);
    }
    if !reserved && !aw.spec.suspend {
        ctx.patch_aw(ns, &aw.name, rv, stop_ops(aw)).await?;
        return Ok(None);
    }
    if let (false, Timers::Next(left)) = (reserved, timed) {
        // Its requeue backoff ends then.
        return Ok(Some(left));
    }
    Ok(None)
}

/// What [`workload_timers`] did.
#[derive(Debug, Clone, Copy)]
enum Timers {
    /// Nothing is due.
    Idle,
    /// The earliest deadline of an admitted, running AppWrapper's Workload.
    Next(Duration),
    /// It wrote; the write's event brings the next pass.
    Wrote,
}

/// The deadlines of an AppWrapper's Workload ([`machine::deadlines`], its
/// `PodsReady` following the AppWrapper's own as Kueue's AppWrapper
/// `PodsReady` does), executed.
async fn workload_timers(
    ctx: &Ctx,
    wl_api: &Api<api::Workload>,
    wl: &api::Workload,
    conds: &Conditions,
    aw: &core::AppWrapper,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> Result<Timers, AppWrapperError> {
    let ready = ctx
        .readiness
        .as_ref()
        .map(|settings| (settings, kueue::pods_ready(&aw.status)));
    let writes = match machine::deadlines(ready, wl, conds, now, super::jobs::jitter()) {
        machine::Timer::Expired(writes) => writes,
        machine::Timer::Left(d) => return Ok(Timers::Next(d)),
        machine::Timer::Idle => return Ok(Timers::Idle),
    };
    for w in writes {
        match w {
            machine::Write::WorkloadSpec(spec) => write_workload_spec(wl_api, wl, spec).await?,
            machine::Write::WorkloadStatus(s) => write_workload_status(wl_api, wl, s).await?,
            machine::Write::WorkloadEvent(note) => {
                let reference = super::context::workload_reference(wl);
                ctx.shared.publish(&reference, note).await
            }
            _ => {}
        }
    }
    Ok(Timers::Wrote)
}

/// How often an AppWrapper waiting for its prebuilt Workload looks again:
/// the Workload watch wakes an AppWrapper only for Workloads it owns.
const PREBUILT_POLL: Duration = Duration::from_secs(5);

/// Kueue's handling of a job naming a prebuilt Workload
/// (`kueue.x-k8s.io/prebuilt-workload-name`, as a MultiKueue worker's copy
/// does), for an AppWrapper: missing or another object's, a running
/// AppWrapper is stopped ("missing workload") and it waits; ownerless, it
/// is taken (`EnsurePrebuiltWorkloadOwnership`); one that does not describe
/// it is finished `OutOfSync` (`ensurePrebuiltWorkloadInSync`). `None`: go
/// on with this Workload; else the requeue to return.
async fn prebuilt_step(
    ctx: &Ctx,
    obj: &AppWrapperObject,
    aw: &core::AppWrapper,
    rv: &str,
    wl: Option<&api::Workload>,
    wl_api: &Api<api::Workload>,
) -> Result<Option<Option<Duration>>, AppWrapperError> {
    let ns = aw.namespace.as_str();
    let stop_running = || async {
        if !aw.spec.suspend
            && ctx
                .patch_aw(ns, &aw.name, rv, stop_ops(aw))
                .await?
                .is_some()
        {
            let message = crate::jobs::machine::MISSING_WORKLOAD.into();
            ctx.event(obj, EventType::Normal, "Stopped", message).await;
        }
        Ok::<_, AppWrapperError>(())
    };
    let Some(wl) = wl else {
        stop_running().await?;
        return Ok(Some(Some(PREBUILT_POLL)));
    };
    match workload::controller_of(wl) {
        None => {
            let patch = workload::adoption(
                wl,
                core::APPWRAPPER_API_VERSION,
                APPWRAPPER_KIND,
                &aw.name,
                &aw.uid,
            );
            match wl_api
                .patch(&wl.name_any(), &params(), &Patch::Merge(&patch))
                .await
            {
                // Owned now, the Workload's next event wakes this AppWrapper.
                Ok(_) => return Ok(Some(None)),
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    return Ok(Some(Some(Duration::from_millis(200))))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Some(uid) if uid != aw.uid => {
            // Another object's: as if it did not exist, and left untouched.
            stop_running().await?;
            let msg = crate::jobs::machine::not_owned_message(ns, &wl.name_any());
            ctx.event(obj, EventType::Warning, "ErrWorkloadCompose", msg)
                .await;
            return Ok(Some(Some(PREBUILT_POLL)));
        }
        Some(_) => {}
    }
    let conds = Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()));
    // Compared while it holds no quota, as Kueue compares a Workload not
    // admitted yet; a started AppWrapper's templates carry its admission.
    if conds.is_true(condition::FINISHED) || conds.is_true(condition::QUOTA_RESERVED) {
        return Ok(None);
    }
    // Compared as `follow` compares: the components are stored as written
    // while the Workload's CRD fills defaults in (a port's protocol).
    let current = aw_pod_sets(aw);
    let max = wl.spec.maximum_execution_time_seconds;
    if workload::matches(&current, max, &workload::recorded_pod_sets(wl), max, false) {
        return Ok(None);
    }
    let now = now_time();
    let mut c = conds.clone();
    c.set(
        condition::FINISHED,
        true,
        finished_reason::OUT_OF_SYNC,
        crate::jobs::machine::PREBUILT_OUT_OF_SYNC,
        &now,
        wl.metadata.generation,
    );
    write_workload_status(wl_api, wl, json!({"conditions": c.0})).await?;
    stop_running().await?;
    Ok(Some(None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::appwrapper::{podsets::PodSet, status::ComponentStatus};

    fn node(name: &str, health: Option<&str>) -> Node {
        let labels = match health {
            Some(h) => json!({"autopilot.ibm.com/gpuhealth": h}),
            None => json!({}),
        };
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels},
            "status": {"capacity": {"nvidia.com/gpu": "4"}}}))
        .unwrap()
    }

    /// A test context over a scripted apiserver, Kueue's side on.
    fn scripted_ctx(client: Client) -> Ctx {
        Ctx {
            shared: Shared::without_kueue(client.clone()),
            resources: ResourceNames::new(None),
            config: OperatorConfig::default(),
            nodes: Arc::new(RwLock::new(NodeHealth::default())),
            kueue: true,
            components: None,
            readiness: None,
        }
    }

    /// A queued AppWrapper of one Job component (one pod, 500m).
    fn queued_aw(extra_labels: Value, managed_by: Option<&str>) -> AppWrapperObject {
        let mut labels = json!({QUEUE_NAME_LABEL: "lq"});
        if let (Value::Object(l), Value::Object(x)) = (&mut labels, extra_labels) {
            l.extend(x);
        }
        let mut aw = json!({
            "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": "aw1", "namespace": "ns", "uid": "aw1-uid",
                         "resourceVersion": "7", "labels": labels},
            "spec": {"suspend": true, "components": [{"template": {
                "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "spec": {"parallelism": 1, "completions": 1, "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox",
                                    "resources": {"requests": {"cpu": "500m"}}}]}}}}}]},
        });
        if let Some(m) = managed_by {
            aw["spec"]["managedBy"] = json!(m);
        }
        serde_json::from_value(aw).unwrap()
    }

    /// A MultiKueue manager's AppWrapper (`spec.managedBy` MultiKueue's):
    /// nothing here runs it or writes its status, and its Workload is still
    /// made, with the pod sets read from its spec (Kueue's integration
    /// queues it whoever runs it).
    #[tokio::test]
    async fn a_multikueue_managers_appwrapper_gets_its_workload_with_pod_sets_from_its_spec() {
        use crate::controllers::vetting::testing::{scripted_client, sent};
        let (client, script) = scripted_client(|method, _, body| match method {
            "GET" => (
                404,
                json!({"kind": "Status", "code": 404, "reason": "NotFound"}),
            ),
            _ => (201, body.clone()),
        });
        let ctx = scripted_ctx(client);
        let obj = queued_aw(json!({}), Some(keys::MULTIKUEUE_CONTROLLER));
        let aw = to_core(&obj).unwrap();
        assert!(aw.status.component_status.is_empty(), "no status written");
        kueue_step(&ctx, &obj, &aw, "7").await.unwrap();
        let sent = sent(&script);
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        let name = workload::name_for(APPWRAPPER_KIND, GROUP, "aw1", "aw1-uid");
        assert_eq!(
            lines,
            [
                format!("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}"),
                "POST /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads".to_string(),
                "POST /apis/events.k8s.io/v1/namespaces/ns/events".to_string(),
            ]
        );
        let sets = &sent[1].1["spec"]["podSets"];
        assert_eq!(sets[0]["name"], "aw1-0");
        assert_eq!(sets[0]["count"], 1);
        assert_eq!(
            sets[0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "500m"
        );
    }

    /// `queued_aw` as the core leaves it once its pod sets are known.
    fn with_pod_sets(mut obj: AppWrapperObject, suspended: bool) -> AppWrapperObject {
        let mut v = serde_json::to_value(&obj).unwrap();
        v["spec"]["suspend"] = json!(suspended);
        v["status"] = json!({"phase": if suspended { "Suspended" } else { "Running" },
            "componentStatus": [{"name": "j", "kind": "Job", "apiVersion": "batch/v1",
                "podSets": [{"replicas": 1, "path": "template.spec.template"}]}]});
        obj = serde_json::from_value(v).unwrap();
        obj
    }

    /// Kueue's side run once for `obj` against an apiserver answering as
    /// `answer` does: each request sent (method and path, body).
    async fn kueue_requests(
        obj: &AppWrapperObject,
        answer: impl Fn(&str, &str, &Value) -> (u16, Value) + Send + Sync + 'static,
    ) -> Vec<(String, Value)> {
        kueue_requests_under(None, obj, answer).await
    }

    /// [`kueue_requests`] with these waitForPodsReady settings.
    async fn kueue_requests_under(
        readiness: Option<crate::jobs::readiness::Settings>,
        obj: &AppWrapperObject,
        answer: impl Fn(&str, &str, &Value) -> (u16, Value) + Send + Sync + 'static,
    ) -> Vec<(String, Value)> {
        use crate::controllers::vetting::testing::{scripted_client, sent};
        let (client, script) = scripted_client(answer);
        let mut ctx = scripted_ctx(client);
        ctx.readiness = readiness;
        let aw = to_core(obj).unwrap();
        kueue_step(&ctx, obj, &aw, "7").await.unwrap();
        sent(&script)
    }

    /// The Workload the AppWrapper's Workload GET returns: its pod set
    /// asking `cpu`, with these conditions True.
    fn recorded_workload(cpu: &str, conditions: &[&str]) -> Value {
        let conds: Vec<Value> = conditions
            .iter()
            .map(|c| {
                json!({"type": c, "status": "True", "reason": "R", "message": "",
                            "lastTransitionTime": "2026-11-30T00:00:00Z"})
            })
            .collect();
        let name = workload::name_for(APPWRAPPER_KIND, GROUP, "aw1", "aw1-uid");
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
               "metadata": {"name": name, "namespace": "ns", "resourceVersion": "3", "uid": "wl-uid",
                            "ownerReferences": [{"apiVersion": "workload.codeflare.dev/v1beta2",
                                "kind": "AppWrapper", "name": "aw1", "uid": "aw1-uid", "controller": true}]},
               "spec": {"queueName": "lq", "podSets": [{"name": "aw1-0", "count": 1, "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox",
                                    "resources": {"requests": {"cpu": cpu}}}]}}}]},
               "status": {"conditions": conds,
                          "admission": {"clusterQueue": "cq", "podSetAssignments": []}}})
    }

    /// Kueue's `updateWorkloadToMatchJob` for an AppWrapper: a suspended
    /// one whose `kueue.x-k8s.io/max-exec-time-seconds` was set after its
    /// Workload was made has that Workload brought up to date in one merge
    /// patch conditioned on the version read, and says so in Kueue's words.
    #[tokio::test]
    async fn a_suspended_appwrappers_workload_follows_its_changed_labels() {
        let obj = with_pod_sets(
            queued_aw(json!({keys::MAX_EXEC_TIME_LABEL: "60"}), None),
            true,
        );
        let sent = kueue_requests(&obj, |method, _, body| match method {
            "GET" => (200, recorded_workload("500m", &[])),
            _ => (200, body.clone()),
        })
        .await;
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        let name = workload::name_for(APPWRAPPER_KIND, GROUP, "aw1", "aw1-uid");
        let get = format!("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}");
        assert_eq!(
            lines,
            [
                get.clone(),
                format!("PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}"),
                "POST /apis/events.k8s.io/v1/namespaces/ns/events".to_string(),
            ]
        );
        assert_eq!(sent[1].1["metadata"]["resourceVersion"], "3");
        assert_eq!(sent[1].1["spec"]["maximumExecutionTimeSeconds"], 60);
        assert_eq!(sent[1].1["spec"]["podSets"][0]["name"], "aw1-0");
        assert_eq!(
            sent[2].1["note"],
            format!("Updated not matching Workload for suspended job: ns/{name}")
        );
        // Once it matches, nothing more is sent.
        let sent = kueue_requests(&obj, |_, _, _| {
            let mut wl = recorded_workload("500m", &[]);
            wl["spec"]["maximumExecutionTimeSeconds"] = json!(60);
            (200, wl)
        })
        .await;
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(lines, [get]);
    }

    /// Kueue's `ensureOneWorkload` for a running AppWrapper whose admitted
    /// Workload no longer describes it (its template changed past the
    /// webhook): stopped (`spec.suspend` and the `podSetInfos` cleared,
    /// conditioned on the version read), then the Workload deleted on its
    /// UID, each with Kueue's event; the next pass makes a new one.
    #[tokio::test]
    async fn a_running_appwrapper_whose_workload_no_longer_matches_is_stopped_and_the_workload_replaced(
    ) {
        let obj = with_pod_sets(queued_aw(json!({}), None), false);
        let stored = serde_json::to_value(&obj).unwrap();
        let sent = kueue_requests(&obj, move |method, path, body| match method {
            "GET" => (200, recorded_workload("2", &["QuotaReserved", "Admitted"])),
            "DELETE" => (200, json!({"kind": "Status", "status": "Success"})),
            "PATCH" if path.contains("/appwrappers/") => (200, stored.clone()),
            _ => (200, body.clone()),
        })
        .await;
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        let name = workload::name_for(APPWRAPPER_KIND, GROUP, "aw1", "aw1-uid");
        assert_eq!(
            lines,
            [
                format!("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}"),
                "PATCH /apis/workload.codeflare.dev/v1beta2/namespaces/ns/appwrappers/aw1"
                    .to_string(),
                "POST /apis/events.k8s.io/v1/namespaces/ns/events".to_string(),
                format!("DELETE /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}"),
                "POST /apis/events.k8s.io/v1/namespaces/ns/events".to_string(),
            ]
        );
        assert_eq!(
            sent[1].1,
            json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                   {"op": "add", "path": "/spec/suspend", "value": true}])
        );
        assert_eq!(
            sent[2].1["note"],
            "No matching Workload; restoring pod templates according to existent Workload"
        );
        assert_eq!(sent[3].1["preconditions"]["uid"], "wl-uid");
        assert_eq!(
            sent[4].1["note"],
            format!("Deleted not matching Workload: ns/{name}")
        );
    }

    /// waitForPodsReady for an AppWrapper (Kueue reads its `PodsReady`
    /// condition): admitted and running without it, its Workload gets
    /// `PodsReady=False` (`WaitForStart`) in one status patch conditioned
    /// on the version read; without waitForPodsReady nothing is written.
    #[tokio::test]
    async fn an_admitted_appwrappers_workload_gets_pods_ready_from_the_appwrapper() {
        let obj = with_pod_sets(queued_aw(json!({}), None), false);
        let answer = |method: &str, _: &str, body: &Value| match method {
            "GET" => (
                200,
                recorded_workload("500m", &["QuotaReserved", "Admitted"]),
            ),
            _ => (200, body.clone()),
        };
        let name = workload::name_for(APPWRAPPER_KIND, GROUP, "aw1", "aw1-uid");
        let get = format!("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}");
        let sent = kueue_requests_under(Some(Default::default()), &obj, answer).await;
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            lines,
            [
                get.clone(),
                format!("PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}/status"),
            ]
        );
        assert_eq!(sent[1].1["metadata"]["resourceVersion"], "3");
        let ready = sent[1].1["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "PodsReady")
            .cloned()
            .unwrap();
        assert_eq!(
            (&ready["status"], &ready["reason"]),
            (&json!("False"), &json!("WaitForStart"))
        );
        let sent = kueue_requests(&obj, answer).await;
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(lines, [get]);
    }

    /// Kueue's workload controller for an AppWrapper's Workload marked
    /// `DeactivationTarget` (its execution time or requeuing limit
    /// exceeded): made inactive with one merge patch of `spec.active`.
    #[tokio::test]
    async fn an_appwrappers_deactivation_target_is_made_inactive() {
        let obj = with_pod_sets(queued_aw(json!({}), None), false);
        let sent = kueue_requests(&obj, |_, _, _| {
            let conds = ["QuotaReserved", "Admitted", "DeactivationTarget"];
            (200, recorded_workload("500m", &conds))
        })
        .await;
        let name = workload::name_for(APPWRAPPER_KIND, GROUP, "aw1", "aw1-uid");
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            lines,
            [
                format!("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}"),
                format!("PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{name}"),
            ]
        );
        assert_eq!(sent[1].1, json!({"spec": {"active": false}}));
    }

    /// A worker's AppWrapper naming the prebuilt Workload MultiKueue made
    /// for it: no Workload is created; the ownerless one is taken with one
    /// merge patch conditioned on the version read (Kueue's
    /// `EnsurePrebuiltWorkloadOwnership`).
    #[tokio::test]
    async fn an_appwrapper_takes_the_ownerless_prebuilt_workload_it_names() {
        use crate::controllers::vetting::testing::{scripted_client, sent};
        let (client, script) = scripted_client(|method, _, body| match method {
            "GET" => (
                200,
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                       "metadata": {"name": "wl1", "namespace": "ns", "resourceVersion": "3"},
                       "spec": {"queueName": "lq", "podSets": []}}),
            ),
            _ => (200, body.clone()),
        });
        let ctx = scripted_ctx(client);
        let obj = queued_aw(json!({keys::PREBUILT_WORKLOAD_LABEL: "wl1"}), None);
        let aw = to_core(&obj).unwrap();
        kueue_step(&ctx, &obj, &aw, "7").await.unwrap();
        let sent = sent(&script);
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            lines,
            [
                "GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl1",
                "PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl1",
            ]
        );
        assert_eq!(
            sent[1].1,
            json!({"metadata": {
                "resourceVersion": "3",
                "ownerReferences": [{
                    "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                    "name": "aw1", "uid": "aw1-uid", "controller": true,
                    "blockOwnerDeletion": true}],
                "labels": {keys::JOB_UID_LABEL: "aw1-uid"},
            }})
        );
    }

    /// The node watch's executor: a node newly labelled EVICT asks, in one
    /// request, for the AppWrapper pods on it (label and node field
    /// selectors, metadata only) and wakes each AppWrapper once; the same
    /// node seen again, or a WARN one, asks nothing.
    #[tokio::test]
    async fn a_node_newly_flagged_no_execute_wakes_the_appwrappers_with_pods_on_it() {
        use crate::controllers::vetting::testing::scripted_client;
        let (client, script) = scripted_client(|_, _, _| {
            let pod = |ns: &str, aw: &str, name: &str| {
                json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                    "metadata": {"name": name, "namespace": ns,
                                 "labels": {APPWRAPPER_LABEL: aw}}})
            };
            (
                200,
                json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
                    "metadata": {}, "items": [pod("a", "train", "p0"), pod("a", "train", "p1"),
                                              pod("b", "serve", "p2")]}),
            )
        });
        let ap = Autopilot::default();
        let health = RwLock::new(NodeHealth::default());
        let mut listed = None;
        let apply = |n: Node| watcher::Event::Apply(n);
        assert!(!node_event(
            &ap,
            &health,
            apply(node("gpu-1", None)),
            &mut listed
        ));
        assert!(!node_event(
            &ap,
            &health,
            apply(node("gpu-1", Some("WARN"))),
            &mut listed
        ));
        assert!(node_event(
            &ap,
            &health,
            apply(node("gpu-1", Some("EVICT"))),
            &mut listed
        ));
        let refs = appwrappers_on(&client, "gpu-1").await.unwrap();
        assert!(!node_event(
            &ap,
            &health,
            apply(node("gpu-1", Some("EVICT"))),
            &mut listed
        ));
        let lines: Vec<String> = script
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.line.clone())
            .collect();
        assert_eq!(
            lines,
            ["GET /api/v1/pods?&fieldSelector=spec.nodeName%3Dgpu-1&labelSelector=workload.codeflare.dev%2Fappwrapper"]
        );
        let names: Vec<(String, Option<String>)> = refs
            .iter()
            .map(|r| (r.name.clone(), r.namespace.clone()))
            .collect();
        assert_eq!(
            names,
            [
                ("train".into(), Some("a".into())),
                ("serve".into(), Some("b".into()))
            ]
        );
        assert_eq!(
            health.read().unwrap().no_execute_of(["gpu-1"]).len(),
            1,
            "what the next reconcile of those AppWrappers reads"
        );
        // A relist without the node forgets it.
        assert!(!node_event(&ap, &health, watcher::Event::Init, &mut listed));
        assert!(!node_event(
            &ap,
            &health,
            watcher::Event::InitApply(node("gpu-2", None)),
            &mut listed
        ));
        assert!(!node_event(
            &ap,
            &health,
            watcher::Event::InitDone,
            &mut listed
        ));
        assert!(health.read().unwrap().no_execute().is_empty());
    }

    fn aw() -> core::AppWrapper {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"parallelism": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}});
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}]}});
        core::AppWrapper {
            name: "My-AW".into(),
            namespace: "ns".into(),
            uid: "u1".into(),
            spec: core::Spec {
                components: vec![
                    core::Component {
                        template: job,
                        ..Default::default()
                    },
                    core::Component {
                        template: pod,
                        ..Default::default()
                    },
                ],
                suspend: true,
                managed_by: None,
            },
            status: Status {
                component_status: vec![
                    ComponentStatus {
                        pod_sets: vec![PodSet {
                            replicas: Some(2),
                            path: "template.spec.template".into(),
                            ..Default::default()
                        }],
                        ..Default::default()
                    },
                    ComponentStatus {
                        pod_sets: vec![PodSet {
                            path: "template".into(),
                            ..Default::default()
                        }],
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn pod_sets_are_counted_across_components_with_their_templates() {
        let ps = workload_pod_sets(&aw());
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[0]["name"], "my-aw-0");
        assert_eq!(ps[0]["count"], 2);
        assert_eq!(ps[0]["template"]["spec"]["containers"][0]["name"], "c");
        assert_eq!(ps[1]["name"], "my-aw-1");
        assert_eq!(ps[1]["count"], 1);
        assert_eq!(ps[1]["template"]["metadata"]["name"], "p");
        let prio = workload::Priority {
            value: 100,
            source: workload::PrioritySource::WorkloadPriorityClass("high".into()),
        };
        let wl = workload_for(&aw(), "q", &prio, None);
        assert_eq!(wl["spec"]["queueName"], "q");
        assert_eq!(wl["spec"]["priority"], 100);
        assert_eq!(wl["spec"]["priorityClassRef"]["name"], "high");
        assert_eq!(wl["metadata"]["ownerReferences"][0]["kind"], "AppWrapper");
        assert!(wl["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("appwrapper-My-AW-"));
    }

    #[test]
    fn start_maps_infos_onto_components_and_resumes() {
        let info = |z: &str| workload::PodSetInfo {
            name: z.into(),
            node_selector: [("zone".to_string(), z.to_string())].into(),
            ..Default::default()
        };
        let ops = start_ops(&aw(), &[info("a"), info("b")]).unwrap();
        assert_eq!(ops[0]["path"], "/spec/components/0/podSetInfos");
        assert_eq!(ops[0]["value"][0]["nodeSelector"]["zone"], "a");
        assert_eq!(ops[1]["value"][0]["nodeSelector"]["zone"], "b");
        assert_eq!(
            ops[2],
            json!({"op": "add", "path": "/spec/suspend", "value": false})
        );
        assert!(start_ops(&aw(), &[info("a")]).is_err());
    }

    #[test]
    fn stop_suspends_and_clears_only_present_infos() {
        let mut a = aw();
        a.spec.components[1].pod_set_infos = vec![PodSetInfo::default()];
        let ops = stop_ops(&a);
        assert_eq!(
            ops,
            vec![
                json!({"op": "add", "path": "/spec/suspend", "value": true}),
                json!({"op": "remove", "path": "/spec/components/1/podSetInfos"}),
            ]
        );
    }
}
