//! A real, local Kubernetes control plane for batchgate's tests and dev loop.
//!
//! [`LocalCluster::start`] runs etcd, kube-apiserver (RBAC, admission webhooks
//! on), kube-controller-manager, kube-scheduler and KWOK — all real binaries
//! built from Go modules by `tests/cluster/build.sh` — on free 127.0.0.1
//! ports, creates fake KWOK nodes with the requested labels, taints and
//! capacity, and waits until the API is ready and every node is Ready.
//! Pods bound to the fake nodes become Running at once; pods owned by a Job
//! then complete (KWOK's "fast" stages), as do pods carrying
//! [`POD_RUNTIME_ANNOTATION`] that no Job, ReplicaSet, StatefulSet or
//! DaemonSet owns (bare or AppWrapper-owned pods); pods annotated
//! [`POD_FAIL_ANNOTATION`] fail.
//!
//! ```no_run
//! use batchgate_localcluster::{ClusterOptions, LocalCluster, NodeSpec};
//!
//! let opts = ClusterOptions {
//!     nodes: vec![NodeSpec::new("gpu-0").gpus(8).label("instance-type", "gpu")],
//!     ..ClusterOptions::default()
//! };
//! let cluster = LocalCluster::start(opts)?;
//! let out = cluster.kubectl().args(["get", "nodes"]).output()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Everything is torn down by [`LocalCluster::stop`] / `Drop`, and — for a
//! cluster that is never dropped, such as [`shared`] — when the process exits
//! in any way (see the `process` module).

mod binaries;
pub mod cert_manager;
mod error;
mod pki;
mod process;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub use binaries::{build_script, Binaries, BINARIES, BIN_ENV, STAGES_ENV};
pub use cert_manager::CertManager;
pub use error::Error;

use pki::{ClientCert, Pki};
use process::{Component, Watchdog};

/// Annotation that puts a node under KWOK's management.
pub const KWOK_NODE_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");
/// Extended resource name used for [`NodeSpec::gpus`].
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// Set to `1` to keep the cluster's temp dir (logs, PKI, etcd data) after teardown.
pub const KEEP_ENV: &str = "BATCHGATE_CLUSTER_KEEP";

/// One node taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// A fake (KWOK-managed) node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    pub name: String,
    /// Extra labels; `kubernetes.io/hostname`, `kubernetes.io/os`,
    /// `kubernetes.io/arch` and `type=kwok` are always set.
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// Capacity and allocatable CPU, as a quantity (`"8"`, `"500m"`).
    pub cpu: String,
    /// Capacity and allocatable memory, as a quantity (`"32Gi"`).
    pub memory: String,
    /// Maximum number of pods.
    pub pods: u32,
    /// `nvidia.com/gpu` capacity; 0 leaves the resource off the node.
    pub gpus: u32,
}

impl NodeSpec {
    /// A node with 8 CPUs, 32Gi memory, 110 pods, no GPUs, labels or taints.
    pub fn new(name: impl Into<String>) -> NodeSpec {
        NodeSpec {
            name: name.into(),
            labels: BTreeMap::new(),
            taints: Vec::new(),
            cpu: "8".into(),
            memory: "32Gi".into(),
            pods: 110,
            gpus: 0,
        }
    }
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }
    pub fn taint(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
        effect: impl Into<String>,
    ) -> Self {
        self.taints.push(Taint {
            key: key.into(),
            value: value.into(),
            effect: effect.into(),
        });
        self
    }
    pub fn cpu(mut self, cpu: impl Into<String>) -> Self {
        self.cpu = cpu.into();
        self
    }
    pub fn memory(mut self, memory: impl Into<String>) -> Self {
        self.memory = memory.into();
        self
    }
    pub fn pods(mut self, pods: u32) -> Self {
        self.pods = pods;
        self
    }
    pub fn gpus(mut self, gpus: u32) -> Self {
        self.gpus = gpus;
        self
    }

    fn to_json(&self) -> Value {
        let mut labels: BTreeMap<String, String> = [
            ("kubernetes.io/hostname", self.name.as_str()),
            ("kubernetes.io/os", "linux"),
            ("kubernetes.io/arch", "amd64"),
            ("type", "kwok"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        labels.extend(self.labels.clone());
        let mut resources = json!({
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": self.pods.to_string(),
        });
        if self.gpus > 0 {
            resources[GPU_RESOURCE] = json!(self.gpus.to_string());
        }
        let taints: Vec<Value> = self
            .taints
            .iter()
            .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
            .collect();
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": labels,
                "annotations": {
                    KWOK_NODE_ANNOTATION.0: KWOK_NODE_ANNOTATION.1,
                    "node.alpha.kubernetes.io/ttl": "0",
                },
            },
            "spec": { "taints": taints },
            "status": {
                "capacity": resources,
                "allocatable": resources,
            },
        })
    }
}

/// The nodes of [`ClusterOptions::default`] and [`shared`]:
///
/// | name | cpu | memory | gpus | labels |
/// |---|---|---|---|---|
/// | `kwok-node-0`, `kwok-node-1` | 8 | 32Gi | 0 | `instance-type=on-demand` |
/// | `kwok-node-2` | 8 | 32Gi | 0 | `instance-type=spot` |
/// | `kwok-gpu-0` | 16 | 64Gi | 4 | `instance-type=gpu`, `nvidia.com/gpu.present=true` |
///
/// All allow 110 pods and carry no taints.
pub fn default_nodes() -> Vec<NodeSpec> {
    vec![
        NodeSpec::new("kwok-node-0").label("instance-type", "on-demand"),
        NodeSpec::new("kwok-node-1").label("instance-type", "on-demand"),
        NodeSpec::new("kwok-node-2").label("instance-type", "spot"),
        NodeSpec::new("kwok-gpu-0")
            .cpu("16")
            .memory("64Gi")
            .gpus(4)
            .label("instance-type", "gpu")
            .label("nvidia.com/gpu.present", "true"),
    ]
}

/// What [`LocalCluster::start`] should bring up.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Fake nodes to create (may be empty).
    pub nodes: Vec<NodeSpec>,
    /// Budget for starting the cluster once the binaries exist.
    pub start_timeout: Duration,
    /// Prebuilt binaries; `None` runs `tests/cluster/build.sh` (or uses
    /// `$BATCHGATE_CLUSTER_BIN`).
    pub binaries: Option<Binaries>,
    /// Appended to kube-apiserver's command line (later flags win).
    pub extra_apiserver_args: Vec<String>,
    /// Keep the temp dir after teardown (default: `$BATCHGATE_CLUSTER_KEEP` is `1`).
    pub keep_dir: bool,
    /// Also run cert-manager's controller and CA injector (built by
    /// `tests/cluster/build-cert-manager.sh`), with its CRDs applied, once
    /// the cluster is ready. Off by default: only the tests that use
    /// cert-manager pay for it.
    pub cert_manager: bool,
    /// kube-controller-manager controllers to leave off (`--controllers=*,-name`),
    /// e.g. `node-lifecycle-controller` for Nodes no kubelet or KWOK heartbeats
    /// (it would mark them NotReady and taint them once the grace period is
    /// over). Empty by default: every on-by-default controller runs.
    pub disabled_controllers: Vec<String>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            nodes: default_nodes(),
            start_timeout: Duration::from_secs(120),
            binaries: None,
            extra_apiserver_args: Vec::new(),
            keep_dir: std::env::var(KEEP_ENV).is_ok_and(|v| v == "1"),
            cert_manager: false,
            disabled_controllers: Vec::new(),
        }
    }
}

/// A running local control plane. Stopped on drop.
#[derive(Debug)]
pub struct LocalCluster {
    dir: Option<tempfile::TempDir>,
    dir_path: PathBuf,
    keep_dir: bool,
    binaries: Binaries,
    kubeconfig: PathBuf,
    kubectl: Kubectl,
    server_url: String,
    /// etcd's client URL (plain HTTP on loopback; `/metrics` is served there).
    etcd_url: String,
    pki: Pki,
    nodes: Vec<NodeSpec>,
    components: Vec<Component>,
    /// kube-apiserver's command line, to start it again after a fault.
    apiserver_args: Vec<String>,
    watchdog: Option<Watchdog>,
    timings: Vec<(&'static str, Duration)>,
}

const SERVICE_CIDR: &str = "10.0.0.0/24";
const SA_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const PORT_ATTEMPTS: u32 = 3;

impl LocalCluster {
    /// Builds or locates the binaries, starts every component and waits until
    /// the API is ready, every requested node is Ready and the `default`
    /// service account exists. Blocking.
    pub fn start(opts: ClusterOptions) -> Result<LocalCluster, Error> {
        validate(&opts)?;
        let t0 = Instant::now();
        let binaries = match &opts.binaries {
            Some(b) => b.clone(),
            None => Binaries::locate_or_build()?,
        };
        let cert_manager = if opts.cert_manager {
            Some(CertManager::locate_or_build()?)
        } else {
            None
        };
        let located = t0.elapsed();
        let mut attempt = 1;
        loop {
            match LocalCluster::try_start(&opts, &binaries) {
                Ok(mut cluster) => {
                    cluster.timings.insert(0, ("binaries", located));
                    if let Some(cm) = &cert_manager {
                        cluster.start_cert_manager(cm, Instant::now() + opts.start_timeout)?;
                    }
                    return Ok(cluster);
                }
                Err(e) if e.is_port_conflict() && attempt < PORT_ATTEMPTS => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    fn try_start(opts: &ClusterOptions, binaries: &Binaries) -> Result<LocalCluster, Error> {
        let t0 = Instant::now();
        let deadline = t0 + opts.start_timeout;
        let dir = tempfile::Builder::new()
            .prefix("batchgate-cluster-")
            .tempdir()
            .map_err(|e| Error::io("creating the cluster temp dir", e))?;
        let dir_path = dir.path().to_path_buf();
        let watchdog = Watchdog::start(&dir_path, opts.keep_dir)?;
        let pki = Pki::generate(&dir_path.join("pki"))?;
        for sub in ["logs", "etcd"] {
            let path = dir_path.join(sub);
            fs::DirBuilder::new()
                .mode(0o700)
                .create(&path)
                .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        }
        let [etcd_port, peer_port, api_port] = free_ports()?;
        let server_url = format!("https://127.0.0.1:{api_port}");
        let kubeconfig = dir_path.join("admin.kubeconfig");
        write_kubeconfig(&kubeconfig, &server_url, &pki.ca_cert, &pki.admin)?;
        let cm_kubeconfig = dir_path.join("controller-manager.kubeconfig");
        write_kubeconfig(
            &cm_kubeconfig,
            &server_url,
            &pki.ca_cert,
            &pki.controller_manager,
        )?;
        let sched_kubeconfig = dir_path.join("scheduler.kubeconfig");
        write_kubeconfig(&sched_kubeconfig, &server_url, &pki.ca_cert, &pki.scheduler)?;

        // From here on, an early return drops `cluster`, which tears down
        // whatever has been started.
        let mut cluster = LocalCluster {
            dir: Some(dir),
            dir_path,
            keep_dir: opts.keep_dir,
            binaries: binaries.clone(),
            kubectl: Kubectl {
                bin: binaries.path("kubectl"),
                kubeconfig: kubeconfig.clone(),
            },
            kubeconfig,
            server_url,
            etcd_url: format!("http://127.0.0.1:{etcd_port}"),
            pki,
            nodes: opts.nodes.clone(),
            components: Vec::new(),
            apiserver_args: Vec::new(),
            watchdog: Some(watchdog),
            timings: vec![("pki", t0.elapsed())],
        };
        let p = |path: &Path| path.display().to_string();
        let d = cluster.dir_path.clone();
        let pki = cluster.pki.clone();

        let etcd_client = cluster.etcd_url.clone();
        let etcd_peer = format!("http://127.0.0.1:{peer_port}");
        cluster.spawn(
            "etcd",
            vec![
                "--name=batchgate-local".into(),
                format!("--data-dir={}", p(&d.join("etcd"))),
                format!("--listen-client-urls={etcd_client}"),
                format!("--advertise-client-urls={etcd_client}"),
                format!("--listen-peer-urls={etcd_peer}"),
                format!("--initial-advertise-peer-urls={etcd_peer}"),
                format!("--initial-cluster=batchgate-local={etcd_peer}"),
                "--unsafe-no-fsync=true".into(),
                "--auto-compaction-retention=1".into(),
                "--log-level=warn".into(),
            ],
        )?;
        cluster.wait_until(deadline, "etcd to accept connections", |_| {
            Ok(TcpStream::connect((Ipv4Addr::LOCALHOST, etcd_port))
                .is_ok()
                .then_some(()))
        })?;
        cluster.mark("etcd", t0);

        let mut api_args = vec![
            format!("--etcd-servers={etcd_client}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={api_port}"),
            format!("--cert-dir={}", p(&d.join("pki"))),
            format!("--tls-cert-file={}", p(&pki.serving_cert)),
            format!("--tls-private-key-file={}", p(&pki.serving_key)),
            format!("--client-ca-file={}", p(&pki.ca_cert)),
            format!("--service-account-issuer={SA_ISSUER}"),
            format!("--service-account-key-file={}", p(&pki.sa_pub)),
            format!("--service-account-signing-key-file={}", p(&pki.sa_key)),
            format!("--service-cluster-ip-range={SERVICE_CIDR}"),
            "--authorization-mode=Node,RBAC".into(),
            // On by default already; named so nobody turns them off by accident.
            "--enable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook".into(),
            "--allow-privileged=true".into(),
            // A loopback address is not a valid Endpoints address; nothing
            // in-cluster needs to reach the apiserver through the Service.
            "--endpoint-reconciler-type=none".into(),
            "--profiling=false".into(),
            // Aggregated APIs (batchgate's visibility.kueue.x-k8s.io): the
            // front-proxy identity and headers, published in
            // kube-system/extension-apiserver-authentication.
            format!("--requestheader-client-ca-file={}", p(&pki.front_proxy_ca)),
            format!("--requestheader-allowed-names={}", pki::FRONT_PROXY_CLIENT),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            format!(
                "--proxy-client-cert-file={}",
                p(&pki.front_proxy_client.cert)
            ),
            format!("--proxy-client-key-file={}", p(&pki.front_proxy_client.key)),
        ];
        api_args.extend(opts.extra_apiserver_args.iter().cloned());
        cluster.apiserver_args = api_args.clone();
        cluster.spawn("kube-apiserver", api_args)?;
        cluster.wait_until(deadline, "kube-apiserver /readyz", |k| {
            Ok(apiserver_ready(k, api_port))
        })?;
        cluster.mark("kube-apiserver", t0);

        cluster.spawn(
            "kube-controller-manager",
            vec![
                format!("--kubeconfig={}", p(&cm_kubeconfig)),
                format!("--authentication-kubeconfig={}", p(&cm_kubeconfig)),
                format!("--authorization-kubeconfig={}", p(&cm_kubeconfig)),
                "--secure-port=0".into(),
                "--leader-elect=false".into(),
                "--use-service-account-credentials=true".into(),
                format!("--service-account-private-key-file={}", p(&pki.sa_key)),
                format!("--root-ca-file={}", p(&pki.ca_cert)),
                "--cluster-name=batchgate-local".into(),
                std::iter::once("--controllers=*".to_string())
                    .chain(opts.disabled_controllers.iter().map(|c| format!("-{c}")))
                    .collect::<Vec<_>>()
                    .join(","),
                "--kube-api-qps=200".into(),
                "--kube-api-burst=400".into(),
            ],
        )?;
        cluster.spawn(
            "kube-scheduler",
            vec![
                format!("--kubeconfig={}", p(&sched_kubeconfig)),
                format!("--authentication-kubeconfig={}", p(&sched_kubeconfig)),
                format!("--authorization-kubeconfig={}", p(&sched_kubeconfig)),
                "--secure-port=0".into(),
                "--leader-elect=false".into(),
                "--kube-api-qps=200".into(),
                "--kube-api-burst=400".into(),
            ],
        )?;
        let stages = cluster.dir_path.join("stages.yaml");
        let text = std::fs::read_to_string(&binaries.stages)
            .map_err(|e| Error::io("reading the KWOK stage file", e))?;
        std::fs::write(
            &stages,
            with_bare_pod_completion(&with_failure_stage(&with_completion_delay(&text))),
        )
        .map_err(|e| Error::io("writing the KWOK stage file", e))?;
        cluster.spawn(
            "kwok",
            vec![
                format!("--kubeconfig={}", p(&cluster.kubeconfig)),
                format!("--config={}", p(&stages)),
                "--manage-all-nodes=false".into(),
                format!(
                    "--manage-nodes-with-annotation-selector={}={}",
                    KWOK_NODE_ANNOTATION.0, KWOK_NODE_ANNOTATION.1
                ),
                "--manage-nodes-with-label-selector=".into(),
                "--manage-single-node=".into(),
                "--cidr=10.244.0.0/16".into(),
                "--node-ip=10.0.0.2".into(),
                "--node-lease-duration-seconds=40".into(),
            ],
        )?;

        if !cluster.nodes.is_empty() {
            let list = json!({
                "apiVersion": "v1",
                "kind": "List",
                "items": cluster.nodes.iter().map(NodeSpec::to_json).collect::<Vec<_>>(),
            });
            cluster.kubectl_stdin(&["create", "-f", "-"], list.to_string().as_bytes())?;
        }
        let names: Vec<String> = cluster.nodes.iter().map(|n| n.name.clone()).collect();
        let mut last_state = String::new();
        let waited = cluster.wait_until(deadline, "all nodes to be Ready", |k| {
            let out = k.run(&["get", "nodes", "-o", "json"])?;
            let (ready, state) = nodes_ready(&out, &names);
            last_state = state;
            Ok(ready.then_some(()))
        });
        if let Err(Error::Timeout { what, after, .. }) = waited {
            return Err(Error::Timeout {
                what,
                after,
                detail: format!("; node states: {last_state}"),
            });
        }
        waited?;
        cluster.mark("nodes ready", t0);
        cluster.wait_until(deadline, "the default service account", |k| {
            Ok(k.run(&[
                "get",
                "serviceaccount",
                "default",
                "-n",
                "default",
                "-o",
                "name",
            ])
            .ok()
            .map(|_| ()))
        })?;
        cluster.mark("ready", t0);
        Ok(cluster)
    }

    /// cert-manager's CRDs (server-side: they are too large for the
    /// last-applied annotation), its cluster resource namespace, then its
    /// controller and CA injector with the admin kubeconfig.
    fn start_cert_manager(&mut self, cm: &CertManager, deadline: Instant) -> Result<(), Error> {
        let t0 = Instant::now();
        let crds = cm.crds().display().to_string();
        self.kubectl.run(&["apply", "--server-side", "-f", &crds])?;
        let within = deadline.saturating_duration_since(Instant::now());
        self.wait_established(cert_manager::CRDS, within)?;
        self.kubectl
            .run(&["create", "namespace", cert_manager::NAMESPACE])?;
        let kubeconfig = format!("--kubeconfig={}", self.kubeconfig.display());
        for name in cert_manager::PROGRAMS {
            self.spawn_program(name, &cm.program(name), vec![kubeconfig.clone()])?;
        }
        self.mark("cert-manager", t0);
        Ok(())
    }

    fn spawn(&mut self, name: &'static str, args: Vec<String>) -> Result<(), Error> {
        let program = self.binaries.path(name);
        self.spawn_program(name, &program, args)
    }

    fn spawn_program(
        &mut self,
        name: &'static str,
        program: &Path,
        args: Vec<String>,
    ) -> Result<(), Error> {
        let log = self.dir_path.join("logs").join(format!("{name}.log"));
        let component = Component::spawn(name, program, &args, log)?;
        if let Some(w) = self.watchdog.as_mut() {
            w.watch(component.pid());
        }
        self.components.push(component);
        Ok(())
    }

    fn mark(&mut self, phase: &'static str, t0: Instant) {
        self.timings.push((phase, t0.elapsed()));
    }

    /// Polls `probe` every 100ms until it yields `Some`, a component exits,
    /// or the deadline passes.
    fn wait_until<T>(
        &mut self,
        deadline: Instant,
        what: &str,
        mut probe: impl FnMut(&Kubectl) -> Result<Option<T>, Error>,
    ) -> Result<T, Error> {
        let started = Instant::now();
        loop {
            for c in self.components.iter_mut() {
                if let Some(how) = c.exited() {
                    return Err(c.failure(format!("{how} while waiting for {what}")));
                }
            }
            if let Some(v) = probe(&self.kubectl)? {
                return Ok(v);
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: what.to_string(),
                    after: started.elapsed(),
                    detail: String::new(),
                });
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills kube-apiserver (SIGKILL: no graceful close of its watches and
    /// connections), keeps it down for `down`, starts it again with the same
    /// flags and waits up to `within` for its `/readyz`. etcd keeps the
    /// state; the other components reconnect on their own. For fault tests
    /// on a cluster of their own (the shared one is not `mut`).
    pub fn restart_apiserver(&mut self, down: Duration, within: Duration) -> Result<(), Error> {
        let Some(i) = self
            .components
            .iter()
            .position(|c| c.name == "kube-apiserver")
        else {
            return Err(Error::Options("kube-apiserver is not running".into()));
        };
        let old = self.components.remove(i);
        process::kill_all(&mut [old]);
        thread::sleep(down);
        let args = self.apiserver_args.clone();
        self.spawn("kube-apiserver", args)?;
        let port: u16 = self
            .server_url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| Error::Options(format!("no port in {}", self.server_url)))?;
        self.wait_until(
            Instant::now() + within,
            "kube-apiserver /readyz after a restart",
            |k| Ok(apiserver_ready(k, port)),
        )
    }

    /// Admin kubeconfig (client certificate in group `system:masters`).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// PEM of the cluster CA: it signed the apiserver's serving certificate
    /// and is the `--client-ca-file`.
    pub fn ca_cert_pem(&self) -> &str {
        &self.pki.ca_cert_pem
    }

    /// The directory holding all binaries built by build.sh, kubectl included.
    /// The front proxy's client certificate and key (PEM files): what
    /// kube-apiserver presents to aggregated API servers.
    pub fn front_proxy_client(&self) -> (&Path, &Path) {
        (
            &self.pki.front_proxy_client.cert,
            &self.pki.front_proxy_client.key,
        )
    }

    pub fn bin_dir(&self) -> &Path {
        &self.binaries.bin_dir
    }

    /// The cluster's temp dir: `logs/<component>.log`, `pki/`, `etcd/`, kubeconfigs.
    pub fn dir(&self) -> &Path {
        &self.dir_path
    }

    /// Log file of a component: `etcd`, `kube-apiserver`,
    /// `kube-controller-manager`, `kube-scheduler` or `kwok`.
    pub fn log_path(&self, component: &str) -> PathBuf {
        self.dir_path.join("logs").join(format!("{component}.log"))
    }

    /// The nodes this cluster was started with.
    pub fn nodes(&self) -> &[NodeSpec] {
        &self.nodes
    }

    /// etcd's client URL, `http://127.0.0.1:PORT`; its `/metrics` is served there.
    pub fn etcd_url(&self) -> &str {
        &self.etcd_url
    }

    /// Pids of the running components (each leads its own process group).
    pub fn pids(&self) -> Vec<(&'static str, u32)> {
        self.components.iter().map(|c| (c.name, c.pid())).collect()
    }

    /// Elapsed time since `start` was called at the end of each phase
    /// (`binaries` is measured on its own; the others from after it).
    pub fn timings(&self) -> &[(&'static str, Duration)] {
        &self.timings
    }

    /// A `kubectl` command (the one built by build.sh) with `--kubeconfig` set.
    pub fn kubectl(&self) -> Command {
        self.kubectl.command()
    }

    /// Runs kubectl with `args`, returns stdout, or an error with stderr.
    pub fn run_kubectl(&self, args: &[&str]) -> Result<String, Error> {
        self.kubectl.run(args)
    }

    /// `kubectl apply -f -` with `manifest` (YAML or JSON) on stdin.
    pub fn apply(&self, manifest: &str) -> Result<String, Error> {
        self.kubectl
            .run_stdin(&["apply", "-f", "-"], manifest.as_bytes())
    }

    /// Waits until every CRD named (`crd/<name>`) is Established.
    /// `kubectl wait` fails at once instead of waiting while a CRD it reads
    /// has no conditions yet (a busy apiserver right after the apply), so
    /// it is asked again until `within` has passed.
    pub fn wait_established(&self, crds: &[&str], within: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + within;
        let mut args = vec!["wait", "--for=condition=Established", "--timeout=30s"];
        args.extend_from_slice(crds);
        loop {
            match self.kubectl.run(&args) {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() >= deadline => {
                    return Err(Error::Timeout {
                        what: format!("{} to be Established", crds.join(" ")),
                        after: within,
                        detail: format!(": {e}"),
                    })
                }
                Err(_) => thread::sleep(Duration::from_millis(250)),
            }
        }
    }

    /// Runs kubectl with `args` and `stdin`, returns stdout.
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &[u8]) -> Result<String, Error> {
        self.kubectl.run_stdin(args, stdin)
    }

    /// Kills every component (SIGKILL to each process group; the state is
    /// disposable) and removes the temp dir unless `keep_dir` was set.
    /// Idempotent; also runs on drop.
    pub fn stop(&mut self) {
        process::kill_all(&mut self.components);
        self.components.clear();
        if let Some(mut w) = self.watchdog.take() {
            w.disarm();
        }
        if let Some(dir) = self.dir.take() {
            if self.keep_dir {
                let _ = dir.keep();
            } else {
                let _ = dir.close();
            }
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `Some` once kube-apiserver on `port` accepts connections and its
/// `/readyz` says ok.
fn apiserver_ready(k: &Kubectl, port: u16) -> Option<()> {
    TcpStream::connect((Ipv4Addr::LOCALHOST, port)).ok()?;
    k.run(&["get", "--raw=/readyz"])
        .ok()
        .filter(|out| out.trim() == "ok")
        .map(|_| ())
}

/// One cluster per test binary with [`default_nodes`], started on first use.
/// It is torn down when the process exits (PDEATHSIG and the watchdog).
///
/// # Panics
/// If the cluster cannot be started (the message says why); every later call
/// panics with the same message.
pub fn shared() -> &'static LocalCluster {
    match try_shared() {
        Ok(cluster) => cluster,
        Err(e) => panic!("starting the shared local cluster failed: {e}"),
    }
}

/// Like [`shared`], returning the start error instead of panicking.
pub fn try_shared() -> Result<&'static LocalCluster, &'static str> {
    try_shared_with(ClusterOptions::default)
}

/// Like [`shared`], but the first call of the process decides the options
/// (later calls, and [`shared`], return that same cluster).
///
/// # Panics
/// If the cluster cannot be started (the message says why).
pub fn shared_with(opts: impl FnOnce() -> ClusterOptions) -> &'static LocalCluster {
    match try_shared_with(opts) {
        Ok(cluster) => cluster,
        Err(e) => panic!("starting the shared local cluster failed: {e}"),
    }
}

fn try_shared_with(
    opts: impl FnOnce() -> ClusterOptions,
) -> Result<&'static LocalCluster, &'static str> {
    static SHARED: OnceLock<Result<LocalCluster, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| LocalCluster::start(opts()).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(String::as_str)
}

fn validate(opts: &ClusterOptions) -> Result<(), Error> {
    let mut seen = std::collections::BTreeSet::new();
    for n in &opts.nodes {
        if n.name.is_empty() || !seen.insert(n.name.as_str()) {
            return Err(Error::Options(format!(
                "node names must be non-empty and unique, got {:?}",
                n.name
            )));
        }
        for t in &n.taints {
            if !matches!(
                t.effect.as_str(),
                "NoSchedule" | "PreferNoSchedule" | "NoExecute"
            ) {
                return Err(Error::Options(format!(
                    "taint {}={} on node {}: effect must be NoSchedule, PreferNoSchedule or NoExecute, got {:?}",
                    t.key, t.value, n.name, t.effect
                )));
            }
        }
    }
    Ok(())
}

/// Distinct free 127.0.0.1 ports (held open together so they differ).
fn free_ports<const N: usize>() -> Result<[u16; N], Error> {
    let mut listeners = Vec::with_capacity(N);
    let mut ports = [0u16; N];
    for port in ports.iter_mut() {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| Error::io("finding a free 127.0.0.1 port", e))?;
        *port = l
            .local_addr()
            .map_err(|e| Error::io("finding a free 127.0.0.1 port", e))?
            .port();
        listeners.push(l);
    }
    Ok(ports)
}

/// Runs the cluster's kubectl against its admin kubeconfig.
#[derive(Debug, Clone)]
struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
}

impl Kubectl {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg(format!("--kubeconfig={}", self.kubeconfig.display()));
        cmd
    }

    fn run(&self, args: &[&str]) -> Result<String, Error> {
        self.run_with(args, None)
    }

    fn run_stdin(&self, args: &[&str], stdin: &[u8]) -> Result<String, Error> {
        self.run_with(args, Some(stdin))
    }

    fn run_with(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<String, Error> {
        let mut cmd = self.command();
        cmd.arg("--request-timeout=10s")
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("running {}", self.bin.display()), e))?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input)
                .map_err(|e| Error::io("writing kubectl's stdin", e))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| Error::io("waiting for kubectl", e))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(Error::Kubectl {
                args: args.join(" "),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    }
}

fn write_kubeconfig(path: &Path, server: &str, ca: &Path, user: &ClientCert) -> Result<(), Error> {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "batchgate-local",
            "cluster": { "server": server, "certificate-authority": ca },
        }],
        "users": [{
            "name": "batchgate-local",
            "user": { "client-certificate": user.cert, "client-key": user.key },
        }],
        "contexts": [{
            "name": "batchgate-local",
            "context": { "cluster": "batchgate-local", "user": "batchgate-local" },
        }],
        "current-context": "batchgate-local",
    });
    let text = serde_json::to_string_pretty(&config)
        .map_err(|e| Error::io("encoding a kubeconfig", std::io::Error::other(e)))?;
    fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// Whether every named node is Ready and free of the `not-ready` taint, and
/// a one-line summary of what was seen.
fn nodes_ready(nodes_json: &str, names: &[String]) -> (bool, String) {
    let Ok(list) = serde_json::from_str::<Value>(nodes_json) else {
        return (false, "unparsable `kubectl get nodes` output".into());
    };
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let mut all = true;
    let mut state = Vec::new();
    for name in names {
        let node = items
            .iter()
            .find(|n| n["metadata"]["name"] == name.as_str());
        let ready = node.is_some_and(|n| {
            let cond_ok = n["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
            let untainted = n["spec"]["taints"].as_array().is_none_or(|ts| {
                !ts.iter()
                    .any(|t| t["key"] == "node.kubernetes.io/not-ready")
            });
            cond_ok && untainted
        });
        all &= ready;
        state.push(format!(
            "{name}={}",
            match (node.is_some(), ready) {
                (false, _) => "missing",
                (true, false) => "not-ready",
                (true, true) => "ready",
            }
        ));
    }
    (all, state.join(", "))
}

/// Pod annotation that keeps a Job's pod running for a while on a KWOK node
/// (a Go duration, e.g. `"5s"`); without it a Job's pods complete at once.
/// A pod no workload controller owns completes only when it carries it.
pub const POD_RUNTIME_ANNOTATION: &str = "pod-complete.stage.kwok.x-k8s.io/delay";

/// KWOK's "fast" pod-complete stage, made to wait for the duration in
/// [`POD_RUNTIME_ANNOTATION`] (as KWOK's own "general" stages do), so tests
/// can watch jobs hold quota while they run.
fn with_completion_delay(stages: &str) -> String {
    let marker = "  name: pod-complete\nspec:\n";
    let delay = format!(
        "  name: pod-complete\nspec:\n  delay:\n    durationMilliseconds: 0\n    durationFrom:\n      expressionFrom: '.metadata.annotations[\"{POD_RUNTIME_ANNOTATION}\"]'\n"
    );
    stages.replacen(marker, &delay, 1)
}

/// Pod annotation that makes a Running pod on a KWOK node fail after the
/// duration it holds (a Go duration, e.g. `"1s"`): phase Failed, every
/// container terminated with exit code 1 (reason `Error`). Any pod, owned
/// by a Job or not; it takes precedence over [`POD_RUNTIME_ANNOTATION`].
pub const POD_FAIL_ANNOTATION: &str = "pod-fail.stage.kwok.x-k8s.io/delay";

/// Adds a `pod-fail` stage for pods annotated [`POD_FAIL_ANNOTATION`], and
/// keeps KWOK's pod-complete stage off them (KWOK picks at random among
/// stages that match the same pod, so the two must not overlap).
fn with_failure_stage(stages: &str) -> String {
    let marker = "  name: pod-complete\n";
    let exclude = format!(
        "    matchExpressions:\n    - key: '.metadata.annotations[\"{POD_FAIL_ANNOTATION}\"]'\n      operator: 'DoesNotExist'\n"
    );
    let mut out = match stages.find(marker) {
        Some(at) => {
            let (head, tail) = stages.split_at(at);
            format!(
                "{head}{}",
                tail.replacen("    matchExpressions:\n", &exclude, 1)
            )
        }
        None => stages.to_string(),
    };
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        r#"---
# pod-fail: added by batchgate's cluster launcher
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-fail
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.annotations["{POD_FAIL_ANNOTATION}"]'
      operator: 'Exists'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["{POD_FAIL_ANNOTATION}"]'
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        reason: PodFailed
        type: Ready
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        reason: PodFailed
        type: ContainersReady
      containerStatuses:
      {{{{ range $index, $item := .spec.containers }}}}
      - image: {{{{ $item.image | Quote }}}}
        name: {{{{ $item.name | Quote }}}}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 1
            finishedAt: {{{{ $now | Quote }}}}
            reason: Error
            startedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: Failed
"#
    ));
    out
}

/// Adds a `pod-complete-unowned` stage: KWOK's pod-complete stage only
/// completes pods owned by a Job, so a Running pod carrying
/// [`POD_RUNTIME_ANNOTATION`] that no workload controller owns (a bare pod,
/// or one owned by an AppWrapper) succeeds after that duration too. Pods
/// owned by a Job (KWOK's own stage), a ReplicaSet, StatefulSet or DaemonSet,
/// pods without the annotation, and pods carrying [`POD_FAIL_ANNOTATION`]
/// (the pod-fail stage's) are left alone, so no two stages match one pod.
fn with_bare_pod_completion(stages: &str) -> String {
    let mut out = stages.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        r#"---
# pod-complete-unowned: added by batchgate's cluster launcher
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete-unowned
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.annotations["{POD_RUNTIME_ANNOTATION}"]'
      operator: 'Exists'
    - key: '.metadata.annotations["{POD_FAIL_ANNOTATION}"]'
      operator: 'DoesNotExist'
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'NotIn'
      values:
      - 'Job'
      - 'ReplicaSet'
      - 'StatefulSet'
      - 'DaemonSet'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["{POD_RUNTIME_ANNOTATION}"]'
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        reason: PodCompleted
        type: Ready
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        reason: PodCompleted
        type: ContainersReady
      containerStatuses:
      {{{{ range $index, $item := .spec.containers }}}}
      - image: {{{{ $item.image | Quote }}}}
        name: {{{{ $item.name | Quote }}}}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{{{ $now | Quote }}}}
            reason: Completed
            startedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: Succeeded
"#
    ));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn unowned_annotated_pods_get_their_own_completion_stage() {
        let stages = "kind: Stage\nmetadata:\n  name: pod-complete\nspec: {}";
        let out = super::with_bare_pod_completion(stages);
        assert!(
            out.starts_with("kind: Stage\nmetadata:\n  name: pod-complete\nspec: {}\n---\n"),
            "{out}"
        );
        let stage = &out[out
            .find("  name: pod-complete-unowned\n")
            .expect("the stage")..];
        // Opt-in by the runtime annotation, never a pod the fail stage or a
        // workload controller's stage takes.
        let runtime = format!(
            "    - key: '.metadata.annotations[\"{}\"]'\n      operator: 'Exists'\n",
            super::POD_RUNTIME_ANNOTATION
        );
        let no_fail = format!(
            "    - key: '.metadata.annotations[\"{}\"]'\n      operator: 'DoesNotExist'\n",
            super::POD_FAIL_ANNOTATION
        );
        assert!(stage.contains(&runtime), "{stage}");
        assert!(stage.contains(&no_fail), "{stage}");
        assert!(
            stage.contains(
                "operator: 'NotIn'\n      values:\n      - 'Job'\n      - 'ReplicaSet'\n"
            ),
            "{stage}"
        );
        assert!(
            stage.contains("expressionFrom: '.metadata.annotations[\""),
            "{stage}"
        );
        assert!(stage.contains("exitCode: 0\n"), "{stage}");
        assert!(stage.contains("{{ $now := Now }}"), "{stage}");
        assert!(stage.ends_with("      phase: Succeeded\n"), "{stage}");
    }

    #[test]
    fn the_pod_complete_stage_waits_for_the_annotation() {
        let stages = "kind: Stage\nmetadata:\n  name: pod-complete\nspec:\n  resourceRef: {}\n";
        let out = super::with_completion_delay(stages);
        assert!(
            out.contains("  delay:\n    durationMilliseconds: 0\n"),
            "{out}"
        );
        assert!(out.contains(super::POD_RUNTIME_ANNOTATION));
        assert!(out.ends_with("  resourceRef: {}\n"));
    }

    #[test]
    fn the_pod_fail_stage_is_added_and_the_pod_complete_stage_skips_its_pods() {
        let stages = "kind: Stage\nmetadata:\n  name: pod-ready\nspec:\n  selector:\n    matchExpressions:\n    - key: a\n---\nkind: Stage\nmetadata:\n  name: pod-complete\nspec:\n  selector:\n    matchExpressions:\n    - key: b\n";
        let out = super::with_failure_stage(stages);
        let exclude = format!(
            "    - key: '.metadata.annotations[\"{}\"]'\n      operator: 'DoesNotExist'\n",
            super::POD_FAIL_ANNOTATION
        );
        // pod-ready untouched, pod-complete excludes the annotated pods.
        assert!(out.starts_with("kind: Stage\nmetadata:\n  name: pod-ready\nspec:\n  selector:\n    matchExpressions:\n    - key: a\n---\n"), "{out}");
        assert!(
            out.contains(&format!("  name: pod-complete\nspec:\n  selector:\n    matchExpressions:\n{exclude}    - key: b\n")),
            "{out}"
        );
        assert_eq!(out.matches(&exclude).count(), 1, "{out}");
        let fail = &out[out.find("  name: pod-fail\n").expect("a pod-fail stage")..];
        assert!(fail.contains("operator: 'Exists'"), "{fail}");
        assert!(fail.contains("exitCode: 1\n"), "{fail}");
        assert!(fail.contains("{{ $now := Now }}"), "{fail}");
        assert!(fail.ends_with("      phase: Failed\n"), "{fail}");
    }

    use super::*;

    #[test]
    fn node_json_carries_labels_taints_and_capacity() {
        let n = NodeSpec::new("n1")
            .label("pool", "a")
            .taint("k", "v", "NoSchedule")
            .gpus(2)
            .cpu("4")
            .memory("8Gi")
            .pods(20);
        let j = n.to_json();
        assert_eq!(j["metadata"]["labels"]["pool"], "a");
        assert_eq!(j["metadata"]["labels"]["kubernetes.io/hostname"], "n1");
        assert_eq!(j["metadata"]["annotations"]["kwok.x-k8s.io/node"], "fake");
        assert_eq!(j["spec"]["taints"][0]["effect"], "NoSchedule");
        assert_eq!(j["status"]["capacity"]["nvidia.com/gpu"], "2");
        assert_eq!(j["status"]["allocatable"]["cpu"], "4");
        assert_eq!(j["status"]["allocatable"]["pods"], "20");
        assert!(NodeSpec::new("n2").to_json()["status"]["capacity"]
            .get("nvidia.com/gpu")
            .is_none());
    }

    #[test]
    fn options_are_validated() {
        let dup = ClusterOptions {
            nodes: vec![NodeSpec::new("a"), NodeSpec::new("a")],
            ..ClusterOptions::default()
        };
        assert!(matches!(validate(&dup), Err(Error::Options(_))));
        let bad = ClusterOptions {
            nodes: vec![NodeSpec::new("a").taint("k", "v", "Never")],
            ..ClusterOptions::default()
        };
        assert!(matches!(validate(&bad), Err(Error::Options(_))));
        assert!(validate(&ClusterOptions::default()).is_ok());
    }

    #[test]
    fn readiness_needs_every_node_ready_and_untainted() {
        let names = vec!["a".to_string(), "b".to_string()];
        let doc = |b_taint: bool| {
            json!({"items": [
                {"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                {"metadata": {"name": "b"},
                 "spec": {"taints": if b_taint { json!([{"key": "node.kubernetes.io/not-ready"}]) } else { json!([]) }},
                 "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            ]})
            .to_string()
        };
        assert!(nodes_ready(&doc(false), &names).0);
        let (ok, state) = nodes_ready(&doc(true), &names);
        assert!(!ok);
        assert_eq!(state, "a=ready, b=not-ready");
        assert!(!nodes_ready(r#"{"items": []}"#, &names).0);
    }

    #[test]
    fn public_types_are_thread_safe() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<Error>();
        assert_send_sync::<LocalCluster>();
        assert_send_sync::<ClusterOptions>();
    }

    #[test]
    fn free_ports_are_distinct() {
        let [a, b, c] = free_ports().unwrap();
        assert!(a != b && b != c && a != c);
    }
}
