//! Kueue's WorkloadPriorityClass controller: when a class's `value`
//! changes, every Workload naming it in `spec.priorityClassRef` is carried
//! to the new value, admitted or not, and the engine orders and preempts by
//! it from then on. Which Workloads are due is decided here from the
//! watches ([`Priorities`]); each write is one merge patch of
//! `spec.priority` on the resourceVersion it was decided on.

use std::collections::{HashMap, HashSet};

use kube::{api::Patch, runtime::watcher::Event, Api, Client, ResourceExt};
use serde_json::json;
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::{params, split_key, Controller, Input, Key};
use crate::api::kueue::v1beta2 as api;

/// A Workload whose priority follows a WorkloadPriorityClass.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Follower {
    class: String,
    priority: Option<i32>,
    resource_version: String,
}

/// One `spec.priority` write: the Workload, the resourceVersion it was
/// decided on, the class's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Due {
    pub key: Key,
    pub resource_version: String,
    pub value: i32,
}

#[derive(Default)]
pub(super) struct Priorities {
    /// Each WorkloadPriorityClass's `value`, by name.
    values: HashMap<String, i32>,
    relist: Option<HashMap<String, i32>>,
    following: HashMap<Key, Follower>,
    due: HashSet<Key>,
}

/// The class a Workload's priority follows: its `priorityClassRef`, when
/// that is a WorkloadPriorityClass (a pod PriorityClass's value is read
/// once, when the Workload is made, as Kueue does).
fn follows(wl: &api::Workload) -> Option<Follower> {
    let r = wl.spec.priority_class_ref.as_ref()?;
    (r.group == "kueue.x-k8s.io" && r.kind == "WorkloadPriorityClass").then(|| Follower {
        class: r.name.clone(),
        priority: wl.spec.priority,
        resource_version: wl.resource_version().unwrap_or_default(),
    })
}

impl Priorities {
    fn stale(&self, f: &Follower) -> bool {
        self.values
            .get(&f.class)
            .is_some_and(|v| f.priority != Some(*v))
    }

    /// A Workload as the watch brings it.
    pub fn observe(&mut self, k: &Key, wl: &api::Workload) {
        match follows(wl) {
            Some(f) => {
                if self.stale(&f) {
                    self.due.insert(k.clone());
                } else {
                    self.due.remove(k);
                }
                self.following.insert(k.clone(), f);
            }
            None => self.forget(k),
        }
    }

    pub fn forget(&mut self, k: &str) {
        self.following.remove(k);
        self.due.remove(k);
    }

    /// A WorkloadPriorityClass as the watch brings it. A deleted class
    /// changes nothing (Kueue's controller ignores deletions; a class made
    /// again under the same name is followed again).
    pub fn on_class(&mut self, ev: Event<api::WorkloadPriorityClass>) {
        match ev {
            Event::Init => self.relist = Some(HashMap::new()),
            Event::InitApply(c) => {
                if let Some(r) = &mut self.relist {
                    r.insert(c.name_any(), c.spec.value);
                }
            }
            Event::InitDone => {
                if let Some(r) = self.relist.take() {
                    self.values = r;
                    self.recheck();
                }
            }
            Event::Apply(c) => {
                self.values.insert(c.name_any(), c.spec.value);
                self.recheck();
            }
            Event::Delete(c) => {
                self.values.remove(&c.name_any());
            }
        }
    }

    /// Marks every follower whose class has another value now.
    pub fn recheck(&mut self) {
        let stale: Vec<Key> = self
            .following
            .iter()
            .filter(|(_, f)| self.stale(f))
            .map(|(k, _)| k.clone())
            .collect();
        self.due.extend(stale);
    }

    /// One Workload checked again (a write that failed).
    pub fn recheck_one(&mut self, k: &Key) {
        if self.following.get(k).is_some_and(|f| self.stale(f)) {
            self.due.insert(k.clone());
        }
    }

    /// The writes due now, taken; the watch brings each Workload back,
    /// written or not, and it is checked again then.
    pub fn take_due(&mut self) -> Vec<Due> {
        let mut out: Vec<Due> = self
            .due
            .drain()
            .filter_map(|k| {
                let f = self.following.get(&k)?;
                let value = *self.values.get(&f.class)?;
                (f.priority != Some(value)).then(|| Due {
                    resource_version: f.resource_version.clone(),
                    key: k,
                    value,
                })
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }
}

/// Sends one write. A conflict needs nothing more (the watch brings the
/// newer Workload, checked again then); another failure asks for the key
/// to be checked again after a pause.
pub(super) async fn write(client: Client, due: Due, tx: mpsc::UnboundedSender<Input>) {
    let (namespace, name) = split_key(&due.key);
    let api = Api::<api::Workload>::namespaced(client, namespace);
    let patch = json!({
        "metadata": {"resourceVersion": due.resource_version},
        "spec": {"priority": due.value},
    });
    match api.patch(name, &params(), &Patch::Merge(&patch)).await {
        Ok(_) => debug!(workload = %due.key, value = due.value, "priority follows its class"),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
        Err(e) => {
            warn!(workload = %due.key, error = %e, "priority not written; trying again");
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            let _ = tx.send(Input::PriorityRecheck(due.key));
        }
    }
}

impl Controller {
    /// Sends the priority writes due (on the leader only).
    pub(super) fn sync_priorities(&mut self) {
        for due in self.priorities.take_due() {
            tokio::spawn(write(self.client.clone(), due, self.tx.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, value: i32) -> api::WorkloadPriorityClass {
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": name}, "value": value,
        }))
        .unwrap()
    }

    fn workload(name: &str, group: &str, kind: &str, class: &str, priority: i32) -> api::Workload {
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "5"},
            "spec": {"queueName": "lq", "priority": priority,
                     "priorityClassRef": {"group": group, "kind": kind, "name": class},
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
        }))
        .unwrap()
    }

    /// Kueue v0.19.2 test/integration/singlecluster/controller/core/
    /// workload_controller_test.go ("changing the priority value of
    /// PriorityClass changes the priority of the workload"): 200 → 150
    /// reaches the Workload naming the class; one naming a pod
    /// PriorityClass of the same name, or another class, is left alone;
    /// a Workload already at the value is not written.
    #[test]
    fn a_class_value_change_reaches_the_workloads_that_name_it() {
        let mut p = Priorities::default();
        p.on_class(Event::Init);
        p.on_class(Event::InitApply(class("workload-priority-class", 200)));
        p.on_class(Event::InitApply(class("other", 10)));
        p.on_class(Event::InitDone);
        let wpc = ("kueue.x-k8s.io", "WorkloadPriorityClass");
        let follower: Key = "ns/wl".into();
        let pod: Key = "ns/pod".into();
        let other: Key = "ns/other".into();
        p.observe(
            &follower,
            &workload("wl", wpc.0, wpc.1, "workload-priority-class", 200),
        );
        p.observe(
            &pod,
            &workload(
                "pod",
                "scheduling.k8s.io",
                "PriorityClass",
                "workload-priority-class",
                200,
            ),
        );
        p.observe(&other, &workload("other", wpc.0, wpc.1, "other", 10));
        assert!(p.take_due().is_empty(), "all at their class's value");
        p.on_class(Event::Apply(class("workload-priority-class", 150)));
        assert_eq!(
            p.take_due(),
            [Due {
                key: follower.clone(),
                resource_version: "5".into(),
                value: 150
            }]
        );
        // Written: the watch brings it at 150, nothing more is due.
        p.observe(
            &follower,
            &workload("wl", wpc.0, wpc.1, "workload-priority-class", 150),
        );
        p.recheck();
        assert!(p.take_due().is_empty());
        // Deleting a class writes nothing.
        p.on_class(Event::Delete(class("other", 10)));
        assert!(p.take_due().is_empty());
    }

    /// The executor: one merge patch of `spec.priority`, on the
    /// resourceVersion decided on.
    #[tokio::test]
    async fn the_write_is_one_patch_of_the_priority() {
        use crate::controllers::vetting::testing::recording_client;
        let (client, sent) = recording_client();
        let (tx, _rx) = mpsc::unbounded_channel();
        let due = Due {
            key: "ns/wl".into(),
            resource_version: "5".into(),
            value: 150,
        };
        write(client, due, tx).await;
        assert_eq!(
            *sent.lock().unwrap(),
            ["PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl"]
        );
    }
}
