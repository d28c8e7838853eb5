//! Cohorts as the engine sees them (`kueue.x-k8s.io/v1beta2` Cohort): a
//! node of the quota tree, with an optional parent and quota of its own.
//!
//! A Cohort named by a ClusterQueue's `cohortName` or another Cohort's
//! `parentName` need not exist as an object: it is then implicit, a root
//! without quota (Kueue's "default Cohort").

use super::cluster_queue::ResourceGroup;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cohort {
    pub name: String,
    /// `spec.parentName`.
    pub parent: Option<String>,
    /// `spec.resourceGroups`: quota added on top of the members'.
    pub resource_groups: Vec<ResourceGroup>,
}
