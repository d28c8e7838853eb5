//! Integration policies: a job kind described as data.
//!
//! A policy names the kind (group, version, kind, plural resource), where its
//! suspend switch lives, which pod templates it runs and how many pods each asks
//! for, and which invariants the validating webhook enforces. Policies ship in
//! `policies/*.yaml`, are compiled into the binary, and can be replaced with
//! `--policies DIR`.

use crate::vocabulary::pointer::At;
use std::{collections::BTreeSet, fmt, sync::Arc};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::vocabulary::{keys, pointer::Pointer};

pub use super::autoscaling::Autoscaled;
pub use super::reference::{AdmissionPatch, RuntimeRef};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_policies.rs"));
}

/// Errors loading or compiling a policy file.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{file}: {source}")]
    Yaml {
        file: String,
        source: serde_yaml::Error,
    },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{kind} is described by both {first} and {second}; keep one policy per kind")]
    Duplicate {
        kind: String,
        first: String,
        second: String,
    },
}

/// Group, version, kind and plural resource of an integrated kind.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Target {
    #[serde(default)]
    pub group: String,
    pub version: String,
    pub kind: String,
    pub resource: String,
}

impl Target {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn matches(&self, group: &str, version: &str, kind: &str) -> bool {
        self.group == group && self.version == version && self.kind == kind
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Kind={}", self.api_version(), self.kind)
    }
}

/// How many pods a pod set asks for.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum CountExpr {
    /// A fixed number.
    Fixed(i64),
    /// An integer field; when absent, `default` (or, without one, the
    /// expression is dropped from an enclosing `min` and counts as 1 elsewhere).
    Field {
        path: Pointer,
        #[serde(default)]
        default: Option<i64>,
    },
    /// The smallest of the present terms.
    Min { min: Vec<CountExpr> },
    /// The product of the terms.
    Product { product: Vec<CountExpr> },
}

/// A count could not be computed because a field has the wrong type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountError {
    pub pointer: Pointer,
    pub found: &'static str,
}

impl CountExpr {
    /// Evaluates against `base` (the object, or a list element for `forEach`
    /// pod sets). `Ok(None)` means "absent, no default".
    pub fn eval(&self, base: &Value) -> Result<Option<i64>, CountError> {
        match self {
            CountExpr::Fixed(n) => Ok(Some(*n)),
            CountExpr::Field { path, default } => match path.resolve(base) {
                None | Some(Value::Null) => Ok(*default),
                Some(Value::Number(n)) => match n.as_i64() {
                    Some(v) => Ok(Some(v)),
                    None => Err(CountError {
                        pointer: path.clone(),
                        found: "a non-integer number",
                    }),
                },
                Some(other) => Err(CountError {
                    pointer: path.clone(),
                    found: json_type(other),
                }),
            },
            CountExpr::Min { min } => {
                let mut best: Option<i64> = None;
                for term in min {
                    if let Some(v) = term.eval(base)? {
                        best = Some(best.map_or(v, |b| b.min(v)));
                    }
                }
                Ok(best)
            }
            CountExpr::Product { product } => {
                let mut acc: i64 = 1;
                for term in product {
                    acc = acc.saturating_mul(term.eval(base)?.unwrap_or(1));
                }
                Ok(Some(acc))
            }
        }
    }
}

/// Name of a JSON value's type, for messages.
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Where a pod set's name comes from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum NameRule {
    Fixed(String),
    /// A string field of the list element; Kueue lower-cases pod set names.
    Field {
        path: Pointer,
    },
}

/// One pod set, or (with `forEach`) one per element of a list.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSetRule {
    pub name: NameRule,
    /// A list; the other pointers are then relative to each element.
    #[serde(default)]
    pub for_each: Option<Pointer>,
    pub template: Pointer,
    /// The template's field path in messages, when the pointer alone cannot
    /// tell it: a map key prints as `[Key]` (Kubeflow's
    /// `spec.pytorchReplicaSpecs[Master].template`), or where upstream
    /// names another field (a RayService's `spec.rayClusterSpec` for its
    /// `spec.rayClusterConfig`); with `forEach`, `{i}` is the element's
    /// index. Without it, the pointer's path (`spec.template`,
    /// `spec.replicatedJobs[0]...`).
    #[serde(default)]
    pub template_field: Option<String>,
    #[serde(default = "one")]
    pub count: CountExpr,
    /// Skip the pod set when its template is absent (MPIJob's launcher, say).
    #[serde(default)]
    pub optional: bool,
    /// The pod set exists only when this holds (RayJob's submitter, only
    /// with `submissionMode: K8sJobMode`).
    #[serde(default)]
    pub when: Option<Match>,
    /// When the template is absent, the pod set's template is built by this
    /// named hook (the operator creates such pods from its own default).
    #[serde(default)]
    pub synthesize: Option<Synthesizer>,
    /// Kueue's partial admission for this pod set (a batch/v1 Job's
    /// `kueue.x-k8s.io/job-min-parallelism`). Not with `forEach`: a
    /// Workload allows `minCount` on one pod set only.
    #[serde(default)]
    pub partial_admission: Option<PartialAdmissionRule>,
    /// Where an admission's pod set info is written when it does not go
    /// into the template (a SparkApplication's `spec.driver.nodeSelector`
    /// and siblings, from which its operator builds the pods); the same
    /// fields are put back from the Workload's template when the job stops.
    #[serde(default)]
    pub pod_set_info: Option<InfoTargets>,
    /// A container the kind's operator adds to these pods, counted in the
    /// pod set (KubeRay's autoscaler in a RayCluster's head).
    #[serde(default)]
    pub sidecar: Option<Sidecar>,
    /// Requests the operator's own extra work needs, counted in the pod
    /// set's first container (KubeRay's Redis cleanup Job in a Ray head).
    #[serde(default)]
    pub requests_floor: Option<RequestsFloor>,
    /// The labels that rank the pod set's pods, written into its
    /// `topologyRequest` for the topology ungater.
    #[serde(default)]
    pub ranks: Option<RankRule>,
}

/// Where a kind's operator writes each pod's rank (what Kueue gives its
/// `PodSetTopologyRequestBuilder` per kind): the index within a job, and
/// for replicated jobs the job's index and how many there are.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RankRule {
    pub pod_index_label: String,
    #[serde(default)]
    pub sub_group: Option<SubGroupRule>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubGroupRule {
    pub index_label: String,
    pub count: CountExpr,
}

/// A pod set's rank labels, read from the object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ranks {
    pub pod_index_label: Option<String>,
    pub sub_group_index_label: Option<String>,
    pub sub_group_count: Option<i64>,
}

/// A container an operator adds to a pod set's pods when `when` (a field
/// of the object) is `true`: `name`, with the resources at `resources`, or
/// `default` without them (Kueue's `autoscalerContainer`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sidecar {
    pub when: Pointer,
    pub name: String,
    pub resources: Pointer,
    pub default: Value,
}

impl Sidecar {
    /// The container, when `obj` has the operator add it.
    pub fn container(&self, obj: &Value) -> Option<Value> {
        if self.when.resolve(obj) != Some(&Value::Bool(true)) {
            return None;
        }
        let resources = match self.resources.resolve(obj) {
            Some(r) if !r.is_null() => r.clone(),
            _ => self.default.clone(),
        };
        Some(serde_json::json!({"name": self.name, "resources": resources}))
    }
}

/// Whether an object turns a feature on by an annotation reading `true`
/// (in any case) or by a field being present (KubeRay's
/// `IsGCSFaultToleranceEnabled`: `ray.io/ft-enabled` or
/// `gcsFaultToleranceOptions`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toggle {
    #[serde(default)]
    pub annotation: Option<String>,
    #[serde(default)]
    pub present: Option<Pointer>,
}

impl Toggle {
    pub fn on(&self, obj: &Value) -> bool {
        let annotated = self.annotation.as_ref().is_some_and(|key| {
            obj.at("/metadata/annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        });
        annotated
            || self
                .present
                .as_ref()
                .is_some_and(|p| !matches!(p.resolve(obj), None | Some(Value::Null)))
    }
}

/// Requests raised to at least `requests` in the pod set's first container
/// when `when` holds (Kueue's `accountForRedisCleanupInHeadPodSet`, which
/// keeps the larger of each quantity).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestsFloor {
    pub when: Toggle,
    pub requests: Map<String, Value>,
    /// The error when the template has no container to count them in.
    pub no_container: String,
}

/// The object's fields that take a pod set's info (absolute pointers).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InfoTargets {
    pub labels: Pointer,
    pub annotations: Pointer,
    pub node_selector: Pointer,
    pub tolerations: Pointer,
}

/// How a kind asks for partial admission and runs with fewer pods: the
/// annotation that gives the pod set's `minCount`, and the field that
/// runs the pods, set to the admitted count when the job starts and back
/// to the Workload's count when it stops (Kueue's `RunWithPodSetsInfo` and
/// `RestorePodSetsInfo` for a Job's `spec.parallelism`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PartialAdmissionRule {
    /// An object annotation holding an integer (Go's `strconv.Atoi`): the
    /// pod set's `minCount`. Absent or not an integer: no `minCount`, and
    /// the job runs with its own counts.
    pub min_count_annotation: String,
    /// The field (from the object) the admitted count is written to.
    pub scale: Pointer,
    /// Fields written along with `scale`, each when its annotation is true
    /// (Go's `strconv.ParseBool`): a Job's `spec.completions` under
    /// `kueue.x-k8s.io/job-completions-equal-parallelism`.
    #[serde(default)]
    pub also_scale: Vec<AlsoScale>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AlsoScale {
    pub path: Pointer,
    pub when_annotation: String,
}

impl PartialAdmissionRule {
    /// The pod set's `minCount` on `obj`, if it asks for one.
    pub fn min_count(&self, obj: &Value) -> Option<i64> {
        obj.get("metadata")?
            .get("annotations")?
            .get(&self.min_count_annotation)?
            .as_str()?
            .parse::<i32>()
            .ok()
            .map(i64::from)
    }

    /// The fields set to a count: `scale`, then each `alsoScale` whose
    /// annotation is true on `obj`.
    pub fn fields<'a>(&'a self, obj: &Value) -> Vec<&'a Pointer> {
        let annotation = |key: &str| {
            obj.at("/metadata/annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let mut out = vec![&self.scale];
        for also in &self.also_scale {
            if annotation(&also.when_annotation)
                .is_some_and(|v| crate::vocabulary::go::go_parse_bool(&v) == Ok(true))
            {
                out.push(&also.path);
            }
        }
        out
    }
}

/// Per-kind code a policy may name for a template the object leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Synthesizer {
    /// KubeRay's default submitter pod: one container running the head's
    /// image, requesting 500m cpu and 200Mi memory (limits 1 cpu, 1Gi).
    RaySubmitter,
    /// A SparkApplication's driver pod as Kueue builds it from
    /// `spec.driver` (its template, cores, memory, labels, node selector,
    /// tolerations...), whether or not the template is given.
    SparkDriver,
    /// The executor pod, from `spec.executor`.
    SparkExecutor,
}

impl Synthesizer {
    /// Built even when the object gives the template (the operator builds
    /// the pod from more fields than the template).
    pub fn always(self) -> bool {
        matches!(self, Synthesizer::SparkDriver | Synthesizer::SparkExecutor)
    }
}

/// A test on a string field: its value (or `default` when absent) must be
/// one of `in` and none of `notIn`. Absent without a default never matches.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Match {
    pub path: Pointer,
    #[serde(default, rename = "in")]
    pub any_of: Vec<String>,
    #[serde(default)]
    pub not_in: Vec<String>,
    #[serde(default)]
    pub default: Option<String>,
}

impl Match {
    pub fn holds(&self, base: &Value) -> bool {
        let value = match self.path.resolve(base) {
            Some(Value::String(s)) => s.as_str(),
            Some(Value::Bool(true)) => "true",
            Some(Value::Bool(false)) => "false",
            None | Some(Value::Null) => match &self.default {
                Some(d) => d.as_str(),
                None => return false,
            },
            Some(_) => return false,
        };
        (self.any_of.is_empty() || self.any_of.iter().any(|v| v == value))
            && !self.not_in.iter().any(|v| v == value)
    }
}

fn one() -> CountExpr {
    CountExpr::Fixed(1)
}

/// A pod set computed from an object.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSet {
    pub name: String,
    /// Absolute pointer to the pod template in the object.
    pub template: Pointer,
    /// The template's field path, for messages.
    pub field: String,
    pub count: i64,
    /// How to build the template when the object leaves it out.
    pub synthesize: Option<Synthesizer>,
    /// `minCount` (from the policy's `partialAdmission` rule).
    pub min_count: Option<i64>,
    /// Where a reduced count is written, when the kind supports it.
    pub partial_admission: Option<PartialAdmissionRule>,
    /// Where the admission's info goes when not into the template.
    pub pod_set_info: Option<InfoTargets>,
    /// A container the operator adds (see [`Sidecar`]).
    pub sidecar: Option<Sidecar>,
    /// Requests counted for the operator's extra work (see [`RequestsFloor`]).
    pub requests_floor: Option<RequestsFloor>,
    pub ranks: Ranks,
}

/// Why pod sets could not be computed from an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSetError {
    pub field: String,
    pub message: String,
}

/// Named invariants the validating webhook enforces for a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Invariant {
    /// queue-name is a DNS-1123 subdomain and immutable while the job runs.
    QueueName,
    /// prebuilt-workload-name is a DNS-1123 subdomain and immutable.
    PrebuiltWorkload,
    /// max-exec-time-seconds is a positive integer, changeable only while suspended.
    MaxExecTime,
    /// The WorkloadPriorityClass label cannot be added to a running job or removed.
    WorkloadPriorityClass,
    /// batch/v1 Job: job-min-parallelism bounds, parallelism frozen while running.
    JobPartialAdmission,
    /// batch/v1 Job: job-completions-equal-parallelism rules.
    JobCompletionsEqualParallelism,
    /// ray.io RayJob: a queued job brings its own cluster and deletes it
    /// when done; no autoscaling; no worker group named `head`.
    RayJob,
    /// ray.io RayCluster: no autoscaling; no worker group named `head`.
    RayCluster,
    /// ray.io RayService: its cluster (`spec.rayClusterConfig`) under the
    /// RayJob's cluster rules, named `spec.rayClusterSpec` as upstream does.
    RayService,
    /// Kueue's TAS group rule across pod sets (`kueue.x-k8s.io/podset-group-name`
    /// names exactly two pod sets with consistent topology), which Kueue
    /// checks for JobSet, MPIJob, RayJob and RayCluster but not for a Job
    /// (one pod set) or the Kubeflow training kinds.
    PodSetGroups,
    /// sparkoperator.k8s.io SparkApplication: a queued application runs in
    /// cluster mode, without dynamic allocation unless elastic.
    SparkApplication,
    /// batch/v1 Job's topology rules: the first pod-set annotation errors
    /// end the topology check, and an elastic Job may ask only for
    /// unconstrained topology.
    JobTopology,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PolicyFile {
    name: String,
    target: Target,
    #[serde(default)]
    suspend: Option<Pointer>,
    #[serde(default)]
    gate: Option<Gate>,
    #[serde(default)]
    pod_owner: Option<PodOwner>,
    #[serde(default = "yes")]
    enabled_by_default: bool,
    #[serde(default)]
    managed_by: Option<Pointer>,
    #[serde(default)]
    managed_by_controller: Option<String>,
    #[serde(default)]
    pod_sets: Vec<PodSetRule>,
    #[serde(default)]
    invariants: Vec<Invariant>,
    #[serde(default)]
    status: Option<StatusRule>,
    #[serde(default)]
    skip_when: Vec<Pointer>,
    #[serde(default)]
    elastic_jobs: bool,
    #[serde(default)]
    elastic_pods: Option<String>,
    #[serde(default = "yes")]
    prebuilt_workloads: bool,
    #[serde(default)]
    update_rules: UpdateRules,
    #[serde(default)]
    runtime_ref: Option<RuntimeRef>,
    #[serde(default)]
    autoscaled: Option<Autoscaled>,
    #[serde(default)]
    admission_patch: Option<AdmissionPatch>,
    #[serde(default)]
    multi_kueue: MultiKueueRule,
    #[serde(default)]
    keep_while_deleting: Option<Toggle>,
}

fn yes() -> bool {
    true
}

/// How a kind that cannot be suspended (a Pod) is held until its Workload
/// is admitted: the webhook adds a scheduling gate, a label that marks it
/// managed and a finalizer; admission removes the gate (Kueue's pod
/// integration). A policy has either `suspend` or `gate`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gate {
    /// `spec.schedulingGates[].name` held until admission.
    pub scheduling_gate: String,
    /// Label set to `"true"` on every object the webhook gated; the
    /// reconciler watches only these.
    pub managed_label: String,
    /// Finalizer kept until the object is finished and its Workload
    /// accounted for, so no object disappears unaccounted.
    pub finalizer: String,
    /// Objects that form one Workload together: a label naming the group
    /// and an annotation with its total size. Without it, one Workload per
    /// object.
    #[serde(default)]
    pub group: Option<GroupRule>,
    /// Enabled only because a kind whose pods it queues is (Kueue's
    /// `ImplicitlyEnabledFrameworkNames`): it then gates only pods whose
    /// parent marked them, never a pod on its own.
    #[serde(skip)]
    pub parents_only: bool,
}

/// A kind that is queued through its pods (Kueue's Deployment,
/// StatefulSet and LeaderWorkerSet integrations): no suspend switch and no
/// Workload of its own from a policy; the webhook marks its pod template
/// with Kueue's `kueue.x-k8s.io/pod-suspending-parent` annotation (valued
/// with the policy's name) so the pods it creates are gated by the `gate`
/// policy (the pod integration, enabled with it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodOwner {
    /// The pod template the webhook marks.
    pub template: Pointer,
    /// Also write the managed label, the queue name and the priority class
    /// on the template, so that each pod is queued on its own (Deployment).
    /// Without it, the pods are labelled by the reconciler as they appear.
    #[serde(default)]
    pub label_template: bool,
    /// The count that says pods run: while it is zero (or absent) the queue
    /// name may still change (Kueue: `status.readyReplicas`).
    pub ready: Pointer,
    /// The object's pods form one pod group with one Workload made from
    /// the object (StatefulSet).
    #[serde(default)]
    pub group: Option<OwnerGroup>,
    /// The object's pods form one pod group per replica, each with a
    /// Workload made from the object (LeaderWorkerSet). Excludes `group`.
    #[serde(default)]
    pub replica_groups: Option<ReplicaGroups>,
}

/// How an owner's pods form one pod group per replica (Kueue's
/// LeaderWorkerSet integration): each replica is a group of `size` pods,
/// found by the owner's name label and their group-index label; the
/// reconciler makes one Workload per index below `replicas` and deletes the
/// rest.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaGroups {
    /// The number of groups (absent: 1).
    pub replicas: Pointer,
    /// The largest `replicas` accepted (Kueue's sanity bound); below zero
    /// is refused too.
    pub max_replicas: i64,
    /// The pods per group (absent: 1): the group's total count; fixed while
    /// the object is queued.
    pub size: Pointer,
    /// The pod label whose value is the owner's name (the owner's pods and
    /// StatefulSets carry it).
    pub owner_label: String,
    /// The pod label holding the pod's group index; a pod without it is
    /// left until it has one.
    pub index_label: String,
    /// An optional template for the first pod of each group (the leader):
    /// when the object has one, the Workload has its pod set of 1 and the
    /// other pods are the `template`'s pod set; without it, one pod set
    /// `main` of `size` pods.
    #[serde(default)]
    pub leader: Option<LeaderRole>,
    /// Template label and annotation keys starting with this are left out
    /// of the Workload's pod set templates (but `ownerLabel`).
    #[serde(default)]
    pub drop_template_prefix: Option<String>,
    /// Marks every template `kueue.x-k8s.io/pod-group-serving: "true"`:
    /// the groups keep running, never finished by their pods.
    #[serde(default)]
    pub serving: bool,
    /// During a rolling update with surge, the groups that exist beyond
    /// `replicas` keep their Workloads.
    #[serde(default)]
    pub surge: Option<Surge>,
}

/// Kueue's `isRollingUpdateWithSurge`: while `maxSurge` (an int-or-string,
/// read as Go's `IntValue`) is above zero and fewer than `replicas` groups
/// are updated, Workloads are kept for the `existing` groups when they
/// are more than `replicas`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Surge {
    pub max_surge: Pointer,
    pub updated: Pointer,
    pub existing: Pointer,
}

/// The leader of each replica group (see [`ReplicaGroups`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaderRole {
    /// The leader's pod template (optional in the object).
    pub template: Pointer,
    /// The leader's pod set name (count 1).
    pub pod_set: String,
    /// The other pods' pod set name when there is a leader (count
    /// size − 1).
    pub others_pod_set: String,
    /// A pod carrying this annotation is not a leader.
    pub follower_annotation: String,
    /// Written `"1"` on the other pods' template when there is a leader
    /// (Kueue's TAS pod-index offset), unless the template names a pod set
    /// group (`kueue.x-k8s.io/podset-group-name`).
    #[serde(default)]
    pub index_offset_annotation: Option<String>,
}

/// How an owner's pods form one pod group.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerGroup {
    /// The group's size (absent: 1), the Workload's count.
    pub replicas: Pointer,
    /// The label selector (a `LabelSelector`) that finds the object's pods.
    pub selector: Pointer,
    /// The status count of pods that still exist: while it is above zero a
    /// scale up from zero is refused (Kueue: `status.replicas`).
    pub existing: Pointer,
    /// Marks each pod `kueue.x-k8s.io/pod-group-serving: "true"`: the
    /// group keeps running, is never finished by its pods, and a replaced
    /// pod is ungated into the admitted Workload without re-admission.
    #[serde(default)]
    pub serving: bool,
    /// Marks each pod `kueue.x-k8s.io/pod-group-fast-admission: "true"`:
    /// the Workload does not wait for the whole group to exist.
    #[serde(default)]
    pub fast_admission: bool,
    /// The pod label holding the pod's index in the group, named in the
    /// pod's `kueue.x-k8s.io/pod-group-pod-index-label` annotation.
    #[serde(default)]
    pub pod_index_label: Option<String>,
}

/// The keys that make several gated objects one Workload.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupRule {
    pub name_label: String,
    pub total_count_annotation: String,
}

impl Gate {
    /// Adds what a gated kind's rules read of its objects to `root`: the
    /// metadata the webhook reads and writes, the gates and phase
    /// [`Gate::holds`] reads (the rest of a pod, its volumes, env and
    /// managed fields, is skipped, not built). Its role is hashed where it
    /// is needed, as it is read ([`super::role::note_interest`]).
    pub fn note_interest(&self, root: &mut Interest) {
        for p in [
            "/metadata/labels",
            "/metadata/annotations",
            "/metadata/deletionTimestamp",
            "/metadata/ownerReferences",
            "/metadata/finalizers",
            "/spec/schedulingGates",
            "/status/phase",
        ] {
            root.whole(&Pointer::parse(p).expect("a literal pointer"));
        }
    }

    /// Is the object still held: it carries the gate, or it has ended
    /// (Kueue's `podSuspended`: a terminated pod counts as suspended).
    pub fn holds(&self, obj: &Value) -> bool {
        let gated = obj
            .at("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|gs| {
                gs.iter()
                    .any(|g| g.get("name").and_then(Value::as_str) == Some(&self.scheduling_gate))
            });
        gated
            || matches!(
                obj.at("/status/phase").and_then(Value::as_str),
                Some("Succeeded" | "Failed")
            )
    }
}

/// Which rules Kueue's webhook for a kind runs on UPDATE, and in which
/// order (the order of the errors in an aggregated denial).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UpdateRules {
    /// The update rules, then the create rules on the new object (JobSet,
    /// MPIJob, RayJob, RayCluster).
    #[default]
    UpdateFirst,
    /// The create rules on the new object, then the update rules (batch/v1
    /// Job).
    CreateFirst,
    /// The update rules and the topology annotations only (Kueue's generic
    /// webhook: the Kubeflow training kinds, AppWrapper).
    UpdateOnly,
}

/// How MultiKueue copies a job to a worker and its status back, beyond
/// what the rest of the policy says (`managedBy` is removed from the copy,
/// the whole `status` is mirrored, the status rule's condition types end
/// it). A kind with `managedBy` is dispatched; its defaults are Kueue's
/// generic adapter.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueRule {
    /// Fields removed from the worker's copy (one the worker's apiserver
    /// generates, like a Job's selector).
    #[serde(default)]
    pub cleared: Vec<Pointer>,
    /// Where the pod template's labels are, and the keys there that the
    /// kind's own controller wrote on the manager (they would clash).
    #[serde(default)]
    pub template_labels: Option<Pointer>,
    #[serde(default)]
    pub owned_template_labels: Vec<String>,
    /// A condition set True on a suspended local job whose remote one runs,
    /// for the apiserver's status validation.
    #[serde(default)]
    pub suspended_condition: Option<String>,
    /// The status copy waits while the local job is still suspended and the
    /// remote one runs (a start time copied early freezes the local spec).
    #[serde(default)]
    pub defer_status: bool,
    /// An elastic job's counts: the worker's copy follows them, with the
    /// Workload slice admitted for them as its prebuilt Workload.
    #[serde(default)]
    pub elastic_counts: Vec<Pointer>,
    /// An elastic job's counts kept per group of a list (a RayCluster's
    /// worker groups): the worker's copy takes each group's fields from the
    /// local group of the same key, as `elasticCounts` does.
    #[serde(default)]
    pub elastic_groups: Option<ElasticGroups>,
    /// Spec fields the worker's copy takes from the local job while it runs
    /// there (Kueue's `RemoteSpecSyncer`, gate MultiKueueRemoteSpecSync: a
    /// RayService's `serveConfigV2`, an in-place Serve update).
    #[serde(default)]
    pub synced_fields: Vec<Pointer>,
}

/// Groups whose pods are `count` (default 1) × `hosts` (when above 1)
/// (Kueue's `effectiveWorkerCount`), found by `key` in `list`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ElasticGroups {
    pub list: Pointer,
    pub key: Pointer,
    pub count: Pointer,
    #[serde(default)]
    pub hosts: Option<Pointer>,
}

/// How a job reports its progress, for the Workload reconciler: when it has
/// finished (and whether it succeeded), and whether it still runs pods.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusRule {
    /// A list of `{type, status, message}` conditions.
    #[serde(default)]
    pub conditions: Option<Pointer>,
    /// Condition types that, when `"True"`, mean the job succeeded.
    #[serde(default)]
    pub succeeded: Vec<String>,
    /// Condition types that, when `"True"`, mean the job failed.
    #[serde(default)]
    pub failed: Vec<String>,
    /// A phase field, for kinds that report progress as a state rather than
    /// conditions (RayJob's `jobDeploymentStatus`).
    #[serde(default)]
    pub phase: Option<PhaseRule>,
    /// When the job still runs pods (Kueue waits for none before releasing
    /// an evicted job's quota): an integer field above zero (`*` stands for
    /// every element, as in `/status/replicaStatuses/*/active`), or a
    /// string field matching.
    #[serde(default)]
    pub active: Vec<ActiveRule>,
    /// Status fields cleared (through the status subresource) once the job
    /// is suspended, before its pod templates are restored: a batch/v1 Job's
    /// templates can only change while `status.startTime` is unset, and its
    /// controller does not unset it on suspension (Kueue clears it too).
    #[serde(default)]
    pub reset: Vec<Pointer>,
    /// When all the job's pods are ready (waitForPodsReady's `PodsReady`
    /// condition): the integer fields in `count` plus the lengths of the
    /// lists in `lengths` reach the job's pod count (the sum of its pod
    /// sets' counts). Without it the kind reports no readiness: its
    /// Workloads get no `PodsReady` condition and are never timed out.
    #[serde(default)]
    pub pods_ready: Option<PodsReadyRule>,
    /// How many pods no longer need their quota while the job still runs
    /// (`status.reclaimablePods`, dynamic reclaim). Without it nothing is
    /// reclaimed.
    #[serde(default)]
    pub reclaimable_pods: Option<ReclaimRule>,
}

/// When a job's pods are all ready, as its kind tells it (Kueue's
/// `PodsReady` of each integration): counted (`count` and `lengths`
/// against `of`, or the pod count), a condition of the job that is
/// `"True"`, or a field's value.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodsReadyRule {
    /// Integer fields summed (`/status/ready`, `/status/succeeded`; `*`
    /// stands for each element, as in `/status/replicatedJobsStatus/*/ready`).
    #[serde(default)]
    pub count: Vec<Pointer>,
    /// Lists whose lengths are added
    /// (`/status/uncountedTerminatedPods/succeeded`).
    #[serde(default)]
    pub lengths: Vec<Pointer>,
    /// What the count must reach, summed as `count` is (a JobSet counts
    /// its jobs: `/spec/replicatedJobs/*/replicas`); without it, the pods
    /// of the job's pod sets.
    #[serde(default)]
    pub of: Vec<Pointer>,
    /// Ready once this condition type of the job (the status rule's
    /// `conditions`) is `"True"` (Kubeflow's and MPI's `Running`).
    #[serde(default)]
    pub condition: Option<String>,
    /// Ready once this field holds (RayCluster's `state: ready`); with
    /// counts as well, only while it holds.
    #[serde(default)]
    pub when: Option<Match>,
    /// The values of the object at `path` that are `in` the list, counted
    /// (a SparkApplication's `executorState` entries RUNNING or COMPLETED).
    #[serde(default)]
    pub values: Option<Match>,
}

fn sum_each(pointers: &[Pointer], obj: &Value) -> i64 {
    pointers
        .iter()
        .flat_map(|p| p.resolve_each(obj))
        .filter_map(Value::as_i64)
        .sum()
}

impl PodsReadyRule {
    /// Pods (or jobs) ready or done, as the job reports them.
    pub fn ready(&self, obj: &Value) -> i64 {
        let lengths: i64 = self
            .lengths
            .iter()
            .flat_map(|p| p.resolve_each(obj))
            .filter_map(Value::as_array)
            .map(|a| a.len() as i64)
            .sum();
        let values = self.values.as_ref().map_or(0, |m| {
            m.path
                .resolve(obj)
                .and_then(Value::as_object)
                .map_or(0, |o| {
                    o.values()
                        .filter_map(Value::as_str)
                        .filter(|v| m.any_of.iter().any(|a| a == v))
                        .count() as i64
                })
        });
        sum_each(&self.count, obj) + lengths + values
    }
}

impl StatusRule {
    /// Whether all the job's pods are ready, the job having `pods` pods;
    /// `None` for a kind that reports no readiness.
    pub fn pods_ready(&self, obj: &Value, pods: i64) -> Option<bool> {
        let rule = self.pods_ready.as_ref()?;
        if let Some(ty) = &rule.condition {
            return Some(condition_true(self.conditions.as_ref(), ty, obj));
        }
        if let Some(m) = &rule.when {
            let counted =
                !rule.count.is_empty() || !rule.lengths.is_empty() || rule.values.is_some();
            if !m.holds(obj) || !counted {
                return Some(m.holds(obj));
            }
        }
        let target = if rule.of.is_empty() {
            pods
        } else {
            sum_each(&rule.of, obj)
        };
        Some(rule.ready(obj) >= target)
    }
}

/// Whether the conditions at `list` have `ty` `"True"`.
fn condition_true(list: Option<&Pointer>, ty: &str, obj: &Value) -> bool {
    list.and_then(|c| c.resolve(obj))
        .and_then(Value::as_array)
        .is_some_and(|list| {
            list.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(ty)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// How many pods no longer need their quota while the job still runs
/// (`status.reclaimablePods`): one pod set counted as Kueue's Job does, or
/// a list of them counted as Kueue's JobSet does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ReclaimRule {
    Job(JobReclaim),
    Each(EachReclaim),
}

/// Kueue's Job `ReclaimablePods`: once pods have succeeded and fewer
/// completions remain than `parallelism`, the idle slots of `podSet`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobReclaim {
    /// The pod set the pods belong to.
    pub pod_set: String,
    /// Pods run at once (default 1 when unset).
    pub parallelism: Pointer,
    /// Pods to finish (default `parallelism` when unset).
    pub completions: Pointer,
    /// Pods that finished successfully.
    pub succeeded: Pointer,
}

/// Kueue's JobSet `ReclaimablePods`: for each element of `each` (a pod
/// set, named by its `name` in lower case), once its status in `statuses`
/// (matched by `name`) reports `succeeded` replicas, no more than its
/// `replicas`, those replicas' pods (each replica runs
/// min(`parallelism` (default 1), `completions` (default parallelism))).
/// The pointers after `each` and `statuses` are relative to the element.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EachReclaim {
    pub each: Pointer,
    pub statuses: Pointer,
    pub succeeded: Pointer,
    pub replicas: Pointer,
    pub parallelism: Pointer,
    pub completions: Pointer,
}

impl ReclaimRule {
    /// `(pod set, reclaimable pods)` for each pod set with any.
    pub fn reclaimable(&self, obj: &Value) -> Vec<(String, i64)> {
        let int = |p: &Pointer, v: &Value| p.resolve(v).and_then(Value::as_i64);
        match self {
            ReclaimRule::Job(r) => {
                let n = crate::jobs::readiness::job_reclaimable(
                    int(&r.parallelism, obj).unwrap_or(1),
                    int(&r.completions, obj),
                    int(&r.succeeded, obj).unwrap_or(0),
                );
                vec![(r.pod_set.clone(), n)]
            }
            ReclaimRule::Each(r) => {
                let statuses = r.statuses.resolve(obj).and_then(Value::as_array);
                let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_string);
                r.each
                    .resolve(obj)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|spec| {
                        let n = name(spec)?;
                        let status = statuses?.iter().find(|s| name(s).as_deref() == Some(&n))?;
                        let succeeded = int(&r.succeeded, status).unwrap_or(0);
                        let replicas = int(&r.replicas, spec).unwrap_or(1);
                        if succeeded <= 0 || succeeded > replicas {
                            return None;
                        }
                        let parallelism = int(&r.parallelism, spec).unwrap_or(1);
                        let per_replica = int(&r.completions, spec)
                            .unwrap_or(parallelism)
                            .min(parallelism);
                        Some((n.to_lowercase(), succeeded * per_replica))
                    })
                    .collect()
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhaseRule {
    pub path: Pointer,
    /// Phases in which the job has finished.
    pub finished: Vec<String>,
    /// A finished job succeeded when this holds (without it: always).
    #[serde(default)]
    pub succeeded_when: Option<Match>,
    /// Where the human-readable reason is.
    #[serde(default)]
    pub message: Option<Pointer>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ActiveRule {
    Count(Pointer),
    Match(Match),
    /// A condition of the job `"True"` (a RayService's `Ready`).
    Condition(ConditionRule),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConditionRule {
    pub conditions: Pointer,
    pub condition: String,
}

impl ActiveRule {
    fn holds(&self, obj: &Value) -> bool {
        match self {
            ActiveRule::Condition(c) => condition_true(Some(&c.conditions), &c.condition, obj),
            ActiveRule::Count(p) => p
                .resolve_each(obj)
                .into_iter()
                .any(|v| v.as_i64().is_some_and(|n| n > 0)),
            ActiveRule::Match(m) => m.holds(obj),
        }
    }
}

/// A job's progress as its status tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    Running,
    Succeeded(String),
    Failed(String),
}

impl StatusRule {
    pub fn progress(&self, obj: &Value) -> Progress {
        if let Some(phase) = &self.phase {
            let at = phase.path.resolve(obj).and_then(Value::as_str);
            if at.is_some_and(|p| phase.finished.iter().any(|f| f == p)) {
                let message = phase
                    .message
                    .as_ref()
                    .and_then(|m| m.resolve(obj))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                return match &phase.succeeded_when {
                    Some(m) if !m.holds(obj) => Progress::Failed(message),
                    _ => Progress::Succeeded(message),
                };
            }
        }
        let Some(Value::Array(conds)) = self.conditions.as_ref().and_then(|c| c.resolve(obj))
        else {
            return Progress::Running;
        };
        for c in conds {
            if c.get("status").and_then(Value::as_str) != Some("True") {
                continue;
            }
            let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
            let message = c
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if self.failed.iter().any(|f| f == ty) {
                return Progress::Failed(message);
            }
            if self.succeeded.iter().any(|s| s == ty) {
                return Progress::Succeeded(message);
            }
        }
        Progress::Running
    }

    pub fn is_active(&self, obj: &Value) -> bool {
        self.active.iter().any(|r| r.holds(obj))
    }
}

/// A compiled integration policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Integration name as in Kueue's `integrations.frameworks` (`batch/job`).
    pub name: String,
    pub target: Target,
    /// The suspend switch; empty for a gated kind (see `gate`).
    pub suspend: Pointer,
    /// How a kind without a suspend switch is held (a Pod).
    pub gate: Option<Gate>,
    /// A kind queued through its pods (Deployment, StatefulSet).
    pub pod_owner: Option<PodOwner>,
    /// Enabled when `integrations.frameworks` is not set (the pod
    /// integration is not: it puts every pod create on the webhook path).
    pub enabled_by_default: bool,
    pub managed_by: Option<Pointer>,
    /// The kind's own controller's name in `managed_by`: a queued object
    /// whose `managedBy` is unset or this is handed to MultiKueue when its
    /// ClusterQueue has a MultiKueue admission check (Kueue's
    /// `CanDefaultManagedBy`).
    pub managed_by_controller: Option<String>,
    pub pod_sets: Vec<PodSetRule>,
    pub invariants: BTreeSet<Invariant>,
    /// How the job reports progress; without it the reconciler never marks
    /// the Workload finished (it is deleted with the job).
    pub status: Option<StatusRule>,
    /// Objects where any of these fields holds a non-empty value are not
    /// queued at all (a RayJob that runs on an existing cluster).
    pub skip_when: Vec<Pointer>,
    /// Kueue accepts the `kueue.x-k8s.io/elastic-job` annotation on this
    /// kind (its `supportedElasticJobGVKs`); elsewhere it is forbidden.
    pub elastic_jobs: bool,
    /// The label selector of an elastic job's pods, `{uid}` and `{name}`
    /// standing for the job's: the pods whose `kueue.x-k8s.io/elastic-job`
    /// scheduling gate is removed as their slice is admitted.
    pub elastic_pods: Option<String>,
    /// Kueue runs prebuilt Workloads for this kind (its
    /// `supportedPrebuiltWlJobGVKs`); elsewhere naming one is forbidden.
    pub prebuilt_workloads: bool,
    /// Which rules run on UPDATE.
    pub update_rules: UpdateRules,
    /// The object the pod templates come from (a TrainJob's runtime).
    pub runtime_ref: Option<RuntimeRef>,
    /// The object an elastic job's autoscaler scales, whose counts it
    /// follows (a RayJob's RayCluster).
    pub autoscaled: Option<Autoscaled>,
    /// Where an admission's pod set infos go instead of the templates.
    pub admission_patch: Option<AdmissionPatch>,
    /// How MultiKueue copies the kind (used when `managed_by` is set).
    pub multi_kueue: MultiKueueRule,
    /// While this holds, a job being deleted keeps its Workload and quota
    /// until it is gone (Kueue's RayService `Skip` under
    /// DeferRayServiceFinalizationForRedisCleanup: KubeRay's Redis cleanup
    /// Job runs on that quota).
    pub keep_while_deleting: Option<Toggle>,
    /// The file the policy came from, for messages.
    pub source: String,
}

/// Kueue's limit on pod sets per Workload (v1beta2).
pub const MAX_POD_SETS: usize = 18;

impl Policy {
    pub fn from_yaml(file: &str, text: &str) -> Result<Policy, PolicyError> {
        let raw: PolicyFile = serde_yaml::from_str(text).map_err(|source| PolicyError::Yaml {
            file: file.to_string(),
            source,
        })?;
        let invalid = |message: String| PolicyError::Invalid {
            file: file.to_string(),
            message,
        };
        let suspend = match (raw.suspend, &raw.gate, &raw.pod_owner) {
            (Some(s), None, None) if !s.tokens().is_empty() => s,
            (None, Some(_), None) | (None, None, Some(_)) => Pointer::parse("").map_err(invalid)?,
            (Some(_), _, _) | (_, Some(_), Some(_)) => {
                return Err(invalid(
                    "suspend, gate and podOwner exclude each other: a kind is held by its suspend field, by a scheduling gate, or through its pods".into(),
                ))
            }
            _ => {
                return Err(invalid(
                    "suspend must point at a field, e.g. /spec/suspend (or gate must name a scheduling gate)".into(),
                ))
            }
        };
        if raw.target.kind.is_empty() || raw.target.version.is_empty() {
            return Err(invalid("target needs a version and a kind".into()));
        }
        if raw.target.resource.is_empty()
            || raw.target.resource != raw.target.resource.to_lowercase()
        {
            return Err(invalid(format!(
                "target.resource must be the lower-case plural resource name (e.g. {}s), got {:?}",
                raw.target.kind.to_lowercase(),
                raw.target.resource
            )));
        }
        let mut fixed = BTreeSet::new();
        for rule in &raw.pod_sets {
            match (&rule.name, &rule.for_each) {
                (NameRule::Fixed(n), None) if !fixed.insert(n.to_lowercase()) => {
                    return Err(invalid(format!("pod set {n:?} is listed twice")));
                }
                _ if rule.partial_admission.is_some() && rule.for_each.is_some() => {
                    return Err(invalid(
                        "partialAdmission cannot be used with forEach: a Workload allows minCount on one pod set only"
                            .into(),
                    ))
                }
                (NameRule::Field { .. }, None) => {
                    return Err(invalid(
                        "a pod set name taken from a field needs forEach (the list it comes from)"
                            .into(),
                    ))
                }
                _ => {}
            }
        }
        if let Some(r) = &raw.runtime_ref {
            if r.mount_at.tokens().len() != 1 {
                return Err(invalid(format!(
                    "runtimeRef.mountAt must be one top-level key such as /runtime, got {:?}",
                    r.mount_at.as_str()
                )));
            }
            if r.kinds.is_empty() || !r.kinds.iter().any(|k| k.kind == r.kind.default) {
                return Err(invalid(format!(
                    "runtimeRef.kinds must list the default kind {:?}",
                    r.kind.default
                )));
            }
        }
        if (!raw.multi_kueue.elastic_counts.is_empty() || raw.multi_kueue.elastic_groups.is_some())
            && !raw.elastic_jobs
        {
            return Err(invalid(
                "multiKueue.elasticCounts and elasticGroups need elasticJobs: only an elastic job changes its counts while it runs".into(),
            ));
        }
        if raw.autoscaled.is_some() && !raw.elastic_jobs {
            return Err(invalid(
                "autoscaled needs elasticJobs: only an elastic job follows the counts of another object".into(),
            ));
        }
        if raw
            .pod_owner
            .as_ref()
            .is_some_and(|o| o.group.is_some() && o.replica_groups.is_some())
        {
            return Err(invalid(
                "podOwner.group and podOwner.replicaGroups exclude each other: an owner's pods are one group, or one group per replica".into(),
            ));
        }
        if raw.managed_by_controller.is_some() && raw.managed_by.is_none() {
            return Err(invalid(
                "managedByController needs managedBy (where the kind keeps it)".into(),
            ));
        }
        if raw.pod_sets.len() > MAX_POD_SETS {
            return Err(invalid(format!(
                "at most {MAX_POD_SETS} pod sets are allowed, got {}",
                raw.pod_sets.len()
            )));
        }
        Ok(Policy {
            name: raw.name,
            target: raw.target,
            suspend,
            gate: raw.gate,
            pod_owner: raw.pod_owner,
            enabled_by_default: raw.enabled_by_default,
            managed_by: raw.managed_by,
            managed_by_controller: raw.managed_by_controller,
            pod_sets: raw.pod_sets,
            invariants: raw.invariants.into_iter().collect(),
            status: raw.status,
            skip_when: raw.skip_when,
            elastic_jobs: raw.elastic_jobs,
            elastic_pods: raw.elastic_pods,
            prebuilt_workloads: raw.prebuilt_workloads,
            update_rules: raw.update_rules,
            runtime_ref: raw.runtime_ref,
            autoscaled: raw.autoscaled,
            admission_patch: raw.admission_patch,
            multi_kueue: raw.multi_kueue,
            keep_while_deleting: raw.keep_while_deleting,
            source: file.to_string(),
        })
    }

    pub fn has(&self, inv: Invariant) -> bool {
        self.invariants.contains(&inv)
    }

    /// The label selector of the job's elastic pods: `{uid}`, `{name}` and
    /// `{/pointer}` replaced by the job's fields. `None` without a rule, or
    /// while a field it names is empty (a RayService names no cluster before
    /// KubeRay makes one; an empty selector would pick every pod).
    pub fn elastic_pod_selector(&self, job: &Value) -> Option<String> {
        let mut rest = self.elastic_pods.as_deref()?;
        let mut out = String::new();
        while let Some(open) = rest.find('{') {
            let close = open + rest[open..].find('}')?;
            let path = match &rest[open + 1..close] {
                "uid" => "/metadata/uid",
                "name" => "/metadata/name",
                p => p,
            };
            let value = job
                .at(path)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())?;
            out.push_str(&rest[..open]);
            out.push_str(value);
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        Some(out)
    }

    /// Is `obj` left alone (see `skipWhen`)?
    pub fn skips(&self, obj: &Value) -> bool {
        self.skip_when.iter().any(|p| match p.resolve(obj) {
            None | Some(Value::Null) => false,
            Some(Value::Object(m)) => !m.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::String(s)) => !s.is_empty(),
            Some(_) => true,
        })
    }

    /// The pod sets of `obj`, in policy order, names lower-cased as Kueue does.
    pub fn pod_sets(&self, obj: &Value) -> Result<Vec<PodSet>, PodSetError> {
        let mut out = Vec::new();
        for rule in &self.pod_sets {
            match &rule.for_each {
                None => {
                    if rule.when.as_ref().is_some_and(|w| !w.holds(obj))
                        || (rule.template.resolve(obj).is_none() && rule.optional)
                    {
                        continue;
                    }
                    let NameRule::Fixed(name) = &rule.name else {
                        continue;
                    };
                    let count = eval_count(&rule.count, obj, None)?;
                    out.push(PodSet {
                        name: name.to_lowercase(),
                        field: rule
                            .template_field
                            .clone()
                            .unwrap_or_else(|| rule.template.field_path()),
                        template: rule.template.clone(),
                        count,
                        synthesize: rule.synthesize,
                        min_count: rule
                            .partial_admission
                            .as_ref()
                            .and_then(|p| p.min_count(obj)),
                        partial_admission: rule.partial_admission.clone(),
                        pod_set_info: rule.pod_set_info.clone(),
                        sidecar: rule.sidecar.clone(),
                        requests_floor: rule.requests_floor.clone(),
                        ranks: eval_ranks(rule.ranks.as_ref(), obj, None)?,
                    });
                }
                Some(list) => {
                    let items = match list.resolve(obj) {
                        None | Some(Value::Null) => continue,
                        Some(Value::Array(items)) => items,
                        Some(other) => {
                            return Err(PodSetError {
                                field: list.field_path(),
                                message: format!("must be a list, found {}", json_type(other)),
                            })
                        }
                    };
                    for (i, item) in items.iter().enumerate() {
                        let template = list.join(i, &rule.template);
                        if rule.when.as_ref().is_some_and(|w| !w.holds(item))
                            || (rule.template.resolve(item).is_none() && rule.optional)
                        {
                            continue;
                        }
                        let name = match &rule.name {
                            NameRule::Fixed(n) => n.clone(),
                            NameRule::Field { path } => match path.resolve(item) {
                                Some(Value::String(s)) => s.clone(),
                                _ => {
                                    return Err(PodSetError {
                                        field: list.join(i, path).field_path(),
                                        message: "must be a string naming the pod set".into(),
                                    })
                                }
                            },
                        };
                        let count = eval_count(&rule.count, item, Some((list, i)))?;
                        out.push(PodSet {
                            name: name.to_lowercase(),
                            field: match &rule.template_field {
                                Some(f) => f.replace("{i}", &i.to_string()),
                                None => template.field_path(),
                            },
                            template,
                            count,
                            synthesize: rule.synthesize,
                            min_count: None,
                            partial_admission: None,
                            pod_set_info: rule.pod_set_info.clone(),
                            sidecar: rule.sidecar.clone(),
                            requests_floor: rule.requests_floor.clone(),
                            ranks: eval_ranks(rule.ranks.as_ref(), item, Some((list, i)))?,
                        });
                    }
                }
            }
        }
        if out.len() > MAX_POD_SETS {
            return Err(PodSetError {
                field: self
                    .pod_sets
                    .iter()
                    .find_map(|r| r.for_each.as_ref())
                    .map(Pointer::field_path)
                    .unwrap_or_default(),
                message: format!(
                    "must have at most {MAX_POD_SETS} pod sets, got {}",
                    out.len()
                ),
            });
        }
        Ok(out)
    }
}

fn eval_ranks(
    rule: Option<&RankRule>,
    base: &Value,
    within: Option<(&Pointer, usize)>,
) -> Result<Ranks, PodSetError> {
    let Some(rule) = rule else {
        return Ok(Ranks::default());
    };
    let (sub_group_index_label, sub_group_count) = match &rule.sub_group {
        Some(g) => (
            Some(g.index_label.clone()),
            Some(eval_count(&g.count, base, within)?),
        ),
        None => (None, None),
    };
    Ok(Ranks {
        pod_index_label: Some(rule.pod_index_label.clone()),
        sub_group_index_label,
        sub_group_count,
    })
}

fn eval_count(
    expr: &CountExpr,
    base: &Value,
    within: Option<(&Pointer, usize)>,
) -> Result<i64, PodSetError> {
    match expr.eval(base) {
        Ok(v) => {
            let v = v.unwrap_or(1);
            if v < 0 {
                return Err(PodSetError {
                    field: count_field(expr, within),
                    message: format!("must be greater than or equal to 0, got {v}"),
                });
            }
            Ok(v)
        }
        Err(e) => Err(PodSetError {
            field: match within {
                Some((list, i)) => list.join(i, &e.pointer).field_path(),
                None => e.pointer.field_path(),
            },
            message: format!("must be an integer, found {}", e.found),
        }),
    }
}

fn count_field(expr: &CountExpr, within: Option<(&Pointer, usize)>) -> String {
    let first = match expr {
        CountExpr::Field { path, .. } => Some(path),
        CountExpr::Min { min: terms } | CountExpr::Product { product: terms } => {
            terms.iter().find_map(|t| match t {
                CountExpr::Field { path, .. } => Some(path),
                _ => None,
            })
        }
        CountExpr::Fixed(_) => None,
    };
    match (first, within) {
        (Some(p), Some((list, i))) => list.join(i, p).field_path(),
        (Some(p), None) => p.field_path(),
        (None, _) => String::new(),
    }
}

/// The parts of an object the rules read: a tree of keys, where a `whole`
/// node is read entirely, an interior node only for its listed children (its
/// presence and type are kept), and `each` applies to every element of a
/// list. Reviews are parsed into exactly this much of each object — the rest
/// is syntax-checked and skipped — because building the whole object as a
/// JSON tree was most of the cost of a review.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Interest {
    pub keys: Vec<(String, Interest)>,
    pub each: Option<Box<Interest>>,
    pub whole: bool,
    /// A pod's spec, whose role is hashed as it is read
    /// ([`super::role::Shape`]): its role's fields are written, not built.
    pub role: bool,
}

impl Interest {
    pub fn child(&self, key: &str) -> Option<&Interest> {
        self.keys.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn at(&mut self, tokens: &[String]) -> &mut Interest {
        let mut node = self;
        for t in tokens {
            // A list is read by `each`, never by index: a pointer that may
            // index one (`/spec/containers/0/name`) reads its parent whole.
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                node.whole = true;
                return node;
            }
            let i = match node.keys.iter().position(|(k, _)| k == t) {
                Some(i) => i,
                None => {
                    node.keys.push((t.clone(), Interest::default()));
                    node.keys.len() - 1
                }
            };
            node = &mut node.keys[i].1;
        }
        node
    }

    /// Read the value at `ptr` entirely.
    pub fn whole(&mut self, ptr: &Pointer) -> &mut Self {
        self.at(ptr.tokens()).whole = true;
        self
    }

    /// Only whether something is at `ptr`, and its type.
    pub fn presence(&mut self, ptr: &Pointer) -> &mut Self {
        self.at(ptr.tokens());
        self
    }

    /// The interest in each element of the list at `ptr`.
    pub fn each(&mut self, ptr: &Pointer) -> &mut Interest {
        self.at(ptr.tokens()).each.get_or_insert_with(Box::default)
    }

    fn count(&mut self, expr: &CountExpr) {
        match expr {
            CountExpr::Fixed(_) => {}
            CountExpr::Field { path, .. } => {
                self.whole(path);
            }
            CountExpr::Min { min: terms } | CountExpr::Product { product: terms } => {
                for t in terms {
                    self.count(t);
                }
            }
        }
    }
}

impl Invariant {
    /// Fields a kind-specific invariant reads besides labels and annotations.
    fn reads(self) -> &'static [&'static str] {
        match self {
            Invariant::JobPartialAdmission => &["/spec/parallelism", "/spec/completions"],
            Invariant::JobCompletionsEqualParallelism => &[
                "/spec/parallelism",
                "/spec/completions",
                "/spec/completionMode",
            ],
            Invariant::RayJob => &[
                "/spec/clusterSelector",
                "/spec/shutdownAfterJobFinishes",
                "/spec/rayClusterSpec/enableInTreeAutoscaling",
            ],
            Invariant::RayCluster => &["/spec/enableInTreeAutoscaling", "/spec/managedBy"],
            Invariant::RayService => &["/spec/rayClusterConfig/enableInTreeAutoscaling"],
            Invariant::SparkApplication => &["/spec/mode", "/spec/dynamicAllocation/enabled"],
            _ => &[],
        }
    }
}

impl Policy {
    /// Adds what this policy's rules read to `root`.
    pub fn note_interest(&self, root: &mut Interest) {
        // A gated kind's reviews read whole objects (their own family).
        if self.gate.is_some() || self.pod_owner.is_some() {
            return;
        }
        root.whole(&self.suspend);
        if let Some(m) = &self.managed_by {
            root.whole(m);
        }
        for rule in &self.pod_sets {
            if let Some(sc) = &rule.sidecar {
                root.whole(&sc.when);
                root.whole(&sc.resources);
            }
            if let Some(p) = rule
                .requests_floor
                .as_ref()
                .and_then(|f| f.when.present.as_ref())
            {
                root.whole(p);
            }
            let node = match &rule.for_each {
                Some(list) => root.each(list),
                None => &mut *root,
            };
            // The pod template's annotations carry Kueue's topology requests.
            if let Ok(annotations) = Pointer::parse("/metadata/annotations") {
                node.whole(&rule.template.child(&annotations));
            }
            if let NameRule::Field { path } = &rule.name {
                node.whole(path);
            }
            // A built pod's annotations also come from the role's own.
            if let Some(info) = &rule.pod_set_info {
                node.whole(&info.annotations);
            }
            if let Some(w) = &rule.when {
                node.whole(&w.path);
            }
            // An elastic job's templates get the elastic-job scheduling gate.
            if self.elastic_pods.is_some() {
                if let Ok(gates) = Pointer::parse("/spec/schedulingGates") {
                    node.whole(&rule.template.child(&gates));
                }
            }
            node.count(&rule.count);
        }
        for p in &self.skip_when {
            root.whole(p);
        }
        if let Some(r) = &self.runtime_ref {
            root.whole(&r.kind.path);
            root.whole(&r.name);
        }
        if let Some(a) = &self.admission_patch {
            root.whole(&a.list);
        }
        for inv in &self.invariants {
            for p in inv.reads() {
                if let Ok(ptr) = Pointer::parse(p) {
                    root.whole(&ptr);
                }
            }
        }
    }
}

/// The loaded policies, looked up by group/version/kind on every review.
#[derive(Debug, Clone, Default)]
pub struct PolicySet {
    policies: Vec<Arc<Policy>>,
}

impl PolicySet {
    /// The policies compiled into the binary from `policies/`.
    pub fn embedded() -> Result<PolicySet, PolicyError> {
        Self::from_files(
            embedded::EMBEDDED
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string())),
        )
    }

    /// Policies from `(file name, text)` pairs (the shell reads a
    /// directory: `batchgate serve --policies`).
    pub fn from_files(
        files: impl Iterator<Item = (String, String)>,
    ) -> Result<PolicySet, PolicyError> {
        let mut set = PolicySet::default();
        for (name, text) in files {
            set.insert(Policy::from_yaml(&name, &text)?)?;
        }
        Ok(set)
    }

    pub fn insert(&mut self, policy: Policy) -> Result<(), PolicyError> {
        if let Some(existing) = self.policies.iter().find(|p| p.target == policy.target) {
            return Err(PolicyError::Duplicate {
                kind: policy.target.to_string(),
                first: existing.source.clone(),
                second: policy.source,
            });
        }
        self.policies.push(Arc::new(policy));
        Ok(())
    }

    /// Keeps only the integrations named (Kueue's `integrations.frameworks`).
    pub fn retain_enabled(&mut self, names: &[String]) {
        let owners = self
            .policies
            .iter()
            .any(|p| p.pod_owner.is_some() && names.iter().any(|n| n == &p.name));
        self.policies
            .retain(|p| names.iter().any(|n| n == &p.name) || (owners && p.gate.is_some()));
        // Kueue's ImplicitlyEnabledFrameworkNames: a kind queued through its
        // pods brings the pod integration, for its pods only.
        for p in &mut self.policies {
            if let Some(g) = &p.gate {
                if !names.iter().any(|n| n == &p.name) {
                    let mut q = (**p).clone();
                    q.gate = Some(Gate {
                        parents_only: true,
                        ..g.clone()
                    });
                    *p = Arc::new(q);
                }
            }
        }
    }

    /// Keeps the integrations enabled when `integrations.frameworks` is not
    /// set (every one but those with `enabledByDefault: false`).
    pub fn retain_default(&mut self) {
        self.policies.retain(|p| p.enabled_by_default);
    }

    pub fn find(&self, group: &str, version: &str, kind: &str) -> Option<&Arc<Policy>> {
        self.policies
            .iter()
            .find(|p| p.target.matches(group, version, kind))
    }

    /// Is `api_version`/`kind` (as in an ownerReference) an integrated kind?
    /// An AppWrapper is one too: the objects it wraps are governed by its
    /// Workload, not queued again on their own.
    pub fn is_integrated(&self, api_version: &str, kind: &str) -> bool {
        if api_version == crate::appwrapper::APPWRAPPER_API_VERSION
            && kind == crate::appwrapper::APPWRAPPER_KIND
        {
            return true;
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.find(group, version, kind).is_some()
    }

    /// Does the job reconciler govern `job`, of `policy`'s kind: queued (a
    /// non-empty queue name), not skipped by its policy, and not a child of
    /// an integrated kind (a JobSet's Jobs, an AppWrapper's components are
    /// governed by their parent's Workload, as in the webhook)?
    pub fn governs(&self, policy: &Policy, job: &Value) -> bool {
        self.governs_as(policy, job, false)
    }

    /// [`Self::governs`], where `top_level` says the job's owner chain was
    /// walked and no ancestor is queued (`jobs::ancestry`): such a child
    /// is governed on its own.
    pub fn governs_as(&self, policy: &Policy, job: &Value, top_level: bool) -> bool {
        let meta = &job["metadata"];
        let queued = meta["labels"][keys::QUEUE_NAME_LABEL]
            .as_str()
            .is_some_and(|q| !q.is_empty());
        let child = meta["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|o| {
                o["controller"] == Value::Bool(true)
                    && self.is_integrated(
                        o["apiVersion"].as_str().unwrap_or(""),
                        o["kind"].as_str().unwrap_or(""),
                    )
            });
        queued && (top_level || !child) && !policy.skips(job)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Policy>> {
        self.policies.iter()
    }

    pub fn len(&self) -> usize {
        self.policies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pointer_through_a_list_index_is_read_by_the_sparse_reader() {
        // Found while writing the policy fuzz target's property: the sparse
        // reader reads lists through `each` only, so `/spec/groups/1/replicas` came back empty
        // and the count fell to its default.
        let p = Policy::from_yaml(
            "indexed.yaml",
            "name: x/indexed\ntarget: {group: x, version: v1, kind: Indexed, resource: indexeds}\nsuspend: /spec/suspend\npodSets:\n  - name: main\n    template: /spec/groups/0/template\n    count: { path: /spec/groups/1/replicas }\n",
        )
        .unwrap();
        let mut interest = Interest::default();
        p.note_interest(&mut interest);
        let obj = json!({"spec": {"suspend": true, "groups": [{"template": {}}, {"replicas": 7}]}});
        let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", "object": obj}});
        let read = crate::admission::review::parse(&serde_json::to_vec(&body).unwrap(), &interest)
            .unwrap()
            .object
            .unwrap();
        let counts = |o: &Value| {
            p.pod_sets(o)
                .unwrap()
                .iter()
                .map(|s| s.count)
                .collect::<Vec<_>>()
        };
        assert_eq!(counts(&obj), vec![7]);
        assert_eq!(counts(&read), vec![7]);
    }

    /// The elastic pods' selector names the job's fields; it is no
    /// selector while a field it names is empty, which would pick every pod.
    #[test]
    fn the_elastic_pod_selector_names_the_jobs_fields() {
        let with = |rule: &str| {
            let mut p = (*job_policy()).clone();
            p.elastic_pods = Some(rule.to_string());
            p
        };
        let job = json!({"metadata": {"name": "j", "uid": "u-1"},
                         "status": {"cluster": "c-2", "empty": ""}});
        let sel = |rule: &str| with(rule).elastic_pod_selector(&job);
        assert_eq!(sel("a={uid}").as_deref(), Some("a=u-1"));
        assert_eq!(sel("a={name},b=x").as_deref(), Some("a=j,b=x"));
        assert_eq!(
            sel("ray.io/cluster={/status/cluster}").as_deref(),
            Some("ray.io/cluster=c-2")
        );
        assert_eq!(sel("a={/status/empty}"), None);
        assert_eq!(sel("a={/status/missing}"), None);
        assert_eq!(sel("a={name"), None, "an unclosed brace");
        assert_eq!(
            job_policy().elastic_pod_selector(&job).is_some(),
            job_policy().elastic_pods.is_some()
        );
    }

    fn job_policy() -> Arc<Policy> {
        PolicySet::embedded()
            .unwrap()
            .find("batch", "v1", "Job")
            .unwrap()
            .clone()
    }

    #[test]
    fn embedded_job_policy_loads() {
        let p = job_policy();
        assert_eq!(p.name, "batch/job");
        assert_eq!(p.target.resource, "jobs");
        assert_eq!(p.suspend.as_str(), "/spec/suspend");
        assert!(p.has(Invariant::QueueName));
        assert!(p.has(Invariant::JobPartialAdmission));
    }

    #[test]
    fn job_count_is_min_of_parallelism_and_completions() {
        let p = job_policy();
        let count = |spec: Value| p.pod_sets(&json!({"spec": spec})).unwrap()[0].count;
        assert_eq!(count(json!({})), 1);
        assert_eq!(count(json!({"parallelism": 4})), 4);
        assert_eq!(count(json!({"parallelism": 4, "completions": 2})), 2);
        assert_eq!(count(json!({"completions": 3})), 1);
        assert_eq!(count(json!({"parallelism": 0})), 0);
        let sets = p.pod_sets(&json!({"spec": {}})).unwrap();
        assert_eq!(sets[0].name, "main");
        assert_eq!(sets[0].template.as_str(), "/spec/template");
    }

    #[test]
    fn bad_count_type_names_the_field() {
        let p = job_policy();
        let err = p
            .pod_sets(&json!({"spec": {"parallelism": "four"}}))
            .unwrap_err();
        assert_eq!(err.field, "spec.parallelism");
        assert_eq!(err.message, "must be an integer, found a string");
    }

    #[test]
    fn for_each_pod_sets_with_products_and_optional_templates() {
        let yaml = r#"
name: example.com/multi
target: { group: example.com, version: v1, kind: Multi, resource: multis }
suspend: /spec/runPolicy/suspend
podSets:
  - name: launcher
    template: /spec/replicaSpecs/Launcher/template
    count: { path: /spec/replicaSpecs/Launcher/replicas, default: 1 }
    optional: true
  - forEach: /spec/groups
    name: { path: /groupName }
    template: /template
    count:
      product:
        - { path: /replicas, default: 1 }
        - { path: /numOfHosts, default: 1 }
"#;
        let p = Policy::from_yaml("multi.yaml", yaml).unwrap();
        let obj = json!({"spec": {"groups": [
            {"groupName": "Small", "replicas": 3, "template": {}},
            {"groupName": "big", "replicas": 2, "numOfHosts": 4, "template": {}}
        ]}});
        let sets = p.pod_sets(&obj).unwrap();
        assert_eq!(sets.len(), 2, "launcher is optional and absent");
        assert_eq!(sets[0].name, "small");
        assert_eq!(sets[0].count, 3);
        assert_eq!(sets[0].template.as_str(), "/spec/groups/0/template");
        assert_eq!(sets[1].count, 8);
        let with_launcher = json!({"spec": {"replicaSpecs": {"Launcher": {"template": {}}}}});
        let sets = p.pod_sets(&with_launcher).unwrap();
        assert_eq!(sets[0].name, "launcher");
        assert_eq!(sets[0].count, 1);
    }

    #[test]
    fn policy_errors_are_specific() {
        let bad = "name: x\ntarget: {group: g, version: v1, kind: K, resource: Ks}\nsuspend: /spec/suspend\n";
        let err = Policy::from_yaml("k.yaml", bad).unwrap_err().to_string();
        assert!(err.contains("lower-case plural"), "{err}");
        let bad = "name: x\ntarget: {group: g, version: v1, kind: K, resource: ks}\nsuspend: spec.suspend\n";
        let err = Policy::from_yaml("k.yaml", bad).unwrap_err().to_string();
        assert!(err.contains("must start with '/'"), "{err}");
        let bad = "name: x\ntarget: {group: g, version: v1, kind: K, resource: ks}\nsuspend: /spec/suspend\ninvariants: [noSuchRule]\n";
        let err = Policy::from_yaml("k.yaml", bad).unwrap_err().to_string();
        assert!(err.contains("noSuchRule"), "{err}");
    }

    #[test]
    fn duplicate_kinds_are_rejected() {
        let mut set = PolicySet::embedded().unwrap();
        let again = Policy::from_yaml(
            "dup.yaml",
            "name: again\ntarget: {group: batch, version: v1, kind: Job, resource: jobs}\nsuspend: /spec/suspend\n",
        )
        .unwrap();
        let err = set.insert(again).unwrap_err().to_string();
        assert!(err.contains("batch/v1, Kind=Job"), "{err}");
    }

    /// A kind is held by its suspend field or by a scheduling gate, never
    /// both; a gated kind without `enabledByDefault` is left out when no
    /// frameworks are named.
    #[test]
    fn gated_kinds_are_data_too() {
        let set = PolicySet::embedded().unwrap();
        let pod = set.find("", "v1", "Pod").unwrap();
        let gate = pod.gate.as_ref().unwrap();
        assert_eq!(gate.scheduling_gate, "kueue.x-k8s.io/admission");
        assert_eq!(gate.managed_label, "kueue.x-k8s.io/managed");
        assert!(!pod.enabled_by_default);
        let mut defaults = set.clone();
        defaults.retain_default();
        assert!(defaults.find("", "v1", "Pod").is_none());
        assert!(defaults.find("batch", "v1", "Job").is_some());
        let both = "name: x\ntarget: {group: g, version: v1, kind: K, resource: ks}\nsuspend: /spec/suspend\ngate: {schedulingGate: a, managedLabel: b, finalizer: c}\n";
        let err = Policy::from_yaml("x.yaml", both).unwrap_err().to_string();
        assert!(
            err.contains("suspend, gate and podOwner exclude each other"),
            "{err}"
        );
        let neither = "name: x\ntarget: {group: g, version: v1, kind: K, resource: ks}\n";
        let err = Policy::from_yaml("x.yaml", neither)
            .unwrap_err()
            .to_string();
        assert!(err.contains("or gate must name a scheduling gate"), "{err}");
        // Kinds queued through their pods bring the pod integration along
        // (Kueue's ImplicitlyEnabledFrameworkNames), for their pods only.
        let mut owners = set.clone();
        owners.retain_enabled(&["deployment".to_string()]);
        assert_eq!(owners.len(), 2);
        assert!(
            owners
                .find("", "v1", "Pod")
                .unwrap()
                .gate
                .as_ref()
                .unwrap()
                .parents_only
        );
        let mut pods = set.clone();
        pods.retain_enabled(&["pod".to_string(), "statefulset".to_string()]);
        assert!(
            !pods
                .find("", "v1", "Pod")
                .unwrap()
                .gate
                .as_ref()
                .unwrap()
                .parents_only
        );
        let owner_and_gate = "name: x\ntarget: {group: g, version: v1, kind: K, resource: ks}\ngate: {schedulingGate: a, managedLabel: b, finalizer: c}\npodOwner: {template: /spec/template, ready: /status/readyReplicas}\n";
        assert!(Policy::from_yaml("x.yaml", owner_and_gate).is_err());
        // Held while gated, or once ended.
        let gated = serde_json::json!({"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}});
        assert!(gate.holds(&gated));
        assert!(gate.holds(&serde_json::json!({"status": {"phase": "Succeeded"}})));
        assert!(!gate.holds(&serde_json::json!({"spec": {}, "status": {"phase": "Running"}})));
    }

    #[test]
    fn owner_kinds_are_recognised() {
        let set = PolicySet::embedded().unwrap();
        assert!(set.is_integrated("batch/v1", "Job"));
        assert!(!set.is_integrated("batch/v1", "CronJob"));
        assert!(!set.is_integrated("apps/v1", "ReplicaSet"));
        assert!(set.is_integrated("workload.codeflare.dev/v1beta2", "AppWrapper"));
        assert!(set.is_integrated("jobset.x-k8s.io/v1alpha2", "JobSet"));
    }
}
