//! The `kueue.x-k8s.io/admission-gated-by` annotation (gate AdmissionGatedBy,
//! on by default in Kueue v0.19): a comma-separated list of domain-prefixed
//! gate names (`example.com/gate`) that hold admission until each is removed.
//! Set only at creation; later writes may only remove gates.
//! Upstream: `pkg/util/webhook/validation_admissiongatedby.go`.

use std::collections::{BTreeMap, BTreeSet};

use super::{labels, Violation};
use crate::admission::field::annotation_path;

pub const ANNOTATION: &str = "kueue.x-k8s.io/admission-gated-by";
/// `MaxGateNameLengthForAdmissionGatedBy`, as for a Job's `spec.managedBy`.
pub const MAX_GATE_NAME_LENGTH: usize = 63;

type Annotations = BTreeMap<String, String>;

/// `csv.Parse`: comma-separated, each part trimmed; blank is no parts.
fn gates(value: &str) -> Vec<&str> {
    if value.trim().is_empty() {
        return Vec::new();
    }
    value.split(',').map(str::trim).collect()
}

/// `ValidateAdmissionGatedByAnnotationOnCreate`.
pub fn on_create(annotations: Option<&Annotations>) -> Vec<Violation> {
    format(value(annotations).unwrap_or_default())
}

/// `ValidateAdmissionGatedByAnnotationOnUpdate`.
pub fn on_update(old: Option<&Annotations>, new: Option<&Annotations>) -> Vec<Violation> {
    let path = annotation_path(ANNOTATION);
    let (old, new) = (
        value(old).unwrap_or_default(),
        value(new).unwrap_or_default(),
    );
    let mut errs = Vec::new();
    if old.is_empty() && !new.is_empty() {
        errs.push(Violation::forbidden(
            &path,
            "cannot add admission gate after creation",
        ));
    }
    if !old.is_empty() && !new.is_empty() {
        let before: BTreeSet<&str> = gates(old).into_iter().collect();
        if gates(new).iter().any(|g| !before.contains(g)) {
            errs.push(Violation::forbidden(
                &path,
                "can only remove gates, not add new ones",
            ));
        }
    }
    errs.extend(format(new));
    errs
}

fn value(annotations: Option<&Annotations>) -> Option<&str> {
    annotations?.get(ANNOTATION).map(String::as_str)
}

/// `validateAdmissionGatedByAnnotationFormat`.
fn format(value: &str) -> Vec<Violation> {
    let path = annotation_path(ANNOTATION);
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for gate in gates(value) {
        if gate.is_empty() {
            errs.push(Violation::invalid(
                &path,
                value,
                "cannot contain empty gate names",
            ));
            continue;
        }
        if !seen.insert(gate) {
            errs.push(Violation::invalid(
                &path,
                value,
                format!("duplicate gate name: {gate}"),
            ));
            continue;
        }
        errs.extend(domain_prefixed_path(&path, gate));
        if gate.len() > MAX_GATE_NAME_LENGTH {
            errs.push(Violation::too_long(&path, MAX_GATE_NAME_LENGTH));
        }
    }
    errs
}

/// RFC 3986 path characters (`httpPathFmt`).
const HTTP_PATH_FMT: &str = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";

/// `validation.IsDomainPrefixedPath`: a DNS subdomain, `/`, an HTTP path.
fn domain_prefixed_path(path: &str, gate: &str) -> Vec<Violation> {
    let Some((host, rest)) = gate
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        return vec![Violation::invalid(
            path,
            gate,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<Violation> = labels::dns1123_subdomain(host)
        .into_iter()
        .map(|m| Violation::invalid(path, host, m))
        .collect();
    let http_path = rest
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c));
    if !http_path {
        errs.push(Violation::invalid(
            path,
            rest,
            format!("Invalid path (regex used for validation is '{HTTP_PATH_FMT}')"),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(v: &str) -> Annotations {
        [(ANNOTATION.to_string(), v.to_string())].into()
    }

    fn messages(v: Vec<Violation>) -> Vec<String> {
        v.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn well_formed_gates_pass_and_malformed_ones_are_named() {
        assert!(on_create(Some(&ann("example.com/a, example.com/b"))).is_empty());
        assert!(on_create(None).is_empty());
        assert_eq!(
            messages(on_create(Some(&ann("example.com/a,,example.com/a")))),
            [
                r#"metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "example.com/a,,example.com/a": cannot contain empty gate names"#,
                r#"metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "example.com/a,,example.com/a": duplicate gate name: example.com/a"#,
            ]
        );
        assert_eq!(
            messages(on_create(Some(&ann("gate")))),
            [
                r#"metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "gate": must be a domain-prefixed path (such as "acme.io/foo")"#
            ]
        );
    }

    #[test]
    fn gates_are_only_removed_after_creation() {
        assert!(on_update(Some(&ann("a.io/x,a.io/y")), Some(&ann("a.io/y"))).is_empty());
        assert!(on_update(Some(&ann("a.io/x")), None).is_empty());
        assert_eq!(
            messages(on_update(None, Some(&ann("a.io/x")))),
            ["metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: cannot add admission gate after creation"]
        );
        assert_eq!(
            messages(on_update(Some(&ann("a.io/x")), Some(&ann("a.io/x,a.io/z")))),
            ["metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: can only remove gates, not add new ones"]
        );
    }
}
