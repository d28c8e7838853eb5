//! Behaviour of the engine, one rule per test.

use super::*;
use crate::api::selector::LabelSelector;
use crate::queueing::{
    cluster_queue::{
        FlavorQuotas, Preemption, PreemptionPolicy, QueueingStrategy, ResourceGroup, ResourceQuota,
        StopPolicy,
    },
    flavors::{Taint, TaintEffect, Toleration, TolerationOperator},
    workload::PodSet,
};

mod checks_cases;
mod explain_cases;
mod slice_cases;
mod tas_cases;
mod tas_cohort_cases;
mod tas_preemption_cases;
mod tas_replacement_cases;
mod tas_schedule_cases;
mod tas_table;

const NS: &str = "ns";

fn flavor(name: &str) -> ResourceFlavor {
    ResourceFlavor {
        name: name.into(),
        node_labels: BTreeMap::new(),
        node_taints: vec![],
        tolerations: vec![],
        topology_name: None,
        topology_levels: None,
    }
}

/// A BestEffortFIFO queue with one group covering cpu, with `flavors`
/// (name, nominal cpu) in order.
fn cq(name: &str, cohort: Option<&str>, flavors: &[(&str, i64)]) -> ClusterQueue {
    ClusterQueue {
        name: name.into(),
        cohort: cohort.map(Into::into),
        queueing_strategy: QueueingStrategy::BestEffortFIFO,
        namespace_selector: Some(LabelSelector::default()),
        resource_groups: vec![ResourceGroup {
            covered_resources: vec!["cpu".into()],
            flavors: flavors
                .iter()
                .map(|(f, nominal)| FlavorQuotas {
                    name: f.to_string(),
                    resources: vec![ResourceQuota {
                        name: "cpu".into(),
                        nominal: nominal * 1000,
                        borrowing_limit: None,
                        lending_limit: None,
                    }],
                })
                .collect(),
        }],
        preemption: Preemption::default(),
        flavor_fungibility: Default::default(),
        stop_policy: StopPolicy::None,
        admission_fair_sharing: false,
        terminating: false,
    }
}

fn lq(cq: &str) -> LocalQueue {
    LocalQueue {
        namespace: NS.into(),
        name: format!("lq-{cq}"),
        cluster_queue: cq.into(),
        stop_policy: StopPolicy::None,
        fair_sharing: Default::default(),
    }
}

/// One pod set `main` of one pod asking for `cpu` cores, queued to the
/// LocalQueue of `cq`.
fn wl(name: &str, cq: &str, priority: i32, created: i64, cpu: i64) -> Workload {
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
            requests: [("cpu".to_string(), cpu * 1000)].into(),
            node_selector: BTreeMap::new(),
            node_affinity: Default::default(),
            tolerations: vec![],
            topology: None,
        }],
        admission: None,
    }
}

fn engine(flavors: &[&str], queues: Vec<ClusterQueue>) -> Engine {
    let mut e = Engine::new();
    for f in flavors {
        e.upsert_flavor(flavor(f));
    }
    for q in queues {
        e.upsert_local_queue(lq(&q.name));
        e.upsert_cluster_queue(q);
    }
    e
}

fn key(name: &str) -> String {
    format!("{NS}/{name}")
}

fn admitted(c: &Cycle) -> Vec<String> {
    c.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Admit { workload, .. } => Some(workload.clone()),
            _ => None,
        })
        .collect()
}

fn flavor_of(c: &Cycle, name: &str) -> Option<String> {
    c.decisions.iter().find_map(|d| match d {
        Decision::Admit {
            workload,
            admission,
        } if *workload == key(name) => admission.pod_set_assignments[0].flavors.get("cpu").cloned(),
        _ => None,
    })
}

fn evictions(c: &Cycle) -> Vec<(String, EvictionReason, String, Option<PreemptedReason>)> {
    c.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Evict {
                workload,
                reason,
                message,
                preempted_reason,
                ..
            } => Some((
                workload.clone(),
                *reason,
                message.clone(),
                *preempted_reason,
            )),
            _ => None,
        })
        .collect()
}

fn pending(c: &Cycle, name: &str) -> Option<(PendingReason, String)> {
    c.decisions.iter().find_map(|d| match d {
        Decision::Pending {
            workload,
            reason,
            message,
        } if *workload == key(name) => Some((*reason, message.clone())),
        _ => None,
    })
}

/// Cycles until nothing moves; returns all their decisions.
fn run(e: &mut Engine, now: i64) -> Cycle {
    let mut all = Cycle::default();
    for _ in 0..100 {
        let c = e.schedule(now);
        all.decisions.extend(c.decisions);
        if !c.progress {
            return all;
        }
    }
    panic!("no steady state after 100 cycles");
}

/// Cycles until nothing moves; returns everything admitted.
fn settle(e: &mut Engine, now: i64) -> Vec<String> {
    admitted(&run(e, now))
}

fn admit_all(e: &mut Engine, now: i64) -> Vec<String> {
    let names = settle(e, now);
    for k in &names {
        e.confirm_admission(k);
    }
    names
}

fn strict(mut q: ClusterQueue) -> ClusterQueue {
    q.queueing_strategy = QueueingStrategy::StrictFIFO;
    q
}

#[test]
fn higher_priority_then_older_then_uid_first() {
    let mut e = engine(&["default"], vec![strict(cq("a", None, &[("default", 1)]))]);
    e.upsert_workload(wl("low-old", "a", 0, 1, 1));
    e.upsert_workload(wl("high-new", "a", 10, 3, 1));
    e.upsert_workload(wl("high-old", "a", 10, 2, 1));
    let mut order = Vec::new();
    for t in 0..3 {
        let got = admit_all(&mut e, t);
        assert_eq!(got.len(), 1, "one at a time fits");
        e.finish_workload(&got[0]);
        order.extend(got);
    }
    assert_eq!(order, [key("high-old"), key("high-new"), key("low-old")]);
}

#[test]
fn strict_fifo_head_blocks_its_queue() {
    let mut e = engine(&["default"], vec![strict(cq("a", None, &[("default", 2)]))]);
    e.upsert_workload(wl("big", "a", 0, 1, 3));
    e.upsert_workload(wl("small", "a", 0, 2, 1));
    let c = e.schedule(0);
    assert!(admitted(&c).is_empty());
    assert!(!c.progress);
    assert_eq!(
        pending(&c, "big"),
        Some((
            PendingReason::ExceedsMaxQuota,
            "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)".into()
        ))
    );
    assert!(settle(&mut e, 1).is_empty(), "small stays behind big");
    // Reported once: the same status is not written again.
    assert_eq!(pending(&e.schedule(2), "big"), None);
    e.delete_workload(&key("big"));
    assert_eq!(settle(&mut e, 3), [key("small")]);
}

#[test]
fn best_effort_sets_an_unfit_head_aside_until_quota_frees() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 2)])]);
    e.upsert_workload(wl("running", "a", 0, 0, 1));
    assert_eq!(admit_all(&mut e, 0), [key("running")]);
    e.upsert_workload(wl("two", "a", 0, 1, 2));
    e.upsert_workload(wl("one", "a", 0, 2, 1));
    let c = e.schedule(1);
    assert!(c.progress, "setting the head aside is progress");
    assert_eq!(
        pending(&c, "two"),
        Some((
            PendingReason::WaitingForQuota,
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed".into()
        ))
    );
    assert_eq!(admit_all(&mut e, 2), [key("one")]);
    e.finish_workload(&key("running"));
    assert!(
        settle(&mut e, 3).is_empty(),
        "two still needs 2, one holds 1"
    );
    e.finish_workload(&key("one"));
    assert_eq!(settle(&mut e, 4), [key("two")]);
}

#[test]
fn workloads_that_would_fail_alike_are_set_aside_together() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 1)])]);
    e.upsert_workload(wl("running", "a", 0, 0, 1));
    admit_all(&mut e, 0);
    for i in 1..=3 {
        e.upsert_workload(wl(&format!("same-{i}"), "a", 0, i, 1));
    }
    let c = e.schedule(1);
    assert!(c.progress);
    // One cycle set all three aside: the next one has no head.
    let c = e.schedule(1);
    assert!(!c.progress && c.decisions.is_empty());
    assert_eq!(e.pending_workloads("a").len(), 3);
    e.finish_workload(&key("running"));
    assert_eq!(settle(&mut e, 2), [key("same-1")]);
}

/// Kueue's equivalence hashing (on by default since 0.18): a newcomer
/// shaped like a head that just failed is set aside untried, so it gets
/// no pending reason of its own; quota freed brings it back.
#[test]
fn a_newcomer_like_a_failed_head_is_set_aside_untried() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 1)])]);
    e.upsert_workload(wl("running", "a", 0, 0, 1));
    admit_all(&mut e, 0);
    e.upsert_workload(wl("first", "a", 0, 1, 1));
    assert!(pending(&run(&mut e, 1), "first").is_some());
    e.upsert_workload(wl("later", "a", 0, 2, 1));
    e.upsert_workload(wl("bigger", "a", 0, 3, 2));
    let c = run(&mut e, 2);
    assert_eq!(pending(&c, "later"), None, "not tried: no reason written");
    assert!(pending(&c, "bigger").is_some(), "another shape is tried");
    assert_eq!(e.pending_workloads("a").len(), 3);
    e.finish_workload(&key("running"));
    assert_eq!(settle(&mut e, 3), [key("first")]);
    e.finish_workload(&key("first"));
    assert_eq!(settle(&mut e, 4), [key("later")]);
}

/// With `SchedulingEquivalenceHashing` off (Kueue before 0.18): only the
/// head that failed is set aside; each workload shaped like it is tried
/// in its turn and gets its own pending reason.
#[test]
fn without_equivalence_hashing_each_alike_workload_is_tried() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 1)])]);
    e.set_equivalence_hashing(false);
    e.upsert_workload(wl("running", "a", 0, 0, 1));
    admit_all(&mut e, 0);
    e.upsert_workload(wl("first", "a", 0, 1, 1));
    e.upsert_workload(wl("second", "a", 0, 2, 1));
    let c = run(&mut e, 1);
    assert!(pending(&c, "first").is_some());
    assert!(
        pending(&c, "second").is_some(),
        "tried: not set aside with the head"
    );
    e.upsert_workload(wl("later", "a", 0, 3, 1));
    assert!(
        pending(&run(&mut e, 3), "later").is_some(),
        "a newcomer is tried"
    );
    e.finish_workload(&key("running"));
    assert_eq!(settle(&mut e, 4), [key("first")]);
}

/// Batched requeue (Kueue's requeuer, `requeueBatchPeriod`): quota freed
/// in a Cohort brings its set-aside workloads back once, the batch after
/// the first release, however many releases came in between.
#[test]
fn released_quota_requeues_the_set_aside_once_per_batch() {
    batched_requeue(|e| e);
}

/// The settings are the configuration's: the rebuild from the API's
/// objects when the watches start keeps them. It once dropped the batch,
/// so set-aside workloads went back at every release of quota.
#[test]
fn a_rebuild_keeps_the_requeue_batch_and_the_other_settings() {
    batched_requeue(|mut e| {
        e.set_block_admission(true);
        let objects = ClusterObjects {
            flavors: e.flavors.values().cloned().collect(),
            cluster_queues: e.cluster_queues.values().cloned().collect(),
            local_queues: e.local_queues().cloned().collect(),
            ..Default::default()
        };
        e.set_equivalence_hashing(false);
        let mut r = e.rebuilt(objects);
        assert!(r.block_admission);
        assert!(r.no_equivalence);
        r.set_equivalence_hashing(true);
        r.set_block_admission(false);
        r
    });
}

/// The batched requeue's case, on what `then` makes of the engine once
/// it has its queues and its batch.
fn batched_requeue(then: impl FnOnce(Engine) -> Engine) {
    let mut e = engine(
        &["default"],
        vec![
            cq("a", Some("c"), &[("default", 1)]),
            cq("b", Some("c"), &[("default", 2)]),
        ],
    );
    e.set_requeue_batch(Some(1000));
    let mut e = then(e);
    for (name, t) in [("b1", 0), ("b2", 1), ("a1", 2)] {
        let q = if name.starts_with('a') { "a" } else { "b" };
        e.upsert_workload(wl(name, q, 0, t, 1));
    }
    assert_eq!(admit_all(&mut e, 0).len(), 3);
    e.upsert_workload(wl("waits", "a", 0, 5, 2));
    assert!(pending(&run(&mut e, 10), "waits").is_some());
    // Two releases in the Cohort, at 100 and 600: due at 1,100.
    e.finish_workload(&key("b1"));
    assert!(settle(&mut e, 100).is_empty(), "set aside until the batch");
    e.finish_workload(&key("b2"));
    assert!(settle(&mut e, 600).is_empty());
    assert_eq!(e.next_requeue_at(), Some(1100), "the shell wakes then");
    assert!(!e.requeue_due(1099));
    assert!(e.requeue_due(1100), "back in its queue at 1,100");
    assert_eq!(e.next_requeue_at(), None);
    assert_eq!(settle(&mut e, 1100), [key("waits")]);
    assert!(!e.requeue_due(5000), "nothing asked since");
}

#[test]
fn one_cycle_never_admits_past_the_cohort_and_less_borrowing_goes_first() {
    let mut e = engine(
        &["default"],
        vec![
            cq("a", Some("c"), &[("default", 3)]),
            cq("b", Some("c"), &[("default", 0)]),
        ],
    );
    // b's head has the higher priority but must borrow: a goes first.
    e.upsert_workload(wl("a1", "a", 0, 1, 2));
    e.upsert_workload(wl("b1", "b", 100, 0, 2));
    let c = e.schedule(0);
    assert_eq!(admitted(&c), [key("a1")]);
    assert_eq!(
        pending(&c, "b1"),
        Some((
            PendingReason::WaitingForQuota,
            "Workload no longer fits after processing another workload".into()
        ))
    );
    let status = e.cluster_queue_status("a").unwrap();
    assert_eq!(status.flavors_usage[0].resources[0].total, 2000);
}

#[test]
fn flavors_are_tried_in_order() {
    let mut e = engine(
        &["small", "large"],
        vec![cq("a", None, &[("small", 1), ("large", 5)])],
    );
    e.upsert_workload(wl("two", "a", 0, 1, 2));
    e.upsert_workload(wl("one", "a", 0, 2, 1));
    let c = run(&mut e, 0);
    assert_eq!(flavor_of(&c, "two").as_deref(), Some("large"));
    assert_eq!(flavor_of(&c, "one").as_deref(), Some("small"));
}

#[test]
fn untolerated_taints_skip_a_flavor() {
    let mut e = engine(
        &["on-demand"],
        vec![cq("a", None, &[("spot", 4), ("on-demand", 4)])],
    );
    let mut spot = flavor("spot");
    spot.node_taints = vec![Taint {
        key: "spot".into(),
        value: "true".into(),
        effect: TaintEffect::NoSchedule,
    }];
    e.upsert_flavor(spot);
    e.upsert_workload(wl("plain", "a", 0, 1, 1));
    let mut tolerant = wl("tolerant", "a", 0, 2, 1);
    tolerant.pod_sets[0].tolerations = vec![Toleration {
        key: "spot".into(),
        operator: TolerationOperator::Exists,
        value: String::new(),
        effect: None,
    }];
    e.upsert_workload(tolerant);
    let c = run(&mut e, 0);
    assert_eq!(flavor_of(&c, "plain").as_deref(), Some("on-demand"));
    assert_eq!(flavor_of(&c, "tolerant").as_deref(), Some("spot"));

    let mut only_spot = engine(&[], vec![cq("b", None, &[("spot", 4)])]);
    only_spot.upsert_flavor(e.flavors["spot"].clone());
    only_spot.upsert_workload(wl("plain", "b", 0, 1, 1));
    let c = only_spot.schedule(0);
    assert_eq!(
        pending(&c, "plain"),
        Some((
            PendingReason::NoMatchingFlavor,
            "couldn't assign flavors to pod set main: untolerated taint {spot true NoSchedule <nil>} in flavor spot"
                .into()
        ))
    );
}

#[test]
fn node_labels_must_match_the_node_selector() {
    let mut e = engine(&[], vec![cq("a", None, &[("zone-a", 4), ("zone-b", 4)])]);
    for z in ["a", "b"] {
        let mut f = flavor(&format!("zone-{z}"));
        f.node_labels = [("zone".to_string(), z.to_string())].into();
        e.upsert_flavor(f);
    }
    let mut w = wl("w", "a", 0, 1, 1);
    w.pod_sets[0].node_selector = [("zone".to_string(), "b".to_string())].into();
    e.upsert_workload(w.clone());
    assert_eq!(flavor_of(&e.schedule(0), "w").as_deref(), Some("zone-b"));

    w.name = "nowhere".into();
    w.pod_sets[0].node_selector = [("zone".to_string(), "c".to_string())].into();
    e.upsert_workload(w);
    let c = e.schedule(1);
    assert_eq!(
        pending(&c, "nowhere"),
        Some((
            PendingReason::NoMatchingFlavor,
            "couldn't assign flavors to pod set main: flavor zone-a doesn't match node affinity, flavor zone-b doesn't match node affinity".into()
        ))
    );
}

/// A required node affinity term: `key In values`.
fn affinity_in(terms: &[(&str, &str)]) -> crate::queueing::node_affinity::NodeAffinity {
    use crate::queueing::node_affinity::{NodeAffinity, Operator, Requirement};
    NodeAffinity(Some(
        terms
            .iter()
            .map(|(k, v)| {
                vec![Requirement {
                    key: k.to_string(),
                    operator: Operator::In,
                    values: vec![v.to_string()],
                }]
            })
            .collect(),
    ))
}

/// Kueue v0.19.2 `flavorassigner_test.go` `TestAssignFlavors`, flavors
/// "one" (`type: one`) and "two" (`type: two`): "multiple flavors, fits
/// with node affinity", "multiple flavors, node affinity fits any flavor"
/// and "multiple flavors, doesn't fit node affinity".
#[test]
fn required_node_affinity_picks_the_flavor() {
    let mut e = engine(&[], vec![cq("a", None, &[("one", 4), ("two", 4)])]);
    for t in ["one", "two"] {
        let mut f = flavor(t);
        f.node_labels = [("type".to_string(), t.to_string())].into();
        e.upsert_flavor(f);
    }
    // fits with node affinity (the selector's key is no flavor's: ignored)
    let mut w = wl("fits", "a", 0, 1, 1);
    w.pod_sets[0].node_selector = [("ignored1".to_string(), "foo".to_string())].into();
    w.pod_sets[0].node_affinity = affinity_in(&[("type", "two")]);
    e.upsert_workload(w);
    assert_eq!(flavor_of(&e.schedule(0), "fits").as_deref(), Some("two"));

    // node affinity fits any flavor: a term on no flavor's key matches all
    let mut w = wl("any", "a", 0, 2, 1);
    w.pod_sets[0].node_affinity = affinity_in(&[("ignored2", "bar"), ("cpuType", "two")]);
    e.upsert_workload(w);
    assert_eq!(flavor_of(&e.schedule(1), "any").as_deref(), Some("one"));

    // doesn't fit node affinity
    let mut w = wl("nowhere", "a", 0, 3, 1);
    w.pod_sets[0].node_affinity = affinity_in(&[("type", "three")]);
    e.upsert_workload(w);
    assert_eq!(
        pending(&e.schedule(2), "nowhere"),
        Some((
            PendingReason::NoMatchingFlavor,
            "couldn't assign flavors to pod set main: flavor one doesn't match node affinity, flavor two doesn't match node affinity".into()
        ))
    );
}

#[test]
fn a_resource_without_a_group_is_unavailable() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 4)])]);
    let mut w = wl("gpu", "a", 0, 1, 1);
    w.pod_sets[0].requests.insert("nvidia.com/gpu", 1000);
    e.upsert_workload(w);
    let c = e.schedule(0);
    assert_eq!(
        pending(&c, "gpu"),
        Some((
            PendingReason::NoMatchingFlavor,
            "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in ClusterQueue".into()
        ))
    );
}

#[test]
fn pod_sets_of_one_workload_add_up() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 3)])]);
    let mut w = wl("pair", "a", 0, 1, 2);
    let mut worker = w.pod_sets[0].clone();
    worker.name = "worker".into();
    w.pod_sets.push(worker);
    e.upsert_workload(w);
    let c = e.schedule(0);
    assert_eq!(
        pending(&c, "pair"),
        Some((
            PendingReason::ExceedsMaxQuota,
            "couldn't assign flavors to pod set worker: insufficient quota for cpu in flavor default, previously considered podsets requests (2) + current podset request (2) > maximum capacity (3)".into()
        ))
    );
}

#[test]
fn borrowing_limit_caps_what_the_cohort_lends() {
    let mut a = cq("a", Some("c"), &[("default", 2)]);
    a.resource_groups[0].flavors[0].resources[0].borrowing_limit = Some(1000);
    let mut e = engine(
        &["default"],
        vec![a, cq("b", Some("c"), &[("default", 10)])],
    );
    e.upsert_workload(wl("four", "a", 0, 1, 4));
    let c = e.schedule(0);
    let (reason, message) = pending(&c, "four").unwrap();
    assert_eq!(reason, PendingReason::ExceedsMaxQuota);
    assert!(message.ends_with("> maximum capacity (3)"), "{message}");
    e.upsert_workload(wl("three", "a", 0, 2, 3));
    assert_eq!(settle(&mut e, 1), [key("three")]);
    let usage = &e.cluster_queue_status("a").unwrap().flavors_usage[0].resources[0];
    assert_eq!((usage.total, usage.borrowed), (3000, 1000));
}

#[test]
fn lending_limit_keeps_part_of_the_quota_home() {
    let mut a = cq("a", Some("c"), &[("default", 10)]);
    a.resource_groups[0].flavors[0].resources[0].lending_limit = Some(2000);
    let mut e = engine(&["default"], vec![a, cq("b", Some("c"), &[("default", 0)])]);
    e.upsert_workload(wl("b3", "b", 0, 1, 3));
    let (reason, message) = pending(&e.schedule(0), "b3").unwrap();
    assert_eq!(reason, PendingReason::ExceedsMaxQuota);
    assert!(message.ends_with("> maximum capacity (2)"), "{message}");
    e.upsert_workload(wl("b2", "b", 0, 2, 2));
    e.upsert_workload(wl("a8", "a", 0, 3, 8));
    let mut got = settle(&mut e, 1);
    got.sort();
    assert_eq!(got, [key("a8"), key("b2")]);
}

fn reclaiming() -> Engine {
    let mut a = cq("a", Some("c"), &[("default", 4)]);
    a.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
    let mut e = engine(&["default"], vec![a, cq("b", Some("c"), &[("default", 0)])]);
    for i in 1..=4 {
        e.upsert_workload(wl(&format!("b{i}"), "b", 100, i, 1));
        // Reserved one after another: b4 is the most recent.
        admit_all(&mut e, i);
    }
    e
}

#[test]
fn a_queue_reclaims_its_nominal_quota_from_borrowers() {
    let mut e = reclaiming();
    e.upsert_workload(wl("mine", "a", 0, 10, 2));
    let c = e.schedule(20);
    assert!(
        admitted(&c).is_empty(),
        "the preemptor waits for its victims"
    );
    let ev = evictions(&c);
    let mut victims: Vec<_> = ev.iter().map(|e| e.0.as_str()).collect();
    victims.sort();
    assert_eq!(
        victims,
        [key("b3"), key("b4")],
        "the most recently admitted go"
    );
    assert!(ev
        .iter()
        .all(|e| e.1 == EvictionReason::Preempted
            && e.3 == Some(PreemptedReason::InCohortReclamation)));
    assert_eq!(
        ev[0].2,
        "Preempted to accommodate a workload (UID: uid-mine, JobUID: UNKNOWN) due to reclamation within the cohort; preemptor path: /c/a; preemptee path: /c/b"
    );
    assert_eq!(
        pending(&c, "mine"),
        Some((
            PendingReason::WaitingForPreemptedWorkloads,
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 2 more needed. Pending the preemption of 2 workload(s)".into()
        ))
    );
    // Until the victims stop, nothing changes and nothing is re-issued.
    let c = e.schedule(21);
    assert!(evictions(&c).is_empty() && admitted(&c).is_empty());
    e.confirm_eviction(&key("b3"));
    e.confirm_eviction(&key("b4"));
    let c = e.schedule(22);
    assert_eq!(admitted(&c), [key("mine")]);
}

#[test]
fn reclaim_needs_the_policy() {
    let mut e = reclaiming();
    let mut a = e.cluster_queues["a"].clone();
    a.preemption.reclaim_within_cohort = PreemptionPolicy::Never;
    e.upsert_cluster_queue(a);
    e.upsert_workload(wl("mine", "a", 0, 10, 2));
    let c = e.schedule(20);
    assert!(evictions(&c).is_empty());
    assert_eq!(
        pending(&c, "mine").unwrap().0,
        PendingReason::WaitingForQuota
    );
}

#[test]
fn lower_priority_workloads_of_the_queue_are_preempted() {
    let mut q = cq("a", None, &[("default", 2)]);
    q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
    let mut e = engine(&["default"], vec![q]);
    e.upsert_workload(wl("low1", "a", 0, 1, 1));
    admit_all(&mut e, 1);
    e.upsert_workload(wl("low2", "a", 0, 2, 1));
    admit_all(&mut e, 2);
    // Same priority: no preemption.
    e.upsert_workload(wl("peer", "a", 0, 3, 1));
    let c = e.schedule(3);
    assert!(evictions(&c).is_empty());
    e.delete_workload(&key("peer"));

    let mut high = wl("high", "a", 10, 4, 1);
    high.job_uid = Some("job-1".into());
    e.upsert_workload(high);
    let c = e.schedule(4);
    assert_eq!(
        evictions(&c),
        [(
            key("low2"),
            EvictionReason::Preempted,
            "Preempted to accommodate a workload (UID: uid-high, JobUID: job-1) due to prioritization in the ClusterQueue; preemptor path: /a; preemptee path: /a".into(),
            Some(PreemptedReason::InClusterQueue)
        )]
    );
    assert!(admitted(&c).is_empty());
    e.confirm_eviction(&key("low2"));
    assert_eq!(settle(&mut e, 5), [key("high")]);
    // low2 queues again behind the others.
    assert_eq!(e.pending_workloads("a"), [key("low2")]);
}

#[test]
fn hold_keeps_running_workloads_and_admits_nothing() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 4)])]);
    e.upsert_workload(wl("running", "a", 0, 1, 1));
    admit_all(&mut e, 1);
    let mut a = e.cluster_queues["a"].clone();
    a.stop_policy = StopPolicy::Hold;
    e.upsert_cluster_queue(a.clone());
    e.upsert_workload(wl("new", "a", 0, 2, 1));
    let c = e.schedule(2);
    assert!(evictions(&c).is_empty() && admitted(&c).is_empty());
    assert_eq!(
        pending(&c, "new"),
        Some((PendingReason::Suspended, "ClusterQueue a is stopped".into()))
    );
    let active = &c.statuses[0].active;
    assert_eq!(
        (active.status, active.reason, active.message.as_str()),
        (false, "Stopped", "Can't admit new workloads: is stopped.")
    );
    a.stop_policy = StopPolicy::None;
    e.upsert_cluster_queue(a);
    let c = e.schedule(3);
    assert_eq!(admitted(&c), [key("new")]);
    assert_eq!(c.statuses[0].active.message, "Can admit new workloads");
}

#[test]
fn hold_and_drain_evicts_and_resume_readmits() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 4)])]);
    e.upsert_workload(wl("running", "a", 0, 1, 1));
    admit_all(&mut e, 1);
    let mut a = e.cluster_queues["a"].clone();
    a.stop_policy = StopPolicy::HoldAndDrain;
    e.upsert_cluster_queue(a.clone());
    let c = e.schedule(2);
    assert_eq!(
        evictions(&c),
        [(
            key("running"),
            EvictionReason::ClusterQueueStopped,
            "The ClusterQueue is stopped".into(),
            None
        )]
    );
    assert!(evictions(&e.schedule(3)).is_empty(), "issued once");
    e.confirm_eviction(&key("running"));
    assert!(settle(&mut e, 4).is_empty());
    a.stop_policy = StopPolicy::None;
    e.upsert_cluster_queue(a);
    assert_eq!(settle(&mut e, 5), [key("running")]);
}

#[test]
fn local_queue_stop_policies() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 4)])]);
    e.upsert_workload(wl("running", "a", 0, 1, 1));
    admit_all(&mut e, 1);
    let mut l = lq("a");
    l.stop_policy = StopPolicy::HoldAndDrain;
    e.upsert_local_queue(l.clone());
    e.upsert_workload(wl("new", "a", 0, 2, 1));
    let c = e.schedule(2);
    assert_eq!(
        evictions(&c),
        [(
            key("running"),
            EvictionReason::LocalQueueStopped,
            "The LocalQueue is stopped".into(),
            None
        )]
    );
    assert_eq!(
        pending(&c, "new"),
        Some((
            PendingReason::Suspended,
            "LocalQueue lq-a is stopped".into()
        ))
    );
    e.confirm_eviction(&key("running"));
    assert!(settle(&mut e, 3).is_empty());
    l.stop_policy = StopPolicy::Hold;
    e.upsert_local_queue(l.clone());
    assert!(settle(&mut e, 4).is_empty());
    l.stop_policy = StopPolicy::None;
    e.upsert_local_queue(l);
    let mut got = settle(&mut e, 5);
    got.sort();
    assert_eq!(got, [key("new"), key("running")]);
}

#[test]
fn inactive_workloads_are_not_admitted_and_deactivation_evicts() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 4)])]);
    let mut idle = wl("idle", "a", 0, 1, 1);
    idle.active = false;
    e.upsert_workload(idle.clone());
    e.upsert_workload(wl("running", "a", 0, 2, 1));
    assert_eq!(admit_all(&mut e, 1), [key("running")]);

    let mut running = wl("running", "a", 0, 2, 1);
    running.active = false;
    running.admission = e.admission(&key("running")).cloned();
    e.upsert_workload(running);
    let c = e.schedule(2);
    assert_eq!(
        evictions(&c),
        [(
            key("running"),
            EvictionReason::Deactivated,
            "The workload is deactivated".into(),
            None
        )]
    );
    e.confirm_eviction(&key("running"));
    assert!(settle(&mut e, 3).is_empty());
    idle.active = true;
    e.upsert_workload(idle);
    assert_eq!(settle(&mut e, 4), [key("idle")]);
}

/// The scheduler's answer for an unselected namespace (Kueue v0.19.2
/// pkg/scheduler/scheduler_test.go "failed to match clusterQueue
/// selector"): reason `Misconfigured`, written `Pending` while the
/// unadmitted-workloads observability gate is off, as it is by default.
#[test]
fn namespace_selector_decides_who_may_queue() {
    let mut a = cq("a", None, &[("default", 4)]);
    a.namespace_selector = Some(LabelSelector {
        match_labels: [("team".to_string(), "a".to_string())].into(),
        match_expressions: vec![],
    });
    let mut e = engine(&["default"], vec![a]);
    e.upsert_namespace(NS, [("team".to_string(), "b".to_string())].into());
    e.upsert_workload(wl("w", "a", 0, 1, 1));
    let c = e.schedule(0);
    assert_eq!(
        pending(&c, "w"),
        Some((
            PendingReason::NamespaceMismatch,
            "workload namespace doesn't match ClusterQueue selector".into()
        ))
    );
    assert_eq!(
        (
            PendingReason::NamespaceMismatch.as_str(),
            PendingReason::NamespaceMismatch.legacy_str()
        ),
        ("Misconfigured", "Pending")
    );
    assert!(settle(&mut e, 1).is_empty());
    e.upsert_namespace(NS, [("team".to_string(), "a".to_string())].into());
    assert_eq!(settle(&mut e, 2), [key("w")]);

    // No selector at all selects no namespace.
    let mut b = cq("b", None, &[("default", 4)]);
    b.namespace_selector = None;
    let mut e = engine(&["default"], vec![b]);
    e.upsert_workload(wl("w", "b", 0, 1, 1));
    assert!(settle(&mut e, 0).is_empty());
}

#[test]
fn a_missing_flavor_makes_the_queue_inactive() {
    let mut e = engine(&[], vec![cq("a", None, &[("default", 4)])]);
    e.upsert_workload(wl("w", "a", 0, 1, 1));
    let c = e.schedule(0);
    assert_eq!(
        pending(&c, "w"),
        Some((
            PendingReason::Suspended,
            "ClusterQueue a is inactive".into()
        ))
    );
    let active = &c.statuses[0].active;
    assert_eq!(
        (active.status, active.reason, active.message.as_str()),
        (
            false,
            "FlavorNotFound",
            "Can't admit new workloads: references missing ResourceFlavor(s): default."
        )
    );
    e.upsert_flavor(flavor("default"));
    assert_eq!(settle(&mut e, 1), [key("w")]);
}

#[test]
fn missing_local_queue_is_reported() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 4)])]);
    let mut w = wl("w", "a", 0, 1, 1);
    w.queue_name = "nope".into();
    e.upsert_workload(w);
    let c = e.schedule(0);
    assert_eq!(
        pending(&c, "w"),
        Some((
            PendingReason::Misconfigured,
            "LocalQueue nope doesn't exist".into()
        ))
    );
    e.upsert_local_queue(LocalQueue {
        name: "nope".into(),
        ..lq("a")
    });
    assert_eq!(settle(&mut e, 1), [key("w")]);
}

#[test]
fn status_counts_and_usage() {
    let mut e = engine(
        &["default"],
        vec![
            cq("a", Some("c"), &[("default", 1)]),
            cq("b", Some("c"), &[("default", 4)]),
        ],
    );
    e.upsert_workload(wl("w1", "a", 0, 1, 1));
    e.upsert_workload(wl("w2", "a", 0, 2, 2));
    e.upsert_workload(wl("w3", "a", 0, 3, 8));
    let got = settle(&mut e, 0);
    assert_eq!(got, [key("w1"), key("w2")]);
    e.confirm_admission(&key("w1"));
    let s = e.cluster_queue_status("a").unwrap();
    assert_eq!(
        (
            s.pending_workloads,
            s.reserving_workloads,
            s.admitted_workloads
        ),
        // w2 is assumed: admitted as Kueue's cache counts it.
        (1, 2, 2)
    );
    assert_eq!(
        s.flavors_usage,
        [FlavorUsage {
            name: "default".into(),
            resources: vec![ResourceUsage {
                name: "cpu".into(),
                total: 3000,
                borrowed: 2000
            }]
        }]
    );
    // Only changed statuses are reported: confirming an admission counted
    // from its decision changes none; a release does.
    e.confirm_admission(&key("w2"));
    assert!(e.schedule(1).statuses.is_empty());
    e.finish_workload(&key("w1"));
    assert_eq!(e.schedule(2).statuses.len(), 1);
    assert!(e.schedule(3).statuses.is_empty());
}

#[test]
fn rebuild_counts_admitted_workloads_from_the_api() {
    let mut running = wl("running", "a", 0, 1, 3);
    running.admission = Some(Admission {
        cluster_queue: "a".into(),
        pod_set_assignments: vec![crate::queueing::workload::PodSetAssignment {
            name: "main".into(),
            flavors: [("cpu".to_string(), "default".to_string())].into(),
            resource_usage: [("cpu".to_string(), 3000)].into(),
            count: 1,
            topology: None,
        }],
    });
    let mut e = Engine::rebuild(ClusterObjects {
        flavors: vec![flavor("default")],
        topologies: vec![],
        cluster_queues: vec![cq("a", None, &[("default", 4)])],
        cohorts: vec![],
        local_queues: vec![lq("a")],
        namespaces: vec![],
        workloads: vec![running, wl("two", "a", 0, 2, 2), wl("one", "a", 0, 3, 1)],
    });
    assert_eq!(settle(&mut e, 0), [key("one")]);
    let s = e.cluster_queue_status("a").unwrap();
    // "one" is assumed and needs no check: admitted too.
    assert_eq!((s.reserving_workloads, s.admitted_workloads), (2, 2));
    assert_eq!(
        e.quota.usage("a", &FlavorResource::new("default", "cpu")),
        4000
    );
}

#[test]
fn a_failed_admission_write_queues_the_workload_again() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 1)])]);
    e.upsert_workload(wl("w", "a", 0, 1, 1));
    assert_eq!(settle(&mut e, 0), [key("w")]);
    // The watch delivers the object before our write: still assumed.
    e.upsert_workload(wl("w", "a", 0, 1, 1));
    assert!(e.admission(&key("w")).is_some());
    e.reject_admission(&key("w"));
    assert!(e.admission(&key("w")).is_none());
    assert_eq!(settle(&mut e, 1), [key("w")]);
    e.confirm_admission(&key("w"));
    e.reject_admission(&key("w"));
    assert!(
        e.admission(&key("w")).is_some(),
        "a confirmed admission stays"
    );
}

#[test]
fn flavor_fungibility_can_prefer_the_next_flavor_over_borrowing() {
    let mut a = cq("a", Some("c"), &[("first", 1), ("second", 4)]);
    a.flavor_fungibility.when_can_borrow = crate::queueing::FungibilityPolicy::TryNextFlavor;
    let b = cq("b", Some("c"), &[("first", 4)]);
    let mut e = engine(&["first", "second"], vec![a.clone(), b]);
    e.upsert_workload(wl("w", "a", 0, 1, 2));
    assert_eq!(flavor_of(&e.schedule(0), "w").as_deref(), Some("second"));
    // Default: borrow in the first flavor.
    a.flavor_fungibility = Default::default();
    let mut e = engine(
        &["first", "second"],
        vec![a, cq("b", Some("c"), &[("first", 4)])],
    );
    e.upsert_workload(wl("w", "a", 0, 1, 2));
    assert_eq!(flavor_of(&e.schedule(0), "w").as_deref(), Some("first"));
}

#[test]
fn echoes_of_status_writes_change_nothing() {
    let mut q = cq("a", None, &[("default", 1)]);
    q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
    let mut e = engine(&["default"], vec![q.clone()]);
    e.upsert_workload(wl("low", "a", 0, 1, 1));
    admit_all(&mut e, 1);
    e.upsert_workload(wl("waiting", "a", 0, 2, 1));
    assert!(e.schedule(2).progress, "set aside");
    e.upsert_workload(wl("high", "a", 10, 3, 1));
    let c = e.schedule(3);
    assert_eq!(evictions(&c).len(), 1, "high preempts low");
    // The shell writes statuses; the watches send the objects back.
    e.upsert_cluster_queue(q);
    e.upsert_local_queue(lq("a"));
    e.upsert_flavor(flavor("default"));
    e.upsert_workload(wl("waiting", "a", 0, 2, 1));
    e.upsert_workload(wl("high", "a", 10, 3, 1));
    // Nothing came back from the set-aside, and the preemptor keeps its turn.
    let c = e.schedule(4);
    assert!(!c.progress && c.decisions.is_empty(), "{c:?}");
    e.confirm_eviction(&key("low"));
    assert_eq!(admitted(&e.schedule(5)), [key("high")]);
}

/// Kueue v0.19.2 `pkg/scheduler/scheduler.go` `prepareWorkload`: an
/// admission with no check to wait for is assumed into the cache with
/// `Admitted` already set, so `admittedWorkloads` and `flavorsUsage` (what
/// Kueue's benchmark integrates) count it from the moment it is decided,
/// as `reservingWorkloads` and `flavorsReservation` do; a refused write
/// takes it out of all four.
#[test]
fn usage_counts_an_admission_from_its_decision_as_kueues_cache_does() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 8)])]);
    e.upsert_workload(wl("w1", "a", 0, 1, 2));
    e.upsert_workload(wl("w2", "a", 0, 2, 3));
    assert_eq!(settle(&mut e, 0), [key("w1"), key("w2")]);
    let totals = |e: &Engine| {
        let s = e.cluster_queue_status("a").unwrap();
        (
            s.reserving_workloads,
            s.admitted_workloads,
            s.flavors_usage[0].resources[0].total,
            s.flavors_admitted[0].resources[0].total,
        )
    };
    // Both assumed, neither written yet: both in use already.
    assert_eq!(totals(&e), (2, 2, 5000, 5000));
    let ls = e.local_queue_statuses();
    assert_eq!(ls[0].usage["default"]["cpu"], 5000);
    assert_eq!(ls[0].admitted_usage["default"]["cpu"], 5000);
    e.confirm_admission(&key("w1"));
    e.confirm_admission(&key("w2"));
    assert_eq!(totals(&e), (2, 2, 5000, 5000));
    e.upsert_workload(wl("w3", "a", 0, 3, 3));
    assert_eq!(settle(&mut e, 1), [key("w3")]);
    assert_eq!(totals(&e), (3, 3, 8000, 8000));
    e.reject_admission(&key("w3"));
    assert_eq!(totals(&e), (2, 2, 5000, 5000));
    assert_eq!(
        e.cluster_queue_status("a"),
        e.cluster_queue_status_by_walk("a")
    );
}

#[test]
fn a_queue_takes_its_nominal_quota_before_its_cohort_borrows_it() {
    // Kueue's benchmark shape in small: a large finishes and frees its
    // queue's whole nominal quota while every queue of the cohort has work
    // waiting. One head per queue per cycle would let b borrow half of
    // a's room, and with reclaimWithinCohort: Any, a would then take it
    // back by preempting b's workloads.
    let mut a = cq("a", Some("c"), &[("default", 4)]);
    a.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
    let mut b = cq("b", Some("c"), &[("default", 0)]);
    b.preemption.reclaim_within_cohort = PreemptionPolicy::Any;
    let mut e = engine(&["default"], vec![a, b]);
    e.upsert_workload(wl("large", "a", 200, 0, 4));
    assert_eq!(admit_all(&mut e, 0), [key("large")]);
    for i in 1..=4 {
        e.upsert_workload(wl(&format!("a{i}"), "a", 0, i, 1));
        e.upsert_workload(wl(&format!("b{i}"), "b", 0, i, 1));
    }
    e.finish_workload(&key("large"));
    let c = run(&mut e, 1);
    assert_eq!(
        admitted(&c),
        ["a1", "a2", "a3", "a4"].map(key),
        "a's own quota goes to a's queue first"
    );
    for k in admitted(&c) {
        e.confirm_admission(&k);
    }
    // Nothing was lent that a must take back.
    let c = run(&mut e, 2);
    assert!(
        !c.decisions
            .iter()
            .any(|d| matches!(d, Decision::Evict { .. })),
        "{:?}",
        c.decisions
    );
    // Once a has no more queued, b borrows what is left.
    e.finish_workload(&key("a1"));
    assert_eq!(settle(&mut e, 3), [key("b1")]);
}

/// Kueue's `pending_workloads` split: heads that failed to fit are set
/// aside (`inadmissible`), the rest wait in order (`active`), and the
/// LocalQueue's counts are its workloads' share of the same.
#[test]
fn pending_workloads_are_split_as_kueues_metrics_count_them() {
    let mut e = engine(&["f"], vec![cq("a", None, &[("f", 2)])]);
    for (i, name) in ["w1", "w2", "w3", "w4"].iter().enumerate() {
        e.upsert_workload(wl(name, "a", 0, i as i64, 1));
    }
    let before = e.pending_counts();
    assert_eq!(before.cluster_queues["a"], (4, 0));
    assert_eq!(
        before.local_queues[&(NS.to_string(), "lq-a".to_string())],
        (4, 0)
    );
    for _ in 0..4 {
        e.schedule(10);
    }
    let after = e.pending_counts();
    let (active, inadmissible) = after.cluster_queues["a"];
    assert_eq!(
        active + inadmissible,
        e.cluster_queue_status("a").unwrap().pending_workloads
    );
    assert_eq!(
        (active, inadmissible),
        (0, 2),
        "w3 and w4 do not fit and are set aside"
    );
    assert_eq!(
        after.local_queues[&(NS.to_string(), "lq-a".to_string())],
        (0, 2)
    );
}

// ---- the resource-in-use finalizer ----------------------------------------

mod finalizers {
    use super::*;
    use crate::queueing::finalizers::{apply, change, Change, Guarded};
    use crate::vocabulary::keys::RESOURCE_IN_USE_FINALIZER;

    /// Kueue's ClusterQueue and ResourceFlavor reconcilers add the
    /// finalizer to one not being deleted (clusterqueue_controller.go,
    /// resourceflavor_controller.go: the fallback to the webhook's
    /// defaulting), keeping everyone else's.
    #[test]
    fn a_queue_or_flavor_not_being_deleted_gets_the_finalizer() {
        let e = engine(&["f"], vec![cq("cq", None, &[("f", 4)])]);
        for (kind, name) in [
            (Guarded::ClusterQueue, "cq"),
            (Guarded::ResourceFlavor, "f"),
        ] {
            assert_eq!(change(&e, kind, name, false, false), Some(Change::Add));
            assert_eq!(change(&e, kind, name, true, false), None);
        }
        assert_eq!(
            apply(&["someone/else".into()], Change::Add),
            ["someone/else", RESOURCE_IN_USE_FINALIZER]
        );
        assert_eq!(
            apply(
                &[RESOURCE_IN_USE_FINALIZER.into(), "someone/else".into()],
                Change::Remove
            ),
            ["someone/else"]
        );
    }

    /// Modelled on Kueue v0.19.2's "Should be stuck in termination until
    /// admitted workloads finished running", "Should keep the status
    /// counters and Active condition accurate while terminating" and
    /// "Should delete clusterQueues successfully when no admitted
    /// workloads are running" (test/integration/singlecluster/controller/
    /// core/clusterqueue_controller_test.go): a deleted queue keeps its
    /// finalizer while a workload holds quota in it, reports
    /// Active=False/Terminating, admits nothing new, and lets go once the
    /// workload is done.
    #[test]
    fn a_deleted_queue_is_held_until_its_admitted_workloads_finish() {
        let mut e = engine(&["f"], vec![cq("cq", None, &[("f", 4)])]);
        e.upsert_workload(wl("running", "cq", 0, 1, 1));
        assert_eq!(admitted(&e.schedule(10)), [key("running")]);
        e.confirm_admission(&key("running"));
        let mut deleting = cq("cq", None, &[("f", 4)]);
        deleting.terminating = true;
        e.upsert_cluster_queue(deleting);
        assert_eq!(change(&e, Guarded::ClusterQueue, "cq", true, true), None);
        let status = e.cluster_queue_status("cq").unwrap();
        assert_eq!(
            (
                status.active.status,
                status.active.reason,
                status.active.message.as_str(),
                status.reserving_workloads
            ),
            (
                false,
                "Terminating",
                "Can't admit new workloads; clusterQueue is terminating",
                1
            )
        );
        // Room for it, but the queue is terminating: not admitted.
        e.upsert_workload(wl("new", "cq", 0, 2, 1));
        let c = e.schedule(20);
        assert!(admitted(&c).is_empty(), "{:?}", c.decisions);
        e.finish_workload(&key("running"));
        assert_eq!(
            change(&e, Guarded::ClusterQueue, "cq", true, true),
            Some(Change::Remove)
        );
        // A queue nothing was admitted to lets go at once.
        let e = engine(&["f"], vec![cq("cq", None, &[("f", 4)])]);
        assert_eq!(
            change(&e, Guarded::ClusterQueue, "cq", true, true),
            Some(Change::Remove)
        );
    }

    /// Modelled on Kueue v0.19.2's "Should delete the resourceFlavor when
    /// the corresponding clusterQueue no longer uses the resourceFlavor"
    /// and "... when the corresponding clusterQueue is deleted"
    /// (resourceflavor_controller_test.go).
    #[test]
    fn a_deleted_flavor_is_held_while_a_queue_names_it() {
        let mut e = engine(&["f", "g"], vec![cq("cq", None, &[("f", 4)])]);
        assert_eq!(change(&e, Guarded::ResourceFlavor, "f", true, true), None);
        e.upsert_cluster_queue(cq("cq", None, &[("g", 4)]));
        assert_eq!(
            change(&e, Guarded::ResourceFlavor, "f", true, true),
            Some(Change::Remove)
        );
        let mut e = engine(&["f"], vec![cq("cq", None, &[("f", 4)])]);
        e.delete_cluster_queue("cq");
        assert_eq!(
            change(&e, Guarded::ResourceFlavor, "f", true, true),
            Some(Change::Remove)
        );
    }
}

/// The admission decided for `name` in `c`.
fn admission_of(c: &Cycle, name: &str) -> Admission {
    c.decisions
        .iter()
        .find_map(|d| match d {
            Decision::Admit {
                workload,
                admission,
            } if *workload == key(name) => Some(admission.clone()),
            _ => None,
        })
        .expect("admitted")
}

/// Dynamic reclaim, as Kueue v0.19.2's test/integration/singlecluster/
/// scheduler/scheduler_test.go "Should admit workloads when resources are
/// dynamically reclaimed" runs it: a queue full with a 3-pod workload
/// admits a second one once two of the first's pods are reclaimable, while
/// the first still holds the quota of the pod left.
#[test]
fn reclaimable_pods_give_their_quota_back_while_the_workload_runs() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 3)])]);
    let mut first = wl("first", "a", 0, 1, 1);
    first.pod_sets[0].count = 3;
    e.upsert_workload(first.clone());
    let c = run(&mut e, 1);
    let a = admission_of(&c, "first");
    e.confirm_admission(&key("first"));
    first.admission = Some(a);
    e.upsert_workload(first.clone());
    e.upsert_workload(wl("second", "a", 0, 2, 2));
    assert!(settle(&mut e, 2).is_empty(), "no room while all 3 pods run");
    first.readiness.reclaimable = vec![("main".into(), 2)];
    e.upsert_workload(first.clone());
    assert_eq!(settle(&mut e, 3), [key("second")]);
    let status = e.cluster_queue_status("a").unwrap();
    assert_eq!(status.reserving_workloads, 2);
    // A third pod's worth is still held by the first.
    e.confirm_admission(&key("second"));
    e.upsert_workload(wl("third", "a", 0, 4, 1));
    assert!(settle(&mut e, 4).is_empty());
}

/// A Workload backing off after a PodsReadyTimeout eviction
/// (`status.requeueState.requeueAt` set) is not queued until the backoff
/// is over and `requeueAt` is cleared (Kueue v0.19.2 test/integration/
/// singlecluster/scheduler/podsready/scheduler_test.go "Should requeue a
/// workload which exceeded the timeout to reach PodsReady=True").
#[test]
fn a_workload_backing_off_is_not_queued() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 1)])]);
    let mut w = wl("w", "a", 0, 1, 1);
    w.readiness.requeue_at = Some(10_000);
    e.upsert_workload(w.clone());
    let c = run(&mut e, 20_000);
    assert!(admitted(&c).is_empty());
    assert_eq!(
        pending(&c, "w"),
        None,
        "no pending reason while backing off"
    );
    w.readiness.requeue_at = None;
    e.upsert_workload(w);
    assert_eq!(settle(&mut e, 20_001), [key("w")]);
}

/// Kueue v0.19.2 `workload.IsAdmissible`: a pod group waiting for its
/// replacement pods (`WaitingForReplacementPods=True`, e.g. after an
/// eviction deleted them) is not queued until they are back; one that
/// holds quota keeps it (a running group whose pod failed is not
/// evicted for it).
#[test]
fn a_group_waiting_for_replacement_pods_is_not_queued() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 1)])]);
    let mut w = wl("w", "a", 0, 1, 1);
    w.readiness.awaiting_replacements = true;
    e.upsert_workload(w.clone());
    let c = run(&mut e, 1);
    assert!(admitted(&c).is_empty());
    assert_eq!(pending(&c, "w"), None, "no pending reason while waiting");
    w.readiness.awaiting_replacements = false;
    e.upsert_workload(w.clone());
    let c = run(&mut e, 2);
    assert_eq!(admitted(&c), [key("w")]);
    // Admitted, a pod failing keeps the quota.
    w.admission = Some(admission_of(&c, "w"));
    e.confirm_admission(&key("w"));
    w.readiness.awaiting_replacements = true;
    e.upsert_workload(w);
    e.upsert_workload(wl("x", "a", 0, 5, 1));
    let c = run(&mut e, 4);
    assert!(evictions(&c).is_empty(), "{c:?}");
    assert!(admitted(&c).is_empty(), "the quota is still w's");
}

/// blockAdmission (Kueue v0.19.2 test/integration/singlecluster/scheduler/
/// podsready/scheduler_test.go "Should unblock admission of new workloads
/// once the admitted workload is deleted" and the "...NonblockingMode"
/// twin): while an admitted workload is not PodsReady=True nothing else
/// is admitted, even where there is room, and the head says it waits;
/// once it is ready, or with blocking off, admissions go on. One
/// admitted in the same cycle counts as not ready yet.
#[test]
fn block_admission_waits_for_admitted_workloads_to_be_ready() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 4)])]);
    e.set_block_admission(true);
    let mut first = wl("first", "a", 0, 1, 1);
    e.upsert_workload(first.clone());
    let c = run(&mut e, 1);
    first.admission = Some(admission_of(&c, "first"));
    e.confirm_admission(&key("first"));
    first.readiness.pods_ready = Some(false);
    e.upsert_workload(first.clone());
    e.upsert_workload(wl("second", "a", 0, 2, 1));
    // scheduler.go waitForPodsReadyIfNeeded: QuotaReserved=False, `Waiting`
    // with the gate off.
    let c = run(&mut e, 2);
    assert!(admitted(&c).is_empty(), "blocked while first is not ready");
    assert_eq!(
        pending(&c, "second"),
        Some((
            PendingReason::WaitingForPodsReady,
            "waiting for all admitted workloads to be in PodsReady condition".into()
        ))
    );
    assert_eq!(PendingReason::WaitingForPodsReady.legacy_str(), "Waiting");
    assert!(
        settle(&mut e, 2).is_empty(),
        "blocked while first is not ready"
    );
    let mut open = engine(&["default"], vec![cq("a", None, &[("default", 4)])]);
    open.upsert_workload(first.clone());
    open.upsert_workload(wl("second", "a", 0, 2, 1));
    assert_eq!(settle(&mut open, 2), [key("second")]);
    first.readiness.pods_ready = Some(true);
    e.upsert_workload(first);
    assert_eq!(settle(&mut e, 3), [key("second")]);

    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 4)])]);
    e.set_block_admission(true);
    e.upsert_workload(wl("one", "a", 0, 1, 1));
    e.upsert_workload(wl("two", "a", 0, 2, 1));
    assert_eq!(settle(&mut e, 1), [key("one")]);
}

/// Kueue v0.19.2 test/integration/singlecluster/scheduler/scheduler_test.go
/// "Should admit workloads when resources are dynamically reclaimed": a
/// workload waiting with reclaimable pods asks only for the rest, and its
/// admission counts that many pods.
#[test]
fn a_pending_workloads_reclaimable_pods_are_not_asked_for() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 2)])]);
    let mut w = wl("w", "a", 0, 1, 1);
    w.pod_sets[0].count = 3;
    e.upsert_workload(w.clone());
    assert!(settle(&mut e, 1).is_empty(), "3 cpu do not fit in 2");
    w.readiness.reclaimable = vec![("main".into(), 1)];
    e.upsert_workload(w);
    let c = run(&mut e, 2);
    assert_eq!(admitted(&c), [key("w")]);
    let a = admission_of(&c, "w");
    assert_eq!(a.pod_set_assignments[0].count, 2);
    assert_eq!(a.pod_set_assignments[0].resource_usage["cpu"], 2000);
}
