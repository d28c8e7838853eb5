//! The families the admission router dispatches to, built here and handed
//! to it: AppWrapper and PreScaledCronJob (both hooks), one row per job
//! policy (both hooks; gated pods and pod owners have families of their
//! own), Kueue's kinds (validate; ClusterQueues and ResourceFlavors are
//! defaulted too) and the device kinds (validate). The router names
//! no family; a new one is a row here.

use std::sync::Arc;

use super::{
    appwrapper, devices, entitlement,
    family::{Decided, Family, Hook, Reads, Review, Today, BOTH, VALIDATE},
    kueue, pod, pod_owner, prescale, Context,
};
use crate::jobs::policy::Policy;

/// One row of the table: the kind, the hooks it is routed on, its family.
pub struct Route {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub hooks: &'static [Hook],
    pub family: Box<dyn Family>,
}

/// The table: group/version/kind and hooks → family. Earlier rows win.
/// `names`: each job policy with its metric label.
pub fn table(
    names: &[(Arc<Policy>, &'static str)],
    appwrapper: &appwrapper::Settings,
    resources: &Arc<dyn entitlement::ResourceNaming>,
    today: &Today,
) -> Vec<Route> {
    let mut routes = Vec::new();
    let mut add = |group: &str, version: &str, kind: &str, hooks, family: Box<dyn Family>| {
        routes.push(Route {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            hooks,
            family,
        })
    };
    add(
        appwrapper::GROUP,
        appwrapper::VERSION,
        appwrapper::KIND,
        BOTH,
        Box::new(appwrapper::AppWrappers {
            settings: appwrapper.clone(),
            resources: resources.clone(),
        }),
    );
    add(
        prescale::GROUP,
        prescale::VERSION,
        prescale::KIND,
        BOTH,
        Box::new(prescale::PreScaledCronJobs {
            today: today.clone(),
        }),
    );
    for (policy, label) in names {
        let t = &policy.target;
        let family: Box<dyn Family> = match (&policy.gate, &policy.pod_owner) {
            // Held by a scheduling gate (pods): whole objects, its own rules.
            (Some(gate), _) => Box::new(pod::Gated {
                policy: policy.clone(),
                gate: gate.clone(),
                label,
            }),
            // Queued through its pods (Deployment, StatefulSet).
            (None, Some(owner)) => Box::new(pod_owner::Owners {
                policy: policy.clone(),
                owner: owner.clone(),
                label,
            }),
            (None, None) => Box::new(Jobs {
                policy: policy.clone(),
                label,
            }),
        };
        add(&t.group, &t.version, &t.kind, BOTH, family);
    }
    for kind in kueue::Kind::ALL {
        let hooks = match kind.defaulting_webhook_name() {
            Some(_) => BOTH,
            None => VALIDATE,
        };
        add(
            kueue::GROUP,
            kueue::VERSION,
            kind.name(),
            hooks,
            Box::new(kueue::KueueKind(kind)),
        );
    }
    for kind in devices::Kind::ALL {
        add(
            devices::GROUP,
            devices::VERSION,
            kind.name(),
            VALIDATE,
            Box::new(devices::DeviceKind(kind)),
        );
    }
    routes
}

/// Job kinds, one route per integration policy: defaulting on /mutate,
/// invariants then the queue and priority-class opt-ins on /validate.
struct Jobs {
    policy: Arc<Policy>,
    label: &'static str,
}

impl Family for Jobs {
    fn label(&self) -> &'static str {
        self.label
    }
    fn reads(&self) -> Reads {
        Reads::Policies
    }
    fn decide(&self, review: &Review<'_>, ctx: &Context<'_>) -> Decided {
        let req = review.core();
        let decision = match review.hook {
            Hook::Mutate => super::mutate(&self.policy, &req, ctx),
            Hook::Validate => super::validate(&self.policy, &req, ctx),
        };
        Decided::job(review, ctx, &self.policy.target.kind, decision)
    }
}
