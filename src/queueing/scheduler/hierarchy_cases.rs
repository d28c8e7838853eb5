//! Hierarchical cohorts, case by case, as Kueue v0.19.2 decides them. Each
//! case is written from an upstream test (named in `upstream`): the same
//! tree, the same workloads, and the victims and admissions upstream
//! expects; one scheduling cycle here stands for upstream's direct call.
//!
//! Trees are drawn as upstream draws them: Cohorts and ClusterQueues with
//! their nominal CPU in parentheses.

use std::collections::BTreeMap;

use super::preemption_cases::{outcome, workload, NS, W};
use super::*;
use crate::queueing::cluster_queue::{
    FlavorQuotas, Preemption, PreemptionPolicy, ResourceGroup, ResourceQuota, StopPolicy,
};

use PreemptedReason::{InClusterQueue as InCq, InCohortReclamation as Reclaim};
use PreemptionPolicy::{Any, LowerPriority, Never};

/// A ClusterQueue or Cohort of the tree: name, parent, nominal CPU and
/// limits (whole CPUs).
#[derive(Clone, Copy)]
struct Node {
    name: &'static str,
    parent: Option<&'static str>,
    nominal: i64,
    borrowing_limit: Option<i64>,
    lending_limit: Option<i64>,
}

fn node(name: &'static str, parent: Option<&'static str>, nominal: i64) -> Node {
    Node {
        name,
        parent,
        nominal,
        borrowing_limit: None,
        lending_limit: None,
    }
}

impl Node {
    fn lend(mut self, l: i64) -> Self {
        self.lending_limit = Some(l);
        self
    }
    fn borrow(mut self, b: i64) -> Self {
        self.borrowing_limit = Some(b);
        self
    }
}

fn groups(n: &Node) -> Vec<ResourceGroup> {
    vec![ResourceGroup {
        covered_resources: vec!["cpu".into()],
        flavors: vec![FlavorQuotas {
            name: "default".into(),
            resources: vec![ResourceQuota {
                name: "cpu".into(),
                nominal: n.nominal * 1000,
                borrowing_limit: n.borrowing_limit.map(|b| b * 1000),
                lending_limit: n.lending_limit.map(|l| l * 1000),
            }],
        }],
    }]
}

fn cohort(n: &Node) -> Cohort {
    Cohort {
        name: n.name.into(),
        parent: n.parent.map(Into::into),
        resource_groups: groups(n),
    }
}

fn cluster_queue(n: &Node, within: PreemptionPolicy, reclaim: PreemptionPolicy) -> ClusterQueue {
    ClusterQueue {
        name: n.name.into(),
        cohort: n.parent.map(Into::into),
        queueing_strategy: Default::default(),
        namespace_selector: Some(Default::default()),
        resource_groups: groups(n),
        preemption: Preemption {
            within_cluster_queue: within,
            reclaim_within_cohort: reclaim,
            ..Default::default()
        },
        flavor_fungibility: Default::default(),
        stop_policy: StopPolicy::None,
        admission_fair_sharing: false,
        terminating: false,
    }
}

struct Case {
    upstream: &'static str,
    cohorts: Vec<Node>,
    queues: Vec<Node>,
    /// Preemption policies of every queue.
    within: PreemptionPolicy,
    reclaim: PreemptionPolicy,
    running: Vec<W>,
    incoming: Vec<W>,
    evicted: Vec<(&'static str, PreemptedReason)>,
    admitted: Vec<&'static str>,
}

fn setup(
    cohorts: &[Node],
    queues: &[Node],
    within: PreemptionPolicy,
    reclaim: PreemptionPolicy,
    running: &[W],
) -> Engine {
    let mut e = Engine::new();
    e.upsert_flavor(crate::queueing::ResourceFlavor {
        name: "default".into(),
        node_labels: BTreeMap::new(),
        node_taints: vec![],
        tolerations: vec![],
        topology_name: None,
        topology_levels: None,
    });
    for c in cohorts {
        e.upsert_cohort(cohort(c));
    }
    for q in queues {
        e.upsert_local_queue(LocalQueue {
            namespace: NS.into(),
            name: format!("lq-{}", q.name),
            cluster_queue: q.name.into(),
            stop_policy: StopPolicy::None,
            fair_sharing: Default::default(),
        });
        e.upsert_cluster_queue(cluster_queue(q, within, reclaim));
    }
    for (i, w) in running.iter().enumerate() {
        e.upsert_workload(workload(w, i as i64 + 1, true));
    }
    e
}

fn cases() -> Vec<Case> {
    let (r, c) = (Some("r"), Some("c"));
    vec![
        //            R
        //      /      |
        //   C(2) q_borrowing(0)
        //  /
        // q
        Case {
            upstream: "TestHierarchicalPreemptions/preempt with hierarchical advantage",
            cohorts: vec![node("r", None, 0), node("c", r, 2)],
            queues: vec![node("q", c, 0), node("q_borrowing", r, 0)],
            within: LowerPriority,
            reclaim: Any,
            running: vec![("admitted2", "q_borrowing", 0, 2)],
            incoming: vec![("in", "q", 0, 2)],
            evicted: vec![("admitted2", Reclaim)],
            admitted: vec![],
        },
        //             R
        //      /      |         \
        //   C(2) q_borrowing(0)  q_nominal(2)
        //  /
        // q
        Case {
            upstream: "TestHierarchicalPreemptions/avoid queues within nominal quota",
            cohorts: vec![node("r", None, 0), node("c", r, 2)],
            queues: vec![
                node("q_nominal", r, 2),
                node("q", c, 0),
                node("q_borrowing", r, 0),
            ],
            within: LowerPriority,
            reclaim: Any,
            running: vec![
                ("admitted1", "q_nominal", -10, 2),
                ("admitted2", "q_borrowing", 0, 2),
            ],
            incoming: vec![("in", "q", 0, 2)],
            evicted: vec![("admitted2", Reclaim)],
            admitted: vec![],
        },
        Case {
            upstream: "TestHierarchicalPreemptions/preempt multiple with hierarchical advantage",
            cohorts: vec![node("r", None, 0), node("c", r, 2)],
            queues: vec![node("q", c, 0), node("q_borrowing", r, 0)],
            within: LowerPriority,
            reclaim: Any,
            running: vec![
                ("admitted1", "q_borrowing", 1, 1),
                ("admitted2", "q_borrowing", 2, 1),
            ],
            incoming: vec![("in", "q", 0, 2)],
            evicted: vec![("admitted1", Reclaim), ("admitted2", Reclaim)],
            admitted: vec![],
        },
        // The borrower of higher priority goes, not the preemptor's own
        // lower-priority workload: the preemptor has the hierarchical
        // advantage over it.
        Case {
            upstream: "TestHierarchicalPreemptions/prefer to preempt hierarchical candidate",
            cohorts: vec![node("r", None, 0), node("c", r, 2)],
            queues: vec![node("q", c, 0), node("q_borrowing", r, 0)],
            within: LowerPriority,
            reclaim: Any,
            running: vec![
                ("admitted_borrowing", "q_borrowing", 1, 1),
                ("admitted_same_queue", "q", -2, 1),
            ],
            incoming: vec![("in", "q", 0, 1)],
            evicted: vec![("admitted_borrowing", Reclaim)],
            admitted: vec![],
        },
        //           R(0)
        //      /      |
        //   C(2)   q_borrowing(0)
        //  /    \
        // q(4)  q_same_cohort(0)
        Case {
            upstream: "TestHierarchicalPreemptions/incoming workload fits in CQ nominal quota",
            cohorts: vec![node("r", None, 0), node("c", r, 2)],
            queues: vec![
                node("q", c, 4),
                node("q_borrowing", r, 0),
                node("q_same_cohort", c, 0),
            ],
            within: LowerPriority,
            reclaim: Any,
            running: vec![
                ("admitted_borrowing", "q_borrowing", 10, 3),
                ("admitted_same_cohort", "q_same_cohort", 10, 3),
            ],
            incoming: vec![("in", "q", 0, 4)],
            evicted: vec![
                ("admitted_borrowing", Reclaim),
                ("admitted_same_cohort", Reclaim),
            ],
            admitted: vec![],
        },
        //            R(0)
        //      /      |          \
        //   C(3) q_borrowing(0)  q_nominal(2)
        //  /
        // q(0)
        Case {
            upstream: "TestHierarchicalPreemptions/reclaim nominal quota from lowest priority workload, excluding non-borrowing",
            cohorts: vec![node("r", None, 0), node("c", r, 3)],
            queues: vec![
                node("q", c, 0),
                node("q_borrowing", r, 0),
                node("q_nominal", r, 2),
            ],
            within: LowerPriority,
            reclaim: Any,
            running: vec![
                ("admitted_borrowing_prio_8", "q_borrowing", 8, 1),
                ("admitted_borrowing_prio_9", "q_borrowing", 9, 1),
                ("admitted_borrowing_prio_10", "q_borrowing", 9, 1),
                ("admitted_nominal", "q_nominal", -2, 2),
            ],
            incoming: vec![("in", "q", 0, 1)],
            evicted: vec![("admitted_borrowing_prio_8", Reclaim)],
            admitted: vec![],
        },
        //            R(0)
        //        /         \
        //     C(2)        C_other(2)
        //    /    \          |
        //  q(0) q_same(0)  q_other(0)
        Case {
            upstream: "TestHierarchicalPreemptions/infeasible preemption all available workloads in pruned subtrees",
            cohorts: vec![
                node("r", None, 0),
                node("c", r, 2),
                node("c_other", r, 2),
            ],
            queues: vec![
                node("q_other", Some("c_other"), 0),
                node("q", c, 0),
                node("q_same_cohort", c, 0),
            ],
            within: LowerPriority,
            reclaim: Any,
            running: vec![
                ("admitted_other_1", "q_other", -10, 1),
                ("admitted_other_2", "q_other", -10, 1),
                ("admitted_same_cohort", "q_same_cohort", 0, 2),
            ],
            incoming: vec![("in", "q", 0, 2)],
            evicted: vec![],
            admitted: vec![],
        },
        //           R(0)
        //      /      |
        //   C(2)   q_borrowing(0)
        //  /
        // q(3, lending limit 2)
        Case {
            upstream: "TestHierarchicalPreemptions/respect lending limits",
            cohorts: vec![node("r", None, 0), node("c", r, 2)],
            queues: vec![node("q", c, 3).lend(2), node("q_borrowing", r, 0)],
            within: LowerPriority,
            reclaim: Any,
            running: vec![("admitted_borrowing", "q_borrowing", 0, 4)],
            incoming: vec![("in", "q", 0, 5)],
            evicted: vec![("admitted_borrowing", Reclaim)],
            admitted: vec![],
        },
        //                                r
        //                             /      \
        //                          c11        c12
        //                       /   |   \       \
        //                    c21   c22    c23    q1
        //                  /  |     |     |
        //                c31  c32   q3    q2
        //              /      |
        //            q5       q4
        // Cohorts 4 CPU each, queues none.
        Case {
            upstream: "TestHierarchicalPreemptions/reclaim in complex hierarchy",
            cohorts: vec![
                node("r", None, 0),
                node("c11", r, 4),
                node("c12", r, 4),
                node("c21", Some("c11"), 4),
                node("c22", Some("c11"), 4),
                node("c23", Some("c11"), 4),
                node("c31", Some("c21"), 4),
                node("c32", Some("c21"), 4),
            ],
            queues: vec![
                node("q1", Some("c12"), 0),
                node("q2", Some("c23"), 0),
                node("q3", Some("c22"), 0),
                node("q4", Some("c32"), 0),
                node("q5", Some("c31"), 0),
            ],
            within: LowerPriority,
            reclaim: Any,
            running: vec![
                ("admitted_borrowing_1", "q1", -6, 4),
                ("admitted_borrowing_2", "q1", -5, 4),
                ("admitted_borrowing_3", "q2", -9, 4),
                ("admitted_borrowing_4", "q2", -10, 4),
                ("admitted_borrowing_5", "q3", -4, 4),
                ("admitted_borrowing_6", "q3", -3, 3),
                ("admitted_borrowing_7", "q4", 4, 2),
                ("admitted_borrowing_8", "q4", 2, 3),
            ],
            incoming: vec![("in", "q5", -2, 7)],
            evicted: vec![
                ("admitted_borrowing_1", Reclaim),
                ("admitted_borrowing_4", Reclaim),
            ],
            admitted: vec![],
        },
        //        ROOT
        //         |
        //       CHILD
        //      /     \
        // lender(10, lendingLimit 3)   borrower(5, borrowingLimit 10)
        // The borrower uses its 5; 4 more need 4 of the 3 lendable.
        Case {
            upstream: "TestSchedule/hierarchical cohort respects lending limit when borrowing",
            cohorts: vec![node("root", None, 0), node("child", Some("root"), 0)],
            queues: vec![
                node("cq-lender", Some("child"), 10).lend(3),
                node("cq-borrower", Some("child"), 5).borrow(10),
            ],
            within: Never,
            reclaim: Never,
            running: vec![("wl-existing", "cq-borrower", 0, 5)],
            incoming: vec![("wl-pending", "cq-borrower", 0, 4)],
            evicted: vec![],
            admitted: vec![],
        },
        // The same tree, 3 more: within what the lender lends.
        Case {
            upstream: "TestSchedule/hierarchical cohort respects lending limit when borrowing (3 CPU variant)",
            cohorts: vec![node("root", None, 0), node("child", Some("root"), 0)],
            queues: vec![
                node("cq-lender", Some("child"), 10).lend(3),
                node("cq-borrower", Some("child"), 5).borrow(10),
            ],
            within: Never,
            reclaim: Never,
            running: vec![("wl-existing", "cq-borrower", 0, 5)],
            incoming: vec![("wl-pending", "cq-borrower", 0, 3)],
            evicted: vec![],
            admitted: vec!["wl-pending"],
        },
        //             ROOT
        //          /        \
        //    GUARANTEED(4)   best-effort(0)
        //       |
        //   guaranteed(0)
        // Both need 4 from a Cohort; the guaranteed one borrows from a
        // lower subtree and goes first although its priority is lower.
        Case {
            upstream: "TestSchedule/in a hierarchical cohort, workload borrowing less is scheduled first",
            cohorts: vec![
                node("root", None, 0),
                node("guaranteed", Some("root"), 4),
            ],
            queues: vec![
                node("guaranteed", Some("guaranteed"), 0),
                node("best-effort", Some("root"), 0),
            ],
            within: Never,
            reclaim: Never,
            running: vec![],
            incoming: vec![
                ("guaranteed", "guaranteed", 0, 4),
                ("best-effort", "best-effort", 3, 4),
            ],
            evicted: vec![],
            admitted: vec!["guaranteed"],
        },
        // Cohort quota of its own: a queue with none runs on its Cohort's.
        Case {
            upstream: "TestSnapshot/cohort provides resources",
            cohorts: vec![node("cohort", None, 10)],
            queues: vec![node("cq", Some("cohort"), 0)],
            within: Never,
            reclaim: Never,
            running: vec![],
            incoming: vec![("a", "cq", 0, 6), ("b", "cq", 0, 4)],
            evicted: vec![],
            admitted: vec!["a"],
        },
        // Within the queue, preemption works as in a flat tree when the
        // request is within the queue's nominal quota.
        Case {
            upstream: "TestHierarchicalPreemptions/preempt in cohort and own CQ (own queue part, nominal quota in the queue)",
            cohorts: vec![node("r", None, 0), node("c", r, 0)],
            queues: vec![node("q", c, 3), node("q_same_cohort", c, 0)],
            within: LowerPriority,
            reclaim: Never,
            running: vec![("admitted_own_queue", "q", -1, 3)],
            incoming: vec![("in", "q", 1, 2)],
            evicted: vec![("admitted_own_queue", InCq)],
            admitted: vec![],
        },
        // Without nominal quota, and without borrowWithinCohort, a queue
        // that must borrow from the root cannot preempt at all
        // (`fitsResourceQuota`: nominal < request, no reclaimable subtree).
        Case {
            upstream: "TestHierarchicalPreemptions/preempt in cohort and own CQ (without borrowWithinCohort)",
            cohorts: vec![node("r", None, 0), node("c", r, 3)],
            queues: vec![node("q", c, 0), node("q_same_cohort", c, 0)],
            within: LowerPriority,
            reclaim: Never,
            running: vec![("admitted_own_queue", "q", -1, 3)],
            incoming: vec![("in", "q", 1, 2)],
            evicted: vec![],
            admitted: vec![],
        },
    ]
}

#[test]
fn one_cycle_in_a_tree_decides_what_kueue_decides() {
    for case in cases() {
        let mut e = setup(
            &case.cohorts,
            &case.queues,
            case.within,
            case.reclaim,
            &case.running,
        );
        for (i, w) in case.incoming.iter().enumerate() {
            e.upsert_workload(workload(w, 100 + i as i64, false));
        }
        let (evicted, admitted) = outcome(&e.schedule(1_000));
        let want: Vec<(String, PreemptedReason)> = case
            .evicted
            .iter()
            .map(|(n, r)| (n.to_string(), *r))
            .collect();
        assert_eq!(evicted, want, "{}: victims", case.upstream);
        assert_eq!(admitted, case.admitted, "{}: admitted", case.upstream);
    }
}

#[test]
fn preemption_messages_name_the_paths_from_the_root() {
    // TestHierarchicalPreemptions/preempt with hierarchical advantage: the
    // message upstream writes on the victim.
    let (r, c) = (Some("r"), Some("c"));
    let mut e = setup(
        &[node("r", None, 0), node("c", r, 2)],
        &[node("q", c, 0), node("q_borrowing", r, 0)],
        LowerPriority,
        Any,
        &[("admitted2", "q_borrowing", 0, 2)],
    );
    let mut wl = workload(&("in", "q", 0, 2), 100, false);
    wl.uid = "wl-in".into();
    wl.job_uid = Some("job-in".into());
    e.upsert_workload(wl);
    let cycle = e.schedule(1_000);
    let message = cycle.decisions.iter().find_map(|d| match d {
        Decision::Evict { message, .. } => Some(message.clone()),
        _ => None,
    });
    assert_eq!(
        message.as_deref(),
        Some("Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing")
    );
}

#[test]
fn borrowing_less_orders_before_priority_with_kueues_message() {
    // TestSchedule/in a hierarchical cohort, workload borrowing less is
    // scheduled first: the other one is told why it waits.
    let mut e = setup(
        &[node("root", None, 0), node("guaranteed", Some("root"), 4)],
        &[
            node("guaranteed", Some("guaranteed"), 0),
            node("best-effort", Some("root"), 0),
        ],
        Never,
        Never,
        &[],
    );
    e.upsert_workload(workload(&("guaranteed", "guaranteed", 0, 4), 1, false));
    e.upsert_workload(workload(&("best-effort", "best-effort", 3, 4), 2, false));
    let cycle = e.schedule(1_000);
    let pending = cycle.decisions.iter().find_map(|d| match d {
        Decision::Pending {
            workload,
            reason,
            message,
        } if workload == "ns/best-effort" => Some((*reason, message.clone())),
        _ => None,
    });
    assert_eq!(
        pending,
        Some((
            PendingReason::WaitingForQuota,
            "Workload no longer fits after processing another workload".to_string()
        ))
    );
}

#[test]
fn a_cycle_of_cohorts_stops_admission_until_it_is_broken() {
    // TestSnapshot/cohorts with cycles and their cqs excluded from
    // snapshot, and the scheduler's "ClusterQueue %s is inactive".
    let mut e = setup(
        &[
            node("a", Some("b"), 0),
            node("b", Some("a"), 0),
            node("nocycle", None, 4),
        ],
        &[
            node("cq", Some("a"), 4),
            node("cq-nocycle", Some("nocycle"), 0),
        ],
        Never,
        Never,
        &[],
    );
    e.upsert_workload(workload(&("stuck", "cq", 0, 1), 1, false));
    e.upsert_workload(workload(&("free", "cq-nocycle", 0, 1), 2, false));
    let cycle = e.schedule(1_000);
    let (_, admitted) = outcome(&cycle);
    assert_eq!(admitted, vec!["free"]);
    let stuck = cycle.decisions.iter().find_map(|d| match d {
        Decision::Pending {
            workload,
            reason,
            message,
        } if workload == "ns/stuck" => Some((*reason, message.clone())),
        _ => None,
    });
    assert_eq!(
        stuck,
        Some((
            PendingReason::Suspended,
            "ClusterQueue cq is inactive".to_string()
        ))
    );
    // Kueue's Active condition does not change for a cycle.
    let cq = e.cluster_queue_status("cq").map(|s| s.active.reason);
    assert_eq!(cq, Some("Ready"));
    // Breaking the cycle lets it in.
    e.upsert_cohort(cohort(&node("b", None, 0)));
    let (_, admitted) = outcome(&e.schedule(2_000));
    assert_eq!(admitted, vec!["stuck"]);
}

#[test]
fn a_parent_that_does_not_exist_is_an_implicit_root() {
    // cohort_types.go: "References a non-existent Cohort. We use default
    // Cohort (no borrowing/lending limits)." Two Cohorts under the missing
    // "ghost" share their quota.
    let mut e = setup(
        &[
            node("left", Some("ghost"), 2),
            node("right", Some("ghost"), 0),
        ],
        &[node("a", Some("left"), 0), node("b", Some("right"), 0)],
        Never,
        Never,
        &[],
    );
    e.upsert_workload(workload(&("wl", "b", 0, 2), 1, false));
    let (_, admitted) = outcome(&e.schedule(1_000));
    assert_eq!(admitted, vec!["wl"]);
    // Deleting the Cohort that held the quota takes it away.
    e.delete_cohort("left");
    e.upsert_workload(workload(&("wl2", "a", 0, 1), 2, false));
    let (_, admitted) = outcome(&e.schedule(2_000));
    assert!(admitted.is_empty());
}
