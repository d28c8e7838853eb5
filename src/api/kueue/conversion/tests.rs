use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::topology::{self, Domain};
use super::*;

fn cq(api: &str, spec: Value) -> Value {
    json!({"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec})
}

#[test]
fn cluster_queue_renames_and_maps_as_kueue() {
    let v1 = cq(
        V1BETA1,
        json!({"cohort": "all", "admissionChecks": ["prov", "dws"],
               "flavorFungibility": {"whenCanPreempt": "Preempt", "whenCanBorrow": "Borrow"},
               "queueingStrategy": "StrictFIFO"}),
    );
    let v2 = convert(v1.clone(), V1BETA2).unwrap();
    assert_eq!(v2["apiVersion"], V1BETA2);
    assert_eq!(v2["spec"]["cohortName"], "all");
    assert!(v2["spec"].get("cohort").is_none());
    assert!(v2["spec"].get("admissionChecks").is_none());
    assert_eq!(
        v2["spec"]["admissionChecksStrategy"],
        json!({"admissionChecks": [{"name": "prov"}, {"name": "dws"}]})
    );
    assert_eq!(
        v2["spec"]["flavorFungibility"],
        json!({"whenCanPreempt": "MayStopSearch", "whenCanBorrow": "MayStopSearch"})
    );
    assert_eq!(v2["spec"]["queueingStrategy"], "StrictFIFO");
    // What v1beta2 cannot say is kept for the way back.
    assert!(v2["metadata"]["annotations"][STASH_ANNOTATION].is_string());
    assert_eq!(convert(v2, V1BETA1).unwrap(), v1);
}

#[test]
fn multikueue_cluster_source_moves_as_kueue_moves_it() {
    let mkc = |api: &str, spec: Value| json!({"apiVersion": api, "kind": "MultiKueueCluster", "metadata": {"name": "w"}, "spec": spec});
    let v1 = mkc(
        V1BETA1,
        json!({"kubeConfig": {"location": "worker1", "locationType": "Secret"}}),
    );
    let v2 = convert(v1.clone(), V1BETA2).unwrap();
    assert_eq!(
        v2["spec"],
        json!({"clusterSource": {"kubeConfig": {"location": "worker1", "locationType": "Secret"}}})
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
    assert_eq!(convert(v2, V1BETA1).unwrap(), v1);

    // A ClusterProfile comes down beside Go's zero kubeconfig, and goes up
    // without it.
    let v2 = mkc(
        V1BETA2,
        json!({"clusterSource": {"clusterProfileRef": {"name": "worker1"}}}),
    );
    let v1 = convert(v2.clone(), V1BETA1).unwrap();
    assert_eq!(
        v1["spec"],
        json!({"kubeConfig": {"location": "", "locationType": ""},
               "clusterProfileRef": {"name": "worker1"}})
    );
    assert!(v1["metadata"].get("annotations").is_none(), "{v1}");
    assert_eq!(convert(v1, V1BETA2).unwrap(), v2);

    // Go's omitempty drops an empty locationType on the way up (outputs
    // checked against a Go run of upstream's ConvertTo/ConvertFrom).
    let v1 = mkc(
        V1BETA1,
        json!({"kubeConfig": {"location": "w", "locationType": ""}}),
    );
    assert_eq!(
        convert(v1, V1BETA2).unwrap()["spec"],
        json!({"clusterSource": {"kubeConfig": {"location": "w"}}})
    );
}

#[test]
fn a_client_change_wins_over_the_stash() {
    let v1 = cq(V1BETA1, json!({"admissionChecks": ["prov"]}));
    let mut v2 = convert(v1, V1BETA2).unwrap();
    v2["spec"]["admissionChecksStrategy"] = json!({"admissionChecks": [{"name": "other"}]});
    let back = convert(v2, V1BETA1).unwrap();
    assert!(back["spec"].get("admissionChecks").is_none(), "{back}");
    assert_eq!(
        back["spec"]["admissionChecksStrategy"],
        json!({"admissionChecks": [{"name": "other"}]})
    );
    assert!(back["metadata"].get("annotations").is_none(), "{back}");
}

#[test]
fn workload_priority_and_renamed_status() {
    let v1 = json!({"apiVersion": V1BETA1, "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"priorityClassName": "high", "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                 "priority": 100, "podSets": [{"name": "main", "count": 1, "template": {}}]},
        "status": {"accumulatedPastExexcutionTimeSeconds": 30}});
    let v2 = convert(v1.clone(), V1BETA2).unwrap();
    assert_eq!(
        v2["spec"]["priorityClassRef"],
        json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"})
    );
    assert_eq!(v2["status"]["accumulatedPastExecutionTimeSeconds"], 30);
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
    assert_eq!(convert(v2, V1BETA1).unwrap(), v1);

    let pod = json!({"apiVersion": V1BETA2, "kind": "Workload", "metadata": {"name": "w"},
        "spec": {"priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "p"}}});
    let v1 = convert(pod, V1BETA1).unwrap();
    assert_eq!(v1["spec"]["priorityClassName"], "p");
    assert_eq!(
        v1["spec"]["priorityClassSource"],
        "scheduling.k8s.io/priorityclass"
    );
}

#[test]
fn fields_only_v1beta2_has_survive_a_v1beta1_round_trip() {
    let v2 = json!({"apiVersion": V1BETA2, "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"preemptionGates": [{"name": "g"}],
                 "podSets": [{"name": "main", "count": 2, "template": {},
                   "topologyRequest": {"podsetSliceRequiredTopologyConstraints": [{"topology": "rack", "size": 2}]}}]},
        "status": {"preemptionGates": [{"name": "g", "position": "Open"}]}});
    let v1 = convert(v2.clone(), V1BETA1).unwrap();
    // As Kueue: v1beta1 has no such fields.
    assert!(v1["spec"].get("preemptionGates").is_none());
    assert!(v1["status"].get("preemptionGates").is_none());
    assert_eq!(v1["spec"]["podSets"][0]["topologyRequest"], json!({}));
    assert_eq!(convert(v1, V1BETA2).unwrap(), v2);
}

#[test]
fn topology_assignment_domains_and_slices() {
    let v1 = json!({"apiVersion": V1BETA1, "kind": "Workload", "metadata": {"name": "w"},
        "spec": {"podSets": [{"name": "main", "count": 3, "template": {}}]},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
            "topologyAssignment": {"levels": ["kubernetes.io/hostname"],
              "domains": [{"values": ["node-1"], "count": 1}, {"values": ["node-2"], "count": 2}]}}]}}});
    let v2 = convert(v1.clone(), V1BETA2).unwrap();
    assert_eq!(
        v2["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"],
        json!({"levels": ["kubernetes.io/hostname"], "slices": [{"domainCount": 2,
            "valuesPerLevel": [{"individual": {"prefix": "node-", "roots": ["1", "2"]}}],
            "podCounts": {"individual": [1, 2]}}]})
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
    assert_eq!(convert(v2, V1BETA1).unwrap(), v1);
}

#[test]
fn a_malformed_field_fails_naming_object_and_field() {
    let v2 = json!({"apiVersion": V1BETA2, "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
        "status": {"admission": {"podSetAssignments": [{"name": "main", "topologyAssignment": {
            "levels": ["a"], "slices": [{"domainCount": 2, "valuesPerLevel": [{"universal": "x"}],
            "podCounts": {"individual": [1]}}]}}]}}});
    let e = convert(v2, V1BETA1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Workload ns/w: status.admission.podSetAssignments[0].topologyAssignment.slices[0].podCounts.individual: has 1 entries, domainCount is 2"
    );
}

#[test]
fn review_answers_success_and_failure() {
    let body = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u1", "desiredAPIVersion": V1BETA2, "objects": [
            cq(V1BETA1, json!({"cohort": "c"})),
            {"apiVersion": V1BETA1, "kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {"nodeLabels": {"a": "b"}}}]}});
    let r = review(body.to_string().as_bytes()).unwrap();
    assert_eq!(r["kind"], "ConversionReview");
    assert_eq!(r["response"]["uid"], "u1");
    assert_eq!(r["response"]["result"]["status"], "Success");
    let objs = r["response"]["convertedObjects"].as_array().unwrap();
    assert_eq!(objs[0]["spec"], json!({"cohortName": "c"}));
    assert_eq!(objs[1]["apiVersion"], V1BETA2);
    assert_eq!(objs[1]["spec"], json!({"nodeLabels": {"a": "b"}}));

    let body = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u2", "desiredAPIVersion": V1BETA2, "objects": [
            {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "ClusterQueue", "metadata": {"name": "old"}}]}});
    let r = review(body.to_string().as_bytes()).unwrap();
    assert_eq!(r["response"]["result"]["status"], "Failure");
    assert_eq!(
        r["response"]["result"]["message"],
        "ClusterQueue old: apiVersion \"kueue.x-k8s.io/v1alpha1\" cannot be converted; batchgate converts between kueue.x-k8s.io/v1beta1 and kueue.x-k8s.io/v1beta2"
    );
    assert!(review(b"{\"kind\": \"AdmissionReview\"}").is_err());
}

// ---- property: round trips are identities, unknown fields included ----

fn name() -> impl Strategy<Value = String> {
    "[a-z]{1,6}"
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-zA-Z0-9 ./-]{0,8}".prop_map(Value::from),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::btree_map(name(), inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Fields no version of the API has (a newer Kueue's, say).
fn unknown() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("x[A-Z][a-z]{0,5}", arb_json(), 0..3)
        .prop_map(|m| m.into_iter().collect())
}

/// Inserts the optional fields that are `Some`, then the unknown ones.
fn object(fields: Vec<(&str, Option<Value>)>, extra: Map<String, Value>) -> Value {
    let mut m: Map<String, Value> = fields
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect();
    m.extend(extra);
    Value::Object(m)
}

fn metadata(namespaced: bool) -> impl Strategy<Value = Value> {
    (
        name(),
        prop::collection::btree_map("[a-z.]{1,8}/[a-z]{1,5}", "[a-z]{0,5}", 0..3),
    )
        .prop_map(move |(n, ann)| {
            let mut m = json!({"name": n, "uid": "1234", "resourceVersion": "7"});
            if namespaced {
                m["namespace"] = json!("team");
            }
            if !ann.is_empty() {
                m["annotations"] = json!(ann);
            }
            m
        })
}

fn root(api: &str, kind: &str, meta: Value, spec: Option<Value>, status: Option<Value>) -> Value {
    object(
        vec![
            ("apiVersion", Some(json!(api))),
            ("kind", Some(json!(kind))),
            ("metadata", Some(meta)),
            ("spec", spec),
            ("status", status),
        ],
        Map::new(),
    )
}

fn strategy_rules() -> impl Strategy<Value = Value> {
    prop::collection::vec(name(), 1..3).prop_map(
        |n| json!({"admissionChecks": n.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}),
    )
}

fn cluster_queue(v1: bool) -> impl Strategy<Value = Value> {
    let preempt = if v1 {
        prop_oneof![
            Just("Preempt"),
            Just("MayStopSearch"),
            Just("TryNextFlavor")
        ]
        .boxed()
    } else {
        prop_oneof![Just("MayStopSearch"), Just("TryNextFlavor")].boxed()
    };
    let borrow = if v1 {
        prop_oneof![Just("Borrow"), Just("MayStopSearch"), Just("TryNextFlavor")].boxed()
    } else {
        prop_oneof![Just("MayStopSearch"), Just("TryNextFlavor")].boxed()
    };
    (
        metadata(false),
        (
            proptest::option::of(name()),
            proptest::option::of(prop::collection::vec(name(), 0..3)),
            proptest::option::of(strategy_rules()),
            proptest::option::of((proptest::option::of(preempt), proptest::option::of(borrow))),
            proptest::option::of(arb_json()),
            unknown(),
        ),
        proptest::option::of((
            proptest::option::of(0..100i64),
            proptest::option::of(arb_json()),
            proptest::option::of((any::<i32>(), proptest::option::of(arb_json()), unknown())),
            unknown(),
        )),
    )
        .prop_map(
            move |(meta, (cohort, checks, strategy, fung, cap, extra), status)| {
                let fung = fung.map(|(p, b)| {
                    object(
                        vec![
                            ("whenCanPreempt", p.map(Value::from)),
                            ("whenCanBorrow", b.map(Value::from)),
                        ],
                        Map::new(),
                    )
                });
                let spec = if v1 {
                    object(
                        vec![
                            ("cohort", cohort.map(Value::from)),
                            ("admissionChecks", checks.map(Value::from)),
                            ("admissionChecksStrategy", strategy),
                            ("flavorFungibility", fung),
                        ],
                        extra,
                    )
                } else {
                    object(
                        vec![
                            ("cohortName", cohort.map(Value::from)),
                            ("admissionChecksStrategy", strategy),
                            ("flavorFungibility", fung),
                            ("concurrentAdmissionPolicy", cap),
                        ],
                        extra,
                    )
                };
                let status = status.map(|(pending, pws, fs, extra)| {
                    let fs = fs.map(|(share, afs, fextra)| {
                        object(
                            vec![
                                ("weightedShare", Some(json!(share))),
                                ("admissionFairSharingStatus", afs.filter(|_| v1)),
                            ],
                            fextra,
                        )
                    });
                    object(
                        vec![
                            ("pendingWorkloads", pending.map(Value::from)),
                            ("pendingWorkloadsStatus", pws.filter(|_| v1)),
                            ("fairSharing", fs),
                        ],
                        extra,
                    )
                });
                let api = if v1 { V1BETA1 } else { V1BETA2 };
                root(api, "ClusterQueue", meta, Some(spec), status)
            },
        )
}

fn cohort(v1: bool) -> impl Strategy<Value = Value> {
    (
        metadata(false),
        proptest::option::of(name()),
        unknown(),
        proptest::option::of((any::<i32>(), proptest::option::of(arb_json()))),
    )
        .prop_map(move |(meta, parent, extra, fs)| {
            let spec = object(vec![("parentName", parent.map(Value::from))], extra);
            let status = fs.map(|(share, afs)| {
                json!({"fairSharing": object(vec![
                    ("weightedShare", Some(json!(share))),
                    ("admissionFairSharingStatus", afs.filter(|_| v1)),
                ], Map::new())})
            });
            root(
                if v1 { V1BETA1 } else { V1BETA2 },
                "Cohort",
                meta,
                Some(spec),
                status,
            )
        })
}

fn local_queue(v1: bool) -> impl Strategy<Value = Value> {
    (
        metadata(true),
        name(),
        proptest::option::of(arb_json()),
        proptest::option::of(arb_json()),
        unknown(),
    )
        .prop_map(move |(meta, cq, usage, flavors, extra)| {
            let spec = json!({"clusterQueue": cq});
            let status = if v1 {
                object(vec![("flavorUsage", usage), ("flavors", flavors)], extra)
            } else {
                object(vec![("flavorsUsage", usage)], extra)
            };
            root(
                if v1 { V1BETA1 } else { V1BETA2 },
                "LocalQueue",
                meta,
                Some(spec),
                Some(status),
            )
        })
}

fn plain(kind: &'static str, v1: bool) -> impl Strategy<Value = Value> {
    (metadata(false), unknown()).prop_map(move |(meta, extra)| {
        root(
            if v1 { V1BETA1 } else { V1BETA2 },
            kind,
            meta,
            Some(Value::Object(extra)),
            None,
        )
    })
}

/// Domains over one or two levels, the hostnames in runs of shared
/// prefixes, as TAS assigns them.
fn domains() -> impl Strategy<Value = (Vec<String>, Vec<Domain>)> {
    (
        any::<bool>(),
        prop::collection::vec(("[ab]", "[ab]{1,2}", 0..3u8, 1..4i64), 0..6),
    )
        .prop_map(|(two, d)| {
            let mut levels = vec!["kubernetes.io/hostname".to_string()];
            if two {
                levels.insert(0, "cloud.example.com/block".into());
            }
            let doms = d
                .into_iter()
                .map(|(block, pool, node, count)| {
                    let host = format!("pool-{pool}-node-{node}");
                    let values = if two {
                        vec![format!("block-{block}"), host]
                    } else {
                        vec![host]
                    };
                    Domain { values, count }
                })
                .collect();
            (levels, doms)
        })
}

/// A v1beta2 encoding Kueue would not choose: one domain per slice,
/// nothing factored out.
fn spelled_out(levels: usize, doms: &[Domain]) -> Value {
    Value::Array(
        doms.iter()
            .map(|d| {
                json!({"domainCount": 1,
                       "valuesPerLevel": (0..levels).map(|l| json!({"individual": {"roots": [d.values[l]]}})).collect::<Vec<_>>(),
                       "podCounts": {"individual": [d.count]}})
            })
            .collect(),
    )
}

fn workload(v1: bool) -> impl Strategy<Value = Value> {
    let priority = if v1 {
        (
            proptest::option::of(name()),
            proptest::option::of(prop_oneof![
                Just(WORKLOAD_PRIORITY_SOURCE.to_string()),
                Just(POD_PRIORITY_SOURCE.to_string()),
                Just("example.com/other".to_string()),
            ]),
        )
            .prop_map(|(n, s)| {
                vec![
                    ("priorityClassName", n.map(Value::from)),
                    ("priorityClassSource", s.map(Value::from)),
                ]
            })
            .boxed()
    } else {
        proptest::option::of((
            prop_oneof![
                Just("kueue.x-k8s.io"),
                Just("scheduling.k8s.io"),
                Just("example.com")
            ],
            prop_oneof![
                Just("WorkloadPriorityClass"),
                Just("PriorityClass"),
                Just("Other")
            ],
            proptest::option::of(name()),
        ))
        .prop_map(|r| {
            let r = r.map(|(g, k, n)| {
                object(
                    vec![
                        ("group", Some(json!(g))),
                        ("kind", Some(json!(k))),
                        ("name", n.map(Value::from)),
                    ],
                    Map::new(),
                )
            });
            vec![("priorityClassRef", r)]
        })
        .boxed()
    };
    (
        metadata(true),
        priority,
        prop::collection::vec(
            (name(), 1..5i64, proptest::option::of(arb_json()), unknown()),
            1..3,
        ),
        proptest::option::of(arb_json()),
        unknown(),
        (
            proptest::option::of(0..1000i64),
            proptest::option::of(arb_json()),
            proptest::option::of(prop::collection::vec(
                proptest::option::of((domains(), any::<bool>(), unknown())),
                1..3,
            )),
            unknown(),
        ),
    )
        .prop_map(
            move |(meta, prio, pod_sets, gates, extra, (acc, sgates, assign, sextra))| {
                let pod_sets: Vec<Value> = pod_sets
                    .into_iter()
                    .map(|(n, count, constraints, pextra)| {
                        let tr = object(
                            vec![(
                                "podsetSliceRequiredTopologyConstraints",
                                constraints.filter(|_| !v1),
                            )],
                            pextra,
                        );
                        json!({"name": n, "count": count, "template": {}, "topologyRequest": tr})
                    })
                    .collect();
                let mut spec_fields = prio;
                spec_fields.push(("podSets", Some(Value::Array(pod_sets))));
                spec_fields.push(("preemptionGates", gates.filter(|_| !v1)));
                let spec = object(spec_fields, extra);
                let admission = assign.map(|a| {
                    let psa: Vec<Value> = a
                        .into_iter()
                        .enumerate()
                        .map(|(i, t)| {
                            let ta = t.map(|((levels, doms), canonical, textra)| {
                                let body = if v1 {
                                    ("domains", Some(topology::write_domains(&doms)))
                                } else if canonical || doms.is_empty() {
                                    let s = topology::encode(&levels, &doms);
                                    ("slices", (!s.is_empty()).then_some(Value::Array(s)))
                                } else {
                                    ("slices", Some(spelled_out(levels.len(), &doms)))
                                };
                                object(vec![("levels", Some(json!(levels))), body], textra)
                            });
                            object(
                                vec![
                                    ("name", Some(json!(format!("ps{i}")))),
                                    ("topologyAssignment", ta),
                                ],
                                Map::new(),
                            )
                        })
                        .collect();
                    json!({"clusterQueue": "cq", "podSetAssignments": psa})
                });
                let acc_key = if v1 {
                    "accumulatedPastExexcutionTimeSeconds"
                } else {
                    "accumulatedPastExecutionTimeSeconds"
                };
                let status = object(
                    vec![
                        (acc_key, acc.map(Value::from)),
                        ("preemptionGates", sgates.filter(|_| !v1)),
                        ("admission", admission),
                    ],
                    sextra,
                );
                root(
                    if v1 { V1BETA1 } else { V1BETA2 },
                    "Workload",
                    meta,
                    Some(spec),
                    Some(status),
                )
            },
        )
}

/// MultiKueueClusters as each version requires them: v1beta1 with its
/// kubeconfig (the location possibly empty, as a v1beta2 object with a
/// ClusterProfile comes down), v1beta2 with its cluster source.
fn multikueue_cluster(v1: bool) -> impl Strategy<Value = Value> {
    let kube_config = (
        prop_oneof![Just(String::new()), name()],
        prop_oneof![Just("Secret"), Just("Path")],
        unknown(),
    )
        .prop_map(|(location, kind, extra)| {
            object(
                vec![
                    ("location", Some(json!(location))),
                    ("locationType", Some(json!(kind))),
                ],
                extra,
            )
        });
    let profile = proptest::option::of(name().prop_map(|n| json!({"name": n})));
    (
        metadata(false),
        kube_config,
        proptest::option::of(Just(())),
        profile,
        unknown(),
        unknown(),
    )
        .prop_map(move |(meta, kc, with_kc, profile, extra, source_extra)| {
            let spec = if v1 {
                object(
                    vec![("kubeConfig", Some(kc)), ("clusterProfileRef", profile)],
                    extra,
                )
            } else {
                let kc = with_kc.map(|_| kc).filter(|kc| kc["location"] != "");
                let source = object(
                    vec![("kubeConfig", kc), ("clusterProfileRef", profile)],
                    source_extra,
                );
                object(vec![("clusterSource", Some(source))], extra)
            };
            let status = json!({"conditions": [{"type": "Active", "status": "True",
                "reason": "Active", "message": "Connected",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
            root(
                if v1 { V1BETA1 } else { V1BETA2 },
                "MultiKueueCluster",
                meta,
                Some(spec),
                Some(status),
            )
        })
}

fn any_kind(v1: bool) -> impl Strategy<Value = Value> {
    prop_oneof![
        cluster_queue(v1).boxed(),
        multikueue_cluster(v1).boxed(),
        cohort(v1).boxed(),
        local_queue(v1).boxed(),
        plain("ResourceFlavor", v1).boxed(),
        plain("WorkloadPriorityClass", v1).boxed(),
        workload(v1).boxed(),
    ]
}

/// `priorityClassSource: ""` is v1beta1's schema default: the apiserver
/// puts it back on every v1beta1 write, so the converter need not.
fn without_default_source(mut v: Value) -> Value {
    if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
        if spec.get("priorityClassSource") == Some(&json!("")) {
            spec.remove("priorityClassSource");
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn v1beta1_to_v1beta2_and_back_is_identity(obj in any_kind(true)) {
        let there = convert(obj.clone(), V1BETA2).unwrap();
        prop_assert_eq!(&there["apiVersion"], V1BETA2);
        let back = convert(there, V1BETA1).unwrap();
        prop_assert_eq!(without_default_source(back), without_default_source(obj));
    }

    #[test]
    fn v1beta2_to_v1beta1_and_back_is_identity(obj in any_kind(false)) {
        let there = convert(obj.clone(), V1BETA1).unwrap();
        prop_assert_eq!(&there["apiVersion"], V1BETA1);
        let back = convert(there, V1BETA2).unwrap();
        prop_assert_eq!(back, obj);
    }

    #[test]
    fn topology_encoding_lists_the_same_domains((levels, doms) in domains()) {
        let slices = Value::Array(topology::encode(&levels, &doms));
        prop_assert_eq!(topology::expand(&slices, levels.len()).unwrap(), doms);
    }
}
