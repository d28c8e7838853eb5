//! One reconciler at a time: replicas serve the webhook together, but only
//! the holder of a `coordination.k8s.io` Lease runs the queueing engine and
//! starts or stops jobs — two engines would each count the same quota.
//! A holder that cannot renew in time exits, as controller-runtime's leader
//! election does, so it never acts on a lease someone else may hold.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::Timestamp,
};
use kube::{
    api::{ObjectMeta, PostParams},
    Api, Client,
};
use tracing::{error, info, warn};

pub const LEASE_NAME: &str = "batchgate-reconciler";
/// The holder's batchgate version, on the Lease (`kubectl kueue version`).
pub const VERSION_ANNOTATION: &str = "batchgate.dev/version";

fn version_annotations() -> std::collections::BTreeMap<String, String> {
    [(
        VERSION_ANNOTATION.to_string(),
        env!("CARGO_PKG_VERSION").to_string(),
    )]
    .into()
}

pub struct Elector {
    api: Api<Lease>,
    identity: String,
    duration: Duration,
}

impl Elector {
    pub fn new(client: Client, namespace: &str, duration: Duration) -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "batchgate".into());
        Elector {
            api: Api::namespaced(client, namespace),
            identity: format!("{host}_{}", std::process::id()),
            duration,
        }
    }

    fn spec(&self, now: Timestamp, acquired: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.duration.as_secs().max(1) as i32),
            acquire_time: Some(acquired.unwrap_or(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    /// One attempt to take or keep the lease; `true` when we hold it.
    async fn try_hold(&self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let Some(mut lease) = self.api.get_opt(LEASE_NAME).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(LEASE_NAME.into()),
                    annotations: Some(version_annotations()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.spec(now, None, 0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let ours = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        let expired = match (&spec.renew_time, spec.lease_duration_seconds) {
            (Some(t), Some(d)) => t.0.as_millisecond() + i64::from(d) * 1000 < now.as_millisecond(),
            _ => true,
        };
        if !ours
            && !expired
            && spec
                .holder_identity
                .as_deref()
                .is_some_and(|h| !h.is_empty())
        {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        let acquired = if ours {
            spec.acquire_time.clone()
        } else {
            None
        };
        lease.spec = Some(self.spec(now, acquired, transitions));
        lease
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .extend(version_annotations());
        // replace() carries the resourceVersion read: a concurrent taker loses.
        match self
            .api
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Waits until the lease is ours, then keeps renewing it in the
    /// background; the process exits if a renewal does not land in time.
    pub async fn acquire(self) {
        let retry = (self.duration / 3).max(Duration::from_millis(200));
        loop {
            match self.try_hold().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => warn!(error = %e, "reading the reconciler lease"),
            }
            tokio::time::sleep(retry).await;
        }
        info!(lease = LEASE_NAME, identity = %self.identity, "reconciler lease acquired");
        tokio::spawn(async move {
            let mut last = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(retry).await;
                match self.try_hold().await {
                    Ok(true) => last = tokio::time::Instant::now(),
                    Ok(false) => {
                        error!("reconciler lease lost to another replica; exiting");
                        std::process::exit(1);
                    }
                    Err(e) => warn!(error = %e, "renewing the reconciler lease"),
                }
                if last.elapsed() > self.duration {
                    error!("reconciler lease not renewed in time; exiting");
                    std::process::exit(1);
                }
            }
        });
    }
}
