//! Flavor fungibility (`whenCanBorrow`, `whenCanPreempt`, `preference`)
//! and preemption while borrowing across flavors, one admission cycle per
//! case, as Kueue v0.19.2 decides it. Each case names the upstream test it
//! ports (`flavorassigner_test.go`, `scheduler_test.go`) or, for our own,
//! the rule of Kueue's API documentation it checks.

use std::collections::BTreeMap;

use super::*;
use crate::queueing::{
    cluster_queue::{
        BorrowWithinCohort, FlavorFungibility, FlavorPreference, FlavorQuotas, FungibilityPolicy,
        Preemption, PreemptionPolicy, ResourceGroup, ResourceQuota, StopPolicy,
    },
    workload::{PodSet, PodSetAssignment},
};

use FungibilityPolicy::{MayStopSearch, TryNextFlavor};
use PreemptionPolicy::{Any, LowerPriority};

const NS: &str = "ns";

/// (flavor, nominal cpu, borrowing limit)
type Quota = (&'static str, i64, Option<i64>);

fn groups(quotas: &[Quota]) -> Vec<ResourceGroup> {
    vec![ResourceGroup {
        covered_resources: vec!["cpu".into()],
        flavors: quotas
            .iter()
            .map(|(f, nominal, bl)| FlavorQuotas {
                name: f.to_string(),
                resources: vec![ResourceQuota {
                    name: "cpu".into(),
                    nominal: nominal * 1000,
                    borrowing_limit: bl.map(|b| b * 1000),
                    lending_limit: None,
                }],
            })
            .collect(),
    }]
}

fn queue(name: &str, parent: &str, quotas: &[Quota]) -> ClusterQueue {
    ClusterQueue {
        name: name.into(),
        cohort: Some(parent.into()),
        queueing_strategy: Default::default(),
        namespace_selector: Some(Default::default()),
        resource_groups: groups(quotas),
        preemption: Preemption::default(),
        flavor_fungibility: Default::default(),
        stop_policy: StopPolicy::None,
        admission_fair_sharing: false,
        terminating: false,
    }
}

fn fungibility(
    when_can_borrow: FungibilityPolicy,
    when_can_preempt: FungibilityPolicy,
    preference: FlavorPreference,
) -> FlavorFungibility {
    FlavorFungibility {
        when_can_borrow,
        when_can_preempt,
        preference,
    }
}

/// `name` in `cq` asking for `cpu` cores; holding them in `flavor` when
/// given.
fn workload(name: &str, cq: &str, priority: i32, cpu: i64, flavor: Option<&str>) -> Workload {
    Workload {
        unhealthy_nodes: Vec::new(),
        single_pod_owned: false,
        namespace: NS.into(),
        name: name.into(),
        uid: format!("uid-{name}").into(),
        job_uid: None,
        copy_chain: None,
        queue_name: format!("lq-{cq}").into(),
        priority,
        created: if flavor.is_some() { 1 } else { 100 },
        active: true,
        finished: false,
        readiness: Default::default(),
        replaces: None,
        pod_sets: vec![PodSet {
            name: "main".into(),
            count: 1,
            min_count: None,
            requests: [("cpu".to_string(), cpu * 1000)].into(),
            node_selector: BTreeMap::new(),
            node_affinity: Default::default(),
            tolerations: vec![],
            topology: None,
        }],
        admission: flavor.map(|f| Admission {
            cluster_queue: cq.into(),
            pod_set_assignments: vec![PodSetAssignment {
                name: "main".into(),
                flavors: [("cpu".to_string(), f.to_string())].into(),
                resource_usage: [("cpu".to_string(), cpu * 1000)].into(),
                count: 1,
                topology: None,
            }],
        }),
    }
}

fn engine(flavors: &[&str], cohorts: Vec<Cohort>, queues: Vec<ClusterQueue>) -> Engine {
    let mut e = Engine::new();
    for f in flavors {
        e.upsert_flavor(crate::queueing::ResourceFlavor {
            name: f.to_string(),
            node_labels: BTreeMap::new(),
            node_taints: vec![],
            tolerations: vec![],
            topology_name: None,
            topology_levels: None,
        });
    }
    for c in cohorts {
        e.upsert_cohort(c);
    }
    for q in queues {
        e.upsert_local_queue(LocalQueue {
            namespace: NS.into(),
            name: format!("lq-{}", q.name),
            cluster_queue: q.name.clone(),
            stop_policy: StopPolicy::None,
            fair_sharing: Default::default(),
        });
        e.upsert_cluster_queue(q);
    }
    e
}

/// The flavor `name` is admitted with, and who is preempted for it.
fn decide(e: &mut Engine, name: &str) -> (Option<String>, Vec<String>) {
    let c = e.schedule(1_000);
    let mut flavor = None;
    let mut preempted = Vec::new();
    for d in &c.decisions {
        match d {
            Decision::Admit {
                workload,
                admission,
            } if workload == &format!("{NS}/{name}") => {
                flavor = admission.pod_set_assignments[0].flavors.get("cpu").cloned();
            }
            Decision::Evict { workload, .. } => preempted.push(workload.clone()),
            _ => {}
        }
    }
    preempted.sort();
    (flavor, preempted)
}

#[test]
fn a_flavor_without_candidates_loses_to_a_deeper_borrowing_one_that_fits() {
    // TestHierarchical/Select deeper-borrowing flavor that fits when
    // shallower-borrowing flavor has no preemption candidates: three nested
    // Cohorts, each with 4 cpu of one flavor; flavor one is used up by a
    // workload of equal priority (no candidate), two is lent by Cohort two.
    let cohort = |name: &str, parent: Option<&str>, flavor: &'static str| Cohort {
        name: name.into(),
        parent: parent.map(Into::into),
        resource_groups: groups(&[(flavor, 4, None)]),
    };
    for preference in [
        FlavorPreference::PreemptionOverBorrowing,
        FlavorPreference::BorrowingOverPreemption,
    ] {
        let mut test = queue(
            "test-clusterqueue",
            "one",
            &[("one", 4, Some(0)), ("two", 0, None), ("three", 0, None)],
        );
        test.preemption.within_cluster_queue = LowerPriority;
        test.preemption.reclaim_within_cohort = LowerPriority;
        test.flavor_fungibility = fungibility(TryNextFlavor, TryNextFlavor, preference);
        let other = queue(
            "other-clusterqueue",
            "two",
            &[("one", 0, None), ("two", 0, None), ("three", 0, None)],
        );
        let mut e = engine(
            &["one", "two", "three"],
            vec![
                cohort("three", None, "three"),
                cohort("two", Some("three"), "two"),
                cohort("one", Some("two"), "one"),
            ],
            vec![test, other],
        );
        e.upsert_workload(workload("held", "test-clusterqueue", 0, 4, Some("one")));
        e.upsert_workload(workload("in", "test-clusterqueue", 0, 4, None));
        assert_eq!(
            decide(&mut e, "in"),
            (Some("two".to_string()), vec![]),
            "{preference:?}"
        );
    }
}

/// Flavor `first` is the queue's own and full of a low-priority workload;
/// `second` has room only by borrowing from the other queue.
fn own_full_or_borrow(preference: FlavorPreference) -> Engine {
    let mut a = queue("a", "c", &[("first", 2, None), ("second", 0, None)]);
    a.preemption.within_cluster_queue = LowerPriority;
    a.flavor_fungibility = fungibility(TryNextFlavor, TryNextFlavor, preference);
    let b = queue("b", "c", &[("first", 0, None), ("second", 4, None)]);
    let mut e = engine(&["first", "second"], vec![], vec![a, b]);
    e.upsert_workload(workload("low", "a", 0, 2, Some("first")));
    e.upsert_workload(workload("in", "a", 10, 2, None));
    e
}

#[test]
fn preemption_over_borrowing_preempts_in_the_own_quota() {
    // ClusterQueue API, flavorFungibility.preference: "PreemptionOverBorrowing:
    // prefer to use preemption rather than borrowing" once both policies
    // are TryNextFlavor: the flavor needing no borrowing wins, by
    // preempting the low-priority workload holding it.
    let mut e = own_full_or_borrow(FlavorPreference::PreemptionOverBorrowing);
    assert_eq!(decide(&mut e, "in"), (None, vec![format!("{NS}/low")]));
}

#[test]
fn borrowing_over_preemption_borrows_instead() {
    // The default (BorrowingOverPreemption): the flavor that fits by
    // borrowing beats the one that needs preemption.
    let mut e = own_full_or_borrow(FlavorPreference::BorrowingOverPreemption);
    assert_eq!(decide(&mut e, "in"), (Some("second".to_string()), vec![]));
}

#[test]
fn no_candidates_in_the_first_flavor_moves_on_whatever_the_policies() {
    // TestSchedule/don't assign flavor if there are no candidates for
    // preemption: cq1 may preempt while borrowing and stops at the first
    // flavor that can preempt or borrow, but on-demand has no candidate
    // (cq2 is within its quota), so spot is taken by borrowing.
    let mut cq1 = queue(
        "cq1",
        "cohort",
        &[("on-demand", 0, Some(1)), ("spot", 0, Some(1))],
    );
    cq1.preemption = Preemption {
        within_cluster_queue: LowerPriority,
        reclaim_within_cohort: Any,
        borrow_within_cohort: Some(BorrowWithinCohort::default()),
    };
    cq1.flavor_fungibility = fungibility(
        MayStopSearch,
        MayStopSearch,
        FlavorPreference::BorrowingOverPreemption,
    );
    let cq2 = queue(
        "cq2",
        "cohort",
        &[("on-demand", 1, None), ("spot", 1, None)],
    );
    let mut e = engine(&["on-demand", "spot"], vec![], vec![cq1, cq2]);
    e.upsert_workload(workload("admitted", "cq2", 0, 1, Some("on-demand")));
    e.upsert_workload(workload("new", "cq1", 100, 1, None));
    assert_eq!(decide(&mut e, "new"), (Some("spot".to_string()), vec![]));
}
