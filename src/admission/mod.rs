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
    let errors = match req.operation {
        Operation::Create => {
            let job = match read(policy, req.object, "object") {
                Ok(j) => j,
                Err(d) => return d,
            };
            validation::on_create(policy, &job, ctx)
        }
        Operation::Update => {
            let (new, old) = match (
                read(policy, req.object, "object"),
                read(policy, req.old_object, "oldObject"),
            ) {
                (Ok(n), Ok(o)) => (n, o),
                (Err(d), _) | (_, Err(d)) => return d,
            };
            validation::on_update(policy, &old, &new, req.namespace, ctx)
        }
        Operation::Delete | Operation::Connect => return Decision::allow(),
    };
    match errors {
        Ok(errs) if errs.is_empty() => Decision::allow(),
        Ok(errs) => Decision::with(Verdict::Deny(field::aggregate(&errs))),
        Err(e) => Decision::malformed(policy, &e),
    }
}
