//! PreScaledCronJob's core (`psc.cronprimer.local/v1alpha1`): cron
//! parsing, the primer schedule, the rules a PreScaledCronJob must meet,
//! and the instant its init container waits for. Pure: no clock reads
//! (the day a check starts from and the instant a wait starts at are
//! parameters), no I/O.
//!
//! - [`cron`]: schedules as the CronJob controller parses them;
//! - [`primer`]: the runs moved `warmUpTimeMins` earlier, as one schedule;
//! - [`calendar`]: schedules laid out on wall-clock minutes, for the
//!   shortest gap and the "a primer fires before each run" rule;
//! - [`instant`]: robfig/cron's `Next` in a time zone (daylight saving
//!   included) and the wait of a primed pod;
//! - [`sync`]: one pass of the controller that keeps the generated
//!   CronJob in step;
//! - [`timings`]: a primed pod's timings, read from its Events (upstream's
//!   pod controller and its histograms).

pub mod calendar;
pub mod cron;
pub mod cronjob;
pub mod instant;
pub mod primer;
pub mod sync;
pub mod timings;

use chrono::NaiveDate;
use chrono_tz::Tz;

use calendar::{coverage, Calendar, Coverage, HORIZON_DAYS};
use cron::{Parsed, Schedule};

/// The generated CronJob is `autogen-<name>`.
pub const NAME_PREFIX: &str = "autogen-";
/// A CronJob name is at most 52 characters (its Jobs add 11).
pub const CRONJOB_NAME_MAX: usize = 52;

/// What a PreScaledCronJob says, as far as the rules go.
#[derive(Debug, Clone, Default)]
pub struct Spec<'a> {
    pub name: &'a str,
    /// `spec.cronJob.spec.schedule`.
    pub schedule: Option<&'a str>,
    /// `spec.cronJob.spec.timeZone`.
    pub time_zone: Option<&'a str>,
    /// `spec.warmUpTimeMins`.
    pub warm_up_mins: Option<i64>,
    /// `spec.primerSchedule`.
    pub primer_schedule: Option<&'a str>,
}

/// The offending value of a [`Violation`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bad {
    Str(String),
    Int(i64),
    /// The field is missing.
    Missing,
    /// Not printed (a rule across fields).
    Omit,
}

/// One broken rule: the field, its value, what is wrong and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub field: &'static str,
    pub value: Bad,
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Bad::Str(s) => write!(f, "{}: Invalid value: {s:?}: {}", self.field, self.detail),
            Bad::Int(i) => write!(f, "{}: Invalid value: {i}: {}", self.field, self.detail),
            Bad::Missing => write!(f, "{}: Required value: {}", self.field, self.detail),
            Bad::Omit => write!(f, "{}: Forbidden: {}", self.field, self.detail),
        }
    }
}

/// The field paths.
pub const SCHEDULE: &str = "spec.cronJob.spec.schedule";
pub const TIME_ZONE: &str = "spec.cronJob.spec.timeZone";
pub const WARM_UP: &str = "spec.warmUpTimeMins";
pub const PRIMER: &str = "spec.primerSchedule";

/// What the reconciler needs to build the CronJob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The generated CronJob's schedule.
    pub primer: String,
    /// The longest time from a primer run to its real run, in minutes: the
    /// warm-up, or for an explicit primerSchedule the longest it leaves.
    pub max_wait_minutes: usize,
}

/// Checks a PreScaledCronJob and computes its primer schedule. `from` is
/// the first day of the calendar checks (the shell passes today).
pub fn plan(spec: &Spec<'_>, from: NaiveDate) -> Result<Plan, Vec<Violation>> {
    let mut errs = Vec::new();
    if spec.name.len() + NAME_PREFIX.len() > CRONJOB_NAME_MAX {
        errs.push(Violation {
            field: "metadata.name",
            value: Bad::Str(spec.name.to_string()),
            detail: format!(
                "must be no more than {} characters: the generated CronJob {NAME_PREFIX}<name> must be no more than {CRONJOB_NAME_MAX}",
                CRONJOB_NAME_MAX - NAME_PREFIX.len()
            ),
        });
    }
    if let Some(tz) = spec.time_zone {
        if let Some(v) = time_zone_violation(tz) {
            errs.push(v);
        }
    }
    let primer_text = spec.primer_schedule.filter(|p| !p.is_empty());
    match (spec.warm_up_mins, primer_text) {
        (Some(_), Some(_)) => errs.push(Violation {
            field: PRIMER,
            value: Bad::Omit,
            detail: "set either warmUpTimeMins or primerSchedule, not both: warmUpTimeMins derives the primer schedule, primerSchedule gives it".into(),
        }),
        (None, None) => errs.push(Violation {
            field: WARM_UP,
            value: Bad::Missing,
            detail: "set warmUpTimeMins (minutes the primer runs before each run) or primerSchedule (a schedule that fires once before each run)".into(),
        }),
        (Some(w), None) if w <= 0 => errs.push(Violation {
            field: WARM_UP,
            value: Bad::Int(w),
            detail: "must be greater than 0: the primer runs this many minutes before each run (0 would start the workload a whole period late)".into(),
        }),
        _ => {}
    }
    let real = match spec.schedule {
        None | Some("") => {
            errs.push(Violation {
                field: SCHEDULE,
                value: Bad::Missing,
                detail: "the schedule of the real runs".into(),
            });
            None
        }
        Some(text) => match cron::parse(text) {
            Ok(Parsed::Cron(s)) => Some(*s),
            Ok(Parsed::Every(_)) => {
                errs.push(Violation {
                    field: SCHEDULE,
                    value: Bad::Str(text.into()),
                    detail: "an @every schedule has no wall-clock times to run a primer before; write it as five fields (minute hour day-of-month month day-of-week)".into(),
                });
                None
            }
            Err(e) => {
                errs.push(Violation {
                    field: SCHEDULE,
                    value: Bad::Str(text.into()),
                    detail: e.to_string(),
                });
                None
            }
        },
    };
    let primer = primer_text.and_then(|text| match Schedule::parse(text) {
        Ok(s) => Some(s),
        Err(e) => {
            errs.push(Violation {
                field: PRIMER,
                value: Bad::Str(text.into()),
                detail: format!("primerSchedule provided is invalid: {e}"),
            });
            None
        }
    });
    let Some(real) = real else {
        return Err(errs);
    };
    if real.every_minute() {
        errs.push(Violation {
            field: SCHEDULE,
            value: Bad::Str(real.text.clone()),
            detail: "Can't create primer schedule on something that runs every minute: a primer needs at least one minute between two runs".into(),
        });
        return Err(errs);
    }
    let runs = Calendar::of(&real, from, HORIZON_DAYS);
    let Some(gap) = runs.shortest_gap() else {
        errs.push(Violation {
            field: SCHEDULE,
            value: Bad::Str(real.text.clone()),
            detail: format!(
                "fires {} in {HORIZON_DAYS} days from {from}: there is no run to prime",
                if runs.is_empty() { "never" } else { "once" }
            ),
        });
        return Err(errs);
    };
    if !errs.is_empty() {
        return Err(errs);
    }
    match (spec.warm_up_mins, primer) {
        (Some(w), _) => {
            if w as usize >= gap {
                return Err(vec![Violation {
                    field: WARM_UP,
                    value: Bad::Int(w),
                    detail: format!(
                        "must be shorter than the shortest time between two runs of {:?} ({}): a longer warm-up would prime a run before the previous one has started",
                        real.text,
                        minutes(gap)
                    ),
                }]);
            }
            match primer::derive_on(&real, w as u32, &runs) {
                Ok(p) => Ok(Plan {
                    primer: p,
                    max_wait_minutes: w as usize,
                }),
                Err(e) => Err(vec![Violation {
                    field: WARM_UP,
                    value: Bad::Int(w),
                    detail: format!("no primer schedule for {:?}: {e}", real.text),
                }]),
            }
        }
        (None, Some(p)) => {
            let primed = Calendar::of(&p, from, HORIZON_DAYS);
            let at = |i: usize| runs.at(i).format("%Y-%m-%d %H:%M").to_string();
            let detail = match coverage(&runs, &primed) {
                Coverage::Covered { longest_wait } => {
                    return Ok(Plan {
                        primer: p.text.clone(),
                        max_wait_minutes: longest_wait,
                    })
                }
                Coverage::Missing { prev, run } => format!(
                    "does not fire before each run of {:?}: nothing fires between the runs at {} and {}; it must fire once between each two runs",
                    real.text, at(prev), at(run)
                ),
                Coverage::Extra { prev, run, first, second } => format!(
                    "fires more than once between the runs at {} and {} of {:?} (at {} and {}); each fire starts the workload once more, so it must fire once between each two runs",
                    at(prev), at(run), real.text, at(first), at(second)
                ),
                Coverage::Coincides { at: i } => format!(
                    "fires at {}, the same minute as a run of {:?}; it must fire before each run (between it and the run before), or the workload starts a whole period late",
                    at(i), real.text
                ),
            };
            Err(vec![Violation {
                field: PRIMER,
                value: Bad::Str(p.text.clone()),
                detail,
            }])
        }
        (None, None) => Err(errs),
    }
}

/// `30 minutes`, `90 minutes (1 hour 30 minutes)`.
fn minutes(m: usize) -> String {
    if m < 60 {
        return format!("{m} minutes");
    }
    let mut parts = Vec::new();
    for (n, unit) in [
        (m / 1440, "day"),
        (m % 1440 / 60, "hour"),
        (m % 60, "minute"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {unit}{}", if n == 1 { "" } else { "s" }));
        }
    }
    format!("{m} minutes ({})", parts.join(" "))
}

/// apimachinery's `validateTimeZone` words for a bad `spec.timeZone`.
pub fn time_zone_violation(tz: &str) -> Option<Violation> {
    let bad = |detail: String| {
        Some(Violation {
            field: TIME_ZONE,
            value: Bad::Str(tz.to_string()),
            detail,
        })
    };
    if tz.is_empty() {
        return bad("timeZone must be nil or non-empty string".into());
    }
    if tz.eq_ignore_ascii_case("Local") {
        return bad(
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
                .into(),
        );
    }
    if tz.parse::<Tz>().is_err() {
        return bad(format!("unknown time zone {tz}"));
    }
    None
}

/// The zone a schedule runs in: `spec.timeZone`, else UTC (what
/// kube-controller-manager's local zone is in a container).
pub fn zone(tz: Option<&str>) -> Option<Tz> {
    match tz {
        None => Some(Tz::UTC),
        Some(t) => t.parse().ok(),
    }
}

/// The PreScaledCronJob controller's settings (`prescaler` in the configuration file).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The image of the wait init container: batchgate's own.
    pub image: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            image: DEFAULT_IMAGE.into(),
        }
    }
}

/// The image the shipped Deployment runs.
pub const DEFAULT_IMAGE: &str = "batchgate:latest";

#[cfg(test)]
mod tests;
