//! The PreScaledCronJob controller's pass, case by case.

use crate::vocabulary::pointer::At;
use chrono::NaiveDate;
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use serde_json::{json, Value};

use super::*;

const UID: &str = "0b6f6c55-0000-4000-8000-00000000000a";

fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 28).unwrap()
}

fn psc(schedule: &str) -> PreScaledCronJob {
    serde_json::from_value(json!({
        "apiVersion": "psc.cronprimer.local/v1alpha1", "kind": "PreScaledCronJob",
        "metadata": {"name": "nightly", "namespace": "ns", "uid": UID, "generation": 3},
        "spec": {"warmUpTimeMins": 5, "cronJob": {"spec": {"schedule": schedule,
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "i"}]}}}}}}}
    }))
    .unwrap()
}

fn ok() -> PreScaledCronJob {
    psc("0 2 * * *")
}

fn wanted(p: &PreScaledCronJob) -> Desired {
    desired(p, today(), "img").unwrap()
}

/// The CronJob as the apiserver would return it after batchgate wrote `d`.
fn as_read(d: &Desired) -> Value {
    let mut live = d.cronjob.clone();
    live["metadata"]["resourceVersion"] = json!("7");
    live["metadata"]["uid"] = json!("cj-uid");
    live
}

fn pass(p: &PreScaledCronJob, live: Option<&Value>) -> Step {
    step(p, wanted(p), live)
}

#[test]
fn a_deleted_prescaledcronjob_is_left_to_the_garbage_collector() {
    let mut p = ok();
    p.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    assert_eq!(desired(&p, today(), "img"), Err(Box::new(Step::Gone)));
}

#[test]
fn a_broken_schedule_is_reported_without_reading_the_cronjob() {
    let Step::Settle {
        note,
        outcome,
        then,
    } = *desired(&psc("61 * * * *"), today(), "img").unwrap_err()
    else {
        panic!("a broken schedule must settle before any read");
    };
    let note = note.unwrap();
    assert!(note.warning);
    assert_eq!(note.reason, "Invalid cron schedule");
    assert!(
        note.message.starts_with("Failed to generate cronjob: "),
        "{}",
        note.message
    );
    assert!(!outcome.ready);
    assert_eq!(outcome.reason, "InvalidSchedule");
    assert_eq!(outcome.primer, None);
    assert_eq!(then, Then::AwaitChange);
}

#[test]
fn a_missing_cronjob_is_created_on_the_primer_schedule() {
    let p = ok();
    let d = wanted(&p);
    assert_eq!(d.name, "autogen-nightly");
    assert_eq!(d.primer, "55 1 * * *");
    let Step::Write {
        write: Write::Create(cj),
        done,
        outcome,
    } = pass(&p, None)
    else {
        panic!("a missing CronJob must be created");
    };
    assert_eq!(cj, d.cronjob);
    assert_eq!(cj["spec"]["schedule"], "55 1 * * *");
    assert_eq!(
        (done.warning, done.reason, done.message.as_str()),
        (
            false,
            "Create cronjob successful",
            "Created associated cronjob: autogen-nightly"
        )
    );
    assert!(outcome.ready);
    assert_eq!(outcome.reason, "Created");
    assert_eq!(outcome.hash.as_deref(), Some(d.hash.as_str()));
}

#[test]
fn a_cronjob_in_step_is_left_as_it_is_and_looked_at_again_later() {
    let p = ok();
    let live = as_read(&wanted(&p));
    let Step::Settle {
        note: None,
        outcome,
        then: Then::Recheck,
    } = pass(&p, Some(&live))
    else {
        panic!("a CronJob in step needs no write");
    };
    assert!(outcome.ready);
    assert_eq!(outcome.reason, "Synced");
}

#[test]
fn a_cronjob_that_is_not_ours_is_never_written() {
    let p = ok();
    for refs in [
        json!([]),
        // Another controller's.
        json!([{"apiVersion": "x/v1", "kind": "X", "name": "other", "uid": "other",
                "controller": true}]),
        // Our uid without `controller`: a reference someone copied, not ours to rewrite.
        json!([{"apiVersion": "psc.cronprimer.local/v1alpha1", "kind": "PreScaledCronJob",
                "name": "nightly", "uid": UID}]),
    ] {
        let mut live = as_read(&wanted(&p));
        live["metadata"]["ownerReferences"] = refs.clone();
        let Step::Settle {
            note: Some(note),
            outcome,
            then: Then::AwaitChange,
        } = pass(&p, Some(&live))
        else {
            panic!("{refs}: a foreign CronJob must be left alone");
        };
        assert_eq!(note.reason, "Cronjob already exists");
        assert_eq!(
            note.message,
            "A cronjob with this name already exists, and was not created by this operator : autogen-nightly"
        );
        assert!(!outcome.ready);
        assert_eq!(outcome.reason, "CronJobExists");
    }
}

#[test]
fn a_changed_spec_replaces_the_cronjob_keeping_its_resource_version() {
    let before = psc("0 3 * * *");
    let live = as_read(&wanted(&before));
    let p = ok();
    let Step::Write {
        write: Write::Replace(cj),
        done,
        outcome,
    } = pass(&p, Some(&live))
    else {
        panic!("a changed spec must replace the CronJob");
    };
    assert_eq!(cj["metadata"]["resourceVersion"], "7");
    assert_eq!(cj["spec"]["schedule"], "55 1 * * *");
    assert_eq!(
        (done.warning, done.reason),
        (false, "Update of cronjob successful")
    );
    assert_eq!(outcome.reason, "Updated");
}

#[test]
fn a_hand_edit_of_our_cronjob_is_reverted_and_named() {
    let p = ok();
    let mut live = as_read(&wanted(&p));
    live["spec"]["suspend"] = json!(true);
    let Step::Write {
        write: Write::Replace(cj),
        done,
        outcome,
    } = pass(&p, Some(&live))
    else {
        panic!("an edited CronJob must be put back");
    };
    assert_eq!(cj.at("/spec/suspend"), None::<&Value>);
    assert!(done.warning);
    assert_eq!(done.reason, "Reverted cronjob change");
    assert!(done.message.contains("spec.suspend"), "{}", done.message);
    assert_eq!(outcome.reason, "Reverted");
}

#[test]
fn a_refused_write_says_what_it_should() {
    let p = ok();
    let create = pass(&p, None);
    let r = create.refused(false, "quota exceeded");
    assert_eq!(
        r.note.unwrap().message,
        "Failed to create cronjob: quota exceeded"
    );
    let o = r.outcome.unwrap();
    assert_eq!((o.ready, o.reason), (false, "CreateFailed"));
    assert_eq!(o.primer.as_deref(), Some("55 1 * * *"));

    let mut live = as_read(&wanted(&p));
    live["spec"]["suspend"] = json!(true);
    let replace = pass(&p, Some(&live));
    let conflict = replace.refused(true, "the object has been modified");
    assert_eq!(
        conflict,
        Refusal {
            note: None,
            outcome: None
        },
        "a conflict is read again without a word"
    );
    let other = replace.refused(false, "forbidden");
    assert_eq!(
        other.note.unwrap().message,
        "Failed to update cronjob: forbidden"
    );
    assert_eq!(other.outcome, None, "the status keeps what it said");
}

#[test]
fn the_status_is_written_only_when_it_says_something_new() {
    let mut p = ok();
    let at = |s: i64| Time(Timestamp::from_second(s).unwrap());
    let outcome = |reason: &'static str| Outcome {
        ready: true,
        reason,
        message: "m".into(),
        primer: Some("55 1 * * *".into()),
        hash: Some("h".into()),
    };
    let first = status(&p, outcome("Created"), at(100)).unwrap();
    assert_eq!(first.cron_job_name.as_deref(), Some("autogen-nightly"));
    assert_eq!(first.observed_generation, Some(3));
    assert_eq!(first.last_sync_time, Some(at(100)));
    p.status = Some(first.clone());
    // The same words again: nothing to write.
    assert_eq!(status(&p, outcome("Created"), at(200)), None);
    // Still ready, new words: the transition time stays.
    let second = status(&p, outcome("Synced"), at(300)).unwrap();
    let cond = &second.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (cond.reason.as_str(), &cond.last_transition_time),
        ("Synced", &at(100))
    );
    p.status = Some(second);
    // Not ready: a new transition, and the last sync stays what it was.
    let third = status(
        &p,
        Outcome {
            ready: false,
            ..outcome("CronJobExists")
        },
        at(400),
    )
    .unwrap();
    let cond = &third.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (cond.status.as_str(), &cond.last_transition_time),
        ("False", &at(400))
    );
    assert_eq!(third.last_sync_time, Some(at(300)));
    // A new generation is written even with the same words.
    p.status = Some(third);
    p.metadata.generation = Some(4);
    assert!(status(
        &p,
        Outcome {
            ready: false,
            ..outcome("CronJobExists")
        },
        at(500)
    )
    .is_some());
}
