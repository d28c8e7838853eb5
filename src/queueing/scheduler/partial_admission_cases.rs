//! Partial admission through whole admission cycles, modelled on the
//! partial-admission cases of upstream's `TestSchedule`
//! (`pkg/scheduler/scheduler_test.go`, v0.19.2), with its queues: `sales`
//! (50 cpu in flavor `default`) and `eng-beta` (20 `example.com/gpu` in
//! flavor `model-a`, preempting lower priorities in the queue, in cohort
//! `eng` with `eng-alpha`).

use std::collections::BTreeMap;

use super::*;
use crate::queueing::{
    cluster_queue::{
        FlavorQuotas, Preemption, PreemptionPolicy, QueueingStrategy, ResourceGroup, ResourceQuota,
        StopPolicy,
    },
    workload::{PodSet, PodSetAssignment},
};

const GPU: &str = "example.com/gpu";

fn group(resource: &str, flavor: &str, nominal: i64) -> ResourceGroup {
    ResourceGroup {
        covered_resources: vec![resource.into()],
        flavors: vec![FlavorQuotas {
            name: flavor.into(),
            resources: vec![ResourceQuota {
                name: resource.into(),
                nominal: nominal * 1000,
                borrowing_limit: Some(0),
                lending_limit: None,
            }],
        }],
    }
}

fn queue(name: &str, cohort: Option<&str>, groups: Vec<ResourceGroup>) -> ClusterQueue {
    ClusterQueue {
        name: name.into(),
        cohort: cohort.map(Into::into),
        queueing_strategy: QueueingStrategy::StrictFIFO,
        namespace_selector: Some(Default::default()),
        resource_groups: groups,
        preemption: Preemption::default(),
        flavor_fungibility: Default::default(),
        stop_policy: StopPolicy::None,
        admission_fair_sharing: false,
        terminating: false,
    }
}

/// The engine with upstream's `sales`, `eng-alpha` and `eng-beta` queues
/// (one LocalQueue `main` in each namespace of the same name).
fn engine() -> Engine {
    let mut e = Engine::new();
    for f in ["default", "on-demand", "model-a"] {
        e.upsert_flavor(ResourceFlavor {
            name: f.into(),
            node_labels: BTreeMap::new(),
            node_taints: vec![],
            tolerations: vec![],
            topology_name: None,
            topology_levels: None,
        });
    }
    let mut beta = queue(
        "eng-beta",
        Some("eng"),
        vec![group("cpu", "on-demand", 50), group(GPU, "model-a", 20)],
    );
    beta.preemption = Preemption {
        within_cluster_queue: PreemptionPolicy::LowerPriority,
        reclaim_within_cohort: PreemptionPolicy::Any,
        ..Default::default()
    };
    for cq in [
        queue("sales", None, vec![group("cpu", "default", 50)]),
        queue(
            "eng-alpha",
            Some("eng"),
            vec![group("cpu", "on-demand", 50)],
        ),
        beta,
    ] {
        e.upsert_local_queue(LocalQueue {
            namespace: cq.name.clone(),
            name: "main".into(),
            cluster_queue: cq.name.clone(),
            stop_policy: StopPolicy::None,
            fair_sharing: Default::default(),
        });
        e.upsert_cluster_queue(cq);
    }
    e
}

/// `(name, count, minCount, per-pod request)`.
type Set = (&'static str, u32, Option<u32>, i64);

fn workload(ns: &str, name: &str, priority: i32, resource: &str, sets: &[Set]) -> Workload {
    Workload {
        unhealthy_nodes: Vec::new(),
        single_pod_owned: false,
        namespace: ns.into(),
        name: name.into(),
        uid: format!("wl-{name}").into(),
        job_uid: Some(format!("job-{name}")),
        copy_chain: None,
        queue_name: "main".into(),
        priority,
        created: 1,
        active: true,
        finished: false,
        pod_sets: sets
            .iter()
            .map(|(n, count, min, per_pod)| PodSet {
                name: (*n).into(),
                count: *count,
                min_count: *min,
                requests: [(resource.to_string(), per_pod * 1000)].into(),
                node_selector: BTreeMap::new(),
                node_affinity: Default::default(),
                tolerations: vec![],
                topology: None,
            })
            .collect(),
        admission: None,
        readiness: Default::default(),
        replaces: None,
    }
}

/// `old`: 10 GPUs of `model-a` held in `eng-beta` at priority -4.
fn old_gpu_holder() -> Workload {
    let mut old = workload("eng-beta", "old", -4, GPU, &[("one", 10, None, 1)]);
    old.admission = Some(Admission {
        cluster_queue: "eng-beta".into(),
        pod_set_assignments: vec![PodSetAssignment {
            name: "one".into(),
            flavors: [(GPU.to_string(), "model-a".to_string())].into(),
            resource_usage: [(GPU.to_string(), 10_000)].into(),
            count: 10,
            topology: None,
        }],
    });
    old
}

/// Per admitted pod set: (name, count, flavor of `resource`, usage).
fn admitted(c: &Cycle, key: &str, resource: &str) -> Option<Vec<(String, u32, String, i64)>> {
    c.decisions.iter().find_map(|d| match d {
        Decision::Admit {
            workload,
            admission,
        } if workload == key => Some(
            admission
                .pod_set_assignments
                .iter()
                .map(|p| {
                    (
                        p.name.clone(),
                        p.count,
                        p.flavors[resource].clone(),
                        p.resource_usage[resource],
                    )
                })
                .collect(),
        ),
        _ => None,
    })
}

fn pending(c: &Cycle, key: &str) -> Option<(PendingReason, String)> {
    c.decisions.iter().find_map(|d| match d {
        Decision::Pending {
            workload,
            reason,
            message,
        } if workload == key => Some((*reason, message.clone())),
        _ => None,
    })
}

fn evicted(c: &Cycle) -> Vec<(String, String)> {
    c.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Evict {
                workload, message, ..
            } => Some((workload.clone(), message.clone())),
            _ => None,
        })
        .collect()
}

/// "partial admission single variable pod set": 50 pods of 2 cpu, at
/// least 20, in 50 cpu: admitted with 25 pods and all 50 cpu.
#[test]
fn a_single_variable_pod_set_is_admitted_with_the_count_that_fits() {
    let mut e = engine();
    e.upsert_workload(workload(
        "sales",
        "new",
        0,
        "cpu",
        &[("one", 50, Some(20), 2)],
    ));
    let c = e.schedule(0);
    assert_eq!(
        admitted(&c, "sales/new", "cpu"),
        Some(vec![("one".into(), 25, "default".into(), 50_000)])
    );
    e.confirm_admission("sales/new");
    let s = e.cluster_queue_status("sales").unwrap();
    assert_eq!(s.admitted_workloads, 1);
}

/// "partial admission multiple variable pod sets": 20 fixed pods, 30 (at
/// least 10) and 15 (at least 5), 1 cpu each, in 50 cpu: every variable
/// pod set gives up the same share of what it may, 20 + 20 + 10.
#[test]
fn several_variable_pod_sets_shrink_together() {
    let mut e = engine();
    e.upsert_workload(workload(
        "sales",
        "new",
        0,
        "cpu",
        &[
            ("one", 20, None, 1),
            ("two", 30, Some(10), 1),
            ("three", 15, Some(5), 1),
        ],
    ));
    let c = e.schedule(0);
    assert_eq!(
        admitted(&c, "sales/new", "cpu"),
        Some(vec![
            ("one".into(), 20, "default".into(), 20_000),
            ("two".into(), 20, "default".into(), 20_000),
            ("three".into(), 10, "default".into(), 10_000),
        ])
    );
}

/// "partial admission disabled, multiple variable pod sets": the same
/// workload without `minCount` never fits, with Kueue's reason and
/// message for the full counts.
#[test]
fn without_min_count_the_full_counts_stay_pending() {
    let mut e = engine();
    e.upsert_workload(workload(
        "sales",
        "new",
        0,
        "cpu",
        &[
            ("one", 20, None, 1),
            ("two", 30, None, 1),
            ("three", 15, None, 1),
        ],
    ));
    let c = e.schedule(0);
    assert_eq!(admitted(&c, "sales/new", "cpu"), None);
    assert_eq!(
        pending(&c, "sales/new"),
        Some((
            PendingReason::ExceedsMaxQuota,
            "couldn't assign flavors to pod set three: insufficient quota for cpu in flavor default, previously considered podsets requests (50) + current podset request (15) > maximum capacity (50)".into()
        ))
    );
}

const PREEMPTED: &str = "Preempted to accommodate a workload (UID: wl-new, JobUID: job-new) due to prioritization in the ClusterQueue; preemptor path: /eng/eng-beta; preemptee path: /eng/eng-beta";
const WAITING: &str = "couldn't assign flavors to pod set one: insufficient unused quota for example.com/gpu in flavor model-a, 10 more needed. Pending the preemption of 1 workload(s)";

/// "partial admission single variable pod set, preempt first": 20 GPUs
/// (at least 10) where `old` holds 10 of 20: preempting makes room for
/// all 20, so Kueue preempts rather than admitting 10 now.
#[test]
fn preemption_for_the_full_count_comes_before_reducing_it() {
    let mut e = engine();
    e.upsert_workload(old_gpu_holder());
    e.upsert_workload(workload(
        "eng-beta",
        "new",
        4,
        GPU,
        &[("one", 20, Some(10), 1)],
    ));
    let c = e.schedule(0);
    assert_eq!(
        evicted(&c),
        [("eng-beta/old".to_string(), PREEMPTED.into())]
    );
    assert_eq!(
        pending(&c, "eng-beta/new"),
        Some((PendingReason::WaitingForPreemptedWorkloads, WAITING.into()))
    );
    e.confirm_eviction("eng-beta/old");
    let c = e.schedule(1);
    assert_eq!(
        admitted(&c, "eng-beta/new", GPU),
        Some(vec![("one".into(), 20, "model-a".into(), 20_000)])
    );
}

/// "partial admission single variable pod set, preempt with partial
/// admission": 30 GPUs (at least 10) can never fit in 20; the search finds
/// 20 by preempting `old`, with the message of that reduced attempt.
#[test]
fn a_reduced_count_may_preempt() {
    let mut e = engine();
    e.upsert_workload(old_gpu_holder());
    e.upsert_workload(workload(
        "eng-beta",
        "new",
        4,
        GPU,
        &[("one", 30, Some(10), 1)],
    ));
    let c = e.schedule(0);
    assert_eq!(
        evicted(&c),
        [("eng-beta/old".to_string(), PREEMPTED.into())]
    );
    assert_eq!(
        pending(&c, "eng-beta/new"),
        Some((PendingReason::WaitingForPreemptedWorkloads, WAITING.into()))
    );
    e.confirm_eviction("eng-beta/old");
    let c = e.schedule(1);
    assert_eq!(
        admitted(&c, "eng-beta/new", GPU),
        Some(vec![("one".into(), 20, "model-a".into(), 20_000)])
    );
}

/// Below `minCount` nothing is admitted: the reason and message are those
/// of the full counts (Kueue returns the full assignment when the search
/// finds nothing).
#[test]
fn nothing_below_the_minimum_is_admitted() {
    let mut e = engine();
    e.upsert_workload(workload("sales", "big", 0, "cpu", &[("one", 40, None, 1)]));
    let c = e.schedule(0);
    assert!(admitted(&c, "sales/big", "cpu").is_some());
    e.confirm_admission("sales/big");
    e.upsert_workload(workload(
        "sales",
        "new",
        0,
        "cpu",
        &[("one", 30, Some(15), 1)],
    ));
    let c = e.schedule(1);
    assert_eq!(admitted(&c, "sales/new", "cpu"), None);
    assert_eq!(
        pending(&c, "sales/new"),
        Some((
            PendingReason::WaitingForQuota,
            "couldn't assign flavors to pod set one: insufficient unused quota for cpu in flavor default, 20 more needed".into()
        ))
    );
    // Once the quota frees up, the largest count that fits: 30 of 30.
    e.finish_workload("sales/big");
    let c = e.schedule(2);
    assert_eq!(
        admitted(&c, "sales/new", "cpu"),
        Some(vec![("one".into(), 30, "default".into(), 30_000)])
    );
}

/// The quota an admission at a reduced count holds is the reduced one,
/// also when the engine is rebuilt from the written admission.
#[test]
fn a_reduced_admission_holds_only_its_pods_quota() {
    let mut e = engine();
    e.upsert_workload(workload(
        "sales",
        "new",
        0,
        "cpu",
        &[("one", 50, Some(20), 2)],
    ));
    let c = e.schedule(0);
    let Some(Decision::Admit { admission, .. }) = c.decisions.first().cloned() else {
        panic!("not admitted: {c:?}");
    };
    let mut written = workload("sales", "new", 0, "cpu", &[("one", 50, Some(20), 2)]);
    written.admission = Some(admission);
    let mut again = engine();
    again.upsert_workload(written);
    again.upsert_workload(workload("sales", "small", 0, "cpu", &[("one", 1, None, 1)]));
    // 50 of 50 cpu are held: the small one waits for exactly 1 cpu.
    let c = again.schedule(1);
    assert_eq!(
        pending(&c, "sales/small").map(|p| p.1),
        Some(
            "couldn't assign flavors to pod set one: insufficient unused quota for cpu in flavor default, 1 more needed"
                .into()
        )
    );
}
