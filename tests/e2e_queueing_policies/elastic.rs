//! An elastic Job (`kueue.x-k8s.io/elastic-job: "true"`, Kueue v0.19.2's
//! ElasticJobsViaWorkloadSlices, on by default) scaled while it runs,
//! following test/integration/singlecluster/controller/jobs/job/
//! job_controller_test.go "Should support job scale-down and scale-up" and
//! "Should cap elastic pod ungating to the granted quota", on the local
//! control plane. KWOK runs the pods; kube-scheduler holds the gated ones.

use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc, Mutex,
};

use super::*;

const GATE: &str = "kueue.x-k8s.io/elastic-job";

/// Milli-cpu of a quantity as the API prints it (`3`, `1500m`).
fn milli(q: &str) -> i64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(0),
        None => q.parse::<i64>().map_or(0, |c| c * 1000),
    }
}

/// `(ungated, gated)` pods of the Job that have not finished.
fn pods(c: &LocalCluster, ns: &str, job: &str) -> Option<(usize, usize)> {
    let list = get(c, &["pods", "-n", ns, "-l", &format!("job-name={job}")])?;
    let live: Vec<&Value> = list["items"]
        .as_array()?
        .iter()
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect();
    let gated = live
        .iter()
        .filter(|p| {
            p["spec"]["schedulingGates"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g["name"] == GATE))
        })
        .count();
    Some((live.len() - gated, gated))
}

/// The Job's Workloads: (name, podSets[0].count, admitted, finished reason).
/// A slice: (name, pod count, admitted, finished reason).
type Slice = (String, i64, bool, Option<String>);

/// The job's slices; `None` when the Workloads could not be read.
fn read_slices(c: &LocalCluster, ns: &str, job: &str) -> Option<Vec<Slice>> {
    let list = get(c, &["workloads.kueue.x-k8s.io", "-n", ns])?;
    Some(
        list["items"]
            .as_array()?
            .iter()
            .filter(|w| w["metadata"]["ownerReferences"][0]["name"] == job)
            .map(|w| {
                (
                    s(&w["metadata"]["name"]),
                    w["spec"]["podSets"][0]["count"].as_i64().unwrap_or(0),
                    is_true(w, "Admitted"),
                    true_condition(w, "Finished").map(|(r, _)| r),
                )
            })
            .collect(),
    )
}

fn slices(c: &LocalCluster, ns: &str, job: &str) -> Vec<Slice> {
    read_slices(c, ns, job).unwrap_or_default()
}

fn elastic_job(ns: &str, parallelism: u32) -> String {
    let mut j: Value =
        serde_json::from_str(&job("elastic", ns, "lq", "1", "600s", json!({}))).unwrap();
    j["metadata"]["annotations"] = json!({"kueue.x-k8s.io/elastic-job": "true"});
    j["spec"]["parallelism"] = json!(parallelism);
    j["spec"]["completions"] = json!(20);
    j.to_string()
}

/// 2 → 4 → 1 pods while running, in a ClusterQueue of 4 cpus that another
/// Job holds 1 of: the scale-up waits (the job keeps running on its 2
/// pods, the 2 new ones gated) until that Job is gone, then its slice
/// replaces the first one; the scale-down shrinks the admitted slice in
/// place. A sampler checks all along that the ClusterQueue never holds
/// more than 4 cpus and that no more pods are ungated than admitted.
#[test]
fn an_elastic_job_scaled_2_4_1_keeps_its_place_and_never_exceeds_quota() {
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, "e2e-elastic");
    apply(c, &flavor("elastic-rf", json!({})));
    apply(
        c,
        &cluster_queue("elastic-cq", &[("elastic-rf", "4", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "elastic-cq"));

    create(c, &job("other", &ns, "lq", "1", "600s", json!({})));
    wait_for(LONG, "the other Job admitted", || {
        workload_of(c, &ns, "other").filter(|w| is_true(w, "Admitted"))
    });

    // The sampler: CQ usage and ungated pods against the admitted count,
    // with the test's phase (1: 2 pods, 2: the scale-up held, 3: 4 pods
    // and the scale-down, 4: 1 pod) and the samples taken in each: every
    // phase must be sampled (under load one sample takes seconds).
    let stop = Arc::new(AtomicBool::new(false));
    let phase = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let samples: Arc<Mutex<[usize; 5]>> = Arc::default();
    let sampler = {
        let (stop, phase, seen, samples, ns) = (
            stop.clone(),
            phase.clone(),
            seen.clone(),
            samples.clone(),
            ns.clone(),
        );
        std::thread::spawn(move || {
            let c = env_with(CONFIG).cluster;
            while !stop.load(Ordering::Relaxed) {
                let at = phase.load(Ordering::Relaxed);
                if let Some((_, _, _, used)) = cq_counts(c, "elastic-cq") {
                    if milli(&used) > 4000 {
                        seen.lock()
                            .unwrap()
                            .push(format!("ClusterQueue uses {used}"));
                    }
                    samples.lock().unwrap()[at] += 1;
                }
                // The pods are read before the slices: a pod is ungated
                // only after its slice is admitted, so slices read later
                // show that admission. Read the other way round, an
                // admission and its ungating that both fall between the
                // two reads look like pods ungated beyond the quota.
                let Some((ungated, _)) = pods(c, &ns, "elastic") else {
                    std::thread::sleep(Duration::from_millis(300));
                    continue;
                };
                // A list that could not be read (a kubectl timeout under
                // load) is no sample: read as empty, it would look like
                // nothing admitted.
                let Some(read) = read_slices(c, &ns, "elastic") else {
                    std::thread::sleep(Duration::from_millis(300));
                    continue;
                };
                let granted: i64 = read
                    .iter()
                    .filter(|s| s.2 && s.3.is_none())
                    .map(|s| s.1)
                    .max()
                    .unwrap_or(0);
                // While the Job asks for more than is admitted, the pods
                // beyond the admitted count stay gated. (During a
                // scale-down the slice shrinks before the Job controller
                // has removed the extra pods: not counted.)
                let asked = job_obj(c, &ns, "elastic")["spec"]["parallelism"]
                    .as_i64()
                    .unwrap_or(0);
                if asked > granted && ungated as i64 > granted {
                    seen.lock()
                        .unwrap()
                        .push(format!("{ungated} pods ungated, {granted} admitted"));
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        })
    };

    // 2 pods: admitted, started, both ungated.
    create(c, &elastic_job(&ns, 2));
    wait_for(LONG, "2 pods ungated and the Job running", || {
        let j = job_obj(c, &ns, "elastic");
        (j["spec"]["suspend"] == false && pods(c, &ns, "elastic") == Some((2, 0))).then_some(())
    });
    // Reached phase `p`: wait for a sample begun in it.
    let sampled = |p: usize| {
        phase.store(p, Ordering::Relaxed);
        wait_for(LONG, &format!("a sample in phase {p}"), || {
            (samples.lock().unwrap()[p] >= 1).then_some(())
        });
    };
    sampled(1);
    let first = slices(c, &ns, "elastic");
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!((first[0].1, first[0].2), (2, true), "{first:?}");
    let w = workload_of(c, &ns, "elastic").unwrap();
    assert_eq!(
        w["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-name"],
        first[0].0.as_str(),
        "{w}"
    );

    // 4 pods: the scale-up slice needs 2 more cpus, 1 is free: it waits,
    // and the job runs on its 2 ungated pods meanwhile.
    patch(
        c,
        &["job", "elastic", "-n", &ns],
        json!({"spec": {"parallelism": 4}}),
    );
    let pending = wait_for(LONG, "the scale-up slice pending", || {
        let all = slices(c, &ns, "elastic");
        let new = all.iter().find(|s| s.0 != first[0].0)?.clone();
        let wl = get(c, &["workloads.kueue.x-k8s.io", &new.0, "-n", &ns])?;
        condition_of(&wl, "QuotaReserved")
            .filter(|q| q.0 == "False")
            .map(|_| wl)
    });
    assert_eq!(
        pending["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-replacement-for"],
        format!("{ns}/{}", first[0].0),
        "{pending}"
    );
    assert_eq!(
        pending["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-name"],
        first[0].0.as_str()
    );
    wait_for(LONG, "4 pods, 2 of them gated", || {
        (pods(c, &ns, "elastic") == Some((2, 2))).then_some(())
    });
    sampled(2);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(pods(c, &ns, "elastic"), Some((2, 2)), "held, not slow");
    assert_eq!(job_obj(c, &ns, "elastic")["spec"]["suspend"], false);
    let old = get(c, &["workloads.kueue.x-k8s.io", &first[0].0, "-n", &ns]).unwrap();
    assert!(
        is_true(&old, "Admitted") && !is_true(&old, "Finished"),
        "{old}"
    );

    // Room: the new slice replaces the old one, all 4 pods run.
    let (ok, out, err) = kubectl(c, &["delete", "job", "other", "-n", &ns], None);
    assert!(ok, "{out}{err}");
    wait_for(LONG, "4 pods ungated", || {
        (pods(c, &ns, "elastic") == Some((4, 0))).then_some(())
    });
    let old = wait_for(LONG, "the first slice finished as replaced", || {
        get(c, &["workloads.kueue.x-k8s.io", &first[0].0, "-n", &ns])
            .filter(|w| is_true(w, "Finished"))
    });
    let (reason, message) = true_condition(&old, "Finished").unwrap();
    assert_eq!(reason, "WorkloadSliceReplaced", "{old}");
    // Kueue's scheduler's words, or its job reconciler's when that one
    // sees both slices admitted first.
    assert!(
        (message.starts_with("Replaced to accommodate a workload (UID: ")
            && message.ends_with("due to workload slice aggregation"))
            || message == "Replaced to accommodate a new workload slice",
        "{message}"
    );
    let after_up = slices(c, &ns, "elastic");
    let live: Vec<_> = after_up.iter().filter(|s| s.3.is_none()).collect();
    assert_eq!(live.len(), 1, "{after_up:?}");
    assert_eq!((live[0].1, live[0].2), (4, true), "{after_up:?}");
    wait_for(LONG, "4 cpus in use", || {
        cq_counts(c, "elastic-cq").filter(|q| milli(&q.3) == 4000)
    });
    sampled(3);

    // 1 pod: the admitted slice shrinks in place.
    let kept = live[0].0.clone();
    patch(
        c,
        &["job", "elastic", "-n", &ns],
        json!({"spec": {"parallelism": 1}}),
    );
    wait_for(LONG, "1 cpu in use and the slice at 1 pod", || {
        let q = cq_counts(c, "elastic-cq")?;
        let all = slices(c, &ns, "elastic");
        let s = all.iter().find(|s| s.0 == kept)?;
        (milli(&q.3) == 1000 && s.1 == 1 && s.2 && s.3.is_none()).then_some(())
    });
    wait_for(LONG, "1 pod left", || {
        (pods(c, &ns, "elastic") == Some((1, 0))).then_some(())
    });
    assert_eq!(job_obj(c, &ns, "elastic")["spec"]["suspend"], false);

    sampled(4);
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    eprintln!("samples per phase: {:?}", samples.lock().unwrap());
    let seen = seen.lock().unwrap();
    assert!(seen.is_empty(), "over quota: {seen:?}");
    let (ok, out, err) = kubectl(c, &["delete", "job", "elastic", "-n", &ns], None);
    assert!(ok, "{out}{err}");
}
