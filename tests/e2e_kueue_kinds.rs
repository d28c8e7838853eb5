//! Kueue v0.19.2's Workload shapes on the real local kube-apiserver with
//! batchgate's CRDs and `vworkload.kb.io` registered: a status write in the
//! released topology-assignment layout, as Kueue's scheduler makes it,
//! passes both, and so does a whole v0.19.2 status (preemption gates'
//! `position`, admission checks, scheduling stats) which reads back
//! unchanged; the pre-release layouts do not; and the webhook refuses
//! what v0.19.2 refuses with its words.
//!
//! Also the tables of Kueue v0.19.2's webhook integration tests
//! (`test/integration/singlecluster/webhook/core/*_test.go`, run upstream
//! against envtest: schema, CEL and webhooks together), each case sent with
//! kubectl to this apiserver (creates as server-side dry runs) and its
//! outcome compared: allowed, refused by the schema (Invalid, 422) or by the
//! webhook (Forbidden, 403).

mod support;

use std::{sync::OnceLock, time::Duration};

use batchgate_localcluster::{shared, LocalCluster};
use serde_json::{json, Value};
use support::{
    e2e::*,
    kueue::{cq, fq, rg, with},
    Server,
};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The CRDs from manifests/crds, then one batchgate (`--no-cluster`, the
/// webhook only: no reconciler rewrites the status written here) registered
/// with failurePolicy Fail.
fn setup() -> &'static LocalCluster {
    static SERVER: OnceLock<Server> = OnceLock::new();
    let c = shared();
    SERVER.get_or_init(|| {
        let (ok, out, err) = kubectl(c, &["apply", "-f", &format!("{ROOT}/manifests/crds")], None);
        assert!(ok, "{out}{err}");
        c.wait_established(&["crd/workloads.kueue.x-k8s.io"], Duration::from_secs(120))
            .unwrap();
        let server = Server::start_forever(|| Server::start(&[]));
        server.wait_ready(Duration::from_secs(30));
        register(
            c,
            server.addr,
            Some(&server.cert_dir.join("ca.crt")),
            "Fail",
        );
        wait_webhook_active(c, &namespace(c, "e2e-probe"));
        server
    });
    c
}

fn workload(name: &str, ns: &str, cpu: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"queueName": "user-queue", "podSets": [{
               "name": "main", "count": 4,
               "topologyRequest": {"required": "cloud.example.com/block",
                                   "podIndexLabel": "kubernetes.io/job-completion-index"},
               "template": {"spec": {"restartPolicy": "Never", "containers": [{
                   "name": "c", "image": "busybox",
                   "resources": {"requests": {"cpu": cpu}}}]}}}]}})
}

/// The status Kueue's scheduler writes on a topology-aware admission: four
/// pods in one block, on two nodes (three and one).
fn tas_admission(topology: Value) -> Value {
    json!({"status": {
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                        "message": "Quota reserved in ClusterQueue cluster-queue",
                        "lastTransitionTime": "2026-01-02T03:04:05Z"}],
        "admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [{
            "name": "main", "count": 4, "flavors": {"cpu": "tas-flavor"},
            "resourceUsage": {"cpu": "4"}, "topologyAssignment": topology}]}}})
}

fn released_topology() -> Value {
    json!({"levels": ["cloud.example.com/block", "kubernetes.io/hostname"],
           "slices": [{"domainCount": 2,
                       "valuesPerLevel": [{"universal": "block-1"},
                                          {"individual": {"prefix": "node-", "roots": ["a", "b"]}}],
                       "podCounts": {"individual": [3, 1]}}]})
}

fn status_patch(c: &LocalCluster, ns: &str, name: &str, patch: &Value) -> (bool, String, String) {
    kubectl(
        c,
        &[
            "patch",
            "workload",
            name,
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch.to_string(),
        ],
        None,
    )
}

#[test]
fn a_v0_19_topology_assignment_is_stored_through_vworkload() {
    let c = setup();
    let ns = namespace(c, "e2e-tas");
    let (ok, out, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&workload("tas", &ns, "1").to_string()),
    );
    assert!(ok, "{out}{err}");

    let (ok, out, err) = status_patch(c, &ns, "tas", &tas_admission(released_topology()));
    assert!(ok, "{out}{err}");
    let stored = get_json(c, &["workload", "tas", "-n", &ns]);
    assert_eq!(
        stored["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"],
        released_topology(),
        "read back as written"
    );

    // The scheduler may rewrite the assignment (here: one pod per node in
    // every domain) while the admission stays.
    let mut rewritten = released_topology();
    rewritten["slices"][0]["podCounts"] = json!({"universal": 2});
    let (ok, out, err) = status_patch(c, &ns, "tas", &tas_admission(rewritten.clone()));
    assert!(ok, "{out}{err}");
    let stored = get_json(c, &["workload", "tas", "-n", &ns]);
    assert_eq!(
        stored["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"],
        rewritten
    );

    // Kueue's CEL rule on the released shape: one count per domain.
    let mut short = released_topology();
    short["slices"][0]["podCounts"] = json!({"individual": [4]});
    let (ok, _, err) = status_patch(c, &ns, "tas", &tas_admission(short));
    assert!(!ok);
    assert!(
        err.contains("podCounts.individual must have length equal to domainCount"),
        "{err}"
    );

    // The status write goes through vworkload.kb.io: an assignment for a
    // pod set the spec does not have is refused in Kueue's words.
    let mut stray = tas_admission(released_topology());
    stray["status"]["admission"]["podSetAssignments"][0]["name"] = json!("other");
    let (ok, _, err) = status_patch(c, &ns, "tas", &stray);
    assert!(!ok);
    assert!(
        err.contains(r#"admission webhook "vworkload.kb.io" denied the request"#)
            && err.contains(r#"status.admission.podSetAssignments[0].name: Not found: "other""#),
        "{err}"
    );

    // The pre-release layout is not Kueue's: the schema refuses it.
    let old = json!({"levels": ["kubernetes.io/hostname"], "slices": [{"domainCount": 1,
        "valuesPerLevel": [{"universalValue": "node-a"}], "podCounts": [4]}]});
    let (ok, _, err) = status_patch(c, &ns, "tas", &tas_admission(old));
    assert!(!ok);
    assert!(err.contains("podCounts"), "{err}");
}

/// A whole Workload status as Kueue v0.19.2 writes it (conditions, an
/// admission with a released topology assignment, a preemption gate's
/// `position`, admission checks, scheduling stats), on a Workload whose
/// spec carries v0.19.2's `preemptionGates`: the apiserver (batchgate's
/// CRDs) and vworkload.kb.io accept it and it reads back unchanged; the
/// pre-release gate field (`state` for `position`) is refused.
#[test]
fn a_v0_19_status_is_accepted_and_reads_back_unchanged() {
    let c = setup();
    let ns = namespace(c, "e2e-v019-status");
    let mut wl = workload("gated", &ns, "1");
    wl["spec"]["preemptionGates"] = json!([{"name": "kueue.x-k8s.io/multikueue"}]);
    let (ok, out, err) = kubectl(c, &["create", "-f", "-"], Some(&wl.to_string()));
    assert!(ok, "{out}{err}");

    let mut status = tas_admission(released_topology());
    let s = &mut status["status"];
    s["conditions"].as_array_mut().unwrap().push(json!({
        "type": "Admitted", "status": "True", "reason": "Admitted",
        "message": "The workload is admitted", "lastTransitionTime": "2026-01-02T03:04:06Z"}));
    s["preemptionGates"] = json!([{"name": "kueue.x-k8s.io/multikueue", "position": "Open",
                                   "lastTransitionTime": "2026-01-02T03:04:05Z"}]);
    s["admissionChecks"] = json!([{"name": "prov", "state": "Ready", "message": "",
                                   "lastTransitionTime": "2026-01-02T03:04:05Z"}]);
    s["schedulingStats"] = json!({"evictions": [{"reason": "Preempted",
                                                 "underlyingCause": "InCohortReclamation",
                                                 "count": 1}]});
    s["requeueState"] = json!({"count": 1, "requeueAt": "2026-01-02T03:09:05Z"});
    let (ok, out, err) = status_patch(c, &ns, "gated", &status);
    assert!(ok, "{out}{err}");
    let stored = get_json(c, &["workload", "gated", "-n", &ns]);
    for field in [
        "conditions",
        "admission",
        "preemptionGates",
        "admissionChecks",
        "schedulingStats",
        "requeueState",
    ] {
        assert_eq!(
            stored["status"][field], status["status"][field],
            "status.{field} read back as written"
        );
    }
    assert_eq!(
        stored["spec"]["preemptionGates"],
        wl["spec"]["preemptionGates"]
    );

    // The pre-release gate layout is not v0.19.2's.
    let old = json!({"status": {"preemptionGates": [{"name": "kueue.x-k8s.io/multikueue",
        "state": "Open", "lastTransitionTime": "2026-01-02T03:04:05Z"}]}});
    let (ok, _, err) = status_patch(c, &ns, "gated", &old);
    assert!(!ok);
    assert!(
        err.contains("preemptionGates[0].position: Required value"),
        "{err}"
    );
}

#[test]
fn vworkload_refuses_negative_requests_with_kueues_words() {
    let c = setup();
    let ns = namespace(c, "e2e-negative");
    let (ok, _, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&workload("negative", &ns, "-1").to_string()),
    );
    assert!(!ok);
    assert!(
        err.contains(r#"admission webhook "vworkload.kb.io" denied the request: spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0"#),
        "{err}"
    );
}

// ------------------------------------------ upstream's integration tables

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Allowed,
    /// `BeForbiddenError()`: a webhook denial.
    Forbidden,
    /// `BeInvalidError()`: the schema or a CEL rule.
    Invalid,
    /// Refused with an error containing these words.
    Saying(&'static str),
}
use Outcome::*;

struct Entry {
    name: &'static str,
    /// Created for real first (then the case is an update of it).
    existing: Option<Value>,
    object: Value,
    status: bool,
    /// A status written for real on the existing object before the update
    /// (e.g. a quota reservation, as upstream's `util.SetQuotaReservation`
    /// and `SyncAdmittedConditionForWorkloads` write it).
    pre_status: Option<Value>,
    want: Outcome,
}

fn on_create(name: &'static str, object: Value, want: Outcome) -> Entry {
    Entry {
        name,
        existing: None,
        object,
        status: false,
        pre_status: None,
        want,
    }
}

fn on_update(name: &'static str, existing: Value, object: Value, want: Outcome) -> Entry {
    Entry {
        name,
        existing: Some(existing),
        object,
        status: false,
        pre_status: None,
        want,
    }
}

thread_local! {
    static LAST_ERROR: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn last_error(_: &LocalCluster) -> String {
    LAST_ERROR.with(|e| e.borrow().clone())
}

fn outcome(ok: bool, err: &str) -> Result<Outcome, String> {
    LAST_ERROR.with(|e| *e.borrow_mut() = err.to_string());
    if ok {
        Ok(Allowed)
    } else if err.contains("(Forbidden)") && err.contains("denied the request") {
        Ok(Forbidden)
    } else if err.contains(" is invalid") {
        Ok(Invalid)
    } else {
        Err(err.to_string())
    }
}

fn resource_path(obj: &Value) -> String {
    let plural = format!(
        "{}s",
        obj["kind"].as_str().unwrap_or_default().to_lowercase()
    );
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) => {
            format!(
                "{plural}.kueue.x-k8s.io/{}",
                obj["metadata"]["name"].as_str().unwrap_or_default()
            ) + &format!(" -n {ns}")
        }
        None => format!(
            "{plural}.kueue.x-k8s.io/{}",
            obj["metadata"]["name"].as_str().unwrap_or_default()
        ),
    }
}

/// Deletes an object a table case made. The defaulting webhook gave a
/// ClusterQueue or ResourceFlavor Kueue's `resource-in-use` finalizer and
/// no reconciler runs here to let it go, so it is taken off first (as
/// Kueue's own webhook tests do).
fn delete(c: &LocalCluster, obj: &Value) {
    let path = resource_path(obj);
    let mut args: Vec<&str> = vec![
        "patch",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ];
    args.extend(path.split(' '));
    let (ok, out, err) = kubectl(c, &args, None);
    assert!(ok || err.contains("NotFound"), "{out}{err}");
    let mut args: Vec<&str> = vec!["delete", "--wait=true", "--ignore-not-found"];
    args.extend(path.split(' '));
    let (ok, out, err) = kubectl(c, &args, None);
    assert!(ok, "{out}{err}");
}

/// Sends every entry; prints the count; returns the mismatches.
fn run_entries(c: &LocalCluster, table: &str, entries: Vec<Entry>) -> Vec<String> {
    let mut failures = Vec::new();
    let total = entries.len();
    for e in &entries {
        let got = match &e.existing {
            None => {
                let (ok, _, err) = kubectl(
                    c,
                    &["create", "--dry-run=server", "-f", "-"],
                    Some(&e.object.to_string()),
                );
                outcome(ok, &err)
            }
            Some(existing) => {
                let (ok, out, err) =
                    kubectl(c, &["create", "-f", "-"], Some(&existing.to_string()));
                assert!(ok, "{}: {out}{err}", e.name);
                if let Some(status) = &e.pre_status {
                    let reserved = with(existing.clone(), "/status", status.clone());
                    let (ok, out, err) = kubectl(
                        c,
                        &["replace", "--subresource=status", "-f", "-"],
                        Some(&reserved.to_string()),
                    );
                    assert!(ok, "{}: {out}{err}", e.name);
                }
                let mut args = vec!["replace", "--dry-run=server", "-f", "-"];
                if e.status {
                    args.push("--subresource=status");
                }
                let (ok, _, err) = kubectl(c, &args, Some(&e.object.to_string()));
                delete(c, existing);
                outcome(ok, &err)
            }
        };
        let got = match (got, e.want) {
            (Ok(Invalid | Forbidden), Saying(words)) if last_error(c).contains(words) => {
                Ok(Saying(words))
            }
            (other, _) => other,
        };
        match got {
            Ok(o) if o == e.want => {}
            other => failures.push(format!(
                "[{table}] {}: want {:?}, got {other:?}",
                e.name, e.want
            )),
        }
    }
    println!(
        "{table}: {}/{total} cases answer as Kueue v0.19.2",
        total - failures.len()
    );
    failures
}

fn cq_groups(groups: Vec<Value>) -> Value {
    with(cq(), "/spec/resourceGroups", json!(groups))
}

fn named_cq(spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
           "metadata": {"name": "cluster-queue"}, "spec": spec})
}

fn cq_with(pointer: &str, v: Value) -> Value {
    with(cq(), pointer, v)
}

fn in_cohort(v: Value) -> Value {
    with(v, "/spec/cohortName", json!("cohort"))
}

fn many_resources(n: usize) -> Vec<(String, &'static str, &'static str, &'static str)> {
    (0..n).map(|i| (format!("r{i}"), "", "", "")).collect()
}

fn fq_owned(name: &str, resources: &[(String, &str, &str, &str)]) -> Value {
    let borrowed: Vec<(&str, &str, &str, &str)> = resources
        .iter()
        .map(|(r, n, b, l)| (r.as_str(), *n, *b, *l))
        .collect();
    fq(name, &borrowed)
}

fn cpu_flavors(n: usize, prefix: &str) -> Vec<Value> {
    (0..n)
        .map(|i| fq(&format!("{prefix}{i}"), &[("cpu", "", "", "")]))
        .collect()
}

fn weight(kind_object: Value, w: &str) -> Value {
    with(kind_object, "/spec/fairSharing", json!({"weight": w}))
}

fn different_order(kind_object: Value) -> Value {
    with(
        kind_object,
        "/spec/resourceGroups",
        json!([{"coveredResources": ["cpu", "memory"], "flavors": [
            fq("alpha", &[("cpu", "0", "", ""), ("memory", "0", "", "")]),
            fq("beta", &[("memory", "0", "", ""), ("cpu", "0", "", "")])]}]),
    )
}

fn mismatched(kind_object: Value, covered: Value, resources: &[(&str, &str, &str, &str)]) -> Value {
    with(
        kind_object,
        "/spec/resourceGroups",
        json!([{"coveredResources": covered, "flavors": [fq("alpha", resources)]}]),
    )
}

fn two_groups_sharing(kind_object: Value, flavor: bool) -> Value {
    let groups = if flavor {
        vec![
            rg(vec![
                fq("alpha", &[("cpu", "", "", "")]),
                fq("beta", &[("cpu", "", "", "")]),
            ]),
            rg(vec![fq("beta", &[("memory", "", "", "")])]),
        ]
    } else {
        vec![
            rg(vec![fq(
                "alpha",
                &[("cpu", "0", "", ""), ("memory", "0", "", "")],
            )]),
            rg(vec![fq("beta", &[("memory", "0", "", "")])]),
        ]
    };
    with(kind_object, "/spec/resourceGroups", json!(groups))
}

fn multiple_groups(kind_object: Value) -> Value {
    with(
        kind_object,
        "/spec/resourceGroups",
        json!([
            rg(vec![
                fq("alpha", &[("cpu", "0", "", ""), ("memory", "0", "", "")]),
                fq("beta", &[("cpu", "0", "", ""), ("memory", "0", "", "")]),
            ]),
            rg(vec![
                fq("gamma", &[("example.com/gpu", "0", "", "")]),
                fq("omega", &[("example.com/gpu", "0", "", "")]),
            ]),
        ]),
    )
}

/// `clusterqueue_test.go`, "Validate ClusterQueue on creation" and the
/// update cases ("Should have qualified flavor names when updating",
/// "Should allow to update queueingStrategy with different value").
fn cluster_queue_entries() -> Vec<Entry> {
    let one = |flavor: Value| cq_groups(vec![rg(vec![flavor])]);
    let x86 = |q: (&str, &str, &str, &str)| one(fq("x86", &[q]));
    let memory_x86 = one(fq("x86", &[("memory", "", "", "")]));
    let mut renamed = memory_x86.clone();
    renamed["spec"]["resourceGroups"][0]["flavors"][0]["name"] = json!("@x86");
    vec![
        on_create("Should have non-negative borrowing limit", in_cohort(x86(("cpu", "2", "-1", ""))), Forbidden),
        on_create("Should have non-negative quota value", x86(("cpu", "-1", "", "")), Forbidden),
        on_create(
            "Should have at least one flavor",
            cq_groups(vec![json!({"coveredResources": [], "flavors": []})]),
            Invalid,
        ),
        on_create("Should have at least one resource", one(fq("foo", &[])), Invalid),
        on_create("Should have qualified flavor name", one(fq("invalid_name", &[("cpu", "5", "", "")])), Invalid),
        on_create("Should have qualified resource name", x86(("@cpu", "5", "", "")), Forbidden),
        on_create("Should have valid resources quantity", one(fq_owned("flavor", &many_resources(65))), Invalid),
        on_create("Should have valid flavors quantity", cq_groups(vec![rg(cpu_flavors(65, "f"))]), Invalid),
        on_create(
            "Should forbid clusterQueue creation with unqualified labelSelector",
            cq_with("/spec/namespaceSelector", json!({"matchLabels": {"nospecialchars^=@": "bar"}})),
            Forbidden,
        ),
        on_create(
            "Should forbid to create clusterQueue with unknown clusterQueueingStrategy",
            cq_with("/spec/queueingStrategy", json!("unknown")),
            Invalid,
        ),
        on_create(
            "Should allow to create clusterQueue with empty clusterQueueingStrategy",
            without_strategy(),
            Allowed,
        ),
        on_create("Should allow to create clusterQueue with empty preemption", cq_with("/spec/preemption", json!({})), Allowed),
        on_create(
            "Should allow to create clusterQueue with preemption policies",
            cq_with("/spec/preemption", json!({"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"})),
            Allowed,
        ),
        on_create(
            "Should forbid to create clusterQueue with unknown preemption.withinCohort",
            cq_with("/spec/preemption", json!({"reclaimWithinCohort": "unknown"})),
            Invalid,
        ),
        on_create(
            "Should forbid to create clusterQueue with unknown preemption.withinClusterQueue",
            cq_with("/spec/preemption", json!({"withinClusterQueue": "unknown"})),
            Invalid,
        ),
        on_create(
            "Should allow to create clusterQueue with built-in resources with qualified names",
            one(fq("default", &[("cpu", "", "", "")])),
            Allowed,
        ),
        on_create(
            "Should forbid to create clusterQueue with invalid resource name",
            one(fq("default", &[("@cpu", "", "", "")])),
            Forbidden,
        ),
        on_create("Should allow to create clusterQueue with valid cohort", cq_with("/spec/cohortName", json!("prod")), Allowed),
        on_create("Should forbid to create clusterQueue with invalid cohort", cq_with("/spec/cohortName", json!("@prod")), Invalid),
        on_create(
            "Should allow to create clusterQueue with extended resources with qualified names",
            one(fq("default", &[("example.com/gpu", "", "", "")])),
            Allowed,
        ),
        on_create(
            "Should allow to create clusterQueue with flavor with qualified names",
            one(fq("x86", &[("cpu", "", "", "")])),
            Allowed,
        ),
        on_create(
            "Should forbid to create clusterQueue with flavor with unqualified names",
            one(fq("invalid_name", &[])),
            Invalid,
        ),
        on_create(
            "Should forbid to create clusterQueue with flavor quota with negative value",
            x86(("cpu", "-1", "", "")),
            Forbidden,
        ),
        on_create(
            "Should allow to create clusterQueue with flavor quota with zero values",
            x86(("cpu", "0", "", "")),
            Allowed,
        ),
        on_create(
            "Should allow to create clusterQueue with flavor quota with borrowingLimit 0",
            in_cohort(x86(("cpu", "1", "0", ""))),
            Allowed,
        ),
        on_create(
            "Should forbid to create clusterQueue with flavor quota with negative borrowingLimit",
            in_cohort(x86(("cpu", "1", "-1", ""))),
            Forbidden,
        ),
        on_create(
            "Should forbid to create clusterQueue with flavor quota with borrowingLimit and empty cohort",
            x86(("cpu", "1", "1", "")),
            Invalid,
        ),
        on_create(
            "Should allow to create clusterQueue with empty queueing strategy",
            without_strategy(),
            Allowed,
        ),
        on_create(
            "Should forbid to create clusterQueue with namespaceSelector with invalid labels",
            cq_with("/spec/namespaceSelector", json!({"matchLabels": {"nospecialchars^=@": "bar"}})),
            Forbidden,
        ),
        on_create(
            "Should forbid to create clusterQueue with namespaceSelector with invalid expressions",
            cq_with("/spec/namespaceSelector", json!({"matchExpressions": [{"key": "key", "operator": "In"}]})),
            Forbidden,
        ),
        on_create("Should allow to create clusterQueue with multiple resource groups", multiple_groups(cq()), Allowed),
        on_create(
            "Should forbid to create clusterQueue with resources in a flavor in different order",
            different_order(named_cq(json!({}))),
            Forbidden,
        ),
        on_create(
            "Should forbid to create clusterQueue missing resources in a flavor",
            mismatched(named_cq(json!({})), json!(["cpu", "memory"]), &[("cpu", "0", "", "")]),
            Invalid,
        ),
        on_create(
            "Should forbid to create clusterQueue missing resources in a flavor (more resources than covered)",
            mismatched(named_cq(json!({})), json!(["cpu"]), &[("cpu", "0", "", ""), ("memory", "0", "", "")]),
            Invalid,
        ),
        on_create(
            "Should forbid to create clusterQueue missing resources in a flavor and mismatch",
            mismatched(named_cq(json!({})), json!(["blah"]), &[("cpu", "0", "", ""), ("memory", "0", "", "")]),
            Invalid,
        ),
        on_create(
            "Should forbid to create clusterQueue with resource in more than one resource group",
            two_groups_sharing(cq(), false),
            Forbidden,
        ),
        on_create(
            "Should forbid to create clusterQueue with flavor in more than one resource group",
            two_groups_sharing(cq(), true),
            Forbidden,
        ),
        on_create(
            "Should forbid to create clusterQueue missing with invalid preemption due to reclaimWithinCohort=Never, while borrowWithinCohort!=nil",
            named_cq(json!({"preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}})),
            Invalid,
        ),
        on_create(
            "Should allow to create clusterQueue with valid preemption with borrowWithinCohort",
            named_cq(json!({"preemption": {"reclaimWithinCohort": "LowerPriority",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 10}}})),
            Allowed,
        ),
        on_create(
            "Should allow to create clusterQueue with existing cluster queue created with older Kueue version that has a nil borrowWithinCohort field",
            named_cq(json!({"preemption": {"reclaimWithinCohort": "Never"}})),
            Allowed,
        ),
        on_create("Should allow zero FairSharing weight", weight(named_cq(json!({})), "0"), Allowed),
        on_create("Should allow fractional FairSharing weight", weight(named_cq(json!({})), "0.1"), Allowed),
        on_create("Should allow small FairSharing weight", weight(named_cq(json!({})), "1m"), Allowed),
        on_create("Should allow even smaller FairSharing weight", weight(named_cq(json!({})), "1u"), Allowed),
        on_create("Should allow smallest FairSharing weight", weight(named_cq(json!({})), "2n"), Allowed),
        on_create("Should forbid threshold FairSharing weight", weight(named_cq(json!({})), "1n"), Forbidden),
        on_create("Should forbid collapsed FairSharing weight", weight(named_cq(json!({})), "0.0000000001"), Forbidden),
        on_create("Should forbid negative FairSharing weight", weight(named_cq(json!({})), "-1"), Forbidden),
        on_update("Should have qualified flavor names when updating", memory_x86.clone(), renamed, Invalid),
        on_update(
            "Should allow to update queueingStrategy with different value",
            with(memory_x86.clone(), "/spec/queueingStrategy", json!("StrictFIFO")),
            with(memory_x86, "/spec/queueingStrategy", json!("BestEffortFIFO")),
            Allowed,
        ),
    ]
}

fn cohort(spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
           "metadata": {"name": "cohort"}, "spec": spec})
}

fn cohort_groups(groups: Vec<Value>) -> Value {
    cohort(json!({"resourceGroups": groups}))
}

fn with_parent(v: Value) -> Value {
    with(v, "/spec/parentName", json!("parent"))
}

/// `cohort_test.go`, "Validate Cohort on creation" and "Updating a Cohort".
fn cohort_entries() -> Vec<Entry> {
    let one = |flavor: Value| cohort_groups(vec![rg(vec![flavor])]);
    let x86 = |q: (&str, &str, &str, &str)| one(fq("x86", &[q]));
    let mut unnamed = cohort(json!({}));
    unnamed["metadata"]["name"] = json!("");
    vec![
        on_create("Should disallow empty name", unnamed, Invalid),
        on_create("Should allow default Cohort", cohort(json!({})), Allowed),
        on_create(
            "Should allow valid parent name",
            cohort(json!({"parentName": "prod"})),
            Allowed,
        ),
        on_create(
            "Should reject invalid parent name",
            cohort(json!({"parentName": "@prod"})),
            Invalid,
        ),
        on_create(
            "ResourceGroup should have at least one flavor",
            cohort_groups(vec![json!({"coveredResources": [], "flavors": []})]),
            Invalid,
        ),
        on_create(
            "FlavorQuota should have at least one resource",
            one(fq("foo", &[])),
            Invalid,
        ),
        on_create(
            "Should reject invalid flavor name",
            one(fq("@x86", &[("cpu", "5", "", "")])),
            Invalid,
        ),
        on_create(
            "Should allow valid resource name",
            x86(("@cpu", "5", "", "")),
            Forbidden,
        ),
        on_create(
            "Should reject too many flavors in resource group",
            cohort_groups(vec![rg(cpu_flavors(65, "f"))]),
            Invalid,
        ),
        on_create(
            "Should reject too many resources in resource group",
            one(fq_owned(
                "flavor",
                &(0..65)
                    .map(|i| (format!("cpu{i}"), "", "", ""))
                    .collect::<Vec<_>>(),
            )),
            Invalid,
        ),
        on_create(
            "Should allow resource with valid name",
            one(fq("default", &[("cpu", "", "", "")])),
            Allowed,
        ),
        on_create(
            "Should reject resource with invalid name",
            one(fq("default", &[("@cpu", "", "", "")])),
            Forbidden,
        ),
        on_create(
            "Should allow extended resources with valid name",
            one(fq("default", &[("example.com/gpu", "", "", "")])),
            Allowed,
        ),
        on_create(
            "Should allow flavor with valid name",
            one(fq("x86", &[("cpu", "", "", "")])),
            Allowed,
        ),
        on_create(
            "Should reject flavor with invalid name",
            one(fq("x_86", &[("cpu", "", "", "")])),
            Invalid,
        ),
        on_create(
            "Should reject negative nominal quota",
            x86(("cpu", "-1", "", "")),
            Forbidden,
        ),
        on_create(
            "Should reject negative borrowing limit",
            x86(("cpu", "1", "-1", "")),
            Forbidden,
        ),
        on_create(
            "Should reject negative lending limit",
            x86(("cpu", "1", "", "-1")),
            Forbidden,
        ),
        on_create(
            "Should reject borrowingLimit when no parent",
            x86(("cpu", "1", "1", "")),
            Forbidden,
        ),
        on_create(
            "Should allow borrowingLimit 0 when parent exists",
            with_parent(x86(("cpu", "1", "0", ""))),
            Allowed,
        ),
        on_create(
            "Should allow borrowingLimit when parent exists",
            with_parent(x86(("cpu", "1", "1", ""))),
            Allowed,
        ),
        on_create(
            "Should reject lendingLimit when no parent",
            x86(("cpu", "1", "", "1")),
            Forbidden,
        ),
        on_create(
            "Should allow lendingLimit when parent exists",
            with_parent(x86(("cpu", "1", "", "1"))),
            Allowed,
        ),
        on_create(
            "Should allow lendingLimit 0 when parent exists",
            with_parent(x86(("cpu", "0", "", "0"))),
            Allowed,
        ),
        on_create(
            "Should allow lending limit to exceed nominal quota",
            with_parent(x86(("cpu", "3", "", "5"))),
            Allowed,
        ),
        on_create(
            "Should allow multiple resource groups",
            multiple_groups(cohort(json!({}))),
            Allowed,
        ),
        on_create(
            "Should reject resources in a flavor in different order",
            different_order(cohort(json!({}))),
            Forbidden,
        ),
        on_create(
            "Should reject missing resources in a flavor",
            mismatched(
                cohort(json!({})),
                json!(["cpu", "memory"]),
                &[("cpu", "0", "", "")],
            ),
            Invalid,
        ),
        on_create(
            "Should reject resource not defined in resource group",
            mismatched(
                cohort(json!({})),
                json!(["cpu"]),
                &[("cpu", "0", "", ""), ("memory", "0", "", "")],
            ),
            Invalid,
        ),
        on_create(
            "Should reject resource in more than one resource group",
            two_groups_sharing(cohort(json!({})), false),
            Forbidden,
        ),
        on_create(
            "Should reject flavor in more than one resource group",
            two_groups_sharing(cohort(json!({})), true),
            Forbidden,
        ),
        on_create(
            "Should allow FairSharing weight",
            weight(cohort(json!({})), "1"),
            Allowed,
        ),
        on_create(
            "Should allow zero FairSharing weight",
            weight(cohort(json!({})), "0"),
            Allowed,
        ),
        on_create(
            "Should forbid negative FairSharing weight",
            weight(cohort(json!({})), "-1"),
            Forbidden,
        ),
        on_create(
            "Should allow fractional FairSharing weight",
            weight(cohort(json!({})), "0.5"),
            Allowed,
        ),
        on_create(
            "Should allow small FairSharing weight",
            weight(cohort(json!({})), "1m"),
            Allowed,
        ),
        on_create(
            "Should allow even smaller FairSharing weight",
            weight(cohort(json!({})), "1u"),
            Allowed,
        ),
        on_create(
            "Should allow smallest FairSharing weight",
            weight(cohort(json!({})), "2n"),
            Allowed,
        ),
        on_create(
            "Should forbid threshold FairSharing weight",
            weight(cohort(json!({})), "1n"),
            Forbidden,
        ),
        on_create(
            "Should forbid collapsed FairSharing weight",
            weight(cohort(json!({})), "0.0000000001"),
            Forbidden,
        ),
        on_update(
            "Should update parent",
            cohort(json!({})),
            cohort(json!({"parentName": "cohort2"})),
            Allowed,
        ),
        on_update(
            "Should reject invalid parent",
            cohort(json!({})),
            cohort(json!({"parentName": "@cohort2"})),
            Invalid,
        ),
        on_create(
            "Should reject negative borrowing limit (update table)",
            x86(("cpu", "-1", "", "")),
            Forbidden,
        ),
    ]
}

fn rf(spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
           "metadata": {"name": "resource-flavor"}, "spec": spec})
}

/// `resourceflavor_test.go`: "Should be valid", "invalid number of
/// properties", "Updating a ResourceFlavor with invalid taints",
/// "Validate resourceFlavor on creation".
fn resource_flavor_entries() -> Vec<Entry> {
    let taints = |n: usize| -> Value {
        json!((0..n)
            .map(|i| json!({"key": format!("t{i}"), "effect": "NoExecute"}))
            .collect::<Vec<_>>())
    };
    let labels = |n: usize| -> Value {
        json!((0..n)
            .map(|i| (format!("l{i}"), json!("")))
            .collect::<serde_json::Map<_, _>>())
    };
    let toleration = |key: &str, op: &str, effect: &str| json!({"key": key, "operator": op, "value": "v", "effect": effect});
    vec![
        on_create(
            "Should be valid",
            rf(
                json!({"nodeLabels": {"foo": "bar"}, "nodeTaints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}]}),
            ),
            Allowed,
        ),
        on_create(
            "invalid number of taint",
            rf(json!({"nodeTaints": taints(9)})),
            Invalid,
        ),
        on_create(
            "invalid number of nodeSelector",
            rf(json!({"nodeLabels": labels(9)})),
            Invalid,
        ),
        on_create(
            "valid number of nodeSelector and taint",
            rf(json!({"nodeTaints": taints(8), "nodeLabels": labels(8)})),
            Allowed,
        ),
        on_update(
            "Should fail to update",
            rf(json!({"nodeLabels": {}})),
            rf(json!({"nodeTaints": [{"key": "foo", "value": "bar", "effect": "Invalid"}]})),
            Invalid,
        ),
        on_create(
            "Should fail to create with invalid taints",
            rf(
                json!({"nodeTaints": [{"key": "skdajf"}, {"key": "@foo", "value": "bar", "effect": "NoSchedule"}]}),
            ),
            Invalid,
        ),
        on_create(
            "Should fail to create with invalid label name",
            rf(json!({"nodeLabels": {"@abc": "foo"}})),
            Forbidden,
        ),
        on_create(
            "Should fail to create with invalid tolerations",
            rf(json!({"tolerations": [
                toleration("@abc", "Equal", "NoSchedule"),
                toleration("abc", "Exists", "NoSchedule"),
                toleration("abc", "Equal", "not-valid"),
                toleration("abc", "Equal", "NoSchedule"),
            ]})),
            Invalid,
        ),
    ]
}

fn lq(cluster_queue: &str, ns: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
           "metadata": {"name": "queue-test", "namespace": ns},
           "spec": {"clusterQueue": cluster_queue}})
}

fn lq_usage(n: usize) -> Value {
    json!((0..n)
        .map(|i| json!({"name": format!("f{i}"), "resources": [{"name": "cpu", "total": "0"}]}))
        .collect::<Vec<_>>())
}

/// `localqueue_test.go`.
fn local_queue_entries(ns: &str) -> Vec<Entry> {
    let status = |reservation: usize, usage: usize| {
        let mut q = lq("foo", ns);
        q["status"] =
            json!({"flavorsReservation": lq_usage(reservation), "flavorsUsage": lq_usage(usage)});
        q
    };
    let status_entry = |name: &'static str, object: Value, want: Outcome| Entry {
        name,
        existing: Some(lq("foo", ns)),
        object,
        status: true,
        pre_status: None,
        want,
    };
    vec![
        on_create(
            "Should reject bad value for spec.clusterQueue",
            lq("invalid_name", ns),
            Invalid,
        ),
        on_update(
            "Should reject the change of spec.clusterQueue",
            lq("foo", ns),
            lq("bar", ns),
            Invalid,
        ),
        status_entry(
            "Should allow flavors quantity up to the limit in flavorsReservation and flavorsUsage",
            status(64, 64),
            Allowed,
        ),
        status_entry(
            "Should reject flavors quantity over the limit in flavorsReservation",
            status(65, 0),
            Invalid,
        ),
        status_entry(
            "Should reject flavors quantity over the limit in flavorsUsage",
            status(0, 65),
            Invalid,
        ),
    ]
}

#[test]
fn kueue_webhook_integration_tables_answer_as_v0_19_2() {
    let c = setup();
    let ns = namespace(c, "e2e-core");
    let mut failures = Vec::new();
    for (table, entries) in [
        ("clusterqueue_test.go", cluster_queue_entries()),
        ("cohort_test.go", cohort_entries()),
        ("resourceflavor_test.go", resource_flavor_entries()),
        ("localqueue_test.go", local_queue_entries(&ns)),
        ("workload_test.go", workload_entries(&ns)),
        (
            "workload_test.go Validate Workload on update",
            workload_update_entries(&ns),
        ),
        (
            "workload_test.go ClusterName - Dispatcher AllAtOnce",
            cluster_name_entries(&ns),
        ),
    ] {
        failures.extend(run_entries(c, table, entries));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `QueueingStrategy("")`: Go leaves an empty string out (`omitempty`).
fn without_strategy() -> Value {
    let mut v = cq();
    if let Some(spec) = v["spec"].as_object_mut() {
        spec.remove("queueingStrategy");
    }
    v
}

/// `MakeWorkload("workload", ns)` with pod sets `(name, count)`.
fn wl(ns: &str, pod_sets: &[(&str, i64)]) -> Value {
    let sets: Vec<Value> = pod_sets
        .iter()
        .map(|(n, c)| {
            json!({"name": n, "count": c, "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}})
        })
        .collect();
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": "workload", "namespace": ns}, "spec": {"podSets": sets}})
}

fn main_wl(ns: &str) -> Value {
    wl(ns, &[("main", 1)])
}

fn status_entry(name: &'static str, existing: Value, status: Value, want: Outcome) -> Entry {
    let object = with(existing.clone(), "/status", status);
    Entry {
        name,
        existing: Some(existing),
        object,
        status: true,
        pre_status: None,
        want,
    }
}

/// `SetQuotaReservation(wl, admission)`.
fn reserving(admission: Value) -> Value {
    json!({"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                           "message": "Quota reserved in ClusterQueue cluster-queue",
                           "lastTransitionTime": "2026-01-02T03:04:05Z"}],
           "admission": admission})
}

fn assignment(name: &str) -> Value {
    json!({"name": name, "flavors": {}, "resourceUsage": {}, "count": 1})
}

/// `validSliceFor(levels, suffix)`.
fn valid_slice(suffix: i64) -> Value {
    json!({"domainCount": 1, "podCounts": {"universal": 1},
           "valuesPerLevel": [{"universal": format!("block-{suffix}")}, {"universal": format!("rack-{suffix}")}]})
}

fn topology(slices: Vec<Value>) -> Value {
    json!({"admission": {"clusterQueue": "cq1", "podSetAssignments": [
        {"name": "ps1", "topologyAssignment": {"levels": ["block", "rack"], "slices": slices}}]}})
}

/// `workload_test.go`: "Should have valid PodSet when creating", "Should
/// have valid values when creating", "Should have valid values when
/// setting Admission", "TopologyAssignment validation".
fn workload_entries(ns: &str) -> Vec<Entry> {
    let sets = |n: usize, count: i64| {
        let names: Vec<String> = (0..n).map(|i| format!("ps{i}")).collect();
        let pairs: Vec<(&str, i64)> = names.iter().map(|s| (s.as_str(), count)).collect();
        wl(ns, &pairs)
    };
    let ref_ = |group: &str, kind: &str, name: &str| {
        let w = with(
            main_wl(ns),
            "/spec/priorityClassRef",
            json!({"group": group, "kind": kind, "name": name}),
        );
        with(w, "/spec/priority", json!(100))
    };
    let bad = |pointer: &str, v: Value| with(wl(ns, &[("bad", 1)]), pointer, v);
    let main3 = || wl(ns, &[("main", 3)]);
    let delayed = |state: &str| {
        reserving(
            json!({"clusterQueue": "cluster-queue", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "flv"}, "resourceUsage": {"cpu": "3"}, "count": 3,
             "delayedTopologyRequest": state}]}),
        )
    };
    let ps1 = || wl(ns, &[("ps1", 3)]);
    vec![
        on_create("podSets count less than 1", sets(0, 1), Invalid),
        on_create("podSets count at the maximum", sets(18, 1), Allowed),
        on_create("podSets count more than the maximum", sets(19, 1), Invalid),
        on_create("valid podSet, count can be 0", sets(3, 0), Allowed),
        on_create("valid podSet", sets(3, 3), Allowed),
        on_create("valid workload", wl(ns, &[("driver", 1), ("workers", 100)]), Allowed),
        on_create("invalid podSet name", wl(ns, &[("@driver", 1)]), Invalid),
        on_create("invalid priorityClassRef.name", {
            let w = with(main_wl(ns), "/spec/priorityClassRef",
                json!({"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "invalid_class"}));
            with(w, "/spec/priority", json!(0))
        }, Invalid),
        on_create("invalid priorityClassRef.group", ref_("test", "PriorityClass", "low"), Invalid),
        on_create("invalid priorityClassRef.kind", ref_("scheduling.k8s.io", "test", "low"), Invalid),
        on_create(
            "incompatible priorityClassRef.kind (scheduling.k8s.io)",
            ref_("scheduling.k8s.io", "WorkloadPriorityClass", "low"),
            Invalid,
        ),
        on_create(
            "incompatible priorityClassRef.kind (kueue.x-k8s.io)",
            ref_("kueue.x-k8s.io", "PriorityClass", "low"),
            Invalid,
        ),
        on_create("omitted priorityClassRef is valid", with(main_wl(ns), "/spec/priority", json!(0)), Allowed),
        on_create(
            "priority should not be nil when priorityClassRef is set",
            with(main_wl(ns), "/spec/priorityClassRef",
                json!({"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "priority"})),
            Invalid,
        ),
        on_create("invalid queueName", with(main_wl(ns), "/spec/queueName", json!("@invalid")), Invalid),
        on_create(
            "should not request num-pods resource",
            with(
                bad("/spec/podSets/0/template/spec/initContainers", json!([{"name": "i", "resources": {"requests": {"pods": "1"}}}])),
                "/spec/podSets/0/template/spec/containers",
                json!([{"name": "c", "resources": {"requests": {"pods": "1"}}}]),
            ),
            Forbidden,
        ),
        on_create(
            "should not limit num-pods resource",
            with(wl(ns, &[("bad", 1)]), "/spec/podSets/0/template/spec/containers",
                json!([{"name": "c", "resources": {"limits": {"pods": "1"}}}])),
            Forbidden,
        ),
        on_create(
            "should not allow negative resource requests",
            with(wl(ns, &[("bad", 1)]), "/spec/podSets/0/template/spec/containers",
                json!([{"name": "c", "resources": {"requests": {"cpu": "-1"}}}])),
            Forbidden,
        ),
        on_create(
            "should not allow negative pod-level resource requests",
            with(wl(ns, &[("bad", 1)]), "/spec/podSets/0/template/spec/resources", json!({"requests": {"cpu": "-1"}})),
            Forbidden,
        ),
        on_create(
            "empty podSetUpdates should be valid since it is optional",
            with(main_wl(ns), "/status/admissionChecks", json!([{"name": "", "state": "Pending", "message": "",
                "lastTransitionTime": "2026-01-02T03:04:05Z"}])),
            Allowed,
        ),
        on_create(
            "matched names in podSetUpdates with names in podSets",
            with(wl(ns, &[("first", 1), ("second", 1)]), "/status/admissionChecks", json!([{
                "name": "", "state": "Pending", "message": "", "lastTransitionTime": "2026-01-02T03:04:05Z",
                "podSetUpdates": [
                    {"name": "first", "labels": {"l1": "first"}, "annotations": {"foo": "bar"},
                     "tolerations": [{"key": "t1", "operator": "Equal", "value": "t1v", "effect": "NoExecute", "tolerationSeconds": 5}],
                     "nodeSelector": {"type": "first"}},
                    {"name": "second", "labels": {"l2": "second"}, "annotations": {"foo": "baz"},
                     "tolerations": [{"key": "t2", "operator": "Equal", "value": "t2v", "effect": "NoExecute", "tolerationSeconds": 10}],
                     "nodeSelector": {"type": "second"}}]}])),
            Allowed,
        ),
        on_create("invalid podSet minCount (negative)", with(wl(ns, &[("ps1", 3)]), "/spec/podSets/0/minCount", json!(-1)), Invalid),
        on_create("invalid podSet minCount (too big)", with(wl(ns, &[("ps1", 3)]), "/spec/podSets/0/minCount", json!(4)), Invalid),
        on_create(
            "too many variable count podSets",
            with(
                with(wl(ns, &[("ps1", 3), ("ps2", 3)]), "/spec/podSets/0/minCount", json!(2)),
                "/spec/podSets/1/minCount",
                json!(1),
            ),
            Forbidden,
        ),
        on_create("invalid maximumExexcutionTimeSeconds", with(main_wl(ns), "/spec/maximumExecutionTimeSeconds", json!(0)), Invalid),
        on_create("valid maximumExexcutionTimeSeconds", with(main_wl(ns), "/spec/maximumExecutionTimeSeconds", json!(1)), Allowed),
        status_entry(
            "invalid clusterQueue name",
            main_wl(ns),
            reserving(json!({"clusterQueue": "@invalid", "podSetAssignments": [assignment("main")]})),
            Invalid,
        ),
        status_entry(
            "invalid podSet name in status assignment",
            main_wl(ns),
            reserving(json!({"clusterQueue": "cluster-queue", "podSetAssignments": [assignment("@invalid")]})),
            Invalid,
        ),
        status_entry(
            "mismatched names in admission with names in podSets",
            wl(ns, &[("main2", 1), ("main1", 1)]),
            reserving(json!({"clusterQueue": "cluster-queue",
                "podSetAssignments": [assignment("main1"), assignment("main2"), assignment("main3")]})),
            Invalid,
        ),
        status_entry(
            "assignment usage should be divisible by count",
            main3(),
            reserving(json!({"clusterQueue": "cluster-queue", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "flv"}, "resourceUsage": {"cpu": "1"}, "count": 3}]})),
            Forbidden,
        ),
        status_entry("Pending delayedTopologyRequest", main3(), delayed("Pending"), Allowed),
        status_entry("Ready delayedTopologyRequest", main3(), delayed("Ready"), Allowed),
        status_entry("invalid delayedTopologyRequest", main3(), delayed("invalid"), Invalid),
        status_entry(
            "accepts a TopologyAssignment combining various item counts & patterns of subfield presence",
            ps1(),
            topology(vec![
                json!({"domainCount": 3, "podCounts": {"universal": 1}, "valuesPerLevel": [
                    {"universal": "block-1"},
                    {"individual": {"prefix": "rack-1-", "roots": ["1", "2", "3"]}}]}),
                json!({"domainCount": 4, "podCounts": {"individual": [10, 20, 30, 40]}, "valuesPerLevel": [
                    {"individual": {"prefix": "block", "roots": ["-", "-", "-", "-"], "suffix": "2"}},
                    {"individual": {"roots": ["r1", "r2", "r3", "r4"]}}]}),
                valid_slice(3),
                valid_slice(4),
                valid_slice(5),
            ]),
            Allowed,
        ),
        status_entry(
            "rejects a slice with wrong number of levels",
            ps1(),
            topology(vec![
                valid_slice(1),
                json!({"domainCount": 1, "podCounts": {"universal": 1}, "valuesPerLevel": [{"universal": "block-2"}]}),
                valid_slice(3),
            ]),
            Saying("valuesPerLevel must have the same length as the number of levels in this TopologyAssignment"),
        ),
        status_entry(
            "rejects a slice with wrong number of individual pod counts",
            ps1(),
            topology(vec![
                valid_slice(1),
                json!({"domainCount": 3, "podCounts": {"individual": [10, 20]},
                       "valuesPerLevel": [{"universal": "block-2"}, {"universal": "rack-2"}]}),
                valid_slice(3),
            ]),
            Saying("podCounts.individual must have length equal to domainCount"),
        ),
        status_entry(
            "rejects a slice has wrong number of individual assignment values",
            ps1(),
            topology(vec![
                valid_slice(1),
                json!({"domainCount": 3, "podCounts": {"individual": [10, 20, 30]},
                       "valuesPerLevel": [{"universal": "block-2"}, {"individual": {"roots": ["rack2-1", "rack2-2"]}}]}),
                valid_slice(3),
            ]),
            Saying("valuesPerLevel.individual, if set, must have roots of length equal to domainCount of this TopologyAssignmentSlice"),
        ),
    ]
}

/// `SetQuotaReservation(MakeAdmission("cq"))` then the Admitted condition.
fn admitted_in_cq() -> Value {
    let mut status =
        reserving(json!({"clusterQueue": "cq", "podSetAssignments": [assignment("main")]}));
    status["conditions"]
        .as_array_mut()
        .expect("conditions")
        .push(json!({"type": "Admitted", "status": "True", "reason": "Admitted",
                     "message": "The workload is admitted", "lastTransitionTime": "2026-01-02T03:04:05Z"}));
    status
}

/// An update of `existing` to `object` through the main resource, with
/// quota reserved on `existing` first when `reserve`.
fn wl_update(
    name: &'static str,
    existing: Value,
    reserve: bool,
    object: Value,
    want: Outcome,
) -> Entry {
    Entry {
        name,
        existing: Some(existing),
        object,
        status: false,
        pre_status: reserve.then(admitted_in_cq),
        want,
    }
}

fn pod_priority(w: Value, name: &str, priority: i64) -> Value {
    with(
        with(
            w,
            "/spec/priorityClassRef",
            json!({"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": name}),
        ),
        "/spec/priority",
        json!(priority),
    )
}

fn workload_priority(w: Value, name: &str, priority: i64) -> Value {
    with(
        with(
            w,
            "/spec/priorityClassRef",
            json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}),
        ),
        "/spec/priority",
        json!(priority),
    )
}

fn without_priority(mut w: Value) -> Value {
    if let Some(spec) = w["spec"].as_object_mut() {
        spec.remove("priorityClassRef");
        spec.remove("priority");
    }
    w
}

/// `workload_test.go`, "Validate Workload on update".
fn workload_update_entries(ns: &str) -> Vec<Entry> {
    let m = || main_wl(ns);
    let q = |name: &str| with(main_wl(ns), "/spec/queueName", json!(name));
    let c_after = || {
        with(
            main_wl(ns),
            "/spec/podSets/0/template/spec/containers",
            json!([{"name": "c-after", "resources": {"requests": {}}}]),
        )
    };
    let max = |n: i64| with(main_wl(ns), "/spec/maximumExecutionTimeSeconds", json!(n));
    let prio = |n: i64| with(main_wl(ns), "/spec/priority", json!(n));
    vec![
        wl_update(
            "podSets should not be updated when has quota reservation: count",
            m(),
            true,
            with(m(), "/spec/podSets/0/count", json!(2)),
            Forbidden,
        ),
        wl_update(
            "podSets should not be updated: podSpec",
            m(),
            true,
            c_after(),
            Forbidden,
        ),
        wl_update(
            "queueName can be updated when not admitted",
            q("q1"),
            false,
            q("q2"),
            Allowed,
        ),
        wl_update(
            "queueName can be updated when admitting",
            m(),
            false,
            q("q"),
            Allowed,
        ),
        wl_update(
            "queueName should not be updated once admitted",
            q("q1"),
            true,
            q("q2"),
            Invalid,
        ),
        wl_update(
            "queueName can be updated when admission is reset",
            with(q("q1"), "/status", admitted_in_cq()),
            false,
            q("q2"),
            Allowed,
        ),
        wl_update(
            "admission can be set",
            m(),
            false,
            with(m(), "/status", admitted_in_cq()),
            Allowed,
        ),
        wl_update(
            "admission can be unset",
            with(m(), "/status", admitted_in_cq()),
            false,
            m(),
            Allowed,
        ),
        wl_update(
            "should change other fields of admissionchecks when podSetUpdates is immutable",
            with(
                wl(ns, &[("first", 1), ("second", 1)]),
                "/status/admissionChecks",
                json!([{
                "name": "ac1", "state": "Ready", "message": "old", "lastTransitionTime": "2026-01-02T03:04:05Z",
                "podSetUpdates": [{"name": "first", "labels": {"foo": "bar"}}, {"name": "second"}]}]),
            ),
            false,
            with(
                wl(ns, &[("first", 1), ("second", 1)]),
                "/status/admissionChecks",
                json!([{
                "name": "ac1", "state": "Ready", "message": "new", "lastTransitionTime": "2026-01-02T03:05:05Z",
                "podSetUpdates": [{"name": "first", "labels": {"foo": "bar"}}, {"name": "second"}]}]),
            ),
            Allowed,
        ),
        wl_update(
            "updating podSets before setting reserve quota for workload",
            m(),
            false,
            c_after(),
            Allowed,
        ),
        wl_update(
            "Should forbid the change of spec.podSet",
            m(),
            true,
            with(m(), "/spec/podSets/0/count", json!(10)),
            Forbidden,
        ),
        wl_update(
            "reclaimable pod count can go to 0 if the job is suspended",
            with(
                wl(ns, &[("ps1", 3), ("ps2", 3)]),
                "/status/reclaimablePods",
                json!([{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}]),
            ),
            false,
            with(
                wl(ns, &[("ps1", 3), ("ps2", 3)]),
                "/status",
                json!({
                "admissionChecks": [{"name": "", "state": "Ready", "message": "",
                    "lastTransitionTime": "2026-01-02T03:04:05Z", "podSetUpdates": [{"name": "ps1"}, {"name": "ps2"}]}],
                "reclaimablePods": [{"name": "ps1", "count": 0}, {"name": "ps2", "count": 1}]}),
            ),
            Allowed,
        ),
        wl_update(
            "can add maximum execution time when not admitted",
            m(),
            false,
            max(1),
            Allowed,
        ),
        wl_update(
            "can update maximum execution time when not admitted",
            max(1),
            false,
            max(2),
            Allowed,
        ),
        wl_update(
            "cannot add maximum execution time when admitted",
            m(),
            true,
            max(1),
            Invalid,
        ),
        wl_update(
            "cannot update maximum execution time when admitted",
            max(1),
            true,
            max(2),
            Invalid,
        ),
        wl_update(
            "Should allow to change priority when QuotaReserved=false",
            m(),
            false,
            prio(10),
            Allowed,
        ),
        wl_update(
            "Should allow to change priority when QuotaReserved=true",
            m(),
            false,
            prio(10),
            Allowed,
        ),
        wl_update(
            "Should allow to change priority with priorityClassRef when QuotaReserved=false",
            pod_priority(m(), "low", 0),
            false,
            pod_priority(m(), "low", 10),
            Allowed,
        ),
        wl_update(
            "Should allow to change priority with priorityClassRef when QuotaReserved=true",
            pod_priority(m(), "low", 0),
            false,
            pod_priority(m(), "low", 10),
            Allowed,
        ),
        wl_update(
            "can set workload priorityClassRef when QuotaReserved=false",
            m(),
            false,
            workload_priority(m(), "low", 100),
            Allowed,
        ),
        wl_update(
            "can't set workload priority class when QuotaReserved=true",
            m(),
            true,
            workload_priority(m(), "low", 100),
            Invalid,
        ),
        wl_update(
            "can update workload priority class when QuotaReserved=false",
            workload_priority(m(), "high", 1000),
            false,
            workload_priority(m(), "low", 100),
            Allowed,
        ),
        wl_update(
            "can update workload priority class when QuotaReserved=true",
            workload_priority(m(), "high", 1000),
            true,
            workload_priority(m(), "low", 100),
            Allowed,
        ),
        wl_update(
            "can delete workload priority class when QuotaReserved=false",
            workload_priority(m(), "high", 1000),
            false,
            without_priority(m()),
            Allowed,
        ),
        wl_update(
            "can't delete workload priority class when quota reserved when QuotaReserved=true",
            workload_priority(m(), "high", 1000),
            true,
            without_priority(m()),
            Invalid,
        ),
        wl_update(
            "can set pod priority class QuotaReserved=false",
            m(),
            false,
            pod_priority(m(), "low", 100),
            Allowed,
        ),
        wl_update(
            "can't set pod priority class when QuotaReserved=true",
            m(),
            true,
            pod_priority(m(), "low", 100),
            Invalid,
        ),
        wl_update(
            "can update pod priority class when QuotaReserved=false",
            pod_priority(m(), "high", 1000),
            false,
            pod_priority(m(), "low", 100),
            Allowed,
        ),
        wl_update(
            "can't update pod priority class when QuotaReserved=true",
            pod_priority(m(), "high", 1000),
            true,
            pod_priority(m(), "low", 100),
            Invalid,
        ),
        wl_update(
            "can delete pod priority class when QuotaReserved=false",
            pod_priority(m(), "high", 1000),
            false,
            without_priority(m()),
            Allowed,
        ),
        wl_update(
            "can't delete pod priority class when QuotaReserved=true",
            pod_priority(m(), "high", 1000),
            true,
            without_priority(m()),
            Invalid,
        ),
    ]
}

/// `workload_test.go`, "Workload validating webhook ClusterName -
/// Dispatcher AllAtOnce" (the default dispatcher): two status writes.
fn cluster_name_entries(ns: &str) -> Vec<Entry> {
    let two_writes = |name: &'static str, first: Value, second: Value, want: Outcome| Entry {
        name,
        existing: Some(main_wl(ns)),
        object: with(main_wl(ns), "/status", second),
        status: true,
        pre_status: Some(first),
        want,
    };
    vec![
        two_writes(
            "Valid: ClusterName is in NominatedClusters",
            json!({"nominatedClusterNames": ["worker1", "worker2"]}),
            json!({"clusterName": "worker2"}),
            Allowed,
        ),
        two_writes(
            "Invalid: ClusterName is not in NominatedClusters",
            json!({"nominatedClusterNames": ["worker1", "worker2"]}),
            json!({"clusterName": "worker3"}),
            Forbidden,
        ),
        two_writes(
            "Invalid: ClusterName is set when NominatedClusters is empty",
            json!({}),
            json!({"clusterName": "worker1"}),
            Forbidden,
        ),
        two_writes(
            "Invalid: ClusterName and NominatedClusters are mutually exclusive",
            json!({}),
            json!({"clusterName": "worker1", "nominatedClusterNames": ["worker1", "worker2"]}),
            Invalid,
        ),
        two_writes(
            "Valid: neither ClusterName nor NominatedClusters is set",
            json!({}),
            json!({}),
            Allowed,
        ),
    ]
}
