use std::fmt::Write;

use proptest::{prelude::*, strategy::ValueTree};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{json, Value};

use super::*;

/// A pod's spec read as the webhook reads it: the role's fields into a
/// [`Shape`], the rest skipped.
struct Spec;

impl<'de> DeserializeSeed<'de> for Spec {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Spec {
    type Value = String;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a spec")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<String, A::Error> {
        let mut shape = Shape::default();
        while let Some(k) = map.next_key_seed(KeyName)? {
            match Field::named(&k) {
                Some(field) => shape.read(field, &mut map)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(shape.hash())
    }
}

fn streamed(spec: &str) -> String {
    let mut de = serde_json::Deserializer::from_str(spec);
    let hash = Spec.deserialize(&mut de).expect("a spec object");
    de.end().expect("nothing after the spec");
    hash
}

fn built(spec: &str) -> String {
    let spec: Value = serde_json::from_str(spec).expect("valid JSON");
    role_hash(&json!({ "spec": spec }))
}

fn sha8(doc: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, doc.as_bytes());
    digest.as_ref()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Kueue v0.19.2 pkg/util/pod: for these specs the document is fixed, so
/// is its sha256; read either way, the hash is that one.
#[test]
fn both_ways_hash_kueues_document() {
    let cases = [
        (
            r#"{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"1"}}}],"priority":0}"#,
            r#"{"spec":{"affinity":null,"containers":[{"ports":null,"resources":{"requests":{"cpu":"1"}}}],"initContainers":null,"nodeSelector":null,"overhead":null,"priority":0,"resourceClaims":null,"runtimeClassName":null,"tolerations":null,"topologySpreadConstraints":null}}"#,
        ),
        (
            // Go's field order for tolerations and ports, whatever the body's.
            r#"{"tolerations":[{"effect":"NoSchedule","key":"k","operator":"Exists"}],"priority":0,
                "containers":[{"resources":{"requests":{"cpu":"1"}},"ports":[{"protocol":"TCP","containerPort":80}]}]}"#,
            r#"{"spec":{"affinity":null,"containers":[{"ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"requests":{"cpu":"1"}}}],"initContainers":null,"nodeSelector":null,"overhead":null,"priority":0,"resourceClaims":null,"runtimeClassName":null,"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule"}],"topologySpreadConstraints":null}}"#,
        ),
        (
            // Pod-level resources appear only when set; a map's keys sorted.
            r#"{"resources":{"limits":{"cpu":"2"},"requests":{"memory":"1Gi","cpu":"1"}},"nodeSelector":{"b":"2","a":"1"}}"#,
            r#"{"spec":{"affinity":null,"containers":null,"initContainers":null,"nodeSelector":{"a":"1","b":"2"},"overhead":null,"priority":null,"resourceClaims":null,"resources":{"cpu":"1","memory":"1Gi"},"runtimeClassName":null,"tolerations":null,"topologySpreadConstraints":null}}"#,
        ),
    ];
    for (spec, doc) in cases {
        assert_eq!(built(spec), sha8(doc), "{spec}");
        assert_eq!(streamed(spec), sha8(doc), "{spec}");
    }
}

/// JSON with what a `Value` hides: key order, repeated keys.
#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    fn write(&self, out: &mut String) {
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Int(i) => write!(out, "{i}").unwrap(),
            J::Float(f) => write!(out, "{f:?}").unwrap(),
            J::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
            J::Arr(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    x.write(out);
                }
                out.push(']');
            }
            J::Obj(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Keys the role reads at some depth, and some it does not, escapes and
/// all.
const KEYS: &[&str] = &[
    "ports",
    "resources",
    "requests",
    "limits",
    "key",
    "operator",
    "value",
    "effect",
    "tolerationSeconds",
    "name",
    "hostPort",
    "containerPort",
    "protocol",
    "hostIP",
    "cpu",
    "memory",
    "a\"b",
    "tab\there",
    "é",
    "",
];

fn leaf() -> impl Strategy<Value = J> {
    prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        any::<i64>().prop_map(J::Int),
        (-1e12f64..1e12).prop_map(J::Float),
        prop_oneof![
            Just("1".to_string()),
            Just("Exists".to_string()),
            Just("quote\"and\\slash".to_string()),
            Just("ctrl\u{1}".to_string()),
            Just("<&>".to_string()),
            "[a-zé ]{0,6}",
        ]
        .prop_map(J::Str),
    ]
}

fn tree() -> impl Strategy<Value = J> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(J::Arr),
            prop::collection::vec(
                (prop::sample::select(KEYS).prop_map(String::from), inner),
                0..6
            )
            .prop_map(J::Obj),
        ]
    })
}

/// A spec's entries: the role's fields (some repeated), and others, in
/// any order.
fn spec() -> impl Strategy<Value = Vec<(&'static str, J)>> {
    let names: Vec<&'static str> = FIELDS
        .iter()
        .map(|(k, _)| *k)
        .chain(["volumes", "schedulingGates", "serviceAccountName"])
        .collect();
    prop::collection::vec((prop::sample::select(names), tree()), 0..14)
}

fn render(entries: &[(&str, J)]) -> String {
    let mut out = String::new();
    J::Obj(
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
    .write(&mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Read as the webhook reads it, a spec's role is the one of the same
    /// spec built first.
    #[test]
    fn streamed_is_built(entries in spec()) {
        let spec = render(&entries);
        prop_assert_eq!(streamed(&spec), built(&spec), "{}", spec);
    }
}

/// The property's strategy reaches what it is for: the lists the role
/// reads item by item holding objects, and repeated fields.
#[test]
fn the_strategy_reaches_the_role_lists() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut lists, mut repeated) = (0, 0);
    for _ in 0..500 {
        let entries = spec().new_tree(&mut runner).unwrap().current();
        if entries.iter().any(|(k, v)| {
            ["containers", "initContainers", "tolerations"].contains(k)
                && matches!(v, J::Arr(items) if items.iter().any(|i| matches!(i, J::Obj(e) if !e.is_empty())))
        }) {
            lists += 1;
        }
        let mut names: Vec<&str> = entries.iter().map(|(k, _)| *k).collect();
        names.sort_unstable();
        if names
            .windows(2)
            .any(|w| w[0] == w[1] && Field::named(w[0]).is_some())
        {
            repeated += 1;
        }
    }
    assert!(
        lists > 25 && repeated > 25,
        "lists of objects {lists}, repeated role fields {repeated}, of 500"
    );
}

/// A string borrowed from the body is copied as it is: the parser refuses
/// raw control characters, so one never needs escaping.
#[test]
fn a_raw_control_character_is_refused_before_it_is_copied() {
    let spec = "{\"runtimeClassName\":\"a\u{1}b\"}";
    let mut de = serde_json::Deserializer::from_str(spec);
    assert!(Spec.deserialize(&mut de).is_err());
    assert!(serde_json::from_str::<Value>(spec).is_err());
}
