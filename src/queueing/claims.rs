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
//! Not done yet (the Workload is held, never under-charged, where it
//! matters): counter (partitionable devices) and capacity sources are
//! refused in the configuration; extended resources backed by a DeviceClass
//! are not charged.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use k8s_openapi::api::{
    core::v1::PodResourceClaim,
    resource::v1::{DeviceRequest, ResourceClaimSpec},
};

use crate::devices::selectors::{self, Device};

/// The cluster's DeviceClasses and devices, as the CEL check reads them.
#[derive(Debug, Default)]
pub struct DeviceView {
    /// Each DeviceClass's CEL selector expressions.
    pub classes: BTreeMap<String, Vec<String>>,
    /// Every device of every ResourceSlice.
    pub devices: Vec<Device>,
    /// Expressions compiled so far: every pending Workload of a template
    /// is checked again when slices change, so each is parsed once.
    compiled: std::sync::Mutex<BTreeMap<String, Arc<Result<selectors::Selector, String>>>>,
    /// The check's answer per claim's requests: the Workloads of one
    /// template (often thousands) ask the same question of the same
    /// devices, and scanning them is the cost.
    checked: std::sync::Mutex<std::collections::HashMap<String, Vec<(String, String)>>>,
}

impl DeviceView {
    pub fn new(classes: BTreeMap<String, Vec<String>>, devices: Vec<Device>) -> DeviceView {
        DeviceView {
            classes,
            devices,
            compiled: Default::default(),
            checked: Default::default(),
        }
    }

    fn compile(&self, expression: &str) -> Arc<Result<selectors::Selector, String>> {
        let mut c = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        c.entry(expression.to_string())
            .or_insert_with(|| Arc::new(selectors::compile(expression)))
            .clone()
    }
}

/// Kueue's `KueueDRAIntegration` gates and `resources.deviceClassMappings`,
/// as the engine uses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `KueueDRAIntegration` (on by default).
    pub integration: bool,
    /// `KueueDRARejectWorkloadsWhenDRADisabled` (on by default).
    pub reject_when_disabled: bool,
    /// DeviceClass name → the quota resource it is charged as.
    pub classes: BTreeMap<String, String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            integration: true,
            reject_when_disabled: true,
            classes: BTreeMap::new(),
        }
    }
}

/// One pod set's `template.spec.resourceClaims`.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSetClaims {
    pub name: String,
    pub claims: Vec<PodResourceClaim>,
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
    /// Per pod set (in `spec.podSets` order): per pod, each quota
    /// resource's device count.
    Devices(Vec<BTreeMap<String, i64>>),
    /// Not admissible as it is: Kueue's message, for `QuotaReserved=False`
    /// (reason `Inadmissible`).
    Inadmissible(String),
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
    if !any(false) {
        return Charge::Nothing;
    }
    if any(true) {
        return Charge::Inadmissible(RESOURCE_CLAIMS.into());
    }
    let mut out = Vec::with_capacity(pod_sets.len());
    for (i, ps) in pod_sets.iter().enumerate() {
        let mut per_pod: BTreeMap<String, i64> = BTreeMap::new();
        for (j, prc) in ps.claims.iter().enumerate() {
            let Some(name) = prc.resource_claim_template_name.as_deref() else {
                continue;
            };
            let path = format!("spec.podSets[{i}].template.spec.resourceClaims[{j}]");
            let Some(spec) = template(name) else {
                return Charge::Inadmissible(format!(
                    "{path}: Internal error: failed to get claim spec for ResourceClaimTemplate {name} in podset {}: resourceclaimtemplates.resource.k8s.io {name:?} not found",
                    ps.name
                ));
            };
            let counts = match devices_per_class(spec, view) {
                Ok(c) => c,
                Err((field, body)) => {
                    return Charge::Inadmissible(format!(
                        "{path}.{field}: {}",
                        body.replace("{template}", &format!("ResourceClaimTemplate {name}"))
                    ))
                }
            };
            let errors = check_selectors(spec, view);
            if !errors.is_empty() {
                let errors: Vec<String> = errors
                    .into_iter()
                    .map(|(field, body)| {
                        format!(
                            "{path}.{field}: {}",
                            body.replace("{template}", &format!("ResourceClaimTemplate {name}"))
                        )
                    })
                    .collect();
                return Charge::Inadmissible(aggregate(errors));
            }
            for (class, n) in counts {
                let Some(resource) = settings.classes.get(&class) else {
                    return Charge::Inadmissible(format!(
                        "{path}.resourceClaimTemplateName: Not found: \"DeviceClass {class} is not mapped in DRA configuration for podset {}\"",
                        ps.name
                    ));
                };
                let e = per_pod.entry(resource.clone()).or_default();
                *e = e.saturating_add(n);
            }
        }
        out.push(per_pod);
    }
    if out.iter().all(BTreeMap::is_empty) {
        return Charge::Nothing;
    }
    Charge::Devices(out)
}

/// Kueue's `countDevicesPerClass`: the devices a claim spec asks for, per
/// DeviceClass (sorted), or the first request it cannot count, as (field
/// below the claim, error body with `{template}` where the template's name
/// goes).
fn devices_per_class(
    spec: &ResourceClaimSpec,
    view: &DeviceView,
) -> Result<BTreeMap<String, i64>, (String, String)> {
    let mut out: BTreeMap<String, i64> = BTreeMap::new();
    let requests = spec.devices.as_ref().map(|d| &d.requests);
    for (k, req) in requests.into_iter().flatten().flatten().enumerate() {
        let at = format!("devices.requests[{k}]");
        let invalid = |field: String, value: &str, detail: &str| {
            (
                field,
                format!("Invalid value: {value}: {{template}}: {detail}"),
            )
        };
        if req.first_available.is_some() {
            return Err(invalid(
                at,
                "null",
                "FirstAvailable device selection is not supported",
            ));
        }
        let Some(exactly) = &req.exactly else {
            return Err(invalid(
                at,
                "null",
                "Exactly must be set if FirstAvailable is nil",
            ));
        };
        for (i, sel) in exactly.selectors.iter().flatten().enumerate() {
            let Some(cel) = &sel.cel else { continue };
            if let Err(e) = view.compile(&cel.expression).as_ref() {
                return Err(invalid(
                    format!("{at}.exactly.selectors"),
                    "null",
                    &format!(
                        "{at}.exactly.selectors[{i}].cel.expression: Invalid value: {:?}: CEL compilation failed: {e}",
                        cel.expression
                    ),
                ));
            }
        }
        // The apiserver defaults the mode to ExactCount and the count to 1.
        let mode = exactly.allocation_mode.as_deref().unwrap_or("ExactCount");
        if exactly.admin_access == Some(true) {
            return Err(invalid(
                format!("{at}.exactly.adminAccess"),
                "null",
                "AdminAccess is not supported",
            ));
        }
        let count = match mode {
            "All" => {
                return Err(invalid(
                    format!("{at}.exactly.allocationMode"),
                    "\"All\"",
                    "AllocationMode 'All' is not supported",
                ))
            }
            "ExactCount" => exactly.count.unwrap_or(1),
            other => {
                return Err(invalid(
                    format!("{at}.exactly.allocationMode"),
                    &format!("{other:?}"),
                    &format!("unsupported allocation mode: {other}"),
                ))
            }
        };
        if exactly.device_class_name.is_empty() {
            continue;
        }
        // User-controlled and unbounded: saturate, as Kueue does.
        let e = out.entry(exactly.device_class_name.clone()).or_default();
        *e = e.saturating_add(count);
    }
    Ok(out)
}

/// The CEL expressions of a request's selectors.
fn cel_of(req: &DeviceRequest) -> Vec<&str> {
    req.exactly
        .iter()
        .flat_map(|e| e.selectors.iter().flatten())
        .filter_map(|s| s.cel.as_ref().map(|c| c.expression.as_str()))
        .collect()
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
fn check_selectors(spec: &ResourceClaimSpec, view: &DeviceView) -> Vec<(String, String)> {
    let any = spec
        .devices
        .iter()
        .flat_map(|d| d.requests.iter().flatten())
        .any(|r| !cel_of(r).is_empty());
    if !any {
        return Vec::new();
    }
    let key = serde_json::to_string(&spec.devices).unwrap_or_default();
    if let Some(known) = view
        .checked
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
    {
        return known.clone();
    }
    let errors = scan(spec, view);
    view.checked
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, errors.clone());
    errors
}

fn scan(spec: &ResourceClaimSpec, view: &DeviceView) -> Vec<(String, String)> {
    let requests: Vec<(usize, &DeviceRequest)> = spec
        .devices
        .iter()
        .flat_map(|d| d.requests.iter().flatten())
        .enumerate()
        .filter(|(_, r)| !cel_of(r).is_empty())
        .collect();
    if requests.is_empty() {
        return Vec::new();
    }
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
        let own: Vec<_> = cel_of(req).into_iter().map(|e| view.compile(e)).collect();
        let needed = exactly.count.unwrap_or(1);
        let mut matched = 0i64;
        let mut failed = None;
        'devices: for (d, device) in view.devices.iter().enumerate() {
            if taken.contains(&d) {
                continue;
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

/// Adds a [`Charge::Devices`] to the engine's pod sets: each device is
/// 1000 milli-units of its quota resource, per pod, on top of what the
/// containers request under the same name (Kueue adds them).
pub fn add_to(pod_sets: &mut [crate::queueing::PodSet], per_pod_set: &[BTreeMap<String, i64>]) {
    for (ps, devices) in pod_sets.iter_mut().zip(per_pod_set) {
        for (resource, n) in devices {
            let before = ps.requests.get(resource).unwrap_or(0);
            ps.requests
                .insert(resource, before.saturating_add(n.saturating_mul(1000)));
        }
    }
}

#[cfg(test)]
mod tests;
