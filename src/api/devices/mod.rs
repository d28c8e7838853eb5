//! The k8srm prototype's device API, `devmgmtproto.k8s.io/v1alpha1`, in its
//! pool/count model (DeviceDriver, DeviceClass, DeviceClaim, DevicePool).
//! See [`v1alpha1`] for the differences from the prototype's Go types.

pub mod v1alpha1;

/// The API group of every device kind.
pub const GROUP: &str = "devmgmtproto.k8s.io";
/// The version served and stored.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of every device object.
pub const API_VERSION: &str = "devmgmtproto.k8s.io/v1alpha1";
