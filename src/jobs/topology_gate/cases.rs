//! Kueue v0.19.2 `pkg/controller/tas/topology_ungater_test.go`
//! `TestReconcile`, all 37 cases by their upstream names. Pods are listed
//! name-sorted, as the fake client lists them. Each case applies the
//! releases and checks what upstream checks: how many live released pods
//! sit in each domain, the gates left, and, where upstream asserts exact
//! node selectors (rank-ordered cases), each pod's.

use super::*;

const BLOCK: &str = "cloud.com/topology-block";
const RACK: &str = "cloud.com/topology-rack";
const HOST: &str = "kubernetes.io/hostname";
const WL: &str = "unit-test";
const MAIN: &str = "main";
const JOB_INDEX: &str = "batch.kubernetes.io/job-completion-index";
const JOBSET_INDEX: &str = "jobset.sigs.k8s.io/job-index";
const LWS_INDEX: &str = "leaderworkerset.sigs.k8s.io/worker-index";
const KF_INDEX: &str = "training.kubeflow.org/replica-index";
const GROUP_INDEX: &str = "kueue.x-k8s.io/pod-group-pod-index";

fn ps(name: &str, count: i32, domains: &[(&[&str], i32)]) -> PodSetPlacement {
    PodSetPlacement {
        name: name.into(),
        count,
        levels: vec![BLOCK.into(), RACK.into()],
        domains: domains
            .iter()
            .map(|(v, c)| Domain {
                values: v.iter().map(|s| s.to_string()).collect(),
                count: i64::from(*c),
            })
            .collect(),
        ..Default::default()
    }
}

impl PodSetPlacement {
    fn index(mut self, label: &str) -> Self {
        self.pod_index_label = Some(label.into());
        self
    }
    fn sub(mut self, label: &str, count: Option<i32>) -> Self {
        self.sub_group_index_label = Some(label.into());
        self.sub_group_count = count;
        self
    }
    fn group(mut self, g: &str) -> Self {
        self.group = Some(g.into());
        self
    }
    fn hosts(mut self) -> Self {
        self.levels = vec![HOST.into()];
        self
    }
}

/// A pod of `unit-test`'s pod set `set`, gated.
fn pod(name: &str, set: &str) -> Pod {
    Pod {
        name: name.into(),
        workload: Some(WL.into()),
        pod_set: Some(set.into()),
        gated: true,
        ..Default::default()
    }
}

impl Pod {
    fn label(mut self, k: &str, v: &str) -> Self {
        self.labels.insert(k.into(), v.into());
        self
    }
    fn offset(mut self, v: &str) -> Self {
        self.index_offset = Some(v.into());
        self
    }
    /// Released onto block/rack.
    fn on(mut self, block: &str, rack: &str) -> Self {
        self.gated = false;
        self.node_selector.insert(BLOCK.into(), block.into());
        self.node_selector.insert(RACK.into(), rack.into());
        self
    }
    fn on_host(mut self, host: &str) -> Self {
        self.gated = false;
        self.node_selector.insert(HOST.into(), host.into());
        self
    }
    fn ended(mut self) -> Self {
        self.terminated = true;
        self
    }
    fn no_workload(mut self) -> Self {
        self.workload = None;
        self
    }
    fn no_pod_set(mut self) -> Self {
        self.pod_set = None;
        self
    }
}

#[derive(Default)]
struct Case {
    name: &'static str,
    admitted: bool,
    placements: Vec<PodSetPlacement>,
    pods: Vec<Pod>,
    unhealthy: Vec<&'static str>,
    /// Expectations outstanding before the pass.
    expecting: bool,
    want_err: bool,
    /// Live released pods by node selector values.
    want_counts: Vec<(Vec<&'static str>, usize)>,
    /// Pods left gated.
    want_gated: Vec<&'static str>,
    /// Rank-ordered cases: each pod's node selector values.
    want_exact: Vec<(&'static str, Vec<&'static str>)>,
}

fn admitted(name: &'static str, placements: Vec<PodSetPlacement>, pods: Vec<Pod>) -> Case {
    Case {
        name,
        admitted: true,
        placements,
        pods,
        ..Default::default()
    }
}

impl Case {
    fn counts(mut self, c: &[(&[&'static str], usize)]) -> Self {
        self.want_counts = c.iter().map(|(v, n)| (v.to_vec(), *n)).collect();
        self
    }
    fn gated(mut self, g: &[&'static str]) -> Self {
        self.want_gated = g.to_vec();
        self
    }
    fn exact(mut self, e: &[(&'static str, &[&'static str])]) -> Self {
        self.want_exact = e.iter().map(|(p, v)| (*p, v.to_vec())).collect();
        self
    }
}

/// The pass as the shell runs it: wait while expectations are out, else
/// compute the releases and apply them to the pods.
fn run(case: &Case) -> (Result<(), GateError>, Vec<Pod>) {
    let mut pods = case.pods.clone();
    pods.sort_by(|a, b| a.name.cmp(&b.name));
    let mut exp = Expectations::default();
    if case.expecting {
        exp.expect(WL, ["x".to_string()]);
    }
    if !exp.satisfied(WL) {
        return (Ok(()), pods);
    }
    let unhealthy = case.unhealthy.iter().map(|s| s.to_string()).collect();
    let result = releases(WL, case.admitted, &case.placements, &pods, &unhealthy);
    match result {
        Err(e) => (Err(e), pods),
        Ok(rel) => {
            for r in rel {
                let p = pods.iter_mut().find(|p| p.name == r.pod).unwrap();
                assert!(p.gated, "{}: released {} twice", case.name, p.name);
                p.gated = false;
                p.node_selector.extend(r.node_selector);
            }
            (Ok(()), pods)
        }
    }
}

fn check(case: Case) {
    let (result, pods) = run(&case);
    assert_eq!(result.is_err(), case.want_err, "{}: {result:?}", case.name);
    let mut counts: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for p in pods.iter().filter(|p| !p.gated && !p.terminated) {
        *counts
            .entry(p.node_selector.values().cloned().collect())
            .or_default() += 1;
    }
    let want: BTreeMap<Vec<String>, usize> = case
        .want_counts
        .iter()
        .map(|(v, n)| (v.iter().map(|s| s.to_string()).collect(), *n))
        .collect();
    assert_eq!(counts, want, "{}: counts", case.name);
    let gated: Vec<&str> = pods
        .iter()
        .filter(|p| p.gated)
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(gated, case.want_gated, "{}: gated", case.name);
    for (name, values) in &case.want_exact {
        let p = pods.iter().find(|p| p.name == *name).unwrap();
        let got: Vec<&str> = p.node_selector.values().map(String::as_str).collect();
        assert_eq!(&got, values, "{}: {name}", case.name);
    }
}

const B1R1: &[&str] = &["b1", "r1"];
const B1R2: &[&str] = &["b1", "r2"];
const B2R1: &[&str] = &["b2", "r1"];

#[test]
fn topology_ungater_reconcile() {
    let five = || ps(MAIN, 5, &[(B1R1, 2), (B1R2, 1), (B2R1, 2)]).index(JOB_INDEX);
    let four_jobset = || {
        ps(MAIN, 4, &[(B1R1, 2), (B1R2, 1), (B2R1, 1)])
            .index(JOB_INDEX)
            .sub(JOBSET_INDEX, Some(2))
    };
    let lws = || {
        vec![
            ps("workers", 4, &[(B1R1, 1), (B1R2, 1), (B2R1, 2)])
                .index(LWS_INDEX)
                .group("lws-group"),
            ps("leader", 1, &[(B1R1, 1)])
                .index(LWS_INDEX)
                .group("lws-group"),
        ]
    };
    let mpi = || {
        vec![
            ps("launcher", 1, &[(B1R1, 1)])
                .index(KF_INDEX)
                .group("mpijob-group"),
            ps("worker", 3, &[(B1R1, 1), (B1R2, 1), (B2R1, 1)])
                .index(KF_INDEX)
                .group("mpijob-group"),
        ]
    };
    let four = |label: &str| ps(MAIN, 4, &[(B1R1, 2), (B1R2, 1), (B2R1, 1)]).index(label);
    let cases = vec![
        admitted("ungate single pod", vec![ps(MAIN, 1, &[(B1R1, 1)])], vec![pod("pod", MAIN)])
            .counts(&[(B1R1, 1)]),
        Case {
            unhealthy: vec!["x1"],
            ..admitted(
                "does not ungate a replacement pod onto the unhealthy domain of a two-pod group",
                vec![ps(MAIN, 2, &[(&["x1"], 1), (&["x2"], 1)]).hosts()],
                vec![pod("pod-survivor", MAIN).on_host("x2"), pod("pod-replacement", MAIN)],
            )
        }
        .counts(&[(&["x2"], 1)])
        .gated(&["pod-replacement"]),
        Case {
            unhealthy: vec!["x1"],
            ..admitted(
                "does not ungate a pod onto a node marked unhealthy",
                vec![ps(MAIN, 1, &[(&["x1"], 1)]).hosts()],
                vec![pod("pod", MAIN)],
            )
        }
        .gated(&["pod"]),
        admitted(
            "ungate single pod with sub group index label but no sub group count",
            vec![ps(MAIN, 1, &[(B1R1, 1)]).index(JOB_INDEX).sub(JOBSET_INDEX, None)],
            vec![pod("pod", MAIN).label(JOB_INDEX, "0").label(JOBSET_INDEX, "0")],
        )
        .counts(&[(B1R1, 1)]),
        admitted(
            "ungate single pod with sub group index label but zero sub group count",
            vec![ps(MAIN, 1, &[(B1R1, 1)]).index(JOB_INDEX).sub(JOBSET_INDEX, Some(0))],
            vec![pod("pod", MAIN).label(JOB_INDEX, "0").label(JOBSET_INDEX, "0")],
        )
        .counts(&[(B1R1, 1)]),
        admitted(
            "ungate multiple pods in a single domain",
            vec![ps(MAIN, 3, &[(B1R1, 3)])],
            vec![pod("pod1", MAIN), pod("pod2", MAIN)],
        )
        .counts(&[(B1R1, 2)]),
        admitted(
            "ungate multiple pods across multiple domains",
            vec![ps(MAIN, 2, &[(B1R1, 1), (B1R2, 1)])],
            vec![pod("pod1", MAIN), pod("pod2", MAIN)],
        )
        .counts(&[(B1R1, 1), (B1R2, 1)]),
        Case {
            admitted: false,
            ..admitted(
                "workload without admission - pod remains gated",
                vec![PodSetPlacement {
                    name: MAIN.into(),
                    count: 2,
                    ..Default::default()
                }],
                vec![pod("pod1", MAIN)],
            )
        }
        .gated(&["pod1"]),
        admitted(
            "workload admitted but without topology assignment - pod remains gated",
            vec![PodSetPlacement {
                name: MAIN.into(),
                count: 2,
                ..Default::default()
            }],
            vec![pod("pod1", MAIN)],
        )
        .gated(&["pod1"]),
        Case {
            admitted: false,
            ..admitted(
                "workload with admission (reserved quota), but not admitted - pod remains gated",
                vec![ps(MAIN, 2, &[(B1R1, 1)])],
                vec![pod("pod1", MAIN)],
            )
        }
        .gated(&["pod1"]),
        admitted(
            "workload admitted by TAS with single pod without the Workload annotation - Pod remains gated",
            vec![ps(MAIN, 1, &[(B1R1, 1)])],
            vec![pod("pod", MAIN).no_workload()],
        )
        .gated(&["pod"]),
        admitted(
            "workload admitted by TAS with single pod without the PodSet label - Pod remains gated",
            vec![ps(MAIN, 1, &[(B1R1, 1)])],
            vec![pod("pod", MAIN).no_pod_set()],
        )
        .gated(&["pod"]),
        // Another gate is not the topology gate's business: the pod counts
        // as released here and keeps the other gate in the apiserver.
        admitted(
            "workload admitted by TAS with single pod without topology gate, remains gated by another gate",
            vec![ps(MAIN, 1, &[(B1R1, 1)])],
            vec![pod("pod", MAIN).on("b1", "r1")],
        )
        .counts(&[(B1R1, 1)]),
        admitted(
            "workload admitted by TAS with single pod with topology gate and another gate, ungated, but remains gated by another gate",
            vec![ps(MAIN, 1, &[(B1R1, 1)])],
            vec![pod("pod", MAIN)],
        )
        .counts(&[(B1R1, 1)]),
        admitted(
            "expect single pod; one already running - don't ungate second pod",
            vec![ps(MAIN, 1, &[(B1R1, 1)])],
            vec![pod("pod-already-running", MAIN).on("b1", "r1"), pod("pod-gated", MAIN)],
        )
        .counts(&[(B1R1, 1)])
        .gated(&["pod-gated"]),
        admitted(
            "expect single pod; one ungated pod failed - ungate second pod",
            vec![ps(MAIN, 1, &[(B1R1, 1)])],
            vec![
                pod("pod-already-running", MAIN).on("b1", "r1").ended(),
                pod("pod-gated", MAIN),
            ],
        )
        .counts(&[(B1R1, 1)]),
        admitted(
            "two pods, one already ungated, second to ungate",
            vec![ps(MAIN, 2, &[(B1R1, 2)])],
            vec![pod("pod1", MAIN).on("b1", "r1"), pod("pod2", MAIN)],
        )
        .counts(&[(B1R1, 2)]),
        admitted(
            "expect single pod; one ungated pod succeeded - ungate second pod",
            vec![ps(MAIN, 1, &[(B1R1, 1)])],
            vec![
                pod("pod-already-succeeded", MAIN).on("b1", "r1").ended(),
                pod("pod-gated", MAIN),
            ],
        )
        .counts(&[(B1R1, 1)]),
        admitted(
            "ungate replacement pod for unhealthy node",
            vec![ps(MAIN, 2, &[(B1R1, 1), (B1R2, 1)])
                .index(JOB_INDEX)
                .sub(JOBSET_INDEX, Some(1))],
            vec![
                pod("p1-running", MAIN)
                    .label(JOB_INDEX, "1")
                    .label(JOBSET_INDEX, "0")
                    .on("b1", "r1"),
                pod("p0-replacement", MAIN)
                    .label(JOB_INDEX, "0")
                    .label(JOBSET_INDEX, "0"),
            ],
        )
        .counts(&[(B1R1, 1), (B1R2, 1)])
        .exact(&[("p0-replacement", B1R2)]),
        Case {
            expecting: true,
            ..admitted(
                "ungate single pod; while there are pending expectations",
                vec![ps(MAIN, 2, &[(B1R1, 2)])],
                vec![pod("pod1", MAIN).on("b1", "r1"), pod("pod2", MAIN)],
            )
        }
        .counts(&[(B1R1, 1)])
        .gated(&["pod2"]),
        admitted(
            "ranks: ungate pods according to their ranks for batch/Job - some Pods already scheduled",
            vec![five()],
            vec![
                pod("p0", MAIN).label(JOB_INDEX, "0").on("b1", "r1"),
                pod("p1", MAIN).label(JOB_INDEX, "1"),
                pod("p2", MAIN).label(JOB_INDEX, "2"),
                pod("p3", MAIN).label(JOB_INDEX, "3").on("b2", "r1"),
                pod("p4", MAIN).label(JOB_INDEX, "4"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 2)])
        .exact(&[("p1", B1R1), ("p2", B1R2), ("p4", B2R1)]),
        admitted(
            "ranks: ungate pods according to their ranks for LeaderWorkerSet - for all Pods",
            lws(),
            vec![
                pod("p0", "leader").label(LWS_INDEX, "0"),
                pod("p1", "workers").label(LWS_INDEX, "2"),
                pod("p2", "workers").label(LWS_INDEX, "1"),
                pod("p3", "workers").label(LWS_INDEX, "3"),
                pod("p4", "workers").label(LWS_INDEX, "4"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 2)])
        .exact(&[
            ("p0", B1R1),
            ("p1", B1R2),
            ("p2", B1R1),
            ("p3", B2R1),
            ("p4", B2R1),
        ]),
        admitted(
            "ranks: ungate pods according to their ranks for batch/Job - for all Pods",
            vec![five()],
            (0..5)
                .map(|i| pod(&format!("p{i}"), MAIN).label(JOB_INDEX, &i.to_string()))
                .collect(),
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 2)])
        .exact(&[
            ("p0", B1R1),
            ("p1", B1R1),
            ("p2", B1R2),
            ("p3", B2R1),
            ("p4", B2R1),
        ]),
        admitted(
            "ranks: gracefully handle situation with ranks going below 0",
            lws(),
            vec![
                pod("p0", "leader").label(LWS_INDEX, "0"),
                pod("p1", "workers").label(LWS_INDEX, "0"),
                pod("p2", "workers").label(LWS_INDEX, "1"),
                pod("p3", "workers").label(LWS_INDEX, "2"),
                pod("p4", "workers").label(LWS_INDEX, "3"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 2)])
        .exact(&[
            ("p0", B1R1),
            ("p1", B1R1),
            ("p2", B1R2),
            ("p3", B2R1),
            ("p4", B2R1),
        ]),
        admitted(
            "ranks: gracefully handle situation with repeated ranks",
            vec![ps(MAIN, 4, &[(B1R1, 2), (B1R2, 1), (B2R1, 1)]).index(JOB_INDEX)],
            vec![
                pod("p0", MAIN).label(JOB_INDEX, "0"),
                pod("p1", MAIN).label(JOB_INDEX, "1"),
                pod("p2", MAIN).label(JOB_INDEX, "0"),
                pod("p3", MAIN).label(JOB_INDEX, "1"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 1)]),
        admitted(
            "ranks: gracefully handle situation when parallelism < completions",
            vec![ps(MAIN, 1, &[(B1R1, 1)]).index(JOB_INDEX)],
            vec![
                pod("p0", MAIN).label(JOB_INDEX, "0").on("b1", "r1").ended(),
                pod("p1", MAIN).label(JOB_INDEX, "1"),
            ],
        )
        .counts(&[(B1R1, 1)])
        .exact(&[("p1", B1R1)]),
        admitted(
            "ranks: support rank-based ordering for JobSet - for all Pods",
            vec![four_jobset()],
            vec![
                pod("p0", MAIN).label(JOB_INDEX, "0").label(JOBSET_INDEX, "0"),
                pod("p1", MAIN).label(JOB_INDEX, "1").label(JOBSET_INDEX, "0"),
                pod("p2", MAIN).label(JOB_INDEX, "0").label(JOBSET_INDEX, "1"),
                pod("p3", MAIN).label(JOB_INDEX, "1").label(JOBSET_INDEX, "1"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 1)])
        .exact(&[("p0", B1R1), ("p1", B1R1), ("p2", B1R2), ("p3", B2R1)]),
        admitted(
            "ranks: support rank-based ordering for JobSet - some Pods already scheduled",
            vec![four_jobset()],
            vec![
                pod("p0", MAIN).label(JOB_INDEX, "0").label(JOBSET_INDEX, "0"),
                pod("p1", MAIN)
                    .label(JOB_INDEX, "1")
                    .label(JOBSET_INDEX, "0")
                    .on("b1", "r1"),
                pod("p2", MAIN)
                    .label(JOB_INDEX, "0")
                    .label(JOBSET_INDEX, "1")
                    .on("b1", "r2"),
                pod("p3", MAIN).label(JOB_INDEX, "1").label(JOBSET_INDEX, "1"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 1)])
        .exact(&[("p0", B1R1), ("p3", B2R1)]),
        admitted(
            "ranks: support rank-based ordering for JobSet - only subset of pods is observed so far",
            vec![four_jobset()],
            vec![
                pod("p1", MAIN).label(JOB_INDEX, "1").label(JOBSET_INDEX, "0"),
                pod("p3", MAIN).label(JOB_INDEX, "1").label(JOBSET_INDEX, "1"),
            ],
        )
        .counts(&[(B1R1, 1), (B2R1, 1)])
        .exact(&[("p1", B1R1), ("p3", B2R1)]),
        admitted(
            "ranks: support rank-based ordering for kubeflow with valid offset annotation - for all Pods",
            mpi(),
            vec![
                pod("l0", "launcher").label(KF_INDEX, "0"),
                pod("w1", "worker").offset("1").label(KF_INDEX, "1"),
                pod("w2", "worker").offset("1").label(KF_INDEX, "2"),
                pod("w3", "worker").offset("1").label(KF_INDEX, "3"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 1)])
        .exact(&[("l0", B1R1), ("w1", B1R1), ("w2", B1R2), ("w3", B2R1)]),
        admitted(
            "ranks: out-of-range pod index falls back to greedy assignment",
            vec![ps("worker", 2, &[(B1R1, 1), (B1R2, 1)]).index(JOB_INDEX)],
            vec![
                pod("w1", "worker").offset("1").label(JOB_INDEX, "1").on("b1", "r1"),
                pod("w2", "worker").offset("1").label(JOB_INDEX, "2").on("b1", "r2"),
                pod("stray", "worker").offset("1").label(JOB_INDEX, "3"),
            ],
        )
        .counts(&[(B1R1, 1), (B1R2, 1)])
        .gated(&["stray"]),
        admitted(
            "ranks: TopologyAssignment shorter than the PodSet count falls back to greedy assignment",
            vec![ps("worker", 2, &[(B1R1, 1)]).index(JOB_INDEX)],
            vec![pod("w1", "worker").label(JOB_INDEX, "1")],
        )
        .counts(&[(B1R1, 1)]),
        Case {
            want_err: true,
            ..admitted(
                "ranks: support rank-based ordering for kubeflow with invalid offset annotation - for all Pods",
                mpi(),
                vec![
                    pod("l0", "launcher").label(KF_INDEX, "0"),
                    pod("w0", "worker").offset("invalid").label(KF_INDEX, "0"),
                    pod("w1", "worker").offset("invalid").label(KF_INDEX, "1"),
                    pod("w2", "worker").offset("invalid").label(KF_INDEX, "2"),
                ],
            )
        }
        .gated(&["l0", "w0", "w1", "w2"]),
        admitted(
            "ranks: support rank-based ordering for kubeflow - for all Pods",
            vec![four(KF_INDEX)],
            vec![
                pod("l0", MAIN),
                pod("w0", MAIN).label(KF_INDEX, "0"),
                pod("w1", MAIN).label(KF_INDEX, "1"),
                pod("w2", MAIN).label(KF_INDEX, "2"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 1)])
        .exact(&[("l0", B1R1), ("w0", B1R1), ("w1", B1R2), ("w2", B2R1)]),
        admitted(
            "ranks: support rank-based ordering for kubeflow - some Pods already scheduled",
            vec![four(KF_INDEX)],
            vec![
                pod("l0", MAIN),
                pod("w0", MAIN).label(KF_INDEX, "0"),
                pod("w1", MAIN).label(KF_INDEX, "1").on("b1", "r1"),
                pod("w2", MAIN).label(KF_INDEX, "2").on("b1", "r2"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 1)])
        .exact(&[("l0", B1R1), ("w0", B2R1)]),
        admitted(
            "ranks: support rank-based ordering for pod groups - for all Pods",
            vec![four(GROUP_INDEX)],
            (0..4)
                .map(|i| pod(&format!("w{i}"), MAIN).label(GROUP_INDEX, &i.to_string()))
                .collect(),
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 1)])
        .exact(&[("w0", B1R1), ("w1", B1R1), ("w2", B1R2), ("w3", B2R1)]),
        admitted(
            "ranks: support rank-based ordering for pod groups - some Pods already scheduled",
            vec![four(GROUP_INDEX)],
            vec![
                pod("w0", MAIN).label(GROUP_INDEX, "0"),
                pod("w1", MAIN).label(GROUP_INDEX, "1").on("b1", "r1"),
                pod("w2", MAIN).label(GROUP_INDEX, "2"),
                pod("w3", MAIN).label(GROUP_INDEX, "3").on("b2", "r1"),
            ],
        )
        .counts(&[(B1R1, 2), (B1R2, 1), (B2R1, 1)])
        .exact(&[("w0", B1R1), ("w2", B1R2)]),
    ];
    assert_eq!(cases.len(), 37, "TestReconcile has 37 cases");
    for case in cases {
        check(case);
    }
}

/// Expectations: released pods are awaited until seen, per Workload.
#[test]
fn expectations_wait_for_every_released_pod() {
    let mut e = Expectations::default();
    assert!(e.satisfied("w"));
    e.expect("w", ["a".to_string(), "b".to_string()]);
    assert!(!e.satisfied("w"));
    assert!(e.satisfied("other"));
    e.observed("w", "a");
    assert!(!e.satisfied("w"));
    e.observed("w", "b");
    assert!(e.satisfied("w"));
}
