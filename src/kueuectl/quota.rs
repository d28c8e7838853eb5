//! `--nominal-quota`, `--borrowing-limit` and `--lending-limit` of
//! `create clusterqueue`: upstream's `FLAVOR:res=val;res=val,FLAVOR2:...`
//! syntax, checked the way upstream checks it, and merged into resource
//! groups the way upstream merges them (first by flavor, then flavors with
//! the same set of covered resources share a group).

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::api::kueue::v1beta2::{FlavorQuotas, ResourceGroup, ResourceQuota};
use crate::queueing::quantity;

/// Upstream's errors, with its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaError {
    /// The value does not match upstream's pattern
    /// `^([a-z0-9][a-z0-9\-\.]{0,252}):((\w+[\.-]?)*\/?\w+=\w+;)*(\w+[\.-]?)*\/?\w+=\w+;?$`.
    #[error("invalid resources specification")]
    ResourcesSpec,
    /// A value is not a Kubernetes quantity.
    #[error("invalid resource quota")]
    ResourceQuota,
    /// The same flavor is listed with different resources.
    #[error("invalid flavor")]
    Flavor,
    /// Two groups would share a resource.
    #[error("invalid resource group")]
    ResourceGroup,
}

/// Which flag a specification came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaKind {
    Nominal,
    Borrowing,
    Lending,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `[a-z0-9][a-z0-9\-\.]{0,252}`
fn flavor_name_ok(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.len() <= 253
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

/// `(\w+[\.-]?)*`: word characters with single `.` or `-` between (or
/// after) them, possibly empty.
fn segments_ok(s: &str) -> bool {
    let mut prev_word = false;
    for (i, c) in s.chars().enumerate() {
        if is_word(c) {
            prev_word = true;
        } else if (c == '.' || c == '-') && i > 0 && prev_word {
            prev_word = false;
        } else {
            return false;
        }
    }
    true
}

/// `(\w+[\.-]?)*\/?\w+`
fn resource_name_ok(s: &str) -> bool {
    match s.rsplit_once('/') {
        Some((prefix, name)) => {
            segments_ok(prefix) && !name.is_empty() && name.chars().all(is_word)
        }
        None => !s.is_empty() && segments_ok(s) && s.chars().next_back().is_some_and(is_word),
    }
}

/// `name=value` with `value` `\w+`.
fn item_ok(s: &str) -> bool {
    match s.split_once('=') {
        Some((name, value)) => {
            resource_name_ok(name) && !value.is_empty() && value.chars().all(is_word)
        }
        None => false,
    }
}

/// Whether `spec` (one comma-separated element of a flag) matches
/// upstream's pattern.
pub fn matches_pattern(spec: &str) -> bool {
    let Some((flavor, rest)) = spec.split_once(':') else {
        return false;
    };
    if !flavor_name_ok(flavor) {
        return false;
    }
    let body = rest.strip_suffix(';').unwrap_or(rest);
    !body.is_empty() && body.split(';').all(item_ok)
}

/// One flag element as a one-flavor resource group.
fn to_group(spec: &str, kind: QuotaKind) -> Result<ResourceGroup, QuotaError> {
    if !matches_pattern(spec) {
        return Err(QuotaError::ResourcesSpec);
    }
    let (flavor, rest) = spec.split_once(':').ok_or(QuotaError::ResourcesSpec)?;
    let mut covered = Vec::new();
    let mut resources = Vec::new();
    // A trailing ';' leaves an empty item, which upstream reads as an
    // empty quantity and refuses.
    for item in rest.split(';') {
        let (name, value) = item.split_once('=').unwrap_or((item, ""));
        let (name, value) = (name.trim(), value.trim());
        if quantity::parse(value).is_err() {
            return Err(QuotaError::ResourceQuota);
        }
        let q = Quantity(value.to_string());
        let mut rq = ResourceQuota {
            name: name.to_string(),
            nominal_quota: Quantity("0".into()),
            borrowing_limit: None,
            lending_limit: None,
        };
        match kind {
            QuotaKind::Nominal => rq.nominal_quota = q,
            QuotaKind::Borrowing => rq.borrowing_limit = Some(q),
            QuotaKind::Lending => rq.lending_limit = Some(q),
        }
        covered.push(name.to_string());
        resources.push(rq);
    }
    Ok(ResourceGroup {
        covered_resources: covered,
        flavors: vec![FlavorQuotas {
            name: flavor.trim().to_string(),
            resources,
        }],
    })
}

fn is_zero(q: &Quantity) -> bool {
    quantity::parse(&q.0).is_ok_and(|v| v == 0)
}

/// The resource groups of a ClusterQueue from the three flags' elements
/// (already split at commas).
pub fn resource_groups(
    nominal: &[String],
    borrowing: &[String],
    lending: &[String],
) -> Result<Vec<ResourceGroup>, QuotaError> {
    let mut groups = Vec::new();
    for (specs, kind) in [
        (nominal, QuotaKind::Nominal),
        (borrowing, QuotaKind::Borrowing),
        (lending, QuotaKind::Lending),
    ] {
        for s in specs {
            groups.push(to_group(s, kind)?);
        }
    }
    merge_by_covered_resources(merge_by_flavor(groups)?)
}

/// Groups naming the same flavor become one; they must list the same
/// resources (else "invalid flavor"). A nominal quota of zero, an absent
/// borrowing or lending limit is taken from the later group.
pub fn merge_by_flavor(groups: Vec<ResourceGroup>) -> Result<Vec<ResourceGroup>, QuotaError> {
    let mut merged: Vec<ResourceGroup> = Vec::new();
    for g in groups {
        let Some(f) = g.flavors.first() else { continue };
        let Some(at) = merged.iter().position(|m| m.flavors[0].name == f.name) else {
            merged.push(g);
            continue;
        };
        let into = &mut merged[at].flavors[0].resources;
        let names = |rs: &[ResourceQuota]| -> BTreeSet<String> {
            rs.iter().map(|r| r.name.clone()).collect()
        };
        if names(into) != names(&f.resources) {
            return Err(QuotaError::Flavor);
        }
        for rq in into.iter_mut() {
            let Some(other) = f.resources.iter().find(|r| r.name == rq.name) else {
                return Err(QuotaError::Flavor);
            };
            if is_zero(&rq.nominal_quota) {
                rq.nominal_quota = other.nominal_quota.clone();
            }
            if rq.borrowing_limit.is_none() {
                rq.borrowing_limit = other.borrowing_limit.clone();
            }
            if rq.lending_limit.is_none() {
                rq.lending_limit = other.lending_limit.clone();
            }
        }
    }
    Ok(merged)
}

/// Flavors covering the same set of resources share one group; a flavor
/// covering only part of another group's resources is refused ("invalid
/// resource group"): a resource belongs to one group only.
pub fn merge_by_covered_resources(
    groups: Vec<ResourceGroup>,
) -> Result<Vec<ResourceGroup>, QuotaError> {
    let mut merged: Vec<(BTreeSet<String>, ResourceGroup)> = Vec::new();
    for g in groups {
        let set: BTreeSet<String> = g.covered_resources.iter().cloned().collect();
        if let Some((_, m)) = merged.iter_mut().find(|(s, _)| *s == set) {
            // The group's own resource order is kept for every flavor.
            let order = m.covered_resources.clone();
            for mut f in g.flavors {
                f.resources
                    .sort_by_key(|r| order.iter().position(|o| *o == r.name));
                m.flavors.push(f);
            }
            continue;
        }
        if merged.iter().any(|(s, _)| !s.is_disjoint(&set)) {
            return Err(QuotaError::ResourceGroup);
        }
        merged.push((set, g));
    }
    Ok(merged.into_iter().map(|(_, g)| g).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn q(v: &str) -> Quantity {
        Quantity(v.into())
    }

    #[test]
    fn the_pattern_accepts_upstream_examples() {
        for ok in [
            "alpha:cpu=0;memory=0",
            "beta:gpu=0",
            "alpha:cpu=9;memory=36Gi;nvidia.com/gpu=10",
            "a.b-c:cpu=500m;",
            "x:example.com/gpu=1",
            "x:a-b.c=1",
        ] {
            assert!(matches_pattern(ok), "{ok}");
        }
    }

    #[test]
    fn the_pattern_refuses_what_upstream_refuses() {
        for bad in [
            "",
            "alpha",
            "alpha:",
            "Alpha:cpu=1",
            "-alpha:cpu=1",
            "alpha:cpu",
            "alpha:cpu=",
            "alpha:cpu=0.5",
            "alpha:cpu=1;;memory=1",
            "alpha:cpu=1 ;memory=1",
            "alpha:.cpu=1",
            "alpha:cpu..x=1",
            "alpha:nvidia.com/mig-1g=1",
            "alpha:a/b/c=1",
            "alpha:cpu-=1",
        ] {
            assert!(!matches_pattern(bad), "{bad}");
            assert_eq!(
                resource_groups(&s(&[bad]), &[], &[]),
                Err(QuotaError::ResourcesSpec),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_value_that_is_no_quantity_or_a_trailing_semicolon_is_an_invalid_resource_quota() {
        assert_eq!(
            resource_groups(&s(&["alpha:cpu=abc"]), &[], &[]),
            Err(QuotaError::ResourceQuota)
        );
        assert_eq!(
            resource_groups(&s(&["alpha:cpu=1;"]), &[], &[]),
            Err(QuotaError::ResourceQuota)
        );
    }

    #[test]
    fn one_flavor_one_group() {
        let g = resource_groups(&s(&["alpha:cpu=9;memory=36Gi"]), &[], &[]).unwrap();
        assert_eq!(
            g,
            vec![ResourceGroup {
                covered_resources: s(&["cpu", "memory"]),
                flavors: vec![FlavorQuotas {
                    name: "alpha".into(),
                    resources: vec![
                        ResourceQuota {
                            name: "cpu".into(),
                            nominal_quota: q("9"),
                            borrowing_limit: None,
                            lending_limit: None
                        },
                        ResourceQuota {
                            name: "memory".into(),
                            nominal_quota: q("36Gi"),
                            borrowing_limit: None,
                            lending_limit: None
                        },
                    ]
                }]
            }]
        );
    }

    #[test]
    fn limits_merge_into_the_flavor_and_same_resources_share_a_group() {
        let g = resource_groups(
            &s(&[
                "alpha:cpu=9;memory=36Gi",
                "beta:gpu=2",
                "gamma:memory=1Gi;cpu=3",
            ]),
            &s(&["alpha:cpu=1;memory=1Gi"]),
            &s(&["alpha:memory=2Gi;cpu=2", "beta:gpu=1"]),
        )
        .unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].covered_resources, s(&["cpu", "memory"]));
        let names: Vec<&str> = g[0].flavors.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["alpha", "gamma"]);
        let alpha = &g[0].flavors[0].resources;
        assert_eq!(alpha[0].name, "cpu");
        assert_eq!(alpha[0].nominal_quota, q("9"));
        assert_eq!(alpha[0].borrowing_limit, Some(q("1")));
        assert_eq!(alpha[0].lending_limit, Some(q("2")));
        assert_eq!(alpha[1].lending_limit, Some(q("2Gi")));
        // gamma listed memory first: reordered to the group's order.
        let gamma = &g[0].flavors[1].resources;
        assert_eq!(gamma[0].name, "cpu");
        assert_eq!(gamma[0].nominal_quota, q("3"));
        assert_eq!(g[1].covered_resources, s(&["gpu"]));
        assert_eq!(g[1].flavors[0].resources[0].lending_limit, Some(q("1")));
    }

    #[test]
    fn a_limit_alone_gives_a_zero_nominal_quota() {
        let g = resource_groups(&[], &s(&["alpha:cpu=1"]), &[]).unwrap();
        assert_eq!(g[0].flavors[0].resources[0].nominal_quota, q("0"));
        assert_eq!(g[0].flavors[0].resources[0].borrowing_limit, Some(q("1")));
    }

    #[test]
    fn a_flavor_listed_with_other_resources_is_an_invalid_flavor() {
        assert_eq!(
            resource_groups(&s(&["alpha:cpu=1"]), &s(&["alpha:cpu=1;memory=1"]), &[]),
            Err(QuotaError::Flavor)
        );
        assert_eq!(
            resource_groups(&s(&["alpha:cpu=1", "alpha:memory=1"]), &[], &[]),
            Err(QuotaError::Flavor)
        );
    }

    #[test]
    fn groups_sharing_a_resource_are_an_invalid_resource_group() {
        assert_eq!(
            resource_groups(&s(&["alpha:cpu=1;memory=1", "beta:cpu=1"]), &[], &[]),
            Err(QuotaError::ResourceGroup)
        );
        assert_eq!(
            resource_groups(&s(&["alpha:cpu=1", "beta:cpu=1;memory=1"]), &[], &[]),
            Err(QuotaError::ResourceGroup)
        );
    }
}
