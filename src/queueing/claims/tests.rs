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
        ..PodSetClaims::default()
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
            .map(|m| PodSetCharge {
                devices: m.iter().map(|(r, n)| (r.to_string(), *n)).collect(),
                ..PodSetCharge::default()
            })
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
            node_affinity: Default::default(),
            tolerations: vec![],
            topology: None,
        },
        crate::queueing::PodSet {
            name: "workers".into(),
            count: 3,
            min_count: None,
            requests: [("cpu", 500), ("res-1", 1000)].into(),
            node_selector: Default::default(),
            node_affinity: Default::default(),
            tolerations: vec![],
            topology: None,
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

// Extended resources backed by DRA: Kueue v0.19.2's
// `pkg/dra/extended_resources_test.go` (`TestIsExtendedResourceName`,
// `TestSelectedDeviceClass`, `TestResolveExtendedResourceQuota`).

#[test]
fn extended_resource_names_are_qualified_and_not_native() {
    for (name, want) in [
        ("cpu", false),
        ("memory", false),
        ("ephemeral-storage", false),
        ("nvidia.com/gpu", true),
        ("example.com/gpu", true),
        ("gpu", false),
        ("hugepages-2Mi", false),
        ("kubernetes.io/something", false),
    ] {
        assert_eq!(is_extended(name), want, "{name}");
    }
}

#[test]
fn the_class_created_last_backs_an_extended_resource_ties_to_the_first_name() {
    type Case<'a> = (&'a str, &'a [(&'a str, i64)], &'a str);
    let cases: &[Case] = &[
        ("one class is the one", &[("a", 100)], "a"),
        (
            "the class created later wins",
            &[("a", 100), ("b", 200)],
            "b",
        ),
        (
            "and wins from either end of the list",
            &[("b", 200), ("a", 100)],
            "b",
        ),
        (
            "created together, the lexicographically first name wins",
            &[("b", 100), ("a", 100)],
            "a",
        ),
        (
            "and that tie does not depend on the list order either",
            &[("a", 100), ("b", 100)],
            "a",
        ),
        (
            "a later class beats an earlier one with a smaller name",
            &[("a", 100), ("z", 200)],
            "z",
        ),
        (
            "the tie-break applies among the latest only",
            &[("a", 300), ("z", 100), ("b", 300)],
            "a",
        ),
    ];
    for (name, classes, want) in cases {
        assert_eq!(
            selected_class(classes.iter().copied()),
            Some(*want),
            "{name}"
        );
    }
}

fn ext(container: &str, name: &str, quantity: &str) -> ExtendedRequest {
    ExtendedRequest::new(container.into(), name, quantity).expect("a positive quantity")
}

/// Kueue's fixture classes: gpu.nvidia.com backs example.com/gpu,
/// mig.nvidia.com backs nvidia.com/mig-1g.10gb, class-a and class-b back
/// vendor.example/a and /b.
fn extended_view(backing: &[(&str, &str)]) -> DeviceView {
    let mut v = DeviceView::default();
    for (resource, class) in backing {
        v.extended.insert(resource.to_string(), class.to_string());
    }
    v
}

fn run_extended(requests: Vec<ExtendedRequest>, v: &DeviceView, s: &Settings) -> Charge {
    let ps = vec![PodSetClaims {
        name: "main".into(),
        extended: requests,
        ..PodSetClaims::default()
    }];
    charge(&ps, |_| None, v, s)
}

fn replacing(charged: &[(&str, i64)], replaced: &[&str]) -> Charge {
    Charge::Devices(vec![PodSetCharge {
        devices: charged.iter().map(|(r, n)| (r.to_string(), *n)).collect(),
        replaced: replaced.iter().map(|r| r.to_string()).collect(),
    }])
}

const GPU_BACKED: &[(&str, &str)] = &[
    ("example.com/gpu", "gpu.nvidia.com"),
    ("nvidia.com/mig-1g.10gb", "mig.nvidia.com"),
];

#[test]
fn an_extended_resource_backed_by_dra_is_charged_and_replaced() {
    let v = extended_view(GPU_BACKED);
    let s = settings(&[]);
    // "workload with extended resource backed by DRA"
    assert_eq!(
        run_extended(vec![ext("containers[0]", "example.com/gpu", "2")], &v, &s),
        replacing(&[("example.com/gpu", 2)], &["example.com/gpu"])
    );
    // "workload with multiple extended resources"
    assert_eq!(
        run_extended(
            vec![
                ext("containers[0]", "example.com/gpu", "1"),
                ext("containers[0]", "nvidia.com/mig-1g.10gb", "2"),
            ],
            &v,
            &s
        ),
        replacing(
            &[("example.com/gpu", 1), ("nvidia.com/mig-1g.10gb", 2)],
            &["example.com/gpu", "nvidia.com/mig-1g.10gb"]
        )
    );
    // "workload with multiple containers"
    assert_eq!(
        run_extended(
            vec![
                ext("containers[0]", "example.com/gpu", "1"),
                ext("containers[1]", "example.com/gpu", "2"),
            ],
            &v,
            &s
        ),
        replacing(&[("example.com/gpu", 3)], &["example.com/gpu"])
    );
    // "init containers use max, regular containers use sum"
    assert_eq!(
        run_extended(
            vec![
                ext("initContainers[0]", "example.com/gpu", "4"),
                ext("initContainers[1]", "example.com/gpu", "1"),
                ext("containers[0]", "example.com/gpu", "1"),
                ext("containers[1]", "example.com/gpu", "2"),
            ],
            &v,
            &s
        ),
        replacing(&[("example.com/gpu", 4)], &["example.com/gpu"])
    );
}

#[test]
fn an_extended_resource_no_class_backs_is_left_to_the_plain_quota() {
    let s = settings(&[]);
    // "... not backed by DRA (no matching DeviceClass)", and its
    // fractional variant: not DRA's to refuse.
    for q in ["2", "500m"] {
        assert_eq!(
            run_extended(
                vec![ext("containers[0]", "example.com/gpu", q)],
                &DeviceView::default(),
                &s
            ),
            Charge::Nothing
        );
    }
    // "workload with no extended resources"
    assert_eq!(
        run_extended(vec![], &extended_view(GPU_BACKED), &s),
        Charge::Nothing
    );
}

#[test]
fn names_sharing_a_quota_key_each_aggregate_before_they_are_summed() {
    let v = extended_view(&[
        ("vendor.example/a", "class-a"),
        ("vendor.example/b", "class-b"),
    ]);
    let s = settings(&[("class-a", "gpu-claims"), ("class-b", "gpu-claims")]);
    // "two extended resource names sharing a quota key are not collapsed
    // by cross-container aggregation": 5 + 5, not max(5, 5).
    assert_eq!(
        run_extended(
            vec![
                ext("initContainers[0]", "vendor.example/a", "5"),
                ext("containers[0]", "vendor.example/b", "5"),
            ],
            &v,
            &s
        ),
        replacing(
            &[("gpu-claims", 10)],
            &["vendor.example/a", "vendor.example/b"]
        )
    );
}

#[test]
fn a_mapped_class_charges_its_quota_resource_and_the_later_class_decides() {
    let s = settings(&[("gpu.nvidia.com", "gpu-claims")]);
    // "extended resource uses deviceClassMappings logical name when
    // DeviceClass is mapped"
    assert_eq!(
        run_extended(
            vec![ext("containers[0]", "example.com/gpu", "1")],
            &extended_view(GPU_BACKED),
            &s
        ),
        replacing(&[("gpu-claims", 1)], &["example.com/gpu"])
    );
    // "the mapping of the later DeviceClass decides the quota key": the
    // shell picks omega (created later) with `selected_class`.
    let s = settings(&[("omega.example.com", "omega-claims")]);
    let later = selected_class([("alpha.example.com", 100), ("omega.example.com", 200)]).unwrap();
    let v = extended_view(&[("example.com/gpu", later)]);
    assert_eq!(
        run_extended(vec![ext("containers[0]", "example.com/gpu", "1")], &v, &s),
        replacing(&[("omega-claims", 1)], &["example.com/gpu"])
    );
    // "an unmapped later DeviceClass leaves the extended resource name as
    // the quota key"
    let s = settings(&[("alpha.example.com", "alpha-claims")]);
    assert_eq!(
        run_extended(vec![ext("containers[0]", "example.com/gpu", "1")], &v, &s),
        replacing(&[("example.com/gpu", 1)], &["example.com/gpu"])
    );
}

#[test]
fn a_fractional_or_overflowing_dra_backed_request_is_refused_with_kueues_words() {
    let v = extended_view(GPU_BACKED);
    let s = settings(&[]);
    assert_eq!(
        run_extended(vec![ext("containers[0]", "example.com/gpu", "500m")], &v, &s),
        Charge::Inadmissible("spec.podSets[0].template.spec.containers[0].resources.requests.example.com/gpu: Invalid value: \"500m\": extended resource quantity must be an integer".into())
    );
    // Two halves making a whole do not hide each other.
    let Charge::Inadmissible(m) = run_extended(
        vec![
            ext("containers[0]", "example.com/gpu", "500m"),
            ext("containers[1]", "example.com/gpu", "500m"),
        ],
        &v,
        &s,
    ) else {
        panic!("refused")
    };
    assert!(m.starts_with("[spec.podSets[0].template.spec.containers[0]"));
    assert!(m.contains(
        "spec.podSets[0].template.spec.containers[1].resources.requests.example.com/gpu"
    ));
    let Charge::Inadmissible(m) = run_extended(
        vec![
            ext("containers[0]", "example.com/gpu", "9e18"),
            ext("containers[1]", "example.com/gpu", "9e18"),
        ],
        &v,
        &s,
    ) else {
        panic!("refused")
    };
    assert!(
        m.starts_with("spec.podSets[0].template.spec.containers[0].resources.requests.example.com/gpu: Invalid value: ")
            && m.ends_with("total extended resource quantity overflows int64"),
        "{m}"
    );
}

#[test]
fn an_extended_resource_whose_class_is_charged_by_counters_is_refused() {
    let mut s = settings(&[("mig.nvidia.com", "gpu.memory")]);
    s.counters
        .insert("mig.nvidia.com".into(), vec![memory_source()]);
    assert_eq!(
        run_extended(
            vec![ext("containers[0]", "nvidia.com/mig-1g.10gb", "1")],
            &extended_view(GPU_BACKED),
            &s
        ),
        Charge::Inadmissible("spec.podSets[0].template.spec.containers[0]: Invalid value: \"nvidia.com/mig-1g.10gb\": extended resource nvidia.com/mig-1g.10gb resolves to DeviceClass mig.nvidia.com with counters configured; use ResourceClaimTemplates with CEL selectors for counter-based quota".into())
    );
    // With the gate off the class is charged per device as mapped.
    s.partitionable = false;
    assert_eq!(
        run_extended(
            vec![ext("containers[0]", "nvidia.com/mig-1g.10gb", "1")],
            &extended_view(GPU_BACKED),
            &s
        ),
        replacing(&[("gpu.memory", 1)], &["nvidia.com/mig-1g.10gb"])
    );
}

#[test]
fn replaced_extended_resources_leave_the_pod_requests_before_the_charge_is_added() {
    let mut engine = vec![crate::queueing::PodSet {
        name: "main".into(),
        count: 2,
        min_count: None,
        requests: [("cpu", 1000), ("example.com/gpu", 2000)].into(),
        node_selector: Default::default(),
        node_affinity: Default::default(),
        tolerations: vec![],
        topology: None,
    }];
    let Charge::Devices(per) = replacing(&[("gpu-claims", 2)], &["example.com/gpu"]) else {
        unreachable!()
    };
    add_to(&mut engine, &per);
    assert_eq!(engine[0].requests.get("example.com/gpu"), None);
    assert_eq!(engine[0].requests.get("gpu-claims"), Some(2000));
    assert_eq!(engine[0].requests.get("cpu"), Some(1000));
}

// Partitionable devices charged by counters: Kueue v0.19.2's
// `pkg/dra/counters_test.go` (`TestComputeCounterCharges`,
// `TestGroupSlicesByPool`) and the charge end to end over a view.

fn memory_source() -> CounterSource {
    CounterSource {
        resource: "gpu.memory".into(),
        driver: "gpu.nvidia.com".into(),
        counter: "memory".into(),
        selector: "device.driver == \"gpu.nvidia.com\"".into(),
    }
}

#[test]
fn a_counter_charges_its_largest_value_times_the_count_saturating() {
    let mi = 1024 * 1024;
    let cases: &[(&str, &[&str], i64, Option<i64>)] = &[
        ("single device, count=1", &["9856Mi"], 1, Some(9856 * mi)),
        (
            "single device, count=3",
            &["9856Mi"],
            3,
            Some(9856 * mi * 3),
        ),
        (
            "multiple devices same value, MAX is same",
            &["9856Mi", "9856Mi", "9856Mi"],
            1,
            Some(9856 * mi),
        ),
        (
            "multiple devices different values, MAX wins",
            &["9856Mi", "40Gi"],
            1,
            Some(40 * 1024 * mi),
        ),
        ("no consumesCounters", &[], 1, None),
        (
            "count multiplication saturates instead of overflowing int64",
            &["8000000000000000000"],
            2,
            Some(i64::MAX),
        ),
        (
            "counter that Value() would truncate is clamped before multiply",
            &["10000000000000000000"],
            2,
            Some(i64::MAX),
        ),
        (
            "counter above int64 is clamped at count=1",
            &["9223372036854775808"],
            1,
            Some(i64::MAX),
        ),
        ("negative counter is clamped to zero", &["-5"], 3, Some(0)),
        (
            "fractional counter rounds up at count=1",
            &["1500m"],
            1,
            Some(2),
        ),
        (
            "sub-integer negative counter is clamped to zero",
            &["-500m"],
            1,
            Some(0),
        ),
    ];
    for (name, values, count, want) in cases {
        let got = counters::largest_times(values.iter().map(|v| Some(counters::units(v))), *count);
        assert_eq!(got, *want, "{name}");
    }
}

/// A ResourceSlice of MIG partitions: (name, profile, memory) each.
fn mig_slice(pool: &str, generation: i64, count: i64, devices: &[(&str, &str, &str)]) -> Value {
    let devices: Vec<Value> = devices
        .iter()
        .map(|(n, profile, memory)| {
            json!({"name": n, "attributes": {"gpu.nvidia.com/profile": {"string": profile}},
                "consumesCounters": [{"counterSet": "gpu-counter-set",
                    "counters": {"memory": {"value": memory}}}]})
        })
        .collect();
    json!({"driver": "gpu.nvidia.com",
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": devices})
}

fn counter_view(slices: &[Value]) -> DeviceView {
    let slices: Vec<k8s_openapi::api::resource::v1::ResourceSliceSpec> = slices
        .iter()
        .map(|s| serde_json::from_value(s.clone()).unwrap())
        .collect();
    DeviceView::with_slices(
        [("mig.nvidia.com".to_string(), vec![])].into(),
        &slices.iter().collect::<Vec<_>>(),
    )
}

#[test]
fn a_pool_counts_at_its_newest_generation_once_complete() {
    let complete = |slices: &[Value]| -> Vec<bool> {
        counter_view(slices)
            .meta
            .iter()
            .map(|m| m.complete)
            .collect()
    };
    let d = |n: &'static str| [(n, "1g.10gb", "10Gi")];
    // "single pool, complete" / "single pool, incomplete"
    assert_eq!(
        complete(&[mig_slice("p", 1, 2, &d("a")), mig_slice("p", 1, 2, &d("b"))]),
        [true, true]
    );
    assert_eq!(complete(&[mig_slice("p", 1, 2, &d("a"))]), [false]);
    // "higher generation replaces older"
    assert_eq!(
        complete(&[
            mig_slice("p", 1, 2, &d("old-a")),
            mig_slice("p", 1, 2, &d("old-b")),
            mig_slice("p", 2, 2, &d("new-a")),
            mig_slice("p", 2, 2, &d("new-b")),
        ]),
        [false, false, true, true]
    );
    // "mixed generation, incomplete new"
    assert_eq!(
        complete(&[
            mig_slice("p", 1, 2, &d("old-a")),
            mig_slice("p", 1, 2, &d("old-b")),
            mig_slice("p", 2, 2, &d("new-a")),
        ]),
        [false, false, false]
    );
}

fn mig_settings() -> Settings {
    let mut s = settings(&[("mig.nvidia.com", "gpu.memory")]);
    s.counters
        .insert("mig.nvidia.com".into(), vec![memory_source()]);
    s
}

fn mig_request(profile: &str, count: i64) -> Value {
    cel_request(
        "mig",
        "mig.nvidia.com",
        count,
        &format!("device.attributes[\"gpu.nvidia.com\"].profile == \"{profile}\""),
    )
}

#[test]
fn a_mig_partition_is_charged_its_memory_not_a_device() {
    let v = counter_view(&[mig_slice(
        "node-1-gpu-0",
        1,
        1,
        &[
            ("mig-1g-0", "1g.10gb", "9856Mi"),
            ("mig-1g-1", "1g.10gb", "9856Mi"),
            ("mig-3g-0", "3g.40gb", "40Gi"),
        ],
    )]);
    let got = run_cel(json!([mig_request("1g.10gb", 2)]), &v, &mig_settings());
    assert_eq!(got, devices(&[&[("gpu.memory", 2 * 9856 * 1024 * 1024)]]));
    let got = run_cel(json!([mig_request("3g.40gb", 1)]), &v, &mig_settings());
    assert_eq!(got, devices(&[&[("gpu.memory", 40 * 1024 * 1024 * 1024)]]));
}

#[test]
fn a_counter_charge_it_cannot_make_holds_the_workload_with_kueues_words() {
    let s = mig_settings();
    let at = "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0]";
    // Fewer partitions than asked, in a complete pool: Kueue's CEL check
    // speaks first.
    let v = counter_view(&[mig_slice("p", 1, 1, &[("mig-1g-0", "1g.10gb", "9856Mi")])]);
    let Charge::Inadmissible(m) = run_cel(json!([mig_request("1g.10gb", 2)]), &v, &s) else {
        panic!("held")
    };
    assert!(
        m.contains("insufficient matching devices for CEL selector in DeviceClass mig.nvidia.com: 1 device(s) match in the cluster but 2 requested"),
        "{m}"
    );
    // A pool still being published offers nothing to the counter charge.
    let v = counter_view(&[mig_slice("p", 1, 2, &[("mig-1g-0", "1g.10gb", "9856Mi")])]);
    assert_eq!(
        run_cel(json!([mig_request("1g.10gb", 1)]), &v, &s),
        Charge::Inadmissible(format!("{at}: Internal error: insufficient matching devices for counter driver: 0 device(s) match but 1 requested"))
    );
    // Devices without the counter.
    let no_counter = json!({"driver": "gpu.nvidia.com",
        "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "whole-0", "attributes": {"gpu.nvidia.com/profile": {"string": "1g.10gb"}}}]});
    let v = counter_view(&[no_counter]);
    assert_eq!(
        run_cel(json!([mig_request("1g.10gb", 1)]), &v, &s),
        Charge::Inadmissible(format!("{at}: Internal error: matched devices have no consumesCounters entry for counter \"memory\""))
    );
}

#[test]
fn with_partitionable_devices_off_a_counter_class_is_charged_per_device() {
    let mut s = mig_settings();
    s.partitionable = false;
    let v = counter_view(&[mig_slice("p", 1, 1, &[("mig-1g-0", "1g.10gb", "9856Mi")])]);
    assert_eq!(
        run_cel(json!([mig_request("1g.10gb", 1)]), &v, &s),
        devices(&[&[("gpu.memory", 1)]])
    );
}
