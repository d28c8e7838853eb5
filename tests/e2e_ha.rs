//! High availability end to end: two `batchgate serve` replicas with
//! distinct identities, running as batchgate's own ServiceAccount, behind one
//! webhook URL (a readiness-aware TCP round-robin written here stands in
//! for the Service), a ClusterQueue of 20 cpu and a stream of queued Jobs.
//!
//! Throughout (a), (b) and (c) Kueue's visibility API is asked through the
//! apiserver twice a second, its APIService pointed at a readiness-aware
//! proxy over every replica's visibility listener, each request on a new
//! connection: it must list pending Workloads in every phase, and every
//! replica, leader or standby, must have answered.
//!
//! (a) SIGTERM of the leader: it releases the Lease, the standby (which
//!     watches the Lease and keeps its engine warm) admits within 2 s of
//!     the old leader's exit.
//! (b) SIGSTOP for 30 s of the replica that holds the apiserver's webhook
//!     connection and the Lease: the standby takes the Lease within
//!     lease + 1 s and admits within lease + 7 s (target lease + 2 s; its
//!     Workload and Job writes skip the validating webhooks), and after
//!     SIGCONT the old leader exits without writing.
//! (c) SIGKILL of the leader mid-stream: nothing is released, a fresh
//!     standby takes the Lease within lease + 1 s and admits within
//!     lease + 5 s.
//!
//! Only the Lease holder writes admissions: a watch records every holder
//! and its acquireTime, and each admission (its QuotaReserved event, one
//! per admission written, carries the writing replica as
//! reportingInstance) must fall within its writer's tenure; no Workload is
//! admitted twice.
//!
//! The apiserver keeps one HTTP/2 connection per webhook host (the URL
//! webhooks here negotiate h2). The main URL's connection is pinned to the
//! leader before the freeze, so every review of the main namespace (Job
//! creates, and the standby's Workload status writes were it not exempt)
//! goes down the frozen connection. A second set of webhook configurations,
//! for `e2e-ha-live` only, has its own URL and so its own connection, held
//! by the live replica: creates there must all succeed during the freeze.
//! It has its own ClusterQueue, so its Jobs never hold the quota the
//! standby's main-namespace admissions wait for.
//! With a Service-referenced webhook (as shipped) the apiserver speaks
//! HTTP/1.1 with a connection per concurrent review, so reviews likewise
//! split between connections held by the frozen replica and by the live one.
//!
//! `E2E_HA_SA=` (empty) registers the webhooks without the exemption: the
//! SIGSTOP phase then fails (see docs/high-availability.md for the figures).
//!
//! Throughout: every Job gets exactly one Workload and finishes, and a
//! sampler checks the cpu of quota-reserved Workloads never exceeds 20.
//! Figures are printed for docs/high-availability.md ("Measured: the whole `e2e_ha` run").

mod support;

use std::{
    collections::HashMap,
    io::{Read, Write},
    net::{Shutdown, SocketAddr, TcpListener, TcpStream},
    path::Path,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    thread,
    time::{Duration, Instant, SystemTime},
};

use batchgate_localcluster::{shared, LocalCluster};
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace, service_account_kubeconfig, wait_webhook_active},
    gen_certs,
    queueing::*,
    Server, BIN,
};

const QUOTA_CPU: i64 = 20;
const CQ: &str = "ha-cq";
/// The live namespace's own ClusterQueue (same quota): its stream must not
/// take the quota the standby's first main-namespace admission waits for.
const LIVE_CQ: &str = "ha-live-cq";
const LEASE_SECONDS: u64 = 8;
const LIVE_NS: &str = "e2e-ha-live";

/// A TCP round-robin over the replicas that answer `/readyz` 200, like a
/// Service's endpoints; optionally pinned to one replica.
struct Proxy {
    addr: SocketAddr,
    ready: Arc<Mutex<Vec<bool>>>,
    pin: Arc<Mutex<Option<usize>>>,
    conns: Arc<Mutex<Vec<(usize, TcpStream)>>>,
    /// The replica (webhook address) each connection went to.
    accepted: Arc<Mutex<Vec<SocketAddr>>>,
}

fn readyz(probe: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&probe, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let _ = s.set_write_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.starts_with("HTTP/1.1 200")
}

impl Proxy {
    fn start(backends: Arc<Mutex<Vec<(SocketAddr, SocketAddr)>>>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let ready = Arc::new(Mutex::new(Vec::new()));
        let pin = Arc::new(Mutex::new(None::<usize>));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(Mutex::new(Vec::new()));
        {
            let (ready, backends) = (ready.clone(), backends.clone());
            // A replica is out after three failed probes in a row, not
            // one: on a loaded machine a live replica's probe can time out
            // once (CI saw the pinned leader's, and a connection went to
            // the other replica before the freeze).
            thread::spawn(move || {
                let mut failed: Vec<u32> = Vec::new();
                loop {
                    let list = backends.lock().unwrap().clone();
                    failed.resize(list.len(), 3);
                    for (i, (_, probe)) in list.iter().enumerate() {
                        failed[i] = if readyz(*probe) { 0 } else { failed[i] + 1 };
                    }
                    *ready.lock().unwrap() = failed.iter().map(|f| *f < 3).collect();
                    thread::sleep(Duration::from_millis(200));
                }
            });
        }
        {
            let (ready, pin, conns, accepted) =
                (ready.clone(), pin.clone(), conns.clone(), accepted.clone());
            thread::spawn(move || {
                let mut next = 0usize;
                for client in listener.incoming() {
                    let Ok(client) = client else { continue };
                    let list = backends.lock().unwrap().clone();
                    let states = ready.lock().unwrap().clone();
                    let live: Vec<usize> = (0..list.len())
                        .filter(|i| states.get(*i).copied().unwrap_or(false))
                        .collect();
                    let pinned = *pin.lock().unwrap();
                    let pick = match pinned.filter(|p| live.contains(p)) {
                        Some(p) => p,
                        None if live.is_empty() => continue,
                        None => {
                            next += 1;
                            live[(next - 1) % live.len()]
                        }
                    };
                    let Ok(upstream) =
                        TcpStream::connect_timeout(&list[pick].0, Duration::from_secs(1))
                    else {
                        continue;
                    };
                    accepted.lock().unwrap().push(list[pick].0);
                    conns
                        .lock()
                        .unwrap()
                        .push((pick, upstream.try_clone().unwrap()));
                    let (mut c2, mut u2) =
                        (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                    let (mut c1, mut u1) = (client, upstream);
                    thread::spawn(move || {
                        let _ = std::io::copy(&mut c1, &mut u1);
                        let _ = u1.shutdown(Shutdown::Both);
                        let _ = c1.shutdown(Shutdown::Both);
                    });
                    thread::spawn(move || {
                        let _ = std::io::copy(&mut u2, &mut c2);
                        let _ = c2.shutdown(Shutdown::Both);
                        let _ = u2.shutdown(Shutdown::Both);
                    });
                }
            });
        }
        Proxy {
            addr,
            ready,
            pin,
            conns,
            accepted,
        }
    }

    /// Closes every proxied connection: the apiserver dials again.
    fn reset(&self) {
        for (_, c) in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    fn connections_per_backend(&self) -> HashMap<SocketAddr, usize> {
        self.connections_since(0)
    }

    fn accepted_count(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }

    /// Backends of the connections accepted after the first `from`.
    fn connections_since(&self, from: usize) -> HashMap<SocketAddr, usize> {
        let mut m = HashMap::new();
        for b in self.accepted.lock().unwrap().iter().skip(from) {
            *m.entry(*b).or_insert(0) += 1;
        }
        m
    }
}

/// A kubeconfig that authenticates as batchgate-system/batchgate.
/// One answer (or not) of Kueue's visibility API through the apiserver.
struct Sample {
    at: SystemTime,
    /// The replicas (visibility addresses) the proxy sent it to.
    to: Vec<SocketAddr>,
    /// Pending Workloads listed; `None` when the request failed.
    listed: Option<usize>,
    error: String,
}

/// Asks the apiserver for `cq`'s pending Workloads about twice a second
/// until stopped, the APIService pointed at `proxy` (a Service's stand-in
/// over every replica). Each request goes down a fresh connection (the
/// previous ones are closed first), so the proxy picks a ready replica
/// for it as kube-proxy would for a new connection.
struct Visibility {
    samples: Arc<Mutex<Vec<Sample>>>,
    stop: Arc<AtomicBool>,
    sampler: thread::JoinHandle<()>,
}

impl Visibility {
    fn sample(c: &'static LocalCluster, proxy: Arc<Proxy>, cq: &str) -> Visibility {
        let path =
            format!("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads");
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (samples, stop) = (samples.clone(), stop.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    proxy.reset();
                    let before = proxy.accepted_count();
                    let at = SystemTime::now();
                    let (ok, out, err) =
                        kubectl(c, &["get", "--raw", &path, "--request-timeout=5s"], None);
                    let listed = serde_json::from_str::<Value>(&out)
                        .ok()
                        .filter(|_| ok)
                        .and_then(|v| Some(v["items"].as_array()?.len()));
                    samples.lock().unwrap().push(Sample {
                        at,
                        // The last connection the apiserver opened is
                        // the one that answered (an earlier one may have
                        // gone to a replica that froze meanwhile).
                        to: proxy.accepted.lock().unwrap()[before..]
                            .last()
                            .copied()
                            .into_iter()
                            .collect(),
                        listed,
                        error: err.trim().chars().take(200).collect(),
                    });
                    thread::sleep(Duration::from_millis(400));
                }
            })
        };
        Visibility {
            samples,
            stop,
            sampler,
        }
    }

    /// Waits until `replica` (its visibility address) has listed pending
    /// Workloads in a request sent after `since`.
    fn wait_answered_by(&self, replica: &Server, since: SystemTime, name: &str) {
        let addr = replica.visibility.unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let samples = self.samples.lock().unwrap();
            if samples
                .iter()
                .any(|s| s.at >= since && s.to.contains(&addr) && s.listed.is_some_and(|n| n > 0))
            {
                return;
            }
            if Instant::now() > deadline {
                let last: Vec<_> = samples
                    .iter()
                    .rev()
                    .take(12)
                    .map(|s| format!("to {:?}: listed {:?} {}", s.to, s.listed, s.error))
                    .collect();
                panic!(
                    "{name} ({addr}) did not answer the visibility API through the apiserver in 60 s; \
                     {} requests, the last: {last:#?}",
                    samples.len()
                );
            }
            drop(samples);
            thread::sleep(Duration::from_millis(200));
        }
    }

    fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Release);
        self.sampler.join().unwrap();
        std::mem::take(&mut *self.samples.lock().unwrap())
    }
}

/// Waits (a minute: the machine may be loaded) for a Job in `ns` to pass
/// the webhooks in a server-side dry run, printing each new refusal so a
/// timeout says why.
fn reviewed(c: &LocalCluster, ns: &str, what: &str) {
    let mut last = String::new();
    wait_for(Duration::from_secs(60), what, || {
        let (ok, out, err) = kubectl(
            c,
            &["create", "--dry-run=server", "-f", "-"],
            Some(&job("probe", ns, "lq", "1", "1s", json!({}))),
        );
        let said = format!("{out}{err}");
        if !ok && said != last {
            eprintln!("waiting for {what}: {said}");
            last = said;
        }
        ok.then_some(())
    });
}

/// A replica: HOSTNAME names it (its Lease identity and its events'
/// reportingInstance).
fn replica(name: &str, kubeconfig: &Path, certs: &Path, cfg: &Path) -> Server {
    // Inherited by the child spawned next; nothing else here reads it.
    std::env::set_var("HOSTNAME", name);
    let (k, d, f) = (
        kubeconfig.to_path_buf(),
        certs.to_path_buf(),
        cfg.to_path_buf(),
    );
    let s = Server::start_forever(move || {
        Server::start_in_cluster(&k, Some(d), &["--config", f.to_str().unwrap()])
    });
    s.wait_ready(Duration::from_secs(60));
    s
}

fn holder(c: &LocalCluster) -> String {
    get(
        c,
        &["lease", "batchgate-reconciler", "-n", "batchgate-system"],
    )
    .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from))
    .unwrap_or_default()
}

fn micros(ts: &str) -> Option<i64> {
    let t: k8s_openapi::jiff::Timestamp = ts.parse().ok()?;
    Some(t.as_microsecond())
}

fn unix_micros(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

/// The events of `ns`, retried for up to 30 s: a list that cannot be read
/// fails the test, never reads as "no events" (which every check of them
/// would pass).
fn events(c: &LocalCluster, ns: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(list) = get(c, &["events.events.k8s.io", "-n", ns]) {
            if list["items"].is_array() {
                return list;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the events of {ns} could not be read for 30 s"
        );
        thread::sleep(Duration::from_millis(500));
    }
}

/// QuotaReserved events in `ns`: (eventTime µs, reportingInstance).
fn reservations(c: &LocalCluster, ns: &str) -> Vec<(i64, String)> {
    let list = events(c, ns);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["reason"] == "QuotaReserved")
        .filter_map(|e| {
            Some((
                micros(e["eventTime"].as_str()?)?,
                e["reportingInstance"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Every holder of the Lease seen, in order, with its `acquireTime` (µs),
/// read every 200 ms until `stop` (a tenure is seconds long: none is
/// missed). A released Lease shows as the holder "".
fn watch_holders(
    c: &'static LocalCluster,
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<Vec<(String, i64)>> {
    thread::spawn(move || {
        let mut seen: Vec<(String, i64)> = Vec::new();
        while !stop.load(Ordering::Acquire) {
            if let Some(l) = get(
                c,
                &["lease", "batchgate-reconciler", "-n", "batchgate-system"],
            ) {
                let who = l["spec"]["holderIdentity"].as_str().unwrap_or("");
                let at = l["spec"]["acquireTime"].as_str().and_then(micros);
                if let Some(at) = at {
                    if seen.last().map(|(w, t)| (w.as_str(), *t)) != Some((who, at)) {
                        seen.push((who.to_string(), at));
                    }
                }
            }
            thread::sleep(Duration::from_millis(200));
        }
        seen
    })
}

/// The admissions (QuotaReserved events: one per admission written, by the
/// replica that wrote it, see `src/controllers/events.rs`) not made by the
/// Lease holder of their time: a holder's tenure runs from its
/// acquireTime to the next holder's. Split-brain writes, if any.
fn writes_outside_tenure(holders: &[(String, i64)], admissions: &[(i64, String)]) -> Vec<String> {
    admissions
        .iter()
        .filter_map(|(t, who)| {
            let holder = holders
                .iter()
                .rev()
                .find(|(_, from)| from <= t)
                .map(|(h, _)| h.as_str())
                .unwrap_or("(before the first holder seen)");
            (!holder.starts_with(&format!("{who}_")))
                .then(|| format!("{who} admitted at {t} µs while {holder} held the Lease"))
        })
        .collect()
}

/// QuotaReserved events per Workload in `ns` (a series counts its count).
fn reservations_per_workload(c: &LocalCluster, ns: &str) -> HashMap<String, i64> {
    let mut m = HashMap::new();
    let list = events(c, ns);
    for e in list["items"].as_array().into_iter().flatten() {
        if e["reason"] != "QuotaReserved" {
            continue;
        }
        let n = e["series"]["count"].as_i64().unwrap_or(1);
        let name = e["regarding"]["name"].as_str().unwrap_or("").to_string();
        *m.entry(name).or_insert(0) += n;
    }
    m
}

/// First admission by `who` after `since`, waited for (`logs` printed if
/// it never comes).
fn first_admission_by(
    c: &LocalCluster,
    ns: &str,
    who: &Server,
    name: &str,
    since: SystemTime,
    within: Duration,
) -> f64 {
    let since = unix_micros(since);
    let deadline = Instant::now() + within;
    loop {
        let first = reservations(c, ns)
            .into_iter()
            .filter(|(t, r)| r == name && *t > since)
            .map(|(t, _)| t)
            .min();
        if let Some(at) = first {
            return (at - since) as f64 / 1e6;
        }
        if Instant::now() > deadline {
            let log = who.stderr.lock().unwrap().clone();
            for l in support::last_lines(&log, 60) {
                eprintln!("{name}: {l}");
            }
            panic!("no admission by {name} within {within:?}");
        }
        thread::sleep(Duration::from_millis(100));
    }
}

fn cpu_millis(q: &str) -> i64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(0),
        None => q.parse::<f64>().map(|v| (v * 1000.0) as i64).unwrap_or(0),
    }
}

/// cpu (milli) held in `ns` by Workloads whose quota is reserved and not
/// released.
fn reserved_cpu(list: &Value, ns: &str) -> i64 {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| w["metadata"]["namespace"] == ns)
        .filter(|w| is_true(w, "QuotaReserved") && !is_true(w, "Finished"))
        .flat_map(|w| w["spec"]["podSets"].as_array().cloned().unwrap_or_default())
        .map(|ps| {
            let count = ps["count"].as_i64().unwrap_or(1);
            let per: i64 = ps["template"]["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| cpu_millis(c["resources"]["requests"]["cpu"].as_str().unwrap_or("0")))
                .sum();
            count * per
        })
        .sum()
}

#[derive(Default)]
struct Creates {
    made: Vec<String>,
    refused: Vec<(String, String)>,
}

/// Creates a queued Job (2 cpu, 3 s) in `ns`, `pause` after each, until
/// `stop`, one at a time, recording which were created and which refused.
fn stream_jobs(
    c: &'static LocalCluster,
    ns: String,
    prefix: &'static str,
    pause: Duration,
    stop: Arc<AtomicBool>,
    creates: Arc<Mutex<Creates>>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut i = 0;
        while !stop.load(Ordering::Acquire) && i < 400 {
            let name = format!("{prefix}-{i:03}");
            let (ok, _, err) = kubectl(
                c,
                &["create", "-f", "-"],
                Some(&job(&name, &ns, "lq", "2", "3s", json!({}))),
            );
            let mut cr = creates.lock().unwrap();
            if ok {
                cr.made.push(name);
            } else {
                cr.refused.push((name, err));
            }
            drop(cr);
            i += 1;
            thread::sleep(pause);
        }
    })
}

/// The webhook configurations for `url`, as `batchgate webhooks` prints
/// them with the ServiceAccount exemption `E2E_HA_SA` (default: batchgate's;
/// empty: none).
fn webhook_configurations(url: &str, ca: &Path) -> Vec<Value> {
    let sa = std::env::var("E2E_HA_SA").unwrap_or_else(|_| "batchgate".into());
    let out = std::process::Command::new(BIN)
        .args(["webhooks", "--url", url, "--failure-policy", "Fail"])
        .arg("--service-account")
        .arg(&sa)
        .arg("--ca-file")
        .arg(ca)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect();
    assert!(!docs.is_empty());
    docs
}

/// The main configurations leave `LIVE_NS` out; the live ones (renamed,
/// with their own URL) cover only it.
fn split_for_live_namespace(main: &mut [Value], live: &mut [Value]) {
    for doc in main.iter_mut() {
        for w in doc["webhooks"].as_array_mut().into_iter().flatten() {
            if let Some(values) = w
                .pointer_mut("/namespaceSelector/matchExpressions/0/values")
                .and_then(Value::as_array_mut)
            {
                values.push(json!(LIVE_NS));
            }
        }
    }
    for doc in live.iter_mut() {
        let name = format!("{}-live", doc["metadata"]["name"].as_str().unwrap());
        doc["metadata"]["name"] = json!(name);
        let hooks: Vec<Value> = doc["webhooks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|w| w.get("namespaceSelector").is_some())
            .cloned()
            .map(|mut w| {
                w["namespaceSelector"] = json!({"matchExpressions": [{
                    "key": "kubernetes.io/metadata.name", "operator": "In", "values": [LIVE_NS],
                }]});
                w
            })
            .collect();
        doc["webhooks"] = json!(hooks);
    }
}

#[test]
fn leader_handover_on_sigterm_sigstop_and_sigkill_loses_nothing_and_never_overcommits() {
    let t0 = Instant::now();
    let c = shared();
    install_crds(c);
    let ns = namespace(c, "e2e-ha");
    apply(c, &flavor("ha-flavor", json!({})));
    apply(
        c,
        &cluster_queue(
            CQ,
            &[("ha-flavor", &QUOTA_CPU.to_string(), None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", CQ));
    let live_ns = namespace(c, LIVE_NS);
    apply(
        c,
        &cluster_queue(
            LIVE_CQ,
            &[("ha-flavor", &QUOTA_CPU.to_string(), None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(&live_ns, "lq", LIVE_CQ));

    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    gen_certs(&certs);
    let cfg = dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "namespace: batchgate-system\nreconciler:\n  leaseDurationSeconds: {LEASE_SECONDS}\n\
             webhook:\n  shutdownDelaySeconds: 2\n  drainTimeoutSeconds: 5\n"
        ),
    )
    .unwrap();
    let kubeconfig = service_account_kubeconfig(c, dir.path(), "batchgate-e2e-ha");

    let mut a = replica("replica-a", &kubeconfig, &certs, &cfg);
    wait_for(Duration::from_secs(60), "replica-a to lead", || {
        holder(c).starts_with("replica-a_").then_some(())
    });
    let watch_stop = Arc::new(AtomicBool::new(false));
    let holders_watch = watch_holders(c, watch_stop.clone());
    let b = replica("replica-b", &kubeconfig, &certs, &cfg);
    let backends = Arc::new(Mutex::new(vec![(a.addr, a.probe), (b.addr, b.probe)]));
    // Two URLs, two apiserver connections: the main one (pinned to the
    // leader before the freeze) and the live namespace's, held by the other
    // replica (backend 0).
    let proxy = Proxy::start(backends.clone());
    let proxy_live = Proxy::start(backends.clone());
    // Kueue's visibility API through the apiserver, as at a Service over
    // the replicas' visibility listeners.
    let vis_backends = Arc::new(Mutex::new(vec![
        (a.visibility.unwrap(), a.probe),
        (b.visibility.unwrap(), b.probe),
    ]));
    let proxy_vis = Arc::new(Proxy::start(vis_backends.clone()));
    if let Err(e) = batchgate::cli::dev::register_visibility(c, proxy_vis.addr.port()) {
        panic!("the visibility API did not become available: {e:#}");
    }
    *proxy_live.pin.lock().unwrap() = Some(0);
    let ca = certs.join("ca.crt");
    let mut main_hooks = webhook_configurations(&format!("https://{}", proxy.addr), &ca);
    let mut live_hooks = webhook_configurations(&format!("https://{}", proxy_live.addr), &ca);
    split_for_live_namespace(&mut main_hooks, &mut live_hooks);
    for doc in main_hooks.iter().chain(&live_hooks) {
        c.apply(&doc.to_string()).unwrap();
    }
    wait_webhook_active(c, &ns);
    wait_webhook_active(c, &live_ns);
    let setup = t0.elapsed();

    // The stream of queued Jobs (2 cpu, 3 s each: at most 10 run at once).
    let stop = Arc::new(AtomicBool::new(false));
    let creates = Arc::new(Mutex::new(Creates::default()));
    let creator = stream_jobs(
        c,
        ns.clone(),
        "ha",
        Duration::from_millis(150),
        stop.clone(),
        creates.clone(),
    );
    let samples = Arc::new(AtomicUsize::new(0));
    let sample_errors = Arc::new(AtomicUsize::new(0));
    let over = Arc::new(Mutex::new(Vec::<i64>::new()));
    let sampler = {
        let (stop, samples, errors, over, ns) = (
            stop.clone(),
            samples.clone(),
            sample_errors.clone(),
            over.clone(),
            ns.clone(),
        );
        thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                // One ClusterQueue per namespace, each of QUOTA_CPU.
                match get(c, &["workloads.kueue.x-k8s.io", "-A"]) {
                    Some(list) => {
                        samples.fetch_add(1, Ordering::Relaxed);
                        for n in [ns.as_str(), LIVE_NS] {
                            let used = reserved_cpu(&list, n);
                            if used > QUOTA_CPU * 1000 {
                                over.lock().unwrap().push(used);
                            }
                        }
                    }
                    None => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                thread::sleep(Duration::from_millis(100));
            }
        })
    };

    // Both replicas serve webhook traffic before anything is stopped.
    wait_for(Duration::from_secs(60), "admissions by replica-a", || {
        (reservations(c, &ns)
            .iter()
            .filter(|(_, r)| r == "replica-a")
            .count()
            >= 5)
            .then_some(())
    });

    // From here to the end of (c), Kueue's visibility API is asked through
    // the apiserver twice a second, each time of whichever replica is ready.
    // A Job larger than the whole quota stays pending the whole run (it
    // does not hold back the others: the queue is BestEffortFIFO), so
    // every answer has something to list; a replica whose engine is cold
    // lists nothing.
    create(c, &job("too-big", &ns, "lq", "30", "1s", json!({})));
    let before_a = SystemTime::now();
    let vis = Visibility::sample(c, proxy_vis.clone(), CQ);
    // Leader and standby both answer before anything is stopped.
    vis.wait_answered_by(&a, before_a, "replica-a (leader)");
    vis.wait_answered_by(&b, before_a, "replica-b (standby)");

    // (a) SIGTERM of the leader.
    let refused_before_a = creates.lock().unwrap().refused.len();
    let sigterm = SystemTime::now();
    a.signal(libc::SIGTERM);
    let exit = a
        .wait_exit(Duration::from_secs(30))
        .expect("replica-a exits after SIGTERM");
    let exited = sigterm.elapsed().unwrap().as_secs_f64();
    let handover_term =
        first_admission_by(c, &ns, &b, "replica-b", sigterm, Duration::from_secs(30));
    assert!(exit.success(), "replica-a exit: {exit:?}");
    assert!(holder(c).starts_with("replica-b_"));
    let refused_a = creates.lock().unwrap().refused.len() - refused_before_a;
    let after_exit = handover_term - exited;
    eprintln!("(a) SIGTERM: replica-a exited {exited:.2} s after the signal; standby's first admission {handover_term:.2} s after the signal, {after_exit:.2} s after the exit; creates refused meanwhile: {refused_a}");
    // The released Lease is taken at once (the standby watches it) and its
    // warm engine admits: without the release it would wait out the lease
    // (8 s), without the warm engine it would first rebuild its queues.
    // The target is 2 s (printed above); the bound leaves room for load.
    assert!(
        after_exit <= 5.0,
        "the standby admitted {after_exit:.2} s after replica-a exited"
    );
    assert!(
        a.stderr
            .lock()
            .unwrap()
            .contains("reconciler lease released"),
        "replica-a did not release the Lease"
    );

    // A fresh standby replaces replica-a, as a rolling update would.
    let c_rep = replica("replica-c", &kubeconfig, &certs, &cfg);
    backends.lock().unwrap()[0] = (c_rep.addr, c_rep.probe);
    vis_backends.lock().unwrap()[0] = (c_rep.visibility.unwrap(), c_rep.probe);
    // The new standby answers once its engine has listed the cluster.
    vis.wait_answered_by(&c_rep, SystemTime::now(), "replica-c (standby)");
    let after_a = SystemTime::now();

    // (b) The apiserver's webhook connections all go to the leader, which is
    // then frozen.
    *proxy.pin.lock().unwrap() = Some(1);
    thread::sleep(Duration::from_millis(500));
    let before_pin = proxy.accepted_count();
    proxy.reset();
    proxy_live.reset();
    reviewed(c, &ns, "a webhook call through the pinned leader");
    // A backlog (30 Jobs, 60 cpu on a 20-cpu queue) for the standby to admit.
    for i in 0..30 {
        create(
            c,
            &job(&format!("backlog-{i:02}"), &ns, "lq", "2", "3s", json!({})),
        );
        creates.lock().unwrap().made.push(format!("backlog-{i:02}"));
    }
    // Reviews of the live namespace reach the live replica.
    reviewed(c, &live_ns, "a webhook call through the live replica");
    // The main connection is the frozen replica's: every connection since
    // the pin went to it.
    let pinned = proxy.connections_since(before_pin);
    assert!(
        !pinned.is_empty() && pinned.keys().all(|a| *a == b.addr),
        "main connections after the pin: {pinned:?}"
    );
    // A slower stream in the live namespace, for the freeze only (it adds
    // Jobs to run to completion, hence to the test's time).
    let live_stop = Arc::new(AtomicBool::new(false));
    let live_creates = Arc::new(Mutex::new(Creates::default()));
    let live_creator = stream_jobs(
        c,
        live_ns.clone(),
        "live",
        Duration::from_millis(600),
        live_stop.clone(),
        live_creates.clone(),
    );
    let refused_before_b = creates.lock().unwrap().refused.len();
    let made_before_b = creates.lock().unwrap().made.len();
    let accepted_at_stop = proxy.accepted_count();
    let sigstop = SystemTime::now();
    b.signal(libc::SIGSTOP);
    // SIGCONT after 30 s whatever happens meanwhile.
    let b_pid = b.pid();
    let accepted = proxy.accepted.clone();
    // The Lease as the standby sees it, every second of the freeze (printed
    // if the handover is late).
    let lease_seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let lease_watch = {
        let seen = lease_seen.clone();
        thread::spawn(move || {
            for _ in 0..30 {
                let l = get(
                    c,
                    &["lease", "batchgate-reconciler", "-n", "batchgate-system"],
                )
                .map(|l| l["spec"].to_string())
                .unwrap_or_default();
                seen.lock()
                    .unwrap()
                    .push(format!("{:?} {l}", SystemTime::now()));
                thread::sleep(Duration::from_secs(1));
            }
        })
    };
    let resume = thread::spawn(move || {
        thread::sleep(Duration::from_secs(30));
        // Main-URL connections the apiserver opened during the freeze.
        let opened = accepted.lock().unwrap()[accepted_at_stop..].to_vec();
        // SAFETY: kill(2) on our own (stopped) child.
        unsafe { libc::kill(b_pid, libc::SIGCONT) };
        (SystemTime::now(), opened)
    });
    let handover_stop = first_admission_by(
        c,
        &ns,
        &c_rep,
        "replica-c",
        sigstop,
        Duration::from_secs(LEASE_SECONDS + 40),
    );
    eprintln!("(b) SIGSTOP: standby's first admission {handover_stop:.2} s after the signal");
    let (sigcont, opened) = resume.join().unwrap();
    live_stop.store(true, Ordering::Release);
    live_creator.join().unwrap();
    let (live_made_b, live_refused_b) = {
        let cr = live_creates.lock().unwrap();
        (cr.made.len(), cr.refused.clone())
    };
    let who = |addr: &SocketAddr| match *addr {
        x if x == b.addr => "replica-b (frozen)",
        x if x == c_rep.addr => "replica-c",
        _ => "replica-a",
    };
    let mut new_main_conns: HashMap<&str, usize> = HashMap::new();
    for a in &opened {
        *new_main_conns.entry(who(a)).or_insert(0) += 1;
    }
    // The standby's writes that failed (a webhook call that timed out).
    let c_log = c_rep.stderr.lock().unwrap().clone();
    let failed: Vec<&str> = c_log
        .lines()
        .filter(|l| l.contains("not written") || l.contains("failed calling webhook"))
        .collect();
    eprintln!(
        "(b) during the 30 s freeze: live namespace {live_made_b} creates succeeded, {} refused; \
         main-URL connections opened by the apiserver meanwhile: {new_main_conns:?}; \
         the standby's failed writes in its log: {} (first: {:?})",
        live_refused_b.len(),
        failed.len(),
        failed
            .first()
            .map(|l| l.chars().take(400).collect::<String>())
    );
    let mut b = b;
    let exit = b
        .wait_exit(Duration::from_secs(30))
        .expect("the resumed old leader exits");
    assert!(!exit.success(), "replica-b exit: {exit:?}");
    let (refused_b, made_b) = {
        let cr = creates.lock().unwrap();
        (
            cr.refused[refused_before_b..].to_vec(),
            cr.made.len() - made_before_b,
        )
    };
    eprintln!(
        "(b) during the freeze and until replica-b exited: {made_b} creates succeeded, {} refused",
        refused_b.len()
    );
    for (name, err) in &refused_b {
        assert!(
            err.contains("deadline") || err.contains("timeout") || err.contains("Timeout"),
            "{name} refused for another reason than a webhook call to the frozen replica: {err}"
        );
    }
    let _ = lease_watch.join();
    if handover_stop > (LEASE_SECONDS + 2) as f64 {
        eprintln!("SIGSTOP at {sigstop:?}");
        for l in lease_seen.lock().unwrap().iter() {
            eprintln!("lease: {l}");
        }
        for l in support::last_lines(&b.stderr.lock().unwrap(), 40) {
            eprintln!("replica-b: {l}");
        }
        // What the standby did from taking the Lease (BATCHGATE_E2E_RUST_LOG
        // with `kube_client=debug` adds every request).
        let from = c_log.find("reconciler lease acquired").unwrap_or(0);
        for l in c_log[from..].lines().take(400) {
            eprintln!("replica-c: {l}");
        }
    }
    // The target is lease + 2 s (met in 10 of 10 runs at load 8–13,
    // docs/high-availability.md); once, beside two other e2e binaries, the
    // new leader's first admission came 5.4 s after it took the Lease, so
    // the bound asserted leaves room for a loaded CI machine. The Lease
    // itself is checked tighter below.
    if handover_stop > (LEASE_SECONDS + 2) as f64 {
        eprintln!("(b) SIGSTOP: first admission after lease + 2 s");
    }
    assert!(
        handover_stop <= (LEASE_SECONDS + 7) as f64,
        "the standby admitted {handover_stop:.1} s after SIGSTOP (lease {LEASE_SECONDS} s)"
    );
    // Creates whose reviews reach a live replica succeed.
    assert!(
        live_refused_b.is_empty(),
        "live namespace creates refused during the freeze: {live_refused_b:?}"
    );
    assert!(
        live_made_b >= 5,
        "{live_made_b} live namespace creates in 30 s"
    );

    // (c) SIGKILL of the leader mid-stream: a fresh standby (replica-d)
    // takes the Lease once it expires (the killed leader releases
    // nothing) and admits; the webhook traffic spreads over the live
    // replicas again.
    let d_rep = replica("replica-d", &kubeconfig, &certs, &cfg);
    backends.lock().unwrap()[1] = (d_rep.addr, d_rep.probe);
    vis_backends.lock().unwrap()[1] = (d_rep.visibility.unwrap(), d_rep.probe);
    *proxy.pin.lock().unwrap() = None;
    proxy.reset();
    assert!(holder(c).starts_with("replica-c_"), "{}", holder(c));
    wait_for(
        Duration::from_secs(60),
        "admissions by replica-c after SIGCONT",
        || {
            (reservations(c, &ns)
                .iter()
                .filter(|(t, r)| r == "replica-c" && *t > unix_micros(sigcont))
                .count()
                >= 3)
                .then_some(())
        },
    );
    let refused_before_kill = creates.lock().unwrap().refused.len();
    let sigkill = SystemTime::now();
    let mut c_rep = c_rep;
    c_rep.signal(libc::SIGKILL);
    c_rep
        .wait_exit(Duration::from_secs(30))
        .expect("replica-c dies on SIGKILL");
    let handover_kill = first_admission_by(
        c,
        &ns,
        &d_rep,
        "replica-d",
        sigkill,
        Duration::from_secs(LEASE_SECONDS + 40),
    );
    let refused_kill = creates.lock().unwrap().refused.len() - refused_before_kill;
    eprintln!("(c) SIGKILL: standby's first admission {handover_kill:.2} s after the signal; creates refused meanwhile: {refused_kill}");
    // It waited out the lease (nothing was released), and no more: the
    // Lease's own move is checked to the second below; the first admission
    // after it came up to 5.3 s later beside two other e2e binaries and two
    // busy loops, so the bound here leaves room for that.
    assert!(
        handover_kill <= (LEASE_SECONDS + 10) as f64,
        "the standby admitted {handover_kill:.1} s after SIGKILL (lease {LEASE_SECONDS} s)"
    );

    // The visibility API answered in every phase, from whichever replica
    // was ready: leaders, standbys, the one whose leader was frozen or
    // killed.
    thread::sleep(Duration::from_secs(2));
    let vis = vis.finish();
    let name_of = |addr: &SocketAddr| {
        [
            ("replica-a", &a),
            ("replica-b", &b),
            ("replica-c", &c_rep),
            ("replica-d", &d_rep),
        ]
        .into_iter()
        .find(|(_, r)| r.visibility.as_ref() == Some(addr))
        .map_or("?", |(n, _)| n)
    };
    let at = |t: SystemTime, secs: f64| t + Duration::from_secs_f64(secs);
    let phases = [
        ("both replicas up", before_a, sigterm),
        (
            "(a) SIGTERM to the old leader's exit",
            sigterm,
            at(sigterm, exited),
        ),
        ("a fresh standby joins", at(sigterm, exited), after_a),
        ("(b) the freeze", sigstop, sigcont),
        (
            "(c) SIGKILL to the first admission after",
            sigkill,
            at(sigkill, handover_kill),
        ),
    ];
    let mut answered_by = std::collections::BTreeSet::new();
    for (phase, from, to) in phases {
        let inside: Vec<&Sample> = vis.iter().filter(|s| s.at >= from && s.at < to).collect();
        let ok: Vec<&Sample> = inside
            .iter()
            .copied()
            .filter(|s| s.listed.is_some_and(|n| n > 0))
            .collect();
        let by: std::collections::BTreeSet<&str> =
            ok.iter().flat_map(|s| s.to.iter().map(&name_of)).collect();
        eprintln!(
            "visibility, {phase}: {} of {} requests listed pending Workloads, answered by {by:?}; failures: {:?}",
            ok.len(),
            inside.len(),
            inside.iter().filter(|s| s.listed.is_none()).map(|s| (s.to.iter().map(&name_of).collect::<Vec<_>>(), s.error.as_str())).collect::<Vec<_>>()
        );
        assert!(
            !ok.is_empty(),
            "the visibility API listed nothing during {phase}"
        );
        answered_by.extend(by);
    }
    // Every replica answered at some point: replica-b and replica-d as
    // standby and as leader, replica-a as leader, replica-c as standby.
    assert_eq!(
        answered_by.into_iter().collect::<Vec<_>>(),
        ["replica-a", "replica-b", "replica-c", "replica-d"],
        "replicas whose visibility API answered"
    );
    // That replica-d took the Lease first is checked below: its admissions
    // must fall within its tenure.

    // The too-big Job goes (the rest must all finish), and its Workload
    // with it.
    let (ok, _, err) = kubectl(c, &["delete", "job", "too-big", "-n", &ns, "--wait"], None);
    assert!(ok, "deleting the too-big Job: {err}");
    wait_for(
        Duration::from_secs(60),
        "the too-big Job's Workload to go",
        || {
            let list = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])?;
            (!list["items"]
                .as_array()?
                .iter()
                .any(|w| w["metadata"]["ownerReferences"][0]["name"] == "too-big"))
            .then_some(())
        },
    );

    // The stream ends; every Job runs to completion.
    stop.store(true, Ordering::Release);
    creator.join().unwrap();
    let made = creates.lock().unwrap().made.clone();
    let live_made = live_creates.lock().unwrap().made.clone();
    let refused_total = creates.lock().unwrap().refused.len();
    wait_for(Duration::from_secs(180), "every Job to succeed", || {
        let done = jobs(c, &ns).into_iter().filter(|(_, _, s)| *s).count();
        let live_done = jobs(c, &live_ns).into_iter().filter(|(_, _, s)| *s).count();
        (done >= made.len() && live_done >= live_made.len()).then_some(())
    });
    sampler.join().unwrap();

    // Every admission was written by the Lease holder of its time, and
    // no Workload was admitted twice.
    watch_stop.store(true, Ordering::Release);
    let holders = holders_watch.join().unwrap();
    let mut admissions = reservations(c, &ns);
    admissions.extend(reservations(c, &live_ns));
    admissions.sort();
    let split_brain = writes_outside_tenure(&holders, &admissions);
    eprintln!(
        "Lease holders seen: {:?}; admissions checked against them: {}",
        holders.iter().map(|(h, _)| h.as_str()).collect::<Vec<_>>(),
        admissions.len()
    );
    assert!(
        split_brain.is_empty(),
        "admissions by a replica not holding the Lease: {split_brain:?}"
    );
    // How much of each handover was the Lease (its expiry) and how much
    // the first admission after it.
    let taken = |who: &str, signal: SystemTime| {
        holders
            .iter()
            .find(|(h, _)| h.starts_with(who))
            .map(|(_, t)| (t - unix_micros(signal)) as f64 / 1e6)
    };
    let (stop_taken, kill_taken) = (taken("replica-c_", sigstop), taken("replica-d_", sigkill));
    eprintln!(
        "Lease taken after the signal: SIGSTOP {stop_taken:?} s (first admission {handover_stop:.2} s), SIGKILL {kill_taken:?} s (first admission {handover_kill:.2} s)",
    );
    // The standby looks again just past the expiry: the Lease moves within
    // a second of it (the last renewal came at most a lease before the
    // signal).
    for (signal, t) in [("SIGSTOP", stop_taken), ("SIGKILL", kill_taken)] {
        let t = t.unwrap_or_else(|| panic!("no new Lease holder seen after {signal}"));
        assert!(
            t <= (LEASE_SECONDS + 1) as f64,
            "the Lease was taken {t:.2} s after {signal} (lease {LEASE_SECONDS} s)"
        );
    }
    for n in [ns.as_str(), live_ns.as_str()] {
        let per = reservations_per_workload(c, n);
        let twice: Vec<_> = per.iter().filter(|(_, k)| **k > 1).collect();
        assert!(twice.is_empty(), "Workloads admitted twice: {twice:?}");
        // Every Workload ran, so each was admitted: the events checked
        // above must cover them, or the checks read too little. Events are
        // best effort: a leader that steps down, freezes or dies never
        // sends what its recorder still queued (after SIGTERM its fence
        // refuses them), and under load that queue is seconds deep. So an
        // admission in the 10 s before a fault may go unseen; of the rest
        // at most one in twenty, and four in five are seen in all.
        let workloads = get(c, &["workloads.kueue.x-k8s.io", "-n", n]).unwrap();
        let items = workloads["items"].as_array().unwrap();
        let faults = [
            unix_micros(sigterm),
            unix_micros(sigstop),
            unix_micros(sigkill),
        ];
        let mut unseen = Vec::new();
        let mut lost_to_a_fault = 0;
        for w in items {
            let name = w["metadata"]["name"].as_str().unwrap_or_default();
            if per.contains_key(name) {
                continue;
            }
            let reserved = condition(w, "QuotaReserved")
                .and_then(|q| micros(q["lastTransitionTime"].as_str()?));
            // Seconds from the nearest fault (negative: before it).
            let near = reserved.and_then(|t| {
                faults
                    .iter()
                    .map(|f| (t - f) as f64 / 1e6)
                    .min_by(|a, b| a.abs().total_cmp(&b.abs()))
            });
            if near.is_some_and(|d| (-10.0..=2.0).contains(&d)) {
                lost_to_a_fault += 1;
            }
            unseen.push((name.to_string(), near));
        }
        assert!(
            !items.is_empty()
                && (unseen.len() - lost_to_a_fault) * 20 <= items.len()
                && unseen.len() * 5 <= items.len(),
            "{} of {} Workloads in {n} have no QuotaReserved event to check ({lost_to_a_fault} admitted in the 10 s before a fault); each with its seconds from the nearest fault: {unseen:?}",
            unseen.len(),
            items.len()
        );
        eprintln!(
            "{n}: {} Workloads, {} without a QuotaReserved event ({lost_to_a_fault} of them admitted just before SIGSTOP/SIGKILL)",
            items.len(),
            unseen.len()
        );
    }

    // No write by replica-b after it was frozen (its fence refuses them).
    let late: Vec<_> = reservations(c, &ns)
        .into_iter()
        .filter(|(t, r)| r == "replica-b" && *t > unix_micros(sigstop))
        .collect();
    assert!(late.is_empty(), "replica-b wrote after SIGSTOP: {late:?}");

    // One Workload per Job, all Finished (Job names are unique across
    // the two namespaces by their prefixes).
    let list = get(c, &["workloads.kueue.x-k8s.io", "-A"]).unwrap();
    let mut per_job: HashMap<String, usize> = HashMap::new();
    for w in list["items"].as_array().unwrap() {
        assert!(is_true(w, "Finished"), "{}", w["metadata"]["name"]);
        let owner = w["metadata"]["ownerReferences"][0]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        *per_job.entry(owner).or_insert(0) += 1;
    }
    for name in made.iter().chain(&live_made) {
        assert_eq!(per_job.get(name), Some(&1), "Workloads of {name}");
    }
    assert_eq!(per_job.len(), made.len() + live_made.len());
    let over = over.lock().unwrap().clone();
    let (n, errs) = (
        samples.load(Ordering::Relaxed),
        sample_errors.load(Ordering::Relaxed),
    );
    assert!(over.is_empty(), "over quota: {over:?}");
    // Enough samples to have watched the whole run (one per ~2 s at least).
    assert!(n >= 30 && errs * 20 <= n, "{n} samples, {errs} failed");
    // Both replicas of phase (a) served webhook traffic (the apiserver keeps
    // one HTTP/2 connection: the leader's until it drained, then the standby's).
    let conns = proxy.connections_per_backend();
    assert!(
        conns.contains_key(&a.addr) && conns.contains_key(&b.addr),
        "{conns:?}"
    );
    let _ = &proxy.ready;
    eprintln!(
        "HA figures: jobs {} + {} live (lost 0, one Workload each), creates refused {refused_total} (SIGTERM phase {refused_a}, SIGSTOP phase {}), \
         live namespace (during the freeze): {live_made_b} succeeded and {} refused; \
         over-quota samples 0 of {n} ({errs} sampling errors), handover SIGTERM {handover_term:.2} s, SIGSTOP {handover_stop:.2} s, \
         SIGKILL {handover_kill:.2} s (creates refused {refused_kill}), split-brain writes {} of {} admissions, \
         proxied connections per replica {conns:?}; setup {setup:?}, total {:?}",
        made.len(),
        live_made.len(),
        refused_b.len(),
        live_refused_b.len(),
        split_brain.len(),
        admissions.len(),
        t0.elapsed()
    );
    drop(d_rep);
}
