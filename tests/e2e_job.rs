//! End to end through the real kube-apiserver with the real kubectl: the
//! apiserver calls batchgate over TLS at 127.0.0.1, with the caBundle of the
//! CA batchgate generated.

mod support;

use std::{
    sync::OnceLock,
    time::{Duration, Instant},
};

use batchgate_localcluster::{shared, LocalCluster};
use serde_json::Value;
use support::{e2e::*, Server};

fn cluster() -> &'static LocalCluster {
    shared()
}

/// One batchgate for this test binary, registered with failurePolicy Fail.
fn batchgate() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let c = cluster();
        let kubeconfig = c.kubeconfig().to_path_buf();
        let server =
            Server::start_forever(move || Server::start_in_cluster(&kubeconfig, None, &[]));
        server.wait_ready(Duration::from_secs(30));
        register(
            c,
            server.addr,
            Some(&server.cert_dir.join("ca.crt")),
            "Fail",
        );
        wait_webhook_active(c, &namespace(c, "e2e-probe"));
        server
    })
}

#[test]
fn queued_job_is_stored_suspended_and_nothing_else_changes() {
    let (c, _) = (cluster(), batchgate());
    let ns = namespace(c, "e2e-queued");
    let (ok, out, err) = kubectl(
        c,
        &["apply", "-f", "-"],
        Some(&queued_job("queued", &ns, "user-queue")),
    );
    assert!(ok, "{out}{err}");
    let job = get_json(c, &["job", "queued", "-n", &ns]);
    assert_eq!(job["spec"]["suspend"], Value::Bool(true));
    assert_eq!(
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "user-queue"
    );
    assert_eq!(job["metadata"]["labels"]["team"], "a");
    assert_eq!(job["metadata"]["annotations"]["example.com/keep"], "me");
    assert_eq!(job["spec"]["parallelism"], 2);
    assert_eq!(job["spec"]["completions"], 2);
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"][0],
        "true"
    );
    // Suspended: the Job controller starts no pods.
    std::thread::sleep(Duration::from_secs(2));
    let pods = get_json(
        c,
        &[
            "pods",
            "-n",
            &ns,
            "-l",
            "batch.kubernetes.io/job-name=queued",
        ],
    );
    assert_eq!(pods["items"].as_array().unwrap().len(), 0);
}

#[test]
fn unqueued_job_is_stored_unchanged_and_runs_to_completion_on_a_kwok_node() {
    let (c, _) = (cluster(), batchgate());
    let ns = namespace(c, "e2e-plain");
    let (ok, out, err) = kubectl(c, &["apply", "-f", "-"], Some(&plain_job("plain", &ns)));
    assert!(ok, "{out}{err}");
    let job = get_json(c, &["job", "plain", "-n", &ns]);
    // Not suspended: the apiserver's own default (false), not batchgate's.
    assert_eq!(job["spec"]["suspend"], Value::Bool(false));
    assert!(job["metadata"]["labels"]
        .get("kueue.x-k8s.io/queue-name")
        .is_none());

    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let job = get_json(c, &["job", "plain", "-n", &ns]);
        if job["status"]["succeeded"] == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "job did not complete: {}",
            job["status"]
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let pods = get_json(
        c,
        &[
            "pods",
            "-n",
            &ns,
            "-l",
            "batch.kubernetes.io/job-name=plain",
        ],
    );
    let nodes: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap_or(""))
        .collect();
    assert!(!nodes.is_empty());
    let kwok: Vec<String> = c.nodes().iter().map(|n| n.name.clone()).collect();
    for n in nodes {
        assert!(
            kwok.iter().any(|k| k == n),
            "pod ran on {n:?}, not a KWOK node of {kwok:?}"
        );
    }
}

#[test]
fn changing_the_queue_of_a_running_job_is_rejected_with_batchgates_message() {
    let (c, _) = (cluster(), batchgate());
    let ns = namespace(c, "e2e-update");
    let (ok, out, err) = kubectl(
        c,
        &["apply", "-f", "-"],
        Some(&queued_job("running", &ns, "q1")),
    );
    assert!(ok, "{out}{err}");
    // Start it, as an admission would.
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "job",
            "running",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"suspend":false}}"#,
        ],
        None,
    );
    assert!(ok, "unsuspending is allowed: {out}{err}");
    let (ok, _, err) = kubectl(
        c,
        &[
            "label",
            "job",
            "running",
            "-n",
            &ns,
            "kueue.x-k8s.io/queue-name=q2",
            "--overwrite",
        ],
        None,
    );
    assert!(!ok, "the label change must be refused");
    assert!(
        err.contains(r#"admission webhook "vjob.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "q2": field is immutable"#),
        "kubectl said: {err}"
    );
    let job = get_json(c, &["job", "running", "-n", &ns]);
    assert_eq!(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "q1");

    // While suspended, moving to another queue is fine.
    let (ok, out, err) = kubectl(
        c,
        &["apply", "-f", "-"],
        Some(&queued_job("waiting", &ns, "q1")),
    );
    assert!(ok, "{out}{err}");
    let (ok, out, err) = kubectl(
        c,
        &[
            "label",
            "job",
            "waiting",
            "-n",
            &ns,
            "kueue.x-k8s.io/queue-name=q2",
            "--overwrite",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
}

#[test]
fn an_invalid_queue_name_is_rejected_on_create() {
    let (c, _) = (cluster(), batchgate());
    let ns = namespace(c, "e2e-invalid");
    let (ok, _, err) = kubectl(
        c,
        &["apply", "-f", "-"],
        Some(&queued_job("bad", &ns, "Not_A_Queue")),
    );
    assert!(!ok);
    assert!(
        err.contains(r#"denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Not_A_Queue": a lowercase RFC 1123 subdomain"#),
        "{err}"
    );
    let (ok, _, _) = kubectl(c, &["get", "job", "bad", "-n", &ns], None);
    assert!(!ok, "nothing is stored");
}

#[test]
fn everything_in_manifests_passes_a_server_side_dry_run() {
    let c = cluster();
    // The namespace must exist for a dry run of the namespaced objects, and
    // the cert-manager variant needs cert-manager's CRDs (structural
    // stand-ins from tests/fixtures; cert-manager itself is not installed).
    // manifests/crds holds Kueue's CRDs; manifests/ has no custom resources
    // of its own, so nothing waits for them to be Established.
    let root = env!("CARGO_MANIFEST_DIR");
    let (ok, out, err) = kubectl(
        c,
        &["apply", "-f", &format!("{root}/manifests/namespace.yaml")],
        None,
    );
    assert!(ok, "{out}{err}");
    let (ok, out, err) = kubectl(
        c,
        &[
            "apply",
            "-f",
            &format!("{root}/tests/fixtures/cert-manager-crds.yaml"),
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    c.wait_established(
        &[
            "crd/issuers.cert-manager.io",
            "crd/certificates.cert-manager.io",
        ],
        Duration::from_secs(120),
    )
    .unwrap();
    let (ok, out, err) = kubectl(
        c,
        &[
            "apply",
            "--dry-run=server",
            "--recursive",
            "-f",
            &format!("{root}/manifests"),
        ],
        None,
    );
    assert!(ok, "dry run failed:\n{out}\n{err}");
    for kind in [
        "namespace/batchgate-system",
        "serviceaccount/batchgate",
        "clusterrole.rbac.authorization.k8s.io/batchgate",
        "deployment.apps/batchgate",
        "service/batchgate-webhook",
        "configmap/batchgate-config",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/batchgate-mutating-webhook-configuration",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/batchgate-validating-webhook-configuration",
        "issuer.cert-manager.io/batchgate-selfsigned-issuer",
        "certificate.cert-manager.io/batchgate-ca",
        "issuer.cert-manager.io/batchgate-ca-issuer",
        "certificate.cert-manager.io/batchgate-serving-cert",
        "customresourcedefinition.apiextensions.k8s.io/clusterqueues.kueue.x-k8s.io",
        "customresourcedefinition.apiextensions.k8s.io/cohorts.kueue.x-k8s.io",
        "customresourcedefinition.apiextensions.k8s.io/localqueues.kueue.x-k8s.io",
        "customresourcedefinition.apiextensions.k8s.io/resourceflavors.kueue.x-k8s.io",
        "customresourcedefinition.apiextensions.k8s.io/workloadpriorityclasses.kueue.x-k8s.io",
        "customresourcedefinition.apiextensions.k8s.io/workloads.kueue.x-k8s.io",
    ] {
        assert!(out.contains(kind), "{kind} missing from:\n{out}");
    }
}
