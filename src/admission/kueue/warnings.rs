//! Admission warnings Kueue's webhooks return with their answer (allowed or
//! not): deprecated values that still pass and will be refused later.

use crate::vocabulary::pointer::At;
use serde_json::Value;

use super::Kind;
use crate::admission::Operation;

/// The warnings for a create or update of `object` (the new object).
pub fn for_object(kind: Kind, operation: Operation, object: Option<&Value>) -> Vec<String> {
    match (kind, operation, object) {
        (Kind::Workload, Operation::Create | Operation::Update, Some(wl)) => workload(wl),
        _ => Vec::new(),
    }
}

/// `warningsForWorkload`: a negative `topologyRequest.subGroupCount` is
/// deprecated (Kueue v0.19.2).
fn workload(wl: &Value) -> Vec<String> {
    let Some(pod_sets) = wl.at("/spec/podSets").and_then(Value::as_array) else {
        return Vec::new();
    };
    pod_sets
        .iter()
        .enumerate()
        .filter_map(|(i, ps)| {
            let n = ps.at("/topologyRequest/subGroupCount")?.as_i64()?;
            (n < 0).then(|| {
                format!(
                    "spec.podSets[{i}].topologyRequest.subGroupCount: negative value {n} is deprecated and will be rejected in a future release"
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn negative_sub_group_count_warns() {
        let wl = json!({"spec": {"podSets": [
            {"name": "a", "topologyRequest": {"subGroupCount": 2}},
            {"name": "b", "topologyRequest": {"subGroupCount": -1}}
        ]}});
        assert_eq!(
            for_object(Kind::Workload, Operation::Update, Some(&wl)),
            ["spec.podSets[1].topologyRequest.subGroupCount: negative value -1 is deprecated and will be rejected in a future release"]
        );
        assert!(for_object(Kind::ClusterQueue, Operation::Create, Some(&wl)).is_empty());
        assert!(for_object(Kind::Workload, Operation::Delete, Some(&wl)).is_empty());
    }
}
