//! Device placement decisions per second: one pod with 3 claims over 1,000
//! nodes of mixed shapes (200 each of the prototype's shape-zero, -one,
//! -two, -three and -foozer-barzer), with a quarter of the foozer pools
//! partly held by earlier pods.
//!
//!     cargo bench --bench devices
//!
//! The claims: 2 foozer devices on one NUMA node (`matchAttributes: [numa]`),
//! 1 barzer device, and 1 device of class gpu with `device.model ==
//! 'foozer-4000'`. Only shape-foozer-barzer nodes have both drivers, and
//! none of them has a foozer-4000: the third claim fails everywhere, so
//! every node is evaluated in full (the worst case: no early winner).
//! A second case drops the third claim, so shape-foozer-barzer nodes fit.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use batchgate::{
    api::devices::v1alpha1::{DeviceClaimSpec, DeviceClassSpec, DevicePoolAllocation},
    devices::{select_node, shapes, Catalog, Claim, Pool, Usage},
};

fn pools() -> Vec<Pool> {
    let mut p = Vec::new();
    for s in shapes::SHAPES {
        p.extend(shapes::generate(s, 200).unwrap_or_default());
    }
    p
}

fn catalog() -> Catalog {
    let mut c = Catalog::default();
    for (d, t) in shapes::prototype_drivers() {
        c.drivers
            .insert(d.into(), t.into_iter().map(String::from).collect());
    }
    for (name, driver) in [
        ("foozer", Some(shapes::FOOZER)),
        ("barzer", Some(shapes::BARZER)),
        ("gpu", None),
    ] {
        c.classes.insert(
            name.into(),
            DeviceClassSpec {
                device_type: "gpu".into(),
                driver: driver.map(String::from),
                ..DeviceClassSpec::default()
            },
        );
    }
    c
}

fn claim(name: &str, class: &str, count: i64, numa: bool, constraints: Option<&str>) -> Claim {
    Claim {
        name: name.into(),
        spec: DeviceClaimSpec {
            device_class: class.into(),
            min_device_count: Some(count),
            match_attributes: numa.then(|| vec!["numa".into()]),
            constraints: constraints.map(String::from),
            ..DeviceClaimSpec::default()
        },
    }
}

fn usage(pools: &[Pool]) -> Usage {
    let mut u = Usage::default();
    for p in pools
        .iter()
        .filter(|p| p.name.contains("foozer-0"))
        .step_by(4)
    {
        u.add(&[DevicePoolAllocation {
            device_pool_name: p.name.clone(),
            device_count: 1,
        }]);
    }
    u
}

fn bench(c: &mut Criterion) {
    let pools = pools();
    assert_eq!(
        pools
            .iter()
            .filter_map(|p| p.spec.node_name.as_deref())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        1000
    );
    let cat = catalog();
    let used = usage(&pools);
    let three = vec![
        claim("foozers", "foozer", 2, true, None),
        claim("barzer", "barzer", 1, false, None),
        claim(
            "big",
            "gpu",
            1,
            false,
            Some("device.model == 'foozer-4000'"),
        ),
    ];
    let s = select_node(&three, &pools, &cat, &used);
    assert!(s.node.is_none() && s.results.len() == 1000);
    let two = three[..2].to_vec();
    let s = select_node(&two, &pools, &cat, &used);
    assert_eq!(s.node.as_deref(), Some("shape-foozer-barzer-00"));

    let mut g = c.benchmark_group("placement_1000_nodes");
    g.throughput(Throughput::Elements(1));
    g.bench_function("3_claims_none_fits", |b| {
        b.iter(|| select_node(&three, &pools, &cat, &used))
    });
    g.bench_function("2_claims_200_fit", |b| {
        b.iter(|| select_node(&two, &pools, &cat, &used))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
