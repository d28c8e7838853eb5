//! Workload lifecycle rules that need a cluster of their own, on the
//! local control plane and read back with kubectl:
//! - waitForPodsReady's `blockAdmission` (it holds every admission of the
//!   cluster while one admitted Workload is not ready, so no other binary's
//!   tests may share it), following Kueue v0.19.2
//!   test/integration/singlecluster/scheduler/podsready/scheduler_test.go.
//!   The Workloads made directly play a user creating them; nothing
//!   reports their pods, so they are never ready;
//! - a suspended Job whose container request changes: kube-apiserver
//!   v1.35 allows that only with its `MutablePodResourcesForSuspendedJobs`
//!   gate (alpha), turned on for this cluster alone.

mod support;

use std::time::Duration;

use batchgate_localcluster::{shared_with, ClusterOptions};
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

const CONFIG: &str = "waitForPodsReady:\n  timeout: 10m\n  blockAdmission: true\n";

/// The binary's cluster (with the apiserver gate) and batchgate.
fn cluster() -> &'static batchgate_localcluster::LocalCluster {
    shared_with(|| ClusterOptions {
        extra_apiserver_args: vec![
            "--feature-gates=MutablePodResourcesForSuspendedJobs=true".into()
        ],
        ..ClusterOptions::default()
    });
    env_with(CONFIG).cluster
}
const WAIT: Duration = Duration::from_secs(90);

fn direct_workload(name: &str, ns: &str, queue: &str, cpu: &str) -> String {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1,
               "template": {"spec": {"restartPolicy": "Never", "containers": [{
                   "name": "c", "image": "busybox",
                   "resources": {"requests": {"cpu": cpu}}}]}}}]}})
    .to_string()
}

fn workload(c: &batchgate_localcluster::LocalCluster, ns: &str, name: &str) -> Option<Value> {
    get(c, &["workloads.kueue.x-k8s.io", name, "-n", ns])
}

/// `(status, reason, message)` of the QuotaReserved condition.
fn quota_reserved(wl: &Value) -> Option<(String, String, String)> {
    let c = condition(wl, "QuotaReserved")?;
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Some((s(&c["status"]), s(&c["reason"]), s(&c["message"])))
}

/// One test, its steps in order (each leaves nothing admitted behind):
/// - "Should unblock admission of new workloads once the admitted workload
///   is deleted": prod-wl is admitted in one ClusterQueue; dev-wl, with
///   room in another, waits with QuotaReserved=False, reason `Waiting`
///   ("waiting for all admitted workloads to be in PodsReady condition",
///   the legacy reason while the observability gate is off); prod-wl
///   deleted, dev-wl is admitted.
/// - the same with Jobs whose pods do become ready (KWOK): a second Job
///   is admitted once the first one's Workload is `PodsReady=True`.
#[test]
fn block_admission_holds_new_workloads_until_the_admitted_ones_are_ready() {
    let c = cluster();
    let ns = namespace(c, "e2e-block-admission");
    apply(c, &flavor("block-rf", json!({})));
    for q in ["prod", "dev"] {
        apply(
            c,
            &cluster_queue(
                &format!("block-{q}-cq"),
                &[("block-rf", "5", None)],
                json!({}),
            ),
        );
        apply(c, &local_queue(&ns, q, &format!("block-{q}-cq")));
    }

    create(c, &direct_workload("prod-wl", &ns, "prod", "2"));
    wait_for(WAIT, "prod-wl admitted", || {
        workload(c, &ns, "prod-wl").filter(|w| is_true(w, "QuotaReserved"))
    });
    create(c, &direct_workload("dev-wl", &ns, "dev", "2"));
    let dev = wait_for(WAIT, "dev-wl waiting", || {
        workload(c, &ns, "dev-wl").filter(|w| quota_reserved(w).is_some())
    });
    assert_eq!(
        quota_reserved(&dev).unwrap(),
        (
            "False".to_string(),
            "Waiting".to_string(),
            "waiting for all admitted workloads to be in PodsReady condition".to_string()
        ),
        "{dev}"
    );
    // Held, not just slow: still waiting a while later.
    std::thread::sleep(Duration::from_secs(3));
    let dev = workload(c, &ns, "dev-wl").unwrap();
    assert!(!is_true(&dev, "QuotaReserved"), "{dev}");

    let (ok, out, err) = kubectl(
        c,
        &["delete", "workloads.kueue.x-k8s.io", "prod-wl", "-n", &ns],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "dev-wl admitted once prod-wl is gone", || {
        workload(c, &ns, "dev-wl").filter(|w| is_true(w, "QuotaReserved"))
    });
    let (ok, out, err) = kubectl(
        c,
        &["delete", "workloads.kueue.x-k8s.io", "dev-wl", "-n", &ns],
        None,
    );
    assert!(ok, "{out}{err}");

    // Jobs whose pods become ready: one after the other.
    create(c, &job("first", &ns, "prod", "1", "600s", json!({})));
    create(c, &job("second", &ns, "dev", "1", "600s", json!({})));
    let first_ready = wait_for(WAIT, "one Job's Workload PodsReady=True", || {
        ["first", "second"]
            .into_iter()
            .find_map(|j| workload_of(c, &ns, j).filter(|w| is_true(w, "PodsReady")))
    });
    let both = wait_for(WAIT, "both admitted, one after the other", || {
        let a = workload_of(c, &ns, "first")?;
        let b = workload_of(c, &ns, "second")?;
        (is_true(&a, "Admitted") && is_true(&b, "Admitted")).then_some((a, b))
    });
    // The later admission came after the earlier Workload was ready.
    let admitted_at = |w: &Value| {
        condition(w, "Admitted").unwrap()["lastTransitionTime"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let ready_at = condition(&first_ready, "PodsReady").unwrap()["lastTransitionTime"]
        .as_str()
        .unwrap()
        .to_string();
    let later = std::cmp::max(admitted_at(&both.0), admitted_at(&both.1));
    assert!(
        later >= ready_at,
        "admitted at {later}, before the other was ready at {ready_at}"
    );
}

/// Kueue v0.19.2 jobframework `EquivalentToWorkload` (pod sets compared by
/// count, minCount, containers, init containers and tolerations;
/// pkg/util/equality/podset.go) and `updateWorkloadToMatchJob`: a
/// suspended, pending Job whose container's cpu request changes has its
/// Workload (holding no quota) updated in place to ask for the new
/// request, with Kueue's `UpdatedWorkload` event; once the request fits,
/// it is admitted and runs. Its own ClusterQueue (1 cpu), so nothing here
/// is admitted until then.
#[test]
fn a_suspended_jobs_new_container_request_reaches_its_workload() {
    let c = cluster();
    let ns = namespace(c, "e2e-request-change");
    apply(c, &flavor("request-rf", json!({})));
    apply(
        c,
        &cluster_queue("request-cq", &[("request-rf", "1", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "request-cq"));
    create(c, &job("resized", &ns, "lq", "2", "1s", json!({})));
    let cpu_of = |w: &Value| {
        w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let first = wait_for(WAIT, "resized's Workload, pending", || {
        workload_of(c, &ns, "resized").filter(|w| condition(w, "QuotaReserved").is_some())
    });
    assert_eq!(cpu_of(&first), "2", "{first}");
    assert!(
        !is_true(&first, "QuotaReserved"),
        "2 cpu do not fit in 1: {first}"
    );
    let path = "/spec/template/spec/containers/0/resources/requests/cpu";
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "job",
            "resized",
            "-n",
            &ns,
            "--type=json",
            "-p",
            &json!([{"op": "replace", "path": path, "value": "500m"}]).to_string(),
        ],
        None,
    );
    assert!(ok, "the apiserver refused the request change: {out}{err}");
    let updated = wait_for(WAIT, "the Workload asking for 500m", || {
        workload_of(c, &ns, "resized").filter(|w| cpu_of(w) == "500m")
    });
    assert_eq!(
        updated["metadata"]["uid"], first["metadata"]["uid"],
        "updated in place: {updated}"
    );
    let selector = "involvedObject.name=resized,reason=UpdatedWorkload";
    let ev = wait_for(WAIT, "the UpdatedWorkload event", || {
        get(c, &["events", "-n", &ns, "--field-selector", selector])
            .and_then(|l| l["items"].as_array()?.first().cloned())
    });
    let name = updated["metadata"]["name"].as_str().unwrap();
    assert_eq!(
        ev["message"],
        format!("Updated not matching Workload for suspended job: {ns}/{name}"),
        "{ev}"
    );
    wait_for(WAIT, "resized admitted and done", || {
        workload_of(c, &ns, "resized").filter(|w| is_true(w, "Finished"))
    });
}
