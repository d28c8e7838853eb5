//! End-to-end helpers for the queueing tests: one batchgate (webhook and
//! reconciler) per test binary on the shared local cluster, Kueue objects,
//! Jobs that run for a while on KWOK nodes, and polling.

use std::{
    io::Write,
    sync::OnceLock,
    time::{Duration, Instant},
};

use batchgate_localcluster::{shared, LocalCluster, POD_RUNTIME_ANNOTATION};
use serde_json::{json, Value};

use super::{e2e::*, Server};

pub struct Env {
    pub cluster: &'static LocalCluster,
    pub server: Server,
}

/// The cluster with Kueue's CRDs and batchgate running against it.
static ENV: OnceLock<Env> = OnceLock::new();

pub fn env() -> &'static Env {
    env_with("")
}

/// [`env`] with more configuration for batchgate (see [`start_with`]); the
/// first call in a test binary decides it, so every test of a binary
/// passes the same.
pub fn env_with(extra: &str) -> &'static Env {
    ENV.get_or_init(|| {
        let c = shared();
        install_crds(c);
        let server = start_with(c, extra);
        let probe_ns = namespace(c, "e2e-probe");
        wait_webhook_active(c, &probe_ns);
        Env { cluster: c, server }
    })
}

pub fn install_crds(c: &LocalCluster) {
    let root = env!("CARGO_MANIFEST_DIR");
    let (ok, out, err) = kubectl(c, &["apply", "-f", &format!("{root}/manifests/crds")], None);
    assert!(ok, "{out}{err}");
    // A CRD just created may have no conditions yet for `kubectl wait` to read.
    c.wait_established(
        &[
            "crd/workloads.kueue.x-k8s.io",
            "crd/clusterqueues.kueue.x-k8s.io",
            "crd/localqueues.kueue.x-k8s.io",
            "crd/resourceflavors.kueue.x-k8s.io",
            "crd/topologies.kueue.x-k8s.io",
            "crd/workloadpriorityclasses.kueue.x-k8s.io",
            "crd/admissionchecks.kueue.x-k8s.io",
            "crd/appwrappers.workload.codeflare.dev",
        ],
        Duration::from_secs(120),
    )
    .unwrap();
}

// ---- Topology-aware scheduling ----

/// The node label of a TAS test's pool, and the taint that keeps every
/// other test's pods off its nodes (its flavor tolerates it).
pub const TAS_POOL: &str = "e2e.batchgate.dev/tas-pool";
pub const TAS_BLOCK: &str = "e2e.batchgate.dev/block";
pub const TAS_RACK: &str = "e2e.batchgate.dev/rack";

/// A KWOK node of 4 cpu in `pool`, labelled with its block and rack,
/// tainted for the pool.
pub fn tas_node(name: &str, pool: &str, block: &str, rack: &str) -> String {
    let capacity = json!({"cpu": "4", "memory": "8Gi", "pods": "20"});
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "type": "kwok",
                       TAS_POOL: pool, TAS_BLOCK: block, TAS_RACK: rack},
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"taints": [{"key": TAS_POOL, "value": pool, "effect": "NoSchedule"}]},
        "status": {"capacity": capacity, "allocatable": capacity}})
    .to_string()
}

/// A Topology of block / rack / hostname.
pub fn tas_topology(name: &str) -> String {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": TAS_BLOCK}, {"nodeLabel": TAS_RACK},
                            {"nodeLabel": "kubernetes.io/hostname"}]}})
    .to_string()
}

/// A TAS flavor over `pool`'s nodes, tolerating their taint.
pub fn tas_flavor(name: &str, pool: &str, topology: &str) -> String {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {TAS_POOL: pool}, "topologyName": topology,
                 "tolerations": [{"key": TAS_POOL, "operator": "Equal", "value": pool,
                                  "effect": "NoSchedule"}]}})
    .to_string()
}

/// Eight Ready KWOK nodes `{prefix}-{block}{rack}{n}` in pool `pool`: two
/// blocks of two racks of two nodes; node name → rack.
pub fn tas_nodes(
    c: &LocalCluster,
    prefix: &str,
    pool: &str,
) -> std::collections::BTreeMap<String, String> {
    let mut racks = std::collections::BTreeMap::new();
    for (b, block) in ["b1", "b2"].iter().enumerate() {
        for r in 0..2 {
            let rack = format!("{block}-r{r}");
            for n in 0..2 {
                let name = format!("{prefix}-{b}{r}{n}");
                apply(c, &tas_node(&name, pool, block, &rack));
                racks.insert(name, rack.clone());
            }
        }
    }
    for n in racks.keys() {
        wait_for(Duration::from_secs(120), "the TAS node Ready", || {
            get(c, &["node", n]).filter(|node| is_true(node, "Ready"))
        });
    }
    racks
}

/// The pods matching `selector` once `n` are bound to nodes.
pub fn bound_pods(c: &LocalCluster, ns: &str, selector: &str, n: usize) -> Vec<Value> {
    wait_for(
        Duration::from_secs(120),
        &format!("{n} pods ({selector}) bound to nodes"),
        || {
            let list = get(c, &["pods", "-n", ns, "-l", selector])?;
            let items = list["items"].as_array()?.clone();
            (items.len() == n && items.iter().all(|p| p["spec"]["nodeName"].is_string()))
                .then_some(items)
        },
    )
}

/// The job kinds' test CRDs (tests/fixtures), once per binary; no
/// operator for them runs.
pub fn install_kind_crds(c: &LocalCluster) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let file = format!(
            "{}/tests/fixtures/job-kinds-crds.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let (ok, out, err) = kubectl(c, &["apply", "-f", &file], None);
        assert!(ok, "{out}{err}");
        c.wait_established(
            &["crd/jobsets.jobset.x-k8s.io", "crd/mpijobs.kubeflow.org"],
            Duration::from_secs(120),
        )
        .unwrap();
    });
}

/// A batchgate for the whole test binary, registered as the webhook. Its
/// reconciler lease is Kueue's default (15 s, renewed within 10 s): with a
/// 6 s lease one slow apiserver answer on a loaded CI machine made it exit
/// (as a holder must), and every later test of the binary failed; a test
/// that kills and restarts it waits up to 15 s for the Lease instead.
pub fn start(c: &'static LocalCluster) -> Server {
    start_with(c, "")
}

/// [`start`] with more configuration (YAML lines appended to the test
/// configuration, e.g. `integrations.frameworks`); the webhooks registered
/// are those it enables.
pub fn start_with(c: &'static LocalCluster, extra: &str) -> Server {
    let kubeconfig = c.kubeconfig().to_path_buf();
    let dir = tempfile::tempdir().unwrap().keep();
    let cfg = dir.join("config.yaml");
    std::fs::write(
        &cfg,
        // Kueue's optional ClusterQueue resource metrics on, for
        // e2e_queueing's metrics test.
        format!("namespace: default\nreconciler:\n  leaseDurationSeconds: 15\nmetrics:\n  enableClusterQueueResources: true\n{extra}"),
    )
    .unwrap();
    let server_cfg = cfg.clone();
    let server = Server::start_forever(move || {
        Server::start_in_cluster(
            &kubeconfig,
            None,
            &["--config", server_cfg.to_str().unwrap()],
        )
    });
    server.wait_ready(Duration::from_secs(60));
    register_with(
        c,
        server.addr,
        Some(&server.cert_dir.join("ca.crt")),
        "Fail",
        Some(&cfg),
    );
    if let Some(addr) = server.visibility {
        register_visibility(c, addr);
    }
    server
}

/// Registers batchgate's visibility API with the shipped APIServices
/// (manifests/apiservices.yaml) behind an ExternalName Service to
/// `localhost` on the test server's port (the apiserver routes to a
/// Service's clusterIP, which nothing on this host answers; an ExternalName
/// it dials by name), and waits until the aggregator finds it available.
pub fn register_visibility(c: &LocalCluster, addr: std::net::SocketAddr) {
    if let Err(e) = batchgate::cli::dev::register_visibility(c, addr.port()) {
        panic!("the visibility APIServices did not become available: {e:#}");
    }
}

pub fn apply(c: &LocalCluster, yaml: &str) {
    let (ok, out, err) = kubectl(c, &["apply", "-f", "-"], Some(yaml));
    assert!(ok, "{out}{err}\n{yaml}");
}

pub fn flavor(name: &str, node_labels: Value) -> String {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
           "metadata": {"name": name}, "spec": {"nodeLabels": node_labels}})
    .to_string()
}

/// A ClusterQueue covering cpu with the given flavors (name, nominal,
/// borrowingLimit) and extra spec fields.
pub fn cluster_queue(name: &str, flavors: &[(&str, &str, Option<&str>)], extra: Value) -> String {
    let flavors: Vec<Value> = flavors
        .iter()
        .map(|(f, nominal, borrow)| {
            let mut r = json!({"name": "cpu", "nominalQuota": nominal});
            if let Some(b) = borrow {
                r["borrowingLimit"] = json!(b);
            }
            json!({"name": f, "resources": [r]})
        })
        .collect();
    let mut spec = json!({
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
    });
    if let (Value::Object(s), Value::Object(e)) = (&mut spec, extra) {
        s.extend(e);
    }
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
           "metadata": {"name": name}, "spec": spec})
    .to_string()
}

pub fn local_queue(ns: &str, name: &str, cq: &str) -> String {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
           "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}})
    .to_string()
}

/// A queued Job of one pod asking for `cpu`, whose pod runs `runtime` on a
/// KWOK node before it completes.
pub fn job(name: &str, ns: &str, queue: &str, cpu: &str, runtime: &str, labels: Value) -> String {
    let mut l = json!({"kueue.x-k8s.io/queue-name": queue});
    if let (Value::Object(m), Value::Object(extra)) = (&mut l, labels) {
        m.extend(extra);
    }
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": l},
        "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                 "template": {
                    "metadata": {"annotations": {POD_RUNTIME_ANNOTATION: runtime}},
                    "spec": {"restartPolicy": "Never",
                             "containers": [{"name": "main", "image": "busybox", "command": ["true"],
                                             "resources": {"requests": {"cpu": cpu}}}]}}}
    })
    .to_string()
}

pub fn create(c: &LocalCluster, manifest: &str) {
    let (ok, out, err) = kubectl(c, &["create", "-f", "-"], Some(manifest));
    assert!(ok, "{out}{err}");
}

/// Polls `f` every 200 ms until it gives `Some`, or panics with `what`.
pub fn wait_for<T>(within: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() >= deadline {
            // What batchgate said is the first thing to read when this fails.
            if let Some(e) = ENV.get() {
                let log = e.server.stderr.lock().unwrap().clone();
                eprintln!("batchgate log (last lines):");
                for l in super::last_lines(&log, 80) {
                    eprintln!("{l}");
                }
            }
            panic!("timed out waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn get(c: &LocalCluster, args: &[&str]) -> Option<Value> {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend(["-o", "json"]);
    let (ok, out, _) = kubectl(c, &a, None);
    ok.then(|| serde_json::from_str(&out).ok()).flatten()
}

/// The Workload a job owns.
pub fn workload_of(c: &LocalCluster, ns: &str, job: &str) -> Option<Value> {
    let list = get(c, &["workloads.kueue.x-k8s.io", "-n", ns])?;
    list["items"]
        .as_array()?
        .iter()
        .find(|w| w["metadata"]["ownerReferences"][0]["name"] == job)
        .cloned()
}

pub fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

pub fn is_true(obj: &Value, ty: &str) -> bool {
    condition(obj, ty).is_some_and(|c| c["status"] == "True")
}

/// `(pending, reserving, admitted, cpu in use)` of a ClusterQueue.
pub fn cq_counts(c: &LocalCluster, name: &str) -> Option<(i64, i64, i64, String)> {
    let cq = get(c, &["clusterqueue", name])?;
    let s = &cq["status"];
    let used = s["flavorsUsage"]
        .as_array()
        .and_then(|f| {
            f.iter()
                .flat_map(|f| f["resources"].as_array().cloned().unwrap_or_default())
                .find(|r| r["name"] == "cpu")
        })
        .and_then(|r| r["total"].as_str().map(String::from))
        .unwrap_or_default();
    Some((
        s["pendingWorkloads"].as_i64()?,
        s["reservingWorkloads"].as_i64()?,
        s["admittedWorkloads"].as_i64()?,
        used,
    ))
}

/// Jobs of a namespace: (name, suspended, succeeded).
pub fn jobs(c: &LocalCluster, ns: &str) -> Vec<(String, bool, bool)> {
    let list = get(c, &["jobs", "-n", ns]).unwrap_or(Value::Null);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|j| {
            (
                j["metadata"]["name"].as_str().unwrap_or("").to_string(),
                j["spec"]["suspend"] == true,
                j["status"]["succeeded"].as_i64().unwrap_or(0) > 0,
            )
        })
        .collect()
}

/// A sample's value from Prometheus text: the first `name` series whose
/// labels include every pair of `labels`.
pub fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|l| {
        let (series, value) = l.rsplit_once(' ')?;
        let (n, set) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.strip_suffix('}')?),
            None => (series, ""),
        };
        let has = |k: &str, v: &str| {
            set.split("\",").any(|kv| {
                kv.split_once('=')
                    .is_some_and(|(key, val)| key == k && val.trim_matches('"') == v)
            })
        };
        (n == name && labels.iter().all(|(k, v)| has(k, v)))
            .then(|| match value {
                "inf" | "+Inf" => Some(f64::INFINITY),
                v => v.parse().ok(),
            })
            .flatten()
    })
}

// ---- MultiKueue ----

/// `kubectl config view --raw --flatten --minify` of the worker: its
/// admin kubeconfig with the CA and client certificate embedded, as Kueue
/// requires (no file paths).
pub fn embedded_kubeconfig(worker: &LocalCluster) -> String {
    let out = std::process::Command::new("kubectl")
        .args([
            "config",
            "view",
            "--raw",
            "--flatten",
            "--minify",
            "--kubeconfig",
        ])
        .arg(worker.kubeconfig())
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A Secret in batchgate's namespace (`default` in the tests) holding
/// `kubeconfig`.
pub fn kubeconfig_secret(name: &str, kubeconfig: &str) -> String {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "namespace": "default"},
           "stringData": {"kubeconfig": kubeconfig}})
    .to_string()
}

pub fn mk_cluster(name: &str, secret: &str) -> String {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
           "metadata": {"name": name},
           "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}}})
    .to_string()
}

// ---- kubectl kueue ----

/// `kubectl-kueue --kubeconfig ... ARGS` with `stdin`: (success, stdout,
/// stderr).
pub fn plugin(c: &LocalCluster, args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-kueue"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kubectl kueue -n NS explain ARGS...`: (success, stdout, stderr).
pub fn explain(c: &LocalCluster, ns: &str, args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["-n", ns, "explain"];
    all.extend_from_slice(args);
    plugin(c, &all, "")
}

pub fn explained(c: &LocalCluster, ns: &str, wl: &str) -> Option<Value> {
    let (ok, out, _) = explain(c, ns, &["workload", wl, "-o", "json"]);
    ok.then(|| serde_json::from_str(&out).ok()).flatten()
}

pub fn summary(x: &Value) -> String {
    x["summary"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}
