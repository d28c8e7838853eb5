//! The engine's part in admission checks: a ClusterQueue whose checks are
//! missing or inactive admits nothing (Kueue's `AdmissionCheckNotFound`,
//! `AdmissionCheckInactive`), and which checks an admission needs. The
//! per-Workload states are kept by the shell (see [`crate::queueing::admission_checks`]).

use std::collections::{BTreeMap, BTreeSet};

use super::Engine;
use crate::queueing::{
    admission_checks::{self as checks, CheckInfo, Strategy},
    Admission, ClusterQueue,
};
use crate::vocabulary::keys::MULTIKUEUE_CONTROLLER;

impl Engine {
    /// Every AdmissionCheck that exists, by name (replacing what was known).
    pub fn set_admission_checks(&mut self, known: BTreeMap<String, CheckInfo>) {
        self.join_added();
        if self.admission_checks == known {
            return;
        }
        self.admission_checks = known;
        let users: Vec<String> = self.cq_checks.keys().cloned().collect();
        self.after_checks_change(&users);
    }

    /// A ClusterQueue's `spec.admissionChecksStrategy.admissionChecks` as
    /// `(name, onFlavors)` (empty: no checks).
    pub fn set_cluster_queue_checks(&mut self, cq: &str, rules: Vec<(String, Vec<String>)>) {
        self.join_added();
        if self
            .cq_checks
            .get(cq)
            .map_or(rules.is_empty(), |r| *r == rules)
        {
            return;
        }
        if rules.is_empty() {
            self.cq_checks.remove(cq);
        } else {
            self.cq_checks.insert(cq.to_string(), rules);
        }
        self.after_checks_change(&[cq.to_string()]);
    }

    fn after_checks_change(&mut self, cqs: &[String]) {
        self.config_generation += 1;
        for cq in cqs {
            self.refresh_queued_status(cq);
        }
        self.requeue_inadmissible(cqs.iter().map(String::as_str));
    }

    /// The ClusterQueue's checks with the flavors each applies to.
    pub fn check_strategy(&self, cq: &str) -> Strategy {
        let (Some(rules), Some(q)) = (self.cq_checks.get(cq), self.cluster_queues.get(cq)) else {
            return Strategy::new();
        };
        checks::strategy(rules.iter().cloned(), q.flavor_names())
    }

    /// The checks a Workload admitted this way must pass before it counts
    /// as admitted (empty: admitted at once).
    pub fn checks_for_admission(&self, admission: &Admission) -> BTreeSet<String> {
        let strategy = self.check_strategy(&admission.cluster_queue);
        if strategy.is_empty() {
            return BTreeSet::new();
        }
        let assigned: BTreeSet<String> = admission
            .pod_set_assignments
            .iter()
            .flat_map(|p| p.flavors.values().cloned())
            .collect();
        let all = self.cq_flavor_set(&admission.cluster_queue);
        checks::for_workload(&strategy, &all, Some(&assigned))
    }

    pub(super) fn cq_flavor_set(&self, cq: &str) -> BTreeSet<String> {
        self.cluster_queues
            .get(cq)
            .map(|q| q.flavor_names().into_iter().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Does the queue use a MultiKueue AdmissionCheck (it then places
    /// pods on its workers, not here)?
    pub(super) fn has_multikueue_check(&self, cq: &ClusterQueue) -> bool {
        self.cq_checks.get(&cq.name).is_some_and(|rules| {
            rules.iter().any(|(name, _)| {
                self.admission_checks
                    .get(name)
                    .is_some_and(|c| c.controller == MULTIKUEUE_CONTROLLER)
            })
        })
    }

    /// Kueue's `inactiveReason` parts for the queue's checks.
    pub(super) fn unusable_checks(&self, cq: &ClusterQueue) -> Vec<(&'static str, String)> {
        let strategy = self.check_strategy(&cq.name);
        if strategy.is_empty() {
            return Vec::new();
        }
        let (missing, inactive) = checks::unusable(&strategy, &self.admission_checks);
        checks::inactive_parts(&missing, &inactive)
    }
}
