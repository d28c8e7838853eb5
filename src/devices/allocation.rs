//! Where admitted work holds devices, as recorded on its Workload: the
//! annotation `devmgmtproto.k8s.io/device-allocation`, one entry per pod set
//! with devices, written before the Workload's admission (so an admitted
//! Workload always carries it, and a restart recounts every device held).

use serde::{Deserialize, Serialize};

use super::{GroupPlacement, Usage};

/// The Workload annotation holding a [`Vec<PodSetAllocation>`] as JSON.
pub const ANNOTATION: &str = "devmgmtproto.k8s.io/device-allocation";

/// One pod set's devices: its node and each pod's pools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSetAllocation {
    pub pod_set: String,
    #[serde(flatten)]
    pub placement: GroupPlacement,
}

/// Reads the annotation's value; `Err` for a value that is not one.
pub fn parse(value: &str) -> Result<Vec<PodSetAllocation>, String> {
    serde_json::from_str(value).map_err(|e| format!("annotation {ANNOTATION}: {e}"))
}

pub fn render(allocs: &[PodSetAllocation]) -> String {
    serde_json::to_string(allocs).unwrap_or_else(|_| "[]".into())
}

/// Adds every device `allocs` hold to `usage`.
pub fn charge(usage: &mut Usage, allocs: &[PodSetAllocation]) {
    for a in allocs {
        for c in a.placement.pods.iter().flatten() {
            usage.add(&c.allocations);
        }
    }
}

/// The node of a pod set, if it has devices.
pub fn node_of<'a>(allocs: &'a [PodSetAllocation], pod_set: &str) -> Option<&'a str> {
    allocs
        .iter()
        .find(|a| a.pod_set == pod_set)
        .map(|a| a.placement.node_name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{api::devices::v1alpha1::DevicePoolAllocation, devices::ClaimAllocation};

    #[test]
    fn round_trip_and_charge() {
        let a = vec![PodSetAllocation {
            pod_set: "main".into(),
            placement: GroupPlacement {
                node_name: "n1".into(),
                pods: vec![
                    vec![ClaimAllocation {
                        claim_name: "gpus".into(),
                        node_name: "n1".into(),
                        allocations: vec![DevicePoolAllocation {
                            device_pool_name: "n1-foozer".into(),
                            device_count: 2,
                        }],
                    }];
                    2
                ],
            },
        }];
        let text = render(&a);
        assert!(
            text.starts_with("[{\"podSet\":\"main\",\"nodeName\":\"n1\",\"pods\":"),
            "{text}"
        );
        assert_eq!(parse(&text).unwrap(), a);
        let mut u = Usage::default();
        charge(&mut u, &a);
        assert_eq!(u.used("n1-foozer"), 4);
        assert_eq!(node_of(&a, "main"), Some("n1"));
        assert!(parse("{").is_err());
    }
}
