//! cert-manager for real: its controller and CA injector (built from its Go
//! module by tests/cluster/build-cert-manager.sh) run beside the local
//! control plane. `manifests/cert-manager/` is applied unchanged; cert-manager
//! issues the serving certificate into the Secret, batchgate serves it
//! (`--cert-secret`), the CA injector fills both webhook configurations'
//! caBundle, and the apiserver calls batchgate through the `batchgate-webhook`
//! Service. Then the certificate is renewed (the re-issue `cmctl renew`
//! triggers) while two clients keep creating queued Jobs: no create fails,
//! the new serial is served, and the injected CA never changes.
//!
//! The Service is the one test-only object: an ExternalName Service pointing
//! at localhost (the local control plane has no kube-proxy, and Endpoints may
//! not hold loopback addresses), so batchgate listens on 127.0.0.1:443, the
//! webhooks' service port. Binding 443 needs root (or CAP_NET_BIND_SERVICE),
//! as the rest of the e2e setup does.

mod support;

use std::{
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use base64::Engine;
use batchgate_localcluster::{shared_with, ClusterOptions, LocalCluster};
use rustls::pki_types::ServerName;
use serde_json::Value;
use support::{e2e::*, serial_of, tls_config, wait_for, Server};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const NS: &str = "batchgate-system";
const SECRET: &str = "batchgate-webhook-server-cert";
const CERTIFICATE: &str = "batchgate-serving-cert";
/// The name the apiserver verifies for `service: batchgate-webhook` in
/// batchgate-system.
const SERVICE_DNS: &str = "batchgate-webhook.batchgate-system.svc";
const LISTEN: &str = "127.0.0.1:443";
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn cluster() -> &'static LocalCluster {
    shared_with(|| ClusterOptions {
        cert_manager: true,
        ..ClusterOptions::default()
    })
}

fn secret_data(c: &LocalCluster, name: &str, key: &str) -> Option<String> {
    let (ok, out, _) = kubectl(c, &["get", "secret", name, "-n", NS, "-o", "json"], None);
    if !ok {
        return None;
    }
    let s: Value = serde_json::from_str(&out).ok()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s["data"][key].as_str()?)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The caBundle of a webhook configuration's first webhook, decoded.
fn ca_bundle(c: &LocalCluster, kind: &str, name: &str) -> String {
    ca_bundle_at(c, kind, name, "/webhooks/0/clientConfig/caBundle")
}

/// The caBundle at `pointer` in an object, decoded ("" while unset).
fn ca_bundle_at(c: &LocalCluster, kind: &str, name: &str, pointer: &str) -> String {
    let v = get_json(c, &[kind, name]);
    let b64 = v.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap_or_default(),
    )
    .unwrap_or_default()
}

fn bundles(c: &LocalCluster) -> [String; 2] {
    [
        ca_bundle(
            c,
            "mutatingwebhookconfiguration",
            "batchgate-mutating-webhook-configuration",
        ),
        ca_bundle(
            c,
            "validatingwebhookconfiguration",
            "batchgate-validating-webhook-configuration",
        ),
    ]
}

fn pem_serial(pem: &str) -> String {
    let der = rustls_pemfile::certs(&mut pem.as_bytes())
        .next()
        .expect("a certificate in the PEM")
        .unwrap();
    serial_of(&der)
}

/// A fresh TLS handshake with batchgate as the apiserver makes it: the
/// Service's DNS name, verified against `ca_pem`. The served serial.
async fn served_serial(ca_pem: &str) -> Result<String, String> {
    let tcp = TcpStream::connect(LISTEN)
        .await
        .map_err(|e| format!("connect {LISTEN}: {e}"))?;
    let tls = TlsConnector::from(tls_config(ca_pem, &[b"http/1.1"]))
        .connect(ServerName::try_from(SERVICE_DNS).unwrap(), tcp)
        .await
        .map_err(|e| format!("TLS handshake as {SERVICE_DNS}: {e}"))?;
    Ok(serial_of(&tls.get_ref().1.peer_certificates().unwrap()[0]))
}

fn metric(server: &Server, prefix: &str) -> f64 {
    let (_, text) = server.probe_get("/metrics");
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cert_manager_issues_injects_and_renews_without_a_failed_create() {
    let c = cluster();
    namespace(c, NS);
    let jobs_ns = namespace(c, "e2e-cert-manager");

    // The Issuers and Certificates, unchanged.
    let (ok, out, err) = kubectl(
        c,
        &[
            "apply",
            "-f",
            &format!("{ROOT}/manifests/cert-manager/certificate.yaml"),
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let (ok, out, err) = kubectl(
        c,
        &[
            "wait",
            "-n",
            NS,
            "--for=condition=Ready",
            "--timeout=120s",
            "certificate/batchgate-ca",
            &format!("certificate/{CERTIFICATE}"),
        ],
        None,
    );
    assert!(ok, "the Certificates never became Ready: {out}{err}");
    let issued = wait_for("the serving Secret", Duration::from_secs(60), || {
        secret_data(c, SECRET, "tls.crt")
    });
    let ca = secret_data(c, SECRET, "ca.crt").expect("ca.crt in the serving Secret");
    let ca_cert = secret_data(c, "batchgate-ca", "tls.crt").expect("the CA Secret");
    assert_eq!(
        pem_serial(&ca),
        pem_serial(&ca_cert),
        "the serving certificate is signed by batchgate-ca"
    );
    assert_ne!(pem_serial(&issued), pem_serial(&ca), "not self-signed");

    // batchgate reads the Secret (no kubelet mounts it here).
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "namespace: {NS}\n\
             certificates:\n  syncIntervalSeconds: 1\n\
             webhook:\n  idleTimeoutSeconds: 2\n"
        ),
    )
    .unwrap();
    let kc = c.kubeconfig().to_path_buf();
    let cfg_s = cfg.display().to_string();
    let server = Server::start_forever(move || {
        Server::start_in_cluster(
            &kc,
            None,
            &[
                "--listen",
                LISTEN,
                "--config",
                &cfg_s,
                "--cert-secret",
                &format!("{NS}/{SECRET}"),
            ],
        )
    });
    server.wait_ready(Duration::from_secs(60));
    assert_eq!(
        served_serial(&ca).await.unwrap(),
        pem_serial(&issued),
        "batchgate serves the issued certificate, valid for {SERVICE_DNS} under the CA"
    );

    // The Service the webhooks name, then the webhook configurations,
    // unchanged: their caBundle is cert-manager's to fill.
    c.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "Service",
  "metadata": {{"name": "batchgate-webhook", "namespace": "{NS}"}},
  "spec": {{"type": "ExternalName", "externalName": "localhost",
           "ports": [{{"name": "https", "port": 443}}]}}}}"#
    ))
    .unwrap();
    let (ok, out, err) = kubectl(
        c,
        &[
            "apply",
            "-f",
            &format!("{ROOT}/manifests/cert-manager/webhooks.yaml"),
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(
        "the CA injector to fill both caBundles",
        Duration::from_secs(60),
        || {
            bundles(c)
                .iter()
                .all(|b| b.trim() == ca.trim())
                .then_some(())
        },
    );
    wait_webhook_active(c, &jobs_ns);

    // The CRDs whose v1beta1 batchgate converts, as shipped for
    // cert-manager: the CA injector fills their conversion webhook's
    // caBundle with the same CA, and the apiserver then converts through
    // batchgate over TLS (a LocalQueue stored as v1beta2, read as v1beta1).
    let (ok, out, err) = kubectl(
        c,
        &[
            "apply",
            "--server-side",
            "-f",
            &format!("{ROOT}/manifests/cert-manager/crds"),
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let crds = [
        "clusterqueues.kueue.x-k8s.io",
        "cohorts.kueue.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io",
    ];
    let crd_refs: Vec<String> = crds.iter().map(|n| format!("crd/{n}")).collect();
    let crd_refs: Vec<&str> = crd_refs.iter().map(String::as_str).collect();
    c.wait_established(&crd_refs, Duration::from_secs(60))
        .unwrap();
    wait_for(
        "the CA injector to fill the CRDs' conversion caBundles",
        Duration::from_secs(60),
        || {
            crds.iter()
                .all(|n| {
                    ca_bundle_at(
                        c,
                        "crd",
                        n,
                        "/spec/conversion/webhook/clientConfig/caBundle",
                    )
                    .trim()
                        == ca.trim()
                })
                .then_some(())
        },
    );
    c.apply(&format!(
        r#"{{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
  "metadata": {{"name": "converted", "namespace": "{jobs_ns}"}},
  "spec": {{"clusterQueue": "cq"}}}}"#
    ))
    .unwrap();
    let old = wait_for(
        "the LocalQueue read as v1beta1 through the conversion webhook",
        Duration::from_secs(60),
        || {
            let (ok, out, _) = kubectl(
                c,
                &[
                    "get",
                    "localqueues.v1beta1.kueue.x-k8s.io",
                    "converted",
                    "-n",
                    &jobs_ns,
                    "-o",
                    "json",
                ],
                None,
            );
            ok.then(|| serde_json::from_str::<Value>(&out).ok())
                .flatten()
        },
    );
    assert_eq!(old["apiVersion"], "kueue.x-k8s.io/v1beta1", "{old}");
    assert_eq!(old["spec"]["clusterQueue"], "cq", "{old}");

    // Two clients create queued Jobs until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let paused = Arc::new(AtomicBool::new(false));
    let created = Arc::new(AtomicUsize::new(0));
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let t0 = Instant::now();
    let workers: Vec<_> = (0..2)
        .map(|w| {
            let (jobs_ns, stop, paused, created, failures) = (
                jobs_ns.clone(),
                stop.clone(),
                paused.clone(),
                created.clone(),
                failures.clone(),
            );
            std::thread::spawn(move || {
                let c = cluster();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(300) {
                    if paused.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(100));
                        continue;
                    }
                    let name = format!("cm-{w}-{i}");
                    i += 1;
                    let (ok, out, err) = kubectl(
                        c,
                        &["create", "-o", "json", "-f", "-"],
                        Some(&queued_job(&name, &jobs_ns, "q")),
                    );
                    let failure = if !ok {
                        Some(format!("{name} at {:?}: {err}", t0.elapsed()))
                    } else {
                        let v: Value = serde_json::from_str(&out).unwrap_or_default();
                        (v["spec"]["suspend"] != Value::Bool(true))
                            .then(|| format!("{name} stored unsuspended"))
                    };
                    match failure {
                        Some(f) => failures.lock().unwrap().push(f),
                        None => {
                            created.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    wait_for(
        "creates before the renewal",
        Duration::from_secs(60),
        || (created.load(Ordering::Relaxed) >= 10).then_some(()),
    );

    // Renew: the Issuing condition `cmctl renew` adds.
    let before = pem_serial(&issued);
    let reloads_before = metric(
        &server,
        "batchgate_certificate_reloads_total{result=\"success\"}",
    );
    let patch = serde_json::json!([{
        "op": "add",
        "path": "/status/conditions/-",
        "value": {
            "type": "Issuing",
            "status": "True",
            "reason": "ManuallyTriggered",
            "message": "Certificate re-issuance manually triggered",
            "lastTransitionTime": chrono::Utc::now()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        },
    }]);
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "certificate",
            CERTIFICATE,
            "-n",
            NS,
            "--subresource=status",
            "--type=json",
            "-p",
            &patch.to_string(),
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let renewed_at = Instant::now();

    // Until the new serial is served: the Secret's certificate, the served
    // one and both caBundles, every 100 ms.
    let (mut secret_changed, mut bundle_seen) = (None, Vec::<String>::new());
    let new_serial = loop {
        if secret_changed.is_none() {
            if let Some(crt) = secret_data(c, SECRET, "tls.crt") {
                if pem_serial(&crt) != before {
                    secret_changed = Some(renewed_at.elapsed());
                }
            }
        }
        for b in bundles(c) {
            if !bundle_seen.contains(&b) {
                bundle_seen.push(b);
            }
        }
        match served_serial(&ca).await {
            Ok(s) if s != before => break s,
            Ok(_) => {}
            Err(e) => panic!("batchgate's certificate no longer verifies: {e}"),
        }
        assert!(
            renewed_at.elapsed() < Duration::from_secs(120),
            "the new serial was not served within 120 s of the renewal"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let served_after = renewed_at.elapsed();
    let renewed = secret_data(c, SECRET, "tls.crt").unwrap();
    assert_eq!(
        new_serial,
        pem_serial(&renewed),
        "the Secret's new certificate"
    );
    assert!(
        metric(
            &server,
            "batchgate_certificate_reloads_total{result=\"success\"}"
        ) > reloads_before,
        "batchgate counted the reload"
    );

    // Creates go on over the apiserver's connection (opened under the old
    // certificate); then a pause longer than the idle timeout (2 s: batchgate
    // sends GOAWAY, the apiserver's HTTP/2 client goes), and the creates
    // after it come over a new connection, a new handshake with the new
    // certificate.
    std::thread::sleep(Duration::from_secs(3));
    paused.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(5));
    let created_before_resume = created.load(Ordering::Relaxed);
    paused.store(false, Ordering::Relaxed);
    wait_for(
        "creates over a new connection",
        Duration::from_secs(60),
        || (created.load(Ordering::Relaxed) >= created_before_resume + 10).then_some(()),
    );
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    for b in bundles(c) {
        if !bundle_seen.contains(&b) {
            bundle_seen.push(b);
        }
    }

    let failures = failures.lock().unwrap().clone();
    let created = created.load(Ordering::Relaxed);
    eprintln!(
        "cert-manager renewal: {created} creates, {} failed; Secret updated {:.2} s and new serial \
         served {:.2} s after the renewal was triggered",
        failures.len(),
        secret_changed.unwrap_or(served_after).as_secs_f64(),
        served_after.as_secs_f64(),
    );
    assert!(
        failures.is_empty(),
        "{} of {} creates failed:\n{}",
        failures.len(),
        created + failures.len(),
        failures.join("\n")
    );
    // The CA the apiserver trusts is the one injected at the start: the
    // renewal changed the serving certificate only.
    assert_eq!(bundle_seen.len(), 1, "caBundle changed during the renewal");
    assert_eq!(bundle_seen[0].trim(), ca.trim());
    assert_eq!(
        secret_data(c, SECRET, "ca.crt").unwrap().trim(),
        ca.trim(),
        "the renewed Secret carries the same CA"
    );
}
