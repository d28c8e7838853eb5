use chrono::DateTime;
use chrono_tz::Tz;

use super::*;

fn s(spec: &str) -> Schedule {
    Schedule::parse(spec).unwrap()
}

fn at(rfc3339: &str) -> i64 {
    DateTime::parse_from_rfc3339(rfc3339).unwrap().timestamp()
}

fn show(unix: i64, tz: Tz) -> String {
    DateTime::from_timestamp(unix, 0)
        .unwrap()
        .with_timezone(&tz)
        .to_rfc3339()
}

fn nexts(spec: &str, tz: Tz, from: &str, n: usize) -> Vec<String> {
    let sched = s(spec);
    let mut t = at(from);
    let mut out = Vec::new();
    for _ in 0..n {
        t = next(&sched, tz, t).unwrap();
        out.push(show(t, tz));
    }
    out
}

#[test]
fn next_in_utc() {
    assert_eq!(
        nexts("5/30 * * * *", Tz::UTC, "2026-11-21T13:27:00Z", 3),
        [
            "2026-11-21T13:35:00+00:00",
            "2026-11-21T14:05:00+00:00",
            "2026-11-21T14:35:00+00:00"
        ]
    );
    // Strictly after: a run exactly at `after` is not returned.
    assert_eq!(
        nexts("0 0 * * *", Tz::UTC, "2026-11-21T00:00:00Z", 1),
        ["2026-11-22T00:00:00+00:00"]
    );
    // The 13th or a Friday (both fields restricted).
    assert_eq!(
        nexts("0 9 13 * 5", Tz::UTC, "2026-11-01T00:00:00Z", 3),
        [
            "2026-11-06T09:00:00+00:00",
            "2026-11-13T09:00:00+00:00",
            "2026-11-20T09:00:00+00:00"
        ]
    );
    // Leap day.
    assert_eq!(
        nexts("0 0 29 2 *", Tz::UTC, "2026-11-21T00:00:00Z", 1),
        ["2028-02-29T00:00:00+00:00"]
    );
    assert_eq!(
        next(&s("0 0 30 2 *"), Tz::UTC, at("2026-01-01T00:00:00Z")),
        None
    );
}

#[test]
fn time_zone_is_honoured() {
    let berlin: Tz = "Europe/Berlin".parse().unwrap();
    assert_eq!(
        nexts("0 9 * * *", berlin, "2026-11-21T09:30:00Z", 1),
        ["2026-11-22T09:00:00+01:00"]
    );
    let tokyo: Tz = "Asia/Tokyo".parse().unwrap();
    assert_eq!(
        nexts("@daily", tokyo, "2026-11-21T12:00:00Z", 1),
        ["2026-11-22T00:00:00+09:00"]
    );
}

/// Spring forward: Berlin skips 02:00–02:59 on 29 March 2026. A 02:30 run
/// does not happen that day (robfig steps hours as elapsed time, from
/// 01:00 straight to 03:00); the next one is the 30th.
#[test]
fn spring_forward_skips_a_run_in_the_gap() {
    let berlin: Tz = "Europe/Berlin".parse().unwrap();
    assert_eq!(
        nexts("30 2 * * *", berlin, "2026-03-28T03:00:00+01:00", 2),
        ["2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"]
    );
    // An hourly run loses its 02:xx that day and nothing else.
    assert_eq!(
        nexts("15 * * * *", berlin, "2026-03-29T01:00:00+01:00", 2),
        ["2026-03-29T01:15:00+01:00", "2026-03-29T03:15:00+02:00"]
    );
    let ny: Tz = "America/New_York".parse().unwrap();
    assert_eq!(
        nexts("30 2 * * *", ny, "2026-03-07T12:00:00-05:00", 2),
        ["2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"]
    );
}

/// Fall back: Berlin repeats 02:00–02:59 on 25 October 2026, New York
/// repeats 01:00–01:59 on 1 November 2026. A run in the repeated hour
/// happens twice.
#[test]
fn fall_back_runs_twice_in_the_overlap() {
    let berlin: Tz = "Europe/Berlin".parse().unwrap();
    assert_eq!(
        nexts("30 2 * * *", berlin, "2026-10-25T00:00:00+02:00", 3),
        [
            "2026-10-25T02:30:00+02:00",
            "2026-10-25T02:30:00+01:00",
            "2026-10-26T02:30:00+01:00"
        ]
    );
    let ny: Tz = "America/New_York".parse().unwrap();
    assert_eq!(
        nexts("30 1 * * *", ny, "2026-11-01T00:00:00-04:00", 3),
        [
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-02T01:30:00-05:00"
        ]
    );
    // A run outside the repeated hour happens once.
    assert_eq!(
        nexts("30 3 * * *", berlin, "2026-10-25T00:00:00+02:00", 2),
        ["2026-10-25T03:30:00+01:00", "2026-10-26T03:30:00+01:00"]
    );
}

#[test]
fn previous_is_the_last_fire_at_or_before() {
    let p = s("0,30 * * * *");
    assert_eq!(
        show(
            previous(&p, Tz::UTC, at("2026-11-21T10:07:00Z")).unwrap(),
            Tz::UTC
        ),
        "2026-11-21T10:00:00+00:00"
    );
    assert_eq!(
        show(
            previous(&p, Tz::UTC, at("2026-11-21T10:30:00Z")).unwrap(),
            Tz::UTC
        ),
        "2026-11-21T10:30:00+00:00"
    );
    let monthly = s("0 0 1 * *");
    assert_eq!(
        show(
            previous(&monthly, Tz::UTC, at("2026-11-21T10:07:00Z")).unwrap(),
            Tz::UTC
        ),
        "2026-11-01T00:00:00+00:00"
    );
}

/// The upstream sample: runs at :05 and :35, primers at :00 and :30.
#[test]
fn wait_for_the_run_of_this_primer() {
    let real = s("5/30 * * * *");
    let primer = s("0,30 * * * *");
    let w = |started: &str| wait(&real, Some(&primer), Tz::UTC, at(started), Some(300));
    assert_eq!(
        w("2026-11-21T10:00:20Z"),
        Wait::Until(at("2026-11-21T10:05:00Z"))
    );
    // Started late (a slow scale-up): still this primer's run, now passed.
    assert_eq!(
        w("2026-11-21T10:07:00Z"),
        Wait::Passed {
            run: at("2026-11-21T10:05:00Z")
        }
    );
    // Upstream's rule (next run after the pod's own time) would have held
    // the nodes until 10:35 and started the 10:05 workload half an hour late.
    assert_eq!(
        wait(&real, None, Tz::UTC, at("2026-11-21T10:07:00Z"), None),
        Wait::Until(at("2026-11-21T10:35:00Z"))
    );
}

/// A primer in front of a run the spring-forward gap removes: waiting for
/// the next run would hold the nodes a day; the workload starts now.
#[test]
fn wait_when_daylight_saving_removes_the_run() {
    let berlin: Tz = "Europe/Berlin".parse().unwrap();
    let real = s("30 2 * * *");
    let primer = s("50 1 * * *");
    assert_eq!(
        wait(
            &real,
            Some(&primer),
            berlin,
            at("2026-03-29T01:50:05+01:00"),
            Some(40 * 60)
        ),
        Wait::NoRunInWindow {
            primer: at("2026-03-29T01:50:00+01:00"),
            next_run: Some(at("2026-03-30T02:30:00+02:00")),
        }
    );
    // The day before, the same pair is ordinary.
    assert_eq!(
        wait(
            &real,
            Some(&primer),
            berlin,
            at("2026-03-28T01:50:05+01:00"),
            Some(40 * 60)
        ),
        Wait::Until(at("2026-03-28T02:30:00+01:00"))
    );
}

/// Fall back with a primer in the repeated hour: it fires twice; the second
/// pod waits for the run, the first finds no run within its window.
#[test]
fn wait_when_the_primer_is_in_the_repeated_hour() {
    let berlin: Tz = "Europe/Berlin".parse().unwrap();
    let real = s("5 3 * * *");
    let primer = s("55 2 * * *");
    let w = |started: &str| wait(&real, Some(&primer), berlin, at(started), Some(600));
    assert_eq!(
        w("2026-10-25T02:55:10+01:00"),
        Wait::Until(at("2026-10-25T03:05:00+01:00"))
    );
    assert_eq!(
        w("2026-10-25T02:55:10+02:00"),
        Wait::NoRunInWindow {
            primer: at("2026-10-25T02:55:00+02:00"),
            next_run: Some(at("2026-10-25T03:05:00+01:00")),
        }
    );
}
