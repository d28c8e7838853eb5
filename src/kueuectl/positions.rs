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
use crate::{api::kueue::v1beta2::Workload, queueing::visibility::GROUP};

/// Adds to `out` (`(namespace, Workload)` to its 0-based position in its
/// LocalQueue) the positions of the ClusterQueues of `page`'s pending
/// Workloads not asked yet (`asked`): one summary a ClusterQueue, as
/// upstream asks, so a listing read page by page asks each once.
pub async fn add(
    client: &Client,
    page: &[&Workload],
    local_queues: &HashMap<(String, String), String>,
    asked: &mut BTreeSet<String>,
    out: &mut HashMap<(String, String), usize>,
) {
    let cluster_queues: BTreeSet<String> = page
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
        .filter(|cq| !asked.contains(cq))
        .collect();
    for cq in cluster_queues {
        asked.insert(cq.clone());
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
}
