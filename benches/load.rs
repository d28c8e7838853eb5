//! Load test of the Job mutate path over TLS with keep-alive, side by side
//! with a bare rustls + hyper server answering a fixed body of the same size
//! (the ceiling for this machine, TLS stack and HTTP stack).
//!
//!     cargo bench --bench load
//!
//! Two server processes are started: the real `batchgate serve --no-cluster`
//! (with a CA and serving pair from `batchgate certs`), and this binary
//! re-executed as the bare server (same certificate, same rustls ring
//! provider, same Tokio multi-thread runtime). For every concurrency level
//! both are measured back to back, each with one keep-alive HTTP/1.1
//! connection per concurrent worker, TLS 1.3 only, TCP_NODELAY on.
//!
//! Every response is checked: HTTP 200 and a body byte-for-byte equal to the
//! one expected (for batchgate: what `Router::answer` gives for the review,
//! which carries the `spec.suspend` patch). Anything else counts as an error;
//! a run with errors says so and exits non-zero.
//!
//! Knobs (environment):
//!   BATCHGATE_BENCH_SECS            measured seconds per run (default 5)
//!   BATCHGATE_BENCH_WARMUP_SECS     warm-up seconds per run (default 1)
//!   BATCHGATE_BENCH_CONCURRENCY     comma list (default 1,16,64)
//!   BATCHGATE_BENCH_ROUNDS          repeat the whole sweep; the table reports
//!                                   the median round by throughput (default 1)
//!   BATCHGATE_BENCH_CLIENT_THREADS  load generator worker threads; 1 means a
//!                                   current-thread runtime (default 1)
//!   BATCHGATE_BENCH_SERVER_CPUS     if set (e.g. "0" or "0-1"), both servers
//!                                   are pinned there with taskset semantics
//!                                   (sched_setaffinity)
//!   BATCHGATE_BENCH_CLIENT_CPUS     likewise for the load generator
//!   BATCHGATE_BENCH_BIN             the batchgate binary to serve with
//!                                   (default: the one cargo built with this
//!                                   bench), e.g. to compare two builds
//!   BATCHGATE_BENCH_FIXTURE         `job` (default): the queued Job CREATE;
//!                                   `pod`: a queued Pod CREATE, served with
//!                                   the pod integration on (a configuration
//!                                   naming every shipped integration)
//!   BATCHGATE_BENCH_DIAGNOSE        if set, a third server joins the sweep:
//!                                   "bare+answer", the bare server calling
//!                                   `Router::answer` for every request. It
//!                                   splits batchgate's cost into the handler
//!                                   (bare+answer vs bare) and the shell around
//!                                   it: axum, hyper-util, timeouts, metrics
//!                                   (batchgate vs bare+answer)
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a short smoke
//! pass instead: everything is exercised, nothing is meant to be read.

mod fixtures;

use std::{
    net::Ipv4Addr,
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, header, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use batchgate::{
    admission::{family::Hook, router::Router},
    admission::{NoCluster, Settings},
    api::selector::LabelSelector,
    jobs::policy::PolicySet,
};

const BARE_ENV: &str = "BATCHGATE_BENCH_BARE_SERVER";
const BARE_BODY_ENV: &str = "BATCHGATE_BENCH_BARE_BODY";
const BARE_ANSWER_ENV: &str = "BATCHGATE_BENCH_BARE_ANSWER";
const PATH: &str = "/mutate?timeout=10s";

#[path = "support/process.rs"]
mod process;
#[path = "support/review_load.rs"]
mod review_load;
use review_load::*;

fn main() {
    if let Ok(dir) = std::env::var(BARE_ENV) {
        bare_server(Path::new(&dir));
        return;
    }
    let smoke = !std::env::args().any(|a| a == "--bench");
    if let Err(e) = run(smoke) {
        eprintln!("load: {e}");
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------
// Configuration

struct Knobs {
    warmup: Duration,
    measure: Duration,
    concurrency: Vec<usize>,
    rounds: usize,
    client_threads: usize,
}

fn env_f64(name: &str, default: f64) -> Result<f64, BoxError> {
    match std::env::var(name) {
        Ok(v) => v
            .parse::<f64>()
            .map_err(|e| format!("{name}={v:?}: {e}").into()),
        Err(_) => Ok(default),
    }
}

fn knobs(smoke: bool) -> Result<Knobs, BoxError> {
    if smoke {
        return Ok(Knobs {
            warmup: Duration::from_millis(100),
            measure: Duration::from_millis(300),
            concurrency: vec![1, 16],
            rounds: 1,
            client_threads: 1,
        });
    }
    let concurrency = match std::env::var("BATCHGATE_BENCH_CONCURRENCY") {
        Ok(v) => v
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<usize>()
                    .map_err(|e| format!("BATCHGATE_BENCH_CONCURRENCY={v:?}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Err(_) => vec![1, 16, 64],
    };
    if concurrency.is_empty() || concurrency.contains(&0) {
        return Err("BATCHGATE_BENCH_CONCURRENCY needs positive numbers".into());
    }
    let secs = |name, default| -> Result<Duration, BoxError> {
        let v = env_f64(name, default)?;
        if !(0.0..=600.0).contains(&v) {
            return Err(format!("{name} must be between 0 and 600 seconds").into());
        }
        Ok(Duration::from_secs_f64(v))
    };
    Ok(Knobs {
        warmup: secs("BATCHGATE_BENCH_WARMUP_SECS", 1.0)?,
        measure: secs("BATCHGATE_BENCH_SECS", 5.0)?.max(Duration::from_millis(100)),
        concurrency,
        rounds: (env_f64("BATCHGATE_BENCH_ROUNDS", 1.0)? as usize).clamp(1, 20),
        client_threads: (env_f64("BATCHGATE_BENCH_CLIENT_THREADS", 1.0)? as usize).clamp(1, 64),
    })
}

/// Parses "0", "0-1", "0,1" into a CPU list.
fn cpu_list(spec: &str) -> Result<Vec<usize>, BoxError> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>()?..=b.parse::<usize>()?),
            None => out.push(part.parse()?),
        }
    }
    if out.is_empty() {
        return Err(format!("empty CPU list {spec:?}").into());
    }
    Ok(out)
}

fn pin(pid: libc::pid_t, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET only writes inside it; the
    // pointer and size passed to sched_setaffinity describe that set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Child processes

fn start_bare(cert_dir: &Path, body_file: &Path, answer: bool) -> Result<Server, BoxError> {
    let me = std::env::current_exe()?;
    let mut cmd = Command::new(me);
    cmd.env(BARE_ENV, cert_dir).env(BARE_BODY_ENV, body_file);
    if answer {
        cmd.env(BARE_ANSWER_ENV, "1");
        spawn_listening("bare+answer", cmd, "bare listening on ")
    } else {
        cmd.env_remove(BARE_ANSWER_ENV);
        spawn_listening("bare", cmd, "bare listening on ")
    }
}

// ---------------------------------------------------------------------------
// The bare server: rustls + hyper, nothing else.

fn bare_server(cert_dir: &Path) {
    if let Err(e) = bare_server_inner(cert_dir) {
        eprintln!("bare server: {e}");
        std::process::exit(1);
    }
}

fn bare_server_inner(cert_dir: &Path) -> Result<(), BoxError> {
    let body_file = std::env::var(BARE_BODY_ENV).map_err(|_| format!("{BARE_BODY_ENV} not set"))?;
    let body = Bytes::from(std::fs::read(&body_file)?);
    let webhook = match std::env::var_os(BARE_ANSWER_ENV) {
        Some(_) => Some(Arc::new(bench_webhook()?)),
        None => None,
    };
    let config = Arc::new(server_tls(cert_dir)?);
    // The same runtime batchgate's main builds: multi-thread, one worker per CPU.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        println!("bare listening on {}", listener.local_addr()?);
        let acceptor = TlsAcceptor::from(config);
        loop {
            let (tcp, _) = listener.accept().await?;
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            let body = body.clone();
            let webhook = webhook.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let body = body.clone();
                    let webhook = webhook.clone();
                    async move {
                        // Read the whole request, as a real handler must.
                        let review = req.into_body().collect().await?.to_bytes();
                        let body = match &webhook {
                            Some(w) => Bytes::from(w.answer(Hook::Mutate, &review).body),
                            None => body,
                        };
                        let mut r = Response::new(Full::new(body));
                        r.headers_mut().insert(
                            header::CONTENT_TYPE,
                            header::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, hyper::Error>(r)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    })
}

fn server_tls(cert_dir: &Path) -> Result<ServerConfig, BoxError> {
    let certs = read_pem_certs(&cert_dir.join(batchgate::certs::CERT_FILE))?;
    let key_pem = std::fs::read(cert_dir.join(batchgate::certs::KEY_FILE))?;
    let key = rustls_pemfile::private_key(&mut &key_pem[..])?.ok_or("no private key in tls.key")?;
    let mut cfg =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

// ---------------------------------------------------------------------------
// The run

/// A webhook with the settings `batchgate serve --no-cluster` runs with by
/// default.
fn bench_webhook() -> Result<Router, BoxError> {
    let settings = Settings {
        manage_jobs_without_queue_name: false,
        managed_namespaces: LabelSelector::excluding_namespaces(&[
            "kube-system",
            batchgate::api::DEFAULT_NAMESPACE,
        ]),
    };
    Ok(Router::new(
        PolicySet::embedded()?,
        settings,
        Arc::new(NoCluster),
        Arc::new(|| chrono::Utc::now().date_naive()),
    ))
}

fn expected_mutate_response(body: &[u8]) -> Result<Vec<u8>, BoxError> {
    let a = bench_webhook()?.answer(Hook::Mutate, body);
    let v: serde_json::Value = serde_json::from_slice(&a.body)?;
    if a.status != StatusCode::OK
        || v["response"]["allowed"] != true
        || v["response"]["patch"].as_str().is_none()
    {
        return Err(format!(
            "the fixture does not take the patched path: {}",
            String::from_utf8_lossy(&a.body)
        )
        .into());
    }
    Ok(a.body)
}

fn run(smoke: bool) -> Result<(), BoxError> {
    let k = knobs(smoke)?;
    let bin = std::env::var_os("BATCHGATE_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_batchgate")));
    let dir = tempfile::tempdir()?;
    let cert_dir = dir.path().join("certs");
    // Which review: the queued Job (default) or the queued Pod, whose
    // integration is off unless configured.
    let pods = match std::env::var("BATCHGATE_BENCH_FIXTURE").as_deref() {
        Ok("pod") => true,
        Ok("job") | Err(_) => false,
        Ok(other) => return Err(format!("BATCHGATE_BENCH_FIXTURE={other:?}: job or pod").into()),
    };
    let (request_body, what, config) = if pods {
        let names: Vec<String> = PolicySet::embedded()?
            .iter()
            .map(|p| format!("{:?}", p.name))
            .collect();
        let cfg = dir.path().join("config.yaml");
        std::fs::write(
            &cfg,
            format!("integrations:\n  frameworks: [{}]\n", names.join(", ")),
        )?;
        (Bytes::from(fixtures::pod_create_queued()), "Pod", Some(cfg))
    } else {
        (Bytes::from(fixtures::job_create_queued()), "Job", None)
    };
    let expected = Bytes::from(expected_mutate_response(&request_body)?);
    let body_file = dir.path().join("bare-body.json");
    std::fs::write(&body_file, &expected)?;

    // Children first, from the main thread (see die_with_parent).
    let batchgate = start_batchgate(&bin, &cert_dir, config.as_deref())?;
    let bare = start_bare(&cert_dir, &body_file, false)?;
    let diagnose = match std::env::var_os("BATCHGATE_BENCH_DIAGNOSE") {
        Some(_) => Some(start_bare(&cert_dir, &body_file, true)?),
        None => None,
    };
    let mut servers = vec![&batchgate, &bare];
    servers.extend(diagnose.as_ref());
    if let Ok(spec) = std::env::var("BATCHGATE_BENCH_SERVER_CPUS") {
        let cpus = cpu_list(&spec)?;
        for s in &servers {
            // Threads already running keep their mask, so pin every one.
            for task in std::fs::read_dir(format!("/proc/{}/task", s.child.id()))? {
                let tid: libc::pid_t = task?.file_name().to_string_lossy().parse()?;
                pin(tid, &cpus)?;
            }
        }
    }
    if let Ok(spec) = std::env::var("BATCHGATE_BENCH_CLIENT_CPUS") {
        // Before the runtime exists, so its threads inherit the mask.
        pin(0, &cpu_list(&spec)?)?;
    }
    let rt = if k.client_threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(k.client_threads)
            .enable_all()
            .build()?
    };
    let tls = TlsConnector::from(Arc::new(client_tls(&cert_dir)?));
    let target = |s: &Server| {
        Arc::new(Target {
            addr: s.addr,
            tls: tls.clone(),
            path: PATH,
            request_body: request_body.clone(),
            check: Check::Exact(expected.clone()),
        })
    };

    println!(
        "load: {what} mutate review {} bytes -> response {} bytes; {} s warm-up + {} s measured per run; \
         HTTP/1.1 keep-alive over TLS 1.3, one connection per worker; load generator: {} thread(s){}",
        request_body.len(),
        expected.len(),
        k.warmup.as_secs_f64(),
        k.measure.as_secs_f64(),
        k.client_threads,
        if smoke { " [smoke run without --bench: numbers are not meaningful]" } else { "" },
    );
    println!(
        "batchgate ({}) on https://{}",
        bin.display(),
        batchgate.addr
    );
    println!("bare rustls+hyper on https://{}", bare.addr);
    if let Some(d) = &diagnose {
        println!(
            "bare rustls+hyper calling Router::answer on https://{}",
            d.addr
        );
    }

    // rounds x concurrency x server, interleaved per concurrency level.
    let mut all: Vec<RunResult> = Vec::new();
    for round in 0..k.rounds {
        for &c in &k.concurrency {
            // Rotate which server goes first, so none always gets another's
            // leftovers (page cache, CPU frequency, neighbours).
            let mut order = servers.clone();
            order.rotate_left(round % servers.len());
            for s in order {
                let r = measure(&rt, s, target(s), c, k.warmup, k.measure);
                eprintln!(
                    "  round {} c={:<3} {:<11} {:>8} reviews {:>8.0}/s  p50 {:>5} us  p99 {:>5} us  errors {}",
                    round + 1,
                    c,
                    r.server,
                    r.reviews,
                    r.rps,
                    us(r.p50),
                    us(r.p99),
                    r.errors
                );
                all.push(r);
            }
        }
    }
    drop(rt);

    // The median round by throughput, per (server, concurrency).
    let pick = |server: &str, c: usize| -> Option<&RunResult> {
        let mut rs: Vec<&RunResult> = all
            .iter()
            .filter(|r| r.server == server && r.concurrency == c)
            .collect();
        rs.sort_by(|a, b| a.rps.total_cmp(&b.rps));
        rs.get(rs.len() / 2).copied()
    };
    println!();
    println!(
        "| concurrency | server | reviews/s | p50 (µs) | p99 (µs) | max (µs) | server CPU µs/review | client CPU µs/review | errors |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut verdict = Vec::new();
    for &c in &k.concurrency {
        let (Some(b), Some(bare)) = (pick("batchgate", c), pick("bare", c)) else {
            continue;
        };
        let answer = pick("bare+answer", c);
        for r in [Some(b), Some(bare), answer].into_iter().flatten() {
            println!(
                "| {} | {} | {:.0} | {} | {} | {} | {} | {} | {} |",
                c,
                r.server,
                r.rps,
                us(r.p50),
                us(r.p99),
                us(r.max),
                opt_us(r.server_cpu_per_review),
                opt_us(r.client_cpu_per_review),
                r.errors
            );
        }
        let ratio = if bare.rps > 0.0 {
            b.rps / bare.rps
        } else {
            0.0
        };
        verdict.push((
            c,
            b.rps,
            b.p99,
            ratio,
            answer.map(|a| a.rps / bare.rps.max(1.0)),
        ));
    }
    println!();
    if diagnose.is_some() {
        println!("| concurrency | batchgate / bare throughput | bare+answer / bare throughput |");
        println!("|---:|---:|---:|");
    } else {
        println!("| concurrency | batchgate / bare throughput |");
        println!("|---:|---:|");
    }
    for (c, _, _, ratio, answer) in &verdict {
        match answer {
            Some(a) => println!("| {c} | {:.0}% | {:.0}% |", ratio * 100.0, a * 100.0),
            None => println!("| {c} | {:.0}% |", ratio * 100.0),
        }
    }

    let errors: u64 = all.iter().map(|r| r.errors).sum();
    if let Some((c, rps, p99, ratio, _)) = verdict.iter().find(|v| v.0 == 16 && !smoke) {
        let met = |ok: bool| if ok { "met" } else { "NOT met" };
        println!();
        println!(
            "target at concurrency {c}: >= 20000 reviews/s: {} ({rps:.0}); p99 <= 2 ms: {} ({} µs); >= 80% of bare: {} ({:.0}%)",
            met(*rps >= 20_000.0),
            met(*p99 <= Duration::from_millis(2)),
            us(*p99),
            met(*ratio >= 0.8),
            ratio * 100.0
        );
    }
    if errors > 0 {
        println!();
        println!("THIS RUN HAD {errors} ERRORS; its numbers do not count:");
        for r in all.iter().filter(|r| r.errors > 0) {
            println!(
                "  {} c={}: {} errors, first: {}",
                r.server,
                r.concurrency,
                r.errors,
                r.first_error.as_deref().unwrap_or("?")
            );
        }
        return Err(format!("{errors} failed requests").into());
    }
    Ok(())
}
