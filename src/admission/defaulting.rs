//! Lossless defaulting, in Kueue's order: default LocalQueue, default
//! WorkloadPriorityClass, suspend, then MultiKueue's `managedBy`. Each step only adds or replaces a
//! field batchgate owns; an object that needs nothing gets no patch.

use serde_json::Value;

use super::{
    object::{JobObject, DEFAULT_NAME},
    Context, Decision, Fetched, ObjectKey, Verdict,
};
use crate::jobs::{
    ancestry::{self, Ancestry, Look, ParentKey},
    policy::Policy,
};
use crate::vocabulary::{
    keys::{
        ELASTIC_JOB_ANNOTATION, ELASTIC_JOB_SCHEDULING_GATE, MULTIKUEUE_CONTROLLER,
        PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL,
    },
    patch,
    pointer::Pointer,
};

pub fn default(
    policy: &Policy,
    job: &JobObject<'_>,
    namespace: &str,
    ctx: &Context<'_>,
) -> Decision {
    // Kueue skips objects being deleted (finalizer removal must never be
    // blocked on queue bookkeeping).
    if job.deleting() {
        return Decision::allow();
    }
    // A child of an integrated kind is governed by its parent's Workload.
    let owned_by_integrated = job
        .controller()
        .is_some_and(|o| ctx.policies.is_integrated(o.api_version, o.kind));
    let managed_namespace = || {
        ctx.facts
            .namespace_matches(namespace, &ctx.settings.managed_namespaces)
    };
    let mut ops = Vec::new();

    let mut queue = job.queue_name();
    if queue.is_none()
        && !owned_by_integrated
        && ctx.facts.default_local_queue_exists(namespace)
        && managed_namespace()
    {
        patch::set_label(job.raw, QUEUE_NAME_LABEL, DEFAULT_NAME, &mut ops);
        queue = Some(DEFAULT_NAME);
    }

    if job.label(PRIORITY_CLASS_LABEL).is_none()
        && !owned_by_integrated
        && ctx.facts.default_priority_class_exists()
    {
        patch::set_label(job.raw, PRIORITY_CLASS_LABEL, DEFAULT_NAME, &mut ops);
    }

    let mut should_suspend = !policy.skips(job.raw)
        && (queue.is_some()
            || (ctx.settings.manage_jobs_without_queue_name && managed_namespace()));
    // A child is left to a queued ancestor (Kueue's
    // `WorkloadShouldBeSuspended`); one whose ancestors are all unqueued
    // is queued on its own. Walked only for a job to be held: an unqueued
    // child is let through whatever its ancestors' reads say.
    if should_suspend && owned_by_integrated {
        match managed_ancestor(job.raw, namespace, ctx) {
            Ok(managed) => should_suspend = !managed,
            Err(message) => {
                return Decision {
                    verdict: Verdict::Deny(message),
                    ..Decision::allow()
                }
            }
        }
    }
    if should_suspend && !job.is_suspended() {
        if let Err(at) = patch::set(job.raw, &policy.suspend, Value::Bool(true), &mut ops) {
            return cannot_hold(policy, &at, &policy.suspend);
        }
    }

    // Kueue's `ApplyDefaultForManagedBy`: a job queued to a MultiKueue
    // ClusterQueue is run by MultiKueue, not by its kind's controller here.
    if let (Some(at), Some(own), Some(q)) =
        (&policy.managed_by, &policy.managed_by_controller, queue)
    {
        let current = at.resolve(job.raw).and_then(Value::as_str);
        if current.is_none_or(|c| c == own) && ctx.facts.multikueue_local_queue(namespace, q) {
            let to = Value::String(MULTIKUEUE_CONTROLLER.into());
            if let Err(bad) = patch::set(job.raw, at, to, &mut ops) {
                return cannot_hold(policy, &bad, at);
            }
        }
    }

    // Kueue's Job and RayCluster defaulters: an elastic job's pods wait
    // behind the elastic-job scheduling gate until a slice admits them.
    if policy.elastic_pods.is_some() && job.annotation(ELASTIC_JOB_ANNOTATION) == Some("true") {
        let gates = Pointer::parse("/spec/schedulingGates").expect("a valid pointer");
        for set in policy.pod_sets(job.raw).unwrap_or_default() {
            let gate = serde_json::json!({ "name": ELASTIC_JOB_SCHEDULING_GATE });
            let _ = patch::add_to_list(job.raw, &set.template.child(&gates), gate, &mut ops);
        }
    }

    // Kueue's TrainJob defaulter adds the patch entry its admissions write
    // to (the trainer's webhook allows runtimePatches to change only while
    // suspended, and the entry's manager key is immutable).
    if let Some(target) = &policy.admission_patch {
        target.on_create(job.raw, &mut ops);
    }

    Decision {
        patch: ops,
        ..Decision::allow()
    }
}

/// Kueue's `FindAncestorJobManagedByKueue` through the webhook's reads: a
/// parent not read yet reads as governing (the review is decided again
/// once it is read).
fn managed_ancestor(job: &Value, namespace: &str, ctx: &Context<'_>) -> Result<bool, String> {
    let mut read = |k: &ParentKey| {
        let key = ObjectKey {
            group: k.group.clone(),
            version: k.version.clone(),
            resource: k.resource.clone(),
            namespace: Some(namespace.to_string()),
            name: k.name.clone(),
        };
        match ctx.lookups.get(&key) {
            Fetched::Found(v) => Look::Found(v.clone()),
            Fetched::Missing => Look::Missing,
            Fetched::Failed(e) => Look::Failed(e.to_string()),
            Fetched::Unknown => Look::NotYet,
        }
    };
    match ancestry::walk(
        ctx.policies,
        ctx.settings.manage_jobs_without_queue_name,
        job,
        &mut read,
    ) {
        Ancestry::Managed | Ancestry::Read(_) => Ok(true),
        Ancestry::TopLevel => Ok(false),
        Ancestry::Refused(m) => Err(m),
    }
}

/// The answer for an object whose `at` cannot hold a field it needs.
fn cannot_hold(policy: &Policy, at: &impl std::fmt::Display, field: &Pointer) -> Decision {
    Decision {
        verdict: Verdict::Malformed(format!(
            "cannot decode {}: {at}: must be an object to hold {}",
            policy.target,
            field.field_path()
        )),
        ..Decision::allow()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::*;
    use crate::api::selector::LabelSelector;

    struct Facts {
        default_lq: bool,
        default_wpc: bool,
    }

    impl ClusterFacts for Facts {
        fn namespace_matches(&self, ns: &str, sel: &LabelSelector) -> bool {
            NoCluster.namespace_matches(ns, sel)
        }
        fn default_local_queue_exists(&self, _: &str) -> bool {
            self.default_lq
        }
        fn default_priority_class_exists(&self) -> bool {
            self.default_wpc
        }
    }

    /// The LocalQueue `default/local-queue` points at a ClusterQueue with a
    /// MultiKueue admission check (as the cache answers from the
    /// LocalQueue, ClusterQueue and AdmissionCheck it watches).
    struct MultiKueue;

    impl ClusterFacts for MultiKueue {
        fn namespace_matches(&self, ns: &str, sel: &LabelSelector) -> bool {
            NoCluster.namespace_matches(ns, sel)
        }
        fn default_local_queue_exists(&self, _: &str) -> bool {
            false
        }
        fn default_priority_class_exists(&self) -> bool {
            false
        }
        fn multikueue_local_queue(&self, ns: &str, lq: &str) -> bool {
            (ns, lq) == ("default", "local-queue")
        }
    }

    const MANAGED_BY: &str = "/spec/managedBy";

    /// Kueue v0.19.2 `job_webhook_test.go` TestDefault "managed by is
    /// defaulted: queue label was set" (and the same with the Job's own
    /// controller named, which `CanDefaultManagedBy` also hands over).
    #[test]
    fn managed_by_is_defaulted_queue_label_was_set() {
        let mut job = queued("local-queue");
        job["spec"]["suspend"] = json!(false);
        let d = run(job.clone(), "default", false, &MultiKueue);
        assert_eq!(
            paths(&d),
            vec![
                ("/spec/suspend".into(), json!(true)),
                (MANAGED_BY.into(), json!("kueue.x-k8s.io/multikueue")),
            ]
        );
        job["spec"]["managedBy"] = json!("kubernetes.io/job-controller");
        let d = run(job, "default", false, &MultiKueue);
        assert_eq!(
            paths(&d)[1],
            (MANAGED_BY.into(), json!("kueue.x-k8s.io/multikueue"))
        );
    }

    /// TestDefault "no change in managed by: user specified managed by".
    #[test]
    fn no_change_in_managed_by_user_specified_managed_by() {
        let mut job = queued("local-queue");
        job["spec"]["managedBy"] = json!("example.com/foo");
        job["spec"]["suspend"] = json!(false);
        let d = run(job, "default", false, &MultiKueue);
        assert_eq!(paths(&d), vec![("/spec/suspend".into(), json!(true))]);
    }

    /// TestDefault "invalid queue name": a queue that is not MultiKueue's
    /// (here, one the cache does not know) leaves `managedBy` alone.
    #[test]
    fn invalid_queue_name_leaves_managed_by_alone() {
        let mut job = queued("invalid-local-queue");
        job["spec"]["suspend"] = json!(false);
        let d = run(job, "default", false, &MultiKueue);
        assert_eq!(paths(&d), vec![("/spec/suspend".into(), json!(true))]);
        // Nor does a job with no queue at all.
        let mut unqueued = queued("x");
        unqueued["metadata"]["labels"] = json!({});
        assert!(run(unqueued, "default", false, &MultiKueue)
            .patch
            .is_empty());
    }

    fn settings(manage_all: bool) -> Settings {
        Settings {
            manage_jobs_without_queue_name: manage_all,
            managed_namespaces: LabelSelector::excluding_namespaces(&[
                "kube-system",
                "batchgate-system",
            ]),
        }
    }

    fn run(obj: Value, ns: &str, manage_all: bool, facts: &dyn ClusterFacts) -> Decision {
        let policies = PolicySet::embedded().unwrap();
        let policy = policies.find("batch", "v1", "Job").unwrap().clone();
        let s = settings(manage_all);
        let ctx = Context {
            settings: &s,
            facts,
            policies: &policies,
            lookups: &crate::admission::Read::default(),
        };
        let req = Request {
            operation: Operation::Create,
            namespace: ns,
            object: Some(&obj),
            old_object: None,
        };
        mutate(&policy, &req, &ctx)
    }

    fn paths(d: &Decision) -> Vec<(String, Value)> {
        d.patch
            .iter()
            .map(|o| (o.path.clone(), o.value.clone()))
            .collect()
    }

    fn queued(q: &str) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "j", "labels": {"kueue.x-k8s.io/queue-name": q}},
               "spec": {"template": {"spec": {"containers": []}}}})
    }

    #[test]
    fn queued_job_is_suspended() {
        let d = run(queued("user-queue"), "team-a", false, &NoCluster);
        assert_eq!(d.verdict, Verdict::Allow);
        assert_eq!(paths(&d), vec![("/spec/suspend".into(), json!(true))]);
    }

    #[test]
    fn queued_job_is_suspended_even_in_excluded_namespace() {
        // Kueue: a queue-name label is always managed; the selector only
        // modulates manageJobsWithoutQueueName.
        let d = run(queued("q"), "kube-system", false, &NoCluster);
        assert_eq!(paths(&d), vec![("/spec/suspend".into(), json!(true))]);
    }

    #[test]
    fn unqueued_job_gets_no_patch() {
        let mut job = queued("q");
        job["metadata"]["labels"] = json!({});
        let d = run(job, "team-a", false, &NoCluster);
        assert!(d.patch.is_empty());
        assert_eq!(d.verdict, Verdict::Allow);
    }

    #[test]
    fn empty_queue_label_counts_as_none() {
        let d = run(queued(""), "team-a", false, &NoCluster);
        assert!(d.patch.is_empty());
    }

    #[test]
    fn already_suspended_job_gets_no_patch() {
        let mut job = queued("q");
        job["spec"]["suspend"] = json!(true);
        assert!(run(job, "team-a", false, &NoCluster).patch.is_empty());
    }

    #[test]
    fn explicit_suspend_false_is_replaced() {
        let mut job = queued("q");
        job["spec"]["suspend"] = json!(false);
        let d = run(job, "team-a", false, &NoCluster);
        assert_eq!(paths(&d), vec![("/spec/suspend".into(), json!(true))]);
    }

    #[test]
    fn missing_spec_is_created() {
        let job = json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}});
        let d = run(job, "team-a", false, &NoCluster);
        assert_eq!(paths(&d), vec![("/spec".into(), json!({"suspend": true}))]);
    }

    #[test]
    fn manage_without_queue_name_follows_namespace_selector() {
        let mut job = queued("q");
        job["metadata"]["labels"] = json!({});
        let d = run(job.clone(), "team-a", true, &NoCluster);
        assert_eq!(paths(&d), vec![("/spec/suspend".into(), json!(true))]);
        let d = run(job.clone(), "kube-system", true, &NoCluster);
        assert!(d.patch.is_empty());
        let d = run(job, "batchgate-system", true, &NoCluster);
        assert!(d.patch.is_empty());
    }

    #[test]
    fn deleting_objects_are_left_alone() {
        let mut job = queued("q");
        job["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(run(job, "team-a", false, &NoCluster).patch.is_empty());
    }

    #[test]
    fn children_of_integrated_kinds_are_left_alone() {
        let mut job = queued("q");
        job["metadata"]["ownerReferences"] = json!([
            {"apiVersion": "batch/v1", "kind": "Job", "name": "parent", "uid": "u", "controller": true}
        ]);
        assert!(run(job.clone(), "team-a", false, &NoCluster)
            .patch
            .is_empty());
        // An AppWrapper's components are governed by its Workload, even
        // under manageJobsWithoutQueueName.
        let mut wrapped = job.clone();
        wrapped["metadata"]["ownerReferences"] = json!([
            {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
             "name": "aw", "uid": "u", "controller": true}
        ]);
        assert!(run(wrapped.clone(), "team-a", true, &NoCluster)
            .patch
            .is_empty());
        wrapped["metadata"]["labels"] = json!({});
        assert!(run(wrapped, "team-a", true, &NoCluster).patch.is_empty());
        // A CronJob is not an integrated kind: its Jobs are queued as usual.
        job["metadata"]["ownerReferences"][0]["kind"] = json!("CronJob");
        assert_eq!(run(job, "team-a", false, &NoCluster).patch.len(), 1);
    }

    #[test]
    fn default_local_queue_and_priority_class() {
        let mut job = queued("q");
        job["metadata"]["labels"] = json!({"app": "x"});
        let facts = Facts {
            default_lq: true,
            default_wpc: true,
        };
        let d = run(job.clone(), "team-a", false, &facts);
        assert_eq!(
            paths(&d),
            vec![
                (
                    "/metadata/labels/kueue.x-k8s.io~1queue-name".into(),
                    json!("default")
                ),
                (
                    "/metadata/labels/kueue.x-k8s.io~1priority-class".into(),
                    json!("default")
                ),
                ("/spec/suspend".into(), json!(true)),
            ]
        );
        // Not in an unmanaged namespace (Kueue #13374).
        let d = run(job, "kube-system", false, &facts);
        assert_eq!(
            paths(&d),
            vec![(
                "/metadata/labels/kueue.x-k8s.io~1priority-class".into(),
                json!("default")
            )]
        );
    }

    #[test]
    fn stopping_job_is_suspended_again_without_changing_json() {
        let mut job = queued("q");
        job["spec"]["suspend"] = json!(true);
        job["metadata"]["annotations"] = json!({"kueue.x-k8s.io/stopping": "true"});
        assert!(run(job, "team-a", false, &NoCluster).patch.is_empty());
    }

    #[test]
    fn wrong_types_are_reported_with_the_field() {
        let mut job = queued("q");
        job["spec"]["suspend"] = json!("yes");
        let d = run(job, "team-a", false, &NoCluster);
        assert_eq!(
            d.verdict,
            Verdict::Malformed(
                "cannot decode batch/v1, Kind=Job: spec.suspend: must be a boolean, found a string"
                    .into()
            )
        );
        let mut job = queued("q");
        job["metadata"]["labels"]["n"] = json!(3);
        let d = run(job, "team-a", false, &NoCluster);
        assert_eq!(
            d.verdict,
            Verdict::Malformed(
                "cannot decode batch/v1, Kind=Job: metadata.labels[n]: must be a string, found a number".into()
            )
        );
        let d = run(json!("nope"), "team-a", false, &NoCluster);
        assert!(
            matches!(d.verdict, Verdict::Malformed(m) if m.contains("object: must be a JSON object"))
        );
    }
}
