//! DRA claims as quota, against the same shapes without DRA: 1,000
//! ClusterQueues (100 cohorts of 10; cpu 100 and `example.com/gpu` 8 each)
//! and 50,000 pending Workloads (50 per ClusterQueue, one pod set of 2 pods
//! of 1 cpu and 2 GPUs).
//!
//!     cargo bench --bench claims
//!
//! `dra`: each Workload's pods name a ResourceClaimTemplate of 2 GPUs (one
//! per namespace); its claims are counted (`queueing::claims::charge`, as
//! the queueing controller does on every Workload event) into the engine's
//! pod sets. `dra_cel`: the same with a CEL selector on the request
//! (`device.attributes['gpu.example.com'].model == 'a100'`) and on the
//! DeviceClass (`device.driver == 'gpu.example.com'`), checked against
//! 8,000 devices (1,000 ResourceSlices of 8 GPUs, a quarter of them not
//! a100s, first in the list). `plain`: the same GPUs asked as a container
//! request. Each then rebuilds the engine and runs one admission cycle (a
//! head per ClusterQueue admitted). Measured: counting + rebuild + the
//! cycle; the ratios to plain are printed after the criterion runs.
//!
//! Without `--bench` (as under `cargo test --benches`) it runs both once at
//! 1/50 of the size and checks that they admit the same Workloads.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use k8s_openapi::api::resource::v1::ResourceClaimSpec;
use serde_json::json;

use batchgate::queueing::{
    claims::{add_to, charge, Charge, DeviceView, PodSetClaims, Settings},
    ClusterObjects, ClusterQueue, Cohort, Decision, Engine, FlavorQuotas, LocalQueue, PodSet,
    Preemption, QueueingStrategy, ResourceFlavor, ResourceGroup, ResourceQuota, StopPolicy,
    Workload,
};

const GPU: &str = "example.com/gpu";

struct Shape {
    queues: usize,
    per_queue: usize,
}

fn cluster_queue(i: usize) -> ClusterQueue {
    ClusterQueue {
        name: format!("cq-{i}"),
        cohort: Some(format!("cohort-{}", i / 10)),
        queueing_strategy: QueueingStrategy::BestEffortFIFO,
        namespace_selector: Some(Default::default()),
        resource_groups: vec![ResourceGroup {
            covered_resources: vec!["cpu".into(), GPU.into()],
            flavors: vec![FlavorQuotas {
                name: "default".into(),
                resources: vec![
                    ResourceQuota {
                        name: "cpu".into(),
                        nominal: 100_000,
                        borrowing_limit: None,
                        lending_limit: None,
                    },
                    ResourceQuota {
                        name: GPU.into(),
                        nominal: 8_000,
                        borrowing_limit: None,
                        lending_limit: None,
                    },
                ],
            }],
        }],
        preemption: Preemption::default(),
        flavor_fungibility: Default::default(),
        stop_policy: StopPolicy::None,
        admission_fair_sharing: false,
        terminating: false,
    }
}

fn base(q: usize, k: usize, gpus_in_requests: bool) -> Workload {
    let mut requests = vec![("cpu".to_string(), 1000)];
    if gpus_in_requests {
        requests.push((GPU.to_string(), 2000));
    }
    Workload {
        unhealthy_nodes: Vec::new(),
        single_pod_owned: false,
        namespace: format!("ns-{q}").into(),
        name: format!("w-{k}"),
        uid: format!("{q}-{k}").into(),
        job_uid: None,
        copy_chain: None,
        queue_name: "lq".into(),
        priority: 0,
        created: k as i64,
        active: true,
        finished: false,
        readiness: Default::default(),
        replaces: None,
        pod_sets: vec![PodSet {
            name: "main".into(),
            count: 2,
            min_count: None,
            requests: requests.into_iter().collect(),
            node_selector: BTreeMap::new(),
            node_affinity: Default::default(),
            tolerations: vec![],
            topology: None,
        }],
        admission: None,
    }
}

fn objects(s: &Shape) -> ClusterObjects {
    ClusterObjects {
        topologies: vec![],
        flavors: vec![ResourceFlavor {
            name: "default".into(),
            node_labels: BTreeMap::new(),
            node_taints: vec![],
            tolerations: vec![],
            topology_name: None,
            topology_levels: None,
        }],
        cluster_queues: (0..s.queues).map(cluster_queue).collect(),
        cohorts: (0..s.queues.div_ceil(10))
            .map(|c| Cohort {
                name: format!("cohort-{c}"),
                parent: None,
                resource_groups: vec![],
            })
            .collect(),
        local_queues: (0..s.queues)
            .map(|q| LocalQueue {
                namespace: format!("ns-{q}"),
                name: "lq".into(),
                cluster_queue: format!("cq-{q}"),
                stop_policy: StopPolicy::None,
                fair_sharing: Default::default(),
            })
            .collect(),
        namespaces: (0..s.queues)
            .map(|q| (format!("ns-{q}"), BTreeMap::new()))
            .collect(),
        workloads: Vec::new(),
    }
}

/// What the controller holds before counting: each Workload's pod sets'
/// claims and its view, and the templates by (namespace, name).
struct Input {
    views: Vec<Workload>,
    claims: Vec<PodSetClaims>,
    /// Namespace → template name → spec, as the controller keeps them.
    templates:
        std::collections::HashMap<String, std::collections::HashMap<String, ResourceClaimSpec>>,
    view: DeviceView,
    settings: Settings,
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Plain,
    Dra,
    DraCel,
}

fn slices(nodes: usize) -> Vec<k8s_openapi::api::resource::v1::ResourceSliceSpec> {
    (0..nodes)
        .map(|n| {
            let model = if n < nodes / 4 { "h100" } else { "a100" };
            let devices: Vec<serde_json::Value> = (0..8)
                .map(|i| json!({"name": format!("gpu-{i}"), "attributes": {"model": {"string": model}}}))
                .collect();
            serde_json::from_value(json!({"driver": "gpu.example.com", "nodeName": format!("node-{n}"),
                "pool": {"name": format!("node-{n}"), "generation": 1, "resourceSliceCount": 1},
                "devices": devices}))
            .unwrap()
        })
        .collect()
}

fn input(s: &Shape, variant: Variant) -> Input {
    let dra = variant != Variant::Plain;
    let mut request = json!({"name": "gpus", "exactly": {"deviceClassName": "gpu.example.com",
                                                         "allocationMode": "ExactCount", "count": 2}});
    let view = if variant == Variant::DraCel {
        request["exactly"]["selectors"] = json!([{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'a100'"}}]);
        let slices = slices(1000);
        DeviceView::new(
            [(
                "gpu.example.com".to_string(),
                vec!["device.driver == 'gpu.example.com'".to_string()],
            )]
            .into(),
            batchgate::devices::selectors::devices(&slices.iter().collect::<Vec<_>>()),
        )
    } else {
        DeviceView::default()
    };
    let spec: ResourceClaimSpec =
        serde_json::from_value(json!({"devices": {"requests": [request]}})).unwrap();
    let claims = vec![PodSetClaims {
        name: "main".into(),
        claims: serde_json::from_value(
            json!([{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}]),
        )
        .unwrap(),
        ..PodSetClaims::default()
    }];
    Input {
        views: (0..s.queues)
            .flat_map(|q| (0..s.per_queue).map(move |k| base(q, k, !dra)))
            .collect(),
        claims,
        templates: (0..s.queues)
            .map(|q| {
                let one = [("two-gpus".to_string(), spec.clone())].into();
                (format!("ns-{q}"), one)
            })
            .collect(),
        view,
        settings: Settings {
            classes: [("gpu.example.com".to_string(), GPU.to_string())].into(),
            ..Settings::default()
        },
    }
}

/// Counting (for `dra`), rebuild, one cycle: the Workloads admitted.
fn run(s: &Shape, inp: &Input, variant: Variant) -> Vec<String> {
    let dra = variant != Variant::Plain;
    let mut objs = objects(s);
    objs.workloads.reserve(inp.views.len());
    for v in &inp.views {
        let mut v = v.clone();
        if dra {
            let in_ns = inp.templates.get(&*v.namespace);
            match charge(
                &inp.claims,
                |n| in_ns.and_then(|t| t.get(n)),
                &inp.view,
                &inp.settings,
            ) {
                Charge::Devices(per) => add_to(&mut v.pod_sets, &per),
                other => panic!("counted: {other:?}"),
            }
        }
        objs.workloads.push(v);
    }
    let mut e = Engine::rebuild(objs);
    let mut admitted: Vec<String> = e
        .schedule(0)
        .decisions
        .into_iter()
        .filter_map(|d| match d {
            Decision::Admit { workload, .. } => Some(workload),
            _ => None,
        })
        .collect();
    admitted.sort();
    admitted
}

const FULL: Shape = Shape {
    queues: 1000,
    per_queue: 50,
};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("claims");
    g.sample_size(10).measurement_time(Duration::from_secs(40));
    for (variant, name) in [
        (Variant::Plain, "plain"),
        (Variant::Dra, "dra"),
        (Variant::DraCel, "dra_cel"),
    ] {
        let inp = input(&FULL, variant);
        g.bench_function(name, |b| b.iter(|| run(&FULL, &inp, variant)));
    }
    g.finish();
}

criterion_group!(benches, bench);

/// Alternated timings outside criterion (`BATCHGATE_BENCH_ROUNDS`, 12 by
/// default, the order rotated), for the ratios and their spread: criterion
/// times each variant in its own stretch of minutes, over which this shared
/// host's speed drifts by more than the counting costs.
fn pairs() {
    let variants = [Variant::Plain, Variant::Dra, Variant::DraCel];
    let inputs: Vec<Input> = variants.iter().map(|v| input(&FULL, *v)).collect();
    let mut ratios = [Vec::new(), Vec::new()];
    let rounds = std::env::var("BATCHGATE_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(12);
    for round in 0..rounds {
        let mut t = [0.0f64; 3];
        for k in 0..3 {
            let i = (round + k) % 3;
            let start = Instant::now();
            let admitted = run(&FULL, &inputs[i], variants[i]);
            t[i] = start.elapsed().as_secs_f64();
            assert_eq!(admitted.len(), FULL.queues, "one head per ClusterQueue");
        }
        println!(
            "round {round}: plain {:.3} s, dra {:.3} s ({:.3}), dra_cel {:.3} s ({:.3})",
            t[0],
            t[1],
            t[1] / t[0],
            t[2],
            t[2] / t[0]
        );
        ratios[0].push(t[1] / t[0]);
        ratios[1].push(t[2] / t[0]);
    }
    for (name, r) in ["dra/plain", "dra_cel/plain"].iter().zip(ratios.iter_mut()) {
        r.sort_by(f64::total_cmp);
        let q = |p: usize| r[(r.len() - 1) * p / 4];
        println!(
            "{name} over {} rounds: median {:.3}, quartiles {:.3}-{:.3}, min {:.3}, max {:.3}",
            r.len(),
            q(2),
            q(1),
            q(3),
            r[0],
            r[r.len() - 1]
        );
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        let small = Shape {
            queues: 20,
            per_queue: 50,
        };
        let a = run(&small, &input(&small, Variant::Plain), Variant::Plain);
        let b = run(&small, &input(&small, Variant::Dra), Variant::Dra);
        let c = run(&small, &input(&small, Variant::DraCel), Variant::DraCel);
        assert_eq!(a.len(), small.queues);
        assert_eq!(a, b, "DRA and plain shapes admit the same Workloads");
        assert_eq!(a, c, "with CEL selectors too");
        println!("claims smoke: {} admitted alike", a.len());
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    pairs();
}
