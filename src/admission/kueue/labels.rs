//! apimachinery's name and label validation (`k8s.io/apimachinery/pkg/util/
//! validation`, `pkg/apis/meta/v1/validation`, `pkg/api/validation`), with
//! its messages word for word: Kueue's webhooks call these for flavor node
//! labels, taint and toleration keys, namespace selectors and admission
//! check pod set updates.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::Violation;
use crate::vocabulary::names;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/// `TotalAnnotationSizeLimitB`.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// `validation.RegexError`.
pub(crate) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(e);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, anchored.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `validation.IsDNS1123Subdomain`.
pub fn dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !names::is_subdomain_format(v) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `validation.IsDNS1123Label`.
pub fn dns1123_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !names::is_label_format(v) {
        errs.push(regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            "[a-z0-9]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "123-abc"],
        ));
    }
    errs
}

/// `validation.IsQualifiedName`.
pub fn qualified_name(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = v.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub fn label_value(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !v.is_empty() && !is_qualified_name_part(v) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `metav1validation.ValidateLabelName`: the key is the value reported.
pub fn validate_label_name(key: &str, path: &str) -> Vec<Violation> {
    qualified_name(key)
        .into_iter()
        .map(|m| Violation::invalid(path, key, m))
        .collect()
}

/// `metav1validation.ValidateLabels` (keys in sorted order; Go's map order
/// is random).
pub fn validate_labels(labels: Option<&BTreeMap<String, String>>, path: &str) -> Vec<Violation> {
    let mut errs = Vec::new();
    for (k, v) in labels.into_iter().flatten() {
        errs.extend(validate_label_name(k, path));
        errs.extend(
            label_value(v)
                .into_iter()
                .map(|m| Violation::invalid(path, v, m)),
        );
    }
    errs
}

/// `apivalidation.ValidateAnnotations`.
pub fn validate_annotations(
    annotations: Option<&BTreeMap<String, String>>,
    path: &str,
) -> Vec<Violation> {
    let mut errs = Vec::new();
    let Some(annotations) = annotations else {
        return errs;
    };
    let mut size = 0usize;
    for (k, v) in annotations {
        // QualifiedName, except that case does not matter.
        errs.extend(
            qualified_name(&k.to_lowercase())
                .into_iter()
                .map(|m| Violation::invalid(path, k, m)),
        );
        size += k.len() + v.len();
    }
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(Violation::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// `metav1validation.ValidateLabelSelector` with default options.
pub fn validate_label_selector(selector: Option<&LabelSelector>, path: &str) -> Vec<Violation> {
    let mut errs = Vec::new();
    let Some(sel) = selector else {
        return errs;
    };
    errs.extend(validate_labels(
        sel.match_labels.as_ref(),
        &format!("{path}.matchLabels"),
    ));
    for (i, req) in sel.match_expressions.iter().flatten().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values = req.values.as_deref().unwrap_or_default();
        match req.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => errs.push(Violation::required(
                format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(Violation::forbidden(
                format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(Violation::invalid(
                format!("{at}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        errs.extend(validate_label_name(&req.key, &format!("{at}.key")));
        for (j, v) in values.iter().enumerate() {
            errs.extend(
                label_value(v)
                    .into_iter()
                    .map(|m| Violation::invalid(format!("{at}.values[{j}]"), v, m)),
            );
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    #[test]
    fn qualified_names_as_apimachinery() {
        assert!(qualified_name("example.com/gpu").is_empty());
        assert!(qualified_name("cpu").is_empty());
        assert_eq!(qualified_name("@abc"), vec![NAME_PART.to_string()]);
        assert_eq!(
            qualified_name(""),
            vec![
                "name part must be non-empty".to_string(),
                NAME_PART.to_string()
            ]
        );
        assert_eq!(
            qualified_name("/x"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert_eq!(
            qualified_name("Bad_Prefix/x"),
            vec!["prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string()]
        );
        assert!(qualified_name("a/b/c")[0].starts_with("a qualified name must consist of"));
        assert_eq!(
            qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters".to_string()]
        );
    }

    #[test]
    fn label_values_as_apimachinery() {
        assert!(label_value("").is_empty());
        assert!(label_value("v1.2_3-x").is_empty());
        assert_eq!(
            label_value("-x"),
            vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()]
        );
    }

    #[test]
    fn label_selectors_as_apimachinery() {
        let sel: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"team": "a b"},
            "matchExpressions": [
                {"key": "k", "operator": "In"},
                {"key": "k", "operator": "Exists", "values": ["x"]},
                {"key": "k", "operator": "Near", "values": ["x"]},
            ],
        }))
        .unwrap();
        let got: Vec<String> = validate_label_selector(Some(&sel), "spec.namespaceSelector")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got[0].starts_with(
            r#"spec.namespaceSelector.matchLabels: Invalid value: "a b": a valid label must be"#
        ));
        assert_eq!(
            got[1],
            "spec.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        );
        assert_eq!(
            got[2],
            "spec.namespaceSelector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        );
        assert_eq!(
            got[3],
            r#"spec.namespaceSelector.matchExpressions[2].operator: Invalid value: "Near": not a valid selector operator"#
        );
    }

    #[test]
    fn annotations_are_checked_case_insensitively_and_by_size() {
        let mut m = BTreeMap::new();
        m.insert("Example.COM/Key".to_string(), "v".to_string());
        assert!(validate_annotations(Some(&m), "a").is_empty());
        m.insert("big".to_string(), "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT));
        let errs = validate_annotations(Some(&m), "a");
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["a: Too long: may not be more than 262144 bytes"]
        );
    }
}
