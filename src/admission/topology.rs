//! Kueue's topology-aware scheduling annotations on a job's pod templates
//! (`pkg/controller/jobframework/tas_validation.go`, gate
//! TopologyAwareScheduling, on by default): checked for every integrated
//! kind at the templates its policy names, with Kueue's field paths and
//! words, although batchgate does not schedule by topology yet. A request
//! Kueue would refuse is refused here too, so a manifest that passes
//! batchgate passes Kueue.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{
    field::{BadValue, FieldError},
    kueue::labels::qualified_name,
    object::{DecodeError, JobObject},
};
use crate::jobs::policy::{json_type, Invariant, PodSet, Policy};
use crate::vocabulary::{
    go::{go_parse_bool, go_quote},
    keys::{
        ELASTIC_JOB_ANNOTATION, PODSET_GROUP_NAME_ANNOTATION, PODSET_PREFERRED_TOPOLOGY_ANNOTATION,
        PODSET_REQUIRED_TOPOLOGY_ANNOTATION, PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION,
        PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION, PODSET_SLICE_SIZE_ANNOTATION,
        PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
    },
    pointer::Pointer,
};

/// A pod template's annotations.
type Annotations<'a> = BTreeMap<&'a str, &'a str>;

/// The topology errors of every pod set of `job`, in Kueue's order: each
/// pod set's annotations, then its slice size against its pod count, then
/// (for kinds with [`Invariant::PodSetGroups`]) the groups across pod sets.
pub fn validate(policy: &Policy, job: &JobObject<'_>) -> Result<Vec<FieldError>, DecodeError> {
    // Pod sets that cannot be computed (too many, a count of the wrong
    // type) are the kind's own rules' to report; Kueue skips the
    // cross-pod-set topology checks then too.
    let Ok(sets) = policy.pod_sets(job.raw) else {
        return Ok(Vec::new());
    };
    // A pod the operator builds from more than the template (a Spark
    // role) is checked as built, at the role's path (Kueue's
    // `spec.executor.annotations`).
    let built: Vec<Option<(Value, PodSet)>> = sets
        .iter()
        .map(|set| {
            let hook = set.synthesize.filter(|h| h.always())?;
            let mut at_root = set.clone();
            at_root.template = Pointer::parse("").ok()?;
            Some((crate::jobs::workload::synthesize(hook, job.raw), at_root))
        })
        .collect();
    let mut read = Vec::with_capacity(sets.len());
    for (set, b) in sets.iter().zip(&built) {
        match b {
            Some((pod, at_root)) => read.push((set, annotations(pod, at_root)?)),
            None => read.push((set, annotations(job.raw, set)?)),
        }
    }
    let mut errs = Vec::new();
    for ((set, ann), b) in read.iter().zip(&built) {
        let meta = if b.is_some() {
            set.field.clone()
        } else {
            format!("{}.metadata", set.field)
        };
        let request = pod_set_request(&meta, ann);
        // A Job (one pod set) stops at its first annotation errors.
        if policy.has(Invariant::JobTopology) {
            if !request.is_empty() {
                return Ok(request);
            }
            if policy.elastic_jobs && job.annotation(ELASTIC_JOB_ANNOTATION) == Some("true") {
                for (key, what) in [
                    (PODSET_REQUIRED_TOPOLOGY_ANNOTATION, "required"),
                    (PODSET_PREFERRED_TOPOLOGY_ANNOTATION, "preferred"),
                ] {
                    if ann.contains_key(key) {
                        return Ok(vec![FieldError::forbidden(
                            format!("{meta}.annotations.{key}"),
                            format!("{what} topology is not supported with elastic jobs"),
                        )]);
                    }
                }
            }
        }
        errs.extend(request);
        errs.extend(slice_size_upper_bound(&meta, ann, set.count));
    }
    if policy.has(Invariant::PodSetGroups) {
        errs.extend(groups(&read));
    }
    Ok(errs)
}

/// Kueue's hint on a TrainJob's topology errors: its templates come from
/// two places.
const RUNTIME_HINT: &str = r#". Adjust either the "TrainJob.spec.runtimePatches" or the "TrainingRuntime.Template" annotations for the corresponding Job"#;

/// Kueue's TrainJob check (`validateTopologyRequest`): each pod set as the
/// job's runtime builds it (`view`: the job with its runtime mounted, see
/// [`crate::jobs::reference`]), at `job[<pod set>]`, with Kueue's hint.
pub fn validate_runtime_view(
    policy: &Policy,
    view: &Value,
) -> Result<Vec<FieldError>, DecodeError> {
    let Ok(sets) = policy.pod_sets(view) else {
        return Ok(Vec::new());
    };
    let mut errs = Vec::new();
    for set in &sets {
        let ann = annotations(view, set)?;
        let meta = format!("job[{}]", set.name);
        errs.extend(pod_set_request(&meta, &ann));
        errs.extend(slice_size_upper_bound(&meta, &ann, set.count));
    }
    for e in &mut errs {
        e.detail.push_str(RUNTIME_HINT);
    }
    Ok(errs)
}

fn annotations<'a>(obj: &'a Value, set: &PodSet) -> Result<Annotations<'a>, DecodeError> {
    let mut out = BTreeMap::new();
    let Some(template) = set.template.resolve(obj) else {
        return Ok(out);
    };
    let path = format!("{}.metadata.annotations", set.field);
    let at = Pointer::parse("/metadata/annotations").ok();
    match at.as_ref().and_then(|p| p.resolve(template)) {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                match v {
                    Value::String(s) => {
                        out.insert(k.as_str(), s.as_str());
                    }
                    other => {
                        return Err(DecodeError {
                            field: format!("{path}[{k}]"),
                            message: format!("must be a string, found {}", json_type(other)),
                        })
                    }
                }
            }
        }
        Some(other) => {
            return Err(DecodeError {
                field: path,
                message: format!(
                    "must be a map of string keys to string values, found {}",
                    json_type(other)
                ),
            })
        }
    }
    Ok(out)
}

/// `ValidateLabelName(value, path)`: the value must be a qualified name.
fn label_name(value: &str, path: String) -> Vec<FieldError> {
    qualified_name(value)
        .into_iter()
        .map(|m| FieldError::invalid(path.clone(), BadValue::Str(value.into()), m))
        .collect()
}

/// `ValidateTASPodSetRequest` for the template whose metadata is at `meta`.
pub fn pod_set_request(meta: &str, ann: &Annotations<'_>) -> Vec<FieldError> {
    let annotations = format!("{meta}.annotations");
    let key = |k: &str| format!("{annotations}[{k}]");
    let required = ann.get(PODSET_REQUIRED_TOPOLOGY_ANNOTATION);
    let preferred = ann.get(PODSET_PREFERRED_TOPOLOGY_ANNOTATION);
    let unconstrained = ann.get(PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION);
    let slice_required = ann.get(PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION);
    let slice_size = ann.get(PODSET_SLICE_SIZE_ANNOTATION);
    let group = ann.get(PODSET_GROUP_NAME_ANNOTATION);
    let mut errs = Vec::new();

    let found = [required, preferred, unconstrained]
        .iter()
        .filter(|v| v.is_some())
        .count();
    if found > 1 {
        errs.push(FieldError::invalid(
            annotations.clone(),
            BadValue::Omit,
            format!(
                "must not contain more than one topology annotation: [{}, {}, {}]",
                go_quote(PODSET_REQUIRED_TOPOLOGY_ANNOTATION),
                go_quote(PODSET_PREFERRED_TOPOLOGY_ANNOTATION),
                go_quote(PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION)
            ),
        ));
    }
    for (k, v) in [
        (PODSET_REQUIRED_TOPOLOGY_ANNOTATION, required),
        (PODSET_PREFERRED_TOPOLOGY_ANNOTATION, preferred),
        (PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION, slice_required),
    ] {
        if let Some(v) = v {
            errs.extend(label_name(v, key(k)));
        }
    }
    if let Some(g) = group {
        if g.parse::<u64>().is_ok() && !g.starts_with('+') {
            errs.push(FieldError::invalid(
                key(PODSET_GROUP_NAME_ANNOTATION),
                BadValue::Str((*g).into()),
                "must not be a number",
            ));
        }
        if slice_size.is_some() {
            errs.push(FieldError::forbidden(
                key(PODSET_GROUP_NAME_ANNOTATION),
                format!("may not be set when '{PODSET_SLICE_SIZE_ANNOTATION}' is specified"),
            ));
        }
        if slice_required.is_some() {
            errs.push(FieldError::forbidden(
                key(PODSET_GROUP_NAME_ANNOTATION),
                format!("may not be set when '{PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION}' is specified"),
            ));
        }
        if preferred.is_none() && required.is_none() {
            errs.push(FieldError::forbidden(
                key(PODSET_GROUP_NAME_ANNOTATION),
                format!("may not be set when neither '{PODSET_PREFERRED_TOPOLOGY_ANNOTATION}' nor '{PODSET_REQUIRED_TOPOLOGY_ANNOTATION}' is specified"),
            ));
        }
    }
    if let Some(v) = unconstrained {
        if go_parse_bool(v).is_err() {
            errs.push(FieldError::invalid(
                key(PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION),
                BadValue::Str((*v).into()),
                "must be a boolean value",
            ));
        }
    }
    if let Some(v) = slice_size {
        match parse_int32(v) {
            None => errs.push(FieldError::invalid(
                key(PODSET_SLICE_SIZE_ANNOTATION),
                BadValue::Str((*v).into()),
                "must be a numeric value",
            )),
            Some(n) if n < 1 => errs.push(FieldError::invalid(
                key(PODSET_SLICE_SIZE_ANNOTATION),
                BadValue::Str((*v).into()),
                "must be greater than or equal to 1",
            )),
            Some(_) => {}
        }
    }
    match (slice_required.is_some(), slice_size.is_some()) {
        (true, false) => errs.push(FieldError::required(
            key(PODSET_SLICE_SIZE_ANNOTATION),
            format!("must be set when '{PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION}' is specified"),
        )),
        (false, true) => errs.push(FieldError::forbidden(
            key(PODSET_SLICE_SIZE_ANNOTATION),
            format!("may not be set when '{PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION}' is not specified"),
        )),
        _ => {}
    }
    if let Some(json) = ann.get(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION) {
        errs.extend(slice_constraints(&annotations, json, ann));
    }
    errs
}

/// Go's `strconv.ParseInt(s, 10, 32)`.
fn parse_int32(s: &str) -> Option<i32> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.trim_start_matches('+').parse::<i32>().ok()
}

/// One layer of `podset-slice-required-topology-constraints`.
#[derive(serde::Deserialize)]
struct Constraint {
    #[serde(default)]
    topology: String,
    #[serde(default)]
    size: i32,
}

/// The multi-layer slice constraints (gate TASMultiLayerTopology, on by
/// default), checked for syntax only, as Kueue does at admission.
fn slice_constraints(annotations: &str, json: &str, ann: &Annotations<'_>) -> Vec<FieldError> {
    let path = format!("{annotations}[{PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION}]");
    let mut errs = Vec::new();
    if ann.contains_key(PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION) {
        errs.push(FieldError::forbidden(
            path.clone(),
            format!(
                "may not be set when '{PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION}' is specified"
            ),
        ));
    }
    if ann.contains_key(PODSET_SLICE_SIZE_ANNOTATION) {
        errs.push(FieldError::forbidden(
            path.clone(),
            format!("may not be set when '{PODSET_SLICE_SIZE_ANNOTATION}' is specified"),
        ));
    }
    if ann.contains_key(PODSET_GROUP_NAME_ANNOTATION) {
        errs.push(FieldError::forbidden(
            format!("{annotations}[{PODSET_GROUP_NAME_ANNOTATION}]"),
            format!("may not be set when '{PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION}' is specified"),
        ));
    }
    let constraints: Vec<Constraint> = match serde_json::from_str(json) {
        Ok(c) => c,
        Err(e) => {
            // Go's encoding/json words its errors differently; the field,
            // the value and the fix are the same.
            errs.push(FieldError::invalid(
                path,
                BadValue::Str(json.into()),
                format!("must be a valid JSON array: {e}"),
            ));
            return errs;
        }
    };
    if constraints.is_empty() || constraints.len() > 3 {
        errs.push(FieldError::invalid(
            path,
            BadValue::Str(json.into()),
            "topology constraints must contain between 1 and 3 entries",
        ));
        return errs;
    }
    for (i, c) in constraints.iter().enumerate() {
        errs.extend(label_name(&c.topology, format!("{path}[{i}].topology")));
        if c.size < 1 {
            errs.push(FieldError::invalid(
                format!("{path}[{i}].size"),
                BadValue::Int(c.size.into()),
                "must be greater than or equal to 1",
            ));
        }
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, c) in constraints.iter().enumerate() {
        match seen.get(c.topology.as_str()) {
            Some(prev) => errs.push(FieldError::duplicate(
                format!("{path}[{i}].topology"),
                BadValue::Str(format!("{} (also at index {prev})", c.topology)),
            )),
            None => {
                seen.insert(&c.topology, i);
            }
        }
    }
    for pair in constraints.windows(2).enumerate() {
        let (i, w) = pair;
        if w[1].size > 0 && w[0].size % w[1].size != 0 {
            errs.push(FieldError::invalid(
                format!("{path}[{}].size", i + 1),
                BadValue::Int(w[1].size.into()),
                format!("must evenly divide the parent layer size {}", w[0].size),
            ));
        }
    }
    errs
}

/// `ValidateSliceSizeAnnotationUpperBound`: a slice holds at most the pod
/// set's pods.
pub fn slice_size_upper_bound(meta: &str, ann: &Annotations<'_>, count: i64) -> Vec<FieldError> {
    let annotations = format!("{meta}.annotations");
    let mut errs = Vec::new();
    if let Some(v) = ann.get(PODSET_SLICE_SIZE_ANNOTATION) {
        let path = format!("{annotations}[{PODSET_SLICE_SIZE_ANNOTATION}]");
        match parse_int32(v) {
            None => {
                return vec![FieldError::invalid(
                    path,
                    BadValue::Str((*v).into()),
                    "must be a numeric value",
                )]
            }
            Some(n) if i64::from(n) > count => errs.push(FieldError::invalid(
                path,
                BadValue::Str((*v).into()),
                format!("must not be greater than pod set count {count}"),
            )),
            Some(_) => {}
        }
    }
    if let Some(json) = ann.get(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION) {
        if let Ok(c) = serde_json::from_str::<Vec<Constraint>>(json) {
            if let Some(first) = c.first() {
                if i64::from(first.size) > count {
                    errs.push(FieldError::invalid(
                        format!("{annotations}[{PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION}]"),
                        BadValue::Int(first.size.into()),
                        format!("must not be greater than pod set count {count}"),
                    ));
                }
            }
        }
    }
    errs
}

/// `ValidatePodSetGroupingTopology`: a group names exactly two pod sets, one
/// of them with a single pod, both asking for the same required or preferred
/// topology. A pod set joins a group only with a required or preferred
/// topology (Kueue's topology request carries the group name only then).
fn groups(sets: &[(&PodSet, Annotations<'_>)]) -> Vec<FieldError> {
    let mut order: Vec<&str> = Vec::new();
    let mut members: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, ann)) in sets.iter().enumerate() {
        let Some(g) = ann.get(PODSET_GROUP_NAME_ANNOTATION) else {
            continue;
        };
        if !ann.contains_key(PODSET_REQUIRED_TOPOLOGY_ANNOTATION)
            && !ann.contains_key(PODSET_PREFERRED_TOPOLOGY_ANNOTATION)
        {
            continue;
        }
        if !members.contains_key(g) {
            order.push(g);
        }
        members.entry(g).or_default().push(i);
    }
    let annotations = |i: usize| format!("{}.metadata.annotations", sets[i].0.field);
    let mut errs = Vec::new();
    for g in order {
        let idx = &members[g];
        let group_path = |i: usize| format!("{}[{PODSET_GROUP_NAME_ANNOTATION}]", annotations(i));
        if idx.len() != 2 {
            for &i in idx {
                errs.push(FieldError::invalid(
                    group_path(i),
                    BadValue::Str(g.into()),
                    format!(
                        "can only define groups of exactly 2 pod sets, got: {} pod set(s)",
                        idx.len()
                    ),
                ));
            }
            continue;
        }
        let (a, b) = (idx[0], idx[1]);
        let (ca, cb) = (sets[a].0.count, sets[b].0.count);
        if ca != 1 && cb != 1 {
            let msg = format!(
                "can only define groups where at least one pod set has only 1 replica, got: {ca} replica(s) and {cb} replica(s) in the group"
            );
            errs.push(FieldError::invalid(
                group_path(a),
                BadValue::Str(g.into()),
                msg.clone(),
            ));
            errs.push(FieldError::invalid(
                group_path(b),
                BadValue::Str(g.into()),
                msg,
            ));
        }
        // Kueue's request holds the required topology, else the preferred.
        let request = |i: usize| {
            let ann = &sets[i].1;
            match ann.get(PODSET_REQUIRED_TOPOLOGY_ANNOTATION) {
                Some(r) => (Some(*r), None),
                None => (None, ann.get(PODSET_PREFERRED_TOPOLOGY_ANNOTATION).copied()),
            }
        };
        if request(a) != request(b) {
            let msg = |other: usize| {
                format!(
                    "must specify '{PODSET_REQUIRED_TOPOLOGY_ANNOTATION}' or '{PODSET_PREFERRED_TOPOLOGY_ANNOTATION}' topology consistent with '{}' in group '{g}'",
                    annotations(other)
                )
            };
            errs.push(FieldError::invalid(annotations(a), BadValue::Omit, msg(b)));
            errs.push(FieldError::invalid(annotations(b), BadValue::Omit, msg(a)));
        }
    }
    errs
}
