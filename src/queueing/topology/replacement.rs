//! Node-failure replacement (Kueue's `findReplacementAssignment`): an
//! admitted pod set lost the pods of one node; only those are placed
//! again, inside the domain the rest of the assignment pins them to, and
//! the result is merged into what stays.
//!
//! The caller's snapshot already leaves the failed node out (not ready,
//! tainted or gone) and counts the workload's usage on the nodes it keeps,
//! so the replaced pods' usage moves rather than doubles.

use std::collections::BTreeMap;

use super::placement::{place_within, Assignment, DomainUsage, PodSetRequest};
use super::snapshot::Snapshot;
use crate::api::kueue::conversion::topology::Domain;
use crate::queueing::workload::SliceLayer;

/// One pod set of an admitted workload whose assignment names a node in
/// `status.unhealthyNodes`.
#[derive(Debug, Clone, Copy)]
pub struct Replacement<'a> {
    /// The pod set as first placed; its `count` is not read (the pods to
    /// place again are those the failed node had).
    pub pod_set: &'a PodSetRequest,
    /// The pod set's `topologyAssignment`.
    pub existing: &'a Assignment,
    /// The first of `status.unhealthyNodes`.
    pub unhealthy_node: &'a str,
    /// Owned by a single Pod (not a pod group): it cannot move and its
    /// Workload cannot outlive it, so the assignment stays as it is
    /// (`SkipReassignmentForPodOwnedWorkloads`, on by default).
    pub single_pod_owned: bool,
}

/// A successful replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The new `topologyAssignment`: what stays plus `added`.
    pub assignment: Assignment,
    /// Where the replaced pods go (empty when nothing moved).
    pub added: Assignment,
}

/// Places the pods of `r.unhealthy_node` again; Kueue's reason when they
/// do not fit. `assumed` is usage already taken this cycle, as for
/// [`super::place`].
pub fn replace(
    snapshot: &Snapshot,
    r: Replacement<'_>,
    assumed: &DomainUsage,
) -> Result<Replaced, String> {
    if r.single_pod_owned {
        return Ok(Replaced {
            assignment: r.existing.clone(),
            added: Assignment {
                levels: r.existing.levels.clone(),
                domains: Vec::new(),
            },
        });
    }
    let mut kept = r.existing.clone();
    let mut missing: i64 = 0;
    kept.domains.retain(|d| {
        let failed = d.values.last().is_some_and(|n| n == r.unhealthy_node);
        if failed {
            missing = d.count;
        }
        !failed
    });
    if let Some(stale) = kept
        .domains
        .iter()
        .find(|d| !snapshot.leaves.contains_key(&d.values.join(",")))
    {
        return Err(format!(
            "Cannot replace the node, because the existing topologyAssignment is invalid, as it contains the stale domain {}",
            stale.values.first().cloned().unwrap_or_default()
        ));
    }
    let count = i32::try_from(missing).unwrap_or(i32::MAX);
    let within = required_domain(snapshot, r.pod_set, &kept, count);
    let mut request = r.pod_set.clone();
    request.count = count;
    if let Some(t) = request.topology.as_mut() {
        let layers = t.layers();
        if !layers.is_empty() && !within.is_empty() && count % slice_size(&layers) != 0 {
            // The innermost layer whose size divides the pods to replace
            // keeps their grouping; with none, pods go one by one.
            let layer = layers
                .iter()
                .rev()
                .find(|l| l.size > 0 && count % l.size == 0);
            t.slice_layers = Vec::new();
            t.slice_required = layer.map(|l| l.level.clone());
            t.slice_size = Some(layer.map_or(1, |l| l.size));
        }
    }
    let added = place_within(snapshot, &request, assumed, &within)?;
    if added.domains.is_empty() {
        return Err(format!(
            "cannot find replacement assignment for unhealthy node: {}",
            r.unhealthy_node
        ));
    }
    Ok(Replaced {
        assignment: merge(snapshot, &added, &kept),
        added,
    })
}

fn slice_size(layers: &[SliceLayer]) -> i32 {
    layers.first().map_or(1, |l| l.size.max(1))
}

/// The domain the replaced pods must stay in (Kueue's
/// `requiredReplacementDomain`), as level values from the top; empty for
/// anywhere. An incomplete slice pins them to the domain that misses them;
/// a required level pins them to the domain the kept pods are in.
fn required_domain(
    snapshot: &Snapshot,
    pod_set: &PodSetRequest,
    kept: &Assignment,
    count: i32,
) -> Vec<String> {
    let implied = pod_set.topology.is_none();
    let request = pod_set.topology.clone().unwrap_or_default();
    let key = match request.level(&snapshot.levels) {
        Some(k) => k.to_string(),
        None if implied => match snapshot.levels.last() {
            Some(k) => k.clone(),
            None => return Vec::new(),
        },
        None => return Vec::new(),
    };
    let Some(level) = snapshot.level_index(&key) else {
        return Vec::new();
    };
    // The failed node held the whole assignment: nothing to stay close to.
    if kept.domains.is_empty() {
        return Vec::new();
    }
    let layers = request.layers();
    if !layers.is_empty() {
        let size = slice_size(&layers);
        if count % size != 0 {
            // Multi-layer: the innermost layer the loss breaks.
            let broken = if layers.len() > 1 {
                layers
                    .iter()
                    .rev()
                    .find(|l| l.size > 0 && count % l.size != 0)
            } else {
                None
            };
            let (size, key) = match broken {
                Some(l) => (l.size, l.level.clone()),
                None => (size, layers[0].level.clone()),
            };
            return incomplete_slice_domain(snapshot, kept, count, size, &key);
        }
    }
    if request.required.is_none() {
        return Vec::new();
    }
    let Some(values) = full_values(snapshot, &kept.domains[0]) else {
        return Vec::new();
    };
    values[..=level.min(values.len() - 1)].to_vec()
}

/// The domain at `key`'s level whose pods plus the `missing` ones make
/// whole slices of `size` (Kueue's `findIncompleteSliceDomain`); the first
/// by level values when several do.
fn incomplete_slice_domain(
    snapshot: &Snapshot,
    kept: &Assignment,
    missing: i32,
    size: i32,
    key: &str,
) -> Vec<String> {
    let Some(level) = snapshot.level_index(key) else {
        return Vec::new();
    };
    let mut pods: BTreeMap<Vec<String>, i64> = BTreeMap::new();
    for d in &kept.domains {
        if let Some(values) = full_values(snapshot, d) {
            *pods
                .entry(values[..=level.min(values.len() - 1)].to_vec())
                .or_default() += d.count;
        }
    }
    pods.into_iter()
        .find(|(_, n)| size > 0 && (n + i64::from(missing)) % i64::from(size) == 0)
        .map(|(values, _)| values)
        .unwrap_or_default()
}

/// A leaf's level values from the top, found by the assignment's domain.
fn full_values(snapshot: &Snapshot, d: &Domain) -> Option<Vec<String>> {
    let idx = *snapshot.leaves.get(&d.values.join(","))?;
    Some(snapshot.domains[idx].values.clone())
}

/// Both assignments' domains, sorted by their leaves' level values, one
/// entry per leaf (Kueue's `mergeTopologyAssignments`).
fn merge(snapshot: &Snapshot, added: &Assignment, kept: &Assignment) -> Assignment {
    let mut all: Vec<(String, Domain)> = added
        .domains
        .iter()
        .chain(&kept.domains)
        .map(|d| {
            let order = full_values(snapshot, d).unwrap_or_else(|| d.values.clone());
            (order.join(","), d.clone())
        })
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let mut domains: Vec<Domain> = Vec::new();
    for (_, d) in all {
        match domains.last_mut() {
            Some(last) if last.values == d.values => last.count += d.count,
            _ => domains.push(d),
        }
    }
    Assignment {
        levels: if added.levels.is_empty() {
            kept.levels.clone()
        } else {
            added.levels.clone()
        },
        domains,
    }
}

/// Kueue's `OwnedBySinglePod`: exactly one owner, a core/v1 Pod, and no
/// `kueue.x-k8s.io/is-group-workload: "true"` annotation. `owners` are
/// the Workload's ownerReferences as (apiVersion, kind).
pub fn owned_by_single_pod(owners: &[(&str, &str)], group_annotation: Option<&str>) -> bool {
    matches!(owners, [("v1", "Pod")]) && group_annotation != Some("true")
}
