//! Whom one admission cycle preempts, case by case, as Kueue v0.19.2
//! decides it (classical preemption, default feature gates; the cases
//! follow the situations of upstream's `preemption_test.go` and
//! `scheduler_test.go`, in our own terms).
//!
//! Every case: the ClusterQueues, the workloads already holding quota
//! (reserved in the order listed), the workloads that arrive, one cycle,
//! and the victims and admissions it must produce.

use std::collections::BTreeMap;

use super::*;
use crate::queueing::{
    cluster_queue::{
        BorrowWithinCohort, FlavorQuotas, Preemption, PreemptionPolicy, QueueingStrategy,
        ResourceGroup, ResourceQuota, StopPolicy,
    },
    workload::{PodSet, PodSetAssignment},
};

use PreemptionPolicy::{Any, LowerOrNewerEqualPriority, LowerPriority, Never};

pub(super) const NS: &str = "ns";

struct Queue {
    name: &'static str,
    cohort: Option<&'static str>,
    nominal: i64,
    borrowing_limit: Option<i64>,
    within: PreemptionPolicy,
    reclaim: PreemptionPolicy,
    borrow_within: Option<BorrowWithinCohort>,
}

fn q(name: &'static str, cohort: Option<&'static str>, nominal: i64) -> Queue {
    Queue {
        name,
        cohort,
        nominal,
        borrowing_limit: None,
        within: Never,
        reclaim: Never,
        borrow_within: None,
    }
}

impl Queue {
    fn within(mut self, p: PreemptionPolicy) -> Self {
        self.within = p;
        self
    }
    fn reclaim(mut self, p: PreemptionPolicy) -> Self {
        self.reclaim = p;
        self
    }
    /// `borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold}`.
    fn borrow_within(mut self, max_priority_threshold: Option<i32>) -> Self {
        self.borrow_within = Some(BorrowWithinCohort {
            max_priority_threshold,
        });
        self
    }
    fn limit(mut self, bl: i64) -> Self {
        self.borrowing_limit = Some(bl);
        self
    }
}

/// (name, ClusterQueue, priority, cpu)
pub(super) type W = (&'static str, &'static str, i32, i64);

struct Case {
    name: &'static str,
    queues: Vec<Queue>,
    running: Vec<W>,
    incoming: Vec<W>,
    /// Sorted names, with the reason each is preempted for.
    evicted: Vec<(&'static str, PreemptedReason)>,
    admitted: Vec<&'static str>,
}

fn cluster_queue(q: &Queue) -> ClusterQueue {
    ClusterQueue {
        name: q.name.into(),
        cohort: q.cohort.map(Into::into),
        queueing_strategy: QueueingStrategy::BestEffortFIFO,
        namespace_selector: Some(Default::default()),
        resource_groups: vec![ResourceGroup {
            covered_resources: vec!["cpu".into()],
            flavors: vec![FlavorQuotas {
                name: "default".into(),
                resources: vec![ResourceQuota {
                    name: "cpu".into(),
                    nominal: q.nominal * 1000,
                    borrowing_limit: q.borrowing_limit.map(|b| b * 1000),
                    lending_limit: None,
                }],
            }],
        }],
        preemption: Preemption {
            within_cluster_queue: q.within,
            reclaim_within_cohort: q.reclaim,
            borrow_within_cohort: q.borrow_within,
        },
        flavor_fungibility: Default::default(),
        stop_policy: StopPolicy::None,
        admission_fair_sharing: false,
        terminating: false,
    }
}

pub(super) fn workload(w: &W, created: i64, admitted: bool) -> Workload {
    let (name, cq, priority, cpu) = *w;
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
        created,
        active: true,
        finished: false,
        readiness: Default::default(),
        replaces: None,
        pod_sets: vec![PodSet {
            name: "main".into(),
            count: 1,
            min_count: None,
            requests: [("cpu".to_string(), cpu * 1000)].into_iter().collect(),
            node_selector: BTreeMap::new(),
            node_affinity: Default::default(),
            tolerations: vec![],
            topology: None,
        }],
        admission: admitted.then(|| Admission {
            cluster_queue: cq.into(),
            pod_set_assignments: vec![PodSetAssignment {
                name: "main".into(),
                flavors: [("cpu".to_string(), "default".to_string())].into(),
                resource_usage: [("cpu".to_string(), cpu * 1000)].into(),
                count: 1,
                topology: None,
            }],
        }),
    }
}

/// The engine with `queues`, and `running` holding quota, reserved one
/// after another (the last listed is the most recently admitted).
fn setup(queues: &[Queue], running: &[W]) -> Engine {
    let mut e = Engine::new();
    e.upsert_flavor(crate::queueing::ResourceFlavor {
        name: "default".into(),
        node_labels: BTreeMap::new(),
        node_taints: vec![],
        tolerations: vec![],
        topology_name: None,
        topology_levels: None,
    });
    for q in queues {
        e.upsert_local_queue(LocalQueue {
            namespace: NS.into(),
            name: format!("lq-{}", q.name),
            cluster_queue: q.name.into(),
            stop_policy: StopPolicy::None,
            fair_sharing: Default::default(),
        });
        e.upsert_cluster_queue(cluster_queue(q));
    }
    for (i, w) in running.iter().enumerate() {
        e.upsert_workload(workload(w, i as i64 + 1, true));
    }
    e
}

pub(super) fn outcome(c: &Cycle) -> (Vec<(String, PreemptedReason)>, Vec<String>) {
    let mut evicted = Vec::new();
    let mut admitted = Vec::new();
    for d in &c.decisions {
        match d {
            Decision::Evict {
                workload,
                preempted_reason: Some(r),
                ..
            } => evicted.push((workload.trim_start_matches("ns/").to_string(), *r)),
            Decision::Evict { workload, .. } => panic!("{workload} evicted, not preempted"),
            Decision::Admit { workload, .. } => {
                admitted.push(workload.trim_start_matches("ns/").to_string())
            }
            Decision::Pending { .. } => {}
            Decision::Replace { workload, .. } => panic!("{workload} replaced, no node failed"),
        }
    }
    evicted.sort_by(|a, b| a.0.cmp(&b.0));
    admitted.sort();
    (evicted, admitted)
}

use PreemptedReason::{
    InClusterQueue as InCq, InCohortReclaimWhileBorrowing as WhileBorrowing,
    InCohortReclamation as Reclaim,
};

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "the lowest priority of the queue goes first",
            queues: vec![q("a", None, 6).within(LowerPriority)],
            running: vec![("low", "a", -1, 2), ("mid", "a", 0, 2), ("high", "a", 1, 2)],
            incoming: vec![("in", "a", 1, 2)],
            evicted: vec![("low", InCq)],
            admitted: vec![],
        },
        Case {
            name: "several victims when one is not enough",
            queues: vec![q("a", None, 6).within(LowerPriority)],
            running: vec![
                ("low1", "a", -1, 2),
                ("low2", "a", -1, 2),
                ("high", "a", 1, 2),
            ],
            incoming: vec![("in", "a", 1, 4)],
            evicted: vec![("low1", InCq), ("low2", InCq)],
            admitted: vec![],
        },
        Case {
            name: "equal priority is never a victim under LowerPriority",
            queues: vec![q("a", None, 6).within(LowerPriority)],
            running: vec![("peer1", "a", 0, 3), ("peer2", "a", 0, 3)],
            incoming: vec![("in", "a", 0, 2)],
            evicted: vec![],
            admitted: vec![],
        },
        Case {
            name: "newer equal priority is a victim under LowerOrNewerEqualPriority",
            queues: vec![q("a", None, 6).within(LowerOrNewerEqualPriority)],
            // Created before the incoming one (created at 100): not newer.
            running: vec![("older", "a", 0, 6)],
            incoming: vec![("in", "a", 0, 2)],
            evicted: vec![],
            admitted: vec![],
        },
        Case {
            name: "no preemption when the lower-priority usage cannot make room",
            queues: vec![q("a", None, 6).within(LowerPriority)],
            running: vec![
                ("low", "a", -1, 2),
                ("high1", "a", 1, 2),
                ("high2", "a", 1, 2),
            ],
            incoming: vec![("in", "a", 1, 4)],
            evicted: vec![],
            admitted: vec![],
        },
        Case {
            name: "free quota counts: the most recently admitted of equals goes",
            queues: vec![q("a", None, 6).within(LowerPriority)],
            running: vec![
                ("low-old", "a", -1, 2),
                ("low-new", "a", -1, 2),
                ("high", "a", 1, 1),
            ],
            incoming: vec![("in", "a", 1, 3)],
            evicted: vec![("low-new", InCq)],
            admitted: vec![],
        },
        Case {
            name: "the set is minimal: a victim that is not needed is put back",
            queues: vec![q("a", None, 6).within(LowerPriority)],
            running: vec![("low", "a", -1, 1), ("mid", "a", 0, 5)],
            incoming: vec![("in", "a", 1, 5)],
            evicted: vec![("mid", InCq)],
            admitted: vec![],
        },
        Case {
            name: "withinClusterQueue Never: no victim in the queue",
            queues: vec![q("a", None, 6)],
            running: vec![("low", "a", -1, 6)],
            incoming: vec![("in", "a", 1, 2)],
            evicted: vec![],
            admitted: vec![],
        },
        Case {
            name: "reclaim from a borrower, any priority under Any",
            queues: vec![q("a", Some("c"), 6).reclaim(Any), q("b", Some("c"), 6)],
            running: vec![("b1", "b", 100, 4), ("b2", "b", 100, 4), ("a1", "a", 0, 2)],
            incoming: vec![("in", "a", 0, 4)],
            evicted: vec![("b2", Reclaim)],
            admitted: vec![],
        },
        Case {
            name: "reclaim under LowerPriority spares equal priority",
            queues: vec![
                q("a", Some("c"), 6).reclaim(LowerPriority),
                q("b", Some("c"), 6),
            ],
            running: vec![("b1", "b", 0, 4), ("b2", "b", 0, 4), ("a1", "a", 0, 2)],
            incoming: vec![("in", "a", 0, 4)],
            evicted: vec![],
            admitted: vec![],
        },
        Case {
            name: "a queue within its nominal quota is never reclaimed from",
            queues: vec![q("a", Some("c"), 6).reclaim(Any), q("b", Some("c"), 6)],
            running: vec![("b1", "b", 0, 6), ("a1", "a", 0, 4)],
            incoming: vec![("in", "a", 1, 4)],
            evicted: vec![],
            admitted: vec![],
        },
        Case {
            name: "fits by borrowing: no preemption, lower priority or not",
            queues: vec![
                q("a", Some("c"), 6).within(LowerPriority).reclaim(Any),
                q("b", Some("c"), 6),
            ],
            running: vec![("low", "a", -1, 6)],
            incoming: vec![("in", "a", 1, 4)],
            evicted: vec![],
            admitted: vec!["in"],
        },
        Case {
            name: "past the borrowing limit: preempt in the queue, not in the cohort",
            queues: vec![
                q("a", Some("c"), 6)
                    .limit(2)
                    .within(LowerPriority)
                    .reclaim(Any),
                q("b", Some("c"), 6),
            ],
            running: vec![("low", "a", -1, 8)],
            incoming: vec![("in", "a", 1, 4)],
            evicted: vec![("low", InCq)],
            admitted: vec![],
        },
        Case {
            name: "more than the nominal quota cannot be had by preempting",
            queues: vec![
                q("a", Some("c"), 6).within(LowerPriority).reclaim(Any),
                q("b", Some("c"), 6),
            ],
            running: vec![("low", "a", -1, 4), ("b1", "b", 0, 8)],
            incoming: vec![("in", "a", 1, 7)],
            evicted: vec![],
            admitted: vec![],
        },
        Case {
            name:
                "baseline: a large at its queue's nominal quota, cohort full: the four mediums go",
            queues: vec![
                q("a", Some("c"), 20)
                    .limit(100)
                    .within(LowerPriority)
                    .reclaim(Any),
                q("b", Some("c"), 20)
                    .limit(100)
                    .within(LowerPriority)
                    .reclaim(Any),
            ],
            running: vec![
                ("m1", "a", 100, 5),
                ("m2", "a", 100, 5),
                ("m3", "a", 100, 5),
                ("m4", "a", 100, 5),
                ("m5", "b", 100, 5),
                ("m6", "b", 100, 5),
                ("m7", "b", 100, 5),
                ("m8", "b", 100, 5),
            ],
            incoming: vec![("large", "a", 200, 20)],
            evicted: vec![("m1", InCq), ("m2", InCq), ("m3", InCq), ("m4", InCq)],
            admitted: vec![],
        },
        Case {
            name: "baseline: a large with room in the cohort borrows, nobody is preempted",
            queues: vec![
                q("a", Some("c"), 20)
                    .limit(100)
                    .within(LowerPriority)
                    .reclaim(Any),
                q("b", Some("c"), 20)
                    .limit(100)
                    .within(LowerPriority)
                    .reclaim(Any),
            ],
            running: vec![
                ("m1", "a", 100, 5),
                ("m2", "a", 100, 5),
                ("m3", "a", 100, 5),
                ("m4", "a", 100, 5),
            ],
            incoming: vec![("large", "a", 200, 20)],
            evicted: vec![],
            admitted: vec!["large"],
        },
        Case {
            // Below its nominal quota but needing to borrow for the rest,
            // the queue has no advantage over the borrower: Kueue first
            // tries to end up not borrowing, which takes its own mediums
            // and, on the way, the borrower's excess.
            name: "baseline: under nominal, others borrow: reclaim without borrowing first",
            queues: vec![
                q("a", Some("c"), 20)
                    .limit(100)
                    .within(LowerPriority)
                    .reclaim(Any),
                q("b", Some("c"), 20)
                    .limit(100)
                    .within(LowerPriority)
                    .reclaim(Any),
            ],
            running: vec![
                ("a1", "a", 100, 5),
                ("a2", "a", 100, 5),
                ("b1", "b", 100, 5),
                ("b2", "b", 100, 5),
                ("b3", "b", 100, 5),
                ("b4", "b", 100, 5),
                ("b5", "b", 100, 5),
                ("b6", "b", 100, 5),
            ],
            incoming: vec![("large", "a", 200, 20)],
            evicted: vec![("a1", InCq), ("a2", InCq), ("b5", Reclaim), ("b6", Reclaim)],
            admitted: vec![],
        },
        Case {
            name: "within its nominal quota, a queue reclaims from the borrower only",
            queues: vec![
                q("a", Some("c"), 20)
                    .limit(100)
                    .within(LowerPriority)
                    .reclaim(Any),
                q("b", Some("c"), 20)
                    .limit(100)
                    .within(LowerPriority)
                    .reclaim(Any),
            ],
            running: vec![
                ("b1", "b", 200, 20),
                ("b2", "b", 100, 5),
                ("b3", "b", 100, 5),
                ("b4", "b", 100, 5),
                ("b5", "b", 100, 5),
            ],
            incoming: vec![("med", "a", 50, 5)],
            evicted: vec![("b5", Reclaim)],
            admitted: vec![],
        },
        Case {
            name: "two preemptors with the same victim: only the first preempts",
            queues: vec![
                q("a", Some("c"), 4).reclaim(Any),
                q("b", Some("c"), 4).reclaim(Any),
                q("c", Some("c"), 4),
            ],
            running: vec![("c1", "c", 0, 8), ("a0", "a", 0, 2), ("b0", "b", 0, 2)],
            incoming: vec![("ia", "a", 0, 2), ("ib", "b", 0, 2)],
            evicted: vec![("c1", Reclaim)],
            admitted: vec![],
        },
        Case {
            // `ia` fits by borrowing and so preempts nobody; `ib` needs no
            // borrowing, goes first and takes the room.
            name: "less borrowing goes first; the borrower is skipped, not turned preemptor",
            queues: vec![
                q("a", Some("c"), 4).within(LowerPriority),
                q("b", Some("c"), 4),
            ],
            running: vec![("low", "a", 0, 4)],
            incoming: vec![("ia", "a", 5, 4), ("ib", "b", 0, 4)],
            evicted: vec![],
            admitted: vec!["ib"],
        },
    ]
}

/// The `with_shared_cq` cohort of upstream's `TestPreemption`: four queues
/// that may preempt while borrowing, priorities up to 0, and one that lends.
fn with_shared_cq() -> Vec<Queue> {
    let c = Some("with_shared_cq");
    vec![
        q("a_standard", c, 1)
            .limit(12)
            .reclaim(LowerPriority)
            .borrow_within(Some(0)),
        q("b_standard", c, 1)
            .limit(12)
            .within(LowerPriority)
            .reclaim(Any)
            .borrow_within(Some(0)),
        q("a_best_effort", c, 1)
            .limit(12)
            .reclaim(LowerPriority)
            .borrow_within(Some(0)),
        q("b_best_effort", c, 0)
            .limit(13)
            .reclaim(LowerPriority)
            .borrow_within(Some(0)),
        q("shared", c, 10),
    ]
}

/// `borrowWithinCohort`, each case named after the upstream case it ports.
fn borrow_within_cohort_cases() -> Vec<Case> {
    vec![
        Case {
            name: "TestPreemption/use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while borrowing",
            queues: with_shared_cq(),
            running: vec![
                ("a_best_effort_low", "a_best_effort", -1, 10),
                ("b_best_effort_low", "b_best_effort", -1, 1),
            ],
            incoming: vec![("in", "a_standard", 0, 10)],
            evicted: vec![("a_best_effort_low", WhileBorrowing)],
            admitted: vec![],
        },
        Case {
            name: "TestPreemption/use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above MaxPriorityThreshold, if borrowing is required even after the preemption",
            queues: with_shared_cq(),
            running: vec![("b_standard", "b_standard", 1, 10)],
            incoming: vec![("in", "a_standard", 2, 10)],
            evicted: vec![],
            admitted: vec![],
        },
        Case {
            name: "TestPreemption/use BorrowWithinCohort; allow preempting a lower-priority workload with priority above MaxPriorityThreshold, if borrowing is not required after the preemption",
            queues: with_shared_cq(),
            running: vec![("b_standard", "b_standard", 1, 13)],
            incoming: vec![("in", "a_standard", 2, 1)],
            evicted: vec![("b_standard", Reclaim)],
            admitted: vec![],
        },
        Case {
            name: "TestPreemption/use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same ClusterQueue",
            queues: with_shared_cq(),
            running: vec![("a_standard", "a_standard", 1, 13)],
            incoming: vec![("in", "a_standard", 2, 1)],
            evicted: vec![],
            admitted: vec![],
        },
        Case {
            name: "TestPreemption/use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal",
            queues: with_shared_cq(),
            running: vec![
                ("a_standard_1", "a_standard", 1, 10),
                ("a_standard_2", "a_standard", 1, 1),
                ("b_standard_1", "b_standard", 1, 1),
                ("b_standard_2", "b_standard", 2, 1),
            ],
            incoming: vec![("in", "b_standard", 3, 1)],
            evicted: vec![("b_standard_1", InCq)],
            admitted: vec![],
        },
        Case {
            name: "TestPreemption/use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold",
            queues: with_shared_cq(),
            running: vec![
                ("b_standard_high", "b_standard", 2, 10),
                ("b_standard_mid", "b_standard", 1, 1),
                ("a_best_effort_low", "a_best_effort", -1, 1),
                ("a_best_effort_lower", "a_best_effort", -2, 1),
            ],
            incoming: vec![("in", "b_standard", 2, 2)],
            evicted: vec![
                ("a_best_effort_lower", WhileBorrowing),
                ("b_standard_mid", InCq),
            ],
            admitted: vec![],
        },
        Case {
            // The queue with nothing to reclaim keeps the room it could
            // borrow (reclaimWithinCohort is not Any), and no more: the
            // other queue's small workload still fits.
            name: "TestSchedule/preemption while borrowing, workload waiting for preemption should not block a borrowing workload in another CQ",
            queues: vec![
                q("cq_shared", Some("preemption-while-borrowing"), 4).limit(0),
                q("cq_a", Some("preemption-while-borrowing"), 0)
                    .limit(3)
                    .reclaim(LowerPriority)
                    .borrow_within(None),
                q("cq_b", Some("preemption-while-borrowing"), 0)
                    .reclaim(LowerPriority)
                    .borrow_within(None),
            ],
            running: vec![("admitted_a", "cq_a", 0, 2)],
            incoming: vec![("a", "cq_a", 0, 3), ("b", "cq_b", 0, 1)],
            evicted: vec![],
            admitted: vec!["b"],
        },
        Case {
            // Each preemptor could preempt its own queue's workload and
            // then borrow; after the first, the second no longer fits.
            name: "TestSchedule/multiple preemptions skip preemption when shared limited resource",
            queues: vec![
                q("other-alpha", Some("other"), 2)
                    .within(LowerPriority)
                    .borrow_within(None),
                q("other-beta", Some("other"), 2)
                    .within(LowerPriority)
                    .borrow_within(None),
                q("resource-bank", Some("other"), 1),
            ],
            running: vec![("a1", "other-alpha", 0, 2), ("b1", "other-beta", 0, 2)],
            incoming: vec![
                ("preemptor", "other-alpha", 100, 3),
                ("pretending-preemptor", "other-beta", 99, 3),
            ],
            evicted: vec![("a1", InCq)],
            admitted: vec![],
        },
    ]
}

#[test]
fn borrowing_preemptors_preempt_whom_kueue_preempts() {
    for case in borrow_within_cohort_cases() {
        let mut e = setup(&case.queues, &case.running);
        for (i, w) in case.incoming.iter().enumerate() {
            e.upsert_workload(workload(w, 100 + i as i64, false));
        }
        let (evicted, admitted) = outcome(&e.schedule(1_000));
        let want: Vec<(String, PreemptedReason)> = case
            .evicted
            .iter()
            .map(|(n, r)| (n.to_string(), *r))
            .collect();
        assert_eq!(evicted, want, "{}: victims", case.name);
        assert_eq!(admitted, case.admitted, "{}: admitted", case.name);
    }
}

#[test]
fn reclaim_while_borrowing_has_kueues_message() {
    // TestPreemption/use BorrowWithinCohort; allow preempting a
    // lower-priority workload from another ClusterQueue while borrowing:
    // the message upstream writes on the victim.
    let mut e = setup(
        &with_shared_cq(),
        &[("a_best_effort_low", "a_best_effort", -1, 10)],
    );
    let mut wl = workload(&("in", "a_standard", 0, 10), 100, false);
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
        Some("Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /with_shared_cq/a_standard; preemptee path: /with_shared_cq/a_best_effort")
    );
}

#[test]
fn one_cycle_preempts_whom_kueue_preempts() {
    for case in cases() {
        let mut e = setup(&case.queues, &case.running);
        for (i, w) in case.incoming.iter().enumerate() {
            e.upsert_workload(workload(w, 100 + i as i64, false));
        }
        let (evicted, admitted) = outcome(&e.schedule(1_000));
        let want: Vec<(String, PreemptedReason)> = case
            .evicted
            .iter()
            .map(|(n, r)| (n.to_string(), *r))
            .collect();
        assert_eq!(evicted, want, "{}: victims", case.name);
        assert_eq!(admitted, case.admitted, "{}: admitted", case.name);
    }
}

#[test]
fn victims_already_leaving_are_not_preempted_again() {
    // Two queues reclaim from the same borrower in one cycle: `ia` (older)
    // takes `b2`, `ic` has the same target and waits. While `b2` stops,
    // `ic` keeps choosing it (already evicted candidates come first), so
    // nothing more is evicted; only once `ia` holds the room does `ic`
    // reclaim `b1`.
    let queues = [
        q("a", Some("c"), 6).reclaim(Any),
        q("b", Some("c"), 0),
        q("c", Some("c"), 6).reclaim(Any),
    ];
    let mut e = setup(
        &queues,
        &[
            ("b1", "b", 0, 3),
            ("b2", "b", 0, 3),
            ("a0", "a", 0, 3),
            ("c0", "c", 0, 3),
        ],
    );
    e.upsert_workload(workload(&("ia", "a", 0, 3), 100, false));
    e.upsert_workload(workload(&("ic", "c", 0, 3), 101, false));
    assert_eq!(
        outcome(&e.schedule(1_000)),
        (vec![("b2".to_string(), Reclaim)], vec![])
    );
    for t in 1_001..1_004 {
        assert_eq!(outcome(&e.schedule(t)), (vec![], vec![]), "at {t}");
    }
    e.confirm_eviction("ns/b2");
    assert_eq!(
        outcome(&e.schedule(1_004)),
        (vec![], vec!["ia".to_string()])
    );
    assert_eq!(
        outcome(&e.schedule(1_005)),
        (vec![("b1".to_string(), Reclaim)], vec![])
    );
}

#[test]
fn a_preemptor_keeps_its_turn_after_a_skip() {
    // `in` preempts `low2`. Before `low2` stops, `bw` (less borrowing)
    // takes the room that `c1` frees, so `in` is skipped once, and `top`
    // (higher priority) arrives in the same queue. Kueue keeps `in` at the
    // head of its queue (sticky) until it is admitted: the room `low2`
    // leaves is `in`'s, not the newcomer's.
    let queues = [
        q("a", Some("c"), 4).within(LowerPriority),
        q("b", Some("c"), 4),
        q("c", Some("c"), 0),
    ];
    let mut e = setup(
        &queues,
        &[("low1", "a", 0, 2), ("low2", "a", 0, 2), ("c1", "c", 0, 4)],
    );
    e.upsert_workload(workload(&("in", "a", 5, 2), 100, false));
    assert_eq!(
        outcome(&e.schedule(1_000)),
        (vec![("low2".to_string(), InCq)], vec![])
    );
    e.finish_workload("ns/c1");
    e.upsert_workload(workload(&("bw", "b", 10, 4), 101, false));
    e.upsert_workload(workload(&("top", "a", 9, 2), 102, false));
    assert_eq!(
        outcome(&e.schedule(1_001)),
        (vec![], vec!["bw".to_string()])
    );
    assert_eq!(outcome(&e.schedule(1_002)), (vec![], vec![]));
    e.confirm_eviction("ns/low2");
    assert_eq!(
        outcome(&e.schedule(1_003)),
        (vec![], vec!["in".to_string()])
    );
}

#[test]
fn a_preemptor_is_admitted_before_its_victim_comes_back() {
    // `in` (two 2-cpu pods, one at least) does not fit whole; one pod fits
    // within `a`'s nominal quota if `high` (borrowing in `b`) goes, so it
    // reclaims. Once `high` has stopped, both are heads of the next cycle,
    // and both borrow alike (`in` fits whole now, by borrowing): by
    // priority `high` would go first, fit again, and be preempted again by
    // the cycle after, without end (Kueue#13662; Kueue's
    // `PrioritizePreemptorWorkloads` is off in v0.19.2). Among heads that
    // borrow alike the preemptor waiting for its victims goes first.
    let queues = [
        q("a", Some("c"), 3).reclaim(Any),
        q("b", Some("c"), 0),
        q("d", Some("c"), 1),
    ];
    let mut e = setup(&queues, &[("high", "b", 2, 3)]);
    let mut w = workload(&("in", "a", 1, 2), 100, false);
    w.pod_sets[0].count = 2;
    w.pod_sets[0].min_count = Some(1);
    e.upsert_workload(w);
    assert_eq!(
        outcome(&e.schedule(1_000)),
        (vec![("high".to_string(), Reclaim)], vec![])
    );
    e.confirm_eviction("ns/high");
    assert_eq!(
        outcome(&e.schedule(1_001)),
        (vec![], vec!["in".to_string()])
    );
    for t in 1_002..1_005 {
        assert_eq!(outcome(&e.schedule(t)), (vec![], vec![]), "at {t}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// A workload that fits as things are (within the nominal quota, or by
    /// borrowing within the borrowing limit and what the cohort has left)
    /// is admitted, and nobody is preempted for it, whatever the policies
    /// and priorities.
    #[test]
    fn what_fits_preempts_nobody(
        queues in proptest::collection::vec(
            (0i64..=6, proptest::option::of(0i64..=4), 0usize..4, 0usize..4), 3),
        running in proptest::collection::vec((0usize..3, -2i32..3, 1i64..=4), 0..10),
        incoming in (0usize..3, -2i32..3, 1i64..=6),
    ) {
        const NAMES: [&str; 3] = ["a", "b", "c"];
        const RUNNING: [&str; 10] = ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"];
        let policies = [Never, LowerPriority, LowerOrNewerEqualPriority, Any];
        let qs: Vec<Queue> = queues
            .iter()
            .enumerate()
            .map(|(i, (nominal, bl, within, reclaim))| Queue {
                name: NAMES[i],
                cohort: Some("c"),
                nominal: *nominal,
                borrowing_limit: *bl,
                within: policies[*within],
                reclaim: policies[*reclaim],
                borrow_within: None,
            })
            .collect();
        let mut e = setup(&qs, &[]);
        for (n, (qi, prio, cpu)) in running.iter().enumerate() {
            let w = (RUNNING[n], NAMES[*qi], *prio, *cpu);
            let usage = workload(&w, 0, true).admission.map(|a| a.usage()).unwrap_or_default();
            if e.quota.fits(NAMES[*qi], &usage) {
                e.upsert_workload(workload(&w, n as i64 + 1, true));
            }
        }
        let w = ("in", NAMES[incoming.0], incoming.1, incoming.2);
        let usage = workload(&w, 0, true).admission.map(|a| a.usage()).unwrap_or_default();
        proptest::prop_assume!(e.quota.fits(NAMES[incoming.0], &usage));
        e.upsert_workload(workload(&w, 100, false));
        let (evicted, admitted) = outcome(&e.schedule(1_000));
        proptest::prop_assert!(evicted.is_empty(), "preempted {:?}", evicted);
        proptest::prop_assert_eq!(admitted, vec!["in".to_string()]);
    }
}

#[test]
fn an_unsent_admission_is_taken_back_before_a_written_one_is_evicted() {
    // `sent` (priority 0) holds as the API shows it; `late` (priority 1) is
    // admitted by a cycle. `top` (priority 9) then needs room: Kueue's
    // order takes the lowest priority, `sent`. While `late`'s admission
    // still waits to be sent, nobody has seen it: `top` takes that back
    // instead, and nothing that ran is evicted. Once sent (or written),
    // it is a victim as any other.
    let queues = [q("a", None, 4).within(LowerPriority)];
    for written in [false, true] {
        let mut e = setup(&queues, &[("sent", "a", 0, 2)]);
        e.upsert_workload(workload(&("late", "a", 1, 2), 10, false));
        assert_eq!(
            outcome(&e.schedule(1_000)),
            (vec![], vec!["late".to_string()])
        );
        if !written {
            e.set_unsent([Arc::from(format!("{NS}/late"))]);
        }
        e.upsert_workload(workload(&("top", "a", 9, 2), 11, false));
        let victim = if written { "sent" } else { "late" };
        assert_eq!(
            outcome(&e.schedule(1_001)),
            (vec![(victim.to_string(), InCq)], vec![]),
            "late's admission written: {written}"
        );
    }
}
