//! The ProvisioningRequest admission check end to end: batchgate plays
//! Kueue's check controller; the test plays the cluster autoscaler (a
//! small provisioner that adds a KWOK node and sets the request's
//! conditions) on the test's ProvisioningRequest CRD
//! (tests/fixtures/autoscaling.x-k8s.io_provisioningrequests.yaml).

use std::time::Duration;

use batchgate_localcluster::LocalCluster;
use serde_json::{json, Value};

use crate::support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

const CHECK: &str = "e2e-prov";
const CONFIG: &str = "e2e-prov-config";
const CLASS: &str = "check-capacity.autoscaling.x-k8s.io";
const WAIT: Duration = Duration::from_secs(120);

fn install_provisioning_request_crd(c: &LocalCluster) {
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/tests/fixtures/autoscaling.x-k8s.io_provisioningrequests.yaml");
    let (ok, out, err) = kubectl(c, &["apply", "-f", &path], None);
    assert!(ok, "{out}{err}");
    c.wait_established(
        &["crd/provisioningrequests.autoscaling.x-k8s.io"],
        Duration::from_secs(120),
    )
    .unwrap();
}

fn check_state(wl: &Value) -> Option<Value> {
    wl["status"]["admissionChecks"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == CHECK)
        .cloned()
}

fn active(c: &LocalCluster) -> Option<Value> {
    let ac = get(c, &["admissionchecks.kueue.x-k8s.io", CHECK])?;
    condition(&ac, "Active").cloned()
}

fn request(c: &LocalCluster, ns: &str, name: &str) -> Option<Value> {
    get(
        c,
        &["provisioningrequests.autoscaling.x-k8s.io", name, "-n", ns],
    )
}

/// The test provisioner answers a request: sets one condition True.
fn answer(c: &LocalCluster, ns: &str, name: &str, ty: &str, message: &str) {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let patch = json!({"status": {"conditions": [{"type": ty, "status": "True",
        "reason": ty, "message": message, "lastTransitionTime": now}]}})
    .to_string();
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "provisioningrequests.autoscaling.x-k8s.io",
            name,
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
}

fn add_node(c: &LocalCluster, node: &str) {
    apply(
        c,
        &json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node,
                "labels": {"kubernetes.io/hostname": node, "kubernetes.io/os": "linux",
                           "kubernetes.io/arch": "amd64", "type": "kwok", "e2e-pool": "prov"},
                "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"},
                       "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"}}})
        .to_string(),
    );
}

/// The check is inactive until its ProvisioningRequestConfig exists
/// (Kueue's reason and message), then active. A Job's Workload reserves
/// quota with the check Pending; batchgate creates `<workload>-e2e-prov-1`
/// with its PodTemplate (the flavor's node selector merged in); the
/// provisioner adds a node and sets Provisioned; the check is Ready with
/// the consume annotation, the Workload admitted, the pod on the new node
/// (the only one with the flavor's label). A second Job's request Fails:
/// Retry with the config's backoff, evicted, reserved again, attempt `-2`
/// created (the first deleted); that one Fails past `backoffLimitCount`:
/// Rejected and the Workload deactivated.
#[test]
fn a_provisioning_request_check_admits_once_capacity_is_provisioned() {
    let e = super::env();
    let c = e.cluster;
    install_provisioning_request_crd(c);
    let ns = namespace(c, "e2e-provreq");
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                "metadata": {"name": CHECK},
                "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                         "parameters": {"apiGroup": "kueue.x-k8s.io",
                                        "kind": "ProvisioningRequestConfig", "name": CONFIG}}})
        .to_string(),
    );
    let inactive = wait_for(WAIT, "the check inactive without its config", || {
        active(c).filter(|a| a["status"] == "False")
    });
    assert_eq!(inactive["reason"], "BadParametersRef");
    assert_eq!(
        inactive["message"],
        format!("provisioningrequestconfigs.kueue.x-k8s.io \"{CONFIG}\" not found")
    );
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
                "metadata": {"name": CONFIG},
                "spec": {"provisioningClassName": CLASS, "parameters": {"e2e": "yes"},
                         "retryStrategy": {"backoffLimitCount": 1, "backoffBaseSeconds": 1,
                                           "backoffMaxSeconds": 2}}})
        .to_string(),
    );
    let on = wait_for(WAIT, "the check active", || {
        active(c).filter(|a| a["status"] == "True")
    });
    assert_eq!(
        (on["reason"].clone(), on["message"].clone()),
        (json!("Active"), json!("The admission check is active"))
    );
    apply(c, &flavor("prov-pool", json!({"e2e-pool": "prov"})));
    apply(
        c,
        &cluster_queue(
            "prov-cq",
            &[("prov-pool", "4", None)],
            json!({"admissionChecksStrategy": {"admissionChecks": [{"name": CHECK}]}}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "prov-cq"));

    create(c, &job("provisioned", &ns, "lq", "1", "3s", json!({})));
    let wl = wait_for(WAIT, "quota reserved, check pending", || {
        let wl = workload_of(c, &ns, "provisioned")?;
        (is_true(&wl, "QuotaReserved") && check_state(&wl)?["state"] == "Pending").then_some(wl)
    });
    assert!(!is_true(&wl, "Admitted"), "{wl}");
    let wl_name = wl["metadata"]["name"].as_str().unwrap().to_string();
    let pr_name = format!("{wl_name}-{CHECK}-1");
    let pr = wait_for(WAIT, "the ProvisioningRequest", || {
        request(c, &ns, &pr_name)
    });
    assert_eq!(pr["spec"]["provisioningClassName"], CLASS);
    assert_eq!(pr["spec"]["parameters"], json!({"e2e": "yes"}));
    let template = format!("ppt-{pr_name}-main");
    assert_eq!(
        pr["spec"]["podSets"],
        json!([{"count": 1, "podTemplateRef": {"name": template}}])
    );
    assert_eq!(pr["metadata"]["ownerReferences"][0]["name"], wl_name);
    assert_eq!(pr["metadata"]["ownerReferences"][0]["kind"], "Workload");
    // The template carries the flavor's node selector and passes to the
    // request's control.
    let pt = wait_for(WAIT, "the PodTemplate owned by the request", || {
        let pt = get(c, &["podtemplate", &template, "-n", &ns])?;
        (pt["metadata"]["ownerReferences"][0]["kind"] == "ProvisioningRequest").then_some(pt)
    });
    assert_eq!(pt["template"]["spec"]["nodeSelector"]["e2e-pool"], "prov");
    assert_eq!(
        pt["metadata"]["ownerReferences"][0]["name"],
        pr_name.as_str()
    );
    // Held while the request is unanswered.
    let wl = workload_of(c, &ns, "provisioned").unwrap();
    assert!(!is_true(&wl, "Admitted"), "{wl}");

    // The provisioner: a node, then Provisioned.
    let node = "kwok-provreq-0";
    add_node(c, node);
    answer(c, &ns, &pr_name, "Provisioned", "capacity is provisioned");
    let wl = wait_for(WAIT, "the Workload admitted", || {
        workload_of(c, &ns, "provisioned").filter(|w| is_true(w, "Admitted"))
    });
    let st = check_state(&wl).unwrap();
    assert_eq!(st["state"], "Ready");
    assert_eq!(st["message"], "capacity is provisioned");
    assert_eq!(
        st["podSetUpdates"],
        json!([{"name": "main", "annotations": {
            "autoscaling.x-k8s.io/consume-provisioning-request": pr_name,
            "autoscaling.x-k8s.io/provisioning-class-name": CLASS}}])
    );
    let pod = wait_for(WAIT, "the pod on the new node", || {
        let p = get(c, &["pods", "-n", &ns, "-l", "job-name=provisioned"])?;
        p["items"]
            .as_array()?
            .iter()
            .find(|p| p["spec"]["nodeName"] == node)
            .cloned()
    });
    assert_eq!(
        pod["metadata"]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"],
        pr_name.as_str()
    );
    wait_for(Duration::from_secs(180), "the Job to complete", || {
        jobs(c, &ns)
            .into_iter()
            .find(|j| j.0 == "provisioned" && j.2)
    });

    // Failed: Retry with the config's backoff, then a second attempt.
    create(c, &job("failing", &ns, "lq", "1", "3s", json!({})));
    let wl = wait_for(WAIT, "the second reservation", || {
        let wl = workload_of(c, &ns, "failing")?;
        (is_true(&wl, "QuotaReserved") && check_state(&wl)?["state"] == "Pending").then_some(wl)
    });
    let wl_name = wl["metadata"]["name"].as_str().unwrap().to_string();
    let first = format!("{wl_name}-{CHECK}-1");
    wait_for(WAIT, "the first request", || request(c, &ns, &first));
    answer(c, &ns, &first, "Failed", "no capacity");
    let wl = wait_for(WAIT, "the check reset after the retry", || {
        let wl = workload_of(c, &ns, "failing")?;
        (check_state(&wl)?["retryCount"] == 1).then_some(wl)
    });
    let st = check_state(&wl).unwrap();
    assert_eq!(st["requeueAfterSeconds"], 1, "{st}");
    assert_eq!(
        wl["status"]["schedulingStats"]["evictions"][0]["reason"],
        "AdmissionCheck"
    );
    let evicted = condition(&wl, "Evicted").unwrap()["message"].clone();
    let said = "Evicted due to AdmissionCheck in Retry state: \"e2e-prov\" (Retrying after failure: no capacity)";
    assert!(
        evicted == said || evicted == format!("Previously: {said}").as_str(),
        "{evicted}"
    );
    let second = format!("{wl_name}-{CHECK}-2");
    wait_for(WAIT, "the second attempt's request", || {
        request(c, &ns, &second)
    });
    wait_for(WAIT, "the first request deleted", || {
        request(c, &ns, &first).is_none().then_some(())
    });
    let wl = workload_of(c, &ns, "failing").unwrap();
    assert!(is_true(&wl, "QuotaReserved"), "{wl}");

    // Past backoffLimitCount: Rejected, the Workload deactivated.
    answer(c, &ns, &second, "Failed", "still no capacity");
    let wl = wait_for(WAIT, "the deactivation", || {
        let wl = workload_of(c, &ns, "failing")?;
        (wl["spec"]["active"] == false
            && condition(&wl, "Evicted")?["reason"] == "DeactivatedDueToAdmissionCheck")
            .then_some(wl)
    });
    assert_eq!(
        condition(&wl, "Evicted").unwrap()["message"],
        format!("The workload is deactivated due to AdmissionCheck in Rejected state: \"{CHECK}\" (still no capacity)")
    );
    let (ok, out, err) = kubectl(c, &["delete", "node", node], None);
    assert!(ok, "{out}{err}");
}
