//! Arbitrary JSON for the lossless property tests: the unknown fields a
//! third-party object may carry anywhere.

use batchgate::{
    admission::{ClusterFacts, NoCluster},
    api::selector::LabelSelector,
};
use proptest::{collection, prelude::*};
use serde_json::{json, Map, Value};

/// Field names and label keys batchgate reads somewhere (Jobs, pod
/// templates, Kueue's labels and annotations, AppWrapper components). An
/// extras map at a fixed level never uses one (it would stand for the real
/// field); [`arb_json`] nests them at every other depth, where they must be
/// left alone.
pub const KNOWN: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "status",
    "name",
    "namespace",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "suspend",
    "template",
    "parallelism",
    "completions",
    "completionMode",
    "replicas",
    "containers",
    "initContainers",
    "resources",
    "requests",
    "limits",
    "queueName",
    "priorityClassName",
    "components",
    "podSets",
    "managedBy",
    "kueue.x-k8s.io/queue-name",
    "kueue.x-k8s.io/priority-class",
    "kueue.x-k8s.io/stopping",
    "kueue.x-k8s.io/job-min-parallelism",
    "kueue.x-k8s.io/job-completions-equal-parallelism",
];

/// Names of unknown fields: any printable Unicode (empty included), with
/// the characters JSON pointers escape (`~`, `/`) and the first character
/// free; never one of [`KNOWN`].
pub fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9~/._-]{0,10}",
        "\\PC{0,12}",
        "[~/]{1,4}",
        "[\u{e9}\u{4e2d}\u{1f600}~/a]{1,6}",
    ]
    .prop_filter("a known field name stands for the real field", |k| {
        !KNOWN.contains(&k.as_str())
    })
}

/// A key inside an unknown subtree: unknown names and, as often, the
/// names batchgate reads elsewhere.
fn arb_nested_key() -> impl Strategy<Value = String> {
    prop_oneof![
        arb_key(),
        proptest::sample::select(KNOWN).prop_map(String::from),
    ]
}

/// Numbers at the edges: i64 and u64 extremes, floats far beyond any
/// quantity, negative zero, tiny fractions.
fn arb_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        Just(json!(i64::MIN)),
        Just(json!(i64::MAX)),
        Just(json!(u64::MAX)),
        (-1e9f64..1e9).prop_map(|f| json!(f)),
        prop_oneof![Just(1e300f64), Just(-1.7e308), Just(-0.0), Just(5e-324)]
            .prop_map(|f| json!(f)),
    ]
}

/// Arbitrary JSON: unicode strings, edge numbers, nulls, known field
/// names at unknown depths, nesting up to 8 levels by recursion and, on
/// one branch, chains 5 to 40 levels deep.
pub fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        arb_number(),
        "[ -~\u{e9}\u{4e2d}]{0,12}".prop_map(Value::String),
        "\\PC{0,16}".prop_map(Value::String),
        proptest::sample::select(
            &[
                "true",
                "false",
                "",
                "user-queue",
                "kueue.x-k8s.io/queue-name"
            ][..]
        )
        .prop_map(|s| json!(s)),
    ];
    let tree = leaf.clone().prop_recursive(8, 96, 6, |inner| {
        prop_oneof![
            collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            collection::btree_map(arb_nested_key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop_oneof![
        8 => tree,
        1 => deep_chain(leaf),
        1 => known_subtree(),
    ]
}

/// One value nested `5..40` levels deep in objects (known or unknown
/// names) and arrays.
fn deep_chain(leaf: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    (
        collection::vec((any::<bool>(), arb_nested_key()), 5..40),
        leaf,
    )
        .prop_map(|(levels, leaf)| {
            levels.into_iter().fold(leaf, |v, (array, key)| {
                if array {
                    Value::Array(vec![v])
                } else {
                    json!({ key: v })
                }
            })
        })
}

/// What looks like a Job's metadata and spec (queue label, suspend,
/// pod template) in a place where it is not one.
fn known_subtree() -> impl Strategy<Value = Value> {
    (any::<bool>(), "[a-z]{0,6}").prop_map(|(suspend, queue)| {
        json!({
            "metadata": {"labels": {"kueue.x-k8s.io/queue-name": queue},
                         "annotations": {"kueue.x-k8s.io/stopping": "true"}},
            "spec": {"suspend": suspend, "parallelism": 3,
                     "template": {"spec": {"containers": [{"name": "c"}]}}},
        })
    })
}

/// Label or annotation maps: string values only, keys that need escaping
/// and Unicode ones (a mutating webhook sees them before the apiserver
/// validates them).
pub fn arb_string_map() -> impl Strategy<Value = Map<String, Value>> {
    let key = prop_oneof![
        3 => "[a-z0-9.~/-]{1,20}",
        1 => "\\PC{1,12}",
    ];
    let value = prop_oneof![3 => "[ -~]{0,10}", 1 => "\\PC{0,10}"];
    collection::btree_map(key, value, 0..4)
        .prop_map(|m| m.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
}

/// Cluster facts for property tests: namespaces known by name only, and
/// whether a `default` LocalQueue and WorkloadPriorityClass exist.
pub struct Facts {
    pub default_lq: bool,
    pub default_wpc: bool,
}

impl ClusterFacts for Facts {
    fn namespace_matches(&self, ns: &str, sel: &LabelSelector) -> bool {
        NoCluster.namespace_matches(ns, sel)
    }
    fn default_local_queue_exists(&self, _: &str) -> bool {
        self.default_lq
    }
    fn default_priority_class_exists(&self) -> bool {
        self.default_wpc
    }
}
