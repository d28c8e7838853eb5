//! batchgate: an admission webhook for queued batch work, wire-compatible
//! with Kueue, and its reconciler.
//!
//! # Layers
//!
//! A pure core takes plain data and returns decisions: no network, no
//! kube client, no file or process I/O, time as a parameter.
//!
//! - [`admission`]: the admission router (one entry point from review
//!   bytes to answer bytes) and every family's rules; entitlement checks;
//!   the webhook configurations of the integrated kinds.
//! - [`jobs`]: the job framework — integration policies (a job kind as
//!   data) and the Workload made from a job.
//! - [`queueing`]: the quota engine, and the visibility API computed from it.
//! - [`appwrapper`], [`prescale`], [`devices`]: the other capabilities' state
//!   machines and rules.
//! - [`api`]: wire types (Kueue, AppWrapper, PreScaledCronJob, device kinds,
//!   label selectors), CRDs and conversion.
//! - [`certs`]: certificate making and rotation decisions.
//! - [`config`]: the configuration file, read into each room's settings.
//! - [`vocabulary`]: the floor — Kueue's label and annotation keys, JSON
//!   pointers and patches, Go's parsing, quantities — which every room may
//!   speak and which imports no other room.
//!
//! The shell talks to the world and stays thin:
//!
//! - [`metrics`], [`tls`]: the Prometheus registry and the serving
//!   certificate (its store and hot reload), used by `cluster` and `server`.
//! - [`server`]: HTTPS, limits, probes, the resolution of the checks the
//!   router asks for. It names no family.
//! - [`cluster`]: kube glue — SubjectAccessReviews, discovery, watch-backed
//!   facts, the serving-certificate Secret.
//! - [`controllers`]: kube-runtime controllers on one shared context
//!   ([`controllers::context`]); they never import each other in a cycle.
//! - [`cli`], [`kueuectl`]: the `batchgate` and `kubectl-kueue` commands.
//!
//! The core never imports the shell, and the top-level modules stand in
//! layers (the vocabulary floor, `api`, the core rooms, the shell) with no
//! import from a lower layer to a higher one; `tests/architecture.rs`
//! checks both, and `docs/architecture.md` gives the order and walks one
//! review and one queued Job through.
//! [`testing`] holds the fuzz targets' bodies, outside both layers.

pub mod admission;
pub mod api;
pub mod appwrapper;
pub mod certs;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod controllers;
pub mod devices;
pub mod jobs;
pub mod kueuectl;
pub mod metrics;
pub mod multikueue;
pub mod prescale;
pub mod queueing;
pub mod server;
pub mod testing;
pub mod tls;
pub mod vocabulary;
