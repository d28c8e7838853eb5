//! The hostile-client attacks of tests/hostile.rs, this time with the real
//! kube-apiserver calling batchgate (failurePolicy Fail): `kubectl create
//! job` of a queued Job keeps succeeding, suspended by the webhook, while
//! silent, stalled, trickling, non-reading and big-body clients hold
//! batchgate's port.

mod support;

use std::time::{Duration, Instant};

use batchgate_localcluster::shared;
use serde_json::Value;
use support::{
    attack::{raise_open_files, Attack, Kind},
    e2e::*,
    Server,
};

#[test]
fn queued_jobs_are_created_while_the_webhook_port_is_attacked() {
    raise_open_files(8_000);
    let c = shared();
    let ns = namespace(c, "e2e-hostile");
    let server = Server::start_in_cluster(c.kubeconfig(), None, &[]);
    server.wait_ready(Duration::from_secs(30));
    register(
        c,
        server.addr,
        Some(&server.cert_dir.join("ca.crt")),
        "Fail",
    );
    wait_webhook_active(c, &ns);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let hold = Duration::from_secs(60);
    let until = Instant::now() + hold;
    let pause = Duration::from_secs(45);
    let attacks: Vec<Attack> = rt.block_on(async {
        [
            (Kind::Silent, 4000),
            (Kind::Slowloris, 2000),
            (Kind::PartialPreface, 200),
            (Kind::IdleH2, 200),
            (Kind::NonReading, 20),
            (Kind::NonReadingH2, 100),
            (Kind::BodyMinusOne, 200),
        ]
        .into_iter()
        .map(|(kind, n)| Attack::start(kind, n, server.addr, &server.ca_pem, until, pause))
        .collect()
    });
    // Let the attack open its connections (over 15 s) first.
    std::thread::sleep(Duration::from_secs(20));
    let mut created = 0;
    let mut took = Vec::new();
    while Instant::now() + Duration::from_secs(3) < until {
        let name = format!("under-attack-{created}");
        let t = Instant::now();
        let (ok, out, err) = kubectl(
            c,
            &["create", "-f", "-"],
            Some(&queued_job(&name, &ns, "q")),
        );
        took.push(t.elapsed());
        assert!(
            ok,
            "kubectl create job {name} failed under attack: {out}{err}"
        );
        assert_eq!(
            get_json(c, &["job", &name, "-n", &ns])["spec"]["suspend"],
            Value::Bool(true),
            "{name} was created without the webhook's default"
        );
        created += 1;
        std::thread::sleep(Duration::from_millis(500));
    }
    let stats: Vec<_> = rt.block_on(async {
        let mut v = Vec::new();
        for a in attacks {
            let kind = a.kind;
            v.push((kind, a.join().await));
        }
        v
    });
    took.sort();
    eprintln!(
        "{created} queued Jobs created through the apiserver under attack; kubectl create took median {:?}, max {:?}",
        took[took.len() / 2],
        took[took.len() - 1]
    );
    for (kind, s) in &stats {
        eprintln!("{}", s.summary(*kind));
    }
    assert!(created >= 10, "only {created} Jobs in {hold:?}");
    for (kind, s) in &stats {
        assert!(
            s.opened.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "{}",
            s.summary(*kind)
        );
    }
}
