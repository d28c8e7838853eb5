//! Kinds queued through their pods (a policy with `podOwner`: Kueue's
//! Deployment and StatefulSet integrations). Defaulting on /mutate, as
//! their webhooks' `Default`: default LocalQueue and priority class, then,
//! for an object Kueue would suspend, the pod template marked with
//! `kueue.x-k8s.io/pod-suspending-parent: <integration>` (and, for a
//! Deployment, the managed label, the queue name and the priority class),
//! so the pod webhook gates every pod it creates. Validation on /validate
//! with Kueue's messages: the queue name, the elastic-job and
//! admission-gated-by annotations; on update the queue name and priority
//! class fixed while pods run, and for a group (StatefulSet) the replicas
//! fixed but for a scale down to or up from zero.

use serde_json::Value;

use super::{
    admission_gates::{self, ADMISSION_GATED_BY_ANNOTATION},
    field::{self, annotation_path, go_quote, label_path, BadValue, FieldError},
    object::{
        JobObject, DEFAULT_NAME, ELASTIC_JOB_ANNOTATION, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL,
    },
    patch::{self, PatchOp},
    validation::{self, FIELD_IMMUTABLE},
    Context, Decision, Operation, Request, Verdict,
};
use crate::jobs::{
    pod::SUSPENDED_BY_PARENT_ANNOTATION,
    policy::{PodOwner, Pointer, Policy},
};

/// Kueue's `ManagedByKueueLabel` and its one value, on a Deployment's pod
/// template.
pub const MANAGED_LABEL: &str = "kueue.x-k8s.io/managed";

fn read<'a>(
    policy: &Policy,
    obj: Option<&'a Value>,
    what: &str,
) -> Result<JobObject<'a>, Decision> {
    match obj {
        Some(v) => JobObject::parse(v, policy).map_err(|e| Decision::malformed(policy, &e)),
        None => Err(Decision {
            verdict: Verdict::Malformed(format!(
                "request.{what}: required for this operation of {}; the apiserver always sends it",
                policy.target
            )),
            ..Decision::allow()
        }),
    }
}

/// The integration whose parent annotation the template already carries,
/// when it is another one (a StatefulSet of a LeaderWorkerSet: Kueue's
/// `managedByAnotherFramework`).
fn other_parent<'a>(policy: &Policy, owner: &PodOwner, obj: &'a Value) -> Option<&'a str> {
    owner.group.as_ref()?;
    let p = template_key(owner, "annotations", SUSPENDED_BY_PARENT_ANNOTATION)?;
    p.resolve(obj)
        .and_then(Value::as_str)
        .filter(|n| *n != policy.name)
}

fn template_key(owner: &PodOwner, section: &str, key: &str) -> Option<Pointer> {
    let rel = Pointer::parse(&format!(
        "/metadata/{section}/{}",
        key.replace('~', "~0").replace('/', "~1")
    ))
    .ok()?;
    Some(owner.template.child(&rel))
}

/// Kueue's `WorkloadShouldBeSuspended`: not under a managed owner; a queue
/// name, or `manageJobsWithoutQueueName` in a managed namespace.
fn should_suspend(obj: &JobObject<'_>, queue: bool, namespace: &str, ctx: &Context<'_>) -> bool {
    if obj
        .controller()
        .is_some_and(|o| ctx.policies.is_integrated(o.api_version, o.kind))
    {
        return false;
    }
    queue
        || (ctx.settings.manage_jobs_without_queue_name
            && ctx
                .facts
                .namespace_matches(namespace, &ctx.settings.managed_namespaces))
}

/// The mutating webhook (CREATE and UPDATE, as Kueue registers it).
pub fn mutate(policy: &Policy, owner: &PodOwner, req: &Request<'_>, ctx: &Context<'_>) -> Decision {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return Decision::allow();
    }
    let obj = match read(policy, req.object, "object") {
        Ok(o) => o,
        Err(d) => return d,
    };
    let raw = obj.raw;
    if other_parent(policy, owner, raw).is_some() {
        return Decision::allow();
    }
    let mut ops: Vec<PatchOp> = Vec::new();
    // ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector.
    let mut queue = obj.queue_name().map(String::from);
    if queue.is_none()
        && ctx.facts.default_local_queue_exists(req.namespace)
        && ctx
            .facts
            .namespace_matches(req.namespace, &ctx.settings.managed_namespaces)
    {
        patch::set_label(raw, QUEUE_NAME_LABEL, DEFAULT_NAME, &mut ops);
        queue = Some(DEFAULT_NAME.into());
    }
    let mut priority = obj.label(PRIORITY_CLASS_LABEL).map(String::from);
    if priority.is_none() && ctx.facts.default_priority_class_exists() {
        patch::set_label(raw, PRIORITY_CLASS_LABEL, DEFAULT_NAME, &mut ops);
        priority = Some(DEFAULT_NAME.into());
    }
    if !should_suspend(&obj, queue.is_some(), req.namespace, ctx) {
        return Decision {
            patch: ops,
            ..Decision::allow()
        };
    }
    let mut marks = vec![(
        "annotations",
        SUSPENDED_BY_PARENT_ANNOTATION,
        policy.name.clone(),
    )];
    if owner.label_template {
        marks.push(("labels", MANAGED_LABEL, "true".into()));
        if let Some(q) = &queue {
            marks.push(("labels", QUEUE_NAME_LABEL, q.clone()));
        }
        if let Some(p) = priority.filter(|p| !p.is_empty()) {
            marks.push(("labels", PRIORITY_CLASS_LABEL, p));
        }
    }
    for (section, key, value) in marks {
        let Some(at) = template_key(owner, section, key) else {
            continue;
        };
        if let Err(path) = patch::set(raw, &at, Value::String(value), &mut ops) {
            return Decision {
                verdict: Verdict::Malformed(format!(
                    "cannot decode {}: {path}: must be an object to hold {}",
                    policy.target,
                    at.field_path()
                )),
                ..Decision::allow()
            };
        }
    }
    Decision {
        patch: ops,
        ..Decision::allow()
    }
}

/// `ValidateQueueName` and `ValidateElasticJobAnnotation`.
fn common(policy: &Policy, obj: &JobObject<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    errs.extend(validation::dns_subdomain_label(obj, QUEUE_NAME_LABEL));
    if obj.annotation(ELASTIC_JOB_ANNOTATION) == Some("true") && !policy.elastic_jobs {
        errs.push(FieldError::forbidden(
            annotation_path(ELASTIC_JOB_ANNOTATION),
            format!(
                "elastic job is not supported for {}",
                go_quote(&policy.target.to_string())
            ),
        ));
    }
    errs
}

fn int_at(ptr: &Pointer, obj: &Value, default: i64) -> i64 {
    ptr.resolve(obj).and_then(Value::as_i64).unwrap_or(default)
}

/// The update rules of Kueue's Deployment and StatefulSet webhooks.
fn update(
    policy: &Policy,
    owner: &PodOwner,
    old: &JobObject<'_>,
    new: &JobObject<'_>,
    namespace: &str,
    ctx: &Context<'_>,
) -> Vec<FieldError> {
    let mut errs = common(policy, new);
    let (oq, nq) = (
        old.label(QUEUE_NAME_LABEL).unwrap_or(""),
        new.label(QUEUE_NAME_LABEL).unwrap_or(""),
    );
    // "Suspended" while no pod of the old object is ready.
    let suspended = old.suspend_field();
    if (!suspended || nq.is_empty()) && nq != oq {
        errs.push(FieldError::invalid(
            label_path(QUEUE_NAME_LABEL),
            BadValue::Str(nq.to_string()),
            FIELD_IMMUTABLE,
        ));
    }
    // ValidateUpdateForWorkloadPriorityClassName.
    let (op, np) = (
        old.label(PRIORITY_CLASS_LABEL).unwrap_or(""),
        new.label(PRIORITY_CLASS_LABEL).unwrap_or(""),
    );
    if !suspended && op.is_empty() && !np.is_empty() {
        errs.push(FieldError::invalid(
            label_path(PRIORITY_CLASS_LABEL),
            BadValue::Str(np.to_string()),
            "WorkloadPriorityClass cannot be added to a non-suspended workload",
        ));
    } else if !op.is_empty() && np.is_empty() {
        errs.push(FieldError::invalid(
            label_path(PRIORITY_CLASS_LABEL),
            BadValue::Str(String::new()),
            "WorkloadPriorityClass cannot be removed from a workload",
        ));
    }
    errs.extend(admission_gates::on_update(
        old.annotation(ADMISSION_GATED_BY_ANNOTATION),
        new.annotation(ADMISSION_GATED_BY_ANNOTATION),
    ));
    if let Some(group) = &owner.group {
        if should_suspend(new, new.queue_name().is_some(), namespace, ctx) {
            let (o, n) = (
                int_at(&group.replicas, old.raw, 1),
                int_at(&group.replicas, new.raw, 1),
            );
            let path = group.replicas.field_path();
            // Only a scale down to zero and a scale up from zero.
            if n != 0 && o != 0 && n != o {
                errs.push(FieldError::invalid(
                    path.clone(),
                    BadValue::Int(n),
                    FIELD_IMMUTABLE,
                ));
            }
            if o == 0 && n > 0 && int_at(&group.existing, new.raw, 0) > 0 {
                errs.push(FieldError::forbidden(
                    path,
                    "scaling down is still in progress",
                ));
            }
        }
    }
    errs
}

/// The validating webhook.
pub fn validate(
    policy: &Policy,
    owner: &PodOwner,
    req: &Request<'_>,
    ctx: &Context<'_>,
) -> Decision {
    let errs = match req.operation {
        Operation::Create => {
            let new = match read(policy, req.object, "object") {
                Ok(o) => o,
                Err(d) => return d,
            };
            if other_parent(policy, owner, new.raw).is_some() {
                return Decision::allow();
            }
            let mut errs = common(policy, &new);
            errs.extend(admission_gates::on_create(
                new.annotation(ADMISSION_GATED_BY_ANNOTATION),
            ));
            errs
        }
        Operation::Update => {
            let (new, old) = match (
                read(policy, req.object, "object"),
                read(policy, req.old_object, "oldObject"),
            ) {
                (Ok(n), Ok(o)) => (n, o),
                (Err(d), _) | (_, Err(d)) => return d,
            };
            if other_parent(policy, owner, new.raw).is_some() {
                return Decision::allow();
            }
            update(policy, owner, &old, &new, req.namespace, ctx)
        }
        Operation::Delete | Operation::Connect => return Decision::allow(),
    };
    if errs.is_empty() {
        Decision::allow()
    } else {
        Decision {
            verdict: Verdict::Deny(field::aggregate(&errs)),
            ..Decision::allow()
        }
    }
}

/// The router's family for a kind queued through its pods.
pub struct Owners {
    pub policy: std::sync::Arc<Policy>,
    pub owner: PodOwner,
    pub label: &'static str,
}

impl super::router::Family for Owners {
    fn label(&self) -> &'static str {
        self.label
    }
    fn decide(
        &self,
        review: &super::router::Review<'_>,
        ctx: &Context<'_>,
    ) -> super::router::Decided {
        use super::router::Hook;
        let req = review.core();
        let decision = match review.hook {
            Hook::Mutate => mutate(&self.policy, &self.owner, &req, ctx),
            Hook::Validate => validate(&self.policy, &self.owner, &req, ctx),
        };
        super::router::Decided {
            decision,
            checks: super::router::Checks::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::{ClusterFacts, NoCluster, Settings};
    use super::*;
    use crate::{api::selector::LabelSelector, jobs::policy::PolicySet};

    struct Facts {
        default_lq: bool,
    }

    impl ClusterFacts for Facts {
        fn namespace_matches(&self, ns: &str, sel: &LabelSelector) -> bool {
            NoCluster.namespace_matches(ns, sel)
        }
        fn default_local_queue_exists(&self, _: &str) -> bool {
            self.default_lq
        }
        fn default_priority_class_exists(&self) -> bool {
            false
        }
    }

    fn run(
        kind: &str,
        hook: &str,
        obj: Value,
        old: Option<Value>,
        facts: &dyn ClusterFacts,
    ) -> Decision {
        let policies = PolicySet::embedded().unwrap();
        let policy = policies.find("apps", "v1", kind).unwrap().clone();
        let owner = policy.pod_owner.clone().unwrap();
        let s = Settings {
            manage_jobs_without_queue_name: false,
            managed_namespaces: LabelSelector::excluding_namespaces(&[
                "kube-system",
                "batchgate-system",
            ]),
        };
        let ctx = Context {
            settings: &s,
            facts,
            policies: &policies,
        };
        let req = Request {
            operation: if old.is_some() {
                Operation::Update
            } else {
                Operation::Create
            },
            namespace: "default",
            object: Some(&obj),
            old_object: old.as_ref(),
        };
        if hook == "mutate" {
            mutate(&policy, &owner, &req, &ctx)
        } else {
            validate(&policy, &owner, &req, &ctx)
        }
    }

    /// testingdeployment.MakeDeployment("test-pod", "default").
    fn deployment(labels: Value, template_labels: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "test-pod", "namespace": "default", "labels": labels},
               "spec": {"replicas": 1,
                        "selector": {"matchLabels": {"app": "test-pod"}},
                        "template": {"metadata": {"labels": template_labels},
                                     "spec": {"containers": [{"name": "c", "image": "pause"}]}}}})
    }

    fn mutated(obj: &Value, d: &Decision) -> Value {
        crate::jobs::workload::apply(obj, &d.patch).unwrap()
    }

    fn denial(d: &Decision) -> String {
        match &d.verdict {
            Verdict::Deny(m) => m.clone(),
            v => panic!("not denied: {v:?}"),
        }
    }

    const Q: &str = "kueue.x-k8s.io/queue-name";
    const PC: &str = "kueue.x-k8s.io/priority-class";

    /// Kueue v0.19.2 deployment_webhook_test.go TestDefault, every case.
    #[test]
    fn deployment_defaulting_follows_kueue() {
        let d = |l: Value, t: Value| deployment(l, t);
        let marked = |queue: &str, extra: Value| {
            let mut t = json!({"app": "x", "kueue.x-k8s.io/managed": "true", Q: queue});
            for (k, v) in extra.as_object().unwrap() {
                t[k] = v.clone();
            }
            t
        };
        let no = &Facts { default_lq: false };
        let yes = &Facts { default_lq: true };
        // (case, object, facts, want template labels or None for untouched, want object labels)
        type Case<'a> = (&'a str, Value, &'a dyn ClusterFacts, Option<Value>, Value);
        let cases: Vec<Case> = vec![
            (
                "deployment without queue",
                d(json!({}), json!({"app": "x"})),
                no,
                None,
                json!({}),
            ),
            (
                "deployment with queue",
                d(json!({Q: "test-queue"}), json!({"app": "x"})),
                no,
                Some(marked("test-queue", json!({}))),
                json!({Q: "test-queue"}),
            ),
            (
                "deployment with queue and pod template spec queue",
                d(
                    json!({Q: "new-test-queue"}),
                    json!({"app": "x", Q: "test-queue"}),
                ),
                no,
                Some(marked("new-test-queue", json!({}))),
                json!({Q: "new-test-queue"}),
            ),
            (
                "deployment without queue with pod template spec queue",
                d(json!({}), json!({"app": "x", Q: "test-queue"})),
                no,
                None,
                json!({}),
            ),
            (
                "default lq is created, job doesn't have queue label",
                d(json!({}), json!({"app": "x"})),
                yes,
                Some(marked("default", json!({}))),
                json!({Q: "default"}),
            ),
            (
                "default lq is created, job has queue label",
                d(json!({Q: "test-queue"}), json!({"app": "x"})),
                yes,
                Some(marked("test-queue", json!({}))),
                json!({Q: "test-queue"}),
            ),
            (
                "deployment with queue and priority class",
                d(json!({Q: "test-queue", PC: "test"}), json!({"app": "x"})),
                no,
                Some(marked("test-queue", json!({PC: "test"}))),
                json!({Q: "test-queue", PC: "test"}),
            ),
            (
                "deployment with queue, priority class and pod template spec queue, priority class",
                d(
                    json!({Q: "new-test-queue", PC: "new-test"}),
                    json!({"app": "x", Q: "test-queue", PC: "test"}),
                ),
                no,
                Some(marked("new-test-queue", json!({PC: "new-test"}))),
                json!({Q: "new-test-queue", PC: "new-test"}),
            ),
        ];
        for (name, obj, facts, want_template, want_labels) in cases {
            let out = mutated(&obj, &run("Deployment", "mutate", obj.clone(), None, facts));
            assert_eq!(out["metadata"]["labels"], want_labels, "{name}");
            let t = &out["spec"]["template"]["metadata"];
            match want_template {
                None => assert_eq!(t, &obj["spec"]["template"]["metadata"], "{name}"),
                Some(l) => {
                    assert_eq!(t["labels"], l, "{name}");
                    assert_eq!(
                        t["annotations"]["kueue.x-k8s.io/pod-suspending-parent"], "deployment",
                        "{name}"
                    );
                }
            }
            // Lossless: the rest of the spec is as it was.
            assert_eq!(
                out["spec"]["template"]["spec"],
                obj["spec"]["template"]["spec"]
            );
            assert_eq!(out["spec"]["selector"], obj["spec"]["selector"]);
        }
    }

    /// Kueue v0.19.2 deployment_webhook_test.go TestValidateCreate and
    /// TestValidateUpdate (the queue-name and priority-class cases).
    #[test]
    fn deployment_validation_speaks_kueues_words() {
        let no = &NoCluster;
        let ok = |d: Decision| assert_eq!(d.verdict, Verdict::Allow);
        ok(run(
            "Deployment",
            "validate",
            deployment(json!({}), json!({})),
            None,
            no,
        ));
        ok(run(
            "Deployment",
            "validate",
            deployment(json!({Q: "test-queue"}), json!({})),
            None,
            no,
        ));
        assert_eq!(
            denial(&run("Deployment", "validate", deployment(json!({Q: "test/queue"}), json!({})), None, no)),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"test/queue\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        let mut elastic = deployment(json!({}), json!({}));
        elastic["metadata"]["annotations"] = json!({"kueue.x-k8s.io/elastic-job": "true"});
        assert_eq!(
            denial(&run("Deployment", "validate", elastic, None, no)),
            "metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: elastic job is not supported for \"apps/v1, Kind=Deployment\""
        );
        let ready = |labels: Value, n: i64| {
            let mut d = deployment(labels, json!({}));
            d["status"] = json!({"readyReplicas": n});
            d
        };
        let upd = |old: Value, new: Value| run("Deployment", "validate", new, Some(old), no);
        // "without queue (no changes)", "with queue (no changes)", "with queue".
        ok(upd(ready(json!({}), 0), ready(json!({}), 0)));
        ok(upd(
            ready(json!({Q: "test-queue"}), 0),
            ready(json!({Q: "test-queue"}), 0),
        ));
        ok(upd(ready(json!({}), 0), ready(json!({Q: "test-queue"}), 0)));
        // "without queue": the queue name removed.
        assert_eq!(
            denial(&upd(
                ready(json!({Q: "test-queue"}), 0),
                ready(json!({}), 0)
            )),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": field is immutable"
        );
        // "with queue (ready replicas)".
        assert_eq!(
            denial(&upd(ready(json!({Q: "test-queue"}), 1), ready(json!({Q: "test-queue-new"}), 1))),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"test-queue-new\": field is immutable"
        );
        // No pod ready: the queue may move.
        ok(upd(
            ready(json!({Q: "test-queue"}), 0),
            ready(json!({Q: "test-queue-new"}), 0),
        ));
        // Priority class: "update ... when suspended", "set ... when replicas ready", ...
        ok(upd(
            ready(json!({Q: "q", PC: "test"}), 0),
            ready(json!({Q: "q", PC: "new-test"}), 0),
        ));
        assert_eq!(
            denial(&upd(ready(json!({Q: "q"}), 1), ready(json!({Q: "q", PC: "test"}), 1))),
            "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"test\": WorkloadPriorityClass cannot be added to a non-suspended workload"
        );
        ok(upd(
            ready(json!({Q: "q", PC: "test"}), 1),
            ready(json!({Q: "q", PC: "new-test"}), 1),
        ));
        assert_eq!(
            denial(&upd(ready(json!({Q: "q", PC: "test"}), 1), ready(json!({Q: "q"}), 1))),
            "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"\": WorkloadPriorityClass cannot be removed from a workload"
        );
        ok(upd(
            ready(json!({Q: "q"}), 0),
            ready(json!({Q: "q", PC: "test"}), 0),
        ));
        assert_eq!(
            denial(&upd(ready(json!({Q: "q", PC: "test"}), 0), ready(json!({Q: "q"}), 0))),
            "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"\": WorkloadPriorityClass cannot be removed from a workload"
        );
        // "reject adding AdmissionGatedBy annotation after Deployment creation".
        let mut gated = ready(json!({Q: "queue"}), 0);
        gated["metadata"]["annotations"] =
            json!({"kueue.x-k8s.io/admission-gated-by": "example.com/gate"});
        assert_eq!(
            denial(&upd(ready(json!({Q: "queue"}), 0), gated)),
            "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: cannot add admission gate after creation"
        );
    }

    fn sts(labels: Value, replicas: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": "test-sts", "namespace": "default", "labels": labels},
               "spec": {"replicas": replicas,
                        "selector": {"matchLabels": {"app": "test-sts"}},
                        "template": {"metadata": {"labels": {"app": "test-sts"}},
                                     "spec": {"containers": [{"name": "c", "image": "pause"}]}}}})
    }

    /// Kueue v0.19.2 statefulset_webhook_test.go TestDefault: only the
    /// parent annotation on the template (the pods are marked into the
    /// group by the reconciler); a StatefulSet of another integration (a
    /// LeaderWorkerSet's) is left alone.
    #[test]
    fn statefulset_defaulting_follows_kueue() {
        let no = &NoCluster;
        let s = sts(json!({Q: "test-queue"}), 3);
        let out = mutated(&s, &run("StatefulSet", "mutate", s.clone(), None, no));
        assert_eq!(
            out["spec"]["template"]["metadata"],
            json!({"labels": {"app": "test-sts"},
                   "annotations": {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}})
        );
        let bare = sts(json!({}), 3);
        assert!(run("StatefulSet", "mutate", bare, None, no)
            .patch
            .is_empty());
        let mut lws = sts(json!({Q: "test-queue"}), 3);
        lws["spec"]["template"]["metadata"]["annotations"] =
            json!({"kueue.x-k8s.io/pod-suspending-parent": "leaderworkerset"});
        assert!(run("StatefulSet", "mutate", lws.clone(), None, no)
            .patch
            .is_empty());
        let mut bad = lws.clone();
        bad["metadata"]["labels"][Q] = json!("bad/queue");
        assert_eq!(
            run("StatefulSet", "validate", bad, None, no).verdict,
            Verdict::Allow
        );
    }

    /// Kueue v0.19.2 statefulset_webhook_test.go TestValidateUpdate: the
    /// replicas change only to or from zero while queued.
    #[test]
    fn statefulset_replicas_change_only_through_zero() {
        let no = &NoCluster;
        let upd = |old: Value, new: Value| run("StatefulSet", "validate", new, Some(old), no);
        let q = json!({Q: "test-queue"});
        assert_eq!(
            denial(&upd(sts(q.clone(), 3), sts(q.clone(), 4))),
            "spec.replicas: Invalid value: 4: field is immutable"
        );
        assert_eq!(
            upd(sts(q.clone(), 3), sts(q.clone(), 0)).verdict,
            Verdict::Allow
        );
        assert_eq!(
            upd(sts(q.clone(), 0), sts(q.clone(), 3)).verdict,
            Verdict::Allow
        );
        let mut terminating = sts(q.clone(), 3);
        terminating["status"] = json!({"replicas": 1});
        assert_eq!(
            denial(&upd(sts(q.clone(), 0), terminating)),
            "spec.replicas: Forbidden: scaling down is still in progress"
        );
        // Not queued: free.
        assert_eq!(
            upd(sts(json!({}), 3), sts(json!({}), 4)).verdict,
            Verdict::Allow
        );
    }
}
