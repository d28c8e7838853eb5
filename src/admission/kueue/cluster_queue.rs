//! ClusterQueue and Cohort validation: upstream's
//! `pkg/webhooks/clusterqueue_webhook.go` (`validateClusterQueueSpec`,
//! `validateResourceGroups`, `validateFlavorQuotas`, `validatePreemption`,
//! `validateFlavorFungibility`, the totals, `validateAdmissionCheckOnFlavors`,
//! `ValidateClusterQueueUpdate`), `cohort_webhook.go` (`validateCohort`) and
//! `common.go` (`validateResourceName`, `validateFairSharing`).

use crate::vocabulary::pointer::At;
use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use super::{
    decode, json_in_go_order, labels, parse_quantity, semantic, Violation, FIELD_IMMUTABLE,
    IS_NEGATIVE,
};
use crate::vocabulary::{go::go_quote, quantity};
use crate::{
    admission::object::DecodeError,
    api::kueue::v1beta2::{
        flavor_fungibility, preemption_policy, ClusterQueue, ClusterQueuePreemption, Cohort,
        FairSharing, FlavorFungibility, FlavorQuotas, ResourceGroup,
    },
};

type Checked = Result<Vec<Violation>, (&'static str, DecodeError)>;

/// Totals upstream enforces beyond the CRD's per-list limits.
pub const MAX_FLAVORS: usize = 256;
pub const MAX_COVERED_RESOURCES: usize = 256;
pub const MAX_FLAVOR_RESOURCES_PER_GROUP: usize = 512;

const LENDING_LIMIT_ABOVE_NOMINAL: &str = "must be less than or equal to the nominalQuota";

/// `validationConfig`, plus whether the owner is a Cohort (which words the
/// limit error after its parent rather than a cohort).
#[derive(Clone, Copy)]
struct Config {
    has_parent: bool,
    enforce_nominal_greater_than_lending: bool,
    is_cohort: bool,
}

/// `ValidateClusterQueue` on create, `ValidateClusterQueueUpdate` on update.
pub fn validate_cluster_queue(new: &Value, old: Option<&Value>) -> Checked {
    let cq: ClusterQueue = decode(new, "object")?;
    let spec = &cq.spec;
    let path = "spec.resourceGroups";
    let groups = spec.resource_groups.as_deref().unwrap_or_default();
    let config = Config {
        has_parent: spec.cohort_name.as_deref().is_some_and(|c| !c.is_empty()),
        enforce_nominal_greater_than_lending: true,
        is_cohort: false,
    };
    let mut errs = resource_groups(groups, config, path)?;
    errs.extend(labels::validate_label_selector(
        spec.namespace_selector.as_ref(),
        "spec.namespaceSelector",
    ));
    if let Some(p) = &spec.preemption {
        errs.extend(preemption(p));
    }
    if let Some(f) = &spec.flavor_fungibility {
        errs.extend(fungibility(f));
    }
    errs.extend(fair_sharing(
        spec.fair_sharing.as_ref(),
        "spec.fairSharing",
    )?);
    errs.extend(totals(groups, path));

    let old_cq: Option<ClusterQueue> = old.map(|o| decode(o, "oldObject")).transpose()?;
    errs.extend(admission_checks_on_flavors(&cq, old_cq.as_ref()));
    if let Some(old) = old {
        let pointer = "/spec/concurrentAdmissionPolicy";
        let (n, o) = (new.at(pointer), old.at(pointer));
        if !semantic::equal(n, o) {
            errs.push(Violation::invalid_json(
                "spec.concurrentAdmissionPolicy",
                n.unwrap_or(&Value::Null),
                FIELD_IMMUTABLE,
            ));
        }
    }
    Ok(errs)
}

/// `validateCohort` (create and update alike).
pub fn validate_cohort(new: &Value) -> Checked {
    let cohort: Cohort = decode(new, "object")?;
    let spec = &cohort.spec;
    let config = Config {
        has_parent: spec.parent_name.as_deref().is_some_and(|p| !p.is_empty()),
        enforce_nominal_greater_than_lending: false,
        is_cohort: true,
    };
    let mut errs = fair_sharing(spec.fair_sharing.as_ref(), "spec.fairSharing")?;
    errs.extend(resource_groups(
        spec.resource_groups.as_deref().unwrap_or_default(),
        config,
        "spec.resourceGroups",
    )?);
    Ok(errs)
}

/// `validateResourceGroups`: a resource and a flavor belong to one group.
fn resource_groups(groups: &[ResourceGroup], config: Config, path: &str) -> Checked {
    let mut errs = Vec::new();
    let mut seen_resources = HashSet::new();
    let mut seen_flavors = HashSet::new();
    for (i, rg) in groups.iter().enumerate() {
        for (j, name) in rg.covered_resources.iter().enumerate() {
            let at = format!("{path}[{i}].coveredResources[{j}]");
            errs.extend(resource_name(name, &at));
            if !seen_resources.insert(name.as_str()) {
                errs.push(Violation::duplicate(
                    at,
                    super::Shown::Str(name.clone()),
                    "",
                ));
            }
        }
        for (j, fq) in rg.flavors.iter().enumerate() {
            let at = format!("{path}[{i}].flavors[{j}]");
            errs.extend(flavor_quotas(fq, &rg.covered_resources, config, &at)?);
            if !seen_flavors.insert(fq.name.as_str()) {
                errs.push(Violation::duplicate(
                    format!("{at}.name"),
                    super::Shown::Str(fq.name.clone()),
                    "",
                ));
            }
        }
    }
    Ok(errs)
}

/// `validateResourceName`: a qualified name.
fn resource_name(name: &str, path: &str) -> Vec<Violation> {
    labels::qualified_name(name)
        .into_iter()
        .map(|m| Violation::invalid(path, name, m))
        .collect()
}

/// `validateFlavorQuotas`: the i-th quota is for the i-th covered resource,
/// quotas are not negative, limits need a parent, and (in a ClusterQueue)
/// the lending limit is at most the nominal quota.
fn flavor_quotas(fq: &FlavorQuotas, covered: &[String], config: Config, path: &str) -> Checked {
    let mut errs = Vec::new();
    for (i, rq) in fq.resources.iter().enumerate().take(covered.len()) {
        let at = format!("{path}.resources[{i}]");
        if rq.name != covered[i] {
            errs.push(Violation::invalid(
                format!("{at}.name"),
                &rq.name,
                "must match the name in coveredResources",
            ));
        }
        let nominal_path = format!("{at}.nominalQuota");
        let nominal = parse_quantity(&rq.nominal_quota.0, &nominal_path, "object")?;
        errs.extend(not_negative(&nominal, &nominal_path));
        if let Some(b) = &rq.borrowing_limit {
            let p = format!("{at}.borrowingLimit");
            let limit = parse_quantity(&b.0, &p, "object")?;
            errs.extend(limit_needs_parent(&limit, config, &p));
            errs.extend(not_negative(&limit, &p));
        }
        if let Some(l) = &rq.lending_limit {
            let p = format!("{at}.lendingLimit");
            let lend = parse_quantity(&l.0, &p, "object")?;
            errs.extend(not_negative(&lend, &p));
            errs.extend(limit_needs_parent(&lend, config, &p));
            if config.enforce_nominal_greater_than_lending && lend.cmp_value(&nominal).is_gt() {
                errs.push(Violation::invalid(
                    p,
                    &lend.canonical(),
                    LENDING_LIMIT_ABOVE_NOMINAL,
                ));
            }
        }
    }
    Ok(errs)
}

/// `validateResourceQuantity`.
fn not_negative(q: &quantity::Quantity, path: &str) -> Option<Violation> {
    q.is_negative()
        .then(|| Violation::invalid(path, &q.canonical(), IS_NEGATIVE))
}

/// `validateLimit`: borrowing and lending need a cohort (or a parent).
fn limit_needs_parent(q: &quantity::Quantity, config: Config, path: &str) -> Option<Violation> {
    (!config.has_parent).then(|| {
        let owner = if config.is_cohort { "parent" } else { "cohort" };
        Violation::invalid(
            path,
            &q.canonical(),
            format!("must be nil when {owner} is empty"),
        )
    })
}

/// `validatePreemption`. Absent policies read as their CRD defaults (the
/// apiserver has filled them in before any webhook sees the object).
fn preemption(p: &ClusterQueuePreemption) -> Option<Violation> {
    let never = preemption_policy::NEVER;
    let reclaim = p.reclaim_within_cohort.as_deref().unwrap_or(never);
    let borrow_policy = p
        .borrow_within_cohort
        .as_ref()
        .map(|b| b.policy.as_deref().unwrap_or(never));
    if reclaim != never || borrow_policy.is_none_or(|b| b == never) {
        return None;
    }
    // The value is the preemption struct as JSON, fields in Go's order.
    let mut shown = serde_json::Map::new();
    shown.insert("reclaimWithinCohort".into(), reclaim.into());
    if let Some(b) = &p.borrow_within_cohort {
        let mut bw = serde_json::Map::new();
        bw.insert("policy".into(), b.policy.as_deref().unwrap_or(never).into());
        if let Some(t) = b.max_priority_threshold {
            bw.insert("maxPriorityThreshold".into(), t.into());
        }
        shown.insert("borrowWithinCohort".into(), Value::Object(bw));
    }
    let within = p.within_cluster_queue.as_deref().unwrap_or(never);
    shown.insert("withinClusterQueue".into(), within.into());
    Some(Violation::Other {
        field: "spec.preemption".into(),
        kind: super::OtherKind::Invalid,
        value: super::Shown::Json(json_in_go_order(
            &Value::Object(shown),
            &[
                "reclaimWithinCohort",
                "borrowWithinCohort",
                "policy",
                "maxPriorityThreshold",
                "withinClusterQueue",
            ],
        )),
        detail: "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never".into(),
    })
}

/// `validateFlavorFungibility`: a preference needs both policies at
/// TryNextFlavor.
fn fungibility(f: &FlavorFungibility) -> Option<Violation> {
    let preference = f.preference.as_deref()?;
    let borrow = f
        .when_can_borrow
        .as_deref()
        .unwrap_or(flavor_fungibility::MAY_STOP_SEARCH);
    let preempt = f
        .when_can_preempt
        .as_deref()
        .unwrap_or(flavor_fungibility::TRY_NEXT_FLAVOR);
    let next = flavor_fungibility::TRY_NEXT_FLAVOR;
    (borrow != next || preempt != next).then(|| {
        Violation::invalid(
            "spec.flavorFungibility.preference",
            preference,
            format!(
                "preference {} requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor",
                go_quote(preference)
            ),
        )
    })
}

/// `validateFairSharing`: the weight is not negative, and not so small
/// that it collapses to zero.
fn fair_sharing(fs: Option<&FairSharing>, path: &str) -> Checked {
    let Some(w) = fs.and_then(|f| f.weight.as_ref()) else {
        return Ok(Vec::new());
    };
    let weight = parse_quantity(&w.0, &format!("{path}.weight"), "object")?;
    let mut errs = Vec::new();
    if weight.is_negative() {
        errs.push(Violation::invalid(path, &weight.canonical(), IS_NEGATIVE));
    }
    if weight.nanos() > 0 && weight.nanos() <= 1 {
        errs.push(Violation::invalid(
            path,
            &weight.canonical(),
            "When not 0, weight must be > 10e-9",
        ));
    }
    Ok(errs)
}

/// `validateTotalFlavors`, `validateTotalCoveredResources`,
/// `validateFlavorResourceCombinations`.
fn totals(groups: &[ResourceGroup], path: &str) -> Vec<Violation> {
    let mut errs = Vec::new();
    let flavors: usize = groups.iter().map(|g| g.flavors.len()).sum();
    if flavors > MAX_FLAVORS {
        errs.push(Violation::invalid_int(
            path,
            flavors as i64,
            format!("total number of flavors across all resourceGroups must be ≤ {MAX_FLAVORS}, got {flavors}"),
        ));
    }
    let covered: usize = groups.iter().map(|g| g.covered_resources.len()).sum();
    if covered > MAX_COVERED_RESOURCES {
        errs.push(Violation::invalid_int(
            path,
            covered as i64,
            format!("total number of covered resources across all resourceGroups must be ≤ {MAX_COVERED_RESOURCES}, got {covered}"),
        ));
    }
    for (i, g) in groups.iter().enumerate() {
        let pairs: usize = g.flavors.iter().map(|f| f.resources.len()).sum();
        if pairs > MAX_FLAVOR_RESOURCES_PER_GROUP {
            errs.push(Violation::invalid_int(
                format!("{path}[{i}]"),
                pairs as i64,
                format!("number of flavor-resource combinations in a resourceGroup must be ≤ {MAX_FLAVOR_RESOURCES_PER_GROUP}, got {pairs}"),
            ));
        }
    }
    errs
}

fn all_flavors(cq: &ClusterQueue) -> BTreeSet<&str> {
    cq.spec
        .resource_groups
        .iter()
        .flatten()
        .flat_map(|g| g.flavors.iter().map(|f| f.name.as_str()))
        .collect()
}

/// `validateAdmissionCheckOnFlavors`: `onFlavors` names flavors of this
/// queue. On update, as upstream without the
/// `RejectUpdatesToCQWithInvalidOnFlavors` gate, a rule whose flavors did
/// not change is not re-checked while the queue's flavors are unchanged, so
/// queues stored with invalid rules stay updatable.
fn admission_checks_on_flavors(cq: &ClusterQueue, old: Option<&ClusterQueue>) -> Vec<Violation> {
    let Some(strategy) = &cq.spec.admission_checks_strategy else {
        return Vec::new();
    };
    let valid = all_flavors(cq);
    let allowed: Vec<String> = valid.iter().map(|s| s.to_string()).collect();
    let on = |r: &crate::api::kueue::v1beta2::AdmissionCheckStrategyRule| -> BTreeSet<String> {
        r.on_flavors.iter().flatten().cloned().collect()
    };
    let unchanged_rules: Vec<(String, BTreeSet<String>)> = match old {
        Some(o) if all_flavors(o) == valid => o
            .spec
            .admission_checks_strategy
            .iter()
            .flat_map(|s| s.admission_checks.iter().map(|r| (r.name.clone(), on(r))))
            .collect(),
        _ => Vec::new(),
    };
    let mut errs = Vec::new();
    for (i, rule) in strategy.admission_checks.iter().enumerate() {
        let flavors = on(rule);
        if unchanged_rules
            .iter()
            .any(|(n, f)| *n == rule.name && *f == flavors)
        {
            continue;
        }
        for (j, f) in rule.on_flavors.iter().flatten().enumerate() {
            if !valid.contains(f.as_str()) {
                errs.push(Violation::not_supported(
                    format!("spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]"),
                    f,
                    &allowed,
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn cq(spec: Value) -> Value {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
               "metadata": {"name": "cq"}, "spec": spec})
    }

    fn errors(v: Result<Vec<Violation>, (&'static str, DecodeError)>) -> Vec<String> {
        v.unwrap().iter().map(ToString::to_string).collect()
    }

    fn create(spec: Value) -> Vec<String> {
        errors(validate_cluster_queue(&cq(spec), None))
    }

    fn group(covered: &[&str], flavors: Value) -> Value {
        json!({"coveredResources": covered, "flavors": flavors})
    }

    fn flavor(name: &str, quotas: &[(&str, &str)]) -> Value {
        let resources: Vec<Value> = quotas
            .iter()
            .map(|(r, q)| json!({"name": r, "nominalQuota": q}))
            .collect();
        json!({"name": name, "resources": resources})
    }

    #[test]
    fn a_valid_queue_passes() {
        let spec = json!({
            "cohortName": "all",
            "namespaceSelector": {},
            "resourceGroups": [
                group(&["cpu", "memory"], json!([
                    flavor("default", &[("cpu", "9"), ("memory", "36Gi")]),
                    flavor("spot", &[("cpu", "1"), ("memory", "1Gi")]),
                ])),
                group(&["nvidia.com/gpu"], json!([flavor("a100", &[("nvidia.com/gpu", "8")])])),
            ],
            "preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}},
            "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                                  "preference": "PreemptionOverBorrowing"},
            "fairSharing": {"weight": "0"},
        });
        assert_eq!(create(spec), Vec::<String>::new());
        assert_eq!(create(json!({})), Vec::<String>::new());
    }

    #[test]
    fn resources_and_flavors_belong_to_one_group() {
        let spec = json!({"resourceGroups": [
            group(&["cpu"], json!([flavor("default", &[("cpu", "1")])])),
            group(&["cpu"], json!([flavor("default", &[("cpu", "1")])])),
        ]});
        assert_eq!(
            create(spec),
            [
                r#"spec.resourceGroups[1].coveredResources[0]: Duplicate value: "cpu""#,
                r#"spec.resourceGroups[1].flavors[0].name: Duplicate value: "default""#,
            ]
        );
    }

    #[test]
    fn covered_resources_are_qualified_names() {
        let spec = json!({"resourceGroups": [
            group(&["@cpu"], json!([flavor("default", &[("@cpu", "1")])])),
        ]});
        assert_eq!(
            create(spec),
            [
                r#"spec.resourceGroups[0].coveredResources[0]: Invalid value: "@cpu": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#
            ]
        );
    }

    #[test]
    fn quotas_follow_the_covered_resources_in_order() {
        let spec = json!({"resourceGroups": [
            group(&["cpu", "memory"], json!([flavor("default", &[("memory", "1Gi"), ("cpu", "1")])])),
        ]});
        assert_eq!(
            create(spec),
            [
                r#"spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": must match the name in coveredResources"#,
                r#"spec.resourceGroups[0].flavors[0].resources[1].name: Invalid value: "cpu": must match the name in coveredResources"#,
            ]
        );
    }

    #[test]
    fn quotas_are_not_negative() {
        let spec = json!({"cohortName": "c", "resourceGroups": [group(&["cpu"], json!([{
            "name": "default",
            "resources": [{"name": "cpu", "nominalQuota": "-1000m", "borrowingLimit": "-2", "lendingLimit": "-0.5"}],
        }]))]});
        assert_eq!(
            create(spec),
            [
                r#"spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "-1": must be greater than or equal to 0"#,
                r#"spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "-2": must be greater than or equal to 0"#,
                r#"spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "-500m": must be greater than or equal to 0"#,
                // -0.5 is more than -1: upstream reports that too.
                r#"spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "-500m": must be less than or equal to the nominalQuota"#,
            ]
        );
    }

    #[test]
    fn limits_need_a_cohort_and_lending_stays_within_nominal() {
        let spec = json!({"resourceGroups": [group(&["cpu"], json!([{
            "name": "default",
            "resources": [{"name": "cpu", "nominalQuota": "1", "borrowingLimit": "1", "lendingLimit": "1500m"}],
        }]))]});
        assert_eq!(
            create(spec.clone()),
            [
                r#"spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "1": must be nil when cohort is empty"#,
                r#"spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "1500m": must be nil when cohort is empty"#,
                r#"spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "1500m": must be less than or equal to the nominalQuota"#,
            ]
        );
        let mut with_cohort = spec;
        with_cohort["cohortName"] = json!("c");
        with_cohort["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] =
            json!("1000m");
        assert_eq!(create(with_cohort), Vec::<String>::new());
    }

    #[test]
    fn reclaim_never_with_borrow_preemption_is_refused() {
        assert_eq!(
            create(json!({"preemption": {"reclaimWithinCohort": "Never",
                                         "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 10},
                                         "withinClusterQueue": "LowerPriority"}})),
            [
                r#"spec.preemption: Invalid value: {"reclaimWithinCohort":"Never","borrowWithinCohort":{"policy":"LowerPriority","maxPriorityThreshold":10},"withinClusterQueue":"LowerPriority"}: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"#
            ]
        );
        // reclaimWithinCohort defaults to Never.
        assert_eq!(
            create(json!({"preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}}}))
                .len(),
            1
        );
        for ok in [
            json!({"preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}}),
            json!({"preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Never"}}}),
            json!({"preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {}}}),
            json!({"preemption": {"reclaimWithinCohort": "Never"}}),
        ] {
            assert_eq!(create(ok.clone()), Vec::<String>::new(), "{ok}");
        }
    }

    #[test]
    fn fungibility_preference_needs_try_next_flavor_twice() {
        assert_eq!(
            create(
                json!({"flavorFungibility": {"whenCanBorrow": "MayStopSearch",
                                                "whenCanPreempt": "TryNextFlavor",
                                                "preference": "BorrowingOverPreemption"}})
            ),
            [
                r#"spec.flavorFungibility.preference: Invalid value: "BorrowingOverPreemption": preference "BorrowingOverPreemption" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor"#
            ]
        );
        // whenCanBorrow defaults to MayStopSearch.
        assert_eq!(
            create(json!({"flavorFungibility": {"preference": "PreemptionOverBorrowing"}})).len(),
            1
        );
        assert_eq!(
            create(
                json!({"flavorFungibility": {"whenCanBorrow": "TryNextFlavor",
                                                "preference": "PreemptionOverBorrowing"}})
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn fair_sharing_weight_is_positive_or_zero() {
        assert_eq!(
            create(json!({"fairSharing": {"weight": "-1"}})),
            [r#"spec.fairSharing: Invalid value: "-1": must be greater than or equal to 0"#]
        );
        assert_eq!(
            create(json!({"fairSharing": {"weight": "0.0000000001"}})),
            [r#"spec.fairSharing: Invalid value: "1n": When not 0, weight must be > 10e-9"#]
        );
        assert_eq!(
            create(json!({"fairSharing": {"weight": "2n"}})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn namespace_selector_is_a_valid_selector() {
        assert_eq!(
            create(json!({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]}})),
            ["spec.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"]
        );
    }

    #[test]
    fn totals_are_bounded() {
        // 5 groups of 60 flavors: 300 flavors, 5 covered resources.
        let groups: Vec<Value> = (0..5)
            .map(|g| {
                let r = format!("example.com/r{g}");
                let flavors: Vec<Value> = (0..60)
                    .map(|f| flavor(&format!("f{g}-{f}"), &[(r.as_str(), "1")]))
                    .collect();
                group(&[r.as_str()], Value::Array(flavors))
            })
            .collect();
        assert_eq!(
            create(json!({"resourceGroups": groups})),
            ["spec.resourceGroups: Invalid value: 300: total number of flavors across all resourceGroups must be ≤ 256, got 300"]
        );
        // 5 groups of 60 covered resources: 300 covered; 9 flavors x 60 = 540 pairs in each.
        let groups: Vec<Value> = (0..5)
            .map(|g| {
                let covered: Vec<String> =
                    (0..60).map(|r| format!("example.com/g{g}-r{r}")).collect();
                let refs: Vec<&str> = covered.iter().map(String::as_str).collect();
                let flavors: Vec<Value> = (0..9)
                    .map(|f| {
                        let q: Vec<(&str, &str)> = refs.iter().map(|r| (*r, "1")).collect();
                        flavor(&format!("f{g}-{f}"), &q)
                    })
                    .collect();
                group(&refs, Value::Array(flavors))
            })
            .collect();
        let errs = create(json!({"resourceGroups": groups}));
        assert_eq!(errs.len(), 6, "{errs:?}");
        assert_eq!(errs[0], "spec.resourceGroups: Invalid value: 300: total number of covered resources across all resourceGroups must be ≤ 256, got 300");
        assert_eq!(errs[1], "spec.resourceGroups[0]: Invalid value: 540: number of flavor-resource combinations in a resourceGroup must be ≤ 512, got 540");
    }

    #[test]
    fn admission_checks_apply_to_the_queues_flavors() {
        let spec = json!({
            "resourceGroups": [group(&["cpu"], json!([flavor("b", &[("cpu", "1")]), flavor("a", &[("cpu", "1")])]))],
            "admissionChecksStrategy": {"admissionChecks": [
                {"name": "prov", "onFlavors": ["a", "gone"]},
            ]},
        });
        assert_eq!(
            create(spec.clone()),
            [
                r#"spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]: Unsupported value: "gone": supported values: "a", "b""#
            ]
        );
        // An unchanged rule of a stored queue whose flavors did not change
        // is not re-checked; a changed one is.
        let update = |new: &Value| {
            errors(validate_cluster_queue(
                &cq(new.clone()),
                Some(&cq(spec.clone())),
            ))
        };
        let mut relabelled = spec.clone();
        relabelled["cohortName"] = json!("c");
        assert_eq!(update(&relabelled), Vec::<String>::new());
        let mut changed = spec.clone();
        changed["admissionChecksStrategy"]["admissionChecks"][0]["onFlavors"] = json!(["gone"]);
        assert_eq!(update(&changed).len(), 1);
    }

    #[test]
    fn concurrent_admission_policy_is_immutable() {
        let old = cq(
            json!({"concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}}}),
        );
        let new = cq(
            json!({"concurrentAdmissionPolicy": {"migration": {"mode": "RetainFirstAdmission"}}}),
        );
        assert_eq!(
            errors(validate_cluster_queue(&new, Some(&old))),
            [
                r#"spec.concurrentAdmissionPolicy: Invalid value: {"migration":{"mode":"RetainFirstAdmission"}}: field is immutable"#
            ]
        );
        assert_eq!(
            errors(validate_cluster_queue(&old, Some(&old))),
            Vec::<String>::new()
        );
        assert_eq!(
            errors(validate_cluster_queue(&cq(json!({})), Some(&old))),
            ["spec.concurrentAdmissionPolicy: Invalid value: null: field is immutable"]
        );
    }

    #[test]
    fn cohorts_validate_their_own_quota_against_their_parent() {
        let cohort = |spec: Value| {
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                                          "metadata": {"name": "c"}, "spec": spec})
        };
        let spec = json!({
            "fairSharing": {"weight": "-1"},
            "resourceGroups": [group(&["cpu"], json!([{"name": "f", "resources": [
                {"name": "cpu", "nominalQuota": "1", "lendingLimit": "2"}]}]))],
        });
        let errs = errors(validate_cohort(&cohort(spec.clone())));
        assert_eq!(
            errs,
            [
                r#"spec.fairSharing: Invalid value: "-1": must be greater than or equal to 0"#,
                r#"spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "2": must be nil when parent is empty"#,
            ]
        );
        let mut with_parent = spec;
        with_parent["parentName"] = json!("root");
        with_parent["fairSharing"] = json!({"weight": "1"});
        // A Cohort may lend more than its own nominal quota.
        assert_eq!(
            errors(validate_cohort(&cohort(with_parent))),
            Vec::<String>::new()
        );
        assert_eq!(
            errors(validate_cohort(&cohort(Value::Null))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn unreadable_quantities_are_decode_errors() {
        let spec =
            json!({"resourceGroups": [group(&["cpu"], json!([flavor("f", &[("cpu", "lots")])]))]});
        let (what, e) = validate_cluster_queue(&cq(spec), None).unwrap_err();
        assert_eq!(what, "object");
        assert_eq!(
            e.field,
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
        );
        assert_eq!(e.message, quantity::FORMAT_WRONG);
        let (_, e) = validate_cluster_queue(&cq(json!({"resourceGroups": "x"})), None).unwrap_err();
        assert_eq!(e.field, "spec.resourceGroups");
    }
}
