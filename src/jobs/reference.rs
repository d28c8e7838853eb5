//! Jobs whose pod templates live in another object (a TrainJob's
//! (Cluster)TrainingRuntime), described as data.
//!
//! A policy's `runtimeRef` names the referenced kinds and where the job
//! names one; the shell fetches that object and [`RuntimeRef::view`] builds
//! the job's *view*: the job with the referenced object mounted at a
//! top-level key (`/runtime`), the job's own patches merged into the
//! referenced templates, and the job's overrides (a node count, resources
//! per node) written over them. Pod sets are then read from the view with
//! the ordinary `podSets` rules. Since those templates are not the job's to
//! edit, a policy's `admissionPatch` says where an admission's node
//! selectors and tolerations go instead: one entry of a list the job keeps
//! for patches, owned by Kueue's manager name.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::policy::Match;
use crate::vocabulary::{
    patch::{self, PatchOp},
    pointer::Pointer,
};

/// Where a job names the object its pod templates come from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuntimeRef {
    /// API group and version of the referenced kinds.
    pub group: String,
    pub version: String,
    /// The field naming the referenced kind, and the kind when it is unset.
    pub kind: KindField,
    /// The field naming the referenced object.
    pub name: Pointer,
    /// The kinds a job may reference.
    pub kinds: Vec<ReferencedKind>,
    /// A top-level key of the view where the referenced object is mounted
    /// (`/runtime`); pod-set rules and overrides read it from there.
    pub mount_at: Pointer,
    /// The job's own patches to the referenced templates, merged in.
    #[serde(default)]
    pub patches: Option<PatchesRule>,
    /// Job fields written over the referenced templates.
    #[serde(default)]
    pub overrides: Vec<Override>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KindField {
    pub path: Pointer,
    pub default: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReferencedKind {
    pub kind: String,
    /// Lower-case plural resource.
    pub resource: String,
    /// Namespaced kinds are read from the job's namespace.
    pub namespaced: bool,
}

/// A list of patch entries in the job, each holding per-element patches
/// (by `name`) for a list in the referenced object, merged as Kubernetes'
/// strategic merge does for these fields (maps merged; `containers`,
/// `initContainers`, `volumes` and `env` merged by `name`; other lists
/// replaced).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchesRule {
    /// The job's list of patch entries (`/spec/runtimePatches`).
    pub list: Pointer,
    /// In each entry, the list of per-element patches.
    pub items: Pointer,
    /// In each per-element patch, what is merged.
    pub item_patch: Pointer,
    /// The list in the view patched, elements matched by `name`.
    pub into: Pointer,
    /// In each element of `into`, what the patch is merged into.
    pub into_field: Pointer,
}

/// Fields set on the elements of a list in the view that match `when`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Override {
    pub for_each: Pointer,
    #[serde(default)]
    pub when: Option<Match>,
    /// A condition on the whole view (absolute pointer): the override
    /// applies only when it holds.
    #[serde(default, rename = "if")]
    pub only_if: Option<Match>,
    pub set: Vec<SetRule>,
}

/// One field set by an override: the first of `from` (absolute pointers
/// into the view) that is present, else `value`, else nothing. In `path`
/// (relative to the element) a token `name=X` steps into the list element
/// whose `name` is X.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetRule {
    pub path: Pointer,
    #[serde(default)]
    pub from: Vec<Pointer>,
    #[serde(default)]
    pub value: Option<Value>,
    /// Taken off an integer found (`from`), down to `atLeast`.
    #[serde(default)]
    pub less: Option<i64>,
    #[serde(default)]
    pub at_least: Option<i64>,
}

/// Where an admission's pod set info is written when the templates are not
/// the job's (Kueue's TrainJob `RunWithPodSetsInfo`): one entry of `list`,
/// the one whose `key` field is `owner`, added by the webhook on create as
/// `created` (plus the key).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionPatch {
    pub list: Pointer,
    pub key: String,
    pub owner: String,
    #[serde(default)]
    pub created: Option<Value>,
    /// In the entry, the list written: one element per pod set,
    /// `{name: <pod set>, ...}` with the info at `template`.
    pub pod_sets: Pointer,
    /// In each element, the pod template the info fills.
    pub template: Pointer,
}

/// The referenced object a job needs, as the shell fetches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub kind: ReferencedKind,
    pub name: String,
}

/// Why a job's reference cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// Kueue's words (`getChildJobSet`).
    #[error("unsupported runtime: {0}")]
    Unsupported(String),
    #[error("{field}: must name the referenced object")]
    NoName { field: String },
    /// Kueue's words when the runtime cannot be read.
    #[error("runtime '{0}' not found")]
    NotFound(String),
}

impl RuntimeRef {
    /// The object `job` references.
    pub fn reference(&self, job: &Value) -> Result<Reference, ReferenceError> {
        let kind = match self.kind.path.resolve(job) {
            Some(Value::String(s)) if !s.is_empty() => s.as_str(),
            _ => self.kind.default.as_str(),
        };
        let Some(k) = self.kinds.iter().find(|k| k.kind == kind) else {
            return Err(ReferenceError::Unsupported(format!(
                "{kind}.{}",
                self.group
            )));
        };
        match self.name.resolve(job) {
            Some(Value::String(n)) if !n.is_empty() => Ok(Reference {
                kind: k.clone(),
                name: n.clone(),
            }),
            _ => Err(ReferenceError::NoName {
                field: self.name.field_path(),
            }),
        }
    }

    /// The job with `referenced` mounted, patched and overridden.
    pub fn view(&self, job: &Value, referenced: &Value) -> Value {
        let mut view = job.clone();
        if let (Value::Object(m), [key]) = (&mut view, self.mount_at.tokens()) {
            m.insert(key.clone(), referenced.clone());
        }
        if let Some(p) = &self.patches {
            apply_patches(p, &mut view);
        }
        for o in &self.overrides {
            apply_override(o, &mut view);
        }
        view
    }
}

fn apply_patches(rule: &PatchesRule, view: &mut Value) {
    let patches: Vec<(String, Value)> = rule
        .list
        .resolve(view)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| rule.items.resolve(entry).and_then(Value::as_array))
        .flatten()
        .filter_map(|item| {
            let name = item.get("name")?.as_str()?.to_string();
            Some((name, rule.item_patch.resolve(item)?.clone()))
        })
        .collect();
    let Some(Value::Array(targets)) = view.pointer_mut(rule.into.as_str()) else {
        return;
    };
    for (name, p) in patches {
        for t in targets.iter_mut() {
            if t.get("name").and_then(Value::as_str) != Some(&name) {
                continue;
            }
            if let Some(slot) = pointer_mut_or_create(t, rule.into_field.tokens()) {
                merge(slot, &p);
            }
        }
    }
}

/// Lists merged element by element on `name` (the strategic merge keys of
/// these pod fields); every other list is replaced.
const MERGED_BY_NAME: &[&str] = &["containers", "initContainers", "volumes", "env"];

/// Strategic-merge-like: objects merged key by key (`null` removes), named
/// lists merged by name, other values replaced.
pub fn merge(base: &mut Value, patch: &Value) {
    merge_at(base, patch, "");
}

fn merge_at(base: &mut Value, patch: &Value, key: &str) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    b.remove(k);
                    continue;
                }
                match b.get_mut(k) {
                    Some(slot) => merge_at(slot, v, k),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(b), Value::Array(p)) if MERGED_BY_NAME.contains(&key) => {
            for item in p {
                let name = item.get("name");
                match b
                    .iter_mut()
                    .find(|x| name.is_some() && x.get("name") == name)
                {
                    Some(slot) => merge_at(slot, item, ""),
                    None => b.push(item.clone()),
                }
            }
        }
        (b, p) => *b = p.clone(),
    }
}

fn apply_override(o: &Override, view: &mut Value) {
    if o.only_if.as_ref().is_some_and(|c| !c.holds(view)) {
        return;
    }
    let values: Vec<Option<Value>> = o
        .set
        .iter()
        .map(|s| {
            let found = s
                .from
                .iter()
                .find_map(|f| f.resolve(view).filter(|v| !v.is_null()).cloned());
            match (found, s.less) {
                (Some(Value::Number(n)), Some(less)) => n.as_i64().map(|n| {
                    let v = n.saturating_sub(less);
                    Value::from(s.at_least.map_or(v, |floor| v.max(floor)))
                }),
                (found, _) => found.or_else(|| s.value.clone()),
            }
        })
        .collect();
    let Some(Value::Array(items)) = view.pointer_mut(o.for_each.as_str()) else {
        return;
    };
    for item in items.iter_mut() {
        if o.when.as_ref().is_some_and(|w| !w.holds(item)) {
            continue;
        }
        for (s, v) in o.set.iter().zip(&values) {
            let Some(v) = v else { continue };
            if let Some(slot) = pointer_mut_or_create(item, s.path.tokens()) {
                *slot = v.clone();
            }
        }
    }
}

/// Steps through `tokens`, creating missing object keys; `name=X` steps
/// into the list element named X (never created: `None` without one).
fn pointer_mut_or_create<'v>(mut cur: &'v mut Value, tokens: &[String]) -> Option<&'v mut Value> {
    for t in tokens {
        if let Some(name) = t.strip_prefix("name=") {
            cur = cur
                .as_array_mut()?
                .iter_mut()
                .find(|x| x.get("name").and_then(Value::as_str) == Some(name))?;
            continue;
        }
        if cur.is_null() {
            *cur = Value::Object(Map::new());
        }
        cur = match cur {
            Value::Object(m) => m.entry(t.clone()).or_insert(Value::Null),
            Value::Array(a) => a.get_mut(t.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// One admitted pod set's info, as written into the job's own patch entry.
#[derive(Debug, Clone, PartialEq)]
pub struct InfoEntry<'a> {
    pub name: &'a str,
    pub labels: &'a std::collections::BTreeMap<String, String>,
    pub annotations: &'a std::collections::BTreeMap<String, String>,
    pub node_selector: &'a std::collections::BTreeMap<String, String>,
    pub tolerations: &'a [Value],
}

impl AdmissionPatch {
    /// Index of the entry owned by `owner` in the job's list.
    fn entry(&self, job: &Value) -> Option<usize> {
        self.list
            .resolve(job)?
            .as_array()?
            .iter()
            .position(|e| e.get(&self.key).and_then(Value::as_str) == Some(&self.owner))
    }

    /// The entry the webhook adds on create.
    pub fn created_entry(&self) -> Value {
        let mut e = match &self.created {
            Some(Value::Object(m)) => Value::Object(m.clone()),
            _ => json!({}),
        };
        e[&self.key] = json!(self.owner);
        e
    }

    /// The webhook's addition on create (Kueue's TrainJob defaulter appends
    /// it whatever the job holds); a job that already has one is left as
    /// it is (a second entry with the same key would be refused by the
    /// list's map key).
    pub fn on_create(&self, job: &Value, ops: &mut Vec<PatchOp>) {
        if self.entry(job).is_some() {
            return;
        }
        match self.list.resolve(job) {
            Some(Value::Array(_)) => ops.push(PatchOp {
                op: "add",
                path: format!("{}/-", self.list.as_str()),
                value: self.created_entry(),
            }),
            _ => {
                let _ = patch::set(job, &self.list, json!([self.created_entry()]), ops);
            }
        }
    }

    /// Writes the admission's pod set infos into the owned entry (adding
    /// it when missing), replacing what it held (Kueue's
    /// `RunWithPodSetsInfo`: labels, annotations, node selector,
    /// tolerations per pod set, empty ones left out).
    pub fn start(&self, job: &Value, infos: &[InfoEntry<'_>], ops: &mut Vec<PatchOp>) {
        let items: Vec<Value> = infos
            .iter()
            .map(|i| {
                let mut item = json!({"name": i.name});
                let mut t = json!({});
                let map = |m: &std::collections::BTreeMap<String, String>| json!(m);
                if !i.labels.is_empty() {
                    t["metadata"]["labels"] = map(i.labels);
                }
                if !i.annotations.is_empty() {
                    t["metadata"]["annotations"] = map(i.annotations);
                }
                if !i.node_selector.is_empty() {
                    t["spec"]["nodeSelector"] = map(i.node_selector);
                }
                if !i.tolerations.is_empty() {
                    t["spec"]["tolerations"] = json!(i.tolerations);
                }
                if let Some(slot) = pointer_mut_or_create(&mut item, self.template.tokens()) {
                    *slot = t;
                }
                item
            })
            .collect();
        match self.entry(job) {
            Some(i) => {
                let at = Pointer::parse(&format!("{}/{i}", self.list.as_str()))
                    .map(|p| p.child(&self.pod_sets));
                if let Ok(at) = at {
                    let _ = patch::set(job, &at, Value::Array(items), ops);
                }
            }
            None => {
                let mut entry = self.created_entry();
                if let Some(slot) = pointer_mut_or_create(&mut entry, self.pod_sets.tokens()) {
                    *slot = Value::Array(items);
                }
                match self.list.resolve(job) {
                    Some(Value::Array(_)) => ops.push(PatchOp {
                        op: "add",
                        path: format!("{}/-", self.list.as_str()),
                        value: entry,
                    }),
                    _ => {
                        let _ = patch::set(job, &self.list, json!([entry]), ops);
                    }
                }
            }
        }
    }

    /// Empties the owned entry's pod set list (Kueue's
    /// `RestorePodSetsInfo` sets it to nil).
    pub fn restore(&self, job: &Value, ops: &mut Vec<PatchOp>) {
        let Some(i) = self.entry(job) else { return };
        let Ok(at) =
            Pointer::parse(&format!("{}/{i}", self.list.as_str())).map(|p| p.child(&self.pod_sets))
        else {
            return;
        };
        if at.resolve(job).is_some() {
            ops.push(PatchOp {
                op: "remove",
                path: at.as_str().to_string(),
                value: Value::Null,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_by_name_for_containers_and_replaces_other_lists() {
        let mut base = json!({"spec": {"containers": [{"name": "node", "image": "a"}, {"name": "side"}],
                              "tolerations": [{"key": "x"}], "nodeSelector": {"a": "1"}}});
        merge(
            &mut base,
            &json!({"spec": {"containers": [{"name": "node", "image": "b"}, {"name": "new"}],
                             "tolerations": [{"key": "y"}], "nodeSelector": {"b": "2"}}}),
        );
        assert_eq!(
            base,
            json!({"spec": {"containers": [{"name": "node", "image": "b"}, {"name": "side"}, {"name": "new"}],
                            "tolerations": [{"key": "y"}], "nodeSelector": {"a": "1", "b": "2"}}})
        );
    }

    #[test]
    fn name_tokens_step_into_named_elements_only() {
        let mut v = json!({"containers": [{"name": "a"}, {"name": "node"}]});
        let tokens: Vec<String> = ["containers", "name=node", "resources"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        *pointer_mut_or_create(&mut v, &tokens).unwrap() = json!({"limits": {}});
        assert_eq!(v["containers"][1]["resources"], json!({"limits": {}}));
        let missing: Vec<String> = ["containers", "name=other", "resources"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(pointer_mut_or_create(&mut v, &missing).is_none());
    }

    use crate::jobs::{
        policy::{Policy, PolicySet},
        workload::{self, PodSetInfo},
    };
    use std::sync::Arc;

    fn trainjob_policy() -> Arc<Policy> {
        PolicySet::embedded()
            .unwrap()
            .find("trainer.kubeflow.org", "v1alpha1", "TrainJob")
            .unwrap()
            .clone()
    }

    /// A runtime as the trainer ships them: an initializer job and the
    /// trainer's "node" job.
    fn runtime() -> Value {
        json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
               "metadata": {"name": "torch"},
               "spec": {"mlPolicy": {"numNodes": 2, "torch": {}},
                        "template": {"spec": {"replicatedJobs": [
            {"name": "dataset-initializer",
             "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
                          "spec": {"template": {"spec": {"containers": [
                              {"name": "dataset-initializer", "image": "init", "resources": {"requests": {"cpu": "1"}}}]}}}}},
            {"name": "node",
             "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                          "spec": {"parallelism": 5, "template": {"spec": {"containers": [
                              {"name": "node", "image": "torch", "resources": {"requests": {"cpu": "2"}}}]}}}}}
        ]}}}})
    }

    fn trainjob(trainer: Value) -> Value {
        json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
               "metadata": {"name": "t", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                            "labels": {"kueue.x-k8s.io/queue-name": "q"}},
               "spec": {"runtimeRef": {"name": "torch"}, "suspend": true, "trainer": trainer,
                        "runtimePatches": [{"manager": "kueue.x-k8s.io/manager",
                                            "trainingRuntimeSpec": {"template": {"spec": {}}}}]}})
    }

    #[test]
    fn trainjob_pod_sets_come_from_the_runtime_with_the_jobs_overrides() {
        let p = trainjob_policy();
        let rule = p.runtime_ref.as_ref().unwrap();
        let job = trainjob(json!({"numNodes": 3, "resourcesPerNode": {"requests": {"cpu": "4"}}}));
        let r = rule.reference(&job).unwrap();
        assert_eq!(
            (r.kind.kind.as_str(), r.name.as_str()),
            ("ClusterTrainingRuntime", "torch")
        );
        assert!(!r.kind.namespaced);
        let view = rule.view(&job, &runtime());
        let sets = workload::pod_sets(&p, &view).unwrap();
        let shape: Vec<(&str, i64)> = sets.iter().map(|s| (s.name.as_str(), s.count)).collect();
        assert_eq!(shape, vec![("dataset-initializer", 1), ("node", 3)]);
        assert_eq!(
            sets[1].template["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "4"}})
        );
        // Without numNodes: the runtime's mlPolicy, not the job's parallelism.
        let view = rule.view(&trainjob(json!({})), &runtime());
        assert_eq!(workload::pod_sets(&p, &view).unwrap()[1].count, 2);
        // The user's runtime patches reach the templates.
        let mut job = trainjob(json!({}));
        job["spec"]["runtimePatches"].as_array_mut().unwrap().push(json!({
            "manager": "example.com/me",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node",
                "template": {"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}}}]}}}}));
        let view = rule.view(&job, &runtime());
        let sets = workload::pod_sets(&p, &view).unwrap();
        assert_eq!(
            sets[1].template["spec"]["nodeSelector"],
            json!({"disk": "ssd"})
        );
        assert_eq!(sets[1].template["spec"]["containers"][0]["image"], "torch");
        // A namespaced runtime, and one the integration does not know.
        let mut job = trainjob(json!({}));
        job["spec"]["runtimeRef"]["kind"] = json!("TrainingRuntime");
        assert!(rule.reference(&job).unwrap().kind.namespaced);
        job["spec"]["runtimeRef"]["kind"] = json!("Other");
        assert_eq!(
            rule.reference(&job).unwrap_err().to_string(),
            "unsupported runtime: Other.trainer.kubeflow.org"
        );
        assert_eq!(
            ReferenceError::NotFound("torch".into()).to_string(),
            "runtime 'torch' not found"
        );
    }

    /// Trainer v2.2's MPI plugin (`EnforceMLPolicy`): with
    /// `runLauncherAsNode` the launcher is one of the TrainJob's
    /// `numNodes`, so the "node" job runs one fewer, at least one; without
    /// the TrainJob's `numNodes` the runtime's count stands.
    #[test]
    fn an_mpi_runtime_that_runs_its_launcher_as_a_node_has_one_node_fewer() {
        let p = trainjob_policy();
        let rule = p.runtime_ref.as_ref().unwrap();
        let mpi = |as_node: bool| {
            json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
                   "metadata": {"name": "torch"},
                   "spec": {"mlPolicy": {"numNodes": 2, "mpi": {"runLauncherAsNode": as_node}},
                            "template": {"spec": {"replicatedJobs": [
                {"name": "launcher",
                 "template": {"spec": {"template": {"spec": {"containers": [
                     {"name": "node", "image": "mpi", "resources": {"requests": {"cpu": "1"}}}]}}}}},
                {"name": "node",
                 "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                              "spec": {"template": {"spec": {"containers": [
                                  {"name": "node", "image": "mpi", "resources": {"requests": {"cpu": "2"}}}]}}}}}
            ]}}}})
        };
        let shape = |trainer: Value, as_node: bool| -> Vec<(String, i64)> {
            let view = rule.view(&trainjob(trainer), &mpi(as_node));
            workload::pod_sets(&p, &view)
                .unwrap()
                .into_iter()
                .map(|s| (s.name, s.count))
                .collect()
        };
        let pairs = |n: i64| vec![("launcher".to_string(), 1), ("node".to_string(), n)];
        assert_eq!(shape(json!({"numNodes": 4}), true), pairs(3));
        assert_eq!(shape(json!({"numNodes": 4}), false), pairs(4));
        assert_eq!(shape(json!({"numNodes": 1}), true), pairs(1));
        assert_eq!(shape(json!({}), true), pairs(2));
    }

    #[test]
    fn trainjob_starts_through_its_own_patch_entry_and_stops_by_emptying_it() {
        let p = trainjob_policy();
        let job = trainjob(json!({"numNodes": 3}));
        let view = p.runtime_ref.as_ref().unwrap().view(&job, &runtime());
        let info = |name: &str| PodSetInfo {
            name: name.into(),
            labels: [("kueue.x-k8s.io/podset".to_string(), name.to_string())].into(),
            node_selector: [("zone".to_string(), "a".to_string())].into(),
            tolerations: vec![json!({"key": "spot", "operator": "Exists"})],
            ..Default::default()
        };
        let infos = [info("dataset-initializer"), info("node")];
        let ops = workload::start_patch(&p, &view, &infos).unwrap();
        assert!(
            ops.iter().all(|o| !o.path.starts_with("/runtime")),
            "{ops:?}"
        );
        // First the entry, still suspended (the trainer's webhook allows
        // runtimePatches to change only then), then the switch alone.
        let filled = workload::apply(&job, &ops).unwrap();
        assert_eq!(filled["spec"]["suspend"], true);
        let view = p.runtime_ref.as_ref().unwrap().view(&filled, &runtime());
        let ops = workload::start_patch(&p, &view, &infos).unwrap();
        assert!(
            ops.iter()
                .all(|o| o.op == "test" || o.path == "/spec/suspend"),
            "{ops:?}"
        );
        let started = workload::apply(&filled, &ops).unwrap();
        assert_eq!(started["spec"]["suspend"], false);
        // Stopped, it still carries its admission (its filled entry) until
        // put back; one never started does not.
        assert!(workload::carries_admission(&p, &filled));
        assert!(!workload::carries_admission(&p, &job));
        let entry = &started["spec"]["runtimePatches"][0];
        assert_eq!(entry["manager"], "kueue.x-k8s.io/manager");
        let items = &entry["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"];
        assert_eq!(items[1]["name"], "node");
        assert_eq!(
            items[1]["template"]["spec"]["template"],
            json!({"metadata": {"labels": {"kueue.x-k8s.io/podset": "node"}},
                   "spec": {"nodeSelector": {"zone": "a"},
                            "tolerations": [{"key": "spot", "operator": "Exists"}]}})
        );
        // The started job's pods, as the trainer would build them, carry it.
        let view = p.runtime_ref.as_ref().unwrap().view(&started, &runtime());
        let sets = workload::pod_sets(&p, &view).unwrap();
        assert_eq!(
            sets[1].template["spec"]["nodeSelector"],
            json!({"zone": "a"})
        );
        // Stopped and restored: back as queued.
        let stopped = workload::apply(&started, &workload::suspend_patch(&p, &started)).unwrap();
        let restored =
            workload::apply(&stopped, &workload::restore_patch(&p, &stopped, &[])).unwrap();
        assert_eq!(restored, job);
        // Nothing to restore on a job never started.
        assert!(workload::restore_patch(&p, &job, &[]).is_empty());
    }

    #[test]
    fn the_trainjob_webhook_adds_kueues_patch_entry_once() {
        let p = trainjob_policy();
        let a = p.admission_patch.as_ref().unwrap();
        let mut ops = Vec::new();
        let bare = json!({"spec": {"runtimeRef": {"name": "torch"}}});
        a.on_create(&bare, &mut ops);
        let with = workload::apply(&bare, &ops).unwrap();
        assert_eq!(
            with["spec"]["runtimePatches"],
            json!([{"manager": "kueue.x-k8s.io/manager",
                    "trainingRuntimeSpec": {"template": {"spec": {}}}}])
        );
        let mut again = Vec::new();
        a.on_create(&with, &mut again);
        assert!(again.is_empty());
        // Appended after the user's own entries.
        let mut ops = Vec::new();
        let users = json!({"spec": {"runtimePatches": [{"manager": "me"}]}});
        a.on_create(&users, &mut ops);
        let with = workload::apply(&users, &ops).unwrap();
        assert_eq!(
            with["spec"]["runtimePatches"][1]["manager"],
            "kueue.x-k8s.io/manager"
        );
    }
}
