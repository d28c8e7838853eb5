//! Device placement end to end on the local cluster: DevicePools on two
//! KWOK nodes (4 foozer devices each), Jobs of 2 pods claiming 2 foozer
//! devices each (pod-template annotation devmgmtproto.k8s.io/device-claims).
//! Two are admitted, one per node, their pods pinned to the node holding
//! their devices; the third waits with the placement's reason on its
//! Workload until the first finishes, then runs where it freed devices.
//! `batchgate schedule` against the cluster prints the same choices. The
//! webhook refuses a class naming a missing driver and a claim whose
//! constraints do not parse.
//!
//! Kubernetes DRA on the same control plane (kube-scheduler allocates,
//! kube-controller-manager makes each pod's ResourceClaim from its
//! template); the test plays the DRA driver, publishing ResourceSlices of 4
//! GPUs on each of two KWOK nodes. batchgate charges the GPUs a Job's
//! ResourceClaimTemplates ask for as `example.com/gpu` (Kueue's
//! `deviceClassMappings`) and holds what it cannot count with Kueue's
//! words.

mod support;

use std::{process::Command, time::Duration};

use batchgate_localcluster::POD_RUNTIME_ANNOTATION;
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

const BIN: &str = env!("CARGO_BIN_EXE_batchgate");
const CLAIMS: &str = "devmgmtproto.k8s.io/device-claims";
const ALLOCATION: &str = "devmgmtproto.k8s.io/device-allocation";
/// batchgate's configuration for this binary: the DRA class mapping.
const CONFIG: &str = "resources:\n  deviceClassMappings:\n  - name: example.com/gpu\n    deviceClassNames: [gpu.example.com]\n";

fn device_job(name: &str, ns: &str, runtime: &str) -> String {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0,
                 "template": {
                    "metadata": {"annotations": {
                        POD_RUNTIME_ANNOTATION: runtime,
                        CLAIMS: r#"[{"name": "gpus", "claim": {"deviceClass": "e2e-foozer", "minDeviceCount": 2}}]"#,
                    }},
                    "spec": {"restartPolicy": "Never",
                             "containers": [{"name": "main", "image": "busybox", "command": ["true"],
                                             "resources": {"requests": {"cpu": "100m"}}}]}}}
    })
    .to_string()
}

fn pool(name: &str, node: &str) -> String {
    json!({"apiVersion": "devmgmtproto.k8s.io/v1alpha1", "kind": "DevicePool",
           "metadata": {"name": name},
           "spec": {"nodeName": node, "driver": "example.com-foozer", "count": 4,
                    "attributes": [{"name": "vendor", "stringValue": "example.com"},
                                   {"name": "model", "stringValue": "foozer-1000"}]}})
    .to_string()
}

/// The node a Workload's recorded allocation names.
fn allocated_node(wl: &Value) -> Option<String> {
    let a: Value =
        serde_json::from_str(wl["metadata"]["annotations"][ALLOCATION].as_str()?).ok()?;
    a[0]["nodeName"].as_str().map(String::from)
}

/// The nodes a Job's pods are bound to, once all `n` are.
fn pod_nodes(
    c: &batchgate_localcluster::LocalCluster,
    ns: &str,
    job: &str,
    n: usize,
) -> Option<Vec<(String, Value)>> {
    let pods = get(c, &["pods", "-n", ns, "-l", &format!("job-name={job}")])?;
    let items = pods["items"].as_array()?;
    let bound: Vec<(String, Value)> = items
        .iter()
        .filter_map(|p| {
            Some((
                p["spec"]["nodeName"].as_str()?.to_string(),
                p["spec"]["nodeSelector"].clone(),
            ))
        })
        .collect();
    (bound.len() >= n).then_some(bound)
}

fn schedule(c: &batchgate_localcluster::LocalCluster, ns: &str, job: &str) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["schedule", "--kubeconfig"])
        .arg(c.kubeconfig())
        .args(["-n", ns, "--job", job])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn jobs_claiming_devices_are_admitted_while_pools_hold_them() {
    let e = env_with(CONFIG);
    let c = e.cluster;
    let ns = namespace(c, "e2e-devices");

    // The driver first (its CRD may be a moment from established): the
    // webhook checks the class against it (its cache may lag the create by
    // a moment, so the class is applied until taken).
    let driver = r#"{"apiVersion": "devmgmtproto.k8s.io/v1alpha1", "kind": "DeviceDriver",
        "metadata": {"name": "example.com-foozer"}, "deviceTypes": ["gpu"]}"#;
    wait_for(Duration::from_secs(30), "the DeviceDriver created", || {
        kubectl(c, &["apply", "-f", "-"], Some(driver))
            .0
            .then_some(())
    });
    let class = r#"{"apiVersion": "devmgmtproto.k8s.io/v1alpha1", "kind": "DeviceClass",
        "metadata": {"name": "e2e-foozer"},
        "spec": {"deviceType": "gpu", "driver": "example.com-foozer"}}"#;
    wait_for(Duration::from_secs(30), "the DeviceClass accepted", || {
        kubectl(c, &["apply", "-f", "-"], Some(class))
            .0
            .then_some(())
    });
    // The webhook's refusals.
    let (ok, _, err) = kubectl(
        c,
        &["apply", "-f", "-"],
        Some(
            r#"{"apiVersion": "devmgmtproto.k8s.io/v1alpha1", "kind": "DeviceClass",
                "metadata": {"name": "e2e-nowhere"},
                "spec": {"deviceType": "gpu", "driver": "example.com-nowhere"}}"#,
        ),
    );
    assert!(!ok);
    assert!(
        err.contains(r#"admission webhook "vdeviceclass.devmgmtproto.k8s.io" denied the request: spec.driver: Not found: "example.com-nowhere""#),
        "{err}"
    );
    let (ok, _, err) = kubectl(
        c,
        &["apply", "-f", "-"],
        Some(&format!(
            r#"{{"apiVersion": "devmgmtproto.k8s.io/v1alpha1", "kind": "DeviceClaim",
                "metadata": {{"name": "bad", "namespace": "{ns}"}},
                "spec": {{"deviceClass": "e2e-foozer", "constraints": "device.model = 'x'"}}}}"#
        )),
    );
    assert!(!ok);
    assert!(
        err.contains("spec.constraints: Invalid value: \"device.model = 'x'\": syntax error at column 14: '=' is not an operator: compare with '=='"),
        "{err}"
    );

    apply(c, &pool("e2e-kwok-node-0-foozer", "kwok-node-0"));
    apply(c, &pool("e2e-kwok-node-1-foozer", "kwok-node-1"));
    apply(c, &flavor("devices-flavor", json!({})));
    // The queue covers the device type too: devices are charged as quota
    // (ample here, so placement is what limits).
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": "devices-cq"},
                "spec": {"namespaceSelector": {}, "resourceGroups": [{
                    "coveredResources": ["cpu", "devmgmtproto.k8s.io/gpu"],
                    "flavors": [{"name": "devices-flavor", "resources": [
                        {"name": "cpu", "nominalQuota": "100"},
                        {"name": "devmgmtproto.k8s.io/gpu", "nominalQuota": "100"}]}]}]}})
        .to_string(),
    );
    apply(c, &local_queue(&ns, "lq", "devices-cq"));

    // The first job: admitted, its allocation recorded on its Workload,
    // both pods on the node holding its 4 devices.
    create(c, &device_job("job-a", &ns, "75s"));
    let wl_a = wait_for(Duration::from_secs(60), "job-a admitted", || {
        workload_of(c, &ns, "job-a").filter(|w| is_true(w, "Admitted"))
    });
    let node_a = allocated_node(&wl_a).expect("allocation annotation on job-a's Workload");
    assert_eq!(
        wl_a["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
            ["devmgmtproto.k8s.io/gpu"],
        "4",
        "2 pods x 2 devices charged: {wl_a}"
    );
    assert!(
        node_a == "kwok-node-0" || node_a == "kwok-node-1",
        "{node_a}"
    );
    let pods = wait_for(Duration::from_secs(60), "job-a's pods bound", || {
        pod_nodes(c, &ns, "job-a", 2)
    });
    for (node, selector) in &pods {
        assert_eq!(node, &node_a);
        assert_eq!(selector["kubernetes.io/hostname"], node_a.as_str());
    }
    // The CLI, asked about job-a (its own devices not counted), makes the
    // same choice.
    let (code, out) = schedule(c, &ns, "job-a");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("NODE: {node_a} (2 pods)")), "{out}");

    // The second job gets the other node.
    create(c, &device_job("job-b", &ns, "3600s"));
    let wl_b = wait_for(Duration::from_secs(60), "job-b admitted", || {
        workload_of(c, &ns, "job-b").filter(|w| is_true(w, "Admitted"))
    });
    let node_b = allocated_node(&wl_b).unwrap();
    assert_ne!(node_b, node_a);
    wait_for(Duration::from_secs(60), "job-b's pods bound", || {
        pod_nodes(c, &ns, "job-b", 2)
    })
    .iter()
    .for_each(|(n, _)| assert_eq!(n, &node_b));

    wait_for(
        Duration::from_secs(60),
        "8 devices in use in devices-cq",
        || {
            let cq = get(c, &["clusterqueue", "devices-cq"])?;
            let used = cq["status"]["flavorsUsage"][0]["resources"]
                .as_array()?
                .iter()
                .find(|r| r["name"] == "devmgmtproto.k8s.io/gpu")?["total"]
                .clone();
            (used == "8").then_some(())
        },
    );

    // The third waits, with the placement's reason, its job suspended.
    // Long: it still holds node_a's devices when `schedule --write` looks
    // for room below (with a short one both nodes are free by then).
    create(c, &device_job("job-c", &ns, "3600s"));
    let wl_c = wait_for(Duration::from_secs(60), "job-c pending on devices", || {
        workload_of(c, &ns, "job-c").filter(|w| {
            condition(w, "QuotaReserved").is_some_and(|q| {
                q["status"] == "False"
                    && q["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("device claims"))
            })
        })
    });
    let message = condition(&wl_c, "QuotaReserved").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("couldn't place the device claims of pod set \"main\" (2 pods): 0/2 nodes with device pools can satisfy the device claims: kwok-node-0: could not satisfy these claims: gpus (no available devices)"),
        "{message}"
    );
    assert!(jobs(c, &ns)
        .iter()
        .any(|(n, suspended, _)| n == "job-c" && *suspended));
    // The CLI sees the same: no node, the same reason.
    let (code, out) = schedule(c, &ns, "job-c");
    assert_eq!(code, 2, "{out}");
    let reason = message.split_once("(2 pods): ").map(|(_, r)| r).unwrap();
    assert!(
        out.contains(&format!("UNSCHEDULABLE: {reason}")),
        "{out}\n---\n{message}"
    );

    // When job-a finishes, job-c runs where it freed the devices.
    let wl_c = wait_for(
        Duration::from_secs(180),
        "job-c admitted after job-a finished",
        || workload_of(c, &ns, "job-c").filter(|w| is_true(w, "Admitted")),
    );
    let a_done = workload_of(c, &ns, "job-a").unwrap();
    assert!(
        is_true(&a_done, "Finished"),
        "job-a should have finished first"
    );
    assert_eq!(allocated_node(&wl_c).as_deref(), Some(node_a.as_str()));
    wait_for(Duration::from_secs(60), "job-c's pods bound", || {
        pod_nodes(c, &ns, "job-c", 2)
    })
    .iter()
    .for_each(|(n, _)| assert_eq!(n, &node_a));

    // job-b deleted: its devices are free again. `batchgate schedule
    // --write` places a lone DeviceClaim there and records it in the
    // claim's status.
    let (ok, out, err) = kubectl(c, &["delete", "job", "job-b", "-n", &ns], None);
    assert!(ok, "{out}{err}");
    wait_for(Duration::from_secs(60), "job-b's Workload gone", || {
        workload_of(c, &ns, "job-b").is_none().then_some(())
    });
    apply(
        c,
        &format!(
            r#"{{"apiVersion": "devmgmtproto.k8s.io/v1alpha1", "kind": "DeviceClaim",
                "metadata": {{"name": "single", "namespace": "{ns}"}},
                "spec": {{"deviceClass": "e2e-foozer"}}}}"#
        ),
    );
    let out = Command::new(BIN)
        .args(["schedule", "--kubeconfig"])
        .arg(c.kubeconfig())
        .args(["-n", &ns, "--write"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("NODE: {node_b} (1 pod)")), "{text}");
    let claim = get(c, &["deviceclaim", "single", "-n", &ns]).unwrap();
    assert_eq!(claim["status"]["nodeName"], node_b.as_str(), "{claim}");
    assert_eq!(
        claim["status"]["allocations"],
        json!([{"devicePoolName": format!("e2e-{node_b}-foozer"), "deviceCount": 1}])
    );

    for p in ["e2e-kwok-node-0-foozer", "e2e-kwok-node-1-foozer"] {
        let _ = kubectl(c, &["delete", "devicepool", p], None);
    }
    let _ = kubectl(c, &["delete", "namespace", &ns, "--wait=false"], None);
}

/// A queued Job of one pod whose `resourceClaims` are `claims` (the
/// container uses each), running `runtime` on a KWOK node.
fn dra_job(name: &str, ns: &str, runtime: &str, claims: Value) -> String {
    let uses: Vec<Value> = claims
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!({"name": c["name"]}))
        .collect();
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                 "template": {
                    "metadata": {"annotations": {POD_RUNTIME_ANNOTATION: runtime}},
                    "spec": {"restartPolicy": "Never",
                             "resourceClaims": claims,
                             "containers": [{"name": "main", "image": "busybox", "command": ["true"],
                                             "resources": {"requests": {"cpu": "100m"}, "claims": uses}}]}}}
    })
    .to_string()
}

fn claim_template(name: &str, ns: &str, class: &str, count: i64) -> String {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
               "deviceClassName": class, "allocationMode": "ExactCount", "count": count}}]}}}})
    .to_string()
}

/// The pool of each device allocated to a ResourceClaim in `ns` that has
/// `devices` of them, once kube-scheduler has allocated one.
fn allocated_pools(
    c: &batchgate_localcluster::LocalCluster,
    ns: &str,
    devices: usize,
) -> Option<Vec<String>> {
    let claims = get(c, &["resourceclaims", "-n", ns])?;
    claims["items"].as_array()?.iter().find_map(|cl| {
        let results = cl["status"]["allocation"]["devices"]["results"].as_array()?;
        (results.len() == devices).then(|| {
            results
                .iter()
                .filter_map(|r| r["pool"].as_str().map(String::from))
                .collect()
        })
    })
}

/// The node of each ResourceSlice pool.
fn pool_nodes(
    c: &batchgate_localcluster::LocalCluster,
) -> std::collections::BTreeMap<String, String> {
    let slices = get(c, &["resourceslices"]).unwrap_or(Value::Null);
    slices["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let pool = s["spec"]["pool"]["name"].as_str()?;
            let node = s["spec"]["nodeName"].as_str()?;
            Some((pool.to_string(), node.to_string()))
        })
        .collect()
}

/// The QuotaReserved condition's message of a Job's Workload, once it has
/// one that is False.
fn pending_message(
    c: &batchgate_localcluster::LocalCluster,
    ns: &str,
    job: &str,
) -> Option<String> {
    let wl = workload_of(c, ns, job)?;
    let qr = condition(&wl, "QuotaReserved")?;
    (qr["status"] == "False").then(|| qr["message"].as_str().unwrap_or_default().to_string())
}

/// The test plays the DRA driver `gpu.example.com`: a DeviceClass and, per
/// node, a ResourceSlice of 4 GPUs with attributes and capacity. Once per
/// binary: the tests run side by side, and two `kubectl apply`s creating
/// the same object at once race to AlreadyExists.
fn publish_gpus(c: &batchgate_localcluster::LocalCluster) {
    static PUBLISHED: std::sync::Once = std::sync::Once::new();
    PUBLISHED.call_once(|| publish_gpus_now(c));
}

fn publish_gpus_now(c: &batchgate_localcluster::LocalCluster) {
    apply(
        c,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": "gpu.example.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}})
        .to_string(),
    );
    for node in ["kwok-node-0", "kwok-node-1"] {
        let devices: Vec<Value> = (0..4)
            .map(|i| {
                json!({"name": format!("gpu-{i}"),
                       "attributes": {"model": {"string": "e2e-a100"}, "index": {"int": i}},
                       "capacity": {"memory": {"value": "40Gi"}}})
            })
            .collect();
        apply(
            c,
            &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"name": format!("{node}-gpu.example.com")},
                    "spec": {"driver": "gpu.example.com", "nodeName": node,
                             "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                             "devices": devices}})
            .to_string(),
        );
    }
}

/// Flavor `flavor_name`, a ClusterQueue `cq` of 10 cpu and `gpus`
/// `example.com/gpu` on it (`extra` merged into its spec), and LocalQueue
/// `lq` in `ns` pointing at it.
fn gpu_queue(
    c: &batchgate_localcluster::LocalCluster,
    (ns, lq): (&str, &str),
    (cq, flavor_name): (&str, &str),
    gpus: &str,
    extra: Value,
) {
    apply(c, &flavor(flavor_name, json!({})));
    let mut spec = json!({"resourceGroups": [{"coveredResources": ["cpu", "example.com/gpu"],
        "flavors": [{"name": flavor_name, "resources": [
            {"name": "cpu", "nominalQuota": "10"},
            {"name": "example.com/gpu", "nominalQuota": gpus}]}]}]});
    if let (Value::Object(s), Value::Object(e)) = (&mut spec, extra) {
        s.extend(e);
    }
    apply(c, &cluster_queue(cq, &[], spec));
    apply(c, &local_queue(ns, lq, cq));
}

#[test]
fn dra_gpus_are_charged_as_quota_and_what_cannot_be_counted_waits() {
    let e = env_with(CONFIG);
    let c = e.cluster;
    let ns = namespace(c, "e2e-dra");

    publish_gpus(c);
    gpu_queue(c, (&ns, "lq"), ("dra-cq", "dra-flavor"), "4", json!({}));
    apply(c, &claim_template("four-gpus", &ns, "gpu.example.com", 4));
    apply(
        c,
        &claim_template("other-gpus", &ns, "other.example.com", 1),
    );

    let gpus = json!([{"name": "gpus", "resourceClaimTemplateName": "four-gpus"}]);
    create(c, &dra_job("first", &ns, "20s", gpus.clone()));
    let first = wait_for(
        Duration::from_secs(60),
        "the first GPU Job admitted",
        || {
            let wl = workload_of(c, &ns, "first")?;
            is_true(&wl, "QuotaReserved").then_some(wl)
        },
    );
    let usage = &first["status"]["admission"]["podSetAssignments"][0]["resourceUsage"];
    assert_eq!(usage["example.com/gpu"], "4", "{usage}");
    create(c, &dra_job("second", &ns, "1s", gpus));
    let message = wait_for(
        Duration::from_secs(60),
        "the second GPU Job pending",
        || pending_message(c, &ns, "second").filter(|m| !m.is_empty()),
    );
    assert!(
        message.contains("example.com/gpu"),
        "the second Job waits for GPU quota: {message}"
    );
    let wl = workload_of(c, &ns, "second").unwrap();
    assert!(
        !is_true(&wl, "QuotaReserved"),
        "never admitted on CPU alone"
    );

    // kube-scheduler allocated the admitted pod's claim: 4 GPUs on one node.
    let allocated = wait_for(
        Duration::from_secs(60),
        "the first Job's claim allocated",
        || allocated_pools(c, &ns, 4),
    );
    // By node: another test of this binary may publish a second pool on
    // the same node meanwhile, and the allocator may draw from both.
    let nodes = pool_nodes(c);
    let on: std::collections::BTreeSet<&str> = allocated
        .iter()
        .map(|p| nodes.get(p).map_or(p.as_str(), String::as_str))
        .collect();
    assert_eq!(on.len(), 1, "4 GPUs of one node: {allocated:?} on {on:?}");
    wait_for(
        Duration::from_secs(60),
        "the first Job's pod running",
        || {
            let pods = get(c, &["pods", "-n", &ns, "-l", "job-name=first"])?;
            pods["items"]
                .as_array()?
                .iter()
                .find(|p| matches!(p["status"]["phase"].as_str(), Some("Running" | "Succeeded")))?;
            Some(())
        },
    );

    // What Kueue does not count is held with its words.
    create(
        c,
        &dra_job(
            "direct",
            &ns,
            "1s",
            json!([{"name": "shared", "resourceClaimName": "shared-gpu"}]),
        ),
    );
    create(
        c,
        &dra_job(
            "unmapped",
            &ns,
            "1s",
            json!([{"name": "gpus", "resourceClaimTemplateName": "other-gpus"}]),
        ),
    );
    let direct = wait_for(Duration::from_secs(60), "the direct claim held", || {
        pending_message(c, &ns, "direct")
    });
    assert_eq!(
        direct,
        "KueueDRAIntegration feature does not support use of resource claims"
    );
    let unmapped = wait_for(Duration::from_secs(60), "the unmapped class held", || {
        pending_message(c, &ns, "unmapped")
    });
    assert_eq!(
        unmapped,
        "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: \"DeviceClass other.example.com is not mapped in DRA configuration for podset main\""
    );
    // A template that does not exist yet: held, then counted when it is
    // created.
    create(
        c,
        &dra_job(
            "later",
            &ns,
            "1s",
            json!([{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}]),
        ),
    );
    let later = wait_for(Duration::from_secs(60), "the missing template held", || {
        pending_message(c, &ns, "later").filter(|m| m.contains("two-gpus"))
    });
    assert!(later.contains("not found"), "{later}");

    // The first finishes: the second gets its GPUs.
    wait_for(
        Duration::from_secs(120),
        "the second GPU Job admitted",
        || {
            let wl = workload_of(c, &ns, "second")?;
            is_true(&wl, "QuotaReserved").then_some(())
        },
    );
    apply(c, &claim_template("two-gpus", &ns, "gpu.example.com", 2));
    let wl = wait_for(Duration::from_secs(120), "the later Job counted", || {
        let wl = workload_of(c, &ns, "later")?;
        let m = pending_message(c, &ns, "later").unwrap_or_default();
        (is_true(&wl, "QuotaReserved") || m.contains("example.com/gpu")).then_some(wl)
    });
    if is_true(&wl, "QuotaReserved") {
        let usage = &wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"];
        assert_eq!(usage["example.com/gpu"], "2", "{usage}");
    }
    for held in ["direct", "unmapped"] {
        let wl = workload_of(c, &ns, held).unwrap();
        assert!(!is_true(&wl, "QuotaReserved"), "{held} never admitted");
    }
}

/// GPU quota borrowed in a cohort, and reclaimed by its lender, which
/// preempts the borrower: DRA devices go through cohorts and preemption
/// like any resource.
#[test]
fn dra_gpu_quota_is_borrowed_and_reclaimed_in_a_cohort() {
    let e = env_with(CONFIG);
    let c = e.cluster;
    let ns = namespace(c, "e2e-dra-cohort");
    publish_gpus(c);
    let cohort = json!({"cohortName": "dra-cohort",
                        "preemption": {"reclaimWithinCohort": "Any"}});
    let shared = "dra-cohort-flavor";
    gpu_queue(
        c,
        (&ns, "lend"),
        ("dra-lender", shared),
        "4",
        cohort.clone(),
    );
    gpu_queue(c, (&ns, "lq"), ("dra-borrower", shared), "0", cohort);
    apply(c, &claim_template("four-gpus", &ns, "gpu.example.com", 4));
    let gpus = json!([{"name": "gpus", "resourceClaimTemplateName": "four-gpus"}]);

    create(c, &dra_job("borrows", &ns, "300s", gpus.clone()));
    let wl = wait_for(
        Duration::from_secs(60),
        "the borrowing Job admitted",
        || {
            let wl = workload_of(c, &ns, "borrows")?;
            is_true(&wl, "QuotaReserved").then_some(wl)
        },
    );
    assert_eq!(wl["status"]["admission"]["clusterQueue"], "dra-borrower");
    assert_eq!(
        wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["example.com/gpu"],
        "4"
    );

    // The lender's Job runs long enough for the borrower to be seen
    // waiting: after it finishes, the borrower borrows again.
    let mut reclaim: Value = serde_json::from_str(&dra_job("reclaims", &ns, "30s", gpus)).unwrap();
    reclaim["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("lend");
    create(c, &reclaim.to_string());
    let preempted = wait_for(Duration::from_secs(60), "the borrower preempted", || {
        let wl = workload_of(c, &ns, "borrows")?;
        let p = condition(&wl, "Preempted")?;
        (p["status"] == "True").then(|| p["reason"].as_str().unwrap_or_default().to_string())
    });
    assert_eq!(preempted, "InCohortReclamation");
    wait_for(Duration::from_secs(60), "the lender's Job admitted", || {
        let wl = workload_of(c, &ns, "reclaims")?;
        is_true(&wl, "QuotaReserved").then_some(())
    });
    // The borrower waits for GPU quota again, not admitted on CPU alone.
    let wl = wait_for(
        Duration::from_secs(60),
        "the borrower pending again",
        || {
            let wl = workload_of(c, &ns, "borrows")?;
            (!is_true(&wl, "QuotaReserved")).then_some(wl)
        },
    );
    assert!(wl["status"]["admission"].is_null(), "{wl}");
}

/// A request whose CEL selector no published device matches is held with
/// Kueue's words (its `validateCELSelectorsAgainstDevices`), and counted
/// again when the driver (played by the test) publishes a ResourceSlice
/// with such a device: then it is admitted and kube-scheduler allocates
/// that device.
#[test]
fn dra_a_selector_no_device_matches_waits_for_a_slice_that_does() {
    let e = env_with(CONFIG);
    let c = e.cluster;
    let ns = namespace(c, "e2e-dra-cel");
    publish_gpus(c);
    gpu_queue(
        c,
        (&ns, "lq"),
        ("dra-cel", "dra-cel-flavor"),
        "4",
        json!({}),
    );
    apply(
        c,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "one-h100", "namespace": ns},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                    "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1,
                    "selectors": [{"cel": {"expression":
                        "device.attributes['gpu.example.com'].model == 'e2e-h100'"}}]}}]}}}})
        .to_string(),
    );
    create(
        c,
        &dra_job(
            "h100",
            &ns,
            "1s",
            json!([{"name": "gpus", "resourceClaimTemplateName": "one-h100"}]),
        ),
    );
    let held = wait_for(Duration::from_secs(60), "the h100 Job held", || {
        pending_message(c, &ns, "h100").filter(|m| !m.is_empty())
    });
    assert_eq!(
        held,
        "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly.selectors: Internal error: ResourceClaimTemplate one-h100: insufficient matching devices for CEL selector in DeviceClass gpu.example.com: 0 device(s) match in the cluster but 1 requested"
    );
    // The driver publishes an h100 on another node.
    apply(
        c,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": "kwok-node-2-gpu.example.com"},
                "spec": {"driver": "gpu.example.com", "nodeName": "kwok-node-2",
                         "pool": {"name": "kwok-node-2", "generation": 1, "resourceSliceCount": 1},
                         "devices": [{"name": "gpu-0",
                                      "attributes": {"model": {"string": "e2e-h100"}}}]}})
        .to_string(),
    );
    let wl = wait_for(Duration::from_secs(60), "the h100 Job admitted", || {
        let wl = workload_of(c, &ns, "h100")?;
        is_true(&wl, "QuotaReserved").then_some(wl)
    });
    assert_eq!(
        wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["example.com/gpu"],
        "1"
    );
    let pools = wait_for(Duration::from_secs(60), "the h100 claim allocated", || {
        allocated_pools(c, &ns, 1)
    });
    assert_eq!(pools, ["kwok-node-2"], "the one h100 was allocated");
}

/// batchgate's second gate (`draPlacement`, on by default): a pod asking
/// six GPUs fits the ClusterQueue's quota and the cluster's count (Kueue
/// would admit it) but no node has six, so it waits with the placement's
/// words instead of being admitted to sit unschedulable; when the test's
/// driver publishes two more GPUs on one node, it is admitted and
/// kube-scheduler allocates its claim there.
#[test]
fn dra_a_pod_no_node_can_hold_waits_for_a_node_that_can() {
    let e = env_with(CONFIG);
    let c = e.cluster;
    let ns = namespace(c, "e2e-dra-place");
    publish_gpus(c);
    gpu_queue(
        c,
        (&ns, "lq"),
        ("dra-place", "dra-place-flavor"),
        "8",
        json!({}),
    );
    apply(c, &claim_template("six-gpus", &ns, "gpu.example.com", 6));
    let six = dra_job(
        "six",
        &ns,
        "1s",
        json!([{"name": "gpus", "resourceClaimTemplateName": "six-gpus"}]),
    );
    // `kubectl kueue simulate` counts the claims as the engine will: no
    // node can hold six, so it would wait for its devices.
    let (ok, out, err) = plugin(c, &["-n", &ns, "simulate", "-f", "-", "-o", "json"], &six);
    assert!(ok, "{err}");
    let x: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(x["state"], "Pending", "{x}");
    assert!(
        summary(&x).contains("It waits for its devices, before any quota is looked at: no node can hold the devices of pod set main"),
        "{x}"
    );
    assert!(
        workload_of(c, &ns, "six").is_none(),
        "a simulation creates nothing"
    );
    create(c, &six);
    let held = wait_for(Duration::from_secs(60), "the six-GPU Job held", || {
        pending_message(c, &ns, "six").filter(|m| !m.is_empty())
    });
    assert!(
        held.starts_with(
            "no node can hold the devices of pod set main: ResourceClaimTemplate six-gpus request gpus asks 6 device(s) of DeviceClass gpu.example.com matching device.driver == 'gpu.example.com'; at most 4 match on one node"
        ),
        "{held}"
    );
    let wl = workload_of(c, &ns, "six").expect("its Workload");
    assert!(wl["status"]["admission"].is_null(), "not admitted: {wl}");
    // `kubectl kueue explain` says it waits for a node for its devices, in
    // the words its status carries (issue 42: waiting for a DRA placement).
    let wl_name = wl["metadata"]["name"].as_str().unwrap().to_string();
    let x = wait_for(
        Duration::from_secs(60),
        "an explanation of the held Job",
        || explained(c, &ns, &wl_name),
    );
    assert_eq!(x["state"], "Pending", "{x}");
    assert!(
        summary(&x).contains(&format!(
            "It waits for its devices, before any quota is looked at: {held}"
        )),
        "{x}"
    );
    // `batchgate schedule` reads the same objects from the cluster and
    // says the same.
    let (code, out) = schedule(c, &ns, "six");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("UNSCHEDULABLE: no node can hold the devices of pod set main: ResourceClaimTemplate six-gpus request gpus asks 6 device(s)"),
        "{out}"
    );
    // The driver publishes a second pool of two GPUs on kwok-node-1.
    apply(
        c,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": "kwok-node-1-extra-gpu.example.com"},
                "spec": {"driver": "gpu.example.com", "nodeName": "kwok-node-1",
                         "pool": {"name": "kwok-node-1-extra", "generation": 1, "resourceSliceCount": 1},
                         "devices": [{"name": "gpu-4", "attributes": {"model": {"string": "e2e-a100"}}},
                                     {"name": "gpu-5", "attributes": {"model": {"string": "e2e-a100"}}}]}})
        .to_string(),
    );
    let wl = wait_for(Duration::from_secs(60), "the six-GPU Job admitted", || {
        let wl = workload_of(c, &ns, "six")?;
        is_true(&wl, "QuotaReserved").then_some(wl)
    });
    assert_eq!(
        wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["example.com/gpu"],
        "6"
    );
    // As explain said: once a node can hold them, it is admitted, and
    // explain says so.
    wait_for(Duration::from_secs(60), "explain saying Admitted", || {
        explained(c, &ns, &wl_name).filter(|x| x["state"] == "Admitted")
    });
    // Other tests' Jobs may hold kwok-node-1's GPUs for a while.
    let allocated = wait_for(Duration::from_secs(180), "the six GPUs allocated", || {
        allocated_pools(c, &ns, 6)
    });
    let pools: std::collections::BTreeSet<&str> = allocated.iter().map(String::as_str).collect();
    assert_eq!(
        pools,
        ["kwok-node-1", "kwok-node-1-extra"].into(),
        "all six on the one node that has them"
    );
}
