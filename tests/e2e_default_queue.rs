//! Defaulting from cluster state, end to end: with Kueue's CRDs installed, a
//! Job created without a queue name in a namespace that has a LocalQueue
//! named `default` is queued there (and suspended), as Kueue does; a
//! WorkloadPriorityClass named `default` labels it too. The lookups come from
//! watch-backed caches, not an API call per request. With `admission:
//! external` batchgate runs no Workload reconciler (only the AppWrapper
//! controller, which makes no Workloads).

mod support;

use std::time::{Duration, Instant};

use batchgate_localcluster::shared;
use serde_json::Value;
use support::{e2e::*, review, Server};

#[test]
fn jobs_default_to_the_namespaces_default_local_queue() {
    let c = shared();
    let root = env!("CARGO_MANIFEST_DIR");
    let (ok, out, err) = kubectl(c, &["apply", "-f", &format!("{root}/manifests/crds")], None);
    assert!(ok, "{out}{err}");
    c.wait_established(
        &[
            "crd/localqueues.kueue.x-k8s.io",
            "crd/workloadpriorityclasses.kueue.x-k8s.io",
        ],
        Duration::from_secs(120),
    )
    .unwrap();
    let with_default = namespace(c, "e2e-with-default");
    let without = namespace(c, "e2e-without-default");
    let lq = format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: default, namespace: {with_default}}}\nspec: {{clusterQueue: cluster-queue}}\n"
    );
    c.apply(&lq).unwrap();

    // `admission: external`: upstream Kueue would admit; batchgate only
    // serves the webhook and must not create Workloads or start jobs.
    let server = Server::start_in_cluster(c.kubeconfig(), None, &["--admission", "external"]);
    server.wait_ready(Duration::from_secs(30));
    register(
        c,
        server.addr,
        Some(&server.cert_dir.join("ca.crt")),
        "Fail",
    );
    wait_webhook_active(c, &without);

    let (ok, out, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&plain_job("defaulted", &with_default)),
    );
    assert!(ok, "{out}{err}");
    let job = get_json(c, &["job", "defaulted", "-n", &with_default]);
    assert_eq!(
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "default"
    );
    assert_eq!(job["spec"]["suspend"], Value::Bool(true));
    assert!(job["metadata"]["labels"]
        .get("kueue.x-k8s.io/priority-class")
        .is_none());

    let (ok, out, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&plain_job("left-alone", &without)),
    );
    assert!(ok, "{out}{err}");
    let job = get_json(c, &["job", "left-alone", "-n", &without]);
    assert!(job["metadata"]["labels"]
        .get("kueue.x-k8s.io/queue-name")
        .is_none());
    assert_eq!(job["spec"]["suspend"], Value::Bool(false));

    // The queue name cannot be removed where a default LocalQueue exists.
    let (ok, _, err) = kubectl(
        c,
        &[
            "label",
            "job",
            "defaulted",
            "-n",
            &with_default,
            "kueue.x-k8s.io/queue-name-",
        ],
        None,
    );
    assert!(!ok);
    assert!(
        err.contains(r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": queue-name must not be empty in namespace with default queue"#),
        "{err}"
    );

    ray_queue_name_removal_with_default_queue(&server, &with_default);

    // A WorkloadPriorityClass named default: picked up by the watch, no restart.
    c.apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: default}\nvalue: 100\n")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = c
            .kubectl_stdin(
                &["create", "--dry-run=server", "-o", "json", "-f", "-"],
                plain_job("probe", &with_default).as_bytes(),
            )
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        if v["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "default" {
            assert_eq!(
                v["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
                "default"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "default WorkloadPriorityClass never applied"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    multikueue_queues_hand_their_jobs_to_multikueue(c);

    // With `admission: external` no job reconciler runs: the queued Job gets no
    // Workload from batchgate and stays suspended.
    std::thread::sleep(Duration::from_secs(5));
    let (ok, out, err) = kubectl(
        c,
        &["get", "workloads.kueue.x-k8s.io", "-A", "-o", "name"],
        None,
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "", "Workloads were created: {out}");
    let job = get_json(c, &["job", "defaulted", "-n", &with_default]);
    assert_eq!(job["spec"]["suspend"], Value::Bool(true));
    assert!(server
        .stderr
        .lock()
        .unwrap()
        .contains("admission: external"));
}

/// Kueue v0.19.2 rayjob_webhook_test.go, raycluster_webhook_test.go and
/// rayservice_webhook_test.go, TestValidateUpdate, "queue name removal is rejected when the job is
/// suspended in a namespace with a default queue and
/// ValidateRayAndSparkJobUpdates is enabled": the cluster fact (a LocalQueue
/// named `default`) comes from the server's watch; the reviews are posted
/// over TLS (no Ray CRDs needed).
fn ray_queue_name_removal_with_default_queue(server: &Server, ns: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (kind, spec) in [
        (
            ("ray.io", "v1", "RayJob"),
            serde_json::json!({"suspend": true, "shutdownAfterJobFinishes": true,
                               "rayClusterSpec": {"headGroupSpec": {"template": {}}}}),
        ),
        (
            ("ray.io", "v1", "RayCluster"),
            serde_json::json!({"suspend": true, "headGroupSpec": {"template": {}}}),
        ),
        (
            ("ray.io", "v1", "RayService"),
            serde_json::json!({"rayClusterConfig": {"suspend": true,
                               "headGroupSpec": {"template": {}}}}),
        ),
    ] {
        let obj = |queue: Option<&str>| {
            let mut v = serde_json::json!({"apiVersion": "ray.io/v1", "kind": kind.2,
                "metadata": {"name": "r", "namespace": ns}, "spec": spec.clone()});
            if let Some(q) = queue {
                v["metadata"]["labels"] = serde_json::json!({"kueue.x-k8s.io/queue-name": q});
            }
            v
        };
        let mut body: Value = serde_json::from_slice(&review(
            "r",
            "UPDATE",
            kind,
            obj(None),
            Some(obj(Some("default"))),
        ))
        .unwrap();
        body["request"]["namespace"] = Value::from(ns);
        let (_, resp) = rt.block_on(
            server
                .client()
                .post("/validate", serde_json::to_vec(&body).unwrap()),
        );
        assert_eq!(resp["response"]["allowed"], false, "{}: {resp}", kind.2);
        assert_eq!(
            resp["response"]["status"]["message"],
            r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": queue-name must not be empty in namespace with default queue"#,
            "{}",
            kind.2
        );
    }
}

/// Kueue v0.19.2 job_webhook_test.go TestDefault "managed by is defaulted:
/// queue label was set" and "no change in managed by: user specified
/// managed by", on the cluster: a Job queued to a LocalQueue whose
/// ClusterQueue has an AdmissionCheck of controller
/// `kueue.x-k8s.io/multikueue` is created with `spec.managedBy:
/// kueue.x-k8s.io/multikueue`, so kube-controller-manager's Job controller
/// leaves it alone; a Job naming another controller, and a Job queued
/// elsewhere, keep theirs. The facts come from the webhook's watches of
/// LocalQueues, ClusterQueues and AdmissionChecks.
fn multikueue_queues_hand_their_jobs_to_multikueue(c: &batchgate_localcluster::LocalCluster) {
    let ns = namespace(c, "e2e-mk-managed-by");
    c.apply(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata: {name: mk-check}\nspec: {controllerName: kueue.x-k8s.io/multikueue}\n",
    )
    .unwrap();
    c.apply(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: mk-cq}\nspec:\n  admissionChecksStrategy: {admissionChecks: [{name: mk-check}]}\n",
    )
    .unwrap();
    c.apply(&format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: mk, namespace: {ns}}}\nspec: {{clusterQueue: mk-cq}}\n"
    ))
    .unwrap();
    c.apply(&format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: plain, namespace: {ns}}}\nspec: {{clusterQueue: cluster-queue}}\n"
    ))
    .unwrap();
    let queued = |name: &str, queue: &str, managed_by: Option<&str>| {
        let mut j: Value = serde_json::from_str(&plain_job(name, &ns)).unwrap();
        j["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue.into();
        if let Some(m) = managed_by {
            j["spec"]["managedBy"] = m.into();
        }
        j.to_string()
    };
    // The watches catch up: dry runs until the MultiKueue queue is seen.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = c
            .kubectl_stdin(
                &["create", "--dry-run=server", "-o", "json", "-f", "-"],
                queued("probe", "mk", None).as_bytes(),
            )
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        if v["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a Job queued to a MultiKueue ClusterQueue never got managedBy: {v}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for (name, queue, given, want) in [
        ("mk-job", "mk", None, "kueue.x-k8s.io/multikueue"),
        (
            "mk-own-controller",
            "mk",
            Some("kubernetes.io/job-controller"),
            "kueue.x-k8s.io/multikueue",
        ),
        ("mk-foo", "mk", Some("example.com/foo"), "example.com/foo"),
        ("plain-job", "plain", None, ""),
    ] {
        let (ok, out, err) = kubectl(c, &["create", "-f", "-"], Some(&queued(name, queue, given)));
        assert!(ok, "{out}{err}");
        let job = get_json(c, &["job", name, "-n", &ns]);
        let got = job["spec"]["managedBy"].as_str().unwrap_or_default();
        assert_eq!(got, want, "{name}: {job}");
        assert_eq!(job["spec"]["suspend"], Value::Bool(true), "{name}: {job}");
    }
}
