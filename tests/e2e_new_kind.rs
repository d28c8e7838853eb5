//! A job kind batchgate has never heard of, integrated with a policy file
//! and nothing else: a CRD invented for this test, a policy written to a
//! temporary directory, and the real binary run with `--policies` on the
//! local cluster. The object is defaulted (suspended at the kind's own
//! switch), gets a Workload with the pod sets the policy describes, is
//! admitted and started with the flavor's node labels at every template,
//! and its Workload finishes when the object's status says it is done.

mod support;

use std::{process::Command, time::Duration};

use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace},
    queueing::{apply, cluster_queue, flavor, get, install_crds, is_true, local_queue, wait_for},
    Server, BIN,
};

const WAIT: Duration = Duration::from_secs(90);

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: simulations.sim.example.com}
spec:
  group: sim.example.com
  scope: Namespaced
  names: {kind: Simulation, listKind: SimulationList, plural: simulations, singular: simulation}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
            status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// The whole integration: where the switch is, which templates run how
/// many pods, and how the kind says it is done.
const POLICY: &str = r#"
name: sim.example.com/simulation
target: {group: sim.example.com, version: v1, kind: Simulation, resource: simulations}
suspend: /spec/control/paused
podSets:
  - name: coordinator
    template: /spec/coordinator/template
  - forEach: /spec/stages
    name: {path: /id}
    template: /pod
    count:
      product:
        - {path: /parallel, default: 1}
        - {path: /repeats, default: 1}
invariants: [queueName, workloadPriorityClass]
status:
  conditions: /status/conditions
  succeeded: [Done]
  failed: [Broken]
"#;

fn pod(role: &str) -> Value {
    json!({"metadata": {"labels": {"role": role}},
           "spec": {"containers": [{"name": role, "image": "sim:2",
                                    "resources": {"requests": {"cpu": "100m"}}}]}})
}

#[test]
fn a_new_kind_needs_only_a_policy_file() {
    let c = batchgate_localcluster::shared();
    install_crds(c);
    let (ok, out, err) = kubectl(c, &["apply", "-f", "-"], Some(CRD));
    assert!(ok, "{out}{err}");
    c.wait_established(&["crd/simulations.sim.example.com"], WAIT)
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("simulation.yaml"), POLICY).unwrap();
    let policies = dir.path().to_str().unwrap().to_string();
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("config.yaml");
    std::fs::write(&cfg, "namespace: default\n").unwrap();
    let server = Server::start_in_cluster(
        c.kubeconfig(),
        None,
        &["--config", cfg.to_str().unwrap(), "--policies", &policies],
    );
    server.wait_ready(Duration::from_secs(60));
    // The webhook registration is generated from the same policy directory.
    let out = Command::new(BIN)
        .args([
            "webhooks",
            "--policies",
            &policies,
            "--failure-policy",
            "Fail",
        ])
        .arg("--url")
        .arg(format!("https://{}", server.addr))
        .arg("--ca-file")
        .arg(server.cert_dir.join("ca.crt"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let registration = String::from_utf8(out.stdout).unwrap();
    assert!(registration.contains("simulations"), "{registration}");
    c.apply(&registration).unwrap();

    let ns = namespace(c, "e2e-sim");
    apply(
        c,
        &flavor("sim-fast", json!({"e2e.batchgate.dev/pool": "fast"})),
    );
    apply(
        c,
        &cluster_queue("sim-cq", &[("sim-fast", "10", None)], json!({})),
    );
    apply(c, &local_queue(&ns, "sims", "sim-cq"));

    let sim = json!({
        "apiVersion": "sim.example.com/v1", "kind": "Simulation",
        "metadata": {"name": "weather", "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": "sims"}},
        "spec": {
            "model": {"grid": "1km", "hours": 72},
            "coordinator": {"template": pod("coordinator")},
            "stages": [
                {"id": "Ingest", "parallel": 2, "pod": pod("ingest")},
                {"id": "solve", "parallel": 3, "repeats": 2, "pod": pod("solve")},
            ],
        },
    })
    .to_string();
    // Until the apiserver calls the new registration, creates are not
    // defaulted; a dry run tells when it does.
    let stored: Value = wait_for(WAIT, "the Simulation defaulted by batchgate", || {
        let (ok, out, _) = kubectl(
            c,
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            Some(&sim),
        );
        let v: Value = ok.then(|| serde_json::from_str(&out).ok()).flatten()?;
        (v.pointer("/spec/control/paused") == Some(&json!(true))).then_some(v)
    });
    assert_eq!(stored["spec"]["model"], json!({"grid": "1km", "hours": 72}));
    let (ok, out, err) = kubectl(c, &["create", "-o", "json", "-f", "-"], Some(&sim));
    assert!(ok, "{out}{err}");
    let created: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(created.pointer("/spec/control/paused"), Some(&json!(true)));

    let wl = wait_for(WAIT, "the Simulation's Workload", || {
        let list = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns])?;
        list["items"].as_array()?.first().cloned()
    });
    let sets: Vec<(String, i64)> = wl["spec"]["podSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().into(),
                p["count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sets,
        [
            ("coordinator".into(), 1),
            ("ingest".into(), 2),
            ("solve".into(), 6)
        ]
    );
    assert_eq!(wl["metadata"]["ownerReferences"][0]["kind"], "Simulation");
    assert!(
        wl["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("simulation-weather-"),
        "{wl}"
    );

    let started = wait_for(WAIT, "the Simulation started", || {
        let s = get(c, &["simulations.sim.example.com", "weather", "-n", &ns])?;
        (s.pointer("/spec/control/paused") == Some(&json!(false))).then_some(s)
    });
    for t in [
        &started["spec"]["coordinator"]["template"],
        &started["spec"]["stages"][0]["pod"],
        &started["spec"]["stages"][1]["pod"],
    ] {
        assert_eq!(
            t["spec"]["nodeSelector"]["e2e.batchgate.dev/pool"], "fast",
            "{t}"
        );
    }
    let wl = get(
        c,
        &[
            "workloads.kueue.x-k8s.io",
            wl["metadata"]["name"].as_str().unwrap(),
            "-n",
            &ns,
        ],
    )
    .unwrap();
    assert!(is_true(&wl, "Admitted"), "{wl}");

    // The kind reports success its own way; the Workload follows.
    let (ok, out, err) = kubectl(
        c,
        &[
            "patch",
            "simulations.sim.example.com",
            "weather",
            "-n",
            &ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Done","status":"True","message":"72 hours simulated"}]}}"#,
        ],
        None,
    );
    assert!(ok, "{out}{err}");
    let finished = wait_for(WAIT, "the Workload finished", || {
        let w = get(
            c,
            &[
                "workloads.kueue.x-k8s.io",
                wl["metadata"]["name"].as_str().unwrap(),
                "-n",
                &ns,
            ],
        )?;
        is_true(&w, "Finished").then_some(w)
    });
    let cond = finished["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Finished")
        .unwrap();
    assert_eq!(cond["reason"], "Succeeded", "{cond}");
    assert_eq!(cond["message"], "72 hours simulated", "{cond}");
    drop(server);
}
