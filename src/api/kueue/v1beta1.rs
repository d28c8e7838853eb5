//! `kueue.x-k8s.io/v1beta1`: the deprecated version Kueue v0.19.2 still
//! serves, converted to and from the storage version `v1beta2` by the
//! `/convert` webhook ([`super::conversion`]).
//!
//! The two versions share every field but the few Kueue renamed, moved or
//! dropped, so a kind's v1beta1 schema is its v1beta2 schema (generated
//! from the types in [`super::v1beta2`]) with those differences applied;
//! the fields only v1beta1 has are the types below. The shared fields can
//! then never drift apart.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::Taint,
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Time},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::api::schema;

/// The version name.
pub const VERSION: &str = "v1beta1";

/// Upstream's `deprecationWarning`, shown by kubectl on every v1beta1 call.
pub const DEPRECATION_WARNING: &str = "This version is deprecated. Use v1beta2 instead.";

/// The v1beta1 fields of a ClusterQueue's spec that v1beta2 renamed or
/// moved.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueSpecFields {
    /// cohort that this ClusterQueue belongs to (v1beta2: `cohortName`).
    /// CQs that belong to the same cohort can borrow unused resources from
    /// each other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_name")]
    pub cohort: Option<String>,

    /// admissionChecks lists the AdmissionChecks required by this
    /// ClusterQueue (v1beta2: `admissionChecksStrategy.admissionChecks[].name`).
    /// Cannot be used along with AdmissionCheckStrategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(inner(length(max = 316)))]
    pub admission_checks: Option<Vec<String>>,
}

/// The v1beta1 fields of a ClusterQueue's status that v1beta2 dropped.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueStatusFields {
    /// pendingWorkloadsStatus contains the information exposed about the
    /// current status of the pending workloads in the cluster queue.
    ///
    /// Deprecated: no longer effective since Kueue v0.14.0; use the
    /// visibility API. Not in v1beta2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_workloads_status: Option<ClusterQueuePendingWorkloadsStatus>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueuePendingWorkloadsStatus {
    /// The head of the list of pending workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub cluster_queue_pending_workload: Option<Vec<ClusterQueuePendingWorkload>>,

    /// When the list was last updated.
    pub last_change_time: Time,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueuePendingWorkload {
    /// The Workload's name.
    pub name: String,
    /// The Workload's namespace.
    pub namespace: String,
}

/// v1beta1's `status.fairSharing` of ClusterQueues and Cohorts also has
/// this field (v1beta2 dropped it).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionFairSharingStatus {
    /// Resource usage aggregated over time with decay applied.
    #[schemars(schema_with = "schema::resource_list")]
    pub consumed_resources: BTreeMap<String, Quantity>,

    /// When the consumed resources were last updated.
    pub last_update: Time,
}

/// The v1beta1 fields of a LocalQueue's status that v1beta2 dropped.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueStatusFields {
    /// flavors lists all currently available ResourceFlavors in specified
    /// ClusterQueue.
    ///
    /// Deprecated: Flavors is deprecated and marked for removal in v1beta2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors: Option<Vec<LocalQueueFlavorStatus>>,
}

/// Deprecated: LocalQueueFlavorStatus is deprecated and marked for removal
/// in v1beta2.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueFlavorStatus {
    /// The flavor's name.
    #[schemars(schema_with = "schema::object_name")]
    pub name: String,

    /// The resources of the flavor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "set"))]
    pub resources: Option<Vec<String>>,

    /// The flavor's node labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 8, "x-kubernetes-map-type" = "atomic"))]
    pub node_labels: Option<BTreeMap<String, String>>,

    /// The flavor's node taints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "atomic"))]
    pub node_taints: Option<Vec<Taint>>,

    /// The flavor's topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyInfo>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologyInfo {
    /// The Topology's name.
    #[schemars(schema_with = "schema::object_name")]
    pub name: String,
    /// The Topology's levels.
    #[schemars(length(min = 1, max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub levels: Vec<String>,
}

/// The v1beta1 fields of a Workload's spec that v1beta2 replaced with
/// `priorityClassRef`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpecFields {
    /// priorityClassName is the name of the PriorityClass the Workload is
    /// associated with; priorityClassSource says which kind it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_name")]
    pub priority_class_name: Option<String>,

    /// priorityClassSource determines whether the priorityClass field
    /// refers to a pod PriorityClass (`scheduling.k8s.io/priorityclass`) or
    /// a WorkloadPriorityClass (`kueue.x-k8s.io/workloadpriorityclass`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend(
        "enum" = ["kueue.x-k8s.io/workloadpriorityclass", "scheduling.k8s.io/priorityclass", ""],
        "default" = ""
    ))]
    pub priority_class_source: Option<String>,
}

/// v1beta1's topology assignment: every domain listed (v1beta2 packs them
/// into slices).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologyAssignment {
    /// The topology levels, from the highest to the lowest.
    #[schemars(length(min = 1, max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub levels: Vec<String>,

    /// The assignment split by domains of the lowest level.
    pub domains: Vec<TopologyDomainAssignment>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologyDomainAssignment {
    /// The node label values of the domain, one per level.
    #[schemars(length(min = 1, max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub values: Vec<String>,

    /// The number of Pods in the domain.
    #[schemars(range(min = 1))]
    pub count: i32,
}

/// v1beta1's MultiKueueCluster spec: the kubeconfig at the top of the
/// spec (v1beta2 moved it into `clusterSource`), and the ClusterProfile
/// reference kept only so a v1beta2 object read as v1beta1 loses nothing.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueClusterSpec {
    /// kubeConfig is information on how to connect to the cluster.
    pub kube_config: KubeConfig,

    /// clusterProfileRef is the reference to the ClusterProfile object
    /// used to connect to the cluster. Only there to keep a v1beta2
    /// object's reference; it has no effect in v1beta1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_profile_ref: Option<super::v1beta2::ClusterProfileReference>,
}

/// v1beta1's kubeconfig reference: both fields required, no length limits.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfig {
    /// With locationType Secret, the name of a Secret in the manager's
    /// namespace (key `kubeconfig`); with Path, a file path.
    pub location: String,
    /// Secret (the default) or Path.
    #[schemars(extend("enum" = ["Secret", "Path"], "default" = "Secret"))]
    pub location_type: String,
}

/// The schema of `T`, generated as the CRD derive generates it.
fn schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube::core::schema::StructuralSchemaRewriter)
        .with_transform(kube::core::schema::OptionalEnum)
        .with_transform(kube::core::schema::OptionalIntOrString)
        .into_generator();
    let mut v = serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("title");
    }
    v
}

fn property_of<T: JsonSchema>(name: &str) -> Value {
    schema_of::<T>()["properties"][name].clone()
}

/// v1beta1's rules on a Workload's spec.
const WORKLOAD_SPEC_RULES: &str = r#"[{
    "rule": "has(self.priorityClassName) ? has(self.priority) : true",
    "message": "priority should not be nil when priorityClassName is set"
}]"#;

/// v1beta1's priority rules on a Workload (in place of v1beta2's
/// `priorityClassRef` ones).
const WORKLOAD_PRIORITY_RULES: &str = r#"[{
    "rule": "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource)) ? (oldSelf.spec.priorityClassSource == self.spec.priorityClassSource) : true",
    "message": "priorityClassSource is immutable while workload quota reserved"
}, {
    "rule": "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource) && (self.spec.priorityClassSource != 'kueue.x-k8s.io/workloadpriorityclass') && has(oldSelf.spec.priorityClassName) && has(self.spec.priorityClassName)) ? (oldSelf.spec.priorityClassName == self.spec.priorityClassName) : true",
    "message": "priorityClassName is immutable while workload quota reserved and priorityClassSource is not equal to kueue.x-k8s.io/workloadpriorityclass"
}]"#;

/// The CRD `versions[]` entry of `kind` in v1beta1, from its finished
/// v1beta2 entry.
pub fn version(kind: &str, v1beta2: &Value) -> Value {
    let mut v = v1beta2.clone();
    v["name"] = json!(VERSION);
    v["served"] = json!(true);
    v["storage"] = json!(false);
    v["deprecated"] = json!(true);
    v["deprecationWarning"] = json!(DEPRECATION_WARNING);
    if let Some(o) = v.as_object_mut() {
        o.remove("selectableFields");
    }
    let root = &mut v["schema"]["openAPIV3Schema"];
    for (k, path, keywords) in V1BETA2_ONLY_LIMITS {
        if *k == kind {
            if let Some(Value::Object(node)) = crate::api::crd::schema_at(root, path) {
                for kw in *keywords {
                    node.remove(*kw);
                }
            }
        }
    }
    match kind {
        "AdmissionCheck" => admission_check(root),
        "ClusterQueue" => cluster_queue(root),
        "Cohort" => fair_sharing_status(root),
        "LocalQueue" => local_queue(root),
        "MultiKueueCluster" => multikueue_cluster(root),
        "MultiKueueConfig" => multikueue_config(root),
        "Workload" => workload(root),
        _ => {}
    }
    if kind == "MultiKueueConfig" {
        // Upstream marks v1beta1 deprecated on every kind but this one.
        if let Some(o) = v.as_object_mut() {
            o.remove("deprecated");
            o.remove("deprecationWarning");
        }
    }
    if kind == "ClusterQueue" {
        for col in v["additionalPrinterColumns"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            if col["jsonPath"] == ".spec.cohortName" {
                col["jsonPath"] = json!(".spec.cohort");
            }
        }
    }
    v
}

/// Limits and list markers v1beta2 added to fields v1beta1 shares: Kueue
/// v0.19.2's v1beta1 schema has none of them, so neither does batchgate's
/// (an object valid for v0.19.2's v1beta1 is valid here).
const V1BETA2_ONLY_LIMITS: &[(&str, &str, &[&str])] = &[
    (
        "ProvisioningRequestConfig",
        "spec.provisioningClassName",
        &["minLength"],
    ),
    (
        "ProvisioningRequestConfig",
        "spec.podSetUpdates.nodeSelector",
        &["x-kubernetes-list-type", "x-kubernetes-list-map-keys"],
    ),
    (
        "AdmissionCheck",
        "spec.controllerName",
        &["maxLength", "minLength"],
    ),
    ("AdmissionCheck", "spec.parameters.apiGroup", &["minLength"]),
    ("AdmissionCheck", "spec.parameters.kind", &["minLength"]),
    ("AdmissionCheck", "spec.parameters.name", &["minLength"]),
    ("AdmissionCheck", "status.conditions", &["maxItems"]),
    (
        "ClusterQueue",
        "spec.admissionChecksStrategy",
        &["required"],
    ),
    (
        "ClusterQueue",
        "spec.admissionChecksStrategy.admissionChecks",
        &[
            "maxItems",
            "minItems",
            "x-kubernetes-list-map-keys",
            "x-kubernetes-list-type",
        ],
    ),
    (
        "ClusterQueue",
        "spec.admissionChecksStrategy.admissionChecks[].name",
        &["minLength"],
    ),
    (
        "ClusterQueue",
        "spec.admissionChecksStrategy.admissionChecks[].onFlavors",
        &["maxItems", "x-kubernetes-list-type"],
    ),
    (
        "ClusterQueue",
        "spec.admissionScope.admissionMode",
        &["enum"],
    ),
    (
        "ClusterQueue",
        "spec.resourceGroups[].coveredResources",
        &["x-kubernetes-list-type"],
    ),
    ("ClusterQueue", "status.conditions", &["maxItems"]),
    (
        "Cohort",
        "spec.resourceGroups[].coveredResources",
        &["x-kubernetes-list-type"],
    ),
    ("LocalQueue", "status.conditions", &["maxItems"]),
    ("MultiKueueCluster", "status.conditions", &["maxItems"]),
    (
        "MultiKueueConfig",
        "spec.clusters",
        &["x-kubernetes-validations"],
    ),
    ("MultiKueueConfig", "spec.clusters[]", &["maxLength"]),
    ("WorkloadPriorityClass", "description", &["maxLength"]),
    (
        "Workload",
        "spec.podSets[].topologyRequest.podIndexLabel",
        &["maxLength"],
    ),
    (
        "Workload",
        "spec.podSets[].topologyRequest.podSetGroupName",
        &["maxLength"],
    ),
    (
        "Workload",
        "spec.podSets[].topologyRequest.podSetSliceRequiredTopology",
        &["maxLength"],
    ),
    (
        "Workload",
        "spec.podSets[].topologyRequest.preferred",
        &["maxLength"],
    ),
    (
        "Workload",
        "spec.podSets[].topologyRequest.required",
        &["maxLength"],
    ),
    (
        "Workload",
        "spec.podSets[].topologyRequest.subGroupIndexLabel",
        &["maxLength"],
    ),
    (
        "Workload",
        "status.admission.podSetAssignments[].delayedTopologyRequest",
        &["enum", "maxLength"],
    ),
    ("Workload", "status.admissionChecks[].name", &["minLength"]),
    (
        "Workload",
        "status.admissionChecks[].podSetUpdates[].tolerations",
        &["x-kubernetes-list-type"],
    ),
    ("Workload", "status.clusterName", &["maxLength"]),
    ("Workload", "status.conditions", &["maxItems"]),
    ("Workload", "status.nominatedClusterNames[]", &["maxLength"]),
    (
        "Workload",
        "status.schedulingStats.evictions",
        &["maxItems"],
    ),
    (
        "Workload",
        "status.unhealthyNodes",
        &[
            "maxItems",
            "x-kubernetes-list-map-keys",
            "x-kubernetes-list-type",
        ],
    ),
    ("Workload", "status.unhealthyNodes[].name", &["maxLength"]),
];

fn props<'a>(root: &'a mut Value, path: &[&str]) -> Option<&'a mut serde_json::Map<String, Value>> {
    let mut at = root;
    for p in path {
        at = at.get_mut("properties")?.get_mut(*p)?;
    }
    at.get_mut("properties")?.as_object_mut()
}

fn rename(m: &mut serde_json::Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = m.remove(from) {
        m.insert(to.into(), v);
    }
}

/// v1beta1 AdmissionChecks still carry the deprecated
/// `spec.retryDelayMinutes` (default 15), dropped in v1beta2.
fn admission_check(root: &mut Value) {
    if let Some(spec) = props(root, &["spec"]) {
        spec.insert(
            "retryDelayMinutes".into(),
            json!({
                "type": "integer",
                "format": "int64",
                "default": 15,
                "description": "How long to keep the workload suspended after a failed check. Deprecated since v0.8; removed in v1beta2.",
            }),
        );
    }
}

fn fair_sharing_status(root: &mut Value) {
    if let Some(fs) = props(root, &["status", "fairSharing"]) {
        fs.insert(
            "admissionFairSharingStatus".into(),
            schema_of::<AdmissionFairSharingStatus>(),
        );
    }
}

fn cluster_queue(root: &mut Value) {
    if let Some(spec) = props(root, &["spec"]) {
        spec.remove("cohortName");
        spec.remove("concurrentAdmissionPolicy");
        spec.insert(
            "cohort".into(),
            property_of::<ClusterQueueSpecFields>("cohort"),
        );
        spec.insert(
            "admissionChecks".into(),
            property_of::<ClusterQueueSpecFields>("admissionChecks"),
        );
    }
    if let Some(ff) = props(root, &["spec", "flavorFungibility"]) {
        for (field, old) in [("whenCanBorrow", "Borrow"), ("whenCanPreempt", "Preempt")] {
            if let Some(e) = ff
                .get_mut(field)
                .and_then(|f| f.get_mut("enum"))
                .and_then(Value::as_array_mut)
            {
                e.push(json!(old));
            }
        }
    }
    for rule in root["properties"]["spec"]["x-kubernetes-validations"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if let Some(r) = rule["rule"].as_str() {
            rule["rule"] = json!(r.replace("self.cohortName", "self.cohort"));
        }
    }
    if let Some(status) = props(root, &["status"]) {
        status.insert(
            "pendingWorkloadsStatus".into(),
            property_of::<ClusterQueueStatusFields>("pendingWorkloadsStatus"),
        );
    }
    fair_sharing_status(root);
}

/// v1beta1 MultiKueueClusters name their kubeconfig at the top of the
/// spec; v1beta2's `clusterSource` is not there.
fn multikueue_cluster(root: &mut Value) {
    if let Some(spec) = root.pointer_mut("/properties/spec") {
        *spec = schema_of::<MultiKueueClusterSpec>();
    }
}

/// v1beta1 MultiKueueConfigs have no `quotaManagement`, and their clusters
/// are a set (v1beta2: an ordered list whose uniqueness a rule checks).
fn multikueue_config(root: &mut Value) {
    if let Some(spec) = props(root, &["spec"]) {
        spec.remove("quotaManagement");
    }
    if let Some(clusters) = root.pointer_mut("/properties/spec/properties/clusters") {
        clusters["x-kubernetes-list-type"] = json!("set");
    }
}

fn local_queue(root: &mut Value) {
    if let Some(status) = props(root, &["status"]) {
        rename(status, "flavorsUsage", "flavorUsage");
        status.insert(
            "flavors".into(),
            property_of::<LocalQueueStatusFields>("flavors"),
        );
    }
}

fn workload(root: &mut Value) {
    let rules = |s: &str| serde_json::from_str::<Value>(s).unwrap_or_default();
    if let Some(spec) = props(root, &["spec"]) {
        spec.remove("priorityClassRef");
        spec.remove("preemptionGates");
        for f in ["priorityClassName", "priorityClassSource"] {
            spec.insert(f.into(), property_of::<WorkloadSpecFields>(f));
        }
    }
    root["properties"]["spec"]["x-kubernetes-validations"] = rules(WORKLOAD_SPEC_RULES);
    // v1beta1 requires what v1beta2 defaults or lets be empty.
    for (at, required) in [
        ("/properties/spec", &["podSets"][..]),
        (
            "/properties/spec/properties/podSets/items",
            &["count", "template"],
        ),
        (
            "/properties/status/properties/admission",
            &["clusterQueue", "podSetAssignments"],
        ),
        (
            "/properties/status/properties/admission/properties/podSetAssignments/items",
            &["name"],
        ),
    ] {
        if let Some(s) = root.pointer_mut(at) {
            s["required"] = json!(required);
        }
    }
    if let Some(tr) = root
        .pointer_mut(
            "/properties/spec/properties/podSets/items/properties/topologyRequest/properties",
        )
        .and_then(Value::as_object_mut)
    {
        tr.remove("podsetSliceRequiredTopologyConstraints");
    }
    if let Some(status) = props(root, &["status"]) {
        rename(
            status,
            "accumulatedPastExecutionTimeSeconds",
            "accumulatedPastExexcutionTimeSeconds",
        );
        status.remove("preemptionGates");
    }
    if let Some(psa) = root
        .pointer_mut(
            "/properties/status/properties/admission/properties/podSetAssignments/items/properties",
        )
        .and_then(Value::as_object_mut)
    {
        psa.insert(
            "topologyAssignment".into(),
            schema_of::<TopologyAssignment>(),
        );
    }
    // The root rules: v1beta1's priority rules in place of v1beta2's.
    if let Some(list) = root["x-kubernetes-validations"].as_array_mut() {
        let at = list.iter().position(|r| {
            r["rule"]
                .as_str()
                .is_some_and(|s| s.contains("priorityClassRef"))
        });
        list.retain(|r| {
            !r["rule"]
                .as_str()
                .is_some_and(|s| s.contains("priorityClassRef"))
        });
        if let (Some(at), Value::Array(v1)) = (at, rules(WORKLOAD_PRIORITY_RULES)) {
            for (i, r) in v1.into_iter().enumerate() {
                list.insert(at + i, r);
            }
        }
    }
}
