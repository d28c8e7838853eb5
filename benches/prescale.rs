//! PreScaledCronJob validation, as the webhook runs it on every create and
//! update: `prescale::plan` (parse, lay out the runs and the primer on
//! eight years of wall-clock minutes, the shortest gap, the derived
//! primer's exactness check or an explicit primer's coverage) and the
//! webhook's whole `Router::answer` for a PreScaledCronJob review.
//!
//!     cargo bench --bench prescale
//!
//! Each case is checked once before it is measured.

use std::{hint::black_box, sync::Arc};

use batchgate::{
    admission::{family::Hook, router::Router},
    admission::{NoCluster, Settings},
    api::selector::LabelSelector,
    jobs::policy::PolicySet,
    prescale::{plan, Spec},
};
use chrono::NaiveDate;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

fn spec<'a>(schedule: &'a str, w: Option<i64>, primer: Option<&'a str>) -> Spec<'a> {
    Spec {
        name: "bench",
        schedule: Some(schedule),
        time_zone: Some("Europe/Berlin"),
        warm_up_mins: w,
        primer_schedule: primer,
    }
}

fn plans(c: &mut Criterion) {
    let day = NaiveDate::from_ymd_opt(2026, 11, 21).unwrap();
    let cases = [
        ("daily, warm-up", spec("0 0 * * *", Some(10), None)),
        ("every 30 min, warm-up", spec("5/30 * * * *", Some(5), None)),
        ("every 2 min, warm-up", spec("*/2 * * * *", Some(1), None)),
        (
            "every 30 min, primerSchedule",
            spec("5/30 * * * *", None, Some("*/30 * * * *")),
        ),
        (
            "every 2 min, primerSchedule",
            spec("1-59/2 * * * *", None, Some("*/2 * * * *")),
        ),
        (
            "weekdays, warm-up across midnight",
            spec("0 0 * * 1-5", Some(10), None),
        ),
    ];
    for (name, s) in &cases {
        assert!(plan(s, day).is_ok(), "{name}");
        c.bench_function(&format!("plan: {name}"), |b| {
            b.iter(|| plan(black_box(s), black_box(day)))
        });
    }
}

fn review(c: &mut Criterion) {
    let webhook = Router::new(
        PolicySet::embedded().unwrap(),
        Settings {
            manage_jobs_without_queue_name: false,
            managed_namespaces: LabelSelector::excluding_namespaces(&["kube-system"]),
        },
        Arc::new(NoCluster),
        Arc::new(|| chrono::Utc::now().date_naive()),
    );
    let body = serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "u", "operation": "CREATE",
            "kind": {"group": "psc.cronprimer.local", "version": "v1alpha1", "kind": "PreScaledCronJob"},
            "resource": {"group": "psc.cronprimer.local", "version": "v1alpha1", "resource": "prescaledcronjobs"},
            "namespace": "ns", "name": "sample",
            "userInfo": {"username": "alice"},
            "object": {"apiVersion": "psc.cronprimer.local/v1alpha1", "kind": "PreScaledCronJob",
                "metadata": {"name": "sample", "namespace": "ns"},
                "spec": {"warmUpTimeMins": 5, "cronJob": {"spec": {"schedule": "5/30 * * * *",
                    "jobTemplate": {"spec": {"template": {"spec": {
                        "containers": [{"name": "c", "image": "busybox"}],
                        "restartPolicy": "OnFailure"}}}}}}}}
        }
    }))
    .unwrap();
    let answer = webhook.answer(Hook::Validate, &body);
    let text = String::from_utf8_lossy(&answer.body).to_string();
    assert!(text.contains("\"allowed\":true"), "{text}");
    c.bench_function("webhook: PreScaledCronJob review (every 30 min)", |b| {
        b.iter(|| webhook.answer(Hook::Validate, black_box(&body)))
    });
}

criterion_group!(benches, plans, review);
criterion_main!(benches);
