//! `equality.Semantic.DeepEqual` on raw JSON, for upstream's
//! `ValidateImmutableField`: Go compares decoded structs, so an absent
//! field, `null`, and an empty list or map are the same (nil and empty
//! slices and maps are equal), numbers compare by value, and resource
//! quantities compare by amount (`"1"` equals `"1000m"`).

use serde_json::{Map, Value};

use crate::vocabulary::quantity::Quantity;

/// Keys whose values are `corev1.ResourceList`s.
const RESOURCE_LISTS: &[&str] = &["requests", "limits", "overhead", "resourceUsage"];

fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        Some(_) => false,
    }
}

/// Whether `a` and `b` decode to semantically equal Go values.
pub fn equal(a: Option<&Value>, b: Option<&Value>) -> bool {
    equal_in(a, b, false)
}

fn equal_in(a: Option<&Value>, b: Option<&Value>, quantities: bool) -> bool {
    if is_empty(a) && is_empty(b) {
        return true;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => maps_equal(x, y, quantities),
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| equal_in(Some(p), Some(q), false))
        }
        (Some(Value::Number(x)), Some(Value::Number(y))) => match (x.as_i64(), y.as_i64()) {
            (Some(p), Some(q)) => p == q,
            _ => x.as_f64() == y.as_f64(),
        },
        (Some(Value::String(x)), Some(Value::String(y))) if quantities && x != y => {
            match (Quantity::parse(x), Quantity::parse(y)) {
                (Ok(p), Ok(q)) => p.cmp_value(&q).is_eq(),
                _ => false,
            }
        }
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// `resource_list`: `x` and `y` are resource lists, whose values are
/// quantities.
fn maps_equal(x: &Map<String, Value>, y: &Map<String, Value>, resource_list: bool) -> bool {
    let mut keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
    keys.all(|k| {
        let quantities = resource_list || RESOURCE_LISTS.contains(&k.as_str());
        equal_in(x.get(k), y.get(k), quantities)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn absent_null_and_empty_are_equal() {
        assert!(equal(None, Some(&json!(null))));
        assert!(equal(Some(&json!([])), None));
        assert!(equal(Some(&json!({"a": {}})), Some(&json!({"b": []}))));
        assert!(!equal(Some(&json!({"a": 1})), Some(&json!({}))));
        assert!(!equal(Some(&json!([1])), Some(&json!([]))));
    }

    #[test]
    fn numbers_and_quantities_compare_by_value() {
        assert!(equal(Some(&json!(1)), Some(&json!(1.0))));
        let a = json!({"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}});
        let b = json!({"resources": {"requests": {"cpu": "1000m", "memory": "1024Mi"}}});
        assert!(equal(Some(&a), Some(&b)));
        let c = json!({"resources": {"requests": {"cpu": "2"}}});
        assert!(!equal(Some(&a), Some(&c)));
        // Outside resource lists strings are strings.
        assert!(!equal(
            Some(&json!({"image": "1"})),
            Some(&json!({"image": "1000m"}))
        ));
        assert!(equal(
            Some(&json!({"resourceUsage": {"cpu": "1"}})),
            Some(&json!({"resourceUsage": {"cpu": "1000m"}}))
        ));
    }
}
