//! AppWrapper (`workload.codeflare.dev/v1beta2`) admission: pure, like the
//! rest of the core — `(request, facts) -> Decision`, plus the entitlement
//! checks a create needs.
//!
//! Why not a plain policy file: an AppWrapper's pod sets are not at fixed
//! places in the object; they come from each component's declared
//! `podSets[].path` or are inferred from the wrapped object's kind, and
//! upstream validates them with its own path grammar and messages. So the
//! kind gets this module, and reuses the generic job machinery through an
//! embedded [`Policy`] ([`policy`]): `suspend: /spec/suspend`,
//! `managedBy: /spec/managedBy` and Kueue's generic invariants (queue name,
//! prebuilt workload, max execution time, priority class). The mutating
//! hook runs the generic job defaulting (default LocalQueue, default
//! WorkloadPriorityClass, suspend when queued or under
//! `manageJobsWithoutQueueName`, nothing for objects being deleted) and
//! then upstream's own (`appwrapper.defaultQueueName`, the requester's user
//! and uid labels); the validating hook reports upstream's create and update
//! rules first, then the generic invariants, in one aggregated message — the
//! errors two webhooks (Kueue's and the AppWrapper operator's) would give.
//!
//! The policy is not part of the [`PolicySet`](crate::jobs::policy::PolicySet):
//! the job reconcilers must not treat AppWrappers as plain jobs (their
//! lifecycle is the AppWrapper controller's, not implemented yet).

#[cfg(test)]
mod tests;

use crate::vocabulary::pointer::At;
use std::{
    collections::BTreeSet,
    sync::{Arc, OnceLock},
};

use serde_json::Value;

use super::{
    family::{Checks, Decided, Family, Hook, Review},
    field::{aggregate, label_path, BadValue, FieldError},
    object::{DecodeError, JobObject},
    review::UserInfo,
    validation, Context, Decision, Operation, Request, Verdict,
};
use crate::vocabulary::{
    keys::QUEUE_NAME_LABEL,
    patch::{self, PatchOp},
    pointer::Pointer,
};
use crate::{
    admission::entitlement::{
        self, ComponentCheck, Need, ResourceAttributes, ResourceNaming, Subject, Wording,
        ANY_RESOURCE,
    },
    api::appwrapper::v1beta2::{CONTROLLER_NAME, USER_ID_LABEL, USER_LABEL},
    appwrapper::podsets::{self, Gvk, PodSet, PodSpecReading::Strict},
    jobs::policy::{Invariant, Policy, Target, UpdateRules},
};

/// The group and version routed here.
pub use crate::api::appwrapper::{v1beta2::VERSION, GROUP};
pub const KIND: &str = "AppWrapper";
pub const RESOURCE: &str = "appwrappers";
/// Kueue's integration name for AppWrappers (also the metric label).
pub const INTEGRATION: &str = "workload.codeflare.dev/appwrapper";
/// Upstream's message for every update rule.
pub const IMMUTABLE: &str = "attempt to change immutable field";
/// Kueue's limit on pod sets per Workload as upstream enforces it.
pub const MAX_POD_SPECS: usize = 8;

/// The `appwrapper` section of the configuration, as upstream's operator
/// configuration names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Check with a SubjectAccessReview that the requester may create every
    /// component (default true).
    pub user_rbac_admission_check: bool,
    /// The queue-name label given to AppWrappers without one (default none).
    pub default_queue_name: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            user_rbac_admission_check: true,
            default_queue_name: None,
        }
    }
}

/// Is this the AppWrapper kind?
pub fn is_appwrapper(group: &str, version: &str, kind: &str) -> bool {
    group == GROUP && version == VERSION && kind == KIND
}

/// The embedded policy the generic job rules read an AppWrapper through.
pub fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        let pointer = |p: &str| Pointer::parse(p).unwrap_or_else(|_| unreachable!());
        Policy {
            name: INTEGRATION.into(),
            target: Target {
                group: GROUP.into(),
                version: VERSION.into(),
                kind: KIND.into(),
                resource: RESOURCE.into(),
            },
            suspend: pointer("/spec/suspend"),
            gate: None,
            pod_owner: None,
            enabled_by_default: true,
            managed_by: Some(pointer("/spec/managedBy")),
            managed_by_controller: Some(CONTROLLER_NAME.into()),
            pod_sets: Vec::new(),
            invariants: BTreeSet::from([
                Invariant::QueueName,
                Invariant::PrebuiltWorkload,
                Invariant::MaxExecTime,
                Invariant::WorkloadPriorityClass,
            ]),
            status: None,
            skip_when: Vec::new(),
            elastic_jobs: false,
            elastic_pods: None,
            keep_while_deleting: None,
            prebuilt_workloads: true,
            update_rules: UpdateRules::UpdateOnly,
            runtime_ref: None,
            autoscaled: None,
            admission_patch: None,
            multi_kueue: Default::default(),
            source: "built in (src/admission/appwrapper)".into(),
        }
    })
}

/// Upstream's `SanitizeLabel`: at most 63 bytes, every character but ASCII
/// letters, digits, `-`, `_` and `.` replaced with `_`, then `-`, `_` and
/// `.` trimmed from both ends (`IAM#tardieu@us.ibm.com` →
/// `IAM_tardieu_us.ibm.com`).
pub fn sanitize_label(s: &str) -> String {
    let bytes = &s.as_bytes()[..s.len().min(63)];
    // A character cut in two at byte 63 becomes `_`s, which the trim removes.
    let replaced: String = String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    replaced.trim_matches(['-', '_', '.']).to_string()
}

/// The fields the mutating hook may add or replace.
const OWNED: [&str; 6] = [
    "/metadata/labels/kueue.x-k8s.io~1queue-name",
    "/metadata/labels/kueue.x-k8s.io~1priority-class",
    "/spec/suspend",
    // Handed to MultiKueue when its ClusterQueue is MultiKueue's.
    "/spec/managedBy",
    "/metadata/labels/workload.codeflare.dev~1user",
    "/metadata/labels/workload.codeflare.dev~1userid",
];

fn malformed(e: &DecodeError) -> Decision {
    Decision {
        verdict: Verdict::Malformed(format!("cannot decode {}: {e}", policy().target)),
        ..Decision::allow()
    }
}

fn required(what: &str) -> Decision {
    Decision {
        verdict: Verdict::Malformed(format!(
            "request.{what}: required for this operation of {}; the apiserver always sends it",
            policy().target
        )),
        ..Decision::allow()
    }
}

/// Applies `ops` (as [`patch`] builds them, against `obj`) to `obj`.
fn apply(obj: &mut Value, ops: &[PatchOp]) -> Result<(), String> {
    let ops: json_patch::Patch = serde_json::to_value(ops)
        .and_then(serde_json::from_value)
        .map_err(|e| e.to_string())?;
    json_patch::patch(obj, &ops).map_err(|e| e.to_string())
}

fn set_label(obj: &mut Value, key: &str, value: &str) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if labels.is_null() {
            *labels = Value::Object(Default::default());
        }
        if let Value::Object(l) = labels {
            l.insert(key.into(), Value::String(value.into()));
        }
    } else if let Value::Object(root) = obj {
        root.insert(
            "metadata".into(),
            serde_json::json!({"labels": {key: value}}),
        );
    }
}

/// The mutating hook (CREATE only, as upstream registers it): the generic
/// job defaulting, the configured default queue name (a label the user set
/// wins), and the requester's sanitized user name and uid as labels
/// (overwriting whatever the user put there).
pub fn mutate(
    req: &Request<'_>,
    user: &UserInfo,
    settings: &Settings,
    ctx: &Context<'_>,
) -> Decision {
    if req.operation != Operation::Create {
        return Decision::allow();
    }
    let Some(obj) = req.object else {
        return required("object");
    };
    let job = match JobObject::parse(obj, policy()) {
        Ok(j) => j,
        Err(e) => return malformed(&e),
    };
    let mut desired = obj.clone();
    if let Some(q) = &settings.default_queue_name {
        if !q.is_empty() && job.label(QUEUE_NAME_LABEL).is_none() {
            set_label(&mut desired, QUEUE_NAME_LABEL, q);
        }
    }
    // Kueue's job defaulting, seeing the default queue name.
    let generic = super::mutate(
        policy(),
        &Request {
            object: Some(&desired),
            ..*req
        },
        ctx,
    );
    if generic.verdict != Verdict::Allow {
        return generic;
    }
    if let Err(e) = apply(&mut desired, &generic.patch) {
        // Defaulting's own patch always applies to the object it read.
        return Decision {
            verdict: Verdict::Malformed(format!("cannot default {}: {e}", policy().target)),
            ..Decision::allow()
        };
    }
    set_label(&mut desired, USER_LABEL, &sanitize_label(&user.username));
    set_label(&mut desired, USER_ID_LABEL, &sanitize_label(&user.uid));

    let mut ops = Vec::new();
    for p in OWNED {
        let Ok(ptr) = Pointer::parse(p) else { continue };
        if let Some(v) = desired.at(p) {
            if obj.at(p) != Some(v) {
                if let Err(at) = patch::set(obj, &ptr, v.clone(), &mut ops) {
                    return Decision {
                        verdict: Verdict::Malformed(format!(
                            "cannot decode {}: {at}: must be an object to hold {}",
                            policy().target,
                            ptr.field_path()
                        )),
                        ..Decision::allow()
                    };
                }
            }
        }
    }
    Decision {
        patch: ops,
        warnings: generic.warnings,
        ..Decision::allow()
    }
}

/// The validating hook: upstream's create rules or update rules, then
/// Kueue's generic job invariants, aggregated.
pub fn validate(req: &Request<'_>, ctx: &Context<'_>) -> Decision {
    let errs = match req.operation {
        Operation::Create => {
            let Some(obj) = req.object else {
                return required("object");
            };
            let job = match JobObject::parse(obj, policy()) {
                Ok(j) => j,
                Err(e) => return malformed(&e),
            };
            let mut errs = match on_create(obj, req.namespace) {
                Ok(e) => e,
                Err(e) => return malformed(&e),
            };
            match validation::on_create(policy(), &job, ctx) {
                Ok(e) => errs.extend(e),
                Err(e) => return malformed(&e),
            }
            errs
        }
        Operation::Update => {
            let (Some(new), Some(old)) = (req.object, req.old_object) else {
                return required(if req.object.is_none() {
                    "object"
                } else {
                    "oldObject"
                });
            };
            let (new_job, old_job) = match (
                JobObject::parse(new, policy()),
                JobObject::parse(old, policy()),
            ) {
                (Ok(n), Ok(o)) => (n, o),
                (Err(e), _) | (_, Err(e)) => return malformed(&e),
            };
            let mut errs = on_update(old, new);
            match validation::on_update(policy(), &old_job, &new_job, req.namespace, ctx) {
                Ok(e) => errs.extend(e),
                Err(e) => return malformed(&e),
            }
            errs
        }
        Operation::Delete | Operation::Connect => return Decision::allow(),
    };
    if errs.is_empty() {
        Decision::allow()
    } else {
        Decision {
            verdict: Verdict::Deny(aggregate(&errs)),
            ..Decision::allow()
        }
    }
}

/// `spec.components`, or none. A value of another type is an error.
fn components(obj: &Value) -> Result<&[Value], DecodeError> {
    match obj.at("/spec/components") {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(c)) => Ok(c),
        Some(other) => Err(DecodeError {
            field: "spec.components".into(),
            message: format!(
                "must be a list, found {}",
                crate::jobs::policy::json_type(other)
            ),
        }),
    }
}

/// A value as it appears in a field error, where Go prints a struct with
/// `%#v`: batchgate prints the JSON instead.
fn json_value(v: Option<&Value>) -> BadValue {
    match v {
        None | Some(Value::Null) => BadValue::Null,
        Some(v) => BadValue::Raw(v.to_string()),
    }
}

/// The kind of a component's template: `None` when it does not decode as
/// an object with a kind (upstream: "failed to decode as JSON").
fn template_kind(template: Option<&Value>) -> Option<Gvk<'_>> {
    let t = template?.as_object()?;
    let kind = t.get("kind")?.as_str().filter(|k| !k.is_empty())?;
    let api_version = match t.get("apiVersion") {
        None | Some(Value::Null) => "",
        Some(v) => v.as_str()?,
    };
    Some(Gvk::of(api_version, kind))
}

/// A component's declared pod sets as written (`path` and `replicas`);
/// fields of the wrong type read as absent here (the CRD schema refuses
/// them first).
fn declared_pod_sets(component: &Value) -> Vec<PodSet> {
    let declared = |v: &Value| PodSet {
        path: v
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        replicas: v.get("replicas").and_then(Value::as_i64).map(|n| n as i32),
        annotations: Default::default(),
    };
    component
        .get("podSets")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(declared).collect())
        .unwrap_or_default()
}

/// Upstream's `validateAppWrapperCreate` but for the entitlement check
/// (asked afterwards, see [`component_checks`]): every error of every
/// component, then the pod-spec count (1 to 8).
pub fn on_create(obj: &Value, namespace: &str) -> Result<Vec<FieldError>, DecodeError> {
    let components = components(obj)?;
    let namespace = obj
        .at("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or(namespace);
    let mut errs = Vec::new();
    let mut pod_specs = 0usize;
    for (i, component) in components.iter().enumerate() {
        let at = format!("spec.components[{i}]");
        let template = component.get("template");
        let Some(gvk) = template_kind(template) else {
            errs.push(FieldError::invalid(
                format!("{at}.template"),
                json_value(template),
                "failed to decode as JSON",
            ));
            continue;
        };
        let template = template.unwrap_or(&Value::Null);
        if is_appwrapper(gvk.group, gvk.version, gvk.kind) {
            errs.push(FieldError::forbidden(
                format!("{at}.template"),
                "Nested AppWrappers are forbidden",
            ));
        }
        let ns = template
            .at("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !ns.is_empty() && ns != namespace {
            errs.push(FieldError::forbidden(
                format!("{at}.template.metadata.namespace"),
                "AppWrappers cannot create objects in other namespaces",
            ));
        }
        let declared = declared_pod_sets(component);
        for (j, ps) in declared.iter().enumerate() {
            let path = format!("{at}.podSets[{j}].path");
            if ps.path.is_empty() {
                errs.push(FieldError::required(&path, "podspec must specify path"));
            }
            if let Err(e) = podsets::pod_template_at(template, &ps.path, Strict) {
                errs.push(FieldError::invalid(
                    &path,
                    BadValue::Str(ps.path.clone()),
                    format!("path does not refer to a v1.PodSpecTemplate: {e}"),
                ));
            }
        }
        match podsets::infer_pod_sets(template, Strict) {
            Err(e) => errs.push(FieldError::invalid(
                format!("{at}.template"),
                json_value(Some(template)),
                format!("error inferring PodSets: {e}"),
            )),
            Ok(inferred) => {
                pod_specs += declared.len().max(inferred.len());
                if let Err(e) = podsets::validate_pod_sets(&declared, &inferred) {
                    errs.push(FieldError::invalid(
                        format!("{at}.podSets"),
                        json_value(component.get("podSets")),
                        e,
                    ));
                }
            }
        }
    }
    let all = || BadValue::Raw(Value::Array(components.to_vec()).to_string());
    if pod_specs == 0 {
        errs.push(FieldError::invalid(
            "spec.components",
            all(),
            "components contains no podspecs",
        ));
    }
    if pod_specs > MAX_POD_SPECS {
        errs.push(FieldError::invalid(
            "spec.components",
            all(),
            format!(
                "components contains {pod_specs} podspecs; at most {MAX_POD_SPECS} are allowed"
            ),
        ));
    }
    Ok(errs)
}

fn label<'v>(obj: &'v Value, key: &str) -> &'v str {
    obj.at("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Upstream's `validateAppWrapperUpdate`, in every phase: the components
/// (templates, declared pod-set paths and replicas), the user labels and
/// `spec.managedBy` are immutable. Templates are compared as parsed JSON.
pub fn on_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let none: &[Value] = &[];
    let (o, n) = (
        components(old).unwrap_or(none),
        components(new).unwrap_or(none),
    );
    if o.len() != n.len() {
        return vec![FieldError::forbidden("spec.components", IMMUTABLE)];
    }
    let mut errs = Vec::new();
    for (i, (oc, nc)) in o.iter().zip(n).enumerate() {
        let at = format!("spec.components[{i}]");
        if oc.get("template") != nc.get("template") {
            errs.push(FieldError::forbidden(
                format!("{at}.template.raw"),
                IMMUTABLE,
            ));
        }
        let (od, nd) = (declared_pod_sets(oc), declared_pod_sets(nc));
        if od.len() != nd.len() {
            errs.push(FieldError::forbidden(format!("{at}.podsets"), IMMUTABLE));
            continue;
        }
        for (j, (ops, nps)) in od.iter().zip(&nd).enumerate() {
            if ops.replicas() != nps.replicas() {
                errs.push(FieldError::forbidden(
                    format!("{at}.podsets[{j}].replicas"),
                    IMMUTABLE,
                ));
            }
            if ops.path != nps.path {
                errs.push(FieldError::forbidden(
                    format!("{at}.podsets[{j}].path"),
                    IMMUTABLE,
                ));
            }
        }
    }
    for key in [USER_LABEL, USER_ID_LABEL] {
        if label(old, key) != label(new, key) {
            errs.push(FieldError::forbidden(label_path(key), IMMUTABLE));
        }
    }
    if old.at("/spec/managedBy") != new.at("/spec/managedBy") {
        errs.push(FieldError::forbidden("spec.managedBy", IMMUTABLE));
    }
    errs
}

/// The per-component entitlement checks of a create (upstream's
/// `userRBACAdmissionCheck`): every component with a readable template,
/// including those without pods (a Service). Nothing on other operations
/// or for an object being deleted.
pub fn component_checks(req: &Request<'_>, settings: &Settings) -> Vec<ComponentCheck> {
    if !settings.user_rbac_admission_check || req.operation != Operation::Create {
        return Vec::new();
    }
    let Some(obj) = req.object else {
        return Vec::new();
    };
    if crate::admission::entitlement::deleting(Some(obj)) {
        return Vec::new();
    }
    components(obj)
        .unwrap_or(&[])
        .iter()
        .enumerate()
        .filter_map(|(index, c)| {
            let gvk = template_kind(c.get("template"))?;
            Some(ComponentCheck {
                index,
                group: gvk.group.into(),
                version: gvk.version.into(),
                kind: gvk.kind.into(),
            })
        })
        .collect()
}

/// The check for one component: may the requester `create` `resource`
/// (group and version of the template) in the AppWrapper's namespace?
pub fn need(check: &ComponentCheck, resource: &str, namespace: &str, name: &str) -> Need {
    Need {
        attributes: ResourceAttributes {
            verb: "create".into(),
            group: check.group.clone(),
            version: check.version.clone(),
            resource: resource.into(),
            namespace: namespace.into(),
            ..ResourceAttributes::default()
        },
        subject: Subject {
            kind: KIND.into(),
            namespace: namespace.into(),
            name: name.into(),
            field: format!("spec.components[{}].template", check.index),
        },
        because: "",
        wording: Wording::AppWrapperComponent,
    }
}

/// AppWrappers behind the admission router: both hooks, on the whole
/// object, then the entitlement checks of a create — the generic queue and
/// priority opt-ins, and one per component unless
/// `appwrapper.userRBACAdmissionCheck` is off.
pub struct AppWrappers {
    pub settings: Settings,
    pub resources: Arc<dyn ResourceNaming>,
}

impl Family for AppWrappers {
    fn label(&self) -> &'static str {
        INTEGRATION
    }
    fn decide(&self, review: &Review<'_>, ctx: &Context<'_>) -> Decided {
        let req = review.core();
        let decision = match review.hook {
            Hook::Mutate => mutate(&req, &review.request.user_info, &self.settings, ctx),
            Hook::Validate => validate(&req, ctx),
        };
        let mut checks = Checks::default();
        if review.hook == Hook::Validate && decision.verdict == Verdict::Allow {
            let name = review.name();
            let namespace = namespace_of(req.object, req.namespace);
            checks.needs = entitlement::job_checks(
                &entitlement::JobReview {
                    operation: req.operation,
                    kind: KIND,
                    namespace,
                    name,
                    new: entitlement::JobLabels::of(req.object),
                    old: entitlement::JobLabels::of(req.old_object),
                    deleting: entitlement::deleting(req.object),
                },
                ctx.facts,
            );
            for c in component_checks(&req, &self.settings) {
                let resource = self.resources.cached(&c);
                if resource.is_none() {
                    checks.unresolved.push((checks.needs.len(), c.clone()));
                }
                checks.needs.push(need(
                    &c,
                    resource.as_deref().unwrap_or(ANY_RESOURCE),
                    namespace,
                    name,
                ));
            }
            checks.resources = Some(self.resources.clone());
        }
        Decided { decision, checks }
    }
}

/// The namespace an AppWrapper lives in: its own, else the request's.
pub fn namespace_of<'a>(obj: Option<&'a Value>, request: &'a str) -> &'a str {
    obj.and_then(|o| o.at("/metadata/namespace"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or(request)
}
