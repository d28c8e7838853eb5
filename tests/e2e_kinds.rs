//! Every shipped job kind end to end on the local cluster, with the real
//! apiserver calling batchgate over TLS. No operator for these kinds runs
//! (their CRDs are minimal structural ones from tests/fixtures), so what is
//! checked is what batchgate writes: the object stored suspended, its
//! Workload's pod sets and counts, the object started with the flavor's
//! nodeSelector at every pod template once admitted, and, when its
//! ClusterQueue is drained (HoldAndDrain), suspended again with every
//! template restored.

mod support;

use std::time::Duration;

use batchgate_localcluster::LocalCluster;
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    kinds::{self, Sample},
    queueing::*,
};

const WAIT: Duration = Duration::from_secs(120);
const ZONE_KEY: &str = "e2e.batchgate.dev/zone";

fn install_kind_crds(c: &LocalCluster) {
    let file = format!(
        "{}/tests/fixtures/job-kinds-crds.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let (ok, out, err) = kubectl(c, &["apply", "-f", &file], None);
    assert!(ok, "{out}{err}");
    let names: Vec<String> = kinds::all()
        .iter()
        .map(|s| format!("crd/{}.{}", s.resource, s.group))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    c.wait_established(&names, WAIT).unwrap();
}

fn object(c: &LocalCluster, s: &Sample, ns: &str, name: &str) -> Value {
    get(c, &[&format!("{}.{}", s.resource, s.group), name, "-n", ns]).unwrap_or(Value::Null)
}

fn name_of(s: &Sample) -> String {
    format!("{}-train", s.kind.to_lowercase())
}

#[test]
fn every_kind_is_queued_admitted_started_drained_and_restored() {
    let c = batchgate_localcluster::shared();
    install_kind_crds(c);
    let c = env().cluster;
    let ns = namespace(c, "e2e-kinds");
    apply(c, &flavor("kinds-zone-a", json!({ZONE_KEY: "zone-a"})));
    let cq = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "kinds-cq"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": "kinds-zone-a", "resources": [
                {"name": "cpu", "nominalQuota": "20"},
                {"name": "memory", "nominalQuota": "20Gi"}]}]}]},
    });
    apply(c, &cq.to_string());
    apply(c, &local_queue(&ns, "research", "kinds-cq"));

    // Created: stored suspended, with a Workload of Kueue's pod sets.
    let samples = kinds::all();
    let mut queued = Vec::new();
    for s in &samples {
        let name = name_of(s);
        // What the apiserver stored, as its create response tells it (the
        // job may be admitted and started a moment later).
        let (ok, out, err) = kubectl(
            c,
            &["create", "-o", "json", "-f", "-"],
            Some(&s.object(&name, &ns, "research").to_string()),
        );
        assert!(ok, "{out}{err}");
        let stored: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            stored.pointer(s.suspend),
            Some(&json!(true)),
            "{} stored without suspend: {stored}",
            s.kind
        );
        queued.push(stored);
    }
    for s in &samples {
        let name = name_of(s);
        let wl = wait_for(WAIT, &format!("{}'s Workload", s.kind), || {
            workload_of(c, &ns, &name)
        });
        let got: Vec<(String, i64)> = wl["spec"]["podSets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap().to_string(),
                    p["count"].as_i64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, i64)> = s
            .pod_sets
            .iter()
            .map(|(n, count, _)| (n.to_string(), *count))
            .collect();
        assert_eq!(got, want, "{} Workload pod sets", s.kind);
        assert_eq!(wl["metadata"]["ownerReferences"][0]["kind"], s.kind);
        assert_eq!(wl["spec"]["queueName"], "research");
    }

    // Admitted: started, every template carrying the flavor's node label
    // and its pod set's label; everything the object had is still there.
    for (s, before) in samples.iter().zip(&queued) {
        let name = name_of(s);
        let started = wait_for(WAIT, &format!("{} started", s.kind), || {
            let o = object(c, s, &ns, &name);
            (o.pointer(s.suspend) == Some(&json!(false))).then_some(o)
        });
        let wl = workload_of(c, &ns, &name).unwrap();
        assert!(is_true(&wl, "Admitted"), "{wl}");
        for (ps, _, ptr) in &s.pod_sets {
            let Some(t) = started.pointer(ptr) else {
                assert!(before.pointer(ptr).is_none(), "{} lost {ptr}", s.kind);
                continue;
            };
            assert_eq!(
                t["spec"]["nodeSelector"][ZONE_KEY], "zone-a",
                "{} {ps}: {t}",
                s.kind
            );
            assert_eq!(t["metadata"]["labels"]["kueue.x-k8s.io/podset"], *ps);
            assert_eq!(
                t["metadata"]["labels"]["role"],
                before.pointer(ptr).unwrap()["metadata"]["labels"]["role"]
            );
            assert_eq!(t["spec"]["x-future-field"], json!({"kept": true}));
        }
    }
    // Queue status lags by up to a second (one write a second per queue).
    wait_for(WAIT, "the queue's status to count every sample", || {
        cq_counts(c, "kinds-cq").filter(|s| s.2 == samples.len() as i64)
    });

    // Drained: every object suspended again with its templates as created.
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "clusterqueue",
            "kinds-cq",
            "--type=merge",
            "-p",
            r#"{"spec":{"stopPolicy":"HoldAndDrain"}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    for (s, before) in samples.iter().zip(&queued) {
        let name = name_of(s);
        wait_for(WAIT, &format!("{} suspended and restored", s.kind), || {
            let o = object(c, s, &ns, &name);
            let restored = s
                .pod_sets
                .iter()
                .all(|(_, _, ptr)| o.pointer(ptr) == before.pointer(ptr));
            (o.pointer(s.suspend) == Some(&json!(true)) && restored).then_some(())
        });
        let wl = workload_of(c, &ns, &name).unwrap();
        assert!(is_true(&wl, "Evicted"), "{wl}");
    }
    wait_for(WAIT, "the drained ClusterQueue to hold nothing", || {
        let (_, reserving, admitted, _) = cq_counts(c, "kinds-cq")?;
        (reserving == 0 && admitted == 0).then_some(())
    });
}
