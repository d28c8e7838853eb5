//! Kueue's CRDs (kueue.x-k8s.io/v1beta2), generated from batchgate's Rust
//! types: the files in manifests/crds are what the binary generates; the
//! CRDs declare what Kueue declares (names, scope, columns, subresources,
//! defaults, limits, CEL rules with Kueue's messages); Kueue's documented
//! objects read into the Rust types and write back without losing a field;
//! and a real kube-apiserver serves them, prints Kueue's columns and rejects
//! what Kueue rejects with Kueue's messages.

mod support;

use std::{
    collections::BTreeMap,
    process::Command,
    sync::OnceLock,
    time::{Duration, Instant},
};

use batchgate::api::{
    crd,
    kueue::v1beta2::{
        ClusterQueue, ClusterQueueSpec, Cohort, LocalQueue, MultiKueueCluster, MultiKueueConfig,
        ResourceFlavor, ResourceFlavorSpec, Topology, Workload, WorkloadPriorityClass,
    },
};
use batchgate_localcluster::{shared, LocalCluster};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::{json, Value};
use support::e2e::{get_json, kubectl};

const BIN: &str = env!("CARGO_BIN_EXE_batchgate");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

// ---------------------------------------------------------------- freshness

fn batchgate_crds(args: &[&str]) -> String {
    let out = Command::new(BIN).arg("crds").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn yaml_files(dir: &std::path::Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect()
}

#[test]
fn crd_manifests_are_fresh() {
    let tmp = tempfile::tempdir().unwrap();
    batchgate_crds(&["--out-dir", tmp.path().to_str().unwrap()]);
    let generated = yaml_files(tmp.path());
    let committed = yaml_files(&std::path::Path::new(ROOT).join("manifests/crds"));
    assert_eq!(
        generated.keys().collect::<Vec<_>>(),
        committed.keys().collect::<Vec<_>>(),
        "manifests/crds holds other files than `batchgate crds` generates: run `make manifests`"
    );
    for (name, text) in &generated {
        assert!(
            committed[name] == *text,
            "manifests/crds/{name} is stale: run `make manifests`"
        );
    }
    // `batchgate crds` prints the same documents, in a fixed order.
    let printed = batchgate_crds(&[]);
    let expected: String = crd::all().iter().map(|g| crd::to_yaml(&g.crd)).collect();
    assert_eq!(printed, expected);
    assert_eq!(printed, batchgate_crds(&[]), "output is not deterministic");
    assert_eq!(
        printed.len(),
        generated.values().map(String::len).sum::<usize>()
    );
}

#[test]
fn cert_manager_crds_are_fresh_and_annotated() {
    let tmp = tempfile::tempdir().unwrap();
    batchgate_crds(&[
        "--converted-only",
        "--inject-ca-from",
        "batchgate-system/batchgate-serving-cert",
        "--out-dir",
        tmp.path().to_str().unwrap(),
    ]);
    let generated = yaml_files(tmp.path());
    let committed = yaml_files(&std::path::Path::new(ROOT).join("manifests/cert-manager/crds"));
    assert_eq!(
        generated.keys().collect::<Vec<_>>(),
        committed.keys().collect::<Vec<_>>(),
        "manifests/cert-manager/crds: run `make manifests`"
    );
    for (name, text) in &generated {
        assert!(
            committed[name] == *text,
            "manifests/cert-manager/crds/{name} is stale: run `make manifests`"
        );
        let crd: Value = serde_yaml::from_str(text).unwrap();
        assert_eq!(
            crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            "batchgate-system/batchgate-serving-cert"
        );
        // Only the annotation differs from the self-managed CRD.
        let mut plain: Value = serde_yaml::from_str(
            &std::fs::read_to_string(std::path::Path::new(ROOT).join("manifests/crds").join(name))
                .unwrap(),
        )
        .unwrap();
        plain["metadata"]["annotations"] = crd["metadata"]["annotations"].clone();
        assert_eq!(plain, crd, "{name}");
    }
    let names: Vec<String> = crd::CONVERTED_CRDS
        .iter()
        .map(|n| {
            let (plural, group) = n.split_once('.').unwrap();
            format!("{group}_{plural}.yaml")
        })
        .collect();
    assert_eq!(generated.keys().cloned().collect::<Vec<_>>(), names);
}

#[test]
fn v1beta1_is_served_deprecated_and_converted_by_the_webhook() {
    for g in crd::kueue() {
        let kind = g.crd["spec"]["names"]["kind"].as_str().unwrap().to_string();
        let v1 = version(&g.crd, "v1beta1");
        assert_eq!(v1["served"], true, "{kind}");
        assert_eq!(v1["storage"], false, "{kind}");
        if kind == "MultiKueueConfig" {
            // Kueue v0.19.2 does not mark this one deprecated.
            assert!(v1.get("deprecated").is_none(), "{kind}");
        } else {
            assert_eq!(v1["deprecated"], true, "{kind}");
            assert_eq!(
                v1["deprecationWarning"],
                "This version is deprecated. Use v1beta2 instead."
            );
        }
        let conversion = &g.crd["spec"]["conversion"];
        if crd::CONVERTED_KINDS.contains(&kind.as_str()) {
            assert_eq!(
                *conversion,
                json!({"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {"service": {"namespace": "batchgate-system",
                        "name": "batchgate-webhook", "path": "/convert", "port": 443}}}}),
                "{kind}"
            );
        } else {
            // Same fields in both versions: the apiserver converts. Only
            // v1beta2 bounds a WorkloadPriorityClass's description (as
            // Kueue v0.19.2's CRD does).
            assert!(conversion.is_null(), "{kind}");
            let mut v2 = version(&g.crd, "v1beta2");
            if kind == "WorkloadPriorityClass" {
                let description = &mut v2["schema"]["openAPIV3Schema"]["properties"]["description"];
                assert_eq!(description["maxLength"], 2048);
                description.as_object_mut().unwrap().remove("maxLength");
            }
            if kind == "ProvisioningRequestConfig" {
                // v1beta2 alone bounds the class name below and keys the
                // node selector list, as Kueue v0.19.2's CRD.
                let spec = &mut v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
                let class = spec["provisioningClassName"].as_object_mut().unwrap();
                assert_eq!(class.remove("minLength"), Some(json!(1)));
                let ns = spec["podSetUpdates"]["properties"]["nodeSelector"]
                    .as_object_mut()
                    .unwrap();
                assert_eq!(ns.remove("x-kubernetes-list-type"), Some(json!("map")));
                assert_eq!(
                    ns.remove("x-kubernetes-list-map-keys"),
                    Some(json!(["key"]))
                );
            }
            if kind == "MultiKueueConfig" {
                // v1beta2 alone has quotaManagement and keeps the order
                // of the clusters (a rule checks they are unique).
                let clusters = at(&v1["schema"]["openAPIV3Schema"], "spec.clusters");
                assert_eq!(clusters["x-kubernetes-list-type"], "set");
                assert!(at(&v2["schema"]["openAPIV3Schema"], "spec.quotaManagement").is_object());
                continue;
            }
            if kind == "AdmissionCheck" {
                // v1beta1 keeps the deprecated retryDelayMinutes (default
                // 15) and bounds fewer strings, as Kueue v0.19.2's CRD.
                let v1spec = at(&v1["schema"]["openAPIV3Schema"], "spec");
                assert_eq!(v1spec["properties"]["retryDelayMinutes"]["default"], 15);
                assert!(
                    at(&v2["schema"]["openAPIV3Schema"], "spec.controllerName")["minLength"] == 1
                );
                continue;
            }
            assert_eq!(v1["schema"], v2["schema"], "{kind}");
        }
    }
    let v1 = |kind: &str| version(&generated(kind), "v1beta1")["schema"]["openAPIV3Schema"].clone();
    // v1beta1 MultiKueueClusters keep the kubeconfig at the top of the spec.
    let mkc = v1("MultiKueueCluster");
    assert_eq!(at(&mkc, "spec")["required"], json!(["kubeConfig"]));
    assert_eq!(
        at(&mkc, "spec.kubeConfig")["required"],
        json!(["location", "locationType"])
    );
    assert!(mkc["properties"]["spec"]["properties"]
        .get("clusterSource")
        .is_none());
    let cq = v1("ClusterQueue");
    assert!(at(&cq, "spec.cohort").is_object());
    assert!(cq["properties"]["spec"]["properties"]
        .get("cohortName")
        .is_none());
    assert_eq!(at(&cq, "spec.admissionChecks.[]")["maxLength"], 316);
    assert_eq!(
        at(&cq, "spec.flavorFungibility.whenCanPreempt")["enum"],
        json!(["MayStopSearch", "TryNextFlavor", "Preempt"])
    );
    assert!(cq["properties"]["spec"]["properties"]
        .get("concurrentAdmissionPolicy")
        .is_none());
    assert!(at(&cq, "status.pendingWorkloadsStatus").is_object());
    assert!(at(&cq, "status.fairSharing.admissionFairSharingStatus").is_object());
    assert!(
        cq["properties"]["spec"]["x-kubernetes-validations"][0]["rule"]
            .as_str()
            .unwrap()
            .starts_with("!has(self.cohort) &&")
    );
    let lq = v1("LocalQueue");
    assert!(at(&lq, "status.flavorUsage").is_object());
    assert!(at(&lq, "status.flavors").is_object());
    let wl = v1("Workload");
    assert_eq!(
        at(&wl, "spec.priorityClassSource")["enum"],
        json!([
            "kueue.x-k8s.io/workloadpriorityclass",
            "scheduling.k8s.io/priorityclass",
            ""
        ])
    );
    assert!(wl["properties"]["spec"]["properties"]
        .get("priorityClassRef")
        .is_none());
    assert!(wl["properties"]["spec"]["properties"]
        .get("preemptionGates")
        .is_none());
    assert!(at(&wl, "status.accumulatedPastExexcutionTimeSeconds").is_object());
    assert_eq!(
        at(
            &wl,
            "status.admission.podSetAssignments.[].topologyAssignment"
        )["required"],
        json!(["domains", "levels"])
    );
    let rules = wl["x-kubernetes-validations"].to_string();
    assert!(!rules.contains("priorityClassRef"), "{rules}");
    assert!(rules.contains("priorityClassSource is immutable while workload quota reserved"));
}

// -------------------------------------------------- what the CRDs declare

fn generated(kind: &str) -> Value {
    crd::all()
        .into_iter()
        .find(|g| g.crd["spec"]["names"]["kind"] == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind}"))
        .crd
}

/// The CRD's `versions[]` entry named `name`.
fn version(c: &Value, name: &str) -> Value {
    c["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no version {name}"))
        .clone()
}

/// The stored version's schema (v1beta2); Kueue's kinds also serve the
/// deprecated v1beta1, listed first as upstream lists it.
fn schema(kind: &str) -> Value {
    let c = generated(kind);
    let versions = c["spec"]["versions"].as_array().unwrap();
    if c["spec"]["group"] == "kueue.x-k8s.io" {
        let names: Vec<&Value> = versions.iter().map(|v| &v["name"]).collect();
        assert_eq!(names, ["v1beta1", "v1beta2"], "{kind}");
        assert_eq!(versions[0]["served"], true);
        assert_eq!(versions[0]["storage"], false);
        assert_eq!(
            versions[0]["deprecated"].as_bool().unwrap_or(false),
            kind != "MultiKueueConfig",
            "{kind}"
        );
    } else {
        assert_eq!(versions.len(), 1, "{kind}: one version");
    }
    let v = version(&c, "v1beta2");
    assert_eq!(v["served"], true);
    assert_eq!(v["storage"], true);
    v["schema"]["openAPIV3Schema"].clone()
}

/// The schema at a dotted path of property names (`[]` steps into items).
fn at(s: &Value, path: &str) -> Value {
    let mut cur = s.clone();
    for step in path.split('.') {
        cur = if step == "[]" {
            cur["items"].clone()
        } else {
            cur["properties"][step].clone()
        };
        assert!(!cur.is_null(), "no schema at {path} (stopped at {step})");
    }
    cur
}

fn rules(s: &Value) -> Vec<(String, String)> {
    s["x-kubernetes-validations"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    (
                        r["rule"].as_str().unwrap().to_string(),
                        r["message"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn messages(s: &Value) -> Vec<String> {
    rules(s).into_iter().map(|(_, m)| m).collect()
}

#[test]
fn names_scope_subresources_and_columns_are_kueues() {
    let expect = [
        (
            "ClusterQueue",
            "clusterqueues",
            "Cluster",
            &["cq"][..],
            true,
        ),
        (
            "LocalQueue",
            "localqueues",
            "Namespaced",
            &["queue", "queues", "lq"][..],
            true,
        ),
        (
            "ResourceFlavor",
            "resourceflavors",
            "Cluster",
            &["flavor", "flavors", "rf"][..],
            false,
        ),
        (
            "Workload",
            "workloads",
            "Namespaced",
            &["kwl", "kueueworkload", "kueueworkloads"][..],
            true,
        ),
        (
            "WorkloadPriorityClass",
            "workloadpriorityclasses",
            "Cluster",
            &["wpc"][..],
            false,
        ),
        ("Cohort", "cohorts", "Cluster", &["co"][..], true),
        (
            "AdmissionCheck",
            "admissionchecks",
            "Cluster",
            &["ac"][..],
            true,
        ),
        (
            "ProvisioningRequestConfig",
            "provisioningrequestconfigs",
            "Cluster",
            &["prc"][..],
            false,
        ),
        ("Topology", "topologies", "Cluster", &["topo"][..], false),
        (
            "MultiKueueCluster",
            "multikueueclusters",
            "Cluster",
            &["mkc"][..],
            true,
        ),
        (
            "MultiKueueConfig",
            "multikueueconfigs",
            "Cluster",
            &["mkconf"][..],
            false,
        ),
    ];
    // Kueue's kinds, the AppWrapper (below), the PreScaledCronJob and the
    // device kinds.
    assert_eq!(crd::all().len(), expect.len() + 2 + crd::devices().len());
    for (kind, plural, scope, short, status) in expect {
        let c = generated(kind);
        assert_eq!(c["metadata"]["name"], format!("{plural}.kueue.x-k8s.io"));
        assert_eq!(c["spec"]["group"], "kueue.x-k8s.io");
        assert_eq!(c["spec"]["names"]["plural"], plural);
        assert_eq!(c["spec"]["names"]["singular"], kind.to_lowercase());
        assert_eq!(c["spec"]["scope"], scope, "{kind}");
        assert!(
            c["spec"]["names"]["categories"].is_null(),
            "{kind}: Kueue declares no category"
        );
        let short_names = c["spec"]["names"]["shortNames"].clone();
        if short.is_empty() {
            assert!(short_names.is_null(), "{kind}");
        } else {
            assert_eq!(short_names, json!(short), "{kind}");
        }
        let sub = &version(&c, "v1beta2")["subresources"];
        assert_eq!(
            sub["status"] == json!({}),
            status,
            "{kind} status subresource"
        );
        let _ = schema(kind);
    }

    let columns = |kind: &str| -> Vec<(String, String, i64)> {
        version(&generated(kind), "v1beta2")["additionalPrinterColumns"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        (
                            c["name"].as_str().unwrap().to_string(),
                            c["jsonPath"].as_str().unwrap().to_string(),
                            c["priority"].as_i64().unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let own = |v: &[(&str, &str, i64)]| -> Vec<(String, String, i64)> {
        v.iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), *c))
            .collect()
    };
    assert_eq!(
        columns("ClusterQueue"),
        own(&[
            ("Cohort", ".spec.cohortName", 0),
            ("Strategy", ".spec.queueingStrategy", 1),
            ("Pending Workloads", ".status.pendingWorkloads", 0),
            ("Admitted Workloads", ".status.admittedWorkloads", 1),
        ])
    );
    assert_eq!(
        columns("LocalQueue"),
        own(&[
            ("ClusterQueue", ".spec.clusterQueue", 0),
            ("Pending Workloads", ".status.pendingWorkloads", 0),
            ("Admitted Workloads", ".status.admittedWorkloads", 0),
        ])
    );
    assert_eq!(
        columns("Workload"),
        own(&[
            ("Queue", ".spec.queueName", 0),
            ("Reserved in", ".status.admission.clusterQueue", 0),
            (
                "Admitted",
                ".status.conditions[?(@.type=='Admitted')].status",
                0
            ),
            (
                "Finished",
                ".status.conditions[?(@.type=='Finished')].status",
                0
            ),
            ("Age", ".metadata.creationTimestamp", 0),
        ])
    );
    assert_eq!(
        columns("WorkloadPriorityClass"),
        own(&[("Value", ".value", 0)])
    );
    assert!(columns("ResourceFlavor").is_empty());
    assert!(columns("Topology").is_empty());
    assert_eq!(
        columns("MultiKueueCluster"),
        own(&[
            (
                "Connected",
                ".status.conditions[?(@.type=='Active')].status",
                0
            ),
            ("Age", ".metadata.creationTimestamp", 0),
        ])
    );
    assert!(columns("MultiKueueConfig").is_empty());
    assert!(columns("Cohort").is_empty());
}

#[test]
fn appwrapper_crd_is_upstreams() {
    let c = generated("AppWrapper");
    assert_eq!(c["metadata"]["name"], "appwrappers.workload.codeflare.dev");
    assert_eq!(c["spec"]["group"], "workload.codeflare.dev");
    assert_eq!(c["spec"]["scope"], "Namespaced");
    assert_eq!(c["spec"]["names"]["plural"], "appwrappers");
    assert_eq!(c["spec"]["names"]["singular"], "appwrapper");
    assert_eq!(c["spec"]["names"]["shortNames"], json!(["aw"]));
    assert_eq!(
        c["spec"]["versions"][0]["subresources"]["status"],
        json!({})
    );
    let columns: Vec<(String, String)> = c["spec"]["versions"][0]["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["jsonPath"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("Status", ".status.phase"),
        (
            "Quota Reserved",
            ".status.conditions[?(@.type==\"QuotaReserved\")].status",
        ),
        (
            "Resources Deployed",
            ".status.conditions[?(@.type==\"ResourcesDeployed\")].status",
        ),
        (
            "Unhealthy",
            ".status.conditions[?(@.type==\"Unhealthy\")].status",
        ),
        ("Age", ".metadata.creationTimestamp"),
    ];
    assert_eq!(
        columns,
        want.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    let s = schema("AppWrapper");
    let template = at(&s, "spec.components.[].template");
    assert_eq!(template["x-kubernetes-embedded-resource"], true);
    assert_eq!(template["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(template["type"], "object");
    let required = |v: &Value| v["required"].clone();
    assert_eq!(required(&at(&s, "spec")), json!(["components"]));
    assert_eq!(required(&at(&s, "spec.components.[]")), json!(["template"]));
    assert_eq!(
        required(&at(&s, "spec.components.[].podSets.[]")),
        json!(["path"])
    );
    let _ = at(&s, "spec.components.[].podSetInfos.[].schedulingGates");
    let _ = at(&s, "status.resettingCount");
    let conditions = at(&s, "status.conditions");
    assert_eq!(conditions["x-kubernetes-list-type"], "map");
    assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
    assert_eq!(
        required(&at(&s, "status.componentStatus.[]")),
        json!(["apiVersion", "kind", "name", "podSets"])
    );
    // An upstream sample reads into the types and writes back unchanged.
    let sample = json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": "sample-job", "labels": {"kueue.x-k8s.io/queue-name": "default-queue"},
                     "annotations": {"workload.codeflare.dev.appwrapper/successTTLDuration": "1m"}},
        "spec": {"components": [{
            "podSets": [{"replicas": 1, "path": "template.spec.template", "annotations": {"a": "b"}}],
            "podSetInfos": [{"labels": {"l": "v"}, "nodeSelector": {"zone": "a"},
                             "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                             "schedulingGates": [{"name": "g"}]}],
            "template": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "sample-job"},
                         "spec": {"template": {"spec": {"restartPolicy": "Never",
                             "containers": [{"name": "busybox", "image": "quay.io/project-codeflare/busybox:1.36",
                                             "command": ["sh", "-c", "sleep 5"],
                                             "resources": {"requests": {"cpu": 1}}}]}}}}}],
                 "suspend": true, "managedBy": "workload.codeflare.dev/appwrapper-controller"},
        "status": {"phase": "Running", "resettingCount": 2,
                   "componentStatus": [{"name": "sample-job", "kind": "Job", "apiVersion": "batch/v1",
                                        "podSets": [{"replicas": 1, "path": "template.spec.template"}]}]}
    });
    let back = round_trip::<batchgate::api::appwrapper::v1beta2::AppWrapper>(&sample);
    assert_eq!(back, sample);
}

#[test]
fn cluster_queue_schema_has_kueues_defaults_enums_limits_and_rules() {
    let s = schema("ClusterQueue");
    let spec = at(&s, "spec");
    assert_eq!(
        messages(&spec),
        ["borrowingLimit must be nil when cohort is empty"]
    );
    let strategy = at(&s, "spec.queueingStrategy");
    assert_eq!(strategy["default"], "BestEffortFIFO");
    assert_eq!(strategy["enum"], json!(["StrictFIFO", "BestEffortFIFO"]));
    let stop = at(&s, "spec.stopPolicy");
    assert_eq!(stop["default"], "None");
    assert_eq!(stop["enum"], json!(["None", "Hold", "HoldAndDrain"]));
    assert_eq!(at(&s, "spec.flavorFungibility")["default"], json!({}));
    assert_eq!(
        at(&s, "spec.flavorFungibility.whenCanBorrow")["default"],
        "MayStopSearch"
    );
    assert_eq!(
        at(&s, "spec.flavorFungibility.whenCanPreempt")["default"],
        "TryNextFlavor"
    );
    assert_eq!(
        messages(&at(&s, "spec.flavorFungibility")),
        ["preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"]
    );
    let preemption = at(&s, "spec.preemption");
    assert_eq!(preemption["default"], json!({}));
    assert_eq!(
        messages(&preemption),
        ["reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"]
    );
    assert_eq!(
        at(&s, "spec.preemption.withinClusterQueue")["enum"],
        json!(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
    );
    assert_eq!(
        at(&s, "spec.preemption.reclaimWithinCohort")["enum"],
        json!(["Never", "LowerPriority", "Any"])
    );
    assert_eq!(
        at(&s, "spec.preemption.borrowWithinCohort")["default"],
        json!({})
    );
    let groups = at(&s, "spec.resourceGroups");
    assert_eq!(groups["maxItems"], 16);
    assert_eq!(groups["x-kubernetes-list-type"], "atomic");
    assert_eq!(
        messages(&groups["items"]),
        ["flavors must have the same number of resources as the coveredResources"]
    );
    let flavors = at(&s, "spec.resourceGroups.[].flavors");
    assert_eq!(
        (flavors["minItems"].clone(), flavors["maxItems"].clone()),
        (json!(1), json!(64))
    );
    assert_eq!(flavors["x-kubernetes-list-map-keys"], json!(["name"]));
    let quota = at(
        &s,
        "spec.resourceGroups.[].flavors.[].resources.[].nominalQuota",
    );
    assert_eq!(quota["x-kubernetes-int-or-string"], true);
    assert_eq!(
        quota["anyOf"],
        json!([{"type": "integer"}, {"type": "string"}])
    );
    assert!(quota["pattern"].is_string());
    assert_eq!(
        at(&s, "spec.resourceGroups.[].flavors.[].resources")["items"]["required"],
        json!(["name", "nominalQuota"])
    );
    assert_eq!(at(&s, "spec.cohortName")["maxLength"], 253);
    assert_eq!(
        at(&s, "spec.namespaceSelector")["x-kubernetes-map-type"],
        "atomic"
    );
    let conditions = at(&s, "status.conditions");
    assert_eq!(conditions["maxItems"], 16);
    assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
    // No `nullable` anywhere: Kueue's schemas have none.
    for g in crd::all() {
        assert!(
            !serde_json::to_string(&g.crd).unwrap().contains("nullable"),
            "{}",
            g.file_name
        );
    }
}

#[test]
fn other_kinds_have_kueues_rules_and_limits() {
    let mkc = schema("MultiKueueCluster");
    assert_eq!(at(&mkc, "spec")["required"], json!(["clusterSource"]));
    assert_eq!(
        messages(&at(&mkc, "spec.clusterSource")),
        ["exactly one of the fields in [kubeConfig clusterProfileRef] must be set"]
    );
    let kc = at(&mkc, "spec.clusterSource.kubeConfig");
    assert_eq!(kc["required"], json!(["location"]));
    assert_eq!(at(&kc, "locationType")["default"], "Secret");
    assert_eq!(at(&kc, "locationType")["enum"], json!(["Secret", "Path"]));
    assert_eq!(at(&kc, "location")["maxLength"], 256);
    assert_eq!(at(&mkc, "status.conditions")["maxItems"], 16);
    let mkconf = schema("MultiKueueConfig");
    let clusters = at(&mkconf, "spec.clusters");
    assert_eq!(
        (clusters["minItems"].clone(), clusters["maxItems"].clone()),
        (json!(1), json!(20))
    );
    assert_eq!(messages(&clusters), ["must be unique"]);
    assert_eq!(
        at(&mkconf, "spec.quotaManagement")["enum"],
        json!(["Manual", "Automated"])
    );

    let lq = schema("LocalQueue");
    assert_eq!(
        rules(&at(&lq, "spec.clusterQueue")),
        [(
            "self == oldSelf".to_string(),
            "field is immutable".to_string()
        )]
    );
    assert_eq!(at(&lq, "spec.stopPolicy")["default"], "None");

    let rf = schema("ResourceFlavor");
    assert_eq!(
        messages(&at(&rf, "spec")),
        [
            "at least one nodeLabel is required when topology is set",
            "nodeLabels are immutable when topologyName is set",
            "tolerations are immutable when topologyName is set",
            "topologyName is immutable when topologyName is set",
        ]
    );
    assert_eq!(at(&rf, "spec.nodeLabels")["maxProperties"], 8);
    assert_eq!(at(&rf, "spec.nodeTaints")["maxItems"], 8);
    assert_eq!(messages(&at(&rf, "spec.tolerations")).len(), 5);
    assert_eq!(
        messages(&at(&rf, "spec.nodeTaints")),
        ["supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"]
    );

    let wpc = schema("WorkloadPriorityClass");
    assert_eq!(wpc["required"], json!(["value"]));
    assert_eq!(at(&wpc, "description")["maxLength"], 2048);

    let wl = schema("Workload");
    assert_eq!(
        messages(&wl),
        [
            "podSetAssignments must have the same number of podSets as the spec",
            "priorityClassRef is immutable while workload quota reserved",
            "priorityClassRef.group is immutable while workload quota reserved",
            "priorityClassRef.kind is immutable while workload quota reserved",
            "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved",
            "queueName is immutable while workload quota reserved",
            "maximumExecutionTimeSeconds is immutable while workload quota reserved",
        ]
    );
    assert!(
        wl.get("required").is_none(),
        "spec is optional, as upstream"
    );
    let pod_sets = at(&wl, "spec.podSets");
    assert_eq!(
        (pod_sets["minItems"].clone(), pod_sets["maxItems"].clone()),
        (json!(1), json!(18))
    );
    assert_eq!(pod_sets["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(at(&wl, "spec.podSets.[].name")["default"], "main");
    assert_eq!(at(&wl, "spec.podSets.[].count")["default"], 1);
    assert_eq!(at(&wl, "spec.podSets.[].count")["minimum"], 0);
    assert_eq!(at(&wl, "spec.active")["default"], true);
    assert_eq!(
        messages(&pod_sets["items"]),
        ["minCount should be positive and less or equal to count"]
    );
    // The pod template is a full PodTemplateSpec; its metadata keeps what
    // Kueue keeps.
    let template = at(&wl, "spec.podSets.[].template");
    assert_eq!(
        template["properties"]["spec"]["required"],
        json!(["containers"])
    );
    let meta: Vec<&String> = template["properties"]["metadata"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        meta,
        ["annotations", "finalizers", "labels", "name", "namespace"]
    );
    let limits = at(
        &wl,
        "spec.podSets.[].template.spec.containers.[].resources.limits",
    );
    assert!(limits["additionalProperties"]["pattern"].is_string());
    let port = at(
        &wl,
        "spec.podSets.[].template.spec.containers.[].livenessProbe.httpGet.port",
    );
    assert!(port.get("pattern").is_none(), "a port is not a quantity");
    assert_eq!(
        messages(&at(&wl, "spec.priorityClassRef")),
        [
            "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
            "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"
        ]
    );
    assert_eq!(
        messages(&at(&wl, "status")),
        [
            "clusterName is immutable once set",
            "clusterName and nominatedClusterNames are mutually exclusive"
        ]
    );
    assert_eq!(
        at(&wl, "status.admission.podSetAssignments")["maxItems"],
        18
    );
    // Kueue v0.19.2's topology assignment: per slice, pod counts and each
    // level's values are either universal or individual.
    let slice = at(
        &wl,
        "status.admission.podSetAssignments.[].topologyAssignment.slices.[]",
    );
    assert_eq!(
        slice["required"],
        json!(["domainCount", "podCounts", "valuesPerLevel"])
    );
    assert_eq!(
        messages(&slice),
        [
            "podCounts.individual must have length equal to domainCount",
            "valuesPerLevel.individual, if set, must have roots of length equal to domainCount of this TopologyAssignmentSlice"
        ]
    );
    let counts = &slice["properties"]["podCounts"];
    assert_eq!(counts["type"], "object");
    assert_eq!(counts["properties"]["universal"]["minimum"], 1);
    assert_eq!(counts["properties"]["individual"]["items"]["minimum"], 1);
    assert_eq!(
        messages(counts),
        ["exactly one of the fields in [universal individual] must be set"]
    );
    let level = &slice["properties"]["valuesPerLevel"]["items"];
    let keys: Vec<&String> = level["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["individual", "universal"]);
    assert_eq!(
        level["properties"]["individual"]["required"],
        json!(["roots"])
    );
    assert_eq!(
        messages(level),
        ["exactly one of the fields in [universal individual] must be set"]
    );
    // Preemption gates: at most 8; their state is a `position`.
    assert_eq!(at(&wl, "spec.preemptionGates")["maxItems"], 8);
    let gate = at(&wl, "status.preemptionGates.[]");
    assert_eq!(
        gate["required"],
        json!(["lastTransitionTime", "name", "position"])
    );
    assert_eq!(
        gate["properties"]["position"]["enum"],
        json!(["Closed", "Open"])
    );
    let layers = at(
        &wl,
        "spec.podSets.[].topologyRequest.podsetSliceRequiredTopologyConstraints",
    );
    assert_eq!(layers["maxItems"], 3);
    assert_eq!(layers["items"]["properties"]["size"]["minimum"], 1);
    // Small enough for a client-side `kubectl apply` (the last-applied
    // annotation holds at most 256 KiB).
    for g in crd::all() {
        let size = serde_json::to_string(&g.crd).unwrap().len();
        assert!(size < 200_000, "{} is {size} bytes", g.file_name);
    }
}

// ------------------------------------------------------------ round trips

/// `back` holds exactly what `orig` holds. A quantity given as a number
/// comes back as the same number in a string, as Kubernetes' own Go types
/// write it.
fn same(orig: &Value, back: &Value, path: &str) -> Result<(), String> {
    match (orig, back) {
        (Value::Object(o), Value::Object(b)) => {
            for k in o.keys().chain(b.keys()) {
                match (o.get(k), b.get(k)) {
                    (Some(x), Some(y)) => same(x, y, &format!("{path}.{k}"))?,
                    (Some(x), None) => return Err(format!("{path}.{k} was lost (was {x})")),
                    (None, Some(y)) => return Err(format!("{path}.{k} was added ({y})")),
                    (None, None) => unreachable!(),
                }
            }
            Ok(())
        }
        (Value::Array(o), Value::Array(b)) if o.len() == b.len() => o
            .iter()
            .zip(b)
            .enumerate()
            .try_for_each(|(i, (x, y))| same(x, y, &format!("{path}[{i}]"))),
        (Value::Number(n), Value::String(s)) if n.to_string() == *s => Ok(()),
        (x, y) if x == y => Ok(()),
        (x, y) => Err(format!("{path}: {x} came back as {y}")),
    }
}

fn round_trip<T: DeserializeOwned + Serialize>(v: &Value) -> Value {
    let typed: T = serde_path_to_error::deserialize(v.clone()).unwrap_or_else(|e| {
        panic!(
            "{} {}: {e}",
            v["kind"],
            v["metadata"]["name"].as_str().unwrap_or("")
        )
    });
    let back = serde_json::to_value(&typed).unwrap();
    if let Err(e) = same(v, &back, "") {
        panic!(
            "{} {} does not round-trip: {e}",
            v["kind"],
            v["metadata"]["name"].as_str().unwrap_or("")
        );
    }
    back
}

fn round_trip_any(v: &Value) {
    match v["kind"].as_str().unwrap() {
        "ClusterQueue" => _ = round_trip::<ClusterQueue>(v),
        "LocalQueue" => _ = round_trip::<LocalQueue>(v),
        "ResourceFlavor" => _ = round_trip::<ResourceFlavor>(v),
        "Workload" => _ = round_trip::<Workload>(v),
        "WorkloadPriorityClass" => _ = round_trip::<WorkloadPriorityClass>(v),
        "Cohort" => _ = round_trip::<Cohort>(v),
        "Topology" => _ = round_trip::<Topology>(v),
        "MultiKueueCluster" => _ = round_trip::<MultiKueueCluster>(v),
        "MultiKueueConfig" => _ = round_trip::<MultiKueueConfig>(v),
        other => panic!("no Rust type for {other}"),
    }
}

fn samples_text() -> String {
    std::fs::read_to_string(format!("{ROOT}/tests/fixtures/kueue-samples.yaml")).unwrap()
}

fn samples() -> Vec<Value> {
    serde_yaml::Deserializer::from_str(&samples_text())
        .map(|d| serde_json::to_value(serde_yaml::Value::deserialize(d).unwrap()).unwrap())
        .filter(|v: &Value| v["apiVersion"] == "kueue.x-k8s.io/v1beta2")
        .collect()
}

#[test]
fn documented_samples_read_into_the_types_and_write_back_unchanged() {
    let all = samples();
    let kinds: Vec<&str> = all.iter().map(|v| v["kind"].as_str().unwrap()).collect();
    for kind in [
        "ClusterQueue",
        "LocalQueue",
        "ResourceFlavor",
        "Workload",
        "WorkloadPriorityClass",
        "Cohort",
        "Topology",
        "MultiKueueCluster",
        "MultiKueueConfig",
    ] {
        assert!(kinds.contains(&kind), "no {kind} sample");
    }
    for v in &all {
        round_trip_any(v);
    }

    // The typed view is what the reconciler works with.
    let cq: ClusterQueue = serde_json::from_value(
        all.iter()
            .find(|v| v["kind"] == "ClusterQueue")
            .unwrap()
            .clone(),
    )
    .unwrap();
    assert_eq!(cq.spec.cohort_name.as_deref(), Some("team-ab"));
    let groups = cq.spec.resource_groups.as_ref().unwrap();
    assert_eq!(groups[0].covered_resources, ["cpu", "memory"]);
    let names: Vec<&str> = groups[0].flavors.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["spot", "on-demand"]);
    assert_eq!(groups[0].flavors[0].resources[0].nominal_quota.0, "9");
    assert_eq!(groups[0].flavors[0].resources[1].nominal_quota.0, "36Gi");

    let wl: Workload = serde_json::from_value(
        all.iter()
            .find(|v| v["kind"] == "Workload")
            .unwrap()
            .clone(),
    )
    .unwrap();
    let pod_sets = wl.spec.pod_sets.as_ref().unwrap();
    assert_eq!(pod_sets.len(), 2);
    assert_eq!(
        (pod_sets[1].name.as_str(), pod_sets[1].count),
        ("worker", 3)
    );
    assert_eq!(pod_sets[1].min_count, Some(2));
    let worker = pod_sets[1].template.spec.as_ref().unwrap();
    assert_eq!(worker.containers[0].name, "worker");
    assert_eq!(
        worker.tolerations.as_ref().unwrap()[0].key.as_deref(),
        Some("spot")
    );
}

#[test]
fn a_spec_less_object_reads_as_the_default_spec() {
    // Kueue's most common ResourceFlavor is just a name.
    let rf: ResourceFlavor = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "default-flavor"}
    }))
    .unwrap();
    assert_eq!(rf.spec, ResourceFlavorSpec::default());
    let cq: ClusterQueue = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "q"}, "spec": null
    }))
    .unwrap();
    assert_eq!(cq.spec, ClusterQueueSpec::default());
    // Present specs are read as they are, unknown enum values included (a
    // newer Kueue may add one; the schema, not the type, decides).
    let cq: ClusterQueue = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "q"}, "spec": {"queueingStrategy": "SomethingNew"}
    }))
    .unwrap();
    assert_eq!(cq.spec.queueing_strategy.as_deref(), Some("SomethingNew"));
}

#[test]
fn statuses_round_trip() {
    round_trip_any(&json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
        "metadata": {"name": "worker1", "generation": 1},
        "spec": {"clusterSource": {"kubeConfig": {"location": "/etc/multikueue/kubeconfigs/w1", "locationType": "Path"}}},
        "status": {"conditions": [{"type": "Active", "status": "False", "reason": "BadKubeConfig",
            "message": "load client config failed: kubeconfig path must not be empty",
            "observedGeneration": 1, "lastTransitionTime": "2026-01-02T03:04:05Z"}]}
    }));
    round_trip_any(&json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "job-sample-job-1a2b3", "namespace": "team-a", "uid": "7e1c",
                     "resourceVersion": "42", "generation": 1,
                     "creationTimestamp": "2026-01-02T03:04:05Z",
                     "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "sample-job",
                                          "uid": "4c0e", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"queueName": "team-a-queue", "active": true, "maximumExecutionTimeSeconds": 600,
                 "preemptionGates": [{"name": "kueue.x-k8s.io/multikueue"}],
                 "podSets": [{"name": "main", "count": 2,
                              "topologyRequest": {"required": "cloud.provider.com/rack", "podIndexLabel": "kubernetes.io/job-completion-index"},
                              "template": {"spec": {"containers": [{"name": "c", "image": "busybox",
                                  "resources": {"requests": {"cpu": "1"}}}]}}}]},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "message": "Quota reserved in ClusterQueue cluster-queue", "lastTransitionTime": "2026-01-02T03:04:06Z",
                 "observedGeneration": 1},
                {"type": "Admitted", "status": "True", "reason": "Admitted",
                 "message": "The workload is admitted", "lastTransitionTime": "2026-01-02T03:04:06Z"}],
            "admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [{
                "name": "main", "count": 2, "flavors": {"cpu": "spot"}, "resourceUsage": {"cpu": "2"},
                "topologyAssignment": {"levels": ["kubernetes.io/hostname"], "slices": [
                    {"domainCount": 2, "valuesPerLevel": [{"individual": {"prefix": "node-", "roots": ["1", "2"]}}],
                     "podCounts": {"universal": 1}},
                    {"domainCount": 1, "valuesPerLevel": [{"universal": "node-3"}],
                     "podCounts": {"individual": [2]}}]},
                "delayedTopologyRequest": "Ready"}]},
            "requeueState": {"count": 1, "requeueAt": "2026-01-02T03:05:00Z"},
            "reclaimablePods": [{"name": "main", "count": 0}],
            "admissionChecks": [{"name": "prov", "state": "Ready", "lastTransitionTime": "2026-01-02T03:04:06Z",
                                 "message": "", "retryCount": 1, "requeueAfterSeconds": 5,
                                 "podSetUpdates": [{"name": "main", "labels": {"a": "b"}, "nodeSelector": {"n": "1"},
                                                    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]}]}],
            "resourceRequests": [{"name": "main", "resources": {"cpu": "2"}}],
            "accumulatedPastExecutionTimeSeconds": 30,
            "schedulingStats": {"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]},
            "unhealthyNodes": [{"name": "node-3"}],
            "preemptionGates": [{"name": "kueue.x-k8s.io/multikueue", "position": "Open",
                                 "lastTransitionTime": "2026-01-02T03:04:06Z"}]
        }
    }));
    round_trip_any(&json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
        "spec": {"stopPolicy": "Hold", "fairSharing": {"weight": "2"},
                 "admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
                 "admissionChecksStrategy": {"admissionChecks": [{"name": "prov", "onFlavors": ["spot"]}]},
                 "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                                       "preference": "PreemptionOverBorrowing"},
                 "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors",
                                                             "constraints": {"lastAcceptableFlavorName": "spot"}}}},
        "status": {
            "conditions": [{"type": "Active", "status": "False", "reason": "Stopped",
                            "message": "Can't admit new workloads: is stopped.", "lastTransitionTime": "2026-01-02T03:04:05Z"}],
            "flavorsReservation": [{"name": "spot", "resources": [{"name": "cpu", "total": "3", "borrowed": "1"}]}],
            "flavorsUsage": [{"name": "spot", "resources": [{"name": "cpu", "total": "3", "borrowed": "0"}]}],
            "pendingWorkloads": 1, "reservingWorkloads": 2, "admittedWorkloads": 2,
            "fairSharing": {"weightedShare": 0}
        }
    }));
    round_trip_any(&json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "team-a-queue", "namespace": "team-a"},
        "spec": {"clusterQueue": "cluster-queue", "stopPolicy": "None", "fairSharing": {"weight": 1}},
        "status": {"pendingWorkloads": 0, "reservingWorkloads": 1, "admittedWorkloads": 1,
                   "flavorsReservation": [{"name": "spot", "resources": [{"name": "cpu", "total": "1"}]}],
                   "flavorsUsage": [{"name": "spot", "resources": [{"name": "cpu", "total": "1"}]}],
                   "fairSharing": {"weightedShare": 3}}
    }));
    round_trip_any(&json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
        "metadata": {"name": "org"},
        "spec": {"fairSharing": {"weight": "0.5"}},
        "status": {"fairSharing": {"weightedShare": 9223372036854775807i64}}
    }));
    round_trip_any(&json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "tas"},
        "spec": {"nodeLabels": {"pool": "a"}, "topologyName": "default"}
    }));
}

// ------------------------------------------------- against a real apiserver

fn cluster() -> &'static LocalCluster {
    shared()
}

const KINDS: [&str; 9] = [
    "clusterqueues",
    "cohorts",
    "localqueues",
    "multikueueclusters",
    "multikueueconfigs",
    "resourceflavors",
    "topologies",
    "workloadpriorityclasses",
    "workloads",
];

/// kubectl, retried while discovery has not caught up with new CRDs.
fn kubectl_eventually(args: &[&str], stdin: Option<&str>) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (ok, out, err) = kubectl(cluster(), args, stdin);
        if ok {
            return out;
        }
        let discovery = err.contains("no matches for kind")
            || err.contains("the server doesn't have a resource type")
            || err.contains("ensure CRDs are installed first");
        assert!(
            discovery && Instant::now() < deadline,
            "kubectl {args:?} failed:\n{out}{err}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// manifests/crds applied and Established, then the documented samples.
fn installed() -> &'static LocalCluster {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let c = cluster();
        let (ok, out, err) = kubectl(c, &["apply", "-f", &format!("{ROOT}/manifests/crds")], None);
        assert!(ok, "{out}{err}");
        let names: Vec<String> = KINDS
            .iter()
            .map(|k| format!("crd/{k}.kueue.x-k8s.io"))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        c.wait_established(&names, Duration::from_secs(120))
            .unwrap();
        kubectl_eventually(&["apply", "-f", "-"], Some(&samples_text()));
    });
    cluster()
}

/// The column headers of a `kubectl get` table.
fn headers(table: &str) -> Vec<String> {
    let header = table.lines().next().unwrap_or_default();
    header
        .split("   ")
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect()
}

fn row<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{table}"))
}

#[test]
fn kubectl_prints_kueues_columns_under_kueues_names() {
    installed();
    let cq = kubectl_eventually(&["get", "cq"], None);
    assert_eq!(
        headers(&cq),
        ["NAME", "COHORT", "PENDING WORKLOADS"],
        "{cq}"
    );
    assert!(row(&cq, "cluster-queue").contains("team-ab"), "{cq}");
    let wide = kubectl_eventually(&["get", "clusterqueues", "-o", "wide"], None);
    assert_eq!(
        headers(&wide),
        [
            "NAME",
            "COHORT",
            "STRATEGY",
            "PENDING WORKLOADS",
            "ADMITTED WORKLOADS"
        ],
        "{wide}"
    );
    assert!(
        row(&wide, "cluster-queue").contains("BestEffortFIFO"),
        "{wide}"
    );

    for short in ["lq", "queue", "queues", "localqueue"] {
        let lq = kubectl_eventually(&["get", short, "-n", "team-a"], None);
        assert_eq!(
            headers(&lq),
            [
                "NAME",
                "CLUSTERQUEUE",
                "PENDING WORKLOADS",
                "ADMITTED WORKLOADS"
            ],
            "{lq}"
        );
        assert!(row(&lq, "team-a-queue").contains("cluster-queue"), "{lq}");
    }
    for short in ["kwl", "kueueworkload", "kueueworkloads", "workloads"] {
        let wl = kubectl_eventually(&["get", short, "-n", "team-a"], None);
        assert_eq!(
            headers(&wl),
            [
                "NAME",
                "QUEUE",
                "RESERVED IN",
                "ADMITTED",
                "FINISHED",
                "AGE"
            ],
            "{wl}"
        );
        assert!(row(&wl, "sample-job").contains("team-a-queue"), "{wl}");
    }
    for short in ["rf", "flavor", "flavors"] {
        let rf = kubectl_eventually(&["get", short], None);
        row(&rf, "spot");
        row(&rf, "on-demand");
    }
    let wpc = kubectl_eventually(&["get", "workloadpriorityclasses"], None);
    assert_eq!(headers(&wpc), ["NAME", "VALUE"], "{wpc}");
    assert!(row(&wpc, "sample-priority").contains("10000"), "{wpc}");
    let cohorts = kubectl_eventually(&["get", "cohorts"], None);
    row(&cohorts, "team-ab");
    // No controller sets Active here, so Connected is empty.
    let mkc = kubectl_eventually(&["get", "mkc"], None);
    assert_eq!(headers(&mkc), ["NAME", "CONNECTED", "AGE"], "{mkc}");
    row(&mkc, "multikueue-test-worker1");
    let mkconf = kubectl_eventually(&["get", "mkconf"], None);
    row(&mkconf, "multikueue-test");
}

#[test]
fn the_apiserver_applies_kueues_defaults_and_objects_read_back_losslessly() {
    let c = installed();
    let cq = get_json(c, &["clusterqueue", "cluster-queue"]);
    let spec = &cq["spec"];
    assert_eq!(spec["queueingStrategy"], "BestEffortFIFO");
    assert_eq!(spec["stopPolicy"], "None");
    assert_eq!(
        spec["flavorFungibility"],
        json!({"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"})
    );
    assert_eq!(spec["preemption"]["reclaimWithinCohort"], "Any");
    assert_eq!(
        spec["preemption"]["borrowWithinCohort"]["policy"],
        "LowerPriority"
    );
    assert_eq!(spec["namespaceSelector"], json!({}));
    assert_eq!(
        spec["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"],
        9
    );
    let lq = get_json(c, &["localqueue", "team-a-queue", "-n", "team-a"]);
    assert_eq!(lq["spec"]["stopPolicy"], "None");
    let wl = get_json(c, &["workload", "sample-job", "-n", "team-a"]);
    assert_eq!(
        wl["spec"]["podSets"][0]["template"]["metadata"]["annotations"]["example.com/keep"],
        "me"
    );
    assert_eq!(
        wl["spec"]["podSets"][1]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]
            ["port"],
        8080
    );

    // What the apiserver stored (with its metadata, managedFields and the
    // defaults) reads into the Rust types and writes back unchanged.
    for kind in KINDS {
        let list = get_json(c, &[kind, "-A"]);
        let items = list["items"].as_array().unwrap();
        assert!(!items.is_empty(), "no {kind}");
        for item in items {
            round_trip_any(item);
        }
    }
}

/// A dry-run create of `obj`; returns kubectl's error output.
fn rejected(obj: &Value) -> String {
    let text = obj.to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (ok, out, err) = kubectl(
            cluster(),
            &["create", "--dry-run=server", "-f", "-"],
            Some(&text),
        );
        assert!(!ok, "accepted: {obj}\n{out}");
        if !err.contains("no matches for kind") || Instant::now() > deadline {
            return err;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn cluster_queue(spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
           "metadata": {"name": "invalid"}, "spec": spec})
}

fn cpu_group(resource: Value) -> Value {
    json!([{"coveredResources": ["cpu"], "flavors": [{"name": "spot", "resources": [resource]}]}])
}

fn topology(levels: &[&str]) -> Value {
    let levels: Vec<Value> = levels.iter().map(|l| json!({"nodeLabel": l})).collect();
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
           "metadata": {"name": "invalid"}, "spec": {"levels": levels}})
}

fn multikueue_cluster(spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
           "metadata": {"name": "invalid"}, "spec": spec})
}

fn multikueue_config(spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
           "metadata": {"name": "invalid"}, "spec": spec})
}

fn workload(spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": "invalid", "namespace": "team-a"}, "spec": spec})
}

fn pod_set(name: &str, count: i32) -> Value {
    json!({"name": name, "count": count,
           "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}})
}

#[test]
fn cel_rules_and_limits_reject_what_kueue_rejects_with_its_messages() {
    installed();
    let nineteen: Vec<Value> = (0..19).map(|i| pod_set(&format!("p{i}"), 1)).collect();
    let cases: Vec<(Value, &str)> = vec![
        (
            cluster_queue(
                json!({"resourceGroups": cpu_group(json!({"name": "cpu", "nominalQuota": "1", "borrowingLimit": "1"}))}),
            ),
            "borrowingLimit must be nil when cohort is empty",
        ),
        (
            cluster_queue(json!({"resourceGroups": [{"coveredResources": ["cpu", "memory"],
                "flavors": [{"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]})),
            "flavors must have the same number of resources as the coveredResources",
        ),
        (
            cluster_queue(json!({"preemption": {"reclaimWithinCohort": "Never",
                                                 "borrowWithinCohort": {"policy": "LowerPriority"}}})),
            "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
        ),
        (
            cluster_queue(json!({"flavorFungibility": {"preference": "PreemptionOverBorrowing"}})),
            "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
        ),
        (
            cluster_queue(json!({"queueingStrategy": "Fancy"})),
            r#"Unsupported value: "Fancy": supported values: "StrictFIFO", "BestEffortFIFO""#,
        ),
        (
            cluster_queue(json!({"resourceGroups": cpu_group(json!({"name": "cpu", "nominalQuota": "lots"}))})),
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        ),
        (
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                   "metadata": {"name": "invalid"},
                   "spec": {"tolerations": [{"operator": "Equal", "value": "x"}]}}),
            "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
        ),
        (
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                   "metadata": {"name": "invalid"},
                   "spec": {"nodeTaints": [{"key": "k", "effect": "Sometimes"}]}}),
            "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        ),
        (
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                   "metadata": {"name": "invalid"},
                   "spec": {"topologyName": "default", "nodeLabels": {}}}),
            "at least one nodeLabel is required when topology is set",
        ),
        (
            topology(&["kubernetes.io/hostname", "cloud.provider.com/topology-rack"]),
            "the kubernetes.io/hostname label can only be used at the lowest level of topology",
        ),
        (
            topology(&["cloud.provider.com/topology-rack", "cloud.provider.com/topology-rack"]),
            "spec.levels: Invalid value: must be unique",
        ),
        (topology(&[]), "spec.levels: Invalid value: 0: spec.levels in body should have at least 1 items"),
        (
            multikueue_cluster(json!({"clusterSource": {
                "kubeConfig": {"location": "w1"}, "clusterProfileRef": {"name": "w1"}}})),
            "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
        ),
        (
            multikueue_cluster(json!({"clusterSource": {}})),
            "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
        ),
        (
            multikueue_cluster(json!({"clusterSource": {
                "kubeConfig": {"location": "w1", "locationType": "File"}}})),
            "spec.clusterSource.kubeConfig.locationType: Unsupported value: \"File\"",
        ),
        (
            multikueue_config(json!({"clusters": ["w1", "w1"]})),
            "spec.clusters: Invalid value: must be unique",
        ),
        (
            multikueue_config(json!({"clusters": []})),
            "spec.clusters: Invalid value: 0: spec.clusters in body should have at least 1 items",
        ),
        (topology(&["rack"; 17]), "spec.levels: Too many: 17: must have at most 16 items"),
        (topology(&["-rack"]), "spec.levels[0].nodeLabel in body should match"),
        (
            workload(json!({"podSets": [pod_set("main", 1)],
                            "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "p"}})),
            "priority should not be nil when priorityClassRef is set",
        ),
        (
            workload(json!({"podSets": [pod_set("main", 1)], "priority": 1,
                            "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "WorkloadPriorityClass", "name": "p"}})),
            "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
        ),
        (
            workload(json!({"podSets": [{"name": "main", "count": 1, "minCount": 2,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]})),
            "minCount should be positive and less or equal to count",
        ),
        (
            workload(json!({ "podSets": nineteen })),
            "must have at most 18 items",
        ),
        (
            workload(json!({"podSets": [pod_set("Main", 1)]})),
            "spec.podSets[0].name",
        ),
        (
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                   "metadata": {"name": "invalid"}, "description": "no value"}),
            "value: Required value",
        ),
    ];
    for (obj, message) in cases {
        let err = rejected(&obj);
        assert!(
            err.contains(message),
            "expected {message:?} rejecting {obj}, got:\n{err}"
        );
    }
}

#[test]
fn transition_rules_hold_what_kueue_holds() {
    let c = installed();
    // A LocalQueue's ClusterQueue cannot change.
    let (ok, _, err) = kubectl(
        c,
        &[
            "patch",
            "localqueue",
            "team-a-queue",
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            r#"{"spec":{"clusterQueue":"other-queue"}}"#,
        ],
        None,
    );
    assert!(!ok);
    assert!(
        err.contains("spec.clusterQueue") && err.contains("field is immutable"),
        "{err}"
    );

    // A Topology's levels cannot change (the sample `default` stays as is).
    let (ok, _, err) = kubectl(
        c,
        &[
            "patch",
            "topology",
            "default",
            "--type=merge",
            "-p",
            r#"{"spec":{"levels":[{"nodeLabel":"kubernetes.io/hostname"}]}}"#,
        ],
        None,
    );
    assert!(!ok);
    assert!(
        err.contains("spec.levels") && err.contains("field is immutable"),
        "{err}"
    );

    // A Workload of its own, so other tests see the sample unchanged.
    let mut wl = workload(json!({"queueName": "team-a-queue",
                                 "podSets": [pod_set("main", 1), pod_set("second", 2)]}));
    wl["metadata"]["name"] = json!("reserved");
    let (ok, out, err) = kubectl(c, &["create", "-f", "-"], Some(&wl.to_string()));
    assert!(ok, "{out}{err}");
    let reserved = |assignments: usize| {
        let assignments: Vec<Value> = ["main", "second"][..assignments]
            .iter()
            .map(|n| json!({"name": n, "flavors": {"cpu": "spot"}}))
            .collect();
        json!({"status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "message": "Quota reserved in ClusterQueue cluster-queue",
                 "lastTransitionTime": "2026-01-02T03:04:05Z"},
                {"type": "Admitted", "status": "True", "reason": "Admitted",
                 "message": "The workload is admitted", "lastTransitionTime": "2026-01-02T03:04:05Z"}],
            "admission": {"clusterQueue": "cluster-queue",
                          "podSetAssignments": assignments}}})
        .to_string()
    };
    let status_patch = |patch: &str| {
        kubectl(
            c,
            &[
                "patch",
                "workload",
                "reserved",
                "-n",
                "team-a",
                "--subresource=status",
                "--type=merge",
                "-p",
                patch,
            ],
            None,
        )
    };
    let (ok, _, err) = status_patch(&reserved(1));
    assert!(!ok);
    assert!(
        err.contains("podSetAssignments must have the same number of podSets as the spec"),
        "{err}"
    );
    let (ok, out, err) = status_patch(&reserved(2));
    assert!(ok, "{out}{err}");

    // Kueue's columns show the reservation.
    let table = kubectl_eventually(&["get", "kwl", "-n", "team-a"], None);
    let line = row(&table, "reserved");
    assert!(
        line.contains("team-a-queue") && line.contains("cluster-queue") && line.contains("True"),
        "{table}"
    );

    // While quota is reserved the queue name cannot change.
    let (ok, _, err) = kubectl(
        c,
        &[
            "patch",
            "workload",
            "reserved",
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            r#"{"spec":{"queueName":"elsewhere"}}"#,
        ],
        None,
    );
    assert!(!ok);
    assert!(
        err.contains("queueName is immutable while workload quota reserved"),
        "{err}"
    );

    // Once set, status.clusterName stays.
    let (ok, out, err) = status_patch(r#"{"status":{"clusterName":"worker-1"}}"#);
    assert!(ok, "{out}{err}");
    let (ok, _, err) = status_patch(r#"{"status":{"clusterName":"worker-2"}}"#);
    assert!(!ok);
    assert!(err.contains("clusterName is immutable once set"), "{err}");
}
