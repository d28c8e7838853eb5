//! Kueue's maximum execution time (`spec.maximumExecutionTimeSeconds`, set
//! from the job's `kueue.x-k8s.io/max-exec-time-seconds` label): the time a
//! Workload has been admitted, summed over its admissions
//! (`status.accumulatedPastExecutionTimeSeconds`), and what happens once it
//! runs out — the Workload is marked `DeactivationTarget`, deactivated, and
//! evicted as `DeactivatedDueToMaximumExecutionTimeExceeded`. Time is a
//! parameter (milliseconds since the Unix epoch).

/// `DeactivationTarget` reason and message (Kueue's
/// `reconcileMaxExecutionTime`).
pub const EXCEEDED_REASON: &str = "MaximumExecutionTimeExceeded";
pub const EXCEEDED_MESSAGE: &str = "exceeding the maximum execution time";

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{json, Value};

use crate::api::kueue::v1beta2::{condition, Conditions};

/// Milliseconds left of the maximum execution time of a Workload admitted
/// since `admitted_at`; zero or less once it is exceeded.
pub fn remaining_ms(max_secs: i32, accumulated_secs: i32, admitted_at: i64, now: i64) -> i64 {
    (i64::from(max_secs) - i64::from(accumulated_secs)) * 1000 - (now - admitted_at)
}

/// Where an admitted Workload stands with its maximum execution time.
#[derive(Debug, Clone, PartialEq)]
pub enum Clock {
    /// No maximum, not admitted, or already marked.
    Idle,
    /// This many milliseconds are left.
    Left(i64),
    /// It ran out (the maximum, for the Warning event): the Workload is to
    /// be marked as [`exceeded_status`] says.
    Expired { max_secs: i32 },
}

/// Kueue's `reconcileMaxExecutionTime`, for any Workload (its job
/// reconciler's and its workload controller's share): counted from the
/// `Admitted=True` condition's transition, less what earlier admissions
/// used.
pub fn clock(
    max_secs: Option<i32>,
    accumulated_secs: Option<i32>,
    conds: &Conditions,
    now: &Time,
) -> Clock {
    let (Some(max), Some(admitted)) = (
        max_secs,
        conds
            .get(condition::ADMITTED)
            .filter(|c| c.status == "True"),
    ) else {
        return Clock::Idle;
    };
    if conds.is_true(condition::DEACTIVATION_TARGET) {
        return Clock::Idle;
    }
    let left = remaining_ms(
        max,
        accumulated_secs.unwrap_or(0),
        admitted.last_transition_time.0.as_millisecond(),
        now.0.as_millisecond(),
    );
    if left > 0 {
        return Clock::Left(left);
    }
    Clock::Expired { max_secs: max }
}

/// The status that marks a Workload whose maximum execution time ran out:
/// `DeactivationTarget` (`MaximumExecutionTimeExceeded`) set on `conds`,
/// its accumulated time cleared (Kueue's `reconcileMaxExecutionTime`).
pub fn exceeded_status(mut conds: Conditions, generation: Option<i64>, now: &Time) -> Value {
    conds.set(
        condition::DEACTIVATION_TARGET,
        true,
        EXCEEDED_REASON,
        EXCEEDED_MESSAGE,
        now,
        generation,
    );
    json!({"conditions": conds.0, "accumulatedPastExecutionTimeSeconds": null})
}

/// The Warning event Kueue records on the Workload when it is exceeded.
pub fn exceeded_note(max_secs: i32) -> String {
    format!("The maximum execution time ({max_secs}s) exceeded")
}

/// The `Evicted` reason and message of a Workload deactivated for a cause
/// (`DeactivationTarget`'s reason and message), as Kueue's workload
/// controller and `evict.Evict` write them.
pub fn deactivated_eviction(cause: &str, cause_message: &str) -> (String, String) {
    (
        format!("DeactivatedDueTo{cause}"),
        format!("The workload is deactivated due to {cause_message}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    /// Kueue v0.19.2 pkg/controller/core/workload_controller_test.go,
    /// TestReconcile "admitted workload with max execution time" (120 s,
    /// admitted a minute ago: looked at again in a minute) and "... -
    /// expired" (60 s, admitted two minutes ago: DeactivationTarget with
    /// this reason and message, and the Warning event's note).
    #[test]
    fn the_time_left_counts_from_the_admission() {
        let now = 10 * MIN;
        assert_eq!(remaining_ms(120, 0, now - MIN, now), MIN);
        assert!(remaining_ms(60, 0, now - 2 * MIN, now) <= 0);
        assert_eq!(
            exceeded_note(60),
            "The maximum execution time (60s) exceeded"
        );
        assert_eq!(
            (EXCEEDED_REASON, EXCEEDED_MESSAGE),
            (
                "MaximumExecutionTimeExceeded",
                "exceeding the maximum execution time"
            )
        );
        // Time used by earlier admissions counts.
        assert_eq!(remaining_ms(120, 50, now - MIN, now), 10_000);
        assert!(remaining_ms(120, 60, now - MIN, now) <= 0);
    }

    /// Kueue v0.19.2 workload_controller.go (the deactivation of an
    /// inactive Workload with a DeactivationTarget) and evict.go
    /// (`ReasonWithCause`).
    #[test]
    fn a_deactivation_for_a_cause_names_it() {
        assert_eq!(
            deactivated_eviction(EXCEEDED_REASON, EXCEEDED_MESSAGE),
            (
                "DeactivatedDueToMaximumExecutionTimeExceeded".to_string(),
                "The workload is deactivated due to exceeding the maximum execution time"
                    .to_string()
            )
        );
    }
}
