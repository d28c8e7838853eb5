//! project-codeflare's API group, `workload.codeflare.dev`: the AppWrapper,
//! a bundle of arbitrary Kubernetes objects queued and admitted as one.
//!
//! Only `v1beta2` is served (as upstream, it is the storage version).

pub mod v1beta2;

/// The API group of the AppWrapper.
pub const GROUP: &str = "workload.codeflare.dev";
