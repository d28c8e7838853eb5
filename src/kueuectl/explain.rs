//! `kubectl kueue explain workload NAME` (or `explain KIND NAME` for a
//! job): why a Workload waits, as batchgate's engine sees it, read from
//! the visibility API's `workloads/NAME/explanation` (so RBAC applies),
//! printed in plain words or as `-o json|yaml`. A job's Workloads are
//! found by their owner reference; while quota is reserved, the Workload's
//! own admission check states are added.
//!
//! `kubectl kueue simulate -f job.yaml`: the Workload the job would get
//! (built here as the job reconciler builds it, the priority classes read
//! from the cluster) sent to `workloads/NAME/simulation`, which answers
//! as `explain` would, were it created now; nothing is written.

use std::io::Write;

use kube::{api::ListParams, Api, Client};
use serde_json::Value;

use super::{
    error::Error,
    output::{write_json, write_yaml},
    session::Session,
    table::Table,
};
use crate::{
    api::kueue::conversion::topology,
    api::kueue::v1beta2::{LocalQueue, Workload, WorkloadPriorityClass},
    jobs::{
        policy::PolicySet,
        workload::{for_job, priority, PriorityClasses},
    },
    queueing::visibility::GROUP,
    vocabulary::keys::QUEUE_NAME_LABEL,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;

/// The names `explain` takes for a Workload itself.
const WORKLOAD_NAMES: [&str; 6] = [
    "workload",
    "workloads",
    "wl",
    "kwl",
    "kueueworkload",
    "kueueworkloads",
];

pub async fn explain(
    s: &Session,
    kind: &str,
    name: &str,
    output: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let workloads = if WORKLOAD_NAMES.contains(&kind.to_lowercase().as_str()) {
        vec![name.to_string()]
    } else {
        owned_by(&s.client, &s.namespace, kind, name).await?
    };
    let mut first = true;
    for wl in workloads {
        let path = format!(
            "/apis/{GROUP}/v1beta2/namespaces/{}/workloads/{wl}/explanation",
            s.namespace
        );
        let req = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| Error::Usage(e.to_string()))?;
        let mut x: Value = s.client.request(req).await.map_err(|e| match e {
            kube::Error::Api(st) if st.code == 404 && st.message.contains(".visibility.") => {
                Error::Api(format!(
                    "batchgate's queues do not hold Workload {}/{wl}: it does not exist, or it was created a moment ago",
                    s.namespace
                ))
            }
            other => other.into(),
        })?;
        if x["state"] == "QuotaReserved" {
            add_check_states(&s.client, &s.namespace, &wl, &mut x).await;
        }
        print(&x, output, first, out)?;
        first = false;
    }
    Ok(())
}

pub async fn simulate(
    s: &Session,
    file: &str,
    output: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let text = if file == "-" {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)?;
        t
    } else {
        std::fs::read_to_string(file).map_err(|e| Error::Usage(format!("reading {file}: {e}")))?
    };
    let mut first = true;
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let doc: Value = serde::Deserialize::deserialize(doc)?;
        if doc.is_null() {
            continue;
        }
        let (namespace, wl) = workload_of(s, doc).await?;
        let name = wl["metadata"]["name"].as_str().unwrap_or("simulated");
        let path =
            format!("/apis/{GROUP}/v1beta2/namespaces/{namespace}/workloads/{name}/simulation");
        let req = http::Request::post(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&wl)?)
            .map_err(|e| Error::Usage(e.to_string()))?;
        let x: Value = s.client.request(req).await?;
        print(&x, output, first, out)?;
        first = false;
    }
    Ok(())
}

/// The namespace and Workload a manifest would get: a Workload as given,
/// a job of an integrated kind as the job reconciler would build it.
async fn workload_of(s: &Session, mut doc: Value) -> Result<(String, Value), Error> {
    let namespace = doc["metadata"]["namespace"]
        .as_str()
        .map_or_else(|| s.namespace.clone(), str::to_string);
    doc["metadata"]["namespace"] = namespace.clone().into();
    let api_version = doc["apiVersion"].as_str().unwrap_or_default().to_string();
    let kind = doc["kind"].as_str().unwrap_or_default().to_string();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    if group == "kueue.x-k8s.io" && kind == "Workload" {
        return Ok((namespace, doc));
    }
    let policies = PolicySet::embedded().map_err(|e| Error::Usage(e.to_string()))?;
    let Some(policy) = policies.find(group, version, &kind) else {
        return Err(Error::Usage(format!(
            "{kind} ({api_version}) is not a kind batchgate queues; simulate takes a Workload or a job of an integrated kind"
        )));
    };
    if doc["metadata"]["name"].as_str().is_none() {
        let prefix = doc["metadata"]["generateName"]
            .as_str()
            .unwrap_or("simulated-");
        doc["metadata"]["name"] = format!("{prefix}simulated").into();
    }
    doc["metadata"]["uid"] = "simulated".into();
    let labels = &doc["metadata"]["labels"];
    if labels[QUEUE_NAME_LABEL].as_str().is_none_or(str::is_empty) {
        // Kueue's LocalQueue defaulting: a LocalQueue named `default`.
        let lqs = Api::<LocalQueue>::namespaced(s.client.clone(), &namespace);
        if lqs.get_opt("default").await?.is_none() {
            return Err(Error::Usage(format!(
                "{kind} has no {QUEUE_NAME_LABEL} label and namespace {namespace} has no LocalQueue named default: it would not be queued"
            )));
        }
        doc["metadata"]["labels"][QUEUE_NAME_LABEL] = "default".into();
    }
    let classes = priority_classes(&s.client).await;
    let prio = priority(policy, &doc, &classes).map_err(|e| Error::Usage(e.to_string()))?;
    let wl = for_job(policy, &doc, &prio).map_err(|e| Error::Usage(e.to_string()))?;
    Ok((namespace, wl))
}

/// The priority classes this caller may read (none where it may not).
async fn priority_classes(client: &Client) -> PriorityClasses {
    let mut c = PriorityClasses::default();
    if let Ok(list) = Api::<WorkloadPriorityClass>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        for w in list.items {
            c.workload
                .insert(w.metadata.name.clone().unwrap_or_default(), w.spec.value);
        }
    }
    if let Ok(list) = Api::<PriorityClass>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        for p in list.items {
            let name = p.metadata.name.clone().unwrap_or_default();
            if p.global_default == Some(true) {
                c.global_default = Some(name.clone());
            }
            c.pod.insert(name, p.value);
        }
    }
    c
}

fn print(x: &Value, output: Option<&str>, first: bool, out: &mut dyn Write) -> Result<(), Error> {
    match output {
        Some("json") => write_json(x, out)?,
        Some("yaml") => write_yaml(x, first, out)?,
        None | Some("") => {
            if !first {
                writeln!(out)?;
            }
            write!(out, "{}", plain(x))?;
        }
        Some(other) => {
            return Err(Error::Usage(format!(
                "unable to match a printer suitable for the output format {other:?}, allowed formats are: json,yaml"
            )))
        }
    }
    Ok(())
}

/// The Workloads of `namespace` a `kind` named `name` owns.
async fn owned_by(
    client: &Client,
    namespace: &str,
    kind: &str,
    name: &str,
) -> Result<Vec<String>, Error> {
    let want = kind.to_lowercase();
    let singular = want.strip_suffix('s').unwrap_or(&want).to_string();
    let list = Api::<Workload>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?;
    let found: Vec<String> = list
        .items
        .iter()
        .filter(|w| {
            w.metadata.owner_references.iter().flatten().any(|o| {
                let k = o.kind.to_lowercase();
                o.name == name && (k == want || k == singular)
            })
        })
        .filter_map(|w| w.metadata.name.clone())
        .collect();
    if found.is_empty() {
        return Err(Error::Api(format!(
            "no Workload in namespace {namespace} is owned by {kind} {name}: is it queued (label kueue.x-k8s.io/queue-name), and was it created in this namespace?"
        )));
    }
    Ok(found)
}

/// `status.admissionChecks` of the Workload, as `checkStates`; once its
/// `Admitted` condition is true (every check Ready), the state says so.
async fn add_check_states(client: &Client, namespace: &str, name: &str, x: &mut Value) {
    let Ok(wl) = Api::<Workload>::namespaced(client.clone(), namespace)
        .get(name)
        .await
    else {
        return;
    };
    let Ok(wl) = serde_json::to_value(&wl) else {
        return;
    };
    let admitted = wl["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Admitted" && c["status"] == "True");
    if admitted {
        x["state"] = "Admitted".into();
        if let Some(lines) = x["summary"].as_array_mut() {
            lines.insert(0, "It is admitted: its admission checks are Ready.".into());
        }
    }
    let placements = topology_placements(&wl);
    if !placements.is_empty() {
        x["topology"] = Value::Array(placements);
    }
    if let Some(states) = wl["status"]["admissionChecks"].as_array() {
        x["checkStates"] = Value::Array(
            states
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "name": c["name"], "state": c["state"], "message": c["message"],
                    })
                })
                .collect(),
        );
    }
}

/// Each admitted pod set's `topologyAssignment`, its slices expanded to
/// one domain per entry: `{podSet, levels, domains: [{values, count}]}`.
/// One that does not read is shown by its problem instead.
fn topology_placements(wl: &Value) -> Vec<Value> {
    let assignments = wl["status"]["admission"]["podSetAssignments"].as_array();
    let mut out = Vec::new();
    for a in assignments.into_iter().flatten() {
        let ta = &a["topologyAssignment"];
        let Some(levels) = ta["levels"].as_array() else {
            continue;
        };
        let mut entry = serde_json::json!({"podSet": a["name"], "levels": levels});
        match topology::expand(&ta["slices"], levels.len()) {
            Ok(domains) => {
                entry["domains"] = Value::Array(
                    domains
                        .iter()
                        .map(|d| serde_json::json!({"values": d.values, "count": d.count}))
                        .collect(),
                )
            }
            Err(e) => entry["problem"] = format!("{}: {}", e.field, e.problem).into(),
        }
        out.push(entry);
    }
    out
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A workload by name, or how an unnamed one (another namespace) reads.
fn who(v: &Value) -> String {
    match (s(&v["namespace"]), s(&v["name"])) {
        ("", _) | (_, "") => "(a workload of another namespace)".into(),
        (ns, n) => format!("{ns}/{n}"),
    }
}

/// The explanation in plain words.
pub fn plain(x: &Value) -> String {
    let mut o = String::new();
    let m = &x["metadata"];
    let queues = match x["clusterQueue"].as_str() {
        Some(cq) => format!("LocalQueue {} → ClusterQueue {cq}", s(&x["localQueue"])),
        None => format!("LocalQueue {}", s(&x["localQueue"])),
    };
    o.push_str(&format!(
        "Workload {}/{} ({queues})\nState:   {}\n",
        s(&m["namespace"]),
        s(&m["name"]),
        s(&x["state"])
    ));
    o.push_str("Why:\n");
    for line in x["summary"].as_array().into_iter().flatten() {
        o.push_str(&format!("  - {}\n", s(line)));
    }
    if let Some(p) = x.get("position") {
        let ahead = p["ahead"].as_array().cloned().unwrap_or_default();
        let at = p["inClusterQueue"].as_u64().unwrap_or(0);
        o.push_str(&format!(
            "Position: {at} in ClusterQueue {}",
            s(&x["clusterQueue"])
        ));
        if ahead.is_empty() {
            o.push_str(" (the head)\n");
        } else {
            let shown = if (ahead.len() as u64) < at.saturating_sub(1) {
                format!("; the nearest {} of {} ahead:\n", ahead.len(), at - 1)
            } else {
                "; ahead of it:\n".to_string()
            };
            o.push_str(&shown);
            let mut t = Table::new(vec!["WORKLOAD", "PRIORITY", "LOCALQUEUE"]);
            for a in &ahead {
                t.rows.push(vec![
                    who(a),
                    a["priority"].to_string(),
                    s(&a["localQueue"]).to_string(),
                ]);
            }
            o.push_str(&indent(&t.render(true)));
        }
    }
    if let Some(n) = x.get("nomination") {
        o.push_str(&format!("Next cycle: {}", s(&n["mode"])));
        match n["message"].as_str() {
            Some(msg) if !msg.is_empty() => o.push_str(&format!(" — {msg}\n")),
            _ => o.push('\n'),
        }
        let victims = n["wouldPreempt"].as_array().cloned().unwrap_or_default();
        if !victims.is_empty() {
            o.push_str("Would preempt:\n");
            let mut t = Table::new(vec!["WORKLOAD", "PRIORITY", "CLUSTERQUEUE", "REASON"]);
            for v in &victims {
                t.rows.push(vec![
                    who(v),
                    v["priority"].to_string(),
                    s(&v["clusterQueue"]).to_string(),
                    s(&v["reason"]).to_string(),
                ]);
            }
            o.push_str(&indent(&t.render(true)));
        }
    }
    for q in x["quota"].as_array().into_iter().flatten() {
        o.push_str(&format!(
            "Quota for pod set {}, {} on flavor {} (requested {}):\n",
            s(&q["podSet"]),
            s(&q["resource"]),
            s(&q["flavor"]),
            s(&q["requested"])
        ));
        let mut t = Table::new(vec!["LEVEL", "QUOTA", "USED", "FREE"]);
        for l in q["levels"].as_array().into_iter().flatten() {
            t.rows.push(vec![
                s(&l["name"]).to_string(),
                s(&l["quota"]).to_string(),
                s(&l["used"]).to_string(),
                s(&l["free"]).to_string(),
            ]);
        }
        o.push_str(&indent(&t.render(true)));
    }
    for t in x["topology"].as_array().into_iter().flatten() {
        let levels: Vec<&str> = t["levels"]
            .as_array()
            .into_iter()
            .flatten()
            .map(s)
            .collect();
        o.push_str(&format!(
            "Topology placement of pod set {} ({}):\n",
            s(&t["podSet"]),
            levels.join(" / ")
        ));
        if let Some(problem) = t["problem"].as_str() {
            o.push_str(&format!("  unreadable: {problem}\n"));
            continue;
        }
        let mut table = Table::new(vec!["DOMAIN", "PODS"]);
        for d in t["domains"].as_array().into_iter().flatten() {
            let values: Vec<&str> = d["values"]
                .as_array()
                .into_iter()
                .flatten()
                .map(s)
                .collect();
            table
                .rows
                .push(vec![values.join(" / "), d["count"].to_string()]);
        }
        o.push_str(&indent(&table.render(true)));
    }
    if let Some(states) = x["checkStates"].as_array() {
        o.push_str("Admission checks:\n");
        for c in states {
            let msg = s(&c["message"]);
            o.push_str(&format!(
                "  {}: {}{}\n",
                s(&c["name"]),
                s(&c["state"]),
                if msg.is_empty() {
                    String::new()
                } else {
                    format!(" ({msg})")
                }
            ));
        }
    } else if let Some(checks) = x["admissionChecks"].as_array() {
        let names: Vec<&str> = checks.iter().map(s).collect();
        o.push_str(&format!("Admission checks: {}\n", names.join(", ")));
    }
    o
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// An admitted TAS Workload's placement, from its v1beta2 slices.
    #[test]
    fn a_topology_placement_reads_as_a_table_of_domains() {
        let wl = json!({"status": {"admission": {"podSetAssignments": [
            {"name": "main", "topologyAssignment": {
                "levels": ["cloud.com/rack", "kubernetes.io/hostname"],
                "slices": [{"domainCount": 2,
                    "valuesPerLevel": [{"universal": "r1"},
                        {"individual": {"prefix": "node-", "roots": ["a", "b"]}}],
                    "podCounts": {"individual": [3, 1]}}]}},
            {"name": "plain"}]}}});
        let mut x = json!({"metadata": {"namespace": "team", "name": "job-a"},
            "state": "Admitted", "localQueue": "lq", "clusterQueue": "cq", "summary": []});
        x["topology"] = Value::Array(topology_placements(&wl));
        let text = plain(&x);
        assert!(
            text.ends_with(
                "Topology placement of pod set main (cloud.com/rack / kubernetes.io/hostname):
  DOMAIN        PODS
  r1 / node-a   3
  r1 / node-b   1
"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_pending_workload_reads_in_plain_words() {
        let x = json!({
            "kind": "WorkloadExplanation",
            "metadata": {"namespace": "team", "name": "job-a"},
            "state": "Pending", "localQueue": "lq", "clusterQueue": "cq",
            "summary": ["It fits if 1 workload(s) are preempted (below): the next admission cycle preempts them."],
            "position": {"inClusterQueue": 2, "ahead": [
                {"namespace": "", "name": "", "localQueue": "", "priority": 10}]},
            "nomination": {"mode": "Preempt", "message": "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor f, 1 more needed",
                "flavors": {"main": {"cpu": "f"}},
                "wouldPreempt": [{"namespace": "team", "name": "old", "clusterQueue": "cq", "priority": 0, "reason": "InClusterQueue"}]},
            "quota": [{"podSet": "main", "resource": "cpu", "flavor": "f", "requested": "2",
                "levels": [{"name": "cq", "quota": "2", "used": "1", "free": "1"}]}],
        });
        let text = plain(&x);
        assert_eq!(
            text,
            "Workload team/job-a (LocalQueue lq → ClusterQueue cq)
State:   Pending
Why:
  - It fits if 1 workload(s) are preempted (below): the next admission cycle preempts them.
Position: 2 in ClusterQueue cq; ahead of it:
  WORKLOAD                            PRIORITY   LOCALQUEUE
  (a workload of another namespace)   10         
Next cycle: Preempt — couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor f, 1 more needed
Would preempt:
  WORKLOAD   PRIORITY   CLUSTERQUEUE   REASON
  team/old   0          cq             InClusterQueue
Quota for pod set main, cpu on flavor f (requested 2):
  LEVEL   QUOTA   USED   FREE
  cq      2       1      1
"
        );
    }
}
