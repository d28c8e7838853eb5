//! The generated CronJob `autogen-<name>`: built from the PreScaledCronJob's
//! embedded CronJob as raw JSON (every field the user wrote is kept), its
//! hash, and whether a live CronJob still matches it.
//!
//! What changes against the embedded CronJob: the name and namespace, a
//! controller owner reference to the PreScaledCronJob, the label
//! [`LABEL`] on the CronJob and upstream's `primedcron` label on the pod
//! template, the hash annotation [`HASH_ANNOTATION`], the schedule (the
//! primer's), and the wait init container prepended to the pod's init
//! containers.

use crate::vocabulary::pointer::At;
use serde_json::{json, Map, Value};

use super::{Plan, NAME_PREFIX};
use crate::vocabulary::quantity::Quantity;

/// On the generated CronJob: the PreScaledCronJob's name.
pub const LABEL: &str = "psc.cronprimer.local/prescaledcronjob";
/// Upstream's pod-template label (its pod controller read it).
pub const POD_LABEL: &str = "primedcron";
/// Upstream's hash annotation key.
pub const HASH_ANNOTATION: &str = "pscObjectHash";
/// Upstream's init container name, kept so tools that looked for it
/// (upstream's metrics pod controller) still find it.
pub const INIT_CONTAINER: &str = "injected-0d825b4f-07f0-4952-8150-fba894c613b1";

/// The PreScaledCronJob a CronJob is generated for.
#[derive(Debug, Clone)]
pub struct Owner<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
}

/// The generated CronJob's name.
pub fn name_of(psc: &str) -> String {
    format!("{NAME_PREFIX}{psc}")
}

/// The init container that holds the pod until the real run. It asks for
/// no resources: an init container's requests count towards the pod's
/// (and so towards a queued Job's quota in Kueue), and sleeping needs none.
pub fn init_container(image: &str, schedule: &str, time_zone: Option<&str>, plan: &Plan) -> Value {
    let mut args = vec![
        "prescale-wait".to_string(),
        "--schedule".into(),
        schedule.into(),
        "--primer-schedule".into(),
        plan.primer.clone(),
        "--max-wait-minutes".into(),
        plan.max_wait_minutes.to_string(),
    ];
    if let Some(tz) = time_zone {
        args.push("--time-zone".into());
        args.push(tz.into());
    }
    json!({
        "name": INIT_CONTAINER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/batchgate"],
        "args": args,
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "runAsNonRoot": true,
            "runAsUser": 65532,
            "capabilities": {"drop": ["ALL"]},
        },
    })
}

/// `v` as a map, made one (empty) if it is not.
fn ensure_map(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        _ => unreachable!("made a map above"),
    }
}

/// The value at `keys` below `v`, every step made a map if needed.
fn path_mut<'a>(mut v: &'a mut Value, keys: &[&str]) -> &'a mut Value {
    for k in keys {
        v = ensure_map(v)
            .entry(k.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    v
}

/// The CronJob to create, with its hash annotation set. `template` is
/// `spec.cronJob` as written.
pub fn desired(owner: &Owner<'_>, template: &Value, plan: &Plan, image: &str) -> (Value, String) {
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    let schedule = spec
        .get("schedule")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let time_zone = spec
        .get("timeZone")
        .and_then(Value::as_str)
        .map(str::to_string);
    spec["schedule"] = json!(plan.primer);
    ensure_map(path_mut(
        &mut spec,
        &["jobTemplate", "spec", "template", "metadata", "labels"],
    ))
    .insert(POD_LABEL.into(), json!(owner.name));
    let pod_spec = path_mut(&mut spec, &["jobTemplate", "spec", "template", "spec"]);
    let mut inits = vec![init_container(image, &schedule, time_zone.as_deref(), plan)];
    if let Some(Value::Array(existing)) = pod_spec.get("initContainers") {
        inits.extend(
            existing
                .iter()
                .filter(|c| c.get("name").and_then(Value::as_str) != Some(INIT_CONTAINER))
                .cloned(),
        );
    }
    ensure_map(pod_spec).insert("initContainers".into(), Value::Array(inits));
    let meta = template.get("metadata");
    let mut labels = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(LABEL.into(), json!(owner.name));
    let mut annotations = meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.remove(HASH_ANNOTATION);
    let mut cj = json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": name_of(owner.name),
            "namespace": owner.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": spec,
    });
    let h = hash(&cj);
    cj["metadata"]["annotations"][HASH_ANNOTATION] = json!(h);
    (cj, h)
}

/// The controller owner reference to the PreScaledCronJob (upstream set
/// neither `controller` nor `blockOwnerDeletion`).
pub fn owner_reference(owner: &Owner<'_>) -> Value {
    json!({
        "apiVersion": format!("{}/{}", crate::api::prescale::GROUP, crate::api::prescale::VERSION),
        "kind": crate::api::prescale::KIND,
        "name": owner.name,
        "uid": owner.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// `v2_<sha256 hex, 32 digits>` of the canonical JSON (keys sorted).
pub fn hash(v: &Value) -> String {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    let d = ring::digest::digest(&ring::digest::SHA256, &bytes);
    let hex: String = d.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("v2_{hex}")
}

/// Whether `live` is controlled by the PreScaledCronJob `uid`.
pub fn controlled_by(live: &Value, uid: &str) -> bool {
    live.at("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r.get("uid").and_then(Value::as_str) == Some(uid)
                    && r.get("controller").and_then(Value::as_bool) == Some(true)
            })
        })
}

/// Whether `live` carries the owner reference at all (controller or not).
pub fn owned_by(live: &Value, uid: &str) -> bool {
    live.at("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
        })
}

/// What the apiserver defaults a CronJob spec field to.
fn spec_default(key: &str) -> Option<Value> {
    match key {
        "concurrencyPolicy" => Some(json!("Allow")),
        "suspend" => Some(json!(false)),
        "successfulJobsHistoryLimit" => Some(json!(3)),
        "failedJobsHistoryLimit" => Some(json!(1)),
        _ => None,
    }
}

/// Where `live` differs from `want` (the first path found), or `None`
/// when the live CronJob is what was asked for. Compared: the labels and
/// annotations batchgate set, the controller reference, and the whole
/// spec — every field of `want` must be in `live` with the same value
/// (fields the apiserver adds as defaults inside the job template are
/// allowed; quantities compare by value), and at the top of the spec
/// nothing may be added or changed from its default.
pub fn drift(live: &Value, want: &Value, uid: &str) -> Option<String> {
    for key in ["labels", "annotations"] {
        if let Some(Value::Object(m)) = want.at(&format!("/metadata/{key}")) {
            for (k, v) in m {
                if live.at(&format!("/metadata/{key}")).and_then(|l| l.get(k)) != Some(v) {
                    return Some(format!("metadata.{key}[{k}]"));
                }
            }
        }
    }
    if !controlled_by(live, uid) {
        return Some("metadata.ownerReferences".into());
    }
    let empty = Map::new();
    let live_spec = live
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let want_spec = want
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (k, v) in live_spec {
        if !want_spec.contains_key(k) && spec_default(k).as_ref() != Some(v) {
            return Some(format!("spec.{k}"));
        }
    }
    for (k, w) in want_spec {
        let path = format!("spec.{k}");
        match live_spec.get(k) {
            None if spec_default(k).is_none() && !is_empty(w) => return Some(path),
            None => {}
            Some(l) => {
                if let Some(p) = covers(l, w, &path) {
                    return Some(p);
                }
            }
        }
    }
    None
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn covers(live: &Value, want: &Value, path: &str) -> Option<String> {
    match (live, want) {
        (Value::Object(l), Value::Object(w)) => {
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match l.get(k) {
                    None if is_empty(wv) => {}
                    None => return Some(p),
                    Some(lv) => {
                        if let Some(d) = covers(lv, wv, &p) {
                            return Some(d);
                        }
                    }
                }
            }
            None
        }
        (Value::Array(l), Value::Array(w)) => {
            if l.len() != w.len() {
                return Some(path.to_string());
            }
            l.iter()
                .zip(w)
                .enumerate()
                .find_map(|(i, (lv, wv))| covers(lv, wv, &format!("{path}[{i}]")))
        }
        (l, w) if l == w => None,
        (l, w) => {
            let text = |v: &Value| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            };
            match (
                text(l).map(|s| Quantity::parse(&s)),
                text(w).map(|s| Quantity::parse(&s)),
            ) {
                (Some(Ok(a)), Some(Ok(b))) if a.cmp_value(&b).is_eq() => None,
                _ if is_empty(w) && is_empty(l) => None,
                _ => Some(path.to_string()),
            }
        }
    }
}

/// The object to write over `live`: its metadata kept (other labels,
/// annotations, finalizers, resourceVersion), batchgate's labels,
/// annotations and owner reference set, the spec replaced whole.
pub fn replacement(live: &Value, want: &Value) -> Value {
    let mut out = live.clone();
    for key in ["labels", "annotations"] {
        if let Some(Value::Object(m)) = want.at(&format!("/metadata/{key}")) {
            let target = ensure_map(path_mut(&mut out, &["metadata", key]));
            for (k, v) in m {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(Value::Array(want_refs)) = want.at("/metadata/ownerReferences") {
        let meta = path_mut(&mut out, &["metadata"]);
        let mut refs: Vec<Value> = meta
            .get("ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for w in want_refs {
            refs.retain(|r| r.get("uid") != w.get("uid"));
            refs.push(w.clone());
        }
        meta["ownerReferences"] = Value::Array(refs);
    }
    out["spec"] = want.get("spec").cloned().unwrap_or_else(|| json!({}));
    if let Some(o) = out.as_object_mut() {
        o.remove("status");
    }
    out
}

#[cfg(test)]
mod tests;
