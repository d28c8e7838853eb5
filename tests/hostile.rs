//! Hostile clients against the real binary over real TLS: connections that
//! go silent, stall, trickle, never read, or hold big bodies open, kept up
//! while honest reviews arrive on new connections; and SIGTERM under
//! HTTP/1.1 and HTTP/2 load. Figures are printed (BENCHMARKS.md), not
//! asserted; what is asserted is that nothing honest fails and that every
//! attacking connection is closed within its deadline (with slack).
//!
//! The tests take the machine to themselves: they run one at a time.

mod support;

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use support::{
    attack::{raise_open_files, Attack, Honest, Kind},
    *,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The memory limit of the shipped Deployment, in bytes.
fn deployment_memory_limit() -> u64 {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/deployment.yaml"),
    )
    .unwrap();
    let d: serde_json::Value = serde_yaml::from_str(&text).unwrap();
    let limit = d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]
        .as_str()
        .unwrap()
        .to_string();
    let mib: u64 = limit.strip_suffix("Mi").unwrap().parse().unwrap();
    mib * 1024 * 1024
}

/// How long an attack is held: `BATCHGATE_HOSTILE_SECS`, else `default`.
fn hold_secs(default: u64) -> Duration {
    Duration::from_secs(
        std::env::var("BATCHGATE_HOSTILE_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default),
    )
}

/// user + system CPU seconds the process has used.
fn server_cpu_secs(pid: i32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime), counted from the state field (3).
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// Samples the server's RSS every 100 ms until `until`; the peak in KiB.
fn sample_rss(pid: i32, until: Instant) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut peak = 0;
        while Instant::now() < until {
            if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                if let Some(kib) = s
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    peak = peak.max(kib);
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        peak
    })
}

/// A sample of the server's own metrics (`batchgate_<name>`); a metric the
/// server does not export fails the test rather than reading as 0.
fn metric(server: &Server, name: &str) -> f64 {
    let (_, text) = server.probe_get("/metrics");
    let prefix = format!("batchgate_{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("the server exports no batchgate_{name}"))
}

fn closed_by_reason(server: &Server) -> String {
    server
        .probe_get("/metrics")
        .1
        .lines()
        .filter(|l| l.starts_with("batchgate_connections_closed_by_server_total"))
        .map(|l| l.trim_start_matches("batchgate_connections_closed_by_server_total"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minute_of_stalling_clients_does_not_starve_honest_reviews() {
    let _one = ONE_AT_A_TIME.lock().await;
    raise_open_files(8_000);
    // The defaults: first request 10 s, write 10 s, 1024 connections.
    let server = Server::start(&[]);
    let hold = hold_secs(60);
    let until = Instant::now() + hold;
    let rss = sample_rss(server.pid(), until);
    // An attacker reconnects 22-67 s after the server closes it: the test
    // client shares two cores with the server (and a debug build), and
    // handshakes faster than that would measure the machine's CPU, not
    // the slots. See BENCHMARKS.md.
    let pause = Duration::from_secs(45);
    let attacks = [
        (Kind::Silent, 4000),
        (Kind::Slowloris, 2000),
        (Kind::PartialPreface, 200),
        (Kind::IdleH2, 200),
        (Kind::NonReading, 20),
        (Kind::NonReadingH2, 100),
    ]
    .map(|(kind, n)| Attack::start(kind, n, server.addr, &server.ca_pem, until, pause));
    // The attack opens its connections over the first 15 s (7,000 TLS
    // handshakes, more than this shared machine's debug build handshakes
    // in that time); honest reviews start once it holds every slot.
    tokio::time::sleep(Duration::from_secs(20)).await;
    // The premise: the attack holds every slot (newcomers find them all
    // taken) before the honest reviews start, and still does after.
    let full_before = metric(&server, "connection_slots_full_total");
    assert!(
        full_before > 0.0,
        "the attack never filled the {} connection slots; closed so far: {}",
        1024,
        closed_by_reason(&server)
    );
    let honest = Honest::run_apart(
        server.addr,
        server.ca_pem.clone(),
        until,
        Duration::from_millis(50),
    )
    .await;
    let full_after = metric(&server, "connection_slots_full_total");
    eprintln!("connections accepted while every slot was taken: {full_before} before the honest reviews, {full_after} by their end");
    assert!(
        full_after > full_before,
        "the slots were not full any more while honest reviews ran"
    );
    let mut stats = Vec::new();
    for a in attacks {
        let kind = a.kind;
        stats.push((kind, a.join().await));
    }
    let peak = rss.join().unwrap();
    eprintln!("{}", honest.summary());
    for (kind, s) in &stats {
        eprintln!("{}", s.summary(*kind));
    }
    eprintln!(
        "closed by the server, by reason: {}",
        closed_by_reason(&server)
    );
    eprintln!("server peak RSS {} MiB", peak / 1024);
    eprintln!(
        "server CPU {:.1} s over the {hold:?} hold",
        server_cpu_secs(server.pid())
    );

    assert!(
        honest.failures.is_empty(),
        "honest reviews failed: {:?}",
        &honest.failures[..honest.failures.len().min(20)]
    );
    assert!(honest.latencies_ms.len() > 10, "{}", honest.summary());
    for (kind, s) in &stats {
        // First request (10 s) for the silent and stalled kinds; the write
        // deadline (10 s) once the buffers are full for the non-reading
        // ones. Generous slack: the machine is two shared cores, where the
        // server's timers run late under load. An implementation that never
        // closes them keeps its oldest connections 45-60 s.
        let bound = match kind {
            Kind::NonReading | Kind::NonReadingH2 => 45_000,
            _ => 30_000,
        };
        assert!(s.closed.load(Ordering::Relaxed) > 0, "{}", s.summary(*kind));
        assert!(
            s.longest_ms.load(Ordering::Relaxed) <= bound,
            "{}",
            s.summary(*kind)
        );
        assert!(
            s.oldest_open_ms.load(Ordering::Relaxed) <= bound,
            "{}",
            s.summary(*kind)
        );
    }
    assert_still_serving(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_held_open_stay_within_the_deployment_memory_limit() {
    let _one = ONE_AT_A_TIME.lock().await;
    raise_open_files(8_000);
    let server = Server::start(&[]);
    assert_still_serving(&server).await;
    let idle_kib = server.rss_kib();
    let hold = hold_secs(30);
    let until = Instant::now() + hold;
    let rss = sample_rss(server.pid(), until);
    let attack = Attack::start(
        Kind::BodyMinusOne,
        1000,
        server.addr,
        &server.ca_pem,
        until,
        Duration::from_secs(1),
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The premise: held bodies fill the large share of the budget (no
    // further 7 MiB body fits) and later ones wait in line, before the
    // honest reviews start.
    let large_share = 64.0 * 1024.0 * 1024.0 / 4.0 * 3.0;
    let peak = metric(&server, "body_budget_peak_bytes");
    let queued_before = metric(&server, "body_budget_queued_total");
    assert!(
        peak > large_share - 7.0 * 1024.0 * 1024.0 && queued_before > 0.0,
        "the attack did not fill the body budget: peak {peak} bytes, {queued_before} bodies waited"
    );
    let honest = Honest::run_apart(
        server.addr,
        server.ca_pem.clone(),
        until,
        Duration::from_millis(50),
    )
    .await;
    let queued_after = metric(&server, "body_budget_queued_total");
    eprintln!("held bodies filled the budget (peak {:.1} MiB); bodies that waited in line: {queued_before} before the honest reviews, {queued_after} by their end", peak / 1048576.0);
    assert!(
        queued_after > queued_before,
        "the budget was not full any more while honest reviews ran"
    );
    let stats = attack.join().await;
    let peak = rss.join().unwrap();
    let limit = deployment_memory_limit();
    eprintln!("{}", honest.summary());
    eprintln!("{}", stats.summary(Kind::BodyMinusOne));
    eprintln!(
        "closed by the server, by reason: {}",
        closed_by_reason(&server)
    );
    let (_, metrics) = server.probe_get("/metrics");
    for l in metrics
        .lines()
        .filter(|l| l.starts_with("batchgate_http_requests_rejected_total"))
    {
        eprintln!("{l}");
    }
    eprintln!(
        "server RSS idle {} MiB, peak under 1000 held 7 MiB bodies {} MiB (Deployment limit {} MiB)",
        idle_kib / 1024,
        peak / 1024,
        limit >> 20
    );
    assert!(
        peak * 1024 < limit,
        "peak RSS {peak} KiB over the Deployment's limit"
    );
    assert!(
        honest.failures.is_empty(),
        "honest reviews failed: {:?}",
        &honest.failures[..honest.failures.len().min(20)]
    );
    assert!(honest.latencies_ms.len() > 50, "{}", honest.summary());
    assert!(stats.closed.load(Ordering::Relaxed) > 0);
    assert_still_serving(&server).await;
}

fn small_review(uid: &str) -> Bytes {
    Bytes::from(review(
        uid,
        "CREATE",
        JOB,
        job(
            serde_json::json!({"kueue.x-k8s.io/queue-name": "q"}),
            serde_json::json!({}),
        ),
        None,
    ))
}

#[derive(Default)]
struct Load {
    answered: AtomicU64,
    failed: AtomicU64,
    /// Not processed by the server, safe to retry elsewhere: new
    /// connections refused once the listener closed, HTTP/2 streams past
    /// the GOAWAY.
    refused: AtomicU64,
    errors: Mutex<Vec<String>>,
}

impl Load {
    fn fail(&self, e: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.errors.lock().unwrap().push(e);
    }
}

/// HTTP/1.1 keep-alive: reviews on one connection until the server says
/// `Connection: close`, then a new one, until connecting is refused.
async fn h1_worker(addr: std::net::SocketAddr, ca: String, load: Arc<Load>, stop: Arc<AtomicBool>) {
    let tls = tokio_rustls::TlsConnector::from(tls_config(&ca, &[b"http/1.1"]));
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let Ok(tcp) = tokio::net::TcpStream::connect(addr).await else {
            load.refused.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let Ok(s) = tls
            .connect(
                rustls::pki_types::ServerName::try_from("localhost").unwrap(),
                tcp,
            )
            .await
        else {
            load.refused.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let Ok((mut sender, conn)) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(s)).await
        else {
            load.refused.fetch_add(1, Ordering::Relaxed);
            return;
        };
        tokio::spawn(conn);
        while sender.ready().await.is_ok() && !stop.load(Ordering::Relaxed) {
            i += 1;
            let req = hyper::Request::post("/mutate")
                .header("host", "localhost")
                .body(Full::new(small_review(&format!("h1-{i}"))))
                .unwrap();
            match sender.send_request(req).await {
                Ok(r) if r.status() == 200 => {
                    let close = r.headers().get("connection").is_some_and(|v| v == "close");
                    match r.into_body().collect().await {
                        Ok(_) => load.answered.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            load.fail(format!("h1 body: {e}"));
                            0
                        }
                    };
                    if close {
                        break;
                    }
                }
                Ok(r) => load.fail(format!("h1 status {}", r.status())),
                Err(e) => load.fail(format!("h1: {e:?}")),
            }
        }
    }
}

/// HTTP/2: concurrent reviews on one connection until it is closed.
async fn h2_worker(
    sender: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    n: usize,
    load: Arc<Load>,
    stop: Arc<AtomicBool>,
) {
    let mut i = 0;
    let mut sender = sender;
    while !stop.load(Ordering::Relaxed) {
        if sender.ready().await.is_err() {
            return;
        }
        i += 1;
        let req = hyper::Request::post("https://localhost/mutate")
            .body(Full::new(small_review(&format!("h2-{n}-{i}"))))
            .unwrap();
        match sender.send_request(req).await {
            Ok(r) if r.status() == 200 => match r.into_body().collect().await {
                Ok(_) => {
                    load.answered.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => load.fail(format!("h2 body: {e:?}")),
            },
            Ok(r) => load.fail(format!("h2 status {}", r.status())),
            Err(e) => {
                // A stream the server never took (past its GOAWAY, or
                // refused) was not processed: a client retries it elsewhere.
                let text = format!("{e:?}");
                if text.contains("REFUSED_STREAM")
                    || (text.contains("GoAway") && text.contains("NO_ERROR"))
                    || e.is_canceled()
                {
                    load.refused.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                load.fail(format!("h2: {text}"));
            }
        }
    }
}

/// An HTTP/2 client that makes one request, then ignores GOAWAY and PING
/// and never closes: the bytes it received, and when the server closed it.
async fn goaway_ignorer(addr: std::net::SocketAddr, ca: String) -> (Vec<u8>, Option<Instant>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut s = tokio_rustls::TlsConnector::from(tls_config(&ca, &[b"h2"]))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    // HEADERS on stream 1, END_STREAM | END_HEADERS: GET https / (HPACK
    // static table 2, 7, 4), answered 404 by the fallback route.
    hello.extend_from_slice(&[0, 0, 3, 1, 5, 0, 0, 0, 1, 0x82, 0x87, 0x84]);
    s.write_all(&hello).await.unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(60), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (got, Some(Instant::now())),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (got, None),
        }
    }
}

/// Frames (type, stream) in a server's HTTP/2 byte stream.
fn h2_frames(bytes: &[u8]) -> Vec<(u8, u32)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 9 <= bytes.len() {
        let len = u32::from_be_bytes([0, bytes[at], bytes[at + 1], bytes[at + 2]]) as usize;
        let ty = bytes[at + 3];
        let stream =
            u32::from_be_bytes([bytes[at + 5], bytes[at + 6], bytes[at + 7], bytes[at + 8]])
                & 0x7fff_ffff;
        out.push((ty, stream));
        at += 9 + len;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_http1_and_http2_load_fails_nothing_and_exits_in_the_drain_bound() {
    let _one = ONE_AT_A_TIME.lock().await;
    raise_open_files(8_000);
    // The Deployment's shutdown delay, shortened; drain grace 2 s (default).
    let mut server = Server::start(&["--shutdown-delay", "1", "--drain-timeout", "10"]);
    let stop = Arc::new(AtomicBool::new(false));
    let h1 = Arc::new(Load::default());
    let h2 = Arc::new(Load::default());
    let mut tasks = Vec::new();
    for _ in 0..8 {
        tasks.push(tokio::spawn(h1_worker(
            server.addr,
            server.ca_pem.clone(),
            h1.clone(),
            stop.clone(),
        )));
    }
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(tls_config(&server.ca_pem, &[b"h2"]))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    let (sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    for n in 0..8 {
        tasks.push(tokio::spawn(h2_worker(
            sender.clone(),
            n,
            h2.clone(),
            stop.clone(),
        )));
    }
    let ignorer = tokio::spawn(goaway_ignorer(server.addr, server.ca_pem.clone()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (h1_before, h2_before) = (
        h1.answered.load(Ordering::Relaxed),
        h2.answered.load(Ordering::Relaxed),
    );
    let t = Instant::now();
    server.signal(libc::SIGTERM);
    let status = server
        .wait_exit(Duration::from_secs(20))
        .expect("exits within the drain bound");
    let exit_after = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
    }
    let (got, closed_at) = ignorer.await.unwrap();
    let frames = h2_frames(&got);
    eprintln!(
        "HTTP/1.1: {} answered ({} before SIGTERM), {} failed, {} refused after the listener closed",
        h1.answered.load(Ordering::Relaxed),
        h1_before,
        h1.failed.load(Ordering::Relaxed),
        h1.refused.load(Ordering::Relaxed),
    );
    eprintln!(
        "HTTP/2: {} answered ({} before SIGTERM), {} failed, {} not processed (past GOAWAY)",
        h2.answered.load(Ordering::Relaxed),
        h2_before,
        h2.failed.load(Ordering::Relaxed),
        h2.refused.load(Ordering::Relaxed),
    );
    eprintln!(
        "exit {status:?} {exit_after:?} after SIGTERM (shutdown delay 1 s, drain grace 2 s, drain timeout 10 s); the GOAWAY-ignoring client was closed {:?} after SIGTERM",
        closed_at.map(|c| c.duration_since(t))
    );
    assert!(status.success(), "exit status {status:?}");
    assert!(
        exit_after < Duration::from_secs(11) + Duration::from_secs(5),
        "took {exit_after:?}"
    );
    assert_eq!(
        h1.failed.load(Ordering::Relaxed),
        0,
        "{:?}",
        h1.errors.lock().unwrap()
    );
    assert_eq!(
        h2.failed.load(Ordering::Relaxed),
        0,
        "{:?}",
        h2.errors.lock().unwrap()
    );
    assert!(h1.answered.load(Ordering::Relaxed) > h1_before);
    assert!(h2_before > 0);
    // The ignoring client got its answer (HEADERS on stream 1) and a
    // GOAWAY (type 7), and was closed by the server, not by its own timer.
    assert!(frames.contains(&(1, 1)), "{frames:?}");
    assert!(frames.iter().any(|(ty, _)| *ty == 7), "{frames:?}");
    assert!(
        closed_at.is_some(),
        "the GOAWAY-ignoring client was never closed"
    );
}

/// A request body fed by the test, frame by frame; no length unless the
/// request declares one.
struct ChanBody(tokio::sync::mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChanBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|b| b.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

type H2Sender = hyper::client::conn::http2::SendRequest<ChanBody>;

async fn h2_connect(server: &Server) -> H2Sender {
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(tls_config(&server.ca_pem, &[b"h2"]))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    sender
}

/// Starts a stream on `sender`; the body's sending half and the response.
async fn h2_stream(
    sender: &mut H2Sender,
    content_length: Option<usize>,
) -> (
    tokio::sync::mpsc::Sender<Bytes>,
    tokio::task::JoinHandle<Result<(hyper::StatusCode, String), String>>,
) {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut req =
        hyper::Request::post("https://localhost/mutate").header("content-type", "application/json");
    if let Some(n) = content_length {
        req = req.header("content-length", n);
    }
    sender.ready().await.expect("the connection takes a stream");
    let resp = sender.send_request(req.body(ChanBody(rx)).unwrap());
    let answer = tokio::spawn(async move {
        let r = resp.await.map_err(|e| format!("{e:?}"))?;
        let status = r.status();
        let body = r
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{e:?}"))?;
        Ok((
            status,
            String::from_utf8_lossy(&body.to_bytes()).into_owned(),
        ))
    });
    (tx, answer)
}

/// A whole small review on a new stream of `sender`: its status.
async fn h2_review(sender: &mut H2Sender, uid: &str) -> hyper::StatusCode {
    let (tx, answer) = h2_stream(sender, None).await;
    tx.send(small_review(uid)).await.unwrap();
    drop(tx);
    let (status, body) = answer.await.unwrap().expect("an answer on the stream");
    assert_eq!(status, 200, "{body}");
    status
}

/// A stream whose body never comes is answered 408 on that stream at the
/// body deadline; the connection and its other streams go on. Both on a
/// connection that has already completed a review (kube-apiserver's
/// shared one) and on a fresh one, whose first-request deadline falls at
/// the same instant and used to close it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_stream_whose_body_never_comes_is_answered_408_and_the_connection_kept() {
    let _one = ONE_AT_A_TIME.lock().await;
    // Defaults: body 10 s, first request 10 s.
    let server = Server::start(&[]);
    let mut shared = h2_connect(&server).await;
    h2_review(&mut shared, "before").await;
    let mut fresh = h2_connect(&server).await;
    let start = Instant::now();
    // Content-Length promised, no byte sent.
    let (_hold_shared, silent_shared) = h2_stream(&mut shared, Some(4096)).await;
    let (_hold_fresh, silent_fresh) = h2_stream(&mut fresh, Some(4096)).await;
    // Meanwhile the shared connection keeps serving.
    for i in 0..5 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        h2_review(&mut shared, &format!("during-{i}")).await;
    }
    for (name, silent) in [("shared", silent_shared), ("fresh", silent_fresh)] {
        let (status, body) = silent
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{name}: the silent stream got no answer: {e}"));
        let waited = start.elapsed();
        assert_eq!(status, 408, "{name}: {body}");
        assert!(body.contains("request body not received within"), "{body}");
        assert!(
            waited >= Duration::from_secs(9) && waited < Duration::from_secs(20),
            "{name}: answered after {waited:?}, the body deadline is 10 s"
        );
    }
    // Both connections are still open and serve new streams.
    h2_review(&mut shared, "after-shared").await;
    h2_review(&mut fresh, "after-fresh").await;
    let closed = closed_by_reason(&server);
    assert!(
        !closed.contains("first_request_timeout"),
        "a connection was closed: {closed}"
    );
}

/// A body with no Content-Length is refused with 413 as soon as it passes
/// the 7 MiB limit, without waiting for its end: on HTTP/1.1 (the
/// connection then closes: its unread rest cannot be skipped) and on
/// HTTP/2 (on that stream; the connection serves the next one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_without_length_is_refused_413_as_soon_as_it_passes_the_limit() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::start(&[]);
    let limit = 7 << 20;
    let chunk = Bytes::from(vec![b' '; 64 << 10]);

    let mut h2 = h2_connect(&server).await;
    let (tx, answer) = h2_stream(&mut h2, None).await;
    // Just past the limit, then silence: the stream stays open.
    let mut sent = 0;
    while sent <= limit {
        if tx.send(chunk.clone()).await.is_err() {
            break;
        }
        sent += chunk.len();
    }
    let (status, body) = tokio::time::timeout(Duration::from_secs(5), answer)
        .await
        .expect("HTTP/2: an answer once the limit is passed, before the body ends")
        .unwrap()
        .expect("an answer on the stream");
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("7340032-byte limit"), "{body}");
    drop(tx);
    h2_review(&mut h2, "after-413").await;

    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(tls_config(&server.ca_pem, &[b"http/1.1"]))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    let (mut rd, mut wr) = tokio::io::split(tls);
    // Written aside: the last chunk's rest may never be read.
    let writer = tokio::spawn(async move {
        wr.write_all(
            b"POST /mutate HTTP/1.1\r\nhost: localhost\r\ntransfer-encoding: chunked\r\n\r\n",
        )
        .await?;
        let mut sent = 0;
        while sent <= limit {
            wr.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await?;
            wr.write_all(&chunk).await?;
            wr.write_all(b"\r\n").await?;
            sent += chunk.len();
        }
        // Past the limit; the body's end never comes.
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok::<_, std::io::Error>(wr)
    });
    let mut got = Vec::new();
    let mut buf = vec![0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("byte limit") {
        let n = tokio::time::timeout(Duration::from_secs(5), rd.read(&mut buf))
            .await
            .expect("HTTP/1.1: an answer once the limit is passed, before the body ends")
            .unwrap_or(0);
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    writer.abort();
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert_still_serving(&server).await;
}
