//! The admission router: one entry point from a review's bytes to the
//! answer's bytes. The review is decoded once, reading its objects as far
//! as the family it is routed to needs (job kinds: only what the policies
//! look at, the sparse [`Interest`] read; the other families: whole); the
//! table, keyed by group/version/kind and hook, picks the [`Family`] that
//! decides; what the decision still needs to know comes back: objects to
//! read by name ([`Reviewed::Read`], decided again once read) and
//! SubjectAccessReviews (a [`Pending`] continuation, which the server
//! resolves and finishes). No I/O here, so the whole path is benchmarked and tested
//! without sockets.
//!
//! Adding a family: a type implementing [`Family`] in the family's module,
//! and its rows in [`Router::table`]. Nothing in `server/` changes.

use std::{cell::Cell, fmt::Display, sync::Arc};

use http::StatusCode;
use tracing::debug;

use super::{
    appwrapper,
    entitlement::{ComponentCheck, ResourceNaming},
    family::{Decided, Hook, Reads, Review, Today},
    object,
    registry::{self, Route},
    review::{self, AdmissionResponse, GroupVersionKind, Reading, Status},
    Asked, ClusterFacts, Context, Layered, Lookups, ObjectKey, Read, Settings, Verdict,
};
use crate::vocabulary::patch;
use crate::{
    admission::entitlement::{self, Check, Identity, Need, OnError, Outcome},
    api::kueue::conversion,
    jobs::policy::{Interest, Policy, PolicySet},
};

/// The metric labels of one answered review (the server counts them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labels {
    /// `mutate` or `validate`.
    pub webhook: &'static str,
    /// The family's label (`batch/job`), or `unknown` for unrouted kinds.
    pub kind: &'static str,
    pub operation: &'static str,
    /// `allowed`, `patched`, `denied`, `unchecked` (an entitlement check
    /// failed), `malformed` or `unknown_kind`.
    pub result: &'static str,
}

/// The answer to one HTTP request.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Vec<u8>,
    /// Metric labels for a review answered with 200; `None` for a body that
    /// was not a review at all.
    pub labels: Option<Labels>,
}

/// What a review comes to before any I/O.
#[derive(Debug)]
pub enum Reviewed {
    /// The final answer.
    Done(Answer),
    /// Allowed so far; the answer depends on entitlement checks.
    Entitle(Pending),
    /// The rules need these objects read: read them and call
    /// [`Router::review_read`] with the same body.
    Read(Vec<ObjectKey>),
}

impl From<Answer> for Reviewed {
    fn from(a: Answer) -> Self {
        Reviewed::Done(a)
    }
}

/// From a review's bytes to the answer: the table of families and what
/// their decisions read.
pub struct Router {
    policies: PolicySet,
    /// What job kinds' reviews read of objects, for every loaded policy.
    interest: Interest,
    /// What gated kinds' (pods') reviews read, for every loaded gate.
    gated: Interest,
    /// The same, and the role hashed as it is read: /mutate sets the
    /// role-hash annotation, /validate does not read the role.
    gated_role: Interest,
    whole: Interest,
    /// Unrouted kinds: objects syntax-checked, nothing built.
    nothing: Interest,
    /// Integration names as `'static` metric label values, by policy index.
    names: Vec<(Arc<Policy>, &'static str)>,
    settings: Settings,
    facts: Arc<dyn ClusterFacts>,
    appwrapper: appwrapper::Settings,
    /// Kind → resource names for AppWrapper's per-component checks.
    resources: Arc<dyn ResourceNaming>,
    /// First match wins.
    routes: Vec<Route>,
    today: Today,
}

/// Rounds of object reads a review may take: an owner chain's parents,
/// one per round, up to Kueue's limit, and one more.
pub const READ_ROUNDS: usize = crate::jobs::ancestry::CHAIN_LIMIT + 2;

impl Router {
    pub fn new(
        policies: PolicySet,
        settings: Settings,
        facts: Arc<dyn ClusterFacts>,
        today: Today,
    ) -> Self {
        // Policies are loaded once per process, so leaking their names for
        // allocation-free metric labels is bounded.
        let names = policies
            .iter()
            .map(|p| (p.clone(), &*Box::leak(p.name.clone().into_boxed_str())))
            .collect();
        let mut gated = Interest::default();
        for gate in policies.iter().filter_map(|p| p.gate.as_ref()) {
            gate.note_interest(&mut gated);
        }
        let mut router = Router {
            interest: object::interest(&policies),
            gated: gated.clone(),
            gated_role: {
                let mut root = gated;
                crate::jobs::role::note_interest(&mut root);
                root
            },
            whole: Interest {
                whole: true,
                ..Interest::default()
            },
            nothing: Interest::default(),
            policies,
            names,
            settings,
            facts,
            appwrapper: appwrapper::Settings::default(),
            resources: Arc::new(entitlement::NoResourceNames),
            routes: Vec::new(),
            today,
        };
        router.routes = router.table();
        router
    }

    /// AppWrapper settings and the resource names its checks use (without
    /// this: the defaults, and no discovery — every component is checked
    /// as `*` of its group).
    pub fn with_appwrapper(
        mut self,
        settings: appwrapper::Settings,
        resources: Arc<dyn ResourceNaming>,
    ) -> Self {
        self.appwrapper = settings;
        self.resources = resources;
        self.routes = self.table();
        self
    }

    fn table(&self) -> Vec<Route> {
        registry::table(&self.names, &self.appwrapper, &self.resources, &self.today)
    }

    fn route(&self, hook: Hook, gvk: &GroupVersionKind) -> Option<usize> {
        self.routes.iter().position(|r| {
            r.kind == gvk.kind
                && r.group == gvk.group
                && r.version == gvk.version
                && r.hooks.contains(&hook)
        })
    }

    /// The whole answer, for callers without an authorizer (benchmarks,
    /// tests): a review needing entitlement checks is refused as if they
    /// failed. Without cluster facts no review needs any.
    /// Objects the rules read are answered as not readable.
    pub fn answer(&self, hook: Hook, body: &[u8]) -> Answer {
        let mut read = Read::default();
        let mut reviewed = self.review(hook, body);
        // A rule stops at a read that failed: each round asks only keys
        // not read before, so the rounds end.
        for _ in 0..READ_ROUNDS {
            let Reviewed::Read(keys) = reviewed else {
                break;
            };
            read.extend(Read::unreadable(keys, "no cluster connection"));
            reviewed = self.review_read(hook, body, &read);
        }
        match reviewed {
            Reviewed::Done(a) => a,
            Reviewed::Entitle(p) => p.finish_unchecked(),
            Reviewed::Read(_) => unreachable!("a rule asks nothing after a failed read"),
        }
    }

    /// The answer, or what to ask (or read) before answering.
    pub fn review(&self, hook: Hook, body: &[u8]) -> Reviewed {
        let asked = Asked::default();
        match self.decide(hook, body, &asked) {
            Reviewed::Done(_) | Reviewed::Entitle(_) if !asked.is_empty() => {
                Reviewed::Read(asked.keys())
            }
            r => r,
        }
    }

    /// The review again, with the objects its earlier passes asked for
    /// read; `Read` again when the rules ask for more (the next parent of
    /// an owner chain).
    pub fn review_read(&self, hook: Hook, body: &[u8], read: &Read) -> Reviewed {
        let layered = Layered {
            read,
            asked: Asked::default(),
        };
        match self.decide(hook, body, &layered) {
            Reviewed::Done(_) | Reviewed::Entitle(_) if !layered.asked.is_empty() => {
                Reviewed::Read(layered.asked.keys())
            }
            r => r,
        }
    }

    fn decide(&self, hook: Hook, body: &[u8], lookups: &dyn Lookups) -> Reviewed {
        let labels = |kind, operation, result| {
            Some(Labels {
                webhook: hook.as_str(),
                kind,
                operation,
                result,
            })
        };
        let lookup = Lookup {
            router: self,
            hook,
            route: Cell::new(None),
        };
        let req = match review::parse(body, &lookup) {
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
        if req.kind.is_none() {
            return ok(
                AdmissionResponse::bad_request(req.uid, "request.kind: Required value".into()),
                labels("unknown", op, "malformed"),
            )
            .into();
        }
        let Some(route) = lookup.route.get().and_then(|i| self.routes.get(i)) else {
            // Not an integrated kind: allowed unchanged.
            return ok(
                AdmissionResponse::allow(req.uid),
                labels("unknown", op, "unknown_kind"),
            )
            .into();
        };
        let family = &*route.family;
        let ctx = Context {
            settings: &self.settings,
            facts: &*self.facts,
            policies: &self.policies,
            lookups,
        };
        let Decided { decision, checks } = family.decide(
            &Review {
                hook,
                operation,
                request: &req,
            },
            &ctx,
        );
        let kind = family.label();
        if decision.verdict == Verdict::Allow && !checks.needs.is_empty() {
            return Reviewed::Entitle(Pending {
                uid: req.uid,
                user: Arc::new(Identity::from(req.user_info)),
                needs: checks.needs,
                warnings: decision.warnings,
                hook,
                kind,
                operation: op,
                unresolved: checks.unresolved,
                resources: checks.resources,
            });
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
                debug!(uid = %req.uid, kind, namespace = req.namespace.as_deref().unwrap_or(""),
                       name = req.name.as_deref().unwrap_or(""),
                       user = %req.user_info.username, %message, "denied");
                (AdmissionResponse::deny(req.uid, message), "denied")
            }
            Verdict::Malformed(message) => {
                debug!(uid = %req.uid, kind, %message, "undecodable object");
                (
                    AdmissionResponse::bad_request(req.uid, message),
                    "malformed",
                )
            }
        };
        resp.warnings = decision.warnings;
        ok(resp, labels(kind, op, result)).into()
    }

    /// `POST /convert`: a ConversionReview of Kueue's kinds, converted by
    /// [`conversion::review`]; `Err` is why the body is not one.
    pub fn convert(&self, body: &[u8]) -> Result<Vec<u8>, String> {
        conversion::review(body)
            .and_then(|r| Ok(serde_json::to_vec(&r)?))
            .map_err(|e| e.to_string())
    }
}

/// Picks, while the review is decoded, the route of its kind and so how
/// much of its objects to read.
struct Lookup<'r> {
    router: &'r Router,
    hook: Hook,
    route: Cell<Option<usize>>,
}

impl Reading for Lookup<'_> {
    fn interest(&self, kind: &GroupVersionKind) -> &Interest {
        let route = self.router.route(self.hook, kind);
        self.route.set(route);
        match route.and_then(|i| self.router.routes.get(i)) {
            Some(r) => match r.family.reads() {
                Reads::Policies => &self.router.interest,
                Reads::Gated if self.hook == Hook::Mutate => &self.router.gated_role,
                Reads::Gated => &self.router.gated,
                Reads::Whole => &self.router.whole,
            },
            None => &self.router.nothing,
        }
    }
    fn before_kind(&self) -> &Interest {
        // Not known yet which family reads them: whole serves every one.
        &self.router.whole
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
    /// Components whose resource name was not known yet (their need asks
    /// for `*` until [`Pending::resolve`]): index into `needs`.
    unresolved: Vec<(usize, ComponentCheck)>,
    resources: Option<Arc<dyn ResourceNaming>>,
}

impl Pending {
    /// Looks up the resource names the checks still lack (by discovery in
    /// the shell: the first AppWrapper with a kind; later ones find it
    /// cached).
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
            Some(Labels {
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

fn ok(resp: AdmissionResponse, labels: Option<Labels>) -> Answer {
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
    use crate::api::selector::LabelSelector;

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

    fn webhook() -> Router {
        Router::new(
            PolicySet::embedded().unwrap(),
            Settings {
                manage_jobs_without_queue_name: false,
                managed_namespaces: LabelSelector::excluding_namespaces(&["kube-system"]),
            },
            Arc::new(Facts),
            Arc::new(|| chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap()),
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

    /// Kueue's `WorkloadShouldBeSuspended` over an owner chain, read
    /// parent by parent, one round each: a queued Job a JobSet made is left
    /// to a queued ancestor (no suspend), held when none is; a parent that
    /// is gone refuses with the apiserver's words, as Kueue's webhook does;
    /// without a cluster the first read fails and refuses.
    #[test]
    fn a_childs_owner_chain_is_read_round_by_round() {
        use base64::Engine as _;
        let w = webhook();
        let owner = |api_version: &str, kind: &str, name: &str| {
            json!([{"apiVersion": api_version, "kind": kind, "name": name,
                    "uid": format!("uid-{name}"), "controller": true}])
        };
        let mut child = job(json!({"kueue.x-k8s.io/queue-name": "protected"}), false);
        child["metadata"]["ownerReferences"] = owner("jobset.x-k8s.io/v1alpha2", "JobSet", "js");
        let body = review("CREATE", child, None);
        let key = |group: &str, version: &str, resource: &str, name: &str| ObjectKey {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            namespace: Some("team-a".into()),
            name: name.into(),
        };
        let js = key("jobset.x-k8s.io", "v1alpha2", "jobsets", "js");
        let mpi = key("kubeflow.org", "v2beta1", "mpijobs", "top");
        let parent = |name: &str, queue: Option<&str>, owned: Option<Value>| {
            let mut p = json!({"metadata": {"name": name, "namespace": "team-a",
                                            "uid": format!("uid-{name}")}});
            if let Some(q) = queue {
                p["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": q});
            }
            if let Some(o) = owned {
                p["metadata"]["ownerReferences"] = o;
            }
            p
        };
        let Reviewed::Read(keys) = w.review(Hook::Mutate, &body) else {
            panic!("no read asked");
        };
        assert_eq!(keys, vec![js.clone()]);
        // The JobSet is unqueued and an MPIJob's: that is read next.
        let mut read = Read(
            [(
                js.clone(),
                Ok(Some(parent(
                    "js",
                    None,
                    Some(owner("kubeflow.org/v2beta1", "MPIJob", "top")),
                ))),
            )]
            .into_iter()
            .collect(),
        );
        let Reviewed::Read(keys) = w.review_read(Hook::Mutate, &body, &read) else {
            panic!("the grandparent not asked");
        };
        assert_eq!(keys, vec![mpi.clone()]);
        let suspends = |r: Reviewed| {
            let Reviewed::Done(a) = r else {
                panic!("not answered");
            };
            let resp = response(&a);
            assert_eq!(resp["allowed"], true, "{resp}");
            resp["patch"].as_str().is_some_and(|p| {
                let ops = base64::engine::general_purpose::STANDARD.decode(p).unwrap();
                String::from_utf8(ops).unwrap().contains("/spec/suspend")
            })
        };
        // A queued MPIJob on top governs: the Job is not held.
        let mut queued = read.clone();
        queued
            .0
            .insert(mpi.clone(), Ok(Some(parent("top", Some("q"), None))));
        assert!(!suspends(w.review_read(Hook::Mutate, &body, &queued)));
        // No ancestor queued: the Job is held, to be queued on its own.
        read.0.insert(mpi, Ok(Some(parent("top", None, None))));
        assert!(suspends(w.review_read(Hook::Mutate, &body, &read)));
        // The JobSet gone: refused with the apiserver's words.
        let gone = Read([(js, Ok(None))].into_iter().collect());
        let Reviewed::Done(a) = w.review_read(Hook::Mutate, &body, &gone) else {
            panic!("not answered");
        };
        let resp = response(&a);
        assert_eq!(resp["allowed"], false);
        assert_eq!(
            resp["status"]["message"],
            "jobsets.jobset.x-k8s.io \"js\" not found"
        );
        // Without a cluster: the read fails, and refuses.
        let resp = response(&w.answer(Hook::Mutate, &body));
        assert_eq!(resp["allowed"], false);
        assert_eq!(resp["status"]["message"], "no cluster connection");
        // An unqueued child reads nothing.
        let mut free = job(json!({}), false);
        free["metadata"]["ownerReferences"] = owner("jobset.x-k8s.io/v1alpha2", "JobSet", "js");
        assert!(matches!(
            w.review(Hook::Mutate, &review("CREATE", free, None)),
            Reviewed::Done(_)
        ));
    }

    /// A rule that reads an object (a TrainJob's runtime) answers in two
    /// passes: the first asks, the second decides from what was read and
    /// may still need entitlement checks; without a cluster the object is
    /// unreadable.
    #[test]
    fn a_review_that_reads_an_object_asks_then_decides() {
        let w = webhook();
        let trainjob = json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "t", "namespace": "team-a",
                         "labels": {"kueue.x-k8s.io/queue-name": "protected"}},
            "spec": {"runtimeRef": {"name": "torch"}}});
        let mut body: Value = serde_json::from_slice(&review("CREATE", trainjob, None)).unwrap();
        body["request"]["kind"] =
            json!({"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"});
        let body = serde_json::to_vec(&body).unwrap();
        let Reviewed::Read(keys) = w.review(Hook::Validate, &body) else {
            panic!("no read asked");
        };
        let key = ObjectKey {
            group: "trainer.kubeflow.org".into(),
            version: "v1alpha1".into(),
            resource: "clustertrainingruntimes".into(),
            namespace: None,
            name: "torch".into(),
        };
        assert_eq!(keys, vec![key.clone()]);
        let runtime = json!({"spec": {"template": {"spec": {"replicatedJobs": []}}}});
        let found = Read([(key.clone(), Ok(Some(runtime)))].into_iter().collect());
        let p = pending(w.review_read(Hook::Validate, &body, &found));
        assert_eq!(p.checks().len(), 1);
        let missing = Read([(key, Ok(None))].into_iter().collect());
        let Reviewed::Done(a) = w.review_read(Hook::Validate, &body, &missing) else {
            panic!("not answered");
        };
        assert_eq!(
            response(&a)["status"]["message"],
            "runtime 'torch' not found"
        );
        assert_eq!(
            response(&w.answer(Hook::Validate, &body))["status"]["message"],
            "runtime 'torch' not found"
        );
        // The mutating webhook reads nothing.
        assert!(matches!(w.review(Hook::Mutate, &body), Reviewed::Done(_)));
    }

    fn pending(r: Reviewed) -> Pending {
        match r {
            Reviewed::Entitle(p) => p,
            Reviewed::Done(a) => panic!("no checks asked: {}", response(&a)),
            Reviewed::Read(k) => panic!("read {k:?}"),
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
            Reviewed::Read(k) => panic!("read {k:?}"),
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
