//! The per-flavor tree of topology domains with their free capacity
//! (Kueue's `topologyTree` plus the capacity half of `TASFlavorSnapshot`).
//!
//! Domains live in one arena addressed by index; a domain's id is its
//! level values joined with commas, except that a leaf of a topology whose
//! lowest level is `kubernetes.io/hostname` is known by its hostname alone,
//! as upstream keys usage by it.

use std::collections::BTreeMap;

use crate::queueing::flavors::{Taint, TaintEffect, Toleration};

/// The node label whose level makes every leaf one node.
pub use crate::vocabulary::keys::HOSTNAME_LABEL as HOSTNAME;
/// The resource counting pods; every pod asks for one (Kueue's
/// `OnePodRequest`).
pub const PODS: &str = "pods";
/// One pod of [`PODS`], in milli-units like every other quantity here.
pub const ONE_POD: i64 = 1000;

/// Quantities by resource name, in milli-units (`quantity::parse`).
pub type Resources = BTreeMap<String, i64>;

/// What the shell knows of a node the flavor could use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Node {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// `status.allocatable`, `pods` included.
    pub allocatable: Resources,
    pub taints: Vec<Taint>,
    /// The `Ready` condition is true.
    pub ready: bool,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
}

/// The flavor's view of a Topology.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FlavorTopology {
    /// The Topology's name, as reasons print it.
    pub name: String,
    /// Node-label keys, highest level first.
    pub levels: Vec<String>,
    /// The ResourceFlavor's `nodeLabels`: only nodes carrying all of them.
    pub node_labels: BTreeMap<String, String>,
    /// The ResourceFlavor's `tolerations`, added to every pod set's.
    pub tolerations: Vec<Toleration>,
}

#[derive(Debug, Clone)]
pub(super) struct TopologyDomain {
    pub(super) id: String,
    pub(super) values: Vec<String>,
    pub(super) children: Vec<usize>,
    /// Set on leaves only.
    pub(super) leaf: Option<Leaf>,
}

#[derive(Debug, Clone)]
pub(super) struct Leaf {
    /// Allocatable minus non-TAS usage.
    pub(super) free: Resources,
    /// Usage of admitted TAS workloads.
    pub(super) tas_usage: Resources,
    /// The node behind a hostname leaf: its labels and taints are checked.
    pub(super) node: Option<(BTreeMap<String, String>, Vec<Taint>)>,
}

/// The per-flavor tree: the domains at every level and each leaf's free
/// capacity. Built once per scheduling cycle; placement reads it and keeps
/// its scratch counts elsewhere.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(super) topology_name: String,
    pub(super) levels: Vec<String>,
    pub(super) lowest_is_hostname: bool,
    pub(super) tolerations: Vec<Toleration>,
    pub(super) domains: Vec<TopologyDomain>,
    /// Domain indices per level, sorted by level values.
    pub(super) per_level: Vec<Vec<usize>>,
    pub(super) leaves: BTreeMap<String, usize>,
    /// Node name to leaf index, for usage reported by node.
    pub(super) nodes: BTreeMap<String, usize>,
}

impl Snapshot {
    /// The tree of the nodes the flavor selects: nodes carrying the flavor's
    /// node labels and every level label, ready and schedulable (what
    /// Kueue's node cache keeps without the scheduler-library gate). Nodes
    /// sharing a leaf (same values at every level) add their capacity up.
    pub fn new(topology: &FlavorTopology, nodes: &[Node]) -> Snapshot {
        let levels = topology.levels.clone();
        let lowest_is_hostname = levels.last().is_some_and(|l| l == HOSTNAME);
        let mut snapshot = Snapshot {
            topology_name: topology.name.clone(),
            levels,
            lowest_is_hostname,
            tolerations: topology.tolerations.clone(),
            domains: Vec::new(),
            per_level: vec![Vec::new(); topology.levels.len()],
            leaves: BTreeMap::new(),
            nodes: BTreeMap::new(),
        };
        if topology.levels.is_empty() {
            return snapshot;
        }
        let mut by_id: Vec<BTreeMap<String, usize>> = vec![BTreeMap::new(); topology.levels.len()];
        for node in nodes {
            if !node.ready || node.unschedulable || !snapshot.selects(topology, node) {
                continue;
            }
            let values: Vec<String> = topology
                .levels
                .iter()
                .map(|l| node.labels[l.as_str()].clone())
                .collect();
            let leaf_id = snapshot.leaf_id(&values);
            if let Some(&idx) = snapshot.leaves.get(&leaf_id) {
                if let Some(leaf) = snapshot.domains[idx].leaf.as_mut() {
                    add(&mut leaf.free, &node.allocatable);
                }
                snapshot.nodes.insert(node.name.clone(), idx);
                continue;
            }
            let idx = snapshot.insert_path(&mut by_id, &values);
            snapshot.domains[idx].id = leaf_id.clone();
            snapshot.domains[idx].leaf = Some(Leaf {
                free: node.allocatable.clone(),
                tas_usage: Resources::new(),
                node: lowest_is_hostname.then(|| (node.labels.clone(), node.taints.clone())),
            });
            snapshot.leaves.insert(leaf_id, idx);
            snapshot.nodes.insert(node.name.clone(), idx);
        }
        for level in &mut snapshot.per_level {
            level.sort_by(|&a, &b| snapshot.domains[a].values.cmp(&snapshot.domains[b].values));
        }
        snapshot
    }

    fn selects(&self, topology: &FlavorTopology, node: &Node) -> bool {
        crate::queueing::nodes::matches_flavor(
            &node.labels,
            &topology.node_labels,
            &topology.levels,
        )
    }

    /// Adds the domains on the path to a new leaf; returns the leaf's index.
    fn insert_path(&mut self, by_id: &mut [BTreeMap<String, usize>], values: &[String]) -> usize {
        let mut parent: Option<usize> = None;
        for depth in 0..values.len() {
            let id = values[..=depth].join(",");
            let is_leaf = depth + 1 == values.len();
            let idx = match by_id[depth].get(&id) {
                Some(&idx) if !is_leaf => idx,
                _ => {
                    let idx = self.domains.len();
                    self.domains.push(TopologyDomain {
                        id: id.clone(),
                        values: values[..=depth].to_vec(),
                        children: Vec::new(),
                        leaf: None,
                    });
                    by_id[depth].insert(id, idx);
                    self.per_level[depth].push(idx);
                    if let Some(p) = parent {
                        self.domains[p].children.push(idx);
                    }
                    idx
                }
            };
            parent = Some(idx);
        }
        parent.unwrap_or_default()
    }

    /// How usage and assignments name a leaf: the hostname alone when the
    /// lowest level is the hostname, else every level value.
    pub(super) fn leaf_id(&self, values: &[String]) -> String {
        if self.lowest_is_hostname {
            values.last().cloned().unwrap_or_default()
        } else {
            values.join(",")
        }
    }

    /// Subtracts the usage of a pod not admitted through TAS (DaemonSets,
    /// static pods), bound to `node_name` and not terminated, from its
    /// node's leaf; `usage` carries its one pod of `pods` too.
    pub fn add_non_tas_usage(&mut self, node_name: &str, usage: &Resources) {
        let Some(&idx) = self.nodes.get(node_name) else {
            return;
        };
        if let Some(leaf) = self.domains[idx].leaf.as_mut() {
            subtract(&mut leaf.free, usage);
        }
    }

    /// Records usage of an admitted TAS workload on a leaf, `pods` included.
    /// Usage on a leaf the flavor no longer has (node gone or not ready) is
    /// dropped, as upstream does.
    pub fn add_tas_usage(&mut self, leaf_id: &str, usage: &Resources) {
        if let Some(leaf) = self.leaf_mut(leaf_id) {
            add(&mut leaf.tas_usage, usage);
        }
    }

    fn leaf_mut(&mut self, leaf_id: &str) -> Option<&mut Leaf> {
        let idx = *self.leaves.get(leaf_id)?;
        self.domains[idx].leaf.as_mut()
    }

    /// The node-label keys, highest first.
    pub fn levels(&self) -> &[String] {
        &self.levels
    }

    pub(super) fn level_index(&self, key: &str) -> Option<usize> {
        self.levels.iter().position(|l| l == key)
    }
}

pub(super) fn add(to: &mut Resources, usage: &Resources) {
    for (name, value) in usage {
        *to.entry(name.clone()).or_default() += value;
    }
}

pub(super) fn subtract(from: &mut Resources, usage: &Resources) {
    for (name, value) in usage {
        *from.entry(name.clone()).or_default() -= value;
    }
}

/// `Taint.ToString()`: how exclusion stats name a taint.
pub(super) fn taint_name(taint: &Taint) -> String {
    let effect = taint.effect.as_str();
    if taint.value.is_empty() {
        format!("{}:{effect}", taint.key)
    } else {
        format!("{}={}:{effect}", taint.key, taint.value)
    }
}

/// The first NoSchedule/NoExecute taint none of `tolerations` tolerates.
pub(super) fn untolerated<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
) -> Option<&'a Taint> {
    taints.iter().find(|t| {
        matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
            && !tolerations.iter().any(|tol| tol.tolerates(t))
    })
}
