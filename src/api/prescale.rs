//! PreScaledCronJob (`psc.cronprimer.local/v1alpha1`), field for field as
//! the archived cronjob-prescaler operator's `api/v1alpha1` types, so its
//! users' manifests apply unchanged; plus a status upstream never had.
//!
//! `spec.cronJob` is a `batch/v1` CronJob (upstream: `batch/v1beta1`, the
//! same shape) kept as raw JSON: the schema names `schedule`, `timeZone`
//! and `jobTemplate` (required as upstream requires them) and keeps every
//! other field as written, so fields newer than this schema survive and
//! integer quantities (`nvidia.com/gpu: 1`, upstream's resource-type
//! patch) are accepted.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::schema;

pub const GROUP: &str = "psc.cronprimer.local";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "PreScaledCronJob";

/// The desired state: a CronJob and how long before each of its runs a
/// primer run starts.
// kube's printcolumn(...) lists repeat keys, which clippy takes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "psc.cronprimer.local",
    version = "v1alpha1",
    kind = "PreScaledCronJob",
    plural = "prescaledcronjobs",
    namespaced,
    shortname = "psc",
    status = "PreScaledCronJobStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "PreScaledCronJob is the Schema for the prescaledcronjobs API: a CronJob whose pods start on a primer schedule a few minutes early, hold their nodes warm and start the workload at the real scheduled time.",
    printcolumn(
        name = "Schedule",
        type_ = "string",
        json_path = ".spec.cronJob.spec.schedule"
    ),
    printcolumn(
        name = "Primer",
        type_ = "string",
        json_path = ".status.primerSchedule"
    ),
    printcolumn(name = "CronJob", type_ = "string", json_path = ".status.cronJobName"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PreScaledCronJobSpec {
    /// Minutes before each run of `cronJob.spec.schedule` that the primer
    /// run starts. Set this or `primerSchedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up_time_mins: Option<i64>,

    /// The primer schedule, given instead of derived: it must fire once
    /// between each two runs of `cronJob.spec.schedule`. Set this or
    /// `warmUpTimeMins`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primer_schedule: Option<String>,

    /// The CronJob to run (`metadata` labels and annotations and `spec` are
    /// used; its name is `autogen-<this object's name>`).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    #[schemars(schema_with = "cron_job")]
    pub cron_job: Value,
}

/// What the controller last did.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreScaledCronJobStatus {
    /// The generated CronJob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron_job_name: Option<String>,

    /// The schedule the generated CronJob runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primer_schedule: Option<String>,

    /// The hash of the desired CronJob (also its `pscObjectHash` annotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,

    /// `Ready`: the CronJob exists and matches the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Option<Vec<Condition>>,

    /// When the CronJob was last created, updated or found in step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_time: Option<Time>,

    /// The generation the status was written for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

fn preserved(description: &str) -> Value {
    serde_json::json!({
        "type": "object",
        "description": description,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A CronJob: the fields the controller reads are typed, the rest kept.
fn cron_job(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "A batch/v1 CronJob; every field is kept as written.",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": preserved("Labels and annotations are copied to the generated CronJob; the name is not used."),
            "spec": {
                "type": "object",
                "description": "A batch/v1 CronJobSpec.",
                "required": ["jobTemplate", "schedule"],
                "properties": {
                    "schedule": {
                        "type": "string",
                        "description": "The real schedule, in Cron format (what the workload runs on).",
                    },
                    "timeZone": {
                        "type": "string",
                        "description": "The time zone of the schedule (an IANA name); absent means the controller's zone, UTC.",
                    },
                    "jobTemplate": preserved("The Job to create (a batch/v1 JobTemplateSpec)."),
                },
                "x-kubernetes-preserve-unknown-fields": true,
            },
            "status": preserved("Ignored."),
        },
    })
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;
    use serde_json::json;

    use super::*;

    #[test]
    fn crd_names_scope_status_and_columns() {
        let c = serde_json::to_value(PreScaledCronJob::crd()).unwrap();
        assert_eq!(
            c["metadata"]["name"],
            "prescaledcronjobs.psc.cronprimer.local"
        );
        assert_eq!(c["spec"]["scope"], "Namespaced");
        assert_eq!(c["spec"]["names"]["kind"], "PreScaledCronJob");
        assert_eq!(c["spec"]["names"]["singular"], "prescaledcronjob");
        let v = &c["spec"]["versions"][0];
        assert_eq!(v["name"], "v1alpha1");
        assert_eq!(v["subresources"]["status"], json!({}));
        let s = &v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
        assert_eq!(s["warmUpTimeMins"]["type"], "integer");
        assert_eq!(s["primerSchedule"]["type"], "string");
        let cj = &s["cronJob"]["properties"]["spec"];
        assert_eq!(cj["required"], json!(["jobTemplate", "schedule"]));
        assert_eq!(cj["x-kubernetes-preserve-unknown-fields"], true);
    }

    /// Upstream's GPU sample reads and writes back unchanged (integer
    /// quantities, fields this schema does not name).
    #[test]
    fn upstream_sample_round_trips() {
        let sample = json!({
            "apiVersion": "psc.cronprimer.local/v1alpha1",
            "kind": "PreScaledCronJob",
            "metadata": {"name": "prescaledcronjob-sample", "namespace": "psc-system"},
            "spec": {
                "warmUpTimeMins": 15,
                "cronJob": {
                    "metadata": {"name": "my-cron-sample"},
                    "spec": {
                        "schedule": "*/30 * * * *",
                        "jobTemplate": {"spec": {"template": {"spec": {
                            "containers": [{"name": "hello", "image": "busybox",
                                            "args": ["/bin/sh", "-c", "date; sleep 90"],
                                            "resources": {"limits": {"nvidia.com/gpu": 1},
                                                          "requests": {"nvidia.com/gpu": 1}}}],
                            "restartPolicy": "OnFailure"}}}}
                    }
                }
            }
        });
        let typed: PreScaledCronJob = serde_json::from_value(sample.clone()).unwrap();
        assert_eq!(typed.spec.warm_up_time_mins, Some(15));
        assert_eq!(serde_json::to_value(&typed).unwrap(), sample);
    }
}
