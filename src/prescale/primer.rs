//! The primer schedule: the runs of a schedule moved `warmUpTimeMins`
//! earlier, as one cron schedule, or a precise reason why no single cron
//! schedule is that.
//!
//! Upstream (`CreatePrimerSchedule`) rewrote the minute field text and
//! patched the hour; it refused hour ranges and lists it could have moved,
//! and moved runs across midnight without moving their day, so a day-of-
//! month or day-of-week schedule got primers on the wrong day. Here:
//!
//! 1. every time of day `h:m` of the schedule moves to `h:m - w`, counting
//!    the days it crosses (0 or more back);
//! 2. the moved times must again be a set of minutes repeated in a set of
//!    hours (cron's only shape for times of day);
//! 3. if some times cross midnight and others do not, the schedule must
//!    run every day (otherwise the crossed ones need other days than the
//!    rest); if all cross by `n` days, day-of-week moves back `n` (mod 7),
//!    day-of-month moves back `n` when it stays within the month, and a
//!    first-of-month run moves to the last day of the previous month when
//!    all those months have one length (so `@yearly` primes on 31 Dec);
//! 4. the candidate is then checked minute by minute over two leap cycles
//!    against the runs moved back by `w` ([`super::calendar`]); any
//!    disagreement (a month without the 31st, say) is reported with the
//!    first date it happens.

use chrono::NaiveDate;

use super::{
    calendar::{Calendar, DAY, HORIZON_DAYS},
    cron::{render, Field, Schedule},
};

/// Why no primer schedule is derived. Each reads as the end of a sentence
/// about `spec.warmUpTimeMins`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrimerError {
    /// Upstream's words.
    #[error("Can't create primer schedule on something that runs every minute")]
    EveryMinute,
    #[error("the schedule never fires (no matching day in {HORIZON_DAYS} days), so there is nothing to prime")]
    Never,
    #[error("the primer times {times} (each run {w} minutes earlier) are not one set of minutes repeated in one set of hours, which is all a cron schedule can say; set spec.primerSchedule to a schedule that fires once before each run, or change the schedule")]
    NotOneShape { w: u32, times: String },
    #[error("the runs at {crossing} are primed on the day before ({moved}), the others on their own day, but the schedule only runs on some days ({days}); one cron schedule cannot fire on both sets of days. Set spec.primerSchedule, or choose a warm-up that moves no run across midnight")]
    MixedDays {
        crossing: String,
        moved: String,
        days: String,
    },
    #[error("the runs on day-of-month {dom} are primed on the last day of the previous month, which a cron schedule can only name when all those months have the same length (and are not February); set spec.primerSchedule, or choose a warm-up that moves no run across midnight")]
    MonthEnd { dom: String },
    #[error("the derived primer schedule {primer:?} would fire at {at} with no run {w} minutes later; set spec.primerSchedule instead")]
    SpuriousPrimer { primer: String, at: String, w: u32 },
    #[error("the derived primer schedule {primer:?} would not fire at {at}, {w} minutes before the run at {run}; set spec.primerSchedule instead")]
    MissingPrimer {
        primer: String,
        at: String,
        run: String,
        w: u32,
    },
}

/// Up to eight `HH:MM` times, then `…`.
fn clock_list(tods: &[u32]) -> String {
    let mut v: Vec<String> = tods
        .iter()
        .take(8)
        .map(|t| format!("{:02}:{:02}", t / 60, t % 60))
        .collect();
    if tods.len() > 8 {
        v.push("…".into());
    }
    v.join(", ")
}

/// The schedule's runs moved `w` minutes earlier, as one cron schedule.
/// `from` is the first day of the exactness check.
pub fn derive(real: &Schedule, w: u32, from: NaiveDate) -> Result<String, PrimerError> {
    if real.every_minute() {
        return Err(PrimerError::EveryMinute);
    }
    derive_on(real, w, &Calendar::of(real, from, HORIZON_DAYS))
}

/// [`derive`] with the schedule's runs already laid out.
pub fn derive_on(real: &Schedule, w: u32, runs: &Calendar) -> Result<String, PrimerError> {
    if real.every_minute() {
        return Err(PrimerError::EveryMinute);
    }
    if runs.is_empty() {
        return Err(PrimerError::Never);
    }
    let candidate = shape(real, w)?;
    let primer = Schedule::parse(&candidate).map_err(|e| PrimerError::NotOneShape {
        w,
        times: e.to_string(),
    })?;
    let primed = Calendar::of(&primer, runs.from(), HORIZON_DAYS);
    if let Some(i) = primed.first_mismatch(runs, w as usize) {
        let fmt = |i: usize| primed.at(i).format("%Y-%m-%d %H:%M").to_string();
        return Err(if primed.get(i) {
            PrimerError::SpuriousPrimer {
                primer: candidate,
                at: fmt(i),
                w,
            }
        } else {
            PrimerError::MissingPrimer {
                primer: candidate,
                at: fmt(i),
                run: fmt(i + w as usize),
                w,
            }
        });
    }
    Ok(candidate)
}

/// Steps 1–3: the candidate text.
fn shape(real: &Schedule, w: u32) -> Result<String, PrimerError> {
    let w = w as i64;
    // (moved time of day, days crossed back)
    let mut moved: Vec<(u32, i64)> = Vec::new();
    for tod in real.times_of_day() {
        let t = tod as i64 - w;
        let back = -t.div_euclid(DAY as i64);
        moved.push((t.rem_euclid(DAY as i64) as u32, back));
    }
    let mut tods: Vec<u32> = moved.iter().map(|(t, _)| *t).collect();
    tods.sort_unstable();
    tods.dedup();
    let hours: Vec<u32> = dedup_sorted(tods.iter().map(|t| t / 60));
    let minutes: Vec<u32> = dedup_sorted(tods.iter().map(|t| t % 60));
    if hours.len() * minutes.len() != tods.len() {
        return Err(PrimerError::NotOneShape {
            w: w as u32,
            times: clock_list(&tods),
        });
    }
    let min_back = moved.iter().map(|m| m.1).min().unwrap_or(0);
    let max_back = moved.iter().map(|m| m.1).max().unwrap_or(0);
    let every_day = real.month.count() == 12 && real.dom.star && real.dow.star;

    // Minute field: upstream's order (the field's listed values, moved).
    let shift_min = |m: u32| (m as i64 - w).rem_euclid(60) as u32;
    let minute_text = if minutes == real.minute.values().collect::<Vec<_>>() {
        real.minute.text.clone()
    } else {
        let mut v: Vec<String> = Vec::new();
        for m in &real.minute.listed {
            let s = shift_min(*m).to_string();
            if !v.contains(&s) {
                v.push(s);
            }
        }
        v.join(",")
    };
    let hour_text = keep_or_render(&real.hour, &hours);
    let (mut dom, mut month, mut dow) = (
        real.dom.text.clone(),
        real.month.text.clone(),
        real.dow.text.clone(),
    );
    if min_back != max_back {
        if !every_day {
            let crossing: Vec<u32> = real
                .times_of_day()
                .into_iter()
                .filter(|t| (*t as i64) < w)
                .collect();
            let moved_times: Vec<u32> = crossing
                .iter()
                .map(|t| (*t as i64 - w).rem_euclid(DAY as i64) as u32)
                .collect();
            return Err(PrimerError::MixedDays {
                crossing: clock_list(&crossing),
                moved: clock_list(&moved_times),
                days: format!(
                    "day-of-month {:?}, month {:?}, day-of-week {:?}",
                    real.dom.text, real.month.text, real.dow.text
                ),
            });
        }
    } else if min_back > 0 && !every_day {
        let n = min_back;
        if !real.dow.star {
            let v: Vec<u32> = real
                .dow
                .values()
                .map(|d| (d as i64 - n).rem_euclid(7) as u32)
                .collect();
            dow = render(&v);
        }
        if !real.dom.star {
            let days: Vec<u32> = real.dom.values().collect();
            if days.iter().all(|d| *d as i64 > n) {
                dom = render(&days.iter().map(|d| d - n as u32).collect::<Vec<_>>());
            } else if days.iter().all(|d| *d as i64 <= n) && real.dow.star {
                let prev: Vec<u32> = real
                    .month
                    .values()
                    .map(|m| if m == 1 { 12 } else { m - 1 })
                    .collect();
                let lengths: Vec<u32> = prev.iter().map(|m| month_length(*m)).collect();
                let len = lengths[0];
                if real.month.count() == 12
                    || prev.contains(&2)
                    || lengths.iter().any(|l| *l != len)
                {
                    return Err(PrimerError::MonthEnd {
                        dom: real.dom.text.clone(),
                    });
                }
                dom = render(
                    &days
                        .iter()
                        .map(|d| (len as i64 + *d as i64 - n) as u32)
                        .collect::<Vec<_>>(),
                );
                month = render(&prev);
            } else {
                return Err(PrimerError::MonthEnd {
                    dom: real.dom.text.clone(),
                });
            }
        }
    }
    Ok(format!("{minute_text} {hour_text} {dom} {month} {dow}"))
}

fn dedup_sorted(it: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut v: Vec<u32> = it.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The field's own text when its values did not change.
fn keep_or_render(f: &Field, values: &[u32]) -> String {
    if f.values().collect::<Vec<_>>() == values {
        f.text.clone()
    } else {
        render(values)
    }
}

/// Days in a month of a non-leap year (February is never used for a
/// month-end move).
fn month_length(m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 => 28,
        _ => 31,
    }
}

#[cfg(test)]
mod tests;
