//! `batchgate schedule`: where would a pod's device claims go? Offline from
//! YAML files (and generated node shapes), or online against a cluster's
//! DevicePools, DeviceClasses and DeviceClaims, with the devices admitted
//! Workloads and allocated claims already hold deducted. Prints the
//! prototype's ALLOCATIONS and NODE RESULTS.
//!
//! A Pod or Job whose template has `spec.resourceClaims` is placed over
//! DRA objects instead (`resource.k8s.io/v1` DeviceClasses, ResourceSlices,
//! ResourceClaimTemplates, and allocated ResourceClaims, whose devices are
//! taken), with the placement the queueing controller's `draPlacement`
//! gate uses ([`crate::devices::slices`]).

use crate::vocabulary::pointer::At;
use std::{collections::BTreeMap, path::PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};
use clap::{Args, ValueEnum};
use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::Pod,
    resource::v1::{
        DeviceClass as DraClass, ResourceClaim, ResourceClaimSpec, ResourceClaimTemplate,
        ResourceSlice, ResourceSliceSpec,
    },
};
use kube::{
    api::{ListParams, Patch, PatchParams},
    config::{KubeConfigOptions, Kubeconfig},
    Api, Client, Config, ResourceExt,
};
use serde::Serialize;
use serde_json::{json, Value};

use crate::{
    api::{
        devices::v1alpha1::{
            DeviceClaim, DeviceClaimSpec, DeviceClass, DeviceDriver, DevicePool, DevicePoolSpec,
        },
        kueue::v1beta2::Workload,
    },
    devices::{
        allocation, place_group, podclaims, select_node, selectors, shapes, slices, Catalog, Claim,
        ClaimAllocation, GroupPlacement, NodeResult, Pool, Usage,
    },
};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Yaml,
    Json,
}

#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// YAML files (multi-document): DeviceDrivers, DeviceClasses,
    /// DeviceClaims, DevicePools, and at most one Pod or Job whose pod
    /// template names its claims (annotation devmgmtproto.k8s.io/device-claims
    /// or the prototype's spec.deviceClaims). Without a Pod or Job, every
    /// DeviceClaim read is one claim of a single pod. A Pod or Job with
    /// spec.resourceClaims is placed over DRA objects instead
    /// (resource.k8s.io/v1 DeviceClasses, ResourceSlices,
    /// ResourceClaimTemplates, allocated ResourceClaims).
    #[arg(short = 'f', long = "file")]
    pub files: Vec<PathBuf>,
    /// Generated nodes, SHAPE:COUNT (shape-zero, shape-one, shape-two,
    /// shape-three, shape-foozer-barzer), as the prototype's gen; repeatable.
    #[arg(long = "gen", value_name = "SHAPE:COUNT")]
    pub gen: Vec<String>,
    /// Online: read drivers, classes, claims, pools and the devices already
    /// held (allocated DeviceClaims, admitted Workloads) from this cluster.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Online: place the pods of this Job (in --namespace).
    #[arg(long, requires = "kubeconfig", conflicts_with = "pod")]
    pub job: Option<String>,
    /// Online: place this Pod (in --namespace).
    #[arg(long, requires = "kubeconfig")]
    pub pod: Option<String>,
    /// Namespace of the pod and of the claims it names.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// Every option considered, with its score or failure reason.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Print the whole result as YAML or JSON instead.
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<Format>,
    /// Online: record the allocation in the status of the DeviceClaims the
    /// pod names with claimName.
    #[arg(long, requires = "kubeconfig")]
    pub write: bool,
}

/// Everything read, offline and online.
#[derive(Default)]
struct Inputs {
    catalog: Catalog,
    pools: Vec<Pool>,
    /// (namespace, name) → spec
    claims: BTreeMap<(String, String), DeviceClaimSpec>,
    /// Claim names in file order, for the "every claim is the pod's" case.
    claim_order: Vec<(String, String)>,
    /// The Pod or Job template (`{metadata, spec}`) and its pod count.
    template: Option<(Value, usize, String)>,
    usage: Usage,
    drivers_given: bool,
    /// Objects the apiserver would refuse, one line each (all reported).
    errors: Vec<String>,
    dra: Dra,
}

/// The DRA objects read.
#[derive(Default)]
struct Dra {
    /// DeviceClass → its CEL selectors.
    classes: BTreeMap<String, Vec<String>>,
    slices: Vec<ResourceSliceSpec>,
    /// (namespace, name) → the claim spec of a ResourceClaimTemplate.
    templates: BTreeMap<(String, String), ResourceClaimSpec>,
    /// Devices allocated to ResourceClaims.
    allocated: Vec<slices::DeviceId>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DraReport<'a> {
    pods: usize,
    placement: &'a [slices::PodPlacement],
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    node: Option<&'a str>,
    pods: usize,
    allocations: &'a [ClaimAllocation],
    #[serde(skip_serializing_if = "Option::is_none")]
    pod_set: Option<&'a GroupPlacement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    node_results: &'a [NodeResult],
}

pub async fn run(a: ScheduleArgs) -> Result<()> {
    let mut inputs = Inputs::default();
    for f in &a.files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let before = inputs.errors.len();
        read_documents(&text, &a.namespace, &mut inputs)
            .with_context(|| format!("in {}", f.display()))?;
        for e in &mut inputs.errors[before..] {
            *e = format!("{}: {e}", f.display());
        }
    }
    if !inputs.errors.is_empty() {
        bail!(
            "{} invalid object(s), as the apiserver would refuse them:\n{}",
            inputs.errors.len(),
            inputs.errors.join("\n")
        );
    }
    for g in &a.gen {
        let (shape, count) = g
            .split_once(':')
            .map(|(s, c)| (s, c.parse::<usize>()))
            .unwrap_or((g.as_str(), Ok(2)));
        let count =
            count.map_err(|_| anyhow!("--gen {g}: COUNT must be a number (SHAPE:COUNT)"))?;
        let pools = shapes::generate(shape, count).ok_or_else(|| {
            anyhow!(
                "--gen {g}: could not generate shape {shape:?}; known shapes: {}",
                shapes::SHAPES.join(", ")
            )
        })?;
        inputs.pools.extend(pools);
    }
    let client = match &a.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
            let client = Client::try_from(config)?;
            read_cluster(&client, &a, &mut inputs).await?;
            Some(client)
        }
        None => None,
    };
    if let Some((t, pods, _)) = &inputs.template {
        if t.at("/spec/resourceClaims")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty())
        {
            return place_dra(&a, &inputs, t, *pods);
        }
    }
    if !inputs.drivers_given {
        eprintln!("note: no DeviceDriver given; assuming the prototype's testdata drivers (example.com-foozer: gpu; example.com-barzer: gpu, sriov-nic; sriov-nic; vlan)");
        for (d, types) in shapes::prototype_drivers() {
            inputs
                .catalog
                .drivers
                .insert(d.into(), types.into_iter().map(String::from).collect());
        }
    }
    // The pod's claims.
    let (pod_claims, pods) = match &inputs.template {
        Some((t, pods, _)) => (podclaims::of_template(t).map_err(|e| anyhow!(e))?, *pods),
        None => (
            inputs
                .claim_order
                .iter()
                .filter(|(ns, _)| *ns == a.namespace)
                .map(|(_, n)| podclaims::PodClaim {
                    name: n.clone(),
                    claim: None,
                    claim_template_name: None,
                    claim_name: Some(n.clone()),
                })
                .collect(),
            1,
        ),
    };
    if pod_claims.is_empty() {
        bail!("no device claims to place: give DeviceClaims, or a Pod or Job naming its claims (annotation {})", podclaims::ANNOTATION);
    }
    let claims: Vec<Claim> = podclaims::resolve(&pod_claims, |n| {
        inputs
            .claims
            .get(&(a.namespace.clone(), n.to_string()))
            .cloned()
    })
    .map_err(|e| anyhow!(e))?;

    let selection = select_node(&claims, &inputs.pools, &inputs.catalog, &inputs.usage);
    let group = (pods > 1)
        .then(|| place_group(&claims, pods, &inputs.pools, &inputs.catalog, &inputs.usage));
    let (node, allocations, reason) = match &group {
        Some(Ok(g)) => (
            Some(g.node_name.as_str()),
            g.pods.iter().flatten().cloned().collect::<Vec<_>>(),
            None,
        ),
        Some(Err(e)) => (None, Vec::new(), Some(e.clone())),
        None => (
            selection.node.as_deref(),
            selection.allocations.clone(),
            selection.node.is_none().then(|| selection.reason(8)),
        ),
    };
    let report = Report {
        node,
        pods,
        allocations: &allocations,
        pod_set: group.as_ref().and_then(|g| g.as_ref().ok()),
        reason: reason.clone(),
        node_results: &selection.results,
    };
    match a.output {
        Some(format) => print_as(format, &report)?,
        None => {
            let flat: Vec<Value> = allocations
                .iter()
                .flat_map(|c| {
                    c.allocations.iter().map(move |p| {
                        json!({"claimName": c.claim_name, "devicePoolName": p.device_pool_name,
                               "deviceCount": p.device_count})
                    })
                })
                .collect();
            println!("ALLOCATIONS\n-----------");
            if flat.is_empty() {
                println!("null");
            } else {
                print!("{}", serde_yaml::to_string(&flat)?);
            }
            match (node, &reason) {
                (Some(n), _) => println!(
                    "\nNODE: {n} ({pods} pod{})",
                    if pods == 1 { "" } else { "s" }
                ),
                (None, Some(r)) => println!("\nUNSCHEDULABLE: {r}"),
                (None, None) => {}
            }
            println!("\nNODE RESULTS\n------------");
            if a.verbose {
                print!(
                    "{}",
                    serde_yaml::to_string(&serde_json::to_value(&selection.results)?)?
                );
            } else {
                for r in &selection.results {
                    println!("{}", r.explain());
                }
            }
        }
    }
    if a.write {
        let Some(client) = client else {
            bail!("--write needs --kubeconfig");
        };
        if node.is_none() {
            bail!("nothing to write: no node can hold the claims");
        }
        let pod_name = a
            .pod
            .clone()
            .or_else(|| inputs.template.as_ref().map(|t| t.2.clone()));
        let api: Api<DeviceClaim> = Api::namespaced(client, &a.namespace);
        let mut written = 0;
        for (pc, ca) in pod_claims.iter().zip(&allocations) {
            let Some(name) = &pc.claim_name else { continue };
            let status = json!({"status": {
                "allocations": ca.allocations,
                "nodeName": ca.node_name,
                "podNames": pod_name.iter().collect::<Vec<_>>(),
            }});
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .with_context(|| {
                    format!("writing the status of DeviceClaim {}/{name}", a.namespace)
                })?;
            eprintln!(
                "recorded the allocation in DeviceClaim {}/{name}",
                a.namespace
            );
            written += 1;
        }
        if written == 0 {
            eprintln!("note: no claim is named with claimName; nothing recorded (inline and template claims have no object of their own)");
        }
    }
    if node.is_none() {
        std::process::exit(2);
    }
    Ok(())
}

/// Places the pods of `template` (its `spec.resourceClaims`) over the DRA
/// objects read; exits 2 when no node can hold them.
fn place_dra(a: &ScheduleArgs, inputs: &Inputs, template: &Value, pods: usize) -> Result<()> {
    let dra = &inputs.dra;
    let mut claims: Vec<(&str, &ResourceClaimSpec)> = Vec::new();
    for c in template["spec"]["resourceClaims"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = c["name"].as_str().unwrap_or_default();
        if let Some(t) = c["resourceClaimTemplateName"].as_str() {
            let spec = dra
                .templates
                .get(&(a.namespace.clone(), t.to_string()))
                .ok_or_else(|| {
                    anyhow!(
                        "spec.resourceClaims[{name}]: ResourceClaimTemplate {}/{t} not found: give it with -f, or create it",
                        a.namespace
                    )
                })?;
            claims.push((t, spec));
        } else if let Some(n) = c["resourceClaimName"].as_str() {
            eprintln!("note: spec.resourceClaims[{name}] names ResourceClaim {n}: a shared claim is allocated once, for all its pods, and is not placed here");
        }
    }
    let slices: Vec<&ResourceSliceSpec> = dra.slices.iter().collect();
    let inventory = slices::Inventory::new(&slices);
    let mut taken = inventory.indices(&dra.allocated);
    let demand = slices::Demand {
        pod_set: "main",
        pods: pods as i64,
        claims,
    };
    let (placement, reason) = match slices::place(&[demand], &dra.classes, &inventory, &mut taken) {
        Ok(mut p) => (p.pop().map(|(_, pods)| pods).unwrap_or_default(), None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let report = DraReport {
        pods,
        placement: &placement,
        reason: reason.as_deref(),
    };
    match a.output {
        Some(format) => print_as(format, &report)?,
        None => {
            println!("ALLOCATIONS\n-----------");
            if placement.is_empty() {
                println!("null");
            } else {
                print!(
                    "{}",
                    serde_yaml::to_string(&serde_json::to_value(&placement)?)?
                );
            }
            match &reason {
                Some(r) => println!("\nUNSCHEDULABLE: {r}"),
                None => {
                    let nodes: std::collections::BTreeSet<&str> =
                        placement.iter().map(|p| p.node.as_str()).collect();
                    let nodes: Vec<&str> = nodes.into_iter().collect();
                    println!(
                        "\nNODE{}: {} ({pods} pod{})",
                        if nodes.len() == 1 { "" } else { "S" },
                        nodes.join(", "),
                        if pods == 1 { "" } else { "s" }
                    );
                }
            }
        }
    }
    if a.write {
        bail!(
            "--write records DeviceClaim allocations; DRA claims are allocated by kube-scheduler"
        );
    }
    if reason.is_some() {
        std::process::exit(2);
    }
    Ok(())
}

/// `-o json` or `-o yaml`.
fn print_as(format: Format, report: &impl Serialize) -> Result<()> {
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(report)?),
        Format::Yaml => print!("{}", serde_yaml::to_string(&serde_json::to_value(report)?)?),
    }
    Ok(())
}

/// A `resource.k8s.io/v1` object, decoded as the apiserver would.
fn add_dra(v: Value, kind: &str, name: String, ns: String, inputs: &mut Inputs) {
    fn read<T: serde::de::DeserializeOwned>(
        v: Value,
        kind: &str,
        name: &str,
        errors: &mut Vec<String>,
    ) -> Option<T> {
        serde_path_to_error::deserialize::<_, T>(v)
            .map_err(|e| {
                errors.push(format!(
                    "{kind} \"{name}\": {kind} in version \"v1\" cannot be handled as a {kind}: {}: {}",
                    e.path(),
                    e.inner()
                ))
            })
            .ok()
    }
    let errors = &mut inputs.errors;
    let dra = &mut inputs.dra;
    match kind {
        "DeviceClass" => {
            if let Some(c) = read::<DraClass>(v, kind, &name, errors) {
                dra.classes
                    .insert(name, selectors::class_selectors(&c.spec));
            }
        }
        "ResourceSlice" => {
            if let Some(s) = read::<ResourceSlice>(v, kind, &name, errors) {
                dra.slices.push(s.spec);
            }
        }
        "ResourceClaimTemplate" => {
            if let Some(t) = read::<ResourceClaimTemplate>(v, kind, &name, errors) {
                dra.templates.insert((ns, name), t.spec.spec);
            }
        }
        "ResourceClaim" => {
            if let Some(c) = read::<ResourceClaim>(v, kind, &name, errors) {
                dra.allocated.extend(allocated(&c));
            }
        }
        _ => {}
    }
}

/// The devices a ResourceClaim's allocation holds.
fn allocated(c: &ResourceClaim) -> Vec<slices::DeviceId> {
    let results = c
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.results.as_ref());
    results
        .into_iter()
        .flatten()
        .map(|r| (r.driver.clone(), r.pool.clone(), r.device.clone()))
        .collect()
}

fn read_documents(text: &str, namespace: &str, inputs: &mut Inputs) -> Result<()> {
    use serde::Deserialize as _;
    for doc in serde_yaml::Deserializer::from_str(text) {
        let v = Value::deserialize(doc)?;
        if v.is_null() {
            continue;
        }
        add_object(v, namespace, inputs)?;
    }
    Ok(())
}

fn add_object(v: Value, namespace: &str, inputs: &mut Inputs) -> Result<()> {
    let kind = v["kind"].as_str().unwrap_or_default().to_string();
    let name = v
        .at("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let ns = v
        .at("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or(namespace)
        .to_string();
    if v["apiVersion"]
        .as_str()
        .is_some_and(|a| a.starts_with("resource.k8s.io/"))
    {
        add_dra(v, &kind, name, ns, inputs);
        return Ok(());
    }
    match kind.as_str() {
        "DeviceDriver" => {
            if let Some(d) = decode::<DeviceDriver>(v, &kind, &name, inputs) {
                inputs.catalog.drivers.insert(name, d.device_types);
                inputs.drivers_given = true;
            }
        }
        "DeviceClass" => {
            if let Some(c) = decode::<DeviceClass>(v, &kind, &name, inputs) {
                inputs.catalog.classes.insert(name, c.spec);
            }
        }
        "DeviceClaim" => {
            if let Some(c) = decode::<DeviceClaim>(v, &kind, &name, inputs) {
                inputs.claim_order.push((ns.clone(), name.clone()));
                inputs.claims.insert((ns, name), c.spec);
            }
        }
        "DevicePool" => {
            if let Some(p) = decode::<DevicePool>(v, &kind, &name, inputs) {
                inputs.pools.push(Pool { name, spec: p.spec });
            }
        }
        "Pod" => set_template(inputs, v.clone(), 1, name)?,
        "Job" => {
            let pods = v
                .at("/spec/parallelism")
                .and_then(Value::as_u64)
                .unwrap_or(1) as usize;
            let t = v.at("/spec/template").cloned().unwrap_or(Value::Null);
            set_template(inputs, t, pods.max(1), name)?
        }
        "List" => {
            for item in v["items"].as_array().cloned().unwrap_or_default() {
                add_object(item, namespace, inputs)?;
            }
        }
        // ConfigMaps, vendor configs and the like: not needed to place.
        _ => {}
    }
    Ok(())
}

/// A device object decoded as the apiserver would with strict field
/// validation (kubectl's default): every field its CRD does not declare and
/// the first malformed field, with their paths, are added to
/// `inputs.errors` (so one run reports every object's mistakes).
fn decode<T: serde::de::DeserializeOwned>(
    v: Value,
    kind: &str,
    name: &str,
    inputs: &mut Inputs,
) -> Option<T> {
    let refused = |why: String| {
        format!("{kind} \"{name}\": {kind} in version \"v1alpha1\" cannot be handled as a {kind}: {why}")
    };
    let schema = crate::api::crd::devices().into_iter().find_map(|g| {
        (g.crd["spec"]["names"]["kind"] == kind)
            .then(|| g.crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone())
    });
    let unknown = schema
        .map(|s| crate::api::fields::unknown_fields(&v, &s))
        .unwrap_or_default();
    if !unknown.is_empty() {
        inputs
            .errors
            .push(refused(crate::api::fields::strict_decoding_error(&unknown)));
    }
    match serde_path_to_error::deserialize::<_, T>(v) {
        Ok(t) => unknown.is_empty().then_some(t),
        Err(e) => {
            inputs
                .errors
                .push(refused(format!("{}: {}", e.path(), e.inner())));
            None
        }
    }
}

fn set_template(inputs: &mut Inputs, t: Value, pods: usize, name: String) -> Result<()> {
    if inputs.template.is_some() {
        bail!("more than one Pod or Job given: place one at a time");
    }
    inputs.template = Some((t, pods, name));
    Ok(())
}

fn is_true(
    conds: Option<&Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>>,
    t: &str,
) -> bool {
    conds
        .into_iter()
        .flatten()
        .any(|c| c.type_ == t && c.status == "True")
}

async fn read_cluster(client: &Client, a: &ScheduleArgs, inputs: &mut Inputs) -> Result<()> {
    let lp = ListParams::default();
    // DRA objects, where resource.k8s.io/v1 is served.
    if let Ok(list) = Api::<ResourceSlice>::all(client.clone()).list(&lp).await {
        inputs.dra.slices = list.items.into_iter().map(|s| s.spec).collect();
        for c in Api::<DraClass>::all(client.clone()).list(&lp).await? {
            let exprs = selectors::class_selectors(&c.spec);
            inputs.dra.classes.insert(c.name_any(), exprs);
        }
        let templates = Api::<ResourceClaimTemplate>::namespaced(client.clone(), &a.namespace);
        for t in templates.list(&lp).await? {
            inputs
                .dra
                .templates
                .insert((a.namespace.clone(), t.name_any()), t.spec.spec);
        }
        for c in Api::<ResourceClaim>::all(client.clone()).list(&lp).await? {
            // The pod being placed again: what it holds is what it asks.
            let own = c.namespace().as_deref() == Some(a.namespace.as_str())
                && c.owner_references()
                    .iter()
                    .any(|o| o.kind == "Pod" && a.pod.as_deref() == Some(o.name.as_str()));
            if !own {
                inputs.dra.allocated.extend(allocated(&c));
            }
        }
    }
    let drivers = Api::<DeviceDriver>::all(client.clone())
        .list(&lp)
        .await
        .context("listing DeviceDrivers (are the devmgmtproto.k8s.io CRDs installed?)")?;
    for d in drivers {
        inputs.drivers_given = true;
        inputs
            .catalog
            .drivers
            .insert(d.name_any(), d.device_types.clone());
    }
    for c in Api::<DeviceClass>::all(client.clone()).list(&lp).await? {
        inputs.catalog.classes.insert(c.name_any(), c.spec.clone());
    }
    for p in Api::<DevicePool>::all(client.clone()).list(&lp).await? {
        let spec: DevicePoolSpec = p.spec.clone();
        inputs.pools.push(Pool {
            name: p.name_any(),
            spec,
        });
    }
    let placing: Option<String> = a.pod.clone();
    for c in Api::<DeviceClaim>::all(client.clone()).list(&lp).await? {
        let ns = c.namespace().unwrap_or_default();
        let name = c.name_any();
        // Devices a claim holds, unless it is one being placed again.
        let held = c.status.as_ref().and_then(|s| s.allocations.clone());
        if let Some(allocs) = held {
            let pods = c.status.as_ref().and_then(|s| s.pod_names.clone());
            let same_pod = ns == a.namespace
                && placing
                    .as_ref()
                    .is_some_and(|p| pods.iter().flatten().any(|n| n == p));
            if !same_pod {
                inputs.usage.add(&allocs);
            }
        }
        if ns == a.namespace {
            inputs.claim_order.push((ns.clone(), name.clone()));
        }
        inputs.claims.insert((ns, name), c.spec.clone());
    }
    // Devices admitted Workloads hold (none if Kueue's CRDs are absent).
    if let Ok(wls) = Api::<Workload>::all(client.clone()).list(&lp).await {
        for wl in wls {
            let conds = wl.status.as_ref().and_then(|s| s.conditions.as_ref());
            if !is_true(conds, "QuotaReserved") || is_true(conds, "Finished") {
                continue;
            }
            // The Job being placed: what it holds is what is being asked.
            let own = wl.namespace().as_deref() == Some(a.namespace.as_str())
                && wl
                    .owner_references()
                    .iter()
                    .any(|o| o.kind == "Job" && a.job.as_deref() == Some(o.name.as_str()));
            if own {
                continue;
            }
            if let Some(v) = wl.annotations().get(allocation::ANNOTATION) {
                match allocation::parse(v) {
                    Ok(allocs) => allocation::charge(&mut inputs.usage, &allocs),
                    Err(e) => eprintln!(
                        "warning: Workload {}/{}: {e}",
                        wl.namespace().unwrap_or_default(),
                        wl.name_any()
                    ),
                }
            }
        }
    }
    if let Some(job) = &a.job {
        let j = Api::<Job>::namespaced(client.clone(), &a.namespace)
            .get(job)
            .await
            .with_context(|| format!("reading Job {}/{job}", a.namespace))?;
        let v = serde_json::to_value(&j)?;
        let pods = v
            .at("/spec/parallelism")
            .and_then(Value::as_u64)
            .unwrap_or(1) as usize;
        let t = v.at("/spec/template").cloned().unwrap_or(Value::Null);
        set_template(inputs, t, pods.max(1), job.clone())?;
    }
    if let Some(pod) = &a.pod {
        let p = Api::<Pod>::namespaced(client.clone(), &a.namespace)
            .get(pod)
            .await
            .with_context(|| format!("reading Pod {}/{pod}", a.namespace))?;
        set_template(inputs, serde_json::to_value(&p)?, 1, pod.clone())?;
    }
    Ok(())
}
