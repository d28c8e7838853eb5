//! Conversion between `kueue.x-k8s.io/v1beta1` and `v1beta2`, as Kueue
//! v0.19.2's conversion webhook converts them, done on the JSON: only the
//! fields Kueue renames, moves or maps are touched, everything else
//! (including fields this version of batchgate does not know) is kept as
//! it came.
//!
//! Each difference between the versions is a [`Unit`]: the pointers it
//! reads in one version, the pointers it writes in the other, and the two
//! directions. A unit that cannot carry its input across exactly (Kueue
//! drops the field, maps two values to one, or re-encodes a topology
//! assignment) loses nothing here: the conversion records what the source
//! had, and what the target got from it, in the annotation
//! [`STASH_ANNOTATION`] of the converted object. Converting back restores
//! the source's fields, as long as the target's fields still hold what the
//! conversion wrote (a client that changed them wins). Kueue itself drops
//! such fields; see the README.
//!
//! No I/O, no clock: bytes or JSON in, JSON out.

pub mod topology;

use crate::vocabulary::pointer::At;
use serde_json::{json, Map, Value};

use self::topology::{Domain, ShapeError};

pub const V1BETA1: &str = "kueue.x-k8s.io/v1beta1";
pub const V1BETA2: &str = "kueue.x-k8s.io/v1beta2";

/// Where a conversion keeps what the target version cannot hold, until the
/// object is converted back.
pub const STASH_ANNOTATION: &str = "batchgate.dev/conversion-data";

/// The kinds that are converted (every Kueue kind batchgate serves).
pub const KINDS: [&str; 7] = [
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "MultiKueueCluster",
    "ResourceFlavor",
    "Workload",
    "WorkloadPriorityClass",
];

/// Why one object could not be converted; the message names the object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConversionError {
    #[error("{object}: apiVersion {api_version:?} cannot be converted; batchgate converts between kueue.x-k8s.io/v1beta1 and kueue.x-k8s.io/v1beta2")]
    Version { object: String, api_version: String },
    #[error("{object}: kind {kind:?} is not converted; batchgate converts ClusterQueue, Cohort, LocalQueue, MultiKueueCluster, ResourceFlavor, Workload and WorkloadPriorityClass")]
    Kind { object: String, kind: String },
    #[error("{object}: {field}: {problem}")]
    Field {
        object: String,
        field: String,
        problem: String,
    },
}

/// Why a request is not a ConversionReview at all (the shell answers 400).
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("the body is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the body is not a ConversionReview: {0}")]
    Shape(&'static str),
}

/// Answers a ConversionReview (apiextensions.k8s.io/v1): every object
/// converted to `request.desiredAPIVersion`, or `result.status: Failure`
/// with the first object's error, as controller-runtime answers.
pub fn review(body: &[u8]) -> Result<Value, ReviewError> {
    let mut review: Value = serde_json::from_slice(body)?;
    if review.get("kind").and_then(Value::as_str) != Some("ConversionReview") {
        return Err(ReviewError::Shape("kind must be ConversionReview"));
    }
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("apiextensions.k8s.io/v1")
        .to_string();
    let request = review
        .get_mut("request")
        .and_then(Value::as_object_mut)
        .ok_or(ReviewError::Shape("request is missing"))?;
    let uid = request.get("uid").cloned().unwrap_or(Value::Null);
    let desired = request
        .get("desiredAPIVersion")
        .and_then(Value::as_str)
        .ok_or(ReviewError::Shape("request.desiredAPIVersion is missing"))?
        .to_string();
    let objects = match request.remove("objects") {
        Some(Value::Array(o)) => o,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(ReviewError::Shape("request.objects must be a list")),
    };
    let converted: Result<Vec<Value>, ConversionError> =
        objects.into_iter().map(|o| convert(o, &desired)).collect();
    let response = match converted {
        Ok(objects) => json!({
            "uid": uid,
            "convertedObjects": objects,
            "result": {"status": "Success"},
        }),
        Err(e) => json!({
            "uid": uid,
            "convertedObjects": [],
            "result": {"status": "Failure", "message": e.to_string()},
        }),
    };
    Ok(json!({
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "response": response,
    }))
}

/// Converts one object to `desired` (`kueue.x-k8s.io/v1beta1` or
/// `v1beta2`). An object already at `desired` comes back unchanged.
pub fn convert(mut obj: Value, desired: &str) -> Result<Value, ConversionError> {
    let object = describe(&obj);
    let from = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if from == desired {
        return Ok(obj);
    }
    for v in [&from, &desired.to_string()] {
        if v != V1BETA1 && v != V1BETA2 {
            return Err(ConversionError::Version {
                object,
                api_version: v.clone(),
            });
        }
    }
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !KINDS.contains(&kind.as_str()) {
        return Err(ConversionError::Kind { object, kind });
    }
    let up = desired == V1BETA2;
    let restores = take_stash(&mut obj, desired);
    let mut entries = Vec::new();
    for unit in units(&kind, &obj) {
        let (src, dst) = if up {
            (&unit.v1beta1, &unit.v1beta2)
        } else {
            (&unit.v1beta2, &unit.v1beta1)
        };
        let x: Vec<Option<Value>> = src.iter().map(|p| remove(&mut obj, p)).collect();
        let (there, back) = if up {
            (unit.up, unit.down)
        } else {
            (unit.down, unit.up)
        };
        let y = there(&x).map_err(|p| ConversionError::Field {
            object: object.clone(),
            field: dotted(&p.at),
            problem: p.problem,
        })?;
        for (p, v) in dst.iter().zip(&y) {
            put(&mut obj, p, v.clone());
        }
        let exact = back(&y).is_ok_and(|z| (unit.same)(&z, &x));
        if !exact {
            entries.push(json!({
                "when": dst.iter().zip(&y).map(|(p, v)| guard(p, v.as_ref())).collect::<Vec<_>>(),
                "set": src.iter().zip(&x).map(|(p, v)| match v {
                    Some(v) => json!({"path": p, "value": v}),
                    None => json!({"path": p, "absent": true}),
                }).collect::<Vec<_>>(),
            }));
        }
    }
    for (path, value) in restores {
        put(&mut obj, &path, value);
    }
    obj["apiVersion"] = json!(desired);
    if !entries.is_empty() {
        let stash = json!({"apiVersion": from, "restore": entries}).to_string();
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            let ann = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(ann) = ann.as_object_mut() {
                ann.insert(STASH_ANNOTATION.into(), Value::String(stash));
            }
        }
    }
    Ok(obj)
}

/// `Workload team-a/train`, `ClusterQueue cq` (for messages).
fn describe(obj: &Value) -> String {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("object");
    let meta = &obj["metadata"];
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    match meta.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

/// `/spec/podSets/0/count` → `spec.podSets[0].count`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

/// What a unit found wrong in its input.
#[derive(Debug)]
struct Problem {
    /// JSON pointer of the field.
    at: String,
    problem: String,
}

type Values = Vec<Option<Value>>;
type Direction = Box<dyn Fn(&[Option<Value>]) -> Result<Values, Problem>>;
type Same = fn(&[Option<Value>], &[Option<Value>]) -> bool;

/// One difference between the versions.
struct Unit {
    v1beta1: Vec<String>,
    v1beta2: Vec<String>,
    up: Direction,
    down: Direction,
    /// Whether a round trip gave the input back (equality, unless a unit
    /// knows better).
    same: Same,
}

fn equal(a: &[Option<Value>], b: &[Option<Value>]) -> bool {
    a == b
}

fn identity(x: &[Option<Value>]) -> Result<Values, Problem> {
    Ok(x.to_vec())
}

/// A field renamed, its value unchanged.
fn renamed(v1beta1: &str, v1beta2: &str) -> Unit {
    Unit {
        v1beta1: vec![v1beta1.into()],
        v1beta2: vec![v1beta2.into()],
        up: Box::new(identity),
        down: Box::new(identity),
        same: equal,
    }
}

/// A field only one version has; Kueue drops it on the way to the other.
fn only_in(v1beta1: Option<&str>, v1beta2: Option<&str>) -> Unit {
    let none = |_: &[Option<Value>]| Ok(vec![None]);
    let nothing = |_: &[Option<Value>]| Ok(vec![]);
    let (up, down): (Direction, Direction) = if v1beta1.is_some() {
        (Box::new(nothing), Box::new(none))
    } else {
        (Box::new(none), Box::new(nothing))
    };
    Unit {
        v1beta1: v1beta1.into_iter().map(String::from).collect(),
        v1beta2: v1beta2.into_iter().map(String::from).collect(),
        up,
        down,
        same: equal,
    }
}

/// The units of one object; per-element units for the elements it has.
fn units(kind: &str, obj: &Value) -> Vec<Unit> {
    match kind {
        "ClusterQueue" => vec![
            renamed("/spec/cohort", "/spec/cohortName"),
            admission_checks(),
            fungibility("whenCanPreempt", "Preempt"),
            fungibility("whenCanBorrow", "Borrow"),
            only_in(None, Some("/spec/concurrentAdmissionPolicy")),
            only_in(Some("/status/pendingWorkloadsStatus"), None),
            only_in(Some("/status/fairSharing/admissionFairSharingStatus"), None),
        ],
        "Cohort" => vec![only_in(
            Some("/status/fairSharing/admissionFairSharingStatus"),
            None,
        )],
        "LocalQueue" => vec![
            renamed("/status/flavorUsage", "/status/flavorsUsage"),
            only_in(Some("/status/flavors"), None),
        ],
        "Workload" => {
            let mut u = vec![
                renamed(
                    "/status/accumulatedPastExexcutionTimeSeconds",
                    "/status/accumulatedPastExecutionTimeSeconds",
                ),
                priority(),
                only_in(None, Some("/spec/preemptionGates")),
                only_in(None, Some("/status/preemptionGates")),
            ];
            let pod_sets = obj
                .at("/spec/podSets")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            for i in 0..pod_sets {
                u.push(only_in(
                    None,
                    Some(&format!(
                        "/spec/podSets/{i}/topologyRequest/podsetSliceRequiredTopologyConstraints"
                    )),
                ));
            }
            let assignments = obj
                .at("/status/admission/podSetAssignments")
                .and_then(Value::as_array);
            for (j, a) in assignments.into_iter().flatten().enumerate() {
                if a.get("topologyAssignment").is_some_and(Value::is_object) {
                    u.push(topology_assignment(&format!(
                        "/status/admission/podSetAssignments/{j}/topologyAssignment"
                    )));
                }
            }
            u
        }
        "MultiKueueCluster" => vec![cluster_source()],
        // ResourceFlavor, WorkloadPriorityClass: the same schema in both.
        _ => Vec::new(),
    }
}

/// v1beta1 `spec.admissionChecks: [name]` becomes v1beta2
/// `spec.admissionChecksStrategy.admissionChecks: [{name}]`, replacing any
/// strategy (Kueue's webhook refuses both at once).
fn admission_checks() -> Unit {
    Unit {
        v1beta1: vec![
            "/spec/admissionChecks".into(),
            "/spec/admissionChecksStrategy".into(),
        ],
        v1beta2: vec!["/spec/admissionChecksStrategy".into()],
        up: Box::new(|x| {
            let strategy = x[1].clone();
            let Some(checks) = &x[0] else {
                return Ok(vec![strategy]);
            };
            let names = checks
                .as_array()
                .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
                .ok_or_else(|| Problem {
                    at: "/spec/admissionChecks".into(),
                    problem: "must be a list of AdmissionCheck names".into(),
                })?;
            if names.is_empty() {
                return Ok(vec![strategy]);
            }
            let rules: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
            Ok(vec![Some(json!({"admissionChecks": rules}))])
        }),
        down: Box::new(|y| Ok(vec![None, y[0].clone()])),
        same: equal,
    }
}

/// `Preempt` and `Borrow`, deprecated in v1beta1, are `MayStopSearch` in
/// v1beta2.
fn fungibility(field: &'static str, old: &'static str) -> Unit {
    let path = format!("/spec/flavorFungibility/{field}");
    Unit {
        v1beta1: vec![path.clone()],
        v1beta2: vec![path],
        up: Box::new(move |x| {
            Ok(vec![x[0].clone().map(|v| {
                if v == old {
                    json!("MayStopSearch")
                } else {
                    v
                }
            })])
        }),
        down: Box::new(identity),
        same: equal,
    }
}

/// v1beta1 `spec.kubeConfig` and `spec.clusterProfileRef` ⇄ v1beta2
/// `spec.clusterSource`, as Kueue's MultiKueueCluster conversion: a
/// kubeconfig with an empty location is not carried up, and one v1beta2
/// lacks comes down as Go's zero value (both fields empty), since v1beta1
/// always writes it.
fn cluster_source() -> Unit {
    fn object(v: &Option<Value>, at: &str) -> Result<Option<Map<String, Value>>, Problem> {
        match v {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(_) => Err(Problem {
                at: at.into(),
                problem: "must be an object".into(),
            }),
        }
    }
    Unit {
        v1beta1: vec!["/spec/kubeConfig".into(), "/spec/clusterProfileRef".into()],
        v1beta2: vec!["/spec/clusterSource".into()],
        up: Box::new(|x| {
            let mut source = Map::new();
            if let Some(mut kc) = object(&x[0], "/spec/kubeConfig")? {
                let location = kc.get("location").and_then(Value::as_str).unwrap_or("");
                if !location.is_empty() {
                    // Go's omitempty drops an empty locationType.
                    if kc.get("locationType").and_then(Value::as_str) == Some("") {
                        kc.remove("locationType");
                    }
                    source.insert("kubeConfig".into(), Value::Object(kc));
                }
            }
            if let Some(r) = &x[1] {
                source.insert("clusterProfileRef".into(), r.clone());
            }
            // Go's omitzero leaves an empty source out.
            Ok(vec![(!source.is_empty()).then_some(Value::Object(source))])
        }),
        down: Box::new(|y| {
            let source = object(&y[0], "/spec/clusterSource")?.unwrap_or_default();
            let kc = source
                .get("kubeConfig")
                .cloned()
                .unwrap_or_else(|| json!({"location": "", "locationType": ""}));
            Ok(vec![Some(kc), source.get("clusterProfileRef").cloned()])
        }),
        same: equal,
    }
}

const WORKLOAD_PRIORITY_SOURCE: &str = "kueue.x-k8s.io/workloadpriorityclass";
const POD_PRIORITY_SOURCE: &str = "scheduling.k8s.io/priorityclass";

/// v1beta1 `priorityClassName` + `priorityClassSource` ⇄ v1beta2
/// `priorityClassRef: {group, kind, name}`.
fn priority() -> Unit {
    const REFS: [(&str, &str, &str); 2] = [
        (
            WORKLOAD_PRIORITY_SOURCE,
            "kueue.x-k8s.io",
            "WorkloadPriorityClass",
        ),
        (POD_PRIORITY_SOURCE, "scheduling.k8s.io", "PriorityClass"),
    ];
    Unit {
        v1beta1: vec![
            "/spec/priorityClassName".into(),
            "/spec/priorityClassSource".into(),
        ],
        v1beta2: vec!["/spec/priorityClassRef".into()],
        up: Box::new(|x| {
            let source = x[1].as_ref().and_then(Value::as_str);
            let Some((_, group, kind)) = REFS.iter().find(|r| Some(r.0) == source) else {
                return Ok(vec![None]);
            };
            let mut r = json!({"group": group, "kind": kind});
            match x[0].as_ref() {
                Some(Value::String(n)) if n.is_empty() => {}
                Some(Value::String(n)) => r["name"] = json!(n),
                None => {}
                Some(_) => {
                    return Err(Problem {
                        at: "/spec/priorityClassName".into(),
                        problem: "must be a string".into(),
                    })
                }
            }
            Ok(vec![Some(r)])
        }),
        down: Box::new(|y| {
            let Some(r) = &y[0] else {
                return Ok(vec![None, None]);
            };
            let (group, kind) = (r.get("group"), r.get("kind"));
            let Some((source, _, _)) = REFS
                .iter()
                .find(|t| group == Some(&json!(t.1)) && kind == Some(&json!(t.2)))
            else {
                return Ok(vec![None, None]);
            };
            let name = r.get("name").filter(|n| n.as_str() != Some("")).cloned();
            Ok(vec![name, Some(json!(source))])
        }),
        // `priorityClassSource: ""` is v1beta1's schema default, put back
        // by the apiserver on every v1beta1 write.
        same: |a, b| {
            let norm = |v: &[Option<Value>]| -> Values {
                v.iter()
                    .map(|x| x.clone().filter(|x| x.as_str() != Some("")))
                    .collect()
            };
            norm(a) == norm(b)
        },
    }
}

/// v1beta1 `topologyAssignment.domains[]` ⇄ v1beta2 `.slices[]`.
fn topology_assignment(base: &str) -> Unit {
    let (levels, domains, slices) = (
        format!("{base}/levels"),
        format!("{base}/domains"),
        format!("{base}/slices"),
    );
    let fail = {
        let base = base.to_string();
        move |e: ShapeError| Problem {
            at: format!(
                "{base}/{}",
                e.field.replace(['.', '['], "/").replace(']', "")
            ),
            problem: e.problem,
        }
    };
    let levels_of = {
        let at = levels.clone();
        move |v: &Option<Value>| -> Result<Vec<String>, Problem> {
            match v {
                None => Ok(Vec::new()),
                Some(l) => l
                    .as_array()
                    .and_then(|a| {
                        a.iter()
                            .map(|s| s.as_str().map(String::from))
                            .collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| Problem {
                        at: at.clone(),
                        problem: "must be a list of node label keys".into(),
                    }),
            }
        }
    };
    let (fail_up, levels_up) = (fail.clone(), levels_of.clone());
    Unit {
        v1beta1: vec![levels.clone(), domains],
        v1beta2: vec![levels, slices],
        up: Box::new(move |x| {
            let lv = levels_up(&x[0])?;
            let doms: Vec<Domain> = match &x[1] {
                None => Vec::new(),
                Some(d) => topology::read_domains(d, lv.len()).map_err(&fail_up)?,
            };
            let slices = topology::encode(&lv, &doms);
            let slices = (!slices.is_empty()).then_some(Value::Array(slices));
            Ok(vec![x[0].clone(), slices])
        }),
        down: Box::new(move |y| {
            let lv = levels_of(&y[0])?;
            let doms = match &y[1] {
                None => Vec::new(),
                Some(s) => topology::expand(s, lv.len()).map_err(&fail)?,
            };
            Ok(vec![y[0].clone(), Some(topology::write_domains(&doms))])
        }),
        same: equal,
    }
}

/// Takes this library's stash out of the annotations when it was written
/// for `desired`, and returns what to restore: the entries whose guards
/// still hold on `obj` (before conversion).
fn take_stash(obj: &mut Value, desired: &str) -> Vec<(String, Option<Value>)> {
    let Some(ann) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    else {
        return Vec::new();
    };
    let Some(stash) = ann
        .get(STASH_ANNOTATION)
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    else {
        return Vec::new();
    };
    if stash.get("apiVersion").and_then(Value::as_str) != Some(desired) {
        return Vec::new();
    }
    ann.remove(STASH_ANNOTATION);
    if ann.is_empty() {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("annotations");
        }
    }
    let mut out = Vec::new();
    for entry in stash["restore"].as_array().into_iter().flatten() {
        let holds = entry["when"].as_array().into_iter().flatten().all(|g| {
            let Some(path) = g["path"].as_str() else {
                return false;
            };
            let now = obj.at(path);
            match g.get("digest").and_then(Value::as_str) {
                Some(d) => now.is_some_and(|v| digest(v) == d),
                None => now.is_none(),
            }
        });
        if !holds {
            continue;
        }
        for s in entry["set"].as_array().into_iter().flatten() {
            if let Some(path) = s["path"].as_str() {
                out.push((path.to_string(), s.get("value").cloned()));
            }
        }
    }
    out
}

fn guard(path: &str, v: Option<&Value>) -> Value {
    match v {
        Some(v) => json!({"path": path, "digest": digest(v)}),
        None => json!({"path": path, "absent": true}),
    }
}

/// FNV-1a (64 bit) of the value's canonical JSON (keys sorted), in hex:
/// stable across processes and releases, which a guard needs.
fn digest(v: &Value) -> String {
    struct Fnv(u64);
    impl Fnv {
        fn eat(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 ^= u64::from(*b);
                self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
            }
        }
        fn value(&mut self, v: &Value) {
            match v {
                Value::Object(m) => {
                    let mut keys: Vec<&String> = m.keys().collect();
                    keys.sort();
                    self.eat(b"{");
                    for k in keys {
                        self.value(&Value::String(k.clone()));
                        self.eat(b":");
                        self.value(&m[k]);
                        self.eat(b",");
                    }
                    self.eat(b"}");
                }
                Value::Array(a) => {
                    self.eat(b"[");
                    for x in a {
                        self.value(x);
                        self.eat(b",");
                    }
                    self.eat(b"]");
                }
                other => self.eat(other.to_string().as_bytes()),
            }
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.value(v);
    format!("{:016x}", h.0)
}

fn unescape(seg: &str) -> String {
    seg.replace("~1", "/").replace("~0", "~")
}

/// Removes and returns the value at `pointer`.
fn remove(root: &mut Value, pointer: &str) -> Option<Value> {
    let (parent, last) = pointer.rsplit_once('/')?;
    let parent = if parent.is_empty() {
        Some(root)
    } else {
        root.pointer_mut(parent)
    };
    match parent? {
        Value::Object(m) => m.remove(&unescape(last)),
        _ => None,
    }
}

/// Sets (or with `None` removes) the value at `pointer`, creating missing
/// parent objects; nothing is written under a parent that is not an object
/// or an array element that does not exist.
fn put(root: &mut Value, pointer: &str, value: Option<Value>) {
    let Some(value) = value else {
        remove(root, pointer);
        return;
    };
    let segs: Vec<String> = pointer.split('/').skip(1).map(unescape).collect();
    let Some((last, parents)) = segs.split_last() else {
        return;
    };
    let mut at = root;
    for seg in parents {
        at = match at {
            Value::Object(m) => m
                .entry(seg.clone())
                .or_insert_with(|| Value::Object(Map::new())),
            Value::Array(a) => match seg.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    if let Value::Object(m) = at {
        m.insert(last.clone(), value);
    }
}

#[cfg(test)]
mod tests;
