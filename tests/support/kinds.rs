//! Realistic objects of every job kind batchgate ships a policy for, written
//! for the tests, with the pod sets Kueue computes for them.

use serde_json::{json, Value};

pub struct Sample {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub resource: &'static str,
    /// The object, without namespace; `name` and the queue label are set by
    /// [`Sample::object`].
    body: Value,
    /// (pod set name, pod count, pointer to its template) in Workload order.
    pub pod_sets: Vec<(&'static str, i64, &'static str)>,
    /// Where the suspend switch is.
    pub suspend: &'static str,
}

impl Sample {
    /// The object, to change before [`Sample::object`] names it.
    pub fn body_mut(&mut self) -> &mut Value {
        &mut self.body
    }

    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// The object named `name` in `namespace`, queued to `queue`.
    pub fn object(&self, name: &str, namespace: &str, queue: &str) -> Value {
        let mut o = self.body.clone();
        o["apiVersion"] = json!(self.api_version());
        o["kind"] = json!(self.kind);
        o["metadata"]["name"] = json!(name);
        o["metadata"]["namespace"] = json!(namespace);
        o["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!(queue);
        o
    }
}

/// A pod template: one container asking for `cpu`, with labels and an
/// unknown field of the kind's own that must survive everything.
fn pod(role: &str, cpu: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": "train", "role": role},
                     "annotations": {"example.com/owner": "ml-team"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": role, "image": "registry.example.com/train:1.4",
                "args": ["--epochs", "3"],
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
            }],
            "tolerations": [{"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "x-future-field": {"kept": true},
        },
    })
}

fn meta() -> Value {
    json!({"labels": {"team": "ml"}, "annotations": {"example.com/ticket": "ML-42"}})
}

pub fn all() -> Vec<Sample> {
    vec![
        jobset(),
        mpijob(),
        rayjob(),
        raycluster(),
        rayservice(),
        pytorchjob(),
        tfjob(),
        paddlejob(),
        xgboostjob(),
        jaxjob(),
    ]
}

/// A JobSet with two replicated jobs: a driver (1 × min(1, 1)) and workers
/// (2 replicas × min(parallelism 3, completions 2) = 4).
pub fn jobset() -> Sample {
    Sample {
        group: "jobset.x-k8s.io",
        version: "v1alpha2",
        kind: "JobSet",
        resource: "jobsets",
        body: json!({
            "metadata": meta(),
            "spec": {
                "network": {"enableDNSHostnames": true},
                "replicatedJobs": [
                    {"name": "Driver", "replicas": 1,
                     "template": {"spec": {"backoffLimit": 0, "template": pod("driver", "100m")}}},
                    {"name": "workers", "replicas": 2,
                     "template": {"spec": {"parallelism": 3, "completions": 2,
                                           "template": pod("worker", "100m")}}},
                ],
                "successPolicy": {"operator": "All", "targetReplicatedJobs": ["driver"]},
            },
        }),
        pod_sets: vec![
            ("driver", 1, "/spec/replicatedJobs/0/template/spec/template"),
            (
                "workers",
                4,
                "/spec/replicatedJobs/1/template/spec/template",
            ),
        ],
        suspend: "/spec/suspend",
    }
}

/// An MPIJob with a launcher and 3 workers.
pub fn mpijob() -> Sample {
    Sample {
        group: "kubeflow.org",
        version: "v2beta1",
        kind: "MPIJob",
        resource: "mpijobs",
        body: json!({
            "metadata": meta(),
            "spec": {
                "slotsPerWorker": 1,
                "runPolicy": {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 60},
                "mpiReplicaSpecs": {
                    "Launcher": {"replicas": 1, "template": pod("launcher", "100m")},
                    "Worker": {"replicas": 3, "template": pod("worker", "100m")},
                },
            },
        }),
        pod_sets: vec![
            ("launcher", 1, "/spec/mpiReplicaSpecs/Launcher/template"),
            ("worker", 3, "/spec/mpiReplicaSpecs/Worker/template"),
        ],
        suspend: "/spec/runPolicy/suspend",
    }
}

/// A RayJob with a head, two worker groups (2 replicas; 1 replica × 2 hosts)
/// and KubeRay's default submitter (no submitterPodTemplate given).
pub fn rayjob() -> Sample {
    Sample {
        group: "ray.io",
        version: "v1",
        kind: "RayJob",
        resource: "rayjobs",
        body: json!({
            "metadata": meta(),
            "spec": {
                "entrypoint": "python /home/ray/samples/train.py",
                "shutdownAfterJobFinishes": true,
                "submissionMode": "K8sJobMode",
                "rayClusterSpec": {
                    "rayVersion": "2.9.0",
                    "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"},
                                      "template": pod("head", "100m")},
                    "workerGroupSpecs": [
                        {"groupName": "Small-Group", "replicas": 2, "minReplicas": 1, "maxReplicas": 4,
                         "rayStartParams": {}, "template": pod("small", "100m")},
                        {"groupName": "tpu", "replicas": 1, "numOfHosts": 2,
                         "rayStartParams": {}, "template": pod("tpu", "100m")},
                    ],
                },
            },
        }),
        pod_sets: vec![
            ("head", 1, "/spec/rayClusterSpec/headGroupSpec/template"),
            (
                "small-group",
                2,
                "/spec/rayClusterSpec/workerGroupSpecs/0/template",
            ),
            ("tpu", 2, "/spec/rayClusterSpec/workerGroupSpecs/1/template"),
            ("submitter", 1, "/spec/submitterPodTemplate"),
        ],
        suspend: "/spec/suspend",
    }
}

/// A RayCluster with a head and one worker group of 3.
pub fn raycluster() -> Sample {
    Sample {
        group: "ray.io",
        version: "v1",
        kind: "RayCluster",
        resource: "rayclusters",
        body: json!({
            "metadata": meta(),
            "spec": {
                "rayVersion": "2.9.0",
                "headGroupSpec": {"rayStartParams": {}, "template": pod("head", "100m")},
                "workerGroupSpecs": [
                    {"groupName": "workers", "replicas": 3, "rayStartParams": {},
                     "template": pod("worker", "100m")},
                ],
            },
        }),
        pod_sets: vec![
            ("head", 1, "/spec/headGroupSpec/template"),
            ("workers", 3, "/spec/workerGroupSpecs/0/template"),
        ],
        suspend: "/spec/suspend",
    }
}

/// A RayService whose cluster has a head and a worker group of 2 × 2
/// hosts.
pub fn rayservice() -> Sample {
    Sample {
        group: "ray.io",
        version: "v1",
        kind: "RayService",
        resource: "rayservices",
        body: json!({
            "metadata": meta(),
            "spec": {
                "serveConfigV2": "applications:\n  - name: fruit\n    import_path: fruit.app\n",
                "rayClusterConfig": {
                    "rayVersion": "2.9.0",
                    "headGroupSpec": {"rayStartParams": {}, "template": pod("head", "100m")},
                    "workerGroupSpecs": [
                        {"groupName": "serve", "replicas": 2, "numOfHosts": 2, "rayStartParams": {},
                         "template": pod("serve", "100m")},
                    ],
                },
            },
        }),
        pod_sets: vec![
            ("head", 1, "/spec/rayClusterConfig/headGroupSpec/template"),
            (
                "serve",
                4,
                "/spec/rayClusterConfig/workerGroupSpecs/0/template",
            ),
        ],
        suspend: "/spec/rayClusterConfig/suspend",
    }
}

/// A kubeflow.org/v1 training job with `replicas` of each replica type
/// (in the order given, which need not be Kueue's) and the pod sets Kueue
/// computes for it.
fn kubeflow(
    kind: &'static str,
    resource: &'static str,
    field: &str,
    replicas: &[(&str, i64)],
    pod_sets: Vec<(&'static str, i64, &'static str)>,
) -> Sample {
    let mut specs = serde_json::Map::new();
    for (ty, n) in replicas {
        specs.insert(
            ty.to_string(),
            json!({"replicas": n, "restartPolicy": "OnFailure",
                   "template": pod(&ty.to_lowercase(), "100m")}),
        );
    }
    Sample {
        group: "kubeflow.org",
        version: "v1",
        kind,
        resource,
        body: json!({
            "metadata": meta(),
            "spec": {"runPolicy": {"cleanPodPolicy": "None"}, field: specs},
        }),
        pod_sets,
        suspend: "/spec/runPolicy/suspend",
    }
}

/// A PyTorchJob with a master and 2 workers.
pub fn pytorchjob() -> Sample {
    kubeflow(
        "PyTorchJob",
        "pytorchjobs",
        "pytorchReplicaSpecs",
        &[("Master", 1), ("Worker", 2)],
        vec![
            ("master", 1, "/spec/pytorchReplicaSpecs/Master/template"),
            ("worker", 2, "/spec/pytorchReplicaSpecs/Worker/template"),
        ],
    )
}

/// A TFJob with a chief, 2 parameter servers and 3 workers, listed out of
/// order: pod sets follow Kueue's order, not the map's.
pub fn tfjob() -> Sample {
    kubeflow(
        "TFJob",
        "tfjobs",
        "tfReplicaSpecs",
        &[("Worker", 3), ("PS", 2), ("Chief", 1)],
        vec![
            ("chief", 1, "/spec/tfReplicaSpecs/Chief/template"),
            ("ps", 2, "/spec/tfReplicaSpecs/PS/template"),
            ("worker", 3, "/spec/tfReplicaSpecs/Worker/template"),
        ],
    )
}

/// A PaddleJob with a master and 2 workers.
pub fn paddlejob() -> Sample {
    kubeflow(
        "PaddleJob",
        "paddlejobs",
        "paddleReplicaSpecs",
        &[("Master", 1), ("Worker", 2)],
        vec![
            ("master", 1, "/spec/paddleReplicaSpecs/Master/template"),
            ("worker", 2, "/spec/paddleReplicaSpecs/Worker/template"),
        ],
    )
}

/// An XGBoostJob with 2 workers and a master, out of order.
pub fn xgboostjob() -> Sample {
    kubeflow(
        "XGBoostJob",
        "xgboostjobs",
        "xgbReplicaSpecs",
        &[("Worker", 2), ("Master", 1)],
        vec![
            ("master", 1, "/spec/xgbReplicaSpecs/Master/template"),
            ("worker", 2, "/spec/xgbReplicaSpecs/Worker/template"),
        ],
    )
}

/// A JAXJob with 4 workers.
pub fn jaxjob() -> Sample {
    kubeflow(
        "JAXJob",
        "jaxjobs",
        "jaxReplicaSpecs",
        &[("Worker", 4)],
        vec![("worker", 4, "/spec/jaxReplicaSpecs/Worker/template")],
    )
}
