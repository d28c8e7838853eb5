//! Entitlement end to end, with real RBAC on the local control plane: a
//! LocalQueue (or its ClusterQueue) annotated
//! `batchgate.dev/submit-requires-permission: "true"` takes only jobs from
//! users allowed verb `submit` on it; a WorkloadPriorityClass annotated
//! `batchgate.dev/use-requires-permission: "true"` only from users allowed
//! `use`. Users are ServiceAccounts impersonated with `kubectl --as`;
//! batchgate asks the apiserver with SubjectAccessReviews and caches the
//! answers, which /metrics counts.
//!
//! One test function: the SubjectAccessReview counts it compares must not
//! move for any other reason while it runs.

mod support;

use std::time::{Duration, Instant};

use batchgate_localcluster::{shared, LocalCluster};
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace, queued_job, register, wait_webhook_active},
    queueing::{apply, cluster_queue, install_crds, local_queue},
    Server,
};

const NS: &str = "e2e-entitle";

fn sa(name: &str) -> String {
    format!("system:serviceaccount:{NS}:{name}")
}

/// `kubectl --as=<user> <args>` with `stdin`.
fn kubectl_as(c: &LocalCluster, user: &str, args: &[&str], stdin: Option<&str>) -> (bool, String) {
    let as_user = format!("--as={user}");
    let mut all = vec![as_user.as_str()];
    all.extend_from_slice(args);
    let (ok, out, err) = kubectl(c, &all, stdin);
    (ok, format!("{out}{err}"))
}

fn job(name: &str, queue: &str, priority: Option<&str>) -> String {
    let mut j: Value = serde_json::from_str(&queued_job(name, NS, queue)).unwrap();
    if let Some(p) = priority {
        j["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!(p);
    }
    j.to_string()
}

/// The Prometheus counters of entitlement: (SubjectAccessReviews made,
/// cache hits, shared in-flight answers, misses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    reviews: u64,
    hits: u64,
    shared: u64,
    misses: u64,
}

fn counts(server: &Server) -> Counts {
    let (status, body) = server.probe_get("/metrics");
    assert_eq!(status, 200);
    let get = |name: &str, result: &str| -> u64 {
        let prefix = format!("batchgate_{name}_total{{result=\"{result}\"}} ");
        body.lines()
            .find_map(|l| l.strip_prefix(&prefix).and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0)
    };
    Counts {
        reviews: ["allowed", "denied", "error"]
            .iter()
            .map(|r| get("subjectaccessreviews", r))
            .sum(),
        hits: get("entitlement_cache", "hit"),
        shared: get("entitlement_cache", "shared"),
        misses: get("entitlement_cache", "miss"),
    }
}

/// Polls until `f` holds, or panics with `what` and batchgate's log.
fn eventually(server: &Server, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        if Instant::now() > deadline {
            panic!(
                "timed out waiting for {what}; batchgate log:\n{}",
                server.stderr.lock().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn rbac() -> String {
    let subject = |name: &str| json!({"kind": "ServiceAccount", "name": name, "namespace": NS});
    let objects = [
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot-denied", "namespace": NS}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot-allowed", "namespace": NS}}),
        // Both may create and relabel Jobs: that is what reaches the webhook.
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "job-author", "namespace": NS},
               "rules": [{"apiGroups": ["batch"], "resources": ["jobs"],
                          "verbs": ["create", "get", "list", "update", "patch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "job-author", "namespace": NS},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "job-author"},
               "subjects": [subject("bot-denied"), subject("bot-allowed")]}),
        // Only bot-allowed may submit to the protected queues ...
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "submit-protected", "namespace": NS},
               "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues"],
                          "resourceNames": ["research", "burst"], "verbs": ["submit"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "submit-protected", "namespace": NS},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "submit-protected"},
               "subjects": [subject("bot-allowed")]}),
        // ... and use the protected priority class (cluster-scoped).
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "e2e-entitle-use-urgent"},
               "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloadpriorityclasses"],
                          "resourceNames": ["urgent"], "verbs": ["use"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "e2e-entitle-use-urgent"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "e2e-entitle-use-urgent"},
               "subjects": [subject("bot-allowed")]}),
    ];
    objects
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n---\n")
}

fn annotated(mut obj: Value, key: &str) -> String {
    obj["metadata"]["annotations"] = json!({ key: "true" });
    obj.to_string()
}

#[test]
fn protected_queues_and_priority_classes_need_permission() {
    let c = shared();
    install_crds(c);
    // Allowed answers live an hour here, so the burst below cannot outlast
    // its cached answer however slow the machine: it costs exactly one
    // SubjectAccessReview (docs/entitlement.md says so).
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    std::fs::write(&cfg, "entitlement:\n  allowedTtlSeconds: 3600\n").unwrap();
    let server = Server::start_in_cluster(
        c.kubeconfig(),
        None,
        &["--admission", "external", "--config", cfg.to_str().unwrap()],
    );
    server.wait_ready(Duration::from_secs(60));
    register(
        c,
        server.addr,
        Some(&server.cert_dir.join("ca.crt")),
        "Fail",
    );
    namespace(c, NS);
    wait_webhook_active(c, NS);

    // Queues: `research` protected itself, `burst` through its ClusterQueue,
    // `open` not at all. Class `urgent` protected, `routine` not.
    let cq = |name| {
        serde_json::from_str::<Value>(&cluster_queue(
            name,
            &[("default-flavor", "10", None)],
            json!({}),
        ))
        .unwrap()
    };
    apply(c, &cq("e2e-entitle-open").to_string());
    apply(
        c,
        &annotated(
            cq("e2e-entitle-guarded"),
            "batchgate.dev/submit-requires-permission",
        ),
    );
    let lq = |name, cq| serde_json::from_str::<Value>(&local_queue(NS, name, cq)).unwrap();
    apply(
        c,
        &annotated(
            lq("research", "e2e-entitle-open"),
            "batchgate.dev/submit-requires-permission",
        ),
    );
    apply(c, &lq("burst", "e2e-entitle-guarded").to_string());
    apply(c, &lq("open", "e2e-entitle-open").to_string());
    let wpc = |name: &str| {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                                  "metadata": {"name": name}, "value": 1000})
    };
    apply(
        c,
        &annotated(wpc("urgent"), "batchgate.dev/use-requires-permission"),
    );
    apply(c, &wpc("routine").to_string());
    apply(c, &rbac());
    // RBAC is in force once the apiserver's authorizer says so.
    for (verb, what) in [
        ("submit", "localqueues.kueue.x-k8s.io/research"),
        ("submit", "localqueues.kueue.x-k8s.io/burst"),
        ("use", "workloadpriorityclasses.kueue.x-k8s.io/urgent"),
        ("create", "jobs.batch"),
    ] {
        eventually(
            &server,
            &format!("RBAC: bot-allowed may {verb} {what}"),
            || {
                kubectl_as(
                    c,
                    &sa("bot-allowed"),
                    &["auth", "can-i", verb, what, "-n", NS],
                    None,
                )
                .0
            },
        );
    }
    eventually(&server, "RBAC: bot-denied may create jobs", || {
        kubectl_as(
            c,
            &sa("bot-denied"),
            &["auth", "can-i", "create", "jobs.batch", "-n", NS],
            None,
        )
        .0
    });
    // The opt-ins reach batchgate through its watches: wait until a dry
    // run by bot-denied is refused on both protected queues.
    for queue in ["research", "burst"] {
        eventually(
            &server,
            &format!("the {queue} queue to be protected"),
            || {
                let (ok, _) = kubectl_as(
                    c,
                    &sa("bot-denied"),
                    &["create", "--dry-run=server", "-f", "-"],
                    Some(&job("probe", queue, None)),
                );
                !ok
            },
        );
    }

    // Without `submit`: refused, and the message names the user, the verb,
    // the resource and the object.
    let (ok, out) = kubectl_as(
        c,
        &sa("bot-denied"),
        &["create", "-f", "-"],
        Some(&job("denied-1", "research", None)),
    );
    assert!(!ok, "created without permission: {out}");
    eprintln!("kubectl without submit: {}", out.trim());
    for part in [
        r#"admission webhook "vjob.kb.io" denied the request"#,
        r#"User "system:serviceaccount:e2e-entitle:bot-denied" cannot submit localqueues.kueue.x-k8s.io "research" in the namespace "e2e-entitle""#,
        "the Job e2e-entitle/denied-1 names it in metadata.labels[kueue.x-k8s.io/queue-name]",
        r#"grant verb "submit" on resource "localqueues" in API group "kueue.x-k8s.io" (resourceNames: ["research"])"#,
    ] {
        assert!(out.contains(part), "missing {part:?} in:\n{out}");
    }
    // Through the ClusterQueue's opt-in, the same.
    let (ok, out) = kubectl_as(
        c,
        &sa("bot-denied"),
        &["create", "-f", "-"],
        Some(&job("denied-2", "burst", None)),
    );
    assert!(
        !ok && out.contains(r#"cannot submit localqueues.kueue.x-k8s.io "burst""#),
        "{out}"
    );
    // With it: created.
    let (ok, out) = kubectl_as(
        c,
        &sa("bot-allowed"),
        &["create", "-f", "-"],
        Some(&job("allowed-1", "research", None)),
    );
    assert!(ok, "{out}");

    // A burst of 100 creates by one user on a queue it has not used yet:
    // four kubectl processes of 25 Jobs each, at once.
    let before = counts(&server);
    let started = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let items: Vec<Value> = (0..25)
                .map(|i| {
                    serde_json::from_str(&job(&format!("burst-{w}-{i}"), "burst", None)).unwrap()
                })
                .collect();
            let list = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
            std::thread::spawn(move || {
                kubectl_as(
                    shared(),
                    &sa("bot-allowed"),
                    &["create", "-f", "-"],
                    Some(&list),
                )
            })
        })
        .collect();
    for w in workers {
        let (ok, out) = w.join().unwrap();
        assert!(ok, "{out}");
    }
    let took = started.elapsed();
    let after = counts(&server);
    let reviews = after.reviews - before.reviews;
    let (hits, shared_, misses) = (
        after.hits - before.hits,
        after.shared - before.shared,
        after.misses - before.misses,
    );
    eprintln!(
        "burst of 100 creates in {took:?}: {reviews} SubjectAccessReviews, {hits} cache hits, {shared_} shared in flight, {misses} misses"
    );
    assert_eq!(hits + shared_ + misses, 100, "{before:?} -> {after:?}");
    // One question, asked concurrently by four clients: the first asks,
    // the others share its flight or hit the cache.
    assert_eq!(
        (reviews, misses, hits + shared_),
        (1, 1, 99),
        "SubjectAccessReviews, misses, hits + shared for one user's burst"
    );
    let (ok, out, err) = kubectl(c, &["get", "jobs", "-n", NS, "-o", "name"], None);
    assert!(ok, "{err}");
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("job.batch/burst-"))
            .count(),
        100
    );

    // Priority: `use` on the protected class.
    let (ok, out) = kubectl_as(
        c,
        &sa("bot-denied"),
        &["create", "-f", "-"],
        Some(&job("urgent-1", "open", Some("urgent"))),
    );
    assert!(!ok, "created without permission: {out}");
    for part in [
        r#"User "system:serviceaccount:e2e-entitle:bot-denied" cannot use workloadpriorityclasses.kueue.x-k8s.io "urgent" at the cluster scope"#,
        "the Job e2e-entitle/urgent-1 names it in metadata.labels[kueue.x-k8s.io/priority-class]",
    ] {
        assert!(out.contains(part), "missing {part:?} in:\n{out}");
    }
    let (ok, out) = kubectl_as(
        c,
        &sa("bot-allowed"),
        &["create", "-f", "-"],
        Some(&job("urgent-2", "open", Some("urgent"))),
    );
    assert!(ok, "{out}");

    // Nothing protected: no SubjectAccessReview, no cache lookup.
    let before = counts(&server);
    for i in 0..5 {
        let (ok, out) = kubectl_as(
            c,
            &sa("bot-denied"),
            &["create", "-f", "-"],
            Some(&job(&format!("open-{i}"), "open", Some("routine"))),
        );
        assert!(ok, "{out}");
    }
    assert_eq!(
        counts(&server),
        before,
        "unprotected queues and classes cost nothing"
    );

    // UPDATE: moving a (suspended) job to a protected queue is a submit too;
    // relabelling it otherwise is not checked again.
    let (ok, out) = kubectl_as(
        c,
        &sa("bot-denied"),
        &[
            "label",
            "--overwrite",
            "job",
            "open-0",
            "-n",
            NS,
            "kueue.x-k8s.io/queue-name=research",
        ],
        None,
    );
    assert!(
        !ok && out.contains(r#"cannot submit localqueues.kueue.x-k8s.io "research""#),
        "{out}"
    );
    let (ok, out) = kubectl_as(
        c,
        &sa("bot-denied"),
        &["label", "job", "open-0", "-n", NS, "team=b", "--overwrite"],
        None,
    );
    assert!(ok, "{out}");
    let (ok, out) = kubectl_as(
        c,
        &sa("bot-allowed"),
        &[
            "label",
            "--overwrite",
            "job",
            "open-1",
            "-n",
            NS,
            "kueue.x-k8s.io/queue-name=research",
        ],
        None,
    );
    assert!(ok, "{out}");
}
