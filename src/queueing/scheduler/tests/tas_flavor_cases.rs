//! Which flavor a pod set may take when topology-aware scheduling is on:
//! Kueue's `checkPodSetAndFlavorMatchForTAS`, implied TAS for queues of TAS
//! flavors only, and a queue whose TAS flavor has no Topology. Cases cite
//! Kueue v0.19.2 `pkg/scheduler/scheduler_tas_test.go` `TestScheduleForTAS`
//! and `pkg/cache/scheduler/clusterqueue_test.go`; only their flavor choice
//! and messages are checked here, the topology assignment is placement's.

use super::*;
use crate::queueing::workload::TopologyRequest;

const HOSTNAME: &str = "kubernetes.io/hostname";

fn tas_flavor(name: &str, topology: &str) -> ResourceFlavor {
    ResourceFlavor {
        topology_name: Some(topology.into()),
        ..flavor(name)
    }
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
    c.decisions
        .iter()
        .find_map(|d| match d {
            Decision::Admit {
                workload,
                admission,
            } if *workload == key(name) => Some(
                admission
                    .pod_set_assignments
                    .iter()
                    .map(|p| p.flavors["cpu"].clone())
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default()
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
    assert_eq!(flavors_of(&run(&mut e, 10), "foo"), ["tas-default"]);
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
    assert_eq!(
        flavors_of(&run(&mut e, 10), "foo"),
        ["default", "tas-default"]
    );
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
    e.upsert_workload(with_pod_sets(
        wl("foo", "tas-main", 0, 1, 1),
        &[("one", required("cloud.com/custom-level"))],
    ));
    assert_eq!(flavors_of(&run(&mut e, 10), "foo"), ["tas-custom-flavor"]);
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
