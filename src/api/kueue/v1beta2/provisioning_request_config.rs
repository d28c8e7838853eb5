//! ProvisioningRequestConfig: the parameters of a ProvisioningRequest
//! admission check (`controllerName: kueue.x-k8s.io/provisioning-request`):
//! which provisioning class the cluster autoscaler is asked for, with what
//! parameters, for which resources, and how failed requests are retried.
//! An AdmissionCheck points at one through `spec.parameters`.
//! Cluster-scoped, short name `prc`, no status.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// `spec.parameters.kind` of an AdmissionCheck that uses one.
pub const PROVISIONING_REQUEST_CONFIG_KIND: &str = "ProvisioningRequestConfig";

/// `spec.podSetMergePolicy` values.
pub mod pod_set_merge_policy {
    pub const IDENTICAL_POD_TEMPLATES: &str = "IdenticalPodTemplates";
    pub const IDENTICAL_WORKLOAD_SCHEDULING_REQUIREMENTS: &str =
        "IdenticalWorkloadSchedulingRequirements";
}

/// The desired state of a ProvisioningRequestConfig.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ProvisioningRequestConfig",
    plural = "provisioningrequestconfigs",
    shortname = "prc",
    derive = "Default",
    derive = "PartialEq",
    doc = "ProvisioningRequestConfig is the Schema for the provisioningrequestconfig API"
)]
#[serde(rename_all = "camelCase", remote = "Self")]
pub struct ProvisioningRequestConfigSpec {
    /// The provisioning class asked for (the ProvisioningRequest's
    /// `spec.provisioningClassName`).
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub provisioning_class_name: String,

    /// Other parameters the class may need, copied to the request. At most
    /// 100, each value at most 255 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "parameters")]
    pub parameters: Option<BTreeMap<String, String>>,

    /// The resources the autoscaler manages: only pod sets requesting one
    /// of them are in the request (none: the check is Ready at once).
    /// Empty: every resource. At most 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100), extend("x-kubernetes-list-type" = "set"))]
    pub managed_resources: Option<Vec<String>>,

    /// How failed requests are retried (default 3 retries, backoff 60 s
    /// doubling up to 1800 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}))]
    pub retry_strategy: Option<ProvisioningRequestRetryStrategy>,

    /// Node selector entries given to the admitted pods, valued from the
    /// request's `status.provisioningClassDetails`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_updates: Option<ProvisioningRequestPodSetUpdates>,

    /// Which pod sets are merged into one request pod set:
    /// IdenticalPodTemplates or IdenticalWorkloadSchedulingRequirements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"]))]
    pub pod_set_merge_policy: Option<String>,
}
super::spec_may_be_absent!(ProvisioningRequestConfigSpec);

fn parameters(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": 100,
        "additionalProperties": {"type": "string", "maxLength": 255},
    })
}

/// `spec.retryStrategy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestRetryStrategy {
    /// Retries before the check is Rejected (0: no retry). Default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3))]
    pub backoff_limit_count: Option<i32>,
    /// The backoff's base, doubled on each retry. Default 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 60))]
    pub backoff_base_seconds: Option<i32>,
    /// The longest backoff. Default 1800.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 1800))]
    pub backoff_max_seconds: Option<i32>,
}

/// `spec.podSetUpdates`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestPodSetUpdates {
    /// At most 8, one per key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key"])
    )]
    pub node_selector: Option<Vec<ProvisioningRequestPodSetUpdatesNodeSelector>>,
}

/// `spec.podSetUpdates.nodeSelector[]`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestPodSetUpdatesNodeSelector {
    /// The node selector key.
    #[schemars(
        length(min = 1, max = 317),
        regex(
            pattern = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
        )
    )]
    pub key: String,
    /// The key of the request's `status.provisioningClassDetails` whose
    /// value is used.
    #[schemars(length(min = 1, max = 32768))]
    pub value_from_provisioning_class_detail: String,
}
