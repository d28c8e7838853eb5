//! Topology: the node labels that make up a data centre's hierarchy (block,
//! rack, host), highest level first, for topology-aware scheduling. A
//! ResourceFlavor names one in `spec.topologyName`. Cluster-scoped, short
//! name `topo`.
//!
//! Upstream validates it in the CRD only (no webhook): the rules are here,
//! and [`level_rule_violations`] decides them in Rust for code that holds
//! a Topology the apiserver did not admit.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocabulary::keys::HOSTNAME_LABEL;

/// Upstream's `nodeLabel` pattern: a qualified label name.
pub const NODE_LABEL_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// The messages of the CEL rules on `spec.levels`, as upstream words them.
pub const IMMUTABLE: &str = "field is immutable";
pub const NOT_UNIQUE: &str = "must be unique";
pub const HOSTNAME_NOT_LOWEST: &str =
    "the kubernetes.io/hostname label can only be used at the lowest level of topology";

/// The CEL rules on `spec.levels`, verbatim from v0.19.2's markers.
fn level_rules() -> serde_json::Value {
    serde_json::json!([
        {"rule": "self == oldSelf", "message": IMMUTABLE},
        {
            "rule": "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
            "message": NOT_UNIQUE,
        },
        {
            "rule": "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'",
            "message": HOSTNAME_NOT_LOWEST,
        },
    ])
}

/// The desired state of a Topology.
// kube's repeated `derive = ...` keys look like repeated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Topology",
    plural = "topologies",
    shortname = "topo",
    derive = "Default",
    derive = "PartialEq",
    doc = "Topology is the Schema for the topology API"
)]
#[serde(rename_all = "camelCase", remote = "Self")]
// `levels` may be absent on the wire (Go's omitempty) but the schema
// requires it, as upstream's does.
#[schemars(extend("required" = ["levels"]))]
pub struct TopologySpec {
    /// The levels, highest first (e.g. block, rack, kubernetes.io/hostname):
    /// 1 to 16, each label once, kubernetes.io/hostname only as the last.
    /// Immutable.
    // 16 is v0.19.2's MaxItems; the KEP still says 8.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 16),
        extend("x-kubernetes-list-type" = "atomic", "x-kubernetes-validations" = level_rules())
    )]
    pub levels: Vec<TopologyLevel>,
}

super::spec_may_be_absent!(TopologySpec);

/// One level of a Topology.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologyLevel {
    /// The node label whose values are this level's domains, e.g.
    /// cloud.provider.com/topology-block. A qualified label name of 1 to
    /// 316 characters.
    #[schemars(length(min = 1, max = 316), regex(pattern = NODE_LABEL_PATTERN))]
    pub node_label: String,
}

/// Which CEL rule of `spec.levels` a change breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelRule {
    Immutable,
    Unique,
    HostnameLowest,
}

impl LevelRule {
    /// The message the apiserver reports for it.
    pub fn message(self) -> &'static str {
        match self {
            LevelRule::Immutable => IMMUTABLE,
            LevelRule::Unique => NOT_UNIQUE,
            LevelRule::HostnameLowest => HOSTNAME_NOT_LOWEST,
        }
    }
}

/// The CEL rules of `spec.levels` that `new` breaks (against `old` on
/// update), in the CRD's order: the same decisions the apiserver makes,
/// for code that must not trust a Topology it did not see admitted.
pub fn level_rule_violations(
    new: &[TopologyLevel],
    old: Option<&[TopologyLevel]>,
) -> Vec<LevelRule> {
    let mut out = Vec::new();
    if old.is_some_and(|old| old != new) {
        out.push(LevelRule::Immutable);
    }
    let repeated = new
        .iter()
        .any(|l| new.iter().filter(|m| *m == l).count() > 1);
    if repeated {
        out.push(LevelRule::Unique);
    }
    let hostname = |l: &TopologyLevel| l.node_label == HOSTNAME_LABEL;
    if new.iter().any(hostname) && !new.last().is_some_and(hostname) {
        out.push(LevelRule::HostnameLowest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(labels: &[&str]) -> Vec<TopologyLevel> {
        labels
            .iter()
            .map(|l| TopologyLevel {
                node_label: l.to_string(),
            })
            .collect()
    }

    #[test]
    fn level_rules_decide_as_the_crd() {
        let block = "cloud.com/block";
        let rack = "cloud.com/rack";
        let host = HOSTNAME_LABEL;
        type Case<'a> = (
            &'a str,
            &'a [&'a str],
            Option<&'a [&'a str]>,
            &'a [LevelRule],
        );
        let cases: &[Case] = &[
            ("block, rack, hostname", &[block, rack, host], None, &[]),
            ("hostname alone", &[host], None, &[]),
            ("no hostname level", &[block, rack], None, &[]),
            (
                "hostname above rack",
                &[host, rack],
                None,
                &[LevelRule::HostnameLowest],
            ),
            (
                "a repeated label",
                &[block, block],
                None,
                &[LevelRule::Unique],
            ),
            (
                "hostname twice is repeated, and last",
                &[host, host],
                None,
                &[LevelRule::Unique],
            ),
            (
                "unchanged on update",
                &[block, host],
                Some(&[block, host]),
                &[],
            ),
            (
                "a level added on update",
                &[block, rack, host],
                Some(&[block, host]),
                &[LevelRule::Immutable],
            ),
            (
                "levels reordered on update",
                &[rack, block],
                Some(&[block, rack]),
                &[LevelRule::Immutable],
            ),
        ];
        for (name, new, old, want) in cases {
            let old = old.map(levels);
            assert_eq!(
                level_rule_violations(&levels(new), old.as_deref()),
                *want,
                "{name}"
            );
        }
    }

    /// The CRD's own CEL rules, run by the `cel` crate: rule `i` is broken
    /// when it evaluates to false (the transition rule only on update).
    fn cel_violations(new: &[TopologyLevel], old: Option<&[TopologyLevel]>) -> Vec<LevelRule> {
        let all = [
            LevelRule::Immutable,
            LevelRule::Unique,
            LevelRule::HostnameLowest,
        ];
        let rules = level_rules();
        let mut out = Vec::new();
        for (rule, kind) in rules.as_array().unwrap().iter().zip(all) {
            let text = rule["rule"].as_str().unwrap();
            let transition = text.contains("oldSelf");
            if transition && old.is_none() {
                continue;
            }
            let program = cel::Program::compile(text).unwrap();
            let mut ctx = cel::Context::default();
            ctx.add_variable("self", new).unwrap();
            if let Some(old) = old {
                ctx.add_variable("oldSelf", old).unwrap();
            }
            match program.execute(&ctx).unwrap() {
                cel::Value::Bool(true) => {}
                cel::Value::Bool(false) => out.push(kind),
                other => panic!("{text}: {other:?}"),
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn level_rules_decide_as_the_crds_cel(
            new in proptest::collection::vec(0..4usize, 1..5),
            old in proptest::option::of(proptest::collection::vec(0..4usize, 1..5)),
        ) {
            const LABELS: [&str; 4] = ["cloud.com/block", "cloud.com/rack", HOSTNAME_LABEL, "zone"];
            let pick = |ix: &Vec<usize>| levels(&ix.iter().map(|&i| LABELS[i]).collect::<Vec<_>>());
            let (new, old) = (pick(&new), old.as_ref().map(pick));
            proptest::prop_assert_eq!(
                level_rule_violations(&new, old.as_deref()),
                cel_violations(&new, old.as_deref())
            );
        }
    }

    #[test]
    fn messages_are_upstreams() {
        let rules = level_rules();
        let messages: Vec<&str> = rules
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["message"].as_str().unwrap())
            .collect();
        let ours: Vec<&str> = [
            LevelRule::Immutable,
            LevelRule::Unique,
            LevelRule::HostnameLowest,
        ]
        .into_iter()
        .map(LevelRule::message)
        .collect();
        assert_eq!(messages, ours);
    }

    #[test]
    fn a_topology_without_spec_or_levels_reads() {
        for raw in [
            serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                               "metadata": {"name": "t"}}),
            serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                               "metadata": {"name": "t"}, "spec": {}}),
        ] {
            let t: Topology = serde_json::from_value(raw).unwrap();
            assert!(t.spec.levels.is_empty());
            assert_eq!(
                serde_json::to_value(&t.spec).unwrap(),
                serde_json::json!({})
            );
        }
    }
}
