//! The rules of a PreScaledCronJob (the validating webhook's item 3).

use super::*;

fn day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 21).unwrap()
}

fn spec<'a>(schedule: &'a str, w: Option<i64>, primer: Option<&'a str>) -> Spec<'a> {
    Spec {
        name: "sample",
        schedule: Some(schedule),
        time_zone: None,
        warm_up_mins: w,
        primer_schedule: primer,
    }
}

fn denied(s: &Spec<'_>) -> Vec<String> {
    plan(s, day())
        .expect_err("denied")
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn upstream_samples_plan() {
    assert_eq!(
        plan(&spec("*/30 * * * *", Some(15), None), day()),
        Ok(Plan {
            primer: "45,15 * * * *".into(),
            max_wait_minutes: 15
        })
    );
    assert_eq!(
        plan(&spec("5/30 * * * *", None, Some("*/30 * * * *")), day()),
        Ok(Plan {
            primer: "*/30 * * * *".into(),
            max_wait_minutes: 5
        })
    );
}

#[test]
fn bad_cron_syntax() {
    assert_eq!(
        denied(&spec("bananas", Some(5), None)),
        ["spec.cronJob.spec.schedule: Invalid value: \"bananas\": expected exactly 5 fields, found 1: [bananas]"]
    );
    assert_eq!(
        denied(&spec("5/30 * * * *", None, Some("wibble"))),
        ["spec.primerSchedule: Invalid value: \"wibble\": primerSchedule provided is invalid: expected exactly 5 fields, found 1: [wibble]"]
    );
    assert!(denied(&spec("@every 1h", Some(5), None))[0].contains("@every"));
    assert!(denied(&spec("TZ=UTC 0 5 * * *", Some(5), None))[0]
        .contains("cannot use TZ or CRON_TZ in schedule, use timeZone field instead"));
}

#[test]
fn warm_up_must_be_positive() {
    for w in [0, -10] {
        let d = denied(&spec("30 * * * *", Some(w), None));
        assert_eq!(d.len(), 1);
        assert!(
            d[0].starts_with(&format!(
                "spec.warmUpTimeMins: Invalid value: {w}: must be greater than 0"
            )),
            "{d:?}"
        );
    }
}

#[test]
fn warm_up_must_be_shorter_than_the_shortest_gap() {
    let d = denied(&spec("30 * * * *", Some(70), None));
    assert_eq!(
        d,
        ["spec.warmUpTimeMins: Invalid value: 70: must be shorter than the shortest time between two runs of \"30 * * * *\" (60 minutes (1 hour)): a longer warm-up would prime a run before the previous one has started"]
    );
    assert!(denied(&spec("5/30 * * * *", Some(30), None))[0].contains("(30 minutes)"));
    assert!(plan(&spec("5/30 * * * *", Some(29), None), day()).is_ok());
    // 56 → 0 of the next hour is the shortest gap of */7.
    assert!(denied(&spec("*/7 * * * *", Some(4), None))[0].contains("(4 minutes)"));
}

#[test]
fn both_or_neither() {
    assert_eq!(
        denied(&spec("5/30 * * * *", Some(5), Some("*/30 * * * *"))),
        ["spec.primerSchedule: Forbidden: set either warmUpTimeMins or primerSchedule, not both: warmUpTimeMins derives the primer schedule, primerSchedule gives it"]
    );
    assert_eq!(
        denied(&spec("5/30 * * * *", None, None)),
        ["spec.warmUpTimeMins: Required value: set warmUpTimeMins (minutes the primer runs before each run) or primerSchedule (a schedule that fires once before each run)"]
    );
    // An empty primerSchedule is no primerSchedule.
    assert!(plan(&spec("5/30 * * * *", Some(5), Some("")), day()).is_ok());
}

#[test]
fn primer_must_fire_before_each_run() {
    let d = denied(&spec("5/30 * * * *", None, Some("0 * * * *")));
    assert_eq!(
        d,
        ["spec.primerSchedule: Invalid value: \"0 * * * *\": does not fire before each run of \"5/30 * * * *\": nothing fires between the runs at 2026-11-21 00:05 and 2026-11-21 00:35; it must fire once between each two runs"]
    );
    let d = denied(&spec("5/30 * * * *", None, Some("0,1,30,31 * * * *")));
    assert!(
        d[0].contains(
            "fires more than once between the runs at 2026-11-21 00:05 and 2026-11-21 00:35"
        ),
        "{d:?}"
    );
    let d = denied(&spec("5/30 * * * *", None, Some("5,35 * * * *")));
    assert!(
        d[0].contains("fires at 2026-11-21 00:05, the same minute as a run"),
        "{d:?}"
    );
    // Upstream's own test pairs "30 * 15 * *" with an every-minute schedule.
    let d = denied(&spec("* * * * *", None, Some("30 * 15 * *")));
    assert!(d[0].contains("Can't create primer schedule on something that runs every minute"));
}

#[test]
fn every_minute_however_written() {
    for s in ["* * * * *", "*/1 * * * *", "0-59 * * * *", "* 0 * * *"] {
        let d = denied(&spec(s, Some(5), None));
        assert!(d[0].contains("runs every minute"), "{s}: {d:?}");
    }
}

#[test]
fn underivable_primer_is_explained() {
    let d = denied(&spec("0/15 * 1 * *", Some(10), None));
    assert!(d[0].starts_with("spec.warmUpTimeMins: Invalid value: 10: no primer schedule for \"0/15 * 1 * *\": the runs at 00:00 are primed on the day before (23:50)"), "{d:?}");
}

#[test]
fn time_zone_and_name() {
    let mut s = spec("0 5 * * *", Some(10), None);
    s.time_zone = Some("Europe/Pariss");
    assert_eq!(
        denied(&s),
        ["spec.cronJob.spec.timeZone: Invalid value: \"Europe/Pariss\": unknown time zone Europe/Pariss"]
    );
    s.time_zone = Some("Local");
    assert!(denied(&s)[0].contains("explicit time zone"));
    s.time_zone = Some("Europe/Paris");
    assert!(plan(&s, day()).is_ok());
    let long = "x".repeat(45);
    let mut s = spec("0 5 * * *", Some(10), None);
    s.name = &long;
    assert!(denied(&s)[0].starts_with("metadata.name: Invalid value:"));
    let ok = "x".repeat(44);
    s.name = &ok;
    assert!(plan(&s, day()).is_ok());
}

#[test]
fn never_fires() {
    assert!(denied(&spec("0 0 30 2 *", Some(10), None))[0].contains("fires never"));
}
