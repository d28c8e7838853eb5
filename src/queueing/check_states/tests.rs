//! The admission-check pass, case by case.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use serde_json::{json, Value};

use super::*;

/// 2026-11-28T12:00:00Z.
const NOW: i64 = 1_795_867_200;

fn at(s: i64) -> Time {
    Time(Timestamp::from_second(s).unwrap())
}

fn now() -> Time {
    at(NOW)
}

fn stamp(s: i64) -> String {
    at(s).0.to_string()
}

/// A ClusterQueue on flavor `f` whose Workloads need the check `prov`
/// (`checks`: false gives it no checks).
fn cq(checks: bool) -> api::ClusterQueue {
    let mut cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"],
            "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}});
    if checks {
        cq["spec"]["admissionChecksStrategy"] = json!({"admissionChecks": [{"name": "prov"}]});
    }
    serde_json::from_value(cq).unwrap()
}

fn state(state: &str, since: i64) -> Value {
    json!({"name": "prov", "state": state, "lastTransitionTime": stamp(since), "message": ""})
}

fn cond(type_: &str, status: bool, reason: &str, since: i64) -> Value {
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
           "message": "", "lastTransitionTime": stamp(since)})
}

fn reserved_at(since: i64) -> Value {
    cond("QuotaReserved", true, "QuotaReserved", since)
}

/// A jobless Workload with `status`.
fn wl(status: Value) -> api::Workload {
    serde_json::from_value(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns", "generation": 1, "resourceVersion": "5"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "i",
                "resources": {"requests": {"cpu": "1"}}}]}}}]},
        "status": status}),
    )
    .unwrap()
}

fn admission() -> Value {
    json!({"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1,
        "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}}]})
}

/// Reserved on `cq` since NOW - 30 s, with the check in `check`.
fn reserved(check: &str) -> api::Workload {
    wl(
        json!({"conditions": [reserved_at(NOW - 30)], "admission": admission(),
              "admissionChecks": [state(check, NOW - 10)]}),
    )
}

fn written(step: Step) -> (Value, Option<Note>) {
    match step {
        Step::Write { status, note } => (status, note),
        other => panic!("expected a write, got {other:?}"),
    }
}

fn condition_of<'a>(status: &'a Value, type_: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == type_)
        .unwrap_or_else(|| panic!("no {type_} in {status}"))
}

#[test]
fn a_finished_or_going_workload_or_an_unknown_queue_is_left_alone() {
    let mut finished = reserved("Ready");
    finished.status.as_mut().unwrap().conditions = Some(vec![serde_json::from_value(cond(
        "Finished",
        true,
        "Succeeded",
        NOW,
    ))
    .unwrap()]);
    assert_eq!(step(&finished, Some(&cq(true)), &now()), Step::Wait);
    let mut going = reserved("Ready");
    going.metadata.deletion_timestamp = Some(now());
    assert_eq!(step(&going, Some(&cq(true)), &now()), Step::Wait);
    assert_eq!(step(&reserved("Ready"), None, &now()), Step::Wait);
}

#[test]
fn the_queues_checks_are_added_as_pending() {
    let (status, note) = written(step(&wl(json!({})), Some(&cq(true)), &now()));
    assert_eq!(status["admissionChecks"][0]["name"], "prov");
    assert_eq!(status["admissionChecks"][0]["state"], "Pending");
    assert_eq!(note, None);
}

#[test]
fn checks_the_queue_dropped_go_and_a_reserved_workload_is_admitted() {
    let (status, note) = written(step(&reserved("Pending"), Some(&cq(false)), &now()));
    assert_eq!(status["admissionChecks"], Value::Null);
    assert_eq!(condition_of(&status, "Admitted")["status"], "True");
    let note = note.unwrap();
    assert_eq!(note.reason, "Admitted");
    assert_eq!(
        note.message,
        "Admitted by ClusterQueue cq, wait time since reservation was 30s"
    );
}

#[test]
fn every_check_ready_admits_with_kueues_event() {
    let (status, note) = written(step(&reserved("Ready"), Some(&cq(true)), &now()));
    let admitted = condition_of(&status, "Admitted");
    assert_eq!(
        (&admitted["status"], &admitted["reason"]),
        (&json!("True"), &json!("Admitted"))
    );
    assert_eq!(
        status.get("admissionChecks"),
        None,
        "only the conditions are written"
    );
    assert!(!note.as_ref().unwrap().warning);
    assert_eq!(note.unwrap().reason, "Admitted");
}

#[test]
fn a_pending_check_holds_the_admission() {
    assert_eq!(
        step(&reserved("Pending"), Some(&cq(true)), &now()),
        Step::Wait
    );
}

#[test]
fn a_rejected_check_marks_the_workload_for_deactivation_once() {
    let (status, note) = written(step(&reserved("Rejected"), Some(&cq(true)), &now()));
    let target = condition_of(&status, "DeactivationTarget");
    assert_eq!(
        (&target["status"], &target["reason"]),
        (&json!("True"), &json!("AdmissionCheck"))
    );
    let note = note.unwrap();
    assert!(note.warning);
    assert_eq!(note.reason, "AdmissionCheckRejected");
    assert_eq!(
        note.message,
        r#"Deactivated due to AdmissionCheck in Rejected state: "prov""#
    );
    let mut marked = reserved("Rejected");
    marked.status.as_mut().unwrap().conditions = Some(
        serde_json::from_value(json!([
            reserved_at(NOW - 30),
            cond("DeactivationTarget", true, "AdmissionCheck", NOW - 1)
        ]))
        .unwrap(),
    );
    assert_eq!(step(&marked, Some(&cq(true)), &now()), Step::Wait);
}

#[test]
fn a_retry_evicts_resets_the_checks_and_gives_a_jobless_workloads_quota_back() {
    let (status, note) = written(step(&reserved("Retry"), Some(&cq(true)), &now()));
    assert_eq!(condition_of(&status, "Evicted")["status"], "True");
    assert_eq!(condition_of(&status, "QuotaReserved")["status"], "False");
    assert_eq!(status["admissionChecks"][0]["state"], "Pending");
    assert_eq!(status["admissionChecks"][0]["retryCount"], 1);
    assert_eq!(
        status["schedulingStats"]["evictions"],
        json!([{"reason": "AdmissionCheck", "underlyingCause": "", "count": 1}])
    );
    let note = note.unwrap();
    assert_eq!(
        (note.warning, note.reason, note.message.as_str()),
        (
            false,
            "EvictedDueToAdmissionCheck",
            r#"Evicted due to AdmissionCheck in Retry state: "prov""#
        )
    );
}

/// Kueue's `resetClusterNomination`: the MultiKueue worker a Workload ran
/// on and the nominated ones are forgotten by the eviction, so it is
/// dispatched afresh; a Workload without them gets no such field.
#[test]
fn a_retry_forgets_the_multikueue_worker() {
    let mut dispatched = reserved("Retry");
    let st = dispatched.status.as_mut().unwrap();
    st.cluster_name = Some("worker1".into());
    st.nominated_cluster_names = Some(vec!["worker1".into()]);
    let (status, _) = written(step(&dispatched, Some(&cq(true)), &now()));
    assert_eq!(status["clusterName"], Value::Null);
    assert_eq!(status["nominatedClusterNames"], Value::Null);
    assert!(status.as_object().unwrap().contains_key("clusterName"));
    let (status, _) = written(step(&reserved("Retry"), Some(&cq(true)), &now()));
    assert!(!status.as_object().unwrap().contains_key("clusterName"));
}

#[test]
fn a_retry_of_a_jobs_workload_leaves_the_quota_to_the_job_reconciler() {
    let mut owned = reserved("Retry");
    owned.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j-uid", "controller": true
    }))
    .unwrap()]);
    let (status, _) = written(step(&owned, Some(&cq(true)), &now()));
    assert_eq!(condition_of(&status, "Evicted")["status"], "True");
    assert_eq!(condition_of(&status, "QuotaReserved")["status"], "True");
}

#[test]
fn a_retry_delay_is_held_in_the_requeue_state_and_cleared_once_passed() {
    let mut retry = reserved("Retry");
    retry
        .status
        .as_mut()
        .unwrap()
        .admission_checks
        .as_mut()
        .unwrap()[0]
        .requeue_after_seconds = Some(60);
    let (status, _) = written(step(&retry, Some(&cq(true)), &now()));
    assert_eq!(status["requeueState"]["requeueAt"], json!(stamp(NOW + 50)));

    // Evicted and released: the delay is waited out, then cleared.
    let waiting = |requeue_at: i64, requeued: Value| {
        let mut s = state("Pending", NOW - 10);
        s["requeueAfterSeconds"] = json!(60);
        wl(
            json!({"conditions": [cond("QuotaReserved", false, "Pending", NOW - 10), requeued],
                  "admissionChecks": [s],
                  "requeueState": {"count": 1, "requeueAt": stamp(requeue_at)}}),
        )
    };
    let by_check = || cond("Requeued", true, "AdmissionCheck", NOW - 10);
    assert_eq!(
        step(&waiting(NOW + 50, by_check()), Some(&cq(true)), &now()),
        Step::After(Duration::from_secs(50))
    );
    let (status, note) = written(step(&waiting(NOW - 1, by_check()), Some(&cq(true)), &now()));
    assert_eq!(
        status,
        json!({"requeueState": {"count": 1, "requeueAt": null}})
    );
    assert_eq!(note, None);
    // A waitForPodsReady backoff is the job reconciler's.
    let pods_ready = cond("Requeued", false, "PodsReadyTimeout", NOW - 10);
    assert_eq!(
        step(&waiting(NOW - 1, pods_ready), Some(&cq(true)), &now()),
        Step::Wait
    );
}
