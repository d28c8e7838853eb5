//! Kinds held by a scheduling gate (a policy with `gate`: Kueue's pod
//! integration). Defaulting on /mutate, as Kueue's pod webhook `Default`:
//! only in namespaces `managedJobsNamespaceSelector` selects (for pods the
//! selector applies even with a queue name), not under an integrated
//! owner; default LocalQueue and priority class; then, for a queued pod
//! (or every pod under `manageJobsWithoutQueueName`), the managed label,
//! the finalizer, the scheduling gate and the role-hash annotation.
//! Validation on /validate with Kueue's messages: the job rules
//! (`ValidateJobOnCreate`/`ValidateJobOnUpdate`), then the managed label,
//! the group metadata, the prebuilt Workload against the group, and on
//! update the retriable-in-group switch and the group name.

use crate::vocabulary::pointer::At;
use serde_json::{json, Value};

use super::{
    field::{self, annotation_path, label_path, BadValue, FieldError},
    object::{JobObject, DEFAULT_NAME},
    validation::{self, FIELD_IMMUTABLE},
    Context, Decision, Operation, Request, Verdict,
};
use crate::jobs::{
    pod::{group_total_count, role_hash},
    policy::{Gate, Policy},
};
use crate::vocabulary::{
    keys::{
        MANAGED_VALUE, POD_GROUP_POD_INDEX_LABEL, POD_INDEX_LABEL_ANNOTATION, PRIORITY_CLASS_LABEL,
        QUEUE_NAME_LABEL, RETRIABLE_IN_GROUP_ANNOTATION, ROLE_HASH_ANNOTATION,
        SUSPENDED_BY_PARENT_ANNOTATION, TOPOLOGY_GATE,
    },
    patch::{self, PatchOp},
};

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

/// The mutating webhook for a gated kind (CREATE only). `role`: the
/// object's role when it was hashed as the review was read (its fields are
/// then not in the object); else it is hashed here.
pub fn mutate(
    policy: &Policy,
    gate: &Gate,
    req: &Request<'_>,
    role: Option<&str>,
    ctx: &Context<'_>,
) -> Decision {
    if req.operation != Operation::Create {
        return Decision::allow();
    }
    let pod = match read(policy, req.object, "object") {
        Ok(p) => p,
        Err(d) => return d,
    };
    let raw = pod.raw;
    let by_parent = pod.annotation(SUSPENDED_BY_PARENT_ANNOTATION).is_some();
    let mut ops = Vec::new();
    let mut hold = by_parent;
    if gate.parents_only && !by_parent {
        // Enabled only for the pods of a kind queued through its pods.
        return Decision::allow();
    }
    if !by_parent {
        if !ctx
            .facts
            .namespace_matches(req.namespace, &ctx.settings.managed_namespaces)
        {
            return Decision::allow();
        }
        // Kueue's FindAncestorJobManagedByKueue: a pod of an integrated
        // kind's object is that object's to queue.
        if pod
            .controller()
            .is_some_and(|o| ctx.policies.is_integrated(o.api_version, o.kind))
        {
            return Decision::allow();
        }
        let mut queue = pod.queue_name().is_some();
        if !queue && ctx.facts.default_local_queue_exists(req.namespace) {
            patch::set_label(raw, QUEUE_NAME_LABEL, DEFAULT_NAME, &mut ops);
            queue = true;
        }
        if pod.label(PRIORITY_CLASS_LABEL).is_none() && ctx.facts.default_priority_class_exists() {
            patch::set_label(raw, PRIORITY_CLASS_LABEL, DEFAULT_NAME, &mut ops);
        }
        hold = queue || ctx.settings.manage_jobs_without_queue_name;
        if hold && pod.label(&gate.managed_label) != Some(MANAGED_VALUE) {
            patch::set_label(raw, &gate.managed_label, MANAGED_VALUE, &mut ops);
        }
    }
    if hold {
        if !by_parent {
            append_named(
                raw,
                &["metadata", "finalizers"],
                json!(gate.finalizer),
                |v| v.as_str() == Some(&gate.finalizer),
                &mut ops,
            );
        }
        // The topology gate too (Kueue's TAS is on by default): it goes on
        // start unless the pod set is placed by topology.
        append_gates(
            raw,
            &[gate.scheduling_gate.as_str(), TOPOLOGY_GATE],
            &mut ops,
        );
        // Kueue copies the rank the group names into its own label, which
        // the topology ungater reads.
        if let Some(key) = pod.annotation(POD_INDEX_LABEL_ANNOTATION) {
            let rank = pod.label(key).unwrap_or_default().to_string();
            patch::set_label(raw, POD_GROUP_POD_INDEX_LABEL, &rank, &mut ops);
        }
        // Kueue's `addRoleHash` sets it whatever the pod brought: a role is
        // what the pod is, not what it says.
        let hashed;
        let role = match role {
            Some(r) => r,
            None => {
                hashed = role_hash(raw);
                &hashed
            }
        };
        patch::set_annotation(raw, ROLE_HASH_ANNOTATION, role, &mut ops);
    }
    Decision {
        patch: ops,
        ..Decision::allow()
    }
}

/// Adds the named scheduling gates the pod lacks, in order, in one write.
fn append_gates(obj: &Value, names: &[&str], ops: &mut Vec<PatchOp>) {
    let current = obj.at("/spec/schedulingGates");
    if let Some(list) = crate::jobs::workload::with_gates(current, names) {
        let _ = patch::set_at(obj, &["spec", "schedulingGates"], Value::Array(list), ops);
    }
}

/// Adds `item` to the list at `at` unless one already matches.
fn append_named(
    obj: &Value,
    at: &[&str],
    item: Value,
    matches: impl Fn(&Value) -> bool,
    ops: &mut Vec<PatchOp>,
) {
    let found = at.iter().try_fold(obj, |v, k| v.get(k));
    let mut list = match found {
        Some(Value::Array(a)) if a.iter().any(matches) => return,
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    list.push(item);
    let _ = patch::set_at(obj, at, Value::Array(list), ops);
}

/// The validating webhook for a gated kind; the warning Kueue gives a
/// managed pod of a managed owner.
pub fn validate(policy: &Policy, gate: &Gate, req: &Request<'_>, ctx: &Context<'_>) -> Decision {
    let (errs, new) = match req.operation {
        Operation::Create => {
            let new = match read(policy, req.object, "object") {
                Ok(p) => p,
                Err(d) => return d,
            };
            let mut errs = validation::generic_create(policy, &new);
            errs.extend(common(policy, gate, &new));
            (errs, new)
        }
        Operation::Update => {
            let (new, old) = match (
                read(policy, req.object, "object"),
                read(policy, req.old_object, "oldObject"),
            ) {
                (Ok(n), Ok(o)) => (n, o),
                (Err(d), _) | (_, Err(d)) => return d,
            };
            let mut errs = validation::generic_update(policy, &old, &new, req.namespace, ctx);
            errs.extend(common(policy, gate, &new));
            errs.extend(update_rules(gate, &old, &new));
            (errs, new)
        }
        Operation::Delete | Operation::Connect => return Decision::allow(),
    };
    let mut warnings = Vec::new();
    let by_parent = new.annotation(SUSPENDED_BY_PARENT_ANNOTATION).is_some();
    if (req.operation == Operation::Create || !by_parent)
        && new.label(&gate.managed_label) == Some(MANAGED_VALUE)
        && new
            .controller()
            .is_some_and(|o| ctx.policies.is_integrated(o.api_version, o.kind))
    {
        warnings.push(format!(
            "pod owner is managed by kueue, label '{}={MANAGED_VALUE}' might lead to unexpected behaviour",
            gate.managed_label
        ));
    }
    let verdict = if errs.is_empty() {
        Verdict::Allow
    } else {
        Verdict::Deny(field::aggregate(&errs))
    };
    Decision {
        verdict,
        patch: Vec::new(),
        warnings,
    }
}

/// Kueue's `validateCommon` (but the topology request: not checked for
/// pods yet).
fn common(policy: &Policy, gate: &Gate, pod: &JobObject<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(v) = pod.label(&gate.managed_label) {
        if v != MANAGED_VALUE {
            errs.push(FieldError::forbidden(
                label_path(&gate.managed_label),
                format!("managed label value can only be '{MANAGED_VALUE}'"),
            ));
            return errs;
        }
    }
    if let Some(rule) = &gate.group {
        // GetPodGroupName: the annotation of the same key first (gate
        // WorkloadIdentifierAnnotations, on by default), then the label.
        let by_annotation = pod.annotation(&rule.name_label).filter(|g| !g.is_empty());
        let detail = format!(
            "both the '{}' annotation and the '{}' {} should be set",
            rule.total_count_annotation,
            rule.name_label,
            if by_annotation.is_some() {
                "annotation"
            } else {
                "label"
            }
        );
        let total = pod.annotation(&rule.total_count_annotation);
        let group = by_annotation.or_else(|| pod.label(&rule.name_label).filter(|g| !g.is_empty()));
        let mut metadata_ok = true;
        match (group, total) {
            (None, Some(_)) => {
                errs.push(FieldError {
                    kind: field::ErrorType::Required,
                    ..FieldError::forbidden(label_path(&rule.name_label), detail.clone())
                });
                metadata_ok = false;
            }
            (Some(g), gtc) => {
                if by_annotation.is_some() {
                    if let Err(msg) = validation::dns1123_subdomain(g) {
                        errs.push(FieldError::invalid(
                            annotation_path(&rule.name_label),
                            BadValue::Str(g.to_string()),
                            msg,
                        ));
                    }
                } else {
                    errs.extend(validation::dns_subdomain_label(pod, &rule.name_label));
                }
                if gtc.is_none() {
                    errs.push(FieldError {
                        kind: field::ErrorType::Required,
                        ..FieldError::forbidden(
                            annotation_path(&rule.total_count_annotation),
                            detail.clone(),
                        )
                    });
                    metadata_ok = false;
                }
            }
            (None, None) => {}
        }
        if metadata_ok {
            if let (Some(v), Err(e)) = (total, group_total_count(rule, pod.raw)) {
                errs.push(FieldError::invalid(
                    annotation_path(&rule.total_count_annotation),
                    BadValue::Str(v.to_string()),
                    e,
                ));
            }
        }
        let prebuilt = validation::prebuilt_name(pod);
        if let Some(g) = group {
            if !prebuilt.is_empty() && prebuilt != g {
                errs.push(FieldError::invalid(
                    validation::prebuilt_path(pod),
                    BadValue::Str(prebuilt.to_string()),
                    "prebuilt workload and pod group should be equal",
                ));
            }
        }
    }
    let _ = policy;
    errs
}

/// The update rules of Kueue's pod webhook: an unretriable group stays
/// so; the group name is immutable once set.
fn update_rules(gate: &Gate, old: &JobObject<'_>, new: &JobObject<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(rule) = &gate.group else {
        return errs;
    };
    let unretriable =
        |p: &JobObject<'_>| p.annotation(RETRIABLE_IN_GROUP_ANNOTATION) == Some("false");
    let new_group = crate::jobs::pod::group_name(Some(rule), new.raw).unwrap_or("");
    if !new_group.is_empty() && unretriable(old) && !unretriable(new) {
        errs.push(FieldError::forbidden(
            annotation_path(RETRIABLE_IN_GROUP_ANNOTATION),
            "unretriable pod group can't be converted to retriable",
        ));
    }
    let old_group = crate::jobs::pod::group_name(Some(rule), old.raw).unwrap_or("");
    if !old_group.is_empty() && new_group != old_group {
        let by_annotation = new
            .annotation(&rule.name_label)
            .is_some_and(|g| !g.is_empty());
        errs.push(FieldError::invalid(
            if by_annotation {
                annotation_path(&rule.name_label)
            } else {
                label_path(&rule.name_label)
            },
            BadValue::Str(new_group.to_string()),
            FIELD_IMMUTABLE,
        ));
    }
    errs
}

/// The router's family for a gated kind: defaulting on /mutate; on
/// /validate the rules, then (when allowed) the entitlement checks a job
/// kind gets.
pub struct Gated {
    pub policy: std::sync::Arc<Policy>,
    pub gate: Gate,
    pub label: &'static str,
}

impl super::family::Family for Gated {
    fn label(&self) -> &'static str {
        self.label
    }
    fn reads(&self) -> super::family::Reads {
        super::family::Reads::Gated
    }
    fn decide(
        &self,
        review: &super::family::Review<'_>,
        ctx: &Context<'_>,
    ) -> super::family::Decided {
        use super::family::{Decided, Hook};
        let req = review.core();
        let decision = match review.hook {
            Hook::Mutate => mutate(
                &self.policy,
                &self.gate,
                &req,
                review.request.role_hash.as_deref(),
                ctx,
            ),
            Hook::Validate => validate(&self.policy, &self.gate, &req, ctx),
        };
        Decided::job(review, ctx, &self.policy.target.kind, decision)
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
        hook: &str,
        obj: Value,
        old: Option<Value>,
        ns: &str,
        manage_all: bool,
        facts: &dyn ClusterFacts,
    ) -> Decision {
        run_role(hook, obj, old, ns, manage_all, facts, None)
    }

    /// [`run`], with the role hashed as the review was read.
    fn run_role(
        hook: &str,
        obj: Value,
        old: Option<Value>,
        ns: &str,
        manage_all: bool,
        facts: &dyn ClusterFacts,
        role: Option<&str>,
    ) -> Decision {
        let policies = PolicySet::embedded().unwrap();
        let policy = policies.find("", "v1", "Pod").unwrap().clone();
        let gate = policy.gate.clone().unwrap();
        let s = Settings {
            manage_jobs_without_queue_name: manage_all,
            managed_namespaces: LabelSelector::excluding_namespaces(&[
                "kube-system",
                "batchgate-system",
            ]),
        };
        let ctx = Context {
            settings: &s,
            facts,
            policies: &policies,
            lookups: &crate::admission::Read::default(),
        };
        let req = Request {
            operation: if old.is_some() {
                Operation::Update
            } else {
                Operation::Create
            },
            namespace: ns,
            object: Some(&obj),
            old_object: old.as_ref(),
        };
        if hook == "mutate" {
            mutate(&policy, &gate, &req, role, &ctx)
        } else {
            validate(&policy, &gate, &req, &ctx)
        }
    }

    fn pod(labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "labels": labels},
               "spec": {"containers": [{"name": "c", "image": "i",
                                        "resources": {"requests": {"cpu": "1"}}}],
                        "priority": 0}})
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

    /// Kueue v0.19.2 pod_webhook_test.go TestDefault, "pod with TAS and
    /// PodGroupPodIndexLabelAnnotation": the rank the annotation names is
    /// copied into Kueue's own label, and both gates are added.
    #[test]
    fn a_queued_pods_named_rank_is_copied_into_kueues_label() {
        let mut p = pod(json!({"kueue.x-k8s.io/queue-name": "lq", "test-label": "test-value"}));
        p["metadata"]["annotations"] = json!({
            "kueue.x-k8s.io/pod-group-pod-index-label": "test-label",
            "kueue.x-k8s.io/podset-required-topology": "block"});
        let d = run("mutate", p.clone(), None, "team-a", false, &NoCluster);
        let out = mutated(&p, &d);
        assert_eq!(
            out["metadata"]["labels"]["kueue.x-k8s.io/pod-group-pod-index"],
            "test-value"
        );
        assert_eq!(
            out["spec"]["schedulingGates"],
            json!([{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}])
        );
    }

    /// Kueue v0.19.2 pod_webhook_test.go TestDefault: a queued pod gets
    /// the managed label, the finalizer, the gates and its role hash.
    #[test]
    fn a_queued_pod_is_gated_labelled_and_held() {
        let p = pod(json!({"kueue.x-k8s.io/queue-name": "lq"}));
        let d = run("mutate", p.clone(), None, "team-a", false, &NoCluster);
        let out = mutated(&p, &d);
        assert_eq!(out["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
        assert_eq!(
            out["metadata"]["finalizers"],
            json!(["kueue.x-k8s.io/managed"])
        );
        // The topology gate too: Kueue's TAS is on by default.
        assert_eq!(
            out["spec"]["schedulingGates"],
            json!([{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}])
        );
        assert_eq!(
            out["metadata"]["annotations"][ROLE_HASH_ANNOTATION],
            role_hash(&p)
        );
        // Lossless: nothing else moved.
        assert_eq!(out["spec"]["containers"], p["spec"]["containers"]);
        // Applying again adds nothing.
        let again = run("mutate", out.clone(), None, "team-a", false, &NoCluster);
        assert!(again.patch.is_empty(), "{:?}", again.patch);
        // A role hash the pod brought is replaced by its own, as Kueue's
        // webhook replaces it.
        let mut claimed = out.clone();
        claimed["metadata"]["annotations"][ROLE_HASH_ANNOTATION] = json!("00000000");
        let d = run("mutate", claimed.clone(), None, "team-a", false, &NoCluster);
        assert_eq!(
            mutated(&claimed, &d)["metadata"]["annotations"][ROLE_HASH_ANNOTATION],
            role_hash(&p)
        );
    }

    #[test]
    fn namespace_selection_and_queue_rules_follow_kueue() {
        // For pods the selector applies even with a queue name.
        let p = pod(json!({"kueue.x-k8s.io/queue-name": "lq"}));
        assert!(
            run("mutate", p.clone(), None, "kube-system", false, &NoCluster)
                .patch
                .is_empty()
        );
        // No queue: left alone, unless manageJobsWithoutQueueName.
        let bare = pod(json!({}));
        assert!(
            run("mutate", bare.clone(), None, "team-a", false, &NoCluster)
                .patch
                .is_empty()
        );
        let out = mutated(
            &bare,
            &run("mutate", bare.clone(), None, "team-a", true, &NoCluster),
        );
        assert_eq!(out["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
        // A default LocalQueue is named.
        let out = mutated(
            &bare,
            &run(
                "mutate",
                bare.clone(),
                None,
                "team-a",
                false,
                &Facts { default_lq: true },
            ),
        );
        assert_eq!(
            out["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
            "default"
        );
        assert_eq!(
            out["spec"]["schedulingGates"][0]["name"],
            "kueue.x-k8s.io/admission"
        );
        // A Job's pod is the Job's to queue.
        let mut owned = p.clone();
        owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
            "name": "j", "uid": "u", "controller": true}]);
        assert!(run("mutate", owned, None, "team-a", true, &NoCluster)
            .patch
            .is_empty());
        // Gated by a parent: gated, no finalizer of its own.
        let mut child = pod(json!({}));
        child["metadata"]["annotations"] = json!({SUSPENDED_BY_PARENT_ANNOTATION: "deployment"});
        let out = mutated(
            &child,
            &run(
                "mutate",
                child.clone(),
                None,
                "kube-system",
                false,
                &NoCluster,
            ),
        );
        assert_eq!(
            out["spec"]["schedulingGates"][0]["name"],
            "kueue.x-k8s.io/admission"
        );
        assert!(out["metadata"].get("finalizers").is_none());
    }

    /// Kueue v0.19.2 pod_webhook_test.go TestValidateCreate/Update messages.
    #[test]
    fn validation_speaks_kueues_words() {
        let bad = pod(json!({"kueue.x-k8s.io/managed": "false"}));
        assert_eq!(
            denial(&run("validate", bad, None, "ns", false, &NoCluster)),
            "metadata.labels[kueue.x-k8s.io/managed]: Forbidden: managed label value can only be 'true'"
        );
        let mut count_only = pod(json!({}));
        count_only["metadata"]["annotations"] =
            json!({"kueue.x-k8s.io/pod-group-total-count": "2"});
        assert_eq!(
            denial(&run("validate", count_only, None, "ns", false, &NoCluster)),
            "metadata.labels[kueue.x-k8s.io/pod-group-name]: Required value: both the 'kueue.x-k8s.io/pod-group-total-count' annotation and the 'kueue.x-k8s.io/pod-group-name' label should be set"
        );
        let name_only = pod(json!({"kueue.x-k8s.io/pod-group-name": "g"}));
        assert_eq!(
            denial(&run("validate", name_only, None, "ns", false, &NoCluster)),
            "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value: both the 'kueue.x-k8s.io/pod-group-total-count' annotation and the 'kueue.x-k8s.io/pod-group-name' label should be set"
        );
        // The group named by annotation (WorkloadIdentifierAnnotations).
        let mut by_annotation = pod(json!({}));
        by_annotation["metadata"]["annotations"] = json!({"kueue.x-k8s.io/pod-group-name": "g"});
        assert_eq!(
            denial(&run("validate", by_annotation.clone(), None, "ns", false, &NoCluster)),
            "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value: both the 'kueue.x-k8s.io/pod-group-total-count' annotation and the 'kueue.x-k8s.io/pod-group-name' annotation should be set"
        );
        by_annotation["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] =
            json!("3");
        assert_eq!(
            run("validate", by_annotation, None, "ns", false, &NoCluster).verdict,
            Verdict::Allow
        );
        let mut zero = pod(json!({"kueue.x-k8s.io/pod-group-name": "g"}));
        zero["metadata"]["annotations"] = json!({"kueue.x-k8s.io/pod-group-total-count": "0"});
        assert_eq!(
            denial(&run("validate", zero, None, "ns", false, &NoCluster)),
            "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Invalid value: \"0\": incorrect annotation value 'kueue.x-k8s.io/pod-group-total-count=0': group total count should be greater than zero"
        );
        let mut prebuilt = pod(json!({"kueue.x-k8s.io/pod-group-name": "g",
                                      "kueue.x-k8s.io/prebuilt-workload-name": "other"}));
        prebuilt["metadata"]["annotations"] = json!({"kueue.x-k8s.io/pod-group-total-count": "2"});
        assert_eq!(
            denial(&run("validate", prebuilt, None, "ns", false, &NoCluster)),
            "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: Invalid value: \"other\": prebuilt workload and pod group should be equal"
        );
        // Updates: the group name is fixed, unretriable stays unretriable.
        let mut old = pod(json!({"kueue.x-k8s.io/pod-group-name": "g"}));
        old["metadata"]["annotations"] = json!({"kueue.x-k8s.io/pod-group-total-count": "2",
                                                 RETRIABLE_IN_GROUP_ANNOTATION: "false"});
        let mut new = old.clone();
        new["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = json!("h");
        new["metadata"]["annotations"][RETRIABLE_IN_GROUP_ANNOTATION] = json!("true");
        assert_eq!(
            denial(&run("validate", new, Some(old.clone()), "ns", false, &NoCluster)),
            "[metadata.annotations[kueue.x-k8s.io/retriable-in-group]: Forbidden: unretriable pod group can't be converted to retriable, metadata.labels[kueue.x-k8s.io/pod-group-name]: Invalid value: \"h\": field is immutable]"
        );
        let ok = run("validate", old.clone(), Some(old), "ns", false, &NoCluster);
        assert_eq!(ok.verdict, Verdict::Allow);
        // A queued pod may not change queues once ungated.
        let mut running = pod(json!({"kueue.x-k8s.io/queue-name": "a"}));
        running["metadata"]["labels"]["kueue.x-k8s.io/managed"] = json!("true");
        let mut moved = running.clone();
        moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("b");
        assert_eq!(
            denial(&run(
                "validate",
                moved.clone(),
                Some(running.clone()),
                "ns",
                false,
                &NoCluster
            )),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"b\": field is immutable"
        );
        // While gated it may.
        let mut gated = running.clone();
        gated["spec"]["schedulingGates"] = json!([{"name": "kueue.x-k8s.io/admission"}]);
        let mut gated_moved = moved;
        gated_moved["spec"]["schedulingGates"] = gated["spec"]["schedulingGates"].clone();
        assert_eq!(
            run(
                "validate",
                gated_moved,
                Some(gated),
                "ns",
                false,
                &NoCluster
            )
            .verdict,
            Verdict::Allow
        );
    }

    #[test]
    fn a_managed_pod_of_a_managed_owner_is_warned_about() {
        let mut p = pod(json!({"kueue.x-k8s.io/managed": "true"}));
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
            "name": "j", "uid": "u", "controller": true}]);
        let d = run("validate", p, None, "ns", false, &NoCluster);
        assert_eq!(d.verdict, Verdict::Allow);
        assert_eq!(
            d.warnings,
            vec!["pod owner is managed by kueue, label 'kueue.x-k8s.io/managed=true' might lead to unexpected behaviour"]
        );
    }

    /// The pod route reads only what its gate looks at
    /// (`Gate::note_interest`), and on /mutate hashes the role as it reads
    /// it (`role::note_interest`): every decision on a pod so read, and its
    /// role hash, is the one on the whole pod.
    #[test]
    fn a_pod_read_as_far_as_its_gate_looks_decides_as_the_whole_pod() {
        let policies = PolicySet::embedded().unwrap();
        let gate = policies
            .find("", "v1", "Pod")
            .unwrap()
            .gate
            .clone()
            .unwrap();
        let mut interest = crate::jobs::policy::Interest::default();
        gate.note_interest(&mut interest);
        let mut hashing = interest.clone();
        crate::jobs::role::note_interest(&mut hashing);
        let read = |obj: &Value, interest| {
            let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                              "request": {"uid": "u", "object": obj}});
            let r = crate::admission::review::parse(&serde_json::to_vec(&body).unwrap(), interest)
                .unwrap();
            (r.object.unwrap(), r.role_hash)
        };
        let sparse = |obj: &Value| read(obj, &interest).0;
        let rich = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "generateName": "p-", "namespace": "team-a",
                "labels": {"kueue.x-k8s.io/queue-name": "lq", "rank": "3",
                           "kueue.x-k8s.io/pod-group-name": "g"},
                "annotations": {"kueue.x-k8s.io/pod-group-total-count": "4",
                                "kueue.x-k8s.io/pod-group-pod-index-label": "rank"},
                "finalizers": ["other.io/keep"],
                "managedFields": [{"manager": "kubectl", "operation": "Update",
                                   "fieldsV1": {"f:spec": {"f:containers": {}}}}]},
            "spec": {
                "schedulingGates": [{"name": "other.io/gate"}],
                "initContainers": [{"name": "init", "image": "busybox", "env": [{"name": "A", "value": "1"}],
                                    "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1"}}}],
                "containers": [{"name": "c", "image": "i", "args": ["--x"],
                                "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
                                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                                "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
                               {"name": "side", "image": "s"}],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "nodeSelector": {"zone": "a"},
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]}}},
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
                "overhead": {"cpu": "10m"}, "priority": 5, "runtimeClassName": "rc",
                "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}},
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
                "serviceAccountName": "default"},
            "status": {"phase": "Pending"}});
        let mut pods = vec![
            rich.clone(),
            pod(json!({"kueue.x-k8s.io/queue-name": "lq"})),
        ];
        let mut ended = rich.clone();
        ended["status"]["phase"] = json!("Succeeded");
        pods.push(ended);
        let mut owned = rich.clone();
        owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
            "name": "j", "uid": "u", "controller": true}]);
        owned["metadata"]["labels"]["kueue.x-k8s.io/managed"] = json!("true");
        pods.push(owned);
        let mut bad = rich.clone();
        bad["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = json!("x");
        bad["metadata"]["labels"]["kueue.x-k8s.io/managed"] = json!("false");
        pods.push(bad);
        let mut unqueued = rich.clone();
        unqueued["metadata"]["labels"] = json!({"app": "a"});
        pods.push(unqueued);
        for p in &pods {
            let s = sparse(p);
            let (h, role) = read(p, &hashing);
            assert!(
                s.to_string().len() < p.to_string().len() && h == s,
                "the premise: a part of the pod is skipped, the role's fields too"
            );
            assert_eq!(
                role.as_deref(),
                Some(crate::jobs::pod::role_hash(p).as_str())
            );
            for manage_all in [false, true] {
                for (hook, s, role) in [("mutate", &h, role.as_deref()), ("validate", &s, None)] {
                    let (a, b) = (
                        run_role(
                            hook,
                            s.clone(),
                            None,
                            "team-a",
                            manage_all,
                            &NoCluster,
                            role,
                        ),
                        run(hook, p.clone(), None, "team-a", manage_all, &NoCluster),
                    );
                    assert_eq!(
                        (&a.verdict, &a.patch, &a.warnings),
                        (&b.verdict, &b.patch, &b.warnings),
                        "{hook} {p}"
                    );
                }
                for old in &pods {
                    let (a, b) = (
                        run(
                            "validate",
                            s.clone(),
                            Some(sparse(old)),
                            "team-a",
                            manage_all,
                            &NoCluster,
                        ),
                        run(
                            "validate",
                            p.clone(),
                            Some(old.clone()),
                            "team-a",
                            manage_all,
                            &NoCluster,
                        ),
                    );
                    assert_eq!(
                        (&a.verdict, &a.warnings),
                        (&b.verdict, &b.warnings),
                        "update {old} -> {p}"
                    );
                }
            }
        }
    }
}
