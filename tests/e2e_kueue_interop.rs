//! Interop with stock Kueue: Kueue v0.17.1's whole controller manager
//! (`cmd/kueue`, built from the Go module proxy by
//! `tests/cluster/kueue/build.sh manager`, the newest release the proxy
//! serves here) runs with its own CRDs on a second local control plane that
//! the tests of this binary share, with the `batch/job` and
//! `workload.codeflare.dev/appwrapper` integrations on. Its webhooks are not
//! registered (their Service would be in-cluster); its controllers, which
//! the interop is about, run whole.
//!
//! 1. MultiKueue: batchgate's manager dispatches to that cluster as a
//!    worker. Kueue admits the copy batchgate creates, takes it as the
//!    Job's prebuilt Workload, runs the Job on its KWOK nodes; batchgate
//!    mirrors the status back and finishes the Workload on the manager.
//!    Where the versions differ: Kueue before 0.18 reads a job's prebuilt
//!    Workload from the `kueue.x-k8s.io/prebuilt-workload-name` label only,
//!    while Kueue v0.19.2 (and batchgate) write an annotation by default
//!    (`WorkloadIdentifierAnnotations`); with it, the v0.17.1 worker would
//!    make a second Workload for the Job. So this manager runs with that
//!    gate off, as a v0.19.2 manager with v0.17 workers must, and the test
//!    checks the label and that the worker holds one Workload.
//! 2. AppWrapper beside Kueue: batchgate runs with `admission: external`
//!    and only the AppWrapper webhooks registered, standing in for the
//!    AppWrapper operator (as the Helm chart's `besideKueue` installs it).
//!    Kueue makes and admits the Workloads; batchgate runs the lifecycle.

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

/// Kueue's controller manager, killed with the test binary (its parent
/// thread lives as long as the process: see [`spawn_for_life`]).
struct Kueue {
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Kueue {
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        support::last_lines(&text, 60).join("\n")
    }
}

/// The control plane Kueue's manager runs on, shared by this binary's tests.
struct KueueCluster {
    cluster: LocalCluster,
    kueue: Kueue,
}

/// Starts the second control plane with Kueue's CRDs, the AppWrapper CRD
/// and Kueue's manager, once per binary.
fn kueue_cluster() -> &'static KueueCluster {
    static K: std::sync::OnceLock<KueueCluster> = std::sync::OnceLock::new();
    K.get_or_init(|| {
        let kueue = kueue_dir();
        let cluster =
            LocalCluster::start(ClusterOptions::default()).expect("Kueue's control plane starts");
        let crds = kueue.join("src/config/components/crd/bases");
        let aw_crd = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/manifests/crds/workload.codeflare.dev_appwrappers.yaml"
        );
        for f in [crds.to_str().unwrap(), aw_crd] {
            let (ok, out, err) = kubectl(&cluster, &["apply", "--server-side", "-f", f], None);
            assert!(ok, "{out}{err}");
        }
        cluster
            .wait_established(
                &[
                    "crd/workloads.kueue.x-k8s.io",
                    "crd/clusterqueues.kueue.x-k8s.io",
                    "crd/appwrappers.workload.codeflare.dev",
                ],
                Duration::from_secs(120),
            )
            .unwrap();
        namespace(&cluster, "kueue-system");
        let kueue = start_kueue(&cluster, &kueue);
        KueueCluster { cluster, kueue }
    })
}

/// Spawns `cmd` from a thread that lives until the process exits, so the
/// child's PDEATHSIG (sent when the forking *thread* ends) fires only then,
/// not when the test that first asked for it returns.
fn spawn_for_life(mut cmd: Command) -> Child {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        tx.send(cmd.spawn()).unwrap();
        loop {
            std::thread::park();
        }
    });
    rx.recv().unwrap().expect("Kueue's manager starts")
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
             integrations:\n  frameworks: [batch/job, workload.codeflare.dev/appwrapper]\n",
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
    let mut child = spawn_for_life(cmd);
    let k = Kueue { log, _dir: dir };
    // Its controllers are up once it says so; a manager that exits instead
    // fails the test here, with its words.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
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
    let starting = std::thread::spawn(kueue_cluster);
    let m = shared();
    install_crds(m);
    let server = start_with(m, MANAGER_CONFIG);
    wait_webhook_active(m, &namespace(m, "e2e-probe"));
    let KueueCluster {
        cluster: worker,
        kueue: kueue_manager,
    } = starting.join().expect("Kueue's control plane starts");
    for c in [m, worker] {
        namespace(c, NS);
        apply(c, &flavor("mk-flavor", json!({})));
        apply(c, &local_queue(NS, "mk-lq", "mk-cq"));
    }
    apply(
        worker,
        &cluster_queue("mk-cq", &[("mk-flavor", "4", None)], json!({})),
    );

    // The manager: the worker registered, a MultiKueue ClusterQueue.
    create(
        m,
        &kubeconfig_secret("kueue-worker", &embedded_kubeconfig(worker)),
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
            get(worker, &["job", "mk-i", "-n", NS])
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
                let held = get(worker, &["workloads.kueue.x-k8s.io", "-n", NS])?;
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
        let held = get(worker, &["workloads.kueue.x-k8s.io", "-n", NS]).unwrap_or_default();
        let _ = writeln!(
            std::io::stderr(),
            "manager's Workload: {}\nworker's Workloads: {held}\nworker's Job: {}\n\
             Kueue's log (last lines):\n{}\nbatchgate's log (last lines):\n{}",
            workload_of(m, NS, "mk-i").unwrap_or_default(),
            get(worker, &["job", "mk-i", "-n", NS]).unwrap_or_default(),
            kueue_manager.log_tail(),
            support::last_lines(&server.stderr.lock().unwrap(), 40).join("\n"),
        );
        std::panic::resume_unwind(e);
    }
}

const AW_NS: &str = "aw-beside-kueue";

/// Registers only batchgate's AppWrapper webhooks (`mappwrapper.kb.io`,
/// `vappwrapper.kb.io`), as the Helm chart's `besideKueue` renders them:
/// Kueue's own objects and jobs are left to Kueue.
fn register_appwrapper_webhooks(c: &LocalCluster, server: &support::Server) {
    let ca = server.cert_dir.join("ca.crt");
    let text = support::e2e::webhooks_yaml(server.addr, Some(&ca), "Fail", None);
    let mut kept = 0;
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let mut o: serde_json::Value = serde::Deserialize::deserialize(doc).unwrap();
        if o.is_null() {
            continue;
        }
        let hooks: Vec<serde_json::Value> = o["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["name"] == "mappwrapper.kb.io" || w["name"] == "vappwrapper.kb.io")
            .cloned()
            .collect();
        if hooks.is_empty() {
            continue;
        }
        kept += hooks.len();
        o["webhooks"] = json!(hooks);
        apply(c, &o.to_string());
    }
    assert_eq!(
        kept, 2,
        "batchgate webhooks printed no AppWrapper webhooks:\n{text}"
    );
}

fn appwrapper(name: &str, runtime: &str) -> serde_json::Value {
    json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": name, "namespace": AW_NS,
                     "labels": {"kueue.x-k8s.io/queue-name": "aw-lq"}},
        "spec": {"components": [{"template": {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": format!("{name}-job")},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                     "template": {
                        "metadata": {"annotations": {
                            batchgate_localcluster::POD_RUNTIME_ANNOTATION: runtime}},
                        "spec": {"restartPolicy": "Never",
                                 "containers": [{"name": "main", "image": "busybox",
                                                 "resources": {"requests": {"cpu": "1"}}}]}}}}}]},
    })
}

/// Issue 42: upstream Kueue's manager queues and admits AppWrappers whose
/// lifecycle batchgate runs (`admission: external`), with nothing of
/// Kueue's played by the test: Kueue builds the Workload from the pod sets
/// batchgate reports, admits it within its ClusterQueue's quota, writes
/// `podSetInfos` and `spec.suspend: false`; batchgate creates the wrapped
/// Job with them, it runs and succeeds, and Kueue finishes the Workload.
/// A second AppWrapper waits for quota meanwhile; deactivating its
/// Workload makes Kueue evict it (batchgate removes its Job and pods and
/// reports QuotaReserved False, so Kueue gives the quota back), and
/// reactivating it runs it again to Succeeded.
#[test]
fn kueue_admits_appwrappers_whose_lifecycle_batchgate_runs() {
    let k = kueue_cluster();
    let c = &k.cluster;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        "namespace: default\nadmission: external\nintegrations:\n  frameworks: []\n\
         reconciler:\n  leaseDurationSeconds: 15\n",
    )
    .unwrap();
    let server = support::Server::start_in_cluster(
        c.kubeconfig(),
        None,
        &["--config", cfg.to_str().unwrap()],
    );
    server.wait_ready(Duration::from_secs(60));
    register_appwrapper_webhooks(c, &server);
    namespace(c, AW_NS);
    // The AppWrapper webhook answers once a dry run comes back suspended.
    let probe = appwrapper("probe", "1s");
    wait_for(
        Duration::from_secs(60),
        "batchgate's AppWrapper webhook called",
        || {
            let (ok, out, _) = kubectl(
                c,
                &["create", "--dry-run=server", "-o", "json", "-f", "-"],
                Some(&probe.to_string()),
            );
            let stored: serde_json::Value = serde_json::from_str(&out).ok()?;
            (ok && stored["spec"]["suspend"] == true).then_some(())
        },
    );

    // One cpu of quota on a flavor whose node label and toleration Kueue
    // passes to the pods through podSetInfos.
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                "metadata": {"name": "aw-flavor"},
                "spec": {"nodeLabels": {"kubernetes.io/hostname": "kwok-node-1"},
                         "tolerations": [{"key": "e2e.batchgate.dev/aw", "operator": "Exists",
                                          "effect": "NoSchedule"}]}})
        .to_string(),
    );
    apply(
        c,
        &cluster_queue("aw-cq", &[("aw-flavor", "1", None)], json!({})),
    );
    apply(c, &local_queue(AW_NS, "aw-lq", "aw-cq"));

    let aw_get = |name: &str| {
        get(
            c,
            &["appwrappers.workload.codeflare.dev", name, "-n", AW_NS],
        )
    };
    let phase = |name: &str| aw_get(name).map(|a| a["status"]["phase"].clone());
    let create_aw = |aw: serde_json::Value| {
        let (ok, out, err) = kubectl(
            c,
            &["create", "-o", "json", "-f", "-"],
            Some(&aw.to_string()),
        );
        assert!(ok, "{out}{err}");
        let stored: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            stored["spec"]["suspend"], true,
            "stored suspended: {stored}"
        );
    };
    let pods = |name: &str| {
        get(
            c,
            &[
                "pods",
                "-n",
                AW_NS,
                "-l",
                &format!("workload.codeflare.dev/appwrapper={name}"),
            ],
        )
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
    };
    const WAIT: Duration = Duration::from_secs(120);

    let outcome = std::panic::catch_unwind(|| {
        create_aw(appwrapper("first", "8s"));
        // Kueue's Workload, built from the pod set batchgate reported.
        let wl = wait_for(
            WAIT,
            "Kueue's Workload for the first AppWrapper, admitted",
            || workload_of(c, AW_NS, "first").filter(|w| is_true(w, "Admitted")),
        );
        assert!(
            wl["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with("appwrapper-first-"),
            "{wl}"
        );
        assert_eq!(wl["spec"]["podSets"][0]["name"], "first-0", "{wl}");
        assert_eq!(wl["spec"]["podSets"][0]["count"], 1, "{wl}");
        assert_eq!(
            wl["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"], "aw-flavor",
            "{wl}"
        );
        // batchgate created the Job with what Kueue wrote.
        let job = wait_for(WAIT, "the first AppWrapper's Job", || {
            get(c, &["job", "first-job", "-n", AW_NS])
        });
        let t = &job["spec"]["template"];
        assert_eq!(
            t["spec"]["nodeSelector"]["kubernetes.io/hostname"], "kwok-node-1",
            "{job}"
        );
        assert_eq!(
            t["spec"]["tolerations"][0]["key"], "e2e.batchgate.dev/aw",
            "{job}"
        );
        assert_eq!(
            t["metadata"]["labels"]["kueue.x-k8s.io/podset"], "first-0",
            "{job}"
        );
        let pod = wait_for(
            WAIT,
            "the first AppWrapper's pod on its flavor's node",
            || {
                pods("first")
                    .into_iter()
                    .find(|p| p["spec"]["nodeName"].is_string())
            },
        );
        assert_eq!(pod["spec"]["nodeName"], "kwok-node-1", "{pod}");
        wait_for(WAIT, "the first AppWrapper Running", || {
            (phase("first")? == "Running").then_some(())
        });

        // The second waits for the one cpu: Kueue holds its Workload and
        // batchgate keeps it suspended, with no Job.
        create_aw(appwrapper("second", "20s"));
        wait_for(
            WAIT,
            "Kueue's Workload for the second AppWrapper, pending",
            || {
                workload_of(c, AW_NS, "second").filter(|w| {
                    condition(w, "QuotaReserved").is_some_and(|q| q["status"] == "False")
                })
            },
        );
        if phase("first").is_some_and(|p| p == "Running") {
            assert_eq!(phase("second"), Some(json!("Suspended")));
            assert!(get(c, &["job", "second-job", "-n", AW_NS]).is_none());
        }

        // The first succeeds; Kueue finishes its Workload and admits the
        // second.
        wait_for(WAIT, "the first AppWrapper Succeeded", || {
            (phase("first")? == "Succeeded").then_some(())
        });
        wait_for(
            WAIT,
            "Kueue finished the first AppWrapper's Workload",
            || workload_of(c, AW_NS, "first").filter(|w| is_true(w, "Finished")),
        );
        wait_for(WAIT, "the second AppWrapper Running", || {
            (phase("second")? == "Running").then_some(())
        });
        wait_for(WAIT, "the second AppWrapper's pod", || {
            (pods("second").len() == 1).then_some(())
        });

        // Kueue evicts it (its Workload deactivated): batchgate deletes the
        // Job and its pod, Kueue gives the quota back.
        let wl = workload_of(c, AW_NS, "second").unwrap();
        let wl_name = wl["metadata"]["name"].as_str().unwrap().to_string();
        let set_active = |active: bool| {
            let (ok, out, err) = kubectl(
                c,
                &[
                    "patch",
                    "workloads.kueue.x-k8s.io",
                    &wl_name,
                    "-n",
                    AW_NS,
                    "--type=merge",
                    "-p",
                    &json!({"spec": {"active": active}}).to_string(),
                ],
                None,
            );
            assert!(ok, "{out}{err}");
        };
        set_active(false);
        let a = wait_for(WAIT, "the evicted AppWrapper Suspended", || {
            aw_get("second").filter(|a| a["status"]["phase"] == "Suspended")
        });
        assert_eq!(a["spec"]["suspend"], true, "{a}");
        assert!(
            a["spec"]["components"][0].get("podSetInfos").is_none(),
            "Kueue cleared the podSetInfos: {a}"
        );
        assert_eq!(
            condition(&a, "QuotaReserved").map(|q| q["status"].clone()),
            Some(json!("False")),
            "{a}"
        );
        wait_for(WAIT, "its Job and pod gone", || {
            (get(c, &["job", "second-job", "-n", AW_NS]).is_none() && pods("second").is_empty())
                .then_some(())
        });
        let w = wait_for(WAIT, "Kueue released the evicted Workload's quota", || {
            workload_of(c, AW_NS, "second").filter(|w| {
                is_true(w, "Evicted")
                    && condition(w, "QuotaReserved").is_some_and(|q| q["status"] == "False")
            })
        });
        assert_eq!(
            condition(&w, "Evicted").unwrap()["reason"],
            "Deactivated",
            "{w}"
        );

        // Reactivated, Kueue admits it again and it runs to the end.
        set_active(true);
        wait_for(WAIT, "the resumed AppWrapper Running", || {
            (phase("second")? == "Running").then_some(())
        });
        wait_for(WAIT, "the resumed AppWrapper Succeeded", || {
            (phase("second")? == "Succeeded").then_some(())
        });
        wait_for(
            WAIT,
            "Kueue finished the second AppWrapper's Workload",
            || workload_of(c, AW_NS, "second").filter(|w| is_true(w, "Finished")),
        );
        // One Workload each: none made by batchgate, none re-made by Kueue.
        let all = get(c, &["workloads.kueue.x-k8s.io", "-n", AW_NS]).unwrap();
        assert_eq!(all["items"].as_array().unwrap().len(), 2, "{all}");
    });
    if let Err(e) = outcome {
        let _ = writeln!(
            std::io::stderr(),
            "Workloads: {}\nAppWrappers: {}\nKueue's log (last lines):\n{}\nbatchgate's log (last lines):\n{}",
            get(c, &["workloads.kueue.x-k8s.io", "-n", AW_NS]).unwrap_or_default(),
            get(c, &["appwrappers.workload.codeflare.dev", "-n", AW_NS]).unwrap_or_default(),
            k.kueue.log_tail(),
            support::last_lines(&server.stderr.lock().unwrap(), 60).join("\n"),
        );
        std::panic::resume_unwind(e);
    }
}
