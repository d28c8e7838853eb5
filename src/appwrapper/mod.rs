//! The AppWrapper lifecycle core: a pure state machine
//! `(appwrapper, observed components and pods, operator config, now) ->
//! (next status, actions)` with upstream project-codeflare/appwrapper's
//! phases, conditions, reasons, messages and timers.
//!
//! - [`machine`]: `reconcile` and the action contract for the controller.
//! - [`status`]: phases, conditions (`SetStatusCondition` semantics), status.
//! - [`config`]: operator fault-tolerance config and behaviour annotations.
//! - [`duration`]: Go `time.ParseDuration` and `Duration.String()`.
//! - [`podsets`]: path grammar, pod templates, pod-set inference,
//!   declared-vs-inferred checks (the webhook's too).
//! - [`render`]: the object to create for a component, with pod-set info.
//! - [`observe`]: observed components and pods, and the readers for them.
//! - [`kueue`]: what Kueue's AppWrapper integration reads and writes.
//! - [`node_health`]: Autopilot's node monitor: which nodes' resources are
//!   flagged NoExecute (and unschedulable), from each Node.
//!
//! No network, no clock: the controller reads the world, calls
//! [`machine::reconcile`] with `now`, and executes the returned step.
//!
//! Autopilot: anti-affinities injected when rendering, the NoExecute
//! evacuation in Running, and the node monitor's maps ([`node_health`]);
//! watching Nodes is the controller's job. Pod templates are read structurally here (a `spec`
//! object, [`podsets::PodSpecReading::Structural`]); the strict
//! `v1.PodSpec` read upstream's `GetPodTemplateSpec` performs is the
//! webhook's, at create.

pub mod config;
pub mod kueue;
pub mod machine;
pub mod node_health;
pub mod observe;
pub mod podsets;
pub mod render;
pub mod status;

pub use machine::{
    initial_component_status, reconcile, Action, AppWrapper, Component, LifecycleError, PodRef,
    Propagation, Spec, Step,
};

/// `workload.codeflare.dev/v1beta2`.
pub const APPWRAPPER_API_VERSION: &str = "workload.codeflare.dev/v1beta2";
pub const APPWRAPPER_KIND: &str = "AppWrapper";
/// `spec.managedBy` values other than this one (and unset) are skipped.
pub const APPWRAPPER_CONTROLLER_NAME: &str = "workload.codeflare.dev/appwrapper-controller";
/// On every wrapped object and pod template, value = the AppWrapper's name.
pub const APPWRAPPER_LABEL: &str = "workload.codeflare.dev/appwrapper";
pub const APPWRAPPER_FINALIZER: &str = "workload.codeflare.dev/finalizer";
