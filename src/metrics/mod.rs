//! Prometheus metrics served on the probe listener at `/metrics`:
//! batchgate's own (`batchgate_*`), Kueue's (`kueue_*`, see [`kueue`])
//! and the cronjob-prescaler's (see [`prescale`]). A room of the shell below `cluster`, `server` and
//! `controllers`, which all count into it.

pub mod kueue;
pub mod prescale;
pub mod watch;

use std::sync::Arc;

use kueue::KueueMetrics;
use prescale::PrescaleMetrics;
use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReviewLabels {
    /// `mutate` or `validate`.
    pub webhook: &'static str,
    /// The integration (`batch/job`) or `unknown` for kinds without a policy.
    pub kind: &'static str,
    pub operation: &'static str,
    /// `allowed`, `patched`, `denied`, `unchecked` (an entitlement check
    /// failed), `malformed` or `unknown_kind`.
    pub result: &'static str,
}

impl From<&crate::admission::router::Labels> for ReviewLabels {
    fn from(l: &crate::admission::router::Labels) -> Self {
        ReviewLabels {
            webhook: l.webhook,
            kind: l.kind,
            operation: l.operation,
            result: l.result,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookLabel {
    pub webhook: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: &'static str,
}

pub struct Metrics {
    registry: Registry,
    pub reviews: Family<ReviewLabels, Counter>,
    pub latency: Family<WebhookLabel, Histogram>,
    pub rejected: Family<ReasonLabel, Counter>,
    pub cert_expiry: Gauge,
    pub cert_reloads: Family<ResultLabel, Counter>,
    /// Entitlement checks by where the answer came from: `hit` (cache),
    /// `shared` (a review already in flight), `miss` (a new review).
    pub entitlement_cache: Family<ResultLabel, Counter>,
    /// SubjectAccessReviews made, by `allowed`, `denied`, `error`.
    pub subject_access_reviews: Family<ResultLabel, Counter>,
    /// Connections the server closed, by reason (see README, Limits and
    /// bad input).
    pub connections_closed: Family<ReasonLabel, Counter>,
    /// TCP connections accepted on the webhook port.
    pub connections_accepted: Counter,
    /// Newcomers that found every connection slot taken (and took one from
    /// a connection that had not completed a request, or the longest idle,
    /// or waited).
    pub connection_slots_full: Counter,
    /// The request body budget's line (see [`super::budget`]).
    pub body_budget: BudgetMetrics,
    /// Kueue's metrics, recorded by the queueing controller.
    pub kueue: Arc<KueueMetrics>,
    /// The cronjob-prescaler's, recorded by the PreScaledCronJob controllers.
    pub prescale: Arc<PrescaleMetrics>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        Self::with_kueue(kueue::Options::default())
    }

    /// With Kueue's `metrics` options (`metrics.enableClusterQueueResources`,
    /// `metrics.localQueueMetrics.enable`).
    pub fn with_kueue(options: kueue::Options) -> Self {
        let mut root = Registry::default();
        let kueue = KueueMetrics::register(&mut root, options);
        let prescale = Arc::new(PrescaleMetrics::register(&mut root));
        let registry = root.sub_registry_with_prefix("batchgate");
        let reviews = Family::<ReviewLabels, Counter>::default();
        registry.register(
            "admission_reviews",
            "Admission reviews answered, by webhook, integration, operation and result",
            reviews.clone(),
        );
        let latency = Family::<WebhookLabel, Histogram>::new_with_constructor(|| {
            // 25 µs .. ~0.8 s: the handler is microseconds, the budget is the
            // apiserver's timeoutSeconds.
            Histogram::new([
                0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                0.05, 0.1, 0.25, 0.5, 1.0,
            ])
        });
        registry.register(
            "admission_review_duration_seconds",
            "Time from the request's arrival to its response, body read included",
            latency.clone(),
        );
        let rejected = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "http_requests_rejected",
            "Requests refused before review: body_too_large, not_a_review, body_timeout, not_found",
            rejected.clone(),
        );
        let cert_expiry = Gauge::default();
        registry.register(
            "certificate_expiry_timestamp_seconds",
            "NotAfter of the serving certificate in use, as Unix time",
            cert_expiry.clone(),
        );
        let cert_reloads = Family::<ResultLabel, Counter>::default();
        registry.register(
            "certificate_reloads",
            "Serving certificate reloads from the cert directory, by result",
            cert_reloads.clone(),
        );
        let entitlement_cache = Family::<ResultLabel, Counter>::default();
        registry.register(
            "entitlement_cache",
            "Entitlement checks by source of the answer: hit (cache), shared (a SubjectAccessReview already in flight), miss (a new one)",
            entitlement_cache.clone(),
        );
        let subject_access_reviews = Family::<ResultLabel, Counter>::default();
        registry.register(
            "subjectaccessreviews",
            "SubjectAccessReviews made for entitlement checks, by result: allowed, denied, error",
            subject_access_reviews.clone(),
        );
        let connections_closed = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "connections_closed_by_server",
            "Connections the server closed, by reason: first_request_timeout, idle_timeout, write_timeout, response_not_read, evicted (gave its slot to a newcomer at the cap), drain, handshake_timeout, tls_error, no_slot",
            connections_closed.clone(),
        );
        registry.register(
            "watch_errors",
            "Errors the reconciler's and the webhook caches' watches met, by watched resource (the watcher retries each)",
            crate::metrics::watch::ERRORS.clone(),
        );
        registry.register(
            "watch_recoveries",
            "Runs of watch errors after which the watch delivered again, by watched resource",
            crate::metrics::watch::RECOVERIES.clone(),
        );
        registry.register(
            "resync_found",
            "Queued jobs the periodic resync found without a Workload, by integration (each a trigger the watches lost)",
            crate::metrics::watch::FOUND_BY_RESYNC.clone(),
        );
        let connections_accepted = Counter::default();
        registry.register(
            "connections_accepted",
            "TCP connections accepted on the webhook port",
            connections_accepted.clone(),
        );
        let connection_slots_full = Counter::default();
        registry.register(
            "connection_slots_full",
            "Connections accepted while every connection slot was taken (webhook.maxConnections)",
            connection_slots_full.clone(),
        );
        let body_budget = BudgetMetrics::default();
        registry.register(
            "body_budget_queued",
            "Request bodies that found the body budget (webhook.maxBodyBytesInFlight) full and waited in line",
            body_budget.queued.clone(),
        );
        registry.register(
            "body_budget_gave_up",
            "Request bodies refused with 503 after waiting webhook.bodyBudgetWaitSeconds in line",
            body_budget.gave_up.clone(),
        );
        registry.register(
            "body_budget_peak_bytes",
            "The most request body bytes reserved at once since the server started",
            body_budget.peak_bytes.clone(),
        );
        Metrics {
            connections_closed,
            connections_accepted,
            connection_slots_full,
            body_budget,
            registry: root,
            kueue,
            prescale,
            reviews,
            latency,
            rejected,
            cert_expiry,
            cert_reloads,
            entitlement_cache,
            subject_access_reviews,
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// What the budget reports to `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct BudgetMetrics {
    /// Requests that found the budget full and waited in line.
    pub queued: Counter,
    /// Of those, refused after waiting too long.
    pub gave_up: Counter,
    /// The most bytes reserved at once since the server started.
    pub peak_bytes: Gauge,
}
