//! Client-side pacing of the reconciler's requests, as `clientConnection`'s
//! `qps` and `burst` pace Kueue's: controller-runtime gives each resource's
//! REST client its own token bucket (client-go's `flowcontrol`), so a burst
//! of Workload writes waits for Workload tokens and does not slow the
//! Events or queue-status writes beside it.
//!
//! - [`Bucket`] is the pure part: golang.org/x/time/rate's reservation
//!   arithmetic, with the time as a parameter.
//! - [`resource_key`] names the bucket a request path draws from.
//! - [`ThrottleLayer`] is the shell: a tower layer on the kube client that
//!   sleeps out each request's reservation before sending it.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::{Duration, Instant},
};

use http::Request;
use tower::{BoxError, Layer, Service, ServiceExt};

/// One token bucket: `burst` tokens at most, refilled at `qps` per second.
/// Every request takes one; one that finds none reserves the next and waits
/// for it, so requests leave in the order they asked.
#[derive(Debug, Clone)]
pub struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl Bucket {
    pub fn new(qps: f64, burst: u32) -> Bucket {
        Bucket {
            qps,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            last: None,
        }
    }

    /// Takes a token at `now`; returns how long the caller must wait before
    /// using it (zero while the bucket has tokens).
    pub fn reserve(&mut self, now: Instant) -> Duration {
        if self.qps <= 0.0 {
            // client-go makes no limiter for a QPS below zero (the
            // configuration has already turned zero into the default).
            return Duration::ZERO;
        }
        if let Some(last) = self.last {
            let elapsed = now.saturating_duration_since(last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        }
        self.last = Some(now.max(self.last.unwrap_or(now)));
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }
}

/// The bucket a request draws from: the API group and resource of its path
/// (`/apis/kueue.x-k8s.io/v1beta2/namespaces/a/workloads/w/status` →
/// `kueue.x-k8s.io/workloads`), as one REST client per resource kind has
/// one. Subresources share their resource's bucket, as they share its
/// client. Anything else (discovery, `/version`) shares one bucket.
pub fn resource_key(path: &str) -> String {
    let mut parts = path.split('?').next().unwrap_or("").split('/').skip(1);
    let group = match parts.next() {
        Some("api") => {
            parts.next(); // version
            ""
        }
        Some("apis") => {
            let g = parts.next().unwrap_or("");
            parts.next(); // version
            g
        }
        _ => return String::new(),
    };
    let resource = match parts.next() {
        Some("namespaces") => {
            parts.next(); // the namespace's name
                          // `/api/v1/namespaces/x` is the namespace itself.
            parts.next().unwrap_or("namespaces")
        }
        Some(r) => r,
        None => "",
    };
    format!("{group}/{resource}")
}

/// The buckets of one client, one per resource, made on first use.
#[derive(Debug)]
pub struct Throttle {
    qps: f64,
    burst: u32,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Throttle {
    pub fn new(qps: f64, burst: u32) -> Throttle {
        Throttle {
            qps,
            burst,
            buckets: Mutex::default(),
        }
    }

    fn reserve(&self, path: &str, now: Instant) -> Duration {
        let key = resource_key(path);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        buckets
            .entry(key)
            .or_insert_with(|| Bucket::new(self.qps, self.burst))
            .reserve(now)
    }
}

#[derive(Clone)]
pub struct ThrottleLayer(pub Arc<Throttle>);

impl<S> Layer<S> for ThrottleLayer {
    type Service = Throttled<S>;
    fn layer(&self, inner: S) -> Throttled<S> {
        Throttled {
            inner: Arc::new(tokio::sync::Mutex::new(inner)),
            throttle: self.0.clone(),
        }
    }
}

/// The client's own stack is not `Clone`, and a waiting request must call
/// it later: it is shared behind a lock held only to ready it and start a
/// request, never while the response is awaited.
pub struct Throttled<S> {
    inner: Arc<tokio::sync::Mutex<S>>,
    throttle: Arc<Throttle>,
}

impl<S> Clone for Throttled<S> {
    fn clone(&self) -> Self {
        Throttled {
            inner: self.inner.clone(),
            throttle: self.throttle.clone(),
        }
    }
}

impl<S, B> Service<Request<B>> for Throttled<S>
where
    S: Service<Request<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness is checked when the request's turn comes (below).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let wait = self.throttle.reserve(req.uri().path(), Instant::now());
        let inner = self.inner.clone();
        Box::pin(async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            let sent = {
                let mut svc = inner.lock().await;
                svc.ready().await.map_err(Into::into)?.call(req)
            };
            sent.await.map_err(Into::into)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_lets_burst_requests_through_then_paces_them_at_qps() {
        let t0 = Instant::now();
        let mut b = Bucket::new(50.0, 100);
        for i in 0..100 {
            assert_eq!(b.reserve(t0), Duration::ZERO, "request {i} of the burst");
        }
        // The 101st waits one token's time, the 102nd two.
        assert_eq!(b.reserve(t0), Duration::from_millis(20));
        assert_eq!(b.reserve(t0), Duration::from_millis(40));
        // A second later 50 tokens have come back, two of them already
        // promised: 48 requests go freely, the 49th waits again.
        let t1 = t0 + Duration::from_secs(1);
        for _ in 0..48 {
            assert_eq!(b.reserve(t1), Duration::ZERO);
        }
        assert_eq!(b.reserve(t1), Duration::from_millis(20));
    }

    #[test]
    fn an_idle_bucket_refills_only_to_burst() {
        let t0 = Instant::now();
        let mut b = Bucket::new(10.0, 3);
        b.reserve(t0);
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(b.reserve(later), Duration::ZERO);
        }
        assert_eq!(b.reserve(later), Duration::from_millis(100));
    }

    #[test]
    fn zero_qps_means_no_limit() {
        let t0 = Instant::now();
        let mut b = Bucket::new(0.0, 0);
        for _ in 0..1000 {
            assert_eq!(b.reserve(t0), Duration::ZERO);
        }
    }

    #[test]
    fn requests_draw_from_their_resources_bucket() {
        for (path, key) in [
            (
                "/apis/kueue.x-k8s.io/v1beta2/namespaces/a/workloads/w/status",
                "kueue.x-k8s.io/workloads",
            ),
            (
                "/apis/kueue.x-k8s.io/v1beta2/namespaces/a/workloads?watch=true",
                "kueue.x-k8s.io/workloads",
            ),
            (
                "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq/status",
                "kueue.x-k8s.io/clusterqueues",
            ),
            ("/api/v1/namespaces/a/pods/p", "/pods"),
            ("/api/v1/namespaces/a", "/namespaces"),
            ("/api/v1/nodes", "/nodes"),
            (
                "/apis/events.k8s.io/v1/namespaces/a/events",
                "events.k8s.io/events",
            ),
            ("/version", ""),
        ] {
            assert_eq!(resource_key(path), key, "{path}");
        }
    }

    #[test]
    fn one_resources_burst_does_not_delay_another() {
        let t = Throttle::new(1.0, 1);
        let now = Instant::now();
        let w = "/apis/kueue.x-k8s.io/v1beta2/namespaces/a/workloads/w/status";
        assert_eq!(t.reserve(w, now), Duration::ZERO);
        assert_eq!(t.reserve(w, now), Duration::from_secs(1));
        let e = "/apis/events.k8s.io/v1/namespaces/a/events";
        assert_eq!(t.reserve(e, now), Duration::ZERO);
    }
}
