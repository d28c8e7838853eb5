//! One test per upstream webhook rule (`internal/webhook/appwrapper_webhook_test.go`
//! and the rules it covers), with upstream's field paths and messages.

use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::{
    admission::entitlement::{OnError, Outcome},
    admission::{
        family::Hook,
        review::UserInfo,
        router::{Reviewed, Router},
        ClusterFacts, Context, NoCluster, Request, Settings as Core,
    },
    api::selector::LabelSelector,
    cluster::discovery::ResourceNames,
    jobs::policy::PolicySet,
};

const NS: &str = "default";

fn core() -> Core {
    Core {
        manage_jobs_without_queue_name: false,
        managed_namespaces: LabelSelector::excluding_namespaces(&["kube-system"]),
    }
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "busybox", "image": "quay.io/project-codeflare/busybox:1.36",
                                    "command": ["sh", "-c", "sleep 10"],
                                    "resources": {"requests": {"cpu": 1}}}]}})
}

fn pod_template() -> Value {
    json!({"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}})
}

fn deployment(replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}},
                    "template": {"metadata": {"labels": {"app": "d"}}, "spec": pod_template()["spec"]}}})
}

fn service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"selector": {"app": "d"}, "ports": [{"port": 80}]}})
}

fn job(parallelism: i64, completions: i64) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": parallelism, "completions": completions, "template": pod_template()}})
}

fn jobset() -> Value {
    let rj = |name: &str, replicas: i64, parallelism: i64| {
        json!({"name": name, "replicas": replicas,
               "template": {"spec": {"parallelism": parallelism, "completions": parallelism,
                                     "template": pod_template()}}})
    };
    json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
           "spec": {"replicatedJobs": [rj("driver", 1, 1), rj("workers", 2, 2)]}})
}

fn pytorch_job() -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt"},
           "spec": {"pytorchReplicaSpecs": {
               "Master": {"replicas": 1, "template": pod_template()},
               "Worker": {"replicas": 4, "template": pod_template()}}}})
}

fn ray_cluster_spec() -> Value {
    json!({"headGroupSpec": {"template": pod_template()},
           "workerGroupSpecs": [{"groupName": "w", "replicas": 3, "template": pod_template()}]})
}

fn ray_cluster() -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
           "spec": ray_cluster_spec()})
}

fn ray_job() -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj"},
           "spec": {"rayClusterSpec": ray_cluster_spec()}})
}

fn component(template: Value) -> Value {
    json!({"template": template})
}

fn declared(template: Value, pod_sets: Value) -> Value {
    json!({"template": template, "podSets": pod_sets})
}

fn aw(components: Vec<Value>) -> Value {
    json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
           "metadata": {"name": "aw", "namespace": NS,
                        "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
           "spec": {"components": components}})
}

fn ctx_validate(op: Operation, obj: &Value, old: Option<&Value>) -> Decision {
    let policies = PolicySet::embedded().unwrap();
    let settings = core();
    let ctx = Context {
        settings: &settings,
        facts: &NoCluster,
        policies: &policies,
        lookups: &crate::admission::Read::default(),
    };
    validate(
        &Request {
            operation: op,
            namespace: NS,
            object: Some(obj),
            old_object: old,
        },
        &ctx,
    )
}

fn create(obj: &Value) -> Result<(), String> {
    match ctx_validate(Operation::Create, obj, None).verdict {
        Verdict::Allow => Ok(()),
        Verdict::Deny(m) | Verdict::Malformed(m) => Err(m),
    }
}

fn update(old: &Value, new: &Value) -> Result<(), String> {
    match ctx_validate(Operation::Update, new, Some(old)).verdict {
        Verdict::Allow => Ok(()),
        Verdict::Deny(m) | Verdict::Malformed(m) => Err(m),
    }
}

fn denied(obj: &Value) -> String {
    create(obj).expect_err("expected a denial")
}

// ------------------------------------------------------------ defaulting

struct DefaultQueue;
impl ClusterFacts for DefaultQueue {
    fn namespace_matches(&self, ns: &str, sel: &LabelSelector) -> bool {
        NoCluster.namespace_matches(ns, sel)
    }
    fn default_local_queue_exists(&self, _: &str) -> bool {
        true
    }
    fn default_priority_class_exists(&self) -> bool {
        false
    }
}

fn mutated(obj: &Value, user: &UserInfo, settings: &Settings, facts: &dyn ClusterFacts) -> Value {
    let policies = PolicySet::embedded().unwrap();
    let core = core();
    let ctx = Context {
        settings: &core,
        facts,
        policies: &policies,
        lookups: &crate::admission::Read::default(),
    };
    let d = mutate(
        &Request {
            operation: Operation::Create,
            namespace: NS,
            object: Some(obj),
            old_object: None,
        },
        user,
        settings,
        &ctx,
    );
    assert_eq!(d.verdict, Verdict::Allow);
    let mut out = obj.clone();
    let ops: json_patch::Patch =
        serde_json::from_value(serde_json::to_value(&d.patch).unwrap()).unwrap();
    json_patch::patch(&mut out, &ops).unwrap();
    out
}

fn user(name: &str, uid: &str) -> UserInfo {
    UserInfo {
        username: name.into(),
        uid: uid.into(),
        ..UserInfo::default()
    }
}

fn labels(v: &Value) -> &Value {
    &v["metadata"]["labels"]
}

#[test]
fn d1_the_default_queue_name_is_injected_when_missing() {
    let mut obj = aw(vec![component(pod("p"))]);
    obj["metadata"]["labels"] = json!({});
    let settings = Settings {
        default_queue_name: Some("system-default-queue".into()),
        ..Settings::default()
    };
    let out = mutated(&obj, &user("alice", "1"), &settings, &NoCluster);
    assert_eq!(
        labels(&out)["kueue.x-k8s.io/queue-name"],
        "system-default-queue"
    );
    // Queued, so suspended (Kueue's defaulting sees the injected name).
    assert_eq!(out["spec"]["suspend"], true);
}

/// Every LocalQueue is MultiKueue's.
struct MultiKueueQueues;
impl ClusterFacts for MultiKueueQueues {
    fn namespace_matches(&self, ns: &str, sel: &LabelSelector) -> bool {
        NoCluster.namespace_matches(ns, sel)
    }
    fn default_local_queue_exists(&self, _: &str) -> bool {
        false
    }
    fn default_priority_class_exists(&self) -> bool {
        false
    }
    fn multikueue_local_queue(&self, _: &str, _: &str) -> bool {
        true
    }
}

/// Kueue's AppWrapper webhook (its `BaseWebhook`) hands an AppWrapper
/// queued to a MultiKueue ClusterQueue to MultiKueue, unless another
/// controller than AppWrapper's is named.
#[test]
fn d_an_appwrapper_in_a_multikueue_queue_is_managed_by_multikueue() {
    let mut obj = aw(vec![component(pod("p"))]);
    obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("mk");
    let settings = Settings::default();
    let out = mutated(&obj, &user("alice", "1"), &settings, &MultiKueueQueues);
    assert_eq!(out["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
    let out = mutated(&obj, &user("alice", "1"), &settings, &NoCluster);
    assert!(out["spec"]["managedBy"].is_null(), "{out}");
    obj["spec"]["managedBy"] = json!("example.com/other");
    let out = mutated(&obj, &user("alice", "1"), &settings, &MultiKueueQueues);
    assert_eq!(out["spec"]["managedBy"], "example.com/other");
}

#[test]
fn d2_a_queue_name_the_user_supplied_is_kept() {
    let mut obj = aw(vec![component(pod("p"))]);
    obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("user-provided-queue");
    let settings = Settings {
        default_queue_name: Some("system-default-queue".into()),
        ..Settings::default()
    };
    let out = mutated(&obj, &user("alice", "1"), &settings, &NoCluster);
    assert_eq!(
        labels(&out)["kueue.x-k8s.io/queue-name"],
        "user-provided-queue"
    );
}

#[test]
fn d3_user_name_and_id_are_set_from_the_requester_overwriting_the_users() {
    let mut obj = aw(vec![component(pod("p"))]);
    obj["metadata"]["labels"]["workload.codeflare.dev/user"] = json!("bad");
    obj["metadata"]["labels"]["workload.codeflare.dev/userid"] = json!("bad");
    let out = mutated(
        &obj,
        &user(
            "system:serviceaccount:default:limited-user",
            "8da0fcfe-6d7f-4f44-b433-d91d22cc1b8c",
        ),
        &Settings::default(),
        &NoCluster,
    );
    assert_eq!(
        labels(&out)["workload.codeflare.dev/user"],
        "system_serviceaccount_default_limited-user"
    );
    assert_eq!(
        labels(&out)["workload.codeflare.dev/userid"],
        "8da0fcfe-6d7f-4f44-b433-d91d22cc1b8c"
    );
}

#[test]
fn labels_are_created_when_the_object_has_none() {
    let mut obj = aw(vec![component(pod("p"))]);
    obj["metadata"].as_object_mut().unwrap().remove("labels");
    let out = mutated(&obj, &user("bob", "7"), &Settings::default(), &DefaultQueue);
    assert_eq!(
        labels(&out),
        &json!({"kueue.x-k8s.io/queue-name": "default",
                "workload.codeflare.dev/user": "bob", "workload.codeflare.dev/userid": "7"})
    );
    assert_eq!(out["spec"]["suspend"], true);
}

#[test]
fn an_unqueued_appwrapper_is_not_suspended() {
    let mut obj = aw(vec![component(pod("p"))]);
    obj["metadata"]["labels"] = json!({});
    let out = mutated(&obj, &user("bob", "7"), &Settings::default(), &NoCluster);
    assert!(out["spec"].get("suspend").is_none());
    // Explicitly running and queued: suspended.
    let mut obj = aw(vec![component(pod("p"))]);
    obj["spec"]["suspend"] = json!(false);
    let out = mutated(&obj, &user("bob", "7"), &Settings::default(), &NoCluster);
    assert_eq!(out["spec"]["suspend"], true);
}

#[test]
fn sanitize_label_as_upstream() {
    assert_eq!(
        sanitize_label("IAM#tardieu@us.ibm.com"),
        "IAM_tardieu_us.ibm.com"
    );
    assert_eq!(sanitize_label("system:admin"), "system_admin");
    assert_eq!(sanitize_label("--_.x.-_"), "x");
    assert_eq!(sanitize_label(""), "");
    assert_eq!(sanitize_label("ünï"), "n");
    let long = "a".repeat(62) + "@bcdef";
    assert_eq!(sanitize_label(&long), "a".repeat(62));
    let long = "a".repeat(70);
    assert_eq!(sanitize_label(&long).len(), 63);
    // A character cut at byte 63 leaves no partial `_` behind.
    let cut = "a".repeat(62) + "é";
    assert_eq!(sanitize_label(&cut), "a".repeat(62));
}

// ------------------------------------------------------ structural checks

#[test]
fn s1_zero_components_are_rejected() {
    assert_eq!(
        denied(&aw(vec![])),
        "spec.components: Invalid value: []: components contains no podspecs"
    );
}

#[test]
fn s2_a_service_only_wrapper_is_rejected() {
    let m = denied(&aw(vec![component(service())]));
    assert!(m.starts_with("spec.components: Invalid value: [{"), "{m}");
    assert!(m.ends_with(": components contains no podspecs"), "{m}");
}

#[test]
fn s3_more_than_8_podspecs_are_rejected() {
    let nine = (0..9).map(|i| component(pod(&format!("p{i}")))).collect();
    let m = denied(&aw(nine));
    assert!(
        m.ends_with(": components contains 9 podspecs; at most 8 are allowed"),
        "{m}"
    );
    let eight = (0..8).map(|i| component(pod(&format!("p{i}")))).collect();
    assert_eq!(create(&aw(eight)), Ok(()));
}

#[test]
fn s4_a_missing_or_empty_path_is_rejected() {
    let m = denied(&aw(vec![declared(
        pod("p"),
        json!([{"path": "template.spec.missing"}]),
    )]));
    assert!(m.starts_with("[spec.components[0].podSets[0].path: Invalid value: \"template.spec.missing\": path does not refer to a v1.PodSpecTemplate: at path position 'template.spec.' missing field 'missing', "), "{m}");
    assert!(
        m.contains("spec.components[0].podSets: Invalid value: [{\"path\":\"template.spec.missing\"}]: PodSet with path 'template' is missing"),
        "{m}"
    );

    let m = denied(&aw(vec![declared(pod("p"), json!([{"path": ""}]))]));
    assert!(
        m.starts_with("[spec.components[0].podSets[0].path: Required value: podspec must specify path, spec.components[0].podSets[0].path: Invalid value: \"\": path does not refer to a v1.PodSpecTemplate: first element of the path must be 'template', "),
        "{m}"
    );
}

#[test]
fn s5_a_path_to_something_other_than_a_pod_template_is_rejected() {
    let m = denied(&aw(vec![declared(
        deployment(1),
        json!([{"path": "template.spec.template.metadata"}]),
    )]));
    assert!(m.contains("spec.components[0].podSets[0].path: Invalid value: \"template.spec.template.metadata\": path does not refer to a v1.PodSpecTemplate: content at template.spec.template.metadata does not contain a spec"), "{m}");
}

#[test]
fn s6_malformed_paths_into_a_jobset_are_rejected_with_upstreams_words() {
    let cases = [
        (
            "template.spec.replicatedJobs.template.spec.template",
            "at path position 'template.spec.replicatedJobs.' non-map value",
        ),
        (
            "template.spec.replicatedJobs",
            "at path position 'template.spec.replicatedJobs' non-map value",
        ),
        (
            "template.spec.replicatedJobs[0].template[0].spec.template",
            "at path position 'template.spec.replicatedJobs[0.template' found non-array value",
        ),
        (
            "template.spec.replicatedJobs[10].template.spec.template",
            "at path position 'template.spec.replicatedJobs' out of bounds index '10'",
        ),
        (
            "template.spec.replicatedJobs[-1].template.spec.template",
            "at path position 'template.spec.replicatedJobs' out of bounds index '-1'",
        ),
        (
            "template.spec.replicatedJobs[a10].template.spec.template",
            "at path position 'template.spec.replicatedJobs' invalid index expression 'a10'",
        ),
        (
            "template.spec.replicatedJobs[1.template.spec.template",
            "at path position 'template.spec.replicatedJobs' invalid array index '[1.template.spec.template'",
        ),
        (
            "template.spec.replicatedJobs[1]].template.spec.template",
            "at path position 'template.spec.replicatedJobs[1' invalid path element '].template.spec.template'",
        ),
        (
            "spec.replicatedJobs[0].template.spec.template",
            "first element of the path must be 'template'",
        ),
    ];
    for (path, why) in cases {
        let sets = json!([
            {"path": "template.spec.replicatedJobs[0].template.spec.template", "replicas": 1},
            {"path": path, "replicas": 4},
        ]);
        let m = denied(&aw(vec![declared(jobset(), sets)]));
        let expect = format!(
            "spec.components[0].podSets[1].path: Invalid value: \"{path}\": path does not refer to a v1.PodSpecTemplate: {why}"
        );
        assert!(m.contains(&expect), "{path}:\n{m}\nwanted: {expect}");
    }
    // The well-formed declaration is accepted.
    let sets = json!([
        {"path": "template.spec.replicatedJobs[0].template.spec.template", "replicas": 1},
        {"path": "template.spec.replicatedJobs[1].template.spec.template", "replicas": 4},
    ]);
    assert_eq!(create(&aw(vec![declared(jobset(), sets)])), Ok(()));
}

#[test]
fn a_misspelled_pod_spec_field_is_rejected() {
    let mut d = deployment(1);
    d["spec"]["template"]["spec"]["containerz"] = json!([]);
    let m = denied(&aw(vec![component(d)]));
    // Inference failed, so the component counts no pod spec either.
    assert!(
        m.starts_with("[spec.components[0].template: Invalid value: {"),
        "{m}"
    );
    assert!(m.contains(": error inferring PodSets: template.spec.template does not refer to a v1.PodSpecTemplate: content at template.spec.template.spec not parseable as a v1.PodSpec: strict decoding error: unknown field \"containerz\", spec.components: Invalid value: "), "{m}");
    assert!(m.ends_with("components contains no podspecs]"), "{m}");
    let mut d = deployment(1);
    d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy2"] = json!("x");
    let m = denied(&aw(vec![component(d)]));
    assert!(
        m.contains("unknown field \"containers[0].imagePullPolicy2\""),
        "{m}"
    );
}

#[test]
fn a_template_that_does_not_decode_is_rejected() {
    let m = denied(&aw(vec![
        component(json!({"apiVersion": "v1", "metadata": {}})),
        component(pod("p")),
    ]));
    assert_eq!(
        m,
        r#"spec.components[0].template: Invalid value: {"apiVersion":"v1","metadata":{}}: failed to decode as JSON"#
    );
}

#[test]
fn n1_components_in_another_namespace_are_rejected() {
    let mut p = pod("p");
    p["metadata"]["namespace"] = json!("test");
    assert_eq!(
        denied(&aw(vec![component(p)])),
        "spec.components[0].template.metadata.namespace: Forbidden: AppWrappers cannot create objects in other namespaces"
    );
}

#[test]
fn n2_nested_appwrappers_are_rejected() {
    let inner = aw(vec![component(pod("p"))]);
    assert_eq!(
        denied(&aw(vec![component(inner), component(pod("q"))])),
        "spec.components[0].template: Forbidden: Nested AppWrappers are forbidden"
    );
}

#[test]
fn w1_a_well_formed_mix_is_accepted() {
    let mut same_ns = pod("p2");
    same_ns["metadata"]["namespace"] = json!(NS);
    let obj = aw(vec![
        component(pod("p1")),
        component(deployment(2)),
        component(same_ns),
        component(ray_cluster()),
        component(jobset()),
    ]);
    assert_eq!(create(&obj), Ok(()));
}

#[test]
fn an_unknown_kind_takes_its_declared_pod_sets_as_given() {
    let lws = json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                     "metadata": {"name": "l"},
                     "spec": {"leaderWorkerTemplate": {"leaderTemplate": pod_template(),
                                                       "workerTemplate": pod_template()}}});
    let sets = json!([
        {"path": "template.spec.leaderWorkerTemplate.leaderTemplate", "replicas": 2},
        {"path": "template.spec.leaderWorkerTemplate.workerTemplate", "replicas": 3},
    ]);
    assert_eq!(create(&aw(vec![declared(lws.clone(), sets)])), Ok(()));
    // Without declared pod sets it has none.
    assert!(denied(&aw(vec![component(lws)])).ends_with("components contains no podspecs"));
}

#[test]
fn declared_pod_sets_must_agree_with_the_inferred_ones() {
    let at = |sets: Value| denied(&aw(vec![declared(job(2, 4), sets)]));
    assert!(at(json!([{"path": "template.spec.template", "replicas": 3}]))
        .ends_with(": replica count 3 differs from inferred count 2 for PodSet at path position 'template.spec.template'"));
    assert!(at(json!([
        {"path": "template.spec.template", "replicas": 2},
        {"path": "template.spec.template", "replicas": 2}
    ]))
    .ends_with(": multiple DeclaredPodSets with path 'template.spec.template'"));
    let m = denied(&aw(vec![declared(
        pytorch_job(),
        json!([{"path": "template.spec.pytorchReplicaSpecs.Master.template"}]),
    )]));
    assert!(
        m.ends_with(": DeclaredPodSet count 1 differs from inferred count 2"),
        "{m}"
    );
    assert_eq!(
        create(&aw(vec![declared(
            job(2, 4),
            json!([{"path": "template.spec.template", "replicas": 2}])
        )])),
        Ok(())
    );
}

#[test]
fn a_non_integer_replica_count_is_an_inference_error() {
    let mut pt = pytorch_job();
    pt["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = json!("two");
    let m = denied(&aw(vec![component(pt)]));
    assert!(m.contains(": error inferring PodSets: at path position 'template.spec.pytorchReplicaSpecs.Worker.replicas' non-int value two, "), "{m}");
}

#[test]
fn several_errors_are_aggregated_with_the_generic_invariants_last() {
    let mut p = pod("p");
    p["metadata"]["namespace"] = json!("other");
    let mut obj = aw(vec![component(p), component(aw(vec![]))]);
    obj["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = json!("0");
    let m = denied(&obj);
    assert!(m.starts_with("[spec.components[0].template.metadata.namespace: Forbidden: AppWrappers cannot create objects in other namespaces, spec.components[1].template: Forbidden: Nested AppWrappers are forbidden, "), "{m}");
    assert!(m.ends_with(", metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: should be greater than 0]"), "{m}");
}

// ----------------------------------------------------------- inference
//
// What inference yields per kind (paths, counts, TAS annotations) is tested
// beside it, in `crate::appwrapper::podsets`; here, that the webhook holds
// declared pod sets to it: the inferred sets, declared, are accepted, and
// one replica more is refused.

fn agrees_with_inference(t: Value, inferred: &[(&str, i32)]) {
    let as_declared = |extra: i32| {
        let sets: Vec<Value> = inferred
            .iter()
            .enumerate()
            .map(|(i, (path, n))| {
                let n = if i == 0 { n + extra } else { *n };
                json!({"path": path, "replicas": n})
            })
            .collect();
        aw(vec![declared(t.clone(), Value::Array(sets))])
    };
    assert_eq!(create(&as_declared(0)), Ok(()), "{t}");
    let (path, n) = inferred[0];
    let m = denied(&as_declared(1));
    let want = format!(
        ": replica count {} differs from inferred count {n} for PodSet at path position '{path}'",
        n + 1
    );
    assert!(m.ends_with(&want), "{m}\nwanted: {want}");
}

#[test]
fn p1_pod_sets_are_inferred_for_pod_deployment_statefulset_and_job() {
    agrees_with_inference(pod("p"), &[("template", 1)]);
    agrees_with_inference(deployment(3), &[("template.spec.template", 3)]);
    let mut ss = deployment(1);
    ss["kind"] = json!("StatefulSet");
    ss["spec"].as_object_mut().unwrap().remove("replicas");
    agrees_with_inference(ss, &[("template.spec.template", 1)]);
    agrees_with_inference(job(2, 4), &[("template.spec.template", 2)]);
    agrees_with_inference(job(8, 4), &[("template.spec.template", 4)]);
}

#[test]
fn p2_pod_sets_are_inferred_for_pytorchjob_raycluster_rayjob_and_jobset() {
    agrees_with_inference(
        pytorch_job(),
        &[
            ("template.spec.pytorchReplicaSpecs.Master.template", 1),
            ("template.spec.pytorchReplicaSpecs.Worker.template", 4),
        ],
    );
    agrees_with_inference(
        ray_cluster(),
        &[
            ("template.spec.headGroupSpec.template", 1),
            ("template.spec.workerGroupSpecs[0].template", 3),
        ],
    );
    agrees_with_inference(
        ray_job(),
        &[
            ("template.spec.rayClusterSpec.headGroupSpec.template", 1),
            (
                "template.spec.rayClusterSpec.workerGroupSpecs[0].template",
                3,
            ),
        ],
    );
    agrees_with_inference(
        jobset(),
        &[
            ("template.spec.replicatedJobs[0].template.spec.template", 1),
            ("template.spec.replicatedJobs[1].template.spec.template", 4),
        ],
    );
    // A RayCluster always has its head: a missing one is an error.
    let mut rc = ray_cluster();
    rc["spec"].as_object_mut().unwrap().remove("headGroupSpec");
    let m = denied(&aw(vec![component(rc)]));
    assert!(m.contains(": error inferring PodSets: template.spec.headGroupSpec.template does not refer to a v1.PodSpecTemplate: at path position 'template.spec.' missing field 'headGroupSpec', "), "{m}");
}

// --------------------------------------------------------------- updates

fn forbidden(field: &str) -> String {
    format!("{field}: Forbidden: attempt to change immutable field")
}

#[test]
fn i1_user_labels_are_immutable() {
    let mut old = aw(vec![component(pod("p"))]);
    old["metadata"]["labels"]["workload.codeflare.dev/user"] = json!("alice");
    old["metadata"]["labels"]["workload.codeflare.dev/userid"] = json!("1");
    let mut new = old.clone();
    new["metadata"]["labels"]["workload.codeflare.dev/user"] = json!("mallory");
    new["metadata"]["labels"]["workload.codeflare.dev/userid"] = json!("2");
    assert_eq!(
        update(&old, &new),
        Err(format!(
            "[{}, {}]",
            forbidden("metadata.labels[workload.codeflare.dev/user]"),
            forbidden("metadata.labels[workload.codeflare.dev/userid]")
        ))
    );
    let mut removed = old.clone();
    removed["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("workload.codeflare.dev/userid");
    assert_eq!(
        update(&old, &removed),
        Err(forbidden("metadata.labels[workload.codeflare.dev/userid]"))
    );
}

#[test]
fn i2_an_update_by_another_user_keeps_the_labels_and_passes() {
    // The mutating hook runs on CREATE only, so another user's update
    // neither changes the labels nor is refused for them.
    let old = aw(vec![component(pod("p"))]);
    let policies = PolicySet::embedded().unwrap();
    let core = core();
    let ctx = Context {
        settings: &core,
        facts: &NoCluster,
        policies: &policies,
        lookups: &crate::admission::Read::default(),
    };
    let d = mutate(
        &Request {
            operation: Operation::Update,
            namespace: NS,
            object: Some(&old),
            old_object: Some(&old),
        },
        &user("bob", "2"),
        &Settings::default(),
        &ctx,
    );
    assert!(d.patch.is_empty());
    assert_eq!(update(&old, &old), Ok(()));
}

#[test]
fn i3_suspend_and_pod_set_infos_may_change() {
    let mut old = aw(vec![component(pod("p"))]);
    old["spec"]["suspend"] = json!(true);
    let mut new = old.clone();
    new["spec"]["suspend"] = json!(false);
    new["spec"]["components"][0]["podSetInfos"] = json!([{"nodeSelector": {"zone": "a"}, "tolerations": [{"key": "k", "operator": "Exists"}]}]);
    new["spec"]["components"][0]["annotations"] = json!({"note": "x"});
    new["metadata"]["annotations"] = json!({"other": "y"});
    new["metadata"]["finalizers"] = json!(["workload.codeflare.dev/finalizer"]);
    assert_eq!(update(&old, &new), Ok(()));
}

#[test]
fn i4_components_are_immutable() {
    let old = aw(vec![declared(
        job(2, 2),
        json!([{"path": "template.spec.template", "replicas": 2}]),
    )]);
    let mut replaced = old.clone();
    replaced["spec"]["components"][0]["template"] = job(3, 3);
    assert_eq!(
        update(&old, &replaced),
        Err(forbidden("spec.components[0].template.raw"))
    );
    let mut added = old.clone();
    added["spec"]["components"]
        .as_array_mut()
        .unwrap()
        .push(component(pod("p")));
    assert_eq!(update(&old, &added), Err(forbidden("spec.components")));
    let mut more = old.clone();
    more["spec"]["components"][0]["podSets"] =
        json!([{"path": "template.spec.template", "replicas": 2}, {"path": "template"}]);
    assert_eq!(
        update(&old, &more),
        Err(forbidden("spec.components[0].podsets"))
    );
    let mut path = old.clone();
    path["spec"]["components"][0]["podSets"][0]["path"] = json!("template.spec");
    assert_eq!(
        update(&old, &path),
        Err(forbidden("spec.components[0].podsets[0].path"))
    );
    let mut replicas = old.clone();
    replicas["spec"]["components"][0]["podSets"][0]["replicas"] = json!(1);
    assert_eq!(
        update(&old, &replicas),
        Err(forbidden("spec.components[0].podsets[0].replicas"))
    );
    // Absent replicas count as 1.
    let mut one = old.clone();
    one["spec"]["components"][0]["podSets"][0]["replicas"] = json!(1);
    let mut absent = one.clone();
    absent["spec"]["components"][0]["podSets"][0]
        .as_object_mut()
        .unwrap()
        .remove("replicas");
    assert_eq!(update(&one, &absent), Ok(()));
}

#[test]
fn managed_by_is_immutable_even_from_absent_to_empty() {
    let old = aw(vec![component(pod("p"))]);
    let mut new = old.clone();
    new["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    assert_eq!(update(&old, &new), Err(forbidden("spec.managedBy")));
    new["spec"]["managedBy"] = json!("");
    assert_eq!(update(&old, &new), Err(forbidden("spec.managedBy")));
}

#[test]
fn kueues_generic_update_rules_apply() {
    let mut old = aw(vec![component(pod("p"))]);
    old["spec"]["suspend"] = json!(false);
    let mut new = old.clone();
    new["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("other-queue");
    assert_eq!(
        update(&old, &new),
        Err("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"other-queue\": field is immutable".into())
    );
    // While suspended the queue may change.
    old["spec"]["suspend"] = json!(true);
    new["spec"]["suspend"] = json!(true);
    assert_eq!(update(&old, &new), Ok(()));
}

// ----------------------------------------------------------- entitlement

fn review(op: &str, object: Value, old: Option<Value>) -> Vec<u8> {
    let mut req = json!({
        "uid": "u-1",
        "kind": {"group": "workload.codeflare.dev", "version": "v1beta2", "kind": "AppWrapper"},
        "operation": op, "namespace": NS, "name": "aw",
        "userInfo": {"username": "limited-user", "uid": "8da0fcfe-6d7f-4f44-b433-d91d22cc1b8c",
                     "groups": ["system:authenticated"], "extra": {"xyzzy": ["plugh"]}},
        "object": object,
    });
    if let Some(o) = old {
        req["oldObject"] = o;
    }
    serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1",
                               "kind": "AdmissionReview", "request": req}))
    .unwrap()
}

fn webhook(settings: Settings) -> (Router, Arc<ResourceNames>) {
    let names = Arc::new(ResourceNames::new(None));
    names.insert("", "v1", "Pod", "pods");
    names.insert("apps", "v1", "Deployment", "deployments");
    let w = Router::new(
        PolicySet::embedded().unwrap(),
        core(),
        Arc::new(NoCluster),
        Arc::new(|| chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap()),
    )
    .with_appwrapper(settings, names.clone());
    (w, names)
}

fn response(body: &[u8]) -> Value {
    serde_json::from_slice::<Value>(body).unwrap()["response"].clone()
}

#[test]
fn r1_r2_every_component_is_checked_with_upstreams_denial() {
    let (w, _) = webhook(Settings::default());
    let obj = aw(vec![
        component(pod("p")),
        component(deployment(1)),
        component(service()),
    ]);
    let body = review("CREATE", obj, None);
    let Reviewed::Entitle(p) = w.review(Hook::Validate, &body) else {
        panic!("no checks asked")
    };
    let checks = p.checks();
    let asked: Vec<_> = checks
        .iter()
        .map(|c| {
            let a = &c.attributes;
            (
                a.verb.as_str(),
                a.group.as_str(),
                a.version.as_str(),
                a.resource.as_str(),
                a.namespace.as_str(),
            )
        })
        .collect();
    assert_eq!(
        asked,
        [
            ("create", "", "v1", "pods", NS),
            ("create", "apps", "v1", "deployments", NS),
            // Not discovered (no discovery here): any resource of the group.
            ("create", "", "v1", "*", NS),
        ]
    );
    assert_eq!(checks[0].user.uid, "8da0fcfe-6d7f-4f44-b433-d91d22cc1b8c");
    assert_eq!(checks[0].user.extra["xyzzy"], ["plugh"]);
    assert!(checks[0].attributes.name.is_empty());

    // R1: the pod is allowed; R2: the deployment is not.
    let results = [
        Ok::<_, String>(Outcome::Allowed),
        Ok(Outcome::Denied {
            reason: String::new(),
        }),
        Ok(Outcome::Allowed),
    ];
    let a = p.finish(&results, OnError::Deny);
    let r = response(&a.body);
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 403);
    assert_eq!(
        r["status"]["message"],
        "spec.components[1].template: Forbidden: User limited-user is not authorized to create deployments in default"
    );

    // A failed check: upstream's internal error, refused for retry (503).
    let Reviewed::Entitle(p) = w.review(Hook::Validate, &body) else {
        panic!()
    };
    let a = p.finish(
        &[
            Ok::<_, &str>(Outcome::Allowed),
            Err("connection refused"),
            Ok(Outcome::Allowed),
        ],
        OnError::Deny,
    );
    let r = response(&a.body);
    assert_eq!(r["status"]["code"], 503);
    assert_eq!(
        r["status"]["message"],
        "spec.components[1].template: Internal error: connection refused"
    );
}

#[tokio::test]
async fn unknown_kinds_are_resolved_by_discovery_before_asking() {
    use crate::cluster::discovery::Discovery;
    use futures::{future::BoxFuture, FutureExt};
    struct Core1;
    impl Discovery for Core1 {
        fn resources(
            &self,
            _: &str,
            _: &str,
        ) -> BoxFuture<'static, Result<Vec<(String, String)>, String>> {
            async { Ok(vec![("services".to_string(), "Service".to_string())]) }.boxed()
        }
    }
    let names = Arc::new(ResourceNames::new(Some(Arc::new(Core1))));
    let w = Router::new(
        PolicySet::embedded().unwrap(),
        core(),
        Arc::new(NoCluster),
        Arc::new(|| chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap()),
    )
    .with_appwrapper(Settings::default(), names.clone());
    let body = review(
        "CREATE",
        aw(vec![component(pod("p")), component(service())]),
        None,
    );
    let Reviewed::Entitle(mut p) = w.review(Hook::Validate, &body) else {
        panic!()
    };
    p.resolve().await;
    let resources: Vec<String> = p
        .checks()
        .into_iter()
        .map(|c| c.attributes.resource)
        .collect();
    // The core list here has no Pod: `*`; Service is found and kept.
    assert_eq!(resources, ["*", "services"]);
    assert!(names
        .cached(&ComponentCheck {
            index: 0,
            group: String::new(),
            version: "v1".into(),
            kind: "Service".into()
        })
        .is_some());
}

#[test]
fn no_component_checks_when_switched_off_on_update_or_when_refused() {
    let (w, _) = webhook(Settings {
        user_rbac_admission_check: false,
        ..Settings::default()
    });
    let obj = aw(vec![component(pod("p"))]);
    match w.review(Hook::Validate, &review("CREATE", obj.clone(), None)) {
        Reviewed::Done(a) => assert_eq!(response(&a.body)["allowed"], true),
        Reviewed::Entitle(p) => panic!("asked {:?}", p.checks()),
        Reviewed::Read(k) => panic!("read {k:?}"),
    }
    let (w, _) = webhook(Settings::default());
    match w.review(
        Hook::Validate,
        &review("UPDATE", obj.clone(), Some(obj.clone())),
    ) {
        Reviewed::Done(a) => assert_eq!(response(&a.body)["allowed"], true),
        Reviewed::Entitle(p) => panic!("asked {:?}", p.checks()),
        Reviewed::Read(k) => panic!("read {k:?}"),
    }
    // Refused by the rules first: no SubjectAccessReview spent.
    match w.review(Hook::Validate, &review("CREATE", aw(vec![]), None)) {
        Reviewed::Done(a) => {
            let r = response(&a.body);
            assert_eq!(r["allowed"], false);
            assert_eq!(
                r["status"]["message"],
                "spec.components: Invalid value: []: components contains no podspecs"
            );
        }
        Reviewed::Entitle(p) => panic!("asked {:?}", p.checks()),
        Reviewed::Read(k) => panic!("read {k:?}"),
    }
}

#[test]
fn the_mutating_hook_patches_through_the_webhook() {
    let (w, _) = webhook(Settings::default());
    let mut obj = aw(vec![component(pod("p"))]);
    obj["spec"]["suspend"] = json!(false);
    let a = w.answer(Hook::Mutate, &review("CREATE", obj, None));
    let r = response(&a.body);
    assert_eq!(r["allowed"], true);
    assert_eq!(r["patchType"], "JSONPatch");
    assert_eq!(a.labels.unwrap().kind, INTEGRATION);
}
