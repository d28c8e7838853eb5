//! Watch-backed caches of DeviceDrivers and DeviceClasses, for the device
//! webhook's existence checks ([`DeviceFacts`]).

use std::collections::BTreeMap;

use kube::{
    runtime::{
        reflector::{self, Store},
        watcher, WatchStreamExt,
    },
    Api, Client,
};
use tracing::info;

use super::{drive, served, ClusterError};
use crate::{
    admission::devices::DeviceFacts,
    api::devices::v1alpha1::{DeviceClass, DeviceClassSpec, DeviceDriver},
};

#[derive(Clone)]
pub struct DeviceCache {
    /// False when the device CRDs are not installed: nothing is known then.
    served: bool,
    drivers: Store<DeviceDriver>,
    classes: Store<DeviceClass>,
}

impl DeviceFacts for DeviceCache {
    fn drivers(&self) -> Option<BTreeMap<String, Vec<String>>> {
        if !self.served {
            return None;
        }
        Some(
            self.drivers
                .state()
                .iter()
                .filter_map(|d| Some((d.metadata.name.clone()?, d.device_types.clone())))
                .collect(),
        )
    }

    fn class(&self, name: &str) -> Option<DeviceClassSpec> {
        self.classes
            .get(&reflector::ObjectRef::new(name))
            .map(|c| c.spec.clone())
    }
}

impl DeviceCache {
    /// Starts the watches (when the CRDs are served).
    pub async fn connect(client: &Client) -> Result<Self, ClusterError> {
        let drivers_api = Api::<DeviceDriver>::all(client.clone());
        let classes_api = Api::<DeviceClass>::all(client.clone());
        let served = served(&drivers_api).await? && served(&classes_api).await?;
        if !served {
            info!(
                "the devmgmtproto.k8s.io CRDs are not installed: device references are not checked"
            );
        }
        let (drivers, dw) = reflector::store();
        let (classes, cw) = reflector::store();
        if served {
            drive(
                "devicedrivers.devmgmtproto.k8s.io".into(),
                watcher(drivers_api, watcher::Config::default())
                    .default_backoff()
                    .reflect(dw)
                    .touched_objects(),
            );
            drive(
                "deviceclasses.devmgmtproto.k8s.io".into(),
                watcher(classes_api, watcher::Config::default())
                    .default_backoff()
                    .modify(|c: &mut DeviceClass| {
                        c.status = None;
                        c.metadata.managed_fields = None;
                    })
                    .reflect(cw)
                    .touched_objects(),
            );
        }
        Ok(DeviceCache {
            served,
            drivers,
            classes,
        })
    }

    pub async fn ready(&self) -> Result<(), ClusterError> {
        if !self.served {
            return Ok(());
        }
        let err = |e: reflector::store::WriterDropped| ClusterError::Sync(e.to_string());
        self.drivers.wait_until_ready().await.map_err(err)?;
        self.classes.wait_until_ready().await.map_err(err)
    }
}
