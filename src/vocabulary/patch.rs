//! JSON Patch (RFC 6902) built from the fields batchgate owns.
//!
//! Only `add` operations are produced, each at the deepest existing parent of
//! an owned field, so nothing batchgate does not own is removed or rewritten.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::vocabulary::pointer::Pointer;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatchOp {
    pub op: &'static str,
    pub path: String,
    pub value: Value,
}

/// Appends `token` escaped (RFC 6901) to `path`, in one pass.
pub(crate) fn push_escaped(path: &mut String, token: &str) {
    let mut from = 0;
    for (at, b) in token.bytes().enumerate() {
        let with = match b {
            b'~' => "~0",
            b'/' => "~1",
            _ => continue,
        };
        path.push_str(&token[from..at]);
        path.push_str(with);
        from = at + 1;
    }
    path.push_str(&token[from..]);
}

/// Appends the operation that makes `obj` hold `value` at `ptr`; nothing when
/// it already does. Missing parents are created as objects in a single `add`.
/// A parent that is `null` is replaced (it holds nothing to lose); a parent of
/// any other non-object type is left alone and reported as `Err(field path)`.
pub fn set(obj: &Value, ptr: &Pointer, value: Value, ops: &mut Vec<PatchOp>) -> Result<(), String> {
    set_at(obj, ptr.tokens(), value, ops)
}

/// [`set`] at unescaped tokens, borrowed or owned: the labels and
/// annotations of every queued pod are set through here, with no pointer
/// built for them.
pub fn set_at<T: AsRef<str>>(
    obj: &Value,
    tokens: &[T],
    value: Value,
    ops: &mut Vec<PatchOp>,
) -> Result<(), String> {
    // The escaped path, written once: its prefixes are the paths of the
    // parents, for the earlier operations and for the one added here.
    let mut full = String::with_capacity(64);
    for t in tokens {
        full.push('/');
        push_escaped(&mut full, t.as_ref());
    }
    // An earlier operation of this patch may already create a parent of
    // `ptr` (two labels added to an object without labels, say): the value
    // goes inside that operation, or the second `add` would replace the first.
    let value = match merge_into_earlier(&full, tokens, value, ops) {
        Ok(()) => return Ok(()),
        Err(value) => value,
    };
    let mut cur = obj;
    // `full[..end]` is the path of the tokens walked so far.
    let mut end = 0;
    for (i, t) in tokens.iter().enumerate() {
        let t = t.as_ref();
        // An escaped token holds no `/`: the next one ends this token.
        let next_end = full[end + 1..]
            .find('/')
            .map_or(full.len(), |p| end + 1 + p);
        // Pod templates inside lists (a JobSet's replicated jobs): step into
        // an existing element; elements are never created or replaced.
        if let Value::Array(items) = cur {
            match t.parse::<usize>().ok().and_then(|n| items.get(n)) {
                Some(next) if i + 1 < tokens.len() => {
                    end = next_end;
                    cur = next;
                    continue;
                }
                _ => break,
            }
        }
        let Value::Object(map) = cur else {
            break;
        };
        end = next_end;
        match map.get(t) {
            Some(next) if i + 1 == tokens.len() => {
                if *next != value {
                    ops.push(PatchOp {
                        op: "add",
                        path: full,
                        value,
                    });
                }
                return Ok(());
            }
            Some(Value::Null) | None => {
                let mut nested = value;
                for rest in tokens[i + 1..].iter().rev() {
                    let mut m = Map::new();
                    m.insert(rest.as_ref().to_string(), nested);
                    nested = Value::Object(m);
                }
                full.truncate(end);
                ops.push(PatchOp {
                    op: "add",
                    path: full,
                    value: nested,
                });
                return Ok(());
            }
            Some(next) => cur = next,
        }
    }
    full.truncate(end);
    Err(full)
}

/// Puts `value` inside the value of an earlier `add` that creates a parent
/// of `tokens`; gives the value back when there is none.
fn merge_into_earlier<T: AsRef<str>>(
    full: &str,
    tokens: &[T],
    value: Value,
    ops: &mut [PatchOp],
) -> Result<(), Value> {
    // Escaping is one-to-one, so an operation creates a parent of `tokens`
    // (escaped: `full`) exactly when its path is a proper prefix of theirs,
    // ending at a `/`.
    for op in ops.iter_mut().rev() {
        let created = op.path.as_str();
        if op.op != "add"
            || !full.starts_with(created)
            || full.as_bytes().get(created.len()) != Some(&b'/')
        {
            continue;
        }
        let depth = created.bytes().filter(|&b| b == b'/').count();
        let mut cur = &mut op.value;
        for t in &tokens[depth..tokens.len() - 1] {
            let Value::Object(map) = cur else {
                return Err(value);
            };
            cur = map
                .entry(t.as_ref())
                .or_insert_with(|| Value::Object(Map::new()));
        }
        let Value::Object(map) = cur else {
            return Err(value);
        };
        map.insert(tokens[tokens.len() - 1].as_ref().to_string(), value);
        return Ok(());
    }
    Err(value)
}

/// Sets `metadata.labels[key] = value`.
pub fn set_label(obj: &Value, key: &str, value: &str, ops: &mut Vec<PatchOp>) {
    // metadata and labels were type-checked when the object was read.
    let _ = set_at(obj, &["metadata", "labels", key], Value::from(value), ops);
}

/// Sets `metadata.annotations[key] = value`.
pub fn set_annotation(obj: &Value, key: &str, value: &str, ops: &mut Vec<PatchOp>) {
    // metadata and annotations were type-checked when the object was read.
    let _ = set_at(
        obj,
        &["metadata", "annotations", key],
        Value::from(value),
        ops,
    );
}

/// Appends `item` to the list at `ptr` unless the list already holds it,
/// creating the list (and missing parents) when there is none. A non-list
/// there is left alone and reported as `Err(field path)`.
pub fn add_to_list(
    obj: &Value,
    ptr: &Pointer,
    item: Value,
    ops: &mut Vec<PatchOp>,
) -> Result<(), String> {
    match ptr.resolve(obj) {
        None | Some(Value::Null) => set(obj, ptr, Value::Array(vec![item]), ops),
        Some(Value::Array(items)) if items.contains(&item) => Ok(()),
        Some(Value::Array(_)) => {
            ops.push(PatchOp {
                op: "add",
                path: format!("{}/-", ptr.as_str()),
                value: item,
            });
            Ok(())
        }
        Some(_) => Err(ptr.as_str().to_string()),
    }
}

/// The patch as JSON bytes, as serde writes `ops` (written by hand: every
/// queued pod's answer carries four operations).
pub fn to_json(ops: &[PatchOp]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.push(b'[');
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"op\":");
        let written = serde_json::to_writer(&mut out, op.op)
            .and_then(|()| {
                out.extend_from_slice(b",\"path\":");
                serde_json::to_writer(&mut out, &op.path)
            })
            .and_then(|()| {
                out.extend_from_slice(b",\"value\":");
                serde_json::to_writer(&mut out, &op.value)
            });
        if written.is_err() {
            return b"[]".to_vec();
        }
        out.push(b'}');
    }
    out.push(b']');
    out
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
    fn written_as_serde_writes_the_operations() {
        let ops = [
            PatchOp {
                op: "add",
                path: "/metadata/labels/a~1b".into(),
                value: json!("v\"q"),
            },
            PatchOp {
                op: "add",
                path: "/spec/schedulingGates".into(),
                value: json!([{"name": "g"}, {"name": "h\u{1}"}]),
            },
            PatchOp {
                op: "add",
                path: "/spec/suspend".into(),
                value: json!(true),
            },
        ];
        for n in 0..=ops.len() {
            assert_eq!(to_json(&ops[..n]), serde_json::to_vec(&ops[..n]).unwrap());
        }
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
    fn later_fields_join_a_parent_created_earlier() {
        let obj = json!({"metadata": {"name": "j"}, "spec": {"template": {}}});
        let mut ops = vec![];
        set_label(&obj, "kueue.x-k8s.io/queue-name", "default", &mut ops);
        set_label(&obj, "kueue.x-k8s.io/priority-class", "default", &mut ops);
        let sel = Pointer::parse("/spec/template/spec/nodeSelector/zone").unwrap();
        set(&obj, &sel, json!("a"), &mut ops).unwrap();
        let sel = Pointer::parse("/spec/template/spec/nodeSelector/disk").unwrap();
        set(&obj, &sel, json!("ssd"), &mut ops).unwrap();
        assert_eq!(ops.len(), 2, "{ops:?}");
        assert_eq!(
            apply(&obj, &ops),
            json!({"metadata": {"name": "j", "labels": {
                      "kueue.x-k8s.io/queue-name": "default",
                      "kueue.x-k8s.io/priority-class": "default"}},
                   "spec": {"template": {"spec": {"nodeSelector": {"zone": "a", "disk": "ssd"}}}}})
        );
    }

    #[test]
    fn steps_into_list_elements_but_never_creates_them() {
        let obj = json!({"spec": {"jobs": [{"t": {}}, {"t": {"a": 1}}]}});
        let mut ops = vec![];
        let p = Pointer::parse("/spec/jobs/1/t/b").unwrap();
        set(&obj, &p, json!(2), &mut ops).unwrap();
        assert_eq!(ops[0].path, "/spec/jobs/1/t/b");
        assert_eq!(
            apply(&obj, &ops),
            json!({"spec": {"jobs": [{"t": {}}, {"t": {"a": 1, "b": 2}}]}})
        );
        let mut ops = vec![];
        let missing = Pointer::parse("/spec/jobs/2/t").unwrap();
        assert_eq!(
            set(&obj, &missing, json!(1), &mut ops),
            Err("/spec/jobs".into())
        );
        let whole = Pointer::parse("/spec/jobs/0").unwrap();
        assert!(set(&obj, &whole, json!(1), &mut ops).is_err());
        assert!(ops.is_empty());
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
    fn escapes_every_tilde_and_slash_in_place() {
        for (token, escaped) in [
            ("", ""),
            ("plain", "plain"),
            ("a/b", "a~1b"),
            ("~", "~0"),
            ("~1", "~01"),
            ("/~/", "~1~0~1"),
            ("é/ü~", "é~1ü~0"),
        ] {
            let mut out = String::from("/x/");
            push_escaped(&mut out, token);
            assert_eq!(out, format!("/x/{escaped}"), "{token:?}");
            assert_eq!(escaped.replace("~1", "/").replace("~0", "~"), token);
        }
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
