//! A read-only view of a third-party job object held as raw JSON.
//!
//! batchgate never deserializes a job into typed structs: whatever fields it
//! does not know stay untouched in the raw value, and the view only reads the
//! handful of fields the rules need, checking their types on the way.

use serde_json::{Map, Value};

use super::field::{annotation_path, label_path};
use crate::jobs::policy::{json_type, Interest, Policy, PolicySet};
use crate::vocabulary::{
    keys::{QUEUE_NAME_LABEL, STOPPING_ANNOTATION},
    pointer::Pointer,
};

/// Name of the LocalQueue (and WorkloadPriorityClass) used when none is named.
pub const DEFAULT_NAME: &str = "default";

/// What reviews must read of an object: the metadata [`JobObject`] uses,
/// plus what every loaded policy's rules read.
pub fn interest(policies: &PolicySet) -> Interest {
    let mut root = Interest::default();
    for p in [
        "/metadata/labels",
        "/metadata/annotations",
        "/metadata/deletionTimestamp",
        "/metadata/ownerReferences",
    ] {
        if let Ok(ptr) = Pointer::parse(p) {
            root.whole(&ptr);
        }
    }
    for policy in policies.iter() {
        policy.note_interest(&mut root);
    }
    root
}

/// Why an object could not be read: the field and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct DecodeError {
    pub field: String,
    pub message: String,
}

impl DecodeError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        DecodeError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A controller owner reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerRef<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
}

#[derive(Debug, Clone, Copy)]
pub struct JobObject<'a> {
    pub raw: &'a Value,
    labels: Option<&'a Map<String, Value>>,
    annotations: Option<&'a Map<String, Value>>,
    suspend: Option<bool>,
    deleting: bool,
    controller: Option<OwnerRef<'a>>,
}

fn string_map<'a>(
    meta: &'a Map<String, Value>,
    key: &str,
    path: fn(&str) -> String,
) -> Result<Option<&'a Map<String, Value>>, DecodeError> {
    match meta.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => {
            for (k, v) in m {
                if !v.is_string() {
                    return Err(DecodeError::new(
                        path(k),
                        format!("must be a string, found {}", json_type(v)),
                    ));
                }
            }
            Ok(Some(m))
        }
        Some(other) => Err(DecodeError::new(
            format!("metadata.{key}"),
            format!(
                "must be a map of string keys to string values, found {}",
                json_type(other)
            ),
        )),
    }
}

/// Reads a boolean at `ptr`, requiring every step on the way to be an object.
pub fn read_bool(obj: &Value, ptr: &Pointer) -> Result<Option<bool>, DecodeError> {
    let mut cur = obj;
    for (i, t) in ptr.tokens().iter().enumerate() {
        cur = match cur {
            Value::Object(m) => match m.get(t.as_str()) {
                None | Some(Value::Null) => return Ok(None),
                Some(v) => v,
            },
            other => {
                let parent = Pointer::parse(&prefix(ptr, i)).map(|p| p.field_path());
                return Err(DecodeError::new(
                    parent.unwrap_or_default(),
                    format!("must be an object, found {}", json_type(other)),
                ));
            }
        };
    }
    match cur {
        Value::Bool(b) => Ok(Some(*b)),
        other => Err(DecodeError::new(
            ptr.field_path(),
            format!("must be a boolean, found {}", json_type(other)),
        )),
    }
}

fn prefix(ptr: &Pointer, n: usize) -> String {
    ptr.tokens()[..n]
        .iter()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

impl<'a> JobObject<'a> {
    /// Reads the fields batchgate's rules use, or says which field is wrong.
    pub fn parse(raw: &'a Value, policy: &Policy) -> Result<Self, DecodeError> {
        let Value::Object(root) = raw else {
            return Err(DecodeError::new(
                "object",
                format!("must be a JSON object, found {}", json_type(raw)),
            ));
        };
        let (mut labels, mut annotations, mut deleting, mut controller) = (None, None, false, None);
        match root.get("metadata") {
            None | Some(Value::Null) => {}
            Some(Value::Object(meta)) => {
                labels = string_map(meta, "labels", label_path)?;
                annotations = string_map(meta, "annotations", annotation_path)?;
                deleting = !matches!(meta.get("deletionTimestamp"), None | Some(Value::Null));
                controller = controller_owner(meta)?;
            }
            Some(other) => {
                return Err(DecodeError::new(
                    "metadata",
                    format!("must be an object, found {}", json_type(other)),
                ))
            }
        }
        // A gated kind (a Pod) is suspended while gated or ended.
        // A kind queued through its pods is "suspended" while none is ready
        // (Kueue: `status.readyReplicas == 0`).
        let suspend = match (&policy.gate, &policy.pod_owner) {
            (Some(g), _) => Some(g.holds(raw)),
            (None, Some(o)) => Some(o.ready.resolve(raw).and_then(Value::as_i64).unwrap_or(0) == 0),
            (None, None) => read_bool(raw, &policy.suspend)?,
        };
        Ok(JobObject {
            raw,
            labels,
            annotations,
            suspend,
            deleting,
            controller,
        })
    }

    pub fn label(&self, key: &str) -> Option<&'a str> {
        self.labels?.get(key)?.as_str()
    }

    pub fn annotation(&self, key: &str) -> Option<&'a str> {
        self.annotations?.get(key)?.as_str()
    }

    /// The raw suspend field (absent reads as not suspended).
    pub fn suspend_field(&self) -> bool {
        self.suspend == Some(true)
    }

    /// Kueue's `IsSuspended`: suspend is true and the job is not being stopped.
    pub fn is_suspended(&self) -> bool {
        self.suspend_field() && self.annotation(STOPPING_ANNOTATION) != Some("true")
    }

    /// The queue name; an empty label counts as none.
    pub fn queue_name(&self) -> Option<&'a str> {
        self.label(QUEUE_NAME_LABEL).filter(|q| !q.is_empty())
    }

    pub fn deleting(&self) -> bool {
        self.deleting
    }

    pub fn controller(&self) -> Option<OwnerRef<'a>> {
        self.controller
    }

    /// An integer field, for kind-specific rules (`None` when absent).
    pub fn int_at(&self, ptr: &str) -> Result<Option<i64>, DecodeError> {
        let p = Pointer::parse(ptr).map_err(|m| DecodeError::new(ptr, m))?;
        match p.resolve(self.raw) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| {
                DecodeError::new(
                    p.field_path(),
                    "must be an integer, found a non-integer number",
                )
            }),
            Some(other) => Err(DecodeError::new(
                p.field_path(),
                format!("must be an integer, found {}", json_type(other)),
            )),
        }
    }

    pub fn str_at(&self, ptr: &str) -> Option<&'a str> {
        Pointer::parse(ptr).ok()?.resolve(self.raw)?.as_str()
    }
}

fn controller_owner(meta: &Map<String, Value>) -> Result<Option<OwnerRef<'_>>, DecodeError> {
    let refs = match meta.get("ownerReferences") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(refs)) => refs,
        Some(other) => {
            return Err(DecodeError::new(
                "metadata.ownerReferences",
                format!("must be a list, found {}", json_type(other)),
            ))
        }
    };
    for (i, r) in refs.iter().enumerate() {
        let Value::Object(r) = r else {
            return Err(DecodeError::new(
                format!("metadata.ownerReferences[{i}]"),
                "must be an object",
            ));
        };
        if r.get("controller") == Some(&Value::Bool(true)) {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
            return Ok(Some(OwnerRef {
                api_version: s("apiVersion"),
                kind: s("kind"),
                name: s("name"),
            }));
        }
    }
    Ok(None)
}
