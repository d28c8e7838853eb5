//! A pod's role: Kueue's `GenerateRoleHash`, the first 8 hex digits of the
//! SHA-256 of `{"spec": shape}` in Go's JSON, where the shape is what
//! admission looks at (containers' requests and ports, node selector,
//! affinity, tolerations, runtime class, priority, topology spread,
//! overhead, resource claims, pod-level requests). Ports and tolerations
//! are written in Go's field order; affinity, topology spread constraints
//! and resource claims in sorted key order (Kueue's hash differs for pods
//! that set them).
//!
//! One document, two ways in: from a pod already read ([`role_hash`]), and
//! while a review's pod is being read ([`Shape::read`], a serde seed per
//! field). The webhook hashes every pod create; building the fields as
//! JSON trees only to write them out again cost it more than the rest of
//! the pod's rules. Both ways write each field into a [`Shape`], and one
//! function makes the document from it.

use std::{borrow::Cow, ops::Range};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use super::policy::Interest;
use crate::vocabulary::pointer::{At, Pointer};

/// A field of the shape, in the document's order (Go sorts a map's keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Affinity,
    Containers,
    InitContainers,
    NodeSelector,
    Overhead,
    Priority,
    ResourceClaims,
    Resources,
    RuntimeClassName,
    Tolerations,
    TopologySpreadConstraints,
}

const FIELDS: [(&str, Field); 11] = [
    ("affinity", Field::Affinity),
    ("containers", Field::Containers),
    ("initContainers", Field::InitContainers),
    ("nodeSelector", Field::NodeSelector),
    ("overhead", Field::Overhead),
    ("priority", Field::Priority),
    ("resourceClaims", Field::ResourceClaims),
    ("resources", Field::Resources),
    ("runtimeClassName", Field::RuntimeClassName),
    ("tolerations", Field::Tolerations),
    (
        "topologySpreadConstraints",
        Field::TopologySpreadConstraints,
    ),
];

impl Field {
    /// The field a key of a pod's spec is, if the role reads it.
    pub fn named(key: &str) -> Option<Field> {
        FIELDS.iter().find(|(k, _)| *k == key).map(|(_, f)| *f)
    }
}

/// Go's field order of `corev1.Toleration` and `corev1.ContainerPort`.
const TOLERATION: &[&str; 5] = &["key", "operator", "value", "effect", "tolerationSeconds"];
const CONTAINER_PORT: &[&str; 5] = &["name", "hostPort", "containerPort", "protocol", "hostIP"];

/// Marks a pod's spec to be hashed as it is read (a review of a pod being
/// created): the role's fields are written into a [`Shape`] and not built.
pub fn note_interest(root: &mut Interest) {
    root.presence(&Pointer::parse("/spec").expect("a literal pointer"));
    if let Some(spec) = root.keys.iter_mut().find(|(k, _)| k == "spec") {
        spec.1.role = true;
    }
}

/// The shape's fields written so far, each as its JSON in the document.
#[derive(Debug)]
pub struct Shape {
    bufs: Bufs,
    /// Where each field's JSON is in `bufs.out`; `None` is `null`, or for
    /// `resources` absent (Kueue leaves pod-level resources out when nil).
    at: [Option<Range<usize>>; 11],
}

#[derive(Debug)]
struct Bufs {
    out: Vec<u8>,
    /// Where an object whose parts arrive out of order is put together
    /// before it replaces them in `out`; never held across a nested value.
    scratch: Vec<u8>,
}

impl Default for Shape {
    fn default() -> Self {
        // A pod's shape is a few hundred bytes: sized once, not grown.
        Shape {
            bufs: Bufs {
                out: Vec::with_capacity(1024),
                scratch: Vec::with_capacity(256),
            },
            at: Default::default(),
        }
    }
}

impl Bufs {
    /// Replaces `out[start..]` with `scratch`.
    fn settle(&mut self, start: usize) {
        self.out.truncate(start);
        self.out.extend_from_slice(&self.scratch);
    }
}

impl Shape {
    /// Reads the value of `field` from `map` (its key just read) into the
    /// shape, without building it.
    pub fn read<'de, A: MapAccess<'de>>(
        &mut self,
        field: Field,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let start = self.bufs.out.len();
        let bufs = &mut self.bufs;
        let written = match field {
            Field::Containers | Field::InitContainers => map
                .next_value_seed(List {
                    bufs,
                    item: Item::Container,
                })
                .map(|()| true)?,
            Field::Tolerations => map
                .next_value_seed(List {
                    bufs,
                    item: Item::Ordered(TOLERATION),
                })
                .map(|()| true)?,
            Field::Resources => map.next_value_seed(PodResources(bufs))?,
            _ => map.next_value_seed(Canon(bufs)).map(|()| true)?,
        };
        self.at[field as usize] = written.then_some(start..self.bufs.out.len());
        Ok(())
    }

    /// Writes `field` from a value already read.
    pub fn set(&mut self, field: Field, v: &Value) {
        let out = &mut self.bufs.out;
        let start = out.len();
        match field {
            Field::Containers | Field::InitContainers => list(out, v, container_shape),
            Field::Tolerations => list(out, v, |out, t| ordered(out, t, TOLERATION)),
            Field::Resources if v.is_null() => {
                self.at[field as usize] = None;
                return;
            }
            Field::Resources => value(out, v.get("requests").unwrap_or(&Value::Null)),
            _ => value(out, v),
        }
        self.at[field as usize] = Some(start..out.len());
    }

    /// The role: the first 8 hex digits of the document's SHA-256, hashed
    /// piece by piece (the fields were written in the body's order).
    pub fn hash(&self) -> String {
        let out = &self.bufs.out;
        let mut sha = ring::digest::Context::new(&ring::digest::SHA256);
        for ((field, at), opening) in FIELDS.iter().zip(&self.at).zip(OPENINGS) {
            let json = at.clone().map(|r| &out[r]);
            if field.1 == Field::Resources && json.is_none() {
                continue;
            }
            sha.update(opening.as_bytes());
            sha.update(json.unwrap_or(b"null"));
        }
        sha.update(b"}}");
        let digest = sha.finish();
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(8);
        for b in &digest.as_ref()[..4] {
            hex.push(char::from(HEX[usize::from(b >> 4)]));
            hex.push(char::from(HEX[usize::from(b & 15)]));
        }
        hex
    }
}

/// What comes before each field's JSON in the document.
const OPENINGS: [&str; 11] = [
    "{\"spec\":{\"affinity\":",
    ",\"containers\":",
    ",\"initContainers\":",
    ",\"nodeSelector\":",
    ",\"overhead\":",
    ",\"priority\":",
    ",\"resourceClaims\":",
    ",\"resources\":",
    ",\"runtimeClassName\":",
    ",\"tolerations\":",
    ",\"topologySpreadConstraints\":",
];

/// The role of a pod already read.
pub fn role_hash(pod: &Value) -> String {
    let mut shape = Shape::default();
    if let Some(Value::Object(spec)) = pod.get("spec") {
        for (k, v) in spec {
            if let Some(field) = Field::named(k) {
                shape.set(field, v);
            }
        }
    }
    shape.hash()
}

// Writing from a value already read.

/// `v` as compact JSON (as `Value::to_string` writes it: objects' keys
/// sorted).
fn value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::String(s) => string(out, s),
        // Writing a Value into a Vec cannot fail.
        _ => {
            let _ = serde_json::to_writer(&mut *out, v);
        }
    }
}

/// A string as serde_json writes it.
fn string(out: &mut Vec<u8>, s: &str) {
    // Most of a shape is plain strings (quantities, keys, operators):
    // copied between quotes when nothing in them needs escaping.
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        let _ = serde_json::to_writer(&mut *out, s);
    } else {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// An object's key, after a comma unless it is the object's first.
fn key(out: &mut Vec<u8>, first: &mut bool, k: &str) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    string(out, k);
    out.push(b':');
}

/// A non-empty list, each item written by `item`; else `null` (Go's nil
/// slice).
fn list(out: &mut Vec<u8>, v: &Value, mut item: impl FnMut(&mut Vec<u8>, &Value)) {
    let Some(items) = v.as_array().filter(|a| !a.is_empty()) else {
        out.extend_from_slice(b"null");
        return;
    };
    out.push(b'[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        item(out, x);
    }
    out.push(b']');
}

/// An object of `order`'s fields that `v` sets, in that order.
fn ordered<const N: usize>(out: &mut Vec<u8>, v: &Value, order: &[&str; N]) {
    let mut slots: [Option<&Value>; N] = [None; N];
    if let Some(m) = v.as_object() {
        for (k, x) in m {
            if let Some(i) = order.iter().position(|o| o == k) {
                slots[i] = Some(x).filter(|x| !x.is_null());
            }
        }
    }
    out.push(b'{');
    let first = &mut true;
    for (k, x) in order.iter().zip(slots) {
        if let Some(x) = x {
            key(out, first, k);
            value(out, x);
        }
    }
    out.push(b'}');
}

fn container_shape(out: &mut Vec<u8>, c: &Value) {
    out.extend_from_slice(b"{\"ports\":");
    list(out, c.get("ports").unwrap_or(&Value::Null), |out, p| {
        ordered(out, p, CONTAINER_PORT)
    });
    out.extend_from_slice(b",\"resources\":{\"requests\":");
    match c
        .at("/resources/requests")
        .filter(|r| r.as_object().is_some_and(|m| !m.is_empty()))
    {
        Some(r) => value(out, r),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b"}}");
}

// Writing while reading: the same bytes as above, for the same JSON, with
// nothing built but the keys of objects whose keys must be sorted.

/// Drains what is left of an object nobody reads.
fn drain<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Any value, as [`value`] writes it once built.
struct Canon<'b>(&'b mut Bufs);

impl<'de> DeserializeSeed<'de> for Canon<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Canon<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        let out = &mut self.0.out;
        out.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        let _ = serde_json::to_writer(&mut self.0.out, &Number::from(v));
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        let _ = serde_json::to_writer(&mut self.0.out, &Number::from(v));
        Ok(())
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        // As a `Value` holds it: a float without a JSON form is null.
        match Number::from_f64(v) {
            Some(n) => {
                let _ = serde_json::to_writer(&mut self.0.out, &n);
            }
            None => self.0.out.extend_from_slice(b"null"),
        }
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        string(&mut self.0.out, v);
        Ok(())
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        // Borrowed: no escape in the body, and the parser refuses raw
        // control characters, so there is nothing to escape either.
        let out = &mut self.0.out;
        out.push(b'"');
        out.extend_from_slice(v.as_bytes());
        out.push(b'"');
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.out.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        self.0.out.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let bufs = self.0;
        bufs.out.push(b'[');
        let mut first = true;
        loop {
            // The comma goes before the element, so it is written before
            // knowing whether one follows; taken back at the end.
            let comma = bufs.out.len();
            if !first {
                bufs.out.push(b',');
            }
            if seq.next_element_seed(Canon(&mut *bufs))?.is_none() {
                bufs.out.truncate(comma);
                break;
            }
            first = false;
        }
        bufs.out.push(b']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // A `Value`'s object writes its keys sorted, a repeated key's last
        // value: the values are written as they come, then put in order.
        let bufs = self.0;
        let start = bufs.out.len();
        let mut entries: Vec<(Cow<'de, str>, Range<usize>)> = Vec::new();
        while let Some(k) = map.next_key_seed(KeyName)? {
            let at = bufs.out.len();
            map.next_value_seed(Canon(&mut *bufs))?;
            entries.push((k, at..bufs.out.len()));
        }
        // Stable: of a repeated key's entries the last stays last.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let s = &mut bufs.scratch;
        s.clear();
        s.push(b'{');
        let first = &mut true;
        for (i, (k, r)) in entries.iter().enumerate() {
            if entries.get(i + 1).is_some_and(|next| next.0 == *k) {
                continue;
            }
            key(s, first, k);
            s.extend_from_slice(&bufs.out[r.clone()]);
        }
        s.push(b'}');
        bufs.settle(start);
        Ok(())
    }
}

/// An object key, borrowed from the body when it holds no escape.
struct KeyName;

impl<'de> DeserializeSeed<'de> for KeyName {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyName {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

/// Which of `names` a key is, without allocating.
struct OneOf<'a>(&'a [&'a str]);

impl<'de> DeserializeSeed<'de> for OneOf<'_> {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for OneOf<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|n| *n == v))
    }
}

/// What a list's items are.
#[derive(Clone, Copy)]
enum Item {
    Container,
    Ordered(&'static [&'static str; 5]),
}

/// The scalar arms of a visitor that answers every scalar (and `null`)
/// with its `$other` method.
macro_rules! scalars_as {
    ($other:ident) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(self.$other())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(self.$other())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(self.$other())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(self.$other())
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(self.$other())
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(self.$other())
        }
    };
}

/// A non-empty list as [`list`] writes it; anything else `null`.
struct List<'b> {
    bufs: &'b mut Bufs,
    item: Item,
}

impl List<'_> {
    fn null(self) {
        self.bufs.out.extend_from_slice(b"null");
    }
}

impl<'de> DeserializeSeed<'de> for List<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for List<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let start = self.bufs.out.len();
        self.bufs.out.push(b'[');
        let mut n = 0usize;
        loop {
            let comma = self.bufs.out.len();
            if n > 0 {
                self.bufs.out.push(b',');
            }
            let seed = ItemSeed {
                bufs: &mut *self.bufs,
                item: self.item,
            };
            if seq.next_element_seed(seed)?.is_none() {
                self.bufs.out.truncate(comma);
                break;
            }
            n += 1;
        }
        if n == 0 {
            self.bufs.out.truncate(start);
            self.null();
        } else {
            self.bufs.out.push(b']');
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        drain(map)?;
        self.null();
        Ok(())
    }
    scalars_as!(null);
}

/// One item of a [`List`], as [`container_shape`] or [`ordered`] writes
/// it.
struct ItemSeed<'b> {
    bufs: &'b mut Bufs,
    item: Item,
}

impl ItemSeed<'_> {
    /// The item of something not an object.
    fn empty(self) {
        self.bufs.out.extend_from_slice(match self.item {
            Item::Container => b"{\"ports\":null,\"resources\":{\"requests\":null}}",
            Item::Ordered(_) => b"{}",
        });
    }
}

impl<'de> DeserializeSeed<'de> for ItemSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItemSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let bufs = self.bufs;
        let start = bufs.out.len();
        match self.item {
            Item::Ordered(order) => {
                let mut slots: [Option<Range<usize>>; 5] = Default::default();
                while let Some(k) = map.next_key_seed(OneOf(order))? {
                    let Some(i) = k else {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    };
                    let at = bufs.out.len();
                    map.next_value_seed(Canon(&mut *bufs))?;
                    // A `null` field is left out, as an unset one.
                    slots[i] = (bufs.out[at..] != *b"null").then_some(at..bufs.out.len());
                }
                bufs.scratch.clear();
                bufs.scratch.push(b'{');
                let first = &mut true;
                for (name, at) in order.iter().zip(slots) {
                    if let Some(r) = at {
                        key(&mut bufs.scratch, first, name);
                        bufs.scratch.extend_from_slice(&bufs.out[r]);
                    }
                }
                bufs.scratch.push(b'}');
            }
            Item::Container => {
                let (mut ports, mut requests) = (None, None);
                while let Some(k) = map.next_key_seed(OneOf(&["ports", "resources"]))? {
                    match k {
                        Some(0) => {
                            let at = bufs.out.len();
                            map.next_value_seed(List {
                                bufs: &mut *bufs,
                                item: Item::Ordered(CONTAINER_PORT),
                            })?;
                            ports = Some(at..bufs.out.len());
                        }
                        Some(_) => {
                            requests = map.next_value_seed(Requests(&mut *bufs))?;
                        }
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                // Only a non-empty object of requests is written.
                let requests = requests.filter(|r: &Range<usize>| {
                    let json = &bufs.out[r.clone()];
                    json.first() == Some(&b'{') && json != b"{}"
                });
                let s = &mut bufs.scratch;
                s.clear();
                s.extend_from_slice(b"{\"ports\":");
                s.extend_from_slice(ports.map_or(&b"null"[..], |r| &bufs.out[r]));
                s.extend_from_slice(b",\"resources\":{\"requests\":");
                s.extend_from_slice(requests.map_or(&b"null"[..], |r| &bufs.out[r]));
                s.extend_from_slice(b"}}");
            }
        }
        bufs.settle(start);
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        drain_seq(seq)?;
        self.empty();
        Ok(())
    }
    scalars_as!(empty);
}

/// A container's `resources`: where its `requests` were written, if it is
/// an object that has them (the last, if repeated).
struct Requests<'b>(&'b mut Bufs);

impl Requests<'_> {
    /// Not an object: no requests.
    fn none(self) -> Option<Range<usize>> {
        None
    }
}

impl<'de> DeserializeSeed<'de> for Requests<'_> {
    type Value = Option<Range<usize>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Requests<'_> {
    type Value = Option<Range<usize>>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut requests = None;
        while let Some(k) = map.next_key_seed(OneOf(&["requests"]))? {
            if k.is_some() {
                let at = self.0.out.len();
                map.next_value_seed(Canon(&mut *self.0))?;
                requests = Some(at..self.0.out.len());
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(requests)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq)?;
        Ok(None)
    }
    scalars_as!(none);
}

/// The pod's own `resources`: left out when `null`; else its `requests`
/// as [`value`] writes them (`null` when it has none). `false` when left
/// out.
struct PodResources<'b>(&'b mut Bufs);

impl<'de> DeserializeSeed<'de> for PodResources<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        let at = self.0.out.len();
        let requests = match d.deserialize_option(Nullable(Requests(&mut *self.0)))? {
            None => return Ok(false),
            Some(r) => r,
        };
        let out = &mut self.0.out;
        // Written after anything `Requests` skipped over: only the range
        // counts, and the caller's range starts at `at`.
        match requests {
            Some(r) if r.start == at => {}
            Some(r) => {
                let json = out[r].to_vec();
                out.truncate(at);
                out.extend_from_slice(&json);
            }
            None => {
                out.truncate(at);
                out.extend_from_slice(b"null");
            }
        }
        Ok(true)
    }
}

/// `None` for `null`, else what the inner seed reads.
struct Nullable<S>(S);

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for Nullable<S> {
    type Value = Option<S::Value>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests;
