//! The quota engine over a cohort tree (issue 21): one scheduling cycle and
//! a full drain, with ClusterQueues under a 4-level tree of Cohorts, next
//! to the same queues in flat (single-level) cohorts.
//!
//!     cargo bench --bench queueing_tree
//!
//! The tree: a root Cohort, 5 Cohorts under it, 5 under each of those, 4
//! under each of those (100 leaf Cohorts, 4 levels); the ClusterQueues are
//! spread over the leaves. Level-2 Cohorts hold 20 cpu of their own, leaf
//! Cohorts 10 cpu with a lendingLimit of 5 (so every level has quota, a
//! reserve and a parent to borrow from). The flat case puts the same queues
//! in cohorts of 10. Every ClusterQueue: one flavor, 4 cpu nominal. Every
//! Workload: one pod of 1 cpu. Sizes: 100 ClusterQueues × 50 Workloads,
//! 1,000 × 50 (50,000 pending) and 5,000 × 10 (50,000 pending).
//!
//! "one cycle": `Engine::schedule` once, everything pending (one head per
//! ClusterQueue is nominated and admitted or not). "drain": cycles until
//! nothing is pending, each admission confirmed and its Workload finished
//! at once (its quota released), so every Workload passes through a cycle.
//! Engine setup is not timed. No fair sharing yet (not implemented).
//! Under `cargo test` it runs once on 100 ClusterQueues × 2 Workloads.

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

use batchgate::queueing::{
    ClusterQueue, Cohort, Decision, Engine, FlavorQuotas, LocalQueue, PodSet, Preemption,
    QueueingStrategy, ResourceFlavor, ResourceGroup, ResourceQuota, StopPolicy, Workload,
};

#[derive(Clone, Copy)]
struct Shape {
    queues: usize,
    per_queue: usize,
    tree: bool,
}

fn groups(nominal: i64, lending_limit: Option<i64>) -> Vec<ResourceGroup> {
    vec![ResourceGroup {
        covered_resources: vec!["cpu".into()],
        flavors: vec![FlavorQuotas {
            name: "default".into(),
            resources: vec![ResourceQuota {
                name: "cpu".into(),
                nominal: nominal * 1000,
                borrowing_limit: None,
                lending_limit: lending_limit.map(|l| l * 1000),
            }],
        }],
    }]
}

fn cohort(name: String, parent: Option<String>, nominal: i64, lend: Option<i64>) -> Cohort {
    Cohort {
        name,
        parent,
        resource_groups: if nominal > 0 {
            groups(nominal, lend)
        } else {
            vec![]
        },
    }
}

/// The names of the 100 leaf Cohorts, after adding the tree to `e`.
fn tree(e: &mut Engine) -> Vec<String> {
    e.upsert_cohort(cohort("root".into(), None, 0, None));
    let mut leaves = Vec::new();
    for i in 0..5 {
        let l1 = format!("l1-{i}");
        e.upsert_cohort(cohort(l1.clone(), Some("root".into()), 0, None));
        for j in 0..5 {
            let l2 = format!("l2-{i}-{j}");
            e.upsert_cohort(cohort(l2.clone(), Some(l1.clone()), 20, None));
            for k in 0..4 {
                let l3 = format!("l3-{i}-{j}-{k}");
                e.upsert_cohort(cohort(l3.clone(), Some(l2.clone()), 10, Some(5)));
                leaves.push(l3);
            }
        }
    }
    leaves
}

fn engine(shape: Shape) -> Engine {
    let mut e = Engine::new();
    e.upsert_flavor(ResourceFlavor {
        name: "default".into(),
        node_labels: BTreeMap::new(),
        node_taints: vec![],
        tolerations: vec![],
    });
    let leaves = if shape.tree { tree(&mut e) } else { vec![] };
    for q in 0..shape.queues {
        let name = format!("cq-{q}");
        let parent = if shape.tree {
            leaves[q % leaves.len()].clone()
        } else {
            format!("flat-{}", q / 10)
        };
        e.upsert_cluster_queue(ClusterQueue {
            name: name.clone(),
            cohort: Some(parent),
            queueing_strategy: QueueingStrategy::BestEffortFIFO,
            namespace_selector: Some(Default::default()),
            resource_groups: groups(4, None),
            preemption: Preemption::default(),
            flavor_fungibility: Default::default(),
            stop_policy: StopPolicy::None,
            admission_fair_sharing: false,
            terminating: false,
        });
        e.upsert_local_queue(LocalQueue {
            namespace: format!("ns-{q}"),
            name: "lq".into(),
            cluster_queue: name,
            stop_policy: StopPolicy::None,
            fair_sharing: Default::default(),
        });
    }
    for k in 0..shape.per_queue {
        for q in 0..shape.queues {
            e.upsert_workload(Workload {
                namespace: format!("ns-{q}").into(),
                name: format!("wl-{k}"),
                uid: format!("{q}-{k}").into(),
                job_uid: None,
                queue_name: "lq".into(),
                priority: (k % 3) as i32,
                created: k as i64,
                active: true,
                finished: false,
                readiness: Default::default(),
                pod_sets: vec![PodSet {
                    name: "main".into(),
                    count: 1,
                    min_count: None,
                    requests: [("cpu".to_string(), 1000)].into(),
                    node_selector: BTreeMap::new(),
                    tolerations: vec![],
                }],
                admission: None,
            });
        }
    }
    e
}

/// Cycles until nothing is left; returns the admissions.
fn drain(e: &mut Engine) -> usize {
    let mut admitted = 0;
    for now in 1.. {
        let cycle = e.schedule(now);
        for d in &cycle.decisions {
            match d {
                Decision::Admit { workload, .. } => {
                    e.confirm_admission(workload);
                    e.delete_workload(workload);
                    admitted += 1;
                }
                Decision::Evict { workload, .. } => e.confirm_eviction(workload),
                Decision::Pending { .. } => {}
            }
        }
        if !cycle.progress {
            break;
        }
    }
    admitted
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("queueing_tree");
    g.sample_size(10);
    // Under `cargo test` (no `--bench`), a smoke run of the smallest tree.
    let sizes: &[(usize, usize)] = if std::env::args().any(|a| a == "--bench") {
        &[(100, 50), (1_000, 50), (5_000, 10)]
    } else {
        &[(100, 2)]
    };
    for &(queues, per_queue) in sizes {
        for tree in [true, false] {
            let shape = Shape {
                queues,
                per_queue,
                tree,
            };
            let label = format!(
                "{}/{queues}cq/{}wl",
                if tree { "tree4" } else { "flat" },
                queues * per_queue
            );
            // Every Workload is admitted once, whatever the shape.
            let mut check = engine(shape);
            assert_eq!(drain(&mut check), queues * per_queue, "{label}");
            g.bench_function(format!("one_cycle/{label}"), |b| {
                b.iter_batched(
                    || engine(shape),
                    |mut e| e.schedule(1),
                    BatchSize::PerIteration,
                )
            });
            g.bench_function(format!("drain/{label}"), |b| {
                b.iter_batched(
                    || engine(shape),
                    |mut e| drain(&mut e),
                    BatchSize::PerIteration,
                )
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
