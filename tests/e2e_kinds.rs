//! Every shipped job kind end to end on the local cluster, with the real
//! apiserver calling batchgate over TLS. No operator for these kinds runs
//! (their CRDs are minimal structural ones from tests/fixtures), so what is
//! checked is what batchgate writes: the object stored suspended, its
//! Workload's pod sets and counts, the object started with the flavor's
//! nodeSelector at every pod template once admitted, and, when its
//! ClusterQueue is drained (HoldAndDrain), suspended again with every
//! template restored.
//!
//! Plain pods and pod groups (the `pod` integration, enabled here through
//! `integrations.frameworks`): created gated, their Workload admitted
//! within quota, ungated onto the flavor's KWOK node, finished, quota
//! returned; an over-quota pod waits gated with Kueue's pending reason.
//!
//! Deployments and StatefulSets (the `deployment` and `statefulset`
//! integrations, also enabled here; KCM's own ReplicaSet and StatefulSet
//! controllers create their pods): a Deployment's pods admitted one by one
//! within quota while it is scaled 0→3→1; a StatefulSet admitted as one
//! serving pod group whose replaced pods are ungated without re-admission.
//!
//! LeaderWorkerSets (the `leaderworkerset.x-k8s.io/leaderworkerset`
//! integration): no LWS controller runs; the test plays it (and its pod
//! webhook), creating the leader and worker StatefulSets an LWS controller
//! would, whose pods KCM's StatefulSet controller creates; one Workload per
//! replica group, admitted within quota, scaled 1→2→1 and deleted.

mod support;

use std::time::Duration;

use batchgate_localcluster::{LocalCluster, POD_RUNTIME_ANNOTATION};
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    kinds::{self, Sample},
    queueing::*,
};

const WAIT: Duration = Duration::from_secs(120);
const ZONE_KEY: &str = "e2e.batchgate.dev/zone";

/// batchgate with every shipped integration on, the pod one included.
fn kinds_env() -> &'static Env {
    // LWS's CRD is there before batchgate starts, so its LeaderWorkerSet
    // watch starts at once (not after a failed list's backoff).
    static LWS_CRD: std::sync::Once = std::sync::Once::new();
    LWS_CRD.call_once(|| install_lws_crd(batchgate_localcluster::shared()));
    let names: Vec<String> = batchgate::jobs::policy::PolicySet::embedded()
        .unwrap()
        .iter()
        .map(|p| format!("{:?}", p.name))
        .collect();
    env_with(&format!(
        "integrations:\n  frameworks: [{}]\n",
        names.join(", ")
    ))
}

fn install_kind_crds(c: &LocalCluster) {
    let file = format!(
        "{}/tests/fixtures/job-kinds-crds.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let (ok, out, err) = kubectl(c, &["apply", "-f", &file], None);
    assert!(ok, "{out}{err}");
    let names: Vec<String> = kinds::all()
        .iter()
        .map(|s| format!("crd/{}.{}", s.resource, s.group))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    c.wait_established(&names, WAIT).unwrap();
}

fn object(c: &LocalCluster, s: &Sample, ns: &str, name: &str) -> Value {
    get(c, &[&format!("{}.{}", s.resource, s.group), name, "-n", ns]).unwrap_or(Value::Null)
}

fn name_of(s: &Sample) -> String {
    format!("{}-train", s.kind.to_lowercase())
}

#[test]
fn every_kind_is_queued_admitted_started_drained_and_restored() {
    let c = batchgate_localcluster::shared();
    install_kind_crds(c);
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-kinds");
    apply(c, &flavor("kinds-zone-a", json!({ZONE_KEY: "zone-a"})));
    let cq = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "kinds-cq"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": "kinds-zone-a", "resources": [
                {"name": "cpu", "nominalQuota": "20"},
                {"name": "memory", "nominalQuota": "20Gi"}]}]}]},
    });
    apply(c, &cq.to_string());
    apply(c, &local_queue(&ns, "research", "kinds-cq"));

    // Created: stored suspended, with a Workload of Kueue's pod sets.
    let samples = kinds::all();
    let mut queued = Vec::new();
    for s in &samples {
        let name = name_of(s);
        // What the apiserver stored, as its create response tells it (the
        // job may be admitted and started a moment later).
        let (ok, out, err) = kubectl(
            c,
            &["create", "-o", "json", "-f", "-"],
            Some(&s.object(&name, &ns, "research").to_string()),
        );
        assert!(ok, "{out}{err}");
        let stored: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            stored.pointer(s.suspend),
            Some(&json!(true)),
            "{} stored without suspend: {stored}",
            s.kind
        );
        queued.push(stored);
    }
    for s in &samples {
        let name = name_of(s);
        let wl = wait_for(WAIT, &format!("{}'s Workload", s.kind), || {
            workload_of(c, &ns, &name)
        });
        let got: Vec<(String, i64)> = wl["spec"]["podSets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap().to_string(),
                    p["count"].as_i64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, i64)> = s
            .pod_sets
            .iter()
            .map(|(n, count, _)| (n.to_string(), *count))
            .collect();
        assert_eq!(got, want, "{} Workload pod sets", s.kind);
        assert_eq!(wl["metadata"]["ownerReferences"][0]["kind"], s.kind);
        assert_eq!(wl["spec"]["queueName"], "research");
    }

    // Admitted: started, every template carrying the flavor's node label
    // and its pod set's label; everything the object had is still there.
    for (s, before) in samples.iter().zip(&queued) {
        let name = name_of(s);
        let started = wait_for(WAIT, &format!("{} started", s.kind), || {
            let o = object(c, s, &ns, &name);
            (o.pointer(s.suspend) == Some(&json!(false))).then_some(o)
        });
        let wl = workload_of(c, &ns, &name).unwrap();
        assert!(is_true(&wl, "Admitted"), "{wl}");
        for (ps, _, ptr) in &s.pod_sets {
            let Some(t) = started.pointer(ptr) else {
                assert!(before.pointer(ptr).is_none(), "{} lost {ptr}", s.kind);
                continue;
            };
            assert_eq!(
                t["spec"]["nodeSelector"][ZONE_KEY], "zone-a",
                "{} {ps}: {t}",
                s.kind
            );
            assert_eq!(t["metadata"]["labels"]["kueue.x-k8s.io/podset"], *ps);
            assert_eq!(
                t["metadata"]["labels"]["role"],
                before.pointer(ptr).unwrap()["metadata"]["labels"]["role"]
            );
            assert_eq!(t["spec"]["x-future-field"], json!({"kept": true}));
        }
    }
    // Queue status lags by up to a second (one write a second per queue).
    wait_for(WAIT, "the queue's status to count every sample", || {
        cq_counts(c, "kinds-cq").filter(|s| s.2 == samples.len() as i64)
    });

    // Drained: every object suspended again with its templates as created.
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "clusterqueue",
            "kinds-cq",
            "--type=merge",
            "-p",
            r#"{"spec":{"stopPolicy":"HoldAndDrain"}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    for (s, before) in samples.iter().zip(&queued) {
        let name = name_of(s);
        wait_for(WAIT, &format!("{} suspended and restored", s.kind), || {
            let o = object(c, s, &ns, &name);
            let restored = s
                .pod_sets
                .iter()
                .all(|(_, _, ptr)| o.pointer(ptr) == before.pointer(ptr));
            (o.pointer(s.suspend) == Some(&json!(true)) && restored).then_some(())
        });
        let wl = workload_of(c, &ns, &name).unwrap();
        assert!(is_true(&wl, "Evicted"), "{wl}");
    }
    wait_for(WAIT, "the drained ClusterQueue to hold nothing", || {
        let (_, reserving, admitted, _) = cq_counts(c, "kinds-cq")?;
        (reserving == 0 && admitted == 0).then_some(())
    });
}

const GATE: &str = "kueue.x-k8s.io/admission";

/// A pod asking for `cpu` that runs `runtime` on a KWOK node.
fn pod(name: &str, ns: &str, queue: &str, cpu: &str, runtime: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": queue},
                     "annotations": {POD_RUNTIME_ANNOTATION: runtime}},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "busybox", "command": ["true"],
                                 "resources": {"requests": {"cpu": cpu}}}]}
    })
}

fn create_pod(c: &LocalCluster, pod: &Value) -> Value {
    let (ok, out, err) = kubectl(
        c,
        &["create", "-o", "json", "-f", "-"],
        Some(&pod.to_string()),
    );
    assert!(ok, "{out}{err}");
    serde_json::from_str(&out).unwrap()
}

fn pod_now(c: &LocalCluster, ns: &str, name: &str) -> Value {
    get(c, &["pod", name, "-n", ns]).unwrap_or(Value::Null)
}

fn gated(p: &Value) -> bool {
    p["spec"]["schedulingGates"]
        .as_array()
        .is_some_and(|g| g.iter().any(|x| x["name"] == GATE))
}

fn workload(c: &LocalCluster, ns: &str, name: &str) -> Option<Value> {
    get(c, &["workloads.kueue.x-k8s.io", name, "-n", ns])
}

#[test]
fn pods_and_pod_groups_are_gated_admitted_ungated_and_accounted() {
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-pods");
    apply(c, &flavor("pods-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("pods-cq", &[("pods-spot", "2", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "pods", "pods-cq"));

    // Created gated, marked managed, held by the finalizer.
    let first = create_pod(c, &pod("solo", &ns, "pods", "1500m", "4s"));
    assert!(gated(&first), "{first}");
    assert_eq!(
        first["metadata"]["labels"]["kueue.x-k8s.io/managed"],
        "true"
    );
    assert_eq!(
        first["metadata"]["finalizers"],
        json!(["kueue.x-k8s.io/managed"])
    );
    let uid = first["metadata"]["uid"].as_str().unwrap();
    // Kueue's name: pod-<name>-<sha1(Pod, "", name, uid)[:5]>.
    let wl_name = batchgate::jobs::workload::name_for("Pod", "", "solo", uid);
    let wl = wait_for(WAIT, "the pod's Workload admitted", || {
        workload(c, &ns, &wl_name).filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(wl["spec"]["podSets"][0]["name"], "main");
    assert_eq!(wl["spec"]["podSets"][0]["count"], 1);
    assert_eq!(wl["metadata"]["ownerReferences"][0]["uid"], uid);
    // Ungated with the flavor's node selector, scheduled on its node.
    let running = wait_for(WAIT, "the pod ungated and scheduled", || {
        let p = pod_now(c, &ns, "solo");
        (!gated(&p) && p["spec"]["nodeName"].is_string()).then_some(p)
    });
    assert_eq!(running["spec"]["nodeSelector"]["instance-type"], "spot");
    assert_eq!(running["spec"]["nodeName"], "kwok-node-2");
    assert_eq!(
        running["metadata"]["labels"]["kueue.x-k8s.io/podset"],
        "main"
    );

    // Over quota while the first runs: waits gated, with Kueue's reason.
    let second = create_pod(c, &pod("waiter", &ns, "pods", "1", "1s"));
    let second_wl = batchgate::jobs::workload::name_for(
        "Pod",
        "",
        "waiter",
        second["metadata"]["uid"].as_str().unwrap(),
    );
    let pending = wait_for(WAIT, "the over-quota pod's pending reason", || {
        let w = workload(c, &ns, &second_wl)?;
        let q = condition(&w, "QuotaReserved")?;
        (q["status"] == "False").then(|| q.clone())
    });
    assert_eq!(pending["reason"], "Pending");
    assert_eq!(
        pending["message"],
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor pods-spot, 500m more needed"
    );
    assert!(gated(&pod_now(c, &ns, "waiter")));

    // The first finishes: its Workload finished, its finalizer gone, its
    // quota back; the second is admitted and runs.
    let done = wait_for(WAIT, "the first pod's Workload finished", || {
        workload(c, &ns, &wl_name).filter(|w| is_true(w, "Finished"))
    });
    assert_eq!(condition(&done, "Finished").unwrap()["reason"], "Succeeded");
    wait_for(WAIT, "the first pod's finalizer removed", || {
        let p = pod_now(c, &ns, "solo");
        (p["status"]["phase"] == "Succeeded"
            && p["metadata"]["finalizers"]
                .as_array()
                .is_none_or(Vec::is_empty))
        .then_some(())
    });
    wait_for(WAIT, "the second pod admitted and ungated", || {
        let p = pod_now(c, &ns, "waiter");
        (!gated(&p) && p["spec"]["nodeName"] == "kwok-node-2").then_some(())
    });
    wait_for(WAIT, "the second pod's Workload finished", || {
        workload(c, &ns, &second_wl).filter(|w| is_true(w, "Finished"))
    });

    // A pod group: one Workload named after the group, made once the
    // whole group is there, admitted as one.
    let member = |name: &str, cpu: &str| {
        let mut p = pod(name, &ns, "pods", cpu, "3s");
        p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = json!("trio");
        p["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = json!("3");
        p
    };
    let a = create_pod(c, &member("trio-a", "500m"));
    let b = create_pod(c, &member("trio-b", "500m"));
    assert!(gated(&a) && gated(&b));
    assert_eq!(
        a["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"],
        b["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"]
    );
    // Two of three: still gated, no Workload (the third is created after
    // both are stored, so the reconciler has seen them).
    assert!(workload(c, &ns, "trio").is_none());
    let third = create_pod(c, &member("trio-c", "1"));
    let group_wl = wait_for(WAIT, "the group's Workload admitted", || {
        workload(c, &ns, "trio").filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(
        group_wl["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"],
        "true"
    );
    let mut sets: Vec<(String, i64)> = group_wl["spec"]["podSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["count"].as_i64().unwrap(),
            )
        })
        .collect();
    sets.sort();
    let role = |p: &Value| {
        p["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mut want = vec![(role(&a), 2), (role(&third), 1)];
    want.sort();
    assert_eq!(sets, want);
    for name in ["trio-a", "trio-b", "trio-c"] {
        wait_for(
            WAIT,
            &format!("{name} ungated onto the flavor's node"),
            || {
                let p = pod_now(c, &ns, name);
                (!gated(&p) && p["spec"]["nodeName"] == "kwok-node-2").then_some(())
            },
        );
    }
    let done = wait_for(WAIT, "the group's Workload finished", || {
        workload(c, &ns, "trio").filter(|w| is_true(w, "Finished"))
    });
    assert_eq!(
        condition(&done, "Finished").unwrap()["message"],
        "Pods succeeded: 3/3."
    );
    for name in ["trio-a", "trio-b", "trio-c"] {
        wait_for(WAIT, &format!("{name}'s finalizer removed"), || {
            let p = pod_now(c, &ns, name);
            p["metadata"]["finalizers"]
                .as_array()
                .is_none_or(Vec::is_empty)
                .then_some(())
        });
    }

    // Evicted while running (the queue drained): a pod cannot be
    // suspended, so it is deleted, and its quota goes back.
    let long = create_pod(c, &pod("evictee", &ns, "pods", "1", "1h"));
    let long_wl = batchgate::jobs::workload::name_for(
        "Pod",
        "",
        "evictee",
        long["metadata"]["uid"].as_str().unwrap(),
    );
    wait_for(WAIT, "the long pod running", || {
        (pod_now(c, &ns, "evictee")["status"]["phase"] == "Running").then_some(())
    });
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "clusterqueue",
            "pods-cq",
            "--type=merge",
            "-p",
            r#"{"spec":{"stopPolicy":"HoldAndDrain"}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "the evicted pod deleted", || {
        get(c, &["pod", "evictee", "-n", &ns])
            .is_none()
            .then_some(())
    });
    wait_for(WAIT, "the queue to hold nothing", || {
        let (_, reserving, admitted, _) = cq_counts(c, "pods-cq")?;
        (reserving == 0 && admitted == 0).then_some(())
    });
    // Its Workload goes with it (owned by the pod).
    wait_for(WAIT, "the evicted pod's Workload gone", || {
        workload(c, &ns, &long_wl).is_none().then_some(())
    });
}

// ---- TrainJob and SparkApplication -------------------------------------
//
// Their CRDs are test-only minimal ones (tests/fixtures/runtime-kinds-crds.yaml)
// and no trainer or Spark operator runs: the test plays them, creating the
// pods a started job asks for, with what batchgate wrote (the TrainJob's
// runtime patch entry, the Spark roles' node selectors), on the flavor's
// KWOK nodes, and reporting the job finished once they have.

const ON_DEMAND: &str = "on-demand";

/// A retriable pod group (Kueue's default: no `retriable-in-group:
/// "false"`) whose pod fails keeps its admission and waits for a
/// replacement, as Kueue's pod controller does (v0.19.2
/// pod_controller.go `FindMatchingWorkloads`,
/// `waitingForReplacementPodsCondition`; test/e2e/singlecluster/
/// baseline/pod_test.go "should allow to schedule a group of diverse pods"
/// replaces a failed pod the same way): `WaitingForReplacementPods`
/// true, the replacement (made here by the test, as the user's own
/// controller would) ungated under the same admission and made an owner
/// of the Workload, the failed pod let go, the condition false; a pod
/// beyond the group's count is deleted (`ExcessPodDeleted`). KWOK fails
/// the pod (the launcher's pod-fail stage).
#[test]
fn a_retriable_pod_group_replaces_a_failed_pod_under_the_same_admission() {
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-pod-retry");
    apply(c, &flavor("retry-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("retry-cq", &[("retry-spot", "200m", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "pods", "retry-cq"));
    let member = |name: &str| {
        let mut p = pod(name, &ns, "pods", "100m", "10m");
        p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = json!("duo");
        p["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = json!("2");
        p
    };
    create_pod(c, &member("duo-0"));
    let mut failing = member("duo-1");
    failing["metadata"]["annotations"][batchgate_localcluster::POD_FAIL_ANNOTATION] = json!("1s");
    create_pod(c, &failing);
    let admitted = wait_for(WAIT, "the group admitted", || {
        workload(c, &ns, "duo").filter(|w| is_true(w, "Admitted"))
    });
    wait_for(WAIT, "duo-1 failed", || {
        (pod_now(c, &ns, "duo-1")["status"]["phase"] == "Failed").then_some(())
    });
    let waiting = wait_for(WAIT, "the group waiting for a replacement", || {
        workload(c, &ns, "duo").filter(|w| is_true(w, "WaitingForReplacementPods"))
    });
    let cond = condition(&waiting, "WaitingForReplacementPods").unwrap();
    assert_eq!(
        (&cond["reason"], &cond["message"]),
        (
            &json!("PodsFailed"),
            &json!("Some Failed pods need replacement")
        )
    );
    assert!(
        is_true(&waiting, "Admitted"),
        "the quota is kept: {waiting}"
    );
    assert_eq!(
        pod_now(c, &ns, "duo-1")["metadata"]["finalizers"],
        json!(["kueue.x-k8s.io/managed"]),
        "not let go before it is replaced"
    );

    let replacement = create_pod(c, &member("duo-2"));
    assert!(gated(&replacement), "{replacement}");
    wait_for(WAIT, "the replacement ungated and running", || {
        let p = pod_now(c, &ns, "duo-2");
        (!gated(&p) && p["status"]["phase"] == "Running").then_some(())
    });
    let replaced = wait_for(WAIT, "the group no longer waiting", || {
        workload(c, &ns, "duo").filter(|w| {
            condition(w, "WaitingForReplacementPods").is_some_and(|c| c["status"] == "False")
        })
    });
    let cond = condition(&replaced, "WaitingForReplacementPods").unwrap();
    assert_eq!(
        (&cond["reason"], &cond["message"]),
        (&json!("PodsReady"), &json!("No pods need replacement"))
    );
    // The same admission: never evicted, never admitted again.
    assert_eq!(replaced["metadata"]["uid"], admitted["metadata"]["uid"]);
    assert_eq!(
        replaced["status"]["admission"],
        admitted["status"]["admission"]
    );
    assert!(condition(&replaced, "Evicted").is_none(), "{replaced}");
    let owners: Vec<&str> = replaced["metadata"]["ownerReferences"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(owners.contains(&"duo-2"), "{owners:?}");
    wait_for(WAIT, "the failed pod let go", || {
        pod_now(c, &ns, "duo-1")["metadata"]["finalizers"]
            .as_array()
            .is_none_or(Vec::is_empty)
            .then_some(())
    });

    // A third runnable pod of a group of two: deleted as excess.
    create_pod(c, &member("duo-3"));
    let reason = wait_for(WAIT, "the excess pod's event", || {
        let list = get(
            c,
            &[
                "events",
                "-n",
                &ns,
                "--field-selector",
                "involvedObject.name=duo-3,reason=ExcessPodDeleted",
            ],
        )?;
        list["items"].as_array()?.first().cloned()
    });
    assert_eq!(reason["message"], "Excess pod deleted");
    wait_for(WAIT, "the excess pod gone", || {
        pod_now(c, &ns, "duo-3").is_null().then_some(())
    });
    for name in ["duo-0", "duo-2"] {
        assert!(
            !pod_now(c, &ns, name).is_null(),
            "{name} must be kept, not the excess one"
        );
    }
    // Their node is left to the other tests of this binary.
    let (ok, out, err) = kubectl(
        c,
        &["delete", "pod", "duo-0", "duo-2", "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{out}{err}");
}

/// Owner chains as Kueue's webhook and job reconciler walk them
/// (jobframework `WorkloadShouldBeSuspended`,
/// `FindAncestorJobManagedByKueue`; reconciler_test.go
/// TestFindAncestorJobManagedByKueue): a queued Job whose JobSet is not
/// queued is held and queued on its own, admitted and started; one whose
/// JobSet is queued is left to it (not held, no Workload of its own); one
/// whose JobSet is gone is refused with the apiserver's words. No JobSet
/// controller runs: the test makes the Jobs a JobSet controller would.
#[test]
fn a_childs_owner_chain_decides_who_queues_it() {
    let c = kinds_env().cluster;
    install_kind_crds(c);
    let ns = namespace(c, "e2e-chain");
    apply(c, &flavor("chain-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("chain-cq", &[("chain-spot", "1", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "q", "chain-cq"));
    let jobset = |name: &str, queued: bool| {
        let mut js = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c",
                    "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}}}}}]}});
        if queued {
            js["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "q"});
        }
        create(c, &js)
    };
    let child = |name: &str, parent: &str, uid: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "q"},
                         "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2",
                             "kind": "JobSet", "name": parent, "uid": uid, "controller": true}]},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c",
                "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}}}})
    };
    let uid_of = |o: &Value| o["metadata"]["uid"].as_str().unwrap().to_string();

    // No ancestor queued: held, its own Workload admitted, started.
    let loose = jobset("loose", false);
    assert_ne!(loose["spec"]["suspend"], true, "{loose}");
    let job = create(c, &child("on-its-own", "loose", &uid_of(&loose)));
    assert_eq!(job["spec"]["suspend"], true, "not held: {job}");
    let wl = batchgate::jobs::workload::name_for("Job", "batch", "on-its-own", &uid_of(&job));
    wait_for(WAIT, "the child's own Workload admitted", || {
        workload(c, &ns, &wl).filter(|w| is_true(w, "Admitted"))
    });
    wait_for(WAIT, "the child started", || {
        (get(c, &["job", "on-its-own", "-n", &ns])?["spec"]["suspend"] == false).then_some(())
    });

    // A queued JobSet governs its Job: not held, no Workload of its own.
    let held = jobset("held", true);
    let led = create(c, &child("led", "held", &uid_of(&held)));
    assert_ne!(led["spec"]["suspend"], true, "held by the webhook: {led}");
    std::thread::sleep(Duration::from_secs(3));
    let own = batchgate::jobs::workload::name_for("Job", "batch", "led", &uid_of(&led));
    assert!(
        workload(c, &ns, &own).is_none(),
        "a Workload for a governed child"
    );

    // The JobSet gone: refused with the apiserver's words.
    let (ok, out, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&child("orphan", "ghost", "ghost-uid").to_string()),
    );
    assert!(!ok, "created: {out}");
    assert!(
        err.contains("jobsets.jobset.x-k8s.io \"ghost\" not found"),
        "{err}"
    );
}

fn install_runtime_kind_crds(c: &LocalCluster) {
    let file = format!(
        "{}/tests/fixtures/runtime-kinds-crds.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let (ok, out, err) = kubectl(c, &["apply", "-f", &file], None);
    assert!(ok, "{out}{err}");
    c.wait_established(
        &[
            "crd/trainjobs.trainer.kubeflow.org",
            "crd/trainingruntimes.trainer.kubeflow.org",
            "crd/clustertrainingruntimes.trainer.kubeflow.org",
            "crd/sparkapplications.sparkoperator.k8s.io",
        ],
        WAIT,
    )
    .unwrap();
}

fn cpu_container(name: &str, cpu: &str) -> Value {
    json!({"name": name, "image": "busybox", "command": ["true"],
           "resources": {"requests": {"cpu": cpu}}})
}

/// Creates `count` pods `<prefix>-<i>` from a pod template (its labels,
/// node selector, tolerations and containers), running `runtime` on a KWOK
/// node; returns their names.
fn play_pods(
    c: &LocalCluster,
    ns: &str,
    prefix: &str,
    count: i64,
    template: &Value,
) -> Vec<String> {
    (0..count)
        .map(|i| {
            let name = format!("{prefix}-{i}");
            let mut spec = template["spec"].clone();
            spec["restartPolicy"] = json!("Never");
            let pod = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns,
                             "labels": template["metadata"]["labels"].clone(),
                             "annotations": {POD_RUNTIME_ANNOTATION: "2s"}},
                "spec": spec,
            });
            create_pod(c, &pod);
            name
        })
        .collect()
}

/// Waits until every pod has run on an on-demand KWOK node and succeeded.
fn wait_pods_done(c: &LocalCluster, ns: &str, pods: &[String]) {
    for p in pods {
        let done = wait_for(WAIT, &format!("pod {p} to run and succeed"), || {
            let pod = pod_now(c, ns, p);
            (pod["status"]["phase"] == "Succeeded").then_some(pod)
        });
        let node = done["spec"]["nodeName"].as_str().unwrap_or_default();
        assert!(
            node == "kwok-node-0" || node == "kwok-node-1",
            "{p} ran on {node}, not on the flavor's nodes"
        );
    }
}

fn status_patch(c: &LocalCluster, resource: &str, ns: &str, name: &str, patch: Value) {
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            resource,
            name,
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch.to_string(),
        ],
        None,
    );
    assert!(ok, "{out}{err}");
}

#[test]
fn trainjob_and_sparkapplication_are_admitted_run_on_the_flavors_nodes_and_return_quota() {
    install_runtime_kind_crds(batchgate_localcluster::shared());
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-runtimes");
    apply(
        c,
        &flavor("runtimes-od", json!({"instance-type": ON_DEMAND})),
    );
    apply(
        c,
        &cluster_queue("runtimes-cq", &[("runtimes-od", "4", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "train", "runtimes-cq"));

    // A ClusterTrainingRuntime: an initializer job and the trainer's job.
    let ancestor = "trainer.kubeflow.org/trainjob-ancestor-step";
    let runtime = json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "e2e-torch"},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}},
                 "template": {"spec": {"replicatedJobs": [
            {"name": "dataset-initializer", "replicas": 1,
             "template": {"metadata": {"labels": {ancestor: "dataset-initializer"}},
                          "spec": {"template": {"spec": {"containers": [cpu_container("dataset-initializer", "500m")]}}}}},
            {"name": "node", "replicas": 1,
             "template": {"metadata": {"labels": {ancestor: "trainer"}},
                          "spec": {"template": {"spec": {"containers": [cpu_container("node", "250m")]}}}}}
        ]}}}
    });
    apply(c, &runtime.to_string());
    // The webhook reads the runtime as Kueue's does (trainjob_webhook.go
    // validateTopologyRequest): one it cannot read refuses the TrainJob
    // with Kueue's words; the pod sets it builds have their topology
    // annotations checked, here two on the "node" job through the
    // TrainJob's runtime patch.
    let refused = |job: Value| {
        let (ok, out, err) = kubectl(c, &["create", "-f", "-"], Some(&job.to_string()));
        assert!(!ok, "created: {out}");
        err
    };
    let err = refused(json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "no-runtime", "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "train"}},
        "spec": {"runtimeRef": {"name": "e2e-missing"}}
    }));
    assert!(
        err.contains("denied the request: runtime 'e2e-missing' not found"),
        "{err}"
    );
    let err = refused(json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "two-topologies", "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "train"}},
        "spec": {"runtimeRef": {"name": "e2e-torch"},
                 "runtimePatches": [{"manager": "e2e", "trainingRuntimeSpec": {"template": {"spec": {
                     "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
                         "metadata": {"annotations": {
                             "kueue.x-k8s.io/podset-required-topology": "cloud.com/block",
                             "kueue.x-k8s.io/podset-preferred-topology": "cloud.com/block"}}}}}}]}}}}]}
    }));
    assert!(
        err.contains(r#"job[node].annotations: Invalid value: must not contain more than one topology annotation"#)
            && err.contains(r#"Adjust either the "TrainJob.spec.runtimePatches" or the "TrainingRuntime.Template" annotations for the corresponding Job"#),
        "{err}"
    );
    let train = json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "fine-tune", "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "train"}},
        "spec": {"runtimeRef": {"name": "e2e-torch"},
                 "trainer": {"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "1"}}}}
    });
    let (ok, out, err) = kubectl(
        c,
        &["create", "-o", "json", "-f", "-"],
        Some(&train.to_string()),
    );
    assert!(ok, "{out}{err}");
    let stored: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(stored["spec"]["suspend"], true, "{stored}");
    assert_eq!(
        stored["spec"]["runtimePatches"][0]["manager"],
        "kueue.x-k8s.io/manager"
    );

    // Admitted with the runtime's pod sets and the job's overrides
    // (2.5 cpu of 4), started through Kueue's patch entry.
    let wl = wait_for(WAIT, "the TrainJob's Workload admitted", || {
        workload_of(c, &ns, "fine-tune").filter(|w| is_true(w, "Admitted"))
    });
    let sets: Vec<(String, i64, String)> = wl["spec"]["podSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().into(),
                p["count"].as_i64().unwrap(),
                p["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
                    .as_str()
                    .unwrap()
                    .into(),
            )
        })
        .collect();
    assert_eq!(
        sets,
        vec![
            ("dataset-initializer".into(), 1, "500m".into()),
            ("node".into(), 2, "1".into())
        ]
    );
    let started = wait_for(WAIT, "the TrainJob started", || {
        let t = get(
            c,
            &["trainjobs.trainer.kubeflow.org", "fine-tune", "-n", &ns],
        )?;
        (t["spec"]["suspend"] == false).then_some(t)
    });
    let patched = &started["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]
        ["replicatedJobs"];
    assert_eq!(patched[1]["name"], "node");
    let node_info = &patched[1]["template"]["spec"]["template"];
    assert_eq!(
        node_info["spec"]["nodeSelector"]["instance-type"],
        ON_DEMAND
    );
    assert_eq!(
        node_info["metadata"]["labels"]["kueue.x-k8s.io/podset"],
        "node"
    );

    // A TrainJob whose runtime goes after it was made is the reconciler's
    // to wait for (a Warning event in Kueue's words): unit-tested in
    // src/jobs/machine/tests.rs; the webhook refuses one made without it
    // (above).

    // Over quota while it runs: a SparkApplication (driver 1 cpu and two
    // 1-cpu executors) waits suspended with Kueue's reason.
    let spark = json!({
        "apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
        "metadata": {"name": "pi", "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "train"}},
        "spec": {"type": "Scala", "mode": "cluster", "mainClass": "org.apache.spark.examples.SparkPi",
                 "driver": {"coreRequest": "1", "labels": {"role": "driver"}},
                 "executor": {"coreRequest": "1", "instances": 2, "labels": {"role": "executor"}}}
    });
    let (ok, out, err) = kubectl(
        c,
        &["create", "-o", "json", "-f", "-"],
        Some(&spark.to_string()),
    );
    assert!(ok, "{out}{err}");
    let stored: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(stored["spec"]["suspend"], true, "{stored}");
    let pending = wait_for(WAIT, "the SparkApplication's pending reason", || {
        let w = workload_of(c, &ns, "pi")?;
        let q = condition(&w, "QuotaReserved")?;
        (q["status"] == "False").then(|| q.clone())
    });
    assert_eq!(pending["reason"], "Pending");
    let msg = pending["message"].as_str().unwrap();
    assert!(
        msg.starts_with("couldn't assign flavors to pod set ")
            && msg.contains("insufficient unused quota for cpu in flavor runtimes-od"),
        "{msg}"
    );

    // The test plays the trainer: the runtime's jobs' pods with the
    // TrainJob's overrides and Kueue's patch entry.
    let runtime_job = |i: usize| &runtime["spec"]["template"]["spec"]["replicatedJobs"][i];
    let mut init = runtime_job(0)["template"]["spec"]["template"].clone();
    init["metadata"] = patched[0]["template"]["spec"]["template"]["metadata"].clone();
    init["spec"]["nodeSelector"] =
        patched[0]["template"]["spec"]["template"]["spec"]["nodeSelector"].clone();
    let mut node = runtime_job(1)["template"]["spec"]["template"].clone();
    node["metadata"] = node_info["metadata"].clone();
    node["spec"]["nodeSelector"] = node_info["spec"]["nodeSelector"].clone();
    node["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "1"}});
    let mut pods = play_pods(c, &ns, "fine-tune-init", 1, &init);
    pods.extend(play_pods(c, &ns, "fine-tune-node", 2, &node));
    wait_pods_done(c, &ns, &pods);
    // Playing the trainer's status, as Kueue reads it (trainjob_controller.go
    // PodsReady, ReclaimablePods) against the replicated jobs the runtime
    // builds: the initializer's one replica succeeded gives its pod back,
    // and with the node job's replica ready every job counts as ready
    // (waitForPodsReady is on by default).
    status_patch(
        c,
        "trainjobs.trainer.kubeflow.org",
        &ns,
        "fine-tune",
        json!({"status": {"jobsStatus": [
            {"name": "dataset-initializer", "ready": 0, "succeeded": 1, "active": 0, "failed": 0, "suspended": 0},
            {"name": "node", "ready": 1, "succeeded": 0, "active": 1, "failed": 0, "suspended": 0}]}}),
    );
    let reported = wait_for(WAIT, "the TrainJob's readiness and reclaim", || {
        workload_of(c, &ns, "fine-tune")
            .filter(|w| is_true(w, "PodsReady") && !w["status"]["reclaimablePods"].is_null())
    });
    assert_eq!(
        reported["status"]["reclaimablePods"],
        json!([{"name": "dataset-initializer", "count": 1}])
    );
    status_patch(
        c,
        "trainjobs.trainer.kubeflow.org",
        &ns,
        "fine-tune",
        json!({"status": {"conditions": [{"type": "Complete", "status": "True", "reason": "JobsCompleted",
                 "message": "TrainJob is completed", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
    );
    let done = wait_for(WAIT, "the TrainJob's Workload finished", || {
        workload_of(c, &ns, "fine-tune").filter(|w| is_true(w, "Finished"))
    });
    assert_eq!(
        condition(&done, "Finished").unwrap()["message"],
        "TrainJob is completed"
    );
    // Compared with its pod sets as the runtime builds them while it ran
    // (Kueue's ensureOneWorkload), it matched throughout: the Workload
    // admitted is the one finished.
    assert_eq!(done["metadata"]["uid"], wl["metadata"]["uid"]);

    // Its quota back, the SparkApplication is admitted and started: the
    // roles' own fields carry the flavor (the operator builds pods from them).
    let started = wait_for(WAIT, "the SparkApplication started", || {
        let s = get(
            c,
            &["sparkapplications.sparkoperator.k8s.io", "pi", "-n", &ns],
        )?;
        (s["spec"]["suspend"] == false).then_some(s)
    });
    let wl = workload_of(c, &ns, "pi").unwrap();
    assert!(is_true(&wl, "Admitted"), "{wl}");
    let counts: Vec<(&str, i64)> = wl["spec"]["podSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["count"].as_i64().unwrap()))
        .collect();
    assert_eq!(counts, vec![("driver", 1), ("executor", 2)]);
    let mut pods = Vec::new();
    for (role, count) in [("driver", 1), ("executor", 2)] {
        let r = &started["spec"][role];
        assert_eq!(r["nodeSelector"]["instance-type"], ON_DEMAND, "{role}: {r}");
        assert_eq!(r["labels"]["kueue.x-k8s.io/podset"], role);
        assert_eq!(r["labels"]["role"], role);
        let template = json!({
            "metadata": {"labels": r["labels"].clone()},
            "spec": {"nodeSelector": r["nodeSelector"].clone(),
                     "containers": [cpu_container("spark", r["coreRequest"].as_str().unwrap())]},
        });
        pods.extend(play_pods(c, &ns, &format!("pi-{role}"), count, &template));
    }
    wait_pods_done(c, &ns, &pods);
    status_patch(
        c,
        "sparkapplications.sparkoperator.k8s.io",
        &ns,
        "pi",
        json!({"status": {"applicationState": {"state": "COMPLETED"}}}),
    );
    let done = wait_for(WAIT, "the SparkApplication's Workload finished", || {
        workload_of(c, &ns, "pi").filter(|w| is_true(w, "Finished"))
    });
    assert_eq!(condition(&done, "Finished").unwrap()["reason"], "Succeeded");
    wait_for(WAIT, "the ClusterQueue to hold nothing", || {
        let (_, reserving, admitted, _) = cq_counts(c, "runtimes-cq")?;
        (reserving == 0 && admitted == 0).then_some(())
    });
}

/// The pods of `ns` whose labels match `selector`, by name.
fn pods_of(c: &LocalCluster, ns: &str, selector: &str) -> Vec<Value> {
    get(c, &["pods", "-n", ns, "-l", selector])
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

fn scale(c: &LocalCluster, what: &str, ns: &str, n: u32) {
    let (ok, out, err) = kubectl(
        c,
        &["scale", what, "-n", ns, &format!("--replicas={n}")],
        None,
    );
    assert!(ok, "{out}{err}");
}

/// A Deployment (the `deployment` integration, which brings the pod one):
/// its template carries the queue to every pod; each pod is its own
/// Workload, admitted one by one within quota; scaled 0→3 with quota for
/// two, the third waits gated with Kueue's pending message; scaled to 1,
/// the quota comes back.
#[test]
fn a_deployments_pods_are_admitted_one_by_one() {
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-deploy");
    apply(c, &flavor("deploy-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("deploy-cq", &[("deploy-spot", "2", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "serve", "deploy-cq"));
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "serve"}},
        "spec": {"replicas": 0,
                 "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "main", "image": "nginx",
                                  "resources": {"requests": {"cpu": "1"}}}]}}}
    });
    let (ok, out, err) = kubectl(
        c,
        &["create", "-o", "json", "-f", "-"],
        Some(&deployment.to_string()),
    );
    assert!(ok, "{out}{err}");
    let stored: Value = serde_json::from_str(&out).unwrap();
    // Kueue's deployment webhook: the template marks every pod.
    let t = &stored["spec"]["template"]["metadata"];
    assert_eq!(t["labels"]["kueue.x-k8s.io/queue-name"], "serve");
    assert_eq!(t["labels"]["kueue.x-k8s.io/managed"], "true");
    assert_eq!(
        t["annotations"]["kueue.x-k8s.io/pod-suspending-parent"],
        "deployment"
    );

    scale(c, "deployment/web", &ns, 3);
    let (running, waiting) = wait_for(WAIT, "two pods running and one gated", || {
        let pods = pods_of(c, &ns, "app=web");
        let running: Vec<Value> = pods
            .iter()
            .filter(|p| !gated(p) && p["status"]["phase"] == "Running")
            .cloned()
            .collect();
        let waiting: Vec<Value> = pods.iter().filter(|p| gated(p)).cloned().collect();
        (pods.len() == 3 && running.len() == 2 && waiting.len() == 1).then_some((running, waiting))
    });
    for p in &running {
        assert_eq!(p["spec"]["nodeSelector"]["instance-type"], "spot", "{p}");
        assert_eq!(p["spec"]["nodeName"], "kwok-node-2");
        assert_eq!(p["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main");
        // Gated by the parent: no finalizer of its own.
        assert!(p["metadata"]["finalizers"]
            .as_array()
            .is_none_or(Vec::is_empty));
    }
    // One Workload per pod, Kueue's name; the third pending with Kueue's words.
    let w = &waiting[0];
    let wl_name = batchgate::jobs::workload::name_for(
        "Pod",
        "",
        w["metadata"]["name"].as_str().unwrap(),
        w["metadata"]["uid"].as_str().unwrap(),
    );
    let pending = wait_for(WAIT, "the third pod's pending reason", || {
        let wl = workload(c, &ns, &wl_name)?;
        let q = condition(&wl, "QuotaReserved")?;
        (q["status"] == "False" && q["reason"] == "Pending").then(|| q.clone())
    });
    assert_eq!(
        pending["message"],
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor deploy-spot, 1 more needed"
    );
    wait_for(WAIT, "the queue to count two admitted", || {
        let (_, _, admitted, _) = cq_counts(c, "deploy-cq")?;
        (admitted == 2).then_some(())
    });
    // The queue name is fixed while pods run (Kueue's deployment webhook).
    let (ok, _, err) = kubectl(
        c,
        &[
            "label",
            "deployment/web",
            "-n",
            &ns,
            "--overwrite",
            "kueue.x-k8s.io/queue-name=other",
        ],
        None,
    );
    assert!(!ok);
    assert!(
        err.contains("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"other\": field is immutable"),
        "{err}"
    );

    // Scaled to one: the gated pod and one running pod go, and so does
    // their quota.
    scale(c, "deployment/web", &ns, 1);
    wait_for(WAIT, "one pod left, running", || {
        let pods = pods_of(c, &ns, "app=web");
        let live: Vec<&Value> = pods
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .collect();
        (pods.len() == 1 && live.len() == 1 && !gated(live[0])).then_some(())
    });
    wait_for(WAIT, "the queue to hold one pod's quota", || {
        let (pending, reserving, admitted, used) = cq_counts(c, "deploy-cq")?;
        (pending == 0 && reserving == 1 && admitted == 1 && used == "1").then_some(())
    });
    wait_for(WAIT, "the third pod's Workload gone", || {
        workload(c, &ns, &wl_name).is_none().then_some(())
    });
}

/// A StatefulSet (the `statefulset` integration): one pod group with one
/// Workload made from the set (pod set main, count = replicas), admitted
/// as one; its pods ungated onto the flavor's KWOK node, kept running
/// (serving mode: never finished), a deleted pod replaced and ungated
/// without re-admission; a second set over quota waits with Kueue's reason,
/// its pods gated.
#[test]
fn a_statefulset_is_one_serving_pod_group() {
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-sts");
    apply(c, &flavor("sts-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("sts-cq", &[("sts-spot", "3", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "serve", "sts-cq"));
    let sts = |name: &str, replicas: u32| {
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "serve"}},
            "spec": {"replicas": replicas, "serviceName": name,
                     "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": "redis",
                                      "resources": {"requests": {"cpu": "1"}}}]}}}
        })
    };
    let (ok, out, err) = kubectl(
        c,
        &["create", "-o", "json", "-f", "-"],
        Some(&sts("db", 3).to_string()),
    );
    assert!(ok, "{out}{err}");
    let stored: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        stored["spec"]["template"]["metadata"]["annotations"]
            ["kueue.x-k8s.io/pod-suspending-parent"],
        "statefulset"
    );
    let uid = stored["metadata"]["uid"].as_str().unwrap();
    // Kueue's name for the set's Workload: statefulset-<name>-<hash>.
    let wl_name = batchgate::jobs::workload::name_for("StatefulSet", "apps", "db", uid);
    let wl = wait_for(WAIT, "the set's Workload admitted", || {
        workload(c, &ns, &wl_name).filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(wl["spec"]["podSets"][0]["name"], "main");
    assert_eq!(wl["spec"]["podSets"][0]["count"], 3);
    assert_eq!(wl["spec"]["queueName"], "serve");
    assert_eq!(wl["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
    let admitted_at = condition(&wl, "Admitted").unwrap()["lastTransitionTime"].clone();
    let running = wait_for(WAIT, "the three pods ungated and running", || {
        let pods = pods_of(c, &ns, "app=db");
        (pods.len() == 3
            && pods
                .iter()
                .all(|p| !gated(p) && p["status"]["phase"] == "Running"))
        .then_some(pods)
    });
    for p in &running {
        let a = &p["metadata"]["annotations"];
        assert_eq!(a["kueue.x-k8s.io/pod-group-name"], wl_name.as_str(), "{p}");
        assert_eq!(a["kueue.x-k8s.io/pod-group-total-count"], "3");
        assert_eq!(a["kueue.x-k8s.io/pod-group-serving"], "true");
        assert_eq!(a["kueue.x-k8s.io/pod-group-fast-admission"], "true");
        assert_eq!(p["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
        assert_eq!(p["spec"]["nodeSelector"]["instance-type"], "spot");
        assert_eq!(p["spec"]["nodeName"], "kwok-node-2");
    }

    // Serving: a deleted pod is replaced and ungated into the same
    // admission (no re-admission), and the group is never finished.
    let old_uid = running
        .iter()
        .find(|p| p["metadata"]["name"] == "db-1")
        .unwrap()["metadata"]["uid"]
        .clone();
    // Not waited on: the StatefulSet recreates db-1 at once, under the
    // same name.
    let (ok, out, err) = kubectl(
        c,
        &["delete", "pod", "db-1", "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "db-1 replaced, ungated and running", || {
        let p = pod_now(c, &ns, "db-1");
        (p["metadata"]["uid"] != old_uid
            && !p["metadata"]["uid"].is_null()
            && !gated(&p)
            && p["status"]["phase"] == "Running")
            .then_some(())
    });
    let wl = workload(c, &ns, &wl_name).unwrap();
    assert!(is_true(&wl, "Admitted"), "{wl}");
    assert_eq!(
        condition(&wl, "Admitted").unwrap()["lastTransitionTime"],
        admitted_at
    );
    assert!(!is_true(&wl, "Finished"), "{wl}");

    // A second set over quota: its Workload waits with Kueue's reason, its
    // pods stay gated.
    let (ok, out, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&sts("cache", 2).to_string()),
    );
    assert!(ok, "{out}{err}");
    let cache_uid = get(c, &["statefulset", "cache", "-n", &ns]).unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let cache_wl = batchgate::jobs::workload::name_for("StatefulSet", "apps", "cache", &cache_uid);
    let pending = wait_for(WAIT, "the second set's pending reason", || {
        let w = workload(c, &ns, &cache_wl)?;
        let q = condition(&w, "QuotaReserved")?;
        (q["status"] == "False" && q["reason"] == "Pending").then(|| q.clone())
    });
    assert_eq!(
        pending["message"],
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor sts-spot, 2 more needed"
    );
    wait_for(WAIT, "the second set's pods created gated", || {
        let pods = pods_of(c, &ns, "app=cache");
        (pods.len() == 2 && pods.iter().all(gated)).then_some(())
    });
}

/// Kueue v0.19.2 test/e2e/singlecluster/baseline/statefulset_test.go
/// "should set the workload OnHold on scale-to-zero and clear it on
/// scale-up": a StatefulSet scaled to zero keeps its Workload, which gives
/// its quota back on hold (`QuotaReserved=False`, `OnHold`) so a waiting
/// set is admitted; scaled up again it is taken off hold and queues, and
/// is admitted once the other set is scaled to zero in turn.
#[test]
fn a_statefulset_scaled_to_zero_holds_its_workload_and_frees_its_quota() {
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-sts-hold");
    apply(c, &flavor("hold-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("hold-cq", &[("hold-spot", "3", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "serve", "hold-cq"));
    let sts = |name: &str| {
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "serve"}},
            "spec": {"replicas": 2, "serviceName": name,
                     "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": "redis",
                                      "resources": {"requests": {"cpu": "1"}}}]}}}
        })
    };
    let wl_of = |name: &str| {
        let uid = get(c, &["statefulset", name, "-n", &ns]).unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_string();
        batchgate::jobs::workload::name_for("StatefulSet", "apps", name, &uid)
    };
    let replicas = |name: &str, n: u32| {
        let p = json!({"spec": {"replicas": n}}).to_string();
        wait_for(WAIT, "the replicas changed", || {
            let (ok, _, _) = kubectl(
                c,
                &[
                    "patch",
                    "statefulset",
                    name,
                    "-n",
                    &ns,
                    "--type=merge",
                    "-p",
                    &p,
                ],
                None,
            );
            ok.then_some(())
        });
    };
    let quota_reserved =
        |wl: &str| workload(c, &ns, wl).and_then(|w| condition(&w, "QuotaReserved").cloned());
    let running = |app: &str| {
        wait_for(WAIT, "the set's two pods running", || {
            let pods = pods_of(c, &ns, &format!("app={app}"));
            (pods.len() == 2
                && pods
                    .iter()
                    .all(|p| !gated(p) && p["status"]["phase"] == "Running"))
            .then_some(())
        })
    };
    create(c, &sts("db"));
    let db = wl_of("db");
    wait_for(WAIT, "db admitted", || {
        workload(c, &ns, &db).filter(|w| is_true(w, "Admitted"))
    });
    running("db");
    create(c, &sts("cache"));
    let cache = wl_of("cache");
    wait_for(WAIT, "cache waiting for quota", || {
        quota_reserved(&cache).filter(|q| q["status"] == "False" && q["reason"] == "Pending")
    });

    replicas("db", 0);
    let held = wait_for(WAIT, "db's Workload on hold", || {
        quota_reserved(&db).filter(|q| q["reason"] == "OnHold")
    });
    assert_eq!(
        (&held["status"], &held["message"]),
        (
            &json!("False"),
            &json!("StatefulSet scaled to zero; workload on hold")
        )
    );
    let w = workload(c, &ns, &db).unwrap();
    assert!(w["status"]["admission"].is_null(), "{w}");
    assert_eq!(w["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
    wait_for(WAIT, "cache admitted in db's place", || {
        workload(c, &ns, &cache).filter(|w| is_true(w, "Admitted"))
    });
    running("cache");
    // Held, db's Workload is in no queue: the ClusterQueue counts one
    // admitted Workload and none pending.
    let (pending, _, admitted, _) = wait_for(WAIT, "the ClusterQueue's counts", || {
        cq_counts(c, "hold-cq").filter(|s| s.2 == 1)
    });
    assert_eq!((pending, admitted), (0, 1));

    wait_for(WAIT, "db's pods gone", || {
        let s = get(c, &["statefulset", "db", "-n", &ns])?;
        (s["status"]["replicas"] == 0 && pods_of(c, &ns, "app=db").is_empty()).then_some(())
    });
    replicas("db", 2);
    let q = wait_for(WAIT, "db off hold, waiting for quota", || {
        quota_reserved(&db).filter(|q| q["reason"] != "OnHold")
    });
    assert_eq!(q["status"], "False", "{q}");
    replicas("cache", 0);
    wait_for(WAIT, "cache on hold", || {
        quota_reserved(&cache).filter(|q| q["reason"] == "OnHold")
    });
    wait_for(WAIT, "db admitted again", || {
        workload(c, &ns, &db).filter(|w| is_true(w, "Admitted"))
    });
    running("db");
}

/// Kueue's StatefulSet webhook (statefulset_webhook.go ValidateUpdate,
/// the case its TestValidateUpdate calls "scale up from zero blocked by
/// existing workload"): a queued set is not scaled up from zero while the
/// Workload of its last scale-down still exists, not on hold. The test
/// plays another controller holding that Workload with a finalizer of its
/// own while it is deleted; once the finalizer goes, so does the Workload,
/// and the scale up is accepted and queues a new one.
#[test]
fn a_statefulset_is_not_scaled_up_while_its_old_workload_is_being_deleted() {
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-sts-gone");
    apply(c, &flavor("gone-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("gone-cq", &[("gone-spot", "1", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "serve", "gone-cq"));
    // Two pods of 1 cpu against 1: pending throughout, never held.
    let sts = create(
        c,
        &json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "serve"}},
            "spec": {"replicas": 2, "serviceName": "web",
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "main", "image": "nginx",
                                      "resources": {"requests": {"cpu": "1"}}}]}}}
        }),
    );
    let wl = batchgate::jobs::workload::name_for(
        "StatefulSet",
        "apps",
        "web",
        sts["metadata"]["uid"].as_str().unwrap(),
    );
    let first = wait_for(WAIT, "web's Workload pending", || {
        workload(c, &ns, &wl)
            .filter(|w| condition(w, "QuotaReserved").is_some_and(|q| q["reason"] == "Pending"))
    });
    let scale = |n: u32| {
        kubectl(
            c,
            &[
                "patch",
                "statefulset",
                "web",
                "-n",
                &ns,
                "--type=merge",
                "-p",
                &json!({"spec": {"replicas": n}}).to_string(),
            ],
            None,
        )
    };
    let (ok, out, err) = scale(0);
    assert!(ok, "{out}{err}");
    const HELD: &str = "e2e.batchgate.dev/held";
    let finalizers = |w: &Value| -> Vec<Value> {
        w["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    // Reads the Workload afresh and patches its finalizers with the
    // resourceVersion read: batchgate releases its own finalizer while the
    // Workload is deleted, and a list read earlier would add it back, which
    // the apiserver forbids. A conflict is retried.
    let change_finalizers = |change: &dyn Fn(Vec<Value>) -> Vec<Value>| {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let now = workload(c, &ns, &wl).expect("the Workload exists");
            let list = change(finalizers(&now));
            let (ok, out, err) = kubectl(
                c,
                &[
                    "patch",
                    "workload",
                    &wl,
                    "-n",
                    &ns,
                    "--type=merge",
                    "-p",
                    &json!({"metadata": {"finalizers": list,
                        "resourceVersion": now["metadata"]["resourceVersion"]}})
                    .to_string(),
                ],
                None,
            );
            if ok {
                return;
            }
            assert!(
                err.contains("Conflict") && std::time::Instant::now() < deadline,
                "{out}{err}"
            );
        }
    };
    change_finalizers(&|mut list| {
        list.push(json!(HELD));
        list
    });
    let (ok, out, err) = kubectl(
        c,
        &["delete", "workload", &wl, "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{out}{err}");
    let deleting = wait_for(WAIT, "the Workload deleting, held", || {
        workload(c, &ns, &wl).filter(|w| w["metadata"]["deletionTimestamp"].is_string())
    });
    // Premise: the Workload exists and is not on hold.
    assert!(
        condition(&deleting, "QuotaReserved").is_some_and(|q| q["reason"] != "OnHold"),
        "{deleting}"
    );
    let (ok, out, err) = scale(2);
    assert!(!ok, "scaled up: {out}");
    assert!(
        err.contains(
            "spec.replicas: Forbidden: workload from previous scale-down is still being deleted"
        ),
        "{err}"
    );
    change_finalizers(&|list| list.into_iter().filter(|f| f != HELD).collect());
    let deadline = std::time::Instant::now() + WAIT;
    while let Some(w) =
        workload(c, &ns, &wl).filter(|w| w["metadata"]["uid"] == first["metadata"]["uid"])
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the old Workload not gone: {w}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let (ok, out, err) = scale(2);
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "a new Workload for the set", || {
        workload(c, &ns, &wl).filter(|w| w["metadata"]["uid"] != first["metadata"]["uid"])
    });
}

/// Kueue's StatefulSet reconcilers follow a Workload under the legacy
/// name (no UID; statefulset_reconciler.go `findWorkloadName`,
/// statefulset_reconciler_test.go "should adopt legacy workload instead
/// of creating duplicate"). The test plays an earlier Kueue that made the
/// set's Workload under that name and put it on hold when the set was
/// scaled to zero; scaled up, the set takes it up again: no second
/// Workload, its pods join the legacy group, admitted and running.
#[test]
fn a_statefulset_follows_its_workload_under_kueues_legacy_name() {
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-sts-legacy");
    apply(c, &flavor("legacy-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("legacy-cq", &[("legacy-spot", "200m", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "serve", "legacy-cq"));
    let sts = create(
        c,
        &json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "serve"}},
            "spec": {"replicas": 0, "serviceName": "db",
                     "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{"name": "main", "image": "redis",
                                      "resources": {"requests": {"cpu": "100m"}}}]}}}
        }),
    );
    let uid = sts["metadata"]["uid"].as_str().unwrap();
    let legacy = batchgate::jobs::workload::name_for("StatefulSet", "apps", "db", "");
    let current = batchgate::jobs::workload::name_for("StatefulSet", "apps", "db", uid);
    // The earlier Kueue's Workload, owned by the set, on hold.
    create(
        c,
        &json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": legacy, "namespace": ns,
                         "annotations": {"kueue.x-k8s.io/is-group-workload": "true"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                              "name": "db", "uid": uid}]},
            "spec": {"podSets": [{"name": "main", "count": 2, "template": {"spec":
                        {"containers": [{"name": "main", "image": "redis",
                                         "resources": {"requests": {"cpu": "100m"}}}]}}}]}
        }),
    );
    // batchgate parks a Workload without a queue with a pending reason of
    // its own; the hold is written after that, or that write would take
    // the hold's place.
    wait_for(WAIT, "the legacy Workload parked", || {
        workload(c, &ns, &legacy).and_then(|w| condition(&w, "QuotaReserved").cloned())
    });
    status_patch(
        c,
        "workload",
        &ns,
        &legacy,
        json!({"status": {"conditions": [{"type": "QuotaReserved", "status": "False",
            "reason": "OnHold", "message": "StatefulSet scaled to zero; workload on hold",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
    );
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "statefulset",
            "db",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            &json!({"spec": {"replicas": 2}}).to_string(),
        ],
        None,
    );
    assert!(ok, "scale up refused: {out}{err}");
    let admitted = wait_for(WAIT, "the legacy Workload admitted", || {
        workload(c, &ns, &legacy).filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(admitted["spec"]["queueName"], "serve", "{admitted}");
    let pods = wait_for(WAIT, "the set's two pods running", || {
        let pods = pods_of(c, &ns, "app=db");
        (pods.len() == 2
            && pods
                .iter()
                .all(|p| !gated(p) && p["status"]["phase"] == "Running"))
        .then_some(pods)
    });
    for p in &pods {
        let a = &p["metadata"]["annotations"];
        assert_eq!(a["kueue.x-k8s.io/pod-group-name"], legacy.as_str(), "{p}");
        assert_eq!(
            a["kueue.x-k8s.io/prebuilt-workload-name"],
            legacy.as_str(),
            "{p}"
        );
    }
    assert!(
        workload(c, &ns, &current).is_none(),
        "a second Workload was made under the current name"
    );
    // Its pods leave the spot node to the other tests of this binary.
    let (ok, out, err) = kubectl(
        c,
        &["delete", "statefulset", "db", "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{out}{err}");
}

fn install_lws_crd(c: &LocalCluster) {
    let file = format!(
        "{}/tests/fixtures/leaderworkerset-crd.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let (ok, out, err) = kubectl(c, &["apply", "-f", &file], None);
    assert!(ok, "{out}{err}");
    c.wait_established(&["crd/leaderworkersets.leaderworkerset.x-k8s.io"], WAIT)
        .unwrap();
}

const LWS_NAME: &str = "leaderworkerset.sigs.k8s.io/name";
const LWS_GROUP_INDEX: &str = "leaderworkerset.sigs.k8s.io/group-index";
const LWS_WORKER_INDEX: &str = "leaderworkerset.sigs.k8s.io/worker-index";
const LWS_LEADER_NAME: &str = "leaderworkerset.sigs.k8s.io/leader-name";

fn create(c: &LocalCluster, obj: &Value) -> Value {
    let (ok, out, err) = kubectl(
        c,
        &["create", "-o", "json", "-f", "-"],
        Some(&obj.to_string()),
    );
    assert!(ok, "{out}{err}");
    serde_json::from_str(&out).unwrap()
}

/// A pod template of the stored LeaderWorkerSet with the labels (and
/// annotations) the LWS controller adds to it.
fn lws_template(t: &Value, labels: Value, annotations: Value) -> Value {
    let mut t = t.clone();
    for (section, add) in [("labels", labels), ("annotations", annotations)] {
        for (k, v) in add.as_object().unwrap() {
            t["metadata"][section][k] = v.clone();
        }
    }
    t
}

/// Plays the LWS controller for group `i` once its leader pod exists: the
/// workers' StatefulSet `<lws>-<i>` (size − 1 pods, from ordinal 1),
/// owned by the leader pod, from the stored worker template.
fn play_lws_workers(c: &LocalCluster, ns: &str, lws: &Value, i: usize) {
    let name = lws["metadata"]["name"].as_str().unwrap();
    let size = lws["spec"]["leaderWorkerTemplate"]["size"]
        .as_i64()
        .unwrap();
    let leader = format!("{name}-{i}");
    let leader_pod = wait_for(WAIT, "the leader pod", || {
        get(c, &["pod", &leader, "-n", ns])
    });
    let labels = json!({LWS_NAME: name, LWS_GROUP_INDEX: i.to_string()});
    create(
        c,
        &json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": leader, "namespace": ns, "labels": labels,
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": leader,
                                              "uid": leader_pod["metadata"]["uid"],
                                              "controller": true}]},
            "spec": {"replicas": size - 1, "serviceName": name,
                     "podManagementPolicy": "Parallel",
                     "ordinals": {"start": 1},
                     "selector": {"matchLabels": labels},
                     "template": lws_template(
                         &lws["spec"]["leaderWorkerTemplate"]["workerTemplate"],
                         labels.clone(),
                         json!({LWS_LEADER_NAME: leader}),
                     )}
        }),
    );
}

/// Plays LWS's pod webhook on the leaders: each leader pod gets its group
/// index (its ordinal) as it appears.
fn play_lws_leader_index(c: &LocalCluster, ns: &str, name: &str, i: usize) {
    let leader = format!("{name}-{i}");
    wait_for(WAIT, "the leader pod labelled", || {
        get(c, &["pod", &leader, "-n", ns])?;
        let (ok, _, _) = kubectl(
            c,
            &[
                "label",
                "pod",
                &leader,
                "-n",
                ns,
                "--overwrite",
                &format!("{LWS_GROUP_INDEX}={i}"),
            ],
            None,
        );
        ok.then_some(())
    });
}

/// A LeaderWorkerSet (the `leaderworkerset.x-k8s.io/leaderworkerset`
/// integration, which brings the pod one): its leader and worker templates
/// marked as Kueue's webhook marks them; one Workload per replica group
/// (Kueue's name, pod sets leader 1 + worker size − 1), admitted within
/// quota, the group's pods ungated onto the flavor's KWOK node; scaled to
/// two with quota for one group, the new group's pods wait gated with
/// Kueue's pending message; scaled back to one, that quota and Workload
/// go; deleted, everything goes. The test plays the LWS controller: it
/// creates the leader StatefulSet (owned by the LWS) and each group's
/// worker StatefulSet (owned by the leader pod) from the stored templates,
/// and labels each leader pod with its group index (LWS's pod webhook);
/// KCM's StatefulSet controller creates the pods.
#[test]
fn a_leaderworkerset_is_one_serving_pod_group_per_replica() {
    let started = std::time::Instant::now();
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-lws");
    apply(c, &flavor("lws-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("lws-cq", &[("lws-spot", "2", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "serve", "lws-cq"));
    let container = |name: &str| json!([{"name": name, "image": "vllm", "resources": {"requests": {"cpu": "1"}}}]);
    let lws = create(
        c,
        &json!({
            "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "infer", "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "serve"}},
            "spec": {"replicas": 1,
                     "leaderWorkerTemplate": {
                         "size": 2,
                         "leaderTemplate": {"metadata": {"labels": {"role": "leader"}},
                                            "spec": {"containers": container("leader")}},
                         "workerTemplate": {"metadata": {"labels": {"role": "worker"}},
                                            "spec": {"containers": container("worker")}}}}
        }),
    );
    // Kueue's LWS webhook: both templates carry the queue, the parent and
    // serving mode; the workers their pod-index offset.
    let lwt = &lws["spec"]["leaderWorkerTemplate"];
    for (t, offset) in [("leaderTemplate", None), ("workerTemplate", Some("1"))] {
        let m = &lwt[t]["metadata"];
        assert_eq!(m["labels"]["kueue.x-k8s.io/queue-name"], "serve", "{t}");
        assert_eq!(
            m["annotations"]["kueue.x-k8s.io/pod-suspending-parent"],
            "leaderworkerset.x-k8s.io/leaderworkerset",
            "{t}"
        );
        assert_eq!(m["annotations"]["kueue.x-k8s.io/pod-group-serving"], "true");
        assert_eq!(
            m["annotations"]["kueue.x-k8s.io/pod-index-offset"].as_str(),
            offset
        );
    }
    let uid = lws["metadata"]["uid"].as_str().unwrap().to_string();
    let wl_name = |i: usize| {
        batchgate::jobs::workload::name_for(
            "LeaderWorkerSet",
            "leaderworkerset.x-k8s.io",
            &format!("infer-{i}"),
            &uid,
        )
    };

    // The LWS controller, played: the leaders' StatefulSet (owned by the LWS).
    let leader_labels = json!({LWS_NAME: "infer", LWS_WORKER_INDEX: "0"});
    create(
        c,
        &json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "infer", "namespace": ns, "labels": {LWS_NAME: "infer"},
                         "ownerReferences": [{"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                              "kind": "LeaderWorkerSet", "name": "infer",
                                              "uid": uid, "controller": true}]},
            "spec": {"replicas": 1, "serviceName": "infer",
                     "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": leader_labels},
                     "template": lws_template(&lwt["leaderTemplate"], leader_labels.clone(), json!({}))}
        }),
    );
    play_lws_leader_index(c, &ns, "infer", 0);
    play_lws_workers(c, &ns, &lws, 0);

    // Group 0: its Workload (Kueue's name and pod sets) admitted, its two
    // pods ungated onto the flavor's node.
    let wl = wait_for(WAIT, "group 0's Workload admitted", || {
        workload(c, &ns, &wl_name(0)).filter(|w| is_true(w, "Admitted"))
    });
    let sets: Vec<(String, i64)> = wl["spec"]["podSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(sets, vec![("leader".into(), 1), ("worker".into(), 1)]);
    assert_eq!(wl["spec"]["queueName"], "serve");
    assert_eq!(
        wl["metadata"]["ownerReferences"][0]["kind"],
        "LeaderWorkerSet"
    );
    assert_eq!(
        wl["metadata"]["annotations"]["kueue.x-k8s.io/component-workload-index"],
        "0"
    );
    let group0 = wait_for(WAIT, "group 0's pods ungated and running", || {
        let pods = pods_of(c, &ns, &format!("{LWS_NAME}=infer,{LWS_GROUP_INDEX}=0"));
        (pods.len() == 2
            && pods
                .iter()
                .all(|p| !gated(p) && p["status"]["phase"] == "Running"))
        .then_some(pods)
    });
    for p in &group0 {
        let a = &p["metadata"]["annotations"];
        assert_eq!(
            a["kueue.x-k8s.io/pod-group-name"],
            wl_name(0).as_str(),
            "{p}"
        );
        assert_eq!(
            a["kueue.x-k8s.io/prebuilt-workload-name"],
            wl_name(0).as_str()
        );
        assert_eq!(a["kueue.x-k8s.io/pod-group-total-count"], "2");
        let role = if p["metadata"]["name"] == "infer-0" {
            "leader"
        } else {
            "worker"
        };
        assert_eq!(a["kueue.x-k8s.io/role-hash"], role, "{p}");
        assert_eq!(p["metadata"]["labels"]["kueue.x-k8s.io/podset"], role);
        assert_eq!(p["spec"]["nodeSelector"]["instance-type"], "spot");
        assert_eq!(p["spec"]["nodeName"], "kwok-node-2");
    }

    // Scaled to two groups with quota for one: group 1's Workload pending
    // with Kueue's words, its pods gated.
    scale(c, "leaderworkerset/infer", &ns, 2);
    scale(c, "statefulset/infer", &ns, 2);
    play_lws_leader_index(c, &ns, "infer", 1);
    play_lws_workers(c, &ns, &lws, 1);
    let pending = wait_for(WAIT, "group 1's pending reason", || {
        let w = workload(c, &ns, &wl_name(1))?;
        let q = condition(&w, "QuotaReserved")?;
        (q["status"] == "False" && q["reason"] == "Pending").then(|| q.clone())
    });
    assert_eq!(
        pending["message"],
        "couldn't assign flavors to pod set leader: insufficient unused quota for cpu in flavor lws-spot, 1 more needed; couldn't assign flavors to pod set worker: insufficient unused quota for cpu in flavor lws-spot, 2 more needed"
    );
    wait_for(WAIT, "group 1's pods gated in their group", || {
        let pods = pods_of(c, &ns, &format!("{LWS_NAME}=infer,{LWS_GROUP_INDEX}=1"));
        (pods.len() == 2
            && pods.iter().all(|p| {
                gated(p)
                    && p["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-name"]
                        == wl_name(1).as_str()
            }))
        .then_some(())
    });
    // The ClusterQueue's status is written up to once a second: wait for it.
    wait_for(WAIT, "lws-cq counting group 0 only", || {
        let (_, reserving, admitted, used) = cq_counts(c, "lws-cq")?;
        ((reserving, admitted, used.as_str()) == (1, 1, "2")).then_some(())
    });

    // Back to one: group 1's Workload is deleted and its pods go.
    scale(c, "leaderworkerset/infer", &ns, 1);
    scale(c, "statefulset/infer", &ns, 1);
    wait_for(WAIT, "group 1's Workload gone", || {
        workload(c, &ns, &wl_name(1)).is_none().then_some(())
    });
    wait_for(WAIT, "group 1's pods gone", || {
        pods_of(c, &ns, &format!("{LWS_NAME}=infer,{LWS_GROUP_INDEX}=1"))
            .is_empty()
            .then_some(())
    });
    wait_for(WAIT, "the queue to hold group 0 only", || {
        let (pending, reserving, admitted, used) = cq_counts(c, "lws-cq")?;
        (pending == 0 && reserving == 1 && admitted == 1 && used == "2").then_some(())
    });
    assert!(is_true(&workload(c, &ns, &wl_name(0)).unwrap(), "Admitted"));

    // Deleted: its StatefulSets, pods and Workloads go (KCM's garbage
    // collector: on a cluster whose LWS CRD is this new, it acts on
    // LeaderWorkerSets only after its next discovery resync (every 30 s):
    // most of this test's time),
    // and all the quota.
    let deleted = std::time::Instant::now();
    let (ok, out, err) = kubectl(
        c,
        &[
            "delete",
            "leaderworkerset",
            "infer",
            "-n",
            &ns,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "the LWS's Workloads gone", || {
        workload(c, &ns, &wl_name(0)).is_none().then_some(())
    });
    wait_for(WAIT, "the ClusterQueue to hold nothing", || {
        let (_, reserving, admitted, used) = cq_counts(c, "lws-cq")?;
        (reserving == 0 && admitted == 0 && (used == "0" || used.is_empty())).then_some(())
    });
    eprintln!(
        "a_leaderworkerset_is_one_serving_pod_group_per_replica: {:.1} s, of which {:.1} s collecting the deleted set",
        started.elapsed().as_secs_f64(),
        deleted.elapsed().as_secs_f64()
    );
}

/// A RayJob's slice: name, workers count, admitted, finished reason, the
/// slice it replaces.
type RaySlice = (String, i64, bool, Option<String>, Option<String>);

/// An elastic RayJob under Ray's in-tree autoscaling follows the worker
/// counts of its RayCluster, as Kueue v0.19.2 reads them
/// (`raycluster.UpdatePodSets`, the job's `raycluster-podset-replica-sizes`
/// and `raycluster-generation` annotations; rayjob_controller_test.go
/// `TestGetCustomAnnotations`): the autoscaler scaling the cluster up makes
/// a new slice, named with the cluster's generation, that replaces the
/// admitted one once admitted; scaling down shrinks the admitted slice in
/// place; a scale-up past the quota waits while the job keeps its slice.
/// No KubeRay runs: the test plays it (the RayCluster made for the job,
/// the job's `status.rayClusterName`) and its autoscaler (the cluster's
/// `replicas`).
#[test]
fn an_autoscaled_rayjobs_slices_follow_its_rayclusters_worker_counts() {
    let c = kinds_env().cluster;
    install_kind_crds(c);
    let ns = namespace(c, "e2e-ray-scale");
    apply(
        c,
        &flavor("ray-scale-spot", json!({"instance-type": "spot"})),
    );
    apply(
        c,
        &cluster_queue("ray-scale-cq", &[("ray-scale-spot", "1", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "q", "ray-scale-cq"));
    let template = |name: &str| {
        json!({"spec": {"restartPolicy": "Never", "containers": [{"name": name,
            "image": "rayproject/ray", "resources": {"requests": {"cpu": "100m"}}}]}})
    };
    let workers = |replicas: u32| {
        json!([{"groupName": "workers", "replicas": replicas, "minReplicas": 1,
            "maxReplicas": 30, "rayStartParams": {}, "template": template("worker")}])
    };
    let cluster_spec = json!({"enableInTreeAutoscaling": true,
        "autoscalerOptions": {"resources": {"requests": {"cpu": "100m"}}},
        "headGroupSpec": {"rayStartParams": {}, "template": template("head")},
        "workerGroupSpecs": workers(1)});
    let rj = create(
        c,
        &json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rj", "namespace": ns,
                "labels": {"kueue.x-k8s.io/queue-name": "q"},
                "annotations": {"kueue.x-k8s.io/elastic-job": "true"}},
            "spec": {"entrypoint": "python train.py", "submissionMode": "HTTPMode",
                "shutdownAfterJobFinishes": true,
                "rayClusterSpec": cluster_spec.clone()}}),
    );
    let uid = rj["metadata"]["uid"].as_str().unwrap().to_string();
    let slice_name = |extra: &str| {
        batchgate::jobs::workload::name_with_extra("RayJob", "ray.io", "rj", &uid, extra)
    };
    let annotation = |key: &str| {
        get(c, &["rayjobs.ray.io", "rj", "-n", &ns])
            .and_then(|j| j["metadata"]["annotations"][key].as_str().map(String::from))
    };
    let sizes =
        |n: u32| format!(r#"[{{"name":"head","count":1}},{{"name":"workers","count":{n}}}]"#);
    let slices = || -> Vec<RaySlice> {
        let list = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns]).unwrap_or(Value::Null);
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| {
                let finished = w["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|c| c["type"] == "Finished" && c["status"] == "True")
                    .map(|c| c["reason"].as_str().unwrap_or_default().to_string());
                (
                    w["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    w["spec"]["podSets"][1]["count"].as_i64().unwrap_or(-1),
                    is_true(w, "Admitted"),
                    finished,
                    w["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-replacement-for"]
                        .as_str()
                        .map(String::from),
                )
            })
            .collect()
    };
    // Not yet on a cluster: its own count, the generation unknown.
    wait_for(WAIT, "the first slice admitted and the job started", || {
        let s = slices();
        let started = get(c, &["rayjobs.ray.io", "rj", "-n", &ns])?["spec"]["suspend"] == false;
        (started && s.len() == 1 && s[0].0 == slice_name("1") && s[0].1 == 1 && s[0].2)
            .then_some(())
    });
    assert_eq!(
        annotation("kueue.x-k8s.io/raycluster-podset-replica-sizes"),
        Some(sizes(1))
    );
    assert_eq!(
        annotation("kueue.x-k8s.io/raycluster-generation"),
        Some(String::new())
    );

    // KubeRay (played) makes the job's cluster and names it.
    let rc = create(
        c,
        &json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rj-cluster", "namespace": ns,
                "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj",
                    "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
            "spec": cluster_spec}),
    );
    let generation = |rc: &Value| rc["metadata"]["generation"].as_i64().unwrap();
    status_patch(
        c,
        "rayjobs.ray.io",
        &ns,
        "rj",
        json!({"status": {"rayClusterName": "rj-cluster", "jobDeploymentStatus": "Running"}}),
    );
    let g = generation(&rc).to_string();
    wait_for(WAIT, "the cluster's generation recorded", || {
        (annotation("kueue.x-k8s.io/raycluster-generation")? == g).then_some(())
    });
    assert_eq!(slices().len(), 1, "{:?}", slices());

    // The autoscaler (played) scales the cluster up: a new slice, named
    // with the cluster's generation, replaces the admitted one.
    let scale = |n: u32| -> String {
        let (ok, out, err) = kubectl(
            c,
            &["patch", "rayclusters.ray.io", "rj-cluster", "-n", &ns, "--type=json", "-o", "json",
              "-p", &json!([{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": n}]).to_string()],
            None,
        );
        assert!(ok, "{out}{err}");
        generation(&serde_json::from_str(&out).unwrap()).to_string()
    };
    let first = slice_name("1");
    // The job's own generation moved on when it was started (its
    // `suspend`); the cluster's tells its slices apart from here on.
    let job_generation = get(c, &["rayjobs.ray.io", "rj", "-n", &ns]).unwrap()["metadata"]
        ["generation"]
        .as_i64()
        .unwrap();
    let g = scale(4);
    let second = slice_name(&format!("{job_generation}_{g}"));
    let s = wait_for(
        WAIT,
        "the scaled-up slice admitted, the first replaced",
        || {
            let s = slices();
            let new = s.iter().find(|x| x.0 == second)?;
            let old = s.iter().find(|x| x.0 == first)?;
            (new.2 && old.3.as_deref() == Some("WorkloadSliceReplaced")).then_some(s)
        },
    );
    let new = s.iter().find(|x| x.0 == second).unwrap();
    assert_eq!(new.1, 4, "{s:?}");
    assert_eq!(new.4, Some(format!("{ns}/{first}")), "{s:?}");
    assert_eq!(
        annotation("kueue.x-k8s.io/raycluster-podset-replica-sizes"),
        Some(sizes(4))
    );

    // Scaled down: the admitted slice shrinks in place.
    let g = scale(2);
    wait_for(WAIT, "the admitted slice shrunk to 2 workers", || {
        let s = slices();
        let live: Vec<_> = s.iter().filter(|x| x.3.is_none()).collect();
        (live.len() == 1 && live[0].0 == second && live[0].1 == 2 && live[0].2).then_some(())
    });
    wait_for(WAIT, "the scaled-down generation recorded", || {
        (annotation("kueue.x-k8s.io/raycluster-generation")? == g).then_some(())
    });

    // Past the quota (1 cpu: head, autoscaler and 20 workers of 100m): the
    // new slice waits; the job keeps running on its admitted one.
    let g = scale(20);
    let third = slice_name(&format!("{job_generation}_{g}"));
    wait_for(
        WAIT,
        "the too-big slice pending beside the admitted one",
        || {
            let s = slices();
            let big = s.iter().find(|x| x.0 == third)?;
            let kept = s.iter().find(|x| x.0 == second)?;
            (big.1 == 20 && !big.2 && kept.2 && kept.3.is_none()).then_some(())
        },
    );
    std::thread::sleep(Duration::from_secs(3));
    let s = slices();
    assert!(
        s.iter().any(|x| x.0 == second && x.2 && x.3.is_none())
            && s.iter().any(|x| x.0 == third && !x.2),
        "{s:?}"
    );
    let (ok, out, err) = kubectl(
        c,
        &["delete", "rayjobs.ray.io", "rj", "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{out}{err}");
}

/// A RayService (Kueue v0.19.2's `ray.io/rayservice`) on the local control
/// plane. The test plays KubeRay: it makes the service's RayCluster, names
/// it in `status.activeServiceStatus`, reports the service `Ready`, creates
/// the cluster's pods from its templates and plays Ray's autoscaler; and it
/// plays a controller that holds the service with a finalizer of its own
/// while it is deleted (as KubeRay's Redis cleanup needs the quota). Shown:
/// - queued, admitted and started at `spec.rayClusterConfig.suspend`, with
///   the elastic-job gate on its templates; the head counts KubeRay's
///   autoscaler and, under GCS fault tolerance, its Redis cleanup Job;
/// - its pods are its active cluster's, let go as its slice grants;
/// - the autoscaler's scale-up makes a slice that replaces the first;
/// - deleted under GCS fault tolerance it keeps its Workload and quota
///   until it is gone; then both go.
#[test]
fn a_rayservice_serves_from_its_active_cluster_and_keeps_its_quota_until_gone() {
    install_kind_crds(batchgate_localcluster::shared());
    let c = kinds_env().cluster;
    let ns = namespace(c, "e2e-rayservice");
    apply(c, &flavor("rs-spot", json!({"instance-type": "spot"})));
    let cq = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "rs-cq"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": "rs-spot", "resources": [
                {"name": "cpu", "nominalQuota": "2"},
                {"name": "memory", "nominalQuota": "4Gi"}]}]}]},
    });
    apply(c, &cq.to_string());
    apply(c, &local_queue(&ns, "serve", "rs-cq"));
    let template = |name: &str| {
        json!({"spec": {"containers": [{"name": name, "image": "rayproject/ray",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}})
    };
    let cluster_spec = json!({"rayVersion": "2.9.0", "enableInTreeAutoscaling": true,
        "gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
        "autoscalerOptions": {"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
        "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
        "workerGroupSpecs": [{"groupName": "workers", "replicas": 1, "minReplicas": 1,
            "maxReplicas": 5, "rayStartParams": {}, "template": template("ray-worker")}]});
    let svc = create(
        c,
        &json!({"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "fruit", "namespace": ns,
                "labels": {"kueue.x-k8s.io/queue-name": "serve"},
                "annotations": {"kueue.x-k8s.io/elastic-job": "true"},
                "finalizers": ["e2e.batchgate.dev/kuberay"]},
            "spec": {"serveConfigV2": "applications: []\n",
                     "rayClusterConfig": cluster_spec.clone()}}),
    );
    assert_eq!(
        svc["spec"]["rayClusterConfig"]["suspend"],
        json!(true),
        "{svc}"
    );
    for t in ["headGroupSpec/template", "workerGroupSpecs/0/template"] {
        let gates = &svc
            .pointer(&format!("/spec/rayClusterConfig/{t}/spec/schedulingGates"))
            .cloned()
            .unwrap_or(Value::Null);
        assert_eq!(
            gates,
            &json!([{"name": "kueue.x-k8s.io/elastic-job"}]),
            "{t}"
        );
    }
    let uid = svc["metadata"]["uid"].as_str().unwrap().to_string();
    let service = || get(c, &["rayservices.ray.io", "fruit", "-n", &ns]);
    let workloads = || -> Vec<Value> {
        get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])
            .and_then(|l| l["items"].as_array().cloned())
            .unwrap_or_default()
    };
    let started = wait_for(WAIT, "the service admitted and started", || {
        let s = service()?;
        (s["spec"]["rayClusterConfig"]["suspend"] == false).then_some(s)
    });
    let wls = workloads();
    assert_eq!(wls.len(), 1, "{wls:?}");
    let first = wls[0].clone();
    assert!(is_true(&first, "Admitted"), "{first}");
    assert_eq!(first["metadata"]["ownerReferences"][0]["uid"], json!(uid));
    let head = &first["spec"]["podSets"][0]["template"]["spec"]["containers"];
    assert_eq!(
        head[0]["resources"]["requests"],
        json!({"cpu": "200m", "memory": "256Mi"}),
        "the head counts KubeRay's Redis cleanup: {head}"
    );
    assert_eq!(head[1]["name"], "autoscaler", "{head}");
    assert_eq!(
        started["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["metadata"]
            ["labels"]["kueue.x-k8s.io/podset"],
        "workers"
    );

    // KubeRay (played) makes the active cluster and reports the service.
    let cluster = "fruit-raycluster-x7k2p";
    let mut rc_spec = cluster_spec.clone();
    rc_spec["workerGroupSpecs"][0]["template"] =
        started["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"].clone();
    create(
        c,
        &json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": cluster, "namespace": ns,
                "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayService", "name": "fruit",
                    "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
            "spec": rc_spec}),
    );
    status_patch(
        c,
        "rayservices.ray.io",
        &ns,
        "fruit",
        json!({"status": {"activeServiceStatus": {"rayClusterName": cluster},
            "conditions": [{"type": "Ready", "status": "True", "reason": "NonZeroServeEndpoints",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
    );
    // Its worker pods, as KubeRay creates them from the cluster's template.
    let worker_pod = |i: usize| {
        let mut t = started["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"].clone();
        let labels = t["metadata"]["labels"].as_object_mut().unwrap();
        labels.insert("ray.io/cluster".into(), json!(cluster));
        labels.insert("ray.io/group".into(), json!("workers"));
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{cluster}-workers-{i}"), "namespace": ns,
                "labels": t["metadata"]["labels"], "annotations": {POD_RUNTIME_ANNOTATION: "1h"}},
            "spec": t["spec"]})
    };
    let gated = |name: &str| {
        get(c, &["pod", name, "-n", &ns]).map(|p| {
            p["spec"]["schedulingGates"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g["name"] == "kueue.x-k8s.io/elastic-job"))
        })
    };
    for i in 0..2 {
        create_pod(c, &worker_pod(i));
    }
    // One worker granted: the first pod by name is let go, the second not.
    wait_for(WAIT, "the granted worker pod let go", || {
        (!gated(&format!("{cluster}-workers-0"))?).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(gated(&format!("{cluster}-workers-1")), Some(true));

    // Ray's autoscaler (played) scales the active cluster to 3 workers.
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "rayclusters.ray.io",
            cluster,
            "-n",
            &ns,
            "--type=json",
            "-p",
            &json!([{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3}])
                .to_string(),
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let first_name = first["metadata"]["name"].as_str().unwrap().to_string();
    wait_for(
        WAIT,
        "a 3-worker slice admitted, the first replaced",
        || {
            let w = workloads();
            let old = w
                .iter()
                .find(|x| x["metadata"]["name"] == first_name.as_str())?;
            let new = w
                .iter()
                .find(|x| x["metadata"]["name"] != first_name.as_str())?;
            let replaced = condition(old, "Finished")
                .is_some_and(|f| f["status"] == "True" && f["reason"] == "WorkloadSliceReplaced");
            (replaced && is_true(new, "Admitted") && new["spec"]["podSets"][1]["count"] == 3)
                .then_some(())
        },
    );
    create_pod(c, &worker_pod(2));
    wait_for(WAIT, "all three worker pods let go", || {
        (0..3)
            .all(|i| gated(&format!("{cluster}-workers-{i}")) == Some(false))
            .then_some(())
    });

    // Deleted under GCS fault tolerance, held by the played finalizer: the
    // Workload keeps its admission and its quota.
    let (ok, out, err) = kubectl(
        c,
        &[
            "delete",
            "rayservices.ray.io",
            "fruit",
            "-n",
            &ns,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "the service deleting", || {
        service()?["metadata"]["deletionTimestamp"]
            .is_string()
            .then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let live: Vec<Value> = workloads()
        .into_iter()
        .filter(|w| condition(w, "Finished").is_none())
        .collect();
    assert_eq!(live.len(), 1, "{live:?}");
    assert!(is_true(&live[0], "Admitted"), "{}", live[0]);
    assert!(
        cq_counts(c, "rs-cq").is_some_and(|q| q.2 == 1),
        "{:?}",
        cq_counts(c, "rs-cq")
    );

    // KubeRay's cleanup done (played): the service goes, and so do its
    // Workloads and their quota.
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "rayservices.ray.io",
            "fruit",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "the service's Workloads gone, its quota free", || {
        let q = cq_counts(c, "rs-cq")?;
        (workloads().is_empty() && q.1 == 0 && q.2 == 0).then_some(())
    });
}
