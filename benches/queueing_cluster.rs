//! Benchmark (b): Kueue's scheduler-performance baseline end to end, on the
//! local control plane, against the real `batchgate serve` reconciler.
//!
//!     cargo bench --bench queueing_cluster
//!     BATCHGATE_BENCH_SCALE=0.1 cargo bench --bench queueing_cluster   # ~1/10, quick
//!
//! The shape is benchmark (a)'s (`benches/queueing.rs`, Kueue's
//! `test/performance/scheduler/configs/baseline`): 5 cohorts × 6
//! ClusterQueues (one flavor, cpu nominal 20, borrowingLimit 100,
//! reclaimWithinCohort Any, withinClusterQueue LowerPriority), each with its
//! own namespace and LocalQueue; per ClusterQueue 350 small (1 cpu, 200 ms,
//! priority 50, one every 100 ms), 100 medium (5 cpu, 500 ms, priority 100,
//! every 500 ms) and 50 large (20 cpu, 1 s, priority 200, every 1.2 s):
//! 15,000 Workloads.
//!
//! Like Kueue's runner, the bench creates Workload objects directly through
//! the API (no jobs, no webhooks registered: Kueue's `minimalkueue` runs none
//! either), one creating task per ClusterQueue and class on that class's
//! schedule, and plays the part of the jobs: a watch records when each
//! Workload gets `QuotaReserved=True` and, `runtime` later, marks it
//! `Finished=True` (reason `ByTest`) with a status patch carrying the
//! resourceVersion it saw (a Workload evicted meanwhile is not finished; it
//! runs again from its next admission). batchgate does everything else.
//!
//! What runs: a private `LocalCluster` without nodes (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler, KWOK), Kueue's CRDs, and the
//! `batchgate` binary cargo built for this bench (`CARGO_BIN_EXE_batchgate`:
//! under `cargo bench` that is the `bench` profile, optimised like
//! `release`; override with `BATCHGATE_BENCH_BIN`).
//!
//! Reported (Kueue's checker computes the same from its recorder):
//! - wall time, from the first create sent to the last `Finished` accepted;
//! - average time to admission per class, from the Workload's first watch
//!   event to the watch event of the admission that ran to completion;
//! - ClusterQueue usage: Σ cpu × runtime of the finished Workloads /
//!   (nominal × ClusterQueues × wall), i.e. the quota-bound ideal / wall;
//!   and the quota actually held (reservations seen by the watch, including
//!   runs cut short by preemption and the time until `Finished` lands);
//! - batchgate's largest RSS (VmRSS sampled every 100 ms, and VmHWM);
//! - where the time went: CPU seconds of each process over the run, and the
//!   apiserver's request counts and mean latencies by verb and resource
//!   (its `/metrics`, before and after).
//!
//! Knobs (environment; defaults in brackets):
//!   BATCHGATE_BENCH_SCALE [1]          multiplies every class's count (at least 1 each)
//!   BATCHGATE_BENCH_COHORTS [5], BATCHGATE_BENCH_QUEUES [6]   the shape
//!   BATCHGATE_BENCH_TIMEOUT_SECS [900] give up after this long
//!   BATCHGATE_BENCH_BIN                the batchgate binary (default: the one cargo built)
//!   BATCHGATE_BENCH_LOG [info]         batchgate's RUST_LOG
//!   BATCHGATE_BENCH_CSV                write one row per Workload to this file
//!   BATCHGATE_BENCH_APISERVER_ARGS     extra kube-apiserver flags, space-separated
//!                                      (e.g. `--profiling=true` to take a pprof profile
//!                                      with `kubectl get --raw /debug/pprof/profile`)
//!   BATCHGATE_BENCH_KEEP=1             keep the work dir (batchgate.log) and the cluster's
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a smoke version
//! (1 cohort × 2 ClusterQueues, 1/25 of the counts) and checks only that
//! every Workload finishes.

use std::{
    collections::{BTreeMap, HashMap},
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use batchgate::api::kueue::v1beta2::{self as api, condition};
use batchgate_localcluster::{ClusterOptions, LocalCluster};
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{
    api::{ListParams, Patch, PatchParams, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
    runtime::{watcher, WatchStreamExt},
    Api, Client, Config, ResourceExt,
};
use serde_json::json;
use tokio::sync::mpsc;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

mod fixtures;

use fixtures::baseline::{
    Class, BORROWING_LIMIT_CPU, CLASSES, KUEUE_MAX_ADMISSION_MS, KUEUE_MAX_WALL_MS,
    KUEUE_MIN_USAGE_PCT, NOMINAL_CPU,
};

/// Issue 4's targets for this benchmark.
const TARGET_WALL_OF_IDEAL: f64 = 1.3;
const TARGET_USAGE_PCT: f64 = 75.0;
const TARGET_RSS_MIB: f64 = 64.0;

const CLASS_LABEL: &str = "bench.batchgate.dev/class";
const FIELD_MANAGER: &str = "batchgate-bench";

struct Knobs {
    smoke: bool,
    scale: f64,
    cohorts: usize,
    queues: usize,
    timeout: Duration,
    bin: PathBuf,
    log: String,
    csv: Option<PathBuf>,
    keep: bool,
    apiserver_args: Vec<String>,
}

fn knobs(smoke: bool) -> Result<Knobs, BoxError> {
    fn var<T: std::str::FromStr>(name: &str, default: T) -> Result<T, BoxError> {
        match std::env::var(name) {
            Ok(v) => v
                .parse()
                .map_err(|_| format!("{name}={v:?} is not a valid value").into()),
            Err(_) => Ok(default),
        }
    }
    let (scale, cohorts, queues) = if smoke { (0.04, 1, 2) } else { (1.0, 5, 6) };
    let k = Knobs {
        smoke,
        scale: var("BATCHGATE_BENCH_SCALE", scale)?,
        cohorts: var("BATCHGATE_BENCH_COHORTS", cohorts)?,
        queues: var("BATCHGATE_BENCH_QUEUES", queues)?,
        timeout: Duration::from_secs(var("BATCHGATE_BENCH_TIMEOUT_SECS", 900u64)?),
        bin: std::env::var_os("BATCHGATE_BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_batchgate"))),
        log: std::env::var("BATCHGATE_BENCH_LOG").unwrap_or_else(|_| "info".into()),
        csv: std::env::var_os("BATCHGATE_BENCH_CSV").map(PathBuf::from),
        keep: std::env::var("BATCHGATE_BENCH_KEEP").is_ok_and(|v| v == "1"),
        apiserver_args: std::env::var("BATCHGATE_BENCH_APISERVER_ARGS")
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from)
            .collect(),
    };
    if k.scale.is_nan() || k.scale <= 0.0 || k.cohorts == 0 || k.queues == 0 {
        return Err("BATCHGATE_BENCH_SCALE must be > 0 and the shape non-empty".into());
    }
    Ok(k)
}

impl Knobs {
    fn count(&self, class: &Class) -> usize {
        ((class.count as f64 * self.scale).round() as usize).max(1)
    }
}

#[path = "support/crds.rs"]
mod crds;
#[path = "support/process.rs"]
mod process;
use process::*;

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    if let Err(e) = run(smoke) {
        eprintln!("queueing_cluster: {e}");
        std::process::exit(1);
    }
}

/// `batchgate serve` connected to the cluster, reconciler on, no webhook
/// registered; returns once its queueing engine has been rebuilt from the API.
fn start_batchgate(k: &Knobs, cluster: &LocalCluster, dir: &Path) -> Result<Child, BoxError> {
    let cert_dir = dir.join("certs");
    let status = Command::new(&k.bin)
        .args(["certs", "--out"])
        .arg(&cert_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("running {} certs: {e}", k.bin.display()))?;
    if !status.success() {
        return Err(format!("batchgate certs failed: {status}").into());
    }
    let cfg = dir.join("config.yaml");
    std::fs::write(
        &cfg,
        "namespace: default\nreconciler:\n  leaseDurationSeconds: 15\n",
    )?;
    let log_path = dir.join("batchgate.log");
    let mut cmd = Command::new(&k.bin);
    cmd.args(["serve", "--cert-dir"])
        .arg(&cert_dir)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--probe-listen",
            "127.0.0.1:0",
            // Off Kueue's port 8082: nothing here registers the visibility API.
            "--visibility-listen",
            "127.0.0.1:0",
            "--config",
        ])
        .arg(&cfg)
        .env("KUBECONFIG", cluster.kubeconfig())
        .env("RUST_LOG", &k.log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {}: {e}", k.bin.display()))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut log = std::fs::File::create(&log_path)?;
    std::thread::spawn(move || {
        let mut told = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = writeln!(log, "{line}");
            if !told && line.contains("queueing engine rebuilt") {
                told = true;
                let _ = tx.send(());
            }
        }
    });
    if rx.recv_timeout(Duration::from_secs(120)).is_err() {
        let _ = child.kill();
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        return Err(
            format!("batchgate's reconciler did not start within 120 s; log:\n{log}").into(),
        );
    }
    Ok(child)
}

// ---------------------------------------------------------------------------
// Objects.

fn cq_name(c: usize, q: usize) -> String {
    format!("cq-{c}-{q}")
}

fn ns_name(cq: &str) -> String {
    format!("bench-{cq}")
}

async fn create_queues(client: &Client, k: &Knobs) -> Result<Vec<String>, BoxError> {
    let pp = PostParams::default();
    let rf: api::ResourceFlavor = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "default"}, "spec": {}
    }))?;
    Api::<api::ResourceFlavor>::all(client.clone())
        .create(&pp, &rf)
        .await?;
    let mut names = Vec::new();
    for c in 0..k.cohorts {
        for q in 0..k.queues {
            let name = cq_name(c, q);
            let cq: api::ClusterQueue = serde_json::from_value(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "cohortName": format!("cohort-{c}"),
                    "namespaceSelector": {},
                    "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{
                        "name": "default",
                        "resources": [{"name": "cpu", "nominalQuota": NOMINAL_CPU.to_string(),
                                       "borrowingLimit": BORROWING_LIMIT_CPU.to_string()}],
                    }]}],
                    "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                }
            }))?;
            Api::<api::ClusterQueue>::all(client.clone())
                .create(&pp, &cq)
                .await?;
            let ns: k8s_openapi::api::core::v1::Namespace =
                serde_json::from_value(json!({"metadata": {"name": ns_name(&name)}}))?;
            Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
                .create(&pp, &ns)
                .await?;
            let lq: api::LocalQueue = serde_json::from_value(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": ns_name(&name)},
                "spec": {"clusterQueue": name},
            }))?;
            Api::<api::LocalQueue>::namespaced(client.clone(), &ns_name(&name))
                .create(&pp, &lq)
                .await?;
            names.push(name);
        }
    }
    Ok(names)
}

fn workload(name: &str, ns: &str, class: &Class) -> Result<api::Workload, BoxError> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": ns, "labels": {CLASS_LABEL: class.name}},
        "spec": {
            "queueName": "lq",
            "priority": class.priority,
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "pause",
                                "resources": {"requests": {"cpu": class.cpu.to_string()}}}],
            }}}],
        }
    }))?)
}

/// Waits until batchgate has written `Active=True` on every ClusterQueue.
async fn wait_queues_active(client: &Client, names: &[String]) -> Result<(), BoxError> {
    let api = Api::<api::ClusterQueue>::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let list = api.list(&ListParams::default()).await?;
        let active = list
            .items
            .iter()
            .filter(|cq| names.contains(&cq.name_any()))
            .filter(|cq| {
                cq.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Active" && c.status == "True"))
            })
            .count();
        if active == names.len() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "only {active} of {} ClusterQueues active after 60 s",
                names.len()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

// ---------------------------------------------------------------------------
// The apiserver's own account: requests and latencies by verb and resource.

#[derive(Default, Clone, Copy)]
struct ReqStat {
    count: f64,
    conflicts: f64,
    latency_sum: f64,
    latency_count: f64,
}

type ReqKey = (String, String, String); // verb, resource, subresource

fn label<'a>(labels: &'a str, name: &str) -> &'a str {
    let pat = format!("{name}=\"");
    labels
        .find(&pat)
        .map(|i| &labels[i + pat.len()..])
        .and_then(|r| r.split('"').next())
        .unwrap_or("")
}

async fn apiserver_requests(client: &Client) -> BTreeMap<ReqKey, ReqStat> {
    let mut out: BTreeMap<ReqKey, ReqStat> = BTreeMap::new();
    let req = match http::Request::get("/metrics").body(Vec::new()) {
        Ok(r) => r,
        Err(_) => return out,
    };
    let Ok(text) = client.request_text(req).await else {
        return out;
    };
    for line in text.lines() {
        let (metric, rest) = match line.split_once('{') {
            Some(x) => x,
            None => continue,
        };
        if !matches!(
            metric,
            "apiserver_request_total"
                | "apiserver_request_duration_seconds_sum"
                | "apiserver_request_duration_seconds_count"
        ) {
            continue;
        }
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(v) = value.trim().parse::<f64>() else {
            continue;
        };
        let verb = label(labels, "verb");
        if verb == "WATCH" || verb == "CONNECT" {
            continue;
        }
        let key = (
            verb.to_string(),
            label(labels, "resource").to_string(),
            label(labels, "subresource").to_string(),
        );
        let s = out.entry(key).or_default();
        match metric {
            "apiserver_request_total" => {
                s.count += v;
                if label(labels, "code") == "409" {
                    s.conflicts += v;
                }
            }
            "apiserver_request_duration_seconds_sum" => s.latency_sum += v,
            _ => s.latency_count += v,
        }
    }
    out
}

// ---------------------------------------------------------------------------
// ClusterQueue usage as Kueue's scheduler-benchmark recorder integrates it
// (`test/performance/scheduler/runner/recorder`): on every ClusterQueue watch
// event, the cpu `status.flavorsUsage[0].resources[0].total` of the previous
// event times the time since it; over (last event - first event) x nominal.

#[derive(Default)]
struct CqSample {
    first: Option<Instant>,
    last: Option<Instant>,
    usage_m: i64,
    reservation_m: i64,
    used_m_ms: f64,
    reserved_m_ms: f64,
}

type CqRecorder = Arc<Mutex<HashMap<String, CqSample>>>;

fn cpu_total_m(usage: Option<&Vec<api::FlavorUsage>>) -> i64 {
    usage
        .and_then(|u| u.first())
        .and_then(|f| f.resources.first())
        .and_then(|r| r.total.as_ref())
        .and_then(|q| batchgate::queueing::quantity::parse(&q.0).ok())
        .unwrap_or(0)
}

fn record_cq_states(client: &Client) -> CqRecorder {
    let rec: CqRecorder = Arc::default();
    let out = rec.clone();
    let api = Api::<api::ClusterQueue>::all(client.clone());
    tokio::spawn(async move {
        // Backs off on errors: a watch retrying a stopped apiserver
        // without pause keeps the runtime from shutting down.
        let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
        futures::pin_mut!(stream);
        while let Some(ev) = stream.next().await {
            let cq = match ev {
                Ok(watcher::Event::Apply(cq)) | Ok(watcher::Event::InitApply(cq)) => cq,
                Ok(_) => continue,
                Err(e) => {
                    eprintln!("ClusterQueue watch: {e}");
                    continue;
                }
            };
            let now = Instant::now();
            let status = cq.status.as_ref();
            let mut all = rec.lock().unwrap_or_else(|e| e.into_inner());
            let s = all.entry(cq.name_any()).or_default();
            if let Some(last) = s.last {
                let dt = now.duration_since(last).as_secs_f64() * 1000.0;
                s.used_m_ms += s.usage_m as f64 * dt;
                s.reserved_m_ms += s.reservation_m as f64 * dt;
            }
            s.first.get_or_insert(now);
            s.last = Some(now);
            s.usage_m = cpu_total_m(status.and_then(|s| s.flavors_usage.as_ref()));
            s.reservation_m = cpu_total_m(status.and_then(|s| s.flavors_reservation.as_ref()));
        }
    });
    out
}

// ---------------------------------------------------------------------------
// The run.

#[derive(Default)]
struct Wl {
    class: usize,
    /// First watch event (Kueue's recorder starts the clock there too).
    seen: Option<Instant>,
    /// The admission in force, as the watch saw it.
    admitted: Option<Instant>,
    /// Bumped at every admission; a timer for an older one is stale.
    epoch: u32,
    wait: Option<Duration>,
    evictions: u32,
    finished: Option<Instant>,
    finishing: bool,
    rv: String,
    conditions: Vec<Condition>,
}

enum Msg {
    Event(Box<api::Workload>),
    Due { key: String, epoch: u32 },
    FinishWritten { key: String, at: Instant },
    FinishDropped { key: String },
}

fn is_true(conds: &[Condition], ty: &str) -> bool {
    conds.iter().any(|c| c.type_ == ty && c.status == "True")
}

fn key_of(wl: &api::Workload) -> String {
    format!("{}/{}", wl.namespace().unwrap_or_default(), wl.name_any())
}

/// Marks the Workload finished, from the resourceVersion and conditions the
/// watch last saw; on a conflict it re-reads and goes on only if it still
/// holds the same admission.
async fn finish(
    api: Api<api::Workload>,
    name: String,
    mut rv: String,
    mut conds: Vec<Condition>,
) -> Option<Instant> {
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let pp = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    for _ in 0..8 {
        let mut c = conds.clone();
        c.retain(|c| c.type_ != condition::FINISHED);
        c.push(Condition {
            type_: condition::FINISHED.into(),
            status: "True".into(),
            reason: "ByTest".into(),
            message: "By test runner".into(),
            last_transition_time: now.clone(),
            observed_generation: None,
        });
        let patch = json!({"metadata": {"resourceVersion": rv}, "status": {"conditions": c}});
        match api.patch_status(&name, &pp, &Patch::Merge(&patch)).await {
            Ok(_) => return Some(Instant::now()),
            Err(kube::Error::Api(e)) if e.code == 409 => {
                let fresh = api.get(&name).await.ok()?;
                let fc = fresh
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.clone())
                    .unwrap_or_default();
                if !is_true(&fc, condition::QUOTA_RESERVED)
                    || is_true(&fc, condition::EVICTED)
                    || is_true(&fc, condition::FINISHED)
                {
                    return None;
                }
                rv = fresh.resource_version().unwrap_or_default();
                conds = fc;
            }
            Err(e) => {
                eprintln!("finishing {name}: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    None
}

struct Procs {
    names: Vec<(&'static str, u32)>,
}

impl Procs {
    fn cpu(&self) -> Vec<f64> {
        self.names.iter().map(|(_, pid)| cpu_secs(*pid)).collect()
    }
}

struct Outcome {
    wall: Duration,
    create_lag: Duration,
    waits: Vec<Vec<f64>>,
    evictions: u64,
    held_cpu_ms: f64,
    done_cpu_ms: f64,
    finish_conflicts: u64,
    rows: Vec<(String, usize, f64, f64, u32)>,
}

async fn drive(
    k: &Knobs,
    client: &Client,
    queues: &[String],
    procs: &Procs,
    batchgate_pid: u32,
    cq_states: &CqRecorder,
) -> Result<Outcome, BoxError> {
    let total: usize = queues.len() * CLASSES.iter().map(|c| k.count(c)).sum::<usize>();
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();

    // The watch, synced before anything is created.
    let all = Api::<api::Workload>::all(client.clone());
    let (synced_tx, synced_rx) = tokio::sync::oneshot::channel();
    {
        let tx = tx.clone();
        let cfg = watcher::Config::default().labels(CLASS_LABEL);
        tokio::spawn(async move {
            let mut synced = Some(synced_tx);
            let stream = watcher::watcher(all, cfg).default_backoff();
            futures::pin_mut!(stream);
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(watcher::Event::Apply(w)) | Ok(watcher::Event::InitApply(w)) => {
                        if tx.send(Msg::Event(Box::new(w))).is_err() {
                            return;
                        }
                    }
                    Ok(watcher::Event::InitDone) => {
                        if let Some(s) = synced.take() {
                            let _ = s.send(());
                        }
                    }
                    Ok(_) => {}
                    Err(e) => eprintln!("watch: {e}"),
                }
            }
        });
    }
    synced_rx
        .await
        .map_err(|_| "the Workload watch ended before it synced")?;

    // The generator: one task per ClusterQueue and class, on the class's schedule.
    let start = Instant::now();
    let created = Arc::new(AtomicU64::new(0));
    let last_create = Arc::new(Mutex::new(Duration::ZERO));
    let create_lag = Arc::new(Mutex::new(Duration::ZERO));
    let failed = Arc::new(AtomicBool::new(false));
    for cq in queues {
        for class in &CLASSES {
            let n = k.count(class);
            let ns = ns_name(cq);
            let api = Api::<api::Workload>::namespaced(client.clone(), &ns);
            let (created, last_create, create_lag, failed) = (
                created.clone(),
                last_create.clone(),
                create_lag.clone(),
                failed.clone(),
            );
            let interval = Duration::from_millis(class.interval_ms as u64);
            tokio::spawn(async move {
                for i in 0..n {
                    let due = start + interval * (i as u32 + 1);
                    tokio::time::sleep_until(due.into()).await;
                    let lag = Instant::now().saturating_duration_since(due);
                    let wl = match workload(&format!("{}-{i}", class.name), &ns, class) {
                        Ok(w) => w,
                        Err(e) => {
                            eprintln!("building a Workload: {e}");
                            failed.store(true, Ordering::Relaxed);
                            return;
                        }
                    };
                    let mut tries = 0;
                    loop {
                        match api.create(&PostParams::default(), &wl).await {
                            Ok(_) => break,
                            Err(kube::Error::Api(e)) if e.code == 409 => break,
                            Err(e) if tries < 20 => {
                                tries += 1;
                                eprintln!("creating {ns}/{}-{i}: {e}; retrying", class.name);
                                tokio::time::sleep(Duration::from_millis(200)).await;
                            }
                            Err(e) => {
                                eprintln!("creating {ns}/{}-{i}: {e}; giving up", class.name);
                                failed.store(true, Ordering::Relaxed);
                                return;
                            }
                        }
                    }
                    created.fetch_add(1, Ordering::Relaxed);
                    let mut l = create_lag.lock().unwrap_or_else(|e| e.into_inner());
                    *l = (*l).max(lag);
                    let mut t = last_create.lock().unwrap_or_else(|e| e.into_inner());
                    *t = (*t).max(start.elapsed());
                }
            });
        }
    }
    // The first create is sent one interval of the fastest class after `start`.
    let first_create = start
        + CLASSES
            .iter()
            .map(|c| Duration::from_millis(c.interval_ms as u64))
            .min()
            .unwrap_or_default();

    let class_of = |name: &str| {
        CLASSES
            .iter()
            .position(|c| name.starts_with(&format!("{}-", c.name)))
    };
    let mut wls: HashMap<String, Wl> = HashMap::with_capacity(total);
    let mut finished = 0usize;
    let mut last_finish = first_create;
    let mut held_cpu_ms = 0.0;
    let mut finish_conflicts = 0u64;
    let deadline = start + k.timeout;
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    tick.tick().await;
    let mut prev_cpu = procs.cpu();
    let mut prev_t = Instant::now();
    println!(
        "  {:>5} {:>7} {:>7} {:>8} {:>7} {:>6} {:>6} {:>8} | CPU % of one core over the last 5 s: {}",
        "t s",
        "created",
        "running",
        "finished",
        "pending",
        "held%",
        "cq%",
        "RSS MiB",
        procs
            .names
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(" ")
    );
    while finished < total {
        let msg = tokio::select! {
            m = rx.recv() => match m { Some(m) => m, None => break },
            _ = tick.tick() => {
                let now = Instant::now();
                let cpu = procs.cpu();
                let dt = now.duration_since(prev_t).as_secs_f64();
                let pct: Vec<String> = cpu.iter().zip(&prev_cpu)
                    .map(|(a, b)| format!("{:.0}", (a - b) * 100.0 / dt)).collect();
                prev_cpu = cpu;
                prev_t = now;
                let running: Vec<&Wl> = wls.values().filter(|w| w.admitted.is_some() && w.finished.is_none()).collect();
                let held: i64 = running.iter().map(|w| CLASSES[w.class].cpu).sum();
                let c = created.load(Ordering::Relaxed) as usize;
                // What the ClusterQueue statuses say is in use right now.
                let cq_m: i64 = cq_states
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .values()
                    .map(|s| s.usage_m)
                    .sum();
                println!(
                    "  {:>5.0} {:>7} {:>7} {:>8} {:>7} {:>6.0} {:>6.0} {:>8.1} | {}",
                    start.elapsed().as_secs_f64(),
                    c,
                    running.len(),
                    finished,
                    c.saturating_sub(running.len() + finished),
                    held as f64 * 100.0 / (NOMINAL_CPU * queues.len() as i64) as f64,
                    cq_m as f64 * 0.1 / (NOMINAL_CPU * queues.len() as i64) as f64,
                    status_kib(batchgate_pid, "VmRSS:").unwrap_or(0) as f64 / 1024.0,
                    pct.join(" "),
                );
                if failed.load(Ordering::Relaxed) {
                    return Err("creating Workloads failed (see above)".into());
                }
                if now > deadline {
                    return Err(format!(
                        "timed out after {:?}: {finished} of {total} finished", k.timeout
                    ).into());
                }
                continue;
            }
        };
        match msg {
            Msg::Event(wl) => {
                let key = key_of(&wl);
                let now = Instant::now();
                let conds = wl
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.clone())
                    .unwrap_or_default();
                let w = wls.entry(key.clone()).or_insert_with(|| Wl {
                    class: class_of(&wl.name_any()).unwrap_or(0),
                    ..Wl::default()
                });
                w.seen.get_or_insert(now);
                w.rv = wl.resource_version().unwrap_or_default();
                let reserved = is_true(&conds, condition::QUOTA_RESERVED);
                let evicted = is_true(&conds, condition::EVICTED);
                let done = is_true(&conds, condition::FINISHED);
                let cpu = CLASSES[w.class].cpu as f64;
                if done {
                    if w.finished.is_none() {
                        w.finished = Some(now);
                        if let Some(a) = w.admitted {
                            held_cpu_ms += cpu * now.duration_since(a).as_secs_f64() * 1000.0;
                        }
                    }
                } else if reserved && !evicted {
                    if w.admitted.is_none() {
                        w.admitted = Some(now);
                        w.epoch += 1;
                        w.wait = w.seen.map(|s| now.duration_since(s));
                        let (tx, epoch) = (tx.clone(), w.epoch);
                        let runtime = Duration::from_millis(CLASSES[w.class].runtime_ms as u64);
                        tokio::spawn(async move {
                            tokio::time::sleep(runtime).await;
                            let _ = tx.send(Msg::Due { key, epoch });
                        });
                    }
                } else if let Some(a) = w.admitted.take() {
                    held_cpu_ms += cpu * now.duration_since(a).as_secs_f64() * 1000.0;
                    if evicted {
                        w.evictions += 1;
                    }
                }
                w.conditions = conds;
            }
            Msg::Due { key, epoch } => {
                let Some(w) = wls.get_mut(&key) else { continue };
                if w.epoch != epoch || w.admitted.is_none() || w.finished.is_some() || w.finishing {
                    continue;
                }
                w.finishing = true;
                let Some((ns, name)) = key.split_once('/') else {
                    continue;
                };
                let api = Api::<api::Workload>::namespaced(client.clone(), ns);
                let (tx, name, rv, conds) = (
                    tx.clone(),
                    name.to_string(),
                    w.rv.clone(),
                    w.conditions.clone(),
                );
                tokio::spawn(async move {
                    let msg = match finish(api, name, rv, conds).await {
                        Some(at) => Msg::FinishWritten { key, at },
                        None => Msg::FinishDropped { key },
                    };
                    let _ = tx.send(msg);
                });
            }
            Msg::FinishWritten { key, at } => {
                finished += 1;
                last_finish = last_finish.max(at);
                if let Some(w) = wls.get_mut(&key) {
                    w.finishing = false;
                }
            }
            Msg::FinishDropped { key } => {
                // Evicted before its runtime was up: it runs again later.
                finish_conflicts += 1;
                if let Some(w) = wls.get_mut(&key) {
                    w.finishing = false;
                }
            }
        }
    }
    let wall = last_finish.duration_since(first_create);
    let mut waits = vec![Vec::new(); CLASSES.len()];
    let mut evictions = 0u64;
    let mut done_cpu_ms = 0.0;
    let mut rows = Vec::new();
    for (key, w) in &wls {
        evictions += w.evictions as u64;
        if let Some(wait) = w.wait {
            waits[w.class].push(wait.as_secs_f64());
        }
        if w.finished.is_some() {
            done_cpu_ms += (CLASSES[w.class].cpu * CLASSES[w.class].runtime_ms) as f64;
        }
        let since = |t: Option<Instant>| {
            t.map(|t| t.saturating_duration_since(first_create).as_secs_f64() * 1000.0)
                .unwrap_or(-1.0)
        };
        rows.push((
            key.clone(),
            w.class,
            since(w.seen),
            since(w.finished),
            w.evictions,
        ));
    }
    let lag = *create_lag.lock().unwrap_or_else(|e| e.into_inner());
    Ok(Outcome {
        wall,
        create_lag: lag,
        waits,
        evictions,
        held_cpu_ms,
        done_cpu_ms,
        finish_conflicts,
        rows,
    })
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[((s.len() - 1) as f64 * p).round() as usize]
}

fn run(smoke: bool) -> Result<(), BoxError> {
    let k = knobs(smoke)?;
    let per_cq: Vec<usize> = CLASSES.iter().map(|c| k.count(c)).collect();
    let n_cq = k.cohorts * k.queues;
    let total: usize = per_cq.iter().sum::<usize>() * n_cq;
    let work_cpu_ms: i64 = CLASSES
        .iter()
        .zip(&per_cq)
        .map(|(c, n)| c.cpu * c.runtime_ms * *n as i64)
        .sum::<i64>()
        * n_cq as i64;
    let ideal_s = work_cpu_ms as f64 / (NOMINAL_CPU * n_cq as i64) as f64 / 1000.0;
    println!(
        "queueing_cluster: {} cohorts x {} ClusterQueues, per ClusterQueue {} small + {} medium + {} large = {total} Workloads; quota-bound ideal {ideal_s:.1} s{}",
        k.cohorts, k.queues, per_cq[0], per_cq[1], per_cq[2],
        if k.smoke { " [smoke run without --bench: numbers are not meaningful]" } else { "" },
    );
    println!("  batchgate: {}", k.bin.display());
    let load_before = loadavg();
    println!("  load average before: {load_before}");

    let t = Instant::now();
    let mut opts = ClusterOptions {
        nodes: Vec::new(),
        extra_apiserver_args: k.apiserver_args.clone(),
        ..ClusterOptions::default()
    };
    opts.keep_dir |= k.keep;
    let cluster = LocalCluster::start(opts)?;
    println!(
        "  local cluster up in {:.1} s ({})",
        t.elapsed().as_secs_f64(),
        cluster.dir().display()
    );
    let crds = crds::without_conversion_webhook(cluster.dir())?;
    cluster.run_kubectl(&["apply", "-f", &crds.display().to_string()])?;
    // `kubectl wait` fails outright while a new CRD has no conditions yet.
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

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client = rt.block_on(async {
        let kc = Kubeconfig::read_from(cluster.kubeconfig())?;
        let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
        Ok::<_, BoxError>(Client::try_from(cfg)?)
    })?;
    let queues = rt.block_on(create_queues(&client, &k))?;

    let work = tempfile::Builder::new()
        .prefix("batchgate-bench-")
        .tempdir()?;
    let mut child = start_batchgate(&k, &cluster, work.path())?;
    let bg_pid = child.id();
    rt.block_on(wait_queues_active(&client, &queues))?;
    println!(
        "  batchgate {bg_pid} reconciling; log {}",
        work.path().join("batchgate.log").display()
    );

    let mut names: Vec<(&'static str, u32)> = vec![("batchgate", bg_pid)];
    for (n, pid) in cluster.pids() {
        names.push((n, pid));
    }
    names.push(("bench", std::process::id()));
    let procs = Procs { names };

    // RSS sampling on a plain thread, every 100 ms.
    let rss_max = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (rss_max, stop) = (rss_max.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(kib) = status_kib(bg_pid, "VmRSS:") {
                    rss_max.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let rss_start = status_kib(bg_pid, "VmRSS:").unwrap_or(0);
    let req_before = rt.block_on(apiserver_requests(&client));
    let cpu_before = procs.cpu();
    let t_run = Instant::now();
    let cq_states = {
        let _guard = rt.enter();
        record_cq_states(&client)
    };
    let outcome = rt.block_on(drive(&k, &client, &queues, &procs, bg_pid, &cq_states));
    let run_s = t_run.elapsed().as_secs_f64();
    let cpu_after = procs.cpu();
    let req_after = rt.block_on(apiserver_requests(&client));
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let hwm = status_kib(bg_pid, "VmHWM:").unwrap_or(0);
    let load_after = loadavg();
    let o = match outcome {
        Ok(o) => o,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            let _ = work.keep();
            return Err(e);
        }
    };

    // Queue statuses settle: nothing pending, nothing reserved.
    let settled = rt.block_on(async {
        let api = Api::<api::ClusterQueue>::all(client.clone());
        for _ in 0..50 {
            if let Ok(list) = api.list(&ListParams::default()).await {
                let busy: Vec<String> = list
                    .items
                    .iter()
                    .filter_map(|cq| {
                        let s = cq.status.as_ref()?;
                        let (p, r) = (
                            s.pending_workloads.unwrap_or(0),
                            s.reserving_workloads.unwrap_or(0),
                        );
                        (p != 0 || r != 0)
                            .then(|| format!("{} pending {p} reserving {r}", cq.name_any()))
                    })
                    .collect();
                if busy.is_empty() {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err("ClusterQueue statuses did not settle to 0 pending / 0 reserving within 10 s")
    });
    let _ = child.kill();
    let _ = child.wait();
    // What batchgate's event recorder reported shedding (`dropped=N`).
    let events_dropped: u64 = std::fs::read_to_string(work.path().join("batchgate.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("events dropped"))
        .filter_map(|l| {
            // Without the colour escapes (ESC [ ... m).
            let mut plain = String::new();
            let mut chars = l.chars();
            while let Some(c) = chars.next() {
                if c == '\u{1b}' {
                    chars.by_ref().find(|&c| c == 'm');
                } else {
                    plain.push(c);
                }
            }
            let i = plain.rfind("dropped=")?;
            let digits: String = plain[i + "dropped=".len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            digits.parse::<u64>().ok()
        })
        .sum();
    if k.keep {
        println!("  work dir kept: {}", work.keep().display());
    }

    if let Some(path) = &k.csv {
        let mut f = std::fs::File::create(path)?;
        writeln!(f, "workload,class,seen_ms,finished_ms,evictions")?;
        for (key, class, seen, fin, ev) in &o.rows {
            writeln!(f, "{key},{},{seen:.0},{fin:.0},{ev}", CLASSES[*class].name)?;
        }
    }

    let wall_s = o.wall.as_secs_f64();
    let nominal_ms = (NOMINAL_CPU * n_cq as i64) as f64 * wall_s * 1000.0;
    let usage = o.done_cpu_ms * 100.0 / nominal_ms;
    let held = o.held_cpu_ms * 100.0 / nominal_ms;
    let rss_mib = rss_max.load(Ordering::Relaxed).max(hwm) as f64 / 1024.0;
    println!("results:");
    let mark = |ok: bool| if ok { "met" } else { "NOT met" };
    println!(
        "  wall time (first create -> last Finished): {wall_s:.1} s = {:.2}x the ideal {ideal_s:.1} s  [target <= {TARGET_WALL_OF_IDEAL}x: {}; Kueue CI bound {:.0} s]",
        wall_s / ideal_s,
        mark(wall_s <= TARGET_WALL_OF_IDEAL * ideal_s),
        KUEUE_MAX_WALL_MS as f64 / 1000.0
    );
    println!(
        "  ClusterQueue usage (cpu x runtime of finished / nominal x wall): {usage:.1} %  [target >= {TARGET_USAGE_PCT:.0} %: {}; Kueue CI bound {KUEUE_MIN_USAGE_PCT:.0} %]",
        mark(usage >= TARGET_USAGE_PCT)
    );
    println!(
        "  quota held (reservations seen by the watch, incl. preempted runs and the wait for Finished): {held:.1} %"
    );
    {
        // Read once the statuses settled: the recorder's window ends there.
        let all = cq_states.lock().unwrap_or_else(|e| e.into_inner());
        let first = all.values().filter_map(|s| s.first).min();
        let last = all.values().filter_map(|s| s.last).max();
        let used: f64 = all.values().map(|s| s.used_m_ms).sum();
        let reserved: f64 = all.values().map(|s| s.reserved_m_ms).sum();
        if let (Some(first), Some(last)) = (first, last) {
            let window_ms = last.duration_since(first).as_secs_f64() * 1000.0;
            let nominal_m_ms = (NOMINAL_CPU * 1000 * n_cq as i64) as f64 * window_ms.max(1.0);
            println!(
                "  ClusterQueue usage as Kueue's checker integrates it (status.flavorsUsage): {:.1} %  (flavorsReservation {:.1} %; window {:.1} s, first to last ClusterQueue event)",
                used * 100.0 / nominal_m_ms,
                reserved * 100.0 / nominal_m_ms,
                window_ms / 1000.0
            );
        }
    }
    println!(
        "  batchgate RSS: max {rss_mib:.1} MiB (at start of run {:.1} MiB)  [target <= {TARGET_RSS_MIB:.0} MiB: {}]",
        rss_start as f64 / 1024.0,
        mark(rss_mib <= TARGET_RSS_MIB)
    );
    for (ci, class) in CLASSES.iter().enumerate() {
        let w = &o.waits[ci];
        println!(
            "  time to admission, {:<6}: mean {:>6.1} s  p50 {:>6.1} s  p95 {:>6.1} s  max {:>6.1} s  ({} Workloads; Kueue CI bound on the mean {:.0} s)",
            class.name,
            mean(w),
            percentile(w, 0.5),
            percentile(w, 0.95),
            percentile(w, 1.0),
            w.len(),
            KUEUE_MAX_ADMISSION_MS[ci].1 as f64 / 1000.0
        );
    }
    println!(
        "  evictions (preemptions) seen: {}; Finished writes dropped because the Workload was evicted first: {}; creates fell behind schedule by up to {:.2} s",
        o.evictions,
        o.finish_conflicts,
        o.create_lag.as_secs_f64()
    );
    match settled {
        Ok(()) => println!("  every ClusterQueue status ends at 0 pending, 0 reserving"),
        Err(e) => println!("  WARNING: {e}"),
    }
    println!("  events batchgate dropped (its log): {events_dropped}");
    println!("  load average (1/5/15 min) before {load_before} / after {load_after}");
    println!("where the time went ({run_s:.1} s from the first create to the end of the run; 2 cores = 200 %):");
    for (((name, _), a), b) in procs.names.iter().zip(&cpu_after).zip(&cpu_before) {
        println!(
            "  {name:<24} {:>7.1} CPU s  {:>5.0} % of one core",
            a - b,
            (a - b) * 100.0 / run_s
        );
    }
    let mut rows: Vec<(ReqKey, ReqStat)> = req_after
        .iter()
        .map(|(key, a)| {
            let b = req_before.get(key).copied().unwrap_or_default();
            (
                key.clone(),
                ReqStat {
                    count: a.count - b.count,
                    conflicts: a.conflicts - b.conflicts,
                    latency_sum: a.latency_sum - b.latency_sum,
                    latency_count: a.latency_count - b.latency_count,
                },
            )
        })
        .filter(|(_, s)| s.count >= 1.0)
        .collect();
    rows.sort_by(|a, b| b.1.count.total_cmp(&a.1.count));
    println!("  apiserver requests during the run (all clients; WATCH excluded):");
    println!(
        "    {:<7} {:<32} {:>8} {:>7} {:>7} {:>9} {:>10}",
        "verb", "resource", "count", "per s", "per wl", "409s", "mean ms"
    );
    for ((verb, res, sub), s) in rows.iter().take(16) {
        let r = if sub.is_empty() {
            res.clone()
        } else {
            format!("{res}/{sub}")
        };
        println!(
            "    {verb:<7} {r:<32} {:>8.0} {:>7.1} {:>7.2} {:>9.0} {:>10.1}",
            s.count,
            s.count / run_s,
            s.count / total as f64,
            s.conflicts,
            s.latency_sum * 1000.0 / s.latency_count.max(1.0)
        );
    }

    let all: f64 = rows.iter().map(|(_, s)| s.count).sum();
    let conflicts: f64 = rows.iter().map(|(_, s)| s.conflicts).sum();
    println!(
        "    all non-watch requests: {all:.0} = {:.2} per Workload ({total} Workloads); 409 conflicts: {conflicts:.0}",
        all / total as f64
    );

    if k.smoke {
        println!("queueing_cluster smoke: {total} Workloads created, admitted and finished");
    }
    // Background tasks (the watch) end before the cluster goes away.
    rt.shutdown_background();
    drop(cluster);
    Ok(())
}
