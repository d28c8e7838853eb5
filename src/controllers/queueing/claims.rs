//! DRA claims as quota (the counting is [`crate::queueing::claims`]): the
//! ResourceClaimTemplates as the watch shows them, and each Workload that
//! uses claims with the engine's view of it before charging, so that when a
//! template it names appears or changes, its pending view is counted again.
//!
//! A Workload held inadmissible (a claim it names directly, an unmapped
//! DeviceClass, a template not there yet, the integration turned off) is
//! kept out of the engine, as Kueue keeps it out of its queues: it is never
//! admitted on CPU and memory alone, and its `QuotaReserved=False`
//! condition carries Kueue's message.

use std::collections::HashMap;

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{DeviceClassSpec, ResourceClaimSpec, ResourceSliceSpec};

use super::Key;
use crate::{
    api::kueue::v1beta2 as api,
    queueing::{
        self,
        claims::{add_to, charge, Charge, DeviceView, PodSetClaims, Settings},
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
    /// `spec.spec` of each ResourceClaimTemplate, by namespace and name.
    templates: HashMap<(String, String), ResourceClaimSpec>,
    /// ResourceSlices and DeviceClasses by name, and the view the CEL
    /// check reads, built again (when next read) after either changes.
    slices: BTreeMap<String, ResourceSliceSpec>,
    classes: BTreeMap<String, Vec<String>>,
    view: Option<DeviceView>,
    using: HashMap<Key, Using>,
}

/// What a Workload's claims decide for the engine.
#[derive(Debug, PartialEq)]
pub(super) enum Counted {
    /// Into the engine as it is (charged, or no claims).
    Queue(Box<queueing::Workload>),
    /// Kept out, pending with this message.
    Held(String),
}

fn pod_set_claims(wl: &api::Workload) -> Vec<PodSetClaims> {
    wl.spec
        .pod_sets
        .iter()
        .flatten()
        .map(|ps| PodSetClaims {
            name: ps.name.clone(),
            claims: ps
                .template
                .spec
                .as_ref()
                .and_then(|s| s.resource_claims.clone())
                .unwrap_or_default(),
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
        let at = (ns.to_string(), name.to_string());
        match spec {
            Some(spec) => self.templates.insert(at, spec.clone()),
            None => self.templates.remove(&at),
        };
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
        self.pending()
    }

    /// A DeviceClass as the watch shows it (`None`: deleted). The pending
    /// Workloads, to be counted again.
    pub(super) fn class(&mut self, name: &str, spec: Option<&DeviceClassSpec>) -> Vec<Key> {
        match spec {
            Some(s) => {
                let exprs = s
                    .selectors
                    .iter()
                    .flatten()
                    .filter_map(|s| s.cel.as_ref().map(|c| c.expression.clone()))
                    .collect();
                self.classes.insert(name.to_string(), exprs)
            }
            None => self.classes.remove(name),
        };
        self.view = None;
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
        let pod_sets = pod_set_claims(wl);
        if pod_sets.iter().all(|ps| ps.claims.is_empty()) {
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
    }

    /// Counts the claims of a Workload noted by [`Claims::observe`], from
    /// the templates known now.
    pub(super) fn count(&mut self, key: &str) -> Option<Counted> {
        if self.view.is_none() {
            let slices: Vec<&ResourceSliceSpec> = self.slices.values().collect();
            self.view = Some(DeviceView::new(
                self.classes.clone(),
                crate::devices::selectors::devices(&slices),
            ));
        }
        let devices = self.view.as_ref().expect("just built");
        let u = self.using.get(key)?;
        let mut view = u.base.clone();
        let admitted = view.admission.is_some() || view.finished;
        let ns = view.namespace.to_string();
        let found = charge(
            &u.pod_sets,
            |name| self.templates.get(&(ns.clone(), name.to_string())),
            devices,
            &self.settings,
        );
        Some(match found {
            Charge::Nothing => Counted::Queue(Box::new(view)),
            Charge::Devices(per_pod_set) => {
                add_to(&mut view.pod_sets, &per_pod_set);
                Counted::Queue(Box::new(view))
            }
            // What it holds stays held; counted again once pending.
            Charge::Inadmissible(_) if admitted => Counted::Queue(Box::new(view)),
            Charge::Inadmissible(message) => Counted::Held(message),
        })
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

    fn claims() -> Claims {
        Claims::new(Settings {
            classes: [("gpu.example.com".to_string(), "example.com/gpu".to_string())].into(),
            ..Settings::default()
        })
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
        assert_eq!(
            c.template("ns", "gpus", Some(&spec(4))),
            vec![Key::from("ns/w")]
        );
        let Some(Counted::Queue(view)) = c.count("ns/w") else {
            panic!("counted")
        };
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

    #[test]
    fn a_workload_without_claims_is_not_kept() {
        let mut c = claims();
        let wl = workload(json!([]), false);
        assert!(matches!(observe(&mut c, &wl), Counted::Queue(_)));
        assert!(c.count("ns/w").is_none());
        assert!(c.template("ns", "gpus", Some(&spec(1))).is_empty());
    }
}
