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
