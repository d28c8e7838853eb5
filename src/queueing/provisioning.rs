//! The ProvisioningRequest admission check as Kueue v0.19.2 runs it
//! (`pkg/controller/admissionchecks/provisioning`): for a Workload holding
//! quota, one `autoscaling.x-k8s.io/v1` ProvisioningRequest per check and
//! attempt (`<workload>-<check>-<attempt>`), its pod sets from the
//! Workload's admitted pod sets (`managedResources`, `podSetMergePolicy`),
//! and the check's state read from the request's conditions (Provisioned →
//! Ready with pod set updates, Failed or BookingExpired → Retry with backoff
//! then Rejected, CapacityRevoked → Rejected). Also the check's `Active`
//! condition from its parameters reference.
//!
//! Plain data in and out: ProvisioningRequests are read from raw JSON into
//! [`Request`]; time and jitter are parameters.

pub mod pass;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

use crate::api::kueue::v1beta2::{
    check_state, pod_set_merge_policy, AdmissionCheckParametersReference, AdmissionCheckState,
    PodSet, PodSetUpdate, ProvisioningRequestConfigSpec, Workload,
    PROVISIONING_REQUEST_CONFIG_KIND,
};
use crate::vocabulary::keys::{MANAGED_LABEL, MANAGED_VALUE};

/// The ProvisioningRequest's group, version and plural.
pub const GROUP: &str = "autoscaling.x-k8s.io";
pub const VERSION: &str = "v1";
pub const PLURAL: &str = "provisioningrequests";
pub const KIND: &str = "ProvisioningRequest";

/// Pod annotations that tie the pods to the provisioned capacity
/// (`autoscaling.ProvisioningRequestPodAnnotationKey` and
/// `ProvisioningClassPodAnnotationKey`; Kueue v0.14 dropped the older
/// `cluster-autoscaler.kubernetes.io/…` keys).
pub const CONSUME_ANNOTATION: &str = "autoscaling.x-k8s.io/consume-provisioning-request";
pub const CLASS_ANNOTATION: &str = "autoscaling.x-k8s.io/provisioning-class-name";

/// Workload annotations with this prefix become request parameters.
pub const PARAMETER_ANNOTATION_PREFIX: &str = "provreq.kueue.x-k8s.io/";

/// `constants.go`.
pub const CHECK_INACTIVE_MESSAGE: &str = "the check is not active";
pub const NO_REQUEST_NEEDED: &str = "the provisioning request is not needed";

/// ProvisioningRequest condition types.
pub mod condition {
    pub const ACCEPTED: &str = "Accepted";
    pub const PROVISIONED: &str = "Provisioned";
    pub const FAILED: &str = "Failed";
    pub const BOOKING_EXPIRED: &str = "BookingExpired";
    pub const CAPACITY_REVOKED: &str = "CapacityRevoked";
}

const POD_TEMPLATES_PREFIX: &str = "ppt";
const HASH_LENGTH: usize = 5;
const MAX_PREFIX_LENGTH: usize = 252 - HASH_LENGTH;

/// Kueue's `limitObjectName`: names longer than 247 characters are cut
/// and suffixed with `-` and the first 5 hex digits of their SHA-1.
pub fn limit_object_name(full: &str) -> String {
    if full.len() <= MAX_PREFIX_LENGTH {
        return full.to_string();
    }
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, full.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    // Names are ASCII (DNS subdomains), so a byte cut is a char cut.
    let cut = full.get(..MAX_PREFIX_LENGTH).unwrap_or(full);
    format!("{cut}-{}", &hex[..HASH_LENGTH])
}

/// `ProvisioningRequestName`: `<workload>-<check>-<attempt>`.
pub fn request_name(workload: &str, check: &str, attempt: i32) -> String {
    limit_object_name(&format!("{workload}-{check}-{attempt}"))
}

/// `getProvisioningRequestPodTemplateName`: `ppt-<request>-<pod set>`.
pub fn pod_template_name(request: &str, pod_set: &str) -> String {
    limit_object_name(&format!("{POD_TEMPLATES_PREFIX}-{request}-{pod_set}"))
}

/// The attempt a request's name carries for this Workload and check
/// (`getAttempt`'s `^<prefix>([0-9]+)$`); `None` for another's request.
pub fn attempt_of(request: &str, workload: &str, check: &str) -> Option<i32> {
    let prefix = limit_object_name(&format!("{workload}-{check}-"));
    let digits = request.strip_prefix(&prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Kueue reads an unparsable number as attempt 1.
    Some(digits.parse().unwrap_or(1))
}

/// A ProvisioningRequest as the check reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub name: String,
    pub class: String,
    pub parameters: BTreeMap<String, String>,
    /// `spec.podSets[]`: (pod template name, count).
    pub pod_sets: Vec<(String, i32)>,
    /// `status.conditions[]`: type → (status is True, message).
    pub conditions: BTreeMap<String, (bool, String)>,
    /// `status.provisioningClassDetails`.
    pub class_details: BTreeMap<String, String>,
}

impl Request {
    /// Reads a ProvisioningRequest object (unknown fields ignored).
    pub fn from_json(v: &Value) -> Request {
        let str_map = |m: &Value| -> BTreeMap<String, String> {
            m.as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        };
        Request {
            name: v["metadata"]["name"].as_str().unwrap_or_default().into(),
            class: v["spec"]["provisioningClassName"]
                .as_str()
                .unwrap_or_default()
                .into(),
            parameters: str_map(&v["spec"]["parameters"]),
            pod_sets: v["spec"]["podSets"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    (
                        p["podTemplateRef"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        p["count"].as_i64().unwrap_or(0) as i32,
                    )
                })
                .collect(),
            conditions: v["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    Some((
                        c["type"].as_str()?.to_string(),
                        (
                            c["status"] == "True",
                            c["message"].as_str().unwrap_or_default().to_string(),
                        ),
                    ))
                })
                .collect(),
            class_details: str_map(&v["status"]["provisioningClassDetails"]),
        }
    }

    fn is(&self, ty: &str) -> bool {
        self.conditions.get(ty).is_some_and(|c| c.0)
    }

    fn message(&self, ty: &str) -> String {
        self.conditions
            .get(ty)
            .map(|c| c.1.clone())
            .unwrap_or_default()
    }

    /// `provReqSyncedWithConfig`: same class, every configured parameter
    /// with the same value.
    pub fn synced_with(&self, config: &ProvisioningRequestConfigSpec) -> bool {
        self.class == config.provisioning_class_name
            && config
                .parameters
                .iter()
                .flatten()
                .all(|(k, v)| self.parameters.get(k) == Some(v))
    }
}

/// A Workload whose pod sets and admission disagree (Kueue's
/// `errInconsistentPodSetAssignments`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProvisioningError {
    #[error("inconsistent podSet assignments: missing assignment for PodSet {0:?}")]
    MissingAssignment(String),
    #[error("inconsistent podSet assignments")]
    Inconsistent,
}

fn assigned_count(wl: &Workload, ps: &PodSet) -> Option<i32> {
    let psa = wl
        .status
        .as_ref()?
        .admission
        .as_ref()?
        .pod_set_assignments
        .iter()
        .flatten()
        .find(|a| a.name == ps.name)?;
    Some(psa.count.unwrap_or(ps.count))
}

/// Whether a pod's containers (or init containers) request or limit one of
/// `resources` (`podUses`).
fn uses(ps: &PodSet, resources: &[String]) -> bool {
    let Some(spec) = ps.template.spec.as_ref() else {
        return false;
    };
    spec.init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .any(|c| {
            let r = c.resources.as_ref();
            let has = |m: Option<&BTreeMap<String, _>>| {
                m.is_some_and(|m| m.keys().any(|k| resources.contains(k)))
            };
            has(r.and_then(|r| r.requests.as_ref())) || has(r.and_then(|r| r.limits.as_ref()))
        })
}

fn managed(ps: &PodSet, config: &ProvisioningRequestConfigSpec) -> bool {
    let resources = config.managed_resources.as_deref().unwrap_or_default();
    ps.count > 0 && (resources.is_empty() || uses(ps, resources))
}

/// `reqIsNeeded`: some managed pod set has a positive admitted count.
pub fn is_needed(
    wl: &Workload,
    config: &ProvisioningRequestConfigSpec,
) -> Result<bool, ProvisioningError> {
    for ps in wl
        .spec
        .pod_sets
        .iter()
        .flatten()
        .filter(|ps| managed(ps, config))
    {
        match assigned_count(wl, ps) {
            None => return Err(ProvisioningError::MissingAssignment(ps.name.clone())),
            Some(n) if n > 0 => return Ok(true),
            Some(_) => {}
        }
    }
    Ok(false)
}

/// One pod set of the request (`MergedPodSet`): the Workload pod set whose
/// template it uses and the pods of every pod set merged into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPodSet {
    pub name: String,
    pub count: i32,
}

/// `mergePodSets`: the managed pod sets with a positive admitted count, in
/// order, merged per `podSetMergePolicy`.
pub fn merged_pod_sets(
    wl: &Workload,
    config: &ProvisioningRequestConfigSpec,
) -> Result<Vec<MergedPodSet>, ProvisioningError> {
    let mut out: Vec<(MergedPodSet, &PodSet)> = Vec::new();
    for ps in wl
        .spec
        .pod_sets
        .iter()
        .flatten()
        .filter(|ps| managed(ps, config))
    {
        let count = assigned_count(wl, ps).ok_or(ProvisioningError::Inconsistent)?;
        if count <= 0 {
            continue;
        }
        let policy = config.pod_set_merge_policy.as_deref();
        match out
            .iter_mut()
            .find(|(_, other)| policy.is_some_and(|p| can_merge(other, ps, p)))
        {
            Some((m, _)) => m.count += count,
            None => out.push((
                MergedPodSet {
                    name: ps.name.clone(),
                    count,
                },
                ps,
            )),
        }
    }
    Ok(out.into_iter().map(|(m, _)| m).collect())
}

/// `canMergePodSets`.
fn can_merge(a: &PodSet, b: &PodSet, policy: &str) -> bool {
    match policy {
        pod_set_merge_policy::IDENTICAL_POD_TEMPLATES => a.template == b.template,
        pod_set_merge_policy::IDENTICAL_WORKLOAD_SCHEDULING_REQUIREMENTS => {
            same_scheduling_requirements(a, b)
        }
        _ => false,
    }
}

/// `arePodSetsSimilar`: the same container requests (in order), pod
/// resources, node selector, tolerations, affinity and resource claims.
fn same_scheduling_requirements(a: &PodSet, b: &PodSet) -> bool {
    let (Some(x), Some(y)) = (a.template.spec.as_ref(), b.template.spec.as_ref()) else {
        return a.template.spec.is_none() && b.template.spec.is_none();
    };
    let requests = |cs: &[k8s_openapi::api::core::v1::Container]| -> Vec<_> {
        cs.iter()
            .map(|c| {
                c.resources
                    .as_ref()
                    .and_then(|r| r.requests.clone())
                    .unwrap_or_default()
            })
            .collect()
    };
    requests(&x.containers) == requests(&y.containers)
        && requests(x.init_containers.as_deref().unwrap_or_default())
            == requests(y.init_containers.as_deref().unwrap_or_default())
        && x.resources == y.resources
        && x.node_selector.clone().unwrap_or_default()
            == y.node_selector.clone().unwrap_or_default()
        && x.tolerations.clone().unwrap_or_default() == y.tolerations.clone().unwrap_or_default()
        && x.affinity == y.affinity
        && x.resource_claims.clone().unwrap_or_default()
            == y.resource_claims.clone().unwrap_or_default()
}

/// `activeOrLastPRForChecks` for one check: of the Workload's requests for
/// it, the one with the highest attempt, when a request is needed and it
/// matches the config (a request out of step with its config is dropped).
pub fn active_or_last<'a>(
    requests: &'a [Request],
    workload: &str,
    check: &str,
    needed: bool,
    config: &ProvisioningRequestConfigSpec,
) -> Option<&'a Request> {
    if !needed {
        return None;
    }
    requests
        .iter()
        .filter_map(|r| Some((attempt_of(&r.name, workload, check)?, r)))
        .filter(|(_, r)| r.synced_with(config))
        .max_by_key(|(a, _)| *a)
        .map(|(_, r)| r)
}

/// `UpdateAdmissionCheckRequeueState`: the backoff before retry number
/// `retry_count + 1`, `base·2^(n-1)` capped at `max` (a zero `max` is no
/// cap), with `wait.Backoff`'s jitter of 0.0001 (`jitter` in `[0, 1)`),
/// truncated to seconds.
pub fn requeue_after_seconds(retry_count: i32, base: i32, max: i32, jitter: f64) -> i32 {
    let n = retry_count.max(0) + 1;
    let base = f64::from(base.max(0));
    let cap = if max > 0 { f64::from(max) } else { f64::MAX };
    // wait.Backoff's first step is the base, whatever the cap.
    let mut d = base;
    for _ in 1..n {
        d = (d * 2.0).min(cap);
        if d >= cap {
            break;
        }
    }
    let d = d + d * 0.0001 * jitter.clamp(0.0, 1.0);
    d.trunc().min(f64::from(i32::MAX)) as i32
}

/// What the Workload says that the check's state depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadFacts<'a> {
    pub name: &'a str,
    /// `spec.podSets[].name`, in order.
    pub pod_sets: &'a [String],
    /// The `Admitted` condition.
    pub admitted: bool,
    /// `spec.active` and not finished.
    pub active_unfinished: bool,
}

/// The retry settings in force (`retryStrategy`, defaults 3, 60, 1800).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub limit: i32,
    pub base: i32,
    pub max: i32,
}

impl Retry {
    pub fn of(config: &ProvisioningRequestConfigSpec) -> Retry {
        let r = config.retry_strategy.clone().unwrap_or_default();
        Retry {
            limit: r.backoff_limit_count.unwrap_or(3),
            base: r.backoff_base_seconds.unwrap_or(60),
            max: r.backoff_max_seconds.unwrap_or(1800),
        }
    }
}

/// What the check's configuration allows for this Workload.
#[derive(Debug, Clone, Copy)]
pub enum Need<'a> {
    /// No usable ProvisioningRequestConfig.
    Inactive,
    /// No managed pod set to provision for.
    NotNeeded,
    /// The active or last request (none yet: nothing to sync).
    Request(Option<&'a Request>),
}

/// The check's state after `syncCheckStates`, `None` when nothing changes.
/// `LastTransitionTime` moves only with the state (`SetAdmissionCheckState`).
pub fn next_state(
    current: &AdmissionCheckState,
    need: Need<'_>,
    config: Option<&ProvisioningRequestConfigSpec>,
    wl: &WorkloadFacts<'_>,
    now: &Time,
    jitter: f64,
) -> Option<AdmissionCheckState> {
    let mut s = current.clone();
    let mut updated = false;
    let set_state = |s: &mut AdmissionCheckState, st: &str| {
        if s.state == st {
            return false;
        }
        s.state = st.into();
        true
    };
    let set_message = |s: &mut AdmissionCheckState, m: String| {
        if s.message == m {
            return false;
        }
        s.message = m;
        true
    };
    match need {
        Need::Inactive => {
            updated |= set_state(&mut s, check_state::PENDING);
            updated |= set_message(&mut s, CHECK_INACTIVE_MESSAGE.into());
        }
        Need::NotNeeded => {
            if set_state(&mut s, check_state::READY) {
                updated = true;
                s.message = NO_REQUEST_NEEDED.into();
                s.pod_set_updates = None;
            }
        }
        Need::Request(None) => return None,
        Need::Request(Some(pr)) => {
            let retry = config.map(Retry::of).unwrap_or(Retry {
                limit: 3,
                base: 60,
                max: 1800,
            });
            let attempt = attempt_of(&pr.name, wl.name, &current.name).unwrap_or(1);
            let retry_or_reject = |s: &mut AdmissionCheckState, cond: &str, words: &str| {
                let msg = pr.message(cond);
                if attempt <= retry.limit {
                    let mut changed = set_message(s, format!("{words}: {msg}"));
                    // Not again for a request already retried.
                    if attempt > s.retry_count.unwrap_or(0) {
                        changed = true;
                        set_state(s, check_state::RETRY);
                        s.requeue_after_seconds = Some(requeue_after_seconds(
                            s.retry_count.unwrap_or(0),
                            retry.base,
                            retry.max,
                            jitter,
                        ));
                    }
                    changed
                } else {
                    let changed = s.state != check_state::REJECTED || s.message != msg;
                    s.state = check_state::REJECTED.into();
                    s.message = msg;
                    changed
                }
            };
            if pr.is(condition::FAILED) {
                updated |= retry_or_reject(&mut s, condition::FAILED, "Retrying after failure");
            } else if pr.is(condition::CAPACITY_REVOKED) {
                if wl.active_unfinished {
                    updated |= set_state(&mut s, check_state::REJECTED);
                    updated |= set_message(&mut s, pr.message(condition::CAPACITY_REVOKED));
                }
            } else if pr.is(condition::BOOKING_EXPIRED) {
                if !wl.admitted {
                    updated |= retry_or_reject(
                        &mut s,
                        condition::BOOKING_EXPIRED,
                        "Retrying after booking expired",
                    );
                }
            } else if pr.is(condition::PROVISIONED) {
                if set_state(&mut s, check_state::READY) {
                    updated = true;
                    s.pod_set_updates = Some(pod_set_updates(wl.pod_sets, pr, config));
                    s.message = pr.message(condition::PROVISIONED);
                }
            } else if pr.is(condition::ACCEPTED) {
                if let Some((_, m)) = pr.conditions.get(condition::PROVISIONED) {
                    updated |= set_message(&mut s, m.clone());
                    updated |= set_state(&mut s, check_state::PENDING);
                }
            } else {
                updated |= set_message(&mut s, String::new());
                updated |= set_state(&mut s, check_state::PENDING);
            }
        }
    }
    if !updated {
        return None;
    }
    if s.state != current.state {
        s.last_transition_time = now.clone();
    }
    Some(s)
}

/// `podSetUpdates`: per request pod set, the Workload pod set it stands
/// for with the consume and class annotations, and the node selector
/// entries the config values from `status.provisioningClassDetails`
/// (a detail that is missing is skipped).
pub fn pod_set_updates(
    pod_sets: &[String],
    pr: &Request,
    config: Option<&ProvisioningRequestConfigSpec>,
) -> Vec<PodSetUpdate> {
    pr.pod_sets
        .iter()
        .map(|(template, _)| {
            let name = pod_sets
                .iter()
                .find(|ps| pod_template_name(&pr.name, ps) == *template)
                .cloned()
                .unwrap_or_default();
            let node_selector = config.and_then(|c| c.pod_set_updates.as_ref()).map(|u| {
                u.node_selector
                    .iter()
                    .flatten()
                    .filter_map(|ns| {
                        let v = pr
                            .class_details
                            .get(&ns.value_from_provisioning_class_detail)?;
                        Some((ns.key.clone(), v.clone()))
                    })
                    .collect::<BTreeMap<_, _>>()
            });
            PodSetUpdate {
                name,
                labels: None,
                annotations: Some(BTreeMap::from([
                    (CONSUME_ANNOTATION.to_string(), pr.name.clone()),
                    (CLASS_ANNOTATION.to_string(), pr.class.clone()),
                ])),
                node_selector,
                tolerations: None,
            }
        })
        .collect()
}

/// `syncOwnedProvisionRequest`'s choice: the attempt of the request to
/// create now, if one is due. None for a Ready check; the first (or the
/// one after the retries counted, when cleanup removed the last request)
/// without a request; the next after a Failed one, or one whose booking
/// expired before admission, once the check is Pending again.
pub fn attempt_to_create(
    state: Option<&AdmissionCheckState>,
    last: Option<&Request>,
    workload: &str,
    admitted: bool,
) -> Option<i32> {
    if state.is_some_and(|s| s.state == check_state::READY) {
        return None;
    }
    let Some(pr) = last else {
        return Some(state.and_then(|s| s.retry_count).unwrap_or(0) + 1);
    };
    let state = state?;
    let failed = pr.is(condition::FAILED) || (pr.is(condition::BOOKING_EXPIRED) && !admitted);
    (failed && state.state == check_state::PENDING)
        .then(|| attempt_of(&pr.name, workload, &state.name).unwrap_or(1) + 1)
}

/// The ProvisioningRequest to create (owned by the Workload, labelled as
/// Kueue's): the config's class and parameters, the Workload's
/// `provreq.kueue.x-k8s.io/` annotations as more parameters, one pod set
/// per merged pod set with its template.
pub fn request_body(
    name: &str,
    wl: &Workload,
    config: &ProvisioningRequestConfigSpec,
    pod_sets: &[MergedPodSet],
    owner: &Value,
) -> Value {
    let mut parameters: BTreeMap<String, String> = config.parameters.clone().unwrap_or_default();
    for (k, v) in wl.metadata.annotations.iter().flatten() {
        if let Some(p) = k.strip_prefix(PARAMETER_ANNOTATION_PREFIX) {
            parameters.insert(p.to_string(), v.clone());
        }
    }
    let pod_sets: Vec<Value> = pod_sets
        .iter()
        .map(|m| {
            serde_json::json!({
                "podTemplateRef": {"name": pod_template_name(name, &m.name)},
                "count": m.count,
            })
        })
        .collect();
    serde_json::json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": wl.metadata.namespace,
            "labels": {MANAGED_LABEL: MANAGED_VALUE},
            "ownerReferences": [owner],
        },
        "spec": {
            "provisioningClassName": config.provisioning_class_name,
            "parameters": parameters,
            "podSets": pod_sets,
        },
    })
}

/// `createPodTemplate`: the pod set's template with the admission's node
/// selector and tolerations merged in and limits standing in for missing
/// requests, owned by the Workload until the request takes it over.
pub fn pod_template_body(
    name: &str,
    wl: &Workload,
    pod_set: &str,
    node_selector: &BTreeMap<String, String>,
    tolerations: &[Value],
    owner: &Value,
) -> Result<Value, ProvisioningError> {
    let ps = wl
        .spec
        .pod_sets
        .iter()
        .flatten()
        .find(|p| p.name == pod_set)
        .ok_or(ProvisioningError::Inconsistent)?;
    let mut template =
        serde_json::to_value(&ps.template).map_err(|_| ProvisioningError::Inconsistent)?;
    if !node_selector.is_empty() {
        let ns = &mut template["spec"]["nodeSelector"];
        if !ns.is_object() {
            *ns = serde_json::json!({});
        }
        for (k, v) in node_selector {
            ns[k] = Value::String(v.clone());
        }
    }
    if !tolerations.is_empty() {
        let ts = &mut template["spec"]["tolerations"];
        if !ts.is_array() {
            *ts = serde_json::json!([]);
        }
        if let Some(list) = ts.as_array_mut() {
            for t in tolerations {
                if !list.contains(t) {
                    list.push(t.clone());
                }
            }
        }
    }
    limits_as_requests(&mut template["spec"]);
    Ok(serde_json::json!({
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {
            "name": name,
            "namespace": wl.metadata.namespace,
            "labels": {MANAGED_LABEL: MANAGED_VALUE},
            "ownerReferences": [owner],
        },
        "template": template,
    }))
}

/// `UseLimitsAsMissingRequestsInPod`: a container limit without a request
/// becomes its request.
fn limits_as_requests(spec: &mut Value) {
    for list in ["initContainers", "containers"] {
        for c in spec[list].as_array_mut().into_iter().flatten() {
            let Some(limits) = c["resources"]["limits"].as_object().cloned() else {
                continue;
            };
            let requests = &mut c["resources"]["requests"];
            if !requests.is_object() {
                *requests = serde_json::json!({});
            }
            for (k, v) in limits {
                if requests.get(&k).is_none() {
                    requests[&k] = v;
                }
            }
        }
    }
}

/// The AdmissionCheck's `Active` condition (`acReconciler`): `(status,
/// reason, message)`. `config_found`: the ProvisioningRequestConfig named
/// exists.
pub fn active_condition(
    parameters: Option<&AdmissionCheckParametersReference>,
    config_found: bool,
) -> (bool, &'static str, String) {
    match parameters_error(parameters) {
        Some(e) => (false, "BadParametersRef", e),
        None if !config_found => (
            false,
            "BadParametersRef",
            format!(
                "provisioningrequestconfigs.kueue.x-k8s.io {:?} not found",
                parameters.map(|p| p.name.as_str()).unwrap_or_default()
            ),
        ),
        None => (true, "Active", "The admission check is active".into()),
    }
}

/// `refValidForGK`'s error, in its words.
pub fn parameters_error(parameters: Option<&AdmissionCheckParametersReference>) -> Option<String> {
    let Some(p) = parameters else {
        return Some("missing parameters reference".into());
    };
    if p.name.is_empty() {
        return Some("empty name: bad parameters reference".into());
    }
    if p.api_group != "kueue.x-k8s.io" {
        return Some(format!(
            "wrong group {:?}, expecting \"kueue.x-k8s.io\": bad parameters reference",
            p.api_group
        ));
    }
    if p.kind != PROVISIONING_REQUEST_CONFIG_KIND {
        return Some(format!(
            "wrong kind {:?}, expecting {PROVISIONING_REQUEST_CONFIG_KIND:?}: bad parameters reference",
            p.kind
        ));
    }
    None
}

/// The `AdmissionCheckUpdated` event's words when a state changes.
pub fn updated_message(name: &str, from: &str, to: &AdmissionCheckState) -> String {
    let mut m = format!(
        "Admission check {name} updated state from {from} to {}",
        to.state
    );
    if !to.message.is_empty() {
        m.push_str(&format!(" with message: {}", to.message));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::kueue::v1beta2::{ProvisioningRequestRetryStrategy, WorkloadSpec};
    use serde_json::json;

    fn at(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
    }

    /// Upstream's baseWorkload: `wl` with pod sets ps1 (4 pods) and ps2
    /// (3 pods) asking for cpu, admitted with counts `admitted`.
    fn workload(pod_sets: &[(&str, i32, &str)], admitted: &[(&str, Option<i32>)]) -> Workload {
        let pod_sets: Vec<Value> = pod_sets
            .iter()
            .map(|(n, c, res)| {
                json!({"name": n, "count": c, "template": {"spec": {"containers": [
                    {"name": "c", "resources": {"requests": {*res: "1"}}}]}}})
            })
            .collect();
        let psas: Vec<Value> = admitted
            .iter()
            .map(|(n, c)| match c {
                Some(c) => json!({"name": n, "count": c}),
                None => json!({"name": n}),
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "ns"},
            "spec": {"podSets": pod_sets},
            "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": psas}},
        }))
        .unwrap()
    }

    fn base_workload() -> Workload {
        workload(
            &[("ps1", 4, "cpu"), ("ps2", 3, "cpu")],
            &[("ps1", Some(4)), ("ps2", Some(3))],
        )
    }

    fn config(limit: i32) -> ProvisioningRequestConfigSpec {
        ProvisioningRequestConfigSpec {
            provisioning_class_name: "class1".into(),
            parameters: Some(BTreeMap::from([("p1".into(), "v1".into())])),
            retry_strategy: Some(ProvisioningRequestRetryStrategy {
                backoff_limit_count: Some(limit),
                backoff_base_seconds: Some(60),
                backoff_max_seconds: Some(1800),
            }),
            ..Default::default()
        }
    }

    /// Upstream's baseRequest `wl-check1-1` with conditions
    /// `(type, status, message)`.
    fn request(name: &str, conditions: &[(&str, bool, &str)]) -> Request {
        let conds: Vec<Value> = conditions
            .iter()
            .map(|(t, s, m)| json!({"type": t, "status": if *s {"True"} else {"False"}, "message": m}))
            .collect();
        Request::from_json(&json!({
            "metadata": {"name": name},
            "spec": {"provisioningClassName": "class1", "parameters": {"p1": "v1"},
                     "podSets": [
                        {"podTemplateRef": {"name": format!("ppt-{name}-ps1")}, "count": 4},
                        {"podTemplateRef": {"name": format!("ppt-{name}-ps2")}, "count": 3}]},
            "status": {"conditions": conds},
        }))
    }

    fn pending(retry_count: Option<i32>) -> AdmissionCheckState {
        AdmissionCheckState {
            name: "check1".into(),
            state: check_state::PENDING.into(),
            last_transition_time: at(1),
            message: String::new(),
            requeue_after_seconds: None,
            retry_count,
            pod_set_updates: None,
        }
    }

    fn names() -> Vec<String> {
        vec!["ps1".into(), "ps2".into()]
    }

    fn facts<'a>(pod_sets: &'a [String], admitted: bool, active: bool) -> WorkloadFacts<'a> {
        WorkloadFacts {
            name: "wl",
            pod_sets,
            admitted,
            active_unfinished: active,
        }
    }

    fn next(
        current: &AdmissionCheckState,
        pr: &Request,
        cfg: &ProvisioningRequestConfigSpec,
        admitted: bool,
        active: bool,
    ) -> Option<AdmissionCheckState> {
        let n = names();
        next_state(
            current,
            Need::Request(Some(pr)),
            Some(cfg),
            &facts(&n, admitted, active),
            &at(100),
            0.0,
        )
    }

    /// Kueue v0.19.2 controller_test.go TestReconcile "when request fails
    /// and is retried": Retry, "Retrying after failure: By test",
    /// requeueAfterSeconds the backoff base; and the event's words.
    #[test]
    fn a_failed_request_is_retried_with_backoff() {
        let pr = request("wl-check1-1", &[("Failed", true, "By test")]);
        let got = next(&pending(None), &pr, &config(2), false, true).unwrap();
        assert_eq!(got.state, "Retry");
        assert_eq!(got.message, "Retrying after failure: By test");
        assert_eq!(got.requeue_after_seconds, Some(60));
        assert_eq!(got.last_transition_time, at(100));
        assert_eq!(
            updated_message("check1", "Pending", &got),
            "Admission check check1 updated state from Pending to Retry with message: Retrying after failure: By test"
        );
        // Kueue v0.19.2 TestReconcile "when retry count is preserved but
        // provisioning request was cleaned up": the old request is not
        // retried again; the next attempt is 2.
        let after = pending(Some(1));
        let got = next(&after, &pr, &config(2), false, true).unwrap();
        assert_eq!(got.state, "Pending");
        assert_eq!(got.message, "Retrying after failure: By test");
        assert_eq!(
            attempt_to_create(Some(&after), Some(&pr), "wl", false),
            Some(2)
        );
        assert_eq!(attempt_to_create(Some(&after), None, "wl", false), Some(2));
        assert_eq!(request_name("wl", "check1", 2), "wl-check1-2");
        assert_eq!(
            pod_template_name("wl-check1-2", "ps1"),
            "ppt-wl-check1-2-ps1"
        );
    }

    /// Kueue v0.19.2 TestReconcile "when request fails, and there is no
    /// retry": Rejected with the request's message.
    #[test]
    fn a_failed_request_past_the_limit_is_rejected() {
        let pr = request("wl-check1-1", &[("Failed", true, "By test")]);
        let got = next(&pending(None), &pr, &config(0), false, true).unwrap();
        assert_eq!(
            (got.state.as_str(), got.message.as_str()),
            ("Rejected", "By test")
        );
        assert_eq!(
            updated_message("check1", "Pending", &got),
            "Admission check check1 updated state from Pending to Rejected with message: By test"
        );
        // A Retry or Rejected check gets no new request.
        let mut retry = pending(None);
        retry.state = "Retry".into();
        assert_eq!(
            attempt_to_create(Some(&retry), Some(&pr), "wl", false),
            None
        );
    }

    /// Kueue v0.19.2 TestReconcile "when request is provisioned": Ready,
    /// the request's message, a pod set update per request pod set with
    /// the consume and class annotations.
    #[test]
    fn a_provisioned_request_makes_the_check_ready() {
        let pr = request("wl-check1-1", &[("Provisioned", true, "By test")]);
        let got = next(&pending(None), &pr, &config(3), false, true).unwrap();
        assert_eq!(
            (got.state.as_str(), got.message.as_str()),
            ("Ready", "By test")
        );
        let updates = got.pod_set_updates.unwrap();
        assert_eq!(
            updates.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(),
            ["ps1", "ps2"]
        );
        assert_eq!(
            updates[0].annotations,
            Some(BTreeMap::from([
                (CONSUME_ANNOTATION.into(), "wl-check1-1".into()),
                (CLASS_ANNOTATION.into(), "class1".into()),
            ]))
        );
        assert_eq!(updates[0].node_selector, None);
        // Kueue v0.19.2 TestReconcile "when the request is removed while the
        // check is ready; don't create the ProvReq and keep Ready state".
        let mut ready = pending(None);
        ready.state = "Ready".into();
        assert_eq!(attempt_to_create(Some(&ready), None, "wl", false), None);
    }

    /// Kueue v0.19.2 TestReconcile "when request is provisioned and has
    /// NodeSelector specified via ProvisioningClassDetail" and "... missing
    /// in the ProvisioningClassDetail" (the missing one skipped).
    #[test]
    fn node_selectors_come_from_the_class_details() {
        let mut cfg = config(3);
        cfg.pod_set_updates = Some(serde_json::from_value(json!({"nodeSelector": [
            {"key": "dedicated-selector-key", "valueFromProvisioningClassDetail": "dedicated-selector-detail"},
            {"key": "missing", "valueFromProvisioningClassDetail": "not-there"}]})).unwrap());
        let mut pr = request("wl-check1-1", &[("Provisioned", true, "")]);
        pr.class_details
            .insert("dedicated-selector-detail".into(), "selector-value".into());
        let got = pod_set_updates(&names(), &pr, Some(&cfg));
        assert_eq!(
            got[1].node_selector,
            Some(BTreeMap::from([(
                "dedicated-selector-key".into(),
                "selector-value".into()
            )]))
        );
    }

    /// Kueue v0.19.2 TestReconcile "when no request is needed", "missing
    /// config" and "when the request has no conditions yet the previous
    /// check message is cleared".
    #[test]
    fn no_need_inactive_and_unanswered_requests() {
        let n = names();
        let f = facts(&n, false, true);
        let got = next_state(&pending(None), Need::NotNeeded, None, &f, &at(5), 0.0).unwrap();
        assert_eq!(
            (got.state.as_str(), got.message.as_str()),
            ("Ready", NO_REQUEST_NEEDED)
        );
        let got = next_state(&pending(None), Need::Inactive, None, &f, &at(5), 0.0).unwrap();
        assert_eq!(
            (
                got.state.as_str(),
                got.message.as_str(),
                &got.last_transition_time
            ),
            ("Pending", CHECK_INACTIVE_MESSAGE, &at(1))
        );
        let mut stale = pending(None);
        stale.message = "Error creating ProvisioningRequest".into();
        let pr = request("wl-check1-1", &[]);
        let got = next(&stale, &pr, &config(3), false, true).unwrap();
        assert_eq!((got.state.as_str(), got.message.as_str()), ("Pending", ""));
        assert_eq!(next(&pending(None), &pr, &config(3), false, true), None);
        // Accepted: the Provisioned condition's message (an ETA) is shown.
        let pr = request(
            "wl-check1-1",
            &[("Accepted", true, ""), ("Provisioned", false, "ETA 5m")],
        );
        let got = next(&pending(None), &pr, &config(3), false, true).unwrap();
        assert_eq!(
            (got.state.as_str(), got.message.as_str()),
            ("Pending", "ETA 5m")
        );
    }

    /// Kueue v0.19.2 TestReconcile: CapacityRevoked rejects an active,
    /// unfinished Workload ("workload sets AdmissionCheck status to Rejected
    /// when it is not finished ...", "... when it is not admitted ...") and
    /// leaves a finished one ("workloads doesnt set AdmissionCheck status to
    /// Rejected when it is finished ...").
    #[test]
    fn revoked_capacity_rejects_a_running_workload() {
        let pr = request(
            "wl-check1-1",
            &[
                ("Failed", false, ""),
                ("Provisioned", true, ""),
                ("Accepted", true, ""),
                ("CapacityRevoked", true, "Capacity revoked"),
            ],
        );
        let mut ready = pending(None);
        ready.state = "Ready".into();
        for admitted in [true, false] {
            let got = next(&ready, &pr, &config(3), admitted, true).unwrap();
            assert_eq!(
                (got.state.as_str(), got.message.as_str()),
                ("Rejected", "Capacity revoked")
            );
        }
        assert_eq!(next(&ready, &pr, &config(3), true, false), None);
    }

    /// Kueue v0.19.2 TestReconcile: BookingExpired does nothing once
    /// admitted ("workload does nothing when admitted ..."), retries before
    /// ("workload retries the admission check when is not admitted ...")
    /// and rejects past the limit ("workload rejects the admission check
    /// when is not admitted ...").
    #[test]
    fn an_expired_booking_is_retried_only_before_admission() {
        let pr = request(
            "wl-check1-1",
            &[
                ("Failed", false, ""),
                ("Provisioned", true, ""),
                ("Accepted", true, ""),
                ("BookingExpired", true, "Expired By test"),
            ],
        );
        let mut ready = pending(None);
        ready.state = "Ready".into();
        assert_eq!(next(&ready, &pr, &config(1), true, true), None);
        let got = next(&pending(None), &pr, &config(1), false, true).unwrap();
        assert_eq!(
            (
                got.state.as_str(),
                got.message.as_str(),
                got.requeue_after_seconds
            ),
            (
                "Retry",
                "Retrying after booking expired: Expired By test",
                Some(60)
            )
        );
        let got = next(&pending(None), &pr, &config(0), false, true).unwrap();
        assert_eq!(got.state, "Rejected");
        assert_eq!(
            attempt_to_create(Some(&pending(Some(1))), Some(&pr), "wl", false),
            Some(2)
        );
        assert_eq!(
            attempt_to_create(Some(&pending(Some(1))), Some(&pr), "wl", true),
            None
        );
    }

    /// Kueue v0.19.2 TestActiveOrLastPRForChecks ("two provisioning
    /// requests; 1 then 2" / "2 then 1") and TestReconcile "request out of
    /// sync" (a request whose class or parameters differ from the config is
    /// not the check's).
    #[test]
    fn the_last_attempt_in_step_with_the_config_counts() {
        let cfg = config(3);
        let one = request("wl-check1-1", &[]);
        let two = request("wl-check1-2", &[]);
        for rs in [
            vec![one.clone(), two.clone()],
            vec![two.clone(), one.clone()],
        ] {
            assert_eq!(
                active_or_last(&rs, "wl", "check1", true, &cfg).map(|r| r.name.as_str()),
                Some("wl-check1-2")
            );
        }
        assert_eq!(
            active_or_last(std::slice::from_ref(&one), "wl", "check1", false, &cfg),
            None
        );
        let mut other = cfg.clone();
        other.provisioning_class_name = "class2".into();
        assert_eq!(
            active_or_last(std::slice::from_ref(&one), "wl", "check1", true, &other),
            None
        );
        // Another check's or Workload's requests never match.
        assert_eq!(attempt_of("wl-check1-1", "wl", "check"), None);
        assert_eq!(attempt_of("wl-check1-x", "wl", "check1"), None);
        assert_eq!(attempt_of("wl-check1-12", "wl", "check1"), Some(12));
    }

    /// Kueue v0.19.2 TestReqIsNeeded (all six cases) and TestReconcile
    /// "when request is needed for one PodSet (resource request)" and
    /// "(resource limit)" through `managedResources`.
    #[test]
    fn a_request_is_needed_for_managed_pod_sets_with_pods() {
        let cfg = ProvisioningRequestConfigSpec::default();
        let positive = workload(&[("a", 2, "cpu")], &[("a", Some(2))]);
        assert_eq!(is_needed(&positive, &cfg), Ok(true));
        let fallback = workload(&[("a", 2, "cpu")], &[("a", None)]);
        assert_eq!(is_needed(&fallback, &cfg), Ok(true));
        let zero = workload(&[("a", 2, "cpu")], &[("a", Some(0))]);
        assert_eq!(is_needed(&zero, &cfg), Ok(false));
        let zero_spec = workload(&[("a", 0, "cpu")], &[]);
        assert_eq!(is_needed(&zero_spec, &cfg), Ok(false));
        let missing = workload(&[("a", 2, "cpu")], &[]);
        assert_eq!(
            is_needed(&missing, &cfg),
            Err(ProvisioningError::MissingAssignment("a".into()))
        );
        let short = workload(&[("a", 2, "cpu"), ("b", 2, "cpu")], &[("a", Some(1))]);
        assert_eq!(is_needed(&short, &cfg), Ok(true));

        let gpu = ProvisioningRequestConfigSpec {
            managed_resources: Some(vec!["example.com/gpu".into()]),
            ..Default::default()
        };
        assert_eq!(is_needed(&base_workload(), &gpu), Ok(false));
        let one_gpu = workload(
            &[("ps1", 4, "cpu"), ("ps2", 3, "example.com/gpu")],
            &[("ps1", Some(4)), ("ps2", Some(3))],
        );
        assert_eq!(is_needed(&one_gpu, &gpu), Ok(true));
        assert_eq!(
            merged_pod_sets(&one_gpu, &gpu).unwrap(),
            vec![MergedPodSet {
                name: "ps2".into(),
                count: 3
            }]
        );
    }

    /// Kueue v0.19.2 TestMergePodSetsSkipsZeroCounts ("zero spec count",
    /// "zero admission count override", "zero count does not block
    /// compatible merging") and TestReconcile "with podSetMergePolicy
    /// IdenticalPodTemplates" / "IdenticalWorkloadSchedulingRequirements".
    #[test]
    fn pod_sets_merge_by_policy_and_skip_empty_ones() {
        let mut cfg = ProvisioningRequestConfigSpec::default();
        let wl = workload(
            &[("ps0", 0, "cpu"), ("ps1", 2, "cpu"), ("ps2", 3, "cpu")],
            &[("ps0", Some(0)), ("ps1", Some(0)), ("ps2", Some(3))],
        );
        assert_eq!(
            merged_pod_sets(&wl, &cfg).unwrap(),
            vec![MergedPodSet {
                name: "ps2".into(),
                count: 3
            }]
        );
        for policy in [
            pod_set_merge_policy::IDENTICAL_POD_TEMPLATES,
            pod_set_merge_policy::IDENTICAL_WORKLOAD_SCHEDULING_REQUIREMENTS,
        ] {
            cfg.pod_set_merge_policy = Some(policy.into());
            assert_eq!(
                merged_pod_sets(&base_workload(), &cfg).unwrap(),
                vec![MergedPodSet {
                    name: "ps1".into(),
                    count: 7
                }],
                "{policy}"
            );
        }
        // Different requests never merge.
        let apart = workload(
            &[("ps1", 4, "cpu"), ("ps2", 3, "memory")],
            &[("ps1", Some(4)), ("ps2", Some(3))],
        );
        assert_eq!(merged_pod_sets(&apart, &cfg).unwrap().len(), 2);
    }

    /// `UpdateAdmissionCheckRequeueState` (wait.Backoff, factor 2): the
    /// base, doubled per retry, capped; jitter never reaches a second.
    #[test]
    fn the_backoff_doubles_up_to_the_cap() {
        assert_eq!(requeue_after_seconds(0, 60, 1800, 0.0), 60);
        assert_eq!(requeue_after_seconds(1, 60, 1800, 0.0), 120);
        assert_eq!(requeue_after_seconds(2, 60, 1800, 0.99), 240);
        assert_eq!(requeue_after_seconds(10, 60, 1800, 0.99), 1800);
        assert_eq!(requeue_after_seconds(0, 1, 2, 0.0), 1);
        assert_eq!(requeue_after_seconds(3, 1, 2, 0.0), 2);
    }

    /// Kueue v0.19.2 admissioncheck_reconciler_test.go TestReconcile
    /// ("no parameters specified", "bad ref group", "bad ref kind",
    /// "config missing", "config found").
    #[test]
    fn the_check_is_active_with_a_config_found() {
        let reference = |group: &str, kind: &str| AdmissionCheckParametersReference {
            api_group: group.into(),
            kind: kind.into(),
            name: "config1".into(),
        };
        assert_eq!(
            active_condition(None, false),
            (
                false,
                "BadParametersRef",
                "missing parameters reference".into()
            )
        );
        assert_eq!(
            active_condition(
                Some(&reference("bad.group", "ProvisioningRequestConfig")),
                true
            ),
            (
                false,
                "BadParametersRef",
                "wrong group \"bad.group\", expecting \"kueue.x-k8s.io\": bad parameters reference"
                    .into()
            )
        );
        assert_eq!(
            active_condition(Some(&reference("kueue.x-k8s.io", "BadKind")), true),
            (
                false,
                "BadParametersRef",
                "wrong kind \"BadKind\", expecting \"ProvisioningRequestConfig\": bad parameters reference".into()
            )
        );
        let good = reference("kueue.x-k8s.io", "ProvisioningRequestConfig");
        assert_eq!(
            active_condition(Some(&good), false),
            (
                false,
                "BadParametersRef",
                "provisioningrequestconfigs.kueue.x-k8s.io \"config1\" not found".into()
            )
        );
        assert_eq!(
            active_condition(Some(&good), true),
            (true, "Active", "The admission check is active".into())
        );
    }

    /// `limitObjectName`: long names are cut to 247 characters and given a
    /// hash suffix, the same for the same name.
    #[test]
    fn long_names_are_cut_with_a_hash() {
        let long = "w".repeat(300);
        let name = request_name(&long, "check", 1);
        assert_eq!(name.len(), 253);
        assert_eq!(&name[..247], &format!("{long}-check-1")[..247]);
        assert_eq!(name, request_name(&long, "check", 1));
        assert_ne!(name, request_name(&long, "check", 2));
        // sha1("w"*300 + "-check-1"), as `sha1sum` prints it.
        let want = {
            let d = ring::digest::digest(
                &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
                format!("{long}-check-1").as_bytes(),
            );
            format!(
                "{:02x}{:02x}{:02x}",
                d.as_ref()[0],
                d.as_ref()[1],
                d.as_ref()[2]
            )
        };
        assert_eq!(&name[248..], &want[..5]);
    }

    /// Kueue v0.19.2 TestReconcile "with config" and "workload with provreq
    /// annotation": the request's class, parameters (the Workload's
    /// `provreq.kueue.x-k8s.io/` annotations added), pod sets, label and
    /// owner; the template gets the admission's node selector, and limits
    /// stand in for missing requests.
    #[test]
    fn the_request_and_its_templates() {
        let mut wl = base_workload();
        wl.metadata.annotations = Some(BTreeMap::from([
            (
                "provreq.kueue.x-k8s.io/ValidUntilSeconds".into(),
                "0".into(),
            ),
            ("other".into(), "x".into()),
        ]));
        let owner = json!({"kind": "Workload", "name": "wl"});
        let merged = merged_pod_sets(&wl, &config(3)).unwrap();
        let body = request_body("wl-check1-1", &wl, &config(3), &merged, &owner);
        assert_eq!(
            body["spec"],
            json!({"provisioningClassName": "class1",
                   "parameters": {"p1": "v1", "ValidUntilSeconds": "0"},
                   "podSets": [
                       {"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 4},
                       {"podTemplateRef": {"name": "ppt-wl-check1-1-ps2"}, "count": 3}]})
        );
        assert_eq!(
            body["metadata"]["labels"],
            json!({"kueue.x-k8s.io/managed": "true"})
        );
        assert_eq!(body["metadata"]["ownerReferences"], json!([owner]));
        wl.spec = WorkloadSpec {
            pod_sets: Some(vec![serde_json::from_value(
                json!({"name": "main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c",
                    "resources": {"limits": {"cpu": "2"}}}]}}}),
            )
            .unwrap()]),
            ..Default::default()
        };
        let pt = pod_template_body(
            "ppt-x-main",
            &wl,
            "main",
            &BTreeMap::from([("pool".into(), "a".into())]),
            &[json!({"key": "k", "operator": "Exists"})],
            &owner,
        )
        .unwrap();
        assert_eq!(pt["template"]["spec"]["nodeSelector"], json!({"pool": "a"}));
        assert_eq!(
            pt["template"]["spec"]["tolerations"],
            json!([{"key": "k", "operator": "Exists"}])
        );
        assert_eq!(
            pt["template"]["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "2"})
        );
    }
}
