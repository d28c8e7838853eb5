//! MultiKueue's cost, batchgate on three local control planes (a manager
//! and two workers with KWOK nodes, each with its own batchgate): N Jobs
//! queued on the manager are dispatched (AllAtOnce: a copy on both
//! workers, the first to admit keeps it), run on a worker and finished on
//! the manager.
//!
//!     cargo bench --bench multikueue_dispatch                  # 1,000 Jobs
//!     MK_BENCH_JOBS=200 cargo bench --bench multikueue_dispatch
//!
//! Measured: the dispatch latency of each Workload (first seen by the
//! bench's watch → its MultiKueue check Ready, i.e. admitted on a worker
//! with the job created there) and its time to Finished on the manager,
//! as percentiles; and each apiserver's own `apiserver_request_total`
//! (non-watch) and `apiserver_response_sizes` (bytes it sent) per
//! dispatched Workload, by verb and resource, scraped before the Jobs are
//! created and once every Workload has finished. Every client of an
//! apiserver is counted (on a worker the Job controller, the scheduler and
//! KWOK make the pods); the rows say which resource. The bench's own
//! Job creates are the manager's `POST jobs` row. The load average and the
//! CPU model are printed with the result.
//!
//! Not measured here: the same work done by Kueue's MultiKueue manager and
//! workers side by side (see BENCHMARKS.md).
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a smoke of
//! 3 Jobs and checks that each finished on the manager.

#[path = "support/crds.rs"]
mod crds;
#[path = "support/process.rs"]
mod process;

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use batchgate::api::kueue::v1beta2::Workload;
use batchgate_localcluster::{ClusterOptions, LocalCluster};
use futures::StreamExt;
use kube::{
    runtime::{watcher, WatchStreamExt},
    Api, Client,
};
use serde_json::json;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const BIN: &str = env!("CARGO_BIN_EXE_batchgate");
const NS: &str = "mk-bench";
use batchgate_localcluster::POD_RUNTIME_ANNOTATION as POD_RUNTIME;

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    if let Err(e) = run(smoke) {
        eprintln!("multikueue_dispatch: {e}");
        std::process::exit(1);
    }
}

fn kubectl(c: &LocalCluster, args: &[&str], stdin: Option<&str>) -> Result<String, BoxError> {
    let mut cmd = c.kubectl();
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    if let (Some(s), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(s.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(format!(
            "kubectl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn apply(c: &LocalCluster, v: serde_json::Value) -> Result<(), BoxError> {
    kubectl(c, &["apply", "-f", "-"], Some(&v.to_string())).map(|_| ())
}

/// batchgate against `c`, without its webhooks registered (the Jobs are
/// created queued and handed to MultiKueue as the webhook would leave
/// them); returns once its queueing engine is up.
fn batchgate(c: &LocalCluster, dir: &Path, config: &str) -> Result<Child, BoxError> {
    std::fs::create_dir_all(dir)?;
    let certs = dir.join("certs");
    let st = Command::new(BIN)
        .args(["certs", "--out"])
        .arg(&certs)
        .stderr(Stdio::null())
        .status()?;
    if !st.success() {
        return Err("batchgate certs failed".into());
    }
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, format!("namespace: default\n{config}"))?;
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--cert-dir"])
        .arg(&certs)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--probe-listen",
            "127.0.0.1:0",
            "--visibility-listen",
            "127.0.0.1:0",
            "--config",
        ])
        .arg(&cfg)
        .env("KUBECONFIG", c.kubeconfig())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    process::die_with_parent(&mut cmd);
    let mut child = cmd.spawn()?;
    let err = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let log = dir.join("batchgate.log");
    std::thread::spawn(move || {
        let mut f = std::fs::File::create(log).ok();
        let mut told = false;
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(f) = f.as_mut() {
                let _ = writeln!(f, "{line}");
            }
            if !told && line.contains("queueing engine rebuilt") {
                told = true;
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(120))
        .map_err(|_| format!("batchgate did not start; see {}", dir.display()))?;
    Ok(child)
}

fn queues(c: &LocalCluster, check: Option<&str>) -> Result<(), BoxError> {
    kubectl(c, &["create", "namespace", NS], None)?;
    apply(
        c,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
               "metadata": {"name": "mk-flavor"}}),
    )?;
    let mut spec = json!({"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
        "flavors": [{"name": "mk-flavor", "resources": [{"name": "cpu", "nominalQuota": "1000"}]}]}]});
    if let Some(ac) = check {
        spec["admissionChecksStrategy"] = json!({"admissionChecks": [{"name": ac}]});
    }
    apply(
        c,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
               "metadata": {"name": "mk-cq"}, "spec": spec}),
    )?;
    apply(
        c,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "mk-lq", "namespace": NS}, "spec": {"clusterQueue": "mk-cq"}}),
    )
}

fn label<'a>(labels: &'a str, name: &str) -> &'a str {
    labels
        .split(',')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=\"")))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or("")
}

/// (verb, resource, subresource) → (requests, bytes sent), non-watch.
type Requests = BTreeMap<(String, String, String), (f64, f64)>;

fn scrape(c: &LocalCluster) -> Result<Requests, BoxError> {
    let text = c.run_kubectl(&["get", "--raw", "/metrics"])?;
    let mut out = Requests::new();
    for line in text.lines() {
        let (which, rest) = if let Some(r) = line.strip_prefix("apiserver_request_total{") {
            (0, r)
        } else if let Some(r) = line.strip_prefix("apiserver_response_sizes_sum{") {
            (1, r)
        } else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(v) = value.trim().parse::<f64>() else {
            continue;
        };
        let verb = label(labels, "verb");
        let resource = label(labels, "resource");
        if verb == "WATCH" || verb == "CONNECT" || resource.is_empty() {
            continue;
        }
        let key = (
            verb.to_string(),
            resource.to_string(),
            label(labels, "subresource").to_string(),
        );
        let e = out.entry(key).or_default();
        if which == 0 {
            e.0 += v;
        } else {
            e.1 += v;
        }
    }
    Ok(out)
}

fn delta(before: &Requests, after: &Requests) -> Requests {
    after
        .iter()
        .map(|(k, (n, b))| {
            let (n0, b0) = before.get(k).copied().unwrap_or_default();
            (k.clone(), (n - n0, b - b0))
        })
        .filter(|(_, (n, _))| *n > 0.0)
        .collect()
}

fn print_requests(what: &str, d: &Requests, per: f64) {
    let (n, b): (f64, f64) = d.values().fold((0.0, 0.0), |a, v| (a.0 + v.0, a.1 + v.1));
    println!(
        "{what}: {:.2} requests and {:.1} KiB sent per dispatched Workload",
        n / per,
        b / per / 1024.0
    );
    for ((verb, resource, sub), (n, b)) in d {
        let res = if sub.is_empty() {
            resource.clone()
        } else {
            format!("{resource}/{sub}")
        };
        println!(
            "    {verb:<6} {res:<24} {:>7.2}  {:>8.1} KiB",
            n / per,
            b / per / 1024.0
        );
    }
}

fn percentiles(mut v: Vec<f64>) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.sort_by(f64::total_cmp);
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    format!(
        "p50 {:.2} s, p90 {:.2} s, p99 {:.2} s, max {:.2} s",
        at(0.5),
        at(0.9),
        at(0.99),
        v[v.len() - 1]
    )
}

fn kube_client(c: &LocalCluster) -> Result<Client, BoxError> {
    let rt = tokio::runtime::Handle::current();
    let kubeconfig = kube::config::Kubeconfig::read_from(c.kubeconfig())?;
    let config = rt.block_on(kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    ))?;
    Ok(Client::try_from(config)?)
}

fn run(smoke: bool) -> Result<(), BoxError> {
    let n: usize = if smoke {
        3
    } else {
        std::env::var("MK_BENCH_JOBS")
            .ok()
            .map(|v| v.parse())
            .transpose()?
            .unwrap_or(1000)
    };
    let rt = tokio::runtime::Runtime::new()?;
    let _guard = rt.enter();
    let work = tempfile::tempdir()?;
    let starting: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(|| LocalCluster::start(ClusterOptions::default())))
        .collect();
    let mut clusters = Vec::new();
    for s in starting {
        clusters.push(s.join().map_err(|_| "a control plane panicked")??);
    }
    let (manager, workers) = clusters.split_first().ok_or("no clusters")?;
    let crds = crds::without_conversion_webhook(manager.dir())?;
    let crds = crds.display().to_string();
    for c in &clusters {
        kubectl(c, &["apply", "-f", &crds], None)?;
        c.wait_established(
            &[
                "crd/workloads.kueue.x-k8s.io",
                "crd/multikueueclusters.kueue.x-k8s.io",
            ],
            Duration::from_secs(120),
        )?;
    }
    let mut children = Vec::new();
    for (i, w) in workers.iter().enumerate() {
        children.push(batchgate(
            w,
            &work.path().join(format!("worker{}", i + 1)),
            "",
        )?);
        queues(w, None)?;
    }
    children.push(batchgate(
        manager,
        &work.path().join("manager"),
        "multiKueue:\n  gcInterval: 1m\n",
    )?);
    let names = ["worker1", "worker2"];
    for (name, w) in names.iter().zip(workers) {
        let kc = kubectl(
            w,
            &["config", "view", "--raw", "--flatten", "--minify"],
            None,
        )?;
        apply(
            manager,
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": name, "namespace": "default"},
                   "stringData": {"kubeconfig": kc}}),
        )?;
        apply(
            manager,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
                   "metadata": {"name": name},
                   "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": name}}}}),
        )?;
    }
    apply(
        manager,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
               "metadata": {"name": "mk"}, "spec": {"clusters": names}}),
    )?;
    apply(
        manager,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
               "metadata": {"name": "mk"},
               "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk"}}}),
    )?;
    queues(manager, Some("mk"))?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = kubectl(
            manager,
            &[
                "get",
                "admissioncheck",
                "mk",
                "-o",
                "jsonpath={.status.conditions[0].status}",
            ],
            None,
        )?;
        if out == "True" {
            break;
        }
        if Instant::now() > deadline {
            return Err("the MultiKueue check never turned Active".into());
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    // The manager's Workloads, followed from now on.
    let api = Api::<Workload>::namespaced(kube_client(manager)?, NS);
    let (tx, rx) = std::sync::mpsc::channel::<(String, &'static str, Instant)>();
    // Aborted before the clusters go (dropped first): a watch retrying a
    // stopped apiserver can keep a worker thread busy and hold the
    // runtime's shutdown.
    let _watch = AbortOnDrop(rt.spawn(async move {
        let mut events = std::pin::pin!(watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects());
        while let Some(ev) = events.next().await {
            let Ok(wl) = ev else { continue };
            let name = wl.metadata.name.clone().unwrap_or_default();
            let now = Instant::now();
            let _ = tx.send((name.clone(), "seen", now));
            let st = wl.status.as_ref();
            let ready = st
                .and_then(|s| s.admission_checks.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.state == "Ready"));
            if ready {
                let _ = tx.send((name.clone(), "ready", now));
            }
            let finished = st.and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Finished" && c.status == "True")
            });
            if finished {
                let _ = tx.send((name, "finished", now));
            }
        }
    }));

    let before: Vec<Requests> = clusters.iter().map(scrape).collect::<Result<_, _>>()?;
    let load_before = process::loadavg();
    let jobs: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": format!("mk-{i:04}"), "namespace": NS,
                             "labels": {"kueue.x-k8s.io/queue-name": "mk-lq"}},
                "spec": {"suspend": true, "managedBy": "kueue.x-k8s.io/multikueue",
                         "parallelism": 1, "completions": 1,
                         "template": {"metadata": {"annotations": {POD_RUNTIME: "1s"}},
                            "spec": {"restartPolicy": "Never",
                                     "containers": [{"name": "c", "image": "busybox",
                                        "resources": {"requests": {"cpu": "100m"}}}]}}}})
        })
        .collect();
    let start = Instant::now();
    kubectl(
        manager,
        &["create", "-f", "-"],
        Some(&json!({"apiVersion": "v1", "kind": "List", "items": jobs}).to_string()),
    )?;
    let created = start.elapsed();

    let mut seen: BTreeMap<String, Instant> = BTreeMap::new();
    let mut ready: BTreeMap<String, Instant> = BTreeMap::new();
    let mut finished: BTreeMap<String, Instant> = BTreeMap::new();
    let timeout = Duration::from_secs(if smoke { 180 } else { 600 + n as u64 });
    while finished.len() < n {
        let left = timeout.saturating_sub(start.elapsed());
        let Ok((name, what, at)) = rx.recv_timeout(left) else {
            return Err(format!(
                "{} of {n} Workloads finished within {} s ({} dispatched)",
                finished.len(),
                timeout.as_secs(),
                ready.len()
            )
            .into());
        };
        let map = match what {
            "seen" => &mut seen,
            "ready" => &mut ready,
            _ => &mut finished,
        };
        map.entry(name).or_insert(at);
    }
    let wall = start.elapsed();
    let after: Vec<Requests> = clusters.iter().map(scrape).collect::<Result<_, _>>()?;
    let load_after = process::loadavg();

    let since = |m: &BTreeMap<String, Instant>| -> Vec<f64> {
        m.iter()
            .filter_map(|(k, t)| seen.get(k).map(|s| t.duration_since(*s).as_secs_f64()))
            .collect()
    };
    println!(
        "multikueue_dispatch: {n} Jobs over 2 workers (AllAtOnce), batchgate {}",
        env!("CARGO_PKG_VERSION")
    );
    println!(
        "machine: {} ({} cores), load before {load_before}, after {load_after}",
        process::cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "wall: {:.1} s (the {n} creates took {:.1} s); all {} finished on the manager",
        wall.as_secs_f64(),
        created.as_secs_f64(),
        finished.len()
    );
    println!(
        "dispatch latency (seen → check Ready): {}",
        percentiles(since(&ready))
    );
    println!(
        "to Finished on the manager: {}",
        percentiles(since(&finished))
    );
    let per = n as f64;
    print_requests("manager", &delta(&before[0], &after[0]), per);
    for (i, name) in names.iter().enumerate() {
        print_requests(name, &delta(&before[i + 1], &after[i + 1]), per);
    }
    if smoke && finished.len() != n {
        return Err("the smoke's Jobs did not all finish".into());
    }
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    Ok(())
}
