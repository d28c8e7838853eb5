//! The serving certificate kept in a Secret, read through the API.
//!
//! Read-only (cert-manager writes the Secret): the pair is loaded and
//! reloaded when it changes, for setups where no kubelet mounts it.
//! Managed: batchgate creates the CA and serving pair on first start, renews
//! and rotates them as [`rotation`] says, and keeps the `caBundle` of its own
//! webhook configurations equal to the Secret's bundle. Several replicas
//! agree through the Secret's resourceVersion: one write wins, the others
//! re-read and follow it.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        core::v1::Secret,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    ByteString,
};
use kube::{
    api::{ObjectMeta, Patch, PatchParams, PostParams},
    Api, Client,
};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use time::OffsetDateTime;
use tracing::{debug, info, warn};

use crate::{
    admission::manifests::{MUTATING_NAME, VALIDATING_NAME},
    api::crd::CONVERTED_CRDS,
    certs::{
        self,
        rotation::{self, Step, Stored, Timing},
        CertOptions,
    },
};
use crate::{
    metrics::Metrics,
    tls::{poll_until, record_reload, CertStore},
};

#[derive(Debug, thiserror::Error)]
pub enum CertSecretError {
    #[error("Secret {namespace}/{name}: {source}")]
    Api {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("Secret {0} has no tls.crt and tls.key yet")]
    Empty(String),
    #[error("{0}")]
    Cert(#[from] certs::CertError),
    #[error("Secret {0}: gave up after repeated write conflicts")]
    Conflicts(String),
}

/// What batchgate does with the Secret when it manages it.
#[derive(Debug, Clone)]
pub struct Managed {
    pub timing: Timing,
    pub names: CertOptions,
}

/// Once every caBundle target is found in step with the Secret, they are
/// read again only when the bundle changes or after this long (an edit by
/// hand is repaired then): 6 GETs a poll per replica otherwise.
const RECHECK_SETTLED: Duration = Duration::from_secs(60);

/// How often a start waits on a Secret not filled yet.
const BOOTSTRAP_POLL: Duration = Duration::from_secs(2);

pub struct CertSecret {
    api: Api<Secret>,
    client: Client,
    namespace: String,
    name: String,
    managed: Option<Managed>,
    /// The bundle every target held at the last check, and when.
    settled: Mutex<Option<(String, Instant)>>,
}

fn data_of(s: &Secret) -> Stored {
    let mut m = BTreeMap::new();
    for (k, v) in s.data.iter().flatten() {
        if let Ok(text) = String::from_utf8(v.0.clone()) {
            m.insert(k.clone(), text);
        }
    }
    Stored(m)
}

fn secret_of(
    name: &str,
    namespace: &str,
    stored: &Stored,
    resource_version: Option<String>,
) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/name".to_string(),
                "batchgate".to_string(),
            )])),
            resource_version,
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(
            stored
                .0
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Secret::default()
    }
}

impl CertSecret {
    pub fn new(client: Client, namespace: &str, name: &str, managed: Option<Managed>) -> Self {
        CertSecret {
            api: Api::namespaced(client.clone(), namespace),
            client,
            namespace: namespace.to_string(),
            name: name.to_string(),
            managed,
            settled: Mutex::new(None),
        }
    }

    fn api_err(&self, source: kube::Error) -> CertSecretError {
        CertSecretError::Api {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    /// Reads the Secret and, when managed, takes the next rotation step.
    /// Returns what the Secret holds afterwards.
    pub async fn reconcile(&self, now: i64) -> Result<Stored, CertSecretError> {
        for _ in 0..5 {
            let existing = self
                .api
                .get_opt(&self.name)
                .await
                .map_err(|e| self.api_err(e))?;
            let stored = existing.as_ref().map(data_of).unwrap_or_default();
            let Some(m) = &self.managed else {
                return Ok(stored);
            };
            let step = rotation::next_step(&stored, now, &m.timing);
            if let Step::Wait { .. } = step {
                return Ok(stored);
            }
            let next = rotation::apply(step, &stored, now, &m.timing, &m.names)?;
            let written = match existing {
                None => {
                    self.api
                        .create(
                            &PostParams::default(),
                            &secret_of(&self.name, &self.namespace, &next, None),
                        )
                        .await
                }
                Some(s) => {
                    let rv = s.metadata.resource_version.clone();
                    self.api
                        .replace(
                            &self.name,
                            &PostParams::default(),
                            &secret_of(&self.name, &self.namespace, &next, rv),
                        )
                        .await
                }
            };
            match written {
                Ok(_) => {
                    info!(secret = %self.name, ?step, "serving certificate Secret updated");
                    return Ok(next);
                }
                // Another replica wrote first: follow what it wrote.
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    debug!(secret = %self.name, ?step, "lost a write race; re-reading");
                    continue;
                }
                Err(e) => return Err(self.api_err(e)),
            }
        }
        Err(CertSecretError::Conflicts(self.name.clone()))
    }

    /// The first reconcile, before the listener starts: a serving pair to
    /// start with. A Secret someone else fills (cert-manager) is waited for,
    /// as a kubelet waits for a Secret volume, rather than failing the start.
    pub async fn bootstrap(&self) -> Result<(Stored, Arc<CertStore>), CertSecretError> {
        let mut told = false;
        let stored = loop {
            let stored = self
                .reconcile(OffsetDateTime::now_utc().unix_timestamp())
                .await?;
            if stored.serving_pair().is_some() || self.managed.is_some() {
                break stored;
            }
            if !told {
                info!(secret = %self.name, namespace = %self.namespace, "waiting for the serving certificate (tls.crt, tls.key) in the Secret");
                told = true;
            }
            tokio::time::sleep(BOOTSTRAP_POLL).await;
        };
        let (c, k) = stored
            .serving_pair()
            .ok_or_else(|| CertSecretError::Empty(format!("{}/{}", self.namespace, self.name)))?;
        let store = CertStore::from_pem(c.as_bytes().to_vec(), k.as_bytes().to_vec())?;
        if self.managed.is_some() {
            self.publish_ca_bundle(&stored).await;
        }
        Ok((stored, store))
    }

    /// Keeps the store and (managed) the webhook caBundles in step with the
    /// Secret until `stop` resolves.
    pub async fn run(
        self,
        store: Arc<CertStore>,
        metrics: Arc<Metrics>,
        every: Duration,
        stop: impl std::future::Future<Output = ()>,
    ) {
        let this = &self;
        poll_until(every, stop, || async {
            let stored = match this
                .reconcile(OffsetDateTime::now_utc().unix_timestamp())
                .await
            {
                Ok(s) => s,
                Err(e) => {
                    warn!(error = %e, "certificate Secret sync failed; will retry");
                    return;
                }
            };
            if this.managed.is_some() {
                // Publish first: during a CA rotation the bundle is extended
                // before anything serves from the new CA.
                this.publish_ca_bundle(&stored).await;
            }
            if let Some((c, k)) = stored.serving_pair() {
                record_reload(
                    &metrics,
                    store.set_pem(c.as_bytes().to_vec(), k.as_bytes().to_vec()),
                );
            }
        })
        .await
    }

    async fn publish_ca_bundle(&self, stored: &Stored) {
        let Some(bundle) = stored.bundle() else {
            return;
        };
        let want = certs::ca_bundle(bundle);
        let fresh = |s: &Option<(String, Instant)>| matches!(s, Some((b, at)) if *b == want && at.elapsed() < RECHECK_SETTLED);
        if self.settled.lock().map(|s| fresh(&s)).unwrap_or(false) {
            return;
        }
        let m: Api<MutatingWebhookConfiguration> = Api::all(self.client.clone());
        let v: Api<ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        let cas = certs::pem_certs(bundle).len();
        // Every target is visited even after one fails: each is independent.
        let mut settled = patch_ca_bundle(&m, MUTATING_NAME, &want, cas).await;
        settled &= patch_ca_bundle(&v, VALIDATING_NAME, &want, cas).await;
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let ours = self
            .managed
            .as_ref()
            .map(|m| (m.names.service.as_str(), m.names.namespace.as_str()));
        for name in CONVERTED_CRDS {
            settled &= patch_conversion_ca_bundle(&crds, name, ours, &want, cas).await;
        }
        if let Ok(mut s) = self.settled.lock() {
            // Not settled (a target missing, converted otherwise, or a
            // failed call): look again at the next poll.
            *s = settled.then(|| (want, Instant::now()));
        }
    }
}

/// Sets the conversion webhook's `caBundle` of the named CRD where it
/// differs; a CRD not installed, or converted otherwise, is left alone, and
/// so is one converted by another Service than `ours` (Kueue's own CRDs
/// when batchgate runs beside Kueue: their CA is Kueue's). True when the
/// CRD now holds `want_b64`, or is not batchgate's to keep.
async fn patch_conversion_ca_bundle(
    api: &Api<CustomResourceDefinition>,
    name: &str,
    ours: Option<(&str, &str)>,
    want_b64: &str,
    cas: usize,
) -> bool {
    let crd = match api.get_opt(name).await {
        Ok(Some(c)) => c,
        Ok(None) => {
            debug!(
                crd = name,
                "CRD not installed; conversion caBundle not published"
            );
            return false;
        }
        Err(e) => {
            warn!(crd = name, error = %e, "reading CRD");
            return false;
        }
    };
    let Some(webhook) = crd
        .spec
        .conversion
        .as_ref()
        .filter(|c| c.strategy == "Webhook")
        .and_then(|c| c.webhook.as_ref())
    else {
        return false;
    };
    let service = webhook
        .client_config
        .as_ref()
        .and_then(|cc| cc.service.as_ref())
        .map(|svc| (svc.name.as_str(), svc.namespace.as_str()));
    if service.is_none() || service != ours {
        debug!(
            crd = name,
            ?service,
            "converted by another Service; its caBundle is not ours"
        );
        return true;
    }
    let current = webhook
        .client_config
        .as_ref()
        .and_then(|cc| cc.ca_bundle.as_ref())
        .map(|b| certs::ca_bundle(&String::from_utf8_lossy(&b.0)));
    if current.as_deref() == Some(want_b64) {
        return true;
    }
    let (svc_name, svc_namespace) = service.unwrap_or_default();
    let patch = json!([
        {"op": "test", "path": "/spec/conversion/strategy", "value": "Webhook"},
        {"op": "test", "path": "/spec/conversion/webhook/clientConfig/service/name", "value": svc_name},
        {"op": "test", "path": "/spec/conversion/webhook/clientConfig/service/namespace", "value": svc_namespace},
        {"op": "add", "path": "/spec/conversion/webhook/clientConfig/caBundle", "value": want_b64},
    ]);
    let patch: json_patch::Patch = match serde_json::from_value(patch) {
        Ok(p) => p,
        Err(e) => {
            warn!(error = %e, "building conversion caBundle patch");
            return false;
        }
    };
    match api
        .patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
    {
        Ok(_) => {
            info!(crd = name, cas, "conversion caBundle published");
            true
        }
        Err(e) => {
            warn!(crd = name, error = %e, "publishing conversion caBundle; will retry");
            false
        }
    }
}

/// Sets `caBundle` on every webhook of the named configuration where it
/// differs. A `test` op on each webhook's name guards against the list
/// having changed since it was read. True when every webhook now holds
/// `want_b64`.
async fn patch_ca_bundle<K>(api: &Api<K>, name: &str, want_b64: &str, cas: usize) -> bool
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj = match api.get_opt(name).await {
        Ok(Some(o)) => o,
        Ok(None) => {
            debug!(
                config = name,
                "webhook configuration not installed; caBundle not published"
            );
            return false;
        }
        Err(e) => {
            warn!(config = name, error = %e, "reading webhook configuration");
            return false;
        }
    };
    let v = serde_json::to_value(&obj).unwrap_or(Value::Null);
    let mut ops = Vec::new();
    for (i, w) in v["webhooks"].as_array().into_iter().flatten().enumerate() {
        if w["clientConfig"]["caBundle"].as_str() != Some(want_b64) {
            ops.push(
                json!({"op": "test", "path": format!("/webhooks/{i}/name"), "value": w["name"]}),
            );
            ops.push(json!({"op": "add", "path": format!("/webhooks/{i}/clientConfig/caBundle"), "value": want_b64}));
        }
    }
    if ops.is_empty() {
        return true;
    }
    let patch: json_patch::Patch = match serde_json::from_value(Value::Array(ops)) {
        Ok(p) => p,
        Err(e) => {
            warn!(error = %e, "building caBundle patch");
            return false;
        }
    };
    match api
        .patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
    {
        Ok(_) => {
            info!(config = name, cas, "caBundle published");
            true
        }
        Err(e) => {
            warn!(config = name, error = %e, "publishing caBundle; will retry");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::vetting::testing::{scripted_client, sent};

    /// A CRD converted by `service` in `namespace`, with no caBundle yet.
    fn crd(name: &str, service: &str, namespace: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": "kueue.x-k8s.io", "scope": "Namespaced",
                     "names": {"plural": "workloads", "kind": "Workload"},
                     "versions": [],
                     "conversion": {"strategy": "Webhook", "webhook": {
                         "conversionReviewVersions": ["v1"],
                         "clientConfig": {"service": {"name": service, "namespace": namespace,
                                                       "path": "/convert", "port": 443}}}}}
        })
    }

    async fn publish(service: &str, namespace: &str) -> (bool, Vec<(String, Value)>) {
        let (service, namespace) = (service.to_string(), namespace.to_string());
        let (client, script) = scripted_client(move |_, _, _| {
            (200, crd("workloads.kueue.x-k8s.io", &service, &namespace))
        });
        let api: Api<CustomResourceDefinition> = Api::all(client);
        let settled = patch_conversion_ca_bundle(
            &api,
            "workloads.kueue.x-k8s.io",
            Some(("batchgate-webhook", "batchgate-system")),
            "Q0E=",
            1,
        )
        .await;
        (settled, sent(&script))
    }

    #[tokio::test]
    async fn its_own_crds_conversion_ca_is_published_guarded_by_its_service() {
        let (settled, requests) = publish("batchgate-webhook", "batchgate-system").await;
        assert!(settled);
        let path =
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workloads.kueue.x-k8s.io";
        assert_eq!(requests.len(), 2, "{requests:?}");
        assert_eq!(requests[0].0, format!("GET {path}"));
        assert_eq!(requests[1].0, format!("PATCH {path}"));
        assert_eq!(
            requests[1].1,
            json!([
                {"op": "test", "path": "/spec/conversion/strategy", "value": "Webhook"},
                {"op": "test", "path": "/spec/conversion/webhook/clientConfig/service/name", "value": "batchgate-webhook"},
                {"op": "test", "path": "/spec/conversion/webhook/clientConfig/service/namespace", "value": "batchgate-system"},
                {"op": "add", "path": "/spec/conversion/webhook/clientConfig/caBundle", "value": "Q0E="},
            ])
        );
    }

    /// Beside Kueue, Kueue's CRDs have the same names and are converted by
    /// Kueue's webhook: batchgate reads them and writes nothing.
    #[tokio::test]
    async fn a_crd_converted_by_another_service_is_not_patched() {
        let (settled, requests) = publish("kueue-webhook-service", "kueue-system").await;
        assert!(settled, "nothing of batchgate's to keep in step");
        let lines: Vec<&str> = requests.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            lines,
            ["GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/workloads.kueue.x-k8s.io"]
        );
    }
}
