//! Dominant resource shares as Kueue computes them
//! (`pkg/cache/scheduler/fair_sharing_test.go`, v0.19.2), case by case.

use super::*;
use crate::queueing::cluster_queue::{ClusterQueue, FlavorQuotas, ResourceGroup, ResourceQuota};
use crate::queueing::cohort::Cohort;

/// (flavor, resource, nominal, borrowing limit, lending limit), milli-units.
type Q = (&'static str, &'static str, i64, Option<i64>, Option<i64>);

fn groups(quotas: &[Q]) -> Vec<ResourceGroup> {
    let mut flavors: Vec<FlavorQuotas> = Vec::new();
    for (f, r, nominal, bl, ll) in quotas {
        let rq = ResourceQuota {
            name: r.to_string(),
            nominal: *nominal,
            borrowing_limit: *bl,
            lending_limit: *ll,
        };
        match flavors.iter_mut().find(|fq| fq.name == *f) {
            Some(fq) => fq.resources.push(rq),
            None => flavors.push(FlavorQuotas {
                name: f.to_string(),
                resources: vec![rq],
            }),
        }
    }
    let mut covered: Vec<String> = quotas.iter().map(|q| q.1.to_string()).collect();
    covered.dedup();
    vec![ResourceGroup {
        covered_resources: covered,
        flavors,
    }]
}

fn cq(name: &str, cohort: Option<&str>, quotas: &[Q]) -> ClusterQueue {
    ClusterQueue {
        name: name.into(),
        cohort: cohort.map(Into::into),
        queueing_strategy: Default::default(),
        namespace_selector: Some(Default::default()),
        resource_groups: groups(quotas),
        preemption: Default::default(),
        flavor_fungibility: Default::default(),
        stop_policy: Default::default(),
        admission_fair_sharing: false,
        terminating: false,
    }
}

fn cohort(name: &str, parent: Option<&str>, quotas: &[Q]) -> Cohort {
    Cohort {
        name: name.into(),
        parent: parent.map(Into::into),
        resource_groups: groups(quotas),
    }
}

const GPU: &str = "example.com/gpu";

fn q(resource: &'static str, nominal: i64) -> Q {
    ("default", resource, nominal, None, None)
}

struct Case {
    upstream: &'static str,
    queues: Vec<ClusterQueue>,
    cohorts: Vec<Cohort>,
    /// Weights of ClusterQueues, then of Cohorts.
    weights: Vec<(&'static str, f64)>,
    cohort_weights: Vec<(&'static str, f64)>,
    /// `cq`'s usage (its own, and the workload's `flvResQ`), milli-units.
    usage: Vec<(&'static str, &'static str, i64)>,
    /// (ClusterQueue or Cohort, rounded weighted share, dominant resource).
    want: Vec<(&'static str, i64, &'static str)>,
}

fn run(case: Case) {
    let mut tree = QuotaTree::build_with_cohorts(&case.queues, &case.cohorts, []);
    let fs = FairSharing {
        preemption_strategies: vec![],
        cluster_queue_weights: case
            .weights
            .iter()
            .map(|(n, w)| (n.to_string(), *w))
            .collect(),
        cohort_weights: case
            .cohort_weights
            .iter()
            .map(|(n, w)| (n.to_string(), *w))
            .collect(),
    };
    tree.set_fair(Some(FairShape::build(&tree, &fs)));
    for (f, r, v) in &case.usage {
        tree.change("cq", &FlavorResource::new(f, r), *v);
    }
    for (name, share, dominant) in case.want {
        let drs = share_of(
            &tree,
            Some(name).filter(|_| tree.queue_id(name).is_some()),
            Some(name),
        )
        .unwrap_or_else(|| panic!("{}: no node {name}", case.upstream));
        assert_eq!(
            (drs.weighted_share(), drs.dominant_resource()),
            (share, dominant),
            "{}: {name}",
            case.upstream
        );
        assert_eq!(
            drs.is_borrowing(),
            share > 0,
            "{}: {name} borrowing",
            case.upstream
        );
    }
}

fn pair(cq_quotas: &[Q], lending: &[Q]) -> Vec<ClusterQueue> {
    vec![
        cq("cq", Some("test-cohort"), cq_quotas),
        cq("lending-cq", Some("test-cohort"), lending),
    ]
}

#[test]
fn dominant_resource_share_is_kueues() {
    let t = |s: &'static str| -> &'static str {
        Box::leak(format!("TestDominantResourceShare/{s}").into_boxed_str())
    };
    let cpu_gpu = |c, g| vec![q("cpu", c), q(GPU, g)];
    let cases = vec![
        Case {
            upstream: t("no cohort"),
            queues: vec![cq("cq", None, &cpu_gpu(2_000_000, 5000))],
            cohorts: vec![],
            weights: vec![],
            cohort_weights: vec![],
            usage: vec![("default", "cpu", 1_000_000), ("default", GPU, 2000)],
            want: vec![("cq", 0, "")],
        },
        Case {
            upstream: t("usage below nominal"),
            queues: pair(&cpu_gpu(2000, 5000), &cpu_gpu(8000, 5000)),
            cohorts: vec![],
            weights: vec![],
            cohort_weights: vec![],
            usage: vec![("default", "cpu", 1000), ("default", GPU, 2000)],
            want: vec![("cq", 0, ""), ("lending-cq", 0, ""), ("test-cohort", 0, "")],
        },
        Case {
            // (7-5)*1000/10 on gpu beats (3-2)*1000/10 on cpu.
            upstream: t("usage above nominal"),
            queues: pair(&cpu_gpu(2000, 5000), &cpu_gpu(8000, 5000)),
            cohorts: vec![],
            weights: vec![],
            cohort_weights: vec![],
            usage: vec![("default", "cpu", 3000), ("default", GPU, 7000)],
            want: vec![
                ("cq", 200, GPU),
                ("lending-cq", 0, ""),
                ("test-cohort", 0, ""),
            ],
        },
        Case {
            upstream: t("usage slightly above nominal in a cohort with large quotas"),
            queues: pair(&[q(GPU, 500_000)], &[q(GPU, 1_000_000)]),
            cohorts: vec![],
            weights: vec![("lending-cq", 300.0)],
            cohort_weights: vec![],
            usage: vec![("default", GPU, 501_000)],
            want: vec![("cq", 1, GPU), ("lending-cq", 0, "")],
        },
        Case {
            upstream: t("usage way above nominal in a cohort with large quotas and weights"),
            queues: pair(&[q(GPU, 500_000)], &[q(GPU, 1_000_000)]),
            cohorts: vec![],
            weights: vec![("cq", 300.0), ("lending-cq", 300.0)],
            cohort_weights: vec![],
            usage: vec![("default", GPU, 800_000)],
            want: vec![("cq", 1, GPU), ("lending-cq", 0, "")],
        },
        Case {
            upstream: t("one resource above nominal"),
            queues: pair(&cpu_gpu(2000, 5000), &cpu_gpu(8000, 5000)),
            cohorts: vec![],
            weights: vec![],
            cohort_weights: vec![],
            usage: vec![("default", "cpu", 3000), ("default", GPU, 3000)],
            want: vec![("cq", 100, "cpu")],
        },
        Case {
            // The workload's 4 cpu and 4 gpu on top of 1 and 2.
            upstream: t("usage with workload above nominal"),
            queues: pair(&cpu_gpu(2000, 5000), &cpu_gpu(8000, 5000)),
            cohorts: vec![],
            weights: vec![],
            cohort_weights: vec![],
            usage: vec![("default", "cpu", 5000), ("default", GPU, 6000)],
            want: vec![("cq", 300, "cpu"), ("test-cohort", 0, "")],
        },
        Case {
            upstream: t("A resource with zero lendable"),
            queues: pair(
                &[q("cpu", 2000), ("default", GPU, 2000, None, Some(0))],
                &[q("cpu", 8000), ("default", GPU, 64_000, None, Some(0))],
            ),
            cohorts: vec![],
            weights: vec![],
            cohort_weights: vec![],
            usage: vec![("default", "cpu", 5000), ("default", GPU, 5000)],
            want: vec![("cq", 300, "cpu")],
        },
        Case {
            // ((15+10-20)+0)*1000/200: spot is under nominal.
            upstream: t("multiple flavors"),
            queues: vec![
                cq(
                    "cq",
                    Some("test-cohort"),
                    &[
                        ("on-demand", "cpu", 20_000, None, None),
                        ("spot", "cpu", 80_000, None, None),
                    ],
                ),
                cq("lending-cq", Some("test-cohort"), &[q("cpu", 100_000)]),
            ],
            cohorts: vec![],
            weights: vec![],
            cohort_weights: vec![],
            usage: vec![("on-demand", "cpu", 25_000), ("spot", "cpu", 5000)],
            want: vec![("cq", 25, "cpu")],
        },
        Case {
            upstream: t("above nominal with integer weight"),
            queues: pair(&[q(GPU, 5000)], &[q(GPU, 5000)]),
            cohorts: vec![],
            weights: vec![("cq", 2.0)],
            cohort_weights: vec![],
            usage: vec![("default", GPU, 7000)],
            want: vec![("cq", 100, GPU)],
        },
        Case {
            upstream: t("above nominal with decimal weight"),
            queues: pair(&[q(GPU, 5000)], &[q(GPU, 5000)]),
            cohorts: vec![],
            weights: vec![("cq", 0.5)],
            cohort_weights: vec![],
            usage: vec![("default", GPU, 7000)],
            want: vec![("cq", 400, GPU)],
        },
        Case {
            upstream: t("above nominal with zero weight"),
            queues: pair(&[q(GPU, 5000)], &[q(GPU, 10_000)]),
            cohorts: vec![],
            weights: vec![("cq", 0.0)],
            cohort_weights: vec![],
            usage: vec![("default", GPU, 7000)],
            want: vec![("cq", i64::MAX, GPU), ("lending-cq", 0, "")],
        },
        Case {
            upstream: t("cohort has resource share"),
            queues: vec![cq("cq", Some("child-cohort"), &[q(GPU, 5000)])],
            cohorts: vec![
                cohort("child-cohort", Some("root"), &[]),
                cohort("root", None, &[q(GPU, 45_000)]),
            ],
            weights: vec![],
            cohort_weights: vec![("child-cohort", 2.0)],
            usage: vec![("default", GPU, 10_000)],
            want: vec![("cq", 100, GPU), ("child-cohort", 50, GPU), ("root", 0, "")],
        },
        Case {
            upstream: t("resource share defined for resources only available at the root cohort"),
            queues: vec![cq("cq", Some("child-cohort"), &[q(GPU, 0)])],
            cohorts: vec![
                cohort("child-cohort", Some("root"), &[]),
                cohort("root", None, &[q(GPU, 50_000)]),
            ],
            weights: vec![],
            cohort_weights: vec![("child-cohort", 2.0)],
            usage: vec![("default", GPU, 10_000)],
            want: vec![
                ("cq", 200, GPU),
                ("child-cohort", 100, GPU),
                ("root", 0, ""),
            ],
        },
        Case {
            // The Cohort lends the queue at most 10; the root lends it 50.
            upstream: t("resource share affected by borrowing limit"),
            queues: vec![cq("cq", Some("child-cohort"), &[q(GPU, 0)])],
            cohorts: vec![
                cohort(
                    "child-cohort",
                    Some("root"),
                    &[("default", GPU, 0, Some(10_000), None)],
                ),
                cohort("root", None, &[q(GPU, 50_000)]),
            ],
            weights: vec![],
            cohort_weights: vec![],
            usage: vec![("default", GPU, 10_000)],
            want: vec![
                ("cq", 1000, GPU),
                ("child-cohort", 200, GPU),
                ("root", 0, ""),
            ],
        },
    ];
    for case in cases {
        run(case);
    }
}

#[test]
fn shares_compare_as_kueues_compare_drs() {
    // TestPreciseWeightedShareSerialized and CompareDRS: a zero weight
    // that borrows is infinite and above every finite share; two of them
    // compare by their unweighted ratios.
    let d = |weight: f64, ratio: f64| Drs {
        weight,
        ratio,
        dominant: String::new(),
        borrowing: ratio > 0.0,
        borrowed: Vec::new(),
    };
    assert_eq!(d(0.0, 500.0).precise(), f64::INFINITY);
    assert_eq!(d(0.0, 0.0).precise(), 0.0);
    assert_eq!(d(2.0, 500.0).precise(), 250.0);
    assert_eq!(d(3.0, 500.0).weighted_share(), 167);
    assert_eq!(compare(&d(0.0, 1.0), &d(1.0, 1e9)), Ordering::Greater);
    assert_eq!(compare(&d(0.0, 1.0), &d(0.0, 2.0)), Ordering::Less);
    assert_eq!(compare(&d(1.0, 2.0), &d(2.0, 4.0)), Ordering::Equal);
    assert_eq!(compare(&Drs::negative(), &d(1.0, 0.0)), Ordering::Less);
}

#[test]
fn is_borrowing_on_looks_at_the_requested_flavors_only() {
    // TestIsBorrowingOn.
    let spot = FlavorResource::new("spot", "cpu");
    let on_demand = FlavorResource::new("on-demand", "cpu");
    let drs = Drs {
        weight: 1.0,
        ratio: 10.0,
        dominant: "cpu".into(),
        borrowing: true,
        borrowed: vec![spot.clone()],
    };
    assert!(drs.is_borrowing_on(&[(spot.clone(), 1000)].into()));
    assert!(!drs.is_borrowing_on(&[(on_demand.clone(), 1000)].into()));
    assert!(drs.is_borrowing_on(&[(spot, 1000), (on_demand, 1000)].into()));
    assert!(!drs.is_borrowing_on(&Usage::new()));
}

/// A small xorshift generator: the property test below is reproducible by
/// its seed alone.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// [`Round`] keeps winners and shares off the popped head's path between
/// pops; on random trees (weights, limits, two resources, usage), with the
/// popped heads' usage added or not as the cycle admits them or not, it
/// pops in the order Kueue's tournament gives when worked out from nothing
/// before every pop.
#[test]
fn a_round_pops_in_the_order_of_tournaments_worked_out_from_nothing() {
    const RESOURCES: [&str; 2] = ["cpu", "memory"];
    for seed in 1..1000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let quota = |rng: &mut Rng| -> Vec<Q> {
            let mut out = Vec::new();
            for r in RESOURCES {
                if rng.below(3) == 0 {
                    continue;
                }
                let limit = |rng: &mut Rng| match rng.below(3) {
                    0 => Some(rng.below(6) as i64 * 1000),
                    _ => None,
                };
                let (bl, ll) = (limit(rng), limit(rng));
                out.push(("default", r, rng.below(8) as i64 * 1000, bl, ll));
            }
            out
        };
        let n_cohorts = 1 + rng.below(6) as usize;
        let cohorts: Vec<Cohort> = (0..n_cohorts)
            .map(|i| {
                let parent = (i > 0).then(|| format!("c{}", rng.below(i as u64)));
                let q = quota(&mut rng);
                cohort(&format!("c{i}"), parent.as_deref(), &q)
            })
            .collect();
        let n_queues = 2 + rng.below(12) as usize;
        let queues: Vec<ClusterQueue> = (0..n_queues)
            .map(|i| {
                let parent = format!("c{}", rng.below(n_cohorts as u64));
                let q = quota(&mut rng);
                cq(&format!("q{i}"), Some(&parent), &q)
            })
            .collect();
        let mut weights = |prefix: &str, n: usize| -> BTreeMap<String, f64> {
            let mut out = BTreeMap::new();
            for i in 0..n {
                if rng.below(3) == 0 {
                    let w = [0.0, 0.5, 1.0, 2.0][rng.below(4) as usize];
                    out.insert(format!("{prefix}{i}"), w);
                }
            }
            out
        };
        let fs = FairSharing {
            preemption_strategies: vec![],
            cluster_queue_weights: weights("q", n_queues),
            cohort_weights: weights("c", n_cohorts),
        };
        let mut tree = QuotaTree::build_with_cohorts(&queues, &cohorts, []);
        tree.set_fair(Some(FairShape::build(&tree, &fs)));
        let usage = |rng: &mut Rng| -> Usage {
            let mut out = Usage::new();
            for r in RESOURCES {
                if rng.below(2) == 0 {
                    out.insert(
                        FlavorResource::new("default", r),
                        rng.below(6) as i64 * 1000,
                    );
                }
            }
            out
        };
        for i in 0..n_queues {
            let u = usage(&mut rng);
            tree.add(&format!("q{i}"), &u);
        }
        let mut contenders: Vec<Contender> = Vec::new();
        for i in 0..n_queues {
            if rng.below(4) > 0 {
                contenders.push(Contender {
                    cluster_queue: format!("q{i}"),
                    usage: usage(&mut rng),
                    priority: rng.below(3) as i32,
                    timestamp: rng.below(4) as i64,
                });
            }
        }
        let admitted: Vec<bool> = contenders.iter().map(|_| rng.below(2) == 0).collect();

        let mut reference = tree.clone();
        let mut left: Vec<usize> = (0..contenders.len()).collect();
        let mut want = Vec::new();
        while !left.is_empty() {
            let view: Vec<Contender> = left.iter().map(|&i| contenders[i].clone()).collect();
            let next = left.remove(next_contender(&mut reference, &view).unwrap_or(0));
            if admitted[next] {
                let c = &contenders[next];
                reference.add(&c.cluster_queue, &c.usage);
            }
            want.push(next);
        }

        let mut round = Round::new(&tree, contenders.clone());
        let mut got = Vec::new();
        while let Some(next) = round.pop(&mut tree) {
            assert!(
                got.len() < contenders.len(),
                "seed {seed}: popped {got:?} then {next}"
            );
            if admitted[next] {
                let c = &contenders[next];
                tree.add(&c.cluster_queue, &c.usage);
            }
            got.push(next);
        }
        assert_eq!(got, want, "seed {seed}");
    }
}
