//! Workload slices (KEP-77, ElasticJobsViaWorkloadSlices): a slice that
//! replaces an admitted one asks only for what it adds, on the same
//! flavors, never preempts it, and takes over its quota once admitted.
//! Follows Kueue v0.19.2 `pkg/scheduler/scheduler_test.go` ("workload-slice
//! fits in single clusterQueue") and `flavorassigner.go`'s slice rules.

use super::*;
use crate::queueing::quota::FlavorResource;

/// `count` pods of one cpu each, as slice `name` of the job.
fn slice(name: &str, count: u32, replaces: Option<&str>) -> Workload {
    let mut w = wl(name, "cq", 0, 1, 1);
    w.pod_sets[0].count = count;
    w.replaces = replaces.map(key);
    w.job_uid = Some("job-1".into());
    w
}

fn admission_on(flavor: &str, count: u32) -> Admission {
    Admission {
        cluster_queue: "cq".into(),
        pod_set_assignments: vec![crate::queueing::workload::PodSetAssignment {
            name: "main".into(),
            flavors: [("cpu".to_string(), flavor.to_string())].into(),
            resource_usage: [("cpu".to_string(), i64::from(count) * 1000)].into(),
            count,
            topology: None,
        }],
    }
}

fn used(e: &Engine, flavor: &str) -> i64 {
    e.quota.usage("cq", &FlavorResource::new(flavor, "cpu"))
}

/// `foo-1` holds `count` cpus on `flavor`.
fn with_admitted(e: &mut Engine, flavor: &str, count: u32) {
    let mut old = slice("foo-1", count, None);
    old.admission = Some(admission_on(flavor, count));
    e.upsert_workload(old);
}

/// Kueue: "workload-slice fits in single clusterQueue" — 10 admitted, the
/// 15-pod replacement fits by its 5 more, and is admitted for all 15.
#[test]
fn a_replacement_that_fits_by_what_it_adds_is_admitted_for_all_of_it() {
    let mut e = engine(&["default"], vec![cq("cq", None, &[("default", 20)])]);
    with_admitted(&mut e, "default", 10);
    e.upsert_workload(slice("foo-2", 15, Some("foo-1")));
    let c = run(&mut e, 10);
    assert_eq!(admitted(&c), vec![key("foo-2")]);
    let a = c
        .decisions
        .iter()
        .find_map(|d| match d {
            Decision::Admit { admission, .. } => Some(admission.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(a, admission_on("default", 15));
    // The old slice's 10 are the new one's now: 15 in use, not 25.
    assert_eq!(used(&e, "default"), 15_000);
}

#[test]
fn a_replacement_whose_addition_does_not_fit_waits_and_the_old_slice_keeps_running() {
    let mut e = engine(&["default"], vec![cq("cq", None, &[("default", 20)])]);
    with_admitted(&mut e, "default", 10);
    let mut other = slice("other", 8, None);
    other.admission = Some(admission_on("default", 8));
    e.upsert_workload(other);
    e.upsert_workload(slice("foo-2", 15, Some("foo-1")));
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty());
    assert!(evictions(&c).is_empty(), "the old slice is never preempted");
    assert_eq!(
        pending(&c, "foo-2").map(|p| p.0),
        Some(PendingReason::WaitingForQuota)
    );
    assert_eq!(used(&e, "default"), 18_000);
    // Once the other workload is done, the 5 more fit.
    e.finish_workload(&key("other"));
    assert_eq!(settle(&mut e, 20), vec![key("foo-2")]);
    assert_eq!(used(&e, "default"), 15_000);
}

/// flavorassigner.go: "Ensure the same resource flavor is used for the
/// workload slice as in the original admitted slice."
#[test]
fn a_replacement_stays_on_the_flavor_of_the_slice_it_replaces() {
    let mut e = engine(
        &["small", "big"],
        vec![cq("cq", None, &[("small", 10), ("big", 100)])],
    );
    with_admitted(&mut e, "small", 8);
    e.upsert_workload(slice("foo-2", 12, Some("foo-1")));
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty(), "not moved to `big`");
    assert_eq!(used(&e, "big"), 0);
    e.upsert_workload(slice("foo-2", 10, Some("foo-1")));
    let c = run(&mut e, 20);
    assert_eq!(flavor_of(&c, "foo-2").as_deref(), Some("small"));
}

#[test]
fn a_replacement_never_preempts_the_slice_it_replaces() {
    let mut q = cq("cq", None, &[("default", 12)]);
    q.preemption.within_cluster_queue = PreemptionPolicy::LowerOrNewerEqualPriority;
    let mut e = engine(&["default"], vec![q]);
    with_admitted(&mut e, "default", 10);
    let mut new = slice("foo-2", 15, Some("foo-1"));
    new.priority = 100;
    e.upsert_workload(new);
    let c = run(&mut e, 10);
    assert!(evictions(&c).is_empty());
    assert!(admitted(&c).is_empty());
}

#[test]
fn a_refused_admission_gives_the_old_slice_its_quota_back() {
    let mut e = engine(&["default"], vec![cq("cq", None, &[("default", 20)])]);
    with_admitted(&mut e, "default", 10);
    e.upsert_workload(slice("foo-2", 15, Some("foo-1")));
    assert_eq!(settle(&mut e, 10), vec![key("foo-2")]);
    e.reject_admission(&key("foo-2"));
    assert_eq!(used(&e, "default"), 10_000);
}

/// After a restart both may come back admitted (the old slice not yet
/// finished): whichever order they arrive in, only the replacement counts,
/// and a later update of the old slice does not bring it back.
#[test]
fn a_rebuild_counts_only_the_replacement_whatever_the_order() {
    for old_first in [true, false] {
        let mut e = engine(&["default"], vec![cq("cq", None, &[("default", 20)])]);
        let mut old = slice("foo-1", 10, None);
        old.admission = Some(admission_on("default", 10));
        let mut new = slice("foo-2", 15, Some("foo-1"));
        new.admission = Some(admission_on("default", 15));
        if old_first {
            e.upsert_workload(old.clone());
            e.upsert_workload(new);
        } else {
            e.upsert_workload(new);
            e.upsert_workload(old.clone());
        }
        assert_eq!(used(&e, "default"), 15_000, "old first: {old_first}");
        old.priority = 1;
        e.upsert_workload(old);
        assert_eq!(used(&e, "default"), 15_000, "old first: {old_first}");
        assert!(run(&mut e, 10).decisions.is_empty());
        e.finish_workload(&key("foo-1"));
        assert_eq!(used(&e, "default"), 15_000);
    }
}

/// Kueue's ReplacedWorkloadSlice "CrossNamespaceReplacementIsRejected",
/// and beyond it: a Workload annotated to replace another job's admitted
/// Workload (another namespace, or the same namespace and another job) is
/// an ordinary one. It asks for all it needs and the other keeps its quota.
#[test]
fn a_workload_claiming_to_replace_another_jobs_is_not_taken_at_its_word() {
    for (ns, job) in [("other-ns", "job-1"), (NS, "job-2")] {
        let mut e = engine(&["default"], vec![cq("cq", None, &[("default", 20)])]);
        with_admitted(&mut e, "default", 10);
        let mut claim = slice("foo-2", 15, Some("foo-1"));
        claim.namespace = ns.into();
        claim.job_uid = Some(job.into());
        if ns != NS {
            e.upsert_local_queue(LocalQueue {
                namespace: ns.into(),
                ..lq("cq")
            });
        }
        e.upsert_workload(claim.clone());
        let c = run(&mut e, 10);
        assert!(admitted(&c).is_empty(), "{ns}/{job}: 10 + 15 > 20");
        assert_eq!(used(&e, "default"), 10_000, "{ns}/{job}");
        // Admitted some other way (written by someone), it drops nothing.
        let mut held = claim;
        held.admission = Some(admission_on("default", 15));
        e.upsert_workload(held);
        assert_eq!(used(&e, "default"), 25_000, "{ns}/{job}");
        assert!(!e.same_job(&format!("{ns}/foo-2"), &key("foo-1")));
    }
}

/// A MultiKueue worker's copies of one job's slices carry no job UID (the
/// manager drops it): the same origin and slice chain make them one job's,
/// so the replacing copy asks only for what it adds, as on the manager.
/// Another chain, or another origin, is another job's.
#[test]
fn a_multikueue_workers_copies_of_one_jobs_slices_are_one_jobs() {
    let copy = |name: &str, count: u32, replaces: Option<&str>, chain: &str| {
        let mut w = slice(name, count, replaces);
        w.job_uid = None;
        w.copy_chain = Some(chain.into());
        w
    };
    for (chain, fits) in [
        ("origin1/foo-1", true),
        ("origin1/bar-1", false),
        ("origin2/foo-1", false),
    ] {
        let mut e = engine(&["default"], vec![cq("cq", None, &[("default", 20)])]);
        let mut old = copy("foo-1", 10, None, "origin1/foo-1");
        old.admission = Some(admission_on("default", 10));
        e.upsert_workload(old);
        e.upsert_workload(copy("foo-2", 15, Some("foo-1"), chain));
        let c = run(&mut e, 10);
        assert_eq!(admitted(&c).len(), usize::from(fits), "{chain}");
        assert_eq!(e.same_job(&key("foo-2"), &key("foo-1")), fits, "{chain}");
        let held = if fits { 15_000 } else { 10_000 };
        assert_eq!(used(&e, "default"), held, "{chain}");
    }
}

/// The worker's job adopts the copy it runs (the job UID label added, as
/// Kueue's `EnsurePrebuiltWorkloadOwnership` does) before the next copy
/// arrives without it: the chain still makes them one job's.
#[test]
fn an_adopted_copy_and_the_next_copy_of_its_chain_are_one_jobs() {
    let mut e = engine(&["default"], vec![cq("cq", None, &[("default", 20)])]);
    let mut old = slice("foo-1", 10, None);
    old.copy_chain = Some("origin1/foo-1".into());
    old.admission = Some(admission_on("default", 10));
    e.upsert_workload(old);
    let mut new = slice("foo-2", 15, Some("foo-1"));
    new.job_uid = None;
    new.copy_chain = Some("origin1/foo-1".into());
    e.upsert_workload(new);
    let c = run(&mut e, 10);
    assert_eq!(admitted(&c), vec![key("foo-2")]);
    assert_eq!(used(&e, "default"), 15_000);
}
