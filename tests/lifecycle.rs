//! Certificate hot reload and graceful shutdown, against the real binary.

mod support;

use std::{
    os::unix::fs::symlink,
    path::Path,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::{body::Frame, StatusCode};
use serde_json::json;
use support::*;

/// Lays out `dir` as kubelet mounts a Secret: files in `..<stamp>/`, a
/// `..data` symlink to it, and top-level symlinks through `..data`.
fn kubelet_mount(dir: &Path, stamp: &str, from: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let data_dir = dir.join(format!("..{stamp}"));
    std::fs::create_dir(&data_dir).unwrap();
    for f in ["ca.crt", "tls.crt", "tls.key"] {
        std::fs::copy(from.join(f), data_dir.join(f)).unwrap();
    }
    symlink(format!("..{stamp}"), dir.join("..data")).unwrap();
    for f in ["ca.crt", "tls.crt", "tls.key"] {
        symlink(format!("..data/{f}"), dir.join(f)).unwrap();
    }
}

/// Waits (at most `within`) until `what` holds, polling every 100 ms.
async fn until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn failed_reloads(server: &Server, n: usize) -> bool {
    server.probe_get("/metrics").1.contains(&format!(
        r#"batchgate_certificate_reloads_total{{result="failure"}} {n}"#
    ))
}

/// The kubelet update: write a new `..<stamp>` dir, point `..data_tmp` at
/// it, rename it over `..data` (atomic), remove the old dir.
fn kubelet_swap(dir: &Path, old_stamp: &str, new_stamp: &str, files: &[(&str, Vec<u8>)]) {
    let data_dir = dir.join(format!("..{new_stamp}"));
    std::fs::create_dir(&data_dir).unwrap();
    for (name, contents) in files {
        std::fs::write(data_dir.join(name), contents).unwrap();
    }
    symlink(format!("..{new_stamp}"), dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    std::fs::remove_dir_all(dir.join(format!("..{old_stamp}"))).unwrap();
}

fn pair(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    ["ca.crt", "tls.crt", "tls.key"]
        .into_iter()
        .map(|f| (f, std::fs::read(dir.join(f)).unwrap()))
        .collect()
}

async fn wait_for_serial(server: &Server, ca_pem: &str, want: &str, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let c = Client::new(server.addr, ca_pem).connect().await;
        if c.serial == want {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "still serving {} after {within:?}, want {want}",
            c.serial
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn kubelet_symlink_swap_is_seen_as_a_new_serial_on_a_new_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, second, mount) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("mount"),
    );
    gen_certs(&first);
    gen_certs(&second);
    kubelet_mount(&mount, "2026_11_21_00_00_00.1", &first);
    let server = Server::start_with_dir(tempfile::tempdir().unwrap(), mount.clone(), &[]);
    let old = server.client().connect().await;
    let old_serial = old.serial.clone();
    let mut kept = old;

    let new_serial = serial_of(
        &rustls_pemfile::certs(&mut &std::fs::read(second.join("tls.crt")).unwrap()[..])
            .next()
            .unwrap()
            .unwrap(),
    );
    assert_ne!(old_serial, new_serial);
    kubelet_swap(
        &mount,
        "2026_11_21_00_00_00.1",
        "2026_11_21_00_10_00.2",
        &pair(&second),
    );

    // The new pair has a new CA: trust old and new, as a caBundle does
    // during a CA rotation.
    let both = server.ca_pem.clone() + &std::fs::read_to_string(second.join("ca.crt")).unwrap();
    let took = wait_for_serial(&server, &both, &new_serial, Duration::from_secs(10)).await;
    eprintln!("rotation seen after {took:?}");

    // The connection opened before the swap still works: nothing in flight fails.
    let (status, resp) = kept
        .post(
            "/mutate",
            review(
                "kept",
                "CREATE",
                JOB,
                job(json!({"kueue.x-k8s.io/queue-name": "q"}), json!({})),
                None,
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["uid"], "kept");
    let (_, metrics) = server.probe_get("/metrics");
    assert!(
        metrics.contains(r#"batchgate_certificate_reloads_total{result="success"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_broken_new_pair_keeps_the_old_one_and_logs_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, other, mount) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("mount"),
    );
    gen_certs(&first);
    gen_certs(&other);
    kubelet_mount(&mount, "1", &first);
    let server = Server::start_with_dir(
        tempfile::tempdir().unwrap(),
        mount.clone(),
        &["--cert-reload-interval", "0.2"],
    );
    let serial = server.client().connect().await.serial;

    // Garbage.
    kubelet_swap(
        &mount,
        "1",
        "2",
        &[
            ("ca.crt", b"junk".to_vec()),
            ("tls.crt", b"junk".to_vec()),
            ("tls.key", b"junk".to_vec()),
        ],
    );
    // Each rejected pair is counted once it has been read: wait for that.
    until("the garbage pair rejected", Duration::from_secs(30), || {
        failed_reloads(&server, 1)
    })
    .await;
    assert_eq!(server.client().connect().await.serial, serial);

    // A key that does not match the certificate.
    let mut mismatched = pair(&first);
    mismatched[2] = ("tls.key", std::fs::read(other.join("tls.key")).unwrap());
    kubelet_swap(&mount, "2", "3", &mismatched);
    until(
        "the mismatched pair rejected",
        Duration::from_secs(30),
        || failed_reloads(&server, 2),
    )
    .await;
    assert_eq!(server.client().connect().await.serial, serial);

    let log = server.stderr.lock().unwrap().clone();
    assert!(log.contains("new serving certificate rejected"), "{log}");
    assert!(log.contains("does not match the certificate"), "{log}");
    let (_, metrics) = server.probe_get("/metrics");
    assert!(
        metrics.contains(r#"batchgate_certificate_reloads_total{result="failure"} 2"#),
        "{metrics}"
    );
    assert_still_serving(&server).await;
}

#[tokio::test]
async fn sigterm_drains_in_flight_reviews_and_exits_zero() {
    let mut server = Server::start(&["--shutdown-delay", "1", "--drain-timeout", "10"]);
    assert_eq!(server.probe_get("/readyz").0, 200);

    // An idle keep-alive connection, and one review whose body is still
    // arriving when SIGTERM comes.
    let idle = server.client().connect().await;
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(tls_config(&server.ca_pem, &[b"http/1.1"]))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    let conn_task = tokio::spawn(conn);
    let body = review(
        "in-flight",
        "CREATE",
        JOB,
        job(json!({"kueue.x-k8s.io/queue-name": "q"}), json!({})),
        None,
    );
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(4);
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|f| (f, rx)) });
    let half = body.len() / 2;
    tx.send(Ok(Frame::data(Bytes::copy_from_slice(&body[..half]))))
        .await
        .unwrap();
    let req = hyper::Request::post("/mutate")
        .header("host", "localhost")
        .header("content-length", body.len().to_string())
        .body(StreamBody::new(stream))
        .unwrap();
    let in_flight = tokio::spawn(async move { sender.send_request(req).await });
    tokio::time::sleep(Duration::from_millis(200)).await;

    let t = Instant::now();
    server.signal(libc::SIGTERM);
    until(
        "/readyz to answer 503 draining",
        Duration::from_secs(30),
        || server.probe_get("/readyz") == (503, "draining".into()),
    )
    .await;
    assert!(server.is_running());

    // Finish the body after the shutdown delay, while draining.
    until("the drain to begin", Duration::from_secs(30), || {
        server
            .stderr
            .lock()
            .unwrap()
            .contains("draining connections")
    })
    .await;
    assert!(server.is_running());
    tx.send(Ok(Frame::data(Bytes::copy_from_slice(&body[half..]))))
        .await
        .unwrap();
    drop(tx);
    let resp = in_flight
        .await
        .unwrap()
        .expect("the in-flight review is answered");
    assert_eq!(resp.status(), StatusCode::OK);
    let v: serde_json::Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(v["response"]["uid"], "in-flight");
    assert!(patch_of(&v).is_some());

    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("exits after draining");
    assert!(status.success(), "exit status {status:?}");
    eprintln!("exited {:?} after SIGTERM", t.elapsed());
    // Keep-alive connections were closed by the server.
    assert!(
        idle.sender.is_closed()
            || tokio::time::timeout(Duration::from_secs(2), conn_task)
                .await
                .is_ok()
    );
    // And nothing listens any more.
    assert!(tokio::net::TcpStream::connect(server.addr).await.is_err());
}

#[tokio::test]
async fn sigterm_with_nothing_in_flight_exits_promptly() {
    let mut server = Server::start(&[]);
    let _idle = server.client().connect().await;
    let t = Instant::now();
    server.signal(libc::SIGTERM);
    let status = server.wait_exit(Duration::from_secs(60)).expect("exits");
    assert!(status.success());
    eprintln!("exited {:?} after SIGTERM", t.elapsed());
    // Promptly: the idle connection was closed, not waited out.
    let log = server.stderr.lock().unwrap().clone();
    assert!(log.contains("draining connections"), "{log}");
    assert!(!log.contains("drain timed out"), "{log}");
}
