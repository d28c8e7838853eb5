//! The `batchgate` command line.

#[cfg(feature = "dev")]
pub mod dev;
pub mod prescale_wait;
pub mod schedule;

use std::{
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    sync::{atomic::Ordering, Arc},
    time::Duration,
};

use anyhow::{bail, Context as _, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use time::OffsetDateTime;
use tracing::{error, info, warn};

use crate::config::{AdmissionMode, Config};
use crate::{
    admission::{
        manifests::{self, Endpoint, WebhookOptions},
        router::Router,
        ClusterFacts, NoCluster, Settings,
    },
    certs::{self, rotation::Timing, CertOptions},
    cluster::{
        self,
        certsecret::{CertSecret, Managed},
        discovery::{Discovery, KubeDiscovery, ResourceNames},
        objects::ObjectReader,
        sar::{KubeAuthorizer, SarClient},
    },
    controllers,
    jobs::policy::{PolicyError, PolicySet},
    server::{self, Limits, Readiness, ServeOptions},
};
use crate::{metrics::Metrics, tls::CertStore};

#[derive(Debug, Parser)]
#[command(
    name = "batchgate",
    version,
    about = "Admission webhook for queued batch work, wire-compatible with Kueue"
)]
pub struct Cli {
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate a CA and a serving certificate signed by it.
    Certs(CertsArgs),
    /// Run the admission webhook server.
    Serve(Box<ServeArgs>),
    /// Print the webhook configurations for the loaded policies.
    Webhooks(WebhooksArgs),
    /// Print the CustomResourceDefinitions batchgate serves (kueue.x-k8s.io v1beta2, and v1beta1 through the /convert webhook).
    Crds(CrdsArgs),
    /// Place a pod's device claims on nodes with DevicePools (devmgmtproto.k8s.io/v1alpha1), offline or against a cluster.
    Schedule(Box<schedule::ScheduleArgs>),
    /// Wait until the real run a primed pod was started for (the init
    /// container of a PreScaledCronJob's CronJob), then exit 0.
    PrescaleWait(crate::cli::prescale_wait::WaitArgs),
    /// Start a local control plane (built from Go modules on first use), run
    /// batchgate against it set up as Kueue's quick start, and print a tour
    /// (what `make dev` runs; not in the container image's build).
    #[cfg(feature = "dev")]
    Dev(dev::DevArgs),
}

#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Write one file per kind into this directory (as manifests/crds/) instead of printing.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// URL base the apiserver calls for conversion (`<url>/convert`), e.g. https://127.0.0.1:9443 (default: the in-cluster Service).
    #[arg(long)]
    pub url: Option<String>,
    /// A PEM CA file to put in the conversion webhook's caBundle.
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
    #[arg(long, default_value = crate::api::DEFAULT_NAMESPACE)]
    pub namespace: String,
    #[arg(long, default_value = "batchgate-webhook")]
    pub service: String,
    /// Annotate the converted CRDs for cert-manager's CA injector: <namespace>/<certificate>.
    #[arg(long)]
    pub inject_ca_from: Option<String>,
    /// Only the CRDs registered with the conversion webhook (ClusterQueue, Cohort, LocalQueue, Workload).
    #[arg(long)]
    pub converted_only: bool,
}

#[derive(Debug, Args)]
pub struct CertsArgs {
    /// Directory for ca.crt, tls.crt and tls.key.
    #[arg(long)]
    pub out: PathBuf,
    /// Service name the apiserver dials.
    #[arg(long, default_value = "batchgate-webhook")]
    pub service: String,
    #[arg(long, default_value = crate::api::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Extra DNS names (repeatable).
    #[arg(long = "dns")]
    pub dns: Vec<String>,
    /// Extra IP addresses (repeatable); 127.0.0.1 is always included.
    #[arg(long = "ip")]
    pub ips: Vec<IpAddr>,
    /// Serving certificate lifetime in days.
    #[arg(long, default_value_t = 365)]
    pub days: i64,
    /// Print the base64 caBundle for webhook configurations.
    #[arg(long)]
    pub print_ca_bundle: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Directory holding tls.crt and tls.key (reloaded when they change).
    #[arg(long)]
    pub cert_dir: Option<PathBuf>,
    /// Generate a CA and certificate into a temporary directory and print the caBundle.
    #[arg(long, conflicts_with = "cert_dir")]
    pub self_signed: bool,
    /// Read the serving pair from this Secret (NAMESPACE/NAME) through the API.
    #[arg(long, conflicts_with_all = ["cert_dir", "self_signed"])]
    pub cert_secret: Option<String>,
    /// With --cert-secret: create, renew and rotate it, and publish its CA
    /// bundle in batchgate's webhook configurations.
    #[arg(long, requires = "cert_secret")]
    pub manage_certs: bool,
    /// HTTPS listener for /mutate and /validate.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Plain-HTTP listener for /healthz, /readyz and /metrics.
    #[arg(long)]
    pub probe_listen: Option<SocketAddr>,
    /// HTTPS listener for Kueue's visibility API (visibility.kueue.x-k8s.io,
    /// behind an APIService); Kueue's port by default. Not with --no-cluster.
    #[arg(long, default_value = "0.0.0.0:8082")]
    pub visibility_listen: SocketAddr,
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Directory of policy files replacing the built-in ones.
    #[arg(long)]
    pub policies: Option<PathBuf>,
    /// Run without any API connection (namespace labels, default queues off).
    #[arg(long)]
    pub no_cluster: bool,
    /// Who admits Workloads: `builtin` (batchgate's engine and job
    /// reconciler, the default) or `external` (an upstream Kueue does; only
    /// the webhook runs).
    #[arg(long, value_parser = ["builtin", "external"])]
    pub admission: Option<String>,
    #[arg(long)]
    pub manage_jobs_without_queue_name: bool,
    /// Largest request body accepted, in bytes.
    #[arg(long)]
    pub max_body_bytes: Option<usize>,
    /// Seconds to keep serving after SIGTERM with readiness false.
    #[arg(long)]
    pub shutdown_delay: Option<f64>,
    /// Seconds in-flight reviews get to finish after the listener closes.
    #[arg(long)]
    pub drain_timeout: Option<f64>,
    /// Seconds between checks of the cert directory.
    #[arg(long, default_value_t = 2.0)]
    pub cert_reload_interval: f64,
}

#[derive(Debug, Args)]
pub struct WebhooksArgs {
    /// URL base the apiserver calls, e.g. https://127.0.0.1:9443 (default: the in-cluster Service).
    #[arg(long)]
    pub url: Option<String>,
    /// A PEM CA file to put in caBundle.
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
    #[arg(long, default_value = "Fail")]
    pub failure_policy: String,
    #[arg(long, default_value = crate::api::DEFAULT_NAMESPACE)]
    pub namespace: String,
    #[arg(long, default_value = "batchgate-webhook")]
    pub service: String,
    /// Annotate for cert-manager's CA injector: <namespace>/<certificate>.
    #[arg(long)]
    pub inject_ca_from: Option<String>,
    /// Directory of policy files replacing the built-in ones.
    #[arg(long)]
    pub policies: Option<PathBuf>,
    /// The serve configuration: its policies and enabled integrations decide the rules.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The ServiceAccount (in --namespace) batchgate runs as: its own writes
    /// skip the validating webhooks. Empty: nobody is exempt.
    #[arg(long, default_value = "batchgate")]
    pub service_account: String,
}

/// What is logged when `RUST_LOG` is unset.
pub const DEFAULT_LOG_FILTER: &str = "info,hyper=warn,kube=warn,rustls=warn";

/// Logs to stderr, filtered by `RUST_LOG`, else by `default_filter`;
/// coloured only when stderr is a terminal.
pub fn init_logging(format: LogFormat, default_filter: &str) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => b.json().init(),
        LogFormat::Text => b.init(),
    }
}

pub fn certs(a: CertsArgs) -> Result<()> {
    if a.days < 1 {
        bail!("--days must be at least 1");
    }
    let opts = CertOptions {
        service: a.service,
        namespace: a.namespace,
        dns: a.dns,
        ips: a.ips,
        cert_validity_secs: a.days * 86_400,
        ..CertOptions::default()
    };
    let bundle = certs::generate(&opts, OffsetDateTime::now_utc())?;
    crate::tls::write(&a.out, &bundle)?;
    if a.print_ca_bundle {
        emit(&format!("{}\n", certs::ca_bundle(&bundle.ca_pem)))?;
    } else {
        eprintln!("wrote {}/{{ca.crt,tls.crt,tls.key}}", a.out.display());
    }
    Ok(())
}

/// Writes a command's output to stdout. A reader that stopped reading
/// (`batchgate crds | head`) ends the command quietly, as it would end `cat`.
fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// A line for whoever watches the server start; lost if no one reads.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}

fn load_config(path: Option<&PathBuf>) -> Result<Config> {
    Ok(match path {
        Some(p) => read_config(p)?,
        None => Config::default(),
    })
}

/// The policies in force: `--policies`, else `integrations.policiesDir`, else
/// the built-in ones; narrowed to `integrations.frameworks` when set.
fn enabled_policies(flag: Option<&PathBuf>, cfg: &Config) -> Result<PolicySet> {
    let mut policies = match flag.or(cfg.integrations.policies_dir.as_ref()) {
        Some(d) => read_policies(d)?,
        None => PolicySet::embedded()?,
    };
    if let Some(enabled) = &cfg.integrations.frameworks {
        for name in enabled {
            if !policies.iter().any(|p| &p.name == name) {
                let known: Vec<_> = policies.iter().map(|p| p.name.as_str()).collect();
                bail!(
                    "integrations.frameworks names {name:?}, which no policy describes; known: {}",
                    known.join(", ")
                );
            }
        }
        policies.retain_enabled(enabled);
    } else {
        policies.retain_default();
    }
    Ok(policies)
}

pub fn webhooks(a: WebhooksArgs) -> Result<()> {
    let cfg = load_config(a.config.as_ref())?;
    let policies = enabled_policies(a.policies.as_ref(), &cfg)?;
    let ca_bundle = match &a.ca_file {
        Some(f) => Some(certs::ca_bundle(
            &std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
        )),
        None => None,
    };
    if !matches!(a.failure_policy.as_str(), "Fail" | "Ignore") {
        bail!(
            "--failure-policy must be Fail or Ignore, got {:?}",
            a.failure_policy
        );
    }
    let opts = WebhookOptions {
        endpoint: match a.url {
            Some(u) => Endpoint::Url(u),
            None => Endpoint::Service {
                namespace: a.namespace.clone(),
                name: a.service,
                port: 443,
            },
        },
        ca_bundle,
        failure_policy: a.failure_policy,
        timeout_seconds: 10,
        reconciler_user: (!a.service_account.is_empty())
            .then(|| manifests::service_account_user(&a.namespace, &a.service_account)),
        namespace: a.namespace,
        inject_ca_from: a.inject_ca_from,
    };
    emit(&manifests::to_yaml(
        "",
        &manifests::webhook_configurations(&policies, &opts),
    ))
}

pub fn crds(a: CrdsArgs) -> Result<()> {
    use serde_json::json;
    let mut client_config = match &a.url {
        Some(u) => json!({"url": format!("{}/convert", u.trim_end_matches('/'))}),
        None => json!({"service": {
            "namespace": a.namespace, "name": a.service, "path": "/convert", "port": 443,
        }}),
    };
    if let Some(f) = &a.ca_file {
        client_config["caBundle"] = json!(certs::ca_bundle(
            &std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
        ));
    }
    let crds = crate::api::crd::all_with(&crate::api::crd::Conversion {
        client_config,
        inject_ca_from: a.inject_ca_from,
    })
    .into_iter()
    .filter(|g| !a.converted_only || g.crd["spec"]["conversion"]["strategy"] == "Webhook")
    .collect::<Vec<_>>();
    match a.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            for g in &crds {
                let path = dir.join(&g.file_name);
                std::fs::write(&path, crate::api::crd::to_yaml(&g.crd))
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
        None => {
            for g in &crds {
                emit(&crate::api::crd::to_yaml(&g.crd))?;
            }
        }
    }
    Ok(())
}

fn secs(v: f64, flag: &str) -> Result<Duration> {
    if !(0.0..=3600.0).contains(&v) {
        bail!("{flag} must be between 0 and 3600 seconds, got {v}");
    }
    Ok(Duration::from_secs_f64(v))
}

/// Limits from the flags, else the config file, else the defaults.
fn limits(a: &ServeArgs, cfg: &Config) -> Result<Limits> {
    let mut limits = Limits::default();
    let w = &cfg.webhook;
    if let Some(v) = a.max_body_bytes.or(w.max_body_bytes) {
        limits.max_body_bytes = v;
    }
    if let Some(v) = w.max_connections {
        limits.max_connections = v.max(1);
    }
    if let Some(v) = w.handshake_timeout_seconds {
        limits.handshake_timeout = v;
    }
    if let Some(v) = w.header_read_timeout_seconds {
        limits.header_read_timeout = v;
    }
    if let Some(v) = w.body_timeout_seconds {
        limits.body_timeout = v;
    }
    if let Some(v) = w.max_body_bytes_in_flight {
        limits.max_body_bytes_in_flight = v;
    }
    let set = |slot: &mut Duration, v: Option<Duration>| {
        if let Some(v) = v {
            *slot = v;
        }
    };
    set(&mut limits.body_budget_wait, w.body_budget_wait_seconds);
    set(
        &mut limits.first_request_timeout,
        w.first_request_timeout_seconds,
    );
    set(&mut limits.idle_timeout, w.idle_timeout_seconds);
    set(&mut limits.write_timeout, w.write_timeout_seconds);
    set(
        &mut limits.http2_keep_alive_interval,
        w.http2_keep_alive_interval_seconds,
    );
    set(
        &mut limits.http2_keep_alive_timeout,
        w.http2_keep_alive_timeout_seconds,
    );
    set(&mut limits.drain_grace, w.drain_grace_seconds);
    limits.shutdown_delay = match a.shutdown_delay {
        Some(s) => secs(s, "--shutdown-delay")?,
        None => w.shutdown_delay_seconds.unwrap_or(limits.shutdown_delay),
    };
    limits.drain_timeout = match a.drain_timeout {
        Some(s) => secs(s, "--drain-timeout")?,
        None => w.drain_timeout_seconds.unwrap_or(limits.drain_timeout),
    };
    limits.cert_reload_interval =
        secs(a.cert_reload_interval, "--cert-reload-interval")?.max(Duration::from_millis(100));

    if limits.max_body_bytes < 64 * 1024 {
        bail!(
            "the request body limit must be at least 65536 bytes (an AdmissionReview of a small Job is a few KiB), got {}",
            limits.max_body_bytes
        );
    }
    if limits.max_body_bytes_in_flight < limits.max_body_bytes / 3 * 4 {
        bail!(
            "webhook.maxBodyBytesInFlight ({}) must be at least 4/3 of the request body limit ({}): large bodies may use three quarters of it, and one body of the largest size must fit",
            limits.max_body_bytes_in_flight,
            limits.max_body_bytes
        );
    }
    Ok(limits)
}

pub async fn serve(a: ServeArgs) -> Result<()> {
    let cfg = load_config(a.config.as_ref())?;
    let policies = enabled_policies(a.policies.as_ref(), &cfg)?;
    let settings = Settings {
        manage_jobs_without_queue_name: a.manage_jobs_without_queue_name
            || cfg.manage_jobs_without_queue_name.unwrap_or(false),
        managed_namespaces: cfg.managed_namespaces(),
    };

    let limits = limits(&a, &cfg)?;
    let w = &cfg.webhook;

    let secret = a
        .cert_secret
        .clone()
        .or_else(|| cfg.certificates.secret.clone());
    // Keep a generated temp dir alive for the life of the server.
    let mut _self_signed_dir = None;
    let cert_dir = if a.self_signed {
        let dir = tempfile::tempdir().context("creating a temporary cert directory")?;
        let bundle = certs::generate(&CertOptions::default(), OffsetDateTime::now_utc())?;
        crate::tls::write(dir.path(), &bundle)?;
        say(format_args!(
            "caBundle: {}",
            certs::ca_bundle(&bundle.ca_pem)
        ));
        say(format_args!(
            "CA file:  {}",
            dir.path().join(certs::CA_FILE).display()
        ));
        let p = dir.path().to_path_buf();
        _self_signed_dir = Some(dir);
        Some(p)
    } else if secret.is_some() {
        None
    } else {
        match a.cert_dir.clone().or_else(|| w.cert_dir.clone()) {
            Some(d) => Some(d),
            None => bail!("no certificate: give --cert-dir DIR (with tls.crt and tls.key), --cert-secret NAMESPACE/NAME, set webhook.certDir in --config, or use --self-signed"),
        }
    };
    if secret.is_some() && a.no_cluster {
        bail!(
            "--cert-secret reads the Secret through the API and cannot be used with --no-cluster"
        );
    }

    let readiness = Arc::new(Readiness::default());
    let mut client = None;
    let mut reconcile_client = None;
    let facts: Arc<dyn ClusterFacts> = if a.no_cluster {
        info!("--no-cluster: no API connection; namespaces are matched by name only, default LocalQueue and WorkloadPriorityClass lookups are off");
        readiness.caches_synced.store(true, Ordering::Release);
        Arc::new(NoCluster)
    } else {
        let (c, cache, synced) = cluster::connect().await?;
        reconcile_client = Some(c.clone());
        client = Some(c);
        let r = readiness.clone();
        tokio::spawn(async move {
            match synced.await {
                Ok(()) => {
                    r.caches_synced.store(true, Ordering::Release);
                    info!("cluster caches synced");
                }
                Err(e) => error!(error = %e, "cluster caches did not sync"),
            }
        });
        cache
    };
    info!(
        integrations = %policies.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(","),
        manage_jobs_without_queue_name = settings.manage_jobs_without_queue_name,
        "policies loaded"
    );

    let metrics = Arc::new(Metrics::with_kueue(crate::metrics::kueue::Options {
        cluster_queue_resources: cfg.metrics.enable_cluster_queue_resources.unwrap_or(false),
        local_queues: cfg.metrics.local_queue_metrics.enable.unwrap_or(true),
    }));
    let store = match (&cert_dir, &secret, client) {
        (Some(dir), _, _) => CertStore::load(dir.clone())?,
        (None, Some(secret), Some(client)) => {
            let (ns, name) = secret
                .split_once('/')
                .filter(|(ns, name)| !ns.is_empty() && !name.is_empty())
                .with_context(|| format!("certificate Secret {secret:?} must be NAMESPACE/NAME"))?;
            let managed = (a.manage_certs || cfg.certificates.manage.unwrap_or(false))
                .then(|| managed_certs(&cfg))
                .transpose()?;
            let every = cfg
                .certificates
                .sync_interval_seconds
                .unwrap_or(Duration::from_secs(10));
            let cs = CertSecret::new(client, ns, name, managed);
            let (_, store) = cs.bootstrap().await?;
            info!(secret = %secret, managed = a.manage_certs || cfg.certificates.manage.unwrap_or(false), "serving certificate read from Secret");
            tokio::spawn(cs.run(
                store.clone(),
                metrics.clone(),
                every,
                std::future::pending(),
            ));
            store
        }
        _ => bail!("no certificate source"),
    };

    let mode = match a.admission.as_deref() {
        Some("external") => AdmissionMode::External,
        Some(_) => AdmissionMode::Builtin,
        None => cfg.admission.unwrap_or_default(),
    };
    let lease = cfg
        .reconciler
        .lease_duration_seconds
        .unwrap_or(Duration::from_secs(15));
    // The reconciler writes through its own client, fenced by the lease;
    // the Lease itself, the webhook's SubjectAccessReviews and the
    // certificate Secret go through the unfenced one.
    let fence = Arc::new(controllers::lease::Fence::default());
    // The queueing controller's pending queues, read by the visibility API.
    let positions = crate::cluster::positions::Positions::default();
    let client_config = match &reconcile_client {
        Some(_) => Some(
            kube::Config::infer()
                .await
                .context("reading the kube client configuration")?,
        ),
        None => None,
    };
    let elector = reconcile_client.as_ref().map(|c| {
        Arc::new(controllers::lease::Elector::new(
            c.clone(),
            cfg.namespace(),
            lease,
            fence.clone(),
            client_config.clone(),
        ))
    });
    let fenced = match (&elector, client_config) {
        (Some(_), Some(config)) => {
            Some(
                kube::client::ClientBuilder::try_from(config)
                    .context("building the reconciler's kube client")?
                    .with_layer(&controllers::lease::FenceLayer(fence.clone()))
                    // Outside the fence: a write is checked when it is sent,
                    // not when it starts waiting for its token.
                    .with_layer(&controllers::throttle::ThrottleLayer({
                        let (qps, burst) = cfg.client_connection.settings();
                        Arc::new(controllers::throttle::Throttle::new(qps, burst))
                    }))
                    .build(),
            )
        }
        _ => None,
    };
    let prescaler = prescaler_settings(&cfg, reconcile_client.as_ref()).await;
    match (elector.clone().zip(fenced), mode) {
        (Some((e, fenced)), AdmissionMode::Builtin) => {
            tokio::spawn(controllers::run(
                fenced,
                policies.clone(),
                e,
                prescaler.clone(),
                positions.clone(),
                metrics.kueue.clone(),
                // Validated when the file was read.
                cfg.wait_for_pods_ready.settings().ok().flatten(),
                cfg.fair_sharing
                    .as_ref()
                    .and_then(|f| f.settings().ok().flatten()),
                cfg.admission_fair_sharing
                    .as_ref()
                    .and_then(|a| a.settings().ok()),
                cfg.claims().unwrap_or_default(),
                // Validated when the file was read.
                cfg.appwrapper.operator().unwrap_or_default(),
                metrics.prescale.clone(),
                cfg.namespace().to_string(),
                // Validated when the file was read.
                cfg.multikueue().unwrap_or_default(),
                settings.manage_jobs_without_queue_name,
                cfg.equivalence_hashing(),
            ));
        }
        (Some((e, fenced)), AdmissionMode::External) => {
            info!("admission: external — Workloads are admitted by an upstream Kueue; only the AppWrapper controller runs here (no Workloads, no queueing, no job reconcilers)");
            tokio::spawn(controllers::run_external(
                fenced,
                e,
                prescaler.clone(),
                cfg.appwrapper.operator().unwrap_or_default(),
                metrics.prescale.clone(),
            ));
        }
        (None, _) => info!("--no-cluster: no reconciler runs"),
    }
    // AppWrapper components are checked by kind → resource names found by
    // discovery (kept once found); without a cluster every component is
    // checked as `*` of its group.
    let resources =
        Arc::new(ResourceNames::new(reconcile_client.as_ref().map(|c| {
            Arc::new(KubeDiscovery::new(c.clone())) as Arc<dyn Discovery>
        })));
    let aw = cfg.appwrapper.settings();
    info!(
        user_rbac_admission_check = aw.user_rbac_admission_check,
        default_queue_name = aw.default_queue_name.as_deref().unwrap_or(""),
        "AppWrapper admission ready"
    );
    if a.no_cluster && aw.user_rbac_admission_check {
        // Fail closed: without an authorizer to ask, a component check
        // cannot pass, so every AppWrapper create is refused with 503.
        warn!("--no-cluster: AppWrapper creates are refused (503) because appwrapper.userRBACAdmissionCheck is on and there is no SubjectAccessReview client; set appwrapper.userRBACAdmissionCheck: false in --config to admit them unchecked");
    }
    let webhook = Arc::new(
        Router::new(
            policies,
            settings,
            facts,
            Arc::new(|| chrono::Utc::now().date_naive()),
        )
        .with_appwrapper(aw, resources),
    );
    // Entitlement opt-ins live in the cluster, so without one no review
    // needs a SubjectAccessReview.
    let sar = reconcile_client.as_ref().map(|c| {
        let e = cfg.entitlement.settings();
        info!(allowed_ttl = ?e.cache.allowed_ttl, denied_ttl = ?e.cache.denied_ttl,
              max_entries = e.cache.max_entries, on_error = e.on_error.as_str(), "entitlement checks ready");
        SarClient::new(KubeAuthorizer::new(c.clone()), e, metrics.clone())
    });
    if let (Some(c), Some(sar)) = (&reconcile_client, &sar) {
        let addr = server::visibility::serve(
            a.visibility_listen,
            store.clone(),
            c.clone(),
            sar.clone(),
            positions,
        )
        .await?;
        say(format_args!("visibility API listening on https://{addr}"));
    }
    let opts = ServeOptions {
        listen: a
            .listen
            .or(w.listen)
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 9443))),
        probe_listen: a
            .probe_listen
            .or(cfg.probes.listen)
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 8081))),
        limits: limits.clone(),
    };

    let (sig_tx, sig_rx) = tokio::sync::oneshot::channel::<()>();
    let r = readiness.clone();
    let delay = limits.shutdown_delay;
    tokio::spawn(async move {
        wait_for_signal().await;
        r.draining.store(true, Ordering::Release);
        info!(delay = ?delay, "shutdown requested: readiness is now false");
        let serving = tokio::time::sleep(delay);
        // Meanwhile the reconciler stops writing and hands its lease over.
        if let Some(e) = elector {
            e.step_down(RECONCILER_DRAIN).await;
        }
        serving.await;
        let _ = sig_tx.send(());
    });
    let asks = server::ClusterAsks {
        sar,
        objects: reconcile_client.clone().map(ObjectReader::new),
    };
    let bound = server::bind(opts, store, webhook, asks, metrics, readiness, async move {
        let _ = sig_rx.await;
    })
    .await?;
    say(format_args!(
        "webhook listening on https://{}",
        bound.webhook_addr
    ));
    say(format_args!(
        "probes listening on http://{}",
        bound.probe_addr
    ));
    bound.run.await?;
    Ok(())
}

/// The PreScaledCronJob settings: `prescaler.image` when configured, else
/// the image of the container batchgate runs in (its Pod named by the
/// `POD_NAME`/`POD_NAMESPACE` the shipped Deployment sets through the
/// downward API), else the default: the wait container runs the image the
/// Deployment runs, wherever it was pushed.
async fn prescaler_settings(
    cfg: &Config,
    client: Option<&kube::Client>,
) -> controllers::prescale::Settings {
    let mut settings = cfg.prescaler.settings();
    if cfg.prescaler.image.as_ref().is_some_and(|i| !i.is_empty()) {
        return settings;
    }
    let (Some(client), Ok(name), Ok(ns)) = (
        client,
        std::env::var("POD_NAME"),
        std::env::var("POD_NAMESPACE"),
    ) else {
        return settings;
    };
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), &ns);
    match pods.get(&name).await {
        Ok(pod) => match own_image(&pod) {
            Some(image) => settings.image = image,
            None => {
                warn!(pod = %name, "no container named batchgate in this pod; the PreScaledCronJob wait container uses {}; set prescaler.image", settings.image)
            }
        },
        Err(e) => {
            warn!(pod = %name, error = %e, "reading this pod for its image; the PreScaledCronJob wait container uses {}; set prescaler.image", settings.image)
        }
    }
    settings
}

/// The image of the `batchgate` container (the only one, if none has that name).
fn own_image(pod: &k8s_openapi::api::core::v1::Pod) -> Option<String> {
    let containers = &pod.spec.as_ref()?.containers;
    containers
        .iter()
        .find(|c| c.name == "batchgate")
        .or_else(|| (containers.len() == 1).then(|| &containers[0]))
        .and_then(|c| c.image.clone())
}

/// How long writes already sent by the reconciler get to finish on
/// shutdown before its lease is released.
const RECONCILER_DRAIN: Duration = Duration::from_secs(5);

fn managed_certs(cfg: &Config) -> Result<Managed> {
    let c = &cfg.certificates;
    let d = Timing::default();
    let timing = Timing {
        ca_validity_secs: c.ca_validity_seconds.unwrap_or(d.ca_validity_secs),
        cert_validity_secs: c.cert_validity_seconds.unwrap_or(d.cert_validity_secs),
        ca_renew_before_secs: c.ca_renew_before_seconds.unwrap_or(d.ca_renew_before_secs),
        cert_renew_before_secs: c
            .cert_renew_before_seconds
            .unwrap_or(d.cert_renew_before_secs),
        overlap_secs: c.overlap_seconds.unwrap_or(d.overlap_secs),
    };
    timing
        .validate()
        .map_err(|m| anyhow::anyhow!("certificates: {m}"))?;
    Ok(Managed {
        timing,
        names: CertOptions {
            service: c
                .service
                .clone()
                .unwrap_or_else(|| "batchgate-webhook".into()),
            namespace: cfg.namespace().to_string(),
            dns: c.dns_names.clone(),
            ips: c.ip_addresses.clone(),
            ..CertOptions::default()
        },
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(e) => {
            warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops the server");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Reads and parses the configuration file (the file read is the shell's;
/// the parse is [`Config::parse`]).
fn read_config(path: &std::path::Path) -> Result<Config, crate::config::ConfigError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| crate::config::ConfigError::Io {
        path: p.clone(),
        source,
    })?;
    Config::parse(&p, &text)
}

/// Every `*.yaml`/`*.yml` file in `dir`, as policies.
fn read_policies(dir: &std::path::Path) -> Result<PolicySet, PolicyError> {
    let io = |source| PolicyError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            let text = std::fs::read_to_string(&path).map_err(|source| PolicyError::Io {
                path: path.display().to_string(),
                source,
            })?;
            files.push((path.display().to_string(), text));
        }
    }
    files.sort();
    PolicySet::from_files(files.into_iter())
}

#[cfg(test)]
mod tests {
    use super::own_image;

    fn pod(containers: serde_json::Value) -> k8s_openapi::api::core::v1::Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "batchgate-0"},
            "spec": {"containers": containers},
        }))
        .unwrap()
    }

    #[test]
    fn the_wait_image_is_the_batchgate_containers() {
        let two = pod(serde_json::json!([
            {"name": "sidecar", "image": "proxy:1"},
            {"name": "batchgate", "image": "registry.example/batchgate:v0.1.0"},
        ]));
        assert_eq!(
            own_image(&two).as_deref(),
            Some("registry.example/batchgate:v0.1.0")
        );
        let one = pod(serde_json::json!([{"name": "main", "image": "me/batchgate@sha256:ab"}]));
        assert_eq!(own_image(&one).as_deref(), Some("me/batchgate@sha256:ab"));
        let other = pod(serde_json::json!([
            {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"},
        ]));
        assert_eq!(own_image(&other), None);
    }
}
