//! The `Active` conditions MultiKueue keeps, decided as Kueue v0.19.2's
//! controllers decide them, with their reasons and messages word for word:
//!
//! - a MultiKueueCluster's: whether the manager could load a client
//!   configuration for the worker and connect with it
//!   (`clustersReconciler.Reconcile`);
//! - an AdmissionCheck's with controllerName `kueue.x-k8s.io/multikueue`:
//!   whether its MultiKueueConfig names clusters that are active
//!   (`ACReconciler.Reconcile`);
//!
//! and when to try connecting to a worker again ([`Reconnect`]), and since
//! when a worker is lost ([`Link`]).
//!
//! Pure: the shell reads the Secret, the file, the ClusterProfile and the
//! objects, tries the connection, and passes what it found.

use crate::api::kueue::{
    v1beta2::{
        location_type, AdmissionCheckParametersReference, AdmissionCheckSpec,
        MultiKueueClusterSpec, MultiKueueConfigSpec, MULTIKUEUE_CONTROLLER,
    },
    GROUP,
};

use super::kubeconfig::{KubeconfigError, RestConfigError};
use crate::vocabulary::duration::GoDuration;

/// An `Active` condition to set: its status, reason and message (the
/// shell adds the type, the generation and the transition time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    pub status: bool,
    pub reason: String,
    pub message: String,
}

impl Active {
    fn new(status: bool, reason: &str, message: impl Into<String>) -> Self {
        Active {
            status,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// `metav1.ConditionTrue` or `ConditionFalse`.
    pub fn status_str(&self) -> &'static str {
        if self.status {
            "True"
        } else {
            "False"
        }
    }

    /// `cmpConditionState`: the condition needs writing unless the one in
    /// place has the same status, reason and message.
    pub fn differs_from(&self, old: Option<(&str, &str, &str)>) -> bool {
        old != Some((self.status_str(), &self.reason, &self.message))
    }
}

/// Where a MultiKueueCluster's client configuration is to be read from
/// (`loadClientConfig`, `getKubeConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'a> {
    /// A ClusterProfile of this name in the manager's namespace (tried
    /// first, whatever else the spec holds).
    ClusterProfile(&'a str),
    /// The `kubeconfig` key of this Secret in the manager's namespace.
    Secret(&'a str),
    /// A file, after [`super::kubeconfig::validate_path`].
    Path(&'a str),
    /// Neither: Kueue's `kubeconfig reference is nil` (a BadKubeConfig).
    Nothing,
}

/// Kueue's message for [`Source::Nothing`].
pub const NO_KUBECONFIG: &str = "kubeconfig reference is nil";

/// Where to read the client configuration of a cluster with this spec.
/// Only `locationType: Secret` reads a Secret, as in Kueue: any other
/// value, or none (the CRD defaults it to Secret on write), is a path.
pub fn source(spec: &MultiKueueClusterSpec) -> Source<'_> {
    let cs = &spec.cluster_source;
    if let Some(p) = &cs.cluster_profile_ref {
        return Source::ClusterProfile(&p.name);
    }
    match &cs.kube_config {
        None => Source::Nothing,
        Some(kc) if kc.location_type.as_deref() == Some(location_type::SECRET) => {
            Source::Secret(&kc.location)
        }
        Some(kc) => Source::Path(&kc.location),
    }
}

/// Whether Kueue records the [`DEPRECATED_PATH_USAGE`] warning for this
/// spec: a Path kubeconfig while the MultiKueueKubeConfigPathValidation
/// gate is off.
pub fn warns_deprecated_path(spec: &MultiKueueClusterSpec, path_validation_gate: bool) -> bool {
    !path_validation_gate
        && spec
            .cluster_source
            .kube_config
            .as_ref()
            .is_some_and(|kc| kc.location_type.as_deref() == Some(location_type::PATH))
}

/// What came of loading a MultiKueueCluster's client configuration, in the
/// order Kueue tries (`loadClientConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Load {
    /// `clusterProfileRef` with the MultiKueueClusterProfile gate off
    /// (Kueue v0.19.2's default).
    ClusterProfileDisabled,
    /// The ClusterProfile could not be read (`not_found`: it does not
    /// exist), or its access provider could not make a client
    /// configuration: that error's text.
    BadClusterProfile { message: String, not_found: bool },
    /// The ClusterProfile's client configuration broke a rule.
    BadRestConfig(RestConfigError),
    /// The kubeconfig could not be read: the Secret (the API's error, e.g.
    /// `secrets "worker1" not found`), its key, or the path's rules or the
    /// file (that error's text).
    BadKubeConfig { message: String, not_found: bool },
    /// The kubeconfig was read and broke a rule of
    /// [`super::kubeconfig::validate`].
    InsecureKubeConfig(KubeconfigError),
    /// A client configuration the manager can use, and what came of
    /// giving it to the worker's client.
    Loaded(Connection),
}

/// What came of giving the worker's client the loaded configuration
/// (`setRemoteClientConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Connected and watching.
    Connected,
    /// The client failed: its error's text. Retried after the backoff.
    Failed(String),
    /// Not tried yet: the backoff after earlier failures has not passed.
    Deferred,
}

/// What the MultiKueueCluster controller does after one look at a
/// cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStep {
    /// The `Active` condition to set (`None`: leave it as it is).
    pub active: Option<Active>,
    /// Stop the worker's watches and mark it disconnected (the Workload
    /// controller then starts the worker-lost timeout).
    pub disconnect: bool,
    /// Look again (after the backoff, or on the error retry) even if
    /// nothing changes; a Secret or ClusterProfile not found waits for its
    /// creation instead.
    pub retry: bool,
}

/// `clustersReconciler.Reconcile` for a cluster that exists and is not
/// being deleted (a gone one has its client stopped and removed, and no
/// condition).
pub fn cluster_step(load: &Load) -> ClusterStep {
    let failed = |reason: &str, err: String, retry: bool| ClusterStep {
        active: Some(Active::new(
            false,
            reason,
            format!("load client config failed: {err}"),
        )),
        disconnect: true,
        retry,
    };
    match load {
        Load::ClusterProfileDisabled => failed(
            "MultiKueueClusterProfileFeatureDisabled",
            "MultiKueueClusterProfile feature gate is disabled".into(),
            true,
        ),
        // What is not found yet is looked at again when it is created.
        Load::BadClusterProfile { message, not_found } => {
            failed("BadClusterProfile", message.clone(), !not_found)
        }
        Load::BadRestConfig(e) => failed("BadRestConfig", e.to_string(), true),
        Load::BadKubeConfig { message, not_found } => {
            failed("BadKubeConfig", message.clone(), !not_found)
        }
        Load::InsecureKubeConfig(e) => failed("InsecureKubeConfig", e.to_string(), true),
        Load::Loaded(Connection::Failed(e)) => ClusterStep {
            active: Some(Active::new(false, "ClientConnectionFailed", e.clone())),
            disconnect: true,
            retry: true,
        },
        // The condition stays as the last attempt left it.
        Load::Loaded(Connection::Deferred) => ClusterStep {
            active: None,
            disconnect: false,
            retry: true,
        },
        Load::Loaded(Connection::Connected) => ClusterStep {
            active: Some(Active::new(true, "Active", "Connected")),
            disconnect: false,
            retry: false,
        },
    }
}

/// Between failed connection attempts: 5s, doubling per failure up to
/// 5m20s (`retryAfter`, retryIncrement 5s, retryMaxSteps 7).
pub fn retry_after(failed_attempts: u32) -> GoDuration {
    if failed_attempts == 0 {
        return GoDuration::ZERO;
    }
    GoDuration::from_secs(5 << (failed_attempts.min(7) - 1))
}

/// How long opening a worker's watch may take before the attempt counts
/// as failed: 1m, doubling per failed attempt, at most 10m
/// (`establishBackoff.WaitTime(failedAttempts + 1)`).
pub fn establish_timeout(failed_attempts: u32) -> GoDuration {
    let minutes = 1i64 << failed_attempts.min(4);
    GoDuration::from_mins(minutes.min(10))
}

/// One worker's reconnection state (`failedConnAttempts`,
/// `retryConnNextAttempt`), kept by the shell between looks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconnect {
    pub failed_attempts: u32,
    /// No attempt before this instant (Unix nanoseconds).
    pub next_attempt: Option<i64>,
}

/// What to do with the worker's client on a look at its cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Same configuration, still connected: nothing.
    UpToDate,
    /// Disconnected, and the backoff has not passed: look again after
    /// this long ([`Connection::Deferred`]).
    Wait(GoDuration),
    /// Build the client and open its watches, then report
    /// [`Reconnect::failed`] or [`Reconnect::connected`].
    Attempt,
}

impl Reconnect {
    /// `updateConfigAndRefreshWatchers` up to the attempt: a changed
    /// configuration starts the count again.
    pub fn plan(&mut self, config_changed: bool, connected: bool, now: i64) -> Plan {
        if !config_changed && connected {
            return Plan::UpToDate;
        }
        if config_changed {
            *self = Reconnect::default();
        }
        if !connected {
            let until = self.next_attempt.map_or(0, |next| next - now);
            if until > 0 {
                return Plan::Wait(GoDuration(until));
            }
        }
        Plan::Attempt
    }

    /// The attempt failed: one more failure, and the wait before the next
    /// (the look's requeue).
    pub fn failed(&mut self, now: i64) -> GoDuration {
        self.failed_attempts += 1;
        let d = retry_after(self.failed_attempts);
        self.next_attempt = Some(now + d.as_nanos());
        d
    }

    /// A watch was still being opened by an earlier attempt: try again
    /// in 5s without counting a failure.
    pub fn deferred(&mut self, now: i64) -> GoDuration {
        let d = retry_after(1);
        self.next_attempt = Some(now + d.as_nanos());
        d
    }

    /// Connected: the count starts again.
    pub fn connected(&mut self) {
        *self = Reconnect::default();
    }
}

/// Whether the manager is connected to a worker and, if not, since when
/// (`connectionState`): the worker-lost timeout counts from the first
/// loss, not from the latest failed retry. A client never connected is
/// lost from its creation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    pub connected: bool,
    /// Unix nanoseconds of the first loss of the current streak.
    pub lost_since: Option<i64>,
}

impl Link {
    /// The link as the dispatch decision sees it.
    pub fn dispatch(&self) -> super::dispatch::Link {
        if self.connected {
            return super::dispatch::Link::Connected;
        }
        let since = self
            .lost_since
            .and_then(|n| k8s_openapi::jiff::Timestamp::from_nanosecond(i128::from(n)).ok());
        super::dispatch::Link::Lost(since.map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time))
    }

    /// All watches are up: no loss recorded.
    pub fn mark_connected(&mut self) {
        *self = Link {
            connected: true,
            lost_since: None,
        };
    }

    /// Disconnected at `now`, keeping an earlier loss time; whether it was
    /// connected until now (the first drop of the streak).
    pub fn mark_disconnected(&mut self, now: i64) -> bool {
        let was = self.connected;
        self.connected = false;
        self.lost_since.get_or_insert(now);
        was
    }
}

/// A watch event of the MultiKueueCluster controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterEvent {
    Create,
    /// Of a MultiKueueCluster: its generation before and after, and
    /// whether it is being deleted. (An update of anything else is looked
    /// at, as in Kueue.)
    Update {
        old_generation: i64,
        new_generation: i64,
        deleting: bool,
    },
    UpdateOther,
    Delete,
    Generic,
}

/// The controller's event filter: a change of spec (the generation) or a
/// deletion is looked at, a status-only update is not.
pub fn looks_at(e: ClusterEvent) -> bool {
    match e {
        ClusterEvent::Create | ClusterEvent::Delete | ClusterEvent::UpdateOther => true,
        ClusterEvent::Update {
            old_generation,
            new_generation,
            deleting,
        } => deleting || old_generation != new_generation,
        ClusterEvent::Generic => false,
    }
}

/// The kubeconfig file a cluster's changes are watched through, when its
/// `locationType` is Path: the shell watches it (after
/// [`super::kubeconfig::validate_path`]) from creation, and drops the
/// watch on deletion or when the cluster stops naming a path.
pub fn watched_path(spec: &MultiKueueClusterSpec) -> Option<&str> {
    spec.cluster_source
        .kube_config
        .as_ref()
        .filter(|kc| kc.location_type.as_deref() == Some(location_type::PATH))
        .map(|kc| kc.location.as_str())
}

/// The deprecation warning event (type Warning, reason
/// `DeprecatedPathUsage`) Kueue records on a cluster with `locationType:
/// Path` while the MultiKueueKubeConfigPathValidation gate is off.
pub const DEPRECATED_PATH_USAGE: &str = "Using locationType=Path without MultiKueueKubeConfigPathValidation feature gate is deprecated and will be removed in a future release. Enable the MultiKueueKubeConfigPathValidation feature gate and place kubeconfig files under /etc/multikueue/kubeconfigs/.";

/// The kind an AdmissionCheck's parameters must name.
pub const CONFIG_KIND: &str = "MultiKueueConfig";

/// Why an AdmissionCheck's parameters do not name a MultiKueueConfig
/// (`refValidForGK`, Kueue's words).
pub fn parameters_problem(r: Option<&AdmissionCheckParametersReference>) -> Option<String> {
    const BAD: &str = "bad parameters reference";
    let Some(r) = r else {
        return Some("missing parameters reference".into());
    };
    if r.name.is_empty() {
        Some(format!("empty name: {BAD}"))
    } else if r.api_group != GROUP {
        Some(format!(
            "wrong group {:?}, expecting {GROUP:?}: {BAD}",
            r.api_group
        ))
    } else if r.kind != CONFIG_KIND {
        Some(format!(
            "wrong kind {:?}, expecting {CONFIG_KIND:?}: {BAD}",
            r.kind
        ))
    } else {
        None
    }
}

/// The API's error for a MultiKueueConfig that does not exist.
pub fn config_not_found(name: &str) -> String {
    format!("multikueueconfigs.kueue.x-k8s.io {name:?} not found")
}

/// One of a config's clusters, as the AdmissionCheck controller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterState {
    /// No MultiKueueCluster of that name.
    Missing,
    /// Its `Active` condition is not `True`.
    Inactive,
    Active,
}

/// `ACReconciler.Reconcile`: the `Active` condition of an AdmissionCheck,
/// or `None` when there is nothing to decide (no such check, or another
/// controller's). `config` is what reading the parameters' config gave:
/// the spec, or the error's text ([`config_not_found`]); it is only asked
/// for when the parameters name a MultiKueueConfig.
pub fn admission_check_active<'a>(
    check: Option<&AdmissionCheckSpec>,
    config: impl FnOnce(&str) -> Result<&'a MultiKueueConfigSpec, String>,
    cluster: impl Fn(&str) -> ClusterState,
) -> Option<Active> {
    let check = check.filter(|c| c.controller_name == MULTIKUEUE_CONTROLLER)?;
    let params = check.parameters.as_ref();
    let cfg = match parameters_problem(params) {
        Some(e) => Err(e),
        None => config(params.map_or("", |p| p.name.as_str())),
    };
    let cfg = match cfg {
        Ok(cfg) => cfg,
        Err(e) => {
            return Some(Active::new(
                false,
                "BadConfig",
                format!("Cannot load the AdmissionChecks parameters: {e}"),
            ))
        }
    };
    let (mut missing, mut inactive) = (Vec::new(), Vec::new());
    for name in &cfg.clusters {
        match cluster(name) {
            ClusterState::Missing => missing.push(name.as_str()),
            ClusterState::Inactive => inactive.push(name.as_str()),
            ClusterState::Active => {}
        }
    }
    let unusable = missing.len() + inactive.len();
    if unusable == 0 {
        return Some(Active::new(true, "Active", "The admission check is active"));
    }
    // Go's %v of a []string.
    let list = |v: &[&str]| format!("[{}]", v.join(" "));
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("Missing clusters: {}", list(&missing)));
    }
    if !inactive.is_empty() {
        parts.push(format!("Inactive clusters: {}", list(&inactive)));
    }
    // Some clusters left: the check stays active.
    let some_left = unusable < cfg.clusters.len();
    Some(Active::new(
        some_left,
        if some_left {
            "SomeActiveClusters"
        } else {
            "NoUsableClusters"
        },
        parts.join(", "),
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn check(controller: &str, params: Option<(&str, &str, &str)>) -> AdmissionCheckSpec {
        AdmissionCheckSpec {
            controller_name: controller.into(),
            parameters: params.map(|(g, k, n)| AdmissionCheckParametersReference {
                api_group: g.into(),
                kind: k.into(),
                name: n.into(),
            }),
        }
    }

    fn config(clusters: &[&str]) -> MultiKueueConfigSpec {
        MultiKueueConfigSpec {
            clusters: clusters.iter().map(|c| c.to_string()).collect(),
            quota_management: None,
        }
    }

    /// TestReconcile (admissioncheck_test.go), its eight cases: checks,
    /// configs and clusters in, the check's Active condition out (`None`:
    /// the check is left as it was, or there is none).
    #[test]
    fn admission_check_reconcile_upstream_cases() {
        let mk = check(MULTIKUEUE_CONTROLLER, Some((GROUP, CONFIG_KIND, "config1")));
        type Case<'a> = (
            &'a str,
            Option<AdmissionCheckSpec>,
            Option<&'a [&'a str]>,
            &'a [(&'a str, bool)],
            Option<(bool, &'a str, &'a str)>,
        );
        let cases: Vec<Case> = vec![
            ("missing admissioncheck", None, None, &[], None),
            (
                "missing config",
                Some(mk.clone()),
                None,
                &[],
                Some((
                    false,
                    "BadConfig",
                    r#"Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io "config1" not found"#,
                )),
            ),
            (
                "unmanaged",
                Some(check("not-multikueue", None)),
                None,
                &[],
                None,
            ),
            (
                "missing cluster",
                Some(mk.clone()),
                Some(&["worker1"]),
                &[],
                Some((false, "NoUsableClusters", "Missing clusters: [worker1]")),
            ),
            (
                "inactive cluster",
                Some(mk.clone()),
                Some(&["worker1"]),
                &[("worker1", false)],
                Some((false, "NoUsableClusters", "Inactive clusters: [worker1]")),
            ),
            (
                "all clusters missing or inactive",
                Some(mk.clone()),
                Some(&["worker1", "worker2", "worker3"]),
                &[("worker1", false), ("worker2", false)],
                Some((
                    false,
                    "NoUsableClusters",
                    "Missing clusters: [worker3], Inactive clusters: [worker1 worker2]",
                )),
            ),
            (
                "partially active",
                Some(mk.clone()),
                Some(&["worker1", "worker2", "worker3"]),
                &[("worker1", false), ("worker2", true)],
                Some((
                    true,
                    "SomeActiveClusters",
                    "Missing clusters: [worker3], Inactive clusters: [worker1]",
                )),
            ),
            (
                "active",
                Some(mk.clone()),
                Some(&["worker1"]),
                &[("worker1", true)],
                Some((true, "Active", "The admission check is active")),
            ),
        ];
        for (name, ac, cfg, clusters, want) in cases {
            let cfg = cfg.map(config);
            let clusters: BTreeMap<&str, bool> = clusters.iter().copied().collect();
            let got = admission_check_active(
                ac.as_ref(),
                |n| cfg.as_ref().ok_or_else(|| config_not_found(n)),
                |n| match clusters.get(n) {
                    None => ClusterState::Missing,
                    Some(false) => ClusterState::Inactive,
                    Some(true) => ClusterState::Active,
                },
            );
            let want = want.map(|(s, r, m)| Active::new(s, r, m));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn parameters_that_name_no_multikueue_config() {
        let never = |_: &str| -> Result<&MultiKueueConfigSpec, String> { panic!("not read") };
        let active = |_: &str| ClusterState::Active;
        for (params, message) in [
            (None, "missing parameters reference"),
            (
                Some((GROUP, CONFIG_KIND, "")),
                "empty name: bad parameters reference",
            ),
            (
                Some(("example.com", CONFIG_KIND, "c")),
                r#"wrong group "example.com", expecting "kueue.x-k8s.io": bad parameters reference"#,
            ),
            (
                Some((GROUP, "ProvisioningRequestConfig", "c")),
                r#"wrong kind "ProvisioningRequestConfig", expecting "MultiKueueConfig": bad parameters reference"#,
            ),
        ] {
            let got =
                admission_check_active(Some(&check(MULTIKUEUE_CONTROLLER, params)), never, active)
                    .unwrap();
            assert_eq!(
                got,
                Active::new(
                    false,
                    "BadConfig",
                    format!("Cannot load the AdmissionChecks parameters: {message}")
                )
            );
        }
    }

    /// The pure cases of TestUpdateConfig (multikueuecluster_test.go):
    /// what the controller found in, the cluster's Active condition out.
    /// The remote client's own cases (reconnect counting, garbage
    /// collection, watches) belong to the shell.
    #[test]
    fn update_config_upstream_cases() {
        let active = Some((true, "Active", "Connected"));
        // Name, what was loaded (and the connection), the condition, a retry.
        type Case<'a> = (&'a str, Load, Option<(bool, &'a str, &'a str)>, bool);
        let cases: Vec<Case> = vec![
            (
                "new valid client is added",
                Load::Loaded(Connection::Connected),
                active,
                false,
            ),
            (
                "update client with valid secret config",
                Load::Loaded(Connection::Connected),
                active,
                false,
            ),
            (
                "update client with valid path config",
                Load::Loaded(Connection::Connected),
                active,
                false,
            ),
            (
                "update client with invalid secret config",
                Load::Loaded(Connection::Failed("invalid kubeconfig".into())),
                Some((false, "ClientConnectionFailed", "invalid kubeconfig")),
                true,
            ),
            (
                "update client with invalid path config",
                Load::BadKubeConfig {
                    message: crate::multikueue::kubeconfig::PathError::Empty.to_string(),
                    not_found: false,
                },
                Some((
                    false,
                    "BadKubeConfig",
                    "load client config failed: kubeconfig path must not be empty",
                )),
                true,
            ),
            (
                "update client config, nowatch",
                Load::Loaded(Connection::Failed("client cannot watch".into())),
                Some((false, "ClientConnectionFailed", "client cannot watch")),
                true,
            ),
            (
                "update client config, nowatch 3rd try",
                Load::Loaded(Connection::Failed("client cannot watch".into())),
                Some((false, "ClientConnectionFailed", "client cannot watch")),
                true,
            ),
            (
                "failed attempts are set to 0 on successful connection",
                Load::Loaded(Connection::Connected),
                active,
                false,
            ),
            (
                "failed attempts are set to 0 on config change",
                Load::Loaded(Connection::Failed("invalid kubeconfig".into())),
                Some((false, "ClientConnectionFailed", "invalid kubeconfig")),
                true,
            ),
            (
                "failed due to insecure kubeconfig",
                Load::InsecureKubeConfig(KubeconfigError::TokenFile),
                Some((
                    false,
                    "InsecureKubeConfig",
                    "load client config failed: tokenFile is not allowed",
                )),
                true,
            ),
            (
                "remove client with invalid kubeconfig",
                Load::InsecureKubeConfig(KubeconfigError::TokenFile),
                Some((
                    false,
                    "InsecureKubeConfig",
                    "load client config failed: tokenFile is not allowed",
                )),
                true,
            ),
            (
                "use cluster profile",
                Load::Loaded(Connection::Connected),
                active,
                false,
            ),
            (
                "unsupported access provider",
                Load::BadClusterProfile {
                    message: "unsupported access provider".into(),
                    not_found: false,
                },
                Some((
                    false,
                    "BadClusterProfile",
                    "load client config failed: unsupported access provider",
                )),
                true,
            ),
            (
                // Not found: no error returned, the creation event retries.
                "cluster profile not found",
                Load::BadClusterProfile {
                    message: r#"clusterprofiles.multicluster.x-k8s.io "worker1" not found"#.into(),
                    not_found: true,
                },
                Some((
                    false,
                    "BadClusterProfile",
                    r#"load client config failed: clusterprofiles.multicluster.x-k8s.io "worker1" not found"#,
                )),
                false,
            ),
            (
                "cluster profile feature gate disabled",
                Load::ClusterProfileDisabled,
                Some((
                    false,
                    "MultiKueueClusterProfileFeatureDisabled",
                    "load client config failed: MultiKueueClusterProfile feature gate is disabled",
                )),
                true,
            ),
            (
                "path with feature gate off emits deprecation warning",
                Load::Loaded(Connection::Connected),
                active,
                false,
            ),
            (
                "invalid rest config from cluster profile",
                Load::BadRestConfig(RestConfigError::BearerTokenFile),
                Some((
                    false,
                    "BadRestConfig",
                    "load client config failed: bearerTokenFile is not allowed",
                )),
                true,
            ),
        ];
        for (name, load, want, retry) in cases {
            let step = cluster_step(&load);
            let want = want.map(|(s, r, m)| Active::new(s, r, m));
            assert_eq!(step.active, want, "{name}");
            assert_eq!(step.retry, retry, "{name}");
            assert_eq!(
                step.disconnect,
                !matches!(step.active, Some(Active { status: true, .. })),
                "{name}"
            );
        }
    }

    #[test]
    fn where_the_client_configuration_is_read_from() {
        use crate::api::kueue::v1beta2::{ClusterProfileReference, ClusterSource, KubeConfig};
        let spec =
            |kc: Option<(&str, Option<&str>)>, profile: Option<&str>| MultiKueueClusterSpec {
                cluster_source: ClusterSource {
                    kube_config: kc.map(|(l, t)| KubeConfig {
                        location: l.into(),
                        location_type: t.map(String::from),
                    }),
                    cluster_profile_ref: profile
                        .map(|n| ClusterProfileReference { name: n.into() }),
                },
            };
        let secret = spec(Some(("worker1", Some("Secret"))), None);
        assert_eq!(source(&secret), Source::Secret("worker1"));
        let path = spec(Some(("/etc/multikueue/kubeconfigs/w1", Some("Path"))), None);
        assert_eq!(
            source(&path),
            Source::Path("/etc/multikueue/kubeconfigs/w1")
        );
        assert_eq!(source(&spec(Some(("w", None)), None)), Source::Path("w"));
        assert_eq!(
            source(&spec(Some(("w", Some("Secret"))), Some("p"))),
            Source::ClusterProfile("p")
        );
        assert_eq!(source(&spec(None, None)), Source::Nothing);
        // 'path with feature gate off emits deprecation warning'.
        assert!(warns_deprecated_path(&path, false));
        assert!(!warns_deprecated_path(&path, true));
        assert!(!warns_deprecated_path(&secret, false));
    }

    /// TestReconnectBackoff (multikueuecluster_test.go), its four cases:
    /// a worker whose watch always fails, looked at again after each
    /// advance of the clock; per step, whether a client was built, the
    /// failed attempts and the requeue.
    #[test]
    fn reconnect_backoff_upstream_cases() {
        const S: i64 = 1_000_000_000;
        type Step = (i64, bool, u32, i64);
        let cases: [(&str, &[Step]); 4] = [
            (
                "double reconcile within backoff window does not advance attempts",
                &[(0, true, 1, 5), (0, false, 1, 5), (2, false, 1, 3)],
            ),
            (
                "backoff progresses once window elapses",
                &[(0, true, 1, 5), (5, true, 2, 10), (10, true, 3, 20)],
            ),
            (
                "deferred reconciles between failures do not consume backoff slots",
                &[
                    (0, true, 1, 5),
                    (0, false, 1, 5),
                    (5, true, 2, 10),
                    (0, false, 2, 10),
                    (10, true, 3, 20),
                ],
            ),
            (
                "backoff saturates at retryMaxSteps",
                &[
                    (0, true, 1, 5),
                    (5, true, 2, 10),
                    (10, true, 3, 20),
                    (20, true, 4, 40),
                    (40, true, 5, 80),
                    (80, true, 6, 160),
                    (160, true, 7, 320),
                    (320, true, 8, 320),
                ],
            ),
        ];
        for (name, steps) in cases {
            let mut r = Reconnect::default();
            let mut now = 1_700_000_000 * S;
            // The first look finds a configuration the client has not had.
            let mut changed = true;
            for (i, &(advance, built, attempts, requeue)) in steps.iter().enumerate() {
                now += advance * S;
                let (was_built, wait) = match r.plan(changed, false, now) {
                    Plan::Attempt => (true, r.failed(now)),
                    Plan::Wait(d) => (false, d),
                    Plan::UpToDate => panic!("{name} step {i}: never connected"),
                };
                changed = false;
                assert_eq!(was_built, built, "{name} step {i}: built");
                assert_eq!(r.failed_attempts, attempts, "{name} step {i}: attempts");
                assert_eq!(
                    wait,
                    GoDuration::from_secs(requeue),
                    "{name} step {i}: requeue"
                );
            }
        }
    }

    #[test]
    fn a_connection_or_a_new_configuration_starts_the_count_again() {
        let mut r = Reconnect::default();
        r.failed(0);
        r.failed(0);
        assert_eq!(
            r.plan(false, false, 0),
            Plan::Wait(GoDuration::from_secs(10))
        );
        assert_eq!(r.plan(true, false, 0), Plan::Attempt);
        assert_eq!(r, Reconnect::default());
        r.failed(0);
        r.connected();
        assert_eq!(r.plan(false, true, 0), Plan::UpToDate);
        assert_eq!(r.deferred(0), GoDuration::from_secs(5));
        assert_eq!(r.failed_attempts, 0);
    }

    /// TestClustersReconcilerEventFilters (multikueuecluster_test.go), its
    /// eleven cases (the path and secret variants of create and delete look
    /// alike here; the file watch they start or stop is `watched_path`).
    #[test]
    fn clusters_reconciler_event_filters_upstream_cases() {
        let update = |old_generation, new_generation, deleting| ClusterEvent::Update {
            old_generation,
            new_generation,
            deleting,
        };
        for (name, event, want) in [
            (
                "create cluster with secret location triggers reconcile",
                ClusterEvent::Create,
                true,
            ),
            (
                "create cluster with path location triggers reconcile",
                ClusterEvent::Create,
                true,
            ),
            (
                "update cluster spec change triggers reconcile",
                update(1, 2, false),
                true,
            ),
            (
                "update cluster status only change skips reconcile",
                update(1, 1, false),
                false,
            ),
            (
                "update cluster deletion timestamp triggers reconcile",
                update(1, 1, true),
                true,
            ),
            (
                "update cluster no change skips reconcile",
                update(1, 1, false),
                false,
            ),
            (
                "update cluster path location changed to secret triggers reconcile",
                update(1, 2, false),
                true,
            ),
            (
                "update non-cluster objects triggers reconcile",
                ClusterEvent::UpdateOther,
                true,
            ),
            (
                "delete cluster with secret location triggers reconcile",
                ClusterEvent::Delete,
                true,
            ),
            (
                "delete cluster with path location triggers reconcile",
                ClusterEvent::Delete,
                true,
            ),
            (
                "generic event does not trigger reconcile",
                ClusterEvent::Generic,
                false,
            ),
        ] {
            assert_eq!(looks_at(event), want, "{name}");
        }
        use crate::api::kueue::v1beta2::{ClusterSource, KubeConfig};
        let spec = |t: &str| MultiKueueClusterSpec {
            cluster_source: ClusterSource {
                kube_config: Some(KubeConfig {
                    location: "/tmp/worker1.kubeconfig".into(),
                    location_type: Some(t.into()),
                }),
                cluster_profile_ref: None,
            },
        };
        assert_eq!(watched_path(&spec("Path")), Some("/tmp/worker1.kubeconfig"));
        assert_eq!(watched_path(&spec("Secret")), None);
    }

    /// TestConnectionStateTransitions (multikueuecluster_test.go).
    #[test]
    fn connection_state_transitions_upstream_case() {
        let now = 1_700_000_000_000_000_000;
        let mut link = Link::default();
        assert!(!link.mark_disconnected(now), "the initial disconnect");
        assert!(!link.connected);
        assert_eq!(
            link.lost_since,
            Some(now),
            "the initial disconnect records now"
        );
        // Fully connected: clears the recorded loss.
        link.mark_connected();
        assert_eq!((link.connected, link.lost_since), (true, None));
        // A drop from a connected client records the loss and reports it.
        assert!(link.mark_disconnected(now));
        assert_eq!(link.lost_since, Some(now));
        // A repeated drop reports no transition and keeps the first time.
        assert!(!link.mark_disconnected(now + 60_000_000_000));
        assert_eq!(link.lost_since, Some(now));
        link.mark_connected();
        assert_eq!((link.connected, link.lost_since), (true, None));
    }

    /// TestEstablishBackoffSchedule (multikueuecluster_test.go), its six
    /// cases.
    #[test]
    fn establish_backoff_schedule_upstream_cases() {
        for (name, failed, minutes) in [
            ("first attempt is initial", 0, 1),
            ("one failure doubles", 1, 2),
            ("two failures", 2, 4),
            ("three failures", 3, 8),
            ("four failures hits cap", 4, 10),
            ("many failures stay at cap", 20, 10),
        ] {
            assert_eq!(
                establish_timeout(failed),
                GoDuration::from_mins(minutes),
                "{name}"
            );
        }
    }

    #[test]
    fn a_deferred_reconnect_leaves_the_condition() {
        let step = cluster_step(&Load::Loaded(Connection::Deferred));
        assert_eq!(
            step,
            ClusterStep {
                active: None,
                disconnect: false,
                retry: true
            }
        );
    }

    #[test]
    fn a_secret_not_found_waits_for_its_creation() {
        let step = cluster_step(&Load::BadKubeConfig {
            message: r#"secrets "worker1" not found"#.into(),
            not_found: true,
        });
        assert!(!step.retry);
        assert_eq!(
            step.active.unwrap().message,
            r#"load client config failed: secrets "worker1" not found"#
        );
    }

    #[test]
    fn an_unchanged_condition_is_not_written_again() {
        let a = Active::new(true, "Active", "Connected");
        assert!(!a.differs_from(Some(("True", "Active", "Connected"))));
        assert!(a.differs_from(Some(("True", "Active", "Other"))));
        assert!(a.differs_from(None));
    }
}
