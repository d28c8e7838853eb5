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
    let admitted_at = c
        .get(condition::ADMITTED)
        .filter(|a| a.status == "True")
        .map(|a| a.last_transition_time.0.as_millisecond());
    let ev = c
        .get(condition::EVICTED)
        .filter(|e| e.status == "True")?
        .clone();
    if !c.is_true(condition::QUOTA_RESERVED) {
        return None;
    }
    c.set(
        condition::QUOTA_RESERVED,
        false,
        "Pending",
        &ev.message,
        now,
        generation,
    );
    c.set(
        condition::ADMITTED,
        false,
        "NoReservation",
        "The workload has no reservation",
        now,
        generation,
    );
    let requeued = matches!(ev.reason.as_str(), "Preempted" | "NodeFailures");
    c.set(
        condition::REQUEUED,
        requeued,
        &ev.reason,
        &ev.message,
        now,
        generation,
    );
    let mut out = json!({"admission": null, "conditions": c.0});
    if let Some(at) = admitted_at {
        out["accumulatedPastExecutionTimeSeconds"] =
            json!(self::accumulated(accumulated, at, now.0.as_millisecond()));
    }
    Some(out)
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
