//! A job naming a prebuilt Workload (`kueue.x-k8s.io/prebuilt-workload-name`):
//! the Workload is made by someone else (a MultiKueue manager, the user),
//! waited for, taken and checked against the job, never created. Cases
//! from Kueue v0.19.2 `pkg/controller/jobs/job/job_controller_test.go`
//! (`TestReconciler`), by name; a case that Kueue decides in one reconcile
//! is here the passes batchgate makes for it, one write at a time.

use super::*;

const PREBUILT: &str = "kueue.x-k8s.io/prebuilt-workload-name";

/// `job()` naming the prebuilt Workload `name` by label.
fn naming(name: &str) -> Value {
    let mut j = job();
    j["metadata"]["labels"][PREBUILT] = json!(name);
    j
}

/// A Workload called `prebuilt-workload` for `job`'s pod sets as a user or
/// a MultiKueue manager makes it: no owner, no finalizer, no status.
fn prebuilt(job: &Value) -> api::Workload {
    let mut wl = workload_of(job, json!(null));
    wl.metadata.name = Some("prebuilt-workload".into());
    wl.metadata.owner_references = None;
    wl.metadata.labels = None;
    wl.metadata.finalizers = None;
    wl.status = None;
    wl
}

/// `wl` as it is once `job` took it.
fn taken(mut wl: api::Workload) -> api::Workload {
    wl.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "name": "sample", "uid": UID,
        "controller": true, "blockOwnerDeletion": true}))
    .unwrap()]);
    wl
}

#[test]
fn the_prebuilt_name_is_the_workloads_and_the_annotation_wins() {
    let w = World::new("Job");
    let s = subject(&w.policy, &w.set, &naming("by-label")).unwrap();
    assert_eq!((s.workload.as_str(), s.prebuilt), ("by-label", true));
    let mut j = naming("by-label");
    j["metadata"]["annotations"] = json!({PREBUILT: "by-annotation"});
    assert_eq!(
        subject(&w.policy, &w.set, &j).unwrap().workload,
        "by-annotation"
    );
    let plain = subject(&w.policy, &w.set, &job()).unwrap();
    assert!(!plain.prebuilt);
    // An elastic job naming one has that one Workload, not slices.
    j["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = json!("true");
    assert_eq!(subject(&w.policy, &w.set, &j).unwrap().slice, None);
}

/// "when the prebuilt workload is missing, no new one is created, the job
/// is suspended and prebuilt workload not found error is returned".
#[test]
fn when_the_prebuilt_workload_is_missing_no_new_one_is_created_and_the_job_is_suspended() {
    let w = World::new("Job");
    let s = w.step(&running(naming("missing-workload")), None);
    let (ops, event) = job_patch(&s);
    assert!(suspends(ops));
    assert_eq!(event, Some(&Note::normal("Stopped", "missing workload")));
    // Suspended, it waits for the Workload without creating one.
    let s = w.step(&naming("missing-workload"), None);
    assert_eq!(s, Step::wait(Vec::new()));
}

/// "when the prebuilt workload exists its owner info is updated": the job
/// becomes its controller and labels it with its UID, conditioned on the
/// version read; then, not admitted, the running job is stopped.
#[test]
fn when_the_prebuilt_workload_exists_its_owner_info_is_updated() {
    let w = World::new("Job");
    let j = running(naming("prebuilt-workload"));
    let wl = prebuilt(&j);
    let s = w.step(&j, Some(&wl));
    assert_eq!(
        s.writes,
        [Write::AdoptWorkload(json!({"metadata": {
            "resourceVersion": "7",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "sample",
                "uid": UID, "controller": true, "blockOwnerDeletion": true}],
            "labels": {"kueue.x-k8s.io/job-uid": UID},
        }}))]
    );
    let s = w.step(&j, Some(&taken(wl)));
    let (ops, event) = job_patch(&s);
    assert!(suspends(ops));
    assert_eq!(
        event,
        Some(&Note::normal("Stopped", "Not admitted by cluster queue"))
    );
}

/// Owners already on the Workload (not controllers) are kept beside the job.
#[test]
fn taking_a_prebuilt_workload_keeps_its_other_owners() {
    let w = World::new("Job");
    let j = naming("prebuilt-workload");
    let mut wl = prebuilt(&j);
    wl.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-uid"}))
    .unwrap()]);
    let s = w.step(&j, Some(&wl));
    let [Write::AdoptWorkload(patch)] = s.writes.as_slice() else {
        panic!("expected an adoption, got {:?}", s.writes)
    };
    let refs = patch["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs.len(), 2);
    assert_eq!(refs[0]["uid"], "cm-uid");
    assert_eq!(refs[1]["uid"], UID);
}

/// "when the prebuilt workload is owned by another object": nothing of the
/// Workload is touched; the job is stopped as if it were missing.
#[test]
fn when_the_prebuilt_workload_is_owned_by_another_object() {
    let w = World::new("Job");
    let j = running(naming("prebuilt-workload"));
    let mut wl = prebuilt(&j);
    wl.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "name": "other-job", "uid": "other-uid",
        "controller": true}))
    .unwrap()]);
    let s = w.step(&j, Some(&wl));
    assert!(
        s.writes
            .iter()
            .all(|w| matches!(w, Write::PatchJob { .. } | Write::JobEvent(_))),
        "{:?}",
        s.writes
    );
    let Write::PatchJob { ops, event } = &s.writes[0] else {
        panic!("expected the job stopped first, got {:?}", s.writes)
    };
    assert!(suspends(ops));
    assert_eq!(
        event.as_ref(),
        Some(&Note::normal("Stopped", "missing workload"))
    );
    // Suspended, it only says why it waits.
    let s = w.step(&naming("prebuilt-workload"), Some(&wl));
    assert!(matches!(s.writes.as_slice(), [Write::JobEvent(n)] if n.warning));
}

/// "when the prebuilt workload is not equivalent to the job": finished as
/// `OutOfSync` with Kueue's message, and the running job stopped.
#[test]
fn when_the_prebuilt_workload_is_not_equivalent_to_the_job() {
    let w = World::new("Job");
    let j = running(naming("prebuilt-workload"));
    let mut wl = taken(prebuilt(&j));
    wl.spec.pod_sets.as_mut().unwrap()[0].count = 1;
    let s = w.step(&j, Some(&wl));
    let finished = condition(status_of(&s), "Finished");
    assert_eq!(finished["reason"], "OutOfSync");
    assert_eq!(
        finished["message"],
        "The prebuilt workload is out of sync with its user job"
    );
    let Some(Write::PatchJob { ops, event }) = s.writes.get(1) else {
        panic!("expected the job stopped, got {:?}", s.writes)
    };
    assert!(suspends(ops));
    assert_eq!(
        event.as_ref(),
        Some(&Note::normal("Stopped", "missing workload"))
    );
}

/// A prebuilt Workload that matches is the job's like any other: admitted,
/// the job starts.
#[test]
fn a_taken_prebuilt_workload_that_matches_starts_its_job_once_admitted() {
    let w = World::new("Job");
    let j = naming("prebuilt-workload");
    let mut wl = taken(prebuilt(&j));
    wl.status = serde_json::from_value(admitted()).unwrap();
    let s = w.step(&j, Some(&wl));
    let (ops, event) = job_patch(&s);
    assert!(ops
        .iter()
        .any(|o| o.path == "/spec/suspend" && o.value == json!(false)));
    assert_eq!(event.unwrap().reason, "Started");
}

/// A started job's templates carry its admission: that is no difference,
/// and an admitted prebuilt Workload is not declared out of sync for it.
#[test]
fn a_started_jobs_admission_is_not_a_difference() {
    let w = World::new("Job");
    let j = naming("prebuilt-workload");
    let mut wl = taken(prebuilt(&j));
    wl.status = serde_json::from_value(admitted()).unwrap();
    let mut started = running(j);
    started["spec"]["template"]["spec"]["tolerations"] =
        json!([{"key": "flavor", "operator": "Exists"}]);
    started["spec"]["template"]["spec"]["nodeSelector"] = json!({"pool": "a"});
    let s = w.step(&started, Some(&wl));
    assert!(
        s.writes
            .iter()
            .all(|w| !matches!(w, Write::WorkloadStatus(_))),
        "{:?}",
        s.writes
    );
}

/// A job naming a prebuilt Workload is not reported by the backstop as a
/// queued job that lost its Workload: the Workload is someone else's to make.
#[test]
fn the_backstop_does_not_report_a_job_waiting_for_its_prebuilt_workload() {
    let w = World::new("Job");
    let mut j = running(naming("missing-workload"));
    j["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    let owners = std::collections::HashSet::new();
    let later = 1_767_225_600_000 + 3_600_000;
    assert!(!crate::jobs::resync::needs_workload(
        &w.policy, &w.set, &j, &owners, later, 30_000
    ));
    let mut plain = running(job());
    plain["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert!(crate::jobs::resync::needs_workload(
        &w.policy, &w.set, &plain, &owners, later, 30_000
    ));
}
