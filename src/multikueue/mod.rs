//! MultiKueue: a manager cluster dispatches Workloads to worker clusters
//! (Kueue v0.19.2's `pkg/controller/admissionchecks/multikueue`). The pure
//! decisions live here; the remote clients and watches are the shell's.
//!
//! - [`kubeconfig`]: the rules a worker's kubeconfig (from a Secret or a
//!   path) must follow before the manager uses it.
//! - [`cluster`]: the `Active` conditions of MultiKueueClusters and of
//!   the MultiKueue AdmissionChecks, and the backoff between attempts to
//!   connect to a worker.
//! - [`dispatch`]: the manager's decision for one Workload: which workers
//!   get a copy, which copy is kept, the job created there, the status
//!   mirrored back.
//! - [`gc`]: which of a worker's objects the garbage collector removes.
//!
//! The configuration's `multiKueue` block is read into [`Settings`].

pub mod cluster;
pub mod dispatch;
pub mod gc;
pub mod kubeconfig;

use crate::vocabulary::duration::GoDuration;

/// `multiKueue.dispatcherName` values.
pub mod dispatcher {
    /// Every worker is nominated at once; the first to admit keeps the
    /// Workload (the default).
    pub const ALL_AT_ONCE: &str = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once";
    /// Workers are nominated a few at a time, in the config's order.
    pub const INCREMENTAL: &str = "kueue.x-k8s.io/multikueue-dispatcher-incremental";
}

/// Kueue's `multiKueue` configuration with its defaults
/// (`SetDefaults_Configuration`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Between two garbage collections of the workers' orphaned objects;
    /// zero turns it off. Default 1m.
    pub gc_interval: GoDuration,
    /// The value of the `kueue.x-k8s.io/multikueue-origin` label on the
    /// objects this manager creates in workers. Default `multikueue`.
    pub origin: String,
    /// How long a Workload's MultiKueue check stays Ready while its
    /// worker is unreachable. Default 15m.
    pub worker_lost_timeout: GoDuration,
    /// Who nominates workers: [`dispatcher::ALL_AT_ONCE`] (default),
    /// [`dispatcher::INCREMENTAL`], or an external dispatcher's name.
    pub dispatcher_name: String,
    /// How many workers the incremental dispatcher adds per step (default
    /// 3); only set with that dispatcher, as Kueue defaults it.
    pub incremental_step_size: Option<i32>,
    /// `kind.version.group` of the job kinds handed to the generic
    /// adapter.
    pub external_frameworks: Vec<String>,
    /// Kueue's `WorkloadIdentifierAnnotations` gate: the prebuilt
    /// Workload's name goes on a worker's job as an annotation (default),
    /// else as a label (what a worker running Kueue before 0.18 reads).
    pub identifier_annotations: bool,
    /// Kueue's `MultiKueueAdaptersForCustomJobs` gate (on by default):
    /// `external_frameworks` are dispatched.
    pub custom_jobs: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gc_interval: GoDuration::from_mins(1),
            origin: DEFAULT_ORIGIN.into(),
            worker_lost_timeout: GoDuration::from_mins(15),
            dispatcher_name: dispatcher::ALL_AT_ONCE.into(),
            incremental_step_size: None,
            external_frameworks: Vec::new(),
            identifier_annotations: true,
            custom_jobs: true,
        }
    }
}

/// `multiKueue.origin`'s default.
pub const DEFAULT_ORIGIN: &str = "multikueue";

/// The incremental dispatcher's default step size.
pub const DEFAULT_STEP_SIZE: i32 = 3;
