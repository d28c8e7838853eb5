//! Node-failure replacement in the engine (Kueue's second pass,
//! `pkg/scheduler/scheduler.go` with `TASFailedNodeReplacementFailFast`):
//! a Workload admitted on a rack loses a node; the cycle places that
//! node's pods again on the same rack, moves their usage there, and keeps
//! the quota as it was; with no room left on the rack it evicts. The
//! tests at the top are batchgate's own; `upstream` holds the 14
//! `TestScheduleForTAS` second-pass rows ported (the others are listed in
//! `tas_schedule_cases`' header).

use super::*;
use crate::api::kueue::conversion::topology::Domain;
use crate::queueing::topology::{Assignment as Placement, Node};
use crate::queueing::workload::{PodSetAssignment, TopologyRequest};

const HOSTNAME: &str = "kubernetes.io/hostname";
const RACK: &str = "cloud.com/topology-rack";

fn node(name: &str, rack: &str, ready: bool) -> Node {
    Node {
        name: name.into(),
        labels: [
            ("tas-node".to_string(), "true".to_string()),
            (RACK.to_string(), rack.to_string()),
            (HOSTNAME.to_string(), name.to_string()),
        ]
        .into(),
        allocatable: [("cpu".to_string(), 1000), ("pods".to_string(), 10_000)].into(),
        ready,
        ..Default::default()
    }
}

/// Rack r1 holds x1, x2 and x3, rack r2 holds x4; one cpu each. The
/// ClusterQueue has 3 cpus of the TAS flavor.
fn engine() -> Engine {
    let mut e = Engine::new();
    e.upsert_topology("racks", vec![RACK.into(), HOSTNAME.into()]);
    e.upsert_flavor(ResourceFlavor {
        topology_name: Some("racks".into()),
        node_labels: [("tas-node".to_string(), "true".to_string())].into(),
        ..flavor("tas")
    });
    let q = cq("tas-main", None, &[("tas", 3)]);
    e.upsert_local_queue(lq(&q.name));
    e.upsert_cluster_queue(q);
    for (n, r) in [("x1", "r1"), ("x2", "r1"), ("x3", "r1"), ("x4", "r2")] {
        e.sync_node(node(n, r, true));
    }
    e
}

fn on(domains: &[(&str, i64)]) -> Placement {
    Placement {
        levels: vec![HOSTNAME.into()],
        domains: domains
            .iter()
            .map(|(n, c)| Domain {
                values: vec![n.to_string()],
                count: *c,
            })
            .collect(),
    }
}

/// `name`: `count` pods of one cpu required on one rack, admitted on
/// `domains`.
fn admitted_on(name: &str, count: u32, domains: &[(&str, i64)]) -> Workload {
    let mut w = wl(name, "tas-main", 0, 1, 1);
    w.pod_sets[0].count = count;
    w.pod_sets[0].topology = Some(TopologyRequest {
        required: Some(RACK.into()),
        ..Default::default()
    });
    w.admission = Some(Admission {
        cluster_queue: "tas-main".into(),
        pod_set_assignments: vec![PodSetAssignment {
            name: "main".into(),
            flavors: [("cpu".to_string(), "tas".to_string())].into(),
            resource_usage: [("cpu".to_string(), 1000 * i64::from(count))].into(),
            count,
            topology: Some(on(domains)),
        }],
    });
    w
}

fn replaced(c: &Cycle, name: &str) -> Option<Placement> {
    c.decisions.iter().find_map(|d| match d {
        Decision::Replace {
            workload,
            admission,
        } if *workload == key(name) => admission.pod_set_assignments[0].topology.clone(),
        _ => None,
    })
}

/// x1 fails under `foo` (two pods on x1 and x2): the node controller has
/// marked it, the node is NotReady.
fn x1_fails(e: &mut Engine, foo: &Workload) {
    e.sync_node(node("x1", "r1", false));
    let mut marked = foo.clone();
    marked.unhealthy_nodes = vec!["x1".into()];
    e.upsert_workload(marked);
}

#[test]
fn a_failed_nodes_pods_move_within_the_rack_and_the_quota_stays() {
    let mut e = engine();
    let foo = admitted_on("foo", 2, &[("x1", 1), ("x2", 1)]);
    e.upsert_workload(foo.clone());
    assert!(run(&mut e, 1).decisions.is_empty());
    x1_fails(&mut e, &foo);
    let c = run(&mut e, 2);
    assert_eq!(replaced(&c, "foo"), Some(on(&[("x2", 1), ("x3", 1)])));
    assert_eq!(c.decisions.len(), 1, "{:?}", c.decisions);
    // Once: the replacement holds while its write is under way.
    assert!(run(&mut e, 3).decisions.is_empty());

    // The pod moved to x3 holds it; x1 is down: a one-pod workload fits
    // on x4 only, and under the quota (2 of 3 cpus held, not 4).
    let mut bar = wl("bar", "tas-main", 0, 5, 1);
    bar.pod_sets[0].topology = Some(TopologyRequest {
        required: Some(HOSTNAME.into()),
        ..Default::default()
    });
    e.upsert_workload(bar);
    let c = run(&mut e, 4);
    assert_eq!(admitted(&c), [key("bar")]);
    let bar_on = admission_of(&c, "bar").pod_set_assignments[0]
        .topology
        .clone();
    assert_eq!(bar_on, Some(on(&[("x4", 1)])));
}

#[test]
fn the_replacement_written_back_is_taken_as_ours() {
    let mut e = engine();
    let foo = admitted_on("foo", 2, &[("x1", 1), ("x2", 1)]);
    e.upsert_workload(foo.clone());
    run(&mut e, 1);
    x1_fails(&mut e, &foo);
    run(&mut e, 2);
    // An update written before ours lands (unhealthyNodes still set, the
    // old assignment): ours stands, nothing is decided again.
    let mut stale = foo.clone();
    stale.unhealthy_nodes = vec!["x1".into()];
    stale.readiness.pods_ready = Some(false);
    e.upsert_workload(stale);
    assert!(run(&mut e, 3).decisions.is_empty());
    // Ours lands: the list cleared, the new assignment.
    let written = admitted_on("foo", 2, &[("x2", 1), ("x3", 1)]);
    e.upsert_workload(written);
    assert!(run(&mut e, 4).decisions.is_empty());
}

#[test]
fn a_refused_replacement_restores_the_old_assignment() {
    let mut e = engine();
    let foo = admitted_on("foo", 2, &[("x1", 1), ("x2", 1)]);
    e.upsert_workload(foo.clone());
    run(&mut e, 1);
    x1_fails(&mut e, &foo);
    run(&mut e, 2);
    e.refuse_replacement(&key("foo"));
    // Tried again on the Workload's next update.
    let mut again = foo.clone();
    again.unhealthy_nodes = vec!["x1".into()];
    again.readiness.pods_ready = Some(false);
    e.upsert_workload(again);
    let c = run(&mut e, 3);
    assert_eq!(replaced(&c, "foo"), Some(on(&[("x2", 1), ("x3", 1)])));
}

#[test]
fn no_room_left_on_the_rack_evicts_with_node_failures() {
    let mut e = engine();
    let foo = admitted_on("foo", 2, &[("x1", 1), ("x2", 1)]);
    let other = admitted_on("other", 1, &[("x3", 1)]);
    e.upsert_workload(foo.clone());
    e.upsert_workload(other);
    run(&mut e, 1);
    x1_fails(&mut e, &foo);
    let c = run(&mut e, 2);
    assert_eq!(
        evictions(&c),
        [(
            key("foo"),
            EvictionReason::NodeFailures,
            "Workload was evicted as there was no replacement for unhealthy node(s): x1"
                .to_string(),
            None
        )]
    );
    assert_eq!(replaced(&c, "foo"), None);
}

#[test]
fn a_workload_owned_by_a_single_pod_keeps_its_assignment() {
    let mut e = engine();
    let mut foo = admitted_on("foo", 2, &[("x1", 1), ("x2", 1)]);
    foo.single_pod_owned = true;
    e.upsert_workload(foo.clone());
    run(&mut e, 1);
    x1_fails(&mut e, &foo);
    let c = run(&mut e, 2);
    assert_eq!(replaced(&c, "foo"), Some(on(&[("x1", 1), ("x2", 1)])));
}

mod upstream {
    //! Kueue v0.19.2's `TestScheduleForTAS` second-pass rows that run with
    //! the default gates, in the `tas_table` form (`wantNewAssignments`
    //! of a second pass is the `Replace` decision's admission; the FailFast
    //! row's unchanged admission is its `NodeFailures` eviction instead).
    //! Node x0 of these rows is in no node list: it is gone. The others are
    //! named in `tas_schedule_cases`' header with why they are not here.

    use super::super::tas_table::*;
    use super::super::*;

    const THREE: &str = "tas-three-level";
    const SINGLE: &str = "tas-single-level";

    /// `defaultNodes`: b1/r1: x1; b1/r2: x2, x3, x4; b2/r1: x5 (1 cpu
    /// each); b2/r2: x6 (2 cpu).
    fn default_nodes() -> Vec<crate::queueing::topology::Node> {
        let n = |name: &str, host: &str, block: &str, rack: &str, cpu: &str, mem: &str, pods| {
            tas_node(
                name,
                host,
                &[(BLOCK, block), (RACK, rack)],
                &[("cpu", cpu), ("memory", mem), ("pods", pods)],
            )
        };
        vec![
            n("b1-r1-x1", "x1", "b1", "r1", "1", "1Gi", "10"),
            n("b1-r2-x2", "x2", "b1", "r2", "1", "1Gi", "10"),
            n("b1-r2-x3", "x3", "b1", "r2", "1", "1Gi", "10"),
            n("b1-r2-x4", "x4", "b1", "r2", "1", "1Gi", "10"),
            n("b2-r2-x5", "x5", "b2", "r1", "1", "1Gi", "10"),
            n("b2-r2-x6", "x6", "b2", "r2", "2", "4Gi", "40"),
        ]
    }

    /// foo, admitted on `domains` with pod set `one` of `count` pods of
    /// `cpu`, x0 in its `unhealthyNodes`.
    fn foo(
        count: u32,
        topology: Option<crate::queueing::workload::TopologyRequest>,
        cpu: &str,
        reserved: &str,
        domains: &[(&str, i64)],
    ) -> Workload {
        let mut w = workload(
            "foo",
            "tas-main",
            vec![pod_set("one", count, topology, &[("cpu", cpu)])],
        );
        w.unhealthy_nodes = vec!["x0".into()];
        w.admission = Some(admission(
            "tas-main",
            vec![psa(
                "one",
                &[("cpu", "tas-default", reserved)],
                count,
                on_hosts(domains),
            )],
        ));
        w
    }

    fn now_on(count: u32, reserved: &str, domains: &[(&str, i64)]) -> Admission {
        admission(
            "tas-main",
            vec![psa(
                "one",
                &[("cpu", "tas-default", reserved)],
                count,
                on_hosts(domains),
            )],
        )
    }

    fn case(name: &'static str, wl: Workload) -> Case {
        Case {
            name,
            topologies: vec![(SINGLE, vec![HOST]), (THREE, vec![BLOCK, RACK, HOST])],
            flavors: vec![tas_flavor("tas-default", THREE)],
            queues: vec![queue(
                "tas-main",
                &[&[("tas-default", &[("cpu", "50"), ("memory", "50Gi")])]],
            )],
            nodes: default_nodes(),
            workloads: vec![wl],
            ..Default::default()
        }
    }

    /// `x{i}`: 1 cpu, 10 pods, hostname only.
    fn host(i: u32) -> crate::queueing::topology::Node {
        let name = format!("x{i}");
        tas_node(&name, &name, &[], &[("cpu", "1"), ("pods", "10")])
    }

    /// A request of `level` (required or preferred) in slices of `size`
    /// pods within one `slice_level` domain.
    fn sliced(
        required: bool,
        level: &str,
        size: i32,
        slice_level: &str,
    ) -> Option<crate::queueing::workload::TopologyRequest> {
        let mut t = if required {
            super::super::tas_table::required(level)
        } else {
            preferred(level)
        }?;
        t.slice_required = Some(slice_level.into());
        t.slice_size = Some(size);
        Some(t)
    }

    /// A slices row: foo of `count` pods of `cpu`, `reserved` in all, on
    /// `before`, with `failed` in its `unhealthyNodes`; `after` is
    /// upstream's new assignment.
    #[allow(clippy::too_many_arguments)]
    fn slice_row(
        name: &'static str,
        failed: &str,
        count: u32,
        topology: Option<crate::queueing::workload::TopologyRequest>,
        cpu: &str,
        reserved: &str,
        before: &[(&str, i64)],
        after: &[(&str, i64)],
    ) -> Case {
        let mut w = foo(count, topology, cpu, reserved, before);
        w.unhealthy_nodes = vec![failed.into()];
        Case {
            admitted: vec![("foo", now_on(count, reserved, after))],
            ..case(name, w)
        }
    }

    fn cases() -> Vec<Case> {
        let single = |name: &str, cpu: &str| {
            workload(
                name,
                "tas-main",
                vec![pod_set("one", 1, required(HOST), &[("cpu", cpu)])],
            )
        };
        let mut replaced = single("replaced", "1");
        replaced.unhealthy_nodes = vec!["x1".into()];
        replaced.admission = Some(now_on(1, "1", &[("x1", 1)]));
        let two_sets = |one: &str| {
            admission(
                "tas-main",
                vec![
                    psa(
                        "one",
                        &[("cpu", "tas-default", "1000m")],
                        1,
                        on_hosts(&[(one, 1)]),
                    ),
                    psa(
                        "two",
                        &[("cpu", "tas-default", "1000m")],
                        1,
                        on_hosts(&[("x1", 1)]),
                    ),
                ],
            )
        };
        let mut two_pod_sets = workload(
            "foo",
            "tas-main",
            vec![
                pod_set("one", 1, preferred(HOST), &[("cpu", "1")]),
                pod_set("two", 1, preferred(HOST), &[("cpu", "1")]),
            ],
        );
        two_pod_sets.unhealthy_nodes = vec!["x0".into()];
        two_pod_sets.admission = Some(two_sets("x0"));
        vec![
            Case {
                node_failures: vec![(
                    "foo",
                    "Workload was evicted as there was no replacement for unhealthy node(s): x0",
                )],
                ..case(
                    "workload with unhealthyNode annotation; second pass; preferred; no fit when using slices; FailFast",
                    foo(2, sliced(false, BLOCK, 2, RACK), "1", "2000m", &[("x0", 1), ("x1", 1)]),
                )
            },
            slice_row(
                "workload with unhealthyNode; second pass; slices; baseline",
                "x2",
                2,
                sliced(false, BLOCK, 2, RACK),
                "1",
                "2000m",
                &[("x2", 1), ("x3", 1)],
                &[("x3", 1), ("x4", 1)],
            ),
            slice_row(
                "workload with unhealthyNode; second pass; slices; unhealthy node hosts incomplete slice",
                "x2",
                8,
                sliced(false, BLOCK, 8, RACK),
                "250m",
                "2000m",
                &[("x2", 4), ("x3", 4)],
                &[("x3", 4), ("x4", 4)],
            ),
            slice_row(
                "workload with unhealthyNode; second pass; slices; unhealthy node hosts whole slices",
                "x3",
                12,
                sliced(true, BLOCK, 4, RACK),
                "250m",
                "3000m",
                &[("x2", 4), ("x3", 4), ("x4", 4)],
                &[("x1", 4), ("x2", 4), ("x4", 4)],
            ),
            slice_row(
                "workload with unhealthyNode; second pass; slices; unhealthy node hosts whole slice and incomplete slice",
                "x1",
                8,
                sliced(true, BLOCK, 2, RACK),
                "200m",
                "1600m",
                &[("x1", 3), ("x2", 5)],
                &[("x2", 5), ("x3", 3)],
            ),
            slice_row(
                "workload with unhealthyNode; second pass; slices; unhealthy node hosts the whole workload",
                "x1",
                4,
                sliced(true, RACK, 2, HOST),
                "250m",
                "1000m",
                &[("x1", 4)],
                &[("x5", 4)],
            ),
            slice_row(
                "workload with unhealthyNode; second pass; slices; finds correct slice domain",
                "x7",
                8,
                sliced(false, BLOCK, 4, BLOCK),
                "500m",
                "4000m",
                &[("x1", 2), ("x3", 2), ("x5", 2), ("x7", 2)],
                &[("x1", 2), ("x3", 2), ("x5", 2), ("x6", 2)],
            ),
            Case {
                admitted: vec![("foo", two_sets("x2"))],
                ..case(
                    "workload with unhealthyNode annotation; second pass; two podsets",
                    two_pod_sets,
                )
            },
            Case {
                name: "second pass replacement must not take a domain claimed by another workload in the same cycle",
                topologies: vec![(SINGLE, vec![HOST]), (THREE, vec![BLOCK, RACK, HOST])],
                flavors: vec![tas_flavor("tas-default", SINGLE)],
                queues: vec![queue(
                    "tas-main",
                    &[&[("tas-default", &[("cpu", "50"), ("memory", "50Gi")])]],
                )],
                nodes: vec![host(1), host(2), host(3)],
                workloads: vec![replaced, single("contender", "1")],
                admitted: vec![
                    ("replaced", now_on(1, "1", &[("x2", 1)])),
                    ("contender", now_on(1, "1", &[("x3", 1)])),
                ],
                ..Default::default()
            },
            Case {
                admitted: vec![("foo", now_on(1, "1000m", &[("x1", 1)]))],
                ..case(
                    "workload with unhealthyNode annotation; second pass; baseline scenario",
                    foo(1, preferred(HOST), "1", "1000m", &[("x0", 1)]),
                )
            },
            Case {
                admitted: vec![("foo", now_on(2, "1000m", &[("x1", 2)]))],
                ..case(
                    "workload with unhealthyNode annotation; second pass; preferred; fit in different rack",
                    foo(2, preferred(RACK), "500m", "1000m", &[("x0", 1), ("x1", 1)]),
                )
            },
            Case {
                node_failures: vec![(
                    "foo",
                    "Workload was evicted as there was no replacement for unhealthy node(s): x0",
                )],
                ..case(
                    "workload with unhealthyNode annotation; second pass; preferred; no fit; FailFast",
                    foo(1, preferred(RACK), "3", "3000m", &[("x0", 1)]),
                )
            },
            Case {
                admitted: vec![("foo", now_on(2, "1000m", &[("x2", 1), ("x3", 1)]))],
                ..case(
                    "workload with unhealthyNode annotation; second pass; required rack; fit",
                    foo(2, required(RACK), "1", "1000m", &[("x0", 1), ("x2", 1)]),
                )
            },
            Case {
                admitted: vec![("foo", now_on(1, "1000m", &[("x1", 1)]))],
                ..case(
                    "workload with unhealthyNode annotation; second pass; required rack for a single node; fit",
                    foo(1, required(RACK), "1", "1000m", &[("x0", 1)]),
                )
            },
        ]
    }

    #[test]
    fn schedule_for_tas_second_pass() {
        run_table("TestScheduleForTAS", cases());
    }
}
