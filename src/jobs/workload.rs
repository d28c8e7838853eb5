//! A queued job's Workload, as Kueue's job framework makes it: its name, its
//! pod sets (counts and templates taken through the job's policy), its
//! priority; and what starting and stopping the job does to the job's pod
//! templates. Pure: the job as raw JSON in, the Workload as JSON or the job
//! patch out, so nothing of the job batchgate does not own is touched.

use crate::vocabulary::pointer::At;
use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::jobs::{
    policy::{Policy, Ranks, RequestsFloor, Synthesizer},
    reference::InfoEntry,
};
use crate::vocabulary::{
    go::go_parse_bool,
    keys::{
        JOB_UID_LABEL, MAX_EXEC_TIME_LABEL, PODSET_GROUP_NAME_ANNOTATION, PODSET_LABEL,
        PODSET_PREFERRED_TOPOLOGY_ANNOTATION, PODSET_REQUIRED_TOPOLOGY_ANNOTATION,
        PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION,
        PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION, PODSET_SLICE_SIZE_ANNOTATION,
        PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL,
        RESOURCE_IN_USE_FINALIZER,
    },
    patch::{self, PatchOp},
    pointer::Pointer,
    quantity::Quantity,
};

const HASH_LENGTH: usize = 5;
/// 253 (the longest object name) less the `-` and the hash.
const MAX_PREFIX_LENGTH: usize = 252 - HASH_LENGTH;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    #[error("{field}: {message}")]
    PodSets { field: String, message: String },
    #[error("the job has no {0}")]
    Missing(&'static str),
    #[error("workloadPriorityClass {0:?} not found")]
    WorkloadPriorityClassNotFound(String),
    #[error("priorityClass {0:?} not found")]
    PriorityClassNotFound(String),
    /// The flavor's node labels or the pod set label clash with the job's own
    /// values (Kueue's wording).
    #[error("invalid admission check PodSetUpdate: conflict for {what}: conflict for key={key}, value1={ours}, value2={theirs}")]
    Conflict {
        what: &'static str,
        key: String,
        ours: String,
        theirs: String,
    },
    #[error("invalid podset infos: expecting {expected} podset, got {got}")]
    PodSetCount { expected: usize, got: usize },
    /// An admission check's `podSetUpdates` could not be applied.
    #[error("in admission check {check:?}: {inner}")]
    InCheck {
        check: String,
        inner: Box<WorkloadError>,
    },
}

/// Whether an object found by a name batchgate derives (a Workload, a
/// ProvisioningRequest) is `owner_uid`'s: one of its ownerReferences carries
/// that UID. The name alone can be taken by anyone's object, which is then
/// never patched, finished or deleted on the owner's behalf.
pub fn is_owned_by(
    owner_references: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference]>,
    owner_uid: &str,
) -> bool {
    !owner_uid.is_empty()
        && owner_references.is_some_and(|refs| refs.iter().any(|r| r.uid == owner_uid))
}

/// Kueue's `GetWorkloadNameForOwnerWithGVK`: `<kind>-<job name>-<hash>`,
/// where the hash is the first five hex digits of
/// `sha1(kind \n group \n name \n uid)`, so a job re-created under the same
/// name gets a new Workload.
pub fn name_for(kind: &str, group: &str, job_name: &str, uid: &str) -> String {
    name_with_extra(kind, group, job_name, uid, "")
}

/// Kueue's `GenerateWorkloadNameWithExtra`: as [`name_for`], with `extra`
/// (an elastic job's generation) hashed in when not empty, so each slice
/// of a job has its own name.
pub fn name_with_extra(kind: &str, group: &str, job_name: &str, uid: &str, extra: &str) -> String {
    let mut prefix = format!("{}-{}", kind.to_lowercase(), job_name);
    if prefix.len() > MAX_PREFIX_LENGTH {
        let mut cut = MAX_PREFIX_LENGTH;
        while !prefix.is_char_boundary(cut) {
            cut -= 1;
        }
        prefix.truncate(cut);
    }
    let mut input = format!("{kind}\n{group}\n{job_name}\n{uid}");
    if !extra.is_empty() {
        input.push('\n');
        input.push_str(extra);
    }
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, input.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{}", &hex[..HASH_LENGTH])
}

/// Where a Workload's priority came from (`spec.priorityClassRef`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrioritySource {
    /// `kueue.x-k8s.io/priority-class`: a WorkloadPriorityClass.
    WorkloadPriorityClass(String),
    /// A pod template's `priorityClassName`, or the global default class.
    PriorityClass(String),
    None,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Priority {
    pub value: i32,
    pub source: PrioritySource,
}

/// Priority classes as the cluster has them.
#[derive(Debug, Clone, Default)]
pub struct PriorityClasses {
    /// WorkloadPriorityClass name → value.
    pub workload: BTreeMap<String, i32>,
    /// scheduling.k8s.io PriorityClass name → value.
    pub pod: BTreeMap<String, i32>,
    /// The PriorityClass with `globalDefault: true`, if any.
    pub global_default: Option<String>,
}

/// Kueue's order: the WorkloadPriorityClass label, else the first pod
/// template's `priorityClassName`, else the global default PriorityClass,
/// else 0.
pub fn priority(
    policy: &Policy,
    job: &Value,
    classes: &PriorityClasses,
) -> Result<Priority, WorkloadError> {
    if label(job, PRIORITY_CLASS_LABEL).is_some() {
        return priority_of(job, &[], classes);
    }
    let pod_sets = policy.pod_sets(job).map_err(|e| WorkloadError::PodSets {
        field: e.field,
        message: e.message,
    })?;
    let templates: Vec<&Value> = pod_sets
        .iter()
        .filter_map(|ps| ps.template.resolve(job))
        .collect();
    priority_of(job, &templates, classes)
}

/// [`priority`] for an object whose pod templates are given (in pod-set
/// order) rather than found by a policy: an AppWrapper's components.
pub fn priority_of(
    job: &Value,
    templates: &[&Value],
    classes: &PriorityClasses,
) -> Result<Priority, WorkloadError> {
    if let Some(name) = label(job, PRIORITY_CLASS_LABEL) {
        return match classes.workload.get(name) {
            Some(v) => Ok(Priority {
                value: *v,
                source: PrioritySource::WorkloadPriorityClass(name.to_string()),
            }),
            None => Err(WorkloadError::WorkloadPriorityClassNotFound(
                name.to_string(),
            )),
        };
    }
    let from_template = templates.iter().find_map(|t| {
        t.at("/spec/priorityClassName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
    });
    let name = match from_template {
        Some(n) => n.to_string(),
        None => match &classes.global_default {
            Some(n) => n.clone(),
            None => {
                return Ok(Priority {
                    value: 0,
                    source: PrioritySource::None,
                })
            }
        },
    };
    match classes.pod.get(&name) {
        Some(v) => Ok(Priority {
            value: *v,
            source: PrioritySource::PriorityClass(name),
        }),
        None => Err(WorkloadError::PriorityClassNotFound(name)),
    }
}

fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("labels")?.get(key)?.as_str()
}

fn meta_str<'a>(obj: &'a Value, key: &'static str) -> Result<&'a str, WorkloadError> {
    obj.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(WorkloadError::Missing(match key {
            "name" => "metadata.name",
            "namespace" => "metadata.namespace",
            _ => "metadata.uid",
        }))
}

/// One pod set of the job, as the Workload records it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPodSet {
    pub name: String,
    pub count: i64,
    /// `minCount` (partial admission).
    pub min_count: Option<i64>,
    /// The template reduced to what a Workload keeps: `metadata.labels`,
    /// `metadata.annotations` and `spec`.
    pub template: Value,
    /// The labels ranking its pods (the policy's `ranks`).
    pub ranks: Ranks,
}

/// The job's pod sets in Workload form.
pub fn pod_sets(policy: &Policy, job: &Value) -> Result<Vec<JobPodSet>, WorkloadError> {
    let sets = policy.pod_sets(job).map_err(|e| WorkloadError::PodSets {
        field: e.field,
        message: e.message,
    })?;
    sets.into_iter()
        .map(|ps| {
            let mut t = match (ps.template.resolve(job), ps.synthesize) {
                (_, Some(hook)) if hook.always() => synthesize(hook, job),
                (Some(t), _) => t.clone(),
                (None, Some(hook)) => synthesize(hook, job),
                (None, None) => Value::Null,
            };
            if let Some(floor) = ps.requests_floor.as_ref().filter(|f| f.when.on(job)) {
                raise_requests(&mut t, floor).map_err(|message| WorkloadError::PodSets {
                    field: format!("{}.spec.containers", ps.field),
                    message,
                })?;
            }
            if let Some(c) = ps.sidecar.as_ref().and_then(|s| s.container(job)) {
                match t
                    .pointer_mut("/spec/containers")
                    .and_then(Value::as_array_mut)
                {
                    Some(list) => list.push(c),
                    None => t["spec"]["containers"] = json!([c]),
                }
            }
            let mut meta = Map::new();
            for key in ["labels", "annotations"] {
                if let Some(v) = t.at(&format!("/metadata/{key}")) {
                    if v.as_object().is_some_and(|m| !m.is_empty()) {
                        meta.insert(key.into(), v.clone());
                    }
                }
            }
            let mut template = Map::new();
            if !meta.is_empty() {
                template.insert("metadata".into(), Value::Object(meta));
            }
            template.insert(
                "spec".into(),
                t.get("spec").cloned().unwrap_or_else(|| json!({})),
            );
            Ok(JobPodSet {
                name: ps.name,
                count: ps.count,
                min_count: ps.min_count,
                template: Value::Object(template),
                ranks: ps.ranks,
            })
        })
        .collect()
}

/// The template's first container's requests, each at least the floor's
/// (apimachinery's order; a quantity that does not parse is left as is).
fn raise_requests(template: &mut Value, floor: &RequestsFloor) -> Result<(), String> {
    let Some(first) = template
        .pointer_mut("/spec/containers/0")
        .filter(|c| c.is_object())
    else {
        return Err(floor.no_container.clone());
    };
    let resources = first
        .as_object_mut()
        .expect("an object")
        .entry("resources")
        .or_insert_with(|| json!({}));
    if !resources.is_object() {
        *resources = json!({});
    }
    let requests = resources
        .as_object_mut()
        .expect("an object")
        .entry("requests")
        .or_insert_with(|| json!({}));
    if !requests.is_object() {
        *requests = json!({});
    }
    let requests = requests.as_object_mut().expect("an object");
    for (name, least) in &floor.requests {
        let Some(least_q) = least.as_str().and_then(|l| Quantity::parse(l).ok()) else {
            continue;
        };
        let raise = match requests.get(name).and_then(Value::as_str) {
            None => !requests.contains_key(name),
            Some(have) => Quantity::parse(have)
                .is_ok_and(|q| q.cmp_value(&least_q) == std::cmp::Ordering::Less),
        };
        if raise {
            requests.insert(name.clone(), least.clone());
        }
    }
    Ok(())
}

/// A pod template the object leaves to its operator's default.
pub fn synthesize(hook: Synthesizer, job: &Value) -> Value {
    match hook {
        // KubeRay's default submitter Job pod, as Kueue accounts for it.
        Synthesizer::RaySubmitter => {
            let image = job
                .at("/spec/rayClusterSpec/headGroupSpec/template/spec/containers/0/image")
                .cloned()
                .unwrap_or(Value::Null);
            json!({"spec": {
                "containers": [{
                    "name": "ray-job-submitter",
                    "image": image,
                    "resources": {
                        "requests": {"cpu": "500m", "memory": "200Mi"},
                        "limits": {"cpu": "1", "memory": "1Gi"},
                    },
                }],
                "restartPolicy": "Never",
            }})
        }
        Synthesizer::SparkDriver => spark_pod(job, "driver", "spark-kubernetes-driver"),
        Synthesizer::SparkExecutor => spark_pod(job, "executor", "spark-kubernetes-executor"),
    }
}

/// A Spark pod as Kueue v0.19.2 builds it for the Workload
/// (`sparkapplication_podset.go`, after the operator's pod defaulter): one
/// container named as the operator names it, given the role's volumes
/// (those its `volumeMounts` name, local dirs left out), init and sidecar
/// containers, priority class, node selector, affinity, tolerations,
/// `coreRequest`/`coreLimit` as cpu, `memory`/`memoryLimit` as memory
/// (Java units: `512m` is `512Mi`) and a GPU limit; metadata from the
/// role's template plus its `labels` and `annotations`. The template's own
/// spec is not read (Kueue does not).
fn spark_pod(job: &Value, role: &str, container: &str) -> Value {
    let r = job
        .at(&format!("/spec/{role}"))
        .cloned()
        .unwrap_or(json!({}));
    let get = |k: &str| r.get(k).filter(|v| !v.is_null());
    let mut c = json!({"name": container});
    let mut spec = Map::new();
    let volumes: Vec<Value> = job
        .at("/spec/volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut added: Vec<Value> = Vec::new();
    let mut mounts = Vec::new();
    for m in get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = m.get("name").and_then(Value::as_str) else {
            continue;
        };
        if name.starts_with("spark-local-dir-") {
            continue;
        }
        if let Some(v) = volumes
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
        {
            if !added.iter().any(|a| a.get("name") == v.get("name")) {
                added.push(v.clone());
            }
            mounts.push(m.clone());
        }
    }
    if !mounts.is_empty() {
        c["volumeMounts"] = Value::Array(mounts);
    }
    let mut requests = Map::new();
    let mut limits = Map::new();
    if let Some(v) = get("coreRequest").and_then(Value::as_str) {
        requests.insert("cpu".into(), json!(v));
    }
    if let Some(v) = get("coreLimit").and_then(Value::as_str) {
        limits.insert("cpu".into(), json!(v));
    }
    if let Some(v) = get("memory").and_then(Value::as_str) {
        requests.insert("memory".into(), json!(java_memory(v)));
    }
    if let Some(v) = get("memoryLimit").and_then(Value::as_str) {
        limits.insert("memory".into(), json!(java_memory(v)));
    }
    if let Some(gpu) = get("gpu") {
        let name = gpu.get("name").and_then(Value::as_str).unwrap_or("");
        let quantity = gpu.get("quantity").and_then(Value::as_i64).unwrap_or(0);
        if !name.is_empty() && quantity > 0 {
            limits.insert(name.into(), json!(quantity.to_string()));
        }
    }
    let mut resources = Map::new();
    if !limits.is_empty() {
        resources.insert("limits".into(), Value::Object(limits));
    }
    if !requests.is_empty() {
        resources.insert("requests".into(), Value::Object(requests));
    }
    if !resources.is_empty() {
        c["resources"] = Value::Object(resources);
    }
    let mut containers = vec![c];
    for s in get("sidecars")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let same = |x: &Value| x.get("name") == s.get("name") && x.get("image") == s.get("image");
        if !containers.iter().any(same) {
            containers.push(s.clone());
        }
    }
    spec.insert("containers".into(), Value::Array(containers));
    let mut inits: Vec<Value> = Vec::new();
    for s in get("initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let same = |x: &Value| x.get("name") == s.get("name") && x.get("image") == s.get("image");
        if !inits.iter().any(same) {
            inits.push(s.clone());
        }
    }
    if !inits.is_empty() {
        spec.insert("initContainers".into(), Value::Array(inits));
    }
    if !added.is_empty() {
        spec.insert("volumes".into(), Value::Array(added));
    }
    if let Some(p) = get("priorityClassName")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        spec.insert("priorityClassName".into(), json!(p));
    }
    for (from, to) in [
        ("nodeSelector", "nodeSelector"),
        ("affinity", "affinity"),
        ("tolerations", "tolerations"),
    ] {
        if let Some(v) = get(from).filter(|v| !is_empty(v)) {
            spec.insert(to.into(), v.clone());
        }
    }
    let mut meta = r
        .at("/template/metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for key in ["labels", "annotations"] {
        if let Some(Value::Object(extra)) = get(key) {
            let slot = meta.entry(key).or_insert_with(|| json!({}));
            if let Value::Object(m) = slot {
                for (k, v) in extra {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
    }
    json!({"metadata": meta, "spec": spec})
}

/// The operator's `ConvertJavaMemoryStringToK8sMemoryString`: a Java
/// size suffix (`k`, `m`, `g`, `t`, `p`, with or without `b`, matched
/// case-insensitively but trimmed as written) becomes a binary unit.
fn java_memory(v: &str) -> String {
    let lower = v.to_lowercase();
    for (unit, k8s) in [
        ("kb", "Ki"),
        ("mb", "Mi"),
        ("gb", "Gi"),
        ("tb", "Ti"),
        ("pb", "Pi"),
        ("k", "Ki"),
        ("m", "Mi"),
        ("g", "Gi"),
        ("t", "Ti"),
        ("p", "Pi"),
    ] {
        if lower.ends_with(unit) {
            return match v.strip_suffix(unit) {
                Some(n) => format!("{n}{k8s}"),
                None => format!("{v}{k8s}"),
            };
        }
    }
    v.to_string()
}

/// The Workload for a queued job: owned by it (controller reference, so it
/// is garbage-collected with the job), labelled with the job's uid, and
/// held by Kueue's `resource-in-use` finalizer while the job needs it
/// (jobframework's `NewWorkload`).
pub fn for_job(policy: &Policy, job: &Value, prio: &Priority) -> Result<Value, WorkloadError> {
    let name = meta_str(job, "name")?;
    let namespace = meta_str(job, "namespace")?;
    let uid = meta_str(job, "uid")?;
    let queue = label(job, QUEUE_NAME_LABEL).unwrap_or("");
    let t = &policy.target;
    let mut spec = json!({
        "queueName": queue,
        "podSets": pod_sets_json(pod_sets(policy, job)?),
        "priority": prio.value,
        "active": true,
    });
    set_priority(&mut spec, prio);
    if let Some(secs) = max_execution_time(job) {
        spec["maximumExecutionTimeSeconds"] = json!(secs);
    }
    Ok(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name_for(&t.kind, &t.group, name, uid),
            "namespace": namespace,
            "labels": { JOB_UID_LABEL: uid },
            "finalizers": [RESOURCE_IN_USE_FINALIZER],
            "ownerReferences": [{
                "apiVersion": t.api_version(),
                "kind": t.kind,
                "name": name,
                "uid": uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": spec,
    }))
}

/// `spec.podSets` of a Workload with these pod sets.
pub fn pod_sets_json(sets: Vec<JobPodSet>) -> Vec<Value> {
    sets.into_iter()
        .map(|ps| {
            let mut v = json!({"name": ps.name, "count": ps.count, "template": ps.template});
            if let Some(min) = ps.min_count {
                v["minCount"] = json!(min);
            }
            if let Some(tr) = topology_request(&ps.template, &ps.ranks) {
                v["topologyRequest"] = tr;
            }
            v
        })
        .collect()
}

/// A pod set's `topologyRequest` from its template's annotations, as
/// Kueue's `PodSetTopologyRequestBuilder` builds it: required, else
/// preferred, else unconstrained; the slice layer (single, or the
/// multi-layer constraints); the group name with a required or preferred
/// level; the kind's rank labels. `None` without any of them. A value
/// that does not parse is left out: the job webhook refuses it with the
/// reason at creation.
pub fn topology_request(template: &Value, ranks: &Ranks) -> Option<Value> {
    let empty = Map::new();
    let a = template["metadata"]["annotations"]
        .as_object()
        .unwrap_or(&empty);
    let get = |k: &str| a.get(k).and_then(Value::as_str);
    let mut tr = serde_json::Map::new();
    if let Some(v) = get(PODSET_REQUIRED_TOPOLOGY_ANNOTATION) {
        tr.insert("required".into(), json!(v));
    } else if let Some(v) = get(PODSET_PREFERRED_TOPOLOGY_ANNOTATION) {
        tr.insert("preferred".into(), json!(v));
    } else if let Some(v) = get(PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION) {
        tr.insert("unconstrained".into(), json!(go_parse_bool(v).ok()?));
    }
    if let Some(c) = get(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION) {
        let layers: Vec<Value> = serde_json::from_str(c).ok()?;
        if (1..=3).contains(&layers.len()) {
            tr.insert(
                "podsetSliceRequiredTopologyConstraints".into(),
                Value::Array(layers),
            );
        }
    } else if let (Some(level), Some(size)) = (
        get(PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION),
        get(PODSET_SLICE_SIZE_ANNOTATION),
    ) {
        tr.insert("podSetSliceRequiredTopology".into(), json!(level));
        tr.insert("podSetSliceSize".into(), json!(size.parse::<i32>().ok()?));
    }
    if let Some(l) = &ranks.pod_index_label {
        tr.insert("podIndexLabel".into(), json!(l));
    }
    if let Some(l) = &ranks.sub_group_index_label {
        tr.insert("subGroupIndexLabel".into(), json!(l));
    }
    if let Some(n) = ranks.sub_group_count {
        tr.insert("subGroupCount".into(), json!(n));
    }
    if tr.contains_key("required") || tr.contains_key("preferred") {
        if let Some(g) = get(PODSET_GROUP_NAME_ANNOTATION) {
            tr.insert("podSetGroupName".into(), json!(g));
        }
    }
    (!tr.is_empty()).then_some(Value::Object(tr))
}

/// The job's `kueue.x-k8s.io/max-exec-time-seconds`, as its Workload's
/// `spec.maximumExecutionTimeSeconds`.
pub fn max_execution_time(job: &Value) -> Option<i32> {
    label(job, MAX_EXEC_TIME_LABEL).and_then(|s| s.parse::<i32>().ok())
}

/// What Kueue's `EquivalentToWorkload` compares of a pod template: its
/// containers, init containers and tolerations, read through the typed
/// API so both sides drop what the types do not know alike; empty and
/// missing lists are the same.
#[derive(Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Compared {
    #[serde(default)]
    containers: Vec<k8s_openapi::api::core::v1::Container>,
    #[serde(default)]
    init_containers: Vec<k8s_openapi::api::core::v1::Container>,
    #[serde(default)]
    tolerations: Vec<k8s_openapi::api::core::v1::Toleration>,
}

/// A template's `spec.<k>`, absent when missing or null.
fn spec_field<'v>(t: &'v Value, k: &str) -> Option<&'v Value> {
    t.get("spec")
        .and_then(|s| s.get(k))
        .filter(|v| !v.is_null())
}

fn same_template(a: &Value, b: &Value) -> bool {
    let fields = ["containers", "initContainers", "tolerations"];
    // The same text is the same template (a job that did not change).
    if fields.iter().all(|k| spec_field(a, k) == spec_field(b, k)) {
        return true;
    }
    let typed = |t: &Value| <Compared as serde::Deserialize>::deserialize(t.get("spec")?).ok();
    match (typed(a), typed(b)) {
        (Some(x), Some(y)) => x == y,
        // Not readable as the API's types: the text, which differs, decides.
        _ => false,
    }
}

/// The pod sets a Workload recorded, as a job's are read.
pub fn recorded_pod_sets(wl: &crate::api::kueue::v1beta2::Workload) -> Vec<JobPodSet> {
    wl.spec
        .pod_sets
        .iter()
        .flatten()
        .map(|ps| JobPodSet {
            name: ps.name.clone(),
            count: i64::from(ps.count),
            min_count: ps.min_count.map(i64::from),
            template: serde_json::to_value(&ps.template).unwrap_or(Value::Null),
            ranks: Default::default(),
        })
        .collect()
}

/// The UID of the Workload's controller, if it has one.
pub fn controller_of(wl: &crate::api::kueue::v1beta2::Workload) -> Option<&str> {
    wl.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// The merge patch by which a job takes the prebuilt Workload it names
/// (Kueue's `EnsurePrebuiltWorkloadOwnership`): the job becomes its
/// controller (blocking deletion, so the Workload goes with it) beside its
/// other owners, and its UID label is set, conditioned on the Workload's
/// resourceVersion as read.
pub fn adoption(
    wl: &crate::api::kueue::v1beta2::Workload,
    api_version: &str,
    kind: &str,
    name: &str,
    uid: &str,
) -> Value {
    let mut refs: Vec<Value> = wl
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.uid != uid)
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect();
    refs.push(json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }));
    json!({"metadata": {
        "resourceVersion": wl.metadata.resource_version,
        "ownerReferences": refs,
        "labels": {JOB_UID_LABEL: uid},
    }})
}

/// Kueue's `EquivalentToWorkload` for a Workload not holding quota: the
/// same maximum execution time and, pod set by pod set, the same count,
/// `minCount`, containers, init containers and tolerations.
pub fn equivalent(
    job_sets: &[JobPodSet],
    job_max_exec: Option<i32>,
    wl_sets: &[JobPodSet],
    wl_max_exec: Option<i32>,
) -> bool {
    job_max_exec == wl_max_exec
        && job_sets.len() == wl_sets.len()
        && job_sets.iter().zip(wl_sets).all(|(a, b)| {
            a.count == b.count
                && a.min_count == b.min_count
                && same_template(&a.template, &b.template)
        })
}

/// What Kueue's `ensureOneWorkload` does with a job's one Workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// It describes the job.
    Matches,
    /// It no longer does and holds no quota while the job is suspended:
    /// brought up to date in place ("Updated not matching Workload for
    /// suspended job").
    Update,
    /// It no longer does and holds quota, or the job runs: the job is
    /// stopped if it runs, and the Workload deleted ("Deleted not matching
    /// Workload") to be made again from the job.
    Replace,
}

/// Kueue's `EquivalentToWorkload` and what `ensureOneWorkload` does when it
/// fails, for a kind whose pod templates are stored as written, not as the
/// apiserver defaults them, and never carry their admission (the
/// AppWrapper's: its admission sits in `podSetInfos` beside them): the
/// maximum execution time, and pod set by pod set the count, `minCount`,
/// containers and init containers, the tolerations too unless the Workload
/// is admitted. A template matches what the Workload recorded when every
/// value it sets is recorded the same: the Workload's CRD fills defaults in
/// (a port's `protocol: TCP`), which must not read as a change.
pub fn follow(
    job_sets: &[JobPodSet],
    job_max_exec: Option<i32>,
    wl: &crate::api::kueue::v1beta2::Workload,
    suspended: bool,
) -> Follow {
    use crate::api::kueue::v1beta2::{condition, Conditions};
    let conds = Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()));
    let reserved = conds.is_true(condition::QUOTA_RESERVED);
    let same = matches(
        job_sets,
        job_max_exec,
        &recorded_pod_sets(wl),
        wl.spec.maximum_execution_time_seconds,
        conds.is_true(condition::ADMITTED),
    );
    match (same, suspended && !reserved) {
        (true, _) => Follow::Matches,
        (false, true) => Follow::Update,
        (false, false) => Follow::Replace,
    }
}

/// [`follow`]'s comparison of a job's pod sets with those a Workload
/// recorded (`wl_sets`): the maximum execution time, and pod set by pod
/// set the count, `minCount`, containers and init containers, the
/// tolerations too unless it is `admitted`; a template matches when every
/// value it sets is recorded the same.
pub fn matches(
    job_sets: &[JobPodSet],
    job_max_exec: Option<i32>,
    wl_sets: &[JobPodSet],
    wl_max_exec: Option<i32>,
    admitted: bool,
) -> bool {
    let fields: &[&str] = if admitted {
        &["containers", "initContainers"]
    } else {
        &["containers", "initContainers", "tolerations"]
    };
    job_max_exec == wl_max_exec
        && job_sets.len() == wl_sets.len()
        && job_sets.iter().zip(wl_sets).all(|(a, b)| {
            a.count == b.count
                && a.min_count == b.min_count
                && fields.iter().all(|k| {
                    let empty = Value::Array(Vec::new());
                    let asked = spec_field(&a.template, k).unwrap_or(&empty);
                    let kept = spec_field(&b.template, k).unwrap_or(&empty);
                    covers(kept, asked)
                })
        })
}

/// Kueue's `expectedRunningPodSets`: the pod sets a Workload recorded, each
/// at the count its admission gave it (a partial admission's lower one).
pub fn admitted_pod_sets(wl: &crate::api::kueue::v1beta2::Workload) -> Vec<JobPodSet> {
    let assignments = wl
        .status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .and_then(|a| a.pod_set_assignments.as_deref())
        .unwrap_or_default();
    let mut sets = recorded_pod_sets(wl);
    for ps in &mut sets {
        if let Some(count) = assignments
            .iter()
            .find(|a| a.name == ps.name)
            .and_then(|a| a.count)
        {
            ps.count = i64::from(count);
        }
    }
    sets
}

/// Does the job still carry an admission (a pod template with the
/// `kueue.x-k8s.io/podset` label every start adds, or a filled admission
/// patch entry), so that its templates are to be put back as its Workload
/// recorded them?
pub fn carries_admission(policy: &Policy, job: &Value) -> bool {
    if let Some(target) = &policy.admission_patch {
        // Its admission lives in its own patch entry (TrainJob's).
        let mut ops = Vec::new();
        target.restore(job, &mut ops);
        return !ops.is_empty();
    }
    let Ok(sets) = policy.pod_sets(job) else {
        return false;
    };
    sets.iter().any(|ps| {
        let labels = match &ps.pod_set_info {
            Some(t) => t.labels.resolve(job),
            None => ps
                .template
                .resolve(job)
                .and_then(|t| t.at("/metadata/labels")),
        };
        labels.and_then(|l| l.get(PODSET_LABEL)).is_some()
    })
}

/// Every value `asked` sets is in `kept` at the same place (lists of the
/// same length, element by element); `kept` may add fields.
fn covers(kept: &Value, asked: &Value) -> bool {
    match (kept, asked) {
        (Value::Object(k), Value::Object(a)) => a
            .iter()
            .all(|(key, v)| v.is_null() || k.get(key).is_some_and(|kv| covers(kv, v))),
        (Value::Array(k), Value::Array(a)) => {
            k.len() == a.len() && k.iter().zip(a).all(|(kv, av)| covers(kv, av))
        }
        _ => kept == asked,
    }
}

/// What a Workload's spec needs when its job's
/// `kueue.x-k8s.io/priority-class` label names another class than its
/// `priorityClassRef` (Kueue's `UpdateWorkloadPriority`, run on every pass
/// of its job reconciler, admitted or not): the ref and the value,
/// resolved again from the job. `None` when nothing changes, and for a
/// Workload whose priority came from a pod PriorityClass or that reserved
/// quota without a ref (`reserved`: its `QuotaReserved` is true; the CRD's
/// rules refuse adding one then). A class
/// whose value alone changed is the WorkloadPriorityClass controller's
/// part, not this.
pub fn priority_update(
    policy: &Policy,
    job: &Value,
    classes: &PriorityClasses,
    wl: &crate::api::kueue::v1beta2::Workload,
    reserved: bool,
) -> Result<Option<Value>, WorkloadError> {
    let current = match &wl.spec.priority_class_ref {
        None if reserved => return Ok(None),
        None => "",
        Some(r) if r.group == "kueue.x-k8s.io" && r.kind == "WorkloadPriorityClass" => &r.name,
        Some(_) => return Ok(None),
    };
    if current == label(job, PRIORITY_CLASS_LABEL).unwrap_or("") {
        return Ok(None);
    }
    let prio = priority(policy, job, classes)?;
    let mut spec = json!({});
    set_priority(&mut spec, &prio);
    if prio.source == PrioritySource::None {
        if reserved {
            return Ok(None);
        }
        spec["priorityClassRef"] = Value::Null;
    }
    Ok(Some(spec))
}

/// A Workload spec's `priority` and `priorityClassRef`, as Kueue writes them.
pub fn set_priority(spec: &mut Value, prio: &Priority) {
    spec["priority"] = json!(prio.value);
    match &prio.source {
        PrioritySource::WorkloadPriorityClass(n) => {
            spec["priorityClassRef"] =
                json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": n});
        }
        PrioritySource::PriorityClass(n) => {
            spec["priorityClassRef"] =
                json!({"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": n});
        }
        PrioritySource::None => {}
    }
}

/// What an admission adds to one pod set's template (Kueue's `PodSetInfo`):
/// the flavors' node labels and tolerations, the pod set and queue labels,
/// and what the admission checks ask for (`podSetUpdates`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSetInfo {
    pub name: String,
    /// The admitted count (`podSetAssignments[].count`), which a kind with
    /// partial admission runs at.
    pub count: Option<i64>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Value>,
    /// Scheduling gate names the pods start with (the topology gate of a
    /// pod set placed by topology-aware scheduling).
    pub scheduling_gates: Vec<String>,
}

/// The admission checks' `podSetUpdates` added to each pod set's info,
/// check by check (Kueue's `PodSetInfo.Merge` of `podset.FromUpdate`): a
/// key set to another value than the admission's own or an earlier
/// check's is a conflict, in Kueue's words.
pub fn with_check_updates(
    infos: &mut [PodSetInfo],
    checks: &[crate::api::kueue::v1beta2::AdmissionCheckState],
) -> Result<(), WorkloadError> {
    for info in infos.iter_mut() {
        for check in checks {
            let Some(u) = check
                .pod_set_updates
                .iter()
                .flatten()
                .find(|u| u.name == info.name)
            else {
                continue;
            };
            let in_check = |e: WorkloadError| WorkloadError::InCheck {
                check: check.name.clone(),
                inner: Box::new(e),
            };
            for (what, from, to) in [
                ("annotations", &u.annotations, &mut info.annotations),
                ("labels", &u.labels, &mut info.labels),
                ("nodeSelector", &u.node_selector, &mut info.node_selector),
            ] {
                let from = from.iter().flatten();
                if let Some((k, v)) = from
                    .clone()
                    .find(|(k, v)| to.get(*k).is_some_and(|o| o != *v))
                {
                    return Err(in_check(WorkloadError::Conflict {
                        what,
                        key: k.clone(),
                        ours: to[k].clone(),
                        theirs: v.clone(),
                    }));
                }
                for (k, v) in from {
                    to.insert(k.clone(), v.clone());
                }
            }
            for t in u.tolerations.iter().flatten() {
                let t = serde_json::to_value(t).map_err(|e| {
                    in_check(WorkloadError::PodSets {
                        field: "podSetUpdates[].tolerations".into(),
                        message: e.to_string(),
                    })
                })?;
                if !info.tolerations.contains(&t) {
                    info.tolerations.push(t);
                }
            }
        }
    }
    Ok(())
}

/// `current` scheduling gates with the named gates it lacks appended, or
/// `None` when it has them all.
pub(crate) fn with_gates<S: AsRef<str>>(
    current: Option<&Value>,
    names: &[S],
) -> Option<Vec<Value>> {
    let mut gates = match current {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    let before = gates.len();
    for n in names {
        let n = n.as_ref();
        if !gates
            .iter()
            .any(|g| g.get("name").and_then(Value::as_str) == Some(n))
        {
            gates.push(json!({ "name": n }));
        }
    }
    (gates.len() != before).then_some(gates)
}

/// `current` tolerations with those of `extra` it lacks appended, or `None`
/// when it has them all (nothing to write).
pub(crate) fn with_tolerations(current: Option<&Value>, extra: &[Value]) -> Option<Vec<Value>> {
    let mut tolerations = match current {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    let before = tolerations.len();
    for t in extra {
        if !tolerations.contains(t) {
            tolerations.push(t.clone());
        }
    }
    (tolerations.len() != before).then_some(tolerations)
}

/// The patch that starts an admitted job: each template gets its pod set's
/// info merged in (additively: an existing different value is a conflict),
/// then the suspend switch is turned off. The first operation tests the
/// job's `resourceVersion`, so a job changed since it was read is not
/// started from stale data.
pub fn start_patch(
    policy: &Policy,
    job: &Value,
    infos: &[PodSetInfo],
) -> Result<Vec<PatchOp>, WorkloadError> {
    let sets = policy.pod_sets(job).map_err(|e| WorkloadError::PodSets {
        field: e.field,
        message: e.message,
    })?;
    if sets.len() != infos.len() {
        return Err(WorkloadError::PodSetCount {
            expected: sets.len(),
            got: infos.len(),
        });
    }
    let mut ops = version_test(job);
    if let Some(target) = &policy.admission_patch {
        // The templates are another object's: the infos go into the job's
        // own patch entry (Kueue's TrainJob `RunWithPodSetsInfo`).
        let entries: Vec<InfoEntry<'_>> = sets
            .iter()
            .zip(infos)
            .map(|(ps, i)| InfoEntry {
                name: &ps.name,
                labels: &i.labels,
                annotations: &i.annotations,
                node_selector: &i.node_selector,
                tolerations: &i.tolerations,
            })
            .collect();
        // In two writes, as Kueue does: the trainer's webhook lets the
        // patches change only while the new object is suspended, so the
        // switch is turned off once the entry holds the infos.
        let tested = ops.len();
        target.start(job, &entries, &mut ops);
        if ops.len() == tested {
            let _ = patch::set(job, &policy.suspend, Value::Bool(false), &mut ops);
        }
        return Ok(ops);
    }
    for (ps, info) in sets.iter().zip(infos) {
        if let Some(t) = &ps.pod_set_info {
            // Fields the operator builds the pods from (a Spark role's
            // `nodeSelector`, `labels`...): merged as into a template.
            for (ptr, what, add) in [
                (&t.labels, "labels", &info.labels),
                (&t.annotations, "annotations", &info.annotations),
                (&t.node_selector, "nodeSelector", &info.node_selector),
            ] {
                for (k, v) in missing_entries(ptr.resolve(job), what, add)? {
                    let escaped = k.replace('~', "~0").replace('/', "~1");
                    if let Ok(p) = Pointer::parse(&format!("{}/{escaped}", ptr.as_str())) {
                        let _ = patch::set(job, &p, Value::String(v.clone()), &mut ops);
                    }
                }
            }
            if let Some(tolerations) =
                with_tolerations(t.tolerations.resolve(job), &info.tolerations)
            {
                let _ = patch::set(job, &t.tolerations, Value::Array(tolerations), &mut ops);
            }
            continue;
        }
        // A synthesized template is the operator's to create: it counts for
        // quota but there is nothing in the object to merge into (as Kueue).
        let Some(template) = ps.template.resolve(job) else {
            continue;
        };
        merge_map(
            job,
            &ps.template,
            template,
            "/metadata/labels",
            "labels",
            &info.labels,
            &mut ops,
        )?;
        merge_map(
            job,
            &ps.template,
            template,
            "/metadata/annotations",
            "annotations",
            &info.annotations,
            &mut ops,
        )?;
        merge_map(
            job,
            &ps.template,
            template,
            "/spec/nodeSelector",
            "nodeSelector",
            &info.node_selector,
            &mut ops,
        )?;
        if let Some(tolerations) =
            with_tolerations(template.at("/spec/tolerations"), &info.tolerations)
        {
            set_at(
                job,
                &ps.template,
                "/spec/tolerations",
                Value::Array(tolerations),
                &mut ops,
            );
        }
        if let Some(gates) =
            with_gates(template.at("/spec/schedulingGates"), &info.scheduling_gates)
        {
            set_at(
                job,
                &ps.template,
                "/spec/schedulingGates",
                Value::Array(gates),
                &mut ops,
            );
        }
        // Kueue's `RunWithPodSetsInfo`: a job that asked for partial
        // admission runs the admitted count.
        if let (Some(rule), Some(_), Some(count)) =
            (&ps.partial_admission, ps.min_count, info.count)
        {
            for field in rule.fields(job) {
                let _ = patch::set(job, field, json!(count), &mut ops);
            }
        }
    }
    let _ = patch::set(job, &policy.suspend, Value::Bool(false), &mut ops);
    Ok(ops)
}

/// The patch that stops a job: the suspend switch on, nothing else. Pod
/// templates can only be restored once the job is suspended (the apiserver
/// refuses scheduling changes to a running Job), see [`restore_patch`].
pub fn suspend_patch(policy: &Policy, job: &Value) -> Vec<PatchOp> {
    let mut ops = version_test(job);
    let tested = ops.len();
    let _ = patch::set(job, &policy.suspend, Value::Bool(true), &mut ops);
    if ops.len() == tested {
        ops.clear();
    }
    ops
}

/// Puts each template's labels, annotations, node selector and tolerations
/// back as the Workload recorded them at creation (Kueue's
/// `RestorePodSetsInfo`), by pod set name. Empty when nothing differs.
pub fn restore_patch(policy: &Policy, job: &Value, recorded: &[JobPodSet]) -> Vec<PatchOp> {
    let Ok(sets) = policy.pod_sets(job) else {
        return Vec::new();
    };
    let mut ops = version_test(job);
    let tested = ops.len();
    if let Some(target) = &policy.admission_patch {
        target.restore(job, &mut ops);
    }
    for ps in &sets {
        let Some(orig) = recorded.iter().find(|r| r.name == ps.name) else {
            continue;
        };
        if let Some(t) = &ps.pod_set_info {
            // Kueue's Spark `RestorePodSetsInfo`: each field as the
            // Workload's template has it, when the template built from the
            // job now differs there (so a job never started is not written).
            let now = ps.synthesize.map(|h| synthesize(h, job));
            for (ptr, field) in [
                (&t.labels, "/metadata/labels"),
                (&t.annotations, "/metadata/annotations"),
                (&t.node_selector, "/spec/nodeSelector"),
                (&t.tolerations, "/spec/tolerations"),
            ] {
                let want = orig.template.at(field).filter(|v| !is_empty(v));
                let built = now
                    .as_ref()
                    .and_then(|t| t.at(field))
                    .filter(|v| !is_empty(v));
                let have = ptr.resolve(job).filter(|v| !is_empty(v));
                if want == built || want == have {
                    continue;
                }
                match want {
                    Some(v) => {
                        let _ = patch::set(job, ptr, v.clone(), &mut ops);
                    }
                    None => ops.push(PatchOp {
                        op: "remove",
                        path: ptr.as_str().to_string(),
                        value: Value::Null,
                    }),
                }
            }
            continue;
        }
        // Kueue's `RestorePodSetsInfo`: a job started at a reduced count
        // gets the Workload's count back. Only when its count differs (Kueue
        // writes it whenever the field differs, which for a Job whose
        // completions are below its parallelism would also lower the
        // parallelism of a job that never ran reduced).
        if let (Some(rule), Some(_)) = (&ps.partial_admission, ps.min_count) {
            if ps.count != orig.count {
                for field in rule.fields(job) {
                    let _ = patch::set(job, field, json!(orig.count), &mut ops);
                }
            }
        }
        let Some(current) = ps.template.resolve(job) else {
            continue;
        };
        for field in [
            "/metadata/labels",
            "/metadata/annotations",
            "/spec/nodeSelector",
            "/spec/tolerations",
            "/spec/schedulingGates",
        ] {
            let want = orig.template.at(field).filter(|v| !is_empty(v));
            let have = current.at(field).filter(|v| !is_empty(v));
            if want == have {
                continue;
            }
            let path = format!("{}{field}", ps.template.as_str());
            match want {
                Some(v) => set_at(job, &ps.template, field, v.clone(), &mut ops),
                None => ops.push(PatchOp {
                    op: "remove",
                    path,
                    value: Value::Null,
                }),
            }
        }
    }
    if ops.len() == tested {
        ops.clear();
    }
    ops
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// A `test` of the object's `resourceVersion` (none when it has none), to
/// open a patch that must not land on a changed object.
pub(crate) fn version_test(job: &Value) -> Vec<PatchOp> {
    match job.at("/metadata/resourceVersion") {
        Some(rv @ Value::String(_)) => vec![PatchOp {
            op: "test",
            path: "/metadata/resourceVersion".into(),
            value: rv.clone(),
        }],
        _ => Vec::new(),
    }
}

fn set_at(job: &Value, template: &Pointer, rel: &str, value: Value, ops: &mut Vec<PatchOp>) {
    if let Ok(p) = Pointer::parse(&format!("{}{rel}", template.as_str())) {
        let _ = patch::set(job, &p, value, ops);
    }
}

fn merge_map(
    job: &Value,
    template_ptr: &Pointer,
    template: &Value,
    rel: &str,
    what: &'static str,
    add: &BTreeMap<String, String>,
    ops: &mut Vec<PatchOp>,
) -> Result<(), WorkloadError> {
    for (k, v) in missing_entries(template.at(rel), what, add)? {
        let escaped = k.replace('~', "~0").replace('/', "~1");
        set_at(
            job,
            template_ptr,
            &format!("{rel}/{escaped}"),
            Value::String(v.clone()),
            ops,
        );
    }
    Ok(())
}

/// The entries of `add` that the string map `existing` lacks; an entry it
/// has with another value is a conflict (as Kueue's pod set merge refuses
/// it).
pub(crate) fn missing_entries<'a>(
    existing: Option<&Value>,
    what: &'static str,
    add: &'a BTreeMap<String, String>,
) -> Result<Vec<(&'a String, &'a String)>, WorkloadError> {
    let existing = existing.and_then(Value::as_object);
    let mut missing = Vec::new();
    for (k, v) in add {
        match existing.and_then(|m| m.get(k)) {
            Some(Value::String(cur)) if cur == v => {}
            Some(other) => {
                return Err(WorkloadError::Conflict {
                    what,
                    key: k.clone(),
                    ours: other
                        .as_str()
                        .map_or_else(|| other.to_string(), String::from),
                    theirs: v.clone(),
                })
            }
            None => missing.push((k, v)),
        }
    }
    Ok(missing)
}

/// Applies patch operations to a copy of `doc` (for tests and for checking
/// a patch before sending it).
pub fn apply(doc: &Value, ops: &[PatchOp]) -> Result<Value, String> {
    let p: json_patch::Patch =
        serde_json::from_value(serde_json::to_value(ops).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let mut out = doc.clone();
    json_patch::patch(&mut out, &p).map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn owned_only_by_an_owner_reference_with_the_uid() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let r = |uid: &str| OwnerReference {
            uid: uid.into(),
            name: "same-name".into(),
            ..Default::default()
        };
        assert!(is_owned_by(Some(&[r("a"), r("b")]), "b"));
        assert!(!is_owned_by(Some(&[r("a")]), "b"), "the name is not enough");
        assert!(!is_owned_by(Some(&[]), "b"));
        assert!(!is_owned_by(None, "b"));
        assert!(!is_owned_by(Some(&[r("")]), ""), "no UID, no owner");
    }

    use super::*;
    use crate::jobs::policy::PolicySet;
    use crate::vocabulary::keys::PODSET_LABEL;

    fn job_policy() -> std::sync::Arc<Policy> {
        let set = PolicySet::embedded().unwrap();
        let p = set.iter().find(|p| p.target.kind == "Job").unwrap().clone();
        p
    }

    fn job() -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "sample", "namespace": "ns", "uid": "6f1c3ad2-0000-4000-8000-000000000001",
                         "resourceVersion": "42",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq", "team": "a"}},
            "spec": {"parallelism": 3, "completions": 5, "suspend": true,
                     "x-unknown": {"kept": [1, 2]},
                     "template": {"metadata": {"labels": {"app": "x"}, "finalizers": ["f"]},
                                  "spec": {"nodeSelector": {"disk": "ssd"},
                                           "containers": [{"name": "c", "image": "i",
                                                           "resources": {"requests": {"cpu": "1"}}}]}}}
        })
    }

    #[test]
    fn workload_names_follow_kueue() {
        // Same inputs as Kueue's: sha1("Job\nbatch\nsample\n<uid>")[:5].
        let n = name_for(
            "Job",
            "batch",
            "sample",
            "6f1c3ad2-0000-4000-8000-000000000001",
        );
        assert!(n.starts_with("job-sample-"), "{n}");
        assert_eq!(n.len(), "job-sample-".len() + 5);
        // Deterministic and uid-sensitive.
        assert_eq!(
            n,
            name_for(
                "Job",
                "batch",
                "sample",
                "6f1c3ad2-0000-4000-8000-000000000001"
            )
        );
        assert_ne!(n, name_for("Job", "batch", "sample", "other"));
        // printf 'Job\nbatch\na\nb' | sha1sum → 7a412547…
        assert_eq!(name_for("Job", "batch", "a", "b"), "job-a-7a412");
        let long = "x".repeat(300);
        let n = name_for("Job", "batch", &long, "u");
        assert_eq!(n.len(), 253);
    }

    #[test]
    fn the_workload_records_the_job() {
        let p = job_policy();
        let wl = for_job(
            &p,
            &job(),
            &Priority {
                value: 7,
                source: PrioritySource::WorkloadPriorityClass("high".into()),
            },
        )
        .unwrap();
        assert_eq!(wl["spec"]["queueName"], "lq");
        // jobframework's NewWorkload (pkg/controller/jobframework/utils.go,
        // checked by reconciler_test.go's expected Workloads).
        assert_eq!(
            wl["metadata"]["finalizers"],
            json!(["kueue.x-k8s.io/resource-in-use"])
        );
        assert_eq!(wl["spec"]["priority"], 7);
        assert_eq!(
            wl["spec"]["priorityClassRef"]["kind"],
            "WorkloadPriorityClass"
        );
        assert_eq!(wl["spec"]["podSets"][0]["name"], "main");
        assert_eq!(wl["spec"]["podSets"][0]["count"], 3);
        // Only labels and annotations of the template metadata are kept.
        assert_eq!(
            wl["spec"]["podSets"][0]["template"]["metadata"],
            json!({"labels": {"app": "x"}})
        );
        assert_eq!(
            wl["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"],
            json!({"disk": "ssd"})
        );
        let owner = &wl["metadata"]["ownerReferences"][0];
        assert_eq!(owner["controller"], true);
        assert_eq!(owner["kind"], "Job");
        assert_eq!(owner["apiVersion"], "batch/v1");
        assert_eq!(
            wl["metadata"]["labels"][JOB_UID_LABEL],
            "6f1c3ad2-0000-4000-8000-000000000001"
        );
    }

    #[test]
    fn priority_of_given_templates_takes_the_first_named_pod_class() {
        let mut classes = PriorityClasses::default();
        classes.pod.insert("batch-high".into(), 1000);
        classes.workload.insert("urgent".into(), 50);
        let plain = json!({"spec": {"containers": []}});
        let named = json!({"spec": {"priorityClassName": "batch-high"}});
        let obj = json!({"metadata": {"labels": {}}});
        let p = priority_of(&obj, &[&plain, &named], &classes).unwrap();
        assert_eq!(p.value, 1000);
        assert_eq!(p.source, PrioritySource::PriorityClass("batch-high".into()));
        let labelled = json!({"metadata": {"labels": {PRIORITY_CLASS_LABEL: "urgent"}}});
        let p = priority_of(&labelled, &[&named], &classes).unwrap();
        assert_eq!(p.value, 50);
        let mut spec = json!({});
        set_priority(&mut spec, &p);
        assert_eq!(
            spec,
            json!({"priority": 50, "priorityClassRef":
                   {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "urgent"}})
        );
        assert_eq!(priority_of(&obj, &[&plain], &classes).unwrap().value, 0);
    }

    #[test]
    fn priority_comes_from_the_label_then_the_pod_class_then_the_default() {
        let p = job_policy();
        let mut classes = PriorityClasses::default();
        classes.workload.insert("high".into(), 1000);
        classes.pod.insert("pc".into(), 50);
        classes.pod.insert("dflt".into(), 5);
        let mut j = job();
        assert_eq!(priority(&p, &j, &classes).unwrap().value, 0);
        classes.global_default = Some("dflt".into());
        assert_eq!(priority(&p, &j, &classes).unwrap().value, 5);
        j["spec"]["template"]["spec"]["priorityClassName"] = json!("pc");
        assert_eq!(priority(&p, &j, &classes).unwrap().value, 50);
        j["metadata"]["labels"][PRIORITY_CLASS_LABEL] = json!("high");
        assert_eq!(
            priority(&p, &j, &classes).unwrap(),
            Priority {
                value: 1000,
                source: PrioritySource::WorkloadPriorityClass("high".into())
            }
        );
        j["metadata"]["labels"][PRIORITY_CLASS_LABEL] = json!("missing");
        assert_eq!(
            priority(&p, &j, &classes).unwrap_err().to_string(),
            "workloadPriorityClass \"missing\" not found"
        );
    }

    fn info() -> PodSetInfo {
        PodSetInfo {
            name: "main".into(),
            count: Some(3),
            labels: [(PODSET_LABEL.to_string(), "main".to_string())].into(),
            node_selector: [("instance-type".to_string(), "on-demand".to_string())].into(),
            tolerations: vec![json!({"key": "spot", "operator": "Exists", "effect": "NoSchedule"})],
            ..PodSetInfo::default()
        }
    }

    /// Kueue v0.19.2 pkg/controller/jobs/job/job_controller_test.go
    /// TestReconciler "when workload is admitted the PodSetUpdates are
    /// propagated to job" ("ac-key": "ac-value" reaches the template) and
    /// "when workload is admitted and PodSetUpdates
    /// conflict between admission checks on labels, the workload is
    /// finished with failure" (this message).
    #[test]
    fn check_updates_are_started_with_the_job() {
        use crate::api::kueue::v1beta2::{AdmissionCheckState, PodSetUpdate};
        let check = |name: &str, key: &str, value: &str| AdmissionCheckState {
            name: name.into(),
            state: "Ready".into(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
            message: String::new(),
            requeue_after_seconds: None,
            retry_count: None,
            pod_set_updates: Some(vec![PodSetUpdate {
                name: "main".into(),
                labels: Some([(key.to_string(), value.to_string())].into()),
                annotations: Some([("provreq".to_string(), "pr-1".to_string())].into()),
                node_selector: Some([("pool".to_string(), "new".to_string())].into()),
                tolerations: None,
            }]),
        };
        let mut infos = vec![info()];
        with_check_updates(&mut infos, &[check("check1", "ac-key", "ac-value")]).unwrap();
        assert_eq!(infos[0].node_selector["pool"], "new");
        let job = job();
        let started = apply(&job, &start_patch(&job_policy(), &job, &infos).unwrap()).unwrap();
        let t = &started["spec"]["template"];
        assert_eq!(t["metadata"]["annotations"]["provreq"], "pr-1");
        assert_eq!(t["metadata"]["labels"]["ac-key"], "ac-value");
        assert_eq!(t["spec"]["nodeSelector"]["pool"], "new");
        let err = with_check_updates(
            &mut [info()],
            &[
                check("check1", "ac-key", "ac-value1"),
                check("check2", "ac-key", "ac-value2"),
            ],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"in admission check "check2": invalid admission check PodSetUpdate: conflict for labels: conflict for key=ac-key, value1=ac-value1, value2=ac-value2"#
        );
    }

    #[test]
    fn starting_adds_the_flavor_and_unsuspends() {
        let p = job_policy();
        let j = job();
        let ops = start_patch(&p, &j, &[info()]).unwrap();
        assert_eq!(ops[0].op, "test");
        let started = apply(&j, &ops).unwrap();
        assert_eq!(started["spec"]["suspend"], false);
        let t = &started["spec"]["template"];
        assert_eq!(t["metadata"]["labels"][PODSET_LABEL], "main");
        assert_eq!(t["metadata"]["labels"]["app"], "x");
        assert_eq!(
            t["spec"]["nodeSelector"],
            json!({"disk": "ssd", "instance-type": "on-demand"})
        );
        assert_eq!(t["spec"]["tolerations"][0]["key"], "spot");
        // Nothing else moved.
        assert_eq!(started["spec"]["x-unknown"], j["spec"]["x-unknown"]);
        assert_eq!(t["metadata"]["finalizers"], json!(["f"]));
        // Starting twice adds nothing twice.
        let again = start_patch(&p, &started, &[info()]).unwrap();
        assert!(again.iter().all(|o| o.op == "test"), "{again:?}");
    }

    #[test]
    fn a_conflicting_node_selector_is_refused_with_kueues_words() {
        let p = job_policy();
        let mut j = job();
        j["spec"]["template"]["spec"]["nodeSelector"]["instance-type"] = json!("spot");
        let err = start_patch(&p, &j, &[info()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=instance-type, value1=spot, value2=on-demand"
        );
        let err = start_patch(&p, &j, &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid podset infos: expecting 1 podset, got 0"
        );
    }

    #[test]
    fn stopping_suspends_then_restores_what_the_workload_recorded() {
        let p = job_policy();
        let original = job();
        let recorded = pod_sets(&p, &original).unwrap();
        let started = apply(&original, &start_patch(&p, &original, &[info()]).unwrap()).unwrap();
        let suspended = apply(&started, &suspend_patch(&p, &started)).unwrap();
        assert_eq!(suspended["spec"]["suspend"], true);
        assert!(suspend_patch(&p, &suspended).is_empty());
        let restored = apply(&suspended, &restore_patch(&p, &suspended, &recorded)).unwrap();
        assert_eq!(restored, original);
        assert!(restore_patch(&p, &restored, &recorded).is_empty());
    }

    fn min_parallelism_job(min: &str, sync_completions: bool) -> Value {
        let mut j = job();
        j["spec"]["parallelism"] = json!(4);
        j["spec"]["completions"] = json!(4);
        j["metadata"]["annotations"] = json!({"kueue.x-k8s.io/job-min-parallelism": min});
        if sync_completions {
            j["spec"]["completionMode"] = json!("Indexed");
            j["metadata"]["annotations"]["kueue.x-k8s.io/job-completions-equal-parallelism"] =
                json!("true");
        }
        j
    }

    fn reduced(count: i64) -> PodSetInfo {
        PodSetInfo {
            count: Some(count),
            ..info()
        }
    }

    /// Kueue's `TestPodSetTopologyRequestBuilder` shapes, from annotations.
    #[test]
    fn a_pod_template_s_topology_annotations_become_its_topology_request() {
        let t = |a: Value| json!({"metadata": {"annotations": a}});
        let cases = [
            (json!({}), None),
            (
                json!({"kueue.x-k8s.io/podset-required-topology": "rack",
                       "kueue.x-k8s.io/podset-group-name": "g"}),
                Some(json!({"required": "rack", "podSetGroupName": "g"})),
            ),
            (
                json!({"kueue.x-k8s.io/podset-preferred-topology": "block",
                       "kueue.x-k8s.io/podset-slice-required-topology": "rack",
                       "kueue.x-k8s.io/podset-slice-size": "4"}),
                Some(
                    json!({"preferred": "block", "podSetSliceRequiredTopology": "rack",
                            "podSetSliceSize": 4}),
                ),
            ),
            (
                json!({"kueue.x-k8s.io/podset-unconstrained-topology": "true",
                       "kueue.x-k8s.io/podset-group-name": "g"}),
                Some(json!({"unconstrained": true})),
            ),
            (
                json!({"kueue.x-k8s.io/podset-slice-required-topology-constraints":
                       "[{\"topology\":\"block\",\"size\":8},{\"topology\":\"rack\",\"size\":2}]"}),
                Some(json!({"podsetSliceRequiredTopologyConstraints":
                    [{"topology": "block", "size": 8}, {"topology": "rack", "size": 2}]})),
            ),
            // A slice level without a size is no request.
            (
                json!({"kueue.x-k8s.io/podset-slice-required-topology": "rack"}),
                None,
            ),
        ];
        for (annotations, want) in cases {
            assert_eq!(
                topology_request(&t(annotations.clone()), &Ranks::default()),
                want,
                "{annotations}"
            );
        }
        // A kind that ranks its pods always has a request (Kueue's Job and
        // JobSet `PodSets`), the rank labels beside the annotations'.
        let job = Ranks {
            pod_index_label: Some("batch.kubernetes.io/job-completion-index".into()),
            ..Ranks::default()
        };
        assert_eq!(
            topology_request(&json!({}), &job),
            Some(json!({"podIndexLabel": "batch.kubernetes.io/job-completion-index"}))
        );
        let jobset = Ranks {
            sub_group_index_label: Some("jobset.sigs.k8s.io/job-index".into()),
            sub_group_count: Some(3),
            ..job
        };
        assert_eq!(
            topology_request(
                &t(json!({"kueue.x-k8s.io/podset-required-topology": "rack"})),
                &jobset
            ),
            Some(json!({"required": "rack",
                        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
                        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
                        "subGroupCount": 3}))
        );
    }

    /// Kueue's Job `PodSets` (job_controller.go; upstream TestPodSets'
    /// partial-admission case, v0.19.2): `minCount` from the
    /// `job-min-parallelism` annotation (Go's `Atoi`; none when it does not
    /// parse); the Workload carries it.
    #[test]
    fn job_min_parallelism_becomes_the_pod_sets_min_count() {
        let p = job_policy();
        let sets = pod_sets(&p, &min_parallelism_job("2", false)).unwrap();
        assert_eq!((sets[0].count, sets[0].min_count), (4, Some(2)));
        assert_eq!(pod_sets(&p, &job()).unwrap()[0].min_count, None);
        assert_eq!(
            pod_sets(&p, &min_parallelism_job("two", false)).unwrap()[0].min_count,
            None
        );
        let prio = Priority {
            value: 0,
            source: PrioritySource::None,
        };
        let wl = for_job(&p, &min_parallelism_job("2", false), &prio).unwrap();
        assert_eq!(wl["spec"]["podSets"][0]["minCount"], 2);
        let wl = for_job(&p, &job(), &prio).unwrap();
        assert!(wl["spec"]["podSets"][0].get("minCount").is_none());
    }

    /// Kueue's Job `RunWithPodSetsInfo` and `RestorePodSetsInfo`, as
    /// upstream TestPodSetsInfo's "parallelism" case expects them (v0.19.2):
    /// started at the admitted count as parallelism (completions untouched
    /// unless job-completions-equal-parallelism is true), and the
    /// Workload's count put back once stopped.
    #[test]
    fn a_partially_admitted_job_runs_the_admitted_parallelism_and_gets_its_own_back() {
        let p = job_policy();
        let original = min_parallelism_job("2", false);
        let recorded = pod_sets(&p, &original).unwrap();
        let started = apply(
            &original,
            &start_patch(&p, &original, &[reduced(3)]).unwrap(),
        )
        .unwrap();
        assert_eq!(started["spec"]["parallelism"], 3);
        assert_eq!(started["spec"]["completions"], 4);
        assert_eq!(started["spec"]["suspend"], false);
        let suspended = apply(&started, &suspend_patch(&p, &started)).unwrap();
        // Suspending alone: parallelism may not change in the same update
        // (the Job webhook's rule for a running job with partial admission).
        assert_eq!(suspended["spec"]["parallelism"], 3);
        let restored = apply(&suspended, &restore_patch(&p, &suspended, &recorded)).unwrap();
        assert_eq!(restored, original);
        assert!(restore_patch(&p, &restored, &recorded).is_empty());

        let synced = min_parallelism_job("2", true);
        let started = apply(&synced, &start_patch(&p, &synced, &[reduced(2)]).unwrap()).unwrap();
        assert_eq!(
            (
                &started["spec"]["parallelism"],
                &started["spec"]["completions"]
            ),
            (&json!(2), &json!(2))
        );
        let suspended = apply(&started, &suspend_patch(&p, &started)).unwrap();
        let recorded = pod_sets(&p, &synced).unwrap();
        let restored = apply(&suspended, &restore_patch(&p, &suspended, &recorded)).unwrap();
        assert_eq!(restored, synced);
    }

    /// Without the annotation the admitted count is not written, as in
    /// Kueue (`minPodsCount() == nil`).
    #[test]
    fn a_job_without_min_parallelism_keeps_its_parallelism() {
        let p = job_policy();
        let j = job();
        let started = apply(&j, &start_patch(&p, &j, &[reduced(1)]).unwrap()).unwrap();
        assert_eq!(started["spec"]["parallelism"], 3);
    }
}

#[cfg(test)]
mod spark_tests {
    use super::*;
    use crate::jobs::policy::PolicySet;

    fn policy() -> std::sync::Arc<Policy> {
        PolicySet::embedded()
            .unwrap()
            .find("sparkoperator.k8s.io", "v1beta2", "SparkApplication")
            .unwrap()
            .clone()
    }

    fn app() -> Value {
        json!({"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
               "metadata": {"name": "pi", "namespace": "ns", "resourceVersion": "3"},
               "spec": {"mode": "cluster", "suspend": true,
                        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "spark-local-dir-1", "emptyDir": {}}],
                        "driver": {"coreRequest": "500m", "coreLimit": "1", "memory": "512m",
                                   "labels": {"team": "a"},
                                   "volumeMounts": [{"name": "data", "mountPath": "/d"},
                                                    {"name": "spark-local-dir-1", "mountPath": "/tmp"}],
                                   "template": {"metadata": {"annotations": {"x": "y"}},
                                                "spec": {"containers": [{"name": "ignored"}]}}},
                        "executor": {"instances": 3, "coreRequest": "1", "memory": "1g",
                                     "gpu": {"name": "nvidia.com/gpu", "quantity": 1},
                                     "nodeSelector": {"disk": "ssd"}}}})
    }

    /// Kueue's pod sets: driver (1) and executor (instances), each pod
    /// built from the role's fields, not the template's spec.
    #[test]
    fn driver_and_executor_pods_are_built_as_kueue_builds_them() {
        let sets = pod_sets(&policy(), &app()).unwrap();
        let shape: Vec<(&str, i64)> = sets.iter().map(|s| (s.name.as_str(), s.count)).collect();
        assert_eq!(shape, vec![("driver", 1), ("executor", 3)]);
        assert_eq!(
            sets[0].template,
            json!({"metadata": {"labels": {"team": "a"}, "annotations": {"x": "y"}},
                   "spec": {"containers": [{"name": "spark-kubernetes-driver",
                                            "volumeMounts": [{"name": "data", "mountPath": "/d"}],
                                            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"},
                                                          "limits": {"cpu": "1"}}}],
                            "volumes": [{"name": "data", "emptyDir": {}}]}})
        );
        assert_eq!(
            sets[1].template["spec"],
            json!({"containers": [{"name": "spark-kubernetes-executor",
                                   "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                 "limits": {"nvidia.com/gpu": "1"}}}],
                   "nodeSelector": {"disk": "ssd"}})
        );
        let mut none = app();
        none["spec"]["executor"]
            .as_object_mut()
            .unwrap()
            .remove("instances");
        assert_eq!(pod_sets(&policy(), &none).unwrap()[1].count, 0);
        assert_eq!(java_memory("2G"), "2GGi");
        assert_eq!(java_memory("512mb"), "512Mi");
        assert_eq!(java_memory("100"), "100");
    }

    /// Started: each role's own fields get the info; stopped: put back.
    #[test]
    fn admission_goes_into_the_roles_fields_and_comes_back_out() {
        let p = policy();
        let job = app();
        let recorded = pod_sets(&p, &job).unwrap();
        let info = |name: &str| PodSetInfo {
            name: name.into(),
            labels: [("kueue.x-k8s.io/podset".to_string(), name.to_string())].into(),
            node_selector: [("zone".to_string(), "a".to_string())].into(),
            tolerations: vec![json!({"key": "spot", "operator": "Exists"})],
            ..Default::default()
        };
        let started = apply(
            &job,
            &start_patch(&p, &job, &[info("driver"), info("executor")]).unwrap(),
        )
        .unwrap();
        assert_eq!(started["spec"]["suspend"], false);
        assert_eq!(
            started["spec"]["driver"]["labels"],
            json!({"team": "a", "kueue.x-k8s.io/podset": "driver"})
        );
        assert_eq!(
            started["spec"]["driver"]["nodeSelector"],
            json!({"zone": "a"})
        );
        assert_eq!(
            started["spec"]["executor"]["nodeSelector"],
            json!({"disk": "ssd", "zone": "a"})
        );
        assert_eq!(
            started["spec"]["executor"]["tolerations"],
            json!([{"key": "spot", "operator": "Exists"}])
        );
        // The template is left alone.
        assert_eq!(
            started["spec"]["driver"]["template"],
            job["spec"]["driver"]["template"]
        );
        // A node selector the role already sets otherwise is a conflict.
        let mut clash = job.clone();
        clash["spec"]["driver"]["nodeSelector"] = json!({"zone": "b"});
        assert!(start_patch(&p, &clash, &[info("driver"), info("executor")]).is_err());

        let stopped = apply(&started, &suspend_patch(&p, &started)).unwrap();
        let restored = apply(&stopped, &restore_patch(&p, &stopped, &recorded)).unwrap();
        // Kueue's restore writes the Workload's template values: the
        // driver's labels now also hold its template's (none here), the
        // admission's are gone.
        assert_eq!(restored["spec"]["driver"]["labels"], json!({"team": "a"}));
        assert!(restored["spec"]["driver"].get("nodeSelector").is_none());
        assert!(restored["spec"]["executor"].get("tolerations").is_none());
        assert_eq!(
            restored["spec"]["executor"]["nodeSelector"],
            json!({"disk": "ssd"})
        );
        assert_eq!(restored["spec"]["suspend"], true);
        // A queued application never started is not written.
        assert!(restore_patch(&p, &job, &recorded).is_empty());
    }
}

#[cfg(test)]
mod follow_tests {
    use super::*;
    use crate::api::kueue::v1beta2::Workload;

    fn set(template: Value) -> JobPodSet {
        JobPodSet {
            name: "aw-0".into(),
            count: 1,
            min_count: None,
            template,
            ranks: Ranks::default(),
        }
    }

    fn template(cpu: &str, tolerations: Value) -> Value {
        json!({"spec": {"containers": [{"name": "main", "image": "busybox",
            "ports": [{"containerPort": 80}],
            "resources": {"requests": {"cpu": cpu}}}], "tolerations": tolerations}})
    }

    /// A Workload recording `template` as the Workload CRD stores it: the
    /// port's protocol defaulted, with these condition types True.
    fn recorded(template: Value, max: Option<i32>, conds: &[&str]) -> Workload {
        let mut t = template;
        t["spec"]["containers"][0]["ports"][0]["protocol"] = json!("TCP");
        let conditions: Vec<Value> = conds
            .iter()
            .map(|c| {
                json!({"type": c, "status": "True", "reason": "R", "message": "",
                            "lastTransitionTime": "2026-11-30T00:00:00Z"})
            })
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "wl", "namespace": "ns"},
            "spec": {"queueName": "q", "maximumExecutionTimeSeconds": max,
                     "podSets": [{"name": "aw-0", "count": 1, "template": t}]},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn defaults_the_workload_crd_fills_in_are_no_change() {
        let t = template("1", json!([]));
        let wl = recorded(t.clone(), None, &[]);
        assert_eq!(follow(&[set(t)], None, &wl, true), Follow::Matches);
    }

    #[test]
    fn a_suspended_job_s_changed_request_updates_a_workload_without_quota() {
        let wl = recorded(template("1", json!([])), None, &[]);
        let changed = [set(template("2", json!([])))];
        assert_eq!(follow(&changed, None, &wl, true), Follow::Update);
        // Holding quota, it is replaced instead (Kueue's ensureOneWorkload
        // updates only a Workload without a reservation).
        let held = recorded(template("1", json!([])), None, &["QuotaReserved"]);
        assert_eq!(follow(&changed, None, &held, true), Follow::Replace);
        // A running job with no matching Workload is stopped and it replaced.
        let admitted = recorded(
            template("1", json!([])),
            None,
            &["QuotaReserved", "Admitted"],
        );
        assert_eq!(follow(&changed, None, &admitted, false), Follow::Replace);
    }

    #[test]
    fn the_maximum_execution_time_is_part_of_the_match() {
        let t = template("1", json!([]));
        let wl = recorded(t.clone(), None, &[]);
        assert_eq!(
            follow(&[set(t.clone())], Some(60), &wl, true),
            Follow::Update
        );
        let wl = recorded(t.clone(), Some(60), &[]);
        assert_eq!(follow(&[set(t)], Some(60), &wl, true), Follow::Matches);
    }

    #[test]
    fn tolerations_count_until_the_workload_is_admitted() {
        let tol = json!([{"key": "k", "operator": "Exists"}]);
        let pending = recorded(template("1", json!([])), None, &[]);
        let asked = [set(template("1", tol))];
        assert_eq!(follow(&asked, None, &pending, true), Follow::Update);
        let admitted = recorded(
            template("1", json!([])),
            None,
            &["QuotaReserved", "Admitted"],
        );
        assert_eq!(follow(&asked, None, &admitted, false), Follow::Matches);
    }

    #[test]
    fn a_container_added_or_a_pod_set_count_changed_is_a_change() {
        let t = template("1", json!([]));
        let wl = recorded(t.clone(), None, &[]);
        let mut two = t.clone();
        two["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "side", "image": "busybox"}));
        assert_eq!(follow(&[set(two)], None, &wl, true), Follow::Update);
        let mut more = set(t);
        more.count = 3;
        assert_eq!(follow(&[more], None, &wl, true), Follow::Update);
    }
}
