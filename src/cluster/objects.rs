//! Objects the webhook's rules read by name during a review (a TrainJob's
//! runtime, a StatefulSet's Workload): read live, at most a few per
//! review and only for the reviews that ask, each bounded so a slow
//! apiserver cannot hold a review past the webhook's timeout.

use std::time::Duration;

use futures::future::join_all;
use kube::{
    core::{ApiResource, DynamicObject, GroupVersionKind},
    Api, Client,
};

use crate::admission::{ObjectKey, Read};

/// Well inside the 10 s the apiserver gives a webhook call.
const READ_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Clone)]
pub struct ObjectReader {
    client: Client,
}

impl ObjectReader {
    pub fn new(client: Client) -> Self {
        ObjectReader { client }
    }

    /// Every key read at once: the object, `None` for a 404, or why not.
    pub async fn read_all(&self, keys: Vec<ObjectKey>) -> Read {
        let read = join_all(keys.iter().map(|k| self.read(k))).await;
        Read(keys.into_iter().zip(read).collect())
    }

    async fn read(&self, key: &ObjectKey) -> Result<Option<serde_json::Value>, String> {
        // A name from a user's object goes into the URL path: one that is
        // not an object name could address another resource.
        if !is_object_name(&key.name) {
            return Err(format!("{:?} is not an object name", key.name));
        }
        // The kind is not sent on a GET; the resource names the path.
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&key.group, &key.version, ""),
            &key.resource,
        );
        let api: Api<DynamicObject> = match &key.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &ar),
            None => Api::all_with(self.client.clone(), &ar),
        };
        match tokio::time::timeout(READ_TIMEOUT, api.get_opt(&key.name)).await {
            Ok(Ok(Some(o))) => serde_json::to_value(o).map(Some).map_err(|e| e.to_string()),
            Ok(Ok(None)) => Ok(None),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("not read within {READ_TIMEOUT:?}")),
        }
    }
}

/// Whether `name` can name an object (a path segment of its own): not
/// empty, not `.` or `..`, no `/` or `%`.
fn is_object_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '%'])
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_object_names_reach_a_url() {
        for ok in ["torch", "statefulset-web-20170", "a.b-c"] {
            assert!(super::is_object_name(ok), "{ok}");
        }
        for bad in ["", ".", "..", "../secrets/x", "a/b", "a%2Fb"] {
            assert!(!super::is_object_name(bad), "{bad}");
        }
    }
}
