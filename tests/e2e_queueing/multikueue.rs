//! MultiKueue's connections on the manager: a MultiKueueCluster
//! is connected to a real second control plane (a worker started here,
//! with no nodes; the dispatch is `tests/e2e_multikueue.rs`'s) from the
//! kubeconfig its Secret
//! holds, and its `Active` condition says so in Kueue's words; a
//! kubeconfig that breaks Kueue's rules, and a Secret that is missing, are
//! told with Kueue's reasons and the cluster connects once the Secret
//! appears; a `kueue.x-k8s.io/multikueue` AdmissionCheck is Active while
//! some of its config's clusters are; a worker that stops answering turns
//! its cluster inactive. Kueue v0.19.2 `test/integration/multikueue/
//! setup_test.go` ("Should properly manage the active condition of
//! AdmissionChecks and MultiKueueClusters, kubeconfig provided by secret",
//! "… when the secret is created after the cluster").

use std::time::Duration;

use batchgate_localcluster::{ClusterOptions, LocalCluster};
use serde_json::{json, Value};

use super::support::queueing::*;

/// The object's `Active` condition once it has `status`, or a panic naming
/// what was last seen.
fn active_becomes(
    c: &LocalCluster,
    resource: &str,
    name: &str,
    status: &str,
    within: Duration,
) -> Value {
    let mut last = Value::Null;
    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for(
            within,
            &format!("{resource} {name} Active={status}"),
            || {
                let obj = get(c, &[resource, name])?;
                last = obj.clone();
                condition(&obj, "Active")
                    .filter(|a| a["status"] == status)
                    .cloned()
            },
        )
    }));
    found.unwrap_or_else(|_| panic!("{resource} {name} never Active={status}; last seen: {last}"))
}

#[test]
fn a_multikueue_cluster_connects_from_its_secret_and_its_check_follows() {
    let e = super::env();
    let c = e.cluster;
    c.wait_established(
        &[
            "crd/multikueueclusters.kueue.x-k8s.io",
            "crd/multikueueconfigs.kueue.x-k8s.io",
        ],
        Duration::from_secs(60),
    )
    .unwrap();
    let worker = LocalCluster::start(ClusterOptions {
        nodes: Vec::new(),
        ..ClusterOptions::default()
    })
    .expect("the worker control plane starts");
    let kubeconfig = embedded_kubeconfig(&worker);
    assert!(
        kubeconfig.contains("certificate-authority-data") && kubeconfig.contains("client-key-data"),
        "the worker's kubeconfig is not self-contained: {kubeconfig}"
    );

    // Connected from its Secret.
    create(c, &kubeconfig_secret("mk-worker1", &kubeconfig));
    create(c, &mk_cluster("mk-worker1", "mk-worker1"));
    let a = active_becomes(
        c,
        "multikueuecluster",
        "mk-worker1",
        "True",
        Duration::from_secs(60),
    );
    assert_eq!(
        (&a["reason"], &a["message"]),
        (&json!("Active"), &json!("Connected")),
        "{a}"
    );

    // A kubeconfig that names a token file breaks Kueue's rules.
    let token_file = format!(
        "{}\n",
        kubeconfig
            .lines()
            .map(|l| if l.trim_start().starts_with("client-key-data") {
                format!("{l}\n    tokenFile: /tmp/token")
            } else {
                l.to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    );
    create(c, &kubeconfig_secret("mk-insecure", &token_file));
    create(c, &mk_cluster("mk-insecure", "mk-insecure"));
    let a = active_becomes(
        c,
        "multikueuecluster",
        "mk-insecure",
        "False",
        Duration::from_secs(60),
    );
    assert_eq!(a["reason"], "InsecureKubeConfig", "{a}");
    assert!(
        a["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("load client config failed: "),
        "{a}"
    );

    // A Secret that is missing is told; once created, the cluster connects.
    create(c, &mk_cluster("mk-late", "mk-late"));
    let a = active_becomes(
        c,
        "multikueuecluster",
        "mk-late",
        "False",
        Duration::from_secs(60),
    );
    assert_eq!(a["reason"], "BadKubeConfig", "{a}");
    assert_eq!(
        a["message"], r#"load client config failed: secrets "mk-late" not found"#,
        "{a}"
    );
    create(c, &kubeconfig_secret("mk-late", &kubeconfig));
    active_becomes(
        c,
        "multikueuecluster",
        "mk-late",
        "True",
        Duration::from_secs(60),
    );

    // The check is Active while some of its config's clusters are.
    create(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                "metadata": {"name": "mk-config"},
                "spec": {"clusters": ["mk-worker1", "mk-missing"]}})
        .to_string(),
    );
    create(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                "metadata": {"name": "mk-check"},
                "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                         "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                        "name": "mk-config"}}})
        .to_string(),
    );
    let a = active_becomes(
        c,
        "admissioncheck",
        "mk-check",
        "True",
        Duration::from_secs(60),
    );
    assert_eq!(
        (&a["reason"], &a["message"]),
        (
            &json!("SomeActiveClusters"),
            &json!("Missing clusters: [mk-missing]")
        ),
        "{a}"
    );

    // The worker stops answering: its clusters turn inactive, and with no
    // usable cluster left the check does too.
    drop(worker);
    let a = active_becomes(
        c,
        "multikueuecluster",
        "mk-worker1",
        "False",
        Duration::from_secs(120),
    );
    assert_eq!(a["reason"], "ClientConnectionFailed", "{a}");
    let a = active_becomes(
        c,
        "admissioncheck",
        "mk-check",
        "False",
        Duration::from_secs(60),
    );
    assert_eq!(a["reason"], "NoUsableClusters", "{a}");
}
