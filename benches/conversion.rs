//! The conversion webhook's pure path: ConversionReview bytes in, response
//! bytes out (`conversion::review` and serialization), without sockets,
//! TLS or HTTP.
//!
//!     cargo bench --bench conversion
//!
//! Reviews as the apiserver sends them: one Workload (a get or a write),
//! and 100 Workloads (a list), both directions. The Workloads are
//! realistic: a pod template with two containers, admitted with a
//! topology assignment over 8 hosts, a v1beta1 priority class.

use std::hint::black_box;

use batchgate::api::kueue::conversion::{self, V1BETA1, V1BETA2};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};

fn workload_v1beta1(i: usize) -> Value {
    let domains: Vec<Value> = (0..8)
        .map(|h| json!({"values": ["block-a", format!("gke-pool-a-node-{h}")], "count": 1}))
        .collect();
    json!({
        "apiVersion": V1BETA1, "kind": "Workload",
        "metadata": {
            "name": format!("job-train-{i}-5f2c1"), "namespace": "team-a",
            "uid": format!("0b6c2f1e-2a4d-4c4e-9d3b-{i:012}"), "resourceVersion": "123456",
            "generation": 1, "creationTimestamp": "2026-11-24T10:00:00Z",
            "labels": {"kueue.x-k8s.io/job-uid": "6a3b", "kueue.x-k8s.io/queue-name": "research"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": format!("train-{i}"),
                                 "uid": "6a3b", "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
        },
        "spec": {
            "queueName": "research", "active": true, "priority": 1000,
            "priorityClassName": "high", "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
            "podSets": [{"name": "main", "count": 8, "template": {
                "metadata": {"labels": {"app": "train"}},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "trainer", "image": "registry.example.com/train:1.2",
                     "command": ["python", "train.py", "--epochs", "10"],
                     "env": [{"name": "RANK", "value": "0"}, {"name": "WORLD", "value": "8"}],
                     "resources": {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                                   "limits": {"nvidia.com/gpu": "1"}}},
                    {"name": "sidecar", "image": "registry.example.com/log:3",
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}}]},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue cq",
                 "lastTransitionTime": "2026-11-24T10:00:01Z", "observedGeneration": 1},
                {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted",
                 "lastTransitionTime": "2026-11-24T10:00:01Z", "observedGeneration": 1}],
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{
                "name": "main", "count": 8, "flavors": {"cpu": "default", "memory": "default", "nvidia.com/gpu": "a100"},
                "resourceUsage": {"cpu": "32800m", "memory": "131584Mi", "nvidia.com/gpu": "8"},
                "topologyAssignment": {"levels": ["cloud.example.com/block", "kubernetes.io/hostname"], "domains": domains}}]},
            "accumulatedPastExexcutionTimeSeconds": 120,
        },
    })
}

fn review(objects: Vec<Value>, desired: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                    "desiredAPIVersion": desired, "objects": objects}}))
    .expect("a review serializes")
}

/// Converts once and checks every object came out at `desired`.
fn check(body: &[u8], desired: &str, n: usize) {
    let r = conversion::review(body).expect("a ConversionReview");
    assert_eq!(r["response"]["result"]["status"], "Success", "{r}");
    let objs = r["response"]["convertedObjects"]
        .as_array()
        .expect("objects");
    assert_eq!(objs.len(), n);
    assert!(objs.iter().all(|o| o["apiVersion"] == desired));
}

fn bench(c: &mut Criterion) {
    let v1: Vec<Value> = (0..100).map(workload_v1beta1).collect();
    let v2: Vec<Value> = v1
        .iter()
        .map(|o| conversion::convert(o.clone(), V1BETA2).expect("converts"))
        .collect();
    let cases = [
        (
            "workload/1/v1beta1_to_v1beta2",
            review(v1[..1].to_vec(), V1BETA2),
            V1BETA2,
            1,
        ),
        (
            "workload/1/v1beta2_to_v1beta1",
            review(v2[..1].to_vec(), V1BETA1),
            V1BETA1,
            1,
        ),
        (
            "workload/100/v1beta1_to_v1beta2",
            review(v1.clone(), V1BETA2),
            V1BETA2,
            100,
        ),
        (
            "workload/100/v1beta2_to_v1beta1",
            review(v2.clone(), V1BETA1),
            V1BETA1,
            100,
        ),
    ];
    let mut g = c.benchmark_group("conversion_review");
    for (name, body, desired, n) in &cases {
        check(body, desired, *n);
        g.throughput(Throughput::Elements(*n as u64));
        g.bench_function(*name, |b| {
            b.iter(|| {
                let r = conversion::review(black_box(body)).expect("a ConversionReview");
                black_box(serde_json::to_vec(&r).expect("serializes"))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
