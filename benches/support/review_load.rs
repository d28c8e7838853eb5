//! The webhook load generator the review benches share: server processes
//! whose CPU time is read from /proc, keep-alive HTTP/1.1 over TLS 1.3
//! clients at a fixed concurrency, and the check every answer must pass.
//! Shared with `#[path = "support/review_load.rs"] mod review_load;`.

// Each bench uses some of these.
#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader},
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::Path,
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{header, Request, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::{pki_types::ServerName, ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::process::die_with_parent;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A server process, killed when dropped (also while unwinding from a panic).
/// Each child also gets SIGKILL from the kernel if this process dies first.
pub struct Server {
    pub name: &'static str,
    pub child: Child,
    pub addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// user+system CPU time the server process has used so far.
    pub fn cpu_time(&self) -> Option<Duration> {
        proc_cpu_time(&format!("/proc/{}/stat", self.child.id()))
    }
}

pub fn proc_cpu_time(stat_path: &str) -> Option<Duration> {
    let s = std::fs::read_to_string(stat_path).ok()?;
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields overall, i.e. the 12th and 13th after it.
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as u64 } else { 100 };
    Some(Duration::from_nanos((utime + stime) * 1_000_000_000 / hz))
}

/// Starts `cmd`, reads its stdout until a line starting with `prefix` and
/// returns the address after it; stdout is drained afterwards so the child
/// never blocks on a full pipe.
pub fn spawn_listening(
    name: &'static str,
    mut cmd: Command,
    prefix: &str,
) -> Result<Server, BoxError> {
    die_with_parent(&mut cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting {name}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let prefix = prefix.to_string();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent {
                if let Some(rest) = line.strip_prefix(&prefix) {
                    let _ = tx.send(rest.trim().to_string());
                    sent = true;
                }
            }
        }
    });
    // The guard kills the child if we bail out below.
    let mut server = Server {
        name,
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| format!("{name} did not report its listen address within 30 s"))?;
    server.addr = addr
        .parse()
        .map_err(|e| format!("{name} printed address {addr:?}: {e}"))?;
    if !server.addr.ip().is_loopback() {
        return Err(format!("{name} listens on {}, expected 127.0.0.1", server.addr).into());
    }
    Ok(server)
}

pub fn start_batchgate(
    bin: &Path,
    cert_dir: &Path,
    config: Option<&Path>,
) -> Result<Server, BoxError> {
    let status = Command::new(bin)
        .args(["certs", "--out"])
        .arg(cert_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("running batchgate certs: {e}"))?;
    if !status.success() {
        return Err(format!(
            "batchgate certs --out {} failed: {status}",
            cert_dir.display()
        )
        .into());
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
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    spawn_listening("batchgate", cmd, "webhook listening on https://")
}

pub fn read_pem_certs(
    path: &Path,
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, BoxError> {
    let pem = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Ok(rustls_pemfile::certs(&mut &pem[..]).collect::<Result<Vec<_>, _>>()?)
}

pub fn client_tls(cert_dir: &Path) -> Result<ClientConfig, BoxError> {
    let mut roots = RootCertStore::empty();
    for c in read_pem_certs(&cert_dir.join(batchgate::certs::CA_FILE))? {
        roots.add(c)?;
    }
    let mut cfg =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_root_certificates(roots)
            .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

#[derive(Default)]
pub struct WorkerResult {
    /// Latencies of requests that started and finished inside the window.
    latencies_ns: Vec<u64>,
    errors: u64,
    first_error: Option<String>,
}

impl WorkerResult {
    fn error(&mut self, e: impl std::fmt::Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }
}

pub struct Target {
    pub addr: SocketAddr,
    pub tls: TlsConnector,
    /// The request path, query included.
    pub path: &'static str,
    pub request_body: Bytes,
    pub check: Check,
}

/// What every answer must be, besides HTTP 200.
pub enum Check {
    /// These bytes exactly.
    Exact(Bytes),
    /// An allowed review whose JSON patch (base64, as the apiserver gets
    /// it) holds this text: a peer's answer, whose bytes differ.
    PatchHolds(&'static str),
}

impl Check {
    fn verify(&self, body: &[u8]) -> Result<(), BoxError> {
        match self {
            Check::Exact(expected) if body == &expected[..] => Ok(()),
            Check::Exact(_) => Err(format!(
                "unexpected response body: {}",
                String::from_utf8_lossy(body)
            )
            .into()),
            Check::PatchHolds(text) => {
                let v: serde_json::Value = serde_json::from_slice(body)?;
                let patch = v["response"]["patch"]
                    .as_str()
                    .map(|p| base64::engine::general_purpose::STANDARD.decode(p))
                    .transpose()?
                    .unwrap_or_default();
                if v["response"]["allowed"] == true
                    && String::from_utf8_lossy(&patch).contains(text)
                {
                    Ok(())
                } else {
                    Err(format!(
                        "expected an allowed review patching {text:?}: {}",
                        String::from_utf8_lossy(body)
                    )
                    .into())
                }
            }
        }
    }
}

pub type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

pub async fn connect(t: &Target) -> Result<Sender, BoxError> {
    let tcp = TcpStream::connect(t.addr).await?;
    tcp.set_nodelay(true)?;
    let tls = t
        .tls
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

pub async fn one_review(sender: &mut Sender, t: &Target) -> Result<(), BoxError> {
    sender.ready().await?;
    let req = Request::post(t.path)
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .header(header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(t.request_body.clone()))?;
    let resp = sender.send_request(req).await?;
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    if status != StatusCode::OK {
        return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)).into());
    }
    t.check.verify(&body)
}

pub async fn worker(t: Arc<Target>, measure_from: Instant, until: Instant) -> WorkerResult {
    let mut r = WorkerResult::default();
    let mut sender = None;
    while Instant::now() < until {
        let s = match &mut sender {
            Some(s) => s,
            None => match connect(&t).await {
                Ok(s) => sender.insert(s),
                Err(e) => {
                    r.error(format_args!("connect: {e}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let t0 = Instant::now();
        match one_review(s, &t).await {
            Ok(()) => {
                let t1 = Instant::now();
                if t0 >= measure_from && t1 <= until {
                    r.latencies_ns.push((t1 - t0).as_nanos() as u64);
                }
            }
            Err(e) => {
                r.error(e);
                // Start over on a fresh connection.
                sender = None;
            }
        }
    }
    r
}

pub struct RunResult {
    pub server: &'static str,
    pub concurrency: usize,
    pub reviews: u64,
    pub rps: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Server CPU time per review (both cores' worth counted).
    pub server_cpu_per_review: Option<Duration>,
    pub client_cpu_per_review: Option<Duration>,
}

pub fn percentile(sorted: &[u64], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // Nearest rank.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Duration::from_nanos(sorted[rank.clamp(1, sorted.len()) - 1])
}

pub fn measure(
    rt: &tokio::runtime::Runtime,
    server: &Server,
    t: Arc<Target>,
    c: usize,
    warmup: Duration,
    measured: Duration,
) -> RunResult {
    let start = Instant::now();
    let measure_from = start + warmup;
    let until = measure_from + measured;
    let mut cpu_before = None;
    let results = rt.block_on(async {
        let handles: Vec<_> = (0..c)
            .map(|_| tokio::spawn(worker(t.clone(), measure_from, until)))
            .collect();
        tokio::time::sleep_until(measure_from.into()).await;
        cpu_before = Some((server.cpu_time(), proc_cpu_time("/proc/self/stat")));
        let mut out = Vec::with_capacity(c);
        for h in handles {
            match h.await {
                Ok(r) => out.push(r),
                Err(e) => {
                    let mut r = WorkerResult::default();
                    r.error(format_args!("worker task failed: {e}"));
                    out.push(r);
                }
            }
        }
        out
    });
    let (server_cpu, client_cpu) = (server.cpu_time(), proc_cpu_time("/proc/self/stat"));
    let mut lat: Vec<u64> = Vec::new();
    let mut errors = 0;
    let mut first_error = None;
    for r in results {
        lat.extend(r.latencies_ns);
        errors += r.errors;
        if first_error.is_none() {
            first_error = r.first_error;
        }
    }
    lat.sort_unstable();
    let n = lat.len() as u64;
    let per_review = |before: Option<Duration>, after: Option<Duration>| match (before, after) {
        (Some(b), Some(a)) if n > 0 => Some(a.saturating_sub(b) / n as u32),
        _ => None,
    };
    let (sb, cb) = cpu_before.unwrap_or((None, None));
    RunResult {
        server: server.name,
        concurrency: c,
        reviews: n,
        rps: n as f64 / measured.as_secs_f64(),
        p50: percentile(&lat, 50.0),
        p99: percentile(&lat, 99.0),
        max: lat
            .last()
            .map(|&x| Duration::from_nanos(x))
            .unwrap_or_default(),
        errors,
        first_error,
        server_cpu_per_review: per_review(sb, server_cpu),
        client_cpu_per_review: per_review(cb, client_cpu),
    }
}

pub fn us(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e6)
}

pub fn opt_us(d: Option<Duration>) -> String {
    d.map(|d| format!("{:.1}", d.as_secs_f64() * 1e6))
        .unwrap_or_else(|| "-".into())
}
