//! What a family of kinds is to the admission router: the hook a review
//! came on, the review as a family sees it, how much of it the family
//! reads, and what it decided (with the entitlement checks still to ask).
//! The families implement [`Family`]; `registry` lists them; the router
//! dispatches to them. Nothing here names a family.

use std::sync::Arc;

use super::{
    entitlement::{self, ComponentCheck, Need, ResourceNaming},
    review::AdmissionRequest,
    Context, Decision, Operation, Request, Verdict,
};

/// The webhook path a review came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    Mutate,
    Validate,
}

impl Hook {
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::Mutate => "mutate",
            Hook::Validate => "validate",
        }
    }
}

pub const BOTH: &[Hook] = &[Hook::Mutate, Hook::Validate];
pub const VALIDATE: &[Hook] = &[Hook::Validate];

/// How much of a review's objects a family reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// Only what the loaded job policies look at (the fast path of every
    /// job kind: most of a 4 KB Job is skipped, not built).
    Policies,
    /// What a gated kind's rules read ([`crate::jobs::policy::Gate::note_interest`]).
    Gated,
    /// The whole objects.
    Whole,
}

/// One decoded review as a family sees it.
pub struct Review<'a> {
    pub hook: Hook,
    pub operation: Operation,
    pub request: &'a AdmissionRequest,
}

impl Review<'_> {
    /// The parts the core rules read.
    pub fn core(&self) -> Request<'_> {
        Request {
            operation: self.operation,
            namespace: self.request.namespace.as_deref().unwrap_or(""),
            object: self.request.object.as_ref(),
            old_object: self.request.old_object.as_ref(),
        }
    }

    /// `request.name`, or empty.
    pub fn name(&self) -> &str {
        self.request.name.as_deref().unwrap_or("")
    }
}

/// The entitlement checks a decision still needs before it is the answer.
#[derive(Debug, Default)]
pub struct Checks {
    pub needs: Vec<Need>,
    /// Needs whose resource name was not known yet (they ask for `*` until
    /// [`Pending::resolve`]): index into `needs`, and what to look up.
    pub unresolved: Vec<(usize, ComponentCheck)>,
    /// Where to look them up.
    pub resources: Option<Arc<dyn ResourceNaming>>,
}

/// What a family decided: the core's decision and the checks still to
/// resolve (asked only when the decision allows).
pub struct Decided {
    pub decision: Decision,
    pub checks: Checks,
}

impl Decided {
    /// A job kind's decision. On /validate, once the invariants allowed the
    /// object, the entitlement checks its queue labels ask for are added:
    /// an object refused anyway costs no SubjectAccessReview, and a user
    /// sees the fix for the object before being told about permissions.
    /// (Defaulting ran before, on /mutate: a defaulted queue name is
    /// checked like a written one.)
    pub fn job(review: &Review<'_>, ctx: &Context<'_>, kind: &str, decision: Decision) -> Decided {
        let mut checks = Checks::default();
        if review.hook == Hook::Validate && decision.verdict == Verdict::Allow {
            let req = review.core();
            checks.needs = entitlement::job_checks(
                &entitlement::JobReview {
                    operation: req.operation,
                    kind,
                    namespace: req.namespace,
                    name: review.name(),
                    new: entitlement::JobLabels::of(req.object),
                    old: entitlement::JobLabels::of(req.old_object),
                    deleting: entitlement::deleting(req.object),
                },
                ctx.facts,
            );
        }
        Decided { decision, checks }
    }
}

impl From<Decision> for Decided {
    fn from(decision: Decision) -> Self {
        Decided {
            decision,
            checks: Checks::default(),
        }
    }
}

/// One family of kinds the webhook answers for: decode (how much of the
/// objects to read), decide (the core's decision and the checks it still
/// needs); the router turns that into the response.
pub trait Family: Send + Sync {
    /// The metric label of the kind (`batch/job`,
    /// `kueue.x-k8s.io/workload`).
    fn label(&self) -> &'static str;
    /// How much of the objects the decision reads.
    fn reads(&self) -> Reads {
        Reads::Whole
    }
    /// The decision on one review, and the checks it still needs.
    fn decide(&self, review: &Review<'_>, ctx: &Context<'_>) -> Decided;
}

/// Today's date (UTC), from the shell's clock: the core reads none.
pub type Today = Arc<dyn Fn() -> chrono::NaiveDate + Send + Sync>;
