//! Kueue's `kueue.x-k8s.io/resource-in-use` finalizer on ClusterQueues,
//! ResourceFlavors and Topologies: added to every one not being deleted,
//! and removed from a deleted one only once nothing uses it — a
//! ClusterQueue once no workload holds quota in it (Kueue's
//! `ClusterQueueEmpty`), a flavor once no ClusterQueue names it
//! (`ClusterQueuesUsingFlavor`), a Topology once no ResourceFlavor names it
//! in `spec.topologyName` (Kueue's Topology controller).

use super::Engine;
use crate::vocabulary::keys::RESOURCE_IN_USE_FINALIZER;

/// The kinds the finalizer guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Guarded {
    ClusterQueue,
    ResourceFlavor,
    Topology,
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
    needed(has_finalizer, deleting, || match kind {
        Guarded::ClusterQueue => engine.cluster_queue_empty(name),
        Guarded::ResourceFlavor => engine.cluster_queues_using_flavor(name).is_empty(),
        // In use while a ResourceFlavor the engine knows (a deleted one
        // too, until it is gone) names it.
        Guarded::Topology => engine.flavors_naming_topology(name).is_empty(),
    })
}

/// The change a Topology's finalizers need: `naming_flavors` are the
/// ResourceFlavors (deleted ones too, while they exist) whose
/// `spec.topologyName` is this Topology.
pub fn topology_change(
    naming_flavors: &[&str],
    has_finalizer: bool,
    deleting: bool,
) -> Option<Change> {
    needed(has_finalizer, deleting, || naming_flavors.is_empty())
}

fn needed(has_finalizer: bool, deleting: bool, unused: impl FnOnce() -> bool) -> Option<Change> {
    match (deleting, has_finalizer) {
        (false, false) => Some(Change::Add),
        (true, true) => unused().then_some(Change::Remove),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Kueue's `topologyReconciler.Reconcile`: the finalizer is added to a
    /// live Topology and held while a deleted one is named by a flavor.
    #[test]
    fn a_topology_keeps_its_finalizer_while_a_flavor_names_it() {
        type Case<'a> = (&'a str, &'a [&'a str], bool, bool, Option<Change>);
        let cases: &[Case] = &[
            ("new, unused", &[], false, false, Some(Change::Add)),
            (
                "new, named",
                &["tas-flavor"],
                false,
                false,
                Some(Change::Add),
            ),
            ("live with it", &["tas-flavor"], true, false, None),
            ("deleted, still named", &["tas-flavor"], true, true, None),
            (
                "deleted, no longer named",
                &[],
                true,
                true,
                Some(Change::Remove),
            ),
            ("deleted, already let go", &[], false, true, None),
        ];
        for (name, flavors, has, deleting, want) in cases {
            assert_eq!(topology_change(flavors, *has, *deleting), *want, "{name}");
        }
    }

    #[test]
    fn apply_keeps_other_finalizers() {
        let other = "example.com/keep".to_string();
        assert_eq!(
            apply(std::slice::from_ref(&other), Change::Add),
            [other.clone(), RESOURCE_IN_USE_FINALIZER.to_string()]
        );
        assert_eq!(
            apply(
                &[RESOURCE_IN_USE_FINALIZER.to_string(), other.clone()],
                Change::Remove
            ),
            [other]
        );
    }
}
