//! An elastic job whose autoscaler scales another object, described as
//! data: a RayJob under in-tree autoscaling runs on the RayCluster KubeRay
//! made for it, and Ray's autoscaler changes that cluster's worker counts,
//! not the job's. Kueue v0.19.2 reads the pod sets' counts from the cluster
//! (`raycluster.UpdatePodSets`) and records them, with the cluster's
//! generation, in two annotations on the job
//! (`GetWorkloadslicingRayClusterCustomAnnotations`); the generation names
//! the job's next slice (`GetWorkloadNameExtraPart`), the job's own
//! generation not changing when the cluster scales.
//!
//! The shell reads the object a job names ([`Autoscaled::object_name`]);
//! [`Autoscaled::follow`] gives the job as its slices are planned from and
//! the annotation patch, if the job does not carry them yet.

use crate::vocabulary::pointer::At;
use serde::Deserialize;
use serde_json::{json, Value};

use super::policy::{Policy, Target};
use super::workload;
use crate::vocabulary::{
    patch::{self, PatchOp},
    pointer::Pointer,
};

/// A policy's `autoscaled` rule.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Autoscaled {
    /// The kind of the object the autoscaler scales (read in the job's
    /// namespace).
    pub object: Target,
    /// The field of the job naming that object.
    pub name: Pointer,
    /// The job field (a boolean) that turns autoscaling on; without it the
    /// job's own counts stand and only the annotations are kept.
    pub when: Pointer,
    /// The object's list of groups, and the job's.
    pub groups: Pointer,
    pub into: Pointer,
    /// A group's name field, in both lists.
    pub key: Pointer,
    /// A group's count field: an object's group without it keeps the job's.
    pub count: Pointer,
    /// The fields of a group its pod set's count is read from (names),
    /// copied from the object's group over the job's (removed where the
    /// object's has none).
    pub copy: Vec<String>,
    /// The job's annotation of its pod sets' counts, and of the object's
    /// generation.
    pub sizes_annotation: String,
    pub generation_annotation: String,
}

/// The job as its slices are planned from, and what to write first.
#[derive(Debug, Clone, PartialEq)]
pub struct Followed {
    /// The job with the object's counts, and the annotations as they are
    /// to be.
    pub job: Value,
    /// The JSON patch setting the annotations (a `test` of the job's
    /// `resourceVersion` first); empty when the job carries them already.
    pub patch: Vec<PatchOp>,
}

impl Autoscaled {
    /// The object the job names; `None` while it names none.
    pub fn object_name<'j>(&self, job: &'j Value) -> Option<&'j str> {
        self.name
            .resolve(job)
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
    }

    fn autoscaling(&self, job: &Value) -> bool {
        self.when.resolve(job).and_then(Value::as_bool) == Some(true)
    }

    /// Kueue's `UpdatePodSets` then its custom annotations, for an elastic
    /// job: `object` is the object read (`None`: it names none, or it is
    /// not found). `Err`: the object has a group the job has not (Kueue's
    /// words), or the job's pod sets cannot be read.
    pub fn follow(
        &self,
        policy: &Policy,
        job: &Value,
        object: Option<&Value>,
    ) -> Result<Followed, String> {
        let mut out = job.clone();
        if let (true, Some(obj)) = (self.autoscaling(job), object) {
            self.copy_counts(&mut out, obj)?;
        }
        // Go's encoding of Kueue's `PodSetReplicaSize`: name, then count.
        let sizes: Vec<String> = workload::pod_sets(policy, &out)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|ps| {
                format!(
                    r#"{{"name":{},"count":{}}}"#,
                    Value::String(ps.name),
                    ps.count
                )
            })
            .collect();
        let generation = object
            .and_then(|o| o.at("/metadata/generation"))
            .and_then(Value::as_i64)
            .map(|g| g.to_string())
            .unwrap_or_default();
        let wanted = [
            (&self.sizes_annotation, format!("[{}]", sizes.join(","))),
            (&self.generation_annotation, generation),
        ];
        let mut ops = Vec::new();
        for (key, value) in wanted {
            patch::set_annotation(job, key, &value, &mut ops);
            if !out["metadata"]["annotations"].is_object() {
                out["metadata"]["annotations"] = json!({});
            }
            out["metadata"]["annotations"][key.as_str()] = Value::String(value);
        }
        let patch = if ops.is_empty() {
            ops
        } else {
            let mut p = workload::version_test(job);
            p.extend(ops);
            p
        };
        Ok(Followed { job: out, patch })
    }

    /// The object's groups' counts written over the job's, matched by name.
    fn copy_counts(&self, job: &mut Value, obj: &Value) -> Result<(), String> {
        let name = |v: &Value| {
            self.key
                .resolve(v)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let ours = self.into.as_str();
        for group in self
            .groups
            .resolve(obj)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let g = name(group);
            let Some(target) = job
                .pointer_mut(ours)
                .and_then(Value::as_array_mut)
                .and_then(|list| list.iter_mut().find(|w| name(w) == g))
            else {
                return Err(format!(
                    "PodSet name mismatch: {} {} has worker group {g} which is not found in Ray object {} spec",
                    self.object.kind,
                    obj.at("/metadata/name").and_then(Value::as_str).unwrap_or_default(),
                    job.at("/metadata/name").and_then(Value::as_str).unwrap_or_default(),
                ));
            };
            if self.count.resolve(group).is_none_or(Value::is_null) {
                continue;
            }
            let Some(to) = target.as_object_mut() else {
                continue;
            };
            for key in &self.copy {
                match group.get(key) {
                    Some(v) if !v.is_null() => {
                        to.insert(key.clone(), v.clone());
                    }
                    _ => {
                        to.remove(key);
                    }
                }
            }
        }
        Ok(())
    }

    /// Kueue's `GetWorkloadNameExtraPart`: the job's generation, then the
    /// object's as the job records it, when it does.
    pub fn name_extra(&self, job: &Value, generation: i64) -> String {
        match job
            .at("/metadata/annotations")
            .and_then(|a| a.get(&self.generation_annotation))
            .and_then(Value::as_str)
            .filter(|g| !g.is_empty())
        {
            Some(g) => format!("{generation}_{g}"),
            None => generation.to_string(),
        }
    }
}

#[cfg(test)]
mod tests;
