//! Position in queue, published for `kubectl kueue list workload`.
//!
//! Upstream Kueue serves pending workloads through an aggregated API
//! (`visibility.kueue.x-k8s.io`), which needs a Service in front of the
//! manager. batchgate instead has its queueing engine publish, per
//! LocalQueue, the ordered names of its pending Workloads in a ConfigMap
//! in the LocalQueue's namespace:
//!
//! - name `batchgate-pending-<16 hex digits of the LocalQueue's name hash>`,
//!   label `batchgate.dev/pending-workloads: "true"`, annotation
//!   `batchgate.dev/local-queue: <name>`;
//! - `data.workloads`: the Workload names, one a line, in the order the
//!   ClusterQueue would try them (priority, then creation, then UID: the
//!   first line is position 0); `data.clusterQueue`; `data.truncated:
//!   "true"` when the list was cut at [`MAX_BYTES`].
//!
//! This module is the pure part (format and order); the reconciler writes
//! (src/controllers/visibility.rs) and the plugin reads (src/kueuectl).

use std::collections::BTreeMap;

pub const CONFIG_MAP_PREFIX: &str = "batchgate-pending-";
pub const LABEL: &str = "batchgate.dev/pending-workloads";
pub const LOCAL_QUEUE_ANNOTATION: &str = "batchgate.dev/local-queue";
pub const KEY_WORKLOADS: &str = "workloads";
pub const KEY_CLUSTER_QUEUE: &str = "clusterQueue";
pub const KEY_TRUNCATED: &str = "truncated";
/// Names beyond this many bytes are left out (a ConfigMap holds 1 MiB).
pub const MAX_BYTES: usize = 512 * 1024;

/// The ConfigMap name for a LocalQueue (FNV-1a of its name: LocalQueue
/// names may be longer than a ConfigMap name with a prefix may be).
pub fn config_map_name(local_queue: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in local_queue.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{CONFIG_MAP_PREFIX}{h:016x}")
}

/// The pending Workloads of one LocalQueue, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    pub cluster_queue: String,
    pub workloads: Vec<String>,
    pub truncated: bool,
}

impl Pending {
    /// The ConfigMap's `data`, cut at [`MAX_BYTES`].
    pub fn encode(&self) -> BTreeMap<String, String> {
        let mut text = String::new();
        let mut truncated = self.truncated;
        for w in &self.workloads {
            if text.len() + w.len() + 1 > MAX_BYTES {
                truncated = true;
                break;
            }
            text.push_str(w);
            text.push('\n');
        }
        let mut data = BTreeMap::new();
        data.insert(KEY_WORKLOADS.to_string(), text);
        data.insert(KEY_CLUSTER_QUEUE.to_string(), self.cluster_queue.clone());
        if truncated {
            data.insert(KEY_TRUNCATED.to_string(), "true".to_string());
        }
        data
    }

    pub fn decode(data: &BTreeMap<String, String>) -> Pending {
        Pending {
            cluster_queue: data.get(KEY_CLUSTER_QUEUE).cloned().unwrap_or_default(),
            workloads: data
                .get(KEY_WORKLOADS)
                .map(|t| t.lines().map(str::to_string).collect())
                .unwrap_or_default(),
            truncated: data.get(KEY_TRUNCATED).is_some_and(|v| v == "true"),
        }
    }
}

/// A pending Workload as the engine holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub namespace: String,
    pub local_queue: String,
    pub name: String,
    pub priority: i32,
    /// Creation time, milliseconds.
    pub created: i64,
    pub uid: String,
}

/// Every LocalQueue's pending list from a ClusterQueue's pending
/// Workloads: ordered as the queue orders them (higher priority, older,
/// then UID), then split by LocalQueue, keyed by `(namespace, name)`.
pub fn by_local_queue(
    cluster_queue: &str,
    mut entries: Vec<Entry>,
) -> BTreeMap<(String, String), Pending> {
    entries.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.created.cmp(&b.created))
            .then_with(|| a.uid.cmp(&b.uid))
    });
    let mut out: BTreeMap<(String, String), Pending> = BTreeMap::new();
    for e in entries {
        out.entry((e.namespace, e.local_queue))
            .or_insert_with(|| Pending {
                cluster_queue: cluster_queue.to_string(),
                ..Pending::default()
            })
            .workloads
            .push(e.name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(ns: &str, lq: &str, name: &str, priority: i32, created: i64) -> Entry {
        Entry {
            namespace: ns.into(),
            local_queue: lq.into(),
            name: name.into(),
            priority,
            created,
            uid: format!("uid-{name}"),
        }
    }

    #[test]
    fn positions_follow_the_queue_order_within_each_local_queue() {
        let lists = by_local_queue(
            "cq",
            vec![
                e("a", "lq", "old", 0, 1),
                e("a", "lq", "new", 0, 5),
                e("a", "lq", "urgent", 10, 9),
                e("b", "lq", "other", 0, 2),
            ],
        );
        assert_eq!(lists.len(), 2);
        let a = &lists[&("a".to_string(), "lq".to_string())];
        assert_eq!(a.workloads, ["urgent", "old", "new"]);
        assert_eq!(a.cluster_queue, "cq");
        assert_eq!(
            lists[&("b".to_string(), "lq".to_string())].workloads,
            ["other"]
        );
    }

    #[test]
    fn the_config_map_round_trips_and_is_cut_when_too_big() {
        let p = Pending {
            cluster_queue: "cq".into(),
            workloads: vec!["w1".into(), "w2".into()],
            truncated: false,
        };
        assert_eq!(Pending::decode(&p.encode()), p);
        let big = Pending {
            cluster_queue: "cq".into(),
            workloads: (0..40_000).map(|i| format!("workload-{i:08}")).collect(),
            truncated: false,
        };
        let data = big.encode();
        assert!(data[KEY_WORKLOADS].len() <= MAX_BYTES);
        let back = Pending::decode(&data);
        assert!(back.truncated);
        assert_eq!(back.workloads[..3], big.workloads[..3]);
    }

    #[test]
    fn config_map_names_are_short_stable_and_distinct() {
        let a = config_map_name("queue-a");
        assert_eq!(a, config_map_name("queue-a"));
        assert_ne!(a, config_map_name("queue-b"));
        assert_eq!(a.len(), CONFIG_MAP_PREFIX.len() + 16);
        assert!(config_map_name(&"x".repeat(253)).len() < 64);
    }
}
