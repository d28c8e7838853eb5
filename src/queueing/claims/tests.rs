//! Kueue v0.19.2's `pkg/dra/claims_test.go` (`Test_GetResourceRequests`,
//! `Test_countDevicesPerClass_overflow`) and the workload controller's DRA
//! rejections (`pkg/controller/core/workload_controller.go`, the
//! `KueueDRARejectWorkloadsWhenDRADisabled` and resource-claim branches),
//! as tables. Kueue's table skips a pod's direct ResourceClaim because its
//! controller refused it one step earlier; here both steps are one
//! function, so the cases that are about templates name templates only.
//! The CEL cases run against a [`DeviceView`] built from the same
//! ResourceSlices and DeviceClasses.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;

fn template(requests: Value) -> ResourceClaimSpec {
    serde_json::from_value(json!({"devices": {"requests": requests}})).unwrap()
}

fn exact(name: &str, class: &str, count: i64) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": class, "allocationMode": "ExactCount", "count": count}})
}

fn pod_set(name: &str, claims: Value) -> PodSetClaims {
    PodSetClaims {
        name: name.into(),
        claims: serde_json::from_value(claims).unwrap(),
    }
}

fn templates() -> BTreeMap<&'static str, ResourceClaimSpec> {
    BTreeMap::from([
        (
            "claim-tmpl-1",
            template(json!([exact("device-request", "test-deviceclass-1", 2)])),
        ),
        (
            "claim-tmpl-2",
            template(json!([exact("device-request", "test-deviceclass-2", 1)])),
        ),
        (
            "claim-tmpl-all",
            template(json!([{"name": "device-request", "exactly": {
                "deviceClassName": "test-deviceclass-1", "allocationMode": "All"}}])),
        ),
        (
            "claim-tmpl-first",
            template(json!([{"name": "req", "firstAvailable": [
                {"name": "a", "deviceClassName": "test-deviceclass-1"}]}])),
        ),
        ("claim-tmpl-empty", template(json!([{"name": "req"}]))),
        (
            "claim-tmpl-admin",
            template(json!([{"name": "req", "exactly": {
                "deviceClassName": "test-deviceclass-1", "allocationMode": "ExactCount",
                "count": 1, "adminAccess": true}}])),
        ),
        (
            "claim-tmpl-constraints",
            serde_json::from_value(json!({"devices": {
                "requests": [exact("gpu-1", "test-deviceclass-1", 1), exact("gpu-2", "test-deviceclass-1", 1)],
                "constraints": [{"requests": ["gpu-1", "gpu-2"], "matchAttribute": "numa-node"}]}}))
            .unwrap(),
        ),
        (
            "claim-tmpl-config",
            serde_json::from_value(json!({"devices": {
                "requests": [exact("gpu", "test-deviceclass-1", 1)],
                "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}]}}))
            .unwrap(),
        ),
    ])
}

fn settings(classes: &[(&str, &str)]) -> Settings {
    Settings {
        classes: classes
            .iter()
            .map(|(c, r)| (c.to_string(), r.to_string()))
            .collect(),
        ..Settings::default()
    }
}

fn run(pod_sets: &[PodSetClaims], s: &Settings) -> Charge {
    let t = templates();
    charge(pod_sets, |n| t.get(n), &DeviceView::default(), s)
}

fn devices(per_pod_set: &[&[(&str, i64)]]) -> Charge {
    Charge::Devices(
        per_pod_set
            .iter()
            .map(|m| m.iter().map(|(r, n)| (r.to_string(), *n)).collect())
            .collect(),
    )
}

const BOTH: &[(&str, &str)] = &[
    ("test-deviceclass-1", "res-1"),
    ("test-deviceclass-2", "res-2"),
];
const ONE: &[(&str, &str)] = &[("test-deviceclass-1", "res-1")];

fn main_with(claims: Value) -> Vec<PodSetClaims> {
    vec![pod_set("main", claims)]
}

#[test]
fn single_claim_template_with_single_device() {
    let ps = main_with(json!([{"name": "req-1", "resourceClaimTemplateName": "claim-tmpl-1"}]));
    assert_eq!(run(&ps, &settings(BOTH)), devices(&[&[("res-1", 2)]]));
}

#[test]
fn unmapped_device_class_returns_error() {
    let ps = main_with(json!([{"name": "req-1", "resourceClaimTemplateName": "claim-tmpl-1"}]));
    assert_eq!(
        run(&ps, &settings(&[])),
        Charge::Inadmissible(
            "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: \"DeviceClass test-deviceclass-1 is not mapped in DRA configuration for podset main\"".into()
        )
    );
}

#[test]
fn two_containers_each_using_different_claim_templates() {
    let ps = main_with(json!([
        {"name": "req-a", "resourceClaimTemplateName": "claim-tmpl-1"},
        {"name": "req-b", "resourceClaimTemplateName": "claim-tmpl-2"}]));
    assert_eq!(
        run(&ps, &settings(BOTH)),
        devices(&[&[("res-1", 2), ("res-2", 1)]])
    );
}

/// "Two containers sharing one claim template", "Init and regular
/// container sharing one template": a template is counted once per
/// `resourceClaims` entry, however many containers use the claim.
#[test]
fn containers_sharing_one_claim_template_count_it_once() {
    let ps = main_with(json!([{"name": "req-a", "resourceClaimTemplateName": "claim-tmpl-1"}]));
    assert_eq!(run(&ps, &settings(ONE)), devices(&[&[("res-1", 2)]]));
}

#[test]
fn allocation_mode_all_returns_error() {
    let ps = main_with(json!([{"name": "req-all", "resourceClaimTemplateName": "claim-tmpl-all"}]));
    assert_eq!(
        run(&ps, &settings(ONE)),
        Charge::Inadmissible(
            "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly.allocationMode: Invalid value: \"All\": ResourceClaimTemplate claim-tmpl-all: AllocationMode 'All' is not supported".into()
        )
    );
}

#[test]
fn first_available_returns_error() {
    let ps =
        main_with(json!([{"name": "req-first", "resourceClaimTemplateName": "claim-tmpl-first"}]));
    assert_eq!(
        run(&ps, &settings(ONE)),
        Charge::Inadmissible(
            "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0]: Invalid value: null: ResourceClaimTemplate claim-tmpl-first: FirstAvailable device selection is not supported".into()
        )
    );
}

#[test]
fn exactly_and_first_available_nil_returns_error() {
    let ps =
        main_with(json!([{"name": "req-empty", "resourceClaimTemplateName": "claim-tmpl-empty"}]));
    assert_eq!(
        run(&ps, &settings(ONE)),
        Charge::Inadmissible(
            "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0]: Invalid value: null: ResourceClaimTemplate claim-tmpl-empty: Exactly must be set if FirstAvailable is nil".into()
        )
    );
}

#[test]
fn admin_access_returns_error() {
    let ps =
        main_with(json!([{"name": "req-admin", "resourceClaimTemplateName": "claim-tmpl-admin"}]));
    assert_eq!(
        run(&ps, &settings(ONE)),
        Charge::Inadmissible(
            "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly.adminAccess: Invalid value: null: ResourceClaimTemplate claim-tmpl-admin: AdminAccess is not supported".into()
        )
    );
}

/// "Device constraints are pass-through", "Device config is pass-through".
#[test]
fn constraints_and_config_pass_through() {
    for t in ["claim-tmpl-constraints", "claim-tmpl-config"] {
        let ps = main_with(json!([{"name": "r", "resourceClaimTemplateName": t}]));
        let want = if t == "claim-tmpl-constraints" { 2 } else { 1 };
        assert_eq!(run(&ps, &settings(ONE)), devices(&[&[("res-1", want)]]));
    }
}

/// `Test_countDevicesPerClass_overflow`.
#[test]
fn device_counts_sum_and_saturate() {
    let sum = template(json!([exact("r0", "gpu", 2), exact("r1", "gpu", 3)]));
    assert_eq!(
        devices_per_class(&sum, &DeviceView::default()).unwrap()["gpu"],
        5
    );
    let huge = template(json!([
        exact("r0", "gpu", i64::MAX),
        exact("r1", "gpu", i64::MAX)
    ]));
    assert_eq!(
        devices_per_class(&huge, &DeviceView::default()).unwrap()["gpu"],
        i64::MAX
    );
}

/// The workload controller: a pod naming a ResourceClaim is refused first,
/// whatever its templates.
#[test]
fn a_resource_claim_named_directly_is_inadmissible() {
    let ps = main_with(json!([
        {"name": "req-1", "resourceClaimTemplateName": "claim-tmpl-1"},
        {"name": "req-2", "resourceClaimName": "claim-2"}]));
    assert_eq!(
        run(&ps, &settings(BOTH)),
        Charge::Inadmissible(RESOURCE_CLAIMS.into())
    );
}

/// `KueueDRARejectWorkloadsWhenDRADisabled`: with the integration off, a
/// Workload using DRA is refused, not admitted on CPU alone; with both off
/// it is not charged.
#[test]
fn with_the_integration_off_a_dra_workload_is_refused() {
    let ps = main_with(json!([{"name": "req-1", "resourceClaimTemplateName": "claim-tmpl-1"}]));
    let off = Settings {
        integration: false,
        ..settings(ONE)
    };
    assert_eq!(run(&ps, &off), Charge::Inadmissible(DISABLED.into()));
    let direct = main_with(json!([{"name": "c", "resourceClaimName": "claim-2"}]));
    assert_eq!(run(&direct, &off), Charge::Inadmissible(DISABLED.into()));
    let both_off = Settings {
        reject_when_disabled: false,
        ..off.clone()
    };
    assert_eq!(run(&ps, &both_off), Charge::Nothing);
    assert_eq!(run(&main_with(json!([])), &off), Charge::Nothing);
}

/// Kueue's "failed to get claim spec" internal error: held until the
/// template exists.
#[test]
fn a_template_not_there_yet_holds_the_workload() {
    let ps = main_with(json!([{"name": "r", "resourceClaimTemplateName": "later"}]));
    assert_eq!(
        run(&ps, &settings(ONE)),
        Charge::Inadmissible(
            "spec.podSets[0].template.spec.resourceClaims[0]: Internal error: failed to get claim spec for ResourceClaimTemplate later in podset main: resourceclaimtemplates.resource.k8s.io \"later\" not found".into()
        )
    );
}

/// Per pod set, per pod: the engine multiplies by the count, and adds the
/// devices to a container request under the same name.
#[test]
fn devices_are_charged_per_pod_on_top_of_container_requests() {
    let ps = vec![
        pod_set("driver", json!([])),
        pod_set(
            "workers",
            json!([{"name": "g", "resourceClaimTemplateName": "claim-tmpl-1"}]),
        ),
    ];
    let Charge::Devices(per) = run(&ps, &settings(ONE)) else {
        panic!("charged")
    };
    let mut engine = vec![
        crate::queueing::PodSet {
            name: "driver".into(),
            count: 1,
            min_count: None,
            requests: [("cpu", 1000)].into(),
            node_selector: Default::default(),
            tolerations: vec![],
        },
        crate::queueing::PodSet {
            name: "workers".into(),
            count: 3,
            min_count: None,
            requests: [("cpu", 500), ("res-1", 1000)].into(),
            node_selector: Default::default(),
            tolerations: vec![],
        },
    ];
    add_to(&mut engine, &per);
    assert_eq!(engine[0].requests.get("res-1"), None);
    assert_eq!(engine[1].requests.get("res-1"), Some(3000));
    assert_eq!(engine[1].total_requests_at(3)["res-1"], 9000);
}

fn cel_request(name: &str, class: &str, count: i64, expr: &str) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": class, "allocationMode": "ExactCount",
        "count": count, "selectors": [{"cel": {"expression": expr}}]}})
}

fn view(classes: &[(&str, &[&str])], slices: &[(&str, &[&str])]) -> DeviceView {
    let slices: Vec<k8s_openapi::api::resource::v1::ResourceSliceSpec> = slices
        .iter()
        .map(|(driver, devices)| {
            let devices: Vec<Value> = devices.iter().map(|d| json!({"name": d})).collect();
            serde_json::from_value(json!({"driver": driver,
                "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
                "devices": devices}))
            .unwrap()
        })
        .collect();
    DeviceView::new(
        classes
            .iter()
            .map(|(c, e)| (c.to_string(), e.iter().map(|e| e.to_string()).collect()))
            .collect(),
        crate::devices::selectors::devices(&slices.iter().collect::<Vec<_>>()),
    )
}

fn run_cel(requests: Value, v: &DeviceView, s: &Settings) -> Charge {
    let t = template(requests);
    let ps = main_with(json!([{"name": "r", "resourceClaimTemplateName": "claim-tmpl-cel"}]));
    charge(&ps, |_| Some(&t), v, s)
}

const DRIVER: &str = "device.driver == \"test-driver\"";

/// "CEL selectors with DeviceClassName counts correctly".
#[test]
fn cel_selectors_with_a_device_class_count_correctly() {
    let v = view(
        &[("test-deviceclass-1", &[])],
        &[("test-driver", &["dev-0", "dev-1"])],
    );
    let got = run_cel(
        json!([cel_request("req", "test-deviceclass-1", 1, DRIVER)]),
        &v,
        &settings(ONE),
    );
    assert_eq!(got, devices(&[&[("res-1", 1)]]));
}

/// "CEL selectors pre-filtered by DeviceClass selectors".
#[test]
fn cel_selectors_are_prefiltered_by_the_class_selectors() {
    let v = view(
        &[("gpu-class", &["device.driver == \"gpu-driver\""])],
        &[
            ("gpu-driver", &["gpu-0"]),
            ("nic-driver", &["nic-0", "nic-1", "nic-2"]),
        ],
    );
    let got = run_cel(
        json!([cel_request(
            "req",
            "gpu-class",
            1,
            "device.driver == \"gpu-driver\""
        )]),
        &v,
        &settings(&[("gpu-class", "res-1")]),
    );
    assert_eq!(got, devices(&[&[("res-1", 1)]]));
}

/// "CEL selectors with unsatisfiable expression returns error" and "with
/// insufficient matching devices returns error": held until slices hold
/// enough.
#[test]
fn too_few_matching_devices_hold_the_workload() {
    let v = view(
        &[("test-deviceclass-1", &[])],
        &[("test-driver", &["dev-0", "dev-1"])],
    );
    let unsat = run_cel(
        json!([cel_request(
            "req",
            "test-deviceclass-1",
            2,
            "device.driver == \"nonexistent-driver\""
        )]),
        &v,
        &settings(ONE),
    );
    assert_eq!(unsat, Charge::Inadmissible("spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly.selectors: Internal error: ResourceClaimTemplate claim-tmpl-cel: insufficient matching devices for CEL selector in DeviceClass test-deviceclass-1: 0 device(s) match in the cluster but 2 requested".into()));
    let short = run_cel(
        json!([cel_request("req", "test-deviceclass-1", 3, DRIVER)]),
        &v,
        &settings(ONE),
    );
    assert!(
        matches!(&short, Charge::Inadmissible(m) if m.ends_with("2 device(s) match in the cluster but 3 requested")),
        "{short:?}"
    );
}

/// "Multi-request CEL selectors do not double-count devices".
#[test]
fn two_requests_do_not_count_one_device_twice() {
    let v = view(
        &[("test-deviceclass-1", &[])],
        &[("test-driver", &["dev-0"])],
    );
    let got = run_cel(
        json!([
            cel_request("req-a", "test-deviceclass-1", 1, DRIVER),
            cel_request("req-b", "test-deviceclass-1", 1, DRIVER)
        ]),
        &v,
        &settings(ONE),
    );
    assert!(
        matches!(&got, Charge::Inadmissible(m) if m.starts_with("spec.podSets[0].template.spec.resourceClaims[0].devices.requests[1].exactly.selectors: Internal error: ")
            && m.ends_with("0 device(s) match in the cluster but 1 requested")),
        "{got:?}"
    );
}

/// "Invalid CEL selector returns error".
#[test]
fn a_selector_that_does_not_compile_holds_the_workload() {
    let v = view(&[("test-deviceclass-1", &[])], &[]);
    let got = run_cel(
        json!([cel_request(
            "req",
            "test-deviceclass-1",
            1,
            "this is not valid CEL!!!"
        )]),
        &v,
        &settings(ONE),
    );
    assert!(
        matches!(&got, Charge::Inadmissible(m) if m.starts_with("spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly.selectors: Invalid value: null: ResourceClaimTemplate claim-tmpl-cel: devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: \"this is not valid CEL!!!\": CEL compilation failed: ")),
        "{got:?}"
    );
}

/// "CEL selectors with nonexistent DeviceClass returns error".
#[test]
fn a_device_class_not_there_holds_the_workload() {
    let v = view(&[], &[("test-driver", &["dev-0"])]);
    let got = run_cel(
        json!([cel_request("req", "nonexistent-class", 1, DRIVER)]),
        &v,
        &settings(&[("nonexistent-class", "res-1")]),
    );
    assert_eq!(got, Charge::Inadmissible("spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0]: Internal error: ResourceClaimTemplate claim-tmpl-cel: failed to get DeviceClass nonexistent-class: deviceclasses.resource.k8s.io \"nonexistent-class\" not found".into()));
}

/// "CEL selectors with empty DeviceClassName succeeds" (nothing to
/// charge: no class, no mapping).
#[test]
fn cel_selectors_without_a_class_succeed() {
    let v = view(&[], &[("test-driver", &["dev-0"])]);
    let got = run_cel(
        json!([cel_request("req", "", 1, DRIVER)]),
        &v,
        &settings(ONE),
    );
    assert_eq!(got, Charge::Nothing);
}
