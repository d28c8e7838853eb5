//! The HTTPS listener of the visibility API (its own port, as Kueue's
//! visibility server has: 8082), with what an aggregated API server must
//! do before answering (the answers are [`crate::queueing::visibility`]'s):
//!
//! - authentication by the front proxy: kube-apiserver presents a client
//!   certificate signed by the requestheader CA it publishes in
//!   `kube-system/extension-apiserver-authentication` (one of the allowed
//!   names, if any are listed), and names the user in the requestheader
//!   headers (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*`).
//!   Those headers are believed only over such a connection; without one
//!   the request is 401. The ConfigMap is re-read every minute (CA
//!   rotation).
//! - authorization by SubjectAccessReview (the webhook's cached client):
//!   `get` on `clusterqueues/pendingworkloads` or
//!   `localqueues/pendingworkloads` in `visibility.kueue.x-k8s.io`.
//!   Discovery documents are open to every caller.

use std::{collections::BTreeMap, net::SocketAddr, sync::Arc, time::Duration};

use arc_swap::ArcSwap;
use axum::body::Body;
use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use rustls::{pki_types::CertificateDer, server::WebPkiClientVerifier, RootCertStore};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use crate::tls::CertStore;
use crate::{
    admission::entitlement::{Check, Identity, Outcome, ResourceAttributes},
    cluster::{
        positions::{Ask, Positions},
        sar::SarClient,
    },
    queueing::visibility::{self, Error, Route},
};

const AUTH_CONFIG_MAP: (&str, &str) = ("kube-system", "extension-apiserver-authentication");
const RELOAD_EVERY: Duration = Duration::from_secs(60);
const RETRY_UNREAD: Duration = Duration::from_secs(2);
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Its only rightful client is the apiserver's aggregator, which keeps a
/// few connections: past this many, new ones are closed at accept, so a
/// flood cannot take the file descriptors the webhook listener needs.
const MAX_CONNECTIONS: usize = 256;
/// A connection is closed after this long (the aggregator reconnects), so
/// idle keep-alives cannot hold the slots for good.
const MAX_CONNECTION_AGE: Duration = Duration::from_secs(600);
/// How long a request waits for the queueing controller's next snapshot
/// (it takes one every 250 ms when asked) before the last one is used.
const FRESH_WITHIN: Duration = Duration::from_secs(2);

/// The requestheader settings kube-apiserver publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontProxy {
    pub ca_pem: String,
    /// Common names a front-proxy certificate may have; empty: any.
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_prefixes: Vec<String>,
}

impl FrontProxy {
    /// From the ConfigMap's `data` (lists are JSON arrays there).
    pub fn from_data(data: &BTreeMap<String, String>) -> Option<FrontProxy> {
        let ca_pem = data
            .get("requestheader-client-ca-file")
            .filter(|c| !c.trim().is_empty())?
            .clone();
        let list = |k: &str| -> Vec<String> {
            data.get(k)
                .and_then(|v| serde_json::from_str::<Vec<String>>(v).ok())
                .unwrap_or_default()
        };
        Some(FrontProxy {
            ca_pem,
            allowed_names: list("requestheader-allowed-names"),
            username_headers: list("requestheader-username-headers"),
            group_headers: list("requestheader-group-headers"),
            extra_prefixes: list("requestheader-extra-headers-prefix"),
        })
    }

    /// The user the front proxy names, if the peer is the front proxy
    /// (`peer_cn`: the common name of its verified client certificate).
    pub fn identity(&self, peer_cn: Option<&str>, headers: &HeaderMap) -> Option<Identity> {
        let cn = peer_cn?;
        if !self.allowed_names.is_empty() && !self.allowed_names.iter().any(|n| n == cn) {
            return None;
        }
        let values = |name: &str| {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let username = self
            .username_headers
            .iter()
            .find_map(|h| values(h).into_iter().find(|v| !v.is_empty()))?;
        let groups = self.group_headers.iter().flat_map(|h| values(h)).collect();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, v) in headers {
            for p in &self.extra_prefixes {
                let (n, p) = (name.as_str(), p.to_ascii_lowercase());
                if let (Some(key), Ok(v)) = (n.strip_prefix(&p), v.to_str()) {
                    extra.entry(unescape(key)).or_default().push(v.to_string());
                }
            }
        }
        Some(Identity {
            username,
            uid: String::new(),
            groups,
            extra,
        })
    }
}

/// Extra keys are percent-encoded in header names (`%2F` for `/`).
fn unescape(key: &str) -> String {
    let b = key.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(x) = u8::from_str_radix(&key[i + 1..i + 3], 16) {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn common_name(der: &CertificateDer<'_>) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
    let cn = cert
        .subject()
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    Some(cn)
}

struct Shared {
    slots: Arc<tokio::sync::Semaphore>,
    acceptor: ArcSwap<TlsAcceptor>,
    front_proxy: ArcSwap<Option<FrontProxy>>,
    /// Bumped when the front-proxy CA changes: connections made under the
    /// old one (perhaps with no client certificate asked, so every request
    /// on them is refused) are closed, and the aggregator reconnects.
    generation: tokio::sync::watch::Sender<u64>,
    positions: Positions,
    sar: SarClient,
}

fn acceptor(store: &Arc<CertStore>, fp: Option<&FrontProxy>) -> Result<TlsAcceptor, String> {
    let cfg = match fp {
        Some(fp) => {
            let mut roots = RootCertStore::empty();
            for c in rustls_pemfile::certs(&mut fp.ca_pem.as_bytes()) {
                let c = c.map_err(|e| format!("requestheader-client-ca-file: {e}"))?;
                roots
                    .add(c)
                    .map_err(|e| format!("requestheader-client-ca-file: {e}"))?;
            }
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), store.provider())
                    .allow_unauthenticated()
                    .build()
                    .map_err(|e| format!("requestheader-client-ca-file: {e}"))?;
            store.server_config_verifying(verifier)
        }
        None => store.server_config(),
    }
    .map_err(|e| e.to_string())?;
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}

/// The front proxy's CA and header names; `None` (said once at `warn`)
/// while they cannot be read.
async fn read_front_proxy(client: &Client, loud: bool) -> Option<FrontProxy> {
    let api = Api::<ConfigMap>::namespaced(client.clone(), AUTH_CONFIG_MAP.0);
    match api.get(AUTH_CONFIG_MAP.1).await {
        Ok(cm) => FrontProxy::from_data(&cm.data.unwrap_or_default()),
        Err(e) if loud => {
            warn!(error = %e, "visibility API: cannot read kube-system/extension-apiserver-authentication (bind the extension-apiserver-authentication-reader Role to batchgate's ServiceAccount); requests are refused with 401 until it can be read");
            None
        }
        Err(e) => {
            debug!(error = %e, "visibility API: front-proxy CA still unreadable");
            None
        }
    }
}

/// Binds the listener and serves until the process ends.
pub async fn serve(
    listen: SocketAddr,
    store: Arc<CertStore>,
    client: Client,
    sar: SarClient,
    positions: Positions,
) -> Result<SocketAddr, super::ServeError> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|source| super::ServeError::Bind {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr()?;
    let fp = read_front_proxy(&client, true).await;
    let first = acceptor(&store, fp.as_ref())
        .map_err(|e| super::ServeError::Tls(rustls::Error::General(e)))?;
    info!(%addr, front_proxy = fp.is_some(), "visibility API listening");
    let shared = Arc::new(Shared {
        slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS)),
        acceptor: ArcSwap::from_pointee(first),
        front_proxy: ArcSwap::from_pointee(fp),
        generation: tokio::sync::watch::Sender::new(0),
        positions,
        sar,
    });
    tokio::spawn({
        let shared = shared.clone();
        async move {
            loop {
                // Until it is read (the RoleBinding granting it is often
                // applied after the Deployment), every request is refused:
                // look again soon.
                let known = shared.front_proxy.load().is_some();
                tokio::time::sleep(if known { RELOAD_EVERY } else { RETRY_UNREAD }).await;
                let fp = read_front_proxy(&client, known).await;
                if fp.is_none() || **shared.front_proxy.load() == fp {
                    continue;
                }
                match acceptor(&store, fp.as_ref()) {
                    Ok(a) => {
                        info!("visibility API: front-proxy CA reloaded");
                        shared.acceptor.store(Arc::new(a));
                        shared.front_proxy.store(Arc::new(fp));
                        shared.generation.send_modify(|g| *g += 1);
                    }
                    Err(e) => warn!(error = %e, "visibility API: new front-proxy CA rejected"),
                }
            }
        }
    });
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(x) => x,
                Err(e) => {
                    warn!(error = %e, "visibility API: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Ok(slot) = shared.slots.clone().try_acquire_owned() else {
                debug!(%peer, "visibility API: connection cap reached; closed");
                continue;
            };
            let shared = shared.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let _ =
                    tokio::time::timeout(MAX_CONNECTION_AGE, connection(tcp, peer, shared)).await;
            });
        }
    });
    Ok(addr)
}

async fn connection(tcp: tokio::net::TcpStream, peer: SocketAddr, sh: Arc<Shared>) {
    let mut generation = sh.generation.subscribe();
    let acceptor = sh.acceptor.load_full();
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            debug!(%peer, error = %e, "visibility API: TLS handshake failed");
            return;
        }
        Err(_) => return,
    };
    // Only a verified chain is returned by rustls.
    let peer_cn: Option<Arc<str>> = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(common_name)
        .map(Into::into);
    let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        let sh = sh.clone();
        let cn = peer_cn.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(&sh, cn.as_deref(), req).await) }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // A client that never finishes its headers does not hold the
    // connection for good.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HANDSHAKE_TIMEOUT);
    let conn = builder.serve_connection(TokioIo::new(tls), svc);
    tokio::pin!(conn);
    let ended = tokio::select! {
        ended = conn.as_mut() => ended,
        _ = generation.changed() => {
            debug!(%peer, "visibility API: front-proxy CA changed; closing the connection");
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = ended {
        debug!(%peer, error = %e, "visibility API: connection ended with an error");
    }
}

fn respond(status: u16, body: serde_json::Value) -> Response<Body> {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

fn refuse(e: Error) -> Response<Body> {
    respond(e.code(), e.status())
}

async fn handle(
    sh: &Shared,
    peer_cn: Option<&str>,
    req: Request<hyper::body::Incoming>,
) -> Response<Body> {
    let Some(route) = Route::parse(req.uri().path()) else {
        return respond(
            404,
            serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Failure", "message": "the server could not find the requested resource",
                "reason": "NotFound", "details": {}, "code": 404}),
        );
    };
    let wanted = if matches!(route, Route::Simulation { .. }) {
        Method::POST
    } else {
        Method::GET
    };
    if req.method() != wanted {
        let mut e = Error::BadRequest(format!(
            "{} is not supported: this path of the visibility API serves {wanted} only",
            req.method()
        ))
        .status();
        e["reason"] = "MethodNotAllowed".into();
        e["code"] = 405.into();
        return respond(405, e);
    }
    let query = req.uri().query().map(str::to_string);
    let mut caller = None;
    if let Some((resource, subresource, namespace, name)) = route.attributes() {
        let fp = sh.front_proxy.load();
        let Some(user) = fp
            .as_ref()
            .as_ref()
            .and_then(|fp| fp.identity(peer_cn, req.headers()))
        else {
            return refuse(Error::Unauthorized("Unauthorized".into()));
        };
        let version = route.version().unwrap_or_default();
        let username = user.username.clone();
        let user = Arc::new(user);
        caller = Some(user.clone());
        let check = Check {
            user: user.clone(),
            attributes: ResourceAttributes {
                verb: route.verb().into(),
                group: visibility::GROUP.into(),
                version: version.into(),
                resource: resource.into(),
                subresource: subresource.into(),
                namespace: namespace.into(),
                name: name.into(),
            },
        };
        match sh.sar.check(check).await {
            Ok(Outcome::Allowed) => {}
            Ok(Outcome::Denied { reason }) => {
                return refuse(visibility::forbidden(&username, &route, &reason))
            }
            Err(e) => {
                return refuse(Error::Unavailable(format!(
                    "authorizing {username}: {e}; retry"
                )))
            }
        }
    }
    let ask = match &route {
        Route::Explanation {
            namespace, name, ..
        } => Some(Ask::Explain {
            namespace: namespace.clone(),
            name: name.clone(),
        }),
        Route::Simulation { namespace, .. } => match simulated(req, namespace).await {
            Ok(wl) => Some(Ask::Simulate(Box::new(wl))),
            Err(e) => return refuse(e),
        },
        _ => None,
    };
    let (snapshot, explained) = match (ask, &route) {
        (Some(ask), _) => match sh.positions.ask(ask, FRESH_WITHIN).await {
            Ok(Ok(mut x)) => {
                let namespace = route.attributes().map(|a| a.2).unwrap_or_default();
                if let (Some(e), Some(user)) = (x.as_mut(), caller) {
                    others_hidden(sh, user, namespace, e).await;
                }
                (sh.positions.current(), x)
            }
            Ok(Err(message)) => return refuse(Error::BadRequest(message)),
            // No queues here, or no answer in time: unavailable.
            Err(()) => (None, None),
        },
        (None, _) if route.attributes().is_some() => (sh.positions.fresh(FRESH_WITHIN).await, None),
        (None, _) => (None, None),
    };
    match visibility::answer(
        &route,
        query.as_deref(),
        snapshot.as_deref(),
        explained.as_ref(),
    ) {
        Ok(v) => respond(200, v),
        Err(e) => refuse(e),
    }
}

/// The largest Workload a simulation reads (the apiserver's own limit on
/// a request body).
const SIMULATION_BODY_LIMIT: usize = 3 * 1024 * 1024;

/// The Workload of a simulation request, in `namespace`.
async fn simulated(
    req: Request<hyper::body::Incoming>,
    namespace: &str,
) -> Result<crate::api::kueue::v1beta2::Workload, Error> {
    use http_body_util::BodyExt;
    let body = http_body_util::Limited::new(req.into_body(), SIMULATION_BODY_LIMIT)
        .collect()
        .await
        .map_err(|e| Error::BadRequest(format!("reading the Workload: {e}")))?
        .to_bytes();
    let mut wl: crate::api::kueue::v1beta2::Workload =
        serde_json::from_slice(&body).map_err(|e| {
            Error::BadRequest(format!(
                "the body is not a kueue.x-k8s.io/v1beta2 Workload: {e}"
            ))
        })?;
    wl.metadata.namespace = Some(namespace.to_string());
    Ok(wl)
}

/// Names workloads of other namespaces only to a caller who may read the
/// ClusterQueue's pending workloads (`clusterqueues/pendingworkloads`).
async fn others_hidden(
    sh: &Shared,
    user: Arc<Identity>,
    namespace: &str,
    x: &mut crate::queueing::Explanation,
) {
    let Some(cq) = x
        .cluster_queue
        .clone()
        .filter(|_| x.names_others(namespace))
    else {
        return;
    };
    let check = Check {
        user,
        attributes: ResourceAttributes {
            verb: "get".into(),
            group: visibility::GROUP.into(),
            version: visibility::VERSIONS[0].into(),
            resource: "clusterqueues".into(),
            subresource: "pendingworkloads".into(),
            namespace: String::new(),
            name: cq,
        },
    };
    if !matches!(sh.sar.check(check).await, Ok(Outcome::Allowed)) {
        x.redact(namespace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp() -> FrontProxy {
        let data: BTreeMap<String, String> = [
            (
                "requestheader-client-ca-file",
                "-----BEGIN CERTIFICATE-----\n",
            ),
            ("requestheader-allowed-names", r#"["front-proxy-client"]"#),
            ("requestheader-username-headers", r#"["X-Remote-User"]"#),
            ("requestheader-group-headers", r#"["X-Remote-Group"]"#),
            (
                "requestheader-extra-headers-prefix",
                r#"["X-Remote-Extra-"]"#,
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        FrontProxy::from_data(&data).unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn the_front_proxy_names_the_user_only_over_its_certificate() {
        let fp = fp();
        let h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "team-a"),
            ("X-Remote-Group", "system:authenticated"),
            ("X-Remote-Extra-Scopes%2Fone", "x"),
        ]);
        let u = fp.identity(Some("front-proxy-client"), &h).unwrap();
        assert_eq!(u.username, "alice");
        assert_eq!(u.groups, ["team-a", "system:authenticated"]);
        assert_eq!(u.extra["scopes/one"], ["x"]);
        // No verified certificate, or one with another name: not believed.
        assert_eq!(fp.identity(None, &h), None);
        assert_eq!(fp.identity(Some("mallory"), &h), None);
        // No user header: nobody.
        assert_eq!(fp.identity(Some("front-proxy-client"), &headers(&[])), None);
    }

    #[test]
    fn without_a_requestheader_ca_there_is_no_front_proxy() {
        assert_eq!(FrontProxy::from_data(&BTreeMap::new()), None);
        let mut any = fp();
        any.allowed_names.clear();
        assert!(any
            .identity(Some("whoever"), &headers(&[("x-remote-user", "bob")]))
            .is_some());
    }
}
