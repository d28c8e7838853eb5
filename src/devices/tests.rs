//! The prototype's `TestSelectNode` cases with the allocations the
//! reference derives (node `-00`: ties go to the first name), and what the
//! prototype got wrong: determinism, double booking, classes and types.

use super::{shapes::*, *};
use crate::api::devices::v1alpha1::DeviceClassSpec;

fn catalog() -> Catalog {
    let mut c = Catalog::default();
    for (d, types) in prototype_drivers() {
        c.drivers
            .insert(d.into(), types.into_iter().map(String::from).collect());
    }
    // The prototype's tests named no class ("not implemented yet"); a class
    // of the device type both foozer and barzer handle imposes nothing else.
    c.classes.insert(
        "gpu".into(),
        DeviceClassSpec {
            device_type: "gpu".into(),
            ..DeviceClassSpec::default()
        },
    );
    c.classes.insert(
        "example.com-foozer-single".into(),
        DeviceClassSpec {
            device_type: "gpu".into(),
            driver: Some(FOOZER.into()),
            max_device_count: Some(1),
            ..DeviceClassSpec::default()
        },
    );
    c.classes.insert(
        "example.com-barzer-gpu-set".into(),
        DeviceClassSpec {
            device_type: "gpu".into(),
            driver: Some(BARZER.into()),
            ..DeviceClassSpec::default()
        },
    );
    c.classes.insert(
        "sriov-nic".into(),
        DeviceClassSpec {
            device_type: "sriov-nic".into(),
            ..DeviceClassSpec::default()
        },
    );
    c.classes.insert(
        "example.com-consistent-gpu-set".into(),
        DeviceClassSpec {
            device_type: "gpu".into(),
            constraints: Some("device.vendor == 'example.com'".into()),
            match_attributes: Some(vec!["device.model".into(), "device.numa".into()]),
            ..DeviceClassSpec::default()
        },
    );
    c
}

fn claim(name: &str, driver: Option<&str>, min: Option<i64>) -> Claim {
    Claim {
        name: name.into(),
        spec: DeviceClaimSpec {
            device_class: "gpu".into(),
            driver: driver.map(String::from),
            min_device_count: min,
            ..DeviceClaimSpec::default()
        },
    }
}

fn with_constraints(mut c: Claim, constraints: &str) -> Claim {
    c.spec.constraints = Some(constraints.into());
    c
}

fn mixed() -> Vec<Pool> {
    let mut p = shape_zero(2);
    p.extend(shape_three(2));
    p
}

fn alloc(pool: &str, count: i64) -> DevicePoolAllocation {
    DevicePoolAllocation {
        device_pool_name: pool.into(),
        device_count: count,
    }
}

fn summaries(s: &Selection) -> Vec<String> {
    s.results.iter().map(NodeResult::summary).collect()
}

fn select(claims: &[Claim], pools: &[Pool]) -> Selection {
    select_node(claims, pools, &catalog(), &Usage::default())
}

#[test]
fn single_by_driver() {
    let s = select(&[claim("myclaim", Some(FOOZER), None)], &mixed());
    assert_eq!(s.node.as_deref(), Some("shape-zero-00"));
    assert_eq!(
        s.pool_allocations(),
        vec![alloc("shape-zero-00-foozer-00", 1)]
    );
    assert_eq!(
        summaries(&s),
        [
            "shape-three-00: could not satisfy these claims: myclaim",
            "shape-three-01: could not satisfy these claims: myclaim",
            "shape-zero-00: satisfied all claims with score 100",
            "shape-zero-01: satisfied all claims with score 100",
        ]
    );
    // The README's verbose output, for a barzer node and a foozer node.
    let yaml = serde_yaml::to_string(&serde_json::to_value(&s.results[0]).unwrap()).unwrap();
    let mut want =
        String::from("DeviceClaimResults:\n- best: -1\n  claimName: myclaim\n  ignoredPools:\n");
    for i in 0..4 {
        want += &format!("  - deviceCount: 0\n    failureReason: claim and pool driver do not match\n    poolName: shape-three-00-barzer-0{i}\n");
    }
    want += "  poolSetResults: null\nNodeName: shape-three-00\n";
    assert_eq!(yaml, want);
    let yaml = serde_yaml::to_string(&serde_json::to_value(&s.results[2]).unwrap()).unwrap();
    assert_eq!(
        yaml,
        "DeviceClaimResults:\n- best: 0\n  claimName: myclaim\n  poolSetResults:\n  - poolResults:\n    - deviceCount: 1\n      poolName: shape-zero-00-foozer-00\n    score: 100\nNodeName: shape-zero-00\n"
    );
}

#[test]
fn single_with_constraint_met() {
    let c = with_constraints(
        claim("myclaim", None, None),
        "device.model == 'foozer-1000'",
    );
    let s = select(&[c], &mixed());
    assert_eq!(
        s.pool_allocations(),
        vec![alloc("shape-zero-00-foozer-00", 1)]
    );
    let barzer = &s.results[0].device_claim_results[0];
    assert_eq!(barzer.ignored_pools.len(), 4);
    assert!(barzer
        .ignored_pools
        .iter()
        .all(|p| p.failure_reason.as_deref() == Some(CONSTRAINTS_NOT_MET)));
}

#[test]
fn single_with_constraint_not_met() {
    let c = with_constraints(
        claim("myclaim", None, None),
        "device.model == 'foozer-8000'",
    );
    let s = select(&[c], &mixed());
    assert_eq!(s.node, None);
    assert!(s.pool_allocations().is_empty());
    for r in &s.results {
        let c = &r.device_claim_results[0];
        assert!(!c.ignored_pools.is_empty());
        assert!(c
            .ignored_pools
            .iter()
            .all(|p| p.failure_reason.as_deref() == Some(CONSTRAINTS_NOT_MET)));
    }
}

#[test]
fn multiple_single_pool() {
    let s = select(&[claim("myclaim", Some(FOOZER), Some(2))], &shape_zero(2));
    assert_eq!(
        s.pool_allocations(),
        vec![alloc("shape-zero-00-foozer-00", 2)]
    );
}

#[test]
fn split_across_pools() {
    let s = select(&[claim("myclaim", Some(FOOZER), Some(4))], &shape_one(2));
    assert_eq!(
        s.pool_allocations(),
        vec![
            alloc("shape-one-00-foozer-00", 2),
            alloc("shape-one-00-foozer-01", 2)
        ]
    );
    let sets = s.results[0].device_claim_results[0]
        .pool_set_results
        .clone()
        .unwrap();
    assert_eq!(sets.len(), 3);
    for single in &sets[..2] {
        assert_eq!(single.score, 0);
        assert_eq!(
            single.failure_reason.as_deref(),
            Some("unable to satisfy 2 of 4 device requests")
        );
    }
    assert_eq!(sets[2].score, 100);
    assert_eq!(s.results[0].device_claim_results[0].best, 2);
}

fn foozer_and_barzer() -> Vec<Claim> {
    vec![
        claim("foozer-claim", Some(FOOZER), Some(2)),
        claim("barzer-claim", Some(BARZER), Some(2)),
    ]
}

#[test]
fn two_claims_not_satisfiable_by_a_single_node() {
    let s = select(&foozer_and_barzer(), &mixed());
    assert_eq!(s.node, None);
    assert_eq!(
        summaries(&s),
        [
            "shape-three-00: could not satisfy these claims: foozer-claim",
            "shape-three-01: could not satisfy these claims: foozer-claim",
            "shape-zero-00: could not satisfy these claims: barzer-claim",
            "shape-zero-01: could not satisfy these claims: barzer-claim",
        ]
    );
}

#[test]
fn two_claims_satisfiable_by_a_single_node() {
    let s = select(&foozer_and_barzer(), &foozer_barzer(2));
    assert_eq!(
        s.pool_allocations(),
        vec![
            alloc("shape-foozer-barzer-00-foozer-00", 2),
            alloc("shape-foozer-barzer-00-barzer-00", 2)
        ]
    );
    // Four equal single-pool sets per claim; the first wins.
    let c = &s.results[0].device_claim_results[0];
    assert_eq!(c.pool_set_results.as_ref().unwrap().len(), 4);
    assert_eq!(c.best, 0);
}

#[test]
fn claim_cannot_be_met_due_to_numa_match_attribute() {
    let mut c = claim("myclaim", Some(FOOZER), Some(4));
    c.spec.match_attributes = Some(vec!["numa".into()]);
    let s = select(&[c], &shape_one(2));
    assert_eq!(s.node, None);
    let sets = s.results[0].device_claim_results[0]
        .pool_set_results
        .clone()
        .unwrap();
    let pair = &sets[2];
    assert_eq!(
        pair.pool_results[1].failure_reason.as_deref(),
        Some(MATCH_ATTRIBUTES_FAILED)
    );
    assert_eq!(
        pair.failure_reason.as_deref(),
        Some("unable to satisfy 2 of 4 device requests")
    );
}

#[test]
fn the_choice_does_not_depend_on_input_order() {
    let claims = [claim("myclaim", Some(FOOZER), Some(2))];
    let mut pools = mixed();
    pools.extend(shape_one(3));
    let first = select(&claims, &pools);
    for rotation in 0..pools.len() {
        let mut p = pools.clone();
        p.rotate_left(rotation);
        if rotation % 2 == 1 {
            p.reverse();
        }
        assert_eq!(select(&claims, &p), first, "rotation {rotation}");
    }
    assert_eq!(first.node.as_deref(), Some("shape-one-00"));
}

#[test]
fn claims_of_one_pod_do_not_share_devices() {
    // The prototype satisfied both from the single 2-device pool.
    let two = [
        claim("a", Some(FOOZER), Some(2)),
        claim("b", Some(FOOZER), Some(2)),
    ];
    let s = select(&two, &shape_zero(2));
    assert_eq!(s.node, None);
    assert_eq!(
        s.results[0].explain(),
        "shape-zero-00: could not satisfy these claims: b (no available devices)"
    );
    // Two pools: one each.
    let s = select(&two, &shape_one(1));
    assert_eq!(
        s.allocations
            .iter()
            .map(|a| a.allocations.clone())
            .collect::<Vec<_>>(),
        vec![
            vec![alloc("shape-one-00-foozer-00", 2)],
            vec![alloc("shape-one-00-foozer-01", 2)]
        ]
    );
}

#[test]
fn devices_held_by_other_pods_are_not_booked_again() {
    let c = [claim("myclaim", Some(FOOZER), Some(2))];
    let mut used = Usage::default();
    used.add(&[alloc("shape-zero-00-foozer-00", 1)]);
    let s = select_node(&c, &shape_zero(2), &catalog(), &used);
    assert_eq!(
        s.pool_allocations(),
        vec![alloc("shape-zero-01-foozer-00", 2)]
    );
    used.add(&[alloc("shape-zero-01-foozer-00", 2)]);
    let s = select_node(&c, &shape_zero(2), &catalog(), &used);
    assert_eq!(s.node, None);
    assert_eq!(
        s.reason(4),
        "0/2 nodes with device pools can satisfy the device claims: shape-zero-00: could not satisfy these claims: myclaim (unable to satisfy 1 of 2 device requests); shape-zero-01: could not satisfy these claims: myclaim (no available devices)"
    );
}

#[test]
fn a_pod_set_is_placed_on_one_node_pod_by_pod() {
    let c = [claim("gpus", Some(FOOZER), Some(2))];
    let g = place_group(&c, 2, &shape_one(2), &catalog(), &Usage::default()).unwrap();
    assert_eq!(g.node_name, "shape-one-00");
    let pools: Vec<_> = g.all_allocations().cloned().collect();
    assert_eq!(
        pools,
        vec![
            alloc("shape-one-00-foozer-00", 2),
            alloc("shape-one-00-foozer-01", 2)
        ]
    );
    let mut used = Usage::default();
    used.add(&pools);
    let g = place_group(&c, 2, &shape_one(2), &catalog(), &used).unwrap();
    assert_eq!(g.node_name, "shape-one-01");
    // Three pods do not fit on any one node.
    let e = place_group(&c, 3, &shape_one(2), &catalog(), &Usage::default()).unwrap_err();
    assert!(e.contains("all 3 pods"), "{e}");
}

#[test]
fn the_class_driver_type_constraints_and_counts_are_honoured() {
    let cat = catalog();
    let of = |class: &str, min: Option<i64>| Claim {
        name: "c".into(),
        spec: DeviceClaimSpec {
            device_class: class.into(),
            min_device_count: min,
            ..DeviceClaimSpec::default()
        },
    };
    // The class's driver.
    let s = select_node(
        &[of("example.com-barzer-gpu-set", None)],
        &foozer_barzer(1),
        &cat,
        &Usage::default(),
    );
    assert_eq!(
        s.pool_allocations(),
        vec![alloc("shape-foozer-barzer-00-barzer-00", 1)]
    );
    let r = &s.results[0].device_claim_results[0];
    assert!(r
        .ignored_pools
        .iter()
        .all(|p| p.pool_name.contains("foozer-0")
            && p.failure_reason.as_deref() == Some(DRIVER_MISMATCH)));
    // The device type: only barzer's driver handles sriov-nic.
    let s = select_node(
        &[of("sriov-nic", None)],
        &foozer_barzer(1),
        &cat,
        &Usage::default(),
    );
    assert_eq!(
        s.pool_allocations(),
        vec![alloc("shape-foozer-barzer-00-barzer-00", 1)]
    );
    assert_eq!(
        s.results[0].device_claim_results[0].ignored_pools[0]
            .failure_reason
            .as_deref(),
        Some("pool driver does not handle device type \"sriov-nic\"")
    );
    // Counts within the class's bounds.
    assert_eq!(
        resolve(&of("example.com-foozer-single", Some(2)), &cat)
            .unwrap_err()
            .to_string(),
        "minDeviceCount 2 is greater than the class's maxDeviceCount 1"
    );
    // A claim driver against the class's.
    let mut c = of("example.com-foozer-single", None);
    c.spec.driver = Some(BARZER.into());
    assert_eq!(
        resolve(&c, &cat).unwrap_err().to_string(),
        "claim driver \"example.com-barzer\" does not match class driver \"example.com-foozer\""
    );
    // An unknown class fails every node, naming it.
    let s = select_node(&[of("nope", None)], &shape_zero(1), &cat, &Usage::default());
    assert_eq!(
        s.reason(4),
        "0/1 nodes with device pools can satisfy the device claims: shape-zero-00: could not satisfy these claims: c (device class \"nope\" not found)"
    );
    // Class constraints and match attributes (written `device.<name>`):
    // 4 devices of one model on one NUMA node fit only shape-two.
    let mut pools = shape_one(1);
    pools.extend(shape_two(1));
    let s = select_node(
        &[of("example.com-consistent-gpu-set", Some(4))],
        &pools,
        &cat,
        &Usage::default(),
    );
    assert_eq!(s.node.as_deref(), Some("shape-two-00"));
    assert_eq!(
        s.pool_allocations(),
        vec![alloc("shape-two-00-foozer-00", 4)]
    );
    // Claim constraints are ANDed with the class's.
    let mut c = of("example.com-consistent-gpu-set", None);
    c.spec.constraints = Some("device.model == 'barzer-1000'".into());
    let s = select_node(&[c], &foozer_barzer(1), &cat, &Usage::default());
    assert_eq!(
        s.pool_allocations(),
        vec![alloc("shape-foozer-barzer-00-barzer-00", 1)]
    );
}

#[test]
fn shapes_are_the_prototypes() {
    let names: Vec<String> = foozer_barzer(1).into_iter().map(|p| p.name).collect();
    assert_eq!(names.len(), 8);
    assert_eq!(names[0], "shape-foozer-barzer-00-foozer-00");
    assert_eq!(names[1], "shape-foozer-barzer-00-barzer-00");
    assert_eq!(names[5], "shape-foozer-barzer-00-barzer-02");
    let three = shape_three(2);
    assert_eq!(three[7].name, "shape-three-01-barzer-03");
    assert_eq!(three[7].spec.device_count, 4);
    assert_eq!(shape_two(1)[0].spec.device_count, 4);
    assert_eq!(shape_one(1).len(), 2);
    for s in SHAPES {
        assert!(generate(s, 1).is_some(), "{s}");
    }
    assert!(generate("shape-four", 1).is_none());
}
