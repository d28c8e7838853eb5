//! The lifecycle state machine: one pure step per reconcile.
//!
//! `reconcile(appwrapper, observed, config, now) -> Step { status, actions,
//! requeue_after }`. The controller that executes a step must:
//! 1. patch `status` if `status_changed` (status before actions: state is
//!    written before it is acted on);
//! 2. run `actions` in order (see [`Action`] for each one's contract);
//! 3. requeue after `requeue_after`, if any.
//!
//! Upstream (`appwrapper_controller.go`) does its API calls in the middle of
//! a reconcile; here they become actions and the next step reads their
//! outcome from [`Observed`]. Two places need a prompt second call:
//! after [`Action::CreateComponents`] (with `create_results` filled in) and
//! after [`Action::ReadComponentsLive`] (with `components_read_live` set).

use crate::vocabulary::pointer::At;
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::{Behaviour, OperatorConfig, DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION};
use super::observe::{
    go_set_string, no_execute_nodes, CreateResult, Observed, ObservedComponent, ObservedPod,
    PodSummary,
};
use super::podsets::{component_pod_sets, PodSet, PodSetInfo};
use super::render::{render_component, Owner};
use super::status::{
    clear_condition, set_condition, ComponentStatus, ConditionStatus, Phase, Status,
    DELETING_RESOURCES, PODS_READY, QUOTA_RESERVED, RESOURCES_DEPLOYED, UNHEALTHY,
};
use super::APPWRAPPER_CONTROLLER_NAME;
use crate::vocabulary::duration::GoDuration;

/// `spec.components[i]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Go's `DeclaredPodSets`, JSON `podSets`.
    #[serde(default, rename = "podSets", skip_serializing_if = "Vec::is_empty")]
    pub declared_pod_sets: Vec<PodSet>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_set_infos: Vec<PodSetInfo>,
    pub template: Value,
}

/// `spec`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    #[serde(default)]
    pub components: Vec<Component>,
    #[serde(default)]
    pub suspend: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
}

/// The AppWrapper as the machine sees it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AppWrapper {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    /// `metadata.annotations` (behaviour annotations are read only here).
    pub annotations: BTreeMap<String, String>,
    /// `workload.codeflare.dev/finalizer` is in `metadata.finalizers`.
    pub has_finalizer: bool,
    /// `metadata.deletionTimestamp` is set.
    pub deletion_requested: bool,
    pub spec: Spec,
    pub status: Status,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// `propagationPolicy=Background`.
    Background,
    /// `gracePeriodSeconds=0`, after the forceful-deletion grace period.
    Forceful,
}

/// One object to create, fully rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateComponent {
    pub index: usize,
    pub object: Value,
}

/// What the controller must do after patching the status.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Add `workload.codeflare.dev/finalizer` (an update of the object).
    /// The resulting watch event reconciles again.
    AddFinalizer,
    /// Remove the finalizer; deletion of the AppWrapper then completes.
    RemoveFinalizer,
    /// Create these objects in order and stop at the first error. Then call
    /// `reconcile` again at once with `Observed::create_results[index]` set
    /// for every create attempted (see [`CreateResult`]); leave the others
    /// `None`. On AlreadyExists, GET the object to report its controller.
    CreateComponents(Vec<CreateComponent>),
    /// Delete component `index` (identified by name, apiVersion and kind in
    /// the AppWrapper's namespace) with the precondition `uid`: the object
    /// observed and found to be this AppWrapper's, never a same-named
    /// successor. NotFound and a failed precondition (Conflict) are success:
    /// the next observation tells what is there.
    DeleteComponent {
        index: usize,
        name: String,
        api_version: String,
        kind: String,
        uid: String,
        propagation: Propagation,
    },
    /// Delete each of these pods with `gracePeriodSeconds=0` and its UID as
    /// precondition; NotFound and Conflict are success. Only pods this
    /// AppWrapper owns are listed (see [`pod_is_ours`]).
    DeletePodsForcefully(Vec<PodRef>),
    /// Re-read every component with uncached GETs and call `reconcile`
    /// again with `components_read_live = true` (upstream issue #416: a
    /// stale cache must not fail the AppWrapper with MissingComponent).
    ReadComponentsLive,
    /// Record an event of type Normal on the AppWrapper.
    Event { reason: String, message: String },
}

/// A pod to delete: name and the UID observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    pub name: String,
    pub uid: String,
}

/// The outcome of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub status: Status,
    pub status_changed: bool,
    pub actions: Vec<Action>,
    pub requeue_after: Option<Duration>,
    /// Malformed annotations (key, upstream's log line) to log.
    pub malformed_annotations: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LifecycleError {
    /// Pod sets of a component could not be inferred (upstream returns the
    /// error and controller-runtime backs off; the webhook normally rejects
    /// such an AppWrapper first).
    #[error("component {index}: {message}")]
    PodSets { index: usize, message: String },
}

const FIVE_SECONDS: Duration = Duration::from_secs(5);
const ONE_SECOND: Duration = Duration::from_secs(1);
const ONE_MINUTE: Duration = Duration::from_secs(60);
/// Component-level condition reasons, as upstream spells them.
pub const COMPONENT_CREATION_INITIATED: &str = "ComponentCreationInitiated";
pub const COMPONENT_CREATED_SUCCESSFULLY: &str = "ComponentCreatedSuccessfully";
pub const COMPONENT_CREATION_ERRORED: &str = "ComponentCreationErrored";
/// Sic: upstream's typo, kept because users and tools match on it.
pub const COMPONENT_DELETED: &str = "CompononetDeleted";

struct Ctx<'a> {
    aw: &'a AppWrapper,
    observed: &'a Observed,
    config: &'a OperatorConfig,
    behaviour: Behaviour,
    now: Timestamp,
    status: Status,
    actions: Vec<Action>,
    requeue_after: Option<Duration>,
}

/// A component object is this AppWrapper's only if it is live and its
/// controller ownerReference carries this AppWrapper's UID. A same-named
/// object of someone else's is never deleted, counted or adopted.
fn is_ours(aw: &AppWrapper, o: &ObservedComponent) -> bool {
    o.controlled_by(&aw.uid)
}

/// Whether the status says this AppWrapper created (or may have created)
/// the component: what `deleteComponents` counts as present, plus a
/// component already seen deleted.
fn may_have_created(cs: &ComponentStatus) -> bool {
    match super::status::find_condition(&cs.conditions, RESOURCES_DEPLOYED) {
        None => false,
        Some(c) => match c.status {
            ConditionStatus::True => true,
            ConditionStatus::Unknown => !cs.name.is_empty(),
            ConditionStatus::False => c.reason == COMPONENT_DELETED,
        },
    }
}

/// Whether a labelled pod is this AppWrapper's: following its controllers
/// upward reaches the AppWrapper's UID, or reaches an owner that is gone
/// (so the garbage collector is removing its dependents) and that owner is
/// one of the AppWrapper's components by apiVersion, kind and name. A pod
/// with no controller, or whose chain ends at a live object that is not
/// ours, is someone else's, whatever its labels say.
pub fn pod_is_ours(pod: &ObservedPod, aw_uid: &str, components: &[ComponentStatus]) -> bool {
    if aw_uid.is_empty() {
        return false;
    }
    for link in &pod.owners {
        if link.owner.uid == aw_uid {
            return true;
        }
        if !link.found {
            return components.iter().any(|cs| {
                may_have_created(cs)
                    && cs.name == link.owner.name
                    && cs.kind == link.owner.kind
                    && cs.api_version == link.owner.api_version
            });
        }
    }
    false
}

/// Nanoseconds of `ltt(type) + d`, or `None` when the condition is absent
/// (Go's zero time: every deadline counted from it has passed).
fn deadline(status: &Status, type_: &str, d: GoDuration) -> Option<i128> {
    status
        .condition(type_)
        .map(|c| c.last_transition_time.0.as_nanosecond() + i128::from(d.as_nanos()))
}

impl Ctx<'_> {
    fn now_ns(&self) -> i128 {
        self.now.as_nanosecond()
    }

    /// `now.Before(deadline)`: the remaining time, if any.
    fn before(&self, deadline: Option<i128>) -> Option<Duration> {
        let d = deadline?;
        let now = self.now_ns();
        (now < d).then(|| Duration::from_nanos(u64::try_from(d - now).unwrap_or(u64::MAX)))
    }

    fn set(&mut self, type_: &str, status: ConditionStatus, reason: &str, message: &str) {
        set_condition(
            &mut self.status.conditions,
            type_,
            status,
            reason,
            message,
            self.now,
        );
    }

    fn clear(&mut self, type_: &str, reason: &str, message: &str) {
        clear_condition(
            &mut self.status.conditions,
            type_,
            reason,
            message,
            self.now,
        );
    }

    fn event(&mut self, reason: &str, message: String) {
        self.actions.push(Action::Event {
            reason: reason.to_string(),
            message,
        });
    }

    fn requeue(&mut self, d: Duration) {
        self.requeue_after = Some(d);
    }

    fn transition(&mut self, phase: Phase) {
        self.status.phase = phase;
    }

    fn suspend_externally(&mut self) {
        let msg = format!(
            "Externally suspended while in the {} phase",
            self.status.phase.as_str()
        );
        self.event("Suspending", msg);
        self.transition(Phase::Suspending);
    }

    /// `resetOrFail`: the limit test is `<`, a negative limit never retries.
    fn reset_or_fail(&mut self, terminal: bool, increment: i32) {
        if !terminal && self.status.resetting_count < self.behaviour.retry_limit {
            self.status.resetting_count = self.status.resetting_count.saturating_add(increment);
            self.transition(Phase::Resetting);
        } else {
            self.transition(Phase::Failed);
        }
    }

    /// `EnsureComponentStatusInitialized`.
    fn ensure_component_status(&mut self) -> Result<(), LifecycleError> {
        if self.status.component_status.len() == self.aw.spec.components.len() {
            return Ok(());
        }
        self.status.component_status = initial_component_status(&self.aw.spec)?;
        Ok(())
    }

    fn expected_pods(&self) -> i32 {
        self.status
            .component_status
            .iter()
            .flat_map(|c| c.pod_sets.iter())
            .map(PodSet::replicas)
            .sum()
    }

    fn pod_summary(&self) -> PodSummary {
        PodSummary::count(
            self.expected_pods(),
            &self.observed.pods,
            &self.behaviour.terminal_exit_codes,
            &self.behaviour.retryable_exit_codes,
        )
    }

    /// Upstream's `deleteComponents`: true once every component and every
    /// labelled pod is gone.
    fn delete_components(&mut self) -> bool {
        self.set(
            DELETING_RESOURCES,
            ConditionStatus::True,
            "DeletionInitiated",
            "",
        );
        let now = self.now;
        let mut present = Vec::new();
        for (i, cs) in self.status.component_status.iter_mut().enumerate() {
            let Some(deployed) = super::status::find_condition(&cs.conditions, RESOURCES_DEPLOYED)
            else {
                continue;
            };
            let counts = match deployed.status {
                ConditionStatus::False => false,
                ConditionStatus::Unknown => !cs.name.is_empty(),
                ConditionStatus::True => true,
            };
            if !counts {
                continue;
            }
            let initiated_only = deployed.status == ConditionStatus::Unknown;
            let obs = self.observed.components.get(i).cloned().unwrap_or_default();
            if is_ours(self.aw, &obs) {
                present.push((
                    i,
                    cs.name.clone(),
                    cs.api_version.clone(),
                    cs.kind.clone(),
                    obs.uid,
                    obs.deleting,
                ));
            } else {
                // Gone, or a same-named object of someone else's stands
                // there: nothing of ours to delete. If the create was only
                // initiated, that object was never ours.
                let reason = if obs.exists && initiated_only {
                    COMPONENT_CREATION_ERRORED
                } else {
                    COMPONENT_DELETED
                };
                set_condition(
                    &mut cs.conditions,
                    RESOURCES_DEPLOYED,
                    ConditionStatus::False,
                    reason,
                    "",
                    now,
                );
            }
        }
        for (index, name, api_version, kind, uid, deleting) in &present {
            if !deleting {
                self.actions.push(Action::DeleteComponent {
                    index: *index,
                    name: name.clone(),
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                    uid: uid.clone(),
                    propagation: Propagation::Background,
                });
            }
        }
        let pods: Vec<PodRef> = self
            .observed
            .pods
            .iter()
            .filter(|p| pod_is_ours(p, &self.aw.uid, &self.status.component_status))
            .map(|p| PodRef {
                name: p.name.clone(),
                uid: p.uid.clone(),
            })
            .collect();
        // `now.After(initiated + grace)`
        let expired = deadline(
            &self.status,
            DELETING_RESOURCES,
            self.behaviour.forceful_deletion_grace,
        )
        .is_none_or(|d| self.now_ns() > d);
        if !present.is_empty() && !expired {
            return false;
        }
        if present.is_empty() && pods.is_empty() {
            self.clear(DELETING_RESOURCES, "DeletionComplete", "");
            return true;
        }
        if expired {
            if !pods.is_empty() {
                self.actions.push(Action::DeletePodsForcefully(pods));
            } else {
                for (index, name, api_version, kind, uid, _) in present {
                    self.actions.push(Action::DeleteComponent {
                        index,
                        name,
                        api_version,
                        kind,
                        uid,
                        propagation: Propagation::Forceful,
                    });
                }
            }
        }
        false
    }

    fn deletion(&mut self) {
        if self.status.is_true(RESOURCES_DEPLOYED) {
            if !self.delete_components() {
                if self.status.phase != Phase::Terminating {
                    self.transition(Phase::Terminating);
                }
                self.requeue(FIVE_SECONDS);
                return;
            }
            self.set(
                RESOURCES_DEPLOYED,
                ConditionStatus::False,
                "Terminating",
                "Resources successfully deleted",
            );
        }
        if self.status.is_true(QUOTA_RESERVED) {
            self.set(
                QUOTA_RESERVED,
                ConditionStatus::False,
                "Terminating",
                "No resources deployed",
            );
        }
        self.actions.push(Action::RemoveFinalizer);
    }

    fn suspended(&mut self) {
        if self.aw.spec.suspend {
            return;
        }
        if !self.aw.has_finalizer {
            // The finalizer is written before anything is deployed (#307).
            self.actions.push(Action::AddFinalizer);
            return;
        }
        for (t, s) in [
            (QUOTA_RESERVED, ConditionStatus::True),
            (RESOURCES_DEPLOYED, ConditionStatus::True),
            (PODS_READY, ConditionStatus::False),
            (UNHEALTHY, ConditionStatus::False),
        ] {
            self.set(t, s, "Resuming", "Suspend is false");
        }
        self.transition(Phase::Resuming);
    }

    fn resuming(&mut self) -> Result<(), LifecycleError> {
        if self.aw.spec.suspend {
            self.suspend_externally();
            return Ok(());
        }
        self.ensure_component_status()?;
        let owner = Owner {
            name: &self.aw.name,
            namespace: &self.aw.namespace,
            uid: &self.aw.uid,
        };
        let now = self.now;
        let mut batch = Vec::new();
        let mut error: Option<(String, bool)> = None;
        for (i, comp) in self.aw.spec.components.iter().enumerate() {
            let cs = &mut self.status.component_status[i];
            if super::status::is_condition_true(&cs.conditions, RESOURCES_DEPLOYED) {
                continue;
            }
            let result = self.observed.create_results.get(i).cloned().flatten();
            match result {
                Some(CreateResult::Created { name }) => {
                    cs.name = name;
                    record_kind(cs, &comp.template);
                    set_condition(
                        &mut cs.conditions,
                        RESOURCES_DEPLOYED,
                        ConditionStatus::True,
                        COMPONENT_CREATED_SUCCESSFULLY,
                        "",
                        now,
                    );
                }
                Some(CreateResult::AlreadyExists {
                    name,
                    controller_uid,
                }) => {
                    // Ours only by UID: a same-named AppWrapper's leftover or
                    // a user's object is not adopted.
                    let ours = !self.aw.uid.is_empty()
                        && controller_uid.as_deref() == Some(self.aw.uid.as_str());
                    if !ours {
                        // Nothing was created; the status must not claim the
                        // object, or a cleanup would delete it.
                        set_condition(
                            &mut cs.conditions,
                            RESOURCES_DEPLOYED,
                            ConditionStatus::False,
                            COMPONENT_CREATION_ERRORED,
                            "",
                            now,
                        );
                        error = Some((
                            format!("resource {name} exists, but is not controlled by appwrapper"),
                            true,
                        ));
                        break;
                    }
                    cs.name = name;
                    record_kind(cs, &comp.template);
                    set_condition(
                        &mut cs.conditions,
                        RESOURCES_DEPLOYED,
                        ConditionStatus::True,
                        COMPONENT_CREATED_SUCCESSFULLY,
                        "",
                        now,
                    );
                }
                Some(CreateResult::Failed { message, fatal }) => {
                    set_condition(
                        &mut cs.conditions,
                        RESOURCES_DEPLOYED,
                        ConditionStatus::False,
                        COMPONENT_CREATION_ERRORED,
                        "",
                        now,
                    );
                    error = Some((message, fatal));
                    break;
                }
                None => {
                    let pod_sets = cs.pod_sets.clone();
                    match render_component(
                        &owner,
                        &comp.template,
                        &pod_sets,
                        &comp.pod_set_infos,
                        self.config,
                    ) {
                        Err(e) => {
                            error = Some((e, true));
                            break;
                        }
                        Ok(object) => {
                            if super::status::find_condition(&cs.conditions, RESOURCES_DEPLOYED)
                                .is_none()
                            {
                                let s = |p: &str| {
                                    object
                                        .at(p)
                                        .and_then(Value::as_str)
                                        .unwrap_or("")
                                        .to_string()
                                };
                                cs.name = s("/metadata/name");
                                cs.kind = s("/kind");
                                cs.api_version = s("/apiVersion");
                                set_condition(
                                    &mut cs.conditions,
                                    RESOURCES_DEPLOYED,
                                    ConditionStatus::Unknown,
                                    COMPONENT_CREATION_INITIATED,
                                    "",
                                    now,
                                );
                            }
                            batch.push(CreateComponent { index: i, object });
                        }
                    }
                }
            }
        }
        if let Some((err, fatal)) = error {
            if !fatal {
                let d = deadline(
                    &self.status,
                    RESOURCES_DEPLOYED,
                    self.behaviour.admission_grace,
                );
                if self.before(d).is_some() {
                    self.requeue(ONE_SECOND);
                    return Ok(());
                }
            }
            let detail = format!("error creating components: {err}");
            self.set(UNHEALTHY, ConditionStatus::True, "CreateFailed", &detail);
            self.event("Unhealthy", format!("CreateFailed: {detail}"));
            if fatal {
                self.transition(Phase::Failed);
            } else {
                self.reset_or_fail(false, 1);
            }
            return Ok(());
        }
        if !batch.is_empty() {
            self.actions.push(Action::CreateComponents(batch));
            return Ok(());
        }
        self.transition(Phase::Running);
        Ok(())
    }

    fn running(&mut self) -> Result<(), LifecycleError> {
        if self.aw.spec.suspend {
            self.suspend_externally();
            return Ok(());
        }
        self.ensure_component_status()?;
        let expected = self.status.component_status.len();
        let (mut deployed, mut failed) = (0usize, 0usize);
        for i in 0..expected {
            let o = self.observed.components.get(i).cloned().unwrap_or_default();
            if is_ours(self.aw, &o) && !o.deleting {
                deployed += 1;
                if o.failed {
                    failed += 1;
                }
            }
        }
        let pods = self.pod_summary();

        if deployed != expected {
            if !self.observed.components_read_live {
                self.actions.push(Action::ReadComponentsLive);
                return Ok(());
            }
            let detail =
                format!("Only found {deployed} deployed components, but was expecting {expected}");
            self.set(
                UNHEALTHY,
                ConditionStatus::True,
                "MissingComponent",
                &detail,
            );
            self.event("Unhealthy", format!("MissingComponent: {detail}"));
            self.transition(Phase::Failed);
            return Ok(());
        }
        if failed > 0 {
            let detail = format!("Found {failed} failed components");
            self.set(UNHEALTHY, ConditionStatus::True, "FailedComponent", &detail);
            self.event("Unhealthy", format!("FailedComponent: {detail}"));
            self.reset_or_fail(pods.terminal_failure, 1);
            return Ok(());
        }
        if pods.succeeded >= pods.expected && pods.pending + pods.running + pods.failed == 0 {
            let msg = format!(
                "{} pods succeeded and no running, pending, or failed pods",
                pods.succeeded
            );
            self.set(QUOTA_RESERVED, ConditionStatus::False, "Succeeded", &msg);
            self.set(RESOURCES_DEPLOYED, ConditionStatus::True, "Succeeded", &msg);
            self.transition(Phase::Succeeded);
            return Ok(());
        }
        if pods.failed > 0 {
            // No count in the message: a changed message would look like news.
            self.set(UNHEALTHY, ConditionStatus::True, "FoundFailedPods", "");
            let d = deadline(&self.status, UNHEALTHY, self.behaviour.failure_grace);
            if let Some(wait) = self.before(d) {
                self.requeue(wait);
            } else {
                self.event(
                    "Unhealthy",
                    format!("FoundFailedPods: {} failed pods", pods.failed),
                );
                self.reset_or_fail(pods.terminal_failure, 1);
            }
            return Ok(());
        }
        // Autopilot: evacuate pods using resources flagged NoExecute. The
        // retry count is not incremented; the limit still applies.
        if self
            .config
            .autopilot
            .as_ref()
            .is_some_and(|a| a.monitor_nodes)
        {
            let nodes = no_execute_nodes(&self.observed.pods, &self.observed.no_execute_nodes);
            if !nodes.is_empty() {
                let detail = format!(
                    "Workload contains pods using NoExecute resources on Nodes: {}",
                    go_set_string(&nodes)
                );
                self.set(
                    UNHEALTHY,
                    ConditionStatus::True,
                    "AutopilotNoExecute",
                    &detail,
                );
                self.event("Unhealthy", detail);
                self.reset_or_fail(false, 0);
                return Ok(());
            }
        }
        self.clear(UNHEALTHY, "FoundNoFailedPods", "");
        if pods.running + pods.succeeded >= pods.expected {
            let msg = format!(
                "{} pods running; {} pods succeeded",
                pods.running, pods.succeeded
            );
            self.set(
                PODS_READY,
                ConditionStatus::True,
                "SufficientPodsReady",
                &msg,
            );
            self.requeue(ONE_MINUTE);
            return Ok(());
        }
        let details = format!(
            "{} pods pending; {} pods running; {} pods succeeded",
            pods.pending, pods.running, pods.succeeded
        );
        self.clear(PODS_READY, "InsufficientPodsReady", &details);
        let grace = if pods.pending + pods.running + pods.succeeded >= pods.expected {
            self.behaviour.warmup_grace
        } else {
            self.behaviour.admission_grace
        };
        if self
            .before(deadline(&self.status, RESOURCES_DEPLOYED, grace))
            .is_some()
        {
            self.requeue(FIVE_SECONDS);
        } else {
            self.set(
                UNHEALTHY,
                ConditionStatus::True,
                "InsufficientPodsReady",
                &details,
            );
            self.event("Unhealthy", format!("InsufficientPodsReady: {details}"));
            self.reset_or_fail(pods.terminal_failure, 1);
        }
        Ok(())
    }

    fn suspending(&mut self) {
        if self.status.is_true(RESOURCES_DEPLOYED) {
            if !self.delete_components() {
                self.requeue(FIVE_SECONDS);
                return;
            }
            self.set(
                RESOURCES_DEPLOYED,
                ConditionStatus::False,
                "Suspended",
                "Suspend is true",
            );
        }
        self.set(
            QUOTA_RESERVED,
            ConditionStatus::False,
            "Suspended",
            "Suspend is true",
        );
        self.clear(PODS_READY, "Suspended", "");
        self.clear(UNHEALTHY, "Suspended", "");
        self.transition(Phase::Suspended);
    }

    fn resetting(&mut self) {
        if self.aw.spec.suspend {
            self.suspend_externally();
            return;
        }
        self.clear(PODS_READY, "Resetting", "");
        if self.status.is_true(RESOURCES_DEPLOYED) {
            if !self.delete_components() {
                self.requeue(FIVE_SECONDS);
                return;
            }
            self.set(
                RESOURCES_DEPLOYED,
                ConditionStatus::False,
                "Resetting",
                "Resources deleted for resetting AppWrapper",
            );
        }
        let d = deadline(&self.status, UNHEALTHY, self.behaviour.retry_pause);
        if let Some(wait) = self.before(d) {
            self.requeue(wait);
            return;
        }
        self.set(
            RESOURCES_DEPLOYED,
            ConditionStatus::True,
            "Resuming",
            "Reset complete; resuming",
        );
        self.transition(Phase::Resuming);
    }

    fn failed(&mut self) {
        let delay = self.behaviour.deletion_on_failure_grace;
        let suspend = self.aw.spec.suspend;
        if delay > GoDuration::ZERO && !suspend {
            let msg = format!("{DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION} has value {delay}");
            self.set(
                DELETING_RESOURCES,
                ConditionStatus::False,
                "DeletionPaused",
                &msg,
            );
            if let Some(wait) = self.before(deadline(&self.status, DELETING_RESOURCES, delay)) {
                self.requeue(wait);
                return;
            }
        }
        if self.status.is_true(RESOURCES_DEPLOYED) {
            if !self.delete_components() {
                self.requeue(FIVE_SECONDS);
                return;
            }
            let msg = if delay > GoDuration::ZERO && suspend {
                "Kueue forced resource deletion by suspending AppWrapper"
            } else {
                "Resources deleted for failed AppWrapper"
            };
            self.set(RESOURCES_DEPLOYED, ConditionStatus::False, "Failed", msg);
        }
        self.set(
            QUOTA_RESERVED,
            ConditionStatus::False,
            "Failed",
            "No resources deployed",
        );
    }

    fn succeeded(&mut self) {
        if !self.status.is_true(RESOURCES_DEPLOYED) {
            return;
        }
        let ttl = self.behaviour.success_ttl;
        if let Some(wait) = self.before(deadline(&self.status, RESOURCES_DEPLOYED, ttl)) {
            self.requeue(wait);
            return;
        }
        if !self.delete_components() {
            self.requeue(FIVE_SECONDS);
            return;
        }
        let msg = format!("Time to live after success of {ttl} expired");
        self.set(
            RESOURCES_DEPLOYED,
            ConditionStatus::False,
            "Succeeded",
            &msg,
        );
    }
}

/// Kind and apiVersion are normally recorded before the create; fill them
/// in if a controller reports a result without having written that status.
fn record_kind(cs: &mut ComponentStatus, template: &Value) {
    let s = |p: &str| {
        template
            .at(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if cs.kind.is_empty() {
        cs.kind = s("/kind");
    }
    if cs.api_version.is_empty() {
        cs.api_version = s("/apiVersion");
    }
}

/// One reconcile of one AppWrapper (upstream's `Reconcile`, §3.2–§3.7).
pub fn reconcile(
    aw: &AppWrapper,
    observed: &Observed,
    config: &OperatorConfig,
    now: Timestamp,
) -> Result<Step, LifecycleError> {
    let behaviour = Behaviour::resolve(&aw.annotations, config);
    let malformed = behaviour.malformed.clone();
    let mut ctx = Ctx {
        aw,
        observed,
        config,
        behaviour,
        now,
        status: aw.status.clone(),
        actions: Vec::new(),
        requeue_after: None,
    };
    let managed_elsewhere = aw
        .spec
        .managed_by
        .as_deref()
        .is_some_and(|m| m != APPWRAPPER_CONTROLLER_NAME);
    if managed_elsewhere {
        // MultiKueue and others: not ours to touch.
    } else if aw.deletion_requested {
        if aw.has_finalizer {
            ctx.deletion();
        }
    } else {
        match ctx.status.phase {
            Phase::Empty => {
                ctx.ensure_component_status()?;
                ctx.transition(Phase::Suspended);
            }
            Phase::Suspended => ctx.suspended(),
            Phase::Resuming => ctx.resuming()?,
            Phase::Running => ctx.running()?,
            Phase::Suspending => ctx.suspending(),
            Phase::Resetting => ctx.resetting(),
            Phase::Failed => ctx.failed(),
            Phase::Succeeded => ctx.succeeded(),
            Phase::Terminating => {}
        }
    }
    let status_changed = ctx.status != aw.status;
    Ok(Step {
        status: ctx.status,
        status_changed,
        actions: ctx.actions,
        requeue_after: ctx.requeue_after,
        malformed_annotations: malformed,
    })
}

/// Each component's status as first written (upstream's
/// `EnsureComponentStatusInitialized`): its pod sets, declared or inferred
/// from its template. Kueue's integration computes the same in memory for
/// an AppWrapper this controller does not run (`spec.managedBy`).
pub fn initial_component_status(spec: &Spec) -> Result<Vec<ComponentStatus>, LifecycleError> {
    let mut out = Vec::with_capacity(spec.components.len());
    for (index, c) in spec.components.iter().enumerate() {
        let pod_sets = component_pod_sets(&c.declared_pod_sets, &c.template)
            .map_err(|message| LifecycleError::PodSets { index, message })?;
        out.push(ComponentStatus {
            pod_sets,
            ..Default::default()
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
