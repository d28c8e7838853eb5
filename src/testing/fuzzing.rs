//! The bodies of the fuzz targets: every parser that reads request bytes or
//! a user's text, driven with arbitrary bytes, checking properties beyond
//! "does not panic". `fuzz/fuzz_targets/<name>.rs` hands libFuzzer's input
//! to the function of the same name; `tests/fuzz_corpus.rs` replays the
//! committed corpora (`fuzz/corpus/<name>/`) and a bounded mutation smoke
//! through the same functions on the stable toolchain.
//!
//! A failed property panics, naming the input: that is how libFuzzer
//! records a finding.

use std::sync::OnceLock;

use chrono::{DateTime, Timelike};
use serde_json::Value;

use crate::config::Config;
use crate::vocabulary::{duration::GoDuration, quantity::Quantity};
use crate::{
    admission::review::{self, AdmissionRequest, AdmissionResponse, ParseError},
    api::{
        devices::v1alpha1::Attribute,
        selector::{LabelSelector, NamespaceNameOnly},
    },
    devices::expression,
    jobs::policy::{Interest, Policy, PolicySet},
    kueuectl::{quota, taint},
    prescale::{
        cron::{self, Parsed, Schedule},
        instant,
    },
    queueing,
};

/// A target's body: arbitrary bytes in, a panic when a property fails.
pub type Target = fn(&[u8]);

/// Every target by name (the name of its corpus directory and of its
/// `cargo fuzz` target).
pub const TARGETS: &[(&str, Target)] = &[
    ("review", review),
    ("salvage_uid", salvage_uid),
    ("quantity", quantity),
    ("selector", selector),
    ("cron", cron),
    ("duration", duration),
    ("expression", expression),
    ("policy", policy),
    ("kueuectl", kueuectl),
    ("conversion", conversion),
];

/// What the webhook reads of a job-kind object: the embedded policies'
/// interest, as the server computes it.
fn job_interest() -> &'static Interest {
    static INTEREST: OnceLock<Interest> = OnceLock::new();
    INTEREST.get_or_init(|| match PolicySet::embedded() {
        Ok(set) => crate::admission::object::interest(&set),
        Err(e) => panic!("the embedded policies do not load: {e}"),
    })
}

/// `value` cut down to what `interest` names: what the sparse reader must
/// return for an object the whole reader reads as `value`.
fn project(value: &Value, interest: &Interest) -> Value {
    if interest.whole {
        return value.clone();
    }
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(k, v)| interest.child(k).map(|c| (k.clone(), project(v, c))))
                .collect(),
        ),
        Value::Array(items) => Value::Array(match &interest.each {
            Some(each) => items.iter().map(|v| project(v, each)).collect(),
            None => Vec::new(),
        }),
        other => other.clone(),
    }
}

/// Whether `uid` occurs in `data` as a whole JSON string, quotes included.
fn quoted_in(data: &[u8], uid: &str) -> bool {
    let needle = format!("\"{uid}\"");
    data.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Errors of the whole reader that the sparse one cannot see, because they
/// sit in parts it skips (serde_json's skipper checks syntax only).
const WHOLE_ONLY_ERRORS: &[&str] = &[
    "recursion limit exceeded",
    "invalid unicode code point",
    "lone leading surrogate in hex escape",
    "unexpected end of hex escape",
    "number out of range",
];

fn envelope_fields(r: &AdmissionRequest) -> String {
    format!(
        "{:?}",
        (
            &r.uid,
            &r.kind,
            &r.operation,
            &r.namespace,
            &r.name,
            &r.user_info,
            r.dry_run
        )
    )
}

fn check_error(data: &[u8], e: &ParseError) {
    // A uid found in a body that does not parse was in the body.
    if e.message.starts_with("malformed AdmissionReview") {
        if let Some(uid) = &e.uid {
            assert!(
                quoted_in(data, uid),
                "salvaged uid {uid:?} is not in the body"
            );
        }
    }
    // The denial sent back for it is a well-formed review.
    let reply =
        AdmissionResponse::bad_request(e.uid.clone().unwrap_or_default(), e.message.clone())
            .to_review_bytes();
    assert!(
        serde_json::from_slice::<Value>(&reply).is_ok(),
        "the reply to {e:?} is not JSON"
    );
}

/// The AdmissionReview reader, sparse (job kinds) and whole (the kinds
/// validated as a whole): both agree on everything both read, the sparse
/// object is exactly the whole object cut down to the policies' interest,
/// and the sparse reader refuses nothing the whole reader accepts.
pub fn review(data: &[u8]) {
    let interest = job_interest();
    let sparse = review::parse(data, interest);
    let whole = review::parse_whole(data);
    for e in [sparse.as_ref().err(), whole.as_ref().err()]
        .into_iter()
        .flatten()
    {
        check_error(data, e);
    }
    match (&sparse, &whole) {
        (Ok(s), Ok(w)) => {
            assert_eq!(envelope_fields(s), envelope_fields(w));
            let cut = |o: &Option<Value>| o.as_ref().map(|v| project(v, interest));
            assert_eq!(s.object, cut(&w.object), "object");
            assert_eq!(s.old_object, cut(&w.old_object), "oldObject");
            let _ = s.operation();
        }
        (Err(s), Ok(_)) => panic!("the sparse reader refused what the whole reader read: {s:?}"),
        (Ok(_), Err(w)) => assert!(
            WHOLE_ONLY_ERRORS.iter().any(|m| w.message.contains(m)),
            "the whole reader refused, for a reason the sparse reader should see too: {w:?}"
        ),
        (Err(s), Err(w)) => {
            let malformed = |e: &ParseError| e.message.starts_with("malformed");
            if malformed(s) == malformed(w) {
                assert_eq!(s.uid, w.uid, "the two readers answer with different uids");
            }
        }
    }
}

/// The uid salvage scan over a body that does not parse: what it returns
/// is a plausible uid that the body holds as a JSON string.
pub fn salvage_uid(data: &[u8]) {
    let Some(uid) = review::salvage_uid(data) else {
        return;
    };
    assert!(!uid.is_empty() && uid.len() <= 128, "{uid:?}");
    assert!(
        uid.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
        "{uid:?}"
    );
    assert!(
        quoted_in(data, &uid),
        "salvaged uid {uid:?} is not in the body"
    );
}

/// Nano-units above which `Quantity` caps (ParseQuantity's 2^63-1 units).
const MAX_NANOS: i128 = i64::MAX as i128 * 1_000_000_000;

/// Both quantity parsers: the webhook's exact one prints a canonical form
/// that reads back as the same amount and prints the same; the quota
/// engine's milli-units print and read back unchanged; and where both
/// accept an input (and the exact one did not cap it) they agree on the
/// amount, rounded up to a milli-unit.
pub fn quantity(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let exact = Quantity::parse(text);
    if let Ok(q) = &exact {
        let printed = q.canonical();
        let again = Quantity::parse(&printed)
            .unwrap_or_else(|e| panic!("{text:?} prints as {printed:?}, which is refused: {e}"));
        assert_eq!(again.nanos(), q.nanos(), "{text:?} -> {printed:?}");
        assert_eq!(again.canonical(), printed, "{text:?}");
        let _ = (q.resource_value("cpu"), q.resource_value("memory"));
    }
    let Ok(milli) = queueing::quantity::parse(text) else {
        return;
    };
    for resource in ["cpu", "memory", "nvidia.com/gpu"] {
        let printed = queueing::quantity::format(resource, milli);
        let again = queueing::quantity::parse(&printed).ok();
        assert_eq!(again, Some(milli), "{text:?} as {resource} -> {printed:?}");
    }
    if let Ok(q) = &exact {
        let nanos = q.nanos();
        if nanos.abs() < MAX_NANOS {
            let up = nanos.abs() / 1_000_000 + i128::from(nanos.abs() % 1_000_000 != 0);
            let want = if nanos < 0 { -up } else { up };
            assert_eq!(i128::from(milli), want, "{text:?}: {nanos}n");
        }
    }
}

/// Label selectors as they reach batchgate: JSON in a Kueue object, YAML in
/// the config file. One accepted serializes and reads back equal, and its
/// `matchLabels` alone select the labels they name.
pub fn selector(data: &[u8]) {
    let read = [
        serde_json::from_slice::<LabelSelector>(data).ok(),
        serde_yaml::from_slice::<LabelSelector>(data).ok(),
    ];
    for s in read.into_iter().flatten() {
        let _ = s.validate();
        let json = match serde_json::to_vec(&s) {
            Ok(j) => j,
            Err(e) => panic!("{s:?} does not serialize: {e}"),
        };
        let back = serde_json::from_slice::<LabelSelector>(&json).ok();
        assert_eq!(
            back.as_ref(),
            Some(&s),
            "{}",
            String::from_utf8_lossy(&json)
        );
        let labels_only = LabelSelector {
            match_labels: s.match_labels.clone(),
            match_expressions: Vec::new(),
        };
        assert!(labels_only.matches(&s.match_labels));
        let _ = s.matches(&s.match_labels);
        let _ = s.matches(&NamespaceNameOnly("team-a"));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(cfg) = Config::parse("fuzz.yaml", text) {
            let _ = cfg
                .managed_namespaces()
                .matches(&NamespaceNameOnly("kube-system"));
        }
    }
}

/// An instant well inside chrono's range, for evaluating schedules.
const FROM: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

/// The cron parser: a schedule accepted reads back the same from the text
/// it keeps, lists its times of day in order, and is evaluable: the next
/// firing (UTC and a zone with daylight saving) is later than the start, on
/// a matching day, hour and minute, and is its own previous firing.
pub fn cron(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(Parsed::Cron(s)) = cron::parse(text) else {
        return;
    };
    let again = Schedule::parse(&s.text)
        .unwrap_or_else(|e| panic!("{text:?} keeps {:?}, which is refused: {e}", s.text));
    for (a, b) in [
        (&s.minute, &again.minute),
        (&s.hour, &again.hour),
        (&s.dom, &again.dom),
        (&s.month, &again.month),
        (&s.dow, &again.dow),
    ] {
        assert_eq!((a.bits, a.star), (b.bits, b.star), "{text:?}");
        assert_eq!(a.listed.len() as u32, a.count(), "{text:?}");
    }
    let times = s.times_of_day();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{text:?}");
    assert!(times.iter().all(|t| *t < 24 * 60), "{text:?}");
    let Some(t) = instant::next(&s, chrono_tz::UTC, FROM) else {
        // Nothing in five years (31 February): no day may match either.
        let day = |i: i64| DateTime::from_timestamp(FROM + i * 86_400, 0).map(|d| d.date_naive());
        assert!(
            !(0..4 * 365).filter_map(day).any(|d| s.day_matches(d)),
            "{text:?} matches a day but never fires"
        );
        return;
    };
    assert!(t > FROM, "{text:?}");
    let Some(at) = DateTime::from_timestamp(t, 0) else {
        panic!("{text:?} fires at {t}, out of range");
    };
    assert!(s.day_matches(at.date_naive()), "{text:?} at {at}");
    assert!(
        s.hour.has(at.hour()) && s.minute.has(at.minute()),
        "{text:?} at {at}"
    );
    assert_eq!(at.second(), 0, "{text:?}");
    assert_eq!(
        instant::previous(&s, chrono_tz::UTC, t),
        Some(t),
        "{text:?}"
    );
    if let Some(local) = instant::next(&s, chrono_tz::America::New_York, FROM) {
        assert!(local > FROM, "{text:?}");
    }
}

/// Go durations: one accepted prints (as Go's `String()`) back to the same
/// duration.
pub fn duration(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(d) = GoDuration::parse(text) else {
        return;
    };
    let printed = d.to_string();
    assert_eq!(
        GoDuration::parse(&printed),
        Ok(d),
        "{text:?} -> {printed:?}"
    );
    let _ = (d.to_std(), d.to_signed());
}

fn sample_attributes() -> &'static [Vec<Attribute>] {
    static ATTRS: OnceLock<Vec<Vec<Attribute>>> = OnceLock::new();
    ATTRS.get_or_init(|| {
        let quantity = |name: &str, q: &str| Attribute {
            name: name.into(),
            quantity_value: Some(k8s_openapi::apimachinery::pkg::api::resource::Quantity(
                q.into(),
            )),
            ..Attribute::default()
        };
        let int = |name: &str, i: i64| Attribute {
            name: name.into(),
            int_value: Some(i),
            ..Attribute::default()
        };
        vec![
            Vec::new(),
            vec![
                Attribute::string("vendor", "example.com"),
                Attribute::string("model", "foozer-1000"),
                Attribute::sem_ver("firmwareVersion", "4.2.1-gen3"),
                int("cores", 8),
                quantity("memory", "10Gi"),
                quantity("bad", "ten"),
            ],
            vec![
                Attribute::string("a", ""),
                Attribute::sem_ver("v", "v1.10.0+build.7"),
                int("n", i64::MAX),
                quantity("memory", "-1.5e3"),
            ],
        ]
    })
}

/// Device constraint expressions: one accepted prints back to the same tree
/// (unless printing adds parentheses beyond the depth limit), evaluates
/// against sample pools without panicking, and `meets` agrees with it.
pub fn expression(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = expression::parse(text);
    if let Ok(Some(e)) = &parsed {
        let printed = e.to_string();
        match expression::parse(&printed) {
            Ok(back) => assert_eq!(back.as_ref(), Some(e), "{text:?} -> {printed:?}"),
            Err(err) => assert!(
                err.message.contains("nests too deeply"),
                "{text:?} prints as {printed:?}, which is refused: {err}"
            ),
        }
    }
    for attrs in sample_attributes() {
        let want = match &parsed {
            Ok(None) => Ok(true),
            Ok(Some(e)) => e.eval(attrs).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        assert_eq!(expression::meets(Some(text), attrs), want, "{text:?}");
    }
}

/// Objects of the integrated kinds' shapes, for a fuzzed policy to read.
fn sample_objects() -> &'static [Value] {
    static OBJECTS: OnceLock<Vec<Value>> = OnceLock::new();
    OBJECTS.get_or_init(|| {
        let template = serde_json::json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}});
        vec![
            serde_json::json!({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "j", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}, "annotations": {"a": "b"}},
                "spec": {"suspend": false, "parallelism": 3, "completions": 6, "completionMode": "Indexed", "managedBy": "kueue.x-k8s.io/multikueue", "template": template},
                "status": {"active": 1, "conditions": [{"type": "Complete", "status": "True", "message": "done"}]}
            }),
            serde_json::json!({
                "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": "js"},
                "spec": {"suspend": true, "replicatedJobs": [
                    {"name": "Leader", "replicas": 1, "template": {"spec": {"parallelism": 1, "completions": 1, "template": template}}},
                    {"name": "workers", "replicas": 4, "template": {"spec": {"parallelism": "2", "template": template}}},
                    {"name": 7, "replicas": -1},
                    null
                ]}
            }),
            serde_json::json!({
                "apiVersion": "ray.io/v1", "kind": "RayJob",
                "metadata": {"name": "r"},
                "spec": {"suspend": true, "shutdownAfterJobFinishes": true, "clusterSelector": {},
                    "rayClusterSpec": {"enableInTreeAutoscaling": false,
                        "headGroupSpec": {"template": template},
                        "workerGroupSpecs": [{"groupName": "small", "replicas": 2, "minReplicas": 1, "maxReplicas": 5, "template": template}, {"groupName": "big", "replicas": 9007199254740993u64, "template": template}]},
                    "pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template}, "Worker": {"replicas": 1.5}}},
                "status": {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "message": "ok"}
            }),
            serde_json::json!([1, "x", {"spec": null}]),
        ]
    })
}

/// The policy file loader: a policy accepted notes what it reads, and the
/// sparse reader, reading an object through that interest, keeps all it
/// needs: pod sets and skipping come out the same as from the whole object.
pub fn policy(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(p) = Policy::from_yaml("fuzz.yaml", text) else {
        return;
    };
    let mut interest = Interest::default();
    p.note_interest(&mut interest);
    let mut set = PolicySet::default();
    let _ = set.insert(p.clone());
    for obj in sample_objects() {
        let whole = p.pod_sets(obj);
        let body = serde_json::json!({
            "apiVersion": review::API_VERSION, "kind": "AdmissionReview",
            "request": {"uid": "u", "object": obj},
        });
        let sparse = match serde_json::to_vec(&body).map(|b| review::parse(&b, &interest)) {
            Ok(Ok(req)) => req.object.unwrap_or(Value::Null),
            other => panic!("a sample object does not read back: {other:?}"),
        };
        assert_eq!(
            p.pod_sets(&sparse),
            whole,
            "pod sets differ when read sparsely"
        );
        assert_eq!(
            p.skips(&sparse),
            p.skips(obj),
            "skipWhen differs when read sparsely"
        );
        if let Some(status) = &p.status {
            let _ = (status.progress(obj), status.is_active(obj));
        }
    }
}

/// kubectl kueue's flag syntaxes, one per line: taints and tolerations
/// (an accepted taint written back as `key=value:effect` reads the same)
/// and ClusterQueue quotas (lines dealt to nominal, borrowing, lending).
pub fn kueuectl(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    for line in &lines {
        if let Ok(t) = taint::parse_taint(line) {
            let value = t
                .value
                .as_deref()
                .map(|v| format!("={v}"))
                .unwrap_or_default();
            let written = format!("{}{value}:{}", t.key, t.effect);
            assert_eq!(taint::parse_taint(&written).ok(), Some(t), "{line:?}");
        }
        if let Ok(t) = taint::parse_toleration(line) {
            let mut written = format!(
                "{}{}{}",
                t.key.as_deref().unwrap_or(""),
                t.value
                    .as_deref()
                    .map(|v| format!("={v}"))
                    .unwrap_or_default(),
                t.effect
                    .as_deref()
                    .map(|e| format!(":{e}"))
                    .unwrap_or_default()
            );
            if written.is_empty() {
                // Tolerates everything: written as the bare separator.
                written.push(':');
            }
            assert_eq!(taint::parse_toleration(&written).ok(), Some(t), "{line:?}");
        }
        let _ = quota::matches_pattern(line);
    }
    let _ = (
        taint::parse_taints(&lines),
        taint::parse_tolerations(&lines),
    );
    let dealt = |k: usize| -> Vec<String> { lines.iter().skip(k).step_by(3).cloned().collect() };
    let _ = quota::resource_groups(&dealt(0), &dealt(1), &dealt(2));
}

/// The ConversionReview reader and the v1beta1 ⇄ v1beta2 converter behind
/// `POST /convert`: a review answered `Success` converts every object it
/// was sent, each Kueue object ends in the desired version, and converting
/// an answer to the version it already has changes nothing.
pub fn conversion(data: &[u8]) {
    use crate::api::kueue::conversion::{self as conv, KINDS, V1BETA1, V1BETA2};
    let Ok(answer) = conv::review(data) else {
        return;
    };
    let response = &answer["response"];
    if response["result"]["status"] != "Success" {
        return;
    }
    let Ok(sent) = serde_json::from_slice::<Value>(data) else {
        panic!("a review that was answered does not parse again");
    };
    let desired = sent["request"]["desiredAPIVersion"].as_str().unwrap_or("");
    let objects = sent["request"]["objects"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let converted = response["convertedObjects"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    assert_eq!(
        converted.len(),
        objects.len(),
        "every object sent comes back converted"
    );
    for (from, to) in objects.iter().zip(converted) {
        let kueue = matches!(from["apiVersion"].as_str(), Some(V1BETA1 | V1BETA2))
            && from["kind"].as_str().is_some_and(|k| KINDS.contains(&k));
        if kueue && matches!(desired, V1BETA1 | V1BETA2) {
            assert_eq!(to["apiVersion"], desired, "{from} -> {to}");
            let again = conv::convert(to.clone(), desired);
            assert!(
                again.as_ref().is_ok_and(|a| a == to),
                "converting {to} to {desired} again changed it: {again:?}"
            );
        }
    }
}
