//! The admission cycle's part in topology-aware scheduling: the node view
//! the engine is fed, the usage admitted Workloads hold on each leaf
//! (rebuilt from their `topologyAssignment`s, so a restart loses nothing),
//! and the placement of a fitting workload's TAS pod sets just before it is
//! admitted. Every placement sees the workloads admitted before it, in this
//! cycle too (Kueue's recompute within a cycle): they hold their usage from
//! the moment they are admitted.
//!
//! Preemption is TAS-aware (Kueue's `workloadFits`): a placement may be
//! asked to see the nodes without some admitted workloads
//! ([`TasView::Without`]) or without any ([`TasView::Empty`], Kueue's
//! `WithSimulateEmpty`).
//!
//! Node-failure replacement (Kueue's second pass): an admitted Workload
//! whose assignment names a node in its `status.unhealthyNodes` gets that
//! node's pods placed again within its assignment, before the cycle's
//! admissions, or is evicted when they find no room.

use super::*;
use crate::queueing::{
    flavors::Assignment,
    nodes::PodUsage,
    partial_admission::TasView,
    topology::{self, place, DomainUsage, FlavorTopology, PodSetRequest, ONE_POD, PODS},
    workload::PodSet,
};
use crate::vocabulary::keys::HOSTNAME_LABEL;

impl Engine {
    /// A Node as watched.
    pub fn sync_node(&mut self, node: topology::Node) {
        let before = self.nodes.generation();
        self.nodes.sync(node);
        if self.nodes.generation() != before {
            self.after_node_change();
        }
    }

    pub fn delete_node(&mut self, name: &str) {
        let before = self.nodes.generation();
        self.nodes.delete(name);
        if self.nodes.generation() != before {
            self.after_node_change();
        }
    }

    /// A pod as watched: `Some` while it is a bound, running pod outside
    /// TAS (see [`crate::queueing::nodes::counts_as_non_tas`]).
    pub fn update_pod_usage(&mut self, key: &str, usage: Option<PodUsage>) {
        if self.nodes.update_pod(key, usage).is_some() {
            self.after_node_change();
        }
    }

    /// Room may have appeared: the TAS queues' set-aside heads try again.
    fn after_node_change(&mut self) {
        // Pods come and go all the time; without a TAS flavor there is
        // nothing to requeue.
        if !self.flavors.values().any(ResourceFlavor::is_tas) {
            return;
        }
        let tas: Vec<String> = self
            .cluster_queues
            .values()
            .filter(|cq| {
                cq.flavor_names()
                    .iter()
                    .any(|f| self.flavors.get(*f).is_some_and(ResourceFlavor::is_tas))
            })
            .map(|cq| cq.name.clone())
            .collect();
        self.requeue_inadmissible(tas.iter().map(String::as_str));
    }

    /// The TAS flavor of a pod set's resources; an error when they span
    /// several (Kueue's `onlyTASFlavor`).
    fn tas_flavor_of<'a>(
        &'a self,
        flavors: impl Iterator<Item = &'a String>,
    ) -> Result<Option<&'a ResourceFlavor>, String> {
        let mut found: Vec<&ResourceFlavor> = Vec::new();
        for f in flavors.filter_map(|f| self.flavors.get(f)) {
            if f.is_tas() && !found.iter().any(|x| x.name == f.name) {
                found.push(f);
            }
        }
        match found.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            many => Err(format!(
                "more than one TAS flavor assigned: {}",
                many.iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Minus what the admitted workloads `keys` hold on `flavor`'s leaves
    /// (what a preemption simulation takes away).
    fn tas_usage_without(&self, keys: &[&str], flavor: &str) -> DomainUsage {
        let mut usage = DomainUsage::new();
        for key in keys {
            let Some(State::Holding(h)) = self.workloads.get(*key).map(|r| &r.state) else {
                continue;
            };
            for (f, held) in &h.topology {
                if f == flavor {
                    add_usage(&mut usage, held, -1);
                }
            }
        }
        usage
    }

    /// Places the TAS pod sets of `a` (which fits the quota) on their
    /// flavors' nodes: one entry per pod set of `a`, `None` for one not
    /// placed by TAS; or the pod set that does not fit, and Kueue's reason.
    pub(super) fn place_topology(
        &self,
        wl: &Workload,
        a: &Assignment,
        cq: &ClusterQueue,
    ) -> Result<Vec<Option<topology::Assignment>>, (String, String)> {
        self.place_topology_in(wl, a, cq, TasView::Current)
    }

    /// [`Self::place_topology`] with the TAS usage `view` shows.
    pub(super) fn place_topology_in(
        &self,
        wl: &Workload,
        a: &Assignment,
        cq: &ClusterQueue,
        view: TasView<'_>,
    ) -> Result<Vec<Option<topology::Assignment>>, (String, String)> {
        let (mut any_tas, mut tas_only) = (false, true);
        for f in cq.resource_groups.iter().flat_map(|g| &g.flavors) {
            let tas = self
                .flavors
                .get(&f.name)
                .is_some_and(ResourceFlavor::is_tas);
            any_tas |= tas;
            tas_only &= tas;
        }
        // Most queues have no TAS flavor: nothing to place.
        if !any_tas {
            return Ok(vec![None; a.pod_sets.len()]);
        }
        let mut by_flavor: BTreeMap<&str, FlavorRequests<'_>> = BTreeMap::new();
        for (i, ps) in a.pod_sets.iter().enumerate() {
            if ps.count == 0 {
                continue;
            }
            let flavor = self
                .tas_flavor_of(ps.flavors.values().map(|c| &c.flavor))
                .map_err(|e| (ps.name.clone(), e))?;
            let (Some(flavor), Some(spec)) =
                (flavor, wl.pod_sets.iter().find(|p| *p.name == ps.name))
            else {
                continue;
            };
            let explicit = spec.topology.as_ref().filter(|t| t.is_explicit());
            if explicit.is_none() && !tas_only {
                continue;
            }
            let request = PodSetRequest {
                name: ps.name.clone(),
                count: ps.count as i32,
                per_pod: per_pod(spec),
                topology: explicit.cloned(),
                group: spec.topology.as_ref().and_then(|t| t.pod_set_group.clone()),
                node_selector: spec.node_selector.clone(),
                node_affinity: spec.node_affinity.clone(),
                tolerations: spec.tolerations.clone(),
            };
            by_flavor
                .entry(&flavor.name)
                .or_insert_with(|| (flavor, Vec::new()))
                .1
                .push((i, request));
        }
        if by_flavor.is_empty() {
            return Ok(vec![None; a.pod_sets.len()]);
        }
        // TAS flavors may share nodes: what any of them holds on a node
        // counts on that node for all (leaves are the same hostnames).
        let mut held = DomainUsage::new();
        if !matches!(view, TasView::Empty) {
            for (leaf, usage) in &self.cycle_tas {
                add_to(held.entry(leaf.clone()).or_default(), usage);
            }
            let tas_flavors = self.flavors.values().filter(|f| f.is_tas());
            for f in tas_flavors {
                if let Some(usage) = self.tas_held.get(&f.name) {
                    add_usage(&mut held, usage, 1);
                }
                if let TasView::Without(keys) = view {
                    // Negative: the simulated removal of preemption candidates.
                    add_usage(&mut held, &self.tas_usage_without(keys, &f.name), 1);
                }
            }
        }
        // What this workload's pod sets placed on earlier flavors take
        // (Kueue's assumed usage): they must not overlap on shared nodes.
        let mut assumed = DomainUsage::new();
        let mut out = vec![None; a.pod_sets.len()];
        for (name, (flavor, requests)) in by_flavor {
            let Some(levels) = &flavor.topology_levels else {
                let first = requests.first().map(|(_, r)| r.name.clone());
                return Err((
                    first.unwrap_or_default(),
                    format!("Flavor {name:?} information missing in TAS cache"),
                ));
            };
            let view = FlavorTopology {
                name: flavor.topology_name.clone().unwrap_or_default(),
                levels: levels.clone(),
                node_labels: flavor.node_labels.clone(),
                tolerations: flavor.tolerations.clone(),
            };
            // The flavor's nodes less non-TAS usage, reused across
            // placements; what admitted workloads hold and what this
            // workload's earlier pod sets take go in as usage already taken
            // (a leaf's room is its free capacity less both).
            let snapshot = self.nodes.snapshot(name, &view);
            let mut taken = held.clone();
            for (leaf, usage) in &assumed {
                add_to(taken.entry(leaf.clone()).or_default(), usage);
            }
            let pod_sets: Vec<PodSetRequest> = requests.iter().map(|(_, r)| r.clone()).collect();
            let placed = place(&snapshot, &pod_sets, &taken);
            for (i, request) in &requests {
                match placed.iter().find(|p| p.pod_set == request.name) {
                    Some(p) => match &p.outcome {
                        Ok(assignment) => {
                            add_domains(&mut assumed, assignment, &request.per_pod, 1);
                            out[*i] = Some(assignment.clone());
                        }
                        Err(why) => return Err((request.name.clone(), why.clone())),
                    },
                    // `place` stops at the first group that does not fit.
                    None => {
                        return Err((
                            request.name.clone(),
                            "not placed after an earlier pod set did not fit".into(),
                        ))
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A TAS flavor and the pod sets (by index) to place on it.
type FlavorRequests<'a> = (&'a ResourceFlavor, Vec<(usize, PodSetRequest)>);

/// One pod's requests, without `pods` (placement adds one per pod).
fn per_pod(ps: &PodSet) -> topology::Resources {
    ps.requests
        .iter()
        .filter(|(r, _)| *r != PODS)
        .map(|(r, q)| (r.to_string(), q))
        .collect()
}

/// [`per_pod`] of `wl`'s pod set `name` (nothing for one it does not have).
fn per_pod_of(wl: &Workload, name: &str) -> topology::Resources {
    wl.pod_sets
        .iter()
        .find(|p| *p.name == *name)
        .map(per_pod)
        .unwrap_or_default()
}

/// Adds `sign` × what `t`'s domains take (`per_pod` and one pod per pod)
/// to their leaves.
fn add_domains(
    usage: &mut DomainUsage,
    t: &topology::Assignment,
    per_pod: &topology::Resources,
    sign: i64,
) {
    for d in &t.domains {
        let leaf = usage.entry(leaf_id(&t.levels, &d.values)).or_default();
        for (r, q) in per_pod {
            *leaf.entry(r.clone()).or_default() += sign * q * d.count;
        }
        *leaf.entry(PODS.to_string()).or_default() += sign * ONE_POD * d.count;
    }
}

/// The leaf a domain of an assignment names: its node when the lowest
/// level is the hostname, else its values joined (the snapshot's ids).
fn leaf_id(levels: &[String], values: &[String]) -> String {
    if levels.last().is_some_and(|l| l == HOSTNAME_LABEL) {
        values.last().cloned().unwrap_or_default()
    } else {
        values.join(",")
    }
}

fn add_to(to: &mut topology::Resources, usage: &topology::Resources) {
    for (r, q) in usage {
        *to.entry(r.clone()).or_default() += q;
    }
}

/// What a holding workload's topology assignments take on their leaves,
/// once under each flavor its TAS pod sets are assigned.
pub(super) type HeldTopology = Vec<(String, DomainUsage)>;

pub(super) fn held_topology(wl: &Workload, admission: &Admission) -> HeldTopology {
    let mut out: HeldTopology = Vec::new();
    for psa in &admission.pod_set_assignments {
        let Some(t) = &psa.topology else { continue };
        let per_pod = per_pod_of(wl, &psa.name);
        let mut flavors: Vec<&String> = psa.flavors.values().collect();
        flavors.sort();
        flavors.dedup();
        for flavor in flavors {
            let at = match out.iter().position(|(f, _)| f == flavor) {
                Some(at) => at,
                None => {
                    out.push((flavor.clone(), DomainUsage::new()));
                    out.len() - 1
                }
            };
            add_domains(&mut out[at].1, t, &per_pod, 1);
        }
    }
    out
}

/// Adds (`sign` 1) or takes back (-1) what a holding workload holds to the
/// per-flavor index; a leaf left with nothing leaves the index.
pub(super) fn add_held(index: &mut BTreeMap<String, DomainUsage>, held: &HeldTopology, sign: i64) {
    for (flavor, usage) in held {
        let on = index.entry(flavor.clone()).or_default();
        add_usage(on, usage, sign);
        on.retain(|_, r| r.values().any(|q| *q != 0));
        if on.is_empty() {
            index.remove(flavor);
        }
    }
}

/// Adds `sign` × `usage` to `to`, leaf by leaf.
fn add_usage(to: &mut DomainUsage, usage: &DomainUsage, sign: i64) {
    for (leaf, u) in usage {
        let on = to.entry(leaf.clone()).or_default();
        for (r, q) in u {
            *on.entry(r.clone()).or_default() += sign * q;
        }
    }
}

/// What `placed` (one entry per pod set of `wl`'s assignment `a`) takes on
/// its leaves.
pub(super) fn placed_usage(
    wl: &Workload,
    a: &Assignment,
    placed: &[Option<topology::Assignment>],
) -> DomainUsage {
    let mut usage = DomainUsage::new();
    for (ps, t) in a.pod_sets.iter().zip(placed) {
        let Some(t) = t else { continue };
        let per_pod = per_pod_of(wl, &ps.name);
        add_domains(&mut usage, t, &per_pod, 1);
    }
    usage
}

impl Engine {
    /// Puts `admission` in place of a holding workload's (a node-failure
    /// replacement, or its undoing), its TAS usage index entry with it;
    /// the admission it replaced.
    pub(super) fn swap_held_admission(
        &mut self,
        key: &str,
        admission: Admission,
    ) -> Option<Admission> {
        let mut guard = self.workloads.get_mut(key)?;
        let rec: &mut super::Record = &mut guard;
        let State::Holding(h) = &mut rec.state else {
            return None;
        };
        let topology = held_topology(&rec.wl, &admission);
        add_held(&mut self.tas_held, &h.topology, -1);
        add_held(&mut self.tas_held, &topology, 1);
        h.topology = topology;
        Some(std::mem::replace(&mut h.admission, admission))
    }

    /// Keeps `usage` on the nodes for the rest of the cycle.
    pub(super) fn reserve_tas(&mut self, usage: DomainUsage) {
        for (leaf, u) in usage {
            add_to(self.cycle_tas.entry(leaf).or_default(), &u);
        }
    }
}

/// Kueue's eviction message when a failed node's pods find no room
/// (`TASFailedNodeReplacementFailFast`); the nodes joined with ",".
pub fn no_replacement_message(nodes: &[String]) -> String {
    format!(
        "Workload was evicted as there was no replacement for unhealthy node(s): {}",
        nodes.join(",")
    )
}

/// What `admission`'s pods on `node` take there.
fn left_behind(wl: &Workload, admission: &Admission, node: &str) -> DomainUsage {
    let mut usage = DomainUsage::new();
    for psa in &admission.pod_set_assignments {
        let Some(t) = psa.topology.as_ref().filter(|t| names_node(t, node)) else {
            continue;
        };
        let on_node = topology::Assignment {
            levels: t.levels.clone(),
            domains: t
                .domains
                .iter()
                .filter(|d| d.values.last().is_some_and(|v| v == node))
                .cloned()
                .collect(),
        };
        let per_pod = per_pod_of(wl, &psa.name);
        add_domains(&mut usage, &on_node, &per_pod, 1);
    }
    usage
}

/// Whether an assignment names `node` as a leaf (only one whose lowest
/// level is the hostname names nodes).
fn names_node(t: &topology::Assignment, node: &str) -> bool {
    t.levels.last().is_some_and(|l| l == HOSTNAME_LABEL)
        && t.domains
            .iter()
            .any(|d| d.values.last().is_some_and(|v| v == node))
}

impl Engine {
    /// Kueue's second pass after a node failure, for the admitted
    /// Workloads among `keys`: a Workload whose topology assignment names
    /// a node of its `status.unhealthyNodes` has that node's pods placed
    /// again near the rest ([`topology::replace`]); its quota stays as it
    /// is. The new admission holds at once, so the usage moves from the
    /// failed node to the new one and is never counted twice. With no room
    /// the Workload is evicted (FailFast, on by default).
    pub(super) fn replace_failed_nodes(&mut self, keys: &[Arc<str>], out: &mut Vec<Decision>) {
        for key in keys {
            let Some(rec) = self.workloads.get(&**key) else {
                continue;
            };
            let State::Holding(h) = &rec.state else {
                continue;
            };
            let unhealthy = &rec.wl.unhealthy_nodes;
            let failed = h
                .admission
                .pod_set_assignments
                .iter()
                .filter_map(|p| p.topology.as_ref())
                .any(|t| unhealthy.iter().any(|n| names_node(t, n)));
            if h.evicting || !h.confirmed || h.replaced.is_some() || !failed {
                continue;
            }
            match self.replacement(&rec.wl, &h.admission, &unhealthy[0]) {
                Ok(admission) => {
                    // The failed node's share stays taken until the cycle
                    // ends, as in Kueue's cycle snapshot: no one else is
                    // placed there in the same cycle.
                    let left = left_behind(&rec.wl, &h.admission, &unhealthy[0]);
                    self.reserve_tas(left);
                    out.push(Decision::Replace {
                        workload: key.to_string(),
                        admission: admission.clone(),
                    });
                    let old = self.swap_held_admission(key, admission);
                    self.workloads.with_holding(key, |h| h.replaced = old);
                }
                Err(_) => {
                    out.push(Decision::Evict {
                        workload: key.to_string(),
                        reason: EvictionReason::NodeFailures,
                        message: no_replacement_message(unhealthy),
                        preempted_reason: None,
                        preemptor: None,
                    });
                    self.mark_evicting(key);
                }
            }
        }
    }

    /// `admission` with the pods of `node` placed again, pod set by pod
    /// set; Kueue's reason for the first that finds no room.
    fn replacement(
        &self,
        wl: &Workload,
        admission: &Admission,
        node: &str,
    ) -> Result<Admission, String> {
        // What every admitted workload holds on the nodes, this one's kept
        // pods included, and what this cycle has taken so far.
        let mut held = self.cycle_tas.clone();
        for f in self.flavors.values().filter(|f| f.is_tas()) {
            if let Some(usage) = self.tas_held.get(&f.name) {
                add_usage(&mut held, usage, 1);
            }
        }
        let mut next = admission.clone();
        for psa in &mut next.pod_set_assignments {
            let Some(existing) = psa.topology.as_ref().filter(|t| names_node(t, node)) else {
                continue;
            };
            let Some(spec) = wl.pod_sets.iter().find(|p| *p.name == psa.name) else {
                continue;
            };
            let flavor = self
                .tas_flavor_of(psa.flavors.values())?
                .ok_or_else(|| format!("no TAS flavor for pod set {}", psa.name))?;
            let levels = flavor.topology_levels.clone().ok_or_else(|| {
                format!("Flavor {:?} information missing in TAS cache", flavor.name)
            })?;
            let view = FlavorTopology {
                name: flavor.topology_name.clone().unwrap_or_default(),
                levels,
                node_labels: flavor.node_labels.clone(),
                tolerations: flavor.tolerations.clone(),
            };
            let snapshot = self.nodes.snapshot(&flavor.name, &view);
            let request = PodSetRequest {
                name: psa.name.clone(),
                count: psa.count as i32,
                per_pod: per_pod(spec),
                topology: spec.topology.clone().filter(|t| t.is_explicit()),
                group: spec.topology.as_ref().and_then(|t| t.pod_set_group.clone()),
                node_selector: spec.node_selector.clone(),
                node_affinity: spec.node_affinity.clone(),
                tolerations: spec.tolerations.clone(),
            };
            let replaced = topology::replace(
                &snapshot,
                topology::Replacement {
                    pod_set: &request,
                    existing,
                    unhealthy_node: node,
                    single_pod_owned: wl.single_pod_owned,
                },
                &held,
            )?;
            // Later pod sets see where this one's pods went.
            add_domains(&mut held, &replaced.added, &request.per_pod, 1);
            psa.topology = Some(replaced.assignment);
        }
        Ok(next)
    }
}

#[cfg(test)]
impl Engine {
    /// The per-flavor index rebuilt by walking every holding workload: the
    /// index kept on hold and release must always equal it.
    pub(super) fn tas_held_walked(&self) -> BTreeMap<String, DomainUsage> {
        let mut index = BTreeMap::new();
        for rec in self.workloads.values() {
            if let State::Holding(h) = &rec.state {
                add_held(&mut index, &held_topology(&rec.wl, &h.admission), 1);
            }
        }
        index
    }
}
