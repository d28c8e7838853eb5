//! The cronjob-prescaler's metrics (its `controllers/metrics.go`), served
//! beside batchgate's own on `/metrics` so its dashboards read batchgate
//! unchanged: names, help, labels and buckets as upstream's (the counter
//! and the histograms differ in prefix there too).
//!
//! `action="delete"` is never counted: upstream counted it when it added
//! its finalizer; batchgate adds none (the garbage collector deletes the
//! CronJob through its owner reference).

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    /// `create` or `update`.
    pub action: &'static str,
    /// `success` or `failure`.
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TimingLabels {
    /// The PreScaledCronJob's name.
    pub prescalecron: String,
    /// The pod's `agentpool` node selector, or `noneset`.
    pub nodepool: String,
    /// `early` or `late`.
    pub durationtype: &'static str,
}

type Timings = Family<TimingLabels, Histogram, fn() -> Histogram>;

/// client_golang's `ExponentialBuckets(2, 1.32, 28)`, multiplied out as Go
/// does (a power would differ in the last bits, and so in `le`).
fn timing_buckets() -> Histogram {
    let mut b = Vec::with_capacity(28);
    let mut v = 2.0f64;
    for _ in 0..28 {
        b.push(v);
        v *= 1.32;
    }
    Histogram::new(b)
}

/// Upstream's transitions, by the names its pod controller gives them,
/// with each histogram's name and help.
const TIMINGS: [(&str, &str, &str); 4] = [
    (
        "timeToSchedule",
        "prescalecronjoboperator_cronjob_time_to_schedule",
        "How long did it take to schedule the pod used to execute and instance of the CRONJob in secs",
    ),
    (
        "timeInitContainerRan",
        "prescalecronjoboperator_cronjob_time_init_container_ran",
        "How long did the warmup container run waiting for the cron schedule to trigger in secs",
    ),
    (
        "timeToStartWorkload",
        "prescalecronjoboperator_cronjob_time_to_start_workload",
        "How long did it take to start the real workload after warmup container stopped in secs",
    ),
    (
        "timeDelayOfWorkload",
        "prescalecronjoboperator_cronjob_time_delay_of_workload",
        "How long did after it's scheduled start time did the workload actually start in secs",
    ),
];

pub struct PrescaleMetrics {
    pub actions: Family<ActionLabels, Counter>,
    timings: [Timings; 4],
}

impl PrescaleMetrics {
    pub fn register(root: &mut Registry) -> Self {
        let actions = Family::<ActionLabels, Counter>::default();
        // The client appends `_total`.
        root.register(
            "prescaledcronjoboperator_cronjob_action",
            "Number of CronJob objects created by controller",
            actions.clone(),
        );
        let timings: [Timings; 4] =
            std::array::from_fn(|_| Family::new_with_constructor(timing_buckets as fn() -> _));
        for ((_, name, help), family) in TIMINGS.iter().zip(&timings) {
            root.register(*name, *help, family.clone());
        }
        PrescaleMetrics { actions, timings }
    }

    /// A CronJob write: `create` or `update`, and whether it landed.
    pub fn action(&self, action: &'static str, ok: bool) {
        let outcome = if ok { "success" } else { "failure" };
        self.actions
            .get_or_create(&ActionLabels { action, outcome })
            .inc();
    }

    /// One transition of a primed pod (upstream's name for it), in
    /// seconds; `false` when no histogram has that name.
    pub fn timing(&self, transition: &str, labels: TimingLabels, secs: f64) -> bool {
        let Some(i) = TIMINGS.iter().position(|(t, _, _)| *t == transition) else {
            return false;
        };
        self.timings[i].get_or_create(&labels).observe(secs);
        true
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;

    use super::*;

    fn labels(durationtype: &'static str) -> TimingLabels {
        TimingLabels {
            prescalecron: "nightly".into(),
            nodepool: "noneset".into(),
            durationtype,
        }
    }

    #[test]
    fn upstreams_names_labels_and_buckets() {
        let mut root = Registry::default();
        let m = PrescaleMetrics::register(&mut root);
        m.action("create", true);
        m.action("update", false);
        assert!(m.timing("timeToSchedule", labels("late"), 2.0));
        assert!(!m.timing("timeToLunch", labels("late"), 1.0));
        for (t, _, _) in &TIMINGS[1..] {
            assert!(m.timing(t, labels("early"), 1.0));
        }
        let mut out = String::new();
        encode(&mut out, &root).unwrap();
        assert!(out.contains(
            "prescaledcronjoboperator_cronjob_action_total{action=\"create\",outcome=\"success\"} 1"
        ), "{out}");
        assert!(out.contains(
            "prescaledcronjoboperator_cronjob_action_total{action=\"update\",outcome=\"failure\"} 1"
        ));
        let bucket = |le: &str| {
            format!("prescalecronjoboperator_cronjob_time_to_schedule_bucket{{le=\"{le}\",prescalecron=\"nightly\",nodepool=\"noneset\",durationtype=\"late\"}} 1")
        };
        assert!(out.contains(&bucket("2.0")), "{out}");
        assert!(out.contains(&bucket("+Inf")), "{out}");
        // 28 bounds and +Inf; the last near an hour, as upstream says.
        let bounds = out
            .lines()
            .filter(|l| l.starts_with("prescalecronjoboperator_cronjob_time_to_schedule_bucket"))
            .count();
        assert_eq!(bounds, 29);
        let last = 2.0 * 1.32f64.powi(27);
        assert!((3500.0..3700.0).contains(&last), "{last}");
        for (_, name, _) in TIMINGS {
            assert!(out.contains(&format!("# TYPE {name} histogram")), "{out}");
        }
    }
}
