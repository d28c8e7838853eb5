//! Autopilot's node health monitor (upstream
//! `internal/controller/appwrapper/node_health_monitor.go`, v1.2.1): what
//! each Node's labels, taints and cordon say about its resources, kept as
//! two maps the controller shell updates from a Node watch.
//!
//! - `no_execute`: node → the resources some NoExecute `resourceTaints`
//!   entry flags by a node *label* (`key=value`; Autopilot labels, it does
//!   not taint). A Running AppWrapper with a pod there using such a
//!   resource goes Unhealthy (`AutopilotNoExecute`) and is reset: its pods
//!   are deleted and recreated, and the injected anti-affinities keep them
//!   off the node.
//! - `no_schedule`: node → unschedulable capacity (all but `pods` of a
//!   cordoned node, or one tainted `node.kubernetes.io/unreachable` or
//!   `not-ready`; else the capacity of resources flagged NoSchedule or
//!   NoExecute). Upstream fed a slack ClusterQueue's lending limits with it
//!   until v1.1 (#328 removed `slackQueueName`); at v1.2.1 it is only kept
//!   and logged, and so it is here.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;

use super::config::Autopilot;
use crate::vocabulary::quantity::Quantity;

const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const NOT_READY: &str = "node.kubernetes.io/not-ready";

/// What the monitor reads of a Node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// `spec.taints[].key`.
    pub taint_keys: Vec<String>,
    /// `status.capacity`, as written.
    pub capacity: BTreeMap<String, String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

impl NodeFacts {
    pub fn from_node(node: &Node) -> NodeFacts {
        let spec = node.spec.as_ref();
        NodeFacts {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            taint_keys: spec
                .and_then(|s| s.taints.as_ref())
                .map(|ts| ts.iter().map(|t| t.key.clone()).collect())
                .unwrap_or_default(),
            capacity: node
                .status
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .map(|c| c.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                .unwrap_or_default(),
            deleting: node.metadata.deletion_timestamp.is_some(),
        }
    }

    /// Upstream's `nodeIsUnscheduable` (#345: NotReady and unreachable
    /// nodes count as cordoned).
    fn unschedulable(&self) -> bool {
        self.unschedulable
            || self
                .taint_keys
                .iter()
                .any(|k| k == UNREACHABLE || k == NOT_READY)
    }
}

/// The resources `autopilot` flags NoExecute on a node with these labels.
pub fn no_execute_resources(node: &NodeFacts, autopilot: &Autopilot) -> BTreeSet<String> {
    autopilot.no_execute_resources(&node.labels)
}

/// The node's unschedulable capacity (resource → quantity as written).
pub fn no_schedule_resources(node: &NodeFacts, autopilot: &Autopilot) -> BTreeMap<String, String> {
    if node.unschedulable() {
        let mut all = node.capacity.clone();
        all.remove("pods");
        return all;
    }
    autopilot
        .resource_taints
        .iter()
        .filter(|(_, taints)| {
            taints.iter().any(|t| {
                matches!(t.effect.as_str(), "NoExecute" | "NoSchedule")
                    && node.labels.get(&t.key) == Some(&t.value)
            })
        })
        .filter_map(|(resource, _)| {
            let q = node.capacity.get(resource)?;
            // An unparsable capacity cannot be stored by the apiserver;
            // reading it as zero (absent) is what `Name()` would do.
            Quantity::parse(q)
                .ok()
                .filter(|v| !v.is_zero())
                .map(|_| (resource.clone(), q.clone()))
        })
        .collect()
}

/// What one observation changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// The node's `no_execute` entry changed (upstream logs
    /// `Updated NoExecute information`).
    pub no_execute: bool,
    /// The node's `no_schedule` entry changed (`Updated NoSchedule
    /// information`).
    pub no_schedule: bool,
    /// Resources newly flagged NoExecute on the node: the AppWrappers with
    /// pods there are worth a reconcile now rather than at their next
    /// periodic check (upstream waits for that, up to a minute).
    pub newly_no_execute: BTreeSet<String>,
}

/// The two maps, as upstream keeps them (entries only for nodes with
/// something to say).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeHealth {
    no_execute: BTreeMap<String, BTreeSet<String>>,
    no_schedule: BTreeMap<String, BTreeMap<String, String>>,
}

impl NodeHealth {
    /// Upstream's `Reconcile` for a node that exists.
    pub fn observe(&mut self, node: &NodeFacts, autopilot: &Autopilot) -> Change {
        if node.deleting {
            return self.forget(&node.name);
        }
        let bad = no_execute_resources(node, autopilot);
        let before = self.no_execute.get(&node.name).cloned().unwrap_or_default();
        let newly_no_execute = bad.difference(&before).cloned().collect();
        let no_execute = set_entry(&mut self.no_execute, &node.name, bad);
        let no_schedule = set_entry(
            &mut self.no_schedule,
            &node.name,
            no_schedule_resources(node, autopilot),
        );
        Change {
            no_execute,
            no_schedule,
            newly_no_execute,
        }
    }

    /// A node that is gone (NotFound, or being deleted).
    pub fn forget(&mut self, name: &str) -> Change {
        Change {
            no_execute: self.no_execute.remove(name).is_some(),
            no_schedule: self.no_schedule.remove(name).is_some(),
            newly_no_execute: BTreeSet::new(),
        }
    }

    /// After a relist: forget the nodes it did not return (deleted while
    /// the watch was down, so no delete event came).
    pub fn retain(&mut self, listed: &BTreeSet<String>) -> Change {
        let mut change = Change::default();
        let gone: Vec<String> = self
            .no_execute
            .keys()
            .chain(self.no_schedule.keys())
            .filter(|n| !listed.contains(*n))
            .cloned()
            .collect();
        for n in gone {
            let c = self.forget(&n);
            change.no_execute |= c.no_execute;
            change.no_schedule |= c.no_schedule;
        }
        change
    }

    pub fn no_execute(&self) -> &BTreeMap<String, BTreeSet<String>> {
        &self.no_execute
    }

    pub fn no_schedule(&self) -> &BTreeMap<String, BTreeMap<String, String>> {
        &self.no_schedule
    }

    /// The `no_execute` entries of these nodes only (a reconcile's pods').
    pub fn no_execute_of<'a>(
        &self,
        nodes: impl IntoIterator<Item = &'a str>,
    ) -> BTreeMap<String, BTreeSet<String>> {
        nodes
            .into_iter()
            .filter_map(|n| self.no_execute.get_key_value(n))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// Sets `map[name]` to `value`, removing it when empty; whether it changed.
fn set_entry<V: PartialEq + IsEmpty>(map: &mut BTreeMap<String, V>, name: &str, value: V) -> bool {
    if value.is_empty() {
        return map.remove(name).is_some();
    }
    if map.get(name) == Some(&value) {
        return false;
    }
    map.insert(name.to_string(), value);
    true
}

trait IsEmpty {
    fn is_empty(&self) -> bool;
}

impl<T> IsEmpty for BTreeSet<T> {
    fn is_empty(&self) -> bool {
        BTreeSet::is_empty(self)
    }
}

impl<K, V> IsEmpty for BTreeMap<K, V> {
    fn is_empty(&self) -> bool {
        BTreeMap::is_empty(self)
    }
}

/// Upstream's `node_health_monitor_test.go` ("NodeMonitor Controller",
/// "Autopilot Monitoring"), step by step as a table: two nodes
/// `fake-node-1` and `fake-node-2` with 4 `nvidia.com/gpu` and a label
/// `key1=value1`, the default config; after each change both nodes are
/// observed again, as upstream reconciles both.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::appwrapper::config::ResourceTaint;

    const GPU: &str = "nvidia.com/gpu";
    const HEALTH: &str = "autopilot.ibm.com/gpuhealth";

    fn fake_node(name: &str) -> NodeFacts {
        NodeFacts {
            name: name.into(),
            labels: [("key1".to_string(), "value1".to_string())].into(),
            capacity: [(GPU.to_string(), "4".to_string())].into(),
            ..NodeFacts::default()
        }
    }

    /// A step: how node 1 changes, then the expected maps' keys (node →
    /// resources) after both nodes are observed.
    type Step = (
        &'static str,
        fn(&mut NodeFacts),
        &'static [(&'static str, &'static [&'static str])],
        &'static [(&'static str, &'static [&'static str])],
    );

    fn keys<V>(
        m: &BTreeMap<String, V>,
        f: impl Fn(&V) -> Vec<String>,
    ) -> Vec<(String, Vec<String>)> {
        m.iter().map(|(k, v)| (k.clone(), f(v))).collect()
    }

    fn want(w: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        w.iter()
            .map(|(n, rs)| (n.to_string(), rs.iter().map(|r| r.to_string()).collect()))
            .collect()
    }

    #[test]
    fn nm1_autopilot_monitoring() {
        let ap = Autopilot::default();
        let steps: &[Step] = &[
            ("Healthy cluster has no unhealthy nodes", |_| {}, &[], &[]),
            (
                "A node labeled EVICT is detected as unhealthy",
                |n| {
                    n.labels.insert(HEALTH.into(), "EVICT".into());
                },
                &[("fake-node-1", &[GPU])],
                // upstream does not assert this map here; EVICT is
                // NoExecute, which also makes the GPUs unschedulable
                &[("fake-node-1", &[GPU])],
            ),
            (
                "Repeated reconcile does not change map",
                |_| {},
                &[("fake-node-1", &[GPU])],
                &[("fake-node-1", &[GPU])],
            ),
            (
                "Removing the EVICT label updates unhealthyNodes",
                |n| {
                    n.labels.insert(HEALTH.into(), "WARN".into());
                },
                &[],
                &[],
            ),
            (
                "A Node tainted as unreachable is detected as unscheduable",
                |n| n.taint_keys.push(UNREACHABLE.into()),
                &[],
                &[("fake-node-1", &[GPU])],
            ),
            (
                "Repeated reconcile does not change map",
                |_| {},
                &[],
                &[("fake-node-1", &[GPU])],
            ),
            (
                "Removing the taint updates unhealthyNodes",
                |n| n.taint_keys.clear(),
                &[],
                &[],
            ),
            (
                "A Node tainted as not-read is detected as unscheduable",
                |n| n.taint_keys.push(NOT_READY.into()),
                &[],
                &[("fake-node-1", &[GPU])],
            ),
            (
                "Repeated reconcile does not change map",
                |_| {},
                &[],
                &[("fake-node-1", &[GPU])],
            ),
            (
                "Removing the taint updates unhealthyNodes",
                |n| n.taint_keys.clear(),
                &[],
                &[],
            ),
        ];
        let mut health = NodeHealth::default();
        let (mut n1, n2) = (fake_node("fake-node-1"), fake_node("fake-node-2"));
        for (by, change, no_execute, no_schedule) in steps {
            change(&mut n1);
            health.observe(&n1, &ap);
            health.observe(&n2, &ap);
            let set = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>();
            let list = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(health.no_execute(), set), want(no_execute), "{by}");
            assert_eq!(keys(health.no_schedule(), list), want(no_schedule), "{by}");
        }
        // deleteNode: both entries go.
        n1.labels.insert(HEALTH.into(), "EVICT".into());
        health.observe(&n1, &ap);
        assert!(health.forget("fake-node-1").no_execute);
        assert_eq!(health, NodeHealth::default());
    }

    #[test]
    fn changes_are_reported_once_and_newly_flagged_resources_named() {
        let ap = Autopilot::default();
        let mut health = NodeHealth::default();
        let mut n = fake_node("n");
        assert_eq!(health.observe(&n, &ap), Change::default());
        n.labels.insert(HEALTH.into(), "EVICT".into());
        let c = health.observe(&n, &ap);
        assert!(c.no_execute && c.no_schedule);
        assert_eq!(c.newly_no_execute, BTreeSet::from([GPU.to_string()]));
        // Repeated: nothing new, nothing to log, nobody to wake.
        assert_eq!(health.observe(&n, &ap), Change::default());
        // EVICT → TESTING: no longer NoExecute, still NoSchedule (same
        // capacity, so that map does not change).
        n.labels.insert(HEALTH.into(), "TESTING".into());
        let c = health.observe(&n, &ap);
        assert!(c.no_execute && !c.no_schedule && c.newly_no_execute.is_empty());
        // A node being deleted is forgotten.
        n.deleting = true;
        let c = health.observe(&n, &ap);
        assert!(!c.no_execute && c.no_schedule);
        assert_eq!(health, NodeHealth::default());
    }

    #[test]
    fn cordoned_nodes_count_all_capacity_but_pods_and_zero_capacity_is_not_flagged() {
        let ap = Autopilot::default();
        let mut n = fake_node("n");
        n.capacity.insert("cpu".into(), "8".into());
        n.capacity.insert("pods".into(), "110".into());
        n.unschedulable = true;
        let all = no_schedule_resources(&n, &ap);
        assert_eq!(all.keys().collect::<Vec<_>>(), ["cpu", GPU]);
        // A TESTING label (NoSchedule) on a node without GPUs flags nothing.
        let mut cpu_only = fake_node("c");
        cpu_only.capacity = [(GPU.to_string(), "0".to_string())].into();
        cpu_only.labels.insert(HEALTH.into(), "TESTING".into());
        assert!(no_schedule_resources(&cpu_only, &ap).is_empty());
        // The NoExecute map does not look at capacity: a label is enough.
        cpu_only.labels.insert(HEALTH.into(), "EVICT".into());
        assert_eq!(no_execute_resources(&cpu_only, &ap).len(), 1);
        // PreferNoSchedule flags nothing in either map.
        cpu_only.labels.insert(HEALTH.into(), "WARN".into());
        assert!(no_execute_resources(&cpu_only, &ap).is_empty());
    }

    #[test]
    fn extra_resource_taints_flag_their_own_resource() {
        let mut ap = Autopilot::default();
        ap.resource_taints.insert(
            "example.com/fpga".into(),
            vec![ResourceTaint {
                key: "fpga-health".into(),
                value: "dead".into(),
                effect: "NoExecute".into(),
            }],
        );
        let mut n = fake_node("n");
        n.labels.insert("fpga-health".into(), "dead".into());
        let mut health = NodeHealth::default();
        let c = health.observe(&n, &ap);
        assert_eq!(
            c.newly_no_execute,
            BTreeSet::from(["example.com/fpga".to_string()])
        );
        // no fpga capacity: nothing unschedulable to report
        assert!(health.no_schedule().is_empty());
        assert_eq!(
            health
                .no_execute_of(["n", "other"])
                .keys()
                .collect::<Vec<_>>(),
            ["n"]
        );
    }

    #[test]
    fn a_relist_forgets_nodes_it_did_not_return() {
        let ap = Autopilot::default();
        let mut health = NodeHealth::default();
        for name in ["a", "b"] {
            let mut n = fake_node(name);
            n.labels.insert(HEALTH.into(), "EVICT".into());
            health.observe(&n, &ap);
        }
        let c = health.retain(&BTreeSet::from(["b".to_string()]));
        assert!(c.no_execute && c.no_schedule);
        assert_eq!(health.no_execute().keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(
            health.retain(&BTreeSet::from(["b".to_string()])),
            Change::default()
        );
    }

    #[test]
    fn from_node_reads_labels_cordon_taints_and_capacity() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n", "labels": {HEALTH: "EVICT"}},
            "spec": {"unschedulable": true, "taints": [{"key": NOT_READY, "effect": "NoExecute"}]},
            "status": {"capacity": {GPU: "8", "pods": "110"}}
        }))
        .unwrap();
        let f = NodeFacts::from_node(&node);
        assert_eq!(f.name, "n");
        assert!(f.unschedulable && !f.deleting);
        assert_eq!(f.taint_keys, [NOT_READY]);
        assert_eq!(f.capacity.get(GPU).map(String::as_str), Some("8"));
        assert_eq!(f.labels.get(HEALTH).map(String::as_str), Some("EVICT"));
    }
}
