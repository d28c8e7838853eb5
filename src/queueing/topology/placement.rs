//! Placing pod sets on a [`Snapshot`]: Kueue's `findTopologyAssignment`
//! in three phases.
//!
//! 1. Counts: how many pods (and slices, and a leader) fit in every leaf,
//!    summed up the tree.
//! 2. (a) The level and the domains there that hold the whole pod set;
//!    (b) down level by level, as few domains as possible at each.
//! 3. The leaf domains with their pod counts, sorted by level values.
//!
//! Domain order follows the default `TASProfileMixed` profile: BestFit for
//! required and preferred requests (most free first, but the last domain
//! taken is the tightest that still fits), LeastFreeCapacity for
//! unconstrained ones. Ties fall to the domains' level values.

use std::collections::BTreeMap;

use crate::api::kueue::conversion::topology::Domain;
use crate::queueing::flavors::Toleration;
use crate::queueing::node_affinity::NodeAffinity;

use super::snapshot::{add, subtract, taint_name, untolerated, Resources, Snapshot, ONE_POD, PODS};

pub use crate::queueing::workload::{SliceLayer, TopologyRequest};

/// One pod set to place on the flavor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodSetRequest {
    pub name: String,
    pub count: i32,
    /// Per pod, in milli-units, without `pods` (one is added per pod).
    pub per_pod: Resources,
    /// `None`: TAS is implied (every flavor of the ClusterQueue is a TAS
    /// flavor), placed as unconstrained at the lowest level.
    pub topology: Option<TopologyRequest>,
    /// `podSetGroupName`: pod sets of one group (a leader of one pod and
    /// its workers) are placed together.
    pub group: Option<String>,
    pub node_selector: BTreeMap<String, String>,
    /// Required node affinity, checked where a leaf is one node.
    pub node_affinity: NodeAffinity,
    pub tolerations: Vec<Toleration>,
}

/// Where a pod set's pods go: leaf domains with pod counts, sorted by level
/// values. When the lowest level is `kubernetes.io/hostname`, `levels` and
/// each domain's values hold that level only, as Kueue's `buildAssignment`
/// writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub levels: Vec<String>,
    pub domains: Vec<Domain>,
}

/// The outcome for one pod set: its assignment, or Kueue's reason why not.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSetPlacement {
    pub pod_set: String,
    pub outcome: Result<Assignment, String>,
}

/// Usage by leaf id (hostname, or level values joined with commas),
/// `pods` included.
pub type DomainUsage = BTreeMap<String, Resources>;

/// Places every pod set on the flavor, in order, each seeing the usage of
/// the ones before it (`FindTopologyAssignmentsForFlavor`). `assumed` is
/// usage already taken in this cycle (e.g. by sibling flavors on the same
/// nodes). Pod sets of a group are placed together. Stops at the first
/// group that does not fit; the pod sets after it are not in the result.
pub fn place(
    snapshot: &Snapshot,
    pod_sets: &[PodSetRequest],
    assumed: &DomainUsage,
) -> Vec<PodSetPlacement> {
    let mut assumed = assumed.clone();
    let mut groups: Vec<(String, Vec<&PodSetRequest>)> = Vec::new();
    for (idx, ps) in pod_sets.iter().enumerate() {
        let key = ps.group.clone().unwrap_or_else(|| idx.to_string());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(ps),
            None => groups.push((key, vec![ps])),
        }
    }
    let mut result = Vec::new();
    for (_, members) in groups {
        let Some((workers, leader)) = leader_and_workers(&members) else {
            continue;
        };
        let outcome = Placement::new(snapshot, &assumed).run(workers, leader);
        match outcome {
            Err(reason) => {
                result.extend(members.iter().map(|ps| PodSetPlacement {
                    pod_set: ps.name.clone(),
                    outcome: Err(reason.clone()),
                }));
                return result;
            }
            Ok(assignments) => {
                for ps in members {
                    let Some(assignment) = assignments.get(&ps.name) else {
                        continue;
                    };
                    for domain in &assignment.domains {
                        let usage = usage_of(&ps.per_pod, domain.count);
                        add(assumed.entry(domain.values.join(",")).or_default(), &usage);
                    }
                    result.push(PodSetPlacement {
                        pod_set: ps.name.clone(),
                        outcome: Ok(assignment.clone()),
                    });
                }
            }
        }
    }
    result
}

/// Places one pod set alone, on leaves whose level values start with
/// `within` (Kueue's `requiredReplacementDomain`).
pub(super) fn place_within<'a>(
    snapshot: &'a Snapshot,
    request: &PodSetRequest,
    assumed: &'a DomainUsage,
    within: &'a [String],
) -> Result<Assignment, String> {
    let mut placement = Placement::new(snapshot, assumed);
    placement.within = within;
    let mut placed = placement.run(request, None)?;
    Ok(placed.remove(&request.name).unwrap_or(Assignment {
        levels: Vec::new(),
        domains: Vec::new(),
    }))
}

/// Workers are the first pod set of the group unless the second is larger.
fn leader_and_workers<'a>(
    members: &[&'a PodSetRequest],
) -> Option<(&'a PodSetRequest, Option<&'a PodSetRequest>)> {
    match members {
        [first, second, ..] if second.count > first.count => Some((second, Some(first))),
        [first, second, ..] => Some((first, Some(second))),
        [first] => Some((first, None)),
        [] => None,
    }
}

fn usage_of(per_pod: &Resources, count: i64) -> Resources {
    let mut usage: Resources = per_pod
        .iter()
        .map(|(r, q)| (r.clone(), q.saturating_mul(count)))
        .collect();
    *usage.entry(PODS.to_string()).or_default() += count * ONE_POD;
    usage
}

/// How many times `requests` fit in `capacity`, and the resource that
/// limits it first (ties to the alphabetically first).
fn count_in(requests: &Resources, capacity: &Resources) -> (i32, Option<String>) {
    let mut best: Option<(i32, &String)> = None;
    for (name, &value) in requests {
        let count = if value == 0 {
            i32::MAX
        } else {
            let cap = capacity.get(name).copied().unwrap_or(0);
            (cap / value).clamp(0, i64::from(i32::MAX)) as i32
        };
        if best.is_none_or(|(c, _)| count < c) {
            best = Some((count, name));
        }
    }
    match best {
        Some((count, name)) => (count, Some(name.clone())),
        None => (0, None),
    }
}

/// Per-domain scratch counts of one placement (Kueue's `domainState`).
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    /// Phase 1: pods that fit; phase 2: pods assigned.
    pods: i32,
    /// Slices that fit, at or above the slice level; 0 below it.
    slices: i32,
    pods_with_leader: i32,
    slices_with_leader: i32,
    leaders: i32,
}

/// Why nodes were left out, for the not-fit reason.
#[derive(Debug, Default)]
struct Exclusions {
    total_nodes: usize,
    node_selector: usize,
    affinity: usize,
    taints: BTreeMap<String, usize>,
    resources: BTreeMap<String, usize>,
    /// Leaves outside the domain a replacement must stay in.
    topology_domain: usize,
}

impl Exclusions {
    fn any(&self) -> bool {
        self.node_selector > 0
            || self.affinity > 0
            || !self.taints.is_empty()
            || !self.resources.is_empty()
            || self.topology_domain > 0
    }

    fn reasons(&self) -> String {
        let mut reasons = Vec::new();
        if self.node_selector > 0 {
            reasons.push(format!("nodeSelector: {}", self.node_selector));
        }
        if self.affinity > 0 {
            reasons.push(format!("affinity: {}", self.affinity));
        }
        for (taint, n) in &self.taints {
            reasons.push(format!("taint {taint:?}: {n}"));
        }
        for (resource, n) in &self.resources {
            reasons.push(format!("resource {resource:?}: {n}"));
        }
        if self.topology_domain > 0 {
            reasons.push(format!("topologyDomain: {}", self.topology_domain));
        }
        reasons.sort();
        reasons.join(", ")
    }
}

/// Which pair of counts a step distributes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Pods,
    Slices,
}

struct Placement<'a> {
    snapshot: &'a Snapshot,
    assumed: &'a DomainUsage,
    counts: Vec<Counts>,
    exclusions: Exclusions,
    count: i32,
    leader_count: i32,
    slice_size: i32,
    slice_level: usize,
    slice_size_at_level: BTreeMap<usize, i32>,
    multi_layer: Vec<SliceLayer>,
    required: bool,
    unconstrained: bool,
    /// Level values a leaf must start with (a replacement's domain);
    /// empty: anywhere.
    within: &'a [String],
}

impl<'a> Placement<'a> {
    fn new(snapshot: &'a Snapshot, assumed: &'a DomainUsage) -> Self {
        Placement {
            snapshot,
            assumed,
            counts: vec![Counts::default(); snapshot.domains.len()],
            exclusions: Exclusions::default(),
            count: 0,
            leader_count: 0,
            slice_size: 1,
            slice_level: 0,
            slice_size_at_level: BTreeMap::new(),
            multi_layer: Vec::new(),
            required: false,
            unconstrained: false,
            within: &[],
        }
    }

    fn best_fit(&self) -> bool {
        !self.unconstrained
    }

    /// The whole algorithm for one group: workers and an optional leader.
    fn run(
        mut self,
        workers: &PodSetRequest,
        leader: Option<&PodSetRequest>,
    ) -> Result<BTreeMap<String, Assignment>, String> {
        let snapshot = self.snapshot;
        let levels = &snapshot.levels;
        if levels.is_empty() {
            return Err("topology level not specified".to_string());
        }
        self.count = workers.count;
        let mut requests = workers.per_pod.clone();
        *requests.entry(PODS.to_string()).or_default() += ONE_POD;
        let leader_requests = leader.map(|l| {
            let mut r = l.per_pod.clone();
            *r.entry(PODS.to_string()).or_default() += ONE_POD;
            r
        });
        // Grouping validation lets a leader pod set have one pod only.
        self.leader_count = i32::from(leader.is_some());

        let request = workers.topology.clone().unwrap_or_default();
        let implied = workers.topology.is_none();
        let layers = request.layers();
        self.slice_size = match layers.first() {
            None => 1,
            Some(l) if l.size <= 0 => {
                return Err("slice topology requested, but slice size not provided".to_string())
            }
            Some(l) => l.size,
        };
        self.required = request.required.is_some();
        self.unconstrained =
            request.unconstrained == Some(true) || implied || request.slices_only();

        let lowest = levels[levels.len() - 1].clone();
        let key = if let Some(k) = request.required.as_ref().or(request.preferred.as_ref()) {
            k.clone()
        } else if request.slices_only() {
            levels[0].clone()
        } else if request.unconstrained == Some(true) || implied {
            lowest.clone()
        } else {
            return Err("topology level not specified".to_string());
        };
        let requested_level = snapshot
            .level_index(&key)
            .ok_or_else(|| format!("no requested topology level: {key}"))?;
        let slice_key = layers.first().map_or(lowest, |l| l.level.clone());
        self.slice_level = snapshot
            .level_index(&slice_key)
            .ok_or_else(|| format!("no requested topology level for slices: {slice_key}"))?;
        if requested_level > self.slice_level {
            return Err(format!(
                "podset slice topology {slice_key} is above the podset topology {key}"
            ));
        }
        self.slice_size_at_level = self.inner_slice_sizes(&layers)?;
        if !self.slice_size_at_level.is_empty() {
            self.multi_layer = layers;
        }

        let mut tolerations = workers.tolerations.clone();
        tolerations.extend(snapshot.tolerations.iter().cloned());
        self.fill_in_counts(
            &requests,
            leader_requests.as_ref(),
            &tolerations,
            &workers.node_selector,
            &workers.node_affinity,
        );

        // Phase 2a.
        let (fit_level, mut fit) = self.level_with_fit_domains(requested_level)?;
        // Phase 2b: above the slice level, whole slices go anywhere below
        // the chosen domains; at and below it, each domain's own share is
        // split among its children.
        fit = self.update_counts_to_minimum(
            fit,
            self.count,
            self.leader_count,
            self.slice_size,
            Unit::Slices,
        );
        let last_level = levels.len() - 1;
        let mut level = fit_level;
        while level < last_level.min(self.slice_level) {
            let lower: Vec<usize> = fit
                .iter()
                .flat_map(|&d| snapshot.domains[d].children.iter().copied())
                .collect();
            let lower = self.sorted(lower);
            fit = self.update_counts_to_minimum(
                lower,
                self.count,
                self.leader_count,
                self.slice_size,
                Unit::Slices,
            );
            level += 1;
        }
        while level < last_level {
            let size = if level >= self.slice_level {
                // One pod at a time below the outermost slice level, unless
                // an inner slice layer groups pods at the next level.
                self.slice_size_at_level
                    .get(&(level + 1))
                    .copied()
                    .unwrap_or(1)
            } else {
                self.slice_size
            };
            let mut next = Vec::new();
            for &parent in &fit {
                let children = self.sorted(snapshot.domains[parent].children.clone());
                if size > 1 {
                    // The slice counts filled in phase 1 are for the outer
                    // slice size; an inner layer counts its own.
                    for &c in &children {
                        let counts = &mut self.counts[c];
                        counts.slices = counts.pods / size;
                        counts.slices_with_leader = counts.pods_with_leader / size;
                    }
                }
                let Counts { pods, leaders, .. } = self.counts[parent];
                let unit = if size > 1 { Unit::Slices } else { Unit::Pods };
                next.extend(self.update_counts_to_minimum(children, pods, leaders, size, unit));
            }
            fit = next;
            level += 1;
        }

        // Phase 3.
        let mut assignments = BTreeMap::new();
        if let Some(leader) = leader {
            let leader_domains: Vec<(usize, i32)> = fit
                .iter()
                .filter(|&&d| self.counts[d].leaders > 0)
                .map(|&d| (d, self.counts[d].leaders))
                .collect();
            assignments.insert(leader.name.clone(), self.assignment(leader_domains));
        }
        let worker_domains: Vec<(usize, i32)> =
            fit.iter().map(|&d| (d, self.counts[d].pods)).collect();
        assignments.insert(workers.name.clone(), self.assignment(worker_domains));
        Ok(assignments)
    }

    /// Slice sizes by level for the inner layers of a multi-layer request
    /// (`buildSliceSizeAtLevel`): each level from below the previous layer
    /// down to this layer's level groups pods by this layer's size.
    fn inner_slice_sizes(&self, layers: &[SliceLayer]) -> Result<BTreeMap<usize, i32>, String> {
        let mut sizes = BTreeMap::new();
        let mut prev_size = self.slice_size;
        let mut prev_level = self.slice_level;
        for layer in layers.iter().skip(1) {
            let level = self.snapshot.level_index(&layer.level).ok_or_else(|| {
                format!(
                    "no requested topology level for additional slice layer: {}",
                    layer.level
                )
            })?;
            if level <= prev_level {
                return Err(format!(
                    "additional slice layer topology {} must be at a lower level than {}",
                    layer.level, self.snapshot.levels[prev_level]
                ));
            }
            if layer.size == 0 || prev_size % layer.size != 0 {
                return Err(format!(
                    "additional slice layer size {} must evenly divide parent layer size {prev_size}",
                    layer.size
                ));
            }
            for l in prev_level + 1..=level {
                sizes.insert(l, layer.size);
            }
            prev_size = layer.size;
            prev_level = level;
        }
        Ok(sizes)
    }

    /// Phase 1 (`fillInCounts`).
    fn fill_in_counts(
        &mut self,
        requests: &Resources,
        leader_requests: Option<&Resources>,
        tolerations: &[Toleration],
        node_selector: &BTreeMap<String, String>,
        node_affinity: &NodeAffinity,
    ) {
        let snapshot = self.snapshot;
        for (id, &idx) in &snapshot.leaves {
            let Some(leaf) = snapshot.domains[idx].leaf.as_ref() else {
                continue;
            };
            self.exclusions.total_nodes += 1;
            // Node checks apply where a leaf is one node.
            if let Some((labels, taints)) = &leaf.node {
                if let Some(taint) = untolerated(taints, tolerations) {
                    *self.exclusions.taints.entry(taint_name(taint)).or_default() += 1;
                    continue;
                }
                if !node_selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
                    self.exclusions.node_selector += 1;
                    continue;
                }
                if !node_affinity.matches(labels) {
                    self.exclusions.affinity += 1;
                    continue;
                }
            }
            // Whole values, not a string prefix: rack "a" is not in "ab".
            if !snapshot.domains[idx].values.starts_with(self.within) {
                self.exclusions.topology_domain += 1;
                continue;
            }
            let mut remaining = leaf.free.clone();
            subtract(&mut remaining, &leaf.tas_usage);
            if let Some(assumed) = self.assumed.get(id) {
                subtract(&mut remaining, assumed);
            }
            let (pods, limiting) = count_in(requests, &remaining);
            if pods == 0 {
                if let Some(resource) = limiting {
                    *self.exclusions.resources.entry(resource).or_default() += 1;
                }
            }
            let counts = &mut self.counts[idx];
            counts.pods = pods;
            counts.leaders = 0;
            if let Some(leader) = leader_requests {
                if count_in(leader, &remaining).0 > 0 {
                    counts.leaders = 1;
                    subtract(&mut remaining, leader);
                }
            }
            counts.pods_with_leader = count_in(requests, &remaining).0;
        }
        for &root in &snapshot.per_level[0] {
            self.sum_up(root, 0);
        }
    }

    /// Sums a domain's children up into it (`fillInCountsHelper`). With a
    /// leader, the capacity "with leader" is the total minus the smallest
    /// loss of one child that can take the leader.
    fn sum_up(&mut self, domain: usize, level: usize) {
        let snapshot = self.snapshot;
        let children = &snapshot.domains[domain].children;
        if children.is_empty() {
            if level == self.slice_level {
                let counts = &mut self.counts[domain];
                counts.slices = counts.pods / self.slice_size;
                counts.slices_with_leader = counts.pods_with_leader / self.slice_size;
            }
            return;
        }
        let leader_required = self.leader_count > 0;
        let inner = self.slice_size_at_level.get(&(level + 1)).copied();
        let mut pods = 0;
        let mut slices = 0;
        let mut has_leader_contributor = false;
        let mut min_pod_loss = i32::MAX;
        let mut min_slice_loss = i32::MAX;
        let mut leaders = 0;
        for &child in children {
            self.sum_up(child, level + 1);
            let c = self.counts[child];
            let (child_pods, child_with_leader) = match inner {
                // Children can only give whole inner slices.
                Some(size) => (c.pods / size * size, c.pods_with_leader / size * size),
                None => (c.pods, c.pods_with_leader),
            };
            pods += child_pods;
            slices += c.slices;
            if !leader_required || c.leaders > 0 {
                has_leader_contributor = true;
                min_pod_loss = min_pod_loss.min(child_pods - child_with_leader);
                min_slice_loss = min_slice_loss.min(c.slices - c.slices_with_leader);
            }
            leaders = leaders.max(c.leaders);
        }
        let counts = &mut self.counts[domain];
        counts.pods = pods;
        let mut slices_with_leader = 0;
        if has_leader_contributor {
            counts.pods_with_leader = pods - min_pod_loss;
            slices_with_leader = slices - min_slice_loss;
        } else {
            counts.pods_with_leader = 0;
        }
        counts.leaders = leaders;
        if level == self.slice_level {
            slices = counts.pods / self.slice_size;
            slices_with_leader = counts.pods_with_leader / self.slice_size;
        }
        counts.slices = slices;
        counts.slices_with_leader = slices_with_leader;
    }

    fn values(&self, d: usize) -> &[String] {
        &self.snapshot.domains[d].values
    }

    /// Domains for distributing workers (`sortedDomains`): slices, most
    /// first (least first for LeastFreeCapacity), then fewer pods first,
    /// then level values.
    fn sorted(&self, mut domains: Vec<usize>) -> Vec<usize> {
        let least_free = self.unconstrained;
        domains.sort_by(|&a, &b| {
            let (ca, cb) = (self.counts[a], self.counts[b]);
            let slices = if least_free {
                ca.slices.cmp(&cb.slices)
            } else {
                cb.slices.cmp(&ca.slices)
            };
            slices
                .then(ca.pods.cmp(&cb.pods))
                .then_with(|| self.values(a).cmp(self.values(b)))
        });
        domains
    }

    /// Domains for the top of the search (`sortedDomainsWithLeader`): the
    /// ones that can take the leader first, then as [`Self::sorted`] with
    /// the counts that leave room for the leader.
    fn sorted_with_leader(&self, mut domains: Vec<usize>) -> Vec<usize> {
        let least_free = self.unconstrained;
        domains.sort_by(|&a, &b| {
            let (ca, cb) = (self.counts[a], self.counts[b]);
            let slices = if least_free {
                ca.slices_with_leader.cmp(&cb.slices_with_leader)
            } else {
                cb.slices_with_leader.cmp(&ca.slices_with_leader)
            };
            cb.leaders
                .cmp(&ca.leaders)
                .then(slices)
                .then(ca.pods_with_leader.cmp(&cb.pods_with_leader))
                .then_with(|| self.values(a).cmp(self.values(b)))
        });
        domains
    }

    /// The first domain with the fewest `unit`s that still hold `needed`
    /// and can take `leaders`; the first domain when none can.
    fn best_fit_domain(&self, domains: &[usize], needed: i32, leaders: i32, unit: Unit) -> usize {
        let count_of = |d: usize| {
            let c = self.counts[d];
            match (unit, leaders > 0) {
                (Unit::Pods, false) => c.pods,
                (Unit::Pods, true) => c.pods_with_leader,
                (Unit::Slices, false) => c.slices,
                (Unit::Slices, true) => c.slices_with_leader,
            }
        };
        let mut best: Option<(usize, i32)> = None;
        for &d in domains {
            if self.counts[d].leaders < leaders {
                continue;
            }
            let n = count_of(d);
            if n >= needed && best.is_none_or(|(_, b)| n < b) {
                best = Some((d, n));
            }
        }
        best.map_or(domains[0], |(d, _)| d)
    }

    /// Phase 2a (`findLevelWithFitDomains`): the domains at `level` that
    /// hold every slice, going up a level for preferred requests and
    /// spreading over several domains at the top.
    fn level_with_fit_domains(&mut self, level: usize) -> Result<(usize, Vec<usize>), String> {
        let snapshot = self.snapshot;
        let domains = &snapshot.per_level[level];
        if domains.is_empty() {
            return Err(format!(
                "no topology domains at level: {}",
                snapshot.levels[level]
            ));
        }
        let sorted = self.sorted_with_leader(domains.clone());
        let mut top = sorted[0];
        let slice_count = self.count / self.slice_size;
        let leader_count = self.leader_count;
        if self.best_fit()
            && self.counts[top].slices_with_leader >= slice_count
            && self.counts[top].leaders >= leader_count
        {
            top = self.best_fit_domain(&sorted, slice_count, leader_count, Unit::Slices);
        }

        if !self.best_fit() {
            for &candidate in &sorted {
                let c = self.counts[candidate];
                let capacity = if leader_count > 0 {
                    if c.leaders < leader_count {
                        continue;
                    }
                    c.slices_with_leader
                } else {
                    c.slices
                };
                if capacity >= slice_count {
                    return Ok((level, vec![candidate]));
                }
            }
            if self.required {
                let most = self.counts[sorted[sorted.len() - 1]].pods;
                return Err(self.not_fit(level, most, slice_count));
            }
        }
        let top_counts = self.counts[top];
        if top_counts.slices_with_leader >= slice_count && top_counts.leaders >= leader_count {
            return Ok((level, vec![top]));
        }
        if self.required {
            return Err(self.not_fit(level, top_counts.slices, slice_count));
        }
        if level > 0 && !self.unconstrained {
            return self.level_with_fit_domains(level - 1);
        }

        // Spread over several domains: leaders first, from domains that
        // keep the workers' capacity, then workers by capacity.
        let mut results = Vec::new();
        let mut remaining_slices = slice_count;
        let mut remaining_leaders = leader_count;
        let sorted = self.prioritize_leader_domain(
            sorted,
            self.count,
            leader_count,
            self.slice_size,
            Unit::Slices,
        );
        let mut idx = 0;
        while remaining_leaders > 0 && idx < sorted.len() && self.counts[sorted[idx]].leaders > 0 {
            let mut d = sorted[idx];
            if self.best_fit() && self.counts[d].slices_with_leader >= remaining_slices {
                d = self.best_fit_domain(
                    &sorted[idx..],
                    remaining_slices,
                    remaining_leaders,
                    Unit::Slices,
                );
            }
            results.push(d);
            remaining_leaders -= self.counts[d].leaders;
            remaining_slices -= self.counts[d].slices_with_leader;
            idx += 1;
        }
        if remaining_leaders > 0 {
            return Err(self.not_fit(level, leader_count - remaining_leaders, slice_count));
        }
        let sorted = self.sorted(sorted[idx..].to_vec());
        let mut idx = 0;
        while remaining_slices > 0 && idx < sorted.len() {
            let mut d = sorted[idx];
            if self.best_fit() && self.counts[d].slices >= remaining_slices {
                d = self.best_fit_domain(&sorted[idx..], remaining_slices, 0, Unit::Slices);
            }
            results.push(d);
            remaining_slices -= self.counts[d].slices;
            idx += 1;
        }
        if remaining_slices > 0 {
            return Err(self.not_fit(level, slice_count - remaining_slices, slice_count));
        }
        Ok((level, results))
    }

    /// Moves to the front the first domain that can take the leader while
    /// the rest still hold every worker (`prioritizeLeaderDomain`).
    fn prioritize_leader_domain(
        &self,
        domains: Vec<usize>,
        count: i32,
        leader_count: i32,
        slice_size: i32,
        unit: Unit,
    ) -> Vec<usize> {
        if leader_count == 0 || domains.len() < 2 {
            return domains;
        }
        let (required, available) = match unit {
            Unit::Slices => (
                count / slice_size,
                domains.iter().map(|&d| self.counts[d].slices).sum::<i32>(),
            ),
            Unit::Pods => (
                count,
                domains.iter().map(|&d| self.counts[d].pods).sum::<i32>(),
            ),
        };
        for (i, &d) in domains.iter().enumerate() {
            let c = self.counts[d];
            if c.leaders < leader_count {
                continue;
            }
            let penalty = match unit {
                Unit::Slices => c.slices - c.slices_with_leader,
                Unit::Pods => c.pods - c.pods_with_leader,
            };
            if available - penalty < required {
                continue;
            }
            let mut result = domains.clone();
            result[..=i].rotate_right(1);
            return result;
        }
        domains
    }

    /// Phase 2b for one set of sibling candidates
    /// (`updateCountsToMinimumGeneric`): takes domains in order until
    /// `count` pods (whole `slice_size` slices for [`Unit::Slices`]) and
    /// the leaders are placed, the last one by best fit; rewrites the
    /// taken domains' counts to what they got.
    fn update_counts_to_minimum(
        &mut self,
        domains: Vec<usize>,
        count: i32,
        leader_count: i32,
        slice_size: i32,
        unit: Unit,
    ) -> Vec<usize> {
        let domains = self.prioritize_leader_domain(domains, count, leader_count, slice_size, unit);
        let mut result = Vec::new();
        let mut remaining = match unit {
            Unit::Slices => count / slice_size,
            Unit::Pods => count,
        };
        let mut remaining_leaders = leader_count;
        for i in 0..domains.len() {
            let mut d = domains[i];
            if remaining_leaders > 0 {
                let (taken, done) = self.consume_with_leaders(
                    d,
                    &domains[i..],
                    &mut remaining,
                    &mut remaining_leaders,
                    slice_size,
                    unit,
                );
                result.push(taken);
                if done {
                    return result;
                }
                continue;
            }
            let primary = |c: &Counts| match unit {
                Unit::Slices => c.slices,
                Unit::Pods => c.pods,
            };
            if self.best_fit() && primary(&self.counts[d]) >= remaining {
                d = self.best_fit_domain(&domains[i..], remaining, 0, unit);
            }
            let counts = &mut self.counts[d];
            counts.leaders = 0;
            let have = primary(counts);
            result.push(d);
            if have >= remaining {
                counts.pods = remaining * slice_size_of(unit, slice_size);
                if unit == Unit::Slices {
                    counts.slices = remaining;
                }
                return result;
            }
            if unit == Unit::Slices {
                counts.pods = have * slice_size;
            }
            remaining -= have;
        }
        // Phase 1 promised room that is not there; upstream logs this as a
        // violated assumption and places nothing.
        Vec::new()
    }

    /// One step while leaders are still to place (`consumeWithLeadersGeneric`).
    fn consume_with_leaders(
        &mut self,
        domain: usize,
        rest: &[usize],
        remaining: &mut i32,
        remaining_leaders: &mut i32,
        slice_size: i32,
        unit: Unit,
    ) -> (usize, bool) {
        let with_leader = |c: &Counts| match unit {
            Unit::Slices => c.slices_with_leader,
            Unit::Pods => c.pods_with_leader,
        };
        let mut d = domain;
        if self.best_fit()
            && with_leader(&self.counts[d]) >= *remaining
            && self.counts[d].leaders >= *remaining_leaders
        {
            d = self.best_fit_domain(rest, *remaining, *remaining_leaders, unit);
        }
        let size = slice_size_of(unit, slice_size);
        let counts = &mut self.counts[d];
        let set_primary = |c: &mut Counts, v: i32| match unit {
            Unit::Slices => c.slices = v,
            Unit::Pods => c.pods = v,
        };
        if with_leader(counts) >= *remaining && counts.leaders >= *remaining_leaders {
            set_primary(counts, *remaining);
            counts.leaders = *remaining_leaders;
            counts.pods = *remaining * size;
            return (d, true);
        }
        let taken = with_leader(counts).min(*remaining);
        match unit {
            Unit::Slices => counts.slices_with_leader = taken,
            Unit::Pods => counts.pods_with_leader = taken,
        }
        counts.leaders = counts.leaders.min(*remaining_leaders);
        set_primary(counts, taken);
        counts.pods = taken * size;
        *remaining_leaders -= counts.leaders;
        *remaining -= taken;
        (d, false)
    }

    /// Phase 3 (`buildAssignment`): leaf domains sorted by level values,
    /// empty ones left out.
    fn assignment(&self, mut domains: Vec<(usize, i32)>) -> Assignment {
        domains.sort_by(|a, b| self.values(a.0).cmp(self.values(b.0)));
        let levels = &self.snapshot.levels;
        let from = if self.snapshot.lowest_is_hostname {
            levels.len() - 1
        } else {
            0
        };
        Assignment {
            levels: levels[from..].to_vec(),
            domains: domains
                .into_iter()
                .filter(|&(_, count)| count > 0)
                .map(|(d, count)| Domain {
                    values: self.values(d)[from..].to_vec(),
                    count: i64::from(count),
                })
                .collect(),
        }
    }

    /// Kueue's reason when the pod set does not fit.
    fn not_fit(&self, level: usize, fit: i32, total: i32) -> String {
        let name = &self.snapshot.topology_name;
        let mut reason = if !self.multi_layer.is_empty() {
            self.multi_layer_not_fit(level)
        } else {
            let unit = if self.slice_size == 1 { "pod" } else { "slice" };
            if fit == 0 {
                format!("topology {name:?} doesn't allow to fit any of {total} {unit}(s)")
            } else {
                format!("topology {name:?} allows to fit only {fit} out of {total} {unit}(s)")
            }
        };
        if self.exclusions.any() {
            reason.push_str(&format!(
                ". Total nodes: {}; excluded: {}",
                self.exclusions.total_nodes,
                self.exclusions.reasons()
            ));
        }
        reason
    }

    /// For multi-layer slices: how many slices of each layer the roomiest
    /// domain at the level holds (`multiLayerNotFitMessage`).
    fn multi_layer_not_fit(&self, level: usize) -> String {
        let snapshot = self.snapshot;
        let mut reason = format!("topology {:?} doesn't allow to fit", snapshot.topology_name);
        let best = snapshot.per_level[level].iter().copied().reduce(|best, d| {
            let (cd, cb) = (self.counts[d].slices, self.counts[best].slices);
            if cd > cb || (cd == cb && snapshot.domains[d].id < snapshot.domains[best].id) {
                d
            } else {
                best
            }
        });
        let Some(best) = best else {
            return reason;
        };
        for layer in &self.multi_layer {
            let Some(target) = snapshot.level_index(&layer.level) else {
                continue;
            };
            let needed = self.count / layer.size;
            let fit = self.slices_in_subtree(best, level, target, layer.size);
            reason.push_str(&format!(
                "; {fit}/{needed} slice(s) fit on level {}",
                layer.level
            ));
        }
        reason
    }

    fn slices_in_subtree(&self, d: usize, level: usize, target: usize, size: i32) -> i32 {
        if level == target {
            return self.counts[d].pods / size;
        }
        self.snapshot.domains[d]
            .children
            .iter()
            .map(|&c| self.slices_in_subtree(c, level + 1, target, size))
            .sum()
    }
}

fn slice_size_of(unit: Unit, slice_size: i32) -> i32 {
    match unit {
        Unit::Slices => slice_size,
        Unit::Pods => 1,
    }
}
