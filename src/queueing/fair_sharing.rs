//! Fair sharing (Kueue's `fairSharing`, KEP 1714): the dominant resource
//! share of ClusterQueues and Cohorts (`pkg/cache/scheduler/fair_sharing.go`),
//! the cycle's order across ClusterQueues by a tournament up the cohort tree
//! (`pkg/scheduler/fair_sharing_iterator.go`), and the choice of whom to
//! preempt by the preemption strategies (`pkg/scheduler/preemption`,
//! `fairsharing/*`), with Kueue's default feature gates
//! (`FairSharingPrioritizeNonBorrowing`, `FairSharingPreemptWithinNominal`,
//! `PrioritySortingWithinCohort` on; `PrioritizePreemptorWorkloads` off).
//!
//! A node's share is what it uses above its subtree quota, per resource
//! (summed over flavors), over what its parent could lend of that resource
//! (`potentialAvailable` summed over flavors), times 1000, the largest such
//! ratio, divided by the node's weight. A node not borrowing has share 0; a
//! borrowing node of weight 0 has an infinite share.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use super::cluster_queue::PreemptionPolicy;
use super::preemption::{allowed, fits, order, uses_any, Holder, Holdings, Preemptor, Target};
use super::quota::{FlavorResource, NodeId, QuotaTree, Usage};
use super::scheduler::PreemptedReason;

/// `preemptionStrategies` entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Rule S2-a: the preemptor's share after admission is at most the
    /// target's after the preemption.
    LessThanOrEqualToFinalShare,
    /// Rule S2-b: the preemptor's share after admission is below the
    /// target's before the preemption.
    LessThanInitialShare,
}

impl Strategy {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "LessThanOrEqualToFinalShare" => Some(Self::LessThanOrEqualToFinalShare),
            "LessThanInitialShare" => Some(Self::LessThanInitialShare),
            _ => None,
        }
    }
}

/// The Configuration's `fairSharing` (present: enabled) and the weights of
/// ClusterQueues and Cohorts (`spec.fairSharing.weight`; absent: 1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FairSharing {
    /// Empty: Kueue's default, `[LessThanOrEqualToFinalShare,
    /// LessThanInitialShare]`.
    pub preemption_strategies: Vec<Strategy>,
    pub cluster_queue_weights: BTreeMap<String, f64>,
    pub cohort_weights: BTreeMap<String, f64>,
}

/// What a quota tree carries while fair sharing is on: the strategies and
/// each node's weight.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FairShape {
    strategies: Vec<Strategy>,
    weights: Vec<f64>,
}

impl FairShape {
    pub(crate) fn build(tree: &QuotaTree, fs: &FairSharing) -> Arc<Self> {
        let weights = (0..tree.node_count())
            .map(|i| {
                let n = tree.node_id(i);
                let name = tree.node_name(n);
                let w = if tree.node_is_queue(n) {
                    fs.cluster_queue_weights.get(name)
                } else {
                    fs.cohort_weights.get(name)
                };
                w.copied().unwrap_or(DEFAULT_WEIGHT)
            })
            .collect();
        let strategies = if fs.preemption_strategies.is_empty() {
            vec![
                Strategy::LessThanOrEqualToFinalShare,
                Strategy::LessThanInitialShare,
            ]
        } else {
            fs.preemption_strategies.clone()
        };
        Arc::new(FairShape {
            strategies,
            weights,
        })
    }

    fn weight(&self, n: NodeId) -> f64 {
        self.weights
            .get(QuotaTree::node_index(n))
            .copied()
            .unwrap_or(DEFAULT_WEIGHT)
    }
}

const DEFAULT_WEIGHT: f64 = 1.0;

/// A node's dominant resource share (Kueue's `DRS`).
#[derive(Debug, Clone, PartialEq)]
pub struct Drs {
    weight: f64,
    ratio: f64,
    dominant: String,
    borrowing: bool,
    borrowed: Vec<FlavorResource>,
}

impl Drs {
    /// `NegativeDRS`: below every real share.
    fn negative() -> Self {
        Drs {
            weight: DEFAULT_WEIGHT,
            ratio: -1.0,
            dominant: String::new(),
            borrowing: false,
            borrowed: Vec::new(),
        }
    }

    pub fn is_zero(&self) -> bool {
        self.ratio == 0.0
    }

    pub fn is_borrowing(&self) -> bool {
        self.borrowing
    }

    /// `IsBorrowingOn`: borrowing on a flavor/resource `requested` asks for.
    fn is_borrowing_on(&self, requested: &Usage) -> bool {
        self.borrowed
            .iter()
            .any(|fr| requested.get(fr).is_some_and(|v| *v > 0))
    }

    fn zero_weight_borrows(&self) -> bool {
        self.weight == 0.0 && !self.is_zero()
    }

    /// `PreciseWeightedShare`.
    pub fn precise(&self) -> f64 {
        if self.is_zero() {
            0.0
        } else if self.weight == 0.0 {
            f64::INFINITY
        } else {
            self.ratio / self.weight
        }
    }

    /// `status.fairSharing.weightedShare` (the controllers'
    /// `WeightedShare`): the precise share rounded up; infinite is
    /// `MaxInt64`.
    pub fn weighted_share(&self) -> i64 {
        let p = self.precise();
        if p == f64::INFINITY {
            i64::MAX
        } else {
            p.ceil() as i64
        }
    }

    /// The resource that gives the share.
    pub fn dominant_resource(&self) -> &str {
        &self.dominant
    }
}

/// `CompareDRS`: lower is preferred for admission, higher for preemption.
pub fn compare(a: &Drs, b: &Drs) -> Ordering {
    let cmp = |x: f64, y: f64| x.partial_cmp(&y).unwrap_or(Ordering::Equal);
    match (a.zero_weight_borrows(), b.zero_weight_borrows()) {
        (true, true) => cmp(a.ratio, b.ratio),
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => cmp(a.precise(), b.precise()),
    }
}

/// `dominantResourceShare(node, nil)` on the tree's current usage, with the
/// node's weight from `fair` (1 without).
pub(crate) fn share(tree: &QuotaTree, n: NodeId) -> Drs {
    let weight = tree.fair().map_or(DEFAULT_WEIGHT, |f| f.weight(n));
    let mut drs = Drs {
        weight,
        ratio: 0.0,
        dominant: String::new(),
        borrowing: false,
        borrowed: Vec::new(),
    };
    let Some(parent) = tree.node_parent(n) else {
        return drs;
    };
    let usage = tree.node_usage(n);
    let mut borrowing: BTreeMap<&str, i64> = BTreeMap::new();
    for (fr, quota) in tree.node_subtree_quota(n) {
        let over = usage.get(fr).copied().unwrap_or(0) - quota;
        if over > 0 {
            *borrowing.entry(fr.resource.as_str()).or_default() += over;
            drs.borrowed.push(fr.clone());
        }
    }
    if borrowing.is_empty() {
        return drs;
    }
    drs.borrowing = true;
    // `calculateLendable`: the parent's potential, per resource, over every
    // flavor/resource of the root.
    let root = tree.node_root(parent);
    let mut lendable: BTreeMap<&str, i64> = BTreeMap::new();
    for fr in tree.node_subtree_quota(root).keys() {
        *lendable.entry(fr.resource.as_str()).or_default() += tree.node_potential(parent, fr);
    }
    for (resource, b) in borrowing {
        let lr = lendable.get(resource).copied().unwrap_or(0);
        if lr > 0 {
            let ratio = b as f64 * 1000.0 / lr as f64;
            // Ties go to the alphabetically first resource.
            if ratio > drs.ratio || (ratio == drs.ratio && resource < drs.dominant.as_str()) {
                drs.ratio = ratio;
                drs.dominant = resource.to_string();
            }
        }
    }
    drs
}

/// The share of a ClusterQueue or Cohort by name (a ClusterQueue first).
pub(crate) fn share_of(
    tree: &QuotaTree,
    cluster_queue: Option<&str>,
    cohort: Option<&str>,
) -> Option<Drs> {
    let n = match (cluster_queue, cohort) {
        (Some(cq), _) => tree.queue_id(cq)?,
        (None, Some(c)) => tree.cohort_id(c)?,
        (None, None) => return None,
    };
    Some(share(tree, n))
}

/// `canPreemptWhileBorrowing`'s fair-sharing half: with fair sharing on, a
/// queue that may reclaim within its cohort tries preemption even when the
/// request needs borrowing.
pub(crate) fn preempts_while_borrowing(cq: &super::ClusterQueue, tree: &QuotaTree) -> bool {
    tree.fair().is_some() && cq.preemption.reclaim_within_cohort != PreemptionPolicy::Never
}

// ---- the cycle's order ---------------------------------------------------

/// A ClusterQueue's head in the tournament.
#[derive(Debug, Clone)]
pub(crate) struct Contender {
    pub cluster_queue: String,
    /// What its assignment takes (empty without one).
    pub usage: Usage,
    pub priority: i32,
    /// Queue order timestamp (FIFO).
    pub timestamp: i64,
}

/// A Cohort's child queues' heads (queue node, contender), best first, and
/// how many of them have left the round.
type QueueOrder = (Vec<(NodeId, usize)>, usize);

/// `fairSharingIterator` over the heads of one cohort tree, for a whole
/// cycle: each [`Round::pop`] is Kueue's tournament from the root down,
/// where each Cohort's children compare their shares after their nominee's
/// admission. Processing the popped head changes usage only on its own
/// queue's path, so a pop keeps every winner and share off that path and
/// works out again only those on it (Kueue recomputes them all: the same
/// order at a fraction of the cost when the tree is wide).
pub(crate) struct Round {
    contenders: Vec<Contender>,
    /// Each contender's queue node (`None`: not in the tree, never wins).
    nodes: Vec<Option<NodeId>>,
    /// By node: the contender heading that queue while it is in the round.
    heading: Vec<Option<usize>>,
    /// By node: a Cohort's winner once worked out (`Some(None)`: nobody).
    winners: Vec<Option<Option<usize>>>,
    /// By node: its share with one contender's usage added.
    shares: Vec<Option<(usize, Drs)>>,
    /// By Cohort node: its child queues' heads in order. A queue's share
    /// changes only when its own head is processed, and then it leaves:
    /// the order, worked out once, holds for the whole round (a wide
    /// Cohort is not compared again child by child on every pop).
    queue_order: Vec<Option<QueueOrder>>,
    left: Vec<bool>,
    root: Option<NodeId>,
}

impl Round {
    /// `contenders` all belong to one cohort tree of `tree`.
    pub(crate) fn new(tree: &QuotaTree, contenders: Vec<Contender>) -> Self {
        let n = tree.node_count();
        let nodes: Vec<Option<NodeId>> = contenders
            .iter()
            .map(|c| tree.queue_id(&c.cluster_queue))
            .collect();
        let mut heading = vec![None; n];
        for (i, id) in nodes.iter().enumerate() {
            if let Some(id) = id {
                heading[QuotaTree::node_index(*id)] = Some(i);
            }
        }
        // As Kueue's: the tree of the first head; a queue outside any
        // cohort competes with no one.
        let root = nodes
            .iter()
            .flatten()
            .next()
            .and_then(|id| tree.node_parent(*id))
            .map(|p| tree.node_root(p));
        Round {
            left: vec![true; contenders.len()],
            contenders,
            nodes,
            heading,
            winners: vec![None; n],
            shares: vec![None; n],
            queue_order: vec![None; n],
            root,
        }
    }

    /// The next contender to process (its index in the round); it leaves
    /// the round. `tree` is left as found.
    pub(crate) fn pop(&mut self, tree: &mut QuotaTree) -> Option<usize> {
        let won = match self.root {
            Some(root) => self.winner(tree, root),
            None => None,
        };
        let next = won.or_else(|| self.left.iter().position(|l| *l))?;
        self.left[next] = false;
        if let Some(id) = self.nodes[next] {
            let q = QuotaTree::node_index(id);
            if self.heading[q] == Some(next) {
                self.heading[q] = None;
            }
            // Its admission changes usage on this path only.
            let mut at = Some(id);
            while let Some(n) = at {
                let i = QuotaTree::node_index(n);
                self.winners[i] = None;
                self.shares[i] = None;
                at = tree.node_parent(n);
            }
        }
        Some(next)
    }

    fn winner(&mut self, tree: &mut QuotaTree, cohort: NodeId) -> Option<usize> {
        if let Some(w) = self.winners[QuotaTree::node_index(cohort)] {
            return w;
        }
        let mut candidates: Vec<(NodeId, usize)> = Vec::new();
        let cohorts: Vec<NodeId> = tree.child_cohorts(cohort).collect();
        for c in cohorts {
            if let Some(w) = self.winner(tree, c) {
                candidates.push((c, w));
            }
        }
        candidates.extend(self.best_queue_child(tree, cohort));
        let mut best = candidates.first().copied();
        for &current in candidates.iter().skip(1) {
            if let Some(b) = best {
                self.share(tree, current);
                self.share(tree, b);
                if self.less(current, b) {
                    best = Some(current);
                }
            }
        }
        let w = best.map(|(_, i)| i);
        self.winners[QuotaTree::node_index(cohort)] = Some(w);
        w
    }

    /// The best head among `cohort`'s child queues still in the round.
    fn best_queue_child(
        &mut self,
        tree: &mut QuotaTree,
        cohort: NodeId,
    ) -> Option<(NodeId, usize)> {
        let slot = QuotaTree::node_index(cohort);
        if self.queue_order[slot].is_none() {
            let heads: Vec<(NodeId, usize)> = tree
                .child_queues(cohort)
                .filter_map(|(q, _)| self.heading[QuotaTree::node_index(q)].map(|i| (q, i)))
                .collect();
            for &h in &heads {
                self.share(tree, h);
            }
            let mut order = heads;
            order.sort_by(|&a, &b| {
                if self.less(a, b) {
                    Ordering::Less
                } else if self.less(b, a) {
                    Ordering::Greater
                } else {
                    Ordering::Equal
                }
            });
            self.queue_order[slot] = Some((order, 0));
        }
        let (order, gone) = self.queue_order[slot].as_mut()?;
        while let Some(&(q, i)) = order.get(*gone) {
            if self.heading[QuotaTree::node_index(q)] == Some(i) {
                return Some((q, i));
            }
            *gone += 1;
        }
        None
    }

    /// Makes sure `shares` holds `node`'s share with contender `i` admitted.
    fn share(&mut self, tree: &mut QuotaTree, (node, i): (NodeId, usize)) {
        let slot = QuotaTree::node_index(node);
        if matches!(&self.shares[slot], Some((j, _)) if *j == i) {
            return;
        }
        let c = &self.contenders[i];
        tree.add(&c.cluster_queue, &c.usage);
        let d = share(tree, node);
        tree.remove(&c.cluster_queue, &c.usage);
        self.shares[slot] = Some((i, d));
    }

    fn less(&self, (na, a): (NodeId, usize), (nb, b): (NodeId, usize)) -> bool {
        let drs = |n: NodeId| self.shares[QuotaTree::node_index(n)].as_ref().map(|s| &s.1);
        let negative = Drs::negative();
        less(
            (drs(na).unwrap_or(&negative), &self.contenders[a]),
            (drs(nb).unwrap_or(&negative), &self.contenders[b]),
        )
    }
}

/// `fairSharingIterator.pop` for contenders of one cohort tree, worked out
/// from nothing: the index of the one to process next. The reference
/// [`Round`] is checked against. `tree` is left as found.
#[cfg(test)]
pub(crate) fn next_contender(tree: &mut QuotaTree, contenders: &[Contender]) -> Option<usize> {
    let first = contenders.first()?;
    let cq = tree.queue_id(&first.cluster_queue)?;
    let Some(parent) = tree.node_parent(cq) else {
        return Some(0);
    };
    let root = tree.node_root(parent);
    // `computeDRS`: for every contender, the share of each node on its path
    // after admitting it, keyed by the Cohort above that node.
    let mut drs: BTreeMap<(NodeId, usize), Drs> = BTreeMap::new();
    for (i, c) in contenders.iter().enumerate() {
        let Some(id) = tree.queue_id(&c.cluster_queue) else {
            continue;
        };
        tree.add(&c.cluster_queue, &c.usage);
        let mut below = share(tree, id);
        let mut at = tree.node_parent(id);
        while let Some(a) = at {
            let next = share(tree, a);
            drs.insert((a, i), below);
            below = next;
            at = tree.node_parent(a);
        }
        tree.remove(&c.cluster_queue, &c.usage);
    }
    let by_queue: BTreeMap<&str, usize> = contenders
        .iter()
        .enumerate()
        .map(|(i, c)| (c.cluster_queue.as_str(), i))
        .collect();
    tournament(tree, root, contenders, &by_queue, &drs)
}

#[cfg(test)]
fn tournament(
    tree: &QuotaTree,
    cohort: NodeId,
    contenders: &[Contender],
    by_queue: &BTreeMap<&str, usize>,
    drs: &BTreeMap<(NodeId, usize), Drs>,
) -> Option<usize> {
    let mut candidates: Vec<usize> = tree
        .child_cohorts(cohort)
        .filter_map(|c| tournament(tree, c, contenders, by_queue, drs))
        .collect();
    candidates.extend(
        tree.child_queues(cohort)
            .filter_map(|(_, name)| by_queue.get(name).copied()),
    );
    let negative = Drs::negative();
    let at = |i: usize| (drs.get(&(cohort, i)).unwrap_or(&negative), &contenders[i]);
    let mut best = *candidates.first()?;
    for &current in &candidates[1..] {
        if less(at(current), at(best)) {
            best = current;
        }
    }
    Some(best)
}

/// `entryComparer.less`: two nominees of one Cohort, each with its share
/// (of the Cohort's child on its path) after its admission.
fn less((a_drs, ca): (&Drs, &Contender), (b_drs, cb): (&Drs, &Contender)) -> bool {
    // FairSharingPrioritizeNonBorrowing: not borrowing from the parent on
    // what it asks for wins.
    let a_borrows = a_drs.is_borrowing_on(&ca.usage);
    let b_borrows = b_drs.is_borrowing_on(&cb.usage);
    if a_borrows != b_borrows {
        return !a_borrows;
    }
    match compare(a_drs, b_drs) {
        Ordering::Less => return true,
        Ordering::Greater => return false,
        Ordering::Equal => {}
    }
    // PrioritySortingWithinCohort.
    if ca.priority != cb.priority {
        return ca.priority > cb.priority;
    }
    if ca.timestamp != cb.timestamp {
        return ca.timestamp < cb.timestamp;
    }
    // Kueue leaves full ties to map order; a name keeps this deterministic.
    ca.cluster_queue < cb.cluster_queue
}

// ---- preemption ------------------------------------------------------------

/// A candidate for preemption, as [`preemption_targets`] needs it.
#[derive(Debug, Clone)]
pub(crate) struct Victim<'a> {
    pub cluster_queue: &'a str,
    pub usage: &'a Usage,
}

/// `TargetClusterQueueOrdering`: which ClusterQueue to take the next
/// candidate from, descending from the root into the child with the highest
/// share, pruning the nodes that will yield no more.
struct TargetOrdering {
    preemptor: NodeId,
    preemptor_ancestors: BTreeSet<NodeId>,
    /// Candidate indices by queue, in candidate order.
    queued: BTreeMap<NodeId, VecDeque<usize>>,
    pruned_queues: BTreeSet<NodeId>,
    pruned_cohorts: BTreeSet<NodeId>,
}

impl TargetOrdering {
    fn new(
        tree: &QuotaTree,
        preemptor: NodeId,
        candidates: &[usize],
        victims: &[Victim<'_>],
    ) -> Self {
        let mut queued: BTreeMap<NodeId, VecDeque<usize>> = BTreeMap::new();
        for &i in candidates {
            if let Some(q) = tree.queue_id(victims[i].cluster_queue) {
                queued.entry(q).or_default().push_back(i);
            }
        }
        TargetOrdering {
            preemptor,
            preemptor_ancestors: tree.ancestors(preemptor).into_iter().collect(),
            queued,
            pruned_queues: BTreeSet::new(),
            pruned_cohorts: BTreeSet::new(),
        }
    }

    fn has_workload(&self, q: NodeId) -> bool {
        self.queued.get(&q).is_some_and(|v| !v.is_empty())
    }

    fn pop(&mut self, q: NodeId) -> Option<usize> {
        self.queued.get_mut(&q)?.pop_front()
    }

    fn drop_queue(&mut self, q: NodeId) {
        self.pruned_queues.insert(q);
    }

    /// The next target ClusterQueue, or `None` when there is none left.
    fn next(
        &mut self,
        tree: &QuotaTree,
        head_order: &dyn Fn(usize, usize) -> Ordering,
    ) -> Option<NodeId> {
        let Some(parent) = tree.node_parent(self.preemptor) else {
            let p = self.preemptor;
            return (!self.pruned_queues.contains(&p) && self.has_workload(p)).then_some(p);
        };
        let root = tree.node_root(parent);
        while !self.pruned_cohorts.contains(&root) {
            if let Some(q) = self.next_target(tree, root, head_order) {
                return Some(q);
            }
        }
        None
    }

    fn next_target(
        &mut self,
        tree: &QuotaTree,
        cohort: NodeId,
        head_order: &dyn Fn(usize, usize) -> Ordering,
    ) -> Option<NodeId> {
        let mut highest_cq: Option<NodeId> = None;
        let mut highest_cq_drs = Drs::negative();
        let queues: Vec<NodeId> = tree.child_queues(cohort).map(|(q, _)| q).collect();
        for q in queues {
            if self.pruned_queues.contains(&q) {
                continue;
            }
            let drs = share(tree, q);
            if (!drs.is_borrowing() && q != self.preemptor) || !self.has_workload(q) {
                self.pruned_queues.insert(q);
                continue;
            }
            match compare(&drs, &highest_cq_drs) {
                Ordering::Equal => {
                    // A tie: the queue whose next candidate goes first.
                    let new_head = self.queued.get(&q).and_then(|v| v.front());
                    let cur_head = highest_cq
                        .and_then(|h| self.queued.get(&h))
                        .and_then(|v| v.front());
                    if let (Some(new_head), Some(cur_head)) = (new_head, cur_head) {
                        if head_order(*new_head, *cur_head) == Ordering::Less {
                            highest_cq = Some(q);
                        }
                    }
                }
                Ordering::Greater => {
                    highest_cq_drs = drs;
                    highest_cq = Some(q);
                }
                Ordering::Less => {}
            }
        }
        let mut highest_cohort: Option<NodeId> = None;
        let mut highest_cohort_drs = Drs::negative();
        let cohorts: Vec<NodeId> = tree.child_cohorts(cohort).collect();
        for c in cohorts {
            if self.pruned_cohorts.contains(&c) {
                continue;
            }
            let drs = share(tree, c);
            if !drs.is_borrowing() && !self.preemptor_ancestors.contains(&c) {
                self.pruned_cohorts.insert(c);
            } else if compare(&drs, &highest_cohort_drs) != Ordering::Less {
                highest_cohort_drs = drs;
                highest_cohort = Some(c);
            }
        }
        match (highest_cohort, highest_cq) {
            (None, None) => {
                self.pruned_cohorts.insert(cohort);
                None
            }
            (Some(c), _) if compare(&highest_cohort_drs, &highest_cq_drs) != Ordering::Less => {
                self.next_target(tree, c, head_order)
            }
            (_, q) => q,
        }
    }
}

/// The node below the least common ancestor of the preemptor and `target`
/// on each one's path (`getAlmostLCAs`).
fn almost_lcas(tree: &QuotaTree, preemptor: NodeId, target: NodeId) -> Option<(NodeId, NodeId)> {
    let preemptor_ancestors = tree.ancestors(preemptor);
    let lca = tree
        .ancestors(target)
        .into_iter()
        .find(|a| preemptor_ancestors.contains(a))?;
    let almost = |from: NodeId| {
        let mut below = from;
        for a in tree.ancestors(from) {
            if a == lca {
                return below;
            }
            below = a;
        }
        below
    };
    Some((almost(preemptor), almost(target)))
}

/// `ComputeShares`: the preemptor's almost-LCA share (with the incoming
/// workload already added) and the target's.
fn shares(tree: &QuotaTree, preemptor: NodeId, target: NodeId) -> Option<(Drs, Drs)> {
    let (p, t) = almost_lcas(tree, preemptor, target)?;
    Some((share(tree, p), share(tree, t)))
}

fn passes(strategy: Strategy, preemptor_new: &Drs, target_old: &Drs, target_new: &Drs) -> bool {
    match strategy {
        Strategy::LessThanOrEqualToFinalShare => {
            compare(preemptor_new, target_new) != Ordering::Greater
        }
        Strategy::LessThanInitialShare => compare(preemptor_new, target_old) == Ordering::Less,
    }
}

/// `fairPreemptions`: which of `victims` (already filtered by the preemption
/// policies and sorted in `CandidatesOrdering`) to evict so that `usage` fits
/// in `own_cq`, each with its reason; empty when the strategies find no set.
/// `fits` answers whether the preemptor's usage fits in the tree as it is
/// (borrowing allowed), with the victims given (indices) gone: the quota
/// is the tree's, the nodes are the caller's (TAS). `tree` is left as found.
pub(crate) fn preemption_targets(
    tree: &mut QuotaTree,
    own_cq: &str,
    usage: &Usage,
    need: &BTreeSet<FlavorResource>,
    victims: &[Victim<'_>],
    head_order: &dyn Fn(usize, usize) -> Ordering,
    fits: &dyn Fn(&QuotaTree, &[usize]) -> bool,
) -> Vec<(usize, PreemptedReason)> {
    let Some(preemptor) = tree.queue_id(own_cq) else {
        return Vec::new();
    };
    if victims.is_empty() {
        return Vec::new();
    }
    let strategies = tree
        .fair()
        .map(|f| f.strategies.clone())
        .unwrap_or_default();
    let Some(&first) = strategies.first() else {
        return Vec::new();
    };
    // Shares include the incoming workload.
    tree.add(own_cq, usage);
    let fits_fs = |tree: &mut QuotaTree, targets: &[(usize, PreemptedReason)]| {
        let removed: Vec<usize> = targets.iter().map(|(i, _)| *i).collect();
        tree.remove(own_cq, usage);
        let ok = fits(tree, &removed);
        tree.add(own_cq, usage);
        ok
    };
    let all: Vec<usize> = (0..victims.len()).collect();
    let mut targets: Vec<(usize, PreemptedReason)> = Vec::new();
    let mut retry: Vec<usize> = Vec::new();
    let mut found = false;
    // FairSharingPreemptWithinNominal: a preemptor within its nominal quota
    // on the contested resources reclaims whatever the shares.
    let within_nominal = need.iter().all(|fr| !tree.borrowing_with(own_cq, fr, 0));
    let mut ordering = TargetOrdering::new(tree, preemptor, &all, victims);
    'first: while let Some(q) = ordering.next(tree, head_order) {
        if q == preemptor || within_nominal {
            let Some(i) = ordering.pop(q) else { continue };
            tree.remove(victims[i].cluster_queue, victims[i].usage);
            let why = if q == preemptor {
                PreemptedReason::InClusterQueue
            } else {
                PreemptedReason::InCohortReclamation
            };
            targets.push((i, why));
            if fits_fs(tree, &targets) {
                found = true;
                break;
            }
            continue;
        }
        let Some((preemptor_new, target_old)) = shares(tree, preemptor, q) else {
            ordering.drop_queue(q);
            continue;
        };
        if preemptor_new.precise() == f64::INFINITY && target_old.precise() != f64::INFINITY {
            // No candidate here can pass either strategy.
            while let Some(i) = ordering.pop(q) {
                retry.push(i);
            }
            continue;
        }
        while let Some(i) = ordering.pop(q) {
            let v = &victims[i];
            tree.remove(v.cluster_queue, v.usage);
            let target_new = almost_lcas(tree, preemptor, q).map(|(_, t)| share(tree, t));
            tree.add(v.cluster_queue, v.usage);
            let passed = target_new
                .as_ref()
                .is_some_and(|tn| passes(first, &preemptor_new, &target_old, tn));
            if passed {
                tree.remove(v.cluster_queue, v.usage);
                targets.push((i, PreemptedReason::InCohortFairSharing));
                if fits_fs(tree, &targets) {
                    found = true;
                    break 'first;
                }
                // The shares changed: maybe another queue is next.
                break;
            }
            retry.push(i);
        }
    }
    if !found && strategies.len() > 1 {
        // Rule S2-b on what the first strategy left.
        let mut ordering = TargetOrdering::new(tree, preemptor, &retry, victims);
        while let Some(q) = ordering.next(tree, head_order) {
            let Some((preemptor_new, target_old)) = shares(tree, preemptor, q) else {
                ordering.drop_queue(q);
                continue;
            };
            let passed = compare(&preemptor_new, &target_old) == Ordering::Less;
            if let Some(i) = ordering.pop(q) {
                if passed {
                    tree.remove(victims[i].cluster_queue, victims[i].usage);
                    targets.push((i, PreemptedReason::InCohortFairSharing));
                    if fits_fs(tree, &targets) {
                        found = true;
                        break;
                    }
                }
            }
            ordering.drop_queue(q);
        }
    }
    tree.remove(own_cq, usage);
    if found {
        // `fillBackWorkloads`: put back, newest removal first (the last one
        // stays), every target the preemptor can do without.
        for i in (0..targets.len().saturating_sub(1)).rev() {
            let v = &victims[targets[i].0];
            tree.add(v.cluster_queue, v.usage);
            let others: Vec<usize> = targets
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != i)
                .map(|(_, (j, _))| *j)
                .collect();
            if fits(tree, &others) {
                targets.swap_remove(i);
            } else {
                tree.remove(v.cluster_queue, v.usage);
            }
        }
    }
    for (i, _) in &targets {
        tree.add(victims[*i].cluster_queue, victims[*i].usage);
    }
    if found {
        targets
    } else {
        Vec::new()
    }
}

/// `getTargets` with fair sharing on: `findCandidates` (the preemptor's
/// own lower-priority workloads by `withinClusterQueue`; by
/// `reclaimWithinCohort`, those of every borrowing ClusterQueue of its cohort
/// tree), in `CandidatesOrdering`, through [`preemption_targets`].
///
/// `tas_fits` is the topology half of Kueue's `workloadFits`: does the
/// preemptor fit the nodes with the given workloads gone?
pub(crate) fn targets(
    tree: &mut QuotaTree,
    holdings: &dyn Holdings,
    p: &Preemptor<'_>,
    usage: &Usage,
    need: &BTreeSet<FlavorResource>,
    tas_fits: &crate::queueing::preemption::TasFit<'_>,
) -> Vec<Target> {
    let cq = p.cq.name.as_str();
    let mut candidates: Vec<Holder<'_>> = Vec::new();
    let within = p.cq.preemption.within_cluster_queue;
    if within != PreemptionPolicy::Never {
        candidates.extend(
            holdings
                .holders(cq)
                .into_iter()
                .filter(|h| h.key != p.key && uses_any(h.usage, need) && allowed(within, p, h)),
        );
    }
    let reclaim = p.cq.preemption.reclaim_within_cohort;
    if reclaim != PreemptionPolicy::Never {
        if let Some(root) = tree.root_of(cq).map(str::to_string) {
            for peer in tree.tree_members(&root) {
                let borrowing = need.iter().any(|fr| tree.borrowing_with(&peer, fr, 0));
                if peer == cq || !borrowing {
                    continue;
                }
                candidates.extend(
                    holdings
                        .holders(&peer)
                        .into_iter()
                        .filter(|h| uses_any(h.usage, need) && allowed(reclaim, p, h)),
                );
            }
        }
    }
    candidates.sort_by(|a, b| order(cq, a, b));
    let victims: Vec<Victim<'_>> = candidates
        .iter()
        .map(|h| Victim {
            cluster_queue: h.cluster_queue,
            usage: h.usage,
        })
        .collect();
    let head_order = |a: usize, b: usize| order(cq, &candidates[a], &candidates[b]);
    let fits_now = |t: &QuotaTree, removed: &[usize]| {
        fits(t, cq, usage, true) && {
            let keys: Vec<&str> = removed.iter().map(|i| candidates[*i].key).collect();
            tas_fits(&keys)
        }
    };
    preemption_targets(tree, cq, usage, need, &victims, &head_order, &fits_now)
        .into_iter()
        .map(|(i, why)| Target {
            key: candidates[i].key.to_string(),
            cluster_queue: candidates[i].cluster_queue.to_string(),
            reason: why,
            usage: candidates[i].usage.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
