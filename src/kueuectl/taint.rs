//! `--node-taints KEY[=VALUE]:EFFECT,...` and
//! `--tolerations KEY[=VALUE][:EFFECT]|:EFFECT,...` of
//! `create resourceflavor`, checked with upstream's words.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Taint, Toleration};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaintError {
    #[error("invalid taint spec: {0}")]
    TaintSpec(String),
    #[error("invalid taint effect: {0}, unsupported taint effect")]
    Effect(String),
    #[error("duplicated taints with the same key and effect: {0}")]
    Duplicated(String),
    #[error("invalid toleration spec: {0}")]
    TolerationSpec(String),
}

/// `KEY[=VALUE][:EFFECT]`, or `None` when there are too many `:` or `=`.
fn split(spec: &str) -> Option<(&str, &str, &str)> {
    let mut parts = spec.split(':');
    let kv = parts.next()?;
    let effect = parts.next().unwrap_or("");
    if parts.next().is_some() {
        return None;
    }
    let mut kvs = kv.split('=');
    let key = kvs.next().unwrap_or("");
    let value = kvs.next().unwrap_or("");
    if kvs.next().is_some() {
        return None;
    }
    Some((key, value, effect))
}

fn effect_ok(effect: &str) -> Result<(), TaintError> {
    match effect {
        "NoSchedule" | "NoExecute" => Ok(()),
        other => Err(TaintError::Effect(other.to_string())),
    }
}

fn name_part_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Kubernetes' qualified name (`[prefix/]name`), as for label keys; the
/// reason when it is not one.
pub fn qualified_name_problem(key: &str) -> Option<&'static str> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        let dns = !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            });
        if !dns {
            return Some("prefix part must be a lowercase RFC 1123 subdomain (e.g. 'example.com')");
        }
    }
    if !name_part_ok(name) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc'), and be at most 63 characters",
        );
    }
    None
}

/// The reason a label value is not valid, if it is not.
pub fn label_value_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() || name_part_ok(value) {
        None
    } else {
        Some("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345'), and be at most 63 characters")
    }
}

pub fn parse_taint(spec: &str) -> Result<Taint, TaintError> {
    let invalid = || TaintError::TaintSpec(spec.to_string());
    let (key, value, effect) = split(spec).ok_or_else(invalid)?;
    if spec.is_empty() || effect.is_empty() {
        return Err(invalid());
    }
    effect_ok(effect)?;
    if let Some(why) = qualified_name_problem(key) {
        return Err(TaintError::TaintSpec(format!("{spec}, {why}")));
    }
    if let Some(why) = label_value_problem(value) {
        return Err(TaintError::TaintSpec(format!("{spec}, {why}")));
    }
    Ok(Taint {
        key: key.to_string(),
        value: (!value.is_empty()).then(|| value.to_string()),
        effect: effect.to_string(),
        time_added: None,
    })
}

/// Every taint, refusing two with the same key and effect.
pub fn parse_taints(specs: &[String]) -> Result<Vec<Taint>, TaintError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for s in specs {
        let t = parse_taint(s)?;
        if !seen.insert((t.effect.clone(), t.key.clone())) {
            return Err(TaintError::Duplicated(format!(
                "{{{} {} {} <nil>}}",
                t.key,
                t.value.as_deref().unwrap_or(""),
                t.effect
            )));
        }
        out.push(t);
    }
    Ok(out)
}

/// `KEY=VALUE:EFFECT`, `KEY:EFFECT`, `KEY=VALUE`, `:EFFECT` or `KEY`;
/// operator `Exists` when the key or the value is empty, else `Equal`.
pub fn parse_toleration(spec: &str) -> Result<Toleration, TaintError> {
    let invalid = || TaintError::TolerationSpec(spec.to_string());
    if spec.is_empty() {
        return Err(invalid());
    }
    let (key, value, effect) = split(spec).ok_or_else(invalid)?;
    if key.is_empty() && !value.is_empty() {
        return Err(invalid());
    }
    if !effect.is_empty() {
        effect_ok(effect)?;
    }
    if !key.is_empty() {
        if let Some(why) = qualified_name_problem(key) {
            return Err(TaintError::TolerationSpec(format!("{spec}, {why}")));
        }
    }
    if let Some(why) = label_value_problem(value) {
        return Err(TaintError::TolerationSpec(format!("{spec}, {why}")));
    }
    let exists = key.is_empty() || value.is_empty();
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Ok(Toleration {
        key: opt(key),
        operator: Some(if exists { "Exists" } else { "Equal" }.into()),
        value: opt(value),
        effect: opt(effect),
        toleration_seconds: None,
    })
}

pub fn parse_tolerations(specs: &[String]) -> Result<Vec<Toleration>, TaintError> {
    specs.iter().map(|s| parse_toleration(s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taints_need_an_effect_that_admission_considers() {
        let t = parse_taint("gpu=true:NoSchedule").unwrap();
        assert_eq!(
            (t.key.as_str(), t.value.as_deref(), t.effect.as_str()),
            ("gpu", Some("true"), "NoSchedule")
        );
        assert_eq!(parse_taint("spot:NoExecute").unwrap().value, None);
        assert_eq!(
            parse_taint("gpu=true"),
            Err(TaintError::TaintSpec("gpu=true".into()))
        );
        assert_eq!(
            parse_taint("gpu:PreferNoSchedule"),
            Err(TaintError::Effect("PreferNoSchedule".into()))
        );
        assert_eq!(
            parse_taint("a:b:NoSchedule"),
            Err(TaintError::TaintSpec("a:b:NoSchedule".into()))
        );
        assert!(
            matches!(parse_taint("-bad:NoSchedule"), Err(TaintError::TaintSpec(m)) if m.starts_with("-bad:NoSchedule, name part"))
        );
        assert_eq!(
            TaintError::Effect("X".into()).to_string(),
            "invalid taint effect: X, unsupported taint effect"
        );
    }

    #[test]
    fn duplicated_taints_are_refused() {
        let e = parse_taints(&["a=1:NoSchedule".into(), "a=2:NoSchedule".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "duplicated taints with the same key and effect: {a 2 NoSchedule <nil>}"
        );
        assert!(parse_taints(&["a:NoSchedule".into(), "a:NoExecute".into()]).is_ok());
    }

    #[test]
    fn tolerations_take_every_upstream_form() {
        let t = parse_toleration("key=value:NoSchedule").unwrap();
        assert_eq!(t.operator.as_deref(), Some("Equal"));
        let t = parse_toleration("key:NoExecute").unwrap();
        assert_eq!(
            (t.key.as_deref(), t.operator.as_deref(), t.value.as_deref()),
            (Some("key"), Some("Exists"), None)
        );
        let t = parse_toleration(":NoSchedule").unwrap();
        assert_eq!(
            (t.key, t.operator.as_deref(), t.effect.as_deref()),
            (None, Some("Exists"), Some("NoSchedule"))
        );
        let t = parse_toleration("key").unwrap();
        assert_eq!(t.effect, None);
        assert_eq!(
            parse_toleration("=v"),
            Err(TaintError::TolerationSpec("=v".into()))
        );
        assert_eq!(
            parse_toleration(""),
            Err(TaintError::TolerationSpec("".into()))
        );
        assert_eq!(
            parse_toleration("k:Bad"),
            Err(TaintError::Effect("Bad".into()))
        );
    }
}
