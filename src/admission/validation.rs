//! Invariant validation on create and update, with Kueue's rules, field
//! paths and wording (`pkg/controller/jobframework/validation.go` and the
//! batch/v1 Job webhook).

use super::{
    admission_gates,
    field::{annotation_path, label_path, BadValue, FieldError},
    object::{DecodeError, JobObject},
    topology, Context, Fetched, ObjectKey,
};
use crate::jobs::policy::{Invariant, Policy, UpdateRules, MAX_POD_SETS};
use crate::jobs::reference::ReferenceError;
use crate::vocabulary::pointer::At;
use crate::vocabulary::{
    go::{go_atoi, go_parse_bool, go_quote},
    keys::{
        ADMISSION_GATED_BY_ANNOTATION, ELASTIC_JOB_ANNOTATION, ELASTIC_JOB_SCHEDULING_GATE,
        JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION, JOB_MIN_PARALLELISM_ANNOTATION,
        MAX_EXEC_TIME_LABEL, PREBUILT_WORKLOAD_LABEL, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL,
    },
};
use serde_json::Value;

/// Kueue's MultiKueue controller name (`spec.managedBy`).
const MULTIKUEUE_CONTROLLER: &str = "kueue.x-k8s.io/multikueue";

pub const FIELD_IMMUTABLE: &str = "field is immutable";

type Errors = Result<Vec<FieldError>, DecodeError>;

pub fn on_create(policy: &Policy, job: &JobObject<'_>, ctx: &Context<'_>) -> Errors {
    let mut errs = ray_create(policy, job, ctx);
    errs.extend(spark_create(policy, job, ctx));
    errs.extend(generic_create(policy, job));
    if policy.has(Invariant::JobPartialAdmission) {
        errs.extend(min_parallelism_create(policy, job)?);
    }
    if policy.has(Invariant::JobCompletionsEqualParallelism) {
        errs.extend(completions_equal_parallelism_create(job)?);
    }
    errs.extend(topology::validate(policy, job)?);
    Ok(errs)
}

/// Kueue's TrainJob webhook reads the job's runtime on every create and
/// update: `Err` refuses with Kueue's words alone when it cannot be
/// followed (`unsupported runtime: …`, `runtime '…' not found`, whatever
/// else was wrong); else the topology errors of the pod sets it builds.
/// Nothing for kinds without a `runtimeRef`, and nothing while the runtime
/// is not read yet (the router reads it and decides again).
pub fn runtime(
    policy: &Policy,
    job: &JobObject<'_>,
    namespace: &str,
    ctx: &Context<'_>,
) -> Result<Vec<FieldError>, String> {
    let Some(rule) = &policy.runtime_ref else {
        return Ok(Vec::new());
    };
    let reference = match rule.reference(job.raw) {
        Ok(r) => r,
        // Kueue reads an empty name, and cannot.
        Err(ReferenceError::NoName { .. }) => {
            return Err(ReferenceError::NotFound(String::new()).to_string())
        }
        Err(e) => return Err(e.to_string()),
    };
    let key = ObjectKey {
        group: rule.group.clone(),
        version: rule.version.clone(),
        resource: reference.kind.resource.clone(),
        namespace: reference.kind.namespaced.then(|| namespace.to_string()),
        name: reference.name.clone(),
    };
    match ctx.lookups.get(&key) {
        Fetched::Found(runtime) => {
            topology::validate_runtime_view(policy, &rule.view(job.raw, runtime))
                .map_err(|e| format!("cannot decode {}: {e}", policy.target))
        }
        // Kueue's words whatever the read's error.
        Fetched::Missing | Fetched::Failed(_) => {
            Err(ReferenceError::NotFound(reference.name).to_string())
        }
        Fetched::Unknown => Ok(Vec::new()),
    }
}

/// Kueue's RayJob, RayCluster and RayService rules, checked for queued objects (with a
/// queue name, or every object under `manageJobsWithoutQueueName`) on create
/// and again on every update.
fn ray_create(policy: &Policy, job: &JobObject<'_>, ctx: &Context<'_>) -> Vec<FieldError> {
    let managed = ctx.settings.manage_jobs_without_queue_name || job.queue_name().is_some();
    let mut errs = Vec::new();
    if !managed {
        return errs;
    }
    let cluster_spec = if policy.has(Invariant::RayJob) {
        let selector = job.raw.at("/spec/clusterSelector");
        let has_selector = selector
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty());
        let has_cluster = !matches!(job.raw.at("/spec/rayClusterSpec"), None | Some(Value::Null));
        match (has_selector, has_cluster) {
            (true, true) => {
                errs.push(FieldError::invalid(
                    "spec.clusterSelector",
                    BadValue::Raw(go_string_map(selector)),
                    "a kueue managed job should not use an existing cluster",
                ));
                return errs;
            }
            // Runs on an existing cluster: not queued (the policy skips it).
            (true, false) => return errs,
            (false, false) => {
                errs.push(FieldError::required(
                    "spec.rayClusterSpec",
                    "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector",
                ));
                return errs;
            }
            (false, true) => {}
        }
        if job.raw.at("/spec/shutdownAfterJobFinishes") != Some(&Value::Bool(true)) {
            errs.push(FieldError::invalid(
                "spec.shutdownAfterJobFinishes",
                BadValue::Bool(false),
                "a kueue managed job should delete the cluster after finishing",
            ));
        }
        "/spec/rayClusterSpec"
    } else if policy.has(Invariant::RayCluster) {
        "/spec"
    } else if policy.has(Invariant::RayService) {
        "/spec/rayClusterConfig"
    } else {
        return errs;
    };
    let path = |rel: &str| {
        // Kueue names a RayService's cluster by its Go field.
        let base = match cluster_spec {
            "/spec/rayClusterConfig" => "spec.rayClusterSpec".to_string(),
            other => other.trim_start_matches('/').replace('/', "."),
        };
        format!("{base}.{rel}")
    };
    let autoscaling = job
        .raw
        .at(&format!("{cluster_spec}/enableInTreeAutoscaling"))
        == Some(&Value::Bool(true));
    if elastic(job) {
        // An elastic job autoscales through workload slices. Kueue's
        // RayCluster webhook (`validateElasticJob`) wants the elastic-job
        // scheduling gate on every template (its defaulter adds it), and
        // MultiKueue cannot autoscale one yet.
        if policy.has(Invariant::RayCluster) {
            let templates = job
                .raw
                .at(&format!("{cluster_spec}/workerGroupSpecs"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, w)| {
                    (
                        format!("workerGroupSpecs[{i}].template.spec.schedulingGates"),
                        w.at("/template/spec/schedulingGates"),
                    )
                })
                .chain(std::iter::once((
                    "headGroupSpec.template.spec.schedulingGates".to_string(),
                    job.raw.at(&format!(
                        "{cluster_spec}/headGroupSpec/template/spec/schedulingGates"
                    )),
                )));
            for (at, gates) in templates {
                let list = gates.and_then(Value::as_array);
                let gated = list.is_some_and(|l| {
                    l.iter().any(|g| {
                        g.get("name").and_then(Value::as_str) == Some(ELASTIC_JOB_SCHEDULING_GATE)
                    })
                });
                if !gated {
                    errs.push(FieldError::invalid(
                        path(&at),
                        BadValue::Raw(go_scheduling_gates(list)),
                        "an elastic job must have the ElasticJobSchedulingGate",
                    ));
                }
            }
            if autoscaling
                && job
                    .raw
                    .at(&format!("{cluster_spec}/managedBy"))
                    .and_then(Value::as_str)
                    == Some(MULTIKUEUE_CONTROLLER)
            {
                errs.push(FieldError::forbidden(
                    path("enableInTreeAutoscaling"),
                    "in-tree autoscaling is not supported for a MultiKueue-managed elastic RayCluster",
                ));
            }
        }
    } else if autoscaling {
        let detail = if policy.has(Invariant::RayCluster) {
            format!(
                "a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the ElasticJobsViaWorkloadSlices feature gate and set the {}: {} annotation",
                go_quote(ELASTIC_JOB_ANNOTATION),
                go_quote("true")
            )
        } else {
            "a kueue managed job should only use autoscaling when workload slicing is enabled"
                .to_string()
        };
        errs.push(FieldError::invalid(
            path("enableInTreeAutoscaling"),
            BadValue::Bool(true),
            detail,
        ));
    }
    let workers = job
        .raw
        .at(&format!("{cluster_spec}/workerGroupSpecs"))
        .and_then(Value::as_array);
    let worker_count = workers.map_or(0, Vec::len);
    if worker_count + 1 > MAX_POD_SETS {
        errs.push(FieldError::too_many(
            path("workerGroupSpecs"),
            worker_count + 1,
            MAX_POD_SETS,
        ));
    }
    for (i, w) in workers.into_iter().flatten().enumerate() {
        if w.get("groupName").and_then(Value::as_str) == Some("head") {
            errs.push(FieldError::forbidden(
                format!("{}[{i}].groupName", path("workerGroupSpecs")),
                "\"head\" is reserved for the head group",
            ));
        }
    }
    errs
}

/// Kueue's SparkApplication rules for queued objects (with a queue name,
/// or every object under `manageJobsWithoutQueueName`).
fn spark_create(policy: &Policy, job: &JobObject<'_>, ctx: &Context<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !policy.has(Invariant::SparkApplication)
        || !(ctx.settings.manage_jobs_without_queue_name || job.queue_name().is_some())
    {
        return errs;
    }
    let mode = job
        .raw
        .at("/spec/mode")
        .and_then(Value::as_str)
        .unwrap_or("");
    if mode != "cluster" {
        errs.push(FieldError::invalid(
            "spec.mode",
            BadValue::Str(mode.to_string()),
            "only Cluster mode is supported for a kueue managed job",
        ));
    }
    // An elastic job may allocate dynamically (ElasticJobsViaWorkloadSlices
    // is on by default); its annotation is refused for this kind anyway.
    if !elastic(job) && job.raw.at("/spec/dynamicAllocation/enabled") == Some(&Value::Bool(true)) {
        errs.push(FieldError::invalid(
            "spec.dynamicAllocation.enabled",
            BadValue::Bool(true),
            "a kueue managed job can use dynamicAllocation only when the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job",
        ));
    }
    errs
}

/// Go's `%#v` of a `map[string]string` (keys sorted, as fmt prints maps).
fn go_string_map(v: Option<&Value>) -> String {
    let mut out = String::from("map[string]string{");
    if let Some(m) = v.and_then(Value::as_object) {
        let mut entries: Vec<_> = m.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        for (i, (k, v)) in entries.into_iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let v = v.as_str().map_or_else(|| v.to_string(), go_quote);
            out.push_str(&format!("{}:{v}", go_quote(k)));
        }
    }
    out.push('}');
    out
}

pub fn on_update(
    policy: &Policy,
    old: &JobObject<'_>,
    new: &JobObject<'_>,
    namespace: &str,
    ctx: &Context<'_>,
) -> Errors {
    // Kueue's Ray webhooks run no update rule for an object it does not
    // manage before or after the update (gate ValidateRayAndSparkJobUpdates).
    if (policy.has(Invariant::RayJob)
        || policy.has(Invariant::RayCluster)
        || policy.has(Invariant::RayService)
        || policy.has(Invariant::SparkApplication))
        && !ctx.settings.manage_jobs_without_queue_name
        && new.queue_name().is_none()
        && old.queue_name().is_none()
    {
        return Ok(Vec::new());
    }
    let mut errs = Vec::new();
    match policy.update_rules {
        // The Job webhook: the create rules on the new object, then the
        // update rules, then the topology annotations.
        UpdateRules::CreateFirst => {
            errs.extend(ray_create(policy, new, ctx));
            errs.extend(spark_create(policy, new, ctx));
            errs.extend(generic_create(policy, new));
            if policy.has(Invariant::JobPartialAdmission)
                && new.annotation(JOB_MIN_PARALLELISM_ANNOTATION)
                    != old.annotation(JOB_MIN_PARALLELISM_ANNOTATION)
            {
                errs.extend(min_parallelism_create(policy, new)?);
            }
            if policy.has(Invariant::JobCompletionsEqualParallelism) {
                errs.extend(completions_equal_parallelism_create(new)?);
            }
            errs.extend(generic_update(policy, old, new, namespace, ctx));
            errs.extend(job_update(policy, old, new)?);
            errs.extend(topology::validate(policy, new)?);
        }
        // JobSet, MPIJob, Ray: the update rules, then the whole create check.
        UpdateRules::UpdateFirst => {
            errs.extend(generic_update(policy, old, new, namespace, ctx));
            errs.extend(job_update(policy, old, new)?);
            errs.extend(on_create(policy, new, ctx)?);
        }
        // Kueue's generic webhook (the Kubeflow kinds, AppWrapper): the
        // update rules and the kind's own (topology) check, not the create
        // rules again.
        UpdateRules::UpdateOnly => {
            errs.extend(generic_update(policy, old, new, namespace, ctx));
            errs.extend(job_update(policy, old, new)?);
            errs.extend(topology::validate(policy, new)?);
        }
    }
    Ok(errs)
}

/// `ValidateJobOnUpdate`: queue name, prebuilt workload, max exec time,
/// priority class, the elastic-job switch, admission gates.
pub(crate) fn generic_update(
    policy: &Policy,
    old: &JobObject<'_>,
    new: &JobObject<'_>,
    namespace: &str,
    ctx: &Context<'_>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let running = !new.is_suspended();
    if policy.has(Invariant::QueueName) {
        let (n, o) = (
            label_or_empty(new, QUEUE_NAME_LABEL),
            label_or_empty(old, QUEUE_NAME_LABEL),
        );
        if running {
            errs.extend(immutable(label_path(QUEUE_NAME_LABEL), n, o));
        }
        if n.is_empty() && !o.is_empty() && ctx.facts.default_local_queue_exists(namespace) {
            errs.push(FieldError::invalid(
                label_path(QUEUE_NAME_LABEL),
                BadValue::Str(String::new()),
                "queue-name must not be empty in namespace with default queue",
            ));
        }
    }
    if policy.has(Invariant::PrebuiltWorkload) {
        if !running || elastic(old) {
            errs.extend(prebuilt_create(policy, new));
        } else {
            // The name may move from the label to the annotation
            // (WorkloadIdentifierAnnotations): it is the name that is fixed.
            errs.extend(immutable(
                prebuilt_path(new),
                prebuilt_name(new),
                prebuilt_name(old),
            ));
        }
    }
    if policy.has(Invariant::MaxExecTime) && (!new.is_suspended() || !old.is_suspended()) {
        errs.extend(immutable(
            label_path(MAX_EXEC_TIME_LABEL),
            label_or_empty(new, MAX_EXEC_TIME_LABEL),
            label_or_empty(old, MAX_EXEC_TIME_LABEL),
        ));
    }
    if policy.has(Invariant::WorkloadPriorityClass) {
        let (n, o) = (
            label_or_empty(new, PRIORITY_CLASS_LABEL),
            label_or_empty(old, PRIORITY_CLASS_LABEL),
        );
        if running && o.is_empty() && !n.is_empty() {
            errs.push(FieldError::invalid(
                label_path(PRIORITY_CLASS_LABEL),
                BadValue::Str(n.to_string()),
                "WorkloadPriorityClass cannot be added to a non-suspended workload",
            ));
        } else if n.is_empty() && !o.is_empty() {
            errs.push(FieldError::invalid(
                label_path(PRIORITY_CLASS_LABEL),
                BadValue::Str(String::new()),
                "WorkloadPriorityClass cannot be removed from a workload",
            ));
        }
    }
    if elastic(old) != elastic(new) {
        errs.push(FieldError::invalid(
            annotation_path(ELASTIC_JOB_ANNOTATION),
            BadValue::Bool(elastic(new)),
            FIELD_IMMUTABLE,
        ));
    }
    errs.extend(admission_gates::on_update(
        old.annotation(ADMISSION_GATED_BY_ANNOTATION),
        new.annotation(ADMISSION_GATED_BY_ANNOTATION),
    ));
    errs
}

/// The batch/v1 Job's own update rules (partial admission, completions
/// equal to parallelism).
fn job_update(policy: &Policy, old: &JobObject<'_>, new: &JobObject<'_>) -> Errors {
    let mut errs = Vec::new();
    let running = !new.is_suspended();
    if policy.has(Invariant::JobPartialAdmission)
        && old.annotation(JOB_MIN_PARALLELISM_ANNOTATION).is_some()
        && !old.suspend_field()
        && old.int_at("/spec/parallelism")?.unwrap_or(1)
            != new.int_at("/spec/parallelism")?.unwrap_or(1)
    {
        errs.push(FieldError::forbidden(
            "spec.parallelism",
            "cannot change when partial admission is enabled and the job is not suspended",
        ));
    }
    if policy.has(Invariant::JobCompletionsEqualParallelism)
        && old.is_suspended() == new.is_suspended()
        && running
        && sync_completions(old) != sync_completions(new)
    {
        errs.push(FieldError::forbidden(
            annotation_path(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION),
            format!("{FIELD_IMMUTABLE} while the job is not suspended"),
        ));
    }
    Ok(errs)
}

/// Go's `%#v` of a pod template's scheduling gates, as field.Invalid
/// prints them.
fn go_scheduling_gates(list: Option<&Vec<Value>>) -> String {
    match list {
        None => "[]v1.PodSchedulingGate(nil)".into(),
        Some(l) => format!(
            "[]v1.PodSchedulingGate{{{}}}",
            l.iter()
                .map(|g| format!(
                    "v1.PodSchedulingGate{{Name:{}}}",
                    go_quote(g.get("name").and_then(Value::as_str).unwrap_or_default())
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `workloadslicing.Enabled` (gate ElasticJobsViaWorkloadSlices, on by
/// default): the elastic-job annotation is exactly `"true"`.
fn elastic(job: &JobObject<'_>) -> bool {
    job.annotation(ELASTIC_JOB_ANNOTATION) == Some("true")
}

/// `PrebuiltWorkloadNameFor` (gate WorkloadIdentifierAnnotations, on by
/// default): the annotation when set, else the label.
pub(crate) fn prebuilt_name<'a>(job: &JobObject<'a>) -> &'a str {
    match job.annotation(PREBUILT_WORKLOAD_LABEL) {
        Some(a) if !a.is_empty() => a,
        _ => label_or_empty(job, PREBUILT_WORKLOAD_LABEL),
    }
}

/// `GetPrebuiltWorkloadPath`: where the name in use is written.
pub(crate) fn prebuilt_path(job: &JobObject<'_>) -> String {
    match job.annotation(PREBUILT_WORKLOAD_LABEL) {
        Some(a) if !a.is_empty() => annotation_path(PREBUILT_WORKLOAD_LABEL),
        _ => label_path(PREBUILT_WORKLOAD_LABEL),
    }
}

/// `validateCreateForPrebuiltWorkload`: the name in use is a DNS-1123
/// subdomain, on a kind Kueue runs prebuilt Workloads for.
fn prebuilt_create(policy: &Policy, job: &JobObject<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match job.annotation(PREBUILT_WORKLOAD_LABEL) {
        Some(v) if !v.is_empty() => {
            if let Err(msg) = dns1123_subdomain(v) {
                errs.push(FieldError::invalid(
                    annotation_path(PREBUILT_WORKLOAD_LABEL),
                    BadValue::Str(v.to_string()),
                    msg,
                ));
            }
        }
        _ => errs.extend(dns_subdomain_label(job, PREBUILT_WORKLOAD_LABEL)),
    }
    if !prebuilt_name(job).is_empty() && !policy.prebuilt_workloads {
        errs.push(FieldError::forbidden(
            prebuilt_path(job),
            format!(
                "Is not supported for {}",
                go_quote(&policy.target.to_string())
            ),
        ));
    }
    errs
}

/// `ValidateJobOnCreate`: queue name, prebuilt workload name, max exec
/// time, the elastic-job annotation, admission gates.
pub(crate) fn generic_create(policy: &Policy, job: &JobObject<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if policy.has(Invariant::QueueName) {
        errs.extend(dns_subdomain_label(job, QUEUE_NAME_LABEL));
    }
    if policy.has(Invariant::PrebuiltWorkload) {
        errs.extend(prebuilt_create(policy, job));
    }
    if policy.has(Invariant::MaxExecTime) {
        if let Some(s) = job.label(MAX_EXEC_TIME_LABEL) {
            let path = label_path(MAX_EXEC_TIME_LABEL);
            match go_atoi(s) {
                Err(msg) => errs.push(FieldError::invalid(path, BadValue::Str(s.into()), msg)),
                Ok(v) if v <= 0 => errs.push(FieldError::invalid(
                    path,
                    BadValue::Int(v),
                    "should be greater than 0",
                )),
                Ok(_) => {}
            }
        }
    }
    if elastic(job) && !policy.elastic_jobs {
        errs.push(FieldError::forbidden(
            annotation_path(ELASTIC_JOB_ANNOTATION),
            format!(
                "elastic job is not supported for {}",
                go_quote(&policy.target.to_string())
            ),
        ));
    }
    errs.extend(admission_gates::on_create(
        job.annotation(ADMISSION_GATED_BY_ANNOTATION),
    ));
    errs
}

fn min_parallelism_create(policy: &Policy, job: &JobObject<'_>) -> Errors {
    let Some(s) = job.annotation(JOB_MIN_PARALLELISM_ANNOTATION) else {
        return Ok(Vec::new());
    };
    let path = annotation_path(JOB_MIN_PARALLELISM_ANNOTATION);
    let mut errs = Vec::new();
    match go_atoi(s) {
        Err(msg) => errs.push(FieldError::invalid(
            path.clone(),
            BadValue::Str(s.into()),
            msg,
        )),
        Ok(v) => {
            let pods = pods_count(policy, job)?;
            if v >= pods || v <= 0 {
                errs.push(FieldError::invalid(
                    path.clone(),
                    BadValue::Int(v),
                    format!("should be between 0 and {}", pods - 1),
                ));
            }
        }
    }
    if job.annotation(ELASTIC_JOB_ANNOTATION) == Some("true") {
        errs.push(FieldError::invalid(
            path,
            BadValue::Str(s.into()),
            "partial admission and elastic job cannot be used together",
        ));
    }
    Ok(errs)
}

fn completions_equal_parallelism_create(job: &JobObject<'_>) -> Errors {
    let Some(s) = job.annotation(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION) else {
        return Ok(Vec::new());
    };
    let path = annotation_path(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION);
    let mut errs = Vec::new();
    let enabled = match go_parse_bool(s) {
        Ok(b) => b,
        Err(msg) => {
            errs.push(FieldError::invalid(
                path.clone(),
                BadValue::Str(s.into()),
                msg,
            ));
            false
        }
    };
    if enabled {
        if matches!(
            job.str_at("/spec/completionMode"),
            None | Some("NonIndexed")
        ) {
            errs.push(FieldError::invalid(
                path,
                BadValue::Str(s.into()),
                "should not be enabled for NonIndexed jobs",
            ));
        }
        let completions = job.int_at("/spec/completions")?;
        if job.int_at("/spec/parallelism")?.unwrap_or(1) != completions.unwrap_or(1) {
            errs.push(FieldError::invalid(
                "spec.completions",
                completions.map_or(BadValue::Null, BadValue::Int),
                format!(
                    "should be equal to parallelism when {JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION} annotation is true"
                ),
            ));
        }
    }
    Ok(errs)
}

fn sync_completions(job: &JobObject<'_>) -> bool {
    job.annotation(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
        .is_some_and(|s| go_parse_bool(s) == Ok(true))
}

/// The first pod set's count (a Job has exactly one).
fn pods_count(policy: &Policy, job: &JobObject<'_>) -> Result<i64, DecodeError> {
    let sets = policy.pod_sets(job.raw).map_err(|e| DecodeError {
        field: e.field,
        message: e.message,
    })?;
    Ok(sets.first().map_or(1, |s| s.count))
}

fn label_or_empty<'a>(job: &JobObject<'a>, key: &str) -> &'a str {
    job.label(key).unwrap_or("")
}

/// `ValidateImmutableField` for string values.
fn immutable(path: String, new: &str, old: &str) -> Option<FieldError> {
    (new != old).then(|| FieldError::invalid(path, BadValue::Str(new.to_string()), FIELD_IMMUTABLE))
}

pub(crate) fn dns_subdomain_label(job: &JobObject<'_>, key: &str) -> Option<FieldError> {
    let v = job.label(key)?;
    dns1123_subdomain(v)
        .err()
        .map(|msg| FieldError::invalid(label_path(key), BadValue::Str(v.to_string()), msg))
}

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// apimachinery's `IsDNS1123Subdomain`, errors joined with "," as Kueue does.
pub fn dns1123_subdomain(v: &str) -> Result<(), String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !crate::vocabulary::names::is_subdomain_format(v) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join(","))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::*;
    use super::*;
    use crate::api::selector::LabelSelector;

    struct DefaultQueue;
    impl ClusterFacts for DefaultQueue {
        fn namespace_matches(&self, ns: &str, sel: &LabelSelector) -> bool {
            NoCluster.namespace_matches(ns, sel)
        }
        fn default_local_queue_exists(&self, _: &str) -> bool {
            true
        }
        fn default_priority_class_exists(&self) -> bool {
            false
        }
    }

    fn check(op: Operation, old: Option<Value>, new: Value, facts: &dyn ClusterFacts) -> Verdict {
        check_on(("batch", "v1", "Job"), op, old, new, facts)
    }

    /// Validates `new` (and `old`) as the embedded policy of `kind` does.
    fn check_on(
        kind: (&str, &str, &str),
        op: Operation,
        old: Option<Value>,
        new: Value,
        facts: &dyn ClusterFacts,
    ) -> Verdict {
        check_read(
            kind,
            op,
            old,
            new,
            facts,
            &crate::admission::Read::default(),
        )
    }

    /// [`check_on`] with the objects rules read answered by `lookups`.
    fn check_read(
        kind: (&str, &str, &str),
        op: Operation,
        old: Option<Value>,
        new: Value,
        facts: &dyn ClusterFacts,
        lookups: &dyn crate::admission::Lookups,
    ) -> Verdict {
        let policies = PolicySet::embedded().unwrap();
        let policy = policies.find(kind.0, kind.1, kind.2).unwrap().clone();
        let settings = Settings {
            manage_jobs_without_queue_name: false,
            managed_namespaces: LabelSelector::default(),
        };
        let ctx = Context {
            settings: &settings,
            facts,
            policies: &policies,
            lookups,
        };
        let req = Request {
            operation: op,
            namespace: "ns",
            object: Some(&new),
            old_object: old.as_ref(),
        };
        validate(&policy, &req, &ctx).verdict
    }

    /// Kueue v0.19.2 trainjob_webhook_test.go TestValidateCreate, every
    /// case (the TrainJob's runtime read from the cluster: a
    /// ClusterTrainingRuntime "testCtr" with one replicated job "node"),
    /// and beyond it: a missing runtime, a namespaced TrainingRuntime, a
    /// kind the trainer does not know, the same checks on update, and the
    /// first pass asking for the runtime.
    #[test]
    fn a_trainjobs_runtime_is_read_as_kueue_reads_it() {
        use crate::admission::{Asked, ObjectKey, Read};
        const REQUIRED: &str = "kueue.x-k8s.io/podset-required-topology";
        const PREFERRED: &str = "kueue.x-k8s.io/podset-preferred-topology";
        let runtime = |pod_annotations: Value| {
            json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
                   "metadata": {"name": "testCtr"},
                   "spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "replicas": 1,
                       "template": {"spec": {"parallelism": 1, "completions": 1, "template": {
                           "metadata": {"annotations": pod_annotations},
                           "spec": {"containers": [{"name": "node", "image": "pause"}]}}}}}]}}}})
        };
        let trainjob = |labels: Value, patches: Value| {
            json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                   "metadata": {"name": "trainjob", "namespace": "ns", "labels": labels},
                   "spec": {"suspend": false, "runtimePatches": patches,
                            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "name": "testCtr",
                                           "kind": "ClusterTrainingRuntime"}}})
        };
        let node_patch = |pod_annotations: Value| {
            json!([{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {
                "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
                    "metadata": {"annotations": pod_annotations}}}}}]}}}}])
        };
        let ctr = ObjectKey {
            group: "trainer.kubeflow.org".into(),
            version: "v1alpha1".into(),
            resource: "clustertrainingruntimes".into(),
            namespace: None,
            name: "testCtr".into(),
        };
        let with = |rt: Value| Read([(ctr.clone(), Ok(Some(rt)))].into_iter().collect());
        let kind = ("trainer.kubeflow.org", "v1alpha1", "TrainJob");
        let create = |job: Value, read: &Read| {
            check_read(kind, Operation::Create, None, job, &NoCluster, read)
        };
        let plain = with(runtime(json!({})));
        let q = |name: &str| json!({"kueue.x-k8s.io/queue-name": name});
        let two = "job[node].annotations: Invalid value: must not contain more than one topology annotation: [\"kueue.x-k8s.io/podset-required-topology\", \"kueue.x-k8s.io/podset-preferred-topology\", \"kueue.x-k8s.io/podset-unconstrained-topology\"]. Adjust either the \"TrainJob.spec.runtimePatches\" or the \"TrainingRuntime.Template\" annotations for the corresponding Job";
        // base; with prebuilt workload
        assert_eq!(
            create(trainjob(q("local-queue"), json!([])), &plain),
            Verdict::Allow
        );
        let mut prebuilt = q("local-queue");
        prebuilt["kueue.x-k8s.io/prebuilt-workload-name"] = json!("prebuilt-workload");
        assert_eq!(
            create(trainjob(prebuilt, json!([])), &plain),
            Verdict::Allow
        );
        // invalid queue-name label
        assert_eq!(
            create(trainjob(q("queue_name"), json!([])), &plain),
            deny("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"queue_name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
        );
        // valid topology request in RuntimePatch; in TrainingRuntime
        assert_eq!(
            create(
                trainjob(json!({}), node_patch(json!({REQUIRED: "cloud.com/block"}))),
                &plain
            ),
            Verdict::Allow
        );
        assert_eq!(
            create(
                trainjob(json!({}), json!([])),
                &with(runtime(json!({REQUIRED: "cloud.com/block"})))
            ),
            Verdict::Allow
        );
        // invalid topology request in TrainJob; in TrainingRuntime
        assert_eq!(
            create(
                trainjob(
                    json!({}),
                    node_patch(json!({PREFERRED: "cloud.com/block", REQUIRED: "cloud.com/block"}))
                ),
                &plain
            ),
            deny(two)
        );
        assert_eq!(
            create(
                trainjob(json!({}), json!([])),
                &with(runtime(
                    json!({PREFERRED: "cloud.com/block", REQUIRED: "cloud.com/block"})
                ))
            ),
            deny(two)
        );
        // invalid slice topology request - slice size larger than number of podsets
        assert_eq!(
            create(
                trainjob(json!({}), node_patch(json!({REQUIRED: "cloud.com/block",
                    "kueue.x-k8s.io/podset-slice-required-topology": "cloud.com/block",
                    "kueue.x-k8s.io/podset-slice-size": "20"}))),
                &plain
            ),
            deny("job[node].annotations[kueue.x-k8s.io/podset-slice-size]: Invalid value: \"20\": must not be greater than pod set count 1. Adjust either the \"TrainJob.spec.runtimePatches\" or the \"TrainingRuntime.Template\" annotations for the corresponding Job")
        );
        // Beyond the table: the runtime missing or unreadable (Kueue's
        // words alone, whatever else is wrong).
        let missing = Read([(ctr.clone(), Ok(None))].into_iter().collect());
        assert_eq!(
            create(trainjob(q("queue_name"), json!([])), &missing),
            deny("runtime 'testCtr' not found")
        );
        let failed = Read(
            [(ctr.clone(), Err("etcd timeout".into()))]
                .into_iter()
                .collect(),
        );
        assert_eq!(
            create(trainjob(json!({}), json!([])), &failed),
            deny("runtime 'testCtr' not found")
        );
        let mut namespaced = trainjob(json!({}), json!([]));
        namespaced["spec"]["runtimeRef"]["kind"] = json!("TrainingRuntime");
        let tr = ObjectKey {
            resource: "trainingruntimes".into(),
            namespace: Some("ns".into()),
            ..ctr.clone()
        };
        let asked = Asked::default();
        check_read(
            kind,
            Operation::Create,
            None,
            namespaced.clone(),
            &NoCluster,
            &asked,
        );
        assert_eq!(asked.keys(), vec![tr.clone()]);
        assert_eq!(
            create(
                namespaced,
                &Read([(tr, Ok(Some(runtime(json!({})))))].into_iter().collect())
            ),
            Verdict::Allow
        );
        let mut other = trainjob(json!({}), json!([]));
        other["spec"]["runtimeRef"]["kind"] = json!("Other");
        assert_eq!(
            create(other, &plain),
            deny("unsupported runtime: Other.trainer.kubeflow.org")
        );
        // On update: the same checks on the new object.
        let old = trainjob(json!({}), json!([]));
        let bad = trainjob(
            json!({}),
            node_patch(json!({PREFERRED: "cloud.com/block", REQUIRED: "cloud.com/block"})),
        );
        assert_eq!(
            check_read(
                kind,
                Operation::Update,
                Some(old.clone()),
                bad,
                &NoCluster,
                &plain
            ),
            deny(two)
        );
        assert_eq!(
            check_read(
                kind,
                Operation::Update,
                Some(old.clone()),
                old,
                &NoCluster,
                &missing
            ),
            deny("runtime 'testCtr' not found")
        );
        // The first pass asks, and allows for now.
        let asked = Asked::default();
        assert_eq!(
            check_read(
                kind,
                Operation::Create,
                None,
                trainjob(json!({}), json!([])),
                &NoCluster,
                &asked
            ),
            Verdict::Allow
        );
        assert_eq!(asked.keys(), vec![ctr]);
    }

    fn create(job: Value) -> Verdict {
        check(Operation::Create, None, job, &NoCluster)
    }

    fn update(old: Value, new: Value) -> Verdict {
        check(Operation::Update, Some(old), new, &NoCluster)
    }

    fn job(labels: Value, annotations: Value, spec: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "j", "labels": labels, "annotations": annotations},
               "spec": spec})
    }

    fn deny(msg: &str) -> Verdict {
        Verdict::Deny(msg.to_string())
    }

    #[test]
    fn queue_name_must_be_a_dns_subdomain() {
        assert_eq!(
            create(job(
                json!({"kueue.x-k8s.io/queue-name": "team-a.q1"}),
                json!({}),
                json!({})
            )),
            Verdict::Allow
        );
        assert_eq!(
            create(job(json!({"kueue.x-k8s.io/queue-name": "Bad_Queue"}), json!({}), json!({}))),
            deny(&format!(
                "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"Bad_Queue\": {DNS1123_SUBDOMAIN_MSG}"
            ))
        );
        let long = "a".repeat(254);
        let Verdict::Deny(m) = create(job(
            json!({"kueue.x-k8s.io/queue-name": long}),
            json!({}),
            json!({}),
        )) else {
            panic!("long queue name must be denied")
        };
        assert!(m.ends_with(": must be no more than 253 characters"), "{m}");
    }

    #[test]
    fn queue_name_is_immutable_while_running() {
        let running = |q: &str| {
            job(
                json!({"kueue.x-k8s.io/queue-name": q}),
                json!({}),
                json!({"suspend": false}),
            )
        };
        assert_eq!(
            update(running("q1"), running("q2")),
            deny(
                r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "q2": field is immutable"#
            )
        );
        let suspended = |q: &str| {
            job(
                json!({"kueue.x-k8s.io/queue-name": q}),
                json!({}),
                json!({"suspend": true}),
            )
        };
        assert_eq!(update(suspended("q1"), suspended("q2")), Verdict::Allow);
        // Adding a queue to a running unqueued job is a change too.
        assert_eq!(
            update(job(json!({}), json!({}), json!({})), running("q2")),
            deny(
                r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "q2": field is immutable"#
            )
        );
        // A job being stopped (suspend=true, stopping=true) still counts as running.
        let stopping = job(
            json!({"kueue.x-k8s.io/queue-name": "q2"}),
            json!({"kueue.x-k8s.io/stopping": "true"}),
            json!({"suspend": true}),
        );
        assert!(matches!(
            update(suspended("q1"), stopping),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn queue_name_cannot_be_removed_with_default_queue() {
        let old = job(
            json!({"kueue.x-k8s.io/queue-name": "q"}),
            json!({}),
            json!({"suspend": true}),
        );
        let new = job(json!({}), json!({}), json!({"suspend": true}));
        assert_eq!(update(old.clone(), new.clone()), Verdict::Allow);
        assert_eq!(
            check(Operation::Update, Some(old), new, &DefaultQueue),
            deny(
                r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": queue-name must not be empty in namespace with default queue"#
            )
        );
    }

    #[test]
    fn max_exec_time_rules() {
        let with = |v: &str, suspend: bool| {
            job(
                json!({"kueue.x-k8s.io/max-exec-time-seconds": v}),
                json!({}),
                json!({"suspend": suspend}),
            )
        };
        assert_eq!(create(with("60", true)), Verdict::Allow);
        assert_eq!(
            create(with("0", true)),
            deny("metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: should be greater than 0")
        );
        assert_eq!(
            create(with("-5", true)),
            deny("metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: -5: should be greater than 0")
        );
        assert_eq!(
            create(with("ten", true)),
            deny(
                r#"metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "ten": strconv.Atoi: parsing "ten": invalid syntax"#
            )
        );
        assert_eq!(update(with("60", true), with("120", true)), Verdict::Allow);
        assert_eq!(
            update(with("60", false), with("120", false)),
            deny(
                r#"metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "120": field is immutable"#
            )
        );
        // Unsuspending and changing at once is refused too: both must be suspended.
        assert!(matches!(
            update(with("60", true), with("120", false)),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn priority_class_label_rules() {
        let with = |v: Option<&str>, suspend: bool| {
            let labels = v.map_or(json!({}), |v| json!({"kueue.x-k8s.io/priority-class": v}));
            job(labels, json!({}), json!({"suspend": suspend}))
        };
        assert_eq!(
            update(with(None, false), with(Some("high"), false)),
            deny(
                r#"metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": WorkloadPriorityClass cannot be added to a non-suspended workload"#
            )
        );
        assert_eq!(
            update(with(None, true), with(Some("high"), true)),
            Verdict::Allow
        );
        assert_eq!(
            update(with(Some("low"), false), with(Some("high"), false)),
            Verdict::Allow
        );
        assert_eq!(
            update(with(Some("low"), true), with(None, true)),
            deny(
                r#"metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload"#
            )
        );
    }

    #[test]
    fn min_parallelism_rules() {
        let with = |v: &str, spec: Value| {
            job(
                json!({}),
                json!({"kueue.x-k8s.io/job-min-parallelism": v}),
                spec,
            )
        };
        assert_eq!(create(with("2", json!({"parallelism": 4}))), Verdict::Allow);
        assert_eq!(
            create(with("4", json!({"parallelism": 4}))),
            deny("metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 4: should be between 0 and 3")
        );
        assert_eq!(
            create(with("0", json!({"parallelism": 4, "completions": 2}))),
            deny("metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 0: should be between 0 and 1")
        );
        assert_eq!(
            create(with("x", json!({"parallelism": 4}))),
            deny(
                r#"metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax"#
            )
        );
        let elastic = job(
            json!({}),
            json!({"kueue.x-k8s.io/job-min-parallelism": "2", "kueue.x-k8s.io/elastic-job": "true"}),
            json!({"parallelism": 4}),
        );
        assert_eq!(
            create(elastic),
            deny(
                r#"metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: "2": partial admission and elastic job cannot be used together"#
            )
        );
    }

    #[test]
    fn parallelism_is_frozen_while_running_under_partial_admission() {
        let with = |p: i64, suspend: bool| {
            job(
                json!({}),
                json!({"kueue.x-k8s.io/job-min-parallelism": "2"}),
                json!({"parallelism": p, "suspend": suspend}),
            )
        };
        assert_eq!(
            update(with(4, false), with(5, false)),
            deny("spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended")
        );
        assert_eq!(update(with(4, true), with(5, true)), Verdict::Allow);
        // Without the annotation, parallelism may change (Job's own scaling).
        let plain = |p: i64| {
            job(
                json!({}),
                json!({}),
                json!({"parallelism": p, "suspend": false}),
            )
        };
        assert_eq!(update(plain(4), plain(5)), Verdict::Allow);
    }

    /// The reconciler's own writes to a partially admitted Job pass this
    /// rule: it starts the Job (parallelism changed in the same update that
    /// unsuspends it), suspends it without touching parallelism, and only
    /// then writes the Workload's count back (Kueue's Job `Stop` does the
    /// same two steps); doing both at once would be refused.
    #[test]
    fn the_reconcilers_partial_admission_writes_pass_the_parallelism_rule() {
        use crate::jobs::workload::{apply, restore_patch, start_patch, suspend_patch, PodSetInfo};
        let policies = PolicySet::embedded().unwrap();
        let policy = policies.find("batch", "v1", "Job").unwrap().clone();
        let queued = job(
            json!({}),
            json!({"kueue.x-k8s.io/job-min-parallelism": "2"}),
            json!({"parallelism": 4, "completions": 4, "suspend": true,
                   "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}),
        );
        let recorded = crate::jobs::workload::pod_sets(&policy, &queued).unwrap();
        let info = PodSetInfo {
            name: "main".into(),
            count: Some(2),
            ..PodSetInfo::default()
        };
        let running = apply(&queued, &start_patch(&policy, &queued, &[info]).unwrap()).unwrap();
        assert_eq!(running["spec"]["parallelism"], 2);
        assert_eq!(update(queued.clone(), running.clone()), Verdict::Allow);
        let suspended = apply(&running, &suspend_patch(&policy, &running)).unwrap();
        assert_eq!(update(running.clone(), suspended.clone()), Verdict::Allow);
        let restored = apply(&suspended, &restore_patch(&policy, &suspended, &recorded)).unwrap();
        assert_eq!(restored["spec"]["parallelism"], 4);
        assert_eq!(update(suspended, restored.clone()), Verdict::Allow);
        assert_eq!(
            update(running, restored),
            deny("spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended")
        );
    }

    #[test]
    fn completions_equal_parallelism_rules() {
        let ann = |v: &str| json!({"kueue.x-k8s.io/job-completions-equal-parallelism": v});
        let indexed = json!({"completionMode": "Indexed", "parallelism": 3, "completions": 3});
        assert_eq!(
            create(job(json!({}), ann("true"), indexed.clone())),
            Verdict::Allow
        );
        assert_eq!(
            create(job(
                json!({}),
                ann("true"),
                json!({"parallelism": 3, "completions": 3})
            )),
            deny(
                r#"metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]: Invalid value: "true": should not be enabled for NonIndexed jobs"#
            )
        );
        assert_eq!(
            create(job(json!({}), ann("true"), json!({"completionMode": "Indexed", "parallelism": 3, "completions": 2}))),
            deny("spec.completions: Invalid value: 2: should be equal to parallelism when kueue.x-k8s.io/job-completions-equal-parallelism annotation is true")
        );
        assert_eq!(
            create(job(json!({}), ann("maybe"), indexed.clone())),
            deny(
                r#"metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]: Invalid value: "maybe": strconv.ParseBool: parsing "maybe": invalid syntax"#
            )
        );
        let mut running = indexed.clone();
        running["suspend"] = json!(false);
        assert_eq!(
            update(job(json!({}), json!({}), running.clone()), job(json!({}), ann("true"), running)),
            deny("metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]: Forbidden: field is immutable while the job is not suspended")
        );
    }

    #[test]
    fn several_errors_aggregate() {
        let bad = job(
            json!({"kueue.x-k8s.io/queue-name": "Q", "kueue.x-k8s.io/max-exec-time-seconds": "0"}),
            json!({}),
            json!({}),
        );
        let Verdict::Deny(m) = create(bad) else {
            panic!("must deny")
        };
        assert!(
            m.starts_with("[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"Q\""),
            "{m}"
        );
        assert!(
            m.ends_with("Invalid value: 0: should be greater than 0]"),
            "{m}"
        );
    }

    #[test]
    fn prebuilt_workload_name_rules() {
        let with = |v: &str, suspend: bool| {
            job(
                json!({"kueue.x-k8s.io/prebuilt-workload-name": v}),
                json!({}),
                json!({"suspend": suspend}),
            )
        };
        assert!(
            matches!(create(with("Not Valid", true)), Verdict::Deny(m) if m.contains("prebuilt-workload-name"))
        );
        assert_eq!(update(with("a", true), with("b", true)), Verdict::Allow);
        assert_eq!(
            update(with("a", false), with("b", false)),
            deny(
                r#"metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: Invalid value: "b": field is immutable"#
            )
        );
    }

    fn check_kind(
        kind: (&str, &str, &str),
        op: Operation,
        old: Option<Value>,
        new: Value,
    ) -> Verdict {
        check_on(kind, op, old, new, &NoCluster)
    }

    #[test]
    fn elastic_job_annotation_only_where_kueue_supports_it() {
        let elastic = |kind: &str| {
            json!({"kind": kind, "metadata": {"annotations": {"kueue.x-k8s.io/elastic-job": "true"}},
                   "spec": {"runPolicy": {"suspend": true}}})
        };
        assert_eq!(
            check_kind(
                ("kubeflow.org", "v1", "PyTorchJob"),
                Operation::Create,
                None,
                elastic("PyTorchJob")
            ),
            deny(
                r#"metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: elastic job is not supported for "kubeflow.org/v1, Kind=PyTorchJob""#
            )
        );
        assert_eq!(
            create(job(
                json!({}),
                json!({"kueue.x-k8s.io/elastic-job": "true"}),
                json!({})
            )),
            Verdict::Allow
        );
        // Turning elasticity on or off is an update of its own.
        assert_eq!(
            update(
                job(json!({}), json!({}), json!({"suspend": true})),
                job(json!({}), json!({"kueue.x-k8s.io/elastic-job": "true"}), json!({"suspend": true}))
            ),
            deny("metadata.annotations[kueue.x-k8s.io/elastic-job]: Invalid value: true: field is immutable")
        );
    }

    #[test]
    fn no_prebuilt_workload_for_a_jaxjob() {
        let jax = json!({"metadata": {"labels": {"kueue.x-k8s.io/prebuilt-workload-name": "wl"}},
                         "spec": {"runPolicy": {"suspend": true}}});
        assert_eq!(
            check_kind(
                ("kubeflow.org", "v1", "JAXJob"),
                Operation::Create,
                None,
                jax
            ),
            deny(
                r#"metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: Forbidden: Is not supported for "kubeflow.org/v1, Kind=JAXJob""#
            )
        );
    }

    #[test]
    fn kubeflow_updates_do_not_recheck_create_rules() {
        // Kueue's generic webhook runs only the update rules on UPDATE: a
        // suspended PyTorchJob keeps a queue name it was created with.
        let pt = |q: &str| {
            json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": q}},
                   "spec": {"runPolicy": {"suspend": true}}})
        };
        let kind = ("kubeflow.org", "v1", "PyTorchJob");
        assert_eq!(
            check_kind(kind, Operation::Update, Some(pt("q")), pt("Bad_Q")),
            Verdict::Allow
        );
        assert!(matches!(
            check_kind(kind, Operation::Create, None, pt("Bad_Q")),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn unmanaged_ray_updates_run_no_rule() {
        let rc = |prebuilt: &str, queue: Option<&str>| {
            let mut labels = json!({"kueue.x-k8s.io/prebuilt-workload-name": prebuilt});
            if let Some(q) = queue {
                labels["kueue.x-k8s.io/queue-name"] = json!(q);
            }
            json!({"metadata": {"labels": labels}, "spec": {"suspend": false}})
        };
        let kind = ("ray.io", "v1", "RayCluster");
        assert_eq!(
            check_kind(kind, Operation::Update, Some(rc("a", None)), rc("b", None)),
            Verdict::Allow
        );
        // Managed before the update: the rules run (the queue name cannot go).
        assert!(matches!(
            check_kind(kind, Operation::Update, Some(rc("a", Some("q"))), rc("a", None)),
            Verdict::Deny(m) if m.contains("queue-name")
        ));
    }

    #[test]
    fn delete_is_always_allowed() {
        assert_eq!(
            check(Operation::Delete, None, json!(null), &NoCluster),
            Verdict::Allow
        );
    }
}
