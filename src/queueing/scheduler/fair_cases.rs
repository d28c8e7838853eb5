//! Fair sharing, case by case, as Kueue v0.19.2 decides it (default feature
//! gates). Each case is written from an upstream test (named in
//! `upstream`): the same tree, weights and workloads, and the victims (with
//! their reasons) and admissions upstream expects; one scheduling cycle here
//! stands for upstream's direct call. Quantities are milli-CPUs.
//!
//! Upstream's running workloads all reserved quota at the same instant and
//! have their names as UIDs; so do these (created together, `uid-<name>`).

use std::collections::BTreeMap;

use super::preemption_cases::{outcome, NS};
use super::*;
use crate::queueing::cluster_queue::{
    FlavorQuotas, Preemption, PreemptionPolicy, ResourceGroup, ResourceQuota, StopPolicy,
};
use crate::queueing::fair_sharing::{FairSharing, Strategy};

use PreemptedReason::{
    InClusterQueue as InCq, InCohortFairSharing as Fair, InCohortReclamation as Reclaim,
};
use PreemptionPolicy::{Any, LowerPriority, Never};

/// A ClusterQueue or Cohort: name, parent, nominal milli-CPU, weight,
/// and (queues) `withinClusterQueue`, `reclaimWithinCohort`.
#[derive(Clone, Copy)]
struct N {
    name: &'static str,
    parent: Option<&'static str>,
    nominal: i64,
    weight: Option<f64>,
    within: PreemptionPolicy,
    reclaim: PreemptionPolicy,
}

fn n(name: &'static str, parent: Option<&'static str>, cpu: i64) -> N {
    N {
        name,
        parent,
        nominal: cpu,
        weight: None,
        within: Never,
        reclaim: Never,
    }
}

impl N {
    fn w(mut self, weight: f64) -> Self {
        self.weight = Some(weight);
        self
    }
    fn pre(mut self, within: PreemptionPolicy, reclaim: PreemptionPolicy) -> Self {
        self.within = within;
        self.reclaim = reclaim;
        self
    }
}

/// `baseCQs` of TestFairPreemptions: a, b, c (3 CPU each, LowerPriority
/// within, Any reclaim) and `preemptible` (0) in the Cohort `all`.
fn base() -> Vec<N> {
    let all = Some("all");
    vec![
        n("a", all, 3000).pre(LowerPriority, Any),
        n("b", all, 3000).pre(LowerPriority, Any),
        n("c", all, 3000).pre(LowerPriority, Any),
        n("preemptible", all, 0),
    ]
}

fn groups(cpu: i64) -> Vec<ResourceGroup> {
    vec![ResourceGroup {
        covered_resources: vec!["cpu".into()],
        flavors: vec![FlavorQuotas {
            name: "default".into(),
            resources: vec![ResourceQuota {
                name: "cpu".into(),
                nominal: cpu,
                borrowing_limit: None,
                lending_limit: None,
            }],
        }],
    }]
}

/// (name, ClusterQueue, priority, milli-CPU).
type W = (&'static str, &'static str, i32, i64);

fn workload(w: &W, created: i64, admitted: bool) -> Workload {
    let (name, cq, priority, cpu) = *w;
    // The shared helper counts whole CPUs.
    let mut wl = super::preemption_cases::workload(&(name, cq, priority, 0), created, admitted);
    wl.pod_sets[0].requests = [("cpu".to_string(), cpu)].into_iter().collect();
    if let Some(a) = &mut wl.admission {
        a.pod_set_assignments[0].resource_usage = [("cpu".to_string(), cpu)].into();
    }
    wl
}

fn engine(cohorts: &[N], queues: &[N], strategies: &[Strategy], running: &[W]) -> Engine {
    let mut e = Engine::new();
    e.upsert_flavor(crate::queueing::ResourceFlavor {
        name: "default".into(),
        node_labels: BTreeMap::new(),
        node_taints: vec![],
        tolerations: vec![],
        topology_name: None,
        topology_levels: None,
    });
    let mut fair = FairSharing {
        preemption_strategies: strategies.to_vec(),
        ..FairSharing::default()
    };
    for c in cohorts {
        e.upsert_cohort(Cohort {
            name: c.name.into(),
            parent: c.parent.map(Into::into),
            resource_groups: groups(c.nominal),
        });
        if let Some(w) = c.weight {
            fair.cohort_weights.insert(c.name.into(), w);
        }
    }
    for q in queues {
        e.upsert_local_queue(LocalQueue {
            namespace: NS.into(),
            name: format!("lq-{}", q.name),
            cluster_queue: q.name.into(),
            stop_policy: StopPolicy::None,
            fair_sharing: Default::default(),
        });
        e.upsert_cluster_queue(ClusterQueue {
            name: q.name.into(),
            cohort: q.parent.map(Into::into),
            queueing_strategy: Default::default(),
            namespace_selector: Some(Default::default()),
            resource_groups: groups(q.nominal),
            preemption: Preemption {
                within_cluster_queue: q.within,
                reclaim_within_cohort: q.reclaim,
                borrow_within_cohort: None,
            },
            flavor_fungibility: Default::default(),
            stop_policy: StopPolicy::None,
            admission_fair_sharing: false,
            terminating: false,
        });
        if let Some(w) = q.weight {
            fair.cluster_queue_weights.insert(q.name.into(), w);
        }
    }
    e.set_fair_sharing(Some(fair));
    for w in running {
        e.upsert_workload(workload(w, 1, true));
    }
    e
}

struct Case {
    upstream: &'static str,
    cohorts: Vec<N>,
    queues: Vec<N>,
    strategies: Vec<Strategy>,
    running: Vec<W>,
    incoming: Vec<W>,
    evicted: Vec<(&'static str, PreemptedReason)>,
    admitted: Vec<&'static str>,
}

/// `count` unit workloads `<prefix><i>` in `cq`, from 1.
fn units(prefix: &'static str, cq: &'static str, count: usize) -> Vec<W> {
    const NAMES: [&str; 10] = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"];
    (0..count)
        .map(|i| {
            let name: &'static str = Box::leak(format!("{prefix}{}", NAMES[i]).into_boxed_str());
            (name, cq, 0, 1000)
        })
        .collect()
}

fn cat(parts: &[Vec<W>]) -> Vec<W> {
    parts.concat()
}

fn preemption_cases() -> Vec<Case> {
    let fp = |s: &'static str| format!("TestFairPreemptions/{s}");
    let c = |upstream: String,
             running: Vec<W>,
             incoming: W,
             evicted: Vec<(&'static str, PreemptedReason)>| Case {
        upstream: Box::leak(upstream.into_boxed_str()),
        cohorts: vec![],
        queues: base(),
        strategies: vec![],
        running,
        incoming: vec![incoming],
        evicted,
        admitted: vec![],
    };
    let all = Some("all");
    vec![
        c(
            fp("reclaim nominal from user using the most"),
            cat(&[units("a", "a", 3), units("b", "b", 5), units("c", "c", 1)]),
            ("c_incoming", "c", 0, 1000),
            vec![("b1", Reclaim)],
        ),
        c(
            fp("can reclaim from queue using less, if taking the latest workload from user using the most isn't enough"),
            vec![
                ("a1", "a", 0, 3000),
                ("a2", "a", 0, 1000),
                ("b1", "b", 0, 2000),
                ("b2", "b", 0, 3000),
            ],
            ("c_incoming", "c", 0, 3000),
            vec![("a1", Reclaim)],
        ),
        c(
            fp("reclaim borrowable quota from user using the most"),
            cat(&[units("a", "a", 3), units("b", "b", 5), units("c", "c", 1)]),
            ("a_incoming", "a", 0, 1000),
            vec![("b1", Fair)],
        ),
        c(
            fp("preempt one from each CQ borrowing"),
            vec![
                ("a1", "a", 0, 500),
                ("a2", "a", 0, 500),
                ("a3", "a", 0, 3000),
                ("b1", "b", 0, 500),
                ("b2", "b", 0, 500),
                ("b3", "b", 0, 3000),
            ],
            ("c_incoming", "c", 0, 2000),
            vec![("a1", Reclaim), ("b1", Reclaim)],
        ),
        c(
            fp("can't preempt when everyone under nominal"),
            cat(&[units("a", "a", 3), units("b", "b", 3), units("c", "c", 3)]),
            ("c_incoming", "c", 0, 1000),
            vec![],
        ),
        c(
            fp("can't preempt when it would switch the imbalance"),
            cat(&[units("a", "a", 3), units("b", "b", 5)]),
            ("a_incoming", "a", 0, 2000),
            vec![],
        ),
        c(
            fp("can preempt lower priority workloads from same CQ"),
            cat(&[
                vec![("a1_low", "a", -1, 1000), ("a2_low", "a", -1, 1000)],
                vec![("a3", "a", 0, 1000), ("a4", "a", 0, 1000)],
                units("b", "b", 5),
            ]),
            ("a_incoming", "a", 0, 2000),
            vec![("a1_low", InCq), ("a2_low", InCq)],
        ),
        c(
            fp("can preempt a combination of same CQ and highest user"),
            cat(&[
                vec![("a_low", "a", -1, 1000), ("a2", "a", 0, 1000), ("a3", "a", 0, 1000)],
                units("b", "b", 6),
            ]),
            ("a_incoming", "a", 0, 2000),
            vec![("a_low", InCq), ("b1", Fair)],
        ),
        c(
            fp("preempt huge workload if there is no other option, as long as the target CQ gets a lower share"),
            vec![("b1", "b", 0, 9000)],
            ("a_incoming", "a", 0, 2000),
            vec![("b1", Reclaim)],
        ),
        c(
            fp("can't preempt huge workload if the incoming is also huge"),
            vec![("a1", "a", 0, 2000), ("b1", "b", 0, 7000)],
            ("a_incoming", "a", 0, 5000),
            vec![],
        ),
        c(
            fp("can't preempt 2 smaller workloads if the incoming is huge"),
            vec![("b1", "b", 0, 2000), ("b2", "b", 0, 2000), ("b3", "b", 0, 3000)],
            ("a_incoming", "a", 0, 6000),
            vec![],
        ),
        c(
            fp("preempt from target and others even if over nominal"),
            vec![
                ("a1_low", "a", -1, 2000),
                ("a2_low", "a", -1, 1000),
                ("b1", "b", 0, 3000),
                ("b2", "b", 0, 3000),
            ],
            ("a_incoming", "a", 0, 4000),
            vec![("a1_low", InCq), ("b1", Fair)],
        ),
        c(
            fp("prefer to preempt workloads that don't make the target CQ have the biggest share"),
            vec![
                ("b1", "b", 0, 2000),
                ("b2", "b", 0, 1000),
                ("b3", "b", 0, 2000),
                ("c1", "c", 0, 1000),
            ],
            ("a_incoming", "a", 0, 3500),
            vec![("b2", Fair)],
        ),
        c(
            fp("preempt from different cluster queues if the end result has a smaller max share"),
            vec![
                ("b1", "b", 0, 2000),
                ("b2", "b", 0, 2500),
                ("c1", "c", 0, 2000),
                ("c2", "c", 0, 2500),
            ],
            ("a_incoming", "a", 0, 3500),
            vec![("b1", Fair), ("c1", Fair)],
        ),
        c(
            fp("scenario above does not flap"),
            vec![("a1", "a", 0, 3500), ("b2", "b", 0, 2500), ("c2", "c", 0, 2500)],
            ("b_incoming", "b", 0, 2000),
            vec![],
        ),
        c(
            fp("cannot preempt if it would make the candidate CQ go under nominal after preempting one element"),
            vec![("b1", "b", 0, 3000), ("b2", "b", 0, 3000), ("c1", "c", 0, 3000)],
            ("a_incoming", "a", 0, 4000),
            vec![],
        ),
        c(
            fp("workloads under priority threshold not capriciously preempted"),
            cat(&[
                units("a", "a", 3),
                units("b", "b", 3),
                vec![
                    ("preemptible1", "preemptible", -3, 1000),
                    ("preemptible2", "preemptible", -3, 1000),
                    ("preemptible3", "preemptible", -3, 1000),
                ],
            ]),
            ("a_incoming", "a", 0, 2000),
            vec![],
        ),
        Case {
            strategies: vec![Strategy::LessThanInitialShare],
            ..c(
                fp("preempt lower priority first, even if big"),
                vec![("a1", "a", 0, 3000), ("b_low", "b", 0, 5000), ("b_high", "b", 1, 1000)],
                ("a_incoming", "a", 0, 1000),
                vec![("b_low", Fair)],
            )
        },
        Case {
            strategies: vec![Strategy::LessThanOrEqualToFinalShare],
            ..c(
                fp("preempt workload that doesn't transfer the imbalance, even if high priority"),
                vec![("a1", "a", 0, 3000), ("b_low", "b", 0, 5000), ("b_high", "b", 1, 1000)],
                ("a_incoming", "a", 0, 1000),
                vec![("b_high", Fair)],
            )
        },
        Case {
            queues: vec![
                n("a", all, 3000).pre(LowerPriority, Any).w(2.0),
                n("b", all, 3000).pre(LowerPriority, Any),
                n("c", all, 3000).pre(LowerPriority, Any),
            ],
            ..c(
                fp("CQ with higher weight can preempt more"),
                cat(&[units("a", "a", 3), units("b", "b", 6)]),
                ("a_incoming", "a", 0, 2000),
                vec![("b1", Fair), ("b2", Fair)],
            )
        },
        Case {
            queues: vec![
                n("a", all, 3000).pre(LowerPriority, Any),
                n("b", all, 3000).pre(LowerPriority, Any).w(0.0),
                n("c", all, 3000).pre(LowerPriority, Any),
            ],
            ..c(
                fp("can preempt anything borrowing from CQ with 0 weight"),
                cat(&[units("a", "a", 3), units("b", "b", 6)]),
                ("a_incoming", "a", 0, 3000),
                vec![("b1", Fair), ("b2", Fair), ("b3", Fair)],
            )
        },
        Case {
            queues: vec![
                n("a", all, 3000).pre(LowerPriority, Any),
                n("b", all, 3000).pre(LowerPriority, Any).w(0.0),
            ],
            ..c(
                fp("can't preempt nominal from CQ with 0 weight"),
                cat(&[units("a", "a", 3), units("b", "b", 3)]),
                ("a_incoming", "a", 0, 1000),
                vec![],
            )
        },
        Case {
            cohorts: vec![n("right-cohort", Some("root"), 1000).w(0.0)],
            queues: vec![
                n("left-cq", Some("root"), 0).pre(Never, Any),
                n("right-cq", Some("right-cohort"), 0).pre(Never, Any).w(0.0),
            ],
            ..c(
                fp("can't preempt nominal from Cohort with 0 weight"),
                vec![("right-1", "right-cq", 0, 1000)],
                ("left-1", "left-cq", 0, 1000),
                vec![],
            )
        },
        Case {
            queues: vec![n("a", None, 1000).pre(LowerPriority, Never)],
            ..c(
                fp("can preempt within cluster queue when no cohort"),
                vec![("a1", "a", 0, 1000)],
                ("a_incoming", "a", 1000, 1000),
                vec![("a1", InCq)],
            )
        },
        Case {
            cohorts: vec![
                n("ROOT", None, 5000),
                n("LEFT", Some("ROOT"), 5000).w(2.0),
                n("RIGHT", Some("ROOT"), 5000),
            ],
            queues: vec![
                n("a", Some("LEFT"), 1000).w(2.0).pre(Never, Any),
                n("b", Some("LEFT"), 1000),
                n("c", Some("ROOT"), 1000),
                n("d", Some("RIGHT"), 1000),
                n("e", Some("RIGHT"), 1000).w(0.99),
            ],
            ..c(
                fp("hierarchical preemption"),
                ["b", "c", "d", "e"]
                    .iter()
                    .flat_map(|q| {
                        units(q, q, 5)
                            .into_iter()
                            .enumerate()
                            .map(|(i, (name, cq, _, cpu))| (name, cq, i as i32 + 1, cpu))
                    })
                    .collect(),
                ("unit", "a", 0, 5000),
                vec![("b1", Fair), ("b2", Fair), ("c1", Fair), ("c2", Fair), ("e1", Fair)],
            )
        },
        Case {
            cohorts: vec![n("ROOT", None, 0), n("RIGHT", Some("ROOT"), 1000).w(0.1)],
            queues: vec![
                n("a", Some("ROOT"), 5000).w(10.0).pre(LowerPriority, Any),
                n("b", Some("RIGHT"), 0).w(0.1),
            ],
            ..c(
                fp("borrowing cq in non-borrowing cohort is protected"),
                vec![
                    ("a1", "a", -1, 1000),
                    ("a2", "a", -1, 1000),
                    ("a3", "a", -1, 1000),
                    ("b1", "b", -1, 1000),
                ],
                ("unit", "a", 0, 5000),
                vec![("a1", InCq), ("a2", InCq), ("a3", InCq)],
            )
        },
        Case {
            cohorts: vec![n("ROOT", None, 0), n("RIGHT", Some("ROOT"), 3000).w(0.1)],
            queues: vec![
                n("a", Some("ROOT"), 5000).w(10.0).pre(LowerPriority, LowerPriority),
                n("b", Some("RIGHT"), 0).w(0.1),
            ],
            ..c(
                fp("forced to preempt within clusterqueue because borrowing workload too important"),
                vec![
                    ("a1", "a", -1, 1000),
                    ("a2", "a", -1, 1000),
                    ("a3", "a", -1, 1000),
                    ("b1", "b", 100, 4000),
                ],
                ("unit", "a", 0, 4000),
                vec![("a1", InCq), ("a2", InCq), ("a3", InCq)],
            )
        },
        Case {
            cohorts: vec![
                n("ROOT", None, 0),
                n("A", Some("ROOT"), 0).w(1.01),
                n("AA", Some("A"), 0),
                n("AAA", Some("AA"), 0),
                n("B", Some("ROOT"), 0).w(0.99),
                n("BB", Some("B"), 0),
                n("BBB", Some("BB"), 0),
                n("C", Some("ROOT"), 0),
                n("CC", Some("C"), 0),
                n("CCC", Some("CC"), 0),
                n("CCCC", Some("CCC"), 1000),
            ],
            queues: vec![
                n("a", Some("AAA"), 0).pre(Never, Any),
                n("b", Some("BBB"), 0),
            ],
            ..c(
                fp("deep preemption"),
                vec![("b1", "b", 0, 1000)],
                ("a1", "a", 0, 1000),
                vec![("b1", Fair)],
            )
        },
        Case {
            queues: vec![
                n("a", Some("ROOT"), 1000).w(0.0).pre(Never, Any),
                n("b", Some("ROOT"), 0).w(1.0),
            ],
            ..c(
                fp("cq with zero weight can reclaim nominal quota"),
                vec![("b1", "b", 0, 1000)],
                ("a1", "a", 0, 1000),
                vec![("b1", Reclaim)],
            )
        },
        Case {
            cohorts: vec![n("A", Some("ROOT"), 1000).w(0.0)],
            queues: vec![
                n("a", Some("A"), 0).w(0.0).pre(Never, Any),
                n("b", Some("ROOT"), 0).w(1.0),
            ],
            ..c(
                fp("cohort with zero weight can reclaim nominal quota"),
                vec![("b1", "b", 0, 1000)],
                ("a1", "a", 0, 1000),
                vec![("b1", Fair)],
            )
        },
        Case {
            queues: vec![
                n("a", all, 1000).w(0.0).pre(Never, Any),
                n("b", all, 1000).w(1.0),
            ],
            ..c(
                fp("zero weight borrowing preemptor cannot preempt from a borrowing CQ with a non-zero weight"),
                cat(&[units("a", "a", 1), units("b", "b", 2)]),
                ("a_incoming", "a", 0, 1000),
                vec![],
            )
        },
        Case {
            cohorts: vec![n("all", None, 3000)],
            queues: vec![
                n("a", all, 1000).w(0.0).pre(Never, Any),
                n("b", all, 0).w(0.0),
            ],
            ..c(
                fp("zero weight borrowing preemptor can preempt from a borrowing CQ which also has zero weight"),
                units("b", "b", 3),
                ("a_incoming", "a", 0, 2000),
                vec![("b1", Fair)],
            )
        },
        Case {
            cohorts: vec![n("all", None, 3000)],
            queues: vec![
                n("a", all, 1000).w(1.0).pre(Never, Any),
                n("b", all, 0).w(1.0),
            ],
            ..c(
                fp("non-zero weight borrowing preemptor preempts from a borrowing CQ"),
                units("b", "b", 3),
                ("a_incoming", "a", 0, 2000),
                vec![("b1", Fair)],
            )
        },
        Case {
            cohorts: vec![n("A", Some("ROOT"), 1000).w(0.0)],
            queues: vec![
                n("p", Some("A"), 2000).w(1.0).pre(Never, Any),
                n("y", Some("A"), 2000).w(1.0),
                n("x", Some("ROOT"), 1000).w(1.0),
            ],
            ..c(
                fp("candidates skipped by the first strategy are still available to the second strategy"),
                vec![
                    ("p1", "p", 0, 2000),
                    ("y1", "y", 0, 2000),
                    ("y2", "y", 0, 2000),
                    ("x1", "x", 0, 1000),
                    ("x2", "x", 0, 1000),
                ],
                ("p_incoming", "p", 0, 1000),
                vec![("x1", Fair), ("y1", Fair)],
            )
        },
    ]
}

fn check(cases: Vec<Case>) {
    for case in cases {
        let mut e = engine(&case.cohorts, &case.queues, &case.strategies, &case.running);
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
fn fair_preemption_chooses_kueues_victims() {
    check(preemption_cases());
}

/// `TestScheduleForFairSharing` (pkg/scheduler/scheduler_fs_test.go): which
/// head of which ClusterQueue the tournament lets in first.
fn schedule_cases() -> Vec<Case> {
    let fs = |s: &'static str| -> &'static str {
        Box::leak(format!("TestScheduleForFairSharing/{s}").into_boxed_str())
    };
    let (a, b, c) = (Some("A"), Some("B"), Some("C"));
    let pair = |weight: Option<f64>| {
        let mut qs = vec![n("b", a, 0), n("c", a, 0)];
        if let Some(w) = weight {
            qs = qs.into_iter().map(|q| q.w(w)).collect();
        }
        qs
    };
    let case = |upstream, cohorts, queues, running, incoming, admitted| Case {
        upstream,
        cohorts,
        queues,
        strategies: vec![],
        running,
        incoming,
        evicted: vec![],
        admitted,
    };
    vec![
        // A(200) > {B > {d, e}, C > {f, g}}: B with d1 (DRS 500 at A) beats
        // C with f1 (505); inside B, d1 (400) beats e1 (405). Then nothing
        // else fits.
        case(
            fs("hierarchical fair sharing schedule workload which wins tournament"),
            vec![n("A", None, 200_000), n("B", a, 0), n("C", a, 0)],
            vec![n("d", b, 0), n("e", b, 0), n("f", c, 0), n("g", c, 0)],
            vec![
                ("d0", "d", 0, 10_000),
                ("e0", "e", 0, 20_000),
                ("g0", "g", 0, 100_000),
            ],
            vec![
                ("d1", "d", 0, 70_000),
                ("e1", "e", 0, 61_000),
                ("f1", "f", 0, 1000),
                ("g1", "g", 0, 1000),
            ],
            vec!["d1"],
        ),
        // b0 + b1 = 60 is less than c1 = 75.
        case(
            fs("fair sharing schedule workload with lowest drf after admission"),
            vec![n("A", None, 100_000)],
            pair(None),
            vec![("b0", "b", 0, 10_000)],
            vec![("b1", "b", 0, 50_000), ("c1", "c", 0, 75_000)],
            vec!["b1"],
        ),
        case(
            fs("fair sharing two queues with weight 0 schedules workload which borrows less"),
            vec![n("A", None, 8000)],
            pair(Some(0.0)),
            vec![("b0", "b", 0, 4000)],
            vec![("b1", "b", 9001, 4000), ("c1", "c", 0, 4000)],
            vec!["c1"],
        ),
        case(
            fs("fair sharing two queues with high weight schedules workload which borrows less"),
            vec![n("A", None, 8000)],
            pair(Some(123_456_789.0)),
            vec![("b0", "b", 0, 4000)],
            vec![("b1", "b", 9001, 4000), ("c1", "c", 0, 4000)],
            vec!["c1"],
        ),
        case(
            fs("fair sharing schedule highest priority first"),
            vec![n("A", None, 10_000)],
            pair(None),
            vec![],
            vec![("b1", "b", 99, 10_000), ("c1", "c", 101, 10_000)],
            vec!["c1"],
        ),
        // c1 was created first (incoming workloads are created in order).
        case(
            fs("fair sharing schedule earliest timestamp first"),
            vec![n("A", None, 10_000)],
            pair(None),
            vec![],
            vec![("c1", "c", 101, 10_000), ("b1", "b", 101, 10_000)],
            vec!["c1"],
        ),
    ]
}

#[test]
fn the_tournament_admits_what_kueue_admits() {
    check(schedule_cases());
}

#[test]
fn without_fair_sharing_the_classical_order_decides() {
    // The weight-0 schedule case with fair sharing off: both heads borrow
    // at the same level, so priority decides and b1 (9001) goes first; the
    // tournament is what lets c1 in.
    let cases = schedule_cases();
    let case = &cases[2];
    let mut e = engine(&case.cohorts, &case.queues, &[], &case.running);
    e.set_fair_sharing(None);
    for (i, w) in case.incoming.iter().enumerate() {
        e.upsert_workload(workload(w, 100 + i as i64, false));
    }
    let (_, admitted) = outcome(&e.schedule(1_000));
    assert_eq!(admitted, vec!["b1".to_string()]);
}

#[test]
fn weighted_shares_are_reported_for_queues_and_cohorts() {
    // A(200) > {B > {d, e}, C > {f, g}} with d1 admitted as above: d uses
    // 80 of the 200 it could borrow (400), B 100 (500); C 100 (500); the
    // root has no parent (0). Off: nothing.
    let cases = schedule_cases();
    let case = &cases[0];
    let mut e = engine(&case.cohorts, &case.queues, &[], &case.running);
    for (i, w) in case.incoming.iter().enumerate() {
        e.upsert_workload(workload(w, 100 + i as i64, false));
    }
    let cycle = e.schedule(1_000);
    let d = cycle
        .statuses
        .iter()
        .find(|s| s.name == "d")
        .map(|s| s.weighted_share);
    assert_eq!(d, Some(Some(400)));
    assert_eq!(e.cluster_queue_weighted_share("g"), Some(500));
    assert_eq!(e.cluster_queue_weighted_share("f"), Some(0));
    let cohorts = e.cohort_weighted_shares();
    assert_eq!(
        (cohorts.get("A"), cohorts.get("B"), cohorts.get("C")),
        (Some(&0), Some(&500), Some(&500))
    );
    e.set_fair_sharing(None);
    assert_eq!(e.cluster_queue_weighted_share("d"), None);
    assert!(e.cohort_weighted_shares().is_empty());
}
