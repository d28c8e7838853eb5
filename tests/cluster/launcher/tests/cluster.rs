//! Starts real clusters. The first run builds the binaries (tests/cluster/build.sh),
//! which takes many minutes; after that a cluster starts in seconds.

use std::time::{Duration, Instant};

use batchgate_localcluster::{shared, ClusterOptions, LocalCluster, NodeSpec};
use serde_json::Value;

fn json(cluster: &LocalCluster, args: &[&str]) -> Value {
    let out = cluster.run_kubectl(args).expect("kubectl");
    serde_json::from_str(&out).expect("kubectl JSON output")
}

fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn nodes_are_ready_with_labels_and_capacity_and_a_job_completes() {
    let opts = ClusterOptions {
        nodes: vec![
            NodeSpec::new("cpu-a")
                .cpu("4")
                .memory("16Gi")
                .pods(30)
                .label("pool", "cpu"),
            NodeSpec::new("gpu-a")
                .cpu("32")
                .memory("128Gi")
                .gpus(8)
                .label("pool", "gpu")
                .taint("dedicated", "gpu", "NoSchedule"),
        ],
        ..ClusterOptions::default()
    };
    let started = Instant::now();
    let mut cluster = LocalCluster::start(opts).expect("cluster starts");
    eprintln!(
        "cluster started in {:.2}s: {:?}",
        started.elapsed().as_secs_f64(),
        cluster.timings()
    );

    // `kubectl get nodes` lists both, Ready.
    let table = cluster
        .run_kubectl(&["get", "nodes", "--no-headers"])
        .unwrap();
    for name in ["cpu-a", "gpu-a"] {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("node {name} missing from:\n{table}"));
        assert_eq!(line.split_whitespace().nth(1), Some("Ready"), "{line}");
    }

    let nodes = json(&cluster, &["get", "nodes", "-o", "json"]);
    let node = |name: &str| {
        nodes["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["metadata"]["name"] == name)
            .cloned()
            .unwrap()
    };
    let cpu = node("cpu-a");
    assert_eq!(cpu["metadata"]["labels"]["pool"], "cpu");
    assert_eq!(cpu["metadata"]["labels"]["kubernetes.io/hostname"], "cpu-a");
    assert_eq!(cpu["status"]["allocatable"]["cpu"], "4");
    assert_eq!(cpu["status"]["allocatable"]["memory"], "16Gi");
    assert_eq!(cpu["status"]["allocatable"]["pods"], "30");
    assert!(cpu["status"]["capacity"].get("nvidia.com/gpu").is_none());
    let gpu = node("gpu-a");
    assert_eq!(gpu["metadata"]["labels"]["pool"], "gpu");
    assert_eq!(gpu["status"]["capacity"]["nvidia.com/gpu"], "8");
    assert_eq!(gpu["status"]["allocatable"]["nvidia.com/gpu"], "8");
    let taints = gpu["spec"]["taints"].as_array().unwrap();
    assert!(
        taints
            .iter()
            .any(|t| t["key"] == "dedicated" && t["value"] == "gpu" && t["effect"] == "NoSchedule"),
        "{taints:?}"
    );

    // A plain Job runs to completion on a KWOK node: proves the scheduler
    // (binding), KWOK (pod phases) and the controller-manager (job status).
    let job_started = Instant::now();
    cluster
        .apply(
            r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: hello
  namespace: default
spec:
  completions: 3
  parallelism: 3
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector:
        pool: cpu
      containers:
      - name: main
        image: busybox
        command: ["true"]
        resources:
          requests:
            cpu: 500m
"#,
        )
        .expect("job created");
    cluster
        .run_kubectl(&[
            "wait",
            "--for=condition=Complete",
            "job/hello",
            "-n",
            "default",
            "--timeout=90s",
        ])
        .expect("job completes");
    eprintln!(
        "job completed in {:.2}s",
        job_started.elapsed().as_secs_f64()
    );
    let job = json(
        &cluster,
        &["get", "job", "hello", "-n", "default", "-o", "json"],
    );
    assert_eq!(job["status"]["succeeded"], 3);
    let pods = json(
        &cluster,
        &[
            "get",
            "pods",
            "-n",
            "default",
            "-l",
            "job-name=hello",
            "-o",
            "json",
        ],
    );
    let pods = pods["items"].as_array().unwrap();
    assert_eq!(pods.len(), 3);
    for pod in pods {
        assert_eq!(pod["spec"]["nodeName"], "cpu-a", "{pod}");
        assert_eq!(pod["status"]["phase"], "Succeeded", "{pod}");
    }

    // Deleting the Job removes its pods: the garbage collector runs.
    cluster
        .run_kubectl(&[
            "delete",
            "job",
            "hello",
            "-n",
            "default",
            "--cascade=background",
        ])
        .unwrap();
    wait_for(
        "the job's pods to be collected",
        Duration::from_secs(60),
        || {
            cluster
                .run_kubectl(&[
                    "get",
                    "pods",
                    "-n",
                    "default",
                    "-l",
                    "job-name=hello",
                    "-o",
                    "name",
                ])
                .map(|out| out.trim().is_empty())
                .unwrap_or(false)
        },
    );

    // Teardown leaves nothing behind.
    let pids = cluster.pids();
    let dir = cluster.dir().to_path_buf();
    let stopping = Instant::now();
    cluster.stop();
    eprintln!(
        "cluster stopped in {:.2}s",
        stopping.elapsed().as_secs_f64()
    );
    for (name, pid) in pids {
        assert!(!alive(pid), "{name} (pid {pid}) still running after stop");
    }
    assert!(!dir.exists(), "{} still exists after stop", dir.display());
}

#[test]
fn a_component_that_fails_to_start_is_reported_with_its_log() {
    let err = LocalCluster::start(ClusterOptions {
        nodes: Vec::new(),
        extra_apiserver_args: vec!["--no-such-flag=1".into()],
        ..ClusterOptions::default()
    })
    .expect_err("kube-apiserver rejects the flag");
    let msg = err.to_string();
    assert!(msg.starts_with("kube-apiserver exited"), "{msg}");
    assert!(msg.contains("unknown flag: --no-such-flag"), "{msg}");
}

#[test]
fn shared_cluster_has_the_default_nodes() {
    let cluster = shared();
    let same = shared();
    assert!(std::ptr::eq(cluster, same));
    let names = cluster
        .run_kubectl(&["get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"])
        .unwrap();
    let mut names: Vec<&str> = names.split_whitespace().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["kwok-gpu-0", "kwok-node-0", "kwok-node-1", "kwok-node-2"]
    );
    // The admin is allowed everything; RBAC is on.
    let can = cluster
        .run_kubectl(&["auth", "can-i", "create", "validatingwebhookconfigurations"])
        .unwrap();
    assert_eq!(can.trim(), "yes");
    let denied = cluster.run_kubectl(&[
        "auth",
        "can-i",
        "list",
        "secrets",
        "--as=system:serviceaccount:default:default",
    ]);
    assert!(denied.is_err(), "{denied:?}");
}

#[test]
fn admission_webhooks_are_called_at_loopback_urls() {
    let cluster = shared();
    // Nothing listens on this port, so with failurePolicy Fail every matching
    // request is denied with "failed calling webhook": proof that the
    // ValidatingAdmissionWebhook plugin is on and calls https://127.0.0.1 URLs.
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    cluster
        .apply(&format!(
            r#"
apiVersion: v1
kind: Namespace
metadata:
  name: webhook-probe
  labels:
    webhook-probe: "true"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: webhook-probe
webhooks:
- name: probe.batchgate.test
  clientConfig:
    url: https://127.0.0.1:{closed_port}/validate
    caBundle: {ca}
  rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["configmaps"]
  namespaceSelector:
    matchLabels:
      webhook-probe: "true"
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: ["v1"]
  timeoutSeconds: 5
"#,
            ca = base64(cluster.ca_cert_pem().as_bytes())
        ))
        .expect("webhook configuration applied");
    let mut last = String::new();
    wait_for("the webhook to be called", Duration::from_secs(30), || {
        match cluster.run_kubectl(&["create", "configmap", "probe", "-n", "webhook-probe"]) {
            Ok(_) => {
                // Created before the apiserver saw the configuration; retry.
                let _ =
                    cluster.run_kubectl(&["delete", "configmap", "probe", "-n", "webhook-probe"]);
                false
            }
            Err(e) => {
                last = e.to_string();
                last.contains("failed calling webhook")
            }
        }
    });
    assert!(last.contains(&format!("127.0.0.1:{closed_port}")), "{last}");
    assert!(last.contains("connection refused"), "{last}");
    cluster
        .run_kubectl(&["delete", "validatingwebhookconfiguration", "webhook-probe"])
        .unwrap();
    cluster
        .run_kubectl(&["delete", "namespace", "webhook-probe", "--wait=false"])
        .unwrap();
}

/// Standard base64 (for a caBundle), to avoid a dependency.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// True while `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}
