//! The PreScaledCronJob pod controller (upstream's `PodReconciler`): for
//! each primed pod (label `primedcron`), read its Events and report its
//! timings ([`crate::prescale::timings`]) as upstream's histograms and as
//! `Metrics` Events on its PreScaledCronJob.
//!
//! A pass costs one list of the pod's Events, and none once its four
//! timings are reported; the PreScaledCronJob comes from the CronJob
//! controller's cache. What was reported is kept per pod UID for as long
//! as Events live (upstream's 75 minutes), in memory: after a restart a
//! pod's timings are reported again, as upstream's were.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    api::{
        core::v1::{Event, Pod},
        events,
    },
    jiff::Timestamp,
};
use kube::{
    api::{ListParams, PostParams},
    runtime::{
        controller::Action,
        reflector::{ObjectRef, Store},
        watcher,
    },
    Api, Client, Resource, ResourceExt,
};
use serde_json::Value;
use tracing::debug;

use super::{
    context::PrescaleError,
    events::{new_event, Occurrence},
};
use crate::{
    api::prescale::PreScaledCronJob,
    metrics::prescale::{PrescaleMetrics, TimingLabels},
    prescale::{
        cronjob::POD_LABEL,
        timings::{self, go_duration, Reported},
    },
};

/// How long a pod's reported timings are remembered: Events live an hour.
const REMEMBER_SECS: i64 = 75 * 60;

pub(super) struct Ctx {
    client: Client,
    prescaled: Store<PreScaledCronJob>,
    /// The reporting instance of its Events.
    instance: String,
    metrics: Arc<PrescaleMetrics>,
    /// Pod UID → what was reported and until when it is remembered.
    reported: Mutex<HashMap<String, (Reported, i64)>>,
}

impl Ctx {
    pub(super) fn new(
        client: Client,
        prescaled: Store<PreScaledCronJob>,
        metrics: Arc<PrescaleMetrics>,
    ) -> Self {
        Ctx {
            instance: std::env::var("HOSTNAME").unwrap_or_else(|_| "pod-controller".into()),
            client,
            prescaled,
            metrics,
            reported: Mutex::default(),
        }
    }

    fn remembered(&self, uid: &str, now: i64) -> Reported {
        let mut m = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|_, (_, until)| *until > now);
        m.get(uid).map(|(r, _)| *r).unwrap_or_default()
    }

    fn remember(&self, uid: &str, r: Reported, now: i64) {
        let mut m = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        let until = m.get(uid).map_or(now + REMEMBER_SECS, |(_, until)| *until);
        m.insert(uid.to_string(), (r, until));
    }

    /// Each note its own Event, as upstream's recorder wrote them (a
    /// recorder that folds events of one reason into a series would keep
    /// only the first pod's timings).
    async fn event(&self, psc: &PreScaledCronJob, warning: bool, reason: &str, note: String) {
        let ns = psc.namespace().unwrap_or_default();
        let o = Occurrence {
            regarding: String::new(),
            reason: reason.into(),
            warning,
            note,
        };
        let ev = new_event(
            psc.object_ref(&()),
            &o,
            Timestamp::now(),
            "pod-controller",
            &self.instance,
        );
        if let Err(e) = Api::<events::v1::Event>::namespaced(self.client.clone(), &ns)
            .create(&PostParams::default(), &ev)
            .await
        {
            debug!(error = %e, "event not recorded");
        }
    }
}

/// Runs until the watch ends; `prescaled` is the CronJob controller's
/// cache of PreScaledCronJobs.
pub(super) async fn run(ctx: Arc<Ctx>) {
    let pods = Api::<Pod>::all(ctx.client.clone());
    crate::cluster::watch::controller(pods, watcher::Config::default().labels(POD_LABEL), ())
        .run(reconcile, error_policy, ctx)
        .for_each(|r| {
            if let Err(e) = r {
                debug!(error = %e, "primed pod reconcile");
            }
            futures::future::ready(())
        })
        .await;
}

fn error_policy(pod: Arc<Pod>, err: &PrescaleError, _ctx: Arc<Ctx>) -> Action {
    debug!(pod = %pod.name_any(), error = %err, "primed pod timings; retrying");
    Action::requeue(Duration::from_secs(10))
}

async fn reconcile(pod: Arc<Pod>, ctx: Arc<Ctx>) -> Result<Action, PrescaleError> {
    let now = chrono::Utc::now().timestamp();
    let ns = pod.namespace().unwrap_or_default();
    let (Some(owner), Some(uid)) = (pod.labels().get(POD_LABEL), pod.uid()) else {
        return Ok(Action::await_change());
    };
    // Upstream's rule: a pod whose PreScaledCronJob is gone is not reported.
    let Some(psc) = ctx.prescaled.get(&ObjectRef::new(owner).within(&ns)) else {
        return Ok(Action::await_change());
    };
    let before = ctx.remembered(&uid, now);
    if before.all() {
        return Ok(Action::await_change());
    }
    let events: Vec<Value> = Api::<Event>::namespaced(ctx.client.clone(), &ns)
        .list(&ListParams::default().fields(&format!(
            "involvedObject.name={},involvedObject.uid={uid}",
            pod.name_any()
        )))
        .await?
        .items
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let pod_json = serde_json::to_value(&*pod)?;
    let spec = &psc.spec.cron_job["spec"];
    let pass = timings::pass(
        &pod_json,
        &events,
        spec["schedule"].as_str().unwrap_or_default(),
        spec["timeZone"].as_str(),
        before,
        now,
    );
    for (t, took) in &pass.observed {
        let (durationtype, secs) = timings::direction(*took);
        let labels = TimingLabels {
            prescalecron: psc.name_any(),
            nodepool: timings::node_pool(&pod_json).to_string(),
            durationtype,
        };
        if !ctx.metrics.timing(t.name(), labels, secs) {
            let note = format!(
                "Failed to track transition time as no histogram defined for {}",
                t.name()
            );
            ctx.event(&psc, true, "Metrics", note).await;
        }
        let note = format!(
            "Event {} took {} on pod {}",
            t.name(),
            go_duration(*took),
            pod.name_any()
        );
        ctx.event(&psc, false, "Metrics", note).await;
    }
    if let Some(w) = &pass.warning {
        ctx.event(&psc, true, "Metrics", w.clone()).await;
    }
    if !pass.observed.is_empty() || pass.warning.is_some() {
        let note = "Metrics calculated for PrescaleCronJob invocation.".to_string();
        ctx.event(&psc, false, "Debug", note).await;
    }
    ctx.remember(&uid, pass.reported, now);
    Ok(match pass.recheck {
        Some(secs) => Action::requeue(Duration::from_secs(secs)),
        None => Action::await_change(),
    })
}

/// The executor against a scripted apiserver: the exact requests of a
/// pass, and none once a pod's timings are all reported.
#[cfg(test)]
mod tests {
    use kube::runtime::reflector;
    use prometheus_client::registry::Registry;
    use serde_json::json;

    use super::*;
    use crate::{
        controllers::vetting::testing::{scripted_client, sent as requests},
        prescale::cronjob::INIT_CONTAINER,
    };

    const EVENTS: &str = "/api/v1/namespaces/ns/events";
    const NEW_EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";

    fn psc() -> PreScaledCronJob {
        serde_json::from_value(json!({
            "apiVersion": "psc.cronprimer.local/v1alpha1", "kind": "PreScaledCronJob",
            "metadata": {"name": "nightly", "namespace": "ns", "uid": "psc-uid"},
            "spec": {"warmUpTimeMins": 1, "cronJob": {"spec": {"schedule": "*/1 * * * *",
                "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}}}
        }))
        .unwrap()
    }

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "pod-uid",
                         "labels": {"primedcron": "nightly"},
                         "creationTimestamp": "2020-01-29T12:03:05Z"},
            "spec": {"initContainers": [{"name": INIT_CONTAINER}],
                     "containers": [{"name": "w"}], "nodeSelector": {"agentpool": "gpu"}},
            "status": {"phase": "Succeeded"}
        }))
        .unwrap()
    }

    fn kubelet(reason: &str, path: &str, at: &str) -> Value {
        json!({"metadata": {"name": at, "namespace": "ns"}, "reason": reason,
               "source": {"component": "kubelet"},
               "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": path},
               "lastTimestamp": at})
    }

    /// A context whose cache holds `psc()`, and the registry its metrics
    /// are in.
    fn ctx(client: Client) -> (Arc<Ctx>, Registry) {
        let (store, mut writer) = reflector::store::<PreScaledCronJob>();
        writer.apply_watcher_event(&watcher::Event::Apply(psc()));
        let mut root = Registry::default();
        let metrics = Arc::new(PrescaleMetrics::register(&mut root));
        (Arc::new(Ctx::new(client, store, metrics)), root)
    }

    #[tokio::test]
    async fn a_pass_lists_the_pods_events_and_reports_each_timing_once() {
        let events = json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": [
            {"metadata": {"name": "s", "namespace": "ns"}, "reason": "Scheduled",
             "involvedObject": {"kind": "Pod", "name": "p"},
             "eventTime": "2020-01-29T12:03:07.000000Z"},
            kubelet("Started", &format!("spec.initContainers{{{INIT_CONTAINER}}}"), "2020-01-29T12:03:08Z"),
            kubelet("Pulling", "spec.containers{w}", "2020-01-29T12:04:03Z"),
            kubelet("Started", "spec.containers{w}", "2020-01-29T12:04:05Z"),
        ]});
        let (client, sent) = scripted_client(move |method, path, body| match (method, path) {
            ("GET", EVENTS) => (200, events.clone()),
            ("POST", NEW_EVENTS) => (201, body.clone()),
            _ => panic!("{method} {path}"),
        });
        let (ctx, root) = ctx(client);
        let out = reconcile(Arc::new(pod()), ctx.clone()).await.unwrap();
        assert_eq!(out, Action::await_change());
        // Only this pod's Events, by name and UID.
        assert_eq!(
            sent.lock().unwrap()[0].line,
            format!("GET {EVENTS}?&fieldSelector=involvedObject.name%3Dp%2CinvolvedObject.uid%3Dpod-uid")
        );
        let sent = requests(&sent);
        let lines: Vec<&str> = sent.iter().map(|(l, _)| l.as_str()).collect();
        let post = format!("POST {NEW_EVENTS}");
        assert_eq!(
            lines,
            [
                format!("GET {EVENTS}"),
                post.clone(),
                post.clone(),
                post.clone(),
                post.clone(),
                post
            ]
        );
        let notes: Vec<&str> = sent[1..]
            .iter()
            .map(|(_, b)| b["note"].as_str().unwrap())
            .collect();
        assert_eq!(
            notes,
            [
                "Event timeToSchedule took 2s on pod p",
                "Event timeInitContainerRan took 55s on pod p",
                "Event timeToStartWorkload took 2s on pod p",
                "Event timeDelayOfWorkload took 5s on pod p",
                "Metrics calculated for PrescaleCronJob invocation.",
            ]
        );
        assert_eq!(sent[5].1["reason"], "Debug");
        assert_eq!(sent[1].1["regarding"]["name"], "nightly");
        // One observation in each histogram, under the pod's pool.
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &root).unwrap();
        for name in [
            "prescalecronjoboperator_cronjob_time_to_schedule",
            "prescalecronjoboperator_cronjob_time_init_container_ran",
            "prescalecronjoboperator_cronjob_time_to_start_workload",
            "prescalecronjoboperator_cronjob_time_delay_of_workload",
        ] {
            let count = format!(
                "{name}_count{{prescalecron=\"nightly\",nodepool=\"gpu\",durationtype=\"late\"}} 1"
            );
            assert!(text.contains(&count), "{count} in\n{text}");
        }

        // Everything reported: the next pass sends nothing.
        let (client, sent) = scripted_client(|_, _, _| (500, json!({})));
        let again = Arc::new(Ctx {
            client,
            prescaled: ctx.prescaled.clone(),
            instance: ctx.instance.clone(),
            metrics: ctx.metrics.clone(),
            reported: Mutex::new(ctx.reported.lock().unwrap().clone()),
        });
        reconcile(Arc::new(pod()), again).await.unwrap();
        assert!(requests(&sent).is_empty());
    }

    #[tokio::test]
    async fn a_pod_whose_prescaledcronjob_is_gone_costs_nothing() {
        let (client, sent) = scripted_client(|_, _, _| (500, json!({})));
        let (ctx, _) = ctx(client);
        let mut p = pod();
        p.metadata.labels = Some([("primedcron".to_string(), "other".to_string())].into());
        let out = reconcile(Arc::new(p), ctx).await.unwrap();
        assert_eq!(out, Action::await_change());
        assert!(requests(&sent).is_empty());
    }
}
