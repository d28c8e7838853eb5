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
//! The Job starts with the topology gate on its template; the ungater
//! releases each pod onto a node of the assignment (its `nodeSelector`
//! names the node), and kube-scheduler binds it there: the pods' nodeNames
//! match the assignment, node by node. Each test has its own pool of eight
//! nodes, tainted so that no other test's pods land there. Also here: a
//! JobSet's pods released by rank, preferred placement spreading only when
//! it must, implied TAS on a TAS-only ClusterQueue, and a failed node's
//! pod placed again on its rack (Kueue's node-failure replacement, on its
//! own pool of two racks of three nodes). The restart case is
//! in `tests/e2e_queueing_crash.rs` (it kills batchgate).

use std::collections::{BTreeMap, BTreeSet};

use super::*;

fn has_topology_gate(obj: &Value, at: &str) -> bool {
    obj.pointer(at)
        .and_then(Value::as_array)
        .is_some_and(|g| g.iter().any(|g| g["name"] == "kueue.x-k8s.io/topology"))
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
    let racks = tas_nodes(c, "kwok-tas", "yes");

    // A flavor naming a Topology not created yet: its queue is inactive.
    apply(c, &tas_flavor("e2e-tas-flavor", "yes", "e2e-tas-topology"));
    apply(
        c,
        &cluster_queue("e2e-tas-cq", &[("e2e-tas-flavor", "32", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "lq", "e2e-tas-cq"));
    let inactive = wait_for(SHORT, "the ClusterQueue inactive for its Topology", || {
        active(c, "e2e-tas-cq").filter(|a| a.1 == "TopologyNotFound")
    });
    assert_eq!(inactive.0, "False");
    apply(c, &tas_topology("e2e-tas-topology"));
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
        json!(TAS_RACK);
    create(c, &j.to_string());
    let wl = wait_for(LONG, "the Workload admitted", || {
        workload_of(c, &ns, "train").filter(|w| is_true(w, "Admitted"))
    });
    let psa = &wl["status"]["admission"]["podSetAssignments"][0];
    assert_eq!(
        wl["spec"]["podSets"][0]["topologyRequest"],
        json!({"required": TAS_RACK, "podIndexLabel": "batch.kubernetes.io/job-completion-index"}),
        "the Workload's topology request, from the pod template and the Job's rank label, as Kueue writes it: {wl}"
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

    // The pods: started behind the topology gate, released by the ungater
    // onto the assignment's nodes, then bound there by kube-scheduler.
    let wl_name = s(&wl["metadata"]["name"]);
    let pods = bound_pods(c, &ns, "batch.kubernetes.io/job-name=train", 3);
    let mut per_node = BTreeMap::<String, i64>::new();
    for p in &pods {
        let node = s(&p["spec"]["nodeName"]);
        assert_eq!(
            p["metadata"]["annotations"]["kueue.x-k8s.io/workload"], wl_name,
            "each pod names its Workload, as Kueue's do: {p}"
        );
        assert_eq!(
            p["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main",
            "{p}"
        );
        assert_eq!(
            p["spec"]["nodeSelector"]["kubernetes.io/hostname"], node,
            "released onto its domain's node: {p}"
        );
        assert!(
            !has_topology_gate(p, "/spec/schedulingGates"),
            "the topology gate is gone: {p}"
        );
        *per_node.entry(node).or_default() += 1;
    }
    for (node, n) in &per_node {
        let want = domains
            .iter()
            .find(|d| &d.values[0] == node)
            .unwrap_or_else(|| panic!("pod on {node}, outside the assignment {ta}"));
        assert_eq!(*n, want.count, "pods on {node} against the assignment {ta}");
    }
    let pod_racks: BTreeSet<&String> = per_node.keys().map(|n| &racks[n]).collect();
    assert_eq!(pod_racks.len(), 1, "the pods run in one rack: {per_node:?}");

    // Five pods of 2 cpu required in one rack fit the quota (16 of 32) but
    // no rack (8 cpu each): `kubectl kueue explain` says it does not fit
    // for its topology, in the words the engine then writes on the
    // Workload, which stays pending (issue 42: waiting for a TAS
    // placement).
    let mut wide: Value =
        serde_json::from_str(&job("wide", &ns, "lq", "2", "5s", json!({}))).unwrap();
    wide["spec"]["parallelism"] = json!(5);
    wide["spec"]["completions"] = json!(5);
    wide["spec"]["template"]["metadata"]["annotations"]
        ["kueue.x-k8s.io/podset-required-topology"] = json!(TAS_RACK);
    create(c, &wide.to_string());
    let pending = wait_for(LONG, "the wide Workload pending with a message", || {
        workload_of(c, &ns, "wide").filter(|w| {
            condition(w, "QuotaReserved")
                .is_some_and(|q| q["status"] == "False" && q["message"] != "")
        })
    });
    let wide_name = s(&pending["metadata"]["name"]);
    let x = wait_for(SHORT, "an explanation of the wide Workload", || {
        explained(c, &ns, &wide_name).filter(|x| x["nomination"].is_object())
    });
    assert_eq!(x["state"], "Pending", "{x}");
    assert_eq!(x["nomination"]["mode"], "NoFit", "{x}");
    let said = x["nomination"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        said.contains("topology \"e2e-tas-topology\" allows to fit only")
            && said.contains(" out of 5 pod(s)"),
        "{x}"
    );
    let written = s(&condition(&pending, "QuotaReserved").unwrap()["message"]);
    assert!(
        written.contains(&said),
        "explain said {said:?}; the engine wrote {written:?}"
    );
    assert!(
        !is_true(&workload_of(c, &ns, "wide").unwrap(), "QuotaReserved"),
        "admitted although no rack holds it"
    );
    let (ok, out, err) = kubectl(
        c,
        &["delete", "job", "wide", "-n", &ns, "--wait=false"],
        None,
    );
    assert!(ok, "{out}{err}");

    // The template has the gate on start (Kueue's `PodSetInfo`), and the
    // Job's own template is put back as it was when it stops.
    let started = job_obj(c, &ns, "train");
    assert!(
        has_topology_gate(&started, "/spec/template/spec/schedulingGates"),
        "{started}"
    );
}

/// A JobSet of two replicated jobs of two Indexed pods (2 cpu each),
/// required in one rack: the four pods fill one rack's two nodes, and the
/// ungater places them by rank, each job's pods together on one node
/// (ranks 0–1 are job 0's, 2–3 job 1's). No JobSet operator runs here: the
/// test plays it, creating each replicated job's Job from the started
/// JobSet's template with JobSet's job-index label, as the JobSet
/// controller does; the real Job controller then makes the pods.
#[test]
fn a_jobset_requiring_one_rack_runs_its_pods_on_one_racks_nodes_by_rank() {
    let c = env_with(CONFIG).cluster;
    install_kind_crds(c);
    let ns = namespace(c, "e2e-tas-jobset");
    let racks = tas_nodes(c, "kwok-tasjs", "jobset");
    apply(c, &tas_topology("e2e-tasjs-topology"));
    apply(
        c,
        &tas_flavor("e2e-tasjs-flavor", "jobset", "e2e-tasjs-topology"),
    );
    apply(
        c,
        &cluster_queue(
            "e2e-tasjs-cq",
            &[("e2e-tasjs-flavor", "32", None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "e2e-tasjs-cq"));
    let js = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "trainer", "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
            "parallelism": 2, "completions": 2, "completionMode": "Indexed",
            "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": TAS_RACK}},
                "spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "2"}}}]}}}}}]}});
    wait_for(SHORT, "the JobSet created", || {
        let (ok, _, _) = kubectl(c, &["create", "-f", "-"], Some(&js.to_string()));
        ok.then_some(())
    });
    let started = wait_for(LONG, "the JobSet started", || {
        get(c, &["jobsets.jobset.x-k8s.io", "trainer", "-n", &ns])
            .filter(|j| j["spec"]["suspend"] == false)
    });
    let wl = workload_of(c, &ns, "trainer").expect("the JobSet's Workload");
    assert_eq!(
        wl["spec"]["podSets"][0]["topologyRequest"],
        json!({"required": TAS_RACK,
               "podIndexLabel": "batch.kubernetes.io/job-completion-index",
               "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
               "subGroupCount": 2}),
        "as Kueue's JobSet integration writes it: {wl}"
    );
    let template = &started["spec"]["replicatedJobs"][0]["template"];
    assert!(
        has_topology_gate(template, "/spec/template/spec/schedulingGates"),
        "the started JobSet's template has the gate: {started}"
    );
    // Playing the JobSet controller: one Job per replica, owned by the
    // JobSet, its pods labelled with their job's index.
    for i in 0..2 {
        let mut job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": format!("trainer-workers-{i}"), "namespace": ns,
                "labels": {"jobset.sigs.k8s.io/jobset-name": "trainer",
                           "jobset.sigs.k8s.io/job-index": i.to_string()},
                "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet", "name": "trainer",
                    "uid": started["metadata"]["uid"], "controller": true}]},
            "spec": template["spec"].clone()});
        let labels = &mut job["spec"]["template"]["metadata"]["labels"];
        labels["jobset.sigs.k8s.io/jobset-name"] = json!("trainer");
        labels["jobset.sigs.k8s.io/job-index"] = json!(i.to_string());
        create(c, &job.to_string());
    }
    let pods = bound_pods(c, &ns, "jobset.sigs.k8s.io/jobset-name=trainer", 4);
    let mut by_job = BTreeMap::<String, BTreeSet<String>>::new();
    for p in &pods {
        assert!(!has_topology_gate(p, "/spec/schedulingGates"), "{p}");
        by_job
            .entry(s(&p["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"]))
            .or_default()
            .insert(s(&p["spec"]["nodeName"]));
    }
    let nodes: BTreeSet<&String> = by_job.values().flatten().collect();
    let pod_racks: BTreeSet<&String> = nodes.iter().map(|n| &racks[*n]).collect();
    assert_eq!(pod_racks.len(), 1, "the pods run in one rack: {by_job:?}");
    assert_eq!(
        nodes.len(),
        2,
        "the rack's two nodes, two pods each: {by_job:?}"
    );
    assert!(
        by_job.values().all(|n| n.len() == 1),
        "each job's pods are ranks next to each other, so share a node: {by_job:?}"
    );
}

/// Preferred and implied placement on one TAS-only ClusterQueue (four
/// racks of two 4-cpu nodes). A Job preferring one rack with 3 pods of
/// 2 cpu fits one rack and stays in it; one preferring a rack with 6 pods
/// of 2 cpu (12 cpu, more than any rack's 8) spreads, over two racks, the
/// fewest it can. A Job without any topology annotation is placed by
/// implied TAS (the queue has only TAS flavors): its Workload has a
/// `topologyAssignment`, its pod carries Kueue's
/// `podset-unconstrained-topology` annotation and runs on the assigned node.
#[test]
fn preferred_spreads_only_when_it_must_and_a_tas_only_queue_implies_tas() {
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, "e2e-tas-preferred");
    let racks = tas_nodes(c, "kwok-taspref", "preferred");
    apply(c, &tas_topology("e2e-taspref-topology"));
    apply(
        c,
        &tas_flavor("e2e-taspref-flavor", "preferred", "e2e-taspref-topology"),
    );
    apply(
        c,
        &cluster_queue(
            "e2e-taspref-cq",
            &[("e2e-taspref-flavor", "32", None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "e2e-taspref-cq"));
    let placed = |name: &str, pods: usize| -> BTreeMap<String, usize> {
        let wl = wait_for(LONG, &format!("{name} admitted"), || {
            workload_of(c, &ns, name).filter(|w| is_true(w, "Admitted"))
        });
        let ta = &wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"];
        assert!(ta.is_object(), "{name} placed by TAS: {wl}");
        let mut per_node = BTreeMap::new();
        for p in bound_pods(
            c,
            &ns,
            &format!("batch.kubernetes.io/job-name={name}"),
            pods,
        ) {
            *per_node.entry(s(&p["spec"]["nodeName"])).or_default() += 1;
        }
        per_node
    };
    let preferring = |name: &str, pods: i64| {
        let mut j: Value =
            serde_json::from_str(&job(name, &ns, "lq", "2", "600s", json!({}))).unwrap();
        j["spec"]["parallelism"] = json!(pods);
        j["spec"]["completions"] = json!(pods);
        j["spec"]["template"]["metadata"]["annotations"]
            ["kueue.x-k8s.io/podset-preferred-topology"] = json!(TAS_RACK);
        create(c, &j.to_string());
    };
    let racks_of = |per_node: &BTreeMap<String, usize>| -> BTreeSet<String> {
        per_node.keys().map(|n| racks[n].clone()).collect()
    };

    preferring("small", 3);
    let small = placed("small", 3);
    assert_eq!(
        racks_of(&small).len(),
        1,
        "3 × 2 cpu fit one rack: {small:?}"
    );
    preferring("big", 6);
    let big = placed("big", 6);
    assert_eq!(
        racks_of(&big).len(),
        2,
        "12 cpu need two racks, no more: {big:?}"
    );

    create(c, &job("implied", &ns, "lq", "1", "600s", json!({})));
    let wl = wait_for(LONG, "the implied Job admitted", || {
        workload_of(c, &ns, "implied").filter(|w| is_true(w, "Admitted"))
    });
    assert_eq!(
        wl["spec"]["podSets"][0]["topologyRequest"],
        json!({"podIndexLabel": "batch.kubernetes.io/job-completion-index"}),
        "no topology asked for: {wl}"
    );
    let ta = &wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"];
    let domains = batchgate::api::kueue::conversion::topology::expand(
        &ta["slices"],
        ta["levels"].as_array().map_or(0, Vec::len),
    )
    .unwrap_or_else(|e| panic!("implied TAS wrote an assignment: {e:?}: {wl}"));
    let pod = &bound_pods(c, &ns, "batch.kubernetes.io/job-name=implied", 1)[0];
    assert_eq!(
        pod["metadata"]["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"], "true",
        "{pod}"
    );
    assert_eq!(
        domains
            .iter()
            .map(|d| d.values.last().cloned().unwrap_or_default())
            .collect::<Vec<_>>(),
        vec![s(&pod["spec"]["nodeName"])],
        "the pod runs on its assigned node: {ta}"
    );
    kubectl(
        c,
        &["delete", "jobs", "--all", "-n", &ns, "--wait=false"],
        None,
    );
}

/// The Workload's topology assignment of pod set 0: node → pods.
fn assignment(wl: &Value) -> BTreeMap<String, i64> {
    let ta = &wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"];
    batchgate::api::kueue::conversion::topology::expand(&ta["slices"], 1)
        .unwrap_or_else(|e| panic!("the assignment reads as Kueue's v1beta2 form: {e:?}: {ta}"))
        .into_iter()
        .map(|d| (d.values[0].clone(), d.count))
        .collect()
}

fn unhealthy_nodes(wl: &Value) -> Vec<String> {
    wl["status"]["unhealthyNodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| s(&n["name"]))
        .collect()
}

/// The job's pods that run: bound, Running, not being deleted.
fn running_pods(c: &LocalCluster, ns: &str, job: &str) -> Vec<Value> {
    let selector = format!("batch.kubernetes.io/job-name={job}");
    get(c, &["pods", "-n", ns, "-l", &selector])
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            p["status"]["phase"] == "Running"
                && p["spec"]["nodeName"].is_string()
                && p["metadata"]["deletionTimestamp"].is_null()
        })
        .collect()
}

/// Kueue's failed-node replacement (its e2e `hotswap_test.go` taints a
/// node with NoExecute): two racks of three KWOK nodes (4 cpu), a Job of
/// two 3-cpu pods required in one rack, so two nodes of one rack. One of
/// them gets an untolerated NoExecute taint: kube-controller-manager's
/// taint manager evicts its pod, the node lands in the Workload's
/// `status.unhealthyNodes`, the second pass moves that pod's place to the
/// rack's third node (the other rack has room too, and is not taken), the
/// Job's new pod runs there, and the Workload stays admitted with the same
/// quota. The Workload is watched the whole time: every version is read.
#[test]
fn a_tainted_node_under_a_rack_job_is_replaced_within_the_rack_without_eviction() {
    use std::io::Read;
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, "e2e-tas-nodefail");
    let failure = "e2e.batchgate.dev/node-failure";
    let mut racks = BTreeMap::new();
    for r in 0..2 {
        let rack = format!("nf-r{r}");
        for n in 0..3 {
            let name = format!("kwok-tasnf-{r}{n}");
            apply(c, &tas_node(&name, "nodefail", "nf-b0", &rack));
            // A rerun on the same cluster: the last run's failure is gone.
            let _ = kubectl(c, &["taint", "node", &name, &format!("{failure}-")], None);
            racks.insert(name, rack.clone());
        }
    }
    for n in racks.keys() {
        wait_for(LONG, "the TAS node Ready", || {
            get(c, &["node", n]).filter(|node| is_true(node, "Ready"))
        });
    }
    apply(c, &tas_topology("e2e-tasnf-topology"));
    apply(
        c,
        &tas_flavor("e2e-tasnf-flavor", "nodefail", "e2e-tasnf-topology"),
    );
    apply(
        c,
        &cluster_queue(
            "e2e-tasnf-cq",
            &[("e2e-tasnf-flavor", "24", None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "e2e-tasnf-cq"));

    let mut j: Value =
        serde_json::from_str(&job("hotswap", &ns, "lq", "3", "600s", json!({}))).unwrap();
    j["spec"]["parallelism"] = json!(2);
    j["spec"]["completions"] = json!(2);
    j["spec"]["backoffLimit"] = json!(4);
    j["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] =
        json!(TAS_RACK);
    create(c, &j.to_string());
    let wl = wait_for(LONG, "the Workload admitted", || {
        workload_of(c, &ns, "hotswap").filter(|w| is_true(w, "Admitted"))
    });
    let wl_name = s(&wl["metadata"]["name"]);
    let before = assignment(&wl);
    assert_eq!(before.values().sum::<i64>(), 2, "{before:?}");
    assert_eq!(before.len(), 2, "a 3-cpu pod per 4-cpu node: {before:?}");
    let rack = racks[before.keys().next().unwrap()].clone();
    assert!(
        before.keys().all(|n| racks[n] == rack),
        "one rack: {before:?}"
    );
    let running = wait_for(LONG, "both pods running on the assignment", || {
        let pods = running_pods(c, &ns, "hotswap");
        (pods.len() == 2).then_some(pods)
    });
    let on: BTreeSet<String> = running.iter().map(|p| s(&p["spec"]["nodeName"])).collect();
    assert_eq!(
        on,
        before.keys().cloned().collect(),
        "pods on the assignment's nodes"
    );
    let usage = |c: &LocalCluster| {
        get(c, &["clusterqueue", "e2e-tasnf-cq"]).map(|q| q["status"]["flavorsReservation"].clone())
    };
    let reserved = wait_for(SHORT, "the ClusterQueue's reservation", || {
        usage(c).filter(|u| u.to_string().contains("\"6\""))
    });

    // Every version of the Workload from here on.
    let mut watch = c
        .kubectl()
        .args([
            "get", "workload", &wl_name, "-n", &ns, "--watch", "-o", "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = watch.stdout.take().unwrap();
    let seen = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        serde_json::Deserializer::from_str(&out)
            .into_iter::<Value>()
            .filter_map(Result::ok)
            .collect::<Vec<Value>>()
    });

    let failed = before.keys().next().unwrap().clone();
    let spare = racks
        .iter()
        .find(|(n, r)| **r == rack && !before.contains_key(*n))
        .map(|(n, _)| n.clone())
        .unwrap();
    let (ok, out, err) = kubectl(
        c,
        &[
            "taint",
            "node",
            &failed,
            &format!("{failure}=true:NoExecute"),
        ],
        None,
    );
    assert!(ok, "{out}{err}");

    // The premise: the taint manager takes the pod off the node.
    wait_for(LONG, "no pod of the job left on the tainted node", || {
        let selector = "batch.kubernetes.io/job-name=hotswap";
        let pods = get(c, &["pods", "-n", &ns, "-l", selector])?;
        let left = pods["items"].as_array()?.iter().any(|p| {
            p["spec"]["nodeName"] == failed.as_str()
                && !matches!(p["status"]["phase"].as_str(), Some("Failed" | "Succeeded"))
        });
        (!left).then_some(())
    });
    let after = wait_for(
        LONG,
        "the Workload's assignment without the tainted node",
        || {
            workload_of(c, &ns, "hotswap")
                .filter(|w| !assignment(w).contains_key(&failed) && unhealthy_nodes(w).is_empty())
        },
    );
    let moved = assignment(&after);
    let kept: BTreeMap<String, i64> = before
        .iter()
        .filter(|(n, _)| **n != failed)
        .map(|(n, c)| (n.clone(), *c))
        .collect();
    let mut want = kept.clone();
    want.insert(spare.clone(), 1);
    assert_eq!(
        moved, want,
        "the failed node's pod goes to the rack's third node, the other stays: {after}"
    );
    let running = wait_for(LONG, "the Job's new pod running on the spare node", || {
        let pods = running_pods(c, &ns, "hotswap");
        (pods.len() == 2).then_some(pods)
    });
    let on: BTreeMap<String, String> = running
        .iter()
        .map(|p| {
            (
                s(&p["spec"]["nodeName"]),
                racks[&s(&p["spec"]["nodeName"])].clone(),
            )
        })
        .collect();
    assert_eq!(
        on.keys().cloned().collect::<BTreeSet<_>>(),
        want.keys().cloned().collect::<BTreeSet<_>>(),
        "the pods run where the new assignment says: {on:?}"
    );
    assert!(on.values().all(|r| *r == rack), "same rack: {on:?}");
    assert!(is_true(&after, "Admitted"), "{after}");
    assert_eq!(
        usage(c),
        Some(reserved.clone()),
        "the quota reserved, not twice"
    );

    let _ = watch.kill();
    let _ = watch.wait();
    let versions = seen.join().unwrap();
    assert!(
        versions
            .iter()
            .any(|w| unhealthy_nodes(w) == [failed.clone()] && assignment(w).contains_key(&failed)),
        "the node was marked unhealthy before its pods moved: {} versions seen",
        versions.len()
    );
    for w in &versions {
        assert!(is_true(w, "Admitted"), "admitted all along: {w}");
        assert!(!is_true(w, "Evicted"), "never evicted: {w}");
    }
    let _ = kubectl(c, &["taint", "node", &failed, &format!("{failure}-")], None);
}

/// An elastic Job on a TAS-only ClusterQueue (implied TAS, as an elastic
/// Job may ask only for unconstrained topology) scaled 2 → 4 while it
/// runs, on its own pool of eight 4-cpu nodes with one 3-cpu pod per node.
/// The replacing slice is placed afresh for all four pods while the first
/// slice's two still hold their nodes, as Kueue's default gates do
/// (`ElasticJobsViaWorkloadSlicesWithTAS`, which keeps the old placement,
/// is alpha and off). The two new pods are released onto the new slice's
/// nodes and run there. Kueue's ungater, which reads the slice named on
/// the pods (the first: a running Job's template is not written again),
/// would leave them gated: it has no room for them.
#[test]
fn an_elastic_jobs_new_pods_are_released_onto_the_slice_that_replaced_the_first() {
    let c = env_with(CONFIG).cluster;
    let ns = namespace(c, "e2e-tas-elastic");
    tas_nodes(c, "kwok-tasel", "elastic");
    apply(c, &tas_topology("e2e-tasel-topology"));
    apply(
        c,
        &tas_flavor("e2e-tasel-flavor", "elastic", "e2e-tasel-topology"),
    );
    apply(
        c,
        &cluster_queue(
            "e2e-tasel-cq",
            &[("e2e-tasel-flavor", "32", None)],
            json!({}),
        ),
    );
    apply(c, &local_queue(&ns, "lq", "e2e-tasel-cq"));
    let mut j: Value = serde_json::from_str(&job("el", &ns, "lq", "3", "600s", json!({}))).unwrap();
    j["metadata"]["annotations"] = json!({"kueue.x-k8s.io/elastic-job": "true"});
    j["spec"]["parallelism"] = json!(2);
    j["spec"]["completions"] = json!(20);
    create(c, &j.to_string());
    let selector = "batch.kubernetes.io/job-name=el";
    let slices = || -> Vec<Value> {
        let mut list: Vec<Value> = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])
            .and_then(|l| l["items"].as_array().cloned())
            .unwrap_or_default();
        list.sort_by_key(|w| s(&w["metadata"]["creationTimestamp"]));
        list
    };
    let first = wait_for(LONG, "the first slice admitted with a placement", || {
        slices().into_iter().find(|w| {
            is_true(w, "Admitted")
                && w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
                    .is_object()
        })
    });
    let first_nodes = assignment(&first);
    assert_eq!(first_nodes.values().sum::<i64>(), 2, "{first}");
    let running = |n: usize| {
        let pods = running_pods(c, &ns, "el");
        (pods.len() == n).then_some(pods)
    };
    wait_for(LONG, "the first two pods running", || running(2));

    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "job",
            "el",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"parallelism":4}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let second = wait_for(
        LONG,
        "the replacing slice admitted with a placement",
        || {
            slices().into_iter().find(|w| {
                w["metadata"]["name"] != first["metadata"]["name"]
                    && is_true(w, "Admitted")
                    && w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
                        .is_object()
            })
        },
    );
    let second_nodes = assignment(&second);
    assert_eq!(
        second_nodes.values().sum::<i64>(),
        4,
        "placed for all four: {second}"
    );
    // Placed while the first slice's pods held their nodes: none of them
    // had room for another 3-cpu pod.
    for n in first_nodes.keys() {
        assert!(
            !second_nodes.contains_key(n),
            "{n} had 1 cpu left: {second}"
        );
    }
    let replaced = wait_for(SHORT, "the first slice finished as replaced", || {
        slices()
            .into_iter()
            .find(|w| w["metadata"]["name"] == first["metadata"]["name"])
            .filter(|w| is_true(w, "Finished"))
    });
    assert_eq!(
        condition(&replaced, "Finished").unwrap()["reason"],
        "WorkloadSliceReplaced"
    );
    let waited =
        std::panic::catch_unwind(|| wait_for(LONG, "all four pods running", || running(4)));
    let pods = waited.unwrap_or_else(|e| {
        // What each pod waits on, and the slices, are the first to read.
        let list = get(c, &["pods", "-n", &ns, "-l", selector]).unwrap_or_default();
        for p in list["items"].as_array().into_iter().flatten() {
            eprintln!(
                "pod {} {} node={} gates={} selector={}",
                s(&p["metadata"]["name"]),
                s(&p["status"]["phase"]),
                p["spec"]["nodeName"],
                p["spec"]["schedulingGates"],
                p["spec"]["nodeSelector"]
            );
        }
        for w in slices() {
            eprintln!("slice {}: {}", s(&w["metadata"]["name"]), w["status"]);
        }
        std::panic::resume_unwind(e)
    });
    let mut new_on = BTreeMap::<String, i64>::new();
    for p in &pods {
        let node = s(&p["spec"]["nodeName"]);
        assert!(
            !has_topology_gate(p, "/spec/schedulingGates"),
            "released: {p}"
        );
        if !first_nodes.contains_key(&node) {
            *new_on.entry(node).or_default() += 1;
        }
    }
    assert_eq!(new_on.values().sum::<i64>(), 2, "two new pods: {new_on:?}");
    for (node, n) in &new_on {
        assert!(
            second_nodes.get(node).is_some_and(|room| room >= n),
            "the new pods run on the new slice's nodes: {node} in {second_nodes:?}"
        );
    }
    let _ = bound_pods(c, &ns, selector, 4);
    kubectl(
        c,
        &["delete", "jobs", "--all", "-n", &ns, "--wait=false"],
        None,
    );
}
