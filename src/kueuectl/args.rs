//! The command line of `kubectl-kueue` (also runnable as `kueuectl`):
//! upstream kueuectl's commands, aliases and flags.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "kubectl-kueue",
    version,
    about = "Controls Kueue queueing on batchgate: create, list, stop and resume queues and workloads",
    long_about = None
)]
pub struct Cli {
    #[command(flatten)]
    pub kube: KubeFlags,
    /// None: no command given; the help is printed (exit 0, as upstream).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How the cluster is reached: kubectl's global flags (upstream's
/// `genericclioptions.ConfigFlags`), applied over the kubeconfig as
/// kubectl applies them.
#[derive(Args, Debug, Clone, Default)]
pub struct KubeFlags {
    /// Path to the kubeconfig file to use for CLI requests.
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Default cache directory (accepted for kubectl compatibility; kubectl kueue keeps no discovery cache).
    #[arg(long = "cache-dir", global = true, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Path to a client certificate file for TLS
    #[arg(long = "client-certificate", global = true, value_name = "PATH")]
    pub client_certificate: Option<String>,
    /// Path to a client key file for TLS
    #[arg(long = "client-key", global = true, value_name = "PATH")]
    pub client_key: Option<String>,
    /// Bearer token for authentication to the API server
    #[arg(long, global = true)]
    pub token: Option<String>,
    /// Username to impersonate for the operation. User could be a regular user or a service account in a namespace.
    #[arg(long = "as", global = true)]
    pub as_user: Option<String>,
    /// UID to impersonate for the operation.
    #[arg(long = "as-uid", global = true)]
    pub as_uid: Option<String>,
    /// Group to impersonate for the operation, this flag can be repeated to specify multiple groups.
    #[arg(long = "as-group", global = true)]
    pub as_group: Vec<String>,
    /// User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.
    #[arg(long = "as-user-extra", global = true)]
    pub as_user_extra: Vec<String>,
    /// The name of the kubeconfig cluster to use
    #[arg(long, global = true)]
    pub cluster: Option<String>,
    /// The name of the kubeconfig user to use
    #[arg(long, global = true)]
    pub user: Option<String>,
    /// If present, the namespace scope for this CLI request
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// The name of the kubeconfig context to use
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// The address and port of the Kubernetes API server
    #[arg(short = 's', long, global = true)]
    pub server: Option<String>,
    /// Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used
    #[arg(long = "tls-server-name", global = true)]
    pub tls_server_name: Option<String>,
    /// If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure
    #[arg(long = "insecure-skip-tls-verify", global = true, num_args = 0..=1, default_missing_value = "true")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// Path to a cert file for the certificate authority
    #[arg(long = "certificate-authority", global = true, value_name = "PATH")]
    pub certificate_authority: Option<String>,
    /// The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.
    #[arg(long = "request-timeout", global = true, default_value = "0")]
    pub request_timeout: String,
    /// If true, opt-out of response compression for all requests to the server (kubectl kueue never asks for compression)
    #[arg(long = "disable-compression", global = true, num_args = 0..=1, default_missing_value = "true")]
    pub disable_compression: Option<bool>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create a resource
    Create {
        #[command(subcommand)]
        what: CreateCommand,
    },
    /// Display resources
    List {
        #[command(subcommand)]
        what: ListCommand,
    },
    /// Stop execution of a resource
    Stop {
        #[command(subcommand)]
        what: StopCommand,
    },
    /// Resume execution of a resource
    Resume {
        #[command(subcommand)]
        what: ResumeCommand,
    },
    /// Delete resources (workload natively, others through kubectl)
    Delete {
        #[command(subcommand)]
        what: DeleteCommand,
    },
    /// Pass-through "get" to kubectl
    Get {
        #[command(subcommand)]
        what: PassThrough,
    },
    /// Pass-through "describe" to kubectl
    Describe {
        #[command(subcommand)]
        what: PassThrough,
    },
    /// Pass-through "edit" to kubectl
    Edit {
        #[command(subcommand)]
        what: PassThrough,
    },
    /// Pass-through "patch" to kubectl
    Patch {
        #[command(subcommand)]
        what: PassThrough,
    },
    /// Explain why a Workload (or a job's Workloads) waits: its place in the queue, what falls short at each level of the cohort tree, whom it would preempt, the admission checks it waits for
    Explain {
        /// `workload` (or wl), or the kind of the job that owns the Workloads (job, jobset, rayjob, ...)
        kind: String,
        name: String,
        /// Output format. One of: (json, yaml). Plain words without it.
        #[arg(short = 'o', long = "output")]
        output: Option<String>,
    },
    /// Simulate a job (or Workload) manifest: would it be admitted now, on which flavor, whom would it preempt; nothing is created
    Simulate {
        /// The manifest (a job of an integrated kind, or a Workload); - for stdin
        #[arg(short = 'f', long = "filename")]
        filename: String,
        /// Output format. One of: (json, yaml). Plain words without it.
        #[arg(short = 'o', long = "output")]
        output: Option<String>,
    },
    /// Prints the client version and the batchgate version found in the cluster
    Version,
    /// Generate a shell completion script
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// `--dry-run` and `-o` of create, stop and resume.
#[derive(Args, Debug, Clone, Default)]
pub struct WriteFlags {
    /// Must be "none", "server", or "client". If client strategy, only print
    /// the object that would be sent, without sending it. If server
    /// strategy, submit server-side request without persisting the resource.
    #[arg(
        long = "dry-run",
        default_value = "none",
        value_name = "none|server|client"
    )]
    pub dry_run: String,
    /// Output format. One of: (go-template, go-template-file, json, jsonpath, jsonpath-as-json, jsonpath-file, name, template, templatefile, yaml).
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// If true, keep the managedFields when printing objects in JSON or YAML format.
    #[arg(long = "show-managed-fields")]
    pub show_managed_fields: bool,
    #[command(flatten)]
    pub templates: TemplateFlags,
}

#[derive(Subcommand, Debug)]
pub enum CreateCommand {
    /// Creates a clusterqueue
    #[command(visible_alias = "cq")]
    Clusterqueue(CreateClusterQueue),
    /// Creates a localqueue
    #[command(visible_alias = "lq")]
    Localqueue(CreateLocalQueue),
    /// Creates a resourceflavor
    #[command(visible_alias = "rf")]
    Resourceflavor(CreateResourceFlavor),
}

#[derive(Args, Debug)]
pub struct CreateClusterQueue {
    pub name: String,
    /// The cohort that this ClusterQueue belongs to.
    #[arg(long)]
    pub cohort: Option<String>,
    /// The queueing strategy of the workloads across the queues in this ClusterQueue.
    #[arg(long = "queuing-strategy", value_name = "StrictFIFO|BestEffortFIFO")]
    pub queuing_strategy: Option<String>,
    /// Defines which namespaces are allowed to submit workloads to this clusterQueue.
    #[arg(
        long = "namespace-selector",
        value_name = "key=value,...",
        value_delimiter = ','
    )]
    pub namespace_selector: Vec<String>,
    /// Determines whether a pending Workload can preempt Workloads from other
    /// ClusterQueues in the cohort that are using more than their nominal quota.
    #[arg(long = "reclaim-within-cohort")]
    pub reclaim_within_cohort: Option<String>,
    /// Determines whether a pending Workload that doesn't fit within the
    /// nominal quota for its ClusterQueue, can preempt active Workloads in the ClusterQueue.
    #[arg(long = "preemption-within-cluster-queue")]
    pub preemption_within_cluster_queue: Option<String>,
    /// The quantity of this resource that is available for Workloads
    /// admitted by this ClusterQueue at a point in time.
    #[arg(
        long = "nominal-quota",
        value_name = "rf:res=val;res=val,...",
        value_delimiter = ','
    )]
    pub nominal_quota: Vec<String>,
    /// The maximum amount of quota for the [flavor, resource] combination
    /// that this ClusterQueue is allowed to borrow from the unused quota of
    /// other ClusterQueues in the same cohort.
    #[arg(
        long = "borrowing-limit",
        value_name = "rf:res=val;res=val,...",
        value_delimiter = ','
    )]
    pub borrowing_limit: Vec<String>,
    /// The maximum amount of unused quota for the [flavor, resource]
    /// combination that this ClusterQueue can lend to other ClusterQueues in the same cohort.
    #[arg(
        long = "lending-limit",
        value_name = "rf:res=val;res=val,...",
        value_delimiter = ','
    )]
    pub lending_limit: Vec<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct CreateLocalQueue {
    pub name: String,
    /// The cluster queue name which will be associated with the local queue.
    #[arg(short = 'c', long = "clusterqueue")]
    pub clusterqueue: String,
    /// Ignore unknown cluster queue.
    #[arg(short = 'i', long = "ignore-unknown-cq")]
    pub ignore_unknown_cq: bool,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct CreateResourceFlavor {
    pub name: String,
    /// Labels that associate the ResourceFlavor with Nodes that have the same labels.
    #[arg(
        long = "node-labels",
        value_name = "key=value,...",
        value_delimiter = ','
    )]
    pub node_labels: Vec<String>,
    /// Taints that the nodes associated with this ResourceFlavor have.
    #[arg(
        long = "node-taints",
        value_name = "KEY[=VALUE]:EFFECT,...",
        value_delimiter = ','
    )]
    pub node_taints: Vec<String>,
    /// Extra tolerations that will be added to the pods admitted in the
    /// quota associated with this resource flavor.
    #[arg(long, value_name = "KEY[=VALUE][:EFFECT],...", value_delimiter = ',')]
    pub tolerations: Vec<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

/// `--template` and `--allow-missing-template-keys`, as kubectl's
/// PrintFlags define them (taken by `-o` of create, stop, resume and list).
#[derive(Args, Debug, Clone, Default)]
pub struct TemplateFlags {
    /// Template string or path to template file to use when -o=go-template, -o=go-template-file. The template format is golang templates [http://golang.org/pkg/text/template/#pkg-overview].
    #[arg(long = "template")]
    pub template: Option<String>,
    /// If true, ignore any errors in templates when a field or map key is missing in the template. Only applies to golang and jsonpath output formats.
    #[arg(
        long = "allow-missing-template-keys",
        default_value_t = true,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub allow_missing_template_keys: bool,
}

/// `-o` of list.
#[derive(Args, Debug, Clone, Default)]
pub struct ListFlags {
    /// Output format. One of: (go-template, go-template-file, json, jsonpath, jsonpath-as-json, jsonpath-file, name, template, templatefile, yaml), and `wide`, `custom-columns=SPEC`, `custom-columns-file=FILE` (additions of kubectl kueue, as kubectl get's).
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// If true, keep the managedFields when printing objects in JSON or YAML format.
    #[arg(long = "show-managed-fields")]
    pub show_managed_fields: bool,
    #[command(flatten)]
    pub templates: TemplateFlags,
    /// Selector (label query) to filter on, supports '=', '==', and '!='.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// Selector (field query) to filter on, supports '=', '==', and '!='.
    #[arg(long = "field-selector")]
    pub field_selector: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum ListCommand {
    /// List ClusterQueues
    #[command(visible_alias = "cq")]
    Clusterqueue {
        /// Filter by active status. Valid values: 'true' and 'false'.
        #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Append)]
        active: Vec<bool>,
        #[command(flatten)]
        list: ListFlags,
    },
    /// List LocalQueue
    #[command(visible_alias = "lq")]
    Localqueue {
        /// Filter by cluster queue name which is associated with the local queue.
        #[arg(short = 'c', long = "clusterqueue")]
        clusterqueue: Option<String>,
        /// If present, list the requested object(s) across all namespaces.
        #[arg(short = 'A', long = "all-namespaces")]
        all_namespaces: bool,
        #[command(flatten)]
        list: ListFlags,
    },
    /// List Workload
    #[command(visible_aliases = ["wl", "kwl", "kueueworkload", "kueueworkloads"])]
    Workload(ListWorkload),
    /// List ResourceFlavor
    #[command(visible_alias = "rf")]
    Resourceflavor {
        #[command(flatten)]
        list: ListFlags,
    },
    /// List Pods of a job
    #[command(visible_alias = "po")]
    Pods {
        /// Filter pods by the specified job: TYPE[.API-GROUP]/NAME.
        #[arg(long = "for", required = true)]
        for_object: String,
        /// If present, list the requested object(s) across all namespaces.
        #[arg(short = 'A', long = "all-namespaces")]
        all_namespaces: bool,
        #[command(flatten)]
        list: ListFlags,
    },
}

#[derive(Args, Debug, Default)]
pub struct ListWorkload {
    /// Filter workloads by cluster queue name.
    #[arg(short = 'c', long = "clusterqueue")]
    pub clusterqueue: Option<String>,
    /// Filter workloads by local queue name.
    #[arg(short = 'q', long = "localqueue")]
    pub localqueue: Option<String>,
    /// Filter workloads by status. Must be "all", "pending", "admitted" or "finished".
    #[arg(long)]
    pub status: Vec<String>,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long = "all-namespaces")]
    pub all_namespaces: bool,
    /// Filter only those pertaining to the specified resource: TYPE[.API-GROUP]/NAME.
    #[arg(long = "for")]
    pub for_object: Option<String>,
    #[command(flatten)]
    pub list: ListFlags,
}

#[derive(Subcommand, Debug)]
pub enum StopCommand {
    /// Stop the Workload
    #[command(visible_aliases = ["kueueworkload", "kueueworkloads", "kwl", "wl"])]
    Workload {
        name: String,
        #[command(flatten)]
        write: WriteFlags,
    },
    /// Stop the ClusterQueue (stopPolicy HoldAndDrain, or Hold with --keep-already-running)
    #[command(visible_alias = "cq")]
    Clusterqueue {
        name: String,
        /// Keep the already running workloads.
        #[arg(long = "keep-already-running")]
        keep_already_running: bool,
        #[command(flatten)]
        write: WriteFlags,
    },
    /// Stop the LocalQueue (stopPolicy HoldAndDrain, or Hold with --keep-already-running)
    #[command(visible_alias = "lq")]
    Localqueue {
        name: String,
        /// Keep the already running workloads.
        #[arg(long = "keep-already-running")]
        keep_already_running: bool,
        #[command(flatten)]
        write: WriteFlags,
    },
}

#[derive(Subcommand, Debug)]
pub enum ResumeCommand {
    /// Resume the Workload
    #[command(visible_aliases = ["kwl", "kueueworkload", "kueueworkloads", "wl"])]
    Workload {
        name: String,
        #[command(flatten)]
        write: WriteFlags,
    },
    /// Resume the ClusterQueue (stopPolicy None)
    #[command(visible_alias = "cq")]
    Clusterqueue {
        name: String,
        #[command(flatten)]
        write: WriteFlags,
    },
    /// Resume the LocalQueue (stopPolicy None)
    #[command(visible_alias = "lq")]
    Localqueue {
        name: String,
        #[command(flatten)]
        write: WriteFlags,
    },
}

#[derive(Subcommand, Debug)]
pub enum DeleteCommand {
    /// Delete Workloads and the jobs that own them
    #[command(visible_aliases = ["wl", "kwl", "kueueworkload", "kueueworkloads"])]
    Workload(DeleteWorkload),
    /// Pass-through "delete clusterqueue" to kubectl
    #[command(visible_alias = "cq")]
    Clusterqueue(PassThroughArgs),
    /// Pass-through "delete localqueue" to kubectl
    #[command(visible_alias = "lq")]
    Localqueue(PassThroughArgs),
    /// Pass-through "delete resourceflavor" to kubectl
    #[command(visible_alias = "rf")]
    Resourceflavor(PassThroughArgs),
}

#[derive(Args, Debug, Default)]
pub struct DeleteWorkload {
    pub names: Vec<String>,
    /// Automatic yes to the prompt for deleting the workload.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Delete all workloads, in the specified namespace.
    #[arg(long)]
    pub all: bool,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long = "all-namespaces")]
    pub all_namespaces: bool,
    /// Must be "none", "server", or "client".
    #[arg(
        long = "dry-run",
        default_value = "none",
        value_name = "none|server|client"
    )]
    pub dry_run: String,
}

/// The Kueue kinds `get`, `describe`, `edit`, `patch` and `delete` hand to
/// kubectl.
#[derive(Subcommand, Debug)]
pub enum PassThrough {
    #[command(visible_aliases = ["wl", "kwl", "kueueworkload", "kueueworkloads"])]
    Workload(PassThroughArgs),
    #[command(visible_alias = "cq")]
    Clusterqueue(PassThroughArgs),
    #[command(visible_alias = "lq")]
    Localqueue(PassThroughArgs),
    #[command(visible_alias = "rf")]
    Resourceflavor(PassThroughArgs),
}

/// Everything after the kind goes to kubectl as it is.
#[derive(Args, Debug, Default, Clone)]
pub struct PassThroughArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// A Kueue kind handed to kubectl, as kubectl names its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    Workload,
    ClusterQueue,
    LocalQueue,
    ResourceFlavor,
}

impl Kind {
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Workload => "workloads.kueue.x-k8s.io",
            Kind::ClusterQueue => "clusterqueues.kueue.x-k8s.io",
            Kind::LocalQueue => "localqueues.kueue.x-k8s.io",
            Kind::ResourceFlavor => "resourceflavors.kueue.x-k8s.io",
        }
    }
}

impl PassThrough {
    pub fn split(&self) -> (Kind, &[String]) {
        match self {
            PassThrough::Workload(a) => (Kind::Workload, &a.args),
            PassThrough::Clusterqueue(a) => (Kind::ClusterQueue, &a.args),
            PassThrough::Localqueue(a) => (Kind::LocalQueue, &a.args),
            PassThrough::Resourceflavor(a) => (Kind::ResourceFlavor, &a.args),
        }
    }
}

/// `--dry-run` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DryRun {
    None,
    Client,
    Server,
}

impl DryRun {
    pub fn parse(v: &str) -> Result<Self, String> {
        match v {
            "none" => Ok(DryRun::None),
            "client" => Ok(DryRun::Client),
            "server" => Ok(DryRun::Server),
            other => Err(format!(
                r#"invalid dry-run value ({other}). Must be "none", "server", or "client""#
            )),
        }
    }

    /// Appended to the printed operation.
    pub fn suffix(self) -> &'static str {
        match self {
            DryRun::None => "",
            DryRun::Client => " (client dry run)",
            DryRun::Server => " (server dry run)",
        }
    }
}

/// `k=v,...` into a map (namespace selectors, node labels); `None` names
/// the element that has no `=`.
pub fn key_values(items: &[String]) -> Result<std::collections::BTreeMap<String, String>, String> {
    items
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| format!("{s} must be formatted as key=value"))
        })
        .collect()
}

/// `TYPE[.API-GROUP]/NAME` of `--for`, as (type, group, name).
pub fn for_object(v: &str) -> Result<(String, String, String), String> {
    let bad = || "--for must be in resource/name form".to_string();
    let (ty, name) = v.split_once('/').ok_or_else(bad)?;
    if ty.is_empty() || name.is_empty() || name.contains('/') {
        return Err(bad());
    }
    let (res, group) = ty.split_once('.').unwrap_or((ty, ""));
    Ok((res.to_lowercase(), group.to_string(), name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("kubectl-kueue").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_model_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn create_cluster_queue_takes_upstreams_flags() {
        let cli = parse(&[
            "create",
            "cq",
            "my-cq",
            "--cohort",
            "co",
            "--queuing-strategy",
            "StrictFIFO",
            "--namespace-selector",
            "a=b,c=d",
            "--reclaim-within-cohort",
            "Any",
            "--preemption-within-cluster-queue",
            "LowerPriority",
            "--nominal-quota",
            "alpha:cpu=1;memory=1Gi,beta:gpu=1",
            "--borrowing-limit",
            "alpha:cpu=1;memory=1Gi",
            "--dry-run",
            "server",
            "-o",
            "yaml",
            "-n",
            "ns",
        ])
        .unwrap();
        assert_eq!(cli.kube.namespace.as_deref(), Some("ns"));
        let Command::Create {
            what: CreateCommand::Clusterqueue(c),
        } = cli.command.unwrap()
        else {
            panic!("not create cq");
        };
        assert_eq!(c.name, "my-cq");
        assert_eq!(c.namespace_selector, ["a=b", "c=d"]);
        assert_eq!(c.nominal_quota, ["alpha:cpu=1;memory=1Gi", "beta:gpu=1"]);
        assert_eq!(c.write.dry_run, "server");
        assert_eq!(c.write.output.as_deref(), Some("yaml"));
        assert_eq!(c.queuing_strategy.as_deref(), Some("StrictFIFO"));
    }

    #[test]
    fn create_local_queue_requires_its_cluster_queue() {
        let e = parse(&["create", "lq", "q"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        let cli = parse(&["create", "localqueue", "q", "-c", "cq", "-i"]).unwrap();
        let Command::Create {
            what: CreateCommand::Localqueue(l),
        } = cli.command.unwrap()
        else {
            panic!();
        };
        assert!(l.ignore_unknown_cq);
        assert_eq!(l.write.dry_run, "none");
    }

    #[test]
    fn list_workload_aliases_and_filters() {
        for alias in ["workload", "wl", "kwl", "kueueworkload", "kueueworkloads"] {
            let cli = parse(&[
                "list", alias, "-A", "--status", "pending", "--status", "admitted", "-q", "lq",
                "-c", "cq", "--for", "job/x", "-o", "wide",
            ])
            .unwrap();
            let Command::List {
                what: ListCommand::Workload(w),
            } = cli.command.unwrap()
            else {
                panic!();
            };
            assert!(w.all_namespaces);
            assert_eq!(w.status, ["pending", "admitted"]);
            assert_eq!(w.list.output.as_deref(), Some("wide"));
        }
    }

    #[test]
    fn list_cluster_queue_active_may_be_bare_or_valued() {
        let active = |args: &[&str]| match parse(args).unwrap().command.unwrap() {
            Command::List {
                what: ListCommand::Clusterqueue { active, .. },
            } => active,
            _ => panic!(),
        };
        assert_eq!(active(&["list", "cq", "--active"]), [true]);
        assert_eq!(active(&["list", "cq", "--active=false"]), [false]);
        assert_eq!(
            active(&["list", "cq", "--active", "--active=false"]),
            [true, false]
        );
        assert!(active(&["list", "cq"]).is_empty());
    }

    #[test]
    fn stop_and_delete_and_pass_through() {
        let cli = parse(&["stop", "cq", "x", "--keep-already-running"]).unwrap();
        assert!(matches!(
            cli.command.unwrap(),
            Command::Stop {
                what: StopCommand::Clusterqueue {
                    keep_already_running: true,
                    ..
                }
            }
        ));
        let cli = parse(&["delete", "wl", "a", "b", "-y", "--dry-run", "client"]).unwrap();
        let Command::Delete {
            what: DeleteCommand::Workload(d),
        } = cli.command.unwrap()
        else {
            panic!();
        };
        assert_eq!(d.names, ["a", "b"]);
        assert!(d.yes);
        let cli = parse(&["get", "cq", "x", "-o", "yaml", "--show-labels"]).unwrap();
        let Command::Get { what } = cli.command.unwrap() else {
            panic!()
        };
        let (kind, rest) = what.split();
        assert_eq!(kind.resource(), "clusterqueues.kueue.x-k8s.io");
        assert_eq!(rest, ["x", "-o", "yaml", "--show-labels"]);
        assert!(parse(&["delete", "cq", "x"]).is_ok());
        assert!(parse(&["get", "pods"]).is_err());
    }

    #[test]
    fn stop_and_resume_accept_upstreams_workload_aliases() {
        for verb in ["stop", "resume"] {
            for alias in ["workload", "kwl", "kueueworkload", "kueueworkloads", "wl"] {
                let cli = parse(&[verb, alias, "w1"]).unwrap();
                let name = match cli.command.unwrap() {
                    Command::Stop {
                        what: StopCommand::Workload { name, .. },
                    }
                    | Command::Resume {
                        what: ResumeCommand::Workload { name, .. },
                    } => name,
                    other => panic!("{verb} {alias}: {other:?}"),
                };
                assert_eq!(name, "w1");
            }
        }
    }

    #[test]
    fn kubectls_global_flags_parse_anywhere() {
        let cli = parse(&[
            "list",
            "cq",
            "--as",
            "alice",
            "--as-group",
            "g1",
            "--as-group",
            "g2",
            "--as-uid",
            "u",
            "--token",
            "t",
            "-s",
            "https://h:6443",
            "--certificate-authority",
            "/ca",
            "--client-certificate",
            "/c",
            "--client-key",
            "/k",
            "--insecure-skip-tls-verify",
            "--request-timeout",
            "5s",
            "--cluster",
            "c1",
            "--user",
            "u1",
            "--context",
            "x",
            "--tls-server-name",
            "h",
            "--cache-dir",
            "/tmp",
            "--disable-compression",
        ])
        .unwrap();
        let k = cli.kube;
        assert_eq!(k.as_user.as_deref(), Some("alice"));
        assert_eq!(k.as_group, ["g1", "g2"]);
        assert_eq!(k.server.as_deref(), Some("https://h:6443"));
        assert_eq!(k.insecure_skip_tls_verify, Some(true));
        assert_eq!(k.request_timeout, "5s");
        assert_eq!(k.user.as_deref(), Some("u1"));
        assert_eq!(k.tls_server_name.as_deref(), Some("h"));
        assert!(parse(&[]).unwrap().command.is_none());
    }

    #[test]
    fn dry_run_values_are_checked_with_upstreams_words() {
        assert_eq!(DryRun::parse("server"), Ok(DryRun::Server));
        assert_eq!(
            DryRun::parse("true"),
            Err(r#"invalid dry-run value (true). Must be "none", "server", or "client""#.into())
        );
    }

    #[test]
    fn for_objects_and_key_values() {
        assert_eq!(
            for_object("job/sample"),
            Ok(("job".into(), "".into(), "sample".into()))
        );
        assert_eq!(
            for_object("RayJob.ray.io/r"),
            Ok(("rayjob".into(), "ray.io".into(), "r".into()))
        );
        assert_eq!(
            for_object("sample"),
            Err("--for must be in resource/name form".into())
        );
        let kv = key_values(&["a=b".into(), "c=".into()]).unwrap();
        assert_eq!(kv["a"], "b");
        assert_eq!(kv["c"], "");
        assert!(key_values(&["nokey".into()]).is_err());
    }
}
