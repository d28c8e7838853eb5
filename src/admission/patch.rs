//! JSON Patch (RFC 6902) built from the fields batchgate owns.
//!
//! Only `add` operations are produced, each at the deepest existing parent of
//! an owned field, so nothing batchgate does not own is removed or rewritten.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::policy::Pointer;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatchOp {
    pub op: &'static str,
    pub path: String,
    pub value: Value,
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Appends the operation that makes `obj` hold `value` at `ptr`; nothing when
/// it already does. Missing parents are created as objects in a single `add`.
/// A parent that is `null` is replaced (it holds nothing to lose); a parent of
/// any other non-object type is left alone and reported as `Err(field path)`.
pub fn set(obj: &Value, ptr: &Pointer, value: Value, ops: &mut Vec<PatchOp>) -> Result<(), String> {
    let tokens = ptr.tokens();
    let mut cur = obj;
    let mut path = String::new();
    for (i, t) in tokens.iter().enumerate() {
        let Value::Object(map) = cur else {
            return Err(path);
        };
        path.push('/');
        path.push_str(&escape(t));
        match map.get(t.as_str()) {
            Some(next) if i + 1 == tokens.len() => {
                if *next != value {
                    ops.push(PatchOp {
                        op: "add",
                        path,
                        value,
                    });
                }
                return Ok(());
            }
            Some(Value::Null) | None => {
                let mut nested = value;
                for rest in tokens[i + 1..].iter().rev() {
                    let mut m = Map::new();
                    m.insert(rest.clone(), nested);
                    nested = Value::Object(m);
                }
                ops.push(PatchOp {
                    op: "add",
                    path,
                    value: nested,
                });
                return Ok(());
            }
            Some(next) => cur = next,
        }
    }
    Err(path)
}

/// Sets `metadata.labels[key] = value`.
pub fn set_label(obj: &Value, key: &str, value: &str, ops: &mut Vec<PatchOp>) {
    let ptr = Pointer::parse(&format!("/metadata/labels/{}", escape(key)));
    if let Ok(ptr) = ptr {
        // metadata and labels were type-checked when the object was read.
        let _ = set(obj, &ptr, Value::String(value.to_string()), ops);
    }
}

/// The patch as JSON bytes.
pub fn to_json(ops: &[PatchOp]) -> Vec<u8> {
    serde_json::to_vec(ops).unwrap_or_else(|_| b"[]".to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(obj: &Value, ops: &[PatchOp]) -> Value {
        let patch: json_patch::Patch = serde_json::from_slice(&to_json(ops)).unwrap();
        let mut out = obj.clone();
        json_patch::patch(&mut out, &patch).unwrap();
        out
    }

    #[test]
    fn adds_leaf_when_parent_exists() {
        let obj = json!({"spec": {"parallelism": 2}});
        let mut ops = vec![];
        set(
            &obj,
            &Pointer::parse("/spec/suspend").unwrap(),
            json!(true),
            &mut ops,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&ops).unwrap(),
            json!([{"op": "add", "path": "/spec/suspend", "value": true}])
        );
        assert_eq!(
            apply(&obj, &ops),
            json!({"spec": {"parallelism": 2, "suspend": true}})
        );
    }

    #[test]
    fn creates_missing_parents_in_one_op() {
        let obj = json!({"spec": {}});
        let mut ops = vec![];
        let p = Pointer::parse("/spec/runPolicy/suspend").unwrap();
        set(&obj, &p, json!(true), &mut ops).unwrap();
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].path, "/spec/runPolicy");
        assert_eq!(
            apply(&obj, &ops),
            json!({"spec": {"runPolicy": {"suspend": true}}})
        );
    }

    #[test]
    fn no_op_when_value_already_set() {
        let obj = json!({"spec": {"suspend": true}});
        let mut ops = vec![];
        set(
            &obj,
            &Pointer::parse("/spec/suspend").unwrap(),
            json!(true),
            &mut ops,
        )
        .unwrap();
        assert!(ops.is_empty());
    }

    #[test]
    fn escapes_label_keys() {
        let obj = json!({"metadata": {"labels": {"a": "b"}}});
        let mut ops = vec![];
        set_label(&obj, "kueue.x-k8s.io/queue-name", "default", &mut ops);
        assert_eq!(ops[0].path, "/metadata/labels/kueue.x-k8s.io~1queue-name");
        assert_eq!(
            apply(&obj, &ops),
            json!({"metadata": {"labels": {"a": "b", "kueue.x-k8s.io/queue-name": "default"}}})
        );
    }

    #[test]
    fn refuses_to_overwrite_a_non_object_parent() {
        let obj = json!({"spec": "oops"});
        let mut ops = vec![];
        let err = set(
            &obj,
            &Pointer::parse("/spec/suspend").unwrap(),
            json!(true),
            &mut ops,
        );
        assert_eq!(err, Err("/spec".to_string()));
        assert!(ops.is_empty());
    }
}
