//! The reconciler (shell): kube-runtime controllers that read cluster
//! state, ask the pure core (`queueing`, `jobs`, `appwrapper`, `prescale`,
//! `devices`) and write the result.
//!
//! They stand side by side on [`context`] (the field manager, the Workload
//! status writer, the shared stores, `release`), which imports none of
//! them; no two controllers import each other in a cycle
//! (`tests/architecture.rs` checks the import graph). This module starts
//! them.
//!
//! - [`queueing`]: the quota engine's shell — `queueing::feed` (watches
//!   into the engine), `queueing::decisions` (admissions, evictions and
//!   pending reasons written to Workloads), `queueing::status`
//!   (ClusterQueue and LocalQueue status). [`devices`] places device claims
//!   before an admission.
//! - [`jobs`]: one reconciler per integration policy — a queued job's
//!   Workload created and kept in step, the job started once its Workload
//!   is admitted and stopped when it is evicted.
//! - [`pods`]: the reconciler of kinds held by a scheduling gate (Kueue's
//!   pod integration: single pods and pod groups).
//! - [`pod_owners`]: kinds queued through their pods as one group (Kueue's
//!   StatefulSet integration): the group's Workload, its pods marked in.
//! - [`checks`]: admission checks on Workloads (states in step with the
//!   ClusterQueue's checks, admitted once all are Ready, Retry evicts,
//!   Rejected deactivates).
//! - [`provisioning`]: Kueue's ProvisioningRequest admission check
//!   (`kueue.x-k8s.io/provisioning-request`): the check's `Active`
//!   condition, a ProvisioningRequest per Workload and attempt, the check's
//!   state from the request's conditions.
//! - [`topology_gate`]: releases the pods of a Workload placed by
//!   topology-aware scheduling from their scheduling gate, each onto its
//!   domain.
//! - [`node_failure`]: marks the nodes failing under such a Workload in
//!   its `status.unhealthyNodes` (a second one evicts it) and fails its
//!   pods still pending towards them.
//! - [`appwrapper`]: the AppWrapper lifecycle and Autopilot's Node watch;
//!   [`prescale`]: the PreScaledCronJob's generated CronJobs.
//! - Support: [`translation`] (API objects to engine types), [`vetting`]
//!   (our own Workload writes checked as the webhook would), [`events`],
//!   [`lease`] (leader election and fencing), [`fault`] (crashes on
//!   purpose, for crash tests).

pub mod appwrapper;
pub mod check_states;
pub mod context;
pub mod devices;
pub mod events;
pub mod fault;
pub mod jobs;
pub mod lease;
pub mod multikueue;
pub mod node_failure;
pub mod pod_owners;
pub mod pods;
pub mod prescale;
mod primed_pods;
pub mod provisioning;
pub mod queueing;
pub mod throttle;
pub mod topology_gate;
pub mod translation;
pub mod vetting;

use std::{sync::Arc, time::Duration};

use kube::{Api, Client};
use tracing::info;

use crate::{api::kueue::v1beta2 as api, jobs::policy::PolicySet};

/// Runs the reconciler for good. Once Kueue's CRDs are served, the
/// queueing engine and every controller start at once, leader or not: a
/// standby's engine follows the watches (and answers the visibility API)
/// and its controllers fill their caches, deciding and writing nothing.
/// Once the lease is held they act, and the PreScaledCronJob controller
/// (which needs no Kueue CRD) starts.
/// `client` is fenced by `elector`'s lease (see [`lease::FenceLayer`]).
// One argument per setting the controllers take from the configuration.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    client: Client,
    policies: PolicySet,
    elector: Arc<lease::Elector>,
    prescaler: prescale::Settings,
    positions: crate::cluster::positions::Positions,
    metrics: Arc<crate::metrics::kueue::KueueMetrics>,
    readiness: Option<crate::jobs::readiness::Settings>,
    fair_sharing: Option<crate::queueing::fair_sharing::FairSharing>,
    admission_fair_sharing: Option<crate::queueing::admission_fair_sharing::AdmissionFairSharing>,
    claims: crate::queueing::claims::Settings,
    aw_config: crate::appwrapper::config::OperatorConfig,
    prescale_metrics: Arc<crate::metrics::prescale::PrescaleMetrics>,
    namespace: String,
    multikueue: crate::multikueue::Settings,
    manage_jobs_without_queue_name: bool,
    equivalence_hashing: bool,
) {
    // A standby starts everything now: the engine follows the watches and
    // the controllers fill their caches, and none of them decides or
    // writes until this replica leads (`Shared::leading`).
    let (leads, leading) = tokio::sync::watch::channel(false);
    let reconcilers = tokio::spawn(reconcilers(
        client.clone(),
        policies,
        leading,
        positions,
        metrics,
        readiness,
        fair_sharing,
        admission_fair_sharing,
        claims,
        aw_config,
        namespace,
        multikueue,
        manage_jobs_without_queue_name,
        equivalence_hashing,
    ));
    elector.acquire().await;
    let _ = leads.send(true);
    fault::starve_if_asked();
    // The PreScaledCronJob controller needs no Kueue CRD.
    tokio::spawn(prescale::run(client, prescaler, prescale_metrics));
    let _ = reconcilers.await;
}

/// Once Kueue's CRDs are served: the queueing engine and every
/// controller, acting once `leading` says so; runs for good.
#[allow(clippy::too_many_arguments)]
async fn reconcilers(
    client: Client,
    policies: PolicySet,
    leading: tokio::sync::watch::Receiver<bool>,
    positions: crate::cluster::positions::Positions,
    metrics: Arc<crate::metrics::kueue::KueueMetrics>,
    readiness: Option<crate::jobs::readiness::Settings>,
    fair_sharing: Option<crate::queueing::fair_sharing::FairSharing>,
    admission_fair_sharing: Option<crate::queueing::admission_fair_sharing::AdmissionFairSharing>,
    claims: crate::queueing::claims::Settings,
    aw_config: crate::appwrapper::config::OperatorConfig,
    namespace: String,
    multikueue: crate::multikueue::Settings,
    manage_jobs_without_queue_name: bool,
    equivalence_hashing: bool,
) {
    kueue_served(&client).await;
    tokio::spawn(queueing::Controller::run(
        client.clone(),
        positions,
        metrics.clone(),
        queueing::Settings {
            readiness: readiness.clone(),
            fair: fair_sharing,
            admission_fair_sharing,
            claims,
            equivalence_hashing,
        },
        leading.clone(),
    ));
    let shared = context::Shared::start(client, leading).await;
    tokio::spawn(check_states::run(shared.clone()));
    tokio::spawn(provisioning::run(shared.clone()));
    tokio::spawn(topology_gate::run(shared.clone()));
    tokio::spawn(node_failure::run(shared.clone()));
    tokio::spawn(multikueue::run(
        shared.clone(),
        namespace,
        multikueue,
        policies.clone(),
        metrics,
    ));
    let (appwrappers, wakes) = futures::channel::mpsc::unbounded();
    let aw = tokio::spawn(appwrapper::run(
        shared.clone(),
        wakes,
        true,
        aw_config,
        readiness.clone(),
    ));
    // Kinds held by a scheduling gate (pods) have their own reconciler,
    // woken by the job controllers' one Workload watch.
    let mut gated = Vec::new();
    for policy in policies.iter().filter(|p| p.gate.is_some()) {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        gated.push((pods::resource_of(policy), tx.clone()));
        tokio::spawn(pods::run(
            shared.clone(),
            policy.clone(),
            readiness.clone().map(Arc::new),
            rx,
        ));
        // Kinds queued through their pods as one group (StatefulSets) have
        // a reconciler too, woken by their Workloads; it wakes the pods.
        for owner in policies.iter().filter(|p| {
            p.pod_owner
                .as_ref()
                .is_some_and(|o| o.group.is_some() || o.replica_groups.is_some())
        }) {
            let (otx, orx) = futures::channel::mpsc::unbounded();
            gated.push((pods::resource_of(owner), otx));
            tokio::spawn(pod_owners::run(
                shared.clone(),
                owner.clone(),
                policy.clone(),
                orx,
                tx.clone(),
            ));
        }
    }
    jobs::run(
        shared,
        policies,
        appwrappers,
        readiness,
        gated,
        manage_jobs_without_queue_name,
    )
    .await;
    let _ = aw.await;
}

/// Resolves once Kueue's CRDs are served (Workloads can be listed).
async fn kueue_served(client: &Client) {
    let workloads = Api::<api::Workload>::all(client.clone());
    let mut told = false;
    while let Err(e) = workloads
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await
    {
        if !told {
            info!(error = %e, "Kueue's CRDs are not served yet: the reconciler waits for them");
            told = true;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// `admission: external`: an upstream Kueue creates and admits the
/// Workloads. Only the AppWrapper controller runs (behind the lease), as
/// the AppWrapper operator would next to stock Kueue: Kueue drives it
/// through `spec.suspend` and `components[].podSetInfos`; no Workload is
/// touched here, and neither the queueing engine nor the job reconcilers run.
/// The PreScaledCronJob controller runs too (it needs no Kueue).
pub async fn run_external(
    client: Client,
    elector: Arc<lease::Elector>,
    prescaler: prescale::Settings,
    aw_config: crate::appwrapper::config::OperatorConfig,
    prescale_metrics: Arc<crate::metrics::prescale::PrescaleMetrics>,
) {
    elector.acquire().await;
    tokio::spawn(prescale::run(client.clone(), prescaler, prescale_metrics));
    // Nothing sends: Workload changes are Kueue's to act on.
    let (_, none) = futures::channel::mpsc::unbounded();
    appwrapper::run(
        context::Shared::without_kueue(client),
        none,
        false,
        aw_config,
        None,
    )
    .await;
}
