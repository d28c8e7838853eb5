//! The job reconciler's backstop: which queued jobs have gone too long
//! without a Workload. The watches are meant to lose nothing; this is what
//! finds a job if one did (a trigger dropped, an error not retried), so it
//! waits and no job is left suspended for good without a word.

use std::collections::HashSet;

use serde_json::Value;

use crate::jobs::policy::{Policy, PolicySet, Progress};

/// Does `job`, of `policy`'s kind, need a Workload it has not had for
/// `grace_ms`? `owners`: the UIDs that own a Workload now; `now_ms` and
/// the job's `creationTimestamp` in Unix milliseconds.
///
/// The same jobs the reconciler makes a Workload for: governed
/// ([`PolicySet::governs`]), not being deleted, not finished.
pub fn needs_workload(
    policy: &Policy,
    policies: &PolicySet,
    job: &Value,
    owners: &HashSet<&str>,
    now_ms: i64,
    grace_ms: i64,
) -> bool {
    let meta = &job["metadata"];
    let Some(uid) = meta["uid"].as_str() else {
        return false;
    };
    // A job naming a prebuilt Workload waits for someone else to make it.
    let prebuilt = super::machine::subject(policy, policies, job).is_some_and(|s| s.prebuilt);
    if !policies.governs(policy, job)
        || prebuilt
        || owners.contains(uid)
        || !meta["deletionTimestamp"].is_null()
    {
        return false;
    }
    let running = policy
        .status
        .as_ref()
        .is_none_or(|s| s.progress(job) == Progress::Running);
    let created = meta["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
        .map(|t| t.as_millisecond());
    running && created.is_some_and(|c| now_ms - c >= grace_ms)
}

/// Has every watch a job's Workload comes through (the job's own, the
/// Workloads') delivered without a fault for `grace`? `since`: how long
/// each has, `None` for one that never failed. Until then a job without a
/// Workload may be one its reconciler has not caught up with, not one a
/// watch lost: the backstop waits, and a job that was lost is found once
/// the watches have settled.
pub fn watches_settled(
    since: impl IntoIterator<Item = Option<std::time::Duration>>,
    grace: std::time::Duration,
) -> bool {
    since.into_iter().all(|s| s.is_none_or(|d| d >= grace))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::vocabulary::keys::QUEUE_NAME_LABEL;

    const CREATED_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
    const GRACE: i64 = 30_000;

    #[test]
    fn the_backstop_waits_until_every_watch_has_been_quiet_for_the_grace() {
        use std::time::Duration;
        let grace = Duration::from_secs(30);
        let s = Duration::from_secs;
        assert!(watches_settled([None, None], grace), "never failed");
        assert!(watches_settled([Some(s(30)), None], grace));
        assert!(
            !watches_settled([Some(s(29)), None], grace),
            "the Workloads' watch came back late"
        );
        assert!(
            !watches_settled([None, Some(s(1))], grace),
            "the job watch came back late"
        );
    }

    fn policies() -> PolicySet {
        PolicySet::embedded().unwrap()
    }

    fn job() -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u-1",
                         "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {QUEUE_NAME_LABEL: "lq"}},
            "spec": {"suspend": true, "parallelism": 1,
                     "template": {"spec": {"containers": [{"name": "c"}]}}},
        })
    }

    fn needs(job: &Value, owners: &[&str], now_ms: i64) -> bool {
        let set = policies();
        let policy = set.find("batch", "v1", "Job").unwrap().clone();
        let owners: HashSet<&str> = owners.iter().copied().collect();
        needs_workload(&policy, &set, job, &owners, now_ms, GRACE)
    }

    #[test]
    fn a_queued_job_without_a_workload_past_the_grace_needs_one() {
        assert!(needs(&job(), &[], CREATED_MS + GRACE));
        assert!(needs(&job(), &["other-uid"], CREATED_MS + GRACE + 1));
    }

    #[test]
    fn within_the_grace_the_reconciler_is_still_on_it() {
        assert!(!needs(&job(), &[], CREATED_MS + GRACE - 1));
    }

    #[test]
    fn a_job_that_owns_a_workload_is_fine() {
        assert!(!needs(&job(), &["u-1"], CREATED_MS + GRACE));
    }

    #[test]
    fn unqueued_deleted_finished_and_child_jobs_need_none() {
        let now = CREATED_MS + GRACE;
        let mut j = job();
        j["metadata"]["labels"] = json!({});
        assert!(!needs(&j, &[], now), "no queue label");
        let mut j = job();
        j["metadata"]["labels"][QUEUE_NAME_LABEL] = json!("");
        assert!(!needs(&j, &[], now), "empty queue name");
        let mut j = job();
        j["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:10Z");
        assert!(!needs(&j, &[], now), "being deleted");
        let mut j = job();
        j["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
        assert!(!needs(&j, &[], now), "finished");
        let mut j = job();
        j["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "name": "js", "uid": "p", "controller": true}]);
        assert!(!needs(&j, &[], now), "a JobSet's Job");
        let mut j = job();
        j["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "example.com/v1", "kind": "Thing",
            "name": "t", "uid": "p", "controller": true}]);
        assert!(needs(&j, &[], now), "a parent that is not integrated");
        let mut j = job();
        j["metadata"]["creationTimestamp"] = json!(null);
        assert!(!needs(&j, &[], now), "no creation time: nothing to measure");
    }
}
