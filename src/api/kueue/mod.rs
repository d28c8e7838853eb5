//! Kueue's API group, `kueue.x-k8s.io`.
//!
//! Only `v1beta2` is served, and it is the storage version. Upstream Kueue
//! also serves the deprecated `v1beta1` through a conversion webhook;
//! batchgate does not, so `v1beta1` manifests need converting first (see the
//! README).

pub mod v1beta2;

/// The API group of every Kueue kind.
pub const GROUP: &str = "kueue.x-k8s.io";
