//! The webhook over a real TLS connection to the real binary.

mod support;

use std::time::Duration;

use hyper::StatusCode;
use serde_json::json;
use support::*;

#[tokio::test]
async fn queued_job_gets_a_patch_that_adds_suspend() {
    let server = Server::start(&[]);
    let body = review(
        "uid-queued",
        "CREATE",
        JOB,
        job(
            json!({"kueue.x-k8s.io/queue-name": "user-queue"}),
            json!({"parallelism": 2, "template": {}}),
        ),
        None,
    );
    let (status, resp) = server.client().post("/mutate", body).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(resp["kind"], "AdmissionReview");
    assert_eq!(resp["response"]["uid"], "uid-queued");
    assert_eq!(resp["response"]["allowed"], true);
    assert_eq!(resp["response"]["patchType"], "JSONPatch");
    assert_eq!(
        patch_of(&resp).unwrap(),
        json!([{"op": "add", "path": "/spec/suspend", "value": true}])
    );
}

#[tokio::test]
async fn unqueued_job_gets_no_patch() {
    let server = Server::start(&[]);
    let body = review(
        "uid-plain",
        "CREATE",
        JOB,
        job(json!({"app": "x"}), json!({})),
        None,
    );
    let (status, resp) = server.client().post("/mutate", body).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["allowed"], true);
    assert!(resp["response"].get("patch").is_none());
    assert!(resp["response"].get("patchType").is_none());
}

#[tokio::test]
async fn invalid_update_is_denied_with_the_upstream_message() {
    let server = Server::start(&[]);
    let old = job(
        json!({"kueue.x-k8s.io/queue-name": "q1"}),
        json!({"suspend": false}),
    );
    let new = job(
        json!({"kueue.x-k8s.io/queue-name": "q2"}),
        json!({"suspend": false}),
    );
    let (status, resp) = server
        .client()
        .post(
            "/validate",
            review("uid-upd", "UPDATE", JOB, new, Some(old)),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["uid"], "uid-upd");
    assert_eq!(resp["response"]["allowed"], false);
    assert_eq!(resp["response"]["status"]["code"], 403);
    assert_eq!(
        resp["response"]["status"]["message"],
        r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "q2": field is immutable"#
    );
}

#[tokio::test]
async fn valid_create_is_allowed_by_the_validator() {
    let server = Server::start(&[]);
    let (status, resp) = server
        .client()
        .post(
            "/validate",
            review(
                "v",
                "CREATE",
                JOB,
                job(json!({"kueue.x-k8s.io/queue-name": "q"}), json!({})),
                None,
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["allowed"], true);
}

#[tokio::test]
async fn malformed_body_gets_400_with_a_json_error() {
    let server = Server::start(&[]);
    let (status, resp) = server.client().post("/mutate", "this is not json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        resp["error"]
            .as_str()
            .unwrap()
            .starts_with("malformed AdmissionReview"),
        "{resp}"
    );
}

#[tokio::test]
async fn undecodable_object_with_readable_uid_is_refused_with_a_message() {
    let server = Server::start(&[]);
    let obj = job(
        json!({"kueue.x-k8s.io/queue-name": "q"}),
        json!({"suspend": "yes please"}),
    );
    let (status, resp) = server
        .client()
        .post("/mutate", review("uid-bad", "CREATE", JOB, obj, None))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["uid"], "uid-bad");
    assert_eq!(resp["response"]["allowed"], false);
    assert_eq!(resp["response"]["status"]["code"], 400);
    assert_eq!(
        resp["response"]["status"]["message"],
        "cannot decode batch/v1, Kind=Job: spec.suspend: must be a boolean, found a string"
    );
    // Broken JSON around a readable uid is refused the same way.
    let (status, resp) = server
        .client()
        .post(
            "/validate",
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-broken","object":{"#,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["uid"], "uid-broken");
    assert_eq!(resp["response"]["allowed"], false);
}

#[tokio::test]
async fn unknown_kinds_are_allowed_unchanged_and_counted() {
    let server = Server::start(&[]);
    let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}});
    let (status, resp) = server
        .client()
        .post(
            "/mutate",
            review("uid-dep", "CREATE", ("apps", "v1", "Deployment"), obj, None),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["allowed"], true);
    assert!(resp["response"].get("patch").is_none());
    let (code, metrics) = server.probe_get("/metrics");
    assert_eq!(code, 200);
    assert!(
        metrics.contains(r#"batchgate_admission_reviews_total{webhook="mutate",kind="unknown",operation="CREATE",result="unknown_kind"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn keep_alive_connection_serves_many_reviews() {
    let server = Server::start(&[]);
    let mut conn = server.client().connect().await;
    for i in 0..50 {
        let uid = format!("ka-{i}");
        let (status, resp) = conn
            .post(
                "/mutate",
                review(
                    &uid,
                    "CREATE",
                    JOB,
                    job(json!({"kueue.x-k8s.io/queue-name": "q"}), json!({})),
                    None,
                ),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(resp["response"]["uid"], uid.as_str());
    }
    let (_, metrics) = server.probe_get("/metrics");
    assert!(
        metrics.contains(r#"batchgate_admission_reviews_total{webhook="mutate",kind="batch/job",operation="CREATE",result="patched"} 50"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn http2_is_offered_by_alpn() {
    use http_body_util::{BodyExt, Full};
    let server = Server::start(&[]);
    let cfg = tls_config(&server.ca_pem, &[b"h2"]);
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(cfg)
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let body = review(
        "h2",
        "CREATE",
        JOB,
        job(json!({"kueue.x-k8s.io/queue-name": "q"}), json!({})),
        None,
    );
    let req = hyper::Request::post("https://localhost/mutate")
        .body(Full::new(bytes::Bytes::from(body)))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let v: serde_json::Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(v["response"]["uid"], "h2");
}

#[tokio::test]
async fn old_tls_versions_are_refused() {
    let server = Server::start(&[]);
    // TLS 1.2 is accepted...
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pemfile::certs(&mut server.ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let cfg = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS12])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .expect("TLS 1.2 handshake");
    assert_eq!(
        tls.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    // ...and an SSLv3/TLS1.0-only hello is not (hand-written record: TLS 1.0 ClientHello).
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let hello: &[u8] = &[
        0x16, 0x03, 0x01, 0x00, 0x2d, // record: handshake, TLS 1.0, len 45
        0x01, 0x00, 0x00, 0x29, // ClientHello, len 41
        0x03, 0x01, // client_version TLS 1.0
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0,    // random
        0x00, // session id
        0x00, 0x02, 0x00, 0x2f, // one suite: TLS_RSA_WITH_AES_128_CBC_SHA
        0x01, 0x00, // compression: null
    ];
    tcp.write_all(hello).await.unwrap();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    // Either an alert record (0x15) or a closed connection; never a ServerHello (0x16).
    assert!(
        n == 0 || buf[0] == 0x15,
        "server answered an old hello: {:?}",
        &buf[..n]
    );
    assert_still_serving(&server).await;
}

#[tokio::test]
async fn probes_answer() {
    let server = Server::start(&[]);
    assert_still_serving(&server).await;
    assert_eq!(server.probe_get("/healthz"), (200, "ok".into()));
    assert_eq!(server.probe_get("/readyz"), (200, "ok".into()));
    let (code, metrics) = server.probe_get("/metrics");
    assert_eq!(code, 200);
    assert!(metrics.contains("batchgate_certificate_expiry_timestamp_seconds"));
    assert!(metrics.contains("batchgate_admission_review_duration_seconds"));
}

#[tokio::test]
async fn wrong_path_is_404_with_a_hint() {
    let server = Server::start(&[]);
    let (status, resp) = server.client().post("/mutate-batch-v1-job", "{}").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(resp["error"]
        .as_str()
        .unwrap()
        .contains("POST /mutate, POST /validate and POST /convert"));
}
