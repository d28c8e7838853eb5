//! The CustomResourceDefinitions batchgate installs, generated from the
//! types in [`crate::api`] and finished here where the derive falls short:
//!
//! - no `nullable`: upstream's schemas have none, and with it the apiserver
//!   would keep explicit `null`s that Kueue's CEL rules then see through
//!   `has()`; enum lists lose the `null` the derive adds for `Option`s;
//! - int-or-string fields get `anyOf: [integer, string]` (the derive's
//!   structural rewrite cannot carry it), and quantities inside the pod
//!   template get the quantity pattern, as controller-gen emits them;
//! - a Workload's `podSets[].template.metadata` (and an ephemeral volume's
//!   claim template metadata) keeps only what Kueue keeps (annotations,
//!   finalizers, labels, name, namespace), as controller-gen does with
//!   `generateEmbeddedObjectMeta`; references by name leave `name`
//!   optional; the Kubernetes 1.35 pod fields are added;
//! - rules on the root object (Workload), which the derive cannot attach;
//! - the root does not require `spec` (upstream does not).
//!
//! Output is deterministic: keys are sorted, the kinds come in a fixed
//! order.

use kube::CustomResourceExt;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::api::{
    appwrapper::v1beta2::AppWrapper,
    kueue::{
        self,
        v1beta2::{
            workload_root_validation_rules, AdmissionCheck, ClusterQueue, Cohort, LocalQueue,
            MultiKueueCluster, MultiKueueConfig, ProvisioningRequestConfig, ResourceFlavor,
            Topology, Workload, WorkloadPriorityClass,
        },
    },
    prescale::PreScaledCronJob,
    schema::QUANTITY,
};

/// One generated CRD and the file it is kept in under `manifests/crds/`.
#[derive(Debug, Clone)]
pub struct Generated {
    /// `<group>_<plural>.yaml`, as upstream names its CRD files.
    pub file_name: String,
    pub crd: Value,
}

/// Where the apiserver sends the ConversionReviews of Kueue's kinds
/// (`spec.conversion.webhook`).
#[derive(Debug, Clone)]
pub struct Conversion {
    /// `spec.conversion.webhook.clientConfig`: a `service` or a `url`, with
    /// `caBundle` when known (batchgate's own certificate management fills
    /// it at run time; cert-manager's CA injector with `inject_ca_from`).
    pub client_config: Value,
    /// `cert-manager.io/inject-ca-from: <namespace>/<certificate>`.
    pub inject_ca_from: Option<String>,
}

impl Default for Conversion {
    /// batchgate's Service in batchgate-system, path `/convert`.
    fn default() -> Self {
        Conversion {
            client_config: json!({"service": {
                "namespace": crate::api::DEFAULT_NAMESPACE,
                "name": "batchgate-webhook",
                "path": "/convert",
                "port": 443,
            }}),
            inject_ca_from: None,
        }
    }
}

/// The Kueue kinds whose versions differ, converted by the webhook (as
/// upstream registers it). Upstream registers none for the others
/// (ResourceFlavor, Topology, WorkloadPriorityClass, AdmissionCheck,
/// ProvisioningRequestConfig, MultiKueueConfig): the apiserver converts
/// them itself (strategy `None`).
pub const CONVERTED_KINDS: [&str; 5] = [
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "MultiKueueCluster",
    "Workload",
];

/// The names of their CRDs (whose conversion `caBundle` batchgate keeps
/// current when it manages its certificates).
pub const CONVERTED_CRDS: [&str; 5] = [
    "clusterqueues.kueue.x-k8s.io",
    "cohorts.kueue.x-k8s.io",
    "localqueues.kueue.x-k8s.io",
    "multikueueclusters.kueue.x-k8s.io",
    "workloads.kueue.x-k8s.io",
];

/// Kueue's kinds, in the order they are printed, with conversion through
/// batchgate's Service.
pub fn kueue() -> Vec<Generated> {
    kueue_with(&Conversion::default())
}

/// Kueue's kinds: v1beta1 (served, deprecated) and v1beta2 (served,
/// stored), with `conv` registered for the kinds that need a webhook.
pub fn kueue_with(conv: &Conversion) -> Vec<Generated> {
    let mut workload = finish(Workload::crd());
    let root = &mut workload.crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    root["x-kubernetes-validations"] = workload_root_validation_rules();
    finish_pod_template(
        &mut root["properties"]["spec"]["properties"]["podSets"]["items"]["properties"]["template"],
    );
    // `kubectl get workloads --field-selector status.admission.clusterQueue=…`.
    workload.crd["spec"]["versions"][0]["selectableFields"] =
        json!([{"jsonPath": ".status.admission.clusterQueue"}]);
    let mut priority_class = finish(WorkloadPriorityClass::crd());
    // Upstream declares the status subresource on a kind without status,
    // which controller-gen writes as an empty `subresources`.
    priority_class.crd["spec"]["versions"][0]["subresources"] = json!({});
    let mut crds = vec![
        finish(AdmissionCheck::crd()),
        finish(ClusterQueue::crd()),
        finish(Cohort::crd()),
        finish(LocalQueue::crd()),
        finish(MultiKueueCluster::crd()),
        finish(MultiKueueConfig::crd()),
        finish(ProvisioningRequestConfig::crd()),
        finish(ResourceFlavor::crd()),
        finish(Topology::crd()),
        priority_class,
        workload,
    ];
    for g in &mut crds {
        serve_v1beta1(&mut g.crd, conv);
    }
    crds
}

/// Adds the v1beta1 version before v1beta2 (upstream's order) and, for
/// the kinds that need it, the conversion webhook.
fn serve_v1beta1(crd: &mut Value, conv: &Conversion) {
    let kind = crd["spec"]["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let Some(v1beta2) = crd["spec"]["versions"].get(0).cloned() else {
        return;
    };
    let mut v1beta1 = kueue::v1beta1::version(&kind, &v1beta2);
    finish_schema(&mut v1beta1["schema"]["openAPIV3Schema"]);
    crd["spec"]["versions"] = json!([v1beta1, v1beta2]);
    if CONVERTED_KINDS.contains(&kind.as_str()) {
        crd["spec"]["conversion"] = json!({
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": conv.client_config,
                "conversionReviewVersions": ["v1"],
            },
        });
        if let Some(src) = &conv.inject_ca_from {
            crd["metadata"]["annotations"] = json!({"cert-manager.io/inject-ca-from": src});
        }
    }
}

/// Every CRD batchgate serves.
pub fn all() -> Vec<Generated> {
    all_with(&Conversion::default())
}

/// Every CRD batchgate serves, Kueue's converted through `conv`.
pub fn all_with(conv: &Conversion) -> Vec<Generated> {
    let mut all = kueue_with(conv);
    all.push(finish(AppWrapper::crd()));
    all.extend(devices());
    all.push(finish(PreScaledCronJob::crd()));
    all
}

/// The device kinds (devmgmtproto.k8s.io/v1alpha1).
pub fn devices() -> Vec<Generated> {
    use crate::api::devices::v1alpha1::{device_driver_crd, DeviceClaim, DeviceClass, DevicePool};
    let mut crds = vec![
        finish(device_driver_crd()),
        finish(DeviceClass::crd()),
        finish(DeviceClaim::crd()),
        finish(DevicePool::crd()),
    ];
    // `*.k8s.io` is a protected group: the apiserver refuses its CRDs
    // without this annotation; a value starting with "unapproved" is
    // accepted (and reported in the CRD's KubernetesAPIApprovalPolicyConformant
    // condition), as for any prototype API in a k8s.io group.
    for g in &mut crds {
        g.crd["metadata"]["annotations"] = json!({
            "api-approved.kubernetes.io": "unapproved, prototype API of the k8srm-prototype (devmgmtproto.k8s.io), served by batchgate",
        });
    }
    crds
}

/// A CRD as one YAML document (starting with `---`).
pub fn to_yaml(crd: &Value) -> String {
    format!(
        "---\n{}",
        serde_yaml::to_string(crd).expect("a JSON value always renders as YAML")
    )
}

fn finish<T: Serialize>(crd: T) -> Generated {
    let mut crd = serde_json::to_value(crd).expect("a CRD always serializes");
    let file_name = format!(
        "{}_{}.yaml",
        crd["spec"]["group"].as_str().unwrap_or_default(),
        crd["spec"]["names"]["plural"].as_str().unwrap_or_default()
    );
    // controller-gen writes the list kind the apiserver would default.
    if let Some(kind) = crd["spec"]["names"]["kind"].as_str() {
        crd["spec"]["names"]["listKind"] = json!(format!("{kind}List"));
    }
    if let Some(versions) = crd["spec"]["versions"].as_array_mut() {
        for v in versions {
            let root = &mut v["schema"]["openAPIV3Schema"];
            finish_schema(root);
            finish_root(root);
        }
    }
    Generated { file_name, crd }
}

/// The root object: the standard `apiVersion`, `kind` and `metadata`
/// properties every CRD schema lists, no `title`, `spec` not required.
fn finish_root(root: &mut Value) {
    let Some(obj) = root.as_object_mut() else {
        return;
    };
    obj.remove("title");
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.insert(
            "apiVersion".into(),
            json!({
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string",
            }),
        );
        props.insert(
            "kind".into(),
            json!({
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string",
            }),
        );
        props.insert("metadata".into(), json!({"type": "object"}));
    }
    if let Some(req) = obj.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| r != "spec");
        if req.is_empty() {
            obj.remove("required");
        }
    }
}

/// Applies the schema-wide fixes to `s` and everything below it.
fn finish_schema(s: &mut Value) {
    let Some(obj) = s.as_object_mut() else {
        return;
    };
    obj.remove("nullable");
    // JSONSchemaProps holds bounds as floats; upstream writes integers.
    for key in ["minimum", "maximum"] {
        if let Some(n) = obj.get(key).and_then(Value::as_f64) {
            if n.fract() == 0.0 && n.abs() < 9.0e15 {
                obj.insert(key.into(), json!(n as i64));
            }
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        obj.remove("type");
        obj.insert(
            "anyOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = obj.get_mut(key) {
            finish_schema(child);
        }
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for child in props.values_mut() {
            finish_schema(child);
        }
    }
}

/// The fields of an embedded object's metadata that Kueue keeps.
const EMBEDDED_METADATA: [&str; 5] = ["annotations", "finalizers", "labels", "name", "namespace"];

fn finish_pod_template(template: &mut Value) {
    embedded_metadata(template);
    if let Some(claim) = template.pointer_mut(
        "/properties/spec/properties/volumes/items/properties/ephemeral/properties/volumeClaimTemplate",
    ) {
        embedded_metadata(claim);
    }
    add_quantity_patterns(template, "");
    optional_reference_names(template, "");
    if let Some(spec) = template.pointer_mut("/properties/spec") {
        for (path, key, value) in pod_spec_markers() {
            if let Some(Value::Object(node)) = schema_at(spec, &path) {
                node.insert(key.into(), value);
            }
        }
    }
    if let Some(Value::Object(props)) = template.pointer_mut("/properties/spec/properties") {
        // Kubernetes 1.35 pod fields k8s-openapi's v1_34 schema lacks;
        // without them the apiserver would prune them from Kueue's writes.
        props.insert(
            "schedulingGroup".into(),
            json!({"type": "object", "properties": {"podGroupName": {"type": "string"}}}),
        );
    }
    if let Some(Value::Object(props)) = template.pointer_mut(
        "/properties/spec/properties/volumes/items/properties/projected/properties/sources/items/properties/podCertificate/properties",
    ) {
        props.insert(
            "userAnnotations".into(),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
        );
    }
    // Kubernetes' own documentation of the pod fields would make the
    // Workload CRD larger than the 256 KiB `kubectl apply` can record in its
    // last-applied annotation; `kubectl explain pod` has it.
    for part in ["metadata", "spec"] {
        if let Some(p) = template.pointer_mut(&format!("/properties/{part}")) {
            strip_descriptions(p);
        }
    }
}

/// The schema node at `path` below `s`: property names joined by `.`, a
/// `[]` suffix stepping into the array's items (`volumes[].secret`).
pub(crate) fn schema_at<'a>(s: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut at = s;
    for seg in path.split('.').filter(|p| !p.is_empty()) {
        let (name, items) = match seg.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (seg, false),
        };
        at = at.get_mut("properties")?.get_mut(name)?;
        if items {
            at = at.get_mut("items")?;
        }
    }
    Some(at)
}

/// What Kubernetes' pod types declare (`+listType`, `+listMapKey`,
/// `+mapType`, `+default`) and controller-gen writes into a CRD embedding a
/// pod template, but k8s-openapi's schema leaves out: without them the
/// apiserver would merge lists by position on server-side apply and leave
/// Kubernetes' defaults unset. Paths are relative to the pod spec.
fn pod_spec_markers() -> Vec<(String, &'static str, Value)> {
    fn atomic_list(m: &mut Vec<(String, &'static str, Value)>, p: &str) {
        m.push((p.to_string(), "x-kubernetes-list-type", json!("atomic")));
    }
    fn atomic_map(m: &mut Vec<(String, &'static str, Value)>, p: &str) {
        m.push((p.to_string(), "x-kubernetes-map-type", json!("atomic")));
    }
    fn keyed(m: &mut Vec<(String, &'static str, Value)>, p: &str, keys: &[&str]) {
        m.push((p.to_string(), "x-kubernetes-list-type", json!("map")));
        m.push((p.to_string(), "x-kubernetes-list-map-keys", json!(keys)));
    }
    fn default(m: &mut Vec<(String, &'static str, Value)>, p: &str, v: Value) {
        m.push((p.to_string(), "default", v));
    }
    // A LabelSelector.
    fn selector(m: &mut Vec<(String, &'static str, Value)>, p: &str) {
        atomic_map(m, p);
        atomic_list(m, &format!("{p}.matchExpressions"));
        atomic_list(m, &format!("{p}.matchExpressions[].values"));
    }
    // A LocalObjectReference or a selector of one key by name.
    fn reference(m: &mut Vec<(String, &'static str, Value)>, p: &str) {
        atomic_map(m, p);
        default(m, &format!("{p}.name"), json!(""));
    }
    let mut m = Vec::new();
    // Node affinity.
    let na = "affinity.nodeAffinity";
    let preferred = format!("{na}.preferredDuringSchedulingIgnoredDuringExecution");
    let required = format!("{na}.requiredDuringSchedulingIgnoredDuringExecution");
    atomic_list(&mut m, &preferred);
    atomic_map(&mut m, &format!("{preferred}[].preference"));
    atomic_map(&mut m, &required);
    atomic_list(&mut m, &format!("{required}.nodeSelectorTerms"));
    atomic_map(&mut m, &format!("{required}.nodeSelectorTerms[]"));
    for term in [
        format!("{preferred}[].preference"),
        format!("{required}.nodeSelectorTerms[]"),
    ] {
        for l in [
            "matchExpressions",
            "matchExpressions[].values",
            "matchFields",
            "matchFields[].values",
        ] {
            atomic_list(&mut m, &format!("{term}.{l}"));
        }
    }
    // Pod (anti-)affinity.
    for pa in ["podAffinity", "podAntiAffinity"] {
        let preferred = format!("affinity.{pa}.preferredDuringSchedulingIgnoredDuringExecution");
        let required = format!("affinity.{pa}.requiredDuringSchedulingIgnoredDuringExecution");
        atomic_list(&mut m, &preferred);
        atomic_list(&mut m, &required);
        for term in [
            format!("{preferred}[].podAffinityTerm"),
            format!("{required}[]"),
        ] {
            selector(&mut m, &format!("{term}.labelSelector"));
            selector(&mut m, &format!("{term}.namespaceSelector"));
            for l in ["matchLabelKeys", "mismatchLabelKeys", "namespaces"] {
                atomic_list(&mut m, &format!("{term}.{l}"));
            }
        }
    }
    // Containers of every sort.
    for cs in ["containers", "initContainers", "ephemeralContainers"] {
        keyed(&mut m, cs, &["name"]);
        let c = format!("{cs}[]");
        for l in [
            "args",
            "command",
            "envFrom",
            "resizePolicy",
            "restartPolicyRules",
        ] {
            atomic_list(&mut m, &format!("{c}.{l}"));
        }
        m.push((
            format!("{c}.restartPolicyRules[].exitCodes.values"),
            "x-kubernetes-list-type",
            json!("set"),
        ));
        keyed(&mut m, &format!("{c}.env"), &["name"]);
        reference(&mut m, &format!("{c}.envFrom[].configMapRef"));
        reference(&mut m, &format!("{c}.envFrom[].secretRef"));
        let from = format!("{c}.env[].valueFrom");
        reference(&mut m, &format!("{from}.configMapKeyRef"));
        reference(&mut m, &format!("{from}.secretKeyRef"));
        for r in ["fieldRef", "fileKeyRef", "resourceFieldRef"] {
            atomic_map(&mut m, &format!("{from}.{r}"));
        }
        default(&mut m, &format!("{from}.fileKeyRef.optional"), json!(false));
        for h in ["lifecycle.postStart", "lifecycle.preStop"] {
            atomic_list(&mut m, &format!("{c}.{h}.exec.command"));
            atomic_list(&mut m, &format!("{c}.{h}.httpGet.httpHeaders"));
        }
        for p in ["livenessProbe", "readinessProbe", "startupProbe"] {
            atomic_list(&mut m, &format!("{c}.{p}.exec.command"));
            atomic_list(&mut m, &format!("{c}.{p}.httpGet.httpHeaders"));
            default(&mut m, &format!("{c}.{p}.grpc.service"), json!(""));
        }
        keyed(
            &mut m,
            &format!("{c}.ports"),
            &["containerPort", "protocol"],
        );
        default(&mut m, &format!("{c}.ports[].protocol"), json!("TCP"));
        keyed(&mut m, &format!("{c}.resources.claims"), &["name"]);
        atomic_list(&mut m, &format!("{c}.securityContext.capabilities.add"));
        atomic_list(&mut m, &format!("{c}.securityContext.capabilities.drop"));
        keyed(&mut m, &format!("{c}.volumeDevices"), &["devicePath"]);
        keyed(&mut m, &format!("{c}.volumeMounts"), &["mountPath"]);
    }
    // The rest of the pod.
    for l in [
        "dnsConfig.nameservers",
        "dnsConfig.options",
        "dnsConfig.searches",
        "hostAliases[].hostnames",
        "readinessGates",
        "securityContext.supplementalGroups",
        "securityContext.sysctls",
        "tolerations",
        "topologySpreadConstraints[].matchLabelKeys",
    ] {
        atomic_list(&mut m, l);
    }
    keyed(&mut m, "hostAliases", &["ip"]);
    keyed(&mut m, "imagePullSecrets", &["name"]);
    reference(&mut m, "imagePullSecrets[]");
    atomic_map(&mut m, "nodeSelector");
    keyed(&mut m, "resourceClaims", &["name"]);
    keyed(&mut m, "resources.claims", &["name"]);
    keyed(&mut m, "schedulingGates", &["name"]);
    keyed(
        &mut m,
        "topologySpreadConstraints",
        &["topologyKey", "whenUnsatisfiable"],
    );
    selector(&mut m, "topologySpreadConstraints[].labelSelector");
    // Volumes.
    keyed(&mut m, "volumes", &["name"]);
    let v = "volumes[]";
    for (p, d) in [
        ("azureDisk.fsType", json!("ext4")),
        ("azureDisk.readOnly", json!(false)),
        ("iscsi.iscsiInterface", json!("default")),
        ("rbd.keyring", json!("/etc/ceph/keyring")),
        ("rbd.pool", json!("rbd")),
        ("rbd.user", json!("admin")),
        ("scaleIO.fsType", json!("xfs")),
        ("scaleIO.storageMode", json!("ThinProvisioned")),
    ] {
        default(&mut m, &format!("{v}.{p}"), d);
    }
    for r in [
        "cephfs.secretRef",
        "cinder.secretRef",
        "configMap",
        "csi.nodePublishSecretRef",
        "flexVolume.secretRef",
        "iscsi.secretRef",
        "projected.sources[].configMap",
        "projected.sources[].secret",
        "rbd.secretRef",
        "scaleIO.secretRef",
        "storageos.secretRef",
    ] {
        reference(&mut m, &format!("{v}.{r}"));
    }
    for l in [
        "cephfs.monitors",
        "configMap.items",
        "downwardAPI.items",
        "ephemeral.volumeClaimTemplate.spec.accessModes",
        "fc.targetWWNs",
        "fc.wwids",
        "iscsi.portals",
        "projected.sources",
        "projected.sources[].configMap.items",
        "projected.sources[].downwardAPI.items",
        "projected.sources[].secret.items",
        "rbd.monitors",
        "secret.items",
    ] {
        atomic_list(&mut m, &format!("{v}.{l}"));
    }
    for r in [
        "downwardAPI.items[].fieldRef",
        "downwardAPI.items[].resourceFieldRef",
        "ephemeral.volumeClaimTemplate.spec.dataSource",
        "projected.sources[].downwardAPI.items[].fieldRef",
        "projected.sources[].downwardAPI.items[].resourceFieldRef",
    ] {
        atomic_map(&mut m, &format!("{v}.{r}"));
    }
    selector(
        &mut m,
        &format!("{v}.ephemeral.volumeClaimTemplate.spec.selector"),
    );
    selector(
        &mut m,
        &format!("{v}.projected.sources[].clusterTrustBundle.labelSelector"),
    );
    m
}

/// An embedded object's metadata keeps only [`EMBEDDED_METADATA`].
fn embedded_metadata(object: &mut Value) {
    if let Some(Value::Object(props)) = object.pointer_mut("/properties/metadata/properties") {
        props.retain(|k, _| EMBEDDED_METADATA.contains(&k.as_str()));
    }
    if let Some(Value::Object(meta)) = object.pointer_mut("/properties/metadata") {
        meta.remove("required");
    }
}

/// Kubernetes' object references by name (`LocalObjectReference` in
/// `imagePullSecrets` and the volume sources' `secretRef`s, the config map
/// and secret selectors and sources with an `optional` flag) leave `name`
/// optional, as controller-gen emits them; k8s-openapi's schema requires
/// it. Other `{name}` objects (`os`, `schedulingGates[]`) keep it required.
fn optional_reference_names(s: &mut Value, key: &str) {
    let Some(obj) = s.as_object_mut() else {
        return;
    };
    let reference_key = key == "imagePullSecrets" || key.ends_with("ecretRef");
    let is_reference = obj
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| {
            p.contains_key("name")
                && (p.contains_key("optional") || (p.len() == 1 && reference_key))
        });
    if is_reference {
        if let Some(req) = obj.get_mut("required").and_then(Value::as_array_mut) {
            req.retain(|r| r != "name");
            if req.is_empty() {
                obj.remove("required");
            }
        }
    }
    for child_key in ["items", "additionalProperties"] {
        if let Some(child) = obj.get_mut(child_key) {
            optional_reference_names(child, key);
        }
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (k, child) in props.iter_mut() {
            optional_reference_names(child, k);
        }
    }
}

fn strip_descriptions(s: &mut Value) {
    let Some(obj) = s.as_object_mut() else {
        return;
    };
    obj.remove("description");
    for key in ["items", "additionalProperties"] {
        if let Some(child) = obj.get_mut(key) {
            strip_descriptions(child);
        }
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for child in props.values_mut() {
            strip_descriptions(child);
        }
    }
}

/// In k8s-openapi's pod schema, Quantity and IntOrString fields look alike;
/// the only IntOrString fields of a pod are probe and lifecycle handler
/// `port`s, every other one is a quantity.
fn add_quantity_patterns(s: &mut Value, key: &str) {
    let Some(obj) = s.as_object_mut() else {
        return;
    };
    if obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) && key != "port" {
        obj.insert("pattern".into(), QUANTITY.into());
    }
    if let Some(child) = obj.get_mut("items") {
        add_quantity_patterns(child, key);
    }
    if let Some(child) = obj.get_mut("additionalProperties") {
        add_quantity_patterns(child, key);
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        let props: &mut Map<String, Value> = props;
        for (k, child) in props.iter_mut() {
            add_quantity_patterns(child, k);
        }
    }
}
