//! The pending workloads of one ClusterQueue (`pkg/cache/queue/cluster_queue.go`):
//! an ordered queue, the set-aside (inadmissible) workloads, and the sticky
//! preemptor that keeps its place while its victims are being evicted.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use super::workload::Workload;

/// Queue order: higher priority, then older, then UID; the key only keeps
/// distinct workloads distinct, and the shape rides along for
/// [`PendingQueue::set_aside_alike`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct QueueOrder {
    priority: Reverse<i32>,
    created: i64,
    // Shared: entries move between the queue and the set-aside set often.
    uid: Arc<str>,
    pub key: Arc<str>,
    pub shape: u64,
    /// The workload's LocalQueue (namespace, name): the queue counts its
    /// entries by it, so the status tick need not look each one up.
    lq: LocalQueueKey,
}

/// A LocalQueue's (namespace, name), shared with the workloads'.
pub(crate) type LocalQueueKey = (Arc<str>, Arc<str>);

impl QueueOrder {
    /// `key` is the engine's copy of the workload's key.
    pub fn of(key: &Arc<str>, wl: &Workload) -> Self {
        Self::shaped(key, wl, wl.shape_hash())
    }

    fn shaped(key: &Arc<str>, wl: &Workload, shape: u64) -> Self {
        QueueOrder {
            priority: Reverse(wl.priority),
            created: wl.created,
            uid: wl.uid.clone(),
            key: key.clone(),
            shape,
            lq: (wl.namespace.clone(), wl.queue_name.clone()),
        }
    }
}

/// How many of a LocalQueue's workloads wait in one ClusterQueue's queue,
/// and how many of those are set aside.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Waiting {
    pub members: usize,
    pub set_aside: usize,
}

#[derive(Debug, Default)]
pub(crate) struct PendingQueue {
    queued: BTreeSet<QueueOrder>,
    /// Set aside after failing to fit (BestEffortFIFO), until quota frees up.
    inadmissible: BTreeSet<QueueOrder>,
    /// The preemptor waiting for its victims (see [`Self::is_preemptor`]).
    preemptor: Option<String>,
    /// In a BestEffortFIFO queue the preemptor is also popped first.
    sticky: bool,
    /// Kept as entries come and go (see [`Self::waiting`]).
    by_local_queue: HashMap<LocalQueueKey, Waiting>,
    /// Shapes set aside since the last requeue (Kueue's
    /// `hashToBulkMoveReason`): a newcomer of one of them is set aside
    /// without a try, as the head like it failed.
    failed_shapes: HashSet<u64>,
}

impl PendingQueue {
    pub fn push(&mut self, order: QueueOrder) {
        let lq = order.lq.clone();
        if self.queued.insert(order) {
            self.count(lq, 1, 0);
        }
    }

    /// Queues a workload new to this queue; one shaped like a head that
    /// failed since the last requeue is set aside at once (Kueue's
    /// `PushOrUpdate` with `SchedulingEquivalenceHashing`, on by default).
    /// Returns whether it was set aside.
    pub fn push_new(&mut self, order: QueueOrder) -> bool {
        if self.failed_shapes.contains(&order.shape) {
            self.set_aside(order);
            return true;
        }
        self.push(order);
        false
    }

    pub fn set_aside(&mut self, order: QueueOrder) {
        let lq = order.lq.clone();
        if self.inadmissible.insert(order) {
            self.count(lq, 1, 1);
        }
    }

    /// Adds to (or with negative numbers takes from) a LocalQueue's counts,
    /// forgetting it at zero.
    fn count(&mut self, lq: LocalQueueKey, members: isize, set_aside: isize) {
        count(&mut self.by_local_queue, lq, members, set_aside);
    }

    /// Each LocalQueue with workloads in this queue, and how many wait and
    /// are set aside: kept as the queue changes, so reading it costs the
    /// LocalQueues, not the workloads.
    pub fn waiting(&self) -> impl Iterator<Item = (&LocalQueueKey, &Waiting)> {
        self.by_local_queue.iter()
    }

    /// Forgets the workload wherever it waits, found by its place in the
    /// order whatever shape it was queued with: the shape is last in the
    /// order, and hashing it again was most of the cost.
    pub fn remove(&mut self, key: &Arc<str>, wl: &Workload) {
        let lo = QueueOrder::shaped(key, wl, 0);
        let hi = QueueOrder::shaped(key, wl, u64::MAX);
        for (set, aside) in [(&mut self.queued, 0), (&mut self.inadmissible, -1)] {
            if let Some(found) = set.range(&lo..=&hi).next().cloned() {
                set.remove(&found);
                count(&mut self.by_local_queue, found.lq, -1, aside);
            }
        }
        self.clear_preemptor(key);
    }

    /// `key` issued preemptions and waits for its victims to go; `sticky`:
    /// it is popped first until it is admitted or leaves (BestEffortFIFO).
    pub fn mark_preemptor(&mut self, key: &str, sticky: bool) {
        self.preemptor = Some(key.to_string());
        self.sticky = sticky;
    }

    /// Whether `key` is the queue's preemptor still waiting for its
    /// victims: in the cycle it goes ahead of them, so the quota they free
    /// is not taken back by one it then preempts again.
    pub fn is_preemptor(&self, key: &str) -> bool {
        self.preemptor.as_deref() == Some(key)
    }

    pub fn clear_preemptor(&mut self, key: &str) {
        if self.preemptor.as_deref() == Some(key) {
            self.preemptor = None;
        }
    }

    fn sticky(&self) -> Option<&str> {
        self.preemptor.as_deref().filter(|_| self.sticky)
    }

    /// The next workload to try: the sticky preemptor if it is queued, else
    /// the first in order.
    pub fn pop(&mut self) -> Option<QueueOrder> {
        if let Some(key) = self.sticky() {
            if let Some(order) = self.queued.iter().find(|o| &*o.key == key).cloned() {
                self.queued.remove(&order);
                self.count(order.lq.clone(), -1, 0);
                return Some(order);
            }
        }
        let order = self.queued.pop_first()?;
        self.count(order.lq.clone(), -1, 0);
        Some(order)
    }

    /// Like [`Self::pop`], but the queued workload of the lowest `rank`
    /// first, then the sticky preemptor, then queue order (admission fair
    /// sharing's order: the LocalQueue's usage comes before the rest, and
    /// changes as the usage does, so it is not kept sorted).
    pub fn pop_ranked(&mut self, rank: impl Fn(&QueueOrder) -> f64) -> Option<QueueOrder> {
        let sticky = self.sticky();
        let not_sticky = |o: &QueueOrder| sticky != Some(&*o.key);
        let best = self
            .queued
            .iter()
            .map(|o| (rank(o), o))
            .min_by(|a, b| {
                a.0.total_cmp(&b.0)
                    .then_with(|| not_sticky(a.1).cmp(&not_sticky(b.1)))
                    .then_with(|| a.1.cmp(b.1))
            })
            .map(|(_, o)| o.clone())?;
        self.queued.remove(&best);
        self.count(best.lq.clone(), -1, 0);
        Some(best)
    }

    /// Moves every set-aside workload back into the queue.
    pub fn requeue_inadmissible(&mut self) -> bool {
        self.failed_shapes.clear();
        if self.inadmissible.is_empty() {
            return false;
        }
        self.queued.append(&mut self.inadmissible);
        for w in self.by_local_queue.values_mut() {
            w.set_aside = 0;
        }
        true
    }

    /// Sets aside the queued workloads shaped like the head that just
    /// failed, and those that come until the next requeue.
    pub fn set_aside_alike(&mut self, shape: u64) {
        self.failed_shapes.insert(shape);
        self.set_aside_matching(|o| o.shape == shape);
    }

    /// Sets aside the queued workloads `same` picks (those that would fail
    /// like the head that just failed).
    fn set_aside_matching(&mut self, mut same: impl FnMut(&QueueOrder) -> bool) {
        let inadmissible = &mut self.inadmissible;
        let by_local_queue = &mut self.by_local_queue;
        self.queued.retain(|o| {
            let keep = !same(o);
            if !keep {
                // A workload already set aside is in the queue once less.
                let (members, aside) = if inadmissible.insert(o.clone()) {
                    (0, 1)
                } else {
                    (-1, 0)
                };
                count(by_local_queue, o.lq.clone(), members, aside);
            }
            keep
        });
    }

    /// Whether a workload is set aside.
    pub fn has_set_aside(&self) -> bool {
        !self.inadmissible.is_empty()
    }

    /// Whether a requeue would change anything: a workload set aside, or
    /// a shape newcomers are set aside by.
    pub fn awaits_requeue(&self) -> bool {
        self.has_set_aside() || !self.failed_shapes.is_empty()
    }

    /// Whether a workload waits in order (not set aside).
    pub fn has_queued(&self) -> bool {
        !self.queued.is_empty()
    }

    pub fn len(&self) -> usize {
        self.queued.len() + self.inadmissible.len()
    }

    /// How many workloads are set aside.
    pub fn set_aside_len(&self) -> usize {
        self.inadmissible.len()
    }

    /// The workloads set aside after a failed attempt (Kueue's
    /// "inadmissible" pending workloads).
    pub fn set_aside_keys(&self) -> impl Iterator<Item = &str> {
        self.inadmissible.iter().map(|o| &*o.key)
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.queued
            .iter()
            .chain(&self.inadmissible)
            .map(|o| &*o.key)
    }
}

fn count(
    by_local_queue: &mut HashMap<LocalQueueKey, Waiting>,
    lq: LocalQueueKey,
    members: isize,
    set_aside: isize,
) {
    use std::collections::hash_map::Entry;
    let mut w = match by_local_queue.entry(lq) {
        Entry::Occupied(w) => w,
        Entry::Vacant(v) => v.insert_entry(Waiting::default()),
    };
    let n = w.get_mut();
    n.members = n.members.wrapping_add_signed(members);
    n.set_aside = n.set_aside.wrapping_add_signed(set_aside);
    if n.members == 0 {
        w.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(name: &str, priority: i32, created: i64, uid: &str) -> QueueOrder {
        QueueOrder {
            priority: Reverse(priority),
            created,
            uid: uid.into(),
            key: format!("ns/{name}").into(),
            shape: 0,
            lq: ("ns".into(), "lq".into()),
        }
    }

    /// Removal finds the workload by its place in the order, whatever
    /// shape it was queued or set aside with, and takes nothing else.
    #[test]
    fn remove_finds_a_workload_whatever_its_queued_shape() {
        let wl = |name: &str, priority: i32| Workload {
            unhealthy_nodes: Vec::new(),
            single_pod_owned: false,
            namespace: "ns".into(),
            name: name.into(),
            uid: name.into(),
            job_uid: None,
            copy_chain: None,
            queue_name: "lq".into(),
            priority,
            created: 10,
            active: true,
            finished: false,
            readiness: Default::default(),
            replaces: None,
            pod_sets: Vec::new(),
            admission: None,
        };
        let mut q = PendingQueue::default();
        for (name, shape, aside) in [("a", 7, false), ("b", u64::MAX, true), ("c", 0, false)] {
            let mut o = order(name, 1, 10, name);
            o.shape = shape;
            if aside {
                q.set_aside(o);
            } else {
                q.push(o);
            }
        }
        q.mark_preemptor("ns/a", false);
        q.remove(&"ns/a".into(), &wl("a", 1));
        q.remove(&"ns/b".into(), &wl("b", 1));
        // Another priority is another place in the order: nothing taken.
        q.remove(&"ns/c".into(), &wl("c", 2));
        assert!(!q.is_preemptor("ns/a"));
        assert_eq!(q.len(), 1);
        assert_eq!(&*q.pop().unwrap().key, "ns/c");
    }

    #[test]
    fn priority_then_age_then_uid() {
        let mut q = PendingQueue::default();
        q.push(order("old-low", 1, 10, "a"));
        q.push(order("new-high", 5, 30, "b"));
        q.push(order("old-high-z", 5, 20, "z"));
        q.push(order("old-high-c", 5, 20, "c"));
        let popped: Vec<_> = std::iter::from_fn(|| q.pop())
            .map(|o| o.key.to_string())
            .collect();
        assert_eq!(
            popped,
            [
                "ns/old-high-c",
                "ns/old-high-z",
                "ns/new-high",
                "ns/old-low"
            ]
        );
    }

    #[test]
    fn sticky_preemptor_comes_first_and_set_aside_comes_back() {
        let mut q = PendingQueue::default();
        q.push(order("a", 5, 1, "a"));
        q.push(order("b", 1, 1, "b"));
        q.mark_preemptor("ns/b", true);
        assert_eq!(&*q.pop().unwrap().key, "ns/b");
        let a = q.pop().unwrap();
        q.set_aside(a.clone());
        assert_eq!(q.pop(), None);
        assert_eq!(q.len(), 1);
        assert!(q.requeue_inadmissible());
        assert_eq!(q.pop(), Some(a));
    }

    /// Kueue's equivalence hashing: once a head fails, the queued workloads
    /// shaped like it and those that come after it are set aside untried,
    /// until the next requeue; other shapes queue as before.
    #[test]
    fn newcomers_shaped_like_a_failed_head_wait_for_the_requeue() {
        let shaped = |name: &str, shape: u64| {
            let mut o = order(name, 1, 10, name);
            o.shape = shape;
            o
        };
        let mut q = PendingQueue::default();
        q.push(shaped("queued-alike", 1));
        q.push(shaped("queued-other", 2));
        q.set_aside_alike(1);
        assert_eq!(q.set_aside_len(), 1);
        assert!(q.push_new(shaped("new-alike", 1)));
        assert!(!q.push_new(shaped("new-other", 2)));
        assert_eq!(q.set_aside_len(), 2);
        let first = q.pop().unwrap();
        assert!(first.key.ends_with("other"), "{}", first.key);
        assert!(q.awaits_requeue());
        assert!(q.requeue_inadmissible());
        // After the requeue the shape is tried again.
        assert!(!q.push_new(shaped("later-alike", 1)));
        assert!(!q.awaits_requeue());
        assert_eq!(q.len(), 4);
    }
}
