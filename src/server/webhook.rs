//! From a request body to a response body: parse the review, route it by
//! group/version/kind to its policy, ask the core, encode the answer.
//! No I/O here, so the whole path is benchmarked and tested without sockets:
//! a review that needs entitlement checks (SubjectAccessReviews) comes back
//! as a [`Pending`] continuation; the server asks and calls
//! [`Pending::finish`] with the answers.

use std::{fmt::Display, sync::Arc};

use http::StatusCode;
use tracing::debug;

use crate::{
    admission::{
        self, appwrapper, devices, kueue, object, patch, prescale,
        review::{self, AdmissionResponse, Status},
        ClusterFacts, Context, Operation, Settings, Verdict,
    },
    cluster::discovery::{ResourceNames, ANY_RESOURCE},
    entitlement::{self, Check, Identity, JobLabels, JobReview, Need, OnError, Outcome},
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

/// What a review comes to before any I/O.
#[derive(Debug)]
pub enum Reviewed {
    /// The final answer.
    Done(Answer),
    /// Allowed so far; the answer depends on entitlement checks.
    Entitle(Pending),
}

impl From<Answer> for Reviewed {
    fn from(a: Answer) -> Self {
        Reviewed::Done(a)
    }
}

/// A review waiting for its entitlement checks: what to ask, and what to
/// answer once the answers are in.
#[derive(Debug)]
pub struct Pending {
    uid: String,
    user: Arc<Identity>,
    needs: Vec<Need>,
    /// Warnings of the decision so far.
    warnings: Vec<String>,
    hook: Hook,
    kind: &'static str,
    operation: &'static str,
    /// AppWrapper components whose resource name was not known yet (their
    /// need asks for `*` until [`Pending::resolve`]): index into `needs`.
    unresolved: Vec<(usize, appwrapper::ComponentCheck)>,
    resources: Option<Arc<ResourceNames>>,
}

impl Pending {
    /// Looks up by discovery the resource names the checks still lack
    /// (the first AppWrapper with a kind; later ones find it cached).
    pub async fn resolve(&mut self) {
        let Some(names) = self.resources.clone() else {
            return;
        };
        for (i, c) in std::mem::take(&mut self.unresolved) {
            let resource = names.resolve(&c).await;
            if let Some(n) = self.needs.get_mut(i) {
                n.attributes.resource = resource;
            }
        }
    }

    /// The questions for the authorizer, in order.
    pub fn checks(&self) -> Vec<Check> {
        self.needs.iter().map(|n| n.check(&self.user)).collect()
    }

    /// The answer, given the results of [`Pending::checks`] in order.
    pub fn finish<E: Display>(self, results: &[Result<Outcome, E>], on_error: OnError) -> Answer {
        let labels = |result| {
            Some(ReviewLabels {
                webhook: self.hook.as_str(),
                kind: self.kind,
                operation: self.operation,
                result,
            })
        };
        match entitlement::judge(&self.user, &self.needs, results, on_error) {
            entitlement::Verdict::Allow { warnings } => {
                let mut resp = AdmissionResponse::allow(self.uid);
                resp.warnings = self.warnings;
                resp.warnings.extend(warnings);
                ok(resp, labels("allowed"))
            }
            entitlement::Verdict::Deny(message) => {
                debug!(uid = %self.uid, kind = self.kind, user = %self.user.username, %message, "denied");
                let mut resp = AdmissionResponse::deny(self.uid, message);
                resp.warnings = self.warnings;
                ok(resp, labels("denied"))
            }
            entitlement::Verdict::Unchecked(message) => {
                debug!(uid = %self.uid, kind = self.kind, user = %self.user.username, %message, "denied unchecked");
                // 503: the refusal is not a decision about the user, and
                // the same request may pass when retried.
                let resp = AdmissionResponse {
                    allowed: false,
                    status: Some(Status {
                        code: 503,
                        message,
                        reason: "ServiceUnavailable",
                    }),
                    warnings: self.warnings,
                    ..AdmissionResponse::allow(self.uid)
                };
                ok(resp, labels("unchecked"))
            }
        }
    }

    /// Finished without an authorizer to ask: every check fails, closed.
    pub fn finish_unchecked(self) -> Answer {
        let results: Vec<Result<Outcome, &str>> =
            vec![Err("no SubjectAccessReview client is configured"); self.needs.len()];
        self.finish(&results, OnError::Deny)
    }
}

pub struct Webhook {
    policies: PolicySet,
    /// What reviews read of objects, for every loaded policy.
    interest: Interest,
    /// Integration names as `'static` metric label values, by policy index.
    names: Vec<(Arc<Policy>, &'static str)>,
    settings: Settings,
    facts: Arc<dyn ClusterFacts>,
    appwrapper: appwrapper::Settings,
    /// Kind → resource names for AppWrapper's per-component checks.
    resources: Arc<ResourceNames>,
}

impl Webhook {
    /// AppWrapper settings and the resource names its checks use (without
    /// this: the defaults, and no discovery — every component is checked
    /// as `*` of its group).
    pub fn with_appwrapper(
        mut self,
        settings: appwrapper::Settings,
        resources: Arc<ResourceNames>,
    ) -> Self {
        self.appwrapper = settings;
        self.resources = resources;
        self
    }

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
            appwrapper: appwrapper::Settings::default(),
            resources: Arc::new(ResourceNames::new(None)),
        }
    }

    /// The whole answer, for callers without an authorizer (benchmarks,
    /// tests): a review needing entitlement checks is refused as if they
    /// failed. Without cluster facts no review needs any.
    pub fn answer(&self, hook: Hook, body: &[u8]) -> Answer {
        match self.review(hook, body) {
            Reviewed::Done(a) => a,
            Reviewed::Entitle(p) => p.finish_unchecked(),
        }
    }

    /// The answer, or what to ask before answering.
    pub fn review(&self, hook: Hook, body: &[u8]) -> Reviewed {
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
                .into()
            }
            Err(review::ParseError { uid: None, message }) => {
                return Answer {
                    status: StatusCode::BAD_REQUEST,
                    body: error_body(&message),
                    labels: None,
                }
                .into()
            }
        };
        let operation = match req.operation() {
            Ok(op) => op,
            Err(m) => {
                return ok(
                    AdmissionResponse::bad_request(req.uid, m),
                    labels("unknown", "unknown", "malformed"),
                )
                .into()
            }
        };
        let op = operation.as_str();
        let Some(gvk) = req.kind.as_ref() else {
            return ok(
                AdmissionResponse::bad_request(req.uid, "request.kind: Required value".into()),
                labels("unknown", op, "malformed"),
            )
            .into();
        };
        if appwrapper::is_appwrapper(&gvk.group, &gvk.version, &gvk.kind) {
            return self.review_appwrapper(hook, operation, body, req.uid);
        }
        if prescale::is_prescaled_cronjob(&gvk.group, &gvk.version, &gvk.kind) {
            let (resp, result) = match hook {
                Hook::Validate => validate_prescale(body, req.uid),
                Hook::Mutate => (AdmissionResponse::allow(req.uid), "allowed"),
            };
            return ok(resp, labels("prescaledcronjob", op, result)).into();
        }
        let Some((policy, name)) = self
            .names
            .iter()
            .find(|(p, _)| p.target.matches(&gvk.group, &gvk.version, &gvk.kind))
        else {
            if let Some(kind) = kueue::Kind::of(&gvk.group, &gvk.version, &gvk.kind) {
                if hook == Hook::Validate {
                    let (resp, result) = validate_kueue(kind, operation, body, req.uid);
                    return ok(resp, labels(kind.metric_label(), op, result)).into();
                }
            }
            if let Some(kind) = devices::Kind::of(&gvk.group, &gvk.version, &gvk.kind) {
                if hook == Hook::Validate {
                    let facts = self.facts.device_facts().unwrap_or(&devices::Unknown);
                    let (resp, result) = devices::answer(kind, operation, body, req.uid, facts);
                    return ok(resp, labels(kind.metric_label(), op, result)).into();
                }
            }
            // Not an integrated kind: allowed unchanged.
            return ok(
                AdmissionResponse::allow(req.uid),
                labels("unknown", op, "unknown_kind"),
            )
            .into();
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
        // Entitlement runs after the invariants, on what they allowed: an
        // object refused anyway costs no SubjectAccessReview, and a user
        // sees the fix for the object before being told about permissions.
        // (Defaulting ran before, on /mutate: a defaulted queue name is
        // checked like a written one.)
        if hook == Hook::Validate && decision.verdict == Verdict::Allow {
            let needs = entitlement::job_checks(
                &JobReview {
                    operation,
                    kind: &policy.target.kind,
                    namespace: core_req.namespace,
                    name: req.name.as_deref().unwrap_or(""),
                    new: JobLabels::of(core_req.object),
                    old: JobLabels::of(core_req.old_object),
                    deleting: entitlement::deleting(core_req.object),
                },
                &*self.facts,
            );
            if !needs.is_empty() {
                return Reviewed::Entitle(Pending {
                    uid: req.uid,
                    user: Arc::new(Identity::from(req.user_info)),
                    needs,
                    warnings: decision.warnings,
                    hook,
                    kind: name,
                    operation: op,
                    unresolved: Vec::new(),
                    resources: None,
                });
            }
        }
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
        ok(resp, labels(name, op, result)).into()
    }
}

impl Webhook {
    /// AppWrappers: both hooks, on the whole object (the sparse read keeps
    /// only what job policies look at), then the entitlement checks of a
    /// create — the generic queue and priority opt-ins, and one per
    /// component unless `appwrapper.userRBACAdmissionCheck` is off.
    fn review_appwrapper(
        &self,
        hook: Hook,
        operation: Operation,
        body: &[u8],
        uid: String,
    ) -> Reviewed {
        let op = operation.as_str();
        let kind = appwrapper::INTEGRATION;
        let labels = |result| {
            Some(ReviewLabels {
                webhook: hook.as_str(),
                kind,
                operation: op,
                result,
            })
        };
        let full = match review::parse_whole(body) {
            Ok(r) => r,
            Err(e) => {
                return ok(
                    AdmissionResponse::bad_request(uid, e.message),
                    labels("malformed"),
                )
                .into()
            }
        };
        let core_req = admission::Request {
            operation,
            namespace: full.namespace.as_deref().unwrap_or(""),
            object: full.object.as_ref(),
            old_object: full.old_object.as_ref(),
        };
        let ctx = Context {
            settings: &self.settings,
            facts: &*self.facts,
            policies: &self.policies,
        };
        let decision = match hook {
            Hook::Mutate => appwrapper::mutate(&core_req, &full.user_info, &self.appwrapper, &ctx),
            Hook::Validate => appwrapper::validate(&core_req, &ctx),
        };
        if hook == Hook::Validate && decision.verdict == Verdict::Allow {
            let name = full.name.as_deref().unwrap_or("");
            let namespace = appwrapper::namespace_of(core_req.object, core_req.namespace);
            let mut needs = entitlement::job_checks(
                &JobReview {
                    operation,
                    kind: appwrapper::KIND,
                    namespace,
                    name,
                    new: JobLabels::of(core_req.object),
                    old: JobLabels::of(core_req.old_object),
                    deleting: entitlement::deleting(core_req.object),
                },
                &*self.facts,
            );
            let mut unresolved = Vec::new();
            for c in appwrapper::component_checks(&core_req, &self.appwrapper) {
                let resource = self.resources.cached(&c);
                if resource.is_none() {
                    unresolved.push((needs.len(), c.clone()));
                }
                needs.push(appwrapper::need(
                    &c,
                    resource.as_deref().unwrap_or(ANY_RESOURCE),
                    namespace,
                    name,
                ));
            }
            if !needs.is_empty() {
                return Reviewed::Entitle(Pending {
                    uid: full.uid,
                    user: Arc::new(Identity::from(full.user_info)),
                    needs,
                    warnings: decision.warnings,
                    hook,
                    kind,
                    operation: op,
                    unresolved,
                    resources: Some(self.resources.clone()),
                });
            }
        }
        let (mut resp, result) = match decision.verdict {
            Verdict::Allow if decision.patch.is_empty() => {
                (AdmissionResponse::allow(full.uid), "allowed")
            }
            Verdict::Allow => (
                AdmissionResponse::allow(full.uid).with_patch(&patch::to_json(&decision.patch)),
                "patched",
            ),
            Verdict::Deny(message) => {
                debug!(uid = %full.uid, kind, namespace = core_req.namespace,
                       name = full.name.as_deref().unwrap_or(""),
                       user = %full.user_info.username, %message, "denied");
                (AdmissionResponse::deny(full.uid, message), "denied")
            }
            Verdict::Malformed(message) => {
                debug!(uid = %full.uid, kind, %message, "undecodable object");
                (
                    AdmissionResponse::bad_request(full.uid, message),
                    "malformed",
                )
            }
        };
        resp.warnings = decision.warnings;
        ok(resp, labels(result)).into()
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
    let full = match review::parse_whole(body) {
        Ok(r) => r,
        Err(e) => return (AdmissionResponse::bad_request(uid, e.message), "malformed"),
    };
    // Warnings go with the answer, allowed or denied, as controller-runtime
    // sends a validator's warnings.
    let warnings = kueue::warnings::for_object(kind, operation, full.object.as_ref());
    match kueue::validate(
        kind,
        operation,
        full.object.as_ref(),
        full.old_object.as_ref(),
    ) {
        Ok(errs) if errs.is_empty() => {
            let mut resp = AdmissionResponse::allow(uid);
            resp.warnings = warnings;
            (resp, "allowed")
        }
        Ok(errs) => {
            let message = kueue::aggregate(&errs);
            debug!(%uid, kind = kind.name(), namespace = full.namespace.as_deref().unwrap_or(""),
                   name = full.name.as_deref().unwrap_or(""), user = %full.user_info.username,
                   %message, "denied");
            let mut resp = AdmissionResponse::deny(uid, message);
            resp.warnings = warnings;
            (resp, "denied")
        }
        Err(e) => {
            let message = format!("cannot decode {kind} in request.{}: {}", e.what, e.error);
            debug!(%uid, kind = kind.name(), %message, "undecodable object");
            (AdmissionResponse::bad_request(uid, message), "malformed")
        }
    }
}

/// PreScaledCronJobs: the whole object read again (as Kueue's kinds are),
/// checked by [`prescale::validate`] from today's date (UTC).
fn validate_prescale(body: &[u8], uid: String) -> (AdmissionResponse, &'static str) {
    let full = match review::parse_whole(body) {
        Ok(r) => r,
        Err(e) => return (AdmissionResponse::bad_request(uid, e.message), "malformed"),
    };
    let Some(object) = full.object.as_ref() else {
        return (AdmissionResponse::allow(uid), "allowed");
    };
    let today = chrono::Utc::now().date_naive();
    let errs = prescale::validate(object, today);
    if errs.is_empty() {
        return (AdmissionResponse::allow(uid), "allowed");
    }
    let message = admission::field::aggregate(&errs);
    debug!(%uid, namespace = full.namespace.as_deref().unwrap_or(""),
           name = full.name.as_deref().unwrap_or(""), %message, "PreScaledCronJob denied");
    (AdmissionResponse::deny(uid, message), "denied")
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

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::selector::LabelSelector;

    /// The LocalQueue `protected` and the class `high` opt in.
    struct Facts;
    impl ClusterFacts for Facts {
        fn namespace_matches(&self, _: &str, _: &LabelSelector) -> bool {
            true
        }
        fn default_local_queue_exists(&self, _: &str) -> bool {
            false
        }
        fn default_priority_class_exists(&self) -> bool {
            false
        }
        fn queue_requires_submit(&self, _: &str, queue: &str) -> bool {
            queue == "protected"
        }
        fn priority_class_requires_use(&self, name: &str) -> bool {
            name == "high"
        }
    }

    fn webhook() -> Webhook {
        Webhook::new(
            PolicySet::embedded().unwrap(),
            Settings {
                manage_jobs_without_queue_name: false,
                managed_namespaces: LabelSelector::excluding_namespaces(&["kube-system"]),
            },
            Arc::new(Facts),
        )
    }

    fn job(labels: Value, suspend: bool) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "train-1", "namespace": "team-a", "labels": labels},
               "spec": {"suspend": suspend, "template": {}}})
    }

    fn review(op: &str, object: Value, old: Option<Value>) -> Vec<u8> {
        let mut req = json!({
            "uid": "u-1", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "operation": op, "namespace": "team-a", "name": "train-1",
            "userInfo": {"username": "system:serviceaccount:team-a:bot", "uid": "42",
                         "groups": ["system:serviceaccounts", "system:authenticated"],
                         "extra": {"k": ["v"]}},
            "object": object,
        });
        if let Some(o) = old {
            req["oldObject"] = o;
        }
        serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1",
                                   "kind": "AdmissionReview", "request": req}))
        .unwrap()
    }

    fn response(a: &Answer) -> Value {
        serde_json::from_slice::<Value>(&a.body).unwrap()["response"].clone()
    }

    fn pending(r: Reviewed) -> Pending {
        match r {
            Reviewed::Entitle(p) => p,
            Reviewed::Done(a) => panic!("no checks asked: {}", response(&a)),
        }
    }

    #[test]
    fn a_protected_queue_asks_before_answering() {
        let w = webhook();
        let body = review(
            "CREATE",
            job(json!({"kueue.x-k8s.io/queue-name": "protected"}), true),
            None,
        );
        let p = pending(w.review(Hook::Validate, &body));
        let checks = p.checks();
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].user.uid, "42");
        assert_eq!(checks[0].user.extra["k"], ["v"]);
        assert_eq!(checks[0].attributes.verb, "submit");
        assert_eq!(checks[0].attributes.name, "protected");

        let a = p.finish(
            &[Ok::<_, String>(Outcome::Denied {
                reason: String::new(),
            })],
            OnError::Deny,
        );
        let r = response(&a);
        assert_eq!(r["allowed"], false);
        assert_eq!(r["status"]["code"], 403);
        let m = r["status"]["message"].as_str().unwrap();
        assert!(m.starts_with(r#"User "system:serviceaccount:team-a:bot" cannot submit localqueues.kueue.x-k8s.io "protected" in the namespace "team-a": the Job team-a/train-1 names it in metadata.labels[kueue.x-k8s.io/queue-name]"#), "{m}");
        assert_eq!(a.labels.unwrap().result, "denied");

        let p = pending(w.review(Hook::Validate, &body));
        let a = p.finish(&[Ok::<_, String>(Outcome::Allowed)], OnError::Deny);
        assert_eq!(response(&a)["allowed"], true);
        assert_eq!(a.labels.unwrap().result, "allowed");

        // A failed check fails closed with 503, or open with a warning.
        let p = pending(w.review(Hook::Validate, &body));
        let a = p.finish(&[Err("timed out")], OnError::Deny);
        let r = response(&a);
        assert_eq!(
            (r["allowed"].clone(), r["status"]["code"].clone()),
            (json!(false), json!(503))
        );
        assert!(
            r["status"]["message"]
                .as_str()
                .unwrap()
                .contains("may be retried"),
            "{r}"
        );
        assert_eq!(a.labels.unwrap().result, "unchecked");
        let p = pending(w.review(Hook::Validate, &body));
        let r = response(&p.finish(&[Err("timed out")], OnError::Allow));
        assert_eq!(r["allowed"], true);
        assert_eq!(r["warnings"].as_array().unwrap().len(), 1);

        // Without an authorizer: refused, not allowed.
        assert_eq!(response(&w.answer(Hook::Validate, &body))["allowed"], false);
    }

    #[test]
    fn no_checks_where_none_are_needed() {
        let w = webhook();
        let done = |hook, body: Vec<u8>| match w.review(hook, &body) {
            Reviewed::Done(a) => response(&a),
            Reviewed::Entitle(p) => panic!("asked {:?}", p.checks()),
        };
        let protected = job(json!({"kueue.x-k8s.io/queue-name": "protected"}), true);
        // Mutating: never.
        assert_eq!(
            done(Hook::Mutate, review("CREATE", protected.clone(), None))["allowed"],
            true
        );
        // An open queue.
        let open = job(json!({"kueue.x-k8s.io/queue-name": "open"}), true);
        assert_eq!(
            done(Hook::Validate, review("CREATE", open.clone(), None))["allowed"],
            true
        );
        // An update that keeps the label.
        let mut changed = protected.clone();
        changed["spec"]["parallelism"] = json!(2);
        assert_eq!(
            done(
                Hook::Validate,
                review("UPDATE", changed, Some(protected.clone()))
            )["allowed"],
            true
        );
        // Being deleted.
        let mut deleting = protected.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        assert_eq!(
            done(Hook::Validate, review("CREATE", deleting, None))["allowed"],
            true
        );
        // Refused by the invariants: no SubjectAccessReview spent.
        let bad = job(
            json!({"kueue.x-k8s.io/queue-name": "protected",
                   "kueue.x-k8s.io/max-exec-time-seconds": "0"}),
            true,
        );
        let r = done(Hook::Validate, review("CREATE", bad, None));
        assert_eq!(r["allowed"], false);
        assert!(
            r["status"]["message"]
                .as_str()
                .unwrap()
                .contains("max-exec-time-seconds"),
            "{r}"
        );
        // Moving to a protected queue or adding a protected class: asked.
        let p = pending(w.review(Hook::Validate, &review("UPDATE", protected, Some(open))));
        assert_eq!(p.checks().len(), 1);
        let classed = job(
            json!({"kueue.x-k8s.io/queue-name": "open", "kueue.x-k8s.io/priority-class": "high"}),
            true,
        );
        let p = pending(w.review(Hook::Validate, &review("CREATE", classed, None)));
        assert_eq!(p.checks()[0].attributes.resource, "workloadpriorityclasses");
    }
}
