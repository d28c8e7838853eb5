//! Admission checks in the queueing controller: the AdmissionChecks and
//! each ClusterQueue's `admissionChecksStrategy` go to the engine (a queue
//! whose checks are missing or inactive admits nothing), and an admission
//! that needs checks is written as a quota reservation only: `Admitted`
//! waits until every check is Ready (the checks controller,
//! [`crate::controllers::check_states`], writes it then, as Kueue's workload
//! controller does).

use super::*;
use crate::queueing::admission_checks::CheckInfo;

/// The AdmissionChecks seen, and the rules of each ClusterQueue, kept here
/// so they outlive the engine's rebuild.
#[derive(Default)]
pub(super) struct Feed {
    known: BTreeMap<String, CheckInfo>,
    relist: Option<BTreeMap<String, CheckInfo>>,
    rules: BTreeMap<String, Vec<(String, Vec<String>)>>,
}

fn info(ac: &api::AdmissionCheck) -> CheckInfo {
    CheckInfo {
        controller: ac.spec.controller_name.clone(),
        active: ac.is_active(),
    }
}

/// `spec.admissionChecksStrategy.admissionChecks` as `(name, onFlavors)`.
pub(super) fn rules(cq: &api::ClusterQueue) -> Vec<(String, Vec<String>)> {
    cq.spec
        .admission_checks_strategy
        .iter()
        .flat_map(|s| &s.admission_checks)
        .map(|r| (r.name.clone(), r.on_flavors.clone().unwrap_or_default()))
        .collect()
}

impl Controller {
    pub(super) fn on_admission_check(&mut self, ev: Event<api::AdmissionCheck>) {
        let f = &mut self.checks;
        match ev {
            Event::Init => f.relist = Some(BTreeMap::new()),
            Event::InitApply(ac) => {
                if let Some(r) = &mut f.relist {
                    r.insert(ac.name_any(), info(&ac));
                }
            }
            Event::InitDone => {
                if let Some(r) = f.relist.take() {
                    f.known = r;
                }
            }
            Event::Apply(ac) => {
                f.known.insert(ac.name_any(), info(&ac));
            }
            Event::Delete(ac) => {
                f.known.remove(&ac.name_any());
            }
        }
        if self.started {
            self.engine.set_admission_checks(self.checks.known.clone());
            self.status_due = true;
        }
    }

    pub(super) fn on_cluster_queue_checks(&mut self, cq: &api::ClusterQueue) {
        let r = rules(cq);
        if self.started {
            self.engine
                .set_cluster_queue_checks(&cq.name_any(), r.clone());
            self.status_due = true;
        }
        if r.is_empty() {
            self.checks.rules.remove(&cq.name_any());
        } else {
            self.checks.rules.insert(cq.name_any(), r);
        }
    }

    /// Into a freshly rebuilt engine.
    pub(super) fn apply_checks(&mut self) {
        self.engine.set_admission_checks(self.checks.known.clone());
        for (cq, r) in &self.checks.rules {
            self.engine.set_cluster_queue_checks(cq, r.clone());
        }
    }

    /// Whether this admission must wait for admission checks.
    pub(super) fn held_by_checks(&self, w: &Write) -> bool {
        match w {
            Write::Admit(a) => !self.engine.checks_for_admission(a).is_empty(),
            _ => false,
        }
    }
}

/// An admission's status write without `Admitted=True`: the `Admitted`
/// condition stays as it was (Kueue's scheduler sets it only when every
/// required check is already Ready).
pub(super) fn hold_for_checks(status: &mut Value, before: &[Condition]) {
    let Some(Value::Array(conds)) = status.get_mut("conditions") else {
        return;
    };
    conds.retain(|c| c["type"] != condition::ADMITTED);
    if let Some(prev) = before.iter().find(|c| c.type_ == condition::ADMITTED) {
        if let Ok(v) = serde_json::to_value(prev) {
            conds.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queueing::{Admission, PodSetAssignment};

    /// Kueue v0.19.2 pkg/scheduler/scheduler.go `prepareWorkload` (and
    /// scheduler_test.go's admissions into queues with checks): the quota
    /// is reserved, `Admitted` is not set while checks are not Ready.
    #[test]
    fn an_admission_held_by_checks_reserves_quota_only() {
        let a = Admission {
            cluster_queue: "cq".into(),
            pod_set_assignments: vec![PodSetAssignment {
                name: "main".into(),
                flavors: [("cpu".to_string(), "f".to_string())].into(),
                resource_usage: [("cpu".to_string(), 1000)].into(),
                count: 1,
                topology: None,
            }],
        };
        let now = Time(k8s_openapi::jiff::Timestamp::from_second(10).unwrap());
        let mut s = decisions::render(&Write::Admit(a), &[], Some(1), &now).unwrap();
        hold_for_checks(&mut s, &[]);
        let c = Conditions(serde_json::from_value(s["conditions"].clone()).unwrap());
        assert!(c.is_true(condition::QUOTA_RESERVED));
        assert!(c.get(condition::ADMITTED).is_none());
        assert_eq!(s["admission"]["clusterQueue"], "cq");
    }
}
