//! One reconciler at a time: replicas serve the webhook together, but only
//! the holder of a `coordination.k8s.io` Lease runs the queueing engine and
//! starts or stops jobs — two engines would each count the same quota.
//!
//! - A holder that cannot renew within the renew deadline exits, as
//!   controller-runtime's leader election does.
//! - Every write the reconciler makes passes a [`Fence`]: it is refused
//!   unless the last renewal that landed began less than a renew deadline
//!   ago (by the monotonic clock, which keeps counting while the process is
//!   frozen). A replica resumed after SIGSTOP therefore writes nothing
//!   before it finds the Lease taken and exits.
//! - On shutdown the fence closes first, writes in flight finish, then the
//!   Lease is released as client-go's `ReleaseOnCancel` does, so a standby
//!   takes over within one retry period instead of a lease duration.

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use http::{Method, Request};
use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::Timestamp,
};
use kube::{
    api::{ObjectMeta, PostParams},
    Api, Client,
};
use tokio::time::Instant;
use tower::{BoxError, Layer, Service};
use tracing::{error, info, warn};

pub const LEASE_NAME: &str = "batchgate-reconciler";
/// The holder's batchgate version, on the Lease (`kubectl kueue version`).
pub const VERSION_ANNOTATION: &str = "batchgate.dev/version";

fn version_annotations() -> std::collections::BTreeMap<String, String> {
    [(
        VERSION_ANNOTATION.to_string(),
        env!("CARGO_PKG_VERSION").to_string(),
    )]
    .into()
}

/// The timings derived from the lease duration, as client-go's defaults
/// relate them (Kueue: 15 s lease, 10 s renew deadline, 2 s retry).
/// The margin between the renew deadline and the lease duration covers
/// clock skew between replicas: the fence runs on this process's clock,
/// the expiry others see on theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub duration: Duration,
    /// A holder that has not renewed for this long stops writing and exits.
    pub renew_deadline: Duration,
    /// How often the holder renews and a standby looks.
    pub retry: Duration,
}

impl Timing {
    pub fn new(duration: Duration) -> Timing {
        let duration = duration.max(Duration::from_secs(1));
        Timing {
            duration,
            renew_deadline: duration * 2 / 3,
            // At least three attempts fit in the renew deadline.
            retry: (duration / 5)
                .min(Duration::from_secs(2))
                .max(Duration::from_millis(200)),
        }
    }
}

/// What a replica may do with the Lease it just read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// It is ours: renew it.
    Renew,
    /// Released or expired: take it, counting one more transition.
    Take { transitions: i32 },
    /// Someone else holds it.
    Wait,
}

/// The decision, pure: `spec` as read, our identity, the time now.
pub fn decide(spec: &LeaseSpec, me: &str, now: Timestamp) -> Step {
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder == me && !me.is_empty() {
        return Step::Renew;
    }
    let expired = expiry(spec).is_none_or(|at| at < now.as_millisecond());
    if holder.is_empty() || expired {
        Step::Take {
            transitions: spec.lease_transitions.unwrap_or(0) + 1,
        }
    } else {
        Step::Wait
    }
}

/// The last moment (ms since the epoch) the Lease as read still binds
/// others: its renewTime plus its duration; `None` without them.
pub fn expiry(spec: &LeaseSpec) -> Option<i64> {
    let (t, d) = (spec.renew_time.as_ref()?, spec.lease_duration_seconds?);
    Some(t.0.as_millisecond() + i64::from(d) * 1000)
}

/// How long a standby that found another's live Lease sleeps before it
/// looks again: until just past its expiry when that comes before the
/// next retry, so a holder that stopped renewing (frozen, killed, cut
/// off) is replaced a lease after its last renewal, not up to a retry
/// period later.
pub fn next_look(expires: Option<i64>, now: Timestamp, retry: Duration) -> Duration {
    match expires {
        Some(at) => {
            let left = (at + 1 - now.as_millisecond()).max(0) as u64;
            retry.min(Duration::from_millis(left))
        }
        None => retry,
    }
}

/// The spec a holder leaves behind when it steps down (client-go's
/// `release()`): no holder, a one-second duration, renewed now.
pub fn released(spec: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(String::new()),
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: spec.lease_transitions,
        ..LeaseSpec::default()
    }
}

#[derive(Debug, Default)]
struct FenceState {
    /// Writes are allowed before this instant.
    valid_until: Option<Instant>,
    closed: bool,
    in_flight: usize,
}

/// Whether the reconciler may write now. Held open by lease renewals,
/// closed for good on shutdown.
#[derive(Debug, Default)]
pub struct Fence {
    state: Mutex<FenceState>,
    idle: tokio::sync::Notify,
}

impl Fence {
    fn lock(&self) -> std::sync::MutexGuard<'_, FenceState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A renewal that began at `started` landed: writes may go on until
    /// `started + renew_deadline`.
    pub fn extend(&self, started: Instant, renew_deadline: Duration) {
        let mut s = self.lock();
        s.valid_until = Some(started + renew_deadline);
    }

    /// Admits one write at `now`, or says why not.
    fn enter(&self, now: Instant) -> Result<(), FenceError> {
        let mut s = self.lock();
        if s.closed {
            return Err(FenceError::Stopping);
        }
        match s.valid_until {
            Some(t) if now < t => {
                s.in_flight += 1;
                Ok(())
            }
            _ => Err(FenceError::NotHeld),
        }
    }

    fn leave(&self) {
        let mut s = self.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 {
            self.idle.notify_waiters();
        }
    }

    /// Refuses every later write and waits (at most `within`) for the ones
    /// in flight; `true` when none is left.
    pub async fn close(&self, within: Duration) -> bool {
        self.lock().closed = true;
        let deadline = Instant::now() + within;
        loop {
            let idle = self.idle.notified();
            if self.lock().in_flight == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return self.lock().in_flight == 0;
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    #[error("write refused: this replica does not hold the reconciler lease {LEASE_NAME} (or its last renewal is older than the renew deadline)")]
    NotHeld,
    #[error("write refused: this replica is shutting down and has stopped reconciling")]
    Stopping,
}

/// A tower layer for the reconciler's kube client: every request that is
/// not a read passes the fence.
#[derive(Clone)]
pub struct FenceLayer(pub Arc<Fence>);

impl<S> Layer<S> for FenceLayer {
    type Service = Fenced<S>;
    fn layer(&self, inner: S) -> Fenced<S> {
        Fenced {
            inner,
            fence: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Fenced<S> {
    inner: S,
    fence: Arc<Fence>,
}

/// Leaves the fence when the write is done, however it ends.
struct InFlight(Arc<Fence>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl<S, B> Service<Request<B>> for Fenced<S>
where
    S: Service<Request<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let read = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
        if read {
            let f = self.inner.call(req);
            return Box::pin(async move { f.await.map_err(Into::into) });
        }
        match self.fence.enter(Instant::now()) {
            Ok(()) => {
                let guard = InFlight(self.fence.clone());
                let f = self.inner.call(req);
                Box::pin(async move {
                    let r = f.await.map_err(Into::into);
                    drop(guard);
                    r
                })
            }
            Err(e) => Box::pin(async move { Err(BoxError::from(e)) }),
        }
    }
}

#[derive(Debug, Default)]
struct Held {
    /// The Lease as we last wrote it (its resourceVersion makes a release
    /// lose to anyone who took it since).
    lease: Option<Lease>,
    leading: bool,
    stopping: bool,
    /// The expiry of the other holder's Lease we last read.
    others_expiry: Option<i64>,
}

/// Notifies `changed` of every change of the reconciler Lease.
async fn watch_lease(api: Api<Lease>, changed: Arc<tokio::sync::Notify>) {
    use futures::StreamExt;
    use kube::runtime::{watcher, WatchStreamExt};
    let config = watcher::Config::default().fields(&format!("metadata.name={LEASE_NAME}"));
    let mut health = crate::cluster::watch::Health::new("leases.coordination.k8s.io");
    let events = watcher(api, config).default_backoff().applied_objects();
    futures::pin_mut!(events);
    while let Some(ev) = events.next().await {
        match ev {
            Ok(_) => {
                health.delivered();
                changed.notify_one();
            }
            Err(e) => health.failed(&e),
        }
    }
}

pub struct Elector {
    api: Api<Lease>,
    namespace: String,
    /// The renewals' own client configuration: renewing runs on a thread
    /// and connection of its own (see [`Elector::acquire`]).
    renewal: Option<kube::Config>,
    identity: String,
    timing: Timing,
    fence: Arc<Fence>,
    /// Serialises reads and writes of the Lease with stepping down.
    held: tokio::sync::Mutex<Held>,
}

impl Elector {
    /// `client` must not be fenced: the Lease is how the fence opens.
    /// `renewal`: the configuration renewals build their own client from;
    /// `None` renews through `client` on the caller's runtime.
    pub fn new(
        client: Client,
        namespace: &str,
        duration: Duration,
        fence: Arc<Fence>,
        renewal: Option<kube::Config>,
    ) -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "batchgate".into());
        Elector {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            renewal,
            identity: format!("{host}_{}", std::process::id()),
            timing: Timing::new(duration),
            fence,
            held: tokio::sync::Mutex::new(Held::default()),
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn spec(&self, now: Timestamp, acquired: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.timing.duration.as_secs().max(1) as i32),
            acquire_time: Some(acquired.unwrap_or(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    /// One attempt, bounded (as kube-controller-manager bounds its
    /// leader-election client): a request stuck on a dead connection must
    /// not hold up the next attempt. A timed-out take that landed anyway
    /// reads as ours at the next attempt.
    async fn attempt(&self, api: &Api<Lease>) -> Result<bool, kube::Error> {
        let bound = self.timing.renew_deadline / 2;
        match tokio::time::timeout(bound, self.try_hold(api)).await {
            Ok(r) => r,
            // An error, not "not ours": a holder that times out keeps
            // trying until its renew deadline.
            Err(_) => Err(kube::Error::Service(Box::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer within {bound:?}"),
            )))),
        }
    }

    /// One attempt to take or keep the lease; `true` when we hold it.
    async fn try_hold(&self, api: &Api<Lease>) -> Result<bool, kube::Error> {
        let mut held = self.held.lock().await;
        if held.stopping {
            return Ok(false);
        }
        let started = Instant::now();
        let now = Timestamp::now();
        let Some(mut lease) = api.get_opt(LEASE_NAME).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(LEASE_NAME.into()),
                    annotations: Some(version_annotations()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.spec(now, None, 0)),
            };
            return match api.create(&PostParams::default(), &lease).await {
                Ok(l) => {
                    held.lease = Some(l);
                    held.leading = true;
                    self.fence.extend(started, self.timing.renew_deadline);
                    Ok(true)
                }
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let next = match decide(&spec, &self.identity, now) {
            Step::Wait => {
                held.others_expiry = expiry(&spec);
                return Ok(false);
            }
            Step::Renew => self.spec(
                now,
                spec.acquire_time.clone(),
                spec.lease_transitions.unwrap_or(0),
            ),
            Step::Take { transitions } => self.spec(now, None, transitions),
        };
        lease.spec = Some(next);
        lease
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .extend(version_annotations());
        // replace() carries the resourceVersion read: a concurrent taker loses.
        match api
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
        {
            Ok(l) => {
                held.lease = Some(l);
                held.leading = true;
                self.fence.extend(started, self.timing.renew_deadline);
                Ok(true)
            }
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Waits until the lease is ours, then keeps renewing it in the
    /// background; the process exits if a renewal does not land within the
    /// renew deadline. Never returns once [`Elector::step_down`] has run.
    pub async fn acquire(self: Arc<Self>) {
        let retry = self.timing.retry;
        // A change of the Lease (its release above all) is tried at once,
        // not at the next retry: a handover on SIGTERM takes no retry
        // period. The retry stays the backstop (an expiry sends no event).
        let changed = Arc::new(tokio::sync::Notify::new());
        let watch = tokio::spawn(watch_lease(self.api.clone(), changed.clone()));
        loop {
            let wait = match self.attempt(&self.api).await {
                Ok(true) => break,
                Ok(false) => {
                    let expires = self.held.lock().await.others_expiry.take();
                    next_look(expires, Timestamp::now(), retry)
                }
                Err(e) => {
                    warn!(error = %e, "reading the reconciler lease");
                    retry
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = changed.notified() => {}
            }
        }
        watch.abort();
        info!(lease = LEASE_NAME, identity = %self.identity, "reconciler lease acquired");
        let me = self.clone();
        match self.renewal.clone() {
            // On a thread, runtime and connection of its own: a runtime busy
            // with the reconciler's work (or a connection queued behind its
            // requests) must not delay a renewal past the renew deadline.
            Some(config) => {
                let spawned = std::thread::Builder::new()
                    .name("lease-renewal".into())
                    .spawn(move || {
                        let runtime = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build();
                        let runtime = match runtime {
                            Ok(r) => r,
                            Err(e) => {
                                error!(error = %e, "starting the lease renewal's runtime; exiting");
                                std::process::exit(1);
                            }
                        };
                        runtime.block_on(async move {
                            let client = match Client::try_from(config) {
                                Ok(c) => c,
                                Err(e) => {
                                    error!(error = %e, "building the lease renewal's client; exiting");
                                    std::process::exit(1);
                                }
                            };
                            let api = Api::namespaced(client, &me.namespace);
                            me.renew(&api).await
                        })
                    });
                if let Err(e) = spawned {
                    error!(error = %e, "starting the lease renewal's thread; exiting");
                    std::process::exit(1);
                }
            }
            None => {
                tokio::spawn(async move { me.renew(&me.api).await });
            }
        }
    }

    /// Renews the held Lease every retry period through `api`; exits the
    /// process when it is lost or not renewed within the renew deadline.
    async fn renew(&self, api: &Api<Lease>) {
        let retry = self.timing.retry;
        let mut last = Instant::now();
        loop {
            tokio::time::sleep(retry).await;
            let attempt = Instant::now();
            match self.attempt(api).await {
                Ok(true) => last = attempt,
                Ok(false) if self.held.lock().await.stopping => return,
                Ok(false) => {
                    error!("reconciler lease lost to another replica; exiting");
                    std::process::exit(1);
                }
                Err(e) => warn!(error = %e, "renewing the reconciler lease"),
            }
            if last.elapsed() > self.timing.renew_deadline {
                error!("reconciler lease not renewed in time; exiting");
                std::process::exit(1);
            }
        }
    }

    /// Shutdown: no more reconciler writes, then the Lease released so a
    /// standby takes it at its next retry. Safe to call when not leading.
    pub async fn step_down(&self, drain: Duration) {
        let drained = self.fence.close(drain).await;
        if !drained {
            warn!(within = ?drain, "reconciler writes still in flight; releasing the lease anyway");
        }
        let mut held = self.held.lock().await;
        held.stopping = true;
        let Some(mut lease) = held.lease.take().filter(|_| held.leading) else {
            return;
        };
        held.leading = false;
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        lease.spec = Some(released(&spec, Timestamp::now()));
        match self
            .api
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => info!(lease = LEASE_NAME, "reconciler lease released"),
            Err(kube::Error::Api(e)) if e.code == 409 => {
                info!(
                    lease = LEASE_NAME,
                    "reconciler lease changed since our last renewal; left to its new holder"
                )
            }
            Err(e) => {
                warn!(error = %e, "releasing the reconciler lease; a standby takes it when it expires")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn held_by(who: &str, renewed: i64, duration: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(who.into()),
            lease_duration_seconds: Some(duration),
            renew_time: Some(MicroTime(at(renewed))),
            acquire_time: Some(MicroTime(at(0))),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn ours_is_renewed_even_when_late() {
        assert_eq!(decide(&held_by("me", 0, 15), "me", at(5)), Step::Renew);
        assert_eq!(decide(&held_by("me", 0, 15), "me", at(60)), Step::Renew);
    }

    #[test]
    fn anothers_live_lease_is_waited_for_until_it_expires() {
        let spec = held_by("other", 0, 15);
        assert_eq!(decide(&spec, "me", at(15)), Step::Wait);
        assert_eq!(decide(&spec, "me", at(16)), Step::Take { transitions: 4 });
    }

    #[test]
    fn a_standby_looks_again_just_after_the_lease_it_waits_for_expires() {
        let retry = Duration::from_millis(1600);
        let spec = held_by("other", 0, 8);
        let expires = expiry(&spec);
        assert_eq!(expires, Some(at(8).as_millisecond()));
        // Far from expiry: the usual retry.
        assert_eq!(next_look(expires, at(1), retry), retry);
        // Within a retry of it: just past it, when `decide` says Take.
        let now = Timestamp::from_millisecond(at(8).as_millisecond() - 700).unwrap();
        let wait = next_look(expires, now, retry);
        assert_eq!(wait, Duration::from_millis(701));
        let then =
            Timestamp::from_millisecond(now.as_millisecond() + wait.as_millis() as i64).unwrap();
        assert_eq!(decide(&spec, "me", then), Step::Take { transitions: 4 });
        // Already past (a slow read): at once.
        assert_eq!(next_look(expires, at(9), retry), Duration::ZERO);
        assert_eq!(next_look(None, at(9), retry), retry);
    }

    #[test]
    fn a_released_lease_is_taken_at_once() {
        let spec = released(&held_by("other", 0, 15), at(1));
        assert_eq!(spec.holder_identity.as_deref(), Some(""));
        assert_eq!(spec.lease_duration_seconds, Some(1));
        assert_eq!(spec.renew_time, Some(MicroTime(at(1))));
        assert_eq!(spec.lease_transitions, Some(3));
        // Same second as the release: not expired, yet free.
        assert_eq!(decide(&spec, "me", at(1)), Step::Take { transitions: 4 });
    }

    #[test]
    fn a_lease_without_times_is_free() {
        let spec = LeaseSpec {
            holder_identity: Some("other".into()),
            ..LeaseSpec::default()
        };
        assert_eq!(decide(&spec, "me", at(0)), Step::Take { transitions: 1 });
    }

    #[test]
    fn an_empty_identity_never_counts_as_ours() {
        let spec = released(&held_by("x", 0, 15), at(0));
        assert_eq!(decide(&spec, "", at(0)), Step::Take { transitions: 4 });
    }

    /// One replica's step applied to the Lease, as `try_hold` writes it.
    fn apply(spec: &LeaseSpec, me: &str, now: Timestamp, duration: i32) -> (Step, LeaseSpec) {
        let step = decide(spec, me, now);
        let next = match step {
            Step::Wait => spec.clone(),
            Step::Renew => LeaseSpec {
                renew_time: Some(MicroTime(now)),
                ..spec.clone()
            },
            Step::Take { transitions } => LeaseSpec {
                holder_identity: Some(me.into()),
                lease_duration_seconds: Some(duration),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                lease_transitions: Some(transitions),
                ..LeaseSpec::default()
            },
        };
        (step, next)
    }

    #[test]
    fn a_handover_after_a_crash_waits_out_the_lease_and_the_old_holder_cannot_renew() {
        // a takes a free Lease and renews every 2 s until it dies at 10 s;
        // b looks every 2 s from the start.
        let mut spec = LeaseSpec::default();
        let mut b_took = None;
        for t in (0..60).step_by(2) {
            if t <= 10 {
                spec = apply(&spec, "a", at(t), 15).1;
                assert_eq!(spec.holder_identity.as_deref(), Some("a"));
            }
            let (step, next) = apply(&spec, "b", at(t + 1), 15);
            if matches!(step, Step::Take { .. }) {
                b_took = Some(t + 1);
                spec = next;
                break;
            }
            assert_eq!(step, Step::Wait, "b at {}", t + 1);
        }
        // Last renewal at 10 s + 15 s: b takes at its first look after 25 s.
        assert_eq!(b_took, Some(27));
        assert_eq!(spec.lease_transitions, Some(2));
        // a, resumed (it was frozen, not dead), finds it taken: waits, and
        // its elector exits instead of writing.
        assert_eq!(decide(&spec, "a", at(28)), Step::Wait);
        assert_eq!(decide(&spec, "b", at(28)), Step::Renew);
    }

    #[test]
    fn a_holders_fence_closes_before_another_may_take_its_lease() {
        // A renewal that began at `start` landed with renewTime >= start; the
        // fence lets the holder write until start + renew deadline, and
        // nobody else may take the Lease before renewTime + duration. The
        // gap is the margin for clock skew between replicas: a third.
        for secs in 1..=120u64 {
            let t = Timing::new(Duration::from_secs(secs));
            assert!(t.renew_deadline * 3 <= t.duration * 2, "{t:?}");
            assert!(
                t.duration - t.renew_deadline >= t.duration / 3 - Duration::from_millis(1),
                "{t:?}"
            );
            let spec = held_by("a", 0, secs as i32);
            let fence_closes = t.renew_deadline.as_millis() as i64;
            let last_moment =
                Timestamp::from_millisecond(at(0).as_millisecond() + fence_closes).unwrap();
            assert_eq!(decide(&spec, "b", last_moment), Step::Wait, "{t:?}");
        }
    }

    #[test]
    fn a_released_lease_goes_to_the_first_standby_only() {
        let released = released(&held_by("a", 0, 15), at(3));
        let (step, taken) = apply(&released, "b", at(3), 15);
        assert_eq!(step, Step::Take { transitions: 4 });
        // c looks a moment later: b holds it for a whole lease.
        assert_eq!(decide(&taken, "c", at(4)), Step::Wait);
        assert_eq!(decide(&taken, "c", at(18)), Step::Wait);
        assert_eq!(decide(&taken, "c", at(19)), Step::Take { transitions: 5 });
    }

    #[test]
    fn timing_follows_client_go_ratios() {
        let t = Timing::new(Duration::from_secs(15));
        assert_eq!(t.renew_deadline, Duration::from_secs(10));
        assert_eq!(t.retry, Duration::from_secs(2));
        let short = Timing::new(Duration::from_secs(2));
        assert_eq!(short.retry, Duration::from_millis(400));
        assert!(short.renew_deadline > short.retry * 3);
    }

    #[tokio::test]
    async fn the_fence_opens_with_a_renewal_and_shuts_at_its_deadline() {
        let fence = Fence::default();
        let t0 = Instant::now();
        assert!(matches!(fence.enter(t0), Err(FenceError::NotHeld)));
        fence.extend(t0, Duration::from_secs(10));
        assert!(fence.enter(t0 + Duration::from_secs(9)).is_ok());
        fence.leave();
        // A frozen process wakes up past the deadline: refused.
        assert!(matches!(
            fence.enter(t0 + Duration::from_secs(10)),
            Err(FenceError::NotHeld)
        ));
    }

    #[tokio::test]
    async fn closing_waits_for_writes_in_flight_then_refuses_all() {
        let fence = Arc::new(Fence::default());
        let t0 = Instant::now();
        fence.extend(t0, Duration::from_secs(60));
        fence.enter(t0).unwrap();
        let f = fence.clone();
        let closing = tokio::spawn(async move { f.close(Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!closing.is_finished());
        assert!(matches!(fence.enter(t0), Err(FenceError::Stopping)));
        fence.leave();
        assert!(closing.await.unwrap());
    }

    #[tokio::test]
    async fn closing_gives_up_after_its_bound() {
        let fence = Fence::default();
        fence.extend(Instant::now(), Duration::from_secs(60));
        fence.enter(Instant::now()).unwrap();
        assert!(!fence.close(Duration::from_millis(200)).await);
    }
}
