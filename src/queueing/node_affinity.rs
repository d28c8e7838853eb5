//! A pod set's required node affinity
//! (`affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`),
//! as Kueue v0.19.2 reads it: flavor assignment matches it against each
//! flavor's node labels, on that flavor's own label keys only
//! (`flavorSelector`), and topology-aware placement against each node's
//! labels (its scheduling simulator's `AffinitySelector`). Terms are ORed,
//! a term's requirements ANDed, as kube-scheduler's `nodeaffinity` does.
//! Only `matchExpressions` are read: Kueue's flavor check drops
//! `matchFields`, and a node's name is for kube-scheduler to check.

use std::collections::BTreeMap;

/// `nodeSelectorTerms`; `None` when the pod set has no required affinity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeAffinity(pub Option<Vec<Term>>);

/// One term's `matchExpressions`. A term of `matchFields` alone reads as
/// empty and matches every node here: what it asks of a node's name is
/// left to kube-scheduler.
pub type Term = Vec<Requirement>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl Operator {
    pub fn parse(s: &str) -> Option<Operator> {
        Some(match s {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            _ => return None,
        })
    }
}

impl Requirement {
    /// `labels.Requirement.Matches`.
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::Gt | Operator::Lt => {
                let (Some(v), [bound]) = (value, self.values.as_slice()) else {
                    return false;
                };
                match (v.parse::<i64>(), bound.parse::<i64>()) {
                    (Ok(v), Ok(b)) if self.operator == Operator::Gt => v > b,
                    (Ok(v), Ok(b)) => v < b,
                    _ => false,
                }
            }
        }
    }
}

impl NodeAffinity {
    /// Whether a node with `labels` satisfies the affinity (any term whose
    /// every requirement matches; no affinity matches every node).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match &self.0 {
            None => true,
            Some(terms) => terms.iter().any(|t| t.iter().all(|r| r.matches(labels))),
        }
    }

    /// Kueue's `flavorSelector` check: the affinity with every requirement
    /// on a key the flavor does not label dropped, matched against the
    /// flavor's node labels. A term left empty drops the whole affinity
    /// (its terms are ORed: that term matches any flavor).
    pub fn matches_flavor(&self, flavor_labels: &BTreeMap<String, String>) -> bool {
        let Some(terms) = &self.0 else {
            return true;
        };
        let mut kept: Vec<Term> = Vec::with_capacity(terms.len());
        for t in terms {
            let term: Term = t
                .iter()
                .filter(|r| flavor_labels.contains_key(&r.key))
                .cloned()
                .collect();
            if term.is_empty() {
                return true;
            }
            kept.push(term);
        }
        kept.is_empty() || NodeAffinity(Some(kept)).matches(flavor_labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        Requirement {
            key: key.into(),
            operator: op,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn operators_match_as_label_selectors_do() {
        let node = labels(&[("zone", "a"), ("gen", "5")]);
        let one = |r: Requirement| NodeAffinity(Some(vec![vec![r]])).matches(&node);
        assert!(one(req("zone", Operator::In, &["a", "b"])));
        assert!(!one(req("zone", Operator::In, &["b"])));
        assert!(one(req("zone", Operator::NotIn, &["b"])));
        assert!(one(req("disk", Operator::NotIn, &["ssd"])));
        assert!(!one(req("zone", Operator::NotIn, &["a"])));
        assert!(one(req("zone", Operator::Exists, &[])));
        assert!(one(req("disk", Operator::DoesNotExist, &[])));
        assert!(one(req("gen", Operator::Gt, &["4"])));
        assert!(!one(req("gen", Operator::Lt, &["4"])));
        assert!(!one(req("zone", Operator::Gt, &["4"])));
        assert!(!one(req("disk", Operator::Lt, &["4"])));
    }

    #[test]
    fn terms_are_ored() {
        let node = labels(&[("zone", "a")]);
        let a = vec![req("zone", Operator::In, &["a"])];
        let b = vec![req("zone", Operator::In, &["b"])];
        assert!(NodeAffinity(Some(vec![b.clone(), a])).matches(&node));
        assert!(!NodeAffinity(Some(vec![b])).matches(&node));
        // A term of matchFields alone: left to kube-scheduler.
        assert!(NodeAffinity(Some(vec![vec![]])).matches(&node));
        assert!(NodeAffinity(None).matches(&node));
    }

    /// Kueue's `flavorSelector`: only the flavor's own label keys count, and
    /// a term with none of them lets every flavor through.
    #[test]
    fn a_flavor_is_matched_on_its_own_label_keys() {
        let spot = labels(&[("instance", "spot")]);
        let wants = |v: &str| {
            NodeAffinity(Some(vec![vec![
                req("instance", Operator::In, &[v]),
                req("zone", Operator::In, &["x"]),
            ]]))
        };
        assert!(wants("spot").matches_flavor(&spot));
        assert!(!wants("on-demand").matches_flavor(&spot));
        // No term names a key the flavor labels: any flavor.
        let other = NodeAffinity(Some(vec![vec![req("zone", Operator::In, &["x"])]]));
        assert!(other.matches_flavor(&spot));
        assert!(other.matches_flavor(&labels(&[])));
        // One term without the flavor's keys: the affinity is dropped.
        let either = NodeAffinity(Some(vec![
            vec![req("instance", Operator::In, &["on-demand"])],
            vec![req("zone", Operator::In, &["x"])],
        ]));
        assert!(either.matches_flavor(&spot));
    }
}
