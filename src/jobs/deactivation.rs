//! Kueue's workload controller for a Workload no job owns (one created
//! directly): a `DeactivationTarget` makes it inactive (`spec.active:
//! false`, which the engine then evicts for the target's reason), and the
//! maximum execution time marks it a target once it runs out. A job's
//! Workload gets the same from its job's step. Time is a parameter.

use super::execution::{self, Clock};
use crate::api::kueue::v1beta2::{condition, Conditions};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// What a jobless Workload needs now.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Nothing, now or later.
    Idle,
    /// Nothing yet; look again at this time (ms since the epoch).
    At(i64),
    /// `spec.active: false`.
    Deactivate,
    /// Its maximum execution time ran out: a `DeactivationTarget` (see
    /// [`execution::exceeded_status`]), and Kueue's Warning event for
    /// `max_secs`.
    Exceeded { max_secs: i32 },
}

/// The step of a jobless Workload: `active` is `spec.active`, `max_secs`
/// `spec.maximumExecutionTimeSeconds`, `accumulated`
/// `status.accumulatedPastExecutionTimeSeconds`.
pub fn step(
    active: bool,
    max_secs: Option<i32>,
    accumulated: Option<i32>,
    conds: &[Condition],
    now: &Time,
) -> Step {
    if !active {
        return Step::Idle;
    }
    let c = Conditions(conds.to_vec());
    if c.is_true(condition::FINISHED) {
        return Step::Idle;
    }
    if c.is_true(condition::DEACTIVATION_TARGET) {
        return Step::Deactivate;
    }
    match execution::clock(max_secs, accumulated, &c, now) {
        Clock::Idle => Step::Idle,
        Clock::Left(ms) => Step::At(now.0.as_millisecond() + ms),
        Clock::Expired { max_secs } => Step::Exceeded { max_secs },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_millisecond(ms).unwrap())
    }

    fn admitted(since: i64) -> Vec<Condition> {
        let mut c = Conditions(Vec::new());
        c.set(
            condition::QUOTA_RESERVED,
            true,
            "QuotaReserved",
            "",
            &at(since),
            None,
        );
        c.set(condition::ADMITTED, true, "Admitted", "", &at(since), None);
        c.0
    }

    /// Kueue v0.19.2 test/integration/singlecluster/controller/core/
    /// workload_controller_test.go ("the workload has a maximum execution
    /// time set": "should deactivate the workload when the time expires"),
    /// for a Workload made without a job: admitted with 2 s, looked at
    /// again when they are up, then marked `DeactivationTarget`
    /// (`MaximumExecutionTimeExceeded`), then made inactive.
    #[test]
    fn a_jobless_workload_runs_out_of_time_and_is_deactivated() {
        let conds = admitted(1_000);
        assert_eq!(
            step(true, Some(2), None, &conds, &at(1_500)),
            Step::At(3_000)
        );
        assert_eq!(
            step(true, Some(2), Some(0), &conds, &at(3_000)),
            Step::Exceeded { max_secs: 2 }
        );
        let status = execution::exceeded_status(Conditions(conds.clone()), Some(1), &at(3_000));
        assert!(status["accumulatedPastExecutionTimeSeconds"].is_null());
        let marked: Vec<Condition> = serde_json::from_value(status["conditions"].clone()).unwrap();
        let dt = Conditions(marked.clone())
            .get(condition::DEACTIVATION_TARGET)
            .cloned()
            .unwrap();
        assert_eq!(
            (dt.status.as_str(), dt.reason.as_str(), dt.message.as_str()),
            (
                "True",
                "MaximumExecutionTimeExceeded",
                "exceeding the maximum execution time"
            )
        );
        assert_eq!(
            step(true, Some(2), None, &marked, &at(3_100)),
            Step::Deactivate
        );
        // Inactive, without a maximum, or not admitted: nothing.
        assert_eq!(step(false, Some(2), None, &marked, &at(3_100)), Step::Idle);
        assert_eq!(step(true, None, None, &conds, &at(9_000)), Step::Idle);
        assert_eq!(step(true, Some(2), None, &[], &at(9_000)), Step::Idle);
    }
}
