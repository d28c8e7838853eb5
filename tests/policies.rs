//! Every shipped job-kind policy on a realistic object of its kind: the
//! defaulting patch, the pod sets and counts Kueue computes, what starting
//! and stopping the job writes, how its status reads, and — as properties —
//! that none of it loses a field batchgate does not own.

mod support;

use std::sync::Arc;

use batchgate::{
    admission::{self, object, review, Context, NoCluster, Operation, Request, Settings, Verdict},
    api::selector::LabelSelector,
    jobs::policy::{Policy, PolicySet, Progress},
    jobs::workload::{self, PodSetInfo},
};
use proptest::{collection, prelude::*};
use serde_json::{json, Map, Value};
use support::{
    arbitrary::{arb_json, arb_key},
    kinds::{self, Sample},
};

fn policies() -> PolicySet {
    PolicySet::embedded().unwrap()
}

fn policy_of(set: &PolicySet, s: &Sample) -> Arc<Policy> {
    set.find(s.group, s.version, s.kind)
        .unwrap_or_else(|| panic!("no policy for {}", s.kind))
        .clone()
}

fn settings(manage_all: bool) -> Settings {
    Settings {
        manage_jobs_without_queue_name: manage_all,
        managed_namespaces: LabelSelector::excluding_namespaces(&[
            "kube-system",
            "batchgate-system",
        ]),
    }
}

fn decide(
    set: &PolicySet,
    policy: &Policy,
    op: Operation,
    obj: &Value,
    old: Option<&Value>,
    manage_all: bool,
    mutate: bool,
) -> admission::Decision {
    let s = settings(manage_all);
    let ctx = Context {
        settings: &s,
        facts: &NoCluster,
        policies: set,
        lookups: &batchgate::admission::Read::default(),
    };
    let req = Request {
        operation: op,
        namespace: "team-a",
        object: Some(obj),
        old_object: old,
    };
    if mutate {
        admission::mutate(policy, &req, &ctx)
    } else {
        admission::validate(policy, &req, &ctx)
    }
}

fn mutated(set: &PolicySet, policy: &Policy, obj: &Value) -> Value {
    let d = decide(set, policy, Operation::Create, obj, None, false, true);
    assert_eq!(d.verdict, Verdict::Allow);
    workload::apply(obj, &d.patch).unwrap()
}

fn info(name: &str) -> PodSetInfo {
    let mut i = PodSetInfo {
        name: name.into(),
        ..PodSetInfo::default()
    };
    i.labels
        .insert("kueue.x-k8s.io/podset".into(), name.to_string());
    i.labels
        .insert("kueue.x-k8s.io/local-queue-name".into(), "research".into());
    i.node_selector
        .insert("cloud.example.com/zone".into(), "zone-a".into());
    i.tolerations
        .push(json!({"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}));
    i
}

fn infos(s: &Sample) -> Vec<PodSetInfo> {
    s.pod_sets.iter().map(|(n, _, _)| info(n)).collect()
}

#[test]
fn every_kind_has_its_policy_with_kueues_pod_sets_and_counts() {
    let set = policies();
    for s in kinds::all() {
        let policy = policy_of(&set, &s);
        assert_eq!(policy.suspend.as_str(), s.suspend, "{}", s.kind);
        let obj = s.object("train", "team-a", "research");
        let got: Vec<(String, i64, String)> = policy
            .pod_sets(&obj)
            .unwrap()
            .into_iter()
            .map(|p| (p.name, p.count, p.template.as_str().to_string()))
            .collect();
        let want: Vec<(String, i64, String)> = s
            .pod_sets
            .iter()
            .map(|(n, c, t)| (n.to_string(), *c, t.to_string()))
            .collect();
        assert_eq!(got, want, "{}", s.kind);
        // The Workload carries the same pod sets, each with its template.
        let wl = workload::for_job(
            &policy,
            &{
                let mut o = obj.clone();
                o["metadata"]["uid"] = json!("0d8a3c1e-0000-4000-8000-000000000001");
                o
            },
            &workload::priority(&policy, &obj, &workload::PriorityClasses::default()).unwrap(),
        )
        .unwrap();
        let wl_sets = wl["spec"]["podSets"].as_array().unwrap();
        assert_eq!(wl_sets.len(), s.pod_sets.len(), "{}", s.kind);
        for (ps, (name, count, ptr)) in wl_sets.iter().zip(&s.pod_sets) {
            assert_eq!(ps["name"], json!(name));
            assert_eq!(ps["count"], json!(count));
            let image = &ps["template"]["spec"]["containers"][0]["image"];
            match obj.pointer(ptr) {
                Some(t) => assert_eq!(&ps["template"]["spec"], &t["spec"], "{} {name}", s.kind),
                // RayJob's submitter: KubeRay's default pod, on the head's image.
                None => assert_eq!(image, &json!("registry.example.com/train:1.4")),
            }
        }
    }
}

#[test]
fn the_submitter_pod_set_follows_the_submission_mode() {
    let set = policies();
    let s = kinds::rayjob();
    let policy = policy_of(&set, &s);
    let mut obj = s.object("train", "team-a", "research");
    let names = |o: &Value| -> Vec<String> {
        policy
            .pod_sets(o)
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect()
    };
    assert_eq!(names(&obj).last().unwrap(), "submitter");
    obj["spec"]["submissionMode"] = json!("HTTPMode");
    assert!(!names(&obj).contains(&"submitter".to_string()));
    // KubeRay defaults an absent mode to K8sJobMode.
    obj["spec"]
        .as_object_mut()
        .unwrap()
        .remove("submissionMode");
    assert_eq!(names(&obj).last().unwrap(), "submitter");
    // A submitter template of the job's own is used as it is.
    obj["spec"]["submitterPodTemplate"] =
        json!({"spec": {"containers": [{"name": "s", "image": "own"}]}});
    let wl_sets = workload::pod_sets(&policy, &obj).unwrap();
    assert_eq!(
        wl_sets.last().unwrap().template["spec"]["containers"][0]["image"],
        "own"
    );
    let synthesized = workload::pod_sets(&policy, &s.object("t", "ns", "q")).unwrap();
    let sub = &synthesized.last().unwrap().template["spec"];
    assert_eq!(sub["containers"][0]["name"], "ray-job-submitter");
    assert_eq!(sub["containers"][0]["resources"]["requests"]["cpu"], "500m");
    assert_eq!(sub["restartPolicy"], "Never");
}

#[test]
fn defaulting_suspends_each_kind_at_its_own_switch() {
    let set = policies();
    for s in kinds::all() {
        let policy = policy_of(&set, &s);
        let obj = s.object("train", "team-a", "research");
        let after = mutated(&set, &policy, &obj);
        assert_eq!(after.pointer(s.suspend), Some(&json!(true)), "{}", s.kind);
        // Nothing else changed.
        let mut back = after.clone();
        let (parent, leaf) = s.suspend.rsplit_once('/').unwrap();
        back.pointer_mut(parent)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove(leaf);
        if parent == "/spec/runPolicy" {
            // runPolicy was there already in these samples.
            assert!(obj.pointer("/spec/runPolicy").is_some());
        }
        assert_eq!(back, obj, "{}", s.kind);
        // Without a queue name nothing is queued.
        let mut plain = obj.clone();
        plain["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove("kueue.x-k8s.io/queue-name");
        let d = decide(&set, &policy, Operation::Create, &plain, None, false, true);
        assert!(d.patch.is_empty(), "{}", s.kind);
    }
}

#[test]
fn starting_writes_every_template_and_stopping_puts_them_back() {
    let set = policies();
    for s in kinds::all() {
        let policy = policy_of(&set, &s);
        let queued = mutated(&set, &policy, &s.object("train", "team-a", "research"));
        let recorded = workload::pod_sets(&policy, &queued).unwrap();

        let ops = workload::start_patch(&policy, &queued, &infos(&s)).unwrap();
        let started = workload::apply(&queued, &ops).unwrap();
        assert_eq!(
            started.pointer(s.suspend),
            Some(&json!(false)),
            "{}",
            s.kind
        );
        for (name, _, ptr) in &s.pod_sets {
            let Some(t) = started.pointer(ptr) else {
                // Only RayJob's default submitter has no template to write.
                assert_eq!((s.kind, *name), ("RayJob", "submitter"));
                assert!(queued.pointer(ptr).is_none());
                continue;
            };
            assert_eq!(
                t["spec"]["nodeSelector"]["cloud.example.com/zone"], "zone-a",
                "{} {name}",
                s.kind
            );
            assert_eq!(
                t["metadata"]["labels"]["kueue.x-k8s.io/podset"],
                json!(name)
            );
            assert_eq!(
                t["metadata"]["labels"]["app"], "train",
                "existing labels stay"
            );
            let tol = t["spec"]["tolerations"].as_array().unwrap();
            assert_eq!(tol.len(), 2, "the flavor's toleration is appended: {tol:?}");
            assert_eq!(t["spec"]["x-future-field"], json!({"kept": true}));
        }

        let stopped =
            workload::apply(&started, &workload::suspend_patch(&policy, &started)).unwrap();
        assert_eq!(stopped.pointer(s.suspend), Some(&json!(true)));
        let restored = workload::apply(
            &stopped,
            &workload::restore_patch(&policy, &stopped, &recorded),
        )
        .unwrap();
        assert_eq!(
            restored, queued,
            "{}: stop must restore the templates",
            s.kind
        );
    }
}

#[test]
fn a_conflicting_node_selector_fails_the_start() {
    let set = policies();
    let s = kinds::mpijob();
    let policy = policy_of(&set, &s);
    let mut obj = mutated(&set, &policy, &s.object("train", "team-a", "research"));
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] =
        json!({"cloud.example.com/zone": "zone-b"});
    let err = workload::start_patch(&policy, &obj, &infos(&s))
        .unwrap_err()
        .to_string();
    assert!(err.contains("cloud.example.com/zone"), "{err}");
}

#[test]
fn status_tells_finished_and_active_per_kind() {
    let set = policies();
    let rule = |s: &Sample| policy_of(&set, s).status.clone().unwrap();
    let with_status = |s: &Sample, status: Value| {
        let mut o = s.object("t", "ns", "q");
        o["status"] = status;
        o
    };

    let js = kinds::jobset();
    let r = rule(&js);
    let done = with_status(
        &js,
        json!({"conditions": [{"type": "Completed", "status": "True", "message": "jobset completed successfully"}]}),
    );
    assert_eq!(
        r.progress(&done),
        Progress::Succeeded("jobset completed successfully".into())
    );
    let running = with_status(
        &js,
        json!({"replicatedJobsStatus": [{"name": "driver", "active": 0}, {"name": "workers", "active": 2}]}),
    );
    assert!(r.is_active(&running));
    assert_eq!(r.progress(&running), Progress::Running);
    let idle = with_status(
        &js,
        json!({"replicatedJobsStatus": [{"name": "driver", "active": 0}]}),
    );
    assert!(!r.is_active(&idle));

    for s in [kinds::pytorchjob(), kinds::mpijob(), kinds::tfjob()] {
        let r = rule(&s);
        let failed = with_status(
            &s,
            json!({"conditions": [
            {"type": "Running", "status": "False"},
            {"type": "Failed", "status": "True", "message": "worker exited"}]}),
        );
        assert_eq!(
            r.progress(&failed),
            Progress::Failed("worker exited".into()),
            "{}",
            s.kind
        );
        let active = with_status(
            &s,
            json!({"replicaStatuses": {"Master": {"active": 0}, "Worker": {"active": 1}}}),
        );
        assert!(r.is_active(&active), "{}", s.kind);
        let done = with_status(
            &s,
            json!({"replicaStatuses": {"Worker": {"succeeded": 2}},
                                          "conditions": [{"type": "Succeeded", "status": "True"}]}),
        );
        assert!(!r.is_active(&done));
        assert_eq!(r.progress(&done), Progress::Succeeded(String::new()));
    }

    let rj = kinds::rayjob();
    let r = rule(&rj);
    let ok = with_status(
        &rj,
        json!({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "message": "done"}),
    );
    assert_eq!(r.progress(&ok), Progress::Succeeded("done".into()));
    let bad = with_status(
        &rj,
        json!({"jobDeploymentStatus": "Complete", "jobStatus": "FAILED", "message": "exit 1"}),
    );
    assert_eq!(r.progress(&bad), Progress::Failed("exit 1".into()));
    let running = with_status(&rj, json!({"jobDeploymentStatus": "Running"}));
    assert_eq!(r.progress(&running), Progress::Running);
    assert!(r.is_active(&running));
    assert!(!r.is_active(&with_status(
        &rj,
        json!({"jobDeploymentStatus": "Suspended"})
    )));
    assert!(
        !r.is_active(&rj.object("t", "ns", "q")),
        "no status: nothing started"
    );

    let rc = kinds::raycluster();
    let r = rule(&rc);
    assert!(r.is_active(&with_status(&rc, json!({"state": "ready"}))));
    assert!(!r.is_active(&with_status(&rc, json!({"state": "suspended"}))));
    assert_eq!(
        r.progress(&with_status(&rc, json!({"state": "ready"}))),
        Progress::Running
    );
}

/// Kueue pkg/controller/jobs/raycluster/common_test.go (BuildPodSets):
/// "autoscaler sidecar added to head podSet with default resources when
/// in-tree autoscaling is enabled", "autoscaler sidecar uses
/// AutoscalerOptions.Resources override when set"; and a RayJob's cluster
/// the same way.
#[test]
fn a_ray_head_under_in_tree_autoscaling_counts_the_autoscaler() {
    let set = policies();
    for (s, base) in [
        (kinds::raycluster(), "/spec"),
        (kinds::rayjob(), "/spec/rayClusterSpec"),
    ] {
        let policy = policy_of(&set, &s);
        let mut obj = s.object("t", "ns", "q");
        let head = |obj: &Value| {
            let sets = batchgate::jobs::workload::pod_sets(&policy, obj).unwrap();
            let head = sets.into_iter().find(|p| p.name == "head").unwrap();
            head.template["spec"]["containers"]
                .as_array()
                .unwrap()
                .clone()
        };
        let plain = head(&obj);
        assert!(
            plain.iter().all(|c| c["name"] != "autoscaler"),
            "{} without autoscaling",
            s.kind
        );
        *obj.pointer_mut(base).unwrap() = {
            let mut spec = obj.pointer(base).unwrap().clone();
            spec["enableInTreeAutoscaling"] = json!(true);
            spec
        };
        let with = head(&obj);
        assert_eq!(with.len(), plain.len() + 1, "{}", s.kind);
        assert_eq!(
            with.last().unwrap(),
            &json!({"name": "autoscaler", "resources": {
                "requests": {"cpu": "500m", "memory": "512Mi"},
                "limits": {"cpu": "500m", "memory": "512Mi"}}}),
            "{}",
            s.kind
        );
        let mut spec = obj.pointer(base).unwrap().clone();
        spec["autoscalerOptions"] =
            json!({"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}});
        *obj.pointer_mut(base).unwrap() = spec;
        assert_eq!(
            head(&obj).last().unwrap(),
            &json!({"name": "autoscaler", "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}),
            "{}",
            s.kind
        );
    }
}

fn deny_message(d: admission::Decision) -> String {
    match d.verdict {
        Verdict::Deny(m) => m,
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[test]
fn ray_rules_read_as_kueues() {
    let set = policies();
    let s = kinds::rayjob();
    let policy = policy_of(&set, &s);
    let create = |o: &Value| decide(&set, &policy, Operation::Create, o, None, false, false);
    let good = s.object("t", "team-a", "q");
    assert_eq!(create(&good).verdict, Verdict::Allow);

    let mut both = good.clone();
    both["spec"]["clusterSelector"] = json!({"ray.io/cluster": "shared"});
    assert_eq!(
        deny_message(create(&both)),
        r#"spec.clusterSelector: Invalid value: map[string]string{"ray.io/cluster":"shared"}: a kueue managed job should not use an existing cluster"#
    );
    // On an existing cluster only: allowed, not suspended, not queued.
    let mut existing = both.clone();
    existing["spec"]
        .as_object_mut()
        .unwrap()
        .remove("rayClusterSpec");
    assert_eq!(create(&existing).verdict, Verdict::Allow);
    assert!(policy.skips(&existing));
    let d = decide(
        &set,
        &policy,
        Operation::Create,
        &existing,
        None,
        false,
        true,
    );
    assert!(d.patch.is_empty(), "{:?}", d.patch);

    let mut neither = good.clone();
    neither["spec"]
        .as_object_mut()
        .unwrap()
        .remove("rayClusterSpec");
    assert_eq!(
        deny_message(create(&neither)),
        "spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"
    );

    let mut keep = good.clone();
    keep["spec"]["shutdownAfterJobFinishes"] = json!(false);
    keep["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = json!(true);
    keep["spec"]["rayClusterSpec"]["workerGroupSpecs"][1]["groupName"] = json!("head");
    assert_eq!(
        deny_message(create(&keep)),
        "[spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after finishing, \
spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use autoscaling when workload slicing is enabled, \
spec.rayClusterSpec.workerGroupSpecs[1].groupName: Forbidden: \"head\" is reserved for the head group]"
    );

    let mut wide = good.clone();
    let worker = wide["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].clone();
    wide["spec"]["rayClusterSpec"]["workerGroupSpecs"] = Value::Array(
        (0..18)
            .map(|i| {
                let mut w = worker.clone();
                w["groupName"] = json!(format!("g{i}"));
                w
            })
            .collect(),
    );
    assert_eq!(
        deny_message(create(&wide)),
        "spec.rayClusterSpec.workerGroupSpecs: Too many: 19: must have at most 18 items"
    );

    // Not queued: Kueue leaves it to KubeRay.
    let mut unqueued = keep.clone();
    unqueued["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("kueue.x-k8s.io/queue-name");
    assert_eq!(create(&unqueued).verdict, Verdict::Allow);

    let rc = kinds::raycluster();
    let policy = policy_of(&set, &rc);
    let mut o = rc.object("t", "team-a", "q");
    o["spec"]["enableInTreeAutoscaling"] = json!(true);
    let d = decide(&set, &policy, Operation::Create, &o, None, false, false);
    // Kueue v0.19's words for a RayCluster (a RayJob keeps the older ones).
    assert_eq!(
        deny_message(d),
        "spec.enableInTreeAutoscaling: Invalid value: true: a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the ElasticJobsViaWorkloadSlices feature gate and set the \"kueue.x-k8s.io/elastic-job\": \"true\" annotation"
    );
}

#[test]
fn queue_name_is_immutable_while_running_for_every_kind() {
    let set = policies();
    for s in kinds::all() {
        let policy = policy_of(&set, &s);
        let mut old = s.object("t", "team-a", "research");
        let started = workload::apply(
            &old,
            &workload::start_patch(&policy, &old, &infos(&s)).unwrap(),
        )
        .unwrap();
        old = started;
        let mut new = old.clone();
        new["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("other");
        let d = decide(
            &set,
            &policy,
            Operation::Update,
            &new,
            Some(&old),
            false,
            false,
        );
        assert_eq!(
            deny_message(d),
            r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable"#,
            "{}",
            s.kind
        );
    }
}

// ---- properties -------------------------------------------------------

/// Unknown fields spread over every object node of `v`: node `i` (in
/// depth-first order) gets `extras[i % len]` when `mask` has bit `i % 64`.
/// String maps (labels, annotations, node selectors) only get strings, so
/// they are left as they are.
fn sprinkle(v: &mut Value, extras: &[Map<String, Value>], mask: u64, i: &mut usize) {
    match v {
        Value::Object(m) => {
            let here = *i;
            *i += 1;
            for (k, child) in m.iter_mut() {
                if !matches!(k.as_str(), "labels" | "annotations" | "nodeSelector") {
                    sprinkle(child, extras, mask, i);
                }
            }
            if !extras.is_empty() && mask & (1 << (here % 64)) != 0 {
                for (k, x) in &extras[here % extras.len()] {
                    m.entry(k.clone()).or_insert_with(|| x.clone());
                }
            }
        }
        Value::Array(a) => {
            for child in a {
                sprinkle(child, extras, mask, i);
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
struct Case {
    kind: usize,
    obj: Value,
    manage_all: bool,
    queued: bool,
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        0..kinds::all().len(),
        collection::vec(
            collection::btree_map(arb_key(), arb_json(), 1..3)
                .prop_map(|m| m.into_iter().collect::<Map<_, _>>()),
            1..6,
        ),
        any::<u64>(),
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(kind, extras, mask, manage_all, queued, suspend)| {
            let s = &kinds::all()[kind];
            let mut obj = s.object("train", "team-a", "research");
            if !queued {
                obj["metadata"]["labels"]
                    .as_object_mut()
                    .unwrap()
                    .remove("kueue.x-k8s.io/queue-name");
            }
            let mut i = 0;
            sprinkle(&mut obj, &extras, mask, &mut i);
            if let Some(b) = suspend {
                let (parent, leaf) = s.suspend.rsplit_once('/').unwrap();
                if let Some(Value::Object(p)) = obj.pointer_mut(parent) {
                    p.insert(leaf.to_string(), json!(b));
                }
            }
            Case {
                kind,
                obj,
                manage_all,
                queued,
            }
        })
}

/// `after` equals `before` but for the leaves in `owned` (which may also
/// have been created, with their missing parents).
fn differs_only_at(before: &Value, after: &Value, owned: &[String]) -> Result<(), String> {
    let mut a = after.clone();
    let mut b = before.clone();
    for o in owned {
        for v in [&mut a, &mut b] {
            let (parent, leaf) = o.rsplit_once('/').unwrap();
            if let Some(Value::Object(p)) = v.pointer_mut(parent) {
                p.remove(&leaf.replace("~1", "/").replace("~0", "~"));
            }
        }
    }
    // Parents created only to hold owned leaves are now empty objects.
    prune_empty_created(&mut a, &b);
    if a == b {
        Ok(())
    } else {
        Err(format!("before: {before}\nafter:  {after}"))
    }
}

fn prune_empty_created(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(am), Value::Object(bm)) => {
            am.retain(|k, v| bm.contains_key(k) || !matches!(v, Value::Object(m) if m.is_empty()));
            for (k, v) in am.iter_mut() {
                if let Some(bv) = bm.get(k) {
                    prune_empty_created(v, bv);
                }
            }
        }
        (Value::Array(aa), Value::Array(ba)) => {
            for (x, y) in aa.iter_mut().zip(ba) {
                prune_empty_created(x, y);
            }
        }
        _ => {}
    }
}

fn escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Defaulting a job of any kind, however many unknown fields it carries,
    /// adds or replaces only the suspend switch and the queue/priority labels.
    #[test]
    fn defaulting_changes_only_owned_fields(case in arb_case()) {
        let set = policies();
        let s = &kinds::all()[case.kind];
        let policy = policy_of(&set, s);
        let d = decide(&set, &policy, Operation::Create, &case.obj, None, case.manage_all, true);
        prop_assert_eq!(&d.verdict, &Verdict::Allow);
        for op in &d.patch {
            prop_assert_eq!(op.op, "add");
        }
        let after = workload::apply(&case.obj, &d.patch).unwrap();
        let owned = vec![
            s.suspend.to_string(),
            "/metadata/labels/kueue.x-k8s.io~1queue-name".to_string(),
            "/metadata/labels/kueue.x-k8s.io~1priority-class".to_string(),
        ];
        if let Err(e) = differs_only_at(&case.obj, &after, &owned) {
            return Err(TestCaseError::fail(e));
        }
        if case.queued || case.manage_all {
            prop_assert_eq!(after.pointer(s.suspend), Some(&json!(true)));
        }
    }

    /// Starting adds only the pod-set info to each template and flips the
    /// switch; stopping then restoring gives back exactly the queued object.
    #[test]
    fn start_then_stop_is_lossless(case in arb_case()) {
        let set = policies();
        let s = &kinds::all()[case.kind];
        let policy = policy_of(&set, s);
        let recorded = workload::pod_sets(&policy, &case.obj).unwrap();
        let infos = infos(s);
        let started = workload::apply(&case.obj, &workload::start_patch(&policy, &case.obj, &infos).unwrap()).unwrap();
        let mut owned = vec![s.suspend.to_string()];
        for ((_, _, ptr), info) in s.pod_sets.iter().zip(&infos) {
            for k in info.labels.keys() {
                owned.push(format!("{ptr}/metadata/labels/{}", escape(k)));
            }
            for k in info.node_selector.keys() {
                owned.push(format!("{ptr}/spec/nodeSelector/{}", escape(k)));
            }
            owned.push(format!("{ptr}/spec/tolerations"));
        }
        // Tolerations are appended to: the originals stay first, in order.
        for (_, _, ptr) in &s.pod_sets {
            if let Some(Value::Array(orig)) = case.obj.pointer(&format!("{ptr}/spec/tolerations")) {
                let now = started.pointer(&format!("{ptr}/spec/tolerations")).and_then(Value::as_array).unwrap();
                prop_assert_eq!(&now[..orig.len()], &orig[..]);
            }
        }
        if let Err(e) = differs_only_at(&case.obj, &started, &owned) {
            return Err(TestCaseError::fail(e));
        }
        let stopped = workload::apply(&started, &workload::suspend_patch(&policy, &started)).unwrap();
        let restored = workload::apply(&stopped, &workload::restore_patch(&policy, &stopped, &recorded)).unwrap();
        let mut expected = case.obj.clone();
        let (parent, leaf) = s.suspend.rsplit_once('/').unwrap();
        if let Some(Value::Object(p)) = expected.pointer_mut(parent) {
            p.insert(leaf.to_string(), json!(true));
        }
        prop_assert_eq!(restored, expected);
    }

    /// A review read sparsely (only what the rules look at) is decided as
    /// the whole object would be, for every kind.
    #[test]
    fn sparse_reading_decides_as_the_whole_object_would(case in arb_case(), old in arb_case()) {
        let set = policies();
        let s = &kinds::all()[case.kind];
        let policy = policy_of(&set, s);
        let interest = object::interest(&set);
        let old_obj = if old.kind == case.kind { old.obj.clone() } else { case.obj.clone() };
        for (mutate, op, old) in [
            (true, "CREATE", None),
            (false, "CREATE", None),
            (false, "UPDATE", Some(&old_obj)),
        ] {
            let mut request = json!({
                "uid": "p", "kind": {"group": s.group, "version": s.version, "kind": s.kind},
                "operation": op, "namespace": "team-a", "object": case.obj,
            });
            if let Some(o) = old {
                request["oldObject"] = o.clone();
            }
            let body = serde_json::to_vec(&json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request,
            })).unwrap();
            let sparse = review::parse(&body, &interest).unwrap();
            let operation = if op == "CREATE" { Operation::Create } else { Operation::Update };
            let from_sparse = decide(&set, &policy, operation, sparse.object.as_ref().unwrap(),
                                     sparse.old_object.as_ref(), case.manage_all, mutate);
            let from_whole = decide(&set, &policy, operation, &case.obj, old, case.manage_all, mutate);
            prop_assert_eq!(from_sparse, from_whole, "{} {}", s.kind, op);
        }
    }
}

/// waitForPodsReady per kind, as Kueue v0.19.2's integrations answer
/// `PodsReady`: the JobSet counts ready and succeeded replicated jobs
/// against its replicas (test/integration/singlecluster/controller/jobs/
/// jobset/jobset_controller_test.go, "Single job at different stages of
/// progress towards completion": "No progress" not ready, "Running
/// JobSet" with 1 + (2 ready, 1 succeeded) of 1 + 3 ready); MPIJob and
/// the Kubeflow jobs by their `Running` condition (mpijob_controller.go,
/// kubeflowjob_controller.go); RayCluster and RayJob by the cluster state
/// `ready` (raycluster_controller.go, rayjob_controller.go).
#[test]
fn pods_ready_per_kind_reads_as_kueues() {
    let set = policies();
    let rule = |s: &Sample| policy_of(&set, s).status.clone().unwrap();
    let with_status = |s: &Sample, status: Value| {
        let mut o = s.object("t", "ns", "q");
        o["status"] = status;
        o
    };
    let mut js = kinds::jobset();
    js.body_mut()["spec"]["replicatedJobs"] = json!([
        {"name": "replicated-job-1", "replicas": 1, "template": {"spec": {"parallelism": 1, "completions": 1, "template": {"spec": {"containers": []}}}}},
        {"name": "replicated-job-2", "replicas": 3, "template": {"spec": {"parallelism": 1, "completions": 1, "template": {"spec": {"containers": []}}}}},
    ]);
    let r = rule(&js);
    // The pod count (here 4 as well) is not what a JobSet is measured by.
    let pods = 99;
    assert_eq!(
        r.pods_ready(&js.object("t", "ns", "q"), pods),
        Some(false),
        "no progress"
    );
    let running = with_status(
        &js,
        json!({"replicatedJobsStatus": [
            {"name": "replicated-job-1", "ready": 1, "succeeded": 0},
            {"name": "replicated-job-2", "ready": 2, "succeeded": 1}]}),
    );
    assert_eq!(r.pods_ready(&running, pods), Some(true), "running JobSet");
    let short = with_status(
        &js,
        json!({"replicatedJobsStatus": [
            {"name": "replicated-job-1", "ready": 1, "succeeded": 0},
            {"name": "replicated-job-2", "ready": 2, "succeeded": 0}]}),
    );
    assert_eq!(r.pods_ready(&short, pods), Some(false));

    for s in [
        kinds::mpijob(),
        kinds::pytorchjob(),
        kinds::tfjob(),
        kinds::paddlejob(),
        kinds::xgboostjob(),
        kinds::jaxjob(),
    ] {
        let r = rule(&s);
        let created = with_status(
            &s,
            json!({"conditions": [{"type": "Created", "status": "True"}]}),
        );
        assert_eq!(r.pods_ready(&created, 4), Some(false), "{}", s.kind);
        let running = with_status(
            &s,
            json!({"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]}),
        );
        assert_eq!(r.pods_ready(&running, 4), Some(true), "{}", s.kind);
        let stopped = with_status(
            &s,
            json!({"conditions": [{"type": "Running", "status": "False"}]}),
        );
        assert_eq!(r.pods_ready(&stopped, 4), Some(false), "{}", s.kind);
    }

    let rc = kinds::raycluster();
    let r = rule(&rc);
    assert_eq!(
        r.pods_ready(&with_status(&rc, json!({"state": "ready"})), 3),
        Some(true)
    );
    assert_eq!(
        r.pods_ready(&with_status(&rc, json!({"state": "suspended"})), 3),
        Some(false)
    );
    let rj = kinds::rayjob();
    let r = rule(&rj);
    assert_eq!(
        r.pods_ready(
            &with_status(&rj, json!({"rayClusterStatus": {"state": "ready"}})),
            3
        ),
        Some(true)
    );
    assert_eq!(
        r.pods_ready(
            &with_status(&rj, json!({"jobDeploymentStatus": "Initializing"})),
            3
        ),
        Some(false)
    );

    // SparkApplication (sparkapplication_controller_test.go, "PodsReady
    // stays False/WaitForStart while AppState=Running but no executors
    // reported ready", "PodsReady becomes True/Started after AppState=Running
    // and all executors reach Running"): the driver running and every
    // requested executor running or completed.
    let spark = set
        .find("sparkoperator.k8s.io", "v1beta2", "SparkApplication")
        .unwrap()
        .status
        .clone()
        .unwrap();
    let app = |instances: Value, status: Value| json!({"spec": {"executor": {"instances": instances}}, "status": status});
    let running = json!({"applicationState": {"state": "RUNNING"}});
    assert_eq!(
        spark.pods_ready(&app(json!(2), running.clone()), 3),
        Some(false),
        "driver only"
    );
    let all = json!({"applicationState": {"state": "RUNNING"},
                     "executorState": {"a-exec-1": "RUNNING", "a-exec-2": "RUNNING"}});
    assert_eq!(
        spark.pods_ready(&app(json!(2), all.clone()), 3),
        Some(true),
        "all executors"
    );
    let one = json!({"applicationState": {"state": "RUNNING"},
                     "executorState": {"a-exec-1": "COMPLETED", "a-exec-2": "PENDING"}});
    assert_eq!(
        spark.pods_ready(&app(json!(2), one), 3),
        Some(false),
        "one pending"
    );
    let submitted = json!({"applicationState": {"state": "SUBMITTED"},
                           "executorState": {"a-exec-1": "RUNNING", "a-exec-2": "RUNNING"}});
    assert_eq!(
        spark.pods_ready(&app(json!(2), submitted), 3),
        Some(false),
        "driver not running"
    );
    assert_eq!(
        spark.pods_ready(&app(Value::Null, running), 3),
        Some(true),
        "no executors asked"
    );

    // The Job still counts its pods: ready plus succeeded reach them.
    let job = set
        .find("batch", "v1", "Job")
        .unwrap()
        .status
        .clone()
        .unwrap();
    let j = |status: Value| json!({"spec": {}, "status": status});
    assert_eq!(
        job.pods_ready(&j(json!({"ready": 2, "succeeded": 1})), 3),
        Some(true)
    );
    assert_eq!(job.pods_ready(&j(json!({"ready": 2})), 3), Some(false));
}

/// Dynamic reclaim for a JobSet, as Kueue v0.19.2's JobSet
/// `ReclaimablePods` (test/integration/singlecluster/controller/jobs/
/// jobset/jobset_controller_test.go, "Should allow reclaim of resources
/// that are no longer needed"): replicated-job-1 (2 replicas of
/// min(parallelism 4, completions 8) = 4 pods) with 2 succeeded gives
/// back 8 pods, replicated-job-2 (3 × 4) with 1 succeeded gives back 4;
/// nothing before any succeeds, nor for a count past the replicas.
#[test]
fn a_jobsets_succeeded_replicated_jobs_are_reclaimable() {
    let set = policies();
    let mut js = kinds::jobset();
    js.body_mut()["spec"]["replicatedJobs"] = json!([
        {"name": "replicated-job-1", "replicas": 2, "template": {"spec": {"parallelism": 4, "completions": 8, "template": {"spec": {"containers": []}}}}},
        {"name": "replicated-job-2", "replicas": 3, "template": {"spec": {"parallelism": 4, "completions": 4, "template": {"spec": {"containers": []}}}}},
    ]);
    let rule = policy_of(&set, &js)
        .status
        .clone()
        .unwrap()
        .reclaimable_pods
        .unwrap();
    let mut o = js.object("t", "ns", "q");
    assert!(rule.reclaimable(&o).is_empty(), "no status yet");
    o["status"] = json!({"replicatedJobsStatus": [
        {"name": "replicated-job-1", "succeeded": 2},
        {"name": "replicated-job-2", "succeeded": 1}]});
    assert_eq!(
        rule.reclaimable(&o),
        [
            ("replicated-job-1".to_string(), 8),
            ("replicated-job-2".to_string(), 4)
        ]
    );
    o["status"] = json!({"replicatedJobsStatus": [
        {"name": "replicated-job-1", "succeeded": 0},
        {"name": "replicated-job-2", "succeeded": 4}]});
    assert!(rule.reclaimable(&o).is_empty());
}

/// Kueue v0.19.2 `rayservice_controller_test.go`: `TestPodSets` (the cases
/// without workload slicing; those with it are in
/// src/jobs/autoscaling/tests.rs), `TestIsSuspended`, `TestIsActive`,
/// `TestPodsReady`, `TestGVK`, each case by its name.
#[test]
fn a_rayservice_reads_as_kueues() {
    let set = policies();
    let policy = set.find("ray.io", "v1", "RayService").unwrap().clone();
    assert_eq!(
        (
            policy.name.as_str(),
            policy.target.group.as_str(),
            policy.target.version.as_str(),
            policy.target.kind.as_str()
        ),
        ("ray.io/rayservice", "ray.io", "v1", "RayService"),
        "TestGVK"
    );
    let service = |cluster: Value| {
        json!({"apiVersion": "ray.io/v1", "kind": "RayService",
               "metadata": {"name": "rayservice", "namespace": "ns"},
               "spec": {"rayClusterConfig": cluster}})
    };
    let c = |name: &str| json!({"name": name});
    let sets = |obj: &Value| -> Vec<(String, i64, Value)> {
        workload::pod_sets(&policy, obj)
            .unwrap()
            .into_iter()
            .map(|p| (p.name, p.count, p.template))
            .collect()
    };
    let spec = |containers: Value| json!({"spec": {"containers": containers}});

    // "no annotations"
    let plain = service(json!({
        "headGroupSpec": {"template": {"spec": {"containers": [c("head_c")]}}},
        "workerGroupSpecs": [
            {"groupName": "group1", "template": {"spec": {"containers": [c("group1_c")]}}},
            {"groupName": "group2", "replicas": 3, "template": {"spec": {"containers": [c("group2_c")]}}}]}));
    assert_eq!(
        sets(&plain),
        vec![
            ("head".into(), 1, spec(json!([c("head_c")]))),
            ("group1".into(), 1, spec(json!([c("group1_c")]))),
            ("group2".into(), 3, spec(json!([c("group2_c")]))),
        ],
        "no annotations"
    );

    // "with required topology annotation"
    let block = json!({"kueue.x-k8s.io/podset-required-topology": "cloud.com/block"});
    let tas = service(json!({
        "headGroupSpec": {"template": {"metadata": {"annotations": block},
                                       "spec": {"containers": [c("head_c")]}}},
        "workerGroupSpecs": [{"groupName": "group1",
            "template": {"metadata": {"annotations": block}, "spec": {"containers": [c("group1_c")]}}}]}));
    let mut tas = tas;
    tas["metadata"]["uid"] = json!("0d8a3c1e-0000-4000-8000-000000000002");
    let prio = workload::priority(&policy, &tas, &workload::PriorityClasses::default()).unwrap();
    let body = workload::for_job(&policy, &tas, &prio).unwrap();
    let topology: Vec<&Value> = body["spec"]["podSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["topologyRequest"]["required"])
        .collect();
    assert_eq!(
        topology,
        [&json!("cloud.com/block"), &json!("cloud.com/block")],
        "with required topology annotation: {body}"
    );

    // "with NumOfHosts > 1": 2 replicas × 3 hosts.
    let hosts = service(json!({
        "headGroupSpec": {"template": {"spec": {"containers": [c("head_c")]}}},
        "workerGroupSpecs": [{"groupName": "group1", "replicas": 2, "numOfHosts": 3,
            "template": {"spec": {"containers": [c("group1_c")]}}}]}));
    assert_eq!(
        sets(&hosts).iter().map(|p| p.1).collect::<Vec<_>>(),
        [1, 6],
        "with NumOfHosts > 1"
    );

    // "with gcs fault tolerance": KubeRay's Redis cleanup Job counted in
    // the head's Ray container.
    let ft = service(json!({
        "gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
        "headGroupSpec": {"template": {"metadata": {"labels": {"ray.io/cluster": "rayservice"}},
            "spec": {"containers": [{"name": "head_c", "image": "rayproject/ray:2.0.0"}]}}},
        "workerGroupSpecs": [{"groupName": "group1", "replicas": 1,
            "template": {"spec": {"containers": [c("group1_c")]}}}]}));
    assert_eq!(
        sets(&ft),
        vec![
            (
                "head".into(),
                1,
                json!({"metadata": {"labels": {"ray.io/cluster": "rayservice"}},
                       "spec": {"containers": [{"name": "head_c", "image": "rayproject/ray:2.0.0",
                           "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}}]}})
            ),
            ("group1".into(), 1, spec(json!([c("group1_c")]))),
        ],
        "with gcs fault tolerance"
    );

    // TestIsSuspended: "not suspended", "suspended", "suspend is nil".
    let suspend = |v: Option<bool>| {
        let mut o = plain.clone();
        if let Some(b) = v {
            o["spec"]["rayClusterConfig"]["suspend"] = json!(b);
        }
        batchgate::jobs::machine::suspended(&policy, &o)
    };
    assert_eq!(
        (suspend(Some(false)), suspend(Some(true)), suspend(None)),
        (false, true, false),
        "TestIsSuspended"
    );

    // TestIsActive and TestPodsReady: the Ready condition True, False, absent.
    let rule = policy.status.clone().unwrap();
    let with = |ready: Option<&str>| {
        let mut o = plain.clone();
        if let Some(s) = ready {
            o["status"] = json!({"conditions": [{"type": "Ready", "status": s}]});
        }
        o
    };
    for (status, want) in [(Some("True"), true), (Some("False"), false), (None, false)] {
        let o = with(status);
        assert_eq!(rule.is_active(&o), want, "TestIsActive {status:?}");
        assert_eq!(
            rule.pods_ready(&o, 5),
            Some(want),
            "TestPodsReady {status:?}"
        );
        // A service never finishes.
        assert_eq!(rule.progress(&o), Progress::Running);
    }
}

/// Kueue's `accountForRedisCleanupInHeadPodSet` for every Ray kind: under
/// GCS fault tolerance (the `ray.io/ft-enabled` annotation, any case, or
/// `gcsFaultToleranceOptions`) the head's first container asks for at
/// least KubeRay's Redis cleanup Job (200m, 256Mi), each quantity the
/// larger of the two; without a container the pod sets cannot be built.
#[test]
fn a_ray_head_under_gcs_fault_tolerance_counts_the_redis_cleanup() {
    let set = policies();
    for (s, base) in [
        (kinds::raycluster(), "/spec"),
        (kinds::rayjob(), "/spec/rayClusterSpec"),
        (kinds::rayservice(), "/spec/rayClusterConfig"),
    ] {
        let policy = policy_of(&set, &s);
        let head_requests = |obj: &Value| {
            workload::pod_sets(&policy, obj)
                .unwrap()
                .into_iter()
                .find(|p| p.name == "head")
                .unwrap()
                .template["spec"]["containers"][0]["resources"]["requests"]
                .clone()
        };
        let obj = s.object("t", "ns", "q");
        // The sample's head asks for 100m and 64Mi.
        assert_eq!(
            head_requests(&obj),
            json!({"cpu": "100m", "memory": "64Mi"}),
            "{} without fault tolerance",
            s.kind
        );
        let mut annotated = obj.clone();
        annotated["metadata"]["annotations"]["ray.io/ft-enabled"] = json!("TRUE");
        assert_eq!(
            head_requests(&annotated),
            json!({"cpu": "200m", "memory": "256Mi"}),
            "{} annotated",
            s.kind
        );
        let mut options = obj.clone();
        options.pointer_mut(base).unwrap()["gcsFaultToleranceOptions"] =
            json!({"redisAddress": "redis:6379"});
        let head = format!("{base}/headGroupSpec/template/spec/containers/0/resources/requests");
        *options.pointer_mut(&head).unwrap() =
            json!({"cpu": "1", "memory": "100Mi", "nvidia.com/gpu": "1"});
        assert_eq!(
            head_requests(&options),
            json!({"cpu": "1", "memory": "256Mi", "nvidia.com/gpu": "1"}),
            "{} with gcsFaultToleranceOptions",
            s.kind
        );
        let mut off = obj.clone();
        off["metadata"]["annotations"]["ray.io/ft-enabled"] = json!("false");
        assert_eq!(
            head_requests(&off)["cpu"],
            json!("100m"),
            "{} annotated false",
            s.kind
        );
        let mut empty = options.clone();
        *empty
            .pointer_mut(&format!("{base}/headGroupSpec/template/spec/containers"))
            .unwrap() = json!([]);
        let err = workload::pod_sets(&policy, &empty).unwrap_err().to_string();
        assert!(
            err.contains("cannot account for Redis cleanup resources: head pod template must include the Ray container"),
            "{} without a container: {err}",
            s.kind
        );
    }
}
