//! The job reconciler's decisions (Kueue's `ReconcileGenericJob`), pure:
//! the job, its Workload as read and the facts of the moment in, the
//! writes to make and when to look again out. `controllers::jobs` reads
//! what a step needs and executes what it returns; nothing here does I/O
//! or reads the clock.
//!
//! One step decides one pass. A pass that writes waits for the watch to
//! bring the written object back and decides again from it, so a step
//! never stacks a second write on the outcome of the first (a status write
//! carries the Workload's resourceVersion and would conflict anyway).

use crate::vocabulary::pointer::At;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{json, Value};

use super::{
    execution,
    policy::{Policy, PolicySet, Progress},
    readiness::{self, Expiry, Settings as Readiness, Timeout},
    slices,
    workload::{self, JobPodSet, PodSetInfo, PriorityClasses, WorkloadError},
};
use crate::{
    api::kueue::v1beta2::{self as api, condition, finished_reason, Conditions},
    queueing::reservation::release,
    vocabulary::{
        keys::{self, QUEUE_NAME_LABEL},
        patch::PatchOp,
    },
};

/// What a step knows besides the job and its Workload: the kind's policy,
/// the cluster's priority classes and flavors as cached, the settings, the
/// time and the backoff's jitter.
pub struct Facts<'a> {
    pub policy: &'a Policy,
    /// Every integrated kind, to recognise a job whose parent is one.
    pub policies: &'a PolicySet,
    pub classes: &'a PriorityClasses,
    /// waitForPodsReady in force (`None`: turned off).
    pub readiness: Option<&'a Readiness>,
    /// What an admission adds to each pod set's template, from the cached
    /// flavors; `None` while one of its flavors is not cached yet.
    pub infos: &'a (dyn Fn(&api::Workload, &str) -> Option<Vec<PodSetInfo>> + Sync),
    pub now: &'a Time,
    /// In [0, 1): the requeue backoff's jitter.
    pub jitter: f64,
}

/// The job a step is about, as the reconciler names things.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The queue it names (`kueue.x-k8s.io/queue-name`).
    pub queue: String,
    /// The name its Workload has (`workload::name_for`); an elastic job's
    /// next slice's (its generation hashed in); the prebuilt one it names.
    pub workload: String,
    /// The job names a prebuilt Workload
    /// (`kueue.x-k8s.io/prebuilt-workload-name`): it is made by someone
    /// else (a MultiKueue manager, the user), waited for, adopted, never
    /// created.
    pub prebuilt: bool,
    /// An elastic job's (`kueue.x-k8s.io/elastic-job: "true"` on a kind
    /// that allows it): what its Workloads are, as the reconciler found
    /// them (see [`super::slices`]).
    pub slice: Option<SliceChain>,
}

/// Where an elastic job's new slice goes in its chain of slices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SliceChain {
    /// The chain's first slice's name (`kueue.x-k8s.io/workload-slice-name`
    /// of the slice a new one replaces); `None`: a new slice starts it.
    pub origin: Option<String>,
    /// `namespace/name` of the admitted slice a new one replaces.
    pub replaces: Option<String>,
}

/// The job this policy governs, named, or `None`: not queued, not this
/// reconciler's (a child of an integrated kind), or not yet named.
pub fn subject(policy: &Policy, policies: &PolicySet, job: &Value) -> Option<Subject> {
    subject_as(policy, policies, job, false)
}

/// [`subject`], for a job whose owner chain was walked: `top_level`, no
/// ancestor is queued, so a child is governed on its own.
pub fn subject_as(
    policy: &Policy,
    policies: &PolicySet,
    job: &Value,
    top_level: bool,
) -> Option<Subject> {
    if !policies.governs_as(policy, job, top_level) {
        return None;
    }
    let text = |p: &str| job.at(p).and_then(Value::as_str).map(String::from);
    let (namespace, name, uid) = (
        text("/metadata/namespace")?,
        text("/metadata/name")?,
        text("/metadata/uid")?,
    );
    let queue = job
        .at("/metadata/labels")
        .and_then(|l| l.get(QUEUE_NAME_LABEL))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let t = &policy.target;
    let elastic = policy.elastic_jobs && is_elastic(job);
    // Kueue's `newWorkloadName`: an elastic job's slices are told apart
    // by the job's generation (and an autoscaled one's by its object's).
    let named = |m: &str| {
        job.at(&format!("/metadata/{m}"))
            .and_then(|l| l.get(keys::PREBUILT_WORKLOAD_LABEL))
            .and_then(Value::as_str)
    };
    let prebuilt = policy
        .prebuilt_workloads
        .then(|| prebuilt_name(named("annotations"), named("labels")))
        .flatten();
    let workload = if let Some(name) = prebuilt {
        name.to_string()
    } else if elastic {
        let generation = job
            .at("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let extra = match &policy.autoscaled {
            Some(rule) => rule.name_extra(job, generation),
            None => generation.to_string(),
        };
        workload::name_with_extra(&t.kind, &t.group, &name, &uid, &extra)
    } else {
        workload::name_for(&t.kind, &t.group, &name, &uid)
    };
    Some(Subject {
        namespace,
        name,
        uid,
        queue,
        workload,
        prebuilt: prebuilt.is_some(),
        // A prebuilt Workload is the job's one Workload, elastic or not.
        slice: (elastic && prebuilt.is_none()).then(SliceChain::default),
    })
}

/// The prebuilt Workload a job names (Kueue's `PrebuiltWorkloadNameFor`),
/// from its `kueue.x-k8s.io/prebuilt-workload-name` annotation and label:
/// the annotation, else the label.
pub fn prebuilt_name<'a>(annotation: Option<&'a str>, label: Option<&'a str>) -> Option<&'a str> {
    annotation.or(label).filter(|n| !n.is_empty())
}

/// The job asks to be elastic (`kueue.x-k8s.io/elastic-job: "true"`).
pub fn is_elastic(job: &Value) -> bool {
    job.at("/metadata/annotations")
        .and_then(|a| a.get(keys::ELASTIC_JOB_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

/// An event's type, reason and note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

impl Note {
    pub(crate) fn normal(reason: &str, message: impl Into<String>) -> Self {
        Note {
            warning: false,
            reason: reason.into(),
            message: message.into(),
        }
    }

    pub(crate) fn warning(reason: &str, message: impl Into<String>) -> Self {
        Note {
            warning: true,
            ..Note::normal(reason, message)
        }
    }
}

/// One write of a step, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Create the job's Workload from this body; `event` on the job once
    /// created (not when one of its name exists already).
    CreateWorkload { body: Value, event: Note },
    /// JSON-patch the job; `event` on it when the patch applied.
    PatchJob {
        ops: Vec<PatchOp>,
        event: Option<Note>,
    },
    /// Merge-patch the job's status subresource with this status.
    ResetJobStatus(Value),
    /// Merge-patch the Workload's status (conditioned on the
    /// resourceVersion read).
    WorkloadStatus(Value),
    /// Merge-patch the Workload's `spec` with this object.
    WorkloadSpec(Value),
    /// Delete the Workload (on the condition of its UID), unless a job
    /// patch of the same step did not apply; `event` on the job.
    DeleteWorkload { event: Note },
    /// Let go of the Workload's `resource-in-use` finalizer.
    RemoveFinalizer,
    /// Merge-patch the Workload's metadata with this (a prebuilt
    /// Workload taken by its job; carries the resourceVersion read).
    AdoptWorkload(Value),
    /// An event on the job.
    JobEvent(Note),
    /// An event on the Workload.
    WorkloadEvent(Note),
}

/// When to look at the job again after the writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// When the job or its Workload changes.
    Wait,
    /// After this long (or on a change, whichever is first).
    After(Duration),
    /// Read the object the job's pod templates live in (its policy's
    /// `runtime_ref`) and step again with it; nothing was decided.
    ReadView,
}

/// A step's outcome: its writes, in order (a job's, or those of
/// [`pods`] and [`owners`]), then when to look again.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<W = Write> {
    pub writes: Vec<W>,
    pub then: Then,
}

impl<W> Step<W> {
    pub(crate) fn wait(writes: Vec<W>) -> Self {
        Step {
            writes,
            then: Then::Wait,
        }
    }

    pub(crate) fn after(writes: Vec<W>, d: Duration) -> Self {
        Step {
            writes,
            then: Then::After(d),
        }
    }
}

/// How long a job whose Workload cannot be composed waits before the next
/// try (an unknown priority class, a reference that cannot be followed).
const COMPOSE_RETRY: Duration = Duration::from_secs(5);

/// The job as its pod sets are read, for a step that needs it: the job
/// itself, or for a kind whose templates live in a referenced object, the
/// view read (`Err`: why it could not be). `None`: not read yet.
fn view<'v>(
    policy: &Policy,
    job: &'v Value,
    read: Option<&'v Result<Value, String>>,
) -> Result<&'v Value, Step> {
    if policy.runtime_ref.is_none() {
        return Ok(job);
    }
    match read {
        None => Err(Step {
            writes: Vec::new(),
            then: Then::ReadView,
        }),
        Some(Ok(v)) => Ok(v),
        Some(Err(message)) => Err(Step::after(
            vec![Write::JobEvent(Note::warning(
                "ErrWorkloadCompose",
                message.clone(),
            ))],
            COMPOSE_RETRY,
        )),
    }
}

/// One reconcile of a governed job: `wl` is the Workload of
/// `subject.workload` as read (`None`: there is none); `read` the view
/// asked for by an earlier step of this pass ([`Then::ReadView`]).
pub fn step(
    facts: &Facts,
    subject: &Subject,
    job: &Value,
    wl: Option<&api::Workload>,
    read: Option<&Result<Value, String>>,
) -> Result<Step, WorkloadError> {
    match decide(facts, subject, job, wl, read) {
        Ok(s) | Err(Decided::Step(s)) => Ok(s),
        Err(Decided::Failed(e)) => Err(e),
    }
}

/// A step decided early (`?` on [`view`]) or an error.
enum Decided {
    Step(Step),
    Failed(WorkloadError),
}

impl From<Step> for Decided {
    fn from(s: Step) -> Self {
        Decided::Step(s)
    }
}

impl From<WorkloadError> for Decided {
    fn from(e: WorkloadError) -> Self {
        Decided::Failed(e)
    }
}

fn decide(
    facts: &Facts,
    subject: &Subject,
    job: &Value,
    wl: Option<&api::Workload>,
    read: Option<&Result<Value, String>>,
) -> Result<Step, Decided> {
    let policy = facts.policy;
    let owned = |wl: &api::Workload| {
        workload::is_owned_by(wl.metadata.owner_references.as_deref(), &subject.uid)
    };
    if job.at("/metadata/deletionTimestamp").is_some() {
        // A kind whose operator still works on the job's quota while it is
        // deleted keeps its Workload until the job is gone; not a Workload
        // being deleted itself (a foreground deletion of the job waits for
        // it, and would wait forever).
        let deleting = wl.is_some_and(|wl| wl.metadata.deletion_timestamp.is_some());
        if !deleting
            && policy
                .keep_while_deleting
                .as_ref()
                .is_some_and(|k| k.on(job))
        {
            return Ok(Step::wait(Vec::new()));
        }
        // The job is going (jobframework's `finalize`): its Workload is
        // finished as orphaned and let go.
        return Ok(Step::wait(
            wl.filter(|wl| owned(wl))
                .map(|wl| orphaned(wl, facts.now))
                .unwrap_or_default(),
        ));
    }
    let suspended = suspended(policy, job);
    let progress = policy
        .status
        .as_ref()
        .map_or(Progress::Running, |s| s.progress(job));
    let stop = |message: &str| stop_job(policy, job, message);

    let Some(wl) = wl else {
        if progress != Progress::Running {
            return Ok(Step::wait(Vec::new()));
        }
        // A running elastic job that outgrew its admitted slice asks for
        // a new one and runs on the old one meanwhile.
        if subject.prebuilt {
            return Ok(prebuilt_missing(suspended, stop));
        }
        let scaling_up = subject.slice.as_ref().is_some_and(|c| c.replaces.is_some());
        if !suspended && !scaling_up {
            // Started without an admission (the webhook was bypassed).
            return Ok(Step::wait(vec![stop(NOT_ADMITTED)]));
        }
        let prio = match workload::priority(policy, job, facts.classes) {
            Ok(p) => p,
            Err(e) => return Ok(compose_error(&e)),
        };
        let view = view(policy, job, read)?;
        let mut body = workload::for_job(policy, view, &prio)?;
        if let Some(chain) = &subject.slice {
            slice_metadata(&mut body, &subject.workload, chain);
        }
        let event = Note::normal(
            "CreatedWorkload",
            format!(
                "Created Workload: {}/{}",
                subject.namespace, subject.workload
            ),
        );
        return Ok(Step::wait(vec![Write::CreateWorkload { body, event }]));
    };
    if subject.prebuilt {
        match workload::controller_of(wl) {
            // Kueue's `EnsurePrebuiltWorkloadOwnership`: the job becomes
            // the controller of the Workload made for it.
            None => return Ok(Step::wait(vec![adopt(wl, facts.policy, subject)])),
            Some(uid) if uid != subject.uid => {
                // Controlled by another object: as if it did not exist
                // (Kueue ignores it), and nothing of it is touched.
                let mut step = prebuilt_missing(suspended, stop);
                step.writes.push(not_owned(subject));
                return Ok(step);
            }
            Some(_) => {}
        }
    } else if !owned(wl) {
        // The Workload's name is taken by an object that is not this job's:
        // it is neither changed nor deleted, and the job stays suspended.
        return Ok(Step::wait(vec![not_owned(subject)]));
    }

    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    let now = facts.now;
    if conds.is_true(condition::FINISHED) {
        // Kueue's job reconciler lets go of a finished Workload.
        return Ok(Step::wait(held(wl)));
    }
    if wl.metadata.deletion_timestamp.is_some() {
        // The Workload is being deleted (jobframework: "The workload is
        // marked for deletion"): the job is stopped, its templates put
        // back, and the Workload let go; a new one queues the job again.
        if !suspended {
            return Ok(Step::after(
                vec![stop("Workload is deleted")],
                Duration::from_millis(200),
            ));
        }
        if let Some(s) = restore(policy, job, &workload::recorded_pod_sets(wl)) {
            return Ok(s);
        }
        return Ok(Step::wait(held(wl)));
    }
    if let Some(s) = prebuilt_out_of_sync(facts, subject, job, wl, &conds, read)? {
        return Ok(s);
    }
    let reserved_now = conds.is_true(condition::QUOTA_RESERVED);
    match workload::priority_update(policy, job, facts.classes, wl, reserved_now) {
        Ok(Some(spec)) => return Ok(updated(spec, "Updated workload priority class", subject)),
        Ok(None) => {}
        Err(e) => return Ok(compose_error(&e)),
    }
    if conds.is_true(condition::DEACTIVATION_TARGET) && wl.spec.active != Some(false) {
        // Kueue's workload controller deactivates a DeactivationTarget;
        // the queueing engine then evicts it for the target's reason.
        return Ok(Step::wait(vec![Write::WorkloadSpec(
            json!({"active": false}),
        )]));
    }
    let finished = match &progress {
        Progress::Running => None,
        Progress::Succeeded(m) => Some(("Succeeded", or(m, "Job finished successfully"))),
        Progress::Failed(m) => Some(("Failed", or(m, "Job failed"))),
    };
    if let Some((reason, message)) = finished {
        return Ok(Step::wait(vec![
            finish(wl, &conds, reason, message, now),
            Write::JobEvent(Note::normal(
                "FinishedWorkload",
                format!(
                    "Workload '{}/{}' is declared finished",
                    subject.namespace, subject.workload
                ),
            )),
        ]));
    }
    if let Some(as_read) = status_view(facts, job, read, &conds)? {
        if let Some(status) = readiness_status(facts, wl, as_read, &conds) {
            return Ok(Step::wait(vec![Write::WorkloadStatus(status)]));
        }
    }

    let reserved = conds.is_true(condition::QUOTA_RESERVED) && status.admission.is_some();
    if reserved && conds.is_true(condition::EVICTED) {
        if !suspended {
            let message = conds
                .get(condition::EVICTED)
                .map(|c| c.message.clone())
                .unwrap_or_default();
            return Ok(Step::wait(vec![stop(&message)]));
        }
        if let Some(s) = restore(policy, job, &workload::recorded_pod_sets(wl)) {
            return Ok(s);
        }
        // A job MultiKueue runs on a worker has no pods here: its status is
        // a mirror, stale once the worker is lost (Kueue would wait on it
        // for good); the worker's copy goes once the quota here does.
        if !dispatched(policy, job) && policy.status.as_ref().is_some_and(|s| s.is_active(job)) {
            // Pods are still stopping; their quota is not free yet.
            return Ok(Step::after(Vec::new(), Duration::from_millis(500)));
        }
        let released = release(
            &conds.0,
            wl.metadata.generation,
            now,
            status.accumulated_past_execution_time_seconds,
        );
        return Ok(Step::wait(
            released.map(Write::WorkloadStatus).into_iter().collect(),
        ));
    }

    if reserved && conds.is_true(condition::ADMITTED) {
        // The readiness timeout only for a kind that reports readiness.
        let settings = facts.readiness.filter(|_| {
            policy
                .status
                .as_ref()
                .is_some_and(|s| s.pods_ready.is_some())
        });
        let then = match running_timers(settings, wl, &conds, now, facts.jitter) {
            Timer::Expired(writes) => return Ok(Step::wait(writes)),
            Timer::Left(d) => Then::After(d),
            Timer::Idle => Then::Wait,
        };
        if !suspended {
            if let Some(s) = no_longer_matching(facts, subject, job, wl, read) {
                return Ok(s);
            }
            return Ok(Step {
                writes: Vec::new(),
                then,
            });
        }
        let Some(mut infos) = (facts.infos)(wl, &subject.queue) else {
            return Ok(Step::after(Vec::new(), Duration::from_millis(200)));
        };
        if subject.slice.is_some() {
            // Every pod of the chain carries its first slice's name
            // (Kueue's `getPodSetsInfoFromStatus`).
            let origin = slice_name(wl);
            for info in &mut infos {
                info.annotations
                    .insert(keys::WORKLOAD_SLICE_NAME_ANNOTATION.into(), origin.clone());
            }
        }
        let view = view(policy, job, read)?;
        let checks = status.admission_checks.as_deref().unwrap_or_default();
        let writes = match workload::with_check_updates(&mut infos, checks)
            .and_then(|()| workload::start_patch(policy, view, &infos))
        {
            Ok(ops) => {
                // A kind started in two writes (TrainJob) says so once.
                let starts = ops.iter().any(|o| o.path == policy.suspend.as_str());
                let cq = status
                    .admission
                    .as_ref()
                    .and_then(|a| a.cluster_queue.clone())
                    .unwrap_or_default();
                vec![Write::PatchJob {
                    ops,
                    event: starts
                        .then(|| Note::normal("Started", format!("Admitted by clusterQueue {cq}"))),
                }]
            }
            Err(e) => {
                vec![
                    finish(wl, &conds, "FailedToStart", &e.to_string(), now),
                    Write::JobEvent(Note::warning("FailedToStart", e.to_string())),
                ]
            }
        };
        return Ok(Step { writes, then });
    }
    if reserved && suspended {
        // Quota reserved, admission checks pending: nothing to do yet (the
        // Workload is not re-created under its reservation). A running job
        // is stopped below, as Kueue stops any job whose Workload is not
        // admitted.
        return Ok(Step::wait(Vec::new()));
    }

    // Not admitted. An elastic job is not stopped: its pods wait behind
    // the elastic-job scheduling gate (Kueue's reconciler step 8).
    if !suspended {
        if subject.slice.is_some() {
            return Ok(Step::wait(Vec::new()));
        }
        return Ok(Step::wait(vec![stop(NOT_ADMITTED)]));
    }
    let recorded = workload::recorded_pod_sets(wl);
    // Templates still carrying an admission (stopped without one) are put
    // back; any other change is the user's, which the Workload follows.
    if workload::carries_admission(policy, job) {
        if let Some(s) = restore(policy, job, &recorded) {
            return Ok(s);
        }
    }
    if let Some(s) = backoff(wl, &conds, now) {
        return Ok(s);
    }
    // Keep the Workload in step with the suspended job: one that no longer
    // matches it (a pod set's count, containers, tolerations…) is brought
    // up to date in place, as Kueue's `updateWorkloadToMatchJob` does for
    // a Workload not holding quota.
    let view = view(policy, job, read)?;
    let current = workload::pod_sets(policy, view)?;
    let max_exec = workload::max_execution_time(job);
    if !workload::equivalent(
        &current,
        max_exec,
        &recorded,
        wl.spec.maximum_execution_time_seconds,
    ) {
        let mut spec = json!({
            "queueName": subject.queue,
            "podSets": workload::pod_sets_json(current),
            "maximumExecutionTimeSeconds": max_exec,
        });
        if let Ok(prio) = workload::priority(policy, job, facts.classes) {
            workload::set_priority(&mut spec, &prio);
        }
        return Ok(updated(
            spec,
            "Updated not matching Workload for suspended job",
            subject,
        ));
    }
    // A class's new value reaches the Workload through the queueing
    // controller (Kueue's WorkloadPriorityClass controller), a new class
    // through `priority_update` above.
    if wl.spec.queue_name.as_deref() == Some(subject.queue.as_str()) {
        return Ok(Step::wait(Vec::new()));
    }
    Ok(Step::wait(vec![Write::WorkloadSpec(
        json!({"queueName": subject.queue}),
    )]))
}

/// Kueue's `ensureOneWorkload` for a running job whose admitted Workload
/// no longer describes it (`EquivalentToWorkload` against the pod sets as
/// admitted, tolerations aside: a non-elastic Job's parallelism changed):
/// the job is stopped and the Workload deleted, to be made again from the
/// job. Elastic jobs follow through their slices, prebuilt Workloads
/// through [`prebuilt_out_of_sync`]; a kind whose pod sets are read from
/// another object (TrainJob's runtime) through the view read for its
/// readiness ([`status_view`]), and not at all when it cannot be read.
fn no_longer_matching(
    facts: &Facts,
    subject: &Subject,
    job: &Value,
    wl: &api::Workload,
    read: Option<&Result<Value, String>>,
) -> Option<Step> {
    let policy = facts.policy;
    if subject.slice.is_some() || subject.prebuilt {
        return None;
    }
    let current = workload::pod_sets(policy, view(policy, job, read).ok()?).ok()?;
    if workload::matches(
        &current,
        workload::max_execution_time(job),
        &workload::admitted_pod_sets(wl),
        wl.spec.maximum_execution_time_seconds,
        true,
    ) {
        return None;
    }
    Some(Step::wait(vec![
        stop_job(policy, job, NO_MATCHING_WORKLOAD),
        Write::DeleteWorkload {
            event: Note::normal(
                "DeletedWorkload",
                format!(
                    "Deleted not matching Workload: {}/{}",
                    subject.namespace,
                    wl.metadata.name.as_deref().unwrap_or_default()
                ),
            ),
        },
    ]))
}

/// Kueue's stop message for a job whose Workload no longer matches it.
pub const NO_MATCHING_WORKLOAD: &str =
    "No matching Workload; restoring pod templates according to existent Workload";

/// How long after this replica takes the Lease a pass that waited for it
/// runs. A finished job's first: its Finished write frees the quota the
/// waiting Workloads need, so the new leader's first admission is not
/// queued behind a pass per job; the others a beat later.
pub fn after_takeover(policy: &Policy, job: &Value) -> Duration {
    let finished = policy
        .status
        .as_ref()
        .is_some_and(|s| s.progress(job) != Progress::Running);
    if finished {
        Duration::ZERO
    } else {
        TAKEOVER_BEAT
    }
}

/// See [`after_takeover`].
pub const TAKEOVER_BEAT: Duration = Duration::from_secs(1);

/// The job's suspend field is `true`.
pub fn suspended(policy: &Policy, job: &Value) -> bool {
    matches!(policy.suspend.resolve(job), Some(Value::Bool(true)))
}

/// What an elastic job's slices call for before its step.
#[derive(Debug, Clone, PartialEq)]
pub enum SlicePass {
    /// Writes on the job's slices (by index), first: slices finished, a
    /// slice resized. The watch brings them back and the pass decides
    /// again.
    Writes(Vec<(usize, Write)>),
    /// The step is about the slice at this index (`None`: a new slice,
    /// placed in its chain in `subject.slice`).
    Step(Option<usize>),
    /// The job's pod sets cannot be read: this step tells it.
    Told(Step),
}

/// What an elastic job of a policy with an `autoscaled` rule calls for
/// before its slices ([`super::autoscaling`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Following {
    /// The job as its slices are planned from, named and stepped.
    Job(Value),
    /// The job's annotations written first, or why its counts cannot be
    /// followed; the watch brings the job back.
    Step(Step),
}

/// Kueue's `UpdatePodSets` and custom annotations for an elastic job
/// following `object` (as read; `None`: it names none or it is gone).
pub fn following(policy: &Policy, job: &Value, object: Option<&Value>) -> Following {
    let Some(rule) = &policy.autoscaled else {
        return Following::Job(job.clone());
    };
    match rule.follow(policy, job, object) {
        Ok(f) if f.patch.is_empty() => Following::Job(f.job),
        Ok(f) => Following::Step(Step::wait(vec![Write::PatchJob {
            ops: f.patch,
            event: None,
        }])),
        Err(message) => Following::Step(Step::after(
            vec![Write::JobEvent(Note::warning(
                "ErrWorkloadCompose",
                message,
            ))],
            COMPOSE_RETRY,
        )),
    }
}

/// Kueue's `EnsureWorkloadSlices` for an elastic job: `list` holds its
/// unfinished Workloads, oldest first.
pub fn slice_pass(
    policy: &Policy,
    subject: &mut Subject,
    job: &Value,
    list: &[api::Workload],
    now: &Time,
) -> SlicePass {
    let counts: slices::Counts = match workload::pod_sets(policy, job) {
        Ok(sets) => sets.into_iter().map(|ps| (ps.name, ps.count)).collect(),
        Err(e) => return SlicePass::Told(compose_error(&e)),
    };
    let facts: Vec<slices::Slice> = list.iter().map(slices::Slice::of).collect();
    let plan = slices::plan(&counts, &facts);
    if !plan.finish.is_empty() {
        return SlicePass::Writes(
            plan.finish
                .iter()
                .map(|&(i, reason, message)| {
                    let wl = &list[i];
                    let conds =
                        Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()));
                    (i, finish(wl, &conds, reason, message, now))
                })
                .collect(),
        );
    }
    match plan.pick {
        slices::Pick::New { replaces } => {
            if let (Some(r), Some(chain)) = (replaces, subject.slice.as_mut()) {
                chain.replaces = Some(facts[r].key.clone());
                chain.origin = Some(slice_name(&list[r]));
            }
            SlicePass::Step(None)
        }
        slices::Pick::Keep(i) => SlicePass::Step(Some(i)),
        slices::Pick::Resize(i) => {
            let mut sets = serde_json::to_value(list[i].spec.pod_sets.clone().unwrap_or_default())
                .unwrap_or_default();
            for ps in sets.as_array_mut().into_iter().flatten() {
                let name = ps["name"].as_str().unwrap_or_default().to_string();
                if let Some(n) = counts.get(&name) {
                    ps["count"] = json!(n);
                }
            }
            SlicePass::Writes(vec![(i, Write::WorkloadSpec(json!({ "podSets": sets })))])
        }
        // Not a matter of counts: the newest slice is the job's Workload,
        // kept in step by the ordinary rules.
        slices::Pick::Incompatible => SlicePass::Step(list.len().checked_sub(1)),
    }
}

/// The slice whose grants a running elastic job's gated pods are let go
/// by: the latest holding quota, once admitted (Kueue's ElasticJobUngater
/// redirects to it); `None` while the job is suspended.
pub fn granting(policy: &Policy, job: &Value, list: &[api::Workload]) -> Option<usize> {
    if suspended(policy, job) {
        return None;
    }
    let facts: Vec<slices::Slice> = list.iter().map(slices::Slice::of).collect();
    slices::latest_active(&facts).filter(|&i| {
        Conditions::of(list[i].status.as_ref().and_then(|s| s.conditions.as_ref()))
            .is_true(condition::ADMITTED)
    })
}

/// Whether MultiKueue runs the job on a worker (its `managedBy`): it has no
/// pods here.
pub fn dispatched(policy: &Policy, job: &Value) -> bool {
    policy
        .managed_by
        .as_ref()
        .and_then(|p| job.at(p.as_str()))
        .is_some_and(|v| v == keys::MULTIKUEUE_CONTROLLER)
}

/// The Workload whose grants a running elastic job's gated pods are let
/// go by (none for a job MultiKueue runs elsewhere): the slice
/// [`granting`] names, or for a job running a prebuilt Workload (a
/// MultiKueue worker's copy, whose slices the manager makes and sends)
/// that Workload once admitted.
pub fn ungated_by<'a>(
    policy: &Policy,
    subject: &Subject,
    job: &Value,
    slices: &'a [api::Workload],
    prebuilt: Option<&'a api::Workload>,
) -> Option<&'a api::Workload> {
    if dispatched(policy, job) {
        return None;
    }
    if subject.slice.is_some() {
        return granting(policy, job, slices).map(|i| &slices[i]);
    }
    if !(subject.prebuilt && policy.elastic_jobs && is_elastic(job)) {
        return None;
    }
    // Only once it is the job's own (Kueue's `EnsurePrebuiltWorkloadOwnership`).
    let uid = job.at("/metadata/uid").and_then(Value::as_str);
    let wl = prebuilt.filter(|wl| {
        workload::is_owned_by(wl.metadata.owner_references.as_deref(), uid.unwrap_or(""))
    })?;
    granting(policy, job, std::slice::from_ref(wl)).map(|_| wl)
}

/// Kueue's `prepareWorkloadSlice`: the elastic-job annotation, the
/// chain's first slice's name, and the slice a new one replaces.
fn slice_metadata(body: &mut Value, name: &str, chain: &SliceChain) {
    body["metadata"]["name"] = json!(name);
    let mut ann = body["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    ann.insert(keys::ELASTIC_JOB_ANNOTATION.into(), json!("true"));
    ann.insert(
        keys::WORKLOAD_SLICE_NAME_ANNOTATION.into(),
        json!(chain.origin.as_deref().unwrap_or(name)),
    );
    if let Some(old) = &chain.replaces {
        ann.insert(keys::SLICE_REPLACEMENT_FOR_ANNOTATION.into(), json!(old));
    }
    body["metadata"]["annotations"] = Value::Object(ann);
}

/// Kueue's `SliceName`: the chain's first slice's name, or the Workload's.
pub fn slice_name(wl: &api::Workload) -> String {
    wl.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::WORKLOAD_SLICE_NAME_ANNOTATION))
        .cloned()
        .unwrap_or_else(|| wl.metadata.name.clone().unwrap_or_default())
}

/// The job told why its Workload cannot be made as it asks (a priority
/// class that does not exist), and looked at again later.
fn compose_error(e: &WorkloadError) -> Step {
    Step::after(
        vec![Write::JobEvent(Note::warning(
            "ErrWorkloadCompose",
            e.to_string(),
        ))],
        COMPOSE_RETRY,
    )
}

/// The Workload's spec patched, and the job told (Kueue's `UpdatedWorkload`
/// event: "<what>: ns/name").
fn updated(spec: Value, what: &str, subject: &Subject) -> Step {
    Step::wait(vec![
        Write::WorkloadSpec(spec),
        Write::JobEvent(Note::normal(
            "UpdatedWorkload",
            format!("{what}: {}/{}", subject.namespace, subject.workload),
        )),
    ])
}

/// Kueue's note on a job stopped because it runs without an admission.
const NOT_ADMITTED: &str = "Not admitted by cluster queue";

fn or<'a>(message: &'a str, default: &'a str) -> &'a str {
    if message.is_empty() {
        default
    } else {
        message
    }
}

/// The Workload marked `Finished` for `reason`: the status to write.
pub(crate) fn finished_status(
    wl: &api::Workload,
    conds: &Conditions,
    reason: &str,
    message: &str,
    now: &Time,
) -> Value {
    let mut c = conds.clone();
    c.set(
        condition::FINISHED,
        true,
        reason,
        message,
        now,
        wl.metadata.generation,
    );
    json!({"conditions": c.0})
}

fn finish(
    wl: &api::Workload,
    conds: &Conditions,
    reason: &str,
    message: &str,
    now: &Time,
) -> Write {
    Write::WorkloadStatus(finished_status(wl, conds, reason, message, now))
}

/// The job suspended, and told why (Kueue's `stopJob`: event `Stopped`).
fn stop_job(policy: &Policy, job: &Value, message: &str) -> Write {
    Write::PatchJob {
        ops: workload::suspend_patch(policy, job),
        event: Some(Note::normal("Stopped", message)),
    }
}

/// Kueue's stop message for a job whose prebuilt Workload is not its to use.
pub const MISSING_WORKLOAD: &str = "missing workload";

/// Kueue's `Finished` message for a prebuilt Workload that does not
/// describe its job (reason `OutOfSync`).
pub const PREBUILT_OUT_OF_SYNC: &str = "The prebuilt workload is out of sync with its user job";

/// Kueue's warning for a Workload of the job's name that is not the job's.
pub fn not_owned_message(namespace: &str, workload: &str) -> String {
    format!("Workload {namespace}/{workload} exists, but is not owned by this job")
}

/// Kueue's `handleJobWithNoWorkload` for a job naming a prebuilt Workload
/// that is not there (or not its to use): a running job is stopped
/// ("missing workload"); then it waits for the Workload, whose creation
/// wakes it (`controllers::jobs`).
fn prebuilt_missing(suspended: bool, stop: impl Fn(&str) -> Write) -> Step {
    if suspended {
        Step::wait(Vec::new())
    } else {
        Step::wait(vec![stop(MISSING_WORKLOAD)])
    }
}

/// The warning for a Workload of the job's name that is not the job's.
fn not_owned(subject: &Subject) -> Write {
    Write::JobEvent(Note::warning(
        "ErrWorkloadCompose",
        not_owned_message(&subject.namespace, &subject.workload),
    ))
}

/// The prebuilt Workload taken by its job ([`workload::adoption`]).
fn adopt(wl: &api::Workload, policy: &Policy, subject: &Subject) -> Write {
    let t = &policy.target;
    Write::AdoptWorkload(workload::adoption(
        wl,
        &t.api_version(),
        &t.kind,
        &subject.name,
        &subject.uid,
    ))
}

/// Kueue's `ensurePrebuiltWorkloadInSync`: a prebuilt Workload whose pod
/// sets are not the job's is finished (`OutOfSync`) rather than run for a
/// job it does not describe, and a running job is stopped. A Workload
/// holding quota is compared only while its job is suspended with the
/// templates as the Workload recorded them: a started job's carry its
/// admission, which is no difference (Kueue compares those with the
/// running pod sets; a running job's templates are immutable in every
/// kind that allows prebuilt Workloads). An elastic job's Workload
/// follows its scaling and is not checked, as in Kueue.
fn prebuilt_out_of_sync(
    facts: &Facts,
    subject: &Subject,
    job: &Value,
    wl: &api::Workload,
    conds: &Conditions,
    read: Option<&Result<Value, String>>,
) -> Result<Option<Step>, Decided> {
    let policy = facts.policy;
    if !subject.prebuilt || policy.elastic_jobs && is_elastic(job) {
        return Ok(None);
    }
    let recorded = workload::recorded_pod_sets(wl);
    let suspended = suspended(policy, job);
    if conds.is_true(condition::QUOTA_RESERVED)
        && (!suspended || !workload::restore_patch(policy, job, &recorded).is_empty())
    {
        return Ok(None);
    }
    let view = view(policy, job, read)?;
    let current = workload::pod_sets(policy, view)?;
    if workload::equivalent(
        &current,
        workload::max_execution_time(job),
        &recorded,
        wl.spec.maximum_execution_time_seconds,
    ) {
        return Ok(None);
    }
    let mut writes = vec![finish(
        wl,
        conds,
        finished_reason::OUT_OF_SYNC,
        PREBUILT_OUT_OF_SYNC,
        facts.now,
    )];
    if !suspended {
        writes.push(stop_job(policy, job, MISSING_WORKLOAD));
    }
    Ok(Some(Step::wait(writes)))
}

/// The finalizer let go, when the Workload holds it.
fn held(wl: &api::Workload) -> Vec<Write> {
    if holds_quota_finalizer(wl) {
        vec![Write::RemoveFinalizer]
    } else {
        Vec::new()
    }
}

/// Whether the Workload holds Kueue's `resource-in-use` finalizer.
pub(crate) fn holds_quota_finalizer(wl: &api::Workload) -> bool {
    wl.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == keys::RESOURCE_IN_USE_FINALIZER)
}

/// Kueue's `FinalizeOrphanedWorkload` for a Workload whose job is going:
/// finished (`OwnerNotFound`) unless already finished or being deleted;
/// once it is, its `resource-in-use` finalizer removed.
fn orphaned(wl: &api::Workload, now: &Time) -> Vec<Write> {
    let conds = Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()));
    if wl.metadata.deletion_timestamp.is_none() && !conds.is_true(condition::FINISHED) {
        let owner_gone = "The workload's owner no longer exists";
        return vec![finish(wl, &conds, "OwnerNotFound", owner_gone, now)];
    }
    held(wl)
}

/// A suspended job's templates put back as its Workload recorded them,
/// the status fields that block that cleared first; `None` when they
/// are as recorded.
fn restore(policy: &Policy, job: &Value, recorded: &[JobPodSet]) -> Option<Step> {
    let ops = workload::restore_patch(policy, job, recorded);
    if ops.is_empty() {
        return None;
    }
    if let Some(status) = status_reset(policy, job) {
        return Some(Step::after(
            vec![Write::ResetJobStatus(status)],
            Duration::from_millis(100),
        ));
    }
    Some(Step::after(
        vec![Write::PatchJob { ops, event: None }],
        Duration::from_secs(1),
    ))
}

/// The policy's `reset` status fields the job has set, as the status to
/// merge (each `null`); `None` when there are none.
fn status_reset(policy: &Policy, job: &Value) -> Option<Value> {
    let rule = policy.status.as_ref()?;
    let mut status = serde_json::Map::new();
    for p in &rule.reset {
        if p.resolve(job).is_some_and(|v| !v.is_null()) {
            if let [first, leaf] = p.tokens() {
                if first == "status" {
                    status.insert(leaf.clone(), Value::Null);
                }
            }
        }
    }
    (!status.is_empty()).then(|| json!({ "status": status }))
}

/// What readiness and reclaim read: the job, or for a kind whose pod
/// templates live in a referenced object (TrainJob) its view, which holds
/// the job's status beside the replicated jobs the runtime builds (Kueue
/// reads the child JobSet it would build). Read only while the Workload
/// holds quota, when they matter; `None` when it cannot be read (Kueue's
/// TrainJob is not ready then, and reclaims nothing).
fn status_view<'v>(
    facts: &Facts,
    job: &'v Value,
    read: Option<&'v Result<Value, String>>,
    conds: &Conditions,
) -> Result<Option<&'v Value>, Step> {
    let policy = facts.policy;
    let reported = policy
        .status
        .as_ref()
        .is_some_and(|s| s.pods_ready.is_some() || s.reclaimable_pods.is_some());
    if policy.runtime_ref.is_none() || !reported {
        return Ok(Some(job));
    }
    if !conds.is_true(condition::QUOTA_RESERVED) {
        return Ok(None);
    }
    match read {
        Some(Err(_)) => Ok(None),
        _ => view(policy, job, read).map(Some),
    }
}

/// Kueue's jobframework steps 4 and 5 as the status to write:
/// `status.reclaimablePods` from the job's status (its policy's
/// `reclaimablePods`), then the `PodsReady` condition (its policy's
/// `podsReady`, with waitForPodsReady on). `None` when nothing changed.
fn readiness_status(
    facts: &Facts,
    wl: &api::Workload,
    job: &Value,
    conds: &Conditions,
) -> Option<Value> {
    let rule = facts.policy.status.as_ref()?;
    if let Some(reclaim) = &rule.reclaimable_pods {
        if let Some(status) = reclaim_status(wl, &reclaim.reclaimable(job)) {
            return Some(status);
        }
    }
    let total: i64 = wl
        .spec
        .pod_sets
        .iter()
        .flatten()
        .map(|ps| i64::from(ps.count))
        .sum();
    let (Some(_), Some(all_ready)) = (facts.readiness, rule.pods_ready(job, total)) else {
        return None;
    };
    pods_ready_status(wl, conds, all_ready, facts.now)
}

/// Kueue's jobframework step 4 as the status to write: the Workload's
/// `status.reclaimablePods` set to the pods each pod set no longer needs
/// (`found`, by pod set, limited to its count); `None` when unchanged.
pub fn reclaim_status(wl: &api::Workload, found: &[(String, i64)]) -> Option<Value> {
    let counts: Vec<(String, i64)> = wl
        .spec
        .pod_sets
        .iter()
        .flatten()
        .map(|ps| (ps.name.clone(), i64::from(ps.count)))
        .collect();
    let want = readiness::limit_reclaimable(found, &counts);
    let have: Vec<(String, i32)> = wl
        .status
        .as_ref()
        .and_then(|s| s.reclaimable_pods.as_ref())
        .into_iter()
        .flatten()
        .filter(|r| r.count > 0)
        .map(|r| (r.name.clone(), r.count))
        .collect();
    if want == have {
        return None;
    }
    let list: Vec<Value> = want
        .iter()
        .map(|(n, c)| json!({"name": n, "count": c}))
        .collect();
    let value = if list.is_empty() {
        Value::Null
    } else {
        json!(list)
    };
    Some(json!({ "reclaimablePods": value }))
}

/// The deadlines Kueue keeps for the Workload of a job, for the kinds
/// whose reconciler is not [`step`] (an AppWrapper, pods), in the order
/// its workload controller and jobframework keep them: a
/// `DeactivationTarget` made inactive; under waitForPodsReady
/// (`readiness`: the settings and whether the job's pods are all ready)
/// the `PodsReady` condition; unreserved, the end of a requeue backoff;
/// admitted and not being evicted, the maximum execution time and the
/// readiness timeout. `Expired`: the writes due now; `Left`: when to look
/// again.
pub fn deadlines(
    readiness: Option<(&Readiness, bool)>,
    wl: &api::Workload,
    conds: &Conditions,
    now: &Time,
    jitter: f64,
) -> Timer {
    if conds.is_true(condition::DEACTIVATION_TARGET) && wl.spec.active != Some(false) {
        return Timer::Expired(vec![Write::WorkloadSpec(json!({"active": false}))]);
    }
    if let Some((_, ready)) = readiness {
        if let Some(s) = pods_ready_status(wl, conds, ready, now) {
            return Timer::Expired(vec![Write::WorkloadStatus(s)]);
        }
    }
    if !conds.is_true(condition::QUOTA_RESERVED) {
        // Evicted for PodsReadyTimeout, it queues again once its backoff
        // ends.
        return match backoff_status(wl, conds, now) {
            Some(Err(left)) => Timer::Left(left),
            Some(Ok(s)) => Timer::Expired(vec![Write::WorkloadStatus(s)]),
            None => Timer::Idle,
        };
    }
    if !conds.is_true(condition::ADMITTED) || conds.is_true(condition::EVICTED) {
        // Not running under an admission (or leaving it): no deadline.
        return Timer::Idle;
    }
    running_timers(readiness.map(|(s, _)| s), wl, conds, now, jitter)
}

/// The timers of an admitted Workload, the maximum execution time first,
/// then under waitForPodsReady (`readiness`) the readiness timeout: the
/// writes of the first that ran out, else the earliest time left.
fn running_timers(
    readiness: Option<&Readiness>,
    wl: &api::Workload,
    conds: &Conditions,
    now: &Time,
    jitter: f64,
) -> Timer {
    let ready = readiness.map(|settings| readiness_timer(settings, wl, conds, now, jitter));
    let mut next: Option<Duration> = None;
    for timer in [Some(execution_timer(wl, conds, now)), ready]
        .into_iter()
        .flatten()
    {
        match timer {
            Timer::Expired(writes) => return Timer::Expired(writes),
            Timer::Left(d) => next = Some(next.map_or(d, |n| n.min(d))),
            Timer::Idle => {}
        }
    }
    next.map_or(Timer::Idle, Timer::Left)
}

/// The `PodsReady` condition of a Workload whose job reports `all_ready`,
/// under waitForPodsReady, as the status to write (Kueue's jobframework
/// step 5); `None` when nothing changes.
fn pods_ready_status(
    wl: &api::Workload,
    conds: &Conditions,
    all_ready: bool,
    now: &Time,
) -> Option<Value> {
    let admitted = conds.is_true(condition::ADMITTED);
    let current = conds.get(condition::PODS_READY);
    if !admitted && current.is_none() {
        // Kueue writes WaitForStart on every Workload; here it waits for
        // the first admission (one write less per Workload that never
        // runs; the timeout reads a missing condition the same).
        return None;
    }
    let (status, reason, message) = readiness::pods_ready_condition(
        admitted,
        current.map(|c| (c.status == "True", c.reason.as_str())),
        all_ready,
    );
    let mut c = conds.clone();
    c.set(
        condition::PODS_READY,
        status,
        reason,
        message,
        now,
        wl.metadata.generation,
    )
    .then(|| json!({"conditions": c.0}))
}

/// A deadline of an admitted Workload.
pub enum Timer {
    /// None runs.
    Idle,
    /// This long is left.
    Left(Duration),
    /// It ran out: these writes.
    Expired(Vec<Write>),
}

/// Kueue's `reconcileMaxExecutionTime` for an admitted Workload: the time
/// left, or once it has run out, the Workload marked `DeactivationTarget`
/// (its accumulated time cleared) with Kueue's Warning event.
fn execution_timer(wl: &api::Workload, conds: &Conditions, now: &Time) -> Timer {
    let accumulated = wl
        .status
        .as_ref()
        .and_then(|s| s.accumulated_past_execution_time_seconds);
    match execution::clock(
        wl.spec.maximum_execution_time_seconds,
        accumulated,
        conds,
        now,
    ) {
        execution::Clock::Idle => Timer::Idle,
        execution::Clock::Left(ms) => Timer::Left(Duration::from_millis(ms.unsigned_abs())),
        execution::Clock::Expired { max_secs } => Timer::Expired(vec![
            Write::WorkloadStatus(execution::exceeded_status(
                conds.clone(),
                wl.metadata.generation,
                now,
            )),
            Write::WorkloadEvent(Note::warning(
                execution::EXCEEDED_REASON,
                execution::exceeded_note(max_secs),
            )),
        ]),
    }
}

/// Kueue's `reconcileNotReadyTimeout` for an admitted Workload of a kind
/// that reports readiness, under these waitForPodsReady `settings`
/// (`jitter` in [0, 1)): the time left, or once it ran out, either
/// `DeactivationTarget` (`RequeuingLimitExceeded`) or the eviction
/// (`PodsReadyTimeout`, with `status.requeueState` moved on by the
/// backoff).
fn readiness_timer(
    settings: &readiness::Settings,
    wl: &api::Workload,
    conds: &Conditions,
    now: &Time,
    jitter: f64,
) -> Timer {
    if wl.spec.active == Some(false)
        || conds.is_true(condition::EVICTED)
        || conds.is_true(condition::DEACTIVATION_TARGET)
    {
        return Timer::Idle;
    }
    let ms = |t: &Time| t.0.as_millisecond();
    let admitted_at = conds
        .get(condition::ADMITTED)
        .filter(|c| c.status == "True")
        .map(|c| ms(&c.last_transition_time));
    let pods_ready = conds.get(condition::PODS_READY).map(|c| {
        (
            c.status == "True",
            c.reason.as_str(),
            ms(&c.last_transition_time),
        )
    });
    let cause = match readiness::timeout(settings, admitted_at, pods_ready, ms(now)) {
        Timeout::None => return Timer::Idle,
        Timeout::Running { left_ms, .. } => {
            return Timer::Left(Duration::from_millis(left_ms.unsigned_abs()))
        }
        Timeout::Expired { cause } => cause,
    };
    let state = wl.status.as_ref().and_then(|s| s.requeue_state.as_ref());
    let expiry = readiness::on_expiry(
        settings,
        state.and_then(|r| r.count),
        state.and_then(|r| r.requeue_at.as_ref()).map(ms),
        ms(now),
        jitter,
    );
    let mut c = conds.clone();
    let (count, requeue_at) = match expiry {
        Expiry::Deactivate => {
            c.set(
                condition::DEACTIVATION_TARGET,
                true,
                readiness::LIMIT_REASON,
                readiness::LIMIT_MESSAGE,
                now,
                wl.metadata.generation,
            );
            return Timer::Expired(vec![Write::WorkloadStatus(json!({"conditions": c.0}))]);
        }
        Expiry::Requeue { count, requeue_at } => (count, requeue_at),
    };
    let (ns, name) = (
        wl.metadata.namespace.as_deref().unwrap_or_default(),
        wl.metadata.name.as_deref().unwrap_or_default(),
    );
    let message = readiness::timeout_message(ns, name);
    c.set(
        condition::EVICTED,
        true,
        readiness::TIMEOUT_REASON,
        &message,
        now,
        wl.metadata.generation,
    );
    let at = k8s_openapi::jiff::Timestamp::from_millisecond(requeue_at)
        .map(Time)
        .unwrap_or_else(|_| now.clone());
    let mut evictions = wl
        .status
        .as_ref()
        .and_then(|s| s.scheduling_stats.as_ref())
        .and_then(|s| s.evictions.clone())
        .unwrap_or_default();
    match evictions
        .iter_mut()
        .find(|e| e.reason == readiness::TIMEOUT_REASON && e.underlying_cause == cause)
    {
        Some(e) => e.count += 1,
        None => evictions.push(api::WorkloadSchedulingStatsEviction {
            reason: readiness::TIMEOUT_REASON.into(),
            underlying_cause: cause.into(),
            count: 1,
        }),
    }
    let mut status = json!({
        "conditions": c.0,
        "requeueState": {"count": count, "requeueAt": at},
        "schedulingStats": {"evictions": evictions},
    });
    // Kueue's eviction forgets the failed nodes of the placement it ends.
    if wl
        .status
        .as_ref()
        .and_then(|s| s.unhealthy_nodes.as_ref())
        .is_some_and(|n| !n.is_empty())
    {
        status["unhealthyNodes"] = Value::Null;
    }
    let reason = format!("{}DueTo{}", condition::EVICTED, readiness::TIMEOUT_REASON);
    Timer::Expired(vec![
        Write::WorkloadStatus(status),
        Write::WorkloadEvent(Note::normal(&reason, message)),
    ])
}

/// Once `status.requeueState.requeueAt` has passed, the Workload may queue
/// again: `requeueAt` is cleared and, after a `PodsReadyTimeout` eviction,
/// `Requeued=True` (`BackoffFinished`), as Kueue's workload controller
/// does. `None` when there is nothing to wait for or write.
fn backoff(wl: &api::Workload, conds: &Conditions, now: &Time) -> Option<Step> {
    match backoff_status(wl, conds, now)? {
        Err(left) => Some(Step::after(Vec::new(), left)),
        Ok(status) => Some(Step::wait(vec![Write::WorkloadStatus(status)])),
    }
}

/// [`backoff`] as data: `Err(left)` while `requeueAt` is ahead, else the
/// status that ends the backoff.
fn backoff_status(
    wl: &api::Workload,
    conds: &Conditions,
    now: &Time,
) -> Option<Result<Value, Duration>> {
    let state = wl.status.as_ref()?.requeue_state.as_ref()?;
    let at = state.requeue_at.as_ref()?;
    if wl.spec.active == Some(false) {
        return None;
    }
    let left = at.0.as_millisecond() - now.0.as_millisecond();
    if left > 0 {
        return Some(Err(Duration::from_millis(left.unsigned_abs())));
    }
    let mut c = conds.clone();
    let timed_out = c
        .get(condition::REQUEUED)
        .is_some_and(|r| r.status == "False" && r.reason == readiness::TIMEOUT_REASON);
    if timed_out {
        c.set(
            condition::REQUEUED,
            true,
            readiness::BACKOFF_FINISHED_REASON,
            readiness::BACKOFF_FINISHED_MESSAGE,
            now,
            wl.metadata.generation,
        );
    }
    Some(Ok(json!({
        "conditions": c.0,
        "requeueState": {"count": state.count, "requeueAt": null},
    })))
}

pub mod owners;
pub mod pods;

#[cfg(test)]
mod tests;
