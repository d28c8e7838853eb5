//! A ClusterQueue's admission checks in the engine.

use super::*;
use crate::queueing::admission_checks::CheckInfo;

fn known(checks: &[(&str, bool)]) -> BTreeMap<String, CheckInfo> {
    checks
        .iter()
        .map(|(n, active)| {
            (
                n.to_string(),
                CheckInfo {
                    controller: "example.com/check".into(),
                    active: *active,
                },
            )
        })
        .collect()
}

/// Kueue v0.19.2 pkg/cache/scheduler/clusterqueue_test.go
/// TestClusterQueueUpdateWithAdmissionCheck: a queue whose check is
/// missing, then inactive, admits nothing and says why; once the check is
/// active the Workload gets its quota, and the admission needs the check.
#[test]
fn a_queue_admits_only_once_its_checks_exist_and_are_active() {
    let mut e = engine(&["f"], vec![cq("cq", None, &[("f", 4)])]);
    e.set_cluster_queue_checks("cq", vec![("prov".into(), vec![])]);
    e.upsert_workload(wl("a", "cq", 0, 1, 1));
    let c = run(&mut e, 10);
    assert!(admitted(&c).is_empty());
    assert_eq!(
        pending(&c, "a"),
        Some((
            PendingReason::Suspended,
            "ClusterQueue cq is inactive".to_string()
        ))
    );
    let st = e.cluster_queue_status("cq").unwrap().active;
    assert_eq!(
        (st.status, st.reason, st.message.as_str()),
        (
            false,
            "AdmissionCheckNotFound",
            "Can't admit new workloads: references missing AdmissionCheck(s): prov."
        )
    );
    e.set_admission_checks(known(&[("prov", false)]));
    assert!(admitted(&run(&mut e, 11)).is_empty());
    let st = e.cluster_queue_status("cq").unwrap().active;
    assert_eq!(
        (st.reason, st.message.as_str()),
        (
            "AdmissionCheckInactive",
            "Can't admit new workloads: references inactive AdmissionCheck(s): prov."
        )
    );
    e.set_admission_checks(known(&[("prov", true)]));
    assert!(e.cluster_queue_status("cq").unwrap().active.status);
    let c = run(&mut e, 12);
    assert_eq!(admitted(&c), vec![key("a")]);
    let a = e.admission(&key("a")).unwrap().clone();
    assert_eq!(
        e.checks_for_admission(&a).into_iter().collect::<Vec<_>>(),
        ["prov"]
    );
}

/// Kueue v0.19.2 pkg/workload/workload_test.go
/// TestAdmissionChecksForWorkload: a check on other flavors is not needed
/// by an admission to this one; without any rule nothing is.
#[test]
fn a_check_on_other_flavors_is_not_needed() {
    let mut e = engine(&["f", "g"], vec![cq("cq", None, &[("f", 4), ("g", 4)])]);
    e.set_admission_checks(known(&[("on-g", true)]));
    e.set_cluster_queue_checks("cq", vec![("on-g".into(), vec!["g".into()])]);
    e.upsert_workload(wl("a", "cq", 0, 1, 1));
    assert_eq!(admitted(&run(&mut e, 10)), vec![key("a")]);
    let a = e.admission(&key("a")).unwrap().clone();
    assert!(e.checks_for_admission(&a).is_empty());
    e.set_cluster_queue_checks("cq", vec![]);
    assert!(e.check_strategy("cq").is_empty());
}

/// Kueue v0.19.2 `pkg/scheduler/scheduler.go` `prepareWorkload`: with a
/// check to wait for, the assumed copy has `QuotaReserved` but not
/// `Admitted`, so the decision counts in the reservation only.
#[test]
fn an_admission_waiting_for_a_check_is_reserved_not_admitted() {
    let mut e = engine(&["f"], vec![cq("cq", None, &[("f", 4)])]);
    e.set_admission_checks(known(&[("prov", true)]));
    e.set_cluster_queue_checks("cq", vec![("prov".into(), vec![])]);
    e.upsert_workload(wl("a", "cq", 0, 1, 1));
    assert_eq!(admitted(&run(&mut e, 10)), vec![key("a")]);
    let s = e.cluster_queue_status("cq").unwrap();
    assert_eq!(
        (
            s.reserving_workloads,
            s.admitted_workloads,
            s.flavors_usage[0].resources[0].total,
            s.flavors_admitted[0].resources[0].total,
        ),
        (1, 0, 1000, 0)
    );
    assert_eq!(Some(s), e.cluster_queue_status_by_walk("cq"));
}
