//! 100 of 140 upstream cases ported; not yet: balanced placement (21,
//! `TASBalancedPlacement` on, alpha), preferred node affinity (11,
//! `TASRespectNodeAffinityPreferred` on), elastic workload slices (8,
//! `ElasticJobsViaWorkloadSlicesWithTAS` on, previous assignments). The 5
//! node-replacement cases (workloads with `unhealthyNodes`) run in
//! `find_topology_assignments_replacement` with the 6 of
//! `TestFindTopologyAssignmentsMultiLayerReplacement`: 11 of 11. All pass.
//!
//! Kueue v0.19.2's `TestFindTopologyAssignments`
//! (`pkg/cache/scheduler/tas_cache_test.go`) as a table: each case's `name`
//! is upstream's, verbatim; nodes, non-TAS pods, requests and the expected
//! assignment or reason are transcribed. The topology is named "default"
//! as upstream's harness names it.

use std::collections::BTreeMap;

use super::*;
use crate::api::kueue::conversion::topology::Domain;
use crate::queueing::flavors::{Taint, TaintEffect, Toleration, TolerationOperator};
use crate::queueing::quantity;

const BLOCK: &str = "cloud.com/topology-block";
const RACK: &str = "cloud.com/topology-rack";
const DATACENTER: &str = "cloud.com/datacenter";
const AIZONE: &str = "cloud.com/aizone";

fn milli(q: &str) -> i64 {
    quantity::parse(q).unwrap_or_else(|e| panic!("quantity {q}: {e}"))
}

fn node(name: &str) -> Node {
    Node {
        name: name.to_string(),
        ..Node::default()
    }
}

impl Node {
    fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.to_string(), value.to_string());
        self
    }
    fn alloc(mut self, resources: &[(&str, &str)]) -> Self {
        for (r, q) in resources {
            self.allocatable.insert(r.to_string(), milli(q));
        }
        self
    }
    fn ready(mut self) -> Self {
        self.ready = true;
        self
    }
    fn not_ready(mut self) -> Self {
        self.ready = false;
        self
    }
    fn unschedulable(mut self) -> Self {
        self.unschedulable = true;
        self
    }
    fn taint(mut self, taint: Taint) -> Self {
        self.taints.push(taint);
        self
    }
}

fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
    Taint {
        key: key.to_string(),
        value: value.to_string(),
        effect,
    }
}

use TaintEffect::NoSchedule;

fn toleration(
    key: &str,
    operator: TolerationOperator,
    value: &str,
    effect: Option<TaintEffect>,
) -> Toleration {
    Toleration {
        key: key.to_string(),
        operator,
        value: value.to_string(),
        effect,
    }
}

/// A pod of upstream's harness: its usage counts on its node unless it is
/// unbound or terminated, as Kueue's non-TAS usage cache counts it.
#[derive(Default)]
struct Pod {
    node_name: String,
    phase: String,
    requests: Resources,
}

fn pod() -> Pod {
    Pod::default()
}

impl Pod {
    fn node_name(mut self, name: &str) -> Self {
        self.node_name = name.to_string();
        self
    }
    fn phase(mut self, phase: &str) -> Self {
        self.phase = phase.to_string();
        self
    }
    fn request(mut self, resource: &str, q: &str) -> Self {
        self.requests.insert(resource.to_string(), milli(q));
        self
    }
}

/// A pod set of a case and what upstream expects for it.
#[derive(Default)]
struct Ps {
    request: PodSetRequest,
    want: Option<Result<Assignment, String>>,
}

fn ps() -> Ps {
    Ps::default()
}

impl Ps {
    fn name(mut self, name: &str) -> Self {
        self.request.name = name.to_string();
        self
    }
    fn topology(mut self) -> Self {
        self.request.topology = Some(TopologyRequest::default());
        self
    }
    fn edit(mut self, f: impl FnOnce(&mut TopologyRequest)) -> Self {
        f(self.request.topology.get_or_insert_with(Default::default));
        self
    }
    fn required(self, level: &str) -> Self {
        self.edit(|t| t.required = Some(level.to_string()))
    }
    fn preferred(self, level: &str) -> Self {
        self.edit(|t| t.preferred = Some(level.to_string()))
    }
    fn unconstrained(self) -> Self {
        self.edit(|t| t.unconstrained = Some(true))
    }
    fn slice_required(self, level: &str) -> Self {
        self.edit(|t| t.slice_required = Some(level.to_string()))
    }
    fn slice_size(self, size: i32) -> Self {
        self.edit(|t| t.slice_size = Some(size))
    }
    fn layer(self, level: &str, size: i32) -> Self {
        self.edit(|t| {
            t.slice_layers.push(SliceLayer {
                level: level.to_string(),
                size,
            })
        })
    }
    fn requests(mut self, resources: &[(&str, &str)]) -> Self {
        for (r, q) in resources {
            self.request.per_pod.insert(r.to_string(), milli(q));
        }
        self
    }
    fn count(mut self, count: i32) -> Self {
        self.request.count = count;
        self
    }
    fn toleration(mut self, t: Toleration) -> Self {
        self.request.tolerations.push(t);
        self
    }
    fn node_selector(mut self, selector: &[(&str, &str)]) -> Self {
        for (k, v) in selector {
            self.request
                .node_selector
                .insert(k.to_string(), v.to_string());
        }
        self
    }
    fn group(mut self, group: &str) -> Self {
        self.request.group = Some(group.to_string());
        self
    }
    fn want(mut self, levels: &[&str], domains: &[(&[&str], i64)]) -> Self {
        self.want = Some(Ok(Assignment {
            levels: levels.iter().map(|l| l.to_string()).collect(),
            domains: domains
                .iter()
                .map(|(values, count)| Domain {
                    values: values.iter().map(|v| v.to_string()).collect(),
                    count: *count,
                })
                .collect(),
        }));
        self
    }
    fn reason(mut self, reason: &str) -> Self {
        self.want = Some(Err(reason.to_string()));
        self
    }
}

#[derive(Default)]
struct Case {
    /// Upstream's case name, verbatim.
    name: &'static str,
    levels: &'static [&'static str],
    /// The flavor's `nodeLabels`.
    node_labels: &'static [(&'static str, &'static str)],
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    /// Usage of this flavor's admitted workloads: leaf values, per-pod
    /// requests, pod count.
    prior_own: &'static [Usage],
    /// Usage taken on the same nodes through a sibling flavor this cycle.
    prior_flavor: &'static [Usage],
    pod_sets: Vec<Ps>,
}

type Usage = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    i64,
);

fn usage_by_leaf(usages: &[Usage]) -> DomainUsage {
    let mut by_leaf = DomainUsage::new();
    for (values, per_pod, count) in usages {
        let usage = by_leaf.entry(values.join(",")).or_default();
        for (r, q) in *per_pod {
            *usage.entry(r.to_string()).or_default() += milli(q) * count;
        }
        *usage.entry(PODS.to_string()).or_default() += ONE_POD * count;
    }
    by_leaf
}

impl Case {
    /// Runs the case; `None` when it passes, else what differs.
    fn check(&self) -> Option<String> {
        let topology = FlavorTopology {
            name: "default".to_string(),
            levels: self.levels.iter().map(|l| l.to_string()).collect(),
            node_labels: self
                .node_labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            tolerations: Vec::new(),
        };
        let mut snapshot = Snapshot::new(&topology, &self.nodes);
        for pod in &self.pods {
            if pod.node_name.is_empty() || pod.phase == "Succeeded" || pod.phase == "Failed" {
                continue;
            }
            let mut usage = pod.requests.clone();
            *usage.entry(PODS.to_string()).or_default() += ONE_POD;
            snapshot.add_non_tas_usage(&pod.node_name, &usage);
        }
        for (leaf, usage) in usage_by_leaf(self.prior_own) {
            snapshot.add_tas_usage(&leaf, &usage);
        }
        // Upstream's harness shares usage across flavors on hostname leaves only.
        let assumed = if self.levels.last() == Some(&HOSTNAME) {
            usage_by_leaf(self.prior_flavor)
        } else {
            DomainUsage::new()
        };
        let requests: Vec<PodSetRequest> =
            self.pod_sets.iter().map(|p| p.request.clone()).collect();
        let got: BTreeMap<String, Result<Assignment, String>> =
            place(&snapshot, &requests, &assumed)
                .into_iter()
                .map(|p| (p.pod_set, p.outcome))
                .collect();
        let want: BTreeMap<String, Result<Assignment, String>> = self
            .pod_sets
            .iter()
            .filter_map(|p| Some((p.request.name.clone(), p.want.clone()?)))
            .collect();
        if want.is_empty() {
            return Some(format!("{}: no expectation transcribed", self.name));
        }
        (got != want).then(|| format!("{}\n  want: {want:?}\n  got:  {got:?}", self.name))
    }
}

/// Upstream builds this case's 144 nodes in a loop; so do we: 8 racks of
/// 18 nodes with 2 GPUs each.
fn gb200_case() -> Case {
    let racks = [
        ("dc0", "aizone0", "block0", "r0"),
        ("dc0", "aizone0", "block0", "r1"),
        ("dc0", "aizone0", "block1", "r2"),
        ("dc0", "aizone0", "block1", "r3"),
        ("dc0", "aizone1", "block2", "r4"),
        ("dc0", "aizone1", "block2", "r5"),
        ("dc0", "aizone1", "block3", "r6"),
        ("dc0", "aizone1", "block3", "r7"),
    ];
    let nodes = racks
        .iter()
        .flat_map(|&(dc, az, block, rack)| {
            (0..18).map(move |i| {
                node(&format!("{block}-{rack}-{az}-n{i}"))
                    .label(DATACENTER, dc)
                    .label(AIZONE, az)
                    .label(BLOCK, block)
                    .label(RACK, rack)
                    .alloc(&[("nvidia.com/gpu", "2"), ("pods", "110")])
                    .ready()
            })
        })
        .collect();
    let all = [DATACENTER, AIZONE, BLOCK, RACK];
    Case {
        name: "multi-layer topology: mimic a real-world GB200 cluster, with NVL36 arch (2GPUs/node); dc required; aizone slices of 48; rack slices of 16; TASMultiLayerTopology",
        levels: &[DATACENTER, AIZONE, BLOCK, RACK],
        nodes,
        pod_sets: vec![ps()
            .required(DATACENTER)
            .layer(AIZONE, 48)
            .layer(RACK, 16)
            .requests(&[("nvidia.com/gpu", "2")])
            .count(96)
            .want(
                &all,
                &[
                    (&["dc0", "aizone0", "block0", "r0"], 16),
                    (&["dc0", "aizone0", "block0", "r1"], 16),
                    (&["dc0", "aizone0", "block1", "r2"], 16),
                    (&["dc0", "aizone1", "block2", "r4"], 16),
                    (&["dc0", "aizone1", "block2", "r5"], 16),
                    (&["dc0", "aizone1", "block3", "r6"], 16),
                ],
            )],
        ..Case::default()
    }
}

#[test]
fn find_topology_assignments() {
    let mut cases = cases();
    cases.push(gb200_case());
    let failures: Vec<String> = cases.iter().filter_map(Case::check).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn default_nodes() -> Vec<Node> {
    vec![
        node("b1-r1-x3")
            .label(BLOCK, "b1")
            .label(RACK, "r1")
            .label(HOSTNAME, "x3")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r2-x5")
            .label(BLOCK, "b1")
            .label(RACK, "r2")
            .label(HOSTNAME, "x5")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r2-x1")
            .label(BLOCK, "b1")
            .label(RACK, "r2")
            .label(HOSTNAME, "x1")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r2-x6")
            .label(BLOCK, "b1")
            .label(RACK, "r2")
            .label(HOSTNAME, "x6")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r2-x2")
            .label(BLOCK, "b2")
            .label(RACK, "r1")
            .label(HOSTNAME, "x2")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r2-x4")
            .label(BLOCK, "b2")
            .label(RACK, "r2")
            .label(HOSTNAME, "x4")
            .alloc(&[("cpu", "2"), ("memory", "4Gi"), ("pods", "40")])
            .ready(),
    ]
}

fn scattered_nodes() -> Vec<Node> {
    vec![
        node("b1-r1-x3")
            .label(BLOCK, "b1")
            .label(RACK, "r1")
            .label(HOSTNAME, "x3")
            .alloc(&[("cpu", "4"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r1-x5")
            .label(BLOCK, "b1")
            .label(RACK, "r1")
            .label(HOSTNAME, "x5")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r1-x1")
            .label(BLOCK, "b1")
            .label(RACK, "r1")
            .label(HOSTNAME, "x1")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r1-x6")
            .label(BLOCK, "b2")
            .label(RACK, "r1")
            .label(HOSTNAME, "x6")
            .alloc(&[("cpu", "2"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r1-x2")
            .label(BLOCK, "b2")
            .label(RACK, "r1")
            .label(HOSTNAME, "x2")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
    ]
}

fn multipod_nodeset() -> Vec<Node> {
    vec![
        node("b1-r1-x3")
            .label(BLOCK, "b1")
            .label(RACK, "r1")
            .label(HOSTNAME, "x3")
            .alloc(&[("cpu", "10"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r2-x5")
            .label(BLOCK, "b1")
            .label(RACK, "r2")
            .label(HOSTNAME, "x5")
            .alloc(&[("cpu", "10"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r2-x1")
            .label(BLOCK, "b1")
            .label(RACK, "r2")
            .label(HOSTNAME, "x1")
            .alloc(&[("cpu", "10"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r2-x6")
            .label(BLOCK, "b1")
            .label(RACK, "r2")
            .label(HOSTNAME, "x6")
            .alloc(&[("cpu", "10"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r1-x2")
            .label(BLOCK, "b2")
            .label(RACK, "r1")
            .label(HOSTNAME, "x2")
            .alloc(&[("cpu", "10"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r2-x4")
            .label(BLOCK, "b2")
            .label(RACK, "r2")
            .label(HOSTNAME, "x4")
            .alloc(&[("cpu", "20"), ("memory", "4Gi"), ("pods", "40")])
            .ready(),
    ]
}

fn binary_trees_nodes() -> Vec<Node> {
    vec![
        node("b1-r1-x3")
            .label(BLOCK, "b1")
            .label(RACK, "r1")
            .label(HOSTNAME, "x3")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r1-x5")
            .label(BLOCK, "b1")
            .label(RACK, "r1")
            .label(HOSTNAME, "x5")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r2-x1")
            .label(BLOCK, "b1")
            .label(RACK, "r2")
            .label(HOSTNAME, "x1")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b1-r2-x6")
            .label(BLOCK, "b1")
            .label(RACK, "r2")
            .label(HOSTNAME, "x6")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r1-x2")
            .label(BLOCK, "b2")
            .label(RACK, "r1")
            .label(HOSTNAME, "x2")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r1-x4")
            .label(BLOCK, "b2")
            .label(RACK, "r1")
            .label(HOSTNAME, "x4")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r2-x7")
            .label(BLOCK, "b2")
            .label(RACK, "r2")
            .label(HOSTNAME, "x7")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
        node("b2-r2-x8")
            .label(BLOCK, "b2")
            .label(RACK, "r2")
            .label(HOSTNAME, "x8")
            .alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")])
            .ready(),
    ]
}

fn cases() -> Vec<Case> {
    vec![

        Case {
            name: "minimize the number of used racks before optimizing the number of nodes; BestFit",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b1-r2-x5").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x5").alloc(&[("cpu", "2"), ("pods", "20")]).ready(),
                node("b1-r3-x1").label(BLOCK, "b1").label(RACK, "r3").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r3-x6").label(BLOCK, "b1").label(RACK, "r3").label(HOSTNAME, "x6").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r3-x2").label(BLOCK, "b1").label(RACK, "r3").label(HOSTNAME, "x2").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r3-x4").label(BLOCK, "b1").label(RACK, "r3").label(HOSTNAME, "x4").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).requests(&[("cpu", "1000m")]).count(4).want(&[HOSTNAME], &[(&["x1"], 1), (&["x2"], 1), (&["x4"], 1), (&["x6"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "choose the node that can accommodate all Pods",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).requests(&[("cpu", "1000m")]).count(2).want(&[HOSTNAME], &[(&["x3"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "no annotation; implied default to unconstrained; 6 pods fit into hosts scattered across the whole datacenter even they could fit into single rack; BestFit",
            nodes: scattered_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().requests(&[("cpu", "1000m")]).count(6).want(&[HOSTNAME], &[(&["x1"], 1), (&["x3"], 1), (&["x5"], 1), (&["x2"], 1), (&["x6"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "unconstrained; 6 pods fit into hosts scattered across the whole datacenter even they could fit into single rack; BestFit",
            nodes: scattered_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().unconstrained().requests(&[("cpu", "1000m")]).count(6).want(&[HOSTNAME], &[(&["x1"], 1), (&["x3"], 1), (&["x5"], 1), (&["x2"], 1), (&["x6"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "unconstrained; a single pod fits into each host; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().unconstrained().requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x3"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "unconstrained; a single pod fits into each host; LeastFreeCapacity; TASProfileMixed",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().unconstrained().requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x3"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required; 4 pods fit into one host each; BestFit",
            nodes: binary_trees_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).requests(&[("cpu", "1000m")]).count(4).want(&[HOSTNAME], &[(&["x3"], 1), (&["x5"], 1), (&["x1"], 1), (&["x6"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "host required; single Pod fits in the host; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x3"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "host required; single Pod fits in the host; BestFit; TASProfileMixed",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x3"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "host preferred; single Pod fits in the host; BestFit; TASProfileMixed",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x3"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "rack required; single Pod fits in a rack; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(RACK).requests(&[("cpu", "1000m")]).count(1).want(&[BLOCK, RACK], &[(&["b1", "r1"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "rack required; multiple Pods fit in a rack; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(RACK).requests(&[("cpu", "1000m")]).count(3).want(&[BLOCK, RACK], &[(&["b1", "r2"], 3)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block preferred; Pods fit in 2 blocks; BestFit",
            nodes: vec![
                node("b1").label(BLOCK, "b1").alloc(&[("cpu", "2"), ("pods", "20")]).ready(),
                node("b2").label(BLOCK, "b2").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b3").label(BLOCK, "b3").alloc(&[("cpu", "4"), ("pods", "40")]).ready(),

],
            levels: &[BLOCK],
            pod_sets: vec![
                ps().topology().preferred(BLOCK).requests(&[("cpu", "1000m")]).count(5).want(&[BLOCK], &[(&["b2"], 1), (&["b3"], 4)]),
            ],
            ..Case::default()
        },
        Case {
            name: "rack required; multiple Pods fit in some racks; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(RACK).requests(&[("cpu", "1000m")]).count(2).want(&[BLOCK, RACK], &[(&["b2", "r2"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "rack required; too many pods to fit in any rack; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(RACK).requests(&[("cpu", "1000m")]).count(4).reason(r#"topology "default" allows to fit only 3 out of 4 pod(s)"#),
            ],
            ..Case::default()
        },
        Case {
            name: "block required; single Pod fits in a block and a single rack; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(BLOCK).requests(&[("cpu", "1000m")]).count(1).want(&[BLOCK, RACK], &[(&["b2", "r1"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required; single Pod fits in a block spread across two racks; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(BLOCK).requests(&[("cpu", "1000m")]).count(4).want(&[BLOCK, RACK], &[(&["b1", "r1"], 1), (&["b1", "r2"], 3)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required; Pods fit in a block spread across two racks; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(BLOCK).requests(&[("cpu", "1000m")]).count(4).want(&[BLOCK, RACK], &[(&["b1", "r1"], 1), (&["b1", "r2"], 3)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required; single Pod which cannot be split; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(BLOCK).requests(&[("cpu", "4000m")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 4; excluded: resource "cpu": 4"#),
            ],
            ..Case::default()
        },
        Case {
            name: "block required; too many Pods to fit requested; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(BLOCK).requests(&[("cpu", "1000m")]).count(5).reason(r#"topology "default" allows to fit only 4 out of 5 pod(s)"#),
            ],
            ..Case::default()
        },
        Case {
            name: "rack required; single Pod requiring memory; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().required(RACK).requests(&[("memory", "1024")]).count(4).want(&[BLOCK, RACK], &[(&["b1", "r1"], 4)]),
            ],
            ..Case::default()
        },
        Case {
            name: "rack preferred; but only block can accommodate the workload; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().preferred(RACK).requests(&[("cpu", "1000m")]).count(4).want(&[BLOCK, RACK], &[(&["b1", "r1"], 1), (&["b1", "r2"], 3)]),
            ],
            ..Case::default()
        },
        Case {
            name: "rack preferred; but only multiple blocks can accommodate the workload; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().preferred(RACK).requests(&[("cpu", "1000m")]).count(6).want(&[BLOCK, RACK], &[(&["b1", "r1"], 1), (&["b1", "r2"], 3), (&["b2", "r2"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block preferred; but only multiple blocks can accommodate the workload; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().preferred(BLOCK).requests(&[("cpu", "1000m")]).count(6).want(&[BLOCK, RACK], &[(&["b1", "r1"], 1), (&["b1", "r2"], 3), (&["b2", "r2"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block preferred; but the workload cannot be accommodate in entire topology; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().topology().preferred(BLOCK).requests(&[("cpu", "1000m")]).count(10).reason(r#"topology "default" allows to fit only 7 out of 10 pod(s)"#),
            ],
            ..Case::default()
        },
        Case {
            name: "only nodes with matching labels are considered; no matching node; BestFit",
            nodes: vec![
                node("b1-r1-x3").label("zone", "zone-a").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).reason("no topology domains at level: kubernetes.io/hostname"),
            ],
            node_labels: &[("zone", "zone-b")],
            ..Case::default()
        },
        Case {
            name: "only nodes with matching labels are considered; matching node is found; BestFit",
            nodes: vec![
                node("b1-r1-x3").label("zone", "zone-a").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x3"], 1)]),
            ],
            node_labels: &[("zone", "zone-a")],
            ..Case::default()
        },
        Case {
            name: "only nodes with matching levels are considered; no host label on node; BestFit",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(RACK).requests(&[("cpu", "1000m")]).count(1).reason("no topology domains at level: cloud.com/topology-rack"),
            ],
            ..Case::default()
        },
        Case {
            name: "don't consider unscheduled Pods when computing capacity; BestFit",
            nodes: vec![
                node("x3").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            pods: vec![pod().request("cpu", "600m")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "600m")]).count(1).want(&[HOSTNAME], &[(&["x3"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "don't consider terminal pods when computing the capacity; BestFit",
            nodes: vec![
                node("x3").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            pods: vec![pod().node_name("x3").request("cpu", "600m").phase("Failed"), pod().node_name("x3").request("cpu", "600m").phase("Succeeded")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "600m")]).count(1).want(&[HOSTNAME], &[(&["x3"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "include usage from pending scheduled non-TAS pods, blocked assignment; BestFit",
            nodes: vec![
                node("x3").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            pods: vec![pod().node_name("x3").phase("Pending").request("cpu", "600m")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "600m")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "include usage from running non-TAS pods, blocked assignment; BestFit",
            nodes: vec![
                node("x3").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            pods: vec![pod().node_name("x3").phase("Running").request("cpu", "600m")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "600m")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "node allocatable capacity completely used by non-TAS pod; empty remainingCapacity",
            nodes: vec![
                node("x3").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("pods", "1")]).ready(),

],
            pods: vec![pod().node_name("x3").phase("Running").request("cpu", "1")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "100m")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "include usage from non-TAS pods; pod usage",
            nodes: vec![
                node("x3").label(HOSTNAME, "x3").alloc(&[("pods", "10")]).ready(),

],
            pods: vec![pod().node_name("x3").phase("Running"), pod().node_name("x3").phase("Running")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "0m")]).count(9).reason(r#"topology "default" allows to fit only 8 out of 9 pod(s)"#),
            ],
            ..Case::default()
        },
        Case {
            name: "include usage from running non-TAS pods, found free capacity on another node; BestFit",
            nodes: vec![
                node("x3").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),
                node("x5").label(HOSTNAME, "x5").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            pods: vec![pod().node_name("x3").request("cpu", "600m")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "600m")]).count(1).want(&[HOSTNAME], &[(&["x5"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "no assignment as node is not ready; BestFit",
            nodes: vec![
                node("b1-r1-x3").label("zone", "zone-a").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).not_ready(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).reason("no topology domains at level: kubernetes.io/hostname"),
            ],
            node_labels: &[("zone", "zone-a")],
            ..Case::default()
        },
        Case {
            name: "no assignment as node is unschedulable; BestFit",
            nodes: vec![
                node("b1-r1-x3").label("zone", "zone-a").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready().unschedulable(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).reason("no topology domains at level: kubernetes.io/hostname"),
            ],
            node_labels: &[("zone", "zone-a")],
            ..Case::default()
        },
        Case {
            name: "skip node which has untolerated taint; BestFit",
            nodes: vec![
                node("x3").label("zone", "zone-a").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready().taint(taint("example.com/gpu", "present", NoSchedule)),

],
            node_labels: &[("zone", "zone-a")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: taint "example.com/gpu=present:NoSchedule": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "detailed failure message with exclusion stats",
            nodes: vec![
                node("x1").label(HOSTNAME, "x1").taint(taint("key", "value", NoSchedule)).alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("x2").label(HOSTNAME, "x2").label("zone", "zone-b").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("x3").label(HOSTNAME, "x3").label("zone", "zone-b").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("x4").label(HOSTNAME, "x4").label("zone", "zone-a").alloc(&[("cpu", "100m"), ("pods", "10")]).ready(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).node_selector(&[("zone", "zone-a")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 4; excluded: nodeSelector: 2, resource "cpu": 1, taint "key=value:NoSchedule": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "resource exclusion picks most restrictive resource",
            nodes: vec![
                node("dual-shortage").label(HOSTNAME, "dual-shortage").alloc(&[("cpu", "500m"), ("pods", "10"), ("example.com/gpu", "0")]).ready(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m"), ("example.com/gpu", "1")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "allow to schedule on node with tolerated taint; BestFit",
            nodes: vec![
                node("b1-r1-x3").label("zone", "zone-a").label(HOSTNAME, "x3").taint(taint("example.com/gpu", "present", NoSchedule)).alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x3"], 1)]).toleration(toleration("example.com/gpu", TolerationOperator::Equal, "present", None)),
            ],
            node_labels: &[("zone", "zone-a")],
            ..Case::default()
        },
        Case {
            name: "no assignment as node does not have enough allocatable pods (.status.allocatable['pods']); BestFit",
            nodes: vec![
                node("b1-r1-x3").label("zone", "zone-a").label(HOSTNAME, "x3").alloc(&[("cpu", "1000m"), ("pods", "1")]).ready(),

],
            pods: vec![pod().node_name("b1-r1-x3").phase("Running").request("cpu", "300m")],
            node_labels: &[("zone", "zone-a")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "300m")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "pods": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "multiple PodSets account assumed pod usage against allocatable pods; BestFit",
            nodes: vec![
                node("x1").label(HOSTNAME, "x1").alloc(&[("cpu", "2"), ("pods", "1")]).ready(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().name("one").topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x1"], 1)]),
                ps().name("two").topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "pods": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "skip node which doesn't match node selector, missing label; BestFit",
            nodes: vec![
                node("x3").label("zone", "zone-a").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            node_labels: &[("zone", "zone-a")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "300m")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: nodeSelector: 1"#).node_selector(&[("custom-label-1", "custom-value-1")]),
            ],
            ..Case::default()
        },
        Case {
            name: "skip node which doesn't match node selector, label exists, value doesn't match; BestFit",
            nodes: vec![
                node("x3").label("zone", "zone-a").label(HOSTNAME, "x3").label("custom-label-1", "value-1").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            levels: &[HOSTNAME],
            node_labels: &[("zone", "zone-a")],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "300m")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: nodeSelector: 1"#).node_selector(&[("custom-label-1", "value-2")]),
            ],
            ..Case::default()
        },
        Case {
            name: "allow to schedule on node which matches node; BestFit",
            nodes: vec![
                node("b1-r1-x3").label("zone", "zone-a").label(HOSTNAME, "x3").label("custom-label-1", "value-1").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),
                node("b1-r1-x5").label("zone", "zone-a").label(HOSTNAME, "x5").label("custom-label-1", "value-2").alloc(&[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")]).ready(),

],
            node_labels: &[("zone", "zone-a")],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x5"], 1)]).node_selector(&[("custom-label-1", "value-2")]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required for podset; host required for slices; BestFit",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(HOSTNAME).slice_size(2).requests(&[("cpu", "1000m")]).count(6).want(&[HOSTNAME], &[(&["x1"], 2), (&["x3"], 2), (&["x5"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required for podset; host required for slices; prioritize more free slice capacity first and then tight fit; BestFit",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "6"), ("pods", "10")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "5"), ("pods", "10")]).ready(),
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("b1-r1-x6").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x6").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(HOSTNAME).slice_size(2).requests(&[("cpu", "1000m")]).count(12).want(&[HOSTNAME], &[(&["x1"], 4), (&["x3"], 6), (&["x6"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required for podset; host required for slices; select domains with tight fit; BestFit",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(HOSTNAME).slice_size(2).requests(&[("cpu", "1000m")]).count(4).want(&[HOSTNAME], &[(&["x1"], 2), (&["x5"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required for podset; rack required for slices; BestFit",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r2-x1").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r2-x6").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x6").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r2-x2").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x2").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b2-r1-x4").label(BLOCK, "b2").label(RACK, "r1").label(HOSTNAME, "x4").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b2-r1-x7").label(BLOCK, "b2").label(RACK, "r1").label(HOSTNAME, "x7").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(RACK).slice_size(2).requests(&[("cpu", "1000m")]).count(4).want(&[HOSTNAME], &[(&["x3"], 1), (&["x5"], 1), (&["x1"], 1), (&["x2"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block preferred for podset; rack required for slices; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().preferred(BLOCK).slice_required(RACK).slice_size(2).requests(&[("cpu", "1000m")]).count(4).want(&[HOSTNAME], &[(&["x1"], 1), (&["x5"], 1), (&["x4"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required for podset; host required for slices; optimize last domain; BestFit",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(HOSTNAME).slice_size(2).requests(&[("cpu", "1000m")]).count(6).want(&[HOSTNAME], &[(&["x1"], 2), (&["x3"], 4)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block preferred for podset; host required for slices; 2 blocks with unbalanced subdomains; BestFit",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b2-r1-x6").label(BLOCK, "b2").label(RACK, "r1").label(HOSTNAME, "x6").alloc(&[("cpu", "6"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().preferred(BLOCK).slice_required(HOSTNAME).slice_size(3).requests(&[("cpu", "1000m")]).count(12).want(&[HOSTNAME], &[(&["x1"], 3), (&["x3"], 3), (&["x6"], 6)]),
            ],
            ..Case::default()
        },
        Case {
            name: "block required for podset; rack required for slices; podset fits in a block, but slices do not fit in racks",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b1-r2-x5").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x5").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b1-r3-x1").label(BLOCK, "b1").label(RACK, "r3").label(HOSTNAME, "x1").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(RACK).slice_size(3).requests(&[("cpu", "1000m")]).count(6).reason(r#"topology "default" doesn't allow to fit any of 2 slice(s)"#),
            ],
            ..Case::default()
        },
        Case {
            name: "block required for podset; rack required for slices; only 1 out of 2 slices fit the topology",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r2-x5").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x5").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r3-x1").label(BLOCK, "b1").label(RACK, "r3").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r4-x6").label(BLOCK, "b1").label(RACK, "r4").label(HOSTNAME, "x6").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(RACK).slice_size(3).requests(&[("cpu", "1000m")]).count(6).reason(r#"topology "default" allows to fit only 1 out of 2 slice(s)"#),
            ],
            ..Case::default()
        },
        Case {
            name: "block required for podset; rack required for slices; podset fits in both blocks, but slices fit in only one block",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b1-r2-x5").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x5").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b1-r3-x1").label(BLOCK, "b1").label(RACK, "r3").label(HOSTNAME, "x1").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b2-r4-x6").label(BLOCK, "b2").label(RACK, "r4").label(HOSTNAME, "x6").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b2-r5-x2").label(BLOCK, "b2").label(RACK, "r5").label(HOSTNAME, "x2").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(RACK).slice_size(3).requests(&[("cpu", "1000m")]).count(6).want(&[HOSTNAME], &[(&["x6"], 3), (&["x2"], 3)]),
            ],
            ..Case::default()
        },
        Case {
            name: "slice required topology level cannot be above the main required topology level",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).slice_required(BLOCK).slice_size(1).requests(&[("cpu", "1000m")]).count(1).reason("podset slice topology cloud.com/topology-block is above the podset topology kubernetes.io/hostname"),
            ],
            ..Case::default()
        },
        Case {
            name: "slice size is required when slice topology is requested",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).reason("slice topology requested, but slice size not provided"),
            ],
            ..Case::default()
        },
        Case {
            name: "cannot request not existing slice topology",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required("not-existing-topology-level").slice_size(1).requests(&[("cpu", "1000m")]).count(1).reason("no requested topology level for slices: not-existing-topology-level"),
            ],
            ..Case::default()
        },
        Case {
            name: "no topology for podset; host required for slices; BestFit",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().slice_required(HOSTNAME).slice_size(2).requests(&[("cpu", "1000m")]).count(6).want(&[HOSTNAME], &[(&["x1"], 2), (&["x3"], 2), (&["x5"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "no topology for podset; host required for slices; multiple blocks; BestFit",
            nodes: scattered_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().slice_required(HOSTNAME).slice_size(2).requests(&[("cpu", "1000m")]).count(6).want(&[HOSTNAME], &[(&["x3"], 4), (&["x6"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "no topology for podset; rack required for slices; multiple blocks; BestFit",
            nodes: default_nodes(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().slice_required(RACK).slice_size(2).requests(&[("cpu", "1000m")]).count(4).want(&[HOSTNAME], &[(&["x1"], 1), (&["x5"], 1), (&["x4"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for two podsets with overlapping domain",
            nodes: vec![
                node("b1").label(BLOCK, "b1").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b2").label(BLOCK, "b2").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("b3").label(BLOCK, "b3").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK],
            pod_sets: vec![
                ps().name("podset1").topology().preferred(BLOCK).requests(&[("cpu", "1000m")]).count(3).want(&[BLOCK], &[(&["b1"], 2), (&["b2"], 1)]),
                ps().name("podset2").topology().preferred(BLOCK).requests(&[("cpu", "1000m")]).count(3).want(&[BLOCK], &[(&["b2"], 1), (&["b3"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for two podsets with the same group",
            nodes: vec![
                node("b1").label(BLOCK, "b1").alloc(&[("cpu", "2"), ("example.com/gpu", "2"), ("memory", "2Gi"), ("pods", "10")]).ready(),
                node("b2").label(BLOCK, "b2").alloc(&[("cpu", "5"), ("example.com/gpu", "4"), ("pods", "10")]).ready(),
                node("b3").label(BLOCK, "b3").alloc(&[("cpu", "2"), ("example.com/gpu", "2"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK],
            pod_sets: vec![
                ps().name("leader").topology().required(BLOCK).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[BLOCK], &[(&["b2"], 1)]),
                ps().name("workers").topology().required(BLOCK).requests(&[("cpu", "1000m"), ("example.com/gpu", "1")]).group("sameGroup").count(4).want(&[BLOCK], &[(&["b2"], 4)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for grouped podsets preserves worker capacity when placing leader",
            nodes: vec![
                node("h1").label(RACK, "r1").label(HOSTNAME, "h1").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("h2").label(RACK, "r1").label(HOSTNAME, "h2").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("h3").label(RACK, "r1").label(HOSTNAME, "h3").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),

],
            levels: &[RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().required(RACK).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["h3"], 1)]),
                ps().name("workers").topology().required(RACK).requests(&[("cpu", "2000m")]).group("sameGroup").count(4).want(&[HOSTNAME], &[(&["h1"], 1), (&["h2"], 2), (&["h3"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for sliced grouped podsets preserves worker capacity when placing leader",
            nodes: vec![
                node("h1").label(RACK, "r1").label(HOSTNAME, "h1").alloc(&[("cpu", "2"), ("pods", "10")]).ready(),
                node("h2").label(RACK, "r1").label(HOSTNAME, "h2").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("h3").label(RACK, "r1").label(HOSTNAME, "h3").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),

],
            levels: &[RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().required(RACK).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["h3"], 1)]),
                ps().name("workers").topology().required(RACK).slice_required(HOSTNAME).slice_size(2).requests(&[("cpu", "1000m")]).group("sameGroup").count(8).want(&[HOSTNAME], &[(&["h1"], 2), (&["h2"], 4), (&["h3"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for preferred grouped podsets preserves capacity across domains",
            nodes: vec![
                node("h1").label(HOSTNAME, "h1").alloc(&[("cpu", "8"), ("pods", "10")]).ready(),
                node("h2").label(HOSTNAME, "h2").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().preferred(HOSTNAME).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["h2"], 1)]),
                ps().name("workers").topology().preferred(HOSTNAME).requests(&[("cpu", "2000m")]).group("sameGroup").count(5).want(&[HOSTNAME], &[(&["h1"], 4), (&["h2"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for unconstrained grouped podsets spreads leader and worker across domains with TASProfileMixed",
            nodes: vec![
                node("h1").label(HOSTNAME, "h1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("h2").label(HOSTNAME, "h2").alloc(&[("example.com/gpu", "1"), ("pods", "10")]).ready(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().unconstrained().requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["h1"], 1)]),
                ps().name("workers").topology().unconstrained().requests(&[("example.com/gpu", "1")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["h2"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for grouped podsets preserves leader below the slice level",
            nodes: vec![
                node("leader-host").label(RACK, "r1").label(HOSTNAME, "leader-host").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("worker-host").label(RACK, "r1").label(HOSTNAME, "worker-host").alloc(&[("example.com/gpu", "1"), ("pods", "10")]).ready(),

],
            levels: &[RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().required(RACK).slice_required(RACK).slice_size(1).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["leader-host"], 1)]),
                ps().name("workers").topology().required(RACK).slice_required(RACK).slice_size(1).requests(&[("example.com/gpu", "1")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["worker-host"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for two podsets with the same group with domains that can tightly fit leader and workers",
            nodes: vec![
                node("b1").label(BLOCK, "b1").alloc(&[("cpu", "2"), ("example.com/gpu", "2"), ("pods", "10")]).ready(),
                node("b2").label(BLOCK, "b2").alloc(&[("cpu", "8"), ("example.com/gpu", "8"), ("pods", "10")]).ready(),
                node("b3").label(BLOCK, "b3").alloc(&[("cpu", "2"), ("example.com/gpu", "2"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK],
            pod_sets: vec![
                ps().name("leader").topology().required(BLOCK).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[BLOCK], &[(&["b2"], 1)]),
                ps().name("workers").topology().required(BLOCK).requests(&[("cpu", "1000m"), ("example.com/gpu", "2")]).group("sameGroup").count(4).want(&[BLOCK], &[(&["b2"], 4)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for grouped podsets skips domain where only workers fit without leader",
            nodes: vec![
                node("small-used").label(BLOCK, "b1").label(RACK, "small").label(HOSTNAME, "small-used").alloc(&[("cpu", "2800m"), ("pods", "10")]).ready(),
                node("small-free").label(BLOCK, "b1").label(RACK, "small").label(HOSTNAME, "small-free").alloc(&[("cpu", "2800m"), ("pods", "10")]).ready(),
                node("large-free").label(BLOCK, "b1").label(RACK, "large").label(HOSTNAME, "large-free").alloc(&[("cpu", "6"), ("pods", "10")]).ready(),

],
            pods: vec![pod().node_name("small-used").phase("Running").request("cpu", "2500m")],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().required(RACK).requests(&[("cpu", "2500m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["large-free"], 1)]),
                ps().name("workers").topology().required(RACK).requests(&[("cpu", "2500m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["large-free"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for grouped podsets skips domain where mixed-size workers only fit without leader",
            nodes: vec![
                node("small-used").label(BLOCK, "b1").label(RACK, "small").label(HOSTNAME, "small-used").alloc(&[("cpu", "2800m"), ("pods", "10")]).ready(),
                node("small-free").label(BLOCK, "b1").label(RACK, "small").label(HOSTNAME, "small-free").alloc(&[("cpu", "2800m"), ("pods", "10")]).ready(),
                node("large-free").label(BLOCK, "b1").label(RACK, "large").label(HOSTNAME, "large-free").alloc(&[("cpu", "6"), ("pods", "10")]).ready(),

],
            pods: vec![pod().node_name("small-used").phase("Running").request("cpu", "2500m")],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().required(RACK).requests(&[("cpu", "2500m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["large-free"], 1)]),
                ps().name("workers").topology().required(RACK).requests(&[("cpu", "500m")]).group("sameGroup").count(2).want(&[HOSTNAME], &[(&["large-free"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for grouped podsets keeps tight domain when leader and workers fit together",
            nodes: vec![
                node("small-used").label(BLOCK, "b1").label(RACK, "small").label(HOSTNAME, "small-used").alloc(&[("cpu", "2800m"), ("pods", "10")]).ready(),
                node("small-free").label(BLOCK, "b1").label(RACK, "small").label(HOSTNAME, "small-free").alloc(&[("cpu", "2800m"), ("pods", "10")]).ready(),
                node("large-free").label(BLOCK, "b1").label(RACK, "large").label(HOSTNAME, "large-free").alloc(&[("cpu", "6"), ("pods", "10")]).ready(),

],
            pods: vec![pod().node_name("small-used").phase("Running").request("cpu", "2500m")],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().required(RACK).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["small-free"], 1)]),
                ps().name("workers").topology().required(RACK).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["small-free"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for two podsets with the same group - no fit",
            nodes: vec![
                node("b1").label(BLOCK, "b1").alloc(&[("cpu", "1"), ("example.com/gpu", "0"), ("pods", "10")]).ready(),
                node("b2").label(BLOCK, "b2").alloc(&[("cpu", "4"), ("example.com/gpu", "4"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK],
            pod_sets: vec![
                ps().name("leader").topology().required(BLOCK).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).reason(r#"topology "default" allows to fit only 4 out of 4 pod(s). Total nodes: 2; excluded: resource "example.com/gpu": 1"#),
                ps().name("workers").topology().required(BLOCK).requests(&[("cpu", "1000m"), ("example.com/gpu", "1")]).group("sameGroup").count(4).reason(r#"topology "default" allows to fit only 4 out of 4 pod(s). Total nodes: 2; excluded: resource "example.com/gpu": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for two podsets with the same group - optimizes domain for both leader and workers",
            nodes: vec![
                node("b1").label(BLOCK, "b1").alloc(&[("cpu", "11"), ("example.com/gpu", "8"), ("pods", "10")]).ready(),
                node("b2").label(BLOCK, "b2").alloc(&[("cpu", "4"), ("example.com/gpu", "4"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK],
            pod_sets: vec![
                ps().name("leader").topology().required(BLOCK).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[BLOCK], &[(&["b1"], 1)]),
                ps().name("workers").topology().required(BLOCK).requests(&[("cpu", "1000m"), ("example.com/gpu", "1")]).group("sameGroup").count(4).want(&[BLOCK], &[(&["b1"], 4)]),
            ],
            ..Case::default()
        },
        Case {
            name: "BestFit: podset group workers spread across hosts",
            nodes: vec![
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "20"), ("example.com/gpu", "4"), ("pods", "10")]).ready(),
                node("b1-r1-x2").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x2").alloc(&[("cpu", "20"), ("example.com/gpu", "2"), ("pods", "10")]).ready(),
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "20"), ("example.com/gpu", "2"), ("pods", "10")]).ready(),
                node("b1-r1-x4").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x4").alloc(&[("cpu", "20"), ("example.com/gpu", "2"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().preferred(BLOCK).requests(&[("cpu", "1000m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["x1"], 1)]),
                ps().name("workers").topology().preferred(BLOCK).slice_size(2).slice_required(HOSTNAME).requests(&[("cpu", "1000m"), ("example.com/gpu", "1")]).group("sameGroup").count(6).want(&[HOSTNAME], &[(&["x1"], 4), (&["x2"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for two podsets with the same group - leader does not fit anywhere",
            nodes: vec![
                node("b1").label(BLOCK, "b1").alloc(&[("cpu", "4"), ("example.com/gpu", "4"), ("pods", "10")]).ready(),
                node("b2").label(BLOCK, "b2").alloc(&[("cpu", "4"), ("example.com/gpu", "4"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK],
            pod_sets: vec![
                ps().name("leader").topology().required(BLOCK).requests(&[("cpu", "10000m")]).group("sameGroup").count(1).reason(r#"topology "default" allows to fit only 4 out of 4 pod(s)"#),
                ps().name("workers").topology().required(BLOCK).requests(&[("cpu", "1000m"), ("example.com/gpu", "1")]).group("sameGroup").count(4).reason(r#"topology "default" allows to fit only 4 out of 4 pod(s)"#),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for two podsets with the same group - multiple hosts",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "2"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "2"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "2"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b2-r4-x6").label(BLOCK, "b2").label(RACK, "r4").label(HOSTNAME, "x6").alloc(&[("cpu", "1"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b2-r5-x2").label(BLOCK, "b2").label(RACK, "r5").label(HOSTNAME, "x2").alloc(&[("cpu", "2"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b2-r6-x4").label(BLOCK, "b2").label(RACK, "r6").label(HOSTNAME, "x4").alloc(&[("cpu", "2"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().required(BLOCK).requests(&[("cpu", "2000m")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["x1"], 1)]),
                ps().name("workers").topology().required(BLOCK).requests(&[("cpu", "1000m"), ("example.com/gpu", "1")]).group("sameGroup").count(2).want(&[HOSTNAME], &[(&["x3"], 1), (&["x5"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "find topology assignment for two podsets with the same group requesting same resources and nodes in the same rack",
            nodes: vec![
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "1"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b1-r1-x5").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x5").alloc(&[("cpu", "1"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b1-r2-x1").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b1-r2-x6").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x6").alloc(&[("cpu", "1"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b2-r3-x2").label(BLOCK, "b2").label(RACK, "r3").label(HOSTNAME, "x2").alloc(&[("cpu", "1"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b2-r3-x4").label(BLOCK, "b2").label(RACK, "r3").label(HOSTNAME, "x4").alloc(&[("cpu", "1"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b2-r4-x7").label(BLOCK, "b2").label(RACK, "r4").label(HOSTNAME, "x7").alloc(&[("cpu", "1"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),
                node("b2-r4-x8").label(BLOCK, "b2").label(RACK, "r4").label(HOSTNAME, "x8").alloc(&[("cpu", "1"), ("pods", "10"), ("example.com/gpu", "1")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("leader").topology().required(BLOCK).requests(&[("cpu", "1000m"), ("example.com/gpu", "1")]).group("sameGroup").count(1).want(&[HOSTNAME], &[(&["x3"], 1)]),
                ps().name("workers").topology().required(BLOCK).requests(&[("cpu", "1000m"), ("example.com/gpu", "1")]).group("sameGroup").count(2).want(&[HOSTNAME], &[(&["x5"], 1), (&["x1"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "multiple podsets: rack required for both, different resource requests; BestFit",
            nodes: multipod_nodeset(),
            levels: &[BLOCK, RACK],
            pod_sets: vec![
                ps().name("podset1").topology().required(RACK).requests(&[("cpu", "1000m")]).count(2).want(&[BLOCK, RACK], &[(&["b1", "r1"], 2)]),
                ps().name("podset2").topology().required(RACK).requests(&[("memory", "1024")]).count(1).want(&[BLOCK, RACK], &[(&["b1", "r1"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "multiple podsets: block required for one, unconstrained for another; TASProfileMixed",
            nodes: multipod_nodeset(),
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().name("podset1").topology().required(BLOCK).requests(&[("cpu", "1000m")]).count(8).want(&[HOSTNAME], &[(&["x2"], 8)]),
                ps().name("podset2").topology().unconstrained().requests(&[("cpu", "1000m")]).count(2).want(&[HOSTNAME], &[(&["x2"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "temporary state cleanup prevents leakage across PodSets",
            nodes: vec![
                node("n1").label(HOSTNAME, "x1").alloc(&[("cpu", "4"), ("memory", "4Gi"), ("pods", "10")]).ready(),
                node("n2").label(HOSTNAME, "x2").alloc(&[("cpu", "4"), ("memory", "4Gi"), ("pods", "10")]).ready(),

],
            levels: &[HOSTNAME],
            pod_sets: vec![
                ps().name("ps1").requests(&[("cpu", "1000m"), ("memory", "1000")]).count(1).want(&[HOSTNAME], &[(&["x1"], 1)]),
                ps().name("ps2").node_selector(&[("never", "match")]).requests(&[("cpu", "1000m"), ("memory", "1000")]).count(1).reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 2; excluded: nodeSelector: 2"#),
            ],
            ..Case::default()
        },
        Case {
            name: "multi-layer topology: block required; rack slices of 4; host slices of 2; TASMultiLayerTopology",
            nodes: vec![
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r1-x2").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x2").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("b1-r2-x3").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x3").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r2-x4").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x4").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).layer(RACK, 4).layer(HOSTNAME, 2).requests(&[("cpu", "1000m")]).count(8).want(&[HOSTNAME], &[(&["x2"], 4), (&["x3"], 2), (&["x4"], 2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "multi-layer topology: no feature gate; additional layers ignored",
            nodes: vec![
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r1-x2").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x2").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("b1-r2-x3").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x3").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r2-x4").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x4").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).slice_required(RACK).slice_size(4).requests(&[("cpu", "1000m")]).count(8).want(&[HOSTNAME], &[(&["x1"], 1), (&["x2"], 3), (&["x3"], 3), (&["x4"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "multi-layer topology: host slice rounding makes rack slice impossible",
            nodes: vec![
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x2").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x2").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),
                node("b1-r1-x3").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x3").alloc(&[("cpu", "0"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).layer(RACK, 6).layer(HOSTNAME, 2).requests(&[("cpu", "1000m")]).count(6).reason(r#"topology "default" doesn't allow to fit; 0/1 slice(s) fit on level cloud.com/topology-rack; 2/3 slice(s) fit on level kubernetes.io/hostname. Total nodes: 3; excluded: resource "cpu": 1"#),
            ],
            ..Case::default()
        },
        Case {
            name: "multi-layer topology: small host kills rack slices despite enough total capacity",
            nodes: vec![
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "7"), ("pods", "10")]).ready(),
                node("b1-r1-x2").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x2").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("b1-r2-x3").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x3").alloc(&[("cpu", "7"), ("pods", "10")]).ready(),
                node("b1-r2-x4").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x4").alloc(&[("cpu", "3"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).layer(RACK, 8).layer(HOSTNAME, 4).requests(&[("cpu", "1000m")]).count(16).reason(r#"topology "default" doesn't allow to fit; 1/2 slice(s) fit on level cloud.com/topology-rack; 3/4 slice(s) fit on level kubernetes.io/hostname"#),
            ],
            ..Case::default()
        },
        Case {
            name: "multi-layer topology: enough hostname slices but not enough rack slices",
            nodes: vec![
                node("b1-r1-x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("b1-r2-x2").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x2").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("b1-r3-x3").label(BLOCK, "b1").label(RACK, "r3").label(HOSTNAME, "x3").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(BLOCK).layer(RACK, 6).layer(HOSTNAME, 2).requests(&[("cpu", "1000m")]).count(12).reason(r#"topology "default" doesn't allow to fit; 0/2 slice(s) fit on level cloud.com/topology-rack; 6/6 slice(s) fit on level kubernetes.io/hostname"#),
            ],
            ..Case::default()
        },
        Case {
            name: "multi-layer topology: 3-layer negative case with small hosts cascading up",
            nodes: vec![
                node("dc1-b1-r1-x1").label(DATACENTER, "dc1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("dc1-b1-r1-x2").label(DATACENTER, "dc1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x2").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("dc1-b1-r2-x3").label(DATACENTER, "dc1").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x3").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("dc1-b1-r2-x4").label(DATACENTER, "dc1").label(BLOCK, "b1").label(RACK, "r2").label(HOSTNAME, "x4").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("dc1-b2-r3-x5").label(DATACENTER, "dc1").label(BLOCK, "b2").label(RACK, "r3").label(HOSTNAME, "x5").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("dc1-b2-r3-x6").label(DATACENTER, "dc1").label(BLOCK, "b2").label(RACK, "r3").label(HOSTNAME, "x6").alloc(&[("cpu", "4"), ("pods", "10")]).ready(),
                node("dc1-b2-r4-x7").label(DATACENTER, "dc1").label(BLOCK, "b2").label(RACK, "r4").label(HOSTNAME, "x7").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("dc1-b2-r4-x8").label(DATACENTER, "dc1").label(BLOCK, "b2").label(RACK, "r4").label(HOSTNAME, "x8").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),

],
            levels: &[DATACENTER, BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(DATACENTER).layer(BLOCK, 12).layer(RACK, 6).layer(HOSTNAME, 3).requests(&[("cpu", "1000m")]).count(24).reason(r#"topology "default" doesn't allow to fit; 1/2 slice(s) fit on level cloud.com/topology-block; 3/4 slice(s) fit on level cloud.com/topology-rack; 6/8 slice(s) fit on level kubernetes.io/hostname"#),
            ],
            ..Case::default()
        },
        Case {
            name: "optimize the last domain for LWS using BestFit",
            levels: &["cloud.com/topology-zone", "cloud.com/topology-rack", HOSTNAME],
            nodes: vec![
                node("dom1-node").label("cloud.com/topology-zone", "dom1").label("cloud.com/topology-rack", "rack1").label(HOSTNAME, "dom1-node").alloc(&[("cpu", "10"), ("memory", "10Gi"), ("pods", "10")]).ready(),
                node("dom2-node").label("cloud.com/topology-zone", "dom2").label("cloud.com/topology-rack", "rack2").label(HOSTNAME, "dom2-node").alloc(&[("cpu", "6"), ("memory", "10Gi"), ("pods", "10")]).ready(),

],
            pod_sets: vec![
                ps().name("leader").topology().required("cloud.com/topology-zone").slice_required("cloud.com/topology-rack").slice_size(1).requests(&[("cpu", "1000m"), ("memory", "1073741824")]).group("lws").count(1).want(&[HOSTNAME], &[(&["dom2-node"], 1)]),
                ps().name("workers").topology().required("cloud.com/topology-zone").slice_required("cloud.com/topology-rack").slice_size(1).requests(&[("cpu", "1000m"), ("memory", "1073741824")]).group("lws").count(5).want(&[HOSTNAME], &[(&["dom2-node"], 5)]),
            ],
            ..Case::default()
        },
        Case {
            name: "sibling-flavor usage on the shared hostname reduces remaining capacity",
            levels: &[BLOCK, HOSTNAME],
            nodes: vec![
                node("b1-x1").label(BLOCK, "b1").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-x2").label(BLOCK, "b1").label(HOSTNAME, "x2").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),

],
            node_labels: &[],
            prior_flavor: &[(&["x1"], &[("cpu", "1000m")], 1)],
            pod_sets: vec![
                ps().name("main").topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x2"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "non-hostname-leaf topology: nil aggregatedDomainUsages preserves per-flavor behavior",
            levels: &[BLOCK, RACK],
            nodes: default_nodes(),
            node_labels: &[],
            pod_sets: vec![
                ps().name("main").topology().required(RACK).requests(&[("cpu", "1000m")]).count(1).want(&[BLOCK, RACK], &[(&["b1", "r1"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "non-hostname-leaf topology: prior c.usage must be applied even when aggregatedDomainUsages is non-nil empty",
            levels: &[BLOCK, RACK],
            nodes: vec![
                node("b1-r1").label(BLOCK, "b1").label(RACK, "r1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b1-r2").label(BLOCK, "b1").label(RACK, "r2").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b2-r1").label(BLOCK, "b2").label(RACK, "r1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("b2-r2").label(BLOCK, "b2").label(RACK, "r2").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),

],
            node_labels: &[],
            prior_own: &[(&["b1", "r1"], &[("cpu", "1000m")], 1), (&["b1", "r2"], &[("cpu", "1000m")], 1)],
            pod_sets: vec![
                ps().name("main").topology().required(RACK).requests(&[("cpu", "1000m")]).count(1).want(&[BLOCK, RACK], &[(&["b2", "r1"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "stable tie break on identical nodes: TASBalancedPlacement disabled",
            nodes: vec![
                node("x2").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x2").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x1"], 1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "stable tie break on identical nodes: reversed order, TASBalancedPlacement disabled",
            nodes: vec![
                node("x1").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x1").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),
                node("x2").label(BLOCK, "b1").label(RACK, "r1").label(HOSTNAME, "x2").alloc(&[("cpu", "1"), ("pods", "10")]).ready(),

],
            levels: &[BLOCK, RACK, HOSTNAME],
            pod_sets: vec![
                ps().topology().required(HOSTNAME).requests(&[("cpu", "1000m")]).count(1).want(&[HOSTNAME], &[(&["x1"], 1)]),
            ],
            ..Case::default()
        },

    ]
}

/// A replacement case: one admitted pod set `main` whose assignment names
/// `unhealthy`, placed again with Kueue's `findReplacementAssignment`.
struct ReplacementCase {
    /// Upstream's case name, verbatim.
    name: &'static str,
    levels: &'static [&'static str],
    nodes: Vec<Node>,
    /// Sibling-flavor usage on the same hostnames.
    prior_flavor: &'static [Usage],
    /// The Workload's ownerReferences (apiVersion, kind) and its
    /// `is-group-workload` annotation.
    owners: &'static [(&'static str, &'static str)],
    group_annotation: Option<&'static str>,
    /// `SkipReassignmentForPodOwnedWorkloads`: on by default in v0.19.2
    /// and always on in batchgate; one upstream case turns it off.
    skip_gate: bool,
    existing: &'static [(&'static str, i64)],
    unhealthy: &'static str,
    /// The request; its `want` is the whole new assignment or the reason.
    pod_set: Ps,
}

impl ReplacementCase {
    fn check(&self) -> Option<String> {
        let topology = FlavorTopology {
            name: "default".to_string(),
            levels: self.levels.iter().map(|l| l.to_string()).collect(),
            ..FlavorTopology::default()
        };
        let snapshot = Snapshot::new(&topology, &self.nodes);
        let existing = Assignment {
            levels: vec![HOSTNAME.to_string()],
            domains: self
                .existing
                .iter()
                .map(|(n, c)| Domain {
                    values: vec![n.to_string()],
                    count: *c,
                })
                .collect(),
        };
        let replacement = Replacement {
            pod_set: &self.pod_set.request,
            existing: &existing,
            unhealthy_node: self.unhealthy,
            single_pod_owned: self.skip_gate
                && owned_by_single_pod(self.owners, self.group_annotation),
        };
        let got = replace(&snapshot, replacement, &usage_by_leaf(self.prior_flavor))
            .map(|r| r.assignment);
        let Some(want) = &self.pod_set.want else {
            return Some(format!("{}: no expectation transcribed", self.name));
        };
        (&got != want).then(|| format!("{}\n  want: {want:?}\n  got:  {got:?}", self.name))
    }
}

fn two_hosts_x1_not_ready() -> Vec<Node> {
    vec![
        node("x1")
            .label(HOSTNAME, "x1")
            .alloc(&[("cpu", "1"), ("pods", "10")])
            .not_ready(),
        node("x2")
            .label(HOSTNAME, "x2")
            .alloc(&[("cpu", "1"), ("pods", "10")])
            .ready(),
    ]
}

fn one_pod_on_a_host() -> Ps {
    ps().name("main")
        .required(HOSTNAME)
        .requests(&[("cpu", "1000m")])
        .count(1)
}

const SWITCH: &str = "cloud.com/topology-switch";

fn host(name: &str, labels: &[(&str, &str)], cpu: &str) -> Node {
    let mut n = node(name);
    for (k, v) in labels {
        n = n.label(k, v);
    }
    n.alloc(&[("cpu", cpu), ("pods", "10")]).ready()
}

/// The five `TestFindTopologyAssignments` cases with `unhealthyNodes`, then
/// the six of `TestFindTopologyAssignmentsMultiLayerReplacement` (levels
/// block, rack, hostname unless named; one pod of 1 CPU per replica).
fn replacement_cases() -> Vec<ReplacementCase> {
    let pod = &[("v1", "Pod")][..];
    vec![
        ReplacementCase {
            name: "node replacement skipped for single-Pod-owned workload; gate on",
            levels: &[HOSTNAME],
            nodes: two_hosts_x1_not_ready(),
            prior_flavor: &[],
            owners: pod,
            group_annotation: None,
            skip_gate: true,
            existing: &[("x1", 1)],
            unhealthy: "x1",
            pod_set: one_pod_on_a_host().want(&[HOSTNAME], &[(&["x1"], 1)]),
        },
        ReplacementCase {
            name: "node replaced for Job-owned workload; gate on",
            levels: &[HOSTNAME],
            nodes: two_hosts_x1_not_ready(),
            prior_flavor: &[],
            owners: &[("batch/v1", "Job")],
            group_annotation: None,
            skip_gate: true,
            existing: &[("x1", 1)],
            unhealthy: "x1",
            pod_set: one_pod_on_a_host().want(&[HOSTNAME], &[(&["x2"], 1)]),
        },
        ReplacementCase {
            name: "node replaced for pod-group workload with two Pod owners; gate on",
            levels: &[HOSTNAME],
            nodes: two_hosts_x1_not_ready(),
            prior_flavor: &[],
            owners: &[("v1", "Pod"), ("v1", "Pod")],
            group_annotation: None,
            skip_gate: true,
            existing: &[("x1", 1)],
            unhealthy: "x1",
            pod_set: one_pod_on_a_host().want(&[HOSTNAME], &[(&["x2"], 1)]),
        },
        ReplacementCase {
            name: "node replaced for size-1 pod-group workload (is-group-workload annotation); gate on",
            levels: &[HOSTNAME],
            nodes: two_hosts_x1_not_ready(),
            prior_flavor: &[],
            owners: pod,
            group_annotation: Some("true"),
            skip_gate: true,
            existing: &[("x1", 1)],
            unhealthy: "x1",
            pod_set: one_pod_on_a_host().want(&[HOSTNAME], &[(&["x2"], 1)]),
        },
        ReplacementCase {
            name: "node replaced for single-Pod-owned workload; gate off",
            levels: &[HOSTNAME],
            nodes: two_hosts_x1_not_ready(),
            prior_flavor: &[],
            owners: pod,
            group_annotation: None,
            skip_gate: false,
            existing: &[("x1", 1)],
            unhealthy: "x1",
            pod_set: one_pod_on_a_host().want(&[HOSTNAME], &[(&["x2"], 1)]),
        },
        ReplacementCase {
            name: "replacement does not cross a string-prefix sibling domain",
            levels: &[BLOCK, RACK, HOSTNAME],
            nodes: vec![
                host("b1-rack-a-x1", &[(BLOCK, "b1"), (RACK, "rack-a"), (HOSTNAME, "x1")], "1").not_ready(),
                host("b1-rack-a-x2", &[(BLOCK, "b1"), (RACK, "rack-a"), (HOSTNAME, "x2")], "1"),
                host("b1-rack-ab-x3", &[(BLOCK, "b1"), (RACK, "rack-ab"), (HOSTNAME, "x3")], "1"),
            ],
            prior_flavor: &[(&["x2"], &[("cpu", "1000m")], 1)],
            owners: &[],
            group_annotation: None,
            skip_gate: true,
            existing: &[("x1", 1), ("x2", 1)],
            unhealthy: "x1",
            pod_set: ps().name("main").required(RACK).requests(&[("cpu", "1000m")]).count(2)
                .reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 2; excluded: resource "cpu": 1, topologyDomain: 1"#),
        },
        ReplacementCase {
            name: "replace unhealthy node in incomplete rack slice",
            levels: &[BLOCK, RACK, HOSTNAME],
            nodes: vec![
                host("b1-r1-x1", &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME, "x1")], "1"),
                host("b1-r1-x2", &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME, "x2")], "1"),
                host("b1-r2-x3", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x3")], "1").not_ready(),
                host("b1-r2-x4", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x4")], "1"),
                host("b1-r2-x5", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x5")], "2"),
            ],
            prior_flavor: &[],
            owners: &[],
            group_annotation: None,
            skip_gate: true,
            existing: &[("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1)],
            unhealthy: "x3",
            pod_set: ps().name("main").required(BLOCK).layer(RACK, 2).requests(&[("cpu", "1000m")]).count(4)
                .want(&[HOSTNAME], &[(&["x1"], 1), (&["x2"], 1), (&["x4"], 2)]),
        },
        ReplacementCase {
            name: "replacement fails when no capacity in incomplete slice domain",
            levels: &[BLOCK, RACK, HOSTNAME],
            nodes: vec![
                host("b1-r1-x1", &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME, "x1")], "1"),
                host("b1-r1-x2", &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME, "x2")], "1"),
                host("b1-r2-x3", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x3")], "1").not_ready(),
                host("b1-r2-x4", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x4")], "500m"),
            ],
            prior_flavor: &[],
            owners: &[],
            group_annotation: None,
            skip_gate: true,
            existing: &[("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1)],
            unhealthy: "x3",
            pod_set: ps().name("main").required(BLOCK).layer(RACK, 2).requests(&[("cpu", "1000m")]).count(4)
                .reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 3; excluded: resource "cpu": 1, topologyDomain: 2"#),
        },
        ReplacementCase {
            name: "3-layer: innermost broken domain confines replacement to correct switch",
            levels: &[BLOCK, RACK, SWITCH, HOSTNAME],
            nodes: vec![
                host("b1-r1-s1-x1", &[(BLOCK, "b1"), (RACK, "r1"), (SWITCH, "s1"), (HOSTNAME, "x1")], "4"),
                host("b1-r1-s1-x2", &[(BLOCK, "b1"), (RACK, "r1"), (SWITCH, "s1"), (HOSTNAME, "x2")], "4"),
                host("b1-r1-s2-x3", &[(BLOCK, "b1"), (RACK, "r1"), (SWITCH, "s2"), (HOSTNAME, "x3")], "4").not_ready(),
                host("b1-r1-s2-x4", &[(BLOCK, "b1"), (RACK, "r1"), (SWITCH, "s2"), (HOSTNAME, "x4")], "8"),
                host("b1-r2-s3-x5", &[(BLOCK, "b1"), (RACK, "r2"), (SWITCH, "s3"), (HOSTNAME, "x5")], "4"),
                host("b1-r2-s3-x6", &[(BLOCK, "b1"), (RACK, "r2"), (SWITCH, "s3"), (HOSTNAME, "x6")], "4"),
                host("b1-r2-s4-x7", &[(BLOCK, "b1"), (RACK, "r2"), (SWITCH, "s4"), (HOSTNAME, "x7")], "4"),
                host("b1-r2-s4-x8", &[(BLOCK, "b1"), (RACK, "r2"), (SWITCH, "s4"), (HOSTNAME, "x8")], "4"),
            ],
            prior_flavor: &[],
            owners: &[],
            group_annotation: None,
            skip_gate: true,
            existing: &[("x1", 2), ("x2", 2), ("x3", 2), ("x4", 2), ("x5", 2), ("x6", 2), ("x7", 2), ("x8", 2)],
            unhealthy: "x3",
            pod_set: ps().name("main").required(BLOCK).layer(RACK, 8).layer(SWITCH, 4).layer(HOSTNAME, 2)
                .requests(&[("cpu", "1000m")]).count(16)
                .want(&[HOSTNAME], &[(&["x1"], 2), (&["x2"], 2), (&["x4"], 4), (&["x5"], 2), (&["x6"], 2), (&["x7"], 2), (&["x8"], 2)]),
        },
        ReplacementCase {
            name: "2-layer: sliceSize=2 prevents scattered single-pod placement across hosts",
            levels: &[BLOCK, RACK, HOSTNAME],
            nodes: vec![
                host("b1-r1-x1", &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME, "x1")], "2"),
                host("b1-r1-x2", &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME, "x2")], "2"),
                host("b1-r2-x3", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x3")], "2").not_ready(),
                host("b1-r2-x4", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x4")], "1"),
                host("b1-r2-x5", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x5")], "1"),
            ],
            prior_flavor: &[],
            owners: &[],
            group_annotation: None,
            skip_gate: true,
            existing: &[("x1", 2), ("x2", 2), ("x3", 2), ("x4", 2)],
            unhealthy: "x3",
            pod_set: ps().name("main").required(BLOCK).layer(RACK, 4).layer(HOSTNAME, 2)
                .requests(&[("cpu", "1000m")]).count(8)
                .reason(r#"topology "default" doesn't allow to fit any of 1 slice(s). Total nodes: 4; excluded: topologyDomain: 2"#),
        },
        ReplacementCase {
            name: "sibling-flavor aggregatedDomainUsages on replacement candidate blocks the replacement",
            levels: &[BLOCK, RACK, HOSTNAME],
            nodes: vec![
                host("b1-r1-x1", &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME, "x1")], "1"),
                host("b1-r1-x2", &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME, "x2")], "1"),
                host("b1-r2-x3", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x3")], "1").not_ready(),
                host("b1-r2-x4", &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME, "x4")], "1"),
            ],
            prior_flavor: &[(&["x4"], &[("cpu", "1000m")], 1)],
            owners: &[],
            group_annotation: None,
            skip_gate: true,
            existing: &[("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1)],
            unhealthy: "x3",
            pod_set: ps().name("main").required(BLOCK).layer(RACK, 2).requests(&[("cpu", "1000m")]).count(4)
                .reason(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 3; excluded: resource "cpu": 1, topologyDomain: 2"#),
        },
    ]
}

#[test]
fn find_topology_assignments_replacement() {
    let cases = replacement_cases();
    assert_eq!(cases.len(), 11);
    let failures: Vec<String> = cases.iter().filter_map(ReplacementCase::check).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
