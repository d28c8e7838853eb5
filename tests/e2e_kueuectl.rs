//! `kubectl kueue` end to end on the local cluster, with batchgate serving
//! the webhook and running the reconciler: every command against real
//! objects, checking what it leaves in the cluster (read back with the real
//! kubectl) as well as what it prints, and once through kubectl's own
//! plugin discovery.

mod support;

use std::{
    collections::BTreeMap,
    path::PathBuf,
    process::{Command, Stdio},
    time::Duration,
};

use batchgate_localcluster::LocalCluster;
use serde_json::{json, Value};
use support::{e2e::namespace, queueing::*};

const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-kueue");

/// PATH with the cluster's kubectl first (for pass-through) and the
/// plugin's directory (for kubectl's plugin discovery).
fn path(c: &LocalCluster) -> String {
    let plugin_dir = PathBuf::from(PLUGIN).parent().unwrap().to_path_buf();
    let mut dirs = vec![c.bin_dir().to_path_buf(), plugin_dir];
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(dirs)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Runs `kubectl-kueue --kubeconfig ... args`: (success, stdout, stderr).
fn kueue(c: &LocalCluster, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    use std::io::Write;
    let mut cmd = Command::new(PLUGIN);
    cmd.arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(args)
        .env("PATH", path(c))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let (Some(s), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(s.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(c: &LocalCluster, args: &[&str]) -> String {
    let (ok, out, err) = kueue(c, args, None);
    assert!(ok, "kubectl-kueue {args:?} failed:\n{out}{err}");
    out
}

/// A kubectl-style table as rows of column name to cell, cut at the
/// header's column offsets (cells may be empty).
fn table(out: &str) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let mut lines = out.lines();
    let header = lines.next().unwrap_or_default();
    let mut starts = Vec::new();
    let mut names = Vec::new();
    let bytes = header.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b' ' && (i == 0 || header[..i].ends_with("  ")) {
            let end = header[i..].find("  ").map_or(header.len(), |e| i + e);
            starts.push(i);
            names.push(header[i..end].to_string());
            i = end;
        } else {
            i += 1;
        }
    }
    let rows = lines
        .map(|l| {
            names
                .iter()
                .enumerate()
                .map(|(k, n)| {
                    let from = starts[k].min(l.len());
                    let to = starts.get(k + 1).copied().unwrap_or(l.len()).min(l.len());
                    (n.clone(), l[from..to].trim().to_string())
                })
                .collect()
        })
        .collect();
    (names, rows)
}

fn row<'a>(
    rows: &'a [BTreeMap<String, String>],
    name: &str,
) -> Option<&'a BTreeMap<String, String>> {
    rows.iter().find(|r| r["NAME"] == name)
}

const CQ_COLUMNS: [&str; 6] = [
    "NAME",
    "COHORT",
    "PENDING WORKLOADS",
    "ADMITTED WORKLOADS",
    "ACTIVE",
    "AGE",
];
const WL_COLUMNS: [&str; 9] = [
    "NAME",
    "JOB TYPE",
    "JOB NAME",
    "LOCALQUEUE",
    "CLUSTERQUEUE",
    "STATUS",
    "POSITION IN QUEUE",
    "EXEC TIME",
    "AGE",
];

/// Creates, lists and checks the three queue kinds; refuses what upstream
/// refuses; dry runs leave nothing behind.
#[test]
fn create_and_list_queues_and_flavors() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-kctl-create");

    // ResourceFlavors.
    let out = ok(
        c,
        &[
            "create",
            "rf",
            "kctl-rf-tainted",
            "--node-labels",
            "instance-type=gpu,zone=a",
            "--node-taints",
            "gpu=true:NoSchedule",
            "--tolerations",
            "gpu=true:NoSchedule,:NoExecute",
        ],
    );
    assert_eq!(
        out,
        "resourceflavor.kueue.x-k8s.io/kctl-rf-tainted created\n"
    );
    let rf = get(c, &["resourceflavors.kueue.x-k8s.io", "kctl-rf-tainted"]).unwrap();
    assert_eq!(
        rf["spec"]["nodeLabels"],
        json!({"instance-type": "gpu", "zone": "a"})
    );
    assert_eq!(
        rf["spec"]["nodeTaints"],
        json!([{"key": "gpu", "value": "true", "effect": "NoSchedule"}])
    );
    assert_eq!(
        rf["spec"]["tolerations"],
        json!([{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
               {"operator": "Exists", "effect": "NoExecute"}])
    );
    let (ok_, _, err) = kueue(c, &["create", "rf", "x", "--node-taints", "a:Bad"], None);
    assert!(!ok_);
    assert_eq!(
        err,
        "Error: invalid taint effect: Bad, unsupported taint effect\n"
    );

    // ClusterQueue: quotas merged into one group, the defaults upstream sets.
    ok(
        c,
        &[
            "create",
            "cq",
            "kctl-cq-full",
            "--cohort",
            "kctl-co",
            "--queuing-strategy",
            "StrictFIFO",
            "--namespace-selector",
            "team=a",
            "--reclaim-within-cohort",
            "Any",
            "--preemption-within-cluster-queue",
            "LowerPriority",
            "--nominal-quota",
            "kctl-rf-tainted:cpu=4;memory=8Gi,kctl-other:cpu=2;memory=4Gi",
            "--borrowing-limit",
            "kctl-rf-tainted:cpu=1;memory=1Gi",
            "--lending-limit",
            "kctl-rf-tainted:cpu=2;memory=2Gi",
        ],
    );
    let cq = get(c, &["clusterqueue", "kctl-cq-full"]).unwrap();
    assert_eq!(cq["spec"]["cohortName"], "kctl-co");
    assert_eq!(cq["spec"]["queueingStrategy"], "StrictFIFO");
    assert_eq!(
        cq["spec"]["namespaceSelector"],
        json!({"matchLabels": {"team": "a"}})
    );
    assert_eq!(cq["spec"]["preemption"]["reclaimWithinCohort"], "Any");
    assert_eq!(
        cq["spec"]["preemption"]["withinClusterQueue"],
        "LowerPriority"
    );
    assert_eq!(
        cq["spec"]["resourceGroups"],
        json!([{"coveredResources": ["cpu", "memory"], "flavors": [
            {"name": "kctl-rf-tainted", "resources": [
                {"name": "cpu", "nominalQuota": "4", "borrowingLimit": "1", "lendingLimit": "2"},
                {"name": "memory", "nominalQuota": "8Gi", "borrowingLimit": "1Gi", "lendingLimit": "2Gi"}]},
            {"name": "kctl-other", "resources": [
                {"name": "cpu", "nominalQuota": "2"}, {"name": "memory", "nominalQuota": "4Gi"}]}]}])
    );
    // Without flags: every namespace, BestEffortFIFO, Never.
    ok(c, &["create", "clusterqueue", "kctl-cq-plain"]);
    let cq = get(c, &["clusterqueue", "kctl-cq-plain"]).unwrap();
    assert_eq!(cq["spec"]["namespaceSelector"], json!({}));
    assert_eq!(cq["spec"]["queueingStrategy"], "BestEffortFIFO");
    assert_eq!(cq["spec"]["preemption"]["reclaimWithinCohort"], "Never");
    assert_eq!(cq["spec"]["preemption"]["withinClusterQueue"], "Never");

    // Upstream's rejections, before anything is sent.
    for (flags, msg) in [
        (
            vec!["--nominal-quota", "f:cpu=0.5"],
            "invalid resources specification",
        ),
        (
            vec!["--nominal-quota", "f:cpu=abc"],
            "invalid resource quota",
        ),
        (
            vec![
                "--nominal-quota",
                "f:cpu=1",
                "--borrowing-limit",
                "f:cpu=1;memory=1",
            ],
            "invalid flavor",
        ),
        (
            vec!["--nominal-quota", "f:cpu=1;memory=1,g:cpu=1"],
            "invalid resource group",
        ),
        (
            vec!["--dry-run", "maybe"],
            r#"invalid dry-run value (maybe). Must be "none", "server", or "client""#,
        ),
    ] {
        let mut a = vec!["create", "cq", "kctl-cq-refused"];
        a.extend(flags);
        let (ok_, out, err) = kueue(c, &a, None);
        assert!(!ok_, "{a:?}: {out}");
        assert_eq!(err, format!("Error: {msg}\n"), "{a:?}");
    }
    assert!(get(c, &["clusterqueue", "kctl-cq-refused"]).is_none());

    // --dry-run=client prints the object and sends nothing.
    let out = ok(
        c,
        &[
            "create",
            "cq",
            "kctl-cq-dry",
            "--dry-run",
            "client",
            "-o",
            "json",
        ],
    );
    let printed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(printed["kind"], "ClusterQueue");
    assert_eq!(printed["metadata"]["name"], "kctl-cq-dry");
    assert_eq!(printed["spec"]["namespaceSelector"], json!({}));
    // --dry-run=server runs the apiserver's validation and persists nothing.
    let out = ok(c, &["create", "cq", "kctl-cq-dry", "--dry-run=server"]);
    assert_eq!(
        out,
        "clusterqueue.kueue.x-k8s.io/kctl-cq-dry created (server dry run)\n"
    );
    assert!(get(c, &["clusterqueue", "kctl-cq-dry"]).is_none());
    let (ok_, _, err) = kueue(
        c,
        &[
            "create",
            "cq",
            "kctl-cq-dry",
            "--queuing-strategy",
            "Sideways",
            "--dry-run=server",
        ],
        None,
    );
    assert!(!ok_);
    assert!(
        err.starts_with("Error: ClusterQueue.kueue.x-k8s.io \"kctl-cq-dry\" is invalid")
            && err.contains("spec.queueingStrategy")
            && err.contains("Unsupported value: \"Sideways\""),
        "{err}"
    );
    let (ok_, _, err) = kueue(
        c,
        &[
            "create",
            "cq",
            "kctl-cq-dry",
            "--nominal-quota",
            "f:cpu=1",
            "--borrowing-limit",
            "f:cpu=1",
            "--dry-run=server",
        ],
        None,
    );
    assert!(!ok_);
    assert!(
        err.contains("borrowingLimit must be nil when cohort is empty"),
        "{err}"
    );
    assert!(get(c, &["clusterqueue", "kctl-cq-dry"]).is_none());

    // LocalQueues: the ClusterQueue must exist and admit the namespace.
    let (ok_, _, err) = kueue(
        c,
        &["-n", &ns, "create", "lq", "kctl-lq", "-c", "kctl-missing"],
        None,
    );
    assert!(!ok_);
    assert_eq!(
        err,
        "Error: clusterqueues.kueue.x-k8s.io \"kctl-missing\" not found\n"
    );
    let (ok_, _, err) = kueue(
        c,
        &["-n", &ns, "create", "lq", "kctl-lq", "-c", "kctl-cq-full"],
        None,
    );
    assert!(!ok_);
    assert!(
        err.contains("does not admit Workloads from namespace"),
        "{err}"
    );
    let out = ok(
        c,
        &["-n", &ns, "create", "lq", "kctl-lq", "-c", "kctl-cq-plain"],
    );
    assert_eq!(out, "localqueue.kueue.x-k8s.io/kctl-lq created\n");
    ok(
        c,
        &[
            "--namespace",
            &ns,
            "create",
            "localqueue",
            "kctl-lq-unknown",
            "-c",
            "kctl-missing",
            "-i",
        ],
    );
    let lq = get(c, &["localqueue", "-n", &ns, "kctl-lq-unknown"]).unwrap();
    assert_eq!(lq["spec"]["clusterQueue"], "kctl-missing");

    // list: upstream's columns; the reconciler's status shows through.
    let (cols, rows) = wait_for(Duration::from_secs(60), "kctl-cq-plain active", || {
        let (cols, rows) = table(&ok(c, &["list", "cq"]));
        row(&rows, "kctl-cq-plain")
            .is_some_and(|r| r["ACTIVE"] == "true")
            .then_some((cols, rows))
    });
    assert_eq!(cols, CQ_COLUMNS);
    let full = row(&rows, "kctl-cq-full").unwrap();
    assert_eq!(full["COHORT"], "kctl-co");
    // kctl-other does not exist: not active.
    assert_eq!(full["ACTIVE"], "false");
    let (_, rows) = table(&ok(c, &["list", "cq", "--active=false"]));
    assert!(row(&rows, "kctl-cq-full").is_some());
    assert!(row(&rows, "kctl-cq-plain").is_none());
    let (ok_, _, err) = kueue(c, &["list", "cq", "--active", "--active=false"], None);
    assert!(!ok_);
    assert_eq!(err, "Error: only one active flag can be provided\n");

    let (cols, rows) = table(&ok(c, &["-n", &ns, "list", "lq"]));
    assert_eq!(
        cols,
        [
            "NAME",
            "CLUSTERQUEUE",
            "PENDING WORKLOADS",
            "ADMITTED WORKLOADS",
            "AGE"
        ]
    );
    assert_eq!(
        row(&rows, "kctl-lq").unwrap()["CLUSTERQUEUE"],
        "kctl-cq-plain"
    );
    assert_eq!(rows.len(), 2);
    let (_, rows) = table(&ok(c, &["-n", &ns, "list", "lq", "-c", "kctl-missing"]));
    assert_eq!(rows.len(), 1);
    let (cols, rows) = table(&ok(c, &["list", "lq", "-A"]));
    assert_eq!(cols[0], "NAMESPACE");
    assert!(rows
        .iter()
        .any(|r| r["NAMESPACE"] == ns && r["NAME"] == "kctl-lq"));

    let (cols, rows) = table(&ok(c, &["list", "rf"]));
    assert_eq!(cols, ["NAME", "NODE LABELS", "AGE"]);
    assert_eq!(
        row(&rows, "kctl-rf-tainted").unwrap()["NODE LABELS"],
        "instance-type=gpu, zone=a"
    );
    let listed: Value = serde_json::from_str(&ok(c, &["list", "rf", "-o", "json"])).unwrap();
    assert!(listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["metadata"]["name"] == "kctl-rf-tainted"));
    let (cols, rows) = table(&ok(c, &["list", "cq", "-o", "wide"]));
    assert_eq!(cols[..6], CQ_COLUMNS);
    assert_eq!(cols[6..], ["STRATEGY", "RESERVING WORKLOADS"]);
    assert_eq!(
        row(&rows, "kctl-cq-full").unwrap()["STRATEGY"],
        "StrictFIFO"
    );
    let yaml = ok(c, &["-n", &ns, "list", "lq", "-o", "yaml"]);
    assert!(
        yaml.contains("kind: LocalQueueList")
            && yaml.contains("apiVersion: kueue.x-k8s.io/v1beta2")
            && yaml.contains("name: kctl-lq")
            && !yaml.contains("managedFields")
            && !yaml.contains("continue:"),
        "{yaml}"
    );
    let (_, _, err) = kueue(c, &["-n", "e2e-kctl-empty", "list", "lq"], None);
    assert_eq!(err, "No resources found in e2e-kctl-empty namespace.\n");

    // Pass-through to kubectl, for the Kueue kinds.
    assert_eq!(
        ok(c, &["get", "cq", "kctl-cq-plain", "-o", "name"]),
        "clusterqueue.kueue.x-k8s.io/kctl-cq-plain\n"
    );
    let out = ok(c, &["-n", &ns, "describe", "lq", "kctl-lq"]);
    assert!(out.contains("kctl-cq-plain"), "{out}");
    ok(
        c,
        &[
            "-n",
            &ns,
            "patch",
            "lq",
            "kctl-lq-unknown",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"patched":"yes"}}}"#,
        ],
    );
    let lq = get(c, &["localqueue", "-n", &ns, "kctl-lq-unknown"]).unwrap();
    assert_eq!(lq["metadata"]["labels"]["patched"], "yes");
    // edit, with an editor that changes nothing.
    let out = Command::new(PLUGIN)
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(["-n", &ns, "edit", "lq", "kctl-lq-unknown"])
        .env("PATH", path(c))
        .env("KUBE_EDITOR", "true")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Edit cancelled, no changes made"),
        "{out:?}"
    );
    ok(c, &["-n", &ns, "delete", "lq", "kctl-lq-unknown"]);
    assert!(get(c, &["localqueue", "-n", &ns, "kctl-lq-unknown"]).is_none());
    // A flavor a ClusterQueue names is held by Kueue's resource-in-use
    // finalizer until no queue does.
    ok(c, &["delete", "rf", "kctl-rf-tainted", "--wait=false"]);
    let held = get(c, &["resourceflavors.kueue.x-k8s.io", "kctl-rf-tainted"]).unwrap();
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    assert_eq!(
        held["metadata"]["finalizers"],
        json!(["kueue.x-k8s.io/resource-in-use"])
    );
    ok(c, &["delete", "cq", "kctl-cq-full"]);
    wait_for(Duration::from_secs(60), "kctl-rf-tainted gone", || {
        get(c, &["resourceflavors.kueue.x-k8s.io", "kctl-rf-tainted"])
            .is_none()
            .then_some(())
    });
}

/// Workloads of real Jobs: positions in queue follow priority (served by
/// the visibility API, read by the plugin); columns (type, job, queues, status,
/// position, exec time), filters; stop and resume of a ClusterQueue seen in
/// `list cq` and in the admissions; stop and resume of a LocalQueue and a
/// Workload; `delete workload` takes the Job and the Workload follows.
#[test]
fn workloads_listed_stopped_resumed_and_deleted() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-kctl-wl");
    apply(
        c,
        &flavor("kctl-on-demand", json!({"instance-type": "on-demand"})),
    );
    ok(
        c,
        &[
            "create",
            "cq",
            "kctl-cq",
            "--nominal-quota",
            "kctl-on-demand:cpu=2",
        ],
    );
    ok(c, &["-n", &ns, "create", "lq", "kctl-lq", "-c", "kctl-cq"]);
    let wl_name = |job: &str| -> String {
        workload_of(c, &ns, job).unwrap()["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // A blocker takes the whole quota first.
    create(c, &job("blocker", &ns, "kctl-lq", "2", "600s", json!({})));
    wait_for(Duration::from_secs(60), "the blocker admitted", || {
        let w = workload_of(c, &ns, "blocker")?;
        is_true(&w, "Admitted").then_some(())
    });
    // Then four, created lowest priority first: the queue orders them by
    // priority, job-0 (40) to job-3 (10).
    for i in (0..4).rev() {
        let class = format!("kctl-p{}", 40 - 10 * i);
        apply(
            c,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": class}, "value": 40 - 10 * i})
            .to_string(),
        );
        create(
            c,
            &job(
                &format!("job-{i}"),
                &ns,
                "kctl-lq",
                "1",
                "600s",
                json!({"kueue.x-k8s.io/priority-class": class}),
            ),
        );
    }
    wait_for(
        Duration::from_secs(90),
        "positions 0 to 3 by priority",
        || {
            let (_, rows) = table(&ok(
                c,
                &["-n", &ns, "list", "workload", "--status", "pending"],
            ));
            let positions: Vec<String> = (0..4)
                .map(|i| {
                    row(&rows, &wl_name(&format!("job-{i}")))
                        .map(|r| r["POSITION IN QUEUE"].clone())
                        .unwrap_or_default()
                })
                .collect();
            (positions == ["0", "1", "2", "3"]).then_some(())
        },
    );
    let blocker = wl_name("blocker");
    let out = ok(c, &["-n", &ns, "delete", "workload", &blocker, "--yes"]);
    assert_eq!(out, "jobs.batch/blocker deleted\n");
    let (cols, rows) = wait_for(
        Duration::from_secs(90),
        "2 admitted, 2 pending with positions",
        || {
            let (cols, rows) = table(&ok(c, &["-n", &ns, "list", "workload"]));
            let admitted = rows.iter().filter(|r| r["STATUS"] == "ADMITTED").count();
            // Fresh positions: the two left are 0 and 1.
            let mut positions: Vec<&str> = rows
                .iter()
                .filter(|r| r["STATUS"] == "PENDING")
                .map(|r| r["POSITION IN QUEUE"].as_str())
                .collect();
            positions.sort();
            let positioned = if positions == ["0", "1"] { 2 } else { 0 };
            let blocker_gone = row(&rows, &blocker).is_none();
            (rows.len() == 4 && blocker_gone && admitted == 2 && positioned == 2)
                .then_some((cols, rows))
        },
    );
    assert_eq!(cols, WL_COLUMNS);
    for (i, r) in ["job-0", "job-1", "job-2", "job-3"].iter().enumerate() {
        let r = row(&rows, &wl_name(r)).unwrap();
        assert_eq!(r["JOB TYPE"], "job");
        assert_eq!(r["JOB NAME"], format!("job-{i}"));
        assert_eq!(r["LOCALQUEUE"], "kctl-lq");
        assert_eq!(r["CLUSTERQUEUE"], "kctl-cq");
        if i < 2 {
            assert_eq!(r["STATUS"], "ADMITTED");
            assert!(r["EXEC TIME"].ends_with('s'), "{r:?}");
            assert_eq!(r["POSITION IN QUEUE"], "");
        } else {
            assert_eq!(r["STATUS"], "PENDING");
            assert_eq!(r["POSITION IN QUEUE"], (i - 2).to_string());
            assert_eq!(r["EXEC TIME"], "");
        }
    }
    // The cluster agrees: two Jobs running, two suspended.
    let running = jobs(c, &ns).iter().filter(|j| !j.1).count();
    assert_eq!(running, 2);

    // Filters.
    let (_, rows) = table(&ok(c, &["-n", &ns, "list", "wl", "--status", "pending"]));
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["STATUS"] == "PENDING"));
    let (_, rows) = table(&ok(c, &["-n", &ns, "list", "kwl", "-c", "kctl-cq"]));
    assert_eq!(rows.len(), 2, "--clusterqueue matches admissions only");
    let (_, rows) = table(&ok(
        c,
        &["-n", &ns, "list", "workload", "--for", "job/job-3"],
    ));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["JOB NAME"], "job-3");
    let (_, rows) = table(&ok(c, &["list", "workload", "-A", "-q", "kctl-lq"]));
    assert!(rows.len() >= 4 && rows.iter().any(|r| r["NAMESPACE"] == ns));
    let (ok_, _, err) = kueue(
        c,
        &["-n", &ns, "list", "workload", "--status", "running"],
        None,
    );
    assert!(!ok_);
    assert_eq!(
        err,
        "Error: invalid status value (running). Must be \"all\", \"pending\", \"admitted\" or \"finished\"\n"
    );
    let listed: Value =
        serde_json::from_str(&ok(c, &["-n", &ns, "list", "workload", "-o", "json"])).unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 4);
    // Paging: one Workload a request gives the same rows.
    let mut cmd_rows = {
        let out = Command::new(PLUGIN)
            .args([
                "--kubeconfig",
                c.kubeconfig().to_str().unwrap(),
                "-n",
                &ns,
                "list",
                "workload",
                "-o",
                "name",
            ])
            .env("KUEUECTL_LIST_REQUEST_LIMIT", "1")
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    cmd_rows.sort();
    assert_eq!(cmd_rows.len(), 4);
    assert!(cmd_rows[0].starts_with("workload.kueue.x-k8s.io/"));

    // list pods --for a Job.
    let out = wait_for(Duration::from_secs(30), "the pod of job-0", || {
        let (ok_, out, _) = kueue(c, &["-n", &ns, "list", "pods", "--for", "job/job-0"], None);
        (ok_ && out.lines().count() == 2).then_some(out)
    });
    let (cols, rows) = table(&out);
    assert_eq!(cols[..3], ["NAME", "READY", "STATUS"]);
    assert!(rows[0]["NAME"].starts_with("job-0-"));

    // Stop the ClusterQueue: not active, admitted Workloads drained.
    let out = ok(c, &["stop", "cq", "kctl-cq"]);
    assert_eq!(out, "clusterqueue.kueue.x-k8s.io/kctl-cq\n");
    assert_eq!(
        get(c, &["clusterqueue", "kctl-cq"]).unwrap()["spec"]["stopPolicy"],
        "HoldAndDrain"
    );
    wait_for(
        Duration::from_secs(60),
        "kctl-cq inactive and drained",
        || {
            let (_, rows) = table(&ok(c, &["list", "cq", "--active=false"]));
            let r = row(&rows, "kctl-cq")?;
            (r["ADMITTED WORKLOADS"] == "0" && cq_counts(c, "kctl-cq")?.1 == 0).then_some(())
        },
    );
    wait_for(Duration::from_secs(60), "every Job suspended", || {
        jobs(c, &ns).iter().all(|j| j.1).then_some(())
    });
    // Resume: active again, two admitted again.
    ok(c, &["resume", "clusterqueue", "kctl-cq"]);
    assert_eq!(
        get(c, &["clusterqueue", "kctl-cq"]).unwrap()["spec"]["stopPolicy"],
        "None"
    );
    wait_for(
        Duration::from_secs(60),
        "kctl-cq active with 2 admitted",
        || {
            let (_, rows) = table(&ok(c, &["list", "cq", "--active=true"]));
            let r = row(&rows, "kctl-cq")?;
            (r["ADMITTED WORKLOADS"] == "2" && r["PENDING WORKLOADS"] == "2").then_some(())
        },
    );
    wait_for(Duration::from_secs(60), "two Jobs running again", || {
        (jobs(c, &ns).iter().filter(|j| !j.1).count() == 2).then_some(())
    });
    ok(
        c,
        &[
            "stop",
            "cq",
            "kctl-cq",
            "--keep-already-running",
            "--dry-run=server",
        ],
    );
    assert_eq!(
        get(c, &["clusterqueue", "kctl-cq"]).unwrap()["spec"]["stopPolicy"],
        "None"
    );

    // LocalQueue.
    ok(
        c,
        &["-n", &ns, "stop", "lq", "kctl-lq", "--keep-already-running"],
    );
    assert_eq!(
        get(c, &["localqueue", "-n", &ns, "kctl-lq"]).unwrap()["spec"]["stopPolicy"],
        "Hold"
    );
    ok(c, &["-n", &ns, "resume", "lq", "kctl-lq"]);
    assert_eq!(
        get(c, &["localqueue", "-n", &ns, "kctl-lq"]).unwrap()["spec"]["stopPolicy"],
        "None"
    );

    // A Workload: spec.active.
    let w3 = wl_name("job-3");
    assert_eq!(
        ok(c, &["-n", &ns, "stop", "workload", &w3]),
        format!("workload.kueue.x-k8s.io/{w3} stopped\n")
    );
    assert_eq!(
        get(c, &["workloads.kueue.x-k8s.io", "-n", &ns, &w3]).unwrap()["spec"]["active"],
        false
    );
    ok(c, &["-n", &ns, "resume", "wl", &w3]);
    assert_eq!(
        get(c, &["workloads.kueue.x-k8s.io", "-n", &ns, &w3]).unwrap()["spec"]["active"],
        true
    );

    // delete workload: the prompt, a refusal, then --yes.
    let w0 = wl_name("job-0");
    let (ok_, out, err) = kueue(c, &["-n", &ns, "delete", "workload", &w0], Some("n\n"));
    assert!(ok_, "{err}");
    assert_eq!(
        out,
        format!(
            "This operation will also delete:\n  - jobs.batch/job-0 associated with the {ns}/{w0} workload\nDo you want to proceed (y/n)? Deletion is canceled\n"
        )
    );
    assert!(get(c, &["job", "-n", &ns, "job-0"]).is_some());
    let out = ok(
        c,
        &["-n", &ns, "delete", "workload", &w0, "--dry-run=server"],
    );
    assert_eq!(out, "jobs.batch/job-0 deleted (server dry run)\n");
    assert!(get(c, &["job", "-n", &ns, "job-0"]).is_some());
    let (ok_, out, _) = kueue(c, &["-n", &ns, "delete", "workload", &w0], Some("y\n"));
    assert!(ok_);
    assert!(out.ends_with("jobs.batch/job-0 deleted\n"), "{out}");
    wait_for(
        Duration::from_secs(60),
        "job-0 and its Workload gone",
        || {
            (get(c, &["job", "-n", &ns, "job-0"]).is_none()
                && get(c, &["workloads.kueue.x-k8s.io", "-n", &ns, &w0]).is_none())
            .then_some(())
        },
    );
    // Its quota goes to the next in line.
    wait_for(Duration::from_secs(60), "2 admitted of 3", || {
        let (_, rows) = table(&ok(c, &["-n", &ns, "list", "workload"]));
        (rows.len() == 3 && rows.iter().filter(|r| r["STATUS"] == "ADMITTED").count() == 2)
            .then_some(())
    });
    // Argument errors, in upstream's words.
    for (args, msg) in [
        (
            vec!["delete", "workload"],
            "requires at least 1 arg(s), only received 0",
        ),
        (
            vec!["delete", "workload", "x", "--all"],
            "name cannot be provided when a selector is specified",
        ),
        (
            vec!["delete", "workload", "x", "-A"],
            "a resource cannot be retrieved by name across all namespaces",
        ),
    ] {
        let (ok_, _, err) = kueue(c, &args, None);
        assert!(!ok_);
        assert_eq!(err, format!("Error: {msg}\n"));
    }
    // An owner-less Workload is deleted itself; --all with --yes takes the rest.
    let lone = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "kctl-lone", "namespace": ns},
        "spec": {"queueName": "kctl-lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}});
    create(c, &lone.to_string());
    let out = ok(c, &["-n", &ns, "delete", "wl", "kctl-lone", "-y"]);
    assert_eq!(out, "workload.kueue.x-k8s.io/kctl-lone deleted\n");
    assert!(get(c, &["workloads.kueue.x-k8s.io", "-n", &ns, "kctl-lone"]).is_none());
    let out = ok(c, &["-n", &ns, "delete", "workload", "--all", "--yes"]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("jobs.batch/")).count(),
        3,
        "{out}"
    );
    wait_for(
        Duration::from_secs(60),
        "every Job and Workload gone",
        || {
            (jobs(c, &ns).is_empty()
                && get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])?["items"]
                    .as_array()?
                    .is_empty())
            .then_some(())
        },
    );
}

/// `kubectl kueue ...` through kubectl's plugin discovery; `version`;
/// `completion`; the `kueuectl` name.
#[test]
fn runs_as_a_kubectl_plugin_and_reports_versions() {
    let e = env();
    let c = e.cluster;
    ok(c, &["create", "cq", "kctl-cq-plugin"]);
    // kubectl takes no flags before a plugin's name: KUBECONFIG instead,
    // which the plugin reads as kubectl does.
    let kubectl = c.bin_dir().join("kubectl");
    let out = Command::new(&kubectl)
        .args(["kueue", "list", "clusterqueue"])
        .env("PATH", path(c))
        .env("KUBECONFIG", c.kubeconfig())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (cols, rows) = table(&stdout);
    assert_eq!(cols, CQ_COLUMNS);
    assert!(row(&rows, "kctl-cq-plugin").is_some());
    let plugins = Command::new(&kubectl)
        .args(["plugin", "list", "--name-only"])
        .env("PATH", path(c))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&plugins.stdout).contains("kubectl-kueue"));

    // A Deployment as manifests/ installs it: its image is reported.
    let _ = c.run_kubectl(&["create", "namespace", "batchgate-system"]);
    apply(
        c,
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "batchgate", "namespace": "batchgate-system"},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "bg"}},
                         "template": {"metadata": {"labels": {"app": "bg"}},
                                      "spec": {"containers": [{"name": "batchgate", "image": "batchgate:e2e"}]}}}})
        .to_string(),
    );
    // The reconciler's Lease carries its version.
    let out = wait_for(Duration::from_secs(30), "the reconciler's version", || {
        let out = ok(c, &["version"]);
        out.contains("Batchgate Reconciler Version: v")
            .then_some(out)
    });
    let version = env!("CARGO_PKG_VERSION");
    assert!(out.contains("\nBatchgate Image: batchgate:e2e\n"), "{out}");
    assert!(
        out.starts_with(&format!("Client Version: v{version}\n")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "Batchgate Reconciler Version: v{version} (lease default/batchgate-reconciler"
        )),
        "{out}"
    );

    let out = ok(c, &["completion", "bash"]);
    assert!(
        out.contains("_kubectl__kueue()") && out.contains("complete -F"),
        "{}",
        &out[..out.len().min(300)]
    );
    // Installed as `kueuectl`, it names itself so.
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("kueuectl");
    std::os::unix::fs::symlink(PLUGIN, &link).unwrap();
    let out = Command::new(&link).arg("--help").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: kueuectl"));
    // No command: the help, exit 0 (as upstream); `help CMD` as cobra's.
    let out = Command::new(PLUGIN).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: kubectl-kueue"));
    let out = Command::new(PLUGIN)
        .args(["help", "stop", "workload"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Aliases:\n  workload, kueueworkload, kueueworkloads, kwl"),
        "{text}"
    );
    assert!(
        text.contains("Examples:\n  # Stop the workload\n"),
        "{text}"
    );
    // kubectl's global flags reach the apiserver: --as impersonates (the
    // apiserver answers for alice), --server/--request-timeout override.
    let (ok_, _, err) = kueue(
        c,
        &["--as", "alice", "--as-group", "team", "list", "cq"],
        None,
    );
    assert!(!ok_);
    assert!(
        err.contains(r#"User "alice" cannot list resource "clusterqueues""#),
        "{err}"
    );
    let (ok_, out, err) = kueue(
        c,
        &[
            "--server",
            "https://127.0.0.1:1",
            "--request-timeout",
            "5s",
            "version",
        ],
        None,
    );
    assert!(!ok_, "version against no apiserver: {out}{err}");
    assert!(out.starts_with("Client Version: v"), "{out}");
    assert!(err.starts_with("Error: "), "{err}");
    // An unknown command is a usage error: exit 1, as cobra's.
    let out = Command::new(PLUGIN).arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}

// ------------------------------------------------------------- goldens

/// The golden files: upstream kueuectl's output for the objects below,
/// written from its printers (see the directory's README).
fn golden(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kueuectl_golden")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Upstream kueuectl (`tests/cluster/kueue/build.sh kueuectl`, which
/// `make test` runs): every golden is checked against it too, side by
/// side. Missing, the test fails: a comparison that is not made must not
/// pass as one that was.
fn upstream_kueuectl() -> PathBuf {
    let path = std::env::var_os("BATCHGATE_UPSTREAM_KUEUECTL")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/batchgate/kueue/v0.17.1/kubectl-kueue"))
        });
    match path.filter(|p| p.is_file()) {
        Some(p) => p,
        None => panic!(
            "upstream kueuectl is not built: run `tests/cluster/kueue/build.sh kueuectl` \
             (or set BATCHGATE_UPSTREAM_KUEUECTL to its path)"
        ),
    }
}

/// Runs a plugin binary: (success, stdout, stderr).
fn run_plugin(bin: &std::path::Path, c: &LocalCluster, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(bin)
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(args)
        .env("PATH", path(c))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What changes from run to run, replaced in place: the AGE and EXEC TIME
/// cells of a table (each padded to its slot, so the layout is still
/// compared byte for byte) and the client version.
fn normalize(out: &str) -> String {
    let mut lines = out.lines();
    let Some(header) = lines.next() else {
        return String::new();
    };
    if let Some(rest) = header.strip_prefix("Client Version: ") {
        let _ = rest;
        return "Client Version: {version}\n".to_string();
    }
    let mut starts = Vec::new();
    let mut names = Vec::new();
    let mut i = 0;
    while i < header.len() {
        if header.as_bytes()[i] != b' ' && (i == 0 || header[..i].ends_with("   ")) {
            let end = header[i..].find("   ").map_or(header.len(), |e| i + e);
            starts.push(i);
            names.push(&header[i..end]);
            i = end;
        } else {
            i += 1;
        }
    }
    let mut text = format!("{header}\n");
    for l in lines {
        let mut line = l.to_string();
        for (k, n) in names.iter().enumerate().rev() {
            let placeholder = match *n {
                "AGE" => "{age}",
                "EXEC TIME" => "{exec}",
                _ => continue,
            };
            let from = starts[k].min(line.len());
            let to = starts
                .get(k + 1)
                .copied()
                .unwrap_or(line.len())
                .min(line.len());
            if line[from..to].trim().is_empty() {
                continue;
            }
            let slot = if k + 1 == names.len() {
                placeholder.to_string()
            } else {
                format!("{placeholder:<width$}", width = to - from)
            };
            line.replace_range(from..to, &slot);
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// `kubectl kueue` and (when built) upstream kueuectl print the golden.
fn both_print(c: &LocalCluster, args: &[&str], file: &str) {
    let want = golden(file);
    let (ok_, out, err) = kueue(c, args, None);
    assert!(ok_, "kubectl-kueue {args:?}: {err}");
    assert_eq!(
        normalize(&out),
        want,
        "kubectl-kueue {args:?} against {file}"
    );
    {
        let up = upstream_kueuectl();
        let (ok_, out, err) = run_plugin(&up, c, args);
        assert!(ok_, "upstream kueuectl {args:?}: {err}");
        assert_eq!(
            normalize(&out),
            want,
            "upstream kueuectl {args:?} against {file}"
        );
    }
}

/// Both print nothing on stdout and the golden on stderr, exit 0.
fn both_print_stderr(c: &LocalCluster, args: &[&str], file: &str) {
    let want = golden(file);
    let mut bins = vec![PathBuf::from(PLUGIN)];
    bins.push(upstream_kueuectl());
    for bin in bins {
        let (ok_, out, err) = run_plugin(&bin, c, args);
        assert!(ok_, "{} {args:?}: {err}", bin.display());
        assert_eq!(
            (out.as_str(), err.as_str()),
            ("", want.as_str()),
            "{} {args:?}",
            bin.display()
        );
    }
}

/// Side by side with upstream kueuectl's formats on the same objects:
/// create, list (each kind, -A), stop/resume, delete, version and the
/// empty-list messages, each compared to a golden file; with upstream
/// kueuectl built, it must print the same goldens.
#[test]
fn golden_outputs_match_upstreams_formats() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "kctl-golden");
    let empty = namespace(c, "kctl-golden-empty");
    let up = upstream_kueuectl();

    // create: upstream on a server dry run first (the objects are made once).
    let creates: [(&[&str], &str); 3] = [
        (
            &[
                "create",
                "rf",
                "golden-rf",
                "--node-labels",
                "zone=a,arch=arm",
            ],
            "create_resourceflavor.txt",
        ),
        (
            &[
                "create",
                "cq",
                "golden-cq",
                "--nominal-quota",
                "golden-rf:cpu=1",
            ],
            "create_clusterqueue.txt",
        ),
        (
            &["-n", &ns, "create", "lq", "golden-lq", "-c", "golden-cq"],
            "create_localqueue.txt",
        ),
    ];
    for (args, file) in creates {
        let want = golden(file);
        let dry = want.replace('\n', " (server dry run)\n");
        let mut with_dry = args.to_vec();
        with_dry.push("--dry-run=server");
        {
            let u = &up;
            let (ok_, out, err) = run_plugin(u, c, &with_dry);
            assert!(ok_, "{err}");
            assert_eq!(out, dry, "upstream {with_dry:?}");
        }
        assert_eq!(ok(c, &with_dry), dry);
        assert_eq!(ok(c, args), want, "{args:?}");
    }

    // Two Jobs (not queued: no queue-name label, suspended) owning two
    // Workloads of fixed names; golden-a admitted, golden-b stopped.
    let mut uids = Vec::new();
    for j in ["golden-job-a", "golden-job-b"] {
        create(
            c,
            &json!({"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": j, "namespace": ns},
                    "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}]}}}})
            .to_string(),
        );
        uids.push(get(c, &["job", "-n", &ns, j]).unwrap()["metadata"]["uid"].clone());
    }
    for (i, (w, active)) in [("golden-a", true), ("golden-b", false)].iter().enumerate() {
        let job = ["golden-job-a", "golden-job-b"][i];
        create(
            c,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": w, "namespace": ns, "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": uids[i]}]},
                "spec": {"queueName": "golden-lq", "active": active, "podSets": [{"name": "main", "count": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}})
            .to_string(),
        );
        if *active {
            wait_for(Duration::from_secs(60), "golden-a admitted", || {
                is_true(
                    &get(c, &["workloads.kueue.x-k8s.io", "-n", &ns, w])?,
                    "Admitted",
                )
                .then_some(())
            });
        }
    }

    // list: every kind, once the queues' counts have settled.
    let lists: [(&[&str], &str); 5] = [
        (&["-n", &ns, "list", "workload"], "list_workload.txt"),
        (
            &["list", "kueueworkloads", "-A", "-q", "golden-lq"],
            "list_workload_all_namespaces.txt",
        ),
        (
            &["list", "cq", "--field-selector", "metadata.name=golden-cq"],
            "list_clusterqueue.txt",
        ),
        (&["-n", &ns, "list", "lq"], "list_localqueue.txt"),
        (
            &["list", "rf", "--field-selector", "metadata.name=golden-rf"],
            "list_resourceflavor.txt",
        ),
    ];
    for (args, file) in lists {
        let want = golden(file);
        wait_for(Duration::from_secs(60), file, || {
            let (ok_, out, _) = kueue(c, args, None);
            (ok_ && normalize(&out) == want).then_some(())
        });
        both_print(c, args, file);
    }
    both_print_stderr(
        c,
        &["-n", &empty, "list", "workload"],
        "list_workload_empty.stderr.txt",
    );
    both_print_stderr(
        c,
        &[
            "list",
            "cq",
            "--field-selector",
            "metadata.name=kctl-golden-none",
        ],
        "list_clusterqueue_empty.stderr.txt",
    );

    // stop / resume: a Workload (spec.active) and a ClusterQueue.
    for (args, file) in [
        (
            vec![
                "-n",
                &ns,
                "stop",
                "workload",
                "golden-b",
                "--dry-run=server",
            ],
            "stop_workload_server_dry_run.txt",
        ),
        (
            vec!["-n", &ns, "stop", "kwl", "golden-b"],
            "stop_workload.txt",
        ),
        (
            vec!["-n", &ns, "resume", "kueueworkloads", "golden-b"],
            "resume_workload.txt",
        ),
        (
            vec!["stop", "cq", "golden-cq", "--keep-already-running"],
            "stop_clusterqueue.txt",
        ),
        (vec!["resume", "cq", "golden-cq"], "resume_clusterqueue.txt"),
    ] {
        both_print(c, &args, file);
    }
    assert_eq!(
        get(c, &["workloads.kueue.x-k8s.io", "-n", &ns, "golden-b"]).unwrap()["spec"]["active"],
        true
    );

    // delete: the owning Job goes (the Workload with it).
    {
        let u = &up;
        let args = [
            "-n",
            &ns,
            "delete",
            "workload",
            "golden-b",
            "--yes",
            "--dry-run=server",
        ];
        let (ok_, out, err) = run_plugin(u, c, &args);
        assert!(ok_, "{err}");
        assert_eq!(
            out,
            golden("delete_workload.txt").replace('\n', " (server dry run)\n")
        );
    }
    assert_eq!(
        ok(c, &["-n", &ns, "delete", "workload", "golden-b", "--yes"]),
        golden("delete_workload.txt")
    );

    // version: the client line (the server lines name batchgate's parts).
    let want = golden("version.txt");
    let out = ok(c, &["version"]);
    assert_eq!(normalize(out.lines().next().unwrap_or_default()), want);
    {
        let u = &up;
        let (_, out, _) = run_plugin(u, c, &["version"]);
        assert_eq!(normalize(&out), want);
    }
}

#[test]
fn normalize_keeps_the_layout_and_masks_times() {
    let out = "NAME   EXEC TIME   AGE\na      5s          12s\nb                  3m\n";
    assert_eq!(
        normalize(out),
        "NAME   EXEC TIME   AGE\na      {exec}      {age}\nb                  {age}\n"
    );
    assert_eq!(
        normalize("Client Version: v0.17.1\n"),
        "Client Version: {version}\n"
    );
}

/// `-o jsonpath|go-template|custom-columns` print what `kubectl get` prints
/// for the same objects, byte for byte, for each kind `list` shows.
#[test]
fn templates_print_as_kubectl_get() {
    use support::e2e::kubectl;
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-kctl-tmpl");
    let sel = "kctl.tmpl/set=yes";
    let labels = json!({"kctl.tmpl/set": "yes"});
    for (name, cohort) in [("kctl-tmpl-a", Some("kctl-tmpl-co")), ("kctl-tmpl-b", None)] {
        let mut cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name, "labels": labels},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
                "flavors": [{"name": "kctl-tmpl-rf", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}});
        if let Some(co) = cohort {
            cq["spec"]["cohortName"] = json!(co);
        }
        apply(c, &cq.to_string());
    }
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "kctl-tmpl-rf", "labels": labels},
        "spec": {"nodeLabels": {"tier": "a"}}})
        .to_string(),
    );
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "kctl-tmpl-rf2", "labels": labels}})
        .to_string(),
    );
    for (lq, cq) in [("lq-a", "kctl-tmpl-a"), ("lq-b", "kctl-tmpl-b")] {
        apply(
            c,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": lq, "namespace": ns, "labels": labels},
            "spec": {"clusterQueue": cq}})
            .to_string(),
        );
    }
    for wl in ["wl-a", "wl-b"] {
        apply(
            c,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": wl, "namespace": ns, "labels": labels},
            "spec": {"queueName": "lq-a", "podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox",
                        "resources": {"requests": {"cpu": "100m"}}}]}}}]}})
            .to_string(),
        );
    }
    let templates = [
        "jsonpath={.items[*].metadata.name}",
        "jsonpath={range .items[*]}{.metadata.name}{\"\\t\"}{.spec.cohortName}{\"\\n\"}{end}",
        "jsonpath={.items[?(@.metadata.name==\"kctl-tmpl-a\")].spec.cohortName}{.items[?(@.metadata.name==\"lq-b\")].spec}",
        "jsonpath={.items[0:1].metadata.labels.kctl\\.tmpl/set} {.items[-1].metadata.name} {.items[*].spec.nope}",
        "jsonpath={.items[*]['metadata.name']}{..clusterQueue}",
        "jsonpath-as-json={.items[*].metadata.name}",
        "go-template={{range .items}}{{.metadata.name}}{{if .spec.cohortName}} cohort={{.spec.cohortName}}{{else}} none{{end}}{{\"\\n\"}}{{end}}",
        "go-template={{range $i, $x := .items}}{{printf \"%d:%s %v|%5.1f\\n\" $i $x.metadata.name $x.metadata.labels 2.25}}{{end}}",
        "go-template={{len .items}} {{range .items -}} {{.metadata.missing}}|{{index .metadata.labels \"kctl.tmpl/set\"}} {{- end}}",
        "go-template={{range .items}}{{with .spec}}{{.nodeLabels}}{{.clusterQueue}}{{end}};{{end}}",
        "custom-columns=NAME:.metadata.name,COHORT:.spec.cohortName,set:{.metadata.labels.kctl\\.tmpl/set},QUEUE:spec.queueName",
    ];
    let kinds: [(&str, &[&str], &[&str]); 4] = [
        (
            "clusterqueues.kueue.x-k8s.io",
            &[],
            &["list", "clusterqueue"],
        ),
        (
            "resourceflavors.kueue.x-k8s.io",
            &[],
            &["list", "resourceflavor"],
        ),
        (
            "localqueues.kueue.x-k8s.io",
            &["-n", &ns],
            &["list", "localqueue"],
        ),
        (
            "workloads.kueue.x-k8s.io",
            &["-n", &ns],
            &["list", "workload"],
        ),
    ];
    for (resource, scope, list) in kinds {
        let mut printed = 0;
        for t in templates {
            let mut kargs = vec!["get", resource, "-l", sel, "-o", t];
            kargs.extend_from_slice(scope);
            let (kok, want, kerr) = kubectl(c, &kargs, None);
            assert!(kok, "kubectl {kargs:?}: {kerr}");
            let mut pargs = list.to_vec();
            pargs.extend_from_slice(scope);
            pargs.extend(["-l", sel, "-o", t]);
            let got = ok(c, &pargs);
            assert_eq!(got, want, "kubectl kueue {pargs:?} vs kubectl {kargs:?}");
            printed += usize::from(!got.is_empty());
        }
        assert!(
            printed >= 9,
            "{resource}: only {printed} templates printed anything"
        );
        // A missing key with --allow-missing-template-keys=false fails as kubectl's.
        let t = "jsonpath={.items[*].nope}";
        let mut kargs = vec![
            "get",
            resource,
            "-l",
            sel,
            "-o",
            t,
            "--allow-missing-template-keys=false",
        ];
        kargs.extend_from_slice(scope);
        let (kok, _, kerr) = kubectl(c, &kargs, None);
        let mut pargs = list.to_vec();
        pargs.extend_from_slice(scope);
        pargs.extend(["-l", sel, "-o", t, "--allow-missing-template-keys=false"]);
        let (pok, _, perr) = kueue(c, &pargs, None);
        assert!(!kok && !pok);
        let first = "error executing jsonpath \"{.items[*].nope}\": Error executing template: nope is not found. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{.items[*].nope}\n";
        assert!(kerr.starts_with(&format!("error: {first}")), "{kerr}");
        assert!(perr.starts_with(&format!("Error: {first}")), "{perr}");
        let t = "go-template={{range .items}}{{.nope}}{{end}}";
        let mut kargs = vec![
            "get",
            resource,
            "-l",
            sel,
            "-o",
            t,
            "--allow-missing-template-keys=false",
        ];
        kargs.extend_from_slice(scope);
        let (_, kout, kerr) = kubectl(c, &kargs, None);
        let mut pargs = list.to_vec();
        pargs.extend_from_slice(scope);
        pargs.extend(["-l", sel, "-o", t, "--allow-missing-template-keys=false"]);
        let (_, pout, perr) = kueue(c, &pargs, None);
        let msg = "error executing template \"{{range .items}}{{.nope}}{{end}}\": template: output:1:18: executing \"output\" at <.nope>: map has no entry for key \"nope\"\n";
        assert!(kerr.ends_with(msg) && perr.ends_with(msg), "{kerr}\n{perr}");
        let head = |s: &str| s.lines().take(3).collect::<Vec<_>>().join("\n");
        assert_eq!(head(&pout), head(&kout));
    }
    // create/stop/resume print through the same printers.
    let out = ok(
        c,
        &[
            "-n",
            &ns,
            "stop",
            "localqueue",
            "lq-b",
            "-o",
            "jsonpath={.metadata.name} {.spec.stopPolicy}",
        ],
    );
    assert_eq!(out, "lq-b HoldAndDrain");
    let out = ok(
        c,
        &[
            "-n",
            &ns,
            "resume",
            "localqueue",
            "lq-b",
            "--template",
            "{{.spec.stopPolicy}}",
        ],
    );
    assert_eq!(out, "None");
    let out = ok(
        c,
        &[
            "create",
            "rf",
            "kctl-tmpl-rf3",
            "-o",
            "go-template={{.kind}}/{{.metadata.name}}",
        ],
    );
    assert_eq!(out, "ResourceFlavor/kctl-tmpl-rf3");

    // --as-user-extra: a service account may impersonate bob only with the
    // extra scopes=allowed; the apiserver refuses any other value.
    apply(
        c,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "kctl-imp", "namespace": ns}})
        .to_string(),
    );
    apply(c, &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "kctl-tmpl-imp"},
        "rules": [
            {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes"], "verbs": ["impersonate"], "resourceNames": ["allowed"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["resourceflavors"], "verbs": ["list"]}]}).to_string());
    apply(c, &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "kctl-tmpl-imp"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kctl-tmpl-imp"},
        "subjects": [{"kind": "ServiceAccount", "name": "kctl-imp", "namespace": ns},
                     {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]}).to_string());
    let (tok_ok, token, err) = kubectl(c, &["create", "token", "kctl-imp", "-n", &ns], None);
    assert!(tok_ok, "{err}");
    let token = token.trim().to_string();
    let as_bob = |extra: &str| {
        kueue(
            c,
            &[
                "--user",
                "kctl-nobody",
                "--token",
                &token,
                "--as",
                "bob",
                "--as-user-extra",
                extra,
                "list",
                "rf",
                "-l",
                sel,
                "-o",
                "name",
            ],
            None,
        )
    };
    wait_for(Duration::from_secs(30), "RBAC for the impersonator", || {
        let (ok_, out, _) = as_bob("scopes=allowed");
        (ok_ && out.contains("kctl-tmpl-rf")).then_some(())
    });
    let (ok_, _, err) = as_bob("scopes=denied");
    assert!(!ok_, "impersonating scopes=denied passed");
    assert!(err.contains("userextras/scopes"), "{err}");
}
