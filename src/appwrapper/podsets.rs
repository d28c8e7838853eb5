//! Pod sets: where the pod templates of a wrapped object are, how many pods
//! each makes, and what Kueue injects into them. Path walking, what counts
//! as a pod template (a `spec` object, read strictly as a `v1.PodSpec` when
//! asked: [`PodSpecReading`]), inference for known kinds and
//! declared-vs-inferred validation follow upstream's
//! `pkg/utils/utils.go`, with its error texts, since users search for them.
//! Pure functions over `serde_json::Value`, the one implementation both the
//! admission webhook (`crate::admission::appwrapper`) and the lifecycle core
//! use.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::vocabulary::go::go_atoi;

/// TAS annotations written by inference (read by Kueue).
pub const TAS_POD_INDEX_LABEL: &str = "workload.codeflare.dev.appwrapper/tas-pod-index-label";
pub const TAS_SUB_GROUP_INDEX_LABEL: &str =
    "workload.codeflare.dev.appwrapper/tas-sub-group-index-label";
pub const TAS_SUB_GROUP_COUNT: &str = "workload.codeflare.dev.appwrapper/tas-sub-group-count";
const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
const JOBSET_JOB_INDEX: &str = "jobset.sigs.k8s.io/job-index";
const KUBEFLOW_REPLICA_INDEX: &str = "training.kubeflow.org/replica-index";

/// `AppWrapperPodSet` (spec `podSets[]` and status `componentStatus[].podSets[]`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PodSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    pub path: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl PodSet {
    /// `utils.Replicas`: nil counts as 1.
    pub fn replicas(&self) -> i32 {
        self.replicas.unwrap_or(1)
    }
}

/// `AppWrapperPodSetInfo`: what Kueue injects into one pod template.
/// Tolerations and scheduling gates are kept as raw JSON (`v1.Toleration`,
/// `v1.PodSchedulingGate`) so nothing a newer API adds is dropped.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSetInfo {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scheduling_gates: Vec<Value>,
}

/// Upstream's `getValueAtPath`, over a wrapped object (`template` is the
/// object itself), including its quirks: a field name ends at a `.` or `[`
/// found after its first character, and the processed prefix reported after
/// an index omits the closing bracket.
pub fn value_at_path<'a>(obj: &'a Value, path: &str) -> Result<&'a Value, String> {
    let mut processed = String::from("template");
    let Some(mut remaining) = path.strip_prefix("template") else {
        return Err("first element of the path must be 'template'".to_string());
    };
    let mut cursor = obj;
    while !remaining.is_empty() {
        if remaining.starts_with('[') {
            let Some(end) = remaining.find(']') else {
                return Err(format!(
                    "at path position '{processed}' invalid array index '{remaining}'"
                ));
            };
            let expr = &remaining[1..end];
            let Some(index) = go_atoi(expr).ok() else {
                return Err(format!(
                    "at path position '{processed}' invalid index expression '{expr}'"
                ));
            };
            let Some(arr) = cursor.as_array() else {
                return Err(format!(
                    "at path position '{processed}' found non-array value"
                ));
            };
            if index < 0 || index as u64 >= arr.len() as u64 {
                return Err(format!(
                    "at path position '{processed}' out of bounds index '{index}'"
                ));
            }
            cursor = &arr[index as usize];
            processed.push_str(&remaining[..end]);
            remaining = &remaining[end + 1..];
        } else if let Some(rest) = remaining.strip_prefix('.') {
            remaining = rest;
            processed.push('.');
            let mut end = remaining.len();
            if let Some(dot) = remaining.find('.') {
                if dot > 0 {
                    end = dot;
                }
            }
            if let Some(bracket) = remaining.find('[') {
                if bracket > 0 && bracket < end {
                    end = bracket;
                }
            }
            let key = &remaining[..end];
            let Some(map) = cursor.as_object() else {
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

/// The same walk, mutable, for injection. Only called with paths that
/// `value_at_path` accepted.
pub fn value_at_path_mut<'a>(obj: &'a mut Value, path: &str) -> Result<&'a mut Value, String> {
    value_at_path(obj, path)?; // same errors, same quirks
    let mut remaining = path.strip_prefix("template").unwrap_or_default();
    let mut cursor = obj;
    while !remaining.is_empty() {
        if remaining.starts_with('[') {
            let end = remaining.find(']').unwrap_or(remaining.len() - 1);
            let index = go_atoi(&remaining[1..end]).unwrap_or(0) as usize;
            cursor = match cursor {
                Value::Array(a) => a
                    .get_mut(index)
                    .ok_or_else(|| format!("out of bounds index '{index}'"))?,
                _ => return Err("found non-array value".to_string()),
            };
            remaining = &remaining[end + 1..];
        } else {
            remaining = &remaining[1..];
            let mut end = remaining.len();
            if let Some(dot) = remaining.find('.').filter(|&d| d > 0) {
                end = dot;
            }
            if let Some(b) = remaining.find('[').filter(|&b| b > 0 && b < end) {
                end = b;
            }
            let key = &remaining[..end];
            cursor = match cursor {
                Value::Object(m) => m
                    .get_mut(key)
                    .ok_or_else(|| format!("missing field '{key}'"))?,
                _ => return Err("non-map value".to_string()),
            };
            remaining = &remaining[end..];
        }
    }
    Ok(cursor)
}

/// `GetRawTemplate`: the value at `path` must be an object.
pub fn raw_template_at<'a>(obj: &'a Value, path: &str) -> Result<&'a Map<String, Value>, String> {
    value_at_path(obj, path)?
        .as_object()
        .ok_or_else(|| format!("at path position '{path}' non-map value"))
}

/// How much of a pod template's `spec` is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodSpecReading {
    /// Upstream's: `spec` must read as a `v1.PodSpec` strictly, an unknown
    /// or misspelled field is an error (`FromUnstructuredWithValidation`).
    /// The webhook reads templates so.
    Strict,
    /// `spec` must be an object, nothing more. The lifecycle core reads
    /// templates so: the webhook has held them to [`Strict`] at create, and
    /// a field newer than the PodSpec known here must not stop an admitted
    /// AppWrapper (nor be dropped when rendering).
    ///
    /// [`Strict`]: PodSpecReading::Strict
    Structural,
}

/// `GetPodTemplateSpec`: the value at `path` must be an object with a
/// `spec` object, read as `reading` says.
pub fn pod_template_at<'a>(
    obj: &'a Value,
    path: &str,
    reading: PodSpecReading,
) -> Result<&'a Map<String, Value>, String> {
    let template = raw_template_at(obj, path)?;
    let Some(Value::Object(spec)) = template.get("spec") else {
        return Err(format!("content at {path} does not contain a spec"));
    };
    if reading == PodSpecReading::Strict {
        strict_pod_spec(spec)
            .map_err(|e| format!("content at {path}.spec not parseable as a v1.PodSpec: {e}"))?;
    }
    Ok(template)
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

/// Go's `%v` of a decoded JSON value, for `non-int value` messages.
fn go_print(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_string(),
        other => other.to_string(),
    }
}

fn as_int(v: &Value) -> Option<i32> {
    v.as_i64().map(|n| n as i32)
}

/// `GetReplicas`: an integer at `path`, or an error.
fn replicas_at(obj: &Value, path: &str) -> Option<i32> {
    value_at_path(obj, path).ok().and_then(as_int)
}

/// `inferReplicas`: absent → 1, integer → it, anything else → error.
fn infer_replicas(obj: &Value, path: &str) -> Result<i32, String> {
    let (parent, field) = match path.rfind('.') {
        Some(i) => (raw_template_at(obj, &path[..i])?, &path[i + 1..]),
        None => match obj.as_object() {
            Some(m) => (m, path),
            None => return Ok(1),
        },
    };
    match parent.get(field) {
        None | Some(Value::Null) => Ok(1),
        Some(v) => as_int(v)
            .ok_or_else(|| format!("at path position '{path}' non-int value {}", go_print(v))),
    }
}

/// What kind a wrapped object is, as upstream's `GroupVersionKind()` reads
/// `apiVersion` (`apps/v1`, `v1`) and `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gvk<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
}

impl<'a> Gvk<'a> {
    /// From `apiVersion` and `kind`.
    pub fn of(api_version: &'a str, kind: &'a str) -> Self {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        Gvk {
            group,
            version,
            kind,
        }
    }

    /// The object's own `apiVersion` and `kind` (absent or not strings: "").
    pub fn of_object(obj: &'a Value) -> Self {
        let field = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
        Gvk::of(field("apiVersion"), field("kind"))
    }
}

fn ray_pod_sets(obj: &Value, prefix: &str) -> Result<Vec<PodSet>, String> {
    let mut sets = vec![PodSet {
        replicas: Some(1),
        path: format!("{prefix}headGroupSpec.template"),
        annotations: BTreeMap::new(),
    }];
    if let Ok(Value::Array(workers)) = value_at_path(obj, &format!("{prefix}workerGroupSpecs")) {
        for i in 0..workers.len() {
            let wp = format!("{prefix}workerGroupSpecs[{i}].");
            if value_at_path(obj, &format!("{wp}template")).is_ok() {
                let replicas = infer_replicas(obj, &format!("{wp}replicas"))?;
                sets.push(PodSet {
                    replicas: Some(replicas),
                    path: format!("{wp}template"),
                    annotations: BTreeMap::new(),
                });
            }
        }
    }
    Ok(sets)
}

/// Upstream's `InferPodSets` for Pod, Deployment, StatefulSet, Job, JobSet,
/// PyTorchJob, RayCluster and RayJob; other kinds infer nothing. Every
/// inferred path must hold a pod template, read as `reading` says.
pub fn infer_pod_sets(template: &Value, reading: PodSpecReading) -> Result<Vec<PodSet>, String> {
    let ann = |pairs: &[(&str, String)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let mut sets = Vec::new();
    let gvk = Gvk::of_object(template);
    match (gvk.group, gvk.version, gvk.kind) {
        ("batch", "v1", "Job") => {
            let mut replicas = replicas_at(template, "template.spec.parallelism").unwrap_or(1);
            if let Some(c) = replicas_at(template, "template.spec.completions") {
                replicas = replicas.min(c);
            }
            sets.push(PodSet {
                replicas: Some(replicas),
                path: "template.spec.template".into(),
                annotations: ann(&[(TAS_POD_INDEX_LABEL, JOB_COMPLETION_INDEX.into())]),
            });
        }
        ("jobset.x-k8s.io", "v1alpha2", "JobSet") => {
            if let Ok(Value::Array(jobs)) = value_at_path(template, "template.spec.replicatedJobs")
            {
                for i in 0..jobs.len() {
                    let jp = format!("template.spec.replicatedJobs[{i}].");
                    if value_at_path(template, &format!("{jp}template")).is_err() {
                        continue;
                    }
                    let mut pods = replicas_at(template, &format!("{jp}template.spec.parallelism"))
                        .unwrap_or(1);
                    if let Some(c) =
                        replicas_at(template, &format!("{jp}template.spec.completions"))
                    {
                        pods = pods.min(c);
                    }
                    // `GetReplicas` as upstream reads it here: anything but
                    // an integer counts as 1 (no `non-int value` error).
                    let replicas = replicas_at(template, &format!("{jp}replicas")).unwrap_or(1);
                    sets.push(PodSet {
                        replicas: Some(replicas.wrapping_mul(pods)),
                        path: format!("{jp}template.spec.template"),
                        annotations: ann(&[
                            (TAS_POD_INDEX_LABEL, JOB_COMPLETION_INDEX.into()),
                            (TAS_SUB_GROUP_INDEX_LABEL, JOBSET_JOB_INDEX.into()),
                            (TAS_SUB_GROUP_COUNT, replicas.to_string()),
                        ]),
                    });
                }
            }
        }
        ("kubeflow.org", "v1", "PyTorchJob") => {
            for rt in ["Master", "Worker"] {
                let prefix = format!("template.spec.pytorchReplicaSpecs.{rt}.");
                if value_at_path(template, &format!("{prefix}template")).is_ok() {
                    let replicas = infer_replicas(template, &format!("{prefix}replicas"))?;
                    sets.push(PodSet {
                        replicas: Some(replicas),
                        path: format!("{prefix}template"),
                        annotations: ann(&[(TAS_POD_INDEX_LABEL, KUBEFLOW_REPLICA_INDEX.into())]),
                    });
                }
            }
        }
        ("ray.io", "v1", "RayCluster") => sets = ray_pod_sets(template, "template.spec.")?,
        ("ray.io", "v1", "RayJob") => {
            sets = ray_pod_sets(template, "template.spec.rayClusterSpec.")?
        }
        // `template` always resolves to the object itself
        ("", "v1", "Pod") => sets.push(PodSet {
            replicas: Some(1),
            path: "template".into(),
            annotations: BTreeMap::new(),
        }),
        ("apps", "v1", "Deployment") | ("apps", "v1", "StatefulSet")
            if value_at_path(template, "template.spec.template").is_ok() =>
        {
            let replicas = infer_replicas(template, "template.spec.replicas")?;
            sets.push(PodSet {
                replicas: Some(replicas),
                path: "template.spec.template".into(),
                annotations: BTreeMap::new(),
            });
        }
        _ => {}
    }
    for ps in &sets {
        if let Err(e) = pod_template_at(template, &ps.path, reading) {
            return Err(format!(
                "{} does not refer to a v1.PodSpecTemplate: {e}",
                ps.path
            ));
        }
    }
    Ok(sets)
}

/// Upstream's `ValidatePodSets` (declared against inferred).
pub fn validate_pod_sets(declared: &[PodSet], inferred: &[PodSet]) -> Result<(), String> {
    if declared.is_empty() {
        return Ok(());
    }
    let mut by_path: BTreeMap<&str, &PodSet> = BTreeMap::new();
    for p in declared {
        if by_path.insert(p.path.as_str(), p).is_some() {
            return Err(format!("multiple DeclaredPodSets with path '{}'", p.path));
        }
    }
    if !inferred.is_empty() {
        if inferred.len() != declared.len() {
            return Err(format!(
                "DeclaredPodSet count {} differs from inferred count {}",
                declared.len(),
                inferred.len()
            ));
        }
        for ips in inferred {
            let Some(dps) = by_path.get(ips.path.as_str()) else {
                return Err(format!("PodSet with path '{}' is missing", ips.path));
            };
            if ips.replicas() != dps.replicas() {
                return Err(format!(
                    "replica count {} differs from inferred count {} for PodSet at path position '{}'",
                    dps.replicas(),
                    ips.replicas(),
                    ips.path
                ));
            }
        }
    }
    Ok(())
}

/// The pod sets a component contributes: declared if any, else inferred
/// (upstream's `EnsureComponentStatusInitialized`, per component), templates
/// read [`PodSpecReading::Structural`]ly.
pub fn component_pod_sets(declared: &[PodSet], template: &Value) -> Result<Vec<PodSet>, String> {
    if !declared.is_empty() {
        Ok(declared.to_vec())
    } else {
        infer_pod_sets(template, PodSpecReading::Structural)
    }
}

#[cfg(test)]
mod tests {
    use super::{PodSpecReading::*, *};
    use serde_json::json;

    fn pod_spec() -> Value {
        json!({"containers": [{"name": "c", "image": "busybox"}]})
    }

    fn jobset() -> Value {
        json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js"},
            "spec": {"replicatedJobs": [
                {"name": "driver", "template": {"spec": {"template": {"spec": pod_spec()}}}},
                {"name": "workers", "replicas": 2, "template": {"spec": {
                    "parallelism": 2, "completions": 4, "template": {"spec": pod_spec()}}}}
            ]}
        })
    }

    #[test]
    fn path_grammar_errors_match_upstream() {
        let js = jobset();
        let cases: &[(&str, &str)] = &[
            ("spec", "first element of the path must be 'template'"),
            (
                "template.spec.missing",
                "at path position 'template.spec.' missing field 'missing'",
            ),
            (
                "template.spec.replicatedJobs.template",
                "at path position 'template.spec.replicatedJobs.' non-map value",
            ),
            (
                "template.spec.replicatedJobs[0].template[0]",
                "at path position 'template.spec.replicatedJobs[0.template' found non-array value",
            ),
            (
                "template.spec.replicatedJobs[10]",
                "at path position 'template.spec.replicatedJobs' out of bounds index '10'",
            ),
            (
                "template.spec.replicatedJobs[-1]",
                "at path position 'template.spec.replicatedJobs' out of bounds index '-1'",
            ),
            (
                "template.spec.replicatedJobs[a10]",
                "at path position 'template.spec.replicatedJobs' invalid index expression 'a10'",
            ),
            (
                "template.spec.replicatedJobs[1",
                "at path position 'template.spec.replicatedJobs' invalid array index '[1'",
            ),
            (
                "template.spec.replicatedJobs[1]]",
                "at path position 'template.spec.replicatedJobs[1' invalid path element ']'",
            ),
            (
                "templatex",
                "at path position 'template' invalid path element 'x'",
            ),
        ];
        for (path, want) in cases {
            assert_eq!(value_at_path(&js, path).unwrap_err(), *want, "{path}");
        }
        assert!(value_at_path(&js, "template").is_ok());
        assert_eq!(
            value_at_path(&js, "template.spec.replicatedJobs[1].replicas").unwrap(),
            &json!(2)
        );
        assert_eq!(
            pod_template_at(&js, "template.spec.replicatedJobs", Strict).unwrap_err(),
            "at path position 'template.spec.replicatedJobs' non-map value"
        );
        assert_eq!(
            pod_template_at(&js, "template.spec.replicatedJobs[0].template.spec.template.spec", Strict).unwrap_err(),
            "content at template.spec.replicatedJobs[0].template.spec.template.spec does not contain a spec"
        );
        let mut m = js.clone();
        *value_at_path_mut(&mut m, "template.spec.replicatedJobs[1].replicas").unwrap() = json!(5);
        assert_eq!(m["spec"]["replicatedJobs"][1]["replicas"], json!(5));
    }

    #[test]
    fn a_pod_template_spec_is_read_strictly_or_structurally() {
        let d = |spec: Value| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                     "spec": {"template": {"spec": spec}}})
        };
        let at = "template.spec.template";
        // quantities as bare numbers and explicit nulls read as Go reads them
        let ok = d(json!({"containers": [{"name": "c", "image": "busybox",
                                          "resources": {"requests": {"cpu": 1}, "limits": {"memory": "1Gi"}}}],
                          "nodeName": null}));
        assert!(pod_template_at(&ok, at, Strict).is_ok());
        let top = d(json!({"containerz": [], "containers": []}));
        assert_eq!(
            pod_template_at(&top, at, Strict).unwrap_err(),
            "content at template.spec.template.spec not parseable as a v1.PodSpec: strict decoding error: unknown field \"containerz\""
        );
        let nested = d(json!({"containers": [{"name": "c", "imagePullPolicy2": "x"}]}));
        assert_eq!(
            pod_template_at(&nested, at, Strict).unwrap_err(),
            "content at template.spec.template.spec not parseable as a v1.PodSpec: strict decoding error: unknown field \"containers[0].imagePullPolicy2\""
        );
        let typed = d(json!({"containers": "c"}));
        assert!(pod_template_at(&typed, at, Strict)
            .unwrap_err()
            .starts_with(
            "content at template.spec.template.spec not parseable as a v1.PodSpec: containers: "
        ));
        // read structurally (the lifecycle's way), only `spec` must be an object
        assert!(pod_template_at(&top, at, Structural).is_ok());
        assert_eq!(
            summary(&component_pod_sets(&[], &top).unwrap()),
            vec![ps(at, 1)]
        );
        assert_eq!(
            pod_template_at(&d(json!("x")), at, Structural).unwrap_err(),
            "content at template.spec.template does not contain a spec"
        );
        // inference holds every inferred template to it
        assert_eq!(
            infer_pod_sets(&top, Strict).unwrap_err(),
            "template.spec.template does not refer to a v1.PodSpecTemplate: content at template.spec.template.spec not parseable as a v1.PodSpec: strict decoding error: unknown field \"containerz\""
        );
    }

    fn ps(path: &str, replicas: i32) -> (String, i32) {
        (path.to_string(), replicas)
    }

    fn summary(sets: &[PodSet]) -> Vec<(String, i32)> {
        sets.iter()
            .map(|p| (p.path.clone(), p.replicas()))
            .collect()
    }

    #[test]
    fn inference_table() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec()});
        assert_eq!(
            summary(&infer_pod_sets(&pod, Strict).unwrap()),
            vec![ps("template", 1)]
        );

        for kind in ["Deployment", "StatefulSet"] {
            let d = json!({"apiVersion": "apps/v1", "kind": kind, "spec": {"replicas": 3, "template": {"spec": pod_spec()}}});
            assert_eq!(
                summary(&infer_pod_sets(&d, Strict).unwrap()),
                vec![ps("template.spec.template", 3)]
            );
            let d1 = json!({"apiVersion": "apps/v1", "kind": kind, "spec": {"template": {"spec": pod_spec()}}});
            assert_eq!(
                summary(&infer_pod_sets(&d1, Strict).unwrap()),
                vec![ps("template.spec.template", 1)]
            );
        }

        for (par, comp, want) in [
            (Some(2), Some(4), 2),
            (Some(8), Some(4), 4),
            (None, None, 1),
            (None, Some(0), 0),
        ] {
            let mut j = json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": pod_spec()}}});
            if let Some(p) = par {
                j["spec"]["parallelism"] = json!(p);
            }
            if let Some(c) = comp {
                j["spec"]["completions"] = json!(c);
            }
            let sets = infer_pod_sets(&j, Strict).unwrap();
            assert_eq!(summary(&sets), vec![ps("template.spec.template", want)]);
            assert_eq!(
                sets[0].annotations[TAS_POD_INDEX_LABEL],
                JOB_COMPLETION_INDEX
            );
        }

        let sets = infer_pod_sets(&jobset(), Strict).unwrap();
        assert_eq!(
            summary(&sets),
            vec![
                ps("template.spec.replicatedJobs[0].template.spec.template", 1),
                ps("template.spec.replicatedJobs[1].template.spec.template", 4)
            ]
        );
        assert_eq!(sets[1].annotations[TAS_SUB_GROUP_COUNT], "2");
        // a JobSet's replicas are read with `GetReplicas`: a non-integer is 1
        let mut odd = jobset();
        odd["spec"]["replicatedJobs"][1]["replicas"] = json!("two");
        assert_eq!(
            summary(&infer_pod_sets(&odd, Strict).unwrap())[1],
            ps("template.spec.replicatedJobs[1].template.spec.template", 2)
        );
        assert_eq!(
            sets[1].annotations[TAS_SUB_GROUP_INDEX_LABEL],
            JOBSET_JOB_INDEX
        );

        let pt = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": {"spec": pod_spec()}},
            "Worker": {"replicas": 2, "template": {"spec": pod_spec()}}}}});
        assert_eq!(
            summary(&infer_pod_sets(&pt, Strict).unwrap()),
            vec![
                ps("template.spec.pytorchReplicaSpecs.Master.template", 1),
                ps("template.spec.pytorchReplicaSpecs.Worker.template", 2)
            ]
        );
        let bad = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {
            "Worker": {"replicas": "two", "template": {"spec": pod_spec()}}}}});
        assert_eq!(
            infer_pod_sets(&bad, Strict).unwrap_err(),
            "at path position 'template.spec.pytorchReplicaSpecs.Worker.replicas' non-int value two"
        );

        let rc = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {
            "headGroupSpec": {"template": {"spec": pod_spec()}},
            "workerGroupSpecs": [{"replicas": 3, "template": {"spec": pod_spec()}}, {"template": {"spec": pod_spec()}}]}});
        assert_eq!(
            summary(&infer_pod_sets(&rc, Strict).unwrap()),
            vec![
                ps("template.spec.headGroupSpec.template", 1),
                ps("template.spec.workerGroupSpecs[0].template", 3),
                ps("template.spec.workerGroupSpecs[1].template", 1)
            ]
        );
        let rj = json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "spec": {"rayClusterSpec": {
            "headGroupSpec": {"template": {"spec": pod_spec()}}}}});
        assert_eq!(
            summary(&infer_pod_sets(&rj, Strict).unwrap()),
            vec![ps("template.spec.rayClusterSpec.headGroupSpec.template", 1)]
        );
        let mut rj = rj;
        rj["spec"]["rayClusterSpec"]["workerGroupSpecs"] =
            json!([{"replicas": 3, "template": {"spec": pod_spec()}}]);
        assert_eq!(
            summary(&infer_pod_sets(&rj, Strict).unwrap()),
            vec![
                ps("template.spec.rayClusterSpec.headGroupSpec.template", 1),
                ps(
                    "template.spec.rayClusterSpec.workerGroupSpecs[0].template",
                    3
                )
            ]
        );
        // the head is always emitted, so a RayCluster without one fails
        let headless = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {}});
        assert_eq!(
            infer_pod_sets(&headless, Strict).unwrap_err(),
            "template.spec.headGroupSpec.template does not refer to a v1.PodSpecTemplate: at path position 'template.spec.' missing field 'headGroupSpec'"
        );

        let svc = json!({"apiVersion": "v1", "kind": "Service", "spec": {}});
        assert!(infer_pod_sets(&svc, Strict).unwrap().is_empty());
        let lws = json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "spec": {}});
        assert!(infer_pod_sets(&lws, Strict).unwrap().is_empty());
    }

    #[test]
    fn validate_pod_sets_messages() {
        let p = |path: &str, r: Option<i32>| PodSet {
            replicas: r,
            path: path.into(),
            annotations: BTreeMap::new(),
        };
        assert_eq!(validate_pod_sets(&[], &[p("a", None)]), Ok(()));
        assert_eq!(
            validate_pod_sets(&[p("a", None), p("a", None)], &[]),
            Err("multiple DeclaredPodSets with path 'a'".into())
        );
        assert_eq!(validate_pod_sets(&[p("x", Some(9))], &[]), Ok(()));
        assert_eq!(
            validate_pod_sets(&[p("a", None)], &[p("a", None), p("b", None)]),
            Err("DeclaredPodSet count 1 differs from inferred count 2".into())
        );
        assert_eq!(
            validate_pod_sets(&[p("b", None)], &[p("a", None)]),
            Err("PodSet with path 'a' is missing".into())
        );
        assert_eq!(
            validate_pod_sets(&[p("a", Some(2))], &[p("a", None)]),
            Err(
                "replica count 2 differs from inferred count 1 for PodSet at path position 'a'"
                    .into()
            )
        );
        assert_eq!(
            validate_pod_sets(&[p("a", Some(1))], &[p("a", None)]),
            Ok(())
        );
    }
}
