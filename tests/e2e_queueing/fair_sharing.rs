//! Fair sharing end to end (issue 21). This binary's batchgate runs with
//! `fairSharing` on (see [`super::FAIR_SHARING`]): one batchgate serves the whole
//! binary, so the switch cannot be per test; the other tests of the binary
//! decide the same with it on (no two of their ClusterQueues compete for
//! borrowed quota).

use std::{collections::BTreeMap, time::Duration};

use serde_json::json;

use crate::support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

/// `(reason, message)` of the Events about a Workload.
fn workload_events(
    c: &batchgate_localcluster::LocalCluster,
    ns: &str,
    wl: &str,
) -> Vec<(String, String)> {
    get(
        c,
        &[
            "events",
            "-n",
            ns,
            "--field-selector",
            &format!("involvedObject.name={wl},involvedObject.kind=Workload"),
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

fn weighted_share(c: &batchgate_localcluster::LocalCluster, kind: &str, name: &str) -> Option<i64> {
    get(c, &[kind, name])?["status"]["fairSharing"]["weightedShare"].as_i64()
}

/// A two-level tree: the Cohort `fair-org` holds all the quota (3 cpu),
/// the Cohort `fair-lab` under it (weight 2) holds tenants a and b, tenant
/// c sits directly in the org; every tenant's own quota is 0, so every
/// admission borrows and the shares decide. Fair shares: the lab 2 cpu
/// against c's 1 (weight 2 to 1), a and b 1 each inside the lab.
///
/// Tenant a bursts to all 3 cpu; b and c come back and take their shares
/// by fair-sharing preemption (`InCohortFairSharing`, Kueue's message with
/// the tree paths); every tenant ends within one Workload (0.5 cpu) of its
/// fair share, and the weighted shares in the ClusterQueue and Cohort
/// statuses say so.
#[test]
fn a_burst_is_shared_back_fairly_across_a_two_level_tree() {
    let e = super::env();
    let c = e.cluster;
    let tenants = ["a", "b", "c"];
    let ns: BTreeMap<&str, String> = tenants
        .iter()
        .map(|t| (*t, namespace(c, &format!("e2e-fair-{t}"))))
        .collect();
    c.wait_established(&["crd/cohorts.kueue.x-k8s.io"], Duration::from_secs(60))
        .unwrap();
    apply(c, &flavor("fair-spot", json!({"instance-type": "spot"})));
    let quota = json!([{"coveredResources": ["cpu"], "flavors": [
        {"name": "fair-spot", "resources": [{"name": "cpu", "nominalQuota": "3"}]}]}]);
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                "metadata": {"name": "fair-org"}, "spec": {"resourceGroups": quota}})
        .to_string(),
    );
    apply(
        c,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                "metadata": {"name": "fair-lab"},
                "spec": {"parentName": "fair-org", "fairSharing": {"weight": "2"}}})
        .to_string(),
    );
    for (t, cohort) in [("a", "fair-lab"), ("b", "fair-lab"), ("c", "fair-org")] {
        apply(
            c,
            &cluster_queue(
                &format!("fair-{t}"),
                &[("fair-spot", "0", None)],
                json!({"cohortName": cohort,
                       "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}}),
            ),
        );
        apply(c, &local_queue(&ns[t], "lq", &format!("fair-{t}")));
    }

    // The burst: six half-cpu Jobs of tenant a take the org's 3 cpu.
    for i in 0..6 {
        create(
            c,
            &job(
                &format!("burst-{i}"),
                &ns["a"],
                "lq",
                "500m",
                "600s",
                json!({}),
            ),
        );
    }
    let (total, borrowed) = wait_for(Duration::from_secs(60), "tenant a's burst to run", || {
        super::cq_usage(c, "fair-a").filter(|u| u.0 == 3.0)
    });
    assert_eq!((total, borrowed), (3.0, 3.0));
    // All of the org's 3 cpu over what it could lend a: 1000.
    let share = wait_for(Duration::from_secs(30), "a's weighted share", || {
        weighted_share(c, "clusterqueue", "fair-a").filter(|s| *s == 1000)
    });
    assert_eq!(share, 1000);

    // b and c come back, two half-cpu Jobs each.
    for t in ["b", "c"] {
        for i in 0..2 {
            create(
                c,
                &job(
                    &format!("back-{i}"),
                    &ns[t],
                    "lq",
                    "500m",
                    "600s",
                    json!({}),
                ),
            );
        }
    }
    // The statuses settle (each is written at most once a second, so a's
    // may lag b's and c's) on the fair shares: 1 cpu each.
    let usage = wait_for(
        Duration::from_secs(180),
        "every tenant on its fair share",
        || {
            let u: Vec<f64> = ["fair-a", "fair-b", "fair-c"]
                .iter()
                .map(|q| super::cq_usage(c, q).map(|u| u.0))
                .collect::<Option<_>>()?;
            (u == [1.0, 1.0, 1.0]).then_some(u)
        },
    );
    for (q, used) in ["fair-a", "fair-b", "fair-c"].iter().zip(&usage) {
        assert!(
            (used - 1.0).abs() <= 0.5,
            "{q} uses {used} cpu, its fair share is 1"
        );
    }

    // a's preempted Workloads: InCohortFairSharing (b and c borrow, so
    // the shares decide), with Kueue's message; their Jobs are stopped
    // with the same words.
    let mut by_preemptor: BTreeMap<String, usize> = BTreeMap::new();
    for (name, suspended, _) in jobs(c, &ns["a"]) {
        let wl = workload_of(c, &ns["a"], &name).unwrap();
        if !is_true(&wl, "Preempted") {
            assert!(!suspended, "{name} keeps running");
            continue;
        }
        assert!(suspended, "{name} is stopped");
        let p = condition(&wl, "Preempted").unwrap();
        assert_eq!(p["reason"], "InCohortFairSharing", "{p}");
        let m = p["message"].as_str().unwrap().to_string();
        let path = m
            .strip_prefix("Preempted to accommodate a workload (UID: ")
            .and_then(|m| m.split_once(") due to Fair Sharing within the cohort; preemptor path: "))
            .map(|(_, p)| p.to_string())
            .unwrap_or_else(|| panic!("{m}"));
        let (preemptor, preemptee) = path.split_once("; preemptee path: ").unwrap();
        assert_eq!(preemptee, "/fair-org/fair-lab/fair-a");
        *by_preemptor.entry(preemptor.to_string()).or_default() += 1;
        assert_eq!(condition(&wl, "Evicted").unwrap()["reason"], "Preempted");
        let wl_name = wl["metadata"]["name"].as_str().unwrap().to_string();
        let event = wait_for(
            Duration::from_secs(30),
            "the Workload's Preempted event",
            || {
                workload_events(c, &ns["a"], &wl_name)
                    .into_iter()
                    .find(|e| e.0 == "Preempted")
            },
        );
        assert!(event.1.starts_with(&m), "{} / {m}", event.1);
        let stopped = wait_for(Duration::from_secs(30), "the Job's Stopped event", || {
            super::job_events(c, &ns["a"], &name)
                .into_iter()
                .find(|e| e.0 == "Stopped")
        });
        assert_eq!(stopped.1, m);
    }
    // Four of a's six were preempted, by b inside the lab or by c across
    // the org: which one depends on who wins the tournament for the quota
    // each preemption frees (c's head may take what b's freed, as in Kueue
    // without PrioritizePreemptorWorkloads).
    assert_eq!(by_preemptor.values().sum::<usize>(), 4, "{by_preemptor:?}");
    for preemptor in by_preemptor.keys() {
        assert!(
            ["/fair-org/fair-c", "/fair-org/fair-lab/fair-b"].contains(&preemptor.as_str()),
            "{preemptor}"
        );
    }

    // Each tenant borrows 1 of the 3 cpu: ceil(1000 * 1/3) = 334; the lab
    // borrows 2 with weight 2: also 334; the root has no parent: 0.
    for q in ["fair-a", "fair-b", "fair-c"] {
        let s = wait_for(
            Duration::from_secs(30),
            "the weighted share written",
            || weighted_share(c, "clusterqueue", q).filter(|s| *s == 334),
        );
        assert_eq!(s, 334, "{q}");
    }
    let lab = wait_for(Duration::from_secs(30), "the lab's weighted share", || {
        weighted_share(c, "cohort", "fair-lab").filter(|s| *s == 334)
    });
    assert_eq!(lab, 334);
    assert_eq!(weighted_share(c, "cohort", "fair-org"), Some(0));
    for t in tenants {
        let (ok, out, err) = kubectl(c, &["delete", "namespace", &ns[t], "--wait=false"], None);
        assert!(ok, "{out}{err}");
    }
}
