//! 500 honest 3 MiB AdmissionReviews at once: can the body budget serve
//! them all within kube-apiserver's webhook timeout, in the Deployment's
//! memory?
//!
//!     cargo bench --bench big_reviews
//!
//! The reviews are legitimate UPDATEs of a big queued Job (a container with
//! thousands of environment variables and kubectl's last-applied
//! annotation: object and oldObject together 3 MiB, what the apiserver's
//! 3 MiB request limit lets an update carry), sent to `/validate` as the
//! apiserver sends them: Content-Length set, over HTTP/2 with the calls
//! multiplexed on few connections. Each round starts a fresh
//! `batchgate serve --no-cluster` (defaults: 64 MiB body budget), opens the
//! connections, then sends every review at once and waits for each answer
//! at most 10 s (the webhooks' timeoutSeconds in manifests/webhooks.yaml).
//!
//! Reported per round: reviews answered 200 (allowed, with their uid)
//! within 10 s, the other outcomes, the latency distribution from send to
//! the answer's last byte, the server's peak RSS (VmHWM) against the memory
//! limit of manifests/deployment.yaml, and the budget's own metrics. The
//! target: every review answered 200 within 10 s, peak RSS under the
//! limit; a round that misses it is reported and the bench exits non-zero.
//!
//! Knobs (environment):
//!   BATCHGATE_BENCH_REVIEWS      reviews per round (default 500)
//!   BATCHGATE_BENCH_REVIEW_MIB   size of each review in MiB (default 3)
//!   BATCHGATE_BENCH_CONNECTIONS  connections the reviews are spread over
//!                                (default 2: kube-apiserver multiplexes a
//!                                webhook's calls on one connection up to
//!                                the server's 256 streams, then opens
//!                                another)
//!   BATCHGATE_BENCH_PROTO        h2 (default) or h1 (one connection per
//!                                review; CONNECTIONS is ignored)
//!   BATCHGATE_BENCH_ROUNDS       rounds, each on a fresh server (default 4)
//!   BATCHGATE_BENCH_CLIENT       go (default when `go` is found, else
//!                                hyper, said so): Go's net/http client, whose
//!                                HTTP/2 is kube-apiserver's, built from
//!                                benches/support/go_client with the local
//!                                `go` (PATH or /usr/local/go/bin); the
//!                                transport opens its own connections past
//!                                the server's stream limit, so CONNECTIONS
//!                                applies to `hyper` only. hyper: the Rust
//!                                client, on CONNECTIONS connections.
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a short smoke
//! pass: 20 reviews, one round.

use std::{
    io::{BufRead, BufReader},
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{header, Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::{pki_types::ServerName, ClientConfig, RootCertStore};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

#[path = "support/process.rs"]
mod process;
use process::*;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The webhooks' timeoutSeconds: the apiserver gives up on a call after it.
const APISERVER_TIMEOUT: Duration = Duration::from_secs(10);
const JOB_CREATE: &str = include_str!("fixtures/job-create-review.json");

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    if let Err(e) = run(smoke) {
        eprintln!("big_reviews: {e}");
        std::process::exit(1);
    }
}

fn env_usize(name: &str, default: usize) -> Result<usize, BoxError> {
    match std::env::var(name) {
        Ok(v) => v.parse().map_err(|e| format!("{name}={v:?}: {e}").into()),
        Err(_) => Ok(default),
    }
}

/// An UPDATE review of a queued, suspended Job about `size` bytes long; only
/// an annotation differs between object and oldObject.
fn big_update_review(size: usize, uid: &str) -> Result<Vec<u8>, BoxError> {
    let mut v: Value = serde_json::from_str(JOB_CREATE)?;
    let req = &mut v["request"];
    req["uid"] = json!(uid);
    req["operation"] = json!("UPDATE");
    req["options"] = json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"});
    let mut obj = req["object"].take();
    obj["spec"]["suspend"] = json!(true);
    obj["metadata"]["uid"] = json!("9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d");
    obj["metadata"]["resourceVersion"] = json!("184467");
    obj["metadata"]["creationTimestamp"] = json!("2024-06-11T15:30:12Z");
    // Half of each object as structure (env vars), half as kubectl's
    // last-applied annotation (one long string): a big object both ways.
    let per_object = size / 2;
    let env: Vec<Value> = (0..per_object / 2 / 72)
        .map(|i| json!({"name": format!("SHARD_{i:06}_ENDPOINT"), "value": format!("grpc://shard-{i:06}.data.svc:7443/v1")}))
        .collect();
    obj["spec"]["template"]["spec"]["containers"][0]["env"] = Value::Array(env);
    let spec_json = serde_json::to_string(&obj["spec"])?;
    let mut old = obj.clone();
    let base_len = serde_json::to_vec(&obj)?.len();
    let pad = per_object.saturating_sub(base_len + 64);
    let applied: String = spec_json.chars().cycle().take(pad).collect();
    for (o, rev) in [(&mut obj, "7"), (&mut old, "6")] {
        o["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
            json!(applied);
        o["metadata"]["annotations"]["deploy.example.com/revision"] = json!(rev);
    }
    req["object"] = obj;
    req["oldObject"] = old;
    Ok(serde_json::to_vec(&v)?)
}

// ---------------------------------------------------------------------------
// The server

struct Server {
    child: Child,
    addr: SocketAddr,
    probe: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_batchgate(bin: &Path, cert_dir: &Path) -> Result<Server, BoxError> {
    if !cert_dir.join(batchgate::certs::CA_FILE).exists() {
        let status = Command::new(bin)
            .args(["certs", "--out"])
            .arg(cert_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() {
            return Err(format!("batchgate certs failed: {status}").into());
        }
    }
    let mut cmd = Command::new(bin);
    cmd.args(["serve", "--cert-dir"])
        .arg(cert_dir)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--probe-listen",
            "127.0.0.1:0",
            "--no-cluster",
        ])
        .env("RUST_LOG", "warn");
    die_with_parent(&mut cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            for (prefix, which) in [
                ("webhook listening on https://", 0),
                ("probes listening on http://", 1),
            ] {
                if let Some(rest) = line.strip_prefix(prefix) {
                    let _ = tx.send((which, rest.trim().to_string()));
                }
            }
        }
    });
    let mut server = Server {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        probe: SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    for _ in 0..2 {
        let (which, addr) = rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| "batchgate did not report its addresses within 30 s")?;
        let addr: SocketAddr = addr.parse()?;
        match which {
            0 => server.addr = addr,
            _ => server.probe = addr,
        }
    }
    Ok(server)
}

/// `batchgate_<name>` from the server's /metrics (plain HTTP).
async fn metric(probe: SocketAddr, names: &[&str]) -> Result<Vec<f64>, BoxError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = TcpStream::connect(probe).await?;
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await?;
    let mut text = String::new();
    tcp.read_to_string(&mut text).await?;
    Ok(names
        .iter()
        .map(|n| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("batchgate_{n} ")))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(f64::NAN)
        })
        .collect())
}

fn deployment_memory_limit() -> Result<u64, BoxError> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/deployment.yaml"),
    )?;
    let d: Value = serde_yaml::from_str(&text)?;
    let limit = d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]
        .as_str()
        .ok_or("no memory limit in manifests/deployment.yaml")?;
    let mib: u64 = limit
        .strip_suffix("Mi")
        .ok_or_else(|| format!("memory limit {limit}: expected Mi"))?
        .parse()?;
    Ok(mib << 20)
}

// ---------------------------------------------------------------------------
// The client

fn client_tls(cert_dir: &Path, alpn: &[u8]) -> Result<ClientConfig, BoxError> {
    let mut roots = RootCertStore::empty();
    let pem = std::fs::read(cert_dir.join(batchgate::certs::CA_FILE))?;
    for c in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots.add(c?)?;
    }
    let mut cfg =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_root_certificates(roots)
            .with_no_client_auth();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    Ok(cfg)
}

async fn tls_connect(
    addr: SocketAddr,
    tls: &TlsConnector,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, BoxError> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    Ok(tls
        .connect(
            ServerName::IpAddress(IpAddr::from(Ipv4Addr::LOCALHOST).into()),
            tcp,
        )
        .await?)
}

enum Outcome {
    Ok(Duration),
    Status(StatusCode),
    TimedOut,
    Error(String),
}

fn request(body: &Bytes) -> Result<Request<Full<Bytes>>, BoxError> {
    Ok(Request::post("/validate?timeout=10s")
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, body.len())
        .header(header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(body.clone()))?)
}

async fn check(
    resp: hyper::Response<hyper::body::Incoming>,
    uid: &str,
) -> Result<Outcome, BoxError> {
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    if status != StatusCode::OK {
        return Ok(Outcome::Status(status));
    }
    let v: Value = serde_json::from_slice(&body)?;
    if v["response"]["uid"] != uid || v["response"]["allowed"] != true {
        return Ok(Outcome::Error(format!(
            "not allowed, or another uid: {}",
            String::from_utf8_lossy(&body)
        )));
    }
    Ok(Outcome::Ok(Duration::ZERO))
}

async fn timed(
    start: Instant,
    fut: impl std::future::Future<Output = Result<Outcome, BoxError>>,
) -> Outcome {
    match tokio::time::timeout(APISERVER_TIMEOUT, fut).await {
        Err(_) => Outcome::TimedOut,
        Ok(Err(e)) => Outcome::Error(e.to_string()),
        Ok(Ok(Outcome::Ok(_))) => Outcome::Ok(start.elapsed()),
        Ok(Ok(o)) => o,
    }
}

struct Round {
    outcomes: Vec<Outcome>,
    wall: Duration,
    idle_kib: u64,
    peak_kib: u64,
    budget: Vec<f64>,
}

async fn round_h2(
    addr: SocketAddr,
    tls: TlsConnector,
    bodies: &[(String, Bytes)],
    connections: usize,
) -> Result<Vec<Outcome>, BoxError> {
    let mut senders = Vec::new();
    for _ in 0..connections.max(1) {
        let io = tls_connect(addr, &tls).await?;
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        senders.push(sender);
    }
    let mut tasks = Vec::new();
    for (i, (uid, body)) in bodies.iter().enumerate() {
        let mut sender = senders[i % senders.len()].clone();
        let (uid, req) = (uid.clone(), request(body)?);
        tasks.push(tokio::spawn(async move {
            let start = Instant::now();
            timed(start, async move {
                sender.ready().await?;
                let resp = sender.send_request(req).await?;
                check(resp, &uid).await
            })
            .await
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await?);
    }
    Ok(out)
}

async fn round_h1(
    addr: SocketAddr,
    tls: TlsConnector,
    bodies: &[(String, Bytes)],
) -> Result<Vec<Outcome>, BoxError> {
    let mut tasks = Vec::new();
    for (uid, body) in bodies {
        let (uid, req, tls) = (uid.clone(), request(body)?, tls.clone());
        tasks.push(tokio::spawn(async move {
            let start = Instant::now();
            timed(start, async move {
                let io = tls_connect(addr, &tls).await?;
                let (mut sender, conn) =
                    hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                let resp = sender.send_request(req).await?;
                check(resp, &uid).await
            })
            .await
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await?);
    }
    Ok(out)
}

/// The uid the Go client replaces per review.
const PLACEHOLDER_UID: &str = "ffffffff-ffff-4fff-8fff-ffffffffffff";

/// Builds the Go client (once per target directory; `go build` caches).
fn go_tool() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/local/go/bin")])
        .map(|d| d.join("go"))
        .find(|p| p.is_file())
}

fn go_client() -> Result<PathBuf, BoxError> {
    let go = go_tool().ok_or("BATCHGATE_BENCH_CLIENT=go: no `go` on PATH or in /usr/local/go/bin (BATCHGATE_BENCH_CLIENT=hyper runs without it)")?;
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("big-reviews-go-client");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/support/go_client");
    let status = Command::new(go)
        .current_dir(&src)
        .args(["build", "-o"])
        .arg(&out)
        .arg("main.go")
        .env("GOFLAGS", "")
        .env("GO111MODULE", "off")
        .status()?;
    if !status.success() {
        return Err(format!("go build of {} failed: {status}", src.display()).into());
    }
    Ok(out)
}

/// A round sent by the Go client: every review at once, as kube-apiserver
/// would send them; outcomes in review order, and the wall time.
fn round_go(
    client: &Path,
    addr: SocketAddr,
    cert_dir: &Path,
    body: &Path,
    reviews: usize,
    h2: bool,
) -> Result<(Vec<Outcome>, Duration), BoxError> {
    let mut cmd = Command::new(client);
    cmd.arg("-addr")
        .arg(addr.to_string())
        .arg("-ca")
        .arg(cert_dir.join(batchgate::certs::CA_FILE))
        .arg("-body")
        .arg(body)
        .args(["-uid", PLACEHOLDER_UID, "-n", &reviews.to_string()])
        .arg(format!("-timeout={}s", APISERVER_TIMEOUT.as_secs()));
    if !h2 {
        cmd.arg("-h1");
    }
    die_with_parent(&mut cmd);
    let out = cmd.stderr(Stdio::inherit()).output()?;
    if !out.status.success() {
        return Err(format!("the Go client failed: {}", out.status).into());
    }
    let text = String::from_utf8(out.stdout)?;
    let mut outcomes = Vec::new();
    let mut wall = None;
    for line in text.lines() {
        let f: Vec<&str> = line.splitn(4, ' ').collect();
        let ms = |s: &str| s.parse().map(Duration::from_millis);
        match f[..] {
            ["wall", t] => wall = Some(ms(t)?),
            [_, "ok", t] => outcomes.push(Outcome::Ok(ms(t)?)),
            [_, "status", code, _] => {
                outcomes.push(Outcome::Status(StatusCode::from_u16(code.parse()?)?))
            }
            [_, "timeout", _] => outcomes.push(Outcome::TimedOut),
            [_, "error", _, e] => outcomes.push(Outcome::Error(e.to_string())),
            _ => return Err(format!("the Go client said {line:?}").into()),
        }
    }
    if outcomes.len() != reviews {
        return Err(format!(
            "the Go client reported {} outcomes for {reviews} reviews",
            outcomes.len()
        )
        .into());
    }
    Ok((outcomes, wall.ok_or("the Go client reported no wall time")?))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn run(smoke: bool) -> Result<(), BoxError> {
    let reviews = env_usize("BATCHGATE_BENCH_REVIEWS", if smoke { 20 } else { 500 })?;
    let mib = env_usize("BATCHGATE_BENCH_REVIEW_MIB", 3)?;
    let connections = env_usize("BATCHGATE_BENCH_CONNECTIONS", 2)?;
    let rounds = env_usize("BATCHGATE_BENCH_ROUNDS", if smoke { 1 } else { 4 })?;
    let h2 = match std::env::var("BATCHGATE_BENCH_PROTO").as_deref() {
        Ok("h2") | Err(_) => true,
        Ok("h1") => false,
        Ok(other) => return Err(format!("BATCHGATE_BENCH_PROTO={other:?}: h2 or h1").into()),
    };
    let go = match std::env::var("BATCHGATE_BENCH_CLIENT").as_deref() {
        Ok("go") => true,
        Ok("hyper") => false,
        Err(_) if go_tool().is_none() => {
            println!("big_reviews: no `go` on PATH or in /usr/local/go/bin: the hyper client sends instead (BATCHGATE_BENCH_CLIENT=go insists)");
            false
        }
        Err(_) => true,
        Ok(other) => return Err(format!("BATCHGATE_BENCH_CLIENT={other:?}: go or hyper").into()),
    };
    let limit = deployment_memory_limit()?;
    let bin = std::env::var_os("BATCHGATE_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_batchgate")));
    let dir = tempfile::tempdir()?;
    let cert_dir = dir.path().join("certs");

    // The Go client makes its own from one file.
    let bodies: Vec<(String, Bytes)> = (0..if go { 0 } else { reviews })
        .map(|i| {
            let uid = format!("00000000-0000-4000-8000-{i:012}");
            big_update_review(mib << 20, &uid).map(|b| (uid, Bytes::from(b)))
        })
        .collect::<Result<_, _>>()?;
    let one = big_update_review(mib << 20, PLACEHOLDER_UID)?;
    let size = one.len();
    let go_client = if go {
        let body = dir.path().join("review.json");
        std::fs::write(&body, one)?;
        Some((go_client()?, body))
    } else {
        None
    };
    println!(
        "{reviews} UPDATE reviews of {:.2} MiB each at once over {}, sent by {}, {rounds} round(s), each on a fresh server; load {}",
        size as f64 / (1 << 20) as f64,
        match (h2, go) {
            (true, true) => "HTTP/2".to_string(),
            (true, false) => format!("HTTP/2 on {connections} connection(s)"),
            (false, _) => "HTTP/1.1, one connection each".to_string(),
        },
        if go { "Go's net/http (kube-apiserver's HTTP/2)" } else { "hyper" },
        loadavg()
    );

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut results = Vec::new();
    for r in 0..rounds {
        let server = start_batchgate(&bin, &cert_dir)?;
        let pid = server.child.id();
        let tls = TlsConnector::from(Arc::new(client_tls(
            &cert_dir,
            if h2 { b"h2" } else { b"http/1.1" },
        )?));
        let round = rt.block_on(async {
            // Ready: one small request through the probe listener.
            metric(server.probe, &["connections_accepted_total"]).await?;
            let idle_kib = status_kib(pid, "VmRSS:").unwrap_or(0);
            let t = Instant::now();
            let (outcomes, wall) = match &go_client {
                Some((client, body)) => {
                    round_go(client, server.addr, &cert_dir, body, reviews, h2)?
                }
                None if h2 => (
                    round_h2(server.addr, tls, &bodies, connections).await?,
                    t.elapsed(),
                ),
                None => (round_h1(server.addr, tls, &bodies).await?, t.elapsed()),
            };
            let budget = metric(
                server.probe,
                &[
                    "body_budget_queued_total",
                    "body_budget_gave_up_total",
                    "body_budget_peak_bytes",
                ],
            )
            .await?;
            Ok::<_, BoxError>(Round {
                outcomes,
                wall,
                idle_kib,
                peak_kib: status_kib(pid, "VmHWM:").unwrap_or(0),
                budget,
            })
        })?;
        drop(server);
        report(r, &round, limit);
        results.push(round);
        if r + 1 < rounds {
            std::thread::sleep(Duration::from_secs(2));
        }
    }

    let ok: Vec<usize> = results.iter().map(count_ok).collect();
    let peaks: Vec<u64> = results.iter().map(|r| r.peak_kib >> 10).collect();
    let maxes: Vec<u128> = results
        .iter()
        .map(|r| sorted_ok(r).last().copied().unwrap_or_default().as_millis())
        .collect();
    println!(
        "spread over {rounds} round(s): answered 200 {:?} of {reviews}; slowest answer {:?} ms; peak RSS {:?} MiB (limit {} MiB); load {}",
        ok,
        maxes,
        peaks,
        limit >> 20,
        loadavg()
    );
    let missed = results
        .iter()
        .any(|r| count_ok(r) < reviews || r.peak_kib * 1024 >= limit);
    if missed && !smoke {
        return Err(
            "target missed: not every review answered 200 within 10 s, or peak RSS over the limit"
                .into(),
        );
    }
    Ok(())
}

fn count_ok(r: &Round) -> usize {
    r.outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Ok(_)))
        .count()
}

fn sorted_ok(r: &Round) -> Vec<Duration> {
    let mut v: Vec<Duration> = r
        .outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Ok(d) => Some(*d),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

fn report(i: usize, r: &Round, limit: u64) {
    let lat = sorted_ok(r);
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    let mut first_error = None;
    for o in &r.outcomes {
        match o {
            Outcome::Ok(_) => {}
            Outcome::Status(s) => *statuses.entry(s.as_u16().to_string()).or_default() += 1,
            Outcome::TimedOut => *statuses.entry("timed out".into()).or_default() += 1,
            Outcome::Error(e) => {
                *statuses.entry("error".into()).or_default() += 1;
                first_error.get_or_insert(e.clone());
            }
        }
    }
    let ms = |d: Duration| d.as_millis();
    println!(
        "round {}: {} of {} answered 200 in {} ms; other {:?}; latency ms min {} p50 {} p90 {} p99 {} max {}; server RSS idle {} MiB, peak {} MiB of the {} MiB limit; budget: queued {}, gave up {}, peak {:.1} MiB",
        i + 1,
        lat.len(),
        r.outcomes.len(),
        ms(r.wall),
        statuses,
        ms(percentile(&lat, 0.0)),
        ms(percentile(&lat, 0.5)),
        ms(percentile(&lat, 0.9)),
        ms(percentile(&lat, 0.99)),
        ms(percentile(&lat, 1.0)),
        r.idle_kib >> 10,
        r.peak_kib >> 10,
        limit >> 20,
        r.budget.first().copied().unwrap_or(f64::NAN),
        r.budget.get(1).copied().unwrap_or(f64::NAN),
        r.budget.get(2).copied().unwrap_or(f64::NAN) / (1 << 20) as f64,
    );
    if let Some(e) = first_error {
        println!("  first error: {e}");
    }
}
