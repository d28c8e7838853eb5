//! Choosing whom to preempt (`pkg/scheduler/preemption`, classical, with
//! the hierarchical reclaim of `preemption/classical`).
//!
//! Candidates are admitted workloads using a flavor/resource the preemptor
//! needs room in: lower-priority ones of its own ClusterQueue
//! (`withinClusterQueue`), and those of queues elsewhere in its cohort tree
//! that borrow (`reclaimWithinCohort`), found subtree by subtree from the
//! preemptor's parent up to the root. A candidate in a subtree where the
//! preemptor's request already fits (its "hierarchical advantage") may be
//! reclaimed whatever the borrowing; the others only if the preemptor then
//! needs no borrowing, unless `borrowWithinCohort` lets it take those of
//! lower priority (up to `maxPriorityThreshold`) while it still borrows
//! (`InCohortReclaimWhileBorrowing`). They are tried in Kueue's order — already being
//! evicted first, other queues before the preemptor's own, lower priority,
//! most recently admitted, UID — removing each from a simulated quota until
//! the preemptor fits; then any whose return would still leave room is put
//! back, so the set is minimal for that order. With topology-aware
//! scheduling, "fits" also means the preemptor's pods fit its TAS flavors'
//! nodes once the candidates removed so far are gone ([`targets_with`],
//! Kueue's `workloadFits`), with fair sharing too.

use std::cmp::{Ordering, Reverse};
use std::collections::BTreeSet;

use super::{
    cluster_queue::{ClusterQueue, PreemptionPolicy},
    flavors::PreemptionMode,
    quota::{FlavorResource, NodeId, QuotaTree, Usage},
    scheduler::PreemptedReason,
};

/// A workload holding quota, as preemption sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Holder<'a> {
    pub key: &'a str,
    pub cluster_queue: &'a str,
    pub priority: i32,
    pub created: i64,
    pub uid: &'a str,
    /// When its quota was reserved (ms).
    pub reserved_at: i64,
    /// An eviction was already issued.
    pub evicting: bool,
    /// Its admission has been sent (or came from the API). One that has
    /// not still waits for the admission lane: nobody has seen it, so
    /// taking it back loses nothing.
    pub written: bool,
    pub usage: &'a Usage,
}

/// Where preemption finds the workloads holding quota in a queue.
pub(crate) trait Holdings {
    fn holders<'s>(&'s self, cluster_queue: &str) -> Vec<Holder<'s>>;
}

/// The workload that needs room.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Preemptor<'a> {
    pub key: &'a str,
    pub cq: &'a ClusterQueue,
    pub priority: i32,
    pub created: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub key: String,
    pub cluster_queue: String,
    pub reason: PreemptedReason,
    pub usage: Usage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    WithinQueue,
    /// The preemptor fits in its own nominal quota: it reclaims what it lent.
    Reclaim,
    /// Only if the preemptor ends up not borrowing.
    ReclaimWithoutBorrowing,
    /// Even if the preemptor still borrows afterwards (`borrowWithinCohort`).
    ReclaimWhileBorrowing,
}

/// `classifyPreemptionVariant` for a candidate of another queue over which
/// the preemptor has no hierarchical advantage: with `borrowWithinCohort`,
/// one below the preemptor's priority (and at most the threshold, when set)
/// may be reclaimed while the preemptor borrows.
fn priority_variant(p: &Preemptor<'_>, c: &Holder<'_>) -> Variant {
    let Some(bwc) = p.cq.preemption.borrow_within_cohort else {
        return Variant::ReclaimWithoutBorrowing;
    };
    let above_threshold =
        c.priority >= p.priority || bwc.max_priority_threshold.is_some_and(|t| c.priority > t);
    if above_threshold {
        Variant::ReclaimWithoutBorrowing
    } else {
        Variant::ReclaimWhileBorrowing
    }
}

struct Candidate<'a> {
    holder: Holder<'a>,
    variant: Variant,
    /// The subtree it was found in (`lca`): its queue's ancestors below
    /// this one must still be above their quota for it to be reclaimed.
    lca: Option<NodeId>,
}

/// May `policy` preempt `c` for `p`? (`priorityTooHighToPreempt`, negated.)
pub(super) fn allowed(policy: PreemptionPolicy, p: &Preemptor<'_>, c: &Holder<'_>) -> bool {
    match policy {
        PreemptionPolicy::Never => false,
        PreemptionPolicy::LowerPriority => c.priority < p.priority,
        PreemptionPolicy::LowerOrNewerEqualPriority => {
            c.priority < p.priority || (c.priority == p.priority && p.created < c.created)
        }
        PreemptionPolicy::Any => true,
    }
}

pub(super) fn uses_any(usage: &Usage, frs: &BTreeSet<FlavorResource>) -> bool {
    usage.iter().any(|(fr, v)| *v > 0 && frs.contains(fr))
}

/// `CandidatesOrdering`.
pub(super) fn order(own_cq: &str, a: &Holder<'_>, b: &Holder<'_>) -> Ordering {
    (
        !a.evicting,
        a.cluster_queue == own_cq,
        a.priority,
        Reverse(a.reserved_at),
        a.uid,
    )
        .cmp(&(
            !b.evicting,
            b.cluster_queue == own_cq,
            b.priority,
            Reverse(b.reserved_at),
            b.uid,
        ))
}

/// `collectCandidatesInSubtree`: the queues under `at` (but not in `skip`,
/// nor `own`) that use more than their quota, descending only into Cohorts
/// that do.
fn collect_in_subtree(
    snap: &QuotaTree,
    at: NodeId,
    skip: Option<NodeId>,
    own: NodeId,
    need: &BTreeSet<FlavorResource>,
    out: &mut Vec<String>,
) {
    for child in snap.child_cohorts(at) {
        if Some(child) == skip || snap.within_nominal(child, need) {
            continue;
        }
        collect_in_subtree(snap, child, skip, own, need, out);
    }
    for (q, name) in snap.child_queues(at) {
        if q != own && !snap.within_nominal(q, need) {
            out.push(name.to_string());
        }
    }
}

/// The candidate's queue, and its Cohorts below `lca`, still use more than
/// their quota.
fn still_reclaimable(
    snap: &QuotaTree,
    cq: &str,
    lca: Option<NodeId>,
    need: &BTreeSet<FlavorResource>,
) -> bool {
    let Some(id) = snap.queue_id(cq) else {
        return false;
    };
    if snap.within_nominal(id, need) {
        return false;
    }
    for node in snap.ancestors(id) {
        if Some(node) == lca {
            break;
        }
        if snap.within_nominal(node, need) {
            return false;
        }
    }
    true
}

/// Can the preemptor's `usage` be admitted in the simulated quota?
pub(super) fn fits(snap: &QuotaTree, cq: &str, usage: &Usage, allow_borrowing: bool) -> bool {
    usage.iter().all(|(fr, v)| {
        (allow_borrowing || !snap.borrowing_with(cq, fr, *v)) && *v <= snap.available(cq, fr)
    })
}

/// Does the preemptor fit its TAS flavors' nodes once the given
/// workloads (keys) are gone? (The topology half of Kueue's `workloadFits`.)
pub(crate) type TasFit<'a> = dyn Fn(&[&str]) -> bool + 'a;

/// The workloads to evict so that `usage` fits for `p`, or none if no
/// allowed set makes room. `snap` is restored before returning.
pub(crate) fn targets(
    snap: &mut QuotaTree,
    holdings: &dyn Holdings,
    p: &Preemptor<'_>,
    usage: &Usage,
    need: &BTreeSet<FlavorResource>,
) -> Vec<Target> {
    targets_with(snap, holdings, p, usage, need, &|_| true)
}

/// [`targets`], where the preemptor must also fit the nodes: `tas_fits`
/// is asked after the quota fits, with the candidates removed so far.
pub(crate) fn targets_with(
    snap: &mut QuotaTree,
    holdings: &dyn Holdings,
    p: &Preemptor<'_>,
    usage: &Usage,
    need: &BTreeSet<FlavorResource>,
    tas_fits: &TasFit<'_>,
) -> Vec<Target> {
    if snap.fair().is_some() {
        return super::fair_sharing::targets(snap, holdings, p, usage, need, tas_fits);
    }
    let cq = &p.cq.name;
    let mut same = Vec::new();
    let mut reclaim = Vec::new();
    let mut without_borrowing = Vec::new();
    let within = p.cq.preemption.within_cluster_queue;
    if within != PreemptionPolicy::Never {
        for h in holdings.holders(cq) {
            if h.key != p.key && uses_any(h.usage, need) && allowed(within, p, &h) {
                same.push(Candidate {
                    holder: h,
                    variant: Variant::WithinQueue,
                    lca: None,
                });
            }
        }
    }
    let cohort_policy = p.cq.preemption.reclaim_within_cohort;
    let own = snap.queue_id(cq);
    if let (Some(own), true) = (
        own.filter(|&id| !snap.ancestors(id).is_empty()),
        cohort_policy != PreemptionPolicy::Never,
    ) {
        // `collectCandidatesForHierarchicalReclaim`: each subtree from the
        // parent up, skipping the one already searched.
        let (mut advantage, mut remaining) = snap.fits_in_subtree(own, usage);
        let mut previous: Option<NodeId> = None;
        for root in snap.ancestors(own) {
            let mut found = Vec::new();
            collect_in_subtree(snap, root, previous, own, need, &mut found);
            for peer in found {
                for h in holdings.holders(&peer) {
                    if uses_any(h.usage, need) && allowed(cohort_policy, p, &h) {
                        let (list, variant) = if advantage {
                            (&mut reclaim, Variant::Reclaim)
                        } else {
                            (&mut without_borrowing, priority_variant(p, &h))
                        };
                        list.push(Candidate {
                            holder: h,
                            variant,
                            lca: Some(root),
                        });
                    }
                }
            }
            let (fits, rest) = snap.fits_in_subtree(root, &remaining);
            remaining = rest;
            advantage |= fits;
            previous = Some(root);
        }
    }
    let unwritten = same
        .iter()
        .chain(&reclaim)
        .chain(&without_borrowing)
        .filter(|c| !c.holder.written);
    if let Some(free) = unsent_room(snap, p, usage, need, tas_fits, unwritten) {
        return free;
    }
    for list in [&mut same, &mut reclaim, &mut without_borrowing] {
        list.sort_by(|a, b| order(cq, &a.holder, &b.holder));
    }
    let no_other_queue = reclaim.is_empty() && without_borrowing.is_empty();
    let no_reclaim = reclaim.is_empty();
    // Already-evicting candidates of every kind first, then the rest, each
    // part in the order reclaim, without-borrowing, same queue.
    let mut candidates: Vec<&Candidate<'_>> = Vec::new();
    for evicting in [true, false] {
        for list in [&reclaim, &without_borrowing, &same] {
            candidates.extend(list.iter().filter(|c| c.holder.evicting == evicting));
        }
    }
    let under_nominal = need
        .iter()
        .all(|fr| snap.usage(cq, fr) < snap.limits(cq, fr).nominal);
    // Which borrowing modes to try, in Kueue's order: without
    // `borrowWithinCohort`, a queue at or above its nominal quota cannot end
    // up not borrowing, and one with no hierarchical-advantage candidate
    // first tries to stop borrowing.
    let forbidden = !p.cq.preemption.can_preempt_while_borrowing();
    let attempts: &[bool] = if no_other_queue || (forbidden && !under_nominal) {
        &[true]
    } else if forbidden && no_reclaim {
        &[false, true]
    } else {
        &[true, false]
    };
    for &allow_borrowing in attempts {
        let mut removed: Vec<&Candidate<'_>> = Vec::new();
        let mut found = false;
        for c in &candidates {
            let h = &c.holder;
            if h.cluster_queue != cq.as_str() {
                if allow_borrowing && c.variant == Variant::ReclaimWithoutBorrowing {
                    continue;
                }
                // Earlier removals may have brought that queue, or a Cohort
                // between it and where it was found, back within its quota:
                // nothing left to reclaim there (`candidateIsValid`).
                if !still_reclaimable(snap, h.cluster_queue, c.lca, need) {
                    continue;
                }
            }
            snap.remove(h.cluster_queue, h.usage);
            removed.push(c);
            if fits(snap, cq, usage, allow_borrowing) && tas_fits(&keys(&removed, None)) {
                found = true;
                break;
            }
        }
        restore(
            snap,
            cq,
            usage,
            allow_borrowing,
            tas_fits,
            &mut removed,
            found,
        );
        if found {
            return removed
                .iter()
                .map(|c| Target {
                    key: c.holder.key.to_string(),
                    cluster_queue: c.holder.cluster_queue.to_string(),
                    reason: match c.variant {
                        Variant::WithinQueue => PreemptedReason::InClusterQueue,
                        Variant::ReclaimWhileBorrowing => {
                            PreemptedReason::InCohortReclaimWhileBorrowing
                        }
                        Variant::Reclaim | Variant::ReclaimWithoutBorrowing => {
                            PreemptedReason::InCohortReclamation
                        }
                    },
                    usage: c.holder.usage.clone(),
                })
                .collect();
        }
    }
    Vec::new()
}

/// Room made by taking back admissions nobody has seen yet, from Kueue's
/// candidates (in the preemptor's queue, or in a queue of its Cohort that
/// borrows, each allowed by its policies): those of lower priority, taken
/// lowest and newest first, the fewest that make room. Had the preemptor
/// been pending when they were decided, Kueue's order (priority first)
/// would have placed it before them, borrowing as it would have. None if
/// they do not make room.
fn unsent_room<'a>(
    snap: &mut QuotaTree,
    p: &Preemptor<'_>,
    usage: &Usage,
    need: &BTreeSet<FlavorResource>,
    tas_fits: &TasFit<'_>,
    unwritten: impl Iterator<Item = &'a Candidate<'a>>,
) -> Option<Vec<Target>> {
    let cq = p.cq.name.as_str();
    let mut candidates: Vec<&Candidate<'a>> = unwritten
        .filter(|c| !c.holder.evicting && c.holder.priority < p.priority)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    candidates.sort_by_key(|c| {
        (
            c.holder.priority,
            Reverse(c.holder.reserved_at),
            c.holder.uid,
        )
    });
    let mut removed: Vec<&Candidate<'a>> = Vec::new();
    let mut found = false;
    for c in candidates {
        let h = &c.holder;
        snap.remove(h.cluster_queue, h.usage);
        // A peer gives back only what it borrows: below its nominal quota
        // it could reclaim from the preemptor, which may borrow.
        if h.cluster_queue != cq
            && need.iter().any(|fr| {
                snap.usage(h.cluster_queue, fr) < snap.limits(h.cluster_queue, fr).nominal
            })
        {
            snap.add(h.cluster_queue, h.usage);
            continue;
        }
        removed.push(c);
        if fits(snap, cq, usage, true) && tas_fits(&keys(&removed, None)) {
            found = true;
            break;
        }
    }
    restore(snap, cq, usage, true, tas_fits, &mut removed, found);
    found.then(|| {
        removed
            .iter()
            .map(|c| Target {
                key: c.holder.key.to_string(),
                cluster_queue: c.holder.cluster_queue.to_string(),
                reason: if c.holder.cluster_queue == cq {
                    PreemptedReason::InClusterQueue
                } else {
                    PreemptedReason::InCohortReclamation
                },
                usage: c.holder.usage.clone(),
            })
            .collect()
    })
}

/// Gives `snap` back what `removed` took. When the removals `made_room`,
/// first keeps in `removed` only the fewest the preemptor needs: each
/// other one, newest removal first (the last one stays), is put back if
/// the preemptor still fits without it.
fn restore<'a>(
    snap: &mut QuotaTree,
    cq: &str,
    usage: &Usage,
    allow_borrowing: bool,
    tas_fits: &TasFit<'_>,
    removed: &mut Vec<&Candidate<'a>>,
    made_room: bool,
) {
    if made_room {
        for i in (0..removed.len().saturating_sub(1)).rev() {
            let h = &removed[i].holder;
            snap.add(h.cluster_queue, h.usage);
            if fits(snap, cq, usage, allow_borrowing) && tas_fits(&keys(removed, Some(i))) {
                removed.swap_remove(i);
            } else {
                snap.remove(h.cluster_queue, h.usage);
            }
        }
    }
    for c in removed.iter() {
        snap.add(c.holder.cluster_queue, c.holder.usage);
    }
}

/// The keys of the removed candidates, but the one at `except`.
fn keys<'a>(removed: &[&Candidate<'a>], except: Option<usize>) -> Vec<&'a str> {
    removed
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != except)
        .map(|(_, c)| c.holder.key)
        .collect()
}

/// The preemption oracle of flavor assignment: could preemption make room
/// for `val` of `fr` alone, and at what borrowing level afterwards?
pub(crate) fn simulate(
    snap: &mut QuotaTree,
    holdings: &dyn Holdings,
    p: &Preemptor<'_>,
    fr: &FlavorResource,
    val: i64,
) -> (PreemptionMode, u8) {
    let usage: Usage = [(fr.clone(), val)].into();
    let need: BTreeSet<FlavorResource> = [fr.clone()].into();
    let found = targets(snap, holdings, p, &usage, &need);
    let cq = &p.cq.name;
    if found.is_empty() {
        return (PreemptionMode::NoCandidates, snap.borrow_level(cq, fr, val));
    }
    for t in &found {
        snap.remove(&t.cluster_queue, &t.usage);
    }
    let borrow = snap.borrow_level(cq, fr, val);
    for t in &found {
        snap.add(&t.cluster_queue, &t.usage);
    }
    let mode = if found.iter().any(|t| &t.cluster_queue == cq) {
        PreemptionMode::Preempt
    } else {
        PreemptionMode::Reclaim
    };
    (mode, borrow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queueing::cluster_queue::{FlavorQuotas, Preemption, ResourceGroup, ResourceQuota};

    struct Fixed(Vec<(String, String, i32, i64, bool, Usage)>);

    impl Holdings for Fixed {
        fn holders<'s>(&'s self, cq: &str) -> Vec<Holder<'s>> {
            self.0
                .iter()
                .filter(|w| w.1 == cq)
                .map(|(key, cq, prio, at, evicting, usage)| Holder {
                    key,
                    cluster_queue: cq,
                    priority: *prio,
                    created: 0,
                    uid: key,
                    reserved_at: *at,
                    evicting: *evicting,
                    written: true,
                    usage,
                })
                .collect()
        }
    }

    fn fr() -> FlavorResource {
        FlavorResource::new("f", "cpu")
    }

    fn cpu(v: i64) -> Usage {
        [(fr(), v)].into()
    }

    fn cq(
        name: &str,
        nominal: i64,
        within: PreemptionPolicy,
        reclaim: PreemptionPolicy,
    ) -> ClusterQueue {
        ClusterQueue {
            name: name.into(),
            cohort: Some("c".into()),
            queueing_strategy: Default::default(),
            namespace_selector: Some(Default::default()),
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".into()],
                flavors: vec![FlavorQuotas {
                    name: "f".into(),
                    resources: vec![ResourceQuota {
                        name: "cpu".into(),
                        nominal,
                        borrowing_limit: None,
                        lending_limit: None,
                    }],
                }],
            }],
            preemption: Preemption {
                within_cluster_queue: within,
                reclaim_within_cohort: reclaim,
                ..Default::default()
            },
            flavor_fungibility: Default::default(),
            stop_policy: Default::default(),
            admission_fair_sharing: false,
            terminating: false,
        }
    }

    fn holder(
        key: &str,
        cq: &str,
        prio: i32,
        at: i64,
        v: i64,
    ) -> (String, String, i32, i64, bool, Usage) {
        (key.into(), cq.into(), prio, at, false, cpu(v))
    }

    fn setup(holders: &Fixed, queues: &[ClusterQueue]) -> QuotaTree {
        let usage: Vec<(&str, &Usage)> = holders.0.iter().map(|h| (h.1.as_str(), &h.5)).collect();
        QuotaTree::build(queues, usage)
    }

    /// [`Fixed`], with the named holders' admissions not sent yet.
    struct Unsent(Fixed, Vec<&'static str>);

    impl Holdings for Unsent {
        fn holders<'s>(&'s self, cq: &str) -> Vec<Holder<'s>> {
            let mut hs = self.0.holders(cq);
            for h in &mut hs {
                h.written = !self.1.contains(&h.key);
            }
            hs
        }
    }

    /// A full queue of 10: by Kueue's order a preemptor needing 3 evicts
    /// the lowest priority, sent; with two admissions of priority 5 not
    /// sent yet, it takes back the newest of those instead, which no one
    /// has seen. Never one of its own priority or above, and never from a
    /// peer within its nominal quota (that peer would reclaim it back).
    #[test]
    fn unsent_admissions_are_taken_back_before_anything_is_evicted() {
        use PreemptionPolicy::*;
        let queues = [cq("a", 10, LowerPriority, Any)];
        let fixed = || {
            Fixed(vec![
                holder("ns/sent-low", "a", 1, 1, 3),
                holder("ns/unsent-old", "a", 5, 2, 4),
                holder("ns/unsent-new", "a", 5, 3, 3),
            ])
        };
        let mut snap = setup(&fixed(), &queues);
        let p = Preemptor {
            key: "ns/p",
            cq: &queues[0],
            priority: 10,
            created: 0,
        };
        let need = [fr()].into();
        let keys = |t: &[Target]| -> Vec<String> { t.iter().map(|t| t.key.clone()).collect() };
        let t = targets(&mut snap, &Unsent(fixed(), vec![]), &p, &cpu(3), &need);
        assert_eq!(keys(&t), ["ns/sent-low"], "all sent: Kueue's order");

        let holdings = Unsent(fixed(), vec!["ns/unsent-old", "ns/unsent-new"]);
        let t = targets(&mut snap, &holdings, &p, &cpu(3), &need);
        assert_eq!(snap.usage("a", &fr()), 10, "the snapshot is left as found");
        assert_eq!(keys(&t), ["ns/unsent-new"]);
        assert_eq!(t[0].reason, PreemptedReason::InClusterQueue);
        // 4 needed: the newest unsent (3) is not enough alone, the older
        // one (4) is, so the fill-back keeps only that one.
        let t = targets(&mut snap, &holdings, &p, &cpu(4), &need);
        assert_eq!(keys(&t), ["ns/unsent-old"]);
        // 8 needed: unsent ones free 7 at most, so Kueue's rule decides.
        let t = targets(&mut snap, &holdings, &p, &cpu(8), &need);
        assert!(t.iter().any(|t| t.key == "ns/sent-low"), "{:?}", keys(&t));

        // Of the preemptor's priority: not taken back.
        let p5 = Preemptor { priority: 5, ..p };
        let t = targets(&mut snap, &holdings, &p5, &cpu(3), &need);
        assert_eq!(keys(&t), ["ns/sent-low"]);

        // A peer gives back only what it borrows: taking the admission
        // must leave it at its nominal quota or above, or it would reclaim
        // from the preemptor, which borrows.
        let queues = [
            cq("a", 10, LowerPriority, Any),
            cq("b", 10, LowerPriority, Any),
        ];
        let p = Preemptor {
            cq: &queues[0],
            ..p
        };
        let peers = |a_sent: i64, b_sent: i64| {
            Fixed(vec![
                holder("ns/a-sent", "a", 1, 1, a_sent),
                holder("ns/b-sent", "b", 1, 1, b_sent),
                holder("ns/b-unsent", "b", 5, 2, 4),
            ])
        };
        let mut snap = setup(&peers(8, 8), &queues);
        let t = targets(
            &mut snap,
            &Unsent(peers(8, 8), vec!["ns/b-unsent"]),
            &p,
            &cpu(4),
            &need,
        );
        assert!(
            !keys(&t).contains(&"ns/b-unsent".to_string()),
            "{:?}",
            keys(&t)
        );
        let mut snap = setup(&peers(6, 10), &queues);
        let t = targets(&mut snap, &Unsent(peers(6, 10), vec![]), &p, &cpu(4), &need);
        assert_eq!(keys(&t), ["ns/b-sent"], "all sent: Kueue's order");
        let t = targets(
            &mut snap,
            &Unsent(peers(6, 10), vec!["ns/b-unsent"]),
            &p,
            &cpu(4),
            &need,
        );
        assert_eq!(keys(&t), ["ns/b-unsent"]);
        assert_eq!(t[0].reason, PreemptedReason::InCohortReclamation);
    }

    #[test]
    fn within_queue_takes_the_fewest_lowest_newest() {
        use PreemptionPolicy::*;
        let queues = [cq("a", 10, LowerPriority, Never)];
        let holders = Fixed(vec![
            holder("ns/low-old", "a", 1, 1, 3),
            holder("ns/low-new", "a", 1, 2, 3),
            holder("ns/mid", "a", 5, 3, 4),
        ]);
        let mut snap = setup(&holders, &queues);
        let p = Preemptor {
            key: "ns/p",
            cq: &queues[0],
            priority: 10,
            created: 0,
        };
        let need = [fr()].into();
        let t = targets(&mut snap, &holders, &p, &cpu(3), &need);
        let keys: Vec<_> = t.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["ns/low-new"]);
        assert_eq!(t[0].reason, PreemptedReason::InClusterQueue);
        // Needing 7: both low ones (6) are not enough, so mid goes too, and
        // the fill-back returns the older low one.
        let t = targets(&mut snap, &holders, &p, &cpu(7), &need);
        let mut keys: Vec<_> = t.iter().map(|t| t.key.as_str()).collect();
        keys.sort();
        assert_eq!(keys, ["ns/low-new", "ns/mid"]);
        // The snapshot is left as found.
        assert_eq!(snap.usage("a", &fr()), 10);
        // Equal priority is never a victim under LowerPriority.
        let p5 = Preemptor { priority: 5, ..p };
        let t = targets(&mut snap, &holders, &p5, &cpu(10), &need);
        assert!(t.is_empty());
    }

    #[test]
    fn reclaim_takes_from_borrowers_only() {
        use PreemptionPolicy::*;
        let queues = [
            cq("a", 10, Never, Any),
            cq("b", 10, Never, Any),
            cq("c", 10, Never, Any),
        ];
        // b borrows 5 from a's quota; c is within its nominal.
        let holders = Fixed(vec![
            holder("ns/b1", "b", 100, 1, 10),
            holder("ns/b2", "b", 100, 2, 5),
            holder("ns/c1", "c", 0, 3, 10),
        ]);
        let mut snap = setup(&holders, &queues);
        let p = Preemptor {
            key: "ns/p",
            cq: &queues[0],
            priority: 0,
            created: 0,
        };
        let need = [fr()].into();
        let t = targets(&mut snap, &holders, &p, &cpu(10), &need);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].key, "ns/b2");
        assert_eq!(t[0].reason, PreemptedReason::InCohortReclamation);
        let (mode, borrow) = simulate(&mut snap, &holders, &p, &fr(), 10);
        assert_eq!((mode, borrow), (PreemptionMode::Reclaim, 0));
        // More than a's nominal cannot be reclaimed.
        let t = targets(&mut snap, &holders, &p, &cpu(11), &need);
        assert!(t.is_empty());
    }

    #[test]
    fn already_evicting_candidates_come_first() {
        use PreemptionPolicy::*;
        let queues = [cq("a", 10, LowerPriority, Never)];
        let mut going = holder("ns/going", "a", 5, 1, 5);
        going.4 = true;
        let holders = Fixed(vec![holder("ns/low", "a", 1, 2, 5), going]);
        let mut snap = setup(&holders, &queues);
        let p = Preemptor {
            key: "ns/p",
            cq: &queues[0],
            priority: 10,
            created: 0,
        };
        let t = targets(&mut snap, &holders, &p, &cpu(5), &[fr()].into());
        assert_eq!(
            t.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(),
            ["ns/going"]
        );
    }

    /// One random cohort of three queues, the workloads holding quota in
    /// it (each admitted only if it fitted), and a preemptor that does not
    /// fit as things are.
    #[derive(Debug, Clone)]
    struct Scene {
        queues: Vec<(i64, Option<i64>, PreemptionPolicy, PreemptionPolicy)>,
        holders: Vec<(usize, i32, i64, bool)>,
        preemptor: (usize, i32, i64),
    }

    fn scene() -> impl proptest::strategy::Strategy<Value = Scene> {
        use proptest::prelude::*;
        use PreemptionPolicy::*;
        let policy = prop_oneof![
            Just(Never),
            Just(LowerPriority),
            Just(LowerOrNewerEqualPriority),
            Just(Any)
        ];
        let queue = (
            0i64..=6,
            proptest::option::of(0i64..=4),
            policy.clone(),
            policy,
        );
        (
            proptest::collection::vec(queue, 3),
            proptest::collection::vec((0usize..3, 0i32..4, 1i64..=4, any::<bool>()), 0..10),
            (0usize..3, 0i32..4, 1i64..=6),
        )
            .prop_map(|(queues, holders, preemptor)| Scene {
                queues,
                holders,
                preemptor,
            })
    }

    fn scene_queues(s: &Scene) -> Vec<ClusterQueue> {
        s.queues
            .iter()
            .enumerate()
            .map(|(i, (nominal, bl, within, reclaim))| {
                let mut q = cq(&format!("q{i}"), *nominal * 1000, *within, *reclaim);
                q.resource_groups[0].flavors[0].resources[0].borrowing_limit = bl.map(|b| b * 1000);
                q
            })
            .collect()
    }

    /// Would `usage` fit in `cq` with `gone` evicted, allowed to borrow or not?
    fn fits_without(
        snap: &mut QuotaTree,
        cq: &str,
        usage: &Usage,
        gone: &[&Target],
        allow_borrowing: bool,
    ) -> bool {
        for t in gone {
            snap.remove(&t.cluster_queue, &t.usage);
        }
        let ok = fits(snap, cq, usage, allow_borrowing);
        for t in gone {
            snap.add(&t.cluster_queue, &t.usage);
        }
        ok
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Whatever the cohort: victims are allowed by the policy that
        /// reaches them (lower priority under LowerPriority, from queues
        /// that borrow when reclaiming), the preemptor fits once they are
        /// gone, none of them could be spared, and nothing is chosen when
        /// no allowed set makes room.
        #[test]
        fn victims_are_allowed_sufficient_and_minimal(s in scene()) {
            let queues = scene_queues(&s);
            let mut tree = QuotaTree::build(&queues, []);
            let mut admitted = Vec::new();
            for (n, (qi, prio, cpu, evicting)) in s.holders.iter().enumerate() {
                let name = format!("q{qi}");
                let u = cpu_usage(*cpu);
                if tree.fits(&name, &u) {
                    tree.add(&name, &u);
                    let mut h = holder(&format!("ns/w{n}"), &name, *prio, n as i64, *cpu * 1000);
                    h.4 = *evicting;
                    admitted.push(h);
                }
            }
            let holders = Fixed(admitted);
            let (pq, pprio, pcpu) = s.preemptor;
            let p = Preemptor {
                key: "ns/p",
                cq: &queues[pq],
                priority: pprio,
                created: 5,
            };
            let usage = cpu_usage(pcpu);
            let cq_name = p.cq.name.clone();
            proptest::prop_assume!(!tree.fits(&cq_name, &usage));
            let mut snap = setup(&holders, &queues);
            let before: Vec<i64> = queues.iter().map(|q| snap.usage(&q.name, &fr())).collect();
            let found = targets(&mut snap, &holders, &p, &usage, &[fr()].into());
            let after: Vec<i64> = queues.iter().map(|q| snap.usage(&q.name, &fr())).collect();
            proptest::prop_assert_eq!(before, after, "the snapshot is left as found");
            let by_key: std::collections::BTreeMap<&str, &(String, String, i32, i64, bool, Usage)> =
                holders.0.iter().map(|h| (h.0.as_str(), h)).collect();
            for t in &found {
                let h = by_key[t.key.as_str()];
                let victim = Holder {
                    key: &h.0, cluster_queue: &h.1, priority: h.2, created: 0,
                    uid: &h.0, reserved_at: h.3, evicting: h.4, written: true, usage: &h.5,
                };
                if t.cluster_queue == cq_name {
                    proptest::prop_assert!(policy_admits(p.cq.preemption.within_cluster_queue, &p, &victim), "{} may not be preempted", t.key);
                    proptest::prop_assert_eq!(t.reason, PreemptedReason::InClusterQueue);
                } else {
                    proptest::prop_assert!(policy_admits(p.cq.preemption.reclaim_within_cohort, &p, &victim), "{} may not be reclaimed", t.key);
                    proptest::prop_assert!(snap.is_borrowing(&t.cluster_queue, &[fr()]),
                        "{} reclaimed from a queue within its nominal quota", t.key);
                    proptest::prop_assert_eq!(t.reason, PreemptedReason::InCohortReclamation);
                }
            }
            if found.is_empty() {
                return Ok(());
            }
            let all: Vec<&Target> = found.iter().collect();
            proptest::prop_assert!(fits_without(&mut snap, &cq_name, &usage, &all, true),
                "the preemptor fits once its victims are gone");
            for spared in &found {
                let rest: Vec<&Target> = found.iter().filter(|t| t.key != spared.key).collect();
                // Kueue may have searched without borrowing; fitting without
                // borrowing implies fitting with it, so this is the bound
                // both searches keep.
                proptest::prop_assert!(!fits_without(&mut snap, &cq_name, &usage, &rest, false),
                    "{} could be spared", spared.key);
            }
        }
    }

    /// The policies as the API documents them, spelled out apart from
    /// `allowed` so that the property checks it rather than repeats it.
    fn policy_admits(policy: PreemptionPolicy, p: &Preemptor<'_>, v: &Holder<'_>) -> bool {
        match policy {
            PreemptionPolicy::Never => false,
            PreemptionPolicy::Any => true,
            PreemptionPolicy::LowerPriority => v.priority < p.priority,
            PreemptionPolicy::LowerOrNewerEqualPriority => {
                v.priority < p.priority || (v.priority == p.priority && v.created > p.created)
            }
        }
    }

    fn cpu_usage(cores: i64) -> Usage {
        cpu(cores * 1000)
    }
}
