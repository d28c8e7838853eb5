//! The quota engine over a cohort tree (issue 21): the setup, one
//! scheduling cycle and a full drain, with ClusterQueues under a 4-level
//! tree of Cohorts, next to the same queues in one flat Cohort.
//!
//!     cargo bench --bench queueing_tree
//!
//! The tree: a root Cohort, 5 Cohorts under it, 5 under each of those, 4
//! under each of those (100 leaf Cohorts, 4 levels); the ClusterQueues are
//! spread over the leaves. Level-2 Cohorts hold 20 cpu of their own, leaf
//! Cohorts 10 cpu with a lendingLimit of 5. The flat case puts the same
//! queues in one Cohort holding the same 1,500 cpu. Three ClusterQueues in
//! four hold 8 cpu nominal, the fourth none (it only borrows); every queue
//! preempts lower priorities within itself and reclaims its nominal quota
//! from any borrower of its tree. Workloads: one pod of 1, 1, 2, 4 or 8
//! cpu, priority 0–3, running 2–12 cycles (see [`running_range`]); 50,000 pending at every size
//! (100 queues × 500, 1,000 × 50, 5,000 × 10).
//!
//! "setup": adding the flavor, the Cohorts, the ClusterQueues with their
//! LocalQueues (between `Engine::defer` and `settle`, as the queueing
//! controller feeds the events that arrive together) and the Workloads to
//! an empty engine. "one cycle":
//! `Engine::schedule` once, everything pending. "drain": in virtual time
//! (one cycle per tick), every admission is confirmed and its Workload
//! finishes (its quota released) after its running time; every eviction is
//! confirmed (the Workload queues again); cycles run until every Workload
//! has finished. "snapshot": Kueue's queue gauges built from the engine
//! after the first cycle's admissions are confirmed (50,000 Workloads, most
//! still pending), as the queueing controller builds them each status tick
//! (`Engine::local_queue_statuses`, then
//! `controllers::queueing::metrics_snapshot`); "queries" and "walked":
//! that tick's two engine queries from the counts the engine keeps, and
//! by the walk over every Workload they replaced. After the criterion runs, a
//! table of one untimed-by-criterion run per shape shows how each cost
//! grows with the tree.
//!
//! Environment: `BATCHGATE_TREE_SIZES=100,1000` picks sizes;
//! `BATCHGATE_TREE_ONCE=1` skips criterion and prints only that table;
//! `BATCHGATE_TREE_RUNNING=1-6` sets the running times;
//! fair sharing is on unless `BATCHGATE_TREE_FAIR_SHARING=0`. Under `cargo test` it runs once on 100 ClusterQueues
//! × 5 Workloads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};

use batchgate::queueing::{
    ClusterQueue, Cohort, Decision, Engine, FlavorQuotas, LocalQueue, PodSet, Preemption,
    PreemptionPolicy, QueueingStrategy, ResourceFlavor, ResourceGroup, ResourceQuota, StopPolicy,
    Workload,
};

/// Fair sharing in every engine the bench builds (the figures are
/// wanted with it on, Kueue's default strategies and weights);
/// `BATCHGATE_TREE_FAIR_SHARING=0` turns it off for the classical figures.
fn fair_sharing() -> bool {
    std::env::var("BATCHGATE_TREE_FAIR_SHARING").map_or(true, |v| v != "0")
}

/// The engine's configuration, before any object is added.
fn configure(e: &mut Engine) {
    if fair_sharing() {
        e.set_fair_sharing(Some(
            batchgate::queueing::fair_sharing::FairSharing::default(),
        ));
    }
}

#[derive(Clone, Copy)]
struct Shape {
    queues: usize,
    per_queue: usize,
    tree: bool,
}

impl Shape {
    fn label(self) -> String {
        format!(
            "{}{}/{}cq/{}wl",
            if self.tree { "tree4" } else { "flat" },
            if fair_sharing() { "-fair" } else { "" },
            self.queues,
            self.queues * self.per_queue
        )
    }
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

/// The mix, from the queue and the Workload's place in it.
fn cpus(q: usize, k: usize) -> i64 {
    [1, 1, 2, 4, 8][(3 * k + q) % 5]
}

fn priority(q: usize, k: usize) -> i32 {
    ((7 * k + q) % 4) as i32
}

/// How many cycles Workloads run: 2–12 (long enough that every size runs
/// short of quota, so queues borrow and set-aside Workloads preempt), or
/// `BATCHGATE_TREE_RUNNING=lo-hi` (`1-6`: the mix of the first measurements
/// in BENCHMARKS.md).
fn running_range() -> (i64, i64) {
    std::env::var("BATCHGATE_TREE_RUNNING")
        .ok()
        .and_then(|v| {
            let (lo, hi) = v.split_once('-')?;
            let (lo, hi) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
            (1 <= lo && lo <= hi).then_some((lo, hi))
        })
        .unwrap_or((2, 12))
}

fn running_cycles(key: &str, (lo, hi): (i64, i64)) -> i64 {
    // Deterministic, spread over the range.
    lo + (key.bytes().map(i64::from).sum::<i64>() % (hi - lo + 1))
}

fn engine(shape: Shape) -> Engine {
    let mut e = Engine::new();
    configure(&mut e);
    // The configuration arrives together, as the queueing controller
    // feeds a burst of watch events: the ClusterQueues join the quota tree
    // at once.
    e.defer();
    e.upsert_flavor(ResourceFlavor {
        name: "default".into(),
        node_labels: BTreeMap::new(),
        node_taints: vec![],
        tolerations: vec![],
        topology_name: None,
        topology_levels: None,
    });
    let leaves = if shape.tree {
        tree(&mut e)
    } else {
        e.upsert_cohort(cohort("flat".into(), None, 1_500, None));
        vec!["flat".to_string()]
    };
    for q in 0..shape.queues {
        let name = format!("cq-{q}");
        e.upsert_cluster_queue(ClusterQueue {
            name: name.clone(),
            cohort: Some(leaves[q % leaves.len()].clone()),
            queueing_strategy: QueueingStrategy::BestEffortFIFO,
            namespace_selector: Some(Default::default()),
            resource_groups: groups(if q % 4 == 3 { 0 } else { 8 }, None),
            preemption: Preemption {
                within_cluster_queue: PreemptionPolicy::LowerPriority,
                reclaim_within_cohort: PreemptionPolicy::Any,
                borrow_within_cohort: None,
            },
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
    e.settle();
    for k in 0..shape.per_queue {
        for q in 0..shape.queues {
            e.upsert_workload(Workload {
                unhealthy_nodes: Vec::new(),
                single_pod_owned: false,
                namespace: format!("ns-{q}").into(),
                name: format!("wl-{k}"),
                uid: format!("{q}-{k}").into(),
                job_uid: None,
                copy_chain: None,
                queue_name: "lq".into(),
                priority: priority(q, k),
                created: k as i64,
                active: true,
                finished: false,
                readiness: Default::default(),
                replaces: None,
                pod_sets: vec![PodSet {
                    name: "main".into(),
                    count: 1,
                    min_count: None,
                    requests: [("cpu".to_string(), cpus(q, k) * 1000)].into(),
                    node_selector: BTreeMap::new(),
                    node_affinity: Default::default(),
                    tolerations: vec![],
                    topology: None,
                }],
                admission: None,
            });
        }
    }
    e
}

#[derive(Debug, Default, Clone, Copy)]
struct Drained {
    cycles: u64,
    admissions: u64,
    evictions: u64,
    /// Virtual time at the end.
    ticks: i64,
}

/// Runs cycles in virtual time until every one of `total` Workloads has
/// finished.
fn drain(e: &mut Engine, total: usize) -> Drained {
    let mut out = Drained::default();
    // Finish tick → keys; a key's current finish tick (an evicted Workload
    // runs again later, its old tick is stale).
    let mut due: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut finish_at: HashMap<String, i64> = HashMap::new();
    let mut left = total;
    let mut now = 1;
    let running = running_range();
    while left > 0 {
        while let Some(entry) = due.first_entry() {
            if *entry.key() > now {
                break;
            }
            let (tick, keys) = entry.remove_entry();
            for k in keys {
                if finish_at.get(&k) == Some(&tick) {
                    finish_at.remove(&k);
                    e.finish_workload(&k);
                    left -= 1;
                }
            }
        }
        if left == 0 {
            break;
        }
        let cycle = e.schedule(now);
        out.cycles += 1;
        for d in cycle.decisions {
            match d {
                Decision::Admit { workload, .. } => {
                    e.confirm_admission(&workload);
                    let at = now + running_cycles(&workload, running);
                    due.entry(at).or_default().push(workload.clone());
                    finish_at.insert(workload, at);
                    out.admissions += 1;
                }
                Decision::Evict { workload, .. } => {
                    e.confirm_eviction(&workload);
                    finish_at.remove(&workload);
                    out.evictions += 1;
                }
                Decision::Pending { .. } | Decision::Replace { .. } => {}
            }
        }
        now = if cycle.progress {
            now + 1
        } else {
            // Nothing moves until the next finish.
            match due.keys().next() {
                Some(&t) => t.max(now + 1),
                None => panic!("stuck at tick {now} with {left} Workloads left: {out:?}"),
            }
        };
        assert!(out.cycles < 10_000_000, "no end in sight: {out:?}");
    }
    out.ticks = now;
    out
}

fn sizes() -> Vec<(usize, usize)> {
    let all = [(100, 500), (1_000, 50), (5_000, 10)];
    if !std::env::args().any(|a| a == "--bench") {
        // `cargo test --benches`: a smoke run of the smallest tree.
        return vec![(100, 5)];
    }
    match std::env::var("BATCHGATE_TREE_SIZES") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse::<usize>().ok())
            .filter_map(|q| all.iter().copied().find(|&(n, _)| n == q))
            .collect(),
        Err(_) => all.to_vec(),
    }
}

/// One run per shape, timed here: setup, the first cycle, the metrics
/// snapshot after it, the drain.
struct Once {
    setup: Duration,
    cycle: Duration,
    snapshot: Duration,
    /// The two engine queries of a status tick (LocalQueue statuses and
    /// pending counts): from the counts kept as workloads change, and by a
    /// walk over every workload as before (alternated, median of 5 each).
    queries: Duration,
    walked: Duration,
    drain: Duration,
    drained: Drained,
}

fn once(shape: Shape) -> Once {
    let total = shape.queues * shape.per_queue;
    let t = Instant::now();
    let mut e = engine(shape);
    let setup = t.elapsed();
    let mut first = engine(shape);
    let t = Instant::now();
    let c = first.schedule(1);
    let cycle = t.elapsed();
    admit(&mut first, c);
    let snapshot = snapshot_time(&first);
    let (queries, walked) = queries_time(&first);
    drop(first);
    let t = Instant::now();
    let drained = drain(&mut e, total);
    let drain_time = t.elapsed();
    let names: Vec<String> = e.cluster_queue_names().map(str::to_string).collect();
    assert!(
        names
            .iter()
            .all(|cq| e.pending_workloads(cq).is_empty() && e.cluster_queue_empty(cq)),
        "{}: something left after the drain",
        shape.label()
    );
    Once {
        setup,
        cycle,
        snapshot,
        queries,
        walked,
        drain: drain_time,
        drained,
    }
}

/// Confirms a cycle's admissions and evictions, as the shell would once
/// its writes land.
fn admit(e: &mut Engine, c: batchgate::queueing::Cycle) {
    for d in c.decisions {
        match d {
            Decision::Admit { workload, .. } => e.confirm_admission(&workload),
            Decision::Evict { workload, .. } => e.confirm_eviction(&workload),
            Decision::Pending { .. } | Decision::Replace { .. } => {}
        }
    }
}

/// Kueue's queue gauges as the queueing controller builds them on a status
/// tick (every ClusterQueue, LocalQueue and Cohort from the engine), with
/// every Workload still there: the median of 5.
fn snapshot_time(e: &Engine) -> Duration {
    let mut times: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let lqs = e.local_queue_statuses();
            let s = batchgate::controllers::queueing::metrics_snapshot(e, &lqs, std::iter::empty());
            let spent = t.elapsed();
            assert!(!s.cluster_queues.is_empty() && !s.local_queues.is_empty());
            spent
        })
        .collect();
    times.sort();
    times[2]
}

/// The status tick's two engine queries, from the kept counts and by the
/// walk they replaced, alternated: the medians of 5 each.
fn queries_time(e: &Engine) -> (Duration, Duration) {
    let (mut kept, mut walked) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        let a = (e.local_queue_statuses(), e.pending_counts());
        kept.push(t.elapsed());
        let t = Instant::now();
        let b = (e.local_queue_statuses_by_walk(), e.pending_counts_by_walk());
        walked.push(t.elapsed());
        assert_eq!(a, b, "the kept counts read as the walk");
    }
    kept.sort();
    walked.sort();
    (kept[2], walked[2])
}

static ONCE: Mutex<Vec<(Shape, Once)>> = Mutex::new(Vec::new());

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn print_growth() {
    let runs = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    println!(
        "\nqueueing_tree: one run per shape (ms; ×: against the smallest size of the same kind)"
    );
    println!(
        "{:<26} {:>10} {:>6} {:>10} {:>6} {:>9} {:>8} {:>8} {:>11} {:>6} {:>7} {:>8} {:>8}",
        "shape",
        "setup",
        "×",
        "cycle",
        "×",
        "snapshot",
        "queries",
        "walked",
        "drain",
        "×",
        "cycles",
        "admits",
        "evicts"
    );
    let base = |tree: bool| runs.iter().find(|(s, _)| s.tree == tree).map(|(_, o)| o);
    for (shape, o) in runs.iter() {
        let Some(b) = base(shape.tree) else { continue };
        let x = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
        println!(
            "{:<26} {:>10.1} {:>6.1} {:>10.2} {:>6.1} {:>9.2} {:>8.2} {:>8.2} {:>11.1} {:>6.1} {:>7} {:>8} {:>8}",
            shape.label(),
            ms(o.setup),
            x(o.setup, b.setup),
            ms(o.cycle),
            x(o.cycle, b.cycle),
            ms(o.snapshot),
            ms(o.queries),
            ms(o.walked),
            ms(o.drain),
            x(o.drain, b.drain),
            o.drained.cycles,
            o.drained.admissions,
            o.drained.evictions,
        );
    }
}

fn bench(c: &mut Criterion) {
    let only_once = std::env::var("BATCHGATE_TREE_ONCE").is_ok_and(|v| v == "1");
    let mut g = c.benchmark_group("queueing_tree");
    // Long routines: one iteration per sample, ten samples, no long warm-up.
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(1));
    g.measurement_time(Duration::from_millis(1));
    for (queues, per_queue) in sizes() {
        for tree in [true, false] {
            let shape = Shape {
                queues,
                per_queue,
                tree,
            };
            let label = shape.label();
            let total = queues * per_queue;
            // Every Workload is admitted and finishes, whatever the shape.
            let run = once(shape);
            assert!(run.drained.admissions >= total as u64, "{label}");
            ONCE.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((shape, run));
            if only_once {
                continue;
            }
            g.bench_function(format!("setup/{label}"), |b| {
                b.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let t = Instant::now();
                        let e = engine(shape);
                        spent += t.elapsed();
                        drop(e);
                    }
                    spent
                })
            });
            g.bench_function(format!("one_cycle/{label}"), |b| {
                b.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let mut e = engine(shape);
                        let t = Instant::now();
                        let c = e.schedule(1);
                        spent += t.elapsed();
                        drop((e, c));
                    }
                    spent
                })
            });
            g.bench_function(format!("drain/{label}"), |b| {
                b.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let mut e = engine(shape);
                        let t = Instant::now();
                        drain(&mut e, total);
                        spent += t.elapsed();
                    }
                    spent
                })
            });
        }
    }
    g.finish();
    print_growth();
}

criterion_group!(benches, bench);
criterion_main!(benches);
