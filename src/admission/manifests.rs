//! Webhook configurations generated from the loaded policies, so the rules
//! registered with the apiserver always cover exactly the integrated kinds.
//! `manifests/webhooks.yaml` and the local-cluster registration both come
//! from here; only `clientConfig` differs.

use serde_json::{json, Value};

use crate::{
    admission::{appwrapper, devices, kueue, prescale},
    jobs::policy::{Policy, PolicySet},
};

pub const MUTATING_NAME: &str = "batchgate-mutating-webhook-configuration";
pub const VALIDATING_NAME: &str = "batchgate-validating-webhook-configuration";

/// Where the apiserver reaches batchgate.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// In-cluster: a Service (`https://<name>.<namespace>.svc:<port>`).
    Service {
        namespace: String,
        name: String,
        port: u16,
    },
    /// A URL base such as `https://127.0.0.1:9443` (local runs).
    Url(String),
}

#[derive(Debug, Clone)]
pub struct WebhookOptions {
    pub endpoint: Endpoint,
    /// base64 PEM; `None` leaves it to cert-manager's CA injector or to
    /// batchgate's own certificate management.
    pub ca_bundle: Option<String>,
    /// `Fail` (Kueue's choice) or `Ignore`.
    pub failure_policy: String,
    pub timeout_seconds: u8,
    /// batchgate's namespace, excluded with kube-system.
    pub namespace: String,
    /// `cert-manager.io/inject-ca-from: <ns>/<certificate>`.
    pub inject_ca_from: Option<String>,
    /// The user batchgate's reconciler writes as
    /// (`system:serviceaccount:<namespace>:<name>`): its requests skip the
    /// validating webhooks, so its own writes never wait on a webhook call
    /// routed to another (possibly frozen) replica. `None` exempts no one.
    pub reconciler_user: Option<String>,
}

/// The username a ServiceAccount authenticates as.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The `matchConditions` that let the reconciler's own requests through
/// without a webhook call (Kubernetes 1.30+; beta and on by default since 1.28).
fn exempt_reconciler(w: &mut Value, opts: &WebhookOptions) {
    if let Some(user) = &opts.reconciler_user {
        w["matchConditions"] = json!([{
            "name": "not-batchgate-reconciler",
            "expression": format!("request.userInfo.username != '{}'", user.replace('\'', "")),
        }]);
    }
}

fn client_config(opts: &WebhookOptions, path: &str) -> Value {
    let mut cc = match &opts.endpoint {
        Endpoint::Service {
            namespace,
            name,
            port,
        } => json!({
            "service": {"namespace": namespace, "name": name, "path": path, "port": port}
        }),
        Endpoint::Url(base) => json!({ "url": format!("{}{path}", base.trim_end_matches('/')) }),
    };
    if let Some(ca) = &opts.ca_bundle {
        cc["caBundle"] = json!(ca);
    }
    cc
}

/// Kueue's webhook names: `m<kind>.kb.io` / `v<kind>.kb.io`, so denials read
/// `admission webhook "vjob.kb.io" denied the request: ...` as upstream.
pub fn webhook_name(prefix: char, policy: &Policy) -> String {
    format!("{prefix}{}.kb.io", policy.target.kind.to_lowercase())
}

fn entry(opts: &WebhookOptions, policy: &Policy, mutating: bool) -> Value {
    // Kinds queued through their pods are defaulted on UPDATE too (Kueue's
    // deployment and statefulset webhooks: verbs=create;update).
    let operations: &[&str] = if mutating && policy.pod_owner.is_none() {
        &["CREATE"]
    } else {
        &["CREATE", "UPDATE"]
    };
    let mut w = json!({
        "name": webhook_name(if mutating { 'm' } else { 'v' }, policy),
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config(opts, if mutating { "/mutate" } else { "/validate" }),
        "failurePolicy": opts.failure_policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": opts.timeout_seconds,
        "namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", opts.namespace],
        }]},
        "rules": [{
            "apiGroups": [policy.target.group],
            "apiVersions": [policy.target.version],
            "operations": operations,
            "resources": [policy.target.resource],
            "scope": "Namespaced",
        }],
    });
    if mutating {
        w["reinvocationPolicy"] = json!("IfNeeded");
    } else {
        // The reconciler starts and stops jobs with updates the core
        // decided; Kueue's job rules accept them.
        exempt_reconciler(&mut w, opts);
    }
    w
}

/// A validating webhook (`/validate`, create and update) for one resource
/// list of one group/version; `namespaced_only` keeps it out of kube-system
/// and batchgate's own namespace, as the job webhooks are.
fn validating_entry(
    opts: &WebhookOptions,
    name: &str,
    (group, version): (&str, &str),
    resources: Value,
    namespaced: bool,
    namespaced_only: bool,
) -> Value {
    let mut w = json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config(opts, "/validate"),
        "failurePolicy": opts.failure_policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": opts.timeout_seconds,
        "rules": [{
            "apiGroups": [group],
            "apiVersions": [version],
            "operations": ["CREATE", "UPDATE"],
            "resources": resources,
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
        }],
    });
    exempt_reconciler(&mut w, opts);
    if namespaced_only {
        w["namespaceSelector"] = json!({"matchExpressions": [{
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", opts.namespace],
        }]});
    }
    w
}

/// The validating webhook of one of Kueue's own kinds, as upstream
/// registers it (`pkg/webhooks/*_webhook.go` markers): create and update,
/// no namespace selector (ClusterQueues, Cohorts and ResourceFlavors are
/// cluster-scoped; upstream selects Workloads in every namespace), and for
/// Workloads the status subresource too.
fn kueue_entry(opts: &WebhookOptions, kind: kueue::Kind) -> Value {
    validating_entry(
        opts,
        kind.webhook_name(),
        (kueue::GROUP, kueue::VERSION),
        json!(kind.resources()),
        kind.namespaced(),
        false,
    )
}

/// The defaulting webhook of one of Kueue's kinds that has one upstream:
/// create only, at `/mutate`.
fn kueue_defaulting_entry(opts: &WebhookOptions, kind: kueue::Kind, name: &str) -> Value {
    json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config(opts, "/mutate"),
        "failurePolicy": opts.failure_policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": opts.timeout_seconds,
        "rules": [{
            "apiGroups": [kueue::GROUP],
            "apiVersions": [kueue::VERSION],
            "operations": ["CREATE"],
            "resources": kind.resources(),
            "scope": if kind.namespaced() { "Namespaced" } else { "Cluster" },
        }],
    })
}

/// The validating webhook of a device kind: create and update, every
/// namespace.
fn device_entry(opts: &WebhookOptions, kind: devices::Kind) -> Value {
    validating_entry(
        opts,
        &kind.webhook_name(),
        (crate::api::devices::GROUP, crate::api::devices::VERSION),
        json!([kind.resource()]),
        kind.namespaced(),
        false,
    )
}

/// PreScaledCronJobs: create and update, in every namespace but
/// kube-system and batchgate's own (`vprescaledcronjob.kb.io`).
fn prescale_entry(opts: &WebhookOptions) -> Value {
    validating_entry(
        opts,
        prescale::WEBHOOK_NAME,
        (prescale::GROUP, prescale::VERSION),
        json!([prescale::RESOURCE]),
        true,
        true,
    )
}

/// The MutatingWebhookConfiguration and ValidatingWebhookConfiguration.
pub fn webhook_configurations(policies: &PolicySet, opts: &WebhookOptions) -> Vec<Value> {
    let mut sorted: Vec<_> = policies.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let metadata = |name: &str| {
        let mut m = json!({"name": name, "labels": {"app.kubernetes.io/name": "batchgate"}});
        if let Some(src) = &opts.inject_ca_from {
            m["annotations"] = json!({"cert-manager.io/inject-ca-from": src});
        }
        m
    };
    vec![
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": metadata(MUTATING_NAME),
            "webhooks": sorted
                .iter()
                .map(|p| entry(opts, p, true))
                // AppWrappers are always served (their own module, not a
                // policy): `mappwrapper.kb.io`, CREATE, as upstream.
                .chain([entry(opts, appwrapper::policy(), true)])
                .chain(kueue::Kind::ALL.into_iter().filter_map(|k| {
                    k.defaulting_webhook_name()
                        .map(|n| kueue_defaulting_entry(opts, k, n))
                }))
                .collect::<Vec<_>>(),
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": metadata(VALIDATING_NAME),
            "webhooks": sorted
                .iter()
                .map(|p| entry(opts, p, false))
                .chain([entry(opts, appwrapper::policy(), false)])
                .chain(kueue::Kind::ALL.into_iter().map(|k| kueue_entry(opts, k)))
                .chain(devices::Kind::ALL.into_iter().map(|k| device_entry(opts, k)))
                .chain([prescale_entry(opts)])
                .collect::<Vec<_>>(),
        }),
    ]
}

/// Documents as one multi-document YAML stream.
pub fn to_yaml(header: &str, docs: &[Value]) -> String {
    let mut out = String::from(header);
    for d in docs {
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(d).unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(endpoint: Endpoint) -> WebhookOptions {
        WebhookOptions {
            endpoint,
            ca_bundle: Some("Q0E=".into()),
            failure_policy: "Fail".into(),
            timeout_seconds: 10,
            namespace: "batchgate-system".into(),
            inject_ca_from: None,
            reconciler_user: Some(service_account_user("batchgate-system", "batchgate")),
        }
    }

    #[test]
    fn every_policy_gets_a_rule_on_both_paths() {
        let policies = PolicySet::embedded().unwrap();
        let docs = webhook_configurations(
            &policies,
            &opts(Endpoint::Url("https://127.0.0.1:9443/".into())),
        );
        let m = &docs[0]["webhooks"];
        let v = &docs[1]["webhooks"];
        // Each policy, AppWrappers, and Kueue's two defaulted kinds.
        assert_eq!(m.as_array().unwrap().len(), policies.len() + 3);
        let job_m = m
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == "mjob.kb.io")
            .unwrap();
        assert_eq!(
            job_m["clientConfig"]["url"],
            "https://127.0.0.1:9443/mutate"
        );
        assert_eq!(job_m["clientConfig"]["caBundle"], "Q0E=");
        assert_eq!(job_m["rules"][0]["operations"], json!(["CREATE"]));
        assert_eq!(job_m["reinvocationPolicy"], "IfNeeded");
        assert_eq!(job_m["sideEffects"], "None");
        let job_v = v
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == "vjob.kb.io")
            .unwrap();
        assert_eq!(job_v["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
        assert_eq!(job_v["rules"][0]["resources"], json!(["jobs"]));
        assert_eq!(
            job_v["namespaceSelector"]["matchExpressions"][0]["values"],
            json!(["kube-system", "batchgate-system"])
        );
        assert!(job_v.get("reinvocationPolicy").is_none());
    }

    #[test]
    fn kueue_kinds_are_validated_as_upstream_registers_them() {
        let policies = PolicySet::embedded().unwrap();
        let docs = webhook_configurations(&policies, &opts(Endpoint::Url("https://h".into())));
        let v = docs[1]["webhooks"].as_array().unwrap();
        let kueue: Vec<&Value> = v
            .iter()
            .filter(|w| w["rules"][0]["apiGroups"][0] == "kueue.x-k8s.io")
            .collect();
        let names: Vec<&str> = kueue.iter().map(|w| w["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "vclusterqueue.kb.io",
                "vcohort.kb.io",
                "vresourceflavor.kb.io",
                "vworkload.kb.io"
            ]
        );
        let wl = kueue[3];
        assert_eq!(
            wl["rules"][0]["resources"],
            json!(["workloads", "workloads/status"])
        );
        assert_eq!(wl["rules"][0]["apiVersions"], json!(["v1beta2"]));
        assert_eq!(wl["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
        assert_eq!(wl["rules"][0]["scope"], "Namespaced");
        assert_eq!(kueue[0]["rules"][0]["scope"], "Cluster");
        assert_eq!(wl["clientConfig"]["url"], "https://h/validate");
        assert!(wl.get("namespaceSelector").is_none());
        // ClusterQueues and ResourceFlavors are defaulted on create (the
        // resource-in-use finalizer), as upstream's markers register them.
        let m: Vec<&Value> = docs[0]["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["rules"][0]["apiGroups"][0] == "kueue.x-k8s.io")
            .collect();
        let names: Vec<&str> = m.iter().map(|w| w["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["mclusterqueue.kb.io", "mresourceflavor.kb.io"]);
        assert_eq!(m[0]["rules"][0]["operations"], json!(["CREATE"]));
        assert_eq!(m[0]["rules"][0]["resources"], json!(["clusterqueues"]));
        assert_eq!(m[1]["rules"][0]["resources"], json!(["resourceflavors"]));
        assert_eq!(m[0]["rules"][0]["scope"], "Cluster");
        assert_eq!(m[0]["clientConfig"]["url"], "https://h/mutate");
        assert!(m[0].get("matchConditions").is_none());
    }

    #[test]
    fn appwrappers_are_registered_as_upstream_names_them() {
        let policies = PolicySet::embedded().unwrap();
        let docs = webhook_configurations(&policies, &opts(Endpoint::Url("https://h".into())));
        let find = |doc: usize, name: &str| {
            docs[doc]["webhooks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|w| w["name"] == name)
                .cloned()
                .unwrap()
        };
        let m = find(0, "mappwrapper.kb.io");
        assert_eq!(m["rules"][0]["operations"], json!(["CREATE"]));
        assert_eq!(
            m["rules"][0]["apiGroups"],
            json!(["workload.codeflare.dev"])
        );
        assert_eq!(m["rules"][0]["apiVersions"], json!(["v1beta2"]));
        assert_eq!(m["rules"][0]["resources"], json!(["appwrappers"]));
        assert_eq!(m["clientConfig"]["url"], "https://h/mutate");
        let v = find(1, "vappwrapper.kb.io");
        assert_eq!(v["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
        assert_eq!(v["clientConfig"]["url"], "https://h/validate");
    }

    #[test]
    fn prescaled_cronjobs_are_validated() {
        let policies = PolicySet::embedded().unwrap();
        let docs = webhook_configurations(&policies, &opts(Endpoint::Url("https://h".into())));
        let v = docs[1]["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == "vprescaledcronjob.kb.io")
            .cloned()
            .unwrap();
        assert_eq!(v["rules"][0]["apiGroups"], json!(["psc.cronprimer.local"]));
        assert_eq!(v["rules"][0]["resources"], json!(["prescaledcronjobs"]));
        assert_eq!(v["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
        assert_eq!(v["clientConfig"]["url"], "https://h/validate");
        assert!(docs[0]["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["rules"][0]["apiGroups"][0] != "psc.cronprimer.local"));
    }

    #[test]
    fn the_reconciler_skips_validation_and_nothing_else_does() {
        let policies = PolicySet::embedded().unwrap();
        let docs = webhook_configurations(&policies, &opts(Endpoint::Url("https://h".into())));
        let expected = json!([{
            "name": "not-batchgate-reconciler",
            "expression": "request.userInfo.username != 'system:serviceaccount:batchgate-system:batchgate'",
        }]);
        for w in docs[1]["webhooks"].as_array().unwrap() {
            assert_eq!(w["matchConditions"], expected, "{}", w["name"]);
        }
        // Defaulting applies to every create, the reconciler's included.
        for w in docs[0]["webhooks"].as_array().unwrap() {
            assert!(w.get("matchConditions").is_none(), "{}", w["name"]);
        }
        let mut o = opts(Endpoint::Url("https://h".into()));
        o.reconciler_user = None;
        let docs = webhook_configurations(&policies, &o);
        assert!(docs[1]["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w.get("matchConditions").is_none()));
    }

    #[test]
    fn service_endpoint() {
        let policies = PolicySet::embedded().unwrap();
        let o = opts(Endpoint::Service {
            namespace: "ns".into(),
            name: "svc".into(),
            port: 443,
        });
        let docs = webhook_configurations(&policies, &o);
        assert_eq!(
            docs[1]["webhooks"][0]["clientConfig"]["service"],
            json!({"namespace": "ns", "name": "svc", "path": "/validate", "port": 443})
        );
    }
}
