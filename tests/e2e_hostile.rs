//! The hostile-client attacks of tests/hostile.rs, this time with the real
//! kube-apiserver calling batchgate (failurePolicy Fail): `kubectl create
//! job` of a queued Job keeps succeeding, suspended by the webhook, while
//! silent, stalled, trickling, non-reading and big-body clients hold
//! batchgate's port.
//!
//! Two premises are asserted, not assumed: the attack fills batchgate's
//! connection slots (its own metric), and the apiserver reaches the webhook
//! on a connection opened while the attack holds them. The apiserver keeps
//! its connection to a webhook open, so the webhooks are re-registered
//! once the slots are full with a CA bundle of other bytes (the same CA):
//! the apiserver builds a new client, and with it a new connection, for
//! the calls after that. The connections the apiserver holds to the
//! webhook port are read from /proc (every socket to that port not this
//! test's own).

mod support;

use std::{
    collections::BTreeSet,
    time::{Duration, Instant},
};

use batchgate_localcluster::shared;
use serde_json::Value;
use support::{
    attack::{raise_open_files, Attack, Kind},
    e2e::*,
    Server,
};

/// Inodes of this process's sockets.
fn own_sockets() -> BTreeSet<u64> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            l.to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// Local ports of the established TCP connections to 127.0.0.1:`port` that
/// another process (the apiserver) holds.
fn others_connections_to(port: u16) -> BTreeSet<u16> {
    let own = own_sockets();
    let text = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let remote = format!("0100007F:{port:04X}");
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // sl local rem st ... uid timeout inode
            let (local, rem, st, inode) = (f.get(1)?, f.get(2)?, f.get(3)?, f.get(9)?);
            let inode: u64 = inode.parse().ok()?;
            (*rem == remote && *st == "01" && !own.contains(&inode))
                .then(|| u16::from_str_radix(local.rsplit(':').next()?, 16).ok())
                .flatten()
        })
        .collect()
}

/// `batchgate_<name>` from the probe listener, which shares the server's
/// runtime with the attack: a slow answer is waited for (30 s), not failed.
fn metric(server: &Server, name: &str) -> f64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(server.probe).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text)
        .expect("/metrics answered within 30 s under attack");
    let prefix = format!("batchgate_{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("the server exports no batchgate_{name}"))
}

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
    let before_attack = others_connections_to(server.addr.port());
    assert!(
        !before_attack.is_empty(),
        "no connection from the apiserver to the webhook port is visible in /proc/net/tcp: the new-connection check below could not tell"
    );

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
    let full_before = metric(&server, "connection_slots_full_total");
    assert!(
        full_before > 0.0,
        "the attack never filled the connection slots"
    );
    // Restart the route: same CA, other bytes (a trailing comment line),
    // so the apiserver's client cache misses and it dials anew.
    let ca = std::fs::read_to_string(server.cert_dir.join("ca.crt")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let ca_again = tmp.path().join("ca-again.crt");
    std::fs::write(
        &ca_again,
        format!("{ca}\n# the same CA, re-registered under attack\n"),
    )
    .unwrap();
    register(c, server.addr, Some(&ca_again), "Fail");
    let mut new_connections = BTreeSet::new();
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
        new_connections.extend(
            others_connections_to(server.addr.port())
                .difference(&before_attack)
                .copied(),
        );
        created += 1;
        std::thread::sleep(Duration::from_millis(500));
    }
    let full_after = metric(&server, "connection_slots_full_total");
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
    eprintln!(
        "apiserver connections to the webhook: {before_attack:?} before the attack, {new_connections:?} opened during it; connections accepted with every slot taken: {full_before} when the route was restarted, {full_after} at the end"
    );
    assert!(created >= 10, "only {created} Jobs in {hold:?}");
    assert!(
        !new_connections.is_empty(),
        "the apiserver never opened a connection to the webhook during the attack: the Jobs went over the one opened before it"
    );
    assert!(
        full_after > full_before,
        "the slots were not full any more while the Jobs were created"
    );
    for (kind, s) in &stats {
        assert!(
            s.opened.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "{}",
            s.summary(*kind)
        );
    }
}
