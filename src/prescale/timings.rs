//! The timings of a primed pod, read from its Events as upstream's pod
//! controller reads them (`pod_controller.go`): how long the pod took to
//! be scheduled, how long the wait container ran, how long the workload
//! took to start after it, and how far from its run the workload started.
//!
//! Classified as upstream does: `Scheduled` from anyone; from the kubelet,
//! `Started` on the wait container, `Pulling`/`Pulled` on any other
//! container (the wait container has exited), `Started` on any other
//! container. Where several events of a kind exist, the earliest counts.
//!
//! Where batchgate differs, on purpose:
//! - an event's instant is its `lastTimestamp`, else its series' last
//!   observation, else its `eventTime`: the scheduler writes through
//!   `events.k8s.io/v1`, which leaves `lastTimestamp` empty, so upstream's
//!   `timeToSchedule` came out as the pod's age since year 1;
//! - each transition is reported once per pod (upstream: when one of its
//!   events is newer than the newest it had seen, which an unordered list
//!   can repeat or miss);
//! - the delay of the workload is measured from the run the pod was primed
//!   for, read from its wait container's arguments
//!   ([`super::instant::wait`]), not from the first run after the pod's
//!   creation, which is a period late for a pod created after its run;
//! - events trail the pod's status: a pass that finds the pod further on
//!   than its events looks again shortly (upstream waited for the pod's
//!   next change, which may never come).
//!
//! Pure: the pod and its events are JSON, the clock is a parameter.

use chrono::DateTime;
use serde_json::Value;

use super::{
    cron::Schedule,
    cronjob::INIT_CONTAINER,
    instant::{wait, Wait},
    zone,
};

/// One of the four timings, in upstream's order and names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transition {
    /// Creation to the `Scheduled` event.
    ToSchedule,
    /// The wait container's start to the first pull of a workload image.
    InitContainerRan,
    /// That pull to the workload's start.
    ToStartWorkload,
    /// The run the pod was primed for to the workload's start (negative:
    /// early).
    DelayOfWorkload,
}

impl Transition {
    pub const ALL: [Transition; 4] = [
        Transition::ToSchedule,
        Transition::InitContainerRan,
        Transition::ToStartWorkload,
        Transition::DelayOfWorkload,
    ];

    /// Upstream's name, in its Events.
    pub fn name(self) -> &'static str {
        match self {
            Transition::ToSchedule => "timeToSchedule",
            Transition::InitContainerRan => "timeInitContainerRan",
            Transition::ToStartWorkload => "timeToStartWorkload",
            Transition::DelayOfWorkload => "timeDelayOfWorkload",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The transitions already reported for a pod.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reported(u8);

impl Reported {
    pub fn has(self, t: Transition) -> bool {
        self.0 & t.bit() != 0
    }

    pub fn with(self, t: Transition) -> Reported {
        Reported(self.0 | t.bit())
    }

    pub fn all(self) -> bool {
        Transition::ALL.iter().all(|t| self.has(*t))
    }
}

/// What a pod's events say happened, as instants in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Seen {
    scheduled: Option<i64>,
    init_started: Option<i64>,
    init_finished: Option<i64>,
    workload_started: Option<i64>,
}

/// How long to wait before looking again at a pod whose status is ahead
/// of its events, and for how long after its last change to keep looking.
pub const RECHECK_SECS: u64 = 10;
pub const RECHECK_FOR_SECS: i64 = 120;

/// One pass over a primed pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// Newly observed transitions, signed microseconds.
    pub observed: Vec<(Transition, i64)>,
    /// A timing that could not be computed (upstream's partial failure).
    pub warning: Option<String>,
    /// Everything reported for this pod after this pass.
    pub reported: Reported,
    /// Look again after this many seconds: the pod is ahead of its events.
    pub recheck: Option<u64>,
}

/// An RFC 3339 instant in microseconds.
fn micros(v: &Value) -> Option<i64> {
    let t = DateTime::parse_from_rfc3339(v.as_str()?).ok()?;
    Some(t.timestamp_micros())
}

/// When an event last happened, whichever API wrote it.
fn instant(e: &Value) -> Option<i64> {
    micros(&e["lastTimestamp"])
        .or_else(|| micros(&e["series"]["lastObservedTime"]))
        .or_else(|| micros(&e["eventTime"]))
        .or_else(|| micros(&e["firstTimestamp"]))
}

/// The wait container's field path, as the kubelet writes it.
fn init_field_path() -> String {
    format!("spec.initContainers{{{INIT_CONTAINER}}}")
}

fn seen(events: &[Value]) -> Seen {
    let init = init_field_path();
    let mut s = Seen::default();
    let earliest = |slot: &mut Option<i64>, at: Option<i64>| {
        if let Some(at) = at {
            *slot = Some(slot.map_or(at, |t| t.min(at)));
        }
    };
    for e in events {
        let reason = e["reason"].as_str().unwrap_or_default();
        let at = instant(e);
        if reason == "Scheduled" {
            earliest(&mut s.scheduled, at);
            continue;
        }
        let component = e["source"]["component"]
            .as_str()
            .or_else(|| e["reportingComponent"].as_str())
            .unwrap_or_default();
        if component != "kubelet" {
            continue;
        }
        let on_init = e["involvedObject"]["fieldPath"].as_str() == Some(init.as_str());
        match (reason, on_init) {
            ("Started", true) => earliest(&mut s.init_started, at),
            ("Pulling" | "Pulled", false) => earliest(&mut s.init_finished, at),
            ("Started", false) => earliest(&mut s.workload_started, at),
            _ => {}
        }
    }
    s
}

/// The run this pod was primed for: from its wait container's arguments
/// when it has them, else (upstream's rule) the first run of `schedule`
/// after the pod's creation. Seconds.
fn expected_run(
    pod: &Value,
    schedule: &str,
    time_zone: Option<&str>,
    created: i64,
) -> Result<i64, String> {
    let failed = |e: String| {
        format!("Parital failure generating transition times, failed to parse CRON Schedule: {e}")
    };
    let args = wait_args(pod);
    let real_text = args.schedule.as_deref().unwrap_or(schedule);
    let real = Schedule::parse(real_text).map_err(|e| failed(e.to_string()))?;
    let primer = match args.primer.as_deref() {
        Some(p) => Some(Schedule::parse(p).map_err(|e| failed(e.to_string()))?),
        None => None,
    };
    let tz_name = args.time_zone.as_deref().or(time_zone);
    let tz = zone(tz_name).ok_or_else(|| failed(format!("unknown time zone {tz_name:?}")))?;
    match wait(&real, primer.as_ref(), tz, created, args.max_wait) {
        Wait::Until(t) | Wait::Passed { run: t } => Ok(t),
        Wait::NoRunInWindow { next_run, .. } => next_run.ok_or_else(|| {
            failed(format!(
                "no run of {real_text:?} follows the pod's creation within five years"
            ))
        }),
    }
}

#[derive(Default)]
struct WaitArgs {
    schedule: Option<String>,
    primer: Option<String>,
    time_zone: Option<String>,
    max_wait: Option<i64>,
}

fn wait_args(pod: &Value) -> WaitArgs {
    let mut out = WaitArgs::default();
    let Some(init) = pod["spec"]["initContainers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == INIT_CONTAINER))
    else {
        return out;
    };
    let args: Vec<&str> = init["args"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for pair in args.windows(2) {
        let v = Some(pair[1].to_string());
        match pair[0] {
            "--schedule" => out.schedule = v,
            "--primer-schedule" => out.primer = v,
            "--time-zone" => out.time_zone = v,
            "--max-wait-minutes" => out.max_wait = pair[1].parse::<i64>().ok().map(|m| m * 60),
            _ => {}
        }
    }
    out
}

/// What the pod's status shows that its events may not yet: bound, the
/// wait container started, a workload container started.
fn ahead_of_events(pod: &Value, s: &Seen) -> bool {
    let status = &pod["status"];
    let started = |list: &Value, init: bool| {
        list.as_array().is_some_and(|cs| {
            cs.iter().any(|c| {
                (c["name"] == INIT_CONTAINER) == init
                    && (c["state"].get("running").is_some()
                        || c["state"].get("terminated").is_some())
            })
        })
    };
    (pod["spec"]["nodeName"].is_string() && s.scheduled.is_none())
        || (started(&status["initContainerStatuses"], true) && s.init_started.is_none())
        || (started(&status["containerStatuses"], false) && s.workload_started.is_none())
}

/// The pod's last change of state, in seconds.
fn last_change(pod: &Value) -> Option<i64> {
    let mut last = micros(&pod["metadata"]["creationTimestamp"]);
    for c in pod["status"]["conditions"].as_array().into_iter().flatten() {
        if let Some(t) = micros(&c["lastTransitionTime"]) {
            last = Some(last.map_or(t, |l| l.max(t)));
        }
    }
    last.map(|t| t / 1_000_000)
}

fn terminal(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// One pass: the transitions the events now show that were not reported
/// yet. `schedule` and `time_zone` are the PreScaledCronJob's (used when
/// the pod has no wait container arguments); `now` is Unix seconds.
pub fn pass(
    pod: &Value,
    events: &[Value],
    schedule: &str,
    time_zone: Option<&str>,
    reported: Reported,
    now: i64,
) -> Pass {
    let s = seen(events);
    let mut out = Pass {
        observed: Vec::new(),
        warning: None,
        reported,
        recheck: None,
    };
    let created = micros(&pod["metadata"]["creationTimestamp"]);
    for t in Transition::ALL {
        if reported.has(t) {
            continue;
        }
        let took = match t {
            Transition::ToSchedule => s.scheduled.zip(created).map(|(a, c)| a - c),
            Transition::InitContainerRan => s.init_finished.zip(s.init_started).map(|(f, b)| f - b),
            Transition::ToStartWorkload => {
                s.workload_started.zip(s.init_finished).map(|(w, f)| w - f)
            }
            Transition::DelayOfWorkload => match s.workload_started.zip(created) {
                None => None,
                Some((w, c)) => {
                    match expected_run(pod, schedule, time_zone, c.div_euclid(1_000_000)) {
                        Ok(run) => Some(w - run * 1_000_000),
                        Err(e) => {
                            out.warning = Some(e);
                            None
                        }
                    }
                }
            },
        };
        if let Some(d) = took {
            out.observed.push((t, d));
            out.reported = out.reported.with(t);
        }
    }
    let still = last_change(pod).is_some_and(|t| now - t < RECHECK_FOR_SECS);
    if !out.reported.all() && !terminal(pod) && still && ahead_of_events(pod, &s) {
        out.recheck = Some(RECHECK_SECS);
    }
    out
}

/// `durationtype` and the value observed: upstream records the absolute
/// value and says whether it was early.
pub fn direction(micros: i64) -> (&'static str, f64) {
    let secs = micros as f64 / 1e6;
    if micros < 0 {
        ("early", -secs)
    } else {
        ("late", secs)
    }
}

/// `nodepool`: the pod's `agentpool` node selector (AKS's node pools),
/// `noneset` without one.
pub fn node_pool(pod: &Value) -> &str {
    pod["spec"]["nodeSelector"]["agentpool"]
        .as_str()
        .unwrap_or("noneset")
}

/// Go's `time.Duration.String()`, which upstream's Events print:
/// `2s`, `1m5s`, `1h0m0s`, `1.5s`, `250ms`, `-5s`, `0s`.
pub fn go_duration(micros: i64) -> String {
    if micros == 0 {
        return "0s".into();
    }
    let sign = if micros < 0 { "-" } else { "" };
    let u = micros.unsigned_abs();
    if u < 1_000_000 {
        let (whole, frac, unit) = if u < 1_000 {
            (u, 0, "µs")
        } else {
            (u / 1_000, u % 1_000, "ms")
        };
        return format!("{sign}{whole}{}{unit}", fraction(frac, 3));
    }
    let (secs, frac) = (u / 1_000_000, u % 1_000_000);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let s = format!("{s}{}s", fraction(frac, 6));
    match (h, m) {
        (0, 0) => format!("{sign}{s}"),
        (0, m) => format!("{sign}{m}m{s}"),
        (h, m) => format!("{sign}{h}h{m}m{s}"),
    }
}

/// `.ddd` with trailing zeros dropped, or nothing.
fn fraction(frac: u64, digits: usize) -> String {
    if frac == 0 {
        return String::new();
    }
    let f = format!("{frac:0digits$}");
    format!(".{}", f.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Upstream's fixtures (`testdata/events/*.json`): created 12:03:05,
    /// scheduled 12:03:07, wait container started 12:03:08, the workload's
    /// image pulled from 12:04:03, the workload started 12:04:05.
    fn pod() -> Value {
        json!({"metadata": {"name": "p", "creationTimestamp": "2020-01-29T12:03:05Z"},
               "spec": {"initContainers": [{"name": INIT_CONTAINER}], "containers": [{"name": "w"}]}})
    }

    fn kubelet(reason: &str, container: &str, at: &str) -> Value {
        json!({"reason": reason, "source": {"component": "kubelet"},
               "involvedObject": {"fieldPath": container}, "lastTimestamp": at, "firstTimestamp": at})
    }

    fn events() -> Vec<Value> {
        vec![
            json!({"reason": "Scheduled", "source": {"component": "default-scheduler"},
                   "lastTimestamp": "2020-01-29T12:03:07Z"}),
            kubelet("Started", &init_field_path(), "2020-01-29T12:03:08Z"),
            kubelet("Pulling", "spec.containers{w}", "2020-01-29T12:04:03Z"),
            kubelet("Pulled", "spec.containers{w}", "2020-01-29T12:04:04Z"),
            kubelet("Started", "spec.containers{w}", "2020-01-29T12:04:05Z"),
        ]
    }

    fn names(p: &Pass) -> Vec<(&'static str, String)> {
        p.observed
            .iter()
            .map(|(t, d)| (t.name(), go_duration(*d)))
            .collect()
    }

    #[test]
    fn upstreams_fixture_gives_upstreams_timings() {
        // A pod without wait arguments: upstream's rule, the first run of
        // `*/1` after creation (12:04:00).
        let p = pass(
            &pod(),
            &events(),
            "*/1 * * * *",
            None,
            Reported::default(),
            0,
        );
        assert_eq!(
            names(&p),
            [
                ("timeToSchedule", "2s".into()),
                ("timeInitContainerRan", "55s".into()),
                ("timeToStartWorkload", "2s".into()),
                ("timeDelayOfWorkload", "5s".into()),
            ]
        );
        assert!(p.reported.all());
        assert_eq!(p.warning, None);
        // Reported once: a later pass over the same events says nothing.
        let again = pass(&pod(), &events(), "*/1 * * * *", None, p.reported, 0);
        assert!(again.observed.is_empty());
    }

    #[test]
    fn only_what_was_not_reported_is_reported() {
        // Upstream's second case: the scheduling already seen.
        let before = Reported::default().with(Transition::ToSchedule);
        let p = pass(&pod(), &events(), "*/1 * * * *", None, before, 0);
        assert_eq!(
            names(&p)[..2],
            [
                ("timeInitContainerRan", "55s".into()),
                ("timeToStartWorkload", "2s".into()),
            ]
        );
        // Events still to come: what they allow, nothing more.
        let partial = &events()[..3];
        let p = pass(&pod(), partial, "*/1 * * * *", None, Reported::default(), 0);
        assert_eq!(
            names(&p),
            [
                ("timeToSchedule", "2s".into()),
                ("timeInitContainerRan", "55s".into()),
            ]
        );
        let rest = pass(&pod(), &events(), "*/1 * * * *", None, p.reported, 0);
        assert_eq!(
            names(&rest),
            [
                ("timeToStartWorkload", "2s".into()),
                ("timeDelayOfWorkload", "5s".into()),
            ]
        );
    }

    #[test]
    fn events_that_are_not_the_pods_progress_are_ignored() {
        // Upstream's `uninterestingEvent.json`: the controller's own
        // Metrics event; and the wait container's own image pull.
        let noise = vec![
            json!({"reason": "Metrics", "source": {"component": "pod-controller"},
                   "lastTimestamp": "2020-01-29T12:03:09Z"}),
            kubelet("Pulling", &init_field_path(), "2020-01-29T12:03:06Z"),
            kubelet("Killing", "spec.containers{w}", "2020-01-29T12:03:06Z"),
            json!({"reason": "Started", "source": {"component": "someone"},
                   "involvedObject": {"fieldPath": "spec.containers{w}"},
                   "lastTimestamp": "2020-01-29T12:03:06Z"}),
        ];
        assert_eq!(seen(&noise), Seen::default());
    }

    #[test]
    fn the_schedulers_events_api_instant_counts() {
        // kube-scheduler writes events.k8s.io/v1: no lastTimestamp.
        let ev = vec![
            json!({"reason": "Scheduled", "reportingComponent": "default-scheduler",
                              "eventTime": "2020-01-29T12:03:06.250000Z"}),
        ];
        let p = pass(&pod(), &ev, "*/1 * * * *", None, Reported::default(), 0);
        assert_eq!(names(&p), [("timeToSchedule", "1.25s".into())]);
    }

    #[test]
    fn the_delay_is_from_the_run_the_pod_was_primed_for() {
        // Primed at 02:55 for 03:00, created late at 03:00:20 (a slow
        // start): its run is 03:00, not the next day's.
        let mut p = pod();
        p["metadata"]["creationTimestamp"] = json!("2026-11-29T03:00:20Z");
        p["spec"]["initContainers"][0]["args"] = json!([
            "prescale-wait",
            "--schedule",
            "0 3 * * *",
            "--primer-schedule",
            "55 2 * * *",
            "--max-wait-minutes",
            "5"
        ]);
        let ev = vec![kubelet(
            "Started",
            "spec.containers{w}",
            "2026-11-29T03:00:21Z",
        )];
        let out = pass(&p, &ev, "0 3 * * *", None, Reported::default(), 0);
        assert_eq!(names(&out), [("timeDelayOfWorkload", "21s".into())]);
        // Early: a negative delay, recorded as its absolute value.
        let ev = vec![kubelet(
            "Started",
            "spec.containers{w}",
            "2026-11-29T02:59:58Z",
        )];
        p["metadata"]["creationTimestamp"] = json!("2026-11-29T02:55:01Z");
        let out = pass(&p, &ev, "0 3 * * *", None, Reported::default(), 0);
        assert_eq!(names(&out), [("timeDelayOfWorkload", "-2s".into())]);
        assert_eq!(direction(out.observed[0].1), ("early", 2.0));
        assert_eq!(direction(5_000_000), ("late", 5.0));
    }

    #[test]
    fn a_schedule_that_does_not_parse_is_upstreams_partial_failure() {
        let ev = vec![kubelet(
            "Started",
            "spec.containers{w}",
            "2020-01-29T12:04:05Z",
        )];
        let out = pass(&pod(), &ev, "not a schedule", None, Reported::default(), 0);
        assert!(out.observed.is_empty());
        let w = out.warning.unwrap();
        assert!(
            w.starts_with(
                "Parital failure generating transition times, failed to parse CRON Schedule: "
            ),
            "{w}"
        );
        assert!(!out.reported.has(Transition::DelayOfWorkload));
    }

    #[test]
    fn a_pod_ahead_of_its_events_is_looked_at_again_for_a_while() {
        let mut p = pod();
        p["spec"]["nodeName"] = json!("n");
        p["status"] = json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "lastTransitionTime": "2020-01-29T12:03:06Z"}]});
        let created = 1_580_299_385; // 12:03:05
        let at = |s| {
            pass(
                &p,
                &[],
                "*/1 * * * *",
                None,
                Reported::default(),
                created + s,
            )
        };
        assert_eq!(
            at(30).recheck,
            Some(RECHECK_SECS),
            "bound, no Scheduled event yet"
        );
        assert_eq!(at(200).recheck, None, "two minutes after its last change");
        // Events caught up: nothing to wait for.
        let ev = &events()[..1];
        let caught = pass(
            &p,
            ev,
            "*/1 * * * *",
            None,
            Reported::default(),
            created + 30,
        );
        assert_eq!(caught.recheck, None);
        // The workload running without its Started event; finished pods
        // are let go.
        p["status"]["containerStatuses"] = json!([{"name": "w", "state": {"running": {}}}]);
        let run = pass(
            &p,
            ev,
            "*/1 * * * *",
            None,
            Reported::default(),
            created + 30,
        );
        assert_eq!(run.recheck, Some(RECHECK_SECS));
        p["status"]["phase"] = json!("Succeeded");
        let done = pass(
            &p,
            ev,
            "*/1 * * * *",
            None,
            Reported::default(),
            created + 30,
        );
        assert_eq!(done.recheck, None);
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        for (us, s) in [
            (0, "0s"),
            (2_000_000, "2s"),
            (55_000_000, "55s"),
            (65_000_000, "1m5s"),
            (3_600_000_000, "1h0m0s"),
            (3_723_500_000, "1h2m3.5s"),
            (1_250_000, "1.25s"),
            (250_000, "250ms"),
            (1_500, "1.5ms"),
            (7, "7µs"),
            (-5_000_000, "-5s"),
            (-61_000_000, "-1m1s"),
        ] {
            assert_eq!(go_duration(us), s, "{us}");
        }
    }

    #[test]
    fn the_node_pool_is_the_agentpool_selector() {
        assert_eq!(node_pool(&pod()), "noneset");
        let mut p = pod();
        p["spec"]["nodeSelector"] = json!({"agentpool": "gpu"});
        assert_eq!(node_pool(&p), "gpu");
    }
}
