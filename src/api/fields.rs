//! Fields an object carries that its CRD's structural schema does not
//! declare, named as the apiserver's strict field validation names them
//! (`kubectl`'s default): `unknown field "spec.contstraints"`. Offline
//! readers (`batchgate schedule -f`) refuse what the apiserver would.

use serde_json::Value;

/// Every undeclared field of `object` under `schema` (a CRD version's
/// `openAPIV3Schema`), sorted. `apiVersion`, `kind` and
/// `metadata` (ObjectMeta, not described by the CRD) are not checked;
/// `x-kubernetes-preserve-unknown-fields` subtrees keep anything.
pub fn unknown_fields(object: &Value, schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Value::Object(map) = object {
        for (key, child) in map {
            if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            match schema["properties"].get(key) {
                Some(s) => walk(child, s, key.clone(), &mut out),
                None if preserves(schema) => {}
                None => out.push(key.clone()),
            }
        }
    }
    out.sort();
    out
}

/// `strict decoding error: unknown field "a", unknown field "b"`: the
/// apiserver's words for the fields `unknown_fields` finds.
pub fn strict_decoding_error(unknown: &[String]) -> String {
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    format!("strict decoding error: {}", fields.join(", "))
}

fn preserves(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == true
}

fn walk(value: &Value, schema: &Value, path: String, out: &mut Vec<String>) {
    if preserves(schema) && schema.get("properties").is_none() {
        return;
    }
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, child) in map {
                let sub = format!("{path}.{key}");
                match (props.and_then(|p| p.get(key)), additional) {
                    (Some(s), _) | (None, Some(s)) => walk(child, s, sub, out),
                    // An object schema that names nothing (`type: object`
                    // alone) is what the apiserver prunes to empty.
                    (None, None) if preserves(schema) => {}
                    (None, None) => out.push(sub),
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    walk(item, s, format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"},
            "spec": {"type": "object", "properties": {
                "deviceType": {"type": "string"},
                "configs": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            }},
        }})
    }

    #[test]
    fn every_unknown_field_is_named_by_its_path() {
        let obj = json!({
            "apiVersion": "devmgmtproto.k8s.io/v1alpha1", "kind": "DeviceClass",
            "metadata": {"name": "x", "whatever": 1},
            "spec": {
                "deviceType": "gpu",
                "contstraints": "device.vendor == 'x'",
                "deviceMaxCount": 1,
                "configs": [{"name": "a"}, {"name": "b", "nmae": "c"}],
                "labels": {"any": "thing"},
                "raw": {"free": {"form": true}},
            },
            "status": {},
        });
        let unknown = unknown_fields(&obj, &schema());
        assert_eq!(
            unknown,
            [
                "spec.configs[1].nmae",
                "spec.contstraints",
                "spec.deviceMaxCount",
                "status"
            ]
        );
        assert_eq!(
            strict_decoding_error(&unknown[1..3]),
            r#"strict decoding error: unknown field "spec.contstraints", unknown field "spec.deviceMaxCount""#
        );
    }

    #[test]
    fn a_known_object_has_none() {
        let obj = json!({"spec": {"deviceType": "gpu", "configs": [{"name": "a"}]}});
        assert!(unknown_fields(&obj, &schema()).is_empty());
    }
}
