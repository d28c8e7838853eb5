//! PreScaledCronJob end to end on the local cluster: batchgate is the
//! webhook and the controller, kube-controller-manager runs the CronJob
//! controller and the garbage collector, KWOK runs the pods.
//!
//! - upstream's samples (a warm-up, and an explicit primerSchedule) apply
//!   unchanged and give `autogen-<name>` with the primer schedule, the
//!   wait init container first, a controller owner reference, the labels
//!   and the hash, and a Ready status;
//! - a hand edit of the generated CronJob is reverted, a deleted one is
//!   created again, a spec change is rolled out; deleting the
//!   PreScaledCronJob deletes the CronJob;
//! - a CronJob of that name that is not ours is left alone (upstream's
//!   event);
//! - each webhook rule denies with its message (`kubectl create`);
//! - a primer scheduled a minute or two ahead creates a Job whose pod runs
//!   on a KWOK node (a GPU one, integer GPU limits as upstream's GPU
//!   sample), and with a queue name that Job is queued, admitted by
//!   batchgate and started on its flavor's node;
//! - a primed pod's timings (upstream's pod controller) are scraped from
//!   `/metrics` and told as upstream's Events, and agree with the
//!   scheduler's Event and the kubelet's (played by the test).

mod support;

use std::{
    sync::Once,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use batchgate_localcluster::LocalCluster;
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    queueing::*,
};

const WAIT: Duration = Duration::from_secs(90);
const INIT: &str = "injected-0d825b4f-07f0-4952-8150-fba894c613b1";
const PSC: &str = "prescaledcronjobs.psc.cronprimer.local";

/// Upstream's sample shape (`config/samples/`), with `spec` fields given.
fn psc(name: &str, ns: &str, spec: Value, schedule: &str, pod: Value) -> String {
    let mut s = spec;
    s["cronJob"] = json!({
        "metadata": {"name": "my-cron-sample", "labels": {"team": "a"}},
        "spec": {"schedule": schedule,
                 "jobTemplate": {"spec": {"backoffLimit": 0, "template": pod}}},
    });
    json!({"apiVersion": "psc.cronprimer.local/v1alpha1", "kind": "PreScaledCronJob",
           "metadata": {"name": name, "namespace": ns}, "spec": s})
    .to_string()
}

fn busybox() -> Value {
    json!({"spec": {
        "initContainers": [{"name": "iatric", "image": "busybox", "command": ["true"]}],
        "containers": [{"name": "hello", "image": "busybox",
                        "args": ["/bin/sh", "-c", "date; sleep 90"],
                        "resources": {"requests": {"cpu": "100m"}}}],
        "restartPolicy": "OnFailure"}})
}

fn ready_env() -> &'static LocalCluster {
    static CRD: Once = Once::new();
    let c = env().cluster;
    CRD.call_once(|| {
        c.wait_established(
            &["crd/prescaledcronjobs.psc.cronprimer.local"],
            Duration::from_secs(120),
        )
        .unwrap();
        // The webhook is registered once the apiserver calls it for PSCs.
        let probe = namespace(c, "e2e-psc-probe");
        wait_for(WAIT, "the PreScaledCronJob webhook answering", || {
            let (ok, _, err) = kubectl(
                c,
                &["create", "--dry-run=server", "-f", "-"],
                Some(&psc("probe", &probe, json!({}), "5 * * * *", busybox())),
            );
            (!ok && err.contains("vprescaledcronjob.kb.io")).then_some(())
        });
    });
    c
}

fn cronjob(c: &LocalCluster, ns: &str, name: &str) -> Option<Value> {
    get(c, &["cronjobs", name, "-n", ns])
}

fn prescaled(c: &LocalCluster, ns: &str, name: &str) -> Option<Value> {
    get(c, &[PSC, name, "-n", ns])
}

/// The reasons and messages of the Events about an object.
fn events_of(c: &LocalCluster, ns: &str, kind: &str, name: &str) -> Vec<(String, String)> {
    get(
        c,
        &[
            "events",
            "-n",
            ns,
            "--field-selector",
            &format!("involvedObject.name={name},involvedObject.kind={kind}"),
        ],
    )
    .and_then(|l| l["items"].as_array().cloned())
    .unwrap_or_default()
    .iter()
    .map(|e| {
        (
            e["reason"].as_str().unwrap_or_default().to_string(),
            e["message"].as_str().unwrap_or_default().to_string(),
        )
    })
    .collect()
}

fn has_event(c: &LocalCluster, ns: &str, name: &str, reason: &str) -> Option<String> {
    events_of(c, ns, "PreScaledCronJob", name)
        .into_iter()
        .find(|(r, _)| r == reason)
        .map(|(_, m)| m)
}

/// Checks a generated CronJob against its PreScaledCronJob.
fn check_generated(cj: &Value, p: &Value, schedule: &str, primer: &str) {
    let name = p["metadata"]["name"].as_str().unwrap();
    assert_eq!(cj["spec"]["schedule"], primer, "{cj}");
    let owner = &cj["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "PreScaledCronJob");
    assert_eq!(owner["apiVersion"], "psc.cronprimer.local/v1alpha1");
    assert_eq!(owner["uid"], p["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);
    assert_eq!(cj["metadata"]["labels"]["team"], "a");
    assert_eq!(
        cj["metadata"]["labels"]["psc.cronprimer.local/prescaledcronjob"],
        name
    );
    let pod = &cj["spec"]["jobTemplate"]["spec"]["template"];
    assert_eq!(pod["metadata"]["labels"]["primedcron"], name);
    let inits = pod["spec"]["initContainers"].as_array().unwrap();
    assert_eq!(inits[0]["name"], INIT, "the wait first: {inits:?}");
    assert_eq!(inits[1]["name"], "iatric", "the user's after: {inits:?}");
    assert_eq!(inits[0]["command"], json!(["/batchgate"]));
    let args: Vec<&str> = inits[0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        args[..5],
        [
            "prescale-wait",
            "--schedule",
            schedule,
            "--primer-schedule",
            primer
        ]
    );
    let hash = cj["metadata"]["annotations"]["pscObjectHash"]
        .as_str()
        .unwrap();
    assert!(hash.starts_with("v2_"), "{hash}");
}

#[test]
fn upstream_samples_give_the_right_cronjob() {
    let c = ready_env();
    let ns = namespace(c, "e2e-psc-samples");
    // The sample with a warm-up (5 minutes before :05 and :35).
    create(
        c,
        &psc(
            "warmup",
            &ns,
            json!({"warmUpTimeMins": 5}),
            "5/30 * * * *",
            busybox(),
        ),
    );
    // Its primerSchedule variant.
    create(
        c,
        &psc(
            "primer",
            &ns,
            json!({"primerSchedule": "*/30 * * * *"}),
            "5/30 * * * *",
            busybox(),
        ),
    );
    for (name, primer) in [("warmup", "0,30 * * * *"), ("primer", "*/30 * * * *")] {
        let cj = wait_for(WAIT, &format!("autogen-{name}"), || {
            cronjob(c, &ns, &format!("autogen-{name}"))
        });
        let p = wait_for(WAIT, "the PreScaledCronJob Ready", || {
            prescaled(c, &ns, name).filter(|p| is_true(p, "Ready"))
        });
        check_generated(&cj, &p, "5/30 * * * *", primer);
        assert_eq!(p["status"]["primerSchedule"], primer);
        assert_eq!(p["status"]["cronJobName"], format!("autogen-{name}"));
        assert_eq!(
            p["status"]["hash"],
            cj["metadata"]["annotations"]["pscObjectHash"]
        );
        assert!(p["status"]["lastSyncTime"].is_string(), "{p}");
        let msg = wait_for(WAIT, "the create event", || {
            has_event(c, &ns, name, "Create cronjob successful")
        });
        assert_eq!(msg, format!("Created associated cronjob: autogen-{name}"));
    }
    let cj = cronjob(c, &ns, "autogen-warmup").unwrap();
    let args = &cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["initContainers"][0]["args"];
    assert_eq!(args[5], "--max-wait-minutes");
    assert_eq!(args[6], "5");
}

#[test]
fn a_hand_edit_is_reverted_a_change_rolled_out_and_deletion_cascades() {
    let c = ready_env();
    let ns = namespace(c, "e2e-psc-drift");
    create(
        c,
        &psc(
            "drift",
            &ns,
            json!({"warmUpTimeMins": 10}),
            "30 * * 10 *",
            busybox(),
        ),
    );
    let cj = wait_for(WAIT, "autogen-drift", || cronjob(c, &ns, "autogen-drift"));
    assert_eq!(cj["spec"]["schedule"], "20 * * 10 *");

    // A hand edit: another schedule, suspended.
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "cronjob",
            "autogen-drift",
            "-n",
            &ns,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"schedule":"1 1 * * *","suspend":true}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "the hand edit reverted", || {
        cronjob(c, &ns, "autogen-drift")
            .filter(|cj| cj["spec"]["schedule"] == "20 * * 10 *" && cj["spec"]["suspend"] == false)
    });
    let msg = wait_for(WAIT, "the revert event", || {
        has_event(c, &ns, "drift", "Reverted cronjob change")
    });
    assert!(msg.contains("autogen-drift"), "{msg}");

    // The init container removed by hand comes back first.
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "cronjob",
            "autogen-drift",
            "-n",
            &ns,
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/spec/jobTemplate/spec/template/spec/initContainers/0"}]"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "the init container restored", || {
        cronjob(c, &ns, "autogen-drift").filter(|cj| {
            cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["initContainers"][0]["name"]
                == INIT
        })
    });

    // A change of the PreScaledCronJob is rolled out (upstream's update vector).
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            PSC,
            "drift",
            "-n",
            &ns,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"warmUpTimeMins":1}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    wait_for(WAIT, "the new primer schedule", || {
        cronjob(c, &ns, "autogen-drift").filter(|cj| cj["spec"]["schedule"] == "29 * * 10 *")
    });
    let msg = wait_for(WAIT, "the update event", || {
        has_event(c, &ns, "drift", "Update of cronjob successful")
    });
    assert_eq!(msg, "Updated associated cronjob: autogen-drift");

    // Deleted by hand: created again.
    let (ok, out, err) = kubectl(c, &["delete", "cronjob", "autogen-drift", "-n", &ns], None);
    assert!(ok, "{out}{err}");
    let uid = cj["metadata"]["uid"].clone();
    wait_for(WAIT, "the CronJob created again", || {
        cronjob(c, &ns, "autogen-drift").filter(|cj| cj["metadata"]["uid"] != uid)
    });

    // Deleting the PreScaledCronJob deletes the CronJob (garbage collector).
    let (ok, out, err) = kubectl(c, &["delete", PSC, "drift", "-n", &ns], None);
    assert!(ok, "{out}{err}");
    wait_for(
        WAIT,
        "the CronJob deleted with its PreScaledCronJob",
        || cronjob(c, &ns, "autogen-drift").is_none().then_some(()),
    );
}

#[test]
fn a_cronjob_that_is_not_ours_is_left_alone() {
    let c = ready_env();
    let ns = namespace(c, "e2e-psc-taken");
    create(
        c,
        &json!({"apiVersion": "batch/v1", "kind": "CronJob",
                "metadata": {"name": "autogen-taken", "namespace": ns},
                "spec": {"schedule": "30 * * 10 *", "jobTemplate": {"spec": {"template": busybox()}}}})
        .to_string(),
    );
    create(
        c,
        &psc(
            "taken",
            &ns,
            json!({"warmUpTimeMins": 10}),
            "30 * * 10 *",
            busybox(),
        ),
    );
    let msg = wait_for(WAIT, "the already-exists event", || {
        has_event(c, &ns, "taken", "Cronjob already exists")
    });
    assert_eq!(
        msg,
        "A cronjob with this name already exists, and was not created by this operator : autogen-taken"
    );
    let p = wait_for(WAIT, "Ready False", || {
        prescaled(c, &ns, "taken").filter(|p| condition(p, "Ready").is_some())
    });
    assert_eq!(condition(&p, "Ready").unwrap()["reason"], "CronJobExists");
    let cj = cronjob(c, &ns, "autogen-taken").unwrap();
    assert_eq!(cj["spec"]["schedule"], "30 * * 10 *");
    assert!(cj["metadata"]["ownerReferences"].is_null(), "{cj}");
}

#[test]
fn each_rule_is_denied_with_its_message() {
    let c = ready_env();
    let ns = namespace(c, "e2e-psc-deny");
    let prefix = "admission webhook \"vprescaledcronjob.kb.io\" denied the request: ";
    let cases: [(&str, Value, &str, &str); 7] = [
        (
            "syntax",
            json!({"warmUpTimeMins": 5}),
            "bananas",
            "spec.cronJob.spec.schedule: Invalid value: \"bananas\": expected exactly 5 fields, found 1: [bananas]",
        ),
        (
            "zero",
            json!({"warmUpTimeMins": 0}),
            "30 * * * *",
            "spec.warmUpTimeMins: Invalid value: 0: must be greater than 0",
        ),
        (
            "gap",
            json!({"warmUpTimeMins": 30}),
            "5/30 * * * *",
            "spec.warmUpTimeMins: Invalid value: 30: must be shorter than the shortest time between two runs of \"5/30 * * * *\" (30 minutes)",
        ),
        (
            "both",
            json!({"warmUpTimeMins": 5, "primerSchedule": "*/30 * * * *"}),
            "5/30 * * * *",
            "spec.primerSchedule: Forbidden: set either warmUpTimeMins or primerSchedule, not both",
        ),
        (
            "neither",
            json!({}),
            "5/30 * * * *",
            "spec.warmUpTimeMins: Required value: set warmUpTimeMins (minutes the primer runs before each run) or primerSchedule",
        ),
        (
            "notbefore",
            json!({"primerSchedule": "0 * * * *"}),
            "5/30 * * * *",
            "spec.primerSchedule: Invalid value: \"0 * * * *\": does not fire before each run of \"5/30 * * * *\": nothing fires between the runs at ",
        ),
        (
            "everyminute",
            json!({"warmUpTimeMins": 5}),
            "*/1 * * * *",
            "spec.cronJob.spec.schedule: Invalid value: \"*/1 * * * *\": Can't create primer schedule on something that runs every minute",
        ),
    ];
    for (name, spec, schedule, want) in cases {
        let (ok, out, err) = kubectl(
            c,
            &["create", "-f", "-"],
            Some(&psc(name, &ns, spec, schedule, busybox())),
        );
        assert!(!ok, "{name} was allowed: {out}");
        assert!(
            err.contains(&format!("{prefix}{want}")),
            "{name}: want {want:?} in {err}"
        );
    }
    // An update is checked too.
    create(
        c,
        &psc(
            "upd",
            &ns,
            json!({"warmUpTimeMins": 5}),
            "5/30 * * * *",
            busybox(),
        ),
    );
    let (ok, _, err) = kubectl(
        c,
        &[
            "patch",
            PSC,
            "upd",
            "-n",
            &ns,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"warmUpTimeMins":45}}"#,
        ],
        None,
    );
    assert!(!ok);
    assert!(
        err.contains("spec.warmUpTimeMins: Invalid value: 45: must be shorter"),
        "{err}"
    );
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A daily schedule whose run is `ahead` minutes after the minute that
/// starts at least 20 s from now, in UTC: `(schedule, primer minute start)`.
fn soon(ahead: u64, warm_up: u64) -> (String, u64) {
    let primer_at = (unix_now() + 20).div_ceil(60) * 60 + (ahead - warm_up) * 60;
    let run = primer_at + warm_up * 60;
    let (h, m) = (run / 3600 % 24, run / 60 % 60);
    (format!("{m} {h} * * *"), primer_at)
}

/// The Jobs the generated CronJob created, and their pods.
fn primed_job(c: &LocalCluster, ns: &str, cronjob: &str) -> Option<Value> {
    get(c, &["jobs", "-n", ns])?["items"]
        .as_array()?
        .iter()
        .find(|j| j["metadata"]["ownerReferences"][0]["name"] == cronjob)
        .cloned()
}

fn pod_of(c: &LocalCluster, ns: &str, job: &str) -> Option<Value> {
    get(c, &["pods", "-n", ns, "-l", &format!("job-name={job}")])?["items"]
        .as_array()?
        .first()
        .cloned()
}

#[test]
fn a_primer_a_minute_ahead_runs_a_job_on_a_kwok_node() {
    let c = ready_env();
    let ns = namespace(c, "e2e-psc-run");
    let (schedule, primer_at) = soon(2, 1);
    // Upstream's GPU sample: integer GPU requests and limits.
    let pod = json!({"metadata": {"annotations": {batchgate_localcluster::POD_RUNTIME_ANNOTATION: "5s"}},
        "spec": {
        "containers": [{"name": "hello", "image": "busybox",
                        "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}}}],
        "restartPolicy": "OnFailure"}});
    let mut manifest: Value = serde_json::from_str(&psc(
        "gpu",
        &ns,
        json!({"warmUpTimeMins": 1}),
        &schedule,
        pod,
    ))
    .unwrap();
    manifest["spec"]["cronJob"]["spec"]["timeZone"] = json!("Etc/UTC");
    create(c, &manifest.to_string());
    let cj = wait_for(WAIT, "autogen-gpu", || cronjob(c, &ns, "autogen-gpu"));
    let args = &cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["initContainers"][0]["args"];
    assert_eq!(args[8], "Etc/UTC", "{args}");
    let until = Duration::from_secs(primer_at.saturating_sub(unix_now()) + 120);
    let job = wait_for(until, "the primer's Job", || {
        primed_job(c, &ns, "autogen-gpu")
    });
    let name = job["metadata"]["name"].as_str().unwrap().to_string();
    // The CronJob controller names a Job after its scheduled minute.
    let minute: u64 = name.rsplit('-').next().unwrap().parse().unwrap();
    assert_eq!(minute * 60, primer_at, "{name}");
    let kwok: Vec<String> = c.nodes().iter().map(|n| n.name.clone()).collect();
    let pod = wait_for(WAIT, "the primed pod bound to a node", || {
        pod_of(c, &ns, &name).filter(|p| p["spec"]["nodeName"].is_string())
    });
    let node = pod["spec"]["nodeName"].as_str().unwrap();
    assert_eq!(
        node, "kwok-gpu-0",
        "the GPU pod on the GPU node of {kwok:?}"
    );
    assert_eq!(pod["spec"]["initContainers"][0]["name"], INIT);
    wait_for(WAIT, "the primed Job complete", || {
        get(c, &["jobs", &name, "-n", &ns]).filter(|j| j["status"]["succeeded"] == 1)
    });
}

#[test]
fn a_queued_primer_job_is_suspended_admitted_and_started_by_batchgate() {
    let c = ready_env();
    let ns = namespace(c, "e2e-psc-queue");
    apply(c, &flavor("psc-spot", json!({"instance-type": "spot"})));
    apply(
        c,
        &cluster_queue("psc-cq", &[("psc-spot", "4", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "psc-queue", "psc-cq"));
    let (schedule, primer_at) = soon(2, 1);
    let mut manifest: Value = serde_json::from_str(&psc(
        "queued",
        &ns,
        json!({"warmUpTimeMins": 1}),
        &schedule,
        json!({"metadata": {"annotations": {batchgate_localcluster::POD_RUNTIME_ANNOTATION: "5s"}},
               "spec": {"containers": [{"name": "hello", "image": "busybox",
                                        "resources": {"requests": {"cpu": "500m"}}}],
                        "restartPolicy": "Never"}}),
    ))
    .unwrap();
    manifest["spec"]["cronJob"]["spec"]["jobTemplate"]["metadata"] =
        json!({"labels": {"kueue.x-k8s.io/queue-name": "psc-queue"}});
    create(c, &manifest.to_string());
    wait_for(WAIT, "autogen-queued", || cronjob(c, &ns, "autogen-queued"));
    let until = Duration::from_secs(primer_at.saturating_sub(unix_now()) + 120);
    let job = wait_for(until, "the primer's Job", || {
        primed_job(c, &ns, "autogen-queued")
    });
    let name = job["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "psc-queue"
    );
    // Queued: a Workload for it, admitted by batchgate's engine.
    let wl = wait_for(WAIT, "the Job's Workload admitted", || {
        workload_of(c, &ns, &name).filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(wl["spec"]["queueName"], "psc-queue");
    // batchgate started it: it was stored suspended (the webhook) and
    // resumed on admission (the job reconciler's Started event).
    let started = wait_for(WAIT, "batchgate's Started event on the Job", || {
        events_of(c, &ns, "Job", &name)
            .into_iter()
            .find(|(r, _)| r == "Started")
            .map(|(_, m)| m)
    });
    assert_eq!(started, "Admitted by clusterQueue psc-cq");
    // Started with the flavor's node labels: its pod runs on the spot node.
    let pod = wait_for(WAIT, "the pod bound to a node", || {
        pod_of(c, &ns, &name).filter(|p| p["spec"]["nodeName"].is_string())
    });
    assert_eq!(
        pod["spec"]["nodeSelector"]["instance-type"], "spot",
        "{pod}"
    );
    assert_eq!(pod["spec"]["nodeName"], "kwok-node-2");
    wait_for(WAIT, "the queued Job complete", || {
        get(c, &["jobs", &name, "-n", &ns]).filter(|j| j["status"]["succeeded"] == 1)
    });
}

/// RFC 3339 for Unix seconds, as Event timestamps are written.
fn rfc3339(unix: u64) -> String {
    chrono::DateTime::from_timestamp(unix as i64, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Whole seconds as Go's `time.Duration` prints them (`55s`, `1m0s`).
fn go_seconds(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        _ => format!("{}m{}s", s / 60, s % 60),
    }
}

fn unix_of(v: &Value) -> f64 {
    let t = chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    t.timestamp_micros() as f64 / 1e6
}

/// An Event as the kubelet writes one (core/v1, `source.component:
/// kubelet`, the container's field path): the test plays the kubelet,
/// which KWOK nodes do not run.
fn kubelet_event(pod: &Value, reason: &str, field_path: &str, at: u64) -> String {
    let meta = &pod["metadata"];
    json!({"apiVersion": "v1", "kind": "Event",
           "metadata": {"generateName": format!("{}.", meta["name"].as_str().unwrap()),
                        "namespace": meta["namespace"]},
           "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                              "namespace": meta["namespace"], "uid": meta["uid"],
                              "fieldPath": field_path},
           "reason": reason, "message": format!("{reason} (played by the test)"),
           "source": {"component": "kubelet", "host": pod["spec"]["nodeName"]},
           "firstTimestamp": rfc3339(at), "lastTimestamp": rfc3339(at),
           "count": 1, "type": "Normal"})
    .to_string()
}

/// Upstream's pod controller: a primed pod's four timings, read from its
/// Events (the real kube-scheduler's `Scheduled`, and the kubelet's
/// container events, which the test writes as the kubelet would: KWOK runs
/// no kubelet), are scraped from `/metrics` under upstream's names and
/// told as upstream's `Metrics` and `Debug` Events, and agree with what
/// happened; the CronJob's creation counts in upstream's action counter.
#[test]
fn a_primed_pods_timings_are_scraped_and_told_as_upstream_does() {
    let e = env();
    let c = ready_env();
    let ns = namespace(c, "e2e-psc-timings");
    let action = |m: &str| {
        sample(
            m,
            "prescaledcronjoboperator_cronjob_action_total",
            &[("action", "create"), ("outcome", "success")],
        )
        .unwrap_or(0.0)
    };
    let created_before = action(&e.server.probe_get("/metrics").1);
    let (schedule, primer_at) = soon(2, 1);
    let run = primer_at + 60;
    // Running long after its run, so the pod is still there to be read.
    let pod = json!({"metadata": {"annotations": {batchgate_localcluster::POD_RUNTIME_ANNOTATION: "600s"}},
        "spec": {"containers": [{"name": "hello", "image": "busybox"}], "restartPolicy": "Never"}});
    let manifest = psc("timed", &ns, json!({"warmUpTimeMins": 1}), &schedule, pod);
    create(c, &manifest);
    wait_for(WAIT, "autogen-timed", || cronjob(c, &ns, "autogen-timed"));
    let created_after = action(&e.server.probe_get("/metrics").1);
    assert!(
        created_after > created_before,
        "the CronJob's creation counted: {created_before} → {created_after}"
    );
    let until = Duration::from_secs(primer_at.saturating_sub(unix_now()) + 120);
    let job = wait_for(until, "the primer's Job", || {
        primed_job(c, &ns, "autogen-timed")
    });
    let job_name = job["metadata"]["name"].as_str().unwrap().to_string();
    let pod = wait_for(WAIT, "the primed pod bound to a node", || {
        pod_of(c, &ns, &job_name).filter(|p| p["spec"]["nodeName"].is_string())
    });
    let pod_name = pod["metadata"]["name"].as_str().unwrap().to_string();
    let created = unix_of(&pod["metadata"]["creationTimestamp"]) as u64;
    // The kubelet: the wait container starts a second after creation; at
    // the run, the workload's image is pulled and it starts 2 s later.
    create(
        c,
        &kubelet_event(
            &pod,
            "Started",
            &format!("spec.initContainers{{{INIT}}}"),
            created + 1,
        ),
    );
    let now = unix_now();
    if now < run + 3 {
        std::thread::sleep(Duration::from_secs(run + 3 - now));
    }
    create(
        c,
        &kubelet_event(&pod, "Pulling", "spec.containers{hello}", run + 1),
    );
    create(
        c,
        &kubelet_event(&pod, "Started", "spec.containers{hello}", run + 3),
    );

    // What happened, from the cluster: the scheduler's own Event.
    let scheduled = wait_for(WAIT, "the scheduler's Scheduled event", || {
        get(
            c,
            &[
                "events",
                "-n",
                &ns,
                "--field-selector",
                &format!("involvedObject.name={pod_name},reason=Scheduled"),
            ],
        )?["items"]
            .as_array()?
            .first()
            .cloned()
    });
    let at = ["lastTimestamp", "eventTime", "firstTimestamp"]
        .iter()
        .find(|k| scheduled[**k].is_string())
        .map(|k| unix_of(&scheduled[*k]))
        .expect("the Scheduled event has a time");
    let created_exact = unix_of(&pod["metadata"]["creationTimestamp"]);
    let to_schedule = at - created_exact;
    assert!(
        (0.0..60.0).contains(&to_schedule),
        "scheduled {to_schedule} s after creation: {scheduled}"
    );
    let expected = [
        ("time_to_schedule", to_schedule),
        ("time_init_container_ran", (run - created) as f64),
        ("time_to_start_workload", 2.0),
        ("time_delay_of_workload", 3.0),
    ];
    let labels = [
        ("prescalecron", "timed"),
        ("nodepool", "noneset"),
        ("durationtype", "late"),
    ];
    let metrics = wait_for(WAIT, "the four timings on /metrics", || {
        let (_, m) = e.server.probe_get("/metrics");
        expected
            .iter()
            .all(|(n, _)| {
                sample(
                    &m,
                    &format!("prescalecronjoboperator_cronjob_{n}_count"),
                    &labels,
                ) == Some(1.0)
            })
            .then_some(m)
    });
    for (n, secs) in expected {
        let sum = sample(
            &metrics,
            &format!("prescalecronjoboperator_cronjob_{n}_sum"),
            &labels,
        )
        .unwrap();
        assert!((sum - secs).abs() < 0.01, "{n}: {sum} s, happened {secs} s");
    }
    // Told as upstream tells them: one Metrics Event per timing, then Debug.
    let told = wait_for(WAIT, "the Metrics and Debug events", || {
        let ev = events_of(c, &ns, "PreScaledCronJob", "timed");
        let metrics: Vec<String> = ev
            .iter()
            .filter(|(r, _)| r == "Metrics")
            .map(|(_, m)| m.clone())
            .collect();
        (metrics.len() == 4 && ev.iter().any(|(r, _)| r == "Debug")).then_some((metrics, ev))
    });
    let (metrics_events, all) = told;
    for (name, secs) in [
        ("timeInitContainerRan", go_seconds(run - created)),
        ("timeToStartWorkload", "2s".into()),
        ("timeDelayOfWorkload", "3s".into()),
    ] {
        let want = format!("Event {name} took {secs} on pod {pod_name}");
        assert!(
            metrics_events.contains(&want),
            "{want} in {metrics_events:?}"
        );
    }
    assert!(
        metrics_events
            .iter()
            .any(|m| m.starts_with("Event timeToSchedule took ") && m.ends_with(&pod_name)),
        "{metrics_events:?}"
    );
    assert!(
        all.contains(&(
            "Debug".into(),
            "Metrics calculated for PrescaleCronJob invocation.".into()
        )),
        "{all:?}"
    );
}
