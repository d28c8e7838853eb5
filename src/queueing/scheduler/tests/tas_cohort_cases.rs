//! Kueue v0.19.2 `pkg/scheduler/scheduler_tas_test.go`
//! `TestScheduleForTASCohorts` (26 cases), in our table form (see
//! `tas_table`): TAS with borrowing and reclaim in a cohort, and what one
//! cycle's earlier entries take on the nodes from the later ones
//! (`TASRecomputeAssignmentWithinSchedulingCycle`, on by default: an entry
//! whose nominated nodes were taken is assigned again on its flavors; a
//! preemptor keeps the room it needs).
//!
//! Left out, by upstream name, and why:
//! - The cases that turn `TASRecomputeAssignmentWithinSchedulingCycle`
//!   off (batchgate runs Kueue's default, on): "workload with preemption
//!   target recomputes stale TAS assignment in cohort; … disabled"; "two
//!   flavors in cohort; re-evaluation is sticky and does not switch to
//!   second flavor; … disabled"; "two workloads in cohort nominated to the
//!   same node; enough capacity to admit both; … disabled"; "reclaim within
//!   cohort; capacity reserved by preempting workload does not allow to
//!   schedule last workload; … disabled"; "two small workloads considered;
//!   there is only space for one of them on the initial node; … disabled";
//!   "two workloads considered; both overlapping in the initial flavor
//!   assignment; … disabled"; "preempting workload with targets reserves
//!   capacity so that lower priority workload cannot use it; … disabled";
//!   "preempting workload without targets reserves capacity so that lower
//!   priority workload cannot use it; … disabled" (8).
//! - "two flavors in cohort; re-evaluation is sticky and does not switch to
//!   second flavor; TASRecomputeAssignmentWithinSchedulingCycle enabled":
//!   batchgate decides as upstream (a1 admitted on node-1, b1 recomputed
//!   on tas-flavor-1 only, pending with the same message), but sets b1
//!   aside where Kueue puts it back in the queue because its flavor scan
//!   has flavors left (`LastAssignment.PendingFlavors`); batchgate does not
//!   keep a workload's scan progress between cycles.

use super::tas_table::*;
use super::*;
use crate::queueing::{cluster_queue::BorrowWithinCohort, cohort::Cohort};

const SINGLE: &str = "tas-single-level";
const COHORT: &str = "tas-cohort-main";

/// `defaultNodeX1`: 3 cpu, 5Gi, 10 pods.
fn x1() -> crate::queueing::topology::Node {
    tas_node(
        "x1",
        "x1",
        &[],
        &[("cpu", "3"), ("memory", "5Gi"), ("pods", "10")],
    )
}

/// `defaultNodeY1`: 5 cpu, 3Gi, 10 pods.
fn y1() -> crate::queueing::topology::Node {
    tas_node(
        "y1",
        "y1",
        &[],
        &[("cpu", "5"), ("memory", "3Gi"), ("pods", "10")],
    )
}

/// Nodes named by their hostname, with `cpu` and 10 pods.
fn hosts(list: &[(&str, &str)]) -> Vec<crate::queueing::topology::Node> {
    list.iter()
        .map(|(h, cpu)| tas_node(h, h, &[], &[("cpu", cpu), ("pods", "10")]))
        .collect()
}

/// `defaultClusterQueueA/B/C`: 4 cpu and 4Gi in the cohort; A preempts
/// lower priority within; all reclaim from any.
fn default_queue(name: &str) -> ClusterQueue {
    let within = if name == "tas-cq-a" {
        PreemptionPolicy::LowerPriority
    } else {
        PreemptionPolicy::Never
    };
    queue(
        name,
        &[&[("tas-default", &[("cpu", "4"), ("memory", "4Gi")])]],
    )
    .cohort(COHORT)
    .preemption(within, PreemptionPolicy::Any, None)
}

fn cpu_queue(name: &str, cpu: &str) -> ClusterQueue {
    queue(name, &[&[("tas-default", &[("cpu", cpu)])]]).cohort(COHORT)
}

fn base(name: &'static str) -> Case {
    Case {
        name,
        topologies: vec![(SINGLE, vec![HOST])],
        flavors: vec![tas_flavor("tas-default", SINGLE)],
        queues: vec![default_queue("tas-cq-a"), default_queue("tas-cq-b")],
        nodes: vec![x1(), y1()],
        ..Default::default()
    }
}

/// A pending workload of one pod set `one` of `count` pods of 1 cpu.
fn pending_wl(
    name: &str,
    cq: &str,
    priority: i32,
    count: u32,
    topology: Option<crate::queueing::workload::TopologyRequest>,
) -> Workload {
    workload(
        name,
        cq,
        vec![pod_set("one", count, topology, &[("cpu", "1")])],
    )
    .priority(priority)
}

/// An admitted workload of `count` pods of 1 cpu (its spec may say
/// `spec_count`), holding `cpu` in tas-default on `hosts`.
fn held(
    name: &str,
    cq: &str,
    priority: i32,
    spec_count: u32,
    count: u32,
    cpu: &str,
    on: &[(&str, i64)],
) -> Workload {
    pending_wl(name, cq, priority, spec_count, required(HOST)).admitted(admission(
        cq,
        vec![psa(
            "one",
            &[("cpu", "tas-default", cpu)],
            count,
            on_hosts(on),
        )],
    ))
}

fn admitted_cpu(cq: &str, cpu: &str, count: u32, on: &[(&str, i64)]) -> Admission {
    admission(
        cq,
        vec![psa(
            "one",
            &[("cpu", "tas-default", cpu)],
            count,
            on_hosts(on),
        )],
    )
}

fn reclaimed_by(uid: &str, job: &str, preemptor_cq: &str, victim_cq: &str) -> &'static str {
    Box::leak(
        format!(
            "Preempted to accommodate a workload (UID: {uid}, JobUID: {job}) due to reclamation \
             within the cohort; preemptor path: /{COHORT}/{preemptor_cq}; preemptee path: \
             /{COHORT}/{victim_cq}"
        )
        .into_boxed_str(),
    )
}

fn in_queue_by(uid: &str, job: &str, cq: &str) -> &'static str {
    Box::leak(
        format!(
            "Preempted to accommodate a workload (UID: {uid}, JobUID: {job}) due to \
             prioritization in the ClusterQueue; preemptor path: /{COHORT}/{cq}; preemptee \
             path: /{COHORT}/{cq}"
        )
        .into_boxed_str(),
    )
}

fn cases() -> Vec<Case> {
    let mut cases =
        vec![
        Case {
            queues: vec![
                default_queue("tas-cq-a"),
                default_queue("tas-cq-b"),
                default_queue("tas-cq-c"),
            ],
            workloads: vec![
                held("a1-admitted", "tas-cq-a", 2, 5, 5, "5", &[("x1", 3), ("y1", 2)]),
                held("a2-admitted", "tas-cq-a", 1, 1, 1, "1", &[("y1", 1)]),
                held("a3-admitted", "tas-cq-a", 1, 1, 1, "1", &[("y1", 1)]),
                pending_wl("b1", "tas-cq-b", 3, 3, required(HOST))
                    .uid("wl-b1")
                    .job_uid("job-b1"),
                pending_wl("c1", "tas-cq-c", 1, 1, preferred(HOST))
                    .uid("wl-c1")
                    .job_uid("job-c1"),
            ],
            left: vec![("tas-cq-b", vec!["b1"]), ("tas-cq-c", vec!["c1"])],
            pending: vec![
                (
                    "b1",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" allows \
                     to fit only 1 out of 3 pod(s). Total nodes: 2; excluded: resource \"cpu\": 1. \
                     Pending the preemption of 2 workload(s)",
                ),
                (
                    "c1",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't \
                     allow to fit any of 1 pod(s). Total nodes: 2; excluded: resource \"cpu\": 2. \
                     Pending the preemption of 1 workload(s)",
                ),
            ],
            preempted: vec![
                (
                    "a1-admitted",
                    PreemptedReason::InCohortReclamation,
                    reclaimed_by("wl-c1", "job-c1", "tas-cq-c", "tas-cq-a"),
                ),
                (
                    "a2-admitted",
                    PreemptedReason::InCohortReclamation,
                    reclaimed_by("wl-b1", "job-b1", "tas-cq-b", "tas-cq-a"),
                ),
                (
                    "a3-admitted",
                    PreemptedReason::InCohortReclamation,
                    reclaimed_by("wl-b1", "job-b1", "tas-cq-b", "tas-cq-a"),
                ),
            ],
            ..base(
                "reclaim within cohort; capacity reserved by preempting workload does not allow \
                 to schedule last workload; TASRecomputeAssignmentWithinSchedulingCycle enabled",
            )
        },
        Case {
            nodes: hosts(&[("node-1", "8"), ("node-2", "8")]),
            queues: vec![cpu_queue("tas-cq-a", "8"), cpu_queue("tas-cq-b", "8")],
            workloads: vec![
                pending_wl("a1", "tas-cq-a", 10, 1, required(HOST)),
                pending_wl("b1", "tas-cq-b", 5, 1, required(HOST)),
            ]
            .into_iter()
            .map(|mut w| {
                w.pod_sets[0].requests = res(&[("cpu", "8")]).into();
                w
            })
            .collect(),
            admitted: vec![
                ("a1", admitted_cpu("tas-cq-a", "8", 1, &[("node-1", 1)])),
                ("b1", admitted_cpu("tas-cq-b", "8", 1, &[("node-2", 1)])),
            ],
            ..base(
                "two workloads in cohort nominated to the same node; enough capacity to admit \
                 both; TASRecomputeAssignmentWithinSchedulingCycle enabled",
            )
        },
        Case {
            workloads: vec![
                workload(
                    "a1",
                    "tas-cq-a",
                    vec![pod_set("one", 1, preferred(HOST), &[("cpu", "2")])],
                )
                .priority(2),
                workload(
                    "b1",
                    "tas-cq-b",
                    vec![pod_set("one", 1, preferred(HOST), &[("cpu", "2")])],
                )
                .priority(1),
            ],
            admitted: vec![
                ("a1", admitted_cpu("tas-cq-a", "2", 1, &[("x1", 1)])),
                ("b1", admitted_cpu("tas-cq-b", "2", 1, &[("y1", 1)])),
            ],
            ..base(
                "two workloads considered; both overlapping in the initial flavor assignment; \
                 TASRecomputeAssignmentWithinSchedulingCycle enabled",
            )
        },
        Case {
            workloads: vec![
                pending_wl("a1", "tas-cq-a", 2, 1, preferred(HOST)),
                pending_wl("b1", "tas-cq-b", 1, 3, preferred(HOST)),
            ],
            admitted: vec![
                ("a1", admitted_cpu("tas-cq-a", "1", 1, &[("x1", 1)])),
                ("b1", admitted_cpu("tas-cq-b", "3", 3, &[("y1", 3)])),
            ],
            ..base(
                "two small workloads considered; there is only space for one of them on the \
                 initial node; TASRecomputeAssignmentWithinSchedulingCycle enabled",
            )
        },
        Case {
            nodes: vec![y1()],
            queues: vec![
                queue(
                    "tas-cq-a",
                    &[&[("tas-default", &[("cpu", "8"), ("memory", "4Gi")])]],
                )
                .cohort(COHORT)
                .preemption(PreemptionPolicy::LowerPriority, PreemptionPolicy::Any, None)
                .borrowing_limit("tas-default", "cpu", "0")
                .borrowing_limit("tas-default", "memory", "0"),
                default_queue("tas-cq-b"),
            ],
            workloads: vec![
                held("a1-admitted", "tas-cq-a", 1, 2, 2, "2", &[("y1", 2)]),
                pending_wl("a2", "tas-cq-a", 2, 4, preferred(HOST))
                    .uid("wl-a2")
                    .job_uid("job-a2"),
                pending_wl("b1", "tas-cq-b", 1, 3, preferred(HOST)),
            ],
            left: vec![("tas-cq-a", vec!["a2"])],
            inadmissible: vec![("tas-cq-b", vec!["b1"])],
            pending: vec![
                (
                    "a2",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" allows \
                     to fit only 3 out of 4 pod(s). Pending the preemption of 1 workload(s)",
                ),
                (
                    "b1",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't \
                     allow to fit any of 3 pod(s). Total nodes: 1; excluded: resource \"cpu\": 1",
                ),
            ],
            preempted: vec![(
                "a1-admitted",
                PreemptedReason::InClusterQueue,
                in_queue_by("wl-a2", "job-a2", "tas-cq-a"),
            )],
            ..base(
                "preempting workload with targets reserves capacity so that lower priority \
                 workload cannot use it; TASRecomputeAssignmentWithinSchedulingCycle enabled",
            )
        },
        Case {
            nodes: vec![y1()],
            queues: vec![
                queue(
                    "tas-cq-a",
                    &[&[("tas-default", &[("cpu", "8"), ("memory", "4Gi")])]],
                )
                .cohort(COHORT)
                .preemption(
                    PreemptionPolicy::LowerPriority,
                    PreemptionPolicy::LowerPriority,
                    None,
                )
                .borrowing_limit("tas-default", "cpu", "0")
                .borrowing_limit("tas-default", "memory", "0"),
                default_queue("tas-cq-b"),
            ],
            workloads: vec![
                held("a1-admitted", "tas-cq-a", 2, 2, 2, "2", &[("y1", 2)]),
                pending_wl("a2", "tas-cq-a", 2, 4, preferred(HOST)),
                pending_wl("b1", "tas-cq-b", 1, 3, preferred(HOST)),
            ],
            inadmissible: vec![("tas-cq-a", vec!["a2"]), ("tas-cq-b", vec!["b1"])],
            pending: vec![
                (
                    "a2",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" allows \
                     to fit only 3 out of 4 pod(s)",
                ),
                (
                    "b1",
                    "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't \
                     allow to fit any of 3 pod(s). Total nodes: 1; excluded: resource \"cpu\": 1",
                ),
            ],
            ..base(
                "preempting workload without targets reserves capacity so that lower priority \
                 workload cannot use it; TASRecomputeAssignmentWithinSchedulingCycle enabled",
            )
        },
        Case {
            nodes: hosts(&[("node-1", "1"), ("node-2", "2"), ("node-3", "2")]),
            queues: vec![
                cpu_queue("tas-cq-a", "2"),
                cpu_queue("tas-cq-b", "2")
                    .preemption(PreemptionPolicy::LowerPriority, PreemptionPolicy::Never, None)
                    .borrowing_limit("tas-default", "cpu", "0"),
            ],
            workloads: vec![
                held("b-low-admitted", "tas-cq-b", 1, 1, 1, "1", &[("node-1", 1)])
                    .uid("wl-b-low")
                    .job_uid("job-b-low"),
                workload(
                    "a1",
                    "tas-cq-a",
                    vec![pod_set("one", 1, preferred(HOST), &[("cpu", "2")])],
                )
                .uid("wl-a1")
                .job_uid("job-a1")
                .priority(2)
                .created(1),
                workload(
                    "b1",
                    "tas-cq-b",
                    vec![pod_set("one", 1, preferred(HOST), &[("cpu", "2")])],
                )
                .uid("wl-b1")
                .job_uid("job-b1")
                .priority(2)
                .created(2),
            ],
            admitted: vec![("a1", admitted_cpu("tas-cq-a", "2", 1, &[("node-2", 1)]))],
            left: vec![("tas-cq-b", vec!["b1"])],
            pending: vec![(
                "b1",
                "couldn't assign flavors to pod set one: insufficient unused quota for cpu in \
                 flavor tas-default, 1 more needed. Pending the preemption of 1 workload(s)",
            )],
            preempted: vec![(
                "b-low-admitted",
                PreemptedReason::InClusterQueue,
                in_queue_by("wl-b1", "job-b1", "tas-cq-b"),
            )],
            ..base(
                "workload with preemption target recomputes stale TAS assignment in cohort; \
                 TASRecomputeAssignmentWithinSchedulingCycle enabled",
            )
        },
        Case {
            nodes: vec![tas_node("x1", "x1", &[], &[("cpu", "2"), ("pods", "1")])],
            queues: vec![default_queue("tas-cq-a")],
            workloads: vec![workload(
                "foo",
                "tas-cq-a",
                vec![
                    pod_set("one", 1, required(HOST), &[("cpu", "1")]),
                    pod_set("two", 1, required(HOST), &[("cpu", "1")]),
                ],
            )],
            inadmissible: vec![("tas-cq-a", vec!["foo"])],
            pending: vec![(
                "foo",
                "couldn't assign flavors to pod set two: topology \"tas-single-level\" doesn't \
                 allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource \"pods\": 1",
            )],
            ..base("workload with two PodSets exceeds node pods capacity")
        },
        Case {
            workloads: vec![pending_wl("a1", "tas-cq-a", 0, 6, preferred(HOST))],
            admitted: vec![(
                "a1",
                admitted_cpu("tas-cq-a", "6", 6, &[("x1", 1), ("y1", 5)]),
            )],
            ..base("workload which requires borrowing gets scheduled")
        },
        Case {
            workloads: vec![
                held("a1-admitted", "tas-cq-a", 0, 5, 5, "5", &[("x1", 5)]),
                pending_wl("b1", "tas-cq-b", 0, 4, preferred(HOST))
                    .uid("wl-b1")
                    .job_uid("job-b1"),
            ],
            left: vec![("tas-cq-b", vec!["b1"])],
            pending: vec![(
                "b1",
                "couldn't assign flavors to pod set one: insufficient unused quota for cpu in \
                 flavor tas-default, 1 more needed. Pending the preemption of 1 workload(s)",
            )],
            preempted: vec![(
                "a1-admitted",
                PreemptedReason::InCohortReclamation,
                reclaimed_by("wl-b1", "job-b1", "tas-cq-b", "tas-cq-a"),
            )],
            ..base("reclaim within cohort; single borrowing workload gets preempted")
        },
        Case {
            workloads: vec![
                held("a1-admitted", "tas-cq-a", 1, 5, 5, "5", &[("x1", 5)]),
                held("a2-admitted", "tas-cq-a", 2, 2, 2, "2", &[("y1", 2)]),
                held("a3-admitted", "tas-cq-a", 2, 1, 1, "1", &[("y1", 1)]),
                pending_wl("b1", "tas-cq-b", 3, 3, preferred(HOST))
                    .uid("wl-b1")
                    .job_uid("job-b1"),
            ],
            left: vec![("tas-cq-b", vec!["b1"])],
            pending: vec![(
                "b1",
                "couldn't assign flavors to pod set one: insufficient unused quota for cpu in \
                 flavor tas-default, 3 more needed. Pending the preemption of 1 workload(s)",
            )],
            preempted: vec![(
                "a1-admitted",
                PreemptedReason::InCohortReclamation,
                reclaimed_by("wl-b1", "job-b1", "tas-cq-b", "tas-cq-a"),
            )],
            ..base("reclaim within cohort; single workload is preempted out three candidates")
        },
        Case {
            workloads: vec![
                held("a1-admitted", "tas-cq-a", 3, 4, 5, "5", &[("y1", 5)]),
                held("a2-admitted", "tas-cq-a", 2, 3, 3, "3", &[("x1", 3)]),
                {
                    let mut w = workload(
                        "b1",
                        "tas-cq-b",
                        vec![pod_set(
                            "one",
                            4,
                            required(HOST),
                            &[("cpu", "1"), ("memory", "1")],
                        )],
                    )
                    .uid("wl-b1")
                    .job_uid("job-b1")
                    .priority(3);
                    w.pod_sets[0].min_count = Some(3);
                    w
                },
            ],
            left: vec![("tas-cq-b", vec!["b1"])],
            pending: vec![(
                "b1",
                "couldn't assign flavors to pod set one: insufficient unused quota for cpu in \
                 flavor tas-default, 2 more needed. Pending the preemption of 1 workload(s)",
            )],
            preempted: vec![(
                "a2-admitted",
                PreemptedReason::InCohortReclamation,
                reclaimed_by("wl-b1", "job-b1", "tas-cq-b", "tas-cq-a"),
            )],
            ..base("reclaim within cohort; preempting with partial admission")
        },
    ];
    cases.extend([
        Case {
            workloads: vec![
                workload(
                    "a1",
                    "tas-cq-a",
                    vec![pod_set("one", 1, preferred(HOST), &[("cpu", "5")])],
                )
                .priority(2),
                workload(
                    "b1",
                    "tas-cq-b",
                    vec![pod_set("one", 1, preferred(HOST), &[("memory", "5")])],
                )
                .priority(1),
            ],
            admitted: vec![
                ("a1", admitted_cpu("tas-cq-a", "5", 1, &[("y1", 1)])),
                (
                    "b1",
                    admission(
                        "tas-cq-b",
                        vec![psa(
                            "one",
                            &[("memory", "tas-default", "5")],
                            1,
                            on_hosts(&[("x1", 1)]),
                        )],
                    ),
                ),
            ],
            ..base("two small workloads considered; both get scheduled on different nodes")
        },
        Case {
            workloads: vec![
                pending_wl("a1", "tas-cq-a", 2, 1, preferred(HOST)),
                pending_wl("b1", "tas-cq-b", 1, 2, preferred(HOST)),
            ],
            admitted: vec![
                ("a1", admitted_cpu("tas-cq-a", "1", 1, &[("x1", 1)])),
                ("b1", admitted_cpu("tas-cq-b", "2", 2, &[("x1", 2)])),
            ],
            ..base("two small workloads considered; both get scheduled on the same node")
        },
        Case {
            workloads: vec![
                pending_wl("a1", "tas-cq-a", 2, 5, preferred(HOST)),
                pending_wl("b1", "tas-cq-b", 1, 5, preferred(HOST)),
            ],
            admitted: vec![("a1", admitted_cpu("tas-cq-a", "5", 5, &[("y1", 5)]))],
            left: vec![("tas-cq-b", vec!["b1"])],
            pending: vec![(
                "b1",
                "Workload no longer fits after processing another workload",
            )],
            ..base("two workloads considered; there is enough space only for the first")
        },
        Case {
            nodes: vec![y1()],
            queues: vec![
                queue(
                    "tas-cq-a",
                    &[&[("tas-default", &[("cpu", "8"), ("memory", "4Gi")])]],
                )
                .cohort(COHORT)
                .preemption(PreemptionPolicy::LowerPriority, PreemptionPolicy::Any, None)
                .borrowing_limit("tas-default", "cpu", "0")
                .borrowing_limit("tas-default", "memory", "0"),
                default_queue("tas-cq-b"),
            ],
            workloads: vec![
                held("a1-admitted", "tas-cq-a", 2, 2, 2, "2", &[("y1", 2)]),
                pending_wl("a2", "tas-cq-a", 2, 4, preferred(HOST)),
                pending_wl("b1", "tas-cq-b", 1, 3, preferred(HOST)),
            ],
            admitted: vec![("b1", admitted_cpu("tas-cq-b", "3", 3, &[("y1", 3)]))],
            inadmissible: vec![("tas-cq-a", vec!["a2"])],
            pending: vec![(
                "a2",
                "couldn't assign flavors to pod set one: topology \"tas-single-level\" allows to \
                 fit only 3 out of 4 pod(s)",
            )],
            ..base(
                "preempting workload without targets doesn't reserve capacity when it can \
                 always reclaim",
            )
        },
        fragmented_in_cohort(),
    ]);
    cases
}

/// "preempt in multiple flavors out of which one requires update Fit ->
/// Preempt due to fragmentation" (the cohort table's): quota from the
/// Cohort, borrowing within it.
fn fragmented_in_cohort() -> Case {
    const GPU: &str = "example.com/gpu";
    let borrowing_queue = |name: &str| {
        let mut q = queue(name, &[&[("tas-default", &[("cpu", "0"), (GPU, "0")])]])
            .cohort(COHORT)
            .preemption(
                PreemptionPolicy::LowerPriority,
                PreemptionPolicy::Any,
                Some(BorrowWithinCohort::default()),
            )
            .borrowing_limit("tas-default", "cpu", "16")
            .borrowing_limit("tas-default", GPU, "16");
        q.resource_groups[0].covered_resources = vec!["cpu".into(), GPU.into()];
        q
    };
    let node = |name: &str| crate::queueing::topology::Node {
        name: name.into(),
        labels: [(HOST.to_string(), name.to_string())].into(),
        allocatable: res(&[("cpu", "8"), (GPU, "8"), ("pods", "10")]),
        ready: true,
        ..Default::default()
    };
    let low = |name: &str, per_pod: &[(&str, &str)], usage: &[(&str, &str, &str)]| {
        workload(
            name,
            "tas-cq-a",
            vec![pod_set("one", 2, required(HOST), per_pod)],
        )
        .uid(&format!("wl-{name}"))
        .job_uid(&format!("job-{name}"))
        .priority(-1000)
        .admitted(admission(
            "tas-cq-a",
            vec![psa(
                "one",
                usage,
                2,
                on_hosts(&[("node-1", 1), ("node-2", 1)]),
            )],
        ))
    };
    let by_standard = Box::leak(
        format!(
            "Preempted to accommodate a workload (UID: wl-standard, JobUID: job-standard) due \
             to reclamation within the cohort while borrowing; preemptor path: \
             /{COHORT}/tas-cq-b; preemptee path: /{COHORT}/tas-cq-a"
        )
        .into_boxed_str(),
    );
    Case {
        topologies: vec![("tas-topology", vec![HOST])],
        flavors: vec![ResourceFlavor {
            node_labels: BTreeMap::new(),
            ..tas_flavor("tas-default", "tas-topology")
        }],
        cohorts: vec![Cohort {
            name: COHORT.into(),
            parent: None,
            resource_groups: queue("x", &[&[("tas-default", &[("cpu", "16"), (GPU, "16")])]])
                .resource_groups,
        }],
        queues: vec![borrowing_queue("tas-cq-a"), borrowing_queue("tas-cq-b")],
        nodes: vec![node("node-1"), node("node-2")],
        workloads: vec![
            low("low-cpu", &[("cpu", "5")], &[("cpu", "tas-default", "10")]),
            low(
                "low-gpu",
                &[("cpu", "10m"), (GPU, "8")],
                &[("cpu", "tas-default", "20m"), (GPU, "tas-default", "16")],
            ),
            workload(
                "standard",
                "tas-cq-b",
                vec![pod_set(
                    "one",
                    1,
                    required(HOST),
                    &[("cpu", "5"), (GPU, "8")],
                )],
            )
            .uid("wl-standard")
            .job_uid("job-standard"),
        ],
        left: vec![("tas-cq-b", vec!["standard"])],
        pending: vec![(
            "standard",
            "couldn't assign flavors to pod set one: insufficient unused quota for \
             example.com/gpu in flavor tas-default, 8 more needed. Pending the preemption of 2 \
             workload(s)",
        )],
        preempted: vec![
            (
                "low-cpu",
                PreemptedReason::InCohortReclaimWhileBorrowing,
                by_standard,
            ),
            (
                "low-gpu",
                PreemptedReason::InCohortReclaimWhileBorrowing,
                by_standard,
            ),
        ],
        ..base(
            "preempt in multiple flavors out of which one requires update Fit -> Preempt due to \
             fragmentation",
        )
    }
}

#[test]
fn schedule_for_tas_cohorts() {
    run_table("TestScheduleForTASCohorts", cases());
}
