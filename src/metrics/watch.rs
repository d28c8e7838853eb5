//! The watches' counters: `cluster::watch` counts into them, the registry
//! serves them.

use std::sync::LazyLock;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family},
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabel {
    /// The watched resource, `plural.group` (`jobs.batch`).
    pub watch: String,
}

/// Errors each watch met (`batchgate_watch_errors_total`).
pub static ERRORS: LazyLock<Family<WatchLabel, Counter>> = LazyLock::new(Family::default);
/// Runs of errors after which a watch delivered again
/// (`batchgate_watch_recoveries_total`).
pub static RECOVERIES: LazyLock<Family<WatchLabel, Counter>> = LazyLock::new(Family::default);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IntegrationLabel {
    pub integration: String,
}

/// Queued jobs the job reconciler's backstop found without a Workload
/// (`batchgate_resync_found_total`): each one a trigger the watches lost.
pub static FOUND_BY_RESYNC: LazyLock<Family<IntegrationLabel, Counter>> =
    LazyLock::new(Family::default);
