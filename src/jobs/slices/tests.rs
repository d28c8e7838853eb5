//! Kueue v0.19.2 `pkg/workloadslicing/workloadslicing_test.go`
//! (TestScaledDown, TestNormalizeActiveSlices, TestEnsureWorkloadSlices,
//! TestFindLatestActiveWorkload) and the ElasticJobUngater's quota rule,
//! as data in, decision out. Cases the fake client alone decides (a failed
//! list or update) have no counterpart here: the executor's errors are the
//! shell's.

use super::*;

fn counts(c: &[(&str, i64)]) -> Counts {
    c.iter().map(|(n, c)| (n.to_string(), *c)).collect()
}

fn one(n: i64) -> Counts {
    counts(&[("main", n)])
}

fn s(name: &str, n: i64) -> Slice {
    Slice {
        key: format!("ns/{name}"),
        counts: one(n),
        reserved: false,
        evicted: false,
        replaces: None,
    }
}

fn admitted(mut x: Slice) -> Slice {
    x.reserved = true;
    x
}

fn evicted(mut x: Slice) -> Slice {
    x.evicted = true;
    x
}

fn replacing(mut x: Slice, target: &str) -> Slice {
    x.replaces = Some(format!("ns/{target}"));
    x
}

#[test]
fn scaled_down_as_kueue() {
    let cases = [
        ("EmptyCounts", counts(&[]), counts(&[]), false),
        (
            "OnePodSetScaledDown",
            counts(&[("foo", 3), ("bar", 5)]),
            counts(&[("foo", 3), ("bar", 4)]),
            true,
        ),
        (
            "AllPodSetsScaledDown",
            counts(&[("foo", 3), ("bar", 5)]),
            counts(&[("foo", 2), ("bar", 4)]),
            true,
        ),
        (
            "OnePodSetScaledDownAndOnePodSetScaledUp",
            counts(&[("foo", 3), ("bar", 5)]),
            counts(&[("foo", 2), ("bar", 6)]),
            false,
        ),
        (
            "ExtraneousPodSetScaledUp",
            counts(&[("foo", 3), ("bar", 5)]),
            counts(&[("foo", 2), ("baz", 6)]),
            true,
        ),
        (
            "ExtraneousPodSetScaledDown",
            counts(&[("foo", 3), ("bar", 5)]),
            counts(&[("foo", 2), ("baz", 1)]),
            true,
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(scaled_down(&old, &new), want, "{name}");
    }
}

/// TestNormalizeActiveSlices: the survivor and the admitted slice kept
/// beside it; everything else is finished.
#[test]
fn normalize_as_kueue() {
    // (name, slices, survivor, admitted slice kept beside it)
    type Case = (
        &'static str,
        Vec<Slice>,
        Option<&'static str>,
        Option<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "two admitted, keep newest",
            vec![admitted(s("wl-a", 1)), admitted(s("wl-b", 2))],
            Some("wl-b"),
            None,
        ),
        (
            "admitted + pending replacement, keep replacement",
            vec![admitted(s("wl-a", 1)), replacing(s("wl-b", 2), "wl-a")],
            Some("wl-b"),
            Some("wl-a"),
        ),
        (
            "evicted admitted + pending, keep pending and finish evicted",
            vec![evicted(admitted(s("wl-a", 1))), s("wl-b", 2)],
            Some("wl-b"),
            None,
        ),
        (
            "forked DAG, both replace same finished target, keep newest",
            vec![
                admitted(replacing(s("wl-a", 2), "wl-old")),
                admitted(replacing(s("wl-b", 3), "wl-old")),
            ],
            Some("wl-b"),
            None,
        ),
        (
            "all non-admitted non-evicted, keep newest",
            vec![s("wl-a", 1), s("wl-b", 2)],
            Some("wl-b"),
            None,
        ),
        (
            "all evicted, survivor is nil",
            vec![
                evicted(admitted(s("wl-a", 1))),
                evicted(admitted(s("wl-b", 2))),
            ],
            None,
            None,
        ),
        (
            "admitted + pending without replacement annotation, keep admitted",
            vec![admitted(s("wl-a", 1)), s("wl-b", 2)],
            Some("wl-a"),
            None,
        ),
        (
            "three workloads, admitted + two pending, keep replacement targeting admitted",
            vec![
                admitted(s("wl-a", 1)),
                replacing(s("wl-b", 2), "wl-old"),
                replacing(s("wl-c", 3), "wl-a"),
            ],
            Some("wl-c"),
            Some("wl-a"),
        ),
        (
            "four same-second slices, chained replacements, admitted slice survives",
            vec![
                admitted(s("wl-a", 1)),
                replacing(s("wl-b", 2), "wl-a"),
                admitted(replacing(s("wl-c", 3), "wl-a")),
                replacing(s("wl-d", 4), "wl-c"),
            ],
            Some("wl-d"),
            Some("wl-c"),
        ),
        (
            "forked claim in adversarial order, admitted fork wins over pending",
            vec![
                admitted(replacing(s("wl-c", 3), "wl-a")),
                replacing(s("wl-b", 2), "wl-a"),
                admitted(s("wl-a", 1)),
                replacing(s("wl-d", 4), "wl-c"),
            ],
            Some("wl-d"),
            Some("wl-c"),
        ),
        (
            "two pending slices created in the same second",
            vec![s("wl-a", 1), s("wl-b", 1)],
            Some("wl-b"),
            None,
        ),
    ];
    for (name, slices, survivor, kept) in cases {
        let (finish, selected) = normalize(&slices);
        let key = |i: usize| slices[i].key.trim_start_matches("ns/").to_string();
        assert_eq!(selected.map(key).as_deref(), survivor, "{name}: survivor");
        let finished: Vec<String> = finish.iter().map(|(i, _, _)| key(*i)).collect();
        for (i, x) in slices.iter().enumerate() {
            let n = key(i);
            let keep = Some(n.as_str()) == survivor || Some(n.as_str()) == kept;
            assert_eq!(!keep, finished.contains(&n), "{name}: {} finished?", x.key);
        }
    }
}

#[test]
fn a_slice_is_finished_as_replaced_only_when_another_replaces_it() {
    let slices = vec![
        admitted(s("a", 1)),
        admitted(replacing(s("b", 2), "a")),
        s("c", 2),
    ];
    let (finish, selected) = normalize(&slices);
    assert_eq!(
        selected,
        Some(1),
        "b replaced a and holds quota; c replaces nothing"
    );
    assert_eq!(
        finish,
        vec![
            (0, REPLACED.0, REPLACED.1),
            (2, OUT_OF_SYNC.0, OUT_OF_SYNC.1)
        ]
    );
    let slices = vec![admitted(s("a", 1)), admitted(s("b", 2))];
    assert_eq!(
        normalize(&slices).0,
        vec![(0, OUT_OF_SYNC.0, OUT_OF_SYNC.1)]
    );
}

/// TestEnsureWorkloadSlices, case by case (the pod set is Kueue's `main`).
#[test]
fn ensure_as_kueue() {
    use Pick::*;
    let two = |a: Slice, b: Slice| vec![a, b];
    // (name, slices, the job's counts, slices finished, pick)
    type Case = (&'static str, Vec<Slice>, Counts, Vec<usize>, Pick);
    let cases: Vec<Case> = vec![
        (
            "NoWorkloadSlices",
            vec![],
            one(1),
            vec![],
            New { replaces: None },
        ),
        (
            "OneWorkloadSlice_IncompatibleWithJob",
            vec![s("1", 1)],
            counts(&[("other", 1)]),
            vec![],
            Incompatible,
        ),
        (
            "OneWorkloadSlice_CurrentWorkload",
            vec![s("1", 1)],
            one(1),
            vec![],
            Keep(0),
        ),
        (
            "OneWorkloadSlice_ReservedQuota_ScaleUp",
            vec![admitted(s("1", 1))],
            one(3),
            vec![],
            New { replaces: Some(0) },
        ),
        (
            "OneWorkloadSlice_ReservedQuota_ScaleUp_MultiplePodSets",
            vec![Slice {
                counts: counts(&[("a", 1), ("b", 2)]),
                ..admitted(s("1", 1))
            }],
            counts(&[("a", 1), ("b", 3)]),
            vec![],
            New { replaces: Some(0) },
        ),
        (
            "OneWorkloadSlice_ReservedQuota_ScaleDown",
            vec![admitted(s("1", 3))],
            one(1),
            vec![],
            Resize(0),
        ),
        (
            "OneWorkloadSlice_ReservedQuota_ScaleDown_MultiplePodSets",
            vec![Slice {
                counts: counts(&[("a", 3), ("b", 2)]),
                ..admitted(s("1", 1))
            }],
            counts(&[("a", 1), ("b", 2)]),
            vec![],
            Resize(0),
        ),
        (
            "OneWorkloadSlice_UnreservedQuota_ScaleUp",
            vec![s("1", 1)],
            one(3),
            vec![],
            Resize(0),
        ),
        (
            "OneWorkloadSlice_UnreservedQuota_ScaleDown",
            vec![s("1", 3)],
            one(1),
            vec![],
            Resize(0),
        ),
        (
            "TwoWorkloads_BothUnreserved_NewIsCurrent",
            two(s("1", 1), s("2", 3)),
            one(3),
            vec![0],
            Keep(1),
        ),
        (
            "TwoWorkloads_NewIsIncompatible",
            two(s("1", 1), s("2", 3)),
            counts(&[("other", 3)]),
            vec![0],
            Incompatible,
        ),
        (
            "TwoWorkloads_BothWithReservedQuota",
            two(admitted(s("1", 1)), admitted(s("2", 3))),
            one(5),
            vec![0],
            New { replaces: Some(1) },
        ),
        (
            "TwoWorkloads_OldWithReservedQuotaAndEvicted_NewWithoutQuotaReservation",
            two(evicted(admitted(s("1", 1))), s("2", 3)),
            one(5),
            vec![0],
            Resize(1),
        ),
        (
            "TwoWorkloadSlices_NewIsUnreservedAndCurrent",
            two(admitted(s("1", 1)), replacing(s("2", 3), "1")),
            one(3),
            vec![],
            Keep(1),
        ),
        (
            "TwoWorkloadSlices_NewIsUnreservedAndOutOfSync_ScaleUp",
            two(admitted(s("1", 1)), replacing(s("2", 3), "1")),
            one(5),
            vec![],
            Resize(1),
        ),
        (
            "TwoWorkloadSlices_NewIsUnreservedAndOutOfSync_ScaleDown",
            two(admitted(s("1", 1)), replacing(s("2", 3), "1")),
            one(2),
            vec![],
            Resize(1),
        ),
        (
            "TwoWorkloads_OldWithReservedQuota_NewWithReplacementAnnotationAndQuota",
            two(admitted(s("1", 1)), admitted(replacing(s("2", 3), "1"))),
            one(3),
            vec![0],
            Keep(1),
        ),
    ];
    for (name, slices, job, finished, want) in cases {
        let p = plan(&job, &slices);
        assert_eq!(p.pick, want, "{name}");
        let got: Vec<usize> = p.finish.iter().map(|f| f.0).collect();
        assert_eq!(got, finished, "{name}: finished");
    }
}

/// TestFindLatestActiveWorkload: the newest reserved slice not evicted.
#[test]
fn latest_active_as_kueue() {
    assert_eq!(latest_active(&[]), None);
    assert_eq!(latest_active(&[s("a", 1)]), None);
    assert_eq!(latest_active(&[admitted(s("a", 1)), s("b", 2)]), Some(0));
    assert_eq!(
        latest_active(&[admitted(s("a", 1)), admitted(s("b", 2))]),
        Some(1)
    );
    assert_eq!(
        latest_active(&[admitted(s("a", 1)), evicted(admitted(s("b", 2)))]),
        Some(0)
    );
}

fn pod(name: &str, ps: Option<&str>, gated: bool, terminated: bool) -> PodFacts {
    PodFacts {
        name: name.into(),
        pod_set: ps.map(Into::into),
        gated,
        terminated,
    }
}

#[test]
fn the_ungater_lets_go_no_more_than_the_slice_grants() {
    // 2 granted, 1 already running: one more, the lowest name.
    let pods = [
        pod("p-b", Some("main"), true, false),
        pod("p-a", Some("main"), true, false),
        pod("p-0", Some("main"), false, false),
    ];
    assert_eq!(to_ungate(&one(2), &pods), vec!["p-a"]);
    // Finished pods hold nothing; unlabelled pods are the only set's.
    let pods = [
        pod("done", None, false, true),
        pod("x", None, true, false),
        pod("y", None, true, false),
    ];
    assert_eq!(to_ungate(&one(2), &pods), vec!["x", "y"]);
    // Nothing granted beyond what runs: nothing.
    let pods = [pod("a", None, false, false), pod("b", None, true, false)];
    assert!(to_ungate(&one(1), &pods).is_empty());
    // Per pod set; a pod of no granted set stays gated.
    let granted = counts(&[("head", 1), ("workers", 2)]);
    let pods = [
        pod("h", Some("head"), true, false),
        pod("w1", Some("workers"), true, false),
        pod("w2", Some("workers"), true, false),
        pod("w3", Some("workers"), true, false),
        pod("z", Some("other"), true, false),
    ];
    assert_eq!(to_ungate(&granted, &pods), vec!["h", "w1", "w2"]);
}

/// The shell looks for an elastic job's pods again only while its operator
/// has made fewer than the slice grants (finished pods count as made).
#[test]
fn pods_are_awaited_only_while_fewer_exist_than_granted() {
    let granted: Counts = [("head".to_string(), 1), ("workers".to_string(), 2)]
        .into_iter()
        .collect();
    let head = pod("h", Some("head"), false, false);
    let w = |n: &str, done: bool| pod(n, Some("workers"), true, done);
    assert!(awaiting_pods(&granted, &[]));
    assert!(awaiting_pods(&granted, &[head.clone(), w("a", false)]));
    assert!(!awaiting_pods(
        &granted,
        &[head.clone(), w("a", false), w("b", true)]
    ));
    assert!(!awaiting_pods(
        &granted,
        &[head.clone(), w("a", false), w("b", false), w("c", false)]
    ));
    assert!(awaiting_pods(&granted, &[w("a", false), w("b", false)]));
    // One pod set: an unlabelled pod is its.
    let one: Counts = [("main".to_string(), 1)].into_iter().collect();
    assert!(!awaiting_pods(&one, &[pod("p", None, true, false)]));
    assert!(awaiting_pods(&one, &[pod("p", Some("other"), true, false)]));
}
