//! Admission checks as Kueue v0.19.2 runs them: which checks a Workload of a
//! ClusterQueue needs (`spec.admissionChecksStrategy`, per flavor), the
//! per-check states kept in `status.admissionChecks`, when a Workload with
//! reserved quota counts as admitted, and what a `Retry` or `Rejected`
//! state does to it. Plain data in and out; time is a parameter.
//!
//! Upstream: `pkg/util/admissioncheck` (`NewAdmissionChecks`),
//! `pkg/workload/workload.go` (`AdmissionChecksForWorkload`),
//! `pkg/workload/admissionchecks.go` (`SyncAdmittedCondition`,
//! `HasAllChecksReady`), `pkg/controller/core/workload_controller.go`
//! (`syncAdmissionCheckConditions`, `reconcileCheckBasedEviction`,
//! `buildAdmissionChecksMessage`), `pkg/workload/evict` (`resetChecksOnEviction`)
//! and `pkg/cache/scheduler/clusterqueue.go` (`inactiveReason`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::kueue::v1beta2::{check_state, AdmissionCheckState};

/// The checks a ClusterQueue asks for, each with the flavors it applies
/// to (Kueue's `NewAdmissionChecks`: a rule without `onFlavors` applies to
/// every flavor of the queue).
pub type Strategy = BTreeMap<String, BTreeSet<String>>;

/// `spec.admissionChecksStrategy.admissionChecks` as `(name, onFlavors)`,
/// with the queue's flavors.
pub fn strategy<'a>(
    rules: impl IntoIterator<Item = (String, Vec<String>)>,
    cq_flavors: impl IntoIterator<Item = &'a str> + Clone,
) -> Strategy {
    rules
        .into_iter()
        .map(|(name, on)| {
            let flavors = if on.is_empty() {
                cq_flavors.clone().into_iter().map(str::to_string).collect()
            } else {
                on.into_iter().collect()
            };
            (name, flavors)
        })
        .collect()
}

/// The checks a Workload needs (Kueue's `AdmissionChecksForWorkload`): with
/// an admission, those whose flavors meet the flavors it was assigned;
/// without one, only those that apply to every flavor of the queue.
pub fn for_workload(
    strategy: &Strategy,
    cq_flavors: &BTreeSet<String>,
    assigned: Option<&BTreeSet<String>>,
) -> BTreeSet<String> {
    strategy
        .iter()
        .filter(|(_, on)| match assigned {
            Some(a) => !a.is_disjoint(on),
            None => on.is_superset(cq_flavors),
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// The AdmissionChecks as a ClusterQueue sees them: its controller and
/// whether its `Active` condition is true.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckInfo {
    pub controller: String,
    pub active: bool,
}

/// The checks of `strategy` that do not exist, and those that are not
/// active, each sorted: a ClusterQueue with either admits nothing.
pub fn unusable(
    strategy: &Strategy,
    known: &BTreeMap<String, CheckInfo>,
) -> (Vec<String>, Vec<String>) {
    let mut missing = Vec::new();
    let mut inactive = Vec::new();
    for name in strategy.keys() {
        match known.get(name) {
            None => missing.push(name.clone()),
            Some(c) if !c.active => inactive.push(name.clone()),
            Some(_) => {}
        }
    }
    (missing, inactive)
}

/// Kueue's `inactiveReason` parts for the checks: `(reason, message part)`
/// in its order, after the stop and missing-flavor parts.
pub fn inactive_parts(missing: &[String], inactive: &[String]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if !missing.is_empty() {
        out.push((
            "AdmissionCheckNotFound",
            format!(
                "references missing AdmissionCheck(s): {}",
                missing.join(",")
            ),
        ));
    }
    if !inactive.is_empty() {
        out.push((
            "AdmissionCheckInactive",
            format!(
                "references inactive AdmissionCheck(s): {}",
                inactive.join(",")
            ),
        ));
    }
    out
}

/// `status.admissionChecks` after Kueue's `syncAdmissionCheckConditions`:
/// a `Pending` state added for each required check that has none, states
/// of checks no longer required dropped, sorted by name. `None` when
/// nothing changes.
pub fn sync(
    states: &[AdmissionCheckState],
    required: &BTreeSet<String>,
    now: &Time,
) -> Option<Vec<AdmissionCheckState>> {
    if required.is_empty() {
        return (!states.is_empty()).then(Vec::new);
    }
    let mut out: Vec<AdmissionCheckState> = states
        .iter()
        .filter(|s| required.contains(&s.name))
        .cloned()
        .collect();
    let mut changed = out.len() != states.len();
    for name in required {
        if !out.iter().any(|s| &s.name == name) {
            out.push(pending(name, now));
            changed = true;
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    changed.then_some(out)
}

fn pending(name: &str, now: &Time) -> AdmissionCheckState {
    AdmissionCheckState {
        name: name.to_string(),
        state: check_state::PENDING.into(),
        last_transition_time: now.clone(),
        message: String::new(),
        requeue_after_seconds: None,
        retry_count: None,
        pod_set_updates: None,
    }
}

/// Kueue's `HasAllChecksReady` (true for no checks).
pub fn all_ready(states: &[AdmissionCheckState]) -> bool {
    states.iter().all(|s| s.state == check_state::READY)
}

/// Every required check has a state (Kueue's `HasAllRequiredChecks`).
pub fn all_present(states: &[AdmissionCheckState], required: &BTreeSet<String>) -> bool {
    required.iter().all(|r| states.iter().any(|s| &s.name == r))
}

/// The `Admitted` condition to write, if it changes (Kueue's
/// `SyncAdmittedCondition` with its default gates): `(status, reason,
/// message)`.
pub fn admitted_condition(
    reserved: bool,
    all_ready: bool,
    admitted: bool,
) -> Option<(bool, &'static str, &'static str)> {
    if admitted == (reserved && all_ready) {
        return None;
    }
    Some(match (reserved, all_ready) {
        (true, true) => (true, "Admitted", "The workload is admitted"),
        (false, false) => (
            false,
            "NoReservationUnsatisfiedChecks",
            "The workload has no reservation and not all checks ready",
        ),
        (false, true) => (false, "NoReservation", "The workload has no reservation"),
        (true, false) => (
            false,
            "UnsatisfiedChecks",
            "The workload has not all checks ready",
        ),
    })
}

/// What failed checks do to a Workload holding quota (Kueue's
/// `reconcileCheckBasedEviction`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A check is `Rejected`: the Workload is marked `DeactivationTarget`
    /// with reason `AdmissionCheck` and this message (then deactivated and
    /// evicted as `DeactivatedDueToAdmissionCheck`); the Warning event
    /// `AdmissionCheckRejected` says `Deactivated due to <message>`.
    Deactivate { message: String },
    /// A check is `Retry` (none rejected): evicted with reason
    /// `AdmissionCheck` and this message; the quota goes back and the
    /// Workload queues again.
    Evict { message: String },
}

/// `None` while no check failed, or once the Workload is already evicted.
pub fn verdict(states: &[AdmissionCheckState], evicted: bool) -> Option<Verdict> {
    if evicted {
        return None;
    }
    let rejected = in_state(states, check_state::REJECTED);
    if !rejected.is_empty() {
        return Some(Verdict::Deactivate {
            message: message(&rejected, check_state::REJECTED),
        });
    }
    let retry = in_state(states, check_state::RETRY);
    if !retry.is_empty() {
        return Some(Verdict::Evict {
            message: format!("Evicted due to {}", message(&retry, check_state::RETRY)),
        });
    }
    None
}

fn in_state<'a>(states: &'a [AdmissionCheckState], state: &str) -> Vec<&'a AdmissionCheckState> {
    states.iter().filter(|s| s.state == state).collect()
}

/// Kueue's `buildAdmissionChecksMessage`: `AdmissionCheck(s) in <state>
/// state: "a" (its message); "b"`, by name.
pub fn message(checks: &[&AdmissionCheckState], state: &str) -> String {
    let mut checks = checks.to_vec();
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    let parts: Vec<String> = checks
        .iter()
        .map(|c| {
            if c.message.is_empty() {
                format!("{:?}", c.name)
            } else {
                format!("{:?} ({})", c.name, c.message)
            }
        })
        .collect();
    let noun = if checks.len() > 1 {
        "AdmissionChecks"
    } else {
        "AdmissionCheck"
    };
    format!("{noun} in {state} state: {}", parts.join("; "))
}

/// The states after an eviction (Kueue's `resetChecksOnEviction`): every
/// check not `Pending` goes back to `Pending`, saying what it was; a
/// `Retry` counts one more retry.
pub fn reset_on_eviction(states: &[AdmissionCheckState], now: &Time) -> Vec<AdmissionCheckState> {
    states
        .iter()
        .map(|s| {
            if s.state == check_state::PENDING {
                return s.clone();
            }
            let retry_count =
                (s.state == check_state::RETRY).then(|| s.retry_count.unwrap_or(0) + 1);
            AdmissionCheckState {
                name: s.name.clone(),
                state: check_state::PENDING.into(),
                last_transition_time: now.clone(),
                message: format!("Reset to Pending after eviction. Previously: {}", s.state),
                requeue_after_seconds: s.requeue_after_seconds,
                retry_count,
                pod_set_updates: None,
            }
        })
        .collect()
}

/// Kueue's `NeedsRequeueAtUpdate` (with `GetMaxRetryTime`): the latest
/// `lastTransitionTime + requeueAfterSeconds` of the checks in `Retry`
/// (ms), when it is in the future and later than the Workload's
/// `status.requeueState.requeueAt`. The Workload then waits until then
/// before it queues again.
pub fn requeue_at(states: &[AdmissionCheckState], current: Option<i64>, now: i64) -> Option<i64> {
    let max = states
        .iter()
        .filter(|s| s.state == check_state::RETRY)
        .filter_map(|s| {
            let after = s.requeue_after_seconds?;
            Some(s.last_transition_time.0.as_millisecond() + i64::from(after) * 1000)
        })
        .max()?;
    (max > now && current.is_none_or(|c| c < max)).then_some(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
    }

    fn state(name: &str, st: &str, message: &str) -> AdmissionCheckState {
        AdmissionCheckState {
            name: name.into(),
            state: st.into(),
            last_transition_time: at(1),
            message: message.into(),
            requeue_after_seconds: None,
            retry_count: None,
            pod_set_updates: None,
        }
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    /// Kueue v0.19.2 pkg/util/admissioncheck and pkg/workload/workload_test.go
    /// TestAdmissionChecksForWorkload: without an admission only the checks
    /// on every flavor of the queue; with one, those on an assigned flavor.
    #[test]
    fn the_checks_a_workload_needs_follow_its_flavors() {
        let s = strategy(
            [
                ("all".to_string(), vec![]),
                ("on-a".to_string(), vec!["a".to_string()]),
                ("on-b".to_string(), vec!["b".to_string()]),
            ],
            ["a", "b"],
        );
        assert_eq!(s["all"], set(&["a", "b"]));
        let flavors = set(&["a", "b"]);
        assert_eq!(for_workload(&s, &flavors, None), set(&["all"]));
        assert_eq!(
            for_workload(&s, &flavors, Some(&set(&["a"]))),
            set(&["all", "on-a"])
        );
        assert_eq!(
            for_workload(&s, &flavors, Some(&set(&["a", "b"]))),
            set(&["all", "on-a", "on-b"])
        );
        assert!(for_workload(&Strategy::new(), &flavors, Some(&set(&["a"]))).is_empty());
    }

    /// Kueue v0.19.2 pkg/controller/core/workload_controller_test.go
    /// TestSyncCheckStates: missing checks added as Pending, unknown ones
    /// dropped, sorted; nothing when in step; all cleared without checks.
    #[test]
    fn states_are_synced_to_the_required_checks() {
        let got = sync(&[], &set(&["b", "a"]), &at(5)).unwrap();
        let names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(got
            .iter()
            .all(|s| s.state == "Pending" && s.last_transition_time == at(5)));
        assert_eq!(sync(&got, &set(&["a", "b"]), &at(6)), None);
        let ready = vec![state("a", "Ready", ""), state("gone", "Pending", "")];
        let got = sync(&ready, &set(&["a"]), &at(6)).unwrap();
        assert_eq!(got, vec![state("a", "Ready", "")]);
        assert_eq!(sync(&ready, &BTreeSet::new(), &at(6)), Some(vec![]));
        assert_eq!(sync(&[], &BTreeSet::new(), &at(6)), None);
    }

    /// Kueue v0.19.2 pkg/workload/admissionchecks_test.go
    /// TestSyncAdmittedCondition (default feature gates).
    #[test]
    fn admitted_only_with_a_reservation_and_every_check_ready() {
        assert_eq!(
            admitted_condition(true, true, false),
            Some((true, "Admitted", "The workload is admitted"))
        );
        assert_eq!(admitted_condition(true, false, false), None);
        assert_eq!(admitted_condition(false, false, false), None);
        assert_eq!(admitted_condition(true, true, true), None);
        assert_eq!(
            admitted_condition(true, false, true),
            Some((
                false,
                "UnsatisfiedChecks",
                "The workload has not all checks ready"
            ))
        );
        assert_eq!(
            admitted_condition(false, false, true),
            Some((
                false,
                "NoReservationUnsatisfiedChecks",
                "The workload has no reservation and not all checks ready"
            ))
        );
        assert_eq!(
            admitted_condition(false, true, true),
            Some((false, "NoReservation", "The workload has no reservation"))
        );
        assert!(all_ready(&[]));
        assert!(!all_ready(&[
            state("a", "Ready", ""),
            state("b", "Pending", "")
        ]));
        assert!(all_present(&[state("a", "Ready", "")], &set(&["a"])));
        assert!(!all_present(&[state("a", "Ready", "")], &set(&["a", "b"])));
    }

    /// Kueue v0.19.2 pkg/controller/core/workload_controller_eviction_test.go
    /// TestReconcileEviction (a Rejected check: DeactivationTarget with
    /// `AdmissionCheck in Rejected state: "check" (quota exceeded)`) and
    /// `buildAdmissionChecksMessage`: Rejected wins over Retry; names in
    /// order, quoted, with their messages.
    #[test]
    fn failed_checks_deactivate_or_evict_with_kueues_words() {
        let states = vec![
            state("check-b", "Retry", "not now"),
            state("check-a", "Retry", ""),
            state("check-c", "Ready", ""),
        ];
        assert_eq!(
            verdict(&states, false),
            Some(Verdict::Evict {
                message: r#"Evicted due to AdmissionChecks in Retry state: "check-a"; "check-b" (not now)"#
                    .into()
            })
        );
        assert_eq!(verdict(&states, true), None);
        let mut rejected = states.clone();
        rejected.push(state("check-d", "Rejected", "too big"));
        assert_eq!(
            verdict(&rejected, false),
            Some(Verdict::Deactivate {
                message: r#"AdmissionCheck in Rejected state: "check-d" (too big)"#.into()
            })
        );
        assert_eq!(verdict(&[state("a", "Pending", "")], false), None);
    }

    /// Kueue v0.19.2 pkg/controller/core/workload_controller_eviction_test.go
    /// TestReconcileEviction (`resetChecksOnEviction`: "Reset to Pending
    /// after eviction. Previously: Retry", one more retry counted).
    #[test]
    fn an_eviction_resets_the_checks_to_pending() {
        let mut retry = state("r", "Retry", "later");
        retry.requeue_after_seconds = Some(60);
        retry.retry_count = Some(1);
        let got = reset_on_eviction(
            &[
                state("p", "Pending", "waiting"),
                state("ok", "Ready", ""),
                retry,
            ],
            &at(9),
        );
        assert_eq!(got[0], state("p", "Pending", "waiting"));
        assert_eq!(
            (
                got[1].state.as_str(),
                got[1].message.as_str(),
                got[1].retry_count
            ),
            (
                "Pending",
                "Reset to Pending after eviction. Previously: Ready",
                None
            )
        );
        assert_eq!(
            (
                got[2].message.as_str(),
                got[2].retry_count,
                got[2].requeue_after_seconds,
                &got[2].last_transition_time
            ),
            (
                "Reset to Pending after eviction. Previously: Retry",
                Some(2),
                Some(60),
                &at(9)
            )
        );
    }

    /// Kueue v0.19.2 pkg/workload/admissionchecks_test.go
    /// TestGetMaxRetryTime (the latest retry time of the checks in Retry)
    /// and `NeedsRequeueAtUpdate` (only when in the future and later than
    /// the current requeueAt; no upstream unit test).
    #[test]
    fn a_retry_delay_becomes_the_requeue_time() {
        let mut a = state("a", "Retry", "");
        a.requeue_after_seconds = Some(10);
        let mut b = state("b", "Retry", "");
        b.requeue_after_seconds = Some(30);
        let mut ready = state("c", "Ready", "");
        ready.requeue_after_seconds = Some(100);
        let states = [a, b, ready, state("d", "Retry", "")];
        assert_eq!(requeue_at(&states, None, 2_000), Some(31_000));
        assert_eq!(requeue_at(&states, Some(20_000), 2_000), Some(31_000));
        assert_eq!(requeue_at(&states, Some(31_000), 2_000), None);
        assert_eq!(requeue_at(&states, None, 31_000), None);
        assert_eq!(requeue_at(&[state("a", "Retry", "")], None, 0), None);
    }

    /// Kueue v0.19.2 pkg/cache/scheduler/clusterqueue_test.go
    /// TestClusterQueueUpdateWithAdmissionCheck: missing and inactive
    /// checks make the queue inactive, with these reasons and messages.
    #[test]
    fn missing_or_inactive_checks_are_named() {
        let s = strategy(
            ["check1", "check2", "check3"].map(|n| (n.to_string(), vec![])),
            ["f"],
        );
        let known: BTreeMap<String, CheckInfo> = [("check1", true), ("check3", false)]
            .into_iter()
            .map(|(n, active)| {
                (
                    n.to_string(),
                    CheckInfo {
                        controller: "c".into(),
                        active,
                    },
                )
            })
            .collect();
        let (missing, inactive) = unusable(&s, &known);
        assert_eq!(
            (missing.clone(), inactive.clone()),
            (vec!["check2".to_string()], vec!["check3".to_string()])
        );
        assert_eq!(
            inactive_parts(&missing, &inactive),
            vec![
                (
                    "AdmissionCheckNotFound",
                    "references missing AdmissionCheck(s): check2".to_string()
                ),
                (
                    "AdmissionCheckInactive",
                    "references inactive AdmissionCheck(s): check3".to_string()
                ),
            ]
        );
    }
}
