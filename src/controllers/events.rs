//! Workload events the way Kueue records them: its reasons and notes, and
//! client-go's `events.k8s.io/v1` broadcaster behind them (Kueue v0.19.2
//! records through it). An event that repeats for the same object, reason
//! and action within [`SERIES_TTL`] is not created again: the second
//! occurrence turns the first into a series (one PATCH, `count: 2`), later
//! ones only count in memory, and every [`SERIES_TTL`] the counts not yet
//! written go out in one PATCH per series while idle series are forgotten.
//!
//! Events are written one at a time from a backlog of [`BACKLOG`], as
//! client-go's broadcaster queues them (`maxQueuedEvents`, dropped when
//! full): the sink's pace follows the apiserver's latency, so under
//! overload events give way to the writes that admit instead of adding to
//! the load. What is dropped is counted and logged. An event's time is
//! when it was recorded, as client-go stamps `eventTime` before queueing:
//! a backlog delays the write, not what the event says happened when.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{core::v1::ObjectReference, events::v1::Event as KEvent},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    api::{Patch, PatchParams, PostParams},
    Api, Client,
};
use serde_json::json;
use tokio::sync::mpsc;
use tracing::{debug, warn};

/// client-go's `maxQueuedEvents`.
pub const BACKLOG: usize = 1000;
/// client-go's `finishTime` and `refreshTime` for event series.
pub const SERIES_TTL: Duration = Duration::from_secs(6 * 60);
const REPORT_EVERY: Duration = Duration::from_secs(10);
pub const REPORTING_CONTROLLER: &str = "batchgate-scheduler";

/// One occurrence: about which Workload (`namespace/name`), why, and what
/// a reader is told. The action is the reason, as Kueue passes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    pub regarding: String,
    pub reason: String,
    pub warning: bool,
    pub note: String,
}

/// What one occurrence costs the apiserver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Send {
    /// A new event.
    Create,
    /// The event named becomes a series of `count`.
    Patch { name: String, count: i32 },
    /// Counted in an open series; written at the next refresh.
    Counted,
}

#[derive(Debug)]
struct Entry {
    /// The event's name once created.
    name: Option<String>,
    count: i32,
    written: i32,
    last: Instant,
    last_wall: Timestamp,
}

/// The open series by (regarding, reason). Pure: time is a parameter.
#[derive(Debug, Default)]
pub struct Series {
    open: HashMap<(String, String), Entry>,
}

impl Series {
    /// Records one occurrence at `now`.
    pub fn observe(&mut self, o: &Occurrence, now: Instant, wall: Timestamp) -> Send {
        let key = (o.regarding.clone(), o.reason.clone());
        match self.open.get_mut(&key) {
            Some(e) if now.duration_since(e.last) < SERIES_TTL && e.name.is_some() => {
                e.count += 1;
                e.last = now;
                e.last_wall = wall;
                match (&e.name, e.written) {
                    (Some(name), 1) => {
                        e.written = e.count;
                        Send::Patch {
                            name: name.clone(),
                            count: e.count,
                        }
                    }
                    _ => Send::Counted,
                }
            }
            _ => {
                self.open.insert(
                    key,
                    Entry {
                        name: None,
                        count: 1,
                        written: 1,
                        last: now,
                        last_wall: wall,
                    },
                );
                Send::Create
            }
        }
    }

    /// The event a `Create` made (a failed create leaves no series).
    pub fn created(&mut self, o: &Occurrence, name: Option<String>) {
        let key = (o.regarding.clone(), o.reason.clone());
        match name {
            Some(n) => {
                if let Some(e) = self.open.get_mut(&key) {
                    e.name = Some(n);
                }
            }
            None => {
                self.open.remove(&key);
            }
        }
    }

    /// Forgets the series idle for [`SERIES_TTL`] and returns the counts
    /// the others have not written yet: (namespace/name of the regarded
    /// object, event name, count, last observed).
    pub fn refresh(&mut self, now: Instant) -> Vec<(String, String, i32, Timestamp)> {
        self.open
            .retain(|_, e| now.duration_since(e.last) < SERIES_TTL && e.name.is_some());
        let mut out = Vec::new();
        for ((regarding, _), e) in &mut self.open {
            if e.count > e.written {
                if let Some(name) = &e.name {
                    out.push((regarding.clone(), name.clone(), e.count, e.last_wall));
                    e.written = e.count;
                }
            }
        }
        out
    }

    pub fn len(&self) -> usize {
        self.open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

/// The sender side: cheap to clone, never blocks.
#[derive(Clone)]
pub struct Events {
    tx: mpsc::Sender<(Occurrence, Timestamp)>,
    dropped: Arc<AtomicU64>,
}

impl Events {
    pub fn start(client: Client) -> Events {
        let (tx, rx) = mpsc::channel::<(Occurrence, Timestamp)>(BACKLOG);
        let dropped = Arc::new(AtomicU64::new(0));
        tokio::spawn(sink(client, rx, dropped.clone()));
        Events { tx, dropped }
    }

    pub fn record(&self, o: Occurrence) {
        if self.tx.try_send((o, Timestamp::now())).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn split(regarding: &str) -> (&str, &str) {
    regarding.split_once('/').unwrap_or(("default", regarding))
}

async fn sink(
    client: Client,
    mut rx: mpsc::Receiver<(Occurrence, Timestamp)>,
    dropped: Arc<AtomicU64>,
) {
    let mut series = Series::default();
    let mut refresh = tokio::time::interval(SERIES_TTL);
    refresh.tick().await;
    let mut report = tokio::time::interval(REPORT_EVERY);
    report.tick().await;
    let instance = std::env::var("HOSTNAME").unwrap_or_else(|_| REPORTING_CONTROLLER.into());
    loop {
        tokio::select! {
            o = rx.recv() => {
                let Some((o, wall)) = o else { return };
                match series.observe(&o, Instant::now(), wall) {
                    Send::Create => {
                        let name = create(&client, &o, wall, &instance).await;
                        series.created(&o, name);
                    }
                    Send::Patch { name, count } => {
                        patch(&client, &o.regarding, &name, count, wall).await;
                    }
                    Send::Counted => {}
                }
            }
            _ = refresh.tick() => {
                for (regarding, name, count, last) in series.refresh(Instant::now()) {
                    patch(&client, &regarding, &name, count, last).await;
                }
            }
            _ = report.tick() => {
                let n = dropped.swap(0, Ordering::Relaxed);
                if n > 0 {
                    warn!(dropped = n, "events dropped: the apiserver does not keep up with them");
                }
            }
        }
    }
}

/// Creates the event; its name if it landed.
async fn create(client: &Client, o: &Occurrence, now: Timestamp, instance: &str) -> Option<String> {
    let (namespace, name) = split(&o.regarding);
    let regarding = ObjectReference {
        api_version: Some("kueue.x-k8s.io/v1beta2".into()),
        kind: Some("Workload".into()),
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        ..Default::default()
    };
    let ev = new_event(regarding, o, now, REPORTING_CONTROLLER, instance);
    let event_name = ev.metadata.name.clone();
    match Api::<KEvent>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &ev)
        .await
    {
        Ok(_) => event_name,
        Err(e) => {
            debug!(error = %e, "event not recorded");
            None
        }
    }
}

/// An `events.k8s.io/v1` Event about `regarding`, named as client-go names
/// them (`<name>.<hex time>`); the action is the reason.
pub(super) fn new_event(
    regarding: ObjectReference,
    o: &Occurrence,
    now: Timestamp,
    controller: &str,
    instance: &str,
) -> KEvent {
    let name = regarding.name.clone().unwrap_or_default();
    KEvent {
        metadata: ObjectMeta {
            namespace: regarding.namespace.clone(),
            name: Some(format!("{name}.{:x}", now.as_nanosecond())),
            ..Default::default()
        },
        action: Some(o.reason.clone()),
        reason: Some(o.reason.clone()),
        note: Some(o.note.clone()),
        event_time: Some(MicroTime(now)),
        regarding: Some(regarding),
        reporting_controller: Some(controller.into()),
        reporting_instance: Some(instance.to_string()),
        type_: Some(if o.warning { "Warning" } else { "Normal" }.into()),
        ..Default::default()
    }
}

async fn patch(client: &Client, regarding: &str, name: &str, count: i32, last: Timestamp) {
    let (namespace, _) = split(regarding);
    let body = json!({"series": {"count": count, "lastObservedTime": MicroTime(last)}});
    if let Err(e) = Api::<KEvent>::namespaced(client.clone(), namespace)
        .patch(name, &PatchParams::default(), &Patch::Merge(&body))
        .await
    {
        debug!(error = %e, "event series not updated");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occ(wl: &str, reason: &str) -> Occurrence {
        Occurrence {
            regarding: format!("ns/{wl}"),
            reason: reason.into(),
            warning: false,
            note: "n".into(),
        }
    }

    #[test]
    fn a_repeat_becomes_a_series_written_once_then_counted_until_refresh() {
        let t0 = Instant::now();
        let w = Timestamp::UNIX_EPOCH;
        let mut s = Series::default();
        let p = occ("a", "Pending");
        assert_eq!(s.observe(&p, t0, w), Send::Create);
        s.created(&p, Some("a.1".into()));
        // Another reason or another Workload is its own event.
        assert_eq!(s.observe(&occ("a", "QuotaReserved"), t0, w), Send::Create);
        assert_eq!(s.observe(&occ("b", "Pending"), t0, w), Send::Create);
        let sec = Duration::from_secs(1);
        assert_eq!(
            s.observe(&p, t0 + sec, w),
            Send::Patch {
                name: "a.1".into(),
                count: 2
            }
        );
        assert_eq!(s.observe(&p, t0 + 2 * sec, w), Send::Counted);
        assert_eq!(s.observe(&p, t0 + 3 * sec, w), Send::Counted);
        // The refresh writes the count once; the two never-created events
        // are forgotten.
        let r = s.refresh(t0 + 4 * sec);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].1.as_str(), r[0].2), ("a.1", 4));
        assert!(s.refresh(t0 + 5 * sec).is_empty());
        assert_eq!(s.len(), 1);
        // Idle for the TTL: the series is over, the next one is new.
        assert!(s.refresh(t0 + 3 * sec + SERIES_TTL).is_empty());
        assert!(s.is_empty());
        assert_eq!(s.observe(&p, t0 + 3 * sec + SERIES_TTL, w), Send::Create);
    }

    #[test]
    fn an_event_that_failed_to_create_is_created_again() {
        let t0 = Instant::now();
        let w = Timestamp::UNIX_EPOCH;
        let mut s = Series::default();
        let p = occ("a", "Pending");
        assert_eq!(s.observe(&p, t0, w), Send::Create);
        s.created(&p, None);
        assert_eq!(s.observe(&p, t0, w), Send::Create);
    }
}
