//! Between the Kueue objects the API serves and the queueing core's plain
//! data: ResourceFlavors, ClusterQueues, Cohorts, LocalQueues and Workloads in; the
//! Workload status fields and conditions a decision writes, out. Pure.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{PodSpec, Taint as KTaint, Toleration as KToleration},
    apimachinery::pkg::apis::meta::v1::Condition,
};
use serde_json::{json, Value};

use crate::vocabulary::keys;
use crate::{
    api::kueue::conversion,
    api::kueue::v1beta2 as api,
    api::selector::LabelSelector,
    queueing::{
        self, quantity, Admission, BorrowWithinCohort, FlavorFungibility, FlavorPreference,
        FlavorQuotas, FungibilityPolicy, Preemption, PreemptionPolicy, QueueingStrategy,
        ResourceGroup, ResourceQuota, StopPolicy, Taint, TaintEffect, Toleration,
        TolerationOperator,
    },
};

/// A Kueue object the engine cannot take, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct TranslationError {
    pub field: String,
    pub message: String,
}

fn qty(
    field: impl Into<String>,
    q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity,
) -> Result<i64, TranslationError> {
    quantity::parse(&q.0).map_err(|e| TranslationError {
        field: field.into(),
        message: e.to_string(),
    })
}

fn effect(s: &str) -> Option<TaintEffect> {
    match s {
        "NoSchedule" => Some(TaintEffect::NoSchedule),
        "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
        "NoExecute" => Some(TaintEffect::NoExecute),
        _ => None,
    }
}

fn taint(t: &KTaint) -> Option<Taint> {
    Some(Taint {
        key: t.key.clone(),
        value: t.value.clone().unwrap_or_default(),
        effect: effect(&t.effect)?,
    })
}

pub fn toleration(t: &KToleration) -> Toleration {
    Toleration {
        key: t.key.clone().unwrap_or_default(),
        operator: match t.operator.as_deref() {
            Some("Exists") => TolerationOperator::Exists,
            _ => TolerationOperator::Equal,
        },
        value: t.value.clone().unwrap_or_default(),
        effect: t.effect.as_deref().and_then(effect),
    }
}

pub fn flavor(rf: &api::ResourceFlavor) -> queueing::ResourceFlavor {
    queueing::ResourceFlavor {
        name: rf.metadata.name.clone().unwrap_or_default(),
        node_labels: rf.spec.node_labels.clone().unwrap_or_default(),
        node_taints: rf
            .spec
            .node_taints
            .iter()
            .flatten()
            .filter_map(taint)
            .collect(),
        tolerations: rf
            .spec
            .tolerations
            .iter()
            .flatten()
            .map(toleration)
            .collect(),
        topology_name: rf.spec.topology_name.clone(),
        topology_levels: None,
    }
}

/// A Node as topology-aware scheduling reads it. An allocatable quantity
/// that does not parse counts as none.
pub fn node(n: &k8s_openapi::api::core::v1::Node) -> queueing::topology::Node {
    let status = n.status.as_ref();
    queueing::topology::Node {
        name: n.metadata.name.clone().unwrap_or_default(),
        labels: n.metadata.labels.clone().unwrap_or_default(),
        allocatable: status
            .and_then(|s| s.allocatable.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|(r, q)| Some((r.clone(), quantity::parse(&q.0).ok()?)))
            .collect(),
        taints: n
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .filter_map(taint)
            .collect(),
        ready: status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .find(|c| c.type_ == "Ready")
            .is_some_and(|c| c.status == "True"),
        unschedulable: n
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false),
    }
}

/// What a pod outside TAS uses on its node, or `None` when it is not such
/// a pod (unbound, finished, or placed by TAS: Kueue's
/// `belongsToNonTASCache`).
pub fn non_tas_usage(p: &k8s_openapi::api::core::v1::Pod) -> Option<queueing::nodes::PodUsage> {
    let spec = p.spec.as_ref()?;
    let annotations = p.metadata.annotations.as_ref();
    let tas = [
        keys::PODSET_REQUIRED_TOPOLOGY_ANNOTATION,
        keys::PODSET_PREFERRED_TOPOLOGY_ANNOTATION,
        keys::PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
        keys::PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION,
        keys::PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION,
    ]
    .iter()
    .any(|k| annotations.is_some_and(|a| a.contains_key(*k)));
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    if !queueing::nodes::counts_as_non_tas(spec.node_name.as_deref(), phase, tas) {
        return None;
    }
    Some(queueing::nodes::PodUsage {
        node: spec.node_name.clone().unwrap_or_default(),
        requests: pod_requests(spec).unwrap_or_default(),
    })
}

/// A pod set's `topologyRequest` as the engine reads it.
fn topology_request(t: &api::PodSetTopologyRequest) -> queueing::workload::TopologyRequest {
    queueing::workload::TopologyRequest {
        required: t.required.clone(),
        preferred: t.preferred.clone(),
        unconstrained: t.unconstrained,
        pod_set_group: t.pod_set_group_name.clone(),
        slice_required: t.pod_set_slice_required_topology.clone(),
        slice_size: t.pod_set_slice_size,
        slice_layers: t
            .podset_slice_required_topology_constraints
            .iter()
            .flatten()
            .map(|c| queueing::workload::SliceLayer {
                level: c.topology.clone(),
                size: c.size,
            })
            .collect(),
    }
}

fn stop_policy(s: Option<&str>) -> StopPolicy {
    match s {
        Some("Hold") => StopPolicy::Hold,
        Some("HoldAndDrain") => StopPolicy::HoldAndDrain,
        _ => StopPolicy::None,
    }
}

fn preemption_policy(s: Option<&str>) -> PreemptionPolicy {
    match s {
        Some("LowerPriority") => PreemptionPolicy::LowerPriority,
        Some("LowerOrNewerEqualPriority") => PreemptionPolicy::LowerOrNewerEqualPriority,
        Some("Any") => PreemptionPolicy::Any,
        _ => PreemptionPolicy::Never,
    }
}

fn fungibility(s: Option<&str>, default: FungibilityPolicy) -> FungibilityPolicy {
    match s {
        Some("TryNextFlavor") => FungibilityPolicy::TryNextFlavor,
        // v1beta1's `Borrow` and `Preempt` mean "stop here".
        Some("MayStopSearch" | "Borrow" | "Preempt") => FungibilityPolicy::MayStopSearch,
        _ => default,
    }
}

/// `spec.resourceGroups` of a ClusterQueue or Cohort.
fn resource_groups(
    input: Option<&Vec<api::ResourceGroup>>,
) -> Result<Vec<ResourceGroup>, TranslationError> {
    let mut groups = Vec::new();
    for (gi, g) in input.into_iter().flatten().enumerate() {
        let mut flavors = Vec::new();
        for (fi, f) in g.flavors.iter().enumerate() {
            let mut resources = Vec::new();
            for (ri, r) in f.resources.iter().enumerate() {
                let at = |leaf: &str| {
                    format!("spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}].{leaf}")
                };
                resources.push(ResourceQuota {
                    name: r.name.clone(),
                    nominal: qty(at("nominalQuota"), &r.nominal_quota)?,
                    borrowing_limit: r
                        .borrowing_limit
                        .as_ref()
                        .map(|q| qty(at("borrowingLimit"), q))
                        .transpose()?,
                    lending_limit: r
                        .lending_limit
                        .as_ref()
                        .map(|q| qty(at("lendingLimit"), q))
                        .transpose()?,
                });
            }
            flavors.push(FlavorQuotas {
                name: f.name.clone(),
                resources,
            });
        }
        groups.push(ResourceGroup {
            covered_resources: g.covered_resources.clone(),
            flavors,
        });
    }
    Ok(groups)
}

/// `spec.fairSharing.weight` (absent: `None`, the engine's default of 1).
pub fn fair_weight(fs: Option<&api::FairSharing>) -> Result<Option<f64>, TranslationError> {
    fs.and_then(|f| f.weight.as_ref())
        .map(|w| qty("spec.fairSharing.weight", w).map(|milli| milli as f64 / 1000.0))
        .transpose()
}

/// A Cohort as the engine sees it.
pub fn cohort(c: &api::Cohort) -> Result<queueing::Cohort, TranslationError> {
    Ok(queueing::Cohort {
        name: c.metadata.name.clone().unwrap_or_default(),
        parent: c.spec.parent_name.clone().filter(|p| !p.is_empty()),
        resource_groups: resource_groups(c.spec.resource_groups.as_ref())?,
    })
}

pub fn cluster_queue(cq: &api::ClusterQueue) -> Result<queueing::ClusterQueue, TranslationError> {
    let s = &cq.spec;
    let groups = resource_groups(s.resource_groups.as_ref())?;
    let namespace_selector = match &s.namespace_selector {
        None => None,
        Some(sel) => Some(
            serde_json::to_value(sel)
                .and_then(serde_json::from_value::<LabelSelector>)
                .map_err(|e| TranslationError {
                    field: "spec.namespaceSelector".into(),
                    message: e.to_string(),
                })?,
        ),
    };
    let defaults = FlavorFungibility::default();
    let ff = s.flavor_fungibility.as_ref();
    let pre = s.preemption.as_ref();
    Ok(queueing::ClusterQueue {
        name: cq.metadata.name.clone().unwrap_or_default(),
        cohort: s.cohort_name.clone().filter(|c| !c.is_empty()),
        queueing_strategy: match s.queueing_strategy.as_deref() {
            Some("StrictFIFO") => QueueingStrategy::StrictFIFO,
            _ => QueueingStrategy::BestEffortFIFO,
        },
        namespace_selector,
        resource_groups: groups,
        preemption: Preemption {
            within_cluster_queue: preemption_policy(
                pre.and_then(|p| p.within_cluster_queue.as_deref()),
            ),
            reclaim_within_cohort: preemption_policy(
                pre.and_then(|p| p.reclaim_within_cohort.as_deref()),
            ),
            borrow_within_cohort: pre
                .and_then(|p| p.borrow_within_cohort.as_ref())
                .filter(|b| b.policy.as_deref() == Some("LowerPriority"))
                .map(|b| BorrowWithinCohort {
                    max_priority_threshold: b.max_priority_threshold,
                }),
        },
        flavor_fungibility: FlavorFungibility {
            when_can_borrow: fungibility(
                ff.and_then(|f| f.when_can_borrow.as_deref()),
                defaults.when_can_borrow,
            ),
            when_can_preempt: fungibility(
                ff.and_then(|f| f.when_can_preempt.as_deref()),
                defaults.when_can_preempt,
            ),
            preference: match ff.and_then(|f| f.preference.as_deref()) {
                Some("PreemptionOverBorrowing") => FlavorPreference::PreemptionOverBorrowing,
                _ => FlavorPreference::BorrowingOverPreemption,
            },
        },
        stop_policy: stop_policy(s.stop_policy.as_deref()),
        admission_fair_sharing: s.admission_scope.as_ref().is_some_and(|a| {
            a.admission_mode == api::admission_mode::USAGE_BASED_ADMISSION_FAIR_SHARING
        }),
        terminating: cq.metadata.deletion_timestamp.is_some(),
    })
}

pub fn local_queue(lq: &api::LocalQueue) -> queueing::LocalQueue {
    queueing::LocalQueue {
        namespace: lq.metadata.namespace.clone().unwrap_or_default(),
        name: lq.metadata.name.clone().unwrap_or_default(),
        cluster_queue: lq.spec.cluster_queue.clone().unwrap_or_default(),
        stop_policy: stop_policy(lq.spec.stop_policy.as_deref()),
        fair_sharing: local_queue_fair_sharing(lq),
    }
}

/// `spec.fairSharing.weight` and the admission fair sharing status last
/// written (a quantity that does not parse counts as absent).
fn local_queue_fair_sharing(lq: &api::LocalQueue) -> queueing::LocalQueueFairSharing {
    let weight = lq
        .spec
        .fair_sharing
        .as_ref()
        .and_then(|f| f.weight.as_ref())
        .and_then(|w| quantity::parse(&w.0).ok())
        .unwrap_or(1000);
    let status = lq
        .status
        .as_ref()
        .and_then(|s| s.fair_sharing.as_ref())
        .and_then(|f| f.admission_fair_sharing_status.as_ref())
        .map(|a| {
            let consumed = a
                .consumed_resources
                .iter()
                .filter_map(|(r, q)| Some((r.clone(), quantity::parse(&q.0).ok()?)))
                .collect();
            (consumed, a.last_update.0.as_millisecond())
        });
    queueing::LocalQueueFairSharing { weight, status }
}

pub fn condition_true(conds: Option<&Vec<Condition>>, ty: &str) -> bool {
    conds
        .into_iter()
        .flatten()
        .any(|c| c.type_ == ty && c.status == "True")
}

/// Requests of one pod, in milli-units: the containers' requests (limits
/// standing in for missing requests) summed, raised to the largest init
/// container's, plus the pod overhead — as the kube-scheduler counts.
pub fn pod_requests(spec: &PodSpec) -> Result<BTreeMap<String, i64>, TranslationError> {
    fn container(
        c: &k8s_openapi::api::core::v1::Container,
        field: &str,
    ) -> Result<BTreeMap<String, i64>, TranslationError> {
        let mut out = BTreeMap::new();
        if let Some(r) = &c.resources {
            for (name, q) in r.limits.iter().flatten() {
                out.insert(
                    name.clone(),
                    qty(format!("{field}.resources.limits[{name}]"), q)?,
                );
            }
            for (name, q) in r.requests.iter().flatten() {
                out.insert(
                    name.clone(),
                    qty(format!("{field}.resources.requests[{name}]"), q)?,
                );
            }
        }
        Ok(out)
    }
    let mut sum: BTreeMap<String, i64> = BTreeMap::new();
    for (i, c) in spec.containers.iter().enumerate() {
        for (k, v) in container(c, &format!("containers[{i}]"))? {
            *sum.entry(k).or_default() += v;
        }
    }
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let req = container(c, &format!("initContainers[{i}]"))?;
        if c.restart_policy.as_deref() == Some("Always") {
            // A sidecar runs beside the containers.
            for (k, v) in req {
                *sum.entry(k).or_default() += v;
            }
        } else {
            for (k, v) in req {
                let e = sum.entry(k).or_default();
                *e = (*e).max(v);
            }
        }
    }
    for (k, q) in spec.overhead.iter().flatten() {
        *sum.entry(k.clone()).or_default() += qty(format!("overhead[{k}]"), q)?;
    }
    Ok(sum)
}

fn admission(a: &api::Admission) -> Result<Admission, TranslationError> {
    let mut psas = Vec::new();
    for (i, p) in a.pod_set_assignments.iter().flatten().enumerate() {
        let mut usage = BTreeMap::new();
        for (r, q) in p.resource_usage.iter().flatten() {
            usage.insert(
                r.clone(),
                qty(
                    format!("status.admission.podSetAssignments[{i}].resourceUsage[{r}]"),
                    q,
                )?,
            );
        }
        // An assignment that does not read still leaves the quota counted:
        // only its nodes' TAS usage is lost, and that is said.
        let topology = p.topology_assignment.as_ref().and_then(|t| {
            let slices = serde_json::to_value(&t.slices).unwrap_or_default();
            match conversion::topology::expand(&slices, t.levels.len()) {
                Ok(domains) => Some(queueing::topology::Assignment {
                    levels: t.levels.clone(),
                    domains,
                }),
                Err(e) => {
                    tracing::warn!(
                        field = %format!(
                            "status.admission.podSetAssignments[{i}].topologyAssignment.{}",
                            e.field
                        ),
                        problem = %e.problem,
                        "topology assignment not read: its TAS usage is not counted"
                    );
                    None
                }
            }
        });
        psas.push(queueing::PodSetAssignment {
            name: p.name.clone(),
            flavors: p.flavors.clone().unwrap_or_default(),
            resource_usage: usage,
            count: p.count.unwrap_or(0).max(0) as u32,
            topology,
        });
    }
    Ok(Admission {
        cluster_queue: a.cluster_queue.clone().unwrap_or_default(),
        pod_set_assignments: psas,
    })
}

fn millis(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> i64 {
    t.0.as_millisecond()
}

/// The engine's view of a Workload. Its quota counts only while both
/// `status.admission` and `QuotaReserved=True` are there, as in Kueue.
pub fn workload(wl: &api::Workload) -> Result<queueing::Workload, TranslationError> {
    let conds = wl.status.as_ref().and_then(|s| s.conditions.as_ref());
    let mut pod_sets = Vec::new();
    for (i, ps) in wl.spec.pod_sets.iter().flatten().enumerate() {
        let no_spec;
        let spec = match &ps.template.spec {
            Some(spec) => spec,
            None => {
                no_spec = PodSpec::default();
                &no_spec
            }
        };
        let requests = pod_requests(spec).map_err(|e| TranslationError {
            field: format!("spec.podSets[{i}].template.spec.{}", e.field),
            message: e.message,
        })?;
        pod_sets.push(queueing::PodSet {
            name: ps.name.as_str().into(),
            count: ps.count.max(0) as u32,
            min_count: ps.min_count.map(|m| m.max(0) as u32),
            requests: requests.into(),
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            node_affinity: node_affinity(spec),
            tolerations: spec.tolerations.iter().flatten().map(toleration).collect(),
            topology: ps.topology_request.as_ref().map(topology_request),
        });
    }
    let admission = match wl.status.as_ref().and_then(|s| s.admission.as_ref()) {
        Some(a) if condition_true(conds, api::condition::QUOTA_RESERVED) => Some(admission(a)?),
        _ => None,
    };
    Ok(queueing::Workload {
        namespace: wl.metadata.namespace.as_deref().unwrap_or_default().into(),
        name: wl.metadata.name.clone().unwrap_or_default(),
        uid: wl.metadata.uid.as_deref().unwrap_or_default().into(),
        job_uid: wl
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(keys::JOB_UID_LABEL).cloned()),
        copy_chain: copy_chain(wl),
        queue_name: wl.spec.queue_name.as_deref().unwrap_or_default().into(),
        priority: wl.spec.priority.unwrap_or(0),
        created: wl
            .metadata
            .creation_timestamp
            .as_ref()
            .map(millis)
            .unwrap_or(0),
        // On hold, Kueue takes it out of every queue as an inactive one.
        active: wl.spec.active.unwrap_or(true)
            && !crate::queueing::reservation::is_on_hold(
                conds.map(Vec::as_slice).unwrap_or_default(),
            ),
        finished: condition_true(conds, api::condition::FINISHED),
        pod_sets,
        admission,
        readiness: readiness(wl),
        replaces: wl
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::SLICE_REPLACEMENT_FOR_ANNOTATION).cloned()),
        // Kueue replaces a failed node only for an Admitted Workload
        // (`HasTopologyAssignmentWithUnhealthyNode`): one still waiting on
        // its admission checks keeps its assignment until then.
        unhealthy_nodes: wl
            .status
            .as_ref()
            .filter(|_| condition_true(conds, api::condition::ADMITTED))
            .and_then(|s| s.unhealthy_nodes.as_ref())
            .into_iter()
            .flatten()
            .map(|n| n.name.clone())
            .collect(),
        single_pod_owned: single_pod_owned(wl),
    })
}

/// The pod spec's required node affinity terms, `matchExpressions` only
/// (an operator the apiserver would not have let through is skipped).
fn node_affinity(spec: &PodSpec) -> queueing::node_affinity::NodeAffinity {
    use queueing::node_affinity::{NodeAffinity, Operator, Requirement};
    let terms = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|s| {
            s.node_selector_terms
                .iter()
                .map(|t| {
                    t.match_expressions
                        .iter()
                        .flatten()
                        .filter_map(|e| {
                            Some(Requirement {
                                key: e.key.clone(),
                                operator: Operator::parse(&e.operator)?,
                                values: e.values.clone().unwrap_or_default(),
                            })
                        })
                        .collect()
                })
                .collect()
        });
    NodeAffinity(terms)
}

/// Kueue's `OwnedBySinglePod`, from the Workload's ownerReferences and its
/// `kueue.x-k8s.io/is-group-workload` annotation.
fn single_pod_owned(wl: &api::Workload) -> bool {
    let owners: Vec<(&str, &str)> = wl
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| (o.api_version.as_str(), o.kind.as_str()))
        .collect();
    let group = wl
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::GROUP_WORKLOAD_ANNOTATION))
        .map(String::as_str);
    crate::queueing::topology::owned_by_single_pod(&owners, group)
}

/// A MultiKueue worker's copy of a workload slice (the origin label): its
/// origin and slice chain (see `Workload::copy_chain`).
fn copy_chain(wl: &api::Workload) -> Option<String> {
    let origin = wl
        .metadata
        .labels
        .as_ref()?
        .get(api::MULTIKUEUE_ORIGIN_LABEL)?;
    let chain = wl
        .metadata
        .annotations
        .as_ref()?
        .get(keys::WORKLOAD_SLICE_NAME_ANNOTATION)?;
    Some(format!("{origin}/{chain}"))
}

/// The `PodsReady` condition, `status.requeueState.requeueAt` and
/// `status.reclaimablePods`, for the engine.
fn readiness(wl: &api::Workload) -> queueing::workload::Readiness {
    let status = wl.status.as_ref();
    let conds = status.and_then(|s| s.conditions.as_ref());
    queueing::workload::Readiness {
        pods_ready: conds
            .and_then(|c| c.iter().find(|c| c.type_ == api::condition::PODS_READY))
            .map(|c| c.status == "True"),
        requeue_at: status
            .and_then(|s| s.requeue_state.as_ref())
            .and_then(|r| r.requeue_at.as_ref())
            .map(millis),
        reclaimable: status
            .and_then(|s| s.reclaimable_pods.as_ref())
            .into_iter()
            .flatten()
            .map(|r| (r.name.clone(), r.count.max(0) as u32))
            .collect(),
        awaiting_replacements: conds.is_some_and(|c| {
            c.iter().any(|c| {
                c.type_ == api::condition::WAITING_FOR_REPLACEMENT_PODS && c.status == "True"
            })
        }),
    }
}

/// `status.admission` as written.
pub fn admission_json(a: &Admission) -> Value {
    let psas: Vec<Value> = a
        .pod_set_assignments
        .iter()
        .map(|p| {
            let usage: serde_json::Map<String, Value> = p
                .resource_usage
                .iter()
                .map(|(r, q)| (r.clone(), Value::String(quantity::format(r, *q))))
                .collect();
            let mut psa = json!({
                "name": p.name,
                "flavors": p.flavors,
                "resourceUsage": usage,
                "count": p.count,
            });
            if let Some(t) = &p.topology {
                psa["topologyAssignment"] = json!({
                    "levels": t.levels,
                    "slices": conversion::topology::encode(&t.levels, &t.domains),
                });
            }
            psa
        })
        .collect();
    json!({"clusterQueue": a.cluster_queue, "podSetAssignments": psas})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::kueue::v1beta2::Conditions;

    #[test]
    fn a_cluster_queue_reads_as_the_engine_needs_it() {
        let cq: api::ClusterQueue = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"cohortName": "all", "queueingStrategy": "StrictFIFO",
                     "namespaceSelector": {},
                     "stopPolicy": "HoldAndDrain",
                     "admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
                     "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                                           "preference": "PreemptionOverBorrowing"},
                     "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                                    "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 5}},
                     "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                        {"name": "on-demand", "resources": [
                            {"name": "cpu", "nominalQuota": "4", "borrowingLimit": "500m"},
                            {"name": "memory", "nominalQuota": "1Gi", "lendingLimit": 0}]}]}]}
        }))
        .unwrap();
        let e = cluster_queue(&cq).unwrap();
        assert_eq!(e.cohort.as_deref(), Some("all"));
        assert_eq!(e.queueing_strategy, QueueingStrategy::StrictFIFO);
        assert_eq!(e.namespace_selector, Some(LabelSelector::default()));
        assert_eq!(e.stop_policy, StopPolicy::HoldAndDrain);
        assert!(e.admission_fair_sharing);
        assert_eq!(e.preemption.reclaim_within_cohort, PreemptionPolicy::Any);
        assert_eq!(
            e.flavor_fungibility,
            FlavorFungibility {
                when_can_borrow: FungibilityPolicy::TryNextFlavor,
                when_can_preempt: FungibilityPolicy::TryNextFlavor,
                preference: FlavorPreference::PreemptionOverBorrowing,
            }
        );
        assert_eq!(
            e.preemption.borrow_within_cohort,
            Some(BorrowWithinCohort {
                max_priority_threshold: Some(5)
            })
        );
        let r = &e.resource_groups[0].flavors[0].resources;
        assert_eq!(r[0].nominal, 4000);
        assert_eq!(r[0].borrowing_limit, Some(500));
        assert_eq!(r[1].nominal, 1024 * 1024 * 1024 * 1000);
        assert_eq!(r[1].lending_limit, Some(0));
        // borrowWithinCohort's policy Never is as good as none.
        let mut never = cq.clone();
        if let Some(b) = never
            .spec
            .preemption
            .as_mut()
            .and_then(|p| p.borrow_within_cohort.as_mut())
        {
            b.policy = Some("Never".into());
        }
        assert_eq!(
            cluster_queue(&never)
                .unwrap()
                .preemption
                .borrow_within_cohort,
            None
        );
        // Without a namespaceSelector a ClusterQueue admits from nowhere.
        let mut none = cq.clone();
        none.spec.namespace_selector = None;
        assert_eq!(cluster_queue(&none).unwrap().namespace_selector, None);
    }

    #[test]
    fn a_local_queue_reads_its_weight_and_admission_fair_sharing_status() {
        let lq: api::LocalQueue = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "team"},
            "spec": {"clusterQueue": "cq", "fairSharing": {"weight": "2"}},
            "status": {"fairSharing": {"weightedShare": 0, "admissionFairSharingStatus": {
                "consumedResources": {"cpu": "1500m"}, "lastUpdate": "2026-01-01T00:00:01Z"}}}
        }))
        .unwrap();
        let q = local_queue(&lq);
        assert_eq!(q.fair_sharing.weight, 2000);
        let (consumed, at) = q.fair_sharing.status.unwrap();
        assert_eq!(consumed["cpu"], 1500);
        assert_eq!(at % 1000, 0);
        assert!(at > 0);
        // No fairSharing: weight 1, nothing to seed from.
        let mut plain = lq.clone();
        plain.spec.fair_sharing = None;
        plain.status = None;
        assert_eq!(local_queue(&plain).fair_sharing, Default::default());
    }

    #[test]
    fn a_cohort_reads_as_the_engine_needs_it() {
        let co: api::Cohort = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
            "metadata": {"name": "team"},
            "spec": {"parentName": "org",
                     "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                        {"name": "on-demand", "resources": [
                            {"name": "cpu", "nominalQuota": "6", "lendingLimit": "2"}]}]}]}
        }))
        .unwrap();
        let e = cohort(&co).unwrap();
        assert_eq!(e.name, "team");
        assert_eq!(e.parent.as_deref(), Some("org"));
        let r = &e.resource_groups[0].flavors[0].resources[0];
        assert_eq!((r.nominal, r.lending_limit), (6000, Some(2000)));
        // A root: no parent, and no quota of its own.
        let root: api::Cohort = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
            "metadata": {"name": "org"}, "spec": {"parentName": ""}
        }))
        .unwrap();
        let e = cohort(&root).unwrap();
        assert_eq!((e.parent, e.resource_groups.len()), (None, 0));
        // A quantity that does not parse names its field.
        let mut bad = co.clone();
        bad.spec.resource_groups.as_mut().unwrap()[0].flavors[0].resources[0].nominal_quota =
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("lots".into());
        let err = cohort(&bad).unwrap_err();
        assert_eq!(
            err.field,
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
        );
    }

    #[test]
    fn pod_requests_count_like_the_scheduler() {
        let spec: PodSpec = serde_json::from_value(json!({
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}}}],
            "initContainers": [
                {"name": "init", "resources": {"requests": {"cpu": "2"}}},
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"memory": "1Gi"}}}],
            "overhead": {"cpu": "100m"}
        }))
        .unwrap();
        let r = pod_requests(&spec).unwrap();
        assert_eq!(r["cpu"], 2100);
        assert_eq!(r["memory"], 2 * 1024 * 1024 * 1024 * 1000);
    }

    #[test]
    fn quota_counts_only_with_quota_reserved() {
        let mut wl: api::Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u", "creationTimestamp": "2026-01-01T00:00:01Z"},
            "spec": {"queueName": "lq", "priority": 3, "podSets": [{"name": "main", "count": 2, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
            "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "2"}, "count": 2}]}}
        }))
        .unwrap();
        let e = workload(&wl).unwrap();
        assert_eq!(e.admission, None);
        assert_eq!(e.pod_sets[0].requests["cpu"], 1000);
        assert_eq!(e.created, 1_767_225_601_000);
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        );
        let mut c = Conditions::default();
        assert!(c.set("QuotaReserved", true, "QuotaReserved", "m", &now, None));
        assert!(!c.set("QuotaReserved", true, "QuotaReserved", "m", &now, None));
        wl.status.as_mut().unwrap().conditions = Some(c.0);
        let e = workload(&wl).unwrap();
        let a = e.admission.unwrap();
        assert_eq!(a.cluster_queue, "cq");
        assert_eq!(a.pod_set_assignments[0].resource_usage["cpu"], 2000);
        assert_eq!(
            admission_json(&a)["podSetAssignments"][0]["resourceUsage"]["cpu"],
            "2"
        );
    }

    /// A pod set's required node affinity reaches the engine: its terms'
    /// `matchExpressions` (a term of `matchFields` alone reads as empty).
    #[test]
    fn required_node_affinity_reaches_the_engine() {
        use crate::queueing::node_affinity::{NodeAffinity, Operator, Requirement};
        let wl: api::Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "type", "operator": "In", "values": ["two"]},
                                          {"key": "gen", "operator": "Gt", "values": ["4"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}}}]}
        }))
        .unwrap();
        let ps = &workload(&wl).unwrap().pod_sets[0];
        let r = |key: &str, operator, v: &str| Requirement {
            key: key.into(),
            operator,
            values: vec![v.into()],
        };
        assert_eq!(
            ps.node_affinity,
            NodeAffinity(Some(vec![
                vec![r("type", Operator::In, "two"), r("gen", Operator::Gt, "4")],
                vec![],
            ]))
        );
    }

    /// A MultiKueue worker's copy of a slice (the origin label) is known
    /// by its origin and slice chain, also once the worker's job adopted it
    /// (its job UID label added); a Workload without the origin label has
    /// none.
    #[test]
    fn a_multikueue_copys_slice_chain_is_its_origin_and_first_slice() {
        let wl = |labels: Value| -> api::Workload {
            serde_json::from_value(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": "w2", "namespace": "ns", "labels": labels,
                             "annotations": {keys::WORKLOAD_SLICE_NAME_ANNOTATION: "w1"}},
                "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
            }))
            .unwrap()
        };
        let copy = workload(&wl(json!({api::MULTIKUEUE_ORIGIN_LABEL: "mgr"}))).unwrap();
        assert_eq!(copy.copy_chain.as_deref(), Some("mgr/w1"));
        let adopted = workload(&wl(
            json!({api::MULTIKUEUE_ORIGIN_LABEL: "mgr", keys::JOB_UID_LABEL: "u"}),
        ))
        .unwrap();
        assert_eq!(
            (adopted.copy_chain.as_deref(), adopted.job_uid.as_deref()),
            (Some("mgr/w1"), Some("u"))
        );
        assert_eq!(workload(&wl(json!({}))).unwrap().copy_chain, None);
    }

    /// `status.unhealthyNodes` reaches the engine (whose second pass
    /// replaces them) only once the Workload is Admitted, as Kueue's
    /// `HasTopologyAssignmentWithUnhealthyNode` reads it.
    #[test]
    fn unhealthy_nodes_count_only_once_admitted() {
        let mut wl: api::Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
            "status": {"unhealthyNodes": [{"name": "x1"}]}
        }))
        .unwrap();
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        );
        let mut c = Conditions::default();
        c.set("QuotaReserved", true, "QuotaReserved", "m", &now, None);
        wl.status.as_mut().unwrap().conditions = Some(c.0.clone());
        assert!(workload(&wl).unwrap().unhealthy_nodes.is_empty());
        c.set("Admitted", true, "Admitted", "m", &now, None);
        wl.status.as_mut().unwrap().conditions = Some(c.0);
        assert_eq!(workload(&wl).unwrap().unhealthy_nodes, ["x1"]);
    }

    /// A topology assignment reads back as the engine's domains (a
    /// restart loses no TAS usage), is written back in Kueue's encoding,
    /// and one that does not read leaves the quota counted.
    #[test]
    fn a_topology_assignment_round_trips_and_a_bad_one_keeps_the_quota() {
        let wl = |slices: Value| -> api::Workload {
            serde_json::from_value(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": "w", "namespace": "ns", "uid": "u"},
                "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": {"spec": {"containers": [
                    {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
                "status": {
                    "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                    "message": "", "lastTransitionTime": "2026-01-01T00:00:01Z"}],
                    "admission": {"clusterQueue": "cq", "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "2"}, "count": 2,
                     "topologyAssignment": {"levels": ["kubernetes.io/hostname"], "slices": slices}}]}}
            }))
            .unwrap()
        };
        let good = json!([{"domainCount": 2,
            "valuesPerLevel": [{"individual": {"prefix": "node-", "roots": ["a", "b"]}}],
            "podCounts": {"universal": 1}}]);
        let a = workload(&wl(good.clone())).unwrap().admission.unwrap();
        let t = a.pod_set_assignments[0].topology.as_ref().unwrap();
        assert_eq!(
            t.domains
                .iter()
                .map(|d| (d.values[0].as_str(), d.count))
                .collect::<Vec<_>>(),
            [("node-a", 1), ("node-b", 1)]
        );
        assert_eq!(
            admission_json(&a)["podSetAssignments"][0]["topologyAssignment"]["slices"],
            good
        );
        let bad = json!([{"domainCount": 3,
            "valuesPerLevel": [{"individual": {"roots": ["a"]}}], "podCounts": {"universal": 1}}]);
        let a = workload(&wl(bad)).unwrap().admission.unwrap();
        assert_eq!(a.pod_set_assignments[0].resource_usage["cpu"], 2000);
        assert!(a.pod_set_assignments[0].topology.is_none());
    }
}
