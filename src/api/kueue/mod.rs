//! Kueue's API group, `kueue.x-k8s.io`.
//!
//! `v1beta2` is the storage version; the deprecated `v1beta1` is served
//! too, converted by [`conversion`] behind the `/convert` webhook, as Kueue
//! v0.19.2 does.

pub mod conversion;
pub mod v1beta1;
pub mod v1beta2;

/// The API group of every Kueue kind.
pub const GROUP: &str = "kueue.x-k8s.io";
