//! The Helm chart (`charts/batchgate`) with helm built from its Go module
//! (`tests/cluster/build-helm.sh`): `helm lint` clean for every supported
//! values combination; each rendered and applied with
//! `kubectl apply --dry-run=server` to the local apiserver (one cluster for
//! all); and with the default values it renders the objects of
//! `manifests/`, so the two cannot drift apart.

mod support;

use std::{collections::BTreeMap, process::Command, time::Duration};

use serde_json::Value;
use support::e2e::{helm, kubectl};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The supported combinations: a name, the release namespace, and `--set`
/// arguments.
const COMBINATIONS: &[(&str, &str, &[&str])] = &[
    ("defaults", "batchgate-system", &[]),
    (
        "own Secret with its CA, Ignore, more namespaces skipped, required spread, wrapped kinds",
        "batchgate-system",
        &[
            "certificates.mode=secret",
            "webhook.caBundle=Q0EgYnVuZGxl",
            "appwrapper.wrappedKinds[0].apiGroups={batch}",
            "appwrapper.wrappedKinds[0].resources={jobs}",
            "appwrapper.wrappedKinds[1].apiGroups={ray.io}",
            "appwrapper.wrappedKinds[1].resources={rayclusters,rayjobs}",
            "webhook.failurePolicy=Ignore",
            "webhook.excludedNamespaces={team-infra,monitoring}",
            "antiAffinity=required",
        ],
    ),
    (
        "cert-manager in another namespace, ServiceMonitor",
        "batchgate-other",
        &[
            "certificates.mode=certManager",
            "serviceMonitor.enabled=true",
            "serviceMonitor.labels.release=prometheus",
        ],
    ),
    (
        "self-managed Secret, external admission, options",
        "batchgate-system",
        &[
            "certificates.mode=managed",
            "config.admission=external",
            "config.manageJobsWithoutQueueName=true",
            "config.prescalerImage=registry.example/batchgate:v0.1.0",
            "config.metrics.enableClusterQueueResources=true",
            "config.integrations.frameworks={batch/job,jobset.x-k8s.io/jobset}",
            "replicas=3",
            "antiAffinity=none",
            "podDisruptionBudget.enabled=false",
            "image.repository=registry.example/batchgate",
            "image.tag=v0.1.0",
        ],
    ),
    (
        "no CRDs, no visibility API",
        "batchgate-system",
        &["crds.install=false", "visibility.enabled=false"],
    ),
    (
        "beside an upstream Kueue, cert-manager",
        "batchgate-system",
        &["besideKueue=true", "certificates.mode=certManager"],
    ),
];

fn run_helm(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(helm()).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn chart() -> String {
    format!("{ROOT}/charts/batchgate")
}

fn set_args(sets: &[&str]) -> Vec<String> {
    sets.iter()
        .flat_map(|s| ["--set".to_string(), s.to_string()])
        .collect()
}

/// `helm <verb...> <chart> --namespace <namespace> --set ...`.
fn helm_on_chart(verb: &[&str], namespace: &str, sets: &[&str]) -> (bool, String, String) {
    let chart = chart();
    let mut args: Vec<String> = verb.iter().map(|s| s.to_string()).collect();
    args.extend([chart, "--namespace".to_string(), namespace.to_string()]);
    args.extend(set_args(sets));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_helm(&args)
}

fn template(namespace: &str, sets: &[&str]) -> String {
    let (ok, out, err) = helm_on_chart(&["template", "batchgate"], namespace, sets);
    assert!(ok, "helm template {sets:?}: {err}");
    out
}

/// The objects of a multi-document YAML stream, keyed by kind, namespace
/// and name; a ConfigMap's `config.yaml` compared as YAML, not text.
fn objects(yaml: &str) -> BTreeMap<(String, String, String), Value> {
    let mut out = BTreeMap::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let v: Value = match serde::Deserialize::deserialize(doc) {
            Ok(v) => v,
            Err(e) => panic!("unparsable document: {e}"),
        };
        if v.is_null() {
            continue;
        }
        let mut v = v;
        if v["kind"] == "ConfigMap" {
            if let Some(cfg) = v["data"]["config.yaml"].as_str() {
                let parsed: Value = serde_yaml::from_str(cfg).unwrap();
                v["data"]["config.yaml"] = parsed;
            }
        }
        let key = (
            v["kind"].as_str().unwrap_or_default().to_string(),
            v["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            v["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
        assert!(out.insert(key.clone(), v).is_none(), "{key:?} twice");
    }
    out
}

fn manifests() -> BTreeMap<(String, String, String), Value> {
    let mut text = String::new();
    let mut files: Vec<String> = [
        "rbac.yaml",
        "config.yaml",
        "deployment.yaml",
        "pdb.yaml",
        "service.yaml",
        "webhooks.yaml",
        "visibility.yaml",
        "apiservices.yaml",
    ]
    .iter()
    .map(|f| format!("{ROOT}/manifests/{f}"))
    .collect();
    let mut crds: Vec<String> = std::fs::read_dir(format!("{ROOT}/manifests/crds"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    crds.sort();
    files.extend(crds);
    for f in files {
        text.push_str("\n---\n");
        text.push_str(&std::fs::read_to_string(&f).unwrap());
    }
    objects(&text)
}

#[test]
fn helm_lint_is_clean_for_every_combination() {
    for (name, namespace, sets) in COMBINATIONS {
        let (ok, out, err) = helm_on_chart(&["lint", "--strict"], namespace, sets);
        assert!(ok, "helm lint ({name}): {out}{err}");
        assert!(out.contains("0 chart(s) failed"), "{name}: {out}");
    }
}

/// With the default values the chart renders manifests/ (the Namespace
/// aside: `helm install --create-namespace` makes it), object for object.
#[test]
fn the_chart_with_default_values_is_manifests() {
    let chart = objects(&template("batchgate-system", &[]));
    let shipped = manifests();
    let names =
        |m: &BTreeMap<(String, String, String), Value>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&chart), names(&shipped));
    for (key, want) in &shipped {
        assert_eq!(&chart[key], want, "{key:?} differs from manifests/");
    }
}

#[test]
fn the_values_reach_the_objects() {
    let get = |objs: &BTreeMap<(String, String, String), Value>, kind: &str, name: &str| {
        objs.iter()
            .find(|((k, _, n), _)| k == kind && n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    };
    let webhooks = |objs: &BTreeMap<(String, String, String), Value>| -> Vec<Value> {
        [
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ]
        .iter()
        .flat_map(|k| {
            let name = if k.starts_with("Mutating") {
                "batchgate-mutating-webhook-configuration"
            } else {
                "batchgate-validating-webhook-configuration"
            };
            get(objs, k, name)["webhooks"].as_array().unwrap().clone()
        })
        .collect()
    };

    let (_, ns, sets) = COMBINATIONS[1];
    let o = objects(&template(ns, sets));
    for w in webhooks(&o) {
        assert_eq!(w["failurePolicy"], "Ignore", "{w}");
        assert_eq!(w["clientConfig"]["caBundle"], "Q0EgYnVuZGxl");
        if let Some(sel) = w["namespaceSelector"]["matchExpressions"].as_array() {
            assert_eq!(
                sel[0]["values"],
                serde_json::json!([
                    "kube-system",
                    "batchgate-system",
                    "team-infra",
                    "monitoring"
                ])
            );
        }
    }
    let crd = get(&o, "CustomResourceDefinition", "workloads.kueue.x-k8s.io");
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"],
        "Q0EgYnVuZGxl"
    );
    let d = get(&o, "Deployment", "batchgate");
    assert!(d["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]
        .is_array());
    // Your own Secret: read through the API, never written.
    let cfg = &get(&o, "ConfigMap", "batchgate-config")["data"]["config.yaml"];
    assert_eq!(cfg["certificates"]["manage"], false, "{cfg}");
    assert_eq!(
        cfg["certificates"]["secret"],
        "batchgate-system/batchgate-webhook-server-cert"
    );
    // The kinds AppWrappers wrap, granted to batchgate's ServiceAccount.
    let role = get(&o, "ClusterRole", "batchgate-appwrapper-components");
    assert_eq!(
        role["rules"],
        serde_json::json!([
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch", "create", "delete"]},
            {"apiGroups": ["ray.io"], "resources": ["rayclusters", "rayjobs"], "verbs": ["get", "list", "watch", "create", "delete"]},
        ])
    );
    let binding = get(&o, "ClusterRoleBinding", "batchgate-appwrapper-components");
    assert_eq!(
        binding["roleRef"]["name"],
        "batchgate-appwrapper-components"
    );
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": "batchgate", "namespace": "batchgate-system"}])
    );

    let (_, ns, sets) = COMBINATIONS[2];
    let o = objects(&template(ns, sets));
    let inject = "batchgate-other/batchgate-serving-cert";
    for (kind, name) in [
        (
            "MutatingWebhookConfiguration",
            "batchgate-mutating-webhook-configuration",
        ),
        ("CustomResourceDefinition", "workloads.kueue.x-k8s.io"),
        ("APIService", "v1beta2.visibility.kueue.x-k8s.io"),
    ] {
        let v = get(&o, kind, name);
        assert_eq!(
            v["metadata"]["annotations"]["cert-manager.io/inject-ca-from"], inject,
            "{kind}"
        );
    }
    let apiservice = get(&o, "APIService", "v1beta2.visibility.kueue.x-k8s.io");
    assert!(apiservice["spec"]["insecureSkipTLSVerify"].is_null());
    for w in webhooks(&o) {
        assert_eq!(w["clientConfig"]["service"]["namespace"], "batchgate-other");
        if let Some(c) = w["matchConditions"].as_array() {
            assert!(c[0]["expression"]
                .as_str()
                .unwrap()
                .contains("system:serviceaccount:batchgate-other:batchgate"));
        }
    }
    let cert = get(&o, "Certificate", "batchgate-serving-cert");
    assert_eq!(
        cert["spec"]["dnsNames"][0],
        "batchgate-webhook.batchgate-other.svc"
    );
    let sm = get(&o, "ServiceMonitor", "batchgate");
    assert_eq!(sm["metadata"]["labels"]["release"], "prometheus");
    let metrics_svc = get(&o, "Service", "batchgate-metrics");
    for (k, v) in sm["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(
            &metrics_svc["metadata"]["labels"][k], v,
            "the ServiceMonitor selects the metrics Service"
        );
    }

    let (_, ns, sets) = COMBINATIONS[3];
    let o = objects(&template(ns, sets));
    let cfg = &get(&o, "ConfigMap", "batchgate-config")["data"]["config.yaml"];
    assert_eq!(cfg["certificates"]["manage"], true);
    assert_eq!(
        cfg["certificates"]["secret"],
        "batchgate-system/batchgate-webhook-server-cert"
    );
    assert!(cfg["webhook"]["certDir"].is_null(), "{cfg}");
    assert_eq!(cfg["admission"], "external");
    assert_eq!(cfg["manageJobsWithoutQueueName"], true);
    assert_eq!(
        cfg["prescaler"]["image"],
        "registry.example/batchgate:v0.1.0"
    );
    assert_eq!(cfg["metrics"]["enableClusterQueueResources"], true);
    assert_eq!(
        cfg["integrations"]["frameworks"],
        serde_json::json!(["batch/job", "jobset.x-k8s.io/jobset"])
    );
    let d = get(&o, "Deployment", "batchgate");
    let spec = &d["spec"]["template"]["spec"];
    assert_eq!(d["spec"]["replicas"], 3);
    assert!(spec["affinity"].is_null());
    assert_eq!(
        spec["containers"][0]["image"],
        "registry.example/batchgate:v0.1.0"
    );
    assert_eq!(
        spec["volumes"].as_array().unwrap().len(),
        1,
        "no mounted Secret"
    );
    assert!(!o.keys().any(|(k, ..)| k == "PodDisruptionBudget"));

    let (_, ns, sets) = COMBINATIONS[4];
    let o = objects(&template(ns, sets));
    assert!(!o
        .keys()
        .any(|(k, ..)| k == "CustomResourceDefinition" || k == "APIService"));

    // Beside Kueue: only AppWrapper's webhooks and CRD, no visibility API,
    // Kueue admits.
    let (_, ns, sets) = COMBINATIONS[5];
    let o = objects(&template(ns, sets));
    let names: Vec<Value> = webhooks(&o).iter().map(|w| w["name"].clone()).collect();
    assert_eq!(
        names,
        serde_json::json!(["mappwrapper.kb.io", "vappwrapper.kb.io"])
            .as_array()
            .unwrap()
            .clone()
    );
    let crds: Vec<&String> = o
        .keys()
        .filter(|(k, ..)| k == "CustomResourceDefinition")
        .map(|(_, _, n)| n)
        .collect();
    assert_eq!(crds, ["appwrappers.workload.codeflare.dev"]);
    assert!(!o.keys().any(|(k, ..)| k == "APIService"));
    let cfg = &get(&o, "ConfigMap", "batchgate-config")["data"]["config.yaml"];
    assert_eq!(cfg["admission"], "external");
    assert_eq!(cfg["integrations"]["frameworks"], serde_json::json!([]));

    // A value the chart cannot render is refused with what would be right.
    let chart = chart();
    for (sets, message) in [
        (
            &["certificates.mode=selfSigned"][..],
            "certificates.mode: \"selfSigned\" is not one of secret, certManager, managed",
        ),
        (
            &["appwrapper.wrappedKinds[0].apiGroups={batch}"][..],
            "appwrapper.wrappedKinds[0]: needs apiGroups and resources",
        ),
        (
            &["besideKueue=true", "config.admission=builtin"][..],
            "besideKueue: Kueue admits; config.admission must be external or unset",
        ),
    ] {
        let mut args = vec!["template".to_string(), "batchgate".into(), chart.clone()];
        args.extend(set_args(sets));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, _, err) = run_helm(&args);
        assert!(!ok, "{sets:?} rendered");
        assert!(err.contains(message), "{sets:?}: {err}");
    }
}

/// Every combination, rendered, is accepted by the apiserver
/// (`kubectl apply --dry-run=server`): schemas, CEL rules, references.
#[test]
fn every_combination_applies_to_the_apiserver() {
    let c = batchgate_localcluster::shared();
    // What the chart needs to exist: its namespaces (helm's
    // --create-namespace), and the CRDs of cert-manager and
    // prometheus-operator, which it uses but does not ship (stand-ins).
    for ns in ["batchgate-system", "batchgate-other"] {
        let _ = kubectl(c, &["create", "namespace", ns], None);
    }
    for fixture in ["cert-manager-crds.yaml", "servicemonitor-crd.yaml"] {
        let (ok, out, err) = kubectl(
            c,
            &["apply", "-f", &format!("{ROOT}/tests/fixtures/{fixture}")],
            None,
        );
        assert!(ok, "{fixture}: {out}{err}");
    }
    c.wait_established(
        &[
            "crd/certificates.cert-manager.io",
            "crd/issuers.cert-manager.io",
            "crd/servicemonitors.monitoring.coreos.com",
        ],
        Duration::from_secs(120),
    )
    .unwrap();
    for (name, namespace, sets) in COMBINATIONS {
        let rendered = template(namespace, sets);
        let (ok, out, err) = kubectl(
            c,
            &["apply", "--dry-run=server", "-f", "-"],
            Some(&rendered),
        );
        assert!(ok, "{name}: kubectl apply --dry-run=server:\n{out}{err}");
        let applied = out.lines().count();
        assert_eq!(applied, objects(&rendered).len(), "{name}: {out}");
    }
}
