//! The job reconciler's steps, case by case (each a rule of
//! `decide`), and its invariants by property.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::jobs::{policy::PolicySet, readiness::Settings as Readiness};
use crate::vocabulary::keys;

mod elastic;
mod prebuilt;

const UID: &str = "6f1c3ad2-0000-4000-8000-000000000001";

fn policies() -> PolicySet {
    PolicySet::embedded().unwrap()
}

fn policy(set: &PolicySet, kind: &str) -> Arc<Policy> {
    set.iter().find(|p| p.target.kind == kind).unwrap().clone()
}

/// A suspended batch/v1 Job in queue `lq`, 2 pods.
fn job() -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "sample", "namespace": "ns", "uid": UID, "resourceVersion": "42",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"parallelism": 2, "completions": 2, "suspend": true,
                 "template": {"spec": {"containers": [{"name": "c", "image": "i",
                     "resources": {"requests": {"cpu": "1"}}}]}}}
    })
}

fn at(secs: i64) -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(1_767_225_600 + secs).unwrap())
}

fn cond(ty: &str, status: bool, reason: &str, message: &str, since: i64) -> Value {
    json!({"type": ty, "status": if status {"True"} else {"False"}, "reason": reason,
           "message": message, "lastTransitionTime": at(since)})
}

/// The Workload the reconciler made for `job`, with `status`, owned by it
/// and holding Kueue's finalizer.
fn workload_of(job: &Value, status: Value) -> api::Workload {
    let set = policies();
    let p = policy(&set, "Job");
    let prio = workload::priority(&p, job, &PriorityClasses::default()).unwrap();
    let mut body = workload::for_job(&p, job, &prio).unwrap();
    body["metadata"]["uid"] = json!("wl-uid");
    body["metadata"]["resourceVersion"] = json!("7");
    body["metadata"]["finalizers"] = json!([keys::RESOURCE_IN_USE_FINALIZER]);
    body["status"] = status;
    serde_json::from_value(body).unwrap()
}

fn admission() -> Value {
    json!({"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2,
        "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}}]})
}

/// Quota reserved and admitted at second 0.
fn admitted() -> Value {
    json!({"admission": admission(), "conditions": [
        cond("QuotaReserved", true, "QuotaReserved", "Quota reserved in ClusterQueue cq", 0),
        cond("Admitted", true, "Admitted", "The workload is admitted", 0)]})
}

/// A world to step in: the policy of `kind`, no priority classes, every
/// flavor known, waitForPodsReady as given, the time 100 s past the
/// admission.
struct World {
    set: PolicySet,
    policy: Arc<Policy>,
    classes: PriorityClasses,
    readiness: Option<Readiness>,
    flavors_known: bool,
    now: Time,
}

impl World {
    fn new(kind: &str) -> Self {
        let set = policies();
        World {
            policy: policy(&set, kind),
            set,
            classes: PriorityClasses::default(),
            readiness: None,
            flavors_known: true,
            now: at(100),
        }
    }

    fn step_read(
        &self,
        job: &Value,
        wl: Option<&api::Workload>,
        read: Option<&Result<Value, String>>,
    ) -> Step {
        let subject = subject(&self.policy, &self.set, job).expect("a governed job");
        self.step_as(&subject, job, wl, read)
    }

    /// A step about `subject` as given (an elastic job's, as a slice pass
    /// left it).
    fn step_as(
        &self,
        subject: &Subject,
        job: &Value,
        wl: Option<&api::Workload>,
        read: Option<&Result<Value, String>>,
    ) -> Step {
        let known = self.flavors_known;
        let infos = move |wl: &api::Workload, queue: &str| {
            known.then(|| {
                wl.status
                    .iter()
                    .flat_map(|s| s.admission.iter())
                    .flat_map(|a| a.pod_set_assignments.iter().flatten())
                    .map(|psa| {
                        let mut i = PodSetInfo {
                            name: psa.name.clone(),
                            count: psa.count.map(i64::from),
                            ..PodSetInfo::default()
                        };
                        i.labels
                            .insert("kueue.x-k8s.io/queue-name".into(), queue.into());
                        i
                    })
                    .collect()
            })
        };
        let facts = Facts {
            policy: &self.policy,
            policies: &self.set,
            classes: &self.classes,
            readiness: self.readiness.as_ref(),
            infos: &infos,
            now: &self.now,
            jitter: 0.5,
        };
        step(&facts, subject, job, wl, read).expect("a step")
    }

    fn step(&self, job: &Value, wl: Option<&api::Workload>) -> Step {
        self.step_read(job, wl, None)
    }
}

fn running(mut job: Value) -> Value {
    job["spec"]["suspend"] = json!(false);
    job
}

/// The ops of the step's only write, a job patch, and its event.
fn job_patch(step: &Step) -> (&[PatchOp], Option<&Note>) {
    match step.writes.as_slice() {
        [Write::PatchJob { ops, event }] => (ops, event.as_ref()),
        other => panic!("expected one job patch, got {other:?}"),
    }
}

fn suspends(ops: &[PatchOp]) -> bool {
    ops.iter()
        .any(|o| o.path == "/spec/suspend" && o.value == json!(true))
}

fn status_of(step: &Step) -> &Value {
    match step.writes.first() {
        Some(Write::WorkloadStatus(s)) => s,
        other => panic!("expected a Workload status write first, got {other:?}"),
    }
}

fn condition<'a>(status: &'a Value, ty: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == ty))
        .unwrap_or_else(|| panic!("no {ty} in {status}"))
}

#[test]
fn a_job_without_a_queue_or_under_an_integrated_parent_is_not_the_reconcilers() {
    let w = World::new("Job");
    let mut j = job();
    j["metadata"]["labels"] = json!({});
    assert_eq!(subject(&w.policy, &w.set, &j), None);
    let mut child = job();
    child["metadata"]["ownerReferences"] = json!([{"apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet", "name": "js", "uid": "p", "controller": true}]);
    assert_eq!(subject(&w.policy, &w.set, &child), None);
    let s = subject(&w.policy, &w.set, &job()).unwrap();
    assert_eq!((s.queue.as_str(), s.namespace.as_str()), ("lq", "ns"));
    assert_eq!(
        s.workload,
        workload::name_for("Job", "batch", "sample", UID)
    );
}

#[test]
fn a_queued_job_gets_its_workload_created() {
    let s = World::new("Job").step(&job(), None);
    let [Write::CreateWorkload { body, event }] = s.writes.as_slice() else {
        panic!("{s:?}");
    };
    assert_eq!(body["spec"]["queueName"], "lq");
    assert_eq!(body["spec"]["podSets"][0]["count"], 2);
    assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], UID);
    assert_eq!(event.reason, "CreatedWorkload");
    let name = workload::name_for("Job", "batch", "sample", UID);
    assert_eq!(event.message, format!("Created Workload: ns/{name}"));
    assert_eq!(s.then, Then::Wait);
}

#[test]
fn a_job_started_without_an_admission_is_stopped() {
    let w = World::new("Job");
    // No Workload yet (the webhook was bypassed).
    let s = w.step(&running(job()), None);
    let (ops, event) = job_patch(&s);
    assert!(suspends(ops), "{ops:?}");
    assert_eq!(event.unwrap().message, "Not admitted by cluster queue");
    // A Workload that is not admitted.
    let wl = workload_of(&job(), json!({}));
    let s = w.step(&running(job()), Some(&wl));
    let (ops, event) = job_patch(&s);
    assert!(suspends(ops));
    assert_eq!(event.unwrap().reason, "Stopped");
}

#[test]
fn a_finished_job_without_a_workload_is_left_alone() {
    let mut j = running(job());
    j["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
    assert_eq!(World::new("Job").step(&j, None), Step::wait(Vec::new()));
}

#[test]
fn an_unknown_priority_class_is_told_and_tried_again() {
    let mut j = job();
    j["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!("missing");
    let s = World::new("Job").step(&j, None);
    let [Write::JobEvent(n)] = s.writes.as_slice() else {
        panic!("{s:?}");
    };
    assert!(n.warning && n.reason == "ErrWorkloadCompose", "{n:?}");
    assert_eq!(s.then, Then::After(COMPOSE_RETRY));
}

#[test]
fn a_workload_of_another_owner_is_neither_changed_nor_deleted() {
    let mut wl = workload_of(&job(), admitted());
    wl.metadata.owner_references.as_mut().unwrap()[0].uid = "someone-else".into();
    let w = World::new("Job");
    for j in [job(), running(job())] {
        let s = w.step(&j, Some(&wl));
        let [Write::JobEvent(n)] = s.writes.as_slice() else {
            panic!("{s:?}");
        };
        assert!(n.message.ends_with("exists, but is not owned by this job"));
    }
}

#[test]
fn a_going_job_finishes_its_workload_as_orphaned_then_lets_it_go() {
    let w = World::new("Job");
    let mut j = job();
    j["metadata"]["deletionTimestamp"] = json!(at(50));
    let wl = workload_of(&job(), admitted());
    let s = w.step(&j, Some(&wl));
    let c = condition(status_of(&s), "Finished");
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str()),
        (Some("True"), Some("OwnerNotFound"))
    );
    let mut done = wl.clone();
    done.status.as_mut().unwrap().conditions = Some(
        serde_json::from_value(json!([cond("Finished", true, "OwnerNotFound", "gone", 60)]))
            .unwrap(),
    );
    assert_eq!(w.step(&j, Some(&done)).writes, [Write::RemoveFinalizer]);
    // Not its Workload: nothing.
    let mut other = wl;
    other.metadata.owner_references.as_mut().unwrap()[0].uid = "x".into();
    assert_eq!(w.step(&j, Some(&other)).writes, []);
}

#[test]
fn a_finished_workload_is_let_go() {
    let wl = workload_of(
        &job(),
        json!({"conditions": [cond("Finished", true, "Succeeded", "done", 5)]}),
    );
    assert_eq!(
        World::new("Job").step(&job(), Some(&wl)).writes,
        [Write::RemoveFinalizer]
    );
    let mut without = wl;
    without.metadata.finalizers = None;
    assert_eq!(World::new("Job").step(&job(), Some(&without)).writes, []);
}

#[test]
fn a_deleted_workload_stops_the_job_puts_its_templates_back_then_lets_go() {
    let w = World::new("Job");
    let mut wl = workload_of(&job(), admitted());
    wl.metadata.deletion_timestamp = Some(at(50));
    let s = w.step(&running(job()), Some(&wl));
    let (ops, event) = job_patch(&s);
    assert!(suspends(ops));
    assert_eq!(event.unwrap().message, "Workload is deleted");
    // Suspended, its template changed by the start (a node selector):
    // the job's startTime is cleared first, then the template restored.
    let mut started = job();
    started["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
    started["status"] = json!({"startTime": at(1)});
    let s = w.step(&started, Some(&wl));
    assert_eq!(
        s.writes,
        [Write::ResetJobStatus(
            json!({"status": {"startTime": null}})
        )]
    );
    started["status"] = json!({});
    let s = w.step(&started, Some(&wl));
    let (ops, event) = job_patch(&s);
    assert!(
        ops.iter().any(|o| o.path.contains("nodeSelector")),
        "{ops:?}"
    );
    assert_eq!(event, None);
    // As recorded: the finalizer goes.
    assert_eq!(w.step(&job(), Some(&wl)).writes, [Write::RemoveFinalizer]);
}

#[test]
fn a_deactivation_target_is_deactivated() {
    let mut st = admitted();
    st["conditions"].as_array_mut().unwrap().push(cond(
        "DeactivationTarget",
        true,
        "MaximumExecutionTimeExceeded",
        "m",
        90,
    ));
    let wl = workload_of(&job(), st);
    let s = World::new("Job").step(&running(job()), Some(&wl));
    assert_eq!(s.writes, [Write::WorkloadSpec(json!({"active": false}))]);
}

#[test]
fn a_finished_job_finishes_its_workload_in_kueues_words() {
    let w = World::new("Job");
    let wl = workload_of(&job(), admitted());
    let mut j = running(job());
    j["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
    let s = w.step(&j, Some(&wl));
    let c = condition(status_of(&s), "Finished");
    assert_eq!(
        (c["reason"].as_str(), c["message"].as_str()),
        (Some("Succeeded"), Some("Job finished successfully"))
    );
    let Some(Write::JobEvent(n)) = s.writes.get(1) else {
        panic!("{s:?}");
    };
    assert_eq!(n.reason, "FinishedWorkload");
    assert!(n.message.ends_with("' is declared finished"), "{n:?}");
    j["status"] = json!({"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]});
    let c = condition(status_of(&w.step(&j, Some(&wl))), "Finished").clone();
    assert_eq!(
        (c["reason"].as_str(), c["message"].as_str()),
        (Some("Failed"), Some("BackoffLimitExceeded"))
    );
}

/// After a takeover, a finished job's pass goes first: its Finished write
/// frees the quota the new leader's first admission needs.
#[test]
fn after_a_takeover_a_finished_jobs_pass_runs_first() {
    let set = policies();
    let p = policy(&set, "Job");
    assert_eq!(after_takeover(&p, &job()), TAKEOVER_BEAT);
    assert_eq!(after_takeover(&p, &running(job())), TAKEOVER_BEAT);
    for done in ["Complete", "Failed"] {
        let mut j = running(job());
        j["status"] = json!({"conditions": [{"type": done, "status": "True"}]});
        assert_eq!(after_takeover(&p, &j), Duration::ZERO, "{done}");
    }
}

fn evicted(reason: &str) -> Value {
    let mut st = admitted();
    st["conditions"].as_array_mut().unwrap().push(cond(
        "Evicted",
        true,
        reason,
        "Preempted to accommodate a workload",
        90,
    ));
    st
}

#[test]
fn an_evicted_job_is_stopped_and_only_then_gives_its_quota_back() {
    let w = World::new("Job");
    let wl = workload_of(&job(), evicted("Preempted"));
    let s = w.step(&running(job()), Some(&wl));
    let (ops, event) = job_patch(&s);
    assert!(suspends(ops));
    assert_eq!(
        event.unwrap().message,
        "Preempted to accommodate a workload"
    );
    // Suspended, its pods still running: wait for them.
    let mut stopping = job();
    stopping["status"] = json!({"active": 1});
    let s = w.step(&stopping, Some(&wl));
    assert_eq!(s, Step::after(Vec::new(), Duration::from_millis(500)));
    // Gone: the quota is released, requeued for a preemption.
    let s = w.step(&job(), Some(&wl));
    let st = status_of(&s);
    assert_eq!(st["admission"], Value::Null);
    assert_eq!(condition(st, "QuotaReserved")["status"], "False");
    assert_eq!(condition(st, "Requeued")["status"], "True");
    assert_eq!(st["accumulatedPastExecutionTimeSeconds"], 100);
}

/// A job MultiKueue runs on a worker (`managedBy:
/// kueue.x-k8s.io/multikueue`) has no pods here: its mirrored `active`
/// count does not hold the quota once it is stopped, or a lost worker's
/// stale status would keep it forever (not Kueue's: it waits on it).
#[test]
fn an_evicted_multikueue_job_gives_its_quota_back_despite_its_mirrored_active_count() {
    let w = World::new("Job");
    let mut j = job();
    j["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    let wl = workload_of(&j, evicted("Preempted"));
    j["status"] = json!({"active": 1});
    let st = status_of(&w.step(&j, Some(&wl))).clone();
    assert_eq!(st["admission"], Value::Null);
    assert_eq!(condition(&st, "QuotaReserved")["status"], "False");
    // Another controller's job with the same mirror still waits.
    j["spec"]["managedBy"] = json!("example.com/other");
    let s = w.step(&j, Some(&wl));
    assert_eq!(s, Step::after(Vec::new(), Duration::from_millis(500)));
}

#[test]
fn an_admitted_job_is_started_with_its_admission() {
    let w = World::new("Job");
    let wl = workload_of(&job(), admitted());
    let s = w.step(&job(), Some(&wl));
    let (ops, event) = job_patch(&s);
    assert!(
        ops.iter()
            .any(|o| o.path == "/spec/suspend" && o.value == json!(false)),
        "{ops:?}"
    );
    assert_eq!(
        ops[0].op, "test",
        "the start is conditioned on the job read"
    );
    assert_eq!(event.unwrap().message, "Admitted by clusterQueue cq");
    // Running: nothing more.
    assert_eq!(w.step(&running(job()), Some(&wl)), Step::wait(Vec::new()));
    // A flavor not cached yet: look again soon, nothing written.
    let w = World {
        flavors_known: false,
        ..World::new("Job")
    };
    assert_eq!(
        w.step(&job(), Some(&wl)),
        Step::after(Vec::new(), Duration::from_millis(200))
    );
}

#[test]
fn a_job_that_cannot_start_with_its_admission_fails_to_start() {
    let mut st = admitted();
    // An admission check's update that conflicts with the admission's own.
    st["admissionChecks"] = json!([{"name": "prov", "state": "Ready", "message": "",
        "lastTransitionTime": at(0),
        "podSetUpdates": [{"name": "main", "labels": {"kueue.x-k8s.io/queue-name": "other"}}]}]);
    let wl = workload_of(&job(), st);
    let s = World::new("Job").step(&job(), Some(&wl));
    let c = condition(status_of(&s), "Finished");
    assert_eq!(c["reason"], "FailedToStart");
    assert!(
        matches!(s.writes.get(1), Some(Write::JobEvent(n)) if n.warning && n.reason == "FailedToStart")
    );
}

#[test]
fn the_maximum_execution_time_is_waited_for_then_the_workload_deactivated() {
    let w = World::new("Job");
    let limited = |secs: i32| {
        let mut j = job();
        j["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = json!(secs.to_string());
        j
    };
    let wl = workload_of(&limited(150), admitted());
    assert_eq!(wl.spec.maximum_execution_time_seconds, Some(150));
    assert_eq!(
        w.step(&running(limited(150)), Some(&wl)),
        Step::after(Vec::new(), Duration::from_secs(50))
    );
    let wl = workload_of(&limited(60), admitted());
    let s = w.step(&running(limited(60)), Some(&wl));
    let st = status_of(&s);
    assert_eq!(
        condition(st, "DeactivationTarget")["reason"],
        execution::EXCEEDED_REASON
    );
    assert_eq!(st["accumulatedPastExecutionTimeSeconds"], Value::Null);
    assert!(matches!(s.writes.get(1), Some(Write::WorkloadEvent(n)) if n.warning));
    assert_eq!(s.then, Then::Wait);
}

fn pods_ready(timeout_secs: i64, limit: Option<i32>) -> Readiness {
    Readiness {
        timeout_ms: timeout_secs * 1000,
        backoff_base_seconds: 10,
        backoff_limit_count: limit,
        ..Readiness::default()
    }
}

#[test]
fn pods_not_ready_in_time_evict_the_workload_with_a_backoff() {
    let w = World {
        readiness: Some(pods_ready(300, None)),
        ..World::new("Job")
    };
    let mut st = admitted();
    st["conditions"].as_array_mut().unwrap().push(cond(
        "PodsReady",
        false,
        "WaitForStart",
        "Not all pods are ready or succeeded",
        0,
    ));
    let wl = workload_of(&job(), st.clone());
    // 100 s of 300 gone.
    assert_eq!(
        w.step(&running(job()), Some(&wl)),
        Step::after(Vec::new(), Duration::from_secs(200))
    );
    let late = World {
        now: at(400),
        readiness: Some(pods_ready(300, None)),
        ..World::new("Job")
    };
    let s = late.step(&running(job()), Some(&wl));
    let status = status_of(&s);
    assert_eq!(condition(status, "Evicted")["reason"], "PodsReadyTimeout");
    assert_eq!(status["requeueState"]["count"], 1);
    assert!(
        matches!(s.writes.get(1), Some(Write::WorkloadEvent(n)) if n.reason == "EvictedDueToPodsReadyTimeout")
    );
    assert!(status.get("unhealthyNodes").is_none(), "{status}");
    // A failed node of the placement it ends is forgotten with it.
    let mut failed = st.clone();
    failed["unhealthyNodes"] = json!([{"name": "x1"}]);
    let s = late.step(&running(job()), Some(&workload_of(&job(), failed)));
    assert_eq!(status_of(&s)["unhealthyNodes"], Value::Null);
    assert!(status_of(&s).get("unhealthyNodes").is_some());
    // With no requeue left: deactivated instead.
    let limited = World {
        now: at(400),
        readiness: Some(pods_ready(300, Some(0))),
        ..World::new("Job")
    };
    let s = limited.step(&running(job()), Some(&wl));
    assert_eq!(
        condition(status_of(&s), "DeactivationTarget")["reason"],
        readiness::LIMIT_REASON
    );
}

#[test]
fn ready_pods_are_written_as_pods_ready() {
    let w = World {
        readiness: Some(pods_ready(300, None)),
        ..World::new("Job")
    };
    let wl = workload_of(&job(), admitted());
    let mut j = running(job());
    j["status"] = json!({"ready": 2});
    let s = w.step(&j, Some(&wl));
    assert_eq!(condition(status_of(&s), "PodsReady")["status"], "True");
}

#[test]
fn a_requeued_workload_waits_out_its_backoff_then_queues_again() {
    let w = World::new("Job");
    let st = json!({"requeueState": {"count": 1, "requeueAt": at(130)},
        "conditions": [cond("Requeued", false, "PodsReadyTimeout", "m", 90)]});
    let wl = workload_of(&job(), st);
    assert_eq!(
        w.step(&job(), Some(&wl)),
        Step::after(Vec::new(), Duration::from_secs(30))
    );
    let later = World {
        now: at(131),
        ..World::new("Job")
    };
    let s = later.step(&job(), Some(&wl));
    let st = status_of(&s);
    assert_eq!(st["requeueState"], json!({"count": 1, "requeueAt": null}));
    assert_eq!(
        condition(st, "Requeued")["reason"],
        readiness::BACKOFF_FINISHED_REASON
    );
}

/// Kueue v0.19.2 jobframework `EquivalentToWorkload` and
/// `updateWorkloadToMatchJob` (pkg/util/equality/podset.go compares count,
/// minCount, containers, init containers and tolerations), as
/// test/integration/singlecluster/controller/jobs/job/job_controller_test.go
/// exercises them: a suspended Job whose pod count or container request
/// changes has its Workload, holding no quota, updated in place with an
/// `UpdatedWorkload` event; no change writes nothing.
#[test]
fn a_changed_job_updates_its_workload_to_match() {
    let w = World::new("Job");
    let wl = workload_of(&job(), json!({}));
    let expect_update = |changed: &Value, what: &str| {
        let s = w.step(changed, Some(&wl));
        let [Write::WorkloadSpec(spec), Write::JobEvent(n)] = s.writes.as_slice() else {
            panic!("{what}: {s:?}");
        };
        assert_eq!(n.reason, "UpdatedWorkload", "{what}");
        assert!(
            n.message
                .starts_with("Updated not matching Workload for suspended job: ns/"),
            "{what}: {}",
            n.message
        );
        assert!(spec["maximumExecutionTimeSeconds"].is_null(), "{what}");
        spec.clone()
    };
    let mut wider = job();
    wider["spec"]["parallelism"] = json!(4);
    wider["spec"]["completions"] = json!(4);
    assert_eq!(expect_update(&wider, "count")["podSets"][0]["count"], 4);
    let mut bigger = job();
    bigger["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] =
        json!("3");
    let spec = expect_update(&bigger, "request");
    assert_eq!(
        spec["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "3"
    );
    // Tolerations Kueue compares too while the Workload is not admitted:
    // a pending job's new ones reach its Workload.
    let mut tolerant = job();
    tolerant["spec"]["template"]["spec"]["tolerations"] =
        json!([{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]);
    let spec = expect_update(&tolerant, "tolerations");
    assert_eq!(
        spec["podSets"][0]["template"]["spec"]["tolerations"][0]["key"],
        "spot"
    );
    // A template still carrying an admission (stopped, not yet put back)
    // is restored as recorded first, not followed.
    let mut stopped = tolerant.clone();
    stopped["spec"]["template"]["metadata"] = json!({"labels": {"kueue.x-k8s.io/podset": "main"}});
    let restored = w.step(&stopped, Some(&wl));
    let (ops, _) = job_patch(&restored);
    assert!(
        ops.iter()
            .any(|o| o.op == "remove" && o.path.ends_with("/tolerations")),
        "{ops:?}"
    );
    // The same job: nothing.
    assert_eq!(w.step(&job(), Some(&wl)), Step::wait(Vec::new()));
}

/// Kueue v0.19.2 test/integration/singlecluster/controller/jobs/job/
/// job_controller_test.go "checking the job gets suspended when
/// parallelism changes and the added node selectors are removed": a
/// running Job whose parallelism no longer matches its admitted Workload
/// is stopped ("No matching Workload; restoring pod templates according to
/// existent Workload") and the Workload deleted ("Deleted not matching
/// Workload"). Tolerations and a partial admission's lower count are no
/// mismatch.
#[test]
fn a_running_job_that_no_longer_matches_its_workload_is_stopped_and_the_workload_deleted() {
    let w = World::new("Job");
    let wl = workload_of(&job(), admitted());
    let mut wider = running(job());
    wider["spec"]["parallelism"] = json!(3);
    wider["spec"]["completions"] = json!(3);
    let s = w.step(&wider, Some(&wl));
    let [Write::PatchJob {
        ops,
        event: Some(stopped),
    }, Write::DeleteWorkload { event }] = s.writes.as_slice()
    else {
        panic!("{s:?}");
    };
    assert!(suspends(ops), "{ops:?}");
    assert_eq!(stopped.message, NO_MATCHING_WORKLOAD);
    assert_eq!(
        (event.reason.as_str(), event.message.as_str()),
        (
            "DeletedWorkload",
            format!(
                "Deleted not matching Workload: ns/{}",
                wl.metadata.name.as_deref().unwrap()
            )
            .as_str()
        )
    );
    // As admitted, with the admission's tolerations: it runs on.
    let mut placed = running(job());
    placed["spec"]["template"]["spec"]["tolerations"] =
        json!([{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]);
    assert_eq!(w.step(&placed, Some(&wl)).writes, []);
    // Started at a partial admission's lower count: that is its match.
    let mut partial = job();
    partial["metadata"]["annotations"] = json!({"kueue.x-k8s.io/job-min-parallelism": "1"});
    let mut status = admitted();
    status["admission"]["podSetAssignments"][0]["count"] = json!(1);
    let wl = workload_of(&partial, status);
    let mut reduced = running(partial);
    reduced["spec"]["parallelism"] = json!(1);
    assert_eq!(w.step(&reduced, Some(&wl)).writes, []);
}

#[test]
fn while_admission_checks_are_pending_the_workload_stays_and_a_running_job_stops() {
    let w = World::new("Job");
    let reserved = json!({"admission": admission(), "conditions": [
        cond("QuotaReserved", true, "QuotaReserved", "Quota reserved in ClusterQueue cq", 0)]});
    let wl = workload_of(&job(), reserved);
    // The job changed under its reservation: the Workload is kept.
    let mut wider = job();
    wider["spec"]["parallelism"] = json!(4);
    wider["spec"]["completions"] = json!(4);
    assert_eq!(w.step(&wider, Some(&wl)), Step::wait(Vec::new()));
    // Running without an admission: stopped, as Kueue does.
    let s = w.step(&running(job()), Some(&wl));
    let (ops, event) = job_patch(&s);
    assert!(suspends(ops));
    assert_eq!(event.unwrap().message, "Not admitted by cluster queue");
}

#[test]
fn a_moved_job_moves_its_workload() {
    let w = World::new("Job");
    let wl = workload_of(&job(), json!({}));
    let mut moved = job();
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("other");
    let s = w.step(&moved, Some(&wl));
    assert_eq!(
        s.writes,
        [Write::WorkloadSpec(json!({"queueName": "other"}))]
    );
}

/// Kueue v0.19.2 test/integration/singlecluster/controller/jobs/job/
/// job_controller_test.go ("running workload priority is decreased…": the
/// label of a running Job changes from high to low and its Workload
/// follows, ref and value) and jobframework's `UpdateWorkloadPriority`: a
/// class whose value alone changed is left to the WorkloadPriorityClass
/// controller, a pod PriorityClass is not followed, and a Workload that
/// reserved quota without a ref is not given one.
#[test]
fn a_priority_class_label_change_reaches_the_workload_admitted_or_not() {
    let mut w = World::new("Job");
    w.classes.workload.insert("high".into(), 1000);
    w.classes.workload.insert("low".into(), 100);
    let with_class = |status: Value, class: &str, value: i32| {
        let mut wl = workload_of(&job(), status);
        wl.spec.priority_class_ref = Some(api::PriorityClassRef {
            group: "kueue.x-k8s.io".into(),
            kind: "WorkloadPriorityClass".into(),
            name: class.into(),
        });
        wl.spec.priority = Some(value);
        wl
    };
    let mut j = job();
    j["spec"]["suspend"] = json!(false);
    j["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!("low");
    let running = with_class(admitted(), "high", 1000);
    let s = w.step(&j, Some(&running));
    let [Write::WorkloadSpec(spec), Write::JobEvent(n)] = s.writes.as_slice() else {
        panic!("{s:?}");
    };
    assert_eq!(
        *spec,
        json!({"priority": 100, "priorityClassRef":
            {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "low"}})
    );
    assert_eq!(
        (n.reason.as_str(), n.message.as_str()),
        (
            "UpdatedWorkload",
            format!(
                "Updated workload priority class: ns/{}",
                running.metadata.name.clone().unwrap()
            )
            .as_str()
        )
    );
    // Same class, another value: not the job reconciler's write.
    let stale = with_class(admitted(), "low", 7);
    assert!(w.step(&j, Some(&stale)).writes.is_empty());
    // Pending and moved to a class: followed too.
    let mut pending = job();
    pending["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!("high");
    let s = w.step(&pending, Some(&workload_of(&job(), json!({}))));
    assert!(
        matches!(&s.writes[..], [Write::WorkloadSpec(spec), _] if spec["priority"] == 1000),
        "{s:?}"
    );
    // Reserved without a ref: none can be added.
    let mut running_high = j.clone();
    running_high["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!("high");
    assert!(w
        .step(&running_high, Some(&workload_of(&job(), admitted())))
        .writes
        .is_empty());
    // A pod PriorityClass's Workload does not follow the label.
    let mut pod_class = with_class(json!({}), "p", 5);
    pod_class.spec.priority_class_ref = Some(api::PriorityClassRef {
        group: "scheduling.k8s.io".into(),
        kind: "PriorityClass".into(),
        name: "p".into(),
    });
    assert!(w.step(&pending, Some(&pod_class)).writes.is_empty());
}

#[test]
fn a_kind_with_a_referenced_runtime_reads_it_before_deciding() {
    let w = World::new("TrainJob");
    let tj = json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ns", "uid": UID, "resourceVersion": "1",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"suspend": true, "runtimeRef": {"name": "torch"}}
    });
    let s = w.step(&tj, None);
    assert_eq!((s.writes.len(), s.then), (0, Then::ReadView));
    let failed = Err("ClusterTrainingRuntime torch not found".to_string());
    let s = w.step_read(&tj, None, Some(&failed));
    let [Write::JobEvent(n)] = s.writes.as_slice() else {
        panic!("{s:?}");
    };
    assert_eq!(
        (n.reason.as_str(), n.message.as_str()),
        (
            "ErrWorkloadCompose",
            "ClusterTrainingRuntime torch not found"
        )
    );
    assert_eq!(s.then, Then::After(COMPOSE_RETRY));
}

/// Conditions a Workload may carry, each on or off.
fn any_workload() -> impl Strategy<Value = (Vec<bool>, bool, bool, bool)> {
    (
        proptest::collection::vec(any::<bool>(), 5),
        any::<bool>(), // has an admission
        any::<bool>(), // owned by the job
        any::<bool>(), // being deleted
    )
}

fn any_job() -> impl Strategy<Value = (bool, u8, bool, bool)> {
    (
        any::<bool>(), // suspended
        0u8..3,        // running, succeeded, failed
        any::<bool>(), // active pods
        any::<bool>(), // being deleted
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Whatever the states: a Workload another owner holds is never
    /// written or deleted and its job never started; a job is started only
    /// with a live admission; a Workload is deleted only without quota.
    #[test]
    fn no_step_starts_without_an_admission_or_touches_what_is_not_its_own(
        (flags, has_admission, owned, wl_going) in any_workload(),
        (suspended, progress, active, job_going) in any_job(),
    ) {
        let mut j = job();
        j["spec"]["suspend"] = json!(suspended);
        j["status"] = match progress {
            1 => json!({"conditions": [{"type": "Complete", "status": "True"}]}),
            2 => json!({"conditions": [{"type": "Failed", "status": "True"}]}),
            _ => json!({}),
        };
        if active {
            j["status"]["active"] = json!(1);
        }
        if job_going {
            j["metadata"]["deletionTimestamp"] = json!(at(1));
        }
        let types = ["QuotaReserved", "Admitted", "Evicted", "Finished", "DeactivationTarget"];
        let conds: Vec<Value> = types
            .iter()
            .zip(&flags)
            .map(|(t, on)| cond(t, *on, "Reason", "m", 0))
            .collect();
        let mut st = json!({"conditions": conds});
        if has_admission {
            st["admission"] = admission();
        }
        let mut wl = workload_of(&job(), st);
        if !owned {
            wl.metadata.owner_references.as_mut().unwrap()[0].uid = "other".into();
        }
        if wl_going {
            wl.metadata.deletion_timestamp = Some(at(2));
        }
        let s = World::new("Job").step(&j, Some(&wl));
        let [reserved, admitted, evicted, finished, _] = flags[..] else { unreachable!() };
        for w in &s.writes {
            if !owned {
                prop_assert!(matches!(w, Write::JobEvent(_)), "wrote {w:?} for a Workload not its own");
            }
            if let Write::PatchJob { ops, .. } = w {
                let starts = ops.iter().any(|o| o.path == "/spec/suspend" && o.value == json!(false));
                prop_assert!(
                    !starts || (reserved && admitted && has_admission && !evicted && !finished
                        && !wl_going && !job_going),
                    "started with {flags:?} admission={has_admission} going={wl_going}"
                );
            }
            if let Write::WorkloadSpec(spec) = w {
                prop_assert!(
                    !(reserved && has_admission) || spec.get("podSets").is_none(),
                    "changed the pod sets of a Workload holding quota"
                );
            }
            prop_assert!(!matches!(w, Write::CreateWorkload { .. }), "a second Workload");
        }
    }

    /// Without a Workload, a step creates one for a suspended running job
    /// and otherwise never writes a Workload.
    #[test]
    fn without_a_workload_only_a_create_or_a_stop_is_written(
        (suspended, progress, active, _) in any_job(),
    ) {
        let mut j = job();
        j["spec"]["suspend"] = json!(suspended);
        if progress == 1 {
            j["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
        }
        if active {
            j["status"]["active"] = json!(1);
        }
        let s = World::new("Job").step(&j, None);
        for w in &s.writes {
            prop_assert!(matches!(w, Write::CreateWorkload { .. } | Write::PatchJob { .. }), "{w:?}");
        }
        let creates = s.writes.iter().any(|w| matches!(w, Write::CreateWorkload { .. }));
        prop_assert_eq!(creates, suspended && progress != 1);
    }
}

/// Kueue v0.19.2 trainjob_controller.go `PodsReady` and `ReclaimablePods`
/// (no upstream table): read from the replicated jobs the TrainJob's
/// runtime builds (its view) beside the TrainJob's own `jobsStatus`; only
/// while the Workload holds quota, and nothing when the runtime cannot be
/// read.
#[test]
fn an_admitted_trainjob_reports_readiness_and_reclaim_from_its_runtime() {
    let w = World {
        readiness: Some(pods_ready(300, None)),
        ..World::new("TrainJob")
    };
    let container =
        |name: &str| json!({"name": name, "image": "i", "resources": {"requests": {"cpu": "1"}}});
    let runtime = json!({"spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": [
        {"name": "dataset-initializer", "replicas": 1,
         "template": {"spec": {"template": {"spec": {"containers": [container("init")]}}}}},
        {"name": "node", "replicas": 1,
         "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                      "spec": {"template": {"spec": {"containers": [container("node")]}}}}}]}}}});
    let mut tj = json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ns", "uid": UID, "resourceVersion": "1",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"suspend": false, "runtimeRef": {"name": "torch"}, "trainer": {"numNodes": 2}}
    });
    let rule = w.policy.runtime_ref.clone().unwrap();
    let view = rule.view(&tj, &runtime);
    let prio = workload::priority(&w.policy, &view, &PriorityClasses::default()).unwrap();
    let mut body = workload::for_job(&w.policy, &view, &prio).unwrap();
    body["metadata"]["uid"] = json!("wl-uid");
    body["metadata"]["resourceVersion"] = json!("7");
    body["status"] = admitted();
    let wl: api::Workload = serde_json::from_value(body.clone()).unwrap();
    let counts: Vec<(String, i32)> = wl
        .spec
        .pod_sets
        .iter()
        .flatten()
        .map(|p| (p.name.clone(), p.count))
        .collect();
    assert_eq!(
        counts,
        vec![("dataset-initializer".into(), 1), ("node".into(), 2)]
    );
    let step = |tj: &Value, wl: &api::Workload| {
        let s = w.step(tj, Some(wl));
        assert_eq!((s.writes.len(), s.then), (0, Then::ReadView), "{s:?}");
        let read = Ok(rule.view(tj, &runtime));
        w.step_read(tj, Some(wl), Some(&read))
    };
    // The initializer done, the node job's replica ready: its pod is
    // reclaimed first ...
    tj["status"] = json!({"jobsStatus": [
        {"name": "dataset-initializer", "ready": 0, "succeeded": 1, "active": 0},
        {"name": "node", "ready": 1, "succeeded": 0, "active": 1}]});
    let s = step(&tj, &wl);
    assert_eq!(
        status_of(&s)["reclaimablePods"],
        json!([{"name": "dataset-initializer", "count": 1}])
    );
    // ... then every replicated job counts as ready: PodsReady.
    body["status"]["reclaimablePods"] = json!([{"name": "dataset-initializer", "count": 1}]);
    let reclaimed: api::Workload = serde_json::from_value(body.clone()).unwrap();
    let s = step(&tj, &reclaimed);
    assert_eq!(condition(status_of(&s), "PodsReady")["status"], "True");
    // The node job's replica not ready: not ready.
    tj["status"]["jobsStatus"][1]["ready"] = json!(0);
    let s = step(&tj, &reclaimed);
    assert_eq!(condition(status_of(&s), "PodsReady")["status"], "False");
    // The runtime gone: neither is written.
    let gone = Err("runtime 'torch' not found".to_string());
    let s = w.step_read(&tj, Some(&reclaimed), Some(&gone));
    assert!(
        !s.writes
            .iter()
            .any(|x| matches!(x, Write::WorkloadStatus(_))),
        "{s:?}"
    );
    // Kueue's `ensureOneWorkload` for a running TrainJob: its pod sets as
    // the runtime builds them still match the Workload (nothing written
    // but the readiness), and once `numNodes` changes they do not: stopped,
    // the Workload deleted.
    tj["status"]["jobsStatus"][1]["ready"] = json!(1);
    body["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(cond(
            "PodsReady",
            true,
            "Started",
            "All pods reached readiness and the workload is running",
            0,
        ));
    let ready: api::Workload = serde_json::from_value(body).unwrap();
    let s = step(&tj, &ready);
    assert!(s.writes.is_empty(), "{s:#?}");
    tj["spec"]["trainer"]["numNodes"] = json!(3);
    let s = step(&tj, &ready);
    assert!(
        matches!(s.writes.first(), Some(Write::PatchJob { ops, .. }) if suspends(ops)),
        "{s:?}"
    );
    assert!(
        s.writes
            .iter()
            .any(|x| matches!(x, Write::DeleteWorkload { .. })),
        "{s:?}"
    );
}

/// Kueue's RayService `Skip` (DeferRayServiceFinalizationForRedisCleanup,
/// on by default): a service deleted under GCS fault tolerance keeps its
/// Workload, quota and finalizer until it is gone, while KubeRay's Redis
/// cleanup Job runs; without fault tolerance it lets go as any job does.
#[test]
fn a_rayservice_deleted_under_gcs_fault_tolerance_keeps_its_workload_until_gone() {
    let w = World::new("RayService");
    let service = |ft: bool| {
        let mut s = json!({"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "svc", "namespace": "ns", "uid": UID, "resourceVersion": "4",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                         "deletionTimestamp": at(50)},
            "spec": {"rayClusterConfig": {"suspend": false,
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head",
                    "resources": {"requests": {"cpu": "1"}}}]}}}}}});
        if ft {
            s["metadata"]["annotations"] = json!({"ray.io/ft-enabled": "true"});
        }
        s
    };
    let wl_of = |svc: &Value| -> api::Workload {
        let prio = workload::priority(&w.policy, svc, &PriorityClasses::default()).unwrap();
        let mut body = workload::for_job(&w.policy, svc, &prio).unwrap();
        body["metadata"]["uid"] = json!("wl-uid");
        body["metadata"]["resourceVersion"] = json!("7");
        body["metadata"]["finalizers"] = json!([keys::RESOURCE_IN_USE_FINALIZER]);
        body["status"] = admitted();
        serde_json::from_value(body).unwrap()
    };
    let kept = service(true);
    let s = w.step(&kept, Some(&wl_of(&kept)));
    assert_eq!(s.writes, [], "kept under fault tolerance: {s:?}");
    // Better than Kueue's Skip: a Workload deleted itself (a foreground
    // deletion of the service waits for it) is let go, or the deletion
    // would hang.
    let mut going = wl_of(&kept);
    going.metadata.deletion_timestamp = Some(at(60));
    let s = w.step(&kept, Some(&going));
    assert_eq!(
        s.writes,
        [Write::RemoveFinalizer],
        "a deleted Workload: {s:?}"
    );
    let plain = service(false);
    let s = w.step(&plain, Some(&wl_of(&plain)));
    let c = condition(status_of(&s), "Finished");
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str()),
        (Some("True"), Some("OwnerNotFound")),
        "let go without fault tolerance"
    );
}
