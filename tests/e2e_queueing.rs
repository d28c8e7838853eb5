//! Quota admission end to end on the local cluster: batchgate's reconciler
//! creates each queued Job's Workload, admits it within its ClusterQueue's
//! quota, starts the Job on the flavor's nodes and releases the quota when
//! it finishes — checked with kubectl as a user would.

mod support;

#[path = "e2e_queueing/admission_checks.rs"]
mod admission_checks;

use std::{collections::BTreeMap, time::Duration};

use serde_json::json;
use support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

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
    let running: Vec<_> = [&ns_a, &ns_b]
        .iter()
        .flat_map(|ns| jobs(c, ns).into_iter().map(move |j| (ns.to_string(), j)))
        .filter(|(_, j)| !j.1)
        .collect();
    assert_eq!(running.len(), 4, "{running:?}");

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
/// back to true, the Job is admitted again and finishes.
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
                )? == lq["status"]["admittedWorkloads"].as_f64()?)
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
/// 1. its pod sets change (parallelism 1 → 3): the Workload is re-created
///    (new uid) with the new count, one Workload for the Job;
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

    // 1. Pod sets change while suspended: the Workload is re-created.
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
        "a re-created Workload with 3 pods",
        || {
            workload_of(c, &ns, "reshape").filter(|w| {
                w["metadata"]["uid"] != first_uid.as_str() && w["spec"]["podSets"][0]["count"] == 3
            })
        },
    );
    assert_eq!(owned_by_reshape(), 1, "one Workload for the Job");
    let second_uid = second["metadata"]["uid"].as_str().unwrap().to_string();

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
