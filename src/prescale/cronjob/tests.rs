use serde_json::json;

use super::*;

fn owner() -> Owner<'static> {
    Owner {
        name: "prescaledcronjob-sample",
        namespace: "psc-system",
        uid: "u-1",
    }
}

fn plan() -> Plan {
    Plan {
        primer: "45,15 * * * *".into(),
        max_wait_minutes: 15,
    }
}

/// Upstream's sample, with a user init container and a GPU limit as an
/// integer.
fn template() -> Value {
    json!({
        "metadata": {"name": "my-cron-sample", "labels": {"team": "a"}, "annotations": {"note": "x"}},
        "spec": {
            "schedule": "*/30 * * * *",
            "timeZone": "Europe/Berlin",
            "jobTemplate": {"spec": {"template": {"spec": {
                "initContainers": [{"name": "iatric", "image": "busybox"}],
                "containers": [{"name": "hello", "image": "busybox",
                                "resources": {"limits": {"nvidia.com/gpu": 1}},
                                "futureField": {"kept": true}}],
                "restartPolicy": "OnFailure"
            }}}}
        }
    })
}

#[test]
fn desired_cronjob() {
    let (cj, h) = desired(&owner(), &template(), &plan(), "batchgate:latest");
    assert_eq!(cj["metadata"]["name"], "autogen-prescaledcronjob-sample");
    assert_eq!(cj["metadata"]["namespace"], "psc-system");
    assert_eq!(cj["metadata"]["labels"]["team"], "a");
    assert_eq!(cj["metadata"]["labels"][LABEL], "prescaledcronjob-sample");
    assert_eq!(cj["metadata"]["annotations"]["note"], "x");
    assert_eq!(cj["metadata"]["annotations"][HASH_ANNOTATION], json!(h));
    assert_eq!(
        cj["metadata"]["ownerReferences"],
        json!([{"apiVersion": "psc.cronprimer.local/v1alpha1", "kind": "PreScaledCronJob",
                "name": "prescaledcronjob-sample", "uid": "u-1",
                "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(cj["spec"]["schedule"], "45,15 * * * *");
    assert_eq!(cj["spec"]["timeZone"], "Europe/Berlin");
    let pod = &cj["spec"]["jobTemplate"]["spec"]["template"];
    assert_eq!(
        pod["metadata"]["labels"][POD_LABEL],
        "prescaledcronjob-sample"
    );
    let inits = pod["spec"]["initContainers"].as_array().unwrap();
    assert_eq!(inits.len(), 2);
    assert_eq!(inits[0]["name"], INIT_CONTAINER);
    assert_eq!(inits[1]["name"], "iatric");
    assert_eq!(inits[0]["image"], "batchgate:latest");
    assert_eq!(
        inits[0]["args"],
        json!([
            "prescale-wait",
            "--schedule",
            "*/30 * * * *",
            "--primer-schedule",
            "45,15 * * * *",
            "--max-wait-minutes",
            "15",
            "--time-zone",
            "Europe/Berlin"
        ])
    );
    // What was not ours is kept as written.
    assert_eq!(
        pod["spec"]["containers"][0]["futureField"],
        json!({"kept": true})
    );
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        1
    );
}

#[test]
fn hash_follows_the_desired_object() {
    let (_, h1) = desired(&owner(), &template(), &plan(), "batchgate:latest");
    let (_, h2) = desired(&owner(), &template(), &plan(), "batchgate:latest");
    assert_eq!(h1, h2);
    let (_, h3) = desired(&owner(), &template(), &plan(), "batchgate:v2");
    assert_ne!(h1, h3);
    let mut t = template();
    t["metadata"]["labels"]["team"] = json!("b");
    assert_ne!(h1, desired(&owner(), &t, &plan(), "batchgate:latest").1);
    // Regenerating from a generated object does not stack init containers.
    let (cj, _) = desired(&owner(), &template(), &plan(), "batchgate:latest");
    let (again, _) = desired(&owner(), &cj, &plan(), "batchgate:latest");
    assert_eq!(
        again["spec"]["jobTemplate"]["spec"]["template"]["spec"]["initContainers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// The live object as the apiserver returns it: defaults added, the
/// integer quantity turned into a string, other annotations added.
fn live() -> Value {
    let (mut cj, _) = desired(&owner(), &template(), &plan(), "batchgate:latest");
    cj["metadata"]["resourceVersion"] = json!("42");
    cj["metadata"]["annotations"]["other"] = json!("kept");
    cj["spec"]["suspend"] = json!(false);
    cj["spec"]["concurrencyPolicy"] = json!("Allow");
    cj["spec"]["successfulJobsHistoryLimit"] = json!(3);
    cj["spec"]["failedJobsHistoryLimit"] = json!(1);
    let pod = &mut cj["spec"]["jobTemplate"]["spec"]["template"];
    pod["spec"]["dnsPolicy"] = json!("ClusterFirst");
    pod["spec"]["containers"][0]["imagePullPolicy"] = json!("Always");
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = json!("1");
    pod["metadata"]["creationTimestamp"] = Value::Null;
    cj["status"] = json!({"lastScheduleTime": "2026-11-21T10:00:00Z"});
    cj
}

#[test]
fn defaults_are_not_drift() {
    let (want, _) = desired(&owner(), &template(), &plan(), "batchgate:latest");
    assert_eq!(drift(&live(), &want, "u-1"), None);
}

#[test]
fn hand_edits_are_drift() {
    let (want, _) = desired(&owner(), &template(), &plan(), "batchgate:latest");
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut l = live();
        f(&mut l);
        drift(&l, &want, "u-1")
    };
    assert_eq!(
        edit(&|l| l["spec"]["schedule"] = json!("* * * * *")),
        Some("spec.schedule".into())
    );
    assert_eq!(
        edit(&|l| l["spec"]["suspend"] = json!(true)),
        Some("spec.suspend".into())
    );
    assert_eq!(
        edit(&|l| l["spec"]["startingDeadlineSeconds"] = json!(10)),
        Some("spec.startingDeadlineSeconds".into())
    );
    assert_eq!(
        edit(&|l| {
            l["spec"]["jobTemplate"]["spec"]["template"]["spec"]["initContainers"]
                .as_array_mut()
                .unwrap()
                .remove(0);
        }),
        Some("spec.jobTemplate.spec.template.spec.initContainers".into())
    );
    assert_eq!(
        edit(
            &|l| l["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] =
                json!("evil")
        ),
        Some("spec.jobTemplate.spec.template.spec.containers[0].image".into())
    );
    assert_eq!(
        edit(&|l| l["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove(LABEL)
            .map(|_| ())
            .unwrap_or(())),
        Some(format!("metadata.labels[{LABEL}]"))
    );
    assert_eq!(
        edit(&|l| l["metadata"]["ownerReferences"] = json!([])),
        Some("metadata.ownerReferences".into())
    );
}

#[test]
fn replacement_keeps_foreign_metadata_and_replaces_the_spec() {
    let (want, _) = desired(&owner(), &template(), &plan(), "batchgate:latest");
    let mut l = live();
    l["spec"]["schedule"] = json!("* * * * *");
    l["spec"]["suspend"] = json!(true);
    l["metadata"]["finalizers"] = json!(["someone/else"]);
    let r = replacement(&l, &want);
    assert_eq!(r["metadata"]["resourceVersion"], "42");
    assert_eq!(r["metadata"]["annotations"]["other"], "kept");
    assert_eq!(r["metadata"]["finalizers"], json!(["someone/else"]));
    assert_eq!(r["spec"], want["spec"]);
    assert!(r.get("status").is_none());
    assert_eq!(drift(&r, &want, "u-1"), None);
}

#[test]
fn ownership() {
    let l = live();
    assert!(controlled_by(&l, "u-1"));
    assert!(!controlled_by(&l, "u-2"));
    assert!(owned_by(&l, "u-1"));
    assert!(!owned_by(&json!({"metadata": {}}), "u-1"));
}
