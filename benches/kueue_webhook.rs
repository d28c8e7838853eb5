//! The admission webhooks side by side with Kueue's (issue 40): the queued
//! Job and the queued Pod CREATE reviews of `benches/fixtures`, sent over
//! TLS at concurrency 16 to upstream Kueue's controller manager (v0.17.1,
//! built from the module proxy by `tests/cluster/kueue/build.sh manager`,
//! its `batch/job` and `pod` integrations on) and to `batchgate serve`,
//! alternated: each round measures both servers on both reviews, the
//! first server changing every round.
//!
//!     cargo bench --bench kueue_webhook
//!
//! Kueue's manager runs on a local control plane with its CRDs, as it
//! must: its pod webhook reads the review's Namespace (from its informer
//! cache) and every webhook checks its `managedJobsNamespaceSelector`.
//! batchgate runs with `--no-cluster`, where the same default selector is
//! matched on the namespace's name. Both serve with the same certificate
//! (`batchgate certs`). The control plane idles beside them: both servers'
//! CPU is read from /proc around each measured window, so each figure is
//! the server's own CPU per review, everything it does in that window
//! included (Kueue's idle controllers, batchgate's none).
//!
//! Every answer is checked: HTTP 200, allowed, and a patch that suspends
//! (the Job: `/spec/suspend`; the Pod: Kueue's admission scheduling gate).
//! A run with a failed request prints it and exits non-zero.
//!
//! Knobs: `KUEUE_WEBHOOK_PAIRS` (rounds, default 4: fewer prints no ratio),
//! `KUEUE_WEBHOOK_SECS` (measured seconds per run, default 5),
//! `KUEUE_WEBHOOK_CONCURRENCY` (default 16).
//!
//! Without `--bench` (as under `cargo test --benches`) it runs one short
//! round: everything is exercised, nothing is meant to be read.

mod fixtures;

#[path = "support/process.rs"]
mod process;
#[path = "support/review_load.rs"]
mod review_load;

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use tokio_rustls::TlsConnector;

use batchgate::jobs::policy::PolicySet;
use batchgate_localcluster::{ClusterOptions, LocalCluster};
use process::{cpu_model, die_with_parent, loadavg};
use review_load::*;

/// Kueue's manager with its internal certificate management off reads its
/// metrics certificate from this fixed path (cmd/kueue/main.go).
const METRICS_CERTS: &str = "/etc/kueue/metrics/certs";
/// The namespace of both fixtures.
const NAMESPACE: &str = "team-a";

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    if let Err(e) = run(smoke) {
        eprintln!("kueue_webhook: {e}");
        std::process::exit(1);
    }
}

struct Knobs {
    pairs: usize,
    warmup: Duration,
    measured: Duration,
    concurrency: usize,
}

fn knobs(smoke: bool) -> Result<Knobs, BoxError> {
    let var = |name: &str, default: f64| -> Result<f64, BoxError> {
        match std::env::var(name) {
            Ok(v) => v.parse().map_err(|e| format!("{name}={v:?}: {e}").into()),
            Err(_) => Ok(default),
        }
    };
    if smoke {
        return Ok(Knobs {
            pairs: 1,
            warmup: Duration::from_millis(200),
            measured: Duration::from_millis(300),
            concurrency: 4,
        });
    }
    let secs = var("KUEUE_WEBHOOK_SECS", 5.0)?;
    if !(0.1..=600.0).contains(&secs) {
        return Err("KUEUE_WEBHOOK_SECS must be between 0.1 and 600".into());
    }
    Ok(Knobs {
        pairs: var("KUEUE_WEBHOOK_PAIRS", 4.0)? as usize,
        warmup: Duration::from_secs(1),
        measured: Duration::from_secs_f64(secs),
        concurrency: (var("KUEUE_WEBHOOK_CONCURRENCY", 16.0)? as usize).max(1),
    })
}

/// `tests/cluster/kueue/build.sh manager`: Kueue's source and manager
/// binary, built once and cached.
fn kueue_dir() -> Result<PathBuf, BoxError> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/kueue/build.sh");
    let out = Command::new(script)
        .arg("manager")
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running {script}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{script} manager failed: {}", out.status).into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let dir = text.lines().last().ok_or("build.sh printed no directory")?;
    Ok(PathBuf::from(dir))
}

fn free_port() -> Result<u16, BoxError> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The control plane Kueue's manager needs: its CRDs, its namespace and
/// the fixtures' namespace.
fn cluster_for_kueue(kueue: &Path) -> Result<LocalCluster, BoxError> {
    let cluster = LocalCluster::start(ClusterOptions::default())?;
    let crds = kueue.join("src/config/components/crd/bases");
    cluster.run_kubectl(&["apply", "--server-side", "-f", &crds.to_string_lossy()])?;
    cluster.wait_established(
        &[
            "crd/workloads.kueue.x-k8s.io",
            "crd/clusterqueues.kueue.x-k8s.io",
            "crd/localqueues.kueue.x-k8s.io",
        ],
        Duration::from_secs(120),
    )?;
    for ns in ["kueue-system", NAMESPACE] {
        cluster.run_kubectl(&["create", "namespace", ns])?;
    }
    Ok(cluster)
}

/// Starts Kueue's manager on `cluster`, serving its webhooks with the
/// certificate in `certs`, and waits until its webhook server answers.
fn start_kueue(
    kueue: &Path,
    cluster: &LocalCluster,
    certs: &Path,
    dir: &Path,
) -> Result<Server, BoxError> {
    if !Path::new(METRICS_CERTS).join("tls.crt").exists() {
        std::fs::create_dir_all(METRICS_CERTS)
            .map_err(|e| format!("Kueue's manager needs {METRICS_CERTS}: {e}"))?;
        for f in ["tls.crt", "tls.key"] {
            std::fs::copy(certs.join(f), Path::new(METRICS_CERTS).join(f))?;
        }
    }
    let port = free_port()?;
    let config = dir.join("kueue-config.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n\
             namespace: kueue-system\n\
             health:\n  healthProbeBindAddress: \"0\"\n\
             metrics:\n  bindAddress: \"0\"\n\
             webhook:\n  port: {port}\n  certDir: {}\n\
             leaderElection:\n  leaderElect: false\n\
             internalCertManagement:\n  enable: false\n\
             integrations:\n  frameworks: [batch/job, pod]\n",
            certs.display()
        ),
    )?;
    let log = dir.join("kueue.log");
    let mut cmd = Command::new(kueue.join("kueue-manager"));
    // Its visibility server reads a certificate from a fixed path and ends
    // the process without one; nothing here asks it.
    cmd.arg("--config")
        .arg(&config)
        .arg("--feature-gates=VisibilityOnDemand=false")
        .env("KUBECONFIG", cluster.kubeconfig())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?);
    die_with_parent(&mut cmd);
    let mut server = Server {
        name: "kueue",
        child: cmd
            .spawn()
            .map_err(|e| format!("starting Kueue's manager: {e}"))?,
        addr: ([127, 0, 0, 1], port).into(),
    };
    let tail = || process::log_tail(&log, 30);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = server.child.try_wait()? {
            return Err(format!("Kueue's manager exited ({status}):\n{}", tail()).into());
        }
        let started = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("Starting workers");
        if started && std::net::TcpStream::connect(server.addr).is_ok() {
            return Ok(server);
        }
        if Instant::now() > deadline {
            return Err(format!("Kueue's manager did not start within 120 s:\n{}", tail()).into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `batchgate serve --no-cluster` with every integration it ships on (the
/// pod integration is off unless named).
fn start_ours(cert_dir: &Path, dir: &Path) -> Result<Server, BoxError> {
    let names: Vec<String> = PolicySet::embedded()?
        .iter()
        .map(|p| format!("{:?}", p.name))
        .collect();
    let config = dir.join("batchgate-config.yaml");
    std::fs::write(
        &config,
        format!("integrations:\n  frameworks: [{}]\n", names.join(", ")),
    )?;
    let bin = Path::new(env!("CARGO_BIN_EXE_batchgate"));
    start_batchgate(bin, cert_dir, Some(&config))
}

/// One review kind: its request and, per server, where it goes.
struct Review {
    kind: &'static str,
    body: Bytes,
    kueue_path: &'static str,
    /// What a suspending patch holds, in either server's answer.
    patch_holds: &'static str,
}

fn reviews() -> [Review; 2] {
    [
        Review {
            kind: "Job",
            body: Bytes::from(fixtures::job_create_queued()),
            kueue_path: "/mutate-batch-v1-job?timeout=10s",
            patch_holds: "/spec/suspend",
        },
        Review {
            kind: "Pod",
            body: Bytes::from(fixtures::pod_create_queued()),
            kueue_path: "/mutate--v1-pod?timeout=10s",
            patch_holds: "kueue.x-k8s.io/admission",
        },
    ]
}

/// The median of some figures (the lower middle of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(f64::NAN)
}

fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.2}–{hi:.2}")
}

fn cpu_us(r: &RunResult) -> f64 {
    r.server_cpu_per_review
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1e6)
}

fn run(smoke: bool) -> Result<(), BoxError> {
    let k = knobs(smoke)?;
    let kueue_src = kueue_dir()?;
    let dir = tempfile::tempdir()?;
    let cert_dir = dir.path().join("certs");
    // Children from the main thread, which lives for the whole bench (see
    // die_with_parent); batchgate first: its `certs` writes the pair both
    // servers use.
    let ours = start_ours(&cert_dir, dir.path())?;
    let cluster = cluster_for_kueue(&kueue_src)?;
    let kueue = start_kueue(&kueue_src, &cluster, &cert_dir, dir.path())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let tls = TlsConnector::from(Arc::new(client_tls(&cert_dir)?));
    let reviews = reviews();
    println!(
        "kueue_webhook: Job and Pod mutate reviews ({} and {} bytes), concurrency {}, {} s warm-up + {} s measured per run, {} round(s); \
         Kueue's manager ({}) on https://{}, batchgate on https://{}; {}; load {} at the start{}",
        reviews[0].body.len(),
        reviews[1].body.len(),
        k.concurrency,
        k.warmup.as_secs_f64(),
        k.measured.as_secs_f64(),
        k.pairs,
        kueue_src.display(),
        kueue.addr,
        ours.addr,
        cpu_model(),
        loadavg(),
        if smoke { " [smoke run without --bench: numbers are not meaningful]" } else { "" },
    );

    // results[review][round] = (kueue, batchgate)
    let mut results: Vec<Vec<(RunResult, RunResult)>> = vec![Vec::new(), Vec::new()];
    let mut loads = Vec::new();
    for round in 0..k.pairs {
        loads.push(loadavg());
        for (i, review) in reviews.iter().enumerate() {
            let target = |s: &Server| {
                Arc::new(Target {
                    addr: s.addr,
                    tls: tls.clone(),
                    path: if s.name == "kueue" {
                        review.kueue_path
                    } else {
                        "/mutate?timeout=10s"
                    },
                    request_body: review.body.clone(),
                    check: Check::PatchHolds(review.patch_holds),
                })
            };
            let run = |s: &Server| {
                let r = measure(&rt, s, target(s), k.concurrency, k.warmup, k.measured);
                eprintln!(
                    "  round {} {} {:<9} {:>7} reviews {:>8.0}/s  p99 {:>6.0} us  CPU {:>7.1} us/review  errors {}",
                    round + 1,
                    review.kind,
                    r.server,
                    r.reviews,
                    r.rps,
                    r.p99.as_secs_f64() * 1e6,
                    cpu_us(&r),
                    r.errors
                );
                r
            };
            let pair = if round % 2 == 0 {
                let kr = run(&kueue);
                (kr, run(&ours))
            } else {
                let br = run(&ours);
                (run(&kueue), br)
            };
            results[i].push(pair);
        }
    }
    drop(rt);

    let failed: Vec<&RunResult> = results
        .iter()
        .flatten()
        .flat_map(|(a, b)| [a, b])
        .filter(|r| r.errors > 0 || r.reviews == 0)
        .collect();
    for r in &failed {
        eprintln!(
            "{}: {} errors in {} reviews, first: {}",
            r.server,
            r.errors,
            r.reviews,
            r.first_error.as_deref().unwrap_or("none answered")
        );
    }
    if !failed.is_empty() {
        return Err(format!("{} runs had failed requests", failed.len()).into());
    }

    println!();
    println!(
        "| review | Kueue reviews/s | batchgate reviews/s | batchgate / Kueue throughput [pairs] | Kueue CPU µs/review | batchgate CPU µs/review | batchgate / Kueue CPU [pairs] |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (review, pairs) in reviews.iter().zip(&results) {
        let rps = |f: fn(&(RunResult, RunResult)) -> &RunResult| -> Vec<f64> {
            pairs.iter().map(|p| f(p).rps).collect()
        };
        let cpu = |f: fn(&(RunResult, RunResult)) -> &RunResult| -> Vec<f64> {
            pairs.iter().map(|p| cpu_us(f(p))).collect()
        };
        let (kr, br) = (rps(|p| &p.0), rps(|p| &p.1));
        let (kc, bc) = (cpu(|p| &p.0), cpu(|p| &p.1));
        let thr: Vec<f64> = br.iter().zip(&kr).map(|(b, k)| b / k).collect();
        let cpr: Vec<f64> = bc.iter().zip(&kc).map(|(b, k)| b / k).collect();
        let ratio = |v: &[f64]| {
            if v.len() >= 4 {
                format!("{:.2}× [{}]", median(v.to_vec()), spread(v))
            } else {
                format!("– ({} pairs; a ratio needs 4) [{}]", v.len(), spread(v))
            }
        };
        println!(
            "| {} mutate | {:.0} | {:.0} | {} | {:.1} | {:.1} | {} |",
            review.kind,
            median(kr.clone()),
            median(br.clone()),
            ratio(&thr),
            median(kc),
            median(bc),
            ratio(&cpr),
        );
    }
    // batchgate's Pod review against its Job review, per round (issue 40's
    // 1.5× is set on the handler bench; this is the same through TLS).
    let pod_job: Vec<f64> = results[1]
        .iter()
        .zip(&results[0])
        .map(|(p, j)| cpu_us(&p.1) / cpu_us(&j.1))
        .collect();
    println!();
    println!(
        "batchgate's CPU per Pod review / per Job review: median {:.2}× [{}]; load per round: {}",
        median(pod_job.clone()),
        spread(&pod_job),
        loads.join(" | ")
    );
    Ok(())
}
