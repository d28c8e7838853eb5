//! MultiKueue interop: batchgate's manager dispatches to a worker that runs
//! stock Kueue v0.17.1 instead of batchgate — its whole controller manager
//! (`cmd/kueue`, built from the Go module proxy by
//! `tests/cluster/kueue/build.sh manager`, the newest release the proxy
//! serves here) with its own CRDs. The worker's Kueue admits the copy
//! batchgate creates, takes it as the Job's prebuilt Workload, runs the Job
//! on its KWOK nodes; batchgate mirrors the status back and finishes the
//! Workload on the manager.
//!
//! Where the versions differ: Kueue before 0.18 reads a job's prebuilt
//! Workload from the `kueue.x-k8s.io/prebuilt-workload-name` label only,
//! while Kueue v0.19.2 (and batchgate) write an annotation by default
//! (`WorkloadIdentifierAnnotations`); with it, the v0.17.1 worker would
//! make a second Workload for the Job. So this manager runs with that gate
//! off, as a v0.19.2 manager with v0.17 workers must, and the test checks
//! the label and that the worker holds one Workload.
//!
//! Kueue's webhooks are not registered on the worker (their Service would
//! be in-cluster); its controllers, which the interop is about, run whole.

mod support;

use std::{
    io::Write,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use batchgate_localcluster::{shared, ClusterOptions, LocalCluster};
use serde_json::json;
use support::{
    e2e::{kubectl, namespace, wait_webhook_active},
    gen_certs,
    queueing::*,
};

const MANAGER_CONFIG: &str =
    "multiKueue:\n  gcInterval: 5s\nfeatureGates:\n  WorkloadIdentifierAnnotations: false\n";
const NS: &str = "mk-interop";

/// Kueue's controller manager, killed with the test binary.
struct Kueue {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Kueue {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Kueue {
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(60).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

/// `tests/cluster/kueue/build.sh manager`: the binary, built once and
/// cached (the script's own lock serialises concurrent builds).
fn kueue_dir() -> PathBuf {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/kueue/build.sh");
    let out = Command::new(script)
        .arg("manager")
        .stderr(Stdio::inherit())
        .output()
        .expect("tests/cluster/kueue/build.sh runs");
    assert!(
        out.status.success(),
        "building Kueue's manager failed (tests/cluster/kueue/build.sh manager)"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    PathBuf::from(text.lines().last().expect("the build prints its directory"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kueue's manager with its internal certificate management off reads its
/// metrics certificate from this fixed path (cmd/kueue/main.go); the test
/// puts a throwaway one there when it is missing.
const METRICS_CERTS: &str = "/etc/kueue/metrics/certs";

fn start_kueue(worker: &LocalCluster, kueue: &std::path::Path) -> Kueue {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    gen_certs(&certs);
    if !std::path::Path::new(METRICS_CERTS).join("tls.crt").exists() {
        std::fs::create_dir_all(METRICS_CERTS).unwrap_or_else(|e| {
            panic!(
                "Kueue's manager needs {METRICS_CERTS} (its fixed metrics certificate path): {e}"
            )
        });
        for f in ["tls.crt", "tls.key"] {
            std::fs::copy(certs.join(f), std::path::Path::new(METRICS_CERTS).join(f)).unwrap();
        }
    }
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n\
             namespace: kueue-system\n\
             health:\n  healthProbeBindAddress: \"0\"\n\
             metrics:\n  bindAddress: \"0\"\n\
             webhook:\n  port: {}\n  certDir: {}\n\
             leaderElection:\n  leaderElect: false\n\
             internalCertManagement:\n  enable: false\n\
             integrations:\n  frameworks: [batch/job]\n",
            free_port(),
            certs.display()
        ),
    )
    .unwrap();
    let log = dir.path().join("kueue.log");
    let mut cmd = Command::new(kueue.join("kueue-manager"));
    // Its visibility server reads a certificate from a fixed /visibility
    // path and ends the process without one; nothing here asks it.
    cmd.arg("--config")
        .arg(&config)
        .arg("--feature-gates=VisibilityOnDemand=false")
        .env("KUBECONFIG", worker.kubeconfig())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    // SAFETY: prctl is async-signal-safe and touches only this process.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let child = cmd.spawn().expect("Kueue's manager starts");
    let mut k = Kueue {
        child,
        log,
        _dir: dir,
    };
    // Its controllers are up once it says so; a manager that exits instead
    // fails the test here, with its words.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = k.child.try_wait() {
            panic!("Kueue's manager exited ({status}):\n{}", k.log_tail());
        }
        let text = std::fs::read_to_string(&k.log).unwrap_or_default();
        if text.contains("Starting workers") {
            return k;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Kueue's controllers did not start:\n{}",
            k.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn batchgates_manager_dispatches_to_a_stock_kueue_worker_and_mirrors_its_status() {
    let kueue = kueue_dir();
    let starting = std::thread::spawn(|| {
        LocalCluster::start(ClusterOptions::default()).expect("the worker's control plane starts")
    });
    let m = shared();
    install_crds(m);
    let server = start_with(m, MANAGER_CONFIG);
    wait_webhook_active(m, &namespace(m, "e2e-probe"));
    let worker = starting.join().expect("the worker starts");

    // The worker: Kueue v0.17.1's CRDs and manager, and the queues.
    let crds = kueue.join("src/config/components/crd/bases");
    let (ok, out, err) = kubectl(
        &worker,
        &["apply", "--server-side", "-f", crds.to_str().unwrap()],
        None,
    );
    assert!(ok, "{out}{err}");
    worker
        .wait_established(
            &[
                "crd/workloads.kueue.x-k8s.io",
                "crd/clusterqueues.kueue.x-k8s.io",
            ],
            Duration::from_secs(120),
        )
        .unwrap();
    namespace(&worker, "kueue-system");
    let kueue_manager = start_kueue(&worker, &kueue);
    for c in [m, &worker] {
        namespace(c, NS);
        apply(c, &flavor("mk-flavor", json!({})));
        apply(c, &local_queue(NS, "mk-lq", "mk-cq"));
    }
    apply(
        &worker,
        &cluster_queue("mk-cq", &[("mk-flavor", "4", None)], json!({})),
    );

    // The manager: the worker registered, a MultiKueue ClusterQueue.
    create(
        m,
        &kubeconfig_secret("kueue-worker", &embedded_kubeconfig(&worker)),
    );
    create(m, &mk_cluster("kueue-worker", "kueue-worker"));
    create(
        m,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                "metadata": {"name": "interop"}, "spec": {"clusters": ["kueue-worker"]}})
        .to_string(),
    );
    create(
        m,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                "metadata": {"name": "interop"},
                "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                         "parameters": {"apiGroup": "kueue.x-k8s.io",
                                        "kind": "MultiKueueConfig", "name": "interop"}}})
        .to_string(),
    );
    apply(
        m,
        &cluster_queue(
            "mk-cq",
            &[("mk-flavor", "4", None)],
            json!({"admissionChecksStrategy": {"admissionChecks": [{"name": "interop"}]}}),
        ),
    );
    wait_for(
        Duration::from_secs(90),
        "the MultiKueue check Active",
        || get(m, &["admissioncheck", "interop"]).filter(|ac| is_true(ac, "Active")),
    );

    create(m, &job("mk-i", NS, "mk-lq", "500m", "5s", json!({})));
    let outcome = std::panic::catch_unwind(|| {
        let wl = wait_for(
            Duration::from_secs(120),
            "mk-i admitted by the Kueue worker",
            || {
                workload_of(m, NS, "mk-i").filter(|wl| {
                    wl["status"]["clusterName"] == "kueue-worker"
                        && wl["status"]["admissionChecks"][0]["state"] == "Ready"
                })
            },
        );
        let remote = wait_for(Duration::from_secs(60), "the Job on the worker", || {
            get(&worker, &["job", "mk-i", "-n", NS])
        });
        assert_eq!(
            remote["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"],
            wl["metadata"]["name"],
            "the label Kueue v0.17.1 reads: {remote}"
        );
        // Kueue takes the copy as the Job's Workload and makes none of its
        // own.
        let name = wl["metadata"]["name"].clone();
        wait_for(
            Duration::from_secs(60),
            "Kueue's worker took the copy",
            || {
                let held = get(&worker, &["workloads.kueue.x-k8s.io", "-n", NS])?;
                let items = held["items"].as_array()?.clone();
                (items.len() == 1
                    && items[0]["metadata"]["name"] == name
                    && items[0]["metadata"]["ownerReferences"][0]["name"] == "mk-i")
                    .then_some(())
            },
        );
        let done = wait_for(
            Duration::from_secs(120),
            "the manager's Job Complete (mirrored from Kueue's worker)",
            || get(m, &["job", "mk-i", "-n", NS]).filter(|j| is_true(j, "Complete")),
        );
        assert_eq!(done["status"]["succeeded"], 1, "{done}");
        wait_for(
            Duration::from_secs(60),
            "the manager's Workload Finished",
            || workload_of(m, NS, "mk-i").filter(|wl| is_true(wl, "Finished")),
        );
    });
    if let Err(e) = outcome {
        let held = get(&worker, &["workloads.kueue.x-k8s.io", "-n", NS]).unwrap_or_default();
        let _ = writeln!(
            std::io::stderr(),
            "manager's Workload: {}\nworker's Workloads: {held}\nworker's Job: {}\n\
             Kueue's log (last lines):\n{}\nbatchgate's log (last lines):\n{}",
            workload_of(m, NS, "mk-i").unwrap_or_default(),
            get(&worker, &["job", "mk-i", "-n", NS]).unwrap_or_default(),
            kueue_manager.log_tail(),
            server
                .stderr
                .lock()
                .unwrap()
                .lines()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .join("\n"),
        );
        std::panic::resume_unwind(e);
    }
}
