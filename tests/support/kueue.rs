//! Kueue objects as upstream's test wrappers (`pkg/util/testing/v1beta2`)
//! build them, in JSON, for the tables ported from Kueue's tests.

use serde_json::{json, Value};

/// `v` with the JSON pointer `pointer` set to `value`, creating objects on
/// the way.
pub fn with(mut v: Value, pointer: &str, value: Value) -> Value {
    let mut at = &mut v;
    for key in pointer.trim_start_matches('/').split('/') {
        let key = key.replace("~1", "/").replace("~0", "~");
        let key = key.as_str();
        if let Ok(i) = key.parse::<usize>() {
            if at.is_array() {
                at = &mut at[i];
                continue;
            }
        }
        if !at.is_object() {
            *at = json!({});
        }
        at = at
            .as_object_mut()
            .unwrap()
            .entry(key.to_string())
            .or_insert(Value::Null);
    }
    *at = value;
    v
}

/// `MakeClusterQueue("cluster-queue")`.
pub fn cq() -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
           "metadata": {"name": "cluster-queue"},
           "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
                    "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}}})
}

/// `MakeFlavorQuotas(name).Resource(res, nominal, borrowing, lending)...`;
/// an empty quantity is left out (nominal reads 0).
pub fn fq(name: &str, resources: &[(&str, &str, &str, &str)]) -> Value {
    let rs: Vec<Value> = resources
        .iter()
        .map(|(r, n, b, l)| {
            let mut q = json!({"name": r, "nominalQuota": if n.is_empty() { "0" } else { n }});
            if !b.is_empty() {
                q["borrowingLimit"] = json!(b);
            }
            if !l.is_empty() {
                q["lendingLimit"] = json!(l);
            }
            q
        })
        .collect();
    json!({"name": name, "resources": rs})
}

/// `ResourceGroup(flavors...)`: covered resources from the first flavor.
pub fn rg(flavors: Vec<Value>) -> Value {
    let covered: Vec<Value> = flavors
        .first()
        .and_then(|f| f["resources"].as_array())
        .map(|rs| rs.iter().map(|r| r["name"].clone()).collect())
        .unwrap_or_default();
    json!({"coveredResources": covered, "flavors": flavors})
}
