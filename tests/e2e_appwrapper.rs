//! AppWrapper end to end on the local cluster (reference §5.3): batchgate
//! is the webhook, the AppWrapper controller and the quota engine. An
//! AppWrapper wrapping a batch Job and a Pod is stored suspended, its one
//! Workload is admitted, its components are created with the flavor's
//! nodeSelector, their pods run on the matching KWOK node, and deleted
//! while running it takes everything it created with it. An AppWrapper of
//! a Job and a Pod reaches Succeeded and its Workload is Finished. One whose
//! ClusterQueue is drained is suspended, its components and pods removed,
//! and its quota released. One whose Job's pod fails (KWOK's pod-fail
//! stage) is reset once and then, past its retryLimit, Failed with its
//! resources deleted and its Workload Finished. A ServiceAccount that may create AppWrappers
//! but not Pods is refused one that wraps a Pod, with real RBAC and
//! `kubectl --as`. Autopilot: a GPU AppWrapper whose node is labelled
//! `autopilot.ibm.com/gpuhealth=EVICT` is reset and its pod recreated on a
//! healthy node, its quota held throughout; the binary's configuration
//! sets upstream's `faultTolerance.resetPause` (3 s, in upstream's
//! nanoseconds), which replaces upstream's 90 s default as a failing
//! AppWrapper shows. (KWOK's own pod-complete stage completes only pods
//! owned by a Job; the launcher's pod-complete-unowned stage completes a
//! bare or AppWrapper-owned pod carrying the runtime annotation, and leaves
//! an unannotated bare pod running.)

mod support;

use std::{sync::Once, time::Duration};

use batchgate_localcluster::{LocalCluster, POD_FAIL_ANNOTATION, POD_RUNTIME_ANNOTATION};
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

use k8s_openapi::jiff::Timestamp;

const WAIT: Duration = Duration::from_secs(120);

/// The operator configuration every test of this binary runs with: a
/// retry pause of 3 s instead of upstream's 90 s, written as upstream's
/// `config.yaml` holds durations (integer nanoseconds).
const CONFIG: &str = "appwrapper:\n  faultTolerance:\n    resetPause: 3000000000\n";

/// The shared cluster and batchgate, with [`CONFIG`].
fn env() -> &'static Env {
    env_with(CONFIG)
}
const LABEL: &str = "workload.codeflare.dev/appwrapper";

/// A queued AppWrapper of a one-pod Job (1 cpu) running `runtime`, and,
/// `with_pod`, a bare Pod (500m) running `runtime` too.
fn appwrapper(name: &str, ns: &str, queue: &str, runtime: &str, with_pod: bool) -> String {
    let pod_spec = |cpu: &str| {
        json!({"restartPolicy": "Never",
               "containers": [{"name": "main", "image": "busybox", "command": ["true"],
                               "resources": {"requests": {"cpu": cpu}}}]})
    };
    let mut components = vec![json!({"template": {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": format!("{name}-job")},
        "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                 "template": {
                    "metadata": {"annotations": {POD_RUNTIME_ANNOTATION: runtime}},
                    "spec": pod_spec("1")}}}})];
    if with_pod {
        components.push(json!({"template": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{name}-pod"),
                         "annotations": {POD_RUNTIME_ANNOTATION: runtime}},
            "spec": pod_spec("500m")}}));
    }
    json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {"components": components},
    })
    .to_string()
}

fn aw(c: &LocalCluster, ns: &str, name: &str) -> Option<Value> {
    get(c, &["appwrappers.workload.codeflare.dev", name, "-n", ns])
}

fn pods(c: &LocalCluster, ns: &str, name: &str) -> Vec<Value> {
    get(c, &["pods", "-n", ns, "-l", &format!("{LABEL}={name}")])
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

/// The flavor and ClusterQueue once per binary (the tests run in
/// parallel), a LocalQueue per namespace.
fn setup(c: &LocalCluster, ns: &str) {
    static CLUSTER_SCOPED: Once = Once::new();
    CLUSTER_SCOPED.call_once(|| {
        apply(c, &flavor("aw-spot", json!({"instance-type": "spot"})));
        apply(
            c,
            &cluster_queue("aw-cq", &[("aw-spot", "10", None)], json!({})),
        );
    });
    apply(c, &local_queue(ns, "aw-queue", "aw-cq"));
}

#[test]
fn a_queued_appwrapper_is_admitted_runs_on_its_flavor_and_deleted_takes_everything() {
    let c = env().cluster;
    let ns = namespace(c, "e2e-aw-run");
    setup(c, &ns);

    let (ok, out, err) = kubectl(
        c,
        &["create", "-o", "json", "-f", "-"],
        Some(&appwrapper("train", &ns, "aw-queue", "10m", true)),
    );
    assert!(ok, "{out}{err}");
    let stored: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        stored["spec"]["suspend"], true,
        "stored suspended: {stored}"
    );

    // One Workload, owned by the AppWrapper, with Kueue's pod sets.
    let wl = wait_for(WAIT, "the AppWrapper's Workload admitted", || {
        workload_of(c, &ns, "train").filter(|w| is_true(w, "Admitted"))
    });
    let name = wl["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("appwrapper-train-"), "{name}");
    assert_eq!(wl["metadata"]["ownerReferences"][0]["kind"], "AppWrapper");
    let sets = wl["spec"]["podSets"].as_array().unwrap();
    assert_eq!(sets.len(), 2, "{wl}");
    assert_eq!(sets[0]["name"], "train-0");
    assert_eq!(sets[0]["count"], 1);
    assert_eq!(sets[1]["name"], "train-1");

    // Resumed with the flavor's node labels, and the components created
    // with them.
    let a = wait_for(WAIT, "the AppWrapper resumed with podSetInfos", || {
        aw(c, &ns, "train").filter(|a| a["spec"]["suspend"] == false)
    });
    for i in 0..2 {
        assert_eq!(
            a["spec"]["components"][i]["podSetInfos"][0]["nodeSelector"]["instance-type"], "spot",
            "{a}"
        );
    }
    let job = wait_for(WAIT, "the wrapped Job created", || {
        get(c, &["jobs", "train-job", "-n", &ns])
    });
    assert_eq!(
        job["spec"]["template"]["spec"]["nodeSelector"]["instance-type"],
        "spot"
    );
    assert_eq!(job["metadata"]["labels"][LABEL], "train");
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "AppWrapper");

    // Both pods run on the spot node.
    let ps = wait_for(WAIT, "both pods scheduled", || {
        let ps = pods(c, &ns, "train");
        (ps.len() == 2 && ps.iter().all(|p| p["spec"]["nodeName"].is_string())).then_some(ps)
    });
    for p in &ps {
        let node = p["spec"]["nodeName"].as_str().unwrap();
        let n = get(c, &["node", node]).unwrap();
        assert_eq!(n["metadata"]["labels"]["instance-type"], "spot", "{node}");
    }
    wait_for(WAIT, "the AppWrapper Running", || {
        aw(c, &ns, "train").filter(|a| a["status"]["phase"] == "Running")
    });

    // Deleted while running: the finalizer holds it until its Job and
    // pods are gone.
    let (ok, out, err) = kubectl(
        c,
        &[
            "delete",
            "appwrappers.workload.codeflare.dev",
            "train",
            "-n",
            &ns,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "the AppWrapper gone", || {
        aw(c, &ns, "train").is_none().then_some(())
    });
    assert!(get(c, &["jobs", "train-job", "-n", &ns]).is_none());
    wait_for(WAIT, "its pods gone", || {
        pods(c, &ns, "train").is_empty().then_some(())
    });
}

#[test]
fn an_appwrapper_of_a_job_and_a_pod_succeeds_and_its_workload_finishes() {
    let c = env().cluster;
    let ns = namespace(c, "e2e-aw-done");
    setup(c, &ns);
    create(c, &appwrapper("short", &ns, "aw-queue", "3s", true));
    wait_for(WAIT, "the AppWrapper Succeeded", || {
        aw(c, &ns, "short").filter(|a| a["status"]["phase"] == "Succeeded")
    });
    let ps = pods(c, &ns, "short");
    assert_eq!(ps.len(), 2, "{ps:?}");
    assert!(
        ps.iter().all(|p| p["status"]["phase"] == "Succeeded"),
        "{ps:?}"
    );
    assert!(
        ps.iter().any(|p| p["metadata"]["name"] == "short-pod"),
        "{ps:?}"
    );
    wait_for(WAIT, "the Workload Finished", || {
        workload_of(c, &ns, "short").filter(|w| is_true(w, "Finished"))
    });

    // Outside an AppWrapper: an unowned pod with the runtime annotation
    // completes, one without it keeps running.
    let bare = |name: &str, annotations: Value| {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": ns, "annotations": annotations},
               "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox"}]}})
        .to_string()
    };
    create(c, &bare("bare-done", json!({POD_RUNTIME_ANNOTATION: "1s"})));
    create(c, &bare("bare-running", json!({})));
    wait_for(WAIT, "the annotated bare pod Succeeded", || {
        get(c, &["pod", "bare-done", "-n", &ns]).filter(|p| p["status"]["phase"] == "Succeeded")
    });
    wait_for(WAIT, "the unannotated bare pod Running", || {
        get(c, &["pod", "bare-running", "-n", &ns]).filter(|p| p["status"]["phase"] == "Running")
    });
    std::thread::sleep(Duration::from_secs(3));
    let p = get(c, &["pod", "bare-running", "-n", &ns]).unwrap();
    assert_eq!(p["status"]["phase"], "Running", "{p}");
}

#[test]
fn a_drained_appwrapper_is_suspended_its_components_removed_and_its_quota_released() {
    let c = env().cluster;
    let ns = namespace(c, "e2e-aw-drain");
    setup(c, &ns);
    apply(
        c,
        &cluster_queue("aw-drain-cq", &[("aw-spot", "10", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "drain-queue", "aw-drain-cq"));
    create(c, &appwrapper("held", &ns, "drain-queue", "10m", false));
    wait_for(WAIT, "the AppWrapper Running", || {
        aw(c, &ns, "held").filter(|a| a["status"]["phase"] == "Running")
    });
    wait_for(WAIT, "its pod created", || {
        (pods(c, &ns, "held").len() == 1).then_some(())
    });

    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "clusterqueue",
            "aw-drain-cq",
            "--type=merge",
            "-p",
            r#"{"spec":{"stopPolicy":"HoldAndDrain"}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let a = wait_for(WAIT, "the AppWrapper Suspended", || {
        aw(c, &ns, "held").filter(|a| a["status"]["phase"] == "Suspended")
    });
    assert_eq!(a["spec"]["suspend"], true, "{a}");
    assert!(
        a["spec"]["components"][0].get("podSetInfos").is_none(),
        "{a}"
    );
    assert!(get(c, &["jobs", "held-job", "-n", &ns]).is_none());
    wait_for(WAIT, "its pod gone", || {
        pods(c, &ns, "held").is_empty().then_some(())
    });
    let wl = wait_for(WAIT, "the Workload's quota released", || {
        workload_of(c, &ns, "held").filter(|w| {
            is_true(w, "Evicted")
                && condition(w, "QuotaReserved").is_some_and(|q| q["status"] == "False")
        })
    });
    assert!(!is_true(&wl, "Admitted"), "{wl}");
    wait_for(WAIT, "the drained ClusterQueue to hold nothing", || {
        let (_, reserving, admitted, _) = cq_counts(c, "aw-drain-cq")?;
        (reserving == 0 && admitted == 0).then_some(())
    });
}

#[test]
fn a_failing_appwrapper_is_reset_then_past_its_retry_limit_failed_and_its_resources_deleted() {
    let c = env().cluster;
    let ns = namespace(c, "e2e-aw-fail");
    setup(c, &ns);
    // The Job (backoffLimit 0) fails as soon as its pod does, a second
    // after it runs.
    let mut a: Value =
        serde_json::from_str(&appwrapper("flaky", &ns, "aw-queue", "10m", false)).unwrap();
    let template = &mut a["spec"]["components"][0]["template"]["spec"]["template"]["metadata"];
    template["annotations"] = json!({POD_FAIL_ANNOTATION: "1s"});
    a["metadata"]["annotations"] = json!({
        "workload.codeflare.dev.appwrapper/retryLimit": "1",
        "workload.codeflare.dev.appwrapper/retryPausePeriodDuration": "2s",
        "workload.codeflare.dev.appwrapper/failureGracePeriodDuration": "0s",
    });
    create(c, &a.to_string());

    // Reset once: its Job and pod deleted, then, after the pause, created
    // again.
    let resetting = wait_for(WAIT, "the AppWrapper Resetting", || {
        aw(c, &ns, "flaky").filter(|a| a["status"]["phase"] == "Resetting")
    });
    assert_eq!(resetting["status"]["resettingCount"], 1, "{resetting}");
    let unhealthy = condition(&resetting, "Unhealthy").unwrap();
    assert_eq!(unhealthy["status"], "True", "{resetting}");

    // Resumed, failed again, and with no retry left: Failed.
    let failed = wait_for(WAIT, "the AppWrapper Failed", || {
        aw(c, &ns, "flaky").filter(|a| a["status"]["phase"] == "Failed")
    });
    assert_eq!(failed["status"]["resettingCount"], 1, "{failed}");
    let failed = wait_for(WAIT, "the failed AppWrapper's resources deleted", || {
        aw(c, &ns, "flaky").filter(|a| {
            condition(a, "ResourcesDeployed").is_some_and(|d| d["status"] == "False")
                && condition(a, "QuotaReserved").is_some_and(|q| q["status"] == "False")
        })
    });
    assert_eq!(failed["status"]["phase"], "Failed", "{failed}");
    wait_for(WAIT, "its Job gone", || {
        get(c, &["jobs", "flaky-job", "-n", &ns])
            .is_none()
            .then_some(())
    });
    wait_for(WAIT, "its pods gone", || {
        pods(c, &ns, "flaky").is_empty().then_some(())
    });
    let wl = wait_for(WAIT, "the Workload Finished", || {
        workload_of(c, &ns, "flaky").filter(|w| is_true(w, "Finished"))
    });
    let finished = condition(&wl, "Finished").unwrap();
    assert_eq!(finished["reason"], "Failed", "{wl}");
    assert_eq!(finished["message"], "AppWrapper failed", "{wl}");
}

/// `kubectl --as=<user> <args>` with `stdin`: (success, stdout + stderr).
fn kubectl_as(c: &LocalCluster, user: &str, args: &[&str], stdin: Option<&str>) -> (bool, String) {
    let as_user = format!("--as={user}");
    let mut all = vec![as_user.as_str()];
    all.extend_from_slice(args);
    let (ok, out, err) = kubectl(c, &all, stdin);
    (ok, format!("{out}{err}"))
}

#[test]
fn a_user_who_may_not_create_pods_is_refused_an_appwrapper_wrapping_one() {
    let c = env().cluster;
    let ns = namespace(c, "e2e-aw-rbac");
    setup(c, &ns);
    let subject = |name: &str| json!({"kind": "ServiceAccount", "name": name, "namespace": ns});
    let role = |name: &str, rules: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": name, "namespace": ns}, "rules": rules})
    };
    let binding = |name: &str, subjects: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": name, "namespace": ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
               "subjects": subjects})
    };
    let rbac = [
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "aw-only", "namespace": ns}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "aw-and-pods", "namespace": ns}}),
        // Both may create AppWrappers; only aw-and-pods may create pods.
        role(
            "aw-author",
            json!([{"apiGroups": ["workload.codeflare.dev"], "resources": ["appwrappers"],
                    "verbs": ["create"]}]),
        ),
        binding(
            "aw-author",
            json!([subject("aw-only"), subject("aw-and-pods")]),
        ),
        role(
            "pod-author",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]),
        ),
        binding("pod-author", json!([subject("aw-and-pods")])),
    ];
    apply(
        c,
        &rbac
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n---\n"),
    );
    let user = |sa: &str| format!("system:serviceaccount:{ns}:{sa}");
    // RBAC is in force once the apiserver's authorizer says so (and before
    // batchgate asks, so it caches no stale answer).
    for (sa, what) in [
        ("aw-only", "appwrappers.workload.codeflare.dev"),
        ("aw-and-pods", "appwrappers.workload.codeflare.dev"),
        ("aw-and-pods", "pods"),
    ] {
        wait_for(WAIT, &format!("RBAC: {sa} may create {what}"), || {
            kubectl_as(
                c,
                &user(sa),
                &["auth", "can-i", "create", what, "-n", &ns],
                None,
            )
            .0
            .then_some(())
        });
    }
    let (may, out) = kubectl_as(
        c,
        &user("aw-only"),
        &["auth", "can-i", "create", "pods", "-n", &ns],
        None,
    );
    assert!(!may, "aw-only may create pods: {out}");

    // A Pod alone, queued.
    let wrapped_pod = |name: &str| {
        json!({
            "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "aw-queue"}},
            "spec": {"components": [{"template": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{name}-pod")},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "main", "image": "busybox",
                                         "command": ["true"],
                                         "resources": {"requests": {"cpu": "100m"}}}]}}}]},
        })
        .to_string()
    };

    let (ok, out) = kubectl_as(
        c,
        &user("aw-only"),
        &["create", "-f", "-"],
        Some(&wrapped_pod("refused")),
    );
    assert!(!ok, "created without permission to create pods: {out}");
    eprintln!("kubectl without pods: {}", out.trim());
    for part in [
        r#"admission webhook "vappwrapper.kb.io" denied the request"#,
        &format!(
            "spec.components[0].template: Forbidden: User {} is not authorized to create pods in {ns}",
            user("aw-only")
        ),
    ] {
        assert!(out.contains(part), "missing {part:?} in:\n{out}");
    }
    assert!(aw(c, &ns, "refused").is_none());

    let (ok, out) = kubectl_as(
        c,
        &user("aw-and-pods"),
        &["create", "-o", "json", "-f", "-"],
        Some(&wrapped_pod("allowed")),
    );
    assert!(ok, "{out}");
    let stored = aw(c, &ns, "allowed").expect("the AppWrapper stored");
    assert_eq!(
        stored["metadata"]["labels"]["workload.codeflare.dev/user"],
        format!("system_serviceaccount_{ns}_aw-and-pods"),
        "{stored}"
    );
}

/// `metadata.uid` of each object, and that none is being deleted.
fn uids_untouched(objs: &[Value]) -> Vec<String> {
    objs.iter()
        .map(|o| {
            assert!(
                o["metadata"]["deletionTimestamp"].is_null(),
                "being deleted: {o}"
            );
            o["metadata"]["uid"].as_str().unwrap().to_string()
        })
        .collect()
}

/// A user's running Job `sample-job` (queued, admitted, its pods even
/// carrying the AppWrapper label), then an AppWrapper wrapping a Job of the
/// same name: the AppWrapper fails with upstream's words and its cleanup
/// completes, and the user's Job, pods and Workload are the same objects,
/// untouched, afterwards and after the AppWrapper is deleted too.
#[test]
fn an_appwrapper_never_deletes_a_same_named_object_it_does_not_own() {
    let c = env().cluster;
    let ns = namespace(c, "e2e-aw-foreign");
    setup(c, &ns);

    let mut user_job: Value = serde_json::from_str(&job(
        "sample-job",
        &ns,
        "aw-queue",
        "100m",
        "10m",
        json!({}),
    ))
    .unwrap();
    user_job["spec"]["template"]["metadata"]["labels"] = json!({LABEL: "x"});
    create(c, &user_job.to_string());
    let user_pods = || {
        get(
            c,
            &[
                "pods",
                "-n",
                &ns,
                "-l",
                "batch.kubernetes.io/job-name=sample-job",
            ],
        )
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
    };
    let running = wait_for(WAIT, "the user's Job admitted and its pod running", || {
        let wl = workload_of(c, &ns, "sample-job").filter(|w| is_true(w, "Admitted"))?;
        let ps = user_pods();
        (ps.len() == 1 && ps[0]["status"]["phase"] == "Running").then_some((wl, ps))
    });
    let (wl_before, pods_before) = running;
    let job_before = get(c, &["jobs", "sample-job", "-n", &ns]).unwrap();
    let job_uid = uids_untouched(std::slice::from_ref(&job_before));
    let wl_uid = uids_untouched(&[wl_before]);
    let pod_uids = uids_untouched(&pods_before);

    let mut wrapper: Value =
        serde_json::from_str(&appwrapper("x", &ns, "aw-queue", "10m", false)).unwrap();
    wrapper["spec"]["components"][0]["template"]["metadata"]["name"] = json!("sample-job");
    create(c, &wrapper.to_string());

    let failed = wait_for(WAIT, "the AppWrapper Failed", || {
        aw(c, &ns, "x").filter(|a| a["status"]["phase"] == "Failed")
    });
    let unhealthy = condition(&failed, "Unhealthy").expect("an Unhealthy condition");
    assert_eq!(unhealthy["status"], "True", "{failed}");
    assert_eq!(unhealthy["reason"], "CreateFailed", "{failed}");
    assert_eq!(
        unhealthy["message"],
        "error creating components: resource sample-job exists, but is not controlled by appwrapper",
        "{failed}"
    );
    // The cleanup of the failed AppWrapper has run to its end.
    let cleaned = wait_for(WAIT, "the failed AppWrapper's cleanup done", || {
        aw(c, &ns, "x").filter(|a| {
            condition(a, "ResourcesDeployed").is_some_and(|d| {
                d["status"] == "False" && d["message"] == "Resources deleted for failed AppWrapper"
            }) && condition(a, "QuotaReserved").is_some_and(|q| q["status"] == "False")
        })
    });
    assert_eq!(
        condition(&cleaned, "DeletingResources").map(|d| d["reason"].clone()),
        Some(json!("DeletionComplete")),
        "{cleaned}"
    );
    let component = &cleaned["status"]["componentStatus"][0];
    let deployed = component["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "ResourcesDeployed"))
        .unwrap_or_else(|| panic!("no component condition: {cleaned}"));
    assert_eq!(deployed["status"], "False", "{cleaned}");

    let check_untouched = |when: &str| {
        let job_now = get(c, &["jobs", "sample-job", "-n", &ns])
            .unwrap_or_else(|| panic!("{when}: the user's Job is gone"));
        assert_eq!(
            uids_untouched(std::slice::from_ref(&job_now)),
            job_uid,
            "{when}"
        );
        assert!(
            job_now["metadata"]["ownerReferences"].is_null(),
            "{when}: adopted: {job_now}"
        );
        assert_eq!(
            job_now["metadata"]["labels"], job_before["metadata"]["labels"],
            "{when}"
        );
        let wl_now = workload_of(c, &ns, "sample-job")
            .unwrap_or_else(|| panic!("{when}: the user's Workload is gone"));
        assert_eq!(
            uids_untouched(std::slice::from_ref(&wl_now)),
            wl_uid,
            "{when}"
        );
        assert!(is_true(&wl_now, "Admitted"), "{when}: {wl_now}");
        assert!(!is_true(&wl_now, "Finished"), "{when}: {wl_now}");
        let mut now = uids_untouched(&user_pods());
        let mut before = pod_uids.clone();
        now.sort();
        before.sort();
        assert_eq!(now, before, "{when}: the user's pods");
    };
    check_untouched("after the cleanup");
    // A delete sent during the cleanup would show by now.
    std::thread::sleep(Duration::from_secs(5));
    check_untouched("five seconds after the cleanup");

    // Deleting the AppWrapper (its finalizer's cleanup) leaves them too.
    let (ok, out, err) = kubectl(
        c,
        &[
            "delete",
            "appwrappers.workload.codeflare.dev",
            "x",
            "-n",
            &ns,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "the AppWrapper gone", || {
        aw(c, &ns, "x").is_none().then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    check_untouched("after the AppWrapper was deleted");
}

/// An RFC 3339 timestamp field of `obj` at `pointer`.
fn time_at(obj: &Value, pointer: &str) -> Timestamp {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no timestamp at {pointer}: {obj}"))
}

/// A ClusterQueue's reservation and usage (flavor/resource = total), and
/// its reserving and admitted Workload counts.
fn cq_quota(c: &LocalCluster, name: &str) -> Option<(Vec<String>, Vec<String>, i64, i64)> {
    let cq = get(c, &["clusterqueue", name])?;
    let totals = |key: &str| -> Vec<String> {
        let mut out = Vec::new();
        for f in cq["status"][key].as_array().into_iter().flatten() {
            for r in f["resources"].as_array().into_iter().flatten() {
                out.push(format!(
                    "{}/{}={}",
                    f["name"].as_str().unwrap_or(""),
                    r["name"].as_str().unwrap_or(""),
                    r["total"].as_str().unwrap_or("")
                ));
            }
        }
        out
    };
    Some((
        totals("flavorsReservation"),
        totals("flavorsUsage"),
        cq["status"]["reservingWorkloads"].as_i64()?,
        cq["status"]["admittedWorkloads"].as_i64()?,
    ))
}

/// A fake GPU node KWOK runs, in the pool `e2e-pool=aw-autopilot`.
fn gpu_node(name: &str) -> String {
    let capacity = json!({"cpu": "4", "memory": "8Gi", "pods": "20", "nvidia.com/gpu": "1"});
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "type": "kwok", "e2e-pool": "aw-autopilot"},
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
        "status": {"capacity": capacity, "allocatable": capacity}})
    .to_string()
}

/// Upstream's e2e "Autopilot" case (reference E18), on two KWOK GPU nodes
/// of one flavor: an AppWrapper of a Pod using a GPU runs on one of them;
/// the test, playing IBM Autopilot, labels that node
/// `autopilot.ibm.com/gpuhealth=EVICT`. The AppWrapper goes Unhealthy
/// (`AutopilotNoExecute`, upstream's message) and Resetting without
/// counting a retry, its pod is deleted and, after the configured 3 s
/// pause, recreated on the other node (the anti-affinity injected into
/// every GPU pod keeps it off the EVICT one), and it is Running again. The
/// ClusterQueue's reservation and usage, sampled throughout, never change:
/// the Workload keeps its quota, neither released nor counted twice.
#[test]
fn autopilot_moves_an_appwrapper_off_a_node_labelled_evict_keeping_its_quota() {
    let c = env().cluster;
    let ns = namespace(c, "e2e-aw-autopilot");
    let nodes = ["kwok-aw-gpu-a", "kwok-aw-gpu-b"];
    for n in nodes {
        apply(c, &gpu_node(n));
    }
    for n in nodes {
        wait_for(WAIT, "the GPU node Ready", || {
            get(c, &["node", n]).filter(|node| is_true(node, "Ready"))
        });
    }
    apply(
        c,
        &flavor("aw-gpu-pool", json!({"e2e-pool": "aw-autopilot"})),
    );
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "aw-gpu-cq"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [{"name": "aw-gpu-pool", "resources": [
                    {"name": "cpu", "nominalQuota": "4"},
                    {"name": "nvidia.com/gpu", "nominalQuota": "2"}]}]}]}})
        .to_string(),
    );
    apply(c, &local_queue(&ns, "gpu-queue", "aw-gpu-cq"));
    let resources = json!({"requests": {"cpu": "500m", "nvidia.com/gpu": "1"},
                           "limits": {"nvidia.com/gpu": "1"}});
    create(
        c,
        &json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": "gpu-train", "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"}},
            "spec": {"components": [{"template": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "gpu-train-0",
                             "annotations": {POD_RUNTIME_ANNOTATION: "10m"}},
                "spec": {"restartPolicy": "Never", "containers": [{
                    "name": "main", "image": "busybox", "command": ["sleep", "600"],
                    "resources": resources}]}}}]}})
        .to_string(),
    );

    let running = |what: &str| {
        wait_for(WAIT, what, || {
            let ps = pods(c, &ns, "gpu-train");
            let a = aw(c, &ns, "gpu-train")?;
            (a["status"]["phase"] == "Running"
                && is_true(&a, "PodsReady")
                && ps.len() == 1
                && ps[0]["status"]["phase"] == "Running")
                .then(|| ps[0].clone())
        })
    };
    let first = running("the AppWrapper Running with its pod on a GPU node");
    let bad = first["spec"]["nodeName"].as_str().unwrap().to_string();
    assert!(nodes.contains(&bad.as_str()), "{first}");
    let good = nodes.iter().find(|n| **n != bad).unwrap().to_string();
    let terms = &first["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    assert!(
        terms[0]["matchExpressions"].as_array().unwrap().contains(&json!(
            {"key": "autopilot.ibm.com/gpuhealth", "operator": "NotIn", "values": ["TESTING", "EVICT"]}
        )),
        "the injected anti-affinity: {first}"
    );
    let before = wait_for(WAIT, "the ClusterQueue's usage reported", || {
        cq_quota(c, "aw-gpu-cq").filter(|q| q.3 == 1 && !q.1.is_empty())
    });
    assert!(
        before
            .0
            .contains(&"aw-gpu-pool/nvidia.com/gpu=1".to_string()),
        "{before:?}"
    );

    // Sample the quota and the Workload from now until Running again.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (stop, ns) = (stop.clone(), ns.clone());
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let q = cq_quota(c, "aw-gpu-cq");
                let wl = workload_of(c, &ns, "gpu-train")
                    .map(|w| (is_true(&w, "QuotaReserved"), is_true(&w, "Admitted")));
                let phase = aw(c, &ns, "gpu-train")
                    .and_then(|a| a["status"]["phase"].as_str().map(String::from));
                seen.push((q, wl, phase));
                std::thread::sleep(Duration::from_millis(200));
            }
            seen
        })
    };

    // Playing IBM Autopilot: its health check found the node's GPU bad.
    let labelled = std::time::Instant::now();
    let (ok, out, err) = kubectl(
        c,
        &["label", "node", &bad, "autopilot.ibm.com/gpuhealth=EVICT"],
        None,
    );
    assert!(ok, "{out}{err}");
    let unhealthy = wait_for(
        WAIT,
        "the AppWrapper Unhealthy with AutopilotNoExecute",
        || {
            aw(c, &ns, "gpu-train").filter(|a| {
                condition(a, "Unhealthy")
                    .is_some_and(|u| u["status"] == "True" && u["reason"] == "AutopilotNoExecute")
            })
        },
    );
    let u = condition(&unhealthy, "Unhealthy").unwrap();
    assert_eq!(
        u["message"],
        format!("Workload contains pods using NoExecute resources on Nodes: map[{bad}:{{}}]"),
        "{unhealthy}"
    );
    let noticed = time_at(u, "/lastTransitionTime");
    // The node watch wakes the AppWrapper; upstream waits for its periodic
    // check, up to a minute.
    let after = labelled.elapsed();
    eprintln!("Unhealthy seen {after:?} after the label");
    assert!(after < Duration::from_secs(30), "{after:?}");

    // Evacuated: a new pod, on the healthy node, and Running again.
    let second = wait_for(
        WAIT,
        "the pod recreated and running on the healthy node",
        || {
            let ps = pods(c, &ns, "gpu-train");
            (ps.len() == 1
                && ps[0]["metadata"]["uid"] != first["metadata"]["uid"]
                && ps[0]["status"]["phase"] == "Running")
                .then(|| ps[0].clone())
        },
    );
    assert_eq!(second["spec"]["nodeName"], good.as_str(), "{second}");
    let paused = time_at(&second, "/metadata/creationTimestamp").duration_since(noticed);
    eprintln!("recreated {paused:?} after Unhealthy (resetPause 3s)");
    assert!(
        paused.as_secs() >= 2 && paused.as_secs() < 60,
        "the configured 3 s pause, not upstream's 90 s: {paused:?}"
    );
    let a = wait_for(WAIT, "the AppWrapper Running again and healthy", || {
        aw(c, &ns, "gpu-train").filter(|a| {
            a["status"]["phase"] == "Running"
                && is_true(a, "PodsReady")
                && condition(a, "Unhealthy").is_some_and(|u| u["status"] == "False")
        })
    });
    assert_eq!(
        a["status"]["resettingCount"].as_i64().unwrap_or(0),
        0,
        "{a}"
    );
    assert_eq!(pods(c, &ns, "gpu-train").len(), 1);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = sampler.join().unwrap();
    eprintln!("{} samples of the quota during the evacuation", seen.len());
    assert!(
        seen.iter().any(|s| s.2.as_deref() == Some("Resetting")),
        "no sample while Resetting: {seen:?}"
    );
    for (q, wl, _) in &seen {
        if let Some(q) = q {
            assert_eq!(q, &before, "the ClusterQueue's quota changed: {seen:?}");
        }
        assert_eq!(
            wl,
            &Some((true, true)),
            "the Workload lost its quota: {seen:?}"
        );
    }
    assert_eq!(cq_quota(c, "aw-gpu-cq"), Some(before));

    // The node healed: Autopilot relabels it.
    let _ = kubectl(
        c,
        &["label", "node", &bad, "autopilot.ibm.com/gpuhealth-"],
        None,
    );
}

/// The configuration's `faultTolerance.resetPause` (3 s here) replaces
/// upstream's default of 90 s: an AppWrapper whose Job fails (no retry
/// pause of its own) is reset, and its Job created again 3 s after it went
/// Unhealthy. (Failed with a deletion delay, so that Job stays to be read.)
#[test]
fn the_configured_reset_pause_replaces_upstreams_default() {
    let c = env().cluster;
    let ns = namespace(c, "e2e-aw-pause");
    setup(c, &ns);
    let mut a: Value =
        serde_json::from_str(&appwrapper("paused", &ns, "aw-queue", "10m", false)).unwrap();
    let template = &mut a["spec"]["components"][0]["template"]["spec"]["template"]["metadata"];
    template["annotations"] = json!({POD_FAIL_ANNOTATION: "1s"});
    a["metadata"]["annotations"] = json!({
        "workload.codeflare.dev.appwrapper/retryLimit": "1",
        "workload.codeflare.dev.appwrapper/failureGracePeriodDuration": "0s",
        "workload.codeflare.dev.appwrapper/deletionOnFailureGracePeriodDuration": "10m",
    });
    create(c, &a.to_string());
    let resetting = wait_for(WAIT, "the AppWrapper Resetting", || {
        aw(c, &ns, "paused").filter(|a| a["status"]["phase"] == "Resetting")
    });
    let unhealthy = time_at(
        condition(&resetting, "Unhealthy").unwrap(),
        "/lastTransitionTime",
    );
    wait_for(WAIT, "the AppWrapper Failed after its one retry", || {
        aw(c, &ns, "paused").filter(|a| a["status"]["phase"] == "Failed")
    });
    let job = get(c, &["jobs", "paused-job", "-n", &ns]).expect("kept by the deletion delay");
    let second_job = time_at(&job, "/metadata/creationTimestamp");
    let paused = second_job.duration_since(unhealthy);
    eprintln!("Job created again {paused:?} after Unhealthy (resetPause 3s)");
    assert!(
        paused.as_secs() >= 2 && paused.as_secs() < 60,
        "the configured 3 s pause, not upstream's 90 s: {paused:?}"
    );
    let (ok, out, err) = kubectl(
        c,
        &[
            "delete",
            "appwrappers.workload.codeflare.dev",
            "paused",
            "-n",
            &ns,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
}

/// The wrapped objects are watched: a component changed by hand wakes its
/// AppWrapper at once, not at its next pod event or its minute's timed
/// look. Here a ConfigMap component (no pods of its own, so no pod event
/// tells of it) is deleted while the AppWrapper runs: it is found missing
/// (upstream's `MissingComponent`) within seconds of the delete.
#[test]
fn a_wrapped_object_deleted_by_hand_is_seen_at_once() {
    let c = env().cluster;
    let ns = namespace(c, "e2e-aw-watch");
    setup(c, &ns);
    let mut wrapper: Value =
        serde_json::from_str(&appwrapper("watched", &ns, "aw-queue", "10m", false)).unwrap();
    wrapper["spec"]["components"].as_array_mut().unwrap().push(
        json!({"template": {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "watched-settings"},
                                  "data": {"k": "v"}}}),
    );
    create(c, &wrapper.to_string());
    wait_for(WAIT, "the AppWrapper Running with its pod Running", || {
        let a = aw(c, &ns, "watched")?;
        let running = pods(c, &ns, "watched")
            .iter()
            .any(|p| p["status"]["phase"] == "Running");
        (a["status"]["phase"] == "Running" && running).then_some(a)
    });
    assert!(
        get(c, &["configmap", "watched-settings", "-n", &ns]).is_some(),
        "premise: the ConfigMap component exists"
    );
    let a = aw(c, &ns, "watched").unwrap();
    assert!(
        !is_true(&a, "Unhealthy"),
        "premise: healthy before the delete: {a}"
    );
    let deleted_at = Timestamp::now();
    let (ok, out, err) = kubectl(
        c,
        &[
            "delete",
            "configmap",
            "watched-settings",
            "-n",
            &ns,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let a = wait_for(WAIT, "the AppWrapper finding its component missing", || {
        aw(c, &ns, "watched").filter(|a| {
            condition(a, "Unhealthy").is_some_and(|u| u["reason"] == "MissingComponent")
        })
    });
    let seen = time_at(condition(&a, "Unhealthy").unwrap(), "/lastTransitionTime");
    let after = seen.duration_since(deleted_at).as_secs_f64().max(0.0);
    // Its timed look comes a minute after the pod's Running event; the
    // watch brings it within seconds (condition times have 1 s precision).
    assert!(
        after < 30.0,
        "found missing {after:.1} s after the delete, as late as a timed look: {a}"
    );
    eprintln!("missing component seen {after:.1} s after the delete");
}
