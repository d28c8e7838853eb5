//! The `admission.k8s.io/v1` AdmissionReview wire format.
//!
//! Parsing is defensive and cheap. Objects are read only as far as the
//! policies look ([`Interest`]); what is read is built by serde_json, which
//! bounds nesting at 128 levels (deeper is an error, not a stack overflow),
//! and what is skipped is checked by serde_json's iterative skipper, which
//! uses no stack at any depth (its memory is bounded by the body limit).
//! Invalid UTF-8 in what is read is an error. When a body cannot be parsed
//! at all, the request uid is still salvaged where possible so the
//! apiserver gets a proper denial instead of a transport error.

use serde::{
    de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor},
    Deserialize, Serialize,
};
use serde_json::{Map, Number, Value};

use std::cell::Cell;

use super::Operation;
use crate::jobs::{policy::Interest, role};

pub const API_VERSION: &str = "admission.k8s.io/v1";

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupVersionKind {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    pub uid: String,
    #[serde(default)]
    pub kind: Option<GroupVersionKind>,
    #[serde(default)]
    pub operation: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// Only the parts the rules read (see [`Interest`]); the derived parse
    /// is used for error messages only and reads everything.
    #[serde(default)]
    pub object: Option<Value>,
    #[serde(default)]
    pub old_object: Option<Value>,
    #[serde(default)]
    pub user_info: UserInfo,
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// The role of `object` (a pod's), when its interest hashes it as it
    /// is read: the role's fields are then not in `object`.
    #[serde(skip)]
    pub role_hash: Option<String>,
}

impl AdmissionRequest {
    pub fn operation(&self) -> Result<Operation, String> {
        match self.operation.as_deref() {
            Some("CREATE") => Ok(Operation::Create),
            Some("UPDATE") => Ok(Operation::Update),
            Some("DELETE") => Ok(Operation::Delete),
            Some("CONNECT") => Ok(Operation::Connect),
            Some(other) => Err(format!(
                "request.operation: Unsupported value: {other:?}: supported values: \"CREATE\", \"UPDATE\", \"DELETE\", \"CONNECT\""
            )),
            None => Err("request.operation: Required value".into()),
        }
    }
}

/// Reads a value keeping only what `node` asks for: `whole` nodes in full,
/// listed keys of objects, elements of lists with `each`. Everything else is
/// syntax-checked and dropped without being built; an object or list is kept
/// (empty) wherever the interest reaches, so presence and type survive. A
/// `role` node's role is hashed as it is read, into `role`.
struct Sparse<'n> {
    node: &'n Interest,
    role: &'n Cell<Option<String>>,
}

impl<'n> Sparse<'n> {
    fn at(&self, node: &'n Interest) -> Sparse<'n> {
        Sparse {
            node,
            role: self.role,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Sparse<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.node.whole {
            Value::deserialize(d)
        } else {
            d.deserialize_any(self)
        }
    }
}

/// What an object key is to the interest.
enum Hit<'n> {
    Read(&'n str, &'n Interest),
    /// A field of the pod's role, and the interest's node if it reads it too.
    Role(role::Field, Option<&'n str>),
    Skip,
}

/// Matches an object key against the interest without allocating; a role
/// field only where the interest reads the role.
struct Key<'n>(&'n Interest);

impl<'de, 'n> DeserializeSeed<'de> for Key<'n> {
    type Value = Hit<'n>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'n> Visitor<'de> for Key<'n> {
    type Value = Hit<'n>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        let read = self.0.keys.iter().find(|(k, _)| k == v);
        if self.0.role {
            if let Some(field) = role::Field::named(v) {
                return Ok(Hit::Role(field, read.map(|(k, _)| k.as_str())));
            }
        }
        Ok(read.map_or(Hit::Skip, |(k, n)| Hit::Read(k.as_str(), n)))
    }
}

impl<'de> Visitor<'de> for Sparse<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut shape = self.node.role.then(role::Shape::default);
        while let Some(hit) = map.next_key_seed(Key(self.node))? {
            // The shape exists exactly when the node reads the role, so a
            // role hit always has one; the last arm only keeps the match whole.
            match (hit, shape.as_mut()) {
                (Hit::Read(key, node), _) => {
                    let v = map.next_value_seed(self.at(node))?;
                    out.insert(key.to_string(), v);
                }
                (Hit::Role(field, None), Some(shape)) => shape.read(field, &mut map)?,
                // Read by the rules too: read whole, so the role sees all
                // of it (the rules see more than they asked, not less).
                (Hit::Role(field, Some(key)), Some(shape)) => {
                    let v = map.next_value::<Value>()?;
                    shape.set(field, &v);
                    out.insert(key.to_string(), v);
                }
                (Hit::Role(..), None) | (Hit::Skip, _) => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some(shape) = shape {
            self.role.set(Some(shape.hash()));
        }
        Ok(Value::Object(out))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        match &self.node.each {
            Some(each) => {
                while let Some(v) = seq.next_element_seed(self.at(each))? {
                    out.push(v);
                }
            }
            None => while seq.next_element::<IgnoredAny>()?.is_some() {},
        }
        Ok(Value::Array(out))
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// Chooses how much of a review's objects to read once its kind is known
/// (the admission router reads a job kind's objects as far as the policies
/// look, and other families' whole).
pub trait Reading {
    /// What to read of the objects of a review of `kind`.
    fn interest(&self, kind: &GroupVersionKind) -> &Interest;
    /// What to read of objects that come before `kind` in the body, or of a
    /// review without one (kube-apiserver sends `kind` first).
    fn before_kind(&self) -> &Interest;
}

impl Reading for Interest {
    fn interest(&self, _: &GroupVersionKind) -> &Interest {
        self
    }
    fn before_kind(&self) -> &Interest {
        self
    }
}

/// The review, with `object` and `oldObject` read sparsely.
struct EnvelopeSeed<'n, R: ?Sized>(&'n R);

impl<'de, R: Reading + ?Sized> DeserializeSeed<'de> for EnvelopeSeed<'_, R> {
    type Value = Envelope;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Envelope, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, R: Reading + ?Sized> Visitor<'de> for EnvelopeSeed<'_, R> {
    type Value = Envelope;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an AdmissionReview object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut env = Envelope {
            api_version: None,
            kind: None,
            request: None,
        };
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "apiVersion" => env.api_version = map.next_value()?,
                "kind" => env.kind = map.next_value()?,
                "request" => env.request = map.next_value_seed(RequestSeed(self.0))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(env)
    }
}

struct RequestSeed<'n, R: ?Sized>(&'n R);

impl<'de, R: Reading + ?Sized> DeserializeSeed<'de> for RequestSeed<'_, R> {
    type Value = Option<AdmissionRequest>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, R: Reading + ?Sized> Visitor<'de> for RequestSeed<'_, R> {
    type Value = Option<AdmissionRequest>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an AdmissionRequest object")
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let object = |v: Value| (!v.is_null()).then_some(v);
        let (mut uid, mut req) = (
            None,
            AdmissionRequest {
                uid: String::new(),
                kind: None,
                operation: None,
                namespace: None,
                name: None,
                object: None,
                old_object: None,
                user_info: UserInfo::default(),
                dry_run: None,
                role_hash: None,
            },
        );
        let (role, old_role) = (Cell::new(None), Cell::new(None));
        // Chosen when `kind` is read.
        let mut interest: Option<&Interest> = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "uid" => uid = Some(map.next_value::<String>()?),
                "kind" => {
                    req.kind = map.next_value()?;
                    interest = req.kind.as_ref().map(|k| self.0.interest(k));
                }
                "operation" => req.operation = map.next_value()?,
                "namespace" => req.namespace = map.next_value()?,
                "name" => req.name = map.next_value()?,
                "userInfo" => {
                    req.user_info = map.next_value::<Option<UserInfo>>()?.unwrap_or_default()
                }
                "dryRun" => req.dry_run = map.next_value()?,
                "object" => {
                    let node = interest.unwrap_or_else(|| self.0.before_kind());
                    // A repeated key: the last object's role, or none.
                    role.set(None);
                    req.object = object(map.next_value_seed(Sparse { node, role: &role })?)
                }
                "oldObject" => {
                    let node = interest.unwrap_or_else(|| self.0.before_kind());
                    let seed = Sparse {
                        node,
                        role: &old_role,
                    };
                    req.old_object = object(map.next_value_seed(seed)?)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        req.uid = uid.ok_or_else(|| serde::de::Error::missing_field("uid"))?;
        req.role_hash = role.take();
        Ok(Some(req))
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    request: Option<AdmissionRequest>,
}

/// Why a body is not a usable AdmissionReview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The request uid, when it could be read despite the error.
    pub uid: Option<String>,
    pub message: String,
}

/// Parses a review body with its objects whole: for the kinds validated as
/// a whole (Kueue's own, AppWrapper, PreScaledCronJob, the device kinds),
/// read again off the job path.
pub fn parse_whole(body: &[u8]) -> Result<AdmissionRequest, ParseError> {
    let whole = Interest {
        whole: true,
        ..Interest::default()
    };
    parse(body, &whole)
}

/// Parses a review body, reading of its objects what `reading` names for
/// its kind (an [`Interest`] reads the same for every kind). On error the
/// uid is salvaged when possible.
pub fn parse<R: Reading + ?Sized>(
    body: &[u8],
    reading: &R,
) -> Result<AdmissionRequest, ParseError> {
    let parsed = {
        let mut de = serde_json::Deserializer::from_slice(body);
        EnvelopeSeed(reading)
            .deserialize(&mut de)
            .and_then(|env| de.end().map(|()| env))
    };
    match parsed {
        Ok(env) => {
            let Some(req) = env.request else {
                return Err(ParseError {
                    uid: None,
                    message: "not an AdmissionReview: request is missing".into(),
                });
            };
            if env.kind.as_deref() != Some("AdmissionReview")
                || env.api_version.as_deref() != Some(API_VERSION)
            {
                return Err(ParseError {
                    uid: Some(req.uid),
                    message: format!(
                        "unsupported review {:?} {:?}: batchgate speaks {API_VERSION} AdmissionReview; set admissionReviewVersions: [\"v1\"] in the webhook configuration",
                        env.api_version.unwrap_or_default(),
                        env.kind.unwrap_or_default()
                    ),
                });
            }
            Ok(req)
        }
        Err(e) => {
            let uid = salvage_uid(body);
            let message = match &uid {
                // Syntactically fine JSON with a field of the wrong type:
                // say which field.
                Some(_) if e.is_data() => {
                    describe_data_error(body).unwrap_or_else(|| e.to_string())
                }
                _ => e.to_string(),
            };
            Err(ParseError {
                uid,
                message: format!("malformed AdmissionReview: {message}"),
            })
        }
    }
}

fn describe_data_error(body: &[u8]) -> Option<String> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    match serde_path_to_error::deserialize::<_, Envelope>(de) {
        Err(e) => Some(format!("{}: {}", e.path(), e.inner())),
        Ok(_) => None,
    }
}

/// Finds `request.uid` in a body that does not parse, without recursion: a
/// small scanner that tracks object depth and the current key, and returns
/// the string value of `uid` directly inside the top-level `request` object.
pub fn salvage_uid(body: &[u8]) -> Option<String> {
    let mut depth = 0usize;
    let mut in_request_at: Option<usize> = None;
    let mut last_key: Option<&[u8]> = None;
    let mut expect_key = false;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < body.len() && body[j] != b'"' {
                    if body[j] == b'\\' {
                        j += 1;
                    }
                    j += 1;
                }
                if j >= body.len() {
                    return None;
                }
                let s = &body[start..j];
                i = j + 1;
                if expect_key {
                    last_key = Some(s);
                    expect_key = false;
                    continue;
                }
                if in_request_at == Some(depth) && last_key == Some(b"uid") {
                    let uid = std::str::from_utf8(s).ok()?;
                    let plausible = !uid.is_empty()
                        && uid.len() <= 128
                        && uid.bytes().all(|b| {
                            b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'
                        });
                    return plausible.then(|| uid.to_string());
                }
                continue;
            }
            b'{' => {
                depth += 1;
                if depth == 2 && last_key == Some(b"request") && in_request_at.is_none() {
                    in_request_at = Some(2);
                }
                expect_key = true;
            }
            b'}' => {
                if in_request_at == Some(depth) {
                    return None;
                }
                depth = depth.saturating_sub(1);
            }
            b',' => {
                // Inside an object the next string is a key; inside an array
                // it is not, but then depth or key no longer match anyway.
                expect_key = true;
            }
            b'[' => {
                depth += 1;
                expect_key = false;
            }
            b']' => depth = depth.saturating_sub(1),
            b':' => expect_key = false,
            _ => {}
        }
        i += 1;
    }
    None
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    pub code: u16,
    pub message: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: &'static str,
}

/// The response half of a review.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<&'static str>,
    /// base64 of the JSON Patch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// `patch` is [`AdmissionResponse::with_patch`]'s base64, which
    /// needs no escaping in JSON.
    #[serde(skip)]
    pub(crate) patch_encoded: bool,
}

impl AdmissionResponse {
    pub fn allow(uid: String) -> Self {
        AdmissionResponse {
            uid,
            allowed: true,
            status: None,
            patch_type: None,
            patch: None,
            warnings: Vec::new(),
            patch_encoded: false,
        }
    }

    /// controller-runtime's `Denied`: 403 Forbidden.
    pub fn deny(uid: String, message: String) -> Self {
        AdmissionResponse {
            allowed: false,
            status: Some(Status {
                code: 403,
                message,
                reason: "Forbidden",
            }),
            ..AdmissionResponse::allow(uid)
        }
    }

    /// controller-runtime's `Errored(400, err)`: the object could not be read.
    pub fn bad_request(uid: String, message: String) -> Self {
        AdmissionResponse {
            allowed: false,
            status: Some(Status {
                code: 400,
                message,
                reason: "BadRequest",
            }),
            ..AdmissionResponse::allow(uid)
        }
    }

    pub fn with_patch(mut self, patch_json: &[u8]) -> Self {
        use base64::Engine;
        self.patch_type = Some("JSONPatch");
        self.patch = Some(base64::engine::general_purpose::STANDARD.encode(patch_json));
        self.patch_encoded = true;
        self
    }

    /// The whole AdmissionReview body.
    pub fn to_review_bytes(&self) -> Vec<u8> {
        // Nearly every answer: allowed or not, perhaps patched, no status
        // and no warnings. Written by hand, as serde would write it, so the
        // base64 patch is copied once instead of scanned for escapes.
        let plain = self.status.is_none()
            && self.warnings.is_empty()
            && self.patch.as_ref().is_none_or(|p| {
                self.patch_encoded
                    || p.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            });
        if !plain {
            return self.serialized();
        }
        let size = 128 + self.uid.len() + self.patch.as_ref().map_or(0, String::len);
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(b"{\"apiVersion\":\"");
        out.extend_from_slice(API_VERSION.as_bytes());
        out.extend_from_slice(b"\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
        if serde_json::to_writer(&mut out, &self.uid).is_err() {
            return self.serialized();
        }
        out.extend_from_slice(if self.allowed {
            b",\"allowed\":true"
        } else {
            b",\"allowed\":false"
        });
        if let Some(t) = self.patch_type {
            out.extend_from_slice(b",\"patchType\":");
            if serde_json::to_writer(&mut out, t).is_err() {
                return self.serialized();
            }
        }
        if let Some(p) = &self.patch {
            out.extend_from_slice(b",\"patch\":\"");
            out.extend_from_slice(p.as_bytes());
            out.push(b'"');
        }
        out.extend_from_slice(b"}}");
        out
    }

    /// The review body as serde writes it: any response.
    fn serialized(&self) -> Vec<u8> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Out<'a> {
            api_version: &'static str,
            kind: &'static str,
            response: &'a AdmissionResponse,
        }
        // Sized once: a patched response is mostly its base64 patch.
        let size = 256 + self.patch.as_ref().map_or(0, String::len);
        let mut out = Vec::with_capacity(size);
        let out_of = Out {
            api_version: API_VERSION,
            kind: "AdmissionReview",
            response: self,
        };
        match serde_json::to_writer(&mut out, &out_of) {
            Ok(()) => out,
            Err(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::policy::PolicySet;

    fn interest() -> Interest {
        super::super::object::interest(&PolicySet::embedded().unwrap())
    }

    #[test]
    fn parses_a_review() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"batch","version":"v1","kind":"Job"},"operation":"CREATE","namespace":"ns","object":{"a":1},"userInfo":{"username":"alice","groups":["g"]}}}"#;
        let req = parse(body, &interest()).unwrap();
        assert_eq!(req.uid, "u-1");
        assert_eq!(req.kind.as_ref().unwrap().kind, "Job");
        assert_eq!(req.operation(), Ok(Operation::Create));
        assert_eq!(req.user_info.username, "alice");
    }

    #[test]
    fn objects_are_read_as_far_as_the_policies_look() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":{"metadata":{"name":"j","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}],"labels":{"a":"b"}},"spec":{"suspend":false,"parallelism":3,"template":{"spec":{"containers":[{"name":"c"}]}},"x":[1,2.5,null,"s"]},"status":{"active":1}},"oldObject":null}}"#;
        let req = parse(body, &interest()).unwrap();
        assert_eq!(
            req.object.unwrap(),
            // The template's spec is entered for the elastic-job gates.
            serde_json::json!({"metadata":{"labels":{"a":"b"}},"spec":{"suspend":false,"parallelism":3,"template":{"spec":{}}}})
        );
        assert_eq!(req.old_object, None);
        // Values that are not objects keep their type for the core's message.
        for (object, want) in [
            ("5", serde_json::json!(5)),
            ("[1]", serde_json::json!([])),
            ("\"s\"", serde_json::json!("s")),
            ("{\"metadata\":7}", serde_json::json!({"metadata":7})),
            ("{\"spec\":[1,2]}", serde_json::json!({"spec":[]})),
        ] {
            let body = format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","object":{object}}}}}"#
            );
            assert_eq!(
                parse(body.as_bytes(), &interest()).unwrap().object,
                Some(want),
                "{object}"
            );
        }
        // Broken JSON in a skipped part is still an error.
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":{"metadata":{"managedFields":[1,}}}}"#;
        assert_eq!(
            parse(body, &interest()).unwrap_err().uid.as_deref(),
            Some("u")
        );
    }

    #[test]
    fn depth_costs_no_stack_in_skipped_parts_and_is_bounded_in_read_ones() {
        let deep = |at: &str, levels: usize| {
            let mut body = format!(r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"d","object":{at}"#).into_bytes();
            body.extend(std::iter::repeat_n(b'[', levels));
            body.extend(std::iter::repeat_n(b']', levels));
            body.extend(b"}}}");
            body
        };
        // A million levels in a part no rule reads: skipped without recursion.
        let req = parse(&deep(r#"{"skipped":"#, 1_000_000), &interest()).unwrap();
        assert_eq!(req.object, Some(serde_json::json!({})));
        // In a part the rules read: refused at 128 levels.
        let err = parse(&deep(r#"{"metadata":{"labels":"#, 200), &interest()).unwrap_err();
        assert_eq!(err.uid.as_deref(), Some("d"));
        assert!(err.message.contains("recursion limit"), "{}", err.message);
    }

    #[test]
    fn salvages_uid_from_broken_json() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"abc-123","object":{"x": [1,2,}"#;
        let err = parse(body, &interest()).unwrap_err();
        assert_eq!(err.uid.as_deref(), Some("abc-123"));
        assert!(err.message.starts_with("malformed AdmissionReview"));
    }

    #[test]
    fn does_not_take_a_nested_uid() {
        let body = br#"{"request":{"object":{"metadata":{"uid":"obj-uid"}}, "x": ]"#;
        assert_eq!(salvage_uid(body), None);
        let body = br#"{"request":{"object":{"metadata":{"uid":"obj-uid"}},"uid":"req-uid", ]"#;
        assert_eq!(salvage_uid(body).as_deref(), Some("req-uid"));
    }

    #[test]
    fn wrong_field_type_names_the_field() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":5}}"#;
        let err = parse(body, &interest()).unwrap_err();
        assert_eq!(err.uid.as_deref(), Some("u"));
        assert!(err.message.contains("request.operation"), "{}", err.message);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let mut body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"deep","object":"#.to_vec();
        body.extend(std::iter::repeat_n(b'[', 100_000));
        body.extend(std::iter::repeat_n(b']', 100_000));
        body.extend(b"}}");
        // Read as what it is (a list), for the core to refuse by type.
        let req = parse(&body, &interest()).unwrap();
        assert_eq!(req.object, Some(serde_json::json!([])));
    }

    #[test]
    fn not_a_review_has_no_uid() {
        let err = parse(b"hello", &interest()).unwrap_err();
        assert_eq!(err.uid, None);
        let err = parse(b"{\"foo\": 1}", &interest()).unwrap_err();
        assert_eq!(err.uid, None);
    }

    #[test]
    fn old_review_versions_are_refused_with_the_fix() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}"#;
        let err = parse(body, &interest()).unwrap_err();
        assert_eq!(err.uid.as_deref(), Some("u"));
        assert!(err.message.contains("admissionReviewVersions"));
    }

    #[test]
    fn a_plain_response_is_written_as_serde_writes_it() {
        let uids = ["u", "0f4c8a6e-8d0b", "q\"uote\\back\u{1}é"];
        for uid in uids {
            for r in [
                AdmissionResponse::allow(uid.into()),
                AdmissionResponse::allow(uid.into())
                    .with_patch(br#"[{"op":"add","path":"/a~1b","value":"e\n"}]"#),
                AdmissionResponse {
                    allowed: false,
                    ..AdmissionResponse::allow(uid.into())
                },
                AdmissionResponse::deny(uid.into(), "no".into()),
                AdmissionResponse {
                    warnings: vec!["w".into()],
                    ..AdmissionResponse::allow(uid.into()).with_patch(b"[]")
                },
                AdmissionResponse {
                    patch: Some("not \"base64\"".into()),
                    ..AdmissionResponse::allow(uid.into())
                },
            ] {
                assert_eq!(
                    String::from_utf8(r.to_review_bytes()).unwrap(),
                    String::from_utf8(r.serialized()).unwrap(),
                    "{r:?}"
                );
            }
        }
    }

    #[test]
    fn response_shape() {
        let r = AdmissionResponse::allow("u".into()).with_patch(b"[]");
        let v: Value = serde_json::from_slice(&r.to_review_bytes()).unwrap();
        assert_eq!(v["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(v["response"]["uid"], "u");
        assert_eq!(v["response"]["patchType"], "JSONPatch");
        assert_eq!(v["response"]["patch"], "W10=");
        let d = AdmissionResponse::deny("u".into(), "no".into());
        let v: Value = serde_json::from_slice(&d.to_review_bytes()).unwrap();
        assert_eq!(v["response"]["allowed"], false);
        assert_eq!(v["response"]["status"]["code"], 403);
        assert_eq!(v["response"]["status"]["message"], "no");
    }
}
