//! `devmgmtproto.k8s.io/v1alpha1`: the k8srm prototype's pool/count model
//! (its `pkg/api` at 840734a), field for field where the prototype's JSON
//! tags are well formed, so its manifests apply unchanged.
//!
//! Differences, all deliberate:
//! - `DeviceClass.spec.deviceType` and `.driver` are served as written in
//!   the prototype's testdata (`deviceType`, `driver`); the Go tags were
//!   malformed, so the prototype itself marshalled them as `DeviceType` and
//!   `Driver` and read any case.
//! - Config references and claim configs are kept as written and not acted
//!   on; DevicePrivilegedClaim, DeviceSetClaim and DeviceClaimTemplate are
//!   not served.
//! - `DeviceClaim.status` adds `nodeName` (the node of the pools it was
//!   allocated from) to the prototype's `allocations` and `podNames`.
//! - `DeviceDriver` keeps the prototype's shape: `deviceTypes` at the top
//!   level, no `spec`; its CRD is written here ([`device_driver_crd`]).

use std::borrow::Cow;

use k8s_openapi::{
    apimachinery::pkg::api::resource::Quantity,
    apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta},
};
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{API_VERSION, GROUP, VERSION};
use crate::api::schema;

/// A device driver and the driver-independent device types it handles
/// (`gpu`, `sriov-nic`). Cluster-scoped; the name is the driver name pools
/// and classes use.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeviceDriver {
    #[serde(default = "api_version")]
    pub api_version: String,
    #[serde(default = "driver_kind")]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Device types this driver handles.
    #[serde(default)]
    pub device_types: Vec<String>,
}

fn api_version() -> String {
    API_VERSION.into()
}

fn driver_kind() -> String {
    "DeviceDriver".into()
}

impl DeviceDriver {
    pub fn new(name: &str, device_types: &[&str]) -> Self {
        DeviceDriver {
            api_version: api_version(),
            kind: driver_kind(),
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            device_types: device_types.iter().map(|t| t.to_string()).collect(),
        }
    }
}

impl kube::Resource for DeviceDriver {
    type DynamicType = ();
    type Scope = kube::core::ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "DeviceDriver".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        GROUP.into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        VERSION.into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "devicedrivers".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The DeviceDriver CRD (the derive needs a `spec`, the prototype has none).
pub fn device_driver_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("devicedrivers.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": "DeviceDriver",
                "listKind": "DeviceDriverList",
                "plural": "devicedrivers",
                "singular": "devicedriver",
            },
            "scope": "Cluster",
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "additionalPrinterColumns": [
                    {"name": "Device Types", "type": "string", "jsonPath": ".deviceTypes"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": {
                    "description": "DeviceDriver names a device driver and the driver-independent device types it handles.",
                    "type": "object",
                    "properties": {
                        "deviceTypes": {
                            "description": "The device types this driver handles, e.g. gpu or sriov-nic.",
                            "type": "array",
                            "items": {"type": "string"},
                        },
                    },
                }},
            }],
        },
    })
}

/// Vendor or admin presets for claims: a device type, optionally one
/// driver, constraints, counts and attributes that must match.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "devmgmtproto.k8s.io",
    version = "v1alpha1",
    kind = "DeviceClass",
    plural = "deviceclasses",
    status = "DeviceClassStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "DeviceClass presets device claims: a device type, optionally a driver, constraints, counts and attributes to match.",
    printcolumn(name = "Device Type", type_ = "string", json_path = ".spec.deviceType"),
    printcolumn(name = "Driver", type_ = "string", json_path = ".spec.driver"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassSpec {
    /// The driver-independent device type (a type some DeviceDriver lists).
    pub device_type: String,
    /// Restricts the class to one driver (a DeviceDriver's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// An expression over `device.<attribute>`, ANDed with the claim's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<String>,
    /// Devices a claim asks for at least (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_device_count: Option<i64>,
    /// Devices a claim may ask for at most (default: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_device_count: Option<i64>,
    /// Attributes whose values must be equal across every pool a claim is
    /// allocated from (merged with the claim's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_attributes: Option<Vec<String>>,
    /// Vendor configuration objects (kept, not acted on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configs: Option<Vec<DeviceClassConfigReference>>,
}

/// A configuration object for a class, in any namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassConfigReference {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// Whether some driver handles the class.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Option<Vec<Condition>>,
    /// The drivers that can satisfy claims of this class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drivers: Option<Vec<String>>,
}

/// A request for devices of a class, with further selection.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "devmgmtproto.k8s.io",
    version = "v1alpha1",
    kind = "DeviceClaim",
    plural = "deviceclaims",
    namespaced,
    status = "DeviceClaimStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "DeviceClaim asks for devices of a DeviceClass.",
    printcolumn(name = "Class", type_ = "string", json_path = ".spec.deviceClass"),
    printcolumn(name = "Node", type_ = "string", json_path = ".status.nodeName"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClaimSpec {
    /// The DeviceClass this claim is of.
    pub device_class: String,
    /// Restricts the claim to one driver; must agree with the class's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// An expression over `device.<attribute>`, ANDed with the class's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<String>,
    /// Devices wanted (default: the class's, else 1); within the class's bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_device_count: Option<i64>,
    /// Devices accepted at most; within the class's bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_device_count: Option<i64>,
    /// Attributes that must be equal across the pools allocated (merged
    /// with the class's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_attributes: Option<Vec<String>>,
    /// Configuration objects in the claim's namespace (kept, not acted on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configs: Option<Vec<DeviceConfigReference>>,
}

/// A configuration object in the claim's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceConfigReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
}

/// Where a claim's devices were allocated.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClaimStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "raw_list")]
    pub class_configs: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "raw_list")]
    pub claim_configs: Option<Vec<Value>>,
    /// One entry per pool devices were taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocations: Option<Vec<DevicePoolAllocation>>,
    /// The node of those pools (batchgate's addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The pods using the devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_names: Option<Vec<String>>,
}

/// Devices taken from one pool.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DevicePoolAllocation {
    #[serde(default)]
    pub device_pool_name: String,
    #[serde(default)]
    pub device_count: i64,
}

/// Identical devices of one driver, usually on one node (more than one
/// pool per node and driver is fine). Written by drivers.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "devmgmtproto.k8s.io",
    version = "v1alpha1",
    kind = "DevicePool",
    plural = "devicepools",
    status = "DevicePoolStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "DevicePool is a collection of identical devices of one driver, usually on one node.",
    printcolumn(name = "Node", type_ = "string", json_path = ".spec.nodeName"),
    printcolumn(name = "Driver", type_ = "string", json_path = ".spec.driver"),
    printcolumn(name = "Count", type_ = "integer", json_path = ".spec.count"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DevicePoolSpec {
    /// The node holding the devices; empty for network-attached pools
    /// (which placement does not use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The DeviceDriver that owns the pool.
    pub driver: String,
    /// Attributes common to every device of the pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<Attribute>,
    /// How many devices the pool has.
    #[serde(rename = "count", default)]
    pub device_count: i64,
}

/// What the driver last reported (not enough to schedule by: allocations
/// it has not seen are missing).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DevicePoolStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_devices: Option<i64>,
}

/// A named, typed attribute value (exactly one value is set).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attribute {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string_value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int_value: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub quantity_value: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sem_ver_value: Option<String>,
}

impl Attribute {
    pub fn string(name: &str, value: &str) -> Self {
        Attribute {
            name: name.into(),
            string_value: Some(value.into()),
            ..Attribute::default()
        }
    }

    pub fn sem_ver(name: &str, value: &str) -> Self {
        Attribute {
            name: name.into(),
            sem_ver_value: Some(value.into()),
            ..Attribute::default()
        }
    }

    /// The prototype's `EqualValue`: the first value type set on both sides
    /// decides.
    pub fn equal_value(&self, other: &Attribute) -> bool {
        if let (Some(a), Some(b)) = (&self.string_value, &other.string_value) {
            if a == b {
                return true;
            }
        }
        if let (Some(a), Some(b)) = (self.int_value, other.int_value) {
            if a == b {
                return true;
            }
        }
        if let (Some(a), Some(b)) = (&self.quantity_value, &other.quantity_value) {
            let parse = |q: &Quantity| crate::vocabulary::quantity::Quantity::parse(&q.0);
            if let (Ok(a), Ok(b)) = (parse(a), parse(b)) {
                if a.cmp_value(&b).is_eq() {
                    return true;
                }
            }
        }
        if let (Some(a), Some(b)) = (&self.sem_ver_value, &other.sem_ver_value) {
            if a == b {
                return true;
            }
        }
        false
    }
}

fn raw_list(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    })
}
