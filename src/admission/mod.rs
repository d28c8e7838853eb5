//! The admission core: `(request, policy, cluster facts) -> Decision`.
//!
//! Pure: no network, no kube client (one clock read: a PreScaledCronJob is
//! judged from today's date). [`router`] is the one entry point: it decodes
//! the review once, picks the family by group/version/kind and hook (job
//! kinds by policy through [`mutate`] and [`validate`], AppWrapper,
//! PreScaledCronJob, Kueue's own kinds, device kinds, conversion) and
//! returns the answer or the entitlement checks still to make; the server
//! only moves bytes, resolves those checks and counts. Cluster state
//! arrives through [`ClusterFacts`].

pub mod admission_gates;
pub mod appwrapper;
pub mod defaulting;
pub mod devices;
pub mod entitlement;
pub mod family;
pub mod field;
pub mod kueue;
pub mod manifests;
pub mod object;
pub mod pod;
pub mod pod_owner;
pub mod prescale;
pub mod registry;
pub mod review;
pub mod router;
pub mod topology;
pub mod validation;

use serde_json::Value;

use crate::vocabulary::patch::PatchOp;
use crate::{
    api::selector::{LabelSelector, NamespaceNameOnly},
    jobs::policy::{Policy, PolicySet},
};
use object::{DecodeError, JobObject};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// What the webhook knows of the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Suspend jobs without a queue name in managed namespaces too.
    pub manage_jobs_without_queue_name: bool,
    /// Namespaces whose jobs without a queue name are managed.
    pub managed_namespaces: LabelSelector,
}

/// Cluster state the rules read, from watch-backed caches in the shell.
pub trait ClusterFacts: Send + Sync {
    /// Does the namespace match `selector`?
    fn namespace_matches(&self, namespace: &str, selector: &LabelSelector) -> bool;
    /// Is there a LocalQueue named `default` in the namespace?
    fn default_local_queue_exists(&self, namespace: &str) -> bool;
    /// Is there a WorkloadPriorityClass named `default`?
    fn default_priority_class_exists(&self) -> bool;
    /// Does submitting to this LocalQueue need verb `submit` on it (the
    /// `batchgate.dev/submit-requires-permission` opt-in on the LocalQueue
    /// or its ClusterQueue)? See [`crate::admission::entitlement`].
    fn queue_requires_submit(&self, _namespace: &str, _local_queue: &str) -> bool {
        false
    }
    /// Does naming this WorkloadPriorityClass need verb `use` on it (the
    /// `batchgate.dev/use-requires-permission` opt-in)?
    fn priority_class_requires_use(&self, _name: &str) -> bool {
        false
    }
    /// Is this LocalQueue's ClusterQueue one of MultiKueue's (one of its
    /// admission checks is `kueue.x-k8s.io/multikueue`'s)? Its jobs are
    /// handed to MultiKueue (`managedBy`). Not known: no.
    fn multikueue_local_queue(&self, _namespace: &str, _local_queue: &str) -> bool {
        false
    }
    /// DeviceDrivers and DeviceClasses, for the device kinds' validation
    /// (`None`: not known, references are not checked).
    fn device_facts(&self) -> Option<&dyn devices::DeviceFacts> {
        None
    }
}

/// Facts without a cluster connection: only a namespace's name is known (the
/// apiserver labels every namespace with it, so the default selector is
/// still exact); no LocalQueues or priority classes exist.
pub struct NoCluster;

impl ClusterFacts for NoCluster {
    fn namespace_matches(&self, namespace: &str, selector: &LabelSelector) -> bool {
        selector.matches(&NamespaceNameOnly(namespace))
    }
    fn default_local_queue_exists(&self, _: &str) -> bool {
        false
    }
    fn default_priority_class_exists(&self) -> bool {
        false
    }
}

/// An object a rule reads at review time, by name (Kueue's webhooks read
/// these through their client: a TrainJob's runtime, a StatefulSet's
/// Workload).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    pub group: String,
    pub version: String,
    /// Lower-case plural resource.
    pub resource: String,
    /// `None` for a cluster-scoped kind.
    pub namespace: Option<String>,
    pub name: String,
}

/// What a rule learns of an [`ObjectKey`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fetched<'a> {
    Found(&'a Value),
    /// The apiserver answered 404.
    Missing,
    /// It could not be read (the error).
    Failed(&'a str),
    /// Not read yet: the rule allows for now; the router reads every key
    /// asked and decides again.
    Unknown,
}

/// Objects read for a review: [`Lookups::get`] answers from them and
/// notes every key it could not answer.
pub trait Lookups: Send + Sync {
    fn get(&self, key: &ObjectKey) -> Fetched<'_>;
}

/// Nothing read yet; every key asked is noted, for the router to read.
#[derive(Debug, Default)]
pub struct Asked(std::sync::Mutex<Vec<ObjectKey>>);

impl Asked {
    pub fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    pub fn keys(self) -> Vec<ObjectKey> {
        self.0.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl Lookups for Asked {
    fn get(&self, key: &ObjectKey) -> Fetched<'_> {
        let mut asked = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !asked.contains(key) {
            asked.push(key.clone());
        }
        Fetched::Unknown
    }
}

/// The objects the shell read for the keys asked: `Ok(None)` for a 404.
/// A key not among them (none was asked for it) reads as failed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Read(pub std::collections::HashMap<ObjectKey, Result<Option<Value>, String>>);

impl Read {
    /// Every key unreadable, for `why`.
    pub fn unreadable(keys: Vec<ObjectKey>, why: &str) -> Self {
        Read(
            keys.into_iter()
                .map(|k| (k, Err(why.to_string())))
                .collect(),
        )
    }
}

impl Lookups for Read {
    fn get(&self, key: &ObjectKey) -> Fetched<'_> {
        match self.0.get(key) {
            Some(Ok(Some(v))) => Fetched::Found(v),
            Some(Ok(None)) => Fetched::Missing,
            Some(Err(e)) => Fetched::Failed(e),
            None => Fetched::Failed("not read"),
        }
    }
}

/// What was read so far, and what a pass asks beyond it: a rule that reads
/// one object to learn which to read next (an owner chain) asks again on
/// each pass.
#[derive(Debug)]
pub struct Layered<'a> {
    pub read: &'a Read,
    pub asked: Asked,
}

impl Lookups for Layered<'_> {
    fn get(&self, key: &ObjectKey) -> Fetched<'_> {
        match self.read.0.get(key) {
            Some(_) => self.read.get(key),
            None => self.asked.get(key),
        }
    }
}

impl Read {
    /// Adds what a later round read.
    pub fn extend(&mut self, more: Read) {
        self.0.extend(more.0);
    }
}

/// The parts of an AdmissionRequest the rules use.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub operation: Operation,
    pub namespace: &'a str,
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
}

/// Everything a decision depends on besides the request.
pub struct Context<'a> {
    pub settings: &'a Settings,
    pub facts: &'a dyn ClusterFacts,
    pub policies: &'a PolicySet,
    pub lookups: &'a dyn Lookups,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Allow,
    /// Denied because the object breaks a rule (HTTP 403 in the response, as
    /// controller-runtime's `Denied`).
    Deny(String),
    /// Denied because the object could not be read (HTTP 400, as `Errored`).
    Malformed(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    pub patch: Vec<PatchOp>,
    pub warnings: Vec<String>,
}

impl Decision {
    pub fn allow() -> Self {
        Decision {
            verdict: Verdict::Allow,
            patch: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn with(verdict: Verdict) -> Self {
        Decision {
            verdict,
            ..Decision::allow()
        }
    }

    pub fn malformed(policy: &Policy, err: &DecodeError) -> Self {
        Decision::with(Verdict::Malformed(format!(
            "cannot decode {}: {err}",
            policy.target
        )))
    }
}

fn read<'a>(
    policy: &Policy,
    obj: Option<&'a Value>,
    what: &str,
) -> Result<JobObject<'a>, Decision> {
    match obj {
        Some(v) => JobObject::parse(v, policy).map_err(|e| Decision::malformed(policy, &e)),
        None => Err(Decision::with(Verdict::Malformed(format!(
            "request.{what}: required for {} of {}; the apiserver always sends it",
            "this operation", policy.target
        )))),
    }
}

/// The mutating webhook: defaulting on create (Kueue registers its job
/// defaulters for CREATE only; on other operations nothing changes).
pub fn mutate(policy: &Policy, req: &Request<'_>, ctx: &Context<'_>) -> Decision {
    if req.operation != Operation::Create {
        return Decision::allow();
    }
    let job = match read(policy, req.object, "object") {
        Ok(j) => j,
        Err(d) => return d,
    };
    defaulting::default(policy, &job, req.namespace, ctx)
}

/// The validating webhook: invariants on create and update.
pub fn validate(policy: &Policy, req: &Request<'_>, ctx: &Context<'_>) -> Decision {
    let (errors, runtime) = match req.operation {
        Operation::Create => {
            let job = match read(policy, req.object, "object") {
                Ok(j) => j,
                Err(d) => return d,
            };
            (
                validation::on_create(policy, &job, ctx),
                validation::runtime(policy, &job, req.namespace, ctx),
            )
        }
        Operation::Update => {
            let (new, old) = match (
                read(policy, req.object, "object"),
                read(policy, req.old_object, "oldObject"),
            ) {
                (Ok(n), Ok(o)) => (n, o),
                (Err(d), _) | (_, Err(d)) => return d,
            };
            // Kueue refuses any update of a job whose runtime is gone, its
            // own suspension and a finalizer's removal too; a suspended or
            // deleting job is let through, so an evicted one still stops
            // and a deleted one goes.
            let runtime = match validation::runtime(policy, &new, req.namespace, ctx) {
                Err(_) if new.suspend_field() || new.deleting() => Ok(Vec::new()),
                r => r,
            };
            (
                validation::on_update(policy, &old, &new, req.namespace, ctx),
                runtime,
            )
        }
        Operation::Delete | Operation::Connect => return Decision::allow(),
    };
    let errors = match (errors, runtime) {
        (Err(e), _) => Err(e),
        (Ok(_), Err(refused)) => return Decision::with(Verdict::Deny(refused)),
        (Ok(mut errs), Ok(more)) => {
            errs.extend(more);
            Ok(errs)
        }
    };
    match errors {
        Ok(errs) if errs.is_empty() => Decision::allow(),
        Ok(errs) => Decision::with(Verdict::Deny(field::aggregate(&errs))),
        Err(e) => Decision::malformed(policy, &e),
    }
}
