//! ResourceFlavor validation: upstream's
//! `pkg/webhooks/resourceflavor_webhook.go` (`ValidateResourceFlavor`,
//! `validateNodeTaints`) and the `validateTolerations` it shares with the
//! Workload webhook. Create and update alike.

use k8s_openapi::api::core::v1::{Taint, Toleration};
use serde_json::Value;

use super::{decode, json_in_go_order, labels, Shown, Violation};
use crate::{admission::object::DecodeError, api::kueue::v1beta2::ResourceFlavor};

type Checked = Result<Vec<Violation>, (&'static str, DecodeError)>;

pub fn validate(new: &Value) -> Checked {
    let rf: ResourceFlavor = decode(new, "object")?;
    let mut errs = labels::validate_labels(rf.spec.node_labels.as_ref(), "spec.nodeLabels");
    errs.extend(node_taints(
        rf.spec.node_taints.as_deref().unwrap_or_default(),
        "spec.nodeTaints",
    ));
    errs.extend(tolerations(
        rf.spec.tolerations.as_deref().unwrap_or_default(),
        "spec.tolerations",
    ));
    Ok(errs)
}

/// `validateNodeTaints`: keys are label names, values label values, and no
/// two taints share a key and an effect.
fn node_taints(taints: &[Taint], path: &str) -> Vec<Violation> {
    let mut errs = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, t) in taints.iter().enumerate() {
        let at = format!("{path}[{i}]");
        errs.extend(labels::validate_label_name(&t.key, &format!("{at}.key")));
        let value = t.value.as_deref().unwrap_or_default();
        let msgs = labels::label_value(value);
        if !msgs.is_empty() {
            errs.push(Violation::invalid(
                format!("{at}.value"),
                value,
                msgs.join(";"),
            ));
        }
        if seen.contains(&(t.key.as_str(), t.effect.as_str())) {
            errs.push(Violation::duplicate(
                at,
                Shown::Json(taint_json(t)),
                "taints must be unique by key and effect pair",
            ));
            continue;
        }
        seen.push((t.key.as_str(), t.effect.as_str()));
    }
    errs
}

/// `corev1.Taint` as Go marshals it (`value` and `timeAdded` omitted when
/// empty).
fn taint_json(t: &Taint) -> String {
    let mut m = serde_json::Map::new();
    m.insert("key".into(), t.key.clone().into());
    if let Some(v) = t.value.as_deref().filter(|v| !v.is_empty()) {
        m.insert("value".into(), v.into());
    }
    m.insert("effect".into(), t.effect.clone().into());
    if let Some(time) = &t.time_added {
        if let Ok(v) = serde_json::to_value(time) {
            m.insert("timeAdded".into(), v);
        }
    }
    json_in_go_order(&Value::Object(m), &["key", "value", "effect", "timeAdded"])
}

/// `validateTolerations`: a key, when given, is a label name (the other
/// toleration rules are CEL in the CRD).
pub fn tolerations(tolerations: &[Toleration], path: &str) -> Vec<Violation> {
    let mut errs = Vec::new();
    for (i, t) in tolerations.iter().enumerate() {
        if let Some(key) = t.key.as_deref().filter(|k| !k.is_empty()) {
            errs.extend(labels::validate_label_name(
                key,
                &format!("{path}[{i}].key"),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(spec: Value) -> Vec<String> {
        let rf = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                        "metadata": {"name": "rf"}, "spec": spec});
        validate(&rf)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    const KEY_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn a_valid_flavor_passes() {
        let spec = json!({
            "nodeLabels": {"cloud.google.com/gke-accelerator": "nvidia-a100", "spot": "true"},
            "nodeTaints": [
                {"key": "spot", "value": "true", "effect": "NoSchedule"},
                {"key": "spot", "value": "true", "effect": "NoExecute"},
            ],
            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"},
                            {"operator": "Exists"}],
        });
        assert_eq!(errors(spec), Vec::<String>::new());
        assert_eq!(errors(Value::Null), Vec::<String>::new());
    }

    #[test]
    fn node_labels_are_valid_labels() {
        assert_eq!(
            errors(json!({"nodeLabels": {"@zone": "a", "ok": "not ok"}})),
            [
                format!(r#"spec.nodeLabels: Invalid value: "@zone": {KEY_MSG}"#),
                format!(r#"spec.nodeLabels: Invalid value: "not ok": {VALUE_MSG}"#),
            ]
        );
    }

    #[test]
    fn taints_have_valid_keys_and_values() {
        let long = "v".repeat(64);
        assert_eq!(
            errors(json!({"nodeTaints": [{"key": "@t", "value": long, "effect": "NoSchedule"}]})),
            [
                format!(r#"spec.nodeTaints[0].key: Invalid value: "@t": {KEY_MSG}"#),
                format!(
                    r#"spec.nodeTaints[0].value: Invalid value: "{long}": must be no more than 63 characters"#
                ),
            ]
        );
        assert_eq!(
            errors(json!({"nodeTaints": [{"key": "t", "value": "-x-", "effect": "NoSchedule"}]})),
            [format!(
                r#"spec.nodeTaints[0].value: Invalid value: "-x-": {VALUE_MSG}"#
            )]
        );
    }

    #[test]
    fn taints_are_unique_by_key_and_effect() {
        assert_eq!(
            errors(json!({"nodeTaints": [
                {"key": "spot", "value": "a", "effect": "NoSchedule"},
                {"key": "spot", "value": "b", "effect": "NoSchedule"},
                {"key": "spot", "effect": "NoSchedule"},
            ]})),
            [
                r#"spec.nodeTaints[1]: Duplicate value: {"key":"spot","value":"b","effect":"NoSchedule"}: taints must be unique by key and effect pair"#,
                r#"spec.nodeTaints[2]: Duplicate value: {"key":"spot","effect":"NoSchedule"}: taints must be unique by key and effect pair"#,
            ]
        );
    }

    #[test]
    fn toleration_keys_are_label_names() {
        assert_eq!(
            errors(
                json!({"tolerations": [{"key": "ok", "operator": "Exists"}, {"key": "b@d", "operator": "Exists"}]})
            ),
            [format!(
                r#"spec.tolerations[1].key: Invalid value: "b@d": {KEY_MSG}"#
            )]
        );
    }
}
