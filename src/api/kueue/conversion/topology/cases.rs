//! Kueue v0.19.2's tables for the topology-assignment encoding
//! (`pkg/util/tas/tas_assignment_test.go`), ported case by case; each
//! case's name is `<upstream test>/<upstream case>`.
//!
//! Where upstream compares with a v1beta2 struct, the expected value here
//! is the JSON Go's `encoding/json` writes for that struct (fields in
//! declaration order, `omitempty` honoured), and ours is written the same
//! way ([`go_json`]) and compared byte for byte.
//!
//! Not ported, for want of an equivalent in batchgate:
//! - `TestV1Beta2FromInternal_forNil`, `TestInternalFromV1Beta2_forNil`,
//!   `TestInternalSeqFromV1Beta2_forNil`, `TestPodCounts_forNil`,
//!   `TestTotalDomainCount_forNil`, `TestLowestLevelValues_forNil`: an
//!   absent assignment is `None` before the encoder is reached;
//! - `TestInternalSeqFromV1Beta2_iteratorStops`, `TestPodCounts_iteratorStops`,
//!   `TestLowestLevelValues_iteratorStops`: Go iterators; [`expand`]
//!   returns a list;
//! - `TestChunkCount` (4 cases): batchgate counts chunks with std's
//!   `usize::div_ceil`;
//! - `TestHasNodeInPodSetAssignment` (5), `TestHasTASAssignmentOnNode` (8):
//!   node-failure handling, which batchgate does not do yet;
//! - `FuzzTopologyAssignmentCompactionRoundTrip` (a Go fuzz target; the
//!   properties in [`super::tests`] take its place, its seed test
//!   `TestTopologyAssignmentCompactionRoundTripAcrossLimits` is ported
//!   below) and the performance tests (`TestByteSizeLimit`,
//!   `BenchmarkV1Beta2From`).
//!
//! `TestInternalSeqFromV1Beta2`, `TestPodCounts` and `TestTotalDomainCount`
//! run over the same two tables as `TestInternalFromV1Beta2`: here they
//! are the domains, counts and length of one [`expand`].

use serde_json::{json, Value};

use super::*;

/// Go's `encoding/json` output for a v1beta2 `TopologyAssignment` (or any
/// part of one): object keys in the Go structs' field order.
pub(super) fn go_json(v: &Value) -> String {
    const ORDER: [&str; 10] = [
        "levels",
        "slices",
        "domainCount",
        "valuesPerLevel",
        "podCounts",
        "universal",
        "individual",
        "prefix",
        "suffix",
        "roots",
    ];
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_by_key(|k| ORDER.iter().position(|o| o == k).unwrap_or(ORDER.len()));
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), go_json(&m[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(go_json).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// A v1beta2 `TopologyAssignment` as Go writes it: `levels` and `slices`
/// are `omitempty`.
pub(super) fn assignment(levels: &[String], slices: Vec<Value>) -> Value {
    let mut m = serde_json::Map::new();
    if !levels.is_empty() {
        m.insert("levels".into(), json!(levels));
    }
    if !slices.is_empty() {
        m.insert("slices".into(), Value::Array(slices));
    }
    Value::Object(m)
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

fn domains(d: &[(&[&str], i64)]) -> Vec<Domain> {
    d.iter()
        .map(|(values, count)| Domain {
            values: strings(values),
            count: *count,
        })
        .collect()
}

fn host(d: &[(&str, i64)]) -> Vec<Domain> {
    d.iter()
        .map(|(h, count)| Domain {
            values: vec![h.to_string()],
            count: *count,
        })
        .collect()
}

/// The domains of a v1beta2 assignment given as Go's JSON.
fn expand_json(want: &str) -> Vec<Domain> {
    let v: Value = serde_json::from_str(want).unwrap();
    let levels = v["levels"].as_array().map_or(0, Vec::len);
    expand(v.get("slices").unwrap_or(&json!([])), levels).unwrap()
}

/// Upstream's internal form and its v1beta2 encoding.
struct Encoded {
    name: &'static str,
    levels: &'static [&'static str],
    domains: &'static [(&'static [&'static str], i64)],
    v1beta2: &'static str,
}

/// `bothWaysTestCases`: encoded by `V1Beta2From`, read back by
/// `InternalFrom`.
const BOTH_WAYS: &[Encoded] = &[
    Encoded {
        name: "empty",
        levels: &["a", "b"],
        domains: &[],
        v1beta2: r#"{"levels":["a","b"]}"#,
    },
    Encoded {
        name: "one domain",
        levels: &["a", "b"],
        domains: &[(&["a1", "b1"], 1)],
        v1beta2: r#"{"levels":["a","b"],"slices":[{"domainCount":1,"valuesPerLevel":[{"universal":"a1"},{"universal":"b1"}],"podCounts":{"universal":1}}]}"#,
    },
    Encoded {
        name: "multiple domains, same counts, no common prefix",
        levels: &["a", "b"],
        domains: &[(&["a1", "b1"], 1), (&["a2", "b2"], 1)],
        v1beta2: r#"{"levels":["a","b"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"a","roots":["1","2"]}},{"individual":{"prefix":"b","roots":["1","2"]}}],"podCounts":{"universal":1}}]}"#,
    },
    Encoded {
        name: "multiple domains, different counts, common prefix and suffix",
        levels: &["a", "b"],
        domains: &[(&["p.a1.s", "p.b1.s"], 1), (&["p.a2.s", "p.b2.s"], 2)],
        v1beta2: r#"{"levels":["a","b"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"p.a","suffix":".s","roots":["1","2"]}},{"individual":{"prefix":"p.b","suffix":".s","roots":["1","2"]}}],"podCounts":{"individual":[1,2]}}]}"#,
    },
    Encoded {
        name: "multiple domains, universal value",
        levels: &["a", "b"],
        domains: &[(&["a1", "x"], 1), (&["a1", "y"], 2)],
        v1beta2: r#"{"levels":["a","b"],"slices":[{"domainCount":2,"valuesPerLevel":[{"universal":"a1"},{"individual":{"roots":["x","y"]}}],"podCounts":{"individual":[1,2]}}]}"#,
    },
    Encoded {
        name: "multiple domains, same counts, shrinking prefix",
        levels: &["a"],
        domains: &[(&["a123"], 1), (&["a12"], 1), (&["a1"], 1), (&["a13"], 1)],
        v1beta2: r#"{"levels":["a"],"slices":[{"domainCount":4,"valuesPerLevel":[{"individual":{"prefix":"a1","roots":["23","2","","3"]}}],"podCounts":{"universal":1}}]}"#,
    },
    Encoded {
        name: "multiple domains, same counts, shrinking suffix",
        levels: &["a"],
        domains: &[(&["123b"], 1), (&["23b"], 1), (&["3b"], 1), (&["13b"], 1)],
        v1beta2: r#"{"levels":["a"],"slices":[{"domainCount":4,"valuesPerLevel":[{"individual":{"suffix":"3b","roots":["12","2","","1"]}}],"podCounts":{"universal":1}}]}"#,
    },
    Encoded {
        name: "multiple domains, same counts, max prefix & suffix overlap partially",
        levels: &["a"],
        domains: &[(&["abacacada"], 1), (&["abacada"], 1)],
        v1beta2: r#"{"levels":["a"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"ab","suffix":"acada","roots":["ac",""]}}],"podCounts":{"universal":1}}]}"#,
    },
    Encoded {
        name: "multiple domains, same counts, max prefix & suffix overlap fully, shrinking strings",
        levels: &["a"],
        domains: &[(&["ababa"], 1), (&["aba"], 1)],
        v1beta2: r#"{"levels":["a"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"suffix":"aba","roots":["ab",""]}}],"podCounts":{"universal":1}}]}"#,
    },
    Encoded {
        name: "multiple domains, same counts, max prefix & suffix overlap fully, growing strings",
        levels: &["a"],
        domains: &[(&["aba"], 1), (&["ababa"], 1)],
        v1beta2: r#"{"levels":["a"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"suffix":"aba","roots":["","ab"]}}],"podCounts":{"universal":1}}]}"#,
    },
];

/// `oneWayTestCases`: v1beta2 forms the encoder does not choose, read by
/// `InternalFrom`.
const ONE_WAY: &[Encoded] = &[
    Encoded {
        name: "multiple slices, no prefixes/suffixes or universal values",
        levels: &["a", "b"],
        domains: &[(&["a", "b"], 1), (&["c", "d"], 2), (&["e", "f"], 3)],
        v1beta2: r#"{"levels":["a","b"],"slices":[{"domainCount":1,"valuesPerLevel":[{"individual":{"roots":["a"]}},{"individual":{"roots":["b"]}}],"podCounts":{"individual":[1]}},{"domainCount":2,"valuesPerLevel":[{"individual":{"roots":["c","e"]}},{"individual":{"roots":["d","f"]}}],"podCounts":{"individual":[2,3]}}]}"#,
    },
    Encoded {
        name: "multiple slices, prefixes, suffixes & universal values",
        levels: &["a", "b"],
        domains: &[
            (&["a1", "b1-s"], 2),
            (&["a1", "b2-s"], 3),
            (&["a2", "x-t"], 5),
            (&["a3", "y-t"], 5),
            (&["a4", "z-t"], 5),
            (&["a10", "b10"], 10),
            (&["a10", "b10"], 10),
        ],
        v1beta2: r#"{"levels":["a","b"],"slices":[{"domainCount":2,"valuesPerLevel":[{"universal":"a1"},{"individual":{"prefix":"b","suffix":"-s","roots":["1","2"]}}],"podCounts":{"individual":[2,3]}},{"domainCount":3,"valuesPerLevel":[{"individual":{"prefix":"a","roots":["2","3","4"]}},{"individual":{"suffix":"-t","roots":["x","y","z"]}}],"podCounts":{"universal":5}},{"domainCount":2,"valuesPerLevel":[{"universal":"a10"},{"universal":"b10"}],"podCounts":{"universal":10}}]}"#,
    },
];

#[test]
fn v1beta2_from_internal() {
    for c in BOTH_WAYS {
        let levels = strings(c.levels);
        let got = assignment(&levels, encode(&levels, &domains(c.domains)));
        assert_eq!(
            go_json(&got),
            c.v1beta2,
            "TestV1Beta2FromInternal/{}",
            c.name
        );
    }
}

#[test]
fn internal_from_v1beta2() {
    for (table, c) in BOTH_WAYS
        .iter()
        .map(|c| ("bothWays", c))
        .chain(ONE_WAY.iter().map(|c| ("oneWay", c)))
    {
        let name = format!("TestInternalFromV1Beta2/{} ({table})", c.name);
        let want = domains(c.domains);
        let got = expand_json(c.v1beta2);
        assert_eq!(got, want, "{name}");
        // TestPodCounts and TestTotalDomainCount over the same table.
        let counts: Vec<i64> = got.iter().map(|d| d.count).collect();
        let want_counts: Vec<i64> = c.domains.iter().map(|d| d.1).collect();
        assert_eq!(counts, want_counts, "TestPodCounts/{}", c.name);
        assert_eq!(
            got.len(),
            c.domains.len(),
            "TestTotalDomainCount/{}",
            c.name
        );
    }
}

#[test]
fn hostname_prefix_runs() {
    type Case<'a> = (&'a str, &'a [(&'a str, i64)], &'a str);
    let cases: &[Case] = &[
        (
            "GKE node pools",
            &[
                ("gke-c-pool-a-hash1-aa", 3),
                ("gke-c-pool-a-hash1-bb", 3),
                ("gke-c-pool-b-hash2-cc", 4),
                ("gke-c-pool-b-hash2-dd", 5),
            ],
            r#"{"levels":["kubernetes.io/hostname"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"gke-c-pool-a-hash1-","roots":["aa","bb"]}}],"podCounts":{"universal":3}},{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"gke-c-pool-b-hash2-","roots":["cc","dd"]}}],"podCounts":{"individual":[4,5]}}]}"#,
        ),
        (
            "AWS EKS private DNS names",
            &[
                ("ip-10-24-34-0.us-west-2.compute.internal", 2),
                ("ip-10-24-34-1.us-west-2.compute.internal", 2),
                ("ip-10-24-35-0.us-west-2.compute.internal", 3),
                ("ip-10-24-35-1.us-west-2.compute.internal", 4),
            ],
            r#"{"levels":["kubernetes.io/hostname"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"ip-10-24-34-","suffix":".us-west-2.compute.internal","roots":["0","1"]}}],"podCounts":{"universal":2}},{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"ip-10-24-35-","suffix":".us-west-2.compute.internal","roots":["0","1"]}}],"podCounts":{"individual":[3,4]}}]}"#,
        ),
        (
            "Azure AKS VMSS node pools",
            &[
                ("aks-nodepool1-12345678-vmss000000", 1),
                ("aks-nodepool1-12345678-vmss000001", 1),
                ("aks-nodepool2-87654321-vmss000000", 2),
                ("aks-nodepool2-87654321-vmss000001", 3),
            ],
            r#"{"levels":["kubernetes.io/hostname"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"aks-nodepool1-12345678-vmss00000","roots":["0","1"]}}],"podCounts":{"universal":1}},{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"aks-nodepool2-87654321-vmss00000","roots":["0","1"]}}],"podCounts":{"individual":[2,3]}}]}"#,
        ),
        (
            "on-premises UUID node names",
            &[
                ("550e8400-e29b-41d4-a716-446655440000", 1),
                ("6ba7b810-9dad-11d1-80b4-00c04fd430c8", 2),
                ("f47ac10b-58cc-4372-a567-0e02b2c3d479", 3),
            ],
            r#"{"levels":["kubernetes.io/hostname"],"slices":[{"domainCount":3,"valuesPerLevel":[{"individual":{"roots":["550e8400-e29b-41d4-a716-446655440000","6ba7b810-9dad-11d1-80b4-00c04fd430c8","f47ac10b-58cc-4372-a567-0e02b2c3d479"]}}],"podCounts":{"individual":[1,2,3]}}]}"#,
        ),
    ];
    let levels = strings(&[HOSTNAME_LABEL]);
    for (name, doms, want) in cases {
        let got = assignment(&levels, encode_by_hostname_prefix(&levels, &host(doms)));
        assert_eq!(
            go_json(&got),
            *want,
            "TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns/{name}"
        );
    }
}

#[test]
fn hostname_prefix_runs_without_hostname_level() {
    let levels = strings(&["cloud.example.com/rack"]);
    let doms = host(&[("rack-a", 1), ("rack-b", 2)]);
    let got = encode_by_hostname_prefix(&levels, &doms);
    let name = "TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns_withoutHostnameLevel";
    assert_eq!(got.len(), 1, "{name}");
    assert_eq!(expand(&Value::Array(got), 1).unwrap(), doms, "{name}");
}

/// Upstream's `hostnamePrefixAssignment`: half the nodes in pool a, the
/// rest in pool b.
fn hostname_prefix_assignment(domain_count: usize) -> Vec<Domain> {
    let per_prefix = domain_count / 2;
    (0..domain_count)
        .map(|i| {
            let (pool, node) = if i >= per_prefix {
                ("b", i - per_prefix)
            } else {
                ("a", i)
            };
            Domain {
                values: vec![format!("pool-{pool}-node-{node:05}")],
                count: 1,
            }
        })
        .collect()
}

/// `TestV1Beta2FromInternal_hostnamePrefixFeatureGateAndFallback`. The
/// gate is on in v0.19.2 and batchgate has no off switch: the "disabled"
/// case checks the single-slice encoding the gate's is weighed against.
#[test]
fn hostname_prefix_gate_and_fallback() {
    let cases: &[(&str, bool, usize, bool)] = &[
        (
            "enabled keeps one-slice hostname-prefix encoding",
            true,
            1,
            true,
        ),
        ("enabled uses smaller single-slice encoding", true, 4, false),
        (
            "enabled uses smaller hostname-prefix encoding",
            true,
            20,
            true,
        ),
        ("disabled uses single-slice encoding", false, 20, false),
    ];
    let levels = strings(&[HOSTNAME_LABEL]);
    for (name, enabled, n, want_prefix) in cases {
        let name = format!("TestV1Beta2FromInternal_hostnamePrefixFeatureGateAndFallback/{name}");
        let doms = hostname_prefix_assignment(*n);
        let want = if *want_prefix {
            encode_by_hostname_prefix(&levels, &doms)
        } else {
            single_slice(&levels, &doms)
        };
        let got = if *enabled {
            encode(&levels, &doms)
        } else {
            single_slice(&levels, &doms)
        };
        assert_eq!(got, want, "{name}");
        assert_eq!(expand(&Value::Array(got), 1).unwrap(), doms, "{name}");
    }
    // What `V1Beta2From` writes for the enabled cases, as Go writes it.
    for (n, want) in [
        (
            1,
            r#"{"levels":["kubernetes.io/hostname"],"slices":[{"domainCount":1,"valuesPerLevel":[{"universal":"pool-b-node-00000"}],"podCounts":{"universal":1}}]}"#,
        ),
        (
            4,
            r#"{"levels":["kubernetes.io/hostname"],"slices":[{"domainCount":4,"valuesPerLevel":[{"individual":{"prefix":"pool-","roots":["a-node-00000","a-node-00001","b-node-00000","b-node-00001"]}}],"podCounts":{"universal":1}}]}"#,
        ),
        (
            20,
            r#"{"levels":["kubernetes.io/hostname"],"slices":[{"domainCount":10,"valuesPerLevel":[{"individual":{"prefix":"pool-a-node-0000","roots":["0","1","2","3","4","5","6","7","8","9"]}}],"podCounts":{"universal":1}},{"domainCount":10,"valuesPerLevel":[{"individual":{"prefix":"pool-b-node-0000","roots":["0","1","2","3","4","5","6","7","8","9"]}}],"podCounts":{"universal":1}}]}"#,
        ),
    ] {
        let doms = hostname_prefix_assignment(n);
        assert_eq!(
            go_json(&assignment(&levels, encode(&levels, &doms))),
            want,
            "{n} domains"
        );
    }
}

#[test]
fn hostname_prefix_runs_preserve_domain_order() {
    let levels = strings(&[HOSTNAME_LABEL]);
    let doms = host(&[
        ("gke-c-pool-a-hash1-aa", 1),
        ("gke-c-pool-b-hash2-cc", 2),
        ("gke-c-pool-a-hash1-bb", 3),
        ("gke-c-pool-b-hash2-dd", 4),
    ]);
    let got = encode_by_hostname_prefix(&levels, &doms);
    let name = "TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns_preservesDomainOrder";
    assert_eq!(got.len(), 4, "{name}");
    assert_eq!(expand(&Value::Array(got), 1).unwrap(), doms, "{name}");
}

#[test]
fn large_hostname_assignment_with_many_pools() {
    let (pools, per_pool) = (2_000, 100);
    let doms: Vec<Domain> = (0..pools)
        .flat_map(|pool| {
            (0..per_pool).map(move |node| Domain {
                values: vec![format!("gke-cluster-pool-{pool:04}-{pool:08x}-{node:04x}")],
                count: 1,
            })
        })
        .collect();
    let levels = strings(&[HOSTNAME_LABEL]);
    let got = encode(&levels, &doms);
    let name = "TestV1Beta2FromInternal_largeHostnameAssignmentWithManyPools";
    assert_eq!(got.len(), 2, "{name}");
    for slice in &got {
        assert_eq!(slice["domainCount"], MAX_DOMAINS_PER_SLICE, "{name}");
    }
    assert_eq!(
        expand(&Value::Array(got), 1).unwrap().len(),
        pools * per_pool,
        "{name}"
    );
}

/// From `tas_assignment_fuzz_test.go`: 120,000 hostnames alternating
/// between two pools back off to the shared `pool-` key, one run, chunked
/// at the slice limit.
#[test]
fn compaction_round_trip_across_limits() {
    let doms: Vec<Domain> = (0..120_000)
        .map(|i| Domain {
            values: vec![format!("pool-{}-node-{i:06}", i % 2)],
            count: 1,
        })
        .collect();
    let levels = strings(&[HOSTNAME_LABEL]);
    let got = encode_by_hostname_prefix(&levels, &doms);
    let name = "TestTopologyAssignmentCompactionRoundTripAcrossLimits";
    assert_eq!(got.len(), 2, "{name}");
    assert_eq!(expand(&Value::Array(got), 1).unwrap(), doms, "{name}");
}

#[test]
fn reusable_hostname_prefix_keys() {
    type Case<'a> = (&'a str, &'a [&'a str], Option<&'a [&'a str]>);
    let cases: &[Case] = &[
        (
            "longest reusable prefixes",
            &[
                "gke-c-pool-a-hash1-aa",
                "gke-c-pool-a-hash1-bb",
                "gke-c-pool-b-hash2-cc",
                "gke-c-pool-b-hash2-dd",
            ],
            Some(&[
                "gke-c-pool-a-hash1-",
                "gke-c-pool-a-hash1-",
                "gke-c-pool-b-hash2-",
                "gke-c-pool-b-hash2-",
            ]),
        ),
        // Upstream's "" (no key) is `None` here.
        ("no reusable prefix", &["node-a", "host-b"], Some(&["", ""])),
        ("no delimiter", &["nodea", "hostb"], None),
    ];
    for (name, hosts, want) in cases {
        let doms = host(&hosts.iter().map(|h| (*h, 0)).collect::<Vec<_>>());
        let want: Option<Vec<Option<String>>> = want.map(|w| {
            w.iter()
                .map(|k| (!k.is_empty()).then(|| k.to_string()))
                .collect()
        });
        assert_eq!(
            reusable_prefix_keys(0, &doms),
            want,
            "TestReusableHostnamePrefixKeys/{name}"
        );
    }
}

#[test]
fn reusable_hostname_prefix_keys_back_off_to_fit_slice_limit() {
    let doms: Vec<Domain> = (0..=MAX_SLICES)
        .map(|i| Domain {
            values: vec![format!("a-{}-{i:04}", if i % 2 == 1 { "y" } else { "x" })],
            count: 0,
        })
        .collect();
    assert_eq!(
        reusable_prefix_keys(0, &doms),
        Some(vec![Some("a-".to_string()); MAX_SLICES + 1]),
        "TestReusableHostnamePrefixKeys_backsOffToFitSliceLimit"
    );
}

#[test]
fn hostname_prefix_runs_fall_back_when_no_prefix_depth_fits_slice_limit() {
    let doms: Vec<Domain> = (0..=MAX_SLICES)
        .map(|i| Domain {
            values: vec![format!("{}-{i:04}", if i % 2 == 1 { "b-y" } else { "a-x" })],
            count: 1,
        })
        .collect();
    let name = "TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns_fallsBackWhenNoPrefixDepthFitsSliceLimit";
    assert_eq!(reusable_prefix_keys(0, &doms), None, "{name}");
    let levels = strings(&[HOSTNAME_LABEL]);
    let got = encode_by_hostname_prefix(&levels, &doms);
    assert_eq!(got.len(), 1, "{name}");
    assert_eq!(expand(&Value::Array(got), 1).unwrap(), doms, "{name}");
}

#[test]
fn compact_domain_runs() {
    let keys =
        |k: &[&str]| -> Vec<Option<String>> { k.iter().map(|k| Some(k.to_string())).collect() };
    let grouped = keys(&["prefix-a-", "prefix-a-", "prefix-b-", "prefix-a-"]);
    type Case<'a> = (&'a str, usize, Option<&'a [Option<String>]>, &'a [usize]);
    let cases: &[Case] = &[
        ("empty", 0, None, &[]),
        ("no prefix keys", 4, None, &[4]),
        ("groups consecutive domains", 4, Some(&grouped), &[2, 1, 1]),
    ];
    for (name, len, keys, want) in cases {
        let got: Vec<usize> = runs(*len, *keys).into_iter().map(|r| r.len()).collect();
        assert_eq!(got, *want, "TestCompactDomainRuns/{name}");
    }
}

#[test]
fn lowest_level() {
    let v1beta2 = ONE_WAY[1].v1beta2;
    let got: Vec<String> = expand_json(v1beta2)
        .into_iter()
        .map(|d| d.values[1].clone())
        .collect();
    assert_eq!(
        got,
        ["b1-s", "b2-s", "x-t", "y-t", "z-t", "b10", "b10"],
        "TestLowestLevel"
    );
}
