//! batchgate: an admission webhook for queued batch work, wire-compatible
//! with Kueue.
//!
//! The pure core (`policy`, `admission`, `selector`) takes plain data and
//! returns decisions; the shell (`server`, `cluster`, `cli`) talks to the
//! world. See ARCHITECTURE.md in the shared folder for the shape.

pub mod admission;
pub mod api;
pub mod appwrapper;
pub mod certs;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod controllers;
pub mod devices;
pub mod entitlement;
pub mod fuzzing;
pub mod kueuectl;
pub mod manifests;
pub mod policy;
pub mod prescale;
pub mod queueing;
pub mod selector;
pub mod server;
pub mod visibility;
pub mod warmup;
pub mod workload;
