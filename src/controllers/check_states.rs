//! The admission-check half of Kueue's workload controller: for each
//! Workload of a ClusterQueue with `admissionChecksStrategy`, keeps
//! `status.admissionChecks` in step with the checks it needs (a `Pending`
//! state per check), writes `Admitted=True` once its quota is reserved and
//! every check is `Ready`, evicts it when a check asks to `Retry` (the quota
//! goes back, the Workload queues again, its checks reset to `Pending`) and
//! marks it `DeactivationTarget` when a check is `Rejected` (the job
//! reconciler then deactivates it). The decisions are the pure
//! [`crate::queueing::admission_checks`]; this module reads and writes.
//!
//! The checks' own controllers (an external one, or the ProvisioningRequest
//! check) set each state; the queueing engine reserves the quota without
//! `Admitted` (see `queueing::admission_checks`).

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{
    runtime::{
        controller::Action,
        predicates,
        reflector::{self, ObjectRef, Store},
        watcher::{self, watcher},
        WatchStreamExt,
    },
    Api, Client, ResourceExt,
};
use serde_json::json;
use tracing::debug;

use super::context::{store, workload_controller, write_workload_status, JobError, Shared};
use crate::api::kueue::v1beta2::Conditions;
use crate::jobs::machine::release;
use crate::{
    api::kueue::v1beta2::{self as api, condition, eviction_reason},
    queueing::admission_checks::{self as checks, Verdict},
};

struct Ctx {
    shared: Shared,
    cluster_queues: Store<api::ClusterQueue>,
    local_queues: Store<api::LocalQueue>,
}

/// Runs until the process ends.
pub async fn run(shared: Shared) {
    let client: Client = shared.client.clone();
    let local_queues = store(Api::<api::LocalQueue>::all(client.clone()));
    let _ = local_queues.wait_until_ready().await;
    // The ClusterQueue store is fed by the stream that triggers on a
    // queue's spec change (not on its status, written up to once a
    // second), so a reconcile it triggers reads the new spec.
    let writer = reflector::store::Writer::default();
    let cluster_queues = writer.as_reader();
    let queue_changes = crate::cluster::watch::ready_objects(
        "clusterqueues.kueue.x-k8s.io".into(),
        watcher(
            Api::<api::ClusterQueue>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff(),
        writer,
        (),
    )
    .predicate_filter(predicates::generation, Default::default());
    let ctx = Arc::new(Ctx {
        shared,
        cluster_queues,
        local_queues,
    });
    let controller = workload_controller(client.clone());
    let all = controller.store();
    // A queue's checks changed: look at its Workloads again.
    let by_queue = move |cq: api::ClusterQueue| {
        let name = cq.name_any();
        all.state()
            .into_iter()
            .filter(|w| {
                w.status
                    .as_ref()
                    .and_then(|s| s.admission.as_ref())
                    .and_then(|a| a.cluster_queue.as_deref())
                    .is_none_or(|c| c == name)
            })
            .map(|w| ObjectRef::from_obj(&*w))
            .collect::<Vec<_>>()
    };
    controller
        .watches_stream(queue_changes, by_queue)
        .run(reconcile, error_policy, ctx)
        .for_each(|r| {
            if let Err(e) = r {
                debug!(error = %e, "admission checks reconcile");
            }
            futures::future::ready(())
        })
        .await;
}

fn error_policy(_: Arc<api::Workload>, _: &JobError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

fn now_time() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

impl Ctx {
    /// The ClusterQueue a Workload is admitted to, else the one its
    /// LocalQueue points to.
    fn cluster_queue(&self, wl: &api::Workload) -> Option<Arc<api::ClusterQueue>> {
        let admitted = wl
            .status
            .as_ref()
            .and_then(|s| s.admission.as_ref())
            .and_then(|a| a.cluster_queue.clone());
        let name = match admitted {
            Some(n) => n,
            None => {
                let lq = self.local_queues.get(
                    &ObjectRef::new(wl.spec.queue_name.as_deref()?)
                        .within(&wl.namespace().unwrap_or_default()),
                )?;
                lq.spec.cluster_queue.clone()?
            }
        };
        self.cluster_queues.get(&ObjectRef::new(&name))
    }

    async fn event(&self, wl: &api::Workload, warning: bool, reason: &str, note: String) {
        self.shared.workload_event(wl, warning, reason, note).await;
    }
}

/// The flavors of a ClusterQueue, in order, once each.
fn cq_flavors(cq: &api::ClusterQueue) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in cq
        .spec
        .resource_groups
        .iter()
        .flatten()
        .flat_map(|g| &g.flavors)
    {
        if !out.contains(&f.name) {
            out.push(f.name.clone());
        }
    }
    out
}

async fn reconcile(wl: Arc<api::Workload>, ctx: Arc<Ctx>) -> Result<Action, JobError> {
    if ctx.shared.leading().await {
        return Ok(Action::requeue(Duration::ZERO));
    }
    let status = wl.status.clone().unwrap_or_default();
    let conds = Conditions::of(status.conditions.as_ref());
    if conds.is_true(condition::FINISHED) || wl.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let Some(cq) = ctx.cluster_queue(&wl) else {
        return Ok(Action::await_change());
    };
    let flavors = cq_flavors(&cq);
    let rules = cq
        .spec
        .admission_checks_strategy
        .iter()
        .flat_map(|s| &s.admission_checks)
        .map(|r| (r.name.clone(), r.on_flavors.clone().unwrap_or_default()));
    let strategy = checks::strategy(rules, flavors.iter().map(String::as_str));
    let assigned: Option<BTreeSet<String>> = status.admission.as_ref().map(|a| {
        a.pod_set_assignments
            .iter()
            .flatten()
            .flat_map(|p| p.flavors.iter().flatten().map(|(_, f)| f.clone()))
            .collect()
    });
    let all: BTreeSet<String> = flavors.into_iter().collect();
    let required = checks::for_workload(&strategy, &all, assigned.as_ref());
    let states = status.admission_checks.clone().unwrap_or_default();
    let now = now_time();
    let wl_api = Api::<api::Workload>::namespaced(
        ctx.shared.client.clone(),
        &wl.namespace().unwrap_or_default(),
    );
    let reserved = conds.is_true(condition::QUOTA_RESERVED) && status.admission.is_some();
    let admitted = conds.is_true(condition::ADMITTED);
    // Kueue's workload controller syncs the states first.
    if let Some(synced) = checks::sync(&states, &required, &now) {
        if !synced.is_empty() {
            write_workload_status(&wl_api, &wl, json!({ "admissionChecks": synced })).await?;
            return Ok(Action::await_change());
        }
        // The queue dropped its checks: none left to wait for.
        let mut c = conds.clone();
        let admit = checks::admitted_condition(reserved, true, admitted);
        if let Some((true, reason, message)) = admit {
            c.set(
                condition::ADMITTED,
                true,
                reason,
                message,
                &now,
                wl.metadata.generation,
            );
        }
        let s = json!({ "admissionChecks": null, "conditions": c.0 });
        write_workload_status(&wl_api, &wl, s).await?;
        if admit.is_some() {
            admitted_event(&ctx, &wl, &conds.0, &now, &cq.name_any()).await;
        }
        return Ok(Action::await_change());
    }
    if states.is_empty() {
        // No checks here: the engine's admission is the whole story.
        return Ok(Action::await_change());
    }
    if !admitted {
        if let Some((true, reason, message)) =
            checks::admitted_condition(reserved, checks::all_ready(&states), admitted)
        {
            let mut c = conds.clone();
            c.set(
                condition::ADMITTED,
                true,
                reason,
                message,
                &now,
                wl.metadata.generation,
            );
            write_workload_status(&wl_api, &wl, json!({ "conditions": c.0 })).await?;
            admitted_event(&ctx, &wl, &conds.0, &now, &cq.name_any()).await;
            return Ok(Action::await_change());
        }
    }
    if !reserved {
        return finish_check_backoff(&wl_api, &wl, &conds, &states, &now).await;
    }
    match checks::verdict(&states, conds.is_true(condition::EVICTED)) {
        Some(Verdict::Deactivate { message }) => {
            if conds.is_true(condition::DEACTIVATION_TARGET) {
                return Ok(Action::await_change());
            }
            let mut c = conds.clone();
            c.set(
                condition::DEACTIVATION_TARGET,
                true,
                eviction_reason::ADMISSION_CHECK,
                &message,
                &now,
                wl.metadata.generation,
            );
            write_workload_status(&wl_api, &wl, json!({ "conditions": c.0 })).await?;
            ctx.event(
                &wl,
                true,
                "AdmissionCheckRejected",
                format!("Deactivated due to {message}"),
            )
            .await;
        }
        Some(Verdict::Evict { message }) => {
            let mut c = conds.clone();
            c.set(
                condition::EVICTED,
                true,
                eviction_reason::ADMISSION_CHECK,
                &message,
                &now,
                wl.metadata.generation,
            );
            let mut evictions = status
                .scheduling_stats
                .as_ref()
                .and_then(|s| s.evictions.clone())
                .unwrap_or_default();
            match evictions.iter_mut().find(|e| {
                e.reason == eviction_reason::ADMISSION_CHECK && e.underlying_cause.is_empty()
            }) {
                Some(e) => e.count += 1,
                None => evictions.push(api::WorkloadSchedulingStatsEviction {
                    reason: eviction_reason::ADMISSION_CHECK.into(),
                    underlying_cause: String::new(),
                    count: 1,
                }),
            }
            let mut s = json!({"conditions": c.0});
            // No job to stop: the quota goes back in the same write, as the
            // queueing controller does for a jobless Workload.
            let owned = wl
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true));
            if !owned {
                let accumulated = status.accumulated_past_execution_time_seconds;
                if let Some(r) = release(&c.0, wl.metadata.generation, &now, accumulated) {
                    s = r;
                }
            }
            // A retry delay (`requeueAfterSeconds`) holds the Workload out
            // of the queue until then (Kueue's `NeedsRequeueAtUpdate`).
            let requeue = status.requeue_state.clone().unwrap_or_default();
            let current = requeue.requeue_at.as_ref().map(|t| t.0.as_millisecond());
            if let Some(at) = checks::requeue_at(&states, current, now.0.as_millisecond()) {
                let at = k8s_openapi::jiff::Timestamp::from_millisecond(at)
                    .map(Time)
                    .unwrap_or_else(|_| now.clone());
                s["requeueState"] = json!({"count": requeue.count, "requeueAt": at});
            }
            s["admissionChecks"] = json!(checks::reset_on_eviction(&states, &now));
            s["schedulingStats"] = json!({"evictions": evictions});
            write_workload_status(&wl_api, &wl, s).await?;
            ctx.event(&wl, false, "EvictedDueToAdmissionCheck", message)
                .await;
        }
        None => {}
    }
    Ok(Action::await_change())
}

/// Once a check's retry delay has passed, the Workload may queue again:
/// `status.requeueState.requeueAt` is cleared. The job reconciler does the
/// same for jobs; this covers Workloads it does not own (jobless, pods),
/// and leaves a waitForPodsReady backoff (`Requeued` False with reason
/// `PodsReadyTimeout`) to it.
async fn finish_check_backoff(
    wl_api: &Api<api::Workload>,
    wl: &api::Workload,
    conds: &Conditions,
    states: &[api::AdmissionCheckState],
    now: &Time,
) -> Result<Action, JobError> {
    let Some(state) = wl.status.as_ref().and_then(|s| s.requeue_state.as_ref()) else {
        return Ok(Action::await_change());
    };
    let Some(at) = &state.requeue_at else {
        return Ok(Action::await_change());
    };
    let by_check = states.iter().any(|s| s.requeue_after_seconds.is_some());
    let pods_ready = conds
        .get(condition::REQUEUED)
        .is_some_and(|r| r.status == "False" && r.reason == "PodsReadyTimeout");
    if !by_check || pods_ready || wl.spec.active == Some(false) {
        return Ok(Action::await_change());
    }
    let left = at.0.as_millisecond() - now.0.as_millisecond();
    if left > 0 {
        return Ok(Action::requeue(Duration::from_millis(left.unsigned_abs())));
    }
    let s = json!({"requeueState": {"count": state.count, "requeueAt": null}});
    write_workload_status(wl_api, wl, s).await?;
    Ok(Action::await_change())
}

/// Kueue's `Admitted` event, with the wait since the quota was reserved.
async fn admitted_event(ctx: &Ctx, wl: &api::Workload, conds: &[Condition], now: &Time, cq: &str) {
    let waited = reservation_wait(conds, now);
    let note =
        format!("Admitted by ClusterQueue {cq}, wait time since reservation was {waited:.0}s");
    ctx.event(wl, false, "Admitted", note).await;
}

/// Seconds since the quota was reserved.
fn reservation_wait(conds: &[Condition], now: &Time) -> f64 {
    conds
        .iter()
        .find(|c| c.type_ == condition::QUOTA_RESERVED && c.status == "True")
        .map(|c| {
            (now.0.as_millisecond() - c.last_transition_time.0.as_millisecond()).max(0) as f64
                / 1000.0
        })
        .unwrap_or(0.0)
}
