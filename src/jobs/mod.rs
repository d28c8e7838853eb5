//! The job framework's pure core: a job kind described as data
//! ([`policy`], loaded from `policies/*.yaml`), and what Kueue's job
//! framework does with a job of that kind ([`workload`]: the Workload made
//! from it, and the patches that start and stop it; [`execution`]: its
//! maximum execution time; [`deactivation`]: the same and a deactivation
//! target for a Workload made without a job; [`readiness`]: waitForPodsReady and dynamic
//! reclaim; [`reference`]: pod templates that live in a referenced object;
//! [`autoscaling`]: an elastic job's counts taken from the object its
//! autoscaler scales;
//! [`resync`]: the queued jobs gone too long without a Workload;
//! [`machine`]: the job reconciler's decisions, one step a pass).
//! Read by the admission
//! core and by the job reconciler (`controllers::jobs`, the shell).
//!
//! Core: no I/O, no clock, no kube client (see `tests/architecture.rs`).

pub mod ancestry;
pub mod autoscaling;
pub mod deactivation;
pub mod execution;
pub mod machine;
pub mod node_failure;
pub mod pod;
pub mod pod_owner;
pub mod policy;
pub mod readiness;
pub mod reference;
pub mod resync;
pub mod role;
pub mod slices;
pub mod topology_gate;
pub mod workload;
