//! Workload lifecycle rules where batchgate once differed from Kueue
//! v0.19.2 (issue 43), each following the upstream test named on it, on
//! the local control plane and read back with kubectl: the finalizer a
//! ClusterQueue or ResourceFlavor is created with, the pending reason of a
//! namespace its ClusterQueue does not select, the maximum execution time
//! of a Workload made without a job, reclaimable pods of a Workload that
//! waits, a WorkloadPriorityClass whose value changes, and a running Job
//! moved to another priority class. Workloads made here without a job play
//! the part of a user (or another controller) creating them directly.

use super::*;

const FIN: &str = "kueue.x-k8s.io/resource-in-use";

/// A Workload created directly: pod sets of (name, count, cpu per pod).
fn direct_workload(
    name: &str,
    ns: &str,
    queue: &str,
    sets: &[(&str, u32, &str)],
    spec: Value,
) -> String {
    let pod_sets: Vec<Value> = sets
        .iter()
        .map(|(n, count, cpu)| {
            json!({"name": n, "count": count, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox",
                                "resources": {"requests": {"cpu": cpu}}}]}}})
        })
        .collect();
    let mut s = json!({"queueName": queue, "podSets": pod_sets});
    if let (Value::Object(m), Value::Object(extra)) = (&mut s, spec) {
        m.extend(extra);
    }
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": name, "namespace": ns}, "spec": s})
    .to_string()
}

/// A namespace `ns` with LocalQueue `lq` into ClusterQueue `cq` (its own
/// flavor, `cpu` of quota, `extra` spec fields); the namespace's name.
fn queue(c: &LocalCluster, ns: &str, cq: &str, cpu: &str, extra: Value) -> String {
    let ns = namespace(c, ns);
    let rf = format!("{cq}-rf");
    apply(c, &flavor(&rf, json!({})));
    apply(c, &cluster_queue(cq, &[(&rf, cpu, None)], extra));
    apply(c, &local_queue(&ns, "lq", cq));
    ns
}

fn priority_class(c: &LocalCluster, name: &str, value: i32) {
    apply(
        c,
        &format!("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}\n"),
    );
}

fn workload(c: &LocalCluster, ns: &str, name: &str) -> Option<Value> {
    get(c, &["workloads.kueue.x-k8s.io", name, "-n", ns])
}

fn kubectl_ok(c: &LocalCluster, args: &[&str], stdin: Option<&str>) -> String {
    let (ok, out, err) = kubectl(c, args, stdin);
    assert!(ok, "kubectl {args:?}: {out}{err}");
    out
}

/// Kueue v0.19.2 test/integration/singlecluster/webhook/core/
/// clusterqueue_test.go ("Defaulting on creation": every entry is created
/// with `kueue.x-k8s.io/resource-in-use`) and resourceflavor_test.go
/// ("Should have a finalizer", read right after the create): the object
/// the create returns carries the finalizer already, so a ClusterQueue
/// used at once cannot be deleted outright before the reconciler sees it.
/// A finalizer of the user's own is kept, Kueue's after it.
#[test]
fn cluster_queues_and_flavors_carry_the_finalizer_from_their_create() {
    let c = env_with(CONFIG).cluster;
    let made = [
        ("resourceflavor", flavor("defaulted-rf", json!({}))),
        (
            "clusterqueue",
            cluster_queue("defaulted-cq", &[("defaulted-rf", "1", None)], json!({})),
        ),
    ];
    for (kind, manifest) in made {
        let out = kubectl_ok(c, &["create", "-f", "-", "-o", "json"], Some(&manifest));
        let created: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(finalizers_of(&created), [FIN], "{kind}: {created}");
    }
    let mut theirs: Value =
        serde_json::from_str(&flavor("defaulted-rf-theirs", json!({}))).unwrap();
    theirs["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let out = kubectl_ok(
        c,
        &["create", "-f", "-", "-o", "json"],
        Some(&theirs.to_string()),
    );
    let created: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        finalizers_of(&created),
        ["example.com/keep", FIN],
        "{created}"
    );
    // Let the flavor go: the example finalizer is the test's own.
    kubectl_ok(
        c,
        &[
            "patch",
            "resourceflavor",
            "defaulted-rf-theirs",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers/0"}]"#,
        ],
        None,
    );
}

/// Kueue v0.19.2 pkg/scheduler/scheduler_test.go ("failed to match
/// clusterQueue selector"): a Job in a namespace its ClusterQueue's
/// selector does not select waits with QuotaReserved=False, reason
/// `Pending` (the scheduler's word while the unadmitted-workloads
/// observability gate is off, its default), "workload namespace doesn't
/// match ClusterQueue selector"; once the namespace is labelled, it runs.
#[test]
fn a_job_in_a_namespace_its_cluster_queue_does_not_select_is_pending() {
    let c = env_with(CONFIG).cluster;
    let ns = queue(
        c,
        "e2e-ns-unselected",
        "ns-selector-cq",
        "2",
        json!({"namespaceSelector": {"matchLabels": {"e2e-selected": "yes"}}}),
    );
    create(c, &job("unselected", &ns, "lq", "1", "2s", json!({})));
    let wl = wait_for(SHORT, "the namespace mismatch on QuotaReserved", || {
        workload_of(c, &ns, "unselected").filter(|w| condition(w, "QuotaReserved").is_some())
    });
    assert_eq!(
        condition_of(&wl, "QuotaReserved").unwrap(),
        (
            "False".to_string(),
            "Pending".to_string(),
            "workload namespace doesn't match ClusterQueue selector".to_string()
        ),
        "{wl}"
    );
    kubectl_ok(c, &["label", "namespace", &ns, "e2e-selected=yes"], None);
    wait_for(LONG, "unselected admitted once its namespace is", || {
        workload_of(c, &ns, "unselected").filter(|w| is_true(w, "QuotaReserved"))
    });
}

/// Kueue v0.19.2 test/integration/singlecluster/controller/core/
/// workload_controller_test.go ("the workload has a maximum execution time
/// set": "should deactivate the workload when the time expires"): a
/// Workload created directly, with no job, admitted with a maximum of 2 s,
/// is deactivated once they are up and evicted for that cause; with no job
/// to stop, its quota goes back in the same write.
#[test]
fn a_workload_made_without_a_job_is_deactivated_past_its_maximum_execution_time() {
    let c = env_with(CONFIG).cluster;
    let cq = "jobless-exec-cq";
    let ns = queue(c, "e2e-jobless-max-exec", cq, "2", json!({}));
    create(
        c,
        &direct_workload(
            "wl",
            &ns,
            "lq",
            &[("main", 1, "1")],
            json!({"maximumExecutionTimeSeconds": 2}),
        ),
    );
    wait_for(SHORT, "wl admitted and active", || {
        workload(c, &ns, "wl").filter(|w| is_true(w, "Admitted") && w["spec"]["active"] != false)
    });
    let wl = wait_for(SHORT, "wl deactivated and its quota released", || {
        workload(c, &ns, "wl").filter(|w| {
            w["spec"]["active"] == false
                && condition_of(w, "QuotaReserved").is_some_and(|(st, ..)| st == "False")
        })
    });
    assert_eq!(
        condition_of(&wl, "Evicted").unwrap(),
        (
            "True".to_string(),
            "DeactivatedDueToMaximumExecutionTimeExceeded".to_string(),
            "The workload is deactivated due to exceeding the maximum execution time".to_string()
        ),
        "{wl}"
    );
    assert!(condition(&wl, "DeactivationTarget").is_none(), "{wl}");
    let selector = "involvedObject.name=wl,reason=MaximumExecutionTimeExceeded";
    let ev = wait_for(SHORT, "the MaximumExecutionTimeExceeded event", || {
        get(c, &["events", "-n", &ns, "--field-selector", selector])
            .and_then(|l| l["items"].as_array()?.first().cloned())
    });
    assert_eq!(
        (s(&ev["type"]), s(&ev["message"])),
        (
            "Warning".to_string(),
            "The maximum execution time (2s) exceeded".to_string()
        ),
        "{ev}"
    );
    wait_for(SHORT, "the ClusterQueue's quota given back", || {
        cpu_usage(c, cq).filter(|(total, _)| total == "0")
    });
}

/// Kueue v0.19.2 test/integration/singlecluster/scheduler/scheduler_test.go
/// ("Should admit workloads when resources are dynamically reclaimed"),
/// with Workloads made directly as there: first-wl (3 pods of 1 cpu) is
/// admitted and reclaims one pod; second-wl, of higher priority, preempts
/// it. first-wl then asks only for the 2 pods it still needs, and once
/// second-wl reclaims two of its pods the two run side by side on 3 cpu.
#[test]
fn a_waiting_workload_asks_only_for_the_pods_it_has_not_reclaimed() {
    let c = env_with(CONFIG).cluster;
    let cq = "reclaim-pending-cq";
    let preempt = json!({"preemption": {"withinClusterQueue": "LowerPriority"}});
    let ns = queue(c, "e2e-reclaim-pending", cq, "3", preempt);
    let sets = [("first", 1, "1"), ("second", 1, "1"), ("third", 1, "1")];
    let reclaim = |name: &str, pods: Value| {
        kubectl_ok(
            c,
            &[
                "patch",
                "workloads.kueue.x-k8s.io",
                name,
                "-n",
                &ns,
                "--subresource=status",
                "--type=merge",
                "-p",
                &json!({"status": {"reclaimablePods": pods}}).to_string(),
            ],
            None,
        );
    };
    create(c, &direct_workload("first-wl", &ns, "lq", &sets, json!({})));
    wait_for(SHORT, "first-wl admitted", || {
        workload(c, &ns, "first-wl").filter(|w| is_true(w, "Admitted"))
    });
    reclaim("first-wl", json!([{"name": "third", "count": 1}]));
    wait_for(SHORT, "first-wl holding 2 cpu", || {
        cpu_usage(c, cq).filter(|(total, _)| total == "2")
    });
    create(
        c,
        &direct_workload("second-wl", &ns, "lq", &sets, json!({"priority": 100})),
    );
    wait_for(LONG, "second-wl admitted, first-wl preempted", || {
        let first = workload(c, &ns, "first-wl")?;
        let second = workload(c, &ns, "second-wl")?;
        (is_true(&second, "Admitted")
            && is_true(&first, "Preempted")
            && !is_true(&first, "QuotaReserved"))
        .then_some(())
    });
    // 3 cpu held by second-wl; first-wl needs 2 of them.
    let first = workload(c, &ns, "first-wl").unwrap();
    assert!(!is_true(&first, "QuotaReserved"), "{first}");
    reclaim(
        "second-wl",
        json!([{"name": "first", "count": 1}, {"name": "second", "count": 1}]),
    );
    let first = wait_for(LONG, "first-wl admitted beside second-wl", || {
        workload(c, &ns, "first-wl").filter(|w| is_true(w, "Admitted"))
    });
    assert!(is_true(&workload(c, &ns, "second-wl").unwrap(), "Admitted"));
    let counts: Vec<(String, i64)> = first["status"]["admission"]["podSetAssignments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (s(&a["name"]), a["count"].as_i64().unwrap_or(-1)))
        .collect();
    assert_eq!(
        counts,
        [
            ("first".to_string(), 1),
            ("second".to_string(), 1),
            ("third".to_string(), 0)
        ],
        "{first}"
    );
    wait_for(SHORT, "3 cpu in use", || {
        cpu_usage(c, cq).filter(|(total, _)| total == "3")
    });
}

/// Kueue v0.19.2 test/integration/singlecluster/controller/core/
/// workload_controller_test.go ("changing the priority value of
/// PriorityClass changes the priority of the workload", "case of
/// WorkloadPriorityClass"): 200 → 150 reaches a Workload made directly
/// with the class, and (pkg/controller/core/
/// workloadpriorityclass_controller.go: every Workload naming it) a
/// running Job's Workload too.
#[test]
fn a_priority_class_value_change_reaches_every_workload_naming_it() {
    let c = env_with(CONFIG).cluster;
    let class = "e2e-wpc-value";
    priority_class(c, class, 200);
    let ns = queue(c, "e2e-wpc-value", "wpc-value-cq", "2", json!({}));
    create(
        c,
        &direct_workload(
            "wl",
            &ns,
            "lq",
            &[("main", 1, "1")],
            json!({"priority": 200, "priorityClassRef":
                {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": class}}),
        ),
    );
    create(
        c,
        &job(
            "running",
            &ns,
            "lq",
            "1",
            "600s",
            json!({"kueue.x-k8s.io/priority-class": class}),
        ),
    );
    wait_for(SHORT, "both admitted at 200", || {
        let direct = workload(c, &ns, "wl")?;
        let owned = workload_of(c, &ns, "running")?;
        (is_true(&direct, "Admitted")
            && is_true(&owned, "Admitted")
            && direct["spec"]["priority"] == 200
            && owned["spec"]["priority"] == 200)
            .then_some(())
    });
    kubectl_ok(
        c,
        &[
            "patch",
            "workloadpriorityclass",
            class,
            "--type=merge",
            "-p",
            r#"{"value":150}"#,
        ],
        None,
    );
    wait_for(SHORT, "both Workloads at 150", || {
        let direct = workload(c, &ns, "wl")?;
        let owned = workload_of(c, &ns, "running")?;
        (direct["spec"]["priority"] == 150 && owned["spec"]["priority"] == 150).then_some(())
    });
}

/// Kueue v0.19.2 test/integration/singlecluster/controller/jobs/job/
/// job_controller_test.go ("running workload priority is decreased
/// causing a pending workload to be scheduled and preempt the running
/// one"): three high Jobs for room for two; the second running one is
/// moved to the low class by its label, its Workload follows (class and
/// value), and the waiting third preempts it.
#[test]
fn a_running_job_moved_to_a_lower_class_is_preempted_by_a_waiting_one() {
    let c = env_with(CONFIG).cluster;
    priority_class(c, "e2e-label-low", 100);
    priority_class(c, "e2e-label-high", 1000);
    let preempt = json!({"preemption": {"withinClusterQueue": "LowerPriority"}});
    let ns = queue(c, "e2e-label-priority", "label-priority-cq", "2", preempt);
    let high = json!({"kueue.x-k8s.io/priority-class": "e2e-label-high"});
    for name in ["job-1", "job-2"] {
        create(c, &job(name, &ns, "lq", "1", "600s", high.clone()));
        wait_for(SHORT, &format!("{name} admitted"), || {
            workload_of(c, &ns, name).filter(|w| is_true(w, "Admitted"))
        });
    }
    create(c, &job("job-3", &ns, "lq", "1", "600s", high));
    wait_for(SHORT, "job-3 pending", || {
        workload_of(c, &ns, "job-3").filter(|w| {
            condition_of(w, "QuotaReserved")
                .is_some_and(|(st, r, _)| st == "False" && r == "Pending")
        })
    });
    kubectl_ok(
        c,
        &[
            "label",
            "job",
            "job-2",
            "-n",
            &ns,
            "--overwrite",
            "kueue.x-k8s.io/priority-class=e2e-label-low",
        ],
        None,
    );
    let wl2 = wait_for(SHORT, "job-2's Workload moved to the low class", || {
        workload_of(c, &ns, "job-2").filter(|w| w["spec"]["priority"] == 100)
    });
    assert_eq!(
        wl2["spec"]["priorityClassRef"],
        json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "e2e-label-low"}),
        "{wl2}"
    );
    wait_for(LONG, "job-3 admitted and job-2 preempted", || {
        let wl2 = workload_of(c, &ns, "job-2")?;
        let wl3 = workload_of(c, &ns, "job-3")?;
        (is_true(&wl3, "Admitted") && is_true(&wl2, "Evicted") && is_true(&wl2, "Preempted"))
            .then_some(())
    });
    let wl1 = workload_of(c, &ns, "job-1").unwrap();
    assert!(is_true(&wl1, "Admitted"), "job-1 keeps running: {wl1}");
}
