//! The HTTPS webhook listener and the plain-HTTP probe listener.
//!
//! A hand-written accept loop (rather than `axum::serve`) so that TLS, the
//! connection bound, the handshake and header-read timeouts and the graceful
//! drain are all under our control; axum routes the requests.

mod conversion;
pub mod metrics;
pub mod tls;
pub mod webhook;

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
use http_body_util::{BodyExt, Limited};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto, graceful::GracefulShutdown},
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use crate::cluster::sar::SarClient;
use metrics::{Metrics, ReasonLabel, WebhookLabel};
use tls::CertStore;
use webhook::{error_body, Hook, Reviewed, Webhook};

/// Bounds on what one client may cost the server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body accepted. The apiserver caps a stored object at
    /// 3 MiB (its request body limit) and an UPDATE review carries the object
    /// twice, plus JSON escaping: 7 MiB leaves room for that and no more.
    pub max_body_bytes: usize,
    pub handshake_timeout: Duration,
    pub header_read_timeout: Duration,
    /// Time allowed to receive the whole body.
    pub body_timeout: Duration,
    pub max_connections: usize,
    pub max_h2_streams: u32,
    pub cert_reload_interval: Duration,
    /// After SIGTERM: keep serving this long with readiness false, so
    /// endpoints stop sending traffic before the listener closes.
    pub shutdown_delay: Duration,
    /// Then give in-flight reviews at most this long to finish.
    pub drain_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 7 * 1024 * 1024,
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_connections: 1024,
            max_h2_streams: 256,
            cert_reload_interval: Duration::from_secs(2),
            shutdown_delay: Duration::ZERO,
            drain_timeout: Duration::from_secs(20),
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
    webhook: Arc<Webhook>,
    /// Answers entitlement checks; `None` without a cluster (no opt-ins).
    sar: Option<SarClient>,
    metrics: Arc<Metrics>,
    limits: Arc<Limits>,
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
/// directory is polled for changes while serving. `sar` answers the
/// entitlement checks reviews need.
pub async fn bind(
    opts: ServeOptions,
    store: Arc<CertStore>,
    webhook: Arc<Webhook>,
    sar: Option<SarClient>,
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
    let probe_listener = TcpListener::bind(opts.probe_listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: opts.probe_listen,
            source,
        })?;
    let webhook_addr = listener.local_addr()?;
    let probe_addr = probe_listener.local_addr()?;
    info!(%webhook_addr, %probe_addr, "listening");

    let limits = Arc::new(opts.limits);
    let state = AppState {
        webhook,
        sar,
        metrics: metrics.clone(),
        limits: limits.clone(),
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

    let run = async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
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
        let probe_task = tokio::spawn({
            let mut rx = stop_rx.clone();
            async move {
                axum::serve(probe_listener, probes)
                    .with_graceful_shutdown(async move {
                        let _ = rx.wait_for(|s| *s).await;
                    })
                    .await
            }
        });

        tokio::pin!(shutdown);
        let graceful = GracefulShutdown::new();
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .keep_alive(true);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(limits.max_h2_streams)
            .max_header_list_size(64 * 1024);
        let conns = Arc::new(Semaphore::new(limits.max_connections));
        loop {
            let permit = tokio::select! {
                _ = &mut shutdown => break,
                p = conns.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            };
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
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            let builder = builder.clone();
            let svc = TowerToHyperService::new(router.clone());
            let watch = graceful.watcher();
            let handshake_timeout = limits.handshake_timeout;
            tokio::spawn(async move {
                let _permit = permit;
                let tls = match tokio::time::timeout(handshake_timeout, acceptor.accept(tcp)).await
                {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        debug!(%peer, "TLS handshake timed out");
                        return;
                    }
                };
                let conn = builder
                    .serve_connection(TokioIo::new(tls), svc)
                    .into_owned();
                if let Err(e) = watch.watch(conn).await {
                    debug!(%peer, error = %e, "connection ended with an error");
                }
            });
        }

        // Draining: readiness is false already (set by the caller before
        // `shutdown` resolved); stop accepting, finish what is in flight,
        // close keep-alive connections.
        drop(listener);
        info!("draining connections");
        if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
            .await
            .is_err()
        {
            warn!(timeout = ?limits.drain_timeout, "drain timed out; closing remaining connections");
        }
        let _ = stop_tx.send(true);
        if let Some(w) = watcher {
            let _ = w.await;
        }
        if let Ok(Err(e)) = probe_task.await {
            warn!(error = %e, "probe listener failed");
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
    let too_large = || {
        format!("request body is larger than the {limit}-byte limit; an AdmissionReview from kube-apiserver never is")
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return reject(
            &s,
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            &too_large(),
        );
    }
    let body = match tokio::time::timeout(
        s.limits.body_timeout,
        Limited::new(req.into_body(), limit).collect(),
    )
    .await
    {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return reject(
                &s,
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                &too_large(),
            )
        }
        Ok(Err(e)) => {
            return reject(
                &s,
                StatusCode::BAD_REQUEST,
                "body_error",
                &format!("reading the request body: {e}"),
            )
        }
        Err(_) => {
            return reject(
                &s,
                StatusCode::REQUEST_TIMEOUT,
                "body_timeout",
                &format!(
                    "request body not received within {:?}",
                    s.limits.body_timeout
                ),
            )
        }
    };
    let answer = match s.webhook.review(hook, &body) {
        Reviewed::Done(answer) => answer,
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
            s.metrics.reviews.get_or_create(l).inc();
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

async fn not_found(State(s): State<AppState>, req: Request<Body>) -> Response<Body> {
    let msg = format!(
        "no route for {} {}: batchgate serves POST /mutate, POST /validate and POST /convert",
        req.method(),
        req.uri().path()
    );
    reject(&s, StatusCode::NOT_FOUND, "not_found", &msg)
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
