//! How a pod (or a job's pod template) asks for devices. Core PodSpec has no
//! field for it, so a pod template names its claims in an annotation, in
//! the shape of the prototype's proposed `spec.deviceClaims`:
//!
//! ```yaml
//! metadata:
//!   annotations:
//!     devmgmtproto.k8s.io/device-claims: |
//!       [{"name": "gpus", "claim": {"deviceClass": "foozer", "minDeviceCount": 2}},
//!        {"name": "nic", "claimTemplateName": "fast-nic"}]
//! ```
//!
//! Each entry has a `name` and one of `claim` (a DeviceClaim spec inline),
//! `claimTemplateName` (a DeviceClaim in the pod's namespace used as a
//! template: every pod gets its own copy) or `claimName` (a DeviceClaim in
//! the pod's namespace; for a single pod, whose allocation `batchgate
//! schedule --write` records in that claim's status). A pod with the
//! prototype's `spec.deviceClaims` (its testdata) is read the same way.

use crate::vocabulary::pointer::At;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::devices::v1alpha1::DeviceClaimSpec;

use super::Claim;

/// The annotation on a pod template naming its device claims.
pub const ANNOTATION: &str = "devmgmtproto.k8s.io/device-claims";

/// One entry of the annotation (or of the prototype's `spec.deviceClaims`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodClaim {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<DeviceClaimSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_template_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_name: Option<String>,
}

impl PodClaim {
    /// The DeviceClaim object this entry reads, if it names one.
    pub fn object_name(&self) -> Option<&str> {
        self.claim_template_name
            .as_deref()
            .or(self.claim_name.as_deref())
    }
}

/// The device claims of a pod or pod template (`{metadata, spec}`); none
/// when it names none. The error names the field and what is wrong.
pub fn of_template(template: &Value) -> Result<Vec<PodClaim>, String> {
    let mut out = Vec::new();
    if let Some(raw) = template
        .at("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION))
    {
        let field = format!("metadata.annotations[{ANNOTATION}]");
        let text = raw
            .as_str()
            .ok_or_else(|| format!("{field}: must be a string"))?;
        let list: Vec<PodClaim> = serde_yaml::from_str(text).map_err(|e| {
            format!(
                "{field}: must be a list of {{name, claim | claimTemplateName | claimName}}: {e}"
            )
        })?;
        out.extend(check(list, &field)?);
    }
    if let Some(raw) = template.at("/spec/deviceClaims") {
        let list: Vec<PodClaim> = serde_json::from_value(raw.clone()).map_err(|e| {
            format!("spec.deviceClaims: must be a list of {{name, claim | claimTemplateName | claimName}}: {e}")
        })?;
        out.extend(check(list, "spec.deviceClaims")?);
    }
    let mut names: Vec<&str> = out.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("device claim {:?} is named twice", w[0]));
    }
    Ok(out)
}

fn check(list: Vec<PodClaim>, field: &str) -> Result<Vec<PodClaim>, String> {
    for (i, c) in list.iter().enumerate() {
        if c.name.is_empty() {
            return Err(format!("{field}[{i}].name: Required value"));
        }
        let set = [
            c.claim.is_some(),
            c.claim_template_name.is_some(),
            c.claim_name.is_some(),
        ]
        .iter()
        .filter(|x| **x)
        .count();
        if set != 1 {
            return Err(format!(
                "{field}[{i}]: exactly one of claim, claimTemplateName, claimName must be set, found {set}"
            ));
        }
    }
    Ok(list)
}

/// The claims to place, with named DeviceClaims looked up by `lookup`
/// (`Err` names the first missing one).
pub fn resolve(
    claims: &[PodClaim],
    lookup: impl Fn(&str) -> Option<DeviceClaimSpec>,
) -> Result<Vec<Claim>, String> {
    claims
        .iter()
        .map(|c| {
            let spec = match (&c.claim, c.object_name()) {
                (Some(spec), _) => spec.clone(),
                (None, Some(obj)) => lookup(obj).ok_or_else(|| {
                    format!("device claim {:?}: DeviceClaim {obj:?} not found", c.name)
                })?,
                (None, None) => {
                    return Err(format!("device claim {:?} names no claim", c.name));
                }
            };
            Ok(Claim {
                name: c.name.clone(),
                spec,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_annotation_and_the_prototypes_field() {
        let t = json!({
            "metadata": {"annotations": {ANNOTATION:
                "[{\"name\": \"gpus\", \"claim\": {\"deviceClass\": \"foozer\", \"minDeviceCount\": 2}}]"}},
            "spec": {"deviceClaims": [{"name": "foozer-gpu", "claimTemplateName": "superfast"}]},
        });
        let claims = of_template(&t).unwrap();
        assert_eq!(claims.len(), 2);
        assert_eq!(claims[0].claim.as_ref().unwrap().min_device_count, Some(2));
        let resolved = resolve(&claims, |n| {
            (n == "superfast").then(|| DeviceClaimSpec {
                device_class: "example.com-foozer-single".into(),
                ..DeviceClaimSpec::default()
            })
        })
        .unwrap();
        assert_eq!(resolved[1].name, "foozer-gpu");
        assert_eq!(resolved[1].spec.device_class, "example.com-foozer-single");
        assert_eq!(
            resolve(&claims, |_| None).unwrap_err(),
            "device claim \"foozer-gpu\": DeviceClaim \"superfast\" not found"
        );
        assert!(of_template(&json!({"spec": {}})).unwrap().is_empty());
    }

    #[test]
    fn bad_entries_name_the_field() {
        let bad = |v: &str| {
            of_template(&json!({"metadata": {"annotations": {ANNOTATION: v}}})).unwrap_err()
        };
        assert_eq!(
            bad("[{\"name\": \"a\"}]"),
            "metadata.annotations[devmgmtproto.k8s.io/device-claims][0]: exactly one of claim, claimTemplateName, claimName must be set, found 0"
        );
        assert!(bad("{").starts_with(
            "metadata.annotations[devmgmtproto.k8s.io/device-claims]: must be a list of"
        ));
        assert_eq!(
            bad("[{\"name\": \"a\", \"claimName\": \"x\"}, {\"name\": \"a\", \"claimName\": \"y\"}]"),
            "device claim \"a\" is named twice"
        );
    }
}
