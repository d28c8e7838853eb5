//! Kueue's `FindAncestorJobManagedByKueue`, pure: does a job created by
//! another integrated kind (its controller) have an ancestor batchgate
//! queues? Then that ancestor's Workload governs it; else it is queued on
//! its own, its parents notwithstanding (a queued Job a JobSet without a
//! queue made). The walk follows controller references up through the
//! enabled integrated kinds, reading each parent by name; the caller reads
//! what it asks for and walks again.
//!
//! The webhook walks it through its rounds of reads before holding a
//! child; the job reconciler walks it with live reads before governing a
//! queued child, with the same manageJobsWithoutQueueName, so the two
//! agree on who queues it.

use crate::vocabulary::pointer::At;
use serde_json::Value;

use super::policy::PolicySet;
use crate::vocabulary::keys::QUEUE_NAME_LABEL;

/// Kueue's `managedOwnersChainLimit`.
pub const CHAIN_LIMIT: usize = 10;

/// A parent to read, in the child's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParentKey {
    pub group: String,
    pub version: String,
    /// Lower-case plural resource.
    pub resource: String,
    pub name: String,
}

/// What the caller knows of a parent.
#[derive(Debug, Clone, PartialEq)]
pub enum Look {
    Found(Value),
    /// Not there (404).
    Missing,
    /// The read failed, with the apiserver's words.
    Failed(String),
    /// Not read yet.
    NotYet,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ancestry {
    /// An ancestor is queued (or every job is managed): the job is its to
    /// govern.
    Managed,
    /// No ancestor is: the job is governed on its own.
    TopLevel,
    /// This parent is to be read first.
    Read(ParentKey),
    /// Kueue's errors, in the words its webhook answers with.
    Refused(String),
}

/// Does `obj` have a controller of an integrated kind (Kueue's
/// `IsOwnerManagedByKueueForObject`)?
pub fn has_integrated_controller(policies: &PolicySet, obj: &Value) -> bool {
    controller(obj).is_some_and(|o| policies.is_integrated(o.api_version, o.kind))
}

struct Owner<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    uid: &'a str,
}

fn controller(obj: &Value) -> Option<Owner<'_>> {
    let o = obj
        .at("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|o| o.get("controller") == Some(&Value::Bool(true)))?;
    let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or_default();
    Some(Owner {
        api_version: s("apiVersion"),
        kind: s("kind"),
        name: s("name"),
        uid: s("uid"),
    })
}

fn uid(obj: &Value) -> &str {
    obj.at("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Walks up from `obj`. `manage_all`: manageJobsWithoutQueueName (every
/// enabled kind's object is managed, queued or not). Differences from
/// Kueue: the walk stops at a kind that is not enabled (Kueue goes on
/// through any kind it knows), and an AppWrapper parent always governs
/// (batchgate runs the AppWrapper's lifecycle itself).
pub fn walk(
    policies: &PolicySet,
    manage_all: bool,
    obj: &Value,
    read: &mut dyn FnMut(&ParentKey) -> Look,
) -> Ancestry {
    let mut seen: Vec<String> = vec![uid(obj).to_string()];
    let mut current = obj.clone();
    let mut managed = false;
    let done = |managed: bool| {
        if managed {
            Ancestry::Managed
        } else {
            Ancestry::TopLevel
        }
    };
    loop {
        let Some(owner) = controller(&current) else {
            return done(managed);
        };
        if owner.api_version == crate::appwrapper::APPWRAPPER_API_VERSION
            && owner.kind == crate::appwrapper::APPWRAPPER_KIND
        {
            return Ancestry::Managed;
        }
        let (group, version) = owner
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", owner.api_version));
        let Some(policy) = policies.find(group, version, owner.kind) else {
            return done(managed);
        };
        let key = ParentKey {
            group: group.to_string(),
            version: version.to_string(),
            resource: policy.target.resource.clone(),
            name: owner.name.to_string(),
        };
        let expected_uid = owner.uid.to_string();
        let parent = match read(&key) {
            Look::NotYet => return Ancestry::Read(key),
            Look::Failed(e) => return Ancestry::Refused(e),
            // The apiserver's NotFound words, as Kueue's webhook answers
            // with the status of its failed read.
            Look::Missing => {
                let resource = match group {
                    "" => key.resource.clone(),
                    g => format!("{}.{g}", key.resource),
                };
                return Ancestry::Refused(format!("{resource} \"{}\" not found", key.name));
            }
            Look::Found(p) => p,
        };
        // A reference to an object that is not the one named: stop.
        if uid(&parent) != expected_uid {
            return done(managed);
        }
        let queued = parent
            .at("/metadata/labels")
            .and_then(|l| l.get(QUEUE_NAME_LABEL))
            .and_then(Value::as_str)
            .is_some_and(|q| !q.is_empty());
        managed |= manage_all || queued;
        let parent_uid = uid(&parent).to_string();
        if seen.contains(&parent_uid) {
            return Ancestry::Refused("cyclic ownership".into());
        }
        seen.push(parent_uid);
        if seen.len() > CHAIN_LIMIT + 1 {
            return Ancestry::Refused("managed owner chain limit reached".into());
        }
        current = parent;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    fn obj(api_version: &str, kind: &str, name: &str, queue: Option<&str>) -> Value {
        let mut o = json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": "ns", "uid": name}});
        if let Some(q) = queue {
            o["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": q});
        }
        o
    }

    fn owned_by(mut o: Value, parent: &Value) -> Value {
        o["metadata"]["ownerReferences"] = json!([{
            "apiVersion": parent["apiVersion"], "kind": parent["kind"],
            "name": parent["metadata"]["name"], "uid": parent["metadata"]["uid"],
            "controller": true}]);
        o
    }

    fn job(name: &str, queue: Option<&str>) -> Value {
        obj("batch/v1", "Job", name, queue)
    }

    fn jobset(name: &str, queue: Option<&str>) -> Value {
        obj("jobset.x-k8s.io/v1alpha2", "JobSet", name, queue)
    }

    fn mpijob(name: &str, queue: Option<&str>) -> Value {
        obj("kubeflow.org/v2beta1", "MPIJob", name, queue)
    }

    /// The walk to its end, reading from `cluster` (by name), with the
    /// number of reads it asked for.
    fn resolve(manage_all: bool, o: &Value, cluster: &[Value]) -> (Ancestry, usize) {
        let policies = PolicySet::embedded().unwrap();
        let by_name: HashMap<String, Value> = cluster
            .iter()
            .map(|c| {
                (
                    c["metadata"]["name"].as_str().unwrap().to_string(),
                    c.clone(),
                )
            })
            .collect();
        let mut known: HashMap<ParentKey, Look> = HashMap::new();
        for rounds in 0..20 {
            let mut read = |k: &ParentKey| known.get(k).cloned().unwrap_or(Look::NotYet);
            match walk(&policies, manage_all, o, &mut read) {
                Ancestry::Read(k) => {
                    let look = by_name
                        .get(&k.name)
                        .filter(|v| {
                            v["apiVersion"]
                                .as_str()
                                .unwrap()
                                .starts_with(k.group.as_str())
                        })
                        .cloned()
                        .map_or(Look::Missing, Look::Found);
                    known.insert(k, look);
                }
                a => return (a, rounds),
            }
        }
        panic!("the walk did not end");
    }

    /// Kueue v0.19.2 reconciler_test.go `TestFindAncestorJobManagedByKueue`,
    /// each case by its name (its examples with manageJobsWithoutQueueName
    /// too).
    #[test]
    fn the_walk_finds_a_managed_ancestor_as_kueue_does() {
        let cronjob = obj("batch/v1", "CronJob", "cronjob", Some("q"));
        // "child job has ownerReference with unmanaged workload owner" (and
        // "... that has a queue-name"): a CronJob is not an integrated kind.
        let child = owned_by(job("child", None), &cronjob);
        assert_eq!(
            resolve(false, &child, std::slice::from_ref(&cronjob)),
            (Ancestry::TopLevel, 0)
        );
        // "child job has ownerReference with known non-existing workload owner".
        let parent = mpijob("parent", Some("test-q"));
        let child = owned_by(job("child", None), &parent);
        assert_eq!(
            resolve(false, &child, &[]),
            (
                Ancestry::Refused("mpijobs.kubeflow.org \"parent\" not found".into()),
                1
            )
        );
        // "child job has ownerReference with known existing workload owner,
        // and the parent job has queue-name label".
        assert_eq!(
            resolve(false, &child, std::slice::from_ref(&parent)),
            (Ancestry::Managed, 1)
        );
        // "... and the parent job doesn't has queue-name label".
        let unqueued = mpijob("parent", None);
        let child = owned_by(job("child", Some("q")), &unqueued);
        assert_eq!(
            resolve(false, &child, std::slice::from_ref(&unqueued)),
            (Ancestry::TopLevel, 1)
        );
        // With manageJobsWithoutQueueName, any enabled parent manages.
        assert_eq!(resolve(true, &child, &[unqueued]), (Ancestry::Managed, 1));
        // "cyclic ownership links are properly handled".
        let grandparent = jobset("grandparent", None);
        let parent = owned_by(mpijob("parent", None), &grandparent);
        let child = owned_by(job("child", None), &parent);
        let grandparent = owned_by(grandparent, &child);
        assert_eq!(
            resolve(false, &child, &[grandparent, parent.clone(), child.clone()]),
            (Ancestry::Refused("cyclic ownership".into()), 3)
        );
        // "cuts off ancestor traversal at the limit": twelve Jobs above,
        // the top one queued.
        let mut chain = vec![job("ancestor-0", Some("test-q"))];
        for i in 1..=11 {
            let prev = chain[i - 1].clone();
            chain.push(owned_by(job(&format!("ancestor-{i}"), None), &prev));
        }
        let child = owned_by(job("job", None), &chain[11]);
        assert_eq!(
            resolve(false, &child, &chain),
            (
                Ancestry::Refused("managed owner chain limit reached".into()),
                11
            )
        );
        // "Job -> JobSet -> MPIJob" (Kueue's with an AppWrapper on top,
        // which batchgate's walk takes as governing: see `walk`): nil, the
        // JobSet when it is queued, the top one when it is.
        let top = mpijob("top", None);
        let set = owned_by(jobset("jobset", None), &top);
        let child = owned_by(job("job", Some("test-q")), &set);
        assert_eq!(
            resolve(false, &child, &[top.clone(), set.clone()]),
            (Ancestry::TopLevel, 2)
        );
        let queued_set = owned_by(jobset("jobset", Some("test-q")), &top);
        assert_eq!(
            resolve(false, &child, &[top.clone(), queued_set]),
            (Ancestry::Managed, 2)
        );
        let queued_top = mpijob("top", Some("test-q"));
        assert_eq!(
            resolve(false, &child, &[queued_top, set.clone()]),
            (Ancestry::Managed, 2)
        );
        // A reference whose UID is not the object's: the walk stops there.
        let mut stale = set.clone();
        stale["metadata"]["uid"] = json!("another");
        assert_eq!(
            resolve(false, &child, &[top, stale]),
            (Ancestry::TopLevel, 1)
        );
        // An AppWrapper parent governs its components.
        let aw = obj("workload.codeflare.dev/v1beta2", "AppWrapper", "aw", None);
        let child = owned_by(job("job", Some("test-q")), &aw);
        assert_eq!(resolve(false, &child, &[]), (Ancestry::Managed, 0));
        // A failed read refuses with its words.
        let child = owned_by(job("job", Some("q")), &set);
        let policies = PolicySet::embedded().unwrap();
        let mut failing = |_: &ParentKey| Look::Failed("etcdserver: request timed out".into());
        assert_eq!(
            walk(&policies, false, &child, &mut failing),
            Ancestry::Refused("etcdserver: request timed out".into())
        );
    }
}
