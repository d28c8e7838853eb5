//! Kueue's label and annotation keys (`kueue.x-k8s.io/…`), and the
//! finalizer and scheduling gate it puts on objects, spelled once:
//! the webhook writes and checks them, the reconciler reads and sets them,
//! the CLI prints them, and all must agree with upstream.

// ---- On a job (and a pod): what the user asks for ----

/// The LocalQueue a job is submitted to.
pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// The WorkloadPriorityClass a job runs at.
pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
pub const MAX_EXEC_TIME_LABEL: &str = "kueue.x-k8s.io/max-exec-time-seconds";
/// A Workload made beforehand, which the job adopts.
pub const PREBUILT_WORKLOAD_LABEL: &str = "kueue.x-k8s.io/prebuilt-workload-name";
/// On a MultiKueue worker's copy of a kind without `managedBy` (a
/// StatefulSet, a LeaderWorkerSet): the manager's object's UID, from which
/// its Workloads' names are made.
pub const MULTIKUEUE_ORIGIN_UID_ANNOTATION: &str = "kueue.x-k8s.io/multikueue-origin-uid";
pub const STOPPING_ANNOTATION: &str = "kueue.x-k8s.io/stopping";
/// `workloadslicing.EnabledAnnotationKey`.
pub const ELASTIC_JOB_ANNOTATION: &str = "kueue.x-k8s.io/elastic-job";
pub const JOB_MIN_PARALLELISM_ANNOTATION: &str = "kueue.x-k8s.io/job-min-parallelism";
pub const JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: &str =
    "kueue.x-k8s.io/job-completions-equal-parallelism";
pub const ADMISSION_GATED_BY_ANNOTATION: &str = "kueue.x-k8s.io/admission-gated-by";

// ---- On a pod set's template: topology ----

pub const PODSET_REQUIRED_TOPOLOGY_ANNOTATION: &str = "kueue.x-k8s.io/podset-required-topology";
pub const PODSET_PREFERRED_TOPOLOGY_ANNOTATION: &str = "kueue.x-k8s.io/podset-preferred-topology";
pub const PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION: &str =
    "kueue.x-k8s.io/podset-unconstrained-topology";
pub const PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION: &str =
    "kueue.x-k8s.io/podset-slice-required-topology";
pub const PODSET_SLICE_SIZE_ANNOTATION: &str = "kueue.x-k8s.io/podset-slice-size";
pub const PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION: &str =
    "kueue.x-k8s.io/podset-slice-required-topology-constraints";
/// A pod set group named on a template (Kueue's `PodSetGroupName`): the
/// workers' index offset is then not written.
pub const PODSET_GROUP_NAME_ANNOTATION: &str = "kueue.x-k8s.io/podset-group-name";

// ---- On a pod: groups and gating ----

/// Kueue's `ManagedByKueueLabel`: on a gated pod (and a Deployment's pod
/// template), and on what a provisioning check creates.
pub const MANAGED_LABEL: &str = "kueue.x-k8s.io/managed";
/// The managed label's one allowed value.
pub const MANAGED_VALUE: &str = "true";
/// Set on a pod whose parent (a Deployment's or StatefulSet's
/// integration) gated it: the pod is gated without a finalizer of its own.
pub const SUSPENDED_BY_PARENT_ANNOTATION: &str = "kueue.x-k8s.io/pod-suspending-parent";
/// The pod's role: a hash of what admission looks at in its spec.
pub const ROLE_HASH_ANNOTATION: &str = "kueue.x-k8s.io/role-hash";
/// `"false"`: a failed pod of the group is not replaced; the group ends.
pub const RETRIABLE_IN_GROUP_ANNOTATION: &str = "kueue.x-k8s.io/retriable-in-group";
/// `"true"`: the group keeps running; it is never finished by its pods and
/// a replaced pod is ungated into the admitted Workload.
pub const GROUP_SERVING_ANNOTATION: &str = "kueue.x-k8s.io/pod-group-serving";
/// `"true"`: the group's Workload is made without waiting for every pod.
pub const GROUP_FAST_ADMISSION_ANNOTATION: &str = "kueue.x-k8s.io/pod-group-fast-admission";
/// The pod label that holds a pod's index in its group.
pub const POD_INDEX_LABEL_ANNOTATION: &str = "kueue.x-k8s.io/pod-group-pod-index-label";

// ---- On a Workload ----

/// The controller name of a MultiKueue AdmissionCheck.
pub const MULTIKUEUE_CONTROLLER: &str = "kueue.x-k8s.io/multikueue";
/// The uid of the job a Workload was made for.
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
pub const PODSET_LABEL: &str = "kueue.x-k8s.io/podset";
pub const LOCAL_QUEUE_LABEL: &str = "kueue.x-k8s.io/local-queue-name";
pub const CLUSTER_QUEUE_LABEL: &str = "kueue.x-k8s.io/cluster-queue-name";
/// On a group's Workload: made by the pod group integration.
pub const GROUP_WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/is-group-workload";
/// On the owner's Workload: the owner's kind and name.
pub const JOB_OWNER_GVK_ANNOTATION: &str = "kueue.x-k8s.io/job-owner-gvk";
pub const JOB_OWNER_NAME_ANNOTATION: &str = "kueue.x-k8s.io/job-owner-name";
/// On a replica group's Workload: the group's index (Kueue's
/// `ComponentWorkloadIndexAnnotation`).
pub const COMPONENT_WORKLOAD_INDEX_ANNOTATION: &str = "kueue.x-k8s.io/component-workload-index";
/// `workloadslicing.WorkloadSliceReplacementFor`.
pub const SLICE_REPLACEMENT_FOR_ANNOTATION: &str = "kueue.x-k8s.io/workload-slice-replacement-for";
/// The first slice's name in an elastic job's chain of Workload slices, on
/// every slice and every pod of the chain.
pub const WORKLOAD_SLICE_NAME_ANNOTATION: &str = "kueue.x-k8s.io/workload-slice-name";
/// The scheduling gate an elastic job's pods wait behind until a slice
/// admits them.
pub const ELASTIC_JOB_SCHEDULING_GATE: &str = "kueue.x-k8s.io/elastic-job";

// ---- Finalizers and scheduling gates ----

/// Kueue's finalizer on a job's Workload, and on ClusterQueues and
/// ResourceFlavors in use: the job reconciler lets go of it once the
/// Workload is finished, or being deleted with its job stopped, or the job
/// is gone; the queueing engine once nothing uses the queue or flavor.
pub const RESOURCE_IN_USE_FINALIZER: &str = "kueue.x-k8s.io/resource-in-use";
/// Holds the pods of a pod set placed by topology-aware scheduling until
/// the topology ungater gives each its domain (Kueue's
/// `TopologySchedulingGate`); a pod set placed without it loses the gate
/// on start.
pub const TOPOLOGY_GATE: &str = "kueue.x-k8s.io/topology";
/// The Workload of a pod started by an admission (Kueue's
/// `WorkloadAnnotation`).
pub const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";
/// A pod's rank within its pod set for the topology ungater (Kueue's
/// `PodIndexOffsetAnnotation`).
pub const POD_INDEX_OFFSET_ANNOTATION: &str = "kueue.x-k8s.io/pod-index-offset";
/// The label the pod webhook copies a pod's rank into (Kueue's
/// `PodGroupPodIndexLabel`).
pub const POD_GROUP_POD_INDEX_LABEL: &str = "kueue.x-k8s.io/pod-group-pod-index";

// ---- Kubernetes' own ----

/// The node label naming each node (`corev1.LabelHostname`); as a
/// Topology's lowest level it makes every node a domain.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
