//! JSON Pointers (RFC 6901): how a policy names a field of a job object,
//! and where a patch writes.

use std::fmt;

use serde::Deserialize;
use serde_json::Value;

/// An RFC 6901 JSON pointer, split into unescaped reference tokens.
#[derive(Clone, PartialEq, Eq)]
pub struct Pointer {
    text: String,
    tokens: Vec<String>,
}

impl Pointer {
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Ok(Pointer {
                text: String::new(),
                tokens: Vec::new(),
            });
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err(format!(
                "{text:?} is not a JSON pointer: it must start with '/', e.g. /spec/suspend"
            ));
        };
        let mut tokens = Vec::new();
        for raw in rest.split('/') {
            let mut token = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => token.push('~'),
                        Some('1') => token.push('/'),
                        _ => {
                            return Err(format!(
                                "{text:?} is not a JSON pointer: '~' must be followed by 0 or 1"
                            ))
                        }
                    }
                } else {
                    token.push(c);
                }
            }
            tokens.push(token);
        }
        Ok(Pointer {
            text: text.to_string(),
            tokens,
        })
    }

    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The pointer in Kubernetes field-path notation (`spec.runPolicy.suspend`),
    /// as used in denial messages.
    pub fn field_path(&self) -> String {
        let mut out = String::new();
        for t in &self.tokens {
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                out.push('[');
                out.push_str(t);
                out.push(']');
            } else {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(t);
            }
        }
        out
    }

    /// Follows the pointer; `None` when any step is missing.
    pub fn resolve<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        let mut cur = value;
        for t in &self.tokens {
            cur = match cur {
                Value::Object(m) => m.get(t.as_str())?,
                Value::Array(a) => a.get(t.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// Every value the pointer reaches when a `*` token stands for each
    /// element of a list or each value of a map (`/status/replicaStatuses/*/active`).
    pub fn resolve_each<'v>(&self, value: &'v Value) -> Vec<&'v Value> {
        let mut cur = vec![value];
        for t in &self.tokens {
            let mut next = Vec::new();
            for v in cur {
                match (v, t.as_str()) {
                    (Value::Object(m), "*") => next.extend(m.values()),
                    (Value::Array(a), "*") => next.extend(a.iter()),
                    (Value::Object(m), key) => next.extend(m.get(key)),
                    (Value::Array(a), idx) => {
                        next.extend(idx.parse::<usize>().ok().and_then(|i| a.get(i)))
                    }
                    _ => {}
                }
            }
            cur = next;
        }
        cur
    }

    /// A pointer to `self` followed by the tokens of `rel`.
    pub fn child(&self, rel: &Pointer) -> Pointer {
        let mut tokens = self.tokens.clone();
        tokens.extend(rel.tokens.iter().cloned());
        Pointer::from_tokens(tokens)
    }

    /// The pointer to these (unescaped) tokens.
    pub fn from_tokens(tokens: Vec<String>) -> Pointer {
        let mut text = String::new();
        for t in &tokens {
            text.push('/');
            crate::vocabulary::patch::push_escaped(&mut text, t);
        }
        Pointer { text, tokens }
    }

    /// A pointer to `self` followed by `rel` (for pod sets inside lists).
    pub fn join(&self, index: usize, rel: &Pointer) -> Pointer {
        let mut tokens = self.tokens.clone();
        tokens.push(index.to_string());
        tokens.extend(rel.tokens.iter().cloned());
        Pointer::from_tokens(tokens)
    }
}

impl fmt::Debug for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.text)
    }
}

impl<'de> Deserialize<'de> for Pointer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Pointer::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// `Value::pointer` without its two string copies per token: a literal
/// path without escapes (nearly every one in the code) is followed by
/// borrowed slices. An escaped one goes through `Value::pointer`.
pub trait At {
    fn at(&self, pointer: &str) -> Option<&Value>;
}

impl At for Value {
    fn at(&self, pointer: &str) -> Option<&Value> {
        if pointer.contains('~') {
            return self.pointer(pointer);
        }
        if pointer.is_empty() {
            return Some(self);
        }
        pointer
            .strip_prefix('/')?
            .split('/')
            .try_fold(self, |cur, t| match cur {
                Value::Object(m) => m.get(t),
                Value::Array(a) => index(t).and_then(|i| a.get(i)),
                _ => None,
            })
    }
}

/// A list index as `Value::pointer` reads one: no sign, no leading zero.
fn index(t: &str) -> Option<usize> {
    if t.starts_with('+') || (t.starts_with('0') && t.len() != 1) {
        return None;
    }
    t.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_unescapes_and_renders_field_paths() {
        let p = Pointer::parse("/metadata/labels/kueue.x-k8s.io~1queue-name").unwrap();
        assert_eq!(p.tokens()[2], "kueue.x-k8s.io/queue-name");
        let p = Pointer::parse("/spec/replicatedJobs/0/template").unwrap();
        assert_eq!(p.field_path(), "spec.replicatedJobs[0].template");
        assert!(Pointer::parse("spec/suspend")
            .unwrap_err()
            .contains("must start with '/'"));
        assert!(Pointer::parse("/a~2").is_err());
    }

    #[test]
    fn at_reads_as_value_pointer_does() {
        let v = serde_json::json!({
            "a": {"b/c": 1, "m~n": 2, "": 3, "l": [10, 11, {"x": 12}]},
            "s": "str"
        });
        for p in [
            "",
            "/",
            "/a",
            "/a/b~1c",
            "/a/m~0n",
            "/a/",
            "/a/l",
            "/a/l/0",
            "/a/l/1",
            "/a/l/2/x",
            "/a/l/01",
            "/a/l/+1",
            "/a/l/3",
            "/a/l/-",
            "/s/0",
            "/missing",
            "a",
            "/a/l/2/x/y",
        ] {
            assert_eq!(v.at(p), v.pointer(p), "{p:?}");
        }
    }
}
