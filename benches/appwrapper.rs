//! The AppWrapper validating path with a warm SubjectAccessReview cache:
//! an AppWrapper of 8 components (8 pod sets: Pods, Deployments, a
//! StatefulSet, a Job, a JobSet, a RayCluster), created by a user with
//! groups and extra, so each review asks 8 per-component checks (6 distinct
//! ones) — all answered from the shared `SarClient`'s cache.
//!
//!     cargo bench --bench appwrapper
//!
//! Two measurements:
//!
//! 1. In process, one thread, no sockets: `Router::review` (parse, route,
//!    upstream's create rules, the generic invariants, the entitlement
//!    needs with resource names from the warm discovery cache),
//!    `Pending::resolve`, `SarClient::check_all` (cache hits) and
//!    `Pending::finish`. Per-review latency percentiles and reviews/s.
//! 2. Over real TLS: `server::bind` serving in this process on its own
//!    multi-thread runtime (the same router, TLS, limits and metrics as
//!    `batchgate serve`), with the same `SarClient` warmed beforehand, and
//!    a load generator with one keep-alive HTTP/1.1 connection per worker.
//!    `batchgate serve --no-cluster` has no SubjectAccessReview client (it
//!    would refuse the review as unchecked), hence the in-process server.
//!    The stand-in authorizer answers "allowed" and counts its calls: the
//!    run fails if any review missed the cache in the measured window.
//!
//! Every response is checked (HTTP 200, `"allowed":true`).
//!
//! Knobs: BATCHGATE_BENCH_SECS (default 5), BATCHGATE_BENCH_CONCURRENCY
//! (default 1,16,64), BATCHGATE_BENCH_SERVER_THREADS (default 2),
//! BATCHGATE_BENCH_INPROC_ITERS (default 20000).
//! Without `--bench` (under `cargo test --benches`) a short smoke pass runs.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use futures::{future::BoxFuture, FutureExt};
use http_body_util::{BodyExt, Full};
use hyper::{header, Request, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::{pki_types::ServerName, ClientConfig, RootCertStore};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use batchgate::{
    admission::{
        appwrapper,
        entitlement::{self, CacheLimits, Check, Outcome},
        family::Hook,
        router::{Reviewed, Router},
        NoCluster, Settings,
    },
    api::selector::LabelSelector,
    certs::{self, CertOptions},
    cluster::{
        discovery::ResourceNames,
        sar::{Authorizer, SarClient, SarError},
    },
    jobs::policy::PolicySet,
    server::{self, Limits, Readiness, ServeOptions},
};
use batchgate::{metrics::Metrics, tls::CertStore};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Allows everything; counts the questions that reach it.
struct Counting(Arc<AtomicU64>);

impl Authorizer for Counting {
    fn review(&self, _: &Check) -> BoxFuture<'static, Result<Outcome, SarError>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        async { Ok(Outcome::Allowed) }.boxed()
    }
}

fn pod_spec() -> Value {
    json!({"restartPolicy": "Never",
           "containers": [{"name": "main", "image": "quay.io/project-codeflare/busybox:1.36",
                           "command": ["sh", "-c", "sleep 600"],
                           "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                                         "limits": {"cpu": "500m", "memory": "512Mi"}},
                           "env": [{"name": "MODE", "value": "train"}]}]})
}

fn template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels}, "spec": pod_spec()})
}

/// 8 components, 8 pod sets, 6 kinds.
fn appwrapper_object() -> Value {
    let pod = |n: &str| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n}, "spec": pod_spec()});
    let deployment = |n: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": n},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": n}},
                        "template": template(json!({"app": n}))}})
    };
    let components = vec![
        json!({"template": pod("launcher")}),
        json!({"template": pod("monitor")}),
        json!({"template": deployment("api")}),
        json!({"template": deployment("cache")}),
        json!({"template": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                            "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                                     "template": template(json!({"app": "db"}))}}}),
        json!({"podSets": [{"path": "template.spec.template", "replicas": 4}],
               "template": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
                            "spec": {"parallelism": 4, "completions": 4, "completionMode": "Indexed",
                                     "template": template(json!({"app": "train"}))}}}),
        json!({"template": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "eval"},
                            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2,
                                     "template": {"spec": {"parallelism": 2, "completions": 2,
                                                           "template": template(json!({"app": "eval"}))}}}]}}}),
        json!({"template": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "ray"},
                            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": template(json!({"app": "ray"}))}}}}),
    ];
    json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
           "metadata": {"name": "bench", "namespace": "team-a",
                        "labels": {"kueue.x-k8s.io/queue-name": "team-a-queue",
                                   "workload.codeflare.dev/user": "alice_example.com",
                                   "workload.codeflare.dev/userid": "5f1c"}},
           "spec": {"suspend": true, "components": components}})
}

fn review_body() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "0b8c3f5e-bench",
            "kind": {"group": "workload.codeflare.dev", "version": "v1beta2", "kind": "AppWrapper"},
            "resource": {"group": "workload.codeflare.dev", "version": "v1beta2", "resource": "appwrappers"},
            "operation": "CREATE", "namespace": "team-a", "name": "bench",
            "userInfo": {"username": "alice@example.com", "uid": "5f1c",
                         "groups": ["team-a", "system:authenticated"],
                         "extra": {"authentication.kubernetes.io/credential-id": ["JTI=1"]}},
            "object": appwrapper_object(),
            "dryRun": false
        }
    }))
    .unwrap_or_default()
}

fn webhook() -> Router {
    let names = Arc::new(ResourceNames::new(None));
    for (g, k, r) in [
        ("", "Pod", "pods"),
        ("apps", "Deployment", "deployments"),
        ("apps", "StatefulSet", "statefulsets"),
        ("batch", "Job", "jobs"),
    ] {
        names.insert(g, "v1", k, r);
    }
    names.insert("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets");
    names.insert("ray.io", "v1", "RayCluster", "rayclusters");
    Router::new(
        PolicySet::embedded().unwrap_or_else(|e| panic!("{e}")),
        Settings {
            manage_jobs_without_queue_name: false,
            managed_namespaces: LabelSelector::excluding_namespaces(&[
                "kube-system",
                "batchgate-system",
            ]),
        },
        Arc::new(NoCluster),
        Arc::new(|| chrono::Utc::now().date_naive()),
    )
    .with_appwrapper(appwrapper::Settings::default(), names)
}

fn sar_client(calls: Arc<AtomicU64>, metrics: Arc<Metrics>) -> SarClient {
    SarClient::new(
        Counting(calls),
        entitlement::Settings {
            cache: CacheLimits {
                // Warm for the whole run.
                allowed_ttl: Duration::from_secs(3600),
                ..CacheLimits::default()
            },
            ..entitlement::Settings::default()
        },
        metrics,
    )
}

/// The full validating path in process.
async fn validate(w: &Router, sar: &SarClient, body: &[u8]) -> Vec<u8> {
    match w.review(Hook::Validate, body) {
        Reviewed::Done(a) => a.body,
        Reviewed::Entitle(mut p) => {
            p.resolve().await;
            let results = sar.check_all(p.checks()).await;
            p.finish(&results, sar.on_error()).body
        }
        // An AppWrapper's rules read nothing by name.
        Reviewed::Read(k) => panic!("read {k:?}"),
    }
}

fn allowed(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .map(|v| v["response"]["allowed"] == true)
        .unwrap_or(false)
}

fn percentile(sorted: &[u64], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    Duration::from_nanos(sorted[i.min(sorted.len() - 1)])
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn in_process(iters: u64) -> Result<(), BoxError> {
    let w = webhook();
    let calls = Arc::new(AtomicU64::new(0));
    let sar = sar_client(calls.clone(), Arc::new(Metrics::new()));
    let body = review_body();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let first = rt.block_on(validate(&w, &sar, &body));
    if !allowed(&first) {
        return Err(format!("not allowed: {}", String::from_utf8_lossy(&first)).into());
    }
    let warm_calls = calls.load(Ordering::Relaxed);
    let mut lat = Vec::with_capacity(iters as usize);
    let start = Instant::now();
    for _ in 0..iters {
        let t = Instant::now();
        let out = rt.block_on(validate(&w, &sar, &body));
        lat.push(t.elapsed().as_nanos() as u64);
        std::hint::black_box(out);
    }
    let total = start.elapsed();
    if calls.load(Ordering::Relaxed) != warm_calls {
        return Err("a review missed the SubjectAccessReview cache".into());
    }
    lat.sort_unstable();
    println!(
        "in process, 1 thread: {iters} reviews ({} bytes each, {warm_calls} SubjectAccessReviews to warm the cache, none after)",
        body.len()
    );
    println!(
        "  {:.0} reviews/s   p50 {} us   p99 {} us   max {} us",
        iters as f64 / total.as_secs_f64(),
        us(percentile(&lat, 0.50)),
        us(percentile(&lat, 0.99)),
        us(percentile(&lat, 1.0)),
    );
    Ok(())
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr, tls: &TlsConnector) -> Result<Sender, BoxError> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let tls = tls
        .connect(
            ServerName::IpAddress(IpAddr::from(Ipv4Addr::LOCALHOST).into()),
            tcp,
        )
        .await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

async fn one(sender: &mut Sender, body: &Bytes) -> Result<(), BoxError> {
    sender.ready().await?;
    let req = Request::post("/validate?timeout=10s")
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.clone()))?;
    let resp = sender.send_request(req).await?;
    let status = resp.status();
    let out = resp.into_body().collect().await?.to_bytes();
    if status != StatusCode::OK || !allowed(&out) {
        return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&out)).into());
    }
    Ok(())
}

async fn worker(
    addr: SocketAddr,
    tls: TlsConnector,
    body: Bytes,
    from: Instant,
    until: Instant,
) -> Result<Vec<u64>, BoxError> {
    let mut sender = connect(addr, &tls).await?;
    let mut lat = Vec::new();
    while Instant::now() < until {
        let t = Instant::now();
        one(&mut sender, &body).await?;
        if t >= from {
            lat.push(t.elapsed().as_nanos() as u64);
        }
    }
    Ok(lat)
}

fn over_tls(secs: u64, levels: &[usize], server_threads: usize) -> Result<(), BoxError> {
    let bundle = certs::generate(&CertOptions::default(), time::OffsetDateTime::now_utc())?;
    let store = CertStore::from_pem(bundle.cert_pem.into_bytes(), bundle.key_pem.into_bytes())?;
    let metrics = Arc::new(Metrics::new());
    let calls = Arc::new(AtomicU64::new(0));
    let sar = sar_client(calls.clone(), metrics.clone());
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(server_threads)
        .enable_all()
        .build()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let readiness = Arc::new(Readiness::default());
    let bound = server_rt.block_on(server::bind(
        ServeOptions {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            probe_listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            limits: Limits::default(),
        },
        store,
        Arc::new(webhook()),
        server::ClusterAsks {
            sar: Some(sar),
            objects: None,
        },
        metrics,
        readiness,
        async move {
            let _ = stop_rx.await;
        },
    ))?;
    let addr = bound.webhook_addr;
    let serving = server_rt.spawn(bound.run);

    let mut roots = RootCertStore::empty();
    for c in certs::pem_certs(&bundle.ca_pem) {
        roots.add(c)?;
    }
    let mut cfg =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_root_certificates(roots)
            .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tls = TlsConnector::from(Arc::new(cfg));
    let body = Bytes::from(review_body());
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;

    // Warm the cache (and the connection path) once.
    client_rt.block_on(async {
        let mut s = connect(addr, &tls).await?;
        one(&mut s, &body).await
    })?;
    let warm_calls = calls.load(Ordering::Relaxed);
    println!(
        "over TLS 1.3, HTTP/1.1 keep-alive, server {server_threads} worker threads, client 1 thread, {secs} s per level:"
    );
    println!("  concurrency   reviews/s   p50 us   p99 us   max us");
    for &c in levels {
        let warmup = Duration::from_millis(500);
        let start = Instant::now();
        let from = start + warmup;
        let until = from + Duration::from_secs(secs);
        let results = client_rt.block_on(async {
            let tasks: Vec<_> = (0..c)
                .map(|_| tokio::spawn(worker(addr, tls.clone(), body.clone(), from, until)))
                .collect();
            let mut all = Vec::new();
            for t in tasks {
                all.push(t.await.map_err(|e| e.to_string())?);
            }
            Ok::<_, BoxError>(all)
        })?;
        let mut lat = Vec::new();
        for r in results {
            lat.extend(r?);
        }
        let window = until.saturating_duration_since(from);
        lat.sort_unstable();
        println!(
            "  {c:>11}   {:>9.0}   {:>6}   {:>6}   {:>6}",
            lat.len() as f64 / window.as_secs_f64().max(1e-9),
            us(percentile(&lat, 0.50)),
            us(percentile(&lat, 0.99)),
            us(percentile(&lat, 1.0)),
        );
    }
    let missed = calls.load(Ordering::Relaxed) - warm_calls;
    let _ = stop_tx.send(());
    let _ = server_rt.block_on(serving);
    if missed != 0 {
        return Err(
            format!("{missed} SubjectAccessReviews after warm-up: the cache was not warm").into(),
        );
    }
    println!("  ({warm_calls} SubjectAccessReviews to warm the cache, none after)");
    Ok(())
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (secs, levels, iters) = if bench {
        let levels = std::env::var("BATCHGATE_BENCH_CONCURRENCY")
            .unwrap_or_else(|_| "1,16,64".into())
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect::<Vec<usize>>();
        (
            env_num("BATCHGATE_BENCH_SECS", 5),
            levels,
            env_num("BATCHGATE_BENCH_INPROC_ITERS", 20_000),
        )
    } else {
        (0, vec![2], 50)
    };
    let threads = env_num("BATCHGATE_BENCH_SERVER_THREADS", 2) as usize;
    let result = in_process(iters).and_then(|()| over_tls(secs, &levels, threads));
    if let Err(e) = result {
        eprintln!("appwrapper bench failed: {e}");
        std::process::exit(1);
    }
}
