//! Entitlement: may the user who sent this object do what it asks for?
//!
//! Pure: the checks a review needs, the cache of SubjectAccessReview
//! answers (time is a parameter), and the words of a denial. The shell
//! (`cluster::sar`) asks the apiserver and keeps the cache.
//!
//! A check is a SubjectAccessReview's `resourceAttributes` for one user's
//! full identity (username, uid, groups, extra), so the same client answers
//! the job checks here ("may U submit to LocalQueue Q?", "may U use
//! WorkloadPriorityClass P?") and any other "may U <verb> <group>/<resource>
//! in namespace N" question, such as AppWrapper's per-component checks.

use std::{
    collections::{BTreeMap, HashMap},
    fmt::{self, Display, Write},
    sync::Arc,
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use crate::admission::{field::label_path, review::UserInfo, ClusterFacts, Operation};
use crate::vocabulary::{
    go::go_quote,
    keys::{PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL},
};

/// On a LocalQueue, or on a ClusterQueue (then for every LocalQueue pointing
/// at it): `"true"` makes submitting to the queue need verb `submit` on
/// `localqueues` (group kueue.x-k8s.io) named after it.
pub const SUBMIT_REQUIRES_PERMISSION: &str = "batchgate.dev/submit-requires-permission";
/// On a WorkloadPriorityClass: `"true"` makes naming it need verb `use` on
/// `workloadpriorityclasses` named after it.
pub const USE_REQUIRES_PERMISSION: &str = "batchgate.dev/use-requires-permission";

pub const KUEUE_GROUP: &str = "kueue.x-k8s.io";

/// Is an opt-in annotation switched on? Only the exact value `"true"` is.
pub fn opted_in(annotations: Option<&BTreeMap<String, String>>, key: &str) -> bool {
    annotations
        .and_then(|a| a.get(key))
        .is_some_and(|v| v == "true")
}

/// Who asks, as the apiserver authenticated them (`request.userInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Identity {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<UserInfo> for Identity {
    fn from(u: UserInfo) -> Self {
        Identity {
            username: u.username,
            uid: u.uid,
            groups: u.groups,
            extra: u.extra,
        }
    }
}

/// What is asked: a SubjectAccessReview's `resourceAttributes`. Empty
/// strings are absent fields (`namespace` empty: cluster scope or all
/// namespaces; `name` empty: any name).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ResourceAttributes {
    pub verb: String,
    pub group: String,
    /// The API version (`v1`), or empty for any.
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl ResourceAttributes {
    /// `localqueues.kueue.x-k8s.io`, as kubectl names a resource
    /// (`jobs.batch`; a core resource has no group suffix).
    pub fn qualified_resource(&self) -> String {
        let mut r = self.resource.clone();
        if !self.subresource.is_empty() {
            r.push('/');
            r.push_str(&self.subresource);
        }
        if !self.group.is_empty() {
            r.push('.');
            r.push_str(&self.group);
        }
        r
    }
}

/// `User "U" cannot submit localqueues.kueue.x-k8s.io "q" in the namespace "ns"`
/// (or `... may submit ...`): the part a denial and an error message share,
/// worded as the apiserver's own RBAC refusals are.
struct Ask<'a> {
    user: &'a Identity,
    attributes: &'a ResourceAttributes,
    modal: &'static str,
}

impl Display for Ask<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.attributes;
        write!(
            f,
            "User {} {} {} {}",
            go_quote(&self.user.username),
            self.modal,
            a.verb,
            a.qualified_resource()
        )?;
        if !a.name.is_empty() {
            write!(f, " {}", go_quote(&a.name))?;
        }
        if a.namespace.is_empty() {
            f.write_str(" at the cluster scope")
        } else {
            write!(f, " in the namespace {}", go_quote(&a.namespace))
        }
    }
}

/// One question for the authorizer: the full identity and what it asks.
/// The cache key: two users who differ in any group or extra value never
/// share an answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Check {
    pub user: Arc<Identity>,
    pub attributes: ResourceAttributes,
}

/// The authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    /// Denied, with the authorizer's reason (often empty for RBAC).
    Denied {
        reason: String,
    },
}

/// What a failed check does to the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OnError {
    /// Fail closed: the request is refused, saying it may be retried.
    #[default]
    Deny,
    /// Fail open: the request is admitted with a warning.
    Allow,
}

impl OnError {
    pub fn as_str(self) -> &'static str {
        match self {
            OnError::Deny => "deny",
            OnError::Allow => "allow",
        }
    }
}

/// How long answers are kept, and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    pub allowed_ttl: Duration,
    pub denied_ttl: Duration,
    pub max_entries: usize,
}

impl Default for CacheLimits {
    fn default() -> Self {
        CacheLimits {
            allowed_ttl: Duration::from_secs(30),
            denied_ttl: Duration::from_secs(10),
            max_entries: 4096,
        }
    }
}

/// Everything the entitlement shell is configured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub cache: CacheLimits,
    pub on_error: OnError,
    /// How long one SubjectAccessReview may take before it counts as failed.
    pub timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cache: CacheLimits::default(),
            on_error: OnError::Deny,
            timeout: Duration::from_secs(5),
        }
    }
}

struct Entry {
    outcome: Outcome,
    expires: Instant,
    seq: u64,
}

/// A bounded cache of answers with a TTL for allowed and one for denied
/// answers. Errors are never cached. When full, expired entries go first,
/// then those closest to expiry. Every operation is O(log n).
pub struct DecisionCache {
    limits: CacheLimits,
    entries: HashMap<Arc<Check>, Entry>,
    /// (expiry, insertion sequence) → key: expiry order for eviction.
    by_expiry: BTreeMap<(Instant, u64), Arc<Check>>,
    seq: u64,
}

impl DecisionCache {
    pub fn new(limits: CacheLimits) -> Self {
        DecisionCache {
            limits,
            entries: HashMap::new(),
            by_expiry: BTreeMap::new(),
            seq: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The answer, if one is cached and unexpired at `now`.
    pub fn get(&mut self, check: &Check, now: Instant) -> Option<Outcome> {
        let e = self.entries.get(check)?;
        if e.expires > now {
            return Some(e.outcome.clone());
        }
        let key = (e.expires, e.seq);
        self.entries.remove(check);
        self.by_expiry.remove(&key);
        None
    }

    /// Keeps `outcome` for its TTL from `now`, evicting to stay in bounds.
    pub fn insert(&mut self, check: Arc<Check>, outcome: Outcome, now: Instant) {
        let ttl = match outcome {
            Outcome::Allowed => self.limits.allowed_ttl,
            Outcome::Denied { .. } => self.limits.denied_ttl,
        };
        if let Some(old) = self.entries.remove(&*check) {
            self.by_expiry.remove(&(old.expires, old.seq));
        }
        if ttl.is_zero() || self.limits.max_entries == 0 {
            return;
        }
        // Expired first, then the soonest to expire, until there is room.
        while let Some(entry) = self.by_expiry.first_entry() {
            let (expires, _) = *entry.key();
            if expires > now && self.entries.len() < self.limits.max_entries {
                break;
            }
            let key = entry.remove();
            self.entries.remove(&*key);
        }
        self.seq += 1;
        let expires = now + ttl;
        self.by_expiry.insert((expires, self.seq), check.clone());
        self.entries.insert(
            check,
            Entry {
                outcome,
                expires,
                seq: self.seq,
            },
        );
    }
}

/// The object whose request needs a check, and the field that asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// `Job`, `AppWrapper`, ...
    pub kind: String,
    pub namespace: String,
    /// Empty when not known yet (a create with `generateName`).
    pub name: String,
    /// Where the object names what is checked, as a field path.
    pub field: String,
}

impl Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.namespace.is_empty(), self.name.is_empty()) {
            (true, true) => write!(f, "a new {}", self.kind),
            (false, true) => write!(f, "a new {} in namespace {}", self.kind, self.namespace),
            (true, false) => write!(f, "the {} {}", self.kind, self.name),
            (false, false) => write!(f, "the {} {}/{}", self.kind, self.namespace, self.name),
        }
    }
}

/// A check a review needs, without the user: what is asked, who asks for it
/// (the subject) and why it is asked at all (the opt-in), for the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub attributes: ResourceAttributes,
    pub subject: Subject,
    /// Why this is checked (the opt-in that asks for it), or empty.
    pub because: &'static str,
    /// How a denial or a failure of this check reads.
    pub wording: Wording,
}

/// How a check's denial and failure read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Wording {
    /// batchgate's own: who, what, which object and field asks, and what
    /// RBAC would allow it.
    #[default]
    Batchgate,
    /// project-codeflare/appwrapper's per-component check, as the field
    /// error upstream returns on the subject's field:
    /// `<field>: Forbidden: User <name> is not authorized to create
    /// <resource> in <namespace>`, and `<field>: Internal error: <error>`
    /// when the check could not be made.
    AppWrapperComponent,
}

impl Need {
    pub fn check(&self, user: &Arc<Identity>) -> Check {
        Check {
            user: user.clone(),
            attributes: self.attributes.clone(),
        }
    }
}

const QUEUE_OPT_IN: &str = "the queue requires this permission (batchgate.dev/submit-requires-permission: \"true\" on the LocalQueue or its ClusterQueue)";
const PRIORITY_OPT_IN: &str =
    "the class requires this permission (batchgate.dev/use-requires-permission: \"true\")";

/// The denial of one check: user, verb, resource, name, namespace, the
/// object and field that ask, and what RBAC would allow it.
pub fn denial(user: &Identity, need: &Need, reason: &str) -> String {
    let a = &need.attributes;
    if need.wording == Wording::AppWrapperComponent {
        return format!(
            "{}: Forbidden: User {} is not authorized to {} {} in {}",
            need.subject.field, user.username, a.verb, a.resource, a.namespace
        );
    }
    let ask = Ask {
        user,
        attributes: a,
        modal: "cannot",
    };
    let mut m = format!("{ask}: {} names it in {}", need.subject, need.subject.field);
    if !need.because.is_empty() {
        let _ = write!(m, " and {}", need.because);
    }
    if !reason.is_empty() {
        let _ = write!(m, "; the authorizer says: {reason}");
    }
    let _ = write!(
        m,
        "; to allow it, grant verb {} on resource {} in API group {}",
        go_quote(&a.verb),
        go_quote(&a.resource),
        go_quote(&a.group)
    );
    if !a.name.is_empty() {
        let _ = write!(m, " (resourceNames: [{}])", go_quote(&a.name));
    }
    m.push_str(" to the user or one of its groups");
    m
}

/// The answer when a check could not be made.
pub fn unchecked(user: &Identity, need: &Need, error: &dyn Display, on_error: OnError) -> String {
    if need.wording == Wording::AppWrapperComponent {
        return format!("{}: Internal error: {error}", need.subject.field);
    }
    let verdict = match on_error {
        OnError::Deny => "the request is refused (entitlement.onError: deny) and may be retried",
        OnError::Allow => "the request is admitted unchecked (entitlement.onError: allow)",
    };
    let ask = Ask {
        user,
        attributes: &need.attributes,
        modal: "may",
    };
    format!(
        "cannot check whether {ask} ({} names it in {}): {error}; {verdict}",
        need.subject, need.subject.field
    )
}

/// What a review with checks comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every check allowed, or failed with `onError: allow` (then warnings).
    Allow { warnings: Vec<String> },
    /// At least one check denied.
    Deny(String),
    /// No check denied, at least one failed, and failures deny.
    Unchecked(String),
}

/// Combines the answers to `needs` (in order): denials win over failures;
/// several messages aggregate as `[a, b]`.
pub fn judge<E: Display>(
    user: &Identity,
    needs: &[Need],
    results: &[Result<Outcome, E>],
    on_error: OnError,
) -> Verdict {
    let (mut denied, mut failed) = (Vec::new(), Vec::new());
    for (need, r) in needs.iter().zip(results) {
        match r {
            Ok(Outcome::Allowed) => {}
            Ok(Outcome::Denied { reason }) => denied.push(denial(user, need, reason)),
            Err(e) => failed.push(unchecked(user, need, e, on_error)),
        }
    }
    // A missing answer is a failure, never an allow.
    for need in needs.iter().skip(results.len()) {
        failed.push(unchecked(user, need, &"no answer", on_error));
    }
    if !denied.is_empty() {
        Verdict::Deny(aggregate(denied))
    } else if failed.is_empty() {
        Verdict::Allow {
            warnings: Vec::new(),
        }
    } else {
        match on_error {
            OnError::Deny => Verdict::Unchecked(aggregate(failed)),
            OnError::Allow => Verdict::Allow { warnings: failed },
        }
    }
}

fn aggregate(mut messages: Vec<String>) -> String {
    if messages.len() == 1 {
        return messages.pop().unwrap_or_default();
    }
    format!("[{}]", messages.join(", "))
}

/// The entitlement labels of a job object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobLabels<'a> {
    pub queue: Option<&'a str>,
    pub priority: Option<&'a str>,
}

impl<'a> JobLabels<'a> {
    /// Reads the queue-name and priority-class labels of a raw object (an
    /// empty or non-string value counts as none: validation has refused
    /// non-strings before this is asked).
    pub fn of(object: Option<&'a Value>) -> Self {
        let labels = object
            .and_then(|o| o.get("metadata"))
            .and_then(|m| m.get("labels"));
        let label = |k: &str| {
            labels
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
        };
        JobLabels {
            queue: label(QUEUE_NAME_LABEL),
            priority: label(PRIORITY_CLASS_LABEL),
        }
    }
}

/// Is the object being deleted (`metadata.deletionTimestamp` set)?
pub fn deleting(object: Option<&Value>) -> bool {
    object
        .and_then(|o| o.get("metadata"))
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null())
}

/// A review of an integrated job kind, as far as entitlement cares.
#[derive(Debug, Clone, Copy)]
pub struct JobReview<'a> {
    pub operation: Operation,
    /// The kind, for messages (`Job`).
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub new: JobLabels<'a>,
    /// The old object's labels (UPDATE).
    pub old: JobLabels<'a>,
    /// The object is being deleted.
    pub deleting: bool,
}

/// The label value a review asks for: any on CREATE, a changed one on UPDATE.
fn asked<'a>(op: Operation, new: Option<&'a str>, old: Option<&'a str>) -> Option<&'a str> {
    match op {
        Operation::Create => new,
        Operation::Update if new != old => new,
        _ => None,
    }
}

/// Which checks a job review needs: on CREATE, for a queue-name label naming
/// a protected LocalQueue (verb `submit` on `localqueues`) and for a
/// priority-class label naming a protected WorkloadPriorityClass (verb `use`
/// on `workloadpriorityclasses`); on UPDATE, the same for a label whose
/// value changed; nothing for objects being deleted or other operations.
/// The opt-ins are asked of `facts` only for labels that need a look.
pub fn job_checks(review: &JobReview<'_>, facts: &dyn ClusterFacts) -> Vec<Need> {
    let mut needs = Vec::new();
    if review.deleting {
        return needs;
    }
    let changed = |new, old| asked(review.operation, new, old);
    let subject = |label: &str| Subject {
        kind: review.kind.to_string(),
        namespace: review.namespace.to_string(),
        name: review.name.to_string(),
        field: label_path(label),
    };
    if let Some(queue) = changed(review.new.queue, review.old.queue) {
        if facts.queue_requires_submit(review.namespace, queue) {
            needs.push(Need {
                attributes: ResourceAttributes {
                    verb: "submit".into(),
                    group: KUEUE_GROUP.into(),
                    resource: "localqueues".into(),
                    namespace: review.namespace.into(),
                    name: queue.into(),
                    ..ResourceAttributes::default()
                },
                subject: subject(QUEUE_NAME_LABEL),
                because: QUEUE_OPT_IN,
                wording: Wording::Batchgate,
            });
        }
    }
    if let Some(class) = changed(review.new.priority, review.old.priority) {
        if facts.priority_class_requires_use(class) {
            needs.push(Need {
                attributes: ResourceAttributes {
                    verb: "use".into(),
                    group: KUEUE_GROUP.into(),
                    resource: "workloadpriorityclasses".into(),
                    name: class.into(),
                    ..ResourceAttributes::default()
                },
                subject: subject(PRIORITY_CLASS_LABEL),
                because: PRIORITY_OPT_IN,
                wording: Wording::Batchgate,
            });
        }
    }
    needs
}

/// One component the requester must be allowed to create: its index and
/// kind; the resource name comes from discovery.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ComponentCheck {
    pub index: usize,
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// The resource name of a component's kind, for its check (`*` of its
/// group until known). The shell's discovery cache implements it
/// (`cluster::discovery::ResourceNames`); the router only reads.
pub trait ResourceNaming: Send + Sync + std::fmt::Debug {
    /// The resource name, if already known.
    fn cached(&self, c: &ComponentCheck) -> Option<String>;
    /// The resource name: known, discovered, or [`ANY_RESOURCE`].
    fn resolve<'a>(&'a self, c: &'a ComponentCheck) -> BoxFuture<'a, String>;
}

/// What a check asks for when the component's resource name is unknown.
pub const ANY_RESOURCE: &str = "*";

/// No resource names known, none to discover: every component is checked
/// as [`ANY_RESOURCE`] of its group.
#[derive(Debug)]
pub struct NoResourceNames;

impl ResourceNaming for NoResourceNames {
    fn cached(&self, _: &ComponentCheck) -> Option<String> {
        None
    }
    fn resolve<'a>(&'a self, _: &'a ComponentCheck) -> BoxFuture<'a, String> {
        Box::pin(std::future::ready(ANY_RESOURCE.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::selector::LabelSelector;

    fn user(name: &str) -> Arc<Identity> {
        Arc::new(Identity {
            username: name.into(),
            uid: "u-1".into(),
            groups: vec!["system:authenticated".into()],
            extra: BTreeMap::new(),
        })
    }

    fn check(user: &Arc<Identity>, name: &str) -> Check {
        Check {
            user: user.clone(),
            attributes: ResourceAttributes {
                verb: "submit".into(),
                group: KUEUE_GROUP.into(),
                resource: "localqueues".into(),
                namespace: "team-a".into(),
                name: name.into(),
                ..ResourceAttributes::default()
            },
        }
    }

    fn denied() -> Outcome {
        Outcome::Denied {
            reason: String::new(),
        }
    }

    #[test]
    fn answers_live_for_their_ttl() {
        let t0 = Instant::now();
        let mut c = DecisionCache::new(CacheLimits::default());
        let (alice, bob) = (user("alice"), user("bob"));
        c.insert(Arc::new(check(&alice, "q")), Outcome::Allowed, t0);
        c.insert(Arc::new(check(&bob, "q")), denied(), t0);
        let at = |s| t0 + Duration::from_secs(s);
        assert_eq!(c.get(&check(&alice, "q"), at(29)), Some(Outcome::Allowed));
        assert_eq!(c.get(&check(&bob, "q"), at(9)), Some(denied()));
        assert_eq!(c.get(&check(&bob, "q"), at(10)), None, "denied TTL is 10 s");
        assert_eq!(c.get(&check(&alice, "q"), at(30)), None, "allowed TTL 30 s");
        assert!(c.is_empty(), "expired entries are dropped when seen");
        assert_eq!(c.get(&check(&alice, "other"), t0), None);
    }

    #[test]
    fn a_new_answer_replaces_the_old_one() {
        let t0 = Instant::now();
        let mut c = DecisionCache::new(CacheLimits::default());
        let alice = user("alice");
        c.insert(Arc::new(check(&alice, "q")), denied(), t0);
        c.insert(Arc::new(check(&alice, "q")), Outcome::Allowed, t0);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c.get(&check(&alice, "q"), t0 + Duration::from_secs(20)),
            Some(Outcome::Allowed)
        );
    }

    #[test]
    fn the_cache_is_bounded_expired_first_then_soonest_to_expire() {
        let t0 = Instant::now();
        let mut c = DecisionCache::new(CacheLimits {
            max_entries: 3,
            ..CacheLimits::default()
        });
        let alice = user("alice");
        // "d" is denied: it expires first (10 s against 30 s).
        c.insert(Arc::new(check(&alice, "a")), Outcome::Allowed, t0);
        c.insert(Arc::new(check(&alice, "d")), denied(), t0);
        c.insert(Arc::new(check(&alice, "b")), Outcome::Allowed, t0);
        c.insert(Arc::new(check(&alice, "c")), Outcome::Allowed, t0);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(&check(&alice, "d"), t0), None);
        assert!(c.get(&check(&alice, "a"), t0).is_some());
        // Then the oldest of equal expiry.
        c.insert(Arc::new(check(&alice, "e")), Outcome::Allowed, t0);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(&check(&alice, "a"), t0), None);
        // A thousand distinct users never grow it past the bound.
        for i in 0..1000 {
            c.insert(
                Arc::new(check(&user(&format!("u{i}")), "q")),
                Outcome::Allowed,
                t0 + Duration::from_millis(i),
            );
            assert!(c.len() <= 3);
        }
        // Expired entries make room before live ones are evicted.
        let later = t0 + Duration::from_secs(3600);
        c.insert(Arc::new(check(&alice, "z")), Outcome::Allowed, later);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn zero_ttl_or_size_caches_nothing() {
        let t0 = Instant::now();
        let alice = user("alice");
        let mut c = DecisionCache::new(CacheLimits {
            denied_ttl: Duration::ZERO,
            ..CacheLimits::default()
        });
        c.insert(Arc::new(check(&alice, "q")), denied(), t0);
        assert!(c.is_empty());
        let mut c = DecisionCache::new(CacheLimits {
            max_entries: 0,
            ..CacheLimits::default()
        });
        c.insert(Arc::new(check(&alice, "q")), Outcome::Allowed, t0);
        assert!(c.is_empty());
    }

    #[test]
    fn the_key_is_the_full_identity() {
        let t0 = Instant::now();
        let mut c = DecisionCache::new(CacheLimits::default());
        let base = Identity {
            username: "alice".into(),
            uid: "1".into(),
            groups: vec!["g1".into()],
            extra: BTreeMap::from([("scopes".into(), vec!["a".into()])]),
        };
        c.insert(
            Arc::new(check(&Arc::new(base.clone()), "q")),
            Outcome::Allowed,
            t0,
        );
        assert!(c.get(&check(&Arc::new(base.clone()), "q"), t0).is_some());
        let variants = [
            Identity {
                uid: "2".into(),
                ..base.clone()
            },
            Identity {
                groups: vec!["g1".into(), "admins".into()],
                ..base.clone()
            },
            Identity {
                groups: Vec::new(),
                ..base.clone()
            },
            Identity {
                extra: BTreeMap::from([("scopes".into(), vec!["b".into()])]),
                ..base.clone()
            },
            Identity {
                extra: BTreeMap::new(),
                ..base.clone()
            },
        ];
        for v in variants {
            assert_eq!(c.get(&check(&Arc::new(v.clone()), "q"), t0), None, "{v:?}");
        }
        // And what is asked: another verb is another question.
        let mut other = check(&Arc::new(base), "q");
        other.attributes.verb = "get".into();
        assert_eq!(c.get(&other, t0), None);
    }

    /// Opt-ins by name: queues `protected` (in team-a) and classes `high`.
    struct Facts;
    impl ClusterFacts for Facts {
        fn namespace_matches(&self, _: &str, _: &LabelSelector) -> bool {
            true
        }
        fn default_local_queue_exists(&self, _: &str) -> bool {
            false
        }
        fn default_priority_class_exists(&self) -> bool {
            false
        }
        fn queue_requires_submit(&self, namespace: &str, queue: &str) -> bool {
            namespace == "team-a" && queue == "protected"
        }
        fn priority_class_requires_use(&self, name: &str) -> bool {
            name == "high"
        }
    }

    fn review<'a>(op: Operation, new: JobLabels<'a>, old: JobLabels<'a>) -> JobReview<'a> {
        JobReview {
            operation: op,
            kind: "Job",
            namespace: "team-a",
            name: "train-1",
            new,
            old,
            deleting: false,
        }
    }

    fn labels<'a>(queue: Option<&'a str>, priority: Option<&'a str>) -> JobLabels<'a> {
        JobLabels { queue, priority }
    }

    fn verbs(needs: &[Need]) -> Vec<(&str, &str, &str)> {
        needs
            .iter()
            .map(|n| {
                (
                    n.attributes.verb.as_str(),
                    n.attributes.resource.as_str(),
                    n.attributes.name.as_str(),
                )
            })
            .collect()
    }

    #[test]
    fn which_checks_a_job_review_needs() {
        let none = JobLabels::default();
        let both = labels(Some("protected"), Some("high"));
        let create = |l| job_checks(&review(Operation::Create, l, none), &Facts);
        assert_eq!(
            verbs(&create(both)),
            [
                ("submit", "localqueues", "protected"),
                ("use", "workloadpriorityclasses", "high")
            ]
        );
        assert!(create(labels(Some("open"), Some("low"))).is_empty());
        assert!(create(none).is_empty());
        let n = &create(both)[1];
        assert_eq!(n.attributes.namespace, "", "classes are cluster-scoped");
        assert_eq!(
            n.subject.field,
            "metadata.labels[kueue.x-k8s.io/priority-class]"
        );

        // UPDATE: only a changed label is checked.
        let update = |new, old| job_checks(&review(Operation::Update, new, old), &Facts);
        assert!(update(both, both).is_empty());
        assert_eq!(
            verbs(&update(both, labels(Some("open"), Some("high")))),
            [("submit", "localqueues", "protected")]
        );
        assert_eq!(
            verbs(&update(both, labels(Some("protected"), None))),
            [("use", "workloadpriorityclasses", "high")]
        );
        assert!(update(labels(Some("open"), None), both).is_empty());
        assert!(
            update(none, both).is_empty(),
            "removing needs no permission"
        );

        // Deleting, DELETE and CONNECT: nothing.
        let mut r = review(Operation::Create, both, none);
        r.deleting = true;
        assert!(job_checks(&r, &Facts).is_empty());
        for op in [Operation::Delete, Operation::Connect] {
            assert!(job_checks(&review(op, both, none), &Facts).is_empty());
        }
        // Another namespace's queue of the same name is not protected.
        let mut r = review(Operation::Create, both, none);
        r.namespace = "team-b";
        assert_eq!(
            verbs(&job_checks(&r, &Facts)),
            [("use", "workloadpriorityclasses", "high")]
        );
        // Without a cluster there are no opt-ins.
        assert!(job_checks(
            &review(Operation::Create, both, none),
            &crate::admission::NoCluster
        )
        .is_empty());
    }

    #[test]
    fn labels_are_read_from_the_raw_object() {
        let obj = serde_json::json!({"metadata": {"labels": {
            "kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/priority-class": ""},
            "deletionTimestamp": "2025-01-01T00:00:00Z"}});
        assert_eq!(JobLabels::of(Some(&obj)), labels(Some("q"), None));
        assert!(deleting(Some(&obj)));
        assert_eq!(JobLabels::of(None), JobLabels::default());
        let bare = serde_json::json!({"metadata": {"deletionTimestamp": null}});
        assert!(!deleting(Some(&bare)));
        assert_eq!(JobLabels::of(Some(&bare)), JobLabels::default());
    }

    fn needs() -> Vec<Need> {
        job_checks(
            &review(
                Operation::Create,
                labels(Some("protected"), Some("high")),
                JobLabels::default(),
            ),
            &Facts,
        )
    }

    #[test]
    fn a_denial_names_user_verb_resource_object_and_the_fix() {
        let bot = user("system:serviceaccount:team-a:bot");
        let n = needs();
        assert_eq!(
            denial(&bot, &n[0], ""),
            r#"User "system:serviceaccount:team-a:bot" cannot submit localqueues.kueue.x-k8s.io "protected" in the namespace "team-a": the Job team-a/train-1 names it in metadata.labels[kueue.x-k8s.io/queue-name] and the queue requires this permission (batchgate.dev/submit-requires-permission: "true" on the LocalQueue or its ClusterQueue); to allow it, grant verb "submit" on resource "localqueues" in API group "kueue.x-k8s.io" (resourceNames: ["protected"]) to the user or one of its groups"#
        );
        let m = denial(&bot, &n[1], "no RBAC policy matched");
        assert!(
            m.starts_with(r#"User "system:serviceaccount:team-a:bot" cannot use workloadpriorityclasses.kueue.x-k8s.io "high" at the cluster scope: the Job team-a/train-1 names it in metadata.labels[kueue.x-k8s.io/priority-class]"#),
            "{m}"
        );
        assert!(
            m.contains("; the authorizer says: no RBAC policy matched;"),
            "{m}"
        );
        // A generic check (AppWrapper's component): no name, core group.
        let generic = Need {
            attributes: ResourceAttributes {
                verb: "create".into(),
                resource: "services".into(),
                namespace: "team-a".into(),
                ..ResourceAttributes::default()
            },
            subject: Subject {
                kind: "AppWrapper".into(),
                namespace: "team-a".into(),
                name: String::new(),
                field: "spec.components[1].template".into(),
            },
            because: "",
            wording: Wording::Batchgate,
        };
        assert_eq!(
            denial(&bot, &generic, ""),
            r#"User "system:serviceaccount:team-a:bot" cannot create services in the namespace "team-a": a new AppWrapper in namespace team-a names it in spec.components[1].template; to allow it, grant verb "create" on resource "services" in API group "" to the user or one of its groups"#
        );
    }

    #[test]
    fn failures_deny_or_warn_and_denials_win() {
        let bot = user("bot");
        let n = needs();
        let err = |m: &str| Err::<Outcome, String>(m.to_string());
        assert_eq!(
            judge::<String>(
                &bot,
                &n,
                &[Ok(Outcome::Allowed), Ok(Outcome::Allowed)],
                OnError::Deny
            ),
            Verdict::Allow { warnings: vec![] }
        );
        let Verdict::Unchecked(m) = judge(
            &bot,
            &n,
            &[err("connection refused"), Ok(Outcome::Allowed)],
            OnError::Deny,
        ) else {
            panic!("a failure denies when failing closed")
        };
        assert_eq!(
            m,
            r#"cannot check whether User "bot" may submit localqueues.kueue.x-k8s.io "protected" in the namespace "team-a" (the Job team-a/train-1 names it in metadata.labels[kueue.x-k8s.io/queue-name]): connection refused; the request is refused (entitlement.onError: deny) and may be retried"#
        );
        let Verdict::Allow { warnings } = judge(
            &bot,
            &n,
            &[err("timeout"), Ok(Outcome::Allowed)],
            OnError::Allow,
        ) else {
            panic!("a failure allows when failing open")
        };
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("admitted unchecked"), "{warnings:?}");
        // A denial wins over a failure, even failing open.
        let v = judge(&bot, &n, &[err("timeout"), Ok(denied())], OnError::Allow);
        assert!(
            matches!(&v, Verdict::Deny(m) if m.contains("cannot use")),
            "{v:?}"
        );
        // Two denials aggregate.
        let Verdict::Deny(m) =
            judge::<String>(&bot, &n, &[Ok(denied()), Ok(denied())], OnError::Deny)
        else {
            panic!()
        };
        assert!(
            m.starts_with("[User \"bot\" cannot submit") && m.ends_with(']'),
            "{m}"
        );
        // Missing answers never allow.
        assert!(matches!(
            judge::<String>(&bot, &n, &[], OnError::Deny),
            Verdict::Unchecked(_)
        ));
    }

    #[test]
    fn opt_in_is_exactly_true() {
        let a = |v: &str| BTreeMap::from([(SUBMIT_REQUIRES_PERMISSION.to_string(), v.to_string())]);
        assert!(opted_in(Some(&a("true")), SUBMIT_REQUIRES_PERMISSION));
        assert!(!opted_in(Some(&a("false")), SUBMIT_REQUIRES_PERMISSION));
        assert!(!opted_in(Some(&a("yes")), SUBMIT_REQUIRES_PERMISSION));
        assert!(!opted_in(Some(&a("true")), USE_REQUIRES_PERMISSION));
        assert!(!opted_in(None, SUBMIT_REQUIRES_PERMISSION));
    }
}
