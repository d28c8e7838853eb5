//! The engine's fair sharing (see [`crate::queueing::fair_sharing`]): its
//! settings, the cycle's order by the tournament, and the weighted shares
//! the shell writes to ClusterQueue and Cohort status.

use std::collections::BTreeMap;

use super::cycle::Entry;
use super::{Decision, Engine};
use crate::queueing::fair_sharing::{self, Contender, FairShape, FairSharing};
use crate::queueing::preemption::Target;
use crate::queueing::quota::QuotaTree;

impl Engine {
    /// Turns fair sharing on (`Some`: the Configuration's `fairSharing`
    /// and the weights) or off.
    pub fn set_fair_sharing(&mut self, fair: Option<FairSharing>) {
        self.join_added();
        if self.fair != fair {
            self.fair = fair;
            self.attach_fair();
        }
    }

    pub fn fair_sharing_enabled(&self) -> bool {
        self.fair.is_some()
    }

    /// Gives the quota tree the weights (after every rebuild).
    pub(super) fn attach_fair(&mut self) {
        self.config_generation += 1;
        let shape = self.fair.as_ref().map(|f| FairShape::build(&self.quota, f));
        self.quota.set_fair(shape);
    }

    /// `status.fairSharing.weightedShare` of a ClusterQueue: `None` while
    /// fair sharing is off.
    pub fn cluster_queue_weighted_share(&self, name: &str) -> Option<i64> {
        self.fair.as_ref()?;
        fair_sharing::share_of(&self.quota, Some(name), None).map(|d| d.weighted_share())
    }

    /// `status.fairSharing.weightedShare` of every Cohort the tree knows
    /// (objects and implicit ones); empty while fair sharing is off.
    pub fn cohort_weighted_shares(&self) -> BTreeMap<String, i64> {
        if self.fair.is_none() {
            return BTreeMap::new();
        }
        self.quota
            .cohort_subtrees()
            .into_iter()
            .filter_map(|c| {
                fair_sharing::share_of(&self.quota, None, Some(&c.name))
                    .map(|d| (c.name, d.weighted_share()))
            })
            .collect()
    }

    /// Steps 4–5 with fair sharing: entries of a cohort tree are taken one
    /// at a time, each the winner of a tournament on the snapshot as the
    /// earlier ones left it (`fairSharingIterator`); queues outside any
    /// cohort compete with no one.
    pub(super) fn process_fair(
        &mut self,
        entries: &mut [Entry],
        snap: &mut QuotaTree,
        preempted: &mut BTreeMap<String, Target>,
        now: i64,
        out: &mut Vec<Decision>,
    ) {
        let mut trees: BTreeMap<Option<String>, Vec<usize>> = BTreeMap::new();
        for (i, e) in entries.iter().enumerate() {
            let root = self.quota.root_of(&e.cq).map(str::to_string);
            trees.entry(root).or_default().push(i);
        }
        for (root, left) in trees {
            if root.is_none() {
                // Outside any cohort: nobody to compete with.
                for i in left {
                    self.process(&mut entries[i], snap, preempted, now, out);
                }
                continue;
            }
            let contenders = left
                .iter()
                .map(|&i| {
                    let e = &entries[i];
                    let wl = self.workloads.get(&*e.order.key).map(|r| &r.wl);
                    Contender {
                        cluster_queue: e.cq.clone(),
                        usage: e
                            .assignment
                            .as_ref()
                            .map(|a| a.usage.clone())
                            .unwrap_or_default(),
                        priority: wl.map_or(0, |w| w.priority),
                        timestamp: wl.map_or(0, |w| w.created),
                    }
                })
                .collect();
            let mut round = fair_sharing::Round::new(snap, contenders);
            while let Some(next) = round.pop(snap) {
                self.process(&mut entries[left[next]], snap, preempted, now, out);
            }
        }
    }
}
