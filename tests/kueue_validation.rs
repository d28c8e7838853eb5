//! Validation of Kueue's own kinds (ClusterQueue, Cohort, ResourceFlavor,
//! Workload and its status) over a real TLS connection to the real binary:
//! denials carry upstream's field paths and wording.

mod support;

use hyper::StatusCode;
use serde_json::{json, Value};
use support::*;

const CQ: (&str, &str, &str) = ("kueue.x-k8s.io", "v1beta2", "ClusterQueue");
const COHORT: (&str, &str, &str) = ("kueue.x-k8s.io", "v1beta2", "Cohort");
const RF: (&str, &str, &str) = ("kueue.x-k8s.io", "v1beta2", "ResourceFlavor");
const WL: (&str, &str, &str) = ("kueue.x-k8s.io", "v1beta2", "Workload");
const LQ: (&str, &str, &str) = ("kueue.x-k8s.io", "v1beta2", "LocalQueue");

fn object(kind: &str, spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind,
           "metadata": {"name": "sample"}, "spec": spec})
}

fn quotas(covered: &[&str], flavors: &[(&str, &[&str])]) -> Value {
    let flavors: Vec<Value> = flavors
        .iter()
        .map(|(name, resources)| {
            let r: Vec<Value> = resources
                .iter()
                .map(|r| json!({"name": r, "nominalQuota": "1"}))
                .collect();
            json!({"name": name, "resources": r})
        })
        .collect();
    json!({"coveredResources": covered, "flavors": flavors})
}

async fn validate(server: &Server, body: Vec<u8>) -> Value {
    let (status, resp) = server.client().post("/validate", body).await;
    assert_eq!(status, StatusCode::OK, "{resp}");
    resp["response"].clone()
}

fn denied(resp: &Value) -> &str {
    assert_eq!(resp["allowed"], false, "{resp}");
    assert_eq!(resp["status"]["code"], 403, "{resp}");
    resp["status"]["message"].as_str().unwrap()
}

/// A review of a Workload status write (`workloads/status`).
fn status_review(uid: &str, new: Value, old: Value) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&review(uid, "UPDATE", WL, new, Some(old))).unwrap();
    v["request"]["resource"] =
        json!({"group": "kueue.x-k8s.io", "version": "v1beta2", "resource": "workloads"});
    v["request"]["subResource"] = json!("status");
    serde_json::to_vec(&v).unwrap()
}

fn workload(pod_sets: Value, status: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": "wl", "namespace": "team-a"},
           "spec": {"queueName": "q", "podSets": pod_sets}, "status": status})
}

fn pod_set(name: &str, count: i64, cpu: &str) -> Value {
    json!({"name": name, "count": count, "template": {"spec": {"containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}})
}

fn quota_reserved() -> Value {
    json!({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
           "message": "Quota reserved in ClusterQueue cq", "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

#[tokio::test]
async fn cluster_queue_sharing_a_flavor_and_resource_across_groups_is_denied() {
    let server = Server::start(&[]);
    let cq = object(
        "ClusterQueue",
        json!({"resourceGroups": [
            quotas(&["cpu", "memory"], &[("default", &["memory", "cpu"])]),
            quotas(&["cpu"], &[("default", &["cpu"])]),
        ]}),
    );
    let resp = validate(&server, review("cq-1", "CREATE", CQ, cq, None)).await;
    assert_eq!(resp["uid"], "cq-1");
    assert_eq!(
        denied(&resp),
        concat!(
            r#"[spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": must match the name in coveredResources, "#,
            r#"spec.resourceGroups[0].flavors[0].resources[1].name: Invalid value: "cpu": must match the name in coveredResources, "#,
            r#"spec.resourceGroups[1].coveredResources[0]: Duplicate value: "cpu", "#,
            r#"spec.resourceGroups[1].flavors[0].name: Duplicate value: "default"]"#,
        )
    );
}

#[tokio::test]
async fn valid_kueue_objects_are_allowed() {
    let server = Server::start(&[]);
    let cq = object(
        "ClusterQueue",
        json!({"namespaceSelector": {}, "cohortName": "all",
               "resourceGroups": [quotas(&["cpu", "memory"], &[("default", &["cpu", "memory"])])],
               "preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"},
                              "withinClusterQueue": "LowerPriority"}}),
    );
    let resp = validate(&server, review("ok-cq", "CREATE", CQ, cq.clone(), None)).await;
    assert_eq!(resp["allowed"], true, "{resp}");
    let resp = validate(
        &server,
        review("ok-cq-u", "UPDATE", CQ, cq.clone(), Some(cq)),
    )
    .await;
    assert_eq!(resp["allowed"], true, "{resp}");
    let rf = object(
        "ResourceFlavor",
        json!({"nodeLabels": {"instance-type": "spot"}}),
    );
    let resp = validate(&server, review("ok-rf", "CREATE", RF, rf, None)).await;
    assert_eq!(resp["allowed"], true, "{resp}");
    let wl = workload(json!([pod_set("main", 2, "1")]), json!({}));
    let resp = validate(&server, review("ok-wl", "CREATE", WL, wl, None)).await;
    assert_eq!(resp["allowed"], true, "{resp}");
    // LocalQueues have no webhook validation upstream: allowed as they are.
    let lq = object("LocalQueue", json!({"clusterQueue": "Not_A_Name"}));
    let resp = validate(&server, review("ok-lq", "CREATE", LQ, lq, None)).await;
    assert_eq!(resp["allowed"], true, "{resp}");
}

/// Kueue's types read an absent `migration.mode` as empty and its webhook
/// allows it; refusing it is the schema's job, in the apiserver, before any
/// validating webhook.
#[tokio::test]
async fn concurrent_admission_policy_without_a_mode_is_decoded_and_allowed() {
    let server = Server::start(&[]);
    let spec = |policy: Value| {
        json!({"namespaceSelector": {},
               "resourceGroups": [quotas(&["cpu"], &[("flavor1", &["cpu"])])],
               "concurrentAdmissionPolicy": policy})
    };
    for (uid, policy) in [
        (
            "ca-1",
            json!({"migration": {"constraints": {"lastAcceptableFlavorName": "flavor1"}}}),
        ),
        ("ca-2", json!({"migration": {}})),
    ] {
        let cq = object("ClusterQueue", spec(policy));
        let resp = validate(&server, review(uid, "CREATE", CQ, cq.clone(), None)).await;
        assert_eq!(resp["allowed"], true, "{uid}: {resp}");
        let resp = validate(&server, review(uid, "UPDATE", CQ, cq.clone(), Some(cq))).await;
        assert_eq!(resp["allowed"], true, "{uid}: {resp}");
    }
}

#[tokio::test]
async fn cluster_queue_preemption_and_limits_are_checked() {
    let server = Server::start(&[]);
    let cq = object(
        "ClusterQueue",
        json!({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default",
                  "resources": [{"name": "cpu", "nominalQuota": "1", "lendingLimit": "2"}]}]}],
               "preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"},
                              "withinClusterQueue": "Never"}}),
    );
    let resp = validate(&server, review("cq-2", "CREATE", CQ, cq, None)).await;
    assert_eq!(
        denied(&resp),
        concat!(
            r#"[spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "2": must be nil when cohort is empty, "#,
            r#"spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "2": must be less than or equal to the nominalQuota, "#,
            r#"spec.preemption: Invalid value: {"reclaimWithinCohort":"Never","borrowWithinCohort":{"policy":"LowerPriority"},"withinClusterQueue":"Never"}: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never]"#,
        )
    );
}

#[tokio::test]
async fn cohort_limits_need_a_parent() {
    let server = Server::start(&[]);
    let cohort = object(
        "Cohort",
        json!({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default",
                  "resources": [{"name": "cpu", "nominalQuota": "4", "borrowingLimit": "1"}]}]}]}),
    );
    let resp = validate(&server, review("co-1", "CREATE", COHORT, cohort, None)).await;
    assert_eq!(
        denied(&resp),
        r#"spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "1": must be nil when parent is empty"#
    );
}

#[tokio::test]
async fn resource_flavor_taints_must_be_unique_by_key_and_effect() {
    let server = Server::start(&[]);
    let rf = object(
        "ResourceFlavor",
        json!({"nodeTaints": [
            {"key": "spot", "value": "true", "effect": "NoSchedule"},
            {"key": "spot", "value": "false", "effect": "NoSchedule"},
        ]}),
    );
    let resp = validate(&server, review("rf-1", "UPDATE", RF, rf.clone(), Some(rf))).await;
    assert_eq!(
        denied(&resp),
        r#"spec.nodeTaints[1]: Duplicate value: {"key":"spot","value":"false","effect":"NoSchedule"}: taints must be unique by key and effect pair"#
    );
}

#[tokio::test]
async fn workload_reserving_the_pods_resource_is_denied() {
    let server = Server::start(&[]);
    let mut ps = pod_set("main", 1, "1");
    ps["template"]["spec"]["containers"][0]["resources"]["requests"]["pods"] = json!("1");
    let resp = validate(
        &server,
        review("wl-1", "CREATE", WL, workload(json!([ps]), json!({})), None),
    )
    .await;
    assert_eq!(
        denied(&resp),
        r#"spec.podSets[0].template.spec.containers[0].resources.requests[pods]: Invalid value: "pods": the key is reserved for internal kueue use"#
    );
}

#[tokio::test]
async fn workload_status_writes_are_validated() {
    let server = Server::start(&[]);
    let pending = workload(json!([pod_set("main", 3, "1")]), json!({}));
    // A quota reservation without an admission.
    let broken = workload(
        json!([pod_set("main", 3, "1")]),
        json!({"conditions": [quota_reserved()]}),
    );
    let resp = validate(&server, status_review("st-1", broken, pending.clone())).await;
    assert_eq!(
        denied(&resp),
        "status.admission: Required value: must be set while the QuotaReserved condition is true"
    );
    // An admission whose usage does not divide among the pods.
    let uneven = workload(
        json!([pod_set("main", 3, "1")]),
        json!({"conditions": [quota_reserved()],
               "admission": {"clusterQueue": "cq", "podSetAssignments": [
                   {"name": "main", "count": 3, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}]}}),
    );
    let resp = validate(&server, status_review("st-2", uneven, pending.clone())).await;
    assert_eq!(
        denied(&resp),
        r#"status.admission.podSetAssignments[0].resourceUsage[cpu]: Invalid value: "1": is not a multiple of 3"#
    );
    // A proper admission is accepted.
    let admitted = workload(
        json!([pod_set("main", 3, "1")]),
        json!({"conditions": [quota_reserved()],
               "admission": {"clusterQueue": "cq", "podSetAssignments": [
                   {"name": "main", "count": 3, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "3"}}]}}),
    );
    let resp = validate(&server, status_review("st-3", admitted.clone(), pending)).await;
    assert_eq!(resp["allowed"], true, "{resp}");

    // Once quota is reserved the pod sets are frozen.
    let mut grown = admitted.clone();
    grown["spec"]["podSets"][0]["count"] = json!(4);
    let resp = validate(&server, review("wl-2", "UPDATE", WL, grown, Some(admitted))).await;
    let message = denied(&resp);
    assert!(
        message.starts_with(r#"spec.podSets.0: Invalid value: {"count":4,"name":"main","#),
        "{message}"
    );
    assert!(message.ends_with(": field is immutable"), "{message}");
}

/// On /mutate a ClusterQueue's create gets Kueue's `resource-in-use`
/// finalizer and nothing else (its spec, even one /validate refuses, is
/// not read: Kueue's defaulter adds only the finalizer); its update and a
/// Cohort's create are not mutated.
#[tokio::test]
async fn kueue_kinds_are_defaulted_with_the_finalizer_only() {
    let server = Server::start(&[]);
    let cq = object("ClusterQueue", json!({"resourceGroups": "not a list"}));
    let (status, resp) = server
        .client()
        .post("/mutate", review("m-1", "CREATE", CQ, cq.clone(), None))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["allowed"], true);
    assert_eq!(
        patch_of(&resp),
        Some(json!([{"op": "add", "path": "/metadata/finalizers",
                     "value": ["kueue.x-k8s.io/resource-in-use"]}])),
        "{resp}"
    );
    let (_, resp) = server
        .client()
        .post("/mutate", review("m-2", "UPDATE", CQ, cq.clone(), Some(cq)))
        .await;
    assert_eq!(resp["response"]["allowed"], true);
    assert!(resp["response"].get("patch").is_none(), "{resp}");
    let cohort = object("Cohort", json!({}));
    let (_, resp) = server
        .client()
        .post("/mutate", review("m-3", "CREATE", COHORT, cohort, None))
        .await;
    assert_eq!(resp["response"]["allowed"], true);
    assert!(resp["response"].get("patch").is_none(), "{resp}");
}

#[tokio::test]
async fn undecodable_kueue_object_is_refused_as_a_bad_request() {
    let server = Server::start(&[]);
    let cq = object("ClusterQueue", json!({"resourceGroups": "not a list"}));
    let resp = validate(&server, review("bad-1", "CREATE", CQ, cq, None)).await;
    assert_eq!(resp["allowed"], false);
    assert_eq!(resp["status"]["code"], 400);
    let message = resp["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "cannot decode kueue.x-k8s.io/v1beta2, Kind=ClusterQueue in request.object: spec.resourceGroups: invalid type"
        ),
        "{message}"
    );
    let q = object(
        "ClusterQueue",
        json!({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f",
                  "resources": [{"name": "cpu", "nominalQuota": "lots"}]}]}]}),
    );
    let resp = validate(&server, review("bad-2", "CREATE", CQ, q, None)).await;
    assert_eq!(resp["status"]["code"], 400);
    assert_eq!(
        resp["status"]["message"],
        "cannot decode kueue.x-k8s.io/v1beta2, Kind=ClusterQueue in request.object: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
}

#[tokio::test]
async fn kueue_reviews_are_counted_by_kind() {
    let server = Server::start(&[]);
    let rf = object("ResourceFlavor", json!({"nodeLabels": {"@bad": "x"}}));
    let resp = validate(&server, review("metrics-1", "CREATE", RF, rf, None)).await;
    assert_eq!(resp["allowed"], false);
    let (code, metrics) = server.probe_get("/metrics");
    assert_eq!(code, 200);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("batchgate_admission_reviews_total{")
                && l.contains(r#"kind="kueue.x-k8s.io/resourceflavor""#)
                && l.contains(r#"result="denied""#)
                && l.ends_with(" 1")),
        "{metrics}"
    );
}

/// End to end on the local control plane: with Kueue's CRDs installed and
/// batchgate's webhooks registered, `kubectl apply` of a ClusterQueue that
/// the schema accepts but upstream's webhook refuses is refused with
/// upstream's words.
#[test]
fn e2e_invalid_cluster_queue_is_refused_by_the_apiserver() {
    use std::time::{Duration, Instant};

    use batchgate_localcluster::shared;
    use support::e2e::{kubectl, namespace, register, wait_webhook_active};

    let c = shared();
    let root = env!("CARGO_MANIFEST_DIR");
    let (ok, out, err) = kubectl(c, &["apply", "-f", &format!("{root}/manifests/crds")], None);
    assert!(ok, "{out}{err}");
    c.wait_established(
        &["crd/clusterqueues.kueue.x-k8s.io"],
        Duration::from_secs(120),
    )
    .unwrap();

    let server = Server::start(&[]);
    server.wait_ready(Duration::from_secs(30));
    register(
        c,
        server.addr,
        Some(&server.cert_dir.join("ca.crt")),
        "Fail",
    );
    wait_webhook_active(c, &namespace(c, "e2e-kueue-validation"));

    let invalid = r#"{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
  "metadata": {"name": "e2e-invalid"},
  "spec": {"namespaceSelector": {}, "resourceGroups": [
    {"coveredResources": ["cpu", "memory"],
     "flavors": [{"name": "default", "resources": [{"name": "memory", "nominalQuota": "1Gi"}, {"name": "cpu", "nominalQuota": "1"}]}]},
    {"coveredResources": ["example.com/gpu"],
     "flavors": [{"name": "default", "resources": [{"name": "example.com/gpu", "nominalQuota": "1"}]}]}]}}"#;
    let want = concat!(
        r#"admission webhook "vclusterqueue.kb.io" denied the request: ["#,
        r#"spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": must match the name in coveredResources, "#,
        r#"spec.resourceGroups[0].flavors[0].resources[1].name: Invalid value: "cpu": must match the name in coveredResources, "#,
        r#"spec.resourceGroups[1].flavors[0].name: Duplicate value: "default"]"#,
    );
    // The validating configuration is picked up with the mutating one the
    // probe above waited for; allow the apiserver a moment all the same.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (ok, out, err) = kubectl(c, &["apply", "-f", "-"], Some(invalid));
        assert!(!ok, "an invalid ClusterQueue was stored: {out}");
        if err.contains(want) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not refused by batchgate's webhook with upstream's words:\n{err}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let valid = invalid
        .replace("e2e-invalid", "e2e-valid")
        .replace(
            r#"[{"name": "memory", "nominalQuota": "1Gi"}, {"name": "cpu", "nominalQuota": "1"}]"#,
            r#"[{"name": "cpu", "nominalQuota": "1"}, {"name": "memory", "nominalQuota": "1Gi"}]"#,
        )
        .replace(
            r#"{"name": "default", "resources": [{"name": "example.com/gpu""#,
            r#"{"name": "gpu", "resources": [{"name": "example.com/gpu""#,
        );
    let (ok, out, err) = kubectl(c, &["apply", "-f", "-", "-o", "json"], Some(&valid));
    assert!(ok, "{out}{err}");
    // Defaulted as Kueue's mclusterqueue.kb.io does; no reconciler runs
    // here to let the finalizer go, so the test takes it off itself.
    let applied: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        applied["metadata"]["finalizers"],
        serde_json::json!(["kueue.x-k8s.io/resource-in-use"]),
        "{applied}"
    );
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "clusterqueue",
            "e2e-valid",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let (ok, out, err) = kubectl(c, &["delete", "clusterqueue", "e2e-valid"], None);
    assert!(ok, "{out}{err}");
}
