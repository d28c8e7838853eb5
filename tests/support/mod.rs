//! Test harness: runs the real `batchgate` binary and talks to it over real
//! TLS with a rustls client that trusts only the CA batchgate generated.
#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{mpsc, Arc},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{client::conn::http1, Request, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{json, Value};
use tokio::net::TcpStream as TokioTcp;
use tokio_rustls::TlsConnector;

pub const BIN: &str = env!("CARGO_BIN_EXE_batchgate");

/// The last `n` lines of a log, oldest first: what a failing test prints
/// of a process that has said more than a reader can take in.
pub fn last_lines(log: &str, n: usize) -> Vec<&str> {
    let mut tail: Vec<&str> = log.lines().rev().take(n).collect();
    tail.reverse();
    tail
}

pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub probe: SocketAddr,
    /// The visibility API's listener (with a cluster only).
    pub visibility: Option<SocketAddr>,
    pub cert_dir: PathBuf,
    pub ca_pem: String,
    _tmp: tempfile::TempDir,
    pub stderr: Arc<std::sync::Mutex<String>>,
}

/// `batchgate certs --out dir`
pub fn gen_certs(dir: &Path) {
    let st = Command::new(BIN)
        .args(["certs", "--out"])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .expect("run batchgate certs");
    assert!(st.success());
}

impl Server {
    pub fn start(args: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let cert_dir = tmp.path().join("certs");
        gen_certs(&cert_dir);
        Self::start_with_dir(tmp, cert_dir, args)
    }

    pub fn start_with_dir(tmp: tempfile::TempDir, cert_dir: PathBuf, args: &[&str]) -> Server {
        let dir = cert_dir.display().to_string();
        let mut all = vec!["--no-cluster", "--cert-dir", dir.as_str()];
        all.extend_from_slice(args);
        Self::spawn(tmp, Some(cert_dir.clone()), &all, None)
    }

    /// Connected to a cluster through `kubeconfig`, certificates from `cert_dir`.
    pub fn start_in_cluster(kubeconfig: &Path, cert_dir: Option<PathBuf>, args: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let cert_dir = cert_dir.or_else(|| {
            let d = tmp.path().join("certs");
            gen_certs(&d);
            Some(d)
        });
        let mut all: Vec<&str> = Vec::new();
        let dir_s = cert_dir.as_ref().map(|d| d.display().to_string());
        if !args.contains(&"--cert-secret") {
            all.extend(["--cert-dir", dir_s.as_deref().unwrap()]);
        }
        all.extend_from_slice(args);
        Self::spawn(tmp, cert_dir, &all, Some(kubeconfig))
    }

    fn spawn(
        tmp: tempfile::TempDir,
        cert_dir: Option<PathBuf>,
        args: &[&str],
        kubeconfig: Option<&Path>,
    ) -> Server {
        let ca_pem = cert_dir
            .as_ref()
            .and_then(|d| std::fs::read_to_string(d.join("ca.crt")).ok())
            .unwrap_or_default();
        let mut cmd = Command::new(BIN);
        cmd.arg("serve");
        // A test that needs a fixed webhook address passes its own --listen.
        if !args.contains(&"--listen") {
            cmd.args(["--listen", "127.0.0.1:0"]);
        }
        cmd.args([
            "--probe-listen",
            "127.0.0.1:0",
            "--visibility-listen",
            "127.0.0.1:0",
        ])
        .args(args)
        .env(
            "RUST_LOG",
            std::env::var("BATCHGATE_E2E_RUST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        if let Some(k) = kubeconfig {
            cmd.env("KUBECONFIG", k);
        }
        // The server dies with the thread that started it, even when the test
        // binary is killed and no Drop runs.
        // SAFETY: prctl is async-signal-safe and touches only this process.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("start batchgate serve");
        let stderr = Arc::new(std::sync::Mutex::new(String::new()));
        {
            let err = child.stderr.take().unwrap();
            let sink = stderr.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    // A test that panicked while reading the log (in an
                    // assert's message) poisons the lock; the log goes on.
                    let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                    s.push_str(&line);
                    s.push('\n');
                }
            });
        }
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let (mut addr, mut probe, mut visibility) = (None, None, None);
        let deadline = Instant::now() + Duration::from_secs(60);
        while addr.is_none() || probe.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "server did not report its addresses; stderr:\n{}",
                    stderr.lock().unwrap()
                )
            });
            if let Some(a) = line.strip_prefix("webhook listening on https://") {
                addr = Some(a.parse().unwrap());
            }
            if let Some(a) = line.strip_prefix("probes listening on http://") {
                probe = Some(a.parse().unwrap());
            }
            if let Some(a) = line.strip_prefix("visibility API listening on https://") {
                visibility = Some(a.parse().unwrap());
            }
        }
        Server {
            child,
            addr: addr.unwrap(),
            probe: probe.unwrap(),
            visibility,
            cert_dir: cert_dir.unwrap_or_default(),
            ca_pem,
            _tmp: tmp,
            stderr,
        }
    }

    /// A server that lives as long as the test binary: started on a thread
    /// that never exits (PDEATHSIG follows the spawning thread).
    pub fn start_forever(make: impl FnOnce() -> Server + Send + 'static) -> Server {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(make());
            loop {
                std::thread::park();
            }
        });
        rx.recv().expect("server started")
    }

    /// Waits until `/readyz` answers 200.
    pub fn wait_ready(&self, within: Duration) {
        let deadline = Instant::now() + within;
        while self.probe_get("/readyz").0 != 200 {
            assert!(
                Instant::now() < deadline,
                "not ready after {within:?}; stderr:\n{}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0);
    }

    /// Resident set size in KiB, from /proc.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    }

    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// A plain-HTTP GET on the probe listener: (status, body).
    pub fn probe_get(&self, path: &str) -> (u16, String) {
        http_get(self.probe, path)
    }

    pub fn client(&self) -> Client {
        Client::new(self.addr, &self.ca_pem)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|x| x.1.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A rustls client configuration trusting only `ca_pem`.
pub fn tls_config(ca_pem: &str, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(cfg)
}

pub struct Client {
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
}

pub struct Conn {
    pub sender: http1::SendRequest<Full<Bytes>>,
    /// Hex serial of the certificate the server presented.
    pub serial: String,
}

pub fn serial_of(der: &CertificateDer<'_>) -> String {
    let (_, cert) = x509_parser::parse_x509_certificate(der).unwrap();
    cert.raw_serial_as_string().replace(':', "")
}

impl Client {
    pub fn new(addr: SocketAddr, ca_pem: &str) -> Client {
        Client {
            addr,
            tls: tls_config(ca_pem, &[b"http/1.1"]),
        }
    }

    /// A new TLS connection (a fresh handshake) with HTTP/1.1 keep-alive.
    pub async fn connect(&self) -> Conn {
        let tcp = TokioTcp::connect(self.addr).await.unwrap();
        let tls = TlsConnector::from(self.tls.clone())
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .expect("TLS handshake with the batchgate CA");
        let serial = serial_of(&tls.get_ref().1.peer_certificates().unwrap()[0]);
        let (sender, conn) = http1::handshake(TokioIo::new(tls)).await.unwrap();
        tokio::spawn(conn);
        Conn { sender, serial }
    }

    /// POSTs on a new connection; (status, JSON body), or what failed.
    pub async fn try_post(
        &self,
        path: &str,
        body: impl Into<Bytes>,
    ) -> Result<(StatusCode, Value), String> {
        let tcp = TokioTcp::connect(self.addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let tls = TlsConnector::from(self.tls.clone())
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .map_err(|e| format!("TLS handshake: {e}"))?;
        let (mut sender, conn) = http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| format!("HTTP/1.1 handshake: {e}"))?;
        tokio::spawn(conn);
        let req = Request::post(path)
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Full::new(body.into()))
            .unwrap();
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| format!("request: {e}"))?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("response body: {e}"))?
            .to_bytes();
        let v = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| json!({"raw": String::from_utf8_lossy(&bytes)}));
        Ok((status, v))
    }

    /// POSTs on a new connection; (status, JSON body).
    pub async fn post(&self, path: &str, body: impl Into<Bytes>) -> (StatusCode, Value) {
        let mut c = self.connect().await;
        c.post(path, body).await
    }
}

impl Conn {
    pub async fn post(&mut self, path: &str, body: impl Into<Bytes>) -> (StatusCode, Value) {
        let req = Request::post(path)
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Full::new(body.into()))
            .unwrap();
        let resp = self.sender.send_request(req).await.expect("response");
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| json!({"raw": String::from_utf8_lossy(&bytes)}));
        (status, v)
    }
}

pub fn job(labels: Value, spec: Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sample", "namespace": "team-a", "labels": labels},
        "spec": spec,
    })
}

pub fn review(
    uid: &str,
    op: &str,
    kind: (&str, &str, &str),
    object: Value,
    old: Option<Value>,
) -> Vec<u8> {
    let mut req = json!({
        "uid": uid,
        "kind": {"group": kind.0, "version": kind.1, "kind": kind.2},
        "resource": {"group": kind.0, "version": kind.1, "resource": "jobs"},
        "operation": op,
        "namespace": "team-a",
        "name": "sample",
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": object,
    });
    if let Some(o) = old {
        req["oldObject"] = o;
    }
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}),
    )
    .unwrap()
}

pub const JOB: (&str, &str, &str) = ("batch", "v1", "Job");

/// Decodes the base64 JSON Patch of a response.
pub fn patch_of(resp: &Value) -> Option<Value> {
    use base64::Engine;
    let b64 = resp["response"]["patch"].as_str()?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    Some(serde_json::from_slice(&raw).unwrap())
}

pub fn read_all(mut s: impl Read) -> Vec<u8> {
    let mut v = Vec::new();
    let _ = s.read_to_end(&mut v);
    v
}

/// A valid review still gets an answer: the server is up and responsive.
pub async fn assert_still_serving(server: &Server) {
    let (status, resp) = server
        .client()
        .post(
            "/mutate",
            review(
                "alive",
                "CREATE",
                JOB,
                job(json!({"kueue.x-k8s.io/queue-name": "q"}), json!({})),
                None,
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["uid"], "alive");
    assert!(patch_of(&resp).is_some());
}

/// Polls `probe` every 200 ms until it yields `Some`; panics naming `what`
/// after `within`.
pub fn wait_for<T>(
    what: &str,
    within: std::time::Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> T {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// End-to-end helpers over the real local control plane.
pub mod e2e {
    use std::{path::Path, process::Command, time::Duration};

    use batchgate_localcluster::LocalCluster;
    use serde_json::Value;

    use super::BIN;

    /// Registers batchgate's webhooks at `https://<addr>` (generated by
    /// `batchgate webhooks`, as manifests/ is) and waits until the apiserver
    /// calls them.
    pub fn register(
        cluster: &LocalCluster,
        addr: std::net::SocketAddr,
        ca_file: Option<&Path>,
        failure_policy: &str,
    ) {
        register_with(cluster, addr, ca_file, failure_policy, None)
    }

    /// [`register`] for the integrations a configuration file enables
    /// (`integrations.frameworks`).
    pub fn register_with(
        cluster: &LocalCluster,
        addr: std::net::SocketAddr,
        ca_file: Option<&Path>,
        failure_policy: &str,
        config: Option<&Path>,
    ) {
        let yaml = webhooks_yaml(addr, ca_file, failure_policy, config);
        cluster.apply(&yaml).unwrap();
    }

    /// What `batchgate webhooks` prints for a server at `https://<addr>`.
    pub fn webhooks_yaml(
        addr: std::net::SocketAddr,
        ca_file: Option<&Path>,
        failure_policy: &str,
        config: Option<&Path>,
    ) -> String {
        let url = format!("https://{addr}");
        let mut cmd = Command::new(BIN);
        cmd.args([
            "webhooks",
            "--url",
            &url,
            "--failure-policy",
            failure_policy,
        ]);
        if let Some(ca) = ca_file {
            cmd.arg("--ca-file").arg(ca);
        }
        if let Some(cfg) = config {
            cmd.arg("--config").arg(cfg);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// A kubeconfig for batchgate's ServiceAccount (`batchgate-system/batchgate`),
    /// bound to cluster-admin by the ClusterRoleBinding `binding`, with a
    /// two-hour token: batchgate runs as it would in the cluster.
    pub fn service_account_kubeconfig(
        c: &LocalCluster,
        dir: &Path,
        binding: &str,
    ) -> std::path::PathBuf {
        let _ = c.run_kubectl(&["create", "namespace", "batchgate-system"]);
        let _ = c.run_kubectl(&[
            "create",
            "serviceaccount",
            "batchgate",
            "-n",
            "batchgate-system",
        ]);
        let _ = c.run_kubectl(&[
            "create",
            "clusterrolebinding",
            binding,
            "--clusterrole=cluster-admin",
            "--serviceaccount=batchgate-system:batchgate",
        ]);
        let token = c
            .run_kubectl(&[
                "create",
                "token",
                "batchgate",
                "-n",
                "batchgate-system",
                "--duration=2h",
            ])
            .unwrap();
        token_kubeconfig(c, dir, &token, None)
    }

    /// `dir/sa.kubeconfig`: the cluster's server and CA with `token`, its
    /// context's namespace `namespace` (a pod's, as in-cluster config
    /// gives it) or none.
    pub fn token_kubeconfig(
        c: &LocalCluster,
        dir: &Path,
        token: &str,
        namespace: Option<&str>,
    ) -> std::path::PathBuf {
        let ca = dir.join("apiserver-ca.crt");
        std::fs::write(&ca, c.ca_cert_pem()).unwrap();
        let path = dir.join("sa.kubeconfig");
        let mut context = serde_json::json!({"cluster": "local", "user": "sa"});
        if let Some(ns) = namespace {
            context["namespace"] = serde_json::json!(ns);
        }
        let kc = serde_json::json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "local", "cluster": {"server": c.server_url(), "certificate-authority": ca}}],
            "users": [{"name": "sa", "user": {"token": token.trim()}}],
            "contexts": [{"name": "sa", "context": context}],
            "current-context": "sa",
        });
        std::fs::write(&path, serde_json::to_string(&kc).unwrap()).unwrap();
        path
    }

    /// The helm binary, built (or found in the cache) by the project's
    /// script.
    pub fn helm() -> &'static str {
        static HELM: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        HELM.get_or_init(|| {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/build-helm.sh");
            let out = Command::new(script)
                .stderr(std::process::Stdio::inherit())
                .output()
                .expect("running tests/cluster/build-helm.sh");
            assert!(out.status.success(), "tests/cluster/build-helm.sh failed");
            let stdout = String::from_utf8(out.stdout).unwrap();
            stdout.lines().last().unwrap().trim().to_string()
        })
    }

    /// Polls a server-side dry run until a queued Job comes back suspended.
    pub fn wait_webhook_active(cluster: &LocalCluster, ns: &str) {
        let probe = queued_job("webhook-probe", ns, "probe-queue");
        for _ in 0..100 {
            if let Ok(out) = cluster.kubectl_stdin(
                &["create", "--dry-run=server", "-o", "json", "-f", "-"],
                probe.as_bytes(),
            ) {
                let v: Value = serde_json::from_str(&out).unwrap();
                if v["spec"]["suspend"] == Value::Bool(true) {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("the apiserver never called batchgate's mutating webhook");
    }

    pub fn namespace(cluster: &LocalCluster, name: &str) -> String {
        let _ = cluster.run_kubectl(&["create", "namespace", name]);
        name.to_string()
    }

    pub fn queued_job(name: &str, ns: &str, queue: &str) -> String {
        format!(
            r#"{{"apiVersion": "batch/v1", "kind": "Job",
  "metadata": {{"name": "{name}", "namespace": "{ns}",
                "labels": {{"kueue.x-k8s.io/queue-name": "{queue}", "team": "a"}},
                "annotations": {{"example.com/keep": "me"}}}},
  "spec": {{"parallelism": 2, "completions": 2, "backoffLimit": 1,
            "template": {{"spec": {{"restartPolicy": "Never",
              "containers": [{{"name": "main", "image": "busybox", "command": ["true"],
                               "resources": {{"requests": {{"cpu": "100m"}}}}}}]}}}}}}}}"#
        )
    }

    pub fn plain_job(name: &str, ns: &str) -> String {
        format!(
            r#"{{"apiVersion": "batch/v1", "kind": "Job",
  "metadata": {{"name": "{name}", "namespace": "{ns}", "labels": {{"team": "a"}}}},
  "spec": {{"completions": 2, "parallelism": 2,
            "template": {{"spec": {{"restartPolicy": "Never",
              "containers": [{{"name": "main", "image": "busybox", "command": ["true"]}}]}}}}}}}}"#
        )
    }

    pub fn get_json(cluster: &LocalCluster, args: &[&str]) -> Value {
        let mut a = vec!["get"];
        a.extend_from_slice(args);
        a.extend(["-o", "json"]);
        serde_json::from_str(&cluster.run_kubectl(&a).unwrap()).unwrap()
    }

    /// kubectl with its exit status, stdout and stderr.
    pub fn kubectl(
        cluster: &LocalCluster,
        args: &[&str],
        stdin: Option<&str>,
    ) -> (bool, String, String) {
        use std::io::Write;
        let mut cmd = cluster.kubectl();
        cmd.args(args)
            .stdin(if stdin.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
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
}

pub mod arbitrary;
pub mod attack;
pub mod kinds;
pub mod kueue;
pub mod queueing;
