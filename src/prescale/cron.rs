//! Cron schedules as the Kubernetes CronJob controller reads them:
//! robfig/cron v3's `ParseStandard` (five fields `minute hour
//! day-of-month month day-of-week`, names `jan`–`dec` and `sun`–`sat`, `?`
//! for `*`, and the `@yearly`… descriptors), with apimachinery's extra rule
//! that a `TZ=`/`CRON_TZ=` prefix is refused (`spec.timeZone` says that).
//!
//! The field bits and the "star" flags follow robfig: a day-of-month or
//! day-of-week field that starts with `*` (or `?`) without a step above 1
//! is unrestricted, and the day matches when both fields match if either is
//! unrestricted, and when either matches otherwise (classic cron's OR).

use std::fmt;

use chrono::{Datelike, NaiveDate};

/// Why a schedule is refused, worded as robfig/cron words it (what the
/// apiserver prints for a CronJob), or as apimachinery does for `TZ=`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("empty spec string")]
    Empty,
    #[error("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")]
    TimeZonePrefix,
    #[error("expected exactly 5 fields, found {found}: [{fields}]")]
    FieldCount { found: usize, fields: String },
    #[error("unrecognized descriptor: {0}")]
    Descriptor(String),
    #[error("{0}")]
    Range(String),
}

/// Bounds of one field.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// One parsed field: the values it matches (bit `v` for value `v`), whether
/// it is unrestricted in robfig's sense, and its text as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub bits: u64,
    pub star: bool,
    pub text: String,
    /// The values in the order the field lists them (a step or range
    /// expanded in place), without repeats: how upstream writes a
    /// derived minute list.
    pub listed: Vec<u32>,
}

impl Field {
    pub fn has(&self, v: u32) -> bool {
        v < 64 && self.bits & (1 << v) != 0
    }

    pub fn values(&self) -> impl Iterator<Item = u32> + '_ {
        (0..64).filter(|v| self.has(*v))
    }

    pub fn count(&self) -> u32 {
        self.bits.count_ones()
    }
}

/// A five-field schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub minute: Field,
    pub hour: Field,
    pub dom: Field,
    pub month: Field,
    pub dow: Field,
    /// The schedule as written (a descriptor stays a descriptor).
    pub text: String,
}

/// What a schedule string is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Cron(Box<Schedule>),
    /// `@every <duration>`: accepted by CronJob, but it has no wall-clock
    /// times (it counts from the controller's last run).
    Every(String),
}

impl Schedule {
    /// Parses as the CronJob apiserver validation does; `@every` is
    /// refused here (see [`parse`] for it).
    pub fn parse(spec: &str) -> Result<Schedule, CronError> {
        match parse(spec)? {
            Parsed::Cron(s) => Ok(*s),
            Parsed::Every(_) => Err(CronError::Descriptor(spec.trim().to_string())),
        }
    }

    /// Whether the schedule fires on this calendar day (robfig's
    /// `dayMatches` plus the month).
    pub fn day_matches(&self, d: NaiveDate) -> bool {
        if !self.month.has(d.month()) {
            return false;
        }
        let dom = self.dom.has(d.day());
        let dow = self.dow.has(d.weekday().num_days_from_sunday());
        if self.dom.star || self.dow.star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// Whether every minute of an hour matches (the "every minute" case,
    /// however written: `*`, `*/1`, `0-59`, a list of all sixty).
    pub fn every_minute(&self) -> bool {
        self.minute.bits == (1u64 << 60) - 1
    }

    /// Minutes of the day (0..1440) the schedule fires at, ascending.
    pub fn times_of_day(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for h in self.hour.values() {
            for m in self.minute.values() {
                out.push(h * 60 + m);
            }
        }
        out
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Parses a CronJob schedule.
pub fn parse(spec: &str) -> Result<Parsed, CronError> {
    if spec.is_empty() {
        return Err(CronError::Empty);
    }
    if spec.contains("TZ") {
        return Err(CronError::TimeZonePrefix);
    }
    let trimmed = spec.trim();
    if let Some(rest) = trimmed.strip_prefix('@') {
        let five = match rest {
            "yearly" | "annually" => "0 0 1 1 *",
            "monthly" => "0 0 1 * *",
            "weekly" => "0 0 * * 0",
            "daily" | "midnight" => "0 0 * * *",
            "hourly" => "0 * * * *",
            _ => {
                if let Some(d) = rest.strip_prefix("every ") {
                    return Ok(Parsed::Every(d.trim().to_string()));
                }
                return Err(CronError::Descriptor(trimmed.to_string()));
            }
        };
        let mut s = fields(five)?;
        s.text = trimmed.to_string();
        return Ok(Parsed::Cron(Box::new(s)));
    }
    fields(spec).map(|s| Parsed::Cron(Box::new(s)))
}

fn fields(spec: &str) -> Result<Schedule, CronError> {
    let f: Vec<&str> = spec.split_whitespace().collect();
    if f.len() != 5 {
        return Err(CronError::FieldCount {
            found: f.len(),
            fields: f.join(" "),
        });
    }
    Ok(Schedule {
        minute: field(f[0], MINUTES)?,
        hour: field(f[1], HOURS)?,
        dom: field(f[2], DOM)?,
        month: field(f[3], MONTHS)?,
        dow: field(f[4], DOW)?,
        text: f.join(" "),
    })
}

fn field(text: &str, b: Bounds) -> Result<Field, CronError> {
    let mut out = Field {
        bits: 0,
        star: false,
        text: text.to_string(),
        listed: Vec::new(),
    };
    for part in text.split(',') {
        range(part, b, &mut out)?;
    }
    Ok(out)
}

fn range(expr: &str, b: Bounds, out: &mut Field) -> Result<(), CronError> {
    let err = |m: String| CronError::Range(m);
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let (start, mut end, mut star);
    if low_high[0] == "*" || low_high[0] == "?" {
        start = b.min;
        end = b.max;
        star = true;
    } else {
        start = int_or_name(low_high[0], b)?;
        end = match low_high.len() {
            1 => start,
            2 => int_or_name(low_high[1], b)?,
            _ => return Err(err(format!("too many hyphens: {expr}"))),
        };
        star = false;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let s = number(range_and_step[1])?;
            if single {
                end = b.max;
            }
            if s > 1 {
                star = false;
            }
            s
        }
        _ => return Err(err(format!("too many slashes: {expr}"))),
    };
    if start < b.min {
        return Err(err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        )));
    }
    if end > b.max {
        return Err(err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        )));
    }
    if start > end {
        return Err(err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        )));
    }
    if step == 0 {
        return Err(err(format!(
            "step of range should be a positive number: {expr}"
        )));
    }
    let mut v = start;
    while v <= end {
        if out.bits & (1 << v) == 0 {
            out.listed.push(v);
        }
        out.bits |= 1 << v;
        // A step near u32::MAX must end the range, not wrap around it.
        let Some(next) = v.checked_add(step) else {
            break;
        };
        v = next;
    }
    out.star |= star;
    Ok(())
}

fn int_or_name(s: &str, b: Bounds) -> Result<u32, CronError> {
    let lower = s.to_ascii_lowercase();
    if let Some(i) = b.names.iter().position(|n| *n == lower) {
        // Month names count from 1, day names from 0.
        return Ok(i as u32 + b.min);
    }
    number(s)
}

fn number(s: &str) -> Result<u32, CronError> {
    match s.parse::<i64>() {
        Ok(n) if n < 0 => Err(CronError::Range(format!(
            "negative number ({n}) not allowed: {s}"
        ))),
        Ok(n) if n > i64::from(u32::MAX) => Err(CronError::Range(format!(
            "failed to parse int from {s}: value out of range"
        ))),
        Ok(n) => Ok(n as u32),
        Err(_) => Err(CronError::Range(format!(
            "failed to parse int from {s}: strconv.Atoi: parsing {s:?}: invalid syntax"
        ))),
    }
}

/// Renders a set of values as cron does best: ascending, consecutive runs
/// of three or more as `a-b`.
pub fn render(values: &[u32]) -> String {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        if j >= i + 2 {
            parts.push(format!("{}-{}", v[i], v[j]));
        } else {
            for x in &v[i..=j] {
                parts.push(x.to_string());
            }
        }
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_step_ends_the_range_instead_of_wrapping() {
        // 59 + 4294967295 overflowed u32 (a panic, or every minute once wrapped).
        let s = s("59/4294967295 23/4294967295 31/4294967295 12/4294967295 6/4294967295");
        assert_eq!(s.minute.listed, vec![59]);
        assert_eq!(s.hour.listed, vec![23]);
        assert_eq!(s.dom.listed, vec![31]);
        assert_eq!(s.month.listed, vec![12]);
        assert_eq!(s.dow.listed, vec![6]);
    }

    fn s(spec: &str) -> Schedule {
        Schedule::parse(spec).unwrap()
    }

    #[test]
    fn fields_steps_ranges_lists_and_names() {
        let x = s("5/30 1-3,7 */10 jan-MAR sun,sat");
        assert_eq!(x.minute.values().collect::<Vec<_>>(), [5, 35]);
        assert_eq!(x.hour.values().collect::<Vec<_>>(), [1, 2, 3, 7]);
        assert_eq!(x.dom.values().collect::<Vec<_>>(), [1, 11, 21, 31]);
        assert_eq!(x.month.values().collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(x.dow.values().collect::<Vec<_>>(), [0, 6]);
        assert!(!x.dom.star && !x.dow.star);
        assert_eq!(s("15-20 12 * * 5").minute.listed, [15, 16, 17, 18, 19, 20]);
        assert_eq!(s("0-30/10 * * * *").minute.listed, [0, 10, 20, 30]);
        assert_eq!(s("15-17,0/30 * * * *").minute.listed, [15, 16, 17, 0, 30]);
    }

    #[test]
    fn star_flags_follow_robfig() {
        assert!(s("0 0 * * *").dom.star);
        assert!(s("0 0 ? * *").dom.star);
        assert!(s("0 0 */1 * *").dom.star);
        assert!(!s("0 0 */2 * *").dom.star);
        assert!(s("0 0 *,3 * *").dom.star);
    }

    #[test]
    fn day_matching_ands_with_a_star_and_ors_without() {
        // The 13th, or any Friday.
        let or = s("0 0 13 * 5");
        let fri_6 = NaiveDate::from_ymd_opt(2026, 11, 6).unwrap();
        let tue_13 = NaiveDate::from_ymd_opt(2026, 10, 13).unwrap();
        let sat_14 = NaiveDate::from_ymd_opt(2026, 11, 14).unwrap();
        assert!(or.day_matches(fri_6));
        assert!(or.day_matches(tue_13));
        assert!(!or.day_matches(sat_14));
        // Fridays only (the day-of-month is a star).
        let and = s("0 0 * * 5");
        assert!(and.day_matches(fri_6));
        assert!(!and.day_matches(tue_13));
        // `*/2` is not a star: odd days or Fridays.
        let step = s("0 0 */2 * 5");
        assert!(step.day_matches(NaiveDate::from_ymd_opt(2026, 11, 7).unwrap()));
    }

    #[test]
    fn descriptors() {
        let y = s("@yearly");
        assert_eq!(y.text, "@yearly");
        assert!(y.month.has(1) && y.month.count() == 1 && y.dom.has(1));
        assert!(s("@hourly").minute.has(0) && s("@hourly").hour.star);
        assert!(s("@weekly").dow.has(0) && s("@weekly").dom.star);
        assert!(matches!(parse("@every 1h"), Ok(Parsed::Every(d)) if d == "1h"));
        assert!(matches!(parse("@often"), Err(CronError::Descriptor(_))));
    }

    #[test]
    fn refusals_read_as_the_apiserver_words_them() {
        let e = |spec: &str| Schedule::parse(spec).unwrap_err().to_string();
        assert_eq!(
            e("* 0 * * * *"),
            "expected exactly 5 fields, found 6: [* 0 * * * *]"
        );
        assert_eq!(e("61 * * * *"), "end of range (61) above maximum (59): 61");
        assert_eq!(e("* * * * 7"), "end of range (7) above maximum (6): 7");
        assert_eq!(
            e("TZ=UTC 0 5 * * *"),
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        );
        assert_eq!(
            e("CRON_TZ=Europe/Berlin 0 5 * * *"),
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        );
        assert_eq!(e("wibble"), "expected exactly 5 fields, found 1: [wibble]");
        assert_eq!(
            e("5-1 * * * *"),
            "beginning of range (5) beyond end of range (1): 5-1"
        );
        assert_eq!(
            e("*/0 * * * *"),
            "step of range should be a positive number: */0"
        );
        assert_eq!(e("1-2-3 * * * *"), "too many hyphens: 1-2-3");
        assert!(e("x * * * *").starts_with("failed to parse int from x"));
        assert_eq!(e(""), "empty spec string");
    }

    #[test]
    fn every_minute_however_written() {
        for spec in [
            "* * * * *",
            "*/1 * * * *",
            "0-59 * * * *",
            "* 0 * * *",
            "0-29,30-59 5 * * *",
        ] {
            assert!(s(spec).every_minute(), "{spec}");
        }
        assert!(!s("*/2 * * * *").every_minute());
    }

    #[test]
    fn double_spaces_are_one_separator() {
        // Upstream split on single spaces and shifted the fields.
        assert_eq!(s("0  5 * * *").hour.values().collect::<Vec<_>>(), [5]);
        assert_eq!(s("0  5 * * *").text, "0 5 * * *");
    }

    #[test]
    fn render_compresses_runs() {
        assert_eq!(render(&[13, 14, 15]), "13-15");
        assert_eq!(render(&[23, 0, 1]), "0,1,23");
        assert_eq!(render(&[1, 2, 3, 4, 9, 11, 12]), "1-4,9,11,12");
    }
}
