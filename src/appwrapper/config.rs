//! Operator configuration (reference §1.8) and the behaviour annotations an
//! AppWrapper may carry on its own `metadata.annotations` (reference §1.7).

use std::collections::{BTreeMap, BTreeSet};

use crate::vocabulary::{duration::GoDuration, go::go_atoi};

pub const ADMISSION_GRACE_PERIOD_ANNOTATION: &str =
    "workload.codeflare.dev.appwrapper/admissionGracePeriodDuration";
pub const WARMUP_GRACE_PERIOD_ANNOTATION: &str =
    "workload.codeflare.dev.appwrapper/warmupGracePeriodDuration";
pub const FAILURE_GRACE_PERIOD_ANNOTATION: &str =
    "workload.codeflare.dev.appwrapper/failureGracePeriodDuration";
pub const RETRY_PAUSE_PERIOD_ANNOTATION: &str =
    "workload.codeflare.dev.appwrapper/retryPausePeriodDuration";
pub const RETRY_LIMIT_ANNOTATION: &str = "workload.codeflare.dev.appwrapper/retryLimit";
pub const FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION: &str =
    "workload.codeflare.dev.appwrapper/forcefulDeletionGracePeriodDuration";
pub const DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION: &str =
    "workload.codeflare.dev.appwrapper/deletionOnFailureGracePeriodDuration";
pub const SUCCESS_TTL_ANNOTATION: &str = "workload.codeflare.dev.appwrapper/successTTLDuration";
pub const TERMINAL_EXIT_CODES_ANNOTATION: &str =
    "workload.codeflare.dev.appwrapper/terminalExitCodes";
pub const RETRYABLE_EXIT_CODES_ANNOTATION: &str =
    "workload.codeflare.dev.appwrapper/retryableExitCodes";

/// `faultTolerance` of the operator config. Go field names in comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultTolerance {
    /// `AdmissionGracePeriod`, default 1m.
    pub admission_grace_period: GoDuration,
    /// `WarmupGracePeriod`, default 5m.
    pub warmup_grace_period: GoDuration,
    /// `FailureGracePeriod`, default 1m.
    pub failure_grace_period: GoDuration,
    /// `RetryPausePeriod` (`resetPause`), default 90s.
    pub retry_pause_period: GoDuration,
    /// `RetryLimit`, default 3.
    pub retry_limit: i32,
    /// `ForcefulDeletionGracePeriod` (`deletionGracePeriod`), default 10m.
    pub forceful_deletion_grace_period: GoDuration,
    /// `GracePeriodMaximum` (`gracePeriodCeiling`), default 24h.
    pub grace_period_maximum: GoDuration,
    /// `SuccessTTL` (`successTTLCeiling`), default 168h.
    pub success_ttl: GoDuration,
}

impl Default for FaultTolerance {
    fn default() -> Self {
        FaultTolerance {
            admission_grace_period: GoDuration::from_mins(1),
            warmup_grace_period: GoDuration::from_mins(5),
            failure_grace_period: GoDuration::from_mins(1),
            retry_pause_period: GoDuration::from_secs(90),
            retry_limit: 3,
            forceful_deletion_grace_period: GoDuration::from_mins(10),
            grace_period_maximum: GoDuration::from_hours(24),
            success_ttl: GoDuration::from_hours(168),
        }
    }
}

impl FaultTolerance {
    /// Upstream's `ValidateAppWrapperConfig`, with its exact texts (typos
    /// included, and the admission-vs-warmup check printing the warmup
    /// period and the ceiling, as v1.2.1 does).
    pub fn validate(&self) -> Result<(), String> {
        let max = self.grace_period_maximum;
        if self.forceful_deletion_grace_period > max {
            return Err(format!(
                "ForcefulDelectionGracePeriod {} exceeds GracePeriodCeiling {}",
                self.forceful_deletion_grace_period, max
            ));
        }
        if self.retry_pause_period > max {
            return Err(format!(
                "RetryPausePeriod {} exceeds GracePeriodCeiling {}",
                self.retry_pause_period, max
            ));
        }
        if self.failure_grace_period > max {
            return Err(format!(
                "FailureGracePeriod {} exceeds GracePeriodCeiling {}",
                self.failure_grace_period, max
            ));
        }
        if self.admission_grace_period > max {
            return Err(format!(
                "AdmissionGracePeriod {} exceeds GracePeriodCeiling {}",
                self.admission_grace_period, max
            ));
        }
        if self.warmup_grace_period > max {
            return Err(format!(
                "AdmissionGracePeriod {} exceeds GracePeriodCeiling {}",
                self.warmup_grace_period, max
            ));
        }
        if self.admission_grace_period > self.warmup_grace_period {
            return Err(format!(
                "AdmissionGracePeriod {} exceeds AdmissionGracePeriod {}",
                self.warmup_grace_period, self.grace_period_maximum
            ));
        }
        if self.success_ttl <= GoDuration::ZERO {
            return Err(format!(
                "SuccessTTL {} is not a positive duration",
                self.success_ttl
            ));
        }
        Ok(())
    }
}

/// The part of the operator config the lifecycle core reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorConfig {
    pub fault_tolerance: FaultTolerance,
    /// `schedulerName`: injected into pod templates that have none; empty
    /// means no injection.
    pub scheduler_name: String,
    /// `autopilot`; `None` turns node-health handling off.
    pub autopilot: Option<Autopilot>,
}

/// A `v1.Taint` of `autopilot.resourceTaints`, matched against node
/// *labels* (`key=value`), as upstream does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceTaint {
    pub key: String,
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// `autopilot` of the operator config: anti-affinity injection when
/// rendering components, and the NoExecute evacuation in Running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autopilot {
    pub inject_anti_affinities: bool,
    pub monitor_nodes: bool,
    pub prefer_no_schedule_weight: i32,
    pub resource_taints: BTreeMap<String, Vec<ResourceTaint>>,
}

impl Default for Autopilot {
    fn default() -> Self {
        let taint = |value: &str, effect: &str| ResourceTaint {
            key: "autopilot.ibm.com/gpuhealth".to_string(),
            value: value.to_string(),
            effect: effect.to_string(),
        };
        Autopilot {
            inject_anti_affinities: true,
            monitor_nodes: true,
            prefer_no_schedule_weight: 50,
            resource_taints: [(
                "nvidia.com/gpu".to_string(),
                vec![
                    taint("WARN", "PreferNoSchedule"),
                    taint("TESTING", "NoSchedule"),
                    taint("EVICT", "NoExecute"),
                ],
            )]
            .into(),
        }
    }
}

impl Autopilot {
    /// The node monitor's `noExecuteNodes` entry for one node: the
    /// resources whose NoExecute `key=value` the node's labels carry.
    pub fn no_execute_resources(&self, node_labels: &BTreeMap<String, String>) -> BTreeSet<String> {
        self.resource_taints
            .iter()
            .filter(|(_, taints)| {
                taints
                    .iter()
                    .any(|t| t.effect == "NoExecute" && node_labels.get(&t.key) == Some(&t.value))
            })
            .map(|(resource, _)| resource.clone())
            .collect()
    }
}

impl Default for OperatorConfig {
    fn default() -> Self {
        OperatorConfig {
            fault_tolerance: FaultTolerance::default(),
            scheduler_name: String::new(),
            autopilot: Some(Autopilot::default()),
        }
    }
}

/// Every behaviour annotation resolved against the operator config, once
/// per reconcile. Malformed values fall back to the default, as upstream
/// does (it only logs); `malformed` lists them so the shell can log them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behaviour {
    pub admission_grace: GoDuration,
    pub warmup_grace: GoDuration,
    pub failure_grace: GoDuration,
    pub retry_pause: GoDuration,
    pub retry_limit: i32,
    pub forceful_deletion_grace: GoDuration,
    pub deletion_on_failure_grace: GoDuration,
    pub success_ttl: GoDuration,
    pub terminal_exit_codes: Vec<i64>,
    pub retryable_exit_codes: Vec<i64>,
    /// `(annotation key, upstream's log message)` for each malformed value.
    pub malformed: Vec<(String, String)>,
}

impl Behaviour {
    /// Resolve every annotation (reference §1.7).
    pub fn resolve(annotations: &BTreeMap<String, String>, config: &OperatorConfig) -> Behaviour {
        let ft = &config.fault_tolerance;
        let mut malformed = Vec::new();
        let limit = |d: GoDuration| -> GoDuration {
            if d < GoDuration::ZERO {
                GoDuration::ZERO
            } else if d > ft.grace_period_maximum {
                ft.grace_period_maximum
            } else {
                d
            }
        };
        let mut clamped = |key: &str, default: GoDuration, log: &str| -> GoDuration {
            if let Some(v) = annotations.get(key) {
                match GoDuration::parse(v) {
                    Ok(d) => return limit(d),
                    Err(_) => malformed.push((key.to_string(), log.to_string())),
                }
            }
            limit(default)
        };
        let admission = clamped(
            ADMISSION_GRACE_PERIOD_ANNOTATION,
            ft.admission_grace_period,
            "Malformed admission grace period annotation; using default",
        );
        let warmup = clamped(
            WARMUP_GRACE_PERIOD_ANNOTATION,
            ft.warmup_grace_period,
            "Malformed warmup grace period annotation; using default",
        );
        let failure = clamped(
            FAILURE_GRACE_PERIOD_ANNOTATION,
            ft.failure_grace_period,
            "Malformed failure grace period annotation; using default",
        );
        let pause = clamped(
            RETRY_PAUSE_PERIOD_ANNOTATION,
            ft.retry_pause_period,
            "Malformed retry pause annotation; using default",
        );
        let forceful = clamped(
            FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION,
            ft.forceful_deletion_grace_period,
            "Malformed forceful deletion period annotation; using default",
        );
        // The deletion-on-failure default is a hard-coded 0, not config.
        let on_failure = clamped(
            DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION,
            GoDuration::ZERO,
            "Malformed deletion on failure grace period annotation; using default of 0",
        );
        let retry_limit = match annotations.get(RETRY_LIMIT_ANNOTATION) {
            Some(v) => match go_atoi(v).ok() {
                // Go converts with int32(limit): wrap, never clamp.
                Some(n) => n as i32,
                None => {
                    malformed.push((
                        RETRY_LIMIT_ANNOTATION.to_string(),
                        "Malformed retry limit annotation; using default".to_string(),
                    ));
                    ft.retry_limit
                }
            },
            None => ft.retry_limit,
        };
        // Success TTL: used only when 0 < d < config; not grace-clamped.
        let success_ttl = match annotations.get(SUCCESS_TTL_ANNOTATION) {
            Some(v) => match GoDuration::parse(v) {
                Ok(d) if d > GoDuration::ZERO && d < ft.success_ttl => d,
                Ok(_) => ft.success_ttl,
                Err(_) => {
                    malformed.push((
                        SUCCESS_TTL_ANNOTATION.to_string(),
                        "Malformed successTTL annotation; using default".to_string(),
                    ));
                    ft.success_ttl
                }
            },
            None => ft.success_ttl,
        };
        Behaviour {
            admission_grace: admission,
            warmup_grace: warmup,
            failure_grace: failure,
            retry_pause: pause,
            retry_limit,
            forceful_deletion_grace: forceful,
            deletion_on_failure_grace: on_failure,
            success_ttl,
            terminal_exit_codes: exit_codes(annotations.get(TERMINAL_EXIT_CODES_ANNOTATION)),
            retryable_exit_codes: exit_codes(annotations.get(RETRYABLE_EXIT_CODES_ANNOTATION)),
            malformed,
        }
    }
}

/// Comma-separated exit codes; entries `strconv.Atoi` rejects are dropped.
pub fn exit_codes(value: Option<&String>) -> Vec<i64> {
    match value {
        Some(v) => v.split(',').filter_map(|c| go_atoi(c).ok()).collect(),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a1_defaults_without_annotations() {
        let b = Behaviour::resolve(&BTreeMap::new(), &OperatorConfig::default());
        assert_eq!(b.admission_grace, GoDuration::from_mins(1));
        assert_eq!(b.warmup_grace, GoDuration::from_mins(5));
        assert_eq!(b.failure_grace, GoDuration::from_mins(1));
        assert_eq!(b.retry_pause, GoDuration::from_secs(90));
        assert_eq!(b.retry_limit, 3);
        assert_eq!(b.forceful_deletion_grace, GoDuration::from_mins(10));
        assert_eq!(b.deletion_on_failure_grace, GoDuration::ZERO);
        assert_eq!(b.success_ttl, GoDuration::from_hours(168));
        assert!(b.terminal_exit_codes.is_empty() && b.retryable_exit_codes.is_empty());
        assert!(b.malformed.is_empty());
    }

    #[test]
    fn a2_valid_annotations_override() {
        let a = ann(&[
            (ADMISSION_GRACE_PERIOD_ANNOTATION, "10s"),
            (WARMUP_GRACE_PERIOD_ANNOTATION, "10s"),
            (FAILURE_GRACE_PERIOD_ANNOTATION, "10s"),
            (RETRY_PAUSE_PERIOD_ANNOTATION, "10s"),
            (RETRY_LIMIT_ANNOTATION, "101"),
            (FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, "10s"),
            (DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, "10s"),
            (SUCCESS_TTL_ANNOTATION, "10s"),
        ]);
        let b = Behaviour::resolve(&a, &OperatorConfig::default());
        let ten = GoDuration::from_secs(10);
        for d in [
            b.admission_grace,
            b.warmup_grace,
            b.failure_grace,
            b.retry_pause,
            b.forceful_deletion_grace,
            b.deletion_on_failure_grace,
            b.success_ttl,
        ] {
            assert_eq!(d, ten);
        }
        assert_eq!(b.retry_limit, 101);
    }

    #[test]
    fn a3_malformed_values_fall_back() {
        let a = ann(&[
            (ADMISSION_GRACE_PERIOD_ANNOTATION, "222badTime"),
            (WARMUP_GRACE_PERIOD_ANNOTATION, "222badTime"),
            (FAILURE_GRACE_PERIOD_ANNOTATION, "222badTime"),
            (RETRY_PAUSE_PERIOD_ANNOTATION, "222badTime"),
            (RETRY_LIMIT_ANNOTATION, "abc"),
            (FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, "222badTime"),
            (DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, "222badTime"),
            (SUCCESS_TTL_ANNOTATION, "222badTime"),
        ]);
        let b = Behaviour::resolve(&a, &OperatorConfig::default());
        assert_eq!(b, {
            let mut d = Behaviour::resolve(&BTreeMap::new(), &OperatorConfig::default());
            d.malformed = b.malformed.clone();
            d
        });
        assert_eq!(b.malformed.len(), 8);
        assert!(b.malformed.contains(&(
            DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION.to_string(),
            "Malformed deletion on failure grace period annotation; using default of 0".to_string()
        )));
    }

    #[test]
    fn a4_clamping() {
        let cfg = OperatorConfig::default();
        let neg = ann(&[
            (ADMISSION_GRACE_PERIOD_ANNOTATION, "-10s"),
            (WARMUP_GRACE_PERIOD_ANNOTATION, "-10s"),
            (FAILURE_GRACE_PERIOD_ANNOTATION, "-10s"),
            (RETRY_PAUSE_PERIOD_ANNOTATION, "-10s"),
            (FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, "-10s"),
            (DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, "-10s"),
            (RETRY_LIMIT_ANNOTATION, "-1"),
        ]);
        let b = Behaviour::resolve(&neg, &cfg);
        for d in [
            b.admission_grace,
            b.warmup_grace,
            b.failure_grace,
            b.retry_pause,
            b.forceful_deletion_grace,
            b.deletion_on_failure_grace,
        ] {
            assert_eq!(d, GoDuration::ZERO);
        }
        assert_eq!(b.retry_limit, -1, "retryLimit is never clamped");

        let big = ann(&[
            (ADMISSION_GRACE_PERIOD_ANNOTATION, "48h"),
            (WARMUP_GRACE_PERIOD_ANNOTATION, "48h"),
            (FAILURE_GRACE_PERIOD_ANNOTATION, "48h"),
            (RETRY_PAUSE_PERIOD_ANNOTATION, "48h"),
            (FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, "48h"),
            (DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, "48h"),
            (SUCCESS_TTL_ANNOTATION, "48h"),
        ]);
        let b = Behaviour::resolve(&big, &cfg);
        for d in [
            b.admission_grace,
            b.warmup_grace,
            b.failure_grace,
            b.retry_pause,
            b.forceful_deletion_grace,
            b.deletion_on_failure_grace,
        ] {
            assert_eq!(d, GoDuration::from_hours(24));
        }
        // success TTL is not clamped by the grace ceiling, only by its own
        assert_eq!(b.success_ttl, GoDuration::from_hours(48));
        let above = ann(&[(SUCCESS_TTL_ANNOTATION, "200h")]);
        assert_eq!(
            Behaviour::resolve(&above, &cfg).success_ttl,
            GoDuration::from_hours(168)
        );
        for v in ["0s", "-1s", "168h"] {
            let a = ann(&[(SUCCESS_TTL_ANNOTATION, v)]);
            assert_eq!(
                Behaviour::resolve(&a, &cfg).success_ttl,
                GoDuration::from_hours(168),
                "{v}"
            );
        }
        // the config default itself is clamped by the ceiling
        let mut small = cfg.clone();
        small.fault_tolerance.grace_period_maximum = GoDuration::from_secs(30);
        let b = Behaviour::resolve(&BTreeMap::new(), &small);
        assert_eq!(b.warmup_grace, GoDuration::from_secs(30));
    }

    #[test]
    fn a5_exit_code_parsing() {
        let a = ann(&[
            (TERMINAL_EXIT_CODES_ANNOTATION, "3,10,abc,42"),
            (RETRYABLE_EXIT_CODES_ANNOTATION, "x,10,20"),
        ]);
        let b = Behaviour::resolve(&a, &OperatorConfig::default());
        assert_eq!(b.terminal_exit_codes, vec![3, 10, 42]);
        assert_eq!(b.retryable_exit_codes, vec![10, 20]);
        // Atoi quirks: no spaces, signs allowed, empty entries dropped
        assert_eq!(
            exit_codes(Some(&" 1,2 ,+3,-4,,5_0,".to_string())),
            vec![3, -4]
        );
    }

    #[test]
    fn retry_limit_parsing_quirks() {
        let cfg = OperatorConfig::default();
        for (v, want) in [
            ("0", 0),
            ("+7", 7),
            (" 7", 3),
            ("7.0", 3),
            ("", 3),
            ("4294967297", 1),
        ] {
            let a = ann(&[(RETRY_LIMIT_ANNOTATION, v)]);
            assert_eq!(Behaviour::resolve(&a, &cfg).retry_limit, want, "{v:?}");
        }
    }

    #[test]
    fn node_labels_to_no_execute_resources() {
        let ap = Autopilot::default();
        let labels = |v: &str| ann(&[("autopilot.ibm.com/gpuhealth", v)]);
        assert_eq!(
            ap.no_execute_resources(&labels("EVICT")),
            BTreeSet::from(["nvidia.com/gpu".to_string()])
        );
        for v in ["WARN", "TESTING", "OK", ""] {
            assert!(ap.no_execute_resources(&labels(v)).is_empty(), "{v}");
        }
        assert!(ap.no_execute_resources(&BTreeMap::new()).is_empty());
        let mut extra = ap.clone();
        extra.resource_taints.insert(
            "extra".into(),
            vec![ResourceTaint {
                key: "extra".into(),
                value: "test".into(),
                effect: "NoExecute".into(),
            }],
        );
        let both = ann(&[("autopilot.ibm.com/gpuhealth", "EVICT"), ("extra", "test")]);
        assert_eq!(extra.no_execute_resources(&both).len(), 2);
    }

    /// Upstream's `pkg/config/config_test.go` ("AppWrapper Config"): the
    /// defaults validate ("Config Constructors", "Config Validation"), and
    /// each of its seven invalid configs, every other field zero as in the
    /// Go literals, is refused; the message each gets at v1.2.1 (the sixth,
    /// meant for admission > warmup, trips the ceiling check first).
    #[test]
    fn cf1_upstream_config_validation() {
        assert_eq!(OperatorConfig::default().fault_tolerance.validate(), Ok(()));
        let zero = FaultTolerance {
            admission_grace_period: GoDuration::ZERO,
            warmup_grace_period: GoDuration::ZERO,
            failure_grace_period: GoDuration::ZERO,
            retry_pause_period: GoDuration::ZERO,
            retry_limit: 0,
            forceful_deletion_grace_period: GoDuration::ZERO,
            grace_period_maximum: GoDuration::ZERO,
            success_ttl: GoDuration::ZERO,
        };
        let (ten, one) = (GoDuration::from_secs(10), GoDuration::from_secs(1));
        let cases = [
            (
                FaultTolerance {
                    forceful_deletion_grace_period: ten,
                    grace_period_maximum: one,
                    ..zero.clone()
                },
                "ForcefulDelectionGracePeriod 10s exceeds GracePeriodCeiling 1s",
            ),
            (
                FaultTolerance {
                    retry_pause_period: ten,
                    grace_period_maximum: one,
                    ..zero.clone()
                },
                "RetryPausePeriod 10s exceeds GracePeriodCeiling 1s",
            ),
            (
                FaultTolerance {
                    failure_grace_period: ten,
                    grace_period_maximum: one,
                    ..zero.clone()
                },
                "FailureGracePeriod 10s exceeds GracePeriodCeiling 1s",
            ),
            (
                FaultTolerance {
                    admission_grace_period: ten,
                    grace_period_maximum: one,
                    ..zero.clone()
                },
                "AdmissionGracePeriod 10s exceeds GracePeriodCeiling 1s",
            ),
            (
                FaultTolerance {
                    warmup_grace_period: ten,
                    grace_period_maximum: one,
                    ..zero.clone()
                },
                "AdmissionGracePeriod 10s exceeds GracePeriodCeiling 1s",
            ),
            (
                FaultTolerance {
                    admission_grace_period: ten,
                    warmup_grace_period: one,
                    ..zero.clone()
                },
                "AdmissionGracePeriod 10s exceeds GracePeriodCeiling 0s",
            ),
            (
                FaultTolerance {
                    success_ttl: GoDuration::from_secs(-1),
                    ..zero.clone()
                },
                "SuccessTTL -1s is not a positive duration",
            ),
        ];
        for (ft, want) in cases {
            assert_eq!(ft.validate(), Err(want.to_string()));
        }
    }

    #[test]
    fn config_validation_messages() {
        assert_eq!(FaultTolerance::default().validate(), Ok(()));
        let base = FaultTolerance::default();
        let big = GoDuration::from_hours(25);
        let cases: Vec<(FaultTolerance, &str)> = vec![
            (
                FaultTolerance {
                    forceful_deletion_grace_period: big,
                    ..base.clone()
                },
                "ForcefulDelectionGracePeriod 25h0m0s exceeds GracePeriodCeiling 24h0m0s",
            ),
            (
                FaultTolerance {
                    retry_pause_period: big,
                    ..base.clone()
                },
                "RetryPausePeriod 25h0m0s exceeds GracePeriodCeiling 24h0m0s",
            ),
            (
                FaultTolerance {
                    failure_grace_period: big,
                    ..base.clone()
                },
                "FailureGracePeriod 25h0m0s exceeds GracePeriodCeiling 24h0m0s",
            ),
            (
                FaultTolerance {
                    admission_grace_period: big,
                    warmup_grace_period: big,
                    ..base.clone()
                },
                "AdmissionGracePeriod 25h0m0s exceeds GracePeriodCeiling 24h0m0s",
            ),
            (
                FaultTolerance {
                    warmup_grace_period: big,
                    ..base.clone()
                },
                "AdmissionGracePeriod 25h0m0s exceeds GracePeriodCeiling 24h0m0s",
            ),
            (
                FaultTolerance {
                    admission_grace_period: GoDuration::from_mins(6),
                    ..base.clone()
                },
                "AdmissionGracePeriod 5m0s exceeds AdmissionGracePeriod 24h0m0s",
            ),
            (
                FaultTolerance {
                    success_ttl: GoDuration::ZERO,
                    ..base.clone()
                },
                "SuccessTTL 0s is not a positive duration",
            ),
        ];
        for (ft, want) in cases {
            assert_eq!(ft.validate(), Err(want.to_string()));
        }
    }
}
