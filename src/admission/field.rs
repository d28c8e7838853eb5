//! Field errors rendered exactly as Kubernetes' apimachinery renders them
//! (`<field>: <Type>: <value>: <detail>`), so batchgate's denials read like
//! Kueue's and a user's search lands on the same answers.

use std::fmt::{self, Write};

use crate::vocabulary::go::go_quote;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    Invalid,
    Required,
    Forbidden,
    TooMany,
    NotFound,
    TooLong,
    Duplicate,
}

impl ErrorType {
    fn as_str(self) -> &'static str {
        match self {
            ErrorType::Invalid => "Invalid value",
            ErrorType::Required => "Required value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooMany => "Too many",
            ErrorType::NotFound => "Not found",
            ErrorType::TooLong => "Too long",
            ErrorType::Duplicate => "Duplicate value",
        }
    }
}

/// The offending value, printed as Go's `%q` for strings and `%v` otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    Str(String),
    Int(i64),
    Bool(bool),
    Null,
    /// Printed as given (Go's `%#v` of a map, say).
    Raw(String),
    /// Not printed (Required, Forbidden).
    Omit,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub kind: ErrorType,
    pub value: BadValue,
    pub detail: String,
}

impl FieldError {
    pub fn invalid(field: impl Into<String>, value: BadValue, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Invalid,
            value,
            detail: detail.into(),
        }
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Forbidden,
            value: BadValue::Omit,
            detail: detail.into(),
        }
    }

    /// `field.TooMany(path, actual, max)`.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::TooMany,
            value: BadValue::Int(actual as i64),
            detail: format!("must have at most {max} items"),
        }
    }

    /// `field.TooLong(path, _, max)`: the value is never printed.
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        FieldError {
            field: field.into(),
            kind: ErrorType::TooLong,
            value: BadValue::Omit,
            detail: format!("may not be more than {max} {unit}"),
        }
    }

    /// `field.Duplicate(path, value)`.
    pub fn duplicate(field: impl Into<String>, value: BadValue) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Duplicate,
            value,
            detail: String::new(),
        }
    }

    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Required,
            value: BadValue::Omit,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.kind.as_str())?;
        let show_value = matches!(
            self.kind,
            ErrorType::Invalid | ErrorType::NotFound | ErrorType::TooMany | ErrorType::Duplicate
        );
        if show_value {
            match &self.value {
                BadValue::Str(s) => write!(f, ": {}", go_quote(s))?,
                BadValue::Int(i) => write!(f, ": {i}")?,
                BadValue::Bool(b) => write!(f, ": {b}")?,
                BadValue::Null => f.write_str(": null")?,
                BadValue::Raw(r) => write!(f, ": {r}")?,
                BadValue::Omit => {}
            }
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// `field.ErrorList.ToAggregate().Error()`: one error alone, several as `[a, b]`.
pub fn aggregate(errors: &[FieldError]) -> String {
    match errors {
        [] => String::new(),
        [one] => one.to_string(),
        many => {
            let mut out = String::from("[");
            for (i, e) in many.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{e}");
            }
            out.push(']');
            out
        }
    }
}

/// `metadata.labels[<key>]`
pub fn label_path(key: &str) -> String {
    format!("metadata.labels[{key}]")
}

/// `metadata.annotations[<key>]`
pub fn annotation_path(key: &str) -> String {
    format!("metadata.annotations[{key}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_apimachinery() {
        let e = FieldError::invalid(
            label_path("kueue.x-k8s.io/queue-name"),
            BadValue::Str("q2".into()),
            "field is immutable",
        );
        assert_eq!(
            e.to_string(),
            r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "q2": field is immutable"#
        );
        let e = FieldError::forbidden(
            "spec.parallelism",
            "cannot change when partial admission is enabled and the job is not suspended",
        );
        assert_eq!(
            e.to_string(),
            "spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended"
        );
        let e = FieldError::invalid("x", BadValue::Int(0), "should be greater than 0");
        assert_eq!(
            e.to_string(),
            "x: Invalid value: 0: should be greater than 0"
        );
        let e = FieldError::invalid("x", BadValue::Null, "d");
        assert_eq!(e.to_string(), "x: Invalid value: null: d");
    }

    #[test]
    fn aggregates_like_apimachinery() {
        let a = FieldError::forbidden("a", "x");
        let b = FieldError::forbidden("b", "y");
        assert_eq!(aggregate(std::slice::from_ref(&a)), "a: Forbidden: x");
        assert_eq!(aggregate(&[a, b]), "[a: Forbidden: x, b: Forbidden: y]");
    }
}
