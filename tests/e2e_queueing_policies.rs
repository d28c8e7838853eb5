//! Queueing policies end to end on the local cluster, checked with kubectl
//! as a user would: borrowing within a cohort and reclaiming it back,
//! StrictFIFO against BestEffortFIFO, and stopping (Hold, HoldAndDrain) and
//! resuming a ClusterQueue or a LocalQueue; and, with Kueue's DRA
//! integration turned off in batchgate's configuration, Jobs that use DRA
//! refused as Kueue refuses them; and the Workload lifecycle rules of
//! [`lifecycle`]. Each test has its own flavor, ClusterQueues and
//! namespaces, so they run side by side.

mod support;

#[path = "e2e_queueing_policies/lifecycle.rs"]
mod lifecycle;

#[path = "e2e_queueing_policies/elastic.rs"]
mod elastic;

#[path = "e2e_queueing_policies/topology.rs"]
mod topology;

use std::time::Duration;

use batchgate_localcluster::LocalCluster;
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

const LONG: Duration = Duration::from_secs(120);
const SHORT: Duration = Duration::from_secs(60);
/// batchgate's configuration for this binary: Kueue's DRA integration off
/// (`KueueDRARejectWorkloadsWhenDRADisabled` stays on, its default). No
/// other test here uses DRA.
const CONFIG: &str = "featureGates:\n  KueueDRAIntegration: false\n  KueueDRAIntegrationExtendedResource: false\n  KueueDRAIntegrationPartitionableDevices: false\n";

fn job_obj(c: &LocalCluster, ns: &str, name: &str) -> Value {
    get(c, &["job", name, "-n", ns]).unwrap_or(Value::Null)
}

fn patch(c: &LocalCluster, what: &[&str], body: Value) {
    let body = body.to_string();
    let mut args = vec!["patch"];
    args.extend_from_slice(what);
    args.extend(["--type=merge", "-p", &body]);
    let (ok, out, err) = kubectl(c, &args, None);
    assert!(ok, "{out}{err}");
}

/// `(reason, message)` of a condition that is true.
fn true_condition(obj: &Value, ty: &str) -> Option<(String, String)> {
    condition(obj, ty)
        .filter(|c| c["status"] == "True")
        .map(|c| (s(&c["reason"]), s(&c["message"])))
}

/// `(status, reason, message)` of a condition.
fn condition_of(obj: &Value, ty: &str) -> Option<(String, String, String)> {
    condition(obj, ty).map(|c| (s(&c["status"]), s(&c["reason"]), s(&c["message"])))
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// The Workload of a job holds quota and the job runs (or has run).
fn running(c: &LocalCluster, ns: &str, job: &str) -> bool {
    let Some(wl) = workload_of(c, ns, job) else {
        return false;
    };
    is_true(&wl, "QuotaReserved")
        && is_true(&wl, "Admitted")
        && !is_true(&wl, "Evicted")
        && job_obj(c, ns, job)["spec"]["suspend"] == false
}

fn succeeded(c: &LocalCluster, ns: &str, job: &str) -> bool {
    job_obj(c, ns, job)["status"]["succeeded"]
        .as_i64()
        .unwrap_or(0)
        > 0
}

/// One line per Job of the namespaces: suspended, succeeded, and its
/// Workload's conditions — what a failure message needs to be read.
fn summary(c: &LocalCluster, namespaces: &[&str]) -> String {
    let mut out = String::new();
    for ns in namespaces {
        for (name, suspended, done) in jobs(c, ns) {
            let conds = workload_of(c, ns, &name)
                .and_then(|w| w["status"]["conditions"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .map(|c| {
                    format!(
                        "{}={}({} {})",
                        s(&c["type"]),
                        s(&c["status"]),
                        s(&c["reason"]),
                        s(&c["lastTransitionTime"])
                    )
                })
                .collect::<Vec<_>>()
                .join(" ");
            let status = job_obj(c, ns, &name)["status"].to_string();
            out += &format!("{ns}/{name} suspended={suspended} succeeded={done} {conds}\n    job status: {status}\n");
        }
    }
    out
}

/// `(total, borrowed)` cpu of a ClusterQueue's `status.flavorsUsage`.
fn cpu_usage(c: &LocalCluster, cq: &str) -> Option<(String, String)> {
    let cq = get(c, &["clusterqueue", cq])?;
    let r = cq["status"]["flavorsUsage"]
        .as_array()?
        .iter()
        .flat_map(|f| f["resources"].as_array().cloned().unwrap_or_default())
        .find(|r| r["name"] == "cpu")?;
    Some((s(&r["total"]), s(&r["borrowed"])))
}

/// The Job is suspended and its pod template is back as it was created:
/// no flavor node selector, no pod-set or queue labels.
fn assert_stopped_and_restored(c: &LocalCluster, ns: &str, name: &str) {
    let job = wait_for(
        SHORT,
        &format!("{ns}/{name} suspended and restored"),
        || {
            let j = job_obj(c, ns, name);
            let t = &j["spec"]["template"];
            (j["spec"]["suspend"] == true
                && t["spec"]["nodeSelector"]
                    .as_object()
                    .is_none_or(|m| m.is_empty())
                && t["metadata"]["labels"]["kueue.x-k8s.io/podset"].is_null())
            .then_some(j)
        },
    );
    let labels = &job["spec"]["template"]["metadata"]["labels"];
    assert!(
        labels["kueue.x-k8s.io/local-queue-name"].is_null(),
        "{labels}"
    );
    assert!(
        labels["kueue.x-k8s.io/cluster-queue-name"].is_null(),
        "{labels}"
    );
}

/// Two ClusterQueues of 2 cpu in one cohort. A runs four 1-cpu Jobs, two of
/// them on B's unused quota (A reports 2 cpu borrowed). When B gets Jobs of
/// its own it reclaims its quota (`reclaimWithinCohort: Any`): two of A's
/// Workloads are preempted (Evicted/Preempted with Kueue's reasons), their
/// Jobs suspended and restored, B's Jobs run, and A's preempted Jobs run
/// again once B's are done.
#[test]
fn a_cluster_queue_reclaims_the_quota_its_cohort_borrowed() {
    let c = env_with(CONFIG).cluster;
    let ns_a = namespace(c, "e2e-reclaim-a");
    let ns_b = namespace(c, "e2e-reclaim-b");
    apply(c, &flavor("reclaim-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue(
            "reclaim-a",
            &[("reclaim-spot", "2", Some("2"))],
            json!({"cohortName": "reclaim-cohort"}),
        ),
    );
    apply(
        c,
        &cluster_queue(
            "reclaim-b",
            &[("reclaim-spot", "2", None)],
            json!({"cohortName": "reclaim-cohort", "preemption": {"reclaimWithinCohort": "Any"}}),
        ),
    );
    apply(c, &local_queue(&ns_a, "lq", "reclaim-a"));
    apply(c, &local_queue(&ns_b, "lq", "reclaim-b"));

    // Long enough that A's two unpreempted Jobs and B's Jobs still run
    // while the checks below read them (each a kubectl call, slow under
    // load): the statuses asserted are those of that window.
    let a_jobs: Vec<String> = (0..4).map(|i| format!("a-{i}")).collect();
    for name in &a_jobs {
        create(c, &job(name, &ns_a, "lq", "1", "60s", json!({})));
    }
    // All four run: 2 cpu of A's own, 2 borrowed from B.
    wait_for(SHORT, "A's four Jobs to run", || {
        a_jobs.iter().all(|j| running(c, &ns_a, j)).then_some(())
    });
    let (pending, reserving, admitted, _) = wait_for(SHORT, "A's status to count four", || {
        cq_counts(c, "reclaim-a").filter(|s| s.2 == 4)
    });
    assert_eq!((pending, reserving, admitted), (0, 4, 4));
    let usage = wait_for(SHORT, "A's usage", || {
        cpu_usage(c, "reclaim-a").filter(|u| u.0 == "4")
    });
    assert_eq!(usage, ("4".to_string(), "2".to_string()), "A borrows 2 cpu");

    // B's own Jobs take their quota back.
    let b_jobs = ["b-0", "b-1"];
    for name in b_jobs {
        create(c, &job(name, &ns_b, "lq", "1", "40s", json!({})));
    }
    wait_for(SHORT, "B's Jobs to run", || {
        b_jobs.iter().all(|j| running(c, &ns_b, j)).then_some(())
    });
    // Two of A's Workloads were preempted for them, no more.
    let preempted: Vec<(String, Value)> = a_jobs
        .iter()
        .filter_map(|j| workload_of(c, &ns_a, j).map(|w| (j.clone(), w)))
        .filter(|(_, w)| is_true(w, "Evicted"))
        .collect();
    assert_eq!(preempted.len(), 2, "{}", summary(c, &[&ns_a, &ns_b]));
    for (name, wl) in &preempted {
        let (reason, message) = true_condition(wl, "Evicted").unwrap();
        assert_eq!(reason, "Preempted", "{wl}");
        assert!(
            message.starts_with("Preempted to accommodate a workload (UID: ")
                && message.ends_with(
                    "due to reclamation within the cohort; preemptor path: /reclaim-cohort/reclaim-b; preemptee path: /reclaim-cohort/reclaim-a"
                ),
            "{message}"
        );
        let (reason, _) = true_condition(wl, "Preempted").expect("Preempted=True");
        assert_eq!(reason, "InCohortReclamation");
        assert_eq!(
            wl["status"]["schedulingStats"]["evictions"],
            json!([{"reason": "Preempted", "underlyingCause": "", "count": 1}]),
            "{wl}"
        );
        assert!(
            !succeeded(c, &ns_a, name),
            "{name} ran to the end before B came"
        );
        assert_stopped_and_restored(c, &ns_a, name);
        // Once stopped, the quota is given back and the Workload requeued.
        let wl = wait_for(SHORT, "the preempted Workload to release its quota", || {
            workload_of(c, &ns_a, name).filter(|w| !is_true(w, "QuotaReserved"))
        });
        assert!(wl["status"]["admission"].is_null(), "{wl}");
        assert_eq!(
            condition_of(&wl, "QuotaReserved").unwrap().1,
            "Pending",
            "{wl}"
        );
        let (status, reason, _) = condition_of(&wl, "Requeued").expect("Requeued");
        assert_eq!((status.as_str(), reason.as_str()), ("True", "Preempted"));
    }
    // The other two kept running.
    for name in &a_jobs {
        if !preempted.iter().any(|(n, _)| n == name) {
            let j = job_obj(c, &ns_a, name);
            assert_eq!(j["spec"]["suspend"], false, "{name}");
        }
    }
    let a = wait_for(SHORT, "A's status after the reclaim", || {
        cq_counts(c, "reclaim-a").filter(|s| s.1 == 2)
    });
    assert_eq!(
        (a.0, a.1, a.3.as_str()),
        (2, 2, "2"),
        "A: pending, reserving, cpu"
    );
    // Queue status is written at most once a second per queue: what a
    // user reads right after the Jobs start may lag by that much.
    wait_for(SHORT, "A to borrow nothing", || {
        cpu_usage(c, "reclaim-a").filter(|u| u.1 == "0")
    });
    let b = wait_for(SHORT, "B's status to count its two Jobs", || {
        cq_counts(c, "reclaim-b").filter(|s| s.2 == 2)
    });
    assert_eq!(
        (b.0, b.1, b.3.as_str()),
        (0, 2, "2"),
        "B: pending, reserving, cpu"
    );

    // When B's Jobs are done, A's preempted Jobs run again; all finish.
    wait_for(2 * LONG, "all six Jobs to succeed", || {
        (a_jobs.iter().all(|j| succeeded(c, &ns_a, j))
            && b_jobs.iter().all(|j| succeeded(c, &ns_b, j)))
        .then_some(())
    });
    for (name, _) in &preempted {
        let wl = workload_of(c, &ns_a, name).unwrap();
        assert!(is_true(&wl, "Finished"), "{wl}");
        let (status, reason, message) = condition_of(&wl, "Evicted").unwrap();
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "QuotaReserved")
        );
        assert!(
            message.starts_with("Previously: Preempted to accommodate"),
            "{message}"
        );
    }
    wait_for(SHORT, "the cohort's quota released", || {
        (cq_counts(c, "reclaim-a")?.1 == 0 && cq_counts(c, "reclaim-b")?.1 == 0).then_some(())
    });
}

/// A ClusterQueue of 2 cpu with a long 1-cpu Job running; then a 2-cpu Job
/// (older) that does not fit and a 1-cpu Job (newer) that would. Returns
/// the namespace once both waiting Jobs have Workloads in the queue.
fn fifo_setup(tag: &str, strategy: &str) -> String {
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, &format!("e2e-{tag}"));
    let cq = format!("{tag}-cq");
    let rf = format!("{tag}-on-demand");
    apply(c, &flavor(&rf, json!({"instance-type": "on-demand"})));
    apply(
        c,
        &cluster_queue(
            &cq,
            &[(&rf, "2", None)],
            json!({"queueingStrategy": strategy}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", &cq));

    create(c, &job("long", &ns, "lq", "1", "30s", json!({})));
    wait_for(SHORT, "the long Job to run", || {
        running(c, &ns, "long").then_some(())
    });

    create(c, &job("big", &ns, "lq", "2", "5s", json!({})));
    // The head does not fit: Kueue's pending reason and message.
    let wl = wait_for(SHORT, "big to be found not fitting", || {
        workload_of(c, &ns, "big").filter(|w| condition(w, "QuotaReserved").is_some())
    });
    let (status, reason, message) = condition_of(&wl, "QuotaReserved").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "Pending"),
        "{wl}"
    );
    assert_eq!(
        message,
        format!("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor {rf}, 1 more needed")
    );

    // creationTimestamp has one-second resolution: make the next Job
    // strictly newer so the queue order is not left to the UIDs.
    std::thread::sleep(Duration::from_millis(1100));
    // small runs long enough for the queue's status (written at most once
    // a second, later under load) to be read while it runs.
    create(c, &job("small", &ns, "lq", "1", "20s", json!({})));
    let small = wait_for(SHORT, "small's Workload", || workload_of(c, &ns, "small"));
    let big = workload_of(c, &ns, "big").unwrap();
    assert!(
        s(&small["metadata"]["creationTimestamp"]) > s(&big["metadata"]["creationTimestamp"]),
        "small must be newer than big"
    );
    ns
}

fn wait_all_succeed(c: &LocalCluster, ns: &str, names: &[&str]) {
    wait_for(LONG, &format!("{names:?} in {ns} to succeed"), || {
        names.iter().all(|j| succeeded(c, ns, j)).then_some(())
    });
}

/// StrictFIFO: the head that does not fit blocks the queue. The newer 1-cpu
/// Job is not admitted while the long Job runs, although it would fit; the
/// big one goes first when the long one is done, then the small one.
#[test]
fn strict_fifo_blocks_behind_a_head_that_does_not_fit() {
    let c = env_with(CONFIG).cluster;
    let ns = fifo_setup("strict", "StrictFIFO");
    // The ClusterQueue counts both as pending.
    wait_for(SHORT, "big and small pending", || {
        cq_counts(c, "strict-cq").filter(|s| (s.0, s.1) == (2, 1))
    });
    // Watched over the whole time the long Job runs: small never gets
    // quota before big does (big is read first, so a small admitted after
    // a quick big cannot be mistaken for one that jumped the queue).
    let big = wait_for(LONG, "big to be admitted", || {
        if let Some(big) = workload_of(c, &ns, "big").filter(|w| is_true(w, "QuotaReserved")) {
            return Some(big);
        }
        let small = workload_of(c, &ns, "small").unwrap();
        assert!(
            !is_true(&small, "QuotaReserved"),
            "StrictFIFO admitted the newer Job past the blocked head:\n{}",
            summary(c, &[&ns])
        );
        assert_eq!(job_obj(c, &ns, "small")["spec"]["suspend"], true);
        None
    });
    assert!(
        succeeded(c, &ns, "long"),
        "big (2 cpu) can only fit once long is done: {big}"
    );
    wait_all_succeed(c, &ns, &["long", "big", "small"]);
    // small got its quota only once big was done with it.
    let at = |job: &str, ty: &str| {
        s(&condition(&workload_of(c, &ns, job).unwrap(), ty).unwrap()["lastTransitionTime"])
    };
    assert!(
        at("small", "QuotaReserved") >= at("big", "Finished"),
        "{}",
        summary(c, &[&ns])
    );
}

/// BestEffortFIFO: the head that does not fit is set aside and the newer
/// 1-cpu Job is admitted beside the long one; the big one runs last.
#[test]
fn best_effort_fifo_admits_past_a_head_that_does_not_fit() {
    let c = env_with(CONFIG).cluster;
    let ns = fifo_setup("besteffort", "BestEffortFIFO");
    wait_for(SHORT, "small to run", || {
        running(c, &ns, "small").then_some(())
    });
    assert!(
        !succeeded(c, &ns, "long"),
        "small must be admitted while long still runs"
    );
    let big = workload_of(c, &ns, "big").unwrap();
    assert!(!is_true(&big, "QuotaReserved"), "{big}");
    assert_eq!(job_obj(c, &ns, "big")["spec"]["suspend"], true);
    // Queue status lags the Jobs by up to a second (one write a second).
    let (pending, reserving, admitted, used) =
        wait_for(SHORT, "the queue's status to count small", || {
            cq_counts(c, "besteffort-cq").filter(|s| s.2 == 2)
        });
    assert_eq!(
        (pending, reserving, admitted, used.as_str()),
        (1, 2, 2, "2")
    );
    wait_all_succeed(c, &ns, &["long", "small", "big"]);
}

/// Which queue a stop test stops.
#[derive(Clone, Copy)]
enum Stopped {
    ClusterQueue,
    LocalQueue,
}

/// Two long 1-cpu Jobs run in a 4-cpu ClusterQueue. Stopping the queue with
/// Hold keeps them running while a new Job waits (Inadmissible, "… is
/// stopped"), and a Job of another LocalQueue of the same ClusterQueue is
/// still admitted when only a LocalQueue is stopped; HoldAndDrain evicts the
/// running ones (suspended, templates restored); None admits everything
/// again and all Jobs finish.
fn hold_drain_resume(tag: &str, which: Stopped) {
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, &format!("e2e-{tag}"));
    let other_ns = namespace(c, &format!("e2e-{tag}-other"));
    let cq = format!("{tag}-cq");
    let rf = format!("{tag}-on-demand");
    apply(c, &flavor(&rf, json!({"instance-type": "on-demand"})));
    apply(c, &cluster_queue(&cq, &[(&rf, "4", None)], json!({})));
    apply(c, &local_queue(&ns, "lq", &cq));
    apply(c, &local_queue(&other_ns, "lq", &cq));
    let (target, stopped_msg, evict_reason, evict_msg): (Vec<&str>, String, &str, &str) =
        match which {
            Stopped::ClusterQueue => (
                vec!["clusterqueue", &cq],
                format!("ClusterQueue {cq} is stopped"),
                "ClusterQueueStopped",
                "The ClusterQueue is stopped",
            ),
            Stopped::LocalQueue => (
                vec!["localqueue", "lq", "-n", &ns],
                "LocalQueue lq is stopped".to_string(),
                "LocalQueueStopped",
                "The LocalQueue is stopped",
            ),
        };
    let stopped_active = |status: &str| {
        let obj = get(c, &target)?;
        let (st, reason, message) = condition_of(&obj, "Active")?;
        (st == status).then_some((reason, message))
    };

    let runners = ["run-0", "run-1"];
    for name in runners {
        create(c, &job(name, &ns, "lq", "1", "40s", json!({})));
    }
    wait_for(SHORT, "both Jobs to run", || {
        runners.iter().all(|j| running(c, &ns, j)).then_some(())
    });

    // Hold: the queue goes inactive, running Jobs keep running, a new Job
    // that fits waits with Kueue's reason.
    patch(c, &target, json!({"spec": {"stopPolicy": "Hold"}}));
    let (reason, message) = wait_for(SHORT, "the queue inactive", || stopped_active("False"));
    assert_eq!(reason, "Stopped");
    match which {
        Stopped::ClusterQueue => assert_eq!(message, "Can't admit new workloads: is stopped."),
        Stopped::LocalQueue => {
            assert_eq!(message, "LocalQueue is stopped");
            let cq_obj = get(c, &["clusterqueue", &cq]).unwrap();
            let (st, reason, _) = condition_of(&cq_obj, "Active").unwrap();
            assert_eq!(
                (st.as_str(), reason.as_str()),
                ("True", "Ready"),
                "{cq_obj}"
            );
        }
    }
    create(c, &job("held", &ns, "lq", "1", "3s", json!({})));
    let wl = wait_for(SHORT, "the held Job's pending reason", || {
        workload_of(c, &ns, "held").filter(|w| condition(w, "QuotaReserved").is_some())
    });
    assert_eq!(
        condition_of(&wl, "QuotaReserved").unwrap(),
        (
            "False".to_string(),
            "Inadmissible".to_string(),
            stopped_msg.clone()
        )
    );
    match which {
        Stopped::ClusterQueue => {
            // A LocalQueue of a stopped ClusterQueue cannot take Jobs either.
            create(c, &job("elsewhere", &other_ns, "lq", "1", "3s", json!({})));
            let wl = wait_for(SHORT, "the other LocalQueue's Job's pending reason", || {
                workload_of(c, &other_ns, "elsewhere")
                    .filter(|w| condition(w, "QuotaReserved").is_some())
            });
            assert_eq!(
                condition_of(&wl, "QuotaReserved").unwrap(),
                (
                    "False".to_string(),
                    "Inadmissible".to_string(),
                    stopped_msg.clone()
                )
            );
        }
        Stopped::LocalQueue => {
            // Another LocalQueue of the same ClusterQueue is not stopped.
            create(c, &job("elsewhere", &other_ns, "lq", "1", "3s", json!({})));
            wait_for(SHORT, "the other LocalQueue's Job to run", || {
                running(c, &other_ns, "elsewhere").then_some(())
            });
            let wl = workload_of(c, &ns, "held").unwrap();
            assert!(!is_true(&wl, "QuotaReserved"), "{wl}");
        }
    }
    assert_eq!(job_obj(c, &ns, "held")["spec"]["suspend"], true);
    for name in runners {
        assert!(running(c, &ns, name), "{name} keeps running under Hold");
        assert!(
            !succeeded(c, &ns, name),
            "{name} must still run when drained"
        );
    }

    // HoldAndDrain: the running Jobs are evicted, stopped and restored.
    patch(c, &target, json!({"spec": {"stopPolicy": "HoldAndDrain"}}));
    for name in runners {
        let wl = wait_for(SHORT, &format!("{name} evicted"), || {
            workload_of(c, &ns, name).filter(|w| is_true(w, "Evicted"))
        });
        assert_eq!(
            true_condition(&wl, "Evicted").unwrap(),
            (evict_reason.to_string(), evict_msg.to_string()),
            "{wl}"
        );
        assert!(true_condition(&wl, "Preempted").is_none(), "{wl}");
        assert_eq!(
            wl["status"]["schedulingStats"]["evictions"],
            json!([{"reason": evict_reason, "underlyingCause": "", "count": 1}]),
            "{wl}"
        );
        assert_stopped_and_restored(c, &ns, name);
        // The quota is given back; the Workload waits behind the stop.
        let wl = wait_for(SHORT, &format!("{name} to wait behind the stop"), || {
            workload_of(c, &ns, name).filter(|w| {
                condition_of(w, "QuotaReserved")
                    .is_some_and(|q| q.0 == "False" && q.1 == "Inadmissible")
            })
        });
        assert_eq!(
            condition_of(&wl, "QuotaReserved").unwrap().2,
            stopped_msg,
            "{wl}"
        );
        assert!(wl["status"]["admission"].is_null(), "{wl}");
        assert_eq!(
            condition_of(&wl, "Requeued").unwrap(),
            (
                "False".to_string(),
                evict_reason.to_string(),
                evict_msg.to_string()
            ),
            "{wl}"
        );
    }
    // What the queue reports: nothing of the stopped queue holds quota (the
    // other LocalQueue's short Job may still).
    let (pending, _, _, _) = wait_for(SHORT, "the drained queue's counts", || {
        cq_counts(c, &cq).filter(|s| match which {
            Stopped::ClusterQueue => s.1 == 0,
            Stopped::LocalQueue => s.1 <= 1,
        })
    });
    if let Stopped::ClusterQueue = which {
        assert_eq!(pending, 4, "run-0, run-1, held and elsewhere wait");
    }

    // None: everything is admitted again and runs to the end.
    patch(c, &target, json!({"spec": {"stopPolicy": "None"}}));
    let (reason, _) = wait_for(SHORT, "the queue active again", || stopped_active("True"));
    assert_eq!(reason, "Ready");
    wait_for(SHORT, "the held and drained Jobs to run", || {
        ["run-0", "run-1", "held"]
            .iter()
            .all(|j| running(c, &ns, j) || succeeded(c, &ns, j))
            .then_some(())
    });
    // The drained Workloads say why they were queued again.
    let (restarted, restarted_msg) = match which {
        Stopped::ClusterQueue => (
            "ClusterQueueRestarted",
            "The ClusterQueue was restarted after being stopped",
        ),
        Stopped::LocalQueue => (
            "LocalQueueRestarted",
            "The LocalQueue was restarted after being stopped",
        ),
    };
    for name in runners {
        let wl = wait_for(SHORT, &format!("{name} requeued"), || {
            workload_of(c, &ns, name).filter(|w| is_true(w, "Requeued"))
        });
        assert_eq!(
            true_condition(&wl, "Requeued").unwrap(),
            (restarted.to_string(), restarted_msg.to_string()),
            "{wl}"
        );
    }
    wait_all_succeed(c, &ns, &["run-0", "run-1", "held"]);
    wait_all_succeed(c, &other_ns, &["elsewhere"]);
    for name in ["run-0", "run-1", "held"] {
        let wl = workload_of(c, &ns, name).unwrap();
        assert!(is_true(&wl, "Finished"), "{wl}");
    }
    wait_for(SHORT, "the quota released", || {
        cq_counts(c, &cq).filter(|s| s.1 == 0 && s.0 == 0)
    });
}

#[test]
fn a_stopped_cluster_queue_holds_then_drains_then_resumes() {
    hold_drain_resume("stopcq", Stopped::ClusterQueue);
}

#[test]
fn a_stopped_local_queue_holds_then_drains_then_resumes() {
    hold_drain_resume("stoplq", Stopped::LocalQueue);
}

fn finalizers_of(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(s)
        .collect()
}

/// Kueue's `resource-in-use` finalizer (modelled on Kueue v0.19.2's
/// "Should be stuck in termination until admitted workloads finished
/// running" and the ResourceFlavor controller's deletion tests): a deleted
/// ClusterQueue whose Job still runs stays, Active=False/Terminating and
/// admitting nothing, until the Job's Workload finishes; its flavor stays
/// until no ClusterQueue names it; a Workload keeps the finalizer while its
/// Job needs it and loses it when it finishes or its Job is deleted.
#[test]
fn a_cluster_queue_in_use_is_not_deleted_until_its_workloads_finish() {
    const FIN: &str = "kueue.x-k8s.io/resource-in-use";
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, "e2e-finalizers");
    let (cq, rf) = ("finalizers-cq", "finalizers-rf");
    apply(c, &flavor(rf, json!({"instance-type": "on-demand"})));
    apply(c, &cluster_queue(cq, &[(rf, "4", None)], json!({})));
    apply(c, &local_queue(&ns, "lq", cq));
    for what in [["clusterqueue", cq], ["resourceflavor", rf]] {
        wait_for(SHORT, &format!("the finalizer on {what:?}"), || {
            get(c, &what)
                .filter(|o| finalizers_of(o) == [FIN])
                .map(|_| ())
        });
    }

    // A Workload deleted under its running Job: the Job is stopped (Kueue's
    // "Workload is deleted"), the Workload let go, and a new one queues
    // and starts the Job again.
    create(c, &job("replaced", &ns, "lq", "1", "6s", json!({})));
    wait_for(SHORT, "replaced to run", || {
        running(c, &ns, "replaced").then_some(())
    });
    let first = workload_of(c, &ns, "replaced").unwrap();
    let (first_name, first_uid) = (s(&first["metadata"]["name"]), s(&first["metadata"]["uid"]));
    let (ok, out, err) = kubectl(
        c,
        &[
            "delete",
            "workloads.kueue.x-k8s.io",
            &first_name,
            "-n",
            &ns,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let stopped = "involvedObject.name=replaced,reason=Stopped";
    let ev = wait_for(SHORT, "replaced stopped for its deleted Workload", || {
        get(c, &["events", "-n", &ns, "--field-selector", stopped])
            .and_then(|l| l["items"].as_array()?.first().cloned())
    });
    assert_eq!(s(&ev["message"]), "Workload is deleted", "{ev}");
    wait_for(
        LONG,
        "replaced re-queued under a new Workload and done",
        || {
            let wl = workload_of(c, &ns, "replaced")?;
            (s(&wl["metadata"]["uid"]) != first_uid
                && is_true(&wl, "Finished")
                && succeeded(c, &ns, "replaced"))
            .then_some(())
        },
    );

    // held runs through every check below (each a kubectl call, slow
    // under load) and past them.
    create(c, &job("held", &ns, "lq", "1", "60s", json!({})));
    wait_for(SHORT, "held to run", || {
        running(c, &ns, "held").then_some(())
    });
    let wl = workload_of(c, &ns, "held").unwrap();
    assert_eq!(finalizers_of(&wl), [FIN], "{wl}");

    for what in [["clusterqueue", cq], ["resourceflavor", rf]] {
        let (ok, out, err) = kubectl(c, &["delete", what[0], what[1], "--wait=false"], None);
        assert!(ok, "{out}{err}");
    }
    let terminating = wait_for(SHORT, "the ClusterQueue to be Terminating", || {
        get(c, &["clusterqueue", cq]).filter(|o| {
            condition_of(o, "Active")
                .is_some_and(|(st, reason, _)| st == "False" && reason == "Terminating")
        })
    });
    assert_eq!(
        condition_of(&terminating, "Active").unwrap().2,
        "Can't admit new workloads; clusterQueue is terminating"
    );
    assert!(terminating["metadata"]["deletionTimestamp"].is_string());
    // Kueue's metric says so too.
    wait_for(
        SHORT,
        "kueue_cluster_queue_status to say terminating",
        || {
            let (_, m) = env_with(CONFIG).server.probe_get("/metrics");
            (sample(
                &m,
                "kueue_cluster_queue_status",
                &[("cluster_queue", cq), ("status", "terminating")],
            )? == 1.0
                && sample(
                    &m,
                    "kueue_cluster_queue_status",
                    &[("cluster_queue", cq), ("status", "active")],
                )? == 0.0)
                .then_some(())
        },
    );
    // A Job that would fit is not admitted by a terminating queue.
    create(c, &job("late", &ns, "lq", "1", "1s", json!({})));
    let late = wait_for(SHORT, "late to be found pending", || {
        workload_of(c, &ns, "late").filter(|w| condition(w, "QuotaReserved").is_some())
    });
    assert_eq!(
        condition_of(&late, "QuotaReserved").unwrap(),
        (
            "False".to_string(),
            "Inadmissible".to_string(),
            format!("ClusterQueue {cq} is inactive")
        ),
        "{late}"
    );
    // Both stay while held runs.
    assert!(!succeeded(c, &ns, "held"), "held finished before the check");
    assert!(get(c, &["clusterqueue", cq]).is_some());
    assert!(get(c, &["resourceflavor", rf]).is_some());

    // Once held is done the queue goes, then the flavor it named.
    wait_for(LONG, "the ClusterQueue and its flavor gone", || {
        (get(c, &["clusterqueue", cq]).is_none() && get(c, &["resourceflavor", rf]).is_none())
            .then_some(())
    });
    assert!(succeeded(c, &ns, "held"), "{}", summary(c, &[&ns]));
    let done = wait_for(SHORT, "held's Workload finished and let go", || {
        workload_of(c, &ns, "held")
            .filter(|w| is_true(w, "Finished") && finalizers_of(w).is_empty())
    });
    assert_eq!(
        done["status"]["conditions"]
            .as_array()
            .map(Vec::len)
            .map(|n| n > 0),
        Some(true)
    );

    // late's Workload still holds its finalizer; deleting its Job lets the
    // garbage collector's deletion of the Workload through.
    let late = workload_of(c, &ns, "late").unwrap();
    assert_eq!(finalizers_of(&late), [FIN], "{late}");
    let late_name = s(&late["metadata"]["name"]);
    let (ok, out, err) = kubectl(c, &["delete", "job", "late", "-n", &ns], None);
    assert!(ok, "{out}{err}");
    wait_for(SHORT, "late's Workload gone with its Job", || {
        get(c, &["workloads.kueue.x-k8s.io", "-n", &ns, &late_name])
            .is_none()
            .then_some(())
    });
}

/// Kueue's maximum execution time (modelled on Kueue v0.19.2's "should
/// deactivate the workload when the time expires", test/integration/
/// singlecluster/controller/core/workload_controller_test.go, here through
/// a real Job): a Job labelled with
/// `kueue.x-k8s.io/max-exec-time-seconds` runs past it; its Workload is
/// deactivated and evicted for that cause, the Job suspended, and the
/// admitted seconds recorded.
#[test]
fn a_job_past_its_maximum_execution_time_is_deactivated() {
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, "e2e-max-exec");
    let (cq, rf) = ("max-exec-cq", "max-exec-rf");
    apply(c, &flavor(rf, json!({"instance-type": "on-demand"})));
    apply(c, &cluster_queue(cq, &[(rf, "2", None)], json!({})));
    apply(c, &local_queue(&ns, "lq", cq));
    create(
        c,
        &job(
            "overrun",
            &ns,
            "lq",
            "1",
            "120s",
            json!({"kueue.x-k8s.io/max-exec-time-seconds": "3"}),
        ),
    );
    wait_for(SHORT, "overrun to run", || {
        running(c, &ns, "overrun").then_some(())
    });
    let wl = workload_of(c, &ns, "overrun").unwrap();
    assert_eq!(wl["spec"]["maximumExecutionTimeSeconds"], 3, "{wl}");

    let wl = wait_for(SHORT, "overrun deactivated and released", || {
        workload_of(c, &ns, "overrun").filter(|w| {
            w["spec"]["active"] == false
                && condition_of(w, "QuotaReserved").is_some_and(|(st, ..)| st == "False")
        })
    });
    let (st, reason, message) = condition_of(&wl, "Evicted").unwrap();
    assert_eq!(
        (st.as_str(), reason.as_str(), message.as_str()),
        (
            "True",
            "DeactivatedDueToMaximumExecutionTimeExceeded",
            "The workload is deactivated due to exceeding the maximum execution time"
        ),
        "{wl}"
    );
    assert!(condition(&wl, "DeactivationTarget").is_none(), "{wl}");
    assert_eq!(
        wl["status"]["schedulingStats"]["evictions"],
        json!([{"reason": "Deactivated", "underlyingCause": "MaximumExecutionTimeExceeded", "count": 1}]),
        "{wl}"
    );
    // Admitted for at least its 3 s before it was stopped.
    let secs = wl["status"]["accumulatedPastExecutionTimeSeconds"]
        .as_i64()
        .unwrap_or(0);
    assert!(secs >= 3, "{wl}");
    assert_eq!(job_obj(c, &ns, "overrun")["spec"]["suspend"], true);
    assert!(!succeeded(c, &ns, "overrun"));
    // Kueue's Warning event on the Workload.
    let name = s(&wl["metadata"]["name"]);
    let selector = format!("involvedObject.name={name},reason=MaximumExecutionTimeExceeded");
    let ev = wait_for(SHORT, "the MaximumExecutionTimeExceeded event", || {
        get(c, &["events", "-n", &ns, "--field-selector", &selector])
            .and_then(|l| l["items"].as_array()?.first().cloned())
    });
    assert_eq!(
        (s(&ev["type"]), s(&ev["message"])),
        (
            "Warning".to_string(),
            "The maximum execution time (3s) exceeded".to_string()
        ),
        "{ev}"
    );
}

/// With `KueueDRAIntegration` off, a Job whose pods use DRA (a
/// ResourceClaimTemplate, or a ResourceClaim by name) is never admitted on
/// CPU alone: its Workload stays pending with Kueue's message, while a Job
/// without claims in the same queue runs.
#[test]
fn with_the_dra_integration_off_jobs_using_dra_are_refused_as_kueue_refuses_them() {
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, "e2e-dra-off");
    apply(c, &flavor("dra-off-flavor", json!({})));
    apply(
        c,
        &cluster_queue("dra-off", &[("dra-off-flavor", "10", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "dra-off"));
    apply(
        c,
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "gpus", "namespace": ns},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                    "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}}]}}}})
        .to_string(),
    );
    let with_claims = |name: &str, claim: Value| {
        let mut j: Value =
            serde_json::from_str(&job(name, &ns, "lq", "100m", "1s", json!({}))).unwrap();
        j["spec"]["template"]["spec"]["resourceClaims"] = json!([claim]);
        j["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] =
            json!([{"name": claim["name"]}]);
        create(c, &j.to_string());
    };
    with_claims(
        "template",
        json!({"name": "gpus", "resourceClaimTemplateName": "gpus"}),
    );
    with_claims(
        "direct",
        json!({"name": "shared", "resourceClaimName": "shared-gpu"}),
    );
    create(c, &job("plain", &ns, "lq", "100m", "1s", json!({})));
    for name in ["template", "direct"] {
        let (reason, message) = wait_for(SHORT, "the DRA Job refused", || {
            let wl = workload_of(c, &ns, name)?;
            let qr = condition(&wl, "QuotaReserved")?;
            (qr["status"] == "False").then(|| (s(&qr["reason"]), s(&qr["message"])))
        });
        assert_eq!(
            (reason.as_str(), message.as_str()),
            (
                "Inadmissible",
                "Workload uses DRA resources but the KueueDRAIntegration feature gate is not enabled"
            ),
            "{name}"
        );
    }
    // The queue admits: the plain Job runs; the refused ones stay so.
    wait_for(LONG, "the plain Job admitted", || {
        let wl = workload_of(c, &ns, "plain")?;
        is_true(&wl, "QuotaReserved").then_some(())
    });
    for name in ["template", "direct"] {
        let wl = workload_of(c, &ns, name).unwrap();
        assert!(
            !is_true(&wl, "QuotaReserved"),
            "{name} never admitted: {wl}"
        );
        let job = job_obj(c, &ns, name);
        assert_eq!(job["spec"]["suspend"], true, "{name} stays suspended");
    }
}
