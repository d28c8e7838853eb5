//! TLS for the webhook listener with certificate hot reload.
//!
//! The serving pair is re-read from the cert directory on a short poll, by
//! path, following symlinks. That sees every way a pair is replaced: files
//! rewritten in place, renamed over, or (as kubelet updates a mounted Secret)
//! a new `..<timestamp>` directory swapped in under the `..data` symlink,
//! which inotify watches on the old inodes would miss. New handshakes get the
//! new pair; connections already open keep theirs, so nothing in flight fails.
//!
//! A room of the shell below `cluster` and `server`: the listener reads the
//! store, and the serving-certificate Secret's watcher (`cluster`) fills it.

use std::{
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use arc_swap::ArcSwap;
use rustls::{
    crypto::CryptoProvider,
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
    ServerConfig,
};
use tracing::{error, info};

use crate::certs::{self, CertError, CertInfo};
use crate::metrics::{Metrics, ResultLabel};

/// The serving certificate in use, swapped atomically on reload.
pub struct CertStore {
    /// Where the pair is re-read from; `None` when it is pushed in with
    /// [`CertStore::set_pem`] (read from a Secret through the API).
    dir: Option<PathBuf>,
    provider: Arc<CryptoProvider>,
    current: ArcSwap<CertifiedKey>,
    info: ArcSwap<CertInfo>,
    /// The file contents last tried, so a broken pair is reported once.
    last_seen: Mutex<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for CertStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertStore").field("dir", &self.dir).finish()
    }
}

impl CertStore {
    /// Loads the pair from `dir`; fails if it is missing or broken.
    pub fn load(dir: PathBuf) -> Result<Arc<CertStore>, CertError> {
        let (c, k) = read_dir_pair(&dir)?;
        Self::new(Some(dir), c, k)
    }

    /// A store holding the given PEM pair, updated with [`CertStore::set_pem`].
    pub fn from_pem(cert: Vec<u8>, key: Vec<u8>) -> Result<Arc<CertStore>, CertError> {
        Self::new(None, cert, key)
    }

    fn new(dir: Option<PathBuf>, c: Vec<u8>, k: Vec<u8>) -> Result<Arc<CertStore>, CertError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (cp, kp) = Self::paths(dir.as_deref());
        let sc = certs::load_pem(&c, &k, &cp, &kp, &provider)?;
        Ok(Arc::new(CertStore {
            dir,
            provider,
            current: ArcSwap::from(sc.key),
            info: ArcSwap::from_pointee(sc.info),
            last_seen: Mutex::new((c, k)),
        }))
    }

    fn paths(dir: Option<&std::path::Path>) -> (PathBuf, PathBuf) {
        match dir {
            Some(d) => (d.join(certs::CERT_FILE), d.join(certs::KEY_FILE)),
            None => (
                PathBuf::from("Secret tls.crt"),
                PathBuf::from("Secret tls.key"),
            ),
        }
    }

    pub fn dir(&self) -> Option<&std::path::Path> {
        self.dir.as_deref()
    }

    pub fn info(&self) -> CertInfo {
        (**self.info.load()).clone()
    }

    /// Re-reads the directory. `Ok(Some(info))` when a new pair was taken,
    /// `Ok(None)` when nothing changed or a broken pair was already reported.
    pub fn reload(&self) -> Result<Option<CertInfo>, CertError> {
        match &self.dir {
            Some(dir) => {
                let (c, k) = read_dir_pair(dir)?;
                self.set_pem(c, k)
            }
            None => Ok(None),
        }
    }

    /// Takes a new pair unless it is the one in use or the broken one last
    /// reported; a broken pair leaves the current one serving.
    pub fn set_pem(&self, c: Vec<u8>, k: Vec<u8>) -> Result<Option<CertInfo>, CertError> {
        {
            let mut last = self.last_seen.lock().unwrap_or_else(|p| p.into_inner());
            if last.0 == c && last.1 == k {
                return Ok(None);
            }
            *last = (c.clone(), k.clone());
        }
        let (cp, kp) = Self::paths(self.dir.as_deref());
        let sc = certs::load_pem(&c, &k, &cp, &kp, &self.provider)?;
        self.current.store(sc.key);
        self.info.store(Arc::new(sc.info.clone()));
        Ok(Some(sc.info))
    }

    /// rustls configuration: TLS 1.2 and 1.3 only, HTTP/2 and HTTP/1.1 by ALPN.
    pub fn server_config(self: &Arc<Self>) -> Result<ServerConfig, rustls::Error> {
        let mut cfg = ServerConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Resolver(self.clone())));
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(cfg)
    }

    /// The same, asking clients for a certificate that `verifier` checks
    /// (the visibility API's front-proxy authentication).
    pub fn server_config_verifying(
        self: &Arc<Self>,
        verifier: Arc<dyn rustls::server::danger::ClientCertVerifier>,
    ) -> Result<ServerConfig, rustls::Error> {
        let mut cfg = ServerConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
            .with_client_cert_verifier(verifier)
            .with_cert_resolver(Arc::new(Resolver(self.clone())));
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(cfg)
    }

    pub fn provider(&self) -> Arc<CryptoProvider> {
        self.provider.clone()
    }

    /// Polls the directory until `stop` resolves.
    pub async fn watch(
        self: Arc<Self>,
        every: Duration,
        metrics: Arc<Metrics>,
        stop: impl std::future::Future<Output = ()>,
    ) {
        poll_until(every, stop, || async {
            let store = self.clone();
            match tokio::task::spawn_blocking(move || store.reload()).await {
                Ok(result) => record_reload(&metrics, result),
                Err(e) => error!(error = %e, "certificate reload task failed"),
            }
        })
        .await
    }
}

/// Runs `f` every `every` (the first time at once) until `stop` resolves.
pub async fn poll_until<F, Fut>(
    every: Duration,
    stop: impl std::future::Future<Output = ()>,
    mut f: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    tokio::pin!(stop);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = tick.tick() => {}
        }
        f().await;
    }
}

/// Logs and counts the outcome of a reload.
pub fn record_reload(metrics: &Metrics, result: Result<Option<CertInfo>, CertError>) {
    match result {
        Ok(Some(info)) => {
            metrics
                .cert_reloads
                .get_or_create(&ResultLabel { result: "success" })
                .inc();
            metrics.cert_expiry.set(info.not_after);
            info!(serial = %info.serial, not_after = info.not_after, "serving certificate reloaded");
        }
        Ok(None) => {}
        Err(e) => {
            metrics
                .cert_reloads
                .get_or_create(&ResultLabel { result: "failure" })
                .inc();
            error!(error = %e, "new serving certificate rejected; still serving the previous one");
        }
    }
}

#[derive(Debug)]
struct Resolver(Arc<CertStore>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.current.load_full())
    }
}

fn write_file(path: &Path, contents: &str, mode: u32) -> Result<(), CertError> {
    // Write beside the target and rename, so a reader never sees half a file.
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(certs::io_err(&tmp))?;
    f.write_all(contents.as_bytes())
        .map_err(certs::io_err(&tmp))?;
    f.sync_all().map_err(certs::io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(certs::io_err(path))
}

/// Writes `ca.crt`, `tls.crt` and `tls.key` (mode 0600) into `dir`. The CA
/// key is not written: `batchgate certs` is for one-shot setups.
pub fn write(dir: &Path, bundle: &certs::Bundle) -> Result<(), CertError> {
    std::fs::create_dir_all(dir).map_err(certs::io_err(dir))?;
    write_file(&dir.join(certs::CA_FILE), &bundle.ca_pem, 0o644)?;
    write_file(&dir.join(certs::CERT_FILE), &bundle.cert_pem, 0o644)?;
    write_file(&dir.join(certs::KEY_FILE), &bundle.key_pem, 0o600)
}

/// Reads `tls.crt` and `tls.key` from `dir` (following symlinks, as a
/// mounted Secret has them).
pub fn read_dir_pair(dir: &Path) -> Result<(Vec<u8>, Vec<u8>), CertError> {
    let (c, k) = (dir.join(certs::CERT_FILE), dir.join(certs::KEY_FILE));
    Ok((
        std::fs::read(&c).map_err(certs::io_err(&c))?,
        std::fs::read(&k).map_err(certs::io_err(&k))?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &certs::generate(
                &certs::CertOptions::default(),
                time::OffsetDateTime::now_utc(),
            )
            .unwrap(),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(certs::KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(dir.path().join(certs::CA_FILE).exists());
    }
}
