//! Topology-aware scheduling on the local cluster, checked with kubectl as
//! a Kueue user would: a Topology of block / rack / hostname over eight
//! KWOK nodes (two blocks of two racks of two nodes, 4 cpu each), a TAS
//! flavor naming it, and a Job whose pods must share one rack. The
//! Workload's `topologyAssignment` is read back from the apiserver in
//! Kueue's v1beta2 form and expanded: every domain is a node of one rack,
//! and the pod counts add up to the Job's parallelism. A ClusterQueue whose
//! TAS flavor names a Topology that does not exist is inactive with
//! Kueue's `TopologyNotFound` until it is created; the Topology then
//! carries Kueue's `resource-in-use` finalizer.
//!
//! Not checked here yet: the pods' nodes (the topology gate and its
//! ungater are not wired to pods yet, so kube-scheduler still picks nodes).

use super::*;

const POOL: &str = "e2e-tas-pool";
const BLOCK: &str = "e2e.batchgate.dev/block";
const RACK: &str = "e2e.batchgate.dev/rack";

fn tas_node(name: &str, block: &str, rack: &str) -> String {
    let capacity = json!({"cpu": "4", "memory": "8Gi", "pods": "20"});
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "type": "kwok",
                       POOL: "yes", BLOCK: block, RACK: rack},
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
        "status": {"capacity": capacity, "allocatable": capacity}})
    .to_string()
}

fn topology(name: &str) -> String {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK},
                            {"nodeLabel": "kubernetes.io/hostname"}]}})
    .to_string()
}

fn tas_flavor(name: &str, topology: &str) -> String {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {POOL: "yes"}, "topologyName": topology}})
    .to_string()
}

fn active(c: &LocalCluster, cq: &str) -> Option<(String, String)> {
    let q = get(c, &["clusterqueue", cq])?;
    let a = condition(&q, "Active")?;
    Some((s(&a["status"]), s(&a["reason"])))
}

#[test]
fn a_job_requiring_one_rack_is_admitted_with_kueues_topology_assignment_in_one_rack() {
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, "e2e-tas");
    let mut racks = std::collections::BTreeMap::new();
    for (b, block) in ["b1", "b2"].iter().enumerate() {
        for r in 0..2 {
            let rack = format!("{block}-r{r}");
            for n in 0..2 {
                let name = format!("kwok-tas-{}{}{}", b, r, n);
                apply(c, &tas_node(&name, block, &rack));
                racks.insert(name, rack.clone());
            }
        }
    }
    for n in racks.keys() {
        wait_for(LONG, "the TAS node Ready", || {
            get(c, &["node", n]).filter(|node| is_true(node, "Ready"))
        });
    }

    // A flavor naming a Topology not created yet: its queue is inactive.
    apply(c, &tas_flavor("e2e-tas-flavor", "e2e-tas-topology"));
    apply(
        c,
        &cluster_queue("e2e-tas-cq", &[("e2e-tas-flavor", "32", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "e2e-tas-cq"));
    let inactive = wait_for(SHORT, "the ClusterQueue inactive for its Topology", || {
        active(c, "e2e-tas-cq").filter(|a| a.1 == "TopologyNotFound")
    });
    assert_eq!(inactive.0, "False");
    apply(c, &topology("e2e-tas-topology"));
    wait_for(
        SHORT,
        "the ClusterQueue active once its Topology exists",
        || active(c, "e2e-tas-cq").filter(|a| a.0 == "True"),
    );
    // Kueue's Topology controller keeps it while a flavor names it.
    wait_for(SHORT, "the Topology's resource-in-use finalizer", || {
        get(c, &["topology", "e2e-tas-topology"]).filter(|t| {
            t["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.contains(&json!("kueue.x-k8s.io/resource-in-use")))
        })
    });

    // Three pods of 2 cpu, required in one rack: a rack has 8 cpu on two
    // nodes, so two nodes of one rack.
    let mut j: Value =
        serde_json::from_str(&job("train", &ns, "lq", "2", "120s", json!({}))).unwrap();
    j["spec"]["parallelism"] = json!(3);
    j["spec"]["completions"] = json!(3);
    j["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] =
        json!(RACK);
    create(c, &j.to_string());
    let wl = wait_for(LONG, "the Workload admitted", || {
        workload_of(c, &ns, "train").filter(|w| is_true(w, "Admitted"))
    });
    let psa = &wl["status"]["admission"]["podSetAssignments"][0];
    assert_eq!(
        wl["spec"]["podSets"][0]["topologyRequest"],
        json!({"required": RACK}),
        "the Workload's topology request, from the pod template: {wl}"
    );
    let ta = &psa["topologyAssignment"];
    assert_eq!(
        ta["levels"],
        json!(["kubernetes.io/hostname"]),
        "Kueue writes only the hostname level when it is the lowest: {ta}"
    );
    let domains = batchgate::api::kueue::conversion::topology::expand(&ta["slices"], 1)
        .unwrap_or_else(|e| panic!("the assignment reads as Kueue's v1beta2 form: {e:?}: {ta}"));
    let total: i64 = domains.iter().map(|d| d.count).sum();
    assert_eq!(total, 3, "{ta}");
    let used_racks: std::collections::BTreeSet<&String> = domains
        .iter()
        .map(|d| {
            racks
                .get(&d.values[0])
                .unwrap_or_else(|| panic!("not a TAS node: {ta}"))
        })
        .collect();
    assert_eq!(used_racks.len(), 1, "the pods share one rack: {ta}");
    assert!(
        domains.iter().all(|d| d.count <= 2),
        "no node gets more than its 4 cpu: {ta}"
    );
}
