//! One pass of the admission-check half of Kueue's workload controller,
//! decided without a cluster: the Workload, the ClusterQueue it is admitted
//! to (else the one its LocalQueue points to) and the time in; the status
//! to write and the Event to record out. `controllers::check_states` reads
//! and executes it.
//!
//! In Kueue's order: the check states follow the queue's strategy first;
//! `Admitted` once the quota is reserved and every check is `Ready`; a
//! `Rejected` check marks the Workload `DeactivationTarget`; a `Retry`
//! evicts it (checks reset to `Pending`, a jobless Workload's quota given
//! back in the same write, a retry delay held in `requeueState`); a passed
//! delay is cleared so the Workload may queue again.

use std::{collections::BTreeSet, time::Duration};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde_json::{json, Value};

use super::admission_checks::{self as checks, Verdict};
use crate::{
    api::kueue::v1beta2::{self as api, condition, eviction_reason, Conditions},
    queueing::reservation::release,
};

/// An Event on the Workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

/// A pass's decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Nothing to do until the Workload or its queue changes.
    Wait,
    /// Look again after this long (a retry delay not yet passed).
    After(Duration),
    /// Write `status` (a merge patch of the Workload's status, guarded by
    /// its resourceVersion), then record `note`; the write brings the
    /// Workload back for the next pass.
    Write { status: Value, note: Option<Note> },
}

/// The flavors of a ClusterQueue, in order, once each.
fn flavors(cq: &api::ClusterQueue) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in cq
        .spec
        .resource_groups
        .iter()
        .flatten()
        .flat_map(|g| &g.flavors)
    {
        if !out.contains(&f.name) {
            out.push(f.name.clone());
        }
    }
    out
}

/// The pass: `cq` is the Workload's ClusterQueue as the stores have it
/// (`None`: not known yet).
pub fn step(wl: &api::Workload, cq: Option<&api::ClusterQueue>, now: &Time) -> Step {
    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    if conds.is_true(condition::FINISHED) || wl.metadata.deletion_timestamp.is_some() {
        return Step::Wait;
    }
    let Some(cq) = cq else {
        return Step::Wait;
    };
    let cq_name = cq.metadata.name.as_deref().unwrap_or_default();
    let flavors = flavors(cq);
    let rules = cq
        .spec
        .admission_checks_strategy
        .iter()
        .flat_map(|s| &s.admission_checks)
        .map(|r| (r.name.clone(), r.on_flavors.clone().unwrap_or_default()));
    let strategy = checks::strategy(rules, flavors.iter().map(String::as_str));
    let assigned: Option<BTreeSet<String>> = status.admission.as_ref().map(|a| {
        a.pod_set_assignments
            .iter()
            .flatten()
            .flat_map(|p| p.flavors.iter().flatten().map(|(_, f)| f.clone()))
            .collect()
    });
    let all: BTreeSet<String> = flavors.into_iter().collect();
    let required = checks::for_workload(&strategy, &all, assigned.as_ref());
    let states = status.admission_checks.clone().unwrap_or_default();
    let generation = wl.metadata.generation;
    let reserved = conds.is_true(condition::QUOTA_RESERVED) && status.admission.is_some();
    let admitted = conds.is_true(condition::ADMITTED);
    // Kueue's workload controller syncs the states first.
    if let Some(synced) = checks::sync(&states, &required, now) {
        if !synced.is_empty() {
            return Step::Write {
                status: json!({ "admissionChecks": synced }),
                note: None,
            };
        }
        // The queue dropped its checks: none left to wait for.
        let mut c = conds.clone();
        let admit = checks::admitted_condition(reserved, true, admitted);
        if let Some((true, reason, message)) = admit {
            c.set(condition::ADMITTED, true, reason, message, now, generation);
        }
        return Step::Write {
            status: json!({ "admissionChecks": null, "conditions": c.0 }),
            note: admit.map(|_| admitted_note(&conds.0, now, cq_name)),
        };
    }
    if states.is_empty() {
        // No checks here: the engine's admission is the whole story.
        return Step::Wait;
    }
    if !admitted {
        if let Some((true, reason, message)) =
            checks::admitted_condition(reserved, checks::all_ready(&states), admitted)
        {
            let mut c = conds.clone();
            c.set(condition::ADMITTED, true, reason, message, now, generation);
            return Step::Write {
                status: json!({ "conditions": c.0 }),
                note: Some(admitted_note(&conds.0, now, cq_name)),
            };
        }
    }
    if !reserved {
        return finish_check_backoff(wl, &conds, &states, now);
    }
    match checks::verdict(&states, conds.is_true(condition::EVICTED)) {
        Some(Verdict::Deactivate { .. }) if conds.is_true(condition::DEACTIVATION_TARGET) => {
            Step::Wait
        }
        Some(Verdict::Deactivate { message }) => {
            let mut c = conds.clone();
            let reason = eviction_reason::ADMISSION_CHECK;
            c.set(
                condition::DEACTIVATION_TARGET,
                true,
                reason,
                &message,
                now,
                generation,
            );
            Step::Write {
                status: json!({ "conditions": c.0 }),
                note: Some(Note {
                    warning: true,
                    reason: "AdmissionCheckRejected",
                    message: format!("Deactivated due to {message}"),
                }),
            }
        }
        Some(Verdict::Evict { message }) => Step::Write {
            status: evicted(wl, &conds, &states, &message, now),
            note: Some(Note {
                warning: false,
                reason: "EvictedDueToAdmissionCheck",
                message,
            }),
        },
        None => Step::Wait,
    }
}

/// The status of a Workload a check asked to retry: `Evicted`, its
/// eviction counted, its checks reset, a retry delay held.
fn evicted(
    wl: &api::Workload,
    conds: &Conditions,
    states: &[api::AdmissionCheckState],
    message: &str,
    now: &Time,
) -> Value {
    let status = wl.status.clone().unwrap_or_default();
    let mut c = conds.clone();
    let reason = eviction_reason::ADMISSION_CHECK;
    c.set(
        condition::EVICTED,
        true,
        reason,
        message,
        now,
        wl.metadata.generation,
    );
    let mut evictions = status
        .scheduling_stats
        .as_ref()
        .and_then(|s| s.evictions.clone())
        .unwrap_or_default();
    match evictions
        .iter_mut()
        .find(|e| e.reason == reason && e.underlying_cause.is_empty())
    {
        Some(e) => e.count += 1,
        None => evictions.push(api::WorkloadSchedulingStatsEviction {
            reason: reason.into(),
            underlying_cause: String::new(),
            count: 1,
        }),
    }
    let mut s = json!({"conditions": c.0});
    // No job to stop: the quota goes back in the same write, as the
    // queueing controller does for a jobless Workload.
    let owned = wl
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true));
    if !owned {
        let accumulated = status.accumulated_past_execution_time_seconds;
        if let Some(r) = release(&c.0, wl.metadata.generation, now, accumulated) {
            s = r;
        }
    }
    // A retry delay (`requeueAfterSeconds`) holds the Workload out of the
    // queue until then (Kueue's `NeedsRequeueAtUpdate`).
    let requeue = status.requeue_state.clone().unwrap_or_default();
    let current = requeue.requeue_at.as_ref().map(|t| t.0.as_millisecond());
    if let Some(at) = checks::requeue_at(states, current, now.0.as_millisecond()) {
        let at = k8s_openapi::jiff::Timestamp::from_millisecond(at)
            .map(Time)
            .unwrap_or_else(|_| now.clone());
        s["requeueState"] = json!({"count": requeue.count, "requeueAt": at});
    }
    s["admissionChecks"] = json!(checks::reset_on_eviction(states, now));
    s["schedulingStats"] = json!({"evictions": evictions});
    // The MultiKueue worker it was dispatched to is forgotten: it is
    // dispatched afresh (Kueue's `resetClusterNomination`).
    if status.cluster_name.is_some() || status.nominated_cluster_names.is_some() {
        s["clusterName"] = Value::Null;
        s["nominatedClusterNames"] = Value::Null;
    }
    s
}

/// Once a check's retry delay has passed, the Workload may queue again:
/// `status.requeueState.requeueAt` is cleared. The job reconciler does the
/// same for jobs; this covers Workloads it does not own (jobless, pods),
/// and leaves a waitForPodsReady backoff (`Requeued` False with reason
/// `PodsReadyTimeout`) to it.
fn finish_check_backoff(
    wl: &api::Workload,
    conds: &Conditions,
    states: &[api::AdmissionCheckState],
    now: &Time,
) -> Step {
    let Some(state) = wl.status.as_ref().and_then(|s| s.requeue_state.as_ref()) else {
        return Step::Wait;
    };
    let Some(at) = &state.requeue_at else {
        return Step::Wait;
    };
    let by_check = states.iter().any(|s| s.requeue_after_seconds.is_some());
    let pods_ready = conds
        .get(condition::REQUEUED)
        .is_some_and(|r| r.status == "False" && r.reason == "PodsReadyTimeout");
    if !by_check || pods_ready || wl.spec.active == Some(false) {
        return Step::Wait;
    }
    let left = at.0.as_millisecond() - now.0.as_millisecond();
    if left > 0 {
        return Step::After(Duration::from_millis(left.unsigned_abs()));
    }
    Step::Write {
        status: json!({"requeueState": {"count": state.count, "requeueAt": null}}),
        note: None,
    }
}

/// Kueue's `Admitted` event, with the wait since the quota was reserved.
fn admitted_note(conds: &[Condition], now: &Time, cq: &str) -> Note {
    let waited = conds
        .iter()
        .find(|c| c.type_ == condition::QUOTA_RESERVED && c.status == "True")
        .map(|c| {
            (now.0.as_millisecond() - c.last_transition_time.0.as_millisecond()).max(0) as f64
                / 1000.0
        })
        .unwrap_or(0.0);
    Note {
        warning: false,
        reason: "Admitted",
        message: format!(
            "Admitted by ClusterQueue {cq}, wait time since reservation was {waited:.0}s"
        ),
    }
}

#[cfg(test)]
mod tests;
