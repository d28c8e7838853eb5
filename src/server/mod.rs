//! The HTTPS webhook listener and the plain-HTTP probe listener.
//!
//! A hand-written accept loop (rather than `axum::serve`) so that TLS, the
//! connection slots, every connection's deadlines, the body budget and the
//! graceful drain are all under our control; axum routes the requests.
//! What each connection may cost is decided in [`connection`] (pure), the
//! slots and counters it is decided on live in [`slots`].

pub mod budget;
pub mod connection;
mod conversion;
pub mod slots;
pub mod visibility;

use std::{
    future::Future,
    net::SocketAddr,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use axum::{
    body::Body,
    extract::State,
    http::{header, HeaderValue, Request, Response, StatusCode},
    routing::{get, post},
    Router,
};
use http_body_util::BodyExt;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
    service::TowerToHyperService,
};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{mpsc, watch},
};
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use crate::admission::{
    family::Hook,
    router::{self as admission, error_body, Reviewed},
};
use crate::cluster::{objects::ObjectReader, sar::SarClient};
use crate::metrics::{Metrics, ReasonLabel, WebhookLabel};
use crate::tls::CertStore;
use budget::Budget;
use connection::{Millis, Timeouts, Verdict};
use slots::{Clock, ConnHandle, Slots, TrackedIo, Tracking};

/// Bounds on what one client may cost the server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body accepted. The apiserver caps a stored object at
    /// 3 MiB (its request body limit) and an UPDATE review carries the object
    /// twice, plus JSON escaping: 7 MiB leaves room for that and no more.
    pub max_body_bytes: usize,
    /// Request bodies buffered across all connections at once (see
    /// [`budget`]); sized with [`Limits::memory_bound`] against the
    /// Deployment's memory limit.
    pub max_body_bytes_in_flight: usize,
    /// How long a body waits in line for room in that budget before it is
    /// refused with 503. Under the webhooks' timeoutSeconds (10 s), so a
    /// body granted at the end of its wait is still read and answered
    /// before the apiserver gives up.
    pub body_budget_wait: Duration,
    pub handshake_timeout: Duration,
    /// From accept until the first request is complete: TLS, the protocol
    /// sniff, the HTTP/2 preface and SETTINGS, headers and body.
    pub first_request_timeout: Duration,
    pub header_read_timeout: Duration,
    /// Time allowed to receive the whole body.
    pub body_timeout: Duration,
    /// A connection with no request open this long is closed (HTTP/1.1)
    /// or sent GOAWAY (HTTP/2).
    pub idle_timeout: Duration,
    /// A write blocked this long, or a response the client does not take
    /// this long, closes the connection.
    pub write_timeout: Duration,
    /// HTTP/2 PING sent after this long without a frame from the client...
    pub http2_keep_alive_interval: Duration,
    /// ...and the connection closed if its ACK takes longer than this.
    pub http2_keep_alive_timeout: Duration,
    pub max_connections: usize,
    pub max_h2_streams: u32,
    pub cert_reload_interval: Duration,
    /// After SIGTERM: keep serving this long with readiness false, so
    /// endpoints stop sending traffic before the listener closes.
    pub shutdown_delay: Duration,
    /// Then give in-flight reviews at most this long to finish.
    pub drain_timeout: Duration,
    /// Once draining (and after an idle GOAWAY): a connection with nothing
    /// being computed is closed this long after it was asked to go.
    pub drain_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 7 * 1024 * 1024,
            max_body_bytes_in_flight: 64 * 1024 * 1024,
            body_budget_wait: Duration::from_secs(8),
            handshake_timeout: Duration::from_secs(10),
            first_request_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            write_timeout: Duration::from_secs(10),
            http2_keep_alive_interval: Duration::from_secs(30),
            http2_keep_alive_timeout: Duration::from_secs(15),
            max_connections: 1024,
            max_h2_streams: 256,
            cert_reload_interval: Duration::from_secs(2),
            shutdown_delay: Duration::ZERO,
            drain_timeout: Duration::from_secs(20),
            drain_grace: Duration::from_secs(2),
        }
    }
}

/// What one connection may hold outside the body budget: rustls' record
/// buffers (two 16 KiB records), hyper's HTTP/1.1 read buffer
/// ([`H1_MAX_BUF`]) or one HTTP/2 stream's receive window ([`H2_WINDOW`];
/// the others are pinned in the budget), the task and its timers.
pub const CONNECTION_BYTES: u64 = 96 * 1024;
/// The process without traffic: runtime, caches of a mid-sized cluster,
/// policies, allocator slack.
pub const BASELINE_BYTES: u64 = 64 * 1024 * 1024;
/// SO_SNDBUF and SO_RCVBUF of every accepted connection (the kernel
/// doubles them) instead of autotuning up to several MiB: a client that
/// stops reading blocks the server's writes within a few hundred answers,
/// so the write deadline applies, and a body waiting for the budget parks
/// little in the kernel. Kernel buffers are charged to the pod's memory
/// cgroup: at most 128 KiB a connection. The receive side holds at least
/// two of HTTP/2's 16 KiB DATA frames with their TLS records: at 16 KiB
/// several streams' bodies on one connection crawled (BENCHMARKS.md, Big
/// reviews).
pub const SOCKET_SEND_BUFFER: usize = 32 * 1024;
pub const SOCKET_RECV_BUFFER: usize = 32 * 1024;
/// hyper's HTTP/1.1 read buffer at most (headers, body chunks): a review's
/// headers are well under 1 KiB.
pub const H1_MAX_BUF: usize = 32 * 1024;
/// HTTP/2 receive window per stream: what a client may send on a stream
/// that is not yet read into a budgeted body. Each stream pins it in the
/// body budget from its arrival to its answer, so the connection's window
/// is every stream's together and adds nothing unbudgeted.
pub const H2_WINDOW: u32 = 32 * 1024;

impl Limits {
    /// The most memory the server is expected to use under any traffic:
    /// the body budget and its HTTP/2 stream pins (a quarter more, see
    /// [`budget::Book::pin_cap`]), every connection slot full, and the
    /// baseline. Checked against the Deployment's memory limit
    /// (tests/manifests.rs).
    pub fn memory_bound(&self) -> u64 {
        let budget = budget::Book::new(self.max_body_bytes_in_flight as u64);
        budget.cap
            + budget.pin_cap
            + self.max_connections as u64 * CONNECTION_BYTES
            + BASELINE_BYTES
    }

    fn timeouts(&self) -> Timeouts {
        let ms = |d: Duration| d.as_millis() as Millis;
        Timeouts {
            first_request: ms(self.first_request_timeout),
            idle: ms(self.idle_timeout),
            write: ms(self.write_timeout),
            drain_grace: ms(self.drain_grace),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    pub probe_listen: SocketAddr,
    pub limits: Limits,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("binding {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What `/readyz` reports.
#[derive(Debug, Default)]
pub struct Readiness {
    pub caches_synced: AtomicBool,
    pub draining: AtomicBool,
}

#[derive(Clone)]
struct AppState {
    webhook: Arc<admission::Router>,
    /// Answers entitlement checks; `None` without a cluster (no opt-ins).
    sar: Option<SarClient>,
    /// Reads the objects rules ask for; `None` without a cluster.
    objects: Option<ObjectReader>,
    metrics: Arc<Metrics>,
    limits: Arc<Limits>,
    budget: Arc<Budget>,
}

/// What reviews ask of the cluster while they are decided; `None`s
/// without one.
#[derive(Clone, Default)]
pub struct ClusterAsks {
    /// Answers entitlement checks.
    pub sar: Option<SarClient>,
    /// Reads the objects rules ask for by name.
    pub objects: Option<ObjectReader>,
}

/// A running server, for callers that want the bound addresses.
pub struct Bound {
    pub webhook_addr: SocketAddr,
    pub probe_addr: SocketAddr,
    pub run: std::pin::Pin<Box<dyn Future<Output = Result<(), ServeError>> + Send>>,
}

/// Binds both listeners and returns the future that serves until `shutdown`
/// resolves, then drains.
/// The serving pair is in `store`; when it came from a directory, the
/// directory is polled for changes while serving. `asks` answers what
/// reviews need of the cluster.
pub async fn bind(
    opts: ServeOptions,
    store: Arc<CertStore>,
    webhook: Arc<admission::Router>,
    asks: ClusterAsks,
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Bound, ServeError> {
    let info = store.info();
    metrics.cert_expiry.set(info.not_after);
    info!(serial = %info.serial, not_after = info.not_after, "serving certificate loaded");
    let acceptor = TlsAcceptor::from(Arc::new(store.server_config()?));

    let listener = TcpListener::bind(opts.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: opts.listen,
            source,
        })?;
    // A std listener: the probes are served by their own runtime (below).
    let probe_listener =
        std::net::TcpListener::bind(opts.probe_listen).map_err(|source| ServeError::Bind {
            addr: opts.probe_listen,
            source,
        })?;
    probe_listener.set_nonblocking(true)?;
    let webhook_addr = listener.local_addr()?;
    let probe_addr = probe_listener.local_addr()?;
    info!(%webhook_addr, %probe_addr, "listening");

    let limits = Arc::new(opts.limits);
    let state = AppState {
        webhook,
        sar: asks.sar,
        objects: asks.objects,
        metrics: metrics.clone(),
        limits: limits.clone(),
        budget: Arc::new(Budget::with_metrics(
            limits.max_body_bytes_in_flight as u64,
            metrics.body_budget.clone(),
        )),
    };
    let router = Router::new()
        .route("/mutate", post(mutate))
        .route("/validate", post(validate))
        .route("/convert", post(conversion::convert))
        .fallback(not_found)
        .with_state(state);
    let probes = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(render_metrics))
        .with_state((readiness.clone(), metrics.clone()));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let probe_task = serve_probes(probe_listener, probes, stop_rx.clone())?;
    let run = async move {
        let watcher = store.dir().is_some().then(|| {
            let mut rx = stop_rx.clone();
            tokio::spawn(store.clone().watch(
                limits.cert_reload_interval,
                metrics.clone(),
                async move {
                    let _ = rx.wait_for(|s| *s).await;
                },
            ))
        });

        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .max_buf_size(H1_MAX_BUF)
            .keep_alive(true);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(limits.max_h2_streams)
            .max_header_list_size(64 * 1024)
            .initial_stream_window_size(H2_WINDOW)
            .initial_connection_window_size(H2_WINDOW.saturating_mul(limits.max_h2_streams))
            .keep_alive_interval(
                (!limits.http2_keep_alive_interval.is_zero())
                    .then_some(limits.http2_keep_alive_interval),
            )
            .keep_alive_timeout(limits.http2_keep_alive_timeout);
        let clock = Clock::start();
        let (drain_tx, drain_rx) = watch::channel(None::<Millis>);
        // Every connection task holds a sender: the channel closes when the
        // last one ends.
        let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
        let shared = Arc::new(Shared {
            acceptor,
            builder,
            router,
            slots: Slots::new(
                limits.max_connections,
                clock,
                metrics.connection_slots_full.clone(),
            ),
            timeouts: limits.timeouts(),
            limits: limits.clone(),
            clock,
            readiness: readiness.clone(),
            metrics: metrics.clone(),
        });
        // The accept loop runs on a worker, not on the caller's thread: a
        // task spawned from a worker starts next on that worker, so a new
        // connection's handshake is not queued behind the timers and reads
        // of a thousand open ones.
        let accept = tokio::spawn({
            let shared = shared.clone();
            let drain_rx = drain_rx.clone();
            let alive_tx = alive_tx.clone();
            async move {
                tokio::pin!(shutdown);
                loop {
                    let (tcp, peer) = tokio::select! {
                        _ = &mut shutdown => break,
                        r = listener.accept() => match r {
                            Ok(x) => x,
                            Err(e) => {
                                // EMFILE and friends: back off instead of spinning.
                                warn!(error = %e, "accept failed");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                continue;
                            }
                        },
                    };
                    shared.metrics.connections_accepted.inc();
                    let _ = tcp.set_nodelay(true);
                    // Fixed kernel buffers instead of autotuning up to
                    // several MiB: what a client that does not read, or a
                    // body waiting for the budget, can park in the kernel
                    // (charged to the pod's memory cgroup) stays small.
                    let sock = socket2::SockRef::from(&tcp);
                    let _ = sock.set_send_buffer_size(SOCKET_SEND_BUFFER);
                    let _ = sock.set_recv_buffer_size(SOCKET_RECV_BUFFER);
                    tokio::spawn(serve_connection(
                        tcp,
                        peer,
                        shared.clone(),
                        drain_rx.clone(),
                        alive_tx.clone(),
                    ));
                }
                drop(listener);
            }
        });
        if let Err(e) = accept.await {
            warn!(error = %e, "accept loop ended abnormally");
        }

        // Draining: readiness is false already (set by the caller before
        // `shutdown` resolved, and HTTP/1.1 responses carry
        // `Connection: close` since); stop accepting, let in-flight reviews
        // finish, ask every connection to go (GOAWAY for HTTP/2) and close
        // those that stay past the grace.
        drop(alive_tx);
        let _ = drain_tx.send(Some(clock.now()));
        info!(connections = shared.slots.live(), "draining connections");
        if tokio::time::timeout(limits.drain_timeout, alive_rx.recv())
            .await
            .is_err()
        {
            warn!(timeout = ?limits.drain_timeout, "drain timed out; closing remaining connections");
        }
        let _ = stop_tx.send(true);
        if let Some(w) = watcher {
            let _ = w.await;
        }
        match probe_task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warn!(error = %e, "probe listener failed"),
            Err(_) => warn!("probe thread ended abnormally"),
        }
        info!("stopped");
        Ok(())
    };
    Ok(Bound {
        webhook_addr,
        probe_addr,
        run: Box::pin(run),
    })
}

/// What every connection task shares.
struct Shared {
    acceptor: TlsAcceptor,
    builder: auto::Builder<TokioExecutor>,
    router: Router,
    slots: Arc<Slots>,
    timeouts: Timeouts,
    limits: Arc<Limits>,
    clock: Clock,
    readiness: Arc<Readiness>,
    metrics: Arc<Metrics>,
}

impl Shared {
    fn closed(&self, reason: &'static str) {
        self.metrics
            .connections_closed
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }
}

/// One connection from accept to close: a slot, the TLS handshake, then
/// hyper serving it while its deadlines are watched.
async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    sh: Arc<Shared>,
    mut drain: watch::Receiver<Option<Millis>>,
    _alive: mpsc::Sender<()>,
) {
    let Some(slot) = sh.slots.admit(sh.limits.first_request_timeout).await else {
        debug!(%peer, "no connection slot came free");
        sh.closed("no_slot");
        return;
    };
    let conn = slot.conn.clone();
    let handshake = sh
        .limits
        .handshake_timeout
        .min(sh.limits.first_request_timeout);
    let tls = tokio::select! {
        r = tokio::time::timeout(handshake, sh.acceptor.accept(tcp)) => match r {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                debug!(%peer, error = %e, "TLS handshake failed");
                sh.closed("tls_error");
                return;
            }
            Err(_) => {
                debug!(%peer, "TLS handshake timed out");
                sh.closed("handshake_timeout");
                return;
            }
        },
        _ = conn.evicted.notified() => {
            sh.closed("evicted");
            return;
        }
    };
    let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    if http2 {
        conn.set_http2();
    }
    let svc = TowerToHyperService::new(Tracking {
        inner: sh.router.clone(),
        conn: conn.clone(),
        http2,
        readiness: sh.readiness.clone(),
    });
    let hconn = sh
        .builder
        .serve_connection(TokioIo::new(TrackedIo::new(tls, conn.clone())), svc);
    tokio::pin!(hconn);
    let mut draining_since = *drain.borrow();
    // When the connection was asked to go (GOAWAY, or close once idle).
    // Draining, HTTP/1.1 is not: closing a keep-alive connection whose next
    // request may be on the wire loses that request. Its responses carry
    // `Connection: close`; one that stays idle past the grace is closed.
    let mut asked = None::<Millis>;
    if draining_since.is_some() && http2 {
        hconn.as_mut().graceful_shutdown();
        asked = Some(sh.clock.now());
    }
    loop {
        let now = sh.clock.now();
        let snapshot = conn.snapshot(draining_since);
        let next = match connection::verdict(&snapshot, now, &sh.timeouts) {
            Verdict::Close(r) => {
                debug!(%peer, reason = r.as_str(), "closing connection");
                sh.closed(r.as_str());
                return;
            }
            Verdict::GoAway(r, at) => {
                match asked {
                    None => {
                        debug!(%peer, reason = r.as_str(), "asking connection to go");
                        hconn.as_mut().graceful_shutdown();
                        asked = Some(now);
                    }
                    // Asked and still here (an HTTP/2 client ignoring GOAWAY).
                    Some(t) if now >= t + sh.timeouts.drain_grace && snapshot.open == 0 => {
                        sh.closed(r.as_str());
                        return;
                    }
                    Some(_) => {}
                }
                at
            }
            Verdict::Keep(at) => at,
        };
        // Look again at least every second: a write may block, or a
        // request start, between two looks.
        let wake = next.min(now + 1000);
        tokio::select! {
            r = hconn.as_mut() => {
                if let Err(e) = r {
                    debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            _ = tokio::time::sleep_until(sh.clock.instant(wake)) => {}
            _ = conn.evicted.notified() => {
                debug!(%peer, "connection gave its slot to a newcomer");
                sh.closed("evicted");
                return;
            }
            r = drain.changed(), if draining_since.is_none() => {
                draining_since = match r {
                    Ok(()) => (*drain.borrow()).or(Some(sh.clock.now())),
                    Err(_) => Some(sh.clock.now()),
                };
                if asked.is_none() && http2 {
                    hconn.as_mut().graceful_shutdown();
                    asked = draining_since;
                }
            }
        }
    }
}

async fn mutate(State(s): State<AppState>, req: Request<Body>) -> Response<Body> {
    review(s, Hook::Mutate, req).await
}

async fn validate(State(s): State<AppState>, req: Request<Body>) -> Response<Body> {
    review(s, Hook::Validate, req).await
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn reject(s: &AppState, status: StatusCode, reason: &'static str, message: &str) -> Response<Body> {
    s.metrics
        .rejected
        .get_or_create(&ReasonLabel { reason })
        .inc();
    json_response(status, error_body(message))
}

async fn review(s: AppState, hook: Hook, req: Request<Body>) -> Response<Body> {
    let start = Instant::now();
    let limit = s.limits.max_body_bytes;
    let too_large = format!(
        "request body is larger than the {limit}-byte limit; an AdmissionReview from kube-apiserver never is"
    );
    let Received { body, conn, _held } = match receive(&s, req, limit, &too_large).await {
        Ok(r) => r,
        Err(refusal) => return refusal,
    };
    // The body is in: from here the connection is busy with real work and
    // is never the one to give up its slot.
    let _computing = conn.as_ref().map(|c| c.computing());
    // Each pass may ask for objects the last one read led to (an owner
    // chain's next parent); the chain's limit bounds the rounds.
    let mut reviewed = s.webhook.review(hook, &body);
    let mut read = crate::admission::Read::default();
    for _ in 0..crate::admission::router::READ_ROUNDS {
        let Reviewed::Read(keys) = reviewed else {
            break;
        };
        read.extend(match &s.objects {
            Some(r) => r.read_all(keys).await,
            None => crate::admission::Read::unreadable(keys, "no cluster connection"),
        });
        reviewed = s.webhook.review_read(hook, &body, &read);
    }
    let answer = match reviewed {
        Reviewed::Done(answer) => answer,
        // Still asking past the rounds: answered as without a cluster.
        Reviewed::Read(_) => s.webhook.answer(hook, &body),
        Reviewed::Entitle(mut pending) => match &s.sar {
            Some(sar) => {
                pending.resolve().await;
                let results = sar.check_all(pending.checks()).await;
                pending.finish(&results, sar.on_error())
            }
            None => pending.finish_unchecked(),
        },
    };
    match &answer.labels {
        Some(l) => {
            s.metrics.reviews.get_or_create(&l.into()).inc();
            s.metrics
                .latency
                .get_or_create(&WebhookLabel {
                    webhook: hook.as_str(),
                })
                .observe(start.elapsed().as_secs_f64());
        }
        None => {
            s.metrics
                .rejected
                .get_or_create(&ReasonLabel {
                    reason: "not_a_review",
                })
                .inc();
        }
    }
    json_response(answer.status, answer.body)
}

/// A request body read within every bound a client must keep to, the
/// connection it came on, and its reservation in the body budget (held
/// until the answer is computed, released on drop).
struct Received<'s> {
    body: Vec<u8>,
    conn: Option<Arc<slots::Conn>>,
    _held: budget::Reservation<'s>,
}

/// Reads a request body within the route's size limit, the body deadline
/// and the global budget of bytes in flight; every route that reads a body
/// comes through here, so none can hold memory the budget does not count.
/// `Err` is the refusal to send.
async fn receive<'s>(
    s: &'s AppState,
    req: Request<Body>,
    limit: usize,
    too_large: &str,
) -> Result<Received<'s>, Response<Body>> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(reject(
            s,
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            too_large,
        ));
    }
    let conn = req.extensions().get::<ConnHandle>().map(|c| c.0.clone());
    let mut held = s.budget.empty();
    // An HTTP/2 stream may have been sent its window already: pinned until
    // its answer, so streams waiting in line hold bounded memory. Out of
    // pins: refused at once, which frees what it was sent.
    if req.version() == axum::http::Version::HTTP_2 && !s.budget.pin(&mut held, H2_WINDOW.into()) {
        return Err(budget_refusal(s, "its HTTP/2 stream pins are all taken"));
    }
    let read = tokio::time::timeout(
        s.limits.body_timeout,
        read_body(
            req.into_body(),
            declared,
            limit,
            &s.budget,
            &mut held,
            s.limits.body_budget_wait,
        ),
    )
    .await;
    match read {
        Ok(Ok(body)) => Ok(Received {
            body,
            conn,
            _held: held,
        }),
        Ok(Err(BodyError::TooLarge)) => Err(reject(
            s,
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            too_large,
        )),
        Ok(Err(BodyError::Budget)) => Err(budget_refusal(
            s,
            &format!("no room came free within {:?}", s.limits.body_budget_wait),
        )),
        Ok(Err(BodyError::Read(e))) => Err(reject(
            s,
            StatusCode::BAD_REQUEST,
            "body_error",
            &format!("reading the request body: {e}"),
        )),
        Err(_) => Err(reject(
            s,
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            &format!(
                "request body not received within {:?}",
                s.limits.body_timeout
            ),
        )),
    }
}

fn budget_refusal(s: &AppState, why: &str) -> Response<Body> {
    let mut r = reject(
        s,
        StatusCode::SERVICE_UNAVAILABLE,
        "body_budget",
        &format!(
            "request bodies in flight use the server's {}-byte budget (webhook.maxBodyBytesInFlight) and {why}; retry",
            s.budget.cap(),
        ),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

enum BodyError {
    TooLarge,
    Budget,
    Read(axum::Error),
}

impl From<budget::Refused> for BodyError {
    fn from(r: budget::Refused) -> Self {
        match r {
            budget::Refused::Waited => BodyError::Budget,
            budget::Refused::TooLarge => BodyError::TooLarge,
        }
    }
}

/// Reads a body no further than its reservation in the budget: all of a
/// declared length up front, else ahead of the buffer as it grows.
async fn read_body<'b>(
    mut body: Body,
    declared: Option<u64>,
    limit: usize,
    budget: &'b Budget,
    held: &mut budget::Reservation<'b>,
    wait: Duration,
) -> Result<Vec<u8>, BodyError> {
    let mut buf = Vec::new();
    if let Some(n) = declared {
        budget.grow(held, n, wait).await.map_err(BodyError::from)?;
        buf.reserve_exact(n as usize);
    }
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(BodyError::Read)?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let need = buf.len() + data.len();
        if need > limit {
            return Err(BodyError::TooLarge);
        }
        if need > buf.capacity() {
            // Grow by doubling, within the limit, and reserve it first.
            let cap = need.max(buf.capacity() * 2).clamp(8 * 1024, limit);
            budget
                .grow(held, cap as u64, wait)
                .await
                .map_err(BodyError::from)?;
            buf.reserve_exact(cap - buf.len());
        }
        buf.extend_from_slice(&data);
    }
    Ok(buf)
}

async fn not_found(State(s): State<AppState>, req: Request<Body>) -> Response<Body> {
    let msg = format!(
        "no route for {} {}: batchgate serves POST /mutate, POST /validate and POST /convert",
        req.method(),
        req.uri().path()
    );
    reject(&s, StatusCode::NOT_FOUND, "not_found", &msg)
}

/// Serves `/healthz`, `/readyz` and `/metrics` on a thread of their own
/// until `stop` turns true. A kubelet whose liveness probe times out while
/// the webhook's workers are saturated (stalling clients, a burst of big
/// reviews) would restart a replica that is serving, and a scrape would
/// miss exactly the interval worth seeing.
fn serve_probes(
    listener: std::net::TcpListener,
    app: Router,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<tokio::sync::oneshot::Receiver<std::io::Result<()>>> {
    let (done, result) = tokio::sync::oneshot::channel();
    let serve = move || -> std::io::Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async move {
            axum::serve(TcpListener::from_std(listener)?, app)
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await
        })
    };
    std::thread::Builder::new()
        .name("probes".into())
        .spawn(move || {
            let _ = done.send(serve());
        })?;
    Ok(result)
}

async fn ready(State((r, _)): State<(Arc<Readiness>, Arc<Metrics>)>) -> (StatusCode, &'static str) {
    if r.draining.load(Ordering::Acquire) {
        (StatusCode::SERVICE_UNAVAILABLE, "draining")
    } else if !r.caches_synced.load(Ordering::Acquire) {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
    } else {
        (StatusCode::OK, "ok")
    }
}

async fn render_metrics(State((_, m)): State<(Arc<Readiness>, Arc<Metrics>)>) -> Response<Body> {
    let mut r = Response::new(Body::from(m.render()));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    r
}
