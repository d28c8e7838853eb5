//! One pass of the PreScaledCronJob controller, decided without a cluster:
//! the PreScaledCronJob and the CronJob `autogen-<name>` as read, and the
//! day the calendar checks start from, in; what to write to the CronJob,
//! the Event to record and the status to report, out. The controller
//! (`controllers::prescale`) reads, executes the step and reports.
//!
//! The CronJob is created when missing, its spec replaced when it is ours
//! and differs from the desired one, and left alone when it is not ours.
//! Events use the cronjob-prescaler's reasons and messages where it had
//! them.

use crate::vocabulary::pointer::At;
use chrono::NaiveDate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde_json::Value;

use super::{
    cronjob::{self, Owner, HASH_ANNOTATION},
    plan, Spec,
};
use crate::api::prescale::{PreScaledCronJob, PreScaledCronJobStatus};

/// The condition written to status.
pub const READY: &str = "Ready";

/// The CronJob a PreScaledCronJob asks for, when its spec holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    /// `autogen-<name>`.
    pub name: String,
    pub cronjob: Value,
    pub hash: String,
    pub primer: String,
}

/// An Event on the PreScaledCronJob.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

impl Note {
    fn normal(reason: &'static str, message: String) -> Note {
        Note {
            warning: false,
            reason,
            message,
        }
    }

    fn warning(reason: &'static str, message: String) -> Note {
        Note {
            warning: true,
            reason,
            message,
        }
    }
}

/// What the status says after a pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub ready: bool,
    pub reason: &'static str,
    pub message: String,
    pub primer: Option<String>,
    pub hash: Option<String>,
}

/// A write to the CronJob.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Create(Value),
    /// The live CronJob with batchgate's fields replaced (its
    /// resourceVersion kept, so a concurrent change is a conflict).
    Replace(Value),
}

/// When to look again after a pass that wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Only on a change of the PreScaledCronJob or its CronJob.
    AwaitChange,
    /// Later as well: the calendar checks start from today.
    Recheck,
}

/// A pass's decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Being deleted: the garbage collector deletes the CronJob.
    Gone,
    /// Nothing to write to the CronJob: record `note`, report `outcome`.
    Settle {
        note: Option<Note>,
        outcome: Outcome,
        then: Then,
    },
    /// Write the CronJob; when it holds, record `done` and report `outcome`.
    Write {
        write: Write,
        done: Note,
        outcome: Outcome,
    },
}

/// What a refused write leaves behind.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub note: Option<Note>,
    pub outcome: Option<Outcome>,
}

/// The pass's first half, before anything is read: a PreScaledCronJob
/// being deleted or whose spec breaks a rule settles here; otherwise the
/// CronJob it asks for (`today` is the day the calendar checks start
/// from; `image` the primer's wait init container).
pub fn desired(
    psc: &PreScaledCronJob,
    today: NaiveDate,
    image: &str,
) -> Result<Desired, Box<Step>> {
    if psc.metadata.deletion_timestamp.is_some() {
        return Err(Box::new(Step::Gone));
    }
    let name = psc.metadata.name.as_deref().unwrap_or_default();
    let plan = plan(&spec(psc), today).map_err(|violations| {
        let message = violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        Box::new(Step::Settle {
            note: Some(Note::warning(
                "Invalid cron schedule",
                format!("Failed to generate cronjob: {message}"),
            )),
            outcome: Outcome {
                ready: false,
                reason: "InvalidSchedule",
                message,
                primer: None,
                hash: None,
            },
            then: Then::AwaitChange,
        })
    })?;
    let owner = Owner {
        name,
        namespace: psc.metadata.namespace.as_deref().unwrap_or_default(),
        uid: psc.metadata.uid.as_deref().unwrap_or_default(),
    };
    let (cronjob, hash) = cronjob::desired(&owner, &psc.spec.cron_job, &plan, image);
    Ok(Desired {
        name: cronjob::name_of(name),
        cronjob,
        hash,
        primer: plan.primer,
    })
}

/// The pass's second half: the CronJob as read (`None`: there is none)
/// against the desired one.
pub fn step(psc: &PreScaledCronJob, d: Desired, live: Option<&Value>) -> Step {
    let uid = psc.metadata.uid.as_deref().unwrap_or_default();
    let cj = &d.name;
    let synced = |reason: &'static str, message: String| Outcome {
        ready: true,
        reason,
        message,
        primer: Some(d.primer.clone()),
        hash: Some(d.hash.clone()),
    };
    let Some(live) = live else {
        return Step::Write {
            done: Note::normal(
                "Create cronjob successful",
                format!("Created associated cronjob: {cj}"),
            ),
            outcome: synced(
                "Created",
                format!("created CronJob {cj} on schedule {:?}", d.primer),
            ),
            write: Write::Create(d.cronjob),
        };
    };
    if !cronjob::controlled_by(live, uid) {
        let message = format!(
            "A cronjob with this name already exists, and was not created by this operator : {cj}"
        );
        return Step::Settle {
            note: Some(Note::warning("Cronjob already exists", message.clone())),
            outcome: Outcome {
                ready: false,
                ..synced("CronJobExists", message)
            },
            then: Then::AwaitChange,
        };
    }
    let Some(path) = cronjob::drift(live, &d.cronjob, uid) else {
        return Step::Settle {
            note: None,
            outcome: synced(
                "Synced",
                format!("CronJob {cj} runs on schedule {:?}", d.primer),
            ),
            then: Then::Recheck,
        };
    };
    let spec_changed = live
        .at(&format!("/metadata/annotations/{HASH_ANNOTATION}"))
        .and_then(Value::as_str)
        != Some(d.hash.as_str());
    let (done, outcome) = if spec_changed {
        (
            Note::normal(
                "Update of cronjob successful",
                format!("Updated associated cronjob: {cj}"),
            ),
            synced(
                "Updated",
                format!("updated CronJob {cj} to schedule {:?}", d.primer),
            ),
        )
    } else {
        (
            Note::warning(
                "Reverted cronjob change",
                format!("Reverted a change to associated cronjob {cj}: {path} differed from what this PreScaledCronJob asks for; edit the PreScaledCronJob instead"),
            ),
            synced(
                "Reverted",
                format!("reverted a change to {path} of CronJob {cj}"),
            ),
        )
    };
    Step::Write {
        write: Write::Replace(cronjob::replacement(live, &d.cronjob)),
        done,
        outcome,
    }
}

impl Step {
    /// What a write the apiserver refused leaves: a conflict is read again
    /// without a word; a failed create is recorded and reported; a failed
    /// replace is recorded (the status keeps what it said).
    pub fn refused(&self, conflict: bool, error: &str) -> Refusal {
        let Step::Write { write, outcome, .. } = self else {
            return Refusal {
                note: None,
                outcome: None,
            };
        };
        match write {
            Write::Replace(_) if conflict => Refusal {
                note: None,
                outcome: None,
            },
            Write::Replace(_) => Refusal {
                note: Some(Note::warning(
                    "Update of cronjob failed",
                    format!("Failed to update cronjob: {error}"),
                )),
                outcome: None,
            },
            Write::Create(_) => Refusal {
                note: Some(Note::warning(
                    "Create cronjob failed",
                    format!("Failed to create cronjob: {error}"),
                )),
                outcome: Some(Outcome {
                    ready: false,
                    reason: "CreateFailed",
                    message: format!("Failed to create cronjob: {error}"),
                    primer: outcome.primer.clone(),
                    hash: outcome.hash.clone(),
                }),
            },
        }
    }
}

/// The spec as the rules read it.
pub fn spec(psc: &PreScaledCronJob) -> Spec<'_> {
    let cj = psc.spec.cron_job.at("/spec");
    Spec {
        name: psc.metadata.name.as_deref().unwrap_or_default(),
        schedule: cj.and_then(|s| s.get("schedule")).and_then(Value::as_str),
        time_zone: cj.and_then(|s| s.get("timeZone")).and_then(Value::as_str),
        warm_up_mins: psc.spec.warm_up_time_mins,
        primer_schedule: psc.spec.primer_schedule.as_deref(),
    }
}

/// The status to write for `outcome`, or `None` when the status already
/// says it (timestamps aside): an unchanged pass writes nothing.
pub fn status(psc: &PreScaledCronJob, o: Outcome, now: Time) -> Option<PreScaledCronJobStatus> {
    let old = psc.status.clone().unwrap_or_default();
    let generation = psc.metadata.generation;
    let word = if o.ready { "True" } else { "False" };
    let previous = old
        .conditions
        .as_ref()
        .and_then(|cs| cs.iter().find(|c| c.type_ == READY));
    let same_condition = previous.is_some_and(|c| {
        c.status == word
            && c.reason == o.reason
            && c.message == o.message
            && c.observed_generation == generation
    });
    let cron_job_name = Some(cronjob::name_of(
        psc.metadata.name.as_deref().unwrap_or_default(),
    ));
    if same_condition
        && old.primer_schedule == o.primer
        && old.hash == o.hash
        && old.cron_job_name == cron_job_name
        && old.observed_generation == generation
    {
        return None;
    }
    let condition = Condition {
        type_: READY.into(),
        status: word.into(),
        reason: o.reason.into(),
        message: o.message,
        observed_generation: generation,
        last_transition_time: match previous {
            Some(c) if c.status == word => c.last_transition_time.clone(),
            _ => now.clone(),
        },
    };
    Some(PreScaledCronJobStatus {
        cron_job_name,
        primer_schedule: o.primer,
        hash: o.hash,
        conditions: Some(vec![condition]),
        last_sync_time: if o.ready {
            Some(now)
        } else {
            old.last_sync_time
        },
        observed_generation: generation,
    })
}

#[cfg(test)]
mod tests;
