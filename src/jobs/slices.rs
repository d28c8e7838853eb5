//! Workload slices of an elastic job (Kueue's `workloadslicing`, KEP-77,
//! ElasticJobsViaWorkloadSlices on by default): a job annotated
//! `kueue.x-k8s.io/elastic-job: "true"` may change its pod counts while it
//! runs. A scale-down or a change before admission resizes its Workload in
//! place; a scale-up of an admitted Workload makes a new slice that names
//! the old one (`kueue.x-k8s.io/workload-slice-replacement-for`), keeps the
//! job running on the old slice's quota while it waits, and replaces it
//! once admitted. Pure: the job's counts and its unfinished Workloads in,
//! the slice to use and the slices to finish out.

use std::collections::BTreeMap;

use crate::api::kueue::v1beta2::{self as api, condition, Conditions};
use serde_json::Value;

use crate::vocabulary::keys::{ELASTIC_JOB_SCHEDULING_GATE, SLICE_REPLACEMENT_FOR_ANNOTATION};

/// Pod set name → count.
pub type Counts = BTreeMap<String, i64>;

/// Kueue's `HasFewerReplicasThan`: some pod set of `a` that `b` also has
/// has fewer pods in `a`.
fn fewer(a: &Counts, b: &Counts) -> bool {
    a.iter().any(|(name, n)| b.get(name).is_some_and(|m| n < m))
}

/// Kueue's `ScaledDown`: some pod set has fewer pods in `new` and none
/// has more.
pub fn scaled_down(old: &Counts, new: &Counts) -> bool {
    fewer(new, old) && !fewer(old, new)
}

/// What the plan needs to know of one of the job's unfinished Workloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// `namespace/name`.
    pub key: String,
    pub counts: Counts,
    /// `QuotaReserved=True`.
    pub reserved: bool,
    /// `Evicted=True`.
    pub evicted: bool,
    /// The slice it replaces (`namespace/name`).
    pub replaces: Option<String>,
}

impl Slice {
    pub fn of(wl: &api::Workload) -> Self {
        let conds = Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()));
        Slice {
            key: format!(
                "{}/{}",
                wl.metadata.namespace.as_deref().unwrap_or_default(),
                wl.metadata.name.as_deref().unwrap_or_default()
            ),
            counts: counts_of(wl),
            reserved: conds.is_true(condition::QUOTA_RESERVED),
            evicted: conds.is_true(condition::EVICTED),
            replaces: wl
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SLICE_REPLACEMENT_FOR_ANNOTATION).cloned()),
        }
    }
}

/// A Workload's pod set counts.
pub fn counts_of(wl: &api::Workload) -> Counts {
    wl.spec
        .pod_sets
        .iter()
        .flatten()
        .map(|ps| (ps.name.clone(), i64::from(ps.count)))
        .collect()
}

/// The slice the job goes on with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// No slice fits: a new one, replacing the slice at this index (the
    /// admitted one a scale-up outgrew) if any.
    New { replaces: Option<usize> },
    /// The slice at this index, as it is.
    Keep(usize),
    /// The slice at this index, its pod sets' counts set to the job's (not
    /// admitted yet, or scaled down).
    Resize(usize),
    /// The job's pod sets are not the slice's (other names): not a matter
    /// of counts; the job reconciler's ordinary rules apply.
    Incompatible,
}

/// A slice finished because a newer slice of its job replaced it
/// (Kueue's `IsReplaced`: `Finished=True`, reason `WorkloadSliceReplaced`).
pub fn replaced(wl: &api::Workload) -> bool {
    Conditions::of(wl.status.as_ref().and_then(|s| s.conditions.as_ref()))
        .get(condition::FINISHED)
        .is_some_and(|c| c.status == "True" && c.reason == REPLACED.0)
}

/// Why and how a slice is finished (`Finished=True`).
pub const REPLACED: (&str, &str) = (
    "WorkloadSliceReplaced",
    "Replaced to accommodate a new workload slice",
);
pub const OUT_OF_SYNC: (&str, &str) = (
    "OutOfSync",
    "The workload slice is out of sync with its parent job",
);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Slices to finish first: index, then `Finished` reason and message.
    pub finish: Vec<(usize, &'static str, &'static str)>,
    pub pick: Pick,
}

/// Kueue's `EnsureWorkloadSlices`: `slices` are the job's unfinished
/// Workloads, oldest first (creation time, then UID).
pub fn plan(job: &Counts, slices: &[Slice]) -> Plan {
    let (finish, selected) = match slices.len() {
        0 => {
            return Plan {
                finish: Vec::new(),
                pick: Pick::New { replaces: None },
            }
        }
        1 => (Vec::new(), Some(0)),
        _ => normalize(slices),
    };
    let Some(i) = selected else {
        return Plan {
            finish,
            pick: Pick::New { replaces: None },
        };
    };
    let s = &slices[i];
    let same_keys = s.counts.len() == job.len() && job.keys().all(|k| s.counts.contains_key(k));
    let pick = if !same_keys {
        Pick::Incompatible
    } else if *job == s.counts {
        Pick::Keep(i)
    } else if !s.reserved || scaled_down(&s.counts, job) {
        Pick::Resize(i)
    } else {
        Pick::New { replaces: Some(i) }
    };
    Plan { finish, pick }
}

/// Kueue's `normalizeActiveSlices`: keeps the admitted slice at the head
/// of the replacement chain and at most one pending replacement of it
/// (or, with none admitted, the newest not evicted); every other slice is
/// finished. Returns those to finish and the one selected.
pub fn normalize(slices: &[Slice]) -> (Vec<(usize, &'static str, &'static str)>, Option<usize>) {
    // Replacements by the slice they replace; of two claims (a forked
    // chain) the reserved one wins.
    let mut replacements: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, s) in slices.iter().enumerate() {
        let Some(target) = s.replaces.as_deref().filter(|_| !s.evicted) else {
            continue;
        };
        match replacements.get(target) {
            Some(&j) if slices[j].reserved || !s.reserved => {}
            _ => {
                replacements.insert(target, i);
            }
        }
    }
    let replaced_by_reserved = |s: &Slice| {
        replacements
            .get(s.key.as_str())
            .is_some_and(|&r| slices[r].reserved)
    };
    let (mut latest_reserved, mut latest_live) = (None, None);
    for (i, s) in slices.iter().enumerate() {
        if s.evicted {
            continue;
        }
        latest_live = Some(i);
        if s.reserved && !replaced_by_reserved(s) {
            latest_reserved = Some(i);
        }
    }
    let pending = latest_reserved
        .and_then(|i| replacements.get(slices[i].key.as_str()).copied())
        .filter(|&r| !slices[r].reserved);
    let selected = pending.or(latest_reserved).or(latest_live);
    let finish = (0..slices.len())
        .filter(|&i| Some(i) != selected && Some(i) != latest_reserved)
        .map(|i| {
            let (reason, message) = if replacements.contains_key(slices[i].key.as_str()) {
                REPLACED
            } else {
                OUT_OF_SYNC
            };
            (i, reason, message)
        })
        .collect();
    (finish, selected)
}

/// The slice the elastic-job ungater measures against: the newest that
/// holds quota and is not being evicted (Kueue's
/// `FindLatestActiveWorkload`), among slices oldest first.
pub fn latest_active(slices: &[Slice]) -> Option<usize> {
    slices.iter().rposition(|s| s.reserved && !s.evicted)
}

/// One of the job's pods, as the ungater sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFacts {
    pub name: String,
    /// The `kueue.x-k8s.io/podset` label (`None`: not stamped).
    pub pod_set: Option<String>,
    /// Still carries the `kueue.x-k8s.io/elastic-job` scheduling gate.
    pub gated: bool,
    /// Succeeded or Failed.
    pub terminated: bool,
}

/// The pod set a pod counts against: its label, or the only pod set.
fn pod_set_of(p: &PodFacts, granted: &Counts) -> Option<String> {
    p.pod_set.clone().or_else(|| {
        (granted.len() == 1)
            .then(|| granted.keys().next().cloned())
            .flatten()
    })
}

/// Kueue's ElasticJobUngater (`podsToUngate`): per pod set, the gated pods
/// to let go, lowest names first, so that with the pods already ungated
/// no more run than the admitted slice grants. A pod without a pod set
/// label belongs to the only pod set, if there is one.
pub fn to_ungate<'p>(granted: &Counts, pods: &'p [PodFacts]) -> Vec<&'p str> {
    let mut gated: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut running: BTreeMap<String, i64> = BTreeMap::new();
    for p in pods.iter().filter(|p| !p.terminated) {
        let Some(ps) = pod_set_of(p, granted) else {
            continue;
        };
        if p.gated {
            gated.entry(ps).or_default().push(&p.name);
        } else {
            *running.entry(ps).or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for (ps, mut names) in gated {
        let room = granted.get(&ps).copied().unwrap_or(0) - running.get(&ps).copied().unwrap_or(0);
        if room <= 0 {
            continue;
        }
        names.sort_unstable();
        out.extend(names.into_iter().take(room as usize));
    }
    out
}

/// Whether some pod set has fewer pods (finished ones too) than the slice
/// grants: its operator has yet to create them. Kueue's ungater watches
/// pods; the shell looks again soon instead, only while this holds.
pub fn awaiting_pods(granted: &Counts, pods: &[PodFacts]) -> bool {
    let mut have: BTreeMap<String, i64> = BTreeMap::new();
    for ps in pods.iter().filter_map(|p| pod_set_of(p, granted)) {
        *have.entry(ps).or_default() += 1;
    }
    granted
        .iter()
        .any(|(ps, n)| have.get(ps).copied().unwrap_or(0) < *n)
}

/// The JSON patch removing the elastic-job gate at `index` of a pod's
/// scheduling gates, on the condition that it is still there.
pub fn ungate_patch(index: usize) -> Value {
    let at = format!("/spec/schedulingGates/{index}");
    serde_json::json!([
        {"op": "test", "path": format!("{at}/name"), "value": ELASTIC_JOB_SCHEDULING_GATE},
        {"op": "remove", "path": at},
    ])
}

#[cfg(test)]
mod tests;
