//! The object to create for one component: the template with its namespace
//! defaulted, the AppWrapper label, the controller owner reference, and each
//! pod set's `PodSetInfo` injected with upstream's merge and conflict rules
//! (`createComponent` in upstream's `resource_management.go`).

use crate::vocabulary::pointer::At;
use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::config::{Autopilot, OperatorConfig};
use super::observe::quantity_is_zero;
use super::podsets::{value_at_path_mut, PodSet, PodSetInfo};
use super::{APPWRAPPER_API_VERSION, APPWRAPPER_KIND, APPWRAPPER_LABEL};

/// Who owns the rendered object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
}

/// Go's `fmt.Sprint` of a decoded JSON value (upstream's `toMap`).
fn sprint(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_string(),
        other => other.to_string(),
    }
}

/// Upstream's `toMap`: a string map from a JSON object (non-strings printed).
fn to_map(v: Option<&Value>) -> BTreeMap<String, String> {
    match v {
        Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), sprint(v))).collect(),
        _ => BTreeMap::new(),
    }
}

/// Kueue's `maps.HaveConflict(existing, inject)`, keys in sorted order.
fn have_conflict(
    existing: &BTreeMap<String, String>,
    inject: &BTreeMap<String, String>,
) -> Result<(), String> {
    for (k, a) in existing {
        if let Some(b) = inject.get(k) {
            if a != b {
                return Err(format!("conflict for key={k}, value1={a}, value2={b}"));
            }
        }
    }
    Ok(())
}

/// Kueue's `maps.MergeKeepFirst(a, b)`: `a`'s values win.
fn merge_keep_first(
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = b.clone();
    out.extend(a.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

fn to_value(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn merge_checked(
    target: &mut Map<String, Value>,
    field: &str,
    what: &str,
    inject: &BTreeMap<String, String>,
) -> Result<(), String> {
    let existing = to_map(target.get(field));
    have_conflict(&existing, inject).map_err(|e| format!("conflict updating {what}: {e}"))?;
    target.insert(
        field.to_string(),
        to_value(&merge_keep_first(&existing, inject)),
    );
    Ok(())
}

/// Render component `index` of an AppWrapper. Every error is fatal for the
/// AppWrapper (upstream returns `fatal=true` for all of them).
pub fn render_component(
    owner: &Owner<'_>,
    template: &Value,
    pod_sets: &[PodSet],
    pod_set_infos: &[PodSetInfo],
    config: &OperatorConfig,
) -> Result<Value, String> {
    let scheduler_name = config.scheduler_name.as_str();
    let mut obj = template.clone();
    let Some(root) = obj.as_object_mut() else {
        return Err("component template is not a JSON object".to_string());
    };
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if metadata.is_null() {
        *metadata = Value::Object(Map::new());
    }
    let Some(metadata) = metadata.as_object_mut() else {
        return Err("component metadata is not a JSON object".to_string());
    };
    // namespace defaulting (parseComponent)
    match metadata
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "" => {
            metadata.insert(
                "namespace".into(),
                Value::String(owner.namespace.to_string()),
            );
        }
        ns if ns != owner.namespace => {
            return Err(format!(
                "component namespace \"{ns}\" is different from appwrapper namespace \"{}\"",
                owner.namespace
            ));
        }
        _ => {}
    }
    // top-level label: existing value wins, no conflict check
    let aw_label: BTreeMap<String, String> =
        [(APPWRAPPER_LABEL.to_string(), owner.name.to_string())].into();
    let labels = merge_keep_first(&to_map(metadata.get("labels")), &aw_label);
    metadata.insert("labels".into(), to_value(&labels));

    // controller owner reference (SetControllerReference)
    let owner_ref = json!({
        "apiVersion": APPWRAPPER_API_VERSION,
        "kind": APPWRAPPER_KIND,
        "name": owner.name,
        "uid": owner.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    });
    let mut refs: Vec<Value> = match metadata.get("ownerReferences") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    if let Some(other) = refs.iter().find(|r| {
        r.get("controller").and_then(Value::as_bool) == Some(true)
            && r.get("uid").and_then(Value::as_str) != Some(owner.uid)
    }) {
        return Err(format!(
            "Object {}/{} is already owned by another {} controller {}",
            owner.namespace,
            metadata.get("name").map(sprint).unwrap_or_default(),
            other.get("kind").map(sprint).unwrap_or_default(),
            other.get("name").map(sprint).unwrap_or_default(),
        ));
    }
    match refs
        .iter_mut()
        .find(|r| r.get("uid").and_then(Value::as_str) == Some(owner.uid))
    {
        Some(r) => *r = owner_ref,
        None => refs.push(owner_ref),
    }
    metadata.insert("ownerReferences".into(), Value::Array(refs));

    // pod-set info injection
    let empty = PodSetInfo::default();
    for (j, ps) in pod_sets.iter().enumerate() {
        let info = pod_set_infos.get(j).unwrap_or(&empty);
        let path = ps.path.as_str();
        let at = value_at_path_mut(&mut obj, path)?;
        let Some(p) = at.as_object_mut() else {
            return Err(format!("at path position '{path}' non-map value"));
        };
        if !matches!(p.get("spec"), Some(Value::Object(_))) {
            return Err(format!("content at {path} does not contain a spec"));
        }
        match p.get("metadata") {
            Some(Value::Object(_)) => {}
            _ => {
                p.insert("metadata".into(), Value::Object(Map::new()));
            }
        }
        {
            let Some(Value::Object(md)) = p.get_mut("metadata") else {
                return Err("pod template metadata is not a JSON object".to_string());
            };
            if !info.annotations.is_empty() {
                merge_checked(md, "annotations", "annotations", &info.annotations)?;
            }
            let labels = merge_keep_first(&info.labels, &aw_label);
            merge_checked(md, "labels", "labels", &labels)?;
        }
        let Some(Value::Object(spec)) = p.get_mut("spec") else {
            return Err(format!("content at {path} does not contain a spec"));
        };
        if !info.node_selector.is_empty() {
            merge_checked(spec, "nodeSelector", "nodeSelector", &info.node_selector)?;
        }
        if !info.tolerations.is_empty() {
            let mut t = match spec.get("tolerations") {
                Some(Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            };
            t.extend(info.tolerations.iter().cloned());
            spec.insert("tolerations".into(), Value::Array(t));
        }
        if !info.scheduling_gates.is_empty() {
            let mut g = match spec.get("schedulingGates") {
                Some(Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            };
            append_gates(&mut g, &info.scheduling_gates);
            spec.insert("schedulingGates".into(), Value::Array(g));
        }
        if !scheduler_name.is_empty()
            && spec
                .get("schedulerName")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
        {
            spec.insert(
                "schedulerName".into(),
                Value::String(scheduler_name.to_string()),
            );
        }
        if let Some(ap) = config
            .autopilot
            .as_ref()
            .filter(|a| a.inject_anti_affinities)
        {
            // Upstream only logs a failure here; so does nobody here.
            let _ = inject_anti_affinities(spec, ap);
        }
    }
    Ok(obj)
}

/// Scheduling gates from Kueue, appended unless a gate of that name is
/// already there (#301); only the name is copied, as upstream does.
fn append_gates(gates: &mut Vec<Value>, additions: &[Value]) {
    for add in additions {
        let name = add.get("name").and_then(Value::as_str).unwrap_or("");
        let duplicate = gates
            .iter()
            .any(|g| g.get("name").and_then(Value::as_str) == Some(name));
        if !duplicate {
            gates.push(json!({ "name": name }));
        }
    }
}

/// Upstream's `hasResourceRequest`: a container or init container with a
/// positive integer or a non-zero quantity string for `resource` in its
/// limits or requests (a JSON float is not counted, as in Go).
fn has_resource_request(spec: &Map<String, Value>, resource: &str) -> bool {
    ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .any(|c| {
            ["limits", "requests"].iter().any(|k| {
                match c
                    .at(&format!("/resources/{k}"))
                    .and_then(|l| l.get(resource))
                {
                    Some(Value::Number(n)) => n.as_i64().is_some_and(|v| v > 0),
                    Some(q @ Value::String(_)) => !quantity_is_zero(q),
                    _ => false,
                }
            })
        })
}

/// Autopilot anti-affinities (#198/#260/#315): for each resource the pod
/// uses, its NoSchedule and NoExecute taints become `NotIn` requirements
/// appended to every required node-selector term (or to one new term), and
/// its PreferNoSchedule taints one preferred term with
/// `preferNoScheduleWeight`. Keys and resources in sorted order (Go's map
/// order is random).
pub fn inject_anti_affinities(
    spec: &mut Map<String, Value>,
    autopilot: &Autopilot,
) -> Result<(), String> {
    let mut required: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut preferred: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (resource, taints) in &autopilot.resource_taints {
        if !has_resource_request(spec, resource) {
            continue;
        }
        for t in taints {
            match t.effect.as_str() {
                "NoExecute" | "NoSchedule" => required
                    .entry(t.key.clone())
                    .or_default()
                    .push(t.value.clone()),
                "PreferNoSchedule" => preferred
                    .entry(t.key.clone())
                    .or_default()
                    .push(t.value.clone()),
                _ => {}
            }
        }
    }
    let exprs = |m: &BTreeMap<String, Vec<String>>| -> Vec<Value> {
        m.iter()
            .map(|(k, v)| json!({"key": k, "operator": "NotIn", "values": v}))
            .collect()
    };
    if !required.is_empty() {
        let node_affinity = node_affinity(spec)?;
        let selector = node_affinity
            .entry("requiredDuringSchedulingIgnoredDuringExecution")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution is not a map")?;
        let terms = selector
            .entry("nodeSelectorTerms")
            .or_insert_with(|| json!([{}]))
            .as_array_mut()
            .ok_or("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms is not an array")?;
        let add = exprs(&required);
        for (idx, term) in terms.iter_mut().enumerate() {
            let term = term.as_object_mut().ok_or_else(|| {
                format!("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{idx}] is not an map")
            })?;
            let m = term
                .entry("matchExpressions")
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .ok_or_else(|| {
                    format!("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{idx}].matchExpressions is not an map")
                })?;
            m.extend(add.iter().cloned());
        }
    }
    if !preferred.is_empty() {
        let weight = autopilot.prefer_no_schedule_weight;
        let node_affinity = node_affinity(spec)?;
        let terms = node_affinity
            .entry("preferredDuringSchedulingIgnoredDuringExecution")
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution is not an array")?;
        terms
            .push(json!({"weight": weight, "preference": {"matchExpressions": exprs(&preferred)}}));
    }
    Ok(())
}

fn node_affinity(spec: &mut Map<String, Value>) -> Result<&mut Map<String, Value>, String> {
    spec.entry("affinity")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("spec.affinity is not a map")?
        .entry("nodeAffinity")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| "spec.affinity.nodeAffinity is not a map".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::appwrapper::podsets::{infer_pod_sets, PodSpecReading};

    const OWNER: Owner<'static> = Owner {
        name: "aw",
        namespace: "ns",
        uid: "uid-1",
    };

    fn minimal_pod() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    }

    fn marker_info() -> PodSetInfo {
        PodSetInfo {
            annotations: [("test2".to_string(), "test2".to_string())].into(),
            labels: [("testkey1".to_string(), "value1".to_string())].into(),
            node_selector: [("nodeName".to_string(), "myNode".to_string())].into(),
            tolerations: vec![json!({"key": "aKey", "operator": "Exists", "effect": "NoSchedule"})],
            scheduling_gates: vec![json!({"name": "aGate"})],
        }
    }

    fn render(t: &Value, infos: &[PodSetInfo], sched: &str) -> Result<Value, String> {
        let sets = infer_pod_sets(t, PodSpecReading::Structural).unwrap();
        let config = OperatorConfig {
            scheduler_name: sched.to_string(),
            ..Default::default()
        };
        render_component(&OWNER, t, &sets, infos, &config)
    }

    #[test]
    fn c5_injects_into_minimal_pod() {
        let out = render(&minimal_pod(), &[marker_info()], "").unwrap();
        assert_eq!(out["metadata"]["namespace"], "ns");
        assert_eq!(
            out["metadata"]["labels"],
            json!({"workload.codeflare.dev/appwrapper": "aw", "testkey1": "value1"})
        );
        assert_eq!(out["metadata"]["annotations"], json!({"test2": "test2"}));
        assert_eq!(out["spec"]["nodeSelector"], json!({"nodeName": "myNode"}));
        assert_eq!(
            out["spec"]["tolerations"],
            json!([{"key": "aKey", "operator": "Exists", "effect": "NoSchedule"}])
        );
        assert_eq!(out["spec"]["schedulingGates"], json!([{"name": "aGate"}]));
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "aw",
                    "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}])
        );
        assert!(out["spec"].get("schedulerName").is_none());
    }

    #[test]
    fn c6_keeps_existing_values_and_appends() {
        let mut p = minimal_pod();
        p["metadata"]["labels"] = json!({"myLabel": "is mine"});
        p["metadata"]["annotations"] = json!({"myAnnotation": "is mine"});
        p["spec"]["nodeSelector"] = json!({"myselector": "is mine"});
        p["spec"]["tolerations"] = json!([{"key": "myToleration", "operator": "Exists"}]);
        p["spec"]["schedulingGates"] = json!([{"name": "myGate"}, {"name": "aGate"}]);
        p["spec"]["schedulerName"] = json!("mine");
        let out = render(&p, &[marker_info()], "kueue-sched").unwrap();
        assert_eq!(out["metadata"]["labels"]["myLabel"], "is mine");
        assert_eq!(out["metadata"]["labels"]["testkey1"], "value1");
        assert_eq!(out["metadata"]["annotations"]["myAnnotation"], "is mine");
        assert_eq!(
            out["spec"]["nodeSelector"],
            json!({"myselector": "is mine", "nodeName": "myNode"})
        );
        assert_eq!(out["spec"]["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(
            out["spec"]["schedulingGates"],
            json!([{"name": "myGate"}, {"name": "aGate"}])
        );
        assert_eq!(out["spec"]["schedulerName"], "mine");
    }

    #[test]
    fn tolerations_are_not_deduplicated() {
        let mut p = minimal_pod();
        p["spec"]["tolerations"] =
            json!([{"key": "aKey", "operator": "Exists", "effect": "NoSchedule"}]);
        let out = render(&p, &[marker_info()], "").unwrap();
        assert_eq!(out["spec"]["tolerations"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn scheduler_name_injected_only_when_absent() {
        let out = render(&minimal_pod(), &[], "custom").unwrap();
        assert_eq!(out["spec"]["schedulerName"], "custom");
        let mut p = minimal_pod();
        p["spec"]["schedulerName"] = json!("");
        assert_eq!(
            render(&p, &[], "custom").unwrap()["spec"]["schedulerName"],
            "custom"
        );
    }

    #[test]
    fn conflicts_are_errors() {
        let mut p = minimal_pod();
        p["metadata"]["labels"] = json!({"testkey1": "other"});
        assert_eq!(
            render(&p, &[marker_info()], "").unwrap_err(),
            "conflict updating labels: conflict for key=testkey1, value1=other, value2=value1"
        );
        let mut p = minimal_pod();
        p["metadata"]["annotations"] = json!({"test2": "x"});
        assert_eq!(
            render(&p, &[marker_info()], "").unwrap_err(),
            "conflict updating annotations: conflict for key=test2, value1=x, value2=test2"
        );
        let mut p = minimal_pod();
        p["spec"]["nodeSelector"] = json!({"nodeName": "other"});
        assert_eq!(
            render(&p, &[marker_info()], "").unwrap_err(),
            "conflict updating nodeSelector: conflict for key=nodeName, value1=other, value2=myNode"
        );
        // the pod template's appwrapper label is conflict-checked too
        let mut p = minimal_pod();
        p["metadata"]["labels"] = json!({"workload.codeflare.dev/appwrapper": "someone-else"});
        assert!(render(&p, &[], "")
            .unwrap_err()
            .starts_with("conflict updating labels"));
    }

    #[test]
    fn top_level_label_keeps_existing_value() {
        // a Deployment's own label wins at the top level (no conflict check),
        // while its pod template gets the appwrapper label.
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"workload.codeflare.dev/appwrapper": "mine"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": []}}}});
        let out = render(&d, &[], "").unwrap();
        assert_eq!(
            out["metadata"]["labels"]["workload.codeflare.dev/appwrapper"],
            "mine"
        );
        assert_eq!(
            out["spec"]["template"]["metadata"]["labels"]["workload.codeflare.dev/appwrapper"],
            "aw"
        );
    }

    #[test]
    fn injects_at_every_pod_set_path_by_index() {
        let js = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
            "spec": {"replicatedJobs": [
                {"name": "a", "template": {"spec": {"template": {"spec": {"containers": []}}}}},
                {"name": "b", "template": {"spec": {"template": {"spec": {"containers": []}}}}}]}});
        let infos = vec![
            PodSetInfo {
                node_selector: [("pool".to_string(), "a".to_string())].into(),
                ..Default::default()
            },
            PodSetInfo {
                node_selector: [("pool".to_string(), "b".to_string())].into(),
                ..Default::default()
            },
        ];
        let out = render(&js, &infos, "").unwrap();
        for (i, pool) in ["a", "b"].iter().enumerate() {
            let t = &out["spec"]["replicatedJobs"][i]["template"]["spec"]["template"];
            assert_eq!(t["spec"]["nodeSelector"]["pool"], *pool);
            assert_eq!(
                t["metadata"]["labels"]["workload.codeflare.dev/appwrapper"],
                "aw"
            );
        }
        // fewer infos than pod sets: the rest get only the label
        let out = render(&js, &infos[..1], "").unwrap();
        assert!(
            out["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
                .get("nodeSelector")
                .is_none()
        );
    }

    fn gpu_pod(gpu: Value) -> Value {
        let mut p = minimal_pod();
        p["spec"]["containers"][0]["resources"] = json!({"limits": {"nvidia.com/gpu": gpu}});
        p
    }

    fn ap_config() -> OperatorConfig {
        let mut ap = Autopilot::default();
        let t = |k: &str, v: &str, e: &str| crate::appwrapper::config::ResourceTaint {
            key: k.into(),
            value: v.into(),
            effect: e.into(),
        };
        let gpu = ap.resource_taints.get_mut("nvidia.com/gpu").unwrap();
        gpu.push(t("extra", "test", "NoExecute"));
        gpu.push(t("extra2", "test2", "PreferNoSchedule"));
        OperatorConfig {
            autopilot: Some(ap),
            ..Default::default()
        }
    }

    fn render_with(t: &Value, config: &OperatorConfig) -> Value {
        let sets = infer_pod_sets(t, PodSpecReading::Structural).unwrap();
        render_component(&OWNER, t, &sets, &[], config).unwrap()
    }

    #[test]
    fn c5_autopilot_anti_affinities_on_gpu_pods_only() {
        let out = render_with(&gpu_pod(json!("4")), &ap_config());
        assert_eq!(
            out["spec"]["affinity"]["nodeAffinity"],
            json!({
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "autopilot.ibm.com/gpuhealth", "operator": "NotIn", "values": ["TESTING", "EVICT"]},
                    {"key": "extra", "operator": "NotIn", "values": ["test"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "preference": {"matchExpressions": [
                    {"key": "autopilot.ibm.com/gpuhealth", "operator": "NotIn", "values": ["WARN"]},
                    {"key": "extra2", "operator": "NotIn", "values": ["test2"]}]}}]
            })
        );
        for no_gpu in [
            minimal_pod(),
            gpu_pod(json!("0")),
            gpu_pod(json!(0)),
            gpu_pod(json!(1.0)),
        ] {
            let out = render_with(&no_gpu, &ap_config());
            assert!(out["spec"].get("affinity").is_none(), "{no_gpu}");
        }
        assert!(render_with(&gpu_pod(json!(1)), &ap_config())["spec"]["affinity"].is_object());
        // an init container's request counts too
        let mut init = minimal_pod();
        init["spec"]["initContainers"] =
            json!([{"name": "i", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]);
        assert!(render_with(&init, &ap_config())["spec"]["affinity"].is_object());
        // switched off
        let mut off = ap_config();
        off.autopilot.as_mut().unwrap().inject_anti_affinities = false;
        assert!(render_with(&gpu_pod(json!("4")), &off)["spec"]
            .get("affinity")
            .is_none());
        off.autopilot = None;
        assert!(render_with(&gpu_pod(json!("4")), &off)["spec"]
            .get("affinity")
            .is_none());
    }

    #[test]
    fn c6_anti_affinities_append_to_every_existing_term() {
        let mut p = gpu_pod(json!("1"));
        let host =
            json!({"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["badHost1"]});
        p["spec"]["affinity"] = json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [host.clone()]}, {"matchFields": []}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 3, "preference": {"matchExpressions": [host.clone()]}}]}});
        let mut cfg = OperatorConfig::default();
        cfg.autopilot.as_mut().unwrap().prefer_no_schedule_weight = 7;
        let out = render_with(&p, &cfg);
        let na = &out["spec"]["affinity"]["nodeAffinity"];
        let evict = json!({"key": "autopilot.ibm.com/gpuhealth", "operator": "NotIn", "values": ["TESTING", "EVICT"]});
        let terms = &na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        assert_eq!(terms[0]["matchExpressions"], json!([host, evict]));
        assert_eq!(
            terms[1],
            json!({"matchFields": [], "matchExpressions": [evict]})
        );
        let pref = na["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .unwrap();
        assert_eq!(pref.len(), 2);
        assert_eq!(pref[0]["weight"], 3);
        assert_eq!(pref[1]["weight"], 7);
        // a malformed affinity is left alone (upstream only logs)
        let mut bad = gpu_pod(json!("1"));
        bad["spec"]["affinity"] = json!("nope");
        assert_eq!(render_with(&bad, &cfg)["spec"]["affinity"], "nope");
    }

    #[test]
    fn scheduling_gates_append_by_name() {
        let mut p = minimal_pod();
        p["spec"]["schedulingGates"] = json!([{"name": "aGate"}]);
        let info = PodSetInfo {
            scheduling_gates: vec![
                json!({"name": "aGate"}),
                json!({"name": "b", "x": 1}),
                json!({"name": "b"}),
            ],
            ..Default::default()
        };
        let out = render(&p, &[info], "").unwrap();
        assert_eq!(
            out["spec"]["schedulingGates"],
            json!([{"name": "aGate"}, {"name": "b"}])
        );
    }

    #[test]
    fn namespace_rules() {
        let mut p = minimal_pod();
        p["metadata"]["namespace"] = json!("ns");
        assert!(render(&p, &[], "").is_ok());
        p["metadata"]["namespace"] = json!("other");
        assert_eq!(
            render(&p, &[], "").unwrap_err(),
            "component namespace \"other\" is different from appwrapper namespace \"ns\""
        );
    }

    #[test]
    fn bad_path_and_foreign_owner() {
        let p = minimal_pod();
        let bad = vec![PodSet {
            replicas: None,
            path: "template.spec.containers".into(),
            annotations: BTreeMap::new(),
        }];
        assert_eq!(
            render_component(&OWNER, &p, &bad, &[], &OperatorConfig::default()).unwrap_err(),
            "at path position 'template.spec.containers' non-map value"
        );
        let mut owned = minimal_pod();
        owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "u2", "controller": true}]);
        assert_eq!(
            render(&owned, &[], "").unwrap_err(),
            "Object ns/p is already owned by another Thing controller t"
        );
    }

    #[test]
    fn never_drops_unknown_fields() {
        let mut p = minimal_pod();
        p["spec"]["futureField"] = json!({"x": [1, 2]});
        p["status"] = json!({"phase": "Pending"});
        let out = render(&p, &[marker_info()], "").unwrap();
        assert_eq!(out["spec"]["futureField"], json!({"x": [1, 2]}));
        assert_eq!(out["spec"]["containers"], p["spec"]["containers"]);
    }
}
