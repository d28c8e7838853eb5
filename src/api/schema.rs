//! Schema pieces the derive cannot express on its own: Kubernetes quantity
//! and condition shapes, and the name patterns Kueue puts on references.
//!
//! They are used through `#[schemars(schema_with = "...")]` on fields, so a
//! field's Rust type stays the plain k8s-openapi type the shell works with.

use schemars::{json_schema, Schema, SchemaGenerator};

/// A DNS-1123 subdomain (object names; Kueue's references to queues, flavors,
/// cohorts, topologies).
pub const DNS1123_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// A DNS-1123 label (PodSet names).
pub const DNS1123_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// What `resource.Quantity` accepts when given as a string.
pub const QUANTITY: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// A quantity: a number or a string such as `500m` or `36Gi`. The
/// `anyOf: [integer, string]` the apiserver expects next to
/// `x-kubernetes-int-or-string` is added when the CRD is finished (the
/// derive's structural rewrite would strip it here).
pub fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "pattern": QUANTITY,
        "x-kubernetes-int-or-string": true,
    })
}

/// `corev1.ResourceList`: resource name to quantity.
pub fn resource_list(g: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": quantity(g),
    })
}

/// A name of a ResourceFlavor, ClusterQueue, LocalQueue, Cohort or Topology.
pub fn object_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "maxLength": 253,
        "pattern": DNS1123_SUBDOMAIN,
    })
}

/// Resource name to ResourceFlavor name.
pub fn flavor_by_resource(g: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": object_name(g),
    })
}

/// Marks a `metav1.LabelSelector`'s lists atomic, as Kubernetes declares
/// them (k8s-openapi's schema does not carry list types).
pub fn atomic_label_selector(s: &mut Schema) {
    if let Some(exprs) = s
        .get_mut("properties")
        .and_then(|p| p.get_mut("matchExpressions"))
        .and_then(|m| m.as_object_mut())
    {
        exprs.insert("x-kubernetes-list-type".into(), "atomic".into());
        if let Some(values) = exprs
            .get_mut("items")
            .and_then(|i| i.get_mut("properties"))
            .and_then(|p| p.get_mut("values"))
            .and_then(|v| v.as_object_mut())
        {
            values.insert("x-kubernetes-list-type".into(), "atomic".into());
        }
    }
}

/// `status.conditions`: `metav1.Condition` with the validation Kubernetes
/// declares for it, a map keyed by `type`, at most 16 entries.
pub fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "maxItems": 16,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "description": "Condition contains details for one aspect of the current state of this API Resource.",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {
                    "type": "string",
                    "format": "date-time",
                    "description": "lastTransitionTime is the last time the condition transitioned from one status to another.",
                },
                "message": {
                    "type": "string",
                    "maxLength": 32768,
                    "description": "message is a human readable message indicating details about the transition. This may be an empty string.",
                },
                "observedGeneration": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "description": "observedGeneration is the .metadata.generation that the condition was set based upon.",
                },
                "reason": {
                    "type": "string",
                    "maxLength": 1024,
                    "minLength": 1,
                    "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                    "description": "reason is a programmatic identifier for the condition's last transition, in CamelCase.",
                },
                "status": {
                    "type": "string",
                    "enum": ["True", "False", "Unknown"],
                    "description": "status of the condition, one of True, False, Unknown.",
                },
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                    "description": "type of condition in CamelCase or in foo.example.com/CamelCase.",
                },
            },
        },
    })
}
