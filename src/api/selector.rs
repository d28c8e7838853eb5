//! Kubernetes label selectors (`matchLabels` + `matchExpressions`), as used
//! by `managedJobsNamespaceSelector` and ClusterQueue namespace selectors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// Labels as a lookup; lets callers match without building a map.
pub trait Labels {
    fn get(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn get(&self, key: &str) -> Option<&str> {
        BTreeMap::get(self, key).map(String::as_str)
    }
}

/// Only `kubernetes.io/metadata.name`, which the apiserver sets on every
/// namespace: what is known of a namespace without a cluster connection.
pub struct NamespaceNameOnly<'a>(pub &'a str);

impl Labels for NamespaceNameOnly<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == NAMESPACE_NAME_LABEL).then_some(self.0)
    }
}

pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

impl LabelSelector {
    /// `kubernetes.io/metadata.name NotIn [names]`.
    pub fn excluding_namespaces(names: &[&str]) -> Self {
        LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![Requirement {
                key: NAMESPACE_NAME_LABEL.into(),
                operator: Operator::NotIn,
                values: names.iter().map(|s| s.to_string()).collect(),
            }],
        }
    }

    /// Checks the shape rules the apiserver enforces, naming the fix.
    pub fn validate(&self) -> Result<(), String> {
        for (i, r) in self.match_expressions.iter().enumerate() {
            match r.operator {
                Operator::In | Operator::NotIn if r.values.is_empty() => {
                    return Err(format!(
                        "matchExpressions[{i}].values: must be specified when `operator` is 'In' or 'NotIn'"
                    ))
                }
                Operator::Exists | Operator::DoesNotExist if !r.values.is_empty() => {
                    return Err(format!(
                        "matchExpressions[{i}].values: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// An empty selector matches everything.
    pub fn matches(&self, labels: &impl Labels) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v.as_str()))
            && self.match_expressions.iter().all(|r| {
                let v = labels.get(&r.key);
                match r.operator {
                    Operator::In => v.is_some_and(|v| r.values.iter().any(|x| x == v)),
                    Operator::NotIn => v.is_none_or(|v| r.values.iter().all(|x| x != v)),
                    Operator::Exists => v.is_some(),
                    Operator::DoesNotExist => v.is_none(),
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn default_selector_excludes_system_namespaces() {
        let s = LabelSelector::excluding_namespaces(&["kube-system", "batchgate-system"]);
        assert!(s.matches(&NamespaceNameOnly("team-a")));
        assert!(!s.matches(&NamespaceNameOnly("kube-system")));
        assert!(!s.matches(&NamespaceNameOnly("batchgate-system")));
    }

    #[test]
    fn operators() {
        let yaml = r#"
matchLabels: {team: a}
matchExpressions:
  - {key: tier, operator: In, values: [batch, gpu]}
  - {key: legacy, operator: DoesNotExist}
  - {key: env, operator: NotIn, values: [prod]}
  - {key: team, operator: Exists}
"#;
        let s: LabelSelector = serde_yaml::from_str(yaml).unwrap();
        s.validate().unwrap();
        assert!(s.matches(&labels(&[("team", "a"), ("tier", "gpu")])));
        assert!(!s.matches(&labels(&[("team", "a"), ("tier", "web")])));
        assert!(!s.matches(&labels(&[("team", "a"), ("tier", "gpu"), ("legacy", "")])));
        assert!(!s.matches(&labels(&[("team", "a"), ("tier", "gpu"), ("env", "prod")])));
        assert!(!s.matches(&labels(&[("team", "b"), ("tier", "gpu")])));
        assert!(LabelSelector::default().matches(&labels(&[])));
    }

    #[test]
    fn validation_names_the_field() {
        let s: LabelSelector =
            serde_yaml::from_str("matchExpressions: [{key: a, operator: In}]").unwrap();
        assert!(s
            .validate()
            .unwrap_err()
            .starts_with("matchExpressions[0].values"));
    }
}
