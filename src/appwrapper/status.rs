//! AppWrapper status as the lifecycle core sees it: phases, conditions with
//! apimachinery's `SetStatusCondition` semantics, and component status.
//! JSON names match upstream's CRD, so a controller can move these to and
//! from the API object with serde.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::podsets::PodSet;

/// `status.phase`. `Empty` is the empty string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Phase {
    #[default]
    #[serde(rename = "")]
    Empty,
    Suspended,
    Resuming,
    Running,
    Resetting,
    Suspending,
    Succeeded,
    Failed,
    Terminating,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Empty => "",
            Phase::Suspended => "Suspended",
            Phase::Resuming => "Resuming",
            Phase::Running => "Running",
            Phase::Resetting => "Resetting",
            Phase::Suspending => "Suspending",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Terminating => "Terminating",
        }
    }
}

/// AppWrapper-level condition types.
pub const QUOTA_RESERVED: &str = "QuotaReserved";
pub const RESOURCES_DEPLOYED: &str = "ResourcesDeployed";
pub const PODS_READY: &str = "PodsReady";
pub const UNHEALTHY: &str = "Unhealthy";
pub const DELETING_RESOURCES: &str = "DeletingResources";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// `metav1.Condition`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: ConditionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    pub last_transition_time: Time,
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

/// The instant as the API server stores it: `metav1.Time` has second
/// precision on the wire, so what a later reconcile reads back is truncated.
pub fn stored_time(now: Timestamp) -> Time {
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == ConditionStatus::True)
}

/// apimachinery's `meta.SetStatusCondition`: a new condition gets `now`;
/// an existing one changes `lastTransitionTime` only when its status
/// changes; reason, message and observedGeneration are always overwritten.
/// Returns whether anything changed.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        None => {
            conditions.push(Condition {
                type_: type_.to_string(),
                status,
                observed_generation: None,
                last_transition_time: stored_time(now),
                reason: reason.to_string(),
                message: message.to_string(),
            });
            true
        }
        Some(c) => {
            let mut changed = false;
            if c.status != status {
                c.status = status;
                c.last_transition_time = stored_time(now);
                changed = true;
            }
            if c.reason != reason {
                c.reason = reason.to_string();
                changed = true;
            }
            if c.message != message {
                c.message = message.to_string();
                changed = true;
            }
            changed
        }
    }
}

/// Upstream's `clearCondition`: set False only if currently True.
pub fn clear_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    if is_condition_true(conditions, type_) {
        set_condition(
            conditions,
            type_,
            ConditionStatus::False,
            reason,
            message,
            now,
        );
    }
}

/// `status.componentStatus[i]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentStatus {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub pod_sets: Vec<PodSet>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    #[serde(default)]
    pub phase: Phase,
    /// Go's `Retries`; counts entries into `Resetting`.
    #[serde(default, rename = "resettingCount")]
    pub resetting_count: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub component_status: Vec<ComponentStatus>,
}

impl Status {
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        find_condition(&self.conditions, type_)
    }
    pub fn is_true(&self, type_: &str) -> bool {
        is_condition_true(&self.conditions, type_)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn set_condition_keeps_time_unless_status_changes() {
        let mut cs = Vec::new();
        assert!(set_condition(
            &mut cs,
            UNHEALTHY,
            ConditionStatus::False,
            "A",
            "",
            t(10)
        ));
        assert_eq!(cs[0].last_transition_time, Time(t(10)));
        // reason and message change: time kept
        assert!(set_condition(
            &mut cs,
            UNHEALTHY,
            ConditionStatus::False,
            "B",
            "m",
            t(20)
        ));
        assert_eq!(cs[0].last_transition_time, Time(t(10)));
        assert_eq!((cs[0].reason.as_str(), cs[0].message.as_str()), ("B", "m"));
        // identical: no change
        assert!(!set_condition(
            &mut cs,
            UNHEALTHY,
            ConditionStatus::False,
            "B",
            "m",
            t(25)
        ));
        // status change: time moves
        assert!(set_condition(
            &mut cs,
            UNHEALTHY,
            ConditionStatus::True,
            "B",
            "m",
            t(30)
        ));
        assert_eq!(cs[0].last_transition_time, Time(t(30)));
        // clear only acts on True
        clear_condition(&mut cs, PODS_READY, "X", "", t(40));
        assert_eq!(cs.len(), 1);
        clear_condition(&mut cs, UNHEALTHY, "X", "", t(40));
        assert_eq!(cs[0].status, ConditionStatus::False);
        assert_eq!(cs[0].last_transition_time, Time(t(40)));
    }

    #[test]
    fn stored_time_truncates_to_seconds() {
        let now = Timestamp::from_millisecond(10_999).unwrap();
        assert_eq!(stored_time(now), Time(t(10)));
    }

    #[test]
    fn status_json_uses_upstream_names() {
        let mut s = Status {
            phase: Phase::Running,
            resetting_count: 2,
            ..Default::default()
        };
        set_condition(
            &mut s.conditions,
            QUOTA_RESERVED,
            ConditionStatus::True,
            "Resuming",
            "Suspend is false",
            t(0),
        );
        s.component_status.push(ComponentStatus {
            name: "a".into(),
            kind: "Pod".into(),
            api_version: "v1".into(),
            pod_sets: vec![PodSet {
                replicas: None,
                path: "template".into(),
                annotations: Default::default(),
            }],
            conditions: vec![],
        });
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            json!({
                "phase": "Running",
                "resettingCount": 2,
                "conditions": [{"type": "QuotaReserved", "status": "True",
                    "lastTransitionTime": "1970-01-01T00:00:00Z",
                    "reason": "Resuming", "message": "Suspend is false"}],
                "componentStatus": [{"name": "a", "kind": "Pod", "apiVersion": "v1",
                    "podSets": [{"path": "template"}]}]
            })
        );
        let back: Status = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
        let empty: Status = serde_json::from_value(json!({})).unwrap();
        assert_eq!(empty.phase, Phase::Empty);
        let p: Phase = serde_json::from_value(json!("")).unwrap();
        assert_eq!(p, Phase::Empty);
    }
}
