//! The SubjectAccessReview client behind entitlement: one shared instance
//! answers every "may user U <verb> <resource> ..." question of the webhook
//! (job queue and priority checks today, AppWrapper's per-component checks
//! later) through [`SarClient::check`].
//!
//! Answers are cached ([`DecisionCache`], short TTLs); concurrent identical
//! questions share one API call (single flight), so a burst of creates by
//! one user costs one SubjectAccessReview. The API call runs in its own
//! task: a review whose client went away does not cancel it for the others
//! waiting on the same answer.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use futures::{
    future::{BoxFuture, Shared},
    FutureExt,
};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes as SarAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::{api::PostParams, Api, Client};
use tracing::{debug, warn};

use crate::admission::entitlement::{Check, DecisionCache, OnError, Outcome, Settings};
use crate::metrics::{Metrics, ResultLabel};

/// Why a check has no answer. Never cached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SarError {
    #[error("the SubjectAccessReview request failed: {0}")]
    Request(String),
    #[error("the SubjectAccessReview was not answered within {0:?}")]
    Timeout(Duration),
    #[error("the SubjectAccessReview came back without a status")]
    NoStatus,
    #[error("the SubjectAccessReview task ended without an answer: {0}")]
    Task(String),
}

/// Who answers: the apiserver, or a stand-in in unit tests.
pub trait Authorizer: Send + Sync + 'static {
    fn review(&self, check: &Check) -> BoxFuture<'static, Result<Outcome, SarError>>;
}

/// `authorization.k8s.io/v1` SubjectAccessReview, created through the API.
pub struct KubeAuthorizer {
    api: Api<SubjectAccessReview>,
}

impl KubeAuthorizer {
    pub fn new(client: Client) -> Self {
        KubeAuthorizer {
            api: Api::all(client),
        }
    }
}

fn opt(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The review asking `check`: the user's full identity and the attributes.
pub fn to_review(check: &Check) -> SubjectAccessReview {
    let (u, a) = (&*check.user, &check.attributes);
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: opt(&u.username),
            uid: opt(&u.uid),
            groups: (!u.groups.is_empty()).then(|| u.groups.clone()),
            extra: (!u.extra.is_empty()).then(|| u.extra.clone()),
            resource_attributes: Some(SarAttributes {
                verb: opt(&a.verb),
                group: opt(&a.group),
                version: opt(&a.version),
                resource: opt(&a.resource),
                subresource: opt(&a.subresource),
                namespace: opt(&a.namespace),
                name: opt(&a.name),
                ..SarAttributes::default()
            }),
            non_resource_attributes: None,
        },
        ..SubjectAccessReview::default()
    }
}

impl Authorizer for KubeAuthorizer {
    fn review(&self, check: &Check) -> BoxFuture<'static, Result<Outcome, SarError>> {
        let api = self.api.clone();
        let sar = to_review(check);
        async move {
            let answer = api
                .create(&PostParams::default(), &sar)
                .await
                .map_err(|e| SarError::Request(e.to_string()))?;
            let status = answer.status.ok_or(SarError::NoStatus)?;
            if status.allowed {
                return Ok(Outcome::Allowed);
            }
            let reason = match (status.reason, status.evaluation_error) {
                (Some(r), Some(e)) if !r.is_empty() && !e.is_empty() => format!("{r} ({e})"),
                (Some(r), _) if !r.is_empty() => r,
                (_, Some(e)) => e,
                _ => String::new(),
            };
            Ok(Outcome::Denied { reason })
        }
        .boxed()
    }
}

type Flight = Shared<BoxFuture<'static, Result<Outcome, SarError>>>;

struct State {
    cache: DecisionCache,
    in_flight: HashMap<Arc<Check>, Flight>,
}

struct Inner {
    authorizer: Box<dyn Authorizer>,
    settings: Settings,
    state: Mutex<State>,
    metrics: Arc<Metrics>,
}

impl Inner {
    /// The state, even after a panic elsewhere held the lock: it holds
    /// nothing a half-done update could make unsafe to read.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn count_cache(&self, result: &'static str) {
        self.metrics
            .entitlement_cache
            .get_or_create(&ResultLabel { result })
            .inc();
    }

    fn count_review(&self, result: &'static str) {
        self.metrics
            .subject_access_reviews
            .get_or_create(&ResultLabel { result })
            .inc();
    }
}

/// The shared SubjectAccessReview client with its cache.
#[derive(Clone)]
pub struct SarClient {
    inner: Arc<Inner>,
}

impl SarClient {
    pub fn new(authorizer: impl Authorizer, settings: Settings, metrics: Arc<Metrics>) -> Self {
        SarClient {
            inner: Arc::new(Inner {
                authorizer: Box::new(authorizer),
                state: Mutex::new(State {
                    cache: DecisionCache::new(settings.cache),
                    in_flight: HashMap::new(),
                }),
                settings,
                metrics,
            }),
        }
    }

    /// What a failed check does to the request.
    pub fn on_error(&self) -> OnError {
        self.inner.settings.on_error
    }

    /// May `check.user` do what `check.attributes` say? From the cache, from
    /// a review already in flight for the same question, or from a new one.
    pub async fn check(&self, check: Check) -> Result<Outcome, SarError> {
        let flight = {
            let mut state = self.inner.state();
            if let Some(outcome) = state.cache.get(&check, Instant::now()) {
                self.inner.count_cache("hit");
                return Ok(outcome);
            }
            if let Some(f) = state.in_flight.get(&check) {
                self.inner.count_cache("shared");
                f.clone()
            } else {
                self.inner.count_cache("miss");
                let key = Arc::new(check);
                // The lock is held until the flight is registered, so the
                // task cannot finish (and unregister) before that.
                let task = tokio::spawn(Self::ask(self.inner.clone(), key.clone()));
                // A task that ended without unregistering (cancelled at
                // shutdown) must not leave its failure in flight for good.
                let (inner, k) = (Arc::downgrade(&self.inner), key.clone());
                let flight = async move {
                    task.await.unwrap_or_else(|e| {
                        if let Some(inner) = inner.upgrade() {
                            inner.state().in_flight.remove(&*k);
                        }
                        Err(SarError::Task(e.to_string()))
                    })
                }
                .boxed()
                .shared();
                state.in_flight.insert(key, flight.clone());
                flight
            }
        };
        flight.await
    }

    /// Every check, concurrently; results in the same order.
    pub async fn check_all(&self, checks: Vec<Check>) -> Vec<Result<Outcome, SarError>> {
        futures::future::join_all(checks.into_iter().map(|c| self.check(c))).await
    }

    async fn ask(inner: Arc<Inner>, key: Arc<Check>) -> Result<Outcome, SarError> {
        let timeout = inner.settings.timeout;
        let result = match tokio::time::timeout(timeout, inner.authorizer.review(&key)).await {
            Ok(r) => r,
            Err(_) => Err(SarError::Timeout(timeout)),
        };
        let a = &key.attributes;
        match &result {
            Ok(Outcome::Allowed) => inner.count_review("allowed"),
            Ok(Outcome::Denied { reason }) => {
                inner.count_review("denied");
                debug!(user = %key.user.username, verb = %a.verb, resource = %a.qualified_resource(),
                       namespace = %a.namespace, name = %a.name, %reason, "SubjectAccessReview denied");
            }
            Err(e) => {
                inner.count_review("error");
                warn!(user = %key.user.username, verb = %a.verb, resource = %a.qualified_resource(),
                      namespace = %a.namespace, name = %a.name, error = %e, "SubjectAccessReview failed");
            }
        }
        let mut state = inner.state();
        state.in_flight.remove(&*key);
        if let Ok(outcome) = &result {
            state.cache.insert(key, outcome.clone(), Instant::now());
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::admission::entitlement::{Identity, ResourceAttributes};

    /// Answers after `gate` opens: allowed for "alice", denied otherwise,
    /// an error for the name "broken"; counts its calls.
    struct Fake {
        calls: Arc<AtomicUsize>,
        gate: Arc<tokio::sync::Semaphore>,
    }

    impl Authorizer for Fake {
        fn review(&self, check: &Check) -> BoxFuture<'static, Result<Outcome, SarError>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let (gate, check) = (self.gate.clone(), check.clone());
            async move {
                let _permit = gate.acquire().await;
                if check.attributes.name == "broken" {
                    return Err(SarError::Request("connection refused".into()));
                }
                Ok(if check.user.username == "alice" {
                    Outcome::Allowed
                } else {
                    Outcome::Denied {
                        reason: String::new(),
                    }
                })
            }
            .boxed()
        }
    }

    fn check(user: &str, name: &str) -> Check {
        Check {
            user: Arc::new(Identity {
                username: user.into(),
                groups: vec!["system:authenticated".into()],
                ..Identity::default()
            }),
            attributes: ResourceAttributes {
                verb: "submit".into(),
                group: "kueue.x-k8s.io".into(),
                resource: "localqueues".into(),
                namespace: "team-a".into(),
                name: name.into(),
                ..ResourceAttributes::default()
            },
        }
    }

    fn client(
        open: bool,
    ) -> (
        SarClient,
        Arc<AtomicUsize>,
        Arc<tokio::sync::Semaphore>,
        Arc<Metrics>,
    ) {
        let calls = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(if open { 1000 } else { 0 }));
        let metrics = Arc::new(Metrics::new());
        let c = SarClient::new(
            Fake {
                calls: calls.clone(),
                gate: gate.clone(),
            },
            Settings::default(),
            metrics.clone(),
        );
        (c, calls, gate, metrics)
    }

    fn counter(m: &Metrics, name: &str, result: &str) -> u64 {
        let line = format!("batchgate_{name}_total{{result=\"{result}\"}} ");
        m.render()
            .lines()
            .find_map(|l| l.strip_prefix(&line).and_then(|v| v.parse().ok()))
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn a_burst_costs_one_review() {
        let (c, calls, gate, m) = client(false);
        // 50 concurrent identical checks while the first review is pending.
        let waiting: Vec<_> = (0..50)
            .map(|_| {
                tokio::spawn({
                    let c = c.clone();
                    async move { c.check(check("alice", "q")).await }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        gate.add_permits(1000);
        for w in waiting {
            assert_eq!(w.await.unwrap(), Ok(Outcome::Allowed));
        }
        // Then 50 more from the cache.
        for _ in 0..50 {
            assert_eq!(c.check(check("alice", "q")).await, Ok(Outcome::Allowed));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(counter(&m, "subjectaccessreviews", "allowed"), 1);
        assert_eq!(counter(&m, "entitlement_cache", "miss"), 1);
        assert_eq!(counter(&m, "entitlement_cache", "shared"), 49);
        assert_eq!(counter(&m, "entitlement_cache", "hit"), 50);
    }

    #[tokio::test]
    async fn users_do_not_share_answers_and_errors_are_not_cached() {
        let (c, calls, _, m) = client(true);
        assert_eq!(c.check(check("alice", "q")).await, Ok(Outcome::Allowed));
        assert!(matches!(
            c.check(check("bob", "q")).await,
            Ok(Outcome::Denied { .. })
        ));
        assert!(matches!(
            c.check(check("bob", "q")).await,
            Ok(Outcome::Denied { .. })
        ));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        for _ in 0..2 {
            assert_eq!(
                c.check(check("alice", "broken")).await,
                Err(SarError::Request("connection refused".into()))
            );
        }
        assert_eq!(calls.load(Ordering::SeqCst), 4, "an error is asked again");
        assert_eq!(counter(&m, "subjectaccessreviews", "denied"), 1);
        assert_eq!(counter(&m, "subjectaccessreviews", "error"), 2);
        let all = c
            .check_all(vec![check("alice", "q"), check("bob", "q")])
            .await;
        assert_eq!(all[0], Ok(Outcome::Allowed));
        assert!(matches!(all[1], Ok(Outcome::Denied { .. })));
    }

    #[tokio::test]
    async fn a_review_that_hangs_times_out() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = SarClient::new(
            Fake {
                calls,
                gate: Arc::new(tokio::sync::Semaphore::new(0)),
            },
            Settings {
                timeout: Duration::from_millis(20),
                ..Settings::default()
            },
            Arc::new(Metrics::new()),
        );
        assert_eq!(
            c.check(check("alice", "q")).await,
            Err(SarError::Timeout(Duration::from_millis(20)))
        );
    }

    #[test]
    fn the_review_carries_the_full_identity() {
        let mut c = check("system:serviceaccount:team-a:bot", "q");
        c.user = Arc::new(Identity {
            username: "system:serviceaccount:team-a:bot".into(),
            uid: "1234".into(),
            groups: vec!["system:serviceaccounts".into()],
            extra: [(
                "authentication.kubernetes.io/pod-name".to_string(),
                vec!["p".to_string()],
            )]
            .into(),
        });
        let v = serde_json::to_value(to_review(&c)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "metadata": {},
                "spec": {
                    "user": "system:serviceaccount:team-a:bot", "uid": "1234",
                    "groups": ["system:serviceaccounts"],
                    "extra": {"authentication.kubernetes.io/pod-name": ["p"]},
                    "resourceAttributes": {"verb": "submit", "group": "kueue.x-k8s.io",
                        "resource": "localqueues", "namespace": "team-a", "name": "q"}
                }
            })
        );
    }
}
