//! Crash safety of the reconciler end to end ("write state before acting on
//! it"): batchgate crashes on purpose (`BATCHGATE_FAULT`, see
//! docs/development.md) at the two moments that matter, in the middle of
//! a burst of 200 queued Jobs and again while they drain, and is restarted
//! each time from the same certificates (and, as its Deployment would, after
//! an exit on a lost Lease, which a loaded machine can cause):
//!
//! 1. after the engine admitted a Workload, before the admission is
//!    written: at that instant (nothing runs) the Workload has no
//!    admission, and the ClusterQueue's Workloads hold at most its quota;
//! 2. after an admission landed on a Workload, before its Job is started:
//!    at that instant the Workload holds quota and its Job is suspended;
//!    the next incarnation starts that Job on that Workload.
//!
//! Throughout, a sampler reads the API on its own (a failed read fails the
//! test) — the cpu held by Workloads whose quota is reserved, and the Jobs
//! actually running — and neither may ever exceed the ClusterQueue's
//! 10 cpu; in the end every Job has succeeded, each has exactly one
//! Workload, every Workload is Finished and the ClusterQueue holds nothing.

mod support;

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    thread,
    time::{Duration, Instant},
};

use batchgate_localcluster::{shared, LocalCluster};
use kube::{
    api::{DynamicObject, ListParams},
    config::{KubeConfigOptions, Kubeconfig},
    core::{ApiResource, GroupVersionKind},
    Api, Client, Config,
};
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace, register, wait_webhook_active},
    gen_certs,
    queueing::*,
    Server,
};

const JOBS: usize = 200;
const BATCH: usize = 20;
const QUOTA_CPU: i64 = 10;
const CQ: &str = "crash-cq";
/// The lease of most tests here: 6 s, not less, as a renewal must land
/// within ⅔ of it on a loaded machine, or the holder exits before its
/// fault.
const LEASE_SECONDS: u32 = 6;
/// The burst's, longer: under `make test`'s load (16 on 2 cores) its
/// webhook once went away mid-burst for good, as a holder that misses a
/// 4 s renew deadline exits, webhook and all.
const BURST_LEASE_SECONDS: u32 = 10;
/// How long the burst waits for batchgate to accept a create again.
const REFUSED_FOR: Duration = Duration::from_secs(180);

/// The tests of this binary take batchgate and the control plane down in
/// turn: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The shared cluster with [`CQ`], a namespace `name` with a LocalQueue
/// `lq` for it, and one certificate directory and config for every
/// incarnation of batchgate, holding its lease for `lease_seconds`:
/// (cluster, namespace, dir, certs, config).
fn prepare(
    name: &str,
    lease_seconds: u32,
) -> (
    &'static LocalCluster,
    String,
    tempfile::TempDir,
    PathBuf,
    PathBuf,
) {
    let c = shared();
    install_crds(c);
    let ns = namespace(c, name);
    queue(c, &ns);
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    gen_certs(&certs);
    let cfg = dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        // A crashed holder releases nothing: the next incarnation waits out
        // the lease.
        format!("namespace: default\nreconciler:\n  leaseDurationSeconds: {lease_seconds}\n"),
    )
    .unwrap();
    (c, ns, dir, certs, cfg)
}

/// [`CQ`] (idempotent) and a LocalQueue `lq` for it in `ns`.
fn queue(c: &LocalCluster, ns: &str) {
    apply(
        c,
        &flavor("crash-on-demand", json!({"instance-type": "on-demand"})),
    );
    apply(
        c,
        &cluster_queue(
            CQ,
            &[("crash-on-demand", &QUOTA_CPU.to_string(), None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(ns, "lq", CQ));
}

#[test]
fn kill_9_during_a_burst_never_overcommits_and_every_job_finishes() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let t0 = Instant::now();
    let (c, ns, _dir, certs, cfg) = prepare("e2e-crash", BURST_LEASE_SECONDS);
    let logs = Logs::default();
    let mut server = start_with_fault(
        c,
        &certs,
        &cfg,
        &logs,
        Some("exit-after-admission-decision:12"),
    );
    wait_webhook_active(c, &ns);
    let setup = t0.elapsed();

    let (stop, stats, sampler) = spawn_sampler(c, &ns);
    wait_for(Duration::from_secs(30), "the first sample", || {
        (stats.lock().unwrap().samples > 0).then_some(())
    });

    let created = Arc::new(AtomicUsize::new(0));
    let failed_creates = Arc::new(AtomicUsize::new(0));
    let burst_start = Instant::now();
    let burst = {
        let (created, failed, ns) = (created.clone(), failed_creates.clone(), ns.clone());
        let names: Vec<String> = (0..JOBS).map(|i| format!("crash-{i:03}")).collect();
        thread::spawn(move || create_all(c, &ns, &names, &created, &failed))
    };

    // 1. The 12th admission decision (10 fit at once; the 12th waits for
    // Jobs to finish, mid-burst) is never written.
    let mut lease_losses = 0;
    let armed = |fault: &str| start_with_fault(c, &certs, &cfg, &logs, Some(fault));
    let decided = crash(
        &mut server,
        "exit-after-admission-decision:12",
        &mut lease_losses,
        armed,
    );
    let w = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns, &decided.1]).unwrap();
    assert!(
        w["status"]["admission"].is_null() && !is_true(&w, "QuotaReserved"),
        "the admission decided before the crash was written: {w}"
    );
    let at_crash = frozen_sample(c, &ns);
    let restarted = Instant::now();
    server = armed("exit-after-admission-write:30");
    let first_restart = restarted.elapsed();

    // 2. The 30th admission of the next incarnation lands; its Job is not
    // started.
    let written = crash(
        &mut server,
        "exit-after-admission-write:30",
        &mut lease_losses,
        armed,
    );
    let w = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns, &written.1]).unwrap();
    assert!(
        !w["status"]["admission"].is_null() && is_true(&w, "QuotaReserved"),
        "the admission written before the crash is not on the Workload: {w}"
    );
    let owner = w["metadata"]["ownerReferences"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let j = get(c, &["job", "-n", &ns, &owner]).unwrap();
    assert_eq!(
        j["spec"]["suspend"], true,
        "the Job of the Workload admitted just before the crash was started: {j}"
    );
    let at_second_crash = frozen_sample(c, &ns);
    let restarted = Instant::now();
    server = start(c, &certs, &cfg, &logs);
    let second_restart = restarted.elapsed();
    let kills = [
        ("admission decided, not written", decided.0, at_crash),
        (
            "admission written, Job not started",
            written.0,
            at_second_crash,
        ),
    ];

    burst.join().expect("burst thread");
    let burst_time = burst_start.elapsed();
    assert_eq!(created.load(Ordering::SeqCst), JOBS);

    let mut keep_alive = |server: &mut Server| {
        restart_if_lease_lost(server, &mut lease_losses, || start(c, &certs, &cfg, &logs))
    };
    drain(c, &ns, &stats, JOBS, Duration::from_secs(600), || {
        keep_alive(&mut server)
    });
    let drained = burst_start.elapsed();
    let (pending, reserving, admitted, used) =
        wait_for(Duration::from_secs(30), "quota released", || {
            keep_alive(&mut server);
            cq_counts(c, CQ).filter(|s| s.1 == 0 && s.0 == 0)
        });
    stop.store(true, Ordering::SeqCst);
    sampler.join().expect("sampler thread");
    let st = stats.lock().unwrap().clone();

    println!(
        "crash e2e: {} samples over {:.1}s ({} failed reads); max reserved {} cpu in {} Workloads, \
         max running Jobs {}, max ClusterQueue usage {} cpu (quota {QUOTA_CPU}); \
         kills {kills:?}; restarts took {first_restart:.1?} and {second_restart:.1?}; \
         {lease_losses} more after a lost Lease; {} creates refused while down and retried; burst {burst_time:.1?}, all finished after {drained:.1?}, \
         setup {setup:.1?}, total {:.1?}",
        st.samples,
        st.sampled_for.as_secs_f64(),
        st.errors,
        st.max_reserved_milli as f64 / 1000.0,
        st.max_reserved_workloads,
        st.max_running,
        st.max_cq_milli as f64 / 1000.0,
        failed_creates.load(Ordering::SeqCst),
        t0.elapsed(),
    );
    assert!(
        st.samples >= 50,
        "too few samples to mean anything: {}",
        st.samples
    );
    st.assert_within_quota_one_workload_per_job();
    assert!(
        st.max_cq_milli <= QUOTA_CPU * 1000,
        "ClusterQueue status said {} mcpu",
        st.max_cq_milli
    );
    assert_eq!(st.errors, 0, "sampling failed {} times", st.errors);
    for (phase, _, sample) in &kills {
        assert!(
            sample.reserved_milli <= QUOTA_CPU * 1000 && sample.running as i64 <= QUOTA_CPU,
            "at the crash ({phase}): {sample:?}"
        );
    }

    // The end state, read once more.
    let all_jobs = get(c, &["jobs", "-n", &ns]).unwrap();
    let all_jobs = all_jobs["items"].as_array().unwrap();
    assert_eq!(all_jobs.len(), JOBS);
    assert!(all_jobs.iter().all(succeeded), "not every Job succeeded");
    let wls = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns]).unwrap();
    let wls = wls["items"].as_array().unwrap();
    assert_eq!(wls.len(), JOBS, "one Workload per Job");
    let owners: HashSet<&str> = wls
        .iter()
        .filter_map(|w| w["metadata"]["ownerReferences"][0]["uid"].as_str())
        .collect();
    let job_uids: HashSet<&str> = all_jobs
        .iter()
        .filter_map(|j| j["metadata"]["uid"].as_str())
        .collect();
    assert_eq!(owners, job_uids, "every Job owns exactly one Workload");
    for w in wls {
        assert!(is_true(w, "Finished"), "{w}");
    }
    // Both Workloads caught in a window were admitted (again, or started)
    // by the next incarnation: Finished, their Jobs succeeded.
    for name in [&decided.1, &written.1] {
        let w = wls
            .iter()
            .find(|w| w["metadata"]["name"] == name.as_str())
            .unwrap_or_else(|| panic!("Workload {name} gone"));
        let owner = w["metadata"]["ownerReferences"][0]["uid"].as_str();
        let job = all_jobs
            .iter()
            .find(|j| j["metadata"]["uid"].as_str() == owner)
            .unwrap_or_else(|| panic!("no Job owns {name}"));
        assert!(succeeded(job), "{job}");
    }
    assert_eq!((pending, reserving, admitted), (0, 0, 0));
    assert!(
        used.is_empty() || quantity_milli(&used) == Some(0),
        "cpu still in use: {used}"
    );
    drop(server);
}

/// Jobs of the pause test, and how long each component is paused: longer
/// than batchgate's lease ([`LEASE_SECONDS`]), so it cannot renew and exits.
const PAUSE_JOBS: usize = 40;
const PAUSE: Duration = Duration::from_secs(8);

/// kube-apiserver, then etcd, paused (SIGSTOP) mid-stream for longer than
/// the reconciler's lease and resumed: batchgate cannot renew its Lease,
/// stops writing and exits, and is started again as its Deployment would
/// restart it; nothing is lost (every Job created succeeds, one Workload
/// each, every Workload Finished), the quota is never exceeded, and the
/// ClusterQueue holds nothing at the end. Reads wait (or fail) while a
/// component is paused; the sampler counts failures and goes on.
#[test]
fn an_apiserver_or_etcd_pause_loses_nothing_and_never_overcommits() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (c, ns, _dir, certs, cfg) = prepare("e2e-pause", LEASE_SECONDS);
    let logs = Logs::default();
    let mut server = start(c, &certs, &cfg, &logs);
    wait_webhook_active(c, &ns);
    let mut restarts = 0;
    let mut keep_alive = |server: &mut Server| {
        restart_if_lease_lost(server, &mut restarts, || start(c, &certs, &cfg, &logs))
    };

    let (stop, stats, sampler) = spawn_sampler(c, &ns);
    let created = Arc::new(AtomicUsize::new(0));
    let failed_creates = Arc::new(AtomicUsize::new(0));
    let creator = {
        let (created, failed, ns) = (created.clone(), failed_creates.clone(), ns.clone());
        let names: Vec<String> = (0..PAUSE_JOBS).map(|i| format!("pause-{i:02}")).collect();
        thread::spawn(move || create_all(c, &ns, &names, &created, &failed))
    };

    let mut paused = Vec::new();
    for component in ["kube-apiserver", "etcd"] {
        // Mid-stream: Workloads hold quota and more Jobs are coming.
        let before = stats.lock().unwrap().last.finished;
        wait_for(
            Duration::from_secs(120),
            "Workloads holding quota before the pause",
            || {
                keep_alive(&mut server);
                let s = stats.lock().unwrap().last.clone();
                (s.reserved_workloads > 0 && s.finished > before).then_some(())
            },
        );
        let pid = c
            .pids()
            .into_iter()
            .find(|(name, _)| *name == component)
            .unwrap_or_else(|| panic!("no {component} in {:?}", c.pids()))
            .1 as i32;
        let samples_before = stats.lock().unwrap().samples;
        // SAFETY: kill(2) on a component this test's cluster started.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        thread::sleep(PAUSE);
        assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
        // Reads work again.
        wait_for(
            Duration::from_secs(120),
            "the sampler to read again",
            || (stats.lock().unwrap().samples > samples_before + 2).then_some(()),
        );
        paused.push((component, stats.lock().unwrap().last.clone()));
    }

    drain(c, &ns, &stats, PAUSE_JOBS, Duration::from_secs(600), || {
        keep_alive(&mut server)
    });
    creator.join().expect("creator thread");
    assert_eq!(created.load(Ordering::SeqCst), PAUSE_JOBS);
    let (pending, reserving, _, _) = wait_for(Duration::from_secs(60), "quota released", || {
        keep_alive(&mut server);
        cq_counts(c, CQ).filter(|s| s.1 == 0 && s.0 == 0)
    });
    stop.store(true, Ordering::SeqCst);
    sampler.join().expect("sampler thread");
    let st = stats.lock().unwrap().clone();
    println!(
        "pause e2e: {} samples ({} failed reads); max reserved {} cpu, \
         max running Jobs {} (quota {QUOTA_CPU}); batchgate restarted {restarts} time(s); \
         {} creates refused and retried; after each pause: {paused:?}",
        st.samples,
        st.errors,
        st.max_reserved_milli as f64 / 1000.0,
        st.max_running,
        failed_creates.load(Ordering::SeqCst),
    );
    st.assert_within_quota_one_workload_per_job();
    let jobs = get(c, &["jobs", "-n", &ns]).unwrap();
    let jobs = jobs["items"].as_array().unwrap();
    assert_eq!(jobs.len(), PAUSE_JOBS);
    assert!(jobs.iter().all(succeeded), "not every Job succeeded");
    let wls = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns]).unwrap();
    let wls = wls["items"].as_array().unwrap();
    assert_eq!(wls.len(), PAUSE_JOBS, "one Workload per Job");
    assert!(wls.iter().all(|w| is_true(w, "Finished")));
    assert_eq!((pending, reserving), (0, 0));
    drop(server);
}

/// The Deployment's part: a batchgate that exited on a lost Lease (its
/// apiserver paused, or a machine too loaded to renew within the renew
/// deadline: batchgate exits then, by design) is started again by
/// `again`, and counted; any other exit fails the test.
fn restart_if_lease_lost(
    server: &mut Server,
    restarts: &mut usize,
    again: impl FnOnce() -> Server,
) {
    if server.is_running() {
        return;
    }
    let status = server
        .wait_exit(Duration::from_secs(1))
        .map_or("unknown".into(), |s| s.to_string());
    // Its log is among those [`Logs`] prints when the test fails.
    let lost = server
        .stderr
        .lock()
        .unwrap()
        .lines()
        .any(|l| l.contains("reconciler lease") && l.contains("exiting"));
    assert!(lost, "batchgate ended ({status}), not on a lost Lease");
    eprintln!("batchgate exited on a lost Lease ({status}); started again");
    *restarts += 1;
    *server = again();
}

/// A leader whose async runtime is starved (every worker spinning for 12 s,
/// three times its 4 s renew deadline: `BATCHGATE_STARVE`) keeps its Lease:
/// the renewal has its own thread and connection. It then admits and runs
/// a Job as before.
#[test]
fn a_leader_whose_runtime_is_starved_keeps_its_lease_and_goes_on() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (c, ns, _dir, certs, cfg) = prepare("e2e-starve", LEASE_SECONDS);
    let logs = Logs::default();
    // Inherited by the child spawned next only (the tests of this binary
    // run one at a time).
    std::env::set_var("BATCHGATE_STARVE", "12");
    let mut server = start(c, &certs, &cfg, &logs);
    std::env::remove_var("BATCHGATE_STARVE");
    let stderr = server.stderr.clone();
    let log = || stderr.lock().unwrap().clone();
    // Premise: it took the Lease and its runtime was starved, then freed.
    wait_for(Duration::from_secs(60), "the starvation to begin", || {
        log().contains("BATCHGATE_STARVE: all").then_some(())
    });
    let holder = || {
        get(c, &["lease", "batchgate-reconciler", "-n", "default"])
            .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from))
            .unwrap_or_default()
    };
    let during = holder();
    wait_for(Duration::from_secs(60), "the starvation to end", || {
        log()
            .contains("BATCHGATE_STARVE: the runtime workers are free again")
            .then_some(())
    });
    thread::sleep(Duration::from_secs(3));
    assert!(
        server.is_running(),
        "batchgate exited under starvation:\n{}",
        log()
    );
    assert!(
        !log().contains("not renewed in time"),
        "the renewal was starved:\n{}",
        log()
    );
    assert_eq!(holder(), during, "the Lease changed hands");
    create(c, &job("after-starve", &ns, "lq", "1", "1s", json!({})));
    wait_for(Duration::from_secs(60), "the Job to succeed", || {
        get(c, &["job", "after-starve", "-n", &ns])
            .filter(|j| j["status"]["succeeded"] == 1)
            .map(|_| ())
    });
}

/// Topology-aware scheduling across a kill -9 (issue 38): a Job that
/// fills one rack (4 pods of 2 cpu, `podset-required-topology: rack`, on
/// four racks of two 4-cpu KWOK nodes) is admitted and its pods bound; then
/// batchgate is killed and restarted. The next incarnation rebuilds the
/// racks' usage from the admitted Workload's `topologyAssignment`: it leaves
/// that Workload's assignment as it was, places three more such Jobs on the
/// three other racks, keeps a fifth pending, and kube-scheduler binds every
/// released pod (no node holds more than its 4 cpu).
#[test]
fn a_restart_keeps_every_topology_assignment_and_overcommits_no_node() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (c, ns, _dir, certs, cfg) = prepare("e2e-crash-tas", LEASE_SECONDS);
    // batchgate first: a webhook registered by an earlier test of this
    // binary points at a batchgate that is gone.
    let logs = Logs::default();
    let mut server = start(c, &certs, &cfg, &logs);
    let racks = tas_nodes(c, "kwok-crash-tas", "crash");
    apply(c, &tas_topology("crash-tas-topology"));
    apply(
        c,
        &tas_flavor("crash-tas-flavor", "crash", "crash-tas-topology"),
    );
    apply(
        c,
        &cluster_queue(
            "crash-tas-cq",
            &[("crash-tas-flavor", "64", None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(&ns, "tas", "crash-tas-cq"));
    wait_webhook_active(c, &ns);
    let rack_job = |name: &str| {
        let mut j: Value =
            serde_json::from_str(&job(name, &ns, "tas", "2", "600s", json!({}))).unwrap();
        j["spec"]["parallelism"] = json!(4);
        j["spec"]["completions"] = json!(4);
        j["spec"]["template"]["metadata"]["annotations"]
            ["kueue.x-k8s.io/podset-required-topology"] = json!(TAS_RACK);
        create(c, &j.to_string());
    };
    let admitted = |name: &str| {
        wait_for(
            Duration::from_secs(120),
            &format!("{name} admitted"),
            || workload_of(c, &ns, name).filter(|w| is_true(w, "Admitted")),
        )
    };
    let assignment = |w: &Value| {
        let ta = &w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"];
        let levels = ta["levels"].as_array().map_or(0, Vec::len);
        batchgate::api::kueue::conversion::topology::expand(&ta["slices"], levels)
            .unwrap_or_else(|e| panic!("{e:?}: {ta}"))
    };
    rack_job("first");
    let before = admitted("first")["status"]["admission"].clone();
    bound_pods(c, &ns, "batch.kubernetes.io/job-name=first", 4);

    server.signal(9);
    server
        .wait_exit(Duration::from_secs(30))
        .expect("batchgate to die on SIGKILL");
    server = start(c, &certs, &cfg, &logs);
    wait_webhook_active(c, &ns);

    let later = ["second", "third", "fourth", "fifth"];
    for name in later {
        rack_job(name);
    }
    // Three of the four find a rack, in whichever order their Workloads
    // came; the last one waits, though it would fit the quota.
    let (placed, waiting) = wait_for(
        Duration::from_secs(120),
        "three of the later Jobs admitted",
        || {
            let ws: Vec<(&str, Value)> = later
                .iter()
                .map(|n| Some((*n, workload_of(c, &ns, n)?)))
                .collect::<Option<_>>()?;
            let (yes, no): (Vec<_>, Vec<_>) =
                ws.into_iter().partition(|(_, w)| is_true(w, "Admitted"));
            (yes.len() == 3).then(|| (yes, no[0].0))
        },
    );
    let mut per_node = BTreeMap::<String, i64>::new();
    let mut used_racks = HashSet::new();
    let first = admitted("first");
    assert_eq!(
        first["status"]["admission"], before,
        "the restart changed the first Workload's admission"
    );
    for (name, w) in std::iter::once(("first", first)).chain(placed.iter().cloned()) {
        let domains = assignment(&w);
        let job_racks: HashSet<&String> = domains.iter().map(|d| &racks[&d.values[0]]).collect();
        assert_eq!(job_racks.len(), 1, "{name} is on one rack: {domains:?}");
        used_racks.extend(job_racks.into_iter().cloned());
        for d in &domains {
            *per_node.entry(d.values[0].clone()).or_default() += d.count;
        }
    }
    assert_eq!(used_racks.len(), 4, "four Jobs, four racks: {per_node:?}");
    assert!(
        per_node.values().all(|n| *n <= 2),
        "no node is given more than two 2-cpu pods: {per_node:?}"
    );
    thread::sleep(Duration::from_secs(5));
    let last = workload_of(c, &ns, waiting).expect("the waiting Job's Workload");
    assert!(
        !is_true(&last, "QuotaReserved"),
        "a fifth rack-filling Job was admitted on four racks: {last}"
    );
    for (name, _) in &placed {
        bound_pods(c, &ns, &format!("batch.kubernetes.io/job-name={name}"), 4);
    }
    // The pods hold their nodes for minutes: let them go.
    kubectl(
        c,
        &["delete", "jobs", "--all", "-n", &ns, "--wait=false"],
        None,
    );
    drop(server);
}

/// Every incarnation's log, printed if the test fails.
#[derive(Default)]
struct Logs(Mutex<Vec<Arc<Mutex<String>>>>);

impl Drop for Logs {
    fn drop(&mut self) {
        if !thread::panicking() {
            return;
        }
        for (i, log) in self.0.lock().unwrap().iter().enumerate() {
            let log = log.lock().unwrap();
            let lines: Vec<&str> = log.lines().collect();
            eprintln!("--- batchgate #{i}, last lines of {} ---", lines.len());
            for l in &lines[lines.len().saturating_sub(60)..] {
                eprintln!("{l}");
            }
        }
    }
}

/// Waits until the sampler saw `jobs` Jobs succeed, one Workload each, every
/// Workload Finished, calling `tick` on each poll. It fails on a stall, not
/// on a slow machine: when neither succeeded Jobs nor Finished Workloads
/// grew for [`STALL`], or past `within` in all, it panics with the last
/// sample and what is left: each Workload not Finished (its conditions, its
/// Job's) and each Job without a Workload.
fn drain(
    c: &LocalCluster,
    ns: &str,
    stats: &Mutex<Stats>,
    jobs: usize,
    within: Duration,
    mut tick: impl FnMut(),
) {
    let start = Instant::now();
    let mut progress = (Instant::now(), 0, 0);
    loop {
        tick();
        let s = stats.lock().unwrap().last.clone();
        if s.succeeded == jobs && s.finished == s.workloads && s.workloads == jobs {
            return;
        }
        if (s.succeeded, s.finished) != (progress.1, progress.2) {
            progress = (Instant::now(), s.succeeded, s.finished);
        }
        let stalled = progress.0.elapsed() >= STALL;
        if stalled || start.elapsed() >= within {
            panic!(
                "every Job to succeed and every Workload to finish: {} after {:?}; \
                 last sample {s:?}; left:\n{}",
                if stalled {
                    format!("no progress for {STALL:?}")
                } else {
                    "not done".into()
                },
                start.elapsed(),
                left_over(c, ns)
            );
        }
        thread::sleep(Duration::from_millis(200));
    }
}

/// How long a drain may go without one more Job succeeding or Workload
/// finishing: many times a Job's 2 s run and a restart's lease wait.
const STALL: Duration = Duration::from_secs(90);

/// Each Workload in `ns` not Finished and each Job without a Workload, one
/// line each, with the conditions a reader needs to see why.
fn left_over(c: &LocalCluster, ns: &str) -> String {
    let (Some(wls), Some(jobs)) = (
        get(c, &["workloads.kueue.x-k8s.io", "-n", ns]),
        get(c, &["jobs", "-n", ns]),
    ) else {
        return "(Workloads or Jobs could not be read)".into();
    };
    let empty = Vec::new();
    let wls = wls["items"].as_array().unwrap_or(&empty);
    let jobs = jobs["items"].as_array().unwrap_or(&empty);
    let conditions = |o: &Value| {
        o["status"]["conditions"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| format!("{}={} {}", c["type"], c["status"], c["reason"]))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let mut out = String::new();
    for w in wls.iter().filter(|w| !is_true(w, "Finished")) {
        let owner = w["metadata"]["ownerReferences"][0]["uid"].as_str();
        let job = jobs.iter().find(|j| j["metadata"]["uid"].as_str() == owner);
        out += &format!(
            "Workload {} admission={} [{}]; Job {}\n",
            w["metadata"]["name"],
            !w["status"]["admission"].is_null(),
            conditions(w),
            job.map_or("gone".into(), |j| format!(
                "{} suspend={} active={} succeeded={} [{}]",
                j["metadata"]["name"],
                j["spec"]["suspend"],
                j["status"]["active"],
                j["status"]["succeeded"],
                conditions(j)
            )),
        );
    }
    for j in jobs {
        let uid = j["metadata"]["uid"].as_str();
        if !wls
            .iter()
            .any(|w| w["metadata"]["ownerReferences"][0]["uid"].as_str() == uid)
        {
            out += &format!(
                "Job {} has no Workload: suspend={} [{}]\n",
                j["metadata"]["name"],
                j["spec"]["suspend"],
                conditions(j)
            );
        }
    }
    out
}

/// A batchgate with the shared certificates, registered as the webhook.
fn start(c: &LocalCluster, certs: &Path, cfg: &Path, logs: &Logs) -> Server {
    start_with_fault(c, certs, cfg, logs, None)
}

/// The same, crashing at `fault` (`BATCHGATE_FAULT`).
fn start_with_fault(
    c: &LocalCluster,
    certs: &Path,
    cfg: &Path,
    logs: &Logs,
    fault: Option<&str>,
) -> Server {
    // Inherited by the child spawned next only (this binary's one test).
    match fault {
        Some(f) => std::env::set_var("BATCHGATE_FAULT", f),
        None => std::env::remove_var("BATCHGATE_FAULT"),
    }
    let began = Instant::now();
    let server = Server::start_in_cluster(
        c.kubeconfig(),
        Some(certs.to_path_buf()),
        &["--config", cfg.to_str().unwrap()],
    );
    logs.0.lock().unwrap().push(server.stderr.clone());
    server.wait_ready(Duration::from_secs(60));
    register(c, server.addr, Some(&certs.join("ca.crt")), "Fail");
    // Printed with the test's output if it fails: how long each outage lasted.
    eprintln!(
        "batchgate at {} ready and registered {:?} after its start",
        server.addr,
        began.elapsed()
    );
    server
}

/// Waits (bounded) for the armed fault to end `server`: the fault's log
/// line and the Workload it names ("namespace/name" split off: the name). An
/// incarnation that exits on a lost Lease first (a machine too loaded to
/// renew in time) is started again by `armed`, with the same fault, and
/// counted in `lease_losses`.
fn crash(
    server: &mut Server,
    fault: &str,
    lease_losses: &mut usize,
    armed: impl Fn(&str) -> Server,
) -> (String, String) {
    loop {
        let status = server
            .wait_exit(Duration::from_secs(120))
            .unwrap_or_else(|| panic!("{fault}: batchgate still running after 120 s"));
        if status.code() == Some(86) {
            break;
        }
        restart_if_lease_lost(server, lease_losses, || armed(fault));
    }
    let log = server.stderr.lock().unwrap().clone();
    let line = log
        .lines()
        .find(|l| l.starts_with("BATCHGATE_FAULT: "))
        .unwrap_or_else(|| panic!("{fault}: no fault line in the log"));
    let moment = fault.split(':').next().unwrap();
    assert!(line.contains(moment), "{line}");
    let key = line
        .split("for Workload ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("{line}"));
    let name = key.split('/').nth(1).unwrap_or(key).to_string();
    (line.to_string(), name)
}

/// One sample while no batchgate runs (nothing can change the quota held).
fn frozen_sample(c: &LocalCluster, ns: &str) -> Sample {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = client(c.kubeconfig()).await;
        let (wls, jobs, cqs) = apis(client, ns);
        sample(&wls, &jobs, &cqs).await.expect("a sample").0
    })
}

/// Creates the Jobs in Lists of [`BATCH`] with `kubectl create -f -`,
/// retrying what the apiserver refused (the webhook is down) until each
/// exists; counts refused creates. Gives up after [`REFUSED_FOR`] without
/// one create accepted: a batch may span both crashes, and each outage
/// lasts until the next incarnation is ready and registered (the main
/// thread bounds that itself).
fn create_all(
    c: &LocalCluster,
    ns: &str,
    names: &[String],
    created: &AtomicUsize,
    failed: &AtomicUsize,
) {
    let mut progress = Instant::now();
    for batch in names.chunks(BATCH) {
        let mut left: Vec<&String> = batch.iter().collect();
        while !left.is_empty() {
            let items: Vec<Value> = left
                .iter()
                .map(|n| serde_json::from_str(&job(n, ns, "lq", "1", "2s", json!({}))).unwrap())
                .collect();
            let list = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
            let (_, out, err) = kubectl(c, &["create", "-f", "-"], Some(&list));
            let before = left.len();
            left.retain(|n| {
                let done = out.contains(&format!("job.batch/{n} created"))
                    || err.contains(&format!("jobs.batch \"{n}\" already exists"));
                !done
            });
            created.fetch_add(before - left.len(), Ordering::SeqCst);
            if left.len() < before {
                progress = Instant::now();
            }
            if !left.is_empty() {
                failed.fetch_add(left.len(), Ordering::SeqCst);
                assert!(
                    progress.elapsed() < REFUSED_FOR,
                    "creates refused for {:?}: {err}",
                    progress.elapsed()
                );
                thread::sleep(Duration::from_millis(250));
            }
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Sample {
    at: Duration,
    /// cpu of the Workloads holding quota: status.admission set,
    /// QuotaReserved=True, not Finished; from their pod sets' requests.
    reserved_milli: i64,
    reserved_workloads: usize,
    /// Jobs not suspended and not finished, 1 cpu each.
    running: usize,
    /// Workloads holding quota whose Job is still suspended.
    admitted_not_started: usize,
    /// Workloads neither holding quota nor Finished.
    pending: usize,
    workloads: usize,
    finished: usize,
    jobs: usize,
    succeeded: usize,
    cq_used_milli: i64,
}

#[derive(Debug, Clone, Default)]
struct Stats {
    samples: usize,
    errors: usize,
    sampled_for: Duration,
    max_reserved_milli: i64,
    max_reserved_workloads: usize,
    max_running: usize,
    max_cq_milli: i64,
    /// The sample with the most reserved or running.
    worst: Option<Sample>,
    last: Sample,
    /// Job uid -> Workload names, for any Job ever seen with two.
    duplicates: BTreeMap<String, Vec<String>>,
}

impl Stats {
    /// Never more reserved or running than [`QUOTA_CPU`] in any sample, and
    /// no Job ever seen with two Workloads.
    fn assert_within_quota_one_workload_per_job(&self) {
        assert!(
            self.max_reserved_milli <= QUOTA_CPU * 1000,
            "Workloads held {} mcpu at once, over the quota; at {:?}",
            self.max_reserved_milli,
            self.worst
        );
        assert!(
            self.max_running as i64 <= QUOTA_CPU,
            "{} Jobs ran at once: {:?}",
            self.max_running,
            self.worst
        );
        assert!(
            self.duplicates.is_empty(),
            "Jobs with more than one Workload: {:?}",
            self.duplicates
        );
    }
}

/// [`sample_until`] on its own thread: (stop flag, stats, thread).
fn spawn_sampler(
    c: &LocalCluster,
    ns: &str,
) -> (Arc<AtomicBool>, Arc<Mutex<Stats>>, thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(Mutex::new(Stats::default()));
    let sampler = {
        let (stop, stats, ns) = (stop.clone(), stats.clone(), ns.to_string());
        let kubeconfig = c.kubeconfig().to_path_buf();
        thread::spawn(move || sample_until(&kubeconfig, &ns, &stop, &stats))
    };
    (stop, stats, sampler)
}

/// Reads Workloads, Jobs and the ClusterQueue every ~200 ms until `stop`.
fn sample_until(kubeconfig: &Path, ns: &str, stop: &AtomicBool, stats: &Mutex<Stats>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = client(kubeconfig).await;
        let (wls, jobs, cqs) = apis(client, ns);
        let start = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            let tick = Instant::now();
            match sample(&wls, &jobs, &cqs).await {
                Ok((mut s, dups)) => {
                    s.at = start.elapsed();
                    let mut st = stats.lock().unwrap();
                    st.samples += 1;
                    st.sampled_for = s.at;
                    if s.reserved_milli > st.max_reserved_milli || s.running > st.max_running {
                        st.worst = Some(s.clone());
                    }
                    st.max_reserved_milli = st.max_reserved_milli.max(s.reserved_milli);
                    st.max_reserved_workloads = st.max_reserved_workloads.max(s.reserved_workloads);
                    st.max_running = st.max_running.max(s.running);
                    st.max_cq_milli = st.max_cq_milli.max(s.cq_used_milli);
                    st.duplicates.extend(dups);
                    st.last = s;
                }
                Err(_) => stats.lock().unwrap().errors += 1,
            }
            let spent = tick.elapsed();
            if spent < Duration::from_millis(200) {
                tokio::time::sleep(Duration::from_millis(200) - spent).await;
            }
        }
    });
}

/// Workloads and Jobs in `ns`, ClusterQueues.
fn apis(client: Client, ns: &str) -> (Api<DynamicObject>, Api<DynamicObject>, Api<DynamicObject>) {
    let wl_res = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload"),
        "workloads",
    );
    let cq_res = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "ClusterQueue"),
        "clusterqueues",
    );
    let job_res =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("batch", "v1", "Job"), "jobs");
    (
        Api::<DynamicObject>::namespaced_with(client.clone(), ns, &wl_res),
        Api::<DynamicObject>::namespaced_with(client.clone(), ns, &job_res),
        Api::<DynamicObject>::all_with(client, &cq_res),
    )
}

async fn client(kubeconfig: &Path) -> Client {
    let kc = Kubeconfig::read_from(kubeconfig).unwrap();
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(cfg).unwrap()
}

type Duplicates = BTreeMap<String, Vec<String>>;

async fn sample(
    wls: &Api<DynamicObject>,
    jobs: &Api<DynamicObject>,
    cqs: &Api<DynamicObject>,
) -> Result<(Sample, Duplicates), kube::Error> {
    let lp = ListParams::default();
    let wl_list = wls.list(&lp).await?;
    let job_list = jobs.list(&lp).await?;
    let cq = cqs.get_opt(CQ).await?;
    let mut s = Sample::default();
    let suspended: HashMap<String, bool> = job_list
        .items
        .iter()
        .map(|j| {
            let v = serde_json::to_value(j).unwrap_or_default();
            (
                v["metadata"]["uid"].as_str().unwrap_or("").to_string(),
                v["spec"]["suspend"] == true,
            )
        })
        .collect();
    let mut by_job: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for w in &wl_list.items {
        let w = serde_json::to_value(w).unwrap_or_default();
        s.workloads += 1;
        if let Some(owner) = w["metadata"]["ownerReferences"][0]["uid"].as_str() {
            by_job
                .entry(owner.to_string())
                .or_default()
                .push(w["metadata"]["name"].as_str().unwrap_or("").to_string());
        }
        if is_true(&w, "Finished") {
            s.finished += 1;
            continue;
        }
        if is_true(&w, "QuotaReserved") && !w["status"]["admission"].is_null() {
            s.reserved_workloads += 1;
            s.reserved_milli += workload_cpu_milli(&w);
            let owner = w["metadata"]["ownerReferences"][0]["uid"]
                .as_str()
                .unwrap_or("");
            if suspended.get(owner) == Some(&true) {
                s.admitted_not_started += 1;
            }
        } else {
            s.pending += 1;
        }
    }
    for j in &job_list.items {
        let j = serde_json::to_value(j).unwrap_or_default();
        s.jobs += 1;
        if succeeded(&j) {
            s.succeeded += 1;
        }
        let done = ["Complete", "Failed"].iter().any(|t| is_true(&j, t));
        if j["spec"]["suspend"] != true && !done {
            s.running += 1;
        }
    }
    if let Some(cq) = cq {
        let cq = serde_json::to_value(&cq).unwrap_or_default();
        s.cq_used_milli = cq["status"]["flavorsReservation"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|f| f["resources"].as_array().cloned().unwrap_or_default())
            .filter(|r| r["name"] == "cpu")
            .filter_map(|r| r["total"].as_str().and_then(quantity_milli))
            .sum();
    }
    by_job.retain(|_, v| v.len() > 1);
    Ok((s, by_job))
}

fn succeeded(j: &Value) -> bool {
    is_true(j, "Complete") && j["status"]["succeeded"].as_i64().unwrap_or(0) > 0
}

/// cpu a Workload asks for, from its own pod sets (count × container
/// requests), not from what batchgate recorded in its admission.
fn workload_cpu_milli(w: &Value) -> i64 {
    w["spec"]["podSets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|ps| {
            let count = ps["count"].as_i64().unwrap_or(1);
            let per_pod: i64 = ps["template"]["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    c["resources"]["requests"]["cpu"]
                        .as_str()
                        .and_then(quantity_milli)
                })
                .sum();
            count * per_pod
        })
        .sum()
}

/// A cpu quantity ("1", "1500m", "0.5") in millicpu.
fn quantity_milli(q: &str) -> Option<i64> {
    if let Some(m) = q.strip_suffix('m') {
        return m.parse().ok();
    }
    q.parse::<f64>().ok().map(|v| (v * 1000.0).round() as i64)
}
