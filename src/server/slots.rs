//! Connection slots and what each live connection is doing.
//!
//! Every accepted connection takes a slot at once, before its TLS
//! handshake, so the accept queue never fills with honest clients waiting
//! behind silent ones. At the cap, a newcomer takes the slot of the
//! connection [`connection::victim`] names (the oldest one that has not
//! completed a request, else the longest idle one) and that connection is
//! closed; only when every slot is computing an answer does a newcomer wait.
//! The counters each connection keeps here are what the deadlines in
//! [`connection::verdict`] are decided on.

use std::{
    collections::HashMap,
    io,
    pin::Pin,
    sync::{
        atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::http::{header, HeaderValue, Request, Response};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    sync::Notify,
    time::Instant,
};

use super::connection::{self, Millis, Snapshot};

/// The server's clock: milliseconds since it started.
#[derive(Debug, Clone, Copy)]
pub struct Clock(Instant);

impl Clock {
    pub fn start() -> Clock {
        Clock(Instant::now())
    }
    pub fn now(&self) -> Millis {
        self.0.elapsed().as_millis() as Millis
    }
    pub fn instant(&self, at: Millis) -> Instant {
        self.0 + Duration::from_millis(at)
    }
}

const NONE: u64 = u64::MAX;

/// What one connection is doing, updated as it goes.
#[derive(Debug)]
pub struct Conn {
    clock: Clock,
    accepted: Millis,
    productive: AtomicBool,
    /// Negotiated HTTP/2 (set once, after the handshake).
    http2: AtomicBool,
    open: AtomicU32,
    computing: AtomicU32,
    sending: AtomicU32,
    idle_since: AtomicU64,
    last_request: AtomicU64,
    send_progress: AtomicU64,
    write_blocked_since: AtomicU64,
    /// Told to give up its slot.
    pub evicted: Notify,
}

impl Conn {
    fn new(clock: Clock) -> Conn {
        let now = clock.now();
        Conn {
            clock,
            accepted: now,
            productive: AtomicBool::new(false),
            http2: AtomicBool::new(false),
            open: AtomicU32::new(0),
            computing: AtomicU32::new(0),
            sending: AtomicU32::new(0),
            idle_since: AtomicU64::new(now),
            last_request: AtomicU64::new(now),
            send_progress: AtomicU64::new(now),
            write_blocked_since: AtomicU64::new(NONE),
            evicted: Notify::new(),
        }
    }

    pub fn snapshot(&self, draining_since: Option<Millis>) -> Snapshot {
        let w = self.write_blocked_since.load(Ordering::Relaxed);
        Snapshot {
            accepted: self.accepted,
            productive: self.productive.load(Ordering::Relaxed),
            http2: self.http2.load(Ordering::Relaxed),
            open: self.open.load(Ordering::Relaxed),
            computing: self.computing.load(Ordering::Relaxed),
            sending: self.sending.load(Ordering::Relaxed),
            idle_since: self.idle_since.load(Ordering::Relaxed),
            last_request: self.last_request.load(Ordering::Relaxed),
            send_progress: self.send_progress.load(Ordering::Relaxed),
            write_blocked_since: (w != NONE).then_some(w),
            draining_since,
        }
    }

    pub fn set_http2(&self) {
        self.http2.store(true, Ordering::Relaxed);
    }

    fn request_started(&self) {
        self.last_request.store(self.clock.now(), Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::Relaxed);
    }

    fn request_ended(&self) {
        if self.open.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.idle_since.store(self.clock.now(), Ordering::Relaxed);
        }
    }

    /// The request's body is in: its answer is being computed until the
    /// guard drops. The connection counts as productive from here.
    pub fn computing(self: &Arc<Self>) -> Computing {
        self.productive.store(true, Ordering::Relaxed);
        self.computing.fetch_add(1, Ordering::Relaxed);
        Computing(self.clone())
    }
}

/// See [`Conn::computing`].
#[derive(Debug)]
pub struct Computing(Arc<Conn>);

impl Drop for Computing {
    fn drop(&mut self) {
        self.0.computing.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The live connections, at most `cap`.
#[derive(Debug)]
pub struct Slots {
    cap: usize,
    clock: Clock,
    live: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    waiting: AtomicUsize,
    freed: Notify,
    evictions: AtomicU64,
    /// Admissions that found every slot taken.
    full: prometheus_client::metrics::counter::Counter,
}

/// A connection's slot, given back on drop.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    id: u64,
    pub conn: Arc<Conn>,
}

impl Slots {
    pub fn new(
        cap: usize,
        clock: Clock,
        full: prometheus_client::metrics::counter::Counter,
    ) -> Arc<Slots> {
        Arc::new(Slots {
            cap: cap.max(1),
            clock,
            live: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            freed: Notify::new(),
            evictions: AtomicU64::new(0),
            full,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        // A map of handles: no invariant a panic could break half-way.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn live(&self) -> usize {
        self.lock().len()
    }

    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// A slot for a new connection: a free one, else one taken from the
    /// connection [`connection::victim`] names, else the first one freed
    /// within `wait`. `None` when none comes, or when as many newcomers as
    /// there are slots are waiting already.
    pub async fn admit(self: &Arc<Self>, wait: Duration) -> Option<Slot> {
        let deadline = Instant::now() + wait;
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.cap {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let slot = loop {
            let notified = self.freed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(slot) = self.try_admit() {
                break Some(slot);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                break None;
            }
        };
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        slot
    }

    fn try_admit(self: &Arc<Self>) -> Option<Slot> {
        let mut live = self.lock();
        if live.len() >= self.cap {
            self.full.inc();
            let victim = connection::victim(live.iter().map(|(id, c)| (*id, c.snapshot(None))))?;
            if let Some(v) = live.remove(&victim) {
                v.evicted.notify_one();
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn::new(self.clock));
        live.insert(id, conn.clone());
        Some(Slot {
            slots: self.clone(),
            id,
            conn,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.slots.lock().remove(&self.id).is_some() {
            self.slots.freed.notify_one();
        }
    }
}

/// The socket, noting since when a write has been blocked.
pub struct TrackedIo<T> {
    inner: T,
    conn: Arc<Conn>,
}

impl<T> TrackedIo<T> {
    pub fn new(inner: T, conn: Arc<Conn>) -> Self {
        TrackedIo { inner, conn }
    }

    fn note<R>(&self, p: Poll<R>) -> Poll<R> {
        let w = &self.conn.write_blocked_since;
        match p {
            Poll::Pending => {
                if w.load(Ordering::Relaxed) == NONE {
                    w.store(self.conn.clock.now(), Ordering::Relaxed);
                }
            }
            Poll::Ready(_) => {
                if w.load(Ordering::Relaxed) != NONE {
                    w.store(NONE, Ordering::Relaxed);
                }
            }
        }
        p
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TrackedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TrackedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(p)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note(p)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.inner).poll_flush(cx);
        self.note(p)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.note(p)
    }
}

/// Wraps the router: counts open requests and responses being sent, hands
/// the handler its connection, and once draining asks HTTP/1.1 clients to
/// close (`Connection: close`) on every response.
#[derive(Clone)]
pub struct Tracking<S> {
    pub inner: S,
    pub conn: Arc<Conn>,
    pub http2: bool,
    pub readiness: Arc<super::Readiness>,
}

/// The handler's view of its connection (a request extension).
#[derive(Clone, Debug)]
pub struct ConnHandle(pub Arc<Conn>);

/// Ends a request's accounting when dropped (response sent, or abandoned).
struct Open {
    conn: Arc<Conn>,
    sending: bool,
}

impl Drop for Open {
    fn drop(&mut self) {
        if self.sending {
            self.conn.sending.fetch_sub(1, Ordering::Relaxed);
            self.conn
                .send_progress
                .store(self.conn.clock.now(), Ordering::Relaxed);
        }
        self.conn.request_ended();
    }
}

impl<S, B> tower::Service<Request<B>> for Tracking<S>
where
    S: tower::Service<Request<B>, Response = Response<axum::body::Body>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<TrackedBody>;
    type Error = S::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let conn = self.conn.clone();
        conn.request_started();
        let mut open = Open {
            conn: conn.clone(),
            sending: false,
        };
        req.extensions_mut().insert(ConnHandle(conn.clone()));
        let fut = self.inner.call(req);
        let close = !self.http2 && self.readiness.draining.load(Ordering::Relaxed);
        Box::pin(async move {
            let mut resp = fut.await?;
            conn.productive.store(true, Ordering::Relaxed);
            conn.sending.fetch_add(1, Ordering::Relaxed);
            conn.send_progress
                .store(conn.clock.now(), Ordering::Relaxed);
            open.sending = true;
            if close {
                resp.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(resp.map(|inner| TrackedBody { inner, _open: open }))
        })
    }
}

/// A response body that ends its request's accounting when hyper drops it
/// (sent whole, or the stream reset).
pub struct TrackedBody {
    inner: axum::body::Body,
    _open: Open,
}

impl hyper::body::Body for TrackedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}
