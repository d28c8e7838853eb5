//! Kueue v0.19.2's tables, ported: `TestWlReconcile`
//! (`pkg/controller/admissionchecks/multikueue/workload_test.go`) and the
//! incremental dispatcher's (`pkg/controller/workloaddispatcher/
//! incrementaldispatcher_test.go`). Each case runs [`step`], applies its
//! actions to a small model of the manager and its workers, and compares
//! the objects that must (not) exist afterwards with upstream's
//! expectations; transition times are ignored as upstream's comparison
//! does.
//!
//! Upstream runs `TestWlReconcile` with `WorkloadIdentifierAnnotations`
//! off (the prebuilt-workload name as a label); so do these, through
//! [`Settings::identifier_annotations`]. Left out, and why:
//!
//! - `missing workload`: nothing to decide — the Workload is neither in the
//!   apiserver nor remembered, so the shell never calls the step.
//! - `failing to read from a worker`: a read error stops the shell before
//!   the step (it retries with backoff); the step sees only what was read.
//! - `creating remote workloads with preemption gates`, `opening preemption
//!   gate for first workload requiring preemption`, `opening preemption gate
//!   for the second workload requiring preemption if timeout elapsed`, `not
//!   opening preemption gate for the second workload if timeout did not
//!   elapse`, `not opening preemption gate for the second workload if timeout
//!   elapsed but it does not require preemption`: they need
//!   `MultiKueueOrchestratedPreemption`, Alpha and off in v0.19.2; the step
//!   does not act on preemption gates.
//!
//! From `TestIncrementalDispatcherReconciler_Reconcile`, `workload not
//! found` (the shell's read). From `TestIncrementalDispatcherNominateWorkers`,
//! the cases that turn a default-on gate off: `config gate disabled —
//! ignores stepSize=10, uses default 3` (`MultiKueueIncrementalDispatcherConfig`)
//! and the four `ordering gate off: …` (`MultiKueueIncrementalDispatcherRespectConfigOrder`):
//! batchgate always takes the configured step size and the config's order.
//!
//! `job_multikueue_adapter_test.go` (the batch/v1 Job as [`BATCH_JOB`]):
//! left out are `remote job is deleted` (the shell executes
//! [`Action::DeleteRemoteJob`]), `FailureToRetrieveLocalJob` and
//! `FailureToRetrieveRemoteJob` (reads are the shell's), and
//! `ElasticJob_RemoteOutOfSync_PatchFailure` (a refused patch is the
//! shell's).
//!
//! Where upstream expects an error from the reconcile, the port expects the
//! [`Trouble`] (or, for a failed write, the shell's failure, simulated by
//! not applying that write).

use std::time::Duration;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use serde_json::{json, Value};

use super::*;

const NS: &str = "ns";
const ORIGIN: &str = "multikueue";
const LOST_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const NOW: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

fn at(offset_secs: i64) -> Time {
    Time(Timestamp::from_second(NOW + offset_secs).unwrap())
}

fn now() -> Time {
    at(0)
}

/// A Workload as upstream's `MakeWorkload("wl1", "ns")` builds it.
#[derive(Clone)]
struct Wl(Value);

impl Wl {
    fn base() -> Self {
        Wl(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": { "name": "wl1", "namespace": NS },
            "spec": { "podSets": [{
                "name": "main", "count": 1,
                "template": { "spec": { "containers": [{ "name": "c", "image": "pause" }], "restartPolicy": "Never" } },
            }]},
        }))
    }

    fn status(&mut self) -> &mut serde_json::Map<String, Value> {
        let v = &mut self.0;
        if !v["status"].is_object() {
            v["status"] = json!({});
        }
        v["status"].as_object_mut().unwrap()
    }

    fn check_at(mut self, name: &str, state: &str, message: &str, ltt: Time) -> Self {
        let c =
            json!({ "name": name, "state": state, "message": message, "lastTransitionTime": ltt });
        let s = self.status();
        let list = s.entry("admissionChecks").or_insert_with(|| json!([]));
        list.as_array_mut().unwrap().push(c);
        self
    }

    fn check(self, name: &str, state: &str, message: &str) -> Self {
        self.check_at(name, state, message, now())
    }

    fn owner(mut self, api_version: &str, kind: &str, name: &str) -> Self {
        self.0["metadata"]["ownerReferences"] = json!([{
            "apiVersion": api_version, "kind": kind, "name": name, "uid": "uid1", "controller": true,
        }]);
        self
    }

    fn job_owned(self) -> Self {
        self.owner("batch/v1", "Job", "job1")
    }

    /// `ReserveQuotaAt(MakeAdmission("q1"), t)`: replaces the conditions.
    fn reserved_at(mut self, t: Time) -> Self {
        let s = self.status();
        s.insert(
            "admission".into(),
            json!({ "clusterQueue": "q1", "podSetAssignments": [{ "name": "main", "count": 1 }] }),
        );
        s.insert(
            "conditions".into(),
            json!([{
                "type": "QuotaReserved", "status": "True", "reason": "AdmittedByTest",
                "message": "Admitted by ClusterQueue q1", "lastTransitionTime": t,
            }]),
        );
        self
    }

    fn reserved(self) -> Self {
        self.reserved_at(now())
    }

    /// `Condition(...)` / `SetStatusCondition`: replaces one of that type.
    fn cond_at(mut self, ty: &str, reason: &str, message: &str, t: Time) -> Self {
        let c = json!({ "type": ty, "status": "True", "reason": reason, "message": message, "lastTransitionTime": t });
        let s = self.status();
        let list = s.entry("conditions").or_insert_with(|| json!([]));
        let list = list.as_array_mut().unwrap();
        match list.iter_mut().find(|x| x["type"] == ty) {
            Some(x) => {
                x["reason"] = json!(reason);
                x["message"] = json!(message);
            }
            None => list.push(c),
        }
        self
    }

    fn cond(self, ty: &str, reason: &str, message: &str) -> Self {
        self.cond_at(ty, reason, message, now())
    }

    fn evicted(self) -> Self {
        self.cond("Evicted", "ByTest", "Evicted by test")
    }

    fn cluster(mut self, name: &str) -> Self {
        self.status().insert("clusterName".into(), json!(name));
        self
    }

    fn nominated(mut self, names: &[&str]) -> Self {
        self.status()
            .insert("nominatedClusterNames".into(), json!(names));
        self
    }

    fn label(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }

    fn origin(self) -> Self {
        self.label(ORIGIN_LABEL, ORIGIN)
    }

    fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["annotations"][k] = json!(v);
        self
    }

    fn elastic(self) -> Self {
        self.annotation(keys::ELASTIC_JOB_ANNOTATION, "true")
    }

    fn pod_sets(mut self, name: &str, count: i32) -> Self {
        self.0["spec"]["podSets"] = json!([{
            "name": name, "count": count,
            "template": { "spec": { "containers": [{ "name": "c", "image": "pause" }], "restartPolicy": "Never" } },
        }]);
        self
    }

    fn deleting(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!(now());
        self.0["metadata"]["finalizers"] = json!([keys::RESOURCE_IN_USE_FINALIZER]);
        self
    }

    fn obj(&self) -> api::Workload {
        serde_json::from_value(self.0.clone()).unwrap()
    }
}

/// A Job as upstream's `MakeJob("job1", "ns").Suspend(false)` builds it.
#[derive(Clone)]
struct Job(Value);

impl Job {
    fn base() -> Self {
        Job(json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": { "name": "job1", "namespace": NS },
            "spec": {
                "parallelism": 1,
                "suspend": false,
                "template": { "spec": { "containers": [{ "name": "c", "image": "pause" }], "restartPolicy": "Never" } },
            },
        }))
    }

    /// `ManagedBy(kueue.MultiKueueControllerName)`: the manager's job.
    fn managed() -> Self {
        let mut j = Job::base();
        j.0["spec"]["managedBy"] = json!(keys::MULTIKUEUE_CONTROLLER);
        j
    }

    /// `PrebuiltWorkloadLabel("wl1").Label(origin, o)`: a worker's job.
    fn remote(origin: &str) -> Self {
        let mut j = Job::base();
        j.0["metadata"]["labels"] =
            json!({ keys::PREBUILT_WORKLOAD_LABEL: "wl1", ORIGIN_LABEL: origin });
        j
    }

    fn active(mut self, n: i32) -> Self {
        self.0["status"]["active"] = json!(n);
        self
    }

    fn complete(mut self) -> Self {
        self.0["status"]["conditions"] = json!([{ "type": "Complete", "status": "True" }]);
        self
    }
}

/// A worker as the case has it.
#[derive(Clone)]
struct W {
    name: &'static str,
    link: Link,
    wl: Option<Wl>,
    job: Option<Job>,
    /// A pod group's pods there.
    members: Vec<Value>,
}

fn worker(name: &'static str) -> W {
    W {
        name,
        link: Link::Connected,
        wl: None,
        job: None,
        members: Vec::new(),
    }
}

impl W {
    fn wl(mut self, wl: Wl) -> Self {
        self.wl = Some(wl);
        self
    }
    fn job(mut self, job: Job) -> Self {
        self.job = Some(job);
        self
    }
    /// Lost with no time known (a client never connected).
    fn link_lost(mut self) -> Self {
        self.link = Link::Lost(None);
        self
    }
    fn lost_since(mut self, t: Time) -> Self {
        self.link = Link::Lost(Some(t));
        self
    }
}

/// The manager and its workers before a pass.
struct Case {
    local: Wl,
    gone: bool,
    check: Option<&'static str>,
    local_job: Option<Job>,
    /// A pod group's pods here.
    local_members: Vec<Value>,
    workers: Vec<W>,
    dispatcher: Dispatcher,
    round_started: Option<Time>,
    /// Workers whose writes fail (upstream's `worker2OnCreateError`).
    failing: Vec<&'static str>,
    /// The one kind dispatched.
    kind: &'static JobKind,
    /// The local Workloads of the same owner (a LeaderWorkerSet's).
    components: Vec<Wl>,
}

fn case(local: Wl) -> Case {
    Case {
        local,
        gone: false,
        check: Some("ac1"),
        local_job: Some(Job::managed()),
        local_members: Vec::new(),
        workers: vec![worker("worker1")],
        dispatcher: Dispatcher::AllAtOnce,
        round_started: None,
        failing: vec![],
        kind: &BATCH_JOB,
        components: vec![],
    }
}

/// The world after the pass: objects as JSON.
#[derive(Debug)]
struct World {
    local: Value,
    local_job: Option<Value>,
    wls: Vec<Option<Value>>,
    jobs: Vec<Option<Value>>,
    events: Vec<(bool, String)>,
    /// The local Workloads woken.
    woken: Vec<String>,
    round_started: bool,
    round_forgotten: bool,
    step: Step,
}

/// RFC 7386.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let t = target.as_object_mut().unwrap();
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

impl Case {
    fn run(&self) -> World {
        let local = self.local.obj();
        let wls: Vec<Option<api::Workload>> = self
            .workers
            .iter()
            .map(|w| w.wl.as_ref().map(Wl::obj))
            .collect();
        let jobs: Vec<Option<Value>> = self
            .workers
            .iter()
            .map(|w| w.job.as_ref().map(|j| j.0.clone()))
            .collect();
        let workers: Vec<Worker<'_>> = self
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| Worker {
                name: w.name,
                link: w.link.clone(),
                workload: wls[i].as_ref(),
                job: jobs[i].as_ref(),
                members: &w.members,
            })
            .collect();
        let local_job = self.local_job.as_ref().map(|j| j.0.clone());
        let now = now();
        let components: Vec<api::Workload> = self.components.iter().map(Wl::obj).collect();
        let components: Vec<&api::Workload> = components.iter().collect();
        let facts = Facts {
            local: &local,
            gone: self.gone,
            check: self.check,
            local_job: local_job.as_ref(),
            local_members: &self.local_members,
            workers: &workers,
            round_started: self.round_started.as_ref(),
            components: &components,
            now: &now,
        };
        let settings = Settings {
            origin: ORIGIN,
            worker_lost_timeout: LOST_TIMEOUT,
            dispatcher: self.dispatcher.clone(),
            kinds: std::slice::from_ref(self.kind),
            identifier_annotations: false,
        };
        let step = step(&facts, &settings);
        let mut world = World {
            local: self.local.0.clone(),
            local_job,
            wls: wls
                .iter()
                .map(|w| w.as_ref().map(|w| serde_json::to_value(w).unwrap()))
                .collect(),
            jobs,
            events: vec![],
            woken: vec![],
            round_started: false,
            round_forgotten: false,
            step: step.clone(),
        };
        let at = |cluster: &str| self.workers.iter().position(|w| w.name == cluster).unwrap();
        for a in &step.actions {
            match a {
                Action::CreateRemoteWorkload { cluster, workload } => {
                    if !self.failing.contains(&cluster.as_str()) {
                        world.wls[at(cluster)] = Some(serde_json::to_value(workload).unwrap());
                    }
                }
                Action::UpdateRemoteWorkloadSpec { cluster, spec } => {
                    world.wls[at(cluster)].as_mut().unwrap()["spec"] = json!(spec);
                }
                Action::DeactivateRemoteWorkload { cluster, condition } => {
                    let wl = world.wls[at(cluster)].as_mut().unwrap();
                    let mut w: api::Workload = serde_json::from_value(wl.clone()).unwrap();
                    let st = w.status.get_or_insert_with(Default::default);
                    let list = st.conditions.get_or_insert_with(Vec::new);
                    list.retain(|c| c.type_ != condition.type_);
                    list.push(condition.clone());
                    *wl = serde_json::to_value(w).unwrap();
                }
                Action::DeleteRemoteJob { cluster, name } => {
                    let i = at(cluster);
                    let named = |j: &Value| j["metadata"]["name"] == json!(name);
                    if world.jobs[i].as_ref().is_some_and(named) {
                        world.jobs[i] = None;
                    } else {
                        assert!(
                            self.workers[i].members.iter().any(named),
                            "the job deleted is one held: {name}"
                        );
                    }
                }
                Action::DeleteRemoteWorkload { cluster, name } => {
                    assert_eq!(name, "wl1");
                    world.wls[at(cluster)] = None;
                }
                Action::CreateRemoteJob { cluster, job } => {
                    world.jobs[at(cluster)] = Some(job.clone());
                }
                Action::PatchRemoteJob {
                    cluster,
                    name,
                    patch,
                } => {
                    let job = world.jobs[at(cluster)].as_mut().unwrap();
                    assert_eq!(job["metadata"]["name"], json!(name));
                    let p: json_patch::Patch =
                        serde_json::from_value(serde_json::to_value(patch).unwrap()).unwrap();
                    json_patch::patch(job, &p).expect("the patch applies to the job read");
                }
                Action::CopyJobStatus { name, status } => {
                    let named = |j: &Value| j["metadata"]["name"] == json!(name);
                    let job = world.local_job.as_mut().unwrap();
                    if named(job) {
                        job["status"] = status.clone();
                    } else {
                        assert!(
                            self.local_members.iter().any(named),
                            "the job written is one read: {name}"
                        );
                    }
                }
                Action::Local(change) => {
                    let patch =
                        change.merge_patch(&serde_json::from_value(world.local.clone()).unwrap());
                    merge(&mut world.local, &patch);
                }
                Action::Event {
                    warning,
                    reason,
                    message,
                } => {
                    assert_eq!(*reason, "MultiKueue");
                    world.events.push((*warning, message.clone()));
                }
                Action::RoundStarted => world.round_started = true,
                Action::ForgetRound => world.round_forgotten = true,
                Action::Wake(names) => world.woken.extend(names.iter().cloned()),
            }
        }
        world
    }
}

/// Upstream's comparison: transition times, empties and the order of the
/// nominated clusters ignored.
fn norm(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, x) in m {
                if k == "lastTransitionTime" || k == "lastProbeTime" {
                    continue;
                }
                let mut x = norm(x);
                if k == "nominatedClusterNames" {
                    if let Value::Array(a) = &mut x {
                        a.sort_by(|p, q| p.as_str().cmp(&q.as_str()));
                    }
                }
                let empty = x.is_null()
                    || x.as_array().is_some_and(Vec::is_empty)
                    || x.as_object().is_some_and(serde_json::Map::is_empty);
                if !empty {
                    out.insert(k.clone(), x);
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        x => x.clone(),
    }
}

/// A Workload through the typed model, as the client would store it.
fn norm_wl(v: &Value) -> Value {
    let wl: api::Workload = serde_json::from_value(v.clone()).unwrap();
    norm(&serde_json::to_value(wl).unwrap())
}

impl World {
    fn local_is(&self, want: Wl) -> &Self {
        assert_eq!(norm_wl(&self.local), norm_wl(&want.0), "manager's workload");
        self
    }
    fn local_job_is(&self, want: Option<Job>) -> &Self {
        assert_eq!(
            self.local_job.as_ref().map(norm),
            want.map(|j| norm(&j.0)),
            "manager's job"
        );
        self
    }
    fn wl_is(&self, i: usize, want: Option<Wl>) -> &Self {
        assert_eq!(
            self.wls[i].as_ref().map(norm_wl),
            want.map(|w| norm_wl(&w.0)),
            "worker{}'s workload",
            i + 1
        );
        self
    }
    fn job_is(&self, i: usize, want: Option<Job>) -> &Self {
        assert_eq!(
            self.jobs[i].as_ref().map(norm),
            want.map(|j| norm(&j.0)),
            "worker{}'s job",
            i + 1
        );
        self
    }
    fn events_are(&self, want: &[(bool, &str)]) -> &Self {
        let want: Vec<(bool, String)> = want.iter().map(|(w, m)| (*w, m.to_string())).collect();
        assert_eq!(self.events, want, "events");
        self
    }
    fn requeue(&self, want: Option<Duration>) -> &Self {
        assert_eq!(self.step.requeue_after, want, "requeue");
        self
    }
    fn trouble(&self, want: Option<Trouble>) -> &Self {
        assert_eq!(self.step.trouble, want, "trouble");
        self
    }
    fn no_actions(&self) -> &Self {
        assert_eq!(self.step.actions, vec![], "actions");
        self
    }
}

fn pending() -> Wl {
    Wl::base().check("ac1", "Pending", "").job_owned()
}

fn admitted_on_worker1() -> Wl {
    Wl::base()
        .check("ac1", "Ready", r#"The workload was admitted on "worker1""#)
        .job_owned()
        .reserved()
}

fn copy() -> Wl {
    Wl::base().origin()
}

// ---- TestWlReconcile ----

// workload_test.go, TestWlReconcile: "deleted regular workload is removed from the cache"
#[test]
fn deleted_regular_workload_is_removed_from_the_cache() {
    let mut c = case(Wl::base().deleting().job_owned());
    c.gone = true;
    c.local_job = Some(Job::base());
    c.run().no_actions().local_job_is(Some(Job::base()));
}

// workload_test.go, TestWlReconcile: "deleted MultiKueue workload is deleted from cache - the worker will be deleted by GC"
#[test]
fn deleted_multikueue_workload_is_deleted_from_cache_the_worker_will_be_deleted_by_gc() {
    let mut c = case(
        Wl::base()
            .deleting()
            .check("ac1", "Rejected", "")
            .job_owned(),
    );
    c.gone = true;
    c.workers = vec![worker("worker1").wl(copy())];
    c.run()
        .no_actions()
        .local_job_is(Some(Job::managed()))
        .wl_is(0, Some(copy()));
}

// workload_test.go, TestWlReconcile: "missing workload (in deleted workload cache)"
#[test]
fn missing_workload_in_deleted_workload_cache() {
    let mut c = case(pending().reserved());
    c.gone = true;
    c.local_job = None;
    c.workers = vec![worker("worker1")
        .wl(copy().reserved())
        .job(Job::remote(ORIGIN))];
    c.run()
        .wl_is(0, None)
        .job_is(0, None)
        .requeue(None)
        .trouble(None);
}

// workload_test.go, TestWlReconcile: "missing workload (in deleted workload cache), reconnecting worker, GC handles cleanup"
#[test]
fn missing_workload_in_deleted_workload_cache_reconnecting_worker_gc_handles_cleanup() {
    let mut c = case(pending().reserved());
    c.gone = true;
    c.local_job = None;
    c.workers = vec![
        worker("worker1")
            .wl(copy().reserved())
            .job(Job::remote(ORIGIN)),
        worker("worker2").lost_since(now()),
    ];
    c.run()
        .wl_is(0, None)
        .job_is(0, None)
        .wl_is(1, None)
        .requeue(None)
        .trouble(None);
}

// workload_test.go, TestWlReconcile: "missing workload (in deleted workload cache), no remote objects"
#[test]
fn missing_workload_in_deleted_workload_cache_no_remote_objects() {
    let mut c = case(pending().reserved());
    c.gone = true;
    c.local_job = None;
    c.run().no_actions().requeue(None).trouble(None);
}

// workload_test.go, TestWlReconcile: "unmanaged wl (no ac) is ignored"
#[test]
fn unmanaged_wl_no_ac_is_ignored() {
    let c = case(Wl::base());
    c.run().no_actions().local_is(Wl::base());
}

// workload_test.go, TestWlReconcile: "unmanaged wl (no parent) is rejected"
#[test]
fn unmanaged_wl_no_parent_is_rejected() {
    let c = case(Wl::base().check("ac1", "Pending", ""));
    c.run().local_is(Wl::base().check(
        "ac1",
        "Rejected",
        r#"No multikueue adapter found, Previously: "Pending""#,
    ));
}

// workload_test.go, TestWlReconcile: "unmanaged wl (owned by pod) is rejected"
#[test]
fn unmanaged_wl_owned_by_pod_is_rejected() {
    let c = case(
        Wl::base()
            .owner("v1", "Pod", "pod1")
            .check("ac1", "Pending", ""),
    );
    c.run()
        .local_is(Wl::base().owner("v1", "Pod", "pod1").check(
            "ac1",
            "Rejected",
            r#"No multikueue adapter found for owner kind "/v1, Kind=Pod", Previously: "Pending""#,
        ));
}

// workload_test.go, TestWlReconcile: "unmanaged wl (job not managed by multikueue) is rejected"
#[test]
fn unmanaged_wl_job_not_managed_by_multikueue_is_rejected() {
    let mut c = case(pending());
    c.local_job = Some(Job::base());
    c.run()
        .local_job_is(Some(Job::base()))
        .local_is(Wl::base().job_owned().check(
            "ac1",
            "Rejected",
            r#"The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "", Previously: "Pending""#,
        ));
}

// workload_test.go, TestWlReconcile: "reconnecting clients are skipped"
#[test]
fn reconnecting_clients_are_skipped() {
    let mut c = case(pending());
    c.workers = vec![worker("worker1"), worker("worker2").lost_since(now())];
    c.run()
        .no_actions()
        .local_is(pending())
        .local_job_is(Some(Job::managed()))
        .requeue(Some(LOST_TIMEOUT))
        .trouble(None);
}

// workload_test.go, TestWlReconcile: "wl without reservation, reconnecting worker with remote workload, requeues for cleanup"
#[test]
fn wl_without_reservation_reconnecting_worker_with_remote_workload_requeues_for_cleanup() {
    let mut c = case(pending());
    c.workers = vec![
        worker("worker1"),
        worker("worker2").lost_since(now()).wl(copy()),
    ];
    c.run()
        .no_actions()
        .local_is(pending())
        .wl_is(1, Some(copy()))
        .requeue(Some(LOST_TIMEOUT));
}

// workload_test.go, TestWlReconcile: "wl without reservation, clears the workload objects"
#[test]
fn wl_without_reservation_clears_the_workload_objects() {
    let mut c = case(pending());
    c.workers = vec![worker("worker1").wl(copy())];
    c.run()
        .local_is(pending())
        .local_job_is(Some(Job::managed()))
        .wl_is(0, None)
        .requeue(None);
}

// workload_test.go, TestWlReconcile: "wl with reservation, creates remote workloads, worker2 fails"
// (upstream's create error on worker2 is the shell's: the write is not applied)
#[test]
fn wl_with_reservation_creates_remote_workloads_worker2_fails() {
    let mut c = case(pending().reserved());
    c.workers = vec![worker("worker1"), worker("worker2")];
    c.failing = vec!["worker2"];
    c.run()
        .local_is(pending().reserved().nominated(&["worker1", "worker2"]))
        .wl_is(0, Some(copy()))
        .wl_is(1, None)
        .job_is(0, None);
}

// workload_test.go, TestWlReconcile: "wl with reservation, creates missing workloads"
#[test]
fn wl_with_reservation_creates_missing_workloads() {
    let mut c = case(pending().reserved());
    c.workers = vec![worker("worker1").wl(copy()), worker("worker2")];
    let w = c.run();
    w.local_is(pending().reserved().nominated(&["worker1", "worker2"]))
        .wl_is(0, Some(copy()))
        .wl_is(1, Some(copy()))
        .trouble(None);
    // Only the missing copy is created.
    let created = w
        .step
        .actions
        .iter()
        .filter(|a| matches!(a, Action::CreateRemoteWorkload { .. }))
        .count();
    assert_eq!(created, 1);
}

// workload_test.go, TestWlReconcile: "remote wl with reservation but not admitted - other workers not deleted"
#[test]
fn remote_wl_with_reservation_but_not_admitted_other_workers_not_deleted() {
    let mut c = case(pending().reserved());
    c.workers = vec![
        worker("worker1").wl(copy().reserved()),
        worker("worker2").wl(copy()),
    ];
    c.run()
        .local_is(pending().reserved().nominated(&["worker1", "worker2"]))
        .local_job_is(Some(Job::managed()))
        .wl_is(0, Some(copy().reserved()))
        .wl_is(1, Some(copy()));
}

fn admitted_copy() -> Wl {
    copy().reserved().cond("Admitted", "Admitted", "")
}

// workload_test.go, TestWlReconcile: "remote wl admitted - other workers deleted"
#[test]
fn remote_wl_admitted_other_workers_deleted() {
    let mut c = case(pending().reserved());
    c.workers = vec![
        worker("worker1").wl(admitted_copy()),
        worker("worker2").wl(copy()),
    ];
    let w = c.run();
    w.local_is(admitted_on_worker1().cluster("worker1"))
        .local_job_is(Some(Job::managed()))
        .wl_is(0, Some(admitted_copy()))
        .job_is(0, Some(Job::remote(ORIGIN)))
        .wl_is(1, None)
        .events_are(&[(false, r#"The workload was admitted on "worker1""#)])
        .requeue(Some(LOST_TIMEOUT));
    // The order the shell executes: the losers' copies go before the job is
    // created on the winner; the check turns Ready last.
    let kinds: Vec<&str> = w
        .step
        .actions
        .iter()
        .map(|a| match a {
            Action::DeleteRemoteWorkload { .. } => "delete-workload",
            Action::CreateRemoteJob { .. } => "create-job",
            Action::Local(_) => "local",
            Action::Event { .. } => "event",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["delete-workload", "create-job", "local", "event"]);
}

/// Not upstream's: worker1 was lost, the Workload requeued and admitted
/// on worker2; worker1 comes back with its old copy, admitted earlier. The
/// Workload's `clusterName` decides: worker1's stale copy and job are
/// removed, worker2's job keeps running (Kueue picks the older copy and
/// deletes the running one).
#[test]
fn a_returning_workers_stale_copy_does_not_take_the_workload_back() {
    let stale = copy()
        .reserved()
        .cond_at("Admitted", "Admitted", "", at(-600));
    let current = admitted_copy();
    let local = Wl::base()
        .check("ac1", "Ready", r#"The workload was admitted on "worker2""#)
        .job_owned()
        .reserved()
        .cluster("worker2");
    let mut c = case(local);
    c.workers = vec![
        worker("worker1").wl(stale).job(Job::remote(ORIGIN)),
        worker("worker2")
            .wl(current.clone())
            .job(Job::remote(ORIGIN)),
    ];
    let w = c.run();
    w.wl_is(0, None)
        .job_is(0, None)
        .wl_is(1, Some(current))
        .job_is(1, Some(Job::remote(ORIGIN)));
}

// workload_test.go, TestWlReconcile: "admitting remote is kept when another worker's remote is out of sync"
#[test]
fn admitting_remote_is_kept_when_another_workers_remote_is_out_of_sync() {
    let mut c = case(admitted_on_worker1().cluster("worker1"));
    c.workers = vec![
        worker("worker1").wl(admitted_copy()),
        worker("worker2").wl(copy().pod_sets("different-name", 1)),
    ];
    c.run()
        .local_is(admitted_on_worker1().cluster("worker1"))
        .local_job_is(Some(Job::managed()))
        .wl_is(0, Some(admitted_copy()))
        .job_is(0, Some(Job::remote(ORIGIN)))
        .wl_is(1, None)
        // Kueue records "The workload was admitted on "worker1"" again on
        // this pass; batchgate records it when the check turns Ready only.
        .events_are(&[]);
}

// workload_test.go, TestWlReconcile: "worker-lost grace applies when the admitting worker is unreachable even if another worker's remote is out of sync"
#[test]
fn worker_lost_grace_applies_when_the_admitting_worker_is_unreachable_even_if_another_workers_remote_is_out_of_sync(
) {
    let local = Wl::base()
        .check_at(
            "ac1",
            "Ready",
            r#"The workload was admitted on "worker1""#,
            at(-(LOST_TIMEOUT.as_secs() as i64) * 3 / 2),
        )
        .cluster("worker1")
        .job_owned()
        .reserved();
    let mut c = case(local.clone());
    c.workers = vec![
        worker("worker1").lost_since(now()),
        worker("worker2").wl(copy().pod_sets("different-name", 1)),
    ];
    c.run()
        .local_is(local)
        .local_job_is(Some(Job::managed()))
        .wl_is(1, None)
        .requeue(Some(LOST_TIMEOUT));
}

// workload_test.go, TestWlReconcile: "handle workload evicted on manager cluster"
#[test]
fn handle_workload_evicted_on_manager_cluster() {
    let local = admitted_on_worker1().cluster("worker1").evicted();
    let evicted_copy = copy().reserved().cond(
        "Evicted",
        "DeactivatedDueToEvictedOnManagerCluster",
        "Evicted on manager: Evicted by test",
    );
    let mut c = case(local.clone());
    c.local_job = Some(Job::managed().active(1));
    c.workers = vec![
        worker("worker1")
            .wl(evicted_copy.clone())
            .job(Job::remote(ORIGIN)),
        worker("worker2").wl(Wl::base()),
    ];
    c.run()
        .local_is(local)
        .local_job_is(Some(Job::managed()))
        .wl_is(0, Some(evicted_copy))
        .job_is(0, Some(Job::remote(ORIGIN)))
        .wl_is(1, Some(Wl::base()))
        .events_are(&[]);
}

// workload_test.go, TestWlReconcile: "handle workload evicted on worker cluster"
#[test]
fn handle_workload_evicted_on_worker_cluster() {
    let evicted_copy = copy()
        .reserved()
        .cond(
            "Evicted",
            "DeactivatedDueToEvictedOnWorkerCluster",
            "Evicted on worker: Evicted by test",
        )
        .evicted();
    let mut c = case(admitted_on_worker1().cluster("worker1"));
    c.local_job = Some(Job::managed().active(1));
    c.workers = vec![
        worker("worker1")
            .wl(evicted_copy.clone())
            .job(Job::remote(ORIGIN).active(1)),
        worker("worker2").wl(Wl::base()),
    ];
    let message = r#"Workload evicted on worker cluster: "worker1", resetting for re-admission. Previously: "Ready""#;
    c.run()
        .local_is(
            Wl::base()
                .check("ac1", "Retry", message)
                .job_owned()
                .reserved()
                .cluster("worker1"),
        )
        .local_job_is(Some(Job::managed().active(1)))
        .wl_is(0, Some(evicted_copy))
        .job_is(0, Some(Job::remote(ORIGIN).active(1)))
        .wl_is(1, Some(Wl::base()))
        .events_are(&[(false, message)]);
}

fn out_of_sync_copy() -> Wl {
    copy().reserved().cond(
        "Finished",
        "OutOfSync",
        "The prebuilt workload is out of sync with its user job",
    )
}

// workload_test.go, TestWlReconcile: "remote wl finished OutOfSync: reset admission check to Retry instead of finishing the local workload"
#[test]
fn remote_wl_finished_out_of_sync_reset_admission_check_to_retry_instead_of_finishing_the_local_workload(
) {
    let mut c = case(admitted_on_worker1().cluster("worker1"));
    c.local_job = Some(Job::managed().active(1));
    c.workers = vec![worker("worker1")
        .wl(out_of_sync_copy())
        .job(Job::remote(ORIGIN))];
    let message = r#"Remote workload on worker cluster "worker1" is out of sync with its user job, resetting for re-dispatch, Previously: "Ready""#;
    c.run()
        .local_is(
            Wl::base()
                .check("ac1", "Retry", message)
                .job_owned()
                .reserved()
                .cluster("worker1"),
        )
        .local_job_is(Some(Job::managed().active(1)))
        .wl_is(0, Some(out_of_sync_copy()))
        .job_is(0, Some(Job::remote(ORIGIN)))
        .events_are(&[(true, message)]);
}

// workload_test.go, TestWlReconcile: "remote wl finished OutOfSync but admission check already Retry: intercept without finishing (idempotent re-reconcile)"
#[test]
fn remote_wl_finished_out_of_sync_but_admission_check_already_retry_intercept_without_finishing_idempotent_re_reconcile(
) {
    let message = r#"Remote workload on worker cluster "worker1" is out of sync with its user job, resetting for re-dispatch, Previously: "Ready""#;
    let local = Wl::base()
        .check("ac1", "Retry", message)
        .job_owned()
        .reserved()
        .cluster("worker1");
    let mut c = case(local.clone());
    c.local_job = Some(Job::managed().active(1));
    c.workers = vec![worker("worker1")
        .wl(out_of_sync_copy())
        .job(Job::remote(ORIGIN))];
    c.run()
        .no_actions()
        .local_is(local)
        .wl_is(0, Some(out_of_sync_copy()))
        .job_is(0, Some(Job::remote(ORIGIN)));
}

fn finished_copy() -> Wl {
    copy().reserved().cond("Finished", "ByTest", "by test")
}

// workload_test.go, TestWlReconcile: "remote wl is finished, but the remote controller object must be owned before SyncJob"
#[test]
fn remote_wl_is_finished_but_the_remote_controller_object_must_be_owned_before_sync_job() {
    let mut c = case(admitted_on_worker1());
    c.workers = vec![worker("worker1")
        .wl(finished_copy())
        .job(Job::remote("other-origin").complete())];
    c.run()
        .no_actions()
        .local_is(admitted_on_worker1())
        .local_job_is(Some(Job::managed()))
        .wl_is(0, Some(finished_copy()))
        .job_is(0, Some(Job::remote("other-origin").complete()))
        .trouble(Some(Trouble::RemoteJobNotOwned {
            cluster: "worker1".into(),
            kind: "Job".into(),
            name: "job1".into(),
            origin: ORIGIN.into(),
        }));
}

// workload_test.go, TestWlReconcile: "remote wl is finished, the local workload and Job are marked completed "
#[test]
fn remote_wl_is_finished_the_local_workload_and_job_are_marked_completed() {
    let mut c = case(admitted_on_worker1());
    c.workers = vec![worker("worker1")
        .wl(finished_copy())
        .job(Job::remote(ORIGIN).complete())];
    c.run()
        .local_is(admitted_on_worker1().cond("Finished", "ByTest", "by test"))
        .local_job_is(Some(Job::managed().complete()))
        .wl_is(0, Some(finished_copy()))
        .job_is(0, Some(Job::remote(ORIGIN).complete()))
        .trouble(None);
}

// workload_test.go, TestWlReconcile: "the local Job is marked finished, the remote objects are removed"
#[test]
fn the_local_job_is_marked_finished_the_remote_objects_are_removed() {
    let local = Wl::base()
        .check(
            "ac1",
            "Pending",
            r#"The workload was admitted on "worker1""#,
        )
        .job_owned()
        .reserved()
        .cond("Finished", "ByTest", "by test");
    let mut c = case(local.clone());
    c.local_job = Some(Job::managed().complete());
    c.workers = vec![worker("worker1")
        .wl(finished_copy())
        .job(Job::remote(ORIGIN).complete())];
    c.run()
        .local_is(local)
        .local_job_is(Some(Job::managed().complete()))
        .wl_is(0, None)
        .job_is(0, None);
}

fn ready_on_worker1() -> Wl {
    Wl::base()
        .check("ac1", "Ready", r#"The workload was admitted on "worker1""#)
        .cluster("worker1")
        .job_owned()
        .reserved()
}

fn half_lost() -> i64 {
    LOST_TIMEOUT.as_secs() as i64 / 2
}

// workload_test.go, TestWlReconcile: "the local workload admission check stays Ready if the reservation was lost less than WorkerLostTimeout ago"
#[test]
fn the_local_workload_admission_check_stays_ready_if_the_reservation_was_lost_less_than_worker_lost_timeout_ago(
) {
    let mut c = case(ready_on_worker1());
    c.workers = vec![worker("worker1").lost_since(at(-half_lost()))];
    c.run()
        .no_actions()
        .local_is(ready_on_worker1())
        .local_job_is(Some(Job::managed()))
        .requeue(Some(LOST_TIMEOUT / 2));
}

// workload_test.go, TestWlReconcile: "the local workload's admission check is set to Retry if the reservation was lost more than WorkerLostTimeout ago"
#[test]
fn the_local_workloads_admission_check_is_set_to_retry_if_the_reservation_was_lost_more_than_worker_lost_timeout_ago(
) {
    let mut c = case(ready_on_worker1());
    c.workers = vec![worker("worker1").lost_since(at(-3 * half_lost()))];
    c.run()
        .local_is(
            Wl::base()
                .check(
                    "ac1",
                    "Retry",
                    r#"Admitting remote lost, Previously: "Ready""#,
                )
                .cluster("worker1")
                .job_owned()
                .reserved(),
        )
        .local_job_is(Some(Job::managed()))
        .requeue(None);
}

// workload_test.go, TestWlReconcile: "the local workload is NOT evicted when the admitting cluster is only reconnecting, even if the admission check transition time is old"
#[test]
fn the_local_workload_is_not_evicted_when_the_admitting_cluster_is_only_reconnecting_even_if_the_admission_check_transition_time_is_old(
) {
    let local = Wl::base()
        .check_at(
            "ac1",
            "Ready",
            r#"The workload was admitted on "worker1""#,
            at(-3 * half_lost()),
        )
        .cluster("worker1")
        .job_owned()
        .reserved();
    let mut c = case(local.clone());
    c.workers = vec![worker("worker1").lost_since(now())];
    c.run()
        .no_actions()
        .local_is(local)
        .requeue(Some(LOST_TIMEOUT));
}

// workload_test.go, TestWlReconcile: "the local workload IS retried when the reservation stays lost past the WorkerLostTimeout"
#[test]
fn the_local_workload_is_retried_when_the_reservation_stays_lost_past_the_worker_lost_timeout() {
    let mut c = case(ready_on_worker1());
    c.workers = vec![worker("worker1").lost_since(at(-3 * half_lost()))];
    let w = c.run();
    w.local_is(
        Wl::base()
            .check(
                "ac1",
                "Retry",
                r#"Admitting remote lost, Previously: "Ready""#,
            )
            .cluster("worker1")
            .job_owned()
            .reserved(),
    );
    // The transition time moves with the state.
    let Some(Action::Local(LocalStatus { check: Some(c), .. })) = w.step.actions.first() else {
        panic!("{:?}", w.step.actions);
    };
    assert_eq!(c.last_transition_time, now());
}

// workload_test.go, TestWlReconcile: "the local workload is retried immediately when the admitting cluster is reachable but its remote workload is gone"
#[test]
fn the_local_workload_is_retried_immediately_when_the_admitting_cluster_is_reachable_but_its_remote_workload_is_gone(
) {
    let c = case(ready_on_worker1());
    c.run()
        .local_is(
            Wl::base()
                .check(
                    "ac1",
                    "Retry",
                    r#"Admitting remote no longer exists, Previously: "Ready""#,
                )
                .cluster("worker1")
                .job_owned()
                .reserved(),
        )
        .local_job_is(Some(Job::managed()));
}

// workload_test.go, TestWlReconcile: "the local workload is retried when the admission check is Ready but no admitting cluster is recorded"
#[test]
fn the_local_workload_is_retried_when_the_admission_check_is_ready_but_no_admitting_cluster_is_recorded(
) {
    let c = case(admitted_on_worker1());
    c.run().local_is(
        Wl::base()
            .check(
                "ac1",
                "Retry",
                r#"Admission check is Ready but no admitting cluster is recorded; this is unexpected, please report it, Previously: "Ready""#,
            )
            .job_owned()
            .reserved(),
    );
}

// workload_test.go, TestWlReconcile: "worker reconnects after the local workload is requeued, remote objects are deleted"
#[test]
fn worker_reconnects_after_the_local_workload_is_requeued_remote_objects_are_deleted() {
    let local = Wl::base().check("ac1", "Pending", "Requeued").job_owned();
    let mut c = case(local.clone());
    c.workers = vec![worker("worker1")
        .wl(copy().reserved())
        .job(Job::remote(ORIGIN))];
    c.run()
        .local_is(local)
        .local_job_is(Some(Job::managed()))
        .wl_is(0, None)
        .job_is(0, None);
}

fn elastic_ready() -> Wl {
    Wl::base()
        .elastic()
        .check("ac1", "Ready", r#"The workload was admitted on "worker1""#)
        .job_owned()
}

fn hour_old_copy() -> Wl {
    copy().reserved_at(at(-3600))
}

// workload_test.go, TestWlReconcile: "elastic job finished local workload via replacement is ignored"
#[test]
fn elastic_job_finished_local_workload_via_replacement_is_ignored() {
    let local = elastic_ready()
        .reserved()
        .cond("Finished", "WorkloadSliceReplaced", "")
        .cluster("worker1");
    let mut c = case(local.clone());
    c.workers = vec![
        worker("worker1")
            .wl(hour_old_copy())
            .job(Job::remote(ORIGIN)),
        worker("worker2"),
    ];
    c.run()
        .no_actions()
        .local_is(local)
        .wl_is(0, Some(copy().reserved()))
        .job_is(0, Some(Job::remote(ORIGIN)))
        .wl_is(1, None);
}

// workload_test.go, TestWlReconcile: "elastic job local workload without quota reservation"
#[test]
fn elastic_job_local_workload_without_quota_reservation() {
    let local = elastic_ready().cluster("worker1");
    let mut c = case(local.clone());
    c.workers = vec![
        worker("worker1")
            .wl(hour_old_copy())
            .job(Job::remote(ORIGIN)),
        worker("worker2"),
    ];
    c.run()
        .local_is(local)
        .local_job_is(Some(Job::managed()))
        .wl_is(0, None)
        .job_is(0, None)
        .wl_is(1, None);
}

// workload_test.go, TestWlReconcile: "elastic job local scaled-up workload slice without quota reservation"
#[test]
fn elastic_job_local_scaled_up_workload_slice_without_quota_reservation() {
    let local = elastic_ready()
        .annotation(keys::SLICE_REPLACEMENT_FOR_ANNOTATION, "old-slice")
        .cluster("worker1");
    let mut c = case(local.clone());
    c.workers = vec![
        worker("worker1")
            .wl(hour_old_copy())
            .job(Job::remote(ORIGIN)),
        worker("worker2"),
    ];
    c.run()
        .no_actions()
        .local_is(local)
        .wl_is(0, Some(copy().reserved()))
        .job_is(0, Some(Job::remote(ORIGIN)));
}

// workload_test.go, TestWlReconcile: "elastic job local workload out-of-sync other than scaled-down"
#[test]
fn elastic_job_local_workload_out_of_sync_other_than_scaled_down() {
    let local = Wl::base()
        .elastic()
        .job_owned()
        .pod_sets("different-name", 1)
        .check("ac1", "Ready", r#"The workload was admitted on "worker1""#)
        .reserved()
        .cluster("worker1");
    let mut c = case(local);
    c.workers = vec![
        worker("worker1")
            .wl(hour_old_copy())
            .job(Job::remote(ORIGIN)),
        worker("worker2"),
    ];
    c.run()
        .local_is(
            Wl::base()
                .elastic()
                .job_owned()
                .pod_sets("different-name", 1)
                .check(
                    "ac1",
                    "Retry",
                    r#"Admitting remote no longer exists, Previously: "Ready""#,
                )
                .reserved()
                .cluster("worker1"),
        )
        .local_job_is(Some(Job::managed()))
        .wl_is(0, None)
        .job_is(0, None)
        .wl_is(1, None);
}

// batchgate (Kueue's Job adapter in the reconcile): the admitting worker's
// job of an elastic job takes the local job's parallelism as its slice
// shrinks; while the local job has grown past the slice the pass is for,
// the worker's job is left for the replacing slice's pass.
#[test]
fn the_admitting_workers_elastic_job_follows_the_local_parallelism() {
    let elastic = |mut j: Job, parallelism: i64| {
        j.0["metadata"]["annotations"] = json!({ keys::ELASTIC_JOB_ANNOTATION: "true" });
        j.0["spec"]["parallelism"] = json!(parallelism);
        j
    };
    let local = elastic_ready().reserved().cluster("worker1");
    for (local_parallelism, want) in [(1, 1), (3, 2)] {
        let mut c = case(local.clone());
        c.local_job = Some(elastic(Job::managed(), local_parallelism));
        c.workers = vec![worker("worker1")
            .wl(admitted_copy())
            .job(elastic(Job::remote(ORIGIN), 2))];
        let w = c.run();
        w.job_is(0, Some(elastic(Job::remote(ORIGIN), want)));
        let patched = w
            .step
            .actions
            .iter()
            .any(|a| matches!(a, Action::PatchRemoteJob { .. }));
        assert_eq!(patched, want == 1, "local parallelism {local_parallelism}");
    }
}

// ---- TestIncrementalDispatcherReconciler_Reconcile ----
// Upstream asserts only that these pass without error and (by the fake
// client) without nominating; here: the step nominates nothing.

fn incremental(local: Wl) -> Case {
    let mut c = case(local.job_owned());
    c.workers = vec![worker("cluster1")];
    c.dispatcher = Dispatcher::named(INCREMENTAL, None);
    c
}

fn nominates(w: &World) -> bool {
    w.round_started
        || w.step.actions.iter().any(|a| {
            matches!(
                a,
                Action::Local(LocalStatus {
                    nominated: Some(_),
                    ..
                })
            )
        })
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherReconciler_Reconcile: "workload deleted"
#[test]
fn workload_deleted() {
    let c = incremental(Wl::base().deleting());
    assert!(!nominates(&c.run()));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherReconciler_Reconcile: "admission check nil"
#[test]
fn admission_check_nil() {
    let c = incremental(Wl::base());
    assert!(!nominates(&c.run()));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherReconciler_Reconcile: "admission check is rejected"
#[test]
fn admission_check_is_rejected() {
    let c = incremental(Wl::base().check("ac1", "Rejected", ""));
    c.run().no_actions();
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherReconciler_Reconcile: "admission check is ready"
#[test]
fn admission_check_is_ready() {
    let c = incremental(Wl::base().check("ac1", "Ready", ""));
    assert!(!nominates(&c.run()));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherReconciler_Reconcile: "already assigned to cluster"
#[test]
fn already_assigned_to_cluster() {
    let c = incremental(Wl::base().cluster("assigned").check("ac1", "Pending", ""));
    assert!(!nominates(&c.run()));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherReconciler_Reconcile: "workload is already finished"
#[test]
fn workload_is_already_finished() {
    let c = incremental(
        Wl::base()
            .cond("Finished", "ByTest", "Finished by test")
            .check("ac1", "Pending", ""),
    );
    assert!(!nominates(&c.run()));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherReconciler_Reconcile: "workload has quota reserved"
// (despite its name, the Workload has no reservation: nothing to nominate)
#[test]
fn workload_has_quota_reserved() {
    let c = incremental(Wl::base().check("ac1", "Pending", ""));
    assert!(!nominates(&c.run()));
}

// batchgate: the step folds the incremental round into the pass — the
// first round is nominated and copied in one pass, the shell remembers the
// round's start, and a round in progress only waits.
#[test]
fn incremental_dispatcher_nominates_a_round_and_copies_to_it() {
    let mut c = case(pending().reserved());
    c.workers = vec![worker("worker1"), worker("worker2")];
    c.dispatcher = Dispatcher::Incremental {
        step_size: 1,
        round_timeout: DEFAULT_ROUND_TIMEOUT,
    };
    let w = c.run();
    assert!(w.round_started);
    w.local_is(pending().reserved().nominated(&["worker1"]))
        .wl_is(0, Some(copy()))
        .wl_is(1, None)
        .requeue(None);

    let mut c = case(pending().reserved().nominated(&["worker1"]));
    c.workers = vec![worker("worker1").wl(copy()), worker("worker2")];
    c.dispatcher = Dispatcher::Incremental {
        step_size: 1,
        round_timeout: DEFAULT_ROUND_TIMEOUT,
    };
    c.round_started = Some(at(-60));
    c.run()
        .no_actions()
        .requeue(Some(DEFAULT_ROUND_TIMEOUT - Duration::from_secs(60)));
}

// batchgate: an external dispatcher's nomination is followed as written; a
// nominated cluster not connected is trouble after the rest is synced.
#[test]
fn external_dispatcher_nomination_is_followed() {
    let mut c = case(pending().reserved().nominated(&["worker2", "worker3"]));
    c.workers = vec![
        worker("worker1").wl(copy()),
        worker("worker2"),
        worker("worker3").lost_since(now()),
    ];
    c.dispatcher = Dispatcher::named("example.com/dispatcher", None);
    c.run()
        .wl_is(0, None)
        .wl_is(1, Some(copy()))
        .wl_is(2, None)
        .trouble(Some(Trouble::NominatedClustersNotConnected(vec![
            "worker3".into(),
        ])));
}

// batchgate: with WorkloadIdentifierAnnotations on (Kueue's default) the
// prebuilt-workload name goes on the worker's job as an annotation; the
// Job controller's template labels and the selector are dropped.
#[test]
fn remote_job_carries_the_prebuilt_name_as_annotation_by_default() {
    let local = pending().reserved();
    let copy = admitted_copy().obj();
    let mut job = Job::managed().0;
    job["spec"]["selector"] =
        json!({ "matchLabels": { "batch.kubernetes.io/controller-uid": "u" } });
    job["spec"]["template"]["metadata"]["labels"] = json!({
        "controller-uid": "u", "batch.kubernetes.io/controller-uid": "u",
        "job-name": "job1", "batch.kubernetes.io/job-name": "job1", "app": "x",
    });
    let workers = [Worker {
        name: "worker1",
        link: Link::Connected,
        workload: Some(&copy),
        job: None,
        members: &[],
    }];
    let wl = local.obj();
    let now = now();
    let facts = Facts {
        local: &wl,
        gone: false,
        check: Some("ac1"),
        local_job: Some(&job),
        local_members: &[],
        workers: &workers,
        round_started: None,
        components: &[],
        now: &now,
    };
    let settings = Settings {
        origin: ORIGIN,
        worker_lost_timeout: LOST_TIMEOUT,
        dispatcher: Dispatcher::AllAtOnce,
        kinds: std::slice::from_ref(&*BATCH_JOB),
        identifier_annotations: true,
    };
    let s = step(&facts, &settings);
    let created = s.actions.iter().find_map(|a| match a {
        Action::CreateRemoteJob { job, .. } => Some(job.clone()),
        _ => None,
    });
    let created = created.unwrap();
    assert_eq!(
        created["metadata"],
        json!({
            "name": "job1", "namespace": NS,
            "labels": { ORIGIN_LABEL: ORIGIN },
            "annotations": { keys::PREBUILT_WORKLOAD_LABEL: "wl1" },
        })
    );
    assert!(created["spec"].get("managedBy").is_none());
    assert!(created["spec"].get("selector").is_none());
    assert_eq!(
        created["spec"]["template"]["metadata"]["labels"],
        json!({ "batch.kubernetes.io/job-name": "job1", "app": "x" })
    );
}

// batchgate: the local job still suspended while the worker's runs — the
// status is not copied (a start time would freeze the local spec), the
// local job is marked Suspended for the apiserver, and the pass comes back
// soon (Kueue's TestReconcileGroup_SyncDeferred_ShortRequeue's premise).
#[test]
fn suspended_local_job_defers_the_status_copy() {
    let mut c = case(pending().reserved());
    let mut local_job = Job::managed();
    local_job.0["spec"]["suspend"] = json!(true);
    c.local_job = Some(local_job);
    c.workers = vec![worker("worker1")
        .wl(admitted_copy())
        .job(Job::remote(ORIGIN).active(1))];
    let w = c.run();
    w.requeue(Some(SYNC_DEFERRED_REQUEUE));
    let status = &w.local_job.as_ref().unwrap()["status"];
    assert!(status.get("active").is_none());
    assert_eq!(status["conditions"][0]["type"], "Suspended");
    assert_eq!(status["conditions"][0]["reason"], "MultiKueueAdapter");
    assert_eq!(
        status["conditions"][0]["message"],
        "Set by MultiKueue adapter"
    );
}

// ---- TestIncrementalDispatcherNominateWorkers ----

/// Upstream's setup: a round that ran out (`advanceRoundTime`), one just
/// started (nominated already), or none.
fn nominate(clusters: &[&str], nominated: &[&str], step: Option<usize>, expired: bool) -> Round {
    let nominated: Vec<String> = nominated.iter().map(|s| s.to_string()).collect();
    let started = if expired {
        Some(at(-(DEFAULT_ROUND_TIMEOUT.as_secs() as i64) - 1))
    } else if !nominated.is_empty() {
        Some(now())
    } else {
        None
    };
    next_round(
        &nominated,
        clusters,
        step.unwrap_or(DEFAULT_STEP_SIZE),
        DEFAULT_ROUND_TIMEOUT,
        started.as_ref(),
        &now(),
    )
}

fn next(names: &[&str]) -> Round {
    Round::Next(names.iter().map(|s| s.to_string()).collect())
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "one remote"
#[test]
fn one_remote() {
    assert_eq!(nominate(&["A"], &[], None, false), next(&["A"]));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "two remotes"
#[test]
fn two_remotes() {
    assert_eq!(nominate(&["B", "A"], &[], None, false), next(&["B", "A"]));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "three remotes"
#[test]
fn three_remotes() {
    assert_eq!(
        nominate(&["C", "B", "A"], &[], None, false),
        next(&["C", "B", "A"])
    );
}

const FIFTEEN: [&str; 15] = [
    "O", "N", "M", "L", "K", "J", "I", "H", "G", "F", "E", "D", "C", "B", "A",
];

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "fifteen remotes"
#[test]
fn fifteen_remotes() {
    assert_eq!(nominate(&FIFTEEN, &[], None, false), next(&["O", "N", "M"]));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "all already nominated (3)"
#[test]
fn all_already_nominated_3() {
    assert_eq!(
        nominate(&["C", "B", "A"], &["C", "B", "A"], None, true),
        Round::NoMoreWorkers
    );
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "all already nominated (1)"
#[test]
fn all_already_nominated_1() {
    assert_eq!(nominate(&["A"], &["A"], None, true), Round::NoMoreWorkers);
}

const SIX: [&str; 6] = ["F", "E", "D", "C", "B", "A"];

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "round expired, next set nominated"
#[test]
fn round_expired_next_set_nominated() {
    assert_eq!(nominate(&SIX, &["F", "E", "D"], None, true), next(&SIX));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "round in progress, keep current"
#[test]
fn round_in_progress_keep_current() {
    assert_eq!(
        nominate(&SIX, &["F", "E", "D"], None, false),
        Round::InProgress(DEFAULT_ROUND_TIMEOUT)
    );
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "round expired, nominate all"
#[test]
fn round_expired_nominate_all() {
    let eight = ["H", "G", "F", "E", "D", "C", "B", "A"];
    assert_eq!(
        nominate(&eight, &["H", "G", "F", "E", "D", "C"], None, true),
        next(&eight)
    );
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "no remotes"
#[test]
fn no_remotes() {
    assert_eq!(nominate(&[], &[], None, false), Round::NoMoreWorkers);
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "stepSize=2, five remotes — first batch is exactly 2"
#[test]
fn step_size_2_five_remotes_first_batch_is_exactly_2() {
    let five = ["E", "D", "C", "B", "A"];
    assert_eq!(nominate(&five, &[], Some(2), false), next(&["E", "D"]));
}

// incrementaldispatcher_test.go, TestIncrementalDispatcherNominateWorkers: "stepSize=2, round expired — second batch is next 2"
#[test]
fn step_size_2_round_expired_second_batch_is_next_2() {
    let five = ["E", "D", "C", "B", "A"];
    assert_eq!(
        nominate(&five, &["E", "D"], Some(2), true),
        next(&["E", "D", "C", "B"])
    );
}

// batchgate: the round is still running at exactly its timeout (Kueue's
// `<=`), and over one millisecond later it is not.
#[test]
fn round_boundary_is_inclusive() {
    let nominated = vec!["A".to_string()];
    let start = at(-(DEFAULT_ROUND_TIMEOUT.as_secs() as i64));
    let r = next_round(
        &nominated,
        &["A", "B"],
        1,
        DEFAULT_ROUND_TIMEOUT,
        Some(&start),
        &now(),
    );
    assert_eq!(r, Round::InProgress(Duration::ZERO));
    let later = Time(Timestamp::from_millisecond((NOW * 1000) + 1).unwrap());
    let r = next_round(
        &nominated,
        &["A", "B"],
        1,
        DEFAULT_ROUND_TIMEOUT,
        Some(&start),
        &later,
    );
    assert_eq!(r, next(&["A", "B"]));
}

#[test]
fn messages_are_truncated_as_kueue_does() {
    let long = "é".repeat(MAX_EVENT_MESSAGE);
    let cut = truncate(long, MAX_EVENT_MESSAGE);
    assert!(cut.len() <= MAX_EVENT_MESSAGE && cut.ends_with(" ..."));
    assert_eq!(gvk_string("v1", "Pod"), "/v1, Kind=Pod");
    assert_eq!(gvk_string("batch/v1", "Job"), "batch/v1, Kind=Job");
}

// ---- TestOrphanedRemoteWorkloadCleanedAfterReconnect ----

// workload_test.go, TestOrphanedRemoteWorkloadCleanedAfterReconnect: two
// passes — while worker2 reconnects its copy stays and the pass comes back
// after workerLostTimeout; once it is connected the orphan goes.
#[test]
fn orphaned_remote_workload_cleaned_after_reconnect() {
    let mut c = case(pending());
    c.workers = vec![worker("worker1"), worker("worker2").link_lost().wl(copy())];
    c.run().wl_is(1, Some(copy())).requeue(Some(LOST_TIMEOUT));

    c.workers[1].link = Link::Connected;
    c.run().wl_is(1, None).requeue(None);
}

// ---- TestMultiKueueWorkloadAdmittedMetric* ----
// Kueue counts an admission when the pass turns the check Ready; the shell
// can count the same from the check write. Ported as: the write to Ready
// happens once, and never from Retry or Rejected.

fn turns_ready(w: &World) -> bool {
    w.step.actions.iter().any(
        |a| matches!(a, Action::Local(LocalStatus { check: Some(c), .. }) if c.state == "Ready"),
    )
}

// workload_test.go, TestMultiKueueWorkloadAdmittedMetricIncrementedOnceOnAdmission
#[test]
fn multi_kueue_workload_admitted_metric_incremented_once_on_admission() {
    let mut c = case(pending().reserved());
    c.workers = vec![worker("worker1").wl(admitted_copy())];
    let first = c.run();
    assert!(turns_ready(&first));
    // The second pass sees the first's writes.
    c.local = Wl(first.local.clone());
    c.workers[0].job = first.jobs[0].clone().map(Job);
    let second = c.run();
    assert!(!turns_ready(&second));
    second.local_is(Wl(first.local.clone()));
}

// workload_test.go, TestMultiKueueWorkloadAdmittedMetricNotIncrementedOnRetryOrRejected
#[test]
fn multi_kueue_workload_admitted_metric_not_incremented_on_retry_or_rejected() {
    for state in ["Retry", "Rejected"] {
        let local = Wl::base().check("ac1", state, "").job_owned().reserved();
        let mut c = case(local);
        c.workers = vec![worker("worker1").wl(admitted_copy())];
        for _ in 0..2 {
            let w = c.run();
            assert!(!turns_ready(&w), "{state}");
            c.local = Wl(w.local.clone());
            c.workers[0].job = w.jobs[0].clone().map(Job);
        }
    }
}

// ---- TestReconcileGroup_SyncDeferred_ShortRequeue ----

// workload_test.go, TestReconcileGroup_SyncDeferred_ShortRequeue: the
// adapter defers (here: the local job is still suspended while the worker's
// runs), so the pass comes back after 2 s, not workerLostTimeout.
#[test]
fn reconcile_group_sync_deferred_short_requeue() {
    let local = Wl::base()
        .job_owned()
        .reserved()
        .cond("Admitted", "Admitted", "")
        .check("ac1", "Ready", "")
        .cluster("worker1");
    let mut c = case(local);
    let mut local_job = Job::managed();
    local_job.0["spec"]["suspend"] = json!(true);
    c.local_job = Some(local_job);
    c.workers = vec![worker("worker1")
        .wl(Wl::base().cond("Admitted", "Admitted", ""))
        .job(Job::remote(ORIGIN).active(1))];
    c.run().requeue(Some(SYNC_DEFERRED_REQUEUE)).trouble(None);
}

// ---- TestNominateAndSynchronizeWorkers_MoreCases ----
// Left out: "AllClusters: nominate all workers when called directly with
// ClusterName set" — it calls nominateAndSynchronizeWorkers past the
// ClusterName guard, which a whole pass never does.

fn remotes(n: usize) -> Vec<W> {
    const NAMES: [&str; 9] = [
        "remote1", "remote2", "remote3", "remote4", "remote5", "remote6", "remote7", "remote8",
        "remote9",
    ];
    NAMES[..n].iter().map(|name| worker(name)).collect()
}

fn created_on(w: &World) -> Vec<String> {
    let mut out: Vec<String> = w
        .step
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::CreateRemoteWorkload { cluster, .. } => Some(cluster.clone()),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

fn nominated_patch(w: &World) -> Option<Vec<String>> {
    w.step.actions.iter().find_map(|a| match a {
        Action::Local(LocalStatus {
            nominated: Some(n), ..
        }) => Some(n.clone()),
        _ => None,
    })
}

const EXTERNAL: &str = "external.com/mk-dispatcher";

// workload_test.go, TestNominateAndSynchronizeWorkers_MoreCases: "AllClusters: clone to all remotes, nominates all"
#[test]
fn all_clusters_clone_to_all_remotes_nominates_all() {
    let mut c = case(pending().reserved());
    c.workers = remotes(2);
    let w = c.run();
    assert_eq!(created_on(&w), ["remote1", "remote2"]);
    assert_eq!(nominated_patch(&w).unwrap(), ["remote1", "remote2"]);
}

// workload_test.go, TestNominateAndSynchronizeWorkers_MoreCases: "AllClusters: workloads already created on remotes, do not create again"
#[test]
fn all_clusters_workloads_already_created_on_remotes_do_not_create_again() {
    let mut c = case(pending().reserved());
    c.workers = remotes(2).into_iter().map(|w| w.wl(copy())).collect();
    assert!(created_on(&c.run()).is_empty());
}

// workload_test.go, TestNominateAndSynchronizeWorkers_MoreCases: "AllClusters: same set in reversed order does not trigger unnecessary patch"
#[test]
fn all_clusters_same_set_in_reversed_order_does_not_trigger_unnecessary_patch() {
    let mut c = case(pending().reserved().nominated(&["remote2", "remote1"]));
    c.workers = remotes(2).into_iter().map(|w| w.wl(copy())).collect();
    c.run().no_actions();
}

// workload_test.go, TestNominateAndSynchronizeWorkers_MoreCases: "External controller: no nominated workers, nothing created"
#[test]
fn external_controller_no_nominated_workers_nothing_created() {
    let mut c = case(pending().reserved());
    c.workers = remotes(9);
    c.dispatcher = Dispatcher::named(EXTERNAL, None);
    c.run().no_actions().trouble(None);
}

// workload_test.go, TestNominateAndSynchronizeWorkers_MoreCases: "External controller: nominate remote1 and remote6"
#[test]
fn external_controller_nominate_remote1_and_remote6() {
    let mut c = case(pending().reserved().nominated(&["remote1", "remote6"]));
    c.workers = remotes(9);
    c.dispatcher = Dispatcher::named(EXTERNAL, None);
    let w = c.run();
    assert_eq!(created_on(&w), ["remote1", "remote6"]);
    assert_eq!(nominated_patch(&w), None);
}

// workload_test.go, TestNominateAndSynchronizeWorkers_MoreCases: "External controller: nominate all remotes at once"
#[test]
fn external_controller_nominate_all_remotes_at_once() {
    let all = [
        "remote1", "remote2", "remote3", "remote4", "remote5", "remote6", "remote7", "remote8",
        "remote9",
    ];
    let mut c = case(pending().reserved().nominated(&all));
    c.workers = remotes(9);
    c.dispatcher = Dispatcher::named(EXTERNAL, None);
    assert_eq!(created_on(&c.run()), all);
}

// workload_test.go, TestNominateAndSynchronizeWorkers_MoreCases: "External controller: nominated worker cluster not yet connected"
#[test]
fn external_controller_nominated_worker_cluster_not_yet_connected() {
    let local = pending().reserved().nominated(&["remote1", "remote2"]);
    let mut c = case(local.clone());
    c.workers = remotes(1);
    c.dispatcher = Dispatcher::named(EXTERNAL, None);
    let w = c.run();
    assert_eq!(created_on(&w), ["remote1"]);
    w.local_is(local)
        .trouble(Some(Trouble::NominatedClustersNotConnected(vec![
            "remote2".into(),
        ])));
}

// batchgate (Kueue's needsDelayedTopologyUpdate, no upstream table case):
// the admitting worker placed a pod set whose local topology request still
// waits — it turns Ready in the same write as the check, and on a Retry
// check it is written alone.
#[test]
fn delayed_topology_request_turns_ready_when_the_worker_placed_it() {
    let placed = json!([{
        "name": "main", "count": 1,
        "topologyAssignment": {
            "levels": ["kubernetes.io/hostname"],
            "slices": [{ "domainCount": 1, "valuesPerLevel": [{ "universal": "n1" }], "podCounts": { "universal": 1 } }],
        },
    }]);
    let mut remote = admitted_copy();
    remote.0["status"]["admission"]["podSetAssignments"] = placed;
    let waiting = |state: &str| {
        let mut wl = Wl::base().check("ac1", state, "").job_owned().reserved();
        wl.0["status"]["admission"]["podSetAssignments"][0]["delayedTopologyRequest"] =
            json!("Pending");
        wl
    };
    for state in ["Pending", "Retry"] {
        let mut c = case(waiting(state));
        c.workers = vec![worker("worker1").wl(remote.clone())];
        let w = c.run();
        assert_eq!(
            w.local["status"]["admission"]["podSetAssignments"][0]["delayedTopologyRequest"],
            "Ready",
            "{state}"
        );
        let writes = w
            .step
            .actions
            .iter()
            .filter(|a| matches!(a, Action::Local(_)))
            .count();
        assert_eq!(writes, 1, "{state}");
    }
}

// batchgate (Kueue's admitting-remote branch, no upstream table case): the
// local Workload was evicted while its copy is admitted — the worker is
// asked to deactivate the copy, once; nothing else happens in that pass.
#[test]
fn evicted_here_asks_the_admitting_worker_to_deactivate_its_copy() {
    let mut c = case(ready_on_worker1().evicted());
    c.workers = vec![worker("worker1")
        .wl(admitted_copy())
        .job(Job::remote(ORIGIN))];
    let w = c.run();
    let asked = admitted_copy().cond(
        "DeactivationTarget",
        "EvictedOnManagerCluster",
        "Evicted on manager: Evicted by test",
    );
    w.wl_is(0, Some(asked.clone()))
        .local_is(ready_on_worker1().evicted())
        .events_are(&[])
        .requeue(None);
    assert_eq!(w.step.actions.len(), 1);

    c.workers[0].wl = Some(asked);
    c.run().no_actions();
}

// ---- job_multikueue_adapter_test.go ----

const ORIGIN1: &str = "origin1";

fn sync_job(local: &Job, remote: Option<&Job>, workload: &str, annotations: bool) -> JobSync {
    BATCH_JOB.sync(
        &local.0,
        remote.map(|j| &j.0),
        workload,
        ORIGIN1,
        annotations,
        &now(),
    )
}

fn created(sync: JobSync) -> Value {
    match sync {
        JobSync::Create(job) => norm(&job),
        other => panic!("{other:?}"),
    }
}

fn copied(sync: JobSync) -> (Value, bool) {
    match sync {
        JobSync::CopyStatus { status, deferred } => (norm(&status), deferred),
        other => panic!("{other:?}"),
    }
}

// job_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote job"
#[test]
fn sync_creates_missing_remote_job() {
    let job = created(sync_job(&Job::managed(), None, "wl1", false));
    assert_eq!(job, norm(&Job::remote(ORIGIN1).0));
}

// job_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync intermediate status from remote job"
#[test]
fn sync_intermediate_status_from_remote_job() {
    let remote = Job::remote(ORIGIN1).active(2);
    let got = copied(sync_job(&Job::managed(), Some(&remote), "wl1", false));
    assert_eq!(got, (json!({ "active": 2 }), false));
}

fn suspended(mut j: Job) -> Job {
    j.0["spec"]["suspend"] = json!(true);
    j
}

// job_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync intermediate status from remote suspended job"
#[test]
fn sync_intermediate_status_from_remote_suspended_job() {
    let remote = suspended(Job::remote(ORIGIN1)).active(2);
    let got = copied(sync_job(
        &suspended(Job::managed()),
        Some(&remote),
        "wl1",
        false,
    ));
    assert_eq!(got, (json!({ "active": 2 }), false));
}

// job_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync final status from remote job"
#[test]
fn sync_final_status_from_remote_job() {
    let remote = Job::remote(ORIGIN1).complete();
    let got = copied(sync_job(&Job::managed(), Some(&remote), "wl1", false));
    assert_eq!(got.0, norm(&Job::base().complete().0["status"]));
}

// job_multikueue_adapter_test.go, TestMultiKueueAdapter: "missing job is not considered managed"
// (through the step: no local job, no admission; the pass stops)
#[test]
fn missing_job_is_not_considered_managed() {
    let mut c = case(pending().reserved());
    c.local_job = None;
    c.run()
        .no_actions()
        .trouble(Some(Trouble::LocalJobMissing("job1".into())));
}

// job_multikueue_adapter_test.go, TestMultiKueueAdapter: "job with wrong managedBy is not considered managed"
#[test]
fn job_with_wrong_managed_by_is_not_considered_managed() {
    assert_eq!(
        BATCH_JOB.unmanaged_reason(&Job::base().0).as_deref(),
        Some(r#"Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not """#)
    );
}

// job_multikueue_adapter_test.go, TestMultiKueueAdapter: "job managedBy multikueue"
#[test]
fn job_managed_by_multikueue() {
    assert_eq!(BATCH_JOB.unmanaged_reason(&Job::managed().0), None);
}

// job_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote job, WorkloadIdentifierAnnotations enabled"
#[test]
fn sync_creates_missing_remote_job_workload_identifier_annotations_enabled() {
    let job = created(sync_job(&Job::managed(), None, "wl1", true));
    let mut want = Job::base();
    want.0["metadata"]["labels"] = json!({ ORIGIN_LABEL: ORIGIN1 });
    want.0["metadata"]["annotations"] = json!({ keys::PREBUILT_WORKLOAD_LABEL: "wl1" });
    assert_eq!(job, norm(&want.0));
}

/// `MakeJob("test", ns)`: suspended by default.
fn test_job() -> Job {
    let mut j = suspended(Job::base());
    j.0["metadata"]["name"] = json!("test");
    j
}

fn running(mut j: Job) -> Job {
    j.0["status"]["conditions"] = json!([{ "type": "SuccessCriteriaMet", "status": "False" }]);
    j
}

fn unsuspended(mut j: Job) -> Job {
    j.0["spec"]["suspend"] = json!(false);
    j
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "RemoteJobNotFound"
#[test]
fn remote_job_not_found() {
    let mut local = test_job();
    local.0["spec"]["managedBy"] = json!("parent");
    let job = created(sync_job(&local, None, "", false));
    let mut want = test_job();
    want.0["metadata"]["labels"] =
        json!({ ORIGIN_LABEL: ORIGIN1, keys::PREBUILT_WORKLOAD_LABEL: "" });
    assert_eq!(job, norm(&want.0));
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "RemoteJobInProgress_LocalIsManagedButStillSuspended"
#[test]
fn remote_job_in_progress_local_is_managed_but_still_suspended() {
    let remote = running(test_job());
    let got = copied(sync_job(&test_job(), Some(&remote), "", false));
    assert_eq!(got, (norm(&remote.0["status"]), false));
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "RemoteJobInProgress_LocalIsManagedAndUnsuspended"
#[test]
fn remote_job_in_progress_local_is_managed_and_unsuspended() {
    let remote = running(test_job());
    let got = copied(sync_job(&unsuspended(test_job()), Some(&remote), "", false));
    assert_eq!(got, (norm(&remote.0["status"]), false));
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "RemoteJobFinished_Completed"
#[test]
fn remote_job_finished_completed() {
    let remote = test_job().complete();
    let got = copied(sync_job(&unsuspended(test_job()), Some(&remote), "", false));
    assert_eq!(got, (norm(&remote.0["status"]), false));
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "RemoteJobFinished_Failed"
#[test]
fn remote_job_finished_failed() {
    let mut remote = unsuspended(test_job());
    remote.0["status"]["conditions"] = json!([{ "type": "Failed", "status": "True" }]);
    let got = copied(sync_job(&unsuspended(test_job()), Some(&remote), "", false));
    assert_eq!(got, (norm(&remote.0["status"]), false));
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "ElasticJob_DeferredWhenLocalSuspended"
// (only the deferred flag is asserted upstream; so here)
#[test]
fn elastic_job_deferred_when_local_suspended() {
    let mut local = running(test_job());
    local.0["metadata"]["annotations"] = json!({ keys::ELASTIC_JOB_ANNOTATION: "true" });
    local.0["spec"]["parallelism"] = json!(22);
    let mut remote = running(unsuspended(test_job()));
    remote.0["metadata"]["annotations"] = json!({ keys::ELASTIC_JOB_ANNOTATION: "true" });
    let deferred = match sync_job(&local, Some(&remote), "job-test-f53b2", false) {
        JobSync::CopyStatus { deferred, .. } | JobSync::InSync { deferred } => deferred,
        other => panic!("{other:?}"),
    };
    assert!(deferred);
}

/// An elastic test job (`newJob()` with the elastic-job annotation), its
/// parallelism, and on the worker's side the prebuilt Workload it names.
fn elastic_job(parallelism: i64, prebuilt: Option<&str>) -> Value {
    let mut j = running(test_job()).0;
    j["metadata"]["annotations"] = json!({ keys::ELASTIC_JOB_ANNOTATION: "true" });
    j["metadata"]["resourceVersion"] = json!("1");
    j["spec"]["parallelism"] = json!(parallelism);
    if let Some(name) = prebuilt {
        j["metadata"]["labels"] = json!({ keys::PREBUILT_WORKLOAD_LABEL: name });
    }
    j
}

/// The worker's job after the elastic sync (as read when there is none).
fn elastic_synced(local: &Value, remote: &Value, workload: &str) -> Option<Value> {
    let ops = BATCH_JOB.elastic_sync(local, remote, workload, true)?;
    Some(applied(remote, ops))
}

/// `remote` with the patch applied, as the worker's apiserver would.
fn applied(remote: &Value, ops: Vec<PatchOp>) -> Value {
    let p: json_patch::Patch = serde_json::from_value(serde_json::to_value(ops).unwrap()).unwrap();
    let mut out = remote.clone();
    json_patch::patch(&mut out, &p).expect("tested against the version read");
    out
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "ElasticJob_RemoteInSync"
#[test]
fn elastic_job_remote_in_sync() {
    let local = elastic_job(1, None);
    let remote = elastic_job(1, Some("test-workload"));
    assert_eq!(elastic_synced(&local, &remote, "test-workload"), None);
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "ElasticJob_LocalIsStale"
// (the Workload synced is not the slice the job's generation makes: the
// job scaled up past it)
#[test]
fn elastic_job_local_is_stale() {
    let local = elastic_job(2, None);
    let remote = elastic_job(1, Some("test-workload"));
    assert_eq!(elastic_synced(&local, &remote, "test-workload"), None);
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "ElasticJob_WorkloadNameOnlyChange_EdgeCase"
#[test]
fn elastic_job_workload_name_only_change_edge_case() {
    let local = elastic_job(1, None);
    let remote = elastic_job(1, None);
    let got = elastic_synced(&local, &remote, "test-workload-new").expect("a sync");
    let mut want = remote.clone();
    want["metadata"]["annotations"][keys::PREBUILT_WORKLOAD_LABEL] = json!("test-workload-new");
    assert_eq!(got, want);
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob: "ElasticJob_RemoteOutOfSync"
// (`ElasticJob_RemoteOutOfSync_PatchFailure` is the shell's: a refused
// patch fails the pass, which is retried on what is read then)
#[test]
fn elastic_job_remote_out_of_sync() {
    let local = elastic_job(22, None);
    let remote = elastic_job(1, Some("test-workload"));
    // GetWorkloadNameForOwnerWithGVKAndGeneration("test", "", gvk, 0)
    assert_eq!(BATCH_JOB.current_slice(&local), "job-test-f53b2");
    let got = elastic_synced(&local, &remote, "job-test-f53b2").expect("a sync");
    let mut want = remote.clone();
    want["spec"]["parallelism"] = json!(22);
    want["metadata"]["annotations"][keys::PREBUILT_WORKLOAD_LABEL] = json!("job-test-f53b2");
    assert_eq!(got, want);
    // Tested against the version read, as Kueue's patch is.
    let ops = BATCH_JOB
        .elastic_sync(&local, &remote, "job-test-f53b2", true)
        .unwrap();
    assert_eq!(
        serde_json::to_value(&ops[0]).unwrap(),
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": "1"})
    );
}

// batchgate: the worker's copy of a job that is not elastic, or of a kind
// without elastic counts, is never patched; without identifier
// annotations the name goes into the label it was created with.
#[test]
fn elastic_sync_only_for_elastic_jobs_and_where_the_name_was_put() {
    let mut plain = elastic_job(22, None);
    plain["metadata"]["annotations"] = json!({});
    let remote = elastic_job(1, Some("test-workload"));
    assert_eq!(
        BATCH_JOB.elastic_sync(&plain, &remote, "job-test-f53b2", true),
        None
    );
    let countless = JobKind {
        elastic_counts: vec![],
        ..BATCH_JOB.clone()
    };
    let local = elastic_job(22, None);
    assert_eq!(
        countless.elastic_sync(&local, &remote, "job-test-f53b2", true),
        None
    );
    let ops = BATCH_JOB
        .elastic_sync(&local, &remote, "job-test-f53b2", false)
        .unwrap();
    let p: json_patch::Patch = serde_json::from_value(serde_json::to_value(ops).unwrap()).unwrap();
    let mut got = remote.clone();
    json_patch::patch(&mut got, &p).unwrap();
    assert_eq!(
        got["metadata"]["labels"][keys::PREBUILT_WORKLOAD_LABEL],
        "job-test-f53b2"
    );
    assert_eq!(
        got["metadata"]
            .get("annotations")
            .and_then(|a| a.get(keys::PREBUILT_WORKLOAD_LABEL)),
        None
    );
}

// job_multikueue_adapter_test.go, Test_multiKueueAdapter_SyncJob_DeferredWhenLocalSuspended
#[test]
fn multi_kueue_adapter_sync_job_deferred_when_local_suspended() {
    let mut remote = unsuspended(test_job()).active(1);
    remote.0["metadata"]["labels"] = json!({ ORIGIN_LABEL: ORIGIN1 });
    let (status, deferred) = copied(sync_job(&test_job(), Some(&remote), "", false));
    assert!(deferred);
    // Not the remote's active count: only the Suspended mark.
    assert!(status.get("active").is_none());
    assert_eq!(status["conditions"][0]["type"], "Suspended");
}

// batchgate (Kueue's clearRoundStartTime): a Workload that lost its quota,
// finished or is gone has its remembered round forgotten; one still
// dispatching keeps it.
#[test]
fn incremental_round_is_forgotten_when_the_workload_stops_dispatching() {
    let incremental = Dispatcher::named(INCREMENTAL, None);
    for (local, gone, forgotten) in [
        (pending(), false, true),
        (
            pending().reserved().cond("Finished", "ByTest", ""),
            false,
            true,
        ),
        (pending().reserved(), true, true),
        (pending().reserved().nominated(&["worker1"]), false, false),
    ] {
        let mut c = case(local);
        c.gone = gone;
        c.dispatcher = incremental.clone();
        c.round_started = Some(at(-10));
        assert_eq!(c.run().round_forgotten, forgotten);
    }
    // Nothing to forget: nothing said.
    let mut c = case(pending());
    c.dispatcher = incremental;
    c.run().no_actions();
}

// ---- appwrapper_multikueue_adapter_test.go, TestMultiKueueAdapter ----

/// The test's `baseAppWrapperBuilder`: `aw1`, suspended, one component.
fn aw_base() -> Value {
    json!({
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": { "name": "aw1", "namespace": "ns" },
        "spec": {
            "suspend": true,
            "components": [{ "template": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": { "name": "p" },
                "spec": { "containers": [{ "name": "c", "image": "busybox" }] },
            } }],
        },
    })
}

fn aw_managed() -> Value {
    let mut aw = aw_base();
    aw["spec"]["managedBy"] = json!(keys::MULTIKUEUE_CONTROLLER);
    aw
}

fn aw_remote(annotation: bool) -> Value {
    let mut aw = aw_base();
    aw["metadata"]["labels"] = json!({ ORIGIN_LABEL: ORIGIN1 });
    let place = if annotation { "annotations" } else { "labels" };
    aw["metadata"][place][keys::PREBUILT_WORKLOAD_LABEL] = json!("wl1");
    aw
}

fn aw_phase(mut aw: Value, phase: &str) -> Value {
    aw["status"] = json!({ "phase": phase });
    aw
}

fn sync_aw(local: &Value, remote: Option<&Value>, annotations: bool) -> JobSync {
    APPWRAPPER.sync(local, remote, "wl1", ORIGIN1, annotations, &now())
}

// appwrapper_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote appwrapper"
#[test]
fn sync_creates_missing_remote_appwrapper() {
    let aw = created(sync_aw(&aw_managed(), None, false));
    assert_eq!(aw, norm(&aw_remote(false)));
}

// appwrapper_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync status from remote appwrapper"
#[test]
fn sync_status_from_remote_appwrapper() {
    let mut local = aw_managed();
    local["spec"]["suspend"] = json!(false);
    let remote = aw_phase(aw_remote(false), "Suspended");
    let got = copied(sync_aw(&local, Some(&remote), false));
    assert_eq!(got, (json!({ "phase": "Suspended" }), false));
}

// appwrapper_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync status from remote while local appwrapper is suspended"
// (the AppWrapper's adapter copies at once; only the Job's defers)
#[test]
fn sync_status_from_remote_while_local_appwrapper_is_suspended() {
    let mut remote = aw_phase(aw_remote(false), "Running");
    remote["spec"]["suspend"] = json!(false);
    let got = copied(sync_aw(&aw_managed(), Some(&remote), false));
    assert_eq!(got, (json!({ "phase": "Running" }), false));
}

// appwrapper_multikueue_adapter_test.go, TestMultiKueueAdapter: "remote appwrapper is deleted"
// (through the step, as TestWlReconcile's "missing workload (in deleted
// workload cache)": the local Workload gone, the worker's copy and the
// AppWrapper carrying this manager's origin are deleted)
#[test]
fn remote_appwrapper_is_deleted() {
    let owned = || {
        Wl::base().check("ac1", "Pending", "").owner(
            "workload.codeflare.dev/v1beta2",
            "AppWrapper",
            "aw1",
        )
    };
    let mut c = case(owned().reserved());
    c.kind = &APPWRAPPER;
    c.gone = true;
    c.local_job = None;
    c.workers = vec![worker("worker1").wl(copy().reserved()).job(Job({
        let mut aw = aw_remote(false);
        aw["metadata"]["labels"][ORIGIN_LABEL] = json!(ORIGIN);
        aw
    }))];
    c.run().wl_is(0, None).job_is(0, None).trouble(None);
    let kinds = [APPWRAPPER.clone()];
    let wl: api::Workload = serde_json::from_value(owned().0).unwrap();
    let (kind, name) = local_job(&wl, &kinds).expect("the AppWrapper's Workload");
    assert_eq!(
        (kind.resource.as_str(), name.as_str()),
        ("appwrappers", "aw1")
    );
}

// appwrapper_multikueue_adapter_test.go, TestMultiKueueAdapter: "job with wrong managedBy is not considered managed"
#[test]
fn appwrapper_with_wrong_managed_by_is_not_considered_managed() {
    assert_eq!(
        APPWRAPPER.unmanaged_reason(&aw_base()).as_deref(),
        Some(r#"Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not """#)
    );
}

// appwrapper_multikueue_adapter_test.go, TestMultiKueueAdapter: "job managedBy multikueue"
#[test]
fn appwrapper_managed_by_multikueue() {
    assert_eq!(APPWRAPPER.unmanaged_reason(&aw_managed()), None);
}

// appwrapper_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote appwrapper, WorkloadIdentifierAnnotations enabled"
#[test]
fn sync_creates_missing_remote_appwrapper_workload_identifier_annotations_enabled() {
    let aw = created(sync_aw(&aw_managed(), None, true));
    assert_eq!(aw, norm(&aw_remote(true)));
}

// appwrapper_multikueue_adapter_test.go, TestMultiKueueAdapter: "missing appwrapper is not considered managed"
// (through the step: no local AppWrapper, no admission; the pass stops)
#[test]
fn missing_appwrapper_is_not_considered_managed() {
    let mut c = case(
        Wl::base()
            .check("ac1", "Pending", "")
            .owner("workload.codeflare.dev/v1beta2", "AppWrapper", "aw1")
            .reserved(),
    );
    c.kind = &APPWRAPPER;
    c.local_job = None;
    c.run()
        .no_actions()
        .trouble(Some(Trouble::LocalJobMissing("aw1".into())));
}

// ---- pod_multikueue_adapter_test.go, TestMultiKueueAdapter ----

/// The pod's kind, from the embedded pod policy.
static POD: std::sync::LazyLock<JobKind> = std::sync::LazyLock::new(|| {
    let policies = crate::jobs::policy::PolicySet::embedded().unwrap();
    let pod = policies.find("", "v1", "Pod").expect("the pod policy");
    JobKind::from_policy(pod).expect("a gated kind is dispatched")
});

/// `MakePod("test-pod", ns)`.
fn pod_base() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "test-pod", "namespace": "ns" },
        "spec": { "containers": [{ "name": "c", "image": "pause" }] },
    })
}

fn pod_remote(annotation: bool) -> Value {
    let mut p = pod_base();
    p["metadata"]["labels"] = json!({ ORIGIN_LABEL: ORIGIN1 });
    let place = if annotation { "annotations" } else { "labels" };
    p["metadata"][place][keys::PREBUILT_WORKLOAD_LABEL] = json!("wl1");
    p
}

fn pod_status(mut p: Value, phase: Option<&str>, conditions: Value) -> Value {
    if let Some(phase) = phase {
        p["status"]["phase"] = json!(phase);
    }
    p["status"]["conditions"] = conditions;
    p
}

/// `KueueSchedulingGate()`.
fn gated_pod(mut p: Value) -> Value {
    p["spec"]["schedulingGates"] = json!([{ "name": "kueue.x-k8s.io/admission" }]);
    p
}

fn sync_pod(local: &Value, remote: Option<&Value>, annotations: bool) -> JobSync {
    POD.sync(local, remote, "wl1", ORIGIN1, annotations, &now())
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote pod"
#[test]
fn sync_creates_missing_remote_pod() {
    let p = created(sync_pod(&pod_base(), None, false));
    assert_eq!(p, norm(&pod_remote(false)));
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync status from remote pod"
#[test]
fn sync_status_from_remote_pod() {
    let ready = json!([{ "type": "Ready", "status": "True" }]);
    let remote = pod_status(pod_remote(false), Some("Running"), ready.clone());
    let got = copied(sync_pod(&pod_base(), Some(&remote), false));
    assert_eq!(
        got,
        (json!({ "phase": "Running", "conditions": ready }), false)
    );
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "keeps SchedulingGated condition on gated manager pod (avoids spurious autoscaler scale-up)"
#[test]
fn keeps_scheduling_gated_condition_on_gated_manager_pod() {
    let gated = json!([{ "type": "PodScheduled", "status": "False", "reason": "SchedulingGated" }]);
    let local = pod_status(gated_pod(pod_base()), None, gated.clone());
    let remote = pod_status(
        pod_remote(false),
        Some("Pending"),
        json!([{ "type": "PodScheduled", "status": "False", "reason": "Unschedulable" }]),
    );
    let got = copied(sync_pod(&local, Some(&remote), false));
    assert_eq!(
        got,
        (json!({ "phase": "Pending", "conditions": gated }), false)
    );
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "overwrites SchedulingGated once the remote pod is scheduled"
#[test]
fn overwrites_scheduling_gated_once_the_remote_pod_is_scheduled() {
    let local = pod_status(
        gated_pod(pod_base()),
        None,
        json!([{ "type": "PodScheduled", "status": "False", "reason": "SchedulingGated" }]),
    );
    let running = json!([{ "type": "PodScheduled", "status": "True" },
                         { "type": "Ready", "status": "True" }]);
    let remote = pod_status(pod_remote(false), Some("Running"), running.clone());
    let got = copied(sync_pod(&local, Some(&remote), false));
    assert_eq!(
        got,
        (json!({ "phase": "Running", "conditions": running }), false)
    );
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "remote pod is deleted"
// (through the step: the local Workload gone, the worker's copy and pod
// carrying this manager's origin are deleted)
#[test]
fn remote_pod_is_deleted() {
    let mut c = case(
        Wl::base()
            .check("ac1", "Pending", "")
            .owner("v1", "Pod", "test-pod")
            .reserved(),
    );
    c.kind = &POD;
    c.gone = true;
    c.local_job = None;
    let mut remote = pod_remote(false);
    remote["metadata"]["labels"][ORIGIN_LABEL] = json!(ORIGIN);
    c.workers = vec![worker("worker1").wl(copy().reserved()).job(Job(remote))];
    c.run().wl_is(0, None).job_is(0, None).trouble(None);
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "pod managedBy multikueue"
#[test]
fn pod_managed_by_multikueue() {
    assert_eq!(POD.unmanaged_reason(&pod_base()), None);
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote pod, WorkloadIdentifierAnnotations enabled"
#[test]
fn sync_creates_missing_remote_pod_workload_identifier_annotations_enabled() {
    let p = created(sync_pod(&pod_base(), None, true));
    assert_eq!(p, norm(&pod_remote(true)));
}

// ---- pod_multikueue_adapter_test.go, TestMultiKueueAdapter: the pod-group cases ----

/// `MakePodGroupWrappers(3)`: `test-pod-0..2` of group `test-pod`.
fn pod_group(remote: bool) -> Vec<Value> {
    (0..3)
        .map(|i| {
            let mut p = if remote {
                pod_remote(false)
            } else {
                pod_base()
            };
            p["metadata"]["name"] = json!(format!("test-pod-{i}"));
            p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = json!("test-pod");
            p["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = json!("3");
            if remote {
                p["metadata"]["labels"][ORIGIN_LABEL] = json!(ORIGIN);
            }
            p
        })
        .collect()
}

/// The group's Workload here, admitted on worker1 (its copy admitted there).
fn group_case(worker_pods: Vec<Value>) -> Case {
    let mut c = case(
        Wl::base()
            .check("ac1", "Ready", r#"The workload was admitted on "worker1""#)
            .owner("v1", "Pod", "test-pod-0")
            .reserved()
            .cluster("worker1"),
    );
    c.kind = &POD;
    let local = pod_group(false);
    c.local_job = Some(Job(local[0].clone()));
    c.local_members = local;
    let mut w = worker("worker1").wl(copy().reserved().cond("Admitted", "ByTest", ""));
    if let Some(first) = worker_pods.first() {
        w = w.job(Job(first.clone()));
    }
    w.members = worker_pods;
    c.workers = vec![w];
    c
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote pods of the group"
#[test]
fn sync_creates_missing_remote_pods_of_the_group() {
    let w = group_case(Vec::new()).run();
    let created: Vec<Value> = w
        .step
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::CreateRemoteJob { cluster, job } => {
                assert_eq!(cluster, "worker1");
                Some(norm(job))
            }
            _ => None,
        })
        .collect();
    let mut want = pod_group(true);
    for p in &mut want {
        p["metadata"]["labels"][keys::PREBUILT_WORKLOAD_LABEL] = json!("wl1");
    }
    assert_eq!(created, want.iter().map(norm).collect::<Vec<_>>());
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync status from remote pod group"
#[test]
fn sync_status_from_remote_pod_group() {
    let mut there = pod_group(true);
    let ready = json!([{ "type": "Ready", "status": "True" }]);
    there[2] = pod_status(there[2].clone(), Some("Running"), ready.clone());
    let w = group_case(there).run();
    let copies: Vec<(&str, &Value)> = w
        .step
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::CopyJobStatus { name, status } => Some((name.as_str(), status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        copies,
        [(
            "test-pod-2",
            &json!({ "phase": "Running", "conditions": ready })
        )]
    );
    assert!(
        !w.step
            .actions
            .iter()
            .any(|a| matches!(a, Action::CreateRemoteJob { .. })),
        "{:?}",
        w.step.actions
    );
}

// pod_multikueue_adapter_test.go, TestMultiKueueAdapter: "remote pod group is deleted"
// (through the step: the local Workload gone, every pod of the group on
// the worker deleted, then the copy)
#[test]
fn remote_pod_group_is_deleted() {
    let mut c = group_case(pod_group(true));
    c.gone = true;
    let w = c.run();
    let deleted: Vec<&str> = w
        .step
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::DeleteRemoteJob { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deleted, ["test-pod-0", "test-pod-1", "test-pod-2"]);
    assert!(matches!(
        w.step.actions.last(),
        Some(Action::DeleteRemoteWorkload { .. })
    ));
}

// ---- statefulset_multikueue_adapter_test.go and
// leaderworkerset_multikueue_adapter_test.go, TestMultiKueueAdapter ----

/// The embedded policy's kind of `kind` (both integrations are off by
/// default; their kinds are dispatched once enabled).
fn policy_kind(kind: &str) -> JobKind {
    let policies = crate::jobs::policy::PolicySet::embedded().unwrap();
    let found = policies
        .iter()
        .find(|p| p.target.kind == kind)
        .and_then(|p| JobKind::from_policy(p));
    found.unwrap_or_else(|| panic!("{kind} is dispatched"))
}

static STATEFULSET: std::sync::LazyLock<JobKind> =
    std::sync::LazyLock::new(|| policy_kind("StatefulSet"));
static LWS: std::sync::LazyLock<JobKind> =
    std::sync::LazyLock::new(|| policy_kind("LeaderWorkerSet"));

/// `MakeStatefulSet("statefulset1", "ns").UID("manager-uid")`.
fn sts_local() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": { "name": "statefulset1", "namespace": NS, "uid": "manager-uid" },
        "spec": { "replicas": 1, "template": { "spec": { "containers": [{ "name": "c", "image": "pause" }] } } },
    })
}

/// The worker's copy as upstream's test wants it: no UID, the origin and
/// the prebuilt Workload's name, the manager's UID in an annotation.
fn sts_remote(prebuilt_annotation: bool) -> Value {
    let mut s = sts_local();
    s["metadata"] = json!({
        "name": "statefulset1", "namespace": NS,
        "labels": { ORIGIN_LABEL: ORIGIN1 },
        "annotations": { keys::MULTIKUEUE_ORIGIN_UID_ANNOTATION: "manager-uid" },
    });
    let place = if prebuilt_annotation {
        "annotations"
    } else {
        "labels"
    };
    s["metadata"][place][keys::PREBUILT_WORKLOAD_LABEL] = json!("wl1");
    s
}

// statefulset_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote statefulset"
#[test]
fn sync_creates_missing_remote_statefulset() {
    let sync = STATEFULSET.sync(&sts_local(), None, "wl1", ORIGIN1, false, &now());
    assert_eq!(created(sync), norm(&sts_remote(false)));
}

// statefulset_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote statefulset, WorkloadIdentifierAnnotations enabled"
#[test]
fn sync_creates_missing_remote_statefulset_workload_identifier_annotations_enabled() {
    let sync = STATEFULSET.sync(&sts_local(), None, "wl1", ORIGIN1, true, &now());
    assert_eq!(created(sync), norm(&sts_remote(true)));
}

// statefulset_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync status from remote statefulset"
// (the remote's status is not copied: the manager's StatefulSet controller
// would overwrite it at once)
#[test]
fn sync_status_from_remote_statefulset_leaves_the_local_status() {
    let mut remote = sts_remote(false);
    remote["status"] = json!({ "replicas": 3, "readyReplicas": 2 });
    let sync = STATEFULSET.sync(&sts_local(), Some(&remote), "wl1", ORIGIN1, false, &now());
    assert_eq!(sync, JobSync::InSync { deferred: false });
}

// statefulset_multikueue_adapter_test.go, TestMultiKueueAdapter: "IsJobManagedByKueue returns true"
// leaderworkerset_multikueue_adapter_test.go, TestMultiKueueAdapter: "IsJobManagedByKueue returns true"
#[test]
fn statefulsets_and_leaderworkersets_are_always_multikueues() {
    assert_eq!(STATEFULSET.unmanaged_reason(&sts_local()), None);
    assert_eq!(LWS.unmanaged_reason(&lws_local(Some(2))), None);
}

/// A StatefulSet's Workload as its reconciler makes it: owned, not
/// controlled, with the owner annotations.
fn sts_owned(wl: Wl) -> Wl {
    let mut wl = wl;
    wl.0["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "statefulset1", "uid": "manager-uid",
    }]);
    wl.annotation(keys::JOB_OWNER_GVK_ANNOTATION, "apps/v1, Kind=StatefulSet")
        .annotation(keys::JOB_OWNER_NAME_ANNOTATION, "statefulset1")
}

// statefulset_multikueue_adapter_test.go, TestMultiKueueAdapter: "remote statefulset is deleted"
// (through the step: the local Workload gone, the worker's set carrying
// this manager's origin and the copy deleted)
#[test]
fn remote_statefulset_is_deleted() {
    let mut c = case(sts_owned(Wl::base().check("ac1", "Ready", "")).reserved());
    c.kind = &STATEFULSET;
    c.gone = true;
    c.local_job = None;
    let mut remote = sts_remote(false);
    remote["metadata"]["labels"][ORIGIN_LABEL] = json!(ORIGIN);
    c.workers = vec![worker("worker1").wl(copy().reserved()).job(Job(remote))];
    c.run().wl_is(0, None).job_is(0, None).trouble(None);
}

/// A StatefulSet admitted on a worker: the set is created there once and
/// then left to the worker; the manager's check is Ready on that worker.
#[test]
fn an_admitted_statefulset_is_created_once_on_its_worker() {
    let local = sts_owned(Wl::base().check("ac1", "Pending", "")).reserved();
    let admitted = || copy().reserved().cond("Admitted", "Admitted", "");
    let mut c = case(local.clone());
    c.kind = &STATEFULSET;
    c.local_job = Some(Job(sts_local()));
    c.workers = vec![worker("worker1").wl(admitted())];
    let w = c.run();
    let made = w.jobs[0].as_ref().expect("the set is created on worker1");
    assert_eq!(
        made["metadata"]["annotations"][keys::MULTIKUEUE_ORIGIN_UID_ANNOTATION],
        "manager-uid"
    );
    assert_eq!(w.local["status"]["clusterName"], "worker1");
    // The next pass: the worker's set runs, nothing is copied back.
    let mut running = made.clone();
    running["status"] = json!({ "replicas": 1, "readyReplicas": 1 });
    c.local = Wl(w.local.clone());
    c.workers = vec![worker("worker1").wl(admitted()).job(Job(running))];
    let w = c.run();
    assert!(
        !w.step.actions.iter().any(|a| matches!(
            a,
            Action::CopyJobStatus { .. } | Action::CreateRemoteJob { .. }
        )),
        "{:?}",
        w.step.actions
    );
}

/// `MakeLeaderWorkerSet("lws1", "ns").UID("manager-uid-123")`.
fn lws_local(replicas: Option<i64>) -> Value {
    let mut l = json!({
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": { "name": "lws1", "namespace": NS, "uid": "manager-uid-123" },
        "spec": { "leaderWorkerTemplate": { "size": 2, "workerTemplate": { "spec": { "containers": [{ "name": "c", "image": "pause" }] } } } },
    });
    if let Some(r) = replicas {
        l["spec"]["replicas"] = json!(r);
    }
    l
}

// leaderworkerset_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote leaderworkerset with origin UID annotation"
// and "sync creates missing remote leaderworkerset, WorkloadIdentifierAnnotations enabled"
// (one set for several Workloads: it names none of them either way)
#[test]
fn sync_creates_missing_remote_leaderworkerset_with_origin_uid_annotation() {
    let want = {
        let mut l = lws_local(None);
        l["metadata"] = json!({
            "name": "lws1", "namespace": NS,
            "labels": { ORIGIN_LABEL: ORIGIN1 },
            "annotations": { keys::MULTIKUEUE_ORIGIN_UID_ANNOTATION: "manager-uid-123" },
        });
        norm(&l)
    };
    for annotations in [false, true] {
        let sync = LWS.sync(&lws_local(None), None, "wl1", ORIGIN1, annotations, &now());
        assert_eq!(created(sync), want, "identifier annotations {annotations}");
    }
}

// leaderworkerset_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync does not overwrite existing remote leaderworkerset"
#[test]
fn sync_does_not_overwrite_existing_remote_leaderworkerset() {
    let mut remote = lws_local(None);
    remote["metadata"]["labels"] = json!({ ORIGIN_LABEL: ORIGIN1 });
    remote["status"] = json!({ "readyReplicas": 3 });
    let sync = LWS.sync(
        &lws_local(None),
        Some(&remote),
        "wl1",
        ORIGIN1,
        false,
        &now(),
    );
    assert_eq!(sync, JobSync::InSync { deferred: false });
}

/// Group `index`'s Workload of `lws1`, named `name`.
fn lws_wl(name: &str, index: &str) -> Wl {
    let mut wl = Wl::base()
        .annotation(
            keys::JOB_OWNER_GVK_ANNOTATION,
            "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet",
        )
        .annotation(keys::JOB_OWNER_NAME_ANNOTATION, "lws1")
        .annotation(keys::COMPONENT_WORKLOAD_INDEX_ANNOTATION, index);
    wl.0["metadata"]["name"] = json!(name);
    wl.0["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "name": "lws1", "uid": "manager-uid-123",
    }]);
    wl.check("ac1", "Pending", "").reserved()
}

fn lws_case(local: Wl, others: Vec<Wl>, replicas: Option<i64>) -> Case {
    let mut c = case(local.clone());
    c.kind = &LWS;
    c.local_job = Some(Job(lws_local(replicas)));
    c.workers = vec![worker("worker1"), worker("worker2")];
    c.components = std::iter::once(local).chain(others).collect();
    c
}

// leaderworkerset_multikueue_adapter_test.go, TestMultiKueueAdapter: "GetExpectedWorkloadCount returns replicas count"
// and "GetExpectedWorkloadCount returns 1 for nil replicas"
// (Kueue's nominateAndSynchronizeWorkers waits for every Workload of the set)
#[test]
fn a_leaderworkersets_workloads_are_dispatched_once_all_exist() {
    lws_case(lws_wl("wl1", "0"), vec![], Some(2))
        .run()
        .no_actions();
    let w = lws_case(lws_wl("wl1", "0"), vec![lws_wl("wl2", "1")], Some(2)).run();
    assert_eq!(created_on(&w), ["worker1", "worker2"]);
    // Absent replicas: one.
    let w = lws_case(lws_wl("wl1", "0"), vec![], None).run();
    assert_eq!(created_on(&w), ["worker1", "worker2"]);
}

// e2e/multikueue/extended "Should dispatch all LeaderWorkerSet workloads to the same worker":
// the first by index chooses; another waits for it (and tells it the set
// is whole), then follows it to its worker alone.
#[test]
fn a_leaderworkersets_later_workloads_follow_the_first() {
    let w = lws_case(lws_wl("wl1", "1"), vec![lws_wl("wl0", "0")], Some(2)).run();
    assert!(created_on(&w).is_empty(), "{:?}", w.step.actions);
    assert_eq!(w.woken, ["wl0"]);
    // The first was admitted on worker2: this one goes there alone, its
    // copy elsewhere removed.
    let placed = lws_wl("wl0", "0").cluster("worker2");
    let mut c = lws_case(lws_wl("wl1", "1"), vec![placed], Some(2));
    c.workers = vec![worker("worker1").wl(copy().reserved()), worker("worker2")];
    let w = c.run();
    assert_eq!(created_on(&w), ["worker2"]);
    assert!(w.wls[0].is_none(), "the copy on worker1 is removed");
    assert_eq!(nominated_patch(&w), Some(vec!["worker2".to_string()]));
    // Placed on two workers: trouble, nothing done.
    let split = vec![
        lws_wl("wl0", "0").cluster("worker1"),
        lws_wl("wl2", "2").cluster("worker2"),
    ];
    let w = lws_case(lws_wl("wl1", "1"), split, Some(3)).run();
    assert_eq!(
        w.step.trouble,
        Some(Trouble::ComponentsSplit("worker1".into(), "worker2".into()))
    );
    assert!(created_on(&w).is_empty());
}

/// The first Workload admitted on a worker wakes the others, which then
/// follow it; the set is created there by the first.
#[test]
fn the_first_admitted_leaderworkerset_workload_wakes_the_others() {
    let admitted = copy().reserved().cond("Admitted", "Admitted", "");
    let mut c = lws_case(lws_wl("wl1", "0"), vec![lws_wl("wl2", "1")], Some(2));
    c.workers = vec![worker("worker1").wl(admitted), worker("worker2")];
    let w = c.run();
    assert_eq!(w.woken, ["wl2"]);
    assert_eq!(w.local["status"]["clusterName"], "worker1");
    let made = w.jobs[0].as_ref().expect("the set is created on worker1");
    assert!(made["metadata"]["labels"]
        .get(keys::PREBUILT_WORKLOAD_LABEL)
        .is_none());
}

// leaderworkerset_multikueue_adapter_test.go, TestGetWorkloadIndex
#[test]
fn get_workload_index() {
    let with = |v: Option<&str>| {
        let mut wl = Wl::base();
        if let Some(v) = v {
            wl = wl.annotation(keys::COMPONENT_WORKLOAD_INDEX_ANNOTATION, v);
        }
        super::component_index(&wl.obj())
    };
    for (v, want) in [("0", 0), ("5", 5), ("10", 10), ("100", 100)] {
        assert_eq!(with(Some(v)), Some(want), "workload with index {v}");
    }
    assert_eq!(with(None), None, "workload without annotation");
    assert_eq!(with(Some("abc")), None, "workload with non-numeric index");
}

// ---- externalframeworks/adapter_test.go and config_test.go ----

fn external() -> JobKind {
    JobKind::external("TestJob.v1.test.example.com", "testjobs".into()).unwrap()
}

// config_test.go, TestNewAdapters: "valid configurations", "invalid GVK format", "empty name"
#[test]
fn external_frameworks_are_named_kind_version_group() {
    assert_eq!(
        parse_kind_arg("RayJob.v1.ray.io"),
        Some(("RayJob", "ray.io", "v1"))
    );
    let k = external();
    assert_eq!(
        (k.api_version.as_str(), k.kind.as_str(), k.resource.as_str()),
        ("test.example.com/v1", "TestJob", "testjobs")
    );
    for bad in ["", "RayJob", "RayJob.v1", "RayJob..ray.io"] {
        assert!(JobKind::external(bad, "x".into()).is_none(), "{bad:?}");
    }
}

// adapter_test.go, TestAdapter_IsJobManagedByKueue: every case by name
#[test]
fn adapter_is_job_managed_by_kueue() {
    let job = |managed_by: Value| json!({"spec": {"managedBy": managed_by}});
    let off = JobKind {
        gate_off: true,
        ..external()
    };
    assert_eq!(
        off.unmanaged_reason(&job(json!(keys::MULTIKUEUE_CONTROLLER)))
            .as_deref(),
        Some("MultiKueueAdaptersForCustomJobs feature gate is disabled"),
        "feature gate disabled"
    );
    assert_eq!(
        external().unmanaged_reason(&job(json!(keys::MULTIKUEUE_CONTROLLER))),
        None,
        "managed by kueue with default path"
    );
    assert_eq!(
        external()
            .unmanaged_reason(&job(json!("other-controller")))
            .as_deref(),
        Some(
            r#"Expecting .spec.managedBy to be "kueue.x-k8s.io/multikueue" not "other-controller""#
        ),
        "not managed by kueue"
    );
    assert_eq!(
        external()
            .unmanaged_reason(&json!({"spec": {"otherField": "value"}}))
            .as_deref(),
        Some(r#"Expecting .spec.managedBy to be "kueue.x-k8s.io/multikueue" not """#),
        "managedBy field not found"
    );
    assert_eq!(
        external()
            .unmanaged_reason(&job(json!("not-a-string")))
            .as_deref(),
        Some(r#"Expecting .spec.managedBy to be "kueue.x-k8s.io/multikueue" not "not-a-string""#),
        "managedBy value is not a string"
    );
}

// adapter_test.go, TestCloneUnstructuredForCreation, TestAdapter_CreateRemoteObject
// and TestAdapter_RemoveManagedByField: only name, namespace, labels,
// annotations and spec; managedBy gone; the origin and the prebuilt name
// added.
#[test]
fn adapter_create_remote_object() {
    let local = json!({
        "apiVersion": "test.example.com/v1", "kind": "TestJob",
        "metadata": {"name": "test-job", "namespace": "default", "uid": "local-uid",
                     "resourceVersion": "999", "labels": {"app": "foo"},
                     "annotations": {"key": "value"},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                          "name": "owner", "uid": "owner-uid"}],
                     "finalizers": ["some/finalizer"],
                     "managedFields": [{"manager": "kueue"}]},
        "spec": {"managedBy": keys::MULTIKUEUE_CONTROLLER, "replicas": 3, "otherField": "value"},
        "status": {"phase": "Running"},
    });
    let made = created(external().sync(&local, None, "test-workload", ORIGIN1, true, &now()));
    assert_eq!(
        made,
        norm(&json!({
            "apiVersion": "test.example.com/v1", "kind": "TestJob",
            "metadata": {"name": "test-job", "namespace": "default",
                         "labels": {"app": "foo", ORIGIN_LABEL: ORIGIN1},
                         "annotations": {"key": "value",
                                         keys::PREBUILT_WORKLOAD_LABEL: "test-workload"}},
            "spec": {"replicas": 3, "otherField": "value"},
        }))
    );
}

// adapter_test.go, TestAdapter_CopyStatusFromRemote: the whole status
#[test]
fn adapter_copy_status_from_remote() {
    let local = json!({"spec": {"field": "value", "managedBy": keys::MULTIKUEUE_CONTROLLER}});
    let remote = json!({"spec": {"field": "value"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
    let got = copied(external().sync(&local, Some(&remote), "wl1", ORIGIN1, true, &now()));
    assert_eq!(got, (norm(&remote["status"]), false));
}

// ---- RayService (Kueue v0.19.2 rayservice_multikueue_adapter_test.go) ----

static RAYSERVICE: std::sync::LazyLock<JobKind> = std::sync::LazyLock::new(|| {
    let policies = crate::jobs::policy::PolicySet::embedded().unwrap();
    let p = policies
        .iter()
        .find(|p| p.target.kind == "RayService")
        .unwrap();
    JobKind::from_policy(p).expect("the RayService policy has managedBy")
});

/// `MakeService("rayservice1", ns).Suspend(false)`, managed by MultiKueue,
/// with this Serve config.
fn rs_managed(serve: Option<&str>) -> Value {
    let mut s = json!({"apiVersion": "ray.io/v1", "kind": "RayService",
        "metadata": {"name": "rayservice1", "namespace": "ns", "resourceVersion": "5"},
        "spec": {"managedBy": "kueue.x-k8s.io/multikueue",
            "rayClusterConfig": {"rayVersion": "2.9.0", "suspend": false,
                "headGroupSpec": {"rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-head"}]}}},
                "workerGroupSpecs": [{"groupName": "workers-group-0", "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "ray-worker"}]}}}]}}});
    if let Some(c) = serve {
        s["spec"]["serveConfigV2"] = json!(c);
    }
    s
}

/// The worker's copy: `managedBy` cleared, MultiKueue's origin and the
/// prebuilt Workload `wl1` in labels.
fn rs_remote(serve: Option<&str>) -> Value {
    let mut s = rs_managed(serve);
    s["spec"].as_object_mut().unwrap().remove("managedBy");
    s["metadata"]["labels"] = json!({ORIGIN_LABEL: ORIGIN1, keys::PREBUILT_WORKLOAD_LABEL: "wl1"});
    s
}

fn ready(mut s: Value) -> Value {
    s["status"] = json!({"conditions": [
        {"type": "Ready", "status": "True", "reason": "NonZeroServeEndpoints"}]});
    s
}

fn sync_rs(local: &Value, remote: Option<&Value>, annotations: bool) -> JobSync {
    RAYSERVICE.sync(local, remote, "wl1", ORIGIN1, annotations, &now())
}

// rayservice_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote rayservice"
#[test]
fn sync_creates_missing_remote_rayservice() {
    let got = created(sync_rs(&rs_managed(None), None, false));
    let mut want = rs_remote(None);
    want["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    assert_eq!(got, norm(&want));
}

// rayservice_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync forwards a serveConfigV2 change to the existing remote rayservice"
#[test]
fn sync_forwards_a_serve_config_v2_change_to_the_existing_remote_rayservice() {
    let local = rs_managed(Some("new-config"));
    let remote = rs_remote(Some("old-config"));
    let ops = RAYSERVICE.spec_sync(&local, &remote).expect("a sync");
    assert_eq!(
        (ops[0].op, ops[0].path.as_str(), &ops[0].value),
        ("test", "/metadata/resourceVersion", &json!("5"))
    );
    assert_eq!(applied(&remote, ops), rs_remote(Some("new-config")));
    // In sync: nothing; a config dropped on the manager is dropped there.
    assert_eq!(
        RAYSERVICE.spec_sync(&local, &rs_remote(Some("new-config"))),
        None
    );
    let ops = RAYSERVICE
        .spec_sync(&rs_managed(None), &remote)
        .expect("a sync");
    assert_eq!(applied(&remote, ops), rs_remote(None));
    // Neither has one: nothing to remove.
    assert_eq!(
        RAYSERVICE.spec_sync(&rs_managed(None), &rs_remote(None)),
        None
    );
    // Other kinds sync no spec field.
    assert_eq!(
        BATCH_JOB.spec_sync(&local, &rs_remote(Some("old-config"))),
        None
    );
}

// rayservice_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync status from remote rayservice"
#[test]
fn sync_status_from_remote_rayservice() {
    let got = copied(sync_rs(
        &rs_managed(None),
        Some(&ready(rs_remote(None))),
        false,
    ));
    assert_eq!(got, (norm(&ready(json!({}))["status"]), false));
}

// rayservice_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync status from remote while local rayservice is suspended"
#[test]
fn sync_status_from_remote_while_local_rayservice_is_suspended() {
    let suspend = |mut s: Value| {
        s["spec"]["rayClusterConfig"]["suspend"] = json!(true);
        s
    };
    let got = copied(sync_rs(
        &suspend(rs_managed(None)),
        Some(&ready(suspend(rs_remote(None)))),
        false,
    ));
    assert_eq!(got, (norm(&ready(json!({}))["status"]), false));
}

// rayservice_multikueue_adapter_test.go, TestMultiKueueAdapter: "job with wrong managedBy is not considered managed"
// and "job managedBy multikueue" ("remote rayservice is deleted" and
// "missing job is not considered managed" are the step's, as for every kind)
#[test]
fn rayservice_managed_by_multikueue_or_not() {
    let mut mine = rs_managed(None);
    mine["spec"]["managedBy"] = json!("ray.io/kuberay-operator");
    assert_eq!(
        RAYSERVICE.unmanaged_reason(&mine).as_deref(),
        Some(
            r#"Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "ray.io/kuberay-operator""#
        )
    );
    assert_eq!(RAYSERVICE.unmanaged_reason(&rs_managed(None)), None);
}

// rayservice_multikueue_adapter_test.go, TestMultiKueueAdapter: "sync creates missing remote rayservice, WorkloadIdentifierAnnotations enabled"
#[test]
fn sync_creates_missing_remote_rayservice_workload_identifier_annotations_enabled() {
    let got = created(sync_rs(&rs_managed(None), None, true));
    let mut want = rs_managed(None);
    want["spec"].as_object_mut().unwrap().remove("managedBy");
    want["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    want["metadata"]["labels"] = json!({ ORIGIN_LABEL: ORIGIN1 });
    want["metadata"]["annotations"] = json!({ keys::PREBUILT_WORKLOAD_LABEL: "wl1" });
    assert_eq!(got, norm(&want));
}

/// Through the step: once the worker runs the service, a Serve config
/// changed on the manager is patched onto the worker's copy (and only
/// then); the copy as the worker has it otherwise is left alone.
#[test]
fn the_admitting_workers_rayservice_takes_the_managers_serve_config() {
    let owned = Wl::base()
        .check("ac1", "Ready", r#"The workload was admitted on "worker1""#)
        .owner("ray.io/v1", "RayService", "rayservice1")
        .reserved()
        .cluster("worker1");
    let theirs = |serve: &str| {
        let mut r = rs_remote(Some(serve));
        r["metadata"]["labels"][ORIGIN_LABEL] = json!(ORIGIN);
        Job(r)
    };
    for (local, want_patch) in [("new-config", true), ("old-config", false)] {
        let mut c = case(owned.clone());
        c.kind = &RAYSERVICE;
        c.local_job = Some(Job(rs_managed(Some(local))));
        c.workers = vec![worker("worker1")
            .wl(admitted_copy())
            .job(theirs("old-config"))];
        let w = c.run();
        w.job_is(0, Some(theirs(local)));
        let patched = w
            .step
            .actions
            .iter()
            .any(|a| matches!(a, Action::PatchRemoteJob { .. }));
        assert_eq!(patched, want_patch, "manager's config {local}");
    }
}

// ---- RayCluster elastic sync (Kueue v0.19.2 raycluster_multikueue_adapter_test.go) ----

static RAYCLUSTER: std::sync::LazyLock<JobKind> = std::sync::LazyLock::new(|| {
    let policies = crate::jobs::policy::PolicySet::embedded().unwrap();
    let p = policies
        .iter()
        .find(|p| p.target.kind == "RayCluster")
        .unwrap();
    JobKind::from_policy(p).expect("the RayCluster policy has managedBy")
});

/// `MakeCluster("raycluster1", ns).Suspend(false)`, elastic or not, its
/// first worker group at `replicas` × `hosts`; with `wl`, the worker's copy
/// naming that prebuilt Workload.
fn rc(elastic: bool, replicas: i64, hosts: Option<i64>, wl: Option<&str>) -> Value {
    let mut group = json!({"groupName": "workers-group-0", "replicas": replicas,
        "minReplicas": 0, "maxReplicas": 10, "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-worker"}]}}});
    if let Some(h) = hosts {
        group["numOfHosts"] = json!(h);
    }
    let mut c = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "raycluster1", "namespace": "ns", "resourceVersion": "9"},
        "spec": {"suspend": false, "rayVersion": "2.9.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head"}]}}},
            "workerGroupSpecs": [group]}});
    if elastic {
        c["metadata"]["annotations"] = json!({keys::ELASTIC_JOB_ANNOTATION: "true"});
    }
    if let Some(name) = wl {
        c["metadata"]["labels"] =
            json!({ORIGIN_LABEL: ORIGIN1, keys::PREBUILT_WORKLOAD_LABEL: name});
    }
    c
}

fn rc_synced(local: &Value, remote: &Value, workload: &str) -> Option<Value> {
    let ops = RAYCLUSTER.elastic_sync(local, remote, workload, false)?;
    Some(applied(remote, ops))
}

// raycluster_multikueue_adapter_test.go, TestMultiKueueAdapter: "elastic scale-down propagates reduced worker replicas to the remote"
#[test]
fn elastic_scale_down_propagates_reduced_worker_replicas_to_the_remote() {
    let got = rc_synced(
        &rc(true, 1, None, None),
        &rc(true, 3, None, Some("wl1")),
        "wl1",
    );
    assert_eq!(got, Some(rc(true, 1, None, Some("wl1"))));
}

// raycluster_multikueue_adapter_test.go, TestMultiKueueAdapter: "elastic NumOfHosts change propagates to the remote worker group"
#[test]
fn elastic_num_of_hosts_change_propagates_to_the_remote_worker_group() {
    let got = rc_synced(
        &rc(true, 2, Some(1), None),
        &rc(true, 2, Some(2), Some("wl1")),
        "wl1",
    );
    assert_eq!(got, Some(rc(true, 2, Some(1), Some("wl1"))));
}

// raycluster_multikueue_adapter_test.go, TestMultiKueueAdapter: "elastic scale-up with the current slice name propagates replicas and updates the workload label"
#[test]
fn elastic_scale_up_with_the_current_slice_name_propagates_replicas_and_updates_the_workload_label()
{
    let manager = rc(true, 3, None, None);
    // GenerateWorkloadNameWithExtra(name, "", gvk, "0"): generation 0.
    let current = RAYCLUSTER.current_slice(&manager);
    assert_eq!(
        current,
        crate::jobs::workload::name_with_extra("RayCluster", "ray.io", "raycluster1", "", "0")
    );
    let got = rc_synced(&manager, &rc(true, 1, None, Some("wl1")), &current);
    assert_eq!(got, Some(rc(true, 3, None, Some(&current))));
}

// raycluster_multikueue_adapter_test.go, TestMultiKueueAdapter: "elastic scale-up observing a stale old slice is skipped"
#[test]
fn elastic_scale_up_observing_a_stale_old_slice_is_skipped() {
    let got = rc_synced(
        &rc(true, 3, None, None),
        &rc(true, 1, None, Some("stale-wl")),
        "stale-wl",
    );
    assert_eq!(got, None);
}

// raycluster_multikueue_adapter_test.go, TestMultiKueueAdapter: "non-elastic raycluster does not sync worker replicas even with the feature enabled"
#[test]
fn non_elastic_raycluster_does_not_sync_worker_replicas_even_with_the_feature_enabled() {
    let got = rc_synced(
        &rc(false, 1, None, None),
        &rc(false, 3, None, Some("wl1")),
        "wl1",
    );
    assert_eq!(got, None);
}

/// Kueue compares the groups' pod counts: equal counts made up otherwise
/// (2 × 1 here, 1 × 2 there) are left as they are; a group only one side
/// has is left alone.
#[test]
fn equal_group_counts_are_in_sync_however_made_up() {
    let got = rc_synced(
        &rc(true, 2, Some(1), None),
        &rc(true, 1, Some(2), Some("wl1")),
        "wl1",
    );
    assert_eq!(got, None);
    let mut extra = rc(true, 1, None, None);
    extra["spec"]["workerGroupSpecs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"groupName": "only-here", "replicas": 4}));
    // 1 + 4 here against 3 there is a scale-up: synced for the current slice.
    let current = RAYCLUSTER.current_slice(&extra);
    let got = rc_synced(&extra, &rc(true, 3, None, Some("wl1")), &current).unwrap();
    assert_eq!(got, rc(true, 1, None, Some(&current)));
}
