//! The APIs batchgate serves, as Rust types that generate their own
//! CustomResourceDefinitions.
//!
//! The types mirror the upstream projects field for field (same JSON names,
//! defaults, enums, limits and CEL rules), so objects written for the
//! upstream controllers apply unchanged and round-trip without losing
//! fields. [`crd`] finishes what the derive produces (printer columns
//! priorities, CEL on embedded k8s types, int-or-string shapes) and renders
//! the YAML kept in `manifests/crds/`.

pub mod appwrapper;
pub mod crd;
pub mod devices;
pub mod fields;
pub mod kueue;
pub mod prescale;
pub mod schema;
pub mod selector;

/// batchgate's own namespace unless configured: where the shipped
/// manifests install it, and where the CRDs' conversion webhook points.
pub const DEFAULT_NAMESPACE: &str = "batchgate-system";
