//! Workload validation: upstream's `pkg/webhooks/workload_webhook.go`
//! (`ValidateWorkload`, `ValidateWorkloadUpdate` and their helpers) at Kueue
//! v0.19.2, on the main resource and on the status subresource alike.
//!
//! Feature gates as v0.19.2 has them by default: partial admission on;
//! topology-aware scheduling on (the topology fields of an admission may
//! change); elastic workload slices on (a pod set's count may go down while
//! quota is reserved; an elastic Workload's reclaimable pods follow a scale
//! down); pod set metadata, non-negative resources and TAS slice sizes
//! validated; AdmissionGatedBy on; PriorityBoost off (the
//! `kueue.x-k8s.io/priority-boost` annotation is not validated).

use crate::vocabulary::pointer::At;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{
    api::core::v1::ResourceRequirements, apimachinery::pkg::api::resource::Quantity,
};
use serde_json::Value;

use super::{
    decode, labels, parse_quantity, resource_flavor::tolerations, semantic, Shown, Violation,
    FIELD_IMMUTABLE, IS_NEGATIVE,
};
use crate::vocabulary::keys::{self, ELASTIC_JOB_ANNOTATION, SLICE_REPLACEMENT_FOR_ANNOTATION};
use crate::{
    admission::{admission_gates, object::DecodeError},
    api::kueue::v1beta2::{
        check_state, condition, PodSet, PodSetAssignment, PodSetTopologyRequest, ReclaimablePod,
        Workload,
    },
};

type Checked = Result<Vec<Violation>, (&'static str, DecodeError)>;

/// The resource name Kueue counts pods with.
pub const PODS_RESOURCE: &str = "pods";

const RESERVED_KEY: &str = "the key is reserved for internal kueue use";

/// `ValidateWorkload` on create, `ValidateWorkloadUpdate` on update.
pub fn validate(new: &Value, old: Option<&Value>) -> Checked {
    let wl: Workload = decode(new, "object")?;
    let old_wl: Option<Workload> = old.map(|o| decode(o, "oldObject")).transpose()?;
    let mut errs = workload(&wl, old_wl.as_ref())?;
    if let (Some(old_wl), Some(old)) = (old_wl.as_ref(), old) {
        if has_quota_reservation(old_wl) {
            errs.extend(immutable_pod_sets(new, old));
        }
        if has_quota_reservation(&wl) && has_quota_reservation(old_wl) {
            errs.extend(reclaimable_pods_update(&wl, old_wl));
        }
        errs.extend(admission_update(new, old));
        errs.extend(immutable_pod_set_updates(new, old));
        errs.extend(cluster_name_update(&wl, old_wl));
        let gates = keys::ADMISSION_GATED_BY_ANNOTATION;
        errs.extend(
            admission_gates::on_update(annotation(old_wl, gates), annotation(&wl, gates))
                .into_iter()
                .map(Violation::Field),
        );
    }
    Ok(errs)
}

/// `validateClusterNameUpdate`: a MultiKueue cluster name, when first set,
/// is one of the nominated clusters (unless the Workload replaces an
/// elastic slice).
fn cluster_name_update(new: &Workload, old: &Workload) -> Option<Violation> {
    if annotation(new, SLICE_REPLACEMENT_FOR_ANNOTATION).is_some() {
        return None;
    }
    let old_status = old.status.as_ref();
    if old_status.is_some_and(|s| s.cluster_name.is_some()) {
        return None;
    }
    let name = new.status.as_ref()?.cluster_name.as_ref()?;
    let nominated = old_status
        .and_then(|s| s.nominated_cluster_names.as_deref())
        .unwrap_or_default();
    (!nominated.contains(name)).then(|| {
        Violation::invalid(
            "status.clusterName",
            name,
            "when setting clusterName it must be one of the nominatedClusterNames",
        )
    })
}

/// `workload.HasQuotaReservation`: the QuotaReserved condition is True.
pub fn has_quota_reservation(wl: &Workload) -> bool {
    wl.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == condition::QUOTA_RESERVED && c.status == "True")
}

fn admission_missing(wl: &Workload) -> bool {
    has_quota_reservation(wl) && wl.status.as_ref().is_none_or(|s| s.admission.is_none())
}

fn pod_sets(wl: &Workload) -> &[PodSet] {
    wl.spec.pod_sets.as_deref().unwrap_or_default()
}

/// `ValidateWorkload`. A Workload already stored with a quota reservation
/// but no admission (which only a write that skipped admission can leave)
/// may still be updated, so it can drain and lose its finalizer
/// (kubernetes-sigs/kueue#14014).
fn workload(wl: &Workload, old: Option<&Workload>) -> Checked {
    let mut errs = Vec::new();
    let mut variable_count = 0;
    for (i, ps) in pod_sets(wl).iter().enumerate() {
        errs.extend(pod_set(ps, &format!("spec.podSets[{i}]"))?);
        if ps.min_count.is_some() {
            variable_count += 1;
        }
    }
    if variable_count > 1 {
        errs.push(Violation::invalid_int(
            "spec.podSets",
            variable_count,
            "at most one podSet can use minCount",
        ));
    }
    if elastic(wl) && variable_count > 0 {
        errs.push(Violation::invalid_int(
            "spec.podSets",
            variable_count,
            "partial admission and elastic job cannot be used together",
        ));
    }

    let status = wl.status.as_ref();
    if has_quota_reservation(wl) {
        match status.and_then(|s| s.admission.as_ref()) {
            Some(_) => errs.extend(admission(wl)?),
            None if old.is_some_and(admission_missing) => {}
            None => errs.push(Violation::required(
                "status.admission",
                "must be set while the QuotaReserved condition is true",
            )),
        }
    }
    errs.extend(conditions(wl));
    errs.extend(reclaimable_pods(wl, old));
    errs.extend(admission_checks(wl));
    errs.extend(
        admission_gates::on_create(annotation(wl, keys::ADMISSION_GATED_BY_ANNOTATION))
            .into_iter()
            .map(Violation::Field),
    );
    Ok(errs)
}

const CONDITION_REASON_FMT: &str = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?";
const CONDITION_REASON_MSG: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'";

/// `metav1validation.ValidateConditions` on `status.conditions`.
fn conditions(wl: &Workload) -> Vec<Violation> {
    let list = wl
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, c) in list.iter().enumerate() {
        let at = format!("status.conditions[{i}]");
        if !seen.insert(c.type_.as_str()) {
            errs.push(Violation::duplicate(
                format!("{at}.type"),
                Shown::Str(c.type_.clone()),
                "",
            ));
        }
        errs.extend(labels::validate_label_name(&c.type_, &format!("{at}.type")));
        if !["True", "False", "Unknown"].contains(&c.status.as_str()) {
            errs.push(Violation::not_supported(
                format!("{at}.status"),
                &c.status,
                &["False".into(), "True".into(), "Unknown".into()],
            ));
        }
        if let Some(g) = c.observed_generation.filter(|g| *g < 0) {
            errs.push(Violation::invalid_int(
                format!("{at}.observedGeneration"),
                g,
                "must be greater than or equal to zero",
            ));
        }
        if c.reason.is_empty() {
            errs.push(Violation::required(format!("{at}.reason"), "must be set"));
        } else {
            if !condition_reason(&c.reason) {
                errs.push(Violation::invalid(
                    format!("{at}.reason"),
                    &c.reason,
                    labels::regex_error(
                        CONDITION_REASON_MSG,
                        CONDITION_REASON_FMT,
                        &[
                            "my_name",
                            "MY_NAME",
                            "MyName",
                            "ReasonA,ReasonB",
                            "ReasonA:ReasonB",
                        ],
                    ),
                ));
            }
            if c.reason.len() > 1024 {
                errs.push(Violation::too_long(format!("{at}.reason"), 1024));
            }
        }
        if c.message.len() > 32 * 1024 {
            errs.push(Violation::too_long(format!("{at}.message"), 32 * 1024));
        }
    }
    errs
}

/// `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`, anchored.
fn condition_reason(r: &str) -> bool {
    let b = r.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':');
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphabetic()
                && (b.len() == 1 || l.is_ascii_alphanumeric() || *l == b'_')
                && b.iter().all(inner)
        }
        _ => false,
    }
}

/// `workloadslicing.Enabled`: ElasticJobsViaWorkloadSlices is on by default,
/// so the annotation decides.
fn elastic(wl: &Workload) -> bool {
    annotation(wl, ELASTIC_JOB_ANNOTATION) == Some("true")
}

fn annotation<'a>(wl: &'a Workload, key: &str) -> Option<&'a str> {
    wl.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// `validatePodSet`: valid template labels and annotations
/// (WorkloadValidationForPodSetMetadata, on by default); no container, init
/// container or pod-level resources may name `pods`, which Kueue counts
/// itself, or be negative (WorkloadValidateResourcesAreNonNegative, on by
/// default); the topology slice sizes hold (TASValidateWorkloadSliceSize, on
/// by default).
fn pod_set(ps: &PodSet, path: &str) -> Checked {
    let mut errs = Vec::new();
    let meta = ps.template.metadata.as_ref();
    errs.extend(labels::validate_labels(
        meta.and_then(|m| m.labels.as_ref()),
        &format!("{path}.template.metadata.labels"),
    ));
    errs.extend(labels::validate_annotations(
        meta.and_then(|m| m.annotations.as_ref()),
        &format!("{path}.template.metadata.annotations"),
    ));
    if let Some(spec) = ps.template.spec.as_ref() {
        let lists = [
            (
                spec.init_containers.as_deref().unwrap_or_default(),
                "initContainers",
            ),
            (spec.containers.as_slice(), "containers"),
        ];
        for (list, field) in lists {
            for (i, c) in list.iter().enumerate() {
                errs.extend(requirements(
                    c.resources.as_ref(),
                    &format!("{path}.template.spec.{field}[{i}].resources"),
                )?);
            }
        }
        errs.extend(requirements(
            spec.resources.as_ref(),
            &format!("{path}.template.spec.resources"),
        )?);
    }
    errs.extend(slice_size(
        ps.topology_request.as_ref(),
        &format!("{path}.topologyRequest"),
    ));
    Ok(errs)
}

/// `validateContainer` / the pod-level resources: requests, then limits.
fn requirements(r: Option<&ResourceRequirements>, path: &str) -> Checked {
    let Some(r) = r else {
        return Ok(Vec::new());
    };
    let mut errs = resource_list(r.requests.as_ref(), &format!("{path}.requests"))?;
    errs.extend(resource_list(r.limits.as_ref(), &format!("{path}.limits"))?);
    Ok(errs)
}

/// `validateResourceList`: the reserved `pods` key, negative quantities.
fn resource_list(list: Option<&BTreeMap<String, Quantity>>, path: &str) -> Checked {
    let mut errs = Vec::new();
    for (name, q) in list.into_iter().flatten() {
        let at = format!("{path}[{name}]");
        if name == PODS_RESOURCE {
            errs.push(Violation::invalid(&at, PODS_RESOURCE, RESERVED_KEY));
        }
        let q = parse_quantity(&q.0, &at, "object")?;
        if q.is_negative() {
            errs.push(Violation::invalid(at, &q.canonical(), IS_NEGATIVE));
        }
    }
    Ok(errs)
}

/// `validateTASSliceSize`: a slice size goes with a slice topology and is
/// positive; so is every layer's size.
fn slice_size(tr: Option<&PodSetTopologyRequest>, path: &str) -> Vec<Violation> {
    let Some(tr) = tr else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    let size_path = format!("{path}.podSetSliceSize");
    match (&tr.pod_set_slice_required_topology, tr.pod_set_slice_size) {
        (Some(_), None) => errs.push(Violation::required(
            &size_path,
            "must be set when podSetSliceRequiredTopology is specified",
        )),
        (Some(_), Some(n)) if n <= 0 => errs.push(Violation::invalid_int(
            &size_path,
            n.into(),
            "must be greater than 0",
        )),
        (None, Some(_)) => errs.push(Violation::forbidden(
            &size_path,
            "may not be set when podSetSliceRequiredTopology is not specified",
        )),
        _ => {}
    }
    for (i, layer) in tr
        .podset_slice_required_topology_constraints
        .iter()
        .flatten()
        .enumerate()
    {
        if layer.size <= 0 {
            errs.push(Violation::invalid_int(
                format!("{path}.podsetSliceRequiredTopologyConstraints[{i}].size"),
                layer.size.into(),
                "must be greater than 0",
            ));
        }
    }
    errs
}

/// `validateAdmission`: every assignment is for a pod set of the spec, and
/// its usage divides evenly among its pods.
/// The admission's pod set assignments; none when the Workload has no
/// admission.
fn pod_set_assignments(wl: &Workload) -> &[PodSetAssignment] {
    wl.status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .and_then(|a| a.pod_set_assignments.as_deref())
        .unwrap_or_default()
}

fn admission(wl: &Workload) -> Checked {
    let mut errs = Vec::new();
    let names: BTreeSet<&str> = pod_sets(wl).iter().map(|p| p.name.as_str()).collect();
    let assignments = pod_set_assignments(wl);
    for (i, psa) in assignments.iter().enumerate() {
        let at = format!("status.admission.podSetAssignments[{i}]");
        if !names.contains(psa.name.as_str()) {
            errs.push(Violation::not_found(format!("{at}.name"), &psa.name));
        }
        let count = psa.count.unwrap_or(0);
        if count <= 0 {
            continue;
        }
        for (resource, q) in psa.resource_usage.iter().flatten() {
            let p = format!("{at}.resourceUsage[{resource}]");
            let usage = parse_quantity(&q.0, &p, "object")?;
            if usage.resource_value(resource) % i128::from(count) != 0 {
                errs.push(Violation::invalid(
                    p,
                    &usage.canonical(),
                    format!("is not a multiple of {count}"),
                ));
            }
        }
    }
    Ok(errs)
}

/// `validateReclaimablePods`: for pod sets of the spec, at most their count;
/// an elastic Workload may keep an unchanged count left over from a scale
/// down.
fn reclaimable_pods(wl: &Workload, old: Option<&Workload>) -> Vec<Violation> {
    let stale = |rp: &ReclaimablePod| {
        elastic(wl)
            && old.is_some_and(|o| {
                reclaimable(o)
                    .iter()
                    .any(|p| p.name == rp.name && p.count == rp.count)
            })
    };
    let sets = pod_sets(wl);
    let names: Vec<String> = sets.iter().map(|p| p.name.clone()).collect();
    let mut errs = Vec::new();
    for rp in reclaimable(wl) {
        let at = format!("status.reclaimablePods[{}]", rp.name);
        match sets.iter().find(|p| p.name == rp.name) {
            None => errs.push(Violation::not_supported(
                format!("{at}.name"),
                &rp.name,
                &names,
            )),
            Some(ps) if rp.count > ps.count && !stale(rp) => errs.push(Violation::invalid_int(
                format!("{at}.count"),
                rp.count.into(),
                format!("should be less or equal to {}", ps.count),
            )),
            Some(_) => {}
        }
    }
    errs
}

fn reclaimable(wl: &Workload) -> &[ReclaimablePod] {
    wl.status
        .as_ref()
        .and_then(|s| s.reclaimable_pods.as_deref())
        .unwrap_or_default()
}

/// `validateAdmissionChecks` / `validatePodSetUpdates`: updates are for pod
/// sets of the spec and carry valid labels, annotations, node selectors and
/// toleration keys.
fn admission_checks(wl: &Workload) -> Vec<Violation> {
    let known: BTreeSet<&str> = pod_sets(wl).iter().map(|p| p.name.as_str()).collect();
    let supported: Vec<String> = known.iter().map(|s| s.to_string()).collect();
    let checks = wl
        .status
        .as_ref()
        .and_then(|s| s.admission_checks.as_deref())
        .unwrap_or_default();
    let mut errs = Vec::new();
    for (i, ac) in checks.iter().enumerate() {
        for (j, psu) in ac.pod_set_updates.iter().flatten().enumerate() {
            let at = format!("status.admissionChecks[{i}].podSetUpdates[{j}]");
            if !known.contains(psu.name.as_str()) {
                errs.push(Violation::not_supported(
                    format!("{at}.name"),
                    &psu.name,
                    &supported,
                ));
            }
            errs.extend(tolerations(
                psu.tolerations.as_deref().unwrap_or_default(),
                &format!("{at}.tolerations"),
            ));
            errs.extend(labels::validate_annotations(
                psu.annotations.as_ref(),
                &format!("{at}.annotations"),
            ));
            errs.extend(labels::validate_labels(
                psu.node_selector.as_ref(),
                &format!("{at}.nodeSelector"),
            ));
            errs.extend(labels::validate_labels(
                psu.labels.as_ref(),
                &format!("{at}.labels"),
            ));
        }
    }
    errs
}

/// `validateImmutablePodSets`, once quota is reserved: no pod set may
/// change, its count included. Upstream names an element `spec.podSets.<i>`.
fn immutable_pod_sets(new: &Value, old: &Value) -> Vec<Violation> {
    let (n, o) = (new.at("/spec/podSets"), old.at("/spec/podSets"));
    let len = |v: Option<&Value>| v.and_then(Value::as_array).map_or(0, Vec::len);
    if len(n) != len(o) {
        return vec![Violation::invalid_json(
            "spec.podSets",
            n.unwrap_or(&Value::Null),
            FIELD_IMMUTABLE,
        )];
    }
    let (Some(n), Some(o)) = (n.and_then(Value::as_array), o.and_then(Value::as_array)) else {
        return Vec::new();
    };
    let count = |v: &Value| v.get("count").and_then(Value::as_i64).unwrap_or(0);
    n.iter()
        .zip(o)
        .enumerate()
        .filter_map(|(i, (a, b))| {
            // ElasticJobsViaWorkloadSlices (on by default) lets any pod set
            // scale down.
            let mut a = a.clone();
            if count(&a) < count(b) {
                if let Some(m) = a.as_object_mut() {
                    m.insert(
                        "count".into(),
                        b.get("count").cloned().unwrap_or(Value::Null),
                    );
                }
            }
            (!semantic::equal(Some(&a), Some(b)))
                .then(|| Violation::invalid_json(format!("spec.podSets.{i}"), &a, FIELD_IMMUTABLE))
        })
        .collect()
}

/// `scaledDownPodSetNames`: the pod sets of an elastic Workload admitted
/// with more pods than they now have.
fn scaled_down(wl: &Workload) -> BTreeSet<&str> {
    if !elastic(wl) {
        return BTreeSet::new();
    }
    let assignments = pod_set_assignments(wl);
    assignments
        .iter()
        .filter(|psa| {
            let now = pod_sets(wl)
                .iter()
                .find(|p| p.name == psa.name)
                .map_or(0, |p| p.count);
            psa.count.is_some_and(|c| c > now)
        })
        .map(|psa| psa.name.as_str())
        .collect()
}

/// `validateReclaimablePodsUpdate`, while quota stays reserved: counts do
/// not decrease and entries are not removed.
fn reclaimable_pods_update(new: &Workload, old: &Workload) -> Vec<Violation> {
    let (n, o) = (reclaimable(new), reclaimable(old));
    let as_map = |l: &[ReclaimablePod]| -> BTreeMap<String, i32> {
        l.iter().map(|r| (r.name.clone(), r.count)).collect()
    };
    if (n.len() == o.len() && as_map(n) == as_map(o)) || o.is_empty() {
        return Vec::new();
    }
    let reserved = has_quota_reservation(new);
    let scaled_down = scaled_down(new);
    let mut errs = Vec::new();
    for rp in n {
        if !reserved && rp.count == 0 {
            continue;
        }
        if let Some(prev) = o.iter().find(|p| p.name == rp.name) {
            if rp.count < prev.count && !scaled_down.contains(rp.name.as_str()) {
                errs.push(Violation::invalid_int(
                    format!("status.reclaimablePods[{}].count", rp.name),
                    rp.count.into(),
                    format!("cannot be less than {}", prev.count),
                ));
            }
        }
    }
    for prev in o {
        if reserved
            && !n.iter().any(|r| r.name == prev.name)
            && !scaled_down.contains(prev.name.as_str())
        {
            errs.push(Violation::required(
                format!("status.reclaimablePods[{}]", prev.name),
                "cannot be removed",
            ));
        }
    }
    errs
}

/// `validateAdmissionUpdate`: an admission can be set or cleared, not
/// changed; with topology-aware scheduling the topology assignment (and the
/// delayed topology request) of each pod set may still be written.
fn admission_update(new: &Value, old: &Value) -> Option<Violation> {
    let n = new.at("/status/admission").filter(|v| !v.is_null())?;
    let o = old.at("/status/admission").filter(|v| !v.is_null())?;
    let mut o = o.clone();
    let assignments = |v: &Value| {
        v.get("podSetAssignments")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    if assignments(n) == assignments(&o) {
        if let Some(list) = o.get_mut("podSetAssignments").and_then(Value::as_array_mut) {
            for (i, psa) in list.iter_mut().enumerate() {
                let Some(psa) = psa.as_object_mut() else {
                    continue;
                };
                for key in ["topologyAssignment", "delayedTopologyRequest"] {
                    match n.at(&format!("/podSetAssignments/{i}/{key}")) {
                        Some(v) => psa.insert(key.into(), v.clone()),
                        None => psa.remove(key),
                    };
                }
            }
        }
    }
    (!semantic::equal(Some(n), Some(&o)))
        .then(|| Violation::invalid_json("status.admission", n, FIELD_IMMUTABLE))
}

/// `validateImmutablePodSetUpdates`: the pod set updates of a check that
/// stays Ready do not change. Indexed as in the old object, as upstream.
fn immutable_pod_set_updates(new: &Value, old: &Value) -> Vec<Violation> {
    let checks = |v: &Value| {
        v.at("/status/admissionChecks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (n, o) = (checks(new), checks(old));
    let ready = |c: &Value| c.get("state").and_then(Value::as_str) == Some(check_state::READY);
    let mut errs = Vec::new();
    for (i, old_check) in o.iter().enumerate() {
        let name = old_check.get("name");
        let Some(new_check) = n.iter().find(|c| c.get("name") == name) else {
            continue;
        };
        if ready(old_check) && ready(new_check) {
            let (a, b) = (
                new_check.get("podSetUpdates"),
                old_check.get("podSetUpdates"),
            );
            if !semantic::equal(a, b) {
                errs.push(Violation::invalid_json(
                    format!("status.admissionChecks[{i}].podSetUpdates"),
                    a.unwrap_or(&Value::Null),
                    FIELD_IMMUTABLE,
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    const T: &str = "2026-01-01T00:00:00Z";

    fn wl(annotations: Value, pod_sets: Value, status: Value) -> Value {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
               "metadata": {"name": "wl", "namespace": "ns", "annotations": annotations},
               "spec": {"queueName": "q", "podSets": pod_sets},
               "status": status})
    }

    fn ps(name: &str, count: i32) -> Value {
        json!({"name": name, "count": count, "template": {"spec": {"containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}})
    }

    fn reserved() -> Value {
        json!({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
               "message": "", "lastTransitionTime": T})
    }

    fn admitted(assignments: Value) -> Value {
        json!({"conditions": [reserved()],
               "admission": {"clusterQueue": "cq", "podSetAssignments": assignments}})
    }

    fn create(w: Value) -> Vec<String> {
        validate(&w, None)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn update(old: Value, new: Value) -> Vec<String> {
        validate(&new, Some(&old))
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    const NONE: Vec<String> = Vec::new();

    #[test]
    fn a_valid_workload_passes() {
        let w = wl(
            json!({"kueue.x-k8s.io/priority-boost": "-5"}),
            json!([ps("driver", 1), ps("workers", 100)]),
            admitted(json!([
                {"name": "driver", "count": 1, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}},
                {"name": "workers", "count": 100, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "100"}},
            ])),
        );
        assert_eq!(create(w), NONE);
        assert_eq!(
            create(wl(json!({}), json!([ps("main", 1)]), Value::Null)),
            NONE
        );
    }

    #[test]
    fn pods_is_a_reserved_resource() {
        let mut p = ps("bad", 1);
        p["template"]["spec"]["initContainers"] = json!([{"name": "i", "resources": {"requests": {"pods": "1"}, "limits": {"pods": "1"}}}]);
        p["template"]["spec"]["containers"][0]["resources"]["limits"] = json!({"pods": "1"});
        p["template"]["spec"]["resources"] = json!({"requests": {"pods": "1"}});
        assert_eq!(
            create(wl(json!({}), json!([p]), Value::Null)),
            [
                r#"spec.podSets[0].template.spec.initContainers[0].resources.requests[pods]: Invalid value: "pods": the key is reserved for internal kueue use"#,
                r#"spec.podSets[0].template.spec.initContainers[0].resources.limits[pods]: Invalid value: "pods": the key is reserved for internal kueue use"#,
                r#"spec.podSets[0].template.spec.containers[0].resources.limits[pods]: Invalid value: "pods": the key is reserved for internal kueue use"#,
                r#"spec.podSets[0].template.spec.resources.requests[pods]: Invalid value: "pods": the key is reserved for internal kueue use"#,
            ]
        );
    }

    #[test]
    fn at_most_one_pod_set_has_a_min_count() {
        let mut a = ps("a", 3);
        a["minCount"] = json!(2);
        let mut b = ps("b", 3);
        b["minCount"] = json!(1);
        assert_eq!(
            create(wl(json!({}), json!([a.clone(), b]), Value::Null)),
            ["spec.podSets: Invalid value: 2: at most one podSet can use minCount"]
        );
        assert_eq!(create(wl(json!({}), json!([a.clone()]), Value::Null)), NONE);
        assert_eq!(
            create(wl(json!({"kueue.x-k8s.io/elastic-job": "true"}), json!([a]), Value::Null)),
            ["spec.podSets: Invalid value: 1: partial admission and elastic job cannot be used together"]
        );
    }

    #[test]
    fn a_quota_reservation_needs_an_admission() {
        let broken = wl(
            json!({}),
            json!([ps("driver", 1)]),
            json!({"conditions": [reserved()]}),
        );
        let fine = wl(json!({}), json!([ps("driver", 1)]), Value::Null);
        let required =
            "status.admission: Required value: must be set while the QuotaReserved condition is true";
        assert_eq!(create(broken.clone()), [required]);
        assert_eq!(update(fine, broken.clone()), [required]);
        // Already in that state: still updatable, e.g. to drop a finalizer.
        let mut with_finalizer = broken.clone();
        with_finalizer["metadata"]["finalizers"] = json!(["kueue.x-k8s.io/resource-in-use"]);
        assert_eq!(update(with_finalizer, broken), NONE);
        // A False condition needs nothing.
        let mut not_reserved = reserved();
        not_reserved["status"] = json!("False");
        assert_eq!(
            create(wl(
                json!({}),
                json!([ps("driver", 1)]),
                json!({"conditions": [not_reserved]})
            )),
            NONE
        );
    }

    #[test]
    fn assignments_are_for_pod_sets_of_the_spec() {
        assert_eq!(
            create(wl(
                json!({}),
                json!([ps("main", 1)]),
                admitted(json!([{"name": "@invalid"}]))
            )),
            [r#"status.admission.podSetAssignments[0].name: Not found: "@invalid""#]
        );
    }

    #[test]
    fn usage_is_a_multiple_of_the_count() {
        let w = |usage: Value| {
            wl(
                json!({}),
                json!([ps("main", 3)]),
                admitted(json!([{"name": "main", "count": 3, "resourceUsage": usage}])),
            )
        };
        assert_eq!(
            create(w(json!({"cpu": "1", "memory": "3Gi"}))),
            [
                r#"status.admission.podSetAssignments[0].resourceUsage[cpu]: Invalid value: "1": is not a multiple of 3"#
            ]
        );
        // cpu counts in milli-units: 1500m is 3 x 500m.
        assert_eq!(
            create(w(json!({"cpu": "1500m", "nvidia.com/gpu": "3"}))),
            NONE
        );
        assert_eq!(
            create(w(json!({"example.com/x": "4"}))),
            [
                r#"status.admission.podSetAssignments[0].resourceUsage[example.com/x]: Invalid value: "4": is not a multiple of 3"#
            ]
        );
        // Without a count nothing is checked.
        assert_eq!(
            create(wl(
                json!({}),
                json!([ps("main", 3)]),
                admitted(json!([{"name": "main", "resourceUsage": {"cpu": "1"}}]))
            )),
            NONE
        );
    }

    #[test]
    fn reclaimable_pods_are_for_pod_sets_and_within_their_count() {
        let w = wl(
            json!({}),
            json!([ps("ps1", 3)]),
            json!({"reclaimablePods": [{"name": "ps1", "count": 4}, {"name": "ps2", "count": 1}]}),
        );
        assert_eq!(
            create(w),
            [
                "status.reclaimablePods[ps1].count: Invalid value: 4: should be less or equal to 3",
                r#"status.reclaimablePods[ps2].name: Unsupported value: "ps2": supported values: "ps1""#,
            ]
        );
    }

    #[test]
    fn pod_set_updates_are_for_pod_sets_and_valid() {
        let w = |updates: Value| {
            wl(
                json!({}),
                json!([ps("first", 1), ps("second", 1)]),
                json!({"admissionChecks": [{"name": "ac", "state": "Pending", "lastTransitionTime": T,
                                            "message": "", "podSetUpdates": updates}]}),
            )
        };
        assert_eq!(
            create(w(
                json!([{"name": "first", "labels": {"l": "v"}, "annotations": {"a": "b"},
                             "nodeSelector": {"type": "x"},
                             "tolerations": [{"key": "t", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 5}]}])
            )),
            NONE
        );
        let errs = create(w(json!([
            {"name": "third"},
            {"name": "first", "labels": {"@abc": "foo", "foo": "@abc"}, "nodeSelector": {"@abc": "x"},
             "annotations": {"bad key": "v"}, "tolerations": [{"key": "b@d", "operator": "Exists"}]},
        ])));
        assert_eq!(errs.len(), 6, "{errs:#?}");
        assert_eq!(
            errs[0],
            r#"status.admissionChecks[0].podSetUpdates[0].name: Unsupported value: "third": supported values: "first", "second""#
        );
        assert!(errs[1].starts_with(r#"status.admissionChecks[0].podSetUpdates[1].tolerations[0].key: Invalid value: "b@d": name part must"#));
        assert!(errs[2].starts_with(r#"status.admissionChecks[0].podSetUpdates[1].annotations: Invalid value: "bad key": name part must"#));
        assert!(errs[3].starts_with(r#"status.admissionChecks[0].podSetUpdates[1].nodeSelector: Invalid value: "@abc": name part must"#));
        assert!(errs[4].starts_with(r#"status.admissionChecks[0].podSetUpdates[1].labels: Invalid value: "@abc": name part must"#));
        assert!(errs[5].starts_with(r#"status.admissionChecks[0].podSetUpdates[1].labels: Invalid value: "@abc": a valid label must"#));
    }

    #[test]
    fn pod_set_resources_are_not_negative() {
        let mut p = ps("bad", 1);
        p["template"]["spec"]["initContainers"] =
            json!([{"name": "i", "resources": {"limits": {"memory": "-1Gi"}}}]);
        p["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("-1");
        p["template"]["spec"]["resources"] = json!({"limits": {"cpu": "-500m"}});
        assert_eq!(
            create(wl(json!({}), json!([p]), Value::Null)),
            [
                r#"spec.podSets[0].template.spec.initContainers[0].resources.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0"#,
                r#"spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0"#,
                r#"spec.podSets[0].template.spec.resources.limits[cpu]: Invalid value: "-500m": must be greater than or equal to 0"#,
            ]
        );
    }

    #[test]
    fn pod_set_template_metadata_is_valid() {
        let mut p = ps("main", 1);
        p["template"]["metadata"] =
            json!({"labels": {"ok": "with spaces"}, "annotations": {"bad key": "v"}});
        let errs = create(wl(json!({}), json!([p]), Value::Null));
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert!(errs[0].starts_with(
            r#"spec.podSets[0].template.metadata.labels: Invalid value: "with spaces": a valid label must"#
        ));
        assert!(errs[1].starts_with(
            r#"spec.podSets[0].template.metadata.annotations: Invalid value: "bad key": name part must"#
        ));
    }

    #[test]
    fn slice_sizes_go_with_a_slice_topology_and_are_positive() {
        let with = |tr: Value| {
            let mut p = ps("main", 4);
            p["topologyRequest"] = tr;
            create(wl(json!({}), json!([p]), Value::Null))
        };
        assert_eq!(
            with(json!({"podSetSliceRequiredTopology": "rack", "podSetSliceSize": 2})),
            NONE
        );
        assert_eq!(
            with(json!({"podSetSliceRequiredTopology": "rack"})),
            ["spec.podSets[0].topologyRequest.podSetSliceSize: Required value: must be set when podSetSliceRequiredTopology is specified"]
        );
        assert_eq!(
            with(json!({"podSetSliceRequiredTopology": "rack", "podSetSliceSize": 0})),
            ["spec.podSets[0].topologyRequest.podSetSliceSize: Invalid value: 0: must be greater than 0"]
        );
        assert_eq!(
            with(json!({"podSetSliceSize": 2})),
            ["spec.podSets[0].topologyRequest.podSetSliceSize: Forbidden: may not be set when podSetSliceRequiredTopology is not specified"]
        );
        assert_eq!(
            with(json!({"podsetSliceRequiredTopologyConstraints": [
                {"topology": "block", "size": 4}, {"topology": "rack", "size": 0}]})),
            ["spec.podSets[0].topologyRequest.podsetSliceRequiredTopologyConstraints[1].size: Invalid value: 0: must be greater than 0"]
        );
    }

    #[test]
    fn conditions_are_valid() {
        let mut bad = reserved();
        bad["reason"] = json!("1bad reason");
        bad["observedGeneration"] = json!(-1);
        let w = wl(
            json!({}),
            json!([ps("main", 1)]),
            json!({"conditions": [{"type": "Finished", "status": "Maybe", "reason": "Done",
                                   "message": "", "lastTransitionTime": T},
                                  {"type": "Finished", "status": "True", "reason": "Done",
                                   "message": "", "lastTransitionTime": T}]}),
        );
        assert_eq!(
            create(w),
            [
                r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown""#,
                r#"status.conditions[1].type: Duplicate value: "Finished""#,
            ]
        );
        let mut status = admitted(json!([{"name": "main"}]));
        status["conditions"] = json!([bad]);
        let errs = create(wl(json!({}), json!([ps("main", 1)]), status));
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert_eq!(
            errs[0],
            "status.conditions[0].observedGeneration: Invalid value: -1: must be greater than or equal to zero"
        );
        assert!(errs[1].starts_with(
            r#"status.conditions[0].reason: Invalid value: "1bad reason": a condition reason must start"#
        ));
    }

    #[test]
    fn a_cluster_name_is_one_of_the_nominated() {
        let w = |status: Value| wl(json!({}), json!([ps("main", 1)]), status);
        let old = w(json!({"nominatedClusterNames": ["a", "b"]}));
        assert_eq!(update(old.clone(), w(json!({"clusterName": "b"}))), NONE);
        assert_eq!(
            update(old, w(json!({"clusterName": "c"}))),
            [
                r#"status.clusterName: Invalid value: "c": when setting clusterName it must be one of the nominatedClusterNames"#
            ]
        );
    }

    #[test]
    fn admission_gates_are_only_removed() {
        let w = |gates: &str| {
            wl(
                json!({"kueue.x-k8s.io/admission-gated-by": gates}),
                json!([ps("main", 1)]),
                Value::Null,
            )
        };
        assert_eq!(create(w("example.com/a,example.com/b")), NONE);
        assert_eq!(
            update(w("example.com/a,example.com/b"), w("example.com/b")),
            NONE
        );
        assert_eq!(
            update(w("example.com/a"), w("example.com/a,example.com/c")),
            ["metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: can only remove gates, not add new ones"]
        );
    }

    #[test]
    fn the_priority_boost_annotation_is_not_validated_by_default() {
        let w = wl(
            json!({"kueue.x-k8s.io/priority-boost": "invalid"}),
            json!([ps("main", 1)]),
            Value::Null,
        );
        assert_eq!(create(w), NONE);
    }

    #[test]
    fn pod_sets_are_immutable_while_quota_is_reserved() {
        let status = admitted(json!([{"name": "ps1"}, {"name": "ps2"}]));
        let old = wl(
            json!({}),
            json!([ps("ps1", 3), ps("ps2", 4)]),
            status.clone(),
        );
        // Scaling down is allowed (ElasticJobsViaWorkloadSlices), up is not.
        let down = wl(
            json!({}),
            json!([ps("ps1", 3), ps("ps2", 3)]),
            status.clone(),
        );
        assert_eq!(update(old.clone(), down), NONE);
        let mut down_and_changed = wl(
            json!({}),
            json!([ps("ps1", 3), ps("ps2", 3)]),
            status.clone(),
        );
        down_and_changed["spec"]["podSets"][1]["template"]["spec"]["containers"][0]["image"] =
            json!("other");
        let errs = update(old.clone(), down_and_changed);
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with(r#"spec.podSets.1: Invalid value: {"count":4,"name":"ps2","#),
            "{}",
            errs[0]
        );
        let new = wl(
            json!({}),
            json!([ps("ps1", 3), ps("ps2", 5)]),
            status.clone(),
        );
        let errs = update(old.clone(), new);
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with(r#"spec.podSets.1: Invalid value: {"count":5,"name":"ps2","#),
            "{}",
            errs[0]
        );
        assert!(errs[0].ends_with(": field is immutable"));
        // Same pod sets written with other quantity spellings: unchanged.
        let mut respelled = old.clone();
        respelled["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]
            ["requests"]["cpu"] = json!("1000m");
        assert_eq!(update(old.clone(), respelled), NONE);
        // A pod set added: the whole list is reported.
        let added = wl(
            json!({}),
            json!([ps("ps1", 3), ps("ps2", 4), ps("ps3", 1)]),
            status,
        );
        let errs = update(old, added);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(errs[0].starts_with("spec.podSets: Invalid value: [{"));
        // Without a reservation pod sets may change.
        let free_old = wl(json!({}), json!([ps("ps1", 3)]), Value::Null);
        let free_new = wl(json!({}), json!([ps("ps1", 5)]), Value::Null);
        assert_eq!(update(free_old, free_new), NONE);
    }

    #[test]
    fn reclaimable_pods_only_grow_while_quota_is_reserved() {
        let w = |reclaimable: Value, reserved_now: bool| {
            let mut status = if reserved_now {
                admitted(json!([{"name": "ps1"}, {"name": "ps2"}]))
            } else {
                json!({})
            };
            status["reclaimablePods"] = reclaimable;
            wl(json!({}), json!([ps("ps1", 3), ps("ps2", 3)]), status)
        };
        let before = w(
            json!([{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}]),
            true,
        );
        assert_eq!(
            update(
                before.clone(),
                w(json!([{"name": "ps1", "count": 1}]), true)
            ),
            [
                "status.reclaimablePods[ps1].count: Invalid value: 1: cannot be less than 2",
                "status.reclaimablePods[ps2]: Required value: cannot be removed",
            ]
        );
        assert_eq!(
            update(
                w(json!([{"name": "ps1", "count": 1}]), true),
                w(
                    json!([{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}]),
                    true
                )
            ),
            NONE
        );
        // Once the reservation is gone they may go back to 0.
        assert_eq!(
            update(
                before,
                w(
                    json!([{"name": "ps1", "count": 0}, {"name": "ps2", "count": 1}]),
                    false
                )
            ),
            NONE
        );
    }

    #[test]
    fn an_admission_is_set_or_cleared_but_not_changed() {
        let assignment = |flavor: &str, topology: Value| {
            json!([{"name": "ps1", "count": 3, "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": "3"},
                    "topologyAssignment": topology}])
        };
        let topo = |n: i32| json!({"levels": ["rack"], "slices": [{"domainCount": 1, "valuesPerLevel": [{"universal": "r1"}], "podCounts": {"universal": n}}]});
        let at = |a: Value| wl(json!({}), json!([ps("ps1", 3)]), admitted(a));
        let old = at(assignment("a", topo(3)));
        let errs = update(old.clone(), at(assignment("b", topo(3))));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with(r#"status.admission: Invalid value: {"clusterQueue":"cq","podSetAssignments":[{"count":3,"flavors":{"cpu":"b"}"#), "{}", errs[0]);
        assert!(errs[0].ends_with("field is immutable"));
        // Topology may be (re)written.
        assert_eq!(update(old.clone(), at(assignment("a", topo(2)))), NONE);
        // Set and cleared.
        let none = wl(json!({}), json!([ps("ps1", 3)]), json!({}));
        assert_eq!(update(none.clone(), old.clone()), NONE);
        assert_eq!(update(old.clone(), none), NONE);
        // A pod set assignment added: changed.
        let two = wl(
            json!({}),
            json!([ps("ps1", 3), ps("ps2", 1)]),
            admitted(json!([{"name": "ps1"}, {"name": "ps2"}])),
        );
        let one = wl(
            json!({}),
            json!([ps("ps1", 3), ps("ps2", 1)]),
            admitted(json!([{"name": "ps1"}])),
        );
        assert_eq!(update(two, one).len(), 1);
    }

    #[test]
    fn a_topology_assignment_in_the_released_shape_is_read() {
        let topology = json!({"levels": ["block", "rack"], "slices": [{"domainCount": 2,
            "valuesPerLevel": [{"universal": "b1"},
                               {"individual": {"prefix": "r", "roots": ["1", "2"]}}],
            "podCounts": {"individual": [2, 1]}}]});
        let w = wl(
            json!({}),
            json!([ps("ps1", 3)]),
            admitted(json!([{"name": "ps1", "count": 3, "topologyAssignment": topology}])),
        );
        assert_eq!(create(w), NONE);
    }

    #[test]
    fn pod_set_updates_of_ready_checks_are_immutable() {
        let w = |state: &str, message: &str, label: &str| {
            wl(
                json!({}),
                json!([ps("first", 1), ps("second", 1)]),
                json!({"admissionChecks": [{"name": "ac1", "state": state, "lastTransitionTime": T,
                                            "message": message,
                                            "podSetUpdates": [{"name": "first", "labels": {"foo": label}}, {"name": "second"}]}]}),
            )
        };
        assert_eq!(
            update(w("Ready", "old", "bar"), w("Ready", "old", "baz")),
            [
                r#"status.admissionChecks[0].podSetUpdates: Invalid value: [{"labels":{"foo":"baz"},"name":"first"},{"name":"second"}]: field is immutable"#
            ]
        );
        // Other fields of a Ready check may change, and updates of a check
        // that is not Ready may too.
        assert_eq!(
            update(w("Ready", "old", "bar"), w("Ready", "new", "bar")),
            NONE
        );
        assert_eq!(
            update(w("Pending", "old", "bar"), w("Ready", "old", "baz")),
            NONE
        );
    }
}
