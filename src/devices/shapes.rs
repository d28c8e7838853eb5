//! The k8srm prototype's generated node shapes (`pkg/gen` at 840734a), as
//! data: nodes `<shape>-NN`, each with DevicePools `<node>-<base>-NN` (one
//! per NUMA node), attributes `vendor`, `model`, `firmwareVersion`,
//! `driverVersion` and `numa`.

use crate::api::devices::v1alpha1::{Attribute, DevicePoolSpec};

use super::Pool;

pub const FOOZER: &str = "example.com-foozer";
pub const BARZER: &str = "example.com-barzer";

/// The shape names [`generate`] knows, in the prototype's order.
pub const SHAPES: [&str; 5] = [
    "shape-zero",
    "shape-one",
    "shape-two",
    "shape-three",
    "shape-foozer-barzer",
];

/// One kind of device pool: base name, driver and attributes.
#[derive(Debug, Clone, Copy)]
struct Kind {
    base: &'static str,
    driver: &'static str,
    model: &'static str,
    firmware: &'static str,
}

const FOOZER_1000: Kind = Kind {
    base: "foozer",
    driver: FOOZER,
    model: "foozer-1000",
    firmware: "4.2.1-gen3",
};
const FOOZER_4000: Kind = Kind {
    base: "foozer",
    driver: FOOZER,
    model: "foozer-4000",
    firmware: "4.2.1-gen7",
};
const BARZER_1000: Kind = Kind {
    base: "barzer",
    driver: BARZER,
    model: "barzer-1000",
    firmware: "1.1.1",
};

fn pool(node: &str, kind: Kind, count: i64, numa: usize) -> Pool {
    Pool {
        name: format!("{node}-{}-{numa:02}", kind.base),
        spec: DevicePoolSpec {
            node_name: Some(node.to_string()),
            driver: kind.driver.to_string(),
            attributes: vec![
                Attribute::string("vendor", "example.com"),
                Attribute::string("model", kind.model),
                Attribute::sem_ver("firmwareVersion", kind.firmware),
                Attribute::sem_ver("driverVersion", "1.8.2"),
                Attribute::string("numa", &numa.to_string()),
            ],
            device_count: count,
        },
    }
}

fn nodes(base: &str, n: usize, per_node: impl Fn(&str) -> Vec<Pool>) -> Vec<Pool> {
    (0..n)
        .flat_map(|i| per_node(&format!("{base}-{i:02}")))
        .collect()
}

/// One NUMA node with a pool of 2 foozer-1000.
pub fn shape_zero(n: usize) -> Vec<Pool> {
    nodes("shape-zero", n, |node| vec![pool(node, FOOZER_1000, 2, 0)])
}

/// Two NUMA nodes, each with a pool of 2 foozer-1000.
pub fn shape_one(n: usize) -> Vec<Pool> {
    nodes("shape-one", n, |node| {
        (0..2)
            .map(|numa| pool(node, FOOZER_1000, 2, numa))
            .collect()
    })
}

/// Four NUMA nodes, each with a pool of 4 foozer-4000.
pub fn shape_two(n: usize) -> Vec<Pool> {
    nodes("shape-two", n, |node| {
        (0..4)
            .map(|numa| pool(node, FOOZER_4000, 4, numa))
            .collect()
    })
}

/// Four NUMA nodes, each with a pool of 4 barzer-1000.
pub fn shape_three(n: usize) -> Vec<Pool> {
    nodes("shape-three", n, |node| {
        (0..4)
            .map(|numa| pool(node, BARZER_1000, 4, numa))
            .collect()
    })
}

/// Four NUMA nodes, each with a foozer pool then a barzer pool of 2.
pub fn foozer_barzer(n: usize) -> Vec<Pool> {
    nodes("shape-foozer-barzer", n, |node| {
        (0..4)
            .flat_map(|numa| {
                [
                    pool(node, FOOZER_1000, 2, numa),
                    pool(node, BARZER_1000, 2, numa),
                ]
            })
            .collect()
    })
}

/// `n` nodes of a named shape.
pub fn generate(shape: &str, n: usize) -> Option<Vec<Pool>> {
    Some(match shape {
        "shape-zero" => shape_zero(n),
        "shape-one" => shape_one(n),
        "shape-two" => shape_two(n),
        "shape-three" => shape_three(n),
        "shape-foozer-barzer" => foozer_barzer(n),
        _ => return None,
    })
}

/// The prototype's `testdata/drivers.yaml`: driver → device types.
pub fn prototype_drivers() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        (FOOZER, vec!["gpu"]),
        (BARZER, vec!["gpu", "sriov-nic"]),
        ("sriov-nic", vec!["sriov-nic"]),
        ("vlan", vec!["vlan"]),
    ]
}
