//! Kinds queued through their pods (a policy with `podOwner`: Kueue's
//! Deployment and StatefulSet integrations). Defaulting on /mutate, as
//! their webhooks' `Default`: default LocalQueue and priority class, then,
//! for an object Kueue would suspend, the pod template marked with
//! `kueue.x-k8s.io/pod-suspending-parent: <integration>` (and, for a
//! Deployment, the managed label, the queue name and the priority class),
//! so the pod webhook gates every pod it creates. Validation on /validate
//! with Kueue's messages: the queue name, the elastic-job and
//! admission-gated-by annotations; on update the queue name and priority
//! class fixed while pods run, and for a group (StatefulSet) the replicas
//! fixed but for a scale down to or up from zero.

use crate::vocabulary::pointer::At;
use serde_json::{json, Value};

use super::{
    admission_gates,
    field::{self, annotation_path, label_path, BadValue, FieldError},
    object::{JobObject, DEFAULT_NAME},
    validation::{self, FIELD_IMMUTABLE},
    Context, Decision, Operation, Request, Verdict,
};
use super::{Fetched, ObjectKey};
use crate::jobs::{
    pod_owner,
    policy::{PodOwner, Policy, ReplicaGroups},
};
use crate::queueing::reservation;
use crate::vocabulary::{
    go::go_quote,
    keys::{
        ADMISSION_GATED_BY_ANNOTATION, ELASTIC_JOB_ANNOTATION, GROUP_SERVING_ANNOTATION,
        MANAGED_LABEL, PODSET_GROUP_NAME_ANNOTATION, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL,
        SUSPENDED_BY_PARENT_ANNOTATION,
    },
    patch::{self, PatchOp},
    pointer::Pointer,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

fn read<'a>(
    policy: &Policy,
    obj: Option<&'a Value>,
    what: &str,
) -> Result<JobObject<'a>, Decision> {
    match obj {
        Some(v) => JobObject::parse(v, policy).map_err(|e| Decision::malformed(policy, &e)),
        None => Err(Decision {
            verdict: Verdict::Malformed(format!(
                "request.{what}: required for this operation of {}; the apiserver always sends it",
                policy.target
            )),
            ..Decision::allow()
        }),
    }
}

/// The integration whose parent annotation the template already carries,
/// when it is another one (a StatefulSet of a LeaderWorkerSet: Kueue's
/// `managedByAnotherFramework`).
fn other_parent<'a>(policy: &Policy, owner: &PodOwner, obj: &'a Value) -> Option<&'a str> {
    owner.group.as_ref()?;
    let p = template_key(owner, "annotations", SUSPENDED_BY_PARENT_ANNOTATION)?;
    p.resolve(obj)
        .and_then(Value::as_str)
        .filter(|n| *n != policy.name)
}

/// A marking refused: the object's `path` is not an object that could
/// hold the field at `at`.
fn cannot_hold(policy: &Policy, path: &str, at: &Pointer) -> Decision {
    Decision {
        verdict: Verdict::Malformed(format!(
            "cannot decode {}: {path}: must be an object to hold {}",
            policy.target,
            at.field_path()
        )),
        ..Decision::allow()
    }
}

fn template_key(owner: &PodOwner, section: &str, key: &str) -> Option<Pointer> {
    key_in(&owner.template, section, key)
}

fn key_in(template: &Pointer, section: &str, key: &str) -> Option<Pointer> {
    let rel = Pointer::parse(&format!(
        "/metadata/{section}/{}",
        key.replace('~', "~0").replace('/', "~1")
    ))
    .ok()?;
    Some(template.child(&rel))
}

/// Kueue's `WorkloadShouldBeSuspended`: not under a managed owner; a queue
/// name, or `manageJobsWithoutQueueName` in a managed namespace.
fn should_suspend(obj: &JobObject<'_>, queue: bool, namespace: &str, ctx: &Context<'_>) -> bool {
    if obj
        .controller()
        .is_some_and(|o| ctx.policies.is_integrated(o.api_version, o.kind))
    {
        return false;
    }
    queue
        || (ctx.settings.manage_jobs_without_queue_name
            && ctx
                .facts
                .namespace_matches(namespace, &ctx.settings.managed_namespaces))
}

/// The mutating webhook (CREATE and UPDATE, as Kueue registers it).
pub fn mutate(policy: &Policy, owner: &PodOwner, req: &Request<'_>, ctx: &Context<'_>) -> Decision {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return Decision::allow();
    }
    let obj = match read(policy, req.object, "object") {
        Ok(o) => o,
        Err(d) => return d,
    };
    let raw = obj.raw;
    if other_parent(policy, owner, raw).is_some() {
        return Decision::allow();
    }
    let mut ops: Vec<PatchOp> = Vec::new();
    // ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector.
    let mut queue = obj.queue_name().map(String::from);
    if queue.is_none()
        && ctx.facts.default_local_queue_exists(req.namespace)
        && ctx
            .facts
            .namespace_matches(req.namespace, &ctx.settings.managed_namespaces)
    {
        patch::set_label(raw, QUEUE_NAME_LABEL, DEFAULT_NAME, &mut ops);
        queue = Some(DEFAULT_NAME.into());
    }
    let mut priority = obj.label(PRIORITY_CLASS_LABEL).map(String::from);
    if priority.is_none() && ctx.facts.default_priority_class_exists() {
        patch::set_label(raw, PRIORITY_CLASS_LABEL, DEFAULT_NAME, &mut ops);
        priority = Some(DEFAULT_NAME.into());
    }
    if !should_suspend(&obj, queue.is_some(), req.namespace, ctx) {
        return Decision {
            patch: ops,
            ..Decision::allow()
        };
    }
    if let Some(groups) = &owner.replica_groups {
        return mark_group_templates(policy, owner, groups, raw, queue, priority, ops);
    }
    let mut marks = vec![(
        "annotations",
        SUSPENDED_BY_PARENT_ANNOTATION,
        policy.name.clone(),
    )];
    if owner.label_template {
        marks.push(("labels", MANAGED_LABEL, "true".into()));
        if let Some(q) = &queue {
            marks.push(("labels", QUEUE_NAME_LABEL, q.clone()));
        }
        if let Some(p) = priority.filter(|p| !p.is_empty()) {
            marks.push(("labels", PRIORITY_CLASS_LABEL, p));
        }
    }
    for (section, key, value) in marks {
        let Some(at) = template_key(owner, section, key) else {
            continue;
        };
        if let Err(path) = patch::set(raw, &at, Value::String(value), &mut ops) {
            return cannot_hold(policy, &path, &at);
        }
    }
    Decision {
        patch: ops,
        ..Decision::allow()
    }
}

/// Kueue's LeaderWorkerSet `podTemplateSpecDefault`, on the leader
/// template (when the object has one) and the workers' template: the queue
/// name and priority class labels, the parent and serving annotations, and
/// the workers' pod-index offset when there is a leader.
fn mark_group_templates(
    policy: &Policy,
    owner: &PodOwner,
    groups: &ReplicaGroups,
    raw: &Value,
    queue: Option<String>,
    priority: Option<String>,
    mut ops: Vec<PatchOp>,
) -> Decision {
    let leader = groups
        .leader
        .as_ref()
        .filter(|_| pod_owner::leader_template(groups, raw).is_some());
    let mut templates: Vec<(&Pointer, bool)> = Vec::new();
    if let Some(l) = leader {
        templates.push((&l.template, false));
    }
    templates.push((&owner.template, true));
    for (template, workers) in templates {
        let mut marks: Vec<(&str, &str, String)> = Vec::new();
        if let Some(q) = queue.as_ref().filter(|q| !q.is_empty()) {
            marks.push(("labels", QUEUE_NAME_LABEL, q.clone()));
        }
        if let Some(p) = priority.as_ref().filter(|p| !p.is_empty()) {
            marks.push(("labels", PRIORITY_CLASS_LABEL, p.clone()));
        }
        marks.push((
            "annotations",
            SUSPENDED_BY_PARENT_ANNOTATION,
            policy.name.clone(),
        ));
        if groups.serving {
            marks.push(("annotations", GROUP_SERVING_ANNOTATION, "true".into()));
        }
        if let (true, Some(offset)) = (
            workers,
            leader.and_then(|l| l.index_offset_annotation.as_deref()),
        ) {
            let grouped = key_in(template, "annotations", PODSET_GROUP_NAME_ANNOTATION)
                .and_then(|p| p.resolve(raw).cloned())
                .is_some();
            if !grouped {
                marks.push(("annotations", offset, "1".into()));
            }
        }
        for (section, key, value) in marks {
            let Some(at) = key_in(template, section, key) else {
                continue;
            };
            if let Err(path) = patch::set(raw, &at, Value::String(value), &mut ops) {
                return cannot_hold(policy, &path, &at);
            }
        }
    }
    Decision {
        patch: ops,
        ..Decision::allow()
    }
}

/// Kueue's `validateReplicasField`: `replicas` within [0, max].
fn replicas_in_range(policy: &Policy, groups: &ReplicaGroups, obj: &Value) -> Vec<FieldError> {
    let n = pod_owner::group_count(groups, obj);
    let why = if n < 0 {
        format!("must be >= 0, got {n}")
    } else if n > groups.max_replicas {
        format!("must be <= {}, got {n}", groups.max_replicas)
    } else {
        return Vec::new();
    };
    vec![FieldError::invalid(
        groups.replicas.field_path(),
        BadValue::Int(n),
        format!("invalid {} replicas: {why}", policy.target.kind),
    )]
}

/// A value as a field error prints it: strings quoted, numbers as they
/// are, null, else its JSON (Go prints its `%#v`).
fn bad_value(v: Option<&Value>) -> BadValue {
    match v {
        None | Some(Value::Null) => BadValue::Null,
        Some(Value::String(s)) => BadValue::Str(s.clone()),
        Some(Value::Number(n)) if n.is_i64() => BadValue::Int(n.as_i64().unwrap_or(0)),
        Some(Value::Bool(b)) => BadValue::Bool(*b),
        Some(other) => BadValue::Raw(other.to_string()),
    }
}

/// apimachinery's semantic equality on JSON: an absent, null, empty map or
/// empty list are one; quantities compare by value.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(l)) => l.is_empty(),
        _ => false,
    };
    if empty(a) && empty(b) {
        return true;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.len() == y.len() && x.iter().all(|(k, v)| same(Some(v), y.get(k)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(Some(v), Some(w)))
        }
        (Some(Value::String(x)), Some(Value::String(y))) if x != y => {
            match (
                crate::queueing::quantity::parse(x),
                crate::queueing::quantity::parse(y),
            ) {
                (Ok(p), Ok(q)) => p == q,
                _ => false,
            }
        }
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Kueue's `ContainersShape`: what admission reads of each container.
fn containers_shape(v: Option<&Value>) -> Vec<Value> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            json!({
                "resources": {"requests": c.at("/resources/requests").cloned().unwrap_or(Value::Null)},
                "ports": c.get("ports").cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// Kueue's `ValidateImmutablePodGroupPodSpec`: the fields of the spec's
/// shape (what the role hash reads) may not change; a field per error,
/// lists of containers compared element by element (fields in sorted
/// order; Go's order is a set's).
fn immutable_spec_shape(new: &Value, old: &Value, at: &str, errs: &mut Vec<FieldError>) {
    let plain = [
        "affinity",
        "nodeSelector",
        "overhead",
        "priority",
        "resourceClaims",
        "runtimeClassName",
        "tolerations",
        "topologySpreadConstraints",
    ];
    let mut fields: Vec<&str> = plain.to_vec();
    fields.extend(["containers", "initContainers"]);
    let resources = |s: &Value| s.get("resources").filter(|r| !r.is_null()).is_some();
    if resources(new) || resources(old) {
        fields.push("resources");
    }
    fields.sort_unstable();
    for f in fields {
        let path = format!("{at}.{f}");
        match f {
            "containers" | "initContainers" => {
                let (n, o) = (containers_shape(new.get(f)), containers_shape(old.get(f)));
                if n.len() != o.len() {
                    if !same(new.get(f), old.get(f)) {
                        errs.push(FieldError::invalid(
                            path,
                            bad_value(Some(&Value::Array(n))),
                            FIELD_IMMUTABLE,
                        ));
                    }
                    continue;
                }
                for (i, (nc, oc)) in n.iter().zip(&o).enumerate() {
                    let p = format!("{path}[{i}]");
                    if !same(nc.get("ports"), oc.get("ports")) {
                        errs.push(FieldError::invalid(
                            format!("{p}.ports"),
                            bad_value(nc.get("ports")),
                            FIELD_IMMUTABLE,
                        ));
                    }
                    let (nr, or) = (nc.at("/resources/requests"), oc.at("/resources/requests"));
                    if !same(nr, or) {
                        errs.push(FieldError::invalid(
                            format!("{p}.resources.requests"),
                            bad_value(nr),
                            FIELD_IMMUTABLE,
                        ));
                    }
                }
            }
            "resources" => {
                let (nr, or) = (new.at("/resources/requests"), old.at("/resources/requests"));
                if !same(nr, or) {
                    errs.push(FieldError::invalid(path, bad_value(nr), FIELD_IMMUTABLE));
                }
            }
            _ => {
                if !same(new.get(f), old.get(f)) {
                    errs.push(FieldError::invalid(
                        path,
                        bad_value(new.get(f)),
                        FIELD_IMMUTABLE,
                    ));
                }
            }
        }
    }
}

/// Kueue's LeaderWorkerSet update rules while queued: each template's spec
/// shape fixed (the leader template may not come or go), and the size.
fn immutable_groups(
    owner: &PodOwner,
    groups: &ReplicaGroups,
    old: &Value,
    new: &Value,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut templates: Vec<&Pointer> = groups.leader.iter().map(|l| &l.template).collect();
    templates.push(&owner.template);
    for t in templates {
        let (n, o) = (
            t.resolve(new).filter(|v| !v.is_null()),
            t.resolve(old).filter(|v| !v.is_null()),
        );
        match (n, o) {
            (Some(n), Some(o)) => {
                let empty = json!({});
                immutable_spec_shape(
                    n.get("spec").unwrap_or(&empty),
                    o.get("spec").unwrap_or(&empty),
                    &format!("{}.spec", t.field_path()),
                    &mut errs,
                );
            }
            (None, None) => {}
            (n, _) => errs.push(FieldError::invalid(
                t.field_path(),
                bad_value(n),
                FIELD_IMMUTABLE,
            )),
        }
    }
    let (ns, os) = (
        pod_owner::group_size(groups, new),
        pod_owner::group_size(groups, old),
    );
    if ns != os {
        errs.push(FieldError::invalid(
            groups.size.field_path(),
            BadValue::Int(ns),
            FIELD_IMMUTABLE,
        ));
    }
    errs
}

/// `ValidateQueueName` and `ValidateElasticJobAnnotation`.
fn common(policy: &Policy, obj: &JobObject<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    errs.extend(validation::dns_subdomain_label(obj, QUEUE_NAME_LABEL));
    if obj.annotation(ELASTIC_JOB_ANNOTATION) == Some("true") && !policy.elastic_jobs {
        errs.push(FieldError::forbidden(
            annotation_path(ELASTIC_JOB_ANNOTATION),
            format!(
                "elastic job is not supported for {}",
                go_quote(&policy.target.to_string())
            ),
        ));
    }
    errs
}

fn int_at(ptr: &Pointer, obj: &Value, default: i64) -> i64 {
    ptr.resolve(obj).and_then(Value::as_i64).unwrap_or(default)
}

/// The update rules of Kueue's Deployment and StatefulSet webhooks.
fn update(
    policy: &Policy,
    owner: &PodOwner,
    old: &JobObject<'_>,
    new: &JobObject<'_>,
    namespace: &str,
    ctx: &Context<'_>,
) -> Result<Vec<FieldError>, String> {
    let mut errs = common(policy, new);
    if let Some(groups) = &owner.replica_groups {
        // Kueue's LeaderWorkerSet runs its create checks on update too.
        errs.extend(replicas_in_range(policy, groups, new.raw));
        errs.extend(admission_gates::on_create(
            new.annotation(ADMISSION_GATED_BY_ANNOTATION),
        ));
    }
    let (oq, nq) = (
        old.label(QUEUE_NAME_LABEL).unwrap_or(""),
        new.label(QUEUE_NAME_LABEL).unwrap_or(""),
    );
    // "Suspended" while no pod of the old object is ready.
    let suspended = old.suspend_field();
    if (!suspended || nq.is_empty()) && nq != oq {
        errs.push(FieldError::invalid(
            label_path(QUEUE_NAME_LABEL),
            BadValue::Str(nq.to_string()),
            FIELD_IMMUTABLE,
        ));
    }
    // ValidateUpdateForWorkloadPriorityClassName.
    let (op, np) = (
        old.label(PRIORITY_CLASS_LABEL).unwrap_or(""),
        new.label(PRIORITY_CLASS_LABEL).unwrap_or(""),
    );
    if !suspended && op.is_empty() && !np.is_empty() {
        errs.push(FieldError::invalid(
            label_path(PRIORITY_CLASS_LABEL),
            BadValue::Str(np.to_string()),
            "WorkloadPriorityClass cannot be added to a non-suspended workload",
        ));
    } else if !op.is_empty() && np.is_empty() {
        errs.push(FieldError::invalid(
            label_path(PRIORITY_CLASS_LABEL),
            BadValue::Str(String::new()),
            "WorkloadPriorityClass cannot be removed from a workload",
        ));
    }
    errs.extend(admission_gates::on_update(
        old.annotation(ADMISSION_GATED_BY_ANNOTATION),
        new.annotation(ADMISSION_GATED_BY_ANNOTATION),
    ));
    if let Some(groups) = &owner.replica_groups {
        if should_suspend(new, new.queue_name().is_some(), namespace, ctx) {
            errs.extend(immutable_groups(owner, groups, old.raw, new.raw));
        }
    }
    if let Some(group) = &owner.group {
        if should_suspend(new, new.queue_name().is_some(), namespace, ctx) {
            // Kueue's `ValidateImmutablePodGroupPodSpec`: what admission
            // reads of the pods is fixed while queued.
            let empty = json!({});
            let spec_of = |v| {
                owner
                    .template
                    .resolve(v)
                    .and_then(|t| t.get("spec"))
                    .unwrap_or(&empty)
            };
            immutable_spec_shape(
                spec_of(new.raw),
                spec_of(old.raw),
                &format!("{}.spec", owner.template.field_path()),
                &mut errs,
            );
            let (o, n) = (
                int_at(&group.replicas, old.raw, 1),
                int_at(&group.replicas, new.raw, 1),
            );
            let path = group.replicas.field_path();
            // Only a scale down to zero and a scale up from zero.
            if n != 0 && o != 0 && n != o {
                errs.push(FieldError::invalid(
                    path.clone(),
                    BadValue::Int(n),
                    FIELD_IMMUTABLE,
                ));
            }
            if o == 0 && n > 0 {
                if int_at(&group.existing, new.raw, 0) > 0 {
                    errs.push(FieldError::forbidden(
                        path,
                        "scaling down is still in progress",
                    ));
                } else if previous_workload_remains(policy, old.raw, namespace, ctx)? {
                    errs.push(FieldError::forbidden(
                        path,
                        "workload from previous scale-down is still being deleted",
                    ));
                }
            }
        }
    }
    Ok(errs)
}

/// Kueue's check on a scale up from zero: does the Workload of the last
/// scale-down still exist, not on hold (a Workload on hold is kept on
/// purpose and taken up again)? Read under the name with the owner's UID,
/// else Kueue's legacy name without it; both are asked at once. `Err`: a
/// read failed (the review is refused with it).
fn previous_workload_remains(
    policy: &Policy,
    old: &Value,
    namespace: &str,
    ctx: &Context<'_>,
) -> Result<bool, String> {
    let key = |name: String| ObjectKey {
        group: crate::api::kueue::GROUP.into(),
        version: "v1beta2".into(),
        resource: "workloads".into(),
        namespace: Some(namespace.into()),
        name,
    };
    let current = key(pod_owner::workload_name(policy, old));
    let legacy = key(pod_owner::legacy_workload_name(policy, old));
    let found = match ctx.lookups.get(&current) {
        Fetched::Found(w) => w,
        Fetched::Failed(e) => return Err(e.to_string()),
        Fetched::Missing | Fetched::Unknown => match ctx.lookups.get(&legacy) {
            Fetched::Found(w) => w,
            Fetched::Failed(e) => return Err(e.to_string()),
            Fetched::Missing | Fetched::Unknown => return Ok(false),
        },
    };
    let conditions: Vec<Condition> = found
        .at("/status/conditions")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    Ok(!reservation::is_on_hold(&conditions))
}

/// The validating webhook.
pub fn validate(
    policy: &Policy,
    owner: &PodOwner,
    req: &Request<'_>,
    ctx: &Context<'_>,
) -> Decision {
    let errs = match req.operation {
        Operation::Create => {
            let new = match read(policy, req.object, "object") {
                Ok(o) => o,
                Err(d) => return d,
            };
            if other_parent(policy, owner, new.raw).is_some() {
                return Decision::allow();
            }
            let mut errs = common(policy, &new);
            if let Some(groups) = &owner.replica_groups {
                errs.extend(replicas_in_range(policy, groups, new.raw));
            }
            errs.extend(admission_gates::on_create(
                new.annotation(ADMISSION_GATED_BY_ANNOTATION),
            ));
            errs
        }
        Operation::Update => {
            let (new, old) = match (
                read(policy, req.object, "object"),
                read(policy, req.old_object, "oldObject"),
            ) {
                (Ok(n), Ok(o)) => (n, o),
                (Err(d), _) | (_, Err(d)) => return d,
            };
            if other_parent(policy, owner, new.raw).is_some() {
                return Decision::allow();
            }
            match update(policy, owner, &old, &new, req.namespace, ctx) {
                Ok(errs) => errs,
                Err(read) => {
                    return Decision {
                        verdict: Verdict::Deny(read),
                        ..Decision::allow()
                    }
                }
            }
        }
        Operation::Delete | Operation::Connect => return Decision::allow(),
    };
    if errs.is_empty() {
        Decision::allow()
    } else {
        Decision {
            verdict: Verdict::Deny(field::aggregate(&errs)),
            ..Decision::allow()
        }
    }
}

/// The router's family for a kind queued through its pods.
pub struct Owners {
    pub policy: std::sync::Arc<Policy>,
    pub owner: PodOwner,
    pub label: &'static str,
}

impl super::family::Family for Owners {
    fn label(&self) -> &'static str {
        self.label
    }
    fn decide(
        &self,
        review: &super::family::Review<'_>,
        ctx: &Context<'_>,
    ) -> super::family::Decided {
        use super::family::Hook;
        let req = review.core();
        let decision = match review.hook {
            Hook::Mutate => mutate(&self.policy, &self.owner, &req, ctx),
            Hook::Validate => validate(&self.policy, &self.owner, &req, ctx),
        };
        super::family::Decided {
            decision,
            checks: super::family::Checks::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::{ClusterFacts, Lookups, NoCluster, Settings};
    use super::*;
    use crate::{api::selector::LabelSelector, jobs::policy::PolicySet};

    struct Facts {
        default_lq: bool,
    }

    impl ClusterFacts for Facts {
        fn namespace_matches(&self, ns: &str, sel: &LabelSelector) -> bool {
            NoCluster.namespace_matches(ns, sel)
        }
        fn default_local_queue_exists(&self, _: &str) -> bool {
            self.default_lq
        }
        fn default_priority_class_exists(&self) -> bool {
            false
        }
    }

    fn run(
        kind: &str,
        hook: &str,
        obj: Value,
        old: Option<Value>,
        facts: &dyn ClusterFacts,
    ) -> Decision {
        run_in("apps", kind, hook, obj, old, facts)
    }

    /// A review of `group`/v1 `kind` through its embedded policy.
    fn run_in(
        group: &str,
        kind: &str,
        hook: &str,
        obj: Value,
        old: Option<Value>,
        facts: &dyn ClusterFacts,
    ) -> Decision {
        run_read(group, kind, hook, obj, old, facts, &NothingExists)
    }

    /// Every object a rule reads is missing.
    struct NothingExists;

    impl Lookups for NothingExists {
        fn get(&self, _: &ObjectKey) -> Fetched<'_> {
            Fetched::Missing
        }
    }

    /// [`run_in`] with the objects rules read answered by `lookups`.
    fn run_read(
        group: &str,
        kind: &str,
        hook: &str,
        obj: Value,
        old: Option<Value>,
        facts: &dyn ClusterFacts,
        lookups: &dyn Lookups,
    ) -> Decision {
        let policies = PolicySet::embedded().unwrap();
        let policy = policies.find(group, "v1", kind).unwrap().clone();
        let owner = policy.pod_owner.clone().unwrap();
        let s = Settings {
            manage_jobs_without_queue_name: false,
            managed_namespaces: LabelSelector::excluding_namespaces(&[
                "kube-system",
                "batchgate-system",
            ]),
        };
        let ctx = Context {
            settings: &s,
            facts,
            policies: &policies,
            lookups,
        };
        let req = Request {
            operation: if old.is_some() {
                Operation::Update
            } else {
                Operation::Create
            },
            namespace: "default",
            object: Some(&obj),
            old_object: old.as_ref(),
        };
        if hook == "mutate" {
            mutate(&policy, &owner, &req, &ctx)
        } else {
            validate(&policy, &owner, &req, &ctx)
        }
    }

    /// testingdeployment.MakeDeployment("test-pod", "default").
    fn deployment(labels: Value, template_labels: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "test-pod", "namespace": "default", "labels": labels},
               "spec": {"replicas": 1,
                        "selector": {"matchLabels": {"app": "test-pod"}},
                        "template": {"metadata": {"labels": template_labels},
                                     "spec": {"containers": [{"name": "c", "image": "pause"}]}}}})
    }

    fn mutated(obj: &Value, d: &Decision) -> Value {
        crate::jobs::workload::apply(obj, &d.patch).unwrap()
    }

    fn denial(d: &Decision) -> String {
        match &d.verdict {
            Verdict::Deny(m) => m.clone(),
            v => panic!("not denied: {v:?}"),
        }
    }

    const Q: &str = "kueue.x-k8s.io/queue-name";
    const PC: &str = "kueue.x-k8s.io/priority-class";

    /// Kueue v0.19.2 deployment_webhook_test.go TestDefault, every case.
    #[test]
    fn deployment_defaulting_follows_kueue() {
        let d = |l: Value, t: Value| deployment(l, t);
        let marked = |queue: &str, extra: Value| {
            let mut t = json!({"app": "x", "kueue.x-k8s.io/managed": "true", Q: queue});
            for (k, v) in extra.as_object().unwrap() {
                t[k] = v.clone();
            }
            t
        };
        let no = &Facts { default_lq: false };
        let yes = &Facts { default_lq: true };
        // (case, object, facts, want template labels or None for untouched, want object labels)
        type Case<'a> = (&'a str, Value, &'a dyn ClusterFacts, Option<Value>, Value);
        let cases: Vec<Case> = vec![
            (
                "deployment without queue",
                d(json!({}), json!({"app": "x"})),
                no,
                None,
                json!({}),
            ),
            (
                "deployment with queue",
                d(json!({Q: "test-queue"}), json!({"app": "x"})),
                no,
                Some(marked("test-queue", json!({}))),
                json!({Q: "test-queue"}),
            ),
            (
                "deployment with queue and pod template spec queue",
                d(
                    json!({Q: "new-test-queue"}),
                    json!({"app": "x", Q: "test-queue"}),
                ),
                no,
                Some(marked("new-test-queue", json!({}))),
                json!({Q: "new-test-queue"}),
            ),
            (
                "deployment without queue with pod template spec queue",
                d(json!({}), json!({"app": "x", Q: "test-queue"})),
                no,
                None,
                json!({}),
            ),
            (
                "default lq is created, job doesn't have queue label",
                d(json!({}), json!({"app": "x"})),
                yes,
                Some(marked("default", json!({}))),
                json!({Q: "default"}),
            ),
            (
                "default lq is created, job has queue label",
                d(json!({Q: "test-queue"}), json!({"app": "x"})),
                yes,
                Some(marked("test-queue", json!({}))),
                json!({Q: "test-queue"}),
            ),
            (
                "deployment with queue and priority class",
                d(json!({Q: "test-queue", PC: "test"}), json!({"app": "x"})),
                no,
                Some(marked("test-queue", json!({PC: "test"}))),
                json!({Q: "test-queue", PC: "test"}),
            ),
            (
                "deployment with queue, priority class and pod template spec queue, priority class",
                d(
                    json!({Q: "new-test-queue", PC: "new-test"}),
                    json!({"app": "x", Q: "test-queue", PC: "test"}),
                ),
                no,
                Some(marked("new-test-queue", json!({PC: "new-test"}))),
                json!({Q: "new-test-queue", PC: "new-test"}),
            ),
        ];
        for (name, obj, facts, want_template, want_labels) in cases {
            let out = mutated(&obj, &run("Deployment", "mutate", obj.clone(), None, facts));
            assert_eq!(out["metadata"]["labels"], want_labels, "{name}");
            let t = &out["spec"]["template"]["metadata"];
            match want_template {
                None => assert_eq!(t, &obj["spec"]["template"]["metadata"], "{name}"),
                Some(l) => {
                    assert_eq!(t["labels"], l, "{name}");
                    assert_eq!(
                        t["annotations"]["kueue.x-k8s.io/pod-suspending-parent"], "deployment",
                        "{name}"
                    );
                }
            }
            // Lossless: the rest of the spec is as it was.
            assert_eq!(
                out["spec"]["template"]["spec"],
                obj["spec"]["template"]["spec"]
            );
            assert_eq!(out["spec"]["selector"], obj["spec"]["selector"]);
        }
    }

    /// Kueue v0.19.2 deployment_webhook_test.go TestValidateCreate and
    /// TestValidateUpdate (the queue-name and priority-class cases).
    #[test]
    fn deployment_validation_speaks_kueues_words() {
        let no = &NoCluster;
        let ok = |d: Decision| assert_eq!(d.verdict, Verdict::Allow);
        ok(run(
            "Deployment",
            "validate",
            deployment(json!({}), json!({})),
            None,
            no,
        ));
        ok(run(
            "Deployment",
            "validate",
            deployment(json!({Q: "test-queue"}), json!({})),
            None,
            no,
        ));
        assert_eq!(
            denial(&run("Deployment", "validate", deployment(json!({Q: "test/queue"}), json!({})), None, no)),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"test/queue\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        let mut elastic = deployment(json!({}), json!({}));
        elastic["metadata"]["annotations"] = json!({"kueue.x-k8s.io/elastic-job": "true"});
        assert_eq!(
            denial(&run("Deployment", "validate", elastic, None, no)),
            "metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: elastic job is not supported for \"apps/v1, Kind=Deployment\""
        );
        let ready = |labels: Value, n: i64| {
            let mut d = deployment(labels, json!({}));
            d["status"] = json!({"readyReplicas": n});
            d
        };
        let upd = |old: Value, new: Value| run("Deployment", "validate", new, Some(old), no);
        // "without queue (no changes)", "with queue (no changes)", "with queue".
        ok(upd(ready(json!({}), 0), ready(json!({}), 0)));
        ok(upd(
            ready(json!({Q: "test-queue"}), 0),
            ready(json!({Q: "test-queue"}), 0),
        ));
        ok(upd(ready(json!({}), 0), ready(json!({Q: "test-queue"}), 0)));
        // "without queue": the queue name removed.
        assert_eq!(
            denial(&upd(
                ready(json!({Q: "test-queue"}), 0),
                ready(json!({}), 0)
            )),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": field is immutable"
        );
        // "with queue (ready replicas)".
        assert_eq!(
            denial(&upd(ready(json!({Q: "test-queue"}), 1), ready(json!({Q: "test-queue-new"}), 1))),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"test-queue-new\": field is immutable"
        );
        // No pod ready: the queue may move.
        ok(upd(
            ready(json!({Q: "test-queue"}), 0),
            ready(json!({Q: "test-queue-new"}), 0),
        ));
        // Priority class: "update ... when suspended", "set ... when replicas ready", ...
        ok(upd(
            ready(json!({Q: "q", PC: "test"}), 0),
            ready(json!({Q: "q", PC: "new-test"}), 0),
        ));
        assert_eq!(
            denial(&upd(ready(json!({Q: "q"}), 1), ready(json!({Q: "q", PC: "test"}), 1))),
            "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"test\": WorkloadPriorityClass cannot be added to a non-suspended workload"
        );
        ok(upd(
            ready(json!({Q: "q", PC: "test"}), 1),
            ready(json!({Q: "q", PC: "new-test"}), 1),
        ));
        assert_eq!(
            denial(&upd(ready(json!({Q: "q", PC: "test"}), 1), ready(json!({Q: "q"}), 1))),
            "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"\": WorkloadPriorityClass cannot be removed from a workload"
        );
        ok(upd(
            ready(json!({Q: "q"}), 0),
            ready(json!({Q: "q", PC: "test"}), 0),
        ));
        assert_eq!(
            denial(&upd(ready(json!({Q: "q", PC: "test"}), 0), ready(json!({Q: "q"}), 0))),
            "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"\": WorkloadPriorityClass cannot be removed from a workload"
        );
        // "reject adding AdmissionGatedBy annotation after Deployment creation".
        let mut gated = ready(json!({Q: "queue"}), 0);
        gated["metadata"]["annotations"] =
            json!({"kueue.x-k8s.io/admission-gated-by": "example.com/gate"});
        assert_eq!(
            denial(&upd(ready(json!({Q: "queue"}), 0), gated)),
            "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: cannot add admission gate after creation"
        );
    }

    fn sts(labels: Value, replicas: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": "test-sts", "namespace": "default", "labels": labels},
               "spec": {"replicas": replicas,
                        "selector": {"matchLabels": {"app": "test-sts"}},
                        "template": {"metadata": {"labels": {"app": "test-sts"}},
                                     "spec": {"containers": [{"name": "c", "image": "pause"}]}}}})
    }

    /// Kueue v0.19.2 statefulset_webhook_test.go TestDefault: only the
    /// parent annotation on the template (the pods are marked into the
    /// group by the reconciler); a StatefulSet of another integration (a
    /// LeaderWorkerSet's) is left alone.
    #[test]
    fn statefulset_defaulting_follows_kueue() {
        let no = &NoCluster;
        let s = sts(json!({Q: "test-queue"}), 3);
        let out = mutated(&s, &run("StatefulSet", "mutate", s.clone(), None, no));
        assert_eq!(
            out["spec"]["template"]["metadata"],
            json!({"labels": {"app": "test-sts"},
                   "annotations": {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}})
        );
        let bare = sts(json!({}), 3);
        assert!(run("StatefulSet", "mutate", bare, None, no)
            .patch
            .is_empty());
        let mut lws = sts(json!({Q: "test-queue"}), 3);
        lws["spec"]["template"]["metadata"]["annotations"] =
            json!({"kueue.x-k8s.io/pod-suspending-parent": "leaderworkerset"});
        assert!(run("StatefulSet", "mutate", lws.clone(), None, no)
            .patch
            .is_empty());
        let mut bad = lws.clone();
        bad["metadata"]["labels"][Q] = json!("bad/queue");
        assert_eq!(
            run("StatefulSet", "validate", bad, None, no).verdict,
            Verdict::Allow
        );
    }

    /// Kueue v0.19.2 statefulset_webhook_test.go TestValidateUpdate: the
    /// replicas change only to or from zero while queued.
    #[test]
    fn statefulset_replicas_change_only_through_zero() {
        let no = &NoCluster;
        let upd = |old: Value, new: Value| run("StatefulSet", "validate", new, Some(old), no);
        let q = json!({Q: "test-queue"});
        assert_eq!(
            denial(&upd(sts(q.clone(), 3), sts(q.clone(), 4))),
            "spec.replicas: Invalid value: 4: field is immutable"
        );
        assert_eq!(
            upd(sts(q.clone(), 3), sts(q.clone(), 0)).verdict,
            Verdict::Allow
        );
        assert_eq!(
            upd(sts(q.clone(), 0), sts(q.clone(), 3)).verdict,
            Verdict::Allow
        );
        let mut terminating = sts(q.clone(), 3);
        terminating["status"] = json!({"replicas": 1});
        assert_eq!(
            denial(&upd(sts(q.clone(), 0), terminating)),
            "spec.replicas: Forbidden: scaling down is still in progress"
        );
        // Not queued: free.
        assert_eq!(
            upd(sts(json!({}), 3), sts(json!({}), 4)).verdict,
            Verdict::Allow
        );
    }

    /// Kueue v0.19.2 statefulset_webhook_test.go TestValidateUpdate "scale
    /// up from zero blocked by existing workload" and "scale up from zero
    /// allowed when workload does not exist"; beyond the table, Kueue's
    /// other branches: a Workload on hold allows, the legacy name (no
    /// UID) is read when the current one is missing, a failed read refuses
    /// with its error, and both names are asked in one first pass.
    #[test]
    fn a_scale_up_from_zero_waits_for_the_previous_workload_to_go() {
        let q = json!({Q: "test-queue"});
        let with_uid = |replicas| {
            let mut s = sts(q.clone(), replicas);
            s["metadata"]["uid"] = json!("test-uid");
            s
        };
        let key = |name: &str| ObjectKey {
            group: "kueue.x-k8s.io".into(),
            version: "v1beta2".into(),
            resource: "workloads".into(),
            namespace: Some("default".into()),
            name: name.into(),
        };
        let current = key(&crate::jobs::workload::name_for(
            "StatefulSet",
            "apps",
            "test-sts",
            "test-uid",
        ));
        let legacy = key(&crate::jobs::workload::name_for(
            "StatefulSet",
            "apps",
            "test-sts",
            "",
        ));
        let scale_up = |lookups: &dyn Lookups| {
            run_read(
                "apps",
                "StatefulSet",
                "validate",
                with_uid(3),
                Some(with_uid(0)),
                &NoCluster,
                lookups,
            )
        };
        let read = |entries: Vec<(&ObjectKey, Result<Option<Value>, String>)>| {
            crate::admission::Read(entries.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        };
        let workload = json!({"metadata": {"name": current.name}});
        let blocked =
            "spec.replicas: Forbidden: workload from previous scale-down is still being deleted";
        assert_eq!(
            denial(&scale_up(&read(vec![(
                &current,
                Ok(Some(workload.clone()))
            )]))),
            blocked
        );
        assert_eq!(
            scale_up(&read(vec![(&current, Ok(None)), (&legacy, Ok(None))])).verdict,
            Verdict::Allow
        );
        let on_hold = json!({"metadata": {"name": current.name}, "status": {"conditions": [
            {"type": "QuotaReserved", "status": "False", "reason": "OnHold", "message": "",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
        assert_eq!(
            scale_up(&read(vec![(&current, Ok(Some(on_hold)))])).verdict,
            Verdict::Allow
        );
        assert_eq!(
            denial(&scale_up(&read(vec![
                (&current, Ok(None)),
                (&legacy, Ok(Some(workload.clone())))
            ]))),
            blocked
        );
        assert_eq!(
            denial(&scale_up(&read(vec![(
                &current,
                Err("etcd timeout".into())
            )]))),
            "etcd timeout"
        );
        let asked = crate::admission::Asked::default();
        scale_up(&asked);
        assert_eq!(asked.keys(), vec![current.clone(), legacy.clone()]);
        // No read for anything else: not queued, pods still there, other sizes.
        let asked = crate::admission::Asked::default();
        for (old, new) in [
            (sts(json!({}), 0), sts(json!({}), 3)),
            (with_uid(3), with_uid(0)),
            (with_uid(0), with_uid(0)),
        ] {
            run_read(
                "apps",
                "StatefulSet",
                "validate",
                new,
                Some(old),
                &NoCluster,
                &asked,
            );
        }
        let mut terminating = with_uid(3);
        terminating["status"] = json!({"replicas": 1});
        run_read(
            "apps",
            "StatefulSet",
            "validate",
            terminating,
            Some(with_uid(0)),
            &NoCluster,
            &asked,
        );
        assert!(asked.is_empty());
    }

    /// Kueue v0.19.2 statefulset_webhook_test.go TestValidateUpdate
    /// "attempt to change resources in container" and "attempt to change
    /// resources in init container" (`ValidateImmutablePodGroupPodSpec`):
    /// while queued, a request the pods are admitted by is fixed; a field
    /// admission does not read (the image) may change.
    #[test]
    fn a_queued_statefulsets_pod_requests_are_fixed() {
        let no = &NoCluster;
        let upd = |old: Value, new: Value| run("StatefulSet", "validate", new, Some(old), no);
        let q = json!({Q: "test-queue"});
        let with = |c: Value, ic: Value| {
            let mut s = sts(q.clone(), 1);
            s["spec"]["template"]["spec"] = json!({
                "containers": [{"name": "c", "image": "pause:0.1.1", "resources": c}],
                "initContainers": [{"name": "ic", "image": "pause:0.1.1", "resources": ic}]});
            s
        };
        let none = json!({"requests": {}});
        let cpu = json!({"requests": {"cpu": "1"}});
        assert_eq!(
            denial(&upd(
                with(none.clone(), none.clone()),
                with(cpu.clone(), none.clone())
            )),
            r#"spec.template.spec.containers[0].resources.requests: Invalid value: {"cpu":"1"}: field is immutable"#
        );
        assert_eq!(
            denial(&upd(
                with(none.clone(), none.clone()),
                with(none.clone(), cpu.clone())
            )),
            r#"spec.template.spec.initContainers[0].resources.requests: Invalid value: {"cpu":"1"}: field is immutable"#
        );
        let mut image = with(none.clone(), none.clone());
        image["spec"]["template"]["spec"]["containers"][0]["image"] = json!("pause:0.2");
        assert_eq!(
            upd(with(none.clone(), none.clone()), image).verdict,
            Verdict::Allow
        );
        // Not queued: free.
        let mut free = with(cpu, none.clone());
        free["metadata"]["labels"] = json!({});
        let mut was = with(none.clone(), none);
        was["metadata"]["labels"] = json!({});
        assert_eq!(upd(was, free).verdict, Verdict::Allow);
    }

    // ---- LeaderWorkerSet (Kueue v0.19.2 leaderworkerset_webhook_test.go) ----

    const LWS_PARENT: &str = "leaderworkerset.x-k8s.io/leaderworkerset";
    const SERVING: &str = "kueue.x-k8s.io/pod-group-serving";
    const OFFSET: &str = "kueue.x-k8s.io/pod-index-offset";
    const PARENT: &str = "kueue.x-k8s.io/pod-suspending-parent";

    fn run_lws(obj: Value, old: Option<Value>, hook: &str, facts: &dyn ClusterFacts) -> Decision {
        run_in(
            "leaderworkerset.x-k8s.io",
            "LeaderWorkerSet",
            hook,
            obj,
            old,
            facts,
        )
    }

    /// testingleaderworkerset.MakeLeaderWorkerSet("test-lws", ns): one
    /// replica of size 1, a worker template with one container, no leader.
    fn lws() -> Value {
        json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
               "metadata": {"name": "test-lws", "namespace": "default"},
               "spec": {"replicas": 1, "startupPolicy": "LeaderCreated",
                        "leaderWorkerTemplate": {
                            "size": 1,
                            "workerTemplate": {"spec": {
                                "containers": [{"name": "c", "image": "pause", "resources": {"requests": {}}}],
                                "nodeSelector": {}}}}}})
    }

    /// Builder steps of the upstream wrapper.
    fn with(mut l: Value, f: impl FnOnce(&mut Value)) -> Value {
        f(&mut l);
        l
    }
    fn leader(l: &mut Value) {
        l["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = json!({});
    }
    fn queue(l: &mut Value, q: &str) {
        l["metadata"]["labels"][Q] = json!(q);
    }

    /// Kueue v0.19.2 leaderworkerset_webhook_test.go TestDefault, every case.
    #[test]
    fn lws_defaulting_follows_kueue() {
        let yes = &Facts { default_lq: true };
        let no = &Facts { default_lq: false };
        // (case, object, facts, want object labels, want leader (labels,
        // annotations) or None, want worker (labels, annotations))
        type Marks = (Value, Value);
        type Case<'a> = (
            &'a str,
            Value,
            &'a dyn ClusterFacts,
            Value,
            Option<Marks>,
            Marks,
        );
        let marked = |labels: Value, extra: Value| -> Marks {
            let mut a = json!({PARENT: LWS_PARENT, SERVING: "true"});
            for (k, v) in extra.as_object().unwrap() {
                a[k] = v.clone();
            }
            (labels, a)
        };
        let cases: Vec<Case> = vec![
            (
                "LeaderWorkerSet with WorkloadPriorityClass",
                with(lws(), |l| {
                    leader(l);
                    l["metadata"]["labels"] = json!({PC: "high-priority"});
                }),
                yes,
                json!({Q: "default", PC: "high-priority"}),
                Some(marked(
                    json!({Q: "default", PC: "high-priority"}),
                    json!({}),
                )),
                marked(
                    json!({Q: "default", PC: "high-priority"}),
                    json!({OFFSET: "1"}),
                ),
            ),
            (
                "default lq is created, job doesn't have queue label",
                with(lws(), leader),
                yes,
                json!({Q: "default"}),
                Some(marked(json!({Q: "default"}), json!({}))),
                marked(json!({Q: "default"}), json!({OFFSET: "1"})),
            ),
            (
                "default lq is created, job has queue label",
                with(lws(), |l| {
                    leader(l);
                    queue(l, "test-queue");
                }),
                yes,
                json!({Q: "test-queue"}),
                Some(marked(json!({Q: "test-queue"}), json!({}))),
                marked(json!({Q: "test-queue"}), json!({OFFSET: "1"})),
            ),
            (
                "worker-only LWS (no leader template), no offset annotation",
                lws(),
                yes,
                json!({Q: "default"}),
                None,
                marked(json!({Q: "default"}), json!({})),
            ),
            (
                "queue-name on templates overridden by top-level queue",
                with(lws(), |l| {
                    leader(l);
                    queue(l, "test-queue");
                    l["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"] =
                        json!({"labels": {Q: "user-queue"}});
                    l["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] =
                        json!({"labels": {Q: "user-queue"}});
                }),
                yes,
                json!({Q: "test-queue"}),
                Some(marked(json!({Q: "test-queue"}), json!({}))),
                marked(json!({Q: "test-queue"}), json!({OFFSET: "1"})),
            ),
            (
                "queue-name on worker template overridden when no leader template",
                with(lws(), |l| {
                    queue(l, "test-queue");
                    l["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] =
                        json!({"labels": {Q: "user-queue"}});
                }),
                yes,
                json!({Q: "test-queue"}),
                None,
                marked(json!({Q: "test-queue"}), json!({})),
            ),
            (
                "LWS with PodSetGroupName set, no offset annotation",
                with(lws(), |l| {
                    leader(l);
                    l["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] =
                        json!({"annotations": {"kueue.x-k8s.io/podset-group-name": "test-group"}});
                }),
                yes,
                json!({Q: "default"}),
                Some(marked(json!({Q: "default"}), json!({}))),
                marked(
                    json!({Q: "default"}),
                    json!({"kueue.x-k8s.io/podset-group-name": "test-group"}),
                ),
            ),
        ];
        for (name, obj, facts, want_labels, want_leader, want_worker) in cases {
            let out = mutated(&obj, &run_lws(obj.clone(), None, "mutate", facts));
            assert_eq!(out["metadata"]["labels"], want_labels, "{name}");
            let t = &out["spec"]["leaderWorkerTemplate"];
            match want_leader {
                None => assert!(t.get("leaderTemplate").is_none(), "{name}"),
                Some((l, a)) => {
                    assert_eq!(t["leaderTemplate"]["metadata"]["labels"], l, "{name}");
                    assert_eq!(t["leaderTemplate"]["metadata"]["annotations"], a, "{name}");
                }
            }
            assert_eq!(
                t["workerTemplate"]["metadata"]["labels"], want_worker.0,
                "{name}"
            );
            assert_eq!(
                t["workerTemplate"]["metadata"]["annotations"], want_worker.1,
                "{name}"
            );
            // Lossless: the specs are as they were.
            assert_eq!(
                t["workerTemplate"]["spec"],
                obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"],
                "{name}"
            );
        }
        // "default lq isn't created, job doesn't have queue label": untouched.
        let bare = with(lws(), leader);
        assert!(run_lws(bare, None, "mutate", no).patch.is_empty());
    }

    /// Kueue v0.19.2 leaderworkerset_webhook_test.go TestValidateCreate
    /// (the cases of its default gates; the topology cases are not ported:
    /// batchgate does not check topology requests on LeaderWorkerSets).
    #[test]
    fn lws_create_validation_speaks_kueues_words() {
        let no = &NoCluster;
        let v = |l: Value| run_lws(l, None, "validate", no);
        // "without queue", "valid queue name".
        assert_eq!(v(with(lws(), leader)).verdict, Verdict::Allow);
        assert_eq!(
            v(with(lws(), |l| {
                leader(l);
                queue(l, "test-queue")
            }))
            .verdict,
            Verdict::Allow
        );
        // "negative replicas", "replicas above maximum".
        assert_eq!(
            denial(&v(with(lws(), |l| {
                leader(l);
                queue(l, "test-queue");
                l["spec"]["replicas"] = json!(-1);
            }))),
            "spec.replicas: Invalid value: -1: invalid LeaderWorkerSet replicas: must be >= 0, got -1"
        );
        assert_eq!(
            denial(&v(with(lws(), |l| {
                leader(l);
                queue(l, "test-queue");
                l["spec"]["replicas"] = json!(1_000_001);
            }))),
            "spec.replicas: Invalid value: 1000001: invalid LeaderWorkerSet replicas: must be <= 1000000, got 1000001"
        );
        // "invalid queue name".
        assert!(denial(&v(with(lws(), |l| {
            leader(l);
            queue(l, "test/queue")
        })))
        .starts_with("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"test/queue\": a lowercase RFC 1123 subdomain"));
        // "AdmissionGatedBy Annotation - single gate", "... - invalid format".
        let gated = |g: &str| {
            with(lws(), |l| {
                leader(l);
                queue(l, "test-queue");
                l["metadata"]["annotations"] = json!({"kueue.x-k8s.io/admission-gated-by": g});
            })
        };
        assert_eq!(v(gated("example.com/my-gate")).verdict, Verdict::Allow);
        assert!(denial(&v(gated("invalid-gate-name")))
            .starts_with("metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: \"invalid-gate-name\""));
        // "elastic job annotation is rejected".
        assert_eq!(
            denial(&v(with(lws(), |l| {
                leader(l);
                l["metadata"]["annotations"] = json!({"kueue.x-k8s.io/elastic-job": "true"});
            }))),
            "metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: elastic job is not supported for \"leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet\""
        );
    }

    /// Kueue v0.19.2 leaderworkerset_webhook_test.go TestValidateUpdate
    /// (its default gates: LWSImmutableGroupSize and AdmissionGatedBy on).
    #[test]
    fn lws_update_validation_speaks_kueues_words() {
        let no = &NoCluster;
        let upd = |old: Value, new: Value| run_lws(new, Some(old), "validate", no);
        let ok = |d: Decision| assert_eq!(d.verdict, Verdict::Allow);
        let q = |name: &str| {
            let name = name.to_string();
            with(lws(), move |l| {
                leader(l);
                queue(l, &name);
            })
        };
        // "no changes", "change queue name when suspended".
        ok(upd(q("test-queue"), q("test-queue")));
        ok(upd(q("test-queue"), q("new-test-queue")));
        // "set invalid replicas", "set replicas above maximum".
        let replicas = |n: i64| with(q("test-queue"), |l| l["spec"]["replicas"] = json!(n));
        assert_eq!(
            denial(&upd(q("test-queue"), replicas(-1))),
            "spec.replicas: Invalid value: -1: invalid LeaderWorkerSet replicas: must be >= 0, got -1"
        );
        assert!(denial(&upd(q("test-queue"), replicas(1_000_001)))
            .starts_with("spec.replicas: Invalid value: 1000001"));
        // "change size when managed", "same size when managed", "change
        // size when unmanaged".
        let size =
            |l: Value, n: i64| with(l, |l| l["spec"]["leaderWorkerTemplate"]["size"] = json!(n));
        assert_eq!(
            denial(&upd(size(q("test-queue"), 2), size(q("test-queue"), 10))),
            "spec.leaderWorkerTemplate.size: Invalid value: 10: field is immutable"
        );
        ok(upd(size(q("test-queue"), 2), size(q("test-queue"), 2)));
        ok(upd(
            size(with(lws(), leader), 2),
            size(with(lws(), leader), 10),
        ));
        // "change queue name when replicas ready", "delete queue name".
        let ready = with(q("test-queue"), |l| {
            l["status"] = json!({"readyReplicas": 1})
        });
        assert_eq!(
            denial(&upd(ready, q("new-test-queue"))),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"new-test-queue\": field is immutable"
        );
        assert_eq!(
            denial(&upd(q("test-queue"), with(lws(), leader))),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": field is immutable"
        );
        // The priority-class cases.
        let pc = |p: Option<&str>, ready: i64| {
            with(q("test-queue"), |l| {
                if let Some(p) = p {
                    l["metadata"]["labels"][PC] = json!(p);
                }
                l["status"] = json!({"readyReplicas": ready});
            })
        };
        ok(upd(pc(Some("test"), 0), pc(Some("new-test"), 0)));
        assert!(denial(&upd(pc(None, 1), pc(Some("test"), 1)))
            .ends_with("WorkloadPriorityClass cannot be added to a non-suspended workload"));
        ok(upd(pc(Some("test"), 1), pc(Some("new-test"), 1)));
        assert!(denial(&upd(pc(Some("test"), 1), pc(None, 1)))
            .ends_with("WorkloadPriorityClass cannot be removed from a workload"));
        ok(upd(pc(None, 0), pc(Some("test"), 0)));
        assert!(denial(&upd(pc(Some("test"), 0), pc(None, 0)))
            .ends_with("WorkloadPriorityClass cannot be removed from a workload"));
        // "change image": not part of the shape.
        let spec = |image: &str, cpu: Option<&str>, init_cpu: Option<&str>| {
            let req = |c: Option<&str>| c.map_or(json!({}), |c| json!({"cpu": c}));
            json!({"spec": {
                "containers": [{"name": "c", "image": image, "resources": {"requests": req(cpu)}}],
                "initContainers": [{"name": "ic", "image": image, "resources": {"requests": req(init_cpu)}}]}})
        };
        let templated = |leader_t: Value, worker_t: Value| {
            with(q("test-queue"), |l| {
                l["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = leader_t;
                l["spec"]["leaderWorkerTemplate"]["workerTemplate"] = worker_t;
            })
        };
        ok(upd(
            templated(spec("pause", None, None), spec("pause:0.1.0", None, None)),
            templated(spec("pause:0.1.1", None, None), spec("pause", None, None)),
        ));
        // "change resources in container", "... in init containers".
        assert_eq!(
            denial(&upd(
                templated(spec("p", None, None), spec("p", None, None)),
                templated(spec("p", Some("1"), None), spec("p", Some("1"), None)),
            )),
            "[spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].resources.requests: Invalid value: {\"cpu\":\"1\"}: field is immutable, spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.requests: Invalid value: {\"cpu\":\"1\"}: field is immutable]"
        );
        assert_eq!(
            denial(&upd(
                templated(spec("p", None, None), spec("p", None, None)),
                templated(spec("p", None, Some("1")), spec("p", None, Some("1"))),
            )),
            "[spec.leaderWorkerTemplate.leaderTemplate.spec.initContainers[0].resources.requests: Invalid value: {\"cpu\":\"1\"}: field is immutable, spec.leaderWorkerTemplate.workerTemplate.spec.initContainers[0].resources.requests: Invalid value: {\"cpu\":\"1\"}: field is immutable]"
        );
        // The same quantity written otherwise is no change (semantic equality).
        ok(upd(
            templated(spec("p", Some("1"), None), spec("p", None, None)),
            templated(spec("p", Some("1000m"), None), spec("p", None, None)),
        ));
        // "AdmissionGatedBy Annotation - reject adding gates after creation",
        // "... - allow removing single gate".
        let gated = |g: Option<&str>| {
            with(q("test-queue"), |l| {
                if let Some(g) = g {
                    l["metadata"]["annotations"] = json!({"kueue.x-k8s.io/admission-gated-by": g});
                }
            })
        };
        assert_eq!(
            denial(&upd(gated(None), gated(Some("example.com/my-gate")))),
            "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: cannot add admission gate after creation"
        );
        ok(upd(gated(Some("example.com/my-gate")), gated(None)));
    }
}
