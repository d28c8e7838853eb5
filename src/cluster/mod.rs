//! Kube glue: watch-backed caches that answer [`ClusterFacts`] without an
//! API call per admission request, and the certificate Secret.

pub mod certsecret;

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    runtime::{
        reflector::{self, ObjectRef, Store},
        watcher, WatchStreamExt,
    },
    Api, Client,
};
use tracing::warn;

use crate::{
    admission::{ClusterFacts, NoCluster},
    selector::LabelSelector,
};

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("connecting to the cluster (kubeconfig or in-cluster config): {0}")]
    Connect(#[from] kube::Error),
    #[error("waiting for the namespace cache: {0}")]
    Sync(String),
}

/// Namespaces (for `managedJobsNamespaceSelector`), kept by a watch.
#[derive(Clone)]
pub struct ClusterCache {
    namespaces: Store<Namespace>,
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

    fn default_local_queue_exists(&self, _: &str) -> bool {
        // LocalQueues are watched once the queueing CRDs are served.
        false
    }

    fn default_priority_class_exists(&self) -> bool {
        false
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
    let (reader, writer) = reflector::store::<Namespace>();
    let api: Api<Namespace> = Api::all(client.clone());
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .touched_objects();
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(ev) = stream.next().await {
            if let Err(e) = ev {
                warn!(error = %e, "namespace watch error; retrying");
            }
        }
    });
    let ready_reader = reader.clone();
    let synced = async move {
        ready_reader
            .wait_until_ready()
            .await
            .map_err(|e| ClusterError::Sync(e.to_string()))
    };
    Ok((
        client,
        Arc::new(ClusterCache { namespaces: reader }),
        synced,
    ))
}
