//! Writing the engine's decisions: the scheduling cycle, admissions and
//! evictions written to Workloads (the admission recorded before anything
//! starts), pending reasons, and their events.

use super::*;
use crate::controllers::fault;
use crate::jobs::execution;

impl Controller {
    pub(super) fn cycle(&mut self) {
        if !self.started {
            return;
        }
        self.requeue_drained();
        // Bounded: each round either admits, evicts or sets a head aside.
        for _ in 0..64 {
            // What waits for the admission lane now: a preemptor takes
            // those back before it evicts anything.
            self.engine.set_unsent(
                self.unsent
                    .iter()
                    .filter(|(_, u)| u.waiting())
                    .map(|(k, _)| k.clone()),
            );
            let started = Instant::now();
            let cycle = self.engine.schedule(now_ms());
            let took = started.elapsed().as_secs_f64();
            let admits = cycle
                .decisions
                .iter()
                .filter(|d| matches!(d, Decision::Admit { .. }))
                .count() as u64;
            // A cycle that looked at a pending Workload is an attempt.
            if cycle.progress || !cycle.decisions.is_empty() {
                self.metrics.admission_attempt(admits > 0, took);
            }
            let refused_before = self.devices.refusals();
            for d in cycle.decisions {
                self.decide(d);
            }
            for s in cycle.statuses {
                self.cq_status.insert(s.name.clone(), s);
                self.status_due = true;
            }
            // Every admission of the round withdrawn for want of devices:
            // another round would only try the same again.
            let refused = self.devices.refusals() - refused_before;
            if !cycle.progress || (admits > 0 && refused == admits) {
                break;
            }
        }
    }

    pub(super) fn decide(&mut self, d: Decision) {
        let mut preempting_cq = None;
        let (k, w) = match d {
            Decision::Admit {
                workload,
                admission,
            } => {
                if let Verdict::Wait(message) = self.devices.check(&workload, &admission) {
                    let reason = PendingReason::WaitingForQuota;
                    self.engine.set_aside_admission(&workload, reason, message);
                    self.status_due = true;
                    return;
                }
                debug!(%workload, "admission decided");
                (workload, Write::Admit(admission))
            }
            Decision::Evict {
                workload,
                reason,
                message,
                preempted_reason,
                preemptor,
            } => {
                // A victim whose admission has not been sent yet is not
                // evicted: the admission is withdrawn, so nobody ever sees
                // it admitted, and its quota comes back as soon as the
                // write task lets go (as a refused admission does).
                if preempted_reason.is_some() && self.withdraw_unsent(&workload) {
                    info!(
                        workload = %workload,
                        preemptor = preemptor.as_deref().unwrap_or(""),
                        "admission withdrawn unsent for a preemption"
                    );
                    self.status_due = true;
                    return;
                }
                // Kueue logs each preemption ("Preempted", V(3)).
                info!(
                    workload = %workload,
                    preemptor = preemptor.as_deref().unwrap_or(""),
                    admission_in_flight = self.unsent.contains_key(workload.as_str()),
                    reason = reason.as_str(),
                    preempted = preempted_reason.map_or("", |r| r.as_str()),
                    "evicting"
                );
                if preempted_reason.is_some() {
                    preempting_cq = preemptor.as_deref().and_then(|p| self.cluster_queue_of(p));
                }
                (
                    workload,
                    Write::Evict {
                        reason,
                        message,
                        preempted: preempted_reason,
                    },
                )
            }
            Decision::Replace {
                workload,
                admission,
            } => {
                info!(%workload, "failed node's pods placed again");
                (workload, Write::Replace(admission))
            }
            Decision::Pending {
                workload,
                reason,
                message,
            } => {
                debug!(%workload, ?reason, %message, "pending");
                (workload, Write::Pending { reason, message })
            }
        };
        let k = self.shared_key(&k);
        self.status_due = true;
        if let Some(cq) = preempting_cq {
            self.preempting.insert(k.clone(), cq);
        }
        if matches!(w, Write::Pending { .. }) {
            // A newer pending reason replaces one not yet written.
            match self.pending_due.get_mut(&k) {
                Some(due) => due.0 = w,
                None => {
                    let now = Instant::now();
                    self.pending_order.push_back((now, k.clone()));
                    self.pending_due.insert(k, (w, now));
                }
            }
            return;
        }
        self.push_write(k, w);
    }

    /// Queues a status write behind the Workload's write in flight, if any.
    pub(super) fn push_write(&mut self, k: Key, w: Write) {
        // An admission or eviction makes an unwritten pending reason moot.
        self.pending_due.remove(&k);
        let q = self.queued.entry(k.clone()).or_default();
        q.push_back(w);
        if !self.busy.contains(&k) {
            self.next_write(&k);
        }
    }

    /// Kueue's workload controller sets `Requeued=True` on a Workload a
    /// stopped queue drained once that queue runs again
    /// (`ClusterQueueRestarted`, `LocalQueueRestarted`), and on a
    /// deactivated one once it is active again (`Reactivated`).
    pub(super) fn requeue_drained(&mut self) {
        let keys: Vec<Key> = self.drained.iter().cloned().collect();
        for k in keys {
            let Some(m) = self.meta.get(&k) else {
                self.drained.remove(&k);
                continue;
            };
            let lq = self
                .engine
                .workload(&k)
                .and_then(|wl| self.engine.local_queue(&wl.namespace, &wl.queue_name));
            let w = match drained_by(&m.conditions) {
                Some(from @ DEACTIVATED) => {
                    self.engine
                        .workload(&k)
                        .filter(|wl| wl.active)
                        .map(|_| Write::Requeued {
                            from,
                            reason: "Reactivated",
                            message: "The workload was reactivated",
                        })
                }
                Some(from @ "ClusterQueueStopped") => lq
                    .and_then(|lq| self.engine.cluster_queue(&lq.cluster_queue))
                    .filter(|cq| !cq.stop_policy.is_stopped())
                    .map(|_| Write::Requeued {
                        from,
                        reason: "ClusterQueueRestarted",
                        message: "The ClusterQueue was restarted after being stopped",
                    }),
                Some(from) => {
                    lq.filter(|lq| !lq.stop_policy.is_stopped())
                        .map(|_| Write::Requeued {
                            from,
                            reason: "LocalQueueRestarted",
                            message: "The LocalQueue was restarted after being stopped",
                        })
                }
                None => None,
            };
            let Some(w) = w else { continue };
            // The watch brings it back if the write does not land.
            self.drained.remove(&k);
            let q = self.queued.entry(k.clone()).or_default();
            q.retain(|x| !matches!(x, Write::Requeued { .. }));
            q.push_back(w);
            if !self.busy.contains(&k) {
                self.next_write(&k);
            }
        }
    }

    /// Writes the pending reasons due, oldest first, as far as the pending
    /// lane has room: admissions never queue behind a backlog of them.
    pub(super) fn flush_pending(&mut self) {
        let mut room = self.pending_lane.available_permits();
        let now = Instant::now();
        // Each entry is looked at once at most: busy ones go to the back.
        let mut budget = self.pending_order.len();
        while room > 0 && budget > 0 {
            budget -= 1;
            let Some((since, k)) = self.pending_order.front().cloned() else {
                break;
            };
            if now.duration_since(since) < PENDING_DELAY {
                break;
            }
            self.pending_order.pop_front();
            // Superseded (admitted, evicted, gone) or already re-listed.
            if self.pending_due.get(&k).is_none_or(|(_, t)| *t != since) {
                continue;
            }
            if self.busy.contains(&k) {
                // Another write goes first; this one waits its turn again.
                self.pending_order.push_back((since, k));
                continue;
            }
            let Some((w, _)) = self.pending_due.remove(&k) else {
                continue;
            };
            if !self.meta.contains_key(&k) {
                continue;
            }
            self.queued.entry(k.clone()).or_default().push_back(w);
            self.next_write(&k);
            room -= 1;
        }
    }

    /// Withdraws `k`'s admission if its write is still waiting for room in
    /// the admission lane; false once it has been sent (or there is none).
    fn withdraw_unsent(&mut self, k: &str) -> bool {
        self.unsent.get(k).is_some_and(|u| u.withdraw())
    }

    /// Once a replacement slice's admission has landed, the slice it
    /// replaces is finished (Kueue's `replaceWorkloadSlice`, in its words).
    pub(super) fn finish_replaced(&mut self, key: &str) {
        let Some(wl) = self.engine.workload(key) else {
            return;
        };
        let Some(old) = wl
            .replaces
            .as_deref()
            .filter(|o| self.meta.contains_key(*o) && self.engine.same_job(key, o))
        else {
            return;
        };
        let message = format!(
            "Replaced to accommodate a workload (UID: {}, JobUID: {}) due to workload slice aggregation",
            wl.uid,
            wl.job_uid.as_deref().unwrap_or_default()
        );
        let k = self.shared_key(old);
        self.push_write(k, Write::Replaced { message });
    }

    /// The MultiKueue worker the slice an admission replaces runs on: the
    /// new slice keeps to it (Kueue's scheduler copies `clusterName` from
    /// the old slice before the admission).
    fn inherited_cluster(&self, key: &str, w: &Write) -> Option<String> {
        if !matches!(w, Write::Admit(_)) {
            return None;
        }
        let old = self.engine.workload(key)?.replaces.as_deref()?;
        if !self.engine.same_job(key, old) {
            return None;
        }
        self.meta.get(old)?.cluster_name.clone()
    }

    pub(super) fn next_write(&mut self, k: &str) {
        let Some(w) = self.queued.get_mut(k).and_then(VecDeque::pop_front) else {
            self.queued.remove(k);
            return;
        };
        let Some(mut meta) = self.meta.get(k).cloned() else {
            // Gone or finished: an admission decided for it holds nothing.
            if matches!(w, Write::Admit(_)) {
                self.engine.reject_admission(k);
            }
            return;
        };
        meta.held_by_checks = self.held_by_checks(&w);
        meta.inherited_cluster = self.inherited_cluster(k, &w);
        let k = self.shared_key(k);
        self.busy.insert(k.clone());
        let lane = match w {
            Write::Pending { .. } => self.pending_lane.clone(),
            Write::Admit(_) => self.admission_lane.clone(),
            Write::Evict { .. }
            | Write::Requeued { .. }
            | Write::Exceeded { .. }
            | Write::Replaced { .. }
            | Write::Replace(_) => self.eviction_lane.clone(),
        };
        let client = self.client.clone();
        let tx = self.tx.clone();
        let recorder = self.recorder.clone();
        let devices = match w {
            Write::Admit(_) => self.devices.take_annotation(&k),
            _ => None,
        };
        let view = self.engine.workload(&k).cloned();
        let fact = self.landing(&k, &w, &meta, view.as_ref());
        let metrics = self.metrics.clone();
        let tally = self.tally.clone();
        let newer = self.newer.clone();
        let unsent = matches!(w, Write::Admit(_)).then(|| {
            let u = Arc::new(Unsent::default());
            self.unsent.insert(k.clone(), u.clone());
            u
        });
        tokio::spawn(async move {
            let room = match &unsent {
                Some(u) => u.room(lane).await,
                None => Ok(lane.acquire_owned().await.ok()),
            };
            let Ok(_permit) = room else {
                // Withdrawn: nothing was written, the engine forgets it.
                let _ = tx.send(Input::Written {
                    key: k,
                    outcome: Outcome::AdmissionRefused,
                    written: None,
                    based_on: meta.resource_version,
                });
                return;
            };
            let based_on = meta.resource_version.clone();
            let (outcome, written) =
                write_workload(&client, &k, meta.clone(), &w, devices, view, &newer).await;
            let landed = written.is_some();
            let _ = tx.send(Input::Written {
                key: k.clone(),
                outcome,
                written: written.map(Box::new),
                based_on,
            });
            // After the engine has the outcome: the event never delays it.
            if landed {
                if matches!(w, Write::Admit(_)) {
                    // With `admission decided`, `workload seen` and the
                    // eviction log: when each victim was admitted against
                    // when its preemptor arrived (see BENCHMARKS.md).
                    debug!(workload = %k, "admission written");
                }
                if let Ok(mut t) = tally.lock() {
                    *t.entry(write_kind(&w, &meta.conditions)).or_default() += 1;
                }
                event(&recorder, &k, &meta, &w);
                if let Some(f) = fact {
                    f.record(&metrics, now_ms());
                }
            }
        });
    }
}

/// The admission write was withdrawn before it was sent.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Withdrawn;

/// An admission write waiting for room in the admission lane. Either the
/// write task claims it to send it, or the controller withdraws it (a
/// preemption chose its Workload as a victim) and wakes the task, which
/// then reports it refused without writing: exactly one of the two wins.
#[derive(Debug, Default)]
pub(super) struct Unsent {
    state: std::sync::atomic::AtomicU8,
    wake: tokio::sync::Notify,
}

impl Unsent {
    const WAITING: u8 = 0;
    const SENDING: u8 = 1;
    const WITHDRAWN: u8 = 2;

    fn flip(&self, to: u8) -> bool {
        use std::sync::atomic::Ordering;
        self.state
            .compare_exchange(Self::WAITING, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The task's side: waits for room in `lane`, then claims the write
    /// for sending; `Err` if it was withdrawn first.
    pub(super) async fn room(
        &self,
        lane: Arc<Semaphore>,
    ) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Withdrawn> {
        let permit = tokio::select! {
            p = lane.acquire_owned() => p.ok(),
            () = self.wake.notified() => None,
        };
        if self.flip(Self::SENDING) {
            Ok(permit)
        } else {
            Err(Withdrawn)
        }
    }

    /// Neither sent nor withdrawn yet.
    pub(super) fn waiting(&self) -> bool {
        self.state.load(std::sync::atomic::Ordering::Acquire) == Self::WAITING
    }

    /// The controller's claim: true if the write will not go out.
    pub(super) fn withdraw(&self) -> bool {
        let won = self.flip(Self::WITHDRAWN);
        if won {
            // Stored if the task is not waiting yet; it then returns at once.
            self.wake.notify_one();
        }
        won
    }
}

/// What took the Workload's quota and keeps it from queueing until it
/// ends (`Requeued=False` with reason `ClusterQueueStopped`,
/// `LocalQueueStopped` or, for a plain deactivation, `Deactivated`), if
/// anything did.
pub(super) fn drained_by(conds: &[Condition]) -> Option<&'static str> {
    let c = conds
        .iter()
        .find(|c| c.type_ == condition::REQUEUED && c.status == "False")?;
    ["ClusterQueueStopped", "LocalQueueStopped", DEACTIVATED]
        .into_iter()
        .find(|r| c.reason == *r)
}

/// `status.schedulingStats.evictions` after one more eviction for `reason`
/// and its underlying `cause` (Kueue's `workloadEvictionStateInc`; only a
/// deactivation for a `DeactivationTarget` reason has one).
pub(super) fn count_eviction(
    prev: &[api::WorkloadSchedulingStatsEviction],
    reason: &str,
    cause: &str,
) -> Vec<api::WorkloadSchedulingStatsEviction> {
    let mut out = prev.to_vec();
    match out
        .iter_mut()
        .find(|e| e.reason == reason && e.underlying_cause == cause)
    {
        Some(e) => e.count += 1,
        None => out.push(api::WorkloadSchedulingStatsEviction {
            reason: reason.to_string(),
            underlying_cause: cause.to_string(),
            count: 1,
        }),
    }
    out
}

/// The cause a deactivation is for: the reason and message of a true
/// `DeactivationTarget` condition (the maximum execution time exceeded,
/// the requeuing limit reached).
pub(super) fn deactivation_cause(conds: &[Condition]) -> Option<(String, String)> {
    conds
        .iter()
        .find(|c| c.type_ == condition::DEACTIVATION_TARGET && c.status == "True")
        .map(|c| (c.reason.clone(), c.message.clone()))
}

/// The `Finished` reason of a workload slice another one replaced.
pub(super) const SLICE_REPLACED: &str = "WorkloadSliceReplaced";

/// The `Requeued=False` reason a plain deactivation leaves (one for a
/// cause reads `DeactivatedDueTo<cause>`, and Kueue does not mark it
/// reactivated).
const DEACTIVATED: &str = "Deactivated";

/// The status a write leaves, computed from the Workload as last seen;
/// `None` when the write no longer applies (already admitted, finished…).
pub(super) fn render(
    w: &Write,
    conds: &[Condition],
    generation: Option<i64>,
    now: &Time,
) -> Option<Value> {
    let mut c = Conditions(conds.to_vec());
    let reserved = c.is_true(condition::QUOTA_RESERVED);
    if c.is_true(condition::FINISHED) {
        return None;
    }
    match w {
        Write::Admit(a) => {
            if reserved {
                return None;
            }
            let msg = format!("Quota reserved in ClusterQueue {}", a.cluster_queue);
            c.set(
                condition::QUOTA_RESERVED,
                true,
                "QuotaReserved",
                &msg,
                now,
                generation,
            );
            c.set(
                condition::ADMITTED,
                true,
                "Admitted",
                "The workload is admitted",
                now,
                generation,
            );
            for ty in [condition::EVICTED, condition::PREEMPTED] {
                if let Some(prev) = c.get(ty).filter(|p| p.status == "True").cloned() {
                    let m = format!("Previously: {}", prev.message);
                    c.set(ty, false, "QuotaReserved", &m, now, generation);
                }
            }
            // A Workload placed again starts with no failed node (Kueue's
            // scheduler clears the list on admission).
            Some(json!({
                "admission": translation::admission_json(a),
                "conditions": c.0,
                "unhealthyNodes": null,
            }))
        }
        Write::Evict {
            reason,
            message,
            preempted,
        } => {
            if !reserved || c.is_true(condition::EVICTED) {
                return None;
            }
            let deactivated = *reason == EvictionReason::Deactivated;
            let (ev_reason, ev_message) = match deactivation_cause(&c.0) {
                Some((cause, cause_message)) if deactivated => {
                    // Kueue's workload controller evicts for the cause and
                    // drops the target condition in the same write.
                    c.0.retain(|x| x.type_ != condition::DEACTIVATION_TARGET);
                    execution::deactivated_eviction(&cause, &cause_message)
                }
                _ => (reason.as_str().to_string(), message.clone()),
            };
            c.set(
                condition::EVICTED,
                true,
                &ev_reason,
                &ev_message,
                now,
                generation,
            );
            if let Some(p) = preempted {
                c.set(
                    condition::PREEMPTED,
                    true,
                    p.as_str(),
                    message,
                    now,
                    generation,
                );
            }
            // Kueue's eviction forgets the failed nodes of the placement
            // it ends, and the MultiKueue worker it ran on
            // (`resetClusterNomination`): it is dispatched afresh.
            let mut status = json!({
                "conditions": c.0,
                "unhealthyNodes": null,
                "clusterName": null,
                "nominatedClusterNames": null,
            });
            if deactivated {
                // A deactivated Workload's requeue state goes with it
                // (Kueue's workload controller clears it in the eviction).
                status["requeueState"] = Value::Null;
            }
            Some(status)
        }
        Write::Requeued {
            from,
            reason,
            message,
        } => {
            if drained_by(&c.0) != Some(*from) {
                return None;
            }
            c.set(condition::REQUEUED, true, reason, message, now, generation);
            Some(json!({"conditions": c.0}))
        }
        Write::Replace(a) => {
            // Only while it still holds the quota it was placed for.
            if !reserved || c.is_true(condition::EVICTED) {
                return None;
            }
            Some(json!({"admission": translation::admission_json(a), "unhealthyNodes": null}))
        }
        Write::Replaced { message } => {
            c.set(
                condition::FINISHED,
                true,
                SLICE_REPLACED,
                message,
                now,
                generation,
            );
            Some(json!({"conditions": c.0}))
        }
        Write::Exceeded { .. } => {
            if c.is_true(condition::DEACTIVATION_TARGET) || !c.is_true(condition::ADMITTED) {
                return None;
            }
            Some(execution::exceeded_status(c, generation, now))
        }
        Write::Pending { reason, message } => {
            if reserved {
                return None;
            }
            if !c.set(
                condition::QUOTA_RESERVED,
                false,
                reason.legacy_str(),
                message,
                now,
                generation,
            ) {
                return None;
            }
            Some(json!({"conditions": c.0}))
        }
    }
}

/// The outcome, and the Workload as a write that landed left it. `view`:
/// the engine's, to check the write as the Workload webhook would.
pub(super) async fn write_workload(
    client: &Client,
    key: &str,
    mut meta: Meta,
    w: &Write,
    devices: Option<String>,
    view: Option<crate::queueing::Workload>,
    newer: &Newer,
) -> (Outcome, Option<api::Workload>) {
    let (namespace, name) = split_key(key);
    let api = Api::<api::Workload>::namespaced(client.clone(), namespace);
    let refused = match w {
        Write::Admit(_) => Outcome::AdmissionRefused,
        Write::Replace(_) => Outcome::ReplacementRefused,
        _ => Outcome::Done,
    };
    // Based on the newest version the watch has shown, from the first
    // attempt on (one that came after a conflict saves reading it again).
    let newest = |meta: &mut Meta| match newer.take(key) {
        Some(wl) if wl.resource_version().as_ref() != Some(&meta.resource_version) => {
            meta.refresh(&wl);
            Some(wl)
        }
        _ => None,
    };
    let taken = |wl: &api::Workload| {
        matches!(w, Write::Admit(_)) && wl.status.as_ref().is_some_and(|s| s.admission.is_some())
    };
    if newest(&mut meta).is_some_and(|wl| taken(&wl)) {
        return (refused, None);
    }
    // The device allocation is recorded before the admission it belongs to.
    if let Some(value) = devices {
        match super::devices::record(&api, name, &meta.resource_version, value).await {
            Some(rv) => meta.resource_version = rv,
            None => return (refused, None),
        }
    }
    if let Write::Admit(_) = w {
        fault::reached(fault::Moment::AdmissionDecided, key);
    }
    for _attempt in 0..4 {
        let now = now_time();
        let Some(mut status) = render(w, &meta.conditions, meta.generation, &now) else {
            return (refused, None);
        };
        if meta.held_by_checks {
            super::check_feed::hold_for_checks(&mut status, &meta.conditions);
        }
        if let Some(cluster) = &meta.inherited_cluster {
            status["clusterName"] = json!(cluster);
        }
        if let (Write::Evict { .. }, false) = (w, meta.owned) {
            // No job: release in the same write.
            if let Some(c) = status
                .get("conditions")
                .and_then(|c| serde_json::from_value::<Vec<Condition>>(c.clone()).ok())
            {
                if let Some(released) = release(&c, meta.generation, &now, meta.accumulated) {
                    status = released;
                }
            }
        }
        if let Write::Evict { reason, .. } = w {
            let cause = match deactivation_cause(&meta.conditions) {
                Some((cause, _)) if *reason == EvictionReason::Deactivated => cause,
                _ => String::new(),
            };
            status["schedulingStats"] = json!({"evictions": count_eviction(
                &meta.evictions,
                reason.as_str(),
                &cause
            )});
        }
        // Not sent if the Workload webhook (which it skips) would refuse it.
        let before = super::vetting::known(namespace, name, view.as_ref(), &meta.conditions);
        if let Err(e) = super::vetting::merge_patch(&before, &json!({ "status": &status })) {
            warn!(error = %e, "Workload status write not sent");
            return (refused, None);
        }
        let patch = json!({
            "metadata": {"resourceVersion": meta.resource_version},
            "status": status,
        });
        match api
            .patch_status(name, &params(), &Patch::Merge(&patch))
            .await
        {
            Ok(written) => {
                if let Write::Admit(_) = w {
                    fault::reached(fault::Moment::AdmissionWritten, key);
                }
                let outcome = match w {
                    Write::Admit(_) => Outcome::Admitted,
                    _ => Outcome::Done,
                };
                return (outcome, Some(written));
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                debug!(workload = %key, write = write_kind(w, &meta.conditions), "conflict");
                // Changed since we looked: re-decide on the version the
                // watch has brought meanwhile, or read it again.
                if let Some(wl) = newest(&mut meta) {
                    if taken(&wl) {
                        return (refused, None);
                    }
                    continue;
                }
                match api.get_opt(name).await {
                    Ok(Some(fresh)) => {
                        meta.refresh(&fresh);
                        if taken(&fresh) {
                            return (refused, None);
                        }
                    }
                    Ok(None) => return (refused, None),
                    Err(e) => {
                        warn!(workload = %name, error = %e, "re-reading Workload");
                        return (refused, None);
                    }
                }
            }
            Err(kube::Error::Api(e)) if e.code == 404 => return (refused, None),
            Err(e) => {
                warn!(workload = %name, error = %e, "Workload status not written");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    (refused, None)
}

/// Kueue's `TruncateEventMessage`: at most 1024 bytes, cut with " ...".
pub(super) fn truncate_note(note: String) -> String {
    const LIMIT: usize = 1024;
    const SUFFIX: &str = " ...";
    if note.len() <= LIMIT {
        return note;
    }
    let mut cut = LIMIT - SUFFIX.len();
    while !note.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{SUFFIX}", &note[..cut])
}

/// The events Kueue v0.19.2 records for a landed write: `QuotaReserved`
/// and `Admitted` for an admission (the scheduler's), `Pending` (Warning,
/// the condition's reason and message) for a pending reason written,
/// `Preempted` and `EvictedDueTo<reason>` for an eviction.
pub(super) fn occurrences(key: &str, waited_s: f64, w: &Write) -> Vec<Occurrence> {
    let o = |reason: String, warning: bool, note: String| Occurrence {
        regarding: key.to_string(),
        reason,
        warning,
        note: truncate_note(note),
    };
    match w {
        Write::Admit(a) => vec![
            o(
                "QuotaReserved".into(),
                false,
                format!(
                    "Quota reserved in ClusterQueue {}, wait time since queued was {waited_s:.0}s",
                    a.cluster_queue
                ),
            ),
            o(
                "Admitted".into(),
                false,
                format!(
                    "Admitted by ClusterQueue {}, wait time since reservation was 0s",
                    a.cluster_queue
                ),
            ),
        ],
        Write::Evict {
            reason,
            message,
            preempted,
        } => {
            let mut out = Vec::new();
            if preempted.is_some() {
                out.push(o("Preempted".into(), false, message.clone()));
            }
            out.push(o(
                format!("EvictedDueTo{}", reason.as_str()),
                false,
                message.clone(),
            ));
            out
        }
        Write::Pending { reason, message } => {
            vec![o(reason.legacy_str().to_string(), true, message.clone())]
        }
        Write::Requeued { .. } | Write::Replace(_) => Vec::new(),
        Write::Replaced { message } => vec![o(SLICE_REPLACED.into(), false, message.clone())],
        Write::Exceeded { max_secs } => vec![o(
            execution::EXCEEDED_REASON.into(),
            true,
            execution::exceeded_note(*max_secs),
        )],
    }
}

/// Records the events of a landed write.
pub(super) fn event(events: &Events, key: &str, meta: &Meta, w: &Write) {
    let waited = (now_ms() - meta.created_ms).max(0) as f64 / 1000.0;
    let cause = match w {
        Write::Evict {
            reason: EvictionReason::Deactivated,
            ..
        } => deactivation_cause(&meta.conditions),
        _ => None,
    };
    for mut o in occurrences(key, waited, w) {
        // Held by admission checks: admitted (and told) later.
        if meta.held_by_checks && o.reason == "Admitted" {
            continue;
        }
        // Kueue's event for a deactivation with a cause:
        // `EvictedDueToDeactivatedDueTo<cause>`, with the eviction message.
        if let Some((c, m)) = cause
            .as_ref()
            .filter(|_| o.reason == "EvictedDueToDeactivated")
        {
            let (reason, message) = execution::deactivated_eviction(c, m);
            o.reason = format!("EvictedDueTo{reason}");
            o.note = truncate_note(message);
        }
        events.record(o);
    }
}

/// What a landed Workload status write was, for the tally: a pending
/// reason is told apart by what it changed of the `QuotaReserved`
/// condition it replaced.
pub(super) fn write_kind(w: &Write, before: &[Condition]) -> &'static str {
    match w {
        Write::Admit(_) => "admission",
        Write::Evict { .. } => "eviction",
        Write::Requeued { .. } => "requeued",
        Write::Exceeded { .. } => "execution time",
        Write::Replaced { .. } => "slice replaced",
        Write::Replace(_) => "node replaced",
        Write::Pending { reason, message } => {
            let prev = before
                .iter()
                .find(|c| c.type_ == condition::QUOTA_RESERVED && c.status == "False");
            match prev {
                None => "pending: first",
                Some(c) if c.reason != reason.legacy_str() && c.reason != reason.as_str() => {
                    "pending: reason"
                }
                Some(c) if digits_only_change(&c.message, message) => "pending: a number",
                Some(_) => "pending: message",
            }
        }
    }
}

/// Whether two messages differ only in their digits ("3 more needed" →
/// "5 more needed").
pub(super) fn digits_only_change(a: &str, b: &str) -> bool {
    let strip = |s: &str| {
        s.chars()
            .filter(|c| !c.is_ascii_digit())
            .collect::<String>()
    };
    a != b && strip(a) == strip(b)
}
