//! Quota and usage of ClusterQueues and their cohorts, with Kueue's
//! borrowing and lending arithmetic (`pkg/cache/scheduler/resource_node.go`),
//! for single-level cohorts.
//!
//! Every ClusterQueue splits its nominal quota of a flavor/resource in two:
//! the `local` part it never lends (`nominal - lendingLimit`, or nothing when
//! there is no lending limit) and the rest, which it stores in its cohort. A
//! cohort's quota is the sum of what its members store there, and its usage
//! the sum of its members' usage beyond their local part. A member may take
//! from the cohort up to what it stores there plus its `borrowingLimit`.

use std::collections::BTreeMap;

use super::cluster_queue::ClusterQueue;

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

#[derive(Debug, Clone, Default)]
struct QueueNode {
    cohort: Option<String>,
    limits: BTreeMap<FlavorResource, Limits>,
    usage: Usage,
}

impl QueueNode {
    fn limits(&self, fr: &FlavorResource) -> Limits {
        self.limits.get(fr).copied().unwrap_or_default()
    }

    fn usage(&self, fr: &FlavorResource) -> i64 {
        self.usage.get(fr).copied().unwrap_or(0)
    }

    /// The part of the nominal quota that is never lent to the cohort.
    fn local_quota(&self, fr: &FlavorResource) -> i64 {
        let l = self.limits(fr);
        l.lending_limit.map_or(0, |lend| (l.nominal - lend).max(0))
    }

    /// What this queue's usage takes out of the cohort.
    fn usage_in_cohort(&self, fr: &FlavorResource) -> i64 {
        (self.usage(fr) - self.local_quota(fr)).max(0)
    }
}

#[derive(Debug, Clone, Default)]
struct CohortNode {
    members: Vec<String>,
    quota: Usage,
    usage: Usage,
}

/// The quota state the scheduler reads and a cycle's snapshot copies.
#[derive(Debug, Clone, Default)]
pub(crate) struct QuotaTree {
    queues: BTreeMap<String, QueueNode>,
    cohorts: BTreeMap<String, CohortNode>,
}

fn get(map: &Usage, fr: &FlavorResource) -> i64 {
    map.get(fr).copied().unwrap_or(0)
}

impl QuotaTree {
    /// Builds the tree from the queues' specs and the usage each one holds.
    pub fn build<'a>(
        queues: impl IntoIterator<Item = &'a ClusterQueue>,
        usage: impl IntoIterator<Item = (&'a str, &'a Usage)>,
    ) -> Self {
        let mut tree = QuotaTree::default();
        for cq in queues {
            let mut limits = BTreeMap::new();
            for g in &cq.resource_groups {
                for f in &g.flavors {
                    for r in &f.resources {
                        limits.insert(
                            FlavorResource::new(&f.name, &r.name),
                            Limits {
                                nominal: r.nominal,
                                // Kueue's CEL rejects a borrowing limit without
                                // a cohort; without one there is nothing to borrow.
                                borrowing_limit: r.borrowing_limit,
                                lending_limit: r.lending_limit,
                            },
                        );
                    }
                }
            }
            tree.queues.insert(
                cq.name.clone(),
                QueueNode {
                    cohort: cq.cohort.clone(),
                    limits,
                    usage: Usage::new(),
                },
            );
        }
        for (name, node) in &tree.queues {
            let Some(cohort) = &node.cohort else { continue };
            let c = tree.cohorts.entry(cohort.clone()).or_default();
            c.members.push(name.clone());
            for fr in node.limits.keys() {
                *c.quota.entry(fr.clone()).or_default() +=
                    node.limits(fr).nominal - node.local_quota(fr);
            }
        }
        for (cq, u) in usage {
            tree.add(cq, u);
        }
        tree
    }

    pub fn cohort_of(&self, cq: &str) -> Option<&str> {
        self.queues.get(cq)?.cohort.as_deref()
    }

    /// The other queues sharing `cq`'s cohort.
    pub fn cohort_peers<'a>(&'a self, cq: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.cohort_of(cq)
            .and_then(|c| self.cohorts.get(c))
            .into_iter()
            .flat_map(|c| c.members.iter().map(String::as_str))
            .filter(move |m| *m != cq)
    }

    pub fn limits(&self, cq: &str, fr: &FlavorResource) -> Limits {
        self.queues
            .get(cq)
            .map(|n| n.limits(fr))
            .unwrap_or_default()
    }

    pub fn usage(&self, cq: &str, fr: &FlavorResource) -> i64 {
        self.queues.get(cq).map_or(0, |n| n.usage(fr))
    }

    /// How much more of `fr` the queue can take now, from its own quota and
    /// the cohort's, within its borrowing limit. Negative when over-admitted
    /// (quota was lowered under running workloads).
    pub fn available(&self, cq: &str, fr: &FlavorResource) -> i64 {
        let Some(node) = self.queues.get(cq) else {
            return 0;
        };
        let cohort = node.cohort.as_ref().and_then(|c| self.cohorts.get(c));
        let Some(cohort) = cohort else {
            return node.limits(fr).nominal - node.usage(fr);
        };
        let local = node.local_quota(fr);
        let mut from_cohort = get(&cohort.quota, fr) - get(&cohort.usage, fr);
        if let Some(borrowing_limit) = node.limits(fr).borrowing_limit {
            let stored = node.limits(fr).nominal - local;
            from_cohort = from_cohort.min(stored - node.usage_in_cohort(fr) + borrowing_limit);
        }
        (local - node.usage(fr)).max(0) + from_cohort
    }

    /// The most of `fr` the queue could ever hold, were nothing else running.
    pub fn potential_available(&self, cq: &str, fr: &FlavorResource) -> i64 {
        let Some(node) = self.queues.get(cq) else {
            return 0;
        };
        let limits = node.limits(fr);
        let cohort = node.cohort.as_ref().and_then(|c| self.cohorts.get(c));
        let Some(cohort) = cohort else {
            return limits.nominal;
        };
        let most = node.local_quota(fr) + get(&cohort.quota, fr);
        match limits.borrowing_limit {
            Some(bl) => most.min(limits.nominal + bl),
            None => most,
        }
    }

    /// Would holding `val` more of `fr` take the queue past its nominal quota?
    pub fn borrowing_with(&self, cq: &str, fr: &FlavorResource, val: i64) -> bool {
        self.usage(cq, fr) + val > self.limits(cq, fr).nominal
    }

    /// Is the queue above its nominal quota in any of `frs`? Only a queue in
    /// a cohort can be.
    pub fn is_borrowing<'a>(
        &self,
        cq: &str,
        frs: impl IntoIterator<Item = &'a FlavorResource>,
    ) -> bool {
        self.cohort_of(cq).is_some() && frs.into_iter().any(|fr| self.borrowing_with(cq, fr, 0))
    }

    /// Kueue's borrowing level: 0 when `val` fits in the queue's own nominal
    /// quota (or there is no cohort), 1 when it needs the cohort.
    pub fn borrow_level(&self, cq: &str, fr: &FlavorResource, val: i64) -> u8 {
        u8::from(self.cohort_of(cq).is_some() && self.borrowing_with(cq, fr, val))
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

    /// Changes a queue's usage and keeps the cohort's usage equal to the sum
    /// of its members' usage beyond their local quota.
    pub fn change(&mut self, cq: &str, fr: &FlavorResource, delta: i64) {
        let Some(node) = self.queues.get_mut(cq) else {
            return;
        };
        let before = node.usage_in_cohort(fr);
        *node.usage.entry(fr.clone()).or_default() += delta;
        let after = node.usage_in_cohort(fr);
        if let Some(cohort) = node.cohort.as_ref().and_then(|c| self.cohorts.get_mut(c)) {
            *cohort.usage.entry(fr.clone()).or_default() += after - before;
        }
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
}
