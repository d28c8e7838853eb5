//! `batchgate dev` (what `make dev` runs): batchgate for real on a local
//! control plane, set up as Kueue's quick start, with a tour to follow.
//!
//! Starts the local control plane (etcd, kube-apiserver, controller-manager,
//! scheduler, KWOK with four fake nodes; `tests/cluster/build.sh` builds it
//! from Go modules on first use), installs batchgate's CRDs, runs batchgate
//! in this process with a fresh CA, registers its webhooks at
//! `https://127.0.0.1:PORT`, creates Kueue's single-ClusterQueue objects
//! (`examples/kueue/single-clusterqueue-setup.yaml`) and prints a tour whose
//! commands work as printed. Ctrl-C drains batchgate and tears it all down.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use batchgate_localcluster::{ClusterOptions, LocalCluster};
use clap::Args;
use serde_json::json;

use crate::{
    admission::manifests::{self, Endpoint, WebhookOptions},
    certs::{self, CertOptions},
    jobs::policy::PolicySet,
};

#[derive(Debug, Args)]
pub struct DevArgs {
    /// Keep the bare cluster: no ResourceFlavor, ClusterQueue or LocalQueue, no tour.
    #[arg(long)]
    pub no_demo: bool,
}

/// The tour's files, as committed in `examples/kueue/`; written out when the
/// binary runs away from its checkout.
const EXAMPLES: [(&str, &str); 3] = [
    (
        "single-clusterqueue-setup.yaml",
        include_str!("../../examples/kueue/single-clusterqueue-setup.yaml"),
    ),
    (
        "sample-job.yaml",
        include_str!("../../examples/kueue/sample-job.yaml"),
    ),
    (
        "big-jobs.yaml",
        include_str!("../../examples/kueue/big-jobs.yaml"),
    ),
];

/// Budget for each wait on the fresh cluster (CRDs established, webhooks
/// called, ClusterQueue active): generous for a loaded machine.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Runs until Ctrl-C or SIGTERM. Logging is set up by the caller.
pub fn run(a: DevArgs) -> Result<()> {
    let t0 = Instant::now();
    eprintln!("batchgate dev: starting the local control plane...");
    let mut cluster =
        LocalCluster::start(ClusterOptions::default()).context("starting the local cluster")?;
    // batchgate reads its kubeconfig like kubectl; set before any thread starts.
    std::env::set_var("KUBECONFIG", cluster.kubeconfig());

    let certs_dir = tempfile::tempdir()?;
    let bundle = certs::generate(&CertOptions::default(), time::OffsetDateTime::now_utc())?;
    crate::tls::write(certs_dir.path(), &bundle)?;
    let (port, probe_port, visibility_port) = (free_port()?, free_port()?, free_port()?);
    let ca_bundle = certs::ca_bundle(&bundle.ca_pem);

    // Before batchgate starts: its Lease lives in this namespace and its
    // watches need the CRDs, so neither is an error to retry.
    cluster.apply(
        &json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": crate::api::DEFAULT_NAMESPACE,
                         "labels": {"app.kubernetes.io/name": "batchgate"}},
        })
        .to_string(),
    )?;
    install_crds(&cluster, port, &ca_bundle)?;

    let serve = super::ServeArgs {
        cert_dir: Some(certs_dir.path().to_path_buf()),
        self_signed: false,
        cert_secret: None,
        manage_certs: false,
        listen: Some(([127, 0, 0, 1], port).into()),
        probe_listen: Some(([127, 0, 0, 1], probe_port).into()),
        config: None,
        policies: None,
        no_cluster: false,
        admission: None,
        manage_jobs_without_queue_name: false,
        max_body_bytes: None,
        // Nothing balances load onto this process: stop at once.
        shutdown_delay: Some(0.0),
        drain_timeout: None,
        cert_reload_interval: 2.0,
        visibility_listen: ([127, 0, 0, 1], visibility_port).into(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = rt.block_on(async {
        let server = tokio::spawn(super::serve(serve));
        wait_ready(probe_port, &server).await?;
        let opts = WebhookOptions {
            endpoint: Endpoint::Url(format!("https://127.0.0.1:{port}")),
            ca_bundle: Some(ca_bundle.clone()),
            failure_policy: "Fail".into(),
            timeout_seconds: 10,
            namespace: crate::api::DEFAULT_NAMESPACE.into(),
            inject_ca_from: None,
            // batchgate runs as the kubeconfig's user, who is also the one
            // trying things out: nobody is exempt.
            reconciler_user: None,
        };
        // The integrations `serve` enables without a config (not pods).
        let mut policies = PolicySet::embedded()?;
        policies.retain_default();
        let docs = manifests::webhook_configurations(&policies, &opts);
        cluster.apply(&manifests::to_yaml("", &docs))?;
        wait_webhooks_called(&cluster)?;
        register_visibility(&cluster, visibility_port)?;
        let examples = if a.no_demo {
            None
        } else {
            Some(demo(&cluster)?)
        };
        print_tour(
            &cluster,
            port,
            probe_port,
            examples.as_deref(),
            t0.elapsed(),
        );
        match server.await {
            Ok(r) => r,
            Err(e) => Err(anyhow::Error::from(e)),
        }
    });
    // Stop the reconciler's watches before the apiserver goes away, so the
    // teardown logs nothing.
    rt.shutdown_timeout(Duration::from_secs(5));
    eprintln!("batchgate dev: stopped; tearing down the local cluster");
    cluster.stop();
    served
}

/// Kueue's visibility API (positions in `kubectl kueue list workload`):
/// the shipped APIServices, their Service an ExternalName for this host,
/// in `batchgate-system` (created if missing). Waits until both are
/// Available. Also what the e2e tests and benches register.
pub fn register_visibility(cluster: &LocalCluster, port: u16) -> Result<()> {
    const SERVICE: &str =
        "  service:\n    name: batchgate-visibility\n    namespace: batchgate-system\n";
    let api_services: Vec<String> = include_str!("../../manifests/apiservices.yaml")
        .split("\n---\n")
        .filter(|d| d.contains("kind: APIService") && d.contains(SERVICE))
        .map(|d| d.replace(SERVICE, &format!("{SERVICE}    port: {port}\n")))
        .collect();
    if api_services.len() != 2 {
        bail!(
            "manifests/apiservices.yaml: expected two APIServices of Service batchgate-visibility"
        );
    }
    cluster.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": crate::api::DEFAULT_NAMESPACE}})
        .to_string(),
    )?;
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "batchgate-visibility", "namespace": crate::api::DEFAULT_NAMESPACE},
        "spec": {"type": "ExternalName", "externalName": "localhost",
                 "ports": [{"name": "https", "port": port, "protocol": "TCP"}]},
    });
    cluster.apply(&service.to_string())?;
    cluster
        .apply(&api_services.join("\n---\n"))
        .context("registering the visibility API")?;
    let timeout = format!("--timeout={}s", STEP_TIMEOUT.as_secs());
    cluster
        .run_kubectl(&[
            "wait",
            "--for=condition=Available",
            &timeout,
            "apiservice/v1beta2.visibility.kueue.x-k8s.io",
            "apiservice/v1beta1.visibility.kueue.x-k8s.io",
        ])
        .context("waiting for the visibility API to become available")?;
    Ok(())
}

/// Every CRD batchgate serves; the converted ones call this process's
/// `/convert` (so v1beta1 works too). Waits until all are Established.
fn install_crds(cluster: &LocalCluster, port: u16, ca_bundle: &str) -> Result<()> {
    let conv = crate::api::crd::Conversion {
        client_config: json!({
            "url": format!("https://127.0.0.1:{port}/convert"),
            "caBundle": ca_bundle,
        }),
        inject_ca_from: None,
    };
    let yaml: String = crate::api::crd::all_with(&conv)
        .iter()
        .map(|g| crate::api::crd::to_yaml(&g.crd))
        .collect();
    cluster.apply(&yaml).context("installing the CRDs")?;
    // `kubectl wait crd --all` fails on a CRD that has no conditions yet.
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let out = cluster.run_kubectl(&["get", "crd", "-o", "json"])?;
        let list: serde_json::Value = serde_json::from_str(&out)?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let waiting: Vec<String> = items
            .iter()
            .filter(|crd| {
                !crd["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Established" && c["status"] == "True")
                })
            })
            .map(|crd| crd["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect();
        if !items.is_empty() && waiting.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "CRDs not established within {STEP_TIMEOUT:?}: {}",
                waiting.join(", ")
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

async fn wait_ready(probe_port: u16, server: &tokio::task::JoinHandle<Result<()>>) -> Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let deadline = Instant::now() + STEP_TIMEOUT;
    while Instant::now() < deadline {
        if server.is_finished() {
            bail!("batchgate stopped before it was ready");
        }
        if let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", probe_port)).await {
            s.write_all(b"GET /readyz HTTP/1.0\r\n\r\n").await?;
            let mut out = String::new();
            s.read_to_string(&mut out).await?;
            if out.starts_with("HTTP/1.0 200") || out.starts_with("HTTP/1.1 200") {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("batchgate did not become ready within {STEP_TIMEOUT:?}")
}

/// The apiserver picks up new webhook configurations a moment after they
/// are written; wait until a queued Job comes back suspended (dry run).
fn wait_webhooks_called(cluster: &LocalCluster) -> Result<()> {
    let probe = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "webhook-probe", "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "busybox"}]}}},
    })
    .to_string();
    let deadline = Instant::now() + STEP_TIMEOUT;
    while Instant::now() < deadline {
        if let Ok(out) = cluster.kubectl_stdin(
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            probe.as_bytes(),
        ) {
            let job: serde_json::Value = serde_json::from_str(&out)?;
            if job["spec"]["suspend"] == true {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bail!("the apiserver did not call batchgate's webhooks within {STEP_TIMEOUT:?}")
}

/// Creates Kueue's quick-start objects and waits until cluster-queue is
/// active; returns the directory holding `examples/kueue/`.
fn demo(cluster: &LocalCluster) -> Result<PathBuf> {
    let root = examples_root()?;
    let setup = root.join("examples/kueue/single-clusterqueue-setup.yaml");
    cluster
        .run_kubectl(&["apply", "-f", &setup.display().to_string()])
        .context("creating Kueue's quick-start queues")?;
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let active = cluster
            .run_kubectl(&[
                "get",
                "clusterqueue",
                "cluster-queue",
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Active")].status}"#,
            ])
            .unwrap_or_default();
        if active.trim() == "True" {
            return Ok(root);
        }
        if Instant::now() >= deadline {
            bail!("ClusterQueue cluster-queue did not become Active within {STEP_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// This checkout when the binary runs from it, else a directory with the
/// tour's files written out.
fn examples_root() -> Result<PathBuf> {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    if EXAMPLES
        .iter()
        .all(|(f, _)| checkout.join("examples/kueue").join(f).is_file())
    {
        return Ok(checkout.to_path_buf());
    }
    let root = std::env::temp_dir().join(format!("batchgate-dev-{}", std::process::id()));
    let dir = root.join("examples/kueue");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (f, text) in EXAMPLES {
        std::fs::write(dir.join(f), text)
            .with_context(|| format!("writing {}", dir.join(f).display()))?;
    }
    Ok(root)
}

/// The tour, as printed: the first command line sets up the shell, then
/// numbered steps (`# N. ...`), each one or more commands followed by what
/// they print (`#    ...`). The e2e test `tests/e2e_dev.rs` runs it as
/// printed.
pub fn tour(cluster: &LocalCluster, port: u16, probe_port: u16, examples: Option<&Path>) -> String {
    let bin_dirs = {
        let own = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        let mut dirs = vec![cluster.bin_dir().display().to_string()];
        dirs.extend(own.map(|d| d.display().to_string()));
        dirs.join(":")
    };
    let env = format!(
        "export KUBECONFIG={} PATH=\"{bin_dirs}:$PATH\"",
        cluster.kubeconfig().display()
    );
    let head = format!(
        "batchgate is serving https://127.0.0.1:{port} for the local cluster at {server}\n\
         (4 KWOK nodes; metrics at http://127.0.0.1:{probe_port}/metrics).\n",
        server = cluster.server_url(),
    );
    let Some(root) = examples else {
        return format!(
            "\n{head}\nIn another terminal (kubectl and kubectl kueue on PATH):\n\n{env}\n\nCtrl-C stops batchgate and tears the cluster down.\n"
        );
    };
    format!(
        r#"
{head}Kueue's quick start is set up: ResourceFlavor default-flavor, ClusterQueue
cluster-queue (9 CPUs, 36Gi), LocalQueue user-queue in namespace default.

Tour: paste into another terminal, step by step.

cd {root} && {env}

# 1. Submit a Job to user-queue. batchgate's webhook creates it suspended:
kubectl create -f examples/kueue/sample-job.yaml -o jsonpath='{{.metadata.name}}: suspend={{.spec.suspend}}{{"\n"}}'
#    sample-job: suspend=true

# 2. batchgate creates its Workload and admits it to cluster-queue (ADMITTED True), then starts the Job on KWOK nodes:
kubectl get workloads
kubectl get pods -o wide
#    job-sample-job-xxxxx   user-queue   cluster-queue   True ...
#    sample-job-xxxxx   1/1   Running ...   kwok-node-0 ...

# 3. A Job that has started cannot change queues (Kueue's words):
kubectl label job sample-job kueue.x-k8s.io/queue-name=other-queue --overwrite
#    Error from server (Forbidden): admission webhook "vjob.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other-queue": field is immutable

# 4. Its pods run 10 s; then the Job is complete and its Workload Finished:
kubectl wait --for=condition=complete job/sample-job --timeout=2m
#    job.batch/sample-job condition met

# 5. Two Jobs of 6 CPUs each against 9 CPUs of quota: one is admitted, the other waits, with its position and reason:
kubectl create -f examples/kueue/big-jobs.yaml
kubectl kueue list workload
kubectl get workloads -o custom-columns='NAME:.metadata.name,RESERVATION:.status.conditions[?(@.type=="QuotaReserved")].message'
#    job-big-job-N-xxxxx   couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 3 more needed

Ctrl-C stops batchgate and tears the cluster down.
"#,
        root = root.display(),
    )
}

fn print_tour(
    cluster: &LocalCluster,
    port: u16,
    probe_port: u16,
    examples: Option<&Path>,
    took: Duration,
) {
    eprintln!("batchgate dev: ready after {:.1} s", took.as_secs_f64());
    println!("{}", tour(cluster, port, probe_port, examples));
}
