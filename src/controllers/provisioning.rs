//! Kueue's ProvisioningRequest admission check controller
//! (`controllerName: kueue.x-k8s.io/provisioning-request`): sets the
//! check's `Active` condition from its ProvisioningRequestConfig, and for
//! each Workload holding quota with such a check creates the
//! `autoscaling.x-k8s.io/v1` ProvisioningRequest and its PodTemplates, and
//! sets the check's state from the request's conditions. The decisions are
//! the pure [`crate::queueing::provisioning`]; this module reads and writes.
//!
//! It starts once the ProvisioningRequest API is served (the cluster
//! autoscaler's CRD), as Kueue only runs it then.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::PodTemplate;
use kube::{
    api::{ApiResource, DynamicObject, ListParams, Patch, PostParams},
    runtime::{
        controller::Action,
        reflector::{ObjectRef, Store},
        watcher,
    },
    Api, Client, Resource, ResourceExt,
};
use serde_json::{json, Value};
use tracing::{debug, info};

use super::context::{
    admission_pod_set_infos, delete_by_uid, has_check_states, params, store, write_workload_status,
    JobError, Shared,
};
use crate::vocabulary::keys;
use crate::{
    api::kueue::v1beta2::{
        self as api, AdmissionCheck, AdmissionCheckState, ProvisioningRequestConfig,
        PROVISIONING_REQUEST_CONTROLLER,
    },
    queueing::provisioning::{
        self as core,
        pass::{self, Facts, Pass, Provision, Stage},
        Request,
    },
};

fn resource() -> ApiResource {
    ApiResource {
        group: core::GROUP.into(),
        version: core::VERSION.into(),
        api_version: format!("{}/{}", core::GROUP, core::VERSION),
        kind: core::KIND.into(),
        plural: core::PLURAL.into(),
    }
}

struct Ctx {
    shared: Shared,
    checks: Store<AdmissionCheck>,
}

/// Runs until the process ends.
pub async fn run(shared: Shared) {
    let client = shared.client.clone();
    let requests = Api::<DynamicObject>::all_with(client.clone(), &resource());
    let mut told = false;
    while requests
        .list_metadata(&ListParams::default().limit(1))
        .await
        .is_err()
    {
        if !told {
            info!("the ProvisioningRequest API (autoscaling.x-k8s.io/v1) is not served: the provisioning-request admission check waits for it");
            told = true;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    info!("the provisioning-request admission check controller starts");
    let checks = store(Api::<AdmissionCheck>::all(client.clone()));
    let _ = checks.wait_until_ready().await;
    let ctx = Arc::new(Ctx { shared, checks });
    tokio::join!(run_checks(ctx.clone()), run_workloads(ctx, requests));
}

/// The AdmissionChecks' `Active` condition, again when a config changes.
async fn run_checks(ctx: Arc<Ctx>) {
    let client = ctx.shared.client.clone();
    let checks = ctx.checks.clone();
    crate::cluster::watch::controller(
        Api::<AdmissionCheck>::all(client.clone()),
        watcher::Config::default(),
        (),
    )
    .watches(
        Api::<ProvisioningRequestConfig>::all(client),
        watcher::Config::default(),
        move |prc| {
            let name = prc.name_any();
            checks
                .state()
                .into_iter()
                .filter(|ac| ac.spec.parameters.as_ref().is_some_and(|p| p.name == name))
                .map(|ac| ObjectRef::from_obj(&*ac))
                .collect::<Vec<_>>()
        },
    )
    .run(reconcile_check, error_policy, ctx)
    .for_each(|r| {
        if let Err(e) = r {
            debug!(error = %e, "provisioning admission check reconcile");
        }
        futures::future::ready(())
    })
    .await;
}

fn error_policy<K>(_: Arc<K>, _: &JobError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

use crate::controllers::context::now_time;

impl Ctx {
    /// An AdmissionCheck by name: from the store, else from the API. The
    /// reconcile may come from the check's own event, which a separate
    /// watch delivers before the store has it (then nothing would trigger
    /// it again). A check that does not exist costs a GET per reconcile of
    /// a Workload holding quota.
    async fn check(&self, name: &str) -> Result<Option<Arc<AdmissionCheck>>, JobError> {
        if let Some(ac) = self.checks.get(&ObjectRef::new(name)) {
            return Ok(Some(ac));
        }
        let api = Api::<AdmissionCheck>::all(self.shared.client.clone());
        Ok(api.get_opt(name).await?.map(Arc::new))
    }

    /// The config an AdmissionCheck's parameters name, if valid and found.
    /// Asked of the API, not of a store: a reconcile may come from the
    /// config's own event (created or deleted), which a separate watch
    /// delivers before a store would have it.
    async fn config_of(
        &self,
        ac: &AdmissionCheck,
    ) -> Result<Option<ProvisioningRequestConfig>, JobError> {
        let Some(name) = config_name(ac) else {
            return Ok(None);
        };
        let api = Api::<ProvisioningRequestConfig>::all(self.shared.client.clone());
        Ok(api.get_opt(name).await?)
    }

    async fn event(&self, wl: &api::Workload, warning: bool, reason: &str, note: String) {
        self.shared.workload_event(wl, warning, reason, note).await;
    }
}

/// The ProvisioningRequestConfig an AdmissionCheck's parameters name, if
/// the reference is valid.
fn config_name(ac: &AdmissionCheck) -> Option<&str> {
    let p = ac.spec.parameters.as_ref();
    if core::parameters_error(p).is_some() {
        return None;
    }
    Some(&p?.name)
}

async fn reconcile_check(ac: Arc<AdmissionCheck>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    if ac.spec.controller_name != PROVISIONING_REQUEST_CONTROLLER {
        return Ok(Action::await_change());
    }
    let found = ctx.config_of(&ac).await?.is_some();
    let Some(c) = pass::active(&ac, found, &now_time()) else {
        return Ok(Action::await_change());
    };
    let api = Api::<AdmissionCheck>::all(ctx.shared.client.clone());
    let patch = json!({
        "metadata": {"resourceVersion": ac.resource_version()},
        "status": {"conditions": c.0},
    });
    match api
        .patch_status(&ac.name_any(), &params(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    Ok(Action::await_change())
}

/// The Workloads' requests and check states.
async fn run_workloads(ctx: Arc<Ctx>, requests: Api<DynamicObject>) {
    let client = ctx.shared.client.clone();
    // A pass over an idle Workload does nothing (`reconcile_workload`).
    let controller = ctx
        .shared
        .workloads()
        .controller_where(|wl| pass::stage(wl) != Stage::Idle);
    let all = controller.store();
    let all2 = all.clone();
    // A check or config changed: look again at the Workloads with checks.
    let with_checks = move |all: &Store<api::Workload>| {
        all.state()
            .into_iter()
            .filter(|w| has_check_states(w))
            .map(|w| ObjectRef::from_obj(&*w))
            .collect::<Vec<_>>()
    };
    let with_checks2 = with_checks;
    controller
        .owns_with(
            requests,
            resource(),
            watcher::Config::default().labels(&format!(
                "{}={}",
                keys::MANAGED_LABEL,
                keys::MANAGED_VALUE
            )),
        )
        .watches(
            Api::<AdmissionCheck>::all(client.clone()),
            watcher::Config::default(),
            move |_| with_checks(&all),
        )
        .watches(
            Api::<ProvisioningRequestConfig>::all(client),
            watcher::Config::default(),
            move |_| with_checks2(&all2),
        )
        .run(reconcile_workload, error_policy, ctx)
        .for_each(|r| {
            if let Err(e) = r {
                debug!(error = %e, "provisioning workload reconcile");
            }
            futures::future::ready(())
        })
        .await;
}

/// The Workload's own requests (controlled by it).
async fn owned_requests(
    api: &Api<DynamicObject>,
    wl: &api::Workload,
) -> Result<Vec<DynamicObject>, JobError> {
    let uid = wl.metadata.uid.clone().unwrap_or_default();
    let list = api
        .list(&ListParams::default().labels(&format!(
            "{}={}",
            keys::MANAGED_LABEL,
            keys::MANAGED_VALUE
        )))
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter(|pr| {
            pr.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid && o.controller == Some(true))
        })
        .collect())
}

/// Deletes a request read as owned (by UID: a same-named successor is
/// never hit).
async fn delete_request(api: &Api<DynamicObject>, pr: &DynamicObject) -> Result<(), JobError> {
    delete_by_uid(api, &pr.name_any(), pr.uid()).await
}

fn owner_of<K: Resource<DynamicType = ()>>(obj: &K) -> Value {
    json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "name": obj.meta().name,
        "uid": obj.meta().uid,
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

async fn reconcile_workload(wl: Arc<api::Workload>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let stage = pass::stage(&wl);
    if stage == Stage::Idle {
        return Ok(Action::await_change());
    }
    let ns = wl.namespace().unwrap_or_default();
    let client = ctx.shared.client.clone();
    let pr_api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &resource());
    let states = wl
        .status
        .as_ref()
        .and_then(|s| s.admission_checks.clone())
        .unwrap_or_default();
    // The checks of this controller, with their configs. A Workload with
    // none has no request to look for (its states outlive an eviction or
    // its end, so the cleanup still finds them). The cleanup needs no
    // config, and no check newer than the store.
    let ending = stage == Stage::Ending;
    let mut checks = BTreeMap::new();
    for s in &states {
        let ac = if ending {
            ctx.checks.get(&ObjectRef::new(&s.name))
        } else {
            ctx.check(&s.name).await?
        };
        let Some(ac) = ac else { continue };
        if ac.spec.controller_name != PROVISIONING_REQUEST_CONTROLLER {
            continue;
        }
        let config = if ending {
            None
        } else {
            ctx.config_of(&ac).await?.map(|c| c.spec)
        };
        checks.insert(s.name.clone(), config);
    }
    if checks.is_empty() {
        return Ok(Action::await_change());
    }
    let owned = owned_requests(&pr_api, &wl).await?;
    let requests: Vec<Request> = owned
        .iter()
        .filter_map(|pr| serde_json::to_value(pr).ok())
        .map(|v| Request::from_json(&v))
        .collect();
    let decided = pass::pass(&Facts {
        wl: &wl,
        checks: &checks,
        owned: &requests,
        now: &now_time(),
        jitter: jitter(),
    })
    .map_err(bad_workload)?;
    let wl_api = Api::<api::Workload>::namespaced(client.clone(), &ns);
    let (delete, provision) = match decided {
        Pass::Nothing => return Ok(Action::await_change()),
        Pass::Clean { delete } => (delete, Vec::new()),
        Pass::States { states, updated } => {
            write_workload_status(&wl_api, &wl, json!({ "admissionChecks": states })).await?;
            for m in updated {
                ctx.event(&wl, false, "AdmissionCheckUpdated", m).await;
            }
            return Ok(Action::await_change());
        }
        Pass::Sync { delete, provision } => (delete, provision),
    };
    for name in &delete {
        if let Some(pr) = owned.iter().find(|pr| pr.name_any() == *name) {
            delete_request(&pr_api, pr).await?;
        }
    }
    for p in provision {
        let (check, req_name, merged) = match p {
            Provision::Adopt { request, templates } => {
                adopt_templates(&client, &ns, &wl, &request, &templates, &pr_api).await?;
                continue;
            }
            Provision::Create {
                check,
                name,
                pod_sets,
            } => (check, name, pod_sets),
        };
        let state = states.iter().find(|s| s.name == check);
        let queue = wl.spec.queue_name.clone().unwrap_or_default();
        let Some(infos) = admission_pod_set_infos(&ctx.shared.flavors, &wl, &queue) else {
            // A flavor not in the cache yet.
            return Ok(Action::requeue(Duration::from_secs(1)));
        };
        let Some(Some(config)) = checks.get(&check) else {
            continue;
        };
        let pt_api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
        let owner = owner_of(&*wl);
        for m in &merged {
            let pt_name = core::pod_template_name(&req_name, &m.name);
            if pt_api.get_opt(&pt_name).await?.is_some() {
                continue;
            }
            let info = infos.iter().find(|i| i.name == m.name);
            let body = core::pod_template_body(
                &pt_name,
                &wl,
                &m.name,
                &info.map(|i| i.node_selector.clone()).unwrap_or_default(),
                info.map(|i| i.tolerations.as_slice()).unwrap_or_default(),
                &owner,
            )
            .map_err(bad_workload)?;
            let pt: PodTemplate = serde_json::from_value(body)?;
            if let Err(e) = pt_api.create(&PostParams::default(), &pt).await {
                let msg = format!("Error creating PodTemplate {pt_name:?}: {e}");
                return failed_create(&ctx, &wl_api, &wl, state, msg, e).await;
            }
        }
        let body = core::request_body(&req_name, &wl, config, &merged, &owner);
        let obj: DynamicObject = serde_json::from_value(body)?;
        match pr_api.create(&PostParams::default(), &obj).await {
            Ok(created) => {
                ctx.event(
                    &wl,
                    false,
                    "ProvisioningRequestCreated",
                    format!("Created ProvisioningRequest: {req_name:?}"),
                )
                .await;
                let created = Request::from_json(&serde_json::to_value(&created)?);
                let templates: Vec<String> =
                    created.pod_sets.iter().map(|(t, _)| t.clone()).collect();
                adopt_templates(&client, &ns, &wl, &created.name, &templates, &pr_api).await?;
            }
            // Created by an earlier pass not seen yet: the next pass reads it.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Action::requeue(Duration::from_secs(1)));
            }
            Err(e) => {
                let msg = format!("Error creating ProvisioningRequest {req_name:?}: {e}");
                return failed_create(&ctx, &wl_api, &wl, state, msg, e).await;
            }
        }
    }
    Ok(Action::await_change())
}

fn bad_workload(e: core::ProvisioningError) -> JobError {
    JobError::Kube(kube::Error::Service(e.to_string().into()))
}

/// Kueue's `handleError`: a Warning `FailedCreate` event and the error in
/// the check's message.
async fn failed_create(
    ctx: &Ctx,
    wl_api: &Api<api::Workload>,
    wl: &api::Workload,
    state: Option<&AdmissionCheckState>,
    msg: String,
    err: kube::Error,
) -> Result<Action, JobError> {
    ctx.event(wl, true, "FailedCreate", msg.clone()).await;
    if let Some(states) = state.and_then(|s| pass::failed(wl, &s.name, &msg)) {
        write_workload_status(wl_api, wl, json!({ "admissionChecks": states })).await?;
    }
    Err(err.into())
}

/// `syncProvisionRequestsPodTemplates`: the request's templates pass from
/// the Workload's control to the request's (so they go with it).
async fn adopt_templates(
    client: &Client,
    ns: &str,
    wl: &api::Workload,
    request: &str,
    templates: &[String],
    pr_api: &Api<DynamicObject>,
) -> Result<(), JobError> {
    let pt_api = Api::<PodTemplate>::namespaced(client.clone(), ns);
    let mut pr_uid: Option<String> = None;
    for template in templates {
        let Some(pt) = pt_api.get_opt(template).await? else {
            continue;
        };
        if pr_uid.is_none() {
            let Some(obj) = pr_api.get_opt(request).await? else {
                return Ok(());
            };
            pr_uid = obj.metadata.uid.clone();
        }
        let refs = pt.metadata.owner_references.as_deref().unwrap_or_default();
        let wl_uid = wl.metadata.uid.as_deref().unwrap_or_default();
        let uid = pr_uid.as_deref().unwrap_or_default();
        let Some(kept) = pass::handed_over(refs, wl_uid, request, uid) else {
            continue;
        };
        let patch = json!({"metadata": {
            "resourceVersion": pt.resource_version(),
            "ownerReferences": kept,
        }});
        match pt_api
            .patch(template, &params(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// A fraction in `[0, 1)` for the backoff's jitter.
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1_000_000) / 1_000_000.0
}

/// The executor against a scripted apiserver: the exact requests of a pass.
#[cfg(test)]
mod tests {
    use kube::runtime::{reflector, watcher::Event};
    use serde_json::{json, Value};

    use super::*;
    use crate::controllers::vetting::testing::{scripted_client, sent as requests, status};

    const CONFIG: &str = "/apis/kueue.x-k8s.io/v1beta2/provisioningrequestconfigs/prc";
    const REQUESTS: &str = "/apis/autoscaling.x-k8s.io/v1/namespaces/ns/provisioningrequests";
    const REQUEST: &str =
        "/apis/autoscaling.x-k8s.io/v1/namespaces/ns/provisioningrequests/wl-prov-1";
    const TEMPLATES: &str = "/api/v1/namespaces/ns/podtemplates";
    const TEMPLATE: &str = "/api/v1/namespaces/ns/podtemplates/ppt-wl-prov-1-main";
    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";
    const WL_STATUS: &str = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status";
    const CHECK_STATUS: &str = "/apis/kueue.x-k8s.io/v1beta2/admissionchecks/prov/status";

    fn check(status: Option<Value>) -> AdmissionCheck {
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
            "metadata": {"name": "prov", "resourceVersion": "7", "generation": 1},
            "spec": {"controllerName": PROVISIONING_REQUEST_CONTROLLER,
                "parameters": {"apiGroup": "kueue.x-k8s.io",
                    "kind": "ProvisioningRequestConfig", "name": "prc"}},
            "status": status,
        }))
        .unwrap()
    }

    fn ctx(client: Client) -> Arc<Ctx> {
        let mut shared = Shared::without_kueue(client);
        let (flavors, mut w) = reflector::store();
        w.apply_watcher_event(&Event::Apply(
            serde_json::from_value(json!({"apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {}}))
            .unwrap(),
        ));
        shared.flavors = flavors;
        let (checks, mut w) = reflector::store();
        w.apply_watcher_event(&Event::Apply(check(None)));
        Arc::new(Ctx { shared, checks })
    }

    /// `ns/wl` (uid `wl-uid`) holding quota on `cq`, its check `prov`
    /// Pending, and `extra` conditions set.
    fn wl(extra: &[&str]) -> api::Workload {
        let mut conds = vec!["QuotaReserved"];
        conds.extend(extra);
        let conds: Vec<Value> = conds
            .iter()
            .map(|t| {
                json!({"type": t, "status": "True", "reason": t, "message": "",
                "lastTransitionTime": "2026-11-28T12:00:00Z"})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "ns", "uid": "wl-uid",
                "generation": 1, "resourceVersion": "5"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2,
                "template": {"spec": {"containers": [{"name": "c", "image": "i",
                    "resources": {"requests": {"cpu": "1"}}}]}}}]},
            "status": {"conditions": conds,
                "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
                    "count": 2, "flavors": {"cpu": "f"}}]},
                "admissionChecks": [{"name": "prov", "state": "Pending", "message": "",
                    "lastTransitionTime": "2026-11-28T12:00:00Z"}]}
        }))
        .unwrap()
    }

    fn owned_by(uid: &str) -> Value {
        json!([{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "wl",
            "uid": uid, "controller": true, "blockOwnerDeletion": true}])
    }

    fn template(owner_uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": "ppt-wl-prov-1-main", "namespace": "ns",
                "resourceVersion": "9", "ownerReferences": owned_by(owner_uid)},
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}})
    }

    fn request(name: &str, owner_uid: &str) -> Value {
        json!({"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("{name}-uid"),
                "labels": {"kueue.x-k8s.io/managed": "true"},
                "ownerReferences": owned_by(owner_uid)},
            "spec": {"provisioningClassName": "class1",
                "podSets": [{"podTemplateRef": {"name": "ppt-wl-prov-1-main"}, "count": 2}]}})
    }

    /// The apiserver of these tests: the config exists, the Workload owns
    /// `owned` requests, the template reads as `existing` (404 if `None`),
    /// and a request create answers `create`.
    fn apiserver(
        owned: Vec<Value>,
        existing: Option<Value>,
        create: u16,
    ) -> impl Fn(&str, &str, &Value) -> (u16, Value) + Send + Sync + 'static {
        move |method, path, body| match (method, path) {
            ("GET", CONFIG) => (
                200,
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "ProvisioningRequestConfig", "metadata": {"name": "prc"},
                    "spec": {"provisioningClassName": "class1"}}),
            ),
            ("GET", REQUESTS) => (
                200,
                json!({"apiVersion": "autoscaling.x-k8s.io/v1",
                    "kind": "ProvisioningRequestList", "metadata": {}, "items": owned}),
            ),
            ("GET", TEMPLATE) => match &existing {
                Some(t) => (200, t.clone()),
                None => (404, status(404, "NotFound")),
            },
            ("GET", REQUEST) => (200, request("wl-prov-1", "wl-uid")),
            ("POST", REQUESTS) if create == 201 => {
                let mut created = body.clone();
                created["metadata"]["uid"] = json!("wl-prov-1-uid");
                (201, created)
            }
            ("POST", REQUESTS) => (create, status(create, "Forbidden")),
            ("POST", TEMPLATES) | ("POST", EVENTS) => (201, body.clone()),
            ("PATCH", CHECK_STATUS) => (200, serde_json::to_value(check(None)).unwrap()),
            ("PATCH", _) => (200, body.clone()),
            ("DELETE", _) => (200, status(200, "Success")),
            _ => (404, status(404, "NotFound")),
        }
    }

    fn lines(sent: &[(String, Value)]) -> Vec<&str> {
        sent.iter().map(|(l, _)| l.as_str()).collect()
    }

    #[tokio::test]
    async fn a_held_workload_gets_its_templates_then_its_request_which_then_owns_them() {
        // The template reads as missing for the create, then as made for
        // the Workload for the hand-over (the script is stateless).
        let (client, sent) = scripted_client(apiserver(vec![], None, 201));
        let out = reconcile_workload(Arc::new(wl(&[])), ctx(client))
            .await
            .unwrap();
        assert_eq!(out, Action::await_change());
        let sent = requests(&sent);
        assert_eq!(
            lines(&sent),
            [
                format!("GET {CONFIG}"),
                format!("GET {REQUESTS}"),
                format!("GET {TEMPLATE}"),
                format!("POST {TEMPLATES}"),
                format!("POST {REQUESTS}"),
                format!("POST {EVENTS}"),
                format!("GET {TEMPLATE}"),
            ]
        );
        let pt = &sent[3].1;
        assert_eq!(pt["metadata"]["name"], "ppt-wl-prov-1-main");
        assert_eq!(pt["metadata"]["ownerReferences"][0]["uid"], "wl-uid");
        let pr = &sent[4].1;
        assert_eq!(pr["metadata"]["name"], "wl-prov-1");
        assert_eq!(pr["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
        assert_eq!(pr["spec"]["provisioningClassName"], "class1");
        assert_eq!(sent[5].1["reason"], "ProvisioningRequestCreated");
        assert_eq!(
            sent[5].1["note"],
            "Created ProvisioningRequest: \"wl-prov-1\""
        );
    }

    #[tokio::test]
    async fn the_templates_made_for_the_workload_are_handed_to_its_request() {
        let (client, sent) = scripted_client(apiserver(vec![], Some(template("wl-uid")), 201));
        reconcile_workload(Arc::new(wl(&[])), ctx(client))
            .await
            .unwrap();
        let sent = requests(&sent);
        // The template exists, so it is not created again; the request is,
        // and then it controls the template (guarded by its version).
        assert_eq!(
            lines(&sent),
            [
                format!("GET {CONFIG}"),
                format!("GET {REQUESTS}"),
                format!("GET {TEMPLATE}"),
                format!("POST {REQUESTS}"),
                format!("POST {EVENTS}"),
                format!("GET {TEMPLATE}"),
                format!("GET {REQUEST}"),
                format!("PATCH {TEMPLATE}"),
            ]
        );
        let patch = &sent[7].1["metadata"];
        assert_eq!(patch["resourceVersion"], "9");
        assert_eq!(
            patch["ownerReferences"],
            json!([{
            "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "name": "wl-prov-1", "uid": "wl-prov-1-uid",
            "controller": true, "blockOwnerDeletion": true}])
        );
    }

    #[tokio::test]
    async fn a_same_named_template_of_someone_else_is_neither_replaced_nor_adopted() {
        let (client, sent) = scripted_client(apiserver(vec![], Some(template("other")), 201));
        reconcile_workload(Arc::new(wl(&[])), ctx(client))
            .await
            .unwrap();
        let sent = requests(&sent);
        let lines = lines(&sent);
        assert!(
            lines
                .iter()
                .all(|l| !l.starts_with("PATCH") && !l.starts_with("DELETE")),
            "{lines:?}"
        );
        assert!(
            !lines.contains(&format!("POST {TEMPLATES}").as_str()),
            "{lines:?}"
        );
    }

    #[tokio::test]
    async fn an_ending_workload_deletes_only_its_own_requests_on_their_uid() {
        let owned = vec![
            request("wl-prov-1", "wl-uid"),
            request("wl-prov-2", "other"),
        ];
        let (client, sent) = scripted_client(apiserver(owned, None, 201));
        let out = reconcile_workload(Arc::new(wl(&["Finished"])), ctx(client))
            .await
            .unwrap();
        assert_eq!(out, Action::await_change());
        let sent = requests(&sent);
        // No config is read for a cleanup.
        assert_eq!(
            lines(&sent),
            [format!("GET {REQUESTS}"), format!("DELETE {REQUEST}")]
        );
        assert_eq!(sent[1].1["preconditions"]["uid"], "wl-prov-1-uid");
    }

    #[tokio::test]
    async fn a_refused_request_is_a_warning_and_the_checks_message() {
        let (client, sent) = scripted_client(apiserver(vec![], None, 403));
        let out = reconcile_workload(Arc::new(wl(&[])), ctx(client)).await;
        assert!(out.is_err(), "retried with backoff");
        let sent = requests(&sent);
        let n = sent.len();
        assert_eq!(
            lines(&sent)[n - 3..],
            [
                format!("POST {REQUESTS}"),
                format!("POST {EVENTS}"),
                format!("PATCH {WL_STATUS}"),
            ]
        );
        assert_eq!(sent[n - 2].1["type"], "Warning");
        assert_eq!(sent[n - 2].1["reason"], "FailedCreate");
        let message = sent[n - 1].1["status"]["admissionChecks"][0]["message"]
            .as_str()
            .unwrap();
        assert!(
            message.starts_with("Error creating ProvisioningRequest \"wl-prov-1\": "),
            "{message}"
        );
        assert_eq!(sent[n - 1].1["metadata"]["resourceVersion"], "5");
    }

    #[tokio::test]
    async fn the_check_is_marked_active_once_with_its_version() {
        let (client, sent) = scripted_client(apiserver(vec![], None, 201));
        let c = ctx(client);
        reconcile_check(Arc::new(check(None)), c.clone())
            .await
            .unwrap();
        let active = json!({"conditions": [{"type": "Active", "status": "True",
            "reason": "Active", "message": "The admission check is active",
            "lastTransitionTime": "2026-11-28T12:00:00Z", "observedGeneration": 1}]});
        reconcile_check(Arc::new(check(Some(active))), c)
            .await
            .unwrap();
        let sent = requests(&sent);
        assert_eq!(
            lines(&sent),
            [
                format!("GET {CONFIG}"),
                format!("PATCH {CHECK_STATUS}"),
                format!("GET {CONFIG}"),
            ]
        );
        assert_eq!(sent[1].1["metadata"]["resourceVersion"], "7");
        assert_eq!(sent[1].1["status"]["conditions"][0]["status"], "True");
    }
}
