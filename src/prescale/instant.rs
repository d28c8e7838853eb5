//! When a schedule fires, as the Kubernetes CronJob controller decides it:
//! robfig/cron v3's `SpecSchedule.Next` in the CronJob's `spec.timeZone`,
//! stepped the way Go's `time` package steps (hours and minutes are added
//! as elapsed time, days and months through `time.Date`, which puts a wall
//! time that does not exist after the clock change).
//!
//! What that means on daylight-saving days (tested below):
//!
//! - spring forward (the clock jumps, e.g. 02:00 → 03:00): a run whose wall
//!   time falls in the skipped hour does not happen that day;
//! - fall back (the clock repeats, e.g. 02:00–02:59 twice): a run in the
//!   repeated hour happens twice, once in each.
//!
//! Instants are Unix seconds; nothing here reads the clock.

use chrono::{DateTime, Datelike, Days, NaiveDate, Offset, TimeZone, Timelike};
use chrono_tz::Tz;

use super::cron::Schedule;

/// The UTC offset in force at `unix`, in seconds.
fn offset_at(tz: Tz, unix: i64) -> i64 {
    match DateTime::from_timestamp(unix, 0) {
        Some(t) => i64::from(
            tz.offset_from_utc_datetime(&t.naive_utc())
                .fix()
                .local_minus_utc(),
        ),
        None => 0,
    }
}

/// Wall-clock fields at `unix`.
#[derive(Debug, Clone, Copy)]
struct Wall {
    year: i32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    date: NaiveDate,
}

fn wall(tz: Tz, unix: i64) -> Wall {
    let t = DateTime::from_timestamp(unix, 0)
        .unwrap_or_default()
        .with_timezone(&tz);
    Wall {
        year: t.year(),
        month: t.month(),
        day: t.day(),
        hour: t.hour(),
        minute: t.minute(),
        second: t.second(),
        date: t.date_naive(),
    }
}

/// Go's `time.Date(year, month, day, hour, 0, 0, 0, loc)`: out-of-range
/// months and days roll over; a wall time in a gap or an overlap gets the
/// offset Go's algorithm picks (the zone in force at the wall time read as
/// UTC, corrected once).
fn date(tz: Tz, year: i32, month: i64, day: i64, hour: i64) -> i64 {
    let y = year as i64 + (month - 1).div_euclid(12);
    let m = (month - 1).rem_euclid(12) + 1;
    let Some(first) = NaiveDate::from_ymd_opt(y as i32, m as u32, 1) else {
        return 0;
    };
    let d = if day >= 1 {
        first.checked_add_days(Days::new((day - 1) as u64))
    } else {
        first.checked_sub_days(Days::new((1 - day) as u64))
    };
    let Some(d) = d else {
        return 0;
    };
    let local = d
        .and_hms_opt(0, 0, 0)
        .unwrap_or_default()
        .and_utc()
        .timestamp()
        + hour * 3600;
    let mut offset = offset_at(tz, local);
    if offset != 0 {
        let utc = local - offset;
        let there = offset_at(tz, utc);
        if there != offset {
            offset = there;
        }
    }
    local - offset
}

/// The first instant after `after` (strictly) at which `s` fires in `tz`,
/// or `None` if it does not within five years (robfig's limit).
pub fn next(s: &Schedule, tz: Tz, after: i64) -> Option<i64> {
    let mut t = after + 1;
    let mut added = false;
    let year_limit = wall(tz, t).year + 5;
    'wrap: loop {
        let w = wall(tz, t);
        if w.year > year_limit {
            return None;
        }
        if !s.month.has(w.month) {
            loop {
                let w = wall(tz, t);
                if s.month.has(w.month) {
                    break;
                }
                if !added {
                    added = true;
                    t = date(tz, w.year, w.month as i64, 1, 0);
                }
                let w = wall(tz, t);
                t = date(tz, w.year, w.month as i64 + 1, w.day as i64, w.hour as i64);
                if wall(tz, t).month == 1 {
                    continue 'wrap;
                }
            }
        }
        loop {
            let w = wall(tz, t);
            if s.day_matches(w.date) {
                break;
            }
            if !added {
                added = true;
                t = date(tz, w.year, w.month as i64, w.day as i64, 0);
            }
            let w = wall(tz, t);
            t = date(tz, w.year, w.month as i64, w.day as i64 + 1, w.hour as i64);
            let h = wall(tz, t).hour as i64;
            if h != 0 {
                if h > 12 {
                    t += (24 - h) * 3600;
                } else {
                    t -= h * 3600;
                }
            }
            if wall(tz, t).day == 1 {
                continue 'wrap;
            }
        }
        loop {
            let w = wall(tz, t);
            if s.hour.has(w.hour) {
                break;
            }
            if !added {
                added = true;
                t = date(tz, w.year, w.month as i64, w.day as i64, w.hour as i64);
            }
            t += 3600;
            if wall(tz, t).hour == 0 {
                continue 'wrap;
            }
        }
        loop {
            let w = wall(tz, t);
            if s.minute.has(w.minute) {
                break;
            }
            if !added {
                added = true;
                t -= t.rem_euclid(60);
            }
            t += 60;
            if wall(tz, t).minute == 0 {
                continue 'wrap;
            }
        }
        let sec = wall(tz, t).second as i64;
        if sec != 0 {
            added = true;
            t += 60 - sec;
            continue 'wrap;
        }
        return Some(t);
    }
}

/// The last instant at or before `at` at which `s` fired, looking back at
/// most five years.
pub fn previous(s: &Schedule, tz: Tz, at: i64) -> Option<i64> {
    for back in [
        3_600i64,
        86_400,
        32 * 86_400,
        367 * 86_400,
        5 * 366 * 86_400,
    ] {
        let mut t = next(s, tz, at - back - 1)?;
        if t > at {
            continue;
        }
        loop {
            match next(s, tz, t) {
                Some(n) if n <= at => t = n,
                _ => return Some(t),
            }
        }
    }
    None
}

/// What the init container does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Sleep until this instant, then let the workload start.
    Until(i64),
    /// Start the workload now: its run time has passed.
    Passed { run: i64 },
    /// Start the workload now: no run follows the primer that started
    /// this pod within the warm-up window (a daylight-saving change
    /// removed or doubled one of them); holding the nodes until the next
    /// run would hold them for a day.
    NoRunInWindow { primer: i64, next_run: Option<i64> },
}

/// What the pod that a primer run started waits for.
///
/// `started` is when the wait began (the pod's start). With the primer
/// schedule known, the run waited for is the first run after the primer
/// instant that started this pod (the last primer instant at or before
/// `started`), so a pod that started late (a slow node scale-up, an image
/// pull) still serves its own run, and never the one a period later.
/// Without it, the first run after `started` (upstream's rule, from the
/// pod's creation time). `max_wait` (seconds) bounds the primer-to-run
/// distance.
pub fn wait(
    real: &Schedule,
    primer: Option<&Schedule>,
    tz: Tz,
    started: i64,
    max_wait: Option<i64>,
) -> Wait {
    let from = primer
        .and_then(|p| previous(p, tz, started))
        .unwrap_or(started);
    let run = next(real, tz, from);
    if let Some(limit) = max_wait.filter(|_| primer.is_some()) {
        if run.is_none_or(|r| r - from > limit) {
            return Wait::NoRunInWindow {
                primer: from,
                next_run: run,
            };
        }
    }
    match run {
        Some(r) if r > started => Wait::Until(r),
        Some(r) => Wait::Passed { run: r },
        None => Wait::NoRunInWindow {
            primer: from,
            next_run: None,
        },
    }
}

#[cfg(test)]
mod tests;
