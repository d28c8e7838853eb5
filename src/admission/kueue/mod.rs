//! Validation of Kueue's own kinds (`kueue.x-k8s.io/v1beta2`) where upstream
//! validates beyond the CRD schema, in its validating webhooks
//! (`pkg/webhooks/clusterqueue_webhook.go`, `cohort_webhook.go`,
//! `resourceflavor_webhook.go`, `workload_webhook.go`, `common.go`).
//!
//! Pure: `(operation, old object, new object) -> field errors`, with
//! upstream's field paths and apimachinery's wording, so a denial reads as
//! Kueue's (`admission webhook "vclusterqueue.kb.io" denied the request:
//! ...`). LocalQueue, WorkloadPriorityClass, Topology, MultiKueueCluster and
//! MultiKueueConfig have no webhook validation upstream (their rules are in
//! the CRD), so none here either.

pub mod cluster_queue;
pub mod labels;
pub mod resource_flavor;
pub mod semantic;
pub mod warnings;
pub mod workload;

use crate::vocabulary::pointer::At;
use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{
    family::{Decided, Family, Review},
    field::{BadValue, ErrorType, FieldError},
    object::DecodeError,
    Decision, Operation, Verdict,
};
use crate::vocabulary::{go::go_quote, keys::RESOURCE_IN_USE_FINALIZER, patch::PatchOp, quantity};

/// The API group and version validated here.
pub const GROUP: &str = "kueue.x-k8s.io";
pub const VERSION: &str = "v1beta2";

/// `apivalidation.FieldImmutableErrorMsg`.
pub const FIELD_IMMUTABLE: &str = "field is immutable";
/// `apivalidation.IsNegativeErrorMsg`.
pub const IS_NEGATIVE: &str = "must be greater than or equal to 0";

/// The kinds with validating webhooks upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ClusterQueue,
    Cohort,
    ResourceFlavor,
    Workload,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::ClusterQueue,
        Kind::Cohort,
        Kind::ResourceFlavor,
        Kind::Workload,
    ];

    /// The kind a review is about, if it is one validated here.
    pub fn of(group: &str, version: &str, kind: &str) -> Option<Kind> {
        if group != GROUP || version != VERSION {
            return None;
        }
        Kind::ALL.into_iter().find(|k| k.name() == kind)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::ClusterQueue => "ClusterQueue",
            Kind::Cohort => "Cohort",
            Kind::ResourceFlavor => "ResourceFlavor",
            Kind::Workload => "Workload",
        }
    }

    /// Upstream's webhook name (`+kubebuilder:webhook` markers).
    pub fn webhook_name(self) -> &'static str {
        match self {
            Kind::ClusterQueue => "vclusterqueue.kb.io",
            Kind::Cohort => "vcohort.kb.io",
            Kind::ResourceFlavor => "vresourceflavor.kb.io",
            Kind::Workload => "vworkload.kb.io",
        }
    }

    /// Upstream's defaulting webhook, for the kinds it adds the
    /// `resource-in-use` finalizer to on create
    /// (`clusterqueue_webhook.go`, `resourceflavor_webhook.go`). Kueue's
    /// Workload defaulter only drops `minCount` with PartialAdmission off,
    /// which it is not by default, so it has none here.
    pub fn defaulting_webhook_name(self) -> Option<&'static str> {
        match self {
            Kind::ClusterQueue => Some("mclusterqueue.kb.io"),
            Kind::ResourceFlavor => Some("mresourceflavor.kb.io"),
            Kind::Cohort | Kind::Workload => None,
        }
    }

    /// The resources the webhook is registered for: Workloads' status is
    /// written through the status subresource and validated too.
    pub fn resources(self) -> &'static [&'static str] {
        match self {
            Kind::ClusterQueue => &["clusterqueues"],
            Kind::Cohort => &["cohorts"],
            Kind::ResourceFlavor => &["resourceflavors"],
            Kind::Workload => &["workloads", "workloads/status"],
        }
    }

    pub fn namespaced(self) -> bool {
        self == Kind::Workload
    }

    /// The `kind` metric label.
    pub fn metric_label(self) -> &'static str {
        match self {
            Kind::ClusterQueue => "kueue.x-k8s.io/clusterqueue",
            Kind::Cohort => "kueue.x-k8s.io/cohort",
            Kind::ResourceFlavor => "kueue.x-k8s.io/resourceflavor",
            Kind::Workload => "kueue.x-k8s.io/workload",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{GROUP}/{VERSION}, Kind={}", self.name())
    }
}

/// Why an object cannot be validated: which object, and where it failed to
/// decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecodable {
    /// `object` or `oldObject`.
    pub what: &'static str,
    pub error: DecodeError,
}

/// The errors of a create or update; delete and connect are not validated
/// (upstream's `ValidateDelete` accepts everything).
pub fn validate(
    kind: Kind,
    op: Operation,
    new: Option<&Value>,
    old: Option<&Value>,
) -> Result<Vec<Violation>, Undecodable> {
    let missing = |what: &'static str| Undecodable {
        what,
        error: DecodeError {
            field: format!("request.{what}"),
            message: format!("required for {} of {kind}", op.as_str()),
        },
    };
    let old = match op {
        Operation::Create => None,
        Operation::Update => Some(old.ok_or_else(|| missing("oldObject"))?),
        Operation::Delete | Operation::Connect => return Ok(Vec::new()),
    };
    let new = new.ok_or_else(|| missing("object"))?;
    match kind {
        Kind::ClusterQueue => cluster_queue::validate_cluster_queue(new, old),
        Kind::Cohort => cluster_queue::validate_cohort(new),
        Kind::ResourceFlavor => resource_flavor::validate(new),
        Kind::Workload => workload::validate(new, old),
    }
    .map_err(|(what, error)| Undecodable { what, error })
}

/// Reads a raw object into an API type, naming the field that does not fit.
pub(crate) fn decode<T: DeserializeOwned>(
    raw: &Value,
    what: &'static str,
) -> Result<T, (&'static str, DecodeError)> {
    serde_path_to_error::deserialize(raw).map_err(|e| {
        let field = e.path().to_string();
        (
            what,
            DecodeError {
                field: if field == "." { "object".into() } else { field },
                message: e.into_inner().to_string(),
            },
        )
    })
}

/// A parsed quantity, or the decode error ParseQuantity gives upstream.
pub(crate) fn parse_quantity(
    s: &str,
    field: &str,
    what: &'static str,
) -> Result<quantity::Quantity, (&'static str, DecodeError)> {
    quantity::Quantity::parse(s).map_err(|m| {
        (
            what,
            DecodeError {
                field: field.to_string(),
                message: m.to_string(),
            },
        )
    })
}

/// JSON with object keys in the given order (Go prints struct fields in
/// declaration order; serde_json's maps are sorted).
pub(crate) fn json_in_go_order(v: &Value, order: &[&str]) -> String {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by_key(|(k, _)| order.iter().position(|o| o == k).unwrap_or(usize::MAX));
            let fields: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        Value::String(k.clone()),
                        json_in_go_order(v, order)
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        other => other.to_string(),
    }
}

/// One `field.Error`. The kinds and values `field.rs` renders are kept as
/// its [`FieldError`]; the rest (duplicates, unsupported values, values
/// that are objects, sizes) are rendered here the same way apimachinery
/// does: values that are neither strings nor numbers as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    Field(FieldError),
    Other {
        field: String,
        kind: OtherKind,
        value: Shown,
        detail: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherKind {
    Invalid,
    Duplicate,
    NotSupported,
    TooLong,
}

/// A bad value as apimachinery prints it: strings quoted, numbers plain,
/// anything else as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    Omit,
    Str(String),
    Json(String),
}

impl Violation {
    pub fn invalid(field: impl Into<String>, value: &str, detail: impl Into<String>) -> Self {
        Violation::Field(FieldError::invalid(
            field,
            BadValue::Str(value.to_string()),
            detail,
        ))
    }

    pub fn invalid_int(field: impl Into<String>, value: i64, detail: impl Into<String>) -> Self {
        Violation::Field(FieldError::invalid(field, BadValue::Int(value), detail))
    }

    /// `field.Invalid` with an object, list or null as the value.
    pub fn invalid_json(
        field: impl Into<String>,
        value: &Value,
        detail: impl Into<String>,
    ) -> Self {
        Violation::Other {
            field: field.into(),
            kind: OtherKind::Invalid,
            value: Shown::Json(value.to_string()),
            detail: detail.into(),
        }
    }

    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Violation::Field(FieldError::required(field, detail))
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Violation::Field(FieldError::forbidden(field, detail))
    }

    pub fn not_found(field: impl Into<String>, value: &str) -> Self {
        Violation::Field(FieldError {
            field: field.into(),
            kind: ErrorType::NotFound,
            value: BadValue::Str(value.to_string()),
            detail: String::new(),
        })
    }

    pub fn duplicate(field: impl Into<String>, value: Shown, detail: impl Into<String>) -> Self {
        Violation::Other {
            field: field.into(),
            kind: OtherKind::Duplicate,
            value,
            detail: detail.into(),
        }
    }

    /// `field.NotSupported`: the detail lists the supported values quoted.
    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Violation::Other {
            field: field.into(),
            kind: OtherKind::NotSupported,
            value: Shown::Str(value.to_string()),
            detail,
        }
    }

    /// `field.TooLong` (the value is never shown).
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Violation::Other {
            field: field.into(),
            kind: OtherKind::TooLong,
            value: Shown::Omit,
            detail: format!("may not be more than {max} {unit}"),
        }
    }

    pub fn field(&self) -> &str {
        match self {
            Violation::Field(e) => &e.field,
            Violation::Other { field, .. } => field,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (field, kind, value, detail) = match self {
            Violation::Field(e) => return e.fmt(f),
            Violation::Other {
                field,
                kind,
                value,
                detail,
            } => (field, kind, value, detail),
        };
        let name = match kind {
            OtherKind::Invalid => "Invalid value",
            OtherKind::Duplicate => "Duplicate value",
            OtherKind::NotSupported => "Unsupported value",
            OtherKind::TooLong => "Too long",
        };
        write!(f, "{field}: {name}")?;
        if *kind != OtherKind::TooLong {
            match value {
                Shown::Omit => {}
                Shown::Str(s) => write!(f, ": {}", go_quote(s))?,
                Shown::Json(j) => write!(f, ": {j}")?,
            }
        }
        if !detail.is_empty() {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

/// `field.ErrorList.ToAggregate().Error()`: one error alone, several as
/// `[a, b]`.
pub fn aggregate(errors: &[Violation]) -> String {
    match errors {
        [] => String::new(),
        [one] => one.to_string(),
        many => {
            let parts: Vec<String> = many.iter().map(ToString::to_string).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// Kueue's own kinds (ClusterQueue, Cohort, ResourceFlavor, Workload)
/// behind the admission router: rare admin and controller writes,
/// validated whole.
pub struct KueueKind(pub Kind);

/// The defaulting of a kind with a defaulting webhook: the
/// `resource-in-use` finalizer added on create, after the others (Kueue's
/// `controllerutil.AddFinalizer`), so a ClusterQueue or ResourceFlavor is
/// guarded from its first moment, before the reconciler has seen it.
pub fn defaults(kind: Kind, operation: super::Operation, object: Option<&Value>) -> Vec<PatchOp> {
    let (Some(obj), super::Operation::Create) = (object, operation) else {
        return Vec::new();
    };
    if kind.defaulting_webhook_name().is_none() {
        return Vec::new();
    }
    let finalizer = Value::from(RESOURCE_IN_USE_FINALIZER);
    match obj.at("/metadata/finalizers") {
        Some(Value::Array(list)) if list.contains(&finalizer) => Vec::new(),
        Some(Value::Array(_)) => vec![PatchOp {
            op: "add",
            path: "/metadata/finalizers/-".into(),
            value: finalizer,
        }],
        _ if obj.get("metadata").is_some_and(Value::is_object) => vec![PatchOp {
            op: "add",
            path: "/metadata/finalizers".into(),
            value: Value::Array(vec![finalizer]),
        }],
        _ => Vec::new(),
    }
}

impl Family for KueueKind {
    fn label(&self) -> &'static str {
        self.0.metric_label()
    }
    fn decide(&self, review: &Review<'_>, _: &super::Context<'_>) -> Decided {
        let (kind, req) = (self.0, review.request);
        if review.hook == super::family::Hook::Mutate {
            return Decision {
                verdict: Verdict::Allow,
                patch: defaults(kind, review.operation, req.object.as_ref()),
                warnings: Vec::new(),
            }
            .into();
        }
        // Warnings go with the answer, allowed or denied, as
        // controller-runtime sends a validator's warnings.
        let warnings = warnings::for_object(kind, review.operation, req.object.as_ref());
        let (verdict, warnings) = match validate(
            kind,
            review.operation,
            req.object.as_ref(),
            req.old_object.as_ref(),
        ) {
            Ok(errs) if errs.is_empty() => (Verdict::Allow, warnings),
            Ok(errs) => (Verdict::Deny(aggregate(&errs)), warnings),
            Err(e) => (
                Verdict::Malformed(format!(
                    "cannot decode {kind} in request.{}: {}",
                    e.what, e.error
                )),
                Vec::new(),
            ),
        };
        Decision {
            verdict,
            patch: Vec::new(),
            warnings,
        }
        .into()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn kinds_by_group_version_kind() {
        assert_eq!(
            Kind::of("kueue.x-k8s.io", "v1beta2", "Workload"),
            Some(Kind::Workload)
        );
        assert_eq!(Kind::of("kueue.x-k8s.io", "v1beta1", "Workload"), None);
        assert_eq!(Kind::of("kueue.x-k8s.io", "v1beta2", "LocalQueue"), None);
        assert_eq!(Kind::of("batch", "v1", "Job"), None);
        assert_eq!(
            Kind::ClusterQueue.to_string(),
            "kueue.x-k8s.io/v1beta2, Kind=ClusterQueue"
        );
    }

    /// Kueue v0.19.2 test/integration/singlecluster/webhook/core/
    /// clusterqueue_test.go ("Defaulting on creation": every entry gets
    /// `kueue.x-k8s.io/resource-in-use`) and resourceflavor_test.go
    /// ("Should have a finalizer"): added on create, after any finalizer
    /// already there, once; nothing on update or for the other kinds.
    #[test]
    fn cluster_queues_and_flavors_get_the_resource_in_use_finalizer_on_create() {
        use crate::admission::Operation::{Create, Update};
        let bare = json!({"metadata": {"name": "foo"}, "spec": {}});
        let want = vec![PatchOp {
            op: "add",
            path: "/metadata/finalizers".into(),
            value: json!(["kueue.x-k8s.io/resource-in-use"]),
        }];
        assert_eq!(defaults(Kind::ClusterQueue, Create, Some(&bare)), want);
        assert_eq!(defaults(Kind::ResourceFlavor, Create, Some(&bare)), want);
        let theirs = json!({"metadata": {"name": "foo", "finalizers": ["example.com/keep"]}});
        assert_eq!(
            defaults(Kind::ClusterQueue, Create, Some(&theirs)),
            vec![PatchOp {
                op: "add",
                path: "/metadata/finalizers/-".into(),
                value: json!("kueue.x-k8s.io/resource-in-use"),
            }]
        );
        let ours = json!({"metadata": {"finalizers": ["kueue.x-k8s.io/resource-in-use"]}});
        assert!(defaults(Kind::ClusterQueue, Create, Some(&ours)).is_empty());
        assert!(defaults(Kind::ClusterQueue, Update, Some(&bare)).is_empty());
        assert!(defaults(Kind::Cohort, Create, Some(&bare)).is_empty());
        assert!(defaults(Kind::Workload, Create, Some(&bare)).is_empty());
    }

    #[test]
    fn renders_the_kinds_field_rs_does_not() {
        assert_eq!(
            Violation::duplicate("a[1]", Shown::Str("cpu".into()), "").to_string(),
            r#"a[1]: Duplicate value: "cpu""#
        );
        assert_eq!(
            Violation::duplicate(
                "t[1]",
                Shown::Json(r#"{"key":"k","effect":"NoSchedule"}"#.into()),
                "taints must be unique by key and effect pair"
            )
            .to_string(),
            r#"t[1]: Duplicate value: {"key":"k","effect":"NoSchedule"}: taints must be unique by key and effect pair"#
        );
        assert_eq!(
            Violation::not_supported("n", "x", &["a".into(), "b".into()]).to_string(),
            r#"n: Unsupported value: "x": supported values: "a", "b""#
        );
        assert_eq!(
            Violation::not_supported("n", "x", &[]).to_string(),
            r#"n: Unsupported value: "x""#
        );
        assert_eq!(
            Violation::invalid_json("p", &json!([1]), FIELD_IMMUTABLE).to_string(),
            "p: Invalid value: [1]: field is immutable"
        );
        assert_eq!(
            Violation::invalid_json("p", &Value::Null, FIELD_IMMUTABLE).to_string(),
            "p: Invalid value: null: field is immutable"
        );
        assert_eq!(
            Violation::not_found("n", "x").to_string(),
            r#"n: Not found: "x""#
        );
    }

    #[test]
    fn aggregates_like_apimachinery() {
        let a = Violation::required("a", "x");
        let b = Violation::forbidden("b", "y");
        assert_eq!(aggregate(std::slice::from_ref(&a)), "a: Required value: x");
        assert_eq!(
            aggregate(&[a, b]),
            "[a: Required value: x, b: Forbidden: y]"
        );
    }

    #[test]
    fn delete_and_connect_are_not_validated() {
        for op in [Operation::Delete, Operation::Connect] {
            assert_eq!(validate(Kind::Workload, op, None, None), Ok(Vec::new()));
        }
    }

    #[test]
    fn missing_objects_are_undecodable() {
        let e = validate(Kind::Workload, Operation::Update, Some(&json!({})), None).unwrap_err();
        assert_eq!(e.what, "oldObject");
        assert_eq!(e.error.field, "request.oldObject");
    }
}
