//! batchgate's generated CRDs against the upstream CRDs as released
//! (Kueue v0.19.2, AppWrapper v1.2.1), kept unmodified in
//! `tests/fixtures/upstream-crds/` by its `extract.sh`.
//!
//! The diff is structural: per kind and version, the CRD's names, scope,
//! served/storage/deprecation, subresources, printer columns and selectable
//! fields, and the `openAPIV3Schema` tree: every property name and, at each
//! node, every keyword (type, format, required, enum, default, limits,
//! patterns, `x-kubernetes-*` markers, CEL rules with their messages).
//! Descriptions are not compared (batchgate strips the pod template's to
//! stay under kubectl's last-applied limit).
//!
//! Any difference fails the test unless [`ALLOWED`] lists it with a reason;
//! an entry of [`ALLOWED`] that no longer matches a difference fails too,
//! so the list cannot outlive the drift it documents.

use std::collections::BTreeMap;

use batchgate::api::crd;
use serde_json::{json, Value};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The upstream files, by the kind they define.
const FIXTURES: [(&str, &str); 12] = [
    ("AdmissionCheck", "kueue.x-k8s.io_admissionchecks.yaml"),
    ("ClusterQueue", "kueue.x-k8s.io_clusterqueues.yaml"),
    ("Cohort", "kueue.x-k8s.io_cohorts.yaml"),
    ("LocalQueue", "kueue.x-k8s.io_localqueues.yaml"),
    (
        "MultiKueueCluster",
        "kueue.x-k8s.io_multikueueclusters.yaml",
    ),
    ("MultiKueueConfig", "kueue.x-k8s.io_multikueueconfigs.yaml"),
    (
        "ProvisioningRequestConfig",
        "kueue.x-k8s.io_provisioningrequestconfigs.yaml",
    ),
    ("ResourceFlavor", "kueue.x-k8s.io_resourceflavors.yaml"),
    ("Topology", "kueue.x-k8s.io_topologies.yaml"),
    (
        "WorkloadPriorityClass",
        "kueue.x-k8s.io_workloadpriorityclasses.yaml",
    ),
    ("Workload", "kueue.x-k8s.io_workloads.yaml"),
    ("AppWrapper", "workload.codeflare.dev_appwrappers.yaml"),
];

/// A documented, deliberate difference: `kind`, `version` (`*`: any),
/// `path` (the CRD-level key or the schema path, as printed by the diff),
/// `keyword` (`*`: any) and why batchgate differs.
struct Allowed {
    kind: &'static str,
    version: &'static str,
    path: &'static str,
    keyword: &'static str,
    reason: &'static str,
}

/// The deliberate differences (see docs/kueue-api.md, "CRD conformance").
const ALLOWED: &[Allowed] = &[
    Allowed {
        kind: "*",
        version: "-",
        path: "spec.conversion",
        keyword: "*",
        reason: "upstream's release points the conversion webhook at Kueue's own Service \
                 (filled in by kustomize); batchgate's points at batchgate-webhook",
    },
    Allowed {
        kind: "*",
        version: "-",
        path: "metadata.annotations",
        keyword: "*",
        reason: "controller-gen's version annotation names the generator, not an API difference",
    },
];

fn load_fixture(file: &str) -> Value {
    let path = format!("{ROOT}/tests/fixtures/upstream-crds/{file}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn generated(kind: &str) -> Value {
    crd::all()
        .into_iter()
        .map(|g| g.crd)
        .find(|c| c["spec"]["names"]["kind"] == kind)
        .unwrap_or_else(|| panic!("batchgate generates no CRD for {kind}"))
}

/// Every schema node by path (`.spec.podSets[].template`; `{}` for
/// `additionalProperties`), with its keywords other than the ones that
/// lead to children and `description`.
fn flatten(node: &Value, path: &str, out: &mut BTreeMap<String, BTreeMap<String, Value>>) {
    let Some(obj) = node.as_object() else {
        return;
    };
    let mut own = BTreeMap::new();
    for (k, v) in obj {
        match k.as_str() {
            "description" => {}
            "properties" => {
                for (name, child) in v.as_object().into_iter().flatten() {
                    flatten(child, &format!("{path}.{name}"), out);
                }
            }
            "items" => flatten(v, &format!("{path}[]"), out),
            "additionalProperties" if v.is_object() => flatten(v, &format!("{path}{{}}"), out),
            "required" => {
                let mut names: Vec<Value> = v.as_array().cloned().unwrap_or_default();
                names.sort_by_key(|n| n.to_string());
                own.insert(k.clone(), Value::Array(names));
            }
            _ => {
                own.insert(k.clone(), v.clone());
            }
        }
    }
    out.insert(
        if path.is_empty() {
            ".".into()
        } else {
            path.into()
        },
        own,
    );
}

/// One difference, as printed and matched against [`ALLOWED`].
#[derive(Debug)]
struct Difference {
    kind: String,
    version: String,
    path: String,
    keyword: String,
    upstream: Option<Value>,
    batchgate: Option<Value>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| match v {
            None => "(absent)".to_string(),
            Some(v) => {
                let s = v.to_string();
                if s.chars().count() > 200 {
                    format!("{}…", s.chars().take(200).collect::<String>())
                } else {
                    s
                }
            }
        };
        write!(
            f,
            "{} {} {} {}: upstream {}, batchgate {}",
            self.kind,
            self.version,
            self.path,
            self.keyword,
            show(&self.upstream),
            show(&self.batchgate)
        )
    }
}

fn differences(kind: &str, upstream: &Value, ours: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut push =
        |version: &str, path: &str, keyword: &str, u: Option<&Value>, b: Option<&Value>| {
            if u != b {
                out.push(Difference {
                    kind: kind.into(),
                    version: version.into(),
                    path: path.into(),
                    keyword: keyword.into(),
                    upstream: u.cloned(),
                    batchgate: b.cloned(),
                });
            }
        };
    // CRD level: everything but the versions, metadata by key.
    for key in ["name", "annotations", "labels"] {
        push(
            "-",
            &format!("metadata.{key}"),
            "value",
            upstream["metadata"].get(key),
            ours["metadata"].get(key),
        );
    }
    let keys = |v: &Value| -> Vec<String> {
        v["spec"]
            .as_object()
            .map(|o| o.keys().filter(|k| *k != "versions").cloned().collect())
            .unwrap_or_default()
    };
    let mut spec_keys = keys(upstream);
    spec_keys.extend(keys(ours));
    spec_keys.sort();
    spec_keys.dedup();
    for key in &spec_keys {
        push(
            "-",
            &format!("spec.{key}"),
            "value",
            upstream["spec"].get(key),
            ours["spec"].get(key),
        );
    }
    let names = |v: &Value| -> Vec<Value> {
        v["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| v["name"].clone())
            .collect()
    };
    push(
        "-",
        "spec.versions[].name",
        "order",
        Some(&json!(names(upstream))),
        Some(&json!(names(ours))),
    );
    let empty = json!({});
    for name in names(upstream) {
        let version = name.as_str().unwrap_or_default();
        let find = |v: &Value| -> Value {
            v["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|x| x["name"] == name)
                .cloned()
                .unwrap_or_else(|| empty.clone())
        };
        let (u, b) = (find(upstream), find(ours));
        let mut version_keys: Vec<String> = u
            .as_object()
            .into_iter()
            .chain(b.as_object())
            .flat_map(|o| o.keys().cloned())
            .filter(|k| k != "schema")
            .collect();
        version_keys.sort();
        version_keys.dedup();
        for key in &version_keys {
            push(version, key, "value", u.get(key), b.get(key));
        }
        let (mut ut, mut bt) = (BTreeMap::new(), BTreeMap::new());
        flatten(&u["schema"]["openAPIV3Schema"], "", &mut ut);
        flatten(&b["schema"]["openAPIV3Schema"], "", &mut bt);
        for (path, un) in &ut {
            let Some(bn) = bt.get(path) else {
                // Report a missing subtree once, at its top.
                if !ut.contains_key(parent(path)) || bt.contains_key(parent(path)) {
                    push(version, path, "property", Some(&json!("present")), None);
                }
                continue;
            };
            let mut kws: Vec<&String> = un.keys().chain(bn.keys()).collect();
            kws.sort();
            kws.dedup();
            for kw in kws {
                push(version, path, kw, un.get(kw), bn.get(kw));
            }
        }
        for path in bt.keys() {
            if !ut.contains_key(path) && ut.contains_key(parent(path)) {
                push(version, path, "property", None, Some(&json!("present")));
            }
        }
    }
    out
}

/// `.a.b[]` → `.a.b`, `.a.b` → `.a`, `.a` → `.`.
fn parent(path: &str) -> &str {
    if let Some(p) = path.strip_suffix("[]").or_else(|| path.strip_suffix("{}")) {
        return p;
    }
    match path.rfind('.') {
        Some(0) | None => ".",
        Some(i) => &path[..i],
    }
}

fn allowed(d: &Difference) -> Option<usize> {
    ALLOWED.iter().position(|a| {
        (a.kind == "*" || a.kind == d.kind)
            && (a.version == "*" || a.version == d.version)
            && (a.path == d.path
                || a.path
                    .strip_suffix('*')
                    .is_some_and(|prefix| d.path.starts_with(prefix)))
            && (a.keyword == "*" || a.keyword == d.keyword)
    })
}

#[test]
fn generated_crds_match_the_released_upstream_crds_but_for_the_documented_differences() {
    let mut unexplained = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for (kind, file) in FIXTURES {
        let upstream = load_fixture(file);
        assert_eq!(upstream["spec"]["names"]["kind"], kind, "{file}");
        for d in differences(kind, &upstream, &generated(kind)) {
            match allowed(&d) {
                Some(i) => used[i] = true,
                None => unexplained.push(d.to_string()),
            }
        }
    }
    let stale: Vec<String> = ALLOWED
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(a, _)| {
            format!(
                "{} {} {} {} ({})",
                a.kind, a.version, a.path, a.keyword, a.reason
            )
        })
        .collect();
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "{} difference(s) from the released CRDs not in ALLOWED:\n{}\n\n\
         {} ALLOWED entr(y/ies) matching no difference (remove them):\n{}",
        unexplained.len(),
        unexplained.join("\n"),
        stale.len(),
        stale.join("\n"),
    );
}

/// The diff itself catches what it claims to: a changed enum, a dropped
/// marker, a renamed property and a rule with other words are each one
/// reported difference.
#[test]
fn the_diff_reports_each_kind_of_change() {
    let upstream = load_fixture("kueue.x-k8s.io_workloads.yaml");
    assert!(differences("Workload", &upstream, &upstream).is_empty());
    let v = "/spec/versions/1/schema/openAPIV3Schema/properties";
    let gate = format!("{v}/status/properties/preemptionGates/items/properties");
    type Change<'a> = Box<dyn Fn(&mut Value) + 'a>;
    let cases: Vec<(&str, Change)> = vec![
        (
            "enum",
            Box::new(|c: &mut Value| {
                c.pointer_mut(&format!("{gate}/position/enum"))
                    .map(|e| *e = json!(["Open"]))
                    .unwrap()
            }),
        ),
        (
            "x-kubernetes-list-type",
            Box::new(|c: &mut Value| {
                c.pointer_mut(&format!("{v}/spec/properties/podSets/items/properties/template/properties/spec/properties/containers"))
                    .and_then(Value::as_object_mut)
                    .map(|o| o.remove("x-kubernetes-list-type"))
                    .unwrap();
            }),
        ),
        (
            "property",
            Box::new(|c: &mut Value| {
                let props = c.pointer_mut(&gate).and_then(Value::as_object_mut).unwrap();
                let p = props.remove("position").unwrap();
                props.insert("state".into(), p);
            }),
        ),
        (
            "x-kubernetes-validations",
            Box::new(|c: &mut Value| {
                c.pointer_mut(
                    "/spec/versions/1/schema/openAPIV3Schema/x-kubernetes-validations/0/message",
                )
                .map(|m| *m = json!("other words"))
                .unwrap()
            }),
        ),
    ];
    for (keyword, change) in cases {
        let mut ours = upstream.clone();
        change(&mut ours);
        let d = differences("Workload", &upstream, &ours);
        assert!(
            !d.is_empty() && d.iter().all(|d| d.keyword == keyword),
            "{keyword}: {d:#?}"
        );
    }
}
