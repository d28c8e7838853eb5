//! Load generator: `kubectl-kueue list workload -A` over 15,000 Workloads on
//! the local control plane, end to end (process start, kubeconfig, every
//! page, the LocalQueues, the positions (Kueue's visibility API), owner discovery, the
//! table), timed over several runs, with each run's max RSS; side by side
//! with upstream kueuectl (built by `tests/cluster/kueue/build.sh
//! kueuectl`) on the same objects, runs alternated B U U B B U U B ...
//!
//!     tests/cluster/kueue/build.sh kueuectl   # upstream, once
//!     cargo bench --bench kueuectl_list
//!     BATCHGATE_BENCH_WORKLOADS=2000 cargo bench --bench kueuectl_list   # smaller
//!
//! What runs: a private `LocalCluster` without nodes, Kueue's CRDs, one
//! ResourceFlavor and ClusterQueue (quota for 10% of the Workloads), 10
//! namespaces with a LocalQueue each, and `batchgate serve` (the binary
//! cargo built for this bench) as the reconciler, so the Workloads are a
//! mix of admitted and pending and the pending ones get their positions
//! served by the real queueing engine through Kueue's visibility API
//! (registered as shipped, behind an ExternalName Service). The Workloads are created
//! directly (64 concurrent creates); each is owned by its namespace's
//! LocalQueue (an owner that exists, so the garbage collector leaves them,
//! and one more apiVersion for the plugin's owner discovery). Timing starts
//! once the visibility API lists every pending Workload.
//!
//! Knobs: BATCHGATE_BENCH_WORKLOADS [15000], BATCHGATE_BENCH_RUNS [8] (per
//! plugin), BATCHGATE_BENCH_BIN / BATCHGATE_BENCH_PLUGIN (default: cargo's
//! builds), BATCHGATE_BENCH_UPSTREAM (upstream kueuectl; default
//! `~/.cache/batchgate/kueue/v0.17.1/kubectl-kueue`, skipped when absent),
//! KUEUECTL_LIST_REQUEST_LIMIT (both plugins' page size, default 100).
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a smoke
//! version with 200 Workloads and one run.

use std::{
    io::{BufRead, BufReader, Write},
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use batchgate_localcluster::{ClusterOptions, LocalCluster};
use futures::StreamExt;
use kube::{
    api::{DynamicObject, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
    core::{ApiResource, GroupVersionKind},
    Api, Client, Config,
};
use serde_json::json;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const NAMESPACES: usize = 10;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bin(var: &str, built: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(|| PathBuf::from(built), PathBuf::from)
}

/// `batchgate serve` as the reconciler, and the address of its visibility
/// API listener (it prints it on stdout).
fn start_batchgate(
    bin: &Path,
    cluster: &LocalCluster,
    dir: &Path,
) -> Result<(Child, SocketAddr), BoxError> {
    let cert_dir = dir.join("certs");
    let status = Command::new(bin)
        .args(["certs", "--out"])
        .arg(&cert_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("batchgate certs failed: {status}").into());
    }
    let cfg = dir.join("config.yaml");
    std::fs::write(
        &cfg,
        "namespace: default\nreconciler:\n  leaseDurationSeconds: 15\n",
    )?;
    let mut cmd = Command::new(bin);
    cmd.args(["serve", "--cert-dir"])
        .arg(&cert_dir)
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
        .env("KUBECONFIG", cluster.kubeconfig())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    let mut child = cmd.spawn()?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let mut log = std::fs::File::create(dir.join("batchgate.log"))?;
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = writeln!(log, "{line}");
        }
    });
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(a) = line.strip_prefix("visibility API listening on https://") {
                let _ = tx.send(a.trim().to_string());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .map_err(|_| "batchgate did not report its visibility API address")?
        .parse()?;
    Ok((child, addr))
}

fn workload(ns: &str, i: usize, owner_uid: &str) -> serde_json::Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": format!("wl-{i:05}"), "namespace": ns,
            "ownerReferences": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                 "name": "lq", "uid": owner_uid}]},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}
    })
}

/// Pending Workloads the visibility API lists for ClusterQueue `cq`.
fn positions(cluster: &LocalCluster) -> Result<usize, BoxError> {
    let out = cluster.run_kubectl(&[
        "get",
        "--raw",
        "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads?limit=100000",
    ])?;
    let v: serde_json::Value = serde_json::from_str(&out)?;
    Ok(v["items"].as_array().map_or(0, Vec::len))
}

/// One plugin run: wall time from spawn to exit, its stdout, and its max
/// RSS: VmHWM sampled every 2 ms until it exits (not the rusage of wait4,
/// which on Linux also counts the memory of the forking bench before exec).
struct Run {
    secs: f64,
    stdout: Vec<u8>,
    max_rss_kib: u64,
}

fn list_once(bin: &Path, kubeconfig: &Path) -> Result<Run, BoxError> {
    use std::io::Read;
    let t = Instant::now();
    let mut child = Command::new(bin)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["list", "workload", "-A"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let mut out = child.stdout.take().ok_or("no stdout")?;
    let mut err = child.stderr.take().ok_or("no stderr")?;
    let stdout = std::thread::spawn(move || {
        let mut b = Vec::new();
        out.read_to_end(&mut b).map(|_| b)
    });
    let stderr = std::thread::spawn(move || {
        let mut b = Vec::new();
        err.read_to_end(&mut b).map(|_| b)
    });
    let mut max_rss_kib = 0;
    let status = loop {
        if let Some(hwm) = status_kib(pid, "VmHWM:") {
            max_rss_kib = max_rss_kib.max(hwm);
        }
        if let Some(st) = child.try_wait()? {
            break st;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let secs = t.elapsed().as_secs_f64();
    let stdout = stdout.join().map_err(|_| "stdout reader panicked")??;
    let stderr = stderr.join().map_err(|_| "stderr reader panicked")??;
    if !status.success() {
        return Err(format!(
            "{} list failed ({status}): {}",
            bin.display(),
            String::from_utf8_lossy(&stderr)
        )
        .into());
    }
    Ok(Run {
        secs,
        stdout,
        max_rss_kib,
    })
}

#[path = "support/crds.rs"]
mod crds;
#[path = "support/process.rs"]
mod process;
use process::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("kueuectl_list: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), BoxError> {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let total: usize = if smoke {
        200
    } else {
        env_or("BATCHGATE_BENCH_WORKLOADS", 15_000)
    };
    let runs: usize = if smoke {
        1
    } else {
        env_or("BATCHGATE_BENCH_RUNS", 8)
    };
    let admitted = (total / 10).max(1);
    let batchgate = bin("BATCHGATE_BENCH_BIN", env!("CARGO_BIN_EXE_batchgate"));
    let plugin = bin(
        "BATCHGATE_BENCH_PLUGIN",
        env!("CARGO_BIN_EXE_kubectl-kueue"),
    );
    let upstream = std::env::var_os("BATCHGATE_BENCH_UPSTREAM")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/batchgate/kueue/v0.17.1/kubectl-kueue"))
        })
        .filter(|p| p.is_file() && !smoke);
    match &upstream {
        Some(u) => println!("  upstream kueuectl: {}", u.display()),
        None => println!(
            "  upstream kueuectl: absent (tests/cluster/kueue/build.sh kueuectl builds it)"
        ),
    }
    println!("kueuectl_list: {total} Workloads in {NAMESPACES} namespaces, quota for {admitted}, {runs} runs");

    let t = Instant::now();
    let cluster = LocalCluster::start(ClusterOptions {
        nodes: Vec::new(),
        ..ClusterOptions::default()
    })?;
    println!("  local cluster up in {:.1} s", t.elapsed().as_secs_f64());
    let crds = crds::without_conversion_webhook(cluster.dir())?;
    cluster.run_kubectl(&["apply", "-f", &crds.display().to_string()])?;
    let mut tries = 0;
    while let Err(e) = cluster.run_kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/workloads.kueue.x-k8s.io",
        "crd/clusterqueues.kueue.x-k8s.io",
        "crd/localqueues.kueue.x-k8s.io",
        "crd/resourceflavors.kueue.x-k8s.io",
    ]) {
        tries += 1;
        if tries == 20 {
            return Err(e.into());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    cluster.apply(
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                "metadata": {"name": "default"}})
        .to_string(),
    )?;
    cluster.apply(
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": "cq"},
                "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": admitted.to_string()}]}]}]}})
        .to_string(),
    )?;
    let mut owners = Vec::new();
    for n in 0..NAMESPACES {
        let ns = format!("bench-{n}");
        cluster.run_kubectl(&["create", "namespace", &ns])?;
        cluster.apply(
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                    "metadata": {"name": "lq", "namespace": ns}, "spec": {"clusterQueue": "cq"}})
            .to_string(),
        )?;
        let lq: serde_json::Value = serde_json::from_str(&cluster.run_kubectl(&[
            "get",
            "localqueues.kueue.x-k8s.io",
            "-n",
            &ns,
            "lq",
            "-o",
            "json",
        ])?)?;
        owners.push((
            ns,
            lq["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ));
    }

    let work = tempfile::Builder::new()
        .prefix("batchgate-bench-")
        .tempdir()?;
    let (mut child, visibility) = start_batchgate(&batchgate, &cluster, work.path())?;
    batchgate::cli::dev::register_visibility(&cluster, visibility.port())
        .map_err(|e| format!("registering the visibility API: {e:#}"))?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client = rt.block_on(async {
        let kc = Kubeconfig::read_from(cluster.kubeconfig())?;
        let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
        Ok::<_, BoxError>(Client::try_from(cfg)?)
    })?;
    let t = Instant::now();
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "kueue.x-k8s.io",
        "v1beta2",
        "Workload",
    ));
    let objects = (0..total)
        .map(|i| {
            let (ns, uid) = &owners[i % NAMESPACES];
            serde_json::from_value::<DynamicObject>(workload(ns, i, uid)).map(|o| (ns.clone(), o))
        })
        .collect::<Result<Vec<_>, _>>()?;
    rt.block_on(async {
        let results: Vec<Result<(), BoxError>> = futures::stream::iter(objects)
            .map(|(ns, obj)| {
                let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
                async move {
                    api.create(&PostParams::default(), &obj).await?;
                    Ok(())
                }
            })
            .buffer_unordered(64)
            .collect()
            .await;
        results.into_iter().collect::<Result<Vec<()>, _>>()
    })?;
    println!(
        "  {total} Workloads created in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // Settled: every pending Workload has a position.
    let pending = total - admitted;
    let t = Instant::now();
    loop {
        let n = positions(&cluster).unwrap_or(0);
        if n == pending {
            break;
        }
        if t.elapsed() > Duration::from_secs(600) {
            return Err(format!("only {n} of {pending} positions served after 600 s").into());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    println!(
        "  reconciler settled ({pending} positions served) {:.1} s after the last create",
        t.elapsed().as_secs_f64()
    );
    // Let the reconciler's status writes drain before timing.
    std::thread::sleep(Duration::from_secs(if smoke { 1 } else { 10 }));

    // B U U B B U U B ...: each plugin as often first as second.
    let mut order: Vec<(&str, &Path)> = Vec::new();
    for r in 0..runs {
        let pair: Vec<(&str, &Path)> = match &upstream {
            Some(u) => vec![("batchgate", plugin.as_path()), ("upstream", u.as_path())],
            None => vec![("batchgate", plugin.as_path())],
        };
        if r % 2 == 0 {
            order.extend(pair);
        } else {
            order.extend(pair.into_iter().rev());
        }
    }
    let mut samples: Vec<(&str, f64, u64)> = Vec::new();
    for (r, (who, bin)) in order.iter().enumerate() {
        let run = list_once(bin, cluster.kubeconfig())?;
        let text = String::from_utf8_lossy(&run.stdout);
        let rows = text.lines().count().saturating_sub(1);
        let positioned = text
            .lines()
            .skip(1)
            .filter(|l| {
                l.contains("PENDING")
                    && l.split_whitespace()
                        .nth(7)
                        .is_some_and(|p| p.parse::<usize>().is_ok())
            })
            .count();
        if rows != total {
            return Err(format!("run {r} ({who}): {rows} rows, expected {total}").into());
        }
        println!(
            "  run {r} {who:>9}: {:.3} s, max RSS {:.1} MiB ({rows} rows, {positioned} with a position)",
            run.secs,
            run.max_rss_kib as f64 / 1024.0
        );
        samples.push((who, run.secs, run.max_rss_kib));
    }
    let mut medians = Vec::new();
    for who in ["batchgate", "upstream"] {
        let mut times: Vec<f64> = samples.iter().filter(|s| s.0 == who).map(|s| s.1).collect();
        if times.is_empty() {
            continue;
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let rss = samples
            .iter()
            .filter(|s| s.0 == who)
            .map(|s| s.2)
            .max()
            .unwrap_or(0);
        println!(
            "{who} list workload -A, {total} Workloads: min {:.3} s, median {median:.3} s, max {:.3} s over {} runs; max RSS {:.1} MiB",
            times[0],
            times[times.len() - 1],
            times.len(),
            rss as f64 / 1024.0
        );
        medians.push(median);
    }
    if let [ours, theirs] = medians[..] {
        println!(
            "time ratio batchgate/upstream (medians): {:.2}",
            ours / theirs
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(cluster);
    Ok(())
}
