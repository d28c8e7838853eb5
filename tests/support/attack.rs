//! Attack clients for the hostile-client tests: each kind keeps `n`
//! connections going until `until`, reconnecting `pause` after the server
//! closes one, and records how long the server let each connection live.

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use rustls::pki_types::ServerName;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};
use tokio_rustls::{client::TlsStream, TlsConnector};

/// Raises this process's open-file limit to its hard limit: the attacks
/// hold thousands of sockets here, and the server under test (a child
/// process) inherits the raised limit too. A machine whose hard limit is
/// below what an attack needs fails here with the numbers, not later with
/// EMFILE in the middle of an attack.
pub fn raise_open_files(need: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    assert!(
        lim.rlim_cur >= need,
        "the attacks need {need} open files; the hard limit is {} (raise it with ulimit -Hn)",
        lim.rlim_cur
    );
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// TLS handshake, then nothing.
    Silent,
    /// HTTP/2 by ALPN, then only `PRI * HTTP/2.0`.
    PartialPreface,
    /// The whole HTTP/2 preface and an empty SETTINGS frame, then nothing.
    IdleH2,
    /// A request line, then one header line every two seconds.
    Slowloris,
    /// Pipelined reviews written and their responses never read.
    NonReading,
    /// HTTP/2 with a flow-control window of 0: a request whose response
    /// can never be sent.
    NonReadingH2,
    /// A 7 MiB Content-Length and all of the body but its last byte.
    BodyMinusOne,
}

#[derive(Debug, Default)]
pub struct Stats {
    /// Connections that completed the TLS handshake.
    pub opened: AtomicU64,
    /// Of those, closed by the server.
    pub closed: AtomicU64,
    /// Connect or handshake failures (refused, or closed before the
    /// handshake: the server gave the slot to a newcomer).
    pub refused: AtomicU64,
    /// Longest life from handshake to the server's close, in ms.
    pub longest_ms: AtomicU64,
    /// Lives from handshake to close, in ms.
    pub lives: Mutex<Vec<u64>>,
    /// Age of the oldest connection still open when the attack stopped.
    pub oldest_open_ms: AtomicU64,
}

impl Stats {
    fn closed_after(&self, life: Duration) {
        let ms = life.as_millis() as u64;
        self.closed.fetch_add(1, Ordering::Relaxed);
        self.longest_ms.fetch_max(ms, Ordering::Relaxed);
        self.lives.lock().unwrap().push(ms);
    }

    pub fn percentile_ms(&self, p: f64) -> u64 {
        let mut v = self.lives.lock().unwrap().clone();
        if v.is_empty() {
            return 0;
        }
        v.sort_unstable();
        v[((v.len() - 1) as f64 * p).round() as usize]
    }

    pub fn summary(&self, kind: Kind) -> String {
        format!(
            "{kind:?}: {} connections opened, {} closed by the server (median life {} ms, p99 {} ms, longest {} ms), {} refused before the handshake, oldest still open at the end {} ms",
            self.opened.load(Ordering::Relaxed),
            self.closed.load(Ordering::Relaxed),
            self.percentile_ms(0.5),
            self.percentile_ms(0.99),
            self.longest_ms.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
            self.oldest_open_ms.load(Ordering::Relaxed),
        )
    }
}

pub struct Attack {
    pub kind: Kind,
    pub stats: Arc<Stats>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Attack {
    /// Starts `n` attacking connections of `kind`, kept up until `until`.
    pub fn start(
        kind: Kind,
        n: usize,
        addr: SocketAddr,
        ca_pem: &str,
        until: Instant,
        pause: Duration,
    ) -> Attack {
        let alpn: &[&[u8]] = match kind {
            Kind::PartialPreface | Kind::IdleH2 | Kind::NonReadingH2 => &[b"h2"],
            _ => &[b"http/1.1"],
        };
        let _ = ca_pem;
        let tls = TlsConnector::from(unverified(alpn));
        let stats = Arc::new(Stats::default());
        let tasks = (0..n)
            .map(|i| {
                let (tls, stats) = (tls.clone(), stats.clone());
                tokio::spawn(async move {
                    // Spread the first connects over fifteen seconds, and
                    // every reconnect over pause/2 .. 3*pause/2, so that
                    // connections closed together do not return together.
                    let mut seed = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                    let mut jitter = move || {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        (seed % 1000) as f64 / 1000.0
                    };
                    tokio::time::sleep(Duration::from_secs_f64(15.0 * jitter())).await;
                    while Instant::now() < until {
                        match connect(&tls, addr, kind == Kind::NonReading).await {
                            Some(s) => {
                                stats.opened.fetch_add(1, Ordering::Relaxed);
                                let t = Instant::now();
                                if behave(kind, s, until).await {
                                    stats.closed_after(t.elapsed());
                                } else {
                                    stats.oldest_open_ms.fetch_max(
                                        t.elapsed().as_millis() as u64,
                                        Ordering::Relaxed,
                                    );
                                }
                            }
                            None => {
                                stats.refused.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        tokio::time::sleep(pause.mul_f64(0.5 + jitter())).await;
                    }
                })
            })
            .collect();
        Attack { kind, stats, tasks }
    }

    pub async fn join(self) -> Arc<Stats> {
        for t in self.tasks {
            let _ = t.await;
        }
        self.stats
    }
}

/// An attacker does not check whom it attacks: no certificate
/// verification, which also keeps the attack's CPU (this test shares the
/// machine with the server) to the key exchange.
fn unverified(alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    #[derive(Debug)]
    struct Anyone(Arc<rustls::crypto::CryptoProvider>);
    impl rustls::client::danger::ServerCertVerifier for Anyone {
        fn verify_server_cert(
            &self,
            _: &rustls::pki_types::CertificateDer<'_>,
            _: &[rustls::pki_types::CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: rustls::pki_types::UnixTime,
        ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            _: &[u8],
            _: &rustls::pki_types::CertificateDer<'_>,
            _: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
        }
        fn verify_tls13_signature(
            &self,
            _: &[u8],
            _: &rustls::pki_types::CertificateDer<'_>,
            _: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
        }
        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Anyone(provider)))
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(cfg)
}

async fn connect(
    tls: &TlsConnector,
    addr: SocketAddr,
    small_rcvbuf: bool,
) -> Option<TlsStream<TcpStream>> {
    let sock = tokio::net::TcpSocket::new_v4().ok()?;
    if small_rcvbuf {
        sock.set_recv_buffer_size(4096).ok()?;
    }
    let tcp = tokio::time::timeout(Duration::from_secs(5), sock.connect(addr))
        .await
        .ok()?
        .ok()?;
    tokio::time::timeout(
        Duration::from_secs(15),
        tls.connect(ServerName::try_from("localhost").unwrap(), tcp),
    )
    .await
    .ok()?
    .ok()
}

/// Plays `kind` on `s` until the server closes it (true) or `until` (false).
async fn behave(kind: Kind, mut s: TlsStream<TcpStream>, until: Instant) -> bool {
    let deadline = tokio::time::Instant::from_std(until);
    match kind {
        Kind::Silent => {}
        Kind::PartialPreface => {
            if s.write_all(b"PRI * HTTP/2.0").await.is_err() {
                return true;
            }
        }
        Kind::NonReadingH2 => {
            let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
            // SETTINGS: INITIAL_WINDOW_SIZE (4) = 0.
            hello.extend_from_slice(&[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0]);
            // HEADERS, stream 1, END_STREAM | END_HEADERS: GET https /
            // (answered 404 with a JSON body that cannot be sent).
            hello.extend_from_slice(&[0, 0, 3, 1, 5, 0, 0, 0, 1, 0x82, 0x87, 0x84]);
            if s.write_all(&hello).await.is_err() {
                return true;
            }
        }
        Kind::IdleH2 => {
            let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
            // SETTINGS, no parameters, stream 0.
            hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
            if s.write_all(&hello).await.is_err() {
                return true;
            }
        }
        Kind::Slowloris => {
            if s.write_all(b"POST /mutate HTTP/1.1\r\nhost: localhost\r\n")
                .await
                .is_err()
            {
                return true;
            }
            let (mut rd, mut wr) = tokio::io::split(s);
            let trickle = async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    if wr.write_all(b"x-slow: 1\r\n").await.is_err() {
                        return;
                    }
                }
            };
            tokio::select! {
                closed = read_to_close(&mut rd, deadline) => return closed,
                () = trickle => return true,
            }
        }
        Kind::NonReading => {
            let one = super::review(
                "non-reading",
                "CREATE",
                super::JOB,
                super::job(
                    serde_json::json!({"kueue.x-k8s.io/queue-name": "q"}),
                    serde_json::json!({}),
                ),
                None,
            );
            let mut req = format!(
                "POST /mutate HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                one.len()
            )
            .into_bytes();
            req.extend_from_slice(&one);
            // Enough pipelined reviews that their answers overflow what the
            // kernel and TLS buffer on both sides (this socket's receive
            // buffer is a few KiB), then one more every two seconds:
            // never read, so the server's writes block, and ours fail
            // once it closes.
            let burst: Vec<u8> = req.iter().copied().cycle().take(req.len() * 1000).collect();
            let mut first = true;
            loop {
                let chunk = if first { &burst[..] } else { &req[..] };
                first = false;
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => return false,
                    r = s.write_all(chunk) => if r.is_err() { return true },
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => return false,
                    _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                }
            }
        }
        Kind::BodyMinusOne => {
            let len = 7 * 1024 * 1024;
            let head = format!(
                "POST /mutate HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n"
            );
            let body = body_minus_one(len);
            let send = async {
                s.write_all(head.as_bytes()).await?;
                s.write_all(&body[..len - 1]).await?;
                s.flush().await
            };
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return false,
                r = send => if r.is_err() { return true },
            }
        }
    }
    read_to_close(&mut s, deadline).await
}

/// Reads (and discards) until the server closes, or the deadline.
async fn read_to_close(
    s: &mut (impl tokio::io::AsyncRead + Unpin),
    deadline: tokio::time::Instant,
) -> bool {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return false,
            r = s.read(&mut buf) => if matches!(r, Ok(0) | Err(_)) { return true },
        }
    }
}

fn body_minus_one(len: usize) -> &'static [u8] {
    static BODY: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BODY.get_or_init(|| {
        let mut v = b"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"big\",\"object\":{\"pad\":\"".to_vec();
        v.resize(len, b'x');
        v
    })
}

/// Honest reviews on new connections, one after another, until `until`.
pub struct Honest {
    pub latencies_ms: Vec<f64>,
    pub failures: Vec<String>,
}

impl Honest {
    /// [`Honest::run`] on a thread and runtime of its own, so that the
    /// attack's thousands of tasks in the test's runtime do not delay it:
    /// the latency measured is the server's, not the test's scheduler's.
    pub async fn run_apart(
        addr: SocketAddr,
        ca_pem: String,
        until: Instant,
        every: Duration,
    ) -> Honest {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let _ = tx.send(rt.block_on(Honest::run(addr, ca_pem, until, every)));
        });
        rx.await.unwrap()
    }

    pub async fn run(addr: SocketAddr, ca_pem: String, until: Instant, every: Duration) -> Honest {
        let client = super::Client::new(addr, &ca_pem);
        let mut out = Honest {
            latencies_ms: Vec::new(),
            failures: Vec::new(),
        };
        let mut i = 0u64;
        while Instant::now() < until {
            i += 1;
            let uid = format!("honest-{i}");
            let body = super::review(
                &uid,
                "CREATE",
                super::JOB,
                super::job(
                    serde_json::json!({"kueue.x-k8s.io/queue-name": "q"}),
                    serde_json::json!({}),
                ),
                None,
            );
            let t = Instant::now();
            // The apiserver gives a webhook at most its timeoutSeconds (10 s
            // by default): an answer later than that is a failure too.
            let r = tokio::time::timeout(Duration::from_secs(10), client.try_post("/mutate", body))
                .await;
            match r {
                Ok(Ok((status, v))) if status == 200 && v["response"]["uid"] == uid.as_str() => {
                    out.latencies_ms.push(t.elapsed().as_secs_f64() * 1000.0)
                }
                Ok(Ok((status, v))) => out.failures.push(format!("{uid}: {status} {v}")),
                Ok(Err(e)) => out.failures.push(format!("{uid}: {e}")),
                Err(_) => out.failures.push(format!("{uid}: no answer within 10 s")),
            }
            tokio::time::sleep(every).await;
        }
        out
    }

    pub fn percentile_ms(&self, p: f64) -> f64 {
        let mut v = self.latencies_ms.clone();
        if v.is_empty() {
            return 0.0;
        }
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[((v.len() - 1) as f64 * p).round() as usize]
    }

    pub fn summary(&self) -> String {
        format!(
            "honest reviews on new connections: {} answered, {} failed; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            self.latencies_ms.len(),
            self.failures.len(),
            self.percentile_ms(0.5),
            self.percentile_ms(0.99),
            self.percentile_ms(1.0),
        )
    }
}
