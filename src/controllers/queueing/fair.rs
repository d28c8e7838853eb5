//! Fair sharing in the queueing controller: the weights of ClusterQueues
//! and Cohorts fed to the engine, and the Cohorts' `status.fairSharing`.

use super::*;

impl Controller {
    /// Records a ClusterQueue's or Cohort's `spec.fairSharing.weight` and
    /// hands the engine the new weights when one changed.
    pub(super) fn on_fair_weight(
        &mut self,
        cohort: bool,
        name: &str,
        fs: Option<&api::FairSharing>,
    ) {
        let Some(fair) = &mut self.fair else { return };
        let weight = match translation::fair_weight(fs) {
            Ok(w) => w,
            Err(e) => {
                warn!(name, error = %e, "fair sharing weight not usable; weight 1 applies");
                None
            }
        };
        let weights = if cohort {
            &mut fair.cohort_weights
        } else {
            &mut fair.cluster_queue_weights
        };
        let before = match weight {
            Some(w) => weights.insert(name.to_string(), w),
            None => weights.remove(name),
        };
        if before != weight && self.started {
            self.engine.set_fair_sharing(self.fair.clone());
        }
    }

    /// Cohort statuses whose weighted share changed, as
    /// `(QueueKey::Cohort, status)`; Kueue writes them only with fair
    /// sharing on, and only on Cohort objects.
    pub(super) fn cohort_statuses(&self) -> Vec<(QueueKey, Value)> {
        if self.fair.is_none() {
            return Vec::new();
        }
        self.engine
            .cohort_weighted_shares()
            .into_iter()
            .filter(|(name, _)| self.engine.cohort(name).is_some())
            .filter_map(|(name, share)| {
                let status = json!({"fairSharing": {"weightedShare": share}});
                (self.cohort_written.get(&name) != Some(&status))
                    .then_some((QueueKey::Cohort(name), status))
            })
            .collect()
    }
}
