//! High availability end to end: two `batchgate serve` replicas with
//! distinct identities, running as batchgate's own ServiceAccount, behind one
//! webhook URL (a readiness-aware TCP round-robin written here stands in
//! for the Service), a ClusterQueue of 20 cpu and a stream of queued Jobs.
//!
//! (a) SIGTERM of the leader: it releases the Lease, the standby admits.
//! (b) SIGSTOP for 30 s of the replica that holds the apiserver's webhook
//!     connections and the Lease: the standby takes over and admits (its
//!     Workload and Job writes skip the validating webhooks), and after
//!     SIGCONT the old leader exits without writing.
//!
//! Throughout: every Job gets exactly one Workload and finishes, and a
//! sampler checks the cpu of quota-reserved Workloads never exceeds 20.
//! Figures are printed for README ("High availability").

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
    e2e::{kubectl, namespace, wait_webhook_active},
    gen_certs,
    queueing::*,
    Server, BIN,
};

const QUOTA_CPU: i64 = 20;
const CQ: &str = "ha-cq";
const LEASE_SECONDS: u64 = 8;

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
            thread::spawn(move || loop {
                let list = backends.lock().unwrap().clone();
                let states: Vec<bool> = list.iter().map(|(_, p)| readyz(*p)).collect();
                *ready.lock().unwrap() = states;
                thread::sleep(Duration::from_millis(200));
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
        let mut m = HashMap::new();
        for b in self.accepted.lock().unwrap().iter() {
            *m.entry(*b).or_insert(0) += 1;
        }
        m
    }
}

/// A kubeconfig that authenticates as batchgate-system/batchgate.
fn service_account_kubeconfig(c: &LocalCluster, dir: &Path) -> std::path::PathBuf {
    let _ = c.run_kubectl(&["create", "namespace", "batchgate-system"]);
    let _ = c.run_kubectl(&[
        "create",
        "serviceaccount",
        "batchgate",
        "-n",
        "batchgate-system",
    ]);
    let _ = c.run_kubectl(&[
        "create",
        "clusterrolebinding",
        "batchgate-e2e-ha",
        "--clusterrole=cluster-admin",
        "--serviceaccount=batchgate-system:batchgate",
    ]);
    let token = c
        .run_kubectl(&[
            "create",
            "token",
            "batchgate",
            "-n",
            "batchgate-system",
            "--duration=2h",
        ])
        .unwrap();
    let ca = dir.join("apiserver-ca.crt");
    std::fs::write(&ca, c.ca_cert_pem()).unwrap();
    let path = dir.join("sa.kubeconfig");
    let kc = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": c.server_url(), "certificate-authority": ca}}],
        "users": [{"name": "sa", "user": {"token": token.trim()}}],
        "contexts": [{"name": "sa", "context": {"cluster": "local", "user": "sa"}}],
        "current-context": "sa",
    });
    std::fs::write(&path, serde_json::to_string(&kc).unwrap()).unwrap();
    path
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

/// QuotaReserved events in `ns`: (eventTime µs, reportingInstance).
fn reservations(c: &LocalCluster, ns: &str) -> Vec<(i64, String)> {
    let Some(list) = get(c, &["events.events.k8s.io", "-n", ns]) else {
        return Vec::new();
    };
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
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            for l in tail.iter().rev() {
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

/// cpu (milli) held by Workloads whose quota is reserved and not released.
fn reserved_cpu(list: &Value) -> i64 {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
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

#[test]
fn leader_handover_on_sigterm_and_sigstop_loses_nothing_and_never_overcommits() {
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
    let kubeconfig = service_account_kubeconfig(c, dir.path());

    let mut a = replica("replica-a", &kubeconfig, &certs, &cfg);
    wait_for(Duration::from_secs(60), "replica-a to lead", || {
        holder(c).starts_with("replica-a_").then_some(())
    });
    let b = replica("replica-b", &kubeconfig, &certs, &cfg);
    let backends = Arc::new(Mutex::new(vec![(a.addr, a.probe), (b.addr, b.probe)]));
    let proxy = Proxy::start(backends.clone());
    let out = std::process::Command::new(BIN)
        .args([
            "webhooks",
            "--url",
            &format!("https://{}", proxy.addr),
            "--failure-policy",
            "Fail",
        ])
        .arg("--ca-file")
        .arg(certs.join("ca.crt"))
        .output()
        .unwrap();
    assert!(out.status.success());
    c.apply(&String::from_utf8(out.stdout).unwrap()).unwrap();
    wait_webhook_active(c, &ns);
    let setup = t0.elapsed();

    // The stream of queued Jobs (2 cpu, 3 s each: at most 10 run at once).
    let stop = Arc::new(AtomicBool::new(false));
    let creates = Arc::new(Mutex::new(Creates::default()));
    let creator = {
        let (stop, creates, ns) = (stop.clone(), creates.clone(), ns.clone());
        thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Acquire) && i < 400 {
                let name = format!("ha-{i:03}");
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
                thread::sleep(Duration::from_millis(150));
            }
        })
    };
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
                match get(c, &["workloads.kueue.x-k8s.io", "-n", &ns]) {
                    Some(list) => {
                        samples.fetch_add(1, Ordering::Relaxed);
                        let used = reserved_cpu(&list);
                        if used > QUOTA_CPU * 1000 {
                            over.lock().unwrap().push(used);
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

    // (a) SIGTERM of the leader.
    let refused_before_a = creates.lock().unwrap().refused.len();
    let sigterm = SystemTime::now();
    a.signal(libc::SIGTERM);
    let handover_term =
        first_admission_by(c, &ns, &b, "replica-b", sigterm, Duration::from_secs(30));
    let exit = a
        .wait_exit(Duration::from_secs(30))
        .expect("replica-a exits after SIGTERM");
    assert!(exit.success(), "replica-a exit: {exit:?}");
    assert!(holder(c).starts_with("replica-b_"));
    let refused_a = creates.lock().unwrap().refused.len() - refused_before_a;
    eprintln!("(a) SIGTERM: standby's first admission {handover_term:.2} s after the signal; creates refused meanwhile: {refused_a}");
    // Without the release the standby would wait out the lease (8 s).
    assert!(
        handover_term <= 5.0,
        "the standby admitted {handover_term:.1} s after SIGTERM"
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

    // (b) The apiserver's webhook connections all go to the leader, which is
    // then frozen.
    *proxy.pin.lock().unwrap() = Some(1);
    thread::sleep(Duration::from_millis(500));
    proxy.reset();
    wait_for(
        Duration::from_secs(30),
        "a webhook call through the pinned leader",
        || {
            let (ok, _, _) = kubectl(
                c,
                &["create", "--dry-run=server", "-f", "-"],
                Some(&job("probe", &ns, "lq", "1", "1s", json!({}))),
            );
            ok.then_some(())
        },
    );
    // A backlog (30 Jobs, 60 cpu on a 20-cpu queue) for the standby to admit.
    for i in 0..30 {
        create(
            c,
            &job(&format!("backlog-{i:02}"), &ns, "lq", "2", "3s", json!({})),
        );
        creates.lock().unwrap().made.push(format!("backlog-{i:02}"));
    }
    let refused_before_b = creates.lock().unwrap().refused.len();
    let made_before_b = creates.lock().unwrap().made.len();
    let sigstop = SystemTime::now();
    let stopped = Instant::now();
    b.signal(libc::SIGSTOP);
    let handover_stop = first_admission_by(
        c,
        &ns,
        &c_rep,
        "replica-c",
        sigstop,
        Duration::from_secs(LEASE_SECONDS + 25),
    );
    eprintln!("(b) SIGSTOP: standby's first admission {handover_stop:.2} s after the signal");
    thread::sleep(Duration::from_secs(30).saturating_sub(stopped.elapsed()));
    let sigcont = SystemTime::now();
    b.signal(libc::SIGCONT);
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
    assert!(
        handover_stop <= (LEASE_SECONDS + 5) as f64,
        "the standby admitted {handover_stop:.1} s after SIGSTOP (lease {LEASE_SECONDS} s)"
    );

    // The stream ends; every Job runs to completion.
    stop.store(true, Ordering::Release);
    creator.join().unwrap();
    let made = creates.lock().unwrap().made.clone();
    let refused_total = creates.lock().unwrap().refused.len();
    wait_for(Duration::from_secs(180), "every Job to succeed", || {
        let done = jobs(c, &ns).into_iter().filter(|(_, _, s)| *s).count();
        (done >= made.len()).then_some(())
    });
    sampler.join().unwrap();

    // No write by replica-b after it was frozen (its fence refuses them).
    let late: Vec<_> = reservations(c, &ns)
        .into_iter()
        .filter(|(t, r)| r == "replica-b" && *t > unix_micros(sigstop))
        .collect();
    assert!(late.is_empty(), "replica-b wrote after SIGSTOP: {late:?}");
    let _ = sigcont;

    // One Workload per Job, all Finished.
    let list = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns]).unwrap();
    let mut per_job: HashMap<String, usize> = HashMap::new();
    for w in list["items"].as_array().unwrap() {
        assert!(is_true(w, "Finished"), "{}", w["metadata"]["name"]);
        let owner = w["metadata"]["ownerReferences"][0]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        *per_job.entry(owner).or_insert(0) += 1;
    }
    for name in &made {
        assert_eq!(per_job.get(name), Some(&1), "Workloads of {name}");
    }
    assert_eq!(per_job.len(), made.len());
    let over = over.lock().unwrap().clone();
    let (n, errs) = (
        samples.load(Ordering::Relaxed),
        sample_errors.load(Ordering::Relaxed),
    );
    assert!(over.is_empty(), "over quota: {over:?}");
    assert!(n >= 100 && errs * 20 <= n, "{n} samples, {errs} failed");
    // Both replicas of phase (a) served webhook traffic (the apiserver keeps
    // one HTTP/2 connection: the leader's until it drained, then the standby's).
    let conns = proxy.connections_per_backend();
    assert!(
        conns.contains_key(&a.addr) && conns.contains_key(&b.addr),
        "{conns:?}"
    );
    let _ = &proxy.ready;
    eprintln!(
        "HA figures: jobs {} (lost 0, one Workload each), creates refused {refused_total} (SIGTERM phase {refused_a}, SIGSTOP phase {}), \
         over-quota samples 0 of {n} ({errs} sampling errors), handover SIGTERM {handover_term:.2} s, SIGSTOP {handover_stop:.2} s, \
         proxied connections per replica {conns:?}; setup {setup:?}, total {:?}",
        made.len(),
        refused_b.len(),
        t0.elapsed()
    );
    drop(c_rep);
}
