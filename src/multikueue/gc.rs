//! The manager's garbage collector of a worker, pure: the Workload copies
//! this manager created there (its origin label), whether each one's local
//! twin still lives, and the job kinds in; what to delete out. Kueue
//! v0.19.2's `remoteClient.runGC`: a copy whose local Workload is gone or
//! being deleted goes, and with it the job that owns it there, when that
//! job is this manager's (its origin label) — never anyone else's.

use crate::vocabulary::pointer::At;
use serde_json::Value;

use super::dispatch::{JobKind, ORIGIN_LABEL};
use crate::api::kueue::v1beta2 as api;

/// One orphan on a worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Orphan {
    /// Its place among the copies given.
    pub copy: usize,
    pub namespace: String,
    /// The Workload copy's name.
    pub workload: String,
    /// The job owning it there, when it is this manager's.
    pub job: Option<OrphanJob>,
}

/// A job to delete with its copy.
#[derive(Debug, Clone, PartialEq)]
pub struct OrphanJob {
    /// Its kind's index in the kinds given.
    pub kind: usize,
    pub name: String,
    /// As read: the deletion's precondition.
    pub uid: Option<String>,
}

/// The copies to collect. `local_lives(namespace, name)`: the local
/// Workload exists and is not being deleted; `job(kind, namespace, name)`:
/// the worker's job of that kind, as read.
pub fn orphans<'a>(
    copies: impl IntoIterator<Item = &'a api::Workload>,
    origin: &str,
    kinds: &[JobKind],
    local_lives: impl Fn(&str, &str) -> bool,
    job: impl Fn(usize, &str, &str) -> Option<Value>,
) -> Vec<Orphan> {
    let mut out = Vec::new();
    for (i, copy) in copies.into_iter().enumerate() {
        let labels = copy.metadata.labels.as_ref();
        if labels.and_then(|l| l.get(ORIGIN_LABEL)).map(String::as_str) != Some(origin) {
            continue;
        }
        let namespace = copy.metadata.namespace.clone().unwrap_or_default();
        let name = copy.metadata.name.clone().unwrap_or_default();
        if local_lives(&namespace, &name) {
            continue;
        }
        // Its controller; for a kind whose worker copy owns its Workload
        // without controlling it (a StatefulSet), that owner.
        let refs = || copy.metadata.owner_references.iter().flatten();
        let owner = refs().find(|r| r.controller == Some(true)).or_else(|| {
            refs().find(|r| {
                kinds
                    .iter()
                    .any(|k| k.origin_uid && k.api_version == r.api_version && k.kind == r.kind)
            })
        });
        let job = owner.and_then(|r| {
            let k = kinds
                .iter()
                .position(|k| k.api_version == r.api_version && k.kind == r.kind)?;
            let found = job(k, &namespace, &r.name)?;
            let theirs = found
                .at("/metadata/labels")
                .and_then(|l| l.get(ORIGIN_LABEL))
                .and_then(Value::as_str);
            (theirs == Some(origin)).then(|| OrphanJob {
                kind: k,
                name: r.name.clone(),
                uid: found
                    .at("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(String::from),
            })
        });
        out.push(Orphan {
            copy: i,
            namespace,
            workload: name,
            job,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::multikueue::dispatch::BATCH_JOB;

    fn copy(name: &str, origin: &str, owner: Option<&str>) -> api::Workload {
        let mut wl: api::Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns",
                         "labels": {ORIGIN_LABEL: origin}},
            "spec": {"podSets": []}}))
        .unwrap();
        if let Some(o) = owner {
            wl.metadata.owner_references = Some(vec![serde_json::from_value(json!({
                "apiVersion": "batch/v1", "kind": "Job", "name": o, "uid": "u",
                "controller": true}))
            .unwrap()]);
        }
        wl
    }

    fn job(origin: Option<&str>) -> Value {
        match origin {
            Some(o) => json!({"metadata": {"labels": {ORIGIN_LABEL: o}}}),
            None => json!({"metadata": {}}),
        }
    }

    /// One case: the manager's Workloads, the worker's copies and jobs
    /// (name, origin); the copies and jobs deleted.
    fn gc(
        managers: &[&str],
        copies: &[api::Workload],
        jobs: &[(&str, Option<&str>)],
    ) -> Vec<(String, Option<String>)> {
        let kinds = [BATCH_JOB.clone()];
        orphans(
            copies,
            "multikueue",
            &kinds,
            |_, n| managers.contains(&n),
            |_, _, n| jobs.iter().find(|j| j.0 == n).map(|j| job(j.1)),
        )
        .into_iter()
        .map(|o| (o.workload, o.job.map(|j| j.name)))
        .collect()
    }

    // Kueue v0.19.2 `multikueuecluster_test.go` TestRemoteClientGC.

    #[test]
    fn existing_workers_and_jobs_are_not_deleted() {
        let copies = [copy("wl1", "multikueue", Some("job1"))];
        assert_eq!(gc(&["wl1"], &copies, &[("job1", None)]), []);
    }

    #[test]
    fn missing_worker_workloads_are_deleted() {
        let copies = [copy("wl1", "multikueue", Some("job1"))];
        assert_eq!(gc(&[], &copies, &[]), [("wl1".to_string(), None)]);
    }

    #[test]
    fn missing_worker_workloads_are_deleted_no_job_adapter() {
        let mut c = copy("wl1", "multikueue", Some("job1"));
        c.metadata.owner_references.as_mut().unwrap()[0].kind = "NptAJob".into();
        assert_eq!(
            gc(&[], &[c], &[("job1", Some("multikueue"))]),
            [("wl1".to_string(), None)]
        );
    }

    #[test]
    fn missing_worker_workloads_and_their_owner_jobs_are_deleted() {
        let copies = [copy("wl1", "multikueue", Some("job1"))];
        assert_eq!(
            gc(&[], &copies, &[("job1", Some("multikueue"))]),
            [("wl1".to_string(), Some("job1".to_string()))]
        );
    }

    #[test]
    fn unrelated_workers_and_jobs_are_not_deleted() {
        let copies = [copy("wl1", "other-gc-key", Some("job1"))];
        assert_eq!(gc(&[], &copies, &[("job1", None)]), []);
    }

    /// Not upstream's: a job of the copy's name that is not this manager's
    /// (no origin label: someone's own job) is never deleted, its copy is.
    #[test]
    fn a_job_without_this_managers_origin_is_kept() {
        let copies = [copy("wl1", "multikueue", Some("job1"))];
        assert_eq!(
            gc(&[], &copies, &[("job1", None)]),
            [("wl1".to_string(), None)]
        );
        assert_eq!(
            gc(&[], &copies, &[("job1", Some("another-manager"))]),
            [("wl1".to_string(), None)]
        );
    }
}
