//! Watches that survive the apiserver: every error is logged and counted,
//! the watcher retries with backoff (and relists when its resourceVersion
//! has expired), and the line that says a watch is back is written once,
//! when it is.
//!
//! Controllers take their triggers through [`ready_objects`]: kube-runtime
//! triggers a reconcile for each object of a relist as it arrives, but its
//! store swaps the relisted objects in only at the end of the list, so a
//! reconcile that starts in between finds no object and is dropped. An
//! object created while the watch was down (an apiserver restart, a 403
//! while its authorizer warms up) then waits for a change that may never
//! come. Here a relist's objects are triggered once the store has them.

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::{LazyLock, Mutex},
    time::{Duration, Instant},
};

use futures::{stream, Stream, StreamExt};
use kube::{
    runtime::{
        reflector::{store::Writer, ObjectRef, Store},
        watcher::{self, Event},
        Controller, WatchStreamExt,
    },
    Api, Resource,
};
use tracing::{debug, info, warn};

use crate::metrics::watch::{IntegrationLabel, WatchLabel, ERRORS, FOUND_BY_RESYNC, RECOVERIES};

pub fn found_by_resync(integration: &str) {
    FOUND_BY_RESYNC
        .get_or_create(&IntegrationLabel {
            integration: integration.to_string(),
        })
        .inc();
}

/// When each watch, by name, last failed or came back, and whether it is
/// failing now.
static UNSETTLED: LazyLock<Mutex<HashMap<String, (Instant, bool)>>> = LazyLock::new(Mutex::default);

fn unsettle(name: &str, failing: bool) {
    let mut at = UNSETTLED.lock().unwrap_or_else(|e| e.into_inner());
    at.insert(name.to_string(), (Instant::now(), failing));
}

/// How long watch `name` has delivered since it last came back (zero while
/// it is failing, through its backoff); `None` if it never failed. What it
/// triggers late after a fault (a relist, a backoff) is delayed, not lost.
pub fn settled_for(name: &str) -> Option<Duration> {
    let at = UNSETTLED.lock().unwrap_or_else(|e| e.into_inner());
    at.get(name).map(|(t, failing)| {
        if *failing {
            Duration::ZERO
        } else {
            t.elapsed()
        }
    })
}

/// `plural.group` of a kind, `plural` for the core group.
pub fn name_of<K: Resource>(dt: &K::DynamicType) -> String {
    let (plural, group): (Cow<'_, str>, Cow<'_, str>) = (K::plural(dt), K::group(dt));
    if group.is_empty() {
        plural.into_owned()
    } else {
        format!("{plural}.{group}")
    }
}

/// One watch's run of errors.
#[derive(Debug)]
pub struct Health {
    name: String,
    failing: u32,
    /// Whether any error of the run was more than a 410 (routine: the
    /// watcher relists on its own).
    serious: bool,
    since: Option<Instant>,
}

impl Health {
    pub fn new(name: impl Into<String>) -> Health {
        Health {
            name: name.into(),
            failing: 0,
            serious: false,
            since: None,
        }
    }

    /// The watch failed; the watcher retries.
    pub fn failed(&mut self, e: &watcher::Error) {
        log_watch_error(&self.name, e);
        ERRORS
            .get_or_create(&WatchLabel {
                watch: self.name.clone(),
            })
            .inc();
        if self.failing == 0 {
            self.since = Some(Instant::now());
        }
        unsettle(&self.name, true);
        self.failing += 1;
        self.serious |= !expired(e);
    }

    /// The watch delivered: if it had been failing, it has recovered.
    pub fn delivered(&mut self) {
        if self.failing == 0 {
            return;
        }
        let after = self.since.map_or(Duration::ZERO, |s| s.elapsed());
        unsettle(&self.name, false);
        RECOVERIES
            .get_or_create(&WatchLabel {
                watch: self.name.clone(),
            })
            .inc();
        if self.serious {
            info!(watch = %self.name, errors = self.failing, after_ms = after.as_millis() as u64, "watch recovered");
        } else {
            debug!(watch = %self.name, "watch relisted after its resourceVersion expired");
        }
        self.failing = 0;
        self.serious = false;
        self.since = None;
    }
}

/// Logs a watch stream's error; the watcher retries on its own. A 410
/// (`too old resource version: … Expired`) is the apiserver saying the
/// stream's resourceVersion left its window, routine on a busy start:
/// the watcher relists, nothing is lost, so it is not a warning.
pub fn log_watch_error(watch: &str, e: &watcher::Error) {
    if expired(e) {
        debug!(%watch, error = %e, "watch expired; relisting");
    } else {
        warn!(%watch, error = %e, "watch error; retrying");
    }
}

/// Is this the apiserver's 410: the watch's resourceVersion is too old?
pub(crate) fn expired(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::WatchError(s) => s.code == 410,
        watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code == 410,
        _ => false,
    }
}

/// Keeps a store in step with a watch stream (reflected already), logging
/// and counting its errors, for as long as the process runs.
pub(crate) fn drive<K, S>(name: String, stream: S)
where
    S: Stream<Item = Result<K, watcher::Error>> + Send + 'static,
    K: Send + 'static,
{
    tokio::spawn(async move {
        let mut health = Health::new(name);
        futures::pin_mut!(stream);
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(_) => health.delivered(),
                Err(e) => health.failed(&e),
            }
        }
    });
}

/// What a relist is doing: the objects seen so far, triggered at its end.
enum Listing<K: Resource> {
    Idle,
    Listing(Vec<ObjectRef<K>>),
}

/// A controller's triggers from a watch's events (backoff applied by the
/// caller): each event is applied to `writer` first; an added or changed
/// object is yielded at once, a relist's objects once the relist is done
/// and `reader` has them all. Errors are logged and counted here (the
/// watcher retries), deletions trigger nothing (a deleted object has no
/// reconcile to run).
pub fn ready_objects<K, S>(
    name: String,
    events: S,
    writer: Writer<K>,
    dt: K::DynamicType,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send,
{
    let reader = writer.as_reader();
    let mut health = Health::new(name);
    let mut listing = Listing::Idle;
    events
        .reflect(writer)
        .map(move |ev| -> Vec<K> {
            let ev = match ev {
                Ok(ev) => {
                    health.delivered();
                    ev
                }
                Err(e) => {
                    health.failed(&e);
                    return Vec::new();
                }
            };
            match ev {
                Event::Apply(o) => vec![o],
                Event::Delete(_) => Vec::new(),
                Event::Init => {
                    listing = Listing::Listing(Vec::new());
                    Vec::new()
                }
                Event::InitApply(o) => {
                    if let Listing::Listing(seen) = &mut listing {
                        seen.push(ObjectRef::from_obj_with(&o, dt.clone()));
                    }
                    Vec::new()
                }
                Event::InitDone => match std::mem::replace(&mut listing, Listing::Idle) {
                    Listing::Listing(seen) => in_store(&reader, seen),
                    Listing::Idle => Vec::new(),
                },
            }
        })
        .flat_map(|objs| stream::iter(objs.into_iter().map(Ok)))
}

fn in_store<K>(reader: &Store<K>, refs: Vec<ObjectRef<K>>) -> Vec<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    refs.iter()
        .filter_map(|r| reader.get(r).map(|o| (*o).clone()))
        .collect()
}

/// A controller over `api` whose triggers come through [`ready_objects`],
/// with the watcher's default backoff.
pub fn controller<K>(api: Api<K>, config: watcher::Config, dt: K::DynamicType) -> Controller<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    let writer = Writer::new(dt.clone());
    let reader = writer.as_reader();
    let events = watcher::watcher(api, config).default_backoff();
    let triggers = ready_objects(name_of::<K>(&dt), events, writer, dt.clone());
    Controller::for_stream_with(triggers, reader, dt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn status(code: u16) -> watcher::Error {
        watcher::Error::WatchError(Box::new(kube::core::Status {
            code,
            ..kube::core::Status::default()
        }))
    }

    /// The kube-runtime gap this module closes: a relisted object is only
    /// readable once the relist is done, so it may only be triggered then.
    #[tokio::test]
    async fn a_relists_objects_are_triggered_once_the_store_has_them() {
        let writer = Writer::<ConfigMap>::default();
        let reader = writer.as_reader();
        let events = stream::iter(vec![
            Ok(Event::Init),
            Ok(Event::InitApply(cm("old", "1"))),
            Ok(Event::InitDone),
            Err(status(403)),
            Ok(Event::Init),
            Ok(Event::InitApply(cm("old", "1"))),
            Ok(Event::InitApply(cm("created-while-down", "5"))),
            Ok(Event::InitDone),
            Ok(Event::Apply(cm("later", "6"))),
            Ok(Event::Delete(cm("old", "7"))),
        ]);
        let out: Vec<_> = ready_objects("configmaps".into(), events, writer, ())
            .map(|o| {
                let o = o.expect("errors are consumed");
                // Yielded only when a reconcile would find it.
                let r = ObjectRef::from_obj(&o);
                assert!(
                    reader.get(&r).is_some(),
                    "{} triggered before the store had it",
                    o.metadata.name.as_deref().unwrap_or_default()
                );
                o.metadata.name.unwrap_or_default()
            })
            .collect()
            .await;
        assert_eq!(out, ["old", "old", "created-while-down", "later"]);
    }

    #[test]
    fn a_recovery_is_counted_once_per_run_of_errors() {
        let label = WatchLabel {
            watch: "test-recoveries.example".into(),
        };
        let mut h = Health::new(label.watch.clone());
        h.delivered();
        assert_eq!(RECOVERIES.get_or_create(&label).get(), 0);
        h.failed(&status(403));
        h.failed(&status(500));
        assert_eq!(ERRORS.get_or_create(&label).get(), 2);
        h.delivered();
        h.delivered();
        assert_eq!(RECOVERIES.get_or_create(&label).get(), 1);
    }

    #[test]
    fn a_watch_is_unsettled_from_its_first_failure_until_it_has_delivered_since_coming_back() {
        let name = "test-settled.example";
        let mut h = Health::new(name);
        h.delivered();
        assert_eq!(settled_for(name), None, "never failed");
        h.failed(&status(500));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            settled_for(name),
            Some(Duration::ZERO),
            "not settled at all while failing, however long its backoff"
        );
        h.delivered();
        let back = settled_for(name).expect("still unsettled when it comes back");
        assert!(
            back < Duration::from_millis(20),
            "the clock starts when it comes back"
        );
        h.delivered();
        assert!(
            settled_for(name).unwrap() >= back,
            "a delivery of a healthy watch does not"
        );
    }

    #[test]
    fn only_a_410_is_an_expired_watch() {
        let gone = || {
            Box::new(
                kube::core::Status::failure("too old resource version: 324 (325)", "Expired")
                    .with_code(410),
            )
        };
        assert!(expired(&status(410)));
        assert!(expired(&watcher::Error::WatchStartFailed(
            kube::Error::Api(gone())
        )));
        assert!(expired(&watcher::Error::WatchFailed(kube::Error::Api(
            gone()
        ))));
        assert!(!expired(&status(403)));
        assert!(!expired(&status(500)));
        assert!(!expired(&watcher::Error::InitialListFailed(
            kube::Error::Api(gone())
        )));
        assert!(!expired(&watcher::Error::NoResourceVersion));
    }
}
