//! What the controller observed in the cluster, as plain data: each wrapped
//! component, each labelled pod, and the outcome of the last create batch.
//! Small pure readers turn raw objects into these records.

use crate::vocabulary::pointer::At;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// One component (indexed like `status.componentStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObservedComponent {
    /// A GET found it (NotFound → false).
    pub exists: bool,
    /// It has a `deletionTimestamp` (upstream does not count it as deployed).
    pub deleting: bool,
    /// Its own controller declared it failed; see [`component_failed`].
    pub failed: bool,
    /// `metadata.uid` of the live object (empty when missing).
    pub uid: String,
    /// The UID in its controller ownerReference, if it has one. Whether
    /// that makes it this AppWrapper's is the machine's call.
    pub controller_uid: Option<String>,
}

impl ObservedComponent {
    pub const MISSING: ObservedComponent = ObservedComponent {
        exists: false,
        deleting: false,
        failed: false,
        uid: String::new(),
        controller_uid: None,
    };

    /// Read a component object fetched by GET (`None` for NotFound).
    pub fn from_object(api_version: &str, kind: &str, obj: Option<&Value>) -> ObservedComponent {
        match obj {
            None => ObservedComponent::MISSING,
            Some(o) => ObservedComponent {
                exists: true,
                deleting: o
                    .at("/metadata/deletionTimestamp")
                    .is_some_and(|v| !v.is_null()),
                failed: component_failed(api_version, kind, o),
                uid: str_at(o, "/metadata/uid"),
                controller_uid: controller_ref(o).map(|r| r.uid),
            },
        }
    }

    /// Live, and controlled by the object with UID `owner`.
    pub fn controlled_by(&self, owner: &str) -> bool {
        self.exists && !owner.is_empty() && self.controller_uid.as_deref() == Some(owner)
    }
}

fn str_at(obj: &Value, pointer: &str) -> String {
    obj.at(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// An ownerReference with `controller: true`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
}

/// The controller ownerReference of an object, if any.
pub fn controller_ref(obj: &Value) -> Option<OwnerRef> {
    obj.at("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| OwnerRef {
            api_version: str_at(r, "/apiVersion"),
            kind: str_at(r, "/kind"),
            name: str_at(r, "/name"),
            uid: str_at(r, "/uid"),
        })
}

/// One step up a pod's chain of controllers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OwnerLink {
    pub owner: OwnerRef,
    /// A GET found an object of that name with that UID. `false` for an
    /// owner that is gone (or replaced by a same-named object): its
    /// dependents are the garbage collector's.
    pub found: bool,
}

/// Upstream's `getComponentStatus` failure signals: a `batch/v1` Job or a
/// `kubeflow.org/v1` PyTorchJob with a condition `Failed=True`. Ray kinds
/// and everything else: presence only (failure detection off, as upstream).
pub fn component_failed(api_version: &str, kind: &str, obj: &Value) -> bool {
    match (api_version, kind) {
        ("batch/v1", "Job") | ("kubeflow.org/v1", "PyTorchJob") => obj
            .at("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some("Failed")
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            }),
        _ => false,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

/// One pod carrying `workload.codeflare.dev/appwrapper=<name>`. Anyone can
/// put that label on a pod, so the label alone does not make it ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedPod {
    pub name: String,
    pub uid: String,
    /// Its controller, that object's controller, and so on, as far as the
    /// controller read them: up to the AppWrapper, an owner that is gone,
    /// an object with no controller, or a depth limit. Empty: the pod has
    /// no controller.
    pub owners: Vec<OwnerLink>,
    pub phase: PodPhase,
    pub deleting: bool,
    /// `status.containerStatuses[].state.terminated.exitCode`, main
    /// containers only (init containers are ignored, as upstream).
    pub exit_codes: Vec<i64>,
    /// `spec.nodeName`.
    pub node_name: String,
    /// Resources some main container requests or limits with a non-zero
    /// quantity (for Autopilot's NoExecute check).
    pub resources: BTreeSet<String>,
}

impl ObservedPod {
    pub fn new(phase: PodPhase) -> ObservedPod {
        ObservedPod {
            name: String::new(),
            uid: String::new(),
            owners: Vec::new(),
            phase,
            deleting: false,
            exit_codes: Vec::new(),
            node_name: String::new(),
            resources: BTreeSet::new(),
        }
    }

    pub fn failed_with(exit_codes: &[i64]) -> ObservedPod {
        ObservedPod {
            exit_codes: exit_codes.to_vec(),
            ..ObservedPod::new(PodPhase::Failed)
        }
    }

    /// The pod's own facts; its controller chain (`owners`) needs reads of
    /// other objects and is the controller's to fill in.
    pub fn from_pod(pod: &Value) -> ObservedPod {
        let phase = match pod.at("/status/phase").and_then(Value::as_str) {
            Some("Pending") => PodPhase::Pending,
            Some("Running") => PodPhase::Running,
            Some("Succeeded") => PodPhase::Succeeded,
            Some("Failed") => PodPhase::Failed,
            _ => PodPhase::Unknown,
        };
        let exit_codes = pod
            .at("/status/containerStatuses")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c.at("/state/terminated/exitCode").and_then(Value::as_i64))
                    .collect()
            })
            .unwrap_or_default();
        ObservedPod {
            name: str_at(pod, "/metadata/name"),
            uid: str_at(pod, "/metadata/uid"),
            owners: Vec::new(),
            phase,
            deleting: pod
                .at("/metadata/deletionTimestamp")
                .is_some_and(|v| !v.is_null()),
            exit_codes,
            node_name: pod
                .at("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            resources: pod
                .at("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|c| {
                    ["requests", "limits"].into_iter().filter_map(move |k| {
                        c.at(&format!("/resources/{k}")).and_then(Value::as_object)
                    })
                })
                .flatten()
                .filter(|(_, q)| !quantity_is_zero(q))
                .map(|(name, _)| name.clone())
                .collect(),
        }
    }
}

/// Whether a resource quantity (`"0"`, `"0m"`, `"0Gi"`, `0`, `"1"`, ...)
/// is zero: its numeric part, before any suffix, equals zero.
pub fn quantity_is_zero(q: &Value) -> bool {
    match q {
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => {
            let s = s.trim();
            let end = s
                .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
                .unwrap_or(s.len());
            s[..end].parse::<f64>().is_ok_and(|v| v == 0.0)
        }
        _ => true,
    }
}

/// The nodes upstream's Autopilot check flags: those where a Running pod
/// that is not being deleted uses (non-zero request or limit) a resource
/// the node has under a NoExecute label.
pub fn no_execute_nodes(
    pods: &[ObservedPod],
    no_execute: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeSet<String> {
    pods.iter()
        .filter(|p| p.phase == PodPhase::Running && !p.deleting)
        .filter(|p| {
            no_execute
                .get(&p.node_name)
                .is_some_and(|bad| bad.iter().any(|r| p.resources.contains(r)))
        })
        .map(|p| p.node_name.clone())
        .collect()
}

/// Go's `%v` of a `sets.Set[string]`: `map[a:{} b:{}]`, keys sorted.
pub fn go_set_string(set: &BTreeSet<String>) -> String {
    let inner: Vec<String> = set.iter().map(|k| format!("{k}:{{}}")).collect();
    format!("map[{}]", inner.join(" "))
}

/// Upstream's `podStatusSummary` (its Autopilot part is [`no_execute_nodes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PodSummary {
    pub expected: i32,
    pub pending: i32,
    pub running: i32,
    pub succeeded: i32,
    pub failed: i32,
    pub terminal_failure: bool,
}

impl PodSummary {
    /// Count pods by phase and apply the exit-code rules: a non-zero code in
    /// `terminal` is terminal; with `retryable` non-empty, any non-zero code
    /// not in it is terminal.
    pub fn count(
        expected: i32,
        pods: &[ObservedPod],
        terminal: &[i64],
        retryable: &[i64],
    ) -> PodSummary {
        let mut s = PodSummary {
            expected,
            ..Default::default()
        };
        for p in pods {
            match p.phase {
                PodPhase::Pending => s.pending += 1,
                PodPhase::Running if !p.deleting => s.running += 1,
                PodPhase::Running | PodPhase::Unknown => {}
                PodPhase::Succeeded => s.succeeded += 1,
                PodPhase::Failed => {
                    s.failed += 1;
                    for &code in p.exit_codes.iter().filter(|&&c| c != 0) {
                        if terminal.contains(&code) {
                            s.terminal_failure = true;
                        }
                        if !retryable.is_empty() && !retryable.contains(&code) {
                            s.terminal_failure = true;
                        }
                    }
                }
            }
        }
        s
    }
}

/// What happened to one create of the last [`CreateComponents`] batch.
///
/// [`CreateComponents`]: super::machine::Action::CreateComponents
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateResult {
    /// Created; `name` is the server-assigned name (supports `generateName`).
    Created { name: String },
    /// AlreadyExists, then a GET: the existing object's name and the UID in
    /// its controller owner reference, if any.
    AlreadyExists {
        name: String,
        controller_uid: Option<String>,
    },
    /// Any other error. `fatal` is upstream's rule: NoMatch (CRD not
    /// installed) or Invalid; everything else (Forbidden, webhook denial,
    /// a failed GET after AlreadyExists) is retried within the admission
    /// grace period.
    Failed { message: String, fatal: bool },
}

/// Everything observed for one reconcile.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Observed {
    /// Indexed like `status.componentStatus`; a missing entry means NotFound.
    pub components: Vec<ObservedComponent>,
    /// Whether `components` came from uncached reads (upstream issue #416).
    pub components_read_live: bool,
    /// Labelled pods in the AppWrapper's namespace, ours or not.
    pub pods: Vec<ObservedPod>,
    /// Outcomes of the create batch the previous step asked for, indexed by
    /// component; empty when no batch was just run.
    pub create_results: Vec<Option<CreateResult>>,
    /// Autopilot's node monitor: node name → resources flagged NoExecute on
    /// it (see `Autopilot::no_execute_resources`). Read only when
    /// `autopilot.monitorNodes` is on.
    pub no_execute_nodes: BTreeMap<String, BTreeSet<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn failed(codes: &[i64]) -> ObservedPod {
        ObservedPod::failed_with(codes)
    }

    #[test]
    fn counts_by_phase() {
        let mut deleting_running = ObservedPod::new(PodPhase::Running);
        deleting_running.deleting = true;
        let mut deleting_pending = ObservedPod::new(PodPhase::Pending);
        deleting_pending.deleting = true;
        let pods = vec![
            ObservedPod::new(PodPhase::Pending),
            deleting_pending,
            ObservedPod::new(PodPhase::Running),
            deleting_running,
            ObservedPod::new(PodPhase::Succeeded),
            ObservedPod::new(PodPhase::Unknown),
            failed(&[1]),
        ];
        let s = PodSummary::count(4, &pods, &[], &[]);
        assert_eq!((s.pending, s.running, s.succeeded, s.failed), (2, 1, 1, 1));
        assert!(!s.terminal_failure);
    }

    #[test]
    fn exit_code_rules() {
        type Case<'a> = (&'a [i64], &'a [i64], &'a [i64], bool);
        let cases: &[Case] = &[
            (&[1], &[], &[], false),
            (&[3], &[3, 10], &[], true),
            (&[4], &[3, 10], &[], false),
            (&[0], &[0], &[], false), // zero never counts
            (&[10], &[], &[10, 20], false),
            (&[11], &[], &[10, 20], true),
            (&[0], &[], &[10, 20], false),
            (&[10, 11], &[], &[10, 20], true), // any container
            (&[10], &[10], &[10], true),       // terminal wins
            (&[], &[1], &[1], false),          // no terminated containers
        ];
        for (codes, terminal, retryable, want) in cases {
            let s = PodSummary::count(1, &[failed(codes)], terminal, retryable);
            assert_eq!(
                s.terminal_failure, *want,
                "{codes:?} {terminal:?} {retryable:?}"
            );
        }
        // exit codes of non-failed pods are ignored
        let mut ok = ObservedPod::new(PodPhase::Running);
        ok.exit_codes = vec![3];
        assert!(!PodSummary::count(1, &[ok], &[3], &[]).terminal_failure);
    }

    #[test]
    fn quantities() {
        for z in [
            json!("0"),
            json!("0m"),
            json!("0Gi"),
            json!("0.0"),
            json!(0),
            json!("+0"),
            json!("0e3"),
        ] {
            assert!(quantity_is_zero(&z), "{z}");
        }
        for nz in [
            json!("1"),
            json!("100m"),
            json!("1Gi"),
            json!("0.5"),
            json!(2),
            json!("1e3"),
        ] {
            assert!(!quantity_is_zero(&nz), "{nz}");
        }
    }

    #[test]
    fn autopilot_flags_running_pods_using_bad_resources() {
        let gpu_pod = |node: &str, phase: PodPhase| ObservedPod {
            node_name: node.into(),
            resources: ["nvidia.com/gpu".to_string()].into(),
            ..ObservedPod::new(phase)
        };
        let bad: BTreeMap<String, BTreeSet<String>> = [
            (
                "n1".to_string(),
                BTreeSet::from(["nvidia.com/gpu".to_string()]),
            ),
            (
                "n2".to_string(),
                BTreeSet::from(["nvidia.com/gpu".to_string()]),
            ),
            ("n3".to_string(), BTreeSet::from(["other".to_string()])),
        ]
        .into();
        let mut deleting = gpu_pod("n2", PodPhase::Running);
        deleting.deleting = true;
        let pods = vec![
            gpu_pod("n2", PodPhase::Running),
            gpu_pod("n1", PodPhase::Running),
            gpu_pod("n1", PodPhase::Pending),
            deleting,
            gpu_pod("n3", PodPhase::Running),
            gpu_pod("n4", PodPhase::Running),
            ObservedPod {
                node_name: "n1".into(),
                ..ObservedPod::new(PodPhase::Running)
            },
        ];
        let nodes = no_execute_nodes(&pods, &bad);
        assert_eq!(go_set_string(&nodes), "map[n1:{} n2:{}]");
        assert_eq!(go_set_string(&BTreeSet::new()), "map[]");
    }

    #[test]
    fn reads_pods_and_components() {
        let pod = json!({"metadata": {"name": "p", "uid": "pu", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": "n1",
              "initContainers": [{"resources": {"limits": {"example.com/init": "1"}}}],
              "containers": [
                {"resources": {"requests": {"cpu": "0", "nvidia.com/gpu": "2"}, "limits": {"memory": "0Gi"}}},
                {"resources": {"limits": {"example.com/fpga": 1}}}]},
            "status": {"phase": "Failed",
              "initContainerStatuses": [{"state": {"terminated": {"exitCode": 9}}}],
              "containerStatuses": [{"state": {"terminated": {"exitCode": 42}}}, {"state": {"running": {}}}]}});
        assert_eq!(
            ObservedPod::from_pod(&pod),
            ObservedPod {
                name: "p".into(),
                uid: "pu".into(),
                owners: Vec::new(),
                phase: PodPhase::Failed,
                deleting: true,
                exit_codes: vec![42],
                node_name: "n1".into(),
                resources: ["example.com/fpga".to_string(), "nvidia.com/gpu".to_string()].into(),
            }
        );
        let job = json!({"metadata": {"uid": "ju", "ownerReferences": [
                {"apiVersion": "v1", "kind": "X", "name": "x", "uid": "xu"},
                {"apiVersion": "a/v1", "kind": "Y", "name": "y", "uid": "yu", "controller": true}]},
            "status": {"conditions": [{"type": "Failed", "status": "True"}]}});
        assert!(component_failed("batch/v1", "Job", &job));
        assert!(component_failed("kubeflow.org/v1", "PyTorchJob", &job));
        assert!(!component_failed("ray.io/v1", "RayCluster", &job));
        assert!(!component_failed(
            "batch/v1",
            "Job",
            &json!({"status": {"conditions": [{"type": "Failed", "status": "False"}]}})
        ));
        assert_eq!(
            ObservedComponent::from_object("v1", "Pod", None),
            ObservedComponent::MISSING
        );
        assert_eq!(
            ObservedComponent::from_object("batch/v1", "Job", Some(&job)),
            ObservedComponent {
                exists: true,
                deleting: false,
                failed: true,
                uid: "ju".into(),
                controller_uid: Some("yu".into()),
            }
        );
        assert_eq!(
            controller_ref(&job),
            Some(OwnerRef {
                api_version: "a/v1".into(),
                kind: "Y".into(),
                name: "y".into(),
                uid: "yu".into()
            })
        );
        // an ownerReference without `controller: true` is not a controller
        let owned = json!({"metadata": {"ownerReferences": [{"uid": "xu", "controller": false}]}});
        assert_eq!(controller_ref(&owned), None);
        let o = ObservedComponent::from_object("v1", "Pod", Some(&owned));
        assert!(!o.controlled_by("xu"));
        let o = ObservedComponent::from_object("batch/v1", "Job", Some(&job));
        assert!(o.controlled_by("yu") && !o.controlled_by("xu") && !o.controlled_by(""));
    }
}
