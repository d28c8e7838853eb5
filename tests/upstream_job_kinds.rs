//! Upstream's webhook test tables for the job kinds, case by case, against
//! the real `batchgate serve --no-cluster` over TLS.
//!
//! Each table names the upstream file and test it comes from (Kueue
//! v0.19.2, AppWrapper v1.2.1). The objects are written here from what the
//! upstream builders produce; the expected answers are upstream's, with its
//! default feature gates. A case upstream runs with a non-default gate that
//! changes its answer is left out (counted as "not ported"); a case where
//! batchgate answers differently on purpose is a [`Want::Differs`] and is
//! listed in docs/job-kinds.md ("Job kinds: upstream's tables, and the differences"). Cases
//! that need a cluster fact (a LocalQueue named `default`, a
//! SubjectAccessReview) are in the e2e tests, as docs/job-kinds.md says.

mod support;

use hyper::StatusCode;
use serde_json::{json, Value};
use support::*;

const QUEUE: &str = "kueue.x-k8s.io/queue-name";
const PREBUILT: &str = "kueue.x-k8s.io/prebuilt-workload-name";
const MAX_EXEC: &str = "kueue.x-k8s.io/max-exec-time-seconds";
const PRIORITY: &str = "kueue.x-k8s.io/priority-class";
const MIN_PARALLELISM: &str = "kueue.x-k8s.io/job-min-parallelism";
const SYNC_COMPLETIONS: &str = "kueue.x-k8s.io/job-completions-equal-parallelism";
const STOPPING: &str = "kueue.x-k8s.io/stopping";
const ELASTIC: &str = "kueue.x-k8s.io/elastic-job";
const GATED_BY: &str = "kueue.x-k8s.io/admission-gated-by";
const REQUIRED: &str = "kueue.x-k8s.io/podset-required-topology";
const PREFERRED: &str = "kueue.x-k8s.io/podset-preferred-topology";
const UNCONSTRAINED: &str = "kueue.x-k8s.io/podset-unconstrained-topology";
const SLICE_REQUIRED: &str = "kueue.x-k8s.io/podset-slice-required-topology";
const SLICE_SIZE: &str = "kueue.x-k8s.io/podset-slice-size";
const GROUP: &str = "kueue.x-k8s.io/podset-group-name";

const RFC1123: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_KEY: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const INVALID_PATH: &str =
    "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')";
const MORE_THAN_ONE: &str = "must not contain more than one topology annotation: [\"kueue.x-k8s.io/podset-required-topology\", \"kueue.x-k8s.io/podset-preferred-topology\", \"kueue.x-k8s.io/podset-unconstrained-topology\"]";

const JOBSET: (&str, &str, &str) = ("jobset.x-k8s.io", "v1alpha2", "JobSet");
const MPIJOB: (&str, &str, &str) = ("kubeflow.org", "v2beta1", "MPIJob");
const RAYJOB: (&str, &str, &str) = ("ray.io", "v1", "RayJob");
const RAYCLUSTER: (&str, &str, &str) = ("ray.io", "v1", "RayCluster");
const RAYSERVICE: (&str, &str, &str) = ("ray.io", "v1", "RayService");
const APPWRAPPER: (&str, &str, &str) = ("workload.codeflare.dev", "v1beta2", "AppWrapper");

/// What upstream answers.
enum Want {
    Allow,
    /// Refused (403) with exactly this message.
    Deny(String),
    /// Refused; upstream's test checks only that the request fails.
    DenyAny,
    /// batchgate answers `ours` on purpose where upstream answers
    /// otherwise (docs/job-kinds.md lists each with its reason). None
    /// today: the last two (Ray autoscaling of an elastic job) answer as
    /// upstream since workload slices.
    #[allow(dead_code)]
    Differs {
        ours: Box<Want>,
    },
}

struct Case {
    name: String,
    kind: (&'static str, &'static str, &'static str),
    old: Option<Value>,
    new: Value,
    want: Want,
}

fn case(
    name: &str,
    kind: (&'static str, &'static str, &'static str),
    new: Value,
    want: Want,
) -> Case {
    Case {
        name: name.into(),
        kind,
        old: None,
        new,
        want,
    }
}

fn update(
    name: &str,
    kind: (&'static str, &'static str, &'static str),
    old: Value,
    new: Value,
    want: Want,
) -> Case {
    Case {
        name: name.into(),
        kind,
        old: Some(old),
        new,
        want,
    }
}

fn deny(errors: &[String]) -> Want {
    Want::Deny(if errors.len() == 1 {
        errors[0].clone()
    } else {
        format!("[{}]", errors.join(", "))
    })
}

fn esc(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `v` with `val` at `ptr`, creating the objects on the way.
fn set(mut v: Value, ptr: &str, val: Value) -> Value {
    let mut cur = &mut v;
    let tokens: Vec<String> = ptr
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (i, t) in tokens.iter().enumerate() {
        let last = i + 1 == tokens.len();
        if let Value::Array(a) = cur {
            let idx: usize = t.parse().unwrap();
            cur = &mut a[idx];
        } else {
            if !cur.is_object() {
                *cur = json!({});
            }
            let m = cur.as_object_mut().unwrap();
            if last {
                m.insert(t.clone(), val);
                return v;
            }
            cur = m.entry(t.clone()).or_insert_with(|| json!({}));
        }
        if last {
            *cur = val;
            return v;
        }
    }
    v
}

fn label(v: Value, k: &str, val: &str) -> Value {
    set(v, &format!("/metadata/labels/{}", esc(k)), json!(val))
}

fn ann(v: Value, k: &str, val: &str) -> Value {
    set(v, &format!("/metadata/annotations/{}", esc(k)), json!(val))
}

fn queue(v: Value, q: &str) -> Value {
    label(v, QUEUE, q)
}

/// Annotations on the pod template at `template`.
fn pod_anns(mut v: Value, template: &str, anns: &[(&str, &str)]) -> Value {
    for (k, val) in anns {
        v = set(
            v,
            &format!("{template}/metadata/annotations/{}", esc(k)),
            json!(val),
        );
    }
    v
}

fn pod_spec(container: &str) -> Value {
    json!({"restartPolicy": "Never", "nodeSelector": {},
           "containers": [{"name": container, "image": "registry.k8s.io/pause:3.10",
                           "resources": {"requests": {}, "limits": {}}}]})
}

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": "default", "annotations": {}})
}

// ---- batch/v1 Job ---------------------------------------------------------

/// `testingjobs/job.MakeJob`: suspended, parallelism 1.
fn mk_job() -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("job"),
           "spec": {"parallelism": 1, "suspend": true, "template": {"spec": pod_spec("c")}}})
}

fn job_spec(v: Value, field: &str, val: Value) -> Value {
    set(v, &format!("/spec/{field}"), val)
}

fn job_pod_ann(v: Value, anns: &[(&str, &str)]) -> Value {
    pod_anns(v, "/spec/template", anns)
}

fn p4c6() -> Value {
    job_spec(
        job_spec(mk_job(), "parallelism", json!(4)),
        "completions",
        json!(6),
    )
}

fn p4c4_indexed() -> Value {
    let v = job_spec(
        job_spec(mk_job(), "parallelism", json!(4)),
        "completions",
        json!(4),
    );
    job_spec(v, "completionMode", json!("Indexed"))
}

fn ann_path(k: &str) -> String {
    format!("metadata.annotations[{k}]")
}

fn label_path(k: &str) -> String {
    format!("metadata.labels[{k}]")
}

fn job_tmpl_ann(k: &str) -> String {
    format!("spec.template.metadata.annotations[{k}]")
}

/// Kueue pkg/controller/jobs/job/job_webhook_test.go, TestValidateCreate.
fn job_validate_create() -> Vec<Case> {
    use Want::*;
    let j = JOB;
    let gate = |v: &str| ann(queue(mk_job(), "queue"), GATED_BY, v);
    let gate_err = |val: &str, detail: &str| {
        deny(&[format!(
            "{}: Invalid value: {}: {detail}",
            ann_path(GATED_BY),
            json!(val)
        )])
    };
    vec![
        case("simple", j, queue(mk_job(), "queue"), Allow),
        case(
            "invalid queue-name label",
            j,
            queue(mk_job(), "queue name"),
            deny(&[format!("{}: Invalid value: \"queue name\": {RFC1123}", label_path(QUEUE))]),
        ),
        case(
            "invalid partial admission annotation (format)",
            j,
            ann(p4c6(), MIN_PARALLELISM, "NaN"),
            deny(&[format!(
                "{}: Invalid value: \"NaN\": strconv.Atoi: parsing \"NaN\": invalid syntax",
                ann_path(MIN_PARALLELISM)
            )]),
        ),
        case(
            "invalid partial admission annotation (badValue)",
            j,
            ann(p4c6(), MIN_PARALLELISM, "5"),
            deny(&[format!("{}: Invalid value: 5: should be between 0 and 3", ann_path(MIN_PARALLELISM))]),
        ),
        case("valid partial admission annotation", j, ann(p4c6(), MIN_PARALLELISM, "3"), Allow),
        case(
            "invalid sync completions annotation (format)",
            j,
            job_spec(ann(p4c6(), SYNC_COMPLETIONS, "-"), "completionMode", json!("Indexed")),
            deny(&[format!(
                "{}: Invalid value: \"-\": strconv.ParseBool: parsing \"-\": invalid syntax",
                ann_path(SYNC_COMPLETIONS)
            )]),
        ),
        case(
            "valid sync completions annotation, wrong completions count",
            j,
            job_spec(ann(p4c6(), SYNC_COMPLETIONS, "true"), "completionMode", json!("Indexed")),
            deny(&[format!("spec.completions: Invalid value: 6: should be equal to parallelism when {SYNC_COMPLETIONS} annotation is true")]),
        ),
        case(
            "valid sync completions annotation, wrong job completions type (default)",
            j,
            ann(job_spec(job_spec(mk_job(), "parallelism", json!(4)), "completions", json!(4)), SYNC_COMPLETIONS, "true"),
            deny(&[format!("{}: Invalid value: \"true\": should not be enabled for NonIndexed jobs", ann_path(SYNC_COMPLETIONS))]),
        ),
        case(
            "valid sync completions annotation, wrong job completions type",
            j,
            job_spec(ann(p4c4_indexed(), SYNC_COMPLETIONS, "true"), "completionMode", json!("NonIndexed")),
            deny(&[format!("{}: Invalid value: \"true\": should not be enabled for NonIndexed jobs", ann_path(SYNC_COMPLETIONS))]),
        ),
        case("valid sync completions annotation", j, ann(p4c4_indexed(), SYNC_COMPLETIONS, "true"), Allow),
        case(
            "invalid prebuilt workload",
            j,
            label(p4c4_indexed(), PREBUILT, "workload name"),
            deny(&[format!("{}: Invalid value: \"workload name\": {RFC1123}", label_path(PREBUILT))]),
        ),
        case("valid prebuilt workload", j, label(p4c4_indexed(), PREBUILT, "workload-name"), Allow),
        case(
            "invalid prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
            j,
            ann(p4c4_indexed(), PREBUILT, "workload name"),
            deny(&[format!("{}: Invalid value: \"workload name\": {RFC1123}", ann_path(PREBUILT))]),
        ),
        case(
            "valid prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
            j,
            ann(p4c4_indexed(), PREBUILT, "workload-name"),
            Allow,
        ),
        case(
            "different prebuilt workload label and annotation, label ignored, WorkloadIdentifierAnnotations enabled",
            j,
            ann(label(mk_job(), PREBUILT, "workload-label"), PREBUILT, "workload-annotation"),
            Allow,
        ),
        case(
            "invalid maximum execution time",
            j,
            label(p4c4_indexed(), MAX_EXEC, "NaN"),
            deny(&[format!("{}: Invalid value: \"NaN\": strconv.Atoi: parsing \"NaN\": invalid syntax", label_path(MAX_EXEC))]),
        ),
        case(
            "zero maximum execution time",
            j,
            label(p4c4_indexed(), MAX_EXEC, "0"),
            deny(&[format!("{}: Invalid value: 0: should be greater than 0", label_path(MAX_EXEC))]),
        ),
        case(
            "negative maximum execution time",
            j,
            label(p4c4_indexed(), MAX_EXEC, "-10"),
            deny(&[format!("{}: Invalid value: -10: should be greater than 0", label_path(MAX_EXEC))]),
        ),
        case("valid maximum execution time", j, label(p4c4_indexed(), MAX_EXEC, "10"), Allow),
        case("valid topology request", j, job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block")]), Allow),
        case(
            "invalid topology request - both annotations",
            j,
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (PREFERRED, "cloud.com/block")]),
            deny(&[format!("spec.template.metadata.annotations: Invalid value: {MORE_THAN_ONE}")]),
        ),
        case(
            "invalid topology request - invalid required",
            j,
            job_pod_ann(mk_job(), &[(REQUIRED, "some required value")]),
            deny(&[format!("{}: Invalid value: \"some required value\": {LABEL_KEY}", job_tmpl_ann(REQUIRED))]),
        ),
        case(
            "invalid topology request - invalid preferred",
            j,
            job_pod_ann(mk_job(), &[(PREFERRED, "some preferred value")]),
            deny(&[format!("{}: Invalid value: \"some preferred value\": {LABEL_KEY}", job_tmpl_ann(PREFERRED))]),
        ),
        case(
            "valid slice topology request",
            j,
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "1")]),
            Allow,
        ),
        case(
            "valid topology request - slice-only topology - unconstrained with slices defined",
            j,
            job_pod_ann(mk_job(), &[(UNCONSTRAINED, "true"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "1")]),
            Allow,
        ),
        case(
            "invalid topology request - slice requested without slice size",
            j,
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block")]),
            deny(&[format!("{}: Required value: must be set when '{SLICE_REQUIRED}' is specified", job_tmpl_ann(SLICE_SIZE))]),
        ),
        case(
            "invalid topology request - slice size is not a number",
            j,
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "not a number")]),
            deny(&[format!("{}: Invalid value: \"not a number\": must be a numeric value", job_tmpl_ann(SLICE_SIZE))]),
        ),
        case(
            "invalid topology request - slice size is negative",
            j,
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "-1")]),
            deny(&[format!("{}: Invalid value: \"-1\": must be greater than or equal to 1", job_tmpl_ann(SLICE_SIZE))]),
        ),
        case(
            "invalid topology request - slice size is zero",
            j,
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "0")]),
            deny(&[format!("{}: Invalid value: \"0\": must be greater than or equal to 1", job_tmpl_ann(SLICE_SIZE))]),
        ),
        case(
            "invalid topology request - slice size provided without slice topology",
            j,
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (SLICE_SIZE, "1")]),
            deny(&[format!("{}: Forbidden: may not be set when '{SLICE_REQUIRED}' is not specified", job_tmpl_ann(SLICE_SIZE))]),
        ),
        case(
            "valid topology request - slice-only topology",
            j,
            job_pod_ann(mk_job(), &[(SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "1")]),
            Allow,
        ),
        case(
            "invalid slice topology request - slice size larger than number of podsets",
            j,
            job_pod_ann(job_spec(mk_job(), "parallelism", json!(4)), &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "20")]),
            deny(&[format!("{}: Invalid value: \"20\": must not be greater than pod set count 4", job_tmpl_ann(SLICE_SIZE))]),
        ),
        case(
            "elastic job with required topology is rejected",
            j,
            job_pod_ann(ann(mk_job(), ELASTIC, "true"), &[(REQUIRED, "cloud.com/block")]),
            deny(&[format!("spec.template.metadata.annotations.{REQUIRED}: Forbidden: required topology is not supported with elastic jobs")]),
        ),
        case(
            "elastic job with preferred topology is rejected",
            j,
            job_pod_ann(ann(mk_job(), ELASTIC, "true"), &[(PREFERRED, "cloud.com/block")]),
            deny(&[format!("spec.template.metadata.annotations.{PREFERRED}: Forbidden: preferred topology is not supported with elastic jobs")]),
        ),
        case(
            "elastic job with unconstrained topology is accepted",
            j,
            job_pod_ann(ann(mk_job(), ELASTIC, "true"), &[(UNCONSTRAINED, "true")]),
            Allow,
        ),
        case("valid AdmissionGatedBy annotation with single gate", j, gate("example.com/controller"), Allow),
        case("AdmissionGatedBy annotation - trailing space", j, gate("example.com/gate "), Allow),
        case("AdmissionGatedBy annotation - space before comma", j, gate("example.com/gate ,example.com/gate2"), Allow),
        case("AdmissionGatedBy annotation - space after comma", j, gate("example.com/gate, example.com/gate2"), Allow),
        case("AdmissionGatedBy annotation - leading space", j, gate(" example.com/gate"), Allow),
        case("valid AdmissionGatedBy annotation with multiple gates", j, gate("example.com/a,not.example.com/b"), Allow),
        case(
            "invalid AdmissionGatedBy annotation - not in subdomain/path format",
            j,
            gate("this is an invalid value"),
            gate_err("this is an invalid value", "must be a domain-prefixed path (such as \"acme.io/foo\")"),
        ),
        case(
            "invalid AdmissionGatedBy annotation - duplicate gates",
            j,
            gate("duplicates.are/invalid,duplicates.are/invalid"),
            gate_err("duplicates.are/invalid,duplicates.are/invalid", "duplicate gate name: duplicates.are/invalid"),
        ),
        case(
            "invalid AdmissionGatedBy annotation - gate name too long",
            j,
            gate(&format!("cannot.be.too.long/{}", "but-this-is-too-long".repeat(20))),
            deny(&[format!("{}: Too long: may not be more than 63 bytes", ann_path(GATED_BY))]),
        ),
        case(
            "invalid AdmissionGatedBy annotation - space in path component",
            j,
            gate("example.com/gate name"),
            gate_err("gate name", INVALID_PATH),
        ),
        case(
            "invalid AdmissionGatedBy annotation - space in domain component",
            j,
            gate("example .com/gate"),
            gate_err("example .com", RFC1123),
        ),
        case(
            "invalid AdmissionGatedBy annotation - multiple gates with one containing space",
            j,
            gate("valid.com/gate,invalid gate.com/controller"),
            gate_err("invalid gate.com", RFC1123),
        ),
        case("AdmissionGatedBy annotation with feature gate enabled - empty string", j, gate(""), Allow),
        case(
            "partial admission and elastic job cannot be used together",
            j,
            ann(ann(p4c6(), MIN_PARALLELISM, "2"), ELASTIC, "true"),
            deny(&[format!("{}: Invalid value: \"2\": partial admission and elastic job cannot be used together", ann_path(MIN_PARALLELISM))]),
        ),
    ]
}

fn suspend(v: Value, s: bool) -> Value {
    job_spec(v, "suspend", json!(s))
}

/// Kueue pkg/controller/jobs/job/job_webhook_test.go, TestValidateUpdate.
fn job_validate_update() -> Vec<Case> {
    use Want::*;
    let j = JOB;
    let immutable = |path: String, v: &str| {
        deny(&[format!(
            "{path}: Invalid value: \"{v}\": field is immutable"
        )])
    };
    let q = |s: bool, name: Option<&str>| {
        let v = suspend(mk_job(), s);
        match name {
            Some(n) => queue(v, n),
            None => v,
        }
    };
    let wpc = |s: bool, name: Option<&str>| {
        let v = suspend(mk_job(), s);
        match name {
            Some(n) => label(v, PRIORITY, n),
            None => v,
        }
    };
    let gated = |v: Option<&str>| {
        let j = queue(mk_job(), "queue");
        match v {
            Some(v) => ann(j, GATED_BY, v),
            None => j,
        }
    };
    let mex = |s: bool, v: &str| label(suspend(mk_job(), s), MAX_EXEC, v);
    vec![
        update("normal update", j, queue(mk_job(), "queue"), q(false, Some("queue")), Allow),
        update("add queue name with suspend is false", j, mk_job(), q(false, Some("queue")), immutable(label_path(QUEUE), "queue")),
        update("add queue name with suspend is true", j, mk_job(), q(true, Some("queue")), Allow),
        update("change queue name with suspend is false", j, queue(mk_job(), "queue"), q(false, Some("queue2")), immutable(label_path(QUEUE), "queue2")),
        update("change queue name with suspend is true", j, mk_job(), q(true, Some("queue")), Allow),
        update(
            "change queue name with suspend is true, but invalid value",
            j,
            mk_job(),
            q(true, Some("queue name")),
            deny(&[format!("{}: Invalid value: \"queue name\": {RFC1123}", label_path(QUEUE))]),
        ),
        update(
            "immutable parallelism while unsuspended with partial admission enabled",
            j,
            ann(suspend(p4c6(), false), MIN_PARALLELISM, "3"),
            ann(job_spec(suspend(p4c6(), false), "parallelism", json!(5)), MIN_PARALLELISM, "3"),
            deny(&["spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended".into()]),
        ),
        update(
            "mutable parallelism while suspended with partial admission enabled",
            j,
            ann(ann(p4c6(), MIN_PARALLELISM, "3"), STOPPING, "true"),
            ann(job_spec(p4c6(), "parallelism", json!(5)), MIN_PARALLELISM, "3"),
            Allow,
        ),
        update(
            "immutable sync completion annotation while unsuspended",
            j,
            ann(suspend(p4c6(), false), SYNC_COMPLETIONS, "true"),
            ann(job_spec(suspend(p4c6(), false), "parallelism", json!(5)), SYNC_COMPLETIONS, "false"),
            deny(&[format!("{}: Forbidden: field is immutable while the job is not suspended", ann_path(SYNC_COMPLETIONS))]),
        ),
        update(
            "mutable sync completion annotation while suspended",
            j,
            ann(suspend(p4c6(), true), SYNC_COMPLETIONS, "true"),
            ann(job_spec(suspend(p4c6(), false), "parallelism", json!(5)), SYNC_COMPLETIONS, "false"),
            Allow,
        ),
        update(
            "set priority-class when job not suspend",
            j,
            wpc(false, None),
            wpc(false, Some("test")),
            deny(&[format!("{}: Invalid value: \"test\": WorkloadPriorityClass cannot be added to a non-suspended workload", label_path(PRIORITY))]),
        ),
        update("update priority-class when job not suspend", j, wpc(false, Some("test")), wpc(false, Some("new-test")), Allow),
        update(
            "delete priority-class when job not suspend",
            j,
            wpc(false, Some("test")),
            wpc(false, None),
            deny(&[format!("{}: Invalid value: \"\": WorkloadPriorityClass cannot be removed from a workload", label_path(PRIORITY))]),
        ),
        update("set priority-class when job suspend", j, wpc(true, None), wpc(true, Some("test")), Allow),
        update("update priority-class when job suspend", j, wpc(true, Some("test")), wpc(true, Some("new-test")), Allow),
        update(
            "delete priority-class when job suspend",
            j,
            wpc(true, Some("test")),
            wpc(true, None),
            deny(&[format!("{}: Invalid value: \"\": WorkloadPriorityClass cannot be removed from a workload", label_path(PRIORITY))]),
        ),
        update(
            "immutable prebuilt workload",
            j,
            label(suspend(mk_job(), true), PREBUILT, "old-workload"),
            label(suspend(mk_job(), false), PREBUILT, "new-workload"),
            immutable(label_path(PREBUILT), "new-workload"),
        ),
        update(
            "immutable prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
            j,
            ann(suspend(mk_job(), true), PREBUILT, "old-workload"),
            ann(suspend(mk_job(), false), PREBUILT, "new-workload"),
            immutable(ann_path(PREBUILT), "new-workload"),
        ),
        update(
            "migrate from label to annotation, WorkloadIdentifierAnnotations enabled",
            j,
            label(suspend(mk_job(), true), PREBUILT, "workload-name"),
            ann(suspend(mk_job(), false), PREBUILT, "workload-name"),
            Allow,
        ),
        update(
            "immutable queue name not suspend",
            j,
            q(false, Some("old-queue")),
            q(false, Some("new-queue")),
            immutable(label_path(QUEUE), "new-queue"),
        ),
        update("queue name can changes when it is  suspend", j, q(true, Some("old-queue")), q(true, Some("new-queue")), Allow),
        update(
            "can update the kueue.x-k8s.io/job-min-parallelism  annotation",
            j,
            ann(p4c6(), MIN_PARALLELISM, "3"),
            ann(p4c6(), MIN_PARALLELISM, "2"),
            Allow,
        ),
        update(
            "validates kueue.x-k8s.io/job-min-parallelism annotation value (bad format)",
            j,
            ann(p4c6(), MIN_PARALLELISM, "3"),
            ann(p4c6(), MIN_PARALLELISM, "NaN"),
            deny(&[format!("{}: Invalid value: \"NaN\": strconv.Atoi: parsing \"NaN\": invalid syntax", ann_path(MIN_PARALLELISM))]),
        ),
        update("immutable max exec time while unsuspended", j, mex(false, "10"), mex(false, "20"), immutable(label_path(MAX_EXEC), "20")),
        update("immutable max exec time while transitioning to unsuspended", j, mex(true, "10"), mex(false, "20"), immutable(label_path(MAX_EXEC), "20")),
        update("mutable max exec time while suspended", j, mex(true, "10"), mex(true, "20"), Allow),
        update("set valid TAS request", j, mk_job(), job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block")]), Allow),
        update(
            "attempt to set invalid TAS request",
            j,
            mk_job(),
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (PREFERRED, "cloud.com/block")]),
            deny(&[format!("spec.template.metadata.annotations: Invalid value: {MORE_THAN_ONE}")]),
        ),
        update(
            "valid slice topology request",
            j,
            mk_job(),
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "1")]),
            Allow,
        ),
        update(
            "attempt to set invalid slice topology request",
            j,
            mk_job(),
            job_pod_ann(mk_job(), &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block")]),
            deny(&[format!("{}: Required value: must be set when '{SLICE_REQUIRED}' is specified", job_tmpl_ann(SLICE_SIZE))]),
        ),
        update(
            "reject adding AdmissionGatedBy annotation after Job creation",
            j,
            gated(None),
            gated(Some("example.com/controller1")),
            deny(&[format!("{}: Forbidden: cannot add admission gate after creation", ann_path(GATED_BY))]),
        ),
        update("allow removing AdmissionGatedBy annotation with single gate", j, gated(Some("example.com/controller1")), gated(None), Allow),
        update(
            "allow removing AdmissionGatedBy annotation with multiple gates",
            j,
            gated(Some("example.com/controller1,example.com/controller2")),
            gated(None),
            Allow,
        ),
        update(
            "allow removing one gate from AdmissionGatedBy annotation",
            j,
            gated(Some("example.com/controller1,example.com/controller2")),
            gated(Some("example.com/controller2")),
            Allow,
        ),
        update(
            "reject injecting new gate in AdmissionGatedBy annotation",
            j,
            gated(Some("example.com/controller1,example.com/controller2")),
            gated(Some("example.com/controller3")),
            deny(&[format!("{}: Forbidden: can only remove gates, not add new ones", ann_path(GATED_BY))]),
        ),
        update(
            "allow reordering gates in AdmissionGatedBy annotation",
            j,
            gated(Some("example.com/controller1,example.com/controller2")),
            gated(Some("example.com/controller2,example.com/controller1")),
            Allow,
        ),
    ]
}

// ---- JobSet ---------------------------------------------------------------

/// `testingjobs/jobset.MakeJobSet`: suspended, no replicated jobs.
fn mk_jobset() -> Value {
    json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta("job"),
           "spec": {"suspend": true}})
}

/// `ReplicatedJobs(...)`: name, replicas, parallelism, completions, pod
/// annotations (the builder's zero values are kept).
/// One replicated job: name, replicas, parallelism, completions, pod annotations.
type ReplicatedJob<'a> = (&'a str, i64, i64, i64, &'a [(&'a str, &'a str)]);

fn rjobs(v: Value, jobs: &[ReplicatedJob<'_>]) -> Value {
    let list: Vec<Value> = jobs
        .iter()
        .map(|(name, r, p, c, anns)| {
            let annotations: serde_json::Map<String, Value> = anns
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            json!({"name": name, "replicas": r, "template": {"spec": {
                "parallelism": p, "completions": c,
                "template": {"metadata": {"annotations": annotations}, "spec": pod_spec("c")}}}})
        })
        .collect();
    set(v, "/spec/replicatedJobs", Value::Array(list))
}

fn rj_ann(i: usize) -> String {
    format!("spec.replicatedJobs[{i}].template.spec.template.metadata.annotations")
}

fn consistent(a: &str, b: &str, group: &str) -> [String; 2] {
    let m = |other: &str| {
        format!("must specify '{REQUIRED}' or '{PREFERRED}' topology consistent with '{other}' in group '{group}'")
    };
    [
        format!("{a}: Invalid value: {}", m(b)),
        format!("{b}: Invalid value: {}", m(a)),
    ]
}

/// Kueue pkg/controller/jobs/jobset/jobset_webhook_test.go, TestValidateCreate
/// and TestValidateUpdate.
fn jobset_validate() -> Vec<Case> {
    use Want::*;
    let k = JOBSET;
    let req = [(REQUIRED, "cloud.com/block")];
    vec![
        case("simple", k, queue(mk_jobset(), "queue"), Allow),
        case(
            "invalid queue-name label",
            k,
            queue(mk_jobset(), "queue_name"),
            deny(&[format!("{}: Invalid value: \"queue_name\": {RFC1123}", label_path(QUEUE))]),
        ),
        case("with prebuilt workload", k, label(queue(mk_jobset(), "queue"), PREBUILT, "prebuilt-workload"), Allow),
        case(
            "valid prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
            k,
            ann(queue(mk_jobset(), "queue"), PREBUILT, "prebuilt-workload"),
            Allow,
        ),
        case(
            "different prebuilt workload label and annotation, label ignored, WorkloadIdentifierAnnotations enabled",
            k,
            ann(label(queue(mk_jobset(), "queue"), PREBUILT, "prebuilt-workload-label"), PREBUILT, "prebuilt-workload-annotation"),
            Allow,
        ),
        case(
            "valid topology request",
            k,
            rjobs(mk_jobset(), &[("launcher", 0, 0, 0, &req), ("worker", 0, 0, 0, &req)]),
            Allow,
        ),
        case(
            "invalid topology request",
            k,
            rjobs(mk_jobset(), &[("launcher", 0, 0, 0, &req), ("worker", 0, 0, 0, &[(PREFERRED, "cloud.com/block"), (REQUIRED, "cloud.com/block")])]),
            deny(&[format!("{}: Invalid value: {MORE_THAN_ONE}", rj_ann(1))]),
        ),
        case(
            "invalid slice topology request - slice size larger than number of podsets",
            k,
            rjobs(mk_jobset(), &[("job1", 2, 1, 1, &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "20")])]),
            deny(&[format!("{}[{SLICE_SIZE}]: Invalid value: \"20\": must not be greater than pod set count 2", rj_ann(0))]),
        ),
        case(
            "valid PodSet grouping request",
            k,
            rjobs(mk_jobset(), &[
                ("launcher", 1, 1, 1, &[(GROUP, "groupname"), (REQUIRED, "cloud.com/block")]),
                ("worker", 4, 1, 1, &[(GROUP, "groupname"), (REQUIRED, "cloud.com/block")]),
            ]),
            Allow,
        ),
        case(
            "invalid PodSet grouping request - groups of size other than 2",
            k,
            rjobs(mk_jobset(), &[
                ("job1", 1, 1, 1, &[(REQUIRED, "cloud.com/block"), (GROUP, "1podset")]),
                ("job2", 1, 1, 1, &[(REQUIRED, "cloud.com/block"), (GROUP, "3podsets")]),
                ("job3", 2, 1, 1, &[(REQUIRED, "cloud.com/block"), (GROUP, "3podsets")]),
                ("job4", 2, 2, 1, &[(REQUIRED, "cloud.com/block"), (GROUP, "3podsets")]),
            ]),
            deny(&[
                format!("{}[{GROUP}]: Invalid value: \"1podset\": can only define groups of exactly 2 pod sets, got: 1 pod set(s)", rj_ann(0)),
                format!("{}[{GROUP}]: Invalid value: \"3podsets\": can only define groups of exactly 2 pod sets, got: 3 pod set(s)", rj_ann(1)),
                format!("{}[{GROUP}]: Invalid value: \"3podsets\": can only define groups of exactly 2 pod sets, got: 3 pod set(s)", rj_ann(2)),
                format!("{}[{GROUP}]: Invalid value: \"3podsets\": can only define groups of exactly 2 pod sets, got: 3 pod set(s)", rj_ann(3)),
            ]),
        ),
        case(
            "invalid PodSet grouping request - no leader in group",
            k,
            rjobs(mk_jobset(), &[
                ("job1", 2, 1, 1, &[(REQUIRED, "cloud.com/block"), (GROUP, "groupname")]),
                ("job2", 1, 3, 3, &[(REQUIRED, "cloud.com/block"), (GROUP, "groupname")]),
            ]),
            deny(&[0, 1].map(|i| format!("{}[{GROUP}]: Invalid value: \"groupname\": can only define groups where at least one pod set has only 1 replica, got: 2 replica(s) and 3 replica(s) in the group", rj_ann(i)))),
        ),
        case(
            "invalid PodSet grouping request - required topology does not match",
            k,
            rjobs(mk_jobset(), &[
                ("job1", 1, 1, 1, &[(REQUIRED, "cloud.com/rack"), (GROUP, "groupname")]),
                ("job2", 2, 1, 1, &[(REQUIRED, "cloud.com/block"), (GROUP, "groupname")]),
            ]),
            deny(&consistent(&rj_ann(0), &rj_ann(1), "groupname")),
        ),
        case(
            "invalid PodSet grouping request - preferred topology does not match",
            k,
            rjobs(mk_jobset(), &[
                ("job1", 1, 1, 1, &[(PREFERRED, "cloud.com/rack"), (GROUP, "groupname")]),
                ("job2", 2, 1, 1, &[(PREFERRED, "cloud.com/block"), (GROUP, "groupname")]),
            ]),
            deny(&consistent(&rj_ann(0), &rj_ann(1), "groupname")),
        ),
        case(
            "invalid PodSet grouping request - different topology annotations within group",
            k,
            rjobs(mk_jobset(), &[
                ("job1", 1, 1, 1, &[(REQUIRED, "cloud.com/rack"), (GROUP, "groupname")]),
                ("job2", 2, 1, 1, &[(GROUP, "groupname"), (PREFERRED, "cloud.com/block")]),
            ]),
            deny(&consistent(&rj_ann(0), &rj_ann(1), "groupname")),
        ),
        update(
            "set valid topology request",
            k,
            rjobs(mk_jobset(), &[("worker", 0, 0, 0, &[])]),
            rjobs(mk_jobset(), &[("worker", 0, 0, 0, &[(PREFERRED, "cloud.com/block")])]),
            Allow,
        ),
        update(
            "attempt to set invalid topology request",
            k,
            rjobs(mk_jobset(), &[("worker", 0, 0, 0, &[])]),
            rjobs(mk_jobset(), &[("worker", 0, 0, 0, &[(PREFERRED, "cloud.com/block"), (REQUIRED, "cloud.com/block")])]),
            deny(&[format!("{}: Invalid value: {MORE_THAN_ONE}", rj_ann(0))]),
        ),
    ]
}

// ---- MPIJob ---------------------------------------------------------------

/// `testingjobs/mpijob.MakeMPIJob` with `MPIJobReplicaSpecs(launcher, worker)`.
fn mk_mpijob(launcher: i64, worker: i64) -> Value {
    let spec = |n| json!({"replicas": n, "template": {"spec": pod_spec("mpi")}});
    json!({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": meta("job"),
           "spec": {"runPolicy": {"suspend": true},
                    "mpiReplicaSpecs": {"Launcher": spec(launcher), "Worker": spec(worker)}}})
}

fn mpi_anns(v: Value, launcher: &[(&str, &str)], worker: &[(&str, &str)]) -> Value {
    let v = pod_anns(v, "/spec/mpiReplicaSpecs/Launcher/template", launcher);
    pod_anns(v, "/spec/mpiReplicaSpecs/Worker/template", worker)
}

/// Kueue pkg/controller/jobs/mpijob/mpijob_webhook_test.go, TestValidateCreate.
fn mpijob_validate_create() -> Vec<Case> {
    use Want::*;
    let k = MPIJOB;
    let la = "spec.mpiReplicaSpecs[Launcher].template.metadata.annotations";
    let wa = "spec.mpiReplicaSpecs[Worker].template.metadata.annotations";
    let q = |l, w| queue(mk_mpijob(l, w), "queue-name");
    type Ann = (&'static str, &'static str);
    fn grp(g1: &str, t1: Ann, g2: &str, t2: Ann) -> Vec<(&'static str, String, Ann)> {
        vec![(GROUP, g1.to_string(), t1), (GROUP, g2.to_string(), t2)]
    }
    let with_groups = |l: i64, spec: Vec<(&str, String, (&str, &str))>| {
        let (a, b) = (&spec[0], &spec[1]);
        mpi_anns(
            q(l, 3),
            &[(a.0, a.1.as_str()), a.2],
            &[(b.0, b.1.as_str()), b.2],
        )
    };
    vec![
        case("simple", k, queue(mk_mpijob(1, 1), "queue"), Allow),
        case(
            "invalid queue-name label",
            k,
            queue(mk_mpijob(1, 1), "queue_name"),
            deny(&[format!("{}: Invalid value: \"queue_name\": {RFC1123}", label_path(QUEUE))]),
        ),
        case("with prebuilt workload", k, label(queue(mk_mpijob(1, 1), "queue"), PREBUILT, "prebuilt-workload"), Allow),
        case("valid topology request", k, mpi_anns(q(1, 3), &[(REQUIRED, "cloud.com/block")], &[(REQUIRED, "cloud.com/block")]), Allow),
        case(
            "invalid topology request",
            k,
            mpi_anns(q(1, 3), &[(REQUIRED, "cloud.com/block"), (PREFERRED, "cloud.com/block")], &[(REQUIRED, "cloud.com/block"), (PREFERRED, "cloud.com/block")]),
            deny(&[format!("{la}: Invalid value: {MORE_THAN_ONE}"), format!("{wa}: Invalid value: {MORE_THAN_ONE}")]),
        ),
        case(
            "invalid slice topology request - slice size larger than number of podsets",
            k,
            mpi_anns(
                q(1, 3),
                &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "20")],
                &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "20")],
            ),
            deny(&[
                format!("{la}[{SLICE_SIZE}]: Invalid value: \"20\": must not be greater than pod set count 1"),
                format!("{wa}[{SLICE_SIZE}]: Invalid value: \"20\": must not be greater than pod set count 3"),
            ]),
        ),
        case(
            "valid PodSet grouping request",
            k,
            with_groups(1, grp("groupname", (REQUIRED, "cloud.com/block"), "groupname", (REQUIRED, "cloud.com/block"))),
            Allow,
        ),
        case(
            "invalid PodSet grouping request - groups of size other than 2",
            k,
            with_groups(1, grp("groupname1", (REQUIRED, "cloud.com/block"), "groupname2", (REQUIRED, "cloud.com/block"))),
            deny(&[
                format!("{la}[{GROUP}]: Invalid value: \"groupname1\": can only define groups of exactly 2 pod sets, got: 1 pod set(s)"),
                format!("{wa}[{GROUP}]: Invalid value: \"groupname2\": can only define groups of exactly 2 pod sets, got: 1 pod set(s)"),
            ]),
        ),
        case(
            "invalid PodSet grouping request - no leader in group",
            k,
            with_groups(2, grp("groupname", (REQUIRED, "cloud.com/block"), "groupname", (REQUIRED, "cloud.com/block"))),
            deny(&[la, wa].map(|p| format!("{p}[{GROUP}]: Invalid value: \"groupname\": can only define groups where at least one pod set has only 1 replica, got: 2 replica(s) and 3 replica(s) in the group"))),
        ),
        case(
            "invalid PodSet grouping request - required topology does not match",
            k,
            with_groups(1, grp("groupname", (REQUIRED, "cloud.com/block"), "groupname", (REQUIRED, "cloud.com/rack"))),
            deny(&consistent(la, wa, "groupname")),
        ),
        case(
            "invalid PodSet grouping request - preferred topology does not match",
            k,
            with_groups(1, grp("groupname", (PREFERRED, "cloud.com/block"), "groupname", (PREFERRED, "cloud.com/rack"))),
            deny(&consistent(la, wa, "groupname")),
        ),
        case(
            "invalid PodSet grouping request - different topology annotations within group",
            k,
            with_groups(1, grp("groupname", (REQUIRED, "cloud.com/block"), "groupname", (PREFERRED, "cloud.com/rack"))),
            deny(&consistent(la, wa, "groupname")),
        ),
    ]
}

// ---- RayJob and RayCluster ------------------------------------------------

fn worker_group(name: &str, replicas: Option<i64>, anns: &[(&str, &str)]) -> Value {
    let annotations: serde_json::Map<String, Value> = anns
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let mut g = json!({"groupName": name, "template": {"metadata": {"annotations": annotations}}});
    if let Some(r) = replicas {
        g["replicas"] = json!(r);
    }
    g
}

fn ray_cluster_spec() -> Value {
    json!({"rayVersion": "2.9.0",
           "headGroupSpec": {"rayStartParams": {}, "template": {"spec": pod_spec("head-container")}},
           "workerGroupSpecs": [{"groupName": "workers-group-0", "replicas": 1, "minReplicas": 1, "maxReplicas": 5,
                                 "rayStartParams": {}, "template": {"spec": pod_spec("worker-container")}}]})
}

/// `testingjobs/rayjob.MakeJob`: suspended, shuts the cluster down, one worker group.
fn mk_rayjob() -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": meta("job"),
           "spec": {"shutdownAfterJobFinishes": true, "suspend": true, "rayClusterSpec": ray_cluster_spec()}})
}

/// `testingjobs/raycluster.MakeCluster`: suspended, one worker group.
fn mk_raycluster() -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta("job"),
           "spec": ray_cluster_spec().as_object().unwrap().clone().into_iter()
               .chain([("suspend".to_string(), json!(true))]).collect::<serde_json::Map<_, _>>()})
}

/// `WithHeadGroupSpec` (a head with only these template annotations) and
/// `WithWorkerGroups`, at `base` (`/spec/rayClusterSpec` or `/spec`).
fn ray_groups(v: Value, base: &str, head: Option<&[(&str, &str)]>, workers: Vec<Value>) -> Value {
    let v = match head {
        Some(anns) => {
            let annotations: serde_json::Map<String, Value> = anns
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            set(
                v,
                &format!("{base}/headGroupSpec"),
                json!({"template": {"metadata": {"annotations": annotations}}}),
            )
        }
        None => v,
    };
    set(
        v,
        &format!("{base}/workerGroupSpecs"),
        Value::Array(workers),
    )
}

/// The RayJob and RayCluster create tables share their cases; `base` is
/// where the cluster spec is, `path` its field path.
fn ray_create_cases(
    kind: (&'static str, &'static str, &'static str),
    mk: fn() -> Value,
    base: &'static str,
    path: &'static str,
) -> Vec<Case> {
    use Want::*;
    let head_ann = format!("{path}headGroupSpec.template.metadata.annotations");
    let wg_ann = |i: usize| format!("{path}workerGroupSpecs[{i}].template.metadata.annotations");
    let q = || queue(mk(), "queue");
    let req = |t: &'static str| (REQUIRED, t);
    let many: Vec<Value> = (0..18)
        .map(|i| json!({"groupName": format!("workers-{i}")}))
        .collect();
    let both = [
        (PREFERRED, "cloud.com/block"),
        (REQUIRED, "cloud.com/block"),
    ];
    let slice = |n: &'static str| {
        [
            (REQUIRED, "cloud.com/block"),
            (SLICE_REQUIRED, "cloud.com/block"),
            (SLICE_SIZE, n),
        ]
    };
    let g = |name: &'static str, t: (&'static str, &'static str)| [(GROUP, name), t];
    vec![
        case(
            "invalid managed - too many worker groups",
            kind,
            ray_groups(q(), base, None, many),
            deny(&[format!("{path}workerGroupSpecs: Too many: 19: must have at most 18 items")]),
        ),
        case(
            "worker group uses head name",
            kind,
            ray_groups(q(), base, None, vec![json!({"groupName": "head"})]),
            deny(&[format!("{path}workerGroupSpecs[0].groupName: Forbidden: \"head\" is reserved for the head group")]),
        ),
        case(
            "valid topology request",
            kind,
            ray_groups(q(), base, Some(&[req("cloud.com/block")]), vec![
                worker_group("wg1", None, &[req("cloud.com/block")]),
                worker_group("wg2", None, &[(PREFERRED, "cloud.com/block")]),
                json!({"groupName": "wg3"}),
            ]),
            Allow,
        ),
        case(
            "invalid topology request",
            kind,
            ray_groups(q(), base, Some(&both), vec![worker_group("wg1", None, &both)]),
            deny(&[format!("{head_ann}: Invalid value: {MORE_THAN_ONE}"), format!("{}: Invalid value: {MORE_THAN_ONE}", wg_ann(0))]),
        ),
        case(
            "invalid slice topology request - slice size larger than number of podsets",
            kind,
            ray_groups(q(), base, Some(&slice("2")), vec![
                worker_group("wg1", Some(5), &slice("10")),
                worker_group("wg2", Some(10), &slice("20")),
            ]),
            deny(&[
                format!("{head_ann}[{SLICE_SIZE}]: Invalid value: \"2\": must not be greater than pod set count 1"),
                format!("{}[{SLICE_SIZE}]: Invalid value: \"10\": must not be greater than pod set count 5", wg_ann(0)),
                format!("{}[{SLICE_SIZE}]: Invalid value: \"20\": must not be greater than pod set count 10", wg_ann(1)),
            ]),
        ),
        case(
            "valid PodSet grouping request",
            kind,
            ray_groups(q(), base, Some(&g("groupname", req("cloud.com/block"))), vec![worker_group("wg1", None, &g("groupname", req("cloud.com/block")))]),
            Allow,
        ),
        case(
            "invalid PodSet grouping request - groups of size other than 2",
            kind,
            ray_groups(q(), base, Some(&g("1podset", req("cloud.com/block"))), vec![
                worker_group("wg1", Some(5), &g("3podsets", req("cloud.com/block"))),
                worker_group("wg2", Some(10), &g("3podsets", req("cloud.com/block"))),
                worker_group("wg3", Some(10), &g("3podsets", req("cloud.com/block"))),
            ]),
            deny(&[
                format!("{head_ann}[{GROUP}]: Invalid value: \"1podset\": can only define groups of exactly 2 pod sets, got: 1 pod set(s)"),
                format!("{}[{GROUP}]: Invalid value: \"3podsets\": can only define groups of exactly 2 pod sets, got: 3 pod set(s)", wg_ann(0)),
                format!("{}[{GROUP}]: Invalid value: \"3podsets\": can only define groups of exactly 2 pod sets, got: 3 pod set(s)", wg_ann(1)),
                format!("{}[{GROUP}]: Invalid value: \"3podsets\": can only define groups of exactly 2 pod sets, got: 3 pod set(s)", wg_ann(2)),
            ]),
        ),
        case(
            "invalid PodSet grouping request - no leader in group",
            kind,
            ray_groups(q(), base, None, vec![
                worker_group("wg1", Some(5), &g("groupname", req("cloud.com/block"))),
                worker_group("wg2", Some(10), &g("groupname", req("cloud.com/block"))),
            ]),
            deny(&[0, 1].map(|i| format!("{}[{GROUP}]: Invalid value: \"groupname\": can only define groups where at least one pod set has only 1 replica, got: 5 replica(s) and 10 replica(s) in the group", wg_ann(i)))),
        ),
        case(
            "invalid PodSet grouping request - required topology does not match",
            kind,
            ray_groups(q(), base, Some(&g("groupname", req("cloud.com/block"))), vec![worker_group("wg1", Some(5), &g("groupname", req("cloud.com/rack")))]),
            deny(&consistent(&head_ann, &wg_ann(0), "groupname")),
        ),
        case(
            "invalid PodSet grouping request - preferred topology does not match",
            kind,
            ray_groups(q(), base, Some(&g("groupname", (PREFERRED, "cloud.com/block"))), vec![worker_group("wg1", Some(5), &g("groupname", (PREFERRED, "cloud.com/rack")))]),
            deny(&consistent(&head_ann, &wg_ann(0), "groupname")),
        ),
        case(
            "invalid PodSet grouping request - different topology annotations within group",
            kind,
            ray_groups(q(), base, Some(&g("groupname", (PREFERRED, "cloud.com/block"))), vec![worker_group("wg1", Some(5), &g("groupname", req("cloud.com/rack")))]),
            deny(&consistent(&head_ann, &wg_ann(0), "groupname")),
        ),
        case(
            "valid with prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
            kind,
            ann(q(), PREBUILT, "wl1"),
            Allow,
        ),
    ]
}

/// Kueue pkg/controller/jobs/rayjob/rayjob_webhook_test.go, TestValidateCreate
/// (the `manageAll` case runs on the second server).
fn rayjob_validate_create() -> Vec<Case> {
    use Want::*;
    let k = RAYJOB;
    let no_shutdown = || set(mk_rayjob(), "/spec/shutdownAfterJobFinishes", json!(false));
    let shutdown_err = deny(&["spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after finishing".into()]);
    let mut cases = vec![
        case("invalid unmanaged", k, no_shutdown(), Allow),
        case(
            "invalid managed - no cluster selector and no RayClusterSpec",
            k,
            set(queue(mk_rayjob(), "queue"), "/spec/rayClusterSpec", Value::Null),
            deny(&["spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector".into()]),
        ),
        case("invalid unmanaged - local queue default", k, no_shutdown(), Allow),
        case("invalid managed - by queue", k, queue(no_shutdown(), "queue"), shutdown_err),
        case(
            "invalid managed - has cluster selector and RayClusterSpec",
            k,
            set(queue(mk_rayjob(), "queue"), "/spec/clusterSelector", json!({"k1": "v1"})),
            deny(&["spec.clusterSelector: Invalid value: map[string]string{\"k1\":\"v1\"}: a kueue managed job should not use an existing cluster".into()]),
        ),
        case(
            "invalid managed - has auto scaler",
            k,
            ann(set(queue(mk_rayjob(), "queue"), "/spec/rayClusterSpec/enableInTreeAutoscaling", json!(true)), ELASTIC, "true"),
            // An elastic RayJob autoscales through workload slices.
            Allow,
        ),
        case(
            "valid managed - max worker groups with gcs fault tolerance",
            k,
            set(
                ray_groups(queue(mk_rayjob(), "queue"), "/spec/rayClusterSpec", None, (0..7).map(|i| json!({"groupName": format!("workers-{i}")})).collect()),
                "/spec/rayClusterSpec/gcsFaultToleranceOptions",
                json!({"redisAddress": "redis:6379"}),
            ),
            Allow,
        ),
    ];
    cases.extend(ray_create_cases(
        k,
        mk_rayjob,
        "/spec/rayClusterSpec",
        "spec.rayClusterSpec.",
    ));
    cases
}

/// Kueue pkg/controller/jobs/raycluster/raycluster_webhook_test.go,
/// TestValidateCreate.
fn raycluster_validate_create() -> Vec<Case> {
    use Want::*;
    let k = RAYCLUSTER;
    let autoscaling = || {
        set(
            queue(mk_raycluster(), "queue"),
            "/spec/enableInTreeAutoscaling",
            json!(true),
        )
    };
    let elastic_mk = |v: Value| {
        let v = set(
            ann(v, ELASTIC, "true"),
            "/spec/managedBy",
            json!("kueue.x-k8s.io/multikueue"),
        );
        let gate = json!([{"name": "kueue.x-k8s.io/elastic-job"}]);
        let v = set(
            v,
            "/spec/headGroupSpec/template/spec/schedulingGates",
            gate.clone(),
        );
        set(
            v,
            "/spec/workerGroupSpecs/0/template/spec/schedulingGates",
            gate,
        )
    };
    let mut cases = vec![
        case("invalid unmanaged", k, mk_raycluster(), Allow),
        case(
            "invalid managed - has auto scaler",
            k,
            autoscaling(),
            deny(&["spec.enableInTreeAutoscaling: Invalid value: true: a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the ElasticJobsViaWorkloadSlices feature gate and set the \"kueue.x-k8s.io/elastic-job\": \"true\" annotation".into()]),
        ),
        case(
            "invalid managed - elastic MultiKueue job with auto scaler",
            k,
            elastic_mk(autoscaling()),
            deny(&["spec.enableInTreeAutoscaling: Forbidden: in-tree autoscaling is not supported for a MultiKueue-managed elastic RayCluster".into()]),
        ),
        case("valid managed - elastic MultiKueue job without auto scaler", k, elastic_mk(queue(mk_raycluster(), "queue")), Allow),
    ];
    cases.extend(ray_create_cases(k, mk_raycluster, "/spec", "spec."));
    cases
}

/// Kueue rayjob_webhook_test.go and raycluster_webhook_test.go,
/// TestValidateUpdate (cases with the default ValidateRayAndSparkJobUpdates;
/// the default-LocalQueue cases are in tests/e2e_default_queue.rs).
fn ray_validate_update(
    kind: (&'static str, &'static str, &'static str),
    mk: fn() -> Value,
) -> Vec<Case> {
    use Want::*;
    let s = |v: Value, b: bool| set(v, "/spec/suspend", json!(b));
    let q = |name: Option<&str>, susp: bool| {
        let v = s(mk(), susp);
        match name {
            Some(n) => queue(v, n),
            None => v,
        }
    };
    let mut cases = vec![
        update("invalid unmanaged", kind, mk(), mk(), Allow),
        update(
            "queue name unchanged while unsuspended",
            kind,
            q(Some("queue"), false),
            label(q(Some("queue"), false), "test-label", "test-value"),
            Allow,
        ),
        update(
            "invalid managed - queue name should not change while unsuspended",
            kind,
            q(Some("queue"), false),
            q(Some("queue2"), false),
            deny(&[format!("{}: Invalid value: \"queue2\": field is immutable", label_path(QUEUE))]),
        ),
        update("managed - queue name can change while suspended", kind, q(Some("queue"), true), q(Some("queue2"), true), Allow),
        update(
            "queue name removal is rejected when the job is unsuspended and ValidateRayAndSparkJobUpdates is enabled",
            kind,
            q(Some("queue"), false),
            q(None, false),
            deny(&[format!("{}: Invalid value: \"\": field is immutable", label_path(QUEUE))]),
        ),
        update(
            "queue name removal is allowed when the job is suspended in a namespace without a default queue and ValidateRayAndSparkJobUpdates is enabled",
            kind,
            q(Some("queue"), true),
            q(None, true),
            Allow,
        ),
        update(
            "prebuilt workload name change is not validated when the job is unmanaged and ValidateRayAndSparkJobUpdates is enabled",
            kind,
            label(q(None, false), PREBUILT, "wl1"),
            label(q(None, false), PREBUILT, "wl2"),
            Allow,
        ),
        update(
            if kind == RAYJOB { "priorityClassName is immutable" } else { "priorityClassName is mutable" },
            kind,
            label(queue(mk(), "queue"), PRIORITY, "test-1"),
            label(queue(mk(), "queue"), PRIORITY, "test-2"),
            Allow,
        ),
    ];
    if kind == RAYJOB {
        cases.push(update(
            "invalid new managed - by queue",
            kind,
            queue(mk(), "queue"),
            set(queue(mk(), "queue"), "/spec/shutdownAfterJobFinishes", json!(false)),
            deny(&["spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after finishing".into()]),
        ));
        cases.push(update(
            "invalid unmanaged (shutdownAfterJobFinishes turned off)",
            kind,
            mk(),
            set(mk(), "/spec/shutdownAfterJobFinishes", json!(false)),
            Allow,
        ));
    }
    cases
}

/// `testingjobs/rayservice.MakeService`: its cluster suspended, one worker
/// group.
fn mk_rayservice() -> Value {
    let mut cluster = ray_cluster_spec();
    cluster["suspend"] = json!(true);
    json!({"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": meta("rayservice"),
           "spec": {"rayClusterConfig": cluster}})
}

/// Kueue pkg/controller/jobs/rayservice/rayservice_webhook_test.go,
/// TestValidateCreate (upstream checks only that these fail or pass; the
/// messages are raycluster.ValidateCreate's, under Kueue's
/// `spec.rayClusterSpec` path).
fn rayservice_validate_create() -> Vec<Case> {
    use Want::*;
    let k = RAYSERVICE;
    let q = || queue(mk_rayservice(), "queue");
    let many: Vec<Value> = (0..18)
        .map(|i| json!({"groupName": format!("workers-{i}")}))
        .collect();
    vec![
        case("valid rayservice", k, q(), Allow),
        case(
            "too many worker groups",
            k,
            ray_groups(q(), "/spec/rayClusterConfig", None, many),
            deny(&["spec.rayClusterSpec.workerGroupSpecs: Too many: 19: must have at most 18 items".into()]),
        ),
        case(
            "autoscaling without elastic jobs feature",
            k,
            set(q(), "/spec/rayClusterConfig/enableInTreeAutoscaling", json!(true)),
            deny(&["spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use autoscaling when workload slicing is enabled".into()]),
        ),
        // Not in upstream's table; raycluster.ValidateCreate allows it.
        case(
            "autoscaling of an elastic service",
            k,
            ann(set(q(), "/spec/rayClusterConfig/enableInTreeAutoscaling", json!(true)), ELASTIC, "true"),
            Allow,
        ),
        case(
            "unqueued with autoscaling",
            k,
            set(mk_rayservice(), "/spec/rayClusterConfig/enableInTreeAutoscaling", json!(true)),
            Allow,
        ),
    ]
}

/// Kueue rayservice_webhook_test.go TestValidateUpdate (default
/// ValidateRayAndSparkJobUpdates; the default-LocalQueue cases are in
/// tests/e2e_default_queue.rs).
fn rayservice_validate_update() -> Vec<Case> {
    use Want::*;
    let k = RAYSERVICE;
    let svc = |name: Option<&str>, suspend: bool| {
        let v = set(
            mk_rayservice(),
            "/spec/rayClusterConfig/suspend",
            json!(suspend),
        );
        match name {
            Some(n) => queue(v, n),
            None => v,
        }
    };
    vec![
        update("valid update", k, svc(Some("queue"), true), svc(Some("queue"), false), Allow),
        update(
            "queue name unchanged while unsuspended",
            k,
            svc(Some("queue"), false),
            label(svc(Some("queue"), false), "test-label", "test-value"),
            Allow,
        ),
        update(
            "queue name should not change while unsuspended",
            k,
            svc(Some("queue"), false),
            svc(Some("queue2"), false),
            deny(&[format!("{}: Invalid value: \"queue2\": field is immutable", label_path(QUEUE))]),
        ),
        update("queue name can change while suspended", k, svc(Some("queue"), true), svc(Some("queue2"), true), Allow),
        update(
            "queue name removal is rejected when the job is unsuspended and ValidateRayAndSparkJobUpdates is enabled",
            k,
            svc(Some("queue"), false),
            svc(None, false),
            deny(&[format!("{}: Invalid value: \"\": field is immutable", label_path(QUEUE))]),
        ),
        update(
            "queue name removal is allowed when the job is suspended in a namespace without a default queue and ValidateRayAndSparkJobUpdates is enabled",
            k,
            svc(Some("queue"), true),
            svc(None, true),
            Allow,
        ),
        update(
            "prebuilt workload name change is not validated when the job is unmanaged and ValidateRayAndSparkJobUpdates is enabled",
            k,
            label(svc(None, false), PREBUILT, "wl1"),
            label(svc(None, false), PREBUILT, "wl2"),
            Allow,
        ),
    ]
}

/// The `manageAll: true` cases (`--manage-jobs-without-queue-name`).
fn rayjob_manage_all() -> Vec<Case> {
    let no_shutdown = || set(mk_rayjob(), "/spec/shutdownAfterJobFinishes", json!(false));
    let err = || {
        deny(&["spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after finishing".into()])
    };
    vec![
        // rayjob_webhook_test.go TestValidateCreate "invalid managed - by config"
        case("invalid managed - by config", RAYJOB, no_shutdown(), err()),
        // rayjob_webhook_test.go TestValidateUpdate "invalid new managed - by config"
        update(
            "invalid new managed - by config",
            RAYJOB,
            mk_rayjob(),
            no_shutdown(),
            err(),
        ),
    ]
}

// ---- Kubeflow training kinds ------------------------------------------------

/// Kueue pkg/controller/jobs/kubeflow/jobs/<kind>/<kind>_controller_test.go,
/// TestValidate: each case through ValidateOnCreate and ValidateOnUpdate, so
/// here as a create and as an update from the object without annotations.
fn kubeflow_validate(
    kind: (&'static str, &'static str, &'static str),
    field: &'static str,
    types: &[&'static str],
    valid: &[(&'static str, i64, &'static str, &'static str)],
    slice: &[(i64, &'static str)],
) -> Vec<Case> {
    use Want::*;
    let obj = |counts: &[i64], anns: &[Vec<(&str, &str)>]| {
        let mut specs = serde_json::Map::new();
        for (i, t) in types.iter().enumerate() {
            let annotations: serde_json::Map<String, Value> = anns
                .get(i)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            specs.insert(
                t.to_string(),
                json!({"replicas": counts[i], "template": {"metadata": {"annotations": annotations}, "spec": pod_spec(&t.to_lowercase())}}),
            );
        }
        json!({"apiVersion": format!("{}/{}", kind.0, kind.1), "kind": kind.2, "metadata": meta("job"),
               "spec": {"runPolicy": {"suspend": true}, field: specs}})
    };
    let path = |t: &str| format!("spec.{field}[{t}].template.metadata.annotations");
    let ones = vec![1; types.len()];
    let valid_counts: Vec<i64> = valid.iter().map(|v| v.1).collect();
    let valid_anns: Vec<Vec<(&str, &str)>> = valid.iter().map(|v| vec![(v.2, v.3)]).collect();
    let both = vec![(REQUIRED, "cloud.com/rack"), (PREFERRED, "cloud.com/block")];
    let invalid_counts: Vec<i64> = valid_counts.clone();
    let slice_counts: Vec<i64> = slice.iter().map(|s| s.0).collect();
    let slice_anns: Vec<Vec<(&str, &str)>> = slice
        .iter()
        .map(|s| {
            vec![
                (REQUIRED, "cloud.com/rack"),
                (SLICE_REQUIRED, "cloud.com/block"),
                (SLICE_SIZE, s.1),
            ]
        })
        .collect();
    let table: Vec<(&str, Value, Want)> = vec![
        ("no annotations", obj(&ones, &[]), Allow),
        ("valid TAS request", obj(&valid_counts, &valid_anns), Allow),
        (
            "invalid TAS request",
            obj(&invalid_counts, &vec![both.clone(); types.len()]),
            deny(&types.iter().map(|t| format!("{}: Invalid value: {MORE_THAN_ONE}", path(t))).collect::<Vec<_>>()),
        ),
        (
            "invalid slice topology request - slice size larger than number of podsets",
            obj(&slice_counts, &slice_anns),
            deny(&types
                .iter()
                .zip(slice)
                .map(|(t, (n, size))| format!("{}[{SLICE_SIZE}]: Invalid value: \"{size}\": must not be greater than pod set count {n}", path(t)))
                .collect::<Vec<_>>()),
        ),
    ];
    let mut cases = Vec::new();
    for (name, v, want) in table {
        let again = match &want {
            Allow => Allow,
            Deny(m) => Deny(m.clone()),
            _ => unreachable!(),
        };
        cases.push(case(&format!("{name} (create)"), kind, v.clone(), want));
        cases.push(update(
            &format!("{name} (update)"),
            kind,
            obj(&ones, &[]),
            v,
            again,
        ));
    }
    cases
}

// ---- AppWrapper -------------------------------------------------------------

fn aw(components: Vec<Value>) -> Value {
    json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
           "metadata": {"name": "aw", "namespace": "default", "labels": {}},
           "spec": {"components": components}})
}

fn aw_pod(ns: Option<&str>) -> Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                       "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                "resources": {"requests": {"cpu": "100m"}}}]}});
    if let Some(ns) = ns {
        p["metadata"]["namespace"] = json!(ns);
    }
    json!({"template": p})
}

fn aw_deployment(replicas: i64, path: &str) -> Value {
    json!({"podSets": [{"replicas": replicas, "path": path}],
           "template": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}},
                                 "template": {"metadata": {"labels": {"app": "d"}},
                                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}})
}

fn aw_jobset(path: &str) -> Value {
    json!({"podSets": [{"replicas": 1, "path": path}],
           "template": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
                        "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
                            "parallelism": 1, "completions": 1,
                            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}]}}})
}

fn aw_service() -> Value {
    json!({"template": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                        "spec": {"ports": [{"port": 80}]}}})
}

/// AppWrapper v1.2.1 internal/webhook/appwrapper_webhook_test.go, the
/// "Validating Webhook" Describe (validation only: the RBAC Context needs a
/// cluster and is in tests/e2e_appwrapper.rs).
fn appwrapper_validate() -> Vec<Case> {
    use Want::*;
    let k = APPWRAPPER;
    let dep = || aw_deployment(4, "template.spec.template");
    let two = || aw(vec![aw_pod(None), dep()]);
    let mut cases = vec![
        case(
            "There must be at least one podspec (a)",
            k,
            aw(vec![]),
            DenyAny,
        ),
        case(
            "There must be at least one podspec (b)",
            k,
            aw(vec![aw_service()]),
            DenyAny,
        ),
        case(
            "There must be no more than 8 podspecs",
            k,
            aw((0..9).map(|_| aw_pod(None)).collect()),
            DenyAny,
        ),
        case(
            "Non-existent PodSpec paths are rejected (missing)",
            k,
            aw(vec![aw_deployment(4, "template.spec.missing")]),
            DenyAny,
        ),
        case(
            "Non-existent PodSpec paths are rejected (empty)",
            k,
            aw(vec![aw_deployment(4, "")]),
            DenyAny,
        ),
        case(
            "PodSpec paths must refer to a PodSpecTemplate",
            k,
            aw(vec![aw_deployment(4, "template.spec.template.metadata")]),
            DenyAny,
        ),
        case(
            "Components in other namespaces are rejected",
            k,
            aw(vec![aw_pod(Some("test"))]),
            DenyAny,
        ),
        case(
            "Nested AppWrappers are rejected",
            k,
            aw(vec![
                aw_pod(None),
                json!({"podSets": [], "template": aw(vec![aw_pod(None)])}),
            ]),
            DenyAny,
        ),
        case(
            "Well-formed AppWrappers are accepted",
            k,
            aw(vec![
                aw_pod(None),
                aw_deployment(1, "template.spec.template"),
                aw_pod(Some("default")),
                aw_jobset("template.spec.replicatedJobs[0].template.spec.template"),
            ]),
            Allow,
        ),
    ];
    for p in [
        "template.spec.replicatedJobs.template.spec.template",
        "template.spec.replicatedJobs",
        "template.spec.replicatedJobs[0].template[0].spec.template",
        "template.spec.replicatedJobs[10].template.spec.template",
        "template.spec.replicatedJobs[-1].template.spec.template",
        "template.spec.replicatedJobs[a10].template.spec.template",
        "template.spec.replicatedJobs[1",
        "template.spec.replicatedJobs[1]].template.spec.template",
    ] {
        cases.push(case(
            &format!("Validation of Array and Map path elements ({p})"),
            k,
            aw(vec![aw_jobset(p)]),
            DenyAny,
        ));
    }
    let with_labels = |v: Value, user: &str| {
        label(
            label(v, "workload.codeflare.dev/user", user),
            "workload.codeflare.dev/userid",
            "uid-1",
        )
    };
    cases.extend([
        update("User name and ID are immutable", k, with_labels(two(), "alice"), with_labels(two(), "bad"), DenyAny),
        update("User name and ID should be preserved on updates", k, with_labels(two(), "alice"), with_labels(two(), "alice"), Allow),
        update(
            "Updates to non-sensitive fields are allowed (suspend)",
            k,
            two(),
            set(two(), "/spec/suspend", json!(true)),
            Allow,
        ),
        update(
            "Updates to non-sensitive fields are allowed (podSetInfos)",
            k,
            two(),
            set(two(), "/spec/components/1/podSetInfos", json!([{}])),
            Allow,
        ),
        update("Updates to sensitive fields are rejected (template)", k, two(), aw(vec![dep(), dep()]), DenyAny),
        update("Updates to sensitive fields are rejected (components)", k, two(), aw(vec![aw_pod(None), dep(), aw_pod(None)]), DenyAny),
        update(
            "Updates to sensitive fields are rejected (podSets added)",
            k,
            two(),
            set(two(), "/spec/components/1/podSets", json!([{"replicas": 4, "path": "template.spec.template"}, {"replicas": 4, "path": "template.spec.template"}])),
            DenyAny,
        ),
        update("Updates to sensitive fields are rejected (path)", k, two(), set(two(), "/spec/components/1/podSets/0/path", json!("bad")), DenyAny),
        update("Updates to sensitive fields are rejected (replicas)", k, two(), set(two(), "/spec/components/1/podSets/0/replicas", json!(12)), DenyAny),
    ]);
    cases
}

// ---- Kueue's webhook integration tests ------------------------------------

/// Kueue test/integration/singlecluster/webhook/jobs/*_webhook_test.go: the
/// validation entries the unit tables above do not already hold.
fn integration_validate() -> Vec<Case> {
    use Want::*;
    let selector = |v: Value| {
        set(
            v,
            "/spec/clusterSelector",
            json!({"ray.io/cluster": "shared"}),
        )
    };
    let no_spec = |v: Value| set(v, "/spec/rayClusterSpec", Value::Null);
    vec![
        // rayjob_webhook_test.go
        case(
            "RayJob: should allow RayJob with clusterSelector but no RayClusterSpec",
            RAYJOB,
            no_spec(selector(queue(mk_rayjob(), "queue"))),
            Allow,
        ),
        case(
            "RayJob: should allow RayJob with clusterSelector and no queue label",
            RAYJOB,
            selector(mk_rayjob()),
            Allow,
        ),
        case(
            "RayJob: should allow valid RayJob with RayClusterSpec and no clusterSelector",
            RAYJOB,
            queue(mk_rayjob(), "queue"),
            Allow,
        ),
        case(
            "RayJob: the creation doesn't succeed if the queue name is invalid",
            RAYJOB,
            queue(mk_rayjob(), "indexed_job"),
            DenyAny,
        ),
        update(
            "RayJob: should reject removing the queue name from an unsuspended RayJob",
            RAYJOB,
            queue(set(mk_rayjob(), "/spec/suspend", json!(false)), "queue"),
            set(mk_rayjob(), "/spec/suspend", json!(false)),
            DenyAny,
        ),
        // raycluster_webhook_test.go
        case(
            "RayCluster: the creation doesn't succeed if the queue name is invalid",
            RAYCLUSTER,
            queue(mk_raycluster(), "indexed_job"),
            DenyAny,
        ),
        update(
            "RayCluster: should reject removing the queue name from an unsuspended RayCluster",
            RAYCLUSTER,
            queue(set(mk_raycluster(), "/spec/suspend", json!(false)), "queue"),
            set(mk_raycluster(), "/spec/suspend", json!(false)),
            DenyAny,
        ),
        // jobset_webhook_test.go
        case(
            "JobSet: the creation doesn't succeed if the queue name is invalid",
            JOBSET,
            queue(mk_jobset(), "indexed_job"),
            DenyAny,
        ),
        case(
            "JobSet: should reject a JobSet whose pod-slice size exceeds total pod count",
            JOBSET,
            rjobs(mk_jobset(), &[("rj1", 1, 1, 1, &[(REQUIRED, "cloud.com/block"), (SLICE_REQUIRED, "cloud.com/block"), (SLICE_SIZE, "2")])]),
            deny(&[format!("{}[{SLICE_SIZE}]: Invalid value: \"2\": must not be greater than pod set count 1", rj_ann(0))]),
        ),
        // mpijob_webhook_test.go
        case(
            "MPIJob: the creation doesn't succeed if the queue name is invalid",
            MPIJOB,
            queue(mk_mpijob(1, 1), "indexed_job"),
            DenyAny,
        ),
        // job_webhook_test.go
        update(
            "Job: should not update unsuspend Job successfully when changing queue name",
            JOB,
            queue(suspend(mk_job(), false), "queue"),
            queue(suspend(mk_job(), false), "queue2"),
            DenyAny,
        ),
        update(
            "Job: should allow unsuspending a partially admissible job with its minimum parallelism",
            JOB,
            ann(job_spec(mk_job(), "parallelism", json!(4)), MIN_PARALLELISM, "2"),
            ann(job_spec(suspend(mk_job(), false), "parallelism", json!(2)), MIN_PARALLELISM, "2"),
            Allow,
        ),
    ]
}

// ---- TrainJob and SparkApplication ----------------------------------------

// Kueue's trainjob_webhook_test.go TestValidateCreate reads the runtime
// from a client; its cases, all of them, are a unit test where the runtime
// is answered (src/admission/validation.rs,
// `a_trainjobs_runtime_is_read_as_kueue_reads_it`): these servers have no
// cluster to read it from. e2e_kinds reads a real one.
const TRAINJOB: (&str, &str, &str) = ("trainer.kubeflow.org", "v1alpha1", "TrainJob");
const SPARKAPP: (&str, &str, &str) = ("sparkoperator.k8s.io", "v1beta2", "SparkApplication");

/// `testingjobs/trainjob.MakeTrainJob("trainjob", "ns")` referencing the
/// ClusterTrainingRuntime `testCtr`, not suspended.
fn mk_trainjob() -> Value {
    json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "trainjob", "namespace": "ns"},
           "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime",
                                   "name": "testCtr"},
                    "suspend": false}})
}

/// `testingjobs/sparkapplication.MakeSparkApplication("test-sparkapp",
/// "test")`, not suspended.
fn mk_sparkapp() -> Value {
    let role = |extra: Value| {
        let mut r = json!({"memory": "512Mi", "serviceAccount": "spark-operator-spark", "coreRequest": "100m"});
        if let (Value::Object(m), Value::Object(e)) = (&mut r, extra) {
            m.extend(e);
        }
        r
    };
    json!({"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
           "metadata": {"name": "test-sparkapp", "namespace": "test"},
           "spec": {"type": "Scala", "mode": "cluster",
                    "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
                    "mainClass": "org.apache.spark.examples.SparkPi", "arguments": ["1000"],
                    "driver": role(json!({})),
                    "executor": role(json!({"instances": 1, "deleteOnTermination": false})),
                    "suspend": false}})
}

fn dynamic_allocation(v: Value) -> Value {
    set(
        v,
        "/spec/dynamicAllocation",
        json!({"enabled": true, "minExecutors": 1, "initialExecutors": 2, "maxExecutors": 3}),
    )
}

/// Kueue v0.19.2 sparkapplication_webhook_test.go TestValidateCreate (its
/// gates are the defaults: ElasticJobsViaWorkloadSlices and
/// TopologyAwareScheduling on).
fn sparkapp_validate_create() -> Vec<Case> {
    vec![
        case("base", SPARKAPP, queue(mk_sparkapp(), "local-queue"), Want::Allow),
        case(
            "dynamicAllocation without elastic job feature",
            SPARKAPP,
            dynamic_allocation(queue(mk_sparkapp(), "local-queue")),
            deny(&["spec.dynamicAllocation.enabled: Invalid value: true: a kueue managed job can use dynamicAllocation only when the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job".to_string()]),
        ),
        case(
            "dynamicAllocation with elastic job feature",
            SPARKAPP,
            dynamic_allocation(ann(queue(mk_sparkapp(), "local-queue"), ELASTIC, "true")),
            deny(&[format!(
                "{}: Forbidden: elastic job is not supported for \"sparkoperator.k8s.io/v1beta2, Kind=SparkApplication\"",
                ann_path(ELASTIC)
            )]),
        ),
        case(
            "base with TAS",
            SPARKAPP,
            set(
                queue(mk_sparkapp(), "local-queue"),
                &format!("/spec/executor/annotations/{}", esc(REQUIRED)),
                json!("cloud.com/block"),
            ),
            Want::Allow,
        ),
        case(
            "invalid TAS configuration",
            SPARKAPP,
            set(
                set(
                    queue(mk_sparkapp(), "local-queue"),
                    &format!("/spec/executor/annotations/{}", esc(REQUIRED)),
                    json!("cloud.com/block"),
                ),
                &format!("/spec/executor/annotations/{}", esc(PREFERRED)),
                json!("cloud.com/block"),
            ),
            deny(&[format!("spec.executor.annotations: Invalid value: {MORE_THAN_ONE}")]),
        ),
    ]
}

/// The mode rule of Kueue v0.19.2's `sparkapplication_webhook.go`
/// (`validateCreate`), which upstream's unit table does not exercise.
fn sparkapp_mode_rule() -> Vec<Case> {
    vec![
        case(
            "client mode is refused for a queued application",
            SPARKAPP,
            set(queue(mk_sparkapp(), "local-queue"), "/spec/mode", json!("client")),
            deny(&["spec.mode: Invalid value: \"client\": only Cluster mode is supported for a kueue managed job".to_string()]),
        ),
        case(
            "an application without a queue name is not checked",
            SPARKAPP,
            set(mk_sparkapp(), "/spec/mode", json!("client")),
            Want::Allow,
        ),
    ]
}

/// Kueue v0.19.2 sparkapplication_webhook_test.go TestValidateUpdate with
/// the default gates (ValidateRayAndSparkJobUpdates on); the
/// default-LocalQueue case is a cluster fact.
fn sparkapp_validate_update() -> Vec<Case> {
    let immutable = |v: &str| {
        deny(&[format!(
            "{}: Invalid value: \"{v}\": field is immutable",
            label_path(QUEUE)
        )])
    };
    vec![
        update(
            "queue name unchanged while unsuspended",
            SPARKAPP,
            queue(mk_sparkapp(), "local-queue"),
            label(queue(mk_sparkapp(), "local-queue"), "test-label", "test-value"),
            Want::Allow,
        ),
        update(
            "queue name should not change while unsuspended",
            SPARKAPP,
            queue(mk_sparkapp(), "local-queue"),
            queue(mk_sparkapp(), "local-queue-2"),
            immutable("local-queue-2"),
        ),
        update(
            "queue name can change while suspended",
            SPARKAPP,
            queue(suspend(mk_sparkapp(), true), "local-queue"),
            queue(suspend(mk_sparkapp(), true), "local-queue-2"),
            Want::Allow,
        ),
        update(
            "queue name removal is rejected when the job is unsuspended and ValidateRayAndSparkJobUpdates is enabled",
            SPARKAPP,
            queue(mk_sparkapp(), "local-queue"),
            mk_sparkapp(),
            immutable(""),
        ),
        update(
            "queue name removal is allowed when the job is suspended in a namespace without a default queue and ValidateRayAndSparkJobUpdates is enabled",
            SPARKAPP,
            queue(suspend(mk_sparkapp(), true), "local-queue"),
            suspend(mk_sparkapp(), true),
            Want::Allow,
        ),
        update(
            "prebuilt workload name change is not validated when the job is unmanaged and ValidateRayAndSparkJobUpdates is enabled",
            SPARKAPP,
            label(mk_sparkapp(), PREBUILT, "wl1"),
            label(mk_sparkapp(), PREBUILT, "wl2"),
            Want::Allow,
        ),
    ]
}

// ---- the run ------------------------------------------------------------

/// Posts each case to `/validate` and compares; returns (passed, differs,
/// failures).
async fn run(server: &Server, cases: &[Case]) -> (usize, usize, Vec<String>) {
    let (mut passed, mut differs, mut failures) = (0, 0, Vec::new());
    for (i, c) in cases.iter().enumerate() {
        let op = if c.old.is_some() { "UPDATE" } else { "CREATE" };
        let body = review(&format!("u{i}"), op, c.kind, c.new.clone(), c.old.clone());
        let (status, resp) = server.client().post("/validate", body).await;
        assert_eq!(status, StatusCode::OK, "{}: {resp}", c.name);
        let r = &resp["response"];
        let (want, is_diff) = match &c.want {
            Want::Differs { ours } => (ours.as_ref(), true),
            w => (w, false),
        };
        let ok = match want {
            Want::Allow => r["allowed"] == true,
            Want::Deny(m) => {
                r["allowed"] == false
                    && r["status"]["code"] == 403
                    && r["status"]["message"] == m.as_str()
            }
            Want::DenyAny => r["allowed"] == false && r["status"]["code"] == 403,
            Want::Differs { .. } => false,
        };
        match (ok, is_diff) {
            (true, false) => passed += 1,
            (true, true) => differs += 1,
            (false, _) => failures.push(format!(
                "{}\n  want: {}\n  got:  {r}",
                c.name,
                match want {
                    Want::Allow => "allowed".to_string(),
                    Want::Deny(m) => format!("denied: {m}"),
                    Want::DenyAny => "denied".to_string(),
                    Want::Differs { .. } => String::new(),
                }
            )),
        }
    }
    (passed, differs, failures)
}

#[tokio::test]
async fn upstream_job_kind_tables_answer_as_upstream() {
    let plain = Server::start(&[]);
    let manage_all = Server::start(&["--manage-jobs-without-queue-name"]);
    // The component SubjectAccessReviews need a cluster (tests/e2e_appwrapper.rs).
    let cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(cfg.path(), "appwrapper:\n  userRBACAdmissionCheck: false\n").unwrap();
    let cfg_path = cfg.path().display().to_string();
    let appwrapper = Server::start(&["--config", &cfg_path]);

    let kubeflow = |kind,
                    field,
                    types: &[&'static str],
                    valid: &[(&'static str, i64, &'static str, &'static str)],
                    slice: &[(i64, &'static str)]| {
        kubeflow_validate(kind, field, types, valid, slice)
    };
    // SparkApplication is off by default (Kueue's alpha gate): named here.
    let spark_cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        spark_cfg.path(),
        "integrations:\n  frameworks: [\"sparkoperator.k8s.io/sparkapplication\"]\n",
    )
    .unwrap();
    let spark_cfg_path = spark_cfg.path().display().to_string();
    let spark = Server::start(&["--config", &spark_cfg_path]);
    let rb = (REQUIRED, "cloud.com/rack");
    let tables: Vec<(&str, &Server, Vec<Case>)> = vec![
        (
            "kueue job_webhook_test.go TestValidateCreate",
            &plain,
            job_validate_create(),
        ),
        (
            "kueue job_webhook_test.go TestValidateUpdate",
            &plain,
            job_validate_update(),
        ),
        (
            "kueue jobset_webhook_test.go TestValidateCreate+TestValidateUpdate",
            &plain,
            jobset_validate(),
        ),
        (
            "kueue mpijob_webhook_test.go TestValidateCreate",
            &plain,
            mpijob_validate_create(),
        ),
        (
            "kueue rayjob_webhook_test.go TestValidateCreate",
            &plain,
            rayjob_validate_create(),
        ),
        (
            "kueue rayjob_webhook_test.go TestValidateUpdate",
            &plain,
            ray_validate_update(RAYJOB, mk_rayjob),
        ),
        (
            "kueue rayjob_webhook_test.go (manageAll cases)",
            &manage_all,
            rayjob_manage_all(),
        ),
        (
            "kueue raycluster_webhook_test.go TestValidateCreate",
            &plain,
            raycluster_validate_create(),
        ),
        (
            "kueue raycluster_webhook_test.go TestValidateUpdate",
            &plain,
            ray_validate_update(RAYCLUSTER, mk_raycluster),
        ),
        (
            "kueue rayservice_webhook_test.go TestValidateCreate",
            &plain,
            rayservice_validate_create(),
        ),
        (
            "kueue rayservice_webhook_test.go TestValidateUpdate",
            &plain,
            rayservice_validate_update(),
        ),
        (
            "kueue raycluster_webhook_test.go's shared cases on a RayService (raycluster.ValidateCreate, ValidateTopologyRequest)",
            &plain,
            ray_create_cases(
                RAYSERVICE,
                mk_rayservice,
                "/spec/rayClusterConfig",
                "spec.rayClusterSpec.",
            ),
        ),
        (
            "kueue pytorchjob_controller_test.go TestValidate",
            &plain,
            kubeflow(
                ("kubeflow.org", "v1", "PyTorchJob"),
                "pytorchReplicaSpecs",
                &["Master", "Worker"],
                &[
                    ("Master", 1, rb.0, rb.1),
                    ("Worker", 3, PREFERRED, "cloud.com/block"),
                ],
                &[(5, "10"), (10, "20")],
            ),
        ),
        (
            "kueue tfjob_controller_test.go TestValidate",
            &plain,
            kubeflow(
                ("kubeflow.org", "v1", "TFJob"),
                "tfReplicaSpecs",
                &["Chief", "PS", "Worker"],
                &[
                    ("Chief", 1, rb.0, rb.1),
                    ("PS", 1, PREFERRED, "cloud.com/block"),
                    ("Worker", 1, PREFERRED, "cloud.com/block"),
                ],
                &[(3, "5"), (5, "10"), (10, "20")],
            ),
        ),
        (
            "kueue paddlejob_controller_test.go TestValidate",
            &plain,
            kubeflow(
                ("kubeflow.org", "v1", "PaddleJob"),
                "paddleReplicaSpecs",
                &["Master", "Worker"],
                &[
                    ("Master", 1, rb.0, rb.1),
                    ("Worker", 1, PREFERRED, "cloud.com/block"),
                ],
                &[(5, "10"), (10, "20")],
            ),
        ),
        (
            "kueue xgboostjob_controller_test.go TestValidate",
            &plain,
            kubeflow(
                ("kubeflow.org", "v1", "XGBoostJob"),
                "xgbReplicaSpecs",
                &["Master", "Worker"],
                &[
                    ("Master", 1, rb.0, rb.1),
                    ("Worker", 3, PREFERRED, "cloud.com/block"),
                ],
                &[(5, "10"), (10, "20")],
            ),
        ),
        (
            "kueue jaxjob_controller_test.go TestValidate",
            &plain,
            kubeflow(
                ("kubeflow.org", "v1", "JAXJob"),
                "jaxReplicaSpecs",
                &["Worker"],
                &[("Worker", 3, rb.0, rb.1)],
                &[(3, "20")],
            ),
        ),
        (
            "appwrapper v1.2.1 appwrapper_webhook_test.go Validating Webhook",
            &appwrapper,
            appwrapper_validate(),
        ),
        (
            "kueue sparkapplication_webhook_test.go TestValidateCreate",
            &spark,
            sparkapp_validate_create(),
        ),
        (
            "kueue sparkapplication_webhook.go mode rule (no upstream case)",
            &spark,
            sparkapp_mode_rule(),
        ),
        (
            "kueue sparkapplication_webhook_test.go TestValidateUpdate",
            &spark,
            sparkapp_validate_update(),
        ),
        (
            "kueue test/integration/singlecluster/webhook/jobs (validation)",
            &plain,
            integration_validate(),
        ),
    ];

    let mut all_failures = Vec::new();
    let (mut total, mut total_passed, mut total_differs) = (0, 0, 0);
    for (name, server, cases) in &tables {
        let (passed, differs, failures) = run(server, cases).await;
        println!(
            "{name}: {passed}/{} as upstream{}",
            cases.len(),
            if differs > 0 {
                format!(", {differs} intentional difference(s) (README)")
            } else {
                String::new()
            }
        );
        total += cases.len();
        total_passed += passed;
        total_differs += differs;
        all_failures.extend(failures.into_iter().map(|f| format!("[{name}] {f}")));
    }
    println!(
        "all tables: {total_passed}/{total} as upstream, {total_differs} intentional differences"
    );
    assert!(
        all_failures.is_empty(),
        "{} case(s) differ:\n{}",
        all_failures.len(),
        all_failures.join("\n")
    );
}

/// Warnings travel from the core's decision to the AdmissionResponse: a
/// Workload with a negative `subGroupCount` is allowed with Kueue's warning
/// (pkg/webhooks/workload_webhook_test.go, "negative subGroupCount is
/// accepted with a warning").
#[tokio::test]
async fn negative_sub_group_count_is_allowed_with_upstreams_warning() {
    let server = Server::start(&[]);
    let wl = |n: i64| {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
               "metadata": {"name": "wl", "namespace": "default"},
               "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1,
                   "topologyRequest": {"subGroupCount": n, "subGroupIndexLabel": "idx"},
                   "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}})
    };
    let kind = ("kueue.x-k8s.io", "v1beta2", "Workload");
    for (op, old) in [("CREATE", None), ("UPDATE", Some(wl(-1)))] {
        let (status, resp) = server
            .client()
            .post("/validate", review("w", op, kind, wl(-1), old))
            .await;
        assert_eq!(status, StatusCode::OK);
        let r = &resp["response"];
        assert_eq!(r["allowed"], true, "{op}: {r}");
        assert_eq!(
            r["warnings"],
            json!(["spec.podSets[0].topologyRequest.subGroupCount: negative value -1 is deprecated and will be rejected in a future release"]),
            "{op}"
        );
    }
    let (_, resp) = server
        .client()
        .post("/validate", review("w", "CREATE", kind, wl(2), None))
        .await;
    assert_eq!(resp["response"]["allowed"], true);
    assert!(resp["response"].get("warnings").is_none(), "{resp}");
}

/// What `/mutate` does to `spec.suspend` (`Some(true)`: set to true; `None`:
/// no patch at all).
async fn mutated_suspend(server: &Server, kind: (&str, &str, &str), obj: Value) -> Option<Value> {
    let (status, resp) = server
        .client()
        .post("/mutate", review("m", "CREATE", kind, obj, None))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["allowed"], true, "{resp}");
    let ops = patch_of(&resp)?;
    let op = ops
        .as_array()?
        .iter()
        .find(|op| op["path"] == "/spec/suspend" || op["path"] == "/spec")?;
    Some(if op["path"] == "/spec" {
        op["value"]["suspend"].clone()
    } else {
        op["value"].clone()
    })
}

/// Kueue job_webhook_test.go TestDefault and the integration tests'
/// defaulting entries, for the cases that need no cluster fact (the
/// default-LocalQueue cases are in tests/e2e_default_queue.rs; the
/// MultiKueue `managedBy` cases need ClusterQueues with a MultiKueue
/// admission check, which batchgate does not implement).
#[tokio::test]
async fn upstream_job_defaulting_answers_as_upstream() {
    let plain = Server::start(&[]);
    let manage_all = Server::start(&["--manage-jobs-without-queue-name"]);
    let cases: Vec<(&str, &Server, Value, Option<Value>)> = vec![
        (
            "TestDefault: update the suspend field with 'manageJobsWithoutQueueName=false'",
            &plain,
            queue(suspend(mk_job(), false), "queue"),
            Some(json!(true)),
        ),
        (
            "TestDefault: update the suspend field 'manageJobsWithoutQueueName=true'",
            &manage_all,
            suspend(mk_job(), false),
            Some(json!(true)),
        ),
        (
            "TestDefault: invalid queue name (suspended anyway)",
            &plain,
            queue(suspend(mk_job(), false), "invalid-local-queue"),
            Some(json!(true)),
        ),
        (
            "TestDefault: default lq isn't created, job doesn't have queue label",
            &plain,
            mk_job(),
            None,
        ),
        (
            "integration: should not suspend a Job when no queue name specified",
            &plain,
            suspend(mk_job(), false),
            None,
        ),
        (
            "integration: should suspend a Job when created in unsuspend state",
            &plain,
            queue(suspend(mk_job(), false), "indexed-job"),
            Some(json!(true)),
        ),
        (
            "integration: Should suspend a Job even no queue name specified",
            &manage_all,
            suspend(mk_job(), false),
            Some(json!(true)),
        ),
    ];
    let mut passed = 0;
    let mut failures = Vec::new();
    for (name, server, obj, want) in &cases {
        let got = mutated_suspend(server, JOB, obj.clone()).await;
        if &got == want {
            passed += 1;
        } else {
            failures.push(format!("{name}: want {want:?}, got {got:?}"));
        }
    }
    println!(
        "kueue job_webhook_test.go TestDefault (+ integration defaulting): {passed}/{} as upstream",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Under `--no-cluster` an AppWrapper create cannot have its components'
/// SubjectAccessReviews answered: it is refused with 503 (fail closed), and
/// the server says so when it starts.
#[tokio::test]
async fn appwrapper_creates_fail_closed_without_a_cluster_and_the_log_says_why() {
    let server = Server::start(&[]);
    let (status, resp) = server
        .client()
        .post(
            "/validate",
            review("a", "CREATE", APPWRAPPER, aw(vec![aw_pod(None)]), None),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resp["response"]["allowed"], false, "{resp}");
    assert_eq!(resp["response"]["status"]["code"], 503, "{resp}");
    // The log is read by a thread: wait for the line, within a deadline.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = server.stderr.lock().unwrap().clone();
        if log.contains("AppWrapper creates are refused (503)")
            && log.contains("userRBACAdmissionCheck")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no start-up line about AppWrappers: {log}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Kueue v0.19.2 trainjob_webhook_test.go TestDefault (the cases that
/// need no cluster fact): a queued TrainJob is suspended, and every
/// TrainJob gets Kueue's runtime patch entry, queued or not.
#[tokio::test]
async fn upstream_trainjob_defaulting_answers_as_upstream() {
    let plain = Server::start(&[]);
    let manage_all = Server::start(&["--manage-jobs-without-queue-name"]);
    let entry = json!({"manager": "kueue.x-k8s.io/manager",
                       "trainingRuntimeSpec": {"template": {"spec": {}}}});
    let cases: Vec<(&str, &Server, Value, bool)> = vec![
        (
            "should suspend a TrainJob with a queue label",
            &plain,
            queue(mk_trainjob(), "local-queue"),
            true,
        ),
        (
            "should not suspend a TrainJob without a queue label if manageJobsWithoutQueueName is not enabled",
            &plain,
            mk_trainjob(),
            false,
        ),
        (
            "should suspend a TrainJob without a queue label if manageJobsWithoutQueueName is enabled",
            &manage_all,
            mk_trainjob(),
            true,
        ),
    ];
    for (name, server, obj, suspended) in cases {
        let (status, resp) = server
            .client()
            .post(
                "/mutate",
                review("m", "CREATE", TRAINJOB, obj.clone(), None),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(resp["response"]["allowed"], true, "{name}: {resp}");
        let ops: json_patch::Patch = serde_json::from_value(patch_of(&resp).expect(name)).unwrap();
        let mut after = obj.clone();
        json_patch::patch(&mut after, &ops).unwrap();
        assert_eq!(after["spec"]["suspend"], json!(suspended), "{name}");
        assert_eq!(
            after["spec"]["runtimePatches"],
            json!([entry.clone()]),
            "{name}"
        );
    }
    println!("kueue trainjob_webhook_test.go TestDefault: 3/3 as upstream");
}
