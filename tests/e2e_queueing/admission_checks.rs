//! Admission checks end to end: the test plays the check's controller
//! (and the autoscaler it stands for) with kubectl, batchgate does the rest.

use std::time::Duration;

use batchgate_localcluster::LocalCluster;
use serde_json::{json, Value};

use crate::support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

const CHECK: &str = "e2e-capacity";

fn patch_status(c: &LocalCluster, what: &[&str], patch: &Value) {
    let mut args = vec!["patch"];
    args.extend_from_slice(what);
    let p = patch.to_string();
    args.extend(["--subresource=status", "--type=merge", "-p", &p]);
    let (ok, out, err) = kubectl(c, &args, None);
    assert!(ok, "kubectl {args:?}: {out}{err}");
}

/// The Workload's state for the check, as the check's controller sets it.
fn set_check(c: &LocalCluster, ns: &str, wl: &str, state: &str, message: &str, updates: Value) {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let mut s = json!({"name": CHECK, "state": state, "message": message,
                       "lastTransitionTime": now});
    if !updates.is_null() {
        s["podSetUpdates"] = updates;
    }
    patch_status(
        c,
        &["workloads.kueue.x-k8s.io", wl, "-n", ns],
        &json!({"status": {"admissionChecks": [s]}}),
    );
}

fn check_state(wl: &Value) -> Option<Value> {
    wl["status"]["admissionChecks"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == CHECK)
        .cloned()
}

fn cq_active(c: &LocalCluster, cq: &str) -> Option<Value> {
    let q = get(c, &["clusterqueues.kueue.x-k8s.io", cq])?;
    condition(&q, "Active").cloned()
}

/// A quota reservation waits for its check: QuotaReserved with the check
/// Pending and the Job still suspended; the test (the check's controller)
/// adds a tainted KWOK node and sets Ready with pod set updates (node
/// selector, toleration, annotation); the Workload is
/// admitted, the Job starts with the updates and its pod lands on the new
/// node. A second Job's check asks to Retry (evicted, requeued, check
/// reset to Pending), then rejects it (deactivated).
#[test]
fn a_job_waits_for_its_admission_check_then_runs_on_the_provisioned_node() {
    let e = super::env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-checks");
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                "metadata": {"name": CHECK},
                "spec": {"controllerName": "example.com/e2e-capacity"}})
        .to_string(),
    );
    apply(c, &flavor("checks-pool", json!({"e2e-pool": "checks"})));
    apply(
        c,
        &cluster_queue(
            "checks-cq",
            &[("checks-pool", "4", None)],
            json!({"admissionChecksStrategy": {"admissionChecks": [{"name": CHECK}]}}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "checks-cq"));

    // The check has no controller yet: the queue admits nothing and says why.
    let active = wait_for(
        Duration::from_secs(120),
        "the queue to name the check",
        || cq_active(c, "checks-cq").filter(|a| a["reason"] == "AdmissionCheckInactive"),
    );
    assert_eq!(active["status"], "False");
    assert_eq!(
        active["message"],
        format!("Can't admit new workloads: references inactive AdmissionCheck(s): {CHECK}.")
    );
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    patch_status(
        c,
        &["admissionchecks.kueue.x-k8s.io", CHECK],
        &json!({"status": {"conditions": [{"type": "Active", "status": "True",
            "reason": "Active", "message": "The admission check is active",
            "lastTransitionTime": now}]}}),
    );
    wait_for(Duration::from_secs(120), "the queue to be active", || {
        cq_active(c, "checks-cq").filter(|a| a["status"] == "True")
    });

    create(c, &job("gated", &ns, "lq", "1", "3s", json!({})));
    let wl = wait_for(
        Duration::from_secs(120),
        "quota reserved, check pending",
        || {
            let wl = workload_of(c, &ns, "gated")?;
            (is_true(&wl, "QuotaReserved") && check_state(&wl)?["state"] == "Pending").then_some(wl)
        },
    );
    assert!(!is_true(&wl, "Admitted"), "{wl}");
    let name = wl["metadata"]["name"].as_str().unwrap().to_string();
    // Held: a while later still not admitted, the Job still suspended.
    std::thread::sleep(Duration::from_secs(2));
    let wl = workload_of(c, &ns, "gated").unwrap();
    assert!(!is_true(&wl, "Admitted"), "{wl}");
    assert_eq!(
        get(c, &["job", "gated", "-n", &ns]).unwrap()["spec"]["suspend"],
        true
    );

    // The check's controller provisions a node and says Ready.
    let node = "kwok-checks-0";
    apply(
        c,
        &json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node,
                "labels": {"kubernetes.io/hostname": node, "kubernetes.io/os": "linux",
                           "kubernetes.io/arch": "amd64", "type": "kwok", "e2e-pool": "checks"},
                "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"taints": [{"key": "e2e.example.com/provisioned", "value": "true",
                                 "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"},
                       "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"}}})
        .to_string(),
    );
    set_check(
        c,
        &ns,
        &name,
        "Ready",
        "capacity provisioned",
        json!([{"name": "main",
                "annotations": {"e2e.example.com/provisioned-by": CHECK},
                "nodeSelector": {"kubernetes.io/hostname": node},
                "tolerations": [{"key": "e2e.example.com/provisioned", "operator": "Equal",
                                 "value": "true", "effect": "NoSchedule"}]}]),
    );
    let wl = wait_for(
        Duration::from_secs(120),
        "the Workload to be admitted",
        || workload_of(c, &ns, "gated").filter(|w| is_true(w, "Admitted")),
    );
    let admitted = condition(&wl, "Admitted").unwrap();
    assert_eq!(
        (admitted["reason"].clone(), admitted["message"].clone()),
        (json!("Admitted"), json!("The workload is admitted"))
    );
    let pod = wait_for(Duration::from_secs(120), "the pod on the new node", || {
        let p = get(c, &["pods", "-n", &ns, "-l", "job-name=gated"])?;
        p["items"]
            .as_array()?
            .iter()
            .find(|p| p["spec"]["nodeName"] == node)
            .cloned()
    });
    assert_eq!(
        pod["metadata"]["annotations"]["e2e.example.com/provisioned-by"],
        CHECK
    );
    assert_eq!(pod["spec"]["nodeSelector"]["e2e-pool"], "checks");
    wait_for(Duration::from_secs(180), "the Job to complete", || {
        jobs(c, &ns).into_iter().find(|j| j.0 == "gated" && j.2)
    });

    // Retry: evicted with Kueue's words, the quota goes back, the
    // Workload is reserved again with its check reset to Pending.
    create(c, &job("retried", &ns, "lq", "1", "3s", json!({})));
    let wl = wait_for(Duration::from_secs(120), "the second reservation", || {
        let wl = workload_of(c, &ns, "retried")?;
        (is_true(&wl, "QuotaReserved") && check_state(&wl)?["state"] == "Pending").then_some(wl)
    });
    let name = wl["metadata"]["name"].as_str().unwrap().to_string();
    set_check(c, &ns, &name, "Retry", "no capacity yet", Value::Null);
    let wl = wait_for(
        Duration::from_secs(120),
        "the check to be reset after the eviction",
        || {
            let wl = workload_of(c, &ns, "retried")?;
            (check_state(&wl)?["retryCount"] == 1).then_some(wl)
        },
    );
    let st = check_state(&wl).unwrap();
    assert_eq!(st["state"], "Pending");
    assert_eq!(
        st["message"],
        "Reset to Pending after eviction. Previously: Retry"
    );
    // Read as evicted, or already reserved again (the eviction kept as
    // history).
    let ev = condition(&wl, "Evicted").unwrap();
    let said =
        format!("Evicted due to AdmissionCheck in Retry state: \"{CHECK}\" (no capacity yet)");
    if ev["status"] == "True" {
        assert_eq!(
            (ev["reason"].clone(), ev["message"].clone()),
            (json!("AdmissionCheck"), json!(said))
        );
    } else {
        assert_eq!(ev["message"], format!("Previously: {said}"), "{ev}");
    }
    assert_eq!(
        wl["status"]["schedulingStats"]["evictions"][0]["reason"],
        "AdmissionCheck"
    );
    // Requeued: its quota is reserved again, the check still to decide.
    wait_for(
        Duration::from_secs(120),
        "the Workload reserved again",
        || {
            let wl = workload_of(c, &ns, "retried")?;
            (is_true(&wl, "QuotaReserved") && !is_true(&wl, "Evicted")).then_some(())
        },
    );

    // Rejected: the Workload is deactivated and evicted in the check's name.
    set_check(c, &ns, &name, "Rejected", "too big", Value::Null);
    let wl = wait_for(Duration::from_secs(120), "the deactivation", || {
        let wl = workload_of(c, &ns, "retried")?;
        (wl["spec"]["active"] == false
            && condition(&wl, "Evicted")?["reason"] == "DeactivatedDueToAdmissionCheck")
            .then_some(wl)
    });
    assert_eq!(
        condition(&wl, "Evicted").unwrap()["message"],
        format!("The workload is deactivated due to AdmissionCheck in Rejected state: \"{CHECK}\" (too big)")
    );
    wait_for(Duration::from_secs(120), "the quota given back", || {
        let wl = workload_of(c, &ns, "retried")?;
        (!is_true(&wl, "QuotaReserved")).then_some(())
    });
    assert_eq!(
        get(c, &["job", "retried", "-n", &ns]).unwrap()["spec"]["suspend"],
        true
    );

    // A queue that drops its check admits what waited for it (Kueue's
    // workload controller: the states go, Admitted follows).
    create(c, &job("freed", &ns, "lq", "1", "3s", json!({})));
    wait_for(Duration::from_secs(120), "the third reservation", || {
        let wl = workload_of(c, &ns, "freed")?;
        (is_true(&wl, "QuotaReserved") && check_state(&wl)?["state"] == "Pending").then_some(())
    });
    apply(
        c,
        &cluster_queue("checks-cq", &[("checks-pool", "4", None)], json!({})),
    );
    let wl = wait_for(
        Duration::from_secs(120),
        "admitted without the check",
        || workload_of(c, &ns, "freed").filter(|w| is_true(w, "Admitted")),
    );
    assert!(wl["status"].get("admissionChecks").is_none(), "{wl}");
    // Its pod has no toleration for the provisioned node: not left pending.
    let (ok, out, err) = kubectl(c, &["delete", "job", "freed", "-n", &ns], None);
    assert!(ok, "{out}{err}");
}

/// A Workload without a job (nothing to stop) whose check asks to Retry
/// gives its quota back at once and is reserved again, its check Pending.
#[test]
fn a_jobless_workload_retried_by_its_check_is_reserved_again() {
    let e = super::env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-checks-jobless");
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                "metadata": {"name": "e2e-jobless"},
                "spec": {"controllerName": "example.com/e2e-jobless"}})
        .to_string(),
    );
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    patch_status(
        c,
        &["admissionchecks.kueue.x-k8s.io", "e2e-jobless"],
        &json!({"status": {"conditions": [{"type": "Active", "status": "True",
            "reason": "Active", "message": "The admission check is active",
            "lastTransitionTime": now}]}}),
    );
    apply(c, &flavor("jobless-pool", json!({})));
    apply(
        c,
        &cluster_queue(
            "jobless-cq",
            &[("jobless-pool", "2", None)],
            json!({"admissionChecksStrategy": {"admissionChecks": [{"name": "e2e-jobless"}]}}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "jobless-cq"));
    create(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "bare", "namespace": ns},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "1"}}}]}}}]}})
        .to_string(),
    );
    let state = |wl: &Value| {
        wl["status"]["admissionChecks"]
            .as_array()?
            .iter()
            .find(|s| s["name"] == "e2e-jobless")
            .cloned()
    };
    let get_wl = || get(c, &["workloads.kueue.x-k8s.io", "bare", "-n", &ns]);
    wait_for(Duration::from_secs(120), "reserved, check pending", || {
        let wl = get_wl()?;
        (is_true(&wl, "QuotaReserved") && state(&wl)?["state"] == "Pending").then_some(())
    });
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    patch_status(
        c,
        &["workloads.kueue.x-k8s.io", "bare", "-n", &ns],
        &json!({"status": {"admissionChecks": [{"name": "e2e-jobless", "state": "Retry",
            "message": "later", "lastTransitionTime": now}]}}),
    );
    let wl = wait_for(
        Duration::from_secs(120),
        "reserved again after the retry",
        || {
            let wl = get_wl()?;
            (state(&wl)?["retryCount"] == 1
                && is_true(&wl, "QuotaReserved")
                && !is_true(&wl, "Evicted"))
            .then_some(wl)
        },
    );
    assert_eq!(state(&wl).unwrap()["state"], "Pending");
    assert_eq!(
        condition(&wl, "Evicted").unwrap()["message"],
        "Previously: Evicted due to AdmissionCheck in Retry state: \"e2e-jobless\" (later)"
    );
}
