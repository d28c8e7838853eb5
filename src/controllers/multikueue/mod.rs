//! MultiKueue on the manager: each MultiKueueCluster's
//! worker client, built from the kubeconfig its Secret (in batchgate's
//! namespace) or file holds, connected, and its `Active` condition set; and
//! the `Active` condition of every `kueue.x-k8s.io/multikueue`
//! AdmissionCheck from its MultiKueueConfig's clusters. The decisions are
//! [`crate::multikueue::cluster`]'s; this module reads, connects and
//! writes. The Workloads' dispatch to the connected workers and the
//! garbage collector are [`dispatch`]'s.
//!
//! Kueue keeps a watch open on each worker and learns of a loss from it;
//! here a connected worker is asked for its version every
//! [`HEALTH_EVERY`], and a failed answer is the loss.

mod dispatch;

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    api::core::v1::Secret,
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
};
use kube::{
    api::{ListParams, Patch},
    config::{KubeConfigOptions, Kubeconfig},
    runtime::{controller::Action, reflector::Store, watcher},
    Api, Client, Config, ResourceExt,
};
use serde_json::json;
use tokio::sync::Mutex;
use tracing::{debug, info, warn};

use super::context::{has_check_states, params, store, JobError, Shared};
use crate::{
    api::kueue::v1beta2::{
        AdmissionCheck, Conditions, MultiKueueCluster, MultiKueueConfig, Workload,
        ADMISSION_CHECK_ACTIVE, MULTIKUEUE_CLUSTER_ACTIVE, MULTIKUEUE_CONTROLLER,
    },
    jobs::policy::PolicySet,
    metrics::kueue::KueueMetrics,
    multikueue::{
        cluster::{self, Active, ClusterState, Connection, Link, Load, Plan, Reconnect, Source},
        dispatch::JobKind,
        kubeconfig, Settings,
    },
};

/// How often a connected worker is asked whether it still answers.
pub const HEALTH_EVERY: Duration = Duration::from_secs(30);

/// One worker as the manager holds it between looks.
#[derive(Default)]
struct Worker {
    /// The kubeconfig the client was built from.
    kubeconfig: Vec<u8>,
    reconnect: Reconnect,
    link: Link,
    /// The worker's client and its watches, while connected.
    remote: Option<Arc<dispatch::Remote>>,
}

struct Ctx {
    shared: Shared,
    /// Where the kubeconfig Secrets are (Kueue's own namespace there).
    namespace: String,
    workers: Mutex<BTreeMap<String, Worker>>,
    clusters: Store<MultiKueueCluster>,
    checks: Store<AdmissionCheck>,
    configs: Store<MultiKueueConfig>,
    /// The local Workloads (the dispatch controller's store).
    locals: Store<Workload>,
    settings: Settings,
    /// The kinds dispatched: every policy's that has `managedBy`, and the
    /// AppWrapper.
    kinds: Vec<JobKind>,
    /// When each Workload's incremental round began.
    rounds: Mutex<HashMap<(String, String), Time>>,
    /// Wakes a local Workload (a worker's watch saw its copy or job).
    wake: futures::channel::mpsc::UnboundedSender<kube::runtime::reflector::ObjectRef<Workload>>,
    /// Wakes every local Workload (a worker connected or went away).
    links: futures::channel::mpsc::UnboundedSender<()>,
    metrics: Arc<KueueMetrics>,
}

/// The kind an `externalFrameworks` entry names, its plural read from the
/// apiserver's discovery; a kind not served (yet) gets the plural
/// Kubernetes would give it, as its CRD most likely does.
async fn external_kind(client: &kube::Client, name: &str) -> Option<JobKind> {
    let (kind, group, version) = crate::multikueue::dispatch::parse_kind_arg(name)?;
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    let plural = match kube::discovery::pinned_kind(client, &gvk).await {
        Ok((ar, _)) => ar.plural,
        Err(e) => {
            let guess = kube::core::ApiResource::from_gvk(&gvk).plural;
            warn!(framework = name, error = %e, plural = %guess, "MultiKueue: an external framework's kind is not served; its plural is guessed");
            guess
        }
    };
    JobKind::external(name, plural)
}

/// Runs until the process ends; starts once the MultiKueue kinds are served.
pub async fn run(
    shared: Shared,
    namespace: String,
    settings: Settings,
    policies: PolicySet,
    metrics: Arc<KueueMetrics>,
) {
    let client = shared.client.clone();
    let api = Api::<MultiKueueCluster>::all(client.clone());
    let mut told = false;
    while api
        .list_metadata(&ListParams::default().limit(1))
        .await
        .is_err()
    {
        if !told {
            info!("the MultiKueue kinds are not served: the MultiKueue controllers wait for them");
            told = true;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    let clusters = store(api);
    let checks = store(Api::<AdmissionCheck>::all(client.clone()));
    let configs = store(Api::<MultiKueueConfig>::all(client.clone()));
    let _ = clusters.wait_until_ready().await;
    let _ = checks.wait_until_ready().await;
    let _ = configs.wait_until_ready().await;
    let mut kinds: Vec<JobKind> = policies
        .iter()
        .filter_map(|p| JobKind::from_policy(p))
        .chain([crate::multikueue::dispatch::APPWRAPPER.clone()])
        .collect();
    for name in &settings.external_frameworks {
        let kind = external_kind(&client, name).await;
        kinds.extend(kind.map(|k| JobKind {
            gate_off: !settings.custom_jobs,
            ..k
        }));
    }
    // A Workload without check states has no MultiKueue check to act on.
    let workloads = shared.workloads().controller_where(has_check_states);
    let (wake, wakes) = futures::channel::mpsc::unbounded();
    let (links, linked) = futures::channel::mpsc::unbounded();
    let ctx = Arc::new(Ctx {
        shared,
        namespace,
        workers: Mutex::new(BTreeMap::new()),
        clusters,
        checks,
        configs,
        locals: workloads.store(),
        kinds,
        settings,
        rounds: Mutex::new(HashMap::new()),
        wake,
        links,
        metrics,
    });
    tokio::join!(
        run_clusters(ctx.clone()),
        run_checks(ctx.clone()),
        dispatch::run(ctx.clone(), workloads, wakes, linked),
        dispatch::collect(ctx),
    );
}

/// The clusters, again when a Secret in the namespace changes (the one a
/// cluster names may have been created, fixed or removed).
async fn run_clusters(ctx: Arc<Ctx>) {
    let client = ctx.shared.client.clone();
    let clusters = ctx.clusters.clone();
    crate::cluster::watch::controller(
        Api::<MultiKueueCluster>::all(client.clone()),
        watcher::Config::default(),
        (),
    )
    .watches(
        Api::<Secret>::namespaced(client, &ctx.namespace),
        watcher::Config::default(),
        move |secret| {
            let name = secret.name_any();
            clusters
                .state()
                .into_iter()
                .filter(|c| cluster::source(&c.spec) == Source::Secret(&name))
                .map(|c| kube::runtime::reflector::ObjectRef::from_obj(&*c))
                .collect::<Vec<_>>()
        },
    )
    .run(reconcile_cluster, error_policy, ctx)
    .for_each(|r| {
        if let Err(e) = r {
            debug!(error = %e, "MultiKueueCluster reconcile");
        }
        futures::future::ready(())
    })
    .await;
}

fn error_policy<K>(_: Arc<K>, _: &JobError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

fn now_nanos() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_nanosecond() as i64
}

async fn reconcile_cluster(mkc: Arc<MultiKueueCluster>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let name = mkc.name_any();
    if mkc.metadata.deletion_timestamp.is_some() {
        if ctx.workers.lock().await.remove(&name).is_some() {
            let _ = ctx.links.unbounded_send(());
        }
        return Ok(Action::await_change());
    }
    let (load, wait) = match read_kubeconfig(&ctx, &mkc).await? {
        Ok(bytes) => match kubeconfig::validate(&bytes) {
            Err(e) => (Load::InsecureKubeConfig(e), None),
            Ok(()) => {
                let (c, wait) = connect(&ctx, &name, bytes).await;
                (Load::Loaded(c), wait)
            }
        },
        Err(load) => (load, None),
    };
    let step = cluster::cluster_step(&load);
    if step.disconnect {
        let mut workers = ctx.workers.lock().await;
        let w = workers.entry(name.clone()).or_default();
        w.remote = None;
        if w.link.mark_disconnected(now_nanos()) {
            let _ = ctx.links.unbounded_send(());
        }
    }
    if let Some(active) = &step.active {
        write_active(&ctx, &mkc, active).await?;
    }
    Ok(match (&load, wait) {
        (Load::Loaded(Connection::Connected), _) => Action::requeue(HEALTH_EVERY),
        (_, Some(d)) => Action::requeue(d),
        _ if step.retry => Action::requeue(Duration::from_secs(5)),
        _ => Action::await_change(),
    })
}

/// The kubeconfig a cluster names, or why it could not be had.
async fn read_kubeconfig(
    ctx: &Ctx,
    mkc: &MultiKueueCluster,
) -> Result<Result<Vec<u8>, Load>, JobError> {
    let bad = |message: String, not_found: bool| Err(Load::BadKubeConfig { message, not_found });
    Ok(match cluster::source(&mkc.spec) {
        Source::ClusterProfile(_) => Err(Load::ClusterProfileDisabled),
        Source::Nothing => bad(cluster::NO_KUBECONFIG.into(), false),
        // The path rules are behind a gate off by default (Kueue v0.19.2).
        Source::Path(p) => match tokio::fs::read(p).await {
            Ok(b) => Ok(b),
            Err(e) => bad(e.to_string(), e.kind() == std::io::ErrorKind::NotFound),
        },
        Source::Secret(s) => {
            let api = Api::<Secret>::namespaced(ctx.shared.client.clone(), &ctx.namespace);
            match api.get_opt(s).await? {
                None => bad(format!("secrets {s:?} not found"), true),
                Some(secret) => {
                    let data: BTreeMap<String, Vec<u8>> = secret
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0))
                        .collect();
                    match kubeconfig::from_secret(s, &data) {
                        Ok(b) => Ok(b.to_vec()),
                        Err(m) => bad(m, false),
                    }
                }
            }
        }
    })
}

/// Connects to the worker with `bytes` as [`Reconnect::plan`] says; the
/// outcome and, when deferred or failed, how long until the next try.
async fn connect(ctx: &Ctx, name: &str, bytes: Vec<u8>) -> (Connection, Option<Duration>) {
    let now = now_nanos();
    let (plan, client, failed) = {
        let mut workers = ctx.workers.lock().await;
        let w = workers.entry(name.to_string()).or_default();
        let changed = w.kubeconfig != bytes;
        let plan = w.reconnect.plan(changed, w.link.connected, now);
        if changed {
            w.kubeconfig = bytes.clone();
        }
        // A changed kubeconfig is always an Attempt with a new client; the
        // old watches serve until it succeeds or fails.
        let client = w.remote.as_ref().map(|r| r.client.clone());
        (plan, client, w.reconnect.failed_attempts)
    };
    let (tried, fresh) = match plan {
        Plan::Wait(d) => return (Connection::Deferred, Some(d.to_std())),
        // Still connected: ask it whether it still answers.
        Plan::UpToDate => match client {
            Some(c) => (probe(&c, HEALTH_EVERY).await.map(|()| c), false),
            None => (Err("no client".into()), false),
        },
        Plan::Attempt => {
            let timeout = cluster::establish_timeout(failed).to_std();
            let tried = match client_for(&bytes).await {
                Ok(c) => probe(&c, timeout).await.map(|()| c),
                Err(e) => Err(e),
            };
            (tried, true)
        }
    };
    let mut workers = ctx.workers.lock().await;
    let w = workers.entry(name.to_string()).or_default();
    match tried {
        Ok(c) => {
            if fresh || w.remote.is_none() {
                let remote = dispatch::Remote::start(
                    c,
                    &ctx.settings.origin,
                    ctx.kinds.len(),
                    ctx.wake.clone(),
                );
                w.remote = Some(Arc::new(remote));
            }
            w.reconnect.connected();
            let was = w.link.connected;
            w.link.mark_connected();
            if !was {
                let _ = ctx.links.unbounded_send(());
            }
            (Connection::Connected, None)
        }
        Err(e) => {
            w.remote = None;
            if w.link.mark_disconnected(now) {
                let _ = ctx.links.unbounded_send(());
            }
            let d = w.reconnect.failed(now);
            (Connection::Failed(e), Some(d.to_std()))
        }
    }
}

/// A client of the worker from its (validated) kubeconfig.
async fn client_for(bytes: &[u8]) -> Result<Client, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    let kc = Kubeconfig::from_yaml(text).map_err(|e| e.to_string())?;
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    Client::try_from(config).map_err(|e| e.to_string())
}

/// Does the worker answer within `timeout`?
async fn probe(client: &Client, timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {}s", timeout.as_secs())),
    }
}

/// Writes the cluster's `Active` condition when it differs.
async fn write_active(ctx: &Ctx, mkc: &MultiKueueCluster, active: &Active) -> Result<(), JobError> {
    let current = mkc.status.as_ref().and_then(|s| s.conditions.as_ref());
    let Some(conditions) = active_conditions(
        current,
        MULTIKUEUE_CLUSTER_ACTIVE,
        active,
        mkc.metadata.generation,
    ) else {
        return Ok(());
    };
    let api = Api::<MultiKueueCluster>::all(ctx.shared.client.clone());
    patch_conditions(&api, &mkc.name_any(), mkc.resource_version(), conditions).await
}

/// The conditions with `ty` set as `active` says, or `None` when the one in
/// place already says it (Kueue's `cmpConditionState`).
fn active_conditions(
    current: Option<&Vec<Condition>>,
    ty: &str,
    active: &Active,
    generation: Option<i64>,
) -> Option<Vec<Condition>> {
    let conds = Conditions::of(current);
    let old = conds
        .get(ty)
        .map(|c| (c.status.as_str(), c.reason.as_str(), c.message.as_str()));
    if !active.differs_from(old) {
        return None;
    }
    let mut c = conds.clone();
    c.set(
        ty,
        active.status,
        &active.reason,
        &active.message,
        &Time(k8s_openapi::jiff::Timestamp::now()),
        generation,
    );
    Some(c.0)
}

/// A status patch of the conditions, conditioned on the version read; a
/// conflict or a deletion is left to the next look.
async fn patch_conditions<K>(
    api: &Api<K>,
    name: &str,
    resource_version: Option<String>,
    conditions: Vec<Condition>,
) -> Result<(), JobError>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patch = json!({
        "metadata": {"resourceVersion": resource_version},
        "status": {"conditions": conditions},
    });
    match api
        .patch_status(name, &params(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The MultiKueue AdmissionChecks, again when a config or a cluster
/// changes.
async fn run_checks(ctx: Arc<Ctx>) {
    let client = ctx.shared.client.clone();
    let all = store(Api::<AdmissionCheck>::all(client.clone()));
    let (by_config, by_cluster) = (all.clone(), all.clone());
    let config_changed = ctx.links.clone();
    let multikueue = |all: &Store<AdmissionCheck>| {
        all.state()
            .into_iter()
            .filter(|ac| ac.spec.controller_name == MULTIKUEUE_CONTROLLER)
            .map(|ac| kube::runtime::reflector::ObjectRef::from_obj(&*ac))
            .collect::<Vec<_>>()
    };
    crate::cluster::watch::controller(
        Api::<AdmissionCheck>::all(client.clone()),
        watcher::Config::default(),
        (),
    )
    .watches(
        Api::<MultiKueueConfig>::all(client.clone()),
        watcher::Config::default(),
        move |_| {
            // A config's workers changed: every Workload dispatching is
            // looked at again (a worker added may admit what the others
            // could not; Kueue's "should re-evaluate existing workload when
            // worker2 is added to config").
            let _ = config_changed.unbounded_send(());
            multikueue(&by_config)
        },
    )
    .watches(
        Api::<MultiKueueCluster>::all(client),
        watcher::Config::default(),
        move |_| multikueue(&by_cluster),
    )
    .run(reconcile_check, error_policy, ctx)
    .for_each(|r| {
        if let Err(e) = r {
            debug!(error = %e, "MultiKueue admission check reconcile");
        }
        futures::future::ready(())
    })
    .await;
}

async fn reconcile_check(ac: Arc<AdmissionCheck>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    if ac.spec.controller_name != MULTIKUEUE_CONTROLLER {
        return Ok(Action::await_change());
    }
    // The config is read when the parameters name one.
    let config = match ac.spec.parameters.as_ref() {
        Some(p) if cluster::parameters_problem(Some(p)).is_none() => {
            Api::<MultiKueueConfig>::all(ctx.shared.client.clone())
                .get_opt(&p.name)
                .await?
        }
        _ => None,
    };
    let clusters = &ctx.clusters;
    let Some(active) = cluster::admission_check_active(
        Some(&ac.spec),
        |name| {
            config
                .as_ref()
                .map(|c| &c.spec)
                .ok_or_else(|| cluster::config_not_found(name))
        },
        |name| match clusters.get(&kube::runtime::reflector::ObjectRef::new(name)) {
            None => ClusterState::Missing,
            Some(c) if c.is_active() => ClusterState::Active,
            Some(_) => ClusterState::Inactive,
        },
    ) else {
        return Ok(Action::await_change());
    };
    let current = ac.status.as_ref().and_then(|s| s.conditions.as_ref());
    if let Some(conditions) = active_conditions(
        current,
        ADMISSION_CHECK_ACTIVE,
        &active,
        ac.metadata.generation,
    ) {
        let api = Api::<AdmissionCheck>::all(ctx.shared.client.clone());
        patch_conditions(&api, &ac.name_any(), ac.resource_version(), conditions).await?;
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::controllers::vetting::testing::{scripted_client, sent, status};

    fn ctx(client: Client) -> Arc<Ctx> {
        Arc::new(Ctx {
            shared: Shared::without_kueue(client),
            namespace: "kueue-system".into(),
            workers: Mutex::new(BTreeMap::new()),
            clusters: kube::runtime::reflector::store().0,
            checks: kube::runtime::reflector::store().0,
            configs: kube::runtime::reflector::store().0,
            locals: kube::runtime::reflector::store().0,
            settings: Settings::default(),
            kinds: vec![crate::multikueue::dispatch::BATCH_JOB.clone()],
            rounds: Mutex::new(HashMap::new()),
            wake: futures::channel::mpsc::unbounded().0,
            links: futures::channel::mpsc::unbounded().0,
            metrics: crate::metrics::Metrics::with_kueue(Default::default())
                .kueue
                .clone(),
        })
    }

    fn check_json(params: Value) -> Value {
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
            "metadata": {"name": "mk", "resourceVersion": "5", "generation": 2},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue", "parameters": params}})
    }

    fn check(params: Value) -> Arc<AdmissionCheck> {
        Arc::new(serde_json::from_value(check_json(params)).unwrap())
    }

    /// An apiserver where reads find nothing and writes succeed, answering
    /// with `written`.
    fn apiserver(written: Value) -> impl Fn(&str, &str, &Value) -> (u16, Value) + Send + Sync {
        move |method, _, _| match method {
            "GET" => (404, status(404, "NotFound")),
            _ => (200, written.clone()),
        }
    }

    /// A check whose MultiKueueConfig does not exist: one read of the
    /// config, then one status patch conditioned on the version read, with
    /// Kueue's reason and words.
    #[tokio::test]
    async fn a_check_whose_config_is_missing_is_told_in_one_conditioned_patch() {
        let params =
            json!({"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"});
        let (client, script) = scripted_client(apiserver(check_json(params.clone())));
        let out = reconcile_check(check(params), ctx(client)).await.unwrap();
        assert_eq!(out, Action::await_change());
        let sent = sent(&script);
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            lines,
            [
                "GET /apis/kueue.x-k8s.io/v1beta2/multikueueconfigs/cfg",
                "PATCH /apis/kueue.x-k8s.io/v1beta2/admissionchecks/mk/status",
            ]
        );
        let body = &sent[1].1;
        assert_eq!(body["metadata"]["resourceVersion"], "5");
        let c = &body["status"]["conditions"][0];
        assert_eq!(
            (
                &c["type"],
                &c["status"],
                &c["reason"],
                &c["observedGeneration"]
            ),
            (
                &json!("Active"),
                &json!("False"),
                &json!("BadConfig"),
                &json!(2)
            )
        );
        assert_eq!(
            c["message"],
            r#"Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io "cfg" not found"#
        );
    }

    /// Parameters that name no MultiKueueConfig are told without a read;
    /// a check already saying so gets no write at all.
    #[tokio::test]
    async fn bad_parameters_are_told_without_a_read_and_only_once() {
        let params = json!({"apiGroup": "kueue.x-k8s.io", "kind": "Other", "name": "cfg"});
        let (client, script) = scripted_client(apiserver(check_json(params.clone())));
        reconcile_check(check(params.clone()), ctx(client))
            .await
            .unwrap();
        let sent = sent(&script);
        assert_eq!(sent.len(), 1, "{sent:?}");
        let c = &sent[0].1["status"]["conditions"][0];
        assert_eq!(c["reason"], "BadConfig");
        let mut told = (*check(params)).clone();
        told.status =
            serde_json::from_value(json!({"conditions": sent[0].1["status"]["conditions"]}))
                .unwrap();
        let (client, script) = scripted_client(apiserver(json!(null)));
        reconcile_check(Arc::new(told), ctx(client)).await.unwrap();
        assert!(script.lock().unwrap().is_empty());
    }

    /// A cluster whose Secret is missing: one read, then its `Active`
    /// condition in Kueue's words; no client is kept.
    #[tokio::test]
    async fn a_cluster_whose_secret_is_missing_is_told_after_one_read() {
        let mkc = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
            "metadata": {"name": "w1", "resourceVersion": "9", "generation": 1},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "w1"}}}});
        let (client, script) = scripted_client(apiserver(mkc.clone()));
        let mkc: MultiKueueCluster = serde_json::from_value(mkc).unwrap();
        let ctx = ctx(client);
        let out = reconcile_cluster(Arc::new(mkc), ctx.clone()).await.unwrap();
        // Not found: looked at again when the Secret is created.
        assert_eq!(out, Action::await_change());
        let sent = sent(&script);
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            lines,
            [
                "GET /api/v1/namespaces/kueue-system/secrets/w1",
                "PATCH /apis/kueue.x-k8s.io/v1beta2/multikueueclusters/w1/status",
            ]
        );
        let c = &sent[1].1["status"]["conditions"][0];
        assert_eq!(
            (&c["status"], &c["reason"], &c["message"]),
            (
                &json!("False"),
                &json!("BadKubeConfig"),
                &json!(r#"load client config failed: secrets "w1" not found"#)
            )
        );
        assert!(ctx
            .workers
            .lock()
            .await
            .get("w1")
            .is_none_or(|w| w.remote.is_none()));
    }
}
