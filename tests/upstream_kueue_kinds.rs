//! Kueue v0.19.2's own webhook test tables for its kinds, case by case,
//! translated into AdmissionReviews and posted to the real `batchgate serve
//! --no-cluster` over TLS. Each table names the upstream file and test it
//! comes from; the cases are written here from reading them (builders below
//! stand in for upstream's `utiltesting` wrappers).
//!
//! Upstream compares the field errors' type and path (ignoring detail and
//! bad value), in order; so do these cases, from the denial message. Objects
//! are completed with what the CRD requires before a webhook sees them (a
//! condition's or admission check's `lastTransitionTime`), as the apiserver
//! would send them.
//!
//! Not counted as passing, and printed per table:
//! - cases that set a feature gate away from its v0.19.2 default (upstream
//!   answers them under another configuration);
//! - cases listed in docs/kueue-api.md as differences, with the reason (none today).

mod support;

use hyper::StatusCode;
use serde_json::{json, Value};
use support::{
    kueue::{cq, fq, rg, with},
    *,
};

const T: &str = "2026-01-01T00:00:00Z";

/// What upstream answers.
enum Want {
    Allow,
    /// Denied with these field errors (path, apimachinery error type), in
    /// this order.
    Deny(Vec<(&'static str, &'static str)>),
    /// Allowed with this admission warning (and no other).
    Warning(&'static str),
    /// Set a feature gate away from its v0.19.2 default: not posted.
    OtherGates(&'static str),
}

struct Case {
    name: &'static str,
    kind: &'static str,
    new: Value,
    old: Option<Value>,
    want: Want,
}

fn create(name: &'static str, kind: &'static str, new: Value, want: Want) -> Case {
    Case {
        name,
        kind,
        new,
        old: None,
        want,
    }
}

fn update(name: &'static str, kind: &'static str, old: Value, new: Value, want: Want) -> Case {
    Case {
        name,
        kind,
        new,
        old: Some(old),
        want,
    }
}

fn deny(errs: &[(&'static str, &'static str)]) -> Want {
    Want::Deny(errs.to_vec())
}

const INVALID: &str = "Invalid value";
const REQUIRED: &str = "Required value";
const FORBIDDEN: &str = "Forbidden";
const UNSUPPORTED: &str = "Unsupported value";
const NOT_FOUND: &str = "Not found";
const DUPLICATE: &str = "Duplicate value";
const ERROR_TYPES: [&str; 8] = [
    INVALID,
    REQUIRED,
    FORBIDDEN,
    UNSUPPORTED,
    NOT_FOUND,
    DUPLICATE,
    "Too long",
    "Too many",
];

/// The (field, type) of each error of an aggregated denial message
/// (`[a: Invalid value: ..., b: Required value: ...]`). Field paths have no
/// spaces, so a field is what precedes `: <type>` back to a space.
fn field_errors(msg: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    loop {
        let next = ERROR_TYPES
            .iter()
            .filter_map(|t| msg[from..].find(&format!(": {t}")).map(|p| (from + p, *t)))
            .min_by_key(|(p, _)| *p);
        let Some((pos, t)) = next else {
            return out;
        };
        let field = msg[..pos].rsplit(' ').next().unwrap_or_default();
        let field = if pos == field.len() {
            field.trim_start_matches('[')
        } else {
            field
        };
        out.push((field.to_string(), t.to_string()));
        from = pos + 2 + t.len();
    }
}

fn resource_of(kind: &str) -> &'static str {
    match kind {
        "ClusterQueue" => "clusterqueues",
        "Cohort" => "cohorts",
        "ResourceFlavor" => "resourceflavors",
        "LocalQueue" => "localqueues",
        _ => "workloads",
    }
}

fn body(uid: &str, case: &Case) -> Vec<u8> {
    let op = if case.old.is_some() {
        "UPDATE"
    } else {
        "CREATE"
    };
    let mut req = json!({
        "uid": uid,
        "kind": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": case.kind},
        "resource": {"group": "kueue.x-k8s.io", "version": "v1beta2", "resource": resource_of(case.kind)},
        "operation": op,
        "name": case.new["metadata"]["name"],
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": case.new,
    });
    if let Some(ns) = case.new["metadata"].get("namespace") {
        req["namespace"] = ns.clone();
    }
    if let Some(old) = &case.old {
        req["oldObject"] = old.clone();
    }
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}),
    )
    .unwrap()
}

/// Posts every case of a table; prints and returns the mismatches.
async fn run(server: &Server, table: &str, cases: Vec<Case>) -> Vec<String> {
    let client = server.client();
    let listed = 0;
    let (mut passing, mut counted, mut gated) = (0, 0, 0);
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        if let Want::OtherGates(gate) = &case.want {
            gated += 1;
            println!("  [{table}] not posted, sets {gate}: {}", case.name);
            continue;
        }
        let (status, resp) = client.post("/validate", body(&format!("{i}"), case)).await;
        let resp = &resp["response"];
        let got = if status != StatusCode::OK {
            Err(format!("HTTP {status}"))
        } else if resp["allowed"] == true {
            Ok(None)
        } else {
            Ok(Some((
                resp["status"]["code"].as_i64().unwrap_or_default(),
                resp["status"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )))
        };
        let verdict = match (&case.want, &got) {
            (Want::Warning(w), Ok(None)) => {
                let warned = resp["warnings"]
                    .as_array()
                    .is_some_and(|ws| ws.len() == 1 && ws[0] == *w);
                if warned {
                    Ok(())
                } else {
                    Err(format!("want allowed with the warning {w:?}, got {resp}"))
                }
            }
            (Want::Warning(w), other) => Err(format!(
                "want allowed with the warning {w:?}, got {other:?}"
            )),
            (Want::Allow, Ok(None)) => Ok(()),
            (Want::Deny(want), Ok(Some((403, msg)))) => {
                let got = field_errors(msg);
                let want: Vec<(String, String)> = want
                    .iter()
                    .map(|(f, t)| (f.to_string(), t.to_string()))
                    .collect();
                if got == want {
                    Ok(())
                } else {
                    Err(format!("want {want:?}, got {got:?} ({msg})"))
                }
            }
            (Want::Allow, other) => Err(format!("want allowed, got {other:?}")),
            (Want::Deny(want), other) => Err(format!("want denied {want:?}, got {other:?}")),
            (Want::OtherGates(_), _) => unreachable!("not posted"),
        };
        counted += 1;
        match verdict {
            Ok(()) => passing += 1,
            Err(e) => failures.push(format!("[{table}] {}: {e}", case.name)),
        }
    }
    println!(
        "{table}: {passing}/{counted} cases answer as Kueue v0.19.2 ({listed} listed in README, {gated} need non-default feature gates)"
    );
    failures
}

// ---------------------------------------------------------------------------
// Workloads (upstream `pkg/util/testing/v1beta2` wrappers, in JSON).

fn pod_set(name: &str, count: i64) -> Value {
    json!({"name": name, "count": count, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "resources": {}}]}}})
}

fn workload(pod_sets: Vec<Value>) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": "test-workload", "namespace": "test-ns"},
           "spec": {"podSets": pod_sets}})
}

fn main_workload() -> Value {
    workload(vec![pod_set("main", 1)])
}

fn quota_reserved() -> Value {
    json!({"type": "QuotaReserved", "status": "True", "reason": "AdmittedByTest",
           "message": "Admitted by ClusterQueue cluster-queue", "lastTransitionTime": T})
}

/// `ReserveQuotaAt(MakeAdmission("cluster-queue").PodSets(psas...))`.
fn reserve(wl: Value, assignments: Vec<Value>) -> Value {
    let wl = with(wl, "/status/conditions", json!([quota_reserved()]));
    with(
        wl,
        "/status/admission",
        json!({"clusterQueue": "cluster-queue", "podSetAssignments": assignments}),
    )
}

/// `quotaReservedWithoutAdmission`.
fn reserved_without_admission() -> Value {
    let mut c = quota_reserved();
    c["message"] = json!("admitted");
    with(
        workload(vec![pod_set("driver", 1)]),
        "/status/conditions",
        json!([c]),
    )
}

fn psa(name: &str) -> Value {
    json!({"name": name})
}

fn reclaimable(wl: Value, pods: Value) -> Value {
    with(wl, "/status/reclaimablePods", pods)
}

fn check(name: &str, state: &str, updates: Value) -> Value {
    let mut c = json!({"name": name, "state": state, "lastTransitionTime": T, "message": ""});
    if !updates.is_null() {
        c["podSetUpdates"] = updates;
    }
    c
}

fn annotated(wl: Value, key: &str, value: &str) -> Value {
    with(wl, &format!("/metadata/annotations/{key}"), json!(value))
}

const GATED_BY: &str = "kueue.x-k8s.io~1admission-gated-by";
const ELASTIC: &str = "kueue.x-k8s.io~1elastic-job";

fn gated(gates: &str) -> Value {
    annotated(main_workload(), GATED_BY, gates)
}

fn elastic(wl: Value) -> Value {
    annotated(wl, ELASTIC, "true")
}

/// A pointer segment with `/` escaped.
fn annotated_pointer(wl: Value, key: &str, value: &str) -> Value {
    let mut wl = wl;
    wl["metadata"]["annotations"][key] = json!(value);
    wl
}

fn boost(v: &str) -> Value {
    annotated_pointer(main_workload(), "kueue.x-k8s.io/priority-boost", v)
}

fn single_container(resources: Value) -> Value {
    json!([{"name": "c", "resources": resources}])
}

fn with_pod_set(ps: Value) -> Value {
    workload(vec![ps])
}

/// `pkg/webhooks/workload_webhook_test.go`, `TestValidateWorkload`.
fn workload_create() -> Vec<Case> {
    let bad = |containers: &str, spec: Value| {
        with(
            pod_set("bad", 1),
            &format!("/template/spec/{containers}"),
            spec,
        )
    };
    let metadata = |meta: Value| json!({"name": "bad-metadata", "count": 1, "template": {"metadata": meta, "spec": {"containers": []}}});
    let topology = |tr: Value| with(pod_set("bad", 1), "/topologyRequest", tr);
    let acs = |updates: Value| {
        let wl = workload(vec![pod_set("first", 1), pod_set("second", 1)]);
        with(
            wl,
            "/status/admissionChecks",
            json!([check("", "Pending", updates)]),
        )
    };
    let main_acs = |update: Value| {
        with(
            main_workload(),
            "/status/admissionChecks",
            json!([check("", "Pending", json!([update]))]),
        )
    };
    let w = "Workload";
    vec![
        create("valid", w, workload(vec![pod_set("driver", 1), pod_set("workers", 100)]), Want::Allow),
        create(
            "quota reserved without an admission is refused, not a panic",
            w,
            reserved_without_admission(),
            deny(&[("status.admission", REQUIRED)]),
        ),
        create(
            "should have a valid podSet name in status assignment",
            w,
            reserve(main_workload(), vec![json!({"name": "@invalid", "flavors": {}, "resourceUsage": {}, "count": 1})]),
            deny(&[("status.admission.podSetAssignments[0].name", NOT_FOUND)]),
        ),
        create(
            "assignment usage should be divisible by count",
            w,
            reserve(
                with_pod_set(with(pod_set("main", 3), "/template/spec/containers/0/resources/requests", json!({"cpu": "1"}))),
                vec![json!({"name": "main", "flavors": {"cpu": "flv"}, "resourceUsage": {"cpu": "1"}, "count": 3})],
            ),
            deny(&[("status.admission.podSetAssignments[0].resourceUsage[cpu]", INVALID)]),
        ),
        create(
            "should not request num-pods resource",
            w,
            with_pod_set(with(
                bad("initContainers", single_container(json!({"requests": {"pods": "1"}}))),
                "/template/spec/containers",
                single_container(json!({"requests": {"pods": "1"}})),
            )),
            deny(&[
                ("spec.podSets[0].template.spec.initContainers[0].resources.requests[pods]", INVALID),
                ("spec.podSets[0].template.spec.containers[0].resources.requests[pods]", INVALID),
            ]),
        ),
        create(
            "should reject reserved pods resource key in limits",
            w,
            with_pod_set(with(
                bad("initContainers", single_container(json!({"limits": {"pods": "1"}}))),
                "/template/spec/containers",
                single_container(json!({"limits": {"pods": "1"}})),
            )),
            deny(&[
                ("spec.podSets[0].template.spec.initContainers[0].resources.limits[pods]", INVALID),
                ("spec.podSets[0].template.spec.containers[0].resources.limits[pods]", INVALID),
            ]),
        ),
        create(
            "should reject negative container resource request",
            w,
            with_pod_set(bad("containers", single_container(json!({"requests": {"cpu": "-1"}})))),
            deny(&[("spec.podSets[0].template.spec.containers[0].resources.requests[cpu]", INVALID)]),
        ),
        create(
            "should reject negative initContainer resource request",
            w,
            with_pod_set(bad("initContainers", single_container(json!({"requests": {"cpu": "-1"}})))),
            deny(&[("spec.podSets[0].template.spec.initContainers[0].resources.requests[cpu]", INVALID)]),
        ),
        create(
            "should accept invalid podSet template metadata when WorkloadValidationForPodSetMetadata is disabled",
            w,
            Value::Null,
            Want::OtherGates("WorkloadValidationForPodSetMetadata=false"),
        ),
        create(
            "should reject invalid podSet template label value",
            w,
            with_pod_set(metadata(json!({"labels": {"valid": "invalid value with spaces"}}))),
            deny(&[("spec.podSets[0].template.metadata.labels", INVALID)]),
        ),
        create(
            "should reject invalid podSet template annotation key",
            w,
            with_pod_set(metadata(json!({"annotations": {"invalid/annotation/key/too/long/invalid": "val"}}))),
            deny(&[("spec.podSets[0].template.metadata.annotations", INVALID)]),
        ),
        create(
            "should reject negative container resource limit",
            w,
            with_pod_set(bad("containers", json!([{"name": "", "resources": {"limits": {"cpu": "-1"}}}]))),
            deny(&[("spec.podSets[0].template.spec.containers[0].resources.limits[cpu]", INVALID)]),
        ),
        create(
            "should reject negative resource among multiple valid requests and limits",
            w,
            with_pod_set(bad(
                "containers",
                json!([{"name": "", "resources": {
                    "requests": {"cpu": "1", "memory": "-1Gi"},
                    "limits": {"cpu": "2", "memory": "-2Gi"}}}]),
            )),
            deny(&[
                ("spec.podSets[0].template.spec.containers[0].resources.requests[memory]", INVALID),
                ("spec.podSets[0].template.spec.containers[0].resources.limits[memory]", INVALID),
            ]),
        ),
        create(
            "should reject negative pod-level resource request",
            w,
            with_pod_set(with(pod_set("bad", 1), "/template/spec/resources", json!({"requests": {"cpu": "-1"}}))),
            deny(&[("spec.podSets[0].template.spec.resources.requests[cpu]", INVALID)]),
        ),
        create(
            "should reject negative pod-level resource limit",
            w,
            with_pod_set(with(pod_set("bad", 1), "/template/spec/resources", json!({"limits": {"memory": "-1Gi"}}))),
            deny(&[("spec.podSets[0].template.spec.resources.limits[memory]", INVALID)]),
        ),
        create(
            "should accept negative container resource request when WorkloadValidateResourcesAreNonNegative is disabled",
            w,
            Value::Null,
            Want::OtherGates("WorkloadValidateResourcesAreNonNegative=false"),
        ),
        create(
            "should accept zero container resource request",
            w,
            with_pod_set(bad("containers", single_container(json!({"requests": {"cpu": "0"}})))),
            Want::Allow,
        ),
        create(
            "should reject non-positive podSetSliceSize when TASValidateWorkloadSliceSize is enabled",
            w,
            with_pod_set(topology(json!({"podSetSliceRequiredTopology": "kubernetes.io/hostname", "podSetSliceSize": 0}))),
            deny(&[("spec.podSets[0].topologyRequest.podSetSliceSize", INVALID)]),
        ),
        create(
            "should reject podSetSliceSize without podSetSliceRequiredTopology when TASValidateWorkloadSliceSize is enabled",
            w,
            with_pod_set(topology(json!({"podSetSliceSize": 1}))),
            deny(&[("spec.podSets[0].topologyRequest.podSetSliceSize", FORBIDDEN)]),
        ),
        create(
            "should reject non-positive podsetSliceRequiredTopologyConstraints size when TASValidateWorkloadSliceSize is enabled",
            w,
            with_pod_set(topology(json!({"podsetSliceRequiredTopologyConstraints": [
                {"topology": "kubernetes.io/hostname", "size": 0}]}))),
            deny(&[("spec.podSets[0].topologyRequest.podsetSliceRequiredTopologyConstraints[0].size", INVALID)]),
        ),
        create(
            "should accept non-positive podSetSliceSize when TASValidateWorkloadSliceSize is disabled",
            w,
            Value::Null,
            Want::OtherGates("TASValidateWorkloadSliceSize=false"),
        ),
        create(
            "empty podSetUpdates",
            w,
            with(main_workload(), "/status/admissionChecks", json!([check("", "Pending", Value::Null)])),
            Want::Allow,
        ),
        create(
            "should accept podSetUpdates for only a subset of podSets",
            w,
            acs(json!([{"name": "first"}])),
            Want::Allow,
        ),
        create(
            "mismatched names in podSetUpdates with names in podSets",
            w,
            acs(json!([{"name": "first"}, {"name": "third"}])),
            deny(&[("status.admissionChecks[0].podSetUpdates[1].name", UNSUPPORTED)]),
        ),
        create(
            "matched names in podSetUpdates with names in podSets",
            w,
            acs(json!([
                {"name": "first", "labels": {"l1": "first"}, "annotations": {"foo": "bar"},
                 "tolerations": [{"key": "t1", "operator": "Equal", "value": "t1v", "effect": "NoExecute", "tolerationSeconds": 5}],
                 "nodeSelector": {"type": "first"}},
                {"name": "second", "labels": {"l2": "second"}, "annotations": {"foo": "baz"},
                 "tolerations": [{"key": "t2", "operator": "Equal", "value": "t2v", "effect": "NoExecute", "tolerationSeconds": 10}],
                 "nodeSelector": {"type": "second"}},
            ])),
            Want::Allow,
        ),
        create(
            "invalid label name of podSetUpdate",
            w,
            main_acs(json!({"name": "main", "labels": {"@abc": "foo"}})),
            deny(&[("status.admissionChecks[0].podSetUpdates[0].labels", INVALID)]),
        ),
        create(
            "invalid node selector name of podSetUpdate",
            w,
            main_acs(json!({"name": "main", "nodeSelector": {"@abc": "foo"}})),
            deny(&[("status.admissionChecks[0].podSetUpdates[0].nodeSelector", INVALID)]),
        ),
        create(
            "invalid label value of podSetUpdate",
            w,
            main_acs(json!({"name": "main", "labels": {"foo": "@abc"}})),
            deny(&[("status.admissionChecks[0].podSetUpdates[0].labels", INVALID)]),
        ),
        create(
            "invalid reclaimablePods",
            w,
            reclaimable(
                workload(vec![pod_set("ps1", 3)]),
                json!([{"name": "ps1", "count": 4}, {"name": "ps2", "count": 1}]),
            ),
            deny(&[
                ("status.reclaimablePods[ps1].count", INVALID),
                ("status.reclaimablePods[ps2].name", UNSUPPORTED),
            ]),
        ),
        create(
            "too many variable count podSets",
            w,
            workload(vec![
                with(pod_set("ps1", 3), "/minCount", json!(2)),
                with(pod_set("ps2", 3), "/minCount", json!(1)),
            ]),
            deny(&[("spec.podSets", INVALID)]),
        ),
        // Upstream runs the priority-boost cases with PriorityBoost on (off by
        // default); those it allows are allowed with the gate off as well.
        create("valid priority-boost", w, boost("10"), Want::Allow),
        create("valid priority-boost zero", w, boost("0"), Want::Allow),
        create("valid priority-boost negative", w, boost("-5"), Want::Allow),
        create("invalid priority-boost", w, Value::Null, Want::OtherGates("PriorityBoost=true")),
        create("empty string priority-boost", w, Value::Null, Want::OtherGates("PriorityBoost=true")),
        create("missing priority-boost annotation", w, main_workload(), Want::Allow),
        create(
            "invalid priority-boost when feature off",
            w,
            annotated_pointer(main_workload(), "kueue.x-k8s.io/priority-boost", "invalid"),
            Want::Allow,
        ),
        create("valid AdmissionGatedBy annotation with single gate", w, gated("example.com/controller"), Want::Allow),
        create(
            "valid AdmissionGatedBy annotation with multiple gates",
            w,
            gated("example.com/a,not.example.com/b"),
            Want::Allow,
        ),
        create("AdmissionGatedBy annotation - leading space", w, gated(" example.com/gate"), Want::Allow),
        create(
            "AdmissionGatedBy annotation - space before comma",
            w,
            gated("example.com/gate ,example.com/gate2"),
            Want::Allow,
        ),
        create(
            "AdmissionGatedBy annotation - space after comma",
            w,
            gated("example.com/gate, example.com/gate2"),
            Want::Allow,
        ),
        create("AdmissionGatedBy annotation - trailing space", w, gated("example.com/gate "), Want::Allow),
        create(
            "invalid AdmissionGatedBy annotation - not in subdomain/path format",
            w,
            gated("this is an invalid value"),
            deny(&[("metadata.annotations[kueue.x-k8s.io/admission-gated-by]", INVALID)]),
        ),
        create(
            "invalid AdmissionGatedBy annotation - duplicate gates",
            w,
            gated("duplicates.are/invalid,duplicates.are/invalid"),
            deny(&[("metadata.annotations[kueue.x-k8s.io/admission-gated-by]", INVALID)]),
        ),
        create(
            "invalid AdmissionGatedBy annotation - space in path component",
            w,
            gated("example.com/gate name"),
            deny(&[("metadata.annotations[kueue.x-k8s.io/admission-gated-by]", INVALID)]),
        ),
        create(
            "invalid AdmissionGatedBy annotation - space in domain component",
            w,
            gated("example .com/gate"),
            deny(&[("metadata.annotations[kueue.x-k8s.io/admission-gated-by]", INVALID)]),
        ),
        create(
            "invalid AdmissionGatedBy annotation - multiple gates with one containing space",
            w,
            gated("valid.com/gate,invalid gate.com/controller"),
            deny(&[("metadata.annotations[kueue.x-k8s.io/admission-gated-by]", INVALID)]),
        ),
        create(
            "partial admission and elastic job cannot be used together",
            w,
            elastic(workload(vec![with(pod_set("main", 10), "/minCount", json!(5))])),
            deny(&[("spec.podSets", INVALID)]),
        ),
        create(
            "non-negative subGroupCount is accepted without warning",
            w,
            with_pod_set(with(pod_set("main", 1), "/topologyRequest", json!({"subGroupCount": 0}))),
            Want::Allow,
        ),
        create(
            "negative subGroupCount is accepted with a warning",
            w,
            with_pod_set(with(pod_set("main", 1), "/topologyRequest", json!({"subGroupCount": -1}))),
            Want::Warning("spec.podSets[0].topologyRequest.subGroupCount: negative value -1 is deprecated and will be rejected in a future release"),
        ),
    ]
}

fn two_sets() -> Value {
    workload(vec![pod_set("ps1", 3), pod_set("ps2", 3)])
}

fn two_reserved() -> Value {
    reserve(two_sets(), vec![psa("ps1"), psa("ps2")])
}

fn elastic_reserved(count: i64, admitted: Option<i64>, pods: Option<Value>) -> Value {
    let mut a = psa("ps1");
    if let Some(n) = admitted {
        a["count"] = json!(n);
    }
    let wl = reserve(elastic(workload(vec![pod_set("ps1", count)])), vec![a]);
    match pods {
        Some(p) => reclaimable(wl, p),
        None => wl,
    }
}

fn topology_assignment(count: i64) -> Value {
    json!({"levels": ["level"], "slices": [{"domainCount": 1,
        "valuesPerLevel": [{"universal": "abc"}], "podCounts": {"universal": count}}]})
}

fn ready_checks(first_labels: Value, name: &str, message: &str) -> Value {
    let wl = workload(vec![pod_set("first", 1), pod_set("second", 1)]);
    let mut c = check(
        name,
        "Ready",
        json!([{"name": "first", "labels": first_labels}, {"name": "second"}]),
    );
    c["message"] = json!(message);
    with(wl, "/status/admissionChecks", json!([c]))
}

/// `pkg/webhooks/workload_webhook_test.go`, `TestValidateWorkloadUpdate`.
fn workload_update() -> Vec<Case> {
    let w = "Workload";
    let rp = |pods: Value| reclaimable(two_reserved(), pods);
    let four_of_eight = || Some(json!([{"name": "ps1", "count": 4}]));
    let gate_err = deny(&[(
        "metadata.annotations[kueue.x-k8s.io/admission-gated-by]",
        FORBIDDEN,
    )]);
    vec![
        update(
            "an update may not put a workload in quota reserved with no admission",
            w,
            workload(vec![pod_set("driver", 1)]),
            reserved_without_admission(),
            deny(&[("status.admission", REQUIRED)]),
        ),
        update(
            "a workload already in that state stays updatable so it can be removed",
            w,
            reserved_without_admission(),
            reserved_without_admission(),
            Want::Allow,
        ),
        update(
            "reclaimable pod count can change up",
            w,
            rp(json!([{"name": "ps1", "count": 1}])),
            rp(json!([{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}])),
            Want::Allow,
        ),
        update(
            "should accept invalid podSet template metadata on update when WorkloadValidationForPodSetMetadata is disabled",
            w,
            Value::Null,
            Value::Null,
            Want::OtherGates("WorkloadValidationForPodSetMetadata=false"),
        ),
        update(
            "should reject invalid podSet template label value on update",
            w,
            workload(vec![pod_set("driver", 1)]),
            workload(vec![json!({"name": "driver", "count": 1, "template": {
                "metadata": {"labels": {"valid": "invalid value with spaces"}}, "spec": {"containers": []}}})]),
            deny(&[("spec.podSets[0].template.metadata.labels", INVALID)]),
        ),
        update(
            "reclaimable pod count cannot change down",
            w,
            rp(json!([{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}])),
            rp(json!([{"name": "ps1", "count": 1}])),
            deny(&[
                ("status.reclaimablePods[ps1].count", INVALID),
                ("status.reclaimablePods[ps2]", REQUIRED),
            ]),
        ),
        update(
            "elastic workload: unchanged reclaimable pod count is tolerated while its podSet scales down below it",
            w,
            elastic_reserved(8, None, four_of_eight()),
            elastic_reserved(3, None, four_of_eight()),
            Want::Allow,
        ),
        update(
            "elastic workload: changed reclaimable pod count above the podSet count is rejected",
            w,
            elastic_reserved(8, None, four_of_eight()),
            elastic_reserved(3, None, Some(json!([{"name": "ps1", "count": 5}]))),
            deny(&[("status.reclaimablePods[ps1].count", INVALID)]),
        ),
        update(
            "elastic workload: reclaimable pod count can decrease after its podSet scaled down below the admitted count",
            w,
            elastic_reserved(3, Some(8), four_of_eight()),
            elastic_reserved(3, Some(8), Some(json!([{"name": "ps1", "count": 3}]))),
            Want::Allow,
        ),
        update(
            "elastic workload: reclaimable pod count can decrease when scaled down below the admitted count even if the podSet still exceeds it",
            w,
            elastic_reserved(10, Some(20), Some(json!([{"name": "ps1", "count": 9}]))),
            elastic_reserved(10, Some(20), Some(json!([{"name": "ps1", "count": 0}]))),
            Want::Allow,
        ),
        update(
            "elastic workload: reclaimable pod count cannot decrease without a podSet scale-down",
            w,
            elastic_reserved(8, None, four_of_eight()),
            elastic_reserved(8, None, Some(json!([{"name": "ps1", "count": 2}]))),
            deny(&[("status.reclaimablePods[ps1].count", INVALID)]),
        ),
        update(
            "elastic workload: reclaimable pod entry can be removed after its podSet scaled down below the admitted count",
            w,
            elastic_reserved(8, Some(8), four_of_eight()),
            elastic_reserved(1, Some(8), None),
            Want::Allow,
        ),
        update(
            "elastic workload: reclaimable pod entry cannot be removed without a podSet scale-down",
            w,
            elastic_reserved(8, None, four_of_eight()),
            elastic_reserved(8, None, None),
            deny(&[("status.reclaimablePods[ps1]", REQUIRED)]),
        ),
        update(
            "non-elastic workload: stale reclaimable pod count is still rejected when its podSet scales down",
            w,
            reclaimable(
                reserve(workload(vec![pod_set("ps1", 8)]), vec![psa("ps1")]),
                json!([{"name": "ps1", "count": 4}]),
            ),
            reclaimable(
                reserve(workload(vec![pod_set("ps1", 3)]), vec![psa("ps1")]),
                json!([{"name": "ps1", "count": 4}]),
            ),
            deny(&[("status.reclaimablePods[ps1].count", INVALID)]),
        ),
        update(
            "reclaimable pod count can go to 0 if the job is suspended",
            w,
            rp(json!([{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}])),
            reclaimable(
                with(
                    two_sets(),
                    "/status/admissionChecks",
                    json!([check("", "Ready", json!([{"name": "ps1"}, {"name": "ps2"}]))]),
                ),
                json!([{"name": "ps1", "count": 0}, {"name": "ps2", "count": 1}]),
            ),
            Want::Allow,
        ),
        update(
            "podSetUpdates should be immutable when state is ready",
            w,
            ready_checks(json!({"foo": "bar"}), "", ""),
            ready_checks(json!({"foo": "baz"}), "", ""),
            deny(&[("status.admissionChecks[0].podSetUpdates", INVALID)]),
        ),
        update(
            "should change other fields of admissionchecks when podSetUpdates is immutable",
            w,
            ready_checks(json!({"foo": "bar"}), "ac1", "old"),
            with(
                ready_checks(json!({"foo": "bar"}), "ac1", "new"),
                "/status/admissionChecks/0/lastTransitionTime",
                json!("2026-01-02T00:00:00Z"),
            ),
            Want::Allow,
        ),
        update(
            "TopologyAssignment can be mutated",
            w,
            reserve(
                workload(vec![pod_set("ps1", 3)]),
                vec![json!({"name": "ps1", "topologyAssignment": topology_assignment(2)})],
            ),
            reserve(
                workload(vec![pod_set("ps1", 3)]),
                vec![json!({"name": "ps1", "topologyAssignment": topology_assignment(3)})],
            ),
            Want::Allow,
        ),
        update(
            "PodSets cannot be removed from admission",
            w,
            two_reserved(),
            reserve(two_sets(), vec![psa("ps1")]),
            deny(&[("status.admission", INVALID)]),
        ),
        update(
            "PodSets cannot be added to admission",
            w,
            reserve(two_sets(), vec![psa("ps1")]),
            two_reserved(),
            deny(&[("status.admission", INVALID)]),
        ),
        update(
            "workload.podSets[].count is immutable",
            w,
            Value::Null,
            Value::Null,
            Want::OtherGates("ElasticJobsViaWorkloadSlices=false"),
        ),
        update(
            "workload.podSets[].count is mutable with ElasticJobs feature gate",
            w,
            reserve(
                workload(vec![pod_set("ps1", 3), pod_set("ps2", 4)]),
                vec![psa("ps1"), psa("ps2")],
            ),
            two_reserved(),
            Want::Allow,
        ),
        update(
            "ClusterName doesn't have to be one of the nominatedClusterNames with ElasticJobs feature gate",
            w,
            workload(vec![pod_set("ps1", 3), pod_set("ps2", 4)]),
            annotated_pointer(
                with(
                    reserve(
                        workload(vec![pod_set("ps1", 3), pod_set("ps2", 4)]),
                        vec![psa("ps1"), psa("ps2")],
                    ),
                    "/status/clusterName",
                    json!("worker1"),
                ),
                "kueue.x-k8s.io/workload-slice-replacement-for",
                "test-ns/test-workload",
            ),
            Want::Allow,
        ),
        update(
            "reject adding AdmissionGatedBy annotation after workload creation",
            w,
            main_workload(),
            gated("example.com/controller"),
            gate_err,
        ),
        update(
            "allow removing AdmissionGatedBy annotation with single gate",
            w,
            gated("example.com/controller1"),
            main_workload(),
            Want::Allow,
        ),
        update(
            "allow removing AdmissionGatedBy annotation with multiple gates",
            w,
            gated("example.com/controller1,example.com/controller2"),
            main_workload(),
            Want::Allow,
        ),
        update(
            "allow removing one gate from AdmissionGatedBy annotation",
            w,
            gated("example.com/controller1,example.com/controller2"),
            gated("example.com/controller2"),
            Want::Allow,
        ),
        update(
            "reject injecting new gate in AdmissionGatedBy annotation",
            w,
            gated("example.com/controller1,example.com/controller2"),
            gated("example.com/controller3"),
            deny(&[("metadata.annotations[kueue.x-k8s.io/admission-gated-by]", FORBIDDEN)]),
        ),
        update(
            "allow reordering gates in AdmissionGatedBy annotation",
            w,
            gated("example.com/controller1,example.com/controller2"),
            gated("example.com/controller2,example.com/controller1"),
            Want::Allow,
        ),
        update(
            "negative subGroupCount is accepted with a warning",
            w,
            main_workload(),
            with_pod_set(with(pod_set("main", 1), "/topologyRequest", json!({"subGroupCount": -1}))),
            Want::Warning("spec.podSets[0].topologyRequest.subGroupCount: negative value -1 is deprecated and will be rejected in a future release"),
        ),
        update(
            "a workload whose quota reservation lost its admission can still drop its finalizer",
            w,
            with(
                reserved_without_admission(),
                "/metadata/finalizers",
                json!(["kueue.x-k8s.io/resource-in-use"]),
            ),
            reserved_without_admission(),
            Want::Allow,
        ),
    ]
}

// ---------------------------------------------------------------------------
// ClusterQueues, Cohorts, ResourceFlavors.

fn cq_groups(groups: Vec<Value>) -> Value {
    with(cq(), "/spec/resourceGroups", json!(groups))
}

fn cq_with(pointer: &str, v: Value) -> Value {
    with(cq(), pointer, v)
}

fn strategy(cq: Value, rules: Value) -> Value {
    with(
        cq,
        "/spec/admissionChecksStrategy",
        json!({"admissionChecks": rules}),
    )
}

fn rule(name: &str, flavors: &[&str]) -> Value {
    json!({"name": name, "onFlavors": flavors})
}

/// An empty `mode` is left out, as Go's `omitempty` sends it.
fn concurrent(cq: Value, mode: &str) -> Value {
    let migration = if mode.is_empty() {
        json!({})
    } else {
        json!({"mode": mode})
    };
    with(
        cq,
        "/spec/concurrentAdmissionPolicy",
        json!({ "migration": migration }),
    )
}

fn fungibility(borrow: &str, preempt: &str, preference: &str) -> Value {
    cq_with(
        "/spec/flavorFungibility",
        json!({"whenCanBorrow": borrow, "whenCanPreempt": preempt, "preference": preference}),
    )
}

fn cpu_flavors(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| fq(&format!("f{i:03}"), &[("cpu", "1", "", "")]))
        .collect()
}

/// One resource group covering `resources` resources, each flavor quoting
/// all of them.
fn combinations(flavors: usize, resources: usize) -> Value {
    let names: Vec<String> = (0..resources).map(|j| format!("res{j:03}")).collect();
    let fs: Vec<Value> = (0..flavors)
        .map(|i| {
            let rs: Vec<Value> = names
                .iter()
                .map(|n| json!({"name": n, "nominalQuota": "1"}))
                .collect();
            json!({"name": if flavors == 1 { "default".to_string() } else { format!("f{i:03}") }, "resources": rs})
        })
        .collect();
    cq_groups(vec![json!({"coveredResources": names, "flavors": fs})])
}

/// `pkg/webhooks/clusterqueue_webhook_test.go`: `TestValidateClusterQueue`
/// (run upstream with ConcurrentAdmission on, off by default: its
/// concurrentAdmissionPolicy cases are not posted), `TestValidateTotalFlavors`,
/// `TestValidateTotalCoveredResources`, `TestValidateFlavorResourceCombinations`.
fn cluster_queue_create() -> Vec<Case> {
    let c = "ClusterQueue";
    let ca = "ConcurrentAdmission=true (validateConcurrentAdmissionPolicy)";
    let one_cpu = || vec![rg(vec![fq("flavor1", &[("cpu", "1", "", "")])])];
    vec![
        create(
            "built-in resources with qualified names",
            c,
            cq_groups(vec![rg(vec![fq("default", &[("cpu", "", "", "")])])]),
            Want::Allow,
        ),
        create(
            "invalid resource name",
            c,
            cq_groups(vec![rg(vec![fq("default", &[("@cpu", "", "", "")])])]),
            deny(&[("spec.resourceGroups[0].coveredResources[0]", INVALID)]),
        ),
        create(
            "admissionChecks defined",
            c,
            strategy(cq(), json!([{"name": "ac1"}])),
            Want::Allow,
        ),
        create(
            "admissionCheckStrategy defined with a valid flavor",
            c,
            strategy(cq_groups(vec![rg(vec![fq("flavor1", &[])])]), json!([rule("ac1", &["flavor1"])])),
            Want::Allow,
        ),
        create(
            "admissionCheckStrategy refers to a flavor that is not in quota",
            c,
            strategy(cq(), json!([rule("ac1", &["flavor1"])])),
            deny(&[("spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]", UNSUPPORTED)]),
        ),
        create("in cohort", c, cq_with("/spec/cohortName", json!("prod")), Want::Allow),
        create(
            "extended resources with qualified names",
            c,
            cq_groups(vec![rg(vec![fq("default", &[("example.com/gpu", "", "", "")])])]),
            Want::Allow,
        ),
        create(
            "flavor with qualified names",
            c,
            cq_groups(vec![rg(vec![fq("x86", &[])])]),
            Want::Allow,
        ),
        create(
            "flavor quota with negative value",
            c,
            cq_groups(vec![rg(vec![fq("x86", &[("cpu", "-1", "", "")])])]),
            deny(&[("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", INVALID)]),
        ),
        create(
            "flavor quota with zero value",
            c,
            cq_groups(vec![rg(vec![fq("x86", &[("cpu", "0", "", "")])])]),
            Want::Allow,
        ),
        create(
            "flavor quota with borrowingLimit 0",
            c,
            with(cq_groups(vec![rg(vec![fq("x86", &[("cpu", "1", "0", "")])])]), "/spec/cohortName", json!("cohort")),
            Want::Allow,
        ),
        create(
            "flavor quota with negative borrowingLimit",
            c,
            with(cq_groups(vec![rg(vec![fq("x86", &[("cpu", "1", "-1", "")])])]), "/spec/cohortName", json!("cohort")),
            deny(&[("spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit", INVALID)]),
        ),
        create(
            "flavor quota with lendingLimit 0",
            c,
            with(cq_groups(vec![rg(vec![fq("x86", &[("cpu", "1", "", "0")])])]), "/spec/cohortName", json!("cohort")),
            Want::Allow,
        ),
        create(
            "flavor quota with negative lendingLimit",
            c,
            with(cq_groups(vec![rg(vec![fq("x86", &[("cpu", "1", "", "-1")])])]), "/spec/cohortName", json!("cohort")),
            deny(&[("spec.resourceGroups[0].flavors[0].resources[0].lendingLimit", INVALID)]),
        ),
        create(
            "flavor quota with lendingLimit and empty cohort",
            c,
            cq_groups(vec![rg(vec![fq("x86", &[("cpu", "1", "", "1")])])]),
            deny(&[("spec.resourceGroups[0].flavors[0].resources[0].lendingLimit", INVALID)]),
        ),
        create(
            "flavor quota with lendingLimit greater than nominalQuota",
            c,
            with(cq_groups(vec![rg(vec![fq("x86", &[("cpu", "1", "", "2")])])]), "/spec/cohortName", json!("cohort")),
            deny(&[("spec.resourceGroups[0].flavors[0].resources[0].lendingLimit", INVALID)]),
        ),
        create(
            "empty queueing strategy is supported",
            c,
            without_strategy(),
            Want::Allow,
        ),
        create(
            "namespaceSelector with invalid labels",
            c,
            cq_with("/spec/namespaceSelector", json!({"matchLabels": {"nospecialchars^=@": "bar"}})),
            deny(&[("spec.namespaceSelector.matchLabels", INVALID)]),
        ),
        create(
            "namespaceSelector with invalid expressions",
            c,
            cq_with("/spec/namespaceSelector", json!({"matchExpressions": [{"key": "key", "operator": "In"}]})),
            deny(&[("spec.namespaceSelector.matchExpressions[0].values", REQUIRED)]),
        ),
        create(
            "multiple resource groups",
            c,
            cq_groups(vec![
                rg(vec![
                    fq("alpha", &[("cpu", "0", "", ""), ("memory", "0", "", "")]),
                    fq("beta", &[("cpu", "0", "", ""), ("memory", "0", "", "")]),
                ]),
                rg(vec![
                    fq("gamma", &[("example.com/gpu", "0", "", "")]),
                    fq("omega", &[("example.com/gpu", "0", "", "")]),
                ]),
            ]),
            Want::Allow,
        ),
        create(
            "resources in a flavor in different order",
            c,
            cq_groups(vec![json!({"coveredResources": ["cpu", "memory"], "flavors": [
                fq("alpha", &[("cpu", "0", "", ""), ("memory", "0", "", "")]),
                fq("beta", &[("memory", "0", "", ""), ("cpu", "0", "", "")]),
            ]})]),
            deny(&[
                ("spec.resourceGroups[0].flavors[1].resources[0].name", INVALID),
                ("spec.resourceGroups[0].flavors[1].resources[1].name", INVALID),
            ]),
        ),
        create(
            "resource in more than one resource group",
            c,
            cq_groups(vec![
                rg(vec![fq("alpha", &[("cpu", "0", "", ""), ("memory", "0", "", "")])]),
                rg(vec![fq("beta", &[("memory", "0", "", "")])]),
            ]),
            deny(&[("spec.resourceGroups[1].coveredResources[0]", DUPLICATE)]),
        ),
        create(
            "flavor in more than one resource group",
            c,
            cq_groups(vec![
                rg(vec![fq("alpha", &[("cpu", "", "", "")]), fq("beta", &[("cpu", "", "", "")])]),
                rg(vec![fq("beta", &[("memory", "", "", "")])]),
            ]),
            deny(&[("spec.resourceGroups[1].flavors[0].name", DUPLICATE)]),
        ),
        create(
            "valid preemption with borrowWithinCohort",
            c,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"},
                   "spec": {"preemption": {"reclaimWithinCohort": "LowerPriority",
                            "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 10}}}}),
            Want::Allow,
        ),
        create(
            "existing cluster queue created with older Kueue version that has a nil borrowWithinCohort field",
            c,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"},
                   "spec": {"preemption": {"reclaimWithinCohort": "Never"}}}),
            Want::Allow,
        ),
        create(
            "flavorFungibility preference set but whenCanPreempt != TryNextFlavor",
            c,
            fungibility("TryNextFlavor", "MayStopSearch", "BorrowingOverPreemption"),
            deny(&[("spec.flavorFungibility.preference", INVALID)]),
        ),
        create(
            "flavorFungibility preference set but whenCanBorrow != TryNextFlavor",
            c,
            fungibility("MayStopSearch", "MayStopSearch", "BorrowingOverPreemption"),
            deny(&[("spec.flavorFungibility.preference", INVALID)]),
        ),
        create(
            "flavorFungibility preference BorrowingOverPreemption with both TryNextFlavor is valid",
            c,
            fungibility("TryNextFlavor", "TryNextFlavor", "BorrowingOverPreemption"),
            Want::Allow,
        ),
        create(
            "flavorFungibility preference PreemptionOverBorrowing with both TryNextFlavor is valid",
            c,
            fungibility("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing"),
            Want::Allow,
        ),
        create(
            "flavorFungibility preference PreemptionOverBorrowing but whenCanBorrow != TryNextFlavor",
            c,
            fungibility("MayStopSearch", "TryNextFlavor", "PreemptionOverBorrowing"),
            deny(&[("spec.flavorFungibility.preference", INVALID)]),
        ),
        create(
            "valid ConcurrentAdmissionPolicy",
            c,
            concurrent(cq_groups(one_cpu()), "TryPreferredFlavors"),
            Want::Allow,
        ),
        create("ConcurrentAdmissionPolicy with StrictFIFO queueing strategy is invalid", c, Value::Null, Want::OtherGates(ca)),
        create("ConcurrentAdmissionPolicy with more than one ResourceGroup", c, Value::Null, Want::OtherGates(ca)),
        create("ConcurrentAdmissionPolicy with more than 16 flavors", c, Value::Null, Want::OtherGates(ca)),
        create("ConcurrentAdmissionPolicy with empty ResourceGroups", c, Value::Null, Want::OtherGates(ca)),
        create(
            "ConcurrentAdmissionPolicy with valid LastAcceptableFlavorName",
            c,
            with(
                concurrent(cq_groups(one_cpu()), "TryPreferredFlavors"),
                "/spec/concurrentAdmissionPolicy/migration/constraints",
                json!({"lastAcceptableFlavorName": "flavor1"}),
            ),
            Want::Allow,
        ),
        create("ConcurrentAdmissionPolicy constraints with RetainFirstAdmission mode is forbidden", c, Value::Null, Want::OtherGates(ca)),
        create(
            "ConcurrentAdmissionPolicy constraints with empty migration mode is allowed",
            c,
            with(
                concurrent(cq_groups(one_cpu()), ""),
                "/spec/concurrentAdmissionPolicy/migration/constraints",
                json!({"lastAcceptableFlavorName": "flavor1"}),
            ),
            Want::Allow,
        ),
        create("ConcurrentAdmissionPolicy with invalid LastAcceptableFlavorName", c, Value::Null, Want::OtherGates(ca)),
        create("within limit (10 flavors)", c, cq_groups(vec![rg(cpu_flavors(10))]), Want::Allow),
        create("At limit (256 flavors)", c, cq_groups(vec![rg(cpu_flavors(256))]), Want::Allow),
        create(
            "over limit (257 flavors)",
            c,
            cq_groups(vec![rg(cpu_flavors(257))]),
            deny(&[("spec.resourceGroups", INVALID)]),
        ),
        create("within limit (10 covered resources)", c, combinations(1, 10), Want::Allow),
        create("At limit (256 covered resources)", c, combinations(1, 256), Want::Allow),
        create(
            "over limit (257 covered resources)",
            c,
            combinations(1, 257),
            deny(&[("spec.resourceGroups", INVALID)]),
        ),
        create("within limit (1 flavor × 10 resources = 10)", c, combinations(1, 10), Want::Allow),
        create("at limit (8 flavors × 64 resources = 512)", c, combinations(8, 64), Want::Allow),
        create(
            "over limit (9 flavors × 64 resources = 576)",
            c,
            combinations(9, 64),
            deny(&[("spec.resourceGroups[0]", INVALID)]),
        ),
    ]
}

/// `pkg/webhooks/clusterqueue_webhook_test.go`, `TestValidateClusterQueueUpdate`.
fn cluster_queue_update() -> Vec<Case> {
    let c = "ClusterQueue";
    let alpha = || cq_groups(vec![rg(vec![fq("alpha", &[("cpu", "1", "", "")])])]);
    let beta = || cq_groups(vec![rg(vec![fq("beta", &[("cpu", "1", "", "")])])]);
    let on = "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]";
    let strict = |v: Value, s: &str| with(v, "/spec/queueingStrategy", json!(s));
    vec![
        update(
            "queueingStrategy can be updated",
            c,
            cq_with("/spec/queueingStrategy", json!("StrictFIFO")),
            cq_with("/spec/queueingStrategy", json!("BestEffortFIFO")),
            Want::Allow,
        ),
        update("same queueingStrategy", c, cq(), cq(), Want::Allow),
        update(
            "legacy cluster queue with invalid onFlavors allows unrelated updates when the feature gate is disabled",
            c,
            strict(strategy(alpha(), json!([rule("ac1", &["ghost"])])), "StrictFIFO"),
            strict(strategy(alpha(), json!([rule("ac1", &["ghost"])])), "BestEffortFIFO"),
            Want::Allow,
        ),
        update(
            "legacy cluster queue with invalid onFlavors rejects unrelated updates when the feature gate is enabled",
            c,
            Value::Null,
            Value::Null,
            Want::OtherGates("RejectUpdatesToCQWithInvalidOnFlavors=true"),
        ),
        update(
            "valid admissionCheckStrategy can be added when the old cluster queue has no strategy",
            c,
            alpha(),
            strategy(alpha(), json!([rule("ac1", &["alpha"])])),
            Want::Allow,
        ),
        update(
            "invalid admissionCheckStrategy is rejected when the old cluster queue has no strategy",
            c,
            alpha(),
            strategy(alpha(), json!([rule("ac1", &["ghost"])])),
            deny(&[(on, UNSUPPORTED)]),
        ),
        update(
            "resourceGroup flavor change revalidates admissionCheck onFlavors for legacy cluster queue",
            c,
            strategy(alpha(), json!([rule("ac1", &["ghost"])])),
            strategy(beta(), json!([rule("ac1", &["ghost"])])),
            deny(&[(on, UNSUPPORTED)]),
        ),
        update(
            "changing invalid onFlavors for a legacy cluster queue revalidates the new ref",
            c,
            strategy(alpha(), json!([rule("ac1", &["ghost"])])),
            strategy(alpha(), json!([rule("ac1", &["phantom"])])),
            deny(&[(on, UNSUPPORTED)]),
        ),
        update(
            "changing admissionCheck name revalidates onFlavors for the new rule",
            c,
            strategy(alpha(), json!([rule("ac1", &["ghost"])])),
            strategy(alpha(), json!([rule("ac2", &["ghost"])])),
            deny(&[(on, UNSUPPORTED)]),
        ),
        // Upstream runs these two with ConcurrentAdmission on; the
        // immutability rule does not depend on it.
        update(
            "ConcurrentAdmissionPolicy cannot be added",
            c,
            alpha(),
            concurrent(alpha(), "TryPreferredFlavors"),
            deny(&[("spec.concurrentAdmissionPolicy", INVALID)]),
        ),
        update(
            "ConcurrentAdmissionPolicy cannot be removed",
            c,
            concurrent(alpha(), "TryPreferredFlavors"),
            alpha(),
            deny(&[("spec.concurrentAdmissionPolicy", INVALID)]),
        ),
    ]
}

/// `pkg/webhooks/cohort_webhook_test.go`, `TestValidateCohort`.
fn cohort_table() -> Vec<Case> {
    vec![create(
        "flavor quota with lendingLimit and empty parent",
        "Cohort",
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "cohort"},
               "spec": {"resourceGroups": [rg(vec![fq("x86", &[("cpu", "1", "", "1")])])]}}),
        deny(&[(
            "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
            INVALID,
        )]),
    )]
}

fn rf(spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
           "metadata": {"name": "resource-flavor"}, "spec": spec})
}

/// `pkg/webhooks/resourceflavor_webhook_test.go`, `TestValidateResourceFlavor`.
fn resource_flavor_table() -> Vec<Case> {
    let f = "ResourceFlavor";
    vec![
        create("empty", f, rf(json!({})), Want::Allow),
        create(
            "valid",
            f,
            rf(json!({"nodeLabels": {"foo": "bar"},
                      "nodeTaints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}]})),
            Want::Allow,
        ),
        create(
            "invalid label name",
            f,
            rf(json!({"nodeLabels": {"@abc": "foo"}})),
            deny(&[("spec.nodeLabels", INVALID)]),
        ),
        create(
            "invalid label value",
            f,
            rf(json!({"nodeLabels": {"foo": "@abc"}})),
            deny(&[("spec.nodeLabels", INVALID)]),
        ),
    ]
}

#[tokio::test]
async fn kueue_webhook_tables_answer_as_v0_19_2() {
    let server = Server::start(&[]);
    let mut failures = Vec::new();
    for (table, cases) in [
        (
            "workload_webhook_test.go TestValidateWorkload",
            workload_create(),
        ),
        (
            "workload_webhook_test.go TestValidateWorkloadUpdate",
            workload_update(),
        ),
        (
            "clusterqueue_webhook_test.go TestValidateClusterQueue and totals",
            cluster_queue_create(),
        ),
        (
            "clusterqueue_webhook_test.go TestValidateClusterQueueUpdate",
            cluster_queue_update(),
        ),
        ("cohort_webhook_test.go TestValidateCohort", cohort_table()),
        (
            "resourceflavor_webhook_test.go TestValidateResourceFlavor",
            resource_flavor_table(),
        ),
    ] {
        failures.extend(run(&server, table, cases).await);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn field_errors_are_read_from_an_aggregated_message() {
    assert_eq!(
        field_errors(r#"[a.b[c]: Invalid value: "x: y": bad, d: Required value: must be set]"#),
        [
            ("a.b[c]".to_string(), INVALID.to_string()),
            ("d".to_string(), REQUIRED.to_string())
        ]
    );
    assert_eq!(
        field_errors("metadata.annotations[k/v]: Forbidden: no"),
        [(
            "metadata.annotations[k/v]".to_string(),
            FORBIDDEN.to_string()
        )]
    );
}

/// `QueueingStrategy("")`: Go leaves an empty string out (`omitempty`).
fn without_strategy() -> Value {
    let mut v = cq();
    if let Some(spec) = v["spec"].as_object_mut() {
        spec.remove("queueingStrategy");
    }
    v
}
