//! The configuration file (`--config`), shaped after Kueue's Configuration
//! where the two overlap. Command-line flags override it.
//!
//! Each section is read into the settings of the room it configures
//! (`queueing`'s fair sharing, `jobs`' waitForPodsReady, `prescale`,
//! `admission`'s AppWrapper and entitlement rules), which is why the file
//! is a room of its own above them rather than a wire type in `api`.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use serde::Deserialize;

use crate::api::{selector::LabelSelector, DEFAULT_NAMESPACE};
use crate::appwrapper::config::{Autopilot, OperatorConfig, ResourceTaint};
use crate::vocabulary::duration::GoDuration;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Yaml {
        path: String,
        source: serde_yaml::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// batchgate's own namespace (default `batchgate-system`); excluded from
    /// the default managed-namespaces selector.
    pub namespace: Option<String>,
    /// Suspend jobs without a queue-name label too (in managed namespaces).
    pub manage_jobs_without_queue_name: Option<bool>,
    /// Which namespaces `manageJobsWithoutQueueName` applies to. Default:
    /// every namespace but kube-system and batchgate's own.
    pub managed_jobs_namespace_selector: Option<LabelSelector>,
    #[serde(default)]
    pub integrations: Integrations,
    #[serde(default)]
    pub webhook: WebhookConfig,
    #[serde(default)]
    pub probes: ProbeConfig,
    #[serde(default)]
    pub certificates: CertificatesConfig,
    /// Who admits queued Workloads: batchgate's own engine (`builtin`), or
    /// an upstream Kueue installed beside it (`external`), in which case
    /// batchgate runs no reconciler and only serves the webhook.
    pub admission: Option<AdmissionMode>,
    #[serde(default)]
    pub reconciler: ReconcilerConfig,
    /// Kueue's `clientConnection`: the reconciler's requests per second and
    /// burst, per resource (defaults 300 and 500, as Kueue v0.19.2's).
    #[serde(default)]
    pub client_connection: ClientConnectionConfig,
    #[serde(default)]
    pub entitlement: EntitlementConfig,
    #[serde(default)]
    pub appwrapper: AppWrapperConfig,
    #[serde(default)]
    pub prescaler: PrescalerConfig,
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Kueue's `waitForPodsReady` (on by default, as in Kueue v0.19.2's
    /// v1beta2 Configuration; `enable: false` turns it off).
    #[serde(default)]
    pub wait_for_pods_ready: WaitForPodsReadyConfig,
    /// Kueue's `fairSharing` (off when absent; v1beta1's `enable: false`
    /// turns it off too).
    pub fair_sharing: Option<FairSharingConfig>,
    /// Kueue's `admissionFairSharing`: LocalQueue usage orders the
    /// workloads of ClusterQueues with `admissionScope.admissionMode:
    /// UsageBasedAdmissionFairSharing`.
    #[serde(default)]
    pub admission_fair_sharing: Option<AdmissionFairSharingConfig>,
    /// Kueue's `multiKueue`: the MultiKueue manager's garbage collection,
    /// origin label, worker-lost timeout and dispatcher.
    #[serde(default)]
    pub multi_kueue: MultiKueueManagerConfig,
    /// Kueue's `resources`: `deviceClassMappings`, which DRA DeviceClasses
    /// are charged as which quota resource.
    #[serde(default)]
    pub resources: ResourcesConfig,
    /// Kueue's `featureGates`, for the gates batchgate acts on ([`GATES`]).
    #[serde(default)]
    pub feature_gates: std::collections::BTreeMap<String, bool>,
    /// batchgate's: before quota is reserved, a Workload using DRA claims
    /// waits while no node's free devices can hold its pods' claims
    /// (default true; Kueue counts devices cluster-wide only).
    pub dra_placement: Option<bool>,
}

/// Kueue's `Resources`, as far as batchgate acts on it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourcesConfig {
    #[serde(default)]
    pub device_class_mappings: Vec<DeviceClassMappingConfig>,
}

/// Kueue's `DeviceClassMapping`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClassMappingConfig {
    pub name: String,
    #[serde(default)]
    pub device_class_names: Vec<String>,
    #[serde(default)]
    pub sources: Vec<DeviceClassSourceConfig>,
}

/// Kueue's `DeviceClassSourceConfig` (a capacity source is read to be
/// refused: see [`Config::claims`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClassSourceConfig {
    pub counter: Option<CounterSourceConfig>,
    pub capacity: Option<serde_json::Value>,
}

/// Kueue's `DeviceClassCounterSource`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CounterSourceConfig {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub driver: String,
    #[serde(default)]
    pub device_selector: k8s_openapi::api::resource::v1::DeviceSelector,
}

/// The feature gates batchgate acts on: the DRA ones, what MultiKueue
/// writes on a worker's job (a Kueue before 0.18 reads the prebuilt
/// Workload's name from a label only), whether MultiKueue dispatches
/// external frameworks, and whether a failed head sets aside its shape.
const GATES: [&str; 7] = [
    "KueueDRAIntegration",
    "KueueDRARejectWorkloadsWhenDRADisabled",
    "KueueDRAIntegrationExtendedResource",
    "KueueDRAIntegrationPartitionableDevices",
    WORKLOAD_IDENTIFIER_ANNOTATIONS,
    CUSTOM_JOBS,
    EQUIVALENCE_HASHING,
];

const WORKLOAD_IDENTIFIER_ANNOTATIONS: &str = "WorkloadIdentifierAnnotations";
/// Whether `multiKueue.externalFrameworks` are dispatched (on by default).
const CUSTOM_JOBS: &str = "MultiKueueAdaptersForCustomJobs";
/// Whether a head that fails to fit sets aside the workloads shaped like
/// it (on by default, as in Kueue since 0.18).
const EQUIVALENCE_HASHING: &str = "SchedulingEquivalenceHashing";

impl Config {
    /// Kueue's `SchedulingEquivalenceHashing` gate (see
    /// `Engine::set_equivalence_hashing`).
    pub fn equivalence_hashing(&self) -> bool {
        self.feature_gates
            .get(EQUIVALENCE_HASHING)
            .copied()
            .unwrap_or(true)
    }

    /// MultiKueue's settings: the `multiKueue` block, and whether the
    /// prebuilt Workload's name goes on a worker's job as an annotation
    /// (`WorkloadIdentifierAnnotations`, on by default) or as a label.
    pub fn multikueue(&self) -> Result<crate::multikueue::Settings, String> {
        let mut s = self.multi_kueue.settings()?;
        s.identifier_annotations = self
            .feature_gates
            .get(WORKLOAD_IDENTIFIER_ANNOTATIONS)
            .copied()
            .unwrap_or(true);
        s.custom_jobs = self.feature_gates.get(CUSTOM_JOBS).copied().unwrap_or(true);
        Ok(s)
    }

    /// The DRA quota settings: the gates and Kueue's `validateDeviceClassMappings`,
    /// with its messages. Capacity sources are refused, as Kueue refuses
    /// them with its `KueueDRAIntegrationConsumableCapacity` gate off (its
    /// default): batchgate does not charge them yet.
    pub fn claims(&self) -> Result<crate::queueing::claims::Settings, String> {
        use crate::admission::kueue::labels::qualified_name;
        for gate in self.feature_gates.keys() {
            if !GATES.contains(&gate.as_str()) {
                return Err(format!(
                    "featureGates.{gate}: batchgate acts on {} only; remove {gate}",
                    GATES.join(", ")
                ));
            }
        }
        let gate = |g: &str| self.feature_gates.get(g).copied().unwrap_or(true);
        let mut s = crate::queueing::claims::Settings {
            integration: gate("KueueDRAIntegration"),
            reject_when_disabled: gate("KueueDRARejectWorkloadsWhenDRADisabled"),
            extended: gate("KueueDRAIntegrationExtendedResource"),
            partitionable: gate("KueueDRAIntegrationPartitionableDevices"),
            classes: Default::default(),
            counters: Default::default(),
            placement: self.dra_placement.unwrap_or(true),
        };
        let mut errs: Vec<String> = Vec::new();
        for (on, name) in [
            (s.extended, "KueueDRAIntegrationExtendedResource"),
            (s.partitionable, "KueueDRAIntegrationPartitionableDevices"),
        ] {
            if on && !s.integration {
                errs.push(format!(
                    "featureGates: Invalid value: {name:?}: {name} requires KueueDRAIntegration to be enabled"
                ));
            }
        }
        const PATH: &str = "resources.deviceClassMappings";
        let mappings = &self.resources.device_class_mappings;
        // Each class's counter names so far: a class may be in two
        // mappings only when both count different counters.
        let mut counted: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
            Default::default();
        if mappings.len() > 16 {
            errs.push(format!(
                "{PATH}: Too many: {}: must have at most 16 items",
                mappings.len()
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, m) in mappings.iter().enumerate() {
            let at = format!("{PATH}[{i}]");
            let problems = qualified_name(&m.name);
            if !problems.is_empty() {
                errs.push(format!(
                    "{at}.name: Invalid value: {:?}: {}",
                    m.name,
                    problems.join("; ")
                ));
            }
            if !names.insert(m.name.as_str()) {
                errs.push(format!("{at}.name: Duplicate value: {:?}", m.name));
            }
            if m.device_class_names.is_empty() {
                errs.push(format!(
                    "{at}.deviceClassNames: Required value: at least one device class name is required"
                ));
            }
            if m.device_class_names.len() > 8 {
                errs.push(format!(
                    "{at}.deviceClassNames: Too many: {}: must have at most 8 items",
                    m.device_class_names.len()
                ));
            }
            let mut seen = std::collections::BTreeSet::new();
            for (j, class) in m.device_class_names.iter().enumerate() {
                let at = format!("{at}.deviceClassNames[{j}]");
                let problems = qualified_name(class);
                if !problems.is_empty() {
                    errs.push(format!(
                        "{at}: Invalid value: {class:?}: {}",
                        problems.join("; ")
                    ));
                }
                if !seen.insert(class.as_str()) {
                    errs.push(format!("{at}: Duplicate value: {class:?}"));
                    continue;
                }
                let counter = m
                    .sources
                    .first()
                    .and_then(|src| src.counter.as_ref())
                    .map_or("", |c| c.name.as_str());
                match s.classes.get(class) {
                    Some(existing) if *existing != m.name => {
                        let known = counted.entry(class).or_default();
                        if counter.is_empty() || known.is_empty() {
                            errs.push(format!(
                                "{at}: Invalid value: {class:?}: device class already mapped to resource {existing}"
                            ))
                        } else if !known.insert(counter) {
                            errs.push(format!(
                                "{at}: Invalid value: {class:?}: device class already has a counter source for counter {counter:?}"
                            ))
                        }
                    }
                    Some(_) => {}
                    None => {
                        s.classes.insert(class.clone(), m.name.clone());
                        let known = counted.entry(class).or_default();
                        if !counter.is_empty() {
                            known.insert(counter);
                        }
                    }
                }
            }
            for (k, src) in m.sources.iter().enumerate() {
                let at = format!("{at}.sources[{k}]");
                match (&src.counter, &src.capacity) {
                    (None, None) => errs.push(format!(
                        "{at}: Required value: exactly one source type must be set per entry"
                    )),
                    (Some(_), Some(_)) => errs.push(format!(
                        "{at}: Invalid value: \"counter+capacity\": exactly one source type must be set per entry"
                    )),
                    (Some(_), None) if !s.partitionable => errs.push(format!(
                        "{at}.counter: Invalid value: true: counter sources require KueueDRAIntegrationPartitionableDevices to be enabled"
                    )),
                    (Some(c), None) => {
                        let at = format!("{at}.counter");
                        let before = errs.len();
                        errs.extend(counter_source(c, &at));
                        if errs.len() == before {
                            let source = crate::queueing::claims::CounterSource {
                                resource: m.name.clone(),
                                driver: c.driver.clone(),
                                counter: c.name.clone(),
                                selector: c
                                    .device_selector
                                    .cel
                                    .as_ref()
                                    .map(|c| c.expression.clone())
                                    .unwrap_or_default(),
                            };
                            for class in &m.device_class_names {
                                s.counters
                                    .entry(class.clone())
                                    .or_default()
                                    .push(source.clone());
                            }
                        }
                    }
                    (None, Some(_)) => errs.push(format!(
                        "{at}.capacity: Invalid value: true: capacity sources require KueueDRAIntegrationConsumableCapacity to be enabled"
                    )),
                }
            }
        }
        match errs.len() {
            0 => Ok(s),
            1 => Err(errs.remove(0)),
            _ => Err(format!("[{}]", errs.join(", "))),
        }
    }
}

/// Kueue's checks of a counter source (`validateDeviceClassSource` and the
/// counter's name), with its messages.
fn counter_source(c: &CounterSourceConfig, at: &str) -> Vec<String> {
    use crate::admission::kueue::labels::{dns1123_label, dns1123_subdomain};
    let mut errs = Vec::new();
    if c.name.is_empty() {
        errs.push(format!("{at}.name: Required value"));
    } else {
        let problems = dns1123_label(&c.name);
        if !problems.is_empty() {
            errs.push(format!(
                "{at}.name: Invalid value: {:?}: {}",
                c.name,
                problems.join(",")
            ));
        }
    }
    if c.driver.is_empty() {
        errs.push(format!("{at}.driver: Required value"));
    } else if c.driver.len() > 63 {
        errs.push(format!(
            "{at}.driver: Invalid value: {:?}: must not exceed 63 characters",
            c.driver
        ));
    } else {
        let problems = dns1123_subdomain(&c.driver);
        if !problems.is_empty() {
            errs.push(format!(
                "{at}.driver: Invalid value: {:?}: {}",
                c.driver,
                problems.join(",")
            ));
        }
    }
    let at = format!("{at}.deviceSelector.cel.expression");
    match c
        .device_selector
        .cel
        .as_ref()
        .map(|c| c.expression.as_str())
    {
        None | Some("") => errs.push(format!("{at}: Required value")),
        Some(e) => {
            if let Err(err) = crate::devices::selectors::compile(e) {
                errs.push(format!(
                    "{at}: Invalid value: {e:?}: CEL compilation failed: {err}"
                ));
            }
        }
    }
    errs
}

/// Kueue's `FairSharing`: `preemptionStrategies` (v1beta2 requires them;
/// with v1beta1's `enable: true` they default to both, in Kueue's order).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FairSharingConfig {
    pub enable: Option<bool>,
    pub preemption_strategies: Option<Vec<String>>,
}

impl FairSharingConfig {
    /// The engine's settings (no weights yet: those come with the
    /// ClusterQueues and Cohorts); `None` when turned off. Errors are
    /// Kueue's `validateFairSharing`.
    pub fn settings(&self) -> Result<Option<crate::queueing::fair_sharing::FairSharing>, String> {
        use crate::queueing::fair_sharing::{FairSharing, Strategy};
        const PATH: &str = "fairSharing.preemptionStrategies";
        if self.enable == Some(false) {
            return Ok(None);
        }
        let given = self.preemption_strategies.clone().unwrap_or_default();
        let names: Vec<String> = if given.is_empty() && self.enable == Some(true) {
            vec![
                "LessThanOrEqualToFinalShare".into(),
                "LessThanInitialShare".into(),
            ]
        } else {
            given
        };
        if names.is_empty() {
            return Err(format!("{PATH}: Required value: must be specified"));
        }
        let valid: [&[&str]; 3] = [
            &["LessThanOrEqualToFinalShare"],
            &["LessThanInitialShare"],
            &["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
        ];
        if !valid.iter().any(|v| *v == names.as_slice()) {
            let quoted: Vec<String> = valid.iter().map(|v| format!("{:?}", v.join(","))).collect();
            return Err(format!(
                "{PATH}: Unsupported value: {names:?}: supported values: {}",
                quoted.join(", ")
            ));
        }
        Ok(Some(FairSharing {
            preemption_strategies: names.iter().filter_map(|n| Strategy::parse(n)).collect(),
            ..FairSharing::default()
        }))
    }
}

/// Kueue's `AdmissionFairSharing`, with its names and Go durations.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionFairSharingConfig {
    pub usage_half_life_time: Option<String>,
    pub usage_sampling_interval: Option<String>,
    #[serde(default)]
    pub resource_weights: std::collections::BTreeMap<String, f64>,
}

impl AdmissionFairSharingConfig {
    /// Kueue's defaulting (sampling every 5 minutes) and validation
    /// (`validateAdmissionFairSharing`), with its field paths.
    pub fn settings(
        &self,
    ) -> Result<crate::queueing::admission_fair_sharing::AdmissionFairSharing, String> {
        use crate::vocabulary::duration::GoDuration;
        let mut errs = Vec::new();
        let mut seconds = |field: &str, v: &Option<String>, default: f64| match v {
            None => default,
            Some(text) => match GoDuration::parse(text) {
                Ok(d) => d.as_nanos() as f64 / 1e9,
                Err(e) => {
                    errs.push(format!(
                        "admissionFairSharing.{field}: Invalid value: {text:?}: {e}"
                    ));
                    default
                }
            },
        };
        let half_life = seconds("usageHalfLifeTime", &self.usage_half_life_time, 0.0);
        let mut sampling = seconds("usageSamplingInterval", &self.usage_sampling_interval, 0.0);
        if sampling == 0.0 {
            sampling = 300.0;
        }
        if half_life < 0.0 {
            errs.push(format!(
                "admissionFairSharing.usageHalfLifeTime: Invalid value: {:?}: must be greater than or equal to 0",
                self.usage_half_life_time.as_deref().unwrap_or_default()
            ));
        }
        if sampling < 0.0 {
            errs.push(format!(
                "admissionFairSharing.usageSamplingInterval: Invalid value: {:?}: must be greater than 0",
                self.usage_sampling_interval.as_deref().unwrap_or_default()
            ));
        }
        for (name, w) in &self.resource_weights {
            if *w < 0.0 {
                errs.push(format!(
                    "admissionFairSharing.resourceWeights[{name}]: Invalid value: {w}: must be greater than or equal to 0"
                ));
            }
        }
        if !errs.is_empty() {
            return Err(errs.join(", "));
        }
        Ok(
            crate::queueing::admission_fair_sharing::AdmissionFairSharing {
                usage_half_life_time: half_life,
                usage_sampling_interval: sampling,
                resource_weights: self.resource_weights.clone(),
            },
        )
    }
}

/// Kueue's `WaitForPodsReady`, with its names and Go durations (`5m`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForPodsReadyConfig {
    /// v1beta1's switch; `false` turns waitForPodsReady off.
    pub enable: Option<bool>,
    pub timeout: Option<String>,
    pub block_admission: Option<bool>,
    #[serde(default)]
    pub requeuing_strategy: RequeuingStrategyConfig,
    pub recovery_timeout: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequeuingStrategyConfig {
    pub timestamp: Option<String>,
    pub backoff_limit_count: Option<i32>,
    pub backoff_base_seconds: Option<i32>,
    pub backoff_max_seconds: Option<i32>,
}

impl WaitForPodsReadyConfig {
    /// The settings in force (Kueue's defaults and validation); `None`
    /// when turned off.
    pub fn settings(&self) -> Result<Option<crate::jobs::readiness::Settings>, String> {
        let r = &self.requeuing_strategy;
        crate::jobs::readiness::Raw {
            enable: self.enable,
            timeout: self.timeout.clone(),
            block_admission: self.block_admission,
            recovery_timeout: self.recovery_timeout.clone(),
            timestamp: r.timestamp.clone(),
            backoff_limit_count: r.backoff_limit_count,
            backoff_base_seconds: r.backoff_base_seconds,
            backoff_max_seconds: r.backoff_max_seconds,
        }
        .settings()
    }
}

/// Kueue's `MultiKueue` block (`multiKueue`), with its names and Go
/// durations (`1m`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueManagerConfig {
    pub gc_interval: Option<String>,
    pub origin: Option<String>,
    pub worker_lost_timeout: Option<String>,
    pub dispatcher_name: Option<String>,
    #[serde(default)]
    pub external_frameworks: Vec<ExternalFrameworkConfig>,
    /// Kept as written: batchgate connects no ClusterProfiles yet.
    pub cluster_profile: Option<serde_json::Value>,
    pub incremental_dispatcher_config: Option<IncrementalDispatcherConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExternalFrameworkConfig {
    /// `kind.version.group`.
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IncrementalDispatcherConfig {
    pub step_size: Option<i32>,
}

impl MultiKueueManagerConfig {
    /// The settings in force: Kueue's defaults (`SetDefaults_Configuration`)
    /// and validation (`validateMultiKueue`), with its messages. Not
    /// checked here: that an external framework is none of the built-in
    /// adapters' kinds, and the ClusterProfile providers.
    pub fn settings(&self) -> Result<crate::multikueue::Settings, String> {
        use crate::multikueue::{dispatcher, Settings, DEFAULT_ORIGIN, DEFAULT_STEP_SIZE};
        const AT: &str = "multiKueue";
        const NEGATIVE: &str = "must be greater than or equal to 0";
        let defaults = Settings::default();
        let mut errs = Vec::new();
        let mut duration = |field: &str, v: &Option<String>, default: GoDuration| match v {
            None => default,
            Some(text) => match GoDuration::parse(text) {
                Ok(d) if d.as_nanos() < 0 => {
                    errs.push(format!("{AT}.{field}: Invalid value: {d}: {NEGATIVE}"));
                    default
                }
                Ok(d) => d,
                Err(e) => {
                    errs.push(format!("{AT}.{field}: Invalid value: {text:?}: {e}"));
                    default
                }
            },
        };
        // An explicit zero is kept: it turns the garbage collector off.
        let gc_interval = duration("gcInterval", &self.gc_interval, defaults.gc_interval);
        let worker_lost_timeout = duration(
            "workerLostTimeout",
            &self.worker_lost_timeout,
            defaults.worker_lost_timeout,
        );
        // An empty origin is defaulted too; any other must be a label value.
        let origin = match self.origin.as_deref() {
            None | Some("") => DEFAULT_ORIGIN.to_string(),
            Some(o) => o.to_string(),
        };
        let problems = crate::admission::kueue::labels::label_value(&origin);
        if !problems.is_empty() {
            errs.push(format!(
                "{AT}.origin: Invalid value: {origin:?}: {}",
                problems.join(",")
            ));
        }
        let dispatcher_name = self
            .dispatcher_name
            .clone()
            .unwrap_or_else(|| dispatcher::ALL_AT_ONCE.to_string());
        let incremental = dispatcher_name == dispatcher::INCREMENTAL;
        let mut step_size = None;
        if let Some(idc) = &self.incremental_dispatcher_config {
            let at = format!("{AT}.incrementalDispatcherConfig");
            if !incremental {
                // Go prints the struct here; its JSON says the same.
                let shown = match idc.step_size {
                    Some(n) => format!("{{\"stepSize\":{n}}}"),
                    None => "{}".to_string(),
                };
                errs.push(format!(
                    "{at}: Invalid value: {shown}: incrementalDispatcherConfig is only valid when dispatcherName is set to the incremental dispatcher"
                ));
            }
            if let Some(n) = idc.step_size.filter(|n| *n < 1) {
                errs.push(format!(
                    "{at}.stepSize: Invalid value: {n}: must be greater than or equal to 1"
                ));
            }
            step_size = idc.step_size;
        }
        // Defaulted only for the incremental dispatcher, as Kueue does.
        let incremental_step_size = incremental.then(|| step_size.unwrap_or(DEFAULT_STEP_SIZE));
        let mut seen = std::collections::BTreeSet::new();
        for (i, f) in self.external_frameworks.iter().enumerate() {
            let at = format!("{AT}.externalFrameworks[{i}].name");
            // schema.ParseKindArg: kind, version and a group (dots allowed).
            if f.name.splitn(3, '.').count() < 3 {
                errs.push(format!(
                    "{at}: Invalid value: {:?}: must be in 'kind.version.group' format",
                    f.name
                ));
            } else if !seen.insert(f.name.as_str()) {
                errs.push(format!("{at}: Duplicate value: {:?}", f.name));
            }
        }
        if !errs.is_empty() {
            return Err(errs.join(", "));
        }
        Ok(Settings {
            gc_interval,
            origin,
            worker_lost_timeout,
            dispatcher_name,
            incremental_step_size,
            external_frameworks: self
                .external_frameworks
                .iter()
                .map(|f| f.name.clone())
                .collect(),
            // The gates are the Configuration's (`Config::multikueue`).
            identifier_annotations: true,
            custom_jobs: true,
        })
    }
}

/// Kueue's `metrics` configuration, as far as it applies: which of Kueue's
/// metrics the reconciler reports.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricsConfig {
    /// Report the ClusterQueue resource metrics (nominal quota, borrowing
    /// and lending limits, reservation, usage). Default false, as Kueue.
    pub enable_cluster_queue_resources: Option<bool>,
    #[serde(default)]
    pub local_queue_metrics: LocalQueueMetricsConfig,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalQueueMetricsConfig {
    /// Report the `kueue_local_queue_*` metrics. Default true, as Kueue's
    /// `LocalQueueMetrics` feature gate in v0.19.
    pub enable: Option<bool>,
}

/// PreScaledCronJobs (`psc.cronprimer.local/v1alpha1`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrescalerConfig {
    /// The image of the init container that holds a primed pod until the
    /// real run (`batchgate prescale-wait`). Unset: the image of the
    /// container batchgate runs in (read from its Pod, named by the
    /// `POD_NAME`/`POD_NAMESPACE` the shipped Deployment sets), else
    /// `batchgate:latest`.
    pub image: Option<String>,
}

impl PrescalerConfig {
    /// The settings in force: configured, else the defaults.
    pub fn settings(&self) -> crate::prescale::Settings {
        let mut s = crate::prescale::Settings::default();
        if let Some(i) = self.image.as_ref().filter(|i| !i.is_empty()) {
            s.image = i.clone();
        }
        s
    }
}

/// The `appwrapper:` section of upstream's operator configuration
/// (project-codeflare/appwrapper v1.2.1, `pkg/config/config.go`), with its
/// names: pasted from upstream's `config.yaml`, it means the same here.
/// As upstream reads it over its defaults (`sigs.k8s.io/yaml` into a
/// filled struct), a field left out keeps its default and
/// `autopilot.resourceTaints` entries are added to the default
/// `nvidia.com/gpu` one or replace it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppWrapperConfig {
    /// Check that the requester may create every component (default true).
    #[serde(rename = "userRBACAdmissionCheck")]
    pub user_rbac_admission_check: Option<bool>,
    /// The queue name given to AppWrappers without one (default none).
    pub default_queue_name: Option<String>,
    /// Set on created pod templates that name no scheduler (default none).
    pub scheduler_name: Option<String>,
    #[serde(default)]
    pub autopilot: AutopilotConfig,
    #[serde(default)]
    pub fault_tolerance: FaultToleranceConfig,
}

/// Upstream's `AutopilotConfig`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutopilotConfig {
    pub inject_anti_affinities: Option<bool>,
    pub monitor_nodes: Option<bool>,
    pub prefer_no_schedule_weight: Option<i32>,
    pub resource_taints: Option<std::collections::BTreeMap<String, Vec<TaintConfig>>>,
}

/// A `v1.Taint` of `resourceTaints` (matched against node labels).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaintConfig {
    pub key: String,
    #[serde(default)]
    pub value: String,
    pub effect: String,
    /// Part of `v1.Taint`; meaningless here, accepted so a copied taint reads.
    pub time_added: Option<serde_json::Value>,
}

/// Upstream's `FaultToleranceConfig`, with its JSON names.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultToleranceConfig {
    pub admission_grace_period: Option<GoDurationConfig>,
    pub warmup_grace_period: Option<GoDurationConfig>,
    pub failure_grace_period: Option<GoDurationConfig>,
    pub reset_pause: Option<GoDurationConfig>,
    pub retry_limit: Option<i32>,
    pub deletion_grace_period: Option<GoDurationConfig>,
    pub grace_period_ceiling: Option<GoDurationConfig>,
    #[serde(rename = "successTTLCeiling")]
    pub success_ttl_ceiling: Option<GoDurationConfig>,
}

/// A Go `time.Duration` in the configuration: an integer is nanoseconds
/// (what upstream's `config.yaml` holds, `sigs.k8s.io/yaml` reading a
/// `time.Duration` as JSON), a string Go's duration syntax (`90s`,
/// `1m30s`), which upstream refuses but a person writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoDurationConfig(pub GoDuration);

impl<'de> Deserialize<'de> for GoDurationConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Nanos(i64),
            // A tool that reads numbers as float64 (Helm's values) may
            // write large ones with an exponent: `9e+10`.
            Float(f64),
            Text(String),
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "expected a duration: integer nanoseconds (as upstream writes them) or Go's syntax (\"90s\", \"1m30s\")",
            )
        })? {
            Raw::Nanos(n) => Ok(GoDurationConfig(GoDuration(n))),
            Raw::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => {
                Ok(GoDurationConfig(GoDuration(f as i64)))
            }
            Raw::Float(f) => Err(serde::de::Error::custom(format!(
                "{f} is not a whole number of nanoseconds"
            ))),
            Raw::Text(t) => GoDuration::parse(&t)
                .map(GoDurationConfig)
                .map_err(serde::de::Error::custom),
        }
    }
}

const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

impl AppWrapperConfig {
    /// The webhook's settings in force: configured, else the defaults.
    pub fn settings(&self) -> crate::admission::appwrapper::Settings {
        let d = crate::admission::appwrapper::Settings::default();
        crate::admission::appwrapper::Settings {
            user_rbac_admission_check: self
                .user_rbac_admission_check
                .unwrap_or(d.user_rbac_admission_check),
            default_queue_name: self
                .default_queue_name
                .clone()
                .filter(|q| !q.is_empty())
                .or(d.default_queue_name),
        }
    }

    /// The controller's settings: upstream's defaults with what is
    /// configured laid over them, then upstream's `ValidateAppWrapperConfig`
    /// (its words; it refuses to start on them too).
    pub fn operator(&self) -> Result<OperatorConfig, String> {
        let mut op = OperatorConfig::default();
        if let Some(s) = &self.scheduler_name {
            op.scheduler_name = s.clone();
        }
        let ap = op.autopilot.get_or_insert_with(Autopilot::default);
        let c = &self.autopilot;
        if let Some(v) = c.inject_anti_affinities {
            ap.inject_anti_affinities = v;
        }
        if let Some(v) = c.monitor_nodes {
            ap.monitor_nodes = v;
        }
        if let Some(w) = c.prefer_no_schedule_weight {
            // Kubernetes refuses a preferred term's weight outside 1-100, so
            // every GPU pod would fail to be created; upstream does not check.
            if !(1..=100).contains(&w) {
                return Err(format!(
                    "appwrapper.autopilot.preferNoScheduleWeight: Invalid value: {w}: must be in the range 1-100"
                ));
            }
            ap.prefer_no_schedule_weight = w;
        }
        for (resource, taints) in c.resource_taints.iter().flatten() {
            let mut list = Vec::new();
            for (i, t) in taints.iter().enumerate() {
                if !TAINT_EFFECTS.contains(&t.effect.as_str()) {
                    return Err(format!(
                        "appwrapper.autopilot.resourceTaints[{resource}][{i}].effect: Unsupported value: \"{}\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                        t.effect
                    ));
                }
                list.push(ResourceTaint {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: t.effect.clone(),
                });
            }
            ap.resource_taints.insert(resource.clone(), list);
        }
        let f = &self.fault_tolerance;
        let ft = &mut op.fault_tolerance;
        for (field, value) in [
            (&mut ft.admission_grace_period, f.admission_grace_period),
            (&mut ft.warmup_grace_period, f.warmup_grace_period),
            (&mut ft.failure_grace_period, f.failure_grace_period),
            (&mut ft.retry_pause_period, f.reset_pause),
            (
                &mut ft.forceful_deletion_grace_period,
                f.deletion_grace_period,
            ),
            (&mut ft.grace_period_maximum, f.grace_period_ceiling),
            (&mut ft.success_ttl, f.success_ttl_ceiling),
        ] {
            if let Some(v) = value {
                *field = v.0;
            }
        }
        if let Some(n) = f.retry_limit {
            ft.retry_limit = n;
        }
        ft.validate()
            .map_err(|e| format!("appwrapper.faultTolerance: invalid appwrapper config: {e}"))?;
        Ok(op)
    }
}

/// SubjectAccessReview entitlement checks (see [`crate::admission::entitlement`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntitlementConfig {
    /// How long an allowed answer is reused (default 30 s).
    #[serde(default, with = "opt_secs")]
    pub allowed_ttl_seconds: Option<Duration>,
    /// How long a denied answer is reused (default 10 s).
    #[serde(default, with = "opt_secs")]
    pub denied_ttl_seconds: Option<Duration>,
    /// Answers kept at most (default 4096).
    pub max_entries: Option<usize>,
    /// When a SubjectAccessReview fails: `deny` (default) or `allow`.
    pub on_error: Option<crate::admission::entitlement::OnError>,
    /// How long one SubjectAccessReview may take (default 5 s).
    #[serde(default, with = "opt_secs")]
    pub timeout_seconds: Option<Duration>,
}

impl EntitlementConfig {
    /// The settings in force: configured, else the defaults.
    pub fn settings(&self) -> crate::admission::entitlement::Settings {
        let d = crate::admission::entitlement::Settings::default();
        crate::admission::entitlement::Settings {
            cache: crate::admission::entitlement::CacheLimits {
                allowed_ttl: self.allowed_ttl_seconds.unwrap_or(d.cache.allowed_ttl),
                denied_ttl: self.denied_ttl_seconds.unwrap_or(d.cache.denied_ttl),
                max_entries: self.max_entries.unwrap_or(d.cache.max_entries),
            },
            on_error: self.on_error.unwrap_or(d.on_error),
            timeout: self.timeout_seconds.unwrap_or(d.timeout),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AdmissionMode {
    #[default]
    Builtin,
    External,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcilerConfig {
    /// How long a replica's hold on the reconciler lease lasts without
    /// renewal (default 15 s); a restarted replica waits at most this long.
    #[serde(default, with = "opt_secs")]
    pub lease_duration_seconds: Option<Duration>,
}

/// Kueue's `ClientConnection` (its `qps` and `burst`; client-go paces each
/// resource's requests with them).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientConnectionConfig {
    pub qps: Option<f32>,
    pub burst: Option<u32>,
}

impl ClientConnectionConfig {
    /// `(qps, burst)` with Kueue's defaulting: an unset or zero field takes
    /// the default (300, 500); a negative `qps` turns pacing off, as it
    /// does in client-go.
    pub fn settings(&self) -> (f64, u32) {
        let qps = match self.qps {
            None => 300.0,
            Some(0.0) => 300.0,
            Some(q) => f64::from(q),
        };
        let burst = match self.burst {
            None | Some(0) => 500,
            Some(b) => b,
        };
        (qps, burst)
    }
}

/// The serving certificate kept in a Secret (instead of `webhook.certDir`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificatesConfig {
    /// `namespace/name` of the Secret holding tls.crt and tls.key.
    pub secret: Option<String>,
    /// Create, renew and rotate the Secret, and keep the caBundle of
    /// batchgate's webhook configurations in step with it.
    pub manage: Option<bool>,
    /// Service name for the certificate's DNS names (default batchgate-webhook).
    pub service: Option<String>,
    #[serde(default)]
    pub dns_names: Vec<String>,
    #[serde(default)]
    pub ip_addresses: Vec<std::net::IpAddr>,
    pub ca_validity_seconds: Option<i64>,
    pub cert_validity_seconds: Option<i64>,
    pub ca_renew_before_seconds: Option<i64>,
    pub cert_renew_before_seconds: Option<i64>,
    /// How long each CA rotation step is held (old and new CA both trusted).
    pub overlap_seconds: Option<i64>,
    /// How often the Secret is re-read.
    #[serde(default, with = "opt_secs")]
    pub sync_interval_seconds: Option<Duration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Integrations {
    /// Integration names as in Kueue (`batch/job`, ...). Absent: all loaded.
    pub frameworks: Option<Vec<String>>,
    /// A directory of policy files replacing the built-in ones.
    pub policies_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookConfig {
    pub listen: Option<SocketAddr>,
    pub cert_dir: Option<PathBuf>,
    pub max_body_bytes: Option<usize>,
    pub max_connections: Option<usize>,
    #[serde(default, with = "opt_secs")]
    pub handshake_timeout_seconds: Option<Duration>,
    #[serde(default, with = "opt_secs")]
    pub header_read_timeout_seconds: Option<Duration>,
    #[serde(default, with = "opt_secs")]
    pub body_timeout_seconds: Option<Duration>,
    #[serde(default, with = "opt_secs")]
    pub shutdown_delay_seconds: Option<Duration>,
    #[serde(default, with = "opt_secs")]
    pub drain_timeout_seconds: Option<Duration>,
    /// Bytes of request bodies buffered across all connections at once.
    pub max_body_bytes_in_flight: Option<usize>,
    #[serde(default, with = "opt_secs")]
    pub body_budget_wait_seconds: Option<Duration>,
    #[serde(default, with = "opt_secs")]
    pub first_request_timeout_seconds: Option<Duration>,
    #[serde(default, with = "opt_secs")]
    pub idle_timeout_seconds: Option<Duration>,
    #[serde(default, with = "opt_secs")]
    pub write_timeout_seconds: Option<Duration>,
    /// 0 turns HTTP/2 PINGs off.
    #[serde(default, with = "opt_secs")]
    pub http2_keep_alive_interval_seconds: Option<Duration>,
    #[serde(default, with = "opt_secs")]
    pub http2_keep_alive_timeout_seconds: Option<Duration>,
    #[serde(default, with = "opt_secs")]
    pub drain_grace_seconds: Option<Duration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProbeConfig {
    pub listen: Option<SocketAddr>,
}

mod opt_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let v: Option<f64> = Option::deserialize(d)?;
        match v {
            Some(s) if !(0.0..=3600.0).contains(&s) => Err(serde::de::Error::custom(format!(
                "{s} is out of range: give seconds between 0 and 3600"
            ))),
            Some(s) => Ok(Some(Duration::from_secs_f64(s))),
            None => Ok(None),
        }
    }
}

impl Config {
    pub fn parse(path: &str, text: &str) -> Result<Config, ConfigError> {
        let cfg: Config = serde_yaml::from_str(text).map_err(|source| ConfigError::Yaml {
            path: path.to_string(),
            source,
        })?;
        if let Some(sel) = &cfg.managed_jobs_namespace_selector {
            sel.validate().map_err(|m| ConfigError::Invalid {
                path: path.to_string(),
                message: format!("managedJobsNamespaceSelector.{m}"),
            })?;
        }
        cfg.wait_for_pods_ready
            .settings()
            .map_err(|message| ConfigError::Invalid {
                path: path.to_string(),
                message,
            })?;
        if let Some(fs) = &cfg.fair_sharing {
            fs.settings().map_err(|message| ConfigError::Invalid {
                path: path.to_string(),
                message,
            })?;
        }
        if let Some(afs) = &cfg.admission_fair_sharing {
            afs.settings().map_err(|message| ConfigError::Invalid {
                path: path.to_string(),
                message,
            })?;
        }
        cfg.multi_kueue
            .settings()
            .map_err(|message| ConfigError::Invalid {
                path: path.to_string(),
                message,
            })?;
        cfg.claims().map_err(|message| ConfigError::Invalid {
            path: path.to_string(),
            message,
        })?;
        cfg.appwrapper
            .operator()
            .map_err(|message| ConfigError::Invalid {
                path: path.to_string(),
                message,
            })?;
        Ok(cfg)
    }

    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE)
    }

    /// The selector in force: configured, or kube-system and our namespace
    /// excluded (Kueue's default).
    pub fn managed_namespaces(&self) -> LabelSelector {
        self.managed_jobs_namespace_selector
            .clone()
            .unwrap_or_else(|| {
                LabelSelector::excluding_namespaces(&["kube-system", self.namespace()])
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multikueue_defaults_are_kueues() {
        let s = Config::parse("c.yaml", "")
            .unwrap()
            .multi_kueue
            .settings()
            .unwrap();
        assert_eq!(s, crate::multikueue::Settings::default());
        assert_eq!(s.gc_interval.to_string(), "1m0s");
        assert_eq!(s.origin, "multikueue");
        assert_eq!(s.worker_lost_timeout.to_string(), "15m0s");
        assert_eq!(
            s.dispatcher_name,
            "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
        );
        assert_eq!(s.incremental_step_size, None);
        // An empty block, and an empty origin, default the same way.
        let s = Config::parse("c.yaml", "multiKueue:\n  origin: \"\"\n")
            .unwrap()
            .multi_kueue
            .settings()
            .unwrap();
        assert_eq!(s, crate::multikueue::Settings::default());
    }

    #[test]
    fn multikueue_settings_as_written() {
        let cfg = Config::parse(
            "c.yaml",
            "multiKueue:
  gcInterval: 0s
  origin: manager-a
  workerLostTimeout: 5m
  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental
  externalFrameworks:
  - name: RayJob.v1.ray.io
",
        )
        .unwrap();
        let s = cfg.multi_kueue.settings().unwrap();
        // Zero turns garbage collection off; it is not defaulted.
        assert_eq!(s.gc_interval, GoDuration::ZERO);
        assert_eq!(s.origin, "manager-a");
        assert_eq!(s.worker_lost_timeout, GoDuration::from_mins(5));
        // The incremental dispatcher's step size defaults to 3.
        assert_eq!(s.incremental_step_size, Some(3));
        assert_eq!(s.external_frameworks, ["RayJob.v1.ray.io"]);
        let s = Config::parse(
            "c.yaml",
            "multiKueue:
  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental
  incrementalDispatcherConfig:
    stepSize: 5
",
        )
        .unwrap()
        .multi_kueue
        .settings()
        .unwrap();
        assert_eq!(s.incremental_step_size, Some(5));
    }

    #[test]
    fn multikueue_validation_uses_kueues_messages() {
        for (text, want) in [
            (
                "multiKueue:\n  gcInterval: -1m\n",
                "multiKueue.gcInterval: Invalid value: -1m0s: must be greater than or equal to 0",
            ),
            (
                "multiKueue:\n  workerLostTimeout: -5s\n",
                "multiKueue.workerLostTimeout: Invalid value: -5s: must be greater than or equal to 0",
            ),
            (
                "multiKueue:\n  workerLostTimeout: soon\n",
                "multiKueue.workerLostTimeout: Invalid value: \"soon\": time: invalid duration \"soon\"",
            ),
            (
                "multiKueue:\n  origin: not a label\n",
                "multiKueue.origin: Invalid value: \"not a label\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
            (
                "multiKueue:\n  incrementalDispatcherConfig:\n    stepSize: 2\n",
                "multiKueue.incrementalDispatcherConfig: Invalid value: {\"stepSize\":2}: incrementalDispatcherConfig is only valid when dispatcherName is set to the incremental dispatcher",
            ),
            (
                "multiKueue:\n  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental\n  incrementalDispatcherConfig:\n    stepSize: 0\n",
                "multiKueue.incrementalDispatcherConfig.stepSize: Invalid value: 0: must be greater than or equal to 1",
            ),
            (
                "multiKueue:\n  externalFrameworks:\n  - name: RayJob\n",
                "multiKueue.externalFrameworks[0].name: Invalid value: \"RayJob\": must be in 'kind.version.group' format",
            ),
            (
                "multiKueue:\n  externalFrameworks:\n  - name: A.v1.x.io\n  - name: A.v1.x.io\n",
                "multiKueue.externalFrameworks[1].name: Duplicate value: \"A.v1.x.io\"",
            ),
        ] {
            let err = Config::parse("c.yaml", text).unwrap_err().to_string();
            assert_eq!(err, format!("c.yaml: {want}"), "{text}");
        }
        assert!(Config::parse("c.yaml", "multiKueue:\n  gcIntervall: 1m\n").is_err());
    }

    #[test]
    fn appwrapper_settings_use_upstreams_names() {
        let cfg = Config::parse(
            "c.yaml",
            "appwrapper:\n  userRBACAdmissionCheck: false\n  defaultQueueName: team-queue\n",
        )
        .unwrap();
        let s = cfg.appwrapper.settings();
        assert!(!s.user_rbac_admission_check);
        assert_eq!(s.default_queue_name.as_deref(), Some("team-queue"));
        assert!(Config::parse("c.yaml", "appwrapper:\n  userRbacAdmissionCheck: false\n").is_err());
    }

    /// The `appwrapper:` section upstream's operator writes into its
    /// ConfigMap when it creates it (`yaml.Marshal` of its defaults:
    /// durations as integer nanoseconds), pasted as it is, reads as
    /// upstream's defaults.
    #[test]
    fn upstreams_own_appwrapper_section_reads_as_its_defaults() {
        let upstream = "appwrapper:
  autopilot:
    injectAntiAffinities: true
    monitorNodes: true
    preferNoScheduleWeight: 50
    resourceTaints:
      nvidia.com/gpu:
      - effect: PreferNoSchedule
        key: autopilot.ibm.com/gpuhealth
        value: WARN
      - effect: NoSchedule
        key: autopilot.ibm.com/gpuhealth
        value: TESTING
      - effect: NoExecute
        key: autopilot.ibm.com/gpuhealth
        value: EVICT
  faultTolerance:
    admissionGracePeriod: 60000000000
    deletionGracePeriod: 600000000000
    failureGracePeriod: 60000000000
    gracePeriodCeiling: 86400000000000
    resetPause: 90000000000
    retryLimit: 3
    successTTLCeiling: 604800000000000
    warmupGracePeriod: 300000000000
  userRBACAdmissionCheck: true
";
        let cfg = Config::parse("c.yaml", upstream).unwrap();
        assert_eq!(cfg.appwrapper.operator(), Ok(OperatorConfig::default()));
        assert_eq!(
            Config::parse("c.yaml", "").unwrap().appwrapper.operator(),
            Ok(OperatorConfig::default())
        );
    }

    #[test]
    fn appwrapper_operator_fields_are_laid_over_the_defaults() {
        let cfg = Config::parse(
            "c.yaml",
            "appwrapper:
  schedulerName: coscheduler
  autopilot:
    monitorNodes: false
    preferNoScheduleWeight: 7
    resourceTaints:
      example.com/fpga:
      - {key: fpga-health, value: dead, effect: NoExecute}
  faultTolerance:
    resetPause: 5s
    retryLimit: 0
    warmupGracePeriod: 2m30s
",
        )
        .unwrap();
        let op = cfg.appwrapper.operator().unwrap();
        assert_eq!(op.scheduler_name, "coscheduler");
        let ap = op.autopilot.unwrap();
        assert!(!ap.monitor_nodes && ap.inject_anti_affinities);
        assert_eq!(ap.prefer_no_schedule_weight, 7);
        // Added beside the default GPU entry, as Go's decoder merges maps.
        assert_eq!(
            ap.resource_taints.keys().collect::<Vec<_>>(),
            ["example.com/fpga", "nvidia.com/gpu"]
        );
        let ft = op.fault_tolerance;
        assert_eq!(ft.retry_pause_period, GoDuration::from_secs(5));
        assert_eq!(ft.retry_limit, 0);
        assert_eq!(ft.warmup_grace_period, GoDuration::from_secs(150));
        let helm = Config::parse(
            "c.yaml",
            "appwrapper:\n  faultTolerance:\n    resetPause: 9.0e+10\n",
        )
        .unwrap();
        assert_eq!(
            helm.appwrapper
                .operator()
                .unwrap()
                .fault_tolerance
                .retry_pause_period,
            GoDuration::from_secs(90)
        );
        assert_eq!(ft.admission_grace_period, GoDuration::from_mins(1));
        // An empty list takes the GPU taints away.
        let none = Config::parse(
            "c.yaml",
            "appwrapper:\n  autopilot:\n    resourceTaints:\n      nvidia.com/gpu: []\n",
        )
        .unwrap();
        let ap = none.appwrapper.operator().unwrap().autopilot.unwrap();
        assert!(ap.resource_taints["nvidia.com/gpu"].is_empty());
    }

    #[test]
    fn appwrapper_operator_config_is_refused_in_upstreams_words() {
        let err = |yaml: &str| match Config::parse("c.yaml", yaml) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted: {yaml}"),
        };
        assert_eq!(
            err("appwrapper:\n  faultTolerance:\n    resetPause: 25h\n"),
            "c.yaml: appwrapper.faultTolerance: invalid appwrapper config: RetryPausePeriod 25h0m0s exceeds GracePeriodCeiling 24h0m0s"
        );
        assert_eq!(
            err("appwrapper:\n  faultTolerance:\n    gracePeriodCeiling: 1000000000\n"),
            "c.yaml: appwrapper.faultTolerance: invalid appwrapper config: ForcefulDelectionGracePeriod 10m0s exceeds GracePeriodCeiling 1s"
        );
        assert_eq!(
            err("appwrapper:\n  faultTolerance:\n    successTTLCeiling: 0\n"),
            "c.yaml: appwrapper.faultTolerance: invalid appwrapper config: SuccessTTL 0s is not a positive duration"
        );
        assert!(
            err("appwrapper:\n  faultTolerance:\n    resetPause: 90 seconds\n")
                .contains("time: unknown unit")
        );
        assert!(err("appwrapper:\n  autopilot:\n    preferNoScheduleWeight: 0\n")
            .contains("appwrapper.autopilot.preferNoScheduleWeight: Invalid value: 0: must be in the range 1-100"));
        assert!(err("appwrapper:\n  autopilot:\n    resourceTaints:\n      nvidia.com/gpu: [{key: k, value: v, effect: Evict}]\n")
            .contains("appwrapper.autopilot.resourceTaints[nvidia.com/gpu][0].effect: Unsupported value: \"Evict\""));
        // Upstream's other sections are its Deployment's concerns.
        assert!(err("certManagement:\n  namespace: x\n").contains("unknown field `certManagement`"));
    }

    /// Kueue v0.19.2's `validateDeviceClassMappings`
    /// (`pkg/config/validation_test.go`, the device class mapping cases),
    /// with its messages; the DRA gates default on.
    #[test]
    fn device_class_mappings_are_read_and_checked_as_kueue_does() {
        let ok = Config::parse(
            "c.yaml",
            "resources:\n  deviceClassMappings:\n  - name: example.com/gpu\n    deviceClassNames: [gpu.example.com, big-gpu.example.com]\n",
        )
        .unwrap()
        .claims()
        .unwrap();
        assert!(ok.integration && ok.reject_when_disabled);
        assert_eq!(ok.classes["big-gpu.example.com"], "example.com/gpu");
        let err = |yaml: &str| Config::parse("c.yaml", yaml).unwrap_err().to_string();
        assert_eq!(
            err("resources:\n  deviceClassMappings:\n  - name: a\n    deviceClassNames: [x]\n  - name: b\n    deviceClassNames: [x]\n"),
            "c.yaml: resources.deviceClassMappings[1].deviceClassNames[0]: Invalid value: \"x\": device class already mapped to resource a"
        );
        assert_eq!(
            err("resources:\n  deviceClassMappings:\n  - name: a\n    deviceClassNames: []\n"),
            "c.yaml: resources.deviceClassMappings[0].deviceClassNames: Required value: at least one device class name is required"
        );
        assert_eq!(
            err("resources:\n  deviceClassMappings:\n  - name: a\n    deviceClassNames: [x]\n  - name: a\n    deviceClassNames: [y]\n"),
            "c.yaml: resources.deviceClassMappings[1].name: Duplicate value: \"a\""
        );
        // Counter sources (partitionable devices), as Kueue validates them.
        let counter = |name: &str, sel: &str| {
            format!("{{counter: {{name: {name}, driver: gpu.nvidia.com, deviceSelector: {{cel: {{expression: '{sel}'}}}}}}}}")
        };
        let ok = Config::parse("c.yaml", &format!(
            "resources:\n  deviceClassMappings:\n  - name: gpu.memory\n    deviceClassNames: [mig.nvidia.com]\n    sources: [{}]\n  - name: gpu.compute\n    deviceClassNames: [mig.nvidia.com]\n    sources: [{}]\n",
            counter("memory", "true"),
            counter("multiprocessors", "true")
        ))
        .unwrap()
        .claims()
        .unwrap();
        assert_eq!(ok.classes["mig.nvidia.com"], "gpu.memory");
        let sources: Vec<_> = ok.counters["mig.nvidia.com"]
            .iter()
            .map(|c| (c.resource.as_str(), c.counter.as_str()))
            .collect();
        assert_eq!(
            sources,
            [("gpu.memory", "memory"), ("gpu.compute", "multiprocessors")]
        );
        assert_eq!(
            err(&format!(
                "resources:\n  deviceClassMappings:\n  - name: a\n    deviceClassNames: [x]\n    sources: [{}]\n  - name: b\n    deviceClassNames: [x]\n    sources: [{}]\n",
                counter("memory", "true"),
                counter("memory", "true")
            )),
            "c.yaml: resources.deviceClassMappings[1].deviceClassNames[0]: Invalid value: \"x\": device class already has a counter source for counter \"memory\""
        );
        assert_eq!(
            err(&format!(
                "resources:\n  deviceClassMappings:\n  - name: a\n    deviceClassNames: [x]\n    sources: [{}]\n",
                counter("Memory", "device.driver ==")
            )),
            "c.yaml: [resources.deviceClassMappings[0].sources[0].counter.name: Invalid value: \"Memory\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), resources.deviceClassMappings[0].sources[0].counter.deviceSelector.cel.expression: Invalid value: \"device.driver ==\": CEL compilation failed: ".to_string()
                + &crate::devices::selectors::compile("device.driver ==").unwrap_err()
                + "]"
        );
        assert!(err("featureGates:\n  KueueDRAIntegrationPartitionableDevices: false\nresources:\n  deviceClassMappings:\n  - name: a\n    deviceClassNames: [x]\n    sources: [{counter: {name: m, driver: d, deviceSelector: {cel: {expression: 'true'}}}}]\n")
            .contains("sources[0].counter: Invalid value: true: counter sources require KueueDRAIntegrationPartitionableDevices to be enabled"));
        // Kueue's gate dependencies: turning the integration off alone is
        // refused, as Kueue refuses it.
        assert_eq!(
            err("featureGates:\n  KueueDRAIntegration: false\n"),
            "c.yaml: [featureGates: Invalid value: \"KueueDRAIntegrationExtendedResource\": KueueDRAIntegrationExtendedResource requires KueueDRAIntegration to be enabled, featureGates: Invalid value: \"KueueDRAIntegrationPartitionableDevices\": KueueDRAIntegrationPartitionableDevices requires KueueDRAIntegration to be enabled]"
        );
        assert!(err("resources:\n  deviceClassMappings:\n  - name: a\n    deviceClassNames: [x]\n    sources: [{}]\n")
            .contains("sources[0]: Required value: exactly one source type must be set per entry"));
        assert!(err(
            "resources:\n  deviceClassMappings:\n  - name: \"a b\"\n    deviceClassNames: [x]\n"
        )
        .starts_with("c.yaml: resources.deviceClassMappings[0].name: Invalid value: \"a b\": "));
        let off = Config::parse(
            "c.yaml",
            "featureGates:\n  KueueDRAIntegration: false\n  KueueDRAIntegrationExtendedResource: false\n  KueueDRAIntegrationPartitionableDevices: false\n",
        )
        .unwrap()
            .claims()
            .unwrap();
        assert!(!off.integration && off.reject_when_disabled);
        assert!(
            err("featureGates:\n  TopologyAwareScheduling: false\n").contains(
                "featureGates.TopologyAwareScheduling: batchgate acts on KueueDRAIntegration"
            )
        );
        // WorkloadIdentifierAnnotations: what MultiKueue writes on a worker.
        let parse = |text: &str| Config::parse("c.yaml", text).unwrap();
        assert!(parse("").multikueue().unwrap().identifier_annotations);
        let off = parse("featureGates:\n  WorkloadIdentifierAnnotations: false\n");
        assert!(off.claims().is_ok());
        assert!(!off.multikueue().unwrap().identifier_annotations);
        // MultiKueueAdaptersForCustomJobs: external frameworks dispatched.
        assert!(parse("").multikueue().unwrap().custom_jobs);
        let off = parse(
            "featureGates:
  MultiKueueAdaptersForCustomJobs: false
",
        );
        assert!(off.claims().is_ok());
        assert!(!off.multikueue().unwrap().custom_jobs);
        // SchedulingEquivalenceHashing: the engine's set-aside of alike heads.
        assert!(parse("").equivalence_hashing());
        let off = parse("featureGates:\n  SchedulingEquivalenceHashing: false\n");
        assert!(off.claims().is_ok());
        assert!(!off.equivalence_hashing());
    }

    #[test]
    fn full_config_parses() {
        let cfg = Config::parse(
            "c.yaml",
            r#"
namespace: queues
manageJobsWithoutQueueName: true
managedJobsNamespaceSelector:
  matchLabels: {batch: "yes"}
integrations:
  frameworks: [batch/job]
webhook:
  listen: 0.0.0.0:9443
  certDir: /certs
  maxBodyBytes: 1048576
  drainTimeoutSeconds: 5
  maxBodyBytesInFlight: 33554432
  firstRequestTimeoutSeconds: 5
  idleTimeoutSeconds: 90
  writeTimeoutSeconds: 8
  http2KeepAliveIntervalSeconds: 20
  http2KeepAliveTimeoutSeconds: 10
  drainGraceSeconds: 1.5
  bodyBudgetWaitSeconds: 3
probes:
  listen: 0.0.0.0:8081
"#,
        )
        .unwrap();
        assert_eq!(cfg.namespace(), "queues");
        assert_eq!(cfg.manage_jobs_without_queue_name, Some(true));
        assert!(cfg.appwrapper.settings().user_rbac_admission_check);
        assert_eq!(
            cfg.webhook.drain_timeout_seconds,
            Some(Duration::from_secs(5))
        );
        assert_eq!(cfg.webhook.max_body_bytes_in_flight, Some(32 << 20));
        assert_eq!(
            cfg.webhook.drain_grace_seconds,
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            cfg.webhook.http2_keep_alive_interval_seconds,
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            cfg.integrations.frameworks.as_deref(),
            Some(&["batch/job".to_string()][..])
        );
    }

    #[test]
    fn entitlement_settings() {
        let d = Config::parse("c.yaml", "{}\n")
            .unwrap()
            .entitlement
            .settings();
        assert_eq!(d, crate::admission::entitlement::Settings::default());
        assert_eq!(d.cache.allowed_ttl, Duration::from_secs(30));
        assert_eq!(d.cache.denied_ttl, Duration::from_secs(10));
        assert_eq!(d.on_error, crate::admission::entitlement::OnError::Deny);
        let cfg = Config::parse(
            "c.yaml",
            "entitlement: {allowedTtlSeconds: 60, deniedTtlSeconds: 0, maxEntries: 10, onError: allow, timeoutSeconds: 2}\n",
        )
        .unwrap();
        let s = cfg.entitlement.settings();
        assert_eq!(s.cache.allowed_ttl, Duration::from_secs(60));
        assert_eq!(s.cache.denied_ttl, Duration::ZERO);
        assert_eq!(s.cache.max_entries, 10);
        assert_eq!(s.on_error, crate::admission::entitlement::OnError::Allow);
        assert_eq!(s.timeout, Duration::from_secs(2));
        let err = Config::parse("c.yaml", "entitlement: {onError: maybe}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("maybe"), "{err}");
    }

    #[test]
    fn admission_fair_sharing_reads_kueues_fields() {
        let cfg = Config::parse(
            "c.yaml",
            "admissionFairSharing:\n  usageHalfLifeTime: 10m\n  resourceWeights: {cpu: 0.5, nvidia.com/gpu: 4}\n",
        )
        .unwrap();
        let s = cfg.admission_fair_sharing.unwrap().settings().unwrap();
        assert_eq!(s.usage_half_life_time, 600.0);
        // Kueue's default sampling interval.
        assert_eq!(s.usage_sampling_interval, 300.0);
        assert_eq!(s.resource_weights["nvidia.com/gpu"], 4.0);
        let bad = Config::parse(
            "c.yaml",
            "admissionFairSharing:\n  usageHalfLifeTime: -1m\n  resourceWeights: {cpu: -1}\n",
        );
        let message = bad.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("admissionFairSharing.usageHalfLifeTime: Invalid value: \"-1m\": must be greater than or equal to 0")
                && message.contains("admissionFairSharing.resourceWeights[cpu]"),
            "{message}"
        );
    }

    #[test]
    fn wait_for_pods_ready_reads_kueues_fields() {
        let cfg = Config::parse(
            "c.yaml",
            "waitForPodsReady:\n  timeout: 3s\n  blockAdmission: true\n  recoveryTimeout: 0s\n  requeuingStrategy: {timestamp: Creation, backoffBaseSeconds: 1, backoffMaxSeconds: 4, backoffLimitCount: 2}\n",
        )
        .unwrap();
        let s = cfg.wait_for_pods_ready.settings().unwrap().unwrap();
        assert_eq!(s.timeout_ms, 3000);
        assert!(s.block_admission);
        assert_eq!(s.recovery_timeout_ms, None);
        assert_eq!(
            s.timestamp,
            crate::jobs::readiness::RequeuingTimestamp::Creation
        );
        assert_eq!((s.backoff_base_seconds, s.backoff_max_seconds), (1, 4));
        assert_eq!(s.backoff_limit_count, Some(2));
        // On by default, as Kueue v0.19.2 (v1beta2).
        let d = Config::parse("c.yaml", "{}\n").unwrap();
        assert!(d.wait_for_pods_ready.settings().unwrap().is_some());
        let off = Config::parse("c.yaml", "waitForPodsReady: {enable: false}\n").unwrap();
        assert_eq!(off.wait_for_pods_ready.settings(), Ok(None));
        let err = Config::parse(
            "c.yaml",
            "waitForPodsReady: {requeuingStrategy: {backoffLimitCount: -1}}\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "c.yaml: waitForPodsReady.requeuingStrategy.backoffLimitCount: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    /// The configuration sample in docs/running.md is one this parser
    /// takes (its waitForPodsReady block shows Kueue's defaults).
    #[test]
    fn the_documented_sample_parses() {
        let doc = include_str!("../docs/running.md");
        let block = doc
            .split("```yaml\n")
            .map(|b| b.split("```").next().unwrap_or(""))
            .find(|b| b.contains("waitForPodsReady:"))
            .expect("a yaml block with waitForPodsReady");
        let cfg = Config::parse("docs/running.md", block).unwrap();
        assert_eq!(
            cfg.wait_for_pods_ready.settings().unwrap(),
            Some(crate::jobs::readiness::Settings::default())
        );
    }

    #[test]
    fn default_selector_excludes_own_namespace() {
        let cfg = Config::parse("c.yaml", "namespace: queues\n").unwrap();
        let sel = cfg.managed_namespaces();
        assert!(!sel.matches(&crate::api::selector::NamespaceNameOnly("queues")));
        assert!(!sel.matches(&crate::api::selector::NamespaceNameOnly("kube-system")));
        assert!(sel.matches(&crate::api::selector::NamespaceNameOnly("default")));
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::parse("c.yaml", "manageJobsWithoutQueueNames: true\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("manageJobsWithoutQueueNames"), "{err}");
        let err = Config::parse(
            "c.yaml",
            "managedJobsNamespaceSelector: {matchExpressions: [{key: a, operator: Exists, values: [x]}]}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("managedJobsNamespaceSelector.matchExpressions[0].values"),
            "{err}"
        );
    }

    #[test]
    fn fair_sharing_is_parsed_and_validated_as_kueue_does() {
        use crate::queueing::fair_sharing::Strategy;
        let on = |yaml: &str| {
            Config::parse("c.yaml", yaml)
                .map(|c| c.fair_sharing.and_then(|f| f.settings().ok().flatten()))
        };
        assert!(on("{}\n").unwrap().is_none());
        assert!(on("fairSharing: {enable: false}\n").unwrap().is_none());
        let v1 = on("fairSharing: {enable: true}\n").unwrap().unwrap();
        assert_eq!(
            v1.preemption_strategies,
            vec![
                Strategy::LessThanOrEqualToFinalShare,
                Strategy::LessThanInitialShare
            ]
        );
        let one = on("fairSharing: {preemptionStrategies: [LessThanInitialShare]}\n").unwrap();
        assert_eq!(
            one.unwrap().preemption_strategies,
            vec![Strategy::LessThanInitialShare]
        );
        let err = Config::parse("c.yaml", "fairSharing: {}\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.yaml: fairSharing.preemptionStrategies: Required value: must be specified"
        );
        let err = Config::parse(
            "c.yaml",
            "fairSharing: {preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]}\n",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("c.yaml: fairSharing.preemptionStrategies: Unsupported value: "),
            "{err}"
        );
    }
}
