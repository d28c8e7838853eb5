use serde_json::{json, Value};

use super::*;
use crate::jobs::policy::PolicySet;

const SIZES: &str = "kueue.x-k8s.io/raycluster-podset-replica-sizes";
const GENERATION: &str = "kueue.x-k8s.io/raycluster-generation";

fn policy() -> std::sync::Arc<Policy> {
    PolicySet::embedded()
        .unwrap()
        .find("ray.io", "v1", "RayJob")
        .unwrap()
        .clone()
}

fn rule() -> Autoscaled {
    policy().autoscaled.clone().unwrap()
}

fn group(name: &str, replicas: Option<i64>) -> Value {
    let mut g = json!({"groupName": name, "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": format!("{name}_c")}]}}});
    if let Some(r) = replicas {
        g["replicas"] = json!(r);
    }
    g
}

/// Kueue's test RayJob (`testingrayutil.MakeJob`): elastic, in-tree
/// autoscaling as given, running on `test-cluster`. Its submission mode is
/// unset in Go (no submitter pod set there; KubeRay's default would add
/// one), so HTTPMode here.
fn rayjob(groups: Vec<Value>, autoscaling: bool, annotations: Value) -> Value {
    let mut ann = json!({"kueue.x-k8s.io/elastic-job": "true"});
    ann.as_object_mut()
        .unwrap()
        .extend(annotations.as_object().cloned().unwrap_or_default());
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "rayjob", "namespace": "ns", "uid": "job-uid",
                     "generation": 1, "resourceVersion": "7", "annotations": ann},
        "spec": {"suspend": false, "submissionMode": "HTTPMode",
                 "rayClusterSpec": {"enableInTreeAutoscaling": autoscaling,
                    "autoscalerOptions": {"resources": {"requests": {"cpu": "100m"}}},
                    "headGroupSpec": {"rayStartParams": {},
                        "template": {"spec": {"containers": [{"name": "head_c"}]}}},
                    "workerGroupSpecs": groups}},
        "status": {"rayClusterName": "test-cluster"}})
}

fn cluster(name: &str, groups: Vec<Value>, generation: i64) -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "ns", "generation": generation},
        "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "head_c"}]}}},
                 "workerGroupSpecs": groups}})
}

fn counts(job: &Value) -> Vec<(String, i64)> {
    crate::jobs::workload::pod_sets(&policy(), job)
        .unwrap()
        .into_iter()
        .map(|ps| (ps.name, ps.count))
        .collect()
}

fn pairs(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, c)| (n.to_string(), *c)).collect()
}

/// Kueue v0.19.2 `raycluster/common_test.go` `TestUpdatePodSets`, each
/// case by its name.
#[test]
fn the_counts_follow_the_autoscaled_cluster_as_kueue_reads_them() {
    let r = rule();
    let p = policy();
    let three = || vec![group("workers-group-0", Some(3))];
    let scaled = |n: i64| {
        cluster(
            "target-raycluster",
            vec![group("workers-group-0", Some(n))],
            2,
        )
    };

    // "autoscaling disabled - no update"
    let job = rayjob(three(), false, json!({}));
    let f = r.follow(&p, &job, Some(&scaled(5))).unwrap();
    assert_eq!(
        counts(&f.job),
        pairs(&[("head", 1), ("workers-group-0", 3)])
    );

    // "empty rayClusterName - no update" and "RayCluster not found - no
    // update": no object read.
    let mut unnamed = rayjob(three(), true, json!({}));
    unnamed["status"]["rayClusterName"] = json!("");
    assert_eq!(r.object_name(&unnamed), None);
    let f = r.follow(&p, &unnamed, None).unwrap();
    assert_eq!(
        counts(&f.job),
        pairs(&[("head", 1), ("workers-group-0", 3)])
    );

    // "successful update from RayCluster"
    let job = rayjob(three(), true, json!({}));
    assert_eq!(r.object_name(&job), Some("test-cluster"));
    let f = r.follow(&p, &job, Some(&scaled(5))).unwrap();
    assert_eq!(
        counts(&f.job),
        pairs(&[("head", 1), ("workers-group-0", 5)])
    );

    // "successful update with NumOfHosts": 4 replicas × 2 hosts.
    let mut hosts = scaled(4);
    hosts["spec"]["workerGroupSpecs"][0]["numOfHosts"] = json!(2);
    let f = r.follow(&p, &job, Some(&hosts)).unwrap();
    assert_eq!(
        counts(&f.job),
        pairs(&[("head", 1), ("workers-group-0", 8)])
    );

    // A cluster's group without replicas keeps the job's count.
    let f = r
        .follow(
            &p,
            &job,
            Some(&cluster("c", vec![group("workers-group-0", None)], 2)),
        )
        .unwrap();
    assert_eq!(
        counts(&f.job),
        pairs(&[("head", 1), ("workers-group-0", 3)])
    );

    // "podset name mismatch"
    let other = cluster(
        "target-raycluster",
        vec![group("different-group-name", Some(5))],
        2,
    );
    assert_eq!(
        r.follow(&p, &job, Some(&other)).unwrap_err(),
        "PodSet name mismatch: RayCluster target-raycluster has worker group different-group-name which is not found in Ray object rayjob spec"
    );
    // The job's template is the job's: only the counts are followed.
    let f = r.follow(&p, &job, Some(&scaled(5))).unwrap();
    assert_eq!(
        f.job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"],
        job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]
    );
}

/// Kueue v0.19.2 `rayjob_controller_test.go` `TestGetCustomAnnotations`,
/// each case by its name: the annotations every pass wants, patched only
/// when the job does not carry them.
#[test]
fn the_job_records_its_counts_and_its_clusters_generation_as_kueue_does() {
    let r = rule();
    let p = policy();
    let five = cluster("test-cluster", vec![group("group1", Some(5))], 0);
    let sizes5 = r#"[{"name":"head","count":1},{"name":"group1","count":5}]"#;
    let cases = [
        (
            "first call sets annotation with all podset counts",
            json!({}),
            1,
            five.clone(),
            sizes5,
        ),
        (
            "skip patch when annotation already matches",
            json!({SIZES: sizes5, GENERATION: "0"}),
            1,
            five.clone(),
            sizes5,
        ),
        (
            "annotation updated after scale-down",
            json!({SIZES: r#"[{"name":"head","count":1},{"name":"group1","count":6}]"#}),
            4,
            cluster("test-cluster", vec![group("group1", Some(4))], 0),
            r#"[{"name":"head","count":1},{"name":"group1","count":4}]"#,
        ),
        (
            "annotation updated when podset count differs from annotation length",
            json!({SIZES: r#"[{"name":"group1","count":5}]"#}),
            1,
            five.clone(),
            sizes5,
        ),
    ];
    for (name, annotations, replicas, obj, want) in cases {
        let job = rayjob(vec![group("group1", Some(replicas))], true, annotations);
        let f = r.follow(&p, &job, Some(&obj)).unwrap();
        let ann = &f.job["metadata"]["annotations"];
        assert_eq!(
            (ann[SIZES].as_str(), ann[GENERATION].as_str()),
            (Some(want), Some("0")),
            "{name}"
        );
        let already = job["metadata"]["annotations"][SIZES] == want
            && job["metadata"]["annotations"][GENERATION] == "0";
        assert_eq!(f.patch.is_empty(), already, "{name}: {:?}", f.patch);
        if !already {
            assert_eq!(
                (f.patch[0].op, f.patch[0].path.as_str(), &f.patch[0].value),
                ("test", "/metadata/resourceVersion", &json!("7")),
                "{name}"
            );
            let set: Vec<&str> = f.patch[1..].iter().map(|o| o.path.as_str()).collect();
            assert!(
                set.iter()
                    .all(|p| p.starts_with("/metadata/annotations/kueue.x-k8s.io~1raycluster-")),
                "{name}: {set:?}"
            );
        }
    }
    // `TestGetWorkloadslicingCustomAnnotations` "raycluster not found
    // returns annotations with empty generation".
    let job = rayjob(vec![group("group1", Some(2))], true, json!({}));
    let f = r.follow(&p, &job, None).unwrap();
    assert_eq!(f.job["metadata"]["annotations"][GENERATION], "");
    assert_eq!(
        f.job["metadata"]["annotations"][SIZES],
        r#"[{"name":"head","count":1},{"name":"group1","count":2}]"#
    );
}

/// Kueue's `GetWorkloadNameExtraPart`: the job's generation, then `_` and
/// the cluster's generation the job records, so a slice made when the
/// cluster scales has a name of its own (the job's generation unchanged).
#[test]
fn a_slice_is_named_with_the_clusters_generation() {
    let r = rule();
    let job = rayjob(vec![group("g", Some(1))], true, json!({}));
    assert_eq!(r.name_extra(&job, 3), "3");
    let job = rayjob(vec![group("g", Some(1))], true, json!({GENERATION: ""}));
    assert_eq!(r.name_extra(&job, 3), "3");
    let mut job = rayjob(vec![group("g", Some(1))], true, json!({GENERATION: "7"}));
    assert_eq!(r.name_extra(&job, 3), "3_7");
    job["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "lq"});
    let s =
        crate::jobs::machine::subject_as(&policy(), &PolicySet::embedded().unwrap(), &job, true);
    let named = |extra: &str| {
        crate::jobs::workload::name_with_extra("RayJob", "ray.io", "rayjob", "job-uid", extra)
    };
    assert_eq!(s.map(|s| s.workload), Some(named("1_7")));
}

/// Kueue v0.19.2 `rayservice_controller_test.go` `TestPodSets`, the cases
/// with workload slicing, each by its name: an elastic RayService under
/// in-tree autoscaling counts its active RayCluster's workers, and its
/// head the autoscaler.
#[test]
fn a_rayservice_follows_its_active_cluster_as_kueue_reads_it() {
    let p = PolicySet::embedded()
        .unwrap()
        .find("ray.io", "v1", "RayService")
        .unwrap()
        .clone();
    let r = p.autoscaled.clone().unwrap();
    let service = |replicas: i64, autoscaling: bool, cluster: &str| {
        json!({"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "rayservice", "namespace": "ns", "uid": "svc-uid",
                         "generation": 1, "resourceVersion": "3",
                         "annotations": {"kueue.x-k8s.io/elastic-job": "true"}},
            "spec": {"rayClusterConfig": {"enableInTreeAutoscaling": autoscaling,
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head_c"}]}}},
                "workerGroupSpecs": [group("group1", Some(replicas))]}},
            "status": {"activeServiceStatus": {"rayClusterName": cluster}}})
    };
    let sets = |job: &Value| -> Vec<(String, i64, usize)> {
        crate::jobs::workload::pod_sets(&p, job)
            .unwrap()
            .into_iter()
            .map(|ps| {
                let containers = ps.template["spec"]["containers"].as_array().unwrap().len();
                (ps.name, ps.count, containers)
            })
            .collect()
    };
    let own = |v: &[(&str, i64, usize)]| -> Vec<(String, i64, usize)> {
        v.iter().map(|(n, c, k)| (n.to_string(), *c, *k)).collect()
    };

    // "with workload slicing and autoscaling enabled, update from RayCluster"
    let job = service(1, true, "rayservice-cluster");
    assert_eq!(r.object_name(&job), Some("rayservice-cluster"));
    let five = cluster("rayservice-cluster", vec![group("group1", Some(5))], 1);
    let f = r.follow(&p, &job, Some(&five)).unwrap();
    assert_eq!(
        sets(&f.job),
        own(&[("head", 1, 2), ("group1", 5, 1)]),
        "update from RayCluster"
    );

    // "with workload slicing enabled but autoscaling disabled, use spec count"
    let job = service(2, false, "rayservice-cluster");
    let ten = cluster("rayservice-cluster", vec![group("group1", Some(10))], 1);
    let f = r.follow(&p, &job, Some(&ten)).unwrap();
    assert_eq!(
        sets(&f.job),
        own(&[("head", 1, 1), ("group1", 2, 1)]),
        "autoscaling disabled"
    );

    // "with workload slicing and autoscaling enabled, RayCluster not found
    // fallback to spec": nothing read.
    let job = service(3, true, "nonexistent-cluster");
    let f = r.follow(&p, &job, None).unwrap();
    assert_eq!(
        sets(&f.job),
        own(&[("head", 1, 2), ("group1", 3, 1)]),
        "RayCluster not found"
    );

    // "with workload slicing and autoscaling enabled, no RayClusterName in
    // status": no object named, nothing read.
    let job = service(2, true, "");
    assert_eq!(r.object_name(&job), None);
    let f = r.follow(&p, &job, None).unwrap();
    assert_eq!(
        sets(&f.job),
        own(&[("head", 1, 2), ("group1", 2, 1)]),
        "no RayClusterName"
    );

    // Its elastic pods are its active cluster's; none while it has none.
    assert_eq!(
        p.elastic_pod_selector(&service(1, true, "rayservice-cluster"))
            .as_deref(),
        Some("ray.io/cluster=rayservice-cluster")
    );
    assert_eq!(p.elastic_pod_selector(&service(1, true, "")), None);
}
