//! Self-managed certificates end to end: two replicas share one Secret, the
//! CA and serving certificate rotate on a compressed schedule while four
//! kubectl clients keep creating queued Jobs at once, and no create fails.
//! Both replicas are registered and both serve throughout: the mutating
//! webhooks' URL is replica a's, the validating webhooks' replica b's, so
//! every create is reviewed by both (the apiserver keeps one HTTP/2
//! connection per URL, so two URLs are how both replicas get traffic; a
//! Service's endpoints would split it by connection instead).

mod support;

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use base64::Engine;
use batchgate_localcluster::{shared, LocalCluster};
use serde_json::Value;
use support::{e2e::*, Client, Server, BIN};

const SECRET: &str = "batchgate-webhook-server-cert";

fn config(dir: &std::path::Path) -> String {
    let path = dir.join("config.yaml");
    // CA lives 60 s and rotates 35 s before expiry (at age 25 s); each
    // rotation step is held 6 s, so a rotation takes 12 s and leaves 13 s of
    // steady state; the serving certificate lives 40 s, renewed 15 s early.
    std::fs::write(
        &path,
        format!(
            "namespace: batchgate-system\n\
             certificates:\n  secret: batchgate-system/{SECRET}\n  manage: true\n\
             \x20 caValiditySeconds: 60\n  certValiditySeconds: 40\n\
             \x20 caRenewBeforeSeconds: 35\n  certRenewBeforeSeconds: 15\n\
             \x20 overlapSeconds: 6\n  syncIntervalSeconds: 1\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn secret_data(c: &LocalCluster, key: &str) -> String {
    let s = get_json(c, &["secret", SECRET, "-n", "batchgate-system"]);
    let b64 = s["data"][key].as_str().unwrap_or("");
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
    )
    .unwrap()
}

fn ca_count(pem: &str) -> usize {
    pem.matches("BEGIN CERTIFICATE").count()
}

/// The caBundle of a webhook configuration, decoded.
fn published_bundle(c: &LocalCluster, kind: &str, name: &str) -> String {
    let v = get_json(c, &[kind, name]);
    let b64 = v["webhooks"][0]["clientConfig"]["caBundle"]
        .as_str()
        .unwrap_or("");
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap_or_default(),
    )
    .unwrap_or_default()
}

/// Admission reviews a replica has answered (all its
/// `batchgate_admission_reviews_total` series).
fn reviews(server: &Server) -> u64 {
    let (_, text) = server.probe_get("/metrics");
    text.lines()
        .filter(|l| l.starts_with("batchgate_admission_reviews_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Points the validating webhooks at `addr` (the mutating ones stay where
/// `register` put them); no caBundle, so batchgate's published one stays.
fn register_validating(c: &LocalCluster, addr: std::net::SocketAddr) {
    let out = std::process::Command::new(BIN)
        .args(["webhooks", "--url", &format!("https://{addr}")])
        .args(["--failure-policy", "Fail"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let validating: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| v["kind"] == "ValidatingWebhookConfiguration")
        .collect();
    assert!(!validating.is_empty());
    for doc in validating {
        c.apply(&doc.to_string()).unwrap();
    }
}

async fn serial(server: &Server, bundle: &str) -> String {
    Client::new(server.addr, bundle).connect().await.serial
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_under_load_loses_no_create() {
    let c = shared();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let ns = namespace(c, "batchgate-system");
    assert_eq!(ns, "batchgate-system");
    let jobs_ns = namespace(c, "e2e-rotation");

    // Two replicas start at once against a Secret that does not exist yet.
    let kc = c.kubeconfig().to_path_buf();
    let (cfg1, cfg2, kc1, kc2) = (cfg.clone(), cfg.clone(), kc.clone(), kc.clone());
    let start = |kc: std::path::PathBuf, cfg: String| {
        std::thread::spawn(move || {
            Server::start_forever(move || {
                Server::start_in_cluster(
                    &kc,
                    None,
                    &[
                        "--config",
                        &cfg,
                        "--cert-secret",
                        &format!("batchgate-system/{SECRET}"),
                    ],
                )
            })
        })
    };
    let (a, b) = (start(kc1, cfg1), start(kc2, cfg2));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    a.wait_ready(Duration::from_secs(30));
    b.wait_ready(Duration::from_secs(30));
    let first_bundle = secret_data(c, "ca-bundle.crt");
    assert_eq!(ca_count(&first_bundle), 1, "the replicas agreed on one CA");
    assert_eq!(
        serial(&a, &first_bundle).await,
        serial(&b, &first_bundle).await,
        "both serve the Secret's certificate"
    );

    // Registered without a caBundle: batchgate publishes it. Mutating
    // reviews go to a, validating ones to b.
    register(c, a.addr, None, "Fail");
    register_validating(c, b.addr);
    let deadline = Instant::now() + Duration::from_secs(60);
    while [
        "mutatingwebhookconfiguration/batchgate-mutating-webhook-configuration",
        "validatingwebhookconfiguration/batchgate-validating-webhook-configuration",
    ]
    .iter()
    .any(|kn| {
        let (kind, name) = kn.split_once('/').unwrap();
        published_bundle(c, kind, name).is_empty()
    }) {
        assert!(Instant::now() < deadline, "caBundle never published");
        std::thread::sleep(Duration::from_millis(200));
    }
    wait_webhook_active(c, &jobs_ns);
    let (a_before, b_before) = (reviews(&a), reviews(&b));

    // Watch the published bundle while creating Jobs.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, stop) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            let c = shared();
            while !stop.load(Ordering::Relaxed) {
                let b = published_bundle(
                    c,
                    "mutatingwebhookconfiguration",
                    "batchgate-mutating-webhook-configuration",
                );
                let mut s = seen.lock().unwrap();
                if s.last() != Some(&b) {
                    s.push(b);
                }
                drop(s);
                std::thread::sleep(Duration::from_millis(250));
            }
        })
    };
    // Four clients create at once for 50 s (two CA rotations' worth).
    let start = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let jobs_ns = jobs_ns.clone();
            std::thread::spawn(move || {
                let c = shared();
                let (mut created, mut failures) = (0usize, Vec::new());
                while start.elapsed() < Duration::from_secs(50) {
                    let name = format!("rot-{w}-{created}");
                    let (ok, out, err) = kubectl(
                        c,
                        &["create", "-o", "json", "-f", "-"],
                        Some(&queued_job(&name, &jobs_ns, "q")),
                    );
                    if !ok {
                        failures.push(format!("{name} at {:?}: {err}", start.elapsed()));
                    } else {
                        let v: Value = serde_json::from_str(&out).unwrap();
                        if v["spec"]["suspend"] != Value::Bool(true) {
                            failures.push(format!("{name} stored unsuspended"));
                        }
                    }
                    created += 1;
                }
                (created, failures)
            })
        })
        .collect();
    let (mut created, mut failures) = (0, Vec::new());
    for w in workers {
        let (n, f) = w.join().unwrap();
        created += n;
        failures.extend(f);
    }
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let (served_a, served_b) = (reviews(&a) - a_before, reviews(&b) - b_before);
    eprintln!("reviews answered during the rotation: replica a {served_a}, replica b {served_b}");
    assert!(
        failures.is_empty(),
        "{} of {created} creates failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        served_a >= created as u64 && served_b >= created as u64,
        "each create is reviewed by both replicas: a {served_a}, b {served_b}, creates {created}"
    );

    // The published bundle went old -> old+new -> new at least once.
    let seen = seen.lock().unwrap().clone();
    let counts: Vec<usize> = seen.iter().map(|b| ca_count(b)).collect();
    eprintln!("{created} creates; caBundle CA counts over time: {counts:?}");
    let first_ca = seen[0].clone();
    let extended = seen
        .iter()
        .position(|b| ca_count(b) == 2 && b.contains(first_ca.trim()))
        .expect("old and new CA published together");
    let replaced = seen[extended..]
        .iter()
        .any(|b| ca_count(b) == 1 && !b.contains(first_ca.trim()));
    assert!(replaced, "the old CA left the bundle: {counts:?}");

    // Both webhook configurations carry the Secret's bundle, and both
    // replicas serve the Secret's certificate.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let bundle = secret_data(c, "ca-bundle.crt");
        let m = published_bundle(
            c,
            "mutatingwebhookconfiguration",
            "batchgate-mutating-webhook-configuration",
        );
        let v = published_bundle(
            c,
            "validatingwebhookconfiguration",
            "batchgate-validating-webhook-configuration",
        );
        let (sa, sb) = (serial(&a, &bundle).await, serial(&b, &bundle).await);
        if m == bundle && v == bundle && sa == sb {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "replicas or configurations out of step"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
