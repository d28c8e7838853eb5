//! Quota and usage of ClusterQueues and Cohorts as a tree of resource
//! nodes, with Kueue's arithmetic (`pkg/cache/scheduler/resource_node.go`).
//!
//! ClusterQueues are leaves; Cohorts (objects, or implicit ones named by a
//! `cohortName`/`parentName` with no object) are inner nodes and may hold
//! quota of their own. Every node's *subtree quota* is its own nominal
//! quota plus what its children store in it. A node with a lending limit
//! keeps the part beyond it local (`subtree - lendingLimit`, never lent to
//! the parent); the rest it stores in its parent. A node's usage counts
//! against its subtree quota, and what exceeds its local part is also its
//! parent's usage. A node may take from its parent what it stores there plus
//! its `borrowingLimit`. Cohorts whose parents loop are cut off (Kueue's
//! `HasCycle`): their ClusterQueues admit nothing until the loop is gone.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::cluster_queue::{ClusterQueue, ResourceGroup};
use super::cohort::Cohort;

/// A resource in a flavor: the unit quota is counted in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlavorResource {
    pub flavor: String,
    pub resource: String,
}

impl FlavorResource {
    pub fn new(flavor: &str, resource: &str) -> Self {
        FlavorResource {
            flavor: flavor.to_string(),
            resource: resource.to_string(),
        }
    }
}

/// Quantities per flavor/resource, in milli-units.
pub type Usage = BTreeMap<FlavorResource, i64>;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    pub nominal: i64,
    pub borrowing_limit: Option<i64>,
    pub lending_limit: Option<i64>,
}

/// A node of the tree: a ClusterQueue or a Cohort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct NodeId(usize);

#[derive(Debug, Default, Clone)]
struct Node {
    name: String,
    is_queue: bool,
    /// `None` for a root, and for a Cohort in (or under) a cycle.
    parent: Option<usize>,
    /// A Cohort whose parents loop, or a ClusterQueue in such a Cohort.
    in_cycle: bool,
    quotas: BTreeMap<FlavorResource, Limits>,
    subtree: Usage,
    child_cohorts: Vec<usize>,
    child_queues: Vec<usize>,
    /// Kueue's `getNodeHeight` (Cohorts only).
    height: u8,
}

impl Node {
    fn limits(&self, fr: &FlavorResource) -> Limits {
        self.quotas.get(fr).copied().unwrap_or_default()
    }

    fn subtree(&self, fr: &FlavorResource) -> i64 {
        get(&self.subtree, fr)
    }

    /// `localQuota`: the part of the subtree quota never lent to the parent.
    fn local_quota(&self, fr: &FlavorResource) -> i64 {
        self.limits(fr)
            .lending_limit
            .map_or(0, |lend| (self.subtree(fr) - lend).max(0))
    }
}

/// What changes only with the specs: shared by every snapshot.
#[derive(Debug, Default, Clone)]
struct Shape {
    nodes: Vec<Node>,
    queues: std::collections::HashMap<String, usize, super::Hasher>,
    cohorts: BTreeMap<String, usize>,
}

/// A Cohort's place in its tree and what its subtree holds (Kueue's
/// cohort metrics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CohortSubtree {
    pub name: String,
    pub parent: Option<String>,
    pub root: String,
    /// `SubtreeQuota`: its own quota and what its children lend it.
    pub quota: Usage,
    /// What every ClusterQueue under it holds, summed.
    pub reservations: Usage,
    /// The ClusterQueues under it, at any depth.
    pub queues: Vec<String>,
}

/// The quota state the scheduler reads and a cycle's snapshot copies (the
/// shape is shared; only usage is copied).
#[derive(Debug, Clone, Default)]
pub(crate) struct QuotaTree {
    shape: Arc<Shape>,
    usage: Vec<Usage>,
    /// Fair sharing's settings and weights, when it is enabled.
    fair: Option<Arc<super::fair_sharing::FairShape>>,
}

fn get(map: &Usage, fr: &FlavorResource) -> i64 {
    map.get(fr).copied().unwrap_or(0)
}

fn quotas_of(groups: &[ResourceGroup]) -> BTreeMap<FlavorResource, Limits> {
    let mut limits = BTreeMap::new();
    for g in groups {
        for f in &g.flavors {
            for r in &f.resources {
                limits.insert(
                    FlavorResource::new(&f.name, &r.name),
                    Limits {
                        nominal: r.nominal,
                        // Kueue's validation rejects limits without a parent;
                        // without one they have nothing to act on.
                        borrowing_limit: r.borrowing_limit,
                        lending_limit: r.lending_limit,
                    },
                );
            }
        }
    }
    limits
}

impl QuotaTree {
    /// Builds the tree from the queues' specs (no Cohort objects: every
    /// cohort is implicit) and the usage each queue holds.
    #[cfg(test)]
    pub fn build<'a>(
        queues: impl IntoIterator<Item = &'a ClusterQueue>,
        usage: impl IntoIterator<Item = (&'a str, &'a Usage)>,
    ) -> Self {
        Self::build_with_cohorts(queues, [], usage)
    }

    /// Builds the tree from the queues' and Cohorts' specs and the usage
    /// each queue holds.
    pub fn build_with_cohorts<'a>(
        queues: impl IntoIterator<Item = &'a ClusterQueue>,
        cohorts: impl IntoIterator<Item = &'a Cohort>,
        usage: impl IntoIterator<Item = (&'a str, &'a Usage)>,
    ) -> Self {
        let mut shape = Shape::default();
        let mut parent_names: Vec<Option<String>> = Vec::new();
        fn cohort_node(shape: &mut Shape, parents: &mut Vec<Option<String>>, name: &str) -> usize {
            if let Some(&i) = shape.cohorts.get(name) {
                return i;
            }
            shape.nodes.push(Node {
                name: name.to_string(),
                ..Node::default()
            });
            parents.push(None);
            let i = shape.nodes.len() - 1;
            shape.cohorts.insert(name.to_string(), i);
            i
        }
        for c in cohorts {
            let i = cohort_node(&mut shape, &mut parent_names, &c.name);
            shape.nodes[i].quotas = quotas_of(&c.resource_groups);
            parent_names[i] = c.parent.clone().filter(|p| !p.is_empty());
        }
        for cq in queues {
            shape.nodes.push(Node {
                name: cq.name.clone(),
                is_queue: true,
                quotas: quotas_of(&cq.resource_groups),
                ..Node::default()
            });
            parent_names.push(cq.cohort.clone().filter(|c| !c.is_empty()));
            shape.queues.insert(cq.name.clone(), shape.nodes.len() - 1);
        }
        // Parents named but not defined are implicit Cohorts without quota.
        let mut parents = vec![None; shape.nodes.len()];
        for i in 0..parent_names.len() {
            if let Some(p) = parent_names[i].clone() {
                let at = cohort_node(&mut shape, &mut parent_names, &p);
                parents.resize(shape.nodes.len(), None);
                parents[i] = Some(at);
            }
        }
        // `HasCycle`: following the parents from a Cohort meets one twice.
        for i in 0..shape.nodes.len() {
            if shape.nodes[i].is_queue {
                continue;
            }
            let mut seen = BTreeSet::new();
            let mut at = i;
            while let Some(p) = parents[at] {
                if !seen.insert(at) {
                    shape.nodes[i].in_cycle = true;
                    break;
                }
                at = p;
            }
        }
        for (i, parent) in parents.iter().enumerate() {
            let Some(p) = *parent else { continue };
            if shape.nodes[p].in_cycle {
                shape.nodes[i].in_cycle = true;
            }
            if shape.nodes[i].in_cycle && !shape.nodes[i].is_queue {
                continue; // cut off: every node stays reachable from a root
            }
            shape.nodes[i].parent = Some(p);
            if shape.nodes[i].is_queue {
                shape.nodes[p].child_queues.push(i);
            } else {
                shape.nodes[p].child_cohorts.push(i);
            }
        }
        let roots: Vec<usize> = (0..shape.nodes.len())
            .filter(|&i| shape.nodes[i].parent.is_none())
            .collect();
        for r in roots {
            accumulate(&mut shape.nodes, r);
        }
        let mut tree = QuotaTree {
            usage: vec![Usage::new(); shape.nodes.len()],
            shape: Arc::new(shape),
            fair: None,
        };
        for (cq, u) in usage {
            tree.add(cq, u);
        }
        tree
    }

    /// Adds a ClusterQueue the tree does not have yet, as
    /// [`Self::build_with_cohorts`] would place it (under its Cohort, or a
    /// new implicit root Cohort), without rebuilding the rest: its lendable
    /// quota is added up its ancestors and their heights are updated.
    /// Returns false (and changes nothing) if the queue is already there:
    /// a changed queue needs a rebuild.
    #[cfg(test)]
    pub fn insert_queue(&mut self, cq: &ClusterQueue) -> bool {
        if self.shape.queues.contains_key(&cq.name) {
            return false;
        }
        let shape = Arc::make_mut(&mut self.shape);
        let i = shape.nodes.len();
        shape.nodes.push(Node {
            name: cq.name.clone(),
            is_queue: true,
            quotas: quotas_of(&cq.resource_groups),
            ..Node::default()
        });
        self.usage.push(Usage::new());
        shape.queues.insert(cq.name.clone(), i);
        accumulate(&mut shape.nodes, i);
        let Some(cohort) = cq.cohort.as_deref().filter(|c| !c.is_empty()) else {
            return true;
        };
        let p = match shape.cohorts.get(cohort) {
            Some(&p) => p,
            None => {
                // Named but not defined: an implicit root without quota.
                shape.nodes.push(Node {
                    name: cohort.to_string(),
                    ..Node::default()
                });
                self.usage.push(Usage::new());
                shape.cohorts.insert(cohort.to_string(), i + 1);
                i + 1
            }
        };
        shape.nodes[i].parent = Some(p);
        shape.nodes[i].in_cycle = shape.nodes[p].in_cycle;
        // Children in name order, as a build lists them.
        let nodes = &shape.nodes;
        let at = nodes[p]
            .child_queues
            .partition_point(|&q| nodes[q].name < cq.name);
        shape.nodes[p].child_queues.insert(at, i);
        // What each node lends its parent changes as its subtree grows:
        // carry the change up (every resource the queue names gets an entry
        // at every ancestor, as `accumulate` gives it).
        let mut lent: Vec<(FlavorResource, i64)> = shape.nodes[i]
            .subtree
            .iter()
            .map(|(fr, q)| (fr.clone(), q - shape.nodes[i].local_quota(fr)))
            .collect();
        let mut at = Some(p);
        while let Some(n) = at {
            for (fr, delta) in &mut lent {
                let before = shape.nodes[n].subtree(fr) - shape.nodes[n].local_quota(fr);
                let e = shape.nodes[n].subtree.entry(fr.clone()).or_default();
                *e = e.saturating_add(*delta);
                *delta = shape.nodes[n].subtree(fr) - shape.nodes[n].local_quota(fr) - before;
            }
            let nodes = &shape.nodes;
            let height = nodes[n]
                .child_cohorts
                .iter()
                .map(|&c| nodes[c].height.saturating_add(1))
                .fold(1, u8::max);
            shape.nodes[n].height = height;
            at = shape.nodes[n].parent;
        }
        true
    }

    fn node(&self, i: usize) -> &Node {
        &self.shape.nodes[i]
    }

    fn queue(&self, cq: &str) -> Option<usize> {
        self.shape.queues.get(cq).copied()
    }

    pub fn queue_id(&self, cq: &str) -> Option<NodeId> {
        self.queue(cq).map(NodeId)
    }

    fn used(&self, i: usize, fr: &FlavorResource) -> i64 {
        get(&self.usage[i], fr)
    }

    /// The ClusterQueue's parent Cohort (`spec.cohortName`).
    #[cfg(test)]
    pub fn cohort_of(&self, cq: &str) -> Option<&str> {
        let p = self.node(self.queue(cq)?).parent?;
        Some(&self.node(p).name)
    }

    /// Is the queue in a Cohort whose parents loop? It admits nothing then.
    pub fn in_cycle(&self, cq: &str) -> bool {
        self.queue(cq).is_some_and(|i| self.node(i).in_cycle)
    }

    /// The root of the queue's tree (`None` without a Cohort).
    pub fn root_of(&self, cq: &str) -> Option<&str> {
        let mut at = self.node(self.queue(cq)?).parent?;
        while let Some(p) = self.node(at).parent {
            at = p;
        }
        Some(&self.node(at).name)
    }

    /// Kueue's `buildCQPath`: `/root/.../parent/queue`.
    pub fn path(&self, cq: &str) -> String {
        let mut parts = vec![cq];
        let mut at = self.queue(cq).and_then(|i| self.node(i).parent);
        while let Some(p) = at {
            parts.push(&self.node(p).name);
            at = self.node(p).parent;
        }
        parts.reverse();
        format!("/{}", parts.join("/"))
    }

    /// Every ClusterQueue in the Cohort's tree (from its root down).
    pub fn tree_members(&self, cohort: &str) -> Vec<String> {
        let Some(mut at) = self.shape.cohorts.get(cohort).copied() else {
            return Vec::new();
        };
        while let Some(p) = self.node(at).parent {
            at = p;
        }
        let mut out = Vec::new();
        let mut stack = vec![at];
        while let Some(n) = stack.pop() {
            let node = self.node(n);
            out.extend(node.child_queues.iter().map(|&q| self.node(q).name.clone()));
            stack.extend(&node.child_cohorts);
        }
        out
    }

    pub fn limits(&self, cq: &str, fr: &FlavorResource) -> Limits {
        self.queue(cq)
            .map(|i| self.node(i).limits(fr))
            .unwrap_or_default()
    }

    pub fn usage(&self, cq: &str, fr: &FlavorResource) -> i64 {
        self.queue(cq).map_or(0, |i| self.used(i, fr))
    }

    /// `LocalAvailable`: unused quota of the node its parent cannot see.
    fn local_available(&self, i: usize, fr: &FlavorResource) -> i64 {
        (self.node(i).local_quota(fr) - self.used(i, fr)).max(0)
    }

    /// Kueue's `available`: what the node can take now from its own quota
    /// and, within its borrowing limit, from its ancestors'.
    fn available_at(&self, i: usize, fr: &FlavorResource) -> i64 {
        let node = self.node(i);
        let Some(parent) = node.parent else {
            return node.subtree(fr) - self.used(i, fr);
        };
        let mut from_parent = self.available_at(parent, fr);
        if let Some(bl) = node.limits(fr).borrowing_limit {
            let lq = node.local_quota(fr);
            let stored = node.subtree(fr) - lq;
            let used_in_parent = (self.used(i, fr) - lq).max(0);
            from_parent = from_parent.min(stored.saturating_sub(used_in_parent).saturating_add(bl));
        }
        self.local_available(i, fr).saturating_add(from_parent)
    }

    /// How much more of `fr` the queue can take now. Negative when
    /// over-admitted (quota was lowered under running workloads).
    pub fn available(&self, cq: &str, fr: &FlavorResource) -> i64 {
        self.queue(cq).map_or(0, |i| self.available_at(i, fr))
    }

    fn potential_at(&self, i: usize, fr: &FlavorResource) -> i64 {
        let node = self.node(i);
        let Some(parent) = node.parent else {
            return node.subtree(fr);
        };
        let most = node
            .local_quota(fr)
            .saturating_add(self.potential_at(parent, fr));
        match node.limits(fr).borrowing_limit {
            Some(bl) => most.min(node.subtree(fr).saturating_add(bl)),
            None => most,
        }
    }

    /// The queue and each Cohort above it, bottom up: `(name, quota of
    /// its subtree, used in it)` for `fr` (what `explain` shows per level).
    pub fn levels(&self, cq: &str, fr: &FlavorResource) -> Vec<(String, i64, i64)> {
        let mut out = Vec::new();
        let mut at = self.queue(cq);
        while let Some(i) = at {
            let node = self.node(i);
            out.push((node.name.to_string(), node.subtree(fr), self.used(i, fr)));
            at = node.parent;
        }
        out
    }

    /// The most of `fr` the queue could ever hold, were nothing else running.
    pub fn potential_available(&self, cq: &str, fr: &FlavorResource) -> i64 {
        self.queue(cq).map_or(0, |i| self.potential_at(i, fr))
    }

    /// `BorrowingWith`: would `val` more take the node past its subtree
    /// quota (a queue's nominal quota)?
    fn borrowing_at(&self, i: usize, fr: &FlavorResource, val: i64) -> bool {
        self.used(i, fr) + val > self.node(i).subtree(fr)
    }

    /// Would holding `val` more of `fr` take the queue past its nominal quota?
    pub fn borrowing_with(&self, cq: &str, fr: &FlavorResource, val: i64) -> bool {
        self.usage(cq, fr) + val > self.limits(cq, fr).nominal
    }

    /// Is the queue above its nominal quota in any of `frs`? Only a queue in
    /// a cohort can be.
    #[cfg(test)]
    pub fn is_borrowing<'a>(
        &self,
        cq: &str,
        frs: impl IntoIterator<Item = &'a FlavorResource>,
    ) -> bool {
        self.cohort_of(cq).is_some() && frs.into_iter().any(|fr| self.borrowing_with(cq, fr, 0))
    }

    /// Kueue's `FindHeightOfLowestSubtreeThatFits`: the height of the
    /// smallest subtree whose quota holds `val` more for the queue (0 within
    /// its nominal quota), and whether that subtree has a parent (quota lent
    /// out of it may then be reclaimed).
    pub fn lowest_subtree_that_fits(&self, cq: &str, fr: &FlavorResource, val: i64) -> (u8, bool) {
        let Some(i) = self.queue(cq) else {
            return (0, false);
        };
        let has_parent = self.node(i).parent.is_some();
        if !self.borrowing_at(i, fr, val) || !has_parent {
            return (0, has_parent);
        }
        let mut remaining = val - self.local_available(i, fr);
        let mut at = self.node(i).parent;
        let mut root = i;
        while let Some(n) = at {
            if !self.borrowing_at(n, fr, remaining) {
                return (self.node(n).height, self.node(n).parent.is_some());
            }
            remaining -= self.local_available(n, fr);
            root = n;
            at = self.node(n).parent;
        }
        (self.node(root).height, false)
    }

    /// Kueue's borrowing level (see [`Self::lowest_subtree_that_fits`]).
    pub fn borrow_level(&self, cq: &str, fr: &FlavorResource, val: i64) -> u8 {
        self.lowest_subtree_that_fits(cq, fr, val).0
    }

    /// Does `usage` fit under what the queue can take now?
    pub fn fits(&self, cq: &str, usage: &Usage) -> bool {
        usage.iter().all(|(fr, v)| *v <= self.available(cq, fr))
    }

    pub fn add(&mut self, cq: &str, usage: &Usage) {
        for (fr, v) in usage {
            self.change(cq, fr, *v);
        }
    }

    pub fn remove(&mut self, cq: &str, usage: &Usage) {
        for (fr, v) in usage {
            self.change(cq, fr, -*v);
        }
    }

    /// Changes a queue's usage, and its ancestors' by what goes past each
    /// one's local quota (`addUsage` / `removeUsage`).
    pub fn change(&mut self, cq: &str, fr: &FlavorResource, delta: i64) {
        let Some(i) = self.queue(cq) else {
            return;
        };
        if delta >= 0 {
            self.add_at(i, fr, delta);
        } else {
            self.remove_at(i, fr, -delta);
        }
    }

    fn add_at(&mut self, i: usize, fr: &FlavorResource, val: i64) {
        let local = self.local_available(i, fr);
        *self.usage[i].entry(fr.clone()).or_default() += val;
        if let Some(p) = self.node(i).parent {
            if val > local {
                self.add_at(p, fr, val - local);
            }
        }
    }

    fn remove_at(&mut self, i: usize, fr: &FlavorResource, val: i64) {
        let stored_in_parent = self.used(i, fr) - self.node(i).local_quota(fr);
        *self.usage[i].entry(fr.clone()).or_default() -= val;
        if stored_in_parent <= 0 {
            return;
        }
        if let Some(p) = self.node(i).parent {
            self.remove_at(p, fr, val.min(stored_in_parent));
        }
    }

    /// A Cohort's subtree quota and usage of `fr` (tests compare them with
    /// upstream's `resourceNode`).
    #[cfg(test)]
    fn cohort_node(&self, cohort: &str, fr: &FlavorResource) -> Option<(i64, i64)> {
        let i = *self.shape.cohorts.get(cohort)?;
        Some((self.node(i).subtree(fr), self.used(i, fr)))
    }

    /// The queue's Cohorts, parent first, root last; none while they loop.
    pub fn ancestor_names(&self, cq: &str) -> Vec<String> {
        match self.queue(cq) {
            Some(i) if !self.node(i).in_cycle => self
                .ancestors(NodeId(i))
                .into_iter()
                .map(|n| self.node(n.0).name.clone())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Every Cohort outside a cycle, as Kueue's cohort metrics report it.
    pub fn cohort_subtrees(&self) -> Vec<CohortSubtree> {
        let mut out = Vec::new();
        for (name, &i) in &self.shape.cohorts {
            let node = self.node(i);
            if node.in_cycle {
                continue;
            }
            let ancestors = self.ancestors(NodeId(i));
            let mut reservations = Usage::new();
            let mut queues = Vec::new();
            let mut stack = vec![i];
            while let Some(n) = stack.pop() {
                for &q in &self.node(n).child_queues {
                    queues.push(self.node(q).name.clone());
                    for (fr, v) in &self.usage[q] {
                        *reservations.entry(fr.clone()).or_default() += v;
                    }
                }
                stack.extend(&self.node(n).child_cohorts);
            }
            out.push(CohortSubtree {
                name: name.clone(),
                parent: node.parent.map(|p| self.node(p).name.clone()),
                root: ancestors
                    .last()
                    .map_or_else(|| name.clone(), |r| self.node(r.0).name.clone()),
                quota: node.subtree.clone(),
                reservations,
                queues,
            });
        }
        out
    }

    // ---- navigation for preemption ---------------------------------------

    /// The queue's ancestors, parent first.
    pub fn ancestors(&self, cq: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut at = self.node(cq.0).parent;
        while let Some(p) = at {
            out.push(NodeId(p));
            at = self.node(p).parent;
        }
        out
    }

    pub fn child_cohorts(&self, n: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.node(n.0).child_cohorts.iter().map(|&i| NodeId(i))
    }

    pub fn child_queues(&self, n: NodeId) -> impl Iterator<Item = (NodeId, &str)> + '_ {
        self.node(n.0)
            .child_queues
            .iter()
            .map(|&i| (NodeId(i), self.node(i).name.as_str()))
    }

    /// `IsWithinNominalInResources`: no usage above the subtree quota in
    /// any of `frs`.
    pub fn within_nominal(&self, n: NodeId, frs: &BTreeSet<FlavorResource>) -> bool {
        frs.iter()
            .all(|fr| self.used(n.0, fr) <= self.node(n.0).subtree(fr))
    }

    /// `QuantitiesFitInQuota`: do `requests` fit under the node's subtree
    /// quota, and what remains of them past its local unused quota?
    pub fn fits_in_subtree(&self, n: NodeId, requests: &Usage) -> (bool, Usage) {
        let mut fits = true;
        let mut remaining = Usage::new();
        for (fr, v) in requests {
            if self.node(n.0).subtree(fr) < self.used(n.0, fr) + v {
                fits = false;
            }
            remaining.insert(fr.clone(), (v - self.local_available(n.0, fr)).max(0));
        }
        (fits, remaining)
    }
}

/// Node-level reads for fair sharing (`super::fair_sharing`).
impl QuotaTree {
    pub(crate) fn fair(&self) -> Option<&super::fair_sharing::FairShape> {
        self.fair.as_deref()
    }

    pub(crate) fn set_fair(&mut self, fair: Option<Arc<super::fair_sharing::FairShape>>) {
        self.fair = fair;
    }

    pub(crate) fn node_count(&self) -> usize {
        self.shape.nodes.len()
    }

    pub(crate) fn node_name(&self, n: NodeId) -> &str {
        &self.node(n.0).name
    }

    pub(crate) fn node_is_queue(&self, n: NodeId) -> bool {
        self.node(n.0).is_queue
    }

    pub(crate) fn node_parent(&self, n: NodeId) -> Option<NodeId> {
        self.node(n.0).parent.map(NodeId)
    }

    pub(crate) fn cohort_id(&self, name: &str) -> Option<NodeId> {
        self.shape.cohorts.get(name).copied().map(NodeId)
    }

    /// Every node's index (`NodeId(i)` for `i` below [`Self::node_count`]).
    pub(crate) fn node_id(&self, i: usize) -> NodeId {
        NodeId(i)
    }

    pub(crate) fn node_index(n: NodeId) -> usize {
        n.0
    }

    /// `SubtreeQuota` (a ClusterQueue's: its nominal quota).
    pub(crate) fn node_subtree_quota(&self, n: NodeId) -> &Usage {
        &self.node(n.0).subtree
    }

    pub(crate) fn node_usage(&self, n: NodeId) -> &Usage {
        &self.usage[n.0]
    }

    /// `potentialAvailable` of any node.
    pub(crate) fn node_potential(&self, n: NodeId, fr: &FlavorResource) -> i64 {
        self.potential_at(n.0, fr)
    }

    pub(crate) fn node_root(&self, n: NodeId) -> NodeId {
        let mut at = n.0;
        while let Some(p) = self.node(at).parent {
            at = p;
        }
        NodeId(at)
    }
}

/// Sums the subtree quota from the leaves up (`updateCohortResourceNode`),
/// and each Cohort's height.
fn accumulate(nodes: &mut [Node], i: usize) {
    let mut subtree: Usage = nodes[i]
        .quotas
        .iter()
        .map(|(fr, l)| (fr.clone(), l.nominal))
        .collect();
    let cohorts = nodes[i].child_cohorts.clone();
    let queues = nodes[i].child_queues.clone();
    let mut height = u8::from(!cohorts.is_empty() || !queues.is_empty());
    for &c in cohorts.iter().chain(&queues) {
        accumulate(nodes, c);
        if !nodes[c].is_queue {
            height = height.max(nodes[c].height.saturating_add(1));
        }
        for (fr, q) in &nodes[c].subtree {
            let lent = q - nodes[c].local_quota(fr);
            let e = subtree.entry(fr.clone()).or_default();
            *e = e.saturating_add(lent);
        }
    }
    nodes[i].subtree = subtree;
    if !nodes[i].is_queue {
        nodes[i].height = height;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queueing::cluster_queue::{FlavorQuotas, ResourceGroup, ResourceQuota};

    fn cq(
        name: &str,
        cohort: Option<&str>,
        nominal: i64,
        bl: Option<i64>,
        ll: Option<i64>,
    ) -> ClusterQueue {
        ClusterQueue {
            name: name.into(),
            cohort: cohort.map(Into::into),
            queueing_strategy: Default::default(),
            namespace_selector: Some(Default::default()),
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".into()],
                flavors: vec![FlavorQuotas {
                    name: "f".into(),
                    resources: vec![ResourceQuota {
                        name: "cpu".into(),
                        nominal,
                        borrowing_limit: bl,
                        lending_limit: ll,
                    }],
                }],
            }],
            preemption: Default::default(),
            flavor_fungibility: Default::default(),
            stop_policy: Default::default(),
            admission_fair_sharing: false,
            terminating: false,
        }
    }

    fn fr() -> FlavorResource {
        FlavorResource::new("f", "cpu")
    }

    fn using(v: i64) -> Usage {
        [(fr(), v)].into()
    }

    #[test]
    fn without_a_cohort_only_nominal_counts() {
        let qs = [cq("a", None, 10, None, None)];
        let mut t = QuotaTree::build(&qs, []);
        assert_eq!(t.available("a", &fr()), 10);
        assert_eq!(t.potential_available("a", &fr()), 10);
        t.add("a", &using(4));
        assert_eq!(t.available("a", &fr()), 6);
        assert_eq!(t.borrow_level("a", &fr(), 100), 0);
    }

    #[test]
    fn borrowing_is_capped_by_the_limit_and_the_cohort() {
        let qs = [
            cq("a", Some("c"), 10, Some(5), None),
            cq("b", Some("c"), 10, None, None),
        ];
        let mut t = QuotaTree::build(&qs, []);
        assert_eq!(t.available("a", &fr()), 15);
        assert_eq!(t.potential_available("a", &fr()), 15);
        assert_eq!(t.available("b", &fr()), 20);
        t.add("b", &using(8));
        // The cohort has 12 left, a may take 15.
        assert_eq!(t.available("a", &fr()), 12);
        assert_eq!(t.borrow_level("a", &fr(), 10), 0);
        assert_eq!(t.borrow_level("a", &fr(), 11), 1);
        t.add("a", &using(12));
        assert_eq!(t.available("a", &fr()), 0);
        assert_eq!(t.available("b", &fr()), 0);
        assert!(t.is_borrowing("a", [&fr()]));
        assert!(!t.is_borrowing("b", [&fr()]));
    }

    #[test]
    fn lending_limit_keeps_a_local_part() {
        // a lends at most 4 of its 10; b may borrow only those 4.
        let qs = [
            cq("a", Some("c"), 10, None, Some(4)),
            cq("b", Some("c"), 0, None, None),
        ];
        let mut t = QuotaTree::build(&qs, []);
        assert_eq!(t.potential_available("b", &fr()), 4);
        assert_eq!(t.potential_available("a", &fr()), 10);
        t.add("b", &using(4));
        assert_eq!(t.available("b", &fr()), 0);
        // a still has its local 6, and the lent part is in use.
        assert_eq!(t.available("a", &fr()), 6);
        t.add("a", &using(5));
        assert_eq!(t.available("a", &fr()), 1);
        t.remove("b", &using(4));
        assert_eq!(t.available("a", &fr()), 5);
        // a's 5 fit in its local part, so all 4 lent units are free again.
        assert_eq!(t.available("b", &fr()), 4);
    }

    #[test]
    fn over_admission_shows_as_negative_availability() {
        let qs = [cq("a", None, 2, None, None)];
        let t = QuotaTree::build(&qs, [("a", &using(5))]);
        assert_eq!(t.available("a", &fr()), -3);
    }

    #[test]
    fn over_admission_in_the_cohort_counts_against_every_member() {
        // a keeps all 5 home (lends nothing); c's quota was cut to 0 under a
        // running 2, which the cohort (with nothing lendable) now owes. As in
        // Kueue, that debt comes off a's availability: 3, not 5.
        let qs = [
            cq("a", Some("c"), 5, None, Some(0)),
            cq("c", Some("c"), 0, None, None),
        ];
        let t = QuotaTree::build(&qs, [("c", &using(2))]);
        assert_eq!(t.available("a", &fr()), 3);
        assert_eq!(t.available("c", &fr()), -2);
    }

    // ---- hierarchical cohorts (upstream: pkg/cache/scheduler tests) -------

    fn co(name: &str, parent: Option<&str>, nominal: i64, ll: Option<i64>) -> Cohort {
        Cohort {
            name: name.into(),
            parent: parent.map(Into::into),
            resource_groups: cq(name, None, nominal, None, ll).resource_groups,
        }
    }

    fn tree(queues: &[ClusterQueue], cohorts: &[Cohort]) -> QuotaTree {
        QuotaTree::build_with_cohorts(queues, cohorts, [])
    }

    #[test]
    fn deleting_a_cohort_updates_its_ancestors_subtree_quota() {
        // TestDeleteCohortUpdatesAncestorSubtreeQuota/deleting grandchild
        // cohort updates all ancestors SubtreeQuota.
        let cohorts = [
            co("root", None, 10, None),
            co("mid", Some("root"), 5, None),
            co("leaf", Some("mid"), 3, None),
        ];
        let t = tree(&[], &cohorts);
        assert_eq!(t.cohort_node("root", &fr()).map(|n| n.0), Some(18));
        assert_eq!(t.cohort_node("mid", &fr()).map(|n| n.0), Some(8));
        let t = tree(&[], &cohorts[..2]);
        assert_eq!(t.cohort_node("root", &fr()).map(|n| n.0), Some(15));
        assert_eq!(t.cohort_node("mid", &fr()).map(|n| n.0), Some(5));
        // .../deleting cohort with children updates parent SubtreeQuota: the
        // queue's Cohort becomes implicit, a root of its own.
        let qs = [cq("cq", Some("mid"), 7, None, None)];
        let t = tree(&qs, &cohorts[..2]);
        assert_eq!(t.cohort_node("root", &fr()).map(|n| n.0), Some(22));
        let t = tree(&qs, &cohorts[..1]);
        assert_eq!(t.cohort_node("root", &fr()).map(|n| n.0), Some(10));
        assert_eq!(t.cohort_node("mid", &fr()).map(|n| n.0), Some(7));
    }

    #[test]
    fn cycles_are_cut_off_and_the_rest_of_the_tree_is_whole() {
        // TestCohortCycles: self cycle, simple cycle, and a queue leaving a
        // Cohort with a cycle for one without (which then counts its quota).
        let t = tree(
            &[cq("cq", Some("cycle"), 5, None, None)],
            &[
                co("cycle", Some("cycle"), 0, None),
                co("cohort", None, 10, None),
            ],
        );
        assert!(t.in_cycle("cq"));
        assert_eq!(t.cohort_node("cohort", &fr()).map(|n| n.0), Some(10));
        let t = tree(
            &[cq("cq", Some("cohort"), 5, None, None)],
            &[
                co("cycle", Some("cycle"), 0, None),
                co("cohort", None, 10, None),
            ],
        );
        assert!(!t.in_cycle("cq"));
        assert_eq!(t.cohort_node("cohort", &fr()).map(|n| n.0), Some(15));
        let abc = [
            co("cohort-a", Some("cohort-b"), 0, None),
            co("cohort-b", Some("cohort-c"), 0, None),
            co("cohort-c", Some("cohort-a"), 0, None),
        ];
        let t = tree(&[cq("cq", Some("cohort-b"), 1, None, None)], &abc);
        assert!(t.in_cycle("cq"));
        assert_eq!(t.available("cq", &fr()), 1, "cut off: only its own quota");
        // Deleting cohort-c breaks the cycle (c becomes an implicit root).
        let t = tree(&[cq("cq", Some("cohort-b"), 1, None, None)], &abc[..2]);
        assert!(!t.in_cycle("cq"));
        assert_eq!(t.path("cq"), "/cohort-c/cohort-b/cq");
    }

    #[test]
    fn a_cohort_switching_parents_moves_its_quota() {
        // TestCohortCycles/cohort switching cohorts updates both cohort trees.
        let roots = [co("root1", None, 0, None), co("root2", None, 0, None)];
        let mut cs = roots.to_vec();
        cs.push(co("cohort", Some("root1"), 10, None));
        let t = tree(&[], &cs);
        assert_eq!(t.cohort_node("root1", &fr()).map(|n| n.0), Some(10));
        assert_eq!(t.cohort_node("root2", &fr()).map(|n| n.0), Some(0));
        cs[2].parent = Some("root2".into());
        let t = tree(&[], &cs);
        assert_eq!(t.cohort_node("root1", &fr()).map(|n| n.0), Some(0));
        assert_eq!(t.cohort_node("root2", &fr()).map(|n| n.0), Some(10));
    }

    #[test]
    fn usage_bubbles_up_past_each_local_quota() {
        // resource_node.go addUsage/removeUsage: root(0) > mid(4, lending
        // limit 1) > a(2, lending limit 0); b(0) directly under root.
        let qs = [
            cq("a", Some("mid"), 2, None, Some(0)),
            cq("b", Some("root"), 0, None, None),
        ];
        let cs = [
            co("root", None, 0, None),
            co("mid", Some("root"), 4, Some(1)),
        ];
        let mut t = tree(&qs, &cs);
        // mid's subtree: its 4 (a lends none); it keeps 3, lends 1.
        assert_eq!(t.cohort_node("mid", &fr()), Some((4, 0)));
        assert_eq!(t.cohort_node("root", &fr()), Some((1, 0)));
        assert_eq!(t.available("a", &fr()), 6);
        assert_eq!(t.potential_available("a", &fr()), 6);
        assert_eq!(t.available("b", &fr()), 1);
        t.add("a", &using(2)); // within a's local quota: nothing moves up
        assert_eq!(t.cohort_node("mid", &fr()), Some((4, 0)));
        t.add("a", &using(3)); // 3 from mid's local part
        assert_eq!(t.cohort_node("mid", &fr()), Some((4, 3)));
        assert_eq!(t.cohort_node("root", &fr()), Some((1, 0)));
        t.add("a", &using(1)); // the last one is mid's lent unit
        assert_eq!(t.cohort_node("root", &fr()), Some((1, 1)));
        assert_eq!(t.available("b", &fr()), 0);
        // What it holds fits in mid's subtree; one more needs the root's.
        assert_eq!(t.lowest_subtree_that_fits("a", &fr(), 0), (1, true));
        assert_eq!(t.lowest_subtree_that_fits("a", &fr(), 1), (2, false));
        t.remove("a", &using(4));
        assert_eq!(t.cohort_node("mid", &fr()), Some((4, 0)));
        assert_eq!(t.cohort_node("root", &fr()), Some((1, 0)));
        assert_eq!(t.available("a", &fr()), 4);
    }

    #[test]
    fn subtrees_report_their_quota_reservations_and_roots() {
        // cohort_metrics.go collectCohortMetricPoints: SubtreeQuota, and
        // the usage of every ClusterQueue below, summed.
        let qs = [
            cq("a", Some("mid"), 2, None, Some(0)),
            cq("b", Some("root"), 3, None, None),
        ];
        let cs = [
            co("root", None, 1, None),
            co("mid", Some("root"), 4, Some(1)),
        ];
        let t = QuotaTree::build_with_cohorts(&qs, &cs, [("a", &using(5)), ("b", &using(1))]);
        let subtrees = t.cohort_subtrees();
        let find = |n: &str| subtrees.iter().find(|s| s.name == n).unwrap();
        let mid = find("mid");
        assert_eq!(
            (mid.parent.as_deref(), mid.root.as_str()),
            (Some("root"), "root")
        );
        assert_eq!((mid.quota[&fr()], mid.reservations[&fr()]), (4, 5));
        let root = find("root");
        // Its own 1, mid's lendable 1, b's 3.
        assert_eq!((root.parent.as_deref(), root.quota[&fr()]), (None, 5));
        assert_eq!(root.reservations[&fr()], 6);
        assert_eq!(
            t.ancestor_names("a"),
            vec!["mid".to_string(), "root".to_string()]
        );
        // A cycle reports nothing.
        let t = tree(&qs, &[co("mid", Some("mid"), 0, None)]);
        assert!(t.cohort_subtrees().iter().all(|s| s.name != "mid"));
        assert!(t.ancestor_names("a").is_empty());
    }

    #[test]
    fn borrowing_height_is_the_lowest_subtree_that_fits() {
        // FindHeightOfLowestSubtreeThatFits, on the tree of
        // TestSchedule/in a hierarchical cohort, workload borrowing less is
        // scheduled first: root > {guaranteed(4) > guaranteed-cq(0), be(0)}.
        let qs = [
            cq("guaranteed", Some("guaranteed"), 0, None, None),
            cq("best-effort", Some("root"), 0, None, None),
        ];
        let cs = [
            co("root", None, 0, None),
            co("guaranteed", Some("root"), 4, None),
        ];
        let t = tree(&qs, &cs);
        assert_eq!(
            t.lowest_subtree_that_fits("guaranteed", &fr(), 4),
            (1, true)
        );
        assert_eq!(
            t.lowest_subtree_that_fits("best-effort", &fr(), 4),
            (2, false)
        );
        // Within nominal: level 0.
        let flat = [cq("x", Some("c"), 4, None, None)];
        let t = tree(&flat, &[]);
        assert_eq!(t.lowest_subtree_that_fits("x", &fr(), 4), (0, true));
    }

    // ---- adding a queue in place (the bench's big trees) ----------------

    use proptest::prelude::*;

    /// What a reader of the tree sees of every queue and Cohort.
    fn observed(t: &QuotaTree, names: &[String]) -> Vec<String> {
        let mut out: Vec<String> = names
            .iter()
            .map(|q| {
                format!(
                    "{q}: avail {} pot {} path {} root {:?} cycle {} fits {:?} {:?} anc {:?}",
                    t.available(q, &fr()),
                    t.potential_available(q, &fr()),
                    t.path(q),
                    t.root_of(q),
                    t.in_cycle(q),
                    t.lowest_subtree_that_fits(q, &fr(), 1),
                    t.lowest_subtree_that_fits(q, &fr(), 9),
                    t.ancestor_names(q),
                )
            })
            .collect();
        let mut subtrees = t.cohort_subtrees();
        subtrees.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(subtrees.iter().map(|s| format!("{s:?}")));
        out
    }

    proptest! {
        /// Queues added one by one with `insert_queue` give the tree a
        /// build from all of them gives: the same quota, availability,
        /// heights, paths and subtrees, before and after usage is added.
        #[test]
        fn inserting_queues_matches_a_build(
            cohorts in proptest::collection::vec(
                (proptest::option::of(0usize..6), 0i64..6, proptest::option::of(0i64..4)),
                0..5,
            ),
            queues in proptest::collection::vec(
                (proptest::option::of(0usize..7), 0i64..6, proptest::option::of(0i64..4),
                 proptest::option::of(0i64..4)),
                1..8,
            ),
            before in 0usize..8,
            usage in proptest::collection::vec((0usize..8, 1i64..4), 0..6),
        ) {
            // Parents may be missing (implicit Cohorts) or loop.
            let cs: Vec<Cohort> = cohorts
                .iter()
                .enumerate()
                .map(|(i, (p, n, ll))| co(&format!("c{i}"), p.map(|p| format!("c{p}")).as_deref(), *n, *ll))
                .collect();
            let qs: Vec<ClusterQueue> = queues
                .iter()
                .enumerate()
                .map(|(i, (c, n, bl, ll))| {
                    cq(&format!("q{i}"), c.map(|c| format!("c{c}")).as_deref(), *n, *bl, *ll)
                })
                .collect();
            let names: Vec<String> = qs.iter().map(|q| q.name.clone()).collect();
            let mut sorted = qs.clone();
            sorted.sort_by(|a, b| a.name.cmp(&b.name));
            let mut built = QuotaTree::build_with_cohorts(&sorted, &cs, []);
            let before = before.min(qs.len());
            let mut grown = QuotaTree::build_with_cohorts(&qs[..before], &cs, []);
            // The rest in reverse, so insertion order differs from name order.
            for q in qs[before..].iter().rev() {
                prop_assert!(grown.insert_queue(q));
            }
            prop_assert!(!grown.insert_queue(&qs[0]));
            prop_assert_eq!(observed(&grown, &names), observed(&built, &names));
            for (q, v) in usage {
                let q = &names[q % names.len()];
                built.add(q, &using(v));
                grown.add(q, &using(v));
            }
            prop_assert_eq!(observed(&grown, &names), observed(&built, &names));
        }
    }
}
