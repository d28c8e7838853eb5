//! manifests/ holds generated webhook configurations; they must match what
//! the binary generates from the built-in policies today.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_batchgate");

fn generated(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("webhooks")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn committed(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn webhook_manifests_are_fresh() {
    assert!(
        committed("manifests/webhooks.yaml") == generated(&[]),
        "manifests/webhooks.yaml is stale: run `make manifests`"
    );
    assert!(
        committed("manifests/cert-manager/webhooks.yaml")
            == generated(&[
                "--inject-ca-from",
                "batchgate-system/batchgate-serving-cert"
            ]),
        "manifests/cert-manager/webhooks.yaml is stale: run `make manifests`"
    );
}

#[test]
fn local_registration_differs_only_in_client_config() {
    let service: Vec<serde_yaml::Value> = docs(&generated(&[]));
    let local: Vec<serde_yaml::Value> = docs(&generated(&[
        "--url",
        "https://127.0.0.1:9443",
        "--failure-policy",
        "Fail",
    ]));
    assert_eq!(service.len(), local.len());
    for (mut s, mut l) in service.into_iter().zip(local) {
        for doc in [&mut s, &mut l] {
            for w in doc["webhooks"].as_sequence_mut().unwrap() {
                w.as_mapping_mut().unwrap().remove("clientConfig");
            }
        }
        assert_eq!(s, l);
    }
}

fn docs(text: &str) -> Vec<serde_yaml::Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|d| serde_yaml::Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

#[test]
fn registration_follows_the_configured_policies_and_integrations() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("widget.yaml"),
        "name: example.com/widget\ntarget: {group: example.com, version: v1, kind: Widget, resource: widgets}\nsuspend: /spec/paused\npodSets: [{name: main, template: /spec/template}]\n",
    )
    .unwrap();
    std::fs::copy(
        format!("{}/policies/batch-v1-job.yaml", env!("CARGO_MANIFEST_DIR")),
        dir.path().join("job.yaml"),
    )
    .unwrap();
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "integrations:\n  policiesDir: {}\n  frameworks: [example.com/widget]\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let out = generated(&["--config", cfg.to_str().unwrap()]);
    let d = docs(&out);
    let names: Vec<_> = d[1]["webhooks"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "vwidget.kb.io",
            "vappwrapper.kb.io",
            "vclusterqueue.kb.io",
            "vcohort.kb.io",
            "vresourceflavor.kb.io",
            "vworkload.kb.io",
            "vdevicedriver.devmgmtproto.k8s.io",
            "vdeviceclass.devmgmtproto.k8s.io",
            "vdeviceclaim.devmgmtproto.k8s.io",
            "vdevicepool.devmgmtproto.k8s.io",
            "vprescaledcronjob.kb.io"
        ],
        "only the enabled integration is registered, then AppWrapper, Kueue's own kinds and the device kinds (always)"
    );
    assert_eq!(
        d[1]["webhooks"][0]["rules"][0]["resources"][0].as_str(),
        Some("widgets")
    );

    std::fs::write(&cfg, "integrations:\n  frameworks: [kubeflow.org/nope]\n").unwrap();
    let out = Command::new(BIN)
        .args(["webhooks", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"integrations.frameworks names "kubeflow.org/nope", which no policy describes; known: batch/job"#),
        "{err}"
    );
}

/// Whether the shipped ClusterRole `batchgate` (manifests/rbac.yaml) grants
/// a verb on a resource of a group.
fn cluster_role_grants() -> impl Fn(&str, &str, &str) -> bool {
    let rbac = docs(&committed("manifests/rbac.yaml"));
    let role = rbac
        .into_iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "batchgate")
        .expect("ClusterRole batchgate");
    move |group: &str, resource: &str, verb: &str| {
        role["rules"].as_sequence().unwrap().iter().any(|r| {
            let has = |key: &str, v: &str| {
                r[key]
                    .as_sequence()
                    .is_some_and(|s| s.iter().any(|x| x.as_str() == Some(v)))
            };
            has("apiGroups", group) && has("resources", resource) && has("verbs", verb)
        })
    }
}

/// The reconciler starts and stops every integrated kind by patching it:
/// the shipped ClusterRole must grant that for each shipped policy.
#[test]
fn rbac_covers_every_shipped_policy() {
    let grants = cluster_role_grants();
    let appwrapper = std::sync::Arc::new(batchgate::admission::appwrapper::policy().clone());
    for policy in batchgate::jobs::policy::PolicySet::embedded()
        .unwrap()
        .iter()
        .chain([&appwrapper])
    {
        let t = &policy.target;
        for verb in ["get", "list", "watch", "patch"] {
            assert!(
                grants(&t.group, &t.resource, verb),
                "manifests/rbac.yaml does not grant {verb} on {}.{} ({})",
                t.resource,
                t.group,
                policy.source
            );
        }
        // A job whose pod templates live in a referenced object (a
        // TrainJob's runtime): that object is read.
        for k in policy.runtime_ref.iter().flat_map(|r| r.kinds.iter()) {
            let group = &policy.runtime_ref.as_ref().unwrap().group;
            assert!(
                grants(group, &k.resource, "get"),
                "manifests/rbac.yaml does not grant get on {}.{group} ({})",
                k.resource,
                policy.source
            );
        }
        // The AppWrapper controller writes the status.
        if policy.status.as_ref().is_some_and(|s| !s.reset.is_empty()) || t.kind == "AppWrapper" {
            assert!(
                grants(&t.group, &format!("{}/status", t.resource), "patch"),
                "{}/status needs patch for the policy's status.reset",
                t.resource
            );
        }
    }
}

/// The PreScaledCronJob controller reads PreScaledCronJobs, writes their
/// status, and creates, watches and replaces their CronJobs; its pod
/// controller watches the primed pods and lists their Events.
#[test]
fn rbac_covers_the_prescaledcronjob_controller() {
    let grants = cluster_role_grants();
    for (group, resource, verbs) in [
        (
            "psc.cronprimer.local",
            "prescaledcronjobs",
            &["get", "list", "watch"][..],
        ),
        (
            "psc.cronprimer.local",
            "prescaledcronjobs/status",
            &["patch"][..],
        ),
        (
            "psc.cronprimer.local",
            "prescaledcronjobs/finalizers",
            &["update"][..],
        ),
        (
            "batch",
            "cronjobs",
            &["get", "list", "watch", "create", "update"][..],
        ),
        ("events.k8s.io", "events", &["create", "patch"][..]),
        ("", "pods", &["list", "watch"][..]),
        ("", "events", &["list"][..]),
    ] {
        for verb in verbs {
            assert!(
                grants(group, resource, verb),
                "manifests/rbac.yaml does not grant {verb} on {resource}.{group}"
            );
        }
    }
}

/// The AppWrapper controller's Autopilot node monitor watches Nodes and
/// lists the AppWrapper pods on a node flagged NoExecute.
#[test]
fn rbac_covers_the_appwrapper_node_monitor() {
    let grants = cluster_role_grants();
    for (resource, verb) in [
        ("nodes", "get"),
        ("nodes", "list"),
        ("nodes", "watch"),
        ("pods", "list"),
    ] {
        assert!(
            grants("", resource, verb),
            "manifests/rbac.yaml does not grant {verb} on {resource}"
        );
    }
}

/// Kueue's Topology controller keeps the `resource-in-use` finalizer on a
/// Topology while a ResourceFlavor names it: batchgate's needs the same
/// verbs as for the ResourceFlavors it guards.
#[test]
fn rbac_covers_the_topology_finalizer() {
    let grants = cluster_role_grants();
    for verb in ["get", "list", "watch", "update", "patch"] {
        assert!(
            grants("kueue.x-k8s.io", "topologies", verb),
            "manifests/rbac.yaml does not grant {verb} on topologies.kueue.x-k8s.io"
        );
    }
}

/// Kueue's MultiKueue admission check reads MultiKueueConfigs and the
/// MultiKueueClusters they name, and each cluster's `Active` condition is
/// written through the status subresource.
#[test]
fn rbac_covers_multikueue() {
    let grants = cluster_role_grants();
    for resource in ["multikueueclusters", "multikueueconfigs"] {
        for verb in ["get", "list", "watch"] {
            assert!(
                grants("kueue.x-k8s.io", resource, verb),
                "manifests/rbac.yaml does not grant {verb} on {resource}.kueue.x-k8s.io"
            );
        }
    }
    for verb in ["get", "update", "patch"] {
        assert!(
            grants("kueue.x-k8s.io", "multikueueclusters/status", verb),
            "manifests/rbac.yaml does not grant {verb} on multikueueclusters/status"
        );
    }
}

/// The shipped Deployment's memory limit holds what the shipped
/// configuration lets the server buffer: the body budget, every connection
/// slot full, and the baseline (`Limits::memory_bound`). Raising
/// maxConnections or maxBodyBytesInFlight without the limit fails here.
#[test]
fn deployment_memory_limit_covers_the_body_budget_and_the_connection_cap() {
    let deployment: serde_yaml::Value =
        serde_yaml::from_str(&committed("manifests/deployment.yaml")).unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let limit = container["resources"]["limits"]["memory"]
        .as_str()
        .expect("the batchgate container has a memory limit");
    let limit: u64 = match limit.strip_suffix("Mi") {
        Some(mib) => mib.parse::<u64>().unwrap() << 20,
        None => match limit.strip_suffix("Gi") {
            Some(gib) => gib.parse::<u64>().unwrap() << 30,
            None => panic!("memory limit {limit}: expected Mi or Gi"),
        },
    };
    let config_map: serde_yaml::Value =
        serde_yaml::from_str(&committed("manifests/config.yaml")).unwrap();
    let cfg = batchgate::config::Config::parse(
        "manifests/config.yaml",
        config_map["data"]["config.yaml"].as_str().unwrap(),
    )
    .unwrap();
    let mut limits = batchgate::server::Limits::default();
    if let Some(n) = cfg.webhook.max_connections {
        limits.max_connections = n;
    }
    if let Some(n) = cfg.webhook.max_body_bytes_in_flight {
        limits.max_body_bytes_in_flight = n;
    }
    let bound = limits.memory_bound();
    assert!(
        bound <= limit,
        "the Deployment's memory limit ({} MiB) is below what the server may hold ({} MiB: {} MiB of bodies, {} connections at {} KiB, {} MiB baseline)",
        limit >> 20,
        bound >> 20,
        limits.max_body_bytes_in_flight >> 20,
        limits.max_connections,
        batchgate::server::CONNECTION_BYTES >> 10,
        batchgate::server::BASELINE_BYTES >> 20,
    );
    // And the budget is not a token: it fits the largest review at least.
    assert!(limits.max_body_bytes_in_flight / 4 * 3 >= limits.max_body_bytes);
}

/// With self-managed certificates batchgate keeps the conversion caBundle
/// of the five converted CRDs current: the ClusterRole grants get and patch
/// on exactly those CRDs.
#[test]
fn rbac_covers_the_conversion_ca_bundle() {
    let grants = cluster_role_grants();
    for verb in ["get", "patch"] {
        assert!(grants(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            verb
        ));
    }
    let rbac = docs(&committed("manifests/rbac.yaml"));
    let role = rbac
        .into_iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "batchgate")
        .expect("ClusterRole batchgate");
    let rules: Vec<&serde_yaml::Value> = role["rules"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|r| {
            r["resources"].as_sequence().is_some_and(|s| {
                s.iter()
                    .any(|x| x.as_str() == Some("customresourcedefinitions"))
            })
        })
        .collect();
    assert_eq!(rules.len(), 1);
    let names: Vec<&str> = rules[0]["resourceNames"]
        .as_sequence()
        .expect("limited to named CRDs")
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(names, batchgate::api::crd::CONVERTED_CRDS);
}

/// The queueing controller counts the devices of the ResourceClaimTemplates
/// Workloads name (DRA quota): it lists and watches them.
#[test]
fn rbac_lets_the_queueing_controller_read_claim_templates() {
    let grants = cluster_role_grants();
    for resource in ["resourceclaimtemplates", "resourceslices", "deviceclasses"] {
        for verb in ["list", "watch"] {
            assert!(
                grants("resource.k8s.io", resource, verb),
                "manifests/rbac.yaml does not grant {verb} on {resource}.resource.k8s.io"
            );
        }
    }
}
