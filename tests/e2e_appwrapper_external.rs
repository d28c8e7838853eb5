//! AppWrapper with `admission: external` (issue 6 item 4): batchgate runs
//! the AppWrapper controller as the AppWrapper operator would next to stock
//! Kueue, and nothing of Kueue's side. The test plays Kueue: the queued
//! AppWrapper is stored suspended and its pod sets reported in
//! `status.componentStatus[].podSets`; once "admitted" (`podSetInfos` with
//! a nodeSelector and `spec.suspend=false` in one patch, as Kueue writes
//! them) its Job is created with that nodeSelector, its pod runs on the
//! matching KWOK node, QuotaReserved and ResourcesDeployed are True, and it
//! goes Running then Succeeded. Another, evicted while running
//! (`spec.suspend=true`, `podSetInfos` removed), is Suspended with its Job
//! and pod deleted and QuotaReserved False. batchgate creates no Workload.

mod support;

use std::time::Duration;

use batchgate_localcluster::{shared, POD_RUNTIME_ANNOTATION};
use serde_json::{json, Value};
use support::{
    e2e::{kubectl, namespace, register, wait_webhook_active},
    queueing::{condition, get, install_crds, wait_for},
    Server,
};

const WAIT: Duration = Duration::from_secs(120);
const NODE: &str = "kwok-node-1";

#[test]
fn with_admission_external_an_appwrapper_is_driven_by_kueue_through_suspend_and_pod_set_infos() {
    let c = shared();
    install_crds(c);
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        "namespace: default\nreconciler:\n  leaseDurationSeconds: 15\n",
    )
    .unwrap();
    let server = Server::start_in_cluster(
        c.kubeconfig(),
        None,
        &["--admission", "external", "--config", cfg.to_str().unwrap()],
    );
    server.wait_ready(Duration::from_secs(60));
    register(
        c,
        server.addr,
        Some(&server.cert_dir.join("ca.crt")),
        "Fail",
    );
    let ns = namespace(c, "e2e-aw-external");
    wait_webhook_active(c, &ns);

    let wrapper = |name: &str, runtime: &str| {
        json!({
            "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "ext-queue"}},
            "spec": {"components": [{"template": {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": format!("{name}-job")},
                "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                         "template": {
                            "metadata": {"annotations": {POD_RUNTIME_ANNOTATION: runtime}},
                            "spec": {"restartPolicy": "Never",
                                     "containers": [{"name": "main", "image": "busybox",
                                                     "resources": {"requests": {"cpu": "1"}}}]}}}}}]},
        })
    };
    let aw = wrapper("ext", "8s");
    let create_aw = |aw: &Value| {
        let (ok, out, err) = kubectl(
            c,
            &["create", "-o", "json", "-f", "-"],
            Some(&aw.to_string()),
        );
        assert!(ok, "{out}{err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    let stored = create_aw(&aw);
    assert_eq!(stored["spec"]["suspend"], true, "{stored}");

    let get_aw = || get(c, &["appwrappers.workload.codeflare.dev", "ext", "-n", &ns]);
    // What Kueue reads to build the Workload: the pod sets, while Suspended.
    let a = wait_for(WAIT, "the AppWrapper Suspended with its pod sets", || {
        get_aw().filter(|a| {
            a["status"]["phase"] == "Suspended"
                && a["status"]["componentStatus"][0]["podSets"][0].is_object()
        })
    });
    let ps = &a["status"]["componentStatus"][0]["podSets"][0];
    assert_eq!(ps["path"], "template.spec.template", "{a}");
    assert_eq!(ps["replicas"], 1, "{a}");
    assert!(get(c, &["jobs", "ext-job", "-n", &ns]).is_none());

    // Kueue admits: podSetInfos and resume in one patch.
    let patch = |name: &str, ops: Value| {
        let (ok, out, err) = kubectl(
            c,
            &[
                "patch",
                "appwrappers.workload.codeflare.dev",
                name,
                "-n",
                &ns,
                "--type=json",
                "-p",
                &ops.to_string(),
            ],
            None,
        );
        assert!(ok, "{out}{err}");
    };
    let admit = json!([
        {"op": "add", "path": "/spec/components/0/podSetInfos",
         "value": [{"nodeSelector": {"kubernetes.io/hostname": NODE}}]},
        {"op": "replace", "path": "/spec/suspend", "value": false},
    ]);
    patch("ext", admit.clone());

    let job = wait_for(WAIT, "the wrapped Job created", || {
        get(c, &["jobs", "ext-job", "-n", &ns])
    });
    assert_eq!(
        job["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"], NODE,
        "{job}"
    );
    let pod = wait_for(WAIT, "its pod scheduled", || {
        get(
            c,
            &[
                "pods",
                "-n",
                &ns,
                "-l",
                "workload.codeflare.dev/appwrapper=ext",
            ],
        )
        .and_then(|l| l["items"].as_array().and_then(|i| i.first().cloned()))
        .filter(|p| p["spec"]["nodeName"].is_string())
    });
    assert_eq!(pod["spec"]["nodeName"], NODE, "{pod}");

    let a = wait_for(WAIT, "the AppWrapper Running", || {
        get_aw().filter(|a| a["status"]["phase"] == "Running")
    });
    for ty in ["QuotaReserved", "ResourcesDeployed"] {
        assert_eq!(
            condition(&a, ty).map(|c| c["status"].clone()),
            Some(json!("True")),
            "{ty}: {a}"
        );
    }
    wait_for(WAIT, "the AppWrapper Succeeded", || {
        get_aw().filter(|a| a["status"]["phase"] == "Succeeded")
    });

    // Kueue evicts a running one: spec.suspend=true and its podSetInfos
    // cleared in one patch → Suspending, then Suspended with its Job and
    // pod deleted and QuotaReserved False.
    create_aw(&wrapper("evicted", "10m"));
    let get_ev = || {
        get(
            c,
            &["appwrappers.workload.codeflare.dev", "evicted", "-n", &ns],
        )
    };
    wait_for(WAIT, "the second AppWrapper Suspended", || {
        get_ev().filter(|a| a["status"]["phase"] == "Suspended")
    });
    patch("evicted", admit);
    wait_for(WAIT, "the second AppWrapper Running", || {
        get_ev().filter(|a| a["status"]["phase"] == "Running")
    });
    wait_for(WAIT, "its pod created", || {
        get(
            c,
            &[
                "pods",
                "-n",
                &ns,
                "-l",
                "workload.codeflare.dev/appwrapper=evicted",
            ],
        )
        .filter(|l| l["items"].as_array().is_some_and(|i| i.len() == 1))
    });
    patch(
        "evicted",
        json!([
            {"op": "replace", "path": "/spec/suspend", "value": true},
            {"op": "remove", "path": "/spec/components/0/podSetInfos"},
        ]),
    );
    let a = wait_for(WAIT, "the evicted AppWrapper Suspended", || {
        get_ev().filter(|a| a["status"]["phase"] == "Suspended")
    });
    assert_eq!(
        condition(&a, "QuotaReserved").map(|c| c["status"].clone()),
        Some(json!("False")),
        "{a}"
    );
    assert!(get(c, &["jobs", "evicted-job", "-n", &ns]).is_none());
    wait_for(WAIT, "its pod gone", || {
        get(
            c,
            &[
                "pods",
                "-n",
                &ns,
                "-l",
                "workload.codeflare.dev/appwrapper=evicted",
            ],
        )
        .filter(|l| l["items"] == json!([]))
    });

    // Kueue's side is not batchgate's here: no Workload was made for either.
    let wls = get(c, &["workloads.kueue.x-k8s.io", "-n", &ns]).unwrap();
    assert_eq!(wls["items"], json!([]), "{wls}");
}
