//! Quota admission end to end on the local cluster: batchgate's reconciler
//! creates each queued Job's Workload, admits it within its ClusterQueue's
//! quota, starts the Job on the flavor's nodes and releases the quota when
//! it finishes — checked with kubectl as a user would.

mod support;

use std::{collections::BTreeMap, time::Duration};

use serde_json::json;
use support::{e2e::namespace, queueing::*};

/// 4 cpu behind two LocalQueues, six 1-cpu Jobs: four run at once on the
/// flavor's nodes, the other two when those finish, and the ClusterQueue's
/// counts say so at each step.
#[test]
fn a_cluster_queue_admits_up_to_its_quota_then_the_rest() {
    let e = env();
    let c = e.cluster;
    let ns_a = namespace(c, "e2e-quota-a");
    let ns_b = namespace(c, "e2e-quota-b");
    apply(c, &flavor("quota-on-demand", json!({"instance-type": "on-demand"})));
    apply(c, &cluster_queue("quota-cq", &[("quota-on-demand", "4", None)], json!({})));
    apply(c, &local_queue(&ns_a, "lq", "quota-cq"));
    apply(c, &local_queue(&ns_b, "lq", "quota-cq"));

    for i in 0..6 {
        let ns = if i % 2 == 0 { &ns_a } else { &ns_b };
        create(c, &job(&format!("job-{i}"), ns, "lq", "1", "6s", json!({})));
    }
    // Exactly four admitted: their Workloads hold the quota, four Jobs run.
    let (pending, reserving, admitted, used) = wait_for(
        Duration::from_secs(60),
        "four admissions",
        || cq_counts(c, "quota-cq").filter(|s| s.2 == 4 && s.0 == 2),
    );
    assert_eq!((pending, reserving, admitted, used.as_str()), (2, 4, 4, "4"));
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
        .map(|n| (n["metadata"]["name"].as_str().unwrap().to_string(), n["metadata"]["labels"].clone()))
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
        assert!(is_true(&wl, "QuotaReserved") && is_true(&wl, "Admitted"), "{wl}");
        assert_eq!(wl["status"]["admission"]["clusterQueue"], "quota-cq");
        assert_eq!(
            wl["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"],
            "quota-on-demand"
        );
    }
    // The two left wait with Kueue's reason.
    for ns in [&ns_a, &ns_b] {
        for (name, suspended, _) in jobs(c, ns) {
            if suspended {
                let wl = workload_of(c, ns, &name).unwrap();
                let qr = condition(&wl, "QuotaReserved").unwrap();
                assert_eq!(qr["status"], "False");
                assert_eq!(qr["reason"], "Pending", "{qr}");
            }
        }
    }

    // As the first four finish, the other two are admitted; all six finish.
    wait_for(Duration::from_secs(90), "all six Jobs to succeed", || {
        let all: Vec<_> = [&ns_a, &ns_b].iter().flat_map(|ns| jobs(c, ns)).collect();
        (all.len() == 6 && all.iter().all(|j| j.2)).then_some(())
    });
    let (pending, reserving, admitted, _) = wait_for(Duration::from_secs(30), "quota released", || {
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
