//! Why a Workload waits, from the engine's own state: where it stands in
//! its ClusterQueue and who is ahead, what its next nomination would find
//! (flavors, or Kueue's own message for what falls short), the quota of
//! each flavor it asks for at every level of the cohort tree, whom it
//! would preempt, and the admission checks still to pass. Nothing is
//! changed: the nomination runs on a copy of the quota tree, exactly as
//! the next cycle's would (`kubectl kueue explain`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{cycle::Outcome, Engine, State};
use crate::queueing::{
    cluster_queue::{ClusterQueue, PreemptionPolicy, QueueingStrategy},
    flavors::AssignmentMode,
    quantity,
    queues::QueueOrder,
    quota::FlavorResource,
};

/// How many of the workloads ahead are named.
pub const AHEAD_SHOWN: usize = 10;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// `Pending`, `QuotaReserved` (quota held under admission checks:
    /// admitted once all are Ready, which the Workload's status tells),
    /// `Admitted`, `Evicting`, `Inactive`, `Finished` or `NotQueued`.
    pub state: &'static str,
    pub local_queue: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
    /// The answer in plain words, most important first.
    pub summary: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nomination: Option<Nomination>,
    /// Per pod set, resource and flavor considered: the quota at each
    /// level of the cohort tree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quota: Vec<FlavorQuota>,
    /// The AdmissionChecks it must pass once quota is reserved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub admission_checks: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    /// 1 for the head of the ClusterQueue.
    pub in_cluster_queue: usize,
    /// The nearest workloads ahead (at most [`AHEAD_SHOWN`]), nearest last.
    pub ahead: Vec<Peer>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Peer {
    pub namespace: String,
    pub name: String,
    pub local_queue: String,
    pub priority: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Nomination {
    /// `Fit`, `Preempt` or `NoFit`.
    pub mode: &'static str,
    /// Kueue's message for what does not fit (empty when it fits).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Pod set → resource → flavor, as far as they were assigned.
    pub flavors: BTreeMap<String, BTreeMap<String, String>>,
    /// Whom it would preempt to fit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would_preempt: Vec<Victim>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Victim {
    pub namespace: String,
    pub name: String,
    pub cluster_queue: String,
    pub priority: i32,
    /// Kueue's preemption reason (`InClusterQueue`, `InCohortReclamation`, …).
    pub reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlavorQuota {
    pub pod_set: String,
    pub resource: String,
    pub flavor: String,
    /// What the pod set asks for, all pods together.
    pub requested: String,
    /// The ClusterQueue, then each Cohort above it.
    pub levels: Vec<Level>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Level {
    pub name: String,
    /// The quota of its subtree (for the ClusterQueue: its nominal quota).
    pub quota: String,
    pub used: String,
    pub free: String,
}

impl Explanation {
    /// A Workload kept out of the queues by its device claims (a template
    /// or DeviceClass it needs, or no node that can hold its devices under
    /// `draPlacement`): pending with the message its status carries.
    pub fn held_for_devices(local_queue: &str, message: &str) -> Explanation {
        Explanation {
            state: "Pending",
            local_queue: local_queue.to_string(),
            cluster_queue: None,
            summary: vec![
                format!("It waits for its devices, before any quota is looked at: {message}."),
                "It is counted again when the cluster's ResourceClaimTemplates, ResourceSlices or DeviceClasses change.".into(),
            ],
            position: None,
            nomination: None,
            quota: Vec::new(),
            admission_checks: Vec::new(),
        }
    }

    /// Whether it names a workload of another namespace than `namespace`.
    pub fn names_others(&self, namespace: &str) -> bool {
        let peers = self
            .position
            .iter()
            .flat_map(|p| &p.ahead)
            .map(|p| &p.namespace);
        let victims = self
            .nomination
            .iter()
            .flat_map(|n| &n.would_preempt)
            .map(|v| &v.namespace);
        peers.chain(victims).any(|ns| ns != namespace)
    }

    /// Workloads of other namespaces than `namespace` counted, not named
    /// (their namespace, name and LocalQueue emptied), for a caller who
    /// may not read the ClusterQueue's pending workloads.
    pub fn redact(&mut self, namespace: &str) {
        for p in self.position.iter_mut().flat_map(|p| &mut p.ahead) {
            if p.namespace != namespace {
                p.namespace.clear();
                p.name.clear();
                p.local_queue.clear();
            }
        }
        for v in self
            .nomination
            .iter_mut()
            .flat_map(|n| &mut n.would_preempt)
        {
            if v.namespace != namespace {
                v.namespace.clear();
                v.name.clear();
            }
        }
    }
}

fn mode_name(m: AssignmentMode) -> &'static str {
    match m {
        AssignmentMode::Fit => "Fit",
        AssignmentMode::Preempt => "Preempt",
        AssignmentMode::NoFit => "NoFit",
    }
}

fn policy(p: PreemptionPolicy) -> &'static str {
    match p {
        PreemptionPolicy::Never => "Never",
        PreemptionPolicy::LowerPriority => "LowerPriority",
        PreemptionPolicy::LowerOrNewerEqualPriority => "LowerOrNewerEqualPriority",
        PreemptionPolicy::Any => "Any",
    }
}

impl Engine {
    /// Why `namespace/name` waits (or that it does not); `None` when the
    /// engine does not know the Workload.
    pub fn explain(&self, namespace: &str, name: &str) -> Option<Explanation> {
        let key = format!("{namespace}/{name}");
        let (key, rec) = self.workloads.get_key_value(key.as_str())?;
        let wl = &rec.wl;
        let mut e = Explanation {
            state: "Pending",
            local_queue: wl.queue_name.to_string(),
            cluster_queue: None,
            summary: Vec::new(),
            position: None,
            nomination: None,
            quota: Vec::new(),
            admission_checks: Vec::new(),
        };
        if wl.finished {
            e.state = "Finished";
            e.summary
                .push("It has finished: it holds no quota and is not queued again.".into());
            return Some(e);
        }
        if !wl.active {
            e.state = "Inactive";
            e.summary.push(
                "spec.active is false: it is not admitted until it is activated (kubectl kueue resume workload)."
                    .into(),
            );
            return Some(e);
        }
        let cq_name = match &rec.state {
            State::Holding(h) => {
                e.cluster_queue = Some(h.cq.to_string());
                let flavors = flavors_of(&h.admission);
                e.admission_checks = self
                    .checks_for_admission(&h.admission)
                    .into_iter()
                    .collect();
                if h.evicting {
                    e.state = "Evicting";
                    e.summary.push(format!(
                        "It is being evicted from ClusterQueue {}; once its pods are gone it queues again.",
                        h.cq
                    ));
                } else if e.admission_checks.is_empty() {
                    e.state = "Admitted";
                    e.summary.push(format!(
                        "It is admitted by ClusterQueue {} on {}.",
                        h.cq,
                        describe_flavors(&flavors)
                    ));
                } else {
                    // The checks' states are the Workload's (the engine
                    // does not keep them): it is admitted once all are Ready.
                    e.state = "QuotaReserved";
                    e.summary.push(format!(
                        "Quota is reserved in ClusterQueue {} on {}; it is admitted once the admission checks {} are Ready.",
                        h.cq,
                        describe_flavors(&flavors),
                        e.admission_checks.join(", ")
                    ));
                }
                return Some(e);
            }
            State::Parked => {
                e.state = "NotQueued";
                self.why_parked(wl, rec.pending.as_ref().map(|(_, m)| &**m), &mut e);
                return Some(e);
            }
            State::Queued { cq } => cq.clone(),
        };
        let last = rec.pending.as_ref().map(|(_, m)| &**m);
        self.in_queue(wl, key, &cq_name, None, last, &mut e)?;
        Some(e)
    }

    /// Would `wl` (a Workload not created yet) be admitted now, where, and
    /// whom would it preempt: [`Self::explain`] as if it were queued, the
    /// engine unchanged.
    pub fn simulate(&self, wl: &crate::queueing::Workload) -> Explanation {
        let mut e = Explanation {
            state: "Pending",
            local_queue: wl.queue_name.to_string(),
            cluster_queue: None,
            summary: vec!["If it were created now:".into()],
            position: None,
            nomination: None,
            quota: Vec::new(),
            admission_checks: Vec::new(),
        };
        let key: std::sync::Arc<str> = format!("{}/{} (simulated)", wl.namespace, wl.name).into();
        let cq = self
            .local_queue(&wl.namespace, &wl.queue_name)
            .map(|lq| lq.cluster_queue.to_string())
            .filter(|cq| self.cluster_queues.contains_key(cq));
        match cq {
            Some(cq) => {
                let order = QueueOrder::of(&key, wl);
                let _ = self.in_queue(wl, &key, &cq, Some(order), None, &mut e);
            }
            None => {
                e.state = "NotQueued";
                self.why_parked(wl, None, &mut e);
            }
        }
        e
    }

    /// The explanation of `wl` waiting in `cq_name` (`extra`: its order,
    /// when the engine does not hold it).
    fn in_queue(
        &self,
        wl: &crate::queueing::Workload,
        key: &std::sync::Arc<str>,
        cq_name: &str,
        extra: Option<QueueOrder>,
        last: Option<&str>,
        e: &mut Explanation,
    ) -> Option<()> {
        let cq = self.cluster_queues.get(cq_name)?;
        e.cluster_queue = Some(cq_name.to_string());
        if !self.is_active(cq) {
            let active = self.active_condition(cq);
            e.summary.push(format!(
                "ClusterQueue {cq_name} admits nothing now: {}",
                active.message
            ));
        }
        self.position(cq, key, extra, e);
        let mut snap = self.quota.clone();
        let entry =
            self.nominate_workload(&mut snap, cq_name.to_string(), QueueOrder::of(key, wl), wl);
        if let Outcome::Pending { message, .. } = &entry.outcome {
            e.summary.push(format!("It cannot be admitted: {message}."));
        }
        if let Some(a) = &entry.assignment {
            let mode = a.mode();
            let victims: Vec<Victim> = entry
                .targets
                .iter()
                .filter_map(|t| {
                    let v = self.workloads.get(t.key.as_str())?;
                    Some(Victim {
                        namespace: v.wl.namespace.to_string(),
                        name: v.wl.name.clone(),
                        cluster_queue: t.cluster_queue.clone(),
                        priority: v.wl.priority,
                        reason: t.reason.as_str(),
                    })
                })
                .collect();
            let mut flavors: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            for ps in &a.pod_sets {
                let chosen = flavors.entry(ps.name.clone()).or_default();
                for (resource, choice) in &ps.flavors {
                    chosen.insert(resource.clone(), choice.flavor.clone());
                }
                for (resource, requested) in &ps.requests {
                    let considered: Vec<String> = match ps.flavors.get(resource) {
                        Some(c) => vec![c.flavor.clone()],
                        None => offered(cq, resource),
                    };
                    for flavor in considered {
                        e.quota.push(
                            self.flavor_quota(cq_name, &ps.name, resource, &flavor, *requested),
                        );
                    }
                }
            }
            e.summary
                .push(self.verdict(cq, mode, &a.message(), &victims, &e.position));
            e.nomination = Some(Nomination {
                mode: mode_name(mode),
                message: a.message(),
                flavors,
                would_preempt: victims,
            });
        }
        if let Some(last) = last.filter(|l| !l.is_empty()) {
            e.summary
                .push(format!("The last cycle that tried it said: {last}."));
        }
        let checks = self.check_strategy(cq_name);
        if !checks.is_empty() {
            let all = self.cq_flavor_set(cq_name);
            e.admission_checks =
                crate::queueing::admission_checks::for_workload(&checks, &all, None)
                    .into_iter()
                    .collect();
            e.summary.push(format!(
                "Once quota is reserved it waits for the admission checks {}.",
                e.admission_checks.join(", ")
            ));
        }
        Some(())
    }

    fn why_parked(&self, wl: &crate::queueing::Workload, last: Option<&str>, e: &mut Explanation) {
        let lq = self.local_queue(&wl.namespace, &wl.queue_name);
        match lq {
            None => e.summary.push(format!(
                "LocalQueue {} does not exist in namespace {}: create it, or set kueue.x-k8s.io/queue-name to one that does.",
                wl.queue_name, wl.namespace
            )),
            Some(lq) if !self.cluster_queues.contains_key(&*lq.cluster_queue) => {
                e.summary.push(format!(
                    "LocalQueue {} points to ClusterQueue {}, which does not exist.",
                    wl.queue_name, lq.cluster_queue
                ));
            }
            Some(lq) => {
                e.cluster_queue = Some(lq.cluster_queue.to_string());
                let cq_stopped = self
                    .cluster_queues
                    .get(&*lq.cluster_queue)
                    .is_some_and(|cq| cq.stop_policy.is_stopped());
                if let Some(at) = wl.readiness.requeue_at {
                    let when = chrono::DateTime::from_timestamp_millis(at)
                        .map_or_else(|| at.to_string(), |t| t.to_rfc3339());
                    e.summary.push(format!(
                        "It backs off after an eviction (waitForPodsReady) and queues again at {when}."
                    ));
                } else if lq.stop_policy.is_stopped() {
                    e.summary.push(format!(
                        "LocalQueue {} is stopped: nothing of it is admitted until it is resumed (kubectl kueue resume localqueue {}).",
                        lq.name, lq.name
                    ));
                } else if cq_stopped {
                    e.summary.push(format!(
                        "ClusterQueue {} is stopped: nothing is admitted until it is resumed (kubectl kueue resume clusterqueue {}).",
                        lq.cluster_queue, lq.cluster_queue
                    ));
                } else {
                    e.summary.push("It is not in its ClusterQueue's queue yet.".into());
                }
            }
        }
        if let Some(m) = last.filter(|m| !m.is_empty()) {
            e.summary.push(format!("Last reason recorded: {m}."));
        }
    }

    /// Its place in the ClusterQueue's order, and who is ahead.
    fn position(
        &self,
        cq: &ClusterQueue,
        key: &std::sync::Arc<str>,
        extra: Option<QueueOrder>,
        e: &mut Explanation,
    ) {
        let mut orders: Vec<QueueOrder> = self
            .queues
            .get(&cq.name)
            .into_iter()
            .flat_map(|q| q.keys())
            .filter_map(|k| {
                let (k, r) = self.workloads.get_key_value(k)?;
                Some(QueueOrder::of(k, &r.wl))
            })
            .chain(extra)
            .collect();
        orders.sort();
        let Some(at) = orders.iter().position(|o| o.key == *key) else {
            return;
        };
        let ahead = orders[at.saturating_sub(AHEAD_SHOWN)..at]
            .iter()
            .filter_map(|o| self.workloads.get(&*o.key))
            .map(|r| Peer {
                namespace: r.wl.namespace.to_string(),
                name: r.wl.name.clone(),
                local_queue: r.wl.queue_name.to_string(),
                priority: r.wl.priority,
            })
            .collect();
        e.position = Some(Position {
            in_cluster_queue: at + 1,
            ahead,
        });
    }

    fn flavor_quota(
        &self,
        cq: &str,
        pod_set: &str,
        resource: &str,
        flavor: &str,
        requested: i64,
    ) -> FlavorQuota {
        let fr = FlavorResource::new(flavor, resource);
        let q = |v: i64| quantity::format(resource, v);
        FlavorQuota {
            pod_set: pod_set.to_string(),
            resource: resource.to_string(),
            flavor: flavor.to_string(),
            requested: q(requested),
            levels: self
                .quota
                .levels(cq, &fr)
                .into_iter()
                .map(|(name, quota, used)| Level {
                    name,
                    quota: q(quota),
                    used: q(used),
                    free: q((quota - used).max(0)),
                })
                .collect(),
        }
    }

    /// The sentence that says what the next cycle would do with it.
    fn verdict(
        &self,
        cq: &ClusterQueue,
        mode: AssignmentMode,
        message: &str,
        victims: &[Victim],
        position: &Option<Position>,
    ) -> String {
        let behind = position.as_ref().map_or(0, |p| p.in_cluster_queue - 1);
        let strict = cq.queueing_strategy == QueueingStrategy::StrictFIFO;
        match mode {
            AssignmentMode::Fit if behind > 0 && strict => format!(
                "It would fit now, but ClusterQueue {} is StrictFIFO and {behind} workload(s) are ahead of it: it waits until they are admitted.",
                cq.name
            ),
            AssignmentMode::Fit => "It fits now: the next admission cycle admits it.".into(),
            AssignmentMode::Preempt if !victims.is_empty() => format!(
                "It fits if {} workload(s) are preempted (below): the next admission cycle preempts them.",
                victims.len(),
            ),
            AssignmentMode::Preempt => format!(
                "It fits only by preempting, and no workload may be preempted for it under ClusterQueue {}'s preemption (withinClusterQueue: {}, reclaimWithinCohort: {}): it waits for quota to be released. {message}.",
                cq.name,
                policy(cq.preemption.within_cluster_queue),
                policy(cq.preemption.reclaim_within_cohort)
            ),
            AssignmentMode::NoFit => {
                format!("It does not fit, even by preempting: {message}.")
            }
        }
    }
}

fn flavors_of(
    admission: &crate::queueing::Admission,
) -> BTreeMap<String, BTreeMap<String, String>> {
    admission
        .pod_set_assignments
        .iter()
        .map(|p| (p.name.clone(), p.flavors.clone().into_iter().collect()))
        .collect()
}

fn describe_flavors(f: &BTreeMap<String, BTreeMap<String, String>>) -> String {
    let mut parts = Vec::new();
    for (ps, resources) in f {
        let r: Vec<String> = resources
            .iter()
            .map(|(res, fl)| format!("{res}: {fl}"))
            .collect();
        parts.push(format!("pod set {ps} ({})", r.join(", ")));
    }
    if parts.is_empty() {
        "no flavor".into()
    } else {
        parts.join("; ")
    }
}

/// The flavors a ClusterQueue offers for a resource.
fn offered(cq: &ClusterQueue, resource: &str) -> Vec<String> {
    cq.resource_groups
        .iter()
        .filter(|g| g.covered_resources.iter().any(|r| r == resource))
        .flat_map(|g| g.flavors.iter().map(|f| f.name.clone()))
        .collect()
}
