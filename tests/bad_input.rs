//! Hostile and broken input: one test per class. After each, the server is
//! still up and still answers a valid review.

mod support;

use std::time::Duration;

use hyper::StatusCode;
use serde_json::json;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn short_timeouts() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(
        &path,
        "webhook:\n  handshakeTimeoutSeconds: 1\n  headerReadTimeoutSeconds: 1\n  bodyTimeoutSeconds: 1\n",
    )
    .unwrap();
    let p = path.display().to_string();
    (dir, p)
}

#[tokio::test]
async fn malformed_json() {
    let server = Server::start(&[]);
    for body in [
        "{",
        "{\"apiVersion\":",
        "[1,2",
        "null",
        "\"just a string\"",
        "",
    ] {
        let (status, resp) = server.client().post("/mutate", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "body {body:?} -> {resp}");
        assert!(resp["error"].is_string());
    }
    assert_still_serving(&server).await;
}

#[tokio::test]
async fn nesting_100000_deep() {
    let server = Server::start(&[]);
    // 100,000 levels at `at` inside the Job object.
    let deep = |uid: bool, at: &str| {
        let mut b = String::from(
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"#,
        );
        if uid {
            b.push_str(r#""uid":"deep-uid","kind":{"group":"batch","version":"v1","kind":"Job"},"operation":"CREATE","#);
        }
        b.push_str(r#""object":"#);
        b.push_str(at);
        b.push_str(&"{\"a\":".repeat(100_000));
        b.push('1');
        b.push_str(&"}".repeat(100_000));
        b.push_str(&"}".repeat(at.matches('{').count()));
        b.push_str("}}");
        b
    };
    // Where a rule reads (labels): refused with serde_json's 128-level bound.
    let (status, resp) = server
        .client()
        .post("/mutate", deep(true, r#"{"metadata":{"labels":"#))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["uid"], "deep-uid");
    assert_eq!(resp["response"]["allowed"], false);
    let msg = resp["response"]["status"]["message"].as_str().unwrap();
    assert!(msg.contains("recursion limit exceeded"), "{resp}");
    // Where no rule reads: skipped without recursion, and the review answered.
    let (status, resp) = server
        .client()
        .post("/mutate", deep(true, r#"{"spec":{"template":{"x":"#))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["uid"], "deep-uid");
    assert_eq!(resp["response"]["allowed"], true);
    // No uid: not answerable as a review.
    let (status, _) = server.client().post("/validate", deep(false, "")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A bare array nested 100,000 deep.
    let arr = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let (status, _) = server.client().post("/mutate", arr).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(server_alive(&server));
    assert_still_serving(&server).await;
}

fn server_alive(s: &Server) -> bool {
    std::fs::metadata(format!("/proc/{}", s.pid())).is_ok()
}

#[tokio::test]
async fn non_utf8() {
    let server = Server::start(&[]);
    let mut body = review(
        "utf-uid",
        "CREATE",
        JOB,
        job(json!({"kueue.x-k8s.io/queue-name": "q"}), json!({})),
        None,
    );
    // Corrupt a byte inside the queue name with an invalid UTF-8 sequence.
    let pos = body.windows(3).position(|w| w == b"\"q\"").unwrap();
    body[pos + 1] = 0xff;
    let (status, resp) = server.client().post("/mutate", body).await;
    assert_eq!(status, StatusCode::OK, "{resp}");
    assert_eq!(resp["response"]["uid"], "utf-uid");
    assert_eq!(resp["response"]["allowed"], false);
    let (status, _) = server
        .client()
        .post("/mutate", vec![0xffu8, 0xfe, 0x00, 0x80])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_still_serving(&server).await;
}

#[tokio::test]
async fn huge_bodies_are_refused_without_memory_growth() {
    let server = Server::start(&[]);
    assert_still_serving(&server).await;
    let before = server.rss_kib();

    // Streamed (chunked, no length) 64 MiB bodies are cut off at the limit.
    // Memory may rise once to what one refused body costs (up to the limit,
    // plus what the allocator keeps for reuse), but not with the number or
    // size of hostile bodies.
    for _ in 0..8 {
        stream_oversized(&server).await;
    }
    let after_one = server.rss_kib();
    for _ in 0..32 {
        stream_oversized(&server).await;
    }

    // Declared length over the limit, sent as raw HTTP so the header is honest.
    let mut tls = post_headers_only(&server, "/mutate", 1 << 30).await;
    let answer = status_line(&mut tls).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    let after = server.rss_kib();
    eprintln!("RSS {before} KiB, after 8 refused 64 MiB bodies {after_one} KiB, after 32 more and a 1 GiB declared one {after} KiB");
    // 512 MiB offered: the server holds at most a few limits' worth
    // (7 MiB each), never the 64 MiB bodies.
    assert!(
        after_one < before + 24 * 1024,
        "RSS grew from {before} KiB to {after_one} KiB over 8 bodies"
    );
    // 2 GiB and a declared 1 GiB more: no further growth beyond noise.
    assert!(
        after < after_one + 12 * 1024,
        "RSS grew from {after_one} KiB to {after} KiB over 32 more bodies"
    );
    assert_still_serving(&server).await;
}

/// Streams a 64 MiB chunked body, no length, and checks it is refused with
/// 413 before it is done. Raw HTTP so the client keeps reading while the
/// server refuses: the 413 arrives mid-body, and the writer then gets EPIPE.
async fn stream_oversized(server: &Server) {
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(tls_config(&server.ca_pem, &[b"http/1.1"]))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    let (mut rd, mut wr) = tokio::io::split(tls);
    let writer = tokio::spawn(async move {
        wr.write_all(
            b"POST /mutate HTTP/1.1\r\nhost: localhost\r\ntransfer-encoding: chunked\r\n\r\n",
        )
        .await?;
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..64 {
            wr.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await?;
            wr.write_all(&chunk).await?;
            wr.write_all(b"\r\n").await?;
        }
        wr.write_all(b"0\r\n\r\n").await
    });
    let mut got = Vec::new();
    let mut buf = vec![0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("byte limit") {
        let n = tokio::time::timeout(Duration::from_secs(10), rd.read(&mut buf))
            .await
            .expect("a response before the whole body is sent")
            .unwrap_or(0);
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).to_string();
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("7340032-byte limit"), "{text}");
    writer.abort();
}

#[tokio::test]
async fn missing_fields() {
    let server = Server::start(&[]);
    let cases = [
        (
            json!({"uid": "m1", "operation": "CREATE", "object": {}}),
            "request.kind: Required value",
        ),
        (
            json!({"uid": "m2", "kind": {"group": "batch", "version": "v1", "kind": "Job"}, "object": {}}),
            "request.operation: Required value",
        ),
        (
            json!({"uid": "m3", "kind": {"group": "batch", "version": "v1", "kind": "Job"}, "operation": "CREATE"}),
            "request.object: required",
        ),
        (
            json!({"uid": "m4", "kind": {"group": "batch", "version": "v1", "kind": "Job"}, "operation": "UPDATE", "object": {}}),
            "request.oldObject: required",
        ),
    ];
    for (req, want) in cases {
        let body = serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})).unwrap();
        let (status, resp) = server.client().post("/validate", body).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(resp["response"]["allowed"], false);
        let msg = resp["response"]["status"]["message"].as_str().unwrap();
        assert!(msg.contains(want), "{msg} should contain {want}");
    }
    // No uid at all: not answerable as a review.
    let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"operation": "CREATE"}});
    let (status, _) = server
        .client()
        .post("/mutate", serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_still_serving(&server).await;
}

#[tokio::test]
async fn wrong_kinds() {
    let server = Server::start(&[]);
    // The review itself of the wrong kind/version.
    let body = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "w1"}});
    let (status, resp) = server
        .client()
        .post("/mutate", serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["allowed"], false);
    assert!(resp["response"]["status"]["message"]
        .as_str()
        .unwrap()
        .contains("admissionReviewVersions"));
    // A Job review whose object is a list, a number, or a Job with typed nonsense.
    for (uid, obj, want) in [
        (
            "w2",
            json!([1, 2, 3]),
            "object: must be a JSON object, found a list",
        ),
        (
            "w3",
            json!(42),
            "object: must be a JSON object, found a number",
        ),
        (
            "w4",
            json!({"metadata": "x"}),
            "metadata: must be an object, found a string",
        ),
        (
            "w5",
            json!({"metadata": {"labels": ["a"]}}),
            "metadata.labels: must be a map of string keys to string values, found a list",
        ),
        (
            "w6",
            json!({"spec": 7, "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}}),
            "spec: must be an object, found a number",
        ),
    ] {
        let (status, resp) = server
            .client()
            .post("/mutate", review(uid, "CREATE", JOB, obj, None))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(resp["response"]["uid"], uid);
        assert_eq!(resp["response"]["allowed"], false);
        let msg = resp["response"]["status"]["message"].as_str().unwrap();
        assert!(msg.ends_with(want), "{msg} should end with {want}");
    }
    // An unsupported operation name.
    let mut body: serde_json::Value = serde_json::from_slice(&review(
        "w7",
        "CREATE",
        JOB,
        job(json!({}), json!({})),
        None,
    ))
    .unwrap();
    body["request"]["operation"] = json!("PATCH");
    let (_, resp) = server
        .client()
        .post("/mutate", serde_json::to_vec(&body).unwrap())
        .await;
    assert!(resp["response"]["status"]["message"]
        .as_str()
        .unwrap()
        .contains("Unsupported value: \"PATCH\""));
    assert_still_serving(&server).await;
}

type Tls = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// Three slow clients: a TCP connection that never starts TLS, a slowloris
/// (TLS done, headers never finished), and a body trickling.
async fn slow_clients(server: &Server) -> (tokio::net::TcpStream, Tls, Tls) {
    let idle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = || async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        tokio_rustls::TlsConnector::from(tls_config(&server.ca_pem, &[b"http/1.1"]))
            .connect(
                rustls::pki_types::ServerName::try_from("localhost").unwrap(),
                tcp,
            )
            .await
            .unwrap()
    };
    let mut slow_headers = tls().await;
    slow_headers
        .write_all(b"POST /mutate HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    let mut slow_body = tls().await;
    slow_body
        .write_all(
            b"POST /mutate HTTP/1.1\r\nhost: localhost\r\ncontent-length: 1000\r\n\r\n{\"api",
        )
        .await
        .unwrap();
    (idle, slow_headers, slow_body)
}

/// Others are served while slow clients hold their connections: with
/// timeouts far longer than the test, a request is answered and the three
/// slow connections are still open afterwards (an event order, not a
/// duration: a server that served one connection at a time would answer
/// only after cutting the slow ones off).
#[tokio::test]
async fn others_are_served_while_slow_clients_hold_connections() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        "webhook:\n  handshakeTimeoutSeconds: 600\n  headerReadTimeoutSeconds: 600\n  bodyTimeoutSeconds: 600\n",
    )
    .unwrap();
    let server = Server::start(&["--config", cfg.to_str().unwrap()]);
    let (mut idle, mut slow_headers, mut slow_body) = slow_clients(&server).await;
    tokio::time::timeout(Duration::from_secs(60), assert_still_serving(&server))
        .await
        .expect("a request answered while three slow clients hold connections");
    let mut buf = [0u8; 64];
    // Nothing to read and not closed: each read is still pending.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), idle.read(&mut buf))
            .await
            .is_err(),
        "the pre-TLS connection was closed or answered"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(50), slow_headers.read(&mut buf))
            .await
            .is_err(),
        "the slowloris connection was closed or answered"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(50), slow_body.read(&mut buf))
            .await
            .is_err(),
        "the trickling body was cut off or answered"
    );
}

#[tokio::test]
async fn slow_clients_are_cut_off_and_others_are_served() {
    let (_dir, cfg) = short_timeouts();
    let server = Server::start(&["--config", &cfg]);
    let (mut idle, mut slow_headers, mut slow_body) = slow_clients(&server).await;
    assert_still_serving(&server).await;

    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), idle.read(&mut buf))
        .await
        .expect("handshake timeout closes")
        .unwrap_or(0);
    assert_eq!(n, 0, "an idle pre-TLS connection is closed");
    let n = tokio::time::timeout(Duration::from_secs(5), slow_headers.read(&mut buf))
        .await
        .expect("header read timeout closes the connection")
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(
        n == 0 || text.starts_with("HTTP/1.1 408"),
        "slowloris: {text}"
    );
    let n = tokio::time::timeout(Duration::from_secs(5), slow_body.read(&mut buf))
        .await
        .expect("body timeout answers")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(text.starts_with("HTTP/1.1 408"), "slow body: {text}");
    assert!(text.contains("request body not received within"), "{text}");
    assert_still_serving(&server).await;
}

/// Sends only the request line and headers of a POST over TLS (HTTP/1.1) and
/// returns the stream, so a test can see what the server answers to a body
/// it has been promised but not sent.
async fn post_headers_only(
    server: &Server,
    path: &str,
    content_length: u64,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(tls_config(&server.ca_pem, &[b"http/1.1"]))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    tls.write_all(
        format!("POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {content_length}\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    tls
}

async fn status_line(tls: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>) -> String {
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(30), tls.read(&mut buf))
        .await
        .expect("the server answered within 30 s")
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// `/convert` reads its body through the same bounds as admission reviews:
/// its size limit is what the body budget lets one request hold (three
/// quarters of 64 MiB by default), and bodies held open count against that
/// budget, so conversion requests cannot hold memory the budget does not see.
#[tokio::test]
async fn conversion_bodies_are_bounded_by_the_body_budget() {
    let server = Server::start(&[]);
    // Over the 48 MiB a single request may hold: refused before any byte.
    let mut over = post_headers_only(&server, "/convert", 64 << 20).await;
    let answer = status_line(&mut over).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    // Two 40 MiB bodies promised and not sent: whichever reserves first
    // holds its reservation (and is answered only at the body deadline),
    // the other finds no room and is told to retry, so the first answer to
    // arrive is that refusal.
    let mut a = post_headers_only(&server, "/convert", 40 << 20).await;
    let mut b = post_headers_only(&server, "/convert", 40 << 20).await;
    let answer = tokio::select! {
        x = status_line(&mut a) => x,
        y = status_line(&mut b) => y,
    };
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.contains("maxBodyBytesInFlight"),
        "the refusal names the budget: {answer}"
    );
    assert_still_serving(&server).await;
}
