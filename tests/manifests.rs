//! manifests/ holds generated webhook configurations; they must match what
//! the binary generates from the built-in policies today.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_batchgate");

fn generated(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("webhooks")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn committed(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn webhook_manifests_are_fresh() {
    assert!(
        committed("manifests/webhooks.yaml") == generated(&[]),
        "manifests/webhooks.yaml is stale: run `make manifests`"
    );
    assert!(
        committed("manifests/cert-manager/webhooks.yaml")
            == generated(&[
                "--inject-ca-from",
                "batchgate-system/batchgate-serving-cert"
            ]),
        "manifests/cert-manager/webhooks.yaml is stale: run `make manifests`"
    );
}

#[test]
fn local_registration_differs_only_in_client_config() {
    let service: Vec<serde_yaml::Value> = docs(&generated(&[]));
    let local: Vec<serde_yaml::Value> = docs(&generated(&[
        "--url",
        "https://127.0.0.1:9443",
        "--failure-policy",
        "Fail",
    ]));
    assert_eq!(service.len(), local.len());
    for (mut s, mut l) in service.into_iter().zip(local) {
        for doc in [&mut s, &mut l] {
            for w in doc["webhooks"].as_sequence_mut().unwrap() {
                w.as_mapping_mut().unwrap().remove("clientConfig");
            }
        }
        assert_eq!(s, l);
    }
}

fn docs(text: &str) -> Vec<serde_yaml::Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|d| serde_yaml::Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}
