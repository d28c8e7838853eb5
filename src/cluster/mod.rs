//! Kube glue: watch-backed caches that answer [`ClusterFacts`] without an
//! API call per admission request, the certificate Secret, the
//! SubjectAccessReview client, objects the webhook reads by name, and the
//! hand-off of queue snapshots to the
//! visibility API.

pub mod certsecret;
pub mod devices;
pub mod discovery;
pub mod objects;
pub mod positions;
pub mod sar;
pub mod watch;

pub(crate) use watch::drive;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    core::PartialObjectMeta,
    runtime::{
        reflector::{self, ObjectRef, Store},
        watcher, WatchStreamExt,
    },
    Api, Client,
};
use tracing::info;

use crate::{
    admission::entitlement::{opted_in, SUBMIT_REQUIRES_PERMISSION, USE_REQUIRES_PERMISSION},
    admission::{object::DEFAULT_NAME, ClusterFacts, NoCluster},
    api::kueue::v1beta2::{AdmissionCheck, ClusterQueue, LocalQueue, WorkloadPriorityClass},
    api::selector::LabelSelector,
    vocabulary::keys::MULTIKUEUE_CONTROLLER,
};

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("connecting to the cluster (kubeconfig or in-cluster config): {0}")]
    Connect(#[from] kube::Error),
    #[error("waiting for the cluster caches: {0}")]
    Sync(String),
}

/// Namespaces (for `managedJobsNamespaceSelector`), LocalQueues (names for
/// defaulting; spec and annotations for entitlement), ClusterQueues (the
/// opt-in annotations, the admission checks that make one MultiKueue's),
/// AdmissionChecks (their controller) and the
/// metadata of WorkloadPriorityClasses, kept by watches; statuses and
/// managed fields are dropped.
#[derive(Clone)]
pub struct ClusterCache {
    namespaces: Store<Namespace>,
    local_queues: Store<LocalQueue>,
    cluster_queues: Store<ClusterQueue>,
    admission_checks: Store<AdmissionCheck>,
    priority_classes: Store<PartialObjectMeta<WorkloadPriorityClass>>,
    devices: devices::DeviceCache,
}

impl ClusterFacts for ClusterCache {
    fn namespace_matches(&self, namespace: &str, selector: &LabelSelector) -> bool {
        match self.namespaces.get(&ObjectRef::new(namespace)) {
            Some(ns) => match &ns.metadata.labels {
                Some(labels) => selector.matches(labels),
                None => selector.matches(&std::collections::BTreeMap::new()),
            },
            // Created a moment ago and not seen yet: its name label is certain.
            None => NoCluster.namespace_matches(namespace, selector),
        }
    }

    fn default_local_queue_exists(&self, namespace: &str) -> bool {
        self.local_queues
            .get(&ObjectRef::new(DEFAULT_NAME).within(namespace))
            .is_some()
    }

    fn default_priority_class_exists(&self) -> bool {
        self.priority_classes
            .get(&ObjectRef::new(DEFAULT_NAME))
            .is_some()
    }

    fn queue_requires_submit(&self, namespace: &str, local_queue: &str) -> bool {
        let Some(lq) = self
            .local_queues
            .get(&ObjectRef::new(local_queue).within(namespace))
        else {
            // Not seen (yet): nothing opted in.
            return false;
        };
        opted_in(lq.metadata.annotations.as_ref(), SUBMIT_REQUIRES_PERMISSION)
            || lq.spec.cluster_queue.as_deref().is_some_and(|cq| {
                self.cluster_queues
                    .get(&ObjectRef::new(cq))
                    .is_some_and(|cq| {
                        opted_in(cq.metadata.annotations.as_ref(), SUBMIT_REQUIRES_PERMISSION)
                    })
            })
    }

    fn priority_class_requires_use(&self, name: &str) -> bool {
        self.priority_classes
            .get(&ObjectRef::new(name))
            .is_some_and(|p| opted_in(p.metadata.annotations.as_ref(), USE_REQUIRES_PERMISSION))
    }

    fn multikueue_local_queue(&self, namespace: &str, local_queue: &str) -> bool {
        let Some(cq) = self
            .local_queues
            .get(&ObjectRef::new(local_queue).within(namespace))
            .and_then(|lq| lq.spec.cluster_queue.clone())
            .and_then(|cq| self.cluster_queues.get(&ObjectRef::new(&cq)))
        else {
            return false;
        };
        cq.spec
            .admission_checks_strategy
            .iter()
            .flat_map(|s| &s.admission_checks)
            .any(|rule| {
                self.admission_checks
                    .get(&ObjectRef::new(&rule.name))
                    .is_some_and(|ac| ac.spec.controller_name == MULTIKUEUE_CONTROLLER)
            })
    }

    fn device_facts(&self) -> Option<&dyn crate::admission::devices::DeviceFacts> {
        Some(&self.devices)
    }
}

/// Is this Kueue kind served? Its caches are only waited for when it is; a
/// cluster without Kueue's CRDs has no LocalQueues to default to.
async fn served<K>(api: &Api<K>) -> Result<bool, ClusterError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.list(&kube::api::ListParams::default().limit(1)).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
        Err(e) => Err(ClusterError::Connect(e)),
    }
}

/// Connects and starts the watches; returns the cache and a future that
/// resolves once every cache has its first full list.
pub async fn connect() -> Result<
    (
        Client,
        Arc<ClusterCache>,
        impl std::future::Future<Output = Result<(), ClusterError>>,
    ),
    ClusterError,
> {
    let client = Client::try_default().await?;
    let (namespaces, ns_writer) = reflector::store::<Namespace>();
    drive(
        "namespaces".into(),
        watcher(
            Api::<Namespace>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .reflect(ns_writer)
        .touched_objects(),
    );
    // Defaulting needs to know a name exists; entitlement reads the
    // opt-in annotations and a LocalQueue's ClusterQueue. Metadata only
    // where that is all, and LocalQueues without their status.
    let lq_api = Api::<LocalQueue>::all(client.clone());
    let cq_api = Api::<ClusterQueue>::all(client.clone());
    let ac_api = Api::<AdmissionCheck>::all(client.clone());
    let wpc_api = Api::<PartialObjectMeta<WorkloadPriorityClass>>::all(client.clone());
    let kueue_served = served(&lq_api).await?
        && served(&wpc_api).await?
        && served(&cq_api).await?
        && served(&ac_api).await?;
    if !kueue_served {
        info!("Kueue's CRDs are not installed: default LocalQueue and WorkloadPriorityClass lookups and entitlement opt-ins find nothing until they are");
    }
    let (local_queues, lq_writer) = reflector::store();
    drive(
        "localqueues.kueue.x-k8s.io".into(),
        watcher(lq_api, watcher::Config::default())
            .default_backoff()
            .modify(|lq: &mut LocalQueue| {
                lq.status = None;
                lq.metadata.managed_fields = None;
            })
            .reflect(lq_writer)
            .touched_objects(),
    );
    let (cluster_queues, cq_writer) = reflector::store();
    drive(
        "clusterqueues.kueue.x-k8s.io".into(),
        watcher(cq_api, watcher::Config::default())
            .default_backoff()
            .modify(|cq: &mut ClusterQueue| {
                cq.status = None;
                cq.metadata.managed_fields = None;
            })
            .reflect(cq_writer)
            .touched_objects(),
    );
    let (admission_checks, ac_writer) = reflector::store();
    drive(
        "admissionchecks.kueue.x-k8s.io".into(),
        watcher(ac_api, watcher::Config::default())
            .default_backoff()
            .modify(|ac: &mut AdmissionCheck| {
                ac.status = None;
                ac.metadata.managed_fields = None;
            })
            .reflect(ac_writer)
            .touched_objects(),
    );
    let (priority_classes, wpc_writer) = reflector::store();
    drive(
        "workloadpriorityclasses.kueue.x-k8s.io".into(),
        watcher(wpc_api, watcher::Config::default())
            .default_backoff()
            .reflect(wpc_writer)
            .touched_objects(),
    );
    let devices = devices::DeviceCache::connect(&client).await?;
    let cache = ClusterCache {
        namespaces,
        local_queues,
        cluster_queues,
        admission_checks,
        priority_classes,
        devices,
    };
    let waiting = cache.clone();
    let synced = async move {
        let err = |e: reflector::store::WriterDropped| ClusterError::Sync(e.to_string());
        waiting.namespaces.wait_until_ready().await.map_err(err)?;
        waiting.devices.ready().await?;
        if kueue_served {
            waiting.local_queues.wait_until_ready().await.map_err(err)?;
            waiting
                .cluster_queues
                .wait_until_ready()
                .await
                .map_err(err)?;
            waiting
                .admission_checks
                .wait_until_ready()
                .await
                .map_err(err)?;
            waiting
                .priority_classes
                .wait_until_ready()
                .await
                .map_err(err)?;
        }
        Ok(())
    };
    Ok((client, Arc::new(cache), synced))
}
