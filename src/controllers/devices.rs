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
                pools: super::jobs::store(Api::all(client.clone())),
                classes: super::jobs::store(Api::all(client.clone())),
                drivers: super::jobs::store(Api::all(client.clone())),
                claims: super::jobs::store(Api::all(client.clone())),
                entries: HashMap::new(),
                to_write: HashMap::new(),
                pools_seen: Vec::new(),
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

    /// Decides whether `admission` of Workload `key` may go ahead.
    pub fn check(&mut self, key: &str, admission: &Admission) -> Verdict {
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

/// The node a Workload's allocation pins a pod set to
/// (`kubernetes.io/hostname`), if it has one.
pub fn pinned_node(wl: &api::Workload, pod_set: &str) -> Option<String> {
    let allocs = allocation::parse(wl.annotations().get(allocation::ANNOTATION)?).ok()?;
    allocation::node_of(&allocs, pod_set).map(String::from)
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
            &super::queueing::params(),
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
