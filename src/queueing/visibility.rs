//! Kueue's visibility API (`visibility.kueue.x-k8s.io`, v1beta2 and
//! v1beta1), computed on read from the queueing engine: positions cost the
//! apiserver nothing until somebody asks.
//!
//! The pure part: a [`Snapshot`] of the pending queues (taken by the
//! queueing controller and handed over by
//! [`crate::cluster::positions::Positions`]), the routes Kueue v0.19.2
//! serves (`pkg/visibility/storage`), the `limit`/`offset` options with
//! their default and maximum, the `PendingWorkloadsSummary` bodies, the
//! discovery documents and the `Status` errors. The HTTPS listener, front
//! proxy authentication and SubjectAccessReviews are in
//! `src/server/visibility.rs`.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use serde_json::{json, Value};

use crate::queueing::{Engine, Explanation};

pub const GROUP: &str = "visibility.kueue.x-k8s.io";
/// Served versions, preferred first (Kueue's `PrioritizedVersions`).
pub const VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];
/// `constants.DefaultPendingWorkloadsLimit`.
pub const DEFAULT_LIMIT: i64 = 1000;
/// `constants.MaxPendingWorkloadsLimit`.
pub const MAX_LIMIT: i64 = 100_000;

/// A pending Workload as a summary lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub namespace: Arc<str>,
    pub name: String,
    pub local_queue: Arc<str>,
    pub priority: i32,
    /// `metadata.creationTimestamp`, milliseconds since the Unix epoch.
    pub created: i64,
    pub uid: Arc<str>,
}

/// The pending queues at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Every ClusterQueue the engine knows, its pending Workloads in queue
    /// order (higher priority, older, then UID; admissible and set-aside
    /// alike, as Kueue's `ClusterQueue.Snapshot` sorts them).
    pub cluster_queues: BTreeMap<String, Vec<Pending>>,
    /// `(namespace, LocalQueue)` to its ClusterQueue.
    pub local_queues: HashMap<(String, String), String>,
}

impl Snapshot {
    pub fn of(engine: &Engine) -> Snapshot {
        let mut cluster_queues = BTreeMap::new();
        for cq in engine.cluster_queue_names() {
            let mut pending: Vec<Pending> = engine
                .pending_workloads(cq)
                .iter()
                .filter_map(|k| engine.workload(k))
                .map(|w| Pending {
                    namespace: w.namespace.clone(),
                    name: w.name.clone(),
                    local_queue: w.queue_name.clone(),
                    priority: w.priority,
                    created: w.created,
                    uid: w.uid.clone(),
                })
                .collect();
            order(&mut pending);
            cluster_queues.insert(cq.to_string(), pending);
        }
        let local_queues = engine
            .local_queues()
            .map(|lq| {
                (
                    (lq.namespace.to_string(), lq.name.to_string()),
                    lq.cluster_queue.to_string(),
                )
            })
            .collect();
        Snapshot {
            cluster_queues,
            local_queues,
        }
    }
}

/// Queue order: higher priority, then older, then UID.
pub fn order(pending: &mut [Pending]) {
    pending.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.created.cmp(&b.created))
            .then_with(|| a.uid.cmp(&b.uid))
    });
}

/// A request the visibility API answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /apis`: the group list (legacy discovery).
    Groups,
    /// `GET /apis/visibility.kueue.x-k8s.io`.
    Group,
    /// `GET /apis/visibility.kueue.x-k8s.io/<version>`.
    Resources { version: &'static str },
    /// `.../clusterqueues/<name>/pendingworkloads`.
    ClusterQueue { version: &'static str, name: String },
    /// `.../namespaces/<ns>/localqueues/<name>/pendingworkloads`.
    LocalQueue {
        version: &'static str,
        namespace: String,
        name: String,
    },
    /// `.../namespaces/<ns>/workloads/<name>/explanation`: why a Workload
    /// waits (batchgate's; Kueue has no such resource).
    Explanation {
        version: &'static str,
        namespace: String,
        name: String,
    },
    /// `POST .../namespaces/<ns>/workloads/<name>/simulation` with a
    /// Workload: what would happen to it, were it created now
    /// (batchgate's).
    Simulation {
        version: &'static str,
        namespace: String,
        name: String,
    },
}

impl Route {
    /// `None`: not a path of this API (404).
    pub fn parse(path: &str) -> Option<Route> {
        let path = path.trim_end_matches('/');
        if path == "/apis" {
            return Some(Route::Groups);
        }
        let rest = path.strip_prefix("/apis/")?.strip_prefix(GROUP)?;
        if rest.is_empty() {
            return Some(Route::Group);
        }
        let mut parts = rest.strip_prefix('/')?.split('/');
        let v = parts.next()?;
        let version = VERSIONS.into_iter().find(|x| *x == v)?;
        let segs: Vec<&str> = parts.collect();
        if segs.iter().any(|s| s.is_empty()) {
            return None;
        }
        match segs.as_slice() {
            [] => Some(Route::Resources { version }),
            ["clusterqueues", name, "pendingworkloads"] => Some(Route::ClusterQueue {
                version,
                name: name.to_string(),
            }),
            ["namespaces", ns, "localqueues", name, "pendingworkloads"] => {
                Some(Route::LocalQueue {
                    version,
                    namespace: ns.to_string(),
                    name: name.to_string(),
                })
            }
            ["namespaces", ns, "workloads", name, "explanation"] => Some(Route::Explanation {
                version,
                namespace: ns.to_string(),
                name: name.to_string(),
            }),
            ["namespaces", ns, "workloads", name, "simulation"] => Some(Route::Simulation {
                version,
                namespace: ns.to_string(),
                name: name.to_string(),
            }),
            _ => None,
        }
    }

    /// What a SubjectAccessReview asks for this request: `(resource,
    /// subresource, namespace, name)`, `None` for discovery (open to every
    /// caller).
    pub fn attributes(&self) -> Option<(&'static str, &'static str, &str, &str)> {
        match self {
            Route::ClusterQueue { name, .. } => {
                Some(("clusterqueues", "pendingworkloads", "", name))
            }
            Route::LocalQueue {
                namespace, name, ..
            } => Some(("localqueues", "pendingworkloads", namespace, name)),
            Route::Explanation {
                namespace, name, ..
            } => Some(("workloads", "explanation", namespace, name)),
            Route::Simulation {
                namespace, name, ..
            } => Some(("workloads", "simulation", namespace, name)),
            _ => None,
        }
    }

    /// The verb of the request: `create` for a simulation (a POST), else
    /// `get`.
    pub fn verb(&self) -> &'static str {
        match self {
            Route::Simulation { .. } => "create",
            _ => "get",
        }
    }

    /// The version of a resource request (`None` for discovery).
    pub fn version(&self) -> Option<&'static str> {
        match self {
            Route::ClusterQueue { version, .. }
            | Route::LocalQueue { version, .. }
            | Route::Explanation { version, .. }
            | Route::Simulation { version, .. } => Some(version),
            _ => None,
        }
    }
}

/// `PendingWorkloadOptions` from the query string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub limit: i64,
    pub offset: i64,
}

/// A request the API refuses, as a `metav1.Status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{kind}.{GROUP} \"{name}\" not found")]
    NotFound { kind: &'static str, name: String },
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
}

impl Error {
    pub fn code(&self) -> u16 {
        match self {
            Error::NotFound { .. } => 404,
            Error::BadRequest(_) => 400,
            Error::Unavailable(_) => 503,
            Error::Unauthorized(_) => 401,
            Error::Forbidden(_) => 403,
        }
    }

    /// The `Status` body, as the apiserver machinery writes it.
    pub fn status(&self) -> Value {
        let reason = match self {
            Error::NotFound { .. } => "NotFound",
            Error::BadRequest(_) => "BadRequest",
            Error::Unavailable(_) => "ServiceUnavailable",
            Error::Unauthorized(_) => "Unauthorized",
            Error::Forbidden(_) => "Forbidden",
        };
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": reason,
            "code": self.code(),
        });
        if let Error::NotFound { kind, name } = self {
            s["details"] = json!({"name": name, "group": GROUP, "kind": kind});
        }
        s
    }
}

/// The message of a request a user may not make (the apiserver's words).
pub fn forbidden(user: &str, route: &Route, reason: &str) -> Error {
    let Some((resource, subresource, namespace, name)) = route.attributes() else {
        return Error::Forbidden(format!("User \"{user}\" cannot get path"));
    };
    let scope = if namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace \"{namespace}\"")
    };
    let mut m = format!(
        "{resource}.{GROUP} \"{name}\" is forbidden: User \"{user}\" cannot {} resource \"{resource}/{subresource}\" in API group \"{GROUP}\" {scope}",
        route.verb()
    );
    if !reason.is_empty() {
        m.push_str(": ");
        m.push_str(reason);
    }
    Error::Forbidden(m)
}

impl Options {
    /// `limit` (default [`DEFAULT_LIMIT`]) and `offset` (default 0), then
    /// bounded as Kueue bounds them: `limit` into `0..=MAX_LIMIT`, a
    /// negative `offset` to 0.
    pub fn parse(query: Option<&str>) -> Result<Options, Error> {
        let mut o = Options {
            limit: DEFAULT_LIMIT,
            offset: 0,
        };
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let slot = match k {
                "limit" => &mut o.limit,
                "offset" => &mut o.offset,
                _ => continue,
            };
            *slot = v.parse::<i64>().map_err(|_| {
                Error::BadRequest(format!(
                    "{k}: invalid value {v:?}: want an integer (limit: how many pending workloads, {DEFAULT_LIMIT} by default; offset: the position of the first, 0 by default)"
                ))
            })?;
        }
        // An explicit `limit=0` is the default too (SetDefaults_PendingWorkloadOptions).
        if o.limit == 0 {
            o.limit = DEFAULT_LIMIT;
        }
        o.limit = o.limit.clamp(0, MAX_LIMIT);
        o.offset = o.offset.max(0);
        Ok(o)
    }
}

/// One item of a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item<'a> {
    pub workload: &'a Pending,
    pub in_cluster_queue: usize,
    pub in_local_queue: usize,
}

/// `clusterqueues/<name>/pendingworkloads`: positions `offset..offset+limit`
/// of the ClusterQueue, each with its position in its LocalQueue.
pub fn cluster_queue<'a>(s: &'a Snapshot, name: &str, o: Options) -> Result<Vec<Item<'a>>, Error> {
    let pending = s.cluster_queues.get(name).ok_or_else(|| Error::NotFound {
        kind: "clusterqueue",
        name: name.to_string(),
    })?;
    let end = usize::try_from(o.offset.saturating_add(o.limit)).unwrap_or(usize::MAX);
    let start = usize::try_from(o.offset).unwrap_or(usize::MAX);
    let mut in_lq: HashMap<(&str, &str), usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, w) in pending.iter().enumerate().take(end) {
        let n = in_lq.entry((&w.namespace, &w.local_queue)).or_default();
        if i >= start {
            out.push(Item {
                workload: w,
                in_cluster_queue: i,
                in_local_queue: *n,
            });
        }
        *n += 1;
    }
    Ok(out)
}

/// `namespaces/<ns>/localqueues/<name>/pendingworkloads`: the LocalQueue's
/// positions `offset..offset+limit`, each with its ClusterQueue position.
pub fn local_queue<'a>(
    s: &'a Snapshot,
    namespace: &str,
    name: &str,
    o: Options,
) -> Result<Vec<Item<'a>>, Error> {
    let not_found = || Error::NotFound {
        kind: "localqueue",
        name: name.to_string(),
    };
    let cq = s
        .local_queues
        .get(&(namespace.to_string(), name.to_string()))
        .ok_or_else(not_found)?;
    let limit = usize::try_from(o.limit).unwrap_or(usize::MAX);
    let offset = usize::try_from(o.offset).unwrap_or(usize::MAX);
    Ok(s.cluster_queues
        .get(cq)
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, w)| &*w.namespace == namespace && &*w.local_queue == name)
        .enumerate()
        .skip(offset)
        .take(limit)
        .map(|(j, (i, w))| Item {
            workload: w,
            in_cluster_queue: i,
            in_local_queue: j,
        })
        .collect())
}

/// RFC 3339 in whole seconds, as `metav1.Time` serialises.
fn timestamp(ms: i64) -> Value {
    k8s_openapi::jiff::Timestamp::from_second(ms.div_euclid(1000))
        .map(|t| Value::String(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()))
        .unwrap_or(Value::Null)
}

/// The `PendingWorkloadsSummary` body in `version`.
pub fn summary(version: &str, items: &[Item<'_>]) -> Value {
    let items: Vec<Value> = items
        .iter()
        .map(|it| {
            let w = it.workload;
            json!({
                "metadata": {
                    "name": w.name,
                    "namespace": &*w.namespace,
                    "creationTimestamp": timestamp(w.created),
                },
                "priority": w.priority,
                "localQueueName": &*w.local_queue,
                "positionInClusterQueue": it.in_cluster_queue,
                "positionInLocalQueue": it.in_local_queue,
            })
        })
        .collect();
    json!({
        "kind": "PendingWorkloadsSummary",
        "apiVersion": format!("{GROUP}/{version}"),
        "metadata": {},
        "items": items,
    })
}

fn group_versions() -> (Vec<Value>, Value) {
    let v: Vec<Value> = VERSIONS
        .iter()
        .map(|v| json!({"groupVersion": format!("{GROUP}/{v}"), "version": v}))
        .collect();
    let preferred = v[0].clone();
    (v, preferred)
}

/// `GET /apis/visibility.kueue.x-k8s.io`.
pub fn group() -> Value {
    let (versions, preferred) = group_versions();
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": versions,
        "preferredVersion": preferred,
    })
}

/// `GET /apis`: this server's only group.
pub fn groups() -> Value {
    let mut g = group();
    if let Some(o) = g.as_object_mut() {
        o.remove("kind");
        o.remove("apiVersion");
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [g]})
}

/// `GET /apis/visibility.kueue.x-k8s.io/<version>`: the four resources
/// Kueue installs (the parents have no verbs; only the subresources `get`).
pub fn resources(version: &str) -> Value {
    let r = |name: &str, singular: &str, namespaced: bool, kind: &str, verbs: &[&str]| {
        json!({
            "name": name,
            "singularName": singular,
            "namespaced": namespaced,
            "kind": kind,
            "verbs": verbs,
        })
    };
    const SUMMARY: &str = "PendingWorkloadsSummary";
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{version}"),
        "resources": [
            r("clusterqueues", "clusterqueue", false, SUMMARY, &[]),
            r("clusterqueues/pendingworkloads", "", false, SUMMARY, &["get"]),
            r("localqueues", "localqueue", true, SUMMARY, &[]),
            r("localqueues/pendingworkloads", "", true, SUMMARY, &["get"]),
            // batchgate's: why a Workload waits.
            r("workloads", "workload", true, EXPLANATION, &[]),
            r("workloads/explanation", "", true, EXPLANATION, &["get"]),
            r("workloads/simulation", "", true, EXPLANATION, &["create"]),
        ],
    })
}

/// The kind of an explanation.
pub const EXPLANATION: &str = "WorkloadExplanation";

/// The body of `workloads/<name>/explanation`.
pub fn explanation(version: &str, namespace: &str, name: &str, x: &Explanation) -> Value {
    let mut body = json!({
        "kind": EXPLANATION,
        "apiVersion": format!("{GROUP}/{version}"),
        "metadata": {"name": name, "namespace": namespace},
    });
    if let (Some(b), Ok(Value::Object(fields))) = (body.as_object_mut(), serde_json::to_value(x)) {
        b.extend(fields);
    }
    body
}

/// Answers an authorised request from `snapshot` (`None`: this replica
/// keeps no queues).
/// `explained`: the engine's explanation, for [`Route::Explanation`]
/// (`None`: the engine does not know the Workload).
pub fn answer(
    route: &Route,
    query: Option<&str>,
    snapshot: Option<&Snapshot>,
    explained: Option<&Explanation>,
) -> Result<Value, Error> {
    let queues = || {
        snapshot.ok_or_else(|| {
            Error::Unavailable(
                "this batchgate replica keeps no queues yet: its queueing engine has not listed the cluster (or `admission: external` runs none); retry".into(),
            )
        })
    };
    match route {
        Route::Groups => Ok(groups()),
        Route::Group => Ok(group()),
        Route::Resources { version } => Ok(resources(version)),
        Route::ClusterQueue { version, name } => {
            let o = Options::parse(query)?;
            Ok(summary(version, &cluster_queue(queues()?, name, o)?))
        }
        Route::LocalQueue {
            version,
            namespace,
            name,
        } => {
            let o = Options::parse(query)?;
            Ok(summary(
                version,
                &local_queue(queues()?, namespace, name, o)?,
            ))
        }
        Route::Explanation {
            version,
            namespace,
            name,
        }
        | Route::Simulation {
            version,
            namespace,
            name,
        } => {
            queues()?;
            match explained {
                Some(x) => Ok(explanation(version, namespace, name, x)),
                None => Err(Error::NotFound {
                    kind: "workloads",
                    name: name.clone(),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(ns: &str, lq: &str, name: &str, priority: i32, created: i64) -> Pending {
        Pending {
            namespace: ns.into(),
            name: name.into(),
            local_queue: lq.into(),
            priority,
            created,
            uid: format!("uid-{name}").into(),
        }
    }

    fn snapshot() -> Snapshot {
        let mut pending = vec![
            p("a", "lq", "a-old", 0, 1_000),
            p("b", "lq", "b-1", 0, 2_000),
            p("a", "lq", "a-new", 0, 5_000),
            p("a", "lq", "a-urgent", 10, 9_000),
            p("a", "other", "o-1", 0, 3_000),
        ];
        order(&mut pending);
        Snapshot {
            cluster_queues: [("cq".to_string(), pending), ("idle".to_string(), vec![])].into(),
            local_queues: [
                (("a".to_string(), "lq".to_string()), "cq".to_string()),
                (("b".to_string(), "lq".to_string()), "cq".to_string()),
                (("a".to_string(), "other".to_string()), "cq".to_string()),
                (("a".to_string(), "quiet".to_string()), "idle".to_string()),
            ]
            .into(),
        }
    }

    fn rows(items: &[Item<'_>]) -> Vec<(String, usize, usize)> {
        items
            .iter()
            .map(|i| {
                (
                    i.workload.name.clone(),
                    i.in_cluster_queue,
                    i.in_local_queue,
                )
            })
            .collect()
    }

    fn all() -> Options {
        Options::parse(None).unwrap()
    }

    #[test]
    fn cluster_queue_positions_count_every_local_queue_separately() {
        let s = snapshot();
        let r = |n: &str, c, l| (n.to_string(), c, l);
        assert_eq!(
            rows(&cluster_queue(&s, "cq", all()).unwrap()),
            [
                r("a-urgent", 0, 0),
                r("a-old", 1, 1),
                r("b-1", 2, 0),
                r("o-1", 3, 0),
                r("a-new", 4, 2),
            ]
        );
        // An offset keeps the positions counted from the head.
        let o = Options::parse(Some("offset=3&limit=1")).unwrap();
        assert_eq!(rows(&cluster_queue(&s, "cq", o).unwrap()), [r("o-1", 3, 0)]);
        let o = Options::parse(Some("offset=4")).unwrap();
        assert_eq!(
            rows(&cluster_queue(&s, "cq", o).unwrap()),
            [r("a-new", 4, 2)]
        );
        assert!(cluster_queue(&s, "idle", all()).unwrap().is_empty());
    }

    #[test]
    fn local_queue_positions_skip_other_queues_and_keep_cluster_positions() {
        let s = snapshot();
        let r = |n: &str, c, l| (n.to_string(), c, l);
        assert_eq!(
            rows(&local_queue(&s, "a", "lq", all()).unwrap()),
            [r("a-urgent", 0, 0), r("a-old", 1, 1), r("a-new", 4, 2)]
        );
        let o = Options::parse(Some("offset=1&limit=1")).unwrap();
        assert_eq!(
            rows(&local_queue(&s, "a", "lq", o).unwrap()),
            [r("a-old", 1, 1)]
        );
        assert_eq!(
            rows(&local_queue(&s, "b", "lq", all()).unwrap()),
            [r("b-1", 2, 0)]
        );
        assert!(local_queue(&s, "a", "quiet", all()).unwrap().is_empty());
    }

    #[test]
    fn unknown_queues_are_kueues_not_found() {
        let s = snapshot();
        let e = cluster_queue(&s, "nope", all()).unwrap_err();
        assert_eq!(e.code(), 404);
        assert_eq!(
            e.status(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "clusterqueue.visibility.kueue.x-k8s.io \"nope\" not found",
                   "reason": "NotFound",
                   "details": {"name": "nope", "group": GROUP, "kind": "clusterqueue"},
                   "code": 404})
        );
        // A LocalQueue is looked up in its namespace.
        let e = local_queue(&s, "b", "other", all()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "localqueue.visibility.kueue.x-k8s.io \"other\" not found"
        );
    }

    #[test]
    fn options_default_and_are_bounded_as_kueue_bounds_them() {
        let o = |q| Options::parse(Some(q)).unwrap();
        assert_eq!(
            all(),
            Options {
                limit: 1000,
                offset: 0
            }
        );
        assert_eq!(
            o("limit=0"),
            Options {
                limit: 1000,
                offset: 0
            }
        );
        assert_eq!(
            o("limit=-5&offset=-2"),
            Options {
                limit: 0,
                offset: 0
            }
        );
        assert_eq!(
            o("limit=999999999"),
            Options {
                limit: MAX_LIMIT,
                offset: 0
            }
        );
        assert_eq!(
            o("offset=7&watch=false"),
            Options {
                limit: 1000,
                offset: 7
            }
        );
        let e = Options::parse(Some("limit=ten")).unwrap_err();
        assert_eq!(e.code(), 400);
        assert!(e.to_string().starts_with("limit: invalid value \"ten\""));
        // A limit of 0 after bounding (negative) lists nothing.
        assert!(cluster_queue(&snapshot(), "cq", o("limit=-1"))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn summaries_have_kueues_shape_in_each_version() {
        let s = snapshot();
        let o = Options::parse(Some("limit=1")).unwrap();
        let body = summary("v1beta1", &cluster_queue(&s, "cq", o).unwrap());
        assert_eq!(
            body,
            json!({
                "kind": "PendingWorkloadsSummary",
                "apiVersion": "visibility.kueue.x-k8s.io/v1beta1",
                "metadata": {},
                "items": [{
                    "metadata": {"name": "a-urgent", "namespace": "a",
                                 "creationTimestamp": "1970-01-01T00:00:09Z"},
                    "priority": 10,
                    "localQueueName": "lq",
                    "positionInClusterQueue": 0,
                    "positionInLocalQueue": 0,
                }],
            })
        );
    }

    #[test]
    fn routes_are_kueues_paths_in_both_versions() {
        assert_eq!(
            Route::parse(
                "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"
            ),
            Some(Route::ClusterQueue {
                version: "v1beta2",
                name: "cq".into()
            })
        );
        assert_eq!(
            Route::parse(
                "/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/ns/localqueues/lq/pendingworkloads"
            ),
            Some(Route::LocalQueue {
                version: "v1beta1",
                namespace: "ns".into(),
                name: "lq".into()
            })
        );
        assert_eq!(
            Route::parse(
                "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/explanation"
            ),
            Some(Route::Explanation {
                version: "v1beta2",
                namespace: "ns".into(),
                name: "wl".into()
            })
        );
        assert_eq!(
            Route::parse("/apis/visibility.kueue.x-k8s.io/"),
            Some(Route::Group)
        );
        assert_eq!(
            Route::parse("/apis/visibility.kueue.x-k8s.io/v1beta2"),
            Some(Route::Resources { version: "v1beta2" })
        );
        assert_eq!(Route::parse("/apis"), Some(Route::Groups));
        for bad in [
            "/apis/visibility.kueue.x-k8s.io/v1alpha1",
            "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq",
            "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues//pendingworkloads",
            "/apis/visibility.kueue.x-k8s.io.evil/v1beta2",
            "/apis/kueue.x-k8s.io/v1beta2",
            "/mutate",
        ] {
            assert_eq!(Route::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn discovery_lists_both_versions_and_the_subresources() {
        assert_eq!(group()["preferredVersion"]["version"], "v1beta2");
        assert_eq!(
            group()["versions"][1]["groupVersion"],
            "visibility.kueue.x-k8s.io/v1beta1"
        );
        let r = resources("v1beta2");
        let names: Vec<&str> = r["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "clusterqueues",
                "clusterqueues/pendingworkloads",
                "localqueues",
                "localqueues/pendingworkloads",
                "workloads",
                "workloads/explanation",
                "workloads/simulation",
            ]
        );
        assert_eq!(r["resources"][3]["namespaced"], true);
        assert_eq!(r["resources"][5]["kind"], EXPLANATION);
        assert_eq!(r["resources"][1]["verbs"], json!(["get"]));
        assert_eq!(groups()["groups"][0]["name"], GROUP);
    }

    #[test]
    fn without_queues_the_replica_says_so_but_still_serves_discovery() {
        let r = Route::parse(
            "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads",
        )
        .unwrap();
        assert_eq!(answer(&r, None, None, None).unwrap_err().code(), 503);
        assert!(answer(&Route::Group, None, None, None).is_ok());
        let s = snapshot();
        assert_eq!(
            answer(&r, Some("limit=2"), Some(&s), None).unwrap()["items"][1]["metadata"]["name"],
            "a-old"
        );
    }
}
