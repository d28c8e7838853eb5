//! The nodes topology-aware scheduling places pods on, as Kueue v0.19.2's
//! TAS caches keep them: the schedulable and Ready nodes with what each
//! can allocate (its `nodesCache`), and what pods outside TAS already use
//! on each node (its `nonTasUsageCache`). A TAS flavor's tree is built
//! from the nodes carrying its node labels and every level of its
//! Topology; a node's free capacity is its allocatable less both usages.
//!
//! Quantities are milli-units as everywhere in the engine; every pod also
//! takes one `pods` unit (1000), as Kueue's `OnePodRequest` does.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
};

use super::topology::{FlavorTopology, Snapshot};
pub use super::topology::{Node, ONE_POD};

/// Kueue's `NodeMatchesFlavor`: the node has each of the flavor's labels
/// and a label for every topology level.
pub fn matches_flavor(
    labels: &BTreeMap<String, String>,
    flavor_labels: &BTreeMap<String, String>,
    levels: &[String],
) -> bool {
    flavor_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        && levels.iter().all(|l| labels.contains_key(l))
}

/// A bound pod outside TAS, as its usage counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodUsage {
    pub node: String,
    /// Effective requests of one pod, milli-units by resource.
    pub requests: BTreeMap<String, i64>,
}

/// The node view: nodes that can take pods, and non-TAS usage per node.
#[derive(Debug, Default)]
pub struct Nodes {
    nodes: BTreeMap<String, Node>,
    /// Bumped on every change a flavor's tree could see.
    generation: u64,
    pods: BTreeMap<String, PodUsage>,
    /// `pods` summed by node, with one `pods` unit each.
    usage: BTreeMap<String, BTreeMap<String, i64>>,
    /// Bumped on every change of `usage`.
    usage_generation: u64,
    /// Each TAS flavor's tree as last built (see [`Nodes::snapshot`]).
    snapshots: Mutex<BTreeMap<String, CachedSnapshot>>,
}

/// A flavor's tree, and what it was built from.
#[derive(Debug)]
struct CachedSnapshot {
    view: FlavorTopology,
    /// `(generation, usage_generation)` when it was built.
    generations: (u64, u64),
    snapshot: Arc<Snapshot>,
}

impl Nodes {
    /// A Node as watched. One that is unschedulable or not Ready takes no
    /// pods and leaves the view.
    pub fn sync(&mut self, node: Node) {
        if !node.ready || node.unschedulable {
            self.delete(&node.name);
            return;
        }
        if self.nodes.get(&node.name) != Some(&node) {
            self.nodes.insert(node.name.clone(), node);
            self.generation += 1;
        }
    }

    pub fn delete(&mut self, name: &str) {
        if self.nodes.remove(name).is_some() {
            self.generation += 1;
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The nodes of a TAS flavor (Kueue's `nodesCache.find`), by name.
    pub fn find<'a>(
        &'a self,
        flavor_labels: &'a BTreeMap<String, String>,
        levels: &'a [String],
    ) -> impl Iterator<Item = &'a Node> + 'a {
        self.nodes
            .values()
            .filter(move |n| matches_flavor(&n.labels, flavor_labels, levels))
    }

    /// A pod as watched: `None` when it is not (or no longer) a bound,
    /// running non-TAS pod. Returns the node that may have room now (the
    /// pod left it or asks for less), for requeueing what waits on it.
    pub fn update_pod(&mut self, key: &str, pod: Option<PodUsage>) -> Option<String> {
        let old = self.pods.remove(key);
        if let Some(o) = &old {
            self.add_usage(&o.node, &o.requests, -1);
        }
        let Some(new) = pod else {
            return old.map(|o| o.node);
        };
        self.add_usage(&new.node, &new.requests, 1);
        let freed = old.filter(|o| {
            o.node != new.node
                || o.requests
                    .iter()
                    .any(|(r, q)| *q > new.requests.get(r).copied().unwrap_or(0))
        });
        self.pods.insert(key.to_string(), new);
        freed.map(|o| o.node)
    }

    fn add_usage(&mut self, node: &str, requests: &BTreeMap<String, i64>, sign: i64) {
        self.usage_generation += 1;
        let entry = self.usage.entry(node.to_string()).or_default();
        for (r, q) in requests
            .iter()
            .map(|(r, q)| (r.as_str(), *q))
            .chain([("pods", ONE_POD)])
        {
            let v = entry.entry(r.to_string()).or_default();
            *v += sign * q;
            if *v == 0 {
                entry.remove(r);
            }
        }
        if entry.is_empty() {
            self.usage.remove(node);
        }
    }

    /// The tree of `flavor`'s nodes (those [`Nodes::find`] gives for
    /// `view`) with their non-TAS usage subtracted, TAS usage not yet
    /// recorded: built once and reused until a node or a non-TAS pod
    /// changes or the flavor's view does (placement is called for every
    /// fitting TAS workload, and building the tree walks every node).
    pub fn snapshot(&self, flavor: &str, view: &FlavorTopology) -> Arc<Snapshot> {
        let generations = (self.generation, self.usage_generation);
        let mut cache = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cache.get(flavor) {
            if c.generations == generations && c.view == *view {
                return c.snapshot.clone();
            }
        }
        let nodes: Vec<Node> = self
            .find(&view.node_labels, &view.levels)
            .cloned()
            .collect();
        let mut snapshot = Snapshot::new(view, &nodes);
        for (node, usage) in &self.usage {
            snapshot.add_non_tas_usage(node, usage);
        }
        let snapshot = Arc::new(snapshot);
        cache.insert(
            flavor.to_string(),
            CachedSnapshot {
                view: view.clone(),
                generations,
                snapshot: snapshot.clone(),
            },
        );
        snapshot
    }

    /// What non-TAS pods use on `node`.
    pub fn non_tas_usage(&self, node: &str) -> Option<&BTreeMap<String, i64>> {
        self.usage.get(node)
    }

    /// Every node's non-TAS usage.
    pub fn non_tas_usages(&self) -> &BTreeMap<String, BTreeMap<String, i64>> {
        &self.usage
    }
}

/// Kueue's `belongsToNonTASCache`, from a pod's facts: bound, not finished,
/// and not a TAS pod (no required, preferred, slice or unconstrained
/// topology annotation).
pub fn counts_as_non_tas(bound_to: Option<&str>, phase: Option<&str>, tas: bool) -> bool {
    bound_to.is_some_and(|n| !n.is_empty())
        && !matches!(phase, Some("Succeeded" | "Failed"))
        && !tas
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queueing::flavors::{Taint, TaintEffect};

    fn labels(l: &[(&str, &str)]) -> BTreeMap<String, String> {
        l.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn node(name: &str, l: &[(&str, &str)]) -> Node {
        Node {
            name: name.into(),
            labels: labels(l),
            ready: true,
            ..Default::default()
        }
    }

    fn state(mut n: Node, schedulable_and_ready: bool) -> Node {
        n.ready = schedulable_and_ready;
        n
    }

    /// Kueue's `TestNodesCache`: only a schedulable, Ready node stays.
    #[test]
    fn nodes_cache() {
        let cases: [(&str, bool, (bool, bool), bool); 7] = [
            // name, primed with the Ready node, (unschedulable, ready), kept
            ("sync not ready", false, (false, false), false),
            (
                "sync unschedulable and not ready",
                false,
                (true, false),
                false,
            ),
            ("sync ready and unschedulable", false, (true, true), false),
            ("sync ready", false, (false, true), true),
            ("sync ready to not ready", true, (false, false), false),
            ("sync ready to unschedulable", true, (true, false), false),
            ("delete", true, (false, false), false),
        ];
        for (name, primed, (unschedulable, ready), kept) in cases {
            let mut nodes = Nodes::default();
            if primed {
                nodes.sync(node("test", &[]));
            }
            if name == "delete" {
                nodes.delete("test");
            } else {
                nodes.sync(state(node("test", &[]), !unschedulable && ready));
            }
            assert_eq!(nodes.nodes.contains_key("test"), kept, "{name}");
        }
    }

    /// Kueue's `TestNodesCacheFind`.
    #[test]
    fn nodes_cache_find() {
        const ZONE: &str = "cloud.provider.com/zone";
        const BLOCK: &str = "cloud.provider.com/topology-block";
        let mut nodes = Nodes::default();
        nodes.sync(node("test1", &[]));
        nodes.sync(node("test2", &[(ZONE, "us-east-1a")]));
        nodes.sync(node("test3", &[(ZONE, "us-east-1a"), (BLOCK, "b1")]));
        nodes.sync(node("test4", &[(ZONE, "us-east-1")]));
        let zone = labels(&[(ZONE, "us-east-1a")]);
        let block = vec![BLOCK.to_string()];
        type Case<'a> = (
            &'a str,
            BTreeMap<String, String>,
            Vec<String>,
            &'a [&'a str],
        );
        let cases: [Case; 4] = [
            (
                "no nodeLabels and levels",
                BTreeMap::new(),
                vec![],
                &["test1", "test2", "test3", "test4"],
            ),
            ("match labels", zone.clone(), vec![], &["test2", "test3"]),
            ("match levels", BTreeMap::new(), block.clone(), &["test3"]),
            ("match labels and levels", zone, block, &["test3"]),
        ];
        for (name, l, levels, want) in cases {
            let got: Vec<&str> = nodes.find(&l, &levels).map(|n| n.name.as_str()).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    /// Kueue's `TestNodesCacheGeneration`: only a change placement can see
    /// bumps the generation (a flavor's tree is rebuilt on a bump).
    #[test]
    fn nodes_cache_generation() {
        fn base() -> Node {
            Node {
                name: "gen-test".into(),
                labels: labels(&[("cloud.provider.com/zone", "us-east-1a")]),
                allocatable: [("cpu".into(), 4000), ("memory".into(), 16 << 30 << 10)].into(),
                taints: vec![],
                ready: true,
                unschedulable: false,
            }
        }
        fn with(f: &dyn Fn(&mut Node)) -> Node {
            let mut n = base();
            f(&mut n);
            n
        }
        type Op = Box<dyn Fn(&mut Nodes)>;
        let cases: Vec<(&str, bool, Op, u64)> = vec![
            (
                "sync of a new ready node bumps",
                false,
                Box::new(move |n| n.sync(base())),
                1,
            ),
            (
                "re-sync of an identical node does not bump",
                true,
                Box::new(move |n| n.sync(base())),
                0,
            ),
            // A heartbeat and "4000m" for "4" read as the same Node here.
            (
                "heartbeat-only update does not bump",
                true,
                Box::new(move |n| n.sync(base())),
                0,
            ),
            (
                "equivalent allocatable expressed in different units does not bump",
                true,
                Box::new(move |n| n.sync(base())),
                0,
            ),
            (
                "label change bumps",
                true,
                Box::new(move |n| {
                    n.sync(with(&|x| {
                        x.labels
                            .insert("cloud.provider.com/zone".into(), "us-east-1b".into());
                    }))
                }),
                1,
            ),
            (
                "allocatable change bumps",
                true,
                Box::new(move |n| {
                    n.sync(with(&|x| {
                        x.allocatable.insert("cpu".into(), 8000);
                    }))
                }),
                1,
            ),
            (
                "taint change bumps",
                true,
                Box::new(move |n| {
                    n.sync(with(&|x| {
                        x.taints.push(Taint {
                            key: "example.com/gpu".into(),
                            value: String::new(),
                            effect: TaintEffect::NoSchedule,
                        })
                    }))
                }),
                1,
            ),
            (
                "transition to unschedulable removes the node and bumps",
                true,
                Box::new(move |n| n.sync(state(base(), false))),
                1,
            ),
            (
                "sync of an absent not-ready node does not bump",
                false,
                Box::new(move |n| n.sync(state(node("gen-test", &[]), false))),
                0,
            ),
            (
                "delete of an existing node bumps",
                true,
                Box::new(|n| n.delete("gen-test")),
                1,
            ),
            (
                "delete of an absent node does not bump",
                false,
                Box::new(|n| n.delete("other")),
                0,
            ),
        ];
        for (name, prime, op, delta) in cases {
            let mut nodes = Nodes::default();
            if prime {
                nodes.sync(base());
            }
            let before = nodes.generation();
            op(&mut nodes);
            assert_eq!(nodes.generation() - before, delta, "{name}");
        }
    }

    fn pod(node: &str, cpu: i64) -> Option<PodUsage> {
        Some(PodUsage {
            node: node.into(),
            requests: [("cpu".to_string(), cpu * 1000)].into(),
        })
    }

    /// Kueue's `TestNonTasUsageCacheRemovedNode`: which node may have room
    /// after an update. A finished pod arrives here as `None` (see
    /// [`counts_as_non_tas`]).
    #[test]
    fn non_tas_usage_cache_removed_node() {
        type Step = (&'static str, Option<PodUsage>);
        let cases: Vec<(&str, Vec<Step>, Step, Option<&str>)> = vec![
            (
                "update with succeeded pod returns node",
                vec![("ns/pod1", pod("node-a", 2))],
                ("ns/pod1", None),
                Some("node-a"),
            ),
            (
                "update with failed pod returns node",
                vec![("ns/pod1", pod("node-a", 2))],
                ("ns/pod1", None),
                Some("node-a"),
            ),
            (
                "update with terminated pod not in cache returns empty",
                vec![],
                ("ns/pod1", None),
                None,
            ),
            (
                "update with new running pod returns empty",
                vec![],
                ("ns/pod1", pod("node-a", 2)),
                None,
            ),
            (
                "update existing running pod with decreased requests returns old node",
                vec![("ns/pod1", pod("node-a", 4))],
                ("ns/pod1", pod("node-a", 2)),
                Some("node-a"),
            ),
            (
                "update existing running pod with increased requests returns empty",
                vec![("ns/pod1", pod("node-a", 2))],
                ("ns/pod1", pod("node-a", 4)),
                None,
            ),
            (
                "update existing running pod moved to new node returns old node",
                vec![("ns/pod1", pod("node-a", 2))],
                ("ns/pod1", pod("node-b", 2)),
                Some("node-a"),
            ),
            (
                "delete existing pod returns node",
                vec![("ns/pod1", pod("node-a", 2))],
                ("ns/pod1", None),
                Some("node-a"),
            ),
            (
                "delete non-existent pod returns empty",
                vec![],
                ("ns/ghost", None),
                None,
            ),
        ];
        assert!(counts_as_non_tas(Some("node-a"), Some("Running"), false));
        assert!(!counts_as_non_tas(Some("node-a"), Some("Succeeded"), false));
        assert!(!counts_as_non_tas(Some("node-a"), Some("Failed"), false));
        assert!(!counts_as_non_tas(None, Some("Pending"), false));
        assert!(!counts_as_non_tas(Some("node-a"), Some("Running"), true));
        for (name, setup, (key, action), want) in cases {
            let mut nodes = Nodes::default();
            for (k, p) in setup {
                nodes.update_pod(k, p);
            }
            assert_eq!(nodes.update_pod(key, action).as_deref(), want, "{name}");
        }
    }

    /// Kueue's `TestNonTasUsageCacheIncrementalUpdates`: the per-node sums
    /// equal a recount from the pods, and empty nodes leave no entry.
    #[test]
    fn non_tas_usage_cache_incremental_updates() {
        type Step = (&'static str, Option<PodUsage>);
        let usage = |cpu: i64, pods: i64| -> BTreeMap<String, i64> {
            [
                ("cpu".to_string(), cpu * 1000),
                ("pods".to_string(), pods * ONE_POD),
            ]
            .into()
        };
        type Case = (
            &'static str,
            Vec<Step>,
            Vec<(&'static str, BTreeMap<String, i64>)>,
        );
        let cases: Vec<Case> = vec![
            (
                "add then delete same pod",
                vec![("ns/pod1", pod("node-a", 2)), ("ns/pod1", None)],
                vec![],
            ),
            (
                "multiple pods on same node",
                vec![("ns/pod1", pod("node-a", 1)), ("ns/pod2", pod("node-a", 2))],
                vec![("node-a", usage(3, 2))],
            ),
            (
                "pod moves between nodes cleans up source node",
                vec![("ns/pod1", pod("node-a", 4)), ("ns/pod1", pod("node-b", 4))],
                vec![("node-b", usage(4, 1))],
            ),
            (
                "pod resize on same node updates usage to new requests",
                vec![("ns/pod1", pod("node-a", 1)), ("ns/pod1", pod("node-a", 4))],
                vec![("node-a", usage(4, 1))],
            ),
            (
                "resize one of two pods on same node updates only that pod's contribution",
                vec![
                    ("ns/pod1", pod("node-a", 1)),
                    ("ns/pod2", pod("node-a", 2)),
                    ("ns/pod1", pod("node-a", 3)),
                ],
                vec![("node-a", usage(5, 2))],
            ),
            (
                "terminated pod removes usage",
                vec![("ns/pod1", pod("node-a", 2)), ("ns/pod1", None)],
                vec![],
            ),
            (
                "delete non-existent key is no-op",
                vec![("ns/ghost", None)],
                vec![],
            ),
            (
                "removing one of two pods leaves node entry",
                vec![
                    ("ns/pod1", pod("node-a", 1)),
                    ("ns/pod2", pod("node-a", 1)),
                    ("ns/pod1", None),
                ],
                vec![("node-a", usage(1, 1))],
            ),
            (
                "removing last pod cleans up node entry",
                vec![
                    ("ns/pod1", pod("node-a", 1)),
                    ("ns/pod2", pod("node-a", 1)),
                    ("ns/pod1", None),
                    ("ns/pod2", None),
                ],
                vec![],
            ),
        ];
        for (name, steps, want) in cases {
            let mut nodes = Nodes::default();
            for (k, p) in steps {
                nodes.update_pod(k, p);
            }
            let mut recount: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
            for p in nodes.pods.values() {
                let e = recount.entry(p.node.clone()).or_default();
                for (r, q) in &p.requests {
                    *e.entry(r.clone()).or_default() += q;
                }
                *e.entry("pods".into()).or_default() += ONE_POD;
            }
            assert_eq!(nodes.non_tas_usages(), &recount, "{name}: sums");
            let want: BTreeMap<String, BTreeMap<String, i64>> =
                want.into_iter().map(|(n, u)| (n.to_string(), u)).collect();
            assert_eq!(nodes.non_tas_usages(), &want, "{name}");
        }
    }
}
