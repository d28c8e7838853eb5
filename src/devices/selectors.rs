//! DRA device selectors: the CEL expressions of DeviceClasses and device
//! requests (`resource.k8s.io/v1`), compiled and evaluated against the
//! devices ResourceSlices publish, with the `cel` crate.
//!
//! The environment is Kubernetes': `device.driver`, `device.attributes`
//! and `device.capacity`, maps from a domain to a map from an identifier
//! to a value (an unqualified attribute name is in the driver's domain),
//! and the quantity and semver functions the Kubernetes CEL library adds.
//! Quantities are integers of milli-units, so `compareTo`, `isLessThan`,
//! `isGreaterThan`, `asInteger` and the comparison operators all work on
//! them; versions are strings compared as semantic versions.

use std::{cmp::Ordering, collections::HashMap, sync::Arc};

use cel::{
    extractors::{Arguments, This},
    Context, ExecutionError, FunctionContext, Program, Value,
};
use k8s_openapi::api::resource::v1::ResourceSliceSpec;

use crate::vocabulary::quantity::Quantity;

/// A compiled selector expression.
pub struct Selector(Program);

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Selector")
    }
}

/// A DeviceClass's CEL selector expressions, in order.
pub fn class_selectors(spec: &k8s_openapi::api::resource::v1::DeviceClassSpec) -> Vec<String> {
    let selectors = spec.selectors.iter().flatten();
    selectors
        .filter_map(|s| s.cel.as_ref().map(|c| c.expression.clone()))
        .collect()
}

/// Compiles one CEL expression; the parser's message if it does not.
pub fn compile(expression: &str) -> Result<Selector, String> {
    Program::compile(expression)
        .map(Selector)
        .map_err(|e| e.to_string().replace('\n', "; "))
}

/// One device as CEL sees it.
#[derive(Debug, Clone)]
pub struct Device(Value);

/// Every device the slices publish, in slice order. A domain no device of
/// the slices has is absent; one some device has is an empty map on the
/// others, so `has(device.attributes[domain].id)` is false there rather
/// than an error, as in Kubernetes.
pub fn devices(slices: &[&ResourceSliceSpec]) -> Vec<Device> {
    type Domains = HashMap<String, HashMap<String, Value>>;
    let mut read: Vec<(String, Domains, Domains, bool)> = Vec::new();
    let mut domains: std::collections::BTreeSet<String> = Default::default();
    for s in slices {
        for d in s.devices.iter().flatten() {
            let mut attributes: Domains = HashMap::new();
            for (name, a) in d.attributes.iter().flatten() {
                let (domain, id) = qualified(&s.driver, name);
                let v = if let Some(b) = a.bool {
                    Value::Bool(b)
                } else if let Some(i) = a.int {
                    Value::Int(i)
                } else if let Some(s) = &a.string {
                    Value::String(Arc::new(s.clone()))
                } else if let Some(v) = &a.version {
                    Value::String(Arc::new(v.clone()))
                } else {
                    continue;
                };
                attributes.entry(domain).or_default().insert(id, v);
            }
            let mut capacity: Domains = HashMap::new();
            for (name, c) in d.capacity.iter().flatten() {
                let (domain, id) = qualified(&s.driver, name);
                if let Ok(q) = Quantity::parse(&c.value.0) {
                    capacity
                        .entry(domain)
                        .or_default()
                        .insert(id, Value::Int(milli(&q)));
                }
            }
            domains.insert(s.driver.clone());
            domains.extend(attributes.keys().cloned());
            domains.extend(capacity.keys().cloned());
            read.push((
                s.driver.clone(),
                attributes,
                capacity,
                d.allow_multiple_allocations.unwrap_or(false),
            ));
        }
    }
    let nest = |mut m: Domains| {
        for d in &domains {
            m.entry(d.clone()).or_default();
        }
        Value::from(
            m.into_iter()
                .map(|(k, v)| (k, Value::from(v)))
                .collect::<HashMap<String, Value>>(),
        )
    };
    read.into_iter()
        .map(|(driver, attributes, capacity, multiple)| {
            let device: HashMap<String, Value> = [
                ("driver".to_string(), Value::String(Arc::new(driver))),
                ("attributes".to_string(), nest(attributes)),
                ("capacity".to_string(), nest(capacity)),
                (
                    "allowMultipleAllocations".to_string(),
                    Value::Bool(multiple),
                ),
            ]
            .into();
            Device(Value::from(device))
        })
        .collect()
}

/// `domain/id`, or the driver's domain for an unqualified name.
fn qualified(driver: &str, name: &str) -> (String, String) {
    match name.split_once('/') {
        Some((domain, id)) => (domain.to_string(), id.to_string()),
        None => (driver.to_string(), name.to_string()),
    }
}

fn milli(q: &Quantity) -> i64 {
    let m = q.nanos() / 1_000_000;
    m.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

fn quantity(ftx: &FunctionContext, s: Arc<String>) -> Result<i64, ExecutionError> {
    Quantity::parse(&s)
        .map(|q| milli(&q))
        .map_err(|e| ftx.error(format!("invalid quantity {s:?}: {e}")))
}

/// A version's `major.minor.patch` and its pre-release part.
type Semver<'a> = ((u64, u64, u64), Option<&'a str>);

/// `major.minor.patch[-pre][+build]`, compared as semver does.
fn semver_cmp(a: &str, b: &str) -> Option<Ordering> {
    fn parts(v: &str) -> Option<Semver<'_>> {
        let v = v.split('+').next()?;
        let (core, pre) = match v.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (v, None),
        };
        let mut it = core.split('.').map(|n| n.parse::<u64>().ok());
        let t = (it.next()??, it.next()??, it.next()??);
        it.next().is_none().then_some((t, pre))
    }
    let (ca, pa) = parts(a)?;
    let (cb, pb) = parts(b)?;
    Some(ca.cmp(&cb).then_with(|| match (pa, pb) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => {
            let (xs, ys): (Vec<&str>, Vec<&str>) = (x.split('.').collect(), y.split('.').collect());
            for (p, q) in xs.iter().zip(&ys) {
                let o = match (p.parse::<u64>(), q.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    _ => p.cmp(q),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
            xs.len().cmp(&ys.len())
        }
    }))
}

fn compare(ftx: &FunctionContext, this: &Value, other: &Value) -> Result<Ordering, ExecutionError> {
    match (this, other) {
        (Value::Int(a), Value::Int(b)) => Ok(a.cmp(b)),
        (Value::String(a), Value::String(b)) => semver_cmp(a, b)
            .ok_or_else(|| ftx.error(format!("not semantic versions: {a:?}, {b:?}"))),
        _ => Err(ftx.error("no such overload")),
    }
}

/// A context with the Kubernetes functions, to evaluate selectors in.
pub fn context() -> Context<'static, 'static> {
    let mut ctx = Context::default();
    let added = [
        ctx.add_function("quantity", quantity),
        ctx.add_function("isQuantity", |s: Arc<String>| -> bool {
            Quantity::parse(&s).is_ok()
        }),
        ctx.add_function(
            "semver",
            |ftx: &FunctionContext, s: Arc<String>| -> Result<Value, ExecutionError> {
                semver_cmp(&s, &s)
                    .map(|_| Value::String(s.clone()))
                    .ok_or_else(|| ftx.error(format!("invalid semver {s:?}")))
            },
        ),
        ctx.add_function("isSemver", |s: Arc<String>| -> bool {
            semver_cmp(&s, &s).is_some()
        }),
        ctx.add_function(
            "compareTo",
            |ftx: &FunctionContext, This(this): This<Value>, Arguments(args): Arguments| {
                let other = args.first().cloned().unwrap_or(Value::Null);
                compare(ftx, &this, &other).map(|o| o as i64)
            },
        ),
        ctx.add_function(
            "isGreaterThan",
            |ftx: &FunctionContext, This(this): This<Value>, Arguments(args): Arguments| {
                let other = args.first().cloned().unwrap_or(Value::Null);
                compare(ftx, &this, &other).map(|o| o == Ordering::Greater)
            },
        ),
        ctx.add_function(
            "isLessThan",
            |ftx: &FunctionContext, This(this): This<Value>, Arguments(args): Arguments| {
                let other = args.first().cloned().unwrap_or(Value::Null);
                compare(ftx, &this, &other).map(|o| o == Ordering::Less)
            },
        ),
        ctx.add_function("asInteger", |This(this): This<i64>| -> i64 {
            this.div_euclid(1000)
        }),
        ctx.add_function("asApproximateFloat", |This(this): This<i64>| -> f64 {
            this as f64 / 1000.0
        }),
    ];
    for a in added {
        a.expect("the Kubernetes CEL functions are declared once each");
    }
    ctx
}

impl Selector {
    /// Whether `device` matches; CEL's error if the expression fails on it
    /// or gives something other than a bool.
    pub fn matches(&self, ctx: &Context, device: &Device) -> Result<bool, String> {
        let mut scope = ctx.new_inner_scope();
        scope.add_variable_from_value("device", device.0.clone());
        match self.0.execute(&scope) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!(
                "CEL result of type {:?} is not bool",
                other.type_of()
            )),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn slice(v: serde_json::Value) -> ResourceSliceSpec {
        serde_json::from_value(v).unwrap()
    }

    fn matching(expr: &str, slices: &[&ResourceSliceSpec]) -> Result<Vec<bool>, String> {
        let s = compile(expr)?;
        let ctx = context();
        devices(slices).iter().map(|d| s.matches(&ctx, d)).collect()
    }

    #[test]
    fn kubernetes_selectors_read_attributes_capacity_and_the_driver() {
        let gpus = slice(json!({"driver": "gpu.example.com", "nodeName": "n",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": "a", "attributes": {"model": {"string": "a100"}, "index": {"int": 0},
                    "example.com/mig": {"bool": true}, "driverVersion": {"version": "1.2.3-rc.1"}},
                 "capacity": {"memory": {"value": "40Gi"}}},
                {"name": "b", "attributes": {"model": {"string": "h100"}, "index": {"int": 1},
                    "driverVersion": {"version": "1.10.0"}},
                 "capacity": {"memory": {"value": "80Gi"}}}]}));
        let at = |e: &str| matching(e, &[&gpus]).unwrap();
        assert_eq!(at("device.driver == 'gpu.example.com'"), [true, true]);
        assert_eq!(
            at("device.attributes['gpu.example.com'].model == 'h100'"),
            [false, true]
        );
        assert_eq!(
            at("device.capacity['gpu.example.com'].memory.compareTo(quantity('64Gi')) >= 0"),
            [false, true]
        );
        assert_eq!(
            at("device.capacity['gpu.example.com'].memory.isLessThan(quantity('64Gi'))"),
            [true, false]
        );
        assert_eq!(
            at("device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.2.3'))"),
            [false, true]
        );
        assert_eq!(
            at("has(device.attributes['example.com'].mig)"),
            [true, false]
        );
        assert_eq!(
            at("device.attributes['gpu.example.com'].index > 0 && isQuantity('1Gi')"),
            [false, true]
        );
        // A missing key is an evaluation error, a non-bool result too.
        assert!(matching("device.attributes['gpu.example.com'].nope == 1", &[&gpus]).is_err());
        assert!(matching("device.driver", &[&gpus]).is_err());
        assert!(compile("this is not valid CEL!!!").is_err());
    }

    #[test]
    fn semantic_versions_order_as_semver() {
        for (a, b, o) in [
            ("1.2.3", "1.10.0", Ordering::Less),
            ("1.0.0-alpha", "1.0.0", Ordering::Less),
            ("1.0.0-alpha.2", "1.0.0-alpha.10", Ordering::Less),
            ("1.0.0-rc.1", "1.0.0-beta", Ordering::Greater),
            ("2.0.0+build", "2.0.0", Ordering::Equal),
        ] {
            assert_eq!(semver_cmp(a, b), Some(o), "{a} vs {b}");
        }
        assert_eq!(semver_cmp("1.2", "1.2.0"), None);
    }
}
