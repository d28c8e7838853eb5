//! Kueue's waitForPodsReady and dynamic reclaim, as the job reconciler runs
//! them: the `PodsReady` condition made from what the job's status says
//! (its policy's `podsReady` rule), the timeout after which a Workload
//! whose pods are not ready is evicted (`PodsReadyTimeout`) and requeued
//! with exponential backoff (`status.requeueState`), deactivation once
//! `backoffLimitCount` is used up, the `recoveryTimeout` of a Workload that
//! was ready and lost it, and `status.reclaimablePods` from the job's
//! succeeded pods. Time (ms since the Unix epoch) and the backoff's random
//! jitter are parameters.

use crate::vocabulary::duration::GoDuration;

/// `PodsReady` reasons (Kueue's `WorkloadWaitForStart` ...).
pub const WAIT_FOR_START: &str = "WaitForStart";
pub const WAIT_FOR_RECOVERY: &str = "WaitForRecovery";
pub const STARTED: &str = "Started";
pub const RECOVERED: &str = "Recovered";
/// Kueue's `generatePodsReadyCondition` messages.
pub const NOT_READY_MESSAGE: &str = "Not all pods are ready or succeeded";
pub const WAITING_FOR_RECOVERY_MESSAGE: &str = "At least one pod has failed, waiting for recovery";
pub const READY_MESSAGE: &str = "All pods reached readiness and the workload is running";

/// The `Evicted` reason (and event `EvictedDueToPodsReadyTimeout`).
pub const TIMEOUT_REASON: &str = "PodsReadyTimeout";
/// `DeactivationTarget` reason and message once the requeues are used up
/// (Kueue's `triggerDeactivation`).
pub const LIMIT_REASON: &str = "RequeuingLimitExceeded";
pub const LIMIT_MESSAGE: &str = "exceeding the maximum number of re-queuing retries";
/// `Requeued=True` once the backoff is over.
pub const BACKOFF_FINISHED_REASON: &str = "BackoffFinished";
pub const BACKOFF_FINISHED_MESSAGE: &str = "The workload backoff was finished";

/// Kueue's defaults (`apis/config/v1beta2/defaults.go`).
pub const DEFAULT_TIMEOUT: GoDuration = GoDuration::from_mins(30);
pub const DEFAULT_BACKOFF_BASE_SECONDS: i32 = 60;
pub const DEFAULT_BACKOFF_MAX_SECONDS: i32 = 3600;
/// The jitter factor Kueue's workload controller uses.
const JITTER: f64 = 0.0001;

/// `requeuingStrategy.timestamp`: which time orders a requeued Workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequeuingTimestamp {
    Eviction,
    Creation,
}

/// waitForPodsReady in force (defaults applied, validated).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub timeout_ms: i64,
    pub block_admission: bool,
    /// `None`: recovery is not timed (`recoveryTimeout: 0s`).
    pub recovery_timeout_ms: Option<i64>,
    pub timestamp: RequeuingTimestamp,
    pub backoff_base_seconds: i32,
    pub backoff_max_seconds: i32,
    /// `None`: requeued for ever.
    pub backoff_limit_count: Option<i32>,
}

impl Default for Settings {
    /// Kueue v0.19.2's defaults: 30 minutes, recovery as long, backoff from
    /// 60 s up to an hour, no limit, no blocking.
    fn default() -> Self {
        Settings {
            timeout_ms: DEFAULT_TIMEOUT.as_nanos() / 1_000_000,
            block_admission: false,
            recovery_timeout_ms: Some(DEFAULT_TIMEOUT.as_nanos() / 1_000_000),
            timestamp: RequeuingTimestamp::Eviction,
            backoff_base_seconds: DEFAULT_BACKOFF_BASE_SECONDS,
            backoff_max_seconds: DEFAULT_BACKOFF_MAX_SECONDS,
            backoff_limit_count: None,
        }
    }
}

/// The configuration as written (Kueue's `WaitForPodsReady`, durations as
/// Go durations), before defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Raw {
    pub enable: Option<bool>,
    pub timeout: Option<String>,
    pub block_admission: Option<bool>,
    pub recovery_timeout: Option<String>,
    pub timestamp: Option<String>,
    pub backoff_limit_count: Option<i32>,
    pub backoff_base_seconds: Option<i32>,
    pub backoff_max_seconds: Option<i32>,
}

/// apimachinery's `IsNegativeErrorMsg`.
const NEGATIVE: &str = "must be greater than or equal to 0";

impl Raw {
    /// Kueue's defaulting (`SetDefaults_Configuration`) and validation
    /// (`validateWaitForPodsReady`), with its messages. `Ok(None)` when it
    /// is turned off (`enable: false`, the v1beta1 field).
    pub fn settings(&self) -> Result<Option<Settings>, String> {
        if self.enable == Some(false) {
            return Ok(None);
        }
        let mut errs = Vec::new();
        let parse = |field: &str, v: &Option<String>, errs: &mut Vec<String>| match v {
            None => None,
            Some(text) => match GoDuration::parse(text) {
                Ok(d) => Some(d),
                Err(e) => {
                    errs.push(format!(
                        "waitForPodsReady.{field}: Invalid value: {text:?}: {e}"
                    ));
                    None
                }
            },
        };
        let timeout = parse("timeout", &self.timeout, &mut errs);
        let recovery = parse("recoveryTimeout", &self.recovery_timeout, &mut errs);
        // An unset or zero timeout defaults to 30 minutes.
        let timeout = timeout
            .filter(|d| d.as_nanos() != 0)
            .unwrap_or(DEFAULT_TIMEOUT);
        if timeout.as_nanos() < 0 {
            errs.push(format!(
                "waitForPodsReady.timeout: Invalid value: {timeout}: {NEGATIVE}"
            ));
        }
        if let Some(r) = recovery.filter(|r| r.as_nanos() < 0) {
            errs.push(format!(
                "waitForPodsReady.recoveryTimeout: Invalid value: {r}: {NEGATIVE}"
            ));
        }
        let at = "waitForPodsReady.requeuingStrategy";
        let timestamp = match self.timestamp.as_deref() {
            None | Some("Eviction") => RequeuingTimestamp::Eviction,
            Some("Creation") => RequeuingTimestamp::Creation,
            Some(other) => {
                errs.push(format!(
                    "{at}.timestamp: Unsupported value: {other:?}: supported values: \"Creation\", \"Eviction\""
                ));
                RequeuingTimestamp::Eviction
            }
        };
        for (field, v) in [
            ("backoffLimitCount", self.backoff_limit_count),
            ("backoffBaseSeconds", self.backoff_base_seconds),
            ("backoffMaxSeconds", self.backoff_max_seconds),
        ] {
            if let Some(n) = v.filter(|n| *n < 0) {
                errs.push(format!("{at}.{field}: Invalid value: {n}: {NEGATIVE}"));
            }
        }
        if !errs.is_empty() {
            return Err(errs.join(", "));
        }
        let ms = |d: GoDuration| d.as_nanos() / 1_000_000;
        Ok(Some(Settings {
            timeout_ms: ms(timeout),
            block_admission: self.block_admission.unwrap_or(false),
            // Defaults to the timeout; 0s turns it off.
            recovery_timeout_ms: Some(recovery.map_or(ms(timeout), ms)).filter(|r| *r > 0),
            timestamp,
            backoff_base_seconds: self
                .backoff_base_seconds
                .unwrap_or(DEFAULT_BACKOFF_BASE_SECONDS),
            backoff_max_seconds: self
                .backoff_max_seconds
                .unwrap_or(DEFAULT_BACKOFF_MAX_SECONDS),
            backoff_limit_count: self.backoff_limit_count,
        }))
    }
}

/// A `PodsReady` condition to write: status, reason, message.
pub type PodsReady = (bool, &'static str, &'static str);

/// Kueue's `generatePodsReadyCondition`: from whether the Workload is
/// admitted, its current `PodsReady` condition (status, reason) and
/// whether the job's pods are ready now.
pub fn pods_ready_condition(
    admitted: bool,
    current: Option<(bool, &str)>,
    pods_ready: bool,
) -> PodsReady {
    if !admitted {
        return (false, WAIT_FOR_START, NOT_READY_MESSAGE);
    }
    if pods_ready {
        let reason = match current {
            Some((_, r)) if r == WAIT_FOR_RECOVERY || r == RECOVERED => RECOVERED,
            _ => STARTED,
        };
        return (true, reason, READY_MESSAGE);
    }
    match current {
        Some((true, _)) => (false, WAIT_FOR_RECOVERY, WAITING_FOR_RECOVERY_MESSAGE),
        Some((false, r)) if r == WAIT_FOR_RECOVERY => {
            (false, WAIT_FOR_RECOVERY, WAITING_FOR_RECOVERY_MESSAGE)
        }
        _ => (false, WAIT_FOR_START, NOT_READY_MESSAGE),
    }
}

/// What the timeout says about an admitted Workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    /// Ready, not admitted, or recovery not timed: nothing to wait for.
    None,
    /// Not ready yet; look again after this many ms.
    Running { cause: &'static str, left_ms: i64 },
    /// Out of time (`cause`: `WaitForStart` or `WaitForRecovery`, the
    /// eviction's underlying cause).
    Expired { cause: &'static str },
}

/// Kueue's `admittedNotReadyWorkload`: `admitted_at` is the `Admitted`
/// condition's transition time (None: not admitted); `pods_ready` the
/// `PodsReady` condition (status, reason, transition time).
pub fn timeout(
    s: &Settings,
    admitted_at: Option<i64>,
    pods_ready: Option<(bool, &str, i64)>,
    now: i64,
) -> Timeout {
    let Some(admitted_at) = admitted_at else {
        return Timeout::None;
    };
    let (cause, left_ms) = match pods_ready {
        Some((true, _, _)) => return Timeout::None,
        // Kueue also reads the old "PodsReady" reason as waiting to start.
        None => (WAIT_FOR_START, s.timeout_ms - (now - admitted_at)),
        Some((false, r, _)) if r == WAIT_FOR_START || r == "PodsReady" => {
            (WAIT_FOR_START, s.timeout_ms - (now - admitted_at))
        }
        Some((false, r, since)) if r == WAIT_FOR_RECOVERY => match s.recovery_timeout_ms {
            Some(rt) => (WAIT_FOR_RECOVERY, rt - (now - since)),
            None => return Timeout::None,
        },
        Some(_) => return Timeout::None,
    };
    if left_ms > 0 {
        Timeout::Running { cause, left_ms }
    } else {
        Timeout::Expired { cause }
    }
}

/// The `n`th requeue's wait in ms (Kueue's `wait.NewBackoff(base, max, 2,
/// 0.0001).WaitTime(n)` over apimachinery's `Backoff.Step`): base·2^(n−1),
/// capped at max (the first step is never capped; max 0 means no cap),
/// plus `jitter` (in [0, 1)) times 0.0001 of it.
pub fn backoff_ms(base_seconds: i32, max_seconds: i32, n: i32, jitter: f64) -> i64 {
    let base = i64::from(base_seconds.max(0)) * 1000;
    let cap = match i64::from(max_seconds.max(0)) * 1000 {
        0 => i64::MAX / 2,
        c => c,
    };
    let mut duration = base;
    let mut step = 0;
    let mut capped = false;
    for _ in 0..n.max(0) {
        if capped {
            step = duration;
            break;
        }
        step = duration;
        duration = duration.saturating_mul(2);
        if duration > cap {
            duration = cap;
            capped = true;
        }
    }
    step + (step as f64 * JITTER * jitter.clamp(0.0, 1.0)) as i64
}

/// What to do once the timeout expired (Kueue's `reconcileNotReadyTimeout`
/// and `triggerDeactivation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// The requeues are used up: `DeactivationTarget`
    /// (`RequeuingLimitExceeded`), then `spec.active: false`.
    Deactivate,
    /// Evict (`PodsReadyTimeout`) with `status.requeueState` set to this.
    Requeue { count: i32, requeue_at: i64 },
}

/// `count` and `requeue_at` are the current `status.requeueState`.
pub fn on_expiry(
    s: &Settings,
    count: Option<i32>,
    requeue_at: Option<i64>,
    now: i64,
    jitter: f64,
) -> Expiry {
    let count = count.unwrap_or(0);
    if s.backoff_limit_count.is_some_and(|limit| count + 1 > limit) {
        return Expiry::Deactivate;
    }
    let next = count + 1;
    let at = now + backoff_ms(s.backoff_base_seconds, s.backoff_max_seconds, next, jitter);
    // Kueue's SetRequeueState never moves a later requeue earlier.
    Expiry::Requeue {
        count: next,
        requeue_at: requeue_at.map_or(at, |prev| prev.max(at)),
    }
}

/// Kueue's `GetQueueOrderTimestamp` for waitForPodsReady: with the
/// `Eviction` timestamp, a Workload evicted for `PodsReadyTimeout`
/// (`evicted`: the `Evicted` condition's status, reason and transition
/// time) queues by when it was evicted, behind what came since; otherwise
/// by its creation.
pub fn queue_order_time(
    timestamp: RequeuingTimestamp,
    created: i64,
    evicted: Option<(bool, &str, i64)>,
) -> i64 {
    match (timestamp, evicted) {
        (RequeuingTimestamp::Eviction, Some((true, reason, at))) if reason == TIMEOUT_REASON => at,
        _ => created,
    }
}

/// The eviction message (Kueue: `Exceeded the PodsReady timeout <ns/name>`).
pub fn timeout_message(namespace: &str, name: &str) -> String {
    format!("Exceeded the PodsReady timeout {namespace}/{name}")
}

/// Reclaimable pods per pod set from what the job reports, each at most
/// the pod set's count (Kueue's `LimitReclaimablePodsToPodSetSizes`);
/// zeros dropped.
pub fn limit_reclaimable(found: &[(String, i64)], counts: &[(String, i64)]) -> Vec<(String, i32)> {
    found
        .iter()
        .filter_map(|(name, n)| {
            let size = counts
                .iter()
                .find(|(c, _)| c == name)
                .map_or(*n, |(_, c)| *c);
            let n = (*n).min(size).clamp(0, i64::from(i32::MAX)) as i32;
            (n > 0).then(|| (name.clone(), n))
        })
        .collect()
}

/// Kueue's Job `ReclaimablePods` (non-indexed): once some pods succeeded
/// and fewer than `parallelism` completions remain, the slots no longer
/// needed.
pub fn job_reclaimable(parallelism: i64, completions: Option<i64>, succeeded: i64) -> i64 {
    let completions = completions.unwrap_or(parallelism);
    if parallelism > 1 && succeeded > 0 {
        let remaining = (completions - succeeded).max(0);
        if remaining < parallelism {
            return parallelism - remaining;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1000;
    const MIN: i64 = 60 * S;

    fn settings() -> Settings {
        Settings {
            timeout_ms: 5 * MIN,
            recovery_timeout_ms: Some(3 * MIN),
            ..Settings::default()
        }
    }

    /// Kueue v0.19.2 apis/config/v1beta2/defaults_test.go, "defaulting
    /// waitForPodsReady values" (30 minutes, no blocking, Eviction
    /// timestamp, backoff 60 s to 3600 s), "defaulting waitForPodsReady
    /// recoveryTimeout to timeout" and "disabling waitForPodsReady
    /// recoveryTimeout with zero value"; `enable: false` is v1beta1's
    /// switch (its conversion drops the section).
    #[test]
    fn defaults_are_kueues() {
        let s = Raw::default().settings().unwrap().unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.timeout_ms, 30 * MIN);
        assert_eq!(s.recovery_timeout_ms, Some(30 * MIN));
        let s = Raw {
            timeout: Some("5m".into()),
            ..Raw::default()
        }
        .settings()
        .unwrap()
        .unwrap();
        assert_eq!(s.recovery_timeout_ms, Some(5 * MIN));
        let s = Raw {
            recovery_timeout: Some("0s".into()),
            ..Raw::default()
        }
        .settings()
        .unwrap()
        .unwrap();
        assert_eq!(s.recovery_timeout_ms, None);
        assert_eq!(
            Raw {
                enable: Some(false),
                ..Raw::default()
            }
            .settings(),
            Ok(None)
        );
    }

    /// Kueue v0.19.2 pkg/config/validation_test.go, TestValidate
    /// "negative waitForPodsReady.timeout", "negative
    /// waitForPodsReady.recoveryTimeout", "no supported
    /// waitForPodsReady.requeuingStrategy.timestamp" and "negative
    /// waitForPodsReady.requeuingStrategy.backoffLimitCount" /
    /// "...backoffBaseSeconds" / "...backoffMaxSeconds": Kueue's field
    /// paths, with apimachinery's messages.
    #[test]
    fn validation_uses_kueues_messages() {
        let err = |r: Raw| r.settings().unwrap_err();
        assert_eq!(
            err(Raw {
                timeout: Some("-5m".into()),
                ..Raw::default()
            }),
            "waitForPodsReady.timeout: Invalid value: -5m0s: must be greater than or equal to 0"
        );
        assert_eq!(
            err(Raw {
                recovery_timeout: Some("-1s".into()),
                ..Raw::default()
            }),
            "waitForPodsReady.recoveryTimeout: Invalid value: -1s: must be greater than or equal to 0"
        );
        assert_eq!(
            err(Raw {
                timestamp: Some("Later".into()),
                ..Raw::default()
            }),
            "waitForPodsReady.requeuingStrategy.timestamp: Unsupported value: \"Later\": supported values: \"Creation\", \"Eviction\""
        );
        assert_eq!(
            err(Raw {
                backoff_limit_count: Some(-1),
                backoff_base_seconds: Some(-2),
                backoff_max_seconds: Some(-3),
                ..Raw::default()
            }),
            "waitForPodsReady.requeuingStrategy.backoffLimitCount: Invalid value: -1: must be greater than or equal to 0, \
             waitForPodsReady.requeuingStrategy.backoffBaseSeconds: Invalid value: -2: must be greater than or equal to 0, \
             waitForPodsReady.requeuingStrategy.backoffMaxSeconds: Invalid value: -3: must be greater than or equal to 0"
        );
        assert!(err(Raw {
            timeout: Some("soon".into()),
            ..Raw::default()
        })
        .starts_with("waitForPodsReady.timeout: Invalid value: \"soon\""));
    }

    /// Kueue v0.19.2 pkg/controller/jobs/job/job_controller_test.go,
    /// TestReconciler: "PodsReady is set to False before Workload is
    /// Admitted", "... after Workload is Admitted but not all Pods reached
    /// readiness", "PodsReady is set to True after Workload is Admitted and
    /// all Pods reached readiness", "PodsReady is set to False after
    /// Workload is running and one pod failed", "PodsReady continues to be
    /// False after a pod failed and workload is still recovering" and
    /// "PodsReady is set to True after failing pod recovered".
    #[test]
    fn the_pods_ready_condition_follows_kueue() {
        assert_eq!(
            pods_ready_condition(false, Some((true, STARTED)), true),
            (false, WAIT_FOR_START, NOT_READY_MESSAGE)
        );
        assert_eq!(
            pods_ready_condition(true, None, false),
            (false, WAIT_FOR_START, NOT_READY_MESSAGE)
        );
        assert_eq!(
            pods_ready_condition(true, Some((false, WAIT_FOR_START)), true),
            (true, STARTED, READY_MESSAGE)
        );
        assert_eq!(
            pods_ready_condition(true, Some((true, STARTED)), false),
            (false, WAIT_FOR_RECOVERY, WAITING_FOR_RECOVERY_MESSAGE)
        );
        assert_eq!(
            pods_ready_condition(true, Some((false, WAIT_FOR_RECOVERY)), false),
            (false, WAIT_FOR_RECOVERY, WAITING_FOR_RECOVERY_MESSAGE)
        );
        assert_eq!(
            pods_ready_condition(true, Some((false, WAIT_FOR_RECOVERY)), true),
            (true, RECOVERED, READY_MESSAGE)
        );
        assert_eq!(
            pods_ready_condition(true, Some((true, RECOVERED)), true),
            (true, RECOVERED, READY_MESSAGE)
        );
    }

    /// Kueue v0.19.2 pkg/controller/core/workload_controller_test.go,
    /// TestAdmittedNotReadyWorkload: "workload without Admitted condition;
    /// not counting", "workload with Admitted=True, no PodsReady;
    /// counting", "... no PodsReady; timeout exceeded", "workload with
    /// Admitted=True, PodsReady=True; not counting", "workload with
    /// Admitted=True, PodsReady=False, Reason=WorkloadWaitForPodsReadyRecovery"
    /// (timed from the condition's transition) and "..., recoveryTimeout not
    /// configured".
    #[test]
    fn the_timeout_counts_from_admission_or_lost_readiness() {
        let s = settings();
        let now = 100 * MIN;
        assert_eq!(timeout(&s, None, None, now), Timeout::None);
        assert_eq!(
            timeout(&s, Some(now - MIN), None, now),
            Timeout::Running {
                cause: WAIT_FOR_START,
                left_ms: 4 * MIN
            }
        );
        assert_eq!(
            timeout(
                &s,
                Some(now - 5 * MIN),
                Some((false, WAIT_FOR_START, now)),
                now
            ),
            Timeout::Expired {
                cause: WAIT_FOR_START
            }
        );
        assert_eq!(
            timeout(&s, Some(now - 50 * MIN), Some((true, STARTED, now)), now),
            Timeout::None
        );
        // Lost readiness two minutes ago, admitted long ago: a minute left.
        assert_eq!(
            timeout(
                &s,
                Some(now - 50 * MIN),
                Some((false, WAIT_FOR_RECOVERY, now - 2 * MIN)),
                now
            ),
            Timeout::Running {
                cause: WAIT_FOR_RECOVERY,
                left_ms: MIN
            }
        );
        assert_eq!(
            timeout(
                &s,
                Some(now - 50 * MIN),
                Some((false, WAIT_FOR_RECOVERY, now - 3 * MIN)),
                now
            ),
            Timeout::Expired {
                cause: WAIT_FOR_RECOVERY
            }
        );
        let untimed = Settings {
            recovery_timeout_ms: None,
            ..s
        };
        assert_eq!(
            timeout(
                &untimed,
                Some(now - 50 * MIN),
                Some((false, WAIT_FOR_RECOVERY, now - 50 * MIN)),
                now
            ),
            Timeout::None
        );
    }

    /// Kueue v0.19.2 pkg/util/wait/backoff_test.go, TestBackoff_WaitTime
    /// ("simple exponential (factor=2)", "caps at limit", "iteration zero
    /// returns zero"), with UpdateRequeueState's base 60 s and max 3600 s:
    /// 60 s, 120 s, 240 s ... capped; the jitter adds at most 0.0001 of
    /// the step.
    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let steps: Vec<i64> = (1..=8).map(|n| backoff_ms(60, 3600, n, 0.0)).collect();
        assert_eq!(
            steps,
            [60, 120, 240, 480, 960, 1920, 3600, 3600]
                .map(|s: i64| s * S)
                .to_vec()
        );
        assert_eq!(backoff_ms(1, 3, 5, 0.0), 3 * S);
        // The first step is never capped (apimachinery caps the next one).
        assert_eq!(backoff_ms(10, 5, 1, 0.0), 10 * S);
        assert_eq!(backoff_ms(10, 5, 2, 0.0), 5 * S);
        // No cap with backoffMaxSeconds 0.
        assert_eq!(backoff_ms(1, 0, 11, 0.0), 1024 * S);
        let jittered = backoff_ms(60, 3600, 1, 0.999);
        assert!(jittered > 60 * S && jittered <= 60 * S + 6, "{jittered}");
    }

    /// Kueue v0.19.2 test/integration/singlecluster/scheduler/podsready/
    /// scheduler_test.go, "Should re-admit a timed out workload and
    /// deactivate a workload exceeded the re-queue count limit" (count
    /// grows by one per timeout; past backoffLimitCount the Workload is
    /// deactivated), and pkg/workload/workload_test.go TestSetRequeueState
    /// (a later requeueAt is never moved earlier).
    #[test]
    fn the_limit_deactivates_and_the_rest_requeue() {
        let s = Settings {
            backoff_base_seconds: 1,
            backoff_max_seconds: 10,
            backoff_limit_count: Some(2),
            ..settings()
        };
        let now = 1_000 * S;
        assert_eq!(
            on_expiry(&s, None, None, now, 0.0),
            Expiry::Requeue {
                count: 1,
                requeue_at: now + S
            }
        );
        assert_eq!(
            on_expiry(&s, Some(1), Some(now - 5 * S), now, 0.0),
            Expiry::Requeue {
                count: 2,
                requeue_at: now + 2 * S
            }
        );
        assert_eq!(
            on_expiry(&s, Some(1), Some(now + 60 * S), now, 0.0),
            Expiry::Requeue {
                count: 2,
                requeue_at: now + 60 * S
            }
        );
        assert_eq!(on_expiry(&s, Some(2), None, now, 0.0), Expiry::Deactivate);
        let endless = Settings {
            backoff_limit_count: None,
            ..s
        };
        assert!(matches!(
            on_expiry(&endless, Some(50), None, now, 0.0),
            Expiry::Requeue { count: 51, .. }
        ));
        assert_eq!(
            timeout_message("team", "job-x"),
            "Exceeded the PodsReady timeout team/job-x"
        );
    }

    /// Kueue v0.19.2 test/integration/singlecluster/scheduler/podsready/
    /// scheduler_test.go, "Should move the evicted workload at the end of
    /// the queue" (Eviction timestamp) and, under "Requeuing timestamp set
    /// to Creation", "Should prioritize workloads submitted earlier"; other
    /// evictions keep the creation time.
    #[test]
    fn a_timed_out_workload_queues_by_its_eviction_with_the_eviction_timestamp() {
        let ev = Some((true, TIMEOUT_REASON, 500));
        assert_eq!(queue_order_time(RequeuingTimestamp::Eviction, 100, ev), 500);
        assert_eq!(queue_order_time(RequeuingTimestamp::Creation, 100, ev), 100);
        assert_eq!(
            queue_order_time(
                RequeuingTimestamp::Eviction,
                100,
                Some((true, "Preempted", 500))
            ),
            100
        );
        assert_eq!(
            queue_order_time(
                RequeuingTimestamp::Eviction,
                100,
                Some((false, TIMEOUT_REASON, 500))
            ),
            100
        );
        assert_eq!(
            queue_order_time(RequeuingTimestamp::Eviction, 100, None),
            100
        );
    }

    /// Kueue v0.19.2 pkg/controller/jobs/job/job_controller.go
    /// `ReclaimablePods` (its TestReclaimablePods covers the indexed form):
    /// a single-pod Job and one without succeeded pods reclaim nothing;
    /// while the remaining completions fill every parallel slot nothing
    /// either; then parallelism − remaining.
    #[test]
    fn a_jobs_reclaimable_pods_are_its_idle_slots() {
        assert_eq!(job_reclaimable(1, Some(4), 2), 0);
        assert_eq!(job_reclaimable(3, Some(6), 0), 0);
        assert_eq!(job_reclaimable(3, Some(6), 2), 0);
        assert_eq!(job_reclaimable(3, Some(6), 4), 1);
        assert_eq!(job_reclaimable(3, Some(6), 6), 3);
        assert_eq!(job_reclaimable(3, None, 1), 1);
        assert_eq!(job_reclaimable(3, Some(2), 1), 2);
        // Kueue's LimitReclaimablePodsToPodSetSizes.
        assert_eq!(
            limit_reclaimable(
                &[("main".into(), 5), ("gone".into(), 0)],
                &[("main".into(), 3)]
            ),
            vec![("main".to_string(), 3)]
        );
    }
}
