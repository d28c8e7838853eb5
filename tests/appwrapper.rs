//! AppWrapper defaulting through the webhook, as a property: for
//! AppWrappers carrying arbitrary extra JSON anywhere (the wrapped objects
//! included), applying the patch changes nothing but the fields batchgate
//! owns, and those hold what upstream and Kueue would set.

use std::sync::Arc;

use batchgate::{
    admission::{appwrapper, Settings},
    admission::{family::Hook, router::Router},
    api::selector::LabelSelector,
    cluster::discovery::ResourceNames,
    jobs::policy::PolicySet,
};
mod support;

use proptest::{collection, prelude::*};
use serde_json::{json, Map, Value};
use support::arbitrary::{arb_json, arb_key, arb_string_map, Facts};

/// Leaves batchgate may add or replace on an AppWrapper, as JSON pointers.
const OWNED: &[&str] = &[
    "/spec/suspend",
    "/metadata/labels/kueue.x-k8s.io~1queue-name",
    "/metadata/labels/kueue.x-k8s.io~1priority-class",
    "/metadata/labels/workload.codeflare.dev~1user",
    "/metadata/labels/workload.codeflare.dev~1userid",
];

fn extras() -> impl Strategy<Value = Map<String, Value>> {
    collection::btree_map(arb_key(), arb_json(), 0..3).prop_map(|m| m.into_iter().collect())
}

fn component() -> impl Strategy<Value = Value> {
    (extras(), extras(), extras(), any::<bool>()).prop_map(|(mut c, mut t, spec, declared)| {
        t.insert("apiVersion".into(), json!("example.com/v1"));
        t.insert("kind".into(), json!("Widget"));
        t.insert("spec".into(), Value::Object(spec));
        c.insert("template".into(), Value::Object(t));
        if declared {
            c.insert(
                "podSets".into(),
                json!([{"path": "template.spec", "replicas": 2}]),
            );
        }
        Value::Object(c)
    })
}

#[derive(Debug, Clone)]
struct Case {
    aw: Value,
    username: String,
    uid: String,
    default_queue: Option<String>,
    manage_all: bool,
    default_lq: bool,
    default_wpc: bool,
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        (extras(), extras(), extras(), arb_string_map()),
        (
            proptest::option::of(any::<bool>()),
            proptest::option::of("[a-z]{1,8}"),
            any::<bool>(),
            collection::vec(component(), 0..4),
        ),
        ("[ -~\u{e9}\u{4e2d}]{0,80}", "[ -~]{0,40}"),
        (
            proptest::option::of("[a-z]{1,8}"),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (mut root, mut meta, mut spec, mut labels),
                (suspend, queue, has_labels, components),
                (username, uid),
                (default_queue, manage_all, default_lq, default_wpc),
            )| {
                if let Some(q) = queue {
                    labels.insert("kueue.x-k8s.io/queue-name".into(), json!(q));
                }
                if has_labels {
                    meta.insert("labels".into(), Value::Object(labels));
                }
                meta.insert("name".into(), json!("aw"));
                meta.insert("namespace".into(), json!("team-a"));
                if let Some(s) = suspend {
                    spec.insert("suspend".into(), json!(s));
                }
                spec.insert("components".into(), Value::Array(components));
                root.insert("apiVersion".into(), json!("workload.codeflare.dev/v1beta2"));
                root.insert("kind".into(), json!("AppWrapper"));
                root.insert("metadata".into(), Value::Object(meta));
                root.insert("spec".into(), Value::Object(spec));
                Case {
                    aw: Value::Object(root),
                    username,
                    uid,
                    default_queue,
                    manage_all,
                    default_lq,
                    default_wpc,
                }
            },
        )
}

fn without_owned(mut v: Value) -> Value {
    for p in OWNED {
        let (parent, key) = p.rsplit_once('/').unwrap();
        let key = key.replace("~1", "/").replace("~0", "~");
        if let Some(Value::Object(m)) = v.pointer_mut(parent) {
            m.remove(&key);
        }
    }
    // A labels map or spec created only to hold owned fields.
    if let Some(Value::Object(m)) = v.pointer_mut("/metadata") {
        if m.get("labels") == Some(&json!({})) {
            m.remove("labels");
        }
    }
    v
}

fn label_ok(v: &str) -> bool {
    v.len() <= 63
        && (v.is_empty()
            || (v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                && v.starts_with(|c: char| c.is_ascii_alphanumeric())
                && v.ends_with(|c: char| c.is_ascii_alphanumeric())))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn appwrapper_patch_changes_only_owned_fields(case in arb_case()) {
        let settings = Settings {
            manage_jobs_without_queue_name: case.manage_all,
            managed_namespaces: LabelSelector::excluding_namespaces(&["kube-system", "batchgate-system"]),
        };
        let facts = Arc::new(Facts { default_lq: case.default_lq, default_wpc: case.default_wpc });
        let webhook = Router::new(PolicySet::embedded().unwrap(), settings, facts, Arc::new(|| chrono::Utc::now().date_naive())).with_appwrapper(
            appwrapper::Settings {
                default_queue_name: case.default_queue.clone(),
                ..appwrapper::Settings::default()
            },
            Arc::new(ResourceNames::new(None)),
        );
        let body = serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "p",
                        "kind": {"group": "workload.codeflare.dev", "version": "v1beta2", "kind": "AppWrapper"},
                        "operation": "CREATE", "namespace": "team-a", "name": "aw",
                        "userInfo": {"username": case.username, "uid": case.uid},
                        "object": case.aw}
        })).unwrap();
        let answer = webhook.answer(Hook::Mutate, &body);
        let resp: Value = serde_json::from_slice(&answer.body).unwrap();
        prop_assert_eq!(&resp["response"]["allowed"], &json!(true), "{}", resp);

        let mut patched = case.aw.clone();
        if let Some(b64) = resp["response"]["patch"].as_str() {
            use base64::Engine;
            let raw = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
            let ops: Value = serde_json::from_slice(&raw).unwrap();
            for op in ops.as_array().unwrap() {
                prop_assert_eq!(&op["op"], &json!("add"));
            }
            let patch: json_patch::Patch = serde_json::from_value(ops).unwrap();
            json_patch::patch(&mut patched, &patch).unwrap();
        }
        prop_assert_eq!(without_owned(patched.clone()), without_owned(case.aw.clone()));

        // The owned fields hold what upstream and Kueue set.
        let label = |k: &str| patched["metadata"]["labels"][k].as_str().map(str::to_string);
        let user = label("workload.codeflare.dev/user").unwrap();
        prop_assert_eq!(&user, &appwrapper::sanitize_label(&case.username));
        prop_assert!(label_ok(&user), "{:?}", user);
        prop_assert_eq!(label("workload.codeflare.dev/userid").unwrap(), appwrapper::sanitize_label(&case.uid));
        let had_queue = case.aw["metadata"]["labels"]["kueue.x-k8s.io/queue-name"].as_str().map(str::to_string);
        let queue = label("kueue.x-k8s.io/queue-name");
        match (&had_queue, &case.default_queue) {
            (Some(q), _) => prop_assert_eq!(queue.as_ref(), Some(q)),
            (None, Some(d)) => prop_assert_eq!(queue.as_ref(), Some(d)),
            (None, None) if case.default_lq => prop_assert_eq!(queue.as_deref(), Some("default")),
            (None, None) => prop_assert_eq!(queue, None),
        }
        let queued = label("kueue.x-k8s.io/queue-name").is_some_and(|q| !q.is_empty());
        if queued || case.manage_all {
            prop_assert_eq!(&patched["spec"]["suspend"], &json!(true));
        } else {
            prop_assert_eq!(&patched["spec"].get("suspend"), &case.aw["spec"].get("suspend"));
        }
    }
}
