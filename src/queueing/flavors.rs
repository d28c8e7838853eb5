//! ResourceFlavors and flavor assignment: for each resource a pod set asks
//! for, the first flavor of its resource group (in the ClusterQueue's
//! order) whose taints the pods tolerate, whose node labels the pods'
//! node selector accepts, and whose quota can take the request — now, by
//! borrowing, or by preempting (`pkg/scheduler/flavorassigner`).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::{
    cluster_queue::{ClusterQueue, FlavorPreference, FungibilityPolicy, ResourceGroup},
    quantity,
    quota::{FlavorResource, QuotaTree, Usage},
    scheduler::PendingReason,
    workload::{Admission, PodSet, PodSetAssignment, Workload},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: TaintEffect,
}

/// Kueue prints the taint with Go's `%s` of the struct value, so users see
/// `{key value NoSchedule <nil>}`; we print the same so searches match.
impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{{} {} {} <nil>}}",
            self.key,
            self.value,
            self.effect.as_str()
        )
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TolerationOperator {
    #[default]
    Equal,
    Exists,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Toleration {
    /// Empty with `Exists` tolerates every taint.
    pub key: String,
    pub operator: TolerationOperator,
    pub value: String,
    /// `None` tolerates every effect.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// `corev1.Toleration.ToleratesTaint`.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Exists => true,
            TolerationOperator::Equal => self.value == taint.value,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceFlavor {
    pub name: String,
    pub node_labels: BTreeMap<String, String>,
    pub node_taints: Vec<Taint>,
    /// Added to admitted pods; they also count when checking `node_taints`.
    pub tolerations: Vec<Toleration>,
    /// `spec.topologyName`: a TAS flavor.
    pub topology_name: Option<String>,
    /// The levels of that Topology, highest first; `None` while it does not
    /// exist. The engine fills this in from the Topologies it was given.
    pub topology_levels: Option<Vec<String>>,
}

impl ResourceFlavor {
    pub fn is_tas(&self) -> bool {
        self.topology_name.is_some()
    }

    /// Kueue's `checkPodSetAndFlavorMatchForTAS`: why this flavor cannot
    /// take the pod set as topology-aware scheduling sees it. `implied`:
    /// every flavor of the queue is a TAS flavor and the pod set asks for
    /// no topology, so it gets unconstrained TAS. `covered`: the resources
    /// of the flavor's resource group.
    pub fn tas_mismatch(&self, ps: &PodSet, implied: bool, covered: &[String]) -> Option<String> {
        let explicit = ps.topology.as_ref().is_some_and(|t| t.is_explicit());
        let name = &self.name;
        if !(explicit || implied) {
            return self
                .is_tas()
                .then(|| format!("Flavor {name:?} supports only TopologyAwareScheduling"));
        }
        if implied {
            return None;
        }
        if !self.is_tas() {
            // A plain flavor may still give the pod set resources the TAS
            // flavor does not cover.
            let overlaps = ps
                .requests
                .iter()
                .any(|(r, _)| covered.iter().any(|c| c.as_str() == r));
            return overlaps
                .then(|| format!("Flavor {name:?} does not support TopologyAwareScheduling"));
        }
        let Some(levels) = &self.topology_levels else {
            return Some(format!("Flavor {name:?} information missing in TAS cache"));
        };
        let has = ps.topology.as_ref().is_some_and(|t| t.levels_exist(levels));
        (!has).then(|| format!("Flavor {name:?} does not contain the requested level"))
    }

    /// The first NoSchedule/NoExecute taint tolerated neither by the pods
    /// nor by the flavor itself.
    pub fn untolerated_taint(&self, pod_tolerations: &[Toleration]) -> Option<&Taint> {
        self.node_taints.iter().find(|t| {
            matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
                && !pod_tolerations
                    .iter()
                    .chain(&self.tolerations)
                    .any(|tol| tol.tolerates(t))
        })
    }

    /// Does the node selector accept the flavor's nodes? Only keys the flavor
    /// itself labels are compared: other keys are for the kube-scheduler.
    pub fn matches_node_selector(&self, node_selector: &BTreeMap<String, String>) -> bool {
        node_selector
            .iter()
            .all(|(k, v)| self.node_labels.get(k).is_none_or(|label| label == v))
    }
}

/// How a flavor can take a request, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PreemptionMode {
    NoFit,
    /// Preemption could make room, but no workload may be preempted.
    NoCandidates,
    /// Room by preempting in the same ClusterQueue.
    Preempt,
    /// Room by reclaiming quota lent to the cohort.
    Reclaim,
    Fit,
}

/// The coarse mode an assignment is acted on with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum AssignmentMode {
    NoFit,
    Preempt,
    Fit,
}

impl PreemptionMode {
    fn assignment_mode(self) -> AssignmentMode {
        match self {
            PreemptionMode::NoFit => AssignmentMode::NoFit,
            PreemptionMode::Fit => AssignmentMode::Fit,
            _ => AssignmentMode::Preempt,
        }
    }
}

/// Preemption mode and borrowing level (0: within nominal quota).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Granular {
    preemption: PreemptionMode,
    borrow: u8,
}

const WORST: Granular = Granular {
    preemption: PreemptionMode::NoFit,
    borrow: u8::MAX,
};
const BEST: Granular = Granular {
    preemption: PreemptionMode::Fit,
    borrow: 0,
};

/// `isPreferred`: any viable mode beats NoFit, a mode with candidates beats
/// one without, then, by `preference`, the better preemption mode and less
/// borrowing (`BorrowingOverPreemption`) or the other way round.
fn is_preferred(a: Granular, b: Granular, preference: FlavorPreference) -> bool {
    if a.preemption == PreemptionMode::NoFit {
        return false;
    }
    if b.preemption == PreemptionMode::NoFit {
        return true;
    }
    let a_none = a.preemption == PreemptionMode::NoCandidates;
    let b_none = b.preemption == PreemptionMode::NoCandidates;
    if a_none != b_none {
        return !a_none;
    }
    match preference {
        FlavorPreference::BorrowingOverPreemption => {
            (Reverse(a.preemption), a.borrow) < (Reverse(b.preemption), b.borrow)
        }
        FlavorPreference::PreemptionOverBorrowing => {
            (a.borrow, Reverse(a.preemption)) < (b.borrow, Reverse(b.preemption))
        }
    }
}

fn should_try_next_flavor(mode: Granular, cq: &ClusterQueue) -> bool {
    let f = cq.flavor_fungibility;
    match mode.preemption {
        PreemptionMode::NoFit | PreemptionMode::NoCandidates => true,
        PreemptionMode::Preempt | PreemptionMode::Reclaim
            if f.when_can_preempt == FungibilityPolicy::TryNextFlavor =>
        {
            true
        }
        _ => mode.borrow > 0 && f.when_can_borrow == FungibilityPolicy::TryNextFlavor,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlavorChoice {
    pub flavor: String,
    pub mode: AssignmentMode,
    pub borrow: u8,
}

#[derive(Debug, Clone)]
pub(crate) struct PodSetResult {
    pub name: String,
    pub count: u32,
    /// All pods together, by resource.
    pub requests: BTreeMap<String, i64>,
    pub flavors: BTreeMap<String, FlavorChoice>,
    /// Why the pod set cannot be admitted as is; empty when it fits.
    pub reasons: Vec<String>,
}

impl PodSetResult {
    fn mode(&self) -> AssignmentMode {
        if self.reasons.is_empty() {
            return AssignmentMode::Fit;
        }
        self.flavors
            .values()
            .map(|c| c.mode)
            .min()
            .unwrap_or(AssignmentMode::NoFit)
    }
}

/// Flavors for every pod set of a workload, or why there are none.
#[derive(Debug, Clone)]
pub(crate) struct Assignment {
    pub pod_sets: Vec<PodSetResult>,
    /// Highest borrowing level of any flavor chosen.
    pub borrowing: u8,
    /// Quota the assignment takes, per flavor and resource.
    pub usage: Usage,
    /// Set when the assignment is NoFit.
    pub no_fit_reason: Option<PendingReason>,
    /// The mode topology-aware placement set, over what the pod sets say
    /// (Kueue's `representativeMode`, as `updateMode` leaves it).
    pub forced_mode: Option<AssignmentMode>,
}

impl Assignment {
    /// Kueue's `updateMode(podSet, mode)` after a topology check: every
    /// flavor of pod set `name` takes `mode`, and so does the assignment.
    /// `reason` (the placement's failure) joins the pod set's reasons.
    pub fn set_topology_mode(&mut self, name: &str, mode: AssignmentMode, reason: Option<String>) {
        if let Some(ps) = self.pod_sets.iter_mut().find(|p| p.name == name) {
            for c in ps.flavors.values_mut() {
                c.mode = mode;
            }
            ps.reasons.extend(reason);
            self.forced_mode = Some(mode);
            if mode == AssignmentMode::NoFit {
                self.no_fit_reason
                    .get_or_insert(PendingReason::WaitingForQuota);
            }
        }
    }

    /// The worst mode of any pod set.
    pub fn mode(&self) -> AssignmentMode {
        if let Some(m) = self.forced_mode {
            return m;
        }
        self.pod_sets
            .iter()
            .map(PodSetResult::mode)
            .min()
            .unwrap_or(AssignmentMode::NoFit)
    }

    /// Kueue's `Assignment.Message()`: per pod set that does not fit,
    /// `couldn't assign flavors to pod set NAME: ` and its sorted reasons.
    pub fn message(&self) -> String {
        let mut parts = Vec::new();
        for ps in &self.pod_sets {
            if ps.reasons.is_empty() {
                continue;
            }
            let mut reasons = ps.reasons.clone();
            reasons.sort();
            parts.push(format!(
                "couldn't assign flavors to pod set {}: {}",
                ps.name,
                reasons.join(", ")
            ));
        }
        parts.join("; ")
    }

    /// Flavor/resource pairs that need preemption to fit.
    pub fn needs_preemption(&self) -> BTreeSet<FlavorResource> {
        self.pod_sets
            .iter()
            .flat_map(|ps| ps.flavors.iter())
            .filter(|(_, c)| c.mode == AssignmentMode::Preempt)
            .map(|(r, c)| FlavorResource::new(&c.flavor, r))
            .collect()
    }

    pub fn to_admission(&self, cluster_queue: &str) -> Admission {
        Admission {
            cluster_queue: cluster_queue.to_string(),
            pod_set_assignments: self
                .pod_sets
                .iter()
                .map(|ps| PodSetAssignment {
                    name: ps.name.clone(),
                    flavors: ps
                        .flavors
                        .iter()
                        .map(|(r, c)| (r.clone(), c.flavor.clone()))
                        .collect(),
                    resource_usage: ps
                        .flavors
                        .keys()
                        .map(|r| (r.clone(), ps.requests.get(r).copied().unwrap_or(0)))
                        .collect(),
                    count: ps.count,
                    topology: None,
                })
                .collect(),
        }
    }
}

/// Answers "could preempting make room for `val` of `fr`?" for the queue
/// being assigned, with the borrowing level after those preemptions. It may
/// change the quota tree while it looks, and must leave it as it found it.
pub(crate) type Oracle<'a> =
    dyn FnMut(&mut QuotaTree, &FlavorResource, i64) -> (PreemptionMode, u8) + 'a;

/// Chooses flavors for every pod set of `wl` in `cq` against `quota`, each
/// pod set at the given count (`counts[i]` for pod set `i`; `None`: their
/// full counts), as Kueue's `Assign(ctx, counts)`.
pub(crate) fn assign_counts(
    wl: &Workload,
    counts: Option<&[u32]>,
    cq: &ClusterQueue,
    flavors: &BTreeMap<String, ResourceFlavor>,
    quota: &mut QuotaTree,
    oracle: &mut Oracle<'_>,
) -> Assignment {
    let mut a = Assignment {
        pod_sets: Vec::with_capacity(wl.pod_sets.len()),
        borrowing: 0,
        usage: Usage::new(),
        no_fit_reason: None,
        forced_mode: None,
    };
    // Kueue counts pods as a resource when the queue has quota for "pods".
    let counts_pods = cq.group_for("pods").is_some();
    for (i, ps) in wl.pod_sets.iter().enumerate() {
        let count = counts.and_then(|c| c.get(i).copied()).unwrap_or(ps.count);
        let mut requests = ps.total_requests_at(count);
        if counts_pods {
            requests.insert("pods".into(), i64::from(count) * 1000);
        }
        let mut result = PodSetResult {
            name: ps.name.to_string(),
            count,
            requests,
            flavors: BTreeMap::new(),
            reasons: Vec::new(),
        };
        let mut failure = None;
        for (resource, qty) in &result.requests {
            if result.flavors.contains_key(resource) {
                continue; // assigned with an earlier resource of its group
            }
            let Some(group) = cq.group_for(resource) else {
                if *qty == 0 {
                    continue;
                }
                failure = Some((
                    vec![format!("resource {resource} unavailable in ClusterQueue")],
                    PendingReason::NoMatchingFlavor,
                ));
                break;
            };
            let search = find_flavor(
                ps,
                &result.requests,
                group,
                &a.usage,
                cq,
                flavors,
                quota,
                oracle,
            );
            match search.choice {
                Some(choices) => {
                    result.flavors.extend(choices);
                    result.reasons.extend(search.reasons);
                }
                None => {
                    failure = Some((search.reasons, search.no_fit_reason));
                    break;
                }
            }
        }
        if let Some((reasons, why)) = failure {
            result.flavors.clear();
            result.reasons = reasons;
            a.pod_sets.push(result);
            a.no_fit_reason = Some(why);
            return a;
        }
        for (resource, choice) in &result.flavors {
            a.borrowing = a.borrowing.max(choice.borrow);
            let q = result.requests.get(resource).copied().unwrap_or(0);
            *a.usage
                .entry(FlavorResource::new(&choice.flavor, resource))
                .or_default() += q;
        }
        a.pod_sets.push(result);
    }
    a
}

struct FlavorSearch {
    choice: Option<BTreeMap<String, FlavorChoice>>,
    reasons: Vec<String>,
    /// The least severe reason among the flavors that did not fit: the one
    /// closest to being admissible.
    no_fit_reason: PendingReason,
}

#[allow(clippy::too_many_arguments)]
fn find_flavor(
    ps: &PodSet,
    requests: &BTreeMap<String, i64>,
    group: &ResourceGroup,
    assumed: &Usage,
    cq: &ClusterQueue,
    flavors: &BTreeMap<String, ResourceFlavor>,
    quota: &mut QuotaTree,
    oracle: &mut Oracle<'_>,
) -> FlavorSearch {
    let group_requests: Vec<(&String, i64)> = requests
        .iter()
        .filter(|(r, _)| group.covered_resources.contains(r))
        .map(|(r, q)| (r, *q))
        .collect();
    let preference = cq.flavor_fungibility.preference;
    let tas_implied = !ps.topology.as_ref().is_some_and(|t| t.is_explicit())
        && cq
            .resource_groups
            .iter()
            .flat_map(|g| &g.flavors)
            .all(|f| flavors.get(&f.name).is_some_and(ResourceFlavor::is_tas));
    let mut best: Option<BTreeMap<String, FlavorChoice>> = None;
    let mut best_mode = WORST;
    let mut reasons = Vec::new();
    let mut least_severe: Option<PendingReason> = None;
    let mut note = |r: PendingReason| {
        least_severe =
            Some(least_severe.map_or(r, |l| if r.severity() < l.severity() { r } else { l }));
    };
    for fq in &group.flavors {
        let name = &fq.name;
        let mismatch = match flavors.get(name) {
            None => Some(format!("flavor {name} not found")),
            Some(f) => {
                if let Some(m) = f.tas_mismatch(ps, tas_implied, &group.covered_resources) {
                    Some(m)
                } else if let Some(t) = f.untolerated_taint(&ps.tolerations) {
                    Some(format!("untolerated taint {t} in flavor {name}"))
                } else if !f.matches_node_selector(&ps.node_selector)
                    || !ps.node_affinity.matches_flavor(&f.node_labels)
                {
                    Some(format!("flavor {name} doesn't match node affinity"))
                } else {
                    None
                }
            }
        };
        if let Some(reason) = mismatch {
            reasons.push(reason);
            note(PendingReason::NoMatchingFlavor);
            continue;
        }
        let mut mode = BEST;
        let mut choices = BTreeMap::new();
        let mut flavor_reason: Option<PendingReason> = None;
        for (resource, val) in &group_requests {
            let fr = FlavorResource::new(name, resource);
            let assumed_here = assumed.get(&fr).copied().unwrap_or(0);
            let while_borrowing = super::fair_sharing::preempts_while_borrowing(cq, quota);
            let fit = fits_resource_quota(
                cq,
                quota,
                oracle,
                &fr,
                (assumed_here, *val),
                while_borrowing,
            );
            reasons.extend(fit.reason);
            if let Some(r) = fit.no_fit_reason {
                flavor_reason =
                    Some(
                        flavor_reason
                            .map_or(r, |f| if r.severity() > f.severity() { r } else { f }),
                    );
            }
            let this = Granular {
                preemption: fit.mode,
                borrow: fit.borrow,
            };
            if is_preferred(mode, this, preference) {
                mode = this; // the flavor is as good as its worst resource
            }
            if mode.preemption == PreemptionMode::NoFit {
                break;
            }
            choices.insert(
                (*resource).clone(),
                FlavorChoice {
                    flavor: name.clone(),
                    mode: fit.mode.assignment_mode(),
                    borrow: fit.borrow,
                },
            );
        }
        if mode.preemption == PreemptionMode::NoFit {
            note(flavor_reason.unwrap_or(PendingReason::WaitingForQuota));
        }
        if !should_try_next_flavor(mode, cq) {
            best = Some(choices);
            best_mode = mode;
            break;
        }
        if is_preferred(mode, best_mode, preference) {
            best = Some(choices);
            best_mode = mode;
        }
    }
    if best_mode.preemption == PreemptionMode::Fit {
        reasons.clear();
    }
    FlavorSearch {
        choice: best,
        reasons,
        no_fit_reason: least_severe.unwrap_or(PendingReason::WaitingForQuota),
    }
}

struct QuotaFit {
    mode: PreemptionMode,
    borrow: u8,
    reason: Option<String>,
    no_fit_reason: Option<PendingReason>,
}

/// `fitsResourceQuota`: `assumed` is what earlier pod sets of the same
/// workload already took of `fr`.
fn fits_resource_quota(
    queue: &ClusterQueue,
    quota: &mut QuotaTree,
    oracle: &mut Oracle<'_>,
    fr: &FlavorResource,
    (assumed, request): (i64, i64),
    preempt_while_borrowing: bool,
) -> QuotaFit {
    let cq = queue.name.as_str();
    let val = assumed + request;
    let available = quota.available(cq, fr);
    let max_capacity = quota.potential_available(cq, fr);
    let q = |v| quantity::format(&fr.resource, v);
    if val > max_capacity {
        return QuotaFit {
            mode: PreemptionMode::NoFit,
            borrow: 0,
            reason: Some(format!(
                "insufficient quota for {} in flavor {}, previously considered podsets requests ({}) + current podset request ({}) > maximum capacity ({})",
                fr.resource, fr.flavor, q(assumed), q(request), q(max_capacity)
            )),
            no_fit_reason: Some(PendingReason::ExceedsMaxQuota),
        };
    }
    let (borrow, may_reclaim_in_hierarchy) = quota.lowest_subtree_that_fits(cq, fr, val);
    if val <= available {
        return QuotaFit {
            mode: PreemptionMode::Fit,
            borrow,
            reason: None,
            no_fit_reason: None,
        };
    }
    let reason = Some(format!(
        "insufficient unused quota for {} in flavor {}, {} more needed",
        fr.resource,
        fr.flavor,
        q(val - available)
    ));
    // Preemption can help a request within the nominal quota, one whose
    // smallest fitting subtree lends to a parent it may reclaim from, or any
    // request of a queue that may preempt while borrowing
    // (`canPreemptWhileBorrowing`: `borrowWithinCohort`, or fair sharing
    // with reclaim within the cohort).
    if quota.limits(cq, fr).nominal >= val
        || may_reclaim_in_hierarchy
        || preempt_while_borrowing
        || queue.preemption.can_preempt_while_borrowing()
    {
        let (mode, borrow) = oracle(quota, fr, val);
        return QuotaFit {
            mode,
            borrow,
            reason,
            no_fit_reason: None,
        };
    }
    QuotaFit {
        mode: PreemptionMode::NoFit,
        borrow,
        reason,
        no_fit_reason: Some(PendingReason::WaitingForQuota),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect,
        }
    }

    fn tol(
        key: &str,
        op: TolerationOperator,
        value: &str,
        effect: Option<TaintEffect>,
    ) -> Toleration {
        Toleration {
            key: key.into(),
            operator: op,
            value: value.into(),
            effect,
        }
    }

    #[test]
    fn tolerations_follow_kubernetes() {
        use TaintEffect::*;
        use TolerationOperator::*;
        let t = taint("spot", "true", NoSchedule);
        assert!(tol("spot", Equal, "true", None).tolerates(&t));
        assert!(tol("spot", Equal, "true", Some(NoSchedule)).tolerates(&t));
        assert!(!tol("spot", Equal, "true", Some(NoExecute)).tolerates(&t));
        assert!(!tol("spot", Equal, "false", None).tolerates(&t));
        assert!(tol("spot", Exists, "", None).tolerates(&t));
        assert!(tol("", Exists, "", None).tolerates(&t));
        assert!(!tol("other", Exists, "", None).tolerates(&t));
    }

    #[test]
    fn only_hard_taints_count_and_flavor_tolerations_help() {
        use TaintEffect::*;
        let mut f = ResourceFlavor {
            name: "spot".into(),
            node_labels: BTreeMap::new(),
            node_taints: vec![
                taint("soft", "", PreferNoSchedule),
                taint("spot", "true", NoSchedule),
            ],
            tolerations: vec![],
            topology_name: None,
            topology_levels: None,
        };
        assert_eq!(
            f.untolerated_taint(&[]).map(|t| t.key.as_str()),
            Some("spot")
        );
        assert_eq!(
            f.untolerated_taint(&[]).map(ToString::to_string).as_deref(),
            Some("{spot true NoSchedule <nil>}")
        );
        let pod = [tol("spot", TolerationOperator::Exists, "", None)];
        assert!(f.untolerated_taint(&pod).is_none());
        f.tolerations = pod.to_vec();
        assert!(f.untolerated_taint(&[]).is_none());
    }

    #[test]
    fn node_selector_compares_only_the_flavor_keys() {
        let f = ResourceFlavor {
            name: "a".into(),
            node_labels: [("zone".to_string(), "a".to_string())].into(),
            node_taints: vec![],
            tolerations: vec![],
            topology_name: None,
            topology_levels: None,
        };
        let sel = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(f.matches_node_selector(&sel(&[])));
        assert!(f.matches_node_selector(&sel(&[("zone", "a"), ("disk", "ssd")])));
        assert!(!f.matches_node_selector(&sel(&[("zone", "b")])));
    }

    #[test]
    fn preference_order() {
        use PreemptionMode::*;
        let g = |preemption, borrow| Granular { preemption, borrow };
        let p = FlavorPreference::default();
        assert!(is_preferred(g(Fit, 1), g(Reclaim, 0), p));
        assert!(is_preferred(g(Reclaim, 1), g(Preempt, 0), p));
        assert!(is_preferred(g(Fit, 0), g(Fit, 1), p));
        assert!(is_preferred(g(Preempt, 1), g(NoCandidates, 0), p));
        assert!(is_preferred(g(NoCandidates, 1), g(NoFit, 0), p));
        assert!(!is_preferred(g(NoFit, 0), g(NoFit, 1), p));
    }

    /// Upstream's `TestIsPreferred`, case by case (its "feature gate
    /// disabled" case is the default preference here).
    #[test]
    fn is_preferred_as_upstream() {
        use FlavorPreference::*;
        use PreemptionMode::*;
        let g = |preemption, borrow| Granular { preemption, borrow };
        let cases = [
            ("feature gate disabled prioritises preemption", g(Fit, 0), g(Preempt, 0), BorrowingOverPreemption, true),
            ("explicit BorrowingOverPreemption prioritises borrowing distance", g(Preempt, 1), g(Fit, 2), BorrowingOverPreemption, false),
            ("explicit PreemptionOverBorrowing prioritises lower preemption", g(Preempt, 1), g(Fit, 2), PreemptionOverBorrowing, true),
            ("explicit PreemptionOverBorrowing breaks borrowing ties with preemption", g(Preempt, 1), g(Fit, 1), PreemptionOverBorrowing, false),
            ("explicit PreemptionOverBorrowing rejects no-candidate flavor before borrowing comparison", g(NoCandidates, 1), g(Fit, 2), PreemptionOverBorrowing, false),
            ("explicit PreemptionOverBorrowing prefers fit over shallower-borrowing no-candidate flavor", g(Fit, 2), g(NoCandidates, 1), PreemptionOverBorrowing, true),
            ("no-candidate flavor remains preferable to no-fit flavor", g(NoCandidates, 1), g(NoFit, 0), BorrowingOverPreemption, true),
            ("no-fit flavor remains worse than no-candidate flavor", g(NoFit, 0), g(NoCandidates, 1), BorrowingOverPreemption, false),
            ("no-candidate flavors retain borrowing preference", g(NoCandidates, 1), g(NoCandidates, 2), PreemptionOverBorrowing, true),
            ("no-candidate flavors retain borrowing preference in reverse", g(NoCandidates, 2), g(NoCandidates, 1), PreemptionOverBorrowing, false),
        ];
        for (name, a, b, pref, want) in cases {
            assert_eq!(is_preferred(a, b, pref), want, "TestIsPreferred/{name}");
        }
    }
}
