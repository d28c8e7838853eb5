//! "Position in Queue" for `list workload`, read as upstream kueuectl reads
//! it: one `GET .../v1beta2/clusterqueues/<cq>/pendingworkloads` (Kueue's
//! default limit) per ClusterQueue a listed pending Workload waits in, the
//! position being `positionInLocalQueue`. Any failure (no APIService, the
//! server unreachable, no rights) leaves the positions of that
//! ClusterQueue blank rather than failing the listing.

use std::collections::{BTreeSet, HashMap};

use kube::Client;
use serde_json::Value;

use super::listing::WorkloadStatus;
use crate::{api::kueue::v1beta2::Workload, visibility::GROUP};

/// `(namespace, Workload)` to its 0-based position in its LocalQueue.
pub async fn read(
    client: &Client,
    items: &[Workload],
    local_queues: &HashMap<(String, String), String>,
) -> HashMap<(String, String), usize> {
    let cluster_queues: BTreeSet<String> = items
        .iter()
        .filter(|w| WorkloadStatus::of(w) == WorkloadStatus::Pending)
        .filter_map(|w| {
            let admitted = w
                .status
                .as_ref()
                .and_then(|s| s.admission.as_ref())
                .and_then(|a| a.cluster_queue.clone())
                .filter(|c| !c.is_empty());
            admitted.or_else(|| {
                let ns = w.metadata.namespace.clone()?;
                let lq = w.spec.queue_name.clone()?;
                local_queues.get(&(ns, lq)).cloned()
            })
        })
        .collect();
    let mut out = HashMap::new();
    for cq in cluster_queues {
        let path = format!("/apis/{GROUP}/v1beta2/clusterqueues/{cq}/pendingworkloads");
        let Ok(req) = http::Request::get(path).body(Vec::new()) else {
            continue;
        };
        let Ok(summary) = client.request::<Value>(req).await else {
            continue;
        };
        for it in summary["items"].as_array().into_iter().flatten() {
            let m = &it["metadata"];
            if let (Some(ns), Some(name), Some(p)) = (
                m["namespace"].as_str(),
                m["name"].as_str(),
                it["positionInLocalQueue"].as_u64(),
            ) {
                out.insert((ns.to_string(), name.to_string()), p as usize);
            }
        }
    }
    out
}
