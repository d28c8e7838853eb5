//! Quota admission end to end on the local cluster: batchgate's reconciler
//! creates each queued Job's Workload, admits it within its ClusterQueue's
//! quota, starts the Job on the flavor's nodes and releases the quota when
//! it finishes — checked with kubectl as a user would.

mod support;

#[path = "e2e_queueing/admission_checks.rs"]
mod admission_checks;
#[path = "e2e_queueing/fair_sharing.rs"]
mod fair_sharing;
#[path = "e2e_queueing/job_changes.rs"]
mod job_changes;
#[path = "e2e_queueing/multikueue.rs"]
mod multikueue;
#[path = "e2e_queueing/pod_groups.rs"]
mod pod_groups;
#[path = "e2e_queueing/provisioning.rs"]
mod provisioning;

use std::{collections::BTreeMap, time::Duration};

use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

/// waitForPodsReady with small numbers for the readiness tests below
/// (Kueue's defaults are 30 minutes and 60 s); the other tests' pods are
/// ready long before the timeout.
const READINESS: &str = "waitForPodsReady:\n  timeout: 8s\n  requeuingStrategy:\n    backoffBaseSeconds: 2\n    backoffMaxSeconds: 16\n    backoffLimitCount: 2\n";

/// Fair sharing on for the whole binary (see [`fair_sharing`]).
const FAIR_SHARING: &str =
    "fairSharing:\n  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n";

/// The binary's batchgate, with [`READINESS`] and [`FAIR_SHARING`], and
/// the pod integration on beside the default ones (for [`pod_groups`]).
/// Every test of the binary starts it through here: the first call decides
/// the configuration.
fn env() -> &'static Env {
    static CONFIG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    env_with(CONFIG.get_or_init(|| {
        let mut policies = batchgate::jobs::policy::PolicySet::embedded().unwrap();
        policies.retain_default();
        let mut names: Vec<String> = policies.iter().map(|p| format!("{:?}", p.name)).collect();
        names.push("\"pod\"".into());
        format!(
            "{READINESS}{FAIR_SHARING}integrations:\n  frameworks: [{}]\n",
            names.join(", ")
        )
    }))
}

/// 4 cpu behind two LocalQueues, six 1-cpu Jobs: four run at once on the
/// flavor's nodes, the other two when those finish, and the ClusterQueue's
/// counts say so at each step.
#[test]
fn a_cluster_queue_admits_up_to_its_quota_then_the_rest() {
    let e = env();
    let c = e.cluster;
    let ns_a = namespace(c, "e2e-quota-a");
    let ns_b = namespace(c, "e2e-quota-b");
    apply(
        c,
        &flavor("quota-on-demand", json!({"instance-type": "on-demand"})),
    );
    apply(
        c,
        &cluster_queue("quota-cq", &[("quota-on-demand", "4", None)], json!({})),
    );
    apply(c, &local_queue(&ns_a, "lq", "quota-cq"));
    apply(c, &local_queue(&ns_b, "lq", "quota-cq"));

    for i in 0..6 {
        let ns = if i % 2 == 0 { &ns_a } else { &ns_b };
        create(c, &job(&format!("job-{i}"), ns, "lq", "1", "6s", json!({})));
    }
    // Exactly four admitted: their Workloads hold the quota, four Jobs run.
    let (pending, reserving, admitted, used) =
        wait_for(Duration::from_secs(60), "four admissions", || {
            cq_counts(c, "quota-cq").filter(|s| s.2 == 4 && s.0 == 2)
        });
    assert_eq!(
        (pending, reserving, admitted, used.as_str()),
        (2, 4, 4, "4")
    );
    // Started: four at least (the quota's), and never more than four
    // running at once. One that has finished may have made room for a
    // fifth by the time a loaded machine lists the Jobs.
    let running: Vec<_> = [&ns_a, &ns_b]
        .iter()
        .flat_map(|ns| jobs(c, ns).into_iter().map(move |j| (ns.to_string(), j)))
        .filter(|(_, j)| !j.1)
        .collect();
    let now = running.iter().filter(|(_, j)| !j.2).count();
    let finished = running.len() - now;
    assert!(
        running.len() >= 4 && now <= 4 && running.len() <= 4 + finished,
        "{running:?}"
    );

    // Their pods run on nodes carrying the flavor's labels.
    let nodes = get(c, &["nodes"]).unwrap();
    let labels: BTreeMap<String, serde_json::Value> = nodes["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["metadata"]["name"].as_str().unwrap().to_string(),
                n["metadata"]["labels"].clone(),
            )
        })
        .collect();
    for (ns, (name, _, _)) in &running {
        let pods = wait_for(Duration::from_secs(30), "scheduled pods", || {
            let p = get(c, &["pods", "-n", ns, "-l", &format!("job-name={name}")])?;
            let items = p["items"].as_array()?.clone();
            (!items.is_empty() && items.iter().all(|p| p["spec"]["nodeName"].is_string()))
                .then_some(items)
        });
        for p in pods {
            assert_eq!(p["spec"]["nodeSelector"]["instance-type"], "on-demand");
            assert_eq!(p["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main");
            let node = p["spec"]["nodeName"].as_str().unwrap();
            assert_eq!(labels[node]["instance-type"], "on-demand", "pod on {node}");
        }
        let wl = workload_of(c, ns, name).unwrap();
        assert!(
            is_true(&wl, "QuotaReserved") && is_true(&wl, "Admitted"),
            "{wl}"
        );
        assert_eq!(wl["status"]["admission"]["clusterQueue"], "quota-cq");
        assert_eq!(
            wl["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"],
            "quota-on-demand"
        );
    }
    // The two left wait with Kueue's reason (or, read after one of the
    // first four is done, have just been admitted in its place).
    let first_done = || {
        running
            .iter()
            .any(|(ns, (name, _, _))| jobs(c, ns).iter().any(|j| &j.0 == name && j.2))
    };
    for ns in [&ns_a, &ns_b] {
        for (name, suspended, _) in jobs(c, ns) {
            if suspended {
                let wl = workload_of(c, ns, &name).unwrap();
                let qr = condition(&wl, "QuotaReserved").unwrap();
                if qr["status"] == "True" && first_done() {
                    continue;
                }
                assert_eq!(qr["status"], "False", "{qr}");
                assert_eq!(qr["reason"], "Pending", "{qr}");
            }
        }
    }

    // As the first four finish, the other two are admitted; all six finish.
    wait_for(Duration::from_secs(90), "all six Jobs to succeed", || {
        let all: Vec<_> = [&ns_a, &ns_b].iter().flat_map(|ns| jobs(c, ns)).collect();
        (all.len() == 6 && all.iter().all(|j| j.2)).then_some(())
    });
    let (pending, reserving, admitted, _) =
        wait_for(Duration::from_secs(30), "quota released", || {
            cq_counts(c, "quota-cq").filter(|s| s.1 == 0)
        });
    assert_eq!((pending, reserving, admitted), (0, 0, 0));
    for ns in [&ns_a, &ns_b] {
        for (name, _, _) in jobs(c, ns) {
            let wl = workload_of(c, ns, &name).unwrap();
            assert!(is_true(&wl, "Finished"), "{wl}");
        }
    }
}

fn kubectl_ok(c: &batchgate_localcluster::LocalCluster, args: &[&str]) {
    let (ok, out, err) = support::e2e::kubectl(c, args, None);
    assert!(ok, "kubectl {args:?}: {out}{err}");
}

/// `spec.active: false` evicts the Workload: the Job is suspended, its pod
/// template loses what the admission added, the quota is released; set
/// back to true, the Job is admitted again and finishes. The conditions
/// follow Kueue v0.19.2 test/integration/singlecluster/controller/jobs/job/
/// job_controller_test.go ("checking the first job becomes unsuspended
/// after we update the Active field back to true"): `Requeued=False`
/// (`Deactivated`) while inactive, then `Requeued=True` (`Reactivated`).
#[test]
fn deactivating_a_workload_stops_its_job_and_restores_the_template() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-deactivate");
    apply(c, &flavor("deact-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("deact-cq", &[("deact-spot", "2", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "deact-cq"));
    create(c, &job("long", &ns, "lq", "1", "20s", json!({})));
    wait_for(Duration::from_secs(60), "the Job to start", || {
        let j = get(c, &["job", "long", "-n", &ns])?;
        (j["spec"]["suspend"] == false).then_some(())
    });
    let started = get(c, &["job", "long", "-n", &ns]).unwrap();
    let t = &started["spec"]["template"];
    assert_eq!(t["spec"]["nodeSelector"]["instance-type"], "spot");
    assert_eq!(t["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main");

    let wl = workload_of(c, &ns, "long").unwrap();
    let name = wl["metadata"]["name"].as_str().unwrap().to_string();
    kubectl_ok(
        c,
        &[
            "patch",
            "workload",
            &name,
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"active":false}}"#,
        ],
    );
    wait_for(Duration::from_secs(60), "Evicted=True", || {
        let w = get(c, &["workload", &name, "-n", &ns])?;
        is_true(&w, "Evicted").then_some(())
    });
    wait_for(Duration::from_secs(60), "the Job to be suspended", || {
        let j = get(c, &["job", "long", "-n", &ns])?;
        (j["spec"]["suspend"] == true).then_some(())
    });
    let wl = wait_for(
        Duration::from_secs(60),
        "the quota to be given back",
        || {
            let w = get(c, &["workload", &name, "-n", &ns])?;
            (!is_true(&w, "QuotaReserved")).then_some(w)
        },
    );
    let ev = condition(&wl, "Evicted").unwrap();
    assert_eq!(ev["reason"], "Deactivated");
    assert_eq!(ev["message"], "The workload is deactivated");
    assert!(wl["status"]["admission"].is_null(), "{wl}");
    let rq = condition(&wl, "Requeued").unwrap();
    assert_eq!(
        (&rq["status"], &rq["reason"], &rq["message"]),
        (
            &json!("False"),
            &json!("Deactivated"),
            &json!("The workload is deactivated")
        ),
        "{wl}"
    );
    let j = get(c, &["job", "long", "-n", &ns]).unwrap();
    assert_eq!(j["spec"]["suspend"], true);
    // The manifest had no node selector and no pod set label.
    let t = &j["spec"]["template"];
    assert!(t["spec"]["nodeSelector"].is_null(), "{t}");
    assert!(
        t["metadata"]["labels"]
            .get("kueue.x-k8s.io/podset")
            .is_none(),
        "{t}"
    );
    assert_eq!(
        t["metadata"]["labels"]["batch.kubernetes.io/job-name"],
        "long"
    );
    wait_for(Duration::from_secs(30), "the quota to be released", || {
        cq_counts(c, "deact-cq").filter(|s| s.1 == 0)
    });

    kubectl_ok(
        c,
        &[
            "patch",
            "workload",
            &name,
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"active":true}}"#,
        ],
    );
    let wl = wait_for(
        Duration::from_secs(60),
        "Requeued=True (Reactivated) and the quota reserved again",
        || {
            let w = get(c, &["workload", &name, "-n", &ns])?;
            let rq = condition(&w, "Requeued")?;
            (rq["status"] == "True" && is_true(&w, "QuotaReserved")).then_some(w)
        },
    );
    let rq = condition(&wl, "Requeued").unwrap();
    assert_eq!(
        (&rq["reason"], &rq["message"]),
        (
            &json!("Reactivated"),
            &json!("The workload was reactivated")
        ),
        "{wl}"
    );
    let ev = condition(&wl, "Evicted").unwrap();
    assert_eq!(
        (&ev["status"], &ev["reason"], &ev["message"]),
        (
            &json!("False"),
            &json!("QuotaReserved"),
            &json!("Previously: The workload is deactivated")
        ),
        "{wl}"
    );
    wait_for(
        Duration::from_secs(90),
        "the Job to run again and succeed",
        || {
            let j = get(c, &["job", "long", "-n", &ns])?;
            (j["status"]["succeeded"] == 1).then_some(())
        },
    );
}

/// Within a ClusterQueue that preempts lower priorities, a high-priority
/// Job evicts the low-priority ones it needs room for, with Kueue's
/// reasons and message; they run again once it is done.
#[test]
fn a_higher_priority_job_preempts_within_the_cluster_queue() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-preempt");
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: e2e-low}\nvalue: 100\n");
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: e2e-high}\nvalue: 1000\n");
    apply(
        c,
        &flavor("preempt-flavor", json!({"instance-type": "on-demand"})),
    );
    apply(
        c,
        &cluster_queue(
            "preempt-cq",
            &[("preempt-flavor", "2", None)],
            json!({"preemption": {"withinClusterQueue": "LowerPriority"}}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "preempt-cq"));
    let low = json!({"kueue.x-k8s.io/priority-class": "e2e-low"});
    create(c, &job("low-0", &ns, "lq", "1", "15s", low.clone()));
    create(c, &job("low-1", &ns, "lq", "1", "15s", low));
    wait_for(Duration::from_secs(60), "both low Jobs to run", || {
        let all = jobs(c, &ns);
        (all.len() == 2 && all.iter().all(|j| !j.1)).then_some(())
    });
    create(
        c,
        &job(
            "high",
            &ns,
            "lq",
            "2",
            "2s",
            json!({"kueue.x-k8s.io/priority-class": "e2e-high"}),
        ),
    );
    let high = wait_for(Duration::from_secs(30), "the high Workload", || {
        workload_of(c, &ns, "high")
    });
    assert_eq!(high["spec"]["priority"], 1000);
    assert_eq!(high["spec"]["priorityClassRef"]["name"], "e2e-high");

    for name in ["low-0", "low-1"] {
        let wl = wait_for(
            Duration::from_secs(60),
            "the low Workloads to be preempted",
            || workload_of(c, &ns, name).filter(|w| is_true(w, "Preempted")),
        );
        let p = condition(&wl, "Preempted").unwrap();
        assert_eq!(p["reason"], "InClusterQueue");
        let m = p["message"].as_str().unwrap();
        assert!(
            m.starts_with("Preempted to accommodate a workload (UID: ")
                && m.contains("due to prioritization in the ClusterQueue; preemptor path: /preempt-cq; preemptee path: /preempt-cq"),
            "{m}"
        );
        assert_eq!(condition(&wl, "Evicted").unwrap()["reason"], "Preempted");
    }
    wait_for(Duration::from_secs(60), "the high Job to succeed", || {
        let j = get(c, &["job", "high", "-n", &ns])?;
        (j["status"]["succeeded"] == 1).then_some(())
    });
    wait_for(
        Duration::from_secs(120),
        "the low Jobs to run again and succeed",
        || {
            let all = jobs(c, &ns);
            (all.len() == 3 && all.iter().all(|j| j.2)).then_some(())
        },
    );
    for name in ["low-0", "low-1"] {
        let wl = workload_of(c, &ns, name).unwrap();
        let r = condition(&wl, "Requeued").unwrap();
        assert_eq!(
            (r["status"].as_str(), r["reason"].as_str()),
            (Some("True"), Some("Preempted"))
        );
    }
}

/// A quantity as Kueue's metrics report it (cpu in cores).
fn cores(q: &serde_json::Value) -> f64 {
    let s = q.as_str().unwrap_or("0");
    match s.strip_suffix('m') {
        Some(m) => m.parse::<f64>().unwrap() / 1000.0,
        None => s.parse().unwrap(),
    }
}

/// Kueue's metric names on `/metrics` while Jobs flow, checked against
/// the cluster: the queue gauges against the ClusterQueue's and
/// LocalQueue's status, the quotas against the spec, and the counters
/// against the admissions and preemptions that happened.
#[test]
fn kueues_metrics_match_the_cluster_state() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-metrics");
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: metrics-low}\nvalue: 100\n");
    apply(c, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: metrics-high}\nvalue: 1000\n");
    apply(
        c,
        &flavor("metrics-flavor", json!({"instance-type": "on-demand"})),
    );
    apply(
        c,
        &cluster_queue(
            "metrics-cq",
            &[("metrics-flavor", "2", Some("1"))],
            json!({"cohortName": "metrics-cohort",
                   "preemption": {"withinClusterQueue": "LowerPriority"}}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "metrics-cq"));
    let low = json!({"kueue.x-k8s.io/priority-class": "metrics-low"});
    for i in 0..3 {
        create(
            c,
            &job(&format!("low-{i}"), &ns, "lq", "1", "30s", low.clone()),
        );
    }
    wait_for(
        Duration::from_secs(60),
        "two admissions, one pending",
        || cq_counts(c, "metrics-cq").filter(|s| s.0 == 1 && s.2 == 2),
    );

    let cq_labels = [("cluster_queue", "metrics-cq"), ("replica_role", "leader")];
    let lq_labels = [("name", "lq"), ("namespace", ns.as_str())];
    let fr = [
        ("cohort", "metrics-cohort"),
        ("cluster_queue", "metrics-cq"),
        ("flavor", "metrics-flavor"),
        ("resource", "cpu"),
    ];
    // The gauges follow the queue status (both are refreshed on the
    // controller's status tick): read both until they agree.
    let (metrics, cq, lq) = wait_for(
        Duration::from_secs(30),
        "the queue gauges to match the queue status",
        || {
            let cq = get(c, &["clusterqueue", "metrics-cq"])?;
            let lq = get(c, &["localqueue", "lq", "-n", &ns])?;
            let (_, m) = e.server.probe_get("/metrics");
            let pending = sample(
                &m,
                "kueue_pending_workloads",
                &[cq_labels[0], ("status", "active")],
            )? + sample(
                &m,
                "kueue_pending_workloads",
                &[cq_labels[0], ("status", "inadmissible")],
            )?;
            let s = &cq["status"];
            (pending == s["pendingWorkloads"].as_f64()?
                && sample(&m, "kueue_reserving_active_workloads", &cq_labels)?
                    == s["reservingWorkloads"].as_f64()?
                && sample(&m, "kueue_admitted_active_workloads", &cq_labels)?
                    == s["admittedWorkloads"].as_f64()?
                && sample(
                    &m,
                    "kueue_local_queue_admitted_active_workloads",
                    &lq_labels,
                )? == lq["status"]["admittedWorkloads"].as_f64()?
                // The LocalQueue's status is written on its own tick.
                && sample(
                    &m,
                    "kueue_local_queue_pending_workloads",
                    &[lq_labels[0], lq_labels[1], ("status", "active")],
                )? + sample(
                    &m,
                    "kueue_local_queue_pending_workloads",
                    &[lq_labels[0], lq_labels[1], ("status", "inadmissible")],
                )? == lq["status"]["pendingWorkloads"].as_f64()?)
            .then_some((m, cq, lq))
        },
    );
    let s = &cq["status"];
    assert_eq!(
        (
            s["pendingWorkloads"].as_i64(),
            s["admittedWorkloads"].as_i64()
        ),
        (Some(1), Some(2)),
        "{s}"
    );
    let lq_pending = sample(
        &metrics,
        "kueue_local_queue_pending_workloads",
        &[lq_labels[0], lq_labels[1], ("status", "active")],
    )
    .unwrap()
        + sample(
            &metrics,
            "kueue_local_queue_pending_workloads",
            &[lq_labels[0], lq_labels[1], ("status", "inadmissible")],
        )
        .unwrap();
    assert_eq!(
        lq_pending,
        lq["status"]["pendingWorkloads"].as_f64().unwrap()
    );
    // Usage and reservation as the status reports them; quotas as the spec.
    let status_total = |field: &str| cores(&s[field][0]["resources"][0]["total"]);
    assert_eq!(s["flavorsUsage"][0]["name"], "metrics-flavor");
    assert_eq!(
        sample(&metrics, "kueue_cluster_queue_resource_usage", &fr),
        Some(status_total("flavorsUsage"))
    );
    assert_eq!(
        sample(&metrics, "kueue_cluster_queue_resource_reservation", &fr),
        Some(status_total("flavorsReservation"))
    );
    assert_eq!(status_total("flavorsUsage"), 2.0);
    let quota = &cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0];
    assert_eq!(
        sample(&metrics, "kueue_cluster_queue_nominal_quota", &fr),
        Some(cores(&quota["nominalQuota"]))
    );
    assert_eq!(
        sample(&metrics, "kueue_cluster_queue_borrowing_limit", &fr),
        Some(cores(&quota["borrowingLimit"]))
    );
    assert_eq!(
        sample(&metrics, "kueue_cluster_queue_lending_limit", &fr),
        Some(f64::INFINITY)
    );
    assert_eq!(
        sample(
            &metrics,
            "kueue_cluster_queue_status",
            &[cq_labels[0], ("status", "active")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &metrics,
            "kueue_cluster_queue_status",
            &[cq_labels[0], ("status", "pending")]
        ),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &metrics,
            "kueue_local_queue_status",
            &[lq_labels[0], lq_labels[1], ("active", "True")]
        ),
        Some(1.0)
    );
    // Two admissions so far, each counted once with its wait.
    let low_labels = [cq_labels[0], ("priority_class", "metrics-low")];
    for name in [
        "kueue_admitted_workloads_total",
        "kueue_quota_reserved_workloads_total",
        "kueue_admission_wait_time_seconds_count",
        "kueue_quota_reserved_wait_time_seconds_count",
    ] {
        assert_eq!(sample(&metrics, name, &low_labels), Some(2.0), "{name}");
    }
    assert_eq!(
        sample(
            &metrics,
            "kueue_local_queue_admitted_workloads_total",
            &[
                lq_labels[0],
                lq_labels[1],
                ("priority_class", "metrics-low")
            ]
        ),
        Some(2.0)
    );
    assert!(
        sample(
            &metrics,
            "kueue_admission_attempts_total",
            &[("result", "success")]
        )
        .unwrap()
            >= 1.0
    );
    assert_eq!(
        sample(
            &metrics,
            "kueue_cluster_queue_info",
            &[cq_labels[0], ("parent_cohort", "metrics-cohort")]
        ),
        Some(1.0)
    );

    // A high-priority Job preempts both running low ones.
    create(
        c,
        &job(
            "high",
            &ns,
            "lq",
            "2",
            "2s",
            json!({"kueue.x-k8s.io/priority-class": "metrics-high"}),
        ),
    );
    let preempted = wait_for(Duration::from_secs(60), "two preemptions", || {
        let n = (0..3)
            .filter(|i| {
                workload_of(c, &ns, &format!("low-{i}")).is_some_and(|w| is_true(&w, "Preempted"))
            })
            .count();
        (n == 2).then_some(n)
    });
    let metrics = wait_for(Duration::from_secs(30), "the evictions counted", || {
        let (_, m) = e.server.probe_get("/metrics");
        (sample(
            &m,
            "kueue_evicted_workloads_total",
            &[
                cq_labels[0],
                ("reason", "Preempted"),
                ("underlying_cause", ""),
                ("priority_class", "metrics-low"),
            ],
        )? == preempted as f64)
            .then_some(m)
    });
    assert_eq!(
        sample(
            &metrics,
            "kueue_evicted_workloads_once_total",
            &[cq_labels[0], ("reason", "Preempted")]
        ),
        Some(preempted as f64)
    );
    assert_eq!(
        sample(
            &metrics,
            "kueue_preempted_workloads_total",
            &[
                ("preempting_cluster_queue", "metrics-cq"),
                ("reason", "InClusterQueue")
            ]
        ),
        Some(preempted as f64)
    );
    assert_eq!(
        sample(
            &metrics,
            "kueue_local_queue_evicted_workloads_total",
            &[lq_labels[0], lq_labels[1], ("reason", "Preempted")]
        ),
        Some(preempted as f64)
    );
    wait_for(
        Duration::from_secs(60),
        "the high Job admitted and counted",
        || {
            let (_, m) = e.server.probe_get("/metrics");
            (sample(
                &m,
                "kueue_admitted_workloads_total",
                &[cq_labels[0], ("priority_class", "metrics-high")],
            )? == 1.0)
                .then_some(())
        },
    );
    // Finished Workloads stay until their Job is deleted: the gauges count
    // them, per ClusterQueue and per LocalQueue.
    wait_for(
        Duration::from_secs(60),
        "the finished gauges to match",
        || {
            let list = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])?;
            let done = list["items"]
                .as_array()?
                .iter()
                .filter(|w| is_true(w, "Finished"))
                .count() as f64;
            let (_, m) = e.server.probe_get("/metrics");
            (done >= 1.0
                && sample(&m, "kueue_finished_workloads", &cq_labels)? == done
                && sample(&m, "kueue_local_queue_finished_workloads", &lq_labels)? == done)
                .then_some(())
        },
    );
}

/// The job reconciler keeps a suspended Job's Workload in step with it, and
/// stops a queued Job that runs without an admission (README: "Workload
/// bookkeeping"):
///
/// 1. its pod sets change (parallelism 1 → 3): the Workload is updated to
///    match in place (same uid, event `UpdatedWorkload`), one Workload for
///    the Job, as Kueue
///    v0.19.2's `EquivalentToWorkload` and `updateWorkloadToMatchJob` do
///    (test/integration/singlecluster/controller/jobs/job/
///    job_controller_test.go);
/// 2. its queue name and WorkloadPriorityClass change: both are copied to
///    that Workload (same uid);
/// 3. a queued Job created unsuspended where the webhooks do not look
///    (`batchgate-system`, left out of their namespaceSelector) is suspended.
///
/// The ClusterQueue has 1 cpu and the Jobs ask for 2, so nothing is ever
/// admitted and the Jobs stay suspended.
#[test]
fn the_reconciler_keeps_a_suspended_jobs_workload_in_step_and_stops_an_unadmitted_run() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-recon");
    apply(c, &flavor("recon-flavor", json!({})));
    apply(
        c,
        &cluster_queue("recon-cq", &[("recon-flavor", "1", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "recon-cq"));
    apply(c, &local_queue(&ns, "lq2", "recon-cq"));
    for (name, value) in [("recon-low", 100), ("recon-high", 1000)] {
        apply(
            c,
            &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": name}, "value": value})
            .to_string(),
        );
    }
    // completions is immutable: 3 from the start, parallelism 1 (1 pod).
    let mut reshape: serde_json::Value = serde_json::from_str(&job(
        "reshape",
        &ns,
        "lq",
        "2",
        "1s",
        json!({"kueue.x-k8s.io/priority-class": "recon-low"}),
    ))
    .unwrap();
    reshape["spec"]["completions"] = json!(3);
    create(c, &reshape.to_string());
    let first = wait_for(Duration::from_secs(60), "the Workload of reshape", || {
        workload_of(c, &ns, "reshape")
    });
    assert_eq!(first["spec"]["podSets"][0]["count"], 1, "{first}");
    assert_eq!(first["spec"]["priority"], 100, "{first}");
    assert_eq!(first["spec"]["queueName"], "lq", "{first}");
    let first_uid = first["metadata"]["uid"].as_str().unwrap().to_string();
    let owned_by_reshape = || {
        get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])
            .map(|l| {
                l["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|w| w["metadata"]["ownerReferences"][0]["name"] == "reshape")
                    .count()
            })
            .unwrap_or(0)
    };

    // 1. Pod sets change while suspended: the Workload follows.
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "job",
            "reshape",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"parallelism":3}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let second = wait_for(
        Duration::from_secs(60),
        "the Workload updated to 3 pods",
        || workload_of(c, &ns, "reshape").filter(|w| w["spec"]["podSets"][0]["count"] == 3),
    );
    assert_eq!(second["metadata"]["uid"], first_uid.as_str(), "{second}");
    assert_eq!(owned_by_reshape(), 1, "one Workload for the Job");
    let second_uid = second["metadata"]["uid"].as_str().unwrap().to_string();
    let selector = "involvedObject.name=reshape,reason=UpdatedWorkload";
    let ev = wait_for(Duration::from_secs(30), "the UpdatedWorkload event", || {
        get(c, &["events", "-n", &ns, "--field-selector", selector])
            .and_then(|l| l["items"].as_array()?.first().cloned())
    });
    assert!(
        ev["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Updated not matching Workload for suspended job: "),
        "{ev}"
    );

    // 2. Queue name and priority class changed while suspended: copied.
    for label in [
        "kueue.x-k8s.io/queue-name=lq2",
        "kueue.x-k8s.io/priority-class=recon-high",
    ] {
        let (ok, out, err) = kubectl(
            c,
            &["label", "job", "reshape", "-n", &ns, "--overwrite", label],
            None,
        );
        assert!(ok, "{label}: {out}{err}");
    }
    let third = wait_for(
        Duration::from_secs(60),
        "queue lq2 and priority 1000 on the Workload",
        || {
            workload_of(c, &ns, "reshape")
                .filter(|w| w["spec"]["queueName"] == "lq2" && w["spec"]["priority"] == 1000)
        },
    );
    assert_eq!(
        third["metadata"]["uid"],
        second_uid.as_str(),
        "the Workload was updated, not re-created"
    );
    assert_eq!(owned_by_reshape(), 1, "one Workload for the Job");
    let job_now = get(c, &["job", "reshape", "-n", &ns]).unwrap();
    assert_eq!(job_now["spec"]["suspend"], true, "{job_now}");

    // 3. A queued Job running without an admission is suspended.
    let bypass = namespace(c, "batchgate-system");
    let mut running: serde_json::Value =
        serde_json::from_str(&job("unadmitted", &bypass, "lq", "1", "600s", json!({}))).unwrap();
    running["spec"]["suspend"] = json!(false);
    // As stored by the create (the reconciler may act before a read).
    let (ok, out, err) = kubectl(
        c,
        &["create", "-o", "json", "-f", "-"],
        Some(&running.to_string()),
    );
    assert!(ok, "{out}{err}");
    let stored: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        stored["spec"]["suspend"], false,
        "the webhook saw it after all: {stored}"
    );
    wait_for(
        Duration::from_secs(60),
        "the unadmitted Job suspended",
        || get(c, &["job", "unadmitted", "-n", &bypass]).filter(|j| j["spec"]["suspend"] == true),
    );
    let _ = kubectl(
        c,
        &["delete", "job", "unadmitted", "-n", &bypass, "--wait=false"],
        None,
    );
    let _ = kubectl(
        c,
        &["delete", "job", "reshape", "-n", &ns, "--wait=false"],
        None,
    );
}

/// Partial admission through a Job's `kueue.x-k8s.io/job-min-parallelism`:
/// 4 pods of 1 cpu (at least 2) where a long Job holds 1 of 3 cpu. The
/// Workload carries `minCount`, is admitted with the 2 pods that fit, the
/// Job runs with parallelism 2 on the flavor's KWOK nodes and completes
/// all 4 completions. A second Job, annotated only while it waits, is
/// admitted reduced too; deactivated while it runs at its reduced
/// parallelism, it gets its own parallelism back once suspended.
#[test]
fn a_job_with_min_parallelism_is_admitted_with_the_pods_that_fit() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-partial");
    apply(
        c,
        &flavor("partial-flavor", json!({"instance-type": "on-demand"})),
    );
    apply(
        c,
        &cluster_queue("partial-cq", &[("partial-flavor", "3", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "partial-cq"));
    // Holds 1 cpu until deleted: what is left does not depend on timing.
    create(c, &job("holder", &ns, "lq", "1", "600s", json!({})));
    wait_for(Duration::from_secs(60), "the holder to be admitted", || {
        workload_of(c, &ns, "holder").filter(|w| is_true(w, "Admitted"))
    });

    let partial_job = |name: &str, runtime: &str| {
        let mut j: serde_json::Value =
            serde_json::from_str(&job(name, &ns, "lq", "1", runtime, json!({}))).unwrap();
        j["metadata"]["annotations"] = json!({"kueue.x-k8s.io/job-min-parallelism": "2"});
        j["spec"]["parallelism"] = json!(4);
        j["spec"]["completions"] = json!(4);
        j.to_string()
    };
    create(c, &partial_job("wide", "3s"));
    let wl = wait_for(Duration::from_secs(60), "the partial admission", || {
        workload_of(c, &ns, "wide").filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(wl["spec"]["podSets"][0]["count"], 4, "{wl}");
    assert_eq!(wl["spec"]["podSets"][0]["minCount"], 2, "{wl}");
    let psa = &wl["status"]["admission"]["podSetAssignments"][0];
    assert_eq!(psa["count"], 2, "{wl}");
    assert_eq!(psa["flavors"]["cpu"], "partial-flavor", "{wl}");
    assert_eq!(psa["resourceUsage"]["cpu"], "2", "{wl}");
    let qr = condition(&wl, "QuotaReserved").unwrap();
    assert_eq!(qr["message"], "Quota reserved in ClusterQueue partial-cq");

    let started = wait_for(Duration::from_secs(60), "the Job to start", || {
        get(c, &["job", "wide", "-n", &ns]).filter(|j| j["spec"]["suspend"] == false)
    });
    assert_eq!(started["spec"]["parallelism"], 2, "{started}");
    assert_eq!(started["spec"]["completions"], 4, "{started}");
    let pods = wait_for(Duration::from_secs(60), "the first pods on nodes", || {
        let p = get(c, &["pods", "-n", &ns, "-l", "job-name=wide"])?;
        let items = p["items"].as_array()?.clone();
        (!items.is_empty() && items.iter().all(|p| p["spec"]["nodeName"].is_string()))
            .then_some(items)
    });
    for p in &pods {
        assert_eq!(p["spec"]["nodeSelector"]["instance-type"], "on-demand");
        let node = get(c, &["node", p["spec"]["nodeName"].as_str().unwrap()]).unwrap();
        assert_eq!(node["metadata"]["labels"]["type"], "kwok", "{node}");
    }
    let done = wait_for(Duration::from_secs(120), "all 4 completions", || {
        get(c, &["job", "wide", "-n", &ns]).filter(|j| j["status"]["succeeded"] == 4)
    });
    assert_eq!(done["spec"]["parallelism"], 2);
    wait_for(Duration::from_secs(60), "the Workload to finish", || {
        workload_of(c, &ns, "wide").filter(|w| is_true(w, "Finished"))
    });

    // As upstream's integration test "Should schedule jobs with partial
    // admission": a pending Job annotated later gets a new Workload with
    // minCount and is admitted reduced; evicted while reduced, it is
    // suspended first, then gets parallelism 4 back.
    let mut plain: serde_json::Value =
        serde_json::from_str(&partial_job("evicted", "600s")).unwrap();
    plain["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");
    create(c, &plain.to_string());
    let pending = wait_for(Duration::from_secs(60), "the full count to wait", || {
        workload_of(c, &ns, "evicted")
            .filter(|w| condition(w, "QuotaReserved").is_some_and(|q| q["status"] == "False"))
    });
    assert_eq!(
        condition(&pending, "QuotaReserved").unwrap()["message"],
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor partial-flavor, previously considered podsets requests (0) + current podset request (4) > maximum capacity (3)"
    );
    kubectl_ok(
        c,
        &[
            "annotate",
            "job",
            "evicted",
            "-n",
            &ns,
            "kueue.x-k8s.io/job-min-parallelism=2",
        ],
    );
    let wl = wait_for(Duration::from_secs(60), "the second admission", || {
        workload_of(c, &ns, "evicted").filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(wl["spec"]["podSets"][0]["minCount"], 2, "{wl}");
    assert_eq!(
        wl["status"]["admission"]["podSetAssignments"][0]["count"],
        2
    );
    wait_for(Duration::from_secs(60), "the second Job to start", || {
        get(c, &["job", "evicted", "-n", &ns])
            .filter(|j| j["spec"]["suspend"] == false && j["spec"]["parallelism"] == 2)
    });
    let name = wl["metadata"]["name"].as_str().unwrap().to_string();
    kubectl_ok(
        c,
        &[
            "patch",
            "workload",
            &name,
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"active":false}}"#,
        ],
    );
    let restored = wait_for(Duration::from_secs(60), "parallelism 4 restored", || {
        get(c, &["job", "evicted", "-n", &ns])
            .filter(|j| j["spec"]["suspend"] == true && j["spec"]["parallelism"] == 4)
    });
    assert_eq!(restored["spec"]["completions"], 4);
    kubectl_ok(c, &["delete", "job", "holder", "evicted", "-n", &ns]);
}

/// Seconds since the epoch of an RFC 3339 time in `v` (whole seconds, as
/// the API writes them).
fn epoch(v: &Value) -> i64 {
    let t = v.as_str().unwrap_or_else(|| panic!("not a time: {v}"));
    t.parse::<k8s_openapi::jiff::Timestamp>()
        .unwrap_or_else(|e| panic!("{t}: {e}"))
        .as_second()
}

/// waitForPodsReady end to end: a Job whose pod can never be scheduled
/// (so never ready) is evicted with `PodsReadyTimeout` once the timeout
/// passes, its Job suspended and requeued after a backoff that doubles
/// (`status.requeueState`: count 1 waits 2 s, count 2 waits 4 s), and on
/// the timeout after `backoffLimitCount` requeues it is deactivated with
/// Kueue's reason; PodsReady says why throughout.
#[test]
fn a_job_whose_pods_never_become_ready_is_requeued_with_backoff_then_deactivated() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-pods-ready");
    apply(c, &flavor("ready-flavor", json!({})));
    apply(
        c,
        &cluster_queue("ready-cq", &[("ready-flavor", "2", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "ready-cq"));
    let mut j: Value =
        serde_json::from_str(&job("stuck", &ns, "lq", "1", "60s", json!({}))).unwrap();
    // No node carries this label: the pod stays Pending, never ready.
    j["spec"]["template"]["spec"]["nodeSelector"] = json!({"e2e.batchgate/nowhere": "true"});
    create(c, &j.to_string());

    let wl = wait_for(
        Duration::from_secs(60),
        "PodsReady=False once admitted",
        || {
            let w = workload_of(c, &ns, "stuck")?;
            (is_true(&w, "Admitted") && condition(&w, "PodsReady").is_some()).then_some(w)
        },
    );
    let pr = condition(&wl, "PodsReady").unwrap();
    assert_eq!(
        (&pr["status"], &pr["reason"], &pr["message"]),
        (
            &json!("False"),
            &json!("WaitForStart"),
            &json!("Not all pods are ready or succeeded")
        ),
        "{wl}"
    );
    let name = wl["metadata"]["name"].as_str().unwrap().to_string();

    // Each timeout: evicted, requeued with the next backoff.
    let mut waits = Vec::new();
    for count in 1..=2 {
        let w = wait_for(
            Duration::from_secs(90),
            &format!("eviction {count} with requeueState.count {count}"),
            || {
                let w = get(c, &["workload", &name, "-n", &ns])?;
                let rs = &w["status"]["requeueState"];
                (rs["count"] == count && rs["requeueAt"].is_string() && is_true(&w, "Evicted"))
                    .then_some(w)
            },
        );
        let ev = condition(&w, "Evicted").unwrap();
        assert_eq!(ev["reason"], "PodsReadyTimeout", "{w}");
        assert_eq!(
            ev["message"],
            format!("Exceeded the PodsReady timeout {ns}/{name}"),
            "{w}"
        );
        waits.push(
            epoch(&w["status"]["requeueState"]["requeueAt"]) - epoch(&ev["lastTransitionTime"]),
        );
        // The Job is stopped and the quota given back while it backs off.
        wait_for(Duration::from_secs(60), "the Job suspended", || {
            let j = get(c, &["job", "stuck", "-n", &ns])?;
            (j["spec"]["suspend"] == true).then_some(())
        });
        // Then it queues again: Requeued=True (BackoffFinished), admitted.
        // The Requeued condition must be this backoff's: until the evicted
        // admission is cleared (Requeued=False, as Kueue clears it), the
        // last backoff's BackoffFinished and the old admission still show.
        let evicted_at = epoch(&ev["lastTransitionTime"]);
        let w = wait_for(
            Duration::from_secs(90),
            "the backoff to finish and the Job to be admitted again",
            || {
                let w = get(c, &["workload", &name, "-n", &ns])?;
                let rq = condition(&w, "Requeued")?;
                (rq["status"] == "True"
                    && rq["reason"] == "BackoffFinished"
                    && epoch(&rq["lastTransitionTime"]) > evicted_at
                    && is_true(&w, "Admitted"))
                .then_some(w)
            },
        );
        assert_eq!(w["status"]["requeueState"]["count"], count, "{w}");
        assert!(w["status"]["requeueState"]["requeueAt"].is_null(), "{w}");
        assert_eq!(
            condition(&w, "Requeued").unwrap()["message"],
            "The workload backoff was finished"
        );
    }
    // base 2 s doubling: about 2 s, then about 4 s (whole seconds written).
    assert!((2..=3).contains(&waits[0]), "{waits:?}");
    assert!((4..=5).contains(&waits[1]), "{waits:?}");

    // The third timeout is past backoffLimitCount (2): deactivated.
    let w = wait_for(Duration::from_secs(90), "deactivation", || {
        let w = get(c, &["workload", &name, "-n", &ns])?;
        (w["spec"]["active"] == false && is_true(&w, "Evicted")).then_some(w)
    });
    let ev = condition(&w, "Evicted").unwrap();
    assert_eq!(
        ev["reason"], "DeactivatedDueToRequeuingLimitExceeded",
        "{w}"
    );
    assert_eq!(
        ev["message"],
        "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    );
    assert!(w["status"]["requeueState"].is_null(), "{w}");
    assert!(condition(&w, "DeactivationTarget").is_none(), "{w}");
    wait_for(
        Duration::from_secs(60),
        "the Job suspended for good",
        || {
            let j = get(c, &["job", "stuck", "-n", &ns])?;
            (j["spec"]["suspend"] == true).then_some(())
        },
    );
    wait_for(Duration::from_secs(60), "the quota released", || {
        cq_counts(c, "ready-cq").filter(|s| s.1 == 0)
    });
    // Two evictions counted, and Kueue's event for each.
    assert_eq!(
        w["status"]["schedulingStats"]["evictions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["reason"] == "PodsReadyTimeout")
            .map(|e| e["count"].clone()),
        Some(json!(2)),
        "{w}"
    );
    let events = get(
        c,
        &[
            "events",
            "-n",
            &ns,
            "--field-selector",
            &format!("involvedObject.name={name},reason=EvictedDueToPodsReadyTimeout"),
        ],
    )
    .unwrap();
    let seen: i64 = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["count"]
                .as_i64()
                .unwrap_or(1)
                .max(e["series"]["count"].as_i64().unwrap_or(1))
        })
        .sum();
    assert!(seen >= 1, "{events}");
}

/// Dynamic reclaim end to end: a Job of 4 completions, 3 at a time, fills
/// its 3-cpu ClusterQueue; once its first 3 pods succeed only one slot is
/// still needed, so `status.reclaimablePods` says 2 and a second Job asking
/// for 2 cpu is admitted into that quota while the first still runs.
#[test]
fn reclaimable_pods_give_quota_to_a_second_job_while_the_first_runs() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-reclaim");
    apply(c, &flavor("reclaim-flavor", json!({})));
    apply(
        c,
        &cluster_queue("reclaim-cq", &[("reclaim-flavor", "3", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "reclaim-cq"));
    let mut first: Value =
        serde_json::from_str(&job("first", &ns, "lq", "1", "20s", json!({}))).unwrap();
    first["spec"]["parallelism"] = json!(3);
    first["spec"]["completions"] = json!(4);
    create(c, &first.to_string());
    wait_for(Duration::from_secs(60), "the first Job admitted", || {
        cq_counts(c, "reclaim-cq").filter(|s| s.1 == 1 && s.3 == "3")
    });
    create(c, &job("second", &ns, "lq", "2", "1s", json!({})));
    let w = wait_for(Duration::from_secs(60), "the second Job pending", || {
        let w = workload_of(c, &ns, "second")?;
        let qr = condition(&w, "QuotaReserved")?;
        (qr["status"] == "False").then_some(w)
    });
    assert!(!is_true(&w, "Admitted"), "{w}");

    // Three pods done, one to go: two reclaimable, the second admitted.
    let w = wait_for(Duration::from_secs(120), "reclaimablePods", || {
        let w = workload_of(c, &ns, "first")?;
        w["status"]["reclaimablePods"].is_array().then_some(w)
    });
    assert_eq!(
        w["status"]["reclaimablePods"],
        json!([{"name": "main", "count": 2}]),
        "{w}"
    );
    wait_for(Duration::from_secs(60), "the second Job admitted", || {
        workload_of(c, &ns, "second").filter(|w| is_true(w, "Admitted"))
    });
    let first_wl = workload_of(c, &ns, "first").unwrap();
    let first_job = get(c, &["job", "first", "-n", &ns]).unwrap();
    assert!(
        !is_true(&first_wl, "Finished") && first_job["status"]["succeeded"].as_i64() < Some(4),
        "the first Job still runs while the second is admitted: {first_job}"
    );
    wait_for(Duration::from_secs(120), "both Jobs to complete", || {
        ["first", "second"]
            .iter()
            .all(|j| get(c, &["job", j, "-n", &ns]).is_some_and(|j| is_true(&j, "Complete")))
            .then_some(())
    });
}

/// The Events about a Job: (reason, message).
fn job_events(
    c: &batchgate_localcluster::LocalCluster,
    ns: &str,
    job: &str,
) -> Vec<(String, String)> {
    get(
        c,
        &[
            "events",
            "-n",
            ns,
            "--field-selector",
            &format!("involvedObject.name={job},involvedObject.kind=Job"),
        ],
    )
    .and_then(|l| l["items"].as_array().cloned())
    .unwrap_or_default()
    .iter()
    .map(|e| {
        (
            e["reason"].as_str().unwrap_or_default().to_string(),
            e["message"].as_str().unwrap_or_default().to_string(),
        )
    })
    .collect()
}

/// `(total, borrowed)` cpu a ClusterQueue's admitted Workloads use
/// (`status.flavorsUsage`).
fn cq_usage(c: &batchgate_localcluster::LocalCluster, name: &str) -> Option<(f64, f64)> {
    let cq = get(c, &["clusterqueue", name])?;
    let r = cq["status"]["flavorsUsage"]
        .as_array()?
        .iter()
        .flat_map(|f| f["resources"].as_array().cloned().unwrap_or_default())
        .find(|r| r["name"] == "cpu")?;
    Some((cores(&r["total"]), cores(&r["borrowed"])))
}

/// Issue 21: a two-level cohort tree (Cohort `tree-org` with the Cohort
/// `tree-lab` under it), three tenants with 1 cpu each: `tree-a` and
/// `tree-b` in the lab, `tree-c` directly in the org. Tenant a bursts to
/// 3 cpu, borrowing the idle quota of both others through the tree; when
/// b and c come back, they reclaim their quota by preempting a's borrowed
/// Workloads (`InCohortReclamation`, with the tree paths in the message),
/// and every tenant ends on its own 1 cpu.
#[test]
fn a_burst_borrows_through_the_cohort_tree_and_the_tenants_reclaim_it() {
    let e = env();
    let c = e.cluster;
    let tenants = ["a", "b", "c"];
    let ns: BTreeMap<&str, String> = tenants
        .iter()
        .map(|t| (*t, namespace(c, &format!("e2e-tree-{t}"))))
        .collect();
    c.wait_established(&["crd/cohorts.kueue.x-k8s.io"], Duration::from_secs(60))
        .unwrap();
    apply(c, &flavor("tree-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: tree-org}\n",
    );
    apply(
        c,
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: tree-lab}\nspec: {parentName: tree-org}\n",
    );
    for (t, cohort) in [("a", "tree-lab"), ("b", "tree-lab"), ("c", "tree-org")] {
        apply(
            c,
            &cluster_queue(
                &format!("tree-{t}"),
                &[("tree-spot", "1", None)],
                json!({"cohortName": cohort, "preemption": {"reclaimWithinCohort": "Any"}}),
            ),
        );
        apply(c, &local_queue(&ns[t], "lq", &format!("tree-{t}")));
    }

    // The burst: six half-cpu Jobs of tenant a, all admitted on 3 cpu.
    for i in 0..6 {
        create(
            c,
            &job(
                &format!("burst-{i}"),
                &ns["a"],
                "lq",
                "500m",
                "300s",
                json!({}),
            ),
        );
    }
    // The queue's status and the Jobs' start are written apart: either
    // may be read first.
    let (total, borrowed) = wait_for(Duration::from_secs(60), "tenant a's burst to run", || {
        let usage = cq_usage(c, "tree-a").filter(|u| u.0 == 3.0)?;
        (jobs(c, &ns["a"]).iter().filter(|j| !j.1).count() == 6).then_some(usage)
    });
    assert_eq!((total, borrowed), (3.0, 2.0));

    // The others come back and take their quota back.
    for t in ["b", "c"] {
        for i in 0..2 {
            create(
                c,
                &job(
                    &format!("back-{i}"),
                    &ns[t],
                    "lq",
                    "500m",
                    "300s",
                    json!({}),
                ),
            );
        }
    }
    let usage = wait_for(
        Duration::from_secs(120),
        "every tenant on its own 1 cpu",
        || {
            let u: Vec<(f64, f64)> = ["tree-a", "tree-b", "tree-c"]
                .iter()
                .map(|q| cq_usage(c, q))
                .collect::<Option<_>>()?;
            u.iter().all(|u| u.0 == 1.0).then_some(u)
        },
    );
    assert_eq!(usage, vec![(1.0, 0.0); 3]);
    for t in ["b", "c"] {
        for (name, suspended, _) in jobs(c, &ns[t]) {
            assert!(!suspended, "{t}/{name} runs");
            let started = wait_for(Duration::from_secs(30), "the Started event", || {
                job_events(c, &ns[t], &name)
                    .into_iter()
                    .find(|e| e.0 == "Started")
            });
            assert_eq!(started.1, format!("Admitted by clusterQueue tree-{t}"));
        }
    }

    // Four of a's Workloads were preempted, each for b or c, with the paths
    // from the root; their Jobs are suspended again and say why.
    let mut by_preemptor: BTreeMap<String, usize> = BTreeMap::new();
    for (name, suspended, _) in jobs(c, &ns["a"]) {
        let wl = workload_of(c, &ns["a"], &name).unwrap();
        if !is_true(&wl, "Preempted") {
            assert!(!suspended, "{name} keeps running");
            continue;
        }
        assert!(suspended, "{name} is stopped");
        let p = condition(&wl, "Preempted").unwrap();
        assert_eq!(p["reason"], "InCohortReclamation", "{p}");
        let m = p["message"].as_str().unwrap();
        let path = m
            .strip_prefix("Preempted to accommodate a workload (UID: ")
            .and_then(|m| m.split_once(") due to reclamation within the cohort; preemptor path: "))
            .map(|(_, p)| p.to_string())
            .unwrap_or_else(|| panic!("{m}"));
        let (preemptor, preemptee) = path.split_once("; preemptee path: ").unwrap();
        assert_eq!(preemptee, "/tree-org/tree-lab/tree-a");
        *by_preemptor.entry(preemptor.to_string()).or_default() += 1;
        assert_eq!(condition(&wl, "Evicted").unwrap()["reason"], "Preempted");
        let qr = wait_for(Duration::from_secs(60), "the quota given back", || {
            let wl = workload_of(c, &ns["a"], &name)?;
            condition(&wl, "QuotaReserved")
                .filter(|q| q["status"] == "False")
                .cloned()
        });
        assert_eq!(qr["reason"], "Pending", "{qr}");
        let stopped = job_events(c, &ns["a"], &name)
            .into_iter()
            .find(|e| e.0 == "Stopped")
            .unwrap_or_else(|| panic!("no Stopped event for {name}"));
        assert_eq!(stopped.1, m);
    }
    // Four in all, by b or by c: with fair sharing on (this binary), the
    // quota one preemption frees may go to the other tenant's head, which
    // then fits, while the preemptor preempts again.
    assert_eq!(by_preemptor.values().sum::<usize>(), 4, "{by_preemptor:?}");
    for preemptor in by_preemptor.keys() {
        assert!(
            ["/tree-org/tree-c", "/tree-org/tree-lab/tree-b"].contains(&preemptor.as_str()),
            "{preemptor}"
        );
    }
    for t in tenants {
        let (ok, out, err) = kubectl(c, &["delete", "namespace", &ns[t], "--wait=false"], None);
        assert!(ok, "{out}{err}");
    }
}

/// waitForPodsReady for kinds other than the Job (issue 43), each read as
/// Kueue v0.19.2's integration reads it: a JobSet (ready and succeeded
/// replicated jobs against its replicas) and an MPIJob (its `Running`
/// condition). No JobSet or MPI operator runs here, so, like a job whose
/// pods cannot be scheduled, neither ever reports readiness: each is
/// admitted, gets `PodsReady=False` (`WaitForStart`), is evicted with
/// `PodsReadyTimeout` once the timeout passes, stopped, and queued again
/// after its backoff (`Requeued=True`, `BackoffFinished`) — as Kueue's
/// test/integration/singlecluster/controller/jobs/jobset/
/// jobset_controller_test.go ("No progress") and the podsready scheduler
/// tests have it.
#[test]
fn a_jobset_and_an_mpijob_whose_pods_never_become_ready_are_requeued() {
    let e = env();
    let c = e.cluster;
    install_kind_crds(c);
    let ns = namespace(c, "e2e-kinds-ready");
    apply(c, &flavor("kinds-ready-flavor", json!({})));
    // The samples' pods ask for memory too.
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": "kinds-ready-cq"},
                "spec": {"namespaceSelector": {}, "resourceGroups": [{
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": "kinds-ready-flavor", "resources": [
                        {"name": "cpu", "nominalQuota": "4"},
                        {"name": "memory", "nominalQuota": "4Gi"}]}]}]}})
        .to_string(),
    );
    apply(c, &local_queue(&ns, "lq", "kinds-ready-cq"));
    let samples = [support::kinds::jobset(), support::kinds::mpijob()];
    for s in &samples {
        // The kind's reconciler starts once its CRD is served (polled).
        let obj = s.object(&s.kind.to_lowercase(), &ns, "lq");
        wait_for(
            Duration::from_secs(60),
            &format!("{} created", s.kind),
            || {
                let (ok, _, _) = kubectl(c, &["create", "-f", "-"], Some(&obj.to_string()));
                ok.then_some(())
            },
        );
    }
    let owned_by = |kind: &str| {
        let list = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])?;
        list["items"]
            .as_array()?
            .iter()
            .find(|w| w["metadata"]["ownerReferences"][0]["kind"] == kind)
            .cloned()
    };
    for s in &samples {
        let w = wait_for(
            Duration::from_secs(90),
            &format!("{}'s Workload admitted with PodsReady=False", s.kind),
            || {
                owned_by(s.kind)
                    .filter(|w| is_true(w, "Admitted") && condition(w, "PodsReady").is_some())
            },
        );
        waiting_for_start(&w);
    }
    for s in &samples {
        let w = wait_for(
            Duration::from_secs(90),
            &format!("{} evicted for PodsReadyTimeout and requeued", s.kind),
            || {
                owned_by(s.kind).filter(|w| {
                    w["status"]["requeueState"]["count"] == 1
                        && condition(w, "Requeued").is_some_and(|r| {
                            r["status"] == "True" && r["reason"] == "BackoffFinished"
                        })
                })
            },
        );
        pods_ready_timeout_event(c, &ns, &w);
    }
    // Done with them: no more timeouts to churn through.
    for s in &samples {
        let name = s.kind.to_lowercase();
        let (ok, out, err) = kubectl(
            c,
            &[
                "delete",
                &format!("{}.{}", s.resource, s.group),
                &name,
                "-n",
                &ns,
                "--wait=false",
            ],
            None,
        );
        assert!(ok, "{out}{err}");
    }
}

/// An admitted Workload's `PodsReady=False` before its pods ever were
/// ready, in Kueue's words.
fn waiting_for_start(w: &Value) {
    let pr = condition(w, "PodsReady").unwrap();
    assert_eq!(
        (&pr["status"], &pr["reason"], &pr["message"]),
        (
            &json!("False"),
            &json!("WaitForStart"),
            &json!("Not all pods are ready or succeeded")
        ),
        "{w}"
    );
}

/// The event Kueue records on a Workload evicted for PodsReadyTimeout.
fn pods_ready_timeout_event(c: &batchgate_localcluster::LocalCluster, ns: &str, w: &Value) {
    let name = w["metadata"]["name"].as_str().unwrap();
    let selector = format!("involvedObject.name={name},reason=EvictedDueToPodsReadyTimeout");
    let ev = wait_for(Duration::from_secs(30), "the eviction event", || {
        get(c, &["events", "-n", ns, "--field-selector", &selector])
            .and_then(|l| l["items"].as_array()?.first().cloned())
    });
    assert_eq!(
        ev["message"],
        format!("Exceeded the PodsReady timeout {ns}/{name}"),
        "{ev}"
    );
}

/// waitForPodsReady for the AppWrapper (issue 43), read as Kueue's
/// AppWrapper integration reads it (the AppWrapper's own `PodsReady`
/// condition): an AppWrapper whose Job's pod can never be scheduled is
/// admitted, its Workload gets `PodsReady=False` (`WaitForStart`), is
/// evicted with `PodsReadyTimeout`, the AppWrapper is suspended and its
/// quota released, and it queues again after its backoff (`Requeued=True`,
/// `BackoffFinished`); past the requeuing limit its Workload is
/// deactivated (`RequeuingLimitExceeded`), as Kueue's podsready tests have
/// it for any job.
#[test]
fn an_appwrapper_whose_pods_never_become_ready_is_requeued_then_deactivated() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-aw-ready");
    apply(c, &flavor("aw-ready-flavor", json!({})));
    apply(
        c,
        &cluster_queue("aw-ready-cq", &[("aw-ready-flavor", "4", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "aw-ready-cq"));
    let aw = json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": "stuck", "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"components": [{"template": {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "stuck-job"},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                     "template": {"spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": {"e2e.batchgate.dev/nowhere": "true"},
                        "containers": [{"name": "main", "image": "busybox",
                                        "resources": {"requests": {"cpu": "1"}}}]}}}}}]},
    });
    create(c, &aw.to_string());
    let wl = || workload_of(c, &ns, "stuck");
    let w = wait_for(
        Duration::from_secs(90),
        "the AppWrapper's Workload admitted with PodsReady=False",
        || wl().filter(|w| is_true(w, "Admitted") && condition(w, "PodsReady").is_some()),
    );
    waiting_for_start(&w);
    let w = wait_for(
        Duration::from_secs(90),
        "evicted for PodsReadyTimeout and requeued",
        || {
            wl().filter(|w| {
                w["status"]["requeueState"]["count"] == 1
                    && condition(w, "Requeued")
                        .is_some_and(|r| r["status"] == "True" && r["reason"] == "BackoffFinished")
            })
        },
    );
    pods_ready_timeout_event(c, &ns, &w);
    let w = wait_for(
        Duration::from_secs(120),
        "deactivated past the requeuing limit",
        || wl().filter(|w| w["spec"]["active"] == false && is_true(w, "Evicted")),
    );
    assert_eq!(
        condition(&w, "Evicted").unwrap()["reason"],
        "DeactivatedDueToRequeuingLimitExceeded",
        "{w}"
    );
    assert!(condition(&w, "DeactivationTarget").is_none(), "{w}");
    let a = wait_for(Duration::from_secs(60), "the AppWrapper suspended", || {
        get(
            c,
            &["appwrappers.workload.codeflare.dev", "stuck", "-n", &ns],
        )
        .filter(|a| a["spec"]["suspend"] == true && a["status"]["phase"] == "Suspended")
    });
    assert!(get(c, &["job", "stuck-job", "-n", &ns]).is_none(), "{a}");
    let (ok, out, err) = kubectl(
        c,
        &[
            "delete",
            "appwrappers.workload.codeflare.dev",
            "stuck",
            "-n",
            &ns,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{out}{err}");
}

/// A JobSet of replicated jobs (name, replicas, parallelism, completions),
/// each pod asking for `cpu`.
fn jobset(name: &str, ns: &str, jobs: &[(&str, u32, u32, u32)], cpu: &str) -> Value {
    let replicated: Vec<Value> = jobs
        .iter()
        .map(|(n, replicas, parallelism, completions)| {
            json!({"name": n, "replicas": replicas, "template": {"spec": {
                "parallelism": parallelism, "completions": completions,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": cpu}}}]}}}}})
        })
        .collect();
    json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
           "metadata": {"name": name, "namespace": ns,
                        "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
           "spec": {"replicatedJobs": replicated}})
}

/// Dynamic reclaim for a JobSet (issue 43), following Kueue v0.19.2
/// test/integration/singlecluster/controller/jobs/jobset/
/// jobset_controller_test.go ("Should allow reclaim of resources that are
/// no longer needed"): dev-jobset1 takes the whole 5 cpu; dev-jobset2 (3
/// cpu) waits; once dev-jobset1's status says 2 replicas of
/// replicated-job-1 and 1 of replicated-job-2 succeeded, its Workload
/// reclaims 8 and 4 pods, holds 2 cpu, and dev-jobset2 starts while it
/// still runs. The test plays the JobSet controller: it writes
/// dev-jobset1's status (all replicated jobs ready, so waitForPodsReady's
/// short timeout here is met, then the succeeded counts).
#[test]
fn a_jobsets_finished_replicated_jobs_give_their_quota_back() {
    let e = env();
    let c = e.cluster;
    install_kind_crds(c);
    let ns = namespace(c, "e2e-jobset-reclaim");
    apply(c, &flavor("jobset-reclaim-flavor", json!({})));
    apply(
        c,
        &cluster_queue(
            "jobset-reclaim-cq",
            &[("jobset-reclaim-flavor", "5", None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "jobset-reclaim-cq"));
    let first = jobset(
        "dev-jobset1",
        &ns,
        &[("replicated-job-1", 2, 4, 8), ("replicated-job-2", 3, 4, 4)],
        "250m",
    );
    wait_for(Duration::from_secs(60), "dev-jobset1 created", || {
        let (ok, _, _) = kubectl(c, &["create", "-f", "-"], Some(&first.to_string()));
        ok.then_some(())
    });
    let status = |body: Value| {
        let (ok, out, err) = kubectl(
            c,
            &[
                "patch",
                "jobsets.jobset.x-k8s.io",
                "dev-jobset1",
                "-n",
                &ns,
                "--subresource=status",
                "--type=merge",
                "-p",
                &json!({"status": body}).to_string(),
            ],
            None,
        );
        assert!(ok, "{out}{err}");
    };
    wait_for(Duration::from_secs(60), "dev-jobset1 started", || {
        get(c, &["jobsets.jobset.x-k8s.io", "dev-jobset1", "-n", &ns])
            .filter(|j| j["spec"]["suspend"] == false)
    });
    status(json!({"replicatedJobsStatus": [
        {"name": "replicated-job-1", "ready": 2, "succeeded": 0},
        {"name": "replicated-job-2", "ready": 3, "succeeded": 0}]}));
    let second = jobset(
        "dev-jobset2",
        &ns,
        &[("replicated-job-1", 2, 1, 1), ("replicated-job-2", 1, 1, 1)],
        "1",
    );
    create(c, &second.to_string());
    let jobset_wl = |name: &str| {
        let list = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])?;
        list["items"]
            .as_array()?
            .iter()
            .find(|w| w["metadata"]["ownerReferences"][0]["name"] == name)
            .cloned()
    };
    wait_for(
        Duration::from_secs(60),
        "dev-jobset2 waiting for quota",
        || {
            jobset_wl("dev-jobset2")
                .filter(|w| condition(w, "QuotaReserved").is_some_and(|q| q["status"] == "False"))
        },
    );
    let js1 = jobset_wl("dev-jobset1").unwrap();
    assert!(is_true(&js1, "Admitted"), "{js1}");
    // Succeeded replicas (ready + succeeded still cover every job).
    status(json!({"replicatedJobsStatus": [
        {"name": "replicated-job-1", "ready": 0, "succeeded": 2},
        {"name": "replicated-job-2", "ready": 2, "succeeded": 1}]}));
    let js1 = wait_for(
        Duration::from_secs(60),
        "dev-jobset1's reclaimable pods",
        || jobset_wl("dev-jobset1").filter(|w| w["status"]["reclaimablePods"].is_array()),
    );
    assert_eq!(
        js1["status"]["reclaimablePods"],
        json!([{"name": "replicated-job-1", "count": 8}, {"name": "replicated-job-2", "count": 4}]),
        "{js1}"
    );
    wait_for(Duration::from_secs(60), "dev-jobset2 started", || {
        get(c, &["jobsets.jobset.x-k8s.io", "dev-jobset2", "-n", &ns])
            .filter(|j| j["spec"]["suspend"] == false)
    });
    let js1 = jobset_wl("dev-jobset1").unwrap();
    assert!(is_true(&js1, "Admitted"), "dev-jobset1 still runs: {js1}");
    for name in ["dev-jobset1", "dev-jobset2"] {
        let (ok, out, err) = kubectl(
            c,
            &[
                "delete",
                "jobsets.jobset.x-k8s.io",
                name,
                "-n",
                &ns,
                "--wait=false",
            ],
            None,
        );
        assert!(ok, "{out}{err}");
    }
}

/// Kueue v0.19.2 `test/integration/singlecluster/controller/jobs/job/
/// job_controller_test.go`: "should adopt prebuilt workload via
/// PrebuiltWorkloadAnnotation" and "… via PrebuiltWorkloadLabel fallback",
/// and the unit case "when the prebuilt workload is not equivalent to the
/// job". A Job naming a prebuilt Workload gets none made for it; the one
/// made for it (here by the test, as a MultiKueue manager or a user would)
/// is taken, admitted, and runs the Job to the end. One that does not
/// describe its Job is finished `OutOfSync` and the Job stays suspended.
#[test]
fn a_job_naming_a_prebuilt_workload_waits_for_it_takes_it_and_runs_under_it() {
    let e = env();
    let c = e.cluster;
    let ns = namespace(c, "e2e-prebuilt");
    apply(c, &flavor("prebuilt-flavor", json!({})));
    apply(
        c,
        &cluster_queue("prebuilt-cq", &[("prebuilt-flavor", "4", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "prebuilt-cq"));
    let workloads = || {
        get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])
            .and_then(|l| l["items"].as_array().cloned())
            .expect("the namespace's Workloads could not be read")
    };

    // By annotation: the Job is stored suspended and nothing makes it a
    // Workload while the prebuilt one is missing.
    let mut by_annotation: Value =
        serde_json::from_str(&job("pb-ann", &ns, "lq", "1", "2s", json!({}))).unwrap();
    by_annotation["metadata"]["annotations"] =
        json!({"kueue.x-k8s.io/prebuilt-workload-name": "pb-ann-wl"});
    create(c, &by_annotation.to_string());
    // By label, naming a Workload that will not describe it (2 pods, the
    // Job asks for 1).
    create(
        c,
        &job(
            "pb-label",
            &ns,
            "lq",
            "1",
            "2s",
            json!({"kueue.x-k8s.io/prebuilt-workload-name": "pb-label-wl"}),
        ),
    );
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        workloads().is_empty(),
        "a Workload was made for a Job naming a prebuilt one: {:?}",
        workloads()
    );
    for name in ["pb-ann", "pb-label"] {
        let j = get(c, &["job", name, "-n", &ns]).expect("the Job");
        assert_eq!(j["spec"]["suspend"], true, "{j}");
    }

    // The Workloads, with the Jobs' pod templates as stored.
    let prebuilt = |name: &str, job: &str, count: i64| {
        let j = get(c, &["job", job, "-n", &ns]).expect("the Job");
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": count,
                        "template": j["spec"]["template"]}]}})
        .to_string()
    };
    create(c, &prebuilt("pb-ann-wl", "pb-ann", 1));
    create(c, &prebuilt("pb-label-wl", "pb-label", 2));

    // Taken: the Job is the Workload's controller, its UID the label.
    let uid = get(c, &["job", "pb-ann", "-n", &ns]).expect("the Job")["metadata"]["uid"].clone();
    let wl = wait_for(
        Duration::from_secs(60),
        "pb-ann-wl taken by its Job",
        || {
            get(c, &["workloads.kueue.x-k8s.io", "pb-ann-wl", "-n", &ns])
                .filter(|w| w["metadata"]["ownerReferences"][0]["uid"] == uid)
        },
    );
    let owner = &wl["metadata"]["ownerReferences"][0];
    assert_eq!(
        (&owner["kind"], &owner["name"], &owner["controller"]),
        (&json!("Job"), &json!("pb-ann"), &json!(true)),
        "{wl}"
    );
    assert_eq!(
        wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"], uid,
        "{wl}"
    );
    // Admitted, the Job runs to the end and its Workload finishes with it.
    let done = wait_for(Duration::from_secs(120), "pb-ann-wl finished", || {
        get(c, &["workloads.kueue.x-k8s.io", "pb-ann-wl", "-n", &ns])
            .filter(|w| is_true(w, "Finished"))
    });
    assert_eq!(
        condition(&done, "Finished").unwrap()["reason"],
        "Succeeded",
        "{done}"
    );

    // Out of sync: finished with Kueue's reason and words; the Job never ran.
    let stale = wait_for(Duration::from_secs(60), "pb-label-wl finished", || {
        get(c, &["workloads.kueue.x-k8s.io", "pb-label-wl", "-n", &ns])
            .filter(|w| is_true(w, "Finished"))
    });
    let finished = condition(&stale, "Finished").unwrap();
    assert_eq!(finished["reason"], "OutOfSync", "{stale}");
    assert_eq!(
        finished["message"], "The prebuilt workload is out of sync with its user job",
        "{stale}"
    );
    let j = get(c, &["job", "pb-label", "-n", &ns]).expect("the Job");
    assert_eq!(j["spec"]["suspend"], true, "{j}");
    assert!(j["status"]["startTime"].is_null(), "{j}");

    // Two Workloads in all: none made by batchgate.
    assert_eq!(workloads().len(), 2, "{:?}", workloads());
}
