//! Kueue's visibility API end to end: batchgate registered through the
//! shipped APIServices (manifests/apiservices.yaml) on the local cluster's
//! aggregation layer; pending Workloads of real Jobs read back with the
//! real kubectl (`get --raw`, discovery), `kubectl kueue list workload`,
//! and straight on batchgate's port as the front proxy (authentication and
//! SubjectAccessReview), and no ConfigMap written for positions;
//! `kubectl kueue explain` (batchgate's `workloads/explanation`) says why a
//! Workload waits, `kubectl kueue simulate` what would happen to a job not
//! created yet, and the engine then does what they said.

mod support;

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::Command,
    sync::Arc,
    time::Duration,
};

use batchgate_localcluster::LocalCluster;
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

const API: &str = "/apis/visibility.kueue.x-k8s.io";

fn raw(c: &LocalCluster, path: &str) -> Result<Value, String> {
    let (ok, out, err) = kubectl(c, &["get", "--raw", path], None);
    if ok {
        serde_json::from_str(&out).map_err(|e| format!("{e}: {out}"))
    } else {
        Err(err)
    }
}

/// `(name, namespace, priority, localQueueName, positionInClusterQueue,
/// positionInLocalQueue)` of a summary's items.
fn items(v: &Value) -> Vec<(String, String, i64, String, i64, i64)> {
    v["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap_or("").to_string(),
                i["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                i["priority"].as_i64().unwrap_or(-1),
                i["localQueueName"].as_str().unwrap_or("").to_string(),
                i["positionInClusterQueue"].as_i64().unwrap_or(-1),
                i["positionInLocalQueue"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

/// A GET on batchgate's visibility port over TLS, with the front proxy's
/// client certificate or none, and the given headers: (status, body).
fn direct(
    c: &LocalCluster,
    addr: std::net::SocketAddr,
    ca_pem: &str,
    front_proxy: bool,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let cfg = if front_proxy {
        let (cert, key) = c.front_proxy_client();
        let chain = rustls_pemfile::certs(&mut std::fs::read(cert).unwrap().as_slice())
            .map(Result::unwrap)
            .collect();
        let key = rustls_pemfile::private_key(&mut std::fs::read(key).unwrap().as_slice())
            .unwrap()
            .unwrap();
        b.with_client_auth_cert(chain, key).unwrap()
    } else {
        b.with_no_client_auth()
    };
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(cfg), name).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: batchgate\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    tls.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = tls.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    (status, body)
}

/// The "POSITION IN QUEUE" cell of `name`'s row in a `list workload` table.
fn position(table: &str, name: &str) -> Option<String> {
    let mut lines = table.lines();
    let header = lines.next()?;
    let from = header.find("POSITION IN QUEUE")?;
    let to = header.find("EXEC TIME")?;
    lines
        .find(|l| l.split_whitespace().next() == Some(name))
        .map(|l| {
            l.get(from..to.min(l.len()))
                .unwrap_or("")
                .trim()
                .to_string()
        })
}

#[test]
fn pending_workloads_are_served_not_written() {
    let e = env();
    let c = e.cluster;
    let vis = e
        .server
        .visibility
        .expect("batchgate reports its visibility port");
    let a = namespace(c, "e2e-vis-a");
    let b = namespace(c, "e2e-vis-b");
    apply(c, &flavor("vis-flavor", json!({"instance-type": "vis"})));
    // No quota: every Workload waits, admissible or not, in queue order.
    apply(
        c,
        &cluster_queue("vis-cq", &[("vis-flavor", "0", None)], json!({})),
    );
    apply(c, &local_queue(&a, "vis-lq", "vis-cq"));
    apply(c, &local_queue(&b, "vis-lq", "vis-cq"));
    for p in [10, 20, 30] {
        apply(
            c,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": format!("vis-p{p}")}, "value": p})
            .to_string(),
        );
    }
    // Created low first: the queue orders by priority.
    for (ns, job_name, p) in [(&a, "a-low", 10), (&b, "b-mid", 20), (&a, "a-high", 30)] {
        create(
            c,
            &job(
                job_name,
                ns,
                "vis-lq",
                "1",
                "600s",
                json!({"kueue.x-k8s.io/priority-class": format!("vis-p{p}")}),
            ),
        );
    }
    let wl = |ns: &str, job_name: &str| -> String {
        wait_for(Duration::from_secs(60), "the Workload created", || {
            workload_of(c, ns, job_name)?["metadata"]["name"]
                .as_str()
                .map(str::to_string)
        })
    };
    let (low, mid, high) = (wl(&a, "a-low"), wl(&b, "b-mid"), wl(&a, "a-high"));
    let row = |n: &str, ns: &str, p, cq, lq| {
        (
            n.to_string(),
            ns.to_string(),
            p,
            "vis-lq".to_string(),
            cq,
            lq,
        )
    };
    let expected = vec![
        row(&high, &a, 30, 0, 0),
        row(&mid, &b, 20, 1, 0),
        row(&low, &a, 10, 2, 1),
    ];

    // The ClusterQueue form, as `kubectl get --raw` reads it.
    let cq_path = format!("{API}/v1beta2/clusterqueues/vis-cq/pendingworkloads");
    let summary = wait_for(
        Duration::from_secs(90),
        "three pending in queue order",
        || {
            let v = raw(c, &cq_path).ok()?;
            (items(&v) == expected).then_some(v)
        },
    );
    assert_eq!(summary["kind"], "PendingWorkloadsSummary");
    assert_eq!(summary["apiVersion"], "visibility.kueue.x-k8s.io/v1beta2");
    let created = summary["items"][0]["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap();
    let stored = get(c, &["workload", "-n", &a, &high]).unwrap();
    assert_eq!(created, stored["metadata"]["creationTimestamp"]);
    // v1beta1 serves the same.
    let old = raw(
        c,
        &format!("{API}/v1beta1/clusterqueues/vis-cq/pendingworkloads"),
    )
    .unwrap();
    assert_eq!(old["apiVersion"], "visibility.kueue.x-k8s.io/v1beta1");
    assert_eq!(items(&old), expected);
    // limit and offset.
    let page = raw(c, &format!("{cq_path}?limit=1&offset=1")).unwrap();
    assert_eq!(items(&page), expected[1..2]);

    // The LocalQueue form: its own Workloads, positions in both queues.
    let lq = raw(
        c,
        &format!("{API}/v1beta2/namespaces/{a}/localqueues/vis-lq/pendingworkloads"),
    )
    .unwrap();
    assert_eq!(items(&lq), vec![expected[0].clone(), expected[2].clone()]);

    // Unknown queues: Kueue's NotFound.
    let err = raw(
        c,
        &format!("{API}/v1beta2/clusterqueues/vis-nope/pendingworkloads"),
    )
    .unwrap_err();
    assert!(
        err.contains("clusterqueue.visibility.kueue.x-k8s.io \"vis-nope\" not found"),
        "{err}"
    );
    let err = raw(
        c,
        &format!("{API}/v1beta2/namespaces/{b}/localqueues/vis-nope/pendingworkloads"),
    )
    .unwrap_err();
    assert!(
        err.contains("localqueue.visibility.kueue.x-k8s.io \"vis-nope\" not found"),
        "{err}"
    );

    // Discovery, through kubectl's.
    let group = raw(c, API).unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1beta2");
    let resources = raw(c, &format!("{API}/v1beta2")).unwrap();
    let names: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "clusterqueues",
            "clusterqueues/pendingworkloads",
            "localqueues",
            "localqueues/pendingworkloads",
            // batchgate's: `kubectl kueue explain` and `simulate`.
            "workloads",
            "workloads/explanation",
            "workloads/simulation",
        ]
    );
    let (ok, out, err) = kubectl(c, &["api-versions"], None);
    assert!(ok, "{err}");
    for v in ["v1beta2", "v1beta1"] {
        let gv = format!("visibility.kueue.x-k8s.io/{v}");
        assert!(out.lines().any(|l| l == gv), "{gv} not in:\n{out}");
    }

    // kubectl kueue list workload shows the positions in each LocalQueue.
    let (ok, table, err) = plugin(c, &["-n", &a, "list", "workload"], "");
    assert!(ok, "{err}");
    assert_eq!(position(&table, &high).as_deref(), Some("0"), "{table}");
    assert_eq!(position(&table, &low).as_deref(), Some("1"), "{table}");

    // Upstream kueuectl reads the same positions, when tests/cluster/kueue
    // has built it (optional: CI does not build Kueue).
    let upstream = std::env::var_os("HOME")
        .map(|h| std::path::Path::new(&h).join(".cache/batchgate/kueue/v0.17.1/kubectl-kueue"))
        .filter(|p| p.exists());
    match upstream {
        Some(bin) => {
            let out = Command::new(bin)
                .arg("--kubeconfig")
                .arg(c.kubeconfig())
                .args(["-n", &a, "list", "workload"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let table = String::from_utf8_lossy(&out.stdout);
            assert_eq!(position(&table, &high).as_deref(), Some("0"), "{table}");
            assert_eq!(position(&table, &low).as_deref(), Some("1"), "{table}");
        }
        None => eprintln!("upstream kueuectl v0.17.1 not built; its check is skipped"),
    }

    // An unauthorised user: refused by the apiserver...
    let (ok, _, err) = kubectl(c, &["--as=vis-nobody", "get", "--raw", &cq_path], None);
    assert!(!ok && err.contains("Forbidden"), "{err}");
    // ...and by batchgate itself (its SubjectAccessReview) when the front
    // proxy names them; headers without the front proxy's certificate are
    // not believed.
    let ca = e.server.ca_pem.clone();
    let (code, body) = direct(
        c,
        vis,
        &ca,
        true,
        &cq_path,
        &[("X-Remote-User", "vis-nobody")],
    );
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(
            "User \\\"vis-nobody\\\" cannot get resource \\\"clusterqueues/pendingworkloads\\\""
        ),
        "{body}"
    );
    let admin = [
        ("X-Remote-User", "vis-admin"),
        ("X-Remote-Group", "system:masters"),
    ];
    let (code, body) = direct(c, vis, &ca, true, &cq_path, &admin);
    assert_eq!(code, 200, "{body}");
    let (code, body) = direct(c, vis, &ca, false, &cq_path, &admin);
    assert_eq!(code, 401, "{body}");

    // No ConfigMap was written by batchgate (positions are computed on read).
    let cms = get(c, &["configmaps", "-A", "--show-managed-fields"]).unwrap();
    let ours: Vec<String> = cms["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|cm| {
            cm["metadata"]["managedFields"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|f| {
                    f["manager"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("batchgate"))
                })
                || cm["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("batchgate-pending-"))
        })
        .map(|cm| cm["metadata"]["name"].to_string())
        .collect();
    assert!(ours.is_empty(), "ConfigMaps written by batchgate: {ours:?}");

    // A flood of connections to the visibility port is capped: past the cap
    // (256) new ones are closed at accept instead of waiting out the TLS
    // handshake deadline (10 s), and the API answers again once they go.
    let flood: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(vis).expect("connecting"))
        .collect();
    let closed = flood
        .iter()
        .rev()
        .take(20)
        .filter(|s| {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut byte = [0u8; 1];
            match (&**s).read(&mut byte) {
                Ok(0) => true,
                Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
                Ok(_) => false,
            }
        })
        .count();
    assert_eq!(closed, 20, "connections past the cap are closed at once");
    drop(flood);
    wait_for(
        Duration::from_secs(30),
        "the API answering after the flood",
        || raw(c, &cq_path).ok(),
    );
}

/// `kubectl kueue explain` on real Jobs, each answer then checked against
/// what the engine does: short of quota (the quota at each level, no
/// preemption allowed: it stays pending until quota is freed, then is
/// admitted); behind a higher-priority head of a StrictFIFO queue (it
/// would fit, it is told it waits, and it is admitted only after the
/// head); waiting on an admission check (the test plays the check's
/// controller: the check's state is shown, and once Ready it is admitted);
/// a job's Workloads found by owner; a caller without the role refused by
/// the apiserver.
#[test]
fn explain_says_why_a_workload_waits_and_the_engine_then_does_it() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-explain");
    apply(c, &flavor("exp-flavor", json!({"instance-type": "exp"})));
    for (name, value) in [("exp-low", 10), ("exp-high", 100)] {
        apply(
            c,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": name}, "value": value})
            .to_string(),
        );
    }
    let low = json!({"kueue.x-k8s.io/priority-class": "exp-low"});
    let high = json!({"kueue.x-k8s.io/priority-class": "exp-high"});
    let wl = |job_name: &str| -> String {
        wait_for(Duration::from_secs(60), "the Workload created", || {
            workload_of(c, &ns, job_name)?["metadata"]["name"]
                .as_str()
                .map(str::to_string)
        })
    };
    let admitted =
        |job_name: &str| workload_of(c, &ns, job_name).is_some_and(|w| is_true(&w, "Admitted"));

    // 1. Short of quota: 2 cpu, both held; no preemption policy.
    apply(
        c,
        &cluster_queue("exp-cq", &[("exp-flavor", "2", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "exp-lq", "exp-cq"));
    create(c, &job("holder", &ns, "exp-lq", "2", "600s", low.clone()));
    wait_for(Duration::from_secs(90), "the holder admitted", || {
        admitted("holder").then_some(())
    });
    create(c, &job("short", &ns, "exp-lq", "2", "5s", high.clone()));
    let short = wl("short");
    let x = wait_for(
        Duration::from_secs(60),
        "an explanation of the short one",
        || explained(c, &ns, &short).filter(|x| x["nomination"].is_object()),
    );
    assert_eq!(x["kind"], "WorkloadExplanation");
    assert_eq!(x["state"], "Pending");
    assert_eq!(x["clusterQueue"], "exp-cq");
    assert_eq!(x["nomination"]["mode"], "Preempt", "{x}");
    assert!(
        summary(&x).contains("no workload may be preempted for it under ClusterQueue exp-cq's preemption (withinClusterQueue: Never"),
        "{x}"
    );
    assert!(
        x["nomination"]["message"]
            .as_str()
            .unwrap()
            .contains("insufficient unused quota for cpu in flavor exp-flavor, 2 more needed"),
        "{x}"
    );
    let level = &x["quota"][0]["levels"][0];
    assert_eq!(
        (
            &level["name"],
            &level["quota"],
            &level["used"],
            &level["free"]
        ),
        (&json!("exp-cq"), &json!("2"), &json!("2"), &json!("0")),
        "{x}"
    );
    // The plain words, as a user reads them.
    let (ok, text, err) = explain(c, &ns, &["workload", &short]);
    assert!(ok, "{err}");
    assert!(text.contains("State:   Pending"), "{text}");
    assert!(
        text.contains("Quota for pod set main, cpu on flavor exp-flavor (requested 2):"),
        "{text}"
    );
    // And the job form finds the same Workload by owner.
    let (ok, by_job, err) = explain(c, &ns, &["job", "short", "-o", "json"]);
    assert!(ok, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&by_job).unwrap()["metadata"]["name"],
        short.as_str()
    );
    // As it said: no preemption; it waits until the holder is gone.
    std::thread::sleep(Duration::from_secs(3));
    assert!(!admitted("short"), "admitted without quota");
    assert!(
        admitted("holder"),
        "the holder was preempted, though no policy allows it"
    );
    let (ok, _, err) = kubectl(
        c,
        &["delete", "job", "holder", "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{err}");
    wait_for(
        Duration::from_secs(90),
        "the short one admitted once freed",
        || admitted("short").then_some(()),
    );
    let x = explained(c, &ns, &short).unwrap();
    assert_eq!(x["state"], "Admitted", "{x}");

    // 2. Behind a higher-priority head in a StrictFIFO queue.
    apply(
        c,
        &cluster_queue(
            "exp-strict",
            &[("exp-flavor", "3", None)],
            json!({"queueingStrategy": "StrictFIFO"}),
        ),
    );
    apply(c, &local_queue(&ns, "exp-strict-lq", "exp-strict"));
    create(
        c,
        &job("first", &ns, "exp-strict-lq", "2", "600s", low.clone()),
    );
    wait_for(Duration::from_secs(90), "the first admitted", || {
        admitted("first").then_some(())
    });
    create(
        c,
        &job("head", &ns, "exp-strict-lq", "2", "5s", high.clone()),
    );
    let head = wl("head");
    create(
        c,
        &job("small", &ns, "exp-strict-lq", "1", "5s", low.clone()),
    );
    let small = wl("small");
    let x = wait_for(
        Duration::from_secs(60),
        "the small one behind the head",
        || explained(c, &ns, &small).filter(|x| x["position"]["inClusterQueue"] == 2),
    );
    assert_eq!(x["position"]["ahead"][0]["name"], head.as_str(), "{x}");
    assert_eq!(x["position"]["ahead"][0]["priority"], 100, "{x}");
    assert_eq!(x["nomination"]["mode"], "Fit", "{x}");
    assert!(
        summary(&x)
            .contains("ClusterQueue exp-strict is StrictFIFO and 1 workload(s) are ahead of it"),
        "{x}"
    );
    // As it said: it fits, and still waits behind the head.
    std::thread::sleep(Duration::from_secs(3));
    assert!(!admitted("small"), "admitted past a StrictFIFO head");
    let (ok, _, err) = kubectl(
        c,
        &["delete", "job", "first", "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{err}");
    wait_for(
        Duration::from_secs(90),
        "the head, then the small one, admitted",
        || (admitted("head") && admitted("small")).then_some(()),
    );

    // 3. Waiting on an admission check (the test is its controller).
    const CHECK: &str = "exp-check";
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                "metadata": {"name": CHECK}, "spec": {"controllerName": "example.com/exp-check"}})
        .to_string(),
    );
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let status = |what: &[&str], patch: Value| {
        let mut args = vec!["patch"];
        args.extend_from_slice(what);
        let p = patch.to_string();
        args.extend(["--subresource=status", "--type=merge", "-p", &p]);
        let (ok, out, err) = kubectl(c, &args, None);
        assert!(ok, "kubectl {args:?}: {out}{err}");
    };
    status(
        &["admissionchecks.kueue.x-k8s.io", CHECK],
        json!({"status": {"conditions": [{"type": "Active", "status": "True", "reason": "Active",
            "message": "The admission check is active", "lastTransitionTime": now}]}}),
    );
    apply(
        c,
        &cluster_queue(
            "exp-checked",
            &[("exp-flavor", "4", None)],
            json!({"admissionChecksStrategy": {"admissionChecks": [{"name": CHECK}]}}),
        ),
    );
    apply(c, &local_queue(&ns, "exp-checked-lq", "exp-checked"));
    create(
        c,
        &job("gated", &ns, "exp-checked-lq", "1", "5s", low.clone()),
    );
    let gated = wl("gated");
    let x = wait_for(
        Duration::from_secs(90),
        "quota reserved, check pending",
        || {
            explained(c, &ns, &gated).filter(|x| {
                x["state"] == "QuotaReserved" && x["checkStates"][0]["state"] == "Pending"
            })
        },
    );
    assert_eq!(x["admissionChecks"], json!([CHECK]), "{x}");
    assert!(
        summary(&x).contains(&format!(
            "it is admitted once the admission checks {CHECK} are Ready"
        )),
        "{x}"
    );
    let (ok, text, err) = explain(c, &ns, &["workload", &gated]);
    assert!(ok, "{err}");
    assert!(
        text.contains(&format!("Admission checks:\n  {CHECK}: Pending")),
        "{text}"
    );
    // As it said: Ready, and it is admitted.
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    status(
        &["workloads.kueue.x-k8s.io", &gated, "-n", &ns],
        json!({"status": {"admissionChecks": [{"name": CHECK, "state": "Ready", "message": "",
            "lastTransitionTime": now}]}}),
    );
    wait_for(
        Duration::from_secs(90),
        "admitted once the check is Ready",
        || explained(c, &ns, &gated).filter(|x| x["state"] == "Admitted"),
    );
    assert!(admitted("gated"));

    // Unknown, and not allowed.
    let (ok, _, err) = explain(c, &ns, &["workload", "exp-nobody-here"]);
    assert!(
        !ok && err.contains("batchgate's queues do not hold Workload"),
        "{err}"
    );
    let (ok, _, err) = explain(c, &ns, &["job", "exp-no-such-job"]);
    assert!(
        !ok && err.contains("is owned by job exp-no-such-job"),
        "{err}"
    );
    let (ok, _, err) = plugin(
        c,
        &["--as=exp-nobody", "-n", &ns, "explain", "workload", &gated],
        "",
    );
    assert!(
        !ok && err.contains("forbidden") && err.contains("workloads/explanation"),
        "{err}"
    );
}

/// `kubectl kueue simulate -f job.yaml` on the local cluster: nothing is
/// created; it names the flavor and the victim, and the same Job created
/// for real is admitted on that flavor, or preempts that victim.
#[test]
fn simulate_predicts_what_the_engine_then_does_and_creates_nothing() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-simulate");
    apply(c, &flavor("sim-a", json!({"instance-type": "sim-a"})));
    apply(c, &flavor("sim-b", json!({"instance-type": "sim-b"})));
    for (name, value) in [("sim-low", 10), ("sim-high", 100)] {
        apply(
            c,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": name}, "value": value})
            .to_string(),
        );
    }
    let low = json!({"kueue.x-k8s.io/priority-class": "sim-low"});
    let high = json!({"kueue.x-k8s.io/priority-class": "sim-high"});
    let admitted =
        |job_name: &str| workload_of(c, &ns, job_name).filter(|w| is_true(w, "Admitted"));
    let simulate = |manifest: &str| -> Value {
        let (ok, out, err) = plugin(
            c,
            &["-n", &ns, "simulate", "-f", "-", "-o", "json"],
            manifest,
        );
        assert!(ok, "{err}");
        serde_json::from_str(&out).unwrap()
    };

    // Two flavors: the first one full, the Job would go to the second.
    apply(
        c,
        &cluster_queue(
            "sim-cq",
            &[("sim-a", "2", None), ("sim-b", "4", None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(&ns, "sim-lq", "sim-cq"));
    create(c, &job("filler", &ns, "sim-lq", "2", "600s", low.clone()));
    wait_for(Duration::from_secs(90), "the filler admitted", || {
        admitted("filler")
    });
    let next = job("next", &ns, "sim-lq", "2", "600s", low.clone());
    // The engine must know the filler's admission: asked until it does.
    let x = wait_for(
        Duration::from_secs(30),
        "a simulation on the second flavor",
        || {
            let x = simulate(&next);
            (x["nomination"]["flavors"]["main"]["cpu"] == "sim-b").then_some(x)
        },
    );
    assert_eq!(x["kind"], "WorkloadExplanation");
    assert_eq!(x["nomination"]["mode"], "Fit", "{x}");
    assert_eq!(x["summary"][0], "If it were created now:", "{x}");
    assert!(
        workload_of(c, &ns, "next").is_none(),
        "a simulation created a Workload"
    );
    let (ok, _, _) = kubectl(c, &["get", "job", "next", "-n", &ns], None);
    assert!(!ok, "a simulation created the Job");
    create(c, &next);
    let wl = wait_for(Duration::from_secs(90), "next admitted", || {
        admitted("next")
    });
    assert_eq!(
        wl["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"], "sim-b",
        "admitted where the simulation said: {wl}"
    );

    // A queue that may preempt lower priorities: the victim named, then
    // preempted.
    apply(
        c,
        &cluster_queue(
            "sim-p",
            &[("sim-a", "2", None)],
            json!({"preemption": {"withinClusterQueue": "LowerPriority"}}),
        ),
    );
    apply(c, &local_queue(&ns, "sim-p-lq", "sim-p"));
    create(c, &job("victim", &ns, "sim-p-lq", "2", "600s", low.clone()));
    let victim = wait_for(Duration::from_secs(90), "the victim admitted", || {
        admitted("victim")
    });
    let urgent = job("urgent", &ns, "sim-p-lq", "2", "600s", high.clone());
    let x = wait_for(
        Duration::from_secs(30),
        "a simulation that preempts",
        || {
            let x = simulate(&urgent);
            (x["nomination"]["mode"] == "Preempt").then_some(x)
        },
    );
    assert_eq!(
        x["nomination"]["wouldPreempt"][0]["name"], victim["metadata"]["name"],
        "{x}"
    );
    assert_eq!(
        x["nomination"]["wouldPreempt"][0]["reason"], "InClusterQueue",
        "{x}"
    );
    assert!(
        is_true(&workload_of(c, &ns, "victim").unwrap(), "Admitted"),
        "a simulation preempted"
    );
    create(c, &urgent);
    wait_for(
        Duration::from_secs(90),
        "urgent admitted after preempting the victim",
        || {
            let v = workload_of(c, &ns, "victim")?;
            (admitted("urgent").is_some() && condition(&v, "Preempted")?["status"] == "True")
                .then_some(())
        },
    );

    // Not queued: said so, nothing created.
    let mut unqueued: Value =
        serde_json::from_str(&job("plain", &ns, "x", "1", "1s", json!({}))).unwrap();
    unqueued["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("kueue.x-k8s.io/queue-name");
    let (ok, _, err) = plugin(
        c,
        &["-n", &ns, "simulate", "-f", "-"],
        &unqueued.to_string(),
    );
    assert!(!ok && err.contains("it would not be queued"), "{err}");
}
