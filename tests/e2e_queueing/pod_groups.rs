//! Plain pods and pod groups under Kueue's Workload deadlines and
//! preemption (issue 43), on the binary's waitForPodsReady settings. The
//! pods are real pods on KWOK nodes; nothing is played.

use std::time::Duration;

use batchgate_localcluster::{LocalCluster, POD_RUNTIME_ANNOTATION};
use serde_json::{json, Value};

use crate::support::{e2e::namespace, queueing::*};

/// A queued pod asking for `cpu`, running `runtime` once placed; in group
/// `group` of `total` when given.
fn pod(name: &str, ns: &str, cpu: &str, runtime: &str, group: Option<(&str, u32)>) -> Value {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                     "annotations": {POD_RUNTIME_ANNOTATION: runtime}},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "busybox", "command": ["true"],
                                 "resources": {"requests": {"cpu": cpu}}}]}
    });
    if let Some((g, total)) = group {
        p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = json!(g);
        p["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] =
            json!(total.to_string());
    }
    p
}

fn workload(c: &LocalCluster, ns: &str, name: &str) -> Option<Value> {
    get(c, &["workloads.kueue.x-k8s.io", name, "-n", ns])
}

fn pods(c: &LocalCluster, ns: &str) -> Vec<Value> {
    get(c, &["pods", "-n", ns])
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

fn setup(c: &LocalCluster, prefix: &str, nominal: &str, extra: Value) -> String {
    let ns = namespace(c, &format!("e2e-{prefix}"));
    apply(c, &flavor(&format!("{prefix}-flavor"), json!({})));
    apply(
        c,
        &cluster_queue(
            &format!("{prefix}-cq"),
            &[(&format!("{prefix}-flavor"), nominal, None)],
            extra,
        ),
    );
    apply(c, &local_queue(&ns, "lq", &format!("{prefix}-cq")));
    ns
}

/// waitForPodsReady for a pod group, as Kueue's pod integration reads it
/// (`PodsReady`: the group's pods all there and all `Ready`; v0.19.2
/// `pod_controller.go` `PodsReady`, its table ported in
/// `jobs::machine::pods`): two pods that no node can take are admitted and
/// ungated, the Workload gets `PodsReady=False` (`WaitForStart`), is
/// evicted for `PodsReadyTimeout` with Kueue's event, and, a pod not being
/// suspendable, the pods are deleted and the quota given back.
#[test]
fn a_pod_group_never_ready_is_evicted_for_the_pods_ready_timeout() {
    let c = super::env().cluster;
    let ns = setup(c, "group-ready", "4", json!({}));
    for name in ["stuck-0", "stuck-1"] {
        let mut p = pod(name, &ns, "1", "1h", Some(("stuck", 2)));
        p["spec"]["nodeSelector"] = json!({"e2e.batchgate.dev/nowhere": "true"});
        create(c, &p.to_string());
    }
    let w = wait_for(
        Duration::from_secs(90),
        "the group's Workload admitted with PodsReady=False",
        || {
            workload(c, &ns, "stuck")
                .filter(|w| is_true(w, "Admitted") && condition(w, "PodsReady").is_some())
        },
    );
    super::waiting_for_start(&w);
    let ungated = pods(c, &ns);
    assert!(
        ungated.len() == 2
            && ungated.iter().all(|p| p["spec"]["schedulingGates"]
                .as_array()
                .is_none_or(|g| g.is_empty())),
        "{ungated:?}"
    );
    super::pods_ready_timeout_event(c, &ns, &w);
    wait_for(Duration::from_secs(60), "the group's pods deleted", || {
        pods(c, &ns).is_empty().then_some(())
    });
    let (_, reserving, admitted, _) =
        wait_for(Duration::from_secs(60), "the quota given back", || {
            cq_counts(c, "group-ready-cq").filter(|s| s.1 == 0)
        });
    assert_eq!((reserving, admitted), (0, 0));
}

/// A single pod's `kueue.x-k8s.io/max-exec-time-seconds` (Kueue v0.19.2
/// test/integration/singlecluster/controller/jobs/pod/pod_controller_test.go
/// runs the maximum execution time through the pod's jobframework
/// reconciler as for any job): its Workload, which the pod controls, is
/// marked `DeactivationTarget`, deactivated, evicted
/// `DeactivatedDueToMaximumExecutionTimeExceeded`, and the pod deleted.
#[test]
fn a_single_pods_maximum_execution_time_deactivates_it() {
    let c = super::env().cluster;
    let ns = setup(c, "pod-max-exec", "2", json!({}));
    let mut p = pod("timed", &ns, "1", "1h", None);
    p["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = json!("3");
    create(c, &p.to_string());
    let wl = || {
        let list = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])?;
        list["items"].as_array()?.first().cloned()
    };
    let w = wait_for(Duration::from_secs(60), "the pod's Workload", || {
        wl().filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(w["spec"]["maximumExecutionTimeSeconds"], 3, "{w}");
    let name = w["metadata"]["name"].as_str().unwrap().to_string();
    // Read from the events: the Workload goes (garbage collected) with the
    // pod that owns it.
    let event = |reason: &str| {
        let selector = format!("involvedObject.name={name},reason={reason}");
        wait_for(Duration::from_secs(60), reason, || {
            get(c, &["events", "-n", &ns, "--field-selector", &selector])
                .and_then(|l| l["items"].as_array()?.first().cloned())
        })
    };
    let ev = event("MaximumExecutionTimeExceeded");
    assert_eq!(
        ev["message"], "The maximum execution time (3s) exceeded",
        "{ev}"
    );
    let ev = event("EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded");
    assert_eq!(
        ev["message"], "The workload is deactivated due to exceeding the maximum execution time",
        "{ev}"
    );
    wait_for(Duration::from_secs(60), "the pod deleted", || {
        pods(c, &ns).is_empty().then_some(())
    });
}

/// A running pod group preempted by a higher-priority Job: its pods are
/// deleted and its quota is released only once they are gone (Kueue's
/// jobframework stops the job, then clears the reservation), so the
/// preemptor never runs beside them over the quota.
#[test]
fn a_preempted_pod_groups_pods_are_stopped_before_its_quota_goes() {
    let c = super::env().cluster;
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: group-low}\nvalue: 100\n");
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: group-high}\nvalue: 1000\n");
    let ns = setup(
        c,
        "group-preempt",
        "2",
        json!({"preemption": {"withinClusterQueue": "LowerPriority"}}),
    );
    for name in ["low-0", "low-1"] {
        let mut p = pod(name, &ns, "1", "1h", Some(("low", 2)));
        p["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!("group-low");
        create(c, &p.to_string());
    }
    wait_for(Duration::from_secs(90), "the group running", || {
        let all = pods(c, &ns);
        (all.len() == 2 && all.iter().all(|p| p["status"]["phase"] == "Running")).then_some(())
    });
    create(
        c,
        &job(
            "high",
            &ns,
            "lq",
            "2",
            "2s",
            json!({"kueue.x-k8s.io/priority-class": "group-high"}),
        ),
    );
    let w = wait_for(
        Duration::from_secs(60),
        "the group's Workload preempted",
        || workload(c, &ns, "low").filter(|w| is_true(w, "Preempted")),
    );
    assert_eq!(
        condition(&w, "Evicted").unwrap()["reason"],
        "Preempted",
        "{w}"
    );
    // From the eviction on, never the high Job's pod beside a group pod
    // still running, until the group's pods are gone.
    wait_for(Duration::from_secs(60), "the group's pods deleted", || {
        let all = pods(c, &ns);
        let running = |p: &Value| {
            p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null()
        };
        let group_running = all
            .iter()
            .filter(|p| p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == "low")
            .any(running);
        let high_placed = all.iter().any(|p| {
            p["metadata"]["labels"]["job-name"] == "high" && !p["spec"]["nodeName"].is_null()
        });
        let seen: Vec<String> = all
            .iter()
            .map(|p| {
                format!(
                    "{} {} on {} deleting={}",
                    p["metadata"]["name"],
                    p["status"]["phase"],
                    p["spec"]["nodeName"],
                    !p["metadata"]["deletionTimestamp"].is_null()
                )
            })
            .collect();
        assert!(
            !(group_running && high_placed),
            "the preemptor was placed while the group still ran: {seen:?}"
        );
        (!all
            .iter()
            .any(|p| p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == "low"))
        .then_some(())
    });
    wait_for(Duration::from_secs(60), "the high Job to succeed", || {
        let j = get(c, &["job", "high", "-n", &ns])?;
        (j["status"]["succeeded"] == 1).then_some(())
    });
}
