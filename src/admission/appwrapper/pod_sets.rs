//! Where an AppWrapper component's pods are: the path grammar of
//! `podSets[].path`, what counts as a pod template there, the pod sets
//! inferred for the kinds upstream knows, and the consistency of declared
//! and inferred pod sets — with upstream's error texts
//! (`pkg/utils/utils.go`), since users search for them.

use serde_json::{Map, Value};

/// The first element of every path: the component's `template` itself.
const TEMPLATE: &str = "template";

/// Topology-aware scheduling annotations inference puts on pod sets.
pub const TAS_POD_INDEX_LABEL: &str = "workload.codeflare.dev.appwrapper/tas-pod-index-label";
pub const TAS_SUB_GROUP_INDEX_LABEL: &str =
    "workload.codeflare.dev.appwrapper/tas-sub-group-index-label";
pub const TAS_SUB_GROUP_COUNT: &str = "workload.codeflare.dev.appwrapper/tas-sub-group-count";

const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
const JOBSET_JOB_INDEX: &str = "jobset.sigs.k8s.io/job-index";
const KUBEFLOW_REPLICA_INDEX: &str = "training.kubeflow.org/replica-index";

/// A pod set: where its template is and how many pods it runs (absent: 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSet {
    pub path: String,
    pub replicas: Option<i32>,
    pub annotations: Vec<(&'static str, String)>,
}

impl PodSet {
    fn inferred(path: String, replicas: i32) -> Self {
        PodSet {
            path,
            replicas: Some(replicas),
            annotations: Vec::new(),
        }
    }

    /// `utils.Replicas`: absent counts as 1.
    pub fn count(&self) -> i32 {
        self.replicas.unwrap_or(1)
    }
}

/// The value at `path` (`template.spec.replicatedJobs[0].template`) in the
/// component's template, as upstream's `getValueAtPath` walks it — including
/// how it reports the position reached (after an index, the position shows
/// `[n` without its closing bracket, as upstream prints it).
pub fn value_at<'v>(template: &'v Value, path: &str) -> Result<&'v Value, String> {
    let Some(mut remaining) = path.strip_prefix(TEMPLATE) else {
        return Err("first element of the path must be 'template'".into());
    };
    let mut processed = String::from(TEMPLATE);
    let mut cursor = template;
    while !remaining.is_empty() {
        if remaining.starts_with('[') {
            let Some(end) = remaining.find(']') else {
                return Err(format!(
                    "at path position '{processed}' invalid array index '{remaining}'"
                ));
            };
            let expr = &remaining[1..end];
            let Some(index) = go_atoi(expr) else {
                return Err(format!(
                    "at path position '{processed}' invalid index expression '{expr}'"
                ));
            };
            let Value::Array(items) = cursor else {
                return Err(format!(
                    "at path position '{processed}' found non-array value"
                ));
            };
            if index < 0 || index >= items.len() as i64 {
                return Err(format!(
                    "at path position '{processed}' out of bounds index '{index}'"
                ));
            }
            cursor = &items[index as usize];
            processed.push_str(&remaining[..end]);
            remaining = &remaining[end + 1..];
        } else if let Some(rest) = remaining.strip_prefix('.') {
            remaining = rest;
            processed.push('.');
            let mut end = remaining.len();
            if let Some(dot) = remaining.find('.').filter(|&i| i > 0) {
                end = dot;
            }
            if let Some(bracket) = remaining.find('[').filter(|&i| i > 0 && i < end) {
                end = bracket;
            }
            let key = &remaining[..end];
            let Value::Object(map) = cursor else {
                return Err(format!("at path position '{processed}' non-map value"));
            };
            let Some(next) = map.get(key) else {
                return Err(format!(
                    "at path position '{processed}' missing field '{key}'"
                ));
            };
            cursor = next;
            remaining = &remaining[end..];
            processed.push_str(key);
        } else {
            return Err(format!(
                "at path position '{processed}' invalid path element '{remaining}'"
            ));
        }
    }
    Ok(cursor)
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, 64-bit.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `GetRawTemplate`: the object at `path`.
fn raw_template<'v>(template: &'v Value, path: &str) -> Result<&'v Map<String, Value>, String> {
    match value_at(template, path)? {
        Value::Object(m) => Ok(m),
        _ => Err(format!("at path position '{path}' non-map value")),
    }
}

/// `GetPodTemplateSpec`: is there a pod template at `path`? Its `spec` must
/// read as a `v1.PodSpec` strictly: an unknown or misspelled field is an
/// error, as upstream's `FromUnstructuredWithValidation` makes it.
pub fn check_pod_template(template: &Value, path: &str) -> Result<(), String> {
    let candidate = raw_template(template, path)?;
    let Some(Value::Object(spec)) = candidate.get("spec") else {
        return Err(format!("content at {path} does not contain a spec"));
    };
    strict_pod_spec(spec)
        .map_err(|e| format!("content at {path}.spec not parseable as a v1.PodSpec: {e}"))
}

fn strict_pod_spec(spec: &Map<String, Value>) -> Result<(), String> {
    // Quantities may be written as bare numbers (Go's Quantity reads them);
    // k8s-openapi's reads only strings.
    let mut input = Value::Object(spec.clone());
    quantities_as_strings(&mut input, false);
    let parsed: k8s_openapi::api::core::v1::PodSpec = serde_path_to_error::deserialize(&input)
        .map_err(|e| {
            let at = e.path().to_string();
            if at == "." {
                e.inner().to_string()
            } else {
                format!("{at}: {}", e.inner())
            }
        })?;
    let known = serde_json::to_value(&parsed).map_err(|e| e.to_string())?;
    match unknown_field(&input, &known, "") {
        Some(field) => Err(format!("strict decoding error: unknown field \"{field}\"")),
        None => Ok(()),
    }
}

/// Numbers under resource lists (`requests`, `limits`, `overhead`) become
/// the strings k8s-openapi's Quantity reads.
fn quantities_as_strings(v: &mut Value, in_resource_list: bool) {
    match v {
        Value::Number(n) if in_resource_list => *v = Value::String(n.to_string()),
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                let list = matches!(k.as_str(), "requests" | "limits" | "overhead");
                match child {
                    Value::Object(q) if list => {
                        for qv in q.values_mut() {
                            quantities_as_strings(qv, true);
                        }
                    }
                    _ => quantities_as_strings(child, false),
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| quantities_as_strings(i, false)),
        _ => {}
    }
}

/// The first field of `input` the typed read dropped (a null is no field).
fn unknown_field(input: &Value, known: &Value, at: &str) -> Option<String> {
    match (input, known) {
        (Value::Object(i), Value::Object(k)) => i.iter().find_map(|(key, v)| {
            let here = if at.is_empty() {
                key.clone()
            } else {
                format!("{at}.{key}")
            };
            match k.get(key) {
                _ if v.is_null() => None,
                None => Some(here),
                Some(kv) => unknown_field(v, kv, &here),
            }
        }),
        (Value::Array(i), Value::Array(k)) => i
            .iter()
            .zip(k)
            .enumerate()
            .find_map(|(n, (iv, kv))| unknown_field(iv, kv, &format!("{at}[{n}]"))),
        _ => None,
    }
}

/// `inferReplicas`: the integer at `path`, 1 when the field is absent; the
/// object holding it must exist.
fn infer_replicas(template: &Value, path: &str) -> Result<i32, String> {
    let (parent, field) = match path.rfind('.') {
        Some(i) => (Some(&path[..i]), &path[i + 1..]),
        None => (None, path),
    };
    let holder = match parent {
        Some(p) => raw_template(template, p)?,
        None => match template {
            Value::Object(m) => m,
            _ => return Ok(1),
        },
    };
    match holder.get(field) {
        None | Some(Value::Null) => Ok(1),
        Some(v) => go_int(v)
            .ok_or_else(|| format!("at path position '{path}' non-int value {}", go_value(v))),
    }
}

/// `GetReplicas`: the integer at `path`, if there is one.
fn replicas_at(template: &Value, path: &str) -> Option<i32> {
    value_at(template, path).ok().and_then(go_int)
}

/// An integer as Go's unstructured JSON holds it (int64), cut to int32 as
/// upstream casts it.
fn go_int(v: &Value) -> Option<i32> {
    v.as_i64().map(|n| n as i32)
}

/// Go's `%v` of an unstructured value, near enough for messages.
fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What kind a template is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gvk<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
}

impl<'a> Gvk<'a> {
    /// From `apiVersion` (`apps/v1`, `v1`) and `kind`.
    pub fn of(api_version: &'a str, kind: &'a str) -> Self {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        Gvk {
            group,
            version,
            kind,
        }
    }

    fn is(&self, group: &str, version: &str, kind: &str) -> bool {
        self.group == group && self.version == version && self.kind == kind
    }
}

/// `InferPodSets`: the pod sets of the kinds upstream knows (Pod,
/// Deployment, StatefulSet, Job, JobSet, PyTorchJob, RayCluster, RayJob);
/// none for any other kind. Every inferred pod set must hold a pod template.
pub fn infer(gvk: Gvk<'_>, template: &Value) -> Result<Vec<PodSet>, String> {
    let mut sets = Vec::new();
    if gvk.is("", "v1", "Pod") {
        sets.push(PodSet::inferred(TEMPLATE.into(), 1));
    } else if gvk.is("apps", "v1", "Deployment") || gvk.is("apps", "v1", "StatefulSet") {
        let path = "template.spec.template";
        if value_at(template, path).is_ok() {
            let replicas = infer_replicas(template, "template.spec.replicas")?;
            sets.push(PodSet::inferred(path.into(), replicas));
        }
    } else if gvk.is("batch", "v1", "Job") {
        let mut replicas = replicas_at(template, "template.spec.parallelism").unwrap_or(1);
        if let Some(c) = replicas_at(template, "template.spec.completions") {
            replicas = replicas.min(c);
        }
        let mut set = PodSet::inferred("template.spec.template".into(), replicas);
        set.annotations
            .push((TAS_POD_INDEX_LABEL, JOB_COMPLETION_INDEX.into()));
        sets.push(set);
    } else if gvk.is("jobset.x-k8s.io", "v1alpha2", "JobSet") {
        if let Ok(Value::Array(jobs)) = value_at(template, "template.spec.replicatedJobs") {
            for i in 0..jobs.len() {
                let prefix = format!("template.spec.replicatedJobs[{i}]");
                if value_at(template, &format!("{prefix}.template")).is_err() {
                    continue;
                }
                let mut pods =
                    replicas_at(template, &format!("{prefix}.template.spec.parallelism"))
                        .unwrap_or(1);
                if let Some(c) =
                    replicas_at(template, &format!("{prefix}.template.spec.completions"))
                {
                    pods = pods.min(c);
                }
                let replicas = infer_replicas(template, &format!("{prefix}.replicas"))?;
                let mut set = PodSet::inferred(
                    format!("{prefix}.template.spec.template"),
                    replicas.wrapping_mul(pods),
                );
                set.annotations.extend([
                    (TAS_POD_INDEX_LABEL, JOB_COMPLETION_INDEX.to_string()),
                    (TAS_SUB_GROUP_INDEX_LABEL, JOBSET_JOB_INDEX.to_string()),
                    (TAS_SUB_GROUP_COUNT, replicas.to_string()),
                ]);
                sets.push(set);
            }
        }
    } else if gvk.is("kubeflow.org", "v1", "PyTorchJob") {
        for role in ["Master", "Worker"] {
            let prefix = format!("template.spec.pytorchReplicaSpecs.{role}.");
            if value_at(template, &format!("{prefix}{TEMPLATE}")).is_ok() {
                let replicas = infer_replicas(template, &format!("{prefix}replicas"))?;
                let mut set = PodSet::inferred(format!("{prefix}{TEMPLATE}"), replicas);
                set.annotations
                    .push((TAS_POD_INDEX_LABEL, KUBEFLOW_REPLICA_INDEX.into()));
                sets.push(set);
            }
        }
    } else if gvk.is("ray.io", "v1", "RayCluster") {
        sets = infer_ray(template, "template.spec.")?;
    } else if gvk.is("ray.io", "v1", "RayJob") {
        sets = infer_ray(template, "template.spec.rayClusterSpec.")?;
    }
    for s in &sets {
        check_pod_template(template, &s.path)
            .map_err(|e| format!("{} does not refer to a v1.PodSpecTemplate: {e}", s.path))?;
    }
    Ok(sets)
}

fn infer_ray(template: &Value, prefix: &str) -> Result<Vec<PodSet>, String> {
    let mut sets = vec![PodSet::inferred(
        format!("{prefix}headGroupSpec.template"),
        1,
    )];
    if let Ok(Value::Array(workers)) = value_at(template, &format!("{prefix}workerGroupSpecs")) {
        for i in 0..workers.len() {
            let group = format!("{prefix}workerGroupSpecs[{i}].");
            if value_at(template, &format!("{group}{TEMPLATE}")).is_ok() {
                let replicas = infer_replicas(template, &format!("{group}replicas"))?;
                sets.push(PodSet::inferred(format!("{group}{TEMPLATE}"), replicas));
            }
        }
    }
    Ok(sets)
}

/// `ValidatePodSets`: declared pod sets, when there are any, must have
/// distinct paths and, for a kind with inferred pod sets, match them in
/// number, paths and replicas.
pub fn validate(declared: &[PodSet], inferred: &[PodSet]) -> Result<(), String> {
    if declared.is_empty() {
        return Ok(());
    }
    for (i, d) in declared.iter().enumerate() {
        if declared[..i].iter().any(|e| e.path == d.path) {
            return Err(format!("multiple DeclaredPodSets with path '{}'", d.path));
        }
    }
    if inferred.is_empty() {
        return Ok(());
    }
    if declared.len() != inferred.len() {
        return Err(format!(
            "DeclaredPodSet count {} differs from inferred count {}",
            declared.len(),
            inferred.len()
        ));
    }
    for i in inferred {
        let Some(d) = declared.iter().find(|d| d.path == i.path) else {
            return Err(format!("PodSet with path '{}' is missing", i.path));
        };
        if d.count() != i.count() {
            return Err(format!(
                "replica count {} differs from inferred count {} for PodSet at path position '{}'",
                d.count(),
                i.count(),
                i.path
            ));
        }
    }
    Ok(())
}

/// A declared pod set as written (`path` and `replicas`); fields of the
/// wrong type read as absent here (the CRD schema refuses them first).
pub fn declared(v: &Value) -> PodSet {
    PodSet {
        path: v
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        replicas: v.get("replicas").and_then(go_int),
        annotations: Vec::new(),
    }
}
