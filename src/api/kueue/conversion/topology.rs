//! A Workload's topology assignment in its two shapes: v1beta1 lists every
//! domain (`domains[]: {values, count}`), v1beta2 packs runs of domains into
//! `slices[]` with common prefixes and suffixes and universal values.
//!
//! [`encode`] chooses the v1beta2 shape as Kueue v0.19.2 does with its
//! default gates (TASAssignmentsEncodingByHostnamePrefix on): runs of
//! hostnames sharing a reusable `-`-delimited prefix become their own
//! slices, unless a single slice serializes smaller. [`expand`] lists the
//! domains back in order. Values are JSON as on the wire. Kueue's own
//! tables for this encoder are ported in `topology/cases.rs`.

use std::{collections::HashMap, ops::Range};

use serde_json::{json, Map, Value};

use crate::vocabulary::keys::HOSTNAME_LABEL;

/// The v1beta2 limit of domains in one slice.
const MAX_DOMAINS_PER_SLICE: usize = 100_000;
/// The v1beta2 limit of slices in one assignment.
const MAX_SLICES: usize = 1_000;

/// One domain: a value per level and a pod count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    pub values: Vec<String>,
    pub count: i64,
}

/// What is malformed, and where (relative to the topology assignment).
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeError {
    pub field: String,
    pub problem: String,
}

fn bad(field: impl Into<String>, problem: impl Into<String>) -> ShapeError {
    ShapeError {
        field: field.into(),
        problem: problem.into(),
    }
}

/// Reads v1beta1 `domains[]`.
pub fn read_domains(domains: &Value, levels: usize) -> Result<Vec<Domain>, ShapeError> {
    let list = domains
        .as_array()
        .ok_or_else(|| bad("domains", "must be a list of {values, count}"))?;
    list.iter()
        .enumerate()
        .map(|(i, d)| {
            let values = d
                .get("values")
                .and_then(Value::as_array)
                .ok_or_else(|| bad(format!("domains[{i}].values"), "must be a list of strings"))?
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(format!("domains[{i}].values"), "must be a list of strings"))?;
            if values.len() != levels {
                return Err(bad(
                    format!("domains[{i}].values"),
                    format!(
                        "has {} values for {levels} levels; give one value per level",
                        values.len()
                    ),
                ));
            }
            let count = d
                .get("count")
                .and_then(Value::as_i64)
                .ok_or_else(|| bad(format!("domains[{i}].count"), "must be an integer"))?;
            Ok(Domain { values, count })
        })
        .collect()
}

/// Writes v1beta1 `domains[]`.
pub fn write_domains(domains: &[Domain]) -> Value {
    Value::Array(
        domains
            .iter()
            .map(|d| json!({"values": d.values, "count": d.count}))
            .collect(),
    )
}

/// The domains a v1beta2 `slices[]` lists, in order.
pub fn expand(slices: &Value, levels: usize) -> Result<Vec<Domain>, ShapeError> {
    let list = slices
        .as_array()
        .ok_or_else(|| bad("slices", "must be a list"))?;
    let mut out = Vec::new();
    for (s, slice) in list.iter().enumerate() {
        let at = |f: &str| format!("slices[{s}].{f}");
        let n = slice.get("domainCount").map_or(Some(0), Value::as_i64);
        let n = n
            .filter(|n| (0..=MAX_DOMAINS_PER_SLICE as i64).contains(n))
            .ok_or_else(|| {
                bad(
                    at("domainCount"),
                    format!("must be an integer from 0 to {MAX_DOMAINS_PER_SLICE}"),
                )
            })? as usize;
        let per_level = match slice.get("valuesPerLevel") {
            None => &[][..],
            Some(v) => v
                .as_array()
                .ok_or_else(|| bad(at("valuesPerLevel"), "must be a list"))?,
        };
        if per_level.len() != levels {
            return Err(bad(
                at("valuesPerLevel"),
                format!(
                    "valuesPerLevel must have the same length as the number of levels in this TopologyAssignment ({} for {levels} levels)",
                    per_level.len()
                ),
            ));
        }
        let mut columns = Vec::with_capacity(levels);
        for (l, values) in per_level.iter().enumerate() {
            columns.push(level_values(
                values,
                n,
                &at(&format!("valuesPerLevel[{l}]")),
            )?);
        }
        let counts = pod_counts(slice.get("podCounts"), n, &at("podCounts"))?;
        for (i, count) in counts.into_iter().enumerate() {
            out.push(Domain {
                values: columns.iter().map(|c| c[i].clone()).collect(),
                count,
            });
        }
    }
    Ok(out)
}

fn level_values(v: &Value, n: usize, at: &str) -> Result<Vec<String>, ShapeError> {
    if let Some(u) = v.get("universal") {
        let u = u
            .as_str()
            .ok_or_else(|| bad(format!("{at}.universal"), "must be a string"))?;
        return Ok(vec![u.to_string(); n]);
    }
    let Some(ind) = v.get("individual") else {
        if n == 0 {
            return Ok(Vec::new());
        }
        return Err(bad(at, "needs universal or individual values"));
    };
    let text = |k: &str| -> Result<&str, ShapeError> {
        match ind.get(k) {
            None => Ok(""),
            Some(s) => s
                .as_str()
                .ok_or_else(|| bad(format!("{at}.individual.{k}"), "must be a string")),
        }
    };
    let (prefix, suffix) = (text("prefix")?, text("suffix")?);
    let roots = match ind.get("roots") {
        None => &[][..],
        Some(r) => r.as_array().ok_or_else(|| {
            bad(
                format!("{at}.individual.roots"),
                "must be a list of strings",
            )
        })?,
    };
    if roots.len() != n {
        return Err(bad(
            format!("{at}.individual.roots"),
            format!("has {} entries, domainCount is {n}", roots.len()),
        ));
    }
    roots
        .iter()
        .map(|r| {
            r.as_str()
                .map(|r| format!("{prefix}{r}{suffix}"))
                .ok_or_else(|| {
                    bad(
                        format!("{at}.individual.roots"),
                        "must be a list of strings",
                    )
                })
        })
        .collect()
}

fn pod_counts(v: Option<&Value>, n: usize, at: &str) -> Result<Vec<i64>, ShapeError> {
    let v = v.unwrap_or(&Value::Null);
    if let Some(u) = v.get("universal") {
        let u = u
            .as_i64()
            .ok_or_else(|| bad(format!("{at}.universal"), "must be an integer"))?;
        return Ok(vec![u; n]);
    }
    let ind = match v.get("individual") {
        None => &[][..],
        Some(i) => i
            .as_array()
            .ok_or_else(|| bad(format!("{at}.individual"), "must be a list of integers"))?,
    };
    if ind.len() != n {
        return Err(bad(
            format!("{at}.individual"),
            format!("has {} entries, domainCount is {n}", ind.len()),
        ));
    }
    ind.iter()
        .map(|c| {
            c.as_i64()
                .ok_or_else(|| bad(format!("{at}.individual"), "must be a list of integers"))
        })
        .collect()
}

/// v1beta2 `slices[]` for `domains`, as Kueue v0.19.2 encodes them.
pub fn encode(levels: &[String], domains: &[Domain]) -> Vec<Value> {
    let by_prefix = encode_by_hostname_prefix(levels, domains);
    if by_prefix.len() <= 1 || domains.len() > MAX_DOMAINS_PER_SLICE {
        return by_prefix;
    }
    let single = single_slice(levels, domains);
    // Kueue compares the serialized assignments; `levels` is common to both.
    if json_len(&single) < json_len(&by_prefix) {
        single
    } else {
        by_prefix
    }
}

/// The length Go's `json.Marshal` gives too: it would escape `<`, `>` and
/// `&`, which label values cannot hold.
fn json_len(slices: &[Value]) -> usize {
    serde_json::to_vec(slices).map_or(usize::MAX, |v| v.len())
}

/// Every domain in one slice (none for no domains): the encoding with
/// Kueue's hostname-prefix gate off, and the one the gate's is weighed
/// against.
fn single_slice(levels: &[String], domains: &[Domain]) -> Vec<Value> {
    if domains.is_empty() {
        return Vec::new();
    }
    vec![compact_slice(levels.len(), domains)]
}

fn encode_by_hostname_prefix(levels: &[String], domains: &[Domain]) -> Vec<Value> {
    let keys = if domains.len() > 1 && levels.last().is_some_and(|l| l == HOSTNAME_LABEL) {
        reusable_prefix_keys(levels.len() - 1, domains)
    } else {
        None
    };
    runs(domains.len(), keys.as_deref())
        .into_iter()
        .flat_map(|run| domains[run].chunks(MAX_DOMAINS_PER_SLICE))
        .map(|chunk| compact_slice(levels.len(), chunk))
        .collect()
}

/// The runs of consecutive domains that share a prefix key, as index
/// ranges: keys [a, a, b, a] make [0..2, 2..3, 3..4]. Without keys all
/// domains are one run.
fn runs(len: usize, keys: Option<&[Option<String>]>) -> Vec<Range<usize>> {
    if len == 0 {
        return Vec::new();
    }
    let Some(keys) = keys else {
        return std::iter::once(0..len).collect();
    };
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..len {
        if keys[i] != keys[start] {
            out.push(start..i);
            start = i;
        }
    }
    out.push(start..len);
    out
}

/// For each domain, the longest `-`-terminated prefix of its hostname that
/// another domain shares, backing off to shorter prefixes while the runs
/// they make need more than [`MAX_SLICES`] slices; `None` when no depth fits.
fn reusable_prefix_keys(level: usize, domains: &[Domain]) -> Option<Vec<Option<String>>> {
    let ends: Vec<Vec<usize>> = domains
        .iter()
        .map(|d| {
            let h = d.values[level].as_bytes();
            (0..h.len().saturating_sub(1))
                .filter(|&e| h[e] == b'-')
                .map(|e| e + 1)
                .collect()
        })
        .collect();
    let mut seen: HashMap<&str, u8> = HashMap::new();
    for (d, e) in domains.iter().zip(&ends) {
        for &end in e {
            let c = seen.entry(&d.values[level][..end]).or_default();
            *c = (*c + 1).min(2);
        }
    }
    let max_depth = ends.iter().map(Vec::len).max().unwrap_or(0);
    for depth in (1..=max_depth).rev() {
        let keys: Vec<Option<String>> = domains
            .iter()
            .zip(&ends)
            .map(|(d, e)| {
                e.iter()
                    .take(depth)
                    .rev()
                    .map(|&end| &d.values[level][..end])
                    .find(|p| seen.get(p).copied().unwrap_or(0) >= 2)
                    .map(str::to_string)
            })
            .collect();
        let slices: usize = runs(keys.len(), Some(&keys))
            .into_iter()
            .map(|run| run.len().div_ceil(MAX_DOMAINS_PER_SLICE))
            .sum();
        if slices <= MAX_SLICES {
            return Some(keys);
        }
    }
    None
}

/// One slice with the most compact values: a universal value where all
/// are equal, otherwise the common prefix and suffix taken out.
fn compact_slice(levels: usize, domains: &[Domain]) -> Value {
    let per_level: Vec<Value> = (0..levels)
        .map(|l| compact_values(domains.iter().map(|d| d.values[l].as_str())))
        .collect();
    let mut slice = Map::new();
    if !domains.is_empty() {
        slice.insert("domainCount".into(), json!(domains.len()));
    }
    if !per_level.is_empty() {
        slice.insert("valuesPerLevel".into(), Value::Array(per_level));
    }
    let first = domains.first().map_or(0, |d| d.count);
    let counts = if domains.iter().all(|d| d.count == first) {
        json!({"universal": first})
    } else {
        json!({"individual": domains.iter().map(|d| d.count).collect::<Vec<_>>()})
    };
    slice.insert("podCounts".into(), counts);
    Value::Object(slice)
}

fn compact_values<'a>(values: impl Iterator<Item = &'a str> + Clone) -> Value {
    let mut prefix: Option<&[u8]> = None;
    let mut suffix: &[u8] = &[];
    let (mut min_len, mut max_len) = (usize::MAX, 0);
    for s in values.clone() {
        let b = s.as_bytes();
        min_len = min_len.min(b.len());
        max_len = max_len.max(b.len());
        match prefix {
            None => {
                prefix = Some(b);
                suffix = b;
            }
            Some(p) => {
                let common = p.iter().zip(b).take_while(|(x, y)| x == y).count();
                prefix = Some(&p[..common]);
                let common = suffix
                    .iter()
                    .rev()
                    .zip(b.iter().rev())
                    .take_while(|(x, y)| x == y)
                    .count();
                suffix = &suffix[suffix.len() - common..];
            }
        }
    }
    let prefix = prefix.unwrap_or_default();
    if prefix.len() == max_len {
        return json!({"universal": String::from_utf8_lossy(prefix)});
    }
    let mut p = prefix.len();
    if p + suffix.len() > min_len {
        p = min_len - suffix.len();
    }
    // Byte-wise like Kueue; for non-ASCII values stay on char boundaries.
    let first = values.clone().next().unwrap_or_default();
    while p > 0 && !first.is_char_boundary(p) {
        p -= 1;
    }
    let mut s = suffix.len();
    while s > 0 && !first.is_char_boundary(first.len() - s) {
        s -= 1;
    }
    let mut ind = Map::new();
    if p > 0 {
        ind.insert("prefix".into(), json!(&first[..p]));
    }
    if s > 0 {
        ind.insert("suffix".into(), json!(&first[first.len() - s..]));
    }
    let roots: Vec<&str> = values
        .map(|v| v.get(p..v.len().saturating_sub(s)).unwrap_or(v))
        .collect();
    ind.insert("roots".into(), json!(roots));
    json!({"individual": ind})
}

#[cfg(test)]
mod cases;

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn d(values: &[&str], count: i64) -> Domain {
        Domain {
            values: values.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    fn levels(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_slice_with_prefix_suffix_and_universal_values() {
        let lv = levels(&["cloud.com/block", "kubernetes.io/hostname"]);
        let doms = [d(&["b1", "node-a.x"], 2), d(&["b1", "node-b.x"], 2)];
        let slices = encode(&lv, &doms);
        assert_eq!(
            Value::Array(slices.clone()),
            json!([{
                "domainCount": 2,
                "valuesPerLevel": [
                    {"universal": "b1"},
                    {"individual": {"prefix": "node-", "suffix": ".x", "roots": ["a", "b"]}},
                ],
                "podCounts": {"universal": 2},
            }])
        );
        assert_eq!(expand(&Value::Array(slices), 2).unwrap(), doms);
    }

    #[test]
    fn prefix_and_suffix_do_not_overlap() {
        // Kueue's motivating example: {"ababa", "aba"}; the suffix keeps
        // its length, the prefix gives way.
        let v = compact_values(["ababa", "aba"].into_iter());
        assert_eq!(
            v,
            json!({"individual": {"suffix": "aba", "roots": ["ab", ""]}})
        );
        assert_eq!(
            expand(
                &json!([{"domainCount": 2, "valuesPerLevel": [v], "podCounts": {"universal": 1}}]),
                1
            )
            .unwrap()
            .iter()
            .map(|d| d.values[0].as_str())
            .collect::<Vec<_>>(),
            ["ababa", "aba"]
        );
    }

    #[test]
    fn hostname_runs_become_slices() {
        let lv = levels(&["kubernetes.io/hostname"]);
        let doms = [
            d(&["pool-a-node-0"], 1),
            d(&["pool-a-node-1"], 1),
            d(&["pool-bb-node-0"], 3),
            d(&["pool-bb-node-1"], 4),
        ];
        let by_prefix = encode_by_hostname_prefix(&lv, &doms);
        assert_eq!(by_prefix.len(), 2);
        assert_eq!(
            by_prefix[1]["valuesPerLevel"][0]["individual"]["prefix"],
            "pool-bb-node-"
        );
        let chosen = encode(&lv, &doms);
        assert_eq!(expand(&Value::Array(chosen), 1).unwrap(), doms);
    }

    #[test]
    fn malformed_slices_name_the_field() {
        let e = expand(
            &json!([{"domainCount": 3, "valuesPerLevel": [{"individual": {"roots": ["a"]}}],
                      "podCounts": {"universal": 1}}]),
            1,
        )
        .unwrap_err();
        assert_eq!(e.field, "slices[0].valuesPerLevel[0].individual.roots");
        assert!(e.problem.contains("domainCount is 3"), "{}", e.problem);
    }

    /// Hostnames as clouds spell them (pools and hashes between `-`s, a
    /// DNS suffix), and odd ones (empty, leading or trailing `-`).
    fn hostname() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "(gke|ip|aks)(-[ab]{1,2}){0,3}(-[0-9]{1,2})?(\\.z\\.internal)?",
            1 => "[ab-]{0,5}",
        ]
    }

    /// Levels with and without a hostname level, and domains over them.
    fn assignment() -> impl Strategy<Value = (Vec<String>, Vec<Domain>)> {
        let levels = prop_oneof![
            Just(vec![HOSTNAME_LABEL]),
            Just(vec!["cloud.com/block", HOSTNAME_LABEL]),
            Just(vec!["cloud.com/block", "cloud.com/rack"]),
        ];
        levels.prop_flat_map(|levels| {
            let levels: Vec<String> = levels.iter().map(|l| l.to_string()).collect();
            let n = levels.len();
            let domain = (prop::collection::vec(hostname(), n), 0..4i64)
                .prop_map(|(values, count)| Domain { values, count });
            (Just(levels), prop::collection::vec(domain, 0..12))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn the_encoding_lists_the_domains_back((levels, doms) in assignment()) {
            let slices = encode(&levels, &doms);
            // Within v1beta2's limits, as Kueue's fuzz test checks too.
            prop_assert!(slices.len() <= MAX_SLICES);
            prop_assert!(slices.iter().all(|s| s["domainCount"].as_u64()
                .is_some_and(|n| (1..=MAX_DOMAINS_PER_SLICE as u64).contains(&n))));
            prop_assert_eq!(expand(&Value::Array(slices), levels.len()).unwrap(), doms);
        }

        #[test]
        fn the_encoding_is_never_larger_than_one_slice((levels, doms) in assignment()) {
            let chosen = json_len(&encode(&levels, &doms));
            prop_assert!(chosen <= json_len(&single_slice(&levels, &doms)));
        }
    }
}
