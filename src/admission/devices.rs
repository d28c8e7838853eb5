//! Validation of the device kinds (`devmgmtproto.k8s.io/v1alpha1`): pure,
//! `(kind, object, what the cluster has) -> field errors`, in apimachinery's
//! wording.
//!
//! - DeviceClass: a device type; a driver, if named, exists and lists the
//!   type; without a driver, some driver lists the type; constraints parse;
//!   counts positive, min ≤ max.
//! - DeviceClaim: the class exists; a driver agrees with the class's;
//!   constraints parse; counts positive and within the class's bounds.
//! - DevicePool: a driver; a count ≥ 0; each attribute named once, with
//!   exactly one value.
//! - DeviceDriver: device type names not empty.
//!
//! Existence is read from the webhook's watch-backed caches
//! ([`DeviceFacts`]); without a cluster (`--no-cluster`) nothing is known
//! and references are not checked. A reference created a moment before the
//! object naming it may not have reached the cache yet: the object is
//! refused, and the same apply a second later passes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{
    family::{Decided, Family, Review},
    field::{aggregate, BadValue, ErrorType, FieldError},
    kueue::decode,
    object::DecodeError,
    Decision, Operation, Verdict,
};
/// The group and version routed here.
pub use crate::api::devices::{GROUP, VERSION};
use crate::{
    api::devices::v1alpha1::{DeviceClaimSpec, DeviceClassSpec, DeviceDriver, DevicePoolSpec},
    devices::expression,
};

/// The device kinds validated here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    DeviceDriver,
    DeviceClass,
    DeviceClaim,
    DevicePool,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::DeviceDriver,
        Kind::DeviceClass,
        Kind::DeviceClaim,
        Kind::DevicePool,
    ];

    pub fn of(group: &str, version: &str, kind: &str) -> Option<Kind> {
        if group != GROUP || version != VERSION {
            return None;
        }
        Kind::ALL.into_iter().find(|k| k.name() == kind)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::DeviceDriver => "DeviceDriver",
            Kind::DeviceClass => "DeviceClass",
            Kind::DeviceClaim => "DeviceClaim",
            Kind::DevicePool => "DevicePool",
        }
    }

    pub fn resource(self) -> &'static str {
        match self {
            Kind::DeviceDriver => "devicedrivers",
            Kind::DeviceClass => "deviceclasses",
            Kind::DeviceClaim => "deviceclaims",
            Kind::DevicePool => "devicepools",
        }
    }

    pub fn namespaced(self) -> bool {
        self == Kind::DeviceClaim
    }

    /// The webhook's name (no upstream: the prototype had no webhook).
    pub fn webhook_name(self) -> String {
        format!("v{}.{GROUP}", self.name().to_lowercase())
    }

    /// The `kind` metric label.
    pub fn metric_label(self) -> &'static str {
        match self {
            Kind::DeviceDriver => "devmgmtproto.k8s.io/devicedriver",
            Kind::DeviceClass => "devmgmtproto.k8s.io/deviceclass",
            Kind::DeviceClaim => "devmgmtproto.k8s.io/deviceclaim",
            Kind::DevicePool => "devmgmtproto.k8s.io/devicepool",
        }
    }
}

/// What the cluster has, as far as validation needs it. `None` from
/// [`DeviceFacts::drivers`] means "not known" (no cluster): references are
/// then not checked.
pub trait DeviceFacts {
    /// Driver name → device types.
    fn drivers(&self) -> Option<BTreeMap<String, Vec<String>>>;
    /// A class by name (`None`: no such class, or not known).
    fn class(&self, name: &str) -> Option<DeviceClassSpec>;
}

/// Nothing known.
pub struct Unknown;

impl DeviceFacts for Unknown {
    fn drivers(&self) -> Option<BTreeMap<String, Vec<String>>> {
        None
    }
    fn class(&self, _: &str) -> Option<DeviceClassSpec> {
        None
    }
}

/// The object could not be read as its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecodable {
    pub what: &'static str,
    pub error: DecodeError,
}

/// The errors of a create or update (deletes are not validated).
pub fn validate(
    kind: Kind,
    op: Operation,
    object: Option<&Value>,
    facts: &dyn DeviceFacts,
) -> Result<Vec<FieldError>, Undecodable> {
    if !matches!(op, Operation::Create | Operation::Update) {
        return Ok(Vec::new());
    }
    let Some(object) = object else {
        return Err(Undecodable {
            what: "object",
            error: DecodeError {
                field: "request.object".into(),
                message: format!("required for {} of {}", op.as_str(), kind.name()),
            },
        });
    };
    let undecodable = |(what, error)| Undecodable { what, error };
    let spec = || object.get("spec").cloned().unwrap_or(Value::Null);
    Ok(match kind {
        Kind::DeviceDriver => {
            let d: DeviceDriver = decode(object, "object").map_err(undecodable)?;
            validate_driver(&d)
        }
        Kind::DeviceClass => {
            let s: DeviceClassSpec = decode(&spec(), "object")
                .map_err(|(w, e)| undecodable((w, prefixed("spec", e))))?;
            validate_class(&s, facts)
        }
        Kind::DeviceClaim => {
            let s: DeviceClaimSpec = decode(&spec(), "object")
                .map_err(|(w, e)| undecodable((w, prefixed("spec", e))))?;
            validate_claim(&s, facts)
        }
        Kind::DevicePool => {
            let s: DevicePoolSpec = decode(&spec(), "object")
                .map_err(|(w, e)| undecodable((w, prefixed("spec", e))))?;
            validate_pool(&s)
        }
    })
}

fn prefixed(root: &str, mut e: DecodeError) -> DecodeError {
    e.field = if e.field == "object" {
        root.to_string()
    } else {
        format!("{root}.{}", e.field)
    };
    e
}

fn not_found(field: &str, value: &str, detail: String) -> FieldError {
    FieldError {
        field: field.into(),
        kind: ErrorType::NotFound,
        value: BadValue::Str(value.into()),
        detail,
    }
}

fn positive(field: &str, v: Option<i64>, errs: &mut Vec<FieldError>) {
    if let Some(v) = v.filter(|v| *v <= 0) {
        errs.push(FieldError::invalid(
            field,
            BadValue::Int(v),
            "must be greater than 0",
        ));
    }
}

fn constraints(field: &str, text: Option<&str>, errs: &mut Vec<FieldError>) {
    if let Some(t) = text {
        if let Err(e) = expression::parse(t) {
            errs.push(FieldError::invalid(
                field,
                BadValue::Str(t.into()),
                e.to_string(),
            ));
        }
    }
}

fn counts(min: Option<i64>, max: Option<i64>, errs: &mut Vec<FieldError>) {
    positive("spec.minDeviceCount", min, errs);
    positive("spec.maxDeviceCount", max, errs);
    if let (Some(min), Some(max)) = (min, max) {
        if min > max {
            errs.push(FieldError::invalid(
                "spec.minDeviceCount",
                BadValue::Int(min),
                format!("must be less than or equal to maxDeviceCount ({max})"),
            ));
        }
    }
}

fn match_attributes(names: Option<&Vec<String>>, errs: &mut Vec<FieldError>) {
    for (i, n) in names.into_iter().flatten().enumerate() {
        let bare = n.strip_prefix("device.").unwrap_or(n);
        if bare.is_empty() {
            errs.push(FieldError::invalid(
                format!("spec.matchAttributes[{i}]"),
                BadValue::Str(n.clone()),
                "must name an attribute",
            ));
        }
    }
}

fn names(list: &BTreeMap<String, Vec<String>>) -> String {
    let all: Vec<&str> = list.keys().map(String::as_str).collect();
    if all.is_empty() {
        "none exists".into()
    } else {
        format!("existing: {}", all.join(", "))
    }
}

pub fn validate_class(s: &DeviceClassSpec, facts: &dyn DeviceFacts) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if s.device_type.is_empty() {
        errs.push(FieldError::required(
            "spec.deviceType",
            "a device type some DeviceDriver lists, e.g. gpu",
        ));
    }
    if let Some(drivers) = facts.drivers() {
        match &s.driver {
            Some(d) => match drivers.get(d) {
                None => errs.push(not_found(
                    "spec.driver",
                    d,
                    format!("no DeviceDriver of that name ({}); create the DeviceDriver first or name an existing one", names(&drivers)),
                )),
                Some(types) if !s.device_type.is_empty() && !types.contains(&s.device_type) => {
                    errs.push(FieldError::invalid(
                        "spec.deviceType",
                        BadValue::Str(s.device_type.clone()),
                        format!("DeviceDriver {d:?} does not handle this device type (its deviceTypes: [{}])", types.join(", ")),
                    ))
                }
                Some(_) => {}
            },
            None if !s.device_type.is_empty()
                && !drivers.values().any(|t| t.contains(&s.device_type)) =>
            {
                let known: BTreeSet<&str> =
                    drivers.values().flatten().map(String::as_str).collect();
                errs.push(not_found(
                    "spec.deviceType",
                    &s.device_type,
                    format!(
                        "no DeviceDriver lists this device type (known types: [{}]); name a known type or create the DeviceDriver first",
                        known.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                ))
            }
            None => {}
        }
    }
    constraints("spec.constraints", s.constraints.as_deref(), &mut errs);
    counts(s.min_device_count, s.max_device_count, &mut errs);
    match_attributes(s.match_attributes.as_ref(), &mut errs);
    errs
}

pub fn validate_claim(s: &DeviceClaimSpec, facts: &dyn DeviceFacts) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if s.device_class.is_empty() {
        errs.push(FieldError::required(
            "spec.deviceClass",
            "the name of a DeviceClass",
        ));
    } else if facts.drivers().is_some() {
        match facts.class(&s.device_class) {
            None => errs.push(not_found(
                "spec.deviceClass",
                &s.device_class,
                "no DeviceClass of that name; create the DeviceClass first or name an existing one"
                    .into(),
            )),
            Some(class) => {
                if let (Some(d), Some(cd)) = (&s.driver, &class.driver) {
                    if d != cd {
                        errs.push(FieldError::invalid(
                            "spec.driver",
                            BadValue::Str(d.clone()),
                            format!("must match the DeviceClass's driver {cd:?} (or be left out)"),
                        ));
                    }
                }
                let count = s.min_device_count.or(class.min_device_count).unwrap_or(1);
                if let Some(min) = class.min_device_count.filter(|m| count < *m) {
                    errs.push(FieldError::invalid(
                        "spec.minDeviceCount",
                        BadValue::Int(count),
                        format!("must be at least the DeviceClass's minDeviceCount ({min})"),
                    ));
                }
                if let Some(max) = class.max_device_count.filter(|m| count > *m) {
                    errs.push(FieldError::invalid(
                        "spec.minDeviceCount",
                        BadValue::Int(count),
                        format!("must be at most the DeviceClass's maxDeviceCount ({max})"),
                    ));
                }
            }
        }
    }
    constraints("spec.constraints", s.constraints.as_deref(), &mut errs);
    counts(s.min_device_count, s.max_device_count, &mut errs);
    match_attributes(s.match_attributes.as_ref(), &mut errs);
    errs
}

pub fn validate_pool(s: &DevicePoolSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if s.driver.is_empty() {
        errs.push(FieldError::required(
            "spec.driver",
            "the name of the DeviceDriver owning the pool",
        ));
    }
    if s.device_count < 0 {
        errs.push(FieldError::invalid(
            "spec.count",
            BadValue::Int(s.device_count),
            "must be greater than or equal to 0",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, a) in s.attributes.iter().enumerate() {
        let field = format!("spec.attributes[{i}]");
        if a.name.is_empty() {
            errs.push(FieldError::required(format!("{field}.name"), ""));
        } else if !seen.insert(a.name.as_str()) {
            errs.push(FieldError {
                field: format!("{field}.name"),
                kind: ErrorType::Invalid,
                value: BadValue::Str(a.name.clone()),
                detail: "duplicate attribute name".into(),
            });
        }
        let set = [
            a.string_value.is_some(),
            a.int_value.is_some(),
            a.quantity_value.is_some(),
            a.sem_ver_value.is_some(),
        ]
        .into_iter()
        .filter(|x| *x)
        .count();
        if set != 1 {
            errs.push(FieldError::invalid(
                field,
                BadValue::Str(a.name.clone()),
                format!("exactly one of stringValue, intValue, quantityValue, semVerValue must be set, found {set}"),
            ));
        }
    }
    errs
}

fn validate_driver(d: &DeviceDriver) -> Vec<FieldError> {
    d.device_types
        .iter()
        .enumerate()
        .filter(|(_, t)| t.is_empty())
        .map(|(i, _)| FieldError::required(format!("deviceTypes[{i}]"), "a device type name"))
        .collect()
}

/// The device kinds behind the admission router: validated whole against
/// the drivers and classes the cluster has.
pub struct DeviceKind(pub Kind);

impl Family for DeviceKind {
    fn label(&self) -> &'static str {
        self.0.metric_label()
    }
    fn decide(&self, review: &Review<'_>, ctx: &super::Context<'_>) -> Decided {
        let kind = self.0;
        let facts = ctx.facts.device_facts().unwrap_or(&Unknown);
        let verdict = match validate(
            kind,
            review.operation,
            review.request.object.as_ref(),
            facts,
        ) {
            Ok(errs) if errs.is_empty() => Verdict::Allow,
            Ok(errs) => Verdict::Deny(aggregate(&errs)),
            Err(e) => Verdict::Malformed(format!(
                "cannot decode {GROUP}/{VERSION}, Kind={} in request.{}: {}",
                kind.name(),
                e.what,
                e.error
            )),
        };
        Decision::with(verdict).into()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    struct Facts;
    impl DeviceFacts for Facts {
        fn drivers(&self) -> Option<BTreeMap<String, Vec<String>>> {
            Some(
                [
                    ("example.com-foozer".to_string(), vec!["gpu".to_string()]),
                    (
                        "example.com-barzer".to_string(),
                        vec!["gpu".into(), "sriov-nic".into()],
                    ),
                ]
                .into(),
            )
        }
        fn class(&self, name: &str) -> Option<DeviceClassSpec> {
            (name == "example.com-foozer-single").then(|| DeviceClassSpec {
                device_type: "gpu".into(),
                driver: Some("example.com-foozer".into()),
                max_device_count: Some(1),
                ..DeviceClassSpec::default()
            })
        }
    }

    fn check(kind: Kind, obj: Value) -> String {
        aggregate(&validate(kind, Operation::Create, Some(&obj), &Facts).unwrap())
    }

    #[test]
    fn a_class_names_an_existing_driver_or_device_type() {
        let class = |spec: Value| check(Kind::DeviceClass, json!({"spec": spec}));
        assert_eq!(
            class(json!({"deviceType": "gpu", "driver": "example.com-foozer"})),
            ""
        );
        assert_eq!(class(json!({"deviceType": "sriov-nic"})), "");
        assert_eq!(
            class(json!({"deviceType": "gpu", "driver": "nvidia"})),
            "spec.driver: Not found: \"nvidia\": no DeviceDriver of that name (existing: example.com-barzer, example.com-foozer); create the DeviceDriver first or name an existing one"
        );
        assert_eq!(
            class(json!({"deviceType": "sriov-nic", "driver": "example.com-foozer"})),
            "spec.deviceType: Invalid value: \"sriov-nic\": DeviceDriver \"example.com-foozer\" does not handle this device type (its deviceTypes: [gpu])"
        );
        assert_eq!(
            class(json!({"deviceType": "vlan"})),
            "spec.deviceType: Not found: \"vlan\": no DeviceDriver lists this device type (known types: [gpu, sriov-nic]); name a known type or create the DeviceDriver first"
        );
        // The prototype's testdata: `=` is not CEL.
        assert_eq!(
            class(json!({"deviceType": "gpu", "constraints": "device.bandwidth = '1G'", "minDeviceCount": 0})),
            "[spec.constraints: Invalid value: \"device.bandwidth = '1G'\": syntax error at column 18: '=' is not an operator: compare with '==', spec.minDeviceCount: Invalid value: 0: must be greater than 0]"
        );
        // Without a cluster, references are not checked.
        let obj = json!({"spec": {"deviceType": "vlan"}});
        assert!(
            validate(Kind::DeviceClass, Operation::Create, Some(&obj), &Unknown)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_claim_names_an_existing_class_within_its_bounds() {
        let claim = |spec: Value| check(Kind::DeviceClaim, json!({"spec": spec}));
        assert_eq!(
            claim(json!({"deviceClass": "example.com-foozer-single"})),
            ""
        );
        assert_eq!(
            claim(json!({"deviceClass": "gpus"})),
            "spec.deviceClass: Not found: \"gpus\": no DeviceClass of that name; create the DeviceClass first or name an existing one"
        );
        assert_eq!(
            claim(json!({"deviceClass": "example.com-foozer-single", "minDeviceCount": 2,
                         "driver": "example.com-barzer"})),
            "[spec.driver: Invalid value: \"example.com-barzer\": must match the DeviceClass's driver \"example.com-foozer\" (or be left out), spec.minDeviceCount: Invalid value: 2: must be at most the DeviceClass's maxDeviceCount (1)]"
        );
        assert_eq!(
            claim(json!({"deviceClass": "example.com-foozer-single", "maxDeviceCount": -1,
                         "constraints": "device.model == 'a' &&"})),
            "[spec.constraints: Invalid value: \"device.model == 'a' &&\": syntax error at column 23: expected a value (device.<attribute>, a quoted string, an integer, true or false) at the end, spec.maxDeviceCount: Invalid value: -1: must be greater than 0]"
        );
        let e = validate(
            Kind::DeviceClaim,
            Operation::Create,
            Some(&json!({"spec": {"deviceClass": 3}})),
            &Facts,
        )
        .unwrap_err();
        assert_eq!(e.error.field, "spec.deviceClass");
    }

    #[test]
    fn pools_have_a_driver_a_count_and_well_formed_attributes() {
        let pool = |spec: Value| check(Kind::DevicePool, json!({"spec": spec}));
        assert_eq!(
            pool(json!({"driver": "example.com-foozer", "count": 2,
                        "attributes": [{"name": "model", "stringValue": "foozer-1000"}]})),
            ""
        );
        assert_eq!(
            pool(json!({"driver": "", "count": -1,
                        "attributes": [{"name": "a", "stringValue": "x", "intValue": 1},
                                       {"name": "a", "intValue": 2}]})),
            "[spec.driver: Required value: the name of the DeviceDriver owning the pool, spec.count: Invalid value: -1: must be greater than or equal to 0, spec.attributes[0]: Invalid value: \"a\": exactly one of stringValue, intValue, quantityValue, semVerValue must be set, found 2, spec.attributes[1].name: Invalid value: \"a\": duplicate attribute name]"
        );
        assert_eq!(
            check(Kind::DeviceDriver, json!({"deviceTypes": ["gpu", ""]})),
            "deviceTypes[1]: Required value: a device type name"
        );
    }
}
