//! Dynamic Resource Allocation claims counted as quota, as Kueue v0.19.2
//! does with its default gates (KEP-2941, `pkg/dra/claims.go` and the
//! workload controller's DRA step): each pod set's ResourceClaimTemplates
//! are read, their device requests counted per DeviceClass, and each class
//! charged, per pod, as the quota resource `resources.deviceClassMappings`
//! maps it to. What cannot be counted is not admitted on CPU and memory
//! alone: the Workload stays pending, inadmissible, with Kueue's message.
//!
//! A request's CEL selectors must compile, and (Kueue's
//! `validateCELSelectorsAgainstDevices`) the cluster's ResourceSlices must
//! hold as many devices matching them and their DeviceClass's selectors
//! as it asks for; else the Workload waits, counted again when slices
//! change.
//!
//! Extended resources a DeviceClass backs (`extendedResourceName`) are
//! charged as that class's quota resource ([`extended`]), and classes
//! mapped with counter sources by the counters their devices consume
//! ([`counters`]). Not done yet: capacity sources (consumable capacity,
//! off by default in Kueue too) are refused in the configuration.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use k8s_openapi::api::{
    core::v1::PodResourceClaim,
    resource::v1::{DeviceRequest, ResourceClaimSpec, ResourceSliceSpec},
};

use crate::devices::selectors::{self, Device};

mod counters;
mod extended;

pub use counters::CounterSource;
pub use extended::{is_extended, selected_class, ExtendedRequest};

/// The cluster's DeviceClasses and devices, as the CEL check reads them.
#[derive(Debug, Default)]
pub struct DeviceView {
    /// Each DeviceClass's CEL selector expressions.
    pub classes: BTreeMap<String, Vec<String>>,
    /// Every device of every ResourceSlice.
    pub devices: Vec<Device>,
    /// Per device, in the same order: what the counter charge reads.
    pub meta: Vec<DeviceMeta>,
    /// Extended resource name → the DeviceClass that backs it (see
    /// [`selected_class`]).
    pub extended: BTreeMap<String, String>,
    /// Expressions compiled so far: every pending Workload of a template
    /// is checked again when slices change, so each is parsed once.
    compiled: std::sync::Mutex<BTreeMap<String, Arc<Result<selectors::Selector, String>>>>,
    /// The check's answer per claim's requests: the Workloads of one
    /// template (often thousands) ask the same question of the same
    /// devices, and scanning them is the cost.
    checked: std::sync::Mutex<std::collections::HashMap<u64, Vec<Checked>>>,
}

/// What [`scan`] reads of one request with CEL selectors: its place, class,
/// expressions and count.
type Asked = (usize, String, Vec<String>, Option<i64>);

/// One memoised answer of [`check_selectors`], with the question it
/// answers (compared in full: the key is only a hash).
#[derive(Debug)]
struct Checked {
    asked: Vec<Asked>,
    errors: Vec<(String, String)>,
}

impl DeviceView {
    pub fn new(classes: BTreeMap<String, Vec<String>>, devices: Vec<Device>) -> DeviceView {
        DeviceView {
            classes,
            devices,
            meta: Vec::new(),
            extended: BTreeMap::new(),
            compiled: Default::default(),
            checked: Default::default(),
        }
    }

    /// The view of `slices`' devices, with what counters need of each.
    pub fn with_slices(
        classes: BTreeMap<String, Vec<String>>,
        slices: &[&ResourceSliceSpec],
    ) -> DeviceView {
        let mut v = DeviceView::new(classes, selectors::devices(slices));
        v.meta = counters::meta(slices);
        v
    }

    fn compile(&self, expression: &str) -> Arc<Result<selectors::Selector, String>> {
        let mut c = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        // Looked up by `&str` first: a hit allocates nothing.
        if let Some(known) = c.get(expression) {
            return known.clone();
        }
        c.entry(expression.to_string())
            .or_insert_with(|| Arc::new(selectors::compile(expression)))
            .clone()
    }
}

/// A device as the counter charge reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceMeta {
    pub name: String,
    pub driver: String,
    /// In its pool's newest generation, every slice of which is published.
    pub complete: bool,
    /// The largest value of each counter over its counter sets, in whole
    /// units.
    pub counters: BTreeMap<String, i64>,
}

/// Kueue's `KueueDRAIntegration` gates and `resources.deviceClassMappings`,
/// as the engine uses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `KueueDRAIntegration` (on by default).
    pub integration: bool,
    /// `KueueDRARejectWorkloadsWhenDRADisabled` (on by default).
    pub reject_when_disabled: bool,
    /// `KueueDRAIntegrationExtendedResource` (on by default).
    pub extended: bool,
    /// `KueueDRAIntegrationPartitionableDevices` (on by default).
    pub partitionable: bool,
    /// DeviceClass name → the quota resource it is charged as.
    pub classes: BTreeMap<String, String>,
    /// DeviceClass name → its mappings' counter sources.
    pub counters: BTreeMap<String, Vec<CounterSource>>,
    /// batchgate's second gate (`draPlacement`, on by default): a pending
    /// Workload waits while no node's free devices hold its pods' claims
    /// (see [`crate::devices::slices`]).
    pub placement: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            integration: true,
            reject_when_disabled: true,
            extended: true,
            partitionable: true,
            classes: BTreeMap::new(),
            counters: BTreeMap::new(),
            placement: true,
        }
    }
}

/// One pod set's `template.spec.resourceClaims`, and its containers'
/// extended resource requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSetClaims {
    pub name: String,
    pub claims: Vec<PodResourceClaim>,
    pub extended: Vec<ExtendedRequest>,
}

impl PodSetClaims {
    /// The ResourceClaimTemplates the pod sets name.
    pub fn templates(pod_sets: &[PodSetClaims]) -> impl Iterator<Item = &str> {
        pod_sets
            .iter()
            .flat_map(|ps| &ps.claims)
            .filter_map(|c| c.resource_claim_template_name.as_deref())
    }
}

/// What the claims of a Workload's pod sets come to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Charge {
    /// No claims, or the integration off with rejection off: nothing to
    /// charge (Kueue then counts CPU and memory only).
    Nothing,
    /// Per pod set (in `spec.podSets` order): what each pod is charged.
    Devices(Vec<PodSetCharge>),
    /// Not admissible as it is: Kueue's message, for `QuotaReserved=False`
    /// (reason `Inadmissible`).
    Inadmissible(String),
}

/// One pod's DRA charge in a pod set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodSetCharge {
    /// Quota resource → whole units (devices, counter units, extended
    /// resources), added to what the containers ask under that name.
    pub devices: BTreeMap<String, i64>,
    /// Extended resources charged through DRA: dropped from the pod's
    /// requests first, as Kueue replaces them.
    pub replaced: BTreeSet<String>,
}

/// The message when the integration is off and a Workload uses DRA.
pub const DISABLED: &str =
    "Workload uses DRA resources but the KueueDRAIntegration feature gate is not enabled";
/// The message for a pod naming a ResourceClaim directly.
pub const RESOURCE_CLAIMS: &str =
    "KueueDRAIntegration feature does not support use of resource claims";

/// Counts the claims of `pod_sets`; `template` gives the spec of a
/// ResourceClaimTemplate in the Workload's namespace, `None` while it does
/// not exist (Kueue retries; the shell re-counts when it appears).
pub fn charge<'a>(
    pod_sets: &[PodSetClaims],
    template: impl Fn(&str) -> Option<&'a ResourceClaimSpec>,
    view: &DeviceView,
    settings: &Settings,
) -> Charge {
    let any = |direct: bool| {
        pod_sets.iter().flat_map(|ps| &ps.claims).any(|c| {
            if direct {
                c.resource_claim_name.is_some()
            } else {
                c.resource_claim_name.is_some() || c.resource_claim_template_name.is_some()
            }
        })
    };
    if !settings.integration {
        return if settings.reject_when_disabled && any(false) {
            Charge::Inadmissible(DISABLED.into())
        } else {
            Charge::Nothing
        };
    }
    if any(true) {
        return Charge::Inadmissible(RESOURCE_CLAIMS.into());
    }
    let mut out: Vec<PodSetCharge> = vec![PodSetCharge::default(); pod_sets.len()];
    // Kueue's order: the claim templates' device counts, then extended
    // resources, then counters; the first two stop at their first failing
    // pod set, extended resources report every error.
    for (i, ps) in pod_sets.iter().enumerate() {
        let per_pod = &mut out[i].devices;
        for (j, prc) in ps.claims.iter().enumerate() {
            let Some(name) = prc.resource_claim_template_name.as_deref() else {
                continue;
            };
            // Formatted only for a message: most Workloads need none.
            let path = || format!("spec.podSets[{i}].template.spec.resourceClaims[{j}]");
            let Some(spec) = template(name) else {
                return Charge::Inadmissible(format!(
                    "{}: Internal error: failed to get claim spec for ResourceClaimTemplate {name} in podset {}: resourceclaimtemplates.resource.k8s.io {name:?} not found",
                    path(),
                    ps.name
                ));
            };
            let counts = match devices_per_class(spec, view) {
                Ok(c) => c,
                Err((field, body)) => {
                    return Charge::Inadmissible(format!(
                        "{}.{field}: {}",
                        path(),
                        body.replace("{template}", &format!("ResourceClaimTemplate {name}"))
                    ))
                }
            };
            let errors = check_selectors(spec, view, settings);
            if !errors.is_empty() {
                let errors: Vec<String> = errors
                    .into_iter()
                    .map(|(field, body)| {
                        format!(
                            "{}.{field}: {}",
                            path(),
                            body.replace("{template}", &format!("ResourceClaimTemplate {name}"))
                        )
                    })
                    .collect();
                return Charge::Inadmissible(aggregate(errors));
            }
            for (class, n) in counts {
                let Some(resource) = settings.classes.get(class) else {
                    return Charge::Inadmissible(format!(
                        "{}.resourceClaimTemplateName: Not found: \"DeviceClass {class} is not mapped in DRA configuration for podset {}\"",
                        path(),
                        ps.name
                    ));
                };
                if settings.partitionable && settings.counters.contains_key(class) {
                    continue;
                }
                match per_pod.get_mut(resource) {
                    Some(e) => *e = e.saturating_add(n),
                    None => {
                        per_pod.insert(resource.clone(), n);
                    }
                }
            }
        }
    }
    if settings.extended {
        let mut errors = Vec::new();
        for (i, ps) in pod_sets.iter().enumerate() {
            let r = extended::resolve(i, &ps.extended, view, settings, &mut errors);
            for (resource, n) in r.charged {
                let e = out[i].devices.entry(resource).or_default();
                *e = e.saturating_add(n);
            }
            out[i].replaced = r.replaced;
        }
        if !errors.is_empty() {
            return Charge::Inadmissible(aggregate(errors));
        }
    }
    if settings.partitionable && !settings.counters.is_empty() {
        for (i, ps) in pod_sets.iter().enumerate() {
            for (j, prc) in ps.claims.iter().enumerate() {
                let Some(spec) = prc
                    .resource_claim_template_name
                    .as_deref()
                    .and_then(&template)
                else {
                    continue;
                };
                let path = format!("spec.podSets[{i}].template.spec.resourceClaims[{j}]");
                match counters::charge(spec, &path, view, settings) {
                    Ok(charged) => {
                        for (resource, n) in charged {
                            let e = out[i].devices.entry(resource).or_default();
                            *e = e.saturating_add(n);
                        }
                    }
                    Err(message) => return Charge::Inadmissible(message),
                }
            }
        }
    }
    if out
        .iter()
        .all(|c| c.devices.is_empty() && c.replaced.is_empty())
    {
        return Charge::Nothing;
    }
    Charge::Devices(out)
}

/// Kueue's `countDevicesPerClass`: the devices a claim spec asks for, per
/// DeviceClass (sorted), or the first request it cannot count, as (field
/// below the claim, error body with `{template}` where the template's name
/// goes).
fn devices_per_class<'s>(
    spec: &'s ResourceClaimSpec,
    view: &DeviceView,
) -> Result<BTreeMap<&'s str, i64>, (String, String)> {
    let mut out: BTreeMap<&str, i64> = BTreeMap::new();
    let requests = spec.devices.as_ref().map(|d| &d.requests);
    for (k, req) in requests.into_iter().flatten().flatten().enumerate() {
        // Formatted only for a message.
        let at = || format!("devices.requests[{k}]");
        let invalid = |field: String, value: &str, detail: &str| {
            (
                field,
                format!("Invalid value: {value}: {{template}}: {detail}"),
            )
        };
        if req.first_available.is_some() {
            return Err(invalid(
                at(),
                "null",
                "FirstAvailable device selection is not supported",
            ));
        }
        let Some(exactly) = &req.exactly else {
            return Err(invalid(
                at(),
                "null",
                "Exactly must be set if FirstAvailable is nil",
            ));
        };
        for (i, sel) in exactly.selectors.iter().flatten().enumerate() {
            let Some(cel) = &sel.cel else { continue };
            if let Err(e) = view.compile(&cel.expression).as_ref() {
                return Err(invalid(
                    format!("{}.exactly.selectors", at()),
                    "null",
                    &format!(
                        "{}.exactly.selectors[{i}].cel.expression: Invalid value: {:?}: CEL compilation failed: {e}",
                        at(),
                        cel.expression
                    ),
                ));
            }
        }
        // The apiserver defaults the mode to ExactCount and the count to 1.
        let mode = exactly.allocation_mode.as_deref().unwrap_or("ExactCount");
        if exactly.admin_access == Some(true) {
            return Err(invalid(
                format!("{}.exactly.adminAccess", at()),
                "null",
                "AdminAccess is not supported",
            ));
        }
        let count = match mode {
            "All" => {
                return Err(invalid(
                    format!("{}.exactly.allocationMode", at()),
                    "\"All\"",
                    "AllocationMode 'All' is not supported",
                ))
            }
            "ExactCount" => exactly.count.unwrap_or(1),
            other => {
                return Err(invalid(
                    format!("{}.exactly.allocationMode", at()),
                    &format!("{other:?}"),
                    &format!("unsupported allocation mode: {other}"),
                ))
            }
        };
        if exactly.device_class_name.is_empty() {
            continue;
        }
        // User-controlled and unbounded: saturate, as Kueue does.
        let e = out.entry(exactly.device_class_name.as_str()).or_default();
        *e = e.saturating_add(count);
    }
    Ok(out)
}

/// The CEL expressions of a request's selectors.
fn cel_of(req: &DeviceRequest) -> impl Iterator<Item = &str> {
    req.exactly
        .iter()
        .flat_map(|e| e.selectors.iter().flatten())
        .filter_map(|s| s.cel.as_ref().map(|c| c.expression.as_str()))
}

/// Go's error aggregate: one error as itself, several in brackets.
fn aggregate(mut errors: Vec<String>) -> String {
    let mut seen = BTreeSet::new();
    errors.retain(|e| seen.insert(e.clone()));
    match errors.len() {
        1 => errors.remove(0),
        _ => format!("[{}]", errors.join(", ")),
    }
}

/// Kueue's `validateCELSelectorsAgainstDevices`: each request with CEL
/// selectors needs as many devices matching its class's and its own
/// selectors as it asks for, no device counted for two requests of the
/// claim. Errors as (field below the claim, body with `{template}`).
fn check_selectors(
    spec: &ResourceClaimSpec,
    view: &DeviceView,
    settings: &Settings,
) -> Vec<(String, String)> {
    let any = spec
        .devices
        .iter()
        .flat_map(|d| d.requests.iter().flatten())
        .any(|r| cel_of(r).next().is_some());
    if !any {
        return Vec::new();
    }
    // Keyed by a hash of what `scan` reads, the question compared in full
    // on a hit: no allocation for the Workloads of a template already seen.
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for (k, req) in asked(spec) {
            k.hash(&mut h);
            let e = req.exactly.as_ref();
            e.map(|e| &e.device_class_name).hash(&mut h);
            cel_of(req).for_each(|c| c.hash(&mut h));
            e.and_then(|e| e.count).hash(&mut h);
        }
        h.finish()
    };
    let same = |c: &Checked| {
        c.asked.len() == asked(spec).count()
            && c.asked.iter().zip(asked(spec)).all(|(a, (k, req))| {
                let e = req.exactly.as_ref();
                a.0 == k
                    && Some(&a.1) == e.map(|e| &e.device_class_name)
                    && a.2.iter().map(String::as_str).eq(cel_of(req))
                    && a.3 == e.and_then(|e| e.count)
            })
    };
    let mut checked = view.checked.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = checked.get(&key).and_then(|cs| cs.iter().find(|c| same(c))) {
        return known.errors.clone();
    }
    drop(checked);
    let errors = scan(spec, view, settings);
    let asked = asked(spec)
        .map(|(k, req)| {
            let e = req.exactly.as_ref();
            (
                k,
                e.map(|e| e.device_class_name.clone()).unwrap_or_default(),
                cel_of(req).map(String::from).collect(),
                e.and_then(|e| e.count),
            )
        })
        .collect();
    checked = view.checked.lock().unwrap_or_else(|p| p.into_inner());
    checked.entry(key).or_default().push(Checked {
        asked,
        errors: errors.clone(),
    });
    errors
}

/// The requests with CEL selectors, with their place among the claim's
/// requests: all that [`scan`] reads of a claim.
fn asked(spec: &ResourceClaimSpec) -> impl Iterator<Item = (usize, &DeviceRequest)> {
    spec.devices
        .iter()
        .flat_map(|d| d.requests.iter().flatten())
        .enumerate()
        .filter(|(_, r)| cel_of(r).next().is_some())
}

fn scan(spec: &ResourceClaimSpec, view: &DeviceView, settings: &Settings) -> Vec<(String, String)> {
    let requests: Vec<(usize, &DeviceRequest)> = asked(spec).collect();
    if requests.is_empty() {
        return Vec::new();
    }
    // When every such request's class is charged by counters, only the
    // counter sources' drivers' devices are read (Kueue lists those).
    let counted = |r: &DeviceRequest| {
        let class = r
            .exactly
            .as_ref()
            .map_or("", |e| e.device_class_name.as_str());
        settings
            .partitionable
            .then(|| settings.counters.get(class))
            .flatten()
    };
    let drivers: Option<BTreeSet<&str>> = requests
        .iter()
        .map(|(_, r)| counted(r).map(|s| s.iter().map(|c| c.driver.as_str())))
        .try_fold(BTreeSet::new(), |mut all, d| {
            all.extend(d?);
            Some(all)
        });
    let ctx = selectors::context();
    let mut taken = BTreeSet::new();
    let mut errors = Vec::new();
    for (k, req) in requests {
        let at = format!("devices.requests[{k}]");
        let exactly = req.exactly.as_ref().expect("selectors are on exactly");
        let class = exactly.device_class_name.as_str();
        let class_exprs: &[String] = if class.is_empty() {
            &[]
        } else {
            match view.classes.get(class) {
                Some(e) => e,
                None => {
                    errors.push((
                        at,
                        format!("Internal error: {{template}}: failed to get DeviceClass {class}: deviceclasses.resource.k8s.io {class:?} not found"),
                    ));
                    continue;
                }
            }
        };
        let mut class_selectors = Vec::new();
        let mut bad_class = None;
        for (i, e) in class_exprs.iter().enumerate() {
            let compiled = view.compile(e);
            match compiled.as_ref() {
                Ok(_) => class_selectors.push(compiled.clone()),
                Err(err) => {
                    bad_class = Some((
                        format!("{at}[{i}].cel.expression"),
                        format!("Invalid value: {e:?}: {{template}}: DeviceClass {class} has invalid CEL selector: {err}"),
                    ));
                    break;
                }
            }
        }
        if let Some(e) = bad_class {
            errors.push(e);
            continue;
        }
        // Compiled once already by `devices_per_class`.
        let own: Vec<_> = cel_of(req).map(|e| view.compile(e)).collect();
        let needed = exactly.count.unwrap_or(1);
        let mut matched = 0i64;
        let mut failed = None;
        'devices: for (d, device) in view.devices.iter().enumerate() {
            if taken.contains(&d) {
                continue;
            }
            if let (Some(drivers), Some(m)) = (&drivers, view.meta.get(d)) {
                if !drivers.contains(m.driver.as_str()) {
                    continue;
                }
            }
            for s in class_selectors.iter().chain(&own) {
                let Ok(s) = s.as_ref() else { continue };
                match s.matches(&ctx, device) {
                    Ok(true) => {}
                    Ok(false) => continue 'devices,
                    Err(e) => {
                        failed = Some(e);
                        break 'devices;
                    }
                }
            }
            taken.insert(d);
            matched += 1;
            if matched >= needed {
                break;
            }
        }
        if let Some(e) = failed {
            errors.push((
                format!("{at}.exactly.selectors"),
                format!("Invalid value: null: {{template}}: CEL evaluation failed for DeviceClass {class}: {e}"),
            ));
        } else if matched < needed {
            errors.push((
                format!("{at}.exactly.selectors"),
                format!("Internal error: {{template}}: insufficient matching devices for CEL selector in DeviceClass {class}: {matched} device(s) match in the cluster but {needed} requested"),
            ));
        }
    }
    errors
}

/// Adds a [`Charge::Devices`] to the engine's pod sets: the extended
/// resources charged through DRA are dropped, then each unit is 1000
/// milli-units of its quota resource, per pod, on top of what the
/// containers request under the same name (Kueue adds them).
pub fn add_to(pod_sets: &mut [crate::queueing::PodSet], per_pod_set: &[PodSetCharge]) {
    for (ps, charge) in pod_sets.iter_mut().zip(per_pod_set) {
        for name in &charge.replaced {
            ps.requests.remove(name);
        }
        for (resource, n) in &charge.devices {
            let before = ps.requests.get(resource).unwrap_or(0);
            ps.requests
                .insert(resource, before.saturating_add(n.saturating_mul(1000)));
        }
    }
}

#[cfg(test)]
mod tests;
