//! Kueue's `kueue.x-k8s.io/resource-in-use` finalizer on ClusterQueues and
//! ResourceFlavors: added to every one not being deleted, and removed from
//! a deleted one only once nothing uses it — a ClusterQueue once no
//! workload holds quota in it (Kueue's `ClusterQueueEmpty`), a flavor once
//! no ClusterQueue names it (`ClusterQueuesUsingFlavor`).

use super::Engine;
use crate::vocabulary::keys::RESOURCE_IN_USE_FINALIZER;

/// The kinds the finalizer guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Guarded {
    ClusterQueue,
    ResourceFlavor,
}

/// What the finalizer list of one object needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Add,
    Remove,
}

/// The change one object's finalizers need, given whether it carries the
/// finalizer and whether it is being deleted; `None` when it is right.
pub fn change(
    engine: &Engine,
    kind: Guarded,
    name: &str,
    has_finalizer: bool,
    deleting: bool,
) -> Option<Change> {
    match (deleting, has_finalizer) {
        (false, false) => Some(Change::Add),
        (true, true) => {
            let unused = match kind {
                Guarded::ClusterQueue => engine.cluster_queue_empty(name),
                Guarded::ResourceFlavor => engine.cluster_queues_using_flavor(name).is_empty(),
            };
            unused.then_some(Change::Remove)
        }
        // Being deleted without it: nothing holds the object; not deleted
        // and holding it: as it should be.
        _ => None,
    }
}

/// `finalizers` after `change`, keeping everyone else's.
pub fn apply(finalizers: &[String], change: Change) -> Vec<String> {
    let mut out: Vec<String> = finalizers
        .iter()
        .filter(|f| *f != RESOURCE_IN_USE_FINALIZER)
        .cloned()
        .collect();
    if change == Change::Add {
        out.push(RESOURCE_IN_USE_FINALIZER.to_string());
    }
    out
}
