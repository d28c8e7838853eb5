//! The rows of `list`: upstream's columns computed from the objects and
//! what was read beside them (a LocalQueue's ClusterQueue, the position of
//! a pending Workload, an owner's type), with `now` as a parameter.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::table::{human_duration, Table};
use crate::api::kueue::v1beta2::{
    condition, ClusterQueue, LocalQueue, ResourceFlavor, Workload, CONDITION_ACTIVE,
};

/// `Job Type` cells longer than this are cut, with `...` after.
const JOB_TYPE_MAX: usize = 20;

fn seconds(t: &Time) -> i64 {
    t.0.as_second()
}

fn age(created: Option<&Time>, now: i64) -> String {
    created.map_or_else(String::new, |t| human_duration(now - seconds(t)))
}

fn find<'a>(conds: Option<&'a Vec<Condition>>, ty: &str) -> Option<&'a Condition> {
    conds?.iter().find(|c| c.type_ == ty)
}

fn is_true(conds: Option<&Vec<Condition>>, ty: &str) -> bool {
    find(conds, ty).is_some_and(|c| c.status == "True")
}

/// A Workload's status as upstream's `workload.Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorkloadStatus {
    Pending,
    QuotaReserved,
    Admitted,
    Finished,
}

impl WorkloadStatus {
    pub fn of(wl: &Workload) -> Self {
        let conds = wl.status.as_ref().and_then(|s| s.conditions.as_ref());
        if is_true(conds, condition::FINISHED) {
            WorkloadStatus::Finished
        } else if is_true(conds, condition::ADMITTED) {
            WorkloadStatus::Admitted
        } else if is_true(conds, condition::QUOTA_RESERVED) {
            WorkloadStatus::QuotaReserved
        } else {
            WorkloadStatus::Pending
        }
    }

    /// As the Status column shows it.
    pub fn as_column(self) -> &'static str {
        match self {
            WorkloadStatus::Pending => "PENDING",
            WorkloadStatus::QuotaReserved => "QUOTARESERVED",
            WorkloadStatus::Admitted => "ADMITTED",
            WorkloadStatus::Finished => "FINISHED",
        }
    }
}

/// `--status` values; `None` (or `all` among them) keeps every Workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusFilter(Option<BTreeSet<WorkloadStatus>>);

impl StatusFilter {
    pub fn parse(values: &[String]) -> Result<Self, String> {
        let mut set = BTreeSet::new();
        let mut all = values.is_empty();
        for v in values {
            match v.to_lowercase().as_str() {
                "all" => all = true,
                "pending" => {
                    set.insert(WorkloadStatus::Pending);
                }
                "quotareserved" => {
                    set.insert(WorkloadStatus::QuotaReserved);
                }
                "admitted" => {
                    set.insert(WorkloadStatus::Admitted);
                }
                "finished" => {
                    set.insert(WorkloadStatus::Finished);
                }
                _ => {
                    return Err(format!(
                        r#"invalid status value ({v}). Must be "all", "pending", "admitted" or "finished""#
                    ))
                }
            }
        }
        Ok(StatusFilter((!all).then_some(set)))
    }

    pub fn keeps(&self, status: WorkloadStatus) -> bool {
        self.0.as_ref().is_none_or(|s| s.contains(&status))
    }
}

/// Upstream's client-side filters of `list workload`.
#[derive(Debug, Clone, Default)]
pub struct WorkloadFilter {
    pub local_queue: Option<String>,
    /// Matches the ClusterQueue of the admission only, as upstream.
    pub cluster_queue: Option<String>,
    pub status: StatusFilter,
    /// `--for` when the Workload carries no job-uid label: an owner with
    /// this UID.
    pub owner_uid: Option<String>,
}

impl WorkloadFilter {
    pub fn keeps(&self, wl: &Workload) -> bool {
        if let Some(lq) = &self.local_queue {
            if wl.spec.queue_name.as_deref() != Some(lq.as_str()) {
                return false;
            }
        }
        if let Some(cq) = &self.cluster_queue {
            let admitted_in = wl
                .status
                .as_ref()
                .and_then(|s| s.admission.as_ref())
                .and_then(|a| a.cluster_queue.as_deref());
            if admitted_in != Some(cq.as_str()) {
                return false;
            }
        }
        if let Some(uid) = &self.owner_uid {
            let owned = wl
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == *uid);
            if !owned {
                return false;
            }
        }
        self.status.keeps(WorkloadStatus::of(wl))
    }
}

/// What `list workload` reads beside the Workloads.
#[derive(Debug, Clone, Default)]
pub struct WorkloadFacts {
    /// `(namespace, LocalQueue)` to its ClusterQueue.
    pub local_queues: HashMap<(String, String), String>,
    /// `(namespace, Workload)` to its 0-based position in its LocalQueue,
    /// from the visibility API ([`super::positions`]).
    pub positions: HashMap<(String, String), usize>,
    /// An owner's `(apiVersion, kind)` to its resource's `singular.group`.
    pub job_types: HashMap<(String, String), String>,
}

/// The `Job Type` cell of an owner resource: `singular.group`, cut at 20
/// characters.
pub fn job_type(singular: &str, group: &str) -> String {
    let full = if group.is_empty() {
        singular.to_string()
    } else {
        format!("{singular}.{group}")
    };
    if full.chars().count() > JOB_TYPE_MAX {
        let cut: String = full.chars().take(JOB_TYPE_MAX).collect();
        format!("{cut}...")
    } else {
        full
    }
}

pub const WORKLOAD_COLUMNS: [&str; 9] = [
    "Name",
    "Job Type",
    "Job Name",
    "LocalQueue",
    "ClusterQueue",
    "Status",
    "Position in Queue",
    "Exec Time",
    "Age",
];

/// One `list workload` row; `wide` adds Priority.
pub fn workload_row(wl: &Workload, facts: &WorkloadFacts, now: i64, wide: bool) -> Vec<String> {
    let ns = wl.metadata.namespace.clone().unwrap_or_default();
    let name = wl.metadata.name.clone().unwrap_or_default();
    let lq = wl.spec.queue_name.clone().unwrap_or_default();
    let status = wl.status.as_ref();
    let conds = status.and_then(|s| s.conditions.as_ref());
    let cq = status
        .and_then(|s| s.admission.as_ref())
        .and_then(|a| a.cluster_queue.clone())
        .filter(|c| !c.is_empty())
        .or_else(|| facts.local_queues.get(&(ns.clone(), lq.clone())).cloned())
        .unwrap_or_default();
    let st = WorkloadStatus::of(wl);
    let position = if st == WorkloadStatus::Pending {
        facts
            .positions
            .get(&(ns.clone(), name.clone()))
            .map(|p| p.to_string())
            .unwrap_or_default()
    } else {
        String::new()
    };
    let exec = match find(conds, condition::ADMITTED).filter(|c| c.status == "True") {
        Some(adm) => {
            let end = find(conds, condition::FINISHED)
                .filter(|c| c.status == "True")
                .map_or(now, |f| seconds(&f.last_transition_time));
            human_duration(end - seconds(&adm.last_transition_time))
        }
        None => String::new(),
    };
    let owners = wl.metadata.owner_references.as_deref().unwrap_or_default();
    let types: BTreeSet<&str> = owners
        .iter()
        .filter_map(|o| {
            facts
                .job_types
                .get(&(o.api_version.clone(), o.kind.clone()))
                .map(String::as_str)
                .filter(|t| !t.is_empty())
        })
        .collect();
    let names: BTreeSet<&str> = owners.iter().map(|o| o.name.as_str()).collect();
    let mut row = vec![
        name,
        types.into_iter().collect::<Vec<_>>().join(", "),
        names.into_iter().collect::<Vec<_>>().join(", "),
        lq,
        cq,
        st.as_column().to_string(),
        position,
        exec,
        age(wl.metadata.creation_timestamp.as_ref(), now),
    ];
    if wide {
        row.push(wl.spec.priority.map(|p| p.to_string()).unwrap_or_default());
    }
    row
}

pub fn workload_table(items: &[&Workload], facts: &WorkloadFacts, now: i64, wide: bool) -> Table {
    let mut cols = WORKLOAD_COLUMNS.to_vec();
    if wide {
        cols.push("Priority");
    }
    let mut t = Table::new(cols);
    t.rows = items
        .iter()
        .map(|w| workload_row(w, facts, now, wide))
        .collect();
    t
}

/// `list clusterqueue`; `wide` adds Strategy and Reserving Workloads.
pub fn cluster_queue_table(items: &[&ClusterQueue], now: i64, wide: bool) -> Table {
    let mut cols = vec![
        "Name",
        "Cohort",
        "Pending Workloads",
        "Admitted Workloads",
        "Active",
        "Age",
    ];
    if wide {
        cols.extend(["Strategy", "Reserving Workloads"]);
    }
    let mut t = Table::new(cols);
    for cq in items {
        let st = cq.status.as_ref();
        let mut row = vec![
            cq.metadata.name.clone().unwrap_or_default(),
            cq.spec.cohort_name.clone().unwrap_or_default(),
            st.and_then(|s| s.pending_workloads)
                .unwrap_or(0)
                .to_string(),
            st.and_then(|s| s.admitted_workloads)
                .unwrap_or(0)
                .to_string(),
            cluster_queue_active(cq).to_string(),
            age(cq.metadata.creation_timestamp.as_ref(), now),
        ];
        if wide {
            row.push(
                cq.spec
                    .queueing_strategy
                    .clone()
                    .unwrap_or_else(|| "BestEffortFIFO".into()),
            );
            row.push(
                st.and_then(|s| s.reserving_workloads)
                    .unwrap_or(0)
                    .to_string(),
            );
        }
        t.rows.push(row);
    }
    t
}

/// The `Active` condition is True.
pub fn cluster_queue_active(cq: &ClusterQueue) -> bool {
    is_true(
        cq.status.as_ref().and_then(|s| s.conditions.as_ref()),
        CONDITION_ACTIVE,
    )
}

/// `list localqueue`; `wide` adds Reserving Workloads and Active.
pub fn local_queue_table(items: &[&LocalQueue], now: i64, wide: bool) -> Table {
    let mut cols = vec![
        "Name",
        "ClusterQueue",
        "Pending Workloads",
        "Admitted Workloads",
        "Age",
    ];
    if wide {
        cols.extend(["Reserving Workloads", "Active"]);
    }
    let mut t = Table::new(cols);
    for lq in items {
        let st = lq.status.as_ref();
        let mut row = vec![
            lq.metadata.name.clone().unwrap_or_default(),
            lq.spec.cluster_queue.clone().unwrap_or_default(),
            st.and_then(|s| s.pending_workloads)
                .unwrap_or(0)
                .to_string(),
            st.and_then(|s| s.admitted_workloads)
                .unwrap_or(0)
                .to_string(),
            age(lq.metadata.creation_timestamp.as_ref(), now),
        ];
        if wide {
            row.push(
                st.and_then(|s| s.reserving_workloads)
                    .unwrap_or(0)
                    .to_string(),
            );
            row.push(is_true(st.and_then(|s| s.conditions.as_ref()), CONDITION_ACTIVE).to_string());
        }
        t.rows.push(row);
    }
    t
}

/// `list resourceflavor`: node labels sorted, `k=v` joined by `, `;
/// `wide` adds Node Taints (`key=value:Effect`).
pub fn resource_flavor_table(items: &[&ResourceFlavor], now: i64, wide: bool) -> Table {
    let mut cols = vec!["Name", "Node Labels", "Age"];
    if wide {
        cols.push("Node Taints");
    }
    let mut t = Table::new(cols);
    for rf in items {
        let labels: Vec<String> = rf
            .spec
            .node_labels
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut row = vec![
            rf.metadata.name.clone().unwrap_or_default(),
            labels.join(", "),
            age(rf.metadata.creation_timestamp.as_ref(), now),
        ];
        if wide {
            let taints: Vec<String> = rf
                .spec
                .node_taints
                .iter()
                .flatten()
                .map(|t| match &t.value {
                    Some(v) => format!("{}={v}:{}", t.key, t.effect),
                    None => format!("{}:{}", t.key, t.effect),
                })
                .collect();
            row.push(taints.join(", "));
        }
        t.rows.push(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000;

    fn ts(secs: i64) -> String {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
            .0
            .to_string()
    }

    fn wl(v: serde_json::Value) -> Workload {
        serde_json::from_value(v).unwrap()
    }

    fn cond(ty: &str, status: &str, at: i64) -> serde_json::Value {
        json!({"type": ty, "status": status, "reason": "R", "message": "", "lastTransitionTime": ts(at)})
    }

    fn facts() -> WorkloadFacts {
        let mut f = WorkloadFacts::default();
        f.local_queues
            .insert(("ns".into(), "lq".into()), "cq-of-lq".into());
        f.positions.insert(("ns".into(), "pending".into()), 3);
        f.job_types
            .insert(("batch/v1".into(), "Job".into()), job_type("job", "batch"));
        f.job_types.insert(
            ("ray.io/v1".into(), "RayJob".into()),
            job_type("rayjob", "ray.io"),
        );
        f.job_types.insert(
            ("kubeflow.org/v1".into(), "PyTorchJob".into()),
            job_type("pytorchjob", "kubeflow.org"),
        );
        f
    }

    #[test]
    fn a_pending_workload_shows_its_local_queues_cluster_queue_and_position() {
        let w = wl(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "pending", "namespace": "ns", "creationTimestamp": ts(NOW - 150),
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "job-a", "uid": "u1"}]},
            "spec": {"queueName": "lq", "podSets": []},
            "status": {"conditions": [cond("QuotaReserved", "False", NOW - 100)]}
        }));
        assert_eq!(
            workload_row(&w, &facts(), NOW, false),
            [
                "pending",
                "job.batch",
                "job-a",
                "lq",
                "cq-of-lq",
                "PENDING",
                "3",
                "",
                "2m30s"
            ]
        );
    }

    #[test]
    fn an_admitted_workload_shows_its_admissions_queue_and_exec_time() {
        let w = wl(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "pending", "namespace": "ns", "creationTimestamp": ts(NOW - 4000),
                         "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "pt", "uid": "u1"}]},
            "spec": {"queueName": "lq", "podSets": [], "priority": 7},
            "status": {"admission": {"clusterQueue": "admitted-in", "podSetAssignments": []},
                       "conditions": [cond("QuotaReserved", "True", NOW - 3700), cond("Admitted", "True", NOW - 3600)]}
        }));
        assert_eq!(
            workload_row(&w, &facts(), NOW, true),
            [
                "pending",
                "pytorchjob.kubeflow....",
                "pt",
                "lq",
                "admitted-in",
                "ADMITTED",
                "",
                "60m",
                "66m",
                "7"
            ]
        );
    }

    #[test]
    fn a_finished_workloads_exec_time_stops_at_finished() {
        let w = wl(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "other", "creationTimestamp": ts(NOW - 100)},
            "spec": {"queueName": "nope", "podSets": []},
            "status": {"conditions": [cond("Admitted", "True", NOW - 90), cond("Finished", "True", NOW - 45)]}
        }));
        let row = workload_row(&w, &facts(), NOW, false);
        assert_eq!(row[1], "");
        assert_eq!(row[4], "");
        assert_eq!(row[5], "FINISHED");
        assert_eq!(row[7], "45s");
    }

    #[test]
    fn quota_reserved_without_admitted_reads_quotareserved() {
        let w = wl(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"queueName": "lq", "podSets": []},
            "status": {"conditions": [cond("QuotaReserved", "True", NOW)]}
        }));
        assert_eq!(WorkloadStatus::of(&w), WorkloadStatus::QuotaReserved);
        let f = StatusFilter::parse(&["quotaReserved".into()]).unwrap();
        assert!(f.keeps(WorkloadStatus::QuotaReserved));
        assert!(!f.keeps(WorkloadStatus::Pending));
        let filter = WorkloadFilter {
            cluster_queue: Some("cq-of-lq".into()),
            ..Default::default()
        };
        // Upstream matches --clusterqueue against the admission only.
        assert!(!filter.keeps(&w));
    }

    #[test]
    fn status_values_are_checked_with_upstreams_words() {
        assert_eq!(
            StatusFilter::parse(&["running".into()]),
            Err(r#"invalid status value (running). Must be "all", "pending", "admitted" or "finished""#.into())
        );
        let f = StatusFilter::parse(&["pending".into(), "all".into()]).unwrap();
        assert!(f.keeps(WorkloadStatus::Finished));
        assert!(StatusFilter::parse(&[])
            .unwrap()
            .keeps(WorkloadStatus::Admitted));
    }

    #[test]
    fn job_types_are_cut_at_twenty_characters() {
        assert_eq!(job_type("job", "batch"), "job.batch");
        assert_eq!(job_type("pod", ""), "pod");
        assert_eq!(job_type("rayjob", "ray.io"), "rayjob.ray.io");
        assert_eq!(
            job_type("appwrapper", "workload.codeflare.dev"),
            "appwrapper.workload...."
        );
    }

    #[test]
    fn cluster_queue_rows_show_active_and_counts() {
        let cq: ClusterQueue = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "cq", "creationTimestamp": ts(NOW - 30)},
            "spec": {"cohortName": "co"},
            "status": {"pendingWorkloads": 2, "admittedWorkloads": 1, "reservingWorkloads": 1,
                       "conditions": [cond("Active", "True", NOW)]}
        }))
        .unwrap();
        let t = cluster_queue_table(&[&cq], NOW, false);
        assert_eq!(t.rows, [["cq", "co", "2", "1", "true", "30s"]]);
        assert_eq!(
            t.render(true).lines().next(),
            Some("NAME   COHORT   PENDING WORKLOADS   ADMITTED WORKLOADS   ACTIVE   AGE")
        );
        let t = cluster_queue_table(&[&cq], NOW, true);
        assert_eq!(t.rows[0][6..], ["BestEffortFIFO", "1"]);
    }

    #[test]
    fn local_queue_and_flavor_rows() {
        let lq: LocalQueue = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "ns", "creationTimestamp": ts(NOW - 7200)},
            "spec": {"clusterQueue": "cq"},
            "status": {"pendingWorkloads": 4, "admittedWorkloads": 2}
        }))
        .unwrap();
        assert_eq!(
            local_queue_table(&[&lq], NOW, false).rows,
            [["lq", "cq", "4", "2", "120m"]]
        );
        let rf: ResourceFlavor = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": "rf", "creationTimestamp": ts(NOW - 5)},
            "spec": {"nodeLabels": {"zone": "a", "arch": "arm"},
                     "nodeTaints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}
        }))
        .unwrap();
        assert_eq!(
            resource_flavor_table(&[&rf], NOW, true).rows,
            [["rf", "arch=arm, zone=a", "5s", "gpu=true:NoSchedule"]]
        );
    }
}
