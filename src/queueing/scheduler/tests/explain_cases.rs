//! `Engine::explain`: what it says a Workload waits for, and that the next
//! cycles then do what it said.

use super::*;

fn lines(x: &Explanation) -> String {
    x.summary.join("\n")
}

#[test]
fn short_of_quota_names_the_flavor_and_each_level_and_then_admits_when_freed() {
    let mut e = engine(
        &["default"],
        vec![
            cq("a", Some("co"), &[("default", 4)]),
            cq("b", Some("co"), &[("default", 2)]),
        ],
    );
    e.upsert_workload(wl("big-a", "a", 0, 1, 4));
    e.upsert_workload(wl("one-b", "b", 0, 2, 1));
    admit_all(&mut e, 10);
    e.upsert_workload(wl("waits", "a", 0, 3, 3));
    let c = run(&mut e, 20);
    assert!(admitted(&c).is_empty());

    let x = e.explain(NS, "waits").unwrap();
    assert_eq!(x.state, "Pending");
    assert_eq!(x.cluster_queue.as_deref(), Some("a"));
    let n = x.nomination.as_ref().unwrap();
    // Kueue's mode: it would fit were others evicted, and none may be.
    assert_eq!(n.mode, "Preempt");
    assert!(
        n.message
            .contains("insufficient unused quota for cpu in flavor default, 2 more needed"),
        "{}",
        n.message
    );
    assert!(
        lines(&x).contains("no workload may be preempted for it"),
        "{}",
        lines(&x)
    );
    // The quota at each level: the queue's own is used up; the cohort
    // has 1 of 6 free, 2 short of the 3 asked for.
    assert_eq!(x.quota.len(), 1);
    let q = &x.quota[0];
    assert_eq!(
        (q.resource.as_str(), q.flavor.as_str(), q.requested.as_str()),
        ("cpu", "default", "3")
    );
    let levels: Vec<(&str, &str, &str, &str)> = q
        .levels
        .iter()
        .map(|l| {
            (
                l.name.as_str(),
                l.quota.as_str(),
                l.used.as_str(),
                l.free.as_str(),
            )
        })
        .collect();
    assert_eq!(levels, [("a", "4", "4", "0"), ("co", "6", "5", "1")]);
    assert_eq!(x.position.as_ref().unwrap().in_cluster_queue, 1);

    // Quota released: what it said was missing is there, and the engine
    // admits it.
    e.finish_workload(&key("big-a"));
    assert_eq!(
        e.explain(NS, "waits").unwrap().nomination.unwrap().mode,
        "Fit"
    );
    assert_eq!(settle(&mut e, 30), [key("waits")]);
    let x = e.explain(NS, "waits").unwrap();
    assert_eq!(x.state, "Admitted");
    assert!(
        lines(&x).contains("admitted by ClusterQueue a on pod set main (cpu: default)"),
        "{}",
        lines(&x)
    );
}

#[test]
fn more_than_the_cohort_holds_does_not_fit_at_all() {
    let mut e = engine(
        &["default"],
        vec![
            cq("a", Some("co"), &[("default", 4)]),
            cq("b", Some("co"), &[("default", 2)]),
        ],
    );
    e.upsert_workload(wl("huge", "a", 0, 1, 7));
    run(&mut e, 10);
    let x = e.explain(NS, "huge").unwrap();
    assert_eq!(x.nomination.as_ref().unwrap().mode, "NoFit");
    assert!(
        lines(&x).contains(
            "It does not fit, even by preempting: couldn't assign flavors to pod set main"
        ),
        "{}",
        lines(&x)
    );
}

#[test]
fn behind_a_strict_head_it_says_so_and_stays_behind() {
    let mut e = engine(&["default"], vec![strict(cq("s", None, &[("default", 2)]))]);
    e.upsert_workload(wl("running", "s", 0, 1, 1));
    admit_all(&mut e, 10);
    e.upsert_workload(wl("head", "s", 10, 2, 2));
    e.upsert_workload(wl("small", "s", 0, 3, 1));
    run(&mut e, 20);

    let x = e.explain(NS, "small").unwrap();
    let p = x.position.as_ref().unwrap();
    assert_eq!(p.in_cluster_queue, 2);
    assert_eq!(p.ahead.len(), 1);
    assert_eq!(
        (p.ahead[0].name.as_str(), p.ahead[0].priority),
        ("head", 10)
    );
    assert_eq!(x.nomination.as_ref().unwrap().mode, "Fit");
    assert!(
        lines(&x).contains("StrictFIFO and 1 workload(s) are ahead of it"),
        "{}",
        lines(&x)
    );
    // And the engine keeps it behind the head.
    assert!(settle(&mut e, 30).is_empty());
}

#[test]
fn a_workload_that_would_preempt_names_its_victims_and_the_cycle_preempts_them() {
    let mut q = cq("p", None, &[("default", 2)]);
    q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
    let mut e = engine(&["default"], vec![q]);
    e.upsert_workload(wl("low", "p", 0, 1, 2));
    admit_all(&mut e, 10);
    e.upsert_workload(wl("high", "p", 100, 2, 2));

    let x = e.explain(NS, "high").unwrap();
    let n = x.nomination.as_ref().unwrap();
    assert_eq!(n.mode, "Preempt");
    assert_eq!(n.would_preempt.len(), 1);
    assert_eq!(
        (n.would_preempt[0].name.as_str(), n.would_preempt[0].reason),
        ("low", "InClusterQueue")
    );
    assert!(
        lines(&x).contains("It fits if 1 workload(s) are preempted"),
        "{}",
        lines(&x)
    );
    // Named to a caller of its namespace; emptied for another.
    assert!(!x.names_others(NS));
    let mut other = x.clone();
    other.redact("elsewhere");
    let v = &other.nomination.as_ref().unwrap().would_preempt[0];
    assert_eq!(
        (v.namespace.as_str(), v.name.as_str(), v.priority),
        ("", "", 0)
    );
    let c = e.schedule(20);
    let evicted: Vec<String> = evictions(&c).into_iter().map(|e| e.0).collect();
    assert_eq!(evicted, [key("low")]);
}

#[test]
fn without_a_preemption_policy_it_waits_for_quota() {
    let mut e = engine(&["default"], vec![cq("n", None, &[("default", 2)])]);
    e.upsert_workload(wl("low", "n", 0, 1, 2));
    admit_all(&mut e, 10);
    e.upsert_workload(wl("high", "n", 100, 2, 2));
    let x = e.explain(NS, "high").unwrap();
    assert_eq!(x.nomination.as_ref().unwrap().mode, "Preempt");
    assert!(x.nomination.as_ref().unwrap().would_preempt.is_empty());
    assert!(
        lines(&x).contains("no workload may be preempted for it under ClusterQueue n's preemption (withinClusterQueue: Never, reclaimWithinCohort: Never)"),
        "{}",
        lines(&x)
    );
    assert!(evictions(&e.schedule(20)).is_empty());
}

#[test]
fn unqueued_inactive_and_unknown_workloads_are_told_apart() {
    let mut e = engine(&["default"], vec![cq("a", None, &[("default", 2)])]);
    assert_eq!(e.explain(NS, "nobody"), None);
    let mut lost = wl("lost", "a", 0, 1, 1);
    lost.queue_name = "missing".into();
    e.upsert_workload(lost);
    let x = e.explain(NS, "lost").unwrap();
    assert_eq!(x.state, "NotQueued");
    assert!(
        lines(&x).contains("LocalQueue missing does not exist in namespace ns"),
        "{}",
        lines(&x)
    );
    let mut off = wl("off", "a", 0, 1, 1);
    off.active = false;
    e.upsert_workload(off);
    assert_eq!(e.explain(NS, "off").unwrap().state, "Inactive");
    let mut stopped = lq("a");
    stopped.stop_policy = StopPolicy::Hold;
    e.upsert_local_queue(stopped);
    e.upsert_workload(wl("held", "a", 0, 2, 1));
    let x = e.explain(NS, "held").unwrap();
    assert_eq!(x.state, "NotQueued");
    assert!(
        lines(&x).contains("LocalQueue lq-a is stopped"),
        "{}",
        lines(&x)
    );
}

#[test]
fn a_simulation_changes_nothing_and_the_real_workload_then_does_what_it_said() {
    let mut q = cq("p", None, &[("default", 2)]);
    q.preemption.within_cluster_queue = PreemptionPolicy::LowerPriority;
    let mut e = engine(&["default"], vec![q]);
    e.upsert_workload(wl("low", "p", 0, 1, 2));
    e.upsert_workload(wl("queued", "p", 0, 2, 1));
    admit_all(&mut e, 10);
    let urgent = wl("urgent", "p", 100, 3, 2);
    let x = e.simulate(&urgent);
    assert_eq!(x.state, "Pending");
    assert_eq!(x.summary[0], "If it were created now:");
    // Sorted before the queued one: the head.
    assert_eq!(x.position.as_ref().unwrap().in_cluster_queue, 1);
    let n = x.nomination.as_ref().unwrap();
    assert_eq!(n.mode, "Preempt");
    assert_eq!(n.would_preempt[0].name, "low");
    assert_eq!(n.flavors["main"]["cpu"], "default");
    // Nothing changed: no cycle has anything new to do.
    assert!(e.schedule(20).decisions.is_empty());
    assert_eq!(e.explain(NS, "urgent"), None);
    // Created for real, it preempts whom it named.
    e.upsert_workload(urgent);
    let evicted: Vec<String> = evictions(&e.schedule(30))
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(evicted, [key("low")]);

    let mut lost = wl("lost", "p", 0, 4, 1);
    lost.queue_name = "nope".into();
    let x = e.simulate(&lost);
    assert_eq!(x.state, "NotQueued");
    assert!(
        lines(&x).contains("LocalQueue nope does not exist"),
        "{}",
        lines(&x)
    );
}
