//! Kind → resource names by discovery, for AppWrapper's per-component
//! entitlement checks (a SubjectAccessReview names a resource, a component
//! names a kind).
//!
//! As upstream's `lookupResource`: the apiserver's resource list of the
//! kind's group/version (`/api/v1`, `/apis/<group>/<version>`), the first
//! resource of that kind — skipping subresources such as `pods/status`,
//! which share their parent's kind — kept for good once found. When the
//! list cannot be read or has no such kind the answer is `*` (any
//! resource, so RBAC decides on the group alone), and it is not kept: the
//! next review asks again.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use futures::{future::BoxFuture, FutureExt};
use kube::Client;
use tracing::debug;

use crate::admission::entitlement::{ComponentCheck, ResourceNaming};

/// The answer when discovery cannot tell.
pub use crate::admission::entitlement::ANY_RESOURCE;

/// Reads one group/version's resource list: `(name, kind)` pairs.
pub trait Discovery: Send + Sync + 'static {
    fn resources(
        &self,
        group: &str,
        version: &str,
    ) -> BoxFuture<'static, Result<Vec<(String, String)>, String>>;
}

/// Discovery through the apiserver.
pub struct KubeDiscovery {
    client: Client,
}

impl KubeDiscovery {
    pub fn new(client: Client) -> Self {
        KubeDiscovery { client }
    }
}

impl Discovery for KubeDiscovery {
    fn resources(
        &self,
        group: &str,
        version: &str,
    ) -> BoxFuture<'static, Result<Vec<(String, String)>, String>> {
        let client = self.client.clone();
        let (group, version) = (group.to_string(), version.to_string());
        async move {
            let list = if group.is_empty() {
                client.list_core_api_resources(&version).await
            } else {
                client
                    .list_api_group_resources(&format!("{group}/{version}"))
                    .await
            }
            .map_err(|e| e.to_string())?;
            Ok(list
                .resources
                .into_iter()
                .map(|r| (r.name, r.kind))
                .collect())
        }
        .boxed()
    }
}

/// `group/version, Kind=kind`, as upstream keys its cache (`gvk.String()`).
type Key = String;

/// The resource names found so far, and how to find more.
#[derive(Default)]
pub struct ResourceNames {
    known: RwLock<HashMap<Key, String>>,
    discovery: Option<Arc<dyn Discovery>>,
}

impl std::fmt::Debug for ResourceNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = self.known.read().map(|k| k.len()).unwrap_or(0);
        f.debug_struct("ResourceNames")
            .field("known", &known)
            .field("discovery", &self.discovery.is_some())
            .finish()
    }
}

fn key(group: &str, version: &str, kind: &str) -> Key {
    format!("{group}/{version}, Kind={kind}")
}

impl ResourceNames {
    pub fn new(discovery: Option<Arc<dyn Discovery>>) -> Self {
        ResourceNames {
            known: RwLock::new(HashMap::new()),
            discovery,
        }
    }

    /// Remembers a resource name (tests and benchmarks warm the cache).
    pub fn insert(&self, group: &str, version: &str, kind: &str, resource: &str) {
        self.known
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key(group, version, kind), resource.into());
    }

    /// The resource name, if already known.
    pub fn cached(&self, c: &ComponentCheck) -> Option<String> {
        self.known
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key(&c.group, &c.version, &c.kind))
            .cloned()
    }

    /// The resource name: known, discovered, or `*`.
    pub async fn resolve(&self, c: &ComponentCheck) -> String {
        if let Some(r) = self.cached(c) {
            return r;
        }
        let Some(d) = &self.discovery else {
            return ANY_RESOURCE.into();
        };
        match d.resources(&c.group, &c.version).await {
            Ok(list) => {
                match list
                    .into_iter()
                    .find(|(name, kind)| *kind == c.kind && !name.contains('/'))
                {
                    Some((name, _)) => {
                        self.known
                            .write()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(key(&c.group, &c.version, &c.kind), name.clone());
                        name
                    }
                    None => ANY_RESOURCE.into(),
                }
            }
            Err(e) => {
                debug!(group = %c.group, version = %c.version, kind = %c.kind, error = %e,
                       "discovery failed; checking any resource of the group");
                ANY_RESOURCE.into()
            }
        }
    }
}

impl ResourceNaming for ResourceNames {
    fn cached(&self, c: &ComponentCheck) -> Option<String> {
        ResourceNames::cached(self, c)
    }
    fn resolve<'a>(&'a self, c: &'a ComponentCheck) -> BoxFuture<'a, String> {
        ResourceNames::resolve(self, c).boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Fake {
        calls: AtomicUsize,
        fail: bool,
    }

    impl Discovery for Arc<Fake> {
        fn resources(
            &self,
            group: &str,
            _version: &str,
        ) -> BoxFuture<'static, Result<Vec<(String, String)>, String>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let (fail, group) = (self.fail, group.to_string());
            async move {
                if fail {
                    return Err("the server is currently unable to handle the request".into());
                }
                Ok(match group.as_str() {
                    "" => vec![
                        ("pods/status".into(), "Pod".into()),
                        ("pods".into(), "Pod".into()),
                        ("services".into(), "Service".into()),
                    ],
                    _ => vec![("deployments".into(), "Deployment".into())],
                })
            }
            .boxed()
        }
    }

    fn check(group: &str, kind: &str) -> ComponentCheck {
        ComponentCheck {
            index: 0,
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
        }
    }

    #[tokio::test]
    async fn found_names_are_kept_subresources_skipped_misses_not_kept() {
        let fake = Arc::new(Fake {
            calls: AtomicUsize::new(0),
            fail: false,
        });
        let names = ResourceNames::new(Some(Arc::new(fake.clone())));
        assert_eq!(names.resolve(&check("", "Pod")).await, "pods");
        assert_eq!(names.resolve(&check("", "Pod")).await, "pods");
        assert_eq!(fake.calls.load(Ordering::SeqCst), 1, "cached once found");
        assert_eq!(
            names.resolve(&check("apps", "Deployment")).await,
            "deployments"
        );
        assert_eq!(names.resolve(&check("", "Widget")).await, "*");
        assert_eq!(names.resolve(&check("", "Widget")).await, "*");
        assert_eq!(
            fake.calls.load(Ordering::SeqCst),
            4,
            "a miss is asked again"
        );
    }

    #[tokio::test]
    async fn a_failed_discovery_checks_any_resource_and_is_not_kept() {
        let fake = Arc::new(Fake {
            calls: AtomicUsize::new(0),
            fail: true,
        });
        let names = ResourceNames::new(Some(Arc::new(fake.clone())));
        assert_eq!(names.resolve(&check("", "Pod")).await, "*");
        assert_eq!(names.resolve(&check("", "Pod")).await, "*");
        assert_eq!(fake.calls.load(Ordering::SeqCst), 2);
        assert_eq!(
            ResourceNames::new(None).resolve(&check("", "Pod")).await,
            "*"
        );
    }
}
