//! `batchgate schedule` offline: the prototype's testdata drivers and
//! classes, a pod naming its claims, generated node shapes.

use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_batchgate");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn schedule(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("schedule")
        .args(args)
        .current_dir(ROOT)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const FILES: [&str; 6] = [
    "-f",
    "examples/devices/drivers.yaml",
    "-f",
    "examples/devices/classes.yaml",
    "-f",
    "examples/devices/pod-foozer.yaml",
];

#[test]
fn a_pod_with_two_claims_over_generated_shapes() {
    let mut args = FILES.to_vec();
    args.extend(["--gen", "shape-one:2", "--gen", "shape-foozer-barzer:2"]);
    let (code, out, err) = schedule(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "ALLOCATIONS\n-----------\n\
         - claimName: foozers\n  deviceCount: 2\n  devicePoolName: shape-foozer-barzer-00-foozer-00\n\
         - claimName: barzer\n  deviceCount: 1\n  devicePoolName: shape-foozer-barzer-00-barzer-00\n\
         \nNODE: shape-foozer-barzer-00 (1 pod)\n\
         \nNODE RESULTS\n------------\n\
         shape-foozer-barzer-00: satisfied all claims with score 100\n\
         shape-foozer-barzer-01: satisfied all claims with score 100\n\
         shape-one-00: could not satisfy these claims: barzer (no available devices; claim and pool driver do not match)\n\
         shape-one-01: could not satisfy these claims: barzer (no available devices; claim and pool driver do not match)\n"
    );

    // -v: every pool set tried and every pool left out, the prototype's keys.
    args.push("-v");
    let (_, out, _) = schedule(&args);
    assert!(
        out.contains("- DeviceClaimResults:\n  - best: 0\n    claimName: foozers\n"),
        "{out}"
    );
    assert!(
        out.contains("failureReason: claim and pool driver do not match"),
        "{out}"
    );

    // -o json: the whole result.
    let mut args = FILES.to_vec();
    args.extend(["--gen", "shape-one:2", "-o", "json"]);
    let (code, out, _) = schedule(&args);
    assert_eq!(code, 2, "no barzer anywhere: unschedulable");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["node"], Value::Null);
    assert_eq!(v["nodeResults"].as_array().unwrap().len(), 2);
    assert!(v["reason"]
        .as_str()
        .unwrap()
        .starts_with("0/2 nodes with device pools can satisfy the device claims: shape-one-00: could not satisfy these claims: barzer"));
}

#[test]
fn bad_input_names_what_is_wrong() {
    let (code, _, err) = schedule(&["--gen", "shape-four:2"]);
    assert_ne!(code, 0);
    assert!(err.contains("could not generate shape \"shape-four\"; known shapes: shape-zero, shape-one, shape-two, shape-three, shape-foozer-barzer"), "{err}");
    let (code, _, err) = schedule(&["--gen", "shape-zero:2"]);
    assert_ne!(code, 0);
    assert!(err.contains("no device claims to place"), "{err}");
}

/// The prototype's own testdata spellings, refused as the apiserver's
/// strict field validation refuses them: every unknown field of every
/// object, with its path, in one run; and a malformed value with its path.
#[test]
fn unknown_and_malformed_fields_are_all_reported_with_their_paths() {
    let dir = tempfile::tempdir().unwrap();
    let classes = dir.path().join("classes.yaml");
    std::fs::write(
        &classes,
        "apiVersion: devmgmtproto.k8s.io/v1alpha1\nkind: DeviceClass\nmetadata:\n  name: gpu-single\n\
         spec:\n  deviceType: gpu\n  deviceMaxCount: 1\n  contstraints: \"device.vendor == 'x'\"\n---\n\
         apiVersion: devmgmtproto.k8s.io/v1alpha1\nkind: DeviceClass\nmetadata:\n  name: gpu-set\n\
         spec:\n  deviceType: gpu\n  attributeMatches: [numa]\n---\n\
         apiVersion: devmgmtproto.k8s.io/v1alpha1\nkind: DeviceClass\nmetadata:\n  name: gpu-bad\n\
         spec:\n  deviceType: gpu\n  maxDeviceCount: many\n",
    )
    .unwrap();
    let classes = classes.display().to_string();
    let (code, out, err) = schedule(&[
        "-f",
        "examples/devices/drivers.yaml",
        "-f",
        &classes,
        "-f",
        "examples/devices/pod-foozer.yaml",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    let want = [
        "3 invalid object(s), as the apiserver would refuse them:".to_string(),
        format!(
            r#"{classes}: DeviceClass "gpu-single": DeviceClass in version "v1alpha1" cannot be handled as a DeviceClass: strict decoding error: unknown field "spec.contstraints", unknown field "spec.deviceMaxCount""#
        ),
        format!(
            r#"{classes}: DeviceClass "gpu-set": DeviceClass in version "v1alpha1" cannot be handled as a DeviceClass: strict decoding error: unknown field "spec.attributeMatches""#
        ),
    ];
    for line in &want {
        assert!(err.contains(line.as_str()), "missing {line:?} in:\n{err}");
    }
    assert!(
        err.contains(&format!(r#"{classes}: DeviceClass "gpu-bad": DeviceClass in version "v1alpha1" cannot be handled as a DeviceClass: spec.maxDeviceCount: invalid type: string "many""#)),
        "{err}"
    );
}

/// DRA objects: the pods of a Job whose template names a
/// ResourceClaimTemplate, placed over ResourceSlices as the queueing
/// controller's `draPlacement` gate places them.
#[test]
fn a_job_with_claim_templates_is_placed_over_resource_slices() {
    let files = [
        "-f",
        "examples/dra/cluster.yaml",
        "-f",
        "examples/dra/job.yaml",
    ];
    let (code, out, err) = schedule(&files);
    assert_eq!(code, 0, "{err}");
    // Two pods of two GPUs on one NUMA node each: both fit on node-0,
    // first fit, and never share a device.
    assert_eq!(
        out,
        "ALLOCATIONS\n-----------\n\
         - devices:\n  - devices:\n    - gpu.example.com/node-0/gpu-0\n    - gpu.example.com/node-0/gpu-1\n    request: gpus\n    template: two-gpus\n  node: node-0\n\
         - devices:\n  - devices:\n    - gpu.example.com/node-0/gpu-2\n    - gpu.example.com/node-0/gpu-3\n    request: gpus\n    template: two-gpus\n  node: node-0\n\
         \nNODE: node-0 (2 pods)\n"
    );

    // A claim a ResourceClaim already holds takes gpu-0 of node-0: the
    // first pod's NUMA pair moves on, the second pod goes to node-1.
    let dir = std::env::temp_dir().join(format!("bg-schedule-dra-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let held = dir.join("held.yaml");
    std::fs::write(
        &held,
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: other, namespace: default}\n\
         spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu.example.com}}]}}\n\
         status: {allocation: {devices: {results: [{request: g, driver: gpu.example.com, pool: node-0, device: gpu-0}]}}}\n",
    )
    .unwrap();
    let mut args = files.to_vec();
    args.extend(["-f", held.to_str().unwrap(), "-o", "json"]);
    let (code, out, err) = schedule(&args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let nodes: Vec<&str> = v["placement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["node-0", "node-1"]);
    assert_eq!(
        v["placement"][0]["devices"][0]["devices"],
        serde_json::json!([
            "gpu.example.com/node-0/gpu-2",
            "gpu.example.com/node-0/gpu-3"
        ])
    );

    // Six GPUs in one pod: no node has them; exit 2 with the gate's words.
    let six = dir.join("six.yaml");
    std::fs::write(
        &six,
        std::fs::read_to_string(format!("{ROOT}/examples/dra/job.yaml"))
            .unwrap()
            .replace("count: 2", "count: 6")
            .replace("parallelism: 2", "parallelism: 1"),
    )
    .unwrap();
    let (code, out, _) = schedule(&[
        "-f",
        "examples/dra/cluster.yaml",
        "-f",
        six.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        out.contains("UNSCHEDULABLE: no node can hold the devices of pod set main: ResourceClaimTemplate two-gpus request gpus asks 6 device(s) of DeviceClass gpu.example.com matching device.driver == 'gpu.example.com' with one value of gpu.example.com/numa; at most 2 match on one node (node-0)"),
        "{out}"
    );

    // A ResourceSlice the apiserver would refuse is reported, not placed.
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: broken}\nspec: {driver: d, pool: {name: p, generation: one, resourceSliceCount: 1}}\n",
    )
    .unwrap();
    let (code, _, err) = schedule(&["-f", bad.to_str().unwrap(), "-f", "examples/dra/job.yaml"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("ResourceSlice \"broken\": ResourceSlice in version \"v1\" cannot be handled as a ResourceSlice: spec.pool.generation"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
