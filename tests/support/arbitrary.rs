//! Arbitrary JSON for the lossless property tests: the unknown fields a
//! third-party object may carry anywhere.

use batchgate::{
    admission::{ClusterFacts, NoCluster},
    api::selector::LabelSelector,
};
use proptest::{collection, prelude::*};
use serde_json::{json, Map, Value};

/// Keys that need JSON-pointer escaping (`~` and `/`) included; all start
/// with `x`, so they never collide with a field the rules read.
pub fn arb_key() -> impl Strategy<Value = String> {
    "x[a-zA-Z0-9~/._-]{0,10}"
}

pub fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e9f64..1e9).prop_map(|f| json!(f)),
        "[ -~\u{e9}\u{4e2d}]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            collection::btree_map(arb_key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Label or annotation maps: string values only, keys that need escaping.
pub fn arb_string_map() -> impl Strategy<Value = Map<String, Value>> {
    collection::btree_map("[a-z0-9.~/-]{1,20}", "[ -~]{0,10}", 0..4)
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
