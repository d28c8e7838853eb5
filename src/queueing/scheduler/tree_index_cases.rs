//! Property test: the engine that requeues a tree's set-aside workloads from
//! its index and adds ClusterQueues to the quota tree in place decides
//! exactly as one that walks the whole tree on every release and rebuilds
//! the tree on every add (`by_walk`, the engine before both): same
//! decisions, statuses and pending counts after every step, over random
//! Cohort trees (implicit Cohorts, loops, lending and borrowing limits) and
//! random events. And the engine that joins ClusterQueues added together
//! in one rebuild ([`Engine::defer`]) decides as the one that adds them
//! one by one.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::queueing::{
    ClusterQueue, Cohort, Decision, Engine, FlavorQuotas, LocalQueue, PendingReason, PodSet,
    Preemption, PreemptionPolicy, QueueingStrategy, ResourceFlavor, ResourceGroup, ResourceQuota,
    StopPolicy, Workload,
};

fn groups(nominal: i64, bl: Option<i64>, ll: Option<i64>) -> Vec<ResourceGroup> {
    vec![ResourceGroup {
        covered_resources: vec!["cpu".into()],
        flavors: vec![FlavorQuotas {
            name: "f".into(),
            resources: vec![ResourceQuota {
                name: "cpu".into(),
                nominal,
                borrowing_limit: bl,
                lending_limit: ll,
            }],
        }],
    }]
}

fn policy(i: u8) -> PreemptionPolicy {
    [
        PreemptionPolicy::Never,
        PreemptionPolicy::LowerPriority,
        PreemptionPolicy::LowerOrNewerEqualPriority,
        PreemptionPolicy::Any,
    ][usize::from(i % 4)]
}

#[derive(Debug, Clone)]
enum Op {
    Cohort {
        c: usize,
        parent: Option<usize>,
        nominal: i64,
        ll: Option<i64>,
    },
    Queue {
        q: usize,
        /// Cohorts 0–3; 4 and 5 are never defined (implicit).
        cohort: Option<usize>,
        nominal: i64,
        bl: Option<i64>,
        strict: bool,
        policies: (u8, u8),
    },
    DeleteQueue(usize),
    /// LocalQueue `lq{lq}` pointed at ClusterQueue `q{q}` (created or moved).
    LocalQueue {
        lq: usize,
        q: usize,
    },
    Add {
        q: usize,
        cpu: i64,
        priority: i32,
    },
    Finish(usize),
    /// One cycle; every admission confirmed (or, on `true`, the `n`th set
    /// aside as a device placement would), every eviction confirmed.
    Cycle(bool, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0usize..4, proptest::option::of(0usize..6), 0i64..4, proptest::option::of(0i64..3))
            .prop_map(|(c, parent, nominal, ll)| Op::Cohort { c, parent, nominal, ll }),
        2 => (0usize..6, proptest::option::weighted(0.85, 0usize..6), 0i64..4,
              proptest::option::of(0i64..3), any::<bool>(), (0u8..4, 0u8..4))
            .prop_map(|(q, cohort, nominal, bl, strict, policies)| Op::Queue {
                q, cohort, nominal, bl, strict, policies,
            }),
        1 => (0usize..6).prop_map(Op::DeleteQueue),
        1 => (0usize..8, 0usize..6).prop_map(|(lq, q)| Op::LocalQueue { lq, q }),
        5 => (0usize..8, 1i64..4, 0i32..3).prop_map(|(q, cpu, priority)| Op::Add { q, cpu, priority }),
        3 => (0usize..64).prop_map(Op::Finish),
        5 => (proptest::bool::weighted(0.15), 0usize..4).prop_map(|(s, n)| Op::Cycle(s, n)),
    ]
}

fn engine(by_walk: bool) -> Engine {
    let mut e = Engine::new();
    e.by_walk = by_walk;
    e.upsert_flavor(ResourceFlavor {
        name: "f".into(),
        node_labels: BTreeMap::new(),
        node_taints: vec![],
        tolerations: vec![],
        topology_name: None,
        topology_levels: None,
    });
    for q in 0..6 {
        e.upsert_local_queue(LocalQueue {
            namespace: "ns".into(),
            name: format!("lq{q}"),
            cluster_queue: format!("q{q}"),
            stop_policy: StopPolicy::None,
            fair_sharing: Default::default(),
        });
    }
    e
}

/// Applies `op` to `e`; returns what the engine said (cycles only).
fn apply(e: &mut Engine, op: &Op, seq: usize, now: i64) -> Option<super::Cycle> {
    match op {
        Op::Cohort {
            c,
            parent,
            nominal,
            ll,
        } => e.upsert_cohort(Cohort {
            name: format!("c{c}"),
            parent: parent.map(|p| format!("c{p}")),
            resource_groups: groups(nominal * 1000, None, ll.map(|l| l * 1000)),
        }),
        Op::Queue {
            q,
            cohort,
            nominal,
            bl,
            strict,
            policies,
        } => e.upsert_cluster_queue(ClusterQueue {
            name: format!("q{q}"),
            cohort: cohort.map(|c| format!("c{c}")),
            queueing_strategy: if *strict {
                QueueingStrategy::StrictFIFO
            } else {
                QueueingStrategy::BestEffortFIFO
            },
            namespace_selector: Some(Default::default()),
            resource_groups: groups(nominal * 1000, bl.map(|b| b * 1000), None),
            preemption: Preemption {
                within_cluster_queue: match policy(policies.0) {
                    PreemptionPolicy::Any => PreemptionPolicy::LowerPriority,
                    p => p,
                },
                reclaim_within_cohort: policy(policies.1),
                borrow_within_cohort: None,
            },
            flavor_fungibility: Default::default(),
            stop_policy: StopPolicy::None,
            admission_fair_sharing: false,
            terminating: false,
        }),
        Op::DeleteQueue(q) => e.delete_cluster_queue(&format!("q{q}")),
        Op::LocalQueue { lq, q } => e.upsert_local_queue(LocalQueue {
            namespace: "ns".into(),
            name: format!("lq{lq}"),
            cluster_queue: format!("q{q}"),
            stop_policy: StopPolicy::None,
            fair_sharing: Default::default(),
        }),
        Op::Add { q, cpu, priority } => e.upsert_workload(Workload {
            unhealthy_nodes: Vec::new(),
            single_pod_owned: false,
            namespace: "ns".into(),
            name: format!("w{seq}"),
            uid: format!("u{seq}").into(),
            job_uid: None,
            copy_chain: None,
            queue_name: format!("lq{q}").into(),
            priority: *priority,
            created: seq as i64,
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
        }),
        Op::Finish(n) => {
            let holding: Vec<String> = (0..seq)
                .map(|i| format!("ns/w{i}"))
                .filter(|k| e.admission(k).is_some())
                .collect();
            if !holding.is_empty() {
                e.finish_workload(&holding[n % holding.len()]);
            }
        }
        Op::Cycle(set_aside, n) => {
            let cycle = e.schedule(now);
            let admitted: Vec<&String> = cycle
                .decisions
                .iter()
                .filter_map(|d| match d {
                    Decision::Admit { workload, .. } => Some(workload),
                    _ => None,
                })
                .collect();
            let aside = (*set_aside && !admitted.is_empty()).then(|| admitted[n % admitted.len()]);
            for d in &cycle.decisions {
                match d {
                    Decision::Admit { workload, .. } if Some(workload) == aside => e
                        .set_aside_admission(
                            workload,
                            PendingReason::WaitingForQuota,
                            "no node".into(),
                        ),
                    Decision::Admit { workload, .. } => e.confirm_admission(workload),
                    Decision::Evict { workload, .. } => e.confirm_eviction(workload),
                    Decision::Pending { .. } | Decision::Replace { .. } => {}
                }
            }
            return Some(cycle);
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn index_and_in_place_adds_decide_as_the_tree_walk(
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        let mut fast = engine(false);
        let mut walk = engine(true);
        for (seq, op) in ops.iter().enumerate() {
            let now = seq as i64;
            let a = apply(&mut fast, op, seq, now);
            let b = apply(&mut walk, op, seq, now);
            prop_assert_eq!(&a, &b, "step {} ({:?})", seq, op);
            prop_assert_eq!(fast.pending_counts(), walk.pending_counts(), "step {}", seq);
            // The counts kept as workloads change read as a walk over them.
            prop_assert_eq!(fast.pending_counts(), fast.pending_counts_by_walk(), "step {}", seq);
            prop_assert_eq!(
                fast.local_queue_statuses(),
                fast.local_queue_statuses_by_walk(),
                "step {}",
                seq
            );
            for cq in fast.cluster_queues.keys() {
                prop_assert_eq!(
                    fast.cluster_queue_status(cq),
                    fast.cluster_queue_status_by_walk(cq),
                    "step {} queue {}",
                    seq,
                    cq
                );
            }
        }
        // And once every queue is tried again, the same end state.
        for now in 1000..1010 {
            let a = apply(&mut fast, &Op::Cycle(false, 0), 0, now);
            let b = apply(&mut walk, &Op::Cycle(false, 0), 0, now);
            prop_assert_eq!(a, b);
        }
    }

    /// ClusterQueues added between `defer` and `settle` (as the controller
    /// feeds a burst of watch events) join the tree together: the same
    /// decisions after every step and the same pending counts after every
    /// settle as the engine that rebuilds the tree on every add.
    #[test]
    fn queues_added_together_decide_as_added_one_by_one(
        ops in proptest::collection::vec((op(), any::<bool>()), 1..60),
    ) {
        let mut deferred = engine(false);
        let mut walk = engine(true);
        deferred.defer();
        for (seq, (op, settle)) in ops.iter().enumerate() {
            let now = seq as i64;
            let a = apply(&mut deferred, op, seq, now);
            let b = apply(&mut walk, op, seq, now);
            prop_assert_eq!(&a, &b, "step {} ({:?})", seq, op);
            if *settle {
                deferred.settle();
                prop_assert_eq!(deferred.pending_counts(), walk.pending_counts(), "step {}", seq);
                deferred.defer();
            }
        }
        deferred.settle();
        for now in 1000..1010 {
            let a = apply(&mut deferred, &Op::Cycle(false, 0), 0, now);
            let b = apply(&mut walk, &Op::Cycle(false, 0), 0, now);
            prop_assert_eq!(a, b);
        }
    }
}
