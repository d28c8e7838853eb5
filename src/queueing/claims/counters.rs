//! Partitionable devices charged by counters, as Kueue v0.19.2 does with
//! `KueueDRAIntegrationPartitionableDevices` (`pkg/dra/counters.go`): a
//! DeviceClass mapped with `sources[].counter` is not charged per device
//! but by the counter its devices consume (GPU memory of a MIG profile,
//! say): the largest value among the devices the request could get, times
//! the count, as the mapping's quota resource.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{DeviceRequest, ResourceClaimSpec, ResourceSliceSpec};

use super::{DeviceMeta, DeviceView, Settings};
use crate::vocabulary::quantity::Quantity;

/// One `sources[].counter` of a mapping, for each DeviceClass it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterSource {
    /// The mapping's `name`: the quota resource charged.
    pub resource: String,
    /// Only this driver's ResourceSlices are read.
    pub driver: String,
    /// The counter, by name, in any of a device's counter sets.
    pub counter: String,
    /// `deviceSelector.cel.expression`: which devices share the pool.
    pub selector: String,
}

/// What each device of `slices` (in [`crate::devices::selectors::devices`]'
/// order) offers the counter charge. A pool counts only at its newest
/// generation and once all its slices are published (Kueue's
/// `groupSlicesByPool`), so a half-published pool charges nothing.
pub(super) fn meta(slices: &[&ResourceSliceSpec]) -> Vec<DeviceMeta> {
    let usable = crate::devices::slices::usable(slices);
    let devices = slices
        .iter()
        .flat_map(|s| s.devices.iter().flatten().map(move |d| (s, d)));
    devices
        .zip(usable)
        .map(|((s, d), complete)| {
            let mut counters: BTreeMap<String, i64> = BTreeMap::new();
            for set in d.consumes_counters.iter().flatten() {
                for (name, c) in &set.counters {
                    let v = units(&c.value.0);
                    let e = counters.entry(name.clone()).or_insert(v);
                    *e = (*e).max(v);
                }
            }
            DeviceMeta {
                name: d.name.clone(),
                driver: s.driver.clone(),
                complete,
                counters,
            }
        })
        .collect()
}

/// A counter's value in whole units, as Kueue's `SafeValue`: rounded up,
/// negative (a driver's mistake) read as zero, beyond `i64` clamped.
pub(super) fn units(text: &str) -> i64 {
    let Ok(q) = Quantity::parse(text) else {
        return 0;
    };
    let n = q.nanos();
    let whole = n.div_euclid(1_000_000_000) + i128::from(n.rem_euclid(1_000_000_000) != 0);
    whole.clamp(0, i64::MAX as i128) as i64
}

/// Kueue's `computeCounterCharges`: the largest value of `counter` among
/// `values`, times `count` (saturating); `None` when no device has it.
pub(super) fn largest_times(values: impl Iterator<Item = Option<i64>>, count: i64) -> Option<i64> {
    values.flatten().max().map(|v| {
        if count > 1 {
            v.saturating_mul(count)
        } else {
            v
        }
    })
}

/// The counter charges of one claim spec's requests whose DeviceClass
/// has counter sources, per quota resource; or Kueue's message for the
/// first request it cannot charge. `claim` is the claim's field path.
pub(super) fn charge(
    spec: &ResourceClaimSpec,
    claim: &str,
    view: &DeviceView,
    settings: &Settings,
) -> Result<BTreeMap<String, i64>, String> {
    let mut out: BTreeMap<String, i64> = BTreeMap::new();
    let requests = spec
        .devices
        .iter()
        .flat_map(|d| d.requests.iter().flatten());
    for (k, req) in requests.enumerate() {
        let Some(exactly) = &req.exactly else {
            continue;
        };
        let class = exactly.device_class_name.as_str();
        let Some(sources) = settings.counters.get(class) else {
            continue;
        };
        let at = format!("{claim}.devices.requests[{k}]");
        let class_exprs: &[String] = match view.classes.get(class) {
            Some(e) => e,
            None if class.is_empty() => &[],
            None => {
                return Err(format!(
                    "{at}: Internal error: failed to get DeviceClass {class}: deviceclasses.resource.k8s.io {class:?} not found"
                ))
            }
        };
        let count = exactly.count.unwrap_or(1);
        for source in sources {
            let matched = matching(source, class, class_exprs, req, view, &at)?;
            if (matched.len() as i64) < count {
                return Err(format!(
                    "{at}: Internal error: insufficient matching devices for counter driver: {} device(s) match but {count} requested",
                    matched.len()
                ));
            }
            let Some(charge) = largest_times(
                matched
                    .iter()
                    .map(|m| m.counters.get(&source.counter).copied()),
                count,
            ) else {
                return Err(format!(
                    "{at}: Internal error: matched devices have no consumesCounters entry for counter {:?}",
                    source.counter
                ));
            };
            let e = out.entry(source.resource.clone()).or_default();
            *e = e.saturating_add(charge);
        }
    }
    Ok(out)
}

/// The devices of `source`'s driver, in complete pools, that its selector,
/// the class's and the request's all accept (Kueue's
/// `matchDevicesWithSelectors`, in its order of selectors).
fn matching<'v>(
    source: &CounterSource,
    class: &str,
    class_exprs: &[String],
    req: &DeviceRequest,
    view: &'v DeviceView,
    at: &str,
) -> Result<Vec<&'v DeviceMeta>, String> {
    let compile = |exprs: &[&str], path: String, context: &str| {
        let mut out = Vec::new();
        for (i, e) in exprs.iter().enumerate() {
            let c = view.compile(e);
            if let Err(err) = c.as_ref() {
                return Err(format!(
                    "{path}[{i}].cel.expression: Invalid value: {e:?}: {context}: {err}"
                ));
            }
            out.push(c);
        }
        Ok(out)
    };
    let own = compile(
        &[source.selector.as_str()],
        at.to_string(),
        "deviceSelector CEL compilation failed",
    )?;
    let class_exprs: Vec<&str> = class_exprs.iter().map(String::as_str).collect();
    let of_class = compile(
        &class_exprs,
        at.to_string(),
        &format!("DeviceClass {class} has invalid CEL selector"),
    )?;
    let of_request = compile(
        &super::cel_of(req).collect::<Vec<_>>(),
        format!("{at}.exactly.selectors"),
        "CEL compilation failed",
    )?;
    let ctx = crate::devices::selectors::context();
    let mut out = Vec::new();
    'devices: for (d, device) in view.devices.iter().enumerate() {
        let Some(m) = view.meta.get(d) else { break };
        if m.driver != source.driver || !m.complete {
            continue;
        }
        for (selectors, what) in [
            (&own, "deviceSelector"),
            (&of_class, "DeviceClass selector"),
            (&of_request, "request selector"),
        ] {
            for s in selectors {
                let Ok(s) = s.as_ref() else { continue };
                match s.matches(&ctx, device) {
                    Ok(true) => {}
                    Ok(false) => continue 'devices,
                    Err(e) => {
                        return Err(format!(
                        "{at}: Internal error: CEL evaluation error in {what} for device {}: {e}",
                        m.name
                    ))
                    }
                }
            }
        }
        out.push(m);
    }
    Ok(out)
}
