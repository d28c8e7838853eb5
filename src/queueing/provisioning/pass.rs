//! One pass of the ProvisioningRequest check over a Workload, decided
//! without a cluster (`syncCheckStates` then `syncOwnedProvisionRequest` of
//! Kueue's controller): what the controller read (the Workload, this
//! controller's checks with their configs, the Workload's own requests)
//! and the time in; the check states to write, the requests to delete and
//! the requests to create or whose templates to hand over out. Beside it,
//! the smaller decisions of the same controller: a template's hand-over
//! ([`handed_over`]), the AdmissionCheck's `Active` condition ([`active`])
//! and the states after a refused create ([`failed`]).
//! `controllers::provisioning` reads and executes them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use serde_json::{json, Value};

use super::{
    active_or_last, attempt_to_create, is_needed, merged_pod_sets, next_state, request_name,
    updated_message, MergedPodSet, Need, ProvisioningError, Request, WorkloadFacts,
};
use crate::api::kueue::v1beta2::{
    condition, AdmissionCheck, AdmissionCheckState, Conditions, ProvisioningRequestConfigSpec,
    Workload, ADMISSION_CHECK_ACTIVE,
};

/// Where a Workload stands for this controller, before anything is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Neither holding quota nor done: nothing to provision or clean up.
    Idle,
    /// Holding quota: its requests are made and followed.
    Holding,
    /// Finished or evicted: its requests go
    /// (`CleanupProvisioningRequestsOnEviction`, on by default).
    Ending,
}

pub fn stage(wl: &Workload) -> Stage {
    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    if conds.is_true(condition::FINISHED) || conds.is_true(condition::EVICTED) {
        Stage::Ending
    } else if conds.is_true(condition::QUOTA_RESERVED) && status.admission.is_some() {
        Stage::Holding
    } else {
        Stage::Idle
    }
}

/// What a pass read.
pub struct Facts<'a> {
    pub wl: &'a Workload,
    /// This controller's checks among the Workload's states, each with its
    /// ProvisioningRequestConfig (`None`: missing or invalid; the check is
    /// inactive).
    pub checks: &'a BTreeMap<String, Option<ProvisioningRequestConfigSpec>>,
    /// The Workload's own ProvisioningRequests.
    pub owned: &'a [Request],
    pub now: &'a Time,
    /// A fraction in `[0, 1)` for the retry backoff's jitter.
    pub jitter: f64,
}

/// What to do for one check once the states are in step.
#[derive(Debug, Clone, PartialEq)]
pub enum Provision {
    /// Create the request `name` (and first its pod templates, one per
    /// merged pod set), then hand the templates to it.
    Create {
        check: String,
        name: String,
        pod_sets: Vec<MergedPodSet>,
    },
    /// No request is due: hand the last request's templates to it.
    Adopt {
        request: String,
        templates: Vec<String>,
    },
}

/// A pass's decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Pass {
    /// None of the Workload's checks is this controller's.
    Nothing,
    /// Delete these requests (the Workload is ending).
    Clean { delete: Vec<String> },
    /// Write `states` as `status.admissionChecks`, then record each
    /// message as an `AdmissionCheckUpdated` event; the write brings the
    /// Workload back, and the next pass makes what the new states ask.
    States {
        states: Vec<AdmissionCheckState>,
        updated: Vec<String>,
    },
    /// The states are in step: delete the requests no check uses, then
    /// provision each check in order.
    Sync {
        delete: Vec<String>,
        provision: Vec<Provision>,
    },
}

/// The pass, for a Workload at `stage` [`Stage::Holding`] or
/// [`Stage::Ending`].
pub fn pass(f: &Facts<'_>) -> Result<Pass, ProvisioningError> {
    if f.checks.is_empty() {
        return Ok(Pass::Nothing);
    }
    if stage(f.wl) == Stage::Ending {
        return Ok(Pass::Clean {
            delete: f.owned.iter().map(|r| r.name.clone()).collect(),
        });
    }
    let wl = f.wl;
    let name = wl.metadata.name.as_deref().unwrap_or_default();
    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    let mut needed: BTreeMap<&str, bool> = BTreeMap::new();
    let mut last: BTreeMap<&str, &Request> = BTreeMap::new();
    for (check, config) in f.checks {
        let Some(config) = config else { continue };
        let need = is_needed(wl, config)?;
        needed.insert(check, need);
        if let Some(r) = active_or_last(f.owned, name, check, need, config) {
            last.insert(check, r);
        }
    }

    // syncCheckStates.
    let pod_sets: Vec<String> = wl
        .spec
        .pod_sets
        .iter()
        .flatten()
        .map(|p| p.name.clone())
        .collect();
    let facts = WorkloadFacts {
        name,
        pod_sets: &pod_sets,
        admitted: conds.is_true(condition::ADMITTED),
        active_unfinished: wl.spec.active != Some(false) && !conds.is_true(condition::FINISHED),
    };
    let states = status.admission_checks.clone().unwrap_or_default();
    let mut new_states = states.clone();
    let mut updated = Vec::new();
    for (check, config) in f.checks {
        let need = match config {
            None => Need::Inactive,
            Some(_) if !needed.get(check.as_str()).copied().unwrap_or(false) => Need::NotNeeded,
            Some(_) => Need::Request(last.get(check.as_str()).copied()),
        };
        let Some(i) = new_states.iter().position(|s| &s.name == check) else {
            continue;
        };
        if let Some(next) = next_state(
            &new_states[i],
            need,
            config.as_ref(),
            &facts,
            f.now,
            f.jitter,
        ) {
            if next.state != new_states[i].state {
                updated.push(updated_message(check, &new_states[i].state, &next));
            }
            new_states[i] = next;
        }
    }
    if new_states != states {
        return Ok(Pass::States {
            states: new_states,
            updated,
        });
    }

    // Requests no check uses any more.
    let delete = f
        .owned
        .iter()
        .filter(|r| !last.values().any(|l| l.name == r.name))
        .map(|r| r.name.clone())
        .collect();
    // syncOwnedProvisionRequest.
    let mut provision = Vec::new();
    for (check, config) in f.checks {
        let Some(config) = config else { continue };
        if !needed.get(check.as_str()).copied().unwrap_or(false) {
            continue;
        }
        let state = states.iter().find(|s| &s.name == check);
        let prev = last.get(check.as_str()).copied();
        match attempt_to_create(state, prev, name, facts.admitted) {
            None => provision.extend(prev.map(|pr| Provision::Adopt {
                request: pr.name.clone(),
                templates: pr.pod_sets.iter().map(|(t, _)| t.clone()).collect(),
            })),
            Some(attempt) => provision.push(Provision::Create {
                check: check.clone(),
                name: request_name(name, check, attempt),
                pod_sets: merged_pod_sets(wl, config)?,
            }),
        }
    }
    Ok(Pass::Sync { delete, provision })
}

/// A pod template's owner references once handed from the Workload
/// (`workload_uid`) to its request (`request`, `request_uid`), Kueue's
/// `syncProvisionRequestsPodTemplates`; `None` when there is nothing to
/// write: the Workload does not control it, because it was not made for
/// this Workload (a same-named template of someone else's is never
/// adopted) or the request controls it already (an object has one
/// controller).
pub fn handed_over(
    refs: &[OwnerReference],
    workload_uid: &str,
    request: &str,
    request_uid: &str,
) -> Option<Vec<Value>> {
    let controls = |uid: &str| {
        !uid.is_empty()
            && refs
                .iter()
                .any(|o| o.uid == uid && o.controller == Some(true))
    };
    if !controls(workload_uid) {
        return None;
    }
    let mut kept: Vec<Value> = refs
        .iter()
        .filter(|o| o.uid != workload_uid)
        .filter_map(|o| serde_json::to_value(o).ok())
        .collect();
    kept.push(json!({
        "apiVersion": format!("{}/{}", super::GROUP, super::VERSION),
        "kind": super::KIND,
        "name": request,
        "uid": request_uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }));
    Some(kept)
}

/// The AdmissionCheck's conditions with `Active` set as
/// [`super::active_condition`] says, or `None` when its status would not
/// flip (Kueue writes only then). `config_found`: the config it names
/// exists.
pub fn active(ac: &AdmissionCheck, config_found: bool, now: &Time) -> Option<Conditions> {
    let (status, reason, message) =
        super::active_condition(ac.spec.parameters.as_ref(), config_found);
    let conds = Conditions::of(ac.status.as_ref().and_then(|s| s.conditions.as_ref()));
    if conds
        .get(ADMISSION_CHECK_ACTIVE)
        .map(|c| c.status == "True")
        == Some(status)
    {
        return None;
    }
    let mut c = conds.clone();
    c.set(
        ADMISSION_CHECK_ACTIVE,
        status,
        reason,
        &message,
        now,
        ac.metadata.generation,
    );
    Some(c)
}

/// Kueue's `handleError` after a refused create: the Workload's check
/// states with `check`'s message replaced by the error (cut at 32 KiB), or
/// `None` when the Workload has no such state.
pub fn failed(wl: &Workload, check: &str, message: &str) -> Option<Vec<AdmissionCheckState>> {
    let mut states = wl
        .status
        .as_ref()
        .and_then(|s| s.admission_checks.clone())
        .unwrap_or_default();
    let s = states.iter_mut().find(|s| s.name == check)?;
    s.message = message.chars().take(32 * 1024).collect();
    Some(states)
}

#[cfg(test)]
mod tests;
