//! `make dev`: batchgate for real on an embedded default.
//!
//! Starts a local control plane (etcd, kube-apiserver, controller-manager,
//! scheduler, KWOK with a few fake nodes; built from Go modules on first
//! use), runs batchgate against it in this process with a fresh CA and
//! serving certificate, registers its webhooks at https://127.0.0.1:PORT and
//! prints how to try it. Ctrl-C drains batchgate and tears the cluster down.

use std::{net::TcpListener, path::Path, time::Duration};

use anyhow::{bail, Context, Result};
use batchgate::{
    certs::{self, CertOptions},
    cli::{self, Cli, Command},
    manifests::{self, Endpoint, WebhookOptions},
    policy::PolicySet,
};
use batchgate_localcluster::{ClusterOptions, LocalCluster};
use clap::Parser;

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn main() -> Result<()> {
    eprintln!("starting the local control plane (the first run builds it from Go modules: several minutes)...");
    let cluster =
        LocalCluster::start(ClusterOptions::default()).context("starting the local cluster")?;
    // batchgate reads its kubeconfig like kubectl; set it before any thread starts.
    std::env::set_var("KUBECONFIG", cluster.kubeconfig());

    let dir = tempfile::tempdir()?;
    let bundle = certs::generate(&CertOptions::default(), time::OffsetDateTime::now_utc())?;
    certs::write(dir.path(), &bundle)?;
    let (port, probe_port) = (free_port()?, free_port()?);
    let args = Cli::parse_from([
        "batchgate",
        "serve",
        "--cert-dir",
        &dir.path().display().to_string(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--probe-listen",
        &format!("127.0.0.1:{probe_port}"),
    ]);
    cli::init_logging(args.log_format);
    let Command::Serve(serve) = args.command else {
        bail!("internal: expected the serve command");
    };

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let server = tokio::spawn(cli::serve(*serve));
        wait_ready(probe_port).await?;
        cluster.apply(&std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/namespace.yaml"),
        )?)?;
        let opts = WebhookOptions {
            endpoint: Endpoint::Url(format!("https://127.0.0.1:{port}")),
            ca_bundle: Some(certs::ca_bundle(&bundle.ca_pem)),
            failure_policy: "Fail".into(),
            timeout_seconds: 10,
            namespace: batchgate::config::DEFAULT_NAMESPACE.into(),
            inject_ca_from: None,
            // `make dev` runs batchgate as the kubeconfig's user, who is also
            // the one trying things out: nobody is exempt.
            reconciler_user: None,
        };
        let docs = manifests::webhook_configurations(&PolicySet::embedded()?, &opts);
        cluster.apply(&manifests::to_yaml("", &docs))?;
        print_help(&cluster, port, probe_port);
        server.await??;
        eprintln!("tearing down the local cluster...");
        drop(cluster);
        Ok(())
    })
}

async fn wait_ready(probe_port: u16) -> Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    for _ in 0..200 {
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
    bail!("batchgate did not become ready")
}

fn print_help(cluster: &LocalCluster, port: u16, probe_port: u16) {
    let kubectl = cluster.bin_dir().join("kubectl");
    println!(
        r#"
batchgate is serving https://127.0.0.1:{port} for the local cluster at {server}.

    export KUBECONFIG={kubeconfig}
    alias kubectl={kubectl}

Try:
    kubectl create namespace demo
    kubectl -n demo create job queued --image=busybox --dry-run=client -o yaml -- true \
      | kubectl label -f - --local -o yaml kueue.x-k8s.io/queue-name=user-queue | kubectl apply -f -
    kubectl -n demo get job queued -o jsonpath='{{.spec.suspend}}'      # true: queued jobs are created suspended
    kubectl -n demo patch job queued --type=merge -p '{{"spec":{{"suspend":false}}}}'  # as an admission would
    kubectl -n demo label job queued kueue.x-k8s.io/queue-name=other --overwrite    # refused by vjob.kb.io
    kubectl -n demo create job plain --image=busybox -- true           # not queued: runs on a KWOK node
    kubectl get nodes
    curl -s http://127.0.0.1:{probe_port}/metrics | grep batchgate_admission

Ctrl-C stops batchgate and tears the cluster down.
"#,
        server = cluster.server_url(),
        kubeconfig = cluster.kubeconfig().display(),
        kubectl = kubectl.display(),
    );
}
