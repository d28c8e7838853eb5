//! kueue.x-k8s.io/v1beta1 served through batchgate's conversion webhook, end
//! to end: Kueue's CRDs from manifests/crds (v1beta1 served, v1beta2
//! stored), their conversion pointed at this test's batchgate (as `batchgate
//! crds --url` writes it, without a caBundle: batchgate manages its
//! certificates and publishes it, as in the self-managed deployment), and
//! real kubectl over real TLS.
//!
//! v1beta1 manifests of every Kueue kind apply (through batchgate's
//! v1beta2 validation, which the apiserver reaches by converting), read
//! back as v1beta2 with Kueue's renames, read back as v1beta1 with every
//! field of the manifest, and re-apply as `unchanged`. A v1beta2 object read
//! and written back as v1beta1 keeps the fields v1beta1 cannot show.

mod support;

use std::{process::Command, time::Duration};

use batchgate::api::kueue::conversion::STASH_ANNOTATION;
use batchgate_localcluster::{shared, LocalCluster};
use serde_json::{json, Value};
use support::{
    e2e::{get_json, kubectl, namespace, register, wait_webhook_active},
    queueing::{install_crds, wait_for},
    Server, BIN,
};

const WAIT: Duration = Duration::from_secs(60);
const SECRET: &str = "batchgate-conversion-cert";

/// Points the converted CRDs at `server` (no caBundle) and waits until a
/// v1beta2 object reads as v1beta1.
fn register_conversion(c: &LocalCluster, server: &Server) {
    let out = Command::new(BIN)
        .args(["crds", "--converted-only", "--url"])
        .arg(format!("https://{}", server.addr))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    c.apply(&String::from_utf8(out.stdout).unwrap()).unwrap();
    c.apply(r#"{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "probe"}}"#)
        .unwrap();
    wait_for(WAIT, "the apiserver converting through batchgate", || {
        read(c, "cohorts", "v1beta1", "probe", None)
    });
    // The caBundle batchgate published is its Secret's.
    let secret = get_json(c, &["secret", SECRET, "-n", "batchgate-system"]);
    for crd in batchgate::api::crd::CONVERTED_CRDS {
        let v = get_json(c, &["crd", crd]);
        assert_eq!(
            v["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"],
            secret["data"]["ca-bundle.crt"],
            "{crd}"
        );
    }
}

/// The object as `version`, or `None` while the apiserver cannot convert.
fn read(
    c: &LocalCluster,
    plural: &str,
    version: &str,
    name: &str,
    ns: Option<&str>,
) -> Option<Value> {
    let resource = format!("{plural}.{version}.kueue.x-k8s.io");
    let mut args = vec!["get", &resource, name, "-o", "json"];
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    let (ok, out, _) = kubectl(c, &args, None);
    ok.then(|| serde_json::from_str(&out).unwrap())
}

/// Every field `want` has, `got` has with the same value (the apiserver
/// adds metadata, defaults and status).
fn assert_contains(got: &Value, want: &Value, at: &str) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                let gv = g
                    .get(k)
                    .unwrap_or_else(|| panic!("{at}.{k} lost; got {got}"));
                assert_contains(gv, wv, &format!("{at}.{k}"));
            }
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{at}: {got} vs {want}");
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                assert_contains(gv, wv, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(got, want, "{at}"),
    }
}

fn manifests(ns: &str) -> Vec<(&'static str, Option<String>, Value)> {
    vec![
        (
            "resourceflavors",
            None,
            json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
            "metadata": {"name": "conv-default"},
            "spec": {"nodeLabels": {"conversion.example.com/pool": "a"}}}),
        ),
        (
            "topologies",
            None,
            json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology",
            "metadata": {"name": "conv-topology"},
            "spec": {"levels": [{"nodeLabel": "cloud.example.com/block"},
                                {"nodeLabel": "kubernetes.io/hostname"}]}}),
        ),
        (
            "workloadpriorityclasses",
            None,
            json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "WorkloadPriorityClass",
            "metadata": {"name": "conv-high"}, "value": 1000, "description": "from a v1beta1 GitOps repo"}),
        ),
        (
            "cohorts",
            None,
            json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort",
            "metadata": {"name": "conv-org"},
            "spec": {"fairSharing": {"weight": "2"}}}),
        ),
        (
            "clusterqueues",
            None,
            json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
            "metadata": {"name": "conv-cq", "labels": {"team": "ml"}},
            "spec": {
                "cohort": "conv-org",
                "namespaceSelector": {},
                "queueingStrategy": "StrictFIFO",
                "stopPolicy": "Hold",
                "admissionChecks": ["conv-check"],
                "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "conv-default", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}]}}),
        ),
        (
            "localqueues",
            Some(ns.to_string()),
            json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
            "metadata": {"name": "conv-lq", "namespace": ns},
            "spec": {"clusterQueue": "conv-cq", "stopPolicy": "None"}}),
        ),
        (
            "workloads",
            Some(ns.to_string()),
            json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "conv-train", "namespace": ns, "annotations": {"example.com/keep": "me"}},
            "spec": {
                "queueName": "conv-lq",
                "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                "priorityClassName": "conv-high",
                "priority": 1000,
                "podSets": [{"name": "main", "count": 2, "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox",
                                    "resources": {"requests": {"cpu": "1"}}}]}}}]}}),
        ),
    ]
}

#[test]
fn v1beta1_is_served_through_the_conversion_webhook() {
    let c = shared();
    install_crds(c);
    namespace(c, "batchgate-system");
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "namespace: batchgate-system\n\
             certificates:\n  secret: batchgate-system/{SECRET}\n  manage: true\n  syncIntervalSeconds: 1\n"
        ),
    )
    .unwrap();
    // The webhook only (`external`): no reconciler writes to the objects
    // under test. Certificates managed by batchgate in a Secret.
    let server = Server::start_in_cluster(
        c.kubeconfig(),
        None,
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--cert-secret",
            &format!("batchgate-system/{SECRET}"),
            "--admission",
            "external",
        ],
    );
    server.wait_ready(Duration::from_secs(30));
    register(c, server.addr, None, "Fail");
    let ns = namespace(c, "e2e-conversion");
    wait_webhook_active(c, &ns);
    register_conversion(c, &server);

    let all = manifests(&ns);
    let yaml: String = all
        .iter()
        .map(|(_, _, m)| format!("---\n{}", serde_yaml::to_string(m).unwrap()))
        .collect();
    let (ok, out, err) = kubectl(c, &["apply", "-f", "-"], Some(&yaml));
    assert!(ok, "{out}{err}");
    assert!(
        err.contains("This version is deprecated. Use v1beta2 instead."),
        "kubectl shows upstream's deprecation warning: {err}"
    );

    for (plural, ns, m) in &all {
        let name = m["metadata"]["name"].as_str().unwrap();
        // Stored as v1beta2, with Kueue's renames.
        let v2 = read(c, plural, "v1beta2", name, ns.as_deref()).unwrap();
        assert_eq!(v2["apiVersion"], "kueue.x-k8s.io/v1beta2");
        match *plural {
            "clusterqueues" => {
                assert_eq!(v2["spec"]["cohortName"], "conv-org", "{v2}");
                assert!(v2["spec"].get("cohort").is_none(), "{v2}");
                assert!(v2["spec"].get("admissionChecks").is_none(), "{v2}");
                assert_eq!(
                    v2["spec"]["admissionChecksStrategy"],
                    json!({"admissionChecks": [{"name": "conv-check"}]})
                );
                assert_eq!(
                    v2["spec"]["flavorFungibility"],
                    json!({"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"})
                );
                // What v1beta2 cannot say, kept for v1beta1 readers.
                assert!(
                    v2["metadata"]["annotations"][STASH_ANNOTATION].is_string(),
                    "{v2}"
                );
            }
            "workloads" => {
                assert_eq!(
                    v2["spec"]["priorityClassRef"],
                    json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "conv-high"})
                );
                assert!(v2["spec"].get("priorityClassName").is_none(), "{v2}");
                assert!(
                    v2["metadata"]["annotations"]
                        .get(STASH_ANNOTATION)
                        .is_none(),
                    "{v2}"
                );
            }
            _ => {}
        }
        // Read back as v1beta1: every field of the manifest, no stash.
        let v1 = read(c, plural, "v1beta1", name, ns.as_deref()).unwrap();
        assert_contains(&v1, m, plural);
        assert!(
            v1["metadata"]["annotations"]
                .get(STASH_ANNOTATION)
                .is_none(),
            "{v1}"
        );
    }

    // A GitOps re-sync of the same v1beta1 manifests changes nothing.
    let (ok, out, err) = kubectl(c, &["apply", "-f", "-"], Some(&yaml));
    assert!(ok, "{out}{err}");
    for (plural, _, m) in &all {
        let name = m["metadata"]["name"].as_str().unwrap();
        let kind = m["kind"].as_str().unwrap().to_lowercase();
        assert!(
            out.contains(&format!("{kind}.kueue.x-k8s.io/{name} unchanged")),
            "{plural}: {out}"
        );
    }

    // A v1beta2 Workload read as v1beta1, written back by a v1beta1 client,
    // still has what v1beta1 cannot show.
    let v2 = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "conv-new", "namespace": ns},
        "spec": {
            "queueName": "conv-lq",
            "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "conv-high"},
            "priority": 1000,
            "preemptionGates": [{"name": "example.com/gate"}],
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox"}]}}}]}});
    let (ok, out, err) = kubectl(c, &["create", "-f", "-"], Some(&v2.to_string()));
    assert!(ok, "{out}{err}");
    let mut v1 = read(c, "workloads", "v1beta1", "conv-new", Some(&ns)).unwrap();
    assert_eq!(v1["apiVersion"], "kueue.x-k8s.io/v1beta1");
    assert_eq!(v1["spec"]["priorityClassName"], "conv-high");
    assert_eq!(
        v1["spec"]["priorityClassSource"],
        "kueue.x-k8s.io/workloadpriorityclass"
    );
    assert!(v1["spec"].get("priorityClassRef").is_none(), "{v1}");
    assert!(v1["spec"].get("preemptionGates").is_none(), "{v1}");
    assert!(
        v1["metadata"]["annotations"][STASH_ANNOTATION].is_string(),
        "{v1}"
    );
    v1["metadata"]["labels"] = json!({"touched-by": "v1beta1-client"});
    let (ok, out, err) = kubectl(c, &["replace", "-f", "-"], Some(&v1.to_string()));
    assert!(ok, "{out}{err}");
    let back = read(c, "workloads", "v1beta2", "conv-new", Some(&ns)).unwrap();
    assert_eq!(back["metadata"]["labels"]["touched-by"], "v1beta1-client");
    assert_contains(&back["spec"], &v2["spec"], "spec");
    assert!(back["metadata"].get("annotations").is_none(), "{back}");
}
