//! Kueue v0.19.2 `pkg/scheduler/scheduler_tas_test.go`
//! `TestScheduleForTASPreemption`, in our table form (see `tas_table`):
//! TAS-aware preemption, where a workload whose quota fits but whose pods
//! do not fit the nodes preempts until they do.
//!
//! Ported: 9 of 11. Left out:
//! - "TAS disabled, preemption succeeds even with ResourceFlavor
//!   topologyName": turns the `TopologyAwareScheduling` gate off;
//!   batchgate's TAS has no off switch.
//! - "preempting workload recomputes both overlapping preemption targets
//!   and TAS topology assignment; both features enabled": needs
//!   `RecomputeAssignmentUponPreemptionTargetsOverlap` (alpha, off in
//!   v0.19.2).

use super::tas_table::*;
use super::*;

const SINGLE: &str = "tas-single-level";

/// `defaultSingleNode` of this table: x1 with 5 cpu, 5Gi, 10 pods.
fn x1() -> crate::queueing::topology::Node {
    tas_node(
        "x1",
        "x1",
        &[],
        &[("cpu", "5"), ("memory", "5Gi"), ("pods", "10")],
    )
}

/// `defaultTwoNodes`: x1 and y1, each as [`x1`].
fn two_nodes() -> Vec<crate::queueing::topology::Node> {
    vec![
        x1(),
        tas_node(
            "y1",
            "y1",
            &[],
            &[("cpu", "5"), ("memory", "5Gi"), ("pods", "10")],
        ),
    ]
}

/// `defaultClusterQueueWithPreemption`: 50 cpu, 50Gi, LowerPriority
/// within the queue.
fn main_queue(cpu: &str, memory: &str) -> ClusterQueue {
    queue(
        "tas-main",
        &[&[("tas-default", &[("cpu", cpu), ("memory", memory)])]],
    )
    .preemption(
        PreemptionPolicy::LowerPriority,
        PreemptionPolicy::Never,
        None,
    )
}

fn base(name: &'static str) -> Case {
    Case {
        name,
        topologies: vec![(SINGLE, vec![HOST])],
        flavors: vec![tas_flavor("tas-default", SINGLE)],
        queues: vec![main_queue("50", "50Gi")],
        nodes: vec![x1()],
        ..Default::default()
    }
}

/// An admitted workload of one pod set `one` on the given hosts, asking
/// for `requests` per pod; `usage` is what its admission records.
fn running(
    name: &str,
    priority: i32,
    count: u32,
    requests: &[(&str, &str)],
    flavor: &str,
    usage: &[(&str, &str)],
    hosts: &[(&str, i64)],
) -> Workload {
    let assigned: Vec<(&str, &str, &str)> = usage.iter().map(|(r, v)| (*r, flavor, *v)).collect();
    workload(
        name,
        "tas-main",
        vec![pod_set("one", count, required(HOST), requests)],
    )
    .priority(priority)
    .admitted(admission(
        "tas-main",
        vec![psa("one", &assigned, count, on_hosts(hosts))],
    ))
}

fn in_queue(preemptor_uid: &str, job_uid: &str) -> String {
    format!(
        "Preempted to accommodate a workload (UID: {preemptor_uid}, JobUID: {job_uid}) \
         due to prioritization in the ClusterQueue; preemptor path: /tas-main; preemptee path: /tas-main"
    )
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn cases() -> Vec<Case> {
    let foo = |count: u32, topology, requests: &[(&str, &str)]| {
        workload(
            "foo",
            "tas-main",
            vec![pod_set("one", count, topology, requests)],
        )
        .uid("wl-foo")
        .job_uid("job-foo")
        .priority(3)
    };
    let by_foo = leak(in_queue("wl-foo", "job-foo"));
    let no_cpu_preempting =
        "couldn't assign flavors to pod set one: topology \"tas-single-level\" \
         doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource \"cpu\": 1. \
         Pending the preemption of 1 workload(s)";
    vec![
        Case {
            nodes: two_nodes(),
            queues: vec![main_queue("10", "10Gi")],
            workloads: vec![
                foo(10, preferred(HOST), &[("cpu", "1")]),
                running(
                    "low-priority-admitted",
                    1,
                    1,
                    &[("cpu", "5")],
                    "tas-default",
                    &[("cpu", "5")],
                    &[("z1", 1)],
                )
                .uid("low-priority-admitted-uid"),
            ],
            left: vec![("tas-main", vec!["foo"])],
            pending: vec![(
                "foo",
                "couldn't assign flavors to pod set one: insufficient unused quota for cpu in \
                 flavor tas-default, 5 more needed. Pending the preemption of 1 workload(s)",
            )],
            preempted: vec![(
                "low-priority-admitted",
                PreemptedReason::InClusterQueue,
                by_foo,
            )],
            ..base("workload preempted due to quota is using deleted Node")
        },
        Case {
            workloads: vec![
                foo(1, preferred(HOST), &[("cpu", "1"), ("memory", "4Gi")]),
                running(
                    "low-priority-admitted",
                    1,
                    1,
                    &[("cpu", "1"), ("memory", "2Gi")],
                    "tas-default",
                    &[("cpu", "1"), ("memory", "2Gi")],
                    &[("x1", 1)],
                )
                .uid("low-priority-admitted-uid"),
            ],
            left: vec![("tas-main", vec!["foo"])],
            pending: vec![(
                "foo",
                "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't \
                 allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource \"memory\": 1. \
                 Pending the preemption of 1 workload(s)",
            )],
            preempted: vec![(
                "low-priority-admitted",
                PreemptedReason::InClusterQueue,
                by_foo,
            )],
            ..base("preemption; TAS uses podspec memory for fit")
        },
        Case {
            workloads: vec![
                foo(1, preferred(HOST), &[("cpu", "2")]),
                running(
                    "low-priority-admitted",
                    1,
                    1,
                    &[("cpu", "5")],
                    "tas-default",
                    &[("cpu", "5")],
                    &[("x1", 1)],
                )
                .uid("low-priority-admitted-uid"),
            ],
            left: vec![("tas-main", vec!["foo"])],
            pending: vec![("foo", no_cpu_preempting)],
            preempted: vec![(
                "low-priority-admitted",
                PreemptedReason::InClusterQueue,
                by_foo,
            )],
            ..base("only low priority workload is preempted")
        },
        Case {
            nodes: vec![tas_node(
                "x1",
                "x1",
                &[],
                &[("cpu", "5"), ("memory", "5Gi"), ("pods", "1")],
            )],
            workloads: vec![
                workload(
                    "high-priority-waiting",
                    "tas-main",
                    vec![pod_set("one", 1, preferred(HOST), &[("cpu", "2")])],
                )
                .uid("wl-high-priority-waiting")
                .job_uid("job-high-priority-waiting")
                .priority(3),
                running(
                    "low-priority-admitted",
                    1,
                    1,
                    &[("cpu", "5")],
                    "tas-default",
                    &[("cpu", "5")],
                    &[("x1", 1)],
                )
                .uid("low-priority-admitted-uid"),
            ],
            left: vec![("tas-main", vec!["high-priority-waiting"])],
            pending: vec![("high-priority-waiting", no_cpu_preempting)],
            preempted: vec![(
                "low-priority-admitted",
                PreemptedReason::InClusterQueue,
                leak(in_queue(
                    "wl-high-priority-waiting",
                    "job-high-priority-waiting",
                )),
            )],
            ..base(
                "With pods count usage pressure on nodes: only low priority workload is preempted",
            )
        },
        Case {
            workloads: vec![
                foo(1, preferred(HOST), &[("cpu", "2")]),
                running(
                    "mid-priority-admitted",
                    2,
                    1,
                    &[("cpu", "2")],
                    "tas-default",
                    &[("cpu", "2")],
                    &[("x1", 1)],
                ),
                running(
                    "low-priority-admitted",
                    1,
                    1,
                    &[("cpu", "2")],
                    "tas-default",
                    &[("cpu", "2")],
                    &[("x1", 1)],
                )
                .uid("low-priority-admitted-uid"),
            ],
            left: vec![("tas-main", vec!["foo"])],
            pending: vec![("foo", no_cpu_preempting)],
            preempted: vec![(
                "low-priority-admitted",
                PreemptedReason::InClusterQueue,
                by_foo,
            )],
            ..base("low priority workload is preempted, mid-priority workload survives")
        },
        Case {
            nodes: two_nodes(),
            workloads: vec![
                foo(2, required(HOST), &[("cpu", "1")]),
                running(
                    "mid-priority-admitted",
                    2,
                    1,
                    &[("cpu", "4")],
                    "tas-default",
                    &[("cpu", "4")],
                    &[("x1", 1)],
                ),
                running(
                    "low-priority-admitted",
                    1,
                    1,
                    &[("cpu", "4")],
                    "tas-default",
                    &[("cpu", "4")],
                    &[("y1", 1)],
                )
                .uid("low-priority-admitted-uid"),
            ],
            left: vec![("tas-main", vec!["foo"])],
            pending: vec![(
                "foo",
                "couldn't assign flavors to pod set one: topology \"tas-single-level\" allows to \
                 fit only 1 out of 2 pod(s). Pending the preemption of 1 workload(s)",
            )],
            preempted: vec![(
                "low-priority-admitted",
                PreemptedReason::InClusterQueue,
                by_foo,
            )],
            ..base(
                "low priority workload is preempted even though there is enough capacity, \
                 but fragmented",
            )
        },
        Case {
            workloads: vec![
                workload(
                    "low-priority-which-would-fit",
                    "tas-main",
                    vec![pod_set("one", 1, required(HOST), &[("cpu", "1")])],
                )
                .priority(1),
                workload(
                    "mid-priority-waiting",
                    "tas-main",
                    vec![pod_set("one", 2, required(HOST), &[("cpu", "1")])],
                )
                .priority(2),
                running(
                    "mid-priority-admitted",
                    2,
                    1,
                    &[("cpu", "4")],
                    "tas-default",
                    &[("cpu", "4")],
                    &[("x1", 1)],
                ),
            ],
            left: vec![("tas-main", vec!["low-priority-which-would-fit"])],
            inadmissible: vec![("tas-main", vec!["mid-priority-waiting"])],
            pending: vec![(
                "mid-priority-waiting",
                "couldn't assign flavors to pod set one: topology \"tas-single-level\" allows to \
                 fit only 1 out of 2 pod(s)",
            )],
            ..base("workload with equal priority awaits for other workloads to complete")
        },
        Case {
            nodes: two_nodes(),
            queues: vec![main_queue("10", "10Gi")],
            workloads: vec![
                running(
                    "low-cpu",
                    -1000,
                    2,
                    &[("cpu", "3")],
                    "tas-default",
                    &[("cpu", "6")],
                    &[("x1", 1), ("y1", 1)],
                )
                .uid("wl-low-cpu")
                .job_uid("job-low-cpu"),
                running(
                    "low-mem",
                    -1000,
                    2,
                    &[("cpu", "10m"), ("memory", "5Gi")],
                    "tas-default",
                    &[("cpu", "20m"), ("memory", "10Gi")],
                    &[("x1", 1), ("y1", 1)],
                )
                .uid("wl-low-mem")
                .job_uid("job-low-mem"),
                workload(
                    "high-priority",
                    "tas-main",
                    vec![pod_set(
                        "one",
                        1,
                        required(HOST),
                        &[("cpu", "3"), ("memory", "5Gi")],
                    )],
                )
                .uid("wl-high-priority")
                .job_uid("job-high-priority"),
            ],
            left: vec![("tas-main", vec!["high-priority"])],
            pending: vec![(
                "high-priority",
                "couldn't assign flavors to pod set one: insufficient unused quota for memory in \
                 flavor tas-default, 5Gi more needed. Pending the preemption of 2 workload(s)",
            )],
            preempted: vec![
                (
                    "low-cpu",
                    PreemptedReason::InClusterQueue,
                    leak(in_queue("wl-high-priority", "job-high-priority")),
                ),
                (
                    "low-mem",
                    PreemptedReason::InClusterQueue,
                    leak(in_queue("wl-high-priority", "job-high-priority")),
                ),
            ],
            ..base(
                "preempt in multiple flavors out of which one requires update Fit -> Preempt \
                 due to fragmentation",
            )
        },
        sibling_flavors(),
    ]
}

/// "sibling-flavor usage on the shared node forces same-flavor
/// preemption": two TAS flavors on the same node; what one holds there
/// counts for the other.
fn sibling_flavors() -> Case {
    let tainted = |name: &str, value: &str| {
        let mut f = tas_flavor(name, SINGLE);
        f.node_taints.push(Taint {
            key: "example.com/flavor".into(),
            value: value.into(),
            effect: TaintEffect::NoSchedule,
        });
        f
    };
    let tolerating = |mut w: Workload, value: &str| {
        w.pod_sets[0].tolerations.push(Toleration {
            key: "example.com/flavor".into(),
            operator: TolerationOperator::Equal,
            value: value.into(),
            effect: Some(TaintEffect::NoSchedule),
        });
        w
    };
    let held = |name: &str, uid: &str, flavor: &str, cpu: &str, mem: &str, value: &str| {
        let w = workload(
            name,
            "tas-main",
            vec![pod_set(
                "one",
                1,
                preferred(HOST),
                &[("cpu", cpu), ("memory", mem)],
            )],
        )
        .uid(uid)
        .priority(1)
        .admitted(admission(
            "tas-main",
            vec![psa(
                "one",
                &[("cpu", flavor, cpu), ("memory", flavor, mem)],
                1,
                on_hosts(&[("x1", 1)]),
            )],
        ));
        tolerating(w, value)
    };
    Case {
        flavors: vec![tainted("flavor-a", "a"), tainted("flavor-b", "b")],
        queues: vec![queue(
            "tas-main",
            &[&[
                ("flavor-a", &[("cpu", "5"), ("memory", "5Gi")]),
                ("flavor-b", &[("cpu", "5"), ("memory", "5Gi")]),
            ]],
        )
        .preemption(
            PreemptionPolicy::LowerPriority,
            PreemptionPolicy::Never,
            None,
        )],
        workloads: vec![
            tolerating(
                workload(
                    "w3-pending",
                    "tas-main",
                    vec![pod_set(
                        "one",
                        1,
                        preferred(HOST),
                        &[("cpu", "2"), ("memory", "2Gi")],
                    )],
                )
                .uid("wl-w3")
                .job_uid("job-w3")
                .priority(5),
                "a",
            ),
            held("w1-low-prio-a", "wl-w1", "flavor-a", "1", "1Gi", "a"),
            held("w2-sibling-b", "wl-w2", "flavor-b", "3", "3Gi", "b"),
        ],
        left: vec![("tas-main", vec!["w3-pending"])],
        pending: vec![(
            "w3-pending",
            "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't allow \
             to fit any of 1 pod(s). Total nodes: 1; excluded: resource \"cpu\": 1. Pending the \
             preemption of 1 workload(s)",
        )],
        preempted: vec![(
            "w1-low-prio-a",
            PreemptedReason::InClusterQueue,
            leak(in_queue("wl-w3", "job-w3")),
        )],
        ..base("sibling-flavor usage on the shared node forces same-flavor preemption")
    }
}

#[test]
fn schedule_for_tas_preemption() {
    run_table("TestScheduleForTASPreemption", cases());
}

/// batchgate's own case (not upstream's): with fair sharing on, the
/// preemptor must fit the nodes too (Kueue's `workloadFitsForFairSharing`
/// calls `workloadFits`, topology included). Removing the lowest-priority
/// workload frees the quota but not the node; both go.
#[test]
fn fair_sharing_preemption_fits_the_nodes_too() {
    let half = |name: &str, priority: i32| {
        running(
            name,
            priority,
            1,
            &[("cpu", "2500m")],
            "tas-default",
            &[("cpu", "2500m")],
            &[("x1", 1)],
        )
        .uid(&format!("{name}-uid"))
    };
    let case = Case {
        setup: Some(|e| {
            e.set_fair_sharing(Some(crate::queueing::fair_sharing::FairSharing::default()))
        }),
        workloads: vec![
            foo_preemptor(),
            half("low-priority-admitted", 1),
            half("mid-priority-admitted", 2),
        ],
        left: vec![("tas-main", vec!["foo"])],
        pending: vec![(
            "foo",
            "couldn't assign flavors to pod set one: topology \"tas-single-level\" doesn't \
             allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource \"cpu\": 1. \
             Pending the preemption of 2 workload(s)",
        )],
        preempted: vec![
            (
                "low-priority-admitted",
                PreemptedReason::InClusterQueue,
                leak(in_queue("wl-foo", "job-foo")),
            ),
            (
                "mid-priority-admitted",
                PreemptedReason::InClusterQueue,
                leak(in_queue("wl-foo", "job-foo")),
            ),
        ],
        ..base("fair sharing: TAS-aware preemption")
    };
    run_table("batchgate", vec![case]);
}

/// `foo` asking for the whole of x1 (5 cpu) on one host.
fn foo_preemptor() -> Workload {
    workload(
        "foo",
        "tas-main",
        vec![pod_set("one", 1, required(HOST), &[("cpu", "5")])],
    )
    .uid("wl-foo")
    .job_uid("job-foo")
    .priority(3)
}
