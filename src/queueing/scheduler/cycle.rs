//! One admission cycle (`scheduler.schedule`): heads, snapshot,
//! nomination, ordering, admission on the shared snapshot, requeueing —
//! and the evictions the workload controller would issue (drain,
//! deactivation), which the cycle hands out first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::{
    Cycle, Decision, Engine, EvictionReason, Holding, PendingReason, PreemptedReason, Record,
    State, StatusInputs,
};
use crate::api::selector::{LabelSelector, NamespaceNameOnly};
use crate::queueing::{
    cluster_queue::{
        ClusterQueue, ClusterQueueStatus, PreemptionPolicy, QueueingStrategy, StopPolicy,
    },
    flavors::{Assignment, AssignmentMode},
    partial_admission::{self, TasView},
    preemption::{Holder, Holdings, Preemptor, Target},
    queues::{PendingQueue, QueueOrder},
    quota::{QuotaTree, Usage},
    workload::Workload,
};

impl Engine {
    /// Why a holding workload must be evicted now, if it must.
    fn eviction_due(&self, rec: &Record, h: &Holding) -> Option<(EvictionReason, &'static str)> {
        if !rec.wl.active {
            return Some((EvictionReason::Deactivated, "The workload is deactivated"));
        }
        if self
            .cluster_queues
            .get(&*h.cq)
            .is_some_and(|c| c.stop_policy == StopPolicy::HoldAndDrain)
        {
            return Some((
                EvictionReason::ClusterQueueStopped,
                "The ClusterQueue is stopped",
            ));
        }
        if self
            .local_queue(&rec.wl.namespace, &rec.wl.queue_name)
            .is_some_and(|l| l.stop_policy == StopPolicy::HoldAndDrain)
        {
            return Some((
                EvictionReason::LocalQueueStopped,
                "The LocalQueue is stopped",
            ));
        }
        None
    }

    fn issue_due_evictions(&mut self, out: &mut Vec<Decision>) {
        for key in std::mem::take(&mut self.drain) {
            let Some(rec) = self.workloads.get(&key) else {
                continue;
            };
            let State::Holding(h) = &rec.state else {
                continue;
            };
            if h.evicting {
                continue;
            }
            if let Some((reason, message)) = self.eviction_due(rec, h) {
                out.push(Decision::Evict {
                    workload: key.to_string(),
                    reason,
                    message: message.to_string(),
                    preempted_reason: None,
                    preemptor: None,
                });
                self.mark_evicting(&key);
            }
        }
    }

    pub(super) fn mark_evicting(&mut self, key: &str) {
        self.workloads.with_holding(key, |h| h.evicting = true);
    }

    fn namespace_selected(&self, cq: &ClusterQueue, namespace: &str) -> bool {
        let Some(selector) = &cq.namespace_selector else {
            return false; // nil selects no namespace
        };
        match self.namespaces.get(namespace) {
            Some(labels) => selector.matches(labels),
            // Not seen yet: its name label is all we know for sure.
            None => LabelSelector::matches(selector, &NamespaceNameOnly(namespace)),
        }
    }

    /// Runs one admission cycle at time `now` (ms since the epoch).
    pub fn schedule(&mut self, now: i64) -> Cycle {
        self.join_added();
        self.requeue_due(now);
        self.cycle_tas.clear();
        let mut cycle = Cycle::default();
        // Workloads updated since the last cycle: a failed node of theirs
        // is replaced first, so this cycle's admissions see where its pods
        // went (Kueue's second pass).
        let updated: Vec<Arc<str>> = self.drain.iter().cloned().collect();
        self.issue_due_evictions(&mut cycle.decisions);
        self.replace_failed_nodes(&updated, &mut cycle.decisions);

        // 1. One head per active ClusterQueue.
        self.refresh_inactive();
        let mut heads = Vec::with_capacity(self.cluster_queues.len());
        for (name, cq) in self.cluster_queues.iter() {
            if self
                .inactive
                .as_ref()
                .is_some_and(|(_, q)| q.contains(name))
            {
                continue;
            }
            let ranks = self.admission_fair_sharing_ranks(cq);
            let queue = self.queues.get_mut(name);
            if let Some(order) = queue.and_then(|q| match &ranks {
                Some(r) => q.pop_ranked(|o| r.get(&o.key).copied().unwrap_or(f64::INFINITY)),
                None => q.pop(),
            }) {
                heads.push((name.clone(), order));
            }
        }

        cycle.decisions.reserve(heads.len());
        // 2–3. Nominate on a snapshot.
        let mut snap = self.quota.clone();
        let mut entries: Vec<Entry> = heads
            .into_iter()
            .filter(|(_, order)| self.workloads.contains_key(&*order.key))
            .map(|(cq, order)| self.nominate(&mut snap, cq, order))
            .collect();

        let mut preempted: BTreeMap<String, Target> = BTreeMap::new();
        if self.fair_sharing_enabled() {
            // 4–5. Fair sharing: the tournament picks each next entry.
            self.process_fair(
                &mut entries,
                &mut snap,
                &mut preempted,
                now,
                &mut cycle.decisions,
            );
        } else {
            let mut fed: BTreeSet<String> = BTreeSet::new();
            // 4. Less borrowing, then higher priority, then older; no
            // victim ahead of the preemptor waiting for it.
            entries.sort_by(|a, b| {
                let key = |e: &Entry| {
                    let wl = &self.workloads[&*e.order.key].wl;
                    (e.borrowing(), std::cmp::Reverse(wl.priority), wl.created)
                };
                key(a).cmp(&key(b))
            });
            self.preemptors_before_their_victims(&mut entries);

            // 5. Admit in order on the shared snapshot. A queue taking its
            // nominal quota goes before the borrowers of its cohort: in a cycle
            // where one was admitted without borrowing and has more queued, the
            // cohort's borrowing admissions wait for the next cycle (the shell
            // runs them back to back): its next head may fit under nominal. Kueue
            // admits one head per queue per cycle and lets borrowers take the
            // rest of the room, then takes it back by preemption
            // (`reclaimWithinCohort`), evicting work for no gain.
            for entry in &mut entries {
                let borrows_to_fit = entry.borrowing() > 0
                    && entry
                        .assignment
                        .as_ref()
                        .is_some_and(|a| a.mode() == AssignmentMode::Fit);
                if borrows_to_fit
                    && self
                        .quota
                        .root_of(&entry.cq)
                        .is_some_and(|c| fed.contains(c))
                {
                    continue; // stays undecided: back in its queue, nothing written
                }
                self.process(entry, &mut snap, &mut preempted, now, &mut cycle.decisions);
                if matches!(entry.outcome, Outcome::Admitted)
                    && entry.borrowing() == 0
                    && self
                        .queues
                        .get(&entry.cq)
                        .is_some_and(PendingQueue::has_queued)
                {
                    fed.extend(self.quota.root_of(&entry.cq).map(str::to_string));
                }
            }
        }

        // 6. Requeue what was not admitted.
        for entry in entries {
            let cq = entry.cq.clone();
            cycle.progress |= self.requeue(entry);
            self.note_set_aside(&cq);
        }
        self.report_pending(&mut cycle.decisions);
        cycle.progress |= cycle
            .decisions
            .iter()
            .any(|d| matches!(d, Decision::Admit { .. } | Decision::Evict { .. }));
        cycle.statuses = self.changed_statuses();
        // Reservations hold for one cycle only: what runs between cycles
        // (explain, simulate) sees admitted workloads alone.
        self.cycle_tas.clear();
        cycle
    }

    fn nominate(&self, snap: &mut QuotaTree, cq_name: String, order: QueueOrder) -> Entry {
        let wl = &self.workloads[&*order.key].wl;
        self.nominate_workload(snap, cq_name, order, wl)
    }

    /// [`Self::nominate`] for a workload given, known to the engine or not
    /// (`simulate`).
    pub(super) fn nominate_workload(
        &self,
        snap: &mut QuotaTree,
        cq_name: String,
        order: QueueOrder,
        wl: &Workload,
    ) -> Entry {
        self.nominate_pinned(snap, cq_name, order, wl, None)
    }

    /// [`Self::nominate_workload`], on the flavors of `pin` only when given
    /// (Kueue's `NominationMapping`: a recomputed assignment keeps the
    /// flavors the workload was nominated with).
    fn nominate_pinned(
        &self,
        snap: &mut QuotaTree,
        cq_name: String,
        order: QueueOrder,
        wl: &Workload,
        pin: Option<&BTreeMap<String, String>>,
    ) -> Entry {
        let pinned_cq;
        let cq = match pin {
            Some(flavors) => {
                pinned_cq = pinned_to(&self.cluster_queues[&cq_name], flavors);
                &pinned_cq
            }
            None => &self.cluster_queues[&cq_name],
        };
        if !self.namespace_selected(cq, &wl.namespace) {
            return Entry {
                cq: cq_name,
                order,
                assignment: None,
                targets: Vec::new(),
                replaces: None,
                outcome: Outcome::Pending {
                    reason: PendingReason::NamespaceMismatch,
                    message: "workload namespace doesn't match ClusterQueue selector".into(),
                    requeue: Requeue::SetAside,
                },
            };
        }
        // A replacement slice is sized as if the slice it replaces were
        // gone, on that slice's flavors, and never preempts it (Kueue's
        // `ReplacedWorkloadSlice`: the old slice is a target that is
        // finished, not evicted, once the new one is admitted).
        let replaces = self.replaced_slice(wl, &cq_name);
        let pinned;
        let cq = match &replaces {
            Some(r) => {
                snap.remove(&cq_name, &r.usage);
                pinned = pinned_to(cq, &r.flavors);
                &pinned
            }
            None => cq,
        };
        let holdings = HoldingsView {
            engine: self,
            except: replaces.as_ref().map(|r| r.key.as_str()),
        };
        let preemptor = Preemptor {
            key: &order.key,
            cq,
            priority: wl.priority,
            created: wl.created,
        };
        // Full counts (less what is reclaimable already), or (partial
        // admission) the largest that fit.
        let sized = wl.after_reclaim();
        let placement = |a: &Assignment, view: TasView<'_>| {
            let placed = self.place_topology_in(&sized, a, cq, view)?;
            Ok(a.pod_sets
                .iter()
                .zip(placed)
                .filter(|(_, t)| t.is_some())
                .map(|(ps, _)| ps.name.clone())
                .collect())
        };
        let (assignment, targets) = partial_admission::initial_assignment(
            &sized,
            cq,
            &self.flavors,
            snap,
            &holdings,
            &preemptor,
            &placement,
        );
        if let Some(r) = &replaces {
            snap.add(&cq_name, &r.usage);
        }
        Entry {
            cq: cq_name,
            order,
            assignment: Some(assignment),
            targets,
            replaces,
            outcome: Outcome::Undecided,
        }
    }

    /// The admitted slice `wl` replaces, if it holds quota in `cq` (a
    /// slice of another queue or namespace, or one being evicted, is not
    /// replaced: the new slice then asks for all it needs).
    fn replaced_slice(&self, wl: &Workload, cq: &str) -> Option<Replaced> {
        let key = wl.replaces.as_deref()?;
        let rec = self.workloads.get(key)?;
        let State::Holding(h) = &rec.state else {
            return None;
        };
        if h.evicting || &*h.cq != cq || !super::one_job(wl, &rec.wl) {
            return None;
        }
        let flavors = h
            .admission
            .pod_set_assignments
            .iter()
            .flat_map(|psa| psa.flavors.iter())
            .map(|(r, f)| (r.clone(), f.clone()))
            .collect();
        Some(Replaced {
            key: key.to_string(),
            usage: h.usage.clone(),
            flavors,
        })
    }

    pub(super) fn process(
        &mut self,
        entry: &mut Entry,
        snap: &mut QuotaTree,
        preempted: &mut BTreeMap<String, Target>,
        now: i64,
        out: &mut Vec<Decision>,
    ) {
        if !self.still_fits_the_nodes(entry, snap, preempted) {
            self.recompute(entry, snap);
        }
        let Some(assignment) = &entry.assignment else {
            return;
        };
        let cq = &self.cluster_queues[&entry.cq];
        let pending = |reason, message, requeue| Outcome::Pending {
            reason,
            message,
            requeue,
        };
        let mode = assignment.mode();
        if mode == AssignmentMode::NoFit {
            entry.outcome = pending(
                assignment
                    .no_fit_reason
                    .unwrap_or(PendingReason::WaitingForQuota),
                assignment.message(),
                Requeue::SetAsideAlike,
            );
            return;
        }
        if mode == AssignmentMode::Preempt && entry.targets.is_empty() {
            // Nobody may be preempted yet. Unless the queue can always
            // reclaim its quota later (reclaimWithinCohort: Any), keep the
            // room it needs from the entries after it in this cycle, so that
            // lower-priority borrowers do not take it first.
            if cq.preemption.reclaim_within_cohort != PreemptionPolicy::Any {
                reserve(snap, &entry.cq, assignment);
                // Its pods' room on the nodes too, as if they were empty
                // (Kueue's `updateAssignmentForTAS` without targets).
                let wl = &self.workloads[&*entry.order.key].wl;
                if let Ok(placed) = self.place_topology_in(wl, assignment, cq, TasView::Empty) {
                    let usage = super::topology::placed_usage(wl, assignment, &placed);
                    self.reserve_tas(usage);
                }
            }
            entry.outcome = pending(
                PendingReason::WaitingForQuota,
                assignment.message(),
                Requeue::SetAsideAlike,
            );
            return;
        }
        if entry.targets.iter().any(|t| preempted.contains_key(&t.key)) {
            entry.outcome = pending(
                PendingReason::WaitingForQuota,
                "Workload has overlapping preemption targets with another workload".into(),
                Requeue::Immediately,
            );
            return;
        }
        let replaced = entry.replaces.as_ref().map(|r| Target {
            key: r.key.clone(),
            cluster_queue: entry.cq.clone(),
            usage: r.usage.clone(),
            reason: PreemptedReason::InClusterQueue,
        });
        if !fits_without(
            snap,
            &entry.cq,
            &assignment.usage,
            preempted.values().chain(&entry.targets).chain(&replaced),
        ) {
            entry.outcome = pending(
                PendingReason::WaitingForQuota,
                "Workload no longer fits after processing another workload".into(),
                Requeue::Immediately,
            );
            return;
        }
        // A workload that fits is placed on its TAS flavors' nodes now;
        // one that must preempt is placed once its victims are gone.
        let topology = if mode == AssignmentMode::Fit {
            let wl = &self.workloads[&*entry.order.key].wl;
            match self.place_topology(wl, assignment, cq) {
                Ok(t) => t,
                // An admission earlier in this cycle took the room.
                Err((pod_set, why)) => {
                    entry.outcome = pending(
                        PendingReason::WaitingForQuota,
                        format!("couldn't assign flavors to pod set {pod_set}: {why}"),
                        Requeue::SetAsideAlike,
                    );
                    return;
                }
            }
        } else {
            Vec::new()
        };
        // A preemptor keeps the room its pods take once its victims are
        // gone (Kueue adds its TAS usage to the snapshot).
        let preemptor_tas = if mode == AssignmentMode::Preempt {
            let wl = &self.workloads[&*entry.order.key].wl;
            let gone = victims(preempted, &entry.targets);
            let gone: Vec<&str> = gone.iter().map(String::as_str).collect();
            self.place_topology_in(wl, assignment, cq, TasView::Without(&gone))
                .ok()
                .map(|placed| super::topology::placed_usage(wl, assignment, &placed))
        } else {
            None
        };
        snap.add(&entry.cq, &assignment.usage);
        if let Some(r) = &entry.replaces {
            // Only what it adds to the slice it replaces is new.
            snap.remove(&entry.cq, &r.usage);
        }
        if mode == AssignmentMode::Preempt {
            let rec = &self.workloads[&*entry.order.key];
            let uid = if rec.wl.uid.is_empty() {
                "UNKNOWN"
            } else {
                &rec.wl.uid
            };
            let job_uid = rec
                .wl
                .job_uid
                .as_deref()
                .filter(|s| !s.is_empty())
                .unwrap_or("UNKNOWN");
            let preemptor_path = self.quota.path(&entry.cq);
            let mut evictions = Vec::new();
            for t in &entry.targets {
                preempted.insert(t.key.clone(), t.clone());
                if let Some(victim) = self.shared_key(&t.key) {
                    self.preempted_by.insert(victim, entry.order.key.clone());
                }
                let already = matches!(
                    self.workloads.get(&*t.key).map(|r| &r.state),
                    Some(State::Holding(h)) if h.evicting
                );
                if already {
                    continue;
                }
                let preemptee_path = self.quota.path(&t.cluster_queue);
                evictions.push((t.key.clone(), Decision::Evict {
                    workload: t.key.clone(),
                    reason: EvictionReason::Preempted,
                    message: format!(
                        "Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to {}; preemptor path: {preemptor_path}; preemptee path: {preemptee_path}",
                        t.reason.human()
                    ),
                    preempted_reason: Some(t.reason),
                    preemptor: Some(entry.order.key.to_string()),
                }));
            }
            entry.outcome = pending(
                PendingReason::WaitingForPreemptedWorkloads,
                format!(
                    "{}. Pending the preemption of {} workload(s)",
                    assignment.message(),
                    entry.targets.len()
                ),
                Requeue::Sticky,
            );
            for (key, eviction) in evictions {
                self.mark_evicting(&key);
                out.push(eviction);
            }
            if let Some(usage) = preemptor_tas {
                self.reserve_tas(usage);
            }
            return;
        }
        if self.admission_blocked() {
            // Kueue's scheduler waits here (`waitForPodsReadyIfNeeded`),
            // after any preemption: the head keeps its place and says why.
            entry.outcome = pending(
                PendingReason::WaitingForPodsReady,
                "waiting for all admitted workloads to be in PodsReady condition".into(),
                Requeue::Immediately,
            );
            return;
        }
        // Fit: admit.
        let mut admission = assignment.to_admission(&entry.cq);
        for (psa, t) in admission.pod_set_assignments.iter_mut().zip(topology) {
            psa.topology = t;
        }
        out.push(Decision::Admit {
            workload: entry.order.key.to_string(),
            admission: admission.clone(),
        });
        self.charge_admission(&entry.order.key, &assignment.usage);
        self.hold(&entry.order.key, admission, now, false);
        entry.outcome = Outcome::Admitted;
    }

    /// Kueue's `fits` check on the nodes: does the nominated assignment
    /// still fit once earlier entries of this cycle took their room, with
    /// the workloads being preempted (by them and for this one) gone?
    /// Only asked when the quota still fits (Kueue's `FitsCheckNoTAS`).
    fn still_fits_the_nodes(
        &self,
        entry: &Entry,
        snap: &mut QuotaTree,
        preempted: &BTreeMap<String, Target>,
    ) -> bool {
        let Some(a) = &entry.assignment else {
            return true;
        };
        let mode = a.mode();
        if mode == AssignmentMode::NoFit
            || (mode == AssignmentMode::Preempt && entry.targets.is_empty())
            || !fits_without(
                snap,
                &entry.cq,
                &a.usage,
                preempted.values().chain(&entry.targets),
            )
        {
            return true;
        }
        let (Some(rec), Some(cq)) = (
            self.workloads.get(&*entry.order.key),
            self.cluster_queues.get(&entry.cq),
        ) else {
            return true;
        };
        let gone = victims(preempted, &entry.targets);
        let gone: Vec<&str> = gone.iter().map(String::as_str).collect();
        self.place_topology_in(&rec.wl, a, cq, TasView::Without(&gone))
            .is_ok()
    }

    /// Computes the entry's assignment again on the flavors it was
    /// nominated with (`TASRecomputeAssignmentWithinSchedulingCycle`, on by
    /// default: the nodes it was nominated to were taken in this cycle).
    fn recompute(&self, entry: &mut Entry, snap: &mut QuotaTree) {
        let (Some(a), Some(rec)) = (&entry.assignment, self.workloads.get(&*entry.order.key))
        else {
            return;
        };
        let pin: BTreeMap<String, String> = a
            .pod_sets
            .iter()
            .flat_map(|ps| ps.flavors.iter())
            .map(|(r, c)| (r.clone(), c.flavor.clone()))
            .collect();
        let fresh = self.nominate_pinned(
            snap,
            entry.cq.clone(),
            entry.order.clone(),
            &rec.wl,
            Some(&pin),
        );
        entry.assignment = fresh.assignment;
        entry.targets = fresh.targets;
        if !matches!(fresh.outcome, Outcome::Undecided) {
            entry.outcome = fresh.outcome;
        }
    }

    /// Puts a non-admitted head back; returns whether its queue moved on.
    fn requeue(&mut self, entry: Entry) -> bool {
        let Entry {
            cq, order, outcome, ..
        } = entry;
        let key = order.key.clone();
        let strategy = self.cluster_queues.get(&cq).map(|c| c.queueing_strategy);
        let alike = !self.no_equivalence;
        let Some(q) = self.queues.get_mut(&cq) else {
            return false;
        };
        match outcome {
            Outcome::Admitted => {
                q.clear_preemptor(&key);
                false // counted by its Admit decision
            }
            Outcome::Undecided => {
                q.push(order);
                false
            }
            Outcome::Pending {
                reason,
                message,
                requeue,
            } => {
                let mut moved = false;
                // A preemptor stays sticky until it is admitted, leaves the
                // queue or another workload of the queue preempts (Kueue's
                // `preemptorWorkload`): a later skip or no-fit does not let
                // a higher-priority arrival overtake it and preempt again.
                match (strategy, requeue) {
                    (_, Requeue::SetAside) => {
                        q.set_aside(order.clone());
                        moved = true;
                    }
                    (Some(QueueingStrategy::BestEffortFIFO), Requeue::SetAsideAlike) => {
                        // Same shape hash: a (2^-64) collision only sets a
                        // workload aside until quota frees up again.
                        if alike {
                            q.set_aside_alike(order.shape);
                        }
                        q.set_aside(order.clone());
                        moved = true;
                    }
                    (strategy, Requeue::Sticky) => {
                        q.mark_preemptor(&key, strategy == Some(QueueingStrategy::BestEffortFIFO));
                        q.push(order.clone());
                    }
                    _ => q.push(order.clone()),
                }
                self.set_pending(&key, Some((reason, message)));
                moved
            }
        }
    }

    fn report_pending(&mut self, out: &mut Vec<Decision>) {
        for key in std::mem::take(&mut self.dirty) {
            let Some(mut rec) = self.workloads.get_mut(&key) else {
                continue;
            };
            if matches!(rec.state, State::Holding(_)) || rec.pending == rec.reported {
                continue;
            }
            if let Some((reason, message)) = &rec.pending {
                out.push(Decision::Pending {
                    workload: key.to_string(),
                    reason: *reason,
                    message: message.to_string(),
                });
            }
            rec.reported = rec.pending.clone();
        }
    }

    /// The statuses that differ from those last reported. A queue whose
    /// inputs are as when its status was last built is not built again:
    /// on a wide tree most queues do not change in a cycle.
    fn changed_statuses(&mut self) -> Vec<ClusterQueueStatus> {
        let mut inputs = StatusInputs::default();
        let mut built = Vec::new();
        for name in self.cluster_queues.keys() {
            self.status_inputs(name, &mut inputs);
            if self
                .reported
                .get(name)
                .is_some_and(|(was, _)| *was == inputs)
            {
                continue;
            }
            if let Some(status) = self.cluster_queue_status(name) {
                built.push((inputs.clone(), status));
            }
        }
        let mut changed = Vec::new();
        for (inputs, status) in built {
            match self.reported.get_mut(&status.name) {
                Some((was, same)) if *same == status => *was = inputs,
                _ => {
                    changed.push(status.clone());
                    self.reported.insert(status.name.clone(), (inputs, status));
                }
            }
        }
        changed
    }
}

/// The room a preemptor without candidates keeps for itself this cycle
/// (`resourcesToReserve`): up to the nominal quota, or up to the borrowing
/// limit when it needs to borrow.
fn reserve(snap: &mut QuotaTree, cq: &str, a: &Assignment) {
    for (fr, v) in &a.usage {
        let limits = snap.limits(cq, fr);
        let used = snap.usage(cq, fr);
        let keep = if a.borrowing > 0 {
            limits
                .borrowing_limit
                .map_or(*v, |bl| (*v).min(limits.nominal + bl - used))
        } else {
            (*v).min(limits.nominal - used)
        };
        snap.change(cq, fr, keep.max(0));
    }
}

/// Would `usage` fit in `cq` were the `gone` workloads already evicted?
fn fits_without<'a>(
    snap: &mut QuotaTree,
    cq: &str,
    usage: &Usage,
    gone: impl Iterator<Item = &'a Target> + Clone,
) -> bool {
    for t in gone.clone() {
        snap.remove(&t.cluster_queue, &t.usage);
    }
    let fits = snap.fits(cq, usage);
    for t in gone {
        snap.add(&t.cluster_queue, &t.usage);
    }
    fits
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Requeue {
    /// Back in the queue at once (it may fit next cycle).
    Immediately,
    /// Back at once and first: its preemptions are under way (BestEffortFIFO).
    Sticky,
    /// Set aside until quota frees up (BestEffortFIFO); StrictFIFO keeps it.
    SetAsideAlike,
    /// Set aside under both strategies (namespace not selected).
    SetAside,
}

#[derive(Debug)]
pub(super) enum Outcome {
    Undecided,
    Admitted,
    Pending {
        reason: PendingReason,
        message: String,
        requeue: Requeue,
    },
}

#[derive(Debug)]
pub(super) struct Entry {
    pub(super) cq: String,
    pub(super) order: QueueOrder,
    pub(super) assignment: Option<Assignment>,
    pub(super) targets: Vec<Target>,
    /// The admitted slice this entry replaces (see `replaced_slice`).
    replaces: Option<Replaced>,
    pub(super) outcome: Outcome,
}

/// An admitted workload slice a pending one replaces: its key, the quota
/// it holds and the flavor of each resource.
#[derive(Debug)]
struct Replaced {
    key: String,
    usage: Usage,
    flavors: BTreeMap<String, String>,
}

/// `cq` with each resource group offering only the flavors `flavors`
/// names for its resources (Kueue keeps a new slice on the flavors of
/// the slice it replaces).
fn pinned_to(cq: &ClusterQueue, flavors: &BTreeMap<String, String>) -> ClusterQueue {
    let mut cq = cq.clone();
    for g in &mut cq.resource_groups {
        let wanted: Vec<&String> = g
            .covered_resources
            .iter()
            .filter_map(|r| flavors.get(r))
            .collect();
        if !wanted.is_empty() {
            g.flavors.retain(|f| wanted.contains(&&f.name));
        }
    }
    cq
}

impl Engine {
    /// Whether the entry is its queue's preemptor waiting for its victims.
    fn is_preemptor(&self, e: &Entry) -> bool {
        self.queues
            .get(&e.cq)
            .is_some_and(|q| q.is_preemptor(&e.order.key))
    }

    /// Moves each preemptor still waiting for its victims ahead of the
    /// first of them in the cycle's order. Otherwise a victim of higher
    /// priority, back in its queue once stopped, fits first, is admitted,
    /// and is preempted again the cycle after, without end (Kueue#13662;
    /// Kueue v0.19.2 puts every preemptor first behind its alpha
    /// `PrioritizePreemptorWorkloads` gate, off by default). The rest of
    /// the order stays Kueue's.
    fn preemptors_before_their_victims(&self, entries: &mut Vec<Entry>) {
        // Each move takes a preemptor from behind to ahead: bounded.
        let mut moves = entries.len();
        let mut i = 0;
        while i < entries.len() {
            let ahead = self.preempted_by.get(&*entries[i].order.key).and_then(|p| {
                let j = entries.iter().position(|e| e.order.key == *p)?;
                (j > i && self.is_preemptor(&entries[j])).then_some(j)
            });
            match ahead {
                Some(j) if moves > 0 => {
                    moves -= 1;
                    let p = entries.remove(j);
                    entries.insert(i, p);
                }
                _ => i += 1,
            }
        }
    }
}

impl Entry {
    fn borrowing(&self) -> u8 {
        self.assignment.as_ref().map_or(0, |a| a.borrowing)
    }
}

/// The workloads preempted in this cycle and `targets`, by key.
fn victims(preempted: &BTreeMap<String, Target>, targets: &[Target]) -> Vec<String> {
    preempted
        .keys()
        .cloned()
        .chain(targets.iter().map(|t| t.key.clone()))
        .collect()
}

/// The holders preemption may choose from: all but `except` (the slice
/// a replacement replaces).
struct HoldingsView<'a> {
    engine: &'a Engine,
    except: Option<&'a str>,
}

impl Holdings for HoldingsView<'_> {
    fn holders<'s>(&'s self, cluster_queue: &str) -> Vec<Holder<'s>> {
        let e = self.engine;
        e.holders
            .get(cluster_queue)
            .into_iter()
            .flatten()
            .filter(|key| Some(&***key) != self.except)
            .filter_map(|key| {
                let rec = e.workloads.get(key)?;
                let State::Holding(h) = &rec.state else {
                    return None;
                };
                Some(Holder {
                    key,
                    cluster_queue: &h.cq,
                    priority: rec.wl.priority,
                    created: rec.wl.created,
                    uid: &rec.wl.uid,
                    reserved_at: h.reserved_at,
                    evicting: h.evicting,
                    written: h.confirmed || !e.unsent.contains(&**key),
                    usage: &h.usage,
                })
            })
            .collect()
    }
}
