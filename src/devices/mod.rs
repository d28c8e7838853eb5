//! Device placement in the k8srm prototype's pool/count model: which node,
//! and which of its DevicePools, can give a pod every device its claims ask
//! for. Pure: claims, classes, drivers, pools and what is already allocated
//! in; a decision and the reasons for it out.
//!
//! The algorithm is the prototype's (`pkg/schedule` at 840734a): per node,
//! each claim filters the node's pools (`no available devices`, `claim and
//! pool driver do not match`, `error evaluating constraints: ...`,
//! `constraints not met`), then tries sets of the remaining pools, smallest
//! first (fewer pools is always better), taking devices greedily and
//! checking `matchAttributes` across the set (`claim MatchAttributes
//! constraint failed`, `unable to satisfy N of M device requests`). A
//! claim scores 100 when satisfied, 0 otherwise; a node scores the average,
//! 0 if any claim fails. Unlike the prototype:
//!
//! - deterministic: pools are tried in name order, nodes are compared in
//!   name order and the first best wins;
//! - no double booking: the devices a claim takes are deducted before the
//!   pod's next claim is placed, and the caller passes what earlier pods
//!   hold ([`Usage`]);
//! - the class is honoured: its driver, device type (a pool qualifies only
//!   if its DeviceDriver lists the type: `pool driver does not handle
//!   device type "gpu"`), constraints (ANDed with the claim's), counts and
//!   match attributes (merged with the claim's);
//! - `matchAttributes` names may be written `device.<name>` (as the
//!   prototype's testdata did); a pool lacking an attribute others in the
//!   set have fails the match;
//! - a claim asks for `minDeviceCount` devices (the prototype's greedy
//!   count); `maxDeviceCount` only bounds what a claim may ask for.

pub mod allocation;
pub mod expression;
pub mod podclaims;
pub mod selectors;
pub mod shapes;
pub mod slices;

#[cfg(test)]
mod tests;

use std::{borrow::Cow, collections::BTreeMap};

use serde::{Deserialize, Serialize};

use crate::api::devices::v1alpha1::{
    Attribute, DeviceClaimSpec, DeviceClassSpec, DevicePoolAllocation, DevicePoolSpec,
};

/// Reasons, in the prototype's words where it had the case.
pub const NO_AVAILABLE_DEVICES: &str = "no available devices";
pub const DRIVER_MISMATCH: &str = "claim and pool driver do not match";
pub const CONSTRAINTS_NOT_MET: &str = "constraints not met";
pub const MATCH_ATTRIBUTES_FAILED: &str = "claim MatchAttributes constraint failed";

/// Score of a satisfied claim.
pub const FULL_SCORE: i64 = 100;

/// At most this many pool sets are tried per claim and node (a node with
/// very many matching pools would otherwise cost 2^n).
pub const MAX_POOL_SETS: usize = 4096;

/// A DevicePool by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    pub name: String,
    pub spec: DevicePoolSpec,
}

/// A DeviceClaim (or a per-pod copy of a claim template) by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub name: String,
    pub spec: DeviceClaimSpec,
}

/// Drivers (name → device types) and classes (name → spec).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub drivers: BTreeMap<String, Vec<String>>,
    pub classes: BTreeMap<String, DeviceClassSpec>,
}

/// Devices already allocated, by pool name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage(pub BTreeMap<String, i64>);

impl Usage {
    pub fn used(&self, pool: &str) -> i64 {
        self.0.get(pool).copied().unwrap_or(0)
    }

    pub fn add(&mut self, allocations: &[DevicePoolAllocation]) {
        for a in allocations {
            *self.0.entry(a.device_pool_name.clone()).or_default() += a.device_count;
        }
    }
}

/// What a claim asks for once its class is applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub claim: String,
    pub driver: Option<String>,
    pub device_type: String,
    /// Parsed class and claim constraints (each may be absent).
    pub constraints: Vec<expression::Expr>,
    pub count: i64,
    pub match_attributes: Vec<String>,
}

/// Why a claim cannot be resolved against its class (also what the webhook
/// refuses).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    #[error("device class {0:?} not found")]
    ClassNotFound(String),
    #[error("claim driver {claim:?} does not match class driver {class:?}")]
    DriverConflict { claim: String, class: String },
    #[error("error parsing {which} constraints: {error}")]
    Constraints {
        which: &'static str,
        error: expression::ParseError,
    },
    #[error("minDeviceCount {count} is {what} the class's {bound} {limit}")]
    OutOfClassBounds {
        count: i64,
        what: &'static str,
        bound: &'static str,
        limit: i64,
    },
    #[error("{field} must be positive, got {value}")]
    NotPositive { field: &'static str, value: i64 },
    #[error("minDeviceCount {min} is greater than maxDeviceCount {max}")]
    MinAboveMax { min: i64, max: i64 },
}

/// Applies the claim's class: driver, device type, constraints, counts and
/// match attributes.
pub fn resolve(claim: &Claim, catalog: &Catalog) -> Result<Request, ClaimError> {
    let spec = &claim.spec;
    let class = catalog
        .classes
        .get(&spec.device_class)
        .ok_or_else(|| ClaimError::ClassNotFound(spec.device_class.clone()))?;
    let driver = match (&spec.driver, &class.driver) {
        (Some(c), Some(k)) if c != k => {
            return Err(ClaimError::DriverConflict {
                claim: c.clone(),
                class: k.clone(),
            })
        }
        (Some(d), _) | (None, Some(d)) => Some(d.clone()),
        (None, None) => None,
    };
    let mut constraints = Vec::new();
    for (which, text) in [("class", &class.constraints), ("claim", &spec.constraints)] {
        if let Some(t) = text {
            if let Some(e) =
                expression::parse(t).map_err(|error| ClaimError::Constraints { which, error })?
            {
                constraints.push(e);
            }
        }
    }
    for (field, v) in [
        ("minDeviceCount", spec.min_device_count),
        ("maxDeviceCount", spec.max_device_count),
    ] {
        if let Some(v) = v.filter(|v| *v <= 0) {
            return Err(ClaimError::NotPositive { field, value: v });
        }
    }
    let count = spec
        .min_device_count
        .or(class.min_device_count)
        .unwrap_or(1);
    if let Some(min) = class.min_device_count {
        if count < min {
            return Err(ClaimError::OutOfClassBounds {
                count,
                what: "less than",
                bound: "minDeviceCount",
                limit: min,
            });
        }
    }
    if let Some(max) = class.max_device_count {
        if count > max {
            return Err(ClaimError::OutOfClassBounds {
                count,
                what: "greater than",
                bound: "maxDeviceCount",
                limit: max,
            });
        }
    }
    if let Some(max) = spec.max_device_count {
        if count > max {
            return Err(ClaimError::MinAboveMax { min: count, max });
        }
    }
    let mut match_attributes: Vec<String> = Vec::new();
    for name in class
        .match_attributes
        .iter()
        .flatten()
        .chain(spec.match_attributes.iter().flatten())
    {
        let name = name.strip_prefix("device.").unwrap_or(name).to_string();
        if !match_attributes.contains(&name) {
            match_attributes.push(name);
        }
    }
    Ok(Request {
        claim: claim.name.clone(),
        driver,
        device_type: class.device_type.clone(),
        constraints,
        count,
        match_attributes,
    })
}

// ---- results, with the prototype's YAML keys ------------------------------

/// Devices taken from one pool within a pool set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolResult {
    pub pool_name: String,
    pub device_count: i64,
    /// Borrowed for the fixed reasons: no allocation per pool left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<Cow<'static, str>>,
}

/// One set of pools tried for a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolSetResult {
    pub pool_results: Vec<PoolResult>,
    pub score: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

/// A claim on one node: every pool set tried, the best (index, -1 for
/// none) and the pools left out with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClaimResult {
    pub claim_name: String,
    pub pool_set_results: Option<Vec<PoolSetResult>>,
    pub best: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_pools: Vec<PoolResult>,
    /// Why the claim could not be considered at all, or why no set was
    /// tried (batchgate's addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

impl DeviceClaimResult {
    pub fn score(&self) -> i64 {
        self.best_set().map_or(0, |s| s.score)
    }

    pub fn best_set(&self) -> Option<&PoolSetResult> {
        usize::try_from(self.best)
            .ok()
            .and_then(|i| self.pool_set_results.as_ref()?.get(i))
    }

    /// The best set's allocations (pools giving devices).
    pub fn allocations(&self) -> Vec<DevicePoolAllocation> {
        self.best_set()
            .map(|s| {
                s.pool_results
                    .iter()
                    .filter(|p| p.device_count > 0)
                    .map(|p| DevicePoolAllocation {
                        device_pool_name: p.pool_name.clone(),
                        device_count: p.device_count,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// One line on why the claim failed here.
    pub fn why(&self) -> String {
        if let Some(r) = &self.failure_reason {
            return r.clone();
        }
        let sets = self.pool_set_results.as_deref().unwrap_or_default();
        if let Some(r) = sets.last().and_then(|s| s.failure_reason.clone()) {
            return r;
        }
        let mut reasons: Vec<&str> = Vec::new();
        for r in self
            .ignored_pools
            .iter()
            .filter_map(|p| p.failure_reason.as_deref())
        {
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
        if reasons.is_empty() {
            NO_AVAILABLE_DEVICES.into()
        } else {
            reasons.join("; ")
        }
    }
}

/// One node: each claim's result. Keys as the prototype (no tags).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeResult {
    #[serde(rename = "NodeName")]
    pub node_name: String,
    #[serde(rename = "DeviceClaimResults")]
    pub device_claim_results: Vec<DeviceClaimResult>,
}

impl NodeResult {
    /// 0 if any claim fails, else the average claim score.
    pub fn score(&self) -> i64 {
        if self.device_claim_results.is_empty() {
            return FULL_SCORE;
        }
        let mut sum = 0;
        for c in &self.device_claim_results {
            let s = c.score();
            if s == 0 {
                return 0;
            }
            sum += s;
        }
        sum / self.device_claim_results.len() as i64
    }

    /// The prototype's summary line.
    pub fn summary(&self) -> String {
        let score = self.score();
        if score > 0 {
            return format!(
                "{}: satisfied all claims with score {score}",
                self.node_name
            );
        }
        let failed: Vec<&str> = self
            .device_claim_results
            .iter()
            .filter(|c| c.score() == 0)
            .map(|c| c.claim_name.as_str())
            .collect();
        format!(
            "{}: could not satisfy these claims: {}",
            self.node_name,
            failed.join(", ")
        )
    }

    /// The summary with each failed claim's reason.
    pub fn explain(&self) -> String {
        if self.score() > 0 {
            return self.summary();
        }
        let failed: Vec<String> = self
            .device_claim_results
            .iter()
            .filter(|c| c.score() == 0)
            .map(|c| format!("{} ({})", c.claim_name, c.why()))
            .collect();
        format!(
            "{}: could not satisfy these claims: {}",
            self.node_name,
            failed.join(", ")
        )
    }
}

/// A claim's devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimAllocation {
    pub claim_name: String,
    pub node_name: String,
    pub allocations: Vec<DevicePoolAllocation>,
}

/// The chosen node (if any), each claim's devices there, and every node's
/// result in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub node: Option<String>,
    pub allocations: Vec<ClaimAllocation>,
    pub results: Vec<NodeResult>,
}

impl Selection {
    /// The prototype's flat list: every claim's pools, in claim order.
    pub fn pool_allocations(&self) -> Vec<DevicePoolAllocation> {
        self.allocations
            .iter()
            .flat_map(|a| a.allocations.iter().cloned())
            .collect()
    }

    /// Why no node fits, naming each node (at most `limit`) and its
    /// failing claims.
    pub fn reason(&self, limit: usize) -> String {
        if self.results.is_empty() {
            return "no node has device pools".into();
        }
        let mut parts: Vec<String> = self
            .results
            .iter()
            .take(limit)
            .map(NodeResult::explain)
            .collect();
        if self.results.len() > limit {
            parts.push(format!("and {} more nodes", self.results.len() - limit));
        }
        format!(
            "0/{} nodes with device pools can satisfy the device claims: {}",
            self.results.len(),
            parts.join("; ")
        )
    }
}

/// Pools by node, in name order; pools without a node are left out (the
/// prototype does not place network-attached pools either).
pub fn pools_by_node(pools: &[Pool]) -> BTreeMap<&str, Vec<&Pool>> {
    let mut by: BTreeMap<&str, Vec<&Pool>> = BTreeMap::new();
    for p in pools {
        if let Some(n) = p.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
            by.entry(n).or_default().push(p);
        }
    }
    for v in by.values_mut() {
        v.sort_by(|a, b| a.name.cmp(&b.name));
    }
    by
}

/// Places one pod's claims: the first node (by name) with the best score,
/// with devices deducted across the pod's claims and `used` taken as
/// already allocated.
pub fn select_node(claims: &[Claim], pools: &[Pool], catalog: &Catalog, used: &Usage) -> Selection {
    let requests: Vec<Result<Request, ClaimError>> =
        claims.iter().map(|c| resolve(c, catalog)).collect();
    select_resolved(claims, &requests, &pools_by_node(pools), catalog, used)
}

fn select_resolved(
    claims: &[Claim],
    requests: &[Result<Request, ClaimError>],
    by_node: &BTreeMap<&str, Vec<&Pool>>,
    catalog: &Catalog,
    used: &Usage,
) -> Selection {
    let mut results = Vec::with_capacity(by_node.len());
    let mut best: Option<(i64, usize)> = None;
    for (node, pools) in by_node {
        let r = evaluate_node(node, pools, claims, requests, catalog, used);
        let s = r.score();
        if s > 0 && best.is_none_or(|(b, _)| s > b) {
            best = Some((s, results.len()));
        }
        results.push(r);
    }
    let (node, allocations) = match best {
        Some((_, i)) => {
            let r = &results[i];
            let allocs = r
                .device_claim_results
                .iter()
                .map(|c| ClaimAllocation {
                    claim_name: c.claim_name.clone(),
                    node_name: r.node_name.clone(),
                    allocations: c.allocations(),
                })
                .collect();
            (Some(r.node_name.clone()), allocs)
        }
        None => (None, Vec::new()),
    };
    Selection {
        node,
        allocations,
        results,
    }
}

/// Evaluates every claim of a pod on one node, in claim order, each seeing
/// the devices the previous ones took.
pub fn evaluate_node(
    node: &str,
    pools: &[&Pool],
    claims: &[Claim],
    requests: &[Result<Request, ClaimError>],
    catalog: &Catalog,
    used: &Usage,
) -> NodeResult {
    let mut taken = Usage::default();
    let mut results = Vec::with_capacity(claims.len());
    for (claim, request) in claims.iter().zip(requests) {
        let r = match request {
            Ok(req) => evaluate_claim(req, pools, catalog, |p| {
                p.spec.device_count - used.used(&p.name) - taken.used(&p.name)
            }),
            Err(e) => DeviceClaimResult {
                claim_name: claim.name.clone(),
                pool_set_results: None,
                best: -1,
                ignored_pools: Vec::new(),
                failure_reason: Some(e.to_string()),
            },
        };
        taken.add(&r.allocations());
        results.push(r);
    }
    NodeResult {
        node_name: node.to_string(),
        device_claim_results: results,
    }
}

/// Why a pool cannot serve a request at all, if it cannot.
fn pool_failure(
    req: &Request,
    pool: &Pool,
    available: i64,
    catalog: &Catalog,
) -> Option<Cow<'static, str>> {
    if available <= 0 {
        return Some(Cow::Borrowed(NO_AVAILABLE_DEVICES));
    }
    if req.driver.as_ref().is_some_and(|d| *d != pool.spec.driver) {
        return Some(Cow::Borrowed(DRIVER_MISMATCH));
    }
    let handles = catalog
        .drivers
        .get(&pool.spec.driver)
        .is_some_and(|types| types.contains(&req.device_type));
    if !handles {
        return Some(Cow::Owned(format!(
            "pool driver does not handle device type {:?}",
            req.device_type
        )));
    }
    for c in &req.constraints {
        match c.eval(&pool.spec.attributes) {
            Ok(true) => {}
            Ok(false) => return Some(Cow::Borrowed(CONSTRAINTS_NOT_MET)),
            Err(e) => return Some(Cow::Owned(format!("error evaluating constraints: {e}"))),
        }
    }
    None
}

fn evaluate_claim(
    req: &Request,
    pools: &[&Pool],
    catalog: &Catalog,
    available: impl Fn(&Pool) -> i64,
) -> DeviceClaimResult {
    let mut ignored = Vec::new();
    let mut good: Vec<(&Pool, i64)> = Vec::new();
    for p in pools {
        let a = available(p);
        match pool_failure(req, p, a, catalog) {
            Some(reason) => ignored.push(PoolResult {
                pool_name: p.name.clone(),
                device_count: 0,
                failure_reason: Some(reason),
            }),
            None => good.push((p, a)),
        }
    }
    let mut result = DeviceClaimResult {
        claim_name: req.claim.clone(),
        pool_set_results: None,
        best: -1,
        ignored_pools: ignored,
        failure_reason: None,
    };
    if good.is_empty() {
        return result;
    }
    let total: i64 = good.iter().map(|(_, a)| a).sum();
    if total < req.count {
        result.failure_reason = Some(format!(
            "unable to satisfy {} of {} device requests",
            req.count - total,
            req.count
        ));
        return result;
    }
    let mut sets = Vec::new();
    let mut best_score = 0;
    let mut tried = 0usize;
    'sizes: for size in 1..=good.len() {
        let mut combo: Vec<usize> = (0..size).collect();
        loop {
            if tried == MAX_POOL_SETS {
                result.failure_reason = Some(format!(
                    "gave up after {MAX_POOL_SETS} pool sets without satisfying {} device requests",
                    req.count
                ));
                break 'sizes;
            }
            tried += 1;
            let set: Vec<(&Pool, i64)> = combo.iter().map(|&i| good[i]).collect();
            let r = evaluate_pool_set(req, &set);
            if r.score > best_score {
                best_score = r.score;
                result.best = sets.len() as i64;
            }
            sets.push(r);
            if !next_combination(&mut combo, good.len()) {
                break;
            }
        }
        // Fewer pools is always better: stop at the first size that works.
        if result.best >= 0 {
            break;
        }
    }
    result.pool_set_results = Some(sets);
    result
}

/// Advances `combo` (ascending indices below `n`) to the next combination
/// in lexicographic order; false after the last.
fn next_combination(combo: &mut [usize], n: usize) -> bool {
    let k = combo.len();
    let mut i = k;
    while i > 0 {
        i -= 1;
        if combo[i] < n - k + i {
            combo[i] += 1;
            for j in i + 1..k {
                combo[j] = combo[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

fn attribute<'a>(attrs: &'a [Attribute], name: &str) -> Option<&'a Attribute> {
    attrs.iter().find(|a| a.name == name)
}

fn evaluate_pool_set(req: &Request, set: &[(&Pool, i64)]) -> PoolSetResult {
    let mut remaining = req.count;
    let mut pool_results = Vec::with_capacity(set.len());
    let first = set.first().map(|(p, _)| &p.spec.attributes);
    for (i, (pool, available)) in set.iter().enumerate() {
        let matches = i == 0
            || req.match_attributes.iter().all(|name| {
                match (
                    first.and_then(|f| attribute(f, name)),
                    attribute(&pool.spec.attributes, name),
                ) {
                    (None, None) => true,
                    (Some(a), Some(b)) => a.equal_value(b),
                    _ => false,
                }
            });
        if !matches {
            pool_results.push(PoolResult {
                pool_name: pool.name.clone(),
                device_count: 0,
                failure_reason: Some(Cow::Borrowed(MATCH_ATTRIBUTES_FAILED)),
            });
            continue;
        }
        let take = (*available).min(remaining);
        remaining -= take;
        pool_results.push(PoolResult {
            pool_name: pool.name.clone(),
            device_count: take,
            failure_reason: None,
        });
    }
    if remaining > 0 {
        PoolSetResult {
            pool_results,
            score: 0,
            failure_reason: Some(format!(
                "unable to satisfy {remaining} of {} device requests",
                req.count
            )),
        }
    } else {
        PoolSetResult {
            pool_results,
            score: FULL_SCORE,
            failure_reason: None,
        }
    }
}

/// Where a group of identical pods (a pod set) goes: one node holding every
/// pod's claims, and each pod's allocations there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupPlacement {
    pub node_name: String,
    /// Per pod, per claim.
    pub pods: Vec<Vec<ClaimAllocation>>,
}

impl GroupPlacement {
    pub fn all_allocations(&self) -> impl Iterator<Item = &DevicePoolAllocation> {
        self.pods
            .iter()
            .flatten()
            .flat_map(|c| c.allocations.iter())
    }
}

/// Places `pods` copies of the same claims on one node: the first node by
/// name that holds them all, each pod's devices deducted before the next.
/// `Err` carries the reason no node does (from the single-pod view when
/// even one pod does not fit, else naming the pod count).
pub fn place_group(
    claims: &[Claim],
    pods: usize,
    pools: &[Pool],
    catalog: &Catalog,
    used: &Usage,
) -> Result<GroupPlacement, String> {
    let requests: Vec<Result<Request, ClaimError>> =
        claims.iter().map(|c| resolve(c, catalog)).collect();
    let by_node = pools_by_node(pools);
    let mut one_fits = false;
    for (node, node_pools) in &by_node {
        let mut usage = used.clone();
        let mut placed = Vec::with_capacity(pods);
        for _ in 0..pods {
            let r = evaluate_node(node, node_pools, claims, &requests, catalog, &usage);
            if r.score() == 0 {
                break;
            }
            let allocs: Vec<ClaimAllocation> = r
                .device_claim_results
                .iter()
                .map(|c| ClaimAllocation {
                    claim_name: c.claim_name.clone(),
                    node_name: node.to_string(),
                    allocations: c.allocations(),
                })
                .collect();
            for a in &allocs {
                usage.add(&a.allocations);
            }
            placed.push(allocs);
        }
        if !placed.is_empty() {
            one_fits = true;
        }
        if placed.len() == pods {
            return Ok(GroupPlacement {
                node_name: node.to_string(),
                pods: placed,
            });
        }
    }
    if one_fits {
        return Err(format!(
            "no node with device pools can hold the device claims of all {pods} pods (the pods of a pod set are placed on one node)"
        ));
    }
    Err(select_resolved(claims, &requests, &by_node, catalog, used).reason(4))
}
