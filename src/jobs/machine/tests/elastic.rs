//! An elastic job's slices (Kueue's `EnsureWorkloadSlices` and
//! `prepareWorkloadSlice` in the job reconciler): the slice pass before
//! the step, and the step's rules for an elastic job.

use super::*;
use crate::jobs::slices;

const ELASTIC: &str = "kueue.x-k8s.io/elastic-job";

/// `job()` annotated elastic, at generation `generation`, `parallelism` pods.
fn elastic(generation: i64, parallelism: i64) -> Value {
    let mut j = job();
    j["metadata"]["annotations"] = json!({ELASTIC: "true"});
    j["metadata"]["generation"] = json!(generation);
    j["spec"]["parallelism"] = json!(parallelism);
    j["spec"]["completions"] = json!(10);
    j
}

/// A slice of `job` named `name`, created at `created` s, with `status`.
fn slice(job: &Value, name: &str, created: i64, status: Value, ann: Value) -> api::Workload {
    let mut wl = workload_of(job, status);
    wl.metadata.name = Some(name.into());
    wl.metadata.uid = Some(format!("uid-{name}"));
    wl.metadata.creation_timestamp = Some(at(created));
    wl.metadata.annotations = serde_json::from_value(ann).unwrap();
    wl
}

fn admitted_at(count: i64) -> Value {
    json!({"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
            "count": count, "flavors": {"cpu": "default"},
            "resourceUsage": {"cpu": format!("{count}")}}]},
           "conditions": [
            cond("QuotaReserved", true, "QuotaReserved", "Quota reserved in ClusterQueue cq", 0),
            cond("Admitted", true, "Admitted", "The workload is admitted", 0)]})
}

fn pass(w: &World, job: &Value, list: &[api::Workload]) -> (Subject, SlicePass) {
    let mut s = subject(&w.policy, &w.set, job).unwrap();
    let p = slice_pass(&w.policy, &mut s, job, list, &w.now);
    (s, p)
}

#[test]
fn an_elastic_jobs_first_slice_is_named_by_its_generation_and_starts_its_chain() {
    let w = World::new("Job");
    let j = elastic(1, 2);
    let (s, p) = pass(&w, &j, &[]);
    assert_eq!(p, SlicePass::Step(None));
    assert_eq!(
        s.workload,
        workload::name_with_extra("Job", "batch", "sample", UID, "1")
    );
    assert_ne!(
        s.workload,
        workload::name_for("Job", "batch", "sample", UID)
    );
    let step = w.step_as(&s, &j, None, None);
    let [Write::CreateWorkload { body, .. }] = step.writes.as_slice() else {
        panic!("{step:?}");
    };
    let ann = &body["metadata"]["annotations"];
    assert_eq!(body["metadata"]["name"], s.workload.as_str());
    assert_eq!(ann[ELASTIC], "true");
    assert_eq!(
        ann[keys::WORKLOAD_SLICE_NAME_ANNOTATION],
        s.workload.as_str()
    );
    assert!(
        ann.get(keys::SLICE_REPLACEMENT_FOR_ANNOTATION).is_none(),
        "{body}"
    );
}

/// Kueue: "Should support job scale-down and scale-up" — a scale-up of a
/// running job makes a new slice that names the admitted one; the job
/// keeps running meanwhile.
#[test]
fn a_running_scale_up_creates_a_replacement_slice_and_keeps_the_job_running() {
    let w = World::new("Job");
    let first = slice(
        &elastic(1, 2),
        "job-sample-a",
        0,
        admitted_at(2),
        json!({ELASTIC: "true", keys::WORKLOAD_SLICE_NAME_ANNOTATION: "job-sample-a"}),
    );
    let j = running(elastic(3, 4));
    let (s, p) = pass(&w, &j, std::slice::from_ref(&first));
    assert_eq!(p, SlicePass::Step(None));
    let chain = s.slice.clone().unwrap();
    assert_eq!(chain.replaces.as_deref(), Some("ns/job-sample-a"));
    assert_eq!(chain.origin.as_deref(), Some("job-sample-a"));
    let step = w.step_as(&s, &j, None, None);
    let [Write::CreateWorkload { body, .. }] = step.writes.as_slice() else {
        panic!("not stopped, a slice is made: {step:?}");
    };
    let ann = &body["metadata"]["annotations"];
    assert_eq!(
        ann[keys::SLICE_REPLACEMENT_FOR_ANNOTATION],
        "ns/job-sample-a"
    );
    assert_eq!(ann[keys::WORKLOAD_SLICE_NAME_ANNOTATION], "job-sample-a");
    assert_eq!(body["spec"]["podSets"][0]["count"], 4);

    // The new slice waits: the running job is not stopped.
    let pending = slice(
        &j,
        &s.workload,
        10,
        json!({}),
        json!({ELASTIC: "true", keys::SLICE_REPLACEMENT_FOR_ANNOTATION: "ns/job-sample-a"}),
    );
    let (s, p) = pass(&w, &j, &[first, pending.clone()]);
    assert_eq!(p, SlicePass::Step(Some(1)));
    let step = w.step_as(&s, &j, Some(&pending), None);
    assert!(step.writes.is_empty(), "{step:?}");

    // A job without the annotation is stopped in the same place.
    let plain = running(job());
    let wl = workload_of(&plain, json!({}));
    assert!(suspends(job_patch(&w.step(&plain, Some(&wl))).0));
}

#[test]
fn a_scale_down_resizes_the_admitted_slice_in_place() {
    let w = World::new("Job");
    let first = slice(
        &elastic(1, 4),
        "a",
        0,
        admitted_at(4),
        json!({ELASTIC: "true"}),
    );
    let (_, p) = pass(&w, &running(elastic(3, 1)), &[first]);
    let SlicePass::Writes(writes) = p else {
        panic!("{p:?}");
    };
    let [(0, Write::WorkloadSpec(spec))] = writes.as_slice() else {
        panic!("{writes:?}");
    };
    assert_eq!(spec["podSets"][0]["count"], 1);
    assert_eq!(spec["podSets"][0]["name"], "main");
    assert!(
        spec["podSets"][0]["template"].is_object(),
        "the whole pod set: {spec}"
    );
}

#[test]
fn a_slice_replaced_by_an_admitted_one_is_finished_in_kueues_words() {
    let w = World::new("Job");
    let j = running(elastic(3, 4));
    let old = slice(&j, "a", 0, admitted_at(2), json!({ELASTIC: "true"}));
    let new = slice(
        &j,
        "b",
        10,
        admitted_at(4),
        json!({ELASTIC: "true", keys::SLICE_REPLACEMENT_FOR_ANNOTATION: "ns/a"}),
    );
    let (_, p) = pass(&w, &j, &[old, new]);
    let SlicePass::Writes(writes) = p else {
        panic!("{p:?}");
    };
    let [(0, Write::WorkloadStatus(status))] = writes.as_slice() else {
        panic!("{writes:?}");
    };
    let finished = condition(status, "Finished");
    assert_eq!(finished["status"], "True");
    assert_eq!(finished["reason"], slices::REPLACED.0);
    assert_eq!(finished["message"], slices::REPLACED.1);
}

/// Every pod of the chain carries the chain's first slice's name.
#[test]
fn an_admitted_elastic_job_starts_with_its_slice_name_on_the_pods() {
    let w = World::new("Job");
    let j = elastic(1, 2);
    let wl = slice(
        &j,
        "job-sample-b",
        0,
        admitted_at(2),
        json!({ELASTIC: "true", keys::WORKLOAD_SLICE_NAME_ANNOTATION: "job-sample-a"}),
    );
    let (s, _) = pass(&w, &j, std::slice::from_ref(&wl));
    let step = w.step_as(&s, &j, Some(&wl), None);
    let (ops, _) = job_patch(&step);
    let text = serde_json::to_string(ops).unwrap();
    assert!(
        text.contains(keys::WORKLOAD_SLICE_NAME_ANNOTATION) && text.contains("job-sample-a"),
        "{text}"
    );
}

/// An elastic RayJob under in-tree autoscaling, before its slices
/// (`jobs::autoscaling`): its annotations written first, alone, on the
/// version read; once it carries them, the job goes on with its cluster's
/// counts; a cluster's group the job has not is told and tried again.
#[test]
fn an_autoscaled_job_records_its_counts_first_then_follows_its_cluster() {
    let set = policies();
    let p = policy(&set, "RayJob");
    let rayjob = |annotations: Value| {
        let mut ann = json!({ELASTIC: "true"});
        ann.as_object_mut()
            .unwrap()
            .extend(annotations.as_object().cloned().unwrap_or_default());
        json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rj", "namespace": "ns", "uid": "u", "generation": 2,
                "resourceVersion": "9", "annotations": ann},
            "spec": {"submissionMode": "HTTPMode", "rayClusterSpec": {"enableInTreeAutoscaling": true,
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}},
                "workerGroupSpecs": [{"groupName": "w", "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "w"}]}}}]}},
            "status": {"rayClusterName": "rc"}})
    };
    let cluster = |group: &str| {
        json!({"metadata": {"name": "rc", "generation": 5},
               "spec": {"workerGroupSpecs": [{"groupName": group, "replicas": 6}]}})
    };
    let Following::Step(step) = following(&p, &rayjob(json!({})), Some(&cluster("w"))) else {
        panic!("annotations not written first");
    };
    let (ops, event) = job_patch(&step);
    assert!(event.is_none() && step.then == Then::Wait, "{step:?}");
    assert_eq!(ops.len(), 3, "{ops:?}");
    let recorded = json!({
        "kueue.x-k8s.io/raycluster-podset-replica-sizes":
            r#"[{"name":"head","count":1},{"name":"w","count":6}]"#,
        "kueue.x-k8s.io/raycluster-generation": "5"});
    let Following::Job(followed) = following(&p, &rayjob(recorded), Some(&cluster("w"))) else {
        panic!("annotations written again");
    };
    assert_eq!(
        followed["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"],
        6
    );
    let Following::Step(told) = following(&p, &rayjob(json!({})), Some(&cluster("x"))) else {
        panic!("a group the job has not followed");
    };
    assert_eq!(told.then, Then::After(COMPOSE_RETRY));
    assert!(
        matches!(&told.writes[..], [Write::JobEvent(n)] if n.reason == "ErrWorkloadCompose"
            && n.message.starts_with("PodSet name mismatch: RayCluster rc has worker group x")),
        "{told:?}"
    );
}

/// A MultiKueue worker's elastic job runs the prebuilt Workload the
/// manager sent, not slices of its own: its gated pods are let go by that
/// Workload's grants once it is admitted and the job's own. A Workload
/// not admitted, one the job does not own, or a job that is not elastic
/// lets none go.
#[test]
fn a_prebuilt_elastic_jobs_pods_are_let_go_by_its_prebuilt_workload() {
    let w = World::new("Job");
    let mut j = elastic(1, 2);
    j["metadata"]["labels"][keys::PREBUILT_WORKLOAD_LABEL] = json!("wl-sent");
    j["spec"]["suspend"] = json!(false);
    let s = subject(&w.policy, &w.set, &j).unwrap();
    assert!(s.prebuilt && s.slice.is_none());
    let sent = slice(&j, "wl-sent", 0, admitted_at(2), json!({ELASTIC: "true"}));
    let by = |s: &Subject, j: &Value, wl: &api::Workload| {
        ungated_by(&w.policy, s, j, &[], Some(wl)).and_then(|x| x.metadata.name.clone())
    };
    assert_eq!(by(&s, &j, &sent).as_deref(), Some("wl-sent"));
    let waiting = slice(&j, "wl-sent", 0, json!({}), json!({ELASTIC: "true"}));
    assert_eq!(by(&s, &j, &waiting), None);
    let mut unowned = sent.clone();
    unowned.metadata.owner_references = None;
    assert_eq!(by(&s, &j, &unowned), None);
    let mut plain = j.clone();
    plain["metadata"]["annotations"] = json!({});
    let s = subject(&w.policy, &w.set, &plain).unwrap();
    assert_eq!(by(&s, &plain, &sent), None);
    // A job MultiKueue runs on a worker has no pods here to let go.
    let mut away = j.clone();
    away["spec"]["managedBy"] = json!(keys::MULTIKUEUE_CONTROLLER);
    let s = subject(&w.policy, &w.set, &away).unwrap();
    assert_eq!(by(&s, &away, &sent), None);
}
