//! Extended resources backed by DRA, as Kueue v0.19.2 does with
//! `KueueDRAIntegrationExtendedResource` (`pkg/dra/extended_resources.go`):
//! a container asking `example.com/gpu: 2` where a DeviceClass declares
//! `extendedResourceName: example.com/gpu` gets its devices from DRA, so
//! the request is charged as that class's mapped quota resource (the same
//! quota as its claim templates), or as itself when the class is unmapped.

use std::collections::{BTreeMap, BTreeSet};

use super::{DeviceView, Settings};

/// One container's positive request for an extended resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtendedRequest {
    /// `containers[j]` or `initContainers[j]`.
    pub container: String,
    pub name: String,
    /// As written, for messages.
    pub quantity: String,
    /// Whole units, rounded up.
    pub units: i128,
    /// Whether it is a whole number.
    pub integer: bool,
}

impl ExtendedRequest {
    /// A container's request for `name` (`container` is `containers[j]`
    /// or `initContainers[j]`); `None` unless it is a positive quantity,
    /// which is all Kueue charges.
    pub fn new(container: String, name: &str, quantity: &str) -> Option<ExtendedRequest> {
        let n = crate::vocabulary::quantity::Quantity::parse(quantity)
            .ok()?
            .nanos();
        if n <= 0 {
            return None;
        }
        let fraction = n.rem_euclid(1_000_000_000);
        Some(ExtendedRequest {
            container,
            name: name.to_string(),
            quantity: quantity.to_string(),
            units: n.div_euclid(1_000_000_000) + i128::from(fraction != 0),
            integer: fraction == 0,
        })
    }

    fn init(&self) -> bool {
        self.container.starts_with("init")
    }
}

/// Kubernetes' `IsExtendedResourceName`: qualified, outside
/// `kubernetes.io/`, not hugepages.
pub fn is_extended(name: &str) -> bool {
    name.contains('/') && !name.starts_with("kubernetes.io/") && !name.starts_with("hugepages-")
}

/// The DeviceClass Kubernetes allocates an extended resource from when
/// several declare it: the one created last, ties (timestamps are whole
/// seconds) to the first name. `classes` is (name, creation in seconds).
pub fn selected_class<'a>(classes: impl IntoIterator<Item = (&'a str, i64)>) -> Option<&'a str> {
    classes
        .into_iter()
        .max_by(|(a, at), (b, bt)| at.cmp(bt).then(b.cmp(a)))
        .map(|(name, _)| name)
}

/// What one pod set's DRA-backed extended requests come to, per pod.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Resolved {
    /// Quota resource → whole units.
    pub charged: BTreeMap<String, i64>,
    /// The extended names charged here, to drop from the pod's requests.
    pub replaced: BTreeSet<String>,
}

/// Kueue's `ResolveExtendedResourceQuota` for pod set `i`: init containers
/// by max, the others summed, the larger of the two, per name; errors as
/// Kueue words them, all of them.
pub(super) fn resolve(
    i: usize,
    requests: &[ExtendedRequest],
    view: &DeviceView,
    settings: &Settings,
    errors: &mut Vec<String>,
) -> Resolved {
    let mut out = Resolved::default();
    if requests.is_empty() {
        return out;
    }
    let base = format!("spec.podSets[{i}].template.spec");
    // name → (first container, max of init, sum of the others)
    let mut per_name: BTreeMap<&str, (&str, i128, i128)> = BTreeMap::new();
    let in_order = requests
        .iter()
        .filter(|r| r.init())
        .chain(requests.iter().filter(|r| !r.init()));
    for r in in_order {
        let e = per_name.entry(&r.name).or_insert((&r.container, 0, 0));
        if r.init() {
            e.1 = e.1.max(r.units);
        } else {
            e.2 = e.2.saturating_add(r.units);
        }
    }
    for (name, (first, init, regular)) in per_name {
        let Some(class) = view.extended.get(name) else {
            continue;
        };
        let key = settings.classes.get(class).map_or(name, String::as_str);
        if settings.classes.contains_key(class)
            && settings.partitionable
            && settings.counters.contains_key(class)
        {
            errors.push(format!(
                "{base}.{first}: Invalid value: {name:?}: extended resource {name} resolves to DeviceClass {class} with counters configured; use ResourceClaimTemplates with CEL selectors for counter-based quota"
            ));
            continue;
        }
        let mut fractional = false;
        for r in requests.iter().filter(|r| r.name == name && !r.integer) {
            fractional = true;
            errors.push(format!(
                "{base}.{}.resources.requests.{name}: Invalid value: {:?}: extended resource quantity must be an integer",
                r.container, r.quantity
            ));
        }
        if fractional {
            continue;
        }
        let total = init.max(regular);
        let Ok(total) = i64::try_from(total) else {
            errors.push(format!(
                "{base}.{first}.resources.requests.{name}: Invalid value: \"{total}\": total extended resource quantity overflows int64"
            ));
            continue;
        };
        out.replaced.insert(name.to_string());
        let e = out.charged.entry(key.to_string()).or_default();
        *e = e.saturating_add(total);
    }
    out
}
