//! The engine's workload records, and what every LocalQueue's and
//! ClusterQueue's status reads of them, kept as they change: the status
//! tick and each cycle's ClusterQueue statuses read the queues, not every
//! workload. A record is changed only through [`RecordMut`],
//! which takes the record's part out of the counts when it is borrowed and
//! puts it back, as the record is then, when it is dropped; so no change
//! of state, activity, LocalQueue or held quota can be missed.

use std::collections::{BTreeMap, HashMap};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use indexmap::IndexMap;

use super::{Holding, PendingReason, Record, State};
use crate::queueing::quota::FlavorResource;
use crate::queueing::Hasher;

/// Per flavor, per resource: the quota held, and by how many workloads
/// (an entry stays while any holds it, even at zero, as a walk finds it).
pub(super) type Held = BTreeMap<String, BTreeMap<String, (i64, usize)>>;

/// What one LocalQueue's workloads come to.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Tally {
    pub queued: usize,
    /// In no queue and active: pending behind a missing or stopped queue.
    pub parked_active: usize,
    pub reserving: usize,
    pub admitted: usize,
    pub usage: Held,
    pub admitted_usage: Held,
}

impl Tally {
    fn is_empty(&self) -> bool {
        self.queued == 0 && self.parked_active == 0 && self.reserving == 0
    }
}

/// Every LocalQueue's [`Tally`], by namespace, then name.
type ByLocalQueue = HashMap<Arc<str>, HashMap<Arc<str>, Tally, Hasher>, Hasher>;

/// What a ClusterQueue's admitted workloads (their admission written)
/// hold: how many, and the quota per flavor and resource.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Admitted {
    pub workloads: usize,
    pub usage: Held,
}

impl Admitted {
    /// The quota of `fr` its admitted workloads hold.
    pub fn of(&self, fr: &FlavorResource) -> i64 {
        self.usage
            .get(&fr.flavor)
            .and_then(|r| r.get(&fr.resource))
            .map_or(0, |e| e.0)
    }
}

/// Both sets of counts a record has a part in.
#[derive(Debug, Default)]
struct Counts {
    local_queues: ByLocalQueue,
    cluster_queues: HashMap<Arc<str>, Admitted, Hasher>,
}

/// The records by key, in the order they came, with every LocalQueue's
/// [`Tally`] and every ClusterQueue's [`Admitted`]. Reads go to the map
/// itself.
#[derive(Debug, Default)]
pub(super) struct Records {
    map: IndexMap<Arc<str>, Box<Record>, Hasher>,
    counts: Counts,
}

impl Deref for Records {
    type Target = IndexMap<Arc<str>, Box<Record>, Hasher>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl Records {
    pub fn get_mut(&mut self, key: &str) -> Option<RecordMut<'_>> {
        let rec = self.map.get_mut(key)?;
        count(&mut self.counts, rec, false);
        Some(RecordMut {
            rec,
            counts: &mut self.counts,
        })
    }

    /// A record's pending status, to set: it counts for nothing, so no
    /// guard (a cycle sets it for every workload it tries).
    pub fn pending_mut(&mut self, key: &str) -> Option<&mut Option<(PendingReason, Arc<str>)>> {
        Some(&mut self.map.get_mut(key)?.pending)
    }

    /// Changes a workload that holds quota; `None` for any other.
    pub fn with_holding<R>(&mut self, key: &str, f: impl FnOnce(&mut Holding) -> R) -> Option<R> {
        let mut rec = self.get_mut(key)?;
        match &mut rec.state {
            State::Holding(h) => Some(f(h)),
            _ => None,
        }
    }

    pub fn insert(&mut self, key: Arc<str>, rec: Box<Record>) {
        count(&mut self.counts, &rec, true);
        if let Some(old) = self.map.insert(key, rec) {
            count(&mut self.counts, &old, false);
        }
    }

    pub fn swap_remove(&mut self, key: &str) -> Option<Box<Record>> {
        let rec = self.map.swap_remove(key)?;
        count(&mut self.counts, &rec, false);
        Some(rec)
    }

    /// A LocalQueue's counts, if any of its workloads is pending or holds
    /// quota.
    pub fn tally(&self, namespace: &str, name: &str) -> Option<&Tally> {
        self.counts.local_queues.get(namespace)?.get(name)
    }

    /// What a ClusterQueue's admitted workloads hold, if any is admitted.
    pub fn admitted(&self, cluster_queue: &str) -> Option<&Admitted> {
        self.counts.cluster_queues.get(cluster_queue)
    }

    /// Every LocalQueue a workload names, with its counts.
    pub fn tallies(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<str>, &Tally)> {
        self.counts
            .local_queues
            .iter()
            .flat_map(|(ns, m)| m.iter().map(move |(name, t)| (ns, name, t)))
    }
}

/// A record borrowed for change; its counts are brought up to date when it
/// is dropped.
pub(super) struct RecordMut<'a> {
    rec: &'a mut Record,
    counts: &'a mut Counts,
}

impl Deref for RecordMut<'_> {
    type Target = Record;
    fn deref(&self) -> &Record {
        self.rec
    }
}

impl DerefMut for RecordMut<'_> {
    fn deref_mut(&mut self) -> &mut Record {
        self.rec
    }
}

impl Drop for RecordMut<'_> {
    fn drop(&mut self) {
        count(self.counts, self.rec, true);
    }
}

/// Adds `rec`'s part to its LocalQueue's tally and, once admitted, to its
/// ClusterQueue's; or takes it away.
fn count(counts: &mut Counts, rec: &Record, add: bool) {
    if let State::Holding(h) = &rec.state {
        if h.admitted() {
            admit(&mut counts.cluster_queues, h, add);
        }
    }
    let tally = &mut counts.local_queues;
    let wl = &rec.wl;
    // An inactive workload in no queue is pending nowhere.
    if matches!(rec.state, State::Parked) && !wl.active {
        return;
    }
    // Looked up by the borrowed names; the keys are cloned only when new.
    if !tally.contains_key(&*wl.namespace) {
        tally.insert(wl.namespace.clone(), HashMap::default());
    }
    let names = tally.get_mut(&*wl.namespace).expect("inserted above");
    if !names.contains_key(&*wl.queue_name) {
        names.insert(wl.queue_name.clone(), Tally::default());
    }
    let t = names.get_mut(&*wl.queue_name).expect("inserted above");
    let step = |n: &mut usize| *n = if add { *n + 1 } else { *n - 1 };
    match &rec.state {
        State::Parked => step(&mut t.parked_active),
        State::Queued { .. } => step(&mut t.queued),
        State::Holding(h) => {
            step(&mut t.reserving);
            if h.admitted() {
                step(&mut t.admitted);
            }
            for (fr, q) in &h.usage {
                hold(&mut t.usage, &fr.flavor, &fr.resource, *q, add);
                if h.admitted() {
                    hold(&mut t.admitted_usage, &fr.flavor, &fr.resource, *q, add);
                }
            }
        }
    }
    if t.is_empty() {
        names.remove(&*wl.queue_name);
        if names.is_empty() {
            tally.remove(&*wl.namespace);
        }
    }
}

/// Adds an admitted workload's part to its ClusterQueue's [`Admitted`], or
/// takes it away (the entry goes with its last workload).
fn admit(by_cq: &mut HashMap<Arc<str>, Admitted, Hasher>, h: &Holding, add: bool) {
    if !by_cq.contains_key(&*h.cq) {
        by_cq.insert(h.cq.clone(), Admitted::default());
    }
    let a = by_cq.get_mut(&*h.cq).expect("inserted above");
    if add {
        a.workloads += 1;
    } else {
        a.workloads -= 1;
    }
    for (fr, q) in &h.usage {
        hold(&mut a.usage, &fr.flavor, &fr.resource, *q, add);
    }
    if a.workloads == 0 {
        by_cq.remove(&*h.cq);
    }
}

fn hold(held: &mut Held, flavor: &str, resource: &str, q: i64, add: bool) {
    if !held.contains_key(flavor) {
        held.insert(flavor.to_string(), BTreeMap::new());
    }
    let resources = held.get_mut(flavor).expect("inserted above");
    if !resources.contains_key(resource) {
        resources.insert(resource.to_string(), (0, 0));
    }
    let entry = resources.get_mut(resource).expect("inserted above");
    if add {
        entry.0 += q;
        entry.1 += 1;
    } else {
        entry.0 -= q;
        entry.1 -= 1;
    }
    if entry.1 == 0 {
        resources.remove(resource);
        if resources.is_empty() {
            held.remove(flavor);
        }
    }
}
