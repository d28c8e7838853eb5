//! Kueue v0.19.2's Workload shapes on the real local kube-apiserver with
//! batchgate's CRDs and `vworkload.kb.io` registered: a status write in the
//! released topology-assignment layout, as Kueue's scheduler makes it,
//! passes both; the pre-release layout does not; and the webhook refuses
//! what v0.19.2 refuses with its words.

mod support;

use std::{sync::OnceLock, time::Duration};

use batchgate_localcluster::{shared, LocalCluster};
use serde_json::{json, Value};
use support::{e2e::*, Server};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The CRDs from manifests/crds, then one batchgate (`--no-cluster`, the
/// webhook only: no reconciler rewrites the status written here) registered
/// with failurePolicy Fail.
fn setup() -> &'static LocalCluster {
    static SERVER: OnceLock<Server> = OnceLock::new();
    let c = shared();
    SERVER.get_or_init(|| {
        let (ok, out, err) = kubectl(
            c,
            &["apply", "-f", &format!("{ROOT}/manifests/crds")],
            None,
        );
        assert!(ok, "{out}{err}");
        let (ok, out, err) = kubectl(
            c,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd/workloads.kueue.x-k8s.io",
            ],
            None,
        );
        assert!(ok, "{out}{err}");
        let server = Server::start_forever(|| Server::start(&[]));
        server.wait_ready(Duration::from_secs(30));
        register(
            c,
            server.addr,
            Some(&server.cert_dir.join("ca.crt")),
            "Fail",
        );
        wait_webhook_active(c, &namespace(c, "e2e-probe"));
        server
    });
    c
}

fn workload(name: &str, ns: &str, cpu: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"queueName": "user-queue", "podSets": [{
               "name": "main", "count": 4,
               "topologyRequest": {"required": "cloud.example.com/block",
                                   "podIndexLabel": "kubernetes.io/job-completion-index"},
               "template": {"spec": {"restartPolicy": "Never", "containers": [{
                   "name": "c", "image": "busybox",
                   "resources": {"requests": {"cpu": cpu}}}]}}}]}})
}

/// The status Kueue's scheduler writes on a topology-aware admission: four
/// pods in one block, on two nodes (three and one).
fn tas_admission(topology: Value) -> Value {
    json!({"status": {
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                        "message": "Quota reserved in ClusterQueue cluster-queue",
                        "lastTransitionTime": "2026-01-02T03:04:05Z"}],
        "admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [{
            "name": "main", "count": 4, "flavors": {"cpu": "tas-flavor"},
            "resourceUsage": {"cpu": "4"}, "topologyAssignment": topology}]}}})
}

fn released_topology() -> Value {
    json!({"levels": ["cloud.example.com/block", "kubernetes.io/hostname"],
           "slices": [{"domainCount": 2,
                       "valuesPerLevel": [{"universal": "block-1"},
                                          {"individual": {"prefix": "node-", "roots": ["a", "b"]}}],
                       "podCounts": {"individual": [3, 1]}}]})
}

fn status_patch(c: &LocalCluster, ns: &str, name: &str, patch: &Value) -> (bool, String, String) {
    kubectl(
        c,
        &[
            "patch",
            "workload",
            name,
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch.to_string(),
        ],
        None,
    )
}

#[test]
fn a_v0_19_topology_assignment_is_stored_through_vworkload() {
    let c = setup();
    let ns = namespace(c, "e2e-tas");
    let (ok, out, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&workload("tas", &ns, "1").to_string()),
    );
    assert!(ok, "{out}{err}");

    let (ok, out, err) = status_patch(c, &ns, "tas", &tas_admission(released_topology()));
    assert!(ok, "{out}{err}");
    let stored = get_json(c, &["workload", "tas", "-n", &ns]);
    assert_eq!(
        stored["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"],
        released_topology(),
        "read back as written"
    );

    // The scheduler may rewrite the assignment (here: one pod per node in
    // every domain) while the admission stays.
    let mut rewritten = released_topology();
    rewritten["slices"][0]["podCounts"] = json!({"universal": 2});
    let (ok, out, err) = status_patch(c, &ns, "tas", &tas_admission(rewritten.clone()));
    assert!(ok, "{out}{err}");
    let stored = get_json(c, &["workload", "tas", "-n", &ns]);
    assert_eq!(
        stored["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"],
        rewritten
    );

    // Kueue's CEL rule on the released shape: one count per domain.
    let mut short = released_topology();
    short["slices"][0]["podCounts"] = json!({"individual": [4]});
    let (ok, _, err) = status_patch(c, &ns, "tas", &tas_admission(short));
    assert!(!ok);
    assert!(
        err.contains("podCounts.individual must have length equal to domainCount"),
        "{err}"
    );

    // The status write goes through vworkload.kb.io: an assignment for a
    // pod set the spec does not have is refused in Kueue's words.
    let mut stray = tas_admission(released_topology());
    stray["status"]["admission"]["podSetAssignments"][0]["name"] = json!("other");
    let (ok, _, err) = status_patch(c, &ns, "tas", &stray);
    assert!(!ok);
    assert!(
        err.contains(r#"admission webhook "vworkload.kb.io" denied the request"#)
            && err.contains(r#"status.admission.podSetAssignments[0].name: Not found: "other""#),
        "{err}"
    );

    // The pre-release layout is not Kueue's: the schema refuses it.
    let old = json!({"levels": ["kubernetes.io/hostname"], "slices": [{"domainCount": 1,
        "valuesPerLevel": [{"universalValue": "node-a"}], "podCounts": [4]}]});
    let (ok, _, err) = status_patch(c, &ns, "tas", &tas_admission(old));
    assert!(!ok);
    assert!(err.contains("podCounts"), "{err}");
}

#[test]
fn vworkload_refuses_negative_requests_with_kueues_words() {
    let c = setup();
    let ns = namespace(c, "e2e-negative");
    let (ok, _, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&workload("negative", &ns, "-1").to_string()),
    );
    assert!(!ok);
    assert!(
        err.contains(r#"admission webhook "vworkload.kb.io" denied the request: spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0"#),
        "{err}"
    );
}
