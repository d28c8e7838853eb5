//! The pure request path: AdmissionReview bytes in, response bytes out
//! (`Router::answer`), without sockets, TLS or HTTP.
//!
//!     cargo bench --bench handler
//!
//! Each case is checked once before it is measured, so a fixture that stops
//! taking the intended path fails loudly instead of benchmarking the wrong
//! branch.

mod fixtures;

use std::{hint::black_box, sync::Arc};

use batchgate::{
    admission::{family::Hook, router::Router},
    admission::{NoCluster, Settings},
    api::selector::LabelSelector,
    jobs::policy::PolicySet,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::Value;

fn webhook() -> Router {
    let policies = PolicySet::embedded().expect("embedded policies load");
    let settings = Settings {
        manage_jobs_without_queue_name: false,
        managed_namespaces: LabelSelector::excluding_namespaces(&[
            "kube-system",
            "batchgate-system",
        ]),
    };
    Router::new(
        policies,
        settings,
        Arc::new(NoCluster),
        Arc::new(|| chrono::Utc::now().date_naive()),
    )
}

/// Runs the case once and checks the response is the expected kind.
fn check(w: &Router, hook: Hook, body: &[u8], patched: bool) {
    let a = w.answer(hook, body);
    assert_eq!(a.status, 200, "HTTP status");
    let v: Value = serde_json::from_slice(&a.body).expect("response is JSON");
    let r = &v["response"];
    assert_eq!(r["allowed"], true, "{r}");
    assert_eq!(r.get("patch").is_some(), patched, "patch presence: {r}");
}

fn bench(c: &mut Criterion) {
    let w = webhook();
    // A queued Pod's CREATE against the Job's, same run: pods are created
    // far more often than jobs (issue 40: within 1.5x of the Job's cost).
    let cases: [(&str, Hook, Vec<u8>, bool); 7] = [
        (
            "mutate/job_create_queued",
            Hook::Mutate,
            fixtures::job_create_queued(),
            true,
        ),
        (
            "mutate/pod_create_queued",
            Hook::Mutate,
            fixtures::pod_create_queued(),
            true,
        ),
        (
            "validate/job_create_queued",
            Hook::Validate,
            fixtures::job_create_queued(),
            false,
        ),
        (
            "validate/pod_create_queued",
            Hook::Validate,
            fixtures::pod_create_queued(),
            false,
        ),
        (
            "mutate/job_create_unqueued",
            Hook::Mutate,
            fixtures::job_create_unqueued(),
            false,
        ),
        (
            "validate/job_update_start",
            Hook::Validate,
            fixtures::job_update_start(),
            false,
        ),
        (
            "mutate/unknown_kind",
            Hook::Mutate,
            fixtures::unknown_kind_create(),
            false,
        ),
    ];
    let mut g = c.benchmark_group("answer");
    for (name, hook, body, patched) in &cases {
        check(&w, *hook, body, *patched);
        let resp = w.answer(*hook, body).body.len();
        eprintln!(
            "{name}: request {} bytes, response {resp} bytes",
            body.len()
        );
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| w.answer(black_box(*hook), black_box(body)))
        });
    }
    // The floor for any handler that reads the review at all: checking the
    // queued Job review is well-formed JSON, building nothing.
    let body = fixtures::job_create_queued();
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("reference/json_syntax_check_only", |b| {
        b.iter(|| serde_json::from_slice::<serde::de::IgnoredAny>(black_box(&body)).is_ok())
    });
    // The same check by a SIMD parser, to see whether the floor above is
    // serde_json's or the review's: per token, not per byte (BENCHMARKS.md).
    g.bench_function("reference/json_syntax_check_only_sonic_rs", |b| {
        b.iter(|| sonic_rs::from_slice::<serde::de::IgnoredAny>(black_box(&body)).is_ok())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
