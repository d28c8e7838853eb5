//! MultiKueue end to end on three local control planes on this machine: a
//! manager (the binary's shared cluster) and two workers with KWOK nodes,
//! each with its own batchgate. A Job queued on the manager is handed to
//! MultiKueue (its `managedBy` defaulted), copied to both workers, kept on
//! the first that admits it, run there and nowhere else; its status is
//! mirrored to the manager's Job and its Workload finished there. A job
//! deleted on the manager has its worker's objects collected, while a
//! user's own job of the same name on the other worker is left alone. A
//! worker the manager can no longer reach mid-run (its kubeconfig broken,
//! as Kueue's integration tests break it; the worker runs on) has its
//! Workload requeued after `workerLostTimeout` and run on the other; once
//! reachable again, the stale copy and job there are removed. A JobSet,
//! an AppWrapper, a plain pod, a pod group, a StatefulSet and a
//! LeaderWorkerSet are dispatched the same way. One scenario in order,
//! sharing the clusters.
//!
//! The dispatcher is AllAtOnce (the default) until the last step, where
//! the manager is started again with Incremental (one worker per round, in
//! the config's order); External is decided by the same pure step, tested
//! with upstream's tables in `multikueue::dispatch`.

mod support;

use std::time::Duration;

use batchgate_localcluster::{shared, ClusterOptions, LocalCluster, POD_RUNTIME_ANNOTATION};
use serde_json::{json, Value};
use support::{
    e2e::{namespace, wait_webhook_active},
    queueing::*,
    Server,
};

/// The kinds dispatched here, the pod, StatefulSet and LeaderWorkerSet
/// among them (off by default).
const FRAMEWORKS: &str = "integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset, ray.io/rayservice, pod, statefulset, leaderworkerset.x-k8s.io/leaderworkerset]\n";

/// [`FRAMEWORKS`], and short enough for a test: the garbage collector
/// every 5 s, a lost worker's Workload requeued after 20 s.
const MANAGER_CONFIG: &str = concat!(
    "integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset, ray.io/rayservice, pod, statefulset, leaderworkerset.x-k8s.io/leaderworkerset]\n",
    "multiKueue:\n  gcInterval: 5s\n  workerLostTimeout: 20s\n",
    "  externalFrameworks:\n  - name: RayCluster.v1.ray.io\n",
);
const NS: &str = "mk-e2e";
const ORIGIN: &str = "kueue.x-k8s.io/multikueue-origin";

struct World {
    manager: &'static LocalCluster,
    /// The manager's batchgate, to be stopped and started again.
    server: std::sync::Mutex<Option<Server>>,
    workers: [(&'static str, &'static LocalCluster); 2],
}

/// The job kinds' test CRDs (JobSet among them) on a cluster.
fn kind_crds(c: &LocalCluster) {
    let file = format!(
        "{}/tests/fixtures/job-kinds-crds.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let (ok, out, err) = support::e2e::kubectl(c, &["apply", "-f", &file], None);
    assert!(ok, "{out}{err}");
    let lws = format!(
        "{}/tests/fixtures/leaderworkerset-crd.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let (ok, out, err) = support::e2e::kubectl(c, &["apply", "-f", &lws], None);
    assert!(ok, "{out}{err}");
    c.wait_established(
        &[
            "crd/jobsets.jobset.x-k8s.io",
            "crd/rayservices.ray.io",
            "crd/leaderworkersets.leaderworkerset.x-k8s.io",
        ],
        Duration::from_secs(120),
    )
    .unwrap();
}

fn world() -> &'static World {
    static WORLD: std::sync::OnceLock<World> = std::sync::OnceLock::new();
    WORLD.get_or_init(|| {
        // The workers start while the manager does.
        let starting: Vec<_> = ["worker1", "worker2"]
            .into_iter()
            .map(|name| {
                std::thread::spawn(move || {
                    let c = LocalCluster::start(ClusterOptions::default())
                        .unwrap_or_else(|e| panic!("{name}'s control plane starts: {e}"));
                    let c: &'static LocalCluster = Box::leak(Box::new(c));
                    install_crds(c);
                    kind_crds(c);
                    let server = start_with(c, FRAMEWORKS);
                    wait_webhook_active(c, &namespace(c, "e2e-probe"));
                    // The server lives as long as the test binary.
                    std::mem::forget(server);
                    queue_setup(c, "4", false);
                    (name, c)
                })
            })
            .collect();
        let manager = shared();
        install_crds(manager);
        kind_crds(manager);
        let server = start_with(manager, MANAGER_CONFIG);
        wait_webhook_active(manager, &namespace(manager, "e2e-probe"));
        let workers: Vec<(&'static str, &'static LocalCluster)> = starting
            .into_iter()
            .map(|t| t.join().expect("a worker starts"))
            .collect();
        for (name, w) in &workers {
            create(manager, &kubeconfig_secret(name, &embedded_kubeconfig(w)));
            create(manager, &mk_cluster(name, name));
        }
        create(
            manager,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                    "metadata": {"name": "mk-e2e"},
                    "spec": {"clusters": ["worker1", "worker2"]}})
            .to_string(),
        );
        create(
            manager,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                    "metadata": {"name": "mk-e2e"},
                    "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                             "parameters": {"apiGroup": "kueue.x-k8s.io",
                                            "kind": "MultiKueueConfig", "name": "mk-e2e"}}})
            .to_string(),
        );
        queue_setup(manager, "8", true);
        wait_for(
            Duration::from_secs(90),
            "the MultiKueue check Active",
            || {
                get(manager, &["admissioncheck", "mk-e2e"]).filter(|ac| {
                    condition(ac, "Active")
                        .is_some_and(|c| c["status"] == "True" && c["reason"] == "Active")
                })
            },
        );
        World {
            manager,
            server: std::sync::Mutex::new(Some(server)),
            workers: [workers[0], workers[1]],
        }
    })
}

/// A flavor, a ClusterQueue of `cpu` (with the MultiKueue check on the
/// manager) and the LocalQueue `mk-lq` in [`NS`]: the same names on every
/// cluster, as MultiKueue needs.
fn queue_setup(c: &LocalCluster, cpu: &str, manager: bool) {
    namespace(c, NS);
    apply(c, &flavor("mk-flavor", json!({})));
    let checks = if manager {
        json!({"admissionChecksStrategy": {"admissionChecks": [{"name": "mk-e2e"}]}})
    } else {
        json!({})
    };
    apply(
        c,
        &cluster_queue("mk-cq", &[("mk-flavor", cpu, None)], checks),
    );
    apply(c, &local_queue(NS, "mk-lq", "mk-cq"));
}

fn mk_check(wl: &Value) -> Option<&Value> {
    wl["status"]["admissionChecks"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == "mk-e2e")
}

/// The manager's Workload of `job` once its MultiKueue check is Ready on a
/// worker: (the Workload, the worker's name).
fn dispatched(w: &World, job: &str, within: Duration) -> (Value, String) {
    let found = std::panic::catch_unwind(|| {
        wait_for(within, &format!("{job} dispatched to a worker"), || {
            workload_of(w.manager, NS, job).filter(|wl| {
                wl["status"]["clusterName"].is_string()
                    && mk_check(wl).is_some_and(|c| c["state"] == "Ready")
            })
        })
    });
    let wl = found.unwrap_or_else(|e| {
        dump(w, job);
        std::panic::resume_unwind(e)
    });
    let cluster = wl["status"]["clusterName"].as_str().unwrap().to_string();
    (wl, cluster)
}

/// What each cluster holds of `job`: the first thing to read when a step
/// did not happen.
fn dump(w: &World, job: &str) {
    if let Some(server) = w.server.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        let log = server.stderr.lock().unwrap().clone();
        eprintln!("the manager's batchgate (last lines):");
        for l in support::last_lines(&log, 60) {
            eprintln!("{l}");
        }
    }
    eprintln!(
        "manager's Workload: {}",
        workload_of(w.manager, NS, job).unwrap_or_default()
    );
    eprintln!(
        "manager's Job: {}",
        get(w.manager, &["job", job, "-n", NS]).unwrap_or_default()
    );
    for (name, c) in &w.workers {
        let held = get(c, &["workloads.kueue.x-k8s.io", "-n", NS]).unwrap_or_default();
        eprintln!("{name}'s Workloads: {held}");
    }
}

/// The Workload `name` in [`NS`] on a cluster.
fn workload_of_name(c: &LocalCluster, name: &str) -> Value {
    get(c, &["workloads.kueue.x-k8s.io", name, "-n", NS])
        .unwrap_or_else(|| panic!("the Workload {name} is there"))
}

fn worker(w: &World, name: &str) -> &'static LocalCluster {
    w.workers.iter().find(|(n, _)| *n == name).unwrap().1
}

fn other(name: &str) -> &'static str {
    if name == "worker1" {
        "worker2"
    } else {
        "worker1"
    }
}

fn has(c: &LocalCluster, args: &[&str]) -> bool {
    get(c, args).is_some()
}

/// The pods of `job` on a cluster.
fn pods_of(c: &LocalCluster, job: &str) -> usize {
    get(c, &["pods", "-n", NS, "-l", &format!("job-name={job}")])
        .and_then(|l| l["items"].as_array().map(Vec::len))
        .unwrap_or(0)
}

/// The manager's kubeconfig Secret for worker `name` pointed at a port
/// nothing answers (`true`), or put back: the worker runs on, the manager
/// cannot reach it (Kueue's integration tests' `BreakConnection`).
fn connection(m: &LocalCluster, name: &str, worker: &LocalCluster, broken: bool) {
    let mut kubeconfig = embedded_kubeconfig(worker);
    if broken {
        kubeconfig = kubeconfig
            .lines()
            .map(|l| match l.trim_start().strip_prefix("server: ") {
                Some(_) => "    server: https://127.0.0.1:1".to_string(),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
    }
    apply(m, &kubeconfig_secret(name, &kubeconfig));
}

#[test]
fn jobs_run_on_one_worker_are_mirrored_collected_and_requeued_when_their_worker_is_lost() {
    let w = world();
    let m = w.manager;

    // 1. Dispatched, run on exactly one worker, mirrored, finished here
    // (Kueue's jobs_test.go "Should run a job on worker if admitted", "…
    // (ManagedBy)", "should assign the multikueue admission check even
    // before admitted").
    create(m, &job("mk-a", NS, "mk-lq", "500m", "5s", json!({})));
    let early = wait_for(
        Duration::from_secs(60),
        "the MultiKueue check on mk-a's Workload",
        || workload_of(m, NS, "mk-a").filter(|wl| mk_check(wl).is_some()),
    );
    let state = mk_check(&early).unwrap()["state"].clone();
    assert!(
        state == "Pending" || state == "Ready",
        "the check is there from the start: {early}"
    );
    let local = get(m, &["job", "mk-a", "-n", NS]).expect("the Job exists");
    assert_eq!(
        local["spec"]["managedBy"], "kueue.x-k8s.io/multikueue",
        "a Job queued to a MultiKueue ClusterQueue is handed to MultiKueue"
    );
    let (wl, chosen) = dispatched(w, "mk-a", Duration::from_secs(120));
    assert_eq!(
        mk_check(&wl).unwrap()["message"],
        format!("The workload was admitted on \"{chosen}\""),
        "{wl}"
    );
    let remote = wait_for(
        Duration::from_secs(60),
        "the Job created on the chosen worker",
        || get(worker(w, &chosen), &["job", "mk-a", "-n", NS]),
    );
    assert_eq!(
        remote["metadata"]["labels"][ORIGIN], "multikueue",
        "{remote}"
    );
    assert!(remote["spec"].get("managedBy").is_none(), "{remote}");
    assert_eq!(
        remote["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"],
        wl["metadata"]["name"],
        "{remote}"
    );
    let done = wait_for(
        Duration::from_secs(120),
        "the manager's Job Complete (mirrored)",
        || get(m, &["job", "mk-a", "-n", NS]).filter(|j| is_true(j, "Complete")),
    );
    assert_eq!(done["status"]["succeeded"], 1, "{done}");
    assert_eq!(pods_of(m, "mk-a"), 0, "no pod ran on the manager");
    let finished = wait_for(
        Duration::from_secs(60),
        "the manager's Workload Finished",
        || workload_of(m, NS, "mk-a").filter(|wl| is_true(wl, "Finished")),
    );
    assert_eq!(
        condition(&finished, "Finished").unwrap()["reason"],
        "Succeeded"
    );
    let loser = worker(w, other(&chosen));
    wait_for(
        Duration::from_secs(30),
        "the other worker's copy removed",
        || {
            (!has(
                loser,
                &[
                    "workload",
                    wl["metadata"]["name"].as_str().unwrap(),
                    "-n",
                    NS,
                ],
            ))
            .then_some(())
        },
    );
    assert!(
        !has(loser, &["job", "mk-a", "-n", NS]),
        "the Job ran on one worker only"
    );
    assert_eq!(pods_of(loser, "mk-a"), 0, "no pod on the other worker");

    // 2. The manager's Job deleted mid-run: its worker's objects are
    // collected; a user's own Job of that name elsewhere stays (no_gc_test.go
    // "Should remove the worker's workload and job when managers job is
    // deleted").
    create(m, &job("mk-b", NS, "mk-lq", "500m", "10m", json!({})));
    let (wl, chosen) = dispatched(w, "mk-b", Duration::from_secs(120));
    let wl_name = wl["metadata"]["name"].as_str().unwrap().to_string();
    let there = worker(w, &chosen);
    wait_for(
        Duration::from_secs(60),
        "mk-b running on its worker",
        || (pods_of(there, "mk-b") == 1).then_some(()),
    );
    let elsewhere = worker(w, other(&chosen));
    create(
        elsewhere,
        &json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "mk-b", "namespace": NS, "labels": {"owner": "a-user"}},
                "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}]}}}})
        .to_string(),
    );
    let (ok, out, err) = support::e2e::kubectl(m, &["delete", "job", "mk-b", "-n", NS], None);
    assert!(ok, "{out}{err}");
    wait_for(
        Duration::from_secs(90),
        "the worker's Job and Workload of mk-b collected",
        || {
            (!has(there, &["job", "mk-b", "-n", NS])
                && !has(there, &["workload", &wl_name, "-n", NS]))
            .then_some(())
        },
    );
    // Several collections later the user's Job is still there.
    std::thread::sleep(Duration::from_secs(12));
    let theirs = get(elsewhere, &["job", "mk-b", "-n", NS]).expect("the user's own Job is kept");
    assert_eq!(theirs["metadata"]["labels"]["owner"], "a-user");

    // 2b. A JobSet, dispatched through its policy's data alone (jobset_test.go
    // "Should run a jobSet on worker if admitted"). No JobSet
    // operator runs: the test plays it on the worker, writing the
    // Completed condition there; the manager's JobSet gets it mirrored and
    // its Workload finishes.
    create(
        m,
        &json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "mk-js", "namespace": NS,
                         "labels": {"kueue.x-k8s.io/queue-name": "mk-lq"}},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {
                "parallelism": 1, "completions": 1, "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox",
                                    "resources": {"requests": {"cpu": "500m"}}}]}}}}}]}})
        .to_string(),
    );
    let js = get(m, &["jobset", "mk-js", "-n", NS]).expect("the JobSet exists");
    assert_eq!(js["spec"]["managedBy"], "kueue.x-k8s.io/multikueue", "{js}");
    let (_, chosen) = dispatched(w, "mk-js", Duration::from_secs(120));
    let there = worker(w, &chosen);
    let remote = wait_for(
        Duration::from_secs(60),
        "the JobSet created and started on its worker",
        || get(there, &["jobset", "mk-js", "-n", NS]).filter(|j| j["spec"]["suspend"] == false),
    );
    assert_eq!(
        remote["metadata"]["labels"][ORIGIN], "multikueue",
        "{remote}"
    );
    assert!(remote["spec"].get("managedBy").is_none(), "{remote}");
    let (ok, out, err) = support::e2e::kubectl(
        there,
        &[
            "patch",
            "jobset",
            "mk-js",
            "-n",
            NS,
            "--subresource=status",
            "--type=merge",
            "-p",
            &json!({"status": {"conditions": [{"type": "Completed", "status": "True",
              "reason": "AllJobsCompleted", "message": "jobset completed",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
            .to_string(),
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let done = wait_for(
        Duration::from_secs(90),
        "the manager's JobSet Completed (mirrored) and its Workload Finished",
        || {
            let js = get(m, &["jobset", "mk-js", "-n", NS])?;
            let wl = workload_of(m, NS, "mk-js")?;
            (is_true(&js, "Completed") && is_true(&wl, "Finished")).then_some(wl)
        },
    );
    assert_eq!(
        condition(&done, "Finished").unwrap()["reason"],
        "Succeeded",
        "{done}"
    );
    assert!(!has(
        worker(w, other(&chosen)),
        &["jobset", "mk-js", "-n", NS]
    ));

    // 2e. A RayService (Kueue's RayService adapter; its
    // rayservice_multikueue_adapter_test.go cases, on three control planes):
    // handed to MultiKueue by the webhook, copied to one worker without
    // `managedBy` and started there. No KubeRay runs: the test plays it on
    // the worker, reporting the service Ready, which is mirrored here. A
    // Serve config changed here is forwarded to the running copy (Kueue's
    // RemoteSpecSyncer); deleted here, the copy goes too.
    create(
        m,
        &json!({"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "mk-rs", "namespace": NS,
                         "labels": {"kueue.x-k8s.io/queue-name": "mk-lq"}},
            "spec": {"serveConfigV2": "applications: []\n",
                "rayClusterConfig": {"rayVersion": "2.9.0",
                    "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                        {"name": "ray-head", "image": "rayproject/ray",
                         "resources": {"requests": {"cpu": "200m"}}}]}}},
                    "workerGroupSpecs": [{"groupName": "workers", "replicas": 1, "rayStartParams": {},
                        "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray",
                            "resources": {"requests": {"cpu": "200m"}}}]}}}]}}})
        .to_string(),
    );
    let rs = get(m, &["rayservices.ray.io", "mk-rs", "-n", NS]).expect("the RayService exists");
    assert_eq!(rs["spec"]["managedBy"], "kueue.x-k8s.io/multikueue", "{rs}");
    let (_, chosen) = dispatched(w, "mk-rs", Duration::from_secs(120));
    let there = worker(w, &chosen);
    let remote = wait_for(
        Duration::from_secs(60),
        "the RayService created and started on its worker",
        || {
            get(there, &["rayservices.ray.io", "mk-rs", "-n", NS])
                .filter(|r| r["spec"]["rayClusterConfig"]["suspend"] == false)
        },
    );
    assert_eq!(
        remote["metadata"]["labels"][ORIGIN], "multikueue",
        "{remote}"
    );
    assert!(remote["spec"].get("managedBy").is_none(), "{remote}");
    let (ok, out, err) = support::e2e::kubectl(
        there,
        &[
            "patch",
            "rayservices.ray.io",
            "mk-rs",
            "-n",
            NS,
            "--subresource=status",
            "--type=merge",
            "-p",
            &json!({"status": {"conditions": [{"type": "Ready", "status": "True",
              "reason": "NonZeroServeEndpoints", "message": "",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
            .to_string(),
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(
        Duration::from_secs(60),
        "the worker's Ready condition mirrored on the manager",
        || {
            let rs = get(m, &["rayservices.ray.io", "mk-rs", "-n", NS])?;
            is_true(&rs, "Ready").then_some(())
        },
    );
    let (ok, out, err) = support::e2e::kubectl(
        m,
        &[
            "patch",
            "rayservices.ray.io",
            "mk-rs",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec":{"serveConfigV2":"applications:\n  - name: fruit\n"}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(
        Duration::from_secs(60),
        "the new Serve config forwarded to the worker's copy",
        || {
            let r = get(there, &["rayservices.ray.io", "mk-rs", "-n", NS])?;
            (r["spec"]["serveConfigV2"] == "applications:\n  - name: fruit\n").then_some(())
        },
    );
    assert!(!has(
        worker(w, other(&chosen)),
        &["rayservices.ray.io", "mk-rs", "-n", NS]
    ));
    let (ok, out, err) = support::e2e::kubectl(
        m,
        &[
            "delete",
            "rayservices.ray.io",
            "mk-rs",
            "-n",
            NS,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(
        Duration::from_secs(90),
        "the RayService's Workload gone here and its copy gone there",
        || {
            (workload_of(m, NS, "mk-rs").is_none()
                && !has(there, &["rayservices.ray.io", "mk-rs", "-n", NS]))
            .then_some(())
        },
    );

    // 2d. An AppWrapper (Kueue's AppWrapper adapter; appwrapper_test.go
    // "Should run an appwrapper on worker if admitted"): handed to MultiKueue
    // by the webhook, queued here with its pod sets read from its spec
    // (nothing runs it here), copied to one worker without `managedBy`,
    // where that worker's batchgate takes the prebuilt Workload, admits it
    // and runs its Job; the worker's status is mirrored and the Workload
    // finishes here.
    let aw_pods = |c: &LocalCluster| {
        get(
            c,
            &[
                "pods",
                "-n",
                NS,
                "-l",
                "workload.codeflare.dev/appwrapper=mk-aw",
            ],
        )
        .and_then(|l| l["items"].as_array().map(Vec::len))
        .unwrap_or(0)
    };
    create(
        m,
        &json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": "mk-aw", "namespace": NS,
                         "labels": {"kueue.x-k8s.io/queue-name": "mk-lq"}},
            "spec": {"components": [{"template": {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "mk-aw-job"},
                "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                         "template": {
                            "metadata": {"annotations": {POD_RUNTIME_ANNOTATION: "5s"}},
                            "spec": {"restartPolicy": "Never",
                                     "containers": [{"name": "main", "image": "busybox",
                                                     "resources": {"requests": {"cpu": "500m"}}}]}}}}}]}})
        .to_string(),
    );
    let local = get(
        m,
        &["appwrappers.workload.codeflare.dev", "mk-aw", "-n", NS],
    )
    .expect("the AppWrapper exists");
    assert_eq!(
        local["spec"]["managedBy"], "kueue.x-k8s.io/multikueue",
        "{local}"
    );
    let (wl, chosen) = dispatched(w, "mk-aw", Duration::from_secs(120));
    assert_eq!(wl["spec"]["podSets"][0]["count"], 1, "{wl}");
    let there = worker(w, &chosen);
    let remote = wait_for(
        Duration::from_secs(60),
        "the AppWrapper created on its worker",
        || {
            get(
                there,
                &["appwrappers.workload.codeflare.dev", "mk-aw", "-n", NS],
            )
        },
    );
    assert_eq!(
        remote["metadata"]["labels"][ORIGIN], "multikueue",
        "{remote}"
    );
    assert!(remote["spec"].get("managedBy").is_none(), "{remote}");
    // While it runs (its pod takes 5 s), the worker's copy is its AppWrapper's.
    let theirs = wait_for(
        Duration::from_secs(30),
        "the worker's copy taken by its AppWrapper",
        || workload_of(there, NS, "mk-aw"),
    );
    assert_eq!(
        theirs["metadata"]["name"], wl["metadata"]["name"],
        "{theirs}"
    );
    assert_eq!(
        theirs["metadata"]["ownerReferences"][0]["kind"],
        "AppWrapper"
    );
    let done = wait_for(
        Duration::from_secs(180),
        "the manager's AppWrapper Succeeded (mirrored) and its Workload Finished",
        || {
            let aw = get(
                m,
                &["appwrappers.workload.codeflare.dev", "mk-aw", "-n", NS],
            )?;
            let wl = workload_of(m, NS, "mk-aw")?;
            (aw["status"]["phase"] == "Succeeded" && is_true(&wl, "Finished")).then_some(wl)
        },
    );
    assert_eq!(
        condition(&done, "Finished").unwrap()["reason"],
        "Succeeded",
        "{done}"
    );
    assert_eq!(aw_pods(m), 0, "no pod of the AppWrapper ran on the manager");
    assert!(!has(
        worker(w, other(&chosen)),
        &["appwrappers.workload.codeflare.dev", "mk-aw", "-n", NS]
    ));
    assert_eq!(aw_pods(worker(w, other(&chosen))), 0);

    // 2e. A plain pod (Kueue's pod adapter; no `managedBy`; pod_test.go
    // "Should create a pod on worker if admitted"): gated here and
    // never ungated, its copy run on one worker (where it takes the
    // prebuilt Workload), the worker's status mirrored onto it — Succeeded
    // while still gated here — and its Workload finished.
    create(
        m,
        &json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "mk-pod", "namespace": NS,
                         "labels": {"kueue.x-k8s.io/queue-name": "mk-lq"},
                         "annotations": {POD_RUNTIME_ANNOTATION: "5s"}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "500m"}}}]}})
        .to_string(),
    );
    let (_, chosen) = dispatched(w, "mk-pod", Duration::from_secs(120));
    let there = worker(w, &chosen);
    let remote = wait_for(
        Duration::from_secs(60),
        "the pod created on its worker",
        || get(there, &["pod", "mk-pod", "-n", NS]),
    );
    assert_eq!(
        remote["metadata"]["labels"][ORIGIN], "multikueue",
        "{remote}"
    );
    // While it runs (5 s), the worker's copy is its pod's: the pod took it.
    let theirs = wait_for(
        Duration::from_secs(30),
        "the worker's copy taken by its pod",
        || workload_of(there, NS, "mk-pod"),
    );
    assert_eq!(
        theirs["metadata"]["ownerReferences"][0]["kind"], "Pod",
        "{theirs}"
    );
    let done = wait_for(
        Duration::from_secs(120),
        "the manager's pod Succeeded (mirrored) and its Workload Finished",
        || {
            let p = get(m, &["pod", "mk-pod", "-n", NS])?;
            let wl = workload_of(m, NS, "mk-pod")?;
            (p["status"]["phase"] == "Succeeded" && is_true(&wl, "Finished")).then_some(p)
        },
    );
    assert!(
        done["spec"]["nodeName"].is_null(),
        "the manager's pod never ran here: {done}"
    );
    assert_eq!(
        done["spec"]["schedulingGates"][0]["name"], "kueue.x-k8s.io/admission",
        "{done}"
    );
    assert!(!has(
        worker(w, other(&chosen)),
        &["pod", "mk-pod", "-n", NS]
    ));

    // 2f. A pod group of two (Kueue's `syncPodGroup`; pod_test.go "Should
    // create a pod group on worker if admitted"): one Workload, both
    // pods copied to the one worker that admits it, each one's status
    // mirrored onto its twin here, the Workload finished once both are.
    for i in 0..2 {
        create(
            m,
            &json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("mk-grp-{i}"), "namespace": NS,
                             "labels": {"kueue.x-k8s.io/queue-name": "mk-lq",
                                        "kueue.x-k8s.io/pod-group-name": "mk-grp"},
                             "annotations": {POD_RUNTIME_ANNOTATION: "5s",
                                             "kueue.x-k8s.io/pod-group-total-count": "2"}},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "main", "image": "busybox",
                                         "resources": {"requests": {"cpu": "250m"}}}]}})
            .to_string(),
        );
    }
    let (wl, chosen) = dispatched(w, "mk-grp-0", Duration::from_secs(120));
    assert_eq!(wl["metadata"]["name"], "mk-grp", "{wl}");
    let there = worker(w, &chosen);
    wait_for(
        Duration::from_secs(120),
        "both pods Succeeded here (mirrored) and the group's Workload Finished",
        || {
            let done = (0..2).all(|i| {
                get(m, &["pod", &format!("mk-grp-{i}"), "-n", NS]).is_some_and(|p| {
                    p["status"]["phase"] == "Succeeded" && p["spec"]["nodeName"].is_null()
                })
            });
            let wl = workload_of(m, NS, "mk-grp-0")?;
            (done && is_true(&wl, "Finished")).then_some(())
        },
    );
    for i in 0..2 {
        let p = get(there, &["pod", &format!("mk-grp-{i}"), "-n", NS]);
        assert!(
            p.is_none()
                || p.as_ref()
                    .is_some_and(|p| p["metadata"]["labels"][ORIGIN] == "multikueue"),
            "{p:?}"
        );
        assert!(!has(
            worker(w, other(&chosen)),
            &["pod", &format!("mk-grp-{i}"), "-n", NS]
        ));
    }

    // 2g. A StatefulSet (Kueue's StatefulSet adapter; e2e/multikueue
    // baseline "Should sync a StatefulSet to worker if admitted"): one
    // Workload here, the set copied once to the worker that admits it
    // (the manager's UID in its annotation), where it takes the copy of
    // the manager's Workload and its replicas run; its pods here stay
    // gated. Deleted here, it goes from the worker too. KCM's StatefulSet
    // controller runs on every cluster; KWOK runs the pods.
    create(
        m,
        &json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "mk-sts", "namespace": NS,
                         "labels": {"kueue.x-k8s.io/queue-name": "mk-lq"}},
            "spec": {"replicas": 2, "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": "mk-sts"}},
                     "template": {"metadata": {"labels": {"app": "mk-sts"}},
                                  "spec": {"containers": [{"name": "main", "image": "busybox",
                                           "resources": {"requests": {"cpu": "100m"}}}]}}}})
        .to_string(),
    );
    let (wl, chosen) = dispatched(w, "mk-sts", Duration::from_secs(120));
    let there = worker(w, &chosen);
    let local = get(m, &["statefulset", "mk-sts", "-n", NS]).unwrap();
    let remote = wait_for(
        Duration::from_secs(120),
        "the StatefulSet's two replicas ready on its worker",
        || {
            get(there, &["statefulset", "mk-sts", "-n", NS])
                .filter(|s| s["status"]["readyReplicas"] == 2)
        },
    );
    assert_eq!(
        remote["metadata"]["labels"][ORIGIN], "multikueue",
        "{remote}"
    );
    assert_eq!(
        remote["metadata"]["annotations"]["kueue.x-k8s.io/multikueue-origin-uid"],
        local["metadata"]["uid"],
        "{remote}"
    );
    let theirs = get(there, &["workloads.kueue.x-k8s.io", "-n", NS]).unwrap();
    let of_sts: Vec<&Value> = theirs["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| {
            x["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("statefulset-mk-sts"))
        })
        .collect();
    assert_eq!(
        of_sts.len(),
        1,
        "the worker's one Workload is the copy: {theirs}"
    );
    assert_eq!(of_sts[0]["metadata"]["name"], wl["metadata"]["name"]);
    assert!(
        of_sts[0]["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|o| o
                .iter()
                .any(|r| r["kind"] == "StatefulSet" && r["uid"] == remote["metadata"]["uid"])),
        "the worker's set took the copy: {}",
        of_sts[0]
    );
    let here = get(m, &["pods", "-n", NS, "-l", "app=mk-sts"]).unwrap();
    let here = here["items"].as_array().unwrap();
    assert!(!here.is_empty(), "the manager's set made its pods");
    for p in here {
        assert!(p["spec"]["nodeName"].is_null(), "{p}");
        assert_eq!(
            p["spec"]["schedulingGates"][0]["name"], "kueue.x-k8s.io/admission",
            "the manager's pods stay gated: {p}"
        );
    }
    assert!(!has(
        worker(w, other(&chosen)),
        &["statefulset", "mk-sts", "-n", NS]
    ));
    let (ok, out, err) =
        support::e2e::kubectl(m, &["delete", "statefulset", "mk-sts", "-n", NS], None);
    assert!(ok, "{out}{err}");
    wait_for(
        Duration::from_secs(120),
        "the StatefulSet and its Workload copy gone from the worker",
        || {
            let copy = get(there, &["workloads.kueue.x-k8s.io", "-n", NS])?;
            let left = copy["items"]
                .as_array()?
                .iter()
                .any(|x| x["metadata"]["name"] == wl["metadata"]["name"]);
            (!left && !has(there, &["statefulset", "mk-sts", "-n", NS])).then_some(())
        },
    );

    // 2h. A LeaderWorkerSet of two groups (Kueue's LeaderWorkerSet
    // adapter; e2e/multikueue extended "Should dispatch all
    // LeaderWorkerSet workloads to the same worker"): its two Workloads
    // here go to one worker together, where the set is copied once (no
    // Workload named, the manager's UID in its annotation) and the
    // worker's batchgate makes no Workload of its own. No LWS controller
    // runs on any cluster (this test does not play one): what is shown is
    // the dispatch, not the groups' pods. Deleted here, it goes from the
    // worker, with both copies.
    create(
        m,
        &json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "mk-lws", "namespace": NS,
                         "labels": {"kueue.x-k8s.io/queue-name": "mk-lq"}},
            "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2,
                     "workerTemplate": {"spec": {"containers": [{"name": "main", "image": "busybox",
                                        "resources": {"requests": {"cpu": "100m"}}}]}}}}})
        .to_string(),
    );
    let lws = get(m, &["leaderworkerset", "mk-lws", "-n", NS]).unwrap();
    let placed = wait_for(
        Duration::from_secs(120),
        "both of the LeaderWorkerSet's Workloads dispatched",
        || {
            let list = get(m, &["workloads.kueue.x-k8s.io", "-n", NS])?;
            let ours: Vec<Value> = list["items"]
                .as_array()?
                .iter()
                .filter(|x| x["metadata"]["ownerReferences"][0]["name"] == "mk-lws")
                .cloned()
                .collect();
            let ready = ours.iter().all(|x| {
                x["status"]["clusterName"].is_string()
                    && mk_check(x).is_some_and(|c| c["state"] == "Ready")
            });
            (ours.len() == 2 && ready).then_some(ours)
        },
    );
    let chosen = placed[0]["status"]["clusterName"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        placed[1]["status"]["clusterName"], placed[0]["status"]["clusterName"],
        "one worker for the whole set"
    );
    let there = worker(w, &chosen);
    let remote = wait_for(
        Duration::from_secs(60),
        "the LeaderWorkerSet copied to its worker",
        || get(there, &["leaderworkerset", "mk-lws", "-n", NS]),
    );
    assert_eq!(
        remote["metadata"]["labels"][ORIGIN], "multikueue",
        "{remote}"
    );
    assert_eq!(
        remote["metadata"]["annotations"]["kueue.x-k8s.io/multikueue-origin-uid"],
        lws["metadata"]["uid"],
        "{remote}"
    );
    assert!(
        remote["metadata"]["labels"]
            .get("kueue.x-k8s.io/prebuilt-workload-name")
            .is_none(),
        "{remote}"
    );
    let names: Vec<&Value> = placed.iter().map(|x| &x["metadata"]["name"]).collect();
    let theirs = get(there, &["workloads.kueue.x-k8s.io", "-n", NS]).unwrap();
    let of_lws: Vec<&Value> = theirs["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| {
            x["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("leaderworkerset-mk-lws"))
        })
        .collect();
    assert_eq!(
        of_lws.len(),
        2,
        "only the two copies on the worker: {theirs}"
    );
    assert!(of_lws
        .iter()
        .all(|x| names.contains(&&x["metadata"]["name"])));
    assert!(!has(
        worker(w, other(&chosen)),
        &["leaderworkerset", "mk-lws", "-n", NS]
    ));
    let (ok, out, err) =
        support::e2e::kubectl(m, &["delete", "leaderworkerset", "mk-lws", "-n", NS], None);
    assert!(ok, "{out}{err}");
    wait_for(
        Duration::from_secs(120),
        "the LeaderWorkerSet and both copies gone from the worker",
        || {
            let list = get(there, &["workloads.kueue.x-k8s.io", "-n", NS])?;
            let left = list["items"]
                .as_array()?
                .iter()
                .any(|x| names.contains(&&x["metadata"]["name"]));
            (!left && !has(there, &["leaderworkerset", "mk-lws", "-n", NS])).then_some(())
        },
    );

    // 2i. An external framework (`multiKueue.externalFrameworks`:
    // RayCluster.v1.ray.io, whose integration is not enabled here;
    // external_job_test.go "Should run a RayCluster on worker if admitted
    // (ManagedBy)"): this test plays the RayCluster's own integration on
    // the manager (it makes the Workload the RayCluster owns) and KubeRay
    // and that integration on the worker (it writes the worker's
    // RayCluster's status and finishes its Workload copy). batchgate's
    // generic adapter copies the RayCluster without `managedBy` or its
    // owner references, mirrors its whole status back, and finishes the
    // manager's Workload when the worker's does.
    let (ok, out, err) = support::e2e::kubectl(
        m,
        &["create", "-f", "-"],
        Some(
            &json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                "metadata": {"name": "mk-ray", "namespace": NS,
                             "labels": {"kueue.x-k8s.io/queue-name": "mk-lq"}},
                "spec": {"managedBy": "kueue.x-k8s.io/multikueue",
                         "headGroupSpec": {"template": {"spec": {"containers": [
                             {"name": "head", "image": "ray"}]}}}}})
            .to_string(),
        ),
    );
    assert!(ok, "{out}{err}");
    let ray = get(m, &["raycluster", "mk-ray", "-n", NS]).unwrap();
    create(
        m,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "raycluster-mk-ray", "namespace": NS,
                         "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                              "name": "mk-ray", "uid": ray["metadata"]["uid"],
                                              "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"queueName": "mk-lq", "podSets": [{"name": "head", "count": 1,
                     "template": {"spec": {"containers": [{"name": "head", "image": "ray",
                         "resources": {"requests": {"cpu": "100m"}}}]}}}]}})
        .to_string(),
    );
    let (_, chosen) = dispatched(w, "mk-ray", Duration::from_secs(120));
    let there = worker(w, &chosen);
    let remote = wait_for(
        Duration::from_secs(60),
        "the RayCluster created on its worker",
        || get(there, &["raycluster", "mk-ray", "-n", NS]),
    );
    assert!(remote["spec"].get("managedBy").is_none(), "{remote}");
    assert!(
        remote["metadata"].get("ownerReferences").is_none(),
        "{remote}"
    );
    assert_eq!(
        remote["metadata"]["labels"][ORIGIN], "multikueue",
        "{remote}"
    );
    assert_eq!(
        remote["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"],
        "raycluster-mk-ray",
        "{remote}"
    );
    let mut ready = remote.clone();
    ready["status"] = json!({"state": "ready"});
    let (ok, out, err) = support::e2e::kubectl(
        there,
        &["replace", "--subresource=status", "-f", "-"],
        Some(&ready.to_string()),
    );
    assert!(ok, "{out}{err}");
    wait_for(
        Duration::from_secs(60),
        "the worker's RayCluster status mirrored to the manager's",
        || get(m, &["raycluster", "mk-ray", "-n", NS]).filter(|r| r["status"]["state"] == "ready"),
    );
    let copy = workload_of_name(there, "raycluster-mk-ray");
    let mut finished = copy.clone();
    let conditions = finished["status"]["conditions"].as_array_mut().unwrap();
    conditions.push(
        json!({"type": "Finished", "status": "True", "reason": "Succeeded",
        "message": "played by the test", "lastTransitionTime": "2026-01-01T00:00:00Z"}),
    );
    let (ok, out, err) = support::e2e::kubectl(
        there,
        &["replace", "--subresource=status", "-f", "-"],
        Some(&finished.to_string()),
    );
    assert!(ok, "{out}{err}");
    wait_for(
        Duration::from_secs(60),
        "the manager's Workload Finished with the worker's reason",
        || {
            workload_of(m, NS, "mk-ray").filter(|wl| {
                condition(wl, "Finished")
                    .is_some_and(|c| c["status"] == "True" && c["reason"] == "Succeeded")
            })
        },
    );
    assert!(!has(
        worker(w, other(&chosen)),
        &["raycluster", "mk-ray", "-n", NS]
    ));

    // 2j. A remote object changed by hand: the worker's Job deleted
    // mid-run (its Workload copy, which it controls, goes with it). The
    // manager finds its admitting copy gone, sets the check to Retry
    // ("Admitting remote no longer exists"), the Workload is requeued and
    // dispatched again: the Job runs once more, never twice at once, and
    // completes here; one Workload throughout.
    create(m, &job("mk-h", NS, "mk-lq", "500m", "10s", json!({})));
    let (wl, chosen) = dispatched(w, "mk-h", Duration::from_secs(120));
    let there = worker(w, &chosen);
    let first = wait_for(
        Duration::from_secs(60),
        "mk-h created on its worker",
        || get(there, &["job", "mk-h", "-n", NS]),
    );
    assert!(
        first["status"]["succeeded"].as_i64().unwrap_or(0) == 0,
        "the premise: deleted before it finished: {first}"
    );
    let (ok, out, err) = support::e2e::kubectl(there, &["delete", "job", "mk-h", "-n", NS], None);
    assert!(ok, "{out}{err}");
    assert!(
        !get(m, &["job", "mk-h", "-n", NS]).is_some_and(|j| is_true(&j, "Complete")),
        "the premise: not Complete here when its worker's Job went"
    );
    let mut both = false;
    let done = wait_for(
        Duration::from_secs(180),
        "mk-h Complete on the manager after its worker's Job was deleted",
        || {
            let running = w
                .workers
                .iter()
                .filter(|(_, c)| {
                    get(c, &["job", "mk-h", "-n", NS])
                        .is_some_and(|j| j["status"]["active"].as_i64().unwrap_or(0) > 0)
                })
                .count();
            both |= running > 1;
            get(m, &["job", "mk-h", "-n", NS]).filter(|j| is_true(j, "Complete"))
        },
    );
    assert!(!both, "the Job never ran on both workers at once");
    assert_eq!(done["status"]["succeeded"], 1, "{done}");
    let now = workload_of(m, NS, "mk-h").unwrap();
    assert_eq!(
        now["metadata"]["uid"], wl["metadata"]["uid"],
        "one Workload"
    );

    // 2c. The manager's batchgate stops between the worker's job being
    // created and its status being copied, and starts again: the job is
    // neither created twice nor lost, and finishes on the manager.
    create(m, &job("mk-d", NS, "mk-lq", "500m", "20s", json!({})));
    let (wl, chosen) = dispatched(w, "mk-d", Duration::from_secs(120));
    let there = worker(w, &chosen);
    let first = wait_for(
        Duration::from_secs(60),
        "mk-d created on its worker",
        || get(there, &["job", "mk-d", "-n", NS]),
    );
    drop(w.server.lock().unwrap().take());
    std::thread::sleep(Duration::from_secs(3));
    let restarted = start_with(m, MANAGER_CONFIG);
    *w.server.lock().unwrap() = Some(restarted);
    let done = wait_for(
        Duration::from_secs(120),
        "mk-d Complete on the manager after the restart",
        || get(m, &["job", "mk-d", "-n", NS]).filter(|j| is_true(j, "Complete")),
    );
    assert_eq!(done["status"]["succeeded"], 1, "{done}");
    let wls = get(m, &["workloads.kueue.x-k8s.io", "-n", NS]).unwrap();
    let of_d = wls["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["metadata"]["ownerReferences"][0]["name"] == "mk-d")
        .count();
    assert_eq!(of_d, 1, "one Workload for mk-d");
    assert_eq!(
        workload_of(m, NS, "mk-d").unwrap()["metadata"]["uid"],
        wl["metadata"]["uid"]
    );
    if let Some(now) = get(there, &["job", "mk-d", "-n", NS]) {
        assert_eq!(
            now["metadata"]["uid"], first["metadata"]["uid"],
            "not created again"
        );
    }
    assert!(!has(worker(w, other(&chosen)), &["job", "mk-d", "-n", NS]));

    // 2c. An elastic Job scaled while it runs on a worker (Kueue's
    // test/integration/multikueue/elasticjob_test.go "Should run an
    // ElasticJob on worker if admitted", here with real schedulers on both
    // sides): 1 -> 2 makes a new slice on the manager, admitted onto the
    // worker the job runs on and only there; the worker admits its copy
    // as a replacement (only what it adds counted) and finishes the old
    // copy; the worker's Job takes parallelism 2 and the new slice as its
    // prebuilt Workload, and both pods run there. 2 -> 1 shrinks the slice
    // and the worker's Job in place, with no new slice anywhere.
    elastic_job_follows_its_slices(w);

    // 3. The manager loses the worker running a Job (its kubeconfig now
    // points nowhere; the worker runs on): after workerLostTimeout the
    // Workload is requeued and runs on the other worker (jobs_test.go
    // "Should requeue the workload with a delay when the connection to the
    // admitting worker is lost", "should keep multikueue admission check
    // reference and properly clean up the remote workload when the
    // connection to an admitting worker is lost").
    create(m, &job("mk-c", NS, "mk-lq", "500m", "10m", json!({})));
    let (wl, first) = dispatched(w, "mk-c", Duration::from_secs(120));
    let wl_name = wl["metadata"]["name"].as_str().unwrap().to_string();
    let lost = worker(w, &first);
    wait_for(
        Duration::from_secs(60),
        "mk-c running on its worker",
        || (pods_of(lost, "mk-c") == 1).then_some(()),
    );
    connection(m, &first, lost, true);
    let second = other(&first);
    let moved = std::panic::catch_unwind(|| {
        wait_for(
            Duration::from_secs(180),
            "mk-c requeued and dispatched to the other worker",
            || {
                workload_of(m, NS, "mk-c").filter(|wl| {
                    wl["status"]["clusterName"] == second
                        && mk_check(wl).is_some_and(|c| c["state"] == "Ready")
                })
            },
        )
    });
    connection(m, &first, lost, false);
    let moved = moved.unwrap_or_else(|e| {
        dump(w, "mk-c");
        std::panic::resume_unwind(e)
    });
    assert!(
        condition(&moved, "Requeued").is_some(),
        "the Workload went back to its queue: {moved}"
    );
    let now_there = worker(w, second);
    let running = std::panic::catch_unwind(|| {
        wait_for(
            Duration::from_secs(60),
            "mk-c running on the other worker",
            || (pods_of(now_there, "mk-c") == 1).then_some(()),
        )
    });
    if let Err(e) = running {
        dump(w, "mk-c");
        let pods = get(now_there, &["pods", "-n", NS]).unwrap_or_default();
        eprintln!("{second}'s pods: {pods}");
        std::panic::resume_unwind(e);
    }
    // Back again, the lost worker's stale Job and copy are removed: the
    // Job does not run twice.
    // The Secret put back, it reconnects at once.
    wait_for(
        Duration::from_secs(180),
        "the returned worker's stale mk-c removed",
        || {
            (!has(lost, &["job", "mk-c", "-n", NS])
                && !has(lost, &["workload", &wl_name, "-n", NS]))
            .then_some(())
        },
    );

    // 3b. A worker added to the config is tried at once (dispatcher_test.go
    // "should re-evaluate existing workload when worker2 is added to
    // config"): with the config naming worker1 alone, whose ClusterQueue is
    // made too small, a 2-cpu Job waits there; once worker2 is added, it is
    // copied there and runs.
    let set_workers = |clusters: &[&str]| {
        let (ok, out, err) = support::e2e::kubectl(
            m,
            &[
                "patch",
                "multikueueconfig",
                "mk-e2e",
                "--type=merge",
                "-p",
                &json!({"spec": {"clusters": clusters}}).to_string(),
            ],
            None,
        );
        assert!(ok, "{out}{err}");
    };
    let first = worker(w, "worker1");
    set_workers(&["worker1"]);
    apply(
        first,
        &cluster_queue("mk-cq", &[("mk-flavor", "1", None)], json!({})),
    );
    create(m, &job("mk-f", NS, "mk-lq", "2", "5s", json!({})));
    let waiting = wait_for(
        Duration::from_secs(60),
        "mk-f's copy waiting on worker1 (its ClusterQueue too small)",
        || {
            let wl = workload_of(m, NS, "mk-f")?;
            let name = wl["metadata"]["name"].as_str()?.to_string();
            let copy = get(first, &["workload", &name, "-n", NS])?;
            (!is_true(&copy, "QuotaReserved")).then_some(name)
        },
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !has(worker(w, "worker2"), &["workload", &waiting, "-n", NS]),
        "worker2 is not in the config yet"
    );
    set_workers(&["worker1", "worker2"]);
    let (_, chosen) = dispatched(w, "mk-f", Duration::from_secs(60));
    assert_eq!(chosen, "worker2", "the worker added admits it");
    wait_for(
        Duration::from_secs(120),
        "mk-f Complete on the manager",
        || get(m, &["job", "mk-f", "-n", NS]).filter(|j| is_true(j, "Complete")),
    );
    apply(
        first,
        &cluster_queue("mk-cq", &[("mk-flavor", "4", None)], json!({})),
    );

    // 4. The Incremental dispatcher: the manager started again with it,
    // one worker per round in the config's order. A Job is nominated to
    // worker1 alone, copied there only and runs there (dispatcher_test.go
    // "Should run a job on worker if admitted (ManagedBy)", Incremental).
    drop(w.server.lock().unwrap().take());
    std::thread::sleep(Duration::from_secs(3));
    let incremental = format!(
        "{MANAGER_CONFIG}  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental\n  \
         incrementalDispatcherConfig:\n    stepSize: 1\n"
    );
    *w.server.lock().unwrap() = Some(start_with(m, &incremental));
    create(m, &job("mk-e", NS, "mk-lq", "500m", "5s", json!({})));
    let (wl, chosen) = dispatched(w, "mk-e", Duration::from_secs(120));
    assert_eq!(
        chosen, "worker1",
        "the first round nominates the config's first worker"
    );
    let name = wl["metadata"]["name"].as_str().unwrap();
    let second = worker(w, "worker2");
    assert!(
        !has(second, &["workload", name, "-n", NS]),
        "no copy on worker2"
    );
    wait_for(
        Duration::from_secs(120),
        "mk-e Complete on the manager",
        || get(m, &["job", "mk-e", "-n", NS]).filter(|j| is_true(j, "Complete")),
    );
    assert!(
        !has(second, &["job", "mk-e", "-n", NS]),
        "mk-e ran on worker1 only"
    );
}

/// The Workloads of `job` in [`NS`] on a cluster, oldest first.
fn slices_of(c: &LocalCluster, job: &str) -> Vec<Value> {
    let mut list: Vec<Value> = get(c, &["workloads.kueue.x-k8s.io", "-n", NS])
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|w| {
            w["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&format!("job-{job}-")))
        })
        .collect();
    list.sort_by_key(|w| {
        w["metadata"]["creationTimestamp"]
            .as_str()
            .map(String::from)
    });
    list
}

/// The cpu a ClusterQueue's status says it holds.
fn cq_cpu(c: &LocalCluster, cq: &str) -> Option<String> {
    let q = get(c, &["clusterqueue", cq])?;
    q["status"]["flavorsReservation"]
        .as_array()?
        .iter()
        .flat_map(|f| f["resources"].as_array().cloned().unwrap_or_default())
        .find(|r| r["name"] == "cpu")
        .and_then(|r| r["total"].as_str().map(String::from))
}

fn elastic_job_follows_its_slices(w: &World) {
    let m = w.manager;
    let mut manifest: Value =
        serde_json::from_str(&job("mk-el", NS, "mk-lq", "500m", "10m", json!({}))).unwrap();
    manifest["metadata"]["annotations"] = json!({"kueue.x-k8s.io/elastic-job": "true"});
    manifest["spec"]["completions"] = json!(4);
    create(m, &manifest.to_string());
    let (first, chosen) = dispatched(w, "mk-el", Duration::from_secs(120));
    let first_name = first["metadata"]["name"].as_str().unwrap().to_string();
    let there = worker(w, &chosen);
    let elsewhere = worker(w, other(&chosen));
    let running = |n: usize| {
        let list = get(there, &["pods", "-n", NS, "-l", "job-name=mk-el"]).unwrap_or_default();
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let up = items
            .iter()
            .filter(|p| {
                p["status"]["phase"] == "Running"
                    && p["spec"]["schedulingGates"]
                        .as_array()
                        .is_none_or(|g| g.is_empty())
            })
            .count();
        (up == n).then_some(())
    };
    let found = std::panic::catch_unwind(|| {
        wait_for(
            Duration::from_secs(90),
            "mk-el's one pod running on its worker",
            || running(1),
        )
    });
    if let Err(e) = found {
        dump(w, "mk-el");
        std::panic::resume_unwind(e);
    }

    let scale = |n: i64| {
        let patch = json!({"spec": {"parallelism": n}}).to_string();
        let args = [
            "patch",
            "job",
            "mk-el",
            "-n",
            NS,
            "--type=merge",
            "-p",
            &patch,
        ];
        let (ok, out, err) = support::e2e::kubectl(m, &args, None);
        assert!(ok, "{out}{err}");
    };

    // Scale up.
    scale(2);
    let scaled = std::panic::catch_unwind(|| {
        wait_for(
            Duration::from_secs(120),
            "the new slice admitted on the same worker",
            || {
                slices_of(m, "mk-el").into_iter().find(|s| {
                    s["metadata"]["name"] != first_name.as_str()
                        && s["status"]["clusterName"] == chosen.as_str()
                        && mk_check(s).is_some_and(|c| c["state"] == "Ready")
                })
            },
        )
    });
    let second = scaled.unwrap_or_else(|e| {
        dump(w, "mk-el");
        std::panic::resume_unwind(e)
    });
    let second_name = second["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(
        second["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-replacement-for"],
        format!("{NS}/{first_name}"),
        "{second}"
    );
    assert_eq!(second["spec"]["podSets"][0]["count"], 2, "{second}");
    assert_eq!(
        mk_check(&second).unwrap()["message"],
        format!("The workload was admitted on \"{chosen}\""),
    );
    let old = workload_of_name(m, &first_name);
    assert_eq!(
        condition(&old, "Finished").map(|c| c["reason"].clone()),
        Some(json!("WorkloadSliceReplaced")),
        "the manager's first slice is replaced: {old}"
    );
    let remote = wait_for(
        Duration::from_secs(60),
        "the worker's Job at parallelism 2",
        || get(there, &["job", "mk-el", "-n", NS]).filter(|j| j["spec"]["parallelism"] == 2),
    );
    assert_eq!(
        remote["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"],
        second_name.as_str(),
        "the worker's Job runs the new slice: {remote}"
    );
    wait_for(
        Duration::from_secs(90),
        "both of mk-el's pods running on its worker",
        || running(2),
    );
    // The worker admitted its copy as the replacement: the old copy is
    // finished there and only the two pods' cpu is held.
    let copy = workload_of_name(there, &second_name);
    assert!(is_true(&copy, "Admitted"), "{copy}");
    let old_copy = wait_for(
        Duration::from_secs(30),
        "the worker's old copy finished",
        || get(there, &["workload", &first_name, "-n", NS]).filter(|c| is_true(c, "Finished")),
    );
    assert_eq!(
        condition(&old_copy, "Finished").unwrap()["reason"],
        "WorkloadSliceReplaced",
        "{old_copy}"
    );
    wait_for(
        Duration::from_secs(30),
        "the worker's queue holding 1 cpu",
        || (cq_cpu(there, "mk-cq").as_deref() == Some("1")).then_some(()),
    );
    assert!(
        !has(elsewhere, &["job", "mk-el", "-n", NS]),
        "mk-el runs on one worker"
    );
    for name in [&first_name, &second_name] {
        assert!(
            !has(elsewhere, &["workload", name, "-n", NS]),
            "no copy of {name} elsewhere"
        );
    }

    // Scale down: in place.
    scale(1);
    wait_for(
        Duration::from_secs(60),
        "the worker's copy shrunk to 1",
        || {
            get(there, &["workload", &second_name, "-n", NS])
                .filter(|c| c["spec"]["podSets"][0]["count"] == 1)
        },
    );
    wait_for(
        Duration::from_secs(60),
        "the worker's Job at parallelism 1",
        || get(there, &["job", "mk-el", "-n", NS]).filter(|j| j["spec"]["parallelism"] == 1),
    );
    let on_manager = slices_of(m, "mk-el");
    assert_eq!(
        on_manager.len(),
        2,
        "no slice made for a scale-down: {on_manager:?}"
    );
    assert_eq!(
        workload_of_name(m, &second_name)["spec"]["podSets"][0]["count"],
        1
    );
    assert_eq!(
        slices_of(there, "mk-el").len(),
        2,
        "none on the worker either"
    );

    // Deleted: its worker's objects are collected, freeing the quota.
    let (ok, out, err) = support::e2e::kubectl(m, &["delete", "job", "mk-el", "-n", NS], None);
    assert!(ok, "{out}{err}");
    wait_for(
        Duration::from_secs(90),
        "mk-el's worker Job collected",
        || (!has(there, &["job", "mk-el", "-n", NS])).then_some(()),
    );
}
