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
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
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
use serde_json::json;
use tracing::{debug, info, warn};

pub use super::context::PrescaleError;
use super::{context::served, primed_pods};
use crate::{
    api::prescale::PreScaledCronJob,
    metrics::prescale::PrescaleMetrics,
    prescale::sync::{self, Note, Outcome, Step, Then, Write},
};

pub use crate::prescale::{Settings, DEFAULT_IMAGE};

struct Ctx {
    client: Client,
    cronjobs: ApiResource,
    recorder: Recorder,
    settings: Settings,
    metrics: Arc<PrescaleMetrics>,
}

fn cronjob_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("batch", "v1", "CronJob"), "cronjobs")
}

/// Runs the controller, and the pod controller beside it, once the
/// PreScaledCronJob CRD is served.
pub async fn run(client: Client, settings: Settings, metrics: Arc<PrescaleMetrics>) {
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
        metrics: metrics.clone(),
    });
    let controller = crate::cluster::watch::controller(
        Api::<PreScaledCronJob>::all(client.clone()),
        watcher::Config::default(),
        (),
    );
    tokio::spawn(primed_pods::run(Arc::new(primed_pods::Ctx::new(
        client.clone(),
        controller.store(),
        metrics,
    ))));
    controller
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

impl Ctx {
    async fn event(&self, psc: &PreScaledCronJob, note: Note) {
        let ev = KEvent {
            type_: if note.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: note.reason.into(),
            note: Some(cut(note.message)),
            action: note.reason.into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, &psc.object_ref(&())).await {
            debug!(error = %e, "event not recorded");
        }
    }

    /// Writes the status when anything but the timestamps changed.
    async fn status(&self, psc: &PreScaledCronJob, o: Outcome) -> Result<(), PrescaleError> {
        let Some(status) = sync::status(psc, o, Time(Timestamp::now())) else {
            return Ok(());
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

    /// Records and reports a pass that wrote nothing to the CronJob.
    async fn settle(
        &self,
        psc: &PreScaledCronJob,
        note: Option<Note>,
        outcome: Outcome,
        then: Then,
    ) -> Result<Action, PrescaleError> {
        if let Some(note) = note {
            self.event(psc, note).await;
        }
        self.status(psc, outcome).await?;
        Ok(match then {
            Then::AwaitChange => Action::await_change(),
            // The calendar checks start from today: look again now and then.
            Then::Recheck => Action::requeue(Duration::from_secs(6 * 3600)),
        })
    }
}

/// An Event note is at most 1 KiB.
fn cut(s: String) -> String {
    if s.len() <= 1000 {
        return s;
    }
    let mut cut = 1000;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &s[..cut])
}

/// One pass: decide what the CronJob needs ([`sync`]), read it only when
/// the spec holds, write it, record and report.
async fn reconcile(psc: Arc<PreScaledCronJob>, ctx: Arc<Ctx>) -> Result<Action, PrescaleError> {
    let today = chrono::Utc::now().date_naive();
    let desired = match sync::desired(&psc, today, &ctx.settings.image) {
        Ok(d) => d,
        Err(step) => return ctx.execute(&psc, *step).await,
    };
    let ns = psc.namespace().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ns, &ctx.cronjobs);
    let live = match api.get_opt(&desired.name).await? {
        Some(live) => Some(serde_json::to_value(&live)?),
        None => None,
    };
    let step = sync::step(&psc, desired, live.as_ref());
    ctx.execute(&psc, step).await
}

impl Ctx {
    async fn execute(&self, psc: &PreScaledCronJob, step: Step) -> Result<Action, PrescaleError> {
        let (write, done, outcome) = match step {
            // The garbage collector deletes the CronJob (owner reference).
            Step::Gone => return Ok(Action::await_change()),
            Step::Settle {
                note,
                outcome,
                then,
            } => return self.settle(psc, note, outcome, then).await,
            Step::Write {
                ref write,
                ref done,
                ref outcome,
            } => (write, done, outcome),
        };
        let ns = psc.namespace().unwrap_or_default();
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &ns, &self.cronjobs);
        let (action, written) = match write {
            Write::Create(want) => {
                let obj: DynamicObject = serde_json::from_value(want.clone())?;
                ("create", api.create(&PostParams::default(), &obj).await)
            }
            Write::Replace(replacement) => {
                let obj: DynamicObject = serde_json::from_value(replacement.clone())?;
                let name = obj.name_any();
                (
                    "update",
                    api.replace(&name, &PostParams::default(), &obj).await,
                )
            }
        };
        // Upstream's counter: every write and whether it landed.
        self.metrics.action(action, written.is_ok());
        match written {
            Ok(_) => {
                info!(prescaledcronjob = %psc.name_any(), namespace = %ns, reason = outcome.reason, "{}", outcome.message);
                self.settle(psc, Some(done.clone()), outcome.clone(), Then::Recheck)
                    .await
            }
            Err(e) => {
                let conflict = matches!(&e, kube::Error::Api(s) if s.code == 409);
                let refusal = step.refused(conflict, &e.to_string());
                if let Some(note) = refusal.note {
                    self.event(psc, note).await;
                }
                if let Some(outcome) = refusal.outcome {
                    self.status(psc, outcome).await?;
                }
                Err(e.into())
            }
        }
    }
}

/// The executor against a scripted apiserver: the exact requests of each
/// kind of pass.
#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::controllers::vetting::testing::{scripted_client, sent as requests, status};

    const CRONJOB: &str = "/apis/batch/v1/namespaces/ns/cronjobs/autogen-nightly";
    const CRONJOBS: &str = "/apis/batch/v1/namespaces/ns/cronjobs";
    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";
    const STATUS: &str =
        "/apis/psc.cronprimer.local/v1alpha1/namespaces/ns/prescaledcronjobs/nightly/status";

    fn psc() -> PreScaledCronJob {
        serde_json::from_value(json!({
            "apiVersion": "psc.cronprimer.local/v1alpha1", "kind": "PreScaledCronJob",
            "metadata": {"name": "nightly", "namespace": "ns", "uid": "psc-uid", "generation": 1},
            "spec": {"warmUpTimeMins": 5, "cronJob": {"spec": {"schedule": "0 2 * * *",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "i"}]}}}}}}}
        }))
        .unwrap()
    }

    /// What batchgate writes for `psc()`, as the apiserver returns it.
    fn ours() -> Value {
        let today = chrono::Utc::now().date_naive();
        let mut cj = sync::desired(&psc(), today, DEFAULT_IMAGE).unwrap().cronjob;
        cj["metadata"]["resourceVersion"] = json!("7");
        cj
    }

    /// An apiserver holding `live` as the CronJob; writes to it answer `write`.
    fn apiserver(
        live: Option<Value>,
        write: u16,
    ) -> impl Fn(&str, &str, &Value) -> (u16, Value) + Send + Sync + 'static {
        move |method, path, body| match (method, path) {
            ("GET", CRONJOB) => match &live {
                Some(cj) => (200, cj.clone()),
                None => (404, status(404, "NotFound")),
            },
            ("POST", EVENTS) => (201, body.clone()),
            ("PATCH", STATUS) => (200, serde_json::to_value(psc()).unwrap()),
            ("POST", CRONJOBS) | ("PUT", CRONJOB) if write < 300 => (200, body.clone()),
            _ => (write, status(write, "Forbidden")),
        }
    }

    async fn pass(
        p: PreScaledCronJob,
        api: impl Fn(&str, &str, &Value) -> (u16, Value) + Send + Sync + 'static,
    ) -> (Result<Action, PrescaleError>, Vec<(String, Value)>) {
        let (client, sent) = scripted_client(api);
        let ctx = Arc::new(Ctx {
            recorder: Recorder::new(
                client.clone(),
                Reporter {
                    controller: "prescaledcronjob-controller".into(),
                    instance: None,
                },
            ),
            cronjobs: cronjob_resource(),
            client,
            settings: Settings::default(),
            metrics: Arc::new(PrescaleMetrics::register(
                &mut prometheus_client::registry::Registry::default(),
            )),
        });
        let out = reconcile(Arc::new(p), ctx).await;
        let sent = requests(&sent);
        (out, sent)
    }

    fn lines(sent: &[(String, Value)]) -> Vec<&str> {
        sent.iter().map(|(l, _)| l.as_str()).collect()
    }

    #[tokio::test]
    async fn a_missing_cronjob_is_read_created_announced_and_reported() {
        let (out, sent) = pass(psc(), apiserver(None, 200)).await;
        assert_eq!(out.unwrap(), Action::requeue(Duration::from_secs(6 * 3600)));
        assert_eq!(
            lines(&sent),
            [
                format!("GET {CRONJOB}"),
                format!("POST {CRONJOBS}"),
                format!("POST {EVENTS}"),
                format!("PATCH {STATUS}"),
            ]
        );
        assert_eq!(sent[1].1["spec"]["schedule"], "55 1 * * *");
        assert_eq!(sent[2].1["reason"], "Create cronjob successful");
        assert_eq!(sent[3].1["status"]["conditions"][0]["reason"], "Created");
    }

    #[tokio::test]
    async fn a_cronjob_in_step_costs_one_read_and_a_status_only_when_it_changes() {
        let (_, sent) = pass(psc(), apiserver(Some(ours()), 200)).await;
        assert_eq!(
            lines(&sent),
            [format!("GET {CRONJOB}"), format!("PATCH {STATUS}")]
        );
        // Once the status says so, a pass only reads.
        let mut p = psc();
        p.status = serde_json::from_value(sent[1].1["status"].clone()).unwrap();
        let (_, sent) = pass(p, apiserver(Some(ours()), 200)).await;
        assert_eq!(lines(&sent), [format!("GET {CRONJOB}")]);
    }

    #[tokio::test]
    async fn a_foreign_cronjob_is_only_reported() {
        let mut foreign = ours();
        foreign["metadata"]["ownerReferences"] = json!([]);
        let (out, sent) = pass(psc(), apiserver(Some(foreign), 200)).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            lines(&sent),
            [
                format!("GET {CRONJOB}"),
                format!("POST {EVENTS}"),
                format!("PATCH {STATUS}"),
            ]
        );
        assert_eq!(sent[1].1["reason"], "Cronjob already exists");
    }

    #[tokio::test]
    async fn an_edited_cronjob_is_replaced_with_its_resource_version() {
        let mut edited = ours();
        edited["spec"]["suspend"] = json!(true);
        let (_, sent) = pass(psc(), apiserver(Some(edited), 200)).await;
        assert_eq!(
            lines(&sent),
            [
                format!("GET {CRONJOB}"),
                format!("PUT {CRONJOB}"),
                format!("POST {EVENTS}"),
                format!("PATCH {STATUS}"),
            ]
        );
        assert_eq!(sent[1].1["metadata"]["resourceVersion"], "7");
        assert_eq!(sent[1].1["spec"].get("suspend"), None);
        assert_eq!(sent[2].1["reason"], "Reverted cronjob change");
    }

    #[tokio::test]
    async fn refused_writes_are_recorded_as_upstream_words_them() {
        let (out, sent) = pass(psc(), apiserver(None, 403)).await;
        assert!(out.is_err());
        assert_eq!(
            lines(&sent),
            [
                format!("GET {CRONJOB}"),
                format!("POST {CRONJOBS}"),
                format!("POST {EVENTS}"),
                format!("PATCH {STATUS}"),
            ]
        );
        assert_eq!(sent[2].1["reason"], "Create cronjob failed");
        assert_eq!(
            sent[3].1["status"]["conditions"][0]["reason"],
            "CreateFailed"
        );

        let mut edited = ours();
        edited["spec"]["suspend"] = json!(true);
        let (out, sent) = pass(psc(), apiserver(Some(edited.clone()), 409)).await;
        assert!(out.is_err());
        assert_eq!(
            lines(&sent),
            [format!("GET {CRONJOB}"), format!("PUT {CRONJOB}")],
            "a conflict is read again on the retry, without a word"
        );
        let (_, sent) = pass(psc(), apiserver(Some(edited), 403)).await;
        assert_eq!(
            lines(&sent),
            [
                format!("GET {CRONJOB}"),
                format!("PUT {CRONJOB}"),
                format!("POST {EVENTS}"),
            ]
        );
        assert_eq!(sent[2].1["reason"], "Update of cronjob failed");
    }

    #[tokio::test]
    async fn a_broken_spec_reads_nothing() {
        let mut p = psc();
        p.spec.cron_job["spec"]["schedule"] = json!("61 * * * *");
        let (out, sent) = pass(p, apiserver(None, 200)).await;
        assert_eq!(out.unwrap(), Action::await_change());
        assert_eq!(
            lines(&sent),
            [format!("POST {EVENTS}"), format!("PATCH {STATUS}")]
        );
        assert_eq!(sent[0].1["reason"], "Invalid cron schedule");
    }
}
