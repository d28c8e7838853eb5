//! The PreScaledCronJob controller: keeps one CronJob
//! `autogen-<name>` per PreScaledCronJob in step with it.
//!
//! One reconcile: check the spec and compute the primer schedule
//! ([`crate::prescale::plan`]); build the desired CronJob
//! ([`crate::prescale::cronjob::desired`]); read the live one; create it,
//! or, when it is ours and differs from the desired one (the spec changed,
//! or someone edited or deleted it: owned CronJobs are watched), replace
//! its spec; leave a CronJob of that name that is not ours alone. Each
//! action is an Event on the PreScaledCronJob (upstream's reasons and
//! messages where upstream had them) and the outcome is written to its
//! status. Deleting the PreScaledCronJob deletes the CronJob through its
//! owner reference (the garbage collector).

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use kube::{
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::{ApiResource, GroupVersionKind},
    runtime::{
        controller::Action,
        events::{Event as KEvent, EventType, Recorder, Reporter},
        watcher,
    },
    Api, Client, Resource, ResourceExt,
};
use serde_json::{json, Value};
use tracing::{debug, info, warn};

use super::context::served;
use crate::{
    admission::prescale::spec_of,
    api::prescale::{PreScaledCronJob, PreScaledCronJobStatus},
    prescale::{
        self,
        cronjob::{self, Owner, HASH_ANNOTATION},
    },
};

pub use crate::prescale::{Settings, DEFAULT_IMAGE};

/// The condition written to status.
pub const READY: &str = "Ready";

#[derive(Debug, thiserror::Error)]
pub enum PrescaleError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("encoding: {0}")]
    Json(#[from] serde_json::Error),
}

struct Ctx {
    client: Client,
    cronjobs: ApiResource,
    recorder: Recorder,
    settings: Settings,
}

fn cronjob_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("batch", "v1", "CronJob"), "cronjobs")
}

/// Runs the controller once the PreScaledCronJob CRD is served.
pub async fn run(client: Client, settings: Settings) {
    served(
        Api::<DynamicObject>::all_with(
            client.clone(),
            &ApiResource::erase::<PreScaledCronJob>(&()),
        ),
        "prescaledcronjob".into(),
    )
    .await;
    info!(image = %settings.image, "PreScaledCronJob controller starts");
    let cronjobs = cronjob_resource();
    let ctx = Arc::new(Ctx {
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: "prescaledcronjob-controller".into(),
                instance: std::env::var("HOSTNAME").ok(),
            },
        ),
        cronjobs: cronjobs.clone(),
        client: client.clone(),
        settings,
    });
    crate::cluster::watch::controller(
        Api::<PreScaledCronJob>::all(client.clone()),
        watcher::Config::default(),
        (),
    )
    .owns_with(
        Api::<DynamicObject>::all_with(client.clone(), &cronjobs),
        cronjobs,
        watcher::Config::default(),
    )
    .run(reconcile, error_policy, ctx)
    .for_each(|r| {
        if let Err(e) = r {
            debug!(error = %e, "prescaledcronjob reconcile");
        }
        futures::future::ready(())
    })
    .await;
}

fn error_policy(psc: Arc<PreScaledCronJob>, err: &PrescaleError, _ctx: Arc<Ctx>) -> Action {
    warn!(prescaledcronjob = %psc.name_any(), namespace = psc.namespace().unwrap_or_default(), error = %err, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(2))
}

/// An Event note is at most 1 KiB.
fn note(s: String) -> String {
    if s.len() <= 1000 {
        return s;
    }
    let mut cut = 1000;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &s[..cut])
}

/// What the status says after a reconcile.
struct Outcome {
    ready: bool,
    reason: &'static str,
    message: String,
    primer: Option<String>,
    hash: Option<String>,
}

impl Ctx {
    async fn event(&self, psc: &PreScaledCronJob, type_: EventType, reason: &str, message: String) {
        let ev = KEvent {
            type_,
            reason: reason.into(),
            note: Some(note(message)),
            action: reason.into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, &psc.object_ref(&())).await {
            debug!(error = %e, "event not recorded");
        }
    }

    /// Writes the status when anything but the timestamps changed.
    async fn status(&self, psc: &PreScaledCronJob, o: Outcome) -> Result<(), PrescaleError> {
        let old = psc.status.clone().unwrap_or_default();
        let now = Time(Timestamp::now());
        let status_word = if o.ready { "True" } else { "False" };
        let previous = old
            .conditions
            .as_ref()
            .and_then(|cs| cs.iter().find(|c| c.type_ == READY));
        let same_condition = previous.is_some_and(|c| {
            c.status == status_word
                && c.reason == o.reason
                && c.message == o.message
                && c.observed_generation == psc.metadata.generation
        });
        let cron_job_name = Some(cronjob::name_of(&psc.name_any()));
        if same_condition
            && old.primer_schedule == o.primer
            && old.hash == o.hash
            && old.cron_job_name == cron_job_name
            && old.observed_generation == psc.metadata.generation
        {
            return Ok(());
        }
        let condition = Condition {
            type_: READY.into(),
            status: status_word.into(),
            reason: o.reason.into(),
            message: o.message,
            observed_generation: psc.metadata.generation,
            last_transition_time: match previous {
                Some(c) if c.status == status_word => c.last_transition_time.clone(),
                _ => now.clone(),
            },
        };
        let status = PreScaledCronJobStatus {
            cron_job_name,
            primer_schedule: o.primer,
            hash: o.hash,
            conditions: Some(vec![condition]),
            last_sync_time: if o.ready {
                Some(now)
            } else {
                old.last_sync_time
            },
            observed_generation: psc.metadata.generation,
        };
        let api: Api<PreScaledCronJob> =
            Api::namespaced(self.client.clone(), &psc.namespace().unwrap_or_default());
        api.patch_status(
            &psc.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await?;
        Ok(())
    }
}

async fn reconcile(psc: Arc<PreScaledCronJob>, ctx: Arc<Ctx>) -> Result<Action, PrescaleError> {
    if psc.metadata.deletion_timestamp.is_some() {
        // The garbage collector deletes the CronJob (owner reference).
        return Ok(Action::await_change());
    }
    let name = psc.name_any();
    let ns = psc.namespace().unwrap_or_default();
    let uid = psc.uid().unwrap_or_default();
    let object = serde_json::to_value(psc.as_ref())?;
    let today = chrono::Utc::now().date_naive();
    let plan = match prescale::plan(&spec_of(&object), today) {
        Ok(p) => p,
        Err(violations) => {
            let message = violations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            ctx.event(
                &psc,
                EventType::Warning,
                "Invalid cron schedule",
                format!("Failed to generate cronjob: {message}"),
            )
            .await;
            ctx.status(
                &psc,
                Outcome {
                    ready: false,
                    reason: "InvalidSchedule",
                    message,
                    primer: None,
                    hash: None,
                },
            )
            .await?;
            return Ok(Action::await_change());
        }
    };
    let owner = Owner {
        name: &name,
        namespace: &ns,
        uid: &uid,
    };
    let (want, hash) = cronjob::desired(&owner, &psc.spec.cron_job, &plan, &ctx.settings.image);
    let cj_name = cronjob::name_of(&name);
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ns, &ctx.cronjobs);
    let synced = |reason: &'static str, message: String| Outcome {
        ready: true,
        reason,
        message,
        primer: Some(plan.primer.clone()),
        hash: Some(hash.clone()),
    };
    let outcome = match api.get_opt(&cj_name).await? {
        None => {
            let obj: DynamicObject = serde_json::from_value(want)?;
            match api.create(&PostParams::default(), &obj).await {
                Ok(_) => {
                    info!(prescaledcronjob = %name, namespace = %ns, cronjob = %cj_name, schedule = %plan.primer, "created");
                    ctx.event(
                        &psc,
                        EventType::Normal,
                        "Create cronjob successful",
                        format!("Created associated cronjob: {cj_name}"),
                    )
                    .await;
                    synced(
                        "Created",
                        format!("created CronJob {cj_name} on schedule {:?}", plan.primer),
                    )
                }
                Err(e) => {
                    ctx.event(
                        &psc,
                        EventType::Warning,
                        "Create cronjob failed",
                        format!("Failed to create cronjob: {e}"),
                    )
                    .await;
                    ctx.status(
                        &psc,
                        Outcome {
                            ready: false,
                            reason: "CreateFailed",
                            message: format!("Failed to create cronjob: {e}"),
                            primer: Some(plan.primer.clone()),
                            hash: Some(hash.clone()),
                        },
                    )
                    .await?;
                    return Err(e.into());
                }
            }
        }
        Some(live) => {
            let live = serde_json::to_value(&live)?;
            if !cronjob::controlled_by(&live, &uid) {
                let message = format!("A cronjob with this name already exists, and was not created by this operator : {cj_name}");
                ctx.event(
                    &psc,
                    EventType::Warning,
                    "Cronjob already exists",
                    message.clone(),
                )
                .await;
                ctx.status(
                    &psc,
                    Outcome {
                        ready: false,
                        reason: "CronJobExists",
                        message,
                        primer: Some(plan.primer.clone()),
                        hash: Some(hash.clone()),
                    },
                )
                .await?;
                return Ok(Action::await_change());
            }
            match cronjob::drift(&live, &want, &uid) {
                None => synced(
                    "Synced",
                    format!("CronJob {cj_name} runs on schedule {:?}", plan.primer),
                ),
                Some(path) => {
                    let spec_changed = live
                        .pointer(&format!("/metadata/annotations/{HASH_ANNOTATION}"))
                        .and_then(Value::as_str)
                        != Some(hash.as_str());
                    let obj: DynamicObject =
                        serde_json::from_value(cronjob::replacement(&live, &want))?;
                    match api.replace(&cj_name, &PostParams::default(), &obj).await {
                        Ok(_) if spec_changed => {
                            info!(prescaledcronjob = %name, namespace = %ns, cronjob = %cj_name, "updated");
                            ctx.event(
                                &psc,
                                EventType::Normal,
                                "Update of cronjob successful",
                                format!("Updated associated cronjob: {cj_name}"),
                            )
                            .await;
                            synced(
                                "Updated",
                                format!("updated CronJob {cj_name} to schedule {:?}", plan.primer),
                            )
                        }
                        Ok(_) => {
                            info!(prescaledcronjob = %name, namespace = %ns, cronjob = %cj_name, %path, "manual change reverted");
                            ctx.event(
                                &psc,
                                EventType::Warning,
                                "Reverted cronjob change",
                                format!("Reverted a change to associated cronjob {cj_name}: {path} differed from what this PreScaledCronJob asks for; edit the PreScaledCronJob instead"),
                            )
                            .await;
                            synced(
                                "Reverted",
                                format!("reverted a change to {path} of CronJob {cj_name}"),
                            )
                        }
                        Err(kube::Error::Api(e)) if e.code == 409 => {
                            // Changed under us: read again.
                            return Err(kube::Error::Api(e).into());
                        }
                        Err(e) => {
                            ctx.event(
                                &psc,
                                EventType::Warning,
                                "Update of cronjob failed",
                                format!("Failed to update cronjob: {e}"),
                            )
                            .await;
                            return Err(e.into());
                        }
                    }
                }
            }
        }
    };
    ctx.status(&psc, outcome).await?;
    // The calendar checks start from today: look again now and then.
    Ok(Action::requeue(Duration::from_secs(6 * 3600)))
}
