//! Self-managed certificates end to end: two replicas share one Secret, the
//! CA and serving certificate rotate on a compressed schedule while kubectl
//! keeps creating queued Jobs, and no create fails.

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
use support::{e2e::*, Client, Server};

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

    // Registered without a caBundle: batchgate publishes it.
    register(c, a.addr, None, "Fail");
    let deadline = Instant::now() + Duration::from_secs(20);
    while published_bundle(
        c,
        "mutatingwebhookconfiguration",
        "batchgate-mutating-webhook-configuration",
    )
    .is_empty()
    {
        assert!(Instant::now() < deadline, "caBundle never published");
        std::thread::sleep(Duration::from_millis(200));
    }
    wait_webhook_active(c, &jobs_ns);

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
    let start = Instant::now();
    let mut created = 0;
    let mut failures = Vec::new();
    while start.elapsed() < Duration::from_secs(50) {
        let name = format!("rot-{created}");
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
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {created} creates failed:\n{}",
        failures.len(),
        failures.join("\n")
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
    let deadline = Instant::now() + Duration::from_secs(5);
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
