//! AdmissionCheck: a gate a Workload must pass, after its quota is
//! reserved, before it is admitted. A ClusterQueue lists the checks its
//! Workloads need (`spec.admissionChecksStrategy`); the controller named in
//! `spec.controllerName` sets each Workload's state for the check and the
//! check's own `Active` condition. Cluster-scoped, short name `ac`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;

/// `spec.controllerName` of Kueue's ProvisioningRequest admission check.
pub const PROVISIONING_REQUEST_CONTROLLER: &str = "kueue.x-k8s.io/provisioning-request";

/// `status.conditions[].type`: the check's controller runs and its
/// parameters are valid.
pub const ADMISSION_CHECK_ACTIVE: &str = "Active";

/// The desired state of an AdmissionCheck.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "AdmissionCheck",
    plural = "admissionchecks",
    shortname = "ac",
    status = "AdmissionCheckStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "AdmissionCheck is the Schema for the admissionchecks API"
)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckSpec {
    /// The controller that processes this check (not necessarily a Pod or
    /// Deployment name). Cannot be empty; cannot be changed.
    #[schemars(
        length(min = 1, max = 253),
        extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "field is immutable"}])
    )]
    pub controller_name: String,

    /// A configuration object with more parameters for the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<AdmissionCheckParametersReference>,
}

/// `spec.parameters`: the object holding the check's parameters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckParametersReference {
    /// The object's API group.
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub api_group: String,
    /// The object's kind.
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub kind: String,
    /// The object's name.
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub name: String,
}

/// The observed state of an AdmissionCheck.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckStatus {
    /// Latest observations; `Active` is set by the check's controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Option<Vec<Condition>>,
}

impl AdmissionCheck {
    /// Whether its `Active` condition is `True` (a ClusterQueue that uses
    /// it admits nothing otherwise).
    pub fn is_active(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == ADMISSION_CHECK_ACTIVE && c.status == "True")
    }
}
