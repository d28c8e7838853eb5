//! The reconciler's Workload writes checked by the webhook's own core
//! before they are sent.
//!
//! The validating webhooks exempt batchgate's ServiceAccount
//! (`matchConditions`, see docs/high-availability.md), so no webhook sees
//! the reconciler's Workload creates, updates and status writes. What
//! `vworkload.kb.io` would refuse must not reach the apiserver either: each
//! write is run through [`crate::admission::kueue::workload::validate`]
//! first and, if refused, not sent (the caller logs the refusal).
//!
//! Pure: no I/O, no clock.

use serde_json::{json, Value};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::{
    admission::kueue::{aggregate, workload},
    controllers::translation,
    queueing,
    vocabulary::keys,
};

/// A write the Workload webhook would refuse, with its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Workload {name}: not written, the Workload webhook would refuse it: {message}")]
pub struct Refused {
    pub name: String,
    pub message: String,
}

fn refused(obj: &Value, message: String) -> Refused {
    Refused {
        name: obj["metadata"]["name"].as_str().unwrap_or("").to_string(),
        message,
    }
}

fn check(new: &Value, old: Option<&Value>) -> Result<(), Refused> {
    match workload::validate(new, old) {
        Ok(errs) if errs.is_empty() => Ok(()),
        Ok(errs) => Err(refused(new, aggregate(&errs))),
        Err((which, e)) => Err(refused(new, format!("{which}: {e}"))),
    }
}

/// A Workload the reconciler is about to create (`ValidateWorkload`).
pub fn create(body: &Value) -> Result<(), Refused> {
    check(body, None)
}

/// A JSON merge patch (of the main resource or of `status`) to `before`,
/// the Workload as last seen (`ValidateWorkloadUpdate` on the result).
pub fn merge_patch(before: &Value, patch: &Value) -> Result<(), Refused> {
    let mut after = before.clone();
    json_patch::merge(&mut after, patch);
    check(&after, Some(before))
}

/// What the queueing controller knows of a Workload, as a Workload object:
/// its pod sets' names and counts, `status.admission` as last written and
/// `conditions`. A status write can only make invalid what depends on
/// these (the conditions, the admission against the pod sets, a changed
/// admission); the templates' checks are the create's and no status write
/// changes them.
/// Without the engine's view (the Workload left it), no pod sets: only a
/// write that needs none (conditions) passes.
pub fn known(
    namespace: &str,
    name: &str,
    view: Option<&queueing::Workload>,
    conditions: &[Condition],
) -> Value {
    let pod_sets: Vec<Value> = view
        .into_iter()
        .flat_map(|v| &v.pod_sets)
        .map(|ps| {
            json!({"name": &*ps.name, "count": ps.count,
                   "template": {"spec": {"containers": []}}})
        })
        .collect();
    let mut status = json!({ "conditions": conditions });
    if let Some(a) = view.and_then(|v| v.admission.as_ref()) {
        status["admission"] = translation::admission_json(a);
    }
    let mut metadata = json!({"name": name, "namespace": namespace});
    if let Some(old) = view.and_then(|v| v.replaces.as_deref()) {
        // A replacing slice may take its cluster name from the old one.
        metadata["annotations"] = json!({ keys::SLICE_REPLACEMENT_FOR_ANNOTATION: old });
    }
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": metadata,
        "spec": {"podSets": pod_sets},
        "status": status,
    })
}

/// A kube client that records each request (`METHOD path`) and answers 404,
/// to see which writes a caller sends; and an engine view of `ns/wl`.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::{Arc, Mutex};

    use crate::queueing;

    pub type Sent = Arc<Mutex<Vec<String>>>;

    pub fn recording_client() -> (kube::Client, Sent) {
        let sent: Sent = Arc::default();
        let seen = sent.clone();
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            seen.lock()
                .unwrap()
                .push(format!("{} {}", req.method(), req.uri().path()));
            async {
                http::Response::builder()
                    .status(404)
                    .body(kube::client::Body::from(b"not found".to_vec()))
            }
        });
        (kube::Client::new(svc, "default"), sent)
    }

    /// A request as the scripted apiserver saw it.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Request {
        /// `METHOD path?query`.
        pub line: String,
        /// The body, parsed (`Null` when empty or not JSON).
        pub body: serde_json::Value,
    }

    pub type Script = Arc<Mutex<Vec<Request>>>;

    /// A kube client whose apiserver is `answer` (method, path, body →
    /// status and body); every request is recorded, to assert the exact
    /// requests a caller sends (as kube-rs's controller examples do).
    pub fn scripted_client(
        answer: impl Fn(&str, &str, &serde_json::Value) -> (u16, serde_json::Value)
            + Send
            + Sync
            + 'static,
    ) -> (kube::Client, Script) {
        use http_body_util::BodyExt;
        let sent: Script = Arc::default();
        let seen = sent.clone();
        let answer = Arc::new(answer);
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let (seen, answer) = (seen.clone(), answer.clone());
            async move {
                let (parts, body) = req.into_parts();
                let bytes = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
                let path = parts.uri.path().to_string();
                let line = match parts.uri.query() {
                    Some(q) if !q.is_empty() => format!("{} {path}?{q}", parts.method),
                    _ => format!("{} {path}", parts.method),
                };
                let (status, reply) = answer(parts.method.as_str(), &path, &body);
                seen.lock().unwrap().push(Request { line, body });
                http::Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(
                        serde_json::to_vec(&reply).unwrap(),
                    ))
            }
        });
        (kube::Client::new(svc, "default"), sent)
    }

    /// What the scripted apiserver was sent, in order: `METHOD path`
    /// (the query left out) and the body.
    pub fn sent(script: &Script) -> Vec<(String, serde_json::Value)> {
        script
            .lock()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r.line.split('?').next().unwrap().to_string(),
                    r.body.clone(),
                )
            })
            .collect()
    }

    /// The apiserver's body for an error `code`.
    pub fn status(code: u16, reason: &str) -> serde_json::Value {
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": reason, "reason": reason, "code": code})
    }

    /// `ns/wl` with one pod set `main` of 2 pods.
    pub fn view() -> queueing::Workload {
        queueing::Workload {
            unhealthy_nodes: Vec::new(),
            single_pod_owned: false,
            namespace: Arc::from("ns"),
            name: "wl".into(),
            uid: Arc::from("u"),
            job_uid: None,
            copy_chain: None,
            queue_name: Arc::from("lq"),
            priority: 0,
            created: 0,
            active: true,
            finished: false,
            readiness: Default::default(),
            replaces: None,
            pod_sets: vec![queueing::PodSet {
                name: Arc::from("main"),
                count: 2,
                min_count: None,
                requests: Default::default(),
                node_selector: Default::default(),
                node_affinity: Default::default(),
                tolerations: Vec::new(),
                topology: None,
            }],
            admission: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(status: Value) -> Value {
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "ns"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2,
                "template": {"spec": {"containers": [{"name": "c",
                    "resources": {"requests": {"cpu": "1"}}}]}}}]},
            "status": status,
        })
    }

    fn cond(ty: &str, status: &str, reason: &str) -> Value {
        json!({"type": ty, "status": status, "reason": reason, "message": "m",
               "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    fn admission(pod_set: &str, cpu: &str) -> Value {
        json!({"clusterQueue": "cq", "podSetAssignments": [{"name": pod_set, "count": 2,
            "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": cpu}}]})
    }

    #[test]
    fn a_valid_admission_passes() {
        let before = workload(json!({}));
        let patch = json!({"status": {"admission": admission("main", "2"),
            "conditions": [cond("QuotaReserved", "True", "QuotaReserved")]}});
        assert_eq!(merge_patch(&before, &patch), Ok(()));
    }

    #[test]
    fn writes_the_webhook_would_refuse_are_refused_with_its_message() {
        let before = workload(json!({}));
        // An admission for a pod set the Workload does not have.
        let patch = json!({"status": {"admission": admission("other", "2"),
            "conditions": [cond("QuotaReserved", "True", "QuotaReserved")]}});
        let e = merge_patch(&before, &patch).unwrap_err();
        assert_eq!(e.name, "wl");
        assert!(
            e.message
                .contains("status.admission.podSetAssignments[0].name: Not found: \"other\""),
            "{e}"
        );
        // Usage that is not a multiple of the count.
        let patch = json!({"status": {"admission": admission("main", "3m"),
            "conditions": [cond("QuotaReserved", "True", "QuotaReserved")]}});
        assert!(merge_patch(&before, &patch)
            .unwrap_err()
            .message
            .contains("is not a multiple of 2"));
        // QuotaReserved without an admission.
        let patch =
            json!({"status": {"conditions": [cond("QuotaReserved", "True", "QuotaReserved")]}});
        assert!(merge_patch(&before, &patch)
            .unwrap_err()
            .message
            .contains("status.admission: Required value"));
        // A malformed condition reason.
        let patch = json!({"status": {"conditions": [cond("Evicted", "True", "not ok!")]}});
        assert!(merge_patch(&before, &patch)
            .unwrap_err()
            .message
            .contains("status.conditions[0].reason"));
        // A changed admission while quota is reserved.
        let admitted = workload(json!({"admission": admission("main", "2"),
            "conditions": [cond("QuotaReserved", "True", "QuotaReserved")]}));
        let patch = json!({"status": {"admission": admission("main", "4")}});
        assert!(merge_patch(&admitted, &patch)
            .unwrap_err()
            .message
            .contains("field is immutable"));
    }

    #[test]
    fn creates_are_checked_too() {
        assert_eq!(create(&workload(json!({}))), Ok(()));
        let mut bad = workload(json!({}));
        bad["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]
            ["pods"] = json!("1");
        assert!(create(&bad)
            .unwrap_err()
            .message
            .contains("the key is reserved for internal kueue use"));
    }

    #[test]
    fn the_known_workload_checks_an_admission_against_its_pod_sets() {
        let view = testing::view();
        let before = known("ns", "wl", Some(&view), &[]);
        let ok = json!({"status": {"admission": admission("main", "2"),
            "conditions": [cond("QuotaReserved", "True", "QuotaReserved")]}});
        assert_eq!(merge_patch(&before, &ok), Ok(()));
        let wrong = json!({"status": {"admission": admission("workers", "2"),
            "conditions": [cond("QuotaReserved", "True", "QuotaReserved")]}});
        assert!(merge_patch(&before, &wrong).is_err());
        // Gone from the engine: no admission passes, conditions alone do.
        assert!(merge_patch(&known("ns", "wl", None, &[]), &ok).is_err());
        let pending =
            json!({"status": {"conditions": [cond("QuotaReserved", "False", "Pending")]}});
        assert_eq!(merge_patch(&known("ns", "wl", None, &[]), &pending), Ok(()));
    }

    /// The job reconcilers' status writes (`jobs::write_workload_status`,
    /// also the AppWrapper controller's): refused ones are not sent.
    #[tokio::test]
    async fn a_status_write_the_webhook_would_refuse_is_not_sent() {
        use crate::api::kueue::v1beta2 as api;
        let (client, sent) = testing::recording_client();
        let wl_api = kube::Api::<api::Workload>::namespaced(client, "ns");
        let wl: api::Workload = serde_json::from_value(workload(json!({}))).unwrap();
        let bad = json!({"conditions": [cond("QuotaReserved", "True", "QuotaReserved")]});
        let out = super::super::context::write_workload_status(&wl_api, &wl, bad).await;
        assert!(
            matches!(out, Err(super::super::context::JobError::Refused(_))),
            "{out:?}"
        );
        assert!(sent.lock().unwrap().is_empty());
        let ok = json!({"conditions": [cond("Finished", "True", "Succeeded")]});
        super::super::context::write_workload_status(&wl_api, &wl, ok)
            .await
            .unwrap();
        assert_eq!(
            *sent.lock().unwrap(),
            ["PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status"]
        );
    }
}
