//! Topology-aware scheduling in the engine: which flavor a pod set may take
//! (Kueue's `checkPodSetAndFlavorMatchForTAS`), implied TAS for queues of
//! TAS flavors only, a queue whose TAS flavor has no Topology, and the
//! topology assignment an admission carries. Cases cite Kueue v0.19.2
//! `pkg/scheduler/scheduler_tas_test.go` `TestScheduleForTAS` (with its
//! fixtures: node x1 labelled `tas-node: "true"`, 1 cpu, 10 pods) and
//! `pkg/cache/scheduler/clusterqueue_test.go`. The rest of the file's
//! tables, in table form: `tas_schedule_cases`, `tas_preemption_cases`,
//! `tas_cohort_cases` (vocabulary in `tas_table`).

use super::*;
use crate::queueing::workload::{PodSetAssignment, TopologyRequest};

const HOSTNAME: &str = "kubernetes.io/hostname";

fn tas_flavor(name: &str, topology: &str) -> ResourceFlavor {
    ResourceFlavor {
        topology_name: Some(topology.into()),
        node_labels: [("tas-node".to_string(), "true".to_string())].into(),
        ..flavor(name)
    }
}

/// Upstream's `defaultSingleNode`, with `extra` labels.
fn node_x1(extra: &[(&str, &str)]) -> crate::queueing::topology::Node {
    let mut labels: BTreeMap<String, String> = [
        ("tas-node".to_string(), "true".to_string()),
        (HOSTNAME.to_string(), "x1".to_string()),
    ]
    .into();
    labels.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    crate::queueing::topology::Node {
        name: "x1".into(),
        labels,
        allocatable: [
            ("cpu".to_string(), 1000),
            ("memory".to_string(), 1 << 30 << 10),
            ("pods".to_string(), 10_000),
        ]
        .into(),
        ready: true,
        ..Default::default()
    }
}

/// The topology assignment of pod set `i` of an admitted workload.
/// Levels, and each domain's values and pods.
type Placed = (Vec<String>, Vec<(Vec<String>, i64)>);

fn placed(c: &Cycle, name: &str, i: usize) -> Option<Placed> {
    admission_of(c, name).pod_set_assignments[i]
        .topology
        .as_ref()
        .map(|t| {
            (
                t.levels.clone(),
                t.domains
                    .iter()
                    .map(|d| (d.values.clone(), d.count))
                    .collect(),
            )
        })
}

fn on_x1() -> Option<Placed> {
    Some((vec![HOSTNAME.into()], vec![(vec!["x1".into()], 1)]))
}

fn required(level: &str) -> Option<TopologyRequest> {
    Some(TopologyRequest {
        required: Some(level.into()),
        ..Default::default()
    })
}

/// The engine of the upstream cases: a one-level Topology `tas-single-level`
/// (hostname), `tas-default` on it, and the plain `default`.
fn tas_engine(flavors: &[&str], queue: ClusterQueue) -> Engine {
    let mut e = Engine::new();
    e.upsert_topology("tas-single-level", vec![HOSTNAME.into()]);
    for f in flavors {
        e.upsert_flavor(match *f {
            "tas-default" => tas_flavor(f, "tas-single-level"),
            _ => flavor(f),
        });
    }
    e.upsert_local_queue(lq(&queue.name));
    e.upsert_cluster_queue(queue);
    e.sync_node(node_x1(&[]));
    e
}

fn with_pod_sets(mut w: Workload, sets: &[(&str, Option<TopologyRequest>)]) -> Workload {
    let template = w.pod_sets[0].clone();
    w.pod_sets = sets
        .iter()
        .map(|(name, topology)| PodSet {
            name: (*name).into(),
            topology: topology.clone(),
            ..template.clone()
        })
        .collect();
    w
}

fn flavors_of(c: &Cycle, name: &str) -> Vec<String> {
    admission_of(c, name)
        .pod_set_assignments
        .iter()
        .map(|p| p.flavors["cpu"].clone())
        .collect()
}

#[test]
fn workload_requiring_tas_skips_the_non_tas_flavor() {
    let mut e = tas_engine(
        &["default", "tas-default"],
        cq("tas-main", None, &[("default", 50), ("tas-default", 50)]),
    );
    e.upsert_workload(with_pod_sets(
        wl("foo", "tas-main", 0, 1, 1),
        &[("one", required(HOSTNAME))],
    ));
    let c = run(&mut e, 10);
    assert_eq!(flavors_of(&c, "foo"), ["tas-default"]);
    assert_eq!(placed(&c, "foo", 0), on_x1());
}

#[test]
fn workload_which_does_not_need_tas_skips_the_tas_flavor() {
    let mut e = tas_engine(
        &["default", "tas-default"],
        cq("tas-main", None, &[("tas-default", 50), ("default", 50)]),
    );
    e.upsert_workload(wl("foo", "tas-main", 0, 1, 1));
    assert_eq!(
        flavor_of(&run(&mut e, 10), "foo").as_deref(),
        Some("default")
    );
}

#[test]
fn workload_with_mixed_pod_sets_requiring_tas_and_not() {
    let mut e = tas_engine(
        &["default", "tas-default"],
        cq("tas-main", None, &[("tas-default", 50), ("default", 50)]),
    );
    e.upsert_workload(with_pod_sets(
        wl("foo", "tas-main", 0, 1, 1),
        &[("launcher", None), ("worker", required(HOSTNAME))],
    ));
    let c = run(&mut e, 10);
    assert_eq!(flavors_of(&c, "foo"), ["default", "tas-default"]);
    assert_eq!(placed(&c, "foo", 0), None);
    assert_eq!(placed(&c, "foo", 1), on_x1());
}

#[test]
fn workload_requests_topology_level_which_is_not_present_in_topology() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    e.upsert_workload(with_pod_sets(
        wl("foo", "tas-main", 0, 1, 1),
        &[("one", required("cloud.com/non-existing"))],
    ));
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty());
    assert_eq!(
        pending(&c, "foo").map(|p| p.1),
        Some(
            "couldn't assign flavors to pod set one: \
             Flavor \"tas-default\" does not contain the requested level"
                .to_string()
        )
    );
}

#[test]
fn workload_requests_topology_level_which_is_only_present_in_second_flavor() {
    let mut e = tas_engine(
        &["tas-default"],
        cq(
            "tas-main",
            None,
            &[("tas-default", 50), ("tas-custom-flavor", 50)],
        ),
    );
    e.upsert_flavor(tas_flavor("tas-custom-flavor", "tas-custom-topology"));
    e.upsert_topology("tas-custom-topology", vec!["cloud.com/custom-level".into()]);
    e.sync_node(node_x1(&[("cloud.com/custom-level", "x1")]));
    e.upsert_workload(with_pod_sets(
        wl("foo", "tas-main", 0, 1, 1),
        &[("one", required("cloud.com/custom-level"))],
    ));
    let c = run(&mut e, 10);
    assert_eq!(flavors_of(&c, "foo"), ["tas-custom-flavor"]);
    assert_eq!(
        placed(&c, "foo", 0),
        Some((
            vec!["cloud.com/custom-level".to_string()],
            vec![(vec!["x1".to_string()], 1)]
        ))
    );
}

/// "workload does not get scheduled as it does not fit within the node
/// capacity": 2 pods of 1 cpu on a node of 1 cpu; the message is Kueue's.
#[test]
fn workload_does_not_get_scheduled_as_it_does_not_fit_within_the_node_capacity() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    let mut w = with_pod_sets(
        wl("foo", "tas-main", 0, 1, 1),
        &[("one", required(HOSTNAME))],
    );
    w.pod_sets[0].count = 2;
    e.upsert_workload(w);
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty());
    assert_eq!(
        pending(&c, "foo").map(|p| p.1),
        Some(
            "couldn't assign flavors to pod set one: topology \"tas-single-level\" \
             allows to fit only 1 out of 2 pod(s)"
                .to_string()
        )
    );
}

/// The second workload of a cycle sees the first one's placement (Kueue's
/// recompute within a cycle); once the first is gone, a new node view
/// lets the second in.
#[test]
fn a_placement_sees_what_the_cycle_admitted_before_it_and_a_restart_rebuilds_it() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    for (name, created) in [("a", 1), ("b", 2)] {
        e.upsert_workload(with_pod_sets(
            wl(name, "tas-main", 0, created, 1),
            &[("one", required(HOSTNAME))],
        ));
    }
    let c = run(&mut e, 10);
    assert_eq!(admitted(&c), [key("a")]);
    let admission = admission_of(&c, "a");
    assert!(pending(&c, "b")
        .map(|p| p.1)
        .is_some_and(|m| m.contains("doesn't allow to fit any of 1 pod(s)")));

    // A restart: the engine is rebuilt from the API, `a` holding its
    // admission with its topology assignment; `b` still does not fit.
    let mut running = with_pod_sets(wl("a", "tas-main", 0, 1, 1), &[("one", required(HOSTNAME))]);
    running.admission = Some(admission);
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    e.upsert_workload(running);
    e.upsert_workload(with_pod_sets(
        wl("b", "tas-main", 0, 2, 1),
        &[("one", required(HOSTNAME))],
    ));
    assert!(admitted(&run(&mut e, 20)).is_empty());

    // A second node: `b` goes there.
    let mut x2 = node_x1(&[]);
    x2.name = "x2".into();
    x2.labels.insert(HOSTNAME.into(), "x2".into());
    e.sync_node(x2);
    let c = run(&mut e, 21);
    assert_eq!(admitted(&c), [key("b")]);
    assert_eq!(
        placed(&c, "b", 0),
        Some((
            vec![HOSTNAME.to_string()],
            vec![(vec!["x2".to_string()], 1)]
        ))
    );
}

/// Implied TAS (`isTASImplied`): in a queue of TAS flavors only, a pod set
/// that asks for no topology is a TAS pod set, so it is taken; in a mixed
/// queue it is refused by the TAS flavor.
#[test]
fn a_queue_of_tas_flavors_only_implies_tas_for_a_plain_pod_set() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    e.upsert_workload(wl("foo", "tas-main", 0, 1, 1));
    assert_eq!(
        flavor_of(&run(&mut e, 10), "foo").as_deref(),
        Some("tas-default")
    );

    let mut e = tas_engine(
        &["default", "tas-default"],
        cq("tas-main", None, &[("tas-default", 50), ("default", 1)]),
    );
    e.upsert_workload(wl("big", "tas-main", 0, 1, 2));
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty());
    let why = pending(&c, "big").map(|p| p.1).unwrap_or_default();
    assert!(
        why.contains("Flavor \"tas-default\" supports only TopologyAwareScheduling"),
        "{why}"
    );
}

/// A plain flavor next to a TAS one still gives a TAS pod set the
/// resources the TAS flavor's group does not cover.
#[test]
fn a_plain_flavor_covering_none_of_the_requests_is_no_mismatch() {
    let f = flavor("default");
    let mut ps = wl("foo", "q", 0, 1, 1).pod_sets.remove(0);
    ps.topology = required(HOSTNAME);
    assert_eq!(f.tas_mismatch(&ps, false, &["memory".into()]), None);
    assert_eq!(
        f.tas_mismatch(&ps, false, &["cpu".into()]).as_deref(),
        Some("Flavor \"default\" does not support TopologyAwareScheduling")
    );
}

/// `TestClusterQueueReadinessWithTAS` "Referenced TAS flavor without
/// topology": the queue is inactive until its Topology exists.
#[test]
fn referenced_tas_flavor_without_topology() {
    let mut e = Engine::new();
    e.upsert_flavor(tas_flavor("tas-flavor", "example-topology"));
    e.upsert_local_queue(lq("cq"));
    e.upsert_cluster_queue(cq("cq", None, &[("tas-flavor", 10)]));
    e.upsert_workload(wl("a", "cq", 0, 1, 1));
    assert!(admitted(&run(&mut e, 10)).is_empty());
    let st = e.cluster_queue_status("cq").unwrap().active;
    assert_eq!(
        (st.status, st.reason, st.message.as_str()),
        (
            false,
            "TopologyNotFound",
            "Can't admit new workloads: there is no Topology \"example-topology\" \
             for TAS flavor \"tas-flavor\"."
        )
    );
    e.upsert_topology("example-topology", vec![HOSTNAME.into()]);
    e.sync_node(node_x1(&[]));
    assert!(e.cluster_queue_status("cq").unwrap().active.status);
    assert_eq!(admitted(&run(&mut e, 11)), [key("a")]);
    e.delete_topology("example-topology");
    assert_eq!(
        e.cluster_queue_status("cq").unwrap().active.reason,
        "TopologyNotFound"
    );
}

/// A MultiKueue queue places pods on its workers: no Topology needed here
/// (`isTASViolated`).
#[test]
fn a_multikueue_queue_does_not_need_the_topology() {
    let mut e = Engine::new();
    e.upsert_flavor(tas_flavor("tas-flavor", "example-topology"));
    e.upsert_cluster_queue(cq("cq", None, &[("tas-flavor", 10)]));
    e.set_admission_checks(BTreeMap::from([(
        "mk".to_string(),
        crate::queueing::admission_checks::CheckInfo {
            controller: "kueue.x-k8s.io/multikueue".into(),
            active: true,
        },
    )]));
    e.set_cluster_queue_checks("cq", vec![("mk".into(), vec![])]);
    assert!(e.cluster_queue_status("cq").unwrap().active.status);
}

/// Upstream's `defaultClusterQueue`: tas-default with 50 cpu and 50Gi.
fn tas_main() -> ClusterQueue {
    let mut q = cq("tas-main", None, &[("tas-default", 50)]);
    q.resource_groups[0].covered_resources.push("memory".into());
    q.resource_groups[0].flavors[0]
        .resources
        .push(ResourceQuota {
            name: "memory".into(),
            nominal: 50 << 30 << 10,
            borrowing_limit: None,
            lending_limit: None,
        });
    q
}

/// `bar-admitted` of the upstream cases: holds `count` pods of `cpu`
/// milli-cpu on node x1 of tas-default.
fn bar_admitted(count: u32, cpu: i64) -> Workload {
    let mut w = with_pod_sets(
        wl("bar-admitted", "tas-main", 0, 0, 1),
        &[("one", required(HOSTNAME))],
    );
    w.pod_sets[0].count = count;
    w.pod_sets[0].requests = [("cpu".to_string(), cpu)].into();
    w.admission = Some(Admission {
        cluster_queue: "tas-main".into(),
        pod_set_assignments: vec![PodSetAssignment {
            name: "one".into(),
            flavors: [("cpu".to_string(), "tas-default".to_string())].into(),
            resource_usage: [("cpu".to_string(), cpu * i64::from(count))].into(),
            count,
            topology: Some(crate::queueing::topology::Assignment {
                levels: vec![HOSTNAME.into()],
                domains: vec![crate::api::kueue::conversion::topology::Domain {
                    values: vec!["x1".into()],
                    count: i64::from(count),
                }],
            }),
        }],
    });
    w
}

/// `foo`: one pod set `one` of `count` pods of `cpu` milli-cpu.
fn foo(count: u32, cpu: i64, topology: Option<TopologyRequest>) -> Workload {
    let mut w = with_pod_sets(wl("foo", "tas-main", 0, 1, 1), &[("one", topology)]);
    w.pod_sets[0].count = count;
    w.pod_sets[0].requests = [("cpu".to_string(), cpu)].into();
    w
}

fn non_tas_pod(cpu: i64) -> Option<crate::queueing::nodes::PodUsage> {
    Some(crate::queueing::nodes::PodUsage {
        node: "x1".into(),
        requests: [("cpu".to_string(), cpu)].into(),
    })
}

fn why_pending(c: &Cycle, name: &str) -> String {
    pending(c, name).map(|p| p.1).unwrap_or_default()
}

const NO_CPU: &str = "couldn't assign flavors to pod set one: topology \"tas-single-level\" \
                      doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource \"cpu\": 1";

#[test]
fn workload_does_not_get_scheduled_as_the_node_capacity_is_already_used_by_another_tas_workload() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    e.upsert_workload(bar_admitted(1, 1000));
    e.upsert_workload(foo(1, 1000, required(HOSTNAME)));
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty());
    assert_eq!(why_pending(&c, "foo"), NO_CPU);
}

#[test]
fn workload_does_not_get_scheduled_as_the_node_capacity_is_already_used_by_a_non_tas_pod() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    // Pending but bound: it counts (Kueue's non-TAS usage skips only
    // finished pods).
    e.update_pod_usage("test-ns/test-pending", non_tas_pod(600));
    e.upsert_workload(foo(1, 1000, required(HOSTNAME)));
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty());
    assert_eq!(why_pending(&c, "foo"), NO_CPU);
    // The pod goes: the workload is tried again and fits.
    e.update_pod_usage("test-ns/test-pending", None);
    assert_eq!(admitted(&run(&mut e, 11)), [key("foo")]);
}

#[test]
fn workload_does_not_get_scheduled_as_node_capacity_is_completely_used_by_non_tas_pod() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    let mut x1 = node_x1(&[]);
    x1.allocatable.insert("pods".into(), 1000);
    e.sync_node(x1);
    e.update_pod_usage(
        "test-ns/test-pending",
        Some(crate::queueing::nodes::PodUsage {
            node: "x1".into(),
            requests: [
                ("cpu".to_string(), 1000),
                ("memory".to_string(), 1 << 30 << 10),
            ]
            .into(),
        }),
    );
    e.upsert_workload(foo(1, 1000, required(HOSTNAME)));
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty());
    assert_eq!(why_pending(&c, "foo"), NO_CPU);
}

#[test]
fn workload_gets_admitted_next_to_already_admitted_workload_multiple_resources_used() {
    let mut e = tas_engine(&["tas-default"], tas_main());
    let mut bar = bar_admitted(1, 500);
    bar.pod_sets[0].requests = [
        ("cpu".to_string(), 500),
        ("memory".to_string(), 500 << 20 << 10),
    ]
    .into();
    e.upsert_workload(bar);
    let mut w = foo(1, 500, required(HOSTNAME));
    w.pod_sets[0].requests = [
        ("cpu".to_string(), 500),
        ("memory".to_string(), 500 << 20 << 10),
    ]
    .into();
    e.upsert_workload(w);
    let c = run(&mut e, 10);
    assert_eq!(placed(&c, "foo", 0), on_x1());
}

#[test]
fn scheduling_workload_when_the_node_for_another_admitted_workload_is_deleted() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    e.delete_node("x1");
    let mut y1 = node_x1(&[]);
    y1.name = "y1".into();
    y1.labels.insert(HOSTNAME.into(), "y1".into());
    e.sync_node(y1);
    e.upsert_workload(bar_admitted(1, 1000));
    let preferred = Some(TopologyRequest {
        preferred: Some(HOSTNAME.into()),
        ..Default::default()
    });
    e.upsert_workload(foo(1, 1000, preferred));
    let c = run(&mut e, 10);
    assert_eq!(
        placed(&c, "foo", 0),
        Some((
            vec![HOSTNAME.to_string()],
            vec![(vec!["y1".to_string()], 1)]
        ))
    );
}

#[test]
fn scheduling_workload_on_a_tainted_node_when_the_toleration_is_on_resource_flavor() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    let mut x1 = node_x1(&[]);
    x1.taints.push(Taint {
        key: "example.com/gpu".into(),
        value: "present".into(),
        effect: TaintEffect::NoSchedule,
    });
    e.sync_node(x1);
    e.upsert_workload(foo(
        1,
        1000,
        Some(TopologyRequest {
            preferred: Some(HOSTNAME.into()),
            ..Default::default()
        }),
    ));
    // Without the flavor's toleration the node is excluded.
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty(), "{:?}", c.decisions);
    let mut f = tas_flavor("tas-default", "tas-single-level");
    f.tolerations.push(Toleration {
        key: "example.com/gpu".into(),
        operator: TolerationOperator::Exists,
        value: String::new(),
        effect: None,
    });
    e.upsert_flavor(f);
    assert_eq!(placed(&run(&mut e, 11), "foo", 0), on_x1());
}

#[test]
fn tas_workload_gets_scheduled_as_trimmed_by_partial_admission() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    let mut w = foo(5, 1000, required(HOSTNAME));
    w.pod_sets[0].min_count = Some(1);
    e.upsert_workload(w);
    let c = run(&mut e, 10);
    let a = admission_of(&c, "foo");
    assert_eq!(a.pod_set_assignments[0].count, 1);
    assert_eq!(placed(&c, "foo", 0), on_x1());
}

#[test]
fn workload_does_not_get_scheduled_as_the_node_capacity_pods_is_already_used_by_non_tas_and_tas_workloads(
) {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    let mut x1 = node_x1(&[]);
    x1.allocatable = [("cpu".to_string(), 1000), ("pods".to_string(), 3000)].into();
    e.sync_node(x1);
    e.update_pod_usage("test-ns/test-running", non_tas_pod(300));
    e.upsert_workload(bar_admitted(2, 150));
    e.upsert_workload(foo(1, 300, required(HOSTNAME)));
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty());
    assert_eq!(
        why_pending(&c, "foo"),
        "couldn't assign flavors to pod set one: topology \"tas-single-level\" \
         doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource \"pods\": 1"
    );
}

#[test]
fn workload_with_zero_value_request_gets_scheduled() {
    let mut e = tas_engine(&["tas-default"], tas_main());
    let mut w = foo(1, 0, None);
    w.pod_sets[0].requests = [
        ("cpu".to_string(), 0),
        ("memory".to_string(), 10 << 20 << 10),
    ]
    .into();
    e.upsert_workload(w);
    let c = run(&mut e, 10);
    assert_eq!(placed(&c, "foo", 0), on_x1());
}

/// The per-flavor TAS usage index follows holds and releases: a node
/// filled by one workload takes the next only once the first is gone, and
/// the index always equals a walk over the holders.
#[test]
fn the_tas_usage_index_is_taken_back_on_release() {
    let mut e = tas_engine(
        &["tas-default"],
        cq("tas-main", None, &[("tas-default", 50)]),
    );
    for (name, created) in [("foo", 1), ("bar", 2)] {
        e.upsert_workload(with_pod_sets(
            wl(name, "tas-main", 0, created, 1),
            &[("one", required(HOSTNAME))],
        ));
    }
    let c = run(&mut e, 10);
    assert_eq!(placed(&c, "foo", 0), on_x1());
    assert!(c.decisions.iter().all(|d| !matches!(d,
        Decision::Admit { workload, .. } if *workload == key("bar"))));
    assert_eq!(e.tas_held, e.tas_held_walked());
    assert_eq!(
        e.tas_held["tas-default"]["x1"]["cpu"], 1000,
        "{:?}",
        e.tas_held
    );

    // The admission comes back through the watch: nothing counted twice.
    let mut foo = e.workloads[&*key("foo")].wl.clone();
    foo.admission = Some(admission_of(&c, "foo"));
    e.upsert_workload(foo);
    assert_eq!(e.tas_held, e.tas_held_walked());
    assert_eq!(e.tas_held["tas-default"]["x1"]["cpu"], 1000);

    e.finish_workload(&key("foo"));
    assert!(e.tas_held.is_empty(), "{:?}", e.tas_held);
    let c = run(&mut e, 20);
    assert_eq!(placed(&c, "bar", 0), on_x1());
    assert_eq!(e.tas_held, e.tas_held_walked());
}

/// The shape of Kueue's `tas` scheduler benchmark, small: 2 racks × 4
/// nodes of 96 cpu and 110 pods, quota for all, 20 Workloads of 8 pods ×
/// 2.5 cpu that each need one rack. They take 400 cpu: more than 4 nodes
/// hold, so the placements must go on to further nodes, and no node may
/// be given more than it has.
#[test]
fn placements_move_on_to_further_nodes_as_nodes_fill() {
    use super::tas_table::{node, pod_set};
    const BLOCK: &str = "cloud.provider.com/topology-block";
    const RACK: &str = "cloud.provider.com/topology-rack";
    let mut e = Engine::new();
    e.upsert_topology(
        "default-topology",
        vec![BLOCK.into(), RACK.into(), HOSTNAME.into()],
    );
    e.upsert_flavor(ResourceFlavor {
        topology_name: Some("default-topology".into()),
        node_labels: [("tas-node-group".to_string(), "tas".to_string())].into(),
        ..flavor("tas-flavor")
    });
    let queue = cq("tas-main", None, &[("tas-flavor", 1000)]);
    e.upsert_local_queue(lq(&queue.name));
    e.upsert_cluster_queue(queue);
    for rack in 0..2 {
        for n in 0..4 {
            let name = format!("node-{rack}-{n}");
            e.sync_node(node(
                &name,
                &[
                    ("tas-node-group", "tas"),
                    (BLOCK, "b0"),
                    (RACK, &format!("r{rack}")),
                    (HOSTNAME, &name),
                ],
                &[("cpu", "96"), ("memory", "256Gi"), ("pods", "110")],
            ));
        }
    }
    for i in 0..20 {
        let mut w = wl(&format!("w{i:02}"), "tas-main", 0, i + 1, 1);
        w.pod_sets = vec![pod_set("main", 8, required(RACK), &[("cpu", "2500m")])];
        e.upsert_workload(w);
    }
    let c = run(&mut e, 10);
    let mut per_node: BTreeMap<String, i64> = BTreeMap::new();
    for name in admitted(&c) {
        let name = name.rsplit('/').next().unwrap().to_string();
        let (_, domains) = placed(&c, &name, 0).expect("a topology assignment");
        for (values, count) in domains {
            *per_node.entry(values.last().unwrap().clone()).or_default() += count;
        }
    }
    assert_eq!(admitted(&c).len(), 20, "{per_node:?}");
    assert!(per_node.len() >= 5, "{per_node:?}");
    for (node, pods) in &per_node {
        assert!(
            *pods * 2500 <= 96_000,
            "{node} over-committed: {per_node:?}"
        );
    }
}
