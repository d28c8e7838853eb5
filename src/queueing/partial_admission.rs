//! Partial admission (`spec.podSets[].minCount`, Kueue's `PartialAdmission`
//! feature gate, on by default): a workload whose full counts neither fit
//! nor can make room by preemption is admitted with the largest counts
//! between its pod sets' `minCount` and `count` that do
//! (`pkg/scheduler/flavorassigner/podset_reducer.go` and the scheduler's
//! `getInitialAssignments`).

use std::collections::BTreeMap;

use super::{
    cluster_queue::ClusterQueue,
    flavors::{self, Assignment, AssignmentMode, ResourceFlavor},
    preemption::{self, Holdings, Preemptor, Target},
    quota::{FlavorResource, QuotaTree},
    workload::{PodSet, Workload},
};

/// Kueue's `PodSetReducer`: walks every pod set down from its `count`
/// towards its `minCount` together, in `total` steps, where `total` is the
/// sum of what the pod sets may give up. At step `i` pod set `k` runs
/// `count[k] - delta[k] * i / total` pods (integer division), so step 0 is
/// the full counts and step `total` the minimum counts.
#[derive(Debug, Clone)]
pub(crate) struct PodSetReducer {
    full: Vec<u32>,
    deltas: Vec<u32>,
    total: u64,
}

impl PodSetReducer {
    pub fn new(pod_sets: &[PodSet]) -> Self {
        let full: Vec<u32> = pod_sets.iter().map(|ps| ps.count).collect();
        let deltas: Vec<u32> = pod_sets
            .iter()
            .map(|ps| ps.count.saturating_sub(ps.min_count.unwrap_or(ps.count)))
            .collect();
        let total = deltas.iter().map(|d| u64::from(*d)).sum();
        PodSetReducer {
            full,
            deltas,
            total,
        }
    }

    /// The counts at search step `i` (64-bit arithmetic: no overflow with
    /// hundreds of thousands of pods).
    pub fn counts_at(&self, i: u64) -> Vec<u32> {
        self.full
            .iter()
            .zip(&self.deltas)
            .map(|(full, d)| {
                let cut = u64::from(*d) * i / self.total.max(1);
                full - u32::try_from(cut).unwrap_or(*d)
            })
            .collect()
    }

    /// The first (largest) counts `fits` accepts, by binary search over the
    /// steps as Go's `sort.Search` runs it (so `fits` is called with the
    /// same counts as in Kueue, and must be monotone: fewer pods fit if more
    /// do). `None` when no step fits or nothing can be reduced.
    pub fn search<R>(&self, mut fits: impl FnMut(&[u32]) -> Option<R>) -> Option<R> {
        if self.total == 0 {
            return None;
        }
        let (mut lo, mut hi) = (0u64, self.total + 1);
        let mut found = None;
        while lo < hi {
            let mid = (lo + hi) / 2;
            match fits(&self.counts_at(mid)) {
                Some(r) => {
                    found = Some(r);
                    hi = mid;
                }
                None => lo = mid + 1,
            }
        }
        found
    }
}

/// Whose TAS usage a placement sees: what is admitted (`Current`), that
/// less the workloads preemption would remove (`Without`), or none at all
/// (Kueue's `WithSimulateEmpty`: the nodes' free capacity only).
#[derive(Debug, Clone, Copy)]
pub(crate) enum TasView<'a> {
    Current,
    Without(&'a [&'a str]),
    Empty,
}

/// Places an assignment's TAS pod sets on their flavors' nodes as seen in
/// the given view (topology-aware scheduling): the pod sets placed, or the
/// pod set that does not fit, and why.
pub(crate) type Placement<'a> =
    dyn Fn(&Assignment, TasView<'_>) -> Result<Vec<String>, (String, String)> + 'a;

/// Kueue's `getInitialAssignments` for one workload in `cq`: the full
/// counts when they fit, or when preemption can make room for them (with
/// its targets); otherwise, for a workload that can be partially admitted,
/// the largest reduced counts that fit or can preempt; otherwise the full
/// assignment, with no targets.
pub(crate) fn initial_assignment(
    wl: &Workload,
    cq: &ClusterQueue,
    flavors: &BTreeMap<String, ResourceFlavor>,
    snap: &mut QuotaTree,
    holdings: &dyn Holdings,
    preemptor: &Preemptor<'_>,
    placement: &Placement<'_>,
) -> (Assignment, Vec<Target>) {
    let attempt = |snap: &mut QuotaTree, counts: Option<&[u32]>| {
        let mut oracle = |s: &mut QuotaTree, fr: &FlavorResource, val: i64| {
            preemption::simulate(s, holdings, preemptor, fr, val)
        };
        let mut a = flavors::assign_counts(wl, counts, cq, flavors, snap, &mut oracle);
        // What fits the quota must also fit the nodes of its TAS flavors;
        // if it does not, preemption may make room there (Kueue's
        // `assignFlavors` with TopologyAwareScheduling).
        if a.mode() == AssignmentMode::Fit {
            if let Err((pod_set, why)) = placement(&a, TasView::Current) {
                a.set_topology_mode(&pod_set, AssignmentMode::Preempt, Some(why));
            }
        }
        if a.mode() == AssignmentMode::Preempt {
            // Would it fit if every TAS workload were gone? If not, no
            // preemption helps; if so, every TAS pod set may need room
            // (free quota can still be fragmented over the nodes).
            match placement(&a, TasView::Empty) {
                Err((pod_set, _)) => a.set_topology_mode(&pod_set, AssignmentMode::NoFit, None),
                Ok(placed) => {
                    for pod_set in placed {
                        a.set_topology_mode(&pod_set, AssignmentMode::Preempt, None);
                    }
                }
            }
        }
        let targets = if a.mode() == AssignmentMode::Preempt {
            // Kueue's `workloadFits`: the quota, and then the nodes without
            // the candidates removed so far.
            let tas_fits = |removed: &[&str]| placement(&a, TasView::Without(removed)).is_ok();
            preemption::targets_with(
                snap,
                holdings,
                preemptor,
                &a.usage,
                &a.needs_preemption(),
                &tas_fits,
            )
        } else {
            Vec::new()
        };
        (a, targets)
    };
    let (full, targets) = attempt(snap, None);
    match full.mode() {
        AssignmentMode::Fit => return (full, targets),
        AssignmentMode::Preempt if !targets.is_empty() => return (full, targets),
        _ => {}
    }
    if wl.can_be_partially_admitted() {
        let reduced = PodSetReducer::new(&wl.pod_sets).search(|counts| {
            let (a, t) = attempt(snap, Some(counts));
            match a.mode() {
                AssignmentMode::Fit => Some((a, t)),
                AssignmentMode::Preempt if !t.is_empty() => Some((a, t)),
                _ => None,
            }
        });
        if let Some(found) = reduced {
            return found;
        }
    }
    (full, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ps(name: &str, count: u32, min: Option<u32>) -> PodSet {
        PodSet {
            name: name.into(),
            count,
            min_count: min,
            requests: Default::default(),
            node_selector: Default::default(),
            node_affinity: Default::default(),
            tolerations: vec![],
            topology: None,
        }
    }

    /// Upstream's `TestSearch` (podset_reducer_test.go, v0.19.2), case by
    /// case: the total count found under a limit, and whether one was.
    #[test]
    fn search_finds_the_largest_total_under_a_limit_as_upstream() {
        let four = |mins: [Option<u32>; 4]| {
            vec![
                ps("ps1", 5, mins[0]),
                ps("ps2", 5, mins[1]),
                ps("ps3", 5, mins[2]),
                ps("ps4", 5, mins[3]),
            ]
        };
        let mixed = four([Some(3), Some(4), Some(1), Some(2)]);
        let many = |first_only: bool| -> Vec<PodSet> {
            (1..=8)
                .map(|i| {
                    if first_only && i > 1 {
                        ps(&format!("ps{i}"), 1, None)
                    } else {
                        ps(&format!("ps{i}"), 150_000, Some(1))
                    }
                })
                .collect()
        };
        let cases: Vec<(&str, Vec<PodSet>, u64, Option<u64>)> = vec![
            ("empty", vec![], 10, None),
            (
                "partial not available",
                vec![ps("ps1", 1, None), ps("ps2", 2, Some(2))],
                2,
                None,
            ),
            ("partial available", mixed.clone(), 15, Some(15)),
            (
                "one partial available",
                four([Some(3), None, None, None]),
                19,
                Some(19),
            ),
            ("to min", mixed.clone(), 10, Some(10)),
            ("to max", mixed, 20, Some(20)),
            ("no overflow", many(false), 150_000, Some(150_000)),
            ("max pods on 1.27", many(true), 150_000, Some(150_000)),
            (
                "podset with replica count 0",
                vec![ps("ps1", 0, Some(0))],
                0,
                None,
            ),
        ];
        for (name, sets, limit, want) in cases {
            let got = PodSetReducer::new(&sets).search(|counts| {
                let total: u64 = counts.iter().map(|c| u64::from(*c)).sum();
                (total <= limit).then_some(total)
            });
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn every_pod_set_shrinks_in_proportion_to_what_it_may_give_up() {
        let r = PodSetReducer::new(&[
            ps("fixed", 20, None),
            ps("two", 30, Some(10)),
            ps("three", 15, Some(5)),
        ]);
        assert_eq!(r.counts_at(0), [20, 30, 15]);
        assert_eq!(r.counts_at(15), [20, 20, 10]);
        assert_eq!(r.counts_at(30), [20, 10, 5]);
    }

    #[test]
    fn the_search_asks_for_fewer_pods_only_after_more_did_not_fit() {
        let r = PodSetReducer::new(&[ps("one", 50, Some(20))]);
        let mut asked = Vec::new();
        let got = r.search(|c| {
            asked.push(c[0]);
            (c[0] <= 25).then_some(c[0])
        });
        assert_eq!(got, Some(25));
        // Binary search over 31 steps: about log2(31) calls, never the
        // full count first (the scheduler already tried it).
        assert!(asked.len() <= 6, "{asked:?}");
        assert_eq!(asked[0], 35);
    }
}
