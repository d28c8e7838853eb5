//! Property: for Jobs carrying arbitrary extra JSON anywhere, applying the
//! patch batchgate returns changes nothing but the fields it owns.
//!
//! The Jobs vary in what a webhook may meet: labels and annotations absent,
//! null, empty or full (Unicode keys included); unknown fields under any
//! name (not only `x…`), Unicode, numbers at i64/u64/f64 extremes, nesting
//! far past depth 4, and the names batchgate reads (`spec`, `suspend`,
//! `kueue.x-k8s.io/queue-name`, …) at depths where they mean nothing.

use std::sync::Arc;

use batchgate::{
    admission::Settings,
    admission::{family::Hook, router::Router},
    api::selector::LabelSelector,
    jobs::policy::PolicySet,
};
mod support;

use proptest::{collection, prelude::*};
use serde_json::{json, Map, Value};
use support::arbitrary::{arb_json, arb_key, arb_string_map, Facts};

/// Leaves batchgate may add or replace on a Job, as JSON pointers.
const OWNED: &[&str] = &[
    "/spec/suspend",
    "/metadata/labels/kueue.x-k8s.io~1queue-name",
    "/metadata/labels/kueue.x-k8s.io~1priority-class",
];

fn arb_extras() -> impl Strategy<Value = Map<String, Value>> {
    collection::btree_map(arb_key(), arb_json(), 0..4).prop_map(|m| m.into_iter().collect())
}

/// How `metadata.labels` or `metadata.annotations` is sent.
#[derive(Debug, Clone, Copy)]
enum MapShape {
    Absent,
    Null,
    Map,
}

fn map_shape() -> impl Strategy<Value = MapShape> {
    prop_oneof![
        1 => Just(MapShape::Absent),
        1 => Just(MapShape::Null),
        3 => Just(MapShape::Map),
    ]
}

/// `map` under `key` as `shape` says (the caller empties it for absent or
/// null); a map holding entries the case needs (a queue name, Kueue's
/// annotations) is sent even when `shape` says absent or null.
fn put_map(metadata: &mut Map<String, Value>, key: &str, map: Map<String, Value>, shape: MapShape) {
    match shape {
        MapShape::Absent if map.is_empty() => {}
        MapShape::Null if map.is_empty() => {
            metadata.insert(key.into(), Value::Null);
        }
        _ => {
            metadata.insert(key.into(), Value::Object(map));
        }
    }
}

#[derive(Debug, Clone)]
struct Case {
    job: Value,
    manage_all: bool,
    default_lq: bool,
    default_wpc: bool,
    namespace: &'static str,
}

fn arb_case() -> impl Strategy<Value = Case> {
    let suspend = prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        any::<bool>().prop_map(|b| Some(Value::Bool(b)))
    ];
    let queue = prop_oneof![
        Just(None),
        Just(Some(String::new())),
        "[a-z]{1,8}".prop_map(Some)
    ];
    let spec_shape = 0..4u8; // absent, null, {} + extras, full
    (
        (queue, suspend, spec_shape, any::<bool>()),
        (
            arb_extras(),
            arb_extras(),
            arb_extras(),
            arb_extras(),
            arb_extras(),
        ),
        (
            arb_string_map(),
            arb_string_map(),
            any::<bool>(),
            map_shape(),
            map_shape(),
        ),
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just("team-a"), Just("kube-system")],
        ),
        (
            proptest::option::of(0i64..6),
            proptest::option::of(0i64..6),
            proptest::option::of(prop_oneof![Just("Indexed"), Just("NonIndexed")]),
            proptest::option::of(prop_oneof![Just("2"), Just("x"), Just("0")]),
            proptest::option::of(prop_oneof![Just("true"), Just("false"), Just("maybe")]),
        ),
    )
        .prop_map(
            |(
                (queue, suspend, spec_shape, has_status),
                (top, meta, spec_x, tmpl_x, pod_x),
                (mut labels, annotations, stopping, labels_shape, annotations_shape),
                (manage_all, default_lq, default_wpc, namespace),
                (parallelism, completions, mode, min_par, sync),
            )| {
                labels.remove("kueue.x-k8s.io/queue-name");
                labels.remove("kueue.x-k8s.io/priority-class");
                if !matches!(labels_shape, MapShape::Map) {
                    labels.clear();
                }
                if let Some(q) = queue {
                    labels.insert("kueue.x-k8s.io/queue-name".into(), json!(q));
                }
                let mut annotations = annotations;
                if !matches!(annotations_shape, MapShape::Map) {
                    annotations.clear();
                }
                if stopping {
                    annotations.insert("kueue.x-k8s.io/stopping".into(), json!("true"));
                }
                if let Some(v) = min_par {
                    annotations.insert("kueue.x-k8s.io/job-min-parallelism".into(), json!(v));
                }
                if let Some(v) = sync {
                    annotations.insert(
                        "kueue.x-k8s.io/job-completions-equal-parallelism".into(),
                        json!(v),
                    );
                }
                let mut metadata = meta;
                metadata.insert("name".into(), json!("job"));
                put_map(&mut metadata, "labels", labels, labels_shape);
                put_map(&mut metadata, "annotations", annotations, annotations_shape);
                let mut job = top;
                job.insert("apiVersion".into(), json!("batch/v1"));
                job.insert("kind".into(), json!("Job"));
                job.insert("metadata".into(), Value::Object(metadata));
                match spec_shape {
                    0 => {}
                    1 => {
                        job.insert("spec".into(), Value::Null);
                    }
                    _ => {
                        let mut spec = spec_x;
                        if let Some(p) = parallelism {
                            spec.insert("parallelism".into(), json!(p));
                        }
                        if let Some(c) = completions {
                            spec.insert("completions".into(), json!(c));
                        }
                        if let Some(m) = mode {
                            spec.insert("completionMode".into(), json!(m));
                        }
                        if let Some(s) = suspend {
                            spec.insert("suspend".into(), s);
                        }
                        if spec_shape == 3 {
                            let mut pod = pod_x;
                            pod.insert(
                                "containers".into(),
                                json!([{"name": "c", "image": "busybox"}]),
                            );
                            let mut tmpl = tmpl_x;
                            tmpl.insert("spec".into(), Value::Object(pod));
                            spec.insert("template".into(), Value::Object(tmpl));
                        }
                        job.insert("spec".into(), Value::Object(spec));
                    }
                }
                if has_status {
                    job.insert(
                        "status".into(),
                        json!({"active": 1, "xUnknown": {"deep": [1, {"a": null}]}}),
                    );
                }
                Case {
                    job: Value::Object(job),
                    manage_all,
                    default_lq,
                    default_wpc,
                    namespace,
                }
            },
        )
}

fn is_owned(path: &str) -> bool {
    OWNED.contains(&path)
}

fn is_owned_prefix(path: &str) -> bool {
    OWNED.iter().any(|o| o.starts_with(&format!("{path}/")))
}

/// `new` may differ from `orig` only at owned leaves, and only by new
/// subtrees that hold nothing but owned leaves where `orig` had nothing.
fn only_owned_changed(orig: Option<&Value>, new: &Value, path: &str) -> Result<(), String> {
    if is_owned(path) {
        return Ok(());
    }
    match (orig, new) {
        (Some(Value::Object(o)), Value::Object(n)) => {
            for (k, ov) in o {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match n.get(k) {
                    Some(nv) => only_owned_changed(Some(ov), nv, &p)?,
                    None => return Err(format!("{p} was removed")),
                }
            }
            for (k, nv) in n {
                if !o.contains_key(k) {
                    let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                    only_owned_changed(None, nv, &p)?;
                }
            }
            Ok(())
        }
        (None | Some(Value::Null), Value::Object(n)) if is_owned_prefix(path) => {
            for (k, nv) in n {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                only_owned_changed(None, nv, &p)?;
            }
            Ok(())
        }
        (Some(o), n) if o == n => Ok(()),
        (o, n) => Err(format!("{path} changed from {o:?} to {n}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn patch_changes_only_owned_fields(case in arb_case()) {
        let policies = PolicySet::embedded().unwrap();
        let settings = Settings {
            manage_jobs_without_queue_name: case.manage_all,
            managed_namespaces: LabelSelector::excluding_namespaces(&["kube-system", "batchgate-system"]),
        };
        let facts = Arc::new(Facts { default_lq: case.default_lq, default_wpc: case.default_wpc });
        let webhook = Router::new(policies, settings, facts, Arc::new(|| chrono::Utc::now().date_naive()));
        let body = serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "p", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                        "operation": "CREATE", "namespace": case.namespace, "object": case.job}
        })).unwrap();
        let answer = webhook.answer(Hook::Mutate, &body);
        let resp: Value = serde_json::from_slice(&answer.body).unwrap();
        prop_assert_eq!(&resp["response"]["allowed"], &json!(true), "{}", resp);

        let mut patched = case.job.clone();
        if let Some(b64) = resp["response"]["patch"].as_str() {
            use base64::Engine;
            let raw = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
            let ops: Value = serde_json::from_slice(&raw).unwrap();
            prop_assert!(!ops.as_array().unwrap().is_empty(), "an empty patch is sent as no patch");
            for op in ops.as_array().unwrap() {
                prop_assert_eq!(&op["op"], &json!("add"));
            }
            let patch: json_patch::Patch = serde_json::from_value(ops).unwrap();
            json_patch::patch(&mut patched, &patch).unwrap();
        }
        if let Err(e) = only_owned_changed(Some(&case.job), &patched, "") {
            return Err(TestCaseError::fail(format!("{e}\nbefore: {}\nafter: {patched}", case.job)));
        }

        // And the owned fields are what Kueue would set.
        let queue = patched.pointer("/metadata/labels/kueue.x-k8s.io~1queue-name").and_then(Value::as_str).unwrap_or("");
        let managed_ns = case.namespace != "kube-system";
        let stopping = case.job.pointer("/metadata/annotations/kueue.x-k8s.io~1stopping") == Some(&json!("true"));
        let was_suspended = case.job.pointer("/spec/suspend") == Some(&json!(true)) && !stopping;
        let should_suspend = !queue.is_empty() || (case.manage_all && managed_ns);
        if should_suspend {
            prop_assert_eq!(patched.pointer("/spec/suspend"), Some(&json!(true)));
        } else if !was_suspended {
            prop_assert_eq!(patched.pointer("/spec/suspend"), case.job.pointer("/spec/suspend"));
        }
    }
}

/// The decision from a review read sparsely (only what the rules look at)
/// is the decision the core makes on the whole object.
fn decide_on_whole_objects(
    hook: Hook,
    op: batchgate::admission::Operation,
    case: &Case,
    old: Option<&Value>,
) -> Value {
    use batchgate::admission::{self, review::AdmissionResponse, Context, Request, Verdict};
    use batchgate::vocabulary::patch;
    let policies = PolicySet::embedded().unwrap();
    let settings = Settings {
        manage_jobs_without_queue_name: case.manage_all,
        managed_namespaces: LabelSelector::excluding_namespaces(&[
            "kube-system",
            "batchgate-system",
        ]),
    };
    let facts = Facts {
        default_lq: case.default_lq,
        default_wpc: case.default_wpc,
    };
    let ctx = Context {
        settings: &settings,
        facts: &facts,
        policies: &policies,
        lookups: &batchgate::admission::Read::default(),
    };
    let policy = policies.find("batch", "v1", "Job").unwrap();
    let req = Request {
        operation: op,
        namespace: case.namespace,
        object: Some(&case.job),
        old_object: old,
    };
    let d = match hook {
        Hook::Mutate => admission::mutate(policy, &req, &ctx),
        Hook::Validate => admission::validate(policy, &req, &ctx),
    };
    let resp = match d.verdict {
        Verdict::Allow if d.patch.is_empty() => AdmissionResponse::allow("p".into()),
        Verdict::Allow => {
            AdmissionResponse::allow("p".into()).with_patch(&patch::to_json(&d.patch))
        }
        Verdict::Deny(m) => AdmissionResponse::deny("p".into(), m),
        Verdict::Malformed(m) => AdmissionResponse::bad_request("p".into(), m),
    };
    serde_json::from_slice(&resp.to_review_bytes()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sparse_reading_decides_as_the_whole_object_would(case in arb_case(), old in arb_case()) {
        use batchgate::admission::Operation;
        let facts = Arc::new(Facts { default_lq: case.default_lq, default_wpc: case.default_wpc });
        let settings = Settings {
            manage_jobs_without_queue_name: case.manage_all,
            managed_namespaces: LabelSelector::excluding_namespaces(&["kube-system", "batchgate-system"]),
        };
        let webhook = Router::new(PolicySet::embedded().unwrap(), settings, facts, Arc::new(|| chrono::Utc::now().date_naive()));
        for (hook, op, old_obj) in [
            (Hook::Mutate, "CREATE", None),
            (Hook::Validate, "CREATE", None),
            (Hook::Validate, "UPDATE", Some(&old.job)),
        ] {
            let mut request = json!({
                "uid": "p", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                "operation": op, "namespace": case.namespace, "object": case.job,
            });
            if let Some(o) = old_obj {
                request["oldObject"] = o.clone();
            }
            let body = serde_json::to_vec(&json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request,
            })).unwrap();
            let sparse: Value = serde_json::from_slice(&webhook.answer(hook, &body).body).unwrap();
            let operation = if op == "CREATE" { Operation::Create } else { Operation::Update };
            let whole = decide_on_whole_objects(hook, operation, &case, old_obj);
            prop_assert_eq!(&sparse, &whole, "{:?} {}", hook, op);
        }
    }
}
