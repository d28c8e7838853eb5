//! A Workload's quota reservation given back: the status Kueue writes
//! when an evicted Workload releases its quota, and the execution time it
//! carries over. Used by the job steps, the admission-check step and the
//! controllers that release a jobless Workload themselves.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde_json::{json, Value};

use crate::api::kueue::v1beta2::{condition, Conditions};

/// An evicted Workload with no job to stop gives its quota back at once
/// (Kueue's workload controller does the same for jobless Workloads).
/// The admission's whole seconds are added to `accumulated`
/// (`status.accumulatedPastExecutionTimeSeconds`, Kueue's
/// `SyncAdmittedCondition`).
pub fn release(
    conds: &[Condition],
    generation: Option<i64>,
    now: &Time,
    accumulated: Option<i32>,
) -> Option<Value> {
    let mut c = Conditions(conds.to_vec());
    let ev = c
        .get(condition::EVICTED)
        .filter(|e| e.status == "True")?
        .clone();
    if !c.is_true(condition::QUOTA_RESERVED) {
        return None;
    }
    let (_, admitted_at) = end_reservation(&mut c, generation, now, "Pending", &ev.message);
    let requeued = matches!(ev.reason.as_str(), "Preempted" | "NodeFailures");
    c.set(
        condition::REQUEUED,
        requeued,
        &ev.reason,
        &ev.message,
        now,
        generation,
    );
    Some(unreserved(c, admitted_at, accumulated, now))
}

/// The `QuotaReserved=False` reason of a Workload on hold (a StatefulSet
/// scaled to zero): out of every queue until its job takes it off hold.
pub const ON_HOLD: &str = "OnHold";

/// Kueue's `IsOnHold`.
pub fn is_on_hold(conds: &[Condition]) -> bool {
    conds
        .iter()
        .any(|c| c.type_ == condition::QUOTA_RESERVED && c.status == "False" && c.reason == ON_HOLD)
}

/// Kueue's `UnsetQuotaReservationWithCondition`: `QuotaReserved=False` for
/// `reason` and `message`, the admission gone, `Admitted=False` once it was
/// true (its seconds added to `accumulated`). `None` when the condition
/// already says so and nothing is reserved or admitted.
pub fn unset(
    conds: &[Condition],
    generation: Option<i64>,
    now: &Time,
    accumulated: Option<i32>,
    reason: &str,
    message: &str,
) -> Option<Value> {
    let mut c = Conditions(conds.to_vec());
    let reserved = c.is_true(condition::QUOTA_RESERVED);
    let (changed, admitted_at) = end_reservation(&mut c, generation, now, reason, message);
    if !changed && !reserved && admitted_at.is_none() {
        return None;
    }
    Some(unreserved(c, admitted_at, accumulated, now))
}

/// `QuotaReserved=False` for `reason` and `message`, and `Admitted=False`
/// once it was true, in `c`: whether the reservation's condition changed,
/// and when the admission that ends began.
fn end_reservation(
    c: &mut Conditions,
    generation: Option<i64>,
    now: &Time,
    reason: &str,
    message: &str,
) -> (bool, Option<i64>) {
    let admitted_at = c
        .get(condition::ADMITTED)
        .filter(|a| a.status == "True")
        .map(|a| a.last_transition_time.0.as_millisecond());
    let changed = c.set(
        condition::QUOTA_RESERVED,
        false,
        reason,
        message,
        now,
        generation,
    );
    if admitted_at.is_some() {
        c.set(
            condition::ADMITTED,
            false,
            "NoReservation",
            "The workload has no reservation",
            now,
            generation,
        );
    }
    (changed, admitted_at)
}

/// The status of a Workload whose reservation ended: its conditions, no
/// admission, and the admission's seconds carried over.
fn unreserved(
    c: Conditions,
    admitted_at: Option<i64>,
    accumulated: Option<i32>,
    now: &Time,
) -> Value {
    let mut out = json!({"admission": null, "conditions": c.0});
    if let Some(at) = admitted_at {
        out["accumulatedPastExecutionTimeSeconds"] =
            json!(self::accumulated(accumulated, at, now.0.as_millisecond()));
    }
    out
}

/// `status.accumulatedPastExecutionTimeSeconds` once an admission that
/// began at `admitted_at` ends at `now` (Kueue's `SyncAdmittedCondition`:
/// whole seconds, truncated, added to what was there).
pub fn accumulated(prev: Option<i32>, admitted_at: i64, now: i64) -> i32 {
    let secs = i32::try_from((now - admitted_at).max(0) / 1000).unwrap_or(i32::MAX);
    prev.unwrap_or(0).saturating_add(secs)
}

#[cfg(test)]
mod tests {
    use super::accumulated;

    /// Kueue v0.19.2 pkg/workload/admissionchecks_test.go,
    /// TestSyncAdmittedCondition: losing the admission adds the whole
    /// seconds it lasted to what earlier admissions left.
    #[test]
    fn an_admission_that_ends_adds_its_seconds() {
        assert_eq!(accumulated(None, 0, 1_999), 1);
        assert_eq!(accumulated(Some(1), 0, 2_000), 3);
        // A clock that went backwards adds nothing.
        assert_eq!(accumulated(Some(4), 5_000, 1_000), 4);
    }
}
