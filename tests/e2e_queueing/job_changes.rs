//! A Job's Workload following the Job's changes (issue 43), as Kueue
//! v0.19.2's `ensureOneWorkload` and `EquivalentToWorkload`
//! (pkg/controller/jobframework/reconciler.go; compared: count, minCount,
//! containers, init containers, and tolerations unless admitted). Real
//! Jobs run by kube-controller-manager on KWOK nodes; nothing is played.

use std::time::Duration;

use batchgate_localcluster::{LocalCluster, POD_RUNTIME_ANNOTATION};
use serde_json::{json, Value};

use crate::support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

/// A queued Job of `parallelism` pods out of `completions`, each asking for
/// `cpu` and running `runtime`.
fn job(
    name: &str,
    ns: &str,
    cpu: &str,
    parallelism: u32,
    completions: u32,
    runtime: &str,
) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"parallelism": parallelism, "completions": completions, "backoffLimit": 0,
                 "template": {
                    "metadata": {"annotations": {POD_RUNTIME_ANNOTATION: runtime}},
                    "spec": {"restartPolicy": "Never",
                             "containers": [{"name": "main", "image": "busybox",
                                             "resources": {"requests": {"cpu": cpu}}}]}}}
    })
}

fn patch(c: &LocalCluster, ns: &str, what: &str, p: &Value) {
    let p = p.to_string();
    let (ok, out, err) = kubectl(
        c,
        &["patch", "-n", ns, what, "--type=merge", "-p", &p],
        None,
    );
    assert!(ok, "{out}{err}");
}

/// The first event of `reason` on the Job.
fn job_event(c: &LocalCluster, ns: &str, job: &str, reason: &str) -> Value {
    let selector = format!("involvedObject.kind=Job,involvedObject.name={job},reason={reason}");
    wait_for(Duration::from_secs(60), reason, || {
        get(c, &["events", "-n", ns, "--field-selector", &selector])
            .and_then(|l| l["items"].as_array()?.first().cloned())
    })
}

/// Kueue v0.19.2 test/integration/singlecluster/controller/jobs/job/
/// job_controller_test.go, "checking the job gets suspended when
/// parallelism changes and the added node selectors are removed" and
/// "checking the workload is updated with new count": a running Job whose
/// parallelism grows (not elastic) is stopped, its Workload deleted
/// ("Deleted not matching Workload"), and a new one of the new count made,
/// admitted, and the Job started again on the flavor's nodes.
#[test]
fn a_running_jobs_new_parallelism_replaces_its_workload() {
    let c = super::env().cluster;
    let ns = namespace(c, "e2e-job-rescaled");
    apply(
        c,
        &flavor("rescaled-flavor", json!({"instance-type": "on-demand"})),
    );
    apply(
        c,
        &cluster_queue("rescaled-cq", &[("rescaled-flavor", "4", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "rescaled-cq"));
    create(c, &job("grown", &ns, "1", 1, 4, "1h").to_string());
    let first = wait_for(Duration::from_secs(60), "the Job admitted", || {
        workload_of(c, &ns, "grown").filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(first["spec"]["podSets"][0]["count"], 1);
    wait_for(Duration::from_secs(60), "the Job running", || {
        let j = get(c, &["job", "grown", "-n", &ns])?;
        (j["spec"]["suspend"] == false && j["status"]["active"] == 1).then_some(())
    });
    patch(c, &ns, "job/grown", &json!({"spec": {"parallelism": 2}}));
    let stopped = job_event(c, &ns, "grown", "Stopped");
    assert_eq!(
        stopped["message"],
        "No matching Workload; restoring pod templates according to existent Workload",
        "{stopped}"
    );
    let deleted = job_event(c, &ns, "grown", "DeletedWorkload");
    assert_eq!(
        deleted["message"],
        format!(
            "Deleted not matching Workload: {ns}/{}",
            first["metadata"]["name"].as_str().unwrap()
        ),
        "{deleted}"
    );
    let second = wait_for(
        Duration::from_secs(60),
        "a new Workload of two pods admitted",
        || {
            workload_of(c, &ns, "grown").filter(|w| {
                w["metadata"]["uid"] != first["metadata"]["uid"]
                    && w["spec"]["podSets"][0]["count"] == 2
                    && is_true(w, "Admitted")
            })
        },
    );
    assert_eq!(
        second["status"]["admission"]["podSetAssignments"][0]["count"], 2,
        "{second}"
    );
    let j = wait_for(Duration::from_secs(60), "the Job running two pods", || {
        get(c, &["job", "grown", "-n", &ns])
            .filter(|j| j["spec"]["suspend"] == false && j["status"]["active"] == 2)
    });
    assert_eq!(
        j["spec"]["template"]["spec"]["nodeSelector"]["instance-type"], "on-demand",
        "{j}"
    );
    let all = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns]).unwrap();
    assert_eq!(all["items"].as_array().map(Vec::len), Some(1), "{all}");
    let (ok, out, err) = kubectl(
        c,
        &["delete", "job", "grown", "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{out}{err}");
}

/// A pending (suspended, not admitted) Job's new tolerations reach its
/// Workload, updated in place with Kueue's event, and stay on the Job:
/// Kueue compares tolerations until a Workload is admitted
/// (pkg/util/equality/podset.go `comparePodTemplate`).
#[test]
fn a_pending_jobs_new_tolerations_reach_its_workload() {
    let c = super::env().cluster;
    let ns = namespace(c, "e2e-job-tolerant");
    apply(c, &flavor("tolerant-flavor", json!({})));
    apply(
        c,
        &cluster_queue("tolerant-cq", &[("tolerant-flavor", "1", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "tolerant-cq"));
    // Two cpu against a quota of one: it waits.
    create(c, &job("waiting", &ns, "2", 1, 1, "1s").to_string());
    let wl = wait_for(Duration::from_secs(60), "the pending Workload", || {
        workload_of(c, &ns, "waiting").filter(|w| condition(w, "QuotaReserved").is_some())
    });
    assert!(!is_true(&wl, "QuotaReserved"), "{wl}");
    let toleration = json!({"key": "e2e.batchgate.dev/spot", "operator": "Exists",
                            "effect": "NoSchedule"});
    patch(
        c,
        &ns,
        "job/waiting",
        &json!({"spec": {"template": {"spec": {"tolerations": [toleration]}}}}),
    );
    let updated = wait_for(
        Duration::from_secs(60),
        "the Workload's template with the toleration",
        || {
            workload_of(c, &ns, "waiting").filter(|w| {
                w["spec"]["podSets"][0]["template"]["spec"]["tolerations"][0]["key"]
                    == toleration["key"]
            })
        },
    );
    assert_eq!(
        updated["metadata"]["uid"], wl["metadata"]["uid"],
        "updated in place"
    );
    let ev = job_event(c, &ns, "waiting", "UpdatedWorkload");
    assert_eq!(
        ev["message"],
        format!(
            "Updated not matching Workload for suspended job: {ns}/{}",
            wl["metadata"]["name"].as_str().unwrap()
        ),
        "{ev}"
    );
    // Not put back: a few passes later the Job still has it.
    std::thread::sleep(Duration::from_secs(3));
    let j = get(c, &["job", "waiting", "-n", &ns]).unwrap();
    assert_eq!(
        j["spec"]["template"]["spec"]["tolerations"][0]["key"], toleration["key"],
        "{j}"
    );
    let (ok, out, err) = kubectl(
        c,
        &["delete", "job", "waiting", "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{out}{err}");
}
