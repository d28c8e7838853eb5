//! DRA claims as quota (the counting is [`crate::queueing::claims`]): the
//! ResourceClaimTemplates as the watch shows them, and each Workload that
//! uses claims with the engine's view of it before charging, so that when a
//! template it names appears or changes, its pending view is counted again.
//!
//! With `draPlacement` on, a pending Workload whose claims are counted is
//! also placed over the devices the cluster's ResourceSlices publish
//! ([`crate::devices::slices`]); while no node can hold a pod's claims it
//! is held with the placement's message, and counted again when slices or
//! classes change. Devices other claims hold count as there: a Workload
//! held before quota is reserved could not preempt to make room, and the
//! quota already bounds what is in use.
//!
//! A Workload held inadmissible (a claim it names directly, an unmapped
//! DeviceClass, a template not there yet, the integration turned off) is
//! kept out of the engine, as Kueue keeps it out of its queues: it is never
//! admitted on CPU and memory alone, and its `QuotaReserved=False`
//! condition carries Kueue's message.

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::resource::v1::{DeviceClassSpec, ResourceClaimSpec, ResourceSliceSpec};

use super::Key;
use crate::{
    api::kueue::v1beta2 as api,
    devices::slices::{self, Inventory},
    queueing::{
        self,
        claims::{
            add_to, charge, is_extended, selected_class, Charge, DeviceView, ExtendedRequest,
            PodSetClaims, Settings,
        },
    },
};

/// A Workload that uses claims.
struct Using {
    pod_sets: Vec<PodSetClaims>,
    /// The engine's view before the claims are charged.
    base: queueing::Workload,
}

#[derive(Default)]
pub(super) struct Claims {
    settings: Settings,
    /// `spec.spec` of each ResourceClaimTemplate, by namespace, then name
    /// (looked up by `&str`, without building a key per Workload).
    templates: HashMap<String, HashMap<String, ResourceClaimSpec>>,
    /// ResourceSlices and DeviceClasses by name, and the view the CEL
    /// check reads, built again (when next read) after either changes.
    slices: BTreeMap<String, ResourceSliceSpec>,
    classes: BTreeMap<String, Class>,
    view: Option<DeviceView>,
    using: HashMap<Key, Using>,
    /// The placement's inventory, built again (when next read) after
    /// slices change.
    inventory: Option<Inventory>,
    /// Placement answers per (namespace, templates and pod counts): the
    /// Workloads of one job template ask the same question.
    placed: HashMap<String, Result<(), String>>,
    /// What each Workload's last count came to (a hash of its pod sets'
    /// requests, or of the message it is held with), so that a slice or
    /// class event that changes nothing for it moves nothing in the engine.
    last: HashMap<Key, u64>,
    /// The message each Workload kept out is held with (for explain).
    held: HashMap<Key, String>,
}

/// A DeviceClass as counting reads it.
struct Class {
    selectors: Vec<String>,
    extended_resource_name: Option<String>,
    /// Seconds since the epoch: of two classes backing one extended
    /// resource, Kubernetes allocates from the later.
    created: i64,
}

/// What a Workload's claims decide for the engine.
#[derive(Debug, PartialEq)]
pub(super) enum Counted {
    /// Into the engine as it is (charged, or no claims).
    Queue(Box<queueing::Workload>),
    /// Kept out, pending with this message.
    Held(String),
}

/// A hash of what a count decided: the pod sets' requests, or the message.
fn outcome(c: &Counted) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match c {
        Counted::Queue(v) => {
            for ps in &v.pod_sets {
                ps.requests.hash(&mut h);
            }
        }
        Counted::Held(m) => m.hash(&mut h),
    }
    h.finish()
}

/// Each pod set's claims and, when `extended`, its containers' extended
/// resource requests.
fn pod_set_claims(wl: &api::Workload, extended: bool) -> Vec<PodSetClaims> {
    wl.spec
        .pod_sets
        .iter()
        .flatten()
        .map(|ps| {
            let spec = ps.template.spec.as_ref();
            let mut requests = Vec::new();
            let containers = spec.map(|s| {
                [
                    (
                        "initContainers",
                        s.init_containers.as_deref().unwrap_or(&[]),
                    ),
                    ("containers", &s.containers[..]),
                ]
            });
            for (kind, list) in containers.into_iter().flatten().filter(|_| extended) {
                for (j, c) in list.iter().enumerate() {
                    let asked = c.resources.as_ref().and_then(|r| r.requests.as_ref());
                    let extended = asked.into_iter().flatten().filter(|(n, _)| is_extended(n));
                    requests.extend(extended.filter_map(|(name, q)| {
                        ExtendedRequest::new(format!("{kind}[{j}]"), name, &q.0)
                    }));
                }
            }
            PodSetClaims {
                name: ps.name.clone(),
                claims: spec
                    .and_then(|s| s.resource_claims.clone())
                    .unwrap_or_default(),
                extended: requests,
            }
        })
        .collect()
}

impl Claims {
    pub(super) fn new(settings: Settings) -> Claims {
        Claims {
            settings,
            ..Claims::default()
        }
    }

    /// A template as the watch shows it (`None`: deleted). The Workloads
    /// naming it, to be counted again.
    pub(super) fn template(
        &mut self,
        ns: &str,
        name: &str,
        spec: Option<&ResourceClaimSpec>,
    ) -> Vec<Key> {
        match spec {
            Some(spec) => {
                self.templates
                    .entry(ns.to_string())
                    .or_default()
                    .insert(name.to_string(), spec.clone());
            }
            None => {
                if let Some(in_ns) = self.templates.get_mut(ns) {
                    in_ns.remove(name);
                    if in_ns.is_empty() {
                        self.templates.remove(ns);
                    }
                }
            }
        };
        self.placed.clear();
        self.using
            .iter()
            .filter(|(_, u)| {
                *u.base.namespace == *ns && PodSetClaims::templates(&u.pod_sets).any(|n| n == name)
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// A ResourceSlice as the watch shows it (`None`: deleted). The
    /// pending Workloads, to be counted again.
    pub(super) fn slice(&mut self, name: &str, spec: Option<&ResourceSliceSpec>) -> Vec<Key> {
        match spec {
            Some(s) => self.slices.insert(name.to_string(), s.clone()),
            None => self.slices.remove(name),
        };
        self.view = None;
        self.inventory = None;
        self.placed.clear();
        self.pending()
    }

    /// A DeviceClass as the watch shows it (`None`: deleted), created at
    /// `created` (seconds). The pending Workloads, to be counted again.
    pub(super) fn class(
        &mut self,
        name: &str,
        spec: Option<&DeviceClassSpec>,
        created: i64,
    ) -> Vec<Key> {
        match spec {
            Some(s) => {
                let class = Class {
                    selectors: crate::devices::selectors::class_selectors(s),
                    extended_resource_name: s
                        .extended_resource_name
                        .clone()
                        .filter(|n| !n.is_empty()),
                    created,
                };
                self.classes.insert(name.to_string(), class);
            }
            None => {
                self.classes.remove(name);
            }
        };
        self.view = None;
        self.placed.clear();
        self.pending()
    }

    /// The Workloads using claims that are not admitted or finished.
    fn pending(&self) -> Vec<Key> {
        self.using
            .iter()
            .filter(|(_, u)| u.base.admission.is_none() && !u.base.finished)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Whether `key` uses claims.
    pub(super) fn uses(&self, key: &str) -> bool {
        self.using.contains_key(key)
    }

    /// The Workloads that use claims.
    pub(super) fn keys(&self) -> Vec<Key> {
        self.using.keys().cloned().collect()
    }

    /// Notes `wl` (with `view`, the engine's translation of it) and counts
    /// its claims. An admitted Workload holds its `status.admission`; its
    /// view is charged all the same, so that if the engine evicts it and
    /// requeues it before the watch says so, it queues with its devices.
    pub(super) fn observe(
        &mut self,
        key: &Key,
        wl: &api::Workload,
        view: queueing::Workload,
    ) -> Counted {
        let extended = self.settings.integration && self.settings.extended;
        let pod_sets = pod_set_claims(wl, extended);
        if pod_sets
            .iter()
            .all(|ps| ps.claims.is_empty() && ps.extended.is_empty())
        {
            self.using.remove(key);
            return Counted::Queue(Box::new(view));
        }
        self.using.insert(
            key.clone(),
            Using {
                pod_sets,
                base: view,
            },
        );
        self.count(key).expect("just noted")
    }

    /// The Workload is gone.
    pub(super) fn forget(&mut self, key: &str) {
        self.using.remove(key);
        self.last.remove(key);
        self.held.remove(key);
    }

    /// Why `key` is kept out of the queues, if it is: its LocalQueue and
    /// the message it is held with.
    pub(super) fn held(&self, key: &str) -> Option<(&str, &str)> {
        let message = self.held.get(key)?;
        let u = self.using.get(key)?;
        Some((&u.base.queue_name, message))
    }

    /// [`Claims::count`], `None` also when the outcome is the one the
    /// engine already has.
    pub(super) fn recount(&mut self, key: &str) -> Option<Counted> {
        let before = self.last.get(key).copied();
        let counted = self.count(key)?;
        (self.last.get(key).copied() != before).then_some(counted)
    }

    /// Whether the published devices hold every pod of `key`'s claims (see
    /// [`slices::place`]); memoized per question until anything changes.
    /// Called by [`Claims::count`], after the device view is built.
    fn place(&mut self, key: &str) -> Result<(), String> {
        let Some(u) = self.using.get(key) else {
            return Ok(());
        };
        let ns = u.base.namespace.to_string();
        let mut question = ns.clone();
        for (ps, base) in u.pod_sets.iter().zip(&u.base.pod_sets) {
            let names = PodSetClaims::templates(std::slice::from_ref(ps));
            question.push_str(&format!("|{}:{}", ps.name, base.count));
            for n in names {
                question.push(',');
                question.push_str(n);
            }
        }
        if let Some(known) = self.placed.get(&question) {
            return known.clone();
        }
        let Some(view) = self.view.as_ref() else {
            return Ok(());
        };
        // The devices the CEL check reads, reused: built once per slice
        // change.
        let inv = self.inventory.get_or_insert_with(|| {
            let all: Vec<&ResourceSliceSpec> = self.slices.values().collect();
            Inventory::with_devices(&all, view.devices.clone())
        });
        let mut demands = Vec::new();
        for (ps, base) in u.pod_sets.iter().zip(&u.base.pod_sets) {
            let claims: Vec<(&str, &ResourceClaimSpec)> =
                PodSetClaims::templates(std::slice::from_ref(ps))
                    .filter_map(|n| {
                        self.templates
                            .get(&ns)
                            .and_then(|t| t.get(n))
                            .map(|spec| (n, spec))
                    })
                    .collect();
            if !claims.is_empty() {
                demands.push(slices::Demand {
                    pod_set: &ps.name,
                    pods: i64::from(base.count),
                    claims,
                });
            }
        }
        let answer = if demands.is_empty() {
            Ok(())
        } else {
            slices::place(&demands, &view.classes, inv, &mut HashSet::new()).map(|_| ())
        };
        self.placed.insert(question, answer.clone());
        answer
    }

    /// Counts the claims of a Workload noted by [`Claims::observe`], from
    /// the templates known now.
    pub(super) fn count(&mut self, key: &str) -> Option<Counted> {
        if self.view.is_none() {
            let slices: Vec<&ResourceSliceSpec> = self.slices.values().collect();
            let selectors = self
                .classes
                .iter()
                .map(|(n, c)| (n.clone(), c.selectors.clone()))
                .collect();
            let mut view = DeviceView::with_slices(selectors, &slices);
            let mut backing: BTreeMap<&str, Vec<(&str, i64)>> = BTreeMap::new();
            for (n, c) in &self.classes {
                if let Some(e) = &c.extended_resource_name {
                    backing.entry(e).or_default().push((n, c.created));
                }
            }
            for (resource, classes) in backing {
                if let Some(class) = selected_class(classes) {
                    view.extended
                        .insert(resource.to_string(), class.to_string());
                }
            }
            self.view = Some(view);
        }
        let devices = self.view.as_ref().expect("just built");
        let u = self.using.get(key)?;
        let admitted = u.base.admission.is_some() || u.base.finished;
        let in_ns = self.templates.get(&*u.base.namespace);
        let found = charge(
            &u.pod_sets,
            |name| in_ns.and_then(|t| t.get(name)),
            devices,
            &self.settings,
        );
        let placement = match &found {
            Charge::Inadmissible(_) => Ok(()),
            _ if admitted || !self.settings.placement || !self.settings.integration => Ok(()),
            _ => self.place(key),
        };
        let counted = match (placement, found) {
            (Err(message), _) => Counted::Held(message),
            (Ok(()), found) => {
                let mut view = self.using.get(key)?.base.clone();
                match found {
                    Charge::Nothing => Counted::Queue(Box::new(view)),
                    Charge::Devices(per_pod_set) => {
                        add_to(&mut view.pod_sets, &per_pod_set);
                        Counted::Queue(Box::new(view))
                    }
                    // What it holds stays held; counted again once pending.
                    Charge::Inadmissible(_) if admitted => Counted::Queue(Box::new(view)),
                    Charge::Inadmissible(message) => Counted::Held(message),
                }
            }
        };
        match &counted {
            Counted::Held(m) => self.held.insert(Key::from(key), m.clone()),
            Counted::Queue(_) => self.held.remove(key),
        };
        self.last.insert(Key::from(key), outcome(&counted));
        Some(counted)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn workload(claims: serde_json::Value, admitted: bool) -> api::Workload {
        let mut wl = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2,
                "template": {"spec": {"resourceClaims": claims, "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}}]}});
        if admitted {
            wl["status"] = json!({
                "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
                    "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "2"}, "count": 2}]},
                "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        }
        serde_json::from_value(wl).unwrap()
    }

    fn spec(count: i64) -> ResourceClaimSpec {
        serde_json::from_value(json!({"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": count}}]}}))
        .unwrap()
    }

    fn bare() -> Claims {
        Claims::new(Settings {
            classes: [("gpu.example.com".to_string(), "example.com/gpu".to_string())].into(),
            ..Settings::default()
        })
    }

    /// With a node of 16 devices, so that placement never decides.
    fn claims() -> Claims {
        let mut c = bare();
        c.slice("big", Some(&node_slice("big", 16)));
        c
    }

    fn observe(c: &mut Claims, wl: &api::Workload) -> Counted {
        let view = crate::controllers::translation::workload(wl).unwrap();
        c.observe(&Key::from("ns/w"), wl, view)
    }

    #[test]
    fn a_workload_is_held_until_its_template_appears_then_charged_per_pod() {
        let mut c = claims();
        let wl = workload(
            json!([{"name": "g", "resourceClaimTemplateName": "gpus"}]),
            false,
        );
        assert!(
            matches!(observe(&mut c, &wl), Counted::Held(m) if m.contains("\"gpus\" not found"))
        );
        // What explain reads: its LocalQueue and the message.
        let (lq, m) = c.held("ns/w").expect("held");
        assert_eq!(lq, "lq");
        assert!(m.contains("\"gpus\" not found"), "{m}");
        assert_eq!(
            c.template("ns", "gpus", Some(&spec(4))),
            vec![Key::from("ns/w")]
        );
        let Some(Counted::Queue(view)) = c.count("ns/w") else {
            panic!("counted")
        };
        assert_eq!(c.held("ns/w"), None, "counted, no longer held");
        assert_eq!(view.pod_sets[0].requests.get("example.com/gpu"), Some(4000));
        assert_eq!(view.pod_sets[0].requests.get("cpu"), Some(1000));
        // The template changes: counted again from the view before charging.
        c.template("ns", "gpus", Some(&spec(2)));
        let Some(Counted::Queue(view)) = c.count("ns/w") else {
            panic!("counted")
        };
        assert_eq!(view.pod_sets[0].requests.get("example.com/gpu"), Some(2000));
        // Another namespace's template of the same name is not this one's.
        assert!(c.template("elsewhere", "gpus", Some(&spec(8))).is_empty());
        assert_eq!(c.template("ns", "gpus", None), vec![Key::from("ns/w")]);
        assert!(matches!(c.count("ns/w"), Some(Counted::Held(_))));
        assert!(c.held("ns/w").is_some());
        c.forget("ns/w");
        assert_eq!(c.held("ns/w"), None);
    }

    #[test]
    fn an_admitted_workload_keeps_its_admission_and_queues_with_its_devices_if_evicted() {
        let mut c = claims();
        let wl = workload(
            json!([{"name": "g", "resourceClaimTemplateName": "gpus"}]),
            true,
        );
        // Its template not known: still admitted, never held.
        let Counted::Queue(view) = observe(&mut c, &wl) else {
            panic!("queued")
        };
        assert!(view.admission.is_some());
        c.template("ns", "gpus", Some(&spec(4)));
        let Some(Counted::Queue(view)) = c.count("ns/w") else {
            panic!("queued")
        };
        assert!(view.admission.is_some());
        assert_eq!(view.pod_sets[0].requests.get("example.com/gpu"), Some(4000));
    }

    /// Kueue's `NeedsDRAReconcile` and the DeviceClass handler: a
    /// Workload asking an extended resource is counted again when a class
    /// starts (or stops) backing it, and charged as the class's mapping.
    #[test]
    fn an_extended_resource_is_charged_as_the_class_backing_it_from_when_it_appears() {
        let mut c = claims();
        let mut wl = workload(json!([]), false);
        let ps = &mut wl.spec.pod_sets.as_mut().unwrap()[0];
        let spec = ps.template.spec.as_mut().unwrap();
        spec.containers[0].resources = serde_json::from_value(json!({"requests": {
            "cpu": "1", "example.com/device-gpu": "2", "example.com/not-backed": "-1"}}))
        .unwrap();
        let Counted::Queue(view) = observe(&mut c, &wl) else {
            panic!("queued")
        };
        assert_eq!(
            view.pod_sets[0].requests.get("example.com/device-gpu"),
            Some(2000)
        );
        assert!(
            c.uses("ns/w"),
            "kept, to be counted again if a class backs it"
        );
        let class: DeviceClassSpec =
            serde_json::from_value(json!({"extendedResourceName": "example.com/device-gpu"}))
                .unwrap();
        assert_eq!(
            c.class("gpu.example.com", Some(&class), 100),
            vec![Key::from("ns/w")]
        );
        let Some(Counted::Queue(view)) = c.count("ns/w") else {
            panic!("counted")
        };
        assert_eq!(
            view.pod_sets[0].requests.get("example.com/device-gpu"),
            None
        );
        assert_eq!(view.pod_sets[0].requests.get("example.com/gpu"), Some(2000));
        assert_eq!(view.pod_sets[0].requests.get("cpu"), Some(1000));
        c.class("gpu.example.com", None, 0);
        let Some(Counted::Queue(view)) = c.count("ns/w") else {
            panic!("counted")
        };
        assert_eq!(
            view.pod_sets[0].requests.get("example.com/device-gpu"),
            Some(2000)
        );
        // With the gate off it is a plain extended resource, not kept.
        let mut off = Claims::new(Settings {
            extended: false,
            ..c.settings.clone()
        });
        assert!(matches!(observe(&mut off, &wl), Counted::Queue(_)));
        assert!(!off.uses("ns/w"));
    }

    fn node_slice(node: &str, gpus: usize) -> ResourceSliceSpec {
        let devices: Vec<serde_json::Value> = (0..gpus)
            .map(|i| json!({"name": format!("gpu-{i}")}))
            .collect();
        serde_json::from_value(json!({"driver": "gpu.example.com", "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}))
        .unwrap()
    }

    /// batchgate's second gate: counted, but no node holds a pod's claims,
    /// so it waits with the placement's words; a node published with room
    /// lets it queue.
    #[test]
    fn a_workload_no_node_can_hold_waits_for_a_node_that_can() {
        let mut c = bare();
        c.slice("node-a", Some(&node_slice("node-a", 4)));
        c.template("ns", "gpus", Some(&spec(3)));
        let wl = workload(
            json!([{"name": "g", "resourceClaimTemplateName": "gpus"}]),
            false,
        );
        // Two pods of three: one fits, the second does not.
        let Counted::Held(m) = observe(&mut c, &wl) else {
            panic!("held")
        };
        assert_eq!(m, "no node can hold the devices of pod set main: ResourceClaimTemplate gpus request gpu asks 3 device(s) of DeviceClass gpu.example.com; at most 1 match on one node (node-a)");
        assert_eq!(
            c.slice("node-b", Some(&node_slice("node-b", 4))),
            vec![Key::from("ns/w")]
        );
        assert!(matches!(c.recount("ns/w"), Some(Counted::Queue(_))));
        // A slice that changes nothing for it: nothing to move.
        c.slice("node-c", Some(&node_slice("node-c", 1)));
        assert_eq!(c.recount("ns/w"), None);
        // Switched off, only the count decides.
        let mut off = Claims::new(Settings {
            placement: false,
            ..c.settings.clone()
        });
        off.template("ns", "gpus", Some(&spec(8)));
        assert!(matches!(observe(&mut off, &wl), Counted::Queue(_)));
    }

    #[test]
    fn a_workload_without_claims_is_not_kept() {
        let mut c = claims();
        let wl = workload(json!([]), false);
        assert!(matches!(observe(&mut c, &wl), Counted::Queue(_)));
        assert!(c.count("ns/w").is_none());
        assert!(c.template("ns", "gpus", Some(&spec(1))).is_empty());
    }
}
