//! Benchmark (a): Kueue's scheduler-performance baseline, run against the
//! queueing engine in virtual time.
//!
//!     cargo bench --bench queueing
//!
//! The shape of `test/performance/scheduler/configs/baseline`: 5 cohorts ×
//! 6 ClusterQueues (one flavor, cpu, nominal 20, borrowingLimit 100,
//! reclaimWithinCohort Any, withinClusterQueue LowerPriority, each with its
//! own namespace and LocalQueue); per ClusterQueue 350 small workloads
//! (1 cpu, 200 ms, priority 50, one every 100 ms), 100 medium (5 cpu,
//! 500 ms, priority 100, every 500 ms) and 50 large (20 cpu, 1 s,
//! priority 200, every 1200 ms): 15,000 workloads.
//!
//! Time is simulated: workloads arrive at their creation time, run for
//! their runtime from admission and then finish; an evicted workload stops
//! at once. At every instant something happens, cycles run until one makes
//! no progress. Writes are confirmed at once, so what is measured is the
//! engine alone: no apiserver, no watch latency.
//!
//! Reported: engine admissions per second of real time, simulated wall
//! time against the quota-bound ideal (total cpu·s / total nominal cpu),
//! average ClusterQueue usage (cpu·s used by completed runs / (nominal ×
//! wall)), and average time from creation to the admission that ran to
//! completion, per class. Kueue's thresholds for its (real, envtest-backed)
//! run are printed alongside.
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a small
//! smoke version and only checks that every workload completes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Instant;

use batchgate::queueing::{
    ClusterQueue, Decision, Engine, FlavorQuotas, LocalQueue, PodSet, Preemption, PreemptionPolicy,
    QueueingStrategy, ResourceFlavor, ResourceGroup, ResourceQuota, StopPolicy, Workload,
};

mod fixtures;

use fixtures::baseline::{
    BORROWING_LIMIT_CPU, CLASSES, KUEUE_MAX_ADMISSION_MS, KUEUE_MAX_WALL_MS, KUEUE_MIN_USAGE_PCT,
    NOMINAL_CPU,
};

struct Shape {
    cohorts: usize,
    queues_per_cohort: usize,
    /// Divides every class's count.
    thin: usize,
}

fn cluster_queue(name: &str, cohort: &str) -> ClusterQueue {
    ClusterQueue {
        name: name.into(),
        cohort: Some(cohort.into()),
        queueing_strategy: QueueingStrategy::BestEffortFIFO,
        namespace_selector: Some(Default::default()),
        resource_groups: vec![ResourceGroup {
            covered_resources: vec!["cpu".into()],
            flavors: vec![FlavorQuotas {
                name: "default".into(),
                resources: vec![ResourceQuota {
                    name: "cpu".into(),
                    nominal: NOMINAL_CPU * 1000,
                    borrowing_limit: Some(BORROWING_LIMIT_CPU * 1000),
                    lending_limit: None,
                }],
            }],
        }],
        preemption: Preemption {
            within_cluster_queue: PreemptionPolicy::LowerPriority,
            reclaim_within_cohort: PreemptionPolicy::Any,
            ..Default::default()
        },
        flavor_fungibility: Default::default(),
        stop_policy: StopPolicy::None,
        admission_fair_sharing: false,
        terminating: false,
    }
}

struct Job {
    class: usize,
    cq: usize,
    created: i64,
    /// Bumped on every admission, so a stale finish event is ignored.
    run: u32,
    admitted_at: Option<i64>,
    done: bool,
}

struct Report {
    workloads: usize,
    admissions: usize,
    preemptions: usize,
    /// By (Preempted reason, victim class).
    victims: BTreeMap<(&'static str, &'static str), usize>,
    distinct_victims: usize,
    /// The most times one workload was preempted.
    most_preempted: usize,
    cycles: usize,
    real_secs: f64,
    wall_ms: i64,
    ideal_ms: i64,
    usage_pct: f64,
    admission_ms: Vec<(&'static str, f64)>,
}

fn simulate(shape: &Shape) -> Report {
    let mut engine = Engine::new();
    engine.upsert_flavor(ResourceFlavor {
        name: "default".into(),
        node_labels: BTreeMap::new(),
        node_taints: vec![],
        tolerations: vec![],
        topology_name: None,
        topology_levels: None,
    });
    let mut queues = Vec::new();
    for c in 0..shape.cohorts {
        for q in 0..shape.queues_per_cohort {
            let name = format!("cq-{c}-{q}");
            engine.upsert_cluster_queue(cluster_queue(&name, &format!("cohort-{c}")));
            engine.upsert_local_queue(LocalQueue {
                namespace: format!("ns-{name}"),
                name: "lq".into(),
                cluster_queue: name.clone(),
                stop_policy: StopPolicy::None,
                fair_sharing: Default::default(),
            });
            queues.push(name);
        }
    }

    // Every workload, in arrival order.
    let mut jobs: Vec<Job> = Vec::new();
    let mut objects: Vec<Workload> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for (qi, cq) in queues.iter().enumerate() {
        for (ci, class) in CLASSES.iter().enumerate() {
            for k in 0..class.count / shape.thin {
                let created = k as i64 * class.interval_ms;
                let name = format!("{}-{k}", class.name);
                let wl = Workload {
                    unhealthy_nodes: Vec::new(),
                    single_pod_owned: false,
                    namespace: format!("ns-{cq}").into(),
                    name: name.clone(),
                    uid: format!("{cq}-{name}").into(),
                    job_uid: None,
                    copy_chain: None,
                    queue_name: "lq".into(),
                    priority: class.priority,
                    created,
                    active: true,
                    finished: false,
                    readiness: Default::default(),
                    replaces: None,
                    pod_sets: vec![PodSet {
                        name: "main".into(),
                        count: 1,
                        min_count: None,
                        requests: [("cpu".to_string(), class.cpu * 1000)].into(),
                        node_selector: BTreeMap::new(),
                        node_affinity: Default::default(),
                        tolerations: vec![],
                        topology: None,
                    }],
                    admission: None,
                };
                index.insert(wl.key(), jobs.len());
                jobs.push(Job {
                    class: ci,
                    cq: qi,
                    created,
                    run: 0,
                    admitted_at: None,
                    done: false,
                });
                objects.push(wl);
            }
        }
    }
    let mut arrivals: Vec<usize> = (0..jobs.len()).collect();
    arrivals.sort_by_key(|&i| (jobs[i].created, i));
    let mut arrivals = arrivals.into_iter().peekable();
    let mut finishes: BinaryHeap<Reverse<(i64, usize, u32)>> = BinaryHeap::new();

    let mut cpu_ms_used = vec![0i64; queues.len()];
    // Preemptions by reason and victim class; how often each victim went.
    let mut victims: BTreeMap<(&'static str, &'static str), usize> = BTreeMap::new();
    let mut times_preempted: BTreeMap<usize, usize> = BTreeMap::new();
    let (mut admissions, mut preemptions, mut cycles, mut wall_ms) = (0, 0, 0, 0);
    let started = Instant::now();
    let mut now = 0;
    loop {
        while let Some(&i) = arrivals.peek() {
            if jobs[i].created > now {
                break;
            }
            engine.upsert_workload(objects[i].clone());
            arrivals.next();
        }
        while let Some(&Reverse((at, i, run))) = finishes.peek() {
            if at > now {
                break;
            }
            finishes.pop();
            if jobs[i].run != run || jobs[i].done {
                continue; // evicted before it finished
            }
            let class = &CLASSES[jobs[i].class];
            jobs[i].done = true;
            cpu_ms_used[jobs[i].cq] += class.cpu * class.runtime_ms;
            wall_ms = wall_ms.max(at);
            engine.finish_workload(&objects[i].key());
        }
        loop {
            let cycle = engine.schedule(now);
            cycles += 1;
            for d in cycle.decisions {
                match d {
                    Decision::Admit { workload, .. } => {
                        let i = index[&workload];
                        admissions += 1;
                        jobs[i].run += 1;
                        jobs[i].admitted_at = Some(now);
                        let runtime = CLASSES[jobs[i].class].runtime_ms;
                        finishes.push(Reverse((now + runtime, i, jobs[i].run)));
                        engine.confirm_admission(&workload);
                    }
                    Decision::Evict {
                        workload,
                        preempted_reason,
                        ..
                    } => {
                        let i = index[&workload];
                        preemptions += 1;
                        let reason = preempted_reason.map_or("other", |r| r.as_str());
                        *victims
                            .entry((reason, CLASSES[jobs[i].class].name))
                            .or_default() += 1;
                        *times_preempted.entry(i).or_default() += 1;
                        jobs[i].run += 1;
                        engine.confirm_eviction(&workload);
                    }
                    Decision::Pending { .. } | Decision::Replace { .. } => {}
                }
            }
            if !cycle.progress {
                break;
            }
        }
        let next_arrival = arrivals.peek().map(|&i| jobs[i].created);
        let next_finish = finishes.peek().map(|Reverse((at, ..))| *at);
        now = match (next_arrival, next_finish) {
            (Some(a), Some(f)) => a.min(f),
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => break,
        };
    }
    let real_secs = started.elapsed().as_secs_f64();

    let stuck = jobs.iter().filter(|j| !j.done).count();
    assert_eq!(stuck, 0, "{stuck} workloads never completed");
    let total_cpu_ms: i64 = jobs
        .iter()
        .map(|j| CLASSES[j.class].cpu * CLASSES[j.class].runtime_ms)
        .sum();
    let nominal_total = NOMINAL_CPU * queues.len() as i64;
    let usage_pct = cpu_ms_used
        .iter()
        .map(|u| *u as f64 * 100.0 / (NOMINAL_CPU * wall_ms) as f64)
        .sum::<f64>()
        / queues.len() as f64;
    let admission_ms = CLASSES
        .iter()
        .enumerate()
        .map(|(ci, class)| {
            let waits: Vec<i64> = jobs
                .iter()
                .filter(|j| j.class == ci)
                .filter_map(|j| j.admitted_at.map(|a| a - j.created))
                .collect();
            (
                class.name,
                waits.iter().sum::<i64>() as f64 / waits.len().max(1) as f64,
            )
        })
        .collect();
    Report {
        workloads: jobs.len(),
        admissions,
        preemptions,
        victims,
        distinct_victims: times_preempted.len(),
        most_preempted: times_preempted.values().copied().max().unwrap_or(0),
        cycles,
        real_secs,
        wall_ms,
        ideal_ms: total_cpu_ms / nominal_total,
        usage_pct,
        admission_ms,
    }
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let shape = if bench {
        Shape {
            cohorts: 5,
            queues_per_cohort: 6,
            thin: 1,
        }
    } else {
        Shape {
            cohorts: 1,
            queues_per_cohort: 3,
            thin: 10,
        }
    };
    let r = simulate(&shape);
    if !bench {
        println!(
            "queueing smoke: {} workloads, {} admissions, all completed",
            r.workloads, r.admissions
        );
        return;
    }
    println!(
        "queueing baseline: {} cohorts x {} ClusterQueues, {} workloads",
        shape.cohorts, shape.queues_per_cohort, r.workloads
    );
    println!(
        "  engine: {} admissions, {} preemptions, {} cycles in {:.3} s real = {:.0} admissions/s",
        r.admissions,
        r.preemptions,
        r.cycles,
        r.real_secs,
        r.admissions as f64 / r.real_secs
    );
    let by: Vec<String> = r
        .victims
        .iter()
        .map(|((reason, class), n)| format!("{n} {class} ({reason})"))
        .collect();
    println!(
        "  preempted: {}; {} distinct workloads, one of them {} times",
        if by.is_empty() {
            "none".to_string()
        } else {
            by.join(", ")
        },
        r.distinct_victims,
        r.most_preempted
    );
    println!(
        "  simulated wall time: {:.1} s (ideal, quota-bound: {:.1} s; Kueue threshold {:.0} s)",
        r.wall_ms as f64 / 1000.0,
        r.ideal_ms as f64 / 1000.0,
        KUEUE_MAX_WALL_MS as f64 / 1000.0
    );
    println!(
        "  average ClusterQueue usage: {:.1} % (Kueue threshold >= {KUEUE_MIN_USAGE_PCT:.0} %)",
        r.usage_pct
    );
    for ((class, ms), (_, limit)) in r.admission_ms.iter().zip(KUEUE_MAX_ADMISSION_MS) {
        println!(
            "  average time to admission, {class:<6}: {:>8.1} s (Kueue threshold {:.0} s)",
            ms / 1000.0,
            limit as f64 / 1000.0
        );
    }
}
