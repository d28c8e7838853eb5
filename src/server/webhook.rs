//! From a request body to a response body: parse the review, route it by
//! group/version/kind to its policy, ask the core, encode the answer.
//! No I/O here, so the whole path is benchmarked and tested without sockets.

use std::sync::Arc;

use http::StatusCode;
use tracing::debug;

use crate::{
    admission::{
        self, kueue, object, patch,
        review::{self, AdmissionResponse},
        ClusterFacts, Context, Operation, Settings, Verdict,
    },
    policy::{Interest, Policy, PolicySet},
};

use super::metrics::ReviewLabels;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    Mutate,
    Validate,
}

impl Hook {
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::Mutate => "mutate",
            Hook::Validate => "validate",
        }
    }
}

/// The answer to one HTTP request.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Vec<u8>,
    /// Metric labels for a review answered with 200; `None` for a body that
    /// was not a review at all.
    pub labels: Option<ReviewLabels>,
}

pub struct Webhook {
    policies: PolicySet,
    /// What reviews read of objects, for every loaded policy.
    interest: Interest,
    /// Integration names as `'static` metric label values, by policy index.
    names: Vec<(Arc<Policy>, &'static str)>,
    settings: Settings,
    facts: Arc<dyn ClusterFacts>,
}

impl Webhook {
    pub fn new(policies: PolicySet, settings: Settings, facts: Arc<dyn ClusterFacts>) -> Self {
        // Policies are loaded once per process, so leaking their names for
        // allocation-free metric labels is bounded.
        let names = policies
            .iter()
            .map(|p| (p.clone(), &*Box::leak(p.name.clone().into_boxed_str())))
            .collect();
        Webhook {
            interest: object::interest(&policies),
            policies,
            names,
            settings,
            facts,
        }
    }

    pub fn answer(&self, hook: Hook, body: &[u8]) -> Answer {
        let labels = |kind, operation, result| {
            Some(ReviewLabels {
                webhook: hook.as_str(),
                kind,
                operation,
                result,
            })
        };
        let req = match review::parse(body, &self.interest) {
            Ok(r) => r,
            Err(review::ParseError {
                uid: Some(uid),
                message,
            }) => {
                return ok(
                    AdmissionResponse::bad_request(uid, message),
                    labels("unknown", "unknown", "malformed"),
                )
            }
            Err(review::ParseError { uid: None, message }) => {
                return Answer {
                    status: StatusCode::BAD_REQUEST,
                    body: error_body(&message),
                    labels: None,
                }
            }
        };
        let operation = match req.operation() {
            Ok(op) => op,
            Err(m) => {
                return ok(
                    AdmissionResponse::bad_request(req.uid, m),
                    labels("unknown", "unknown", "malformed"),
                )
            }
        };
        let op = operation.as_str();
        let Some(gvk) = req.kind.as_ref() else {
            return ok(
                AdmissionResponse::bad_request(req.uid, "request.kind: Required value".into()),
                labels("unknown", op, "malformed"),
            );
        };
        let Some((policy, name)) = self
            .names
            .iter()
            .find(|(p, _)| p.target.matches(&gvk.group, &gvk.version, &gvk.kind))
        else {
            if let Some(kind) = kueue::Kind::of(&gvk.group, &gvk.version, &gvk.kind) {
                if hook == Hook::Validate {
                    let (resp, result) = validate_kueue(kind, operation, body, req.uid);
                    return ok(resp, labels(kind.metric_label(), op, result));
                }
            }
            // Not an integrated kind: allowed unchanged.
            return ok(
                AdmissionResponse::allow(req.uid),
                labels("unknown", op, "unknown_kind"),
            );
        };
        let core_req = admission::Request {
            operation,
            namespace: req.namespace.as_deref().unwrap_or(""),
            object: req.object.as_ref(),
            old_object: req.old_object.as_ref(),
        };
        let ctx = Context {
            settings: &self.settings,
            facts: &*self.facts,
            policies: &self.policies,
        };
        let decision = match hook {
            Hook::Mutate => admission::mutate(policy, &core_req, &ctx),
            Hook::Validate => admission::validate(policy, &core_req, &ctx),
        };
        let (mut resp, result) = match decision.verdict {
            Verdict::Allow if decision.patch.is_empty() => {
                (AdmissionResponse::allow(req.uid), "allowed")
            }
            Verdict::Allow => (
                AdmissionResponse::allow(req.uid).with_patch(&patch::to_json(&decision.patch)),
                "patched",
            ),
            Verdict::Deny(message) => {
                debug!(uid = %req.uid, kind = name, namespace = core_req.namespace, name = req.name.as_deref().unwrap_or(""),
                       user = %req.user_info.username, %message, "denied");
                (AdmissionResponse::deny(req.uid, message), "denied")
            }
            Verdict::Malformed(message) => {
                debug!(uid = %req.uid, kind = name, %message, "undecodable object");
                (
                    AdmissionResponse::bad_request(req.uid, message),
                    "malformed",
                )
            }
        };
        resp.warnings = decision.warnings;
        ok(resp, labels(name, op, result))
    }
}

/// Kueue's own kinds (ClusterQueue, Cohort, ResourceFlavor, Workload):
/// rare admin and controller writes, validated whole. The sparse read above
/// keeps only what job policies look at, so the review is read again in
/// full here, off the job path.
fn validate_kueue(
    kind: kueue::Kind,
    operation: Operation,
    body: &[u8],
    uid: String,
) -> (AdmissionResponse, &'static str) {
    let whole = Interest {
        whole: true,
        ..Interest::default()
    };
    let full = match review::parse(body, &whole) {
        Ok(r) => r,
        Err(e) => return (AdmissionResponse::bad_request(uid, e.message), "malformed"),
    };
    match kueue::validate(
        kind,
        operation,
        full.object.as_ref(),
        full.old_object.as_ref(),
    ) {
        Ok(errs) if errs.is_empty() => (AdmissionResponse::allow(uid), "allowed"),
        Ok(errs) => {
            let message = kueue::aggregate(&errs);
            debug!(%uid, kind = kind.name(), namespace = full.namespace.as_deref().unwrap_or(""),
                   name = full.name.as_deref().unwrap_or(""), user = %full.user_info.username,
                   %message, "denied");
            (AdmissionResponse::deny(uid, message), "denied")
        }
        Err(e) => {
            let message = format!("cannot decode {kind} in request.{}: {}", e.what, e.error);
            debug!(%uid, kind = kind.name(), %message, "undecodable object");
            (AdmissionResponse::bad_request(uid, message), "malformed")
        }
    }
}

fn ok(resp: AdmissionResponse, labels: Option<ReviewLabels>) -> Answer {
    Answer {
        status: StatusCode::OK,
        body: resp.to_review_bytes(),
        labels,
    }
}

/// `{"error": "..."}` for requests that are not reviews at all.
pub fn error_body(message: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "error": message })).unwrap_or_default()
}
