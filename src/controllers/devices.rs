//! The device placement gate of the queueing controller: before a Workload
//! whose pod templates claim devices (annotation
//! `devmgmtproto.k8s.io/device-claims`) is admitted, the placement core must
//! find, for each such pod set, one node whose DevicePools hold every pod's
//! claims, devices held by admitted Workloads deducted. If none does, the
//! admission is withdrawn and the Workload waits, set aside, with the
//! placement's reason as its pending message; it tries again when quota or
//! devices free up or pools change.
//!
//! State is written before it is acted on: the chosen allocation is written
//! to the Workload (annotation `devmgmtproto.k8s.io/device-allocation`)
//! before its admission, so an admitted Workload always carries it, the job
//! is started pinned to the chosen nodes, and after a restart the devices
//! held are recounted from admitted Workloads alone. A Workload stops
//! holding devices when it finishes, is evicted or is deleted. Devices a
//! DeviceClaim's status records (`batchgate schedule --write`) count as
//! held as well.

use std::collections::HashMap;

use kube::{runtime::reflector::Store, Api, Client, ResourceExt};

use crate::{
    api::{
        devices::v1alpha1::{DeviceClaim, DeviceClass, DeviceDriver, DevicePool},
        kueue::v1beta2 as api,
    },
    devices::{
        allocation::{self, PodSetAllocation},
        place_group, podclaims, Catalog, Pool, Usage,
    },
    queueing::Admission,
};

/// What one Workload asks for and holds.
#[derive(Debug)]
struct Entry {
    /// Per pod set with claims: its name and claims (or why they cannot be
    /// read).
    wants: Result<Vec<(String, Vec<podclaims::PodClaim>)>, String>,
    /// Devices it holds, and whether the API shows them held (an admission
    /// with the annotation) or they are assumed from a decision in flight.
    held: Option<(Vec<PodSetAllocation>, bool)>,
}

pub struct Gate {
    pools: Store<DevicePool>,
    classes: Store<DeviceClass>,
    drivers: Store<DeviceDriver>,
    claims: Store<DeviceClaim>,
    entries: HashMap<String, Entry>,
    /// Allocations decided, to be written with their admission.
    to_write: HashMap<String, String>,
    /// Pools as last seen (name, resourceVersion), to notice changes.
    pools_seen: Vec<(String, String)>,
    /// Admissions withdrawn so far.
    refusals: u64,
}

/// The gate's answer for an admission.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No devices asked for, or placed (the allocation is recorded).
    Admit,
    /// No node can hold them: why.
    Wait(String),
}

fn is_true(wl: &api::Workload, t: &str) -> bool {
    wl.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == t && c.status == "True")
}

impl Gate {
    /// Starts the watches of pools, classes, drivers and claims, and waits
    /// (bounded) for their first lists, so a restart does not refuse
    /// placements for want of pools it has not read yet. Without the
    /// device CRDs nothing is watched: no pools, so a Workload claiming
    /// devices waits with "no node has device pools".
    pub async fn start(client: &Client) -> Gate {
        let probe = Api::<DevicePool>::all(client.clone());
        let served = !matches!(
            probe.list(&kube::api::ListParams::default().limit(1)).await,
            Err(kube::Error::Api(ref e)) if e.code == 404
        );
        let gate = if served {
            Gate {
                pools: super::context::store(Api::all(client.clone())),
                classes: super::context::store(Api::all(client.clone())),
                drivers: super::context::store(Api::all(client.clone())),
                claims: super::context::store(Api::all(client.clone())),
                entries: HashMap::new(),
                to_write: HashMap::new(),
                pools_seen: Vec::new(),
                refusals: 0,
            }
        } else {
            tracing::info!("the devmgmtproto.k8s.io CRDs are not installed: no device pools to place claims on");
            Gate {
                pools: kube::runtime::reflector::store().0,
                classes: kube::runtime::reflector::store().0,
                drivers: kube::runtime::reflector::store().0,
                claims: kube::runtime::reflector::store().0,
                entries: HashMap::new(),
                to_write: HashMap::new(),
                pools_seen: Vec::new(),
                refusals: 0,
            }
        };
        if served {
            let wait = async {
                let _ = gate.pools.wait_until_ready().await;
                let _ = gate.classes.wait_until_ready().await;
                let _ = gate.drivers.wait_until_ready().await;
                let _ = gate.claims.wait_until_ready().await;
            };
            if tokio::time::timeout(std::time::Duration::from_secs(10), wait)
                .await
                .is_err()
            {
                tracing::warn!("device caches not filled after 10s; going on");
            }
        }
        gate
    }

    /// A Workload as the watch shows it. True when it stopped holding
    /// devices (others may fit now).
    pub fn observe(&mut self, key: &str, wl: &api::Workload) -> bool {
        let wants = wl
            .spec
            .pod_sets
            .iter()
            .flatten()
            .map(|ps| {
                let t = serde_json::to_value(&ps.template).unwrap_or_default();
                podclaims::of_template(&t)
                    .map(|c| (ps.name.clone(), c))
                    .map_err(|e| format!("pod set {:?}: {e}", ps.name))
            })
            .filter(|r| r.as_ref().map_or(true, |(_, c)| !c.is_empty()))
            .collect::<Result<Vec<_>, String>>();
        let admitted = is_true(wl, "QuotaReserved") && !is_true(wl, "Finished");
        let recorded = wl
            .annotations()
            .get(allocation::ANNOTATION)
            .and_then(|v| allocation::parse(v).ok());
        let none_wanted = wants.as_ref().is_ok_and(Vec::is_empty);
        let e = self.entries.entry(key.to_string()).or_insert(Entry {
            wants: Ok(Vec::new()),
            held: None,
        });
        let before = e.held.is_some();
        e.wants = wants;
        match (admitted, recorded) {
            (true, Some(allocs)) => e.held = Some((allocs, true)),
            // Not (or no longer) admitted: an assumed allocation stays
            // until its write is answered; a confirmed one is released.
            (false, _) => {
                if matches!(e.held, Some((_, true))) || is_true(wl, "Finished") {
                    e.held = None;
                }
            }
            (true, None) => {}
        }
        let released = before && e.held.is_none();
        if none_wanted && e.held.is_none() {
            self.entries.remove(key);
        }
        released
    }

    /// The Workload is gone. True when it held devices.
    pub fn forget(&mut self, key: &str) -> bool {
        self.to_write.remove(key);
        self.entries.remove(key).is_some_and(|e| e.held.is_some())
    }

    /// The admission write did not land: the assumed allocation goes.
    pub fn refused(&mut self, key: &str) {
        self.to_write.remove(key);
        if let Some(e) = self.entries.get_mut(key) {
            if matches!(e.held, Some((_, false))) {
                e.held = None;
            }
        }
    }

    /// The annotation value to write before the admission of `key`.
    pub fn take_annotation(&mut self, key: &str) -> Option<String> {
        self.to_write.remove(key)
    }

    /// Have the pools changed since last asked?
    pub fn pools_changed(&mut self) -> bool {
        let mut now: Vec<(String, String)> = self
            .pools
            .state()
            .iter()
            .map(|p| (p.name_any(), p.resource_version().unwrap_or_default()))
            .collect();
        now.sort();
        if now == self.pools_seen {
            return false;
        }
        self.pools_seen = now;
        true
    }

    fn catalog(&self) -> Catalog {
        Catalog {
            drivers: self
                .drivers
                .state()
                .iter()
                .map(|d| (d.name_any(), d.device_types.clone()))
                .collect(),
            classes: self
                .classes
                .state()
                .iter()
                .map(|c| (c.name_any(), c.spec.clone()))
                .collect(),
        }
    }

    /// How many admissions [`Gate::check`] has withdrawn so far.
    pub fn refusals(&self) -> u64 {
        self.refusals
    }

    /// Decides whether `admission` of Workload `key` may go ahead.
    /// Whether the Workload claims devices at all: only those are placed
    /// and charged device quota.
    pub(super) fn claims_devices(&self, key: &str) -> bool {
        self.entries
            .get(key)
            .is_some_and(|e| e.wants.as_ref().is_ok_and(|w| !w.is_empty()))
    }

    pub fn check(&mut self, key: &str, admission: &Admission) -> Verdict {
        let v = self.decide(key, admission);
        if v != Verdict::Admit {
            self.refusals += 1;
        }
        v
    }

    fn decide(&mut self, key: &str, admission: &Admission) -> Verdict {
        let Some(entry) = self.entries.get(key) else {
            return Verdict::Admit;
        };
        let wants = match &entry.wants {
            Ok(w) if w.is_empty() => return Verdict::Admit,
            Ok(w) => w.clone(),
            Err(e) => return Verdict::Wait(format!("the device claims cannot be read: {e}")),
        };
        let namespace = key.split_once('/').map_or("", |(ns, _)| ns);
        let mut used = Usage::default();
        // Devices recorded in DeviceClaims' status (`batchgate schedule
        // --write`, or another allocator) are held too.
        for c in self.claims.state() {
            if let Some(allocs) = c.status.as_ref().and_then(|s| s.allocations.as_ref()) {
                used.add(allocs);
            }
        }
        for (k, e) in &self.entries {
            if k != key {
                if let Some((allocs, _)) = &e.held {
                    allocation::charge(&mut used, allocs);
                }
            }
        }
        let pools: Vec<Pool> = self
            .pools
            .state()
            .iter()
            .map(|p| Pool {
                name: p.name_any(),
                spec: p.spec.clone(),
            })
            .collect();
        let catalog = self.catalog();
        let mut placed = Vec::new();
        for (pod_set, pod_claims) in wants {
            let count = admission
                .pod_set_assignments
                .iter()
                .find(|a| a.name == pod_set)
                .map_or(1, |a| a.count.max(1) as usize);
            let claims = match podclaims::resolve(&pod_claims, |n| {
                self.claims
                    .get(&kube::runtime::reflector::ObjectRef::new(n).within(namespace))
                    .map(|c| c.spec.clone())
            }) {
                Ok(c) => c,
                Err(e) => return Verdict::Wait(format!("pod set {pod_set:?}: {e}")),
            };
            match place_group(&claims, count, &pools, &catalog, &used) {
                Ok(g) => {
                    for a in g.all_allocations() {
                        used.add(std::slice::from_ref(a));
                    }
                    placed.push(PodSetAllocation {
                        pod_set,
                        placement: g,
                    });
                }
                Err(reason) => {
                    return Verdict::Wait(format!(
                        "couldn't place the device claims of pod set {pod_set:?} ({count} pods): {reason}"
                    ))
                }
            }
        }
        self.to_write
            .insert(key.to_string(), allocation::render(&placed));
        if let Some(e) = self.entries.get_mut(key) {
            e.held = Some((placed, false));
        }
        Verdict::Admit
    }
}

/// The ClusterQueue resource a device type is charged as:
/// `devmgmtproto.k8s.io/<deviceType>` (e.g. `devmgmtproto.k8s.io/gpu`).
pub fn quota_resource(device_type: &str) -> String {
    format!("{}/{device_type}", crate::api::devices::GROUP)
}

/// Charges a Workload's devices as quota: each pod set with claims
/// requests, per pod, its claims' device counts under
/// [`quota_resource`] of their class's device type — for the resources its
/// ClusterQueue `cq` covers only (Kueue refuses a pod set requesting a
/// resource its queue does not cover, so device quota is opt-in per queue).
pub(super) fn charge(
    gate: &Gate,
    key: &str,
    wl: &mut crate::queueing::Workload,
    cq: Option<&crate::queueing::ClusterQueue>,
) {
    let Some(cq) = cq else { return };
    let Some(Ok(wants)) = gate.entries.get(key).map(|e| &e.wants) else {
        return;
    };
    let namespace = key.split_once('/').map_or("", |(ns, _)| ns);
    let catalog = gate.catalog();
    for (pod_set, pod_claims) in wants {
        let Ok(claims) = podclaims::resolve(pod_claims, |n| {
            gate.claims
                .get(&kube::runtime::reflector::ObjectRef::new(n).within(namespace))
                .map(|c| c.spec.clone())
        }) else {
            continue;
        };
        let mut per_pod: std::collections::BTreeMap<String, i64> = Default::default();
        for c in &claims {
            if let Ok(r) = crate::devices::resolve(c, &catalog) {
                *per_pod.entry(quota_resource(&r.device_type)).or_default() += r.count;
            }
        }
        let Some(ps) = wl.pod_sets.iter_mut().find(|p| &*p.name == pod_set) else {
            continue;
        };
        for (resource, count) in per_pod {
            if cq.group_for(&resource).is_some() {
                ps.requests.insert(&resource, count.saturating_mul(1000));
            }
        }
    }
}

/// Writes the allocation annotation (on the resourceVersion the decision
/// was made from); the new resourceVersion, or `None` if it did not land.
pub(super) async fn record(
    api: &Api<api::Workload>,
    name: &str,
    resource_version: &str,
    value: String,
) -> Option<String> {
    let patch = serde_json::json!({"metadata": {
        "resourceVersion": resource_version,
        "annotations": {allocation::ANNOTATION: value},
    }});
    match api
        .patch(
            name,
            &super::context::params(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
    {
        Ok(w) => Some(w.resource_version().unwrap_or_default()),
        Err(e) => {
            tracing::warn!(workload = %name, error = %e, "device allocation not recorded; admission withdrawn");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::runtime::{reflector, watcher};
    use serde_json::json;

    use super::*;
    use crate::controllers::context::pinned_node;
    use crate::queueing::PodSetAssignment;

    fn filled<K>(objects: Vec<serde_json::Value>) -> Store<K>
    where
        K: kube::Resource<DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        let (store, mut writer) = reflector::store();
        for o in objects {
            writer.apply_watcher_event(&watcher::Event::Apply(serde_json::from_value(o).unwrap()));
        }
        store
    }

    fn gate() -> Gate {
        let pool = |name: &str, node: &str| {
            json!({"apiVersion": "devmgmtproto.k8s.io/v1alpha1", "kind": "DevicePool",
                   "metadata": {"name": name},
                   "spec": {"nodeName": node, "driver": "foozer", "count": 4}})
        };
        Gate {
            pools: filled(vec![pool("n1-foozer", "n1"), pool("n2-foozer", "n2")]),
            classes: filled(vec![json!({"apiVersion": "devmgmtproto.k8s.io/v1alpha1",
                "kind": "DeviceClass", "metadata": {"name": "foozer"},
                "spec": {"deviceType": "gpu"}})]),
            drivers: filled(vec![json!({"apiVersion": "devmgmtproto.k8s.io/v1alpha1",
                "kind": "DeviceDriver", "metadata": {"name": "foozer"}, "deviceTypes": ["gpu"]})]),
            claims: filled(vec![]),
            entries: HashMap::new(),
            to_write: HashMap::new(),
            pools_seen: Vec::new(),
            refusals: 0,
        }
    }

    /// A Workload of 2 pods claiming 2 devices each, with the given status
    /// conditions and recorded allocation.
    fn workload(
        name: &str,
        conditions: serde_json::Value,
        allocation: Option<&str>,
    ) -> api::Workload {
        let mut annotations = serde_json::Map::new();
        if let Some(a) = allocation {
            annotations.insert(allocation::ANNOTATION.into(), json!(a));
        }
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "annotations": annotations},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": {
                "metadata": {"annotations": {podclaims::ANNOTATION:
                    r#"[{"name": "gpus", "claim": {"deviceClass": "foozer", "minDeviceCount": 2}}]"#}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}]},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    fn cond(t: &str, s: &str) -> serde_json::Value {
        json!({"type": t, "status": s, "reason": "R", "message": "",
               "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    fn admission() -> Admission {
        Admission {
            cluster_queue: "cq".into(),
            pod_set_assignments: vec![PodSetAssignment {
                name: "main".into(),
                flavors: Default::default(),
                resource_usage: Default::default(),
                count: 2,
                topology: None,
            }],
        }
    }

    #[test]
    fn held_devices_are_recounted_from_admitted_workloads_and_released() {
        let mut g = gate();
        // As after a restart: one admitted Workload holds all of n1.
        let mut a_alloc = gate();
        a_alloc.observe("ns/a", &workload("a", json!([]), None));
        assert_eq!(a_alloc.check("ns/a", &admission()), Verdict::Admit);
        let recorded = a_alloc.take_annotation("ns/a").unwrap();
        assert!(recorded.contains("\"nodeName\":\"n1\""), "{recorded}");
        let a = workload("a", json!([cond("QuotaReserved", "True")]), Some(&recorded));
        assert!(!g.observe("ns/a", &a));

        // The next goes to n2; the one after finds no room.
        g.observe("ns/b", &workload("b", json!([]), None));
        assert_eq!(g.check("ns/b", &admission()), Verdict::Admit);
        let b = g.take_annotation("ns/b").unwrap();
        assert!(b.contains("\"nodeName\":\"n2\""), "{b}");
        g.observe("ns/c", &workload("c", json!([]), None));
        let Verdict::Wait(why) = g.check("ns/c", &admission()) else {
            panic!("c placed over held devices");
        };
        assert_eq!(why, "couldn't place the device claims of pod set \"main\" (2 pods): 0/2 nodes with device pools can satisfy the device claims: n1: could not satisfy these claims: gpus (no available devices); n2: could not satisfy these claims: gpus (no available devices)");

        // b's admission write fails: its assumed devices are free again.
        g.refused("ns/b");
        assert_eq!(g.check("ns/c", &admission()), Verdict::Admit);
        assert!(g
            .take_annotation("ns/c")
            .unwrap()
            .contains("\"nodeName\":\"n2\""));

        // A stale event of c (no admission yet) keeps its assumed devices.
        assert!(!g.observe("ns/c", &workload("c", json!([]), None)));
        g.observe("ns/b", &workload("b", json!([]), None));
        assert!(matches!(g.check("ns/b", &admission()), Verdict::Wait(_)));

        // a finishes: released, and b fits on n1.
        let done = workload(
            "a",
            json!([cond("QuotaReserved", "True"), cond("Finished", "True")]),
            Some(&recorded),
        );
        assert!(g.observe("ns/a", &done));
        assert_eq!(g.check("ns/b", &admission()), Verdict::Admit);
        assert_eq!(
            pinned_node(
                &workload("b", json!([]), g.take_annotation("ns/b").as_deref()),
                "main"
            )
            .as_deref(),
            Some("n1")
        );

        // Devices are charged as quota where the ClusterQueue covers their
        // type, 2 per pod here.
        let cq = |covered: &[&str]| crate::queueing::ClusterQueue {
            name: "cq".into(),
            cohort: None,
            queueing_strategy: Default::default(),
            namespace_selector: None,
            resource_groups: vec![crate::queueing::ResourceGroup {
                covered_resources: covered.iter().map(|r| r.to_string()).collect(),
                flavors: Vec::new(),
            }],
            preemption: Default::default(),
            flavor_fungibility: Default::default(),
            stop_policy: Default::default(),
            admission_fair_sharing: false,
            terminating: false,
        };
        let mut e = super::super::translation::workload(&workload("c", json!([]), None)).unwrap();
        charge(&g, "ns/c", &mut e, Some(&cq(&["cpu"])));
        assert_eq!(e.pod_sets[0].requests.get("devmgmtproto.k8s.io/gpu"), None);
        charge(
            &g,
            "ns/c",
            &mut e,
            Some(&cq(&["cpu", "devmgmtproto.k8s.io/gpu"])),
        );
        assert_eq!(
            e.pod_sets[0].requests.get("devmgmtproto.k8s.io/gpu"),
            Some(2000)
        );

        // A Workload without claims is never held back.
        let mut plain = workload("p", json!([]), None);
        plain.spec.pod_sets.as_mut().unwrap()[0].template.metadata = None;
        g.observe("ns/p", &plain);
        assert_eq!(g.check("ns/p", &admission()), Verdict::Admit);
        assert!(g.take_annotation("ns/p").is_none());
    }
}
