//! Validation of PreScaledCronJobs (`psc.cronprimer.local/v1alpha1`) on
//! create and update: the rules of [`crate::prescale::plan`] (cron syntax,
//! the warm-up against the schedule's shortest gap, warm-up or primer
//! schedule but not both, a primer that fires before each run, the time
//! zone, the generated CronJob's name length), each as a field error.
//!
//! Upstream had no webhook (its controller emitted an `Invalid cron
//! schedule` event and left the object in place); these are denied at the
//! door instead.

use crate::vocabulary::pointer::At;
use chrono::NaiveDate;
use serde_json::Value;

use super::{
    family::{Decided, Family, Hook, Review},
    field::{BadValue, FieldError},
    Decision, Verdict,
};
use crate::prescale::{self, Bad, Spec, Violation};

/// Upstream's names; the webhook is named as kubebuilder would have.
pub const GROUP: &str = crate::api::prescale::GROUP;
pub const VERSION: &str = crate::api::prescale::VERSION;
pub const KIND: &str = crate::api::prescale::KIND;
pub const RESOURCE: &str = "prescaledcronjobs";
pub const WEBHOOK_NAME: &str = "vprescaledcronjob.kb.io";

/// Whether a review is about a PreScaledCronJob.
pub fn is_prescaled_cronjob(group: &str, version: &str, kind: &str) -> bool {
    group == GROUP && version == VERSION && kind == KIND
}

/// The spec as the rules read it, from the object as written.
pub fn spec_of(object: &Value) -> Spec<'_> {
    let cj = object.at("/spec/cronJob/spec");
    Spec {
        name: object
            .at("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        schedule: cj.and_then(|s| s.get("schedule")).and_then(Value::as_str),
        time_zone: cj.and_then(|s| s.get("timeZone")).and_then(Value::as_str),
        warm_up_mins: object.at("/spec/warmUpTimeMins").and_then(Value::as_i64),
        primer_schedule: object.at("/spec/primerSchedule").and_then(Value::as_str),
    }
}

pub fn field_error(v: &Violation) -> FieldError {
    match &v.value {
        Bad::Str(s) => FieldError::invalid(v.field, BadValue::Str(s.clone()), v.detail.clone()),
        Bad::Int(i) => FieldError::invalid(v.field, BadValue::Int(*i), v.detail.clone()),
        Bad::Missing => FieldError::required(v.field, v.detail.clone()),
        Bad::Omit => FieldError::forbidden(v.field, v.detail.clone()),
    }
}

/// The field errors of a PreScaledCronJob (empty: allowed). `today` is the
/// first day of the calendar checks.
pub fn validate(object: &Value, today: NaiveDate) -> Vec<FieldError> {
    match prescale::plan(&spec_of(object), today) {
        Ok(_) => Vec::new(),
        Err(v) => v.iter().map(field_error).collect(),
    }
}

/// PreScaledCronJobs behind the admission router: nothing to default;
/// validated whole by [`validate`] from today's date (UTC), as the shell's
/// clock gives it.
pub struct PreScaledCronJobs {
    pub today: super::family::Today,
}

impl Family for PreScaledCronJobs {
    fn label(&self) -> &'static str {
        "prescaledcronjob"
    }
    fn decide(&self, review: &Review<'_>, _: &super::Context<'_>) -> Decided {
        let Some(object) = review.request.object.as_ref() else {
            return Decision::allow().into();
        };
        if review.hook == Hook::Mutate {
            return Decision::allow().into();
        }
        // A schedule is judged from the day it is written.
        let errs = validate(object, (self.today)());
        if errs.is_empty() {
            return Decision::allow().into();
        }
        Decision::with(Verdict::Deny(super::field::aggregate(&errs))).into()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::admission::field::aggregate;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 21).unwrap()
    }

    fn psc(spec: Value) -> Value {
        json!({"apiVersion": "psc.cronprimer.local/v1alpha1", "kind": "PreScaledCronJob",
               "metadata": {"name": "sample", "namespace": "psc-system"}, "spec": spec})
    }

    fn cron(schedule: &str) -> Value {
        json!({"metadata": {"name": "my-cron-sample"}, "spec": {"schedule": schedule,
               "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "hello", "image": "busybox"}], "restartPolicy": "OnFailure"}}}}}})
    }

    #[test]
    fn upstream_samples_are_allowed() {
        assert!(validate(
            &psc(json!({"warmUpTimeMins": 15, "cronJob": cron("*/30 * * * *")})),
            today()
        )
        .is_empty());
        assert!(validate(
            &psc(json!({"primerSchedule": "*/30 * * * *", "cronJob": cron("5/30 * * * *")})),
            today()
        )
        .is_empty());
    }

    #[test]
    fn denials_read_as_field_errors() {
        let errs = validate(
            &psc(json!({"warmUpTimeMins": 0, "cronJob": cron("bananas")})),
            today(),
        );
        assert_eq!(
            aggregate(&errs),
            "[spec.warmUpTimeMins: Invalid value: 0: must be greater than 0: the primer runs this many minutes before each run (0 would start the workload a whole period late), spec.cronJob.spec.schedule: Invalid value: \"bananas\": expected exactly 5 fields, found 1: [bananas]]"
        );
        let errs = validate(&psc(json!({"warmUpTimeMins": 5})), today());
        assert_eq!(
            aggregate(&errs),
            "spec.cronJob.spec.schedule: Required value: the schedule of the real runs"
        );
        let errs = validate(
            &psc(
                json!({"warmUpTimeMins": 5, "primerSchedule": "0 * * * *", "cronJob": cron("5 * * * *")}),
            ),
            today(),
        );
        assert!(aggregate(&errs).starts_with(
            "spec.primerSchedule: Forbidden: set either warmUpTimeMins or primerSchedule, not both"
        ));
    }
}
