//! What happens to a queued Job when batchgate is down, under each
//! failurePolicy. This binary has its own local cluster: it stops batchgate.

mod support;

use std::time::{Duration, Instant};

use batchgate_localcluster::shared;
use serde_json::Value;
use support::{e2e::*, Server};

#[test]
fn batchgate_down_fails_closed_with_fail_and_open_with_ignore() {
    let c = shared();
    let ns = namespace(c, "e2e-down");
    let mut server = Server::start_in_cluster(c.kubeconfig(), None, &[]);
    server.wait_ready(Duration::from_secs(30));
    register(
        c,
        server.addr,
        Some(&server.cert_dir.join("ca.crt")),
        "Fail",
    );
    wait_webhook_active(c, &ns);
    let (ok, out, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&queued_job("while-up", &ns, "q")),
    );
    assert!(ok, "{out}{err}");
    assert_eq!(
        get_json(c, &["job", "while-up", "-n", &ns])["spec"]["suspend"],
        Value::Bool(true)
    );

    server.signal(libc::SIGTERM);
    assert!(server
        .wait_exit(Duration::from_secs(10))
        .expect("batchgate stops")
        .success());

    // failurePolicy Fail: refused with a clear error, and nothing is stored.
    let (ok, _, err) = kubectl(
        c,
        &["create", "-f", "-"],
        Some(&queued_job("while-down", &ns, "q")),
    );
    assert!(!ok, "a queued Job must not be created un-defaulted");
    assert!(
        err.contains(r#"failed calling webhook "mjob.kb.io""#),
        "kubectl said: {err}"
    );
    assert!(err.contains("connection refused"), "kubectl said: {err}");
    let (found, _, _) = kubectl(c, &["get", "job", "while-down", "-n", &ns], None);
    assert!(!found, "nothing is stored");

    // failurePolicy Ignore: stored (un-defaulted: nobody suspended it).
    register(
        c,
        server.addr,
        Some(&server.cert_dir.join("ca.crt")),
        "Ignore",
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (ok, out, err) = kubectl(
            c,
            &["create", "-f", "-"],
            Some(&queued_job("ignored", &ns, "q")),
        );
        if ok {
            break;
        }
        // The apiserver picks the new policy up within moments.
        assert!(
            Instant::now() < deadline,
            "still refused under Ignore: {out}{err}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let job = get_json(c, &["job", "ignored", "-n", &ns]);
    assert_eq!(job["spec"]["suspend"], Value::Bool(false));
}
