//! The `kueue.x-k8s.io/admission-gated-by` annotation (gate
//! AdmissionGatedBy, on by default since Kueue v0.19): a comma-separated
//! list of controllers that must let a job's Workload go before it is
//! admitted. Set only at creation, gates may only be removed afterwards.
//! Kueue's rules and words (`pkg/util/webhook/validation_admissiongatedby.go`).

use super::{
    field::{annotation_path, BadValue, FieldError},
    kueue::labels::dns1123_subdomain,
};
use crate::vocabulary::keys::ADMISSION_GATED_BY_ANNOTATION;

/// Same limit as a Job's `spec.managedBy`.
pub const MAX_GATE_NAME_LENGTH: usize = 63;

fn path() -> String {
    annotation_path(ADMISSION_GATED_BY_ANNOTATION)
}

/// Kueue's `csv.Parse`: comma-separated, spaces around names trimmed; a
/// blank value has no names.
fn parse(s: &str) -> Vec<&str> {
    if s.trim().is_empty() {
        return Vec::new();
    }
    s.split(',').map(str::trim).collect()
}

pub fn on_create(value: Option<&str>) -> Vec<FieldError> {
    format(value.unwrap_or(""))
}

pub fn on_update(old: Option<&str>, new: Option<&str>) -> Vec<FieldError> {
    let (old, new) = (old.unwrap_or(""), new.unwrap_or(""));
    let mut errs = Vec::new();
    if old.is_empty() && !new.is_empty() {
        errs.push(FieldError::forbidden(
            path(),
            "cannot add admission gate after creation",
        ));
    }
    if !old.is_empty() && !new.is_empty() {
        let before = parse(old);
        if parse(new).iter().any(|g| !before.contains(g)) {
            errs.push(FieldError::forbidden(
                path(),
                "can only remove gates, not add new ones",
            ));
        }
    }
    errs.extend(format(new));
    errs
}

fn format(value: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if value.is_empty() {
        return errs;
    }
    let mut seen: Vec<&str> = Vec::new();
    for gate in parse(value) {
        if gate.is_empty() {
            errs.push(FieldError::invalid(
                path(),
                BadValue::Str(value.into()),
                "cannot contain empty gate names",
            ));
            continue;
        }
        if seen.contains(&gate) {
            errs.push(FieldError::invalid(
                path(),
                BadValue::Str(value.into()),
                format!("duplicate gate name: {gate}"),
            ));
            continue;
        }
        seen.push(gate);
        errs.extend(domain_prefixed_path(gate));
        if gate.len() > MAX_GATE_NAME_LENGTH {
            errs.push(FieldError::too_long(path(), MAX_GATE_NAME_LENGTH));
        }
    }
    errs
}

/// apimachinery's `IsDomainPrefixedPath` (the check a Job's `spec.managedBy`
/// gets): `<DNS-1123 subdomain>/<HTTP path>`.
fn domain_prefixed_path(gate: &str) -> Vec<FieldError> {
    let Some((host, rest)) = gate
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        return vec![FieldError::invalid(
            path(),
            BadValue::Str(gate.into()),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<FieldError> = dns1123_subdomain(host)
        .into_iter()
        .map(|m| FieldError::invalid(path(), BadValue::Str(host.into()), m))
        .collect();
    let path_ok = rest
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    if !path_ok {
        errs.push(FieldError::invalid(
            path(),
            BadValue::Str(rest.into()),
            "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: Vec<FieldError>) -> Vec<String> {
        errs.into_iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn names_are_domain_prefixed_paths() {
        assert!(on_create(Some("example.com/a, not.example.com/b ")).is_empty());
        assert_eq!(
            msgs(on_create(Some("no-slash"))),
            [
                r#"metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "no-slash": must be a domain-prefixed path (such as "acme.io/foo")"#
            ]
        );
        assert_eq!(
            msgs(on_create(Some("example.com/gate name"))),
            [
                r#"metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "gate name": Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')"#
            ]
        );
        assert_eq!(
            msgs(on_create(Some(&format!("x.io/{}", "a".repeat(70))))),
            ["metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Too long: may not be more than 63 bytes"]
        );
        assert_eq!(
            msgs(on_create(Some("a.io/x,,a.io/x"))).len(),
            2,
            "one empty name, one duplicate"
        );
    }

    #[test]
    fn gates_may_only_be_removed() {
        assert!(on_update(Some("a.io/x,b.io/y"), Some("b.io/y")).is_empty());
        assert!(on_update(Some("a.io/x"), None).is_empty());
        assert_eq!(
            msgs(on_update(None, Some("a.io/x"))),
            ["metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: cannot add admission gate after creation"]
        );
        assert_eq!(
            msgs(on_update(Some("a.io/x"), Some("a.io/x,c.io/z"))),
            ["metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: can only remove gates, not add new ones"]
        );
    }
}
