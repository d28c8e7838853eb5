//! Upstream's `TestCreatePrimerSchedule` vectors (A3.3 of the reference
//! report), the controller-test and README vectors, the derived edge
//! vectors (A3.4), and the wraps upstream refused or got wrong. Where
//! upstream's expected value is wrong the test says why and states the
//! right answer.

use chrono::NaiveDate;

use super::*;

fn from() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 1, 1).unwrap()
}

fn primer(spec: &str, w: u32) -> Result<String, PrimerError> {
    derive(&Schedule::parse(spec).unwrap(), w, from())
}

fn ok(spec: &str, w: u32) -> String {
    primer(spec, w).unwrap_or_else(|e| panic!("{spec} / {w}: {e}"))
}

// ---- upstream vectors that pass unchanged ----

#[test]
fn upstream_1_specific_minute() {
    assert_eq!(ok("30 * * 10 *", 5), "25 * * 10 *");
}

#[test]
fn upstream_2_adjusts_the_hour() {
    assert_eq!(ok("0 0 * * *", 10), "50 23 * * *");
}

#[test]
fn upstream_4_hour_ranges() {
    assert_eq!(ok("30 14-16 * * *", 10), "20 14-16 * * *");
}

#[test]
fn upstream_6_unaffected_hour_and_day_params() {
    assert_eq!(ok("5 * */12 * 1,2", 5), "0 * */12 * 1,2");
}

#[test]
fn upstream_7_non_zero_step_start() {
    assert_eq!(ok("15/30 5 * * *", 5), "10,40 5 * * *");
}

#[test]
fn upstream_8_minute_range() {
    assert_eq!(ok("15-20 12 * * 5", 5), "10,11,12,13,14,15 12 * * 5");
}

#[test]
fn upstream_10_every_minute() {
    assert_eq!(primer("* 0 * * *", 5), Err(PrimerError::EveryMinute));
}

#[test]
fn upstream_11_six_fields() {
    assert!(Schedule::parse("* 0 * * * *").is_err());
}

#[test]
fn upstream_16_hourly_on_one_weekday() {
    // Upstream refused it too: 00:00 on Friday is primed on Thursday at
    // 23:50, the other hours on Friday; no one schedule says that.
    assert!(matches!(
        primer("0 * * * 5", 10),
        Err(PrimerError::MixedDays { .. })
    ));
}

#[test]
fn upstream_controller_and_readme_vectors() {
    assert_eq!(ok("30 * * 10 *", 10), "20 * * 10 *");
    assert_eq!(ok("30 * * 10 *", 1), "29 * * 10 *");
    assert_eq!(ok("*/30 * * * *", 15), "45,15 * * * *");
    assert_eq!(ok("5/30 * * * *", 5), "0,30 * * * *");
}

// ---- upstream vectors whose expected value is wrong ----

/// Upstream expects `50,5,20,35 * 1 * *`. That fires at 23:50 on the 1st
/// (whose next run is 00:00 on the 1st of the *next* month: a pod holding
/// nodes for a month) and never on the last day of the previous month,
/// where the 00:00 run on the 1st needs its primer. No single schedule is
/// right, so it is refused, naming the crossing run.
#[test]
fn upstream_3_step_with_day_of_month_is_refused() {
    let e = primer("0/15 * 1 * *", 10).unwrap_err();
    assert!(matches!(e, PrimerError::MixedDays { .. }), "{e}");
    assert!(e.to_string().contains("00:00"), "{e}");
    assert!(e.to_string().contains("23:50"), "{e}");
}

/// Upstream expects `50,20 * 1 * *`: the same day-of-month bug as #3.
#[test]
fn upstream_5_star_step_with_day_of_month_is_refused() {
    assert!(matches!(
        primer("*/30 * 1 * *", 10),
        Err(PrimerError::MixedDays { .. })
    ));
}

/// Upstream expects `55,2,38,46 * * * 5`: its 23:55 primer on Friday waits
/// a week, and Thursday 23:55 (for Friday's 00:05) never fires.
#[test]
fn upstream_9_list_with_day_of_week_is_refused() {
    assert!(matches!(
        primer("5,12,48,56 * * * 5", 10),
        Err(PrimerError::MixedDays { .. })
    ));
}

/// Upstream refuses ("Can't break up step values"), but the runs moved 5
/// minutes back are exactly one schedule.
#[test]
fn upstream_12_range_and_step_list_is_derived() {
    assert_eq!(ok("15-17,0/30 * * * *", 5), "10,11,12,55,25 * * * *");
}

/// Upstream refuses ("Can't adjust special characters in cron-hour
/// argument"); 14:00, 15:00, 16:00 moved back 10 minutes are 13:50–15:50.
#[test]
fn upstream_13_hour_range_wraps() {
    assert_eq!(ok("0 14-16 * * *", 10), "50 13-15 * * *");
}

/// Upstream refuses with the right outcome: 23:50–23:59 and 00:00–00:05
/// are not minutes × hours. The message lists the times.
#[test]
fn upstream_14_overlap_over_two_days_is_refused() {
    let e = primer("0-15 0 * * *", 10).unwrap_err();
    assert!(matches!(e, PrimerError::NotOneShape { .. }), "{e}");
    assert!(e.to_string().contains("00:00, 00:01"), "{e}");
}

/// Upstream refuses ("Unsupported cron"); Friday 00:00 is primed on
/// Thursday 23:50.
#[test]
fn upstream_15_day_of_week_moves_back() {
    assert_eq!(ok("0 0 * * 5", 10), "50 23 * * 4");
    assert_eq!(ok("0 0 * * 0", 10), "50 23 * * 6");
    assert_eq!(ok("0 0 * * MON", 10), "50 23 * * 0");
}

#[test]
fn upstream_get_primer_schedule_vectors() {
    // `GetPrimerSchedule("* * * * *", 10, "30 * 15 * *")` returned the
    // primer unchecked; an every-minute schedule has nothing to prime.
    assert_eq!(primer("* * * * *", 10), Err(PrimerError::EveryMinute));
    assert!(Schedule::parse("wibble").is_err());
}

// ---- derived edge vectors (A3.4) ----

#[test]
fn derived_vectors_that_upstream_got_right() {
    assert_eq!(ok("0 * * * *", 5), "55 * * * *");
    assert_eq!(ok("0 5 1 * *", 10), "50 4 1 * *");
    assert_eq!(ok("0 00 * * *", 10), "50 23 * * *");
    assert_eq!(ok("30 5,17 * * *", 10), "20 5,17 * * *");
    assert_eq!(ok("*/7 * * * *", 3), "57,4,11,18,25,32,39,46,53 * * * *");
    assert_eq!(ok("30 5 * * *", 60), "30 4 * * *");
    assert_eq!(ok("30 5 * * *", 90), "0 4 * * *");
    assert_eq!(ok("30  * * * *", 5), "25 * * * *");
    // Refused as upstream refused.
    assert!(matches!(
        primer("0 0 1 * *", 10),
        Err(PrimerError::MonthEnd { .. })
    ));
    assert!(matches!(
        primer("0 * 1 * *", 10),
        Err(PrimerError::MixedDays { .. })
    ));
    assert!(matches!(
        primer("*/15 0 * * *", 10),
        Err(PrimerError::NotOneShape { .. })
    ));
    // 04:50 and 05:20 are not one minute set over one hour set.
    assert!(matches!(
        primer("0,30 5 * * *", 10),
        Err(PrimerError::NotOneShape { .. })
    ));
}

#[test]
fn derived_vectors_that_upstream_got_wrong() {
    // Hour lists and steps wrap (upstream: "Can't adjust special characters").
    assert_eq!(ok("0 5,17 * * *", 10), "50 4,16 * * *");
    assert_eq!(
        ok("0 */2 * * *", 10),
        "50 1,3,5,7,9,11,13,15,17,19,21,23 * * *"
    );
    // `*/1` is every minute (upstream let it through).
    assert_eq!(primer("*/1 * * * *", 5), Err(PrimerError::EveryMinute));
    assert_eq!(primer("0-59 3 * * *", 5), Err(PrimerError::EveryMinute));
    // Ranges with steps and mixed lists (upstream: "Can't break up ...").
    assert_eq!(ok("0-30/10 * * * *", 5), "55,5,15,25 * * * *");
    assert_eq!(ok("1-5,30 * * * *", 5), "56,57,58,59,0,25 * * * *");
    // Descriptors (upstream: "Can't parse minute value to int").
    assert_eq!(ok("@hourly", 5), "55 * * * *");
    // Warm-ups past the previous hour (upstream: a parse error on -30).
    assert_eq!(ok("30 5 * * *", 120), "30 3 * * *");
    // Two spaces no longer shift the fields.
    assert_eq!(ok("0  5 * * *", 10), "50 4 * * *");
}

// ---- wraps into the previous day, month, year ----

#[test]
fn day_wraps_carry_into_day_of_month_and_day_of_week() {
    assert_eq!(ok("@daily", 10), "50 23 * * *");
    assert_eq!(ok("@weekly", 10), "50 23 * * 6");
    assert_eq!(ok("0 0 15 * *", 10), "50 23 14 * *");
    assert_eq!(ok("0 0 2-5,20 * *", 30), "30 23 1-4,19 * *");
    assert_eq!(ok("0 0 * * 1-5", 10), "50 23 * * 0-4");
    assert_eq!(ok("15 1 * * 0", 120), "15 23 * * 6");
    // Both day fields restricted (cron's OR): both move.
    assert_eq!(ok("0 0 13 * 5", 10), "50 23 12 * 4");
    // A warm-up of two days moves the weekday by two.
    assert_eq!(ok("0 6 * * 3", 2 * 1440), "0 6 * * 1");
}

#[test]
fn first_of_month_moves_to_the_last_day_of_the_previous_month() {
    assert_eq!(ok("@yearly", 10), "50 23 31 12 *");
    assert_eq!(ok("0 0 1 1,8 *", 10), "50 23 31 7,12 *");
    assert_eq!(ok("0 0 1 5,7,10,12 *", 60), "0 23 30 4,6,9,11 *");
    // Months of different lengths, or February: refused, saying why.
    assert!(matches!(
        primer("0 0 1 1,5 *", 10),
        Err(PrimerError::MonthEnd { .. })
    ));
    assert!(matches!(
        primer("0 0 1 3 *", 10),
        Err(PrimerError::MonthEnd { .. })
    ));
    assert!(matches!(
        primer("@monthly", 10),
        Err(PrimerError::MonthEnd { .. })
    ));
}

/// A day-of-month that does not exist in every month: the 31st moved back
/// is the 30th, which also fires in 30-day months with no 31st to prime.
/// The exactness check finds the first such date.
#[test]
fn day_of_month_moves_that_are_not_exact_name_the_date() {
    let e = primer("0 0 31 * *", 10).unwrap_err();
    assert!(
        matches!(&e, PrimerError::SpuriousPrimer { at, .. } if at == "2026-04-30 23:50"),
        "{e}"
    );
    // A month-restricted every-day schedule: 1 October's run is primed on
    // 30 September, outside the month field.
    let e = primer("0 0 * 10 *", 10).unwrap_err();
    assert!(
        matches!(&e, PrimerError::MissingPrimer { at, run, .. }
            if at == "2026-09-30 23:50" && run == "2026-10-01 00:00"),
        "{e}"
    );
}

#[test]
fn hour_wraps_with_every_day() {
    assert_eq!(ok("0/15 * * * *", 10), "50,5,20,35 * * * *");
    assert_eq!(ok("5 0,12 * * *", 10), "55 11,23 * * *");
    assert_eq!(ok("0 0-3 * * *", 10), "50 0-2,23 * * *");
}

#[test]
fn schedules_that_never_fire() {
    assert_eq!(primer("0 0 30 2 *", 10), Err(PrimerError::Never));
}
