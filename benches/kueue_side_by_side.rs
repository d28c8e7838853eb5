//! Kueue's own scheduler benchmark, run against upstream `minimalkueue` and
//! against `batchgate serve`, side by side (issue 17).
//!
//!     cargo bench --bench kueue_side_by_side                    # 1/5 scale, K B K B B K K B
//!     KUEUE_BENCH_SCALE=1 KUEUE_BENCH_ORDER=KB cargo bench --bench kueue_side_by_side
//!     KUEUE_BENCH_CONFIG=tas KUEUE_BENCH_PAIRS=3 cargo bench --bench kueue_side_by_side
//!
//! Upstream's parts, built from Kueue's Go module by
//! `tests/cluster/kueue/build.sh` (v0.17.1, the newest the module proxy
//! serves): the `runner` of `test/performance/scheduler` (generator: creates
//! the cohorts' ClusterQueues, LocalQueues and Workloads from
//! `configs/baseline/generator.yaml`; recorder: watches Workloads and
//! ClusterQueues; plays the jobs: marks each admitted Workload `Finished`
//! after its runtime, and clears the reservation of an evicted one), the
//! `checker` (`go test -c`, run on the runner's `summary.yaml` with
//! `configs/baseline/rangespec.yaml`) and `minimalkueue` (Kueue's scheduler
//! and core controllers without webhooks or job integrations, what Kueue's
//! CI times).
//!
//! Each run gets a fresh `LocalCluster` without nodes (the same
//! kube-apiserver flags for both systems: the request limits upstream's runner
//! gives its envtest apiserver), the CRDs of the system under test (Kueue:
//! v0.17.1's `config/components/crd/bases` from the module source; batchgate:
//! `manifests/crds` without their conversion webhook, as Kueue's bases are,
//! since no webhook runs here), then the manager (`minimalkueue --kubeconfig`, or
//! `batchgate serve` with its reconciler and no webhook registered), then the
//! runner in its in-cluster mode (`--qps=1000 --burst=2000`, as upstream's
//! `run-performance-scheduler-in-cluster`). The generator's Workload counts
//! are scaled by `KUEUE_BENCH_SCALE` for both systems alike.
//!
//! With `KUEUE_BENCH_CONFIG=tas`, upstream's `configs/tas/` instead: the
//! runner's topology generator creates 640 Nodes (1 block × 10 racks × 64,
//! 96 cpu each, labelled `tas-node-group=tas` and with their block, rack and
//! hostname; created, then their status set Ready, by the runner itself, no
//! kubelet behind them), a Topology of those three levels and a
//! ResourceFlavor `tas-flavor` on it; every Workload has one pod set of 2, 4
//! or 8 pods asking for one rack (required, preferred, or required with a
//! slice size). The node counts are not scaled. minimalkueue is started
//! with `--enableTAS`, as upstream's runner starts it for this config;
//! batchgate needs nothing (TAS is on by default, as in Kueue v0.19.2).
//! Upstream runs this against envtest, which has no kube-controller-manager;
//! the local cluster has one, and its node lifecycle controller would mark
//! the heartbeat-less Nodes NotReady (and taint them unreachable) once its
//! grace period is over, mid-run, and its TTL controller would patch every
//! Node. Both are left off for TAS runs of either system
//! (`ClusterOptions::disabled_controllers`), so both see the same 640 Ready,
//! untainted Nodes from start to end. The run fails unless, read with the
//! runner held still after its summary (before its cleanup), all 640 Nodes
//! are still Ready, schedulable and untainted, and every Workload carries a
//! `topologyAssignment` in its admission (TAS really ran) — checked for both
//! systems. The checker gets `configs/tas/rangespec.yaml`, whose bounds are
//! for the full scale.
//!
//! Measured per run: runner wall (start → `summary.yaml` written), CPU
//! seconds of kube-apiserver, etcd and the manager over that span, the
//! manager's max RSS (VmRSS every 100 ms and VmHWM), the apiserver's own
//! `apiserver_request_total` (non-watch), response and request body bytes,
//! and etcd's own counters (bytes written to its log, bytes in and out,
//! keys put), scraped before the runner starts
//! and as soon as `summary.yaml` appears (so the runner's cleanup is not
//! counted), per Workload by verb and resource, its 409s (optimistic-
//! concurrency conflicts, all clients), evictions (the runner's recorder:
//! `Evicted` false → true transitions it saw on its Workload watch, summed
//! over `summary.yaml`'s `totalEvictions`), the ClusterQueue usage the
//! checker computes and its verdict, the quota the Workloads held as the
//! runner saw it (last admission to `Finished`, from `wlStates.csv`; what
//! the usage should come to if the status is right) with each class's mean
//! hold against its runtime, the mean time the apiserver took over a
//! write of a Workload's status (the runner finishes Workloads five writes
//! at a time, so its wall has that mean times its writes over five as a
//! floor), and the load average before and after. The
//! summary gives each metric's ratio per adjacent pair of runs with its
//! spread, the CPU model and the load range, and no ratio at all from
//! fewer than 4 pairs (a shared machine moves a ratio more than that).
//!
//! Knobs (environment; defaults in brackets):
//!   KUEUE_BENCH_CONFIG [baseline]  upstream's `configs/baseline` or `configs/tas`
//!   KUEUE_BENCH_SCALE [0.2]        multiplies every workloadsSet's count (0.2 = 3,000 Workloads)
//!   KUEUE_BENCH_ORDER [KBKBBKKB]   the runs, K = minimalkueue, B = batchgate, A = batchgate A
//!   KUEUE_BENCH_PAIRS              instead of ORDER: this many pairs in the K B B K pattern
//!   KUEUE_BENCH_SYSTEM             `kueue` or `batchgate`: keep only that system's runs
//!   KUEUE_BENCH_TIMEOUT_SECS [900] give up on a run after this long
//!   KUEUE_BENCH_CHECKER [1]        0: do not build or run the checker
//!   KUEUE_BENCH_KEEP=1             keep each run's work dir (runner output, manager log, and
//!                                  `workloads.tsv`: each Workload's changes as the bench's
//!                                  watch saw them, with each eviction's preemptor and reason)
//!   KUEUE_BENCH_CLIENT [default]   batchgate's `clientConnection`: `default` = Kueue v0.19.2's
//!                                  defaults (qps 300, burst 500), `harness` = minimalkueue's
//!                                  (50, 100, per resource, as its client-go gives it), or `QPS/BURST`
//!   KUEUE_BENCH_GATES              batchgate's `featureGates`, `NAME=true|false,...`
//!                                  (`SchedulingEquivalenceHashing=false` is Kueue v0.17.1's
//!                                  default, minimalkueue's here; v0.19.2's and batchgate's is on)
//!   KUEUE_BENCH_GATES_A            the same for the `A` runs (BATCHGATE_BENCH_BIN_A may be
//!                                  the same binary: an A/B of a gate)
//!   BATCHGATE_BENCH_BIN            the batchgate binary (default: the one cargo built)
//!   BATCHGATE_BENCH_BIN_A          another batchgate build, run as `A` (a before/after A/B
//!                                  across commits; the summary adds B against A)
//!   KUEUE_BENCH_RUST_LOG [info]    batchgate's RUST_LOG (`info,batchgate::controllers::queueing=debug`
//!                                  logs each Workload seen, admission decided and written and
//!                                  pending reason decided, to read beside the evictions)
//!   KUEUE_BENCH_KUEUE_LOG [info]   minimalkueue's `--zap-log-level` (`3` logs each preemption
//!                                  issued and each workload that needs one and has no candidate)
//!   KUEUE_BENCH_APISERVER_ARGS     more kube-apiserver flags, space-separated (`--profiling=true`
//!                                  serves /debug/pprof, to profile where the apiserver's CPU goes)
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a smoke: one
//! batchgate run of 1 cohort × 2 ClusterQueues at 1/50 of the counts, with
//! the runner only (the checker's ~4-min cold build is left to the bench),
//! and checks that the runner wrote its summary with every Workload finished.

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use batchgate_localcluster::{ClusterOptions, LocalCluster};
use serde_yaml::Value;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const KUEUE_VERSION: &str = "v0.17.1";
/// kube-controller-manager controllers left off for the TAS config (see the
/// module doc): the node lifecycle controller would mark the runner's
/// kubelet-less Nodes NotReady and taint them after its grace period, and
/// the TTL controller would patch every Node it sees.
const NO_NODE_CONTROLLERS: [&str; 2] = ["node-lifecycle-controller", "ttl-controller"];
/// What upstream's runner gives its envtest kube-apiserver; both systems get it.
const APISERVER_ARGS: [&str; 2] = [
    "--max-requests-inflight=800",
    "--max-mutating-requests-inflight=400",
];

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum System {
    Kueue,
    Batchgate,
    /// Another batchgate build (`BATCHGATE_BENCH_BIN_A`).
    BatchgateA,
}

impl System {
    fn letter(self) -> char {
        match self {
            System::Kueue => 'K',
            System::Batchgate => 'B',
            System::BatchgateA => 'A',
        }
    }

    fn name(self) -> &'static str {
        match self {
            System::Kueue => "Kueue",
            System::Batchgate => "batchgate",
            System::BatchgateA => "batchgate A",
        }
    }
}

/// Which of upstream's `configs/` the runner is given.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BenchConfig {
    /// `configs/baseline`: quota only, no nodes.
    Baseline,
    /// `configs/tas`: 640 Nodes, a Topology and a TAS ResourceFlavor; every
    /// Workload asks for a rack (required, preferred or sliced).
    Tas,
}

impl BenchConfig {
    fn dir(self) -> &'static str {
        match self {
            BenchConfig::Baseline => "baseline",
            BenchConfig::Tas => "tas",
        }
    }
}

struct Knobs {
    smoke: bool,
    config: BenchConfig,
    scale: f64,
    cohorts: Option<u64>,
    queues: Option<u64>,
    order: Vec<System>,
    timeout: Duration,
    checker: bool,
    keep: bool,
    /// batchgate's `clientConnection` (qps, burst).
    client: (f32, u32),
    /// batchgate's `featureGates` (`KUEUE_BENCH_GATES`), and the `A`
    /// runs' (`KUEUE_BENCH_GATES_A`).
    gates: Vec<(String, bool)>,
    gates_a: Vec<(String, bool)>,
    bin: PathBuf,
    bin_a: Option<PathBuf>,
    /// minimalkueue's `--zap-log-level`.
    kueue_log: String,
    /// More kube-apiserver flags (`KUEUE_BENCH_APISERVER_ARGS`).
    apiserver_args: Vec<String>,
}

/// Feature gates from `name`: `NAME=true|false,...`.
fn gates(name: &str) -> Result<Vec<(String, bool)>, BoxError> {
    let Ok(v) = std::env::var(name) else {
        return Ok(Vec::new());
    };
    v.split(',')
        .filter(|g| !g.is_empty())
        .map(|g| {
            g.split_once('=')
                .and_then(|(n, b)| Some((n.to_string(), b.parse().ok()?)))
                .ok_or_else(|| format!("{name}={v:?}: use NAME=true|false,...").into())
        })
        .collect()
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
    let order_s = if let Ok(p) = std::env::var("KUEUE_BENCH_PAIRS") {
        let pairs: usize = p
            .parse()
            .map_err(|_| format!("KUEUE_BENCH_PAIRS={p:?} is not a number of pairs"))?;
        "KBBK".chars().cycle().take(pairs * 2).collect()
    } else {
        let default = if smoke { "B" } else { "KBKBBKKB" };
        std::env::var("KUEUE_BENCH_ORDER").unwrap_or_else(|_| default.into())
    };
    let mut order = Vec::new();
    for c in order_s.chars() {
        order.push(match c.to_ascii_uppercase() {
            'K' => System::Kueue,
            'B' => System::Batchgate,
            'A' => System::BatchgateA,
            _ => {
                return Err(format!(
                    "KUEUE_BENCH_ORDER={order_s:?}: use K (minimalkueue), B (batchgate) and A (BATCHGATE_BENCH_BIN_A)"
                )
                .into())
            }
        });
    }
    match std::env::var("KUEUE_BENCH_SYSTEM").as_deref() {
        Err(_) => {}
        Ok("kueue") => order.retain(|s| *s == System::Kueue),
        Ok("batchgate") => order.retain(|s| *s != System::Kueue),
        Ok(v) => {
            return Err(format!("KUEUE_BENCH_SYSTEM={v:?}: use `kueue` or `batchgate`").into())
        }
    }
    let k = Knobs {
        smoke,
        config: match std::env::var("KUEUE_BENCH_CONFIG").as_deref() {
            Err(_) | Ok("baseline") => BenchConfig::Baseline,
            Ok("tas") => BenchConfig::Tas,
            Ok(v) => return Err(format!("KUEUE_BENCH_CONFIG={v:?}: use baseline or tas").into()),
        },
        scale: var("KUEUE_BENCH_SCALE", if smoke { 0.02 } else { 0.2 })?,
        cohorts: smoke.then_some(1),
        queues: smoke.then_some(2),
        order,
        timeout: Duration::from_secs(var("KUEUE_BENCH_TIMEOUT_SECS", 900u64)?),
        checker: !smoke && var("KUEUE_BENCH_CHECKER", 1u8)? == 1,
        keep: std::env::var("KUEUE_BENCH_KEEP").is_ok_and(|v| v == "1"),
        gates: gates("KUEUE_BENCH_GATES")?,
        gates_a: gates("KUEUE_BENCH_GATES_A")?,
        client: match std::env::var("KUEUE_BENCH_CLIENT").as_deref() {
            Err(_) | Ok("default") => (300.0, 500),
            Ok("harness") => (50.0, 100),
            Ok(v) => v
                .split_once('/')
                .and_then(|(q, b)| Some((q.parse().ok()?, b.parse().ok()?)))
                .ok_or_else(|| {
                    format!("KUEUE_BENCH_CLIENT={v:?}: use harness, default or QPS/BURST")
                })?,
        },
        bin: std::env::var_os("BATCHGATE_BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_batchgate"))),
        bin_a: std::env::var_os("BATCHGATE_BENCH_BIN_A").map(PathBuf::from),
        kueue_log: std::env::var("KUEUE_BENCH_KUEUE_LOG").unwrap_or_else(|_| "info".into()),
        apiserver_args: std::env::var("KUEUE_BENCH_APISERVER_ARGS")
            .map(|v| v.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
    };
    if k.order.contains(&System::BatchgateA) && k.bin_a.is_none() {
        return Err("KUEUE_BENCH_ORDER has A runs: set BATCHGATE_BENCH_BIN_A to that build".into());
    }
    if k.scale.is_nan() || k.scale <= 0.0 {
        return Err("KUEUE_BENCH_SCALE must be > 0".into());
    }
    if k.order.is_empty() {
        return Err("no runs: KUEUE_BENCH_ORDER/PAIRS/SYSTEM leave nothing to run".into());
    }
    Ok(k)
}

#[path = "support/crds.rs"]
mod crds;
#[path = "support/lost_work.rs"]
mod lost_work;
#[path = "support/process.rs"]
mod process;
use process::*;

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    if smoke {
        lost_work::self_check();
    }
    if let Err(e) = run(smoke) {
        eprintln!("kueue_side_by_side: {e}");
        std::process::exit(1);
    }
}

/// Spawns `cmd` with stderr (and stdout) copied to `log_path`; returns once a
/// log line contains every one of `ready`, or fails after `within`.
fn spawn_until(
    mut cmd: Command,
    what: &str,
    log_path: &Path,
    ready: &'static [&'static str],
    within: Duration,
) -> Result<Child, BoxError> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| format!("starting {what}: {e}"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    let log = Arc::new(std::sync::Mutex::new(std::fs::File::create(log_path)?));
    let pipes: Vec<Box<dyn std::io::Read + Send>> = vec![
        Box::new(child.stdout.take().ok_or("no stdout")?),
        Box::new(child.stderr.take().ok_or("no stderr")?),
    ];
    for pipe in pipes {
        let (tx, log) = (tx.clone(), log.clone());
        std::thread::spawn(move || {
            let mut told = false;
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Ok(mut f) = log.lock() {
                    let _ = writeln!(f, "{line}");
                }
                if !told && ready.iter().all(|r| line.contains(r)) {
                    told = true;
                    let _ = tx.send(());
                }
            }
        });
    }
    if rx.recv_timeout(within).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "{what} did not log {ready:?} within {} s; last lines of {}:\n{}",
            within.as_secs(),
            log_path.display(),
            log_tail(log_path, 40)
        )
        .into());
    }
    Ok(child)
}

// ---------------------------------------------------------------------------
// Upstream's binaries and configs.

struct Upstream {
    dir: PathBuf,
}

impl Upstream {
    fn build(names: &[&str]) -> Result<Upstream, BoxError> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/kueue/build.sh");
        let t = Instant::now();
        let out = Command::new(script)
            .args(names)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("running {script}: {e}"))?;
        if !out.status.success() {
            return Err(format!("{script} {} failed: {}", names.join(" "), out.status).into());
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let dir = stdout
            .lines()
            .last()
            .ok_or_else(|| format!("{script} printed no directory"))?;
        println!(
            "  Kueue {KUEUE_VERSION} {} ready in {:.1} s: {dir}",
            names.join(", "),
            t.elapsed().as_secs_f64()
        );
        Ok(Upstream {
            dir: PathBuf::from(dir),
        })
    }
    fn bin(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    fn src(&self) -> PathBuf {
        self.dir.join("src")
    }
    /// A file of upstream's `configs/<config>/`.
    fn config(&self, config: BenchConfig, file: &str) -> PathBuf {
        self.src()
            .join("test/performance/scheduler/configs")
            .join(config.dir())
            .join(file)
    }
}

/// Upstream's generator config with every workloadsSet's count
/// multiplied by `scale` (at least 1), and optionally fewer cohorts/queues.
/// Returns the YAML, the number of Workloads it makes and their work
/// (Σ request × runtime, in mCPU × ms).
/// Each Workload class's request (mCPU) and runtime (ms), by class name.
type Classes = BTreeMap<String, (f64, f64)>;

/// What the scaled generator config makes: its Workloads, their work in all
/// (Σ request × runtime, mCPU·ms) and the classes.
struct Workloads {
    total: u64,
    work_mcpu_ms: f64,
    classes: Classes,
    /// The Nodes the runner makes (the TAS config's topology; else 0).
    nodes: u64,
}

fn scaled_generator(src: &Path, k: &Knobs) -> Result<(String, Workloads), BoxError> {
    let text = std::fs::read_to_string(src)?;
    let mut doc: Value = serde_yaml::from_str(&text)?;
    let mut total = 0u64;
    let mut work = 0f64;
    let mut classes = Classes::new();
    let cohorts = doc
        .get_mut("cohorts")
        .and_then(Value::as_sequence_mut)
        .ok_or("generator config: no cohorts")?;
    for cohort in cohorts {
        if let Some(c) = k.cohorts {
            cohort["count"] = c.into();
        }
        let n_cohorts = cohort["count"].as_u64().unwrap_or(0);
        let sets = cohort
            .get_mut("queuesSets")
            .and_then(Value::as_sequence_mut)
            .ok_or("generator config: a cohort without queuesSets")?;
        for qs in sets {
            if let Some(q) = k.queues {
                qs["count"] = q.into();
            }
            let n_queues = qs["count"].as_u64().unwrap_or(0);
            let wsets = qs
                .get_mut("workloadsSets")
                .and_then(Value::as_sequence_mut)
                .ok_or("generator config: a queuesSet without workloadsSets")?;
            for ws in wsets {
                let n = ws["count"].as_u64().ok_or("workloadsSet without count")?;
                let scaled = ((n as f64 * k.scale).round() as u64).max(1);
                ws["count"] = scaled.into();
                let times = (n_cohorts * n_queues * scaled) as f64;
                for w in ws["workloads"].as_sequence().into_iter().flatten() {
                    total += n_cohorts * n_queues * scaled;
                    // One pod's request (`1`, `"500m"`) times its pods (TAS: `podCount`).
                    let pods = w["podCount"].as_f64().unwrap_or(1.0).max(1.0);
                    let cpu = cpu_millis(&w["request"]) * pods;
                    let runtime = w["runtimeMs"].as_f64().unwrap_or(0.0);
                    work += times * cpu * runtime;
                    if let Some(name) = w["className"].as_str() {
                        classes.insert(name.to_string(), (cpu, runtime));
                    }
                }
            }
        }
    }
    let made = Workloads {
        total,
        work_mcpu_ms: work,
        classes,
        nodes: topology_nodes(&doc),
    };
    Ok((serde_yaml::to_string(&doc)?, made))
}

/// A cpu quantity of the generator config (a number or a string such as
/// `"500m"`), in mCPU; 0 when it does not read.
fn cpu_millis(v: &Value) -> f64 {
    if let Some(n) = v.as_f64() {
        return n * 1000.0;
    }
    let s = v.as_str().unwrap_or("").trim();
    match s.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(0.0),
        None => s.parse::<f64>().map_or(0.0, |n| n * 1000.0),
    }
}

/// The Nodes upstream's topology generator makes: the product of the
/// topology's level counts (0 without a topology).
fn topology_nodes(generator: &Value) -> u64 {
    let Some(levels) = generator
        .get("topology")
        .and_then(|t| t.get("levels"))
        .and_then(Value::as_sequence)
    else {
        return 0;
    };
    levels.iter().map(|l| u64_at(l, "count")).product()
}

// ---------------------------------------------------------------------------
// The apiserver's own account: non-watch requests by verb and resource.

type ReqKey = (String, String, String); // verb, resource, subresource

#[derive(Default, Clone, Copy)]
struct ReqStat {
    count: f64,
    conflicts: f64,
    /// Bytes of the responses (`apiserver_response_sizes_sum`).
    sent: f64,
    /// Seconds the apiserver took answering them
    /// (`apiserver_request_duration_seconds_sum`).
    took_s: f64,
}

/// Request bodies the apiserver received, bytes by (verb, resource) as
/// `apiserver_request_body_size_bytes` labels them (verbs in lower case, no
/// subresource).
type BodyBytes = BTreeMap<(String, String), f64>;

/// The apiserver's requests to etcd by (operation, resource), as
/// `etcd_requests_total` counts them (what its watch cache did not
/// answer), and its clients' LISTs and WATCHes by resource
/// (`client LIST`, `client WATCH`).
type StorageOps = BTreeMap<(String, String), f64>;

/// What etcd did, from its own `/metrics`: the work every client of the
/// apiserver makes it do, whatever the apiserver's cache answers itself.
#[derive(Default, Clone, Copy)]
struct EtcdStat {
    /// `etcd_disk_wal_write_bytes_total`: what reached its log on disk.
    wal_bytes: f64,
    /// `etcd_network_client_grpc_received_bytes_total`: what the apiserver sent it.
    received: f64,
    /// `etcd_network_client_grpc_sent_bytes_total`: what it sent the apiserver
    /// (reads and watch events).
    sent: f64,
    /// `etcd_mvcc_put_total`: keys written.
    puts: f64,
    /// `etcd_mvcc_range_total`: reads.
    ranges: f64,
    /// `etcd_debugging_mvcc_events_total`: events sent to watchers.
    watch_events: f64,
    /// `etcd_debugging_mvcc_watcher_total`: watchers open (a gauge: as
    /// read, not a difference).
    watchers: f64,
}

impl EtcdStat {
    fn minus(self, before: EtcdStat) -> EtcdStat {
        EtcdStat {
            wal_bytes: self.wal_bytes - before.wal_bytes,
            received: self.received - before.received,
            sent: self.sent - before.sent,
            puts: self.puts - before.puts,
            ranges: self.ranges - before.ranges,
            watch_events: self.watch_events - before.watch_events,
            watchers: self.watchers,
        }
    }
}

/// etcd's counters, read over its plain-HTTP client URL on loopback.
fn etcd_metrics(cluster: &LocalCluster) -> Result<EtcdStat, BoxError> {
    let addr = cluster
        .etcd_url()
        .strip_prefix("http://")
        .ok_or("etcd's client URL is not plain http")?;
    let mut conn = std::net::TcpStream::connect(addr)?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        conn,
        "GET /metrics HTTP/1.0\r\nHost: {addr}\r\nAccept: text/plain\r\n\r\n"
    )?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut conn, &mut text)?;
    let mut out = EtcdStat::default();
    let mut seen = 0;
    for line in text.lines() {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = value.trim().parse::<f64>() else {
            continue;
        };
        let name = name.split('{').next().unwrap_or(name);
        let slot = match name {
            "etcd_disk_wal_write_bytes_total" => &mut out.wal_bytes,
            "etcd_network_client_grpc_received_bytes_total" => &mut out.received,
            "etcd_network_client_grpc_sent_bytes_total" => &mut out.sent,
            "etcd_mvcc_put_total" => &mut out.puts,
            "etcd_mvcc_range_total" => {
                out.ranges += v;
                continue;
            }
            "etcd_debugging_mvcc_events_total" => {
                out.watch_events += v;
                continue;
            }
            "etcd_debugging_mvcc_watcher_total" => {
                out.watchers += v;
                continue;
            }
            _ => continue,
        };
        *slot += v;
        seen += 1;
    }
    if seen < 4 {
        return Err(format!(
            "etcd's /metrics lacks the counters this bench reads ({seen} of 4 found)"
        )
        .into());
    }
    Ok(out)
}

fn label<'a>(labels: &'a str, name: &str) -> &'a str {
    let pat = format!("{name}=\"");
    labels
        .find(&pat)
        .map(|i| &labels[i + pat.len()..])
        .and_then(|r| r.split('"').next())
        .unwrap_or("")
}

/// The runner's reconcile workers for Workloads (its manager's
/// `GroupKindConcurrency`, v0.17.1).
const RUNNER_WORKERS: f64 = 5.0;

/// The apiserver's counters: requests, 409s and response bytes by verb,
/// resource and subresource, and request body bytes.
fn apiserver_requests(
    cluster: &LocalCluster,
) -> Result<(BTreeMap<ReqKey, ReqStat>, BodyBytes, StorageOps), BoxError> {
    let text = cluster.run_kubectl(&["get", "--raw", "/metrics"])?;
    let mut out: BTreeMap<ReqKey, ReqStat> = BTreeMap::new();
    let mut bodies = BodyBytes::new();
    let mut storage = StorageOps::new();
    for line in text.lines() {
        enum Which {
            Requests,
            Responses,
            Took,
            Bodies,
        }
        if let Some(r) = line.strip_prefix("etcd_requests_total{") {
            if let Some((labels, value)) = r.rsplit_once("} ") {
                if let Ok(v) = value.trim().parse::<f64>() {
                    *storage
                        .entry((
                            label(labels, "operation").to_string(),
                            // `type` before Kubernetes 1.33, `resource` after.
                            [label(labels, "type"), label(labels, "resource")].concat(),
                        ))
                        .or_default() += v;
                }
            }
            continue;
        }
        let (which, rest) = if let Some(r) = line.strip_prefix("apiserver_request_total{") {
            (Which::Requests, r)
        } else if let Some(r) = line.strip_prefix("apiserver_response_sizes_sum{") {
            (Which::Responses, r)
        } else if let Some(r) = line.strip_prefix("apiserver_request_duration_seconds_sum{") {
            (Which::Took, r)
        } else if let Some(r) = line.strip_prefix("apiserver_request_body_size_bytes_sum{") {
            (Which::Bodies, r)
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
        if let Which::Bodies = which {
            *bodies
                .entry((verb.to_string(), resource.to_string()))
                .or_default() += v;
            continue;
        }
        if let (Which::Requests, "WATCH" | "LIST") = (&which, verb) {
            if !resource.is_empty() {
                *storage
                    .entry((format!("client {verb}"), resource.to_string()))
                    .or_default() += v;
            }
        }
        // Watches are long-lived streams; non-resource GETs are /metrics, /healthz.
        if verb == "WATCH" || verb == "CONNECT" || resource.is_empty() {
            continue;
        }
        let s = out
            .entry((
                verb.to_string(),
                resource.to_string(),
                label(labels, "subresource").to_string(),
            ))
            .or_default();
        match which {
            Which::Requests => {
                s.count += v;
                if label(labels, "code") == "409" {
                    s.conflicts += v;
                }
            }
            Which::Responses => s.sent += v,
            Which::Took => s.took_s += v,
            Which::Bodies => unreachable!(),
        }
    }
    Ok((out, bodies, storage))
}

fn requests_delta(
    before: &BTreeMap<ReqKey, ReqStat>,
    after: &BTreeMap<ReqKey, ReqStat>,
) -> BTreeMap<ReqKey, ReqStat> {
    after
        .iter()
        .map(|(key, a)| {
            let b = before.get(key).copied().unwrap_or_default();
            let d = ReqStat {
                count: a.count - b.count,
                conflicts: a.conflicts - b.conflicts,
                sent: a.sent - b.sent,
                took_s: a.took_s - b.took_s,
            };
            (key.clone(), d)
        })
        .filter(|(_, s)| s.count >= 1.0)
        .collect()
}

fn bodies_delta(before: &BodyBytes, after: &BodyBytes) -> BodyBytes {
    after
        .iter()
        .map(|(key, a)| (key.clone(), a - before.get(key).copied().unwrap_or(0.0)))
        .filter(|(_, b)| *b >= 1.0)
        .collect()
}

// ---------------------------------------------------------------------------
// One run.

struct RunResult {
    system: System,
    workloads: u64,
    wall_s: f64,
    apiserver_cpu_s: f64,
    etcd_cpu_s: f64,
    manager_cpu_s: f64,
    manager_rss_mib: f64,
    requests: BTreeMap<ReqKey, ReqStat>,
    /// Request body bytes the apiserver received (all clients).
    bodies: BodyBytes,
    storage: StorageOps,
    etcd: EtcdStat,
    evictions: u64,
    /// Work lost to evictions, as the bench's own Workload watch saw it.
    lost: lost_work::Lost,
    /// Workload watch events the runner's recorder dropped.
    dropped_events: u64,
    /// Events batchgate's sink shed for want of apiserver time, as its log
    /// reports them every 10 s (the last interval may be missing); Kueue's
    /// broadcaster drops silently.
    events_shed: Option<u64>,
    /// Workloads the recorder saw finish (wlStates.csv).
    finished: u64,
    /// Per ClusterQueue class: the checker's usage, the work-done usage and
    /// the quota held as the runner saw it (see [`Held`]), in % of nominal x span.
    usage_pct: Vec<(String, f64, f64, f64)>,
    /// Per Workload class: mean ms from the runner seeing the last admission
    /// to it seeing `Finished`, and the class's runtime.
    hold_ms: Vec<(String, f64, f64)>,
    checker: String,
    /// The TAS config's premise, as read at the end of the run.
    tas: Option<TasPremise>,
    load_before: String,
    load_after: String,
}

impl RunResult {
    fn total_requests(&self) -> f64 {
        self.requests.values().map(|s| s.count).sum()
    }
    fn conflicts(&self) -> f64 {
        self.requests.values().map(|s| s.conflicts).sum()
    }
    /// Request and response bytes through the apiserver, per Workload, KiB.
    fn apiserver_kib(&self) -> f64 {
        let sent: f64 = self.requests.values().map(|s| s.sent).sum();
        let received: f64 = self.bodies.values().sum();
        (sent + received) / 1024.0 / self.workloads.max(1) as f64
    }
    fn etcd_wal_kib(&self) -> f64 {
        self.etcd.wal_bytes / 1024.0 / self.workloads.max(1) as f64
    }
    fn usage(&self) -> f64 {
        self.usage_pct.first().map_or(0.0, |u| u.1)
    }
    fn work_usage(&self) -> f64 {
        self.usage_pct.first().map_or(0.0, |u| u.2)
    }
    fn held_usage(&self) -> f64 {
        self.usage_pct.first().map_or(0.0, |u| u.3)
    }
    /// Mean ms the apiserver took over a write of a Workload's status,
    /// `PATCH` or `APPLY`, every client's (the runner's `Finished` and
    /// eviction applies are among them).
    fn status_write_ms(&self) -> f64 {
        let (n, took) = ["PATCH", "APPLY"]
            .iter()
            .filter_map(|verb| {
                let key = (
                    verb.to_string(),
                    "workloads".to_string(),
                    "status".to_string(),
                );
                self.requests.get(&key)
            })
            .fold((0.0, 0.0), |(n, t), s| (n + s.count, t + s.took_s));
        if n > 0.0 {
            took * 1e3 / n
        } else {
            0.0
        }
    }
    /// The wall the runner's own writes take at that mean: it finishes
    /// Workloads and completes evictions from [`RUNNER_WORKERS`] reconcile
    /// workers, each waiting for its write, so at most that many are in
    /// flight.
    fn runner_serial_s(&self) -> f64 {
        (self.finished + self.evictions) as f64 * self.status_write_ms() / 1e3 / RUNNER_WORKERS
    }
}

fn wait_crds(cluster: &LocalCluster, config: BenchConfig) -> Result<(), BoxError> {
    let mut args = vec![
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/workloads.kueue.x-k8s.io",
        "crd/clusterqueues.kueue.x-k8s.io",
        "crd/localqueues.kueue.x-k8s.io",
        "crd/resourceflavors.kueue.x-k8s.io",
        "crd/cohorts.kueue.x-k8s.io",
    ];
    if config == BenchConfig::Tas {
        args.push("crd/topologies.kueue.x-k8s.io");
    }
    // `kubectl wait` fails outright while a new CRD has no conditions yet.
    let mut tries = 0;
    while let Err(e) = cluster.run_kubectl(&args) {
        tries += 1;
        if tries == 40 {
            return Err(e.into());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Ok(())
}

fn start_manager(
    system: System,
    k: &Knobs,
    up: &Upstream,
    cluster: &LocalCluster,
    dir: &Path,
) -> Result<Child, BoxError> {
    match system {
        System::Kueue => {
            let mut cmd = Command::new(up.bin("minimalkueue"));
            // Its default log level is error; at info controller-runtime says
            // when the ClusterQueue controller's caches have synced.
            cmd.arg("--kubeconfig")
                .arg(cluster.kubeconfig())
                .arg(format!("--zap-log-level={}", k.kueue_log));
            if k.config == BenchConfig::Tas {
                // As upstream's runner starts it for `configs/tas`: the TAS
                // controllers (Node, Topology, ResourceFlavor) and indexers.
                cmd.arg("--enableTAS");
            }
            spawn_until(
                cmd,
                "minimalkueue",
                &dir.join("manager.log"),
                &["Starting workers", "clusterqueue"],
                Duration::from_secs(120),
            )
        }
        System::Batchgate | System::BatchgateA => {
            let bin = match system {
                System::BatchgateA => k.bin_a.as_ref().expect("checked in knobs"),
                _ => &k.bin,
            };
            let cert_dir = dir.join("certs");
            let status = Command::new(bin)
                .args(["certs", "--out"])
                .arg(&cert_dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_err(|e| format!("running {} certs: {e}", bin.display()))?;
            if !status.success() {
                return Err(format!("batchgate certs failed: {status}").into());
            }
            let cfg = dir.join("config.yaml");
            let (qps, burst) = k.client;
            let mut text = format!(
                "namespace: default\nreconciler:\n  leaseDurationSeconds: 15\n\
                 clientConnection:\n  qps: {qps}\n  burst: {burst}\n"
            );
            let gates = match system {
                System::BatchgateA => &k.gates_a,
                _ => &k.gates,
            };
            if !gates.is_empty() {
                text.push_str("featureGates:\n");
                for (name, on) in gates {
                    text.push_str(&format!("  {name}: {on}\n"));
                }
            }
            std::fs::write(&cfg, text)?;
            let mut cmd = Command::new(bin);
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
                .env(
                    "RUST_LOG",
                    std::env::var("KUEUE_BENCH_RUST_LOG").unwrap_or_else(|_| "info".into()),
                );
            spawn_until(
                cmd,
                "batchgate serve",
                &dir.join("manager.log"),
                &["queueing engine rebuilt"],
                Duration::from_secs(120),
            )
        }
    }
}

fn stop(child: &mut Child) {
    // SIGINT first, as upstream's runner stops minimalkueue; then SIGKILL.
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    for _ in 0..50 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn u64_at(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The checker's usage per ClusterQueue class, computed as its
/// `TestScalability/ClusterQueueClasses` does: cpuUsed × 100 /
/// (nominalQuota × (lastEventTime − firstEventTime in ms)).
/// Also returns, per class, the usage the same span would show if the status
/// held exactly the work done (Σ request × runtime of all Workloads / (nominal
/// × span)): the checker's figure minus this is quota the status reports
/// beyond the runtimes (admission → Finished latency, preempted runs, stale
/// status).
/// The quota the Workloads held as the runner saw it: from the last time it
/// saw a Workload admitted to the time it saw it `Finished` (wlStates.csv:
/// id, class, namespace, name, ms to admitted, ms to finish, evictions; both
/// times from the Workload's first event), times the class's request. The
/// status can only show more (it counts from the admission write, before
/// the runner sees it, to the release after the runner's `Finished`), so
/// when the checker's usage is close to this figure the status is right and
/// the hold is the job's: its runtime plus the runner's lag in marking it
/// `Finished`.
struct Held {
    finished: u64,
    mcpu_ms: f64,
    by_class: Vec<(String, f64, f64)>,
}

impl Held {
    fn read(path: &Path, classes: &Classes) -> Held {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut finished = 0;
        let mut mcpu_ms = 0.0;
        let mut sums: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let ms = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            let (admitted, done) = (ms(4), ms(5));
            if done <= 0.0 {
                continue;
            }
            finished += 1;
            let class = f.get(1).copied().unwrap_or("");
            let hold = (done - admitted).max(0.0);
            mcpu_ms += hold * classes.get(class).map_or(0.0, |c| c.0);
            let e = sums.entry(class).or_default();
            e.0 += hold;
            e.1 += 1.0;
        }
        let by_class = sums
            .into_iter()
            .map(|(c, (sum, n))| {
                let runtime = classes.get(c).map_or(0.0, |c| c.1);
                (c.to_string(), sum / n, runtime)
            })
            .collect();
        Held {
            finished,
            mcpu_ms,
            by_class,
        }
    }
}

fn checker_usage(
    summary: &Value,
    work: f64,
    held: f64,
) -> Result<Vec<(String, f64, f64, f64)>, BoxError> {
    let mut out = Vec::new();
    let Some(classes) = summary
        .get("clusterQueueClasses")
        .and_then(Value::as_mapping)
    else {
        return Ok(out);
    };
    for (name, c) in classes {
        let first = c
            .get("firstEventTime")
            .and_then(Value::as_str)
            .ok_or("summary: no firstEventTime")?;
        let last = c
            .get("lastEventTime")
            .and_then(Value::as_str)
            .ok_or("summary: no lastEventTime")?;
        let first: k8s_openapi::jiff::Timestamp = first.parse()?;
        let last: k8s_openapi::jiff::Timestamp = last.parse()?;
        let elapsed_ms = last.duration_since(first).as_millis() as f64;
        let quota = u64_at(c, "nominalQuota") as f64;
        let used = u64_at(c, "cpuUsed") as f64;
        let pct = |v: f64| {
            if quota > 0.0 && elapsed_ms > 0.0 {
                v * 100.0 / (quota * elapsed_ms)
            } else {
                0.0
            }
        };
        out.push((
            name.as_str().unwrap_or("?").to_string(),
            pct(used),
            pct(work),
            pct(held),
        ));
    }
    Ok(out)
}

fn run_checker(
    up: &Upstream,
    config: BenchConfig,
    dir: &Path,
    wall_ms: u64,
    cpu_s: f64,
    rss_kib: u64,
) -> String {
    // The checker also bounds the manager's wall time (upstream's runner
    // records minimalkueue's process stats); the runner's wall stands in
    // for it here, for both systems.
    let stats = dir.join("cmdStats.yaml");
    let ms = (cpu_s * 1000.0) as u64;
    if let Err(e) = std::fs::write(
        &stats,
        format!("wallMs: {wall_ms}\nuserMs: {ms}\nsysMs: 0\nmaxrss: {rss_kib}\n"),
    ) {
        return format!("not run ({e})");
    }
    let out = Command::new(up.bin("checker.test"))
        .arg("-test.v")
        .arg(format!(
            "-summary={}",
            dir.join("out/summary.yaml").display()
        ))
        .arg(format!("-cmdStats={}", stats.display()))
        .arg(format!(
            "-range={}",
            up.config(config, "rangespec.yaml").display()
        ))
        // As the runner: v0.17.1's test utilities panic at init without it.
        .env("PROJECT_DIR", format!("{}/", up.src().display()))
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return format!("not run ({e})"),
    };
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let _ = std::fs::write(dir.join("checker.log"), &text);
    let failed: Vec<String> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("--- FAIL") && l.matches('/').count() >= 2)
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(|t| t.trim_start_matches("TestScalability/").to_string())
        .collect();
    if out.status.success() {
        "PASS".into()
    } else if failed.is_empty() {
        format!("FAIL ({})", out.status)
    } else {
        format!("FAIL {}", failed.join(","))
    }
}

fn one_run(
    i: usize,
    system: System,
    k: &Knobs,
    up: &Upstream,
    generator: &Path,
    made: &Workloads,
) -> Result<RunResult, BoxError> {
    let load_before = loadavg();
    let work = tempfile::Builder::new()
        .prefix("batchgate-kueue-bench-")
        .tempdir()?;
    let dir = work.path();
    let t = Instant::now();
    let cluster = LocalCluster::start(ClusterOptions {
        nodes: Vec::new(),
        extra_apiserver_args: APISERVER_ARGS
            .iter()
            .map(|s| s.to_string())
            .chain(k.apiserver_args.iter().cloned())
            .collect(),
        disabled_controllers: match k.config {
            BenchConfig::Baseline => Vec::new(),
            // The runner's Nodes have no kubelet: see the module doc.
            BenchConfig::Tas => NO_NODE_CONTROLLERS.iter().map(|s| s.to_string()).collect(),
        },
        ..ClusterOptions::default()
    })?;
    let crds = match system {
        System::Kueue => up
            .src()
            .join("config/components/crd/bases")
            .display()
            .to_string(),
        System::Batchgate | System::BatchgateA => {
            crds::without_conversion_webhook(dir)?.display().to_string()
        }
    };
    // Server-side: the Workload CRD is larger than client-side apply's annotation limit.
    cluster.run_kubectl(&["apply", "--server-side", "-f", &crds])?;
    wait_crds(&cluster, k.config)?;
    let mut manager = start_manager(system, k, up, &cluster, dir)?;
    let mgr_pid = manager.id();
    let pid_of = |name: &str| {
        cluster
            .pids()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| p)
            .ok_or(format!("the local cluster has no {name} pid"))
    };
    let (apiserver_pid, etcd_pid) = (pid_of("kube-apiserver")?, pid_of("etcd")?);
    println!(
        "run {i}: {} (cluster and manager up in {:.1} s, work dir {})",
        system.name(),
        t.elapsed().as_secs_f64(),
        dir.display()
    );

    let rss_max = Arc::new(AtomicU64::new(0));
    let stop_sampling = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (rss_max, stop_sampling) = (rss_max.clone(), stop_sampling.clone());
        std::thread::spawn(move || {
            while !stop_sampling.load(Ordering::Relaxed) {
                if let Some(kib) = status_kib(mgr_pid, "VmRSS:") {
                    rss_max.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir)?;
    let summary_path = out_dir.join("summary.yaml");
    let (req_before, bodies_before, storage_before) = apiserver_requests(&cluster)?;
    let etcd_before = etcd_metrics(&cluster)?;
    let (api_cpu0, mgr_cpu0, etcd_cpu0) = (
        cpu_secs(apiserver_pid),
        cpu_secs(mgr_pid),
        cpu_secs(etcd_pid),
    );
    let mcpu = made
        .classes
        .iter()
        .map(|(c, (cpu, _))| (c.clone(), *cpu))
        .collect();
    let lost = lost_work::LostWork::watch(
        cluster.kubeconfig(),
        mcpu,
        k.keep.then(|| dir.join("workloads.tsv")),
    );
    let start = Instant::now();
    let mut runner = Command::new(up.bin("runner"));
    runner
        .arg(format!("--generatorConfig={}", generator.display()))
        .arg(format!("-o={}", out_dir.display()))
        .args(["--qps=1000", "--burst=2000"])
        .arg(format!("--timeout={}s", k.timeout.as_secs()))
        .env("KUBECONFIG", cluster.kubeconfig())
        // Its test utilities look for the Makefile without this (and panic).
        .env("PROJECT_DIR", format!("{}/", up.src().display()))
        .stdout(std::fs::File::create(dir.join("runner.log"))?)
        .stderr(std::fs::File::create(dir.join("runner.err.log"))?);
    die_with_parent(&mut runner);
    let mut runner = runner
        .spawn()
        .map_err(|e| format!("starting the runner: {e}"))?;
    let deadline = start + k.timeout + Duration::from_secs(60);
    let mut exited = None;
    // The summary is written in one call; wait for it to appear, then a beat
    // for the write to complete (the recorder's CSVs come right after).
    while !summary_path.exists() {
        if let Ok(Some(status)) = runner.try_wait() {
            exited = Some(status);
            if !summary_path.exists() {
                break;
            }
        }
        if Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let wall = start.elapsed();
    // Right after the summary the runner writes two CSVs and starts its
    // cleanup; hold it still while the apiserver's counters are read so no
    // cleanup request is counted.
    let runner_pid = runner.id() as i32;
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(runner_pid, libc::SIGSTOP);
    }
    let (api_cpu1, mgr_cpu1, etcd_cpu1) = (
        cpu_secs(apiserver_pid),
        cpu_secs(mgr_pid),
        cpu_secs(etcd_pid),
    );
    let scraped = apiserver_requests(&cluster).and_then(|r| Ok((r, etcd_metrics(&cluster)?)));
    let lost = lost.stop();
    stop_sampling.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let hwm = status_kib(mgr_pid, "VmHWM:").unwrap_or(0);
    let rss_kib = rss_max.load(Ordering::Relaxed).max(hwm);
    let load_after = loadavg();
    // Still before the cleanup: what the TAS run's premise needs to hold.
    let tas = (k.config == BenchConfig::Tas && summary_path.exists())
        .then(|| tas_premise(&cluster))
        .transpose();
    // SAFETY: as above.
    unsafe {
        libc::kill(runner_pid, libc::SIGCONT);
    }

    let fail = |msg: String, runner: &mut Child, manager: &mut Child| -> BoxError {
        let _ = runner.kill();
        let _ = runner.wait();
        stop(manager);
        let kept = work_keep(dir);
        format!("run {i} ({}): {msg}; work dir kept: {kept}", system.name()).into()
    };
    let ((req_after, bodies_after, storage_after), etcd_after) = match scraped {
        Ok(s) => s,
        Err(e) => {
            return Err(fail(
                format!("reading the apiserver's and etcd's metrics after the run: {e}"),
                &mut runner,
                &mut manager,
            ))
        }
    };
    let tas = match tas {
        Ok(t) => t,
        Err(e) => {
            return Err(fail(
                format!("reading Nodes and Workloads for the TAS premise: {e}"),
                &mut runner,
                &mut manager,
            ))
        }
    };
    if let Some(t) = &tas {
        if let Some(why) = t.unmet(made) {
            return Err(fail(
                format!("the TAS run's premise is not met: {why}"),
                &mut runner,
                &mut manager,
            ));
        }
    }
    // Premise: the watch saw the Workloads run (else "nothing lost" means nothing).
    let lost = match lost {
        Ok(l) if l.admitted >= made.total / 2 => l,
        Ok(l) => {
            return Err(fail(
                format!(
                "the bench's Workload watch saw {} of {} Workloads hold quota ({} watch errors)",
                l.admitted, made.total, l.errors
            ),
                &mut runner,
                &mut manager,
            ))
        }
        Err(e) => {
            return Err(fail(
                format!("the bench's Workload watch: {e}"),
                &mut runner,
                &mut manager,
            ))
        }
    };
    if !summary_path.exists() {
        let why = match exited {
            Some(s) => format!("the runner exited ({s}) without writing summary.yaml"),
            None => format!(
                "no summary.yaml after {:.0} s",
                start.elapsed().as_secs_f64()
            ),
        };
        return Err(fail(why, &mut runner, &mut manager));
    }
    std::thread::sleep(Duration::from_millis(200));
    // The runner now deletes what it made (not counted); let it, within bounds.
    let cleanup_deadline = Instant::now() + Duration::from_secs(60);
    while runner.try_wait().ok().flatten().is_none() && Instant::now() < cleanup_deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = runner.kill();
    let _ = runner.wait();
    stop(&mut manager);

    let summary: Value = serde_yaml::from_str(&std::fs::read_to_string(&summary_path)?)?;
    let events_shed = (system != System::Kueue).then(|| events_shed(&dir.join("manager.log")));
    let mut evictions = 0;
    if let Some(classes) = summary.get("workloadClasses").and_then(Value::as_mapping) {
        for c in classes.values() {
            evictions += u64_at(c, "totalEvictions");
        }
    }
    let held = Held::read(&out_dir.join("wlStates.csv"), &made.classes);
    let usage_pct = checker_usage(&summary, made.work_mcpu_ms, held.mcpu_ms)?;
    let checker = if k.checker {
        run_checker(
            up,
            k.config,
            dir,
            wall.as_millis() as u64,
            mgr_cpu1 - mgr_cpu0,
            rss_kib,
        )
    } else {
        "not run".into()
    };
    if k.keep {
        println!("  work dir kept: {}", work_keep(dir));
    }
    drop(cluster);
    drop(work);
    Ok(RunResult {
        system,
        workloads: made.total,
        wall_s: wall.as_secs_f64(),
        apiserver_cpu_s: api_cpu1 - api_cpu0,
        etcd_cpu_s: etcd_cpu1 - etcd_cpu0,
        manager_cpu_s: mgr_cpu1 - mgr_cpu0,
        manager_rss_mib: rss_kib as f64 / 1024.0,
        requests: requests_delta(&req_before, &req_after),
        bodies: bodies_delta(&bodies_before, &bodies_after),
        storage: bodies_delta(&storage_before, &storage_after),
        etcd: etcd_after.minus(etcd_before),
        evictions,
        lost,
        dropped_events: u64_at(&summary, "droppedWorkloadEvents"),
        events_shed,
        finished: held.finished,
        usage_pct,
        hold_ms: held.by_class,
        checker,
        tas,
        load_before,
        load_after,
    })
}

/// The TAS run's premise, read with the runner held still right after it
/// wrote its summary (before its cleanup deletes anything): the Nodes it
/// made are all there, Ready, schedulable and untainted (the same node
/// shape for both systems, to the end), and every admission there carries
/// a `topologyAssignment` on each of its pod sets (TAS really placed it).
/// A Workload with no admission left must be `Finished` and `Evicted`: the
/// runner clears an evicted Workload's quota reservation even after it
/// applied `Finished` (its reconcile looks at the eviction first), so a
/// manager that evicts a Workload the runner has just finished leaves it
/// so. Any other Workload without an admission fails the premise.
struct TasPremise {
    nodes: u64,
    nodes_usable: u64,
    workloads: u64,
    /// Workloads whose `status.admission` has a `topologyAssignment` with
    /// levels on every pod set assignment.
    placed: u64,
    /// Workloads with an admission that lacks a `topologyAssignment` on
    /// some pod set.
    admitted_unplaced: u64,
    /// Workloads `Finished` and `Evicted` with no admission left.
    finished_evicted: u64,
    /// Distinct lowest-level values (nodes) the assignments name.
    leaves_used: u64,
}

impl TasPremise {
    fn unmet(&self, made: &Workloads) -> Option<String> {
        if self.nodes != made.nodes || self.nodes_usable != made.nodes {
            return Some(format!(
                "{} of the {} Nodes the runner makes are there, {} of them Ready, schedulable and untainted",
                self.nodes, made.nodes, self.nodes_usable
            ));
        }
        if self.workloads != made.total
            || self.admitted_unplaced > 0
            || self.placed + self.finished_evicted != made.total
        {
            return Some(format!(
                "{} of the {} Workloads are there: {} admitted with a topologyAssignment, {} admitted without one, {} finished and evicted with no admission left",
                self.workloads, made.total, self.placed, self.admitted_unplaced, self.finished_evicted
            ));
        }
        None
    }
}

fn tas_premise(cluster: &LocalCluster) -> Result<TasPremise, BoxError> {
    use serde_json::Value as Json;
    let list = |args: &[&str]| -> Result<Vec<Json>, BoxError> {
        let v: Json = serde_json::from_str(&cluster.run_kubectl(args)?)?;
        Ok(v["items"].as_array().cloned().unwrap_or_default())
    };
    // Is the object's condition `t` True?
    let condition = |obj: &Json, t: &str| {
        obj["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == t && c["status"] == "True")
    };
    let nodes = list(&["get", "nodes", "-l", "tas-node-group=tas", "-o", "json"])?;
    let usable = nodes
        .iter()
        .filter(|n| {
            let ready = condition(n, "Ready");
            let tainted = n["spec"]["taints"]
                .as_array()
                .is_some_and(|t| !t.is_empty());
            ready && !tainted && n["spec"]["unschedulable"] != true
        })
        .count() as u64;
    let workloads = list(&[
        "get",
        "workloads.v1beta2.kueue.x-k8s.io",
        "-A",
        "-o",
        "json",
    ])?;
    let (mut placed, mut admitted_unplaced, mut finished_evicted) = (0, 0, 0);
    let mut leaves = std::collections::BTreeSet::new();
    for wl in &workloads {
        let status = &wl["status"];
        let psas = status["admission"]["podSetAssignments"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let all = !psas.is_empty()
            && psas.iter().all(|p| {
                p["topologyAssignment"]["levels"]
                    .as_array()
                    .is_some_and(|l| !l.is_empty())
            });
        if all {
            placed += 1;
        } else if !status["admission"].is_null() {
            admitted_unplaced += 1;
        } else if condition(wl, "Finished") && condition(wl, "Evicted") {
            finished_evicted += 1;
        }
        for p in &psas {
            leaves.extend(leaf_values(&p["topologyAssignment"]));
        }
    }
    Ok(TasPremise {
        nodes: nodes.len() as u64,
        nodes_usable: usable,
        workloads: workloads.len() as u64,
        placed,
        admitted_unplaced,
        finished_evicted,
        leaves_used: leaves.len() as u64,
    })
}

/// The lowest-level values a v1beta2 `topologyAssignment` names: each
/// slice's last level, `universal` or `individual` values with the
/// optional common `prefix` and `suffix`.
fn leaf_values(t: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for slice in t["slices"].as_array().into_iter().flatten() {
        let Some(last) = slice["valuesPerLevel"].as_array().and_then(|v| v.last()) else {
            continue;
        };
        if let Some(u) = last["universal"].as_str() {
            out.push(u.to_string());
        }
        let ind = &last["individual"];
        let (pre, suf) = (
            ind["prefix"].as_str().unwrap_or(""),
            ind["suffix"].as_str().unwrap_or(""),
        );
        for root in ind["roots"].as_array().into_iter().flatten() {
            out.push(format!("{pre}{}{suf}", root.as_str().unwrap_or("")));
        }
    }
    out
}

/// Sums the `dropped=N` of batchgate's "events dropped" log lines.
fn events_shed(log: &Path) -> u64 {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("events dropped"))
        .filter_map(|l| l.split("dropped=").nth(1))
        .filter_map(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Copies the work dir next to it under a stable name (the TempDir itself is
/// removed on drop) and returns where.
fn work_keep(dir: &Path) -> String {
    let kept = dir.with_extension("kept");
    let ok = Command::new("cp")
        .arg("-r")
        .arg(dir)
        .arg(&kept)
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        kept.display().to_string()
    } else {
        format!("(copy failed) {}", dir.display())
    }
}

// ---------------------------------------------------------------------------
// Reporting.

fn print_run(i: usize, r: &RunResult) {
    let n = r.workloads.max(1) as f64;
    println!(
        "  {:<9} wall {:>6.1} s | apiserver CPU {:>6.1} s | etcd CPU {:>5.1} s, WAL {:.1} KiB/Workload, puts/Workload {:.2} | apiserver bytes {:.1} KiB/Workload | manager CPU {:>5.1} s, max RSS {:>6.1} MiB | requests/Workload {:>5.2}, 409s {:>4.0} | evictions {:>4} (runner's dropped Workload events {}), work lost {:.1} cpu-s in {} evictions seen | events shed {} | usage {:>5.1} % (held as the runner saw it {:.1} %, work done {:.1} %) | checker {} | load {} -> {}",
        r.system.name(),
        r.wall_s,
        r.apiserver_cpu_s,
        r.etcd_cpu_s,
        r.etcd_wal_kib(),
        r.etcd.puts / n,
        r.apiserver_kib(),
        r.manager_cpu_s,
        r.manager_rss_mib,
        r.total_requests() / n,
        r.conflicts(),
        r.evictions,
        r.dropped_events,
        r.lost.mcpu_ms / 1e6,
        r.lost.victims,
        r.events_shed.map_or("not logged".to_string(), |n| format!(">= {n}")),
        r.usage(),
        r.held_usage(),
        r.work_usage(),
        r.checker,
        r.load_before,
        r.load_after,
    );
    let mut rows: Vec<(&ReqKey, &ReqStat)> = r.requests.iter().collect();
    rows.sort_by(|a, b| b.1.count.total_cmp(&a.1.count));
    let top: Vec<String> = rows
        .iter()
        .take(8)
        .map(|((verb, res, sub), s)| {
            let r = if sub.is_empty() {
                res.clone()
            } else {
                format!("{res}/{sub}")
            };
            format!("{verb} {r} {:.2}", s.count / n)
        })
        .collect();
    println!("    run {i} requests per Workload: {}", top.join(", "));
    let mut ops: Vec<(&(String, String), &f64)> = r.storage.iter().collect();
    ops.sort_by(|a, b| b.1.total_cmp(a.1));
    let ops: Vec<String> = ops
        .iter()
        .filter(|(_, v)| **v >= 5.0)
        .map(|((op, ty), v)| format!("{op} {ty} {v:.0}"))
        .collect();
    println!(
        "    run {i} apiserver -> etcd, and clients' LISTs and WATCHes (counts): {}; etcd ranges {:.2}, events to watchers {:.2} per Workload, {} watchers open at the end",
        ops.join(", "),
        r.etcd.ranges / n,
        r.etcd.watch_events / n,
        r.etcd.watchers
    );
    if let Some(t) = &r.tas {
        println!(
            "    run {i} TAS: {}/{} Workloads admitted with a topologyAssignment ({} finished and evicted with no admission left), on {} distinct nodes; {}/{} Nodes Ready, schedulable, untainted at the end",
            t.placed, t.workloads, t.finished_evicted, t.leaves_used, t.nodes_usable, t.nodes
        );
    }
    let holds: Vec<String> = r
        .hold_ms
        .iter()
        .map(|(c, hold, runtime)| format!("{c} {hold:.0} ms (runs {runtime:.0})"))
        .collect();
    println!(
        "    run {i} admitted -> Finished as the runner saw it, mean: {}",
        holds.join(", ")
    );
    println!(
        "    run {i} a Workload status write (PATCH or APPLY, all clients) took {:.1} ms at the mean; the runner's {} Finished + {} eviction writes, {RUNNER_WORKERS} at a time, come to {:.1} s of the {:.1} s wall",
        r.status_write_ms(),
        r.finished,
        r.evictions,
        r.runner_serial_s(),
        r.wall_s,
    );
}

fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// Fewer pairs than this and the bench prints no ratio: on a shared
/// machine two or three pairs can land on either side of a target.
const MIN_PAIRS: usize = 4;

/// Adjacent runs of `a` and `b` in run order, each run in at most one pair:
/// (a's run, b's run).
fn pairs(results: &[RunResult], a: System, b: System) -> Vec<(&RunResult, &RunResult)> {
    let mut out = Vec::new();
    let mut pending: Option<&RunResult> = None;
    for r in results {
        match pending {
            _ if r.system != a && r.system != b => {}
            Some(p) if p.system != r.system => {
                out.push(if p.system == a { (p, r) } else { (r, p) });
                pending = None;
            }
            _ => pending = Some(r),
        }
    }
    out
}

/// The metrics of `b`'s runs against `a`'s: each side's mean and range, and
/// the ratio of each adjacent pair with their spread; no ratio from fewer
/// than [`MIN_PAIRS`] pairs.
fn compare(results: &[RunResult], a: System, b: System) {
    let by = |s: System| -> Vec<&RunResult> { results.iter().filter(|r| r.system == s).collect() };
    let (kq, bg) = (by(a), by(b));
    let paired = pairs(results, a, b);
    type Metric = (&'static str, &'static str, fn(&RunResult) -> f64);
    let metrics: [Metric; 20] = [
        ("runner wall", "s", |r| r.wall_s),
        ("kube-apiserver CPU", "s", |r| r.apiserver_cpu_s),
        ("etcd CPU", "s", |r| r.etcd_cpu_s),
        ("manager CPU", "s", |r| r.manager_cpu_s),
        ("manager max RSS", "MiB", |r| r.manager_rss_mib),
        ("requests per Workload", "", |r| {
            r.total_requests() / r.workloads.max(1) as f64
        }),
        ("apiserver KiB per Workload", "", |r| r.apiserver_kib()),
        ("etcd WAL KiB per Workload", "", |r| r.etcd_wal_kib()),
        ("etcd puts per Workload", "", |r| {
            r.etcd.puts / r.workloads.max(1) as f64
        }),
        ("etcd in KiB per Workload", "", |r| {
            r.etcd.received / 1024.0 / r.workloads.max(1) as f64
        }),
        ("etcd out KiB per Workload", "", |r| {
            r.etcd.sent / 1024.0 / r.workloads.max(1) as f64
        }),
        ("409 conflicts", "", |r| r.conflicts()),
        ("evictions", "", |r| r.evictions as f64),
        ("work lost to evictions, cpu-s", "", |r| {
            r.lost.mcpu_ms / 1e6
        }),
        ("usage (checker's formula)", "%", |r| r.usage()),
        ("held as the runner saw it", "%", |r| r.held_usage()),
        ("work done / (nominal x span)", "%", |r| r.work_usage()),
        ("finished Workloads", "", |r| r.finished as f64),
        ("Workload status write, mean", "ms", |r| r.status_write_ms()),
        ("the runner's writes, 5 at a time", "s", |r| {
            r.runner_serial_s()
        }),
    ];
    println!(
        "summary (mean, min-max over runs; ratio = {} / {} of each adjacent pair: mean [min-max] over {} pairs):",
        b.name(),
        a.name(),
        paired.len()
    );
    let enough = paired.len() >= MIN_PAIRS;
    if !enough {
        println!(
            "  no ratio printed: {} pairs, {MIN_PAIRS} needed (KUEUE_BENCH_PAIRS={MIN_PAIRS} or more)",
            paired.len()
        );
    }
    println!(
        "  | {:<28} | {:<24} | {:<24} | {:<19} |",
        "metric",
        format!("{} ({} runs)", a.name(), kq.len()),
        format!("{} ({} runs)", b.name(), bg.len()),
        "ratio [spread]"
    );
    let cell = |rs: &[&RunResult], f: fn(&RunResult) -> f64, unit: &str| -> String {
        if rs.is_empty() {
            return "-".into();
        }
        let v: Vec<f64> = rs.iter().map(|r| f(r)).collect();
        let (mean, min, max) = stats(&v);
        let p = if mean.abs() < 10.0 { 2 } else { 1 };
        format!("{mean:.p$} {unit} ({min:.p$}-{max:.p$})")
    };
    for (name, unit, f) in metrics {
        let ratios: Vec<f64> = paired
            .iter()
            .map(|(x, y)| f(y) / f(x))
            .filter(|q| q.is_finite())
            .collect();
        let ratio = if !enough || ratios.len() < MIN_PAIRS {
            "-".into()
        } else {
            let (mean, min, max) = stats(&ratios);
            format!("{mean:.2}x [{min:.2}-{max:.2}]")
        };
        println!(
            "  | {name:<28} | {:<24} | {:<24} | {ratio:<19} |",
            cell(&kq, f, unit),
            cell(&bg, f, unit)
        );
    }
    if !paired.is_empty() {
        let s: Vec<String> = paired
            .iter()
            .map(|(x, y)| {
                format!(
                    "wall {:.2} apiserver {:.2} etcd {:.2}",
                    y.wall_s / x.wall_s,
                    y.apiserver_cpu_s / x.apiserver_cpu_s,
                    y.etcd_cpu_s / x.etcd_cpu_s
                )
            })
            .collect();
        println!(
            "  each pair ({} / {}, run order): {}",
            b.name(),
            a.name(),
            s.join("; ")
        );
    }
    let loads: Vec<f64> = results
        .iter()
        .flat_map(|r| [&r.load_before, &r.load_after])
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    let (_, lo, hi) = stats(&loads);
    println!(
        "  machine: {}, {} cores; 1-minute load {lo:.1}-{hi:.1} over the runs",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
}

fn summarise(results: &[RunResult]) {
    let by = |s: System| -> Vec<&RunResult> { results.iter().filter(|r| r.system == s).collect() };
    let (kq, bg, ba) = (
        by(System::Kueue),
        by(System::Batchgate),
        by(System::BatchgateA),
    );
    if !kq.is_empty() || ba.is_empty() {
        compare(results, System::Kueue, System::Batchgate);
    }
    if !ba.is_empty() {
        compare(results, System::BatchgateA, System::Batchgate);
    }
    // Requests per Workload by verb and resource, averaged over each system's
    // runs; without Kueue runs, batchgate A takes its column.
    let (kq, first) = if kq.is_empty() && !ba.is_empty() {
        (ba, "batchgate A")
    } else {
        (kq, "Kueue")
    };
    let mut keys: Vec<ReqKey> = results
        .iter()
        .flat_map(|r| r.requests.keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    let per = |rs: &[&RunResult], key: &ReqKey, field: fn(&ReqStat) -> f64| -> f64 {
        if rs.is_empty() {
            return 0.0;
        }
        rs.iter()
            .map(|r| {
                let s = r.requests.get(key).copied().unwrap_or_default();
                field(&s) / r.workloads.max(1) as f64
            })
            .sum::<f64>()
            / rs.len() as f64
    };
    let count: fn(&ReqStat) -> f64 = |s| s.count;
    let conflicts: fn(&ReqStat) -> f64 = |s| s.conflicts;
    let kib: fn(&ReqStat) -> f64 = |s| s.sent / 1024.0;
    type Row = (ReqKey, [f64; 6]);
    let mut rows: Vec<Row> = keys
        .into_iter()
        .map(|key| {
            let v = [
                per(&kq, &key, count),
                per(&bg, &key, count),
                per(&kq, &key, conflicts),
                per(&bg, &key, conflicts),
                per(&kq, &key, kib),
                per(&bg, &key, kib),
            ];
            (key, v)
        })
        .filter(|(_, v)| v[0] >= 0.005 || v[1] >= 0.005)
        .collect();
    rows.sort_by(|x, y| (y.1[0] + y.1[1]).total_cmp(&(x.1[0] + x.1[1])));
    println!("apiserver requests per Workload by verb and resource (non-watch, all clients, runner included; mean of runs; KiB = response bytes):");
    println!(
        "  | {:<7} | {:<34} | {:>7} | {:>9} | {:>11} | {:>14} | {:>9} | {:>13} |",
        "verb",
        "resource",
        first,
        "batchgate",
        format!("{first} 409s"),
        "batchgate 409s",
        format!("{first} KiB"),
        "batchgate KiB"
    );
    for ((verb, res, sub), v) in rows {
        let r = if sub.is_empty() {
            res
        } else {
            format!("{res}/{sub}")
        };
        println!(
            "  | {verb:<7} | {r:<34} | {:>7.3} | {:>9.3} | {:>11.3} | {:>14.3} | {:>9.3} | {:>13.3} |",
            v[0], v[1], v[2], v[3], v[4], v[5]
        );
    }
    // Request bodies: what each client made the apiserver take in.
    let mut body_keys: Vec<(String, String)> = results
        .iter()
        .flat_map(|r| r.bodies.keys().cloned())
        .collect();
    body_keys.sort();
    body_keys.dedup();
    let body = |rs: &[&RunResult], key: &(String, String)| -> f64 {
        if rs.is_empty() {
            return 0.0;
        }
        rs.iter()
            .map(|r| r.bodies.get(key).copied().unwrap_or(0.0) / 1024.0 / r.workloads.max(1) as f64)
            .sum::<f64>()
            / rs.len() as f64
    };
    println!("request bodies per Workload, KiB, by verb and resource (all clients; mean of runs):");
    println!(
        "  | {:<7} | {:<34} | {:>9} | {:>9} |",
        "verb", "resource", first, "batchgate"
    );
    for key in body_keys {
        let (a, b) = (body(&kq, &key), body(&bg, &key));
        if a >= 0.005 || b >= 0.005 {
            println!("  | {:<7} | {:<34} | {a:>9.3} | {b:>9.3} |", key.0, key.1);
        }
    }
}

fn run(smoke: bool) -> Result<(), BoxError> {
    let k = knobs(smoke)?;
    let wants_kueue = k.order.contains(&System::Kueue);
    let mut names = vec!["runner"];
    if wants_kueue {
        names.push("minimalkueue");
    }
    if k.checker {
        names.push("checker");
    }
    let up = Upstream::build(&names)?;
    let (gen_yaml, made) = scaled_generator(&up.config(k.config, "generator.yaml"), &k)?;
    let total = made.total;
    let gen_dir = tempfile::Builder::new()
        .prefix("batchgate-kueue-gen-")
        .tempdir()?;
    let generator = gen_dir.path().join("generator.yaml");
    std::fs::write(&generator, &gen_yaml)?;
    let order: String = k.order.iter().map(|s| s.letter()).collect();
    println!(
        "kueue_side_by_side: Kueue {KUEUE_VERSION}'s scheduler benchmark ({} generator x {}: {total} Workloads{}), runs {order}{}",
        k.config.dir(),
        k.scale,
        if made.nodes > 0 { format!(", {} Nodes", made.nodes) } else { String::new() },
        if k.smoke { " [smoke run without --bench: numbers are not meaningful]" } else { "" },
    );
    println!("  batchgate: {}", k.bin.display());
    if !k.gates.is_empty() {
        println!("  batchgate featureGates: {:?}", k.gates);
    }
    if !k.gates_a.is_empty() {
        println!("  batchgate A featureGates: {:?}", k.gates_a);
    }
    if let Some(a) = &k.bin_a {
        println!("  batchgate A: {}", a.display());
    }
    let mut results = Vec::new();
    for (i, system) in k.order.iter().enumerate() {
        let r = one_run(i + 1, *system, &k, &up, &generator, &made)?;
        print_run(i + 1, &r);
        results.push(r);
    }
    summarise(&results);
    for r in results.iter().filter(|_| k.smoke) {
        if r.finished != total {
            return Err(format!(
                "smoke: the runner saw {} Workloads finish, the generator made {total}",
                r.finished
            )
            .into());
        }
        if r.usage_pct.is_empty() || r.requests.is_empty() {
            return Err(
                "smoke: the summary has no ClusterQueue class or the apiserver metrics were empty"
                    .into(),
            );
        }
        println!(
            "kueue_side_by_side smoke: the runner finished {total} Workloads against {}",
            r.system.name()
        );
    }
    Ok(())
}
