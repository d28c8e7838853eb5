//! Admission fair sharing (`pkg/util/admissionfairsharing`, the AFS usage
//! ledger of `pkg/cache/queue/afs`): inside a ClusterQueue with
//! `admissionScope.admissionMode: UsageBasedAdmissionFairSharing`, pending
//! workloads are taken in the order of their LocalQueue's usage — what the
//! queue's admitted workloads have held, decayed with a half-life, plus a
//! penalty for each admission not yet sampled — weighted by resource and
//! divided by the LocalQueue's `fairSharing.weight`.
//!
//! Amounts are in base units (cores, bytes) as `f64`, each product rounded
//! down to nine decimals as Kueue's `MulByFloat` does. Time is a parameter
//! (milliseconds); nothing here reads a clock.

use std::collections::BTreeMap;

/// Resource name → amount in base units.
pub type Amounts = BTreeMap<String, f64>;

/// The Configuration's `admissionFairSharing`.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionFairSharing {
    /// `usageHalfLifeTime` in seconds; 0 forgets usage at once.
    pub usage_half_life_time: f64,
    /// `usageSamplingInterval` in seconds (Kueue's default: 5 minutes).
    pub usage_sampling_interval: f64,
    /// `resourceWeights`: a resource not named weighs 1.
    pub resource_weights: BTreeMap<String, f64>,
}

/// `calculateAlphaRate`: the share of the new sample after `sampling`
/// seconds with the given half-life.
pub fn alpha(sampling: f64, half_life: f64) -> f64 {
    if half_life == 0.0 {
        return 0.0;
    }
    1.0 - 0.5f64.powf(sampling / half_life)
}

/// `MulByFloat`: scaled, rounded down to nine decimals.
fn scale(amounts: &Amounts, factor: f64) -> Amounts {
    amounts
        .iter()
        .map(|(r, v)| (r.clone(), ((v * factor) * 1e9).floor() / 1e9))
        .collect()
}

fn sum(a: &Amounts, b: &Amounts) -> Amounts {
    let mut out = a.clone();
    for (r, v) in b {
        *out.entry(r.clone()).or_default() += v;
    }
    out
}

/// `CalculateDecayedConsumed`: `old` decayed over `elapsed` seconds with
/// `current` folded in.
pub fn decayed_consumed(old: &Amounts, current: &Amounts, elapsed: f64, half_life: f64) -> Amounts {
    let a = alpha(elapsed, half_life);
    sum(&scale(old, 1.0 - a), &scale(current, a))
}

/// `CalculateEntryPenalty`: what an admission adds to its LocalQueue's usage
/// until the next sample counts it.
pub fn entry_penalty(requests: &Amounts, afs: &AdmissionFairSharing) -> Amounts {
    scale(
        requests,
        alpha(afs.usage_sampling_interval, afs.usage_half_life_time),
    )
}

/// `CalculateUsage`: the weighted sum of consumed and penalty, divided by
/// the LocalQueue's weight (a weight of 0 or less puts the queue last).
pub fn usage(
    consumed: &Amounts,
    penalty: &Amounts,
    lq_weight: f64,
    resource_weights: &BTreeMap<String, f64>,
) -> f64 {
    let total: f64 = sum(consumed, penalty)
        .iter()
        .map(|(r, v)| resource_weights.get(r).copied().unwrap_or(1.0) * v)
        .sum();
    if lq_weight <= 0.0 {
        return f64::INFINITY;
    }
    total / lq_weight
}

/// One LocalQueue's entry of the usage ledger.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalQueueUsage {
    /// `status.fairSharing.admissionFairSharingStatus.consumedResources`.
    pub consumed: Amounts,
    /// Its `lastUpdate` (ms).
    pub last_update: i64,
    /// Penalties of admissions since the last sample, by workload key.
    pub penalties: BTreeMap<String, Amounts>,
}

impl LocalQueueUsage {
    pub fn pending_penalty(&self) -> Amounts {
        self.penalties
            .values()
            .fold(Amounts::new(), |a, p| sum(&a, p))
    }

    /// `PushPenalty`: a workload's reservation, replacing its earlier one.
    pub fn push_penalty(&mut self, workload: &str, penalty: Amounts) {
        self.penalties.insert(workload.to_string(), penalty);
    }

    /// Is a sample due at `now` (the sampling interval has passed, or an
    /// admission waits to be counted)?
    pub fn sample_due(&self, now: i64, afs: &AdmissionFairSharing) -> bool {
        !self.penalties.is_empty()
            || (now - self.last_update) as f64 >= afs.usage_sampling_interval * 1000.0
    }

    /// `reconcileConsumedUsage`: folds what the queue's admitted workloads
    /// hold now into the decayed usage. The admissions it counts no longer
    /// need their penalty.
    pub fn sample(&mut self, admitted: &Amounts, now: i64, afs: &AdmissionFairSharing) {
        if afs.usage_half_life_time == 0.0 {
            self.consumed.clear();
        } else {
            let elapsed = ((now - self.last_update).max(0)) as f64 / 1000.0;
            self.consumed =
                decayed_consumed(&self.consumed, admitted, elapsed, afs.usage_half_life_time);
        }
        self.last_update = self.last_update.max(now);
        self.penalties.clear();
    }
}

/// An amount as a Kubernetes quantity (DecimalSI, canonical form): the
/// largest suffix that keeps it exact, down to nano-units.
pub fn quantity(v: f64) -> String {
    let nanos = (v * 1e9).round() as i128;
    if nanos == 0 {
        return "0".into();
    }
    const SUFFIXES: [(i128, &str); 10] = [
        (1_000_000_000_000_000_000_000_000_000, "E"),
        (1_000_000_000_000_000_000_000_000, "P"),
        (1_000_000_000_000_000_000_000, "T"),
        (1_000_000_000_000_000_000, "G"),
        (1_000_000_000_000_000, "M"),
        (1_000_000_000_000, "k"),
        (1_000_000_000, ""),
        (1_000_000, "m"),
        (1_000, "u"),
        (1, "n"),
    ];
    for (unit, suffix) in SUFFIXES {
        if nanos % unit == 0 {
            return format!("{}{suffix}", nanos / unit);
        }
    }
    format!("{nanos}n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amounts(pairs: &[(&str, f64)]) -> Amounts {
        pairs.iter().map(|(r, v)| (r.to_string(), *v)).collect()
    }

    const WEEK: f64 = 168.0 * 3600.0;
    const FIVE_MINUTES: f64 = 300.0;

    #[test]
    fn entry_penalty_covers_every_resource() {
        // TestCalculateEntryPenaltyWithDRAResources and
        // TestCalculateEntryPenaltyWithLongHalfLife: every requested
        // resource gets a positive penalty.
        for half_life in [600.0, WEEK] {
            let afs = AdmissionFairSharing {
                usage_half_life_time: half_life,
                usage_sampling_interval: FIVE_MINUTES,
                resource_weights: BTreeMap::new(),
            };
            let p = entry_penalty(&amounts(&[("cpu", 4.0), ("gpu-logical", 2.0)]), &afs);
            assert!(
                p["cpu"] > 0.0 && p["gpu-logical"] > 0.0,
                "{half_life}: {p:?}"
            );
        }
        // 5 minutes of a 10-minute half-life: 1 - 0.5^0.5 of the request.
        let afs = AdmissionFairSharing {
            usage_half_life_time: 600.0,
            usage_sampling_interval: FIVE_MINUTES,
            resource_weights: BTreeMap::new(),
        };
        let p = entry_penalty(&amounts(&[("cpu", 4.0)]), &afs);
        assert!((p["cpu"] - 4.0 * (1.0 - 0.5f64.sqrt())).abs() < 1e-8);
    }

    #[test]
    fn sub_milli_samples_accumulate() {
        // TestCalculateDecayedConsumedAccumulatesSubMilli.
        let current = amounts(&[("cpu", 2.0), ("nvidia.com/gpu", 1.0)]);
        let mut consumed = Amounts::new();
        let mut prev = (0.0, 0.0);
        for sample in 1..=3 {
            consumed = decayed_consumed(&consumed, &current, FIVE_MINUTES, WEEK);
            let now = (consumed["cpu"], consumed["nvidia.com/gpu"]);
            assert!(now.0 > prev.0 && now.1 > prev.1, "sample {sample}: {now:?}");
            prev = now;
        }
    }

    #[test]
    fn decayed_usage_converges_to_usage_from_below() {
        // TestCalculateDecayedConsumedConvergesToUsage: 1 - 0.5^n of the way
        // after n half-lives, within a milli-unit, never above.
        let current = amounts(&[("cpu", 2.0)]);
        let mut consumed = Amounts::new();
        for (half_lives, want) in [(1, 1.0), (2, 1.5), (3, 1.75)] {
            for _ in 0..2016 {
                consumed = decayed_consumed(&consumed, &current, FIVE_MINUTES, WEEK);
            }
            let got = consumed["cpu"];
            assert!((got - want).abs() <= 0.001, "{half_lives}: {got}");
            assert!(got <= 2.0, "{half_lives}: {got} above usage");
        }
    }

    #[test]
    fn large_quantities_stay_positive() {
        // TestCalculateDecayedConsumedKeepsLargeQuantitiesPositive.
        for size in [
            16.0 * 1024f64.powi(3),
            1024f64.powi(4),
            64.0 * 1024f64.powi(4),
        ] {
            let c = decayed_consumed(
                &Amounts::new(),
                &amounts(&[("memory", size)]),
                FIVE_MINUTES,
                WEEK,
            );
            assert!(c["memory"] > 0.0, "{size}");
        }
    }

    #[test]
    fn usage_weighs_resources_and_divides_by_the_queue_weight() {
        // TestCalculateUsageWithDRA.
        let none = BTreeMap::new();
        let w = |pairs: &[(&str, f64)]| -> BTreeMap<String, f64> {
            pairs.iter().map(|(r, v)| (r.to_string(), *v)).collect()
        };
        let two = amounts(&[("gpu-logical", 2.0)]);
        assert_eq!(usage(&two, &Amounts::new(), 1.0, &none), 2.0);
        assert_eq!(
            usage(&two, &Amounts::new(), 1.0, &w(&[("gpu-logical", 3.0)])),
            6.0
        );
        let mixed = amounts(&[("cpu", 4.0), ("gpu-logical", 2.0)]);
        assert_eq!(
            usage(
                &mixed,
                &Amounts::new(),
                1.0,
                &w(&[("cpu", 1.0), ("gpu-logical", 5.0)])
            ),
            14.0
        );
        assert_eq!(
            usage(
                &amounts(&[("gpu-logical", 10.0)]),
                &Amounts::new(),
                1.0,
                &w(&[("gpu-logical", 0.0)])
            ),
            0.0
        );
        // Penalties count with consumption; the weight divides.
        assert_eq!(usage(&two, &two, 2.0, &none), 2.0);
        // A queue of weight 0 goes last, not first (no NaN).
        assert_eq!(
            usage(&Amounts::new(), &Amounts::new(), 0.0, &none),
            f64::INFINITY
        );
    }

    #[test]
    fn a_sample_decays_folds_and_settles_penalties() {
        let afs = AdmissionFairSharing {
            usage_half_life_time: 600.0,
            usage_sampling_interval: 60.0,
            resource_weights: BTreeMap::new(),
        };
        let mut lq = LocalQueueUsage {
            consumed: amounts(&[("cpu", 8.0)]),
            last_update: 0,
            penalties: BTreeMap::new(),
        };
        assert!(!lq.sample_due(59_999, &afs));
        assert!(lq.sample_due(60_000, &afs));
        lq.push_penalty("ns/w", amounts(&[("cpu", 1.0)]));
        lq.push_penalty("ns/w", amounts(&[("cpu", 2.0)]));
        assert_eq!(lq.pending_penalty(), amounts(&[("cpu", 2.0)]));
        assert!(lq.sample_due(1, &afs), "an unsampled admission is due");
        // One half-life later with nothing admitted: half is left.
        lq.sample(&Amounts::new(), 600_000, &afs);
        assert_eq!(lq.consumed["cpu"], 4.0);
        assert!(lq.penalties.is_empty());
        assert_eq!(lq.last_update, 600_000);
        // A half-life of 0 forgets at once.
        let forget = AdmissionFairSharing {
            usage_half_life_time: 0.0,
            ..afs
        };
        lq.sample(&amounts(&[("cpu", 3.0)]), 700_000, &forget);
        assert!(lq.consumed.is_empty());
    }

    #[test]
    fn quantities_are_canonical() {
        assert_eq!(quantity(0.0), "0");
        assert_eq!(quantity(2.0), "2");
        assert_eq!(quantity(1.5), "1500m");
        assert_eq!(quantity(0.000000123), "123n");
        assert_eq!(quantity(16000.0), "16k");
    }
}
