//! docs/install.md, run as written: every command block of it, in order,
//! for each of its four procedures (Helm or plain manifests; certificates
//! managed by batchgate or issued by cert-manager), against one local
//! control plane with cert-manager's controller and CA injector running.
//! Each procedure installs, checks that a queued Job is admitted, grants
//! AppWrapper's kinds, upgrades to a new image, checks again, and
//! uninstalls; the cluster is then exactly as it was before (every object
//! of every listable kind, events aside), so nothing of batchgate's is left
//! and nothing else was removed.
//!
//! What this test plays, because the local control plane has no kubelet
//! and no kube-proxy:
//! - the Deployment's pod: its KWOK pod is scheduled and reported ready,
//!   and for the oldest live one a local batchgate process runs with the
//!   Deployment's arguments and environment, its ConfigMap volume written
//!   to a directory (as a kubelet mounts it), and the installed
//!   ServiceAccount's token (`kubectl create token`). When that pod goes
//!   (a rollout, the uninstall), the process gets SIGTERM and the next
//!   block waits for it to exit, as a pod's deletion waits for its
//!   containers.
//! - the pod network: the two Services the procedure installs are switched
//!   to ExternalName Services naming loopback addresses the process
//!   listens on (127.0.0.2 for the webhook, 127.0.0.3 for the visibility
//!   API, both on the Services' port 443), so the apiserver calls it through
//!   the Service names the webhook configurations and APIServices use, with
//!   the CA the procedure published.
//!
//! The image is not built or pushed here (no registry; KWOK nodes pull
//! nothing): the one block that does it is marked so, and the test checks
//! every other block is run by some procedure.

mod support;

use std::{
    collections::BTreeSet,
    io::Read,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use batchgate_localcluster::{shared_with, ClusterOptions, LocalCluster};
use serde_json::{json, Value};
use support::wait_for;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const BATCHGATE: &str = env!("CARGO_BIN_EXE_batchgate");
const DOC: &str = "docs/install.md";
const NS: &str = "batchgate-system";
const WEBHOOK_IP: &str = "127.0.0.2";
const VISIBILITY_IP: &str = "127.0.0.3";
const PROCEDURES: [&str; 4] = [
    "helm",
    "helm-cert-manager",
    "manifests",
    "manifests-cert-manager",
];
const PHASES: [&str; 5] = ["install", "check", "appwrapper", "upgrade", "uninstall"];

fn cluster() -> &'static LocalCluster {
    shared_with(|| ClusterOptions {
        cert_manager: true,
        ..ClusterOptions::default()
    })
}

/// The procedures share one cluster and its cluster-wide objects: one at a
/// time (a failed one leaves its objects, and the next says so).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The directory of the helm binary the project's script builds.
fn helm_dir() -> String {
    let helm = std::path::Path::new(support::e2e::helm());
    helm.parent().unwrap().display().to_string()
}

// ---------------------------------------------------------------------------
// The document

/// A ```sh block of docs/install.md and the `<!-- test: ... -->` comment
/// on the line before it.
#[derive(Debug, Clone)]
struct Block {
    line: usize,
    marker: String,
    text: String,
}

fn blocks() -> Vec<Block> {
    let doc = std::fs::read_to_string(format!("{ROOT}/{DOC}")).unwrap();
    let lines: Vec<&str> = doc.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("```sh") {
            let marker = i
                .checked_sub(1)
                .map(|p| lines[p].trim())
                .and_then(|l| l.strip_prefix("<!-- test:"))
                .and_then(|l| l.strip_suffix("-->"))
                .map(|l| l.trim().to_string())
                .unwrap_or_else(|| {
                    panic!(
                        "{DOC}:{}: a command block without a `<!-- test: ... -->` line before it",
                        i + 1
                    )
                });
            let start = i + 1;
            let end = (start..lines.len())
                .find(|&j| lines[j].trim_start().starts_with("```"))
                .unwrap_or_else(|| panic!("{DOC}:{}: unterminated block", i + 1));
            out.push(Block {
                line: i + 1,
                marker,
                text: lines[start..end].join("\n"),
            });
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The `NAME=value` pairs of the environment block(s) for `phase`
/// (`install`: `<!-- test: environment -->`; `upgrade`:
/// `<!-- test: environment upgrade -->`).
fn environment(phase: &str) -> Vec<(String, String)> {
    let want = if phase == "install" {
        "environment".to_string()
    } else {
        format!("environment {phase}")
    };
    let mut vars = Vec::new();
    for b in blocks().iter().filter(|b| b.marker == want) {
        for line in b.text.lines() {
            let rest = line.trim().strip_prefix("export ").unwrap_or_else(|| {
                panic!(
                    "{DOC}:{}: only `export` lines in an environment block",
                    b.line
                )
            });
            for pair in rest.split_whitespace() {
                let (k, v) = pair.split_once('=').expect("NAME=value");
                vars.push((k.to_string(), v.to_string()));
            }
        }
    }
    assert!(!vars.is_empty(), "{DOC} has no {want} block");
    vars
}

/// The blocks of one procedure's phase, in the document's order.
fn steps(procedure: &str, phase: &str) -> Vec<Block> {
    let tag = format!("{procedure}/{phase}");
    let found: Vec<Block> = blocks()
        .into_iter()
        .filter(|b| b.marker.split_whitespace().any(|t| t == tag))
        .collect();
    assert!(!found.is_empty(), "{DOC} has no block for {tag}");
    found
}

/// Every block is run by some procedure, or says why not; the tags name
/// procedures and phases that exist.
#[test]
fn every_block_of_the_install_doc_is_run_or_says_why_not() {
    let all = blocks();
    assert!(all.len() > 15, "{DOC}: only {} blocks found", all.len());
    let mut not_run = 0;
    for b in &all {
        if b.marker.starts_with("not run (") && b.marker.ends_with(')') {
            not_run += 1;
            eprintln!("{DOC}:{}: not run: {}", b.line, b.marker);
            continue;
        }
        if b.marker == "environment" || b.marker == "environment upgrade" {
            continue;
        }
        for tag in b.marker.split_whitespace() {
            let (procedure, phase) = tag
                .split_once('/')
                .unwrap_or_else(|| panic!("{DOC}:{}: tag {tag:?} is not procedure/phase", b.line));
            assert!(
                PROCEDURES.contains(&procedure) && PHASES.contains(&phase),
                "{DOC}:{}: unknown tag {tag:?}",
                b.line
            );
        }
    }
    assert_eq!(
        not_run, 2,
        "two blocks are not run: building and pushing the image, and the install beside Kueue"
    );
}

// ---------------------------------------------------------------------------
// Running blocks

fn kubectl(args: &[&str]) -> Result<String, String> {
    let out = cluster()
        .kubectl()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `kubectl get ARGS -o json`.
fn get_json(args: &[&str]) -> Value {
    support::e2e::get_json(cluster(), args)
}

/// Runs one block as a user would paste it: bash with `-e` and `pipefail`,
/// from the checkout's root, with the cluster's kubectl and helm on PATH.
fn run(block: &Block, env: &[(String, String)], pod: &Pod) {
    pod.settle();
    let c = cluster();
    let path = format!(
        "{}:{}:{}",
        c.bin_dir().display(),
        helm_dir(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = Instant::now();
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &block.text])
        .current_dir(ROOT)
        .env("KUBECONFIG", c.kubeconfig())
        .env("PATH", path)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .output()
        .expect("running bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "{DOC}:{} ({:.1} s):\n{}\n{stdout}{stderr}",
        block.line,
        started.elapsed().as_secs_f64(),
        block.text
    );
    if !out.status.success() {
        pod.dump_log();
        panic!(
            "{DOC}:{}: the block failed ({}):\n{stderr}",
            block.line, out.status
        );
    }
    pod.settle();
}

// ---------------------------------------------------------------------------
// The pod and the network, played

struct Played {
    pod: String,
    child: Child,
    dir: tempfile::TempDir,
}

#[derive(Default)]
struct PodState {
    running: Option<Played>,
    starts: usize,
    /// Times the process exited without being told to.
    crashes: usize,
    log: String,
}

/// The Deployment's pod, played by a local process (see the module doc).
#[derive(Clone, Default)]
struct Pod(Arc<Mutex<PodState>>);

impl Pod {
    /// Starts the background loop a kubelet and kube-proxy would be.
    fn start(&self) -> Arc<std::sync::atomic::AtomicBool> {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (pod, flag) = (self.clone(), stop.clone());
        std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                pod.settle();
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        stop
    }

    fn starts(&self) -> usize {
        self.0.lock().unwrap().starts
    }

    fn crashes(&self) -> usize {
        self.0.lock().unwrap().crashes
    }

    /// The pod played now.
    fn playing(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap()
            .running
            .as_ref()
            .map(|p| p.pod.clone())
    }

    /// One pass: the Services pointed at the process's addresses, the
    /// process stopped if its pod is gone, started if a pod has none.
    fn settle(&self) {
        let mut st = self.0.lock().unwrap_or_else(|p| p.into_inner());
        route_services();
        let live = live_pods();
        let ended = st.running.as_mut().map(|p| {
            let exited = p.child.try_wait().ok().flatten().is_some();
            (exited, exited || !live.contains(&p.pod))
        });
        if let Some((exited, ended)) = ended {
            st.crashes += usize::from(exited);
            if ended {
                let mut p = st.running.take().unwrap();
                let status = stop_process(&mut p.child);
                let log = read_log(&p.dir);
                st.log = format!("{}\n--- pod {} ended: {status}\n{log}", st.log, p.pod);
            }
        }
        if st.running.is_none() {
            if let Some(pod) = live.first() {
                if let Some(p) = play(pod) {
                    st.running = Some(p);
                    st.starts += 1;
                }
            }
        }
    }

    fn stop(&self) {
        let mut st = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut p) = st.running.take() {
            stop_process(&mut p.child);
        }
    }

    fn metrics(&self) -> String {
        // Just after a (re)start the port may not be bound yet.
        let mut s = wait_for(
            "the played pod's probes port",
            Duration::from_secs(60),
            || std::net::TcpStream::connect((WEBHOOK_IP, 8081)).ok(),
        );
        std::io::Write::write_all(
            &mut s,
            b"GET /metrics HTTP/1.1\r\nHost: batchgate\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    fn dump_log(&self) {
        let st = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let current = st
            .running
            .as_ref()
            .map(|p| read_log(&p.dir))
            .unwrap_or_default();
        let all = format!("{}\n{current}", st.log);
        eprintln!("batchgate (played pod), last lines:");
        for l in support::last_lines(&all, 60) {
            eprintln!("{l}");
        }
    }
}

fn read_log(dir: &tempfile::TempDir) -> String {
    std::fs::read_to_string(dir.path().join("log")).unwrap_or_default()
}

/// SIGTERM, as the kubelet stops a container, then SIGKILL after the
/// Deployment's grace period.
fn stop_process(child: &mut Child) -> String {
    if let Ok(Some(s)) = child.try_wait() {
        return format!("exited by itself, {s}");
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(s)) = child.try_wait() {
            return format!("stopped by SIGTERM, {s}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    "killed after 30 s".into()
}

/// The Deployment's pods that are not being deleted, oldest first.
fn live_pods() -> Vec<String> {
    let Ok(out) = kubectl(&[
        "get",
        "pods",
        "-n",
        NS,
        "-l",
        "app.kubernetes.io/name=batchgate",
        "-o",
        "json",
    ]) else {
        return Vec::new();
    };
    let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    let mut pods: Vec<(String, String)> = v["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| !p["spec"]["nodeName"].is_null())
        .map(|p| {
            (
                p["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                p["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    pods.sort();
    pods.into_iter().map(|(_, n)| n).collect()
}

/// Points each Service the procedure installed at the address the played
/// process listens on, whenever it is not (an install or upgrade may have
/// written it back).
fn route_services() {
    for (svc, ip) in [
        ("batchgate-webhook", WEBHOOK_IP),
        ("batchgate-visibility", VISIBILITY_IP),
    ] {
        let Ok(out) = kubectl(&["get", "service", svc, "-n", NS, "-o", "json"]) else {
            continue;
        };
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        if v["spec"]["type"] == "ExternalName" && v["spec"]["externalName"] == ip {
            continue;
        }
        let patch = json!({"spec": {"type": "ExternalName", "externalName": ip,
                                    "clusterIP": null, "clusterIPs": null, "selector": null}});
        let _ = kubectl(&[
            "patch",
            "service",
            svc,
            "-n",
            NS,
            "--type=merge",
            "-p",
            &patch.to_string(),
        ]);
    }
}

/// Starts batchgate as the pod `pod` would run it, or `None` while what it
/// needs (its Deployment, ConfigMap, ServiceAccount) is not there yet.
fn play(pod: &str) -> Option<Played> {
    let d: Value = serde_json::from_str(
        &kubectl(&["get", "deployment", "batchgate", "-n", NS, "-o", "json"]).ok()?,
    )
    .ok()?;
    let spec = &d["spec"]["template"]["spec"];
    let container = &spec["containers"][0];
    let dir = tempfile::tempdir().unwrap();
    // Volumes, as the kubelet mounts them: a ConfigMap's keys as files.
    let mut args: Vec<String> = container["args"]
        .as_array()
        .expect("the container's args")
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    for m in container["volumeMounts"].as_array().into_iter().flatten() {
        let name = m["name"].as_str().unwrap();
        let volume = spec["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .expect("the mount's volume");
        let cm = volume["configMap"]["name"]
            .as_str()
            .unwrap_or_else(|| panic!("the play mounts ConfigMap volumes only: {volume}"));
        let data: Value =
            serde_json::from_str(&kubectl(&["get", "configmap", cm, "-n", NS, "-o", "json"]).ok()?)
                .ok()?;
        let at = dir.path().join(name);
        std::fs::create_dir_all(&at).unwrap();
        for (k, v) in data["data"].as_object().into_iter().flatten() {
            std::fs::write(at.join(k), v.as_str().unwrap()).unwrap();
        }
        let mount = m["mountPath"].as_str().unwrap();
        for a in &mut args {
            if let Some(rest) = a.strip_prefix(mount) {
                *a = format!("{}{rest}", at.display());
            }
        }
    }
    // The ServiceAccount's token, as the kubelet projects it.
    let sa = spec["serviceAccountName"].as_str().unwrap();
    let token = kubectl(&["create", "token", sa, "-n", NS, "--duration=2h"]).ok()?;
    let kubeconfig = support::e2e::token_kubeconfig(cluster(), dir.path(), &token, Some(NS));
    let mut cmd = Command::new(BATCHGATE);
    cmd.args(&args)
        // The pod network: the Services' port on the addresses they name.
        .args(["--listen", &format!("{WEBHOOK_IP}:443")])
        .args(["--probe-listen", &format!("{WEBHOOK_IP}:8081")])
        .args(["--visibility-listen", &format!("{VISIBILITY_IP}:443")])
        .env_clear()
        .env("KUBECONFIG", kubeconfig);
    for e in container["env"].as_array().into_iter().flatten() {
        let value = match e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            Some("metadata.name") => pod.to_string(),
            Some("metadata.namespace") => NS.to_string(),
            Some(other) => panic!("the play does not fill fieldRef {other}"),
            None => e["value"].as_str().unwrap_or_default().to_string(),
        };
        cmd.env(e["name"].as_str().unwrap(), value);
    }
    // Gone with the test: a failed procedure leaves no server behind.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let log = std::fs::File::create(dir.path().join("log")).unwrap();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("starting batchgate");
    Some(Played {
        pod: pod.to_string(),
        child,
        dir,
    })
}

// ---------------------------------------------------------------------------
// What a user checks

/// Every object of every listable kind, as `kind namespace/name`; events
/// aside (they come and go on their own).
fn snapshot() -> BTreeSet<String> {
    let kinds = kubectl(&["api-resources", "--verbs=list", "-o", "name"]).expect("api-resources");
    let kinds: Vec<&str> = kinds
        .lines()
        .filter(|k| *k != "events" && *k != "events.events.k8s.io")
        .collect();
    let out = kubectl(&[
        "get",
        &kinds.join(","),
        "--all-namespaces",
        "-o",
        "custom-columns=KIND:.kind,NS:.metadata.namespace,NAME:.metadata.name",
        "--no-headers",
    ])
    .expect("listing every object");
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn reviews(pod: &Pod, webhook: &str) -> f64 {
    pod.metrics()
        .lines()
        .filter(|l| l.starts_with("batchgate_admission_reviews_total{"))
        .filter(|l| l.contains(&format!("webhook=\"{webhook}\"")))
        .filter(|l| l.contains("kind=\"batch/job\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// After the check's blocks: the sample Job was queued through the
/// webhook the procedure registered, and its Workload admitted.
fn assert_admitted_through_the_webhook(pod: &Pod, mutations_before: f64) {
    let job = get_json(&["job", "sample-job", "-n", "default"]);
    assert_eq!(job["spec"]["suspend"], false, "the Job runs");
    let uid = job["metadata"]["uid"].as_str().unwrap();
    let wls = get_json(&[
        "workloads.kueue.x-k8s.io",
        "-n",
        "default",
        "-l",
        &format!("kueue.x-k8s.io/job-uid={uid}"),
    ]);
    let items = wls["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "one Workload for the Job: {wls}");
    let admitted = items[0]["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Admitted" && c["status"] == "True");
    assert!(admitted, "the Workload is admitted: {}", items[0]["status"]);
    let mutations = reviews(pod, "mutate");
    assert!(
        mutations > mutations_before,
        "the apiserver called the played pod's mutating webhook through the Service ({mutations_before} -> {mutations})"
    );
    // Kueue's visibility API, through the aggregation layer and the other
    // Service.
    let deadline = Instant::now() + Duration::from_secs(60);
    let pending = loop {
        match kubectl(&[
            "get",
            "--raw",
            "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cluster-queue/pendingworkloads",
        ]) {
            Ok(out) => break out,
            Err(e) if Instant::now() > deadline => {
                let api = kubectl(&[
                    "get",
                    "apiservice",
                    "v1beta2.visibility.kueue.x-k8s.io",
                    "-o",
                    "yaml",
                ]);
                pod.dump_log();
                panic!("the visibility API through the apiserver: {e}\n{api:?}");
            }
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    };
    assert!(pending.contains("PendingWorkloadsSummary"), "{pending}");
}

fn can_i(verb_resource: &[&str]) -> bool {
    let mut args = vec!["auth", "can-i"];
    args.extend_from_slice(verb_resource);
    args.extend(["--as", "system:serviceaccount:batchgate-system:batchgate"]);
    let out = cluster().kubectl().args(&args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

fn procedure(name: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let c = cluster();
    // cert-manager's own CRDs are applied as the cluster starts.
    c.wait_established(
        &["crd/certificates.cert-manager.io"],
        Duration::from_secs(60),
    )
    .unwrap();
    let before = snapshot();
    assert!(
        !before
            .iter()
            .any(|o| o.contains("batchgate") || o.contains("kueue.x-k8s.io")),
        "the cluster already holds batchgate's objects (an earlier procedure failed?)"
    );
    let pod = Pod::default();
    let looping = pod.start();
    let mut env = environment("install");

    for b in steps(name, "install") {
        run(&b, &env, &pod);
    }
    let image = |env: &[(String, String)]| {
        let get = |k: &str| env.iter().rev().find(|(n, _)| n == k).unwrap().1.clone();
        format!("{}:{}", get("IMAGE_REPOSITORY"), get("IMAGE_TAG"))
    };
    let d = get_json(&["deployment", "batchgate", "-n", NS]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        image(&env),
        "the Deployment names the image the procedure set"
    );
    assert!(pod.starts() >= 1, "a pod was played");
    let installed = snapshot();
    assert!(
        installed
            .iter()
            .filter(|o| o.starts_with("CustomResourceDefinition "))
            .count()
            >= before
                .iter()
                .filter(|o| o.starts_with("CustomResourceDefinition "))
                .count()
                + 14,
        "the procedure installed batchgate's 14 CRDs"
    );

    let mutations = reviews(&pod, "mutate");
    for b in steps(name, "check") {
        run(&b, &env, &pod);
    }
    assert_admitted_through_the_webhook(&pod, mutations);

    assert!(
        !can_i(&["create", "jobs.batch"]),
        "before: AppWrapper's kinds are not granted"
    );
    for b in steps(name, "appwrapper") {
        run(&b, &env, &pod);
    }
    assert!(
        can_i(&["create", "jobs.batch"]),
        "the wrapped kind is granted"
    );
    assert!(can_i(&["delete", "jobs.batch"]));
    assert!(!can_i(&["create", "deployments.apps"]), "and no other");

    env.extend(environment("upgrade"));
    let before_upgrade = pod.playing();
    for b in steps(name, "upgrade") {
        run(&b, &env, &pod);
    }
    let d = get_json(&["deployment", "batchgate", "-n", NS]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        image(&env),
        "the upgrade named the new image"
    );
    let after_upgrade = pod.playing();
    assert!(
        after_upgrade.is_some() && after_upgrade != before_upgrade,
        "the upgrade replaced the pod ({before_upgrade:?} -> {after_upgrade:?})"
    );
    assert!(
        can_i(&["create", "jobs.batch"]),
        "the upgrade kept the wrapped kinds"
    );
    let mutations = reviews(&pod, "mutate");
    for b in steps(name, "check") {
        run(&b, &env, &pod);
    }
    assert_admitted_through_the_webhook(&pod, mutations);

    for b in steps(name, "uninstall") {
        run(&b, &env, &pod);
    }
    looping.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(live_pods().is_empty(), "batchgate's pods are gone");
    pod.stop();
    assert_eq!(pod.crashes(), 0, "batchgate never exited unasked");
    // The user's Job stays; it is theirs to delete.
    let job = get_json(&["job", "sample-job", "-n", "default"]);
    assert!(job["metadata"]["ownerReferences"].is_null());
    kubectl(&[
        "delete",
        "job",
        "sample-job",
        "-n",
        "default",
        "--cascade=foreground",
        "--wait",
    ])
    .unwrap();
    // Namespaces and garbage collection take a moment to finish.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let after = snapshot();
        if after == before {
            break;
        }
        if Instant::now() > deadline {
            let left: Vec<_> = after.difference(&before).collect();
            let removed: Vec<_> = before.difference(&after).collect();
            panic!("after the uninstall, left behind: {left:#?}\nremoved that was there before: {removed:#?}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn installed_with_helm_managed_certificates_then_upgraded_and_uninstalled() {
    procedure("helm");
}

#[test]
fn installed_with_helm_and_cert_manager_then_upgraded_and_uninstalled() {
    procedure("helm-cert-manager");
}

#[test]
fn installed_from_manifests_managed_certificates_then_upgraded_and_uninstalled() {
    procedure("manifests");
}

#[test]
fn installed_from_manifests_and_cert_manager_then_upgraded_and_uninstalled() {
    procedure("manifests-cert-manager");
}
