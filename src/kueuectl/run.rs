//! The commands: each parsed command run against the apiserver (create,
//! list, stop, resume, delete) and its result printed.

use std::{
    collections::{BTreeSet, HashMap},
    io::{BufRead, Write},
};

use k8s_openapi::{
    api::core::v1::Namespace, apimachinery::pkg::apis::meta::v1::LabelSelector as K8sLabelSelector,
};
use kube::{
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions},
    core::GroupVersionKind,
    discovery::{self, ApiResource, Scope},
    Api, Resource, ResourceExt,
};
use serde::Serialize;
use serde_json::{json, Value};

use super::{
    args::{
        self, Cli, Command, CreateClusterQueue, CreateCommand, CreateLocalQueue,
        CreateResourceFlavor, DeleteCommand, DeleteWorkload, DryRun, ListCommand, ListFlags,
        ListWorkload, PassThrough, ResumeCommand, StopCommand, WriteFlags,
    },
    error::Error,
    listing::{self, StatusFilter, WorkloadFacts, WorkloadFilter},
    output::{
        list_limit, list_output, list_pages, list_params, no_resources, print_object,
        print_structured_pages, qualified_name, server_table, stream_list, ListOutput, Pages,
        TableSink,
    },
    passthrough::pass_through,
    positions, quota,
    session::{server_versions, Session},
    table::Table,
    taint,
};
use crate::{
    api::kueue::v1beta2::{
        stop_policy, ClusterQueue, ClusterQueuePreemption, ClusterQueueSpec, LocalQueue,
        LocalQueueSpec, ResourceFlavor, ResourceFlavorSpec, Workload,
    },
    api::selector::LabelSelector,
};

pub(super) fn now() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_second()
}

/// Runs a parsed command line; what it prints goes to `out`.
pub async fn run(cli: Cli, out: &mut dyn Write) -> Result<(), Error> {
    let Some(command) = cli.command else {
        return Ok(());
    };
    match command {
        Command::Completion { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            let name = cmd.get_name().to_string();
            // Generated whole first: clap_complete panics on a failed write.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, name, &mut script);
            out.write_all(&script)?;
            Ok(())
        }
        Command::Get { what } => pass_through("get", &what, &cli.kube),
        Command::Describe { what } => pass_through("describe", &what, &cli.kube),
        Command::Edit { what } => pass_through("edit", &what, &cli.kube),
        Command::Patch { what } => pass_through("patch", &what, &cli.kube),
        Command::Delete { what } => match what {
            DeleteCommand::Workload(d) => {
                let s = Session::connect(&cli.kube).await?;
                delete_workloads(&s, d, out).await
            }
            DeleteCommand::Clusterqueue(a) => {
                pass_through("delete", &PassThrough::Clusterqueue(a), &cli.kube)
            }
            DeleteCommand::Localqueue(a) => {
                pass_through("delete", &PassThrough::Localqueue(a), &cli.kube)
            }
            DeleteCommand::Resourceflavor(a) => {
                pass_through("delete", &PassThrough::Resourceflavor(a), &cli.kube)
            }
        },
        Command::Explain { kind, name, output } => {
            let s = Session::connect(&cli.kube).await?;
            super::explain::explain(&s, &kind, &name, output.as_deref(), out).await
        }
        Command::Simulate { filename, output } => {
            let s = Session::connect(&cli.kube).await?;
            super::explain::simulate(&s, &filename, output.as_deref(), out).await
        }
        Command::Version => {
            writeln!(out, "Client Version: v{}", env!("CARGO_PKG_VERSION"))?;
            // As upstream: the Deployment must be readable (absent is fine);
            // the reconciler's Lease is best effort.
            let s = Session::connect(&cli.kube).await?;
            for line in server_versions(&s.client).await? {
                writeln!(out, "{line}")?;
            }
            Ok(())
        }
        Command::Create { what } => {
            let s = Session::connect(&cli.kube).await?;
            match what {
                CreateCommand::Clusterqueue(c) => create_cluster_queue(&s, c, out).await,
                CreateCommand::Localqueue(c) => create_local_queue(&s, c, out).await,
                CreateCommand::Resourceflavor(c) => create_resource_flavor(&s, c, out).await,
            }
        }
        Command::List { what } => {
            let s = Session::connect(&cli.kube).await?;
            match what {
                ListCommand::Clusterqueue { active, list } => {
                    list_cluster_queues(&s, &active, &list, out).await
                }
                ListCommand::Localqueue {
                    clusterqueue,
                    all_namespaces,
                    list,
                } => list_local_queues(&s, clusterqueue, all_namespaces, &list, out).await,
                ListCommand::Workload(w) => list_workloads(&s, w, out).await,
                ListCommand::Resourceflavor { list } => list_resource_flavors(&s, &list, out).await,
                ListCommand::Pods {
                    for_object,
                    all_namespaces,
                    list,
                } => list_pods(&s, &for_object, all_namespaces, &list, out).await,
            }
        }
        Command::Stop { what } => {
            let s = Session::connect(&cli.kube).await?;
            match what {
                StopCommand::Workload { name, write } => {
                    set_workload_active(&s, &name, false, "stopped", &write, out).await
                }
                StopCommand::Clusterqueue {
                    name,
                    keep_already_running,
                    write,
                } => {
                    let policy = stop_value(keep_already_running);
                    set_stop_policy::<ClusterQueue>(&s, &name, policy, &write, out).await
                }
                StopCommand::Localqueue {
                    name,
                    keep_already_running,
                    write,
                } => {
                    let policy = stop_value(keep_already_running);
                    set_stop_policy::<LocalQueue>(&s, &name, policy, &write, out).await
                }
            }
        }
        Command::Resume { what } => {
            let s = Session::connect(&cli.kube).await?;
            match what {
                ResumeCommand::Workload { name, write } => {
                    set_workload_active(&s, &name, true, "resumed", &write, out).await
                }
                ResumeCommand::Clusterqueue { name, write } => {
                    set_stop_policy::<ClusterQueue>(&s, &name, stop_policy::NONE, &write, out).await
                }
                ResumeCommand::Localqueue { name, write } => {
                    set_stop_policy::<LocalQueue>(&s, &name, stop_policy::NONE, &write, out).await
                }
            }
        }
    }
}

fn stop_value(keep_already_running: bool) -> &'static str {
    if keep_already_running {
        stop_policy::HOLD
    } else {
        stop_policy::HOLD_AND_DRAIN
    }
}

// ---------------------------------------------------------------- printing

async fn create_cluster_queue(
    s: &Session,
    c: CreateClusterQueue,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let dry = DryRun::parse(&c.write.dry_run).map_err(Error::Usage)?;
    if c.name.is_empty() {
        return Err(Error::Usage("name must be specified".into()));
    }
    let groups = quota::resource_groups(&c.nominal_quota, &c.borrowing_limit, &c.lending_limit)?;
    let labels = args::key_values(&c.namespace_selector).map_err(Error::Usage)?;
    let spec = ClusterQueueSpec {
        cohort_name: c.cohort.filter(|x| !x.is_empty()),
        queueing_strategy: Some(
            c.queuing_strategy
                .unwrap_or_else(|| "BestEffortFIFO".into()),
        ),
        // Always set: `{}` admits every namespace, as upstream.
        namespace_selector: Some(K8sLabelSelector {
            match_labels: (!labels.is_empty()).then_some(labels),
            match_expressions: None,
        }),
        preemption: Some(ClusterQueuePreemption {
            reclaim_within_cohort: Some(c.reclaim_within_cohort.unwrap_or_else(|| "Never".into())),
            within_cluster_queue: Some(
                c.preemption_within_cluster_queue
                    .unwrap_or_else(|| "Never".into()),
            ),
            ..ClusterQueuePreemption::default()
        }),
        resource_groups: (!groups.is_empty()).then_some(groups),
        ..ClusterQueueSpec::default()
    };
    let cq = ClusterQueue::new(&c.name, spec);
    let api = Api::<ClusterQueue>::all(s.client.clone());
    create_and_print(&api, cq, &c.write, dry, out).await
}

async fn create_and_print<K>(
    api: &Api<K>,
    obj: K,
    write: &WriteFlags,
    dry: DryRun,
    out: &mut dyn Write,
) -> Result<(), Error>
where
    K: Resource<DynamicType = ()>
        + Clone
        + Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let obj = match dry {
        DryRun::Client => obj,
        _ => {
            let pp = PostParams {
                dry_run: dry == DryRun::Server,
                field_manager: Some("kubectl-kueue".into()),
            };
            api.create(&pp, &obj).await?
        }
    };
    print_object(&obj, write, "created", dry, out)
}

async fn create_local_queue(
    s: &Session,
    c: CreateLocalQueue,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let dry = DryRun::parse(&c.write.dry_run).map_err(Error::Usage)?;
    if c.name.is_empty() {
        return Err(Error::Usage("name must be specified".into()));
    }
    if c.clusterqueue.is_empty() {
        return Err(Error::Usage("clusterqueue must be specified".into()));
    }
    if s.namespace.is_empty() {
        return Err(Error::Usage("namespace must be specified".into()));
    }
    if !c.ignore_unknown_cq {
        let cq = Api::<ClusterQueue>::all(s.client.clone())
            .get(&c.clusterqueue)
            .await?;
        let ns = Api::<Namespace>::all(s.client.clone())
            .get_opt(&s.namespace)
            .await?;
        let labels = ns.map(|n| n.labels().clone()).unwrap_or_default();
        let admits = match &cq.spec.namespace_selector {
            None => false,
            Some(sel) => serde_json::to_value(sel)
                .and_then(serde_json::from_value::<LabelSelector>)
                .is_ok_and(|sel| sel.matches(&labels)),
        };
        if !admits {
            return Err(Error::Usage(format!(
                "ClusterQueue {:?} does not admit Workloads from namespace {:?}: its spec.namespaceSelector does not match the namespace's labels; change the selector or the namespace's labels, or pass --ignore-unknown-cq",
                c.clusterqueue, s.namespace
            )));
        }
    }
    let mut lq = LocalQueue::new(
        &c.name,
        LocalQueueSpec {
            cluster_queue: Some(c.clusterqueue.clone()),
            ..LocalQueueSpec::default()
        },
    );
    lq.metadata.namespace = Some(s.namespace.clone());
    let api = Api::<LocalQueue>::namespaced(s.client.clone(), &s.namespace);
    create_and_print(&api, lq, &c.write, dry, out).await
}

async fn create_resource_flavor(
    s: &Session,
    c: CreateResourceFlavor,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let dry = DryRun::parse(&c.write.dry_run).map_err(Error::Usage)?;
    if c.name.is_empty() {
        return Err(Error::Usage("name must be specified".into()));
    }
    let labels = args::key_values(&c.node_labels).map_err(Error::Usage)?;
    let taints = taint::parse_taints(&c.node_taints)?;
    let tolerations = taint::parse_tolerations(&c.tolerations)?;
    let rf = ResourceFlavor::new(
        &c.name,
        ResourceFlavorSpec {
            node_labels: (!labels.is_empty()).then_some(labels),
            node_taints: (!taints.is_empty()).then_some(taints),
            tolerations: (!tolerations.is_empty()).then_some(tolerations),
            ..ResourceFlavorSpec::default()
        },
    );
    let api = Api::<ResourceFlavor>::all(s.client.clone());
    create_and_print(&api, rf, &c.write, dry, out).await
}

// -------------------------------------------------------------------- list

async fn list_cluster_queues(
    s: &Session,
    active: &[bool],
    flags: &ListFlags,
    out: &mut dyn Write,
) -> Result<(), Error> {
    if active.len() > 1 {
        return Err(Error::Usage("only one active flag can be provided".into()));
    }
    let want = active.first().copied();
    let now = now();
    stream_list(
        Api::<ClusterQueue>::all(s.client.clone()),
        flags,
        |cq| want.is_none_or(|w| listing::cluster_queue_active(cq) == w),
        |items, wide| listing::cluster_queue_table(items, now, wide),
        None,
        out,
    )
    .await
}

async fn list_local_queues(
    s: &Session,
    cluster_queue: Option<String>,
    all_namespaces: bool,
    flags: &ListFlags,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let api = if all_namespaces {
        Api::<LocalQueue>::all(s.client.clone())
    } else {
        Api::<LocalQueue>::namespaced(s.client.clone(), &s.namespace)
    };
    let cq = cluster_queue.filter(|c| !c.is_empty());
    let now = now();
    let ns = (!all_namespaces).then_some(s.namespace.as_str());
    stream_list(
        api,
        flags,
        |lq| {
            cq.as_deref()
                .is_none_or(|c| lq.spec.cluster_queue.as_deref() == Some(c))
        },
        |items, wide| listing::local_queue_table(items, now, wide),
        Some(ns),
        out,
    )
    .await
}

async fn list_resource_flavors(
    s: &Session,
    flags: &ListFlags,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let now = now();
    stream_list(
        Api::<ResourceFlavor>::all(s.client.clone()),
        flags,
        |_| true,
        |items, wide| listing::resource_flavor_table(items, now, wide),
        None,
        out,
    )
    .await
}

/// `--for TYPE[.GROUP]/NAME`: the object, found in the namespace (or any
/// with `-A`), and its resource.
async fn find_for_object(
    s: &Session,
    spec: &str,
    all_namespaces: bool,
) -> Result<Option<(ApiResource, DynamicObject)>, Error> {
    let (ty, group, name) = args::for_object(spec).map_err(Error::Usage)?;
    let mut disc = discovery::Discovery::new(s.client.clone());
    if !group.is_empty() {
        disc = disc.filter(&[group.as_str()]);
    }
    let disc = disc.run().await?;
    let mut found = None;
    'groups: for g in disc.groups() {
        if !group.is_empty() && g.name() != group {
            continue;
        }
        for (ar, caps) in g.recommended_resources() {
            if ar.plural == ty || ar.kind.to_lowercase() == ty {
                found = Some((ar, caps));
                break 'groups;
            }
        }
    }
    let Some((ar, caps)) = found else {
        return Err(Error::Usage(format!(
            "the server doesn't have a resource type \"{ty}\""
        )));
    };
    let obj = if all_namespaces || caps.scope == Scope::Cluster {
        let api = Api::<DynamicObject>::all_with(s.client.clone(), &ar);
        api.list(&ListParams::default().fields(&format!("metadata.name={name}")))
            .await?
            .items
            .into_iter()
            .next()
    } else {
        Api::<DynamicObject>::namespaced_with(s.client.clone(), &s.namespace, &ar)
            .get_opt(&name)
            .await?
    };
    Ok(obj.map(|o| (ar, o)))
}

async fn list_workloads(s: &Session, w: ListWorkload, out: &mut dyn Write) -> Result<(), Error> {
    let output = list_output(&w.list)?;
    let status = StatusFilter::parse(&w.status).map_err(Error::Usage)?;
    let ns_shown = (!w.all_namespaces).then_some(s.namespace.as_str());
    let api = if w.all_namespaces {
        Api::<Workload>::all(s.client.clone())
    } else {
        Api::<Workload>::namespaced(s.client.clone(), &s.namespace)
    };
    let mut filter = WorkloadFilter {
        local_queue: w.localqueue.clone().filter(|x| !x.is_empty()),
        cluster_queue: w.clusterqueue.clone().filter(|x| !x.is_empty()),
        status,
        owner_uid: None,
    };
    let mut lp = list_params(&w.list, None)?;
    if let Some(spec) = &w.for_object {
        let Some((_, obj)) = find_for_object(s, spec, w.all_namespaces).await? else {
            no_resources(ns_shown);
            return Ok(());
        };
        let uid = obj.metadata.uid.clone().unwrap_or_default();
        let by_label = format!("kueue.x-k8s.io/job-uid={uid}");
        let labelled = list_params(&w.list, Some(&by_label))?.limit(1);
        if api.list(&labelled).await?.items.is_empty() {
            // Workloads of older jobs carry no job-uid label: their owner.
            filter.owner_uid = Some(uid);
        } else {
            lp = list_params(&w.list, Some(&by_label))?;
        }
    }
    let total = match output {
        ListOutput::Structured(format) => {
            print_structured_pages(
                &api,
                lp,
                |wl| filter.keeps(wl),
                &format,
                w.list.show_managed_fields,
                out,
            )
            .await?
        }
        ListOutput::Name => {
            let mut pages = Pages::new(api, lp);
            let mut total = 0;
            while let Some(page) = pages.next().await? {
                for wl in page.items.iter().filter(|wl| filter.keeps(wl)) {
                    total += 1;
                    writeln!(out, "{}", qualified_name::<Workload>(&wl.name_any()))?;
                }
            }
            total
        }
        ListOutput::Table { wide } => {
            // Queues and positions are read once for the scope; owners'
            // types once per apiVersion, as pages bring new ones.
            let mut facts = workload_facts(s, w.all_namespaces).await?;
            let mut asked = BTreeSet::new();
            let now = now();
            let mut pages = Pages::new(api, lp);
            let mut sink = TableSink::new(
                listing::workload_table(&[], &facts, now, wide),
                w.all_namespaces,
            );
            while let Some(page) = pages.next().await? {
                let kept: Vec<&Workload> =
                    page.items.iter().filter(|wl| filter.keeps(wl)).collect();
                add_job_types(s, &kept, &mut facts).await;
                positions::add(
                    &s.client,
                    &kept,
                    &facts.local_queues,
                    &mut asked,
                    &mut facts.positions,
                )
                .await;
                for wl in kept {
                    let row = listing::workload_row(wl, &facts, now, wide);
                    sink.push(wl.metadata.namespace.as_deref(), row);
                }
            }
            let total = sink.table.rows.len();
            if total > 0 {
                sink.finish(out)?;
            }
            total
        }
    };
    if total == 0 {
        no_resources(ns_shown);
    }
    Ok(())
}

/// What the Workload table needs beside the Workloads, read once for the
/// scope (cluster-wide with -A, else the namespace): the LocalQueues'
/// ClusterQueues. Positions come page by page (optional per row: a pending
/// Workload without one shows a blank cell, as upstream).
async fn workload_facts(s: &Session, all: bool) -> Result<WorkloadFacts, Error> {
    let mut facts = WorkloadFacts::default();
    let limit = list_limit()?;
    let scopes: Vec<Option<&str>> = if all {
        vec![None]
    } else {
        vec![Some(s.namespace.as_str())]
    };
    for scope in &scopes {
        let api = match scope {
            Some(ns) => Api::<LocalQueue>::namespaced(s.client.clone(), ns),
            None => Api::<LocalQueue>::all(s.client.clone()),
        };
        let lp = ListParams::default().limit(limit);
        for lq in list_pages(&api, lp).await.unwrap_or_default() {
            if let (Some(ns), Some(cq)) =
                (lq.metadata.namespace.clone(), lq.spec.cluster_queue.clone())
            {
                facts.local_queues.insert((ns, lq.name_any()), cq);
            }
        }
    }
    Ok(facts)
}

/// The `Job Type` of the owners' kinds a page brings that were not seen
/// yet: one discovery call per new apiVersion. The type is the resource's
/// singular name and the group the discovery entry carries (empty for the
/// entries of a group version, so `job`, `appwrapper`, as upstream).
async fn add_job_types(s: &Session, page: &[&Workload], facts: &mut WorkloadFacts) {
    let owners: BTreeSet<(String, String)> = page
        .iter()
        .flat_map(|w| w.metadata.owner_references.iter().flatten())
        .map(|o| (o.api_version.clone(), o.kind.clone()))
        .filter(|k| !facts.job_types.contains_key(k))
        .collect();
    let versions: BTreeSet<&str> = owners.iter().map(|(v, _)| v.as_str()).collect();
    for v in versions {
        let list = if v.contains('/') {
            s.client.list_api_group_resources(v).await
        } else {
            s.client.list_core_api_resources(v).await
        };
        let resources = list.map(|l| l.resources).unwrap_or_default();
        for (av, kind) in owners.iter().filter(|(av, _)| av == v) {
            let found = resources
                .iter()
                .find(|r| r.kind == *kind && !r.singular_name.is_empty());
            // Without a discovery entry the cell stays empty (remembered,
            // so it is asked once).
            let ty = found.map_or_else(String::new, |r| {
                listing::job_type(&r.singular_name, r.group.as_deref().unwrap_or_default())
            });
            facts.job_types.insert((av.clone(), kind.clone()), ty);
        }
    }
}

/// The label selector of a job's pods, per integration.
fn pod_selector(ar: &ApiResource, obj: &DynamicObject) -> Result<String, Error> {
    let name = obj.name_any();
    let uid = obj.metadata.uid.clone().unwrap_or_default();
    Ok(match (ar.group.as_str(), ar.plural.as_str()) {
        ("batch", "jobs") => format!("batch.kubernetes.io/controller-uid={uid}"),
        ("jobset.x-k8s.io", "jobsets") => format!("jobset.sigs.k8s.io/jobset-name={name}"),
        ("kubeflow.org", _) => format!("training.kubeflow.org/job-name={name}"),
        ("ray.io", "rayclusters") => format!("ray.io/cluster={name}"),
        ("ray.io", "rayjobs") => {
            let cluster = obj.data["status"]["rayClusterName"]
                .as_str()
                .unwrap_or_default();
            format!("ray.io/cluster={cluster}")
        }
        ("workload.codeflare.dev", "appwrappers") => {
            format!("workload.codeflare.dev/appwrapper={name}")
        }
        _ => return Err(Error::Usage(format!("unsupported kind: {}", ar.kind))),
    })
}

async fn list_pods(
    s: &Session,
    spec: &str,
    all_namespaces: bool,
    flags: &ListFlags,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let output = list_output(flags)?;
    let ns_shown = (!all_namespaces).then_some(s.namespace.as_str());
    let Some((ar, obj)) = find_for_object(s, spec, all_namespaces).await? else {
        no_resources(ns_shown);
        return Ok(());
    };
    let ns = obj
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| s.namespace.clone());
    let mut selector = pod_selector(&ar, &obj)?;
    if let Some(l) = flags.selector.as_deref().filter(|l| !l.is_empty()) {
        selector = format!("{selector},{l}");
    }
    let api = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(s.client.clone(), &ns);
    match output {
        ListOutput::Table { wide } => {
            let mut url = format!(
                "/api/v1/namespaces/{ns}/pods?labelSelector={}",
                form_encode(&selector)
            );
            if let Some(f) = &flags.field_selector {
                url.push_str(&format!("&fieldSelector={}", form_encode(f)));
            }
            let req = http::Request::get(url)
                .header(
                    http::header::ACCEPT,
                    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                )
                .body(Vec::new())
                .map_err(|e| Error::Usage(e.to_string()))?;
            let table: Value = s.client.request(req).await?;
            let t = server_table(&table, wide);
            if t.rows.is_empty() {
                no_resources(Some(&ns));
                return Ok(());
            }
            let t = if all_namespaces {
                let n = vec![ns.clone(); t.rows.len()];
                t.with_namespaces(&n)
            } else {
                t
            };
            write!(out, "{}", t.render(true))?;
            Ok(())
        }
        _ => {
            let lf = ListFlags {
                selector: Some(selector),
                ..flags.clone()
            };
            let no_table = |_: &[&k8s_openapi::api::core::v1::Pod], _| Table::default();
            stream_list(api, &lf, |_| true, no_table, Some(Some(&ns)), out).await
        }
    }
}

fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

// ----------------------------------------------------------- stop / resume

async fn set_workload_active(
    s: &Session,
    name: &str,
    active: bool,
    operation: &str,
    write: &WriteFlags,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let dry = DryRun::parse(&write.dry_run).map_err(Error::Usage)?;
    let api = Api::<Workload>::namespaced(s.client.clone(), &s.namespace);
    let patch = json!({"spec": {"active": active}});
    let wl = apply_merge(&api, name, patch, dry).await?;
    print_object(&wl, write, operation, dry, out)
}

trait HasStopPolicy:
    Resource<DynamicType = ()> + Clone + Serialize + serde::de::DeserializeOwned + std::fmt::Debug
{
    fn api(s: &Session) -> Api<Self>;
}

impl HasStopPolicy for ClusterQueue {
    fn api(s: &Session) -> Api<Self> {
        Api::all(s.client.clone())
    }
}

impl HasStopPolicy for LocalQueue {
    fn api(s: &Session) -> Api<Self> {
        Api::namespaced(s.client.clone(), &s.namespace)
    }
}

async fn set_stop_policy<K: HasStopPolicy>(
    s: &Session,
    name: &str,
    policy: &str,
    write: &WriteFlags,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let dry = DryRun::parse(&write.dry_run).map_err(Error::Usage)?;
    let api = K::api(s);
    let patch = json!({"spec": {"stopPolicy": policy}});
    let obj = apply_merge(&api, name, patch, dry).await?;
    print_object(&obj, write, "", dry, out)
}

/// A JSON merge patch; with `--dry-run=client` the object read and patched
/// locally.
async fn apply_merge<K>(api: &Api<K>, name: &str, patch: Value, dry: DryRun) -> Result<K, Error>
where
    K: Resource + Clone + Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match dry {
        DryRun::Client => {
            let current = api.get(name).await?;
            let mut v = serde_json::to_value(&current)?;
            json_patch::merge(&mut v, &patch);
            Ok(serde_json::from_value(v)?)
        }
        _ => {
            let pp = PatchParams {
                dry_run: dry == DryRun::Server,
                field_manager: Some("kubectl-kueue".into()),
                ..PatchParams::default()
            };
            Ok(api.patch(name, &pp, &Patch::Merge(&patch)).await?)
        }
    }
}

// ------------------------------------------------------------------ delete

/// An owner to delete: its resource, name and UID.
struct OwnerRef {
    resource: ApiResource,
    name: String,
    uid: String,
}

impl OwnerRef {
    /// `resource.group/name`, as upstream prints it.
    fn display(&self) -> String {
        if self.resource.group.is_empty() {
            format!("{}/{}", self.resource.plural, self.name)
        } else {
            format!(
                "{}.{}/{}",
                self.resource.plural, self.resource.group, self.name
            )
        }
    }
}

async fn delete_workloads(
    s: &Session,
    d: DeleteWorkload,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let dry = DryRun::parse(&d.dry_run).map_err(Error::Usage)?;
    if d.names.is_empty() && !d.all {
        return Err(Error::Usage(
            "requires at least 1 arg(s), only received 0".into(),
        ));
    }
    if !d.names.is_empty() && d.all {
        return Err(Error::Usage(
            "name cannot be provided when a selector is specified".into(),
        ));
    }
    if !d.names.is_empty() && d.all_namespaces {
        return Err(Error::Usage(
            "a resource cannot be retrieved by name across all namespaces".into(),
        ));
    }
    let workloads: Vec<Workload> = if d.all {
        let api = if d.all_namespaces {
            Api::<Workload>::all(s.client.clone())
        } else {
            Api::<Workload>::namespaced(s.client.clone(), &s.namespace)
        };
        list_pages(&api, ListParams::default().limit(list_limit()?)).await?
    } else {
        let api = Api::<Workload>::namespaced(s.client.clone(), &s.namespace);
        let mut found = Vec::new();
        for n in &d.names {
            match api.get(n).await {
                Ok(w) => found.push(w),
                Err(e) if Error::is_not_found(&e) => {
                    eprintln!("{}", Error::from(e));
                }
                Err(e) => return Err(e.into()),
            }
        }
        found
    };
    if workloads.is_empty() {
        return Ok(());
    }
    let mut plan: Vec<(Workload, Vec<OwnerRef>)> = Vec::new();
    let mut resources: HashMap<(String, String), ApiResource> = HashMap::new();
    for wl in workloads {
        let mut owners = Vec::new();
        for o in wl.metadata.owner_references.iter().flatten() {
            let key = (o.api_version.clone(), o.kind.clone());
            let ar = match resources.get(&key) {
                Some(ar) => ar.clone(),
                None => {
                    let (group, version) = match o.api_version.split_once('/') {
                        Some((g, v)) => (g.to_string(), v.to_string()),
                        None => (String::new(), o.api_version.clone()),
                    };
                    let gvk = GroupVersionKind::gvk(&group, &version, &o.kind);
                    let (ar, _) = discovery::pinned_kind(&s.client, &gvk).await?;
                    resources.insert(key, ar.clone());
                    ar
                }
            };
            owners.push(OwnerRef {
                resource: ar,
                name: o.name.clone(),
                uid: o.uid.clone(),
            });
        }
        plan.push((wl, owners));
    }
    let has_owners = plan.iter().any(|(_, o)| !o.is_empty());
    if dry == DryRun::None && !d.yes && has_owners {
        let message = if d.all {
            "This operation will also delete the jobs associated with these workloads.\n"
                .to_string()
        } else {
            let lines: Vec<String> = plan
                .iter()
                .filter(|(_, o)| !o.is_empty())
                .map(|(wl, o)| {
                    format!(
                        "  - {} associated with the {}/{} workload\n",
                        o.iter()
                            .map(OwnerRef::display)
                            .collect::<Vec<_>>()
                            .join(", "),
                        wl.namespace().unwrap_or_default(),
                        wl.name_any()
                    )
                })
                .collect();
            format!("This operation will also delete:\n{}", lines.join("\n"))
        };
        write!(out, "{message}Do you want to proceed (y/n)? ")?;
        out.flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !answer.trim().eq_ignore_ascii_case("y") {
            writeln!(out, "Deletion is canceled")?;
            return Ok(());
        }
    }
    for (wl, owners) in plan {
        let ns = wl.namespace().unwrap_or_default();
        let mut dp = DeleteParams {
            dry_run: dry == DryRun::Server,
            ..DeleteParams::default()
        };
        for o in &owners {
            // Background: the Job's pods and its Workload go with it (a
            // batch/v1 Job's own default would orphan them).
            let mut odp = DeleteParams::background();
            odp.dry_run = dp.dry_run;
            odp.preconditions = Some(Preconditions {
                uid: Some(o.uid.clone()),
                resource_version: None,
            });
            if dry != DryRun::Client {
                let api = Api::<DynamicObject>::namespaced_with(s.client.clone(), &ns, &o.resource);
                match api.delete(&o.name, &odp).await {
                    Ok(_) => {}
                    Err(e) if Error::is_not_found(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            writeln!(out, "{} deleted{}", o.display(), dry.suffix())?;
        }
        if owners.is_empty() {
            if dry != DryRun::Client {
                dp.preconditions = None;
                let api = Api::<Workload>::namespaced(s.client.clone(), &ns);
                match api.delete(&wl.name_any(), &dp).await {
                    Ok(_) => {}
                    Err(e) if Error::is_not_found(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            print_object(&wl, &WriteFlags::default(), "deleted", dry, out)?;
        }
    }
    Ok(())
}

// ------------------------------------------------------------ pass-through

#[cfg(test)]
mod tests {
    use kube::config::Kubeconfig;

    use super::*;
    use crate::kueuectl::{
        args::KubeFlags,
        output::{printable, write_json, write_yaml},
        session::{apply_flags, request_timeout, FLAGS_ENTRY},
    };

    #[test]
    fn a_server_table_keeps_priority_zero_columns_unless_wide() {
        let t = json!({
            "columnDefinitions": [
                {"name": "Name", "priority": 0}, {"name": "Ready", "priority": 0},
                {"name": "Restarts", "priority": 0}, {"name": "IP", "priority": 1}],
            "rows": [{"cells": ["p1", "1/1", 0, "10.0.0.1"]}]
        });
        let narrow = server_table(&t, false);
        assert_eq!(narrow.rows, [["p1", "1/1", "0"]]);
        assert_eq!(
            narrow.render(true),
            "NAME   READY   RESTARTS\np1     1/1     0\n"
        );
        assert_eq!(server_table(&t, true).columns.len(), 4);
    }

    #[test]
    fn request_timeouts_read_as_kubectls() {
        use std::time::Duration;
        assert_eq!(request_timeout("0").unwrap(), None);
        assert_eq!(request_timeout("5").unwrap(), Some(Duration::from_secs(5)));
        assert_eq!(
            request_timeout("2m").unwrap(),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            request_timeout("1h30m").unwrap(),
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            request_timeout("500ms").unwrap(),
            Some(Duration::from_millis(500))
        );
        let e = request_timeout("soon").unwrap_err().to_string();
        assert!(e.starts_with("invalid timeout value."), "{e}");
    }

    fn kubeconfig() -> Kubeconfig {
        serde_yaml::from_str(
            r#"
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c1, user: u1, namespace: team}
- name: other
  context: {cluster: c2, user: u2}
clusters:
- name: c1
  cluster: {server: "https://one:6443", certificate-authority-data: "Q0E="}
- name: c2
  cluster: {server: "https://two:6443"}
users:
- name: u1
  user: {token: "t1"}
- name: u2
  user: {token: "t2"}
"#,
        )
        .unwrap()
    }

    #[test]
    fn global_flags_override_the_chosen_cluster_and_user() {
        let mut kc = kubeconfig();
        let flags = KubeFlags {
            server: Some("https://flag:6443".into()),
            insecure_skip_tls_verify: Some(true),
            token: Some("flag-token".into()),
            as_user: Some("alice".into()),
            as_group: vec!["g".into()],
            tls_server_name: Some("api".into()),
            ..KubeFlags::default()
        };
        let opts = apply_flags(&mut kc, &flags);
        assert_eq!(opts.context.as_deref(), Some("dev"));
        assert_eq!(opts.cluster.as_deref(), Some("c1"));
        assert_eq!(opts.user.as_deref(), Some("u1"));
        let c1 = kc.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(c1.server.as_deref(), Some("https://flag:6443"));
        assert_eq!(c1.insecure_skip_tls_verify, Some(true));
        assert_eq!(c1.certificate_authority_data, None);
        assert_eq!(c1.tls_server_name.as_deref(), Some("api"));
        let u1 = kc.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(u1.impersonate.as_deref(), Some("alice"));
        assert_eq!(
            u1.impersonate_groups.as_deref(),
            Some(&["g".to_string()][..])
        );
        // The other context's entries are untouched.
        let c2 = kc.clusters[1].cluster.as_ref().unwrap();
        assert_eq!(c2.server.as_deref(), Some("https://two:6443"));
    }

    #[test]
    fn cluster_and_user_flags_pick_other_entries() {
        let mut kc = kubeconfig();
        let flags = KubeFlags {
            cluster: Some("c2".into()),
            user: Some("u2".into()),
            ..KubeFlags::default()
        };
        let opts = apply_flags(&mut kc, &flags);
        assert_eq!(
            (
                opts.context.as_deref(),
                opts.cluster.as_deref(),
                opts.user.as_deref()
            ),
            (Some("dev"), Some("c2"), Some("u2"))
        );
        // No kubeconfig at all: --server alone makes a usable entry.
        let mut empty = Kubeconfig::default();
        let flags = KubeFlags {
            server: Some("https://only:6443".into()),
            ..KubeFlags::default()
        };
        let opts = apply_flags(&mut empty, &flags);
        assert_eq!(opts.cluster.as_deref(), Some(FLAGS_ENTRY));
        assert_eq!(
            empty.clusters[0]
                .cluster
                .as_ref()
                .unwrap()
                .server
                .as_deref(),
            Some("https://only:6443")
        );
    }

    #[test]
    fn printed_objects_drop_managed_fields_unless_asked() {
        let v = json!({"metadata": {"name": "x", "managedFields": [{"manager": "m"}]}});
        assert_eq!(
            printable(&v, false).unwrap()["metadata"],
            json!({"name": "x"})
        );
        assert!(printable(&v, true).unwrap()["metadata"]["managedFields"].is_array());
        let mut out = Vec::new();
        write_json(&json!({"a": {"b": 1}}), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n    \"a\": {\n        \"b\": 1\n    }\n}\n"
        );
        let mut out = Vec::new();
        write_yaml(&json!({"b": 1, "a": 2}), false, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "---\na: 2\nb: 1\n");
    }

    #[test]
    fn selectors_are_form_encoded() {
        assert_eq!(form_encode("a=b,c!=d"), "a%3Db%2Cc%21%3Dd");
    }
}
