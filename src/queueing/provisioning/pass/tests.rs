//! The ProvisioningRequest check's pass, case by case (the states' own
//! rules are `provisioning`'s tests, ported from Kueue's controller_test.go).

use serde_json::{json, Value};

use super::*;
use crate::api::kueue::v1beta2::check_state;

fn at(secs: i64) -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
}

fn cond(type_: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": type_, "message": "",
           "lastTransitionTime": at(1).0.to_string()})
}

/// `wl` with pod sets ps1 (4 pods) and ps2 (3 pods), admitted with
/// `admitted` pods of each, its check `check1` in `state`, and `extra`
/// conditions besides QuotaReserved.
fn wl(admitted: i32, state: &str, extra: &[&str]) -> Workload {
    let mut conds = vec![cond("QuotaReserved")];
    conds.extend(extra.iter().map(|c| cond(c)));
    serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {"podSets": [
            {"name": "ps1", "count": 4, "template": {"spec": {"containers": [{"name": "c"}]}}},
            {"name": "ps2", "count": 3, "template": {"spec": {"containers": [{"name": "c"}]}}}]},
        "status": {
            "conditions": conds,
            "admission": {"clusterQueue": "cq", "podSetAssignments": [
                {"name": "ps1", "count": admitted}, {"name": "ps2", "count": admitted.min(3)}]},
            "admissionChecks": [{"name": "check1", "state": state, "message": "",
                                 "lastTransitionTime": at(1).0.to_string()}]}
    }))
    .unwrap()
}

fn config() -> ProvisioningRequestConfigSpec {
    ProvisioningRequestConfigSpec {
        provisioning_class_name: "class1".into(),
        ..Default::default()
    }
}

/// The request `name` of class1 with `conditions` (type → True).
fn request(name: &str, conditions: &[&str]) -> Request {
    let conds: Vec<Value> = conditions
        .iter()
        .map(|t| json!({"type": t, "status": "True", "message": format!("{t} by test")}))
        .collect();
    Request::from_json(&json!({
        "metadata": {"name": name},
        "spec": {"provisioningClassName": "class1", "podSets": [
            {"podTemplateRef": {"name": format!("ppt-{name}-ps1")}, "count": 4},
            {"podTemplateRef": {"name": format!("ppt-{name}-ps2")}, "count": 3}]},
        "status": {"conditions": conds},
    }))
}

fn run(wl: &Workload, config: Option<ProvisioningRequestConfigSpec>, owned: &[Request]) -> Pass {
    let checks = BTreeMap::from([("check1".to_string(), config)]);
    pass(&Facts {
        wl,
        checks: &checks,
        owned,
        now: &at(100),
        jitter: 0.0,
    })
    .unwrap()
}

#[test]
fn the_stage_comes_from_the_conditions() {
    let mut idle = wl(4, "Pending", &[]);
    idle.status.as_mut().unwrap().conditions = None;
    assert_eq!(stage(&idle), Stage::Idle);
    assert_eq!(stage(&wl(4, "Pending", &[])), Stage::Holding);
    assert_eq!(stage(&wl(4, "Pending", &["Evicted"])), Stage::Ending);
    assert_eq!(stage(&wl(4, "Ready", &["Finished"])), Stage::Ending);
}

#[test]
fn a_workload_without_this_controllers_checks_is_left_alone() {
    let w = wl(4, "Pending", &[]);
    let none = BTreeMap::new();
    let p = pass(&Facts {
        wl: &w,
        checks: &none,
        owned: &[request("wl-check1-1", &[])],
        now: &at(100),
        jitter: 0.0,
    });
    assert_eq!(p.unwrap(), Pass::Nothing);
}

#[test]
fn an_ending_workloads_requests_are_all_deleted() {
    let w = wl(4, "Pending", &["Evicted"]);
    let owned = [
        request("wl-check1-1", &["Failed"]),
        request("wl-check1-2", &[]),
    ];
    assert_eq!(
        run(&w, None, &owned),
        Pass::Clean {
            delete: vec!["wl-check1-1".into(), "wl-check1-2".into()]
        }
    );
}

#[test]
fn the_first_request_is_created_for_the_admitted_pod_sets() {
    let Pass::Sync { delete, provision } = run(&wl(4, "Pending", &[]), Some(config()), &[]) else {
        panic!("nothing to sync: the request is due");
    };
    assert!(delete.is_empty());
    assert_eq!(
        provision,
        [Provision::Create {
            check: "check1".into(),
            name: "wl-check1-1".into(),
            pod_sets: vec![
                MergedPodSet {
                    name: "ps1".into(),
                    count: 4
                },
                MergedPodSet {
                    name: "ps2".into(),
                    count: 3
                },
            ],
        }]
    );
}

#[test]
fn an_inactive_check_says_so_and_makes_nothing() {
    let Pass::States { states, updated } = run(&wl(4, "Pending", &[]), None, &[]) else {
        panic!("an inactive check's message is written");
    };
    assert_eq!(states[0].state, check_state::PENDING);
    assert_eq!(states[0].message, "the check is not active");
    assert!(updated.is_empty(), "the state did not change: no event");
}

#[test]
fn no_pods_to_provision_is_ready_at_once() {
    let Pass::States { states, updated } = run(&wl(0, "Pending", &[]), Some(config()), &[]) else {
        panic!("a check with nothing to provision is Ready");
    };
    assert_eq!(states[0].state, check_state::READY);
    assert_eq!(states[0].message, "the provisioning request is not needed");
    assert_eq!(updated.len(), 1);
}

#[test]
fn a_provisioned_request_makes_the_check_ready_with_an_event() {
    let owned = [request("wl-check1-1", &["Provisioned"])];
    let Pass::States { states, updated } = run(&wl(4, "Pending", &[]), Some(config()), &owned)
    else {
        panic!("a provisioned request readies the check");
    };
    assert_eq!(states[0].state, check_state::READY);
    assert_eq!(states[0].last_transition_time, at(100));
    assert_eq!(updated.len(), 1);
}

#[test]
fn a_request_in_flight_has_its_templates_handed_over_and_nothing_created() {
    let owned = [request("wl-check1-1", &[])];
    assert_eq!(
        run(&wl(4, "Pending", &[]), Some(config()), &owned),
        Pass::Sync {
            delete: vec![],
            provision: vec![Provision::Adopt {
                request: "wl-check1-1".into(),
                templates: vec!["ppt-wl-check1-1-ps1".into(), "ppt-wl-check1-1-ps2".into()],
            }],
        }
    );
}

#[test]
fn a_failed_request_is_followed_by_the_next_attempt_once_pending_again() {
    // The state already says Retry was counted (retryCount 1), and is
    // Pending again after the eviction: attempt 2 is made, the failed one
    // stays as the last until then.
    let mut w = wl(4, "Pending", &[]);
    let s = &mut w
        .status
        .as_mut()
        .unwrap()
        .admission_checks
        .as_mut()
        .unwrap()[0];
    s.retry_count = Some(1);
    s.message = "Retrying after failure: Failed by test".into();
    let owned = [request("wl-check1-1", &["Failed"])];
    let Pass::Sync { delete, provision } = run(&w, Some(config()), &owned) else {
        panic!("the next attempt is due");
    };
    assert!(delete.is_empty());
    assert!(
        matches!(&provision[..], [Provision::Create { name, .. }] if name == "wl-check1-2"),
        "{provision:?}"
    );
}

#[test]
fn requests_no_check_uses_are_deleted() {
    // Out of step with the config (another class): not the check's request.
    let mut stale = request("wl-check1-1", &[]);
    stale.class = "old-class".into();
    let Pass::Sync { delete, provision } = run(&wl(4, "Pending", &[]), Some(config()), &[stale])
    else {
        panic!("a stale request is deleted and a new one made");
    };
    assert_eq!(delete, ["wl-check1-1"]);
    assert!(
        matches!(&provision[..], [Provision::Create { name, .. }] if name == "wl-check1-1"),
        "{provision:?}"
    );
}

fn owner(uid: &str, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: "kueue.x-k8s.io/v1beta2".into(),
        kind: "Workload".into(),
        name: "wl".into(),
        uid: uid.into(),
        controller: Some(controller),
        block_owner_deletion: Some(true),
    }
}

#[test]
fn a_template_made_for_the_workload_passes_to_its_request() {
    let other = OwnerReference {
        kind: "ConfigMap".into(),
        uid: "cm-1".into(),
        controller: None,
        ..owner("", false)
    };
    let refs = [other, owner("wl-uid", true)];
    let kept = handed_over(&refs, "wl-uid", "wl-check1-1", "pr-uid").expect("handed over");
    // The Workload's reference goes; the request controls; others stay.
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(kept[0]["uid"], "cm-1");
    assert_eq!(kept[1]["uid"], "pr-uid");
    assert_eq!(kept[1]["kind"], "ProvisioningRequest");
    assert_eq!(kept[1]["apiVersion"], "autoscaling.x-k8s.io/v1");
    assert_eq!(kept[1]["name"], "wl-check1-1");
    assert_eq!(kept[1]["controller"], true);
}

#[test]
fn a_template_not_made_for_the_workload_is_never_adopted() {
    // Someone else's same-named template, a template only referencing the
    // Workload, and one the request already controls: nothing written.
    assert_eq!(
        handed_over(&[owner("other", true)], "wl-uid", "r", "pr-uid"),
        None
    );
    assert_eq!(
        handed_over(&[owner("wl-uid", false)], "wl-uid", "r", "pr-uid"),
        None
    );
    assert_eq!(handed_over(&[], "wl-uid", "r", "pr-uid"), None);
    assert_eq!(
        handed_over(&[owner("wl-uid", true)], "", "r", "pr-uid"),
        None
    );
    let done = [owner("pr-uid", true)];
    assert_eq!(handed_over(&done, "wl-uid", "r", "pr-uid"), None);
}

fn check(params: Value, active: Option<bool>) -> AdmissionCheck {
    let status = active.map(|a| {
        json!({"conditions": [{"type": "Active", "status": if a { "True" } else { "False" },
            "reason": "r", "message": "m", "lastTransitionTime": at(1).0.to_string()}]})
    });
    serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
        "metadata": {"name": "check1", "generation": 3},
        "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request", "parameters": params},
        "status": status,
    }))
    .unwrap()
}

fn params() -> Value {
    json!({"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "prc"})
}

#[test]
fn the_active_condition_is_written_only_when_it_flips() {
    let c = active(&check(params(), None), true, &at(5)).expect("first set");
    let a = c.get(ADMISSION_CHECK_ACTIVE).unwrap();
    assert_eq!((a.status.as_str(), a.reason.as_str()), ("True", "Active"));
    assert_eq!(a.message, "The admission check is active");
    assert_eq!(a.observed_generation, Some(3));
    assert_eq!(active(&check(params(), Some(true)), true, &at(5)), None);

    let c = active(&check(params(), Some(true)), false, &at(5)).expect("the config went");
    let a = c.get(ADMISSION_CHECK_ACTIVE).unwrap();
    assert_eq!(
        (a.status.as_str(), a.reason.as_str()),
        ("False", "BadParametersRef")
    );
    assert_eq!(
        a.message,
        "provisioningrequestconfigs.kueue.x-k8s.io \"prc\" not found"
    );
    assert_eq!(active(&check(params(), Some(false)), false, &at(5)), None);

    let bad =
        json!({"apiGroup": "example.com", "kind": "ProvisioningRequestConfig", "name": "prc"});
    let c = active(&check(bad, Some(true)), true, &at(5)).expect("a bad reference");
    assert_eq!(
        c.get(ADMISSION_CHECK_ACTIVE).unwrap().message,
        "wrong group \"example.com\", expecting \"kueue.x-k8s.io\": bad parameters reference"
    );
}

#[test]
fn a_refused_create_is_told_in_the_checks_message() {
    let w = wl(4, "Pending", &[]);
    let states = failed(
        &w,
        "check1",
        "Error creating ProvisioningRequest \"x\": quota",
    )
    .unwrap();
    assert_eq!(states.len(), 1);
    assert_eq!(
        states[0].message,
        "Error creating ProvisioningRequest \"x\": quota"
    );
    assert_eq!(states[0].state, "Pending");
    let long = "é".repeat(40 * 1024);
    let states = failed(&w, "check1", &long).unwrap();
    assert_eq!(states[0].message.chars().count(), 32 * 1024);
    assert_eq!(failed(&w, "check2", "m"), None, "no state of that name");
}
