//! Placement over DRA ResourceSlices: can the cluster's free devices hold
//! every pod of a Workload, each pod's claims on one node? Kueue counts
//! devices cluster-wide; kube-scheduler allocates per node, so a pod asking
//! six GPUs where no node has six free is admitted by Kueue and then never
//! runs. This is batchgate's second gate (on by default, `draPlacement`),
//! checked before quota is reserved; the quota stays Kueue's.
//!
//! The rules are the allocator's, kept simple and deterministic: nodes in
//! name order, devices in slice and device order, first fit; a node offers
//! its own slices' devices and those of slices for all nodes or a node
//! selector (read as reachable from every node); a pool offers devices only
//! at its newest generation with every slice published; devices the caller
//! marks taken are not offered (`batchgate schedule` marks those allocated
//! to ResourceClaims; the gate does not, see
//! [`crate::controllers`]' queueing claims); a claim's `matchAttribute`
//! constraints are met by trying each value the candidate devices have, in
//! order. Pods of one Workload take their devices in turn, so two pods
//! never count one device.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use k8s_openapi::api::resource::v1::{DeviceRequest, ResourceClaimSpec, ResourceSliceSpec};

use super::selectors::{self, Device};

/// A device's identity as an allocation result names it.
pub type DeviceId = (String, String, String);

/// The devices of the cluster's ResourceSlices, as placement reads them.
#[derive(Debug, Default)]
pub struct Inventory {
    devices: Vec<Device>,
    ids: Vec<DeviceId>,
    /// Per device, fully qualified attribute name → value (as text).
    attributes: Vec<BTreeMap<String, String>>,
    /// Node → its devices (indices), then the shared ones.
    nodes: BTreeMap<String, Vec<usize>>,
    /// Devices of slices for all nodes or a node selector.
    shared: Vec<usize>,
}

/// Per device of `slices` (in their order): whether its pool offers it,
/// that is, the slice is at its pool's newest generation and every slice
/// of that generation is published (the allocator's and Kueue's rule).
pub fn usable(slices: &[&ResourceSliceSpec]) -> Vec<bool> {
    // (driver, pool) → (newest generation, slices expected, slices seen)
    let mut pools: BTreeMap<(&str, &str), (i64, i64, i64)> = BTreeMap::new();
    for s in slices {
        let p = pools.entry((&s.driver, &s.pool.name)).or_insert((
            s.pool.generation,
            s.pool.resource_slice_count,
            0,
        ));
        if s.pool.generation > p.0 {
            *p = (s.pool.generation, s.pool.resource_slice_count, 0);
        }
        if s.pool.generation == p.0 {
            p.2 += 1;
        }
    }
    let mut out = Vec::new();
    for s in slices {
        let (generation, expected, seen) = pools[&(s.driver.as_str(), s.pool.name.as_str())];
        let ok = s.pool.generation == generation && seen == expected;
        out.extend(std::iter::repeat_n(ok, s.devices.iter().flatten().count()));
    }
    out
}

impl Inventory {
    /// The inventory of `slices`.
    pub fn new(slices: &[&ResourceSliceSpec]) -> Inventory {
        Inventory::with_devices(slices, selectors::devices(slices))
    }

    /// The inventory of `slices`, whose devices as CEL reads them
    /// ([`selectors::devices`] of the same slices) are already built.
    pub fn with_devices(slices: &[&ResourceSliceSpec], devices: Vec<Device>) -> Inventory {
        debug_assert_eq!(
            devices.len(),
            slices
                .iter()
                .map(|s| s.devices.iter().flatten().count())
                .sum::<usize>()
        );
        let ok = usable(slices);
        let mut inv = Inventory {
            devices,
            ..Inventory::default()
        };
        let mut d = 0;
        for s in slices {
            for dev in s.devices.iter().flatten() {
                inv.ids
                    .push((s.driver.clone(), s.pool.name.clone(), dev.name.clone()));
                let mut attrs = BTreeMap::new();
                for (name, a) in dev.attributes.iter().flatten() {
                    let full = if name.contains('/') {
                        name.clone()
                    } else {
                        format!("{}/{name}", s.driver)
                    };
                    let v = serde_json::to_string(a).unwrap_or_default();
                    attrs.insert(full, v);
                }
                inv.attributes.push(attrs);
                if ok[d] {
                    match s.node_name.as_deref().filter(|n| !n.is_empty()) {
                        Some(node) => inv.nodes.entry(node.to_string()).or_default().push(d),
                        None => inv.shared.push(d),
                    }
                }
                d += 1;
            }
        }
        inv
    }

    /// The indices of the devices named (allocated to ResourceClaims).
    pub fn indices<'a>(&self, ids: impl IntoIterator<Item = &'a DeviceId>) -> HashSet<usize> {
        let wanted: HashSet<&DeviceId> = ids.into_iter().collect();
        self.ids
            .iter()
            .enumerate()
            .filter(|(_, id)| wanted.contains(id))
            .map(|(i, _)| i)
            .collect()
    }

    /// The nodes with devices.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.nodes.keys().map(String::as_str)
    }
}

/// One pod set's claims: every pod gets a claim from each template.
#[derive(Debug)]
pub struct Demand<'a> {
    pub pod_set: &'a str,
    pub pods: i64,
    /// (template name, its claim spec).
    pub claims: Vec<(&'a str, &'a ResourceClaimSpec)>,
}

/// One pod's place: its node and, per claim request, the devices taken.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PodPlacement {
    pub node: String,
    pub devices: Vec<RequestDevices>,
}

/// The devices one request of one claim template got.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestDevices {
    pub template: String,
    pub request: String,
    /// `driver/pool/device`, as an allocation result names them.
    pub devices: Vec<String>,
}

/// Where each pod went: per pod set, each pod's place.
pub type Placement = Vec<(String, Vec<PodPlacement>)>;

/// Compiled selectors, per expression, for one placement.
struct Compiled {
    ctx: cel::Context<'static, 'static>,
    cache: BTreeMap<String, Result<selectors::Selector, String>>,
}

impl Compiled {
    fn matches(&mut self, expr: &str, device: &Device) -> Result<bool, String> {
        let s = self
            .cache
            .entry(expr.to_string())
            .or_insert_with(|| selectors::compile(expr));
        match s {
            Ok(s) => s.matches(&self.ctx, device),
            Err(e) => Err(format!("{expr:?} does not compile: {e}")),
        }
    }
}

/// A request's devices: class and request selectors, and the count.
struct Want<'a> {
    template: &'a str,
    request: &'a str,
    class: &'a str,
    selectors: Vec<&'a str>,
    /// The `matchAttribute`s its devices must agree on.
    agree: Vec<&'a str>,
    count: i64,
}

fn wants<'a>(
    template: &'a str,
    spec: &'a ResourceClaimSpec,
    classes: &'a BTreeMap<String, Vec<String>>,
) -> Vec<Want<'a>> {
    let requests = spec
        .devices
        .iter()
        .flat_map(|d| d.requests.iter().flatten());
    requests
        .filter_map(|r: &DeviceRequest| {
            let e = r.exactly.as_ref()?;
            let mut selectors: Vec<&str> = classes
                .get(&e.device_class_name)
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect();
            selectors.extend(
                e.selectors
                    .iter()
                    .flatten()
                    .filter_map(|s| s.cel.as_ref().map(|c| c.expression.as_str())),
            );
            let agree = spec
                .devices
                .iter()
                .flat_map(|d| d.constraints.iter().flatten())
                .filter(|c| {
                    c.requests
                        .as_ref()
                        .is_none_or(|n| n.is_empty() || n.contains(&r.name))
                })
                .filter_map(|c| c.match_attribute.as_deref())
                .collect();
            Some(Want {
                template,
                request: &r.name,
                class: &e.device_class_name,
                selectors,
                agree,
                count: e.count.unwrap_or(1),
            })
        })
        .collect()
}

/// Places every pod of `demands`, devices in `taken` not offered; the
/// devices chosen are added to `taken`. `Err` names the pod set, the
/// request and its selectors, and the most any node could give it.
pub fn place(
    demands: &[Demand],
    classes: &BTreeMap<String, Vec<String>>,
    inventory: &Inventory,
    taken: &mut HashSet<usize>,
) -> Result<Placement, String> {
    let mut cel = Compiled {
        ctx: selectors::context(),
        cache: BTreeMap::new(),
    };
    let mut out = Vec::new();
    for d in demands {
        let claims: Vec<(Vec<Want>, &ResourceClaimSpec)> = d
            .claims
            .iter()
            .map(|(t, spec)| (wants(t, spec, classes), *spec))
            .collect();
        let mut nodes = Vec::new();
        for _ in 0..d.pods.max(0) {
            let mut placed = None;
            let mut best: Option<(i64, &str, usize)> = None;
            for (node, local) in &inventory.nodes {
                let offered: Vec<usize> = local
                    .iter()
                    .chain(&inventory.shared)
                    .copied()
                    .filter(|i| !taken.contains(i))
                    .collect();
                match fit(&claims, &offered, inventory, &mut cel)? {
                    Ok(chosen) => {
                        taken.extend(chosen.iter().map(|(_, d)| *d));
                        placed = Some(pod_placement(node, &claims, &chosen, inventory));
                        break;
                    }
                    Err((want, free)) => {
                        if best.is_none_or(|(f, _, w)| free > f || (free == f && want < w)) {
                            best = Some((free, node, want));
                        }
                    }
                }
            }
            match placed {
                Some(p) => nodes.push(p),
                None => return Err(refusal(d, &claims, best)),
            }
        }
        out.push((d.pod_set.to_string(), nodes));
    }
    Ok(out)
}

fn pod_placement(
    node: &str,
    claims: &[(Vec<Want>, &ResourceClaimSpec)],
    chosen: &[(usize, usize)],
    inventory: &Inventory,
) -> PodPlacement {
    let all: Vec<&Want> = claims.iter().flat_map(|(w, _)| w).collect();
    let devices = all
        .iter()
        .enumerate()
        .map(|(k, w)| RequestDevices {
            template: w.template.to_string(),
            request: w.request.to_string(),
            devices: chosen
                .iter()
                .filter(|(j, _)| *j == k)
                .map(|(_, d)| {
                    let (driver, pool, device) = &inventory.ids[*d];
                    format!("{driver}/{pool}/{device}")
                })
                .collect(),
        })
        .collect();
    PodPlacement {
        node: node.to_string(),
        devices,
    }
}

/// Why a pod of `d` has no node: the request that failed where it got
/// furthest, and how many devices there match it (not taken).
fn refusal(
    d: &Demand,
    claims: &[(Vec<Want>, &ResourceClaimSpec)],
    best: Option<(i64, &str, usize)>,
) -> String {
    let all: Vec<&Want> = claims.iter().flat_map(|(w, _)| w).collect();
    let Some((free, node, k)) = best else {
        return format!(
            "no node can hold the devices of pod set {}: no ResourceSlice offers devices on any node",
            d.pod_set
        );
    };
    let w = all[k];
    let mut matching = if w.selectors.is_empty() {
        String::new()
    } else {
        format!(" matching {}", w.selectors.join(" && "))
    };
    if !w.agree.is_empty() {
        matching.push_str(&format!(" with one value of {}", w.agree.join(" and ")));
    }
    format!(
        "no node can hold the devices of pod set {}: ResourceClaimTemplate {} request {} asks {} device(s) of DeviceClass {}{matching}; at most {free} match on one node ({node})",
        d.pod_set, w.template, w.request, w.count, w.class
    )
}

/// One pod's claims on one node's `offered` devices: the devices chosen
/// (with the index of the request, over all claims, each is for), or (the
/// index of the request that failed, its matching free devices). The
/// outer `Err` is a selector that does not evaluate.
#[allow(clippy::type_complexity)]
fn fit(
    claims: &[(Vec<Want>, &ResourceClaimSpec)],
    offered: &[usize],
    inventory: &Inventory,
    cel: &mut Compiled,
) -> Result<Result<Vec<(usize, usize)>, (usize, i64)>, String> {
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    let mut k = 0;
    for (wants, spec) in claims {
        // Candidates per request, in device order.
        let mut candidates: Vec<Vec<usize>> = Vec::with_capacity(wants.len());
        for w in wants {
            let mut c = Vec::new();
            'devices: for &i in offered {
                for s in &w.selectors {
                    if !cel.matches(s, &inventory.devices[i])? {
                        continue 'devices;
                    }
                }
                c.push(i);
            }
            candidates.push(c);
        }
        let already: Vec<usize> = chosen.iter().map(|(_, d)| *d).collect();
        match claim_fit(wants, spec, &candidates, inventory, &already) {
            Ok(got) => chosen.extend(got.into_iter().map(|(j, d)| (k + j, d))),
            Err((j, free)) => return Ok(Err((k + j, free))),
        }
        k += wants.len();
    }
    Ok(Ok(chosen))
}

/// One claim: each request takes its count of candidates not yet chosen,
/// devices of requests a `matchAttribute` constraint names agreeing on
/// that attribute (each value tried in order). The devices as (request
/// index, device).
fn claim_fit(
    wants: &[Want],
    spec: &ResourceClaimSpec,
    candidates: &[Vec<usize>],
    inventory: &Inventory,
    already: &[usize],
) -> Result<Vec<(usize, usize)>, (usize, i64)> {
    let constraints: Vec<(BTreeSet<&str>, &str)> = spec
        .devices
        .iter()
        .flat_map(|d| d.constraints.iter().flatten())
        .filter_map(|c| {
            let attr = c.match_attribute.as_deref()?;
            let names: BTreeSet<&str> = match &c.requests {
                Some(r) if !r.is_empty() => r.iter().map(String::as_str).collect(),
                _ => wants.iter().map(|w| w.request).collect(),
            };
            Some((names, attr))
        })
        .collect();
    let value = |i: usize, attr: &str| inventory.attributes[i].get(attr).cloned();
    // The values to try per constraint: those its first request's
    // candidates have (a device without the attribute cannot match).
    let mut choices: Vec<Vec<String>> = Vec::new();
    for (names, attr) in &constraints {
        let mut vals = BTreeSet::new();
        for (w, c) in wants.iter().zip(candidates) {
            if names.contains(w.request) {
                vals.extend(c.iter().filter_map(|&i| value(i, attr)));
            }
        }
        choices.push(vals.into_iter().collect());
    }
    let mut pick = vec![0usize; constraints.len()];
    let mut tries = 0;
    let mut first_failure = None;
    loop {
        tries += 1;
        let fixed: Vec<(&BTreeSet<&str>, &str, &str)> = constraints
            .iter()
            .zip(&choices)
            .zip(&pick)
            .filter_map(|(((n, a), vals), &p)| vals.get(p).map(|v| (n, *a, v.as_str())))
            .collect();
        let mut taken: HashSet<usize> = already.iter().copied().collect();
        let mut got = Vec::new();
        let mut failed = None;
        for (j, (w, c)) in wants.iter().zip(candidates).enumerate() {
            let free: Vec<usize> = c
                .iter()
                .copied()
                .filter(|i| !taken.contains(i))
                .filter(|&i| {
                    fixed.iter().all(|(names, attr, v)| {
                        !names.contains(w.request) || value(i, attr).as_deref() == Some(*v)
                    })
                })
                .collect();
            if (free.len() as i64) < w.count {
                failed = Some((j, free.len() as i64));
                break;
            }
            for &i in free.iter().take(w.count.max(0) as usize) {
                taken.insert(i);
                got.push((j, i));
            }
        }
        let constrained_ok = constraints.len() == fixed.len();
        match failed {
            None if constrained_ok => return Ok(got),
            None => {}
            Some(f) => {
                first_failure.get_or_insert(f);
            }
        }
        // Next combination of values; give up after a bounded number.
        let mut c = 0;
        loop {
            if c == pick.len() || tries >= 256 {
                return Err(first_failure.unwrap_or((0, 0)));
            }
            pick[c] += 1;
            if pick[c] < choices[c].len() {
                break;
            }
            pick[c] = 0;
            c += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn slice(node: Option<&str>, pool: &str, devices: &[(&str, i64)]) -> ResourceSliceSpec {
        let devices: Vec<Value> = devices
            .iter()
            .map(|(n, numa)| json!({"name": n, "attributes": {"numa": {"int": numa}}}))
            .collect();
        let mut s = json!({"driver": "gpu.example.com",
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "devices": devices});
        match node {
            Some(n) => s["nodeName"] = json!(n),
            None => s["allNodes"] = json!(true),
        }
        serde_json::from_value(s).unwrap()
    }

    fn template(requests: Value, constraints: Value) -> ResourceClaimSpec {
        serde_json::from_value(
            json!({"devices": {"requests": requests, "constraints": constraints}}),
        )
        .unwrap()
    }

    fn gpus(n: i64) -> Value {
        json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": n}}])
    }

    fn classes() -> BTreeMap<String, Vec<String>> {
        [(
            "gpu.example.com".to_string(),
            vec!["device.driver == 'gpu.example.com'".to_string()],
        )]
        .into()
    }

    fn two_nodes_of_four() -> Inventory {
        let a = slice(
            Some("node-a"),
            "a",
            &[("g0", 0), ("g1", 0), ("g2", 1), ("g3", 1)],
        );
        let b = slice(
            Some("node-b"),
            "b",
            &[("g0", 0), ("g1", 0), ("g2", 1), ("g3", 1)],
        );
        Inventory::new(&[&a, &b])
    }

    fn demand<'a>(pods: i64, spec: &'a ResourceClaimSpec) -> Vec<Demand<'a>> {
        vec![Demand {
            pod_set: "main",
            pods,
            claims: vec![("gpus", spec)],
        }]
    }

    #[test]
    fn a_pod_goes_to_the_first_node_that_holds_its_claims_and_pods_do_not_share_devices() {
        let inv = two_nodes_of_four();
        let spec = template(gpus(3), json!([]));
        let mut taken = HashSet::new();
        let got = place(&demand(2, &spec), &classes(), &inv, &mut taken).unwrap();
        let nodes: Vec<&str> = got[0].1.iter().map(|p| p.node.as_str()).collect();
        assert_eq!(nodes, ["node-a", "node-b"]);
        assert_eq!(
            got[0].1[0].devices,
            [RequestDevices {
                template: "gpus".into(),
                request: "gpu".into(),
                devices: vec![
                    "gpu.example.com/a/g0".into(),
                    "gpu.example.com/a/g1".into(),
                    "gpu.example.com/a/g2".into()
                ],
            }]
        );
        assert_eq!(taken.len(), 6);
        // A third pod of three finds one free on each node.
        let err = place(&demand(1, &spec), &classes(), &inv, &mut taken).unwrap_err();
        assert_eq!(
            err,
            "no node can hold the devices of pod set main: ResourceClaimTemplate gpus request gpu asks 3 device(s) of DeviceClass gpu.example.com matching device.driver == 'gpu.example.com'; at most 1 match on one node (node-a)"
        );
    }

    #[test]
    fn more_devices_than_one_node_has_is_refused_though_the_cluster_has_them() {
        let inv = two_nodes_of_four();
        let spec = template(gpus(6), json!([]));
        let err = place(&demand(1, &spec), &classes(), &inv, &mut HashSet::new()).unwrap_err();
        assert!(
            err.contains("asks 6 device(s)")
                && err.contains("at most 4 match on one node (node-a)"),
            "{err}"
        );
    }

    #[test]
    fn devices_allocated_to_claims_are_not_offered() {
        let inv = two_nodes_of_four();
        let held: Vec<DeviceId> = ["g0", "g1"]
            .iter()
            .map(|d| ("gpu.example.com".into(), "a".into(), d.to_string()))
            .collect();
        let mut taken = inv.indices(&held);
        let spec = template(gpus(3), json!([]));
        let got = place(&demand(1, &spec), &classes(), &inv, &mut taken).unwrap();
        assert_eq!(got[0].1[0].node, "node-b");
    }

    #[test]
    fn match_attribute_takes_devices_that_agree() {
        let inv = two_nodes_of_four();
        let spec = template(gpus(2), json!([{"matchAttribute": "gpu.example.com/numa"}]));
        let mut taken = inv.indices(&[("gpu.example.com".into(), "a".into(), "g0".into())]);
        // numa 0 on node-a has one left; numa 1 has two.
        let got = place(&demand(1, &spec), &classes(), &inv, &mut taken).unwrap();
        assert_eq!(got[0].1[0].node, "node-a");
        let chosen: BTreeSet<&str> = taken.iter().map(|&i| inv.ids[i].2.as_str()).collect();
        assert_eq!(chosen, BTreeSet::from(["g0", "g2", "g3"]));
        // Three that agree exist nowhere.
        let spec = template(gpus(3), json!([{"matchAttribute": "gpu.example.com/numa"}]));
        assert!(place(&demand(1, &spec), &classes(), &inv, &mut HashSet::new()).is_err());
    }

    #[test]
    fn a_selector_narrows_and_shared_slices_reach_every_node() {
        let a = slice(Some("node-a"), "a", &[("g0", 0)]);
        let net = slice(None, "fabric", &[("n0", 7), ("n1", 7)]);
        let inv = Inventory::new(&[&a, &net]);
        let spec = template(
            json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 3,
                "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].numa >= 0"}}]}}]),
            json!([]),
        );
        let got = place(&demand(1, &spec), &classes(), &inv, &mut HashSet::new()).unwrap();
        assert_eq!(got[0].1[0].node, "node-a");
        let spec = template(
            json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 1,
                "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].numa == 3"}}]}}]),
            json!([]),
        );
        let err = place(&demand(1, &spec), &classes(), &inv, &mut HashSet::new()).unwrap_err();
        assert!(err.contains("matching device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].numa == 3; at most 0 match"), "{err}");
    }

    #[test]
    fn a_pool_still_being_published_offers_nothing() {
        let mut a = slice(Some("node-a"), "a", &[("g0", 0), ("g1", 0)]);
        a.pool.resource_slice_count = 2;
        let inv = Inventory::new(&[&a]);
        let spec = template(gpus(1), json!([]));
        let err = place(&demand(1, &spec), &classes(), &inv, &mut HashSet::new()).unwrap_err();
        assert!(
            err.contains("no ResourceSlice offers devices on any node"),
            "{err}"
        );
    }
}
