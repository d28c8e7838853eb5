//! Every transition of the lifecycle, each timer before / at / after its
//! deadline, driven by an injected clock.

use super::*;
use crate::appwrapper::config::*;
use crate::appwrapper::observe::{ObservedComponent, ObservedPod, OwnerLink, OwnerRef, PodPhase};
use crate::appwrapper::status::{find_condition, Condition, ConditionStatus as CS};
use crate::appwrapper::APPWRAPPER_LABEL;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

const T0: i64 = 1_000_000;

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

fn job(name: &str, parallelism: i32) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
           "spec": {"parallelism": parallelism, "completions": parallelism,
                    "template": {"spec": {"restartPolicy": "Never",
                       "containers": [{"name": "c", "image": "busybox"}]}}}})
}

fn appwrapper(templates: Vec<Value>) -> AppWrapper {
    AppWrapper {
        name: "aw".into(),
        namespace: "ns".into(),
        uid: "uid-1".into(),
        spec: Spec {
            components: templates
                .into_iter()
                .map(|template| Component {
                    template,
                    ..Default::default()
                })
                .collect(),
            suspend: true,
            managed_by: None,
        },
        ..Default::default()
    }
}

fn cfg() -> OperatorConfig {
    OperatorConfig::default()
}

fn cond<'a>(s: &'a Status, ty: &str) -> &'a Condition {
    s.condition(ty)
        .unwrap_or_else(|| panic!("no {ty} condition in {s:#?}"))
}

/// (status, reason, message, lastTransitionTime seconds)
fn c(s: &Status, ty: &str) -> (CS, String, String, i64) {
    let c = cond(s, ty);
    (
        c.status,
        c.reason.clone(),
        c.message.clone(),
        c.last_transition_time.0.as_second(),
    )
}

fn ev(reason: &str, message: &str) -> Action {
    Action::Event {
        reason: reason.into(),
        message: message.into(),
    }
}

fn secs(s: u64) -> Option<Duration> {
    Some(Duration::from_secs(s))
}

/// A live component object with this UID and controller.
fn live(uid: &str, controller_uid: &Option<String>) -> ObservedComponent {
    ObservedComponent {
        exists: true,
        uid: uid.into(),
        controller_uid: controller_uid.clone(),
        ..Default::default()
    }
}

/// A small simulated cluster that executes actions the way the controller
/// contract says, so the machine can be driven through whole lifecycles.
struct Sim {
    aw: AppWrapper,
    config: OperatorConfig,
    now: i64,
    components: Vec<ObservedComponent>,
    /// This AppWrapper's pods (given a name, UID and controller on the
    /// first observation).
    pods: Vec<ObservedPod>,
    /// Labelled pods that are not this AppWrapper's; deleting one fails
    /// the test.
    foreign_pods: Vec<ObservedPod>,
    /// Result the next create of each index returns instead of success.
    create_outcome: BTreeMap<usize, CreateResult>,
    /// Components ignore background deletes (a finalizer on them).
    sticky: bool,
    /// Pods that a background delete of their component leaves behind.
    pods_survive_delete: bool,
    /// Observations come from a stale cache (first read).
    cache_lags: bool,
    finalizer_removed: bool,
    /// Autopilot's view of the nodes.
    no_execute: BTreeMap<String, std::collections::BTreeSet<String>>,
    log: Vec<Action>,
}

impl Sim {
    fn new(aw: AppWrapper) -> Sim {
        let n = aw.spec.components.len();
        Sim {
            aw,
            config: cfg(),
            now: T0,
            components: vec![ObservedComponent::MISSING; n],
            pods: Vec::new(),
            foreign_pods: Vec::new(),
            create_outcome: BTreeMap::new(),
            sticky: false,
            pods_survive_delete: false,
            cache_lags: false,
            finalizer_removed: false,
            no_execute: BTreeMap::new(),
            log: Vec::new(),
        }
    }

    /// Names, UIDs and a controller (the AppWrapper) for the sim's own pods.
    fn stamp_pods(&mut self) {
        for (i, p) in self.pods.iter_mut().enumerate() {
            if p.uid.is_empty() {
                p.uid = format!("pod-uid-{i}");
                p.name = format!("pod-{i}");
            }
            if p.owners.is_empty() {
                p.owners = vec![OwnerLink {
                    owner: OwnerRef {
                        uid: self.aw.uid.clone(),
                        ..Default::default()
                    },
                    found: true,
                }];
            }
        }
    }

    fn observed(&mut self) -> Observed {
        self.stamp_pods();
        Observed {
            components: if self.cache_lags {
                vec![ObservedComponent::MISSING; self.components.len()]
            } else {
                self.components.clone()
            },
            components_read_live: !self.cache_lags,
            pods: self
                .pods
                .iter()
                .chain(&self.foreign_pods)
                .cloned()
                .collect(),
            create_results: Vec::new(),
            no_execute_nodes: self.no_execute.clone(),
        }
    }

    fn call(&mut self, observed: &Observed) -> Step {
        let step = reconcile(&self.aw, observed, &self.config, t(self.now)).expect("reconcile");
        assert_eq!(step.status_changed, step.status != self.aw.status);
        self.aw.status = step.status.clone();
        step
    }

    /// One reconcile plus the prompt follow-up calls the contract asks for.
    fn step(&mut self) -> Step {
        let obs = self.observed();
        let mut step = self.call(&obs);
        loop {
            let mut follow_up: Option<Observed> = None;
            for a in step.actions.clone() {
                self.log.push(a.clone());
                match a {
                    Action::AddFinalizer => self.aw.has_finalizer = true,
                    Action::RemoveFinalizer => {
                        self.aw.has_finalizer = false;
                        self.finalizer_removed = true;
                    }
                    Action::CreateComponents(batch) => {
                        assert!(!self.aw.spec.suspend, "created components while suspended");
                        let mut results = vec![None; self.components.len()];
                        for cc in batch {
                            match self.create_outcome.get(&cc.index).cloned() {
                                Some(r) => {
                                    let stop = matches!(r, CreateResult::Failed { .. });
                                    if let CreateResult::AlreadyExists { controller_uid, .. } = &r {
                                        self.components[cc.index] =
                                            live(&format!("existing-{}", cc.index), controller_uid);
                                    }
                                    results[cc.index] = Some(r);
                                    if stop {
                                        break;
                                    }
                                }
                                None => {
                                    self.components[cc.index] = live(
                                        &format!("created-{}", cc.index),
                                        &Some(self.aw.uid.clone()),
                                    );
                                    let name = cc.object["metadata"]["name"]
                                        .as_str()
                                        .unwrap_or("generated-x")
                                        .to_string();
                                    results[cc.index] = Some(CreateResult::Created { name });
                                }
                            }
                        }
                        let mut o = self.observed();
                        o.create_results = results;
                        follow_up = Some(o);
                    }
                    Action::DeleteComponent {
                        index,
                        propagation,
                        uid,
                        ..
                    } => {
                        let target = &self.components[index];
                        assert!(
                            target.controlled_by(&self.aw.uid),
                            "deleted a component that is not ours: {target:?}"
                        );
                        assert_eq!(target.uid, uid, "delete without the observed UID");
                        if self.sticky && propagation == Propagation::Background {
                            self.components[index].deleting = true;
                        } else {
                            self.components[index] = ObservedComponent::MISSING;
                            if !self.pods_survive_delete {
                                self.pods.clear();
                            }
                        }
                    }
                    Action::DeletePodsForcefully(refs) => {
                        for r in &refs {
                            assert!(
                                !self.foreign_pods.iter().any(|p| p.uid == r.uid),
                                "deleted a pod that is not ours: {r:?}"
                            );
                            assert!(self.pods.iter().any(|p| p.uid == r.uid && p.name == r.name));
                        }
                        self.pods.retain(|p| !refs.iter().any(|r| r.uid == p.uid));
                    }
                    Action::ReadComponentsLive => {
                        let mut o = self.observed();
                        o.components = self.components.clone();
                        o.components_read_live = true;
                        follow_up = Some(o);
                    }
                    Action::Event { .. } => {}
                }
            }
            match follow_up {
                Some(o) => step = self.call(&o),
                None => return step,
            }
        }
    }

    fn at(&mut self, s: i64) -> &mut Sim {
        self.now = T0 + s;
        self
    }

    fn set_pods(&mut self, phases: &[PodPhase]) {
        self.pods = phases.iter().map(|&p| ObservedPod::new(p)).collect();
    }

    fn annotate(&mut self, k: &str, v: &str) {
        self.aw.annotations.insert(k.into(), v.into());
    }

    fn phase(&self) -> Phase {
        self.aw.status.phase
    }

    /// Drive a fresh AppWrapper to Running at T0 (created, pods pending).
    fn running(templates: Vec<Value>) -> Sim {
        let mut sim = Sim::new(appwrapper(templates));
        sim.step(); // Empty -> Suspended
        sim.aw.spec.suspend = false;
        sim.step(); // AddFinalizer
        sim.step(); // -> Resuming
        sim.step(); // create -> Running
        assert_eq!(sim.phase(), Phase::Running);
        sim.log.clear();
        sim
    }
}

// ---------------------------------------------------------------- spec JSON

#[test]
fn spec_reads_upstream_json() {
    let spec: Spec = serde_json::from_value(json!({
        "suspend": true,
        "managedBy": "workload.codeflare.dev/appwrapper-controller",
        "components": [{
            "annotations": {"a": "b"},
            "podSets": [{"replicas": 2, "path": "template.spec.template"}],
            "podSetInfos": [{"labels": {"l": "v"}, "nodeSelector": {"pool": "a"},
                "tolerations": [{"key": "k", "operator": "Exists"}],
                "schedulingGates": [{"name": "g"}]}],
            "template": job("j", 2)
        }]
    }))
    .unwrap();
    assert!(spec.suspend);
    let c = &spec.components[0];
    assert_eq!(c.declared_pod_sets[0].replicas, Some(2));
    assert_eq!(c.pod_set_infos[0].node_selector["pool"], "a");
    assert_eq!(
        c.pod_set_infos[0].scheduling_gates,
        vec![json!({"name": "g"})]
    );
    assert_eq!(
        serde_json::to_value(&spec).unwrap()["components"][0]["podSets"][0]["path"],
        "template.spec.template"
    );
    let minimal: Spec =
        serde_json::from_value(json!({"components": [{"template": pod("p")}]})).unwrap();
    assert!(!minimal.suspend && minimal.managed_by.is_none());
}

#[test]
fn results_without_the_initiated_status_still_record_the_kind() {
    let mut aw = appwrapper(vec![job("j", 1)]);
    aw.spec.suspend = false;
    aw.has_finalizer = true;
    let step = reconcile(&aw, &Observed::default(), &cfg(), t(T0)).unwrap();
    aw.status = step.status;
    let step = reconcile(&aw, &Observed::default(), &cfg(), t(T0)).unwrap();
    aw.status = step.status;
    assert_eq!(aw.status.phase, Phase::Resuming);
    let obs = Observed {
        create_results: vec![Some(CreateResult::Created { name: "j".into() })],
        ..Default::default()
    };
    let step = reconcile(&aw, &obs, &cfg(), t(T0)).unwrap();
    let cs = &step.status.component_status[0];
    assert_eq!(
        (cs.name.as_str(), cs.kind.as_str(), cs.api_version.as_str()),
        ("j", "Job", "batch/v1")
    );
    assert_eq!(step.status.phase, Phase::Running);
}

// ---------------------------------------------------------------- Empty

#[test]
fn empty_caches_pod_sets_and_goes_to_suspended() {
    let mut aw = appwrapper(vec![
        job("j", 2),
        pod("p"),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}}),
    ]);
    aw.spec.components[1].declared_pod_sets = vec![PodSet {
        replicas: Some(1),
        path: "template".into(),
        annotations: Default::default(),
    }];
    let step = reconcile(&aw, &Observed::default(), &cfg(), t(T0)).unwrap();
    assert_eq!(step.status.phase, Phase::Suspended);
    assert!(step.actions.is_empty() && step.requeue_after.is_none() && step.status_changed);
    let sets: Vec<Vec<(String, i32)>> = step
        .status
        .component_status
        .iter()
        .map(|c| {
            c.pod_sets
                .iter()
                .map(|p| (p.path.clone(), p.replicas()))
                .collect()
        })
        .collect();
    assert_eq!(
        sets,
        vec![
            vec![("template.spec.template".to_string(), 2)],
            vec![("template".to_string(), 1)],
            vec![]
        ]
    );
    assert!(step.status.conditions.is_empty());
}

#[test]
fn empty_with_uninferrable_template_is_an_error() {
    let aw = appwrapper(vec![
        json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"}, "spec": {}}),
    ]);
    let err = reconcile(&aw, &Observed::default(), &cfg(), t(T0)).unwrap_err();
    assert!(
        matches!(err, LifecycleError::PodSets { index: 0, .. }),
        "{err}"
    );
}

// ---------------------------------------------------------------- Suspended

#[test]
fn suspended_stays_while_suspend_is_true() {
    let mut sim = Sim::new(appwrapper(vec![pod("p")]));
    sim.step();
    for s in [0, 100, 100_000] {
        let step = sim.at(s).step();
        assert_eq!(step.status.phase, Phase::Suspended);
        assert!(!step.status_changed && step.actions.is_empty() && step.requeue_after.is_none());
    }
}

#[test]
fn suspended_adds_the_finalizer_before_resuming() {
    let mut sim = Sim::new(appwrapper(vec![pod("p")]));
    sim.step();
    sim.aw.spec.suspend = false;
    let obs = sim.observed();
    let step = sim.call(&obs);
    assert_eq!(step.actions, vec![Action::AddFinalizer]);
    assert!(
        !step.status_changed,
        "no status is written before the finalizer"
    );
    sim.aw.has_finalizer = true;
    let step = sim.at(3).step();
    assert_eq!(step.status.phase, Phase::Resuming);
    for ty in [QUOTA_RESERVED, RESOURCES_DEPLOYED] {
        assert_eq!(
            c(&step.status, ty),
            (
                CS::True,
                "Resuming".into(),
                "Suspend is false".into(),
                T0 + 3
            )
        );
    }
    for ty in [PODS_READY, UNHEALTHY] {
        assert_eq!(
            c(&step.status, ty),
            (
                CS::False,
                "Resuming".into(),
                "Suspend is false".into(),
                T0 + 3
            )
        );
    }
}

// ---------------------------------------------------------------- Resuming

#[test]
fn resuming_creates_rendered_components_then_runs() {
    let mut sim = Sim::new(appwrapper(vec![pod("p"), job("j", 2)]));
    sim.step();
    sim.aw.spec.suspend = false;
    sim.aw.has_finalizer = true;
    sim.aw.spec.components[0].pod_set_infos = vec![PodSetInfo {
        node_selector: [("pool".to_string(), "a".to_string())].into(),
        ..Default::default()
    }];
    sim.step();
    assert_eq!(sim.phase(), Phase::Resuming);
    // first call: the create batch, with status written first
    let obs = sim.observed();
    let step = sim.call(&obs);
    assert_eq!(step.status.phase, Phase::Resuming);
    let Action::CreateComponents(batch) = &step.actions[0] else {
        panic!("{:?}", step.actions)
    };
    assert_eq!(
        batch.iter().map(|b| b.index).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(batch[0].object["metadata"]["namespace"], "ns");
    assert_eq!(batch[0].object["spec"]["nodeSelector"]["pool"], "a");
    assert_eq!(
        batch[1].object["spec"]["template"]["metadata"]["labels"][APPWRAPPER_LABEL],
        "aw"
    );
    assert_eq!(
        batch[1].object["metadata"]["ownerReferences"][0]["controller"],
        true
    );
    for (i, (name, kind, api)) in [("p", "Pod", "v1"), ("j", "Job", "batch/v1")]
        .iter()
        .enumerate()
    {
        let cs = &step.status.component_status[i];
        assert_eq!(
            (cs.name.as_str(), cs.kind.as_str(), cs.api_version.as_str()),
            (*name, *kind, *api)
        );
        assert_eq!(cs.conditions[0].status, CS::Unknown);
        assert_eq!(cs.conditions[0].reason, COMPONENT_CREATION_INITIATED);
    }
    // second call with the results: created, -> Running
    let mut obs = sim.observed();
    obs.create_results = vec![
        Some(CreateResult::Created { name: "p".into() }),
        Some(CreateResult::Created { name: "j".into() }),
    ];
    let step = sim.call(&obs);
    assert_eq!(step.status.phase, Phase::Running);
    assert!(step.actions.is_empty());
    for cs in &step.status.component_status {
        assert_eq!(cs.conditions[0].status, CS::True);
        assert_eq!(cs.conditions[0].reason, COMPONENT_CREATED_SUCCESSFULLY);
    }
}

#[test]
fn resuming_records_generated_names() {
    let mut tmpl = pod("");
    tmpl["metadata"] = json!({"generateName": "p-"});
    let mut sim = Sim::new(appwrapper(vec![tmpl]));
    sim.step();
    sim.aw.spec.suspend = false;
    sim.aw.has_finalizer = true;
    sim.step();
    let obs = sim.observed();
    let step = sim.call(&obs);
    assert_eq!(step.status.component_status[0].name, "");
    let mut obs = sim.observed();
    obs.create_results = vec![Some(CreateResult::Created {
        name: "p-x7k2q".into(),
    })];
    let step = sim.call(&obs);
    assert_eq!(step.status.component_status[0].name, "p-x7k2q");
    assert_eq!(step.status.phase, Phase::Running);
}

#[test]
fn resuming_already_exists() {
    // controlled by this AppWrapper's UID: success
    let mut sim = Sim::new(appwrapper(vec![pod("p")]));
    sim.create_outcome.insert(
        0,
        CreateResult::AlreadyExists {
            name: "p".into(),
            controller_uid: Some("uid-1".into()),
        },
    );
    sim.step();
    sim.aw.spec.suspend = false;
    sim.step();
    sim.step();
    sim.step();
    assert_eq!(sim.phase(), Phase::Running);

    // controlled by another object (a same-named AppWrapper of another UID
    // too) or by none: fatal, and never recorded as ours
    for owner in [Some("uid-of-another-aw".to_string()), None] {
        let mut sim = Sim::new(appwrapper(vec![pod("p")]));
        sim.create_outcome.insert(
            0,
            CreateResult::AlreadyExists {
                name: "p".into(),
                controller_uid: owner,
            },
        );
        sim.step();
        sim.aw.spec.suspend = false;
        sim.step();
        sim.step();
        let step = sim.step();
        assert_eq!(step.status.phase, Phase::Failed);
        let msg =
            "error creating components: resource p exists, but is not controlled by appwrapper";
        assert_eq!(
            c(&step.status, UNHEALTHY),
            (CS::True, "CreateFailed".into(), msg.into(), T0)
        );
        assert!(step
            .actions
            .contains(&ev("Unhealthy", &format!("CreateFailed: {msg}"))));
        let cs = &step.status.component_status[0];
        let deployed = find_condition(&cs.conditions, RESOURCES_DEPLOYED).expect("condition");
        assert_eq!(
            (deployed.status, deployed.reason.as_str()),
            (CS::False, COMPONENT_CREATION_ERRORED)
        );
    }
}

/// A user's object of the component's name: the AppWrapper fails, its
/// cleanup completes, and the object is never deleted (the sim fails the
/// test on any delete of an object that is not ours).
#[test]
fn a_foreign_object_of_the_same_name_survives_the_failed_cleanup() {
    for template in [job("sample-job", 1), pod("p")] {
        let name = template["metadata"]["name"].as_str().unwrap().to_string();
        let mut sim = Sim::new(appwrapper(vec![template]));
        sim.create_outcome.insert(
            0,
            CreateResult::AlreadyExists {
                name: name.clone(),
                controller_uid: None,
            },
        );
        // its pod carries the label, yet its controller is the user's Job
        sim.foreign_pods = vec![ObservedPod {
            name: "sample-job-abcde".into(),
            uid: "user-pod".into(),
            owners: vec![OwnerLink {
                owner: OwnerRef {
                    api_version: "batch/v1".into(),
                    kind: "Job".into(),
                    name: name.clone(),
                    uid: "existing-0".into(),
                },
                found: true,
            }],
            ..ObservedPod::new(PodPhase::Running)
        }];
        sim.step();
        sim.aw.spec.suspend = false;
        for s in 0..5 {
            sim.at(s).step();
        }
        assert_eq!(sim.phase(), Phase::Failed);
        for s in 5..20 {
            sim.at(s * 60).step();
        }
        assert!(
            !sim.log.iter().any(|a| matches!(
                a,
                Action::DeleteComponent { .. } | Action::DeletePodsForcefully(_)
            )),
            "{:?}",
            sim.log
        );
        assert!(sim.components[0].exists);
        let st = &sim.aw.status;
        assert_eq!(
            c(st, RESOURCES_DEPLOYED).1,
            "Failed",
            "cleanup completed: {st:#?}"
        );
        assert_eq!(
            c(st, RESOURCES_DEPLOYED).2,
            "Resources deleted for failed AppWrapper"
        );
        assert_eq!(c(st, QUOTA_RESERVED).0, CS::False);
        assert_eq!(c(st, DELETING_RESOURCES).1, "DeletionComplete");
    }
}

/// Crash between recording "creation initiated" and learning the create
/// failed: the status names an object that is not ours. Deleting the
/// AppWrapper finishes without touching it.
#[test]
fn an_initiated_component_that_is_not_ours_is_not_deleted() {
    let mut aw = appwrapper(vec![job("j", 1)]);
    aw.spec.suspend = false;
    aw.has_finalizer = true;
    aw.deletion_requested = true;
    aw.status.phase = Phase::Resuming;
    for ty in [QUOTA_RESERVED, RESOURCES_DEPLOYED] {
        set_condition(
            &mut aw.status.conditions,
            ty,
            CS::True,
            "Resuming",
            "",
            t(T0),
        );
    }
    let mut cs = ComponentStatus {
        name: "j".into(),
        kind: "Job".into(),
        api_version: "batch/v1".into(),
        ..Default::default()
    };
    set_condition(
        &mut cs.conditions,
        RESOURCES_DEPLOYED,
        CS::Unknown,
        COMPONENT_CREATION_INITIATED,
        "",
        t(T0),
    );
    aw.status.component_status = vec![cs];
    let obs = Observed {
        components: vec![live("user-job", &Some("user-owner".into()))],
        components_read_live: true,
        ..Default::default()
    };
    let step = reconcile(&aw, &obs, &cfg(), t(T0 + 1)).unwrap();
    assert!(
        !step
            .actions
            .iter()
            .any(|a| matches!(a, Action::DeleteComponent { .. })),
        "{:?}",
        step.actions
    );
    assert!(step.actions.contains(&Action::RemoveFinalizer));
    let deployed = find_condition(
        &step.status.component_status[0].conditions,
        RESOURCES_DEPLOYED,
    )
    .unwrap();
    assert_eq!(
        (deployed.status, deployed.reason.as_str()),
        (CS::False, COMPONENT_CREATION_ERRORED)
    );
}

/// Our component was deleted by someone and a same-named object of another
/// owner took its place: missing, so Failed, and that object is left alone.
#[test]
fn a_replaced_component_counts_as_missing_and_is_left_alone() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.components[0] = live("replacement", &Some("someone-else".into()));
    let step = sim.at(1).step();
    assert_eq!(step.status.phase, Phase::Failed);
    assert_eq!(
        c(&step.status, UNHEALTHY).2,
        "Only found 0 deployed components, but was expecting 1"
    );
    for s in 2..10 {
        sim.at(s * 60).step();
    }
    assert!(!sim
        .log
        .iter()
        .any(|a| matches!(a, Action::DeleteComponent { .. })));
    assert!(sim.components[0].exists);
    let deployed = find_condition(
        &sim.aw.status.component_status[0].conditions,
        RESOURCES_DEPLOYED,
    )
    .unwrap();
    assert_eq!(
        (deployed.status, deployed.reason.as_str()),
        (CS::False, COMPONENT_DELETED)
    );
    assert_eq!(c(&sim.aw.status, QUOTA_RESERVED).0, CS::False);
}

fn link(api_version: &str, kind: &str, name: &str, uid: &str, found: bool) -> OwnerLink {
    OwnerLink {
        owner: OwnerRef {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
        },
        found,
    }
}

#[test]
fn which_labelled_pods_are_ours() {
    let component = |name: &str, status: CS, reason: &str| {
        let mut cs = ComponentStatus {
            name: name.into(),
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            ..Default::default()
        };
        set_condition(
            &mut cs.conditions,
            RESOURCES_DEPLOYED,
            status,
            reason,
            "",
            t(T0),
        );
        cs
    };
    let components = vec![
        component("d", CS::True, COMPONENT_CREATED_SUCCESSFULLY),
        component("gone", CS::False, COMPONENT_DELETED),
        component("never", CS::False, COMPONENT_CREATION_ERRORED),
    ];
    let rs = |found| link("apps/v1", "ReplicaSet", "d-1", "rs", found);
    let dep = |name: &str, found| link("apps/v1", "Deployment", name, "dep", found);
    let aw = link(
        "workload.codeflare.dev/v1beta2",
        "AppWrapper",
        "aw",
        "uid-1",
        true,
    );
    let cases: Vec<(&str, Vec<OwnerLink>, bool)> = vec![
        ("a pod component", vec![aw.clone()], true),
        (
            "pod -> rs -> deployment -> aw",
            vec![rs(true), dep("d", true), aw.clone()],
            true,
        ),
        ("no controller", vec![], false),
        (
            "controlled by a live stranger",
            vec![link("batch/v1", "Job", "j", "x", true)],
            false,
        ),
        (
            "chain ends at a live object without controller",
            vec![rs(true), dep("d", true)],
            false,
        ),
        (
            "owner gone, named like our component",
            vec![rs(true), dep("d", false)],
            true,
        ),
        (
            "owner gone, our component already deleted",
            vec![dep("gone", false)],
            true,
        ),
        (
            "owner gone, a component we never created",
            vec![dep("never", false)],
            false,
        ),
        (
            "owner gone, named like no component",
            vec![dep("other", false)],
            false,
        ),
        (
            "owner gone, other kind",
            vec![link("batch/v1", "Job", "d", "j", false)],
            false,
        ),
    ];
    for (what, owners, want) in cases {
        let pod = ObservedPod {
            owners,
            ..ObservedPod::new(PodPhase::Running)
        };
        assert_eq!(pod_is_ours(&pod, "uid-1", &components), want, "{what}");
    }
    // no UID to match: nothing is ours
    let pod = ObservedPod {
        owners: vec![link("", "", "", "", true)],
        ..ObservedPod::new(PodPhase::Running)
    };
    assert!(!pod_is_ours(&pod, "", &components));
}

/// Deletion waits for our pods and forces only them; a stranger's pod with
/// the label neither holds the deletion up nor is deleted.
#[test]
fn forceful_deletion_forces_only_our_pods() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.annotate(FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, "30s");
    sim.pods_survive_delete = true;
    sim.set_pods(&[PodPhase::Running]);
    sim.foreign_pods = vec![
        ObservedPod {
            name: "stray".into(),
            uid: "stray-uid".into(),
            ..ObservedPod::new(PodPhase::Running)
        },
        ObservedPod {
            name: "someone-elses".into(),
            uid: "else-uid".into(),
            owners: vec![link("batch/v1", "Job", "other", "other-uid", true)],
            ..ObservedPod::new(PodPhase::Running)
        },
    ];
    // our pod's Job is gone (background delete): the garbage collector's,
    // and still ours to wait for
    sim.pods[0].owners = vec![link("batch/v1", "Job", "j", "created-0", false)];
    sim.aw.spec.suspend = true;
    sim.at(0).step(); // -> Suspending
    let step = sim.at(10).step();
    assert!(!sim.components[0].exists);
    assert_eq!(step.status.phase, Phase::Suspending, "waits for our pod");
    let step = sim.at(41).step();
    assert_eq!(
        step.actions,
        vec![Action::DeletePodsForcefully(vec![PodRef {
            name: "pod-0".into(),
            uid: "pod-uid-0".into(),
        }])]
    );
    assert_eq!(sim.at(46).step().status.phase, Phase::Suspended);
    assert_eq!(sim.foreign_pods.len(), 2);
}

fn resuming_sim(outcome: CreateResult) -> Sim {
    let mut sim = Sim::new(appwrapper(vec![pod("a"), pod("b")]));
    sim.create_outcome.insert(1, outcome);
    sim.step();
    sim.aw.spec.suspend = false;
    sim.step();
    sim.step();
    assert_eq!(sim.phase(), Phase::Resuming);
    sim
}

#[test]
fn non_fatal_create_error_retries_within_admission_grace() {
    let forbidden = CreateResult::Failed {
        message: "pods \"b\" is forbidden".into(),
        fatal: false,
    };
    let mut sim = resuming_sim(forbidden);
    // admission grace 1m from ResourcesDeployed (T0)
    for s in [0, 30, 59] {
        let step = sim.at(s).step();
        assert_eq!(step.status.phase, Phase::Resuming, "at {s}s");
        assert_eq!(step.requeue_after, secs(1));
        assert_eq!(
            step.status.component_status[0].conditions[0].status,
            CS::True
        );
        let b = &step.status.component_status[1].conditions[0];
        assert_eq!(
            (b.status, b.reason.as_str()),
            (CS::False, COMPONENT_CREATION_ERRORED)
        );
        assert!(step.status.condition(UNHEALTHY).unwrap().status == CS::False);
    }
    // at the deadline the grace is over (`now.Before(deadline)` is false)
    let step = sim.at(60).step();
    assert_eq!(step.status.phase, Phase::Resetting);
    assert_eq!(step.status.resetting_count, 1);
    let msg = "error creating components: pods \"b\" is forbidden";
    assert_eq!(
        c(&step.status, UNHEALTHY),
        (CS::True, "CreateFailed".into(), msg.into(), T0 + 60)
    );
    assert!(sim
        .log
        .contains(&ev("Unhealthy", &format!("CreateFailed: {msg}"))));
    // only the first component was created; the batch stopped at the error
    assert!(sim.components[0].exists && !sim.components[1].exists);
}

#[test]
fn non_fatal_create_error_with_no_retries_left_fails() {
    let mut sim = resuming_sim(CreateResult::Failed {
        message: "denied".into(),
        fatal: false,
    });
    sim.annotate(RETRY_LIMIT_ANNOTATION, "0");
    assert_eq!(sim.at(60).step().status.phase, Phase::Failed);
}

#[test]
fn fatal_create_error_fails_at_once() {
    let mut sim = resuming_sim(CreateResult::Failed {
        message: "no matches for kind".into(),
        fatal: true,
    });
    let step = sim.at(1).step();
    assert_eq!(step.status.phase, Phase::Failed);
    assert_eq!(step.status.resetting_count, 0);
    assert_eq!(
        cond(&step.status, UNHEALTHY).message,
        "error creating components: no matches for kind"
    );
}

#[test]
fn injection_conflict_fails_the_appwrapper() {
    let mut tmpl = pod("p");
    tmpl["spec"]["nodeSelector"] = json!({"pool": "mine"});
    let mut sim = Sim::new(appwrapper(vec![tmpl]));
    sim.aw.spec.components[0].pod_set_infos = vec![PodSetInfo {
        node_selector: [("pool".to_string(), "kueue".to_string())].into(),
        ..Default::default()
    }];
    sim.step();
    sim.aw.spec.suspend = false;
    sim.step();
    sim.step();
    let step = sim.step();
    assert_eq!(step.status.phase, Phase::Failed);
    assert_eq!(
        cond(&step.status, UNHEALTHY).message,
        "error creating components: conflict updating nodeSelector: conflict for key=pool, value1=mine, value2=kueue"
    );
    assert!(!sim
        .log
        .iter()
        .any(|a| matches!(a, Action::CreateComponents(_))));
}

#[test]
fn resuming_suspended_externally() {
    let mut sim = resuming_sim(CreateResult::Failed {
        message: "x".into(),
        fatal: false,
    });
    sim.aw.spec.suspend = true;
    let step = sim.step();
    assert_eq!(step.status.phase, Phase::Suspending);
    assert_eq!(
        step.actions,
        vec![ev(
            "Suspending",
            "Externally suspended while in the Resuming phase"
        )]
    );
}

// ---------------------------------------------------------------- Running

#[test]
fn running_suspended_externally() {
    let mut sim = Sim::running(vec![pod("p")]);
    sim.aw.spec.suspend = true;
    let step = sim.step();
    assert_eq!(step.status.phase, Phase::Suspending);
    assert_eq!(
        step.actions,
        vec![ev(
            "Suspending",
            "Externally suspended while in the Running phase"
        )]
    );
}

#[test]
fn missing_component_is_confirmed_live_before_failing() {
    let mut sim = Sim::running(vec![pod("p"), pod("q")]);
    sim.set_pods(&[PodPhase::Running, PodPhase::Running]);
    // a stale cache says the components are missing; a live read says not
    sim.cache_lags = true;
    let step = sim.at(1).step();
    assert_eq!(step.status.phase, Phase::Running);
    assert_eq!(sim.log[0], Action::ReadComponentsLive);
    // the first call alone changes nothing and asks for the live read
    let obs = sim.observed();
    let first = sim.call(&obs);
    assert_eq!(first.actions, vec![Action::ReadComponentsLive]);
    assert!(!first.status_changed && first.requeue_after.is_none());

    // really missing: Failed, no grace period and no retry
    sim.cache_lags = false;
    sim.components[1] = ObservedComponent::MISSING;
    let step = sim.at(2).step();
    assert_eq!(step.status.phase, Phase::Failed);
    assert_eq!(step.status.resetting_count, 0);
    let msg = "Only found 1 deployed components, but was expecting 2";
    assert_eq!(
        c(&step.status, UNHEALTHY),
        (CS::True, "MissingComponent".into(), msg.into(), T0 + 2)
    );
    assert!(step
        .actions
        .contains(&ev("Unhealthy", &format!("MissingComponent: {msg}"))));
}

#[test]
fn component_being_deleted_counts_as_missing() {
    let mut sim = Sim::running(vec![pod("p")]);
    sim.components[0].deleting = true;
    assert_eq!(sim.at(1).step().status.phase, Phase::Failed);
}

#[test]
fn failed_component_resets_or_fails() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.set_pods(&[PodPhase::Running]);
    sim.components[0].failed = true;
    let step = sim.at(1).step();
    assert_eq!(step.status.phase, Phase::Resetting);
    assert_eq!(step.status.resetting_count, 1);
    assert_eq!(
        c(&step.status, UNHEALTHY),
        (
            CS::True,
            "FailedComponent".into(),
            "Found 1 failed components".into(),
            T0 + 1
        )
    );
    assert!(step.actions.contains(&ev(
        "Unhealthy",
        "FailedComponent: Found 1 failed components"
    )));

    // a terminal exit code among the failed pods: straight to Failed
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.annotate(TERMINAL_EXIT_CODES_ANNOTATION, "42");
    sim.pods = vec![ObservedPod::failed_with(&[42])];
    sim.components[0].failed = true;
    assert_eq!(sim.at(1).step().status.phase, Phase::Failed);
}

#[test]
fn success_counts_the_ttl_from_deployment_not_success() {
    let mut sim = Sim::running(vec![job("j", 2)]);
    sim.annotate(SUCCESS_TTL_ANNOTATION, "10m");
    sim.set_pods(&[PodPhase::Succeeded, PodPhase::Running]);
    assert_eq!(
        sim.at(60).step().status.phase,
        Phase::Running,
        "one pod still running"
    );
    sim.set_pods(&[PodPhase::Succeeded, PodPhase::Succeeded]);
    let step = sim.at(120).step();
    assert_eq!(step.status.phase, Phase::Succeeded);
    let msg = "2 pods succeeded and no running, pending, or failed pods";
    assert_eq!(
        c(&step.status, QUOTA_RESERVED),
        (CS::False, "Succeeded".into(), msg.into(), T0 + 120)
    );
    // ResourcesDeployed stays True: its time is still the deployment time
    assert_eq!(
        c(&step.status, RESOURCES_DEPLOYED),
        (CS::True, "Succeeded".into(), msg.into(), T0)
    );

    // TTL: 10m from T0, not from T0+120
    let step = sim.at(599).step();
    assert_eq!(step.requeue_after, secs(1));
    assert!(!step.status_changed && step.actions.is_empty());
    let step = sim.at(600).step();
    assert!(matches!(
        step.actions[0],
        Action::DeleteComponent {
            propagation: Propagation::Background,
            ..
        }
    ));
    assert_eq!(step.requeue_after, secs(5), "deletion takes a second round");
    assert_eq!(c(&step.status, DELETING_RESOURCES).0, CS::True);
    let step = sim.at(605).step();
    assert_eq!(step.status.phase, Phase::Succeeded);
    assert_eq!(
        c(&step.status, RESOURCES_DEPLOYED),
        (
            CS::False,
            "Succeeded".into(),
            "Time to live after success of 10m0s expired".into(),
            T0 + 605
        )
    );
    assert_eq!(
        c(&step.status, DELETING_RESOURCES),
        (CS::False, "DeletionComplete".into(), "".into(), T0 + 605)
    );
    assert_eq!(
        step.status.component_status[0].conditions[0].reason,
        COMPONENT_DELETED
    );
    // then nothing more, and the AppWrapper itself is kept
    let step = sim.at(10_000).step();
    assert!(!step.status_changed && step.actions.is_empty() && step.requeue_after.is_none());
    assert!(!sim.finalizer_removed);
}

#[test]
fn default_success_ttl_is_the_ceiling() {
    let mut sim = Sim::running(vec![pod("p")]);
    sim.set_pods(&[PodPhase::Succeeded]);
    sim.at(5).step();
    assert_eq!(sim.phase(), Phase::Succeeded);
    let step = sim.at(6).step();
    assert_eq!(step.requeue_after, secs(168 * 3600 - 6));
    sim.at(168 * 3600).step();
    let step = sim.at(168 * 3600 + 5).step();
    assert_eq!(
        cond(&step.status, RESOURCES_DEPLOYED).message,
        "Time to live after success of 168h0m0s expired"
    );
}

#[test]
fn failed_pods_wait_for_the_failure_grace_period() {
    let mut sim = Sim::running(vec![job("j", 2)]);
    sim.set_pods(&[PodPhase::Running, PodPhase::Failed]);
    // failure grace 1m, counted from Unhealthy becoming True
    let step = sim.at(100).step();
    assert_eq!(step.status.phase, Phase::Running);
    assert_eq!(
        c(&step.status, UNHEALTHY),
        (CS::True, "FoundFailedPods".into(), "".into(), T0 + 100)
    );
    assert_eq!(step.requeue_after, secs(60));
    assert!(step.actions.is_empty());
    let step = sim.at(130).step();
    assert_eq!(step.requeue_after, secs(30));
    assert_eq!(
        c(&step.status, UNHEALTHY).3,
        T0 + 100,
        "time kept: the message carries no count"
    );
    let step = sim.at(159).step();
    assert_eq!(step.status.phase, Phase::Running);
    let step = sim.at(160).step();
    assert_eq!(step.status.phase, Phase::Resetting);
    assert_eq!(step.status.resetting_count, 1);
    assert_eq!(
        step.actions,
        vec![ev("Unhealthy", "FoundFailedPods: 1 failed pods")]
    );
}

#[test]
fn failed_pod_recovering_within_grace_clears_unhealthy() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.set_pods(&[PodPhase::Failed]);
    sim.at(10).step();
    sim.set_pods(&[PodPhase::Running]);
    let step = sim.at(20).step();
    assert_eq!(
        c(&step.status, UNHEALTHY),
        (CS::False, "FoundNoFailedPods".into(), "".into(), T0 + 20)
    );
    assert_eq!(
        c(&step.status, PODS_READY),
        (
            CS::True,
            "SufficientPodsReady".into(),
            "1 pods running; 0 pods succeeded".into(),
            T0 + 20
        )
    );
    assert_eq!(step.requeue_after, secs(60));
}

#[test]
fn exit_codes_decide_between_reset_and_fail() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [i64], Phase);
    let cases: &[Case] = &[
        (&[], &[1], Phase::Resetting),
        (
            &[(TERMINAL_EXIT_CODES_ANNOTATION, "3,10")],
            &[10],
            Phase::Failed,
        ),
        (
            &[(TERMINAL_EXIT_CODES_ANNOTATION, "3,10")],
            &[11],
            Phase::Resetting,
        ),
        (
            &[(RETRYABLE_EXIT_CODES_ANNOTATION, "10,20")],
            &[10],
            Phase::Resetting,
        ),
        (
            &[(RETRYABLE_EXIT_CODES_ANNOTATION, "10,20")],
            &[11],
            Phase::Failed,
        ),
        (
            &[(RETRYABLE_EXIT_CODES_ANNOTATION, "x,10")],
            &[10],
            Phase::Resetting,
        ),
    ];
    for (anns, codes, want) in cases {
        let mut sim = Sim::running(vec![job("j", 1)]);
        sim.annotate(FAILURE_GRACE_PERIOD_ANNOTATION, "0s");
        for (k, v) in anns.iter() {
            sim.annotate(k, v);
        }
        sim.pods = vec![ObservedPod::failed_with(codes)];
        assert_eq!(sim.at(1).step().status.phase, *want, "{anns:?} {codes:?}");
    }
}

#[test]
fn pods_ready_and_not_ready() {
    let mut sim = Sim::running(vec![job("j", 2)]);
    sim.set_pods(&[PodPhase::Pending, PodPhase::Pending]);
    let step = sim.at(1).step();
    assert_eq!(step.requeue_after, secs(5));
    assert_eq!(c(&step.status, PODS_READY).0, CS::False);
    assert_eq!(
        c(&step.status, PODS_READY).1,
        "Resuming",
        "clear only acts on True"
    );

    sim.set_pods(&[PodPhase::Running, PodPhase::Succeeded]);
    let step = sim.at(2).step();
    assert_eq!(
        c(&step.status, PODS_READY),
        (
            CS::True,
            "SufficientPodsReady".into(),
            "1 pods running; 1 pods succeeded".into(),
            T0 + 2
        )
    );
    assert_eq!(step.requeue_after, secs(60));

    sim.set_pods(&[PodPhase::Running, PodPhase::Pending]);
    let step = sim.at(3).step();
    assert_eq!(
        c(&step.status, PODS_READY),
        (
            CS::False,
            "InsufficientPodsReady".into(),
            "1 pods pending; 1 pods running; 0 pods succeeded".into(),
            T0 + 3
        )
    );
}

#[test]
fn admission_grace_applies_when_pods_are_missing() {
    // 0 of 2 pods exist: admission grace (1m) from ResourcesDeployed
    let mut sim = Sim::running(vec![job("j", 2)]);
    for s in [1, 30, 59] {
        let step = sim.at(s).step();
        assert_eq!(
            (step.status.phase, step.requeue_after),
            (Phase::Running, secs(5)),
            "at {s}"
        );
    }
    let step = sim.at(60).step();
    assert_eq!(step.status.phase, Phase::Resetting);
    let msg = "0 pods pending; 0 pods running; 0 pods succeeded";
    assert_eq!(
        c(&step.status, UNHEALTHY),
        (
            CS::True,
            "InsufficientPodsReady".into(),
            msg.into(),
            T0 + 60
        )
    );
    assert_eq!(
        step.actions,
        vec![ev("Unhealthy", &format!("InsufficientPodsReady: {msg}"))]
    );
}

#[test]
fn warmup_grace_applies_when_all_pods_exist() {
    // 2 of 2 pods exist but one is pending: warmup grace (5m)
    let mut sim = Sim::running(vec![job("j", 2)]);
    sim.set_pods(&[PodPhase::Running, PodPhase::Pending]);
    assert_eq!(
        sim.at(60).step().status.phase,
        Phase::Running,
        "past admission grace, within warmup"
    );
    assert_eq!(sim.at(299).step().status.phase, Phase::Running);
    assert_eq!(sim.at(300).step().status.phase, Phase::Resetting);

    // annotations override the config
    let mut sim = Sim::running(vec![job("j", 2)]);
    sim.annotate(WARMUP_GRACE_PERIOD_ANNOTATION, "10s");
    sim.set_pods(&[PodPhase::Running, PodPhase::Pending]);
    assert_eq!(sim.at(9).step().status.phase, Phase::Running);
    assert_eq!(sim.at(10).step().status.phase, Phase::Resetting);
}

#[test]
fn grace_is_anchored_on_deployment_time() {
    // upstream caveat: a pod dropping out of Running long after start-up
    // trips the expired grace period at once.
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.set_pods(&[PodPhase::Running]);
    sim.at(10).step();
    sim.set_pods(&[PodPhase::Pending]);
    assert_eq!(sim.at(3600).step().status.phase, Phase::Resetting);
}

#[test]
fn retry_accounting() {
    // (retryLimit annotation, resettingCount before, expected phase, count after)
    let cases: &[(Option<&str>, i32, Phase, i32)] = &[
        (None, 0, Phase::Resetting, 1),
        (None, 2, Phase::Resetting, 3),
        (None, 3, Phase::Failed, 3),
        (Some("0"), 0, Phase::Failed, 0),
        (Some("-1"), 0, Phase::Failed, 0),
        (Some("5"), 4, Phase::Resetting, 5),
        (Some("5"), 5, Phase::Failed, 5),
        (Some("abc"), 2, Phase::Resetting, 3),
    ];
    for (limit, before, want, after) in cases {
        let mut sim = Sim::running(vec![job("j", 1)]);
        if let Some(l) = limit {
            sim.annotate(RETRY_LIMIT_ANNOTATION, l);
        }
        sim.aw.status.resetting_count = *before;
        let step = sim.at(60).step(); // admission grace expired, no pods
        assert_eq!(
            (step.status.phase, step.status.resetting_count),
            (*want, *after),
            "{limit:?} {before}"
        );
    }
}

// ---------------------------------------------------------------- Autopilot

fn gpu_pod(node: &str) -> ObservedPod {
    ObservedPod {
        node_name: node.into(),
        resources: ["nvidia.com/gpu".to_string()].into(),
        ..ObservedPod::new(PodPhase::Running)
    }
}

fn evicting(sim: &mut Sim, node: &str) {
    sim.no_execute
        .insert(node.into(), ["nvidia.com/gpu".to_string()].into());
}

#[test]
fn autopilot_no_execute_resets_without_counting() {
    let mut sim = Sim::running(vec![job("j", 2)]);
    sim.pods = vec![gpu_pod("n1"), gpu_pod("n2")];
    sim.at(5).step();
    assert!(sim.aw.status.is_true(PODS_READY));
    evicting(&mut sim, "n2");
    evicting(&mut sim, "n1");
    let step = sim.at(10).step();
    let msg = "Workload contains pods using NoExecute resources on Nodes: map[n1:{} n2:{}]";
    assert_eq!(
        c(&step.status, UNHEALTHY),
        (CS::True, "AutopilotNoExecute".into(), msg.into(), T0 + 10)
    );
    assert_eq!(step.actions, vec![ev("Unhealthy", msg)]);
    assert_eq!(
        (step.status.phase, step.status.resetting_count),
        (Phase::Resetting, 0)
    );

    // E18: after the reset the pods land on healthy nodes and get ready
    sim.no_execute.clear();
    sim.annotate(RETRY_PAUSE_PERIOD_ANNOTATION, "5s");
    for s in 11..20 {
        sim.at(s).step();
    }
    assert_eq!(sim.phase(), Phase::Running);
    sim.pods = vec![gpu_pod("n3"), gpu_pod("n4")];
    sim.at(21).step();
    assert!(sim.aw.status.is_true(PODS_READY));
    assert_eq!(sim.aw.status.resetting_count, 0);
}

#[test]
fn autopilot_respects_the_retry_limit_and_the_config() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.pods = vec![gpu_pod("n1")];
    evicting(&mut sim, "n1");
    sim.aw.status.resetting_count = 3;
    assert_eq!(
        sim.at(1).step().status.phase,
        Phase::Failed,
        "limit still applies"
    );

    for autopilot in [
        None,
        Some(Autopilot {
            monitor_nodes: false,
            ..Autopilot::default()
        }),
    ] {
        let mut sim = Sim::running(vec![job("j", 1)]);
        sim.config.autopilot = autopilot;
        sim.pods = vec![gpu_pod("n1")];
        evicting(&mut sim, "n1");
        let step = sim.at(1).step();
        assert_eq!(step.status.phase, Phase::Running);
        assert!(step.status.is_true(PODS_READY));
    }

    // pods without the resource, or not Running, are not flagged
    let mut sim = Sim::running(vec![job("j", 2)]);
    evicting(&mut sim, "n1");
    sim.pods = vec![
        ObservedPod {
            node_name: "n1".into(),
            ..ObservedPod::new(PodPhase::Running)
        },
        ObservedPod {
            node_name: "n1".into(),
            ..gpu_pod("n1")
        },
    ];
    sim.pods[1].phase = PodPhase::Pending;
    assert_eq!(sim.at(1).step().status.phase, Phase::Running);

    // failed pods are handled before Autopilot
    let mut sim = Sim::running(vec![job("j", 2)]);
    evicting(&mut sim, "n1");
    sim.pods = vec![gpu_pod("n1"), ObservedPod::failed_with(&[1])];
    let step = sim.at(1).step();
    assert_eq!(cond(&step.status, UNHEALTHY).reason, "FoundFailedPods");
}

// ---------------------------------------------------------------- Resetting

fn resetting_sim() -> Sim {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.set_pods(&[PodPhase::Running]);
    sim.at(10).step(); // PodsReady True
    sim.set_pods(&[PodPhase::Failed]);
    sim.annotate(FAILURE_GRACE_PERIOD_ANNOTATION, "0s");
    let step = sim.at(20).step();
    assert_eq!(step.status.phase, Phase::Resetting);
    assert_eq!(c(&step.status, UNHEALTHY).3, T0 + 20);
    sim.log.clear();
    sim
}

#[test]
fn resetting_deletes_pauses_and_resumes() {
    let mut sim = resetting_sim();
    sim.sticky = true;
    let step = sim.at(21).step();
    assert_eq!(step.status.phase, Phase::Resetting);
    assert_eq!(step.requeue_after, secs(5));
    assert_eq!(
        c(&step.status, PODS_READY),
        (CS::False, "Resetting".into(), "".into(), T0 + 21)
    );
    assert_eq!(
        c(&step.status, DELETING_RESOURCES),
        (CS::True, "DeletionInitiated".into(), "".into(), T0 + 21)
    );
    assert!(matches!(
        step.actions[..],
        [Action::DeleteComponent {
            index: 0,
            propagation: Propagation::Background,
            ..
        }]
    ));
    assert!(cond(&step.status, RESOURCES_DEPLOYED).status == CS::True);
    // a component already being deleted is not deleted again
    let step = sim.at(26).step();
    assert!(step.actions.is_empty());
    // the object goes away
    sim.components[0] = ObservedComponent::MISSING;
    sim.pods.clear();
    let step = sim.at(31).step();
    assert_eq!(
        c(&step.status, RESOURCES_DEPLOYED),
        (
            CS::False,
            "Resetting".into(),
            "Resources deleted for resetting AppWrapper".into(),
            T0 + 31
        )
    );
    assert_eq!(
        c(&step.status, DELETING_RESOURCES),
        (CS::False, "DeletionComplete".into(), "".into(), T0 + 31)
    );
    // retry pause 90s from Unhealthy (T0+20), not from the end of deletion
    assert_eq!(step.requeue_after, secs(79));
    assert!(step.status.is_true(QUOTA_RESERVED), "quota stays reserved");
    let step = sim.at(109).step();
    assert_eq!(
        (step.status.phase, step.requeue_after),
        (Phase::Resetting, secs(1))
    );
    let step = sim.at(110).step();
    assert_eq!(step.status.phase, Phase::Resuming);
    assert_eq!(
        c(&step.status, RESOURCES_DEPLOYED),
        (
            CS::True,
            "Resuming".into(),
            "Reset complete; resuming".into(),
            T0 + 110
        )
    );
    // the deleted component is created again, and the admission clock restarts
    let step = sim.at(111).step();
    assert_eq!(step.status.phase, Phase::Running);
    assert!(sim
        .log
        .iter()
        .any(|a| matches!(a, Action::CreateComponents(b) if b[0].index == 0)));
    assert_eq!(sim.at(169).step().status.phase, Phase::Running);
    assert_eq!(
        sim.at(170).step().status.phase,
        Phase::Resetting,
        "admission grace from T0+110"
    );
    assert_eq!(sim.aw.status.resetting_count, 2);
}

#[test]
fn resetting_suspended_externally() {
    let mut sim = resetting_sim();
    sim.aw.spec.suspend = true;
    let step = sim.at(21).step();
    assert_eq!(step.status.phase, Phase::Suspending);
    assert_eq!(
        step.actions,
        vec![ev(
            "Suspending",
            "Externally suspended while in the Resetting phase"
        )]
    );
}

// ---------------------------------------------------------------- Suspending

#[test]
fn suspending_undeploys_then_suspends() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.set_pods(&[PodPhase::Running]);
    sim.at(5).step();
    sim.aw.status.resetting_count = 2;
    sim.aw.spec.suspend = true;
    sim.sticky = true;
    sim.at(10).step();
    assert_eq!(sim.phase(), Phase::Suspending);
    let step = sim.at(11).step();
    assert_eq!(
        (step.status.phase, step.requeue_after),
        (Phase::Suspending, secs(5))
    );
    // suspend flipping back does not stop the undeployment
    sim.aw.spec.suspend = false;
    sim.components[0] = ObservedComponent::MISSING;
    sim.pods.clear();
    let step = sim.at(16).step();
    assert_eq!(step.status.phase, Phase::Suspended);
    assert_eq!(
        c(&step.status, RESOURCES_DEPLOYED),
        (
            CS::False,
            "Suspended".into(),
            "Suspend is true".into(),
            T0 + 16
        )
    );
    assert_eq!(
        c(&step.status, QUOTA_RESERVED),
        (
            CS::False,
            "Suspended".into(),
            "Suspend is true".into(),
            T0 + 16
        )
    );
    assert_eq!(
        c(&step.status, PODS_READY),
        (CS::False, "Suspended".into(), "".into(), T0 + 16)
    );
    assert_eq!(
        c(&step.status, UNHEALTHY).1,
        "Resuming",
        "Unhealthy was False: left alone"
    );
    assert_eq!(step.status.resetting_count, 2, "never reset");
    // and it resumes again (the finalizer is already there)
    let step = sim.at(17).step();
    assert_eq!(step.status.phase, Phase::Resuming);
}

#[test]
fn suspending_waits_for_pods_too() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.pods_survive_delete = true;
    sim.set_pods(&[PodPhase::Running]);
    sim.aw.spec.suspend = true;
    sim.at(1).step();
    let step = sim.at(2).step();
    assert_eq!(step.requeue_after, secs(5));
    let step = sim.at(7).step();
    assert_eq!(
        step.status.phase,
        Phase::Suspending,
        "component gone, pod remains"
    );
    sim.pods.clear();
    assert_eq!(sim.at(12).step().status.phase, Phase::Suspended);
}

// ---------------------------------------------------------------- forceful deletion

#[test]
fn forceful_deletion_after_the_grace_period_pods_first() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.annotate(FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, "30s");
    sim.sticky = true;
    sim.pods_survive_delete = true;
    sim.set_pods(&[PodPhase::Running]);
    sim.aw.spec.suspend = true;
    sim.at(0).step(); // -> Suspending
    let step = sim.at(10).step(); // deletion initiated at T0+10
    assert_eq!(c(&step.status, DELETING_RESOURCES).3, T0 + 10);
    // at the deadline (T0+40) it is not yet expired: `now.After(deadline)`
    let step = sim.at(40).step();
    assert!(step.actions.is_empty(), "{:?}", step.actions);
    let step = sim.at(41).step();
    assert_eq!(
        step.actions,
        vec![Action::DeletePodsForcefully(vec![PodRef {
            name: "pod-0".into(),
            uid: "pod-uid-0".into(),
        }])]
    );
    // pods gone, component still there: force the component
    let step = sim.at(46).step();
    assert!(
        matches!(
            step.actions[..],
            [Action::DeleteComponent {
                propagation: Propagation::Forceful,
                ..
            }]
        ),
        "{:?}",
        step.actions
    );
    assert_eq!(sim.at(51).step().status.phase, Phase::Suspended);
}

// ---------------------------------------------------------------- Failed

fn failed_sim(anns: &[(&str, &str)]) -> Sim {
    let mut sim = Sim::running(vec![job("j", 1)]);
    for (k, v) in anns {
        sim.annotate(k, v);
    }
    sim.annotate(RETRY_LIMIT_ANNOTATION, "0");
    sim.annotate(FAILURE_GRACE_PERIOD_ANNOTATION, "0s");
    sim.set_pods(&[PodPhase::Failed]);
    let step = sim.at(10).step();
    assert_eq!(step.status.phase, Phase::Failed);
    // C3: still holding quota and resources right after failing
    assert!(step.status.is_true(QUOTA_RESERVED) && step.status.is_true(RESOURCES_DEPLOYED));
    sim.log.clear();
    sim
}

#[test]
fn failed_deletes_resources_then_releases_quota() {
    let mut sim = failed_sim(&[]);
    let step = sim.at(11).step();
    assert_eq!(step.status.phase, Phase::Failed);
    assert!(
        step.status.is_true(QUOTA_RESERVED),
        "quota held until resources are gone"
    );
    assert_eq!(step.requeue_after, secs(5));
    let step = sim.at(16).step();
    assert_eq!(
        c(&step.status, RESOURCES_DEPLOYED),
        (
            CS::False,
            "Failed".into(),
            "Resources deleted for failed AppWrapper".into(),
            T0 + 16
        )
    );
    assert_eq!(
        c(&step.status, QUOTA_RESERVED),
        (
            CS::False,
            "Failed".into(),
            "No resources deployed".into(),
            T0 + 16
        )
    );
    assert_eq!(step.status.phase, Phase::Failed);
    let step = sim.at(100).step();
    assert!(!step.status_changed && step.actions.is_empty() && step.requeue_after.is_none());
}

#[test]
fn failed_with_deletion_delay() {
    let mut sim = failed_sim(&[(DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, "5m")]);
    let step = sim.at(11).step();
    let msg =
        "workload.codeflare.dev.appwrapper/deletionOnFailureGracePeriodDuration has value 5m0s";
    assert_eq!(
        c(&step.status, DELETING_RESOURCES),
        (CS::False, "DeletionPaused".into(), msg.into(), T0 + 11)
    );
    assert_eq!(step.requeue_after, secs(300));
    assert!(step.actions.is_empty());
    let step = sim.at(310).step();
    assert_eq!(step.requeue_after, secs(1));
    let step = sim.at(311).step();
    assert!(matches!(step.actions[..], [Action::DeleteComponent { .. }]));
    assert_eq!(c(&step.status, DELETING_RESOURCES).0, CS::True);
    // upstream quirk kept: the next pass re-pauses (DeletingResources flips
    // back to False with a new time), so completion waits another delay.
    let step = sim.at(316).step();
    assert_eq!(
        c(&step.status, DELETING_RESOURCES),
        (CS::False, "DeletionPaused".into(), msg.into(), T0 + 316)
    );
    assert!(step.status.is_true(RESOURCES_DEPLOYED));
    let step = sim.at(616).step();
    assert_eq!(
        cond(&step.status, RESOURCES_DEPLOYED).message,
        "Resources deleted for failed AppWrapper"
    );
    assert_eq!(c(&step.status, QUOTA_RESERVED).0, CS::False);
}

#[test]
fn failed_delay_cut_short_by_suspend() {
    let mut sim = failed_sim(&[(DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, "5m")]);
    sim.at(11).step();
    sim.aw.spec.suspend = true;
    let step = sim.at(20).step();
    assert!(matches!(step.actions[..], [Action::DeleteComponent { .. }]));
    assert_eq!(
        step.status.phase,
        Phase::Failed,
        "suspend does not leave Failed"
    );
    let step = sim.at(25).step();
    assert_eq!(
        c(&step.status, RESOURCES_DEPLOYED),
        (
            CS::False,
            "Failed".into(),
            "Kueue forced resource deletion by suspending AppWrapper".into(),
            T0 + 25
        )
    );
}

#[test]
fn failed_delay_reuses_an_earlier_deletion_complete_time() {
    // DeletingResources already False from an earlier reset: its old time
    // is the clock, so the delay may already be over.
    let mut sim = failed_sim(&[(DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, "1m")]);
    sim.aw.status.conditions.push(Condition {
        type_: DELETING_RESOURCES.into(),
        status: CS::False,
        observed_generation: None,
        last_transition_time: Time(t(T0 - 3600)),
        reason: "DeletionComplete".into(),
        message: String::new(),
    });
    let step = sim.at(11).step();
    assert_eq!(
        c(&step.status, DELETING_RESOURCES).0,
        CS::True,
        "delay already over"
    );
}

// ---------------------------------------------------------------- deletion (finalizer)

#[test]
fn deletion_with_finalizer_goes_through_terminating() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.set_pods(&[PodPhase::Running]);
    sim.sticky = true;
    sim.aw.deletion_requested = true;
    let step = sim.at(5).step();
    assert_eq!(step.status.phase, Phase::Terminating);
    assert_eq!(step.requeue_after, secs(5));
    assert!(matches!(
        step.actions[..],
        [Action::DeleteComponent {
            propagation: Propagation::Background,
            ..
        }]
    ));
    assert!(!sim.finalizer_removed);
    let step = sim.at(10).step();
    assert_eq!(
        (step.status.phase, step.requeue_after),
        (Phase::Terminating, secs(5))
    );
    sim.components[0] = ObservedComponent::MISSING;
    sim.pods.clear();
    let step = sim.at(15).step();
    assert_eq!(
        c(&step.status, RESOURCES_DEPLOYED),
        (
            CS::False,
            "Terminating".into(),
            "Resources successfully deleted".into(),
            T0 + 15
        )
    );
    assert_eq!(
        c(&step.status, QUOTA_RESERVED),
        (
            CS::False,
            "Terminating".into(),
            "No resources deployed".into(),
            T0 + 15
        )
    );
    assert_eq!(step.actions.last(), Some(&Action::RemoveFinalizer));
    assert!(sim.finalizer_removed);
}

#[test]
fn deletion_without_deployed_resources_just_removes_the_finalizer() {
    let mut sim = Sim::running(vec![pod("p")]);
    sim.aw.spec.suspend = true;
    sim.at(1).step();
    sim.at(2).step();
    sim.at(3).step();
    assert_eq!(sim.phase(), Phase::Suspended);
    sim.aw.deletion_requested = true;
    let step = sim.at(4).step();
    assert_eq!(step.actions, vec![Action::RemoveFinalizer]);
    assert_eq!(step.status.phase, Phase::Suspended);
}

#[test]
fn deletion_without_our_finalizer_does_nothing() {
    let mut aw = appwrapper(vec![pod("p")]);
    aw.deletion_requested = true;
    aw.status.phase = Phase::Running;
    let step = reconcile(&aw, &Observed::default(), &cfg(), t(T0)).unwrap();
    assert!(!step.status_changed && step.actions.is_empty() && step.requeue_after.is_none());
}

// ---------------------------------------------------------------- managedBy

#[test]
fn managed_by_another_controller_is_ignored_in_every_phase() {
    let phases = [
        Phase::Empty,
        Phase::Suspended,
        Phase::Resuming,
        Phase::Running,
        Phase::Resetting,
        Phase::Suspending,
        Phase::Succeeded,
        Phase::Failed,
        Phase::Terminating,
    ];
    for phase in phases {
        for deleting in [false, true] {
            let mut aw = appwrapper(vec![pod("p")]);
            aw.spec.suspend = false;
            aw.has_finalizer = true;
            aw.deletion_requested = deleting;
            aw.status.phase = phase;
            aw.spec.managed_by = Some("kueue.x-k8s.io/multikueue".into());
            let step = reconcile(&aw, &Observed::default(), &cfg(), t(T0)).unwrap();
            assert!(
                !step.status_changed && step.actions.is_empty() && step.requeue_after.is_none(),
                "{phase:?}"
            );
        }
    }
    let mut aw = appwrapper(vec![pod("p")]);
    aw.spec.managed_by = Some(APPWRAPPER_CONTROLLER_NAME.into());
    let step = reconcile(&aw, &Observed::default(), &cfg(), t(T0)).unwrap();
    assert_eq!(step.status.phase, Phase::Suspended);
}

// ---------------------------------------------------------------- whole lifecycles

#[test]
fn c1_happy_path() {
    let mut sim = Sim::new(appwrapper(vec![pod("a"), pod("b")]));
    sim.config.fault_tolerance.success_ttl = GoDuration::ZERO; // as upstream's unit tests
    sim.step();
    assert_eq!(sim.phase(), Phase::Suspended);
    sim.aw.spec.suspend = false;
    sim.at(1).step();
    sim.at(1).step();
    assert_eq!(sim.phase(), Phase::Resuming);
    assert!(sim.aw.has_finalizer);
    assert!(sim.aw.status.is_true(QUOTA_RESERVED) && sim.aw.status.is_true(RESOURCES_DEPLOYED));
    sim.set_pods(&[PodPhase::Pending, PodPhase::Pending]);
    sim.at(2).step();
    assert_eq!(sim.phase(), Phase::Running);
    sim.at(3).step();
    assert!(!sim.aw.status.is_true(PODS_READY));
    sim.set_pods(&[PodPhase::Running, PodPhase::Pending]);
    sim.at(4).step();
    assert!(!sim.aw.status.is_true(PODS_READY));
    sim.set_pods(&[PodPhase::Running, PodPhase::Running]);
    sim.at(5).step();
    assert!(sim.aw.status.is_true(PODS_READY));
    sim.set_pods(&[PodPhase::Succeeded, PodPhase::Running]);
    sim.at(6).step();
    assert_eq!(sim.phase(), Phase::Running);
    sim.set_pods(&[PodPhase::Succeeded, PodPhase::Succeeded]);
    sim.at(7).step();
    assert_eq!(sim.phase(), Phase::Succeeded);
    assert!(sim.aw.status.is_true(RESOURCES_DEPLOYED) && !sim.aw.status.is_true(QUOTA_RESERVED));
    sim.at(8).step();
    sim.at(9).step();
    assert!(!sim.aw.status.is_true(RESOURCES_DEPLOYED));
    assert!(sim.components.iter().all(|c| !c.exists) && sim.pods.is_empty());
}

#[test]
fn e16_failing_job_retries_then_fails() {
    let mut sim = Sim::running(vec![job("j", 1)]);
    sim.annotate(FAILURE_GRACE_PERIOD_ANNOTATION, "0s");
    sim.annotate(RETRY_LIMIT_ANNOTATION, "2");
    sim.annotate(RETRY_PAUSE_PERIOD_ANNOTATION, "5s");
    let mut phases = vec![];
    for s in 1..200 {
        if sim.phase() == Phase::Running && sim.components[0].exists {
            sim.set_pods(&[PodPhase::Failed]);
        }
        sim.at(s).step();
        if phases.last() != Some(&sim.phase()) {
            phases.push(sim.phase());
        }
        if sim.phase() == Phase::Failed && !sim.aw.status.is_true(RESOURCES_DEPLOYED) {
            break;
        }
    }
    assert_eq!(
        phases,
        vec![
            Phase::Resetting,
            Phase::Resuming,
            Phase::Running,
            Phase::Resetting,
            Phase::Resuming,
            Phase::Running,
            Phase::Failed
        ]
    );
    assert_eq!(sim.aw.status.resetting_count, 2);
    assert!(!sim.aw.status.is_true(QUOTA_RESERVED));
}

// ---------------------------------------------------------------- property

mod property {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{TestCaseError, TestRunner};
    use std::cell::RefCell;
    use std::collections::HashSet;

    #[derive(Debug, Clone)]
    enum Ev {
        Tick(u16),
        ToggleSuspend,
        Pods(Vec<u8>),
        LoseComponent,
        FailComponent,
        Delete,
        Sticky(bool),
        ClearPods,
        AllSucceeded,
    }

    fn ev() -> impl Strategy<Value = Ev> {
        prop_oneof![
            4 => (0u16..400).prop_map(Ev::Tick),
            2 => Just(Ev::ToggleSuspend),
            3 => prop::collection::vec(0u8..4, 0..4).prop_map(Ev::Pods),
            1 => Just(Ev::LoseComponent),
            1 => Just(Ev::FailComponent),
            1 => Just(Ev::Delete),
            1 => any::<bool>().prop_map(Ev::Sticky),
            1 => Just(Ev::ClearPods),
            1 => Just(Ev::AllSucceeded),
        ]
    }

    /// One random history. Records the phases it visits in `seen`.
    fn history(
        events: Vec<Ev>,
        limit: i32,
        seen: &RefCell<HashSet<Phase>>,
    ) -> Result<(), TestCaseError> {
        let mut sim = Sim::new(appwrapper(vec![job("j", 2), pod("p")]));
        sim.annotate(RETRY_LIMIT_ANNOTATION, &limit.to_string());
        sim.annotate(RETRY_PAUSE_PERIOD_ANNOTATION, "20s");
        sim.annotate(FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, "60s");
        let mut clock = 0i64;
        for e in events {
            match e {
                Ev::Tick(d) => clock += i64::from(d),
                Ev::ToggleSuspend => sim.aw.spec.suspend = !sim.aw.spec.suspend,
                Ev::Pods(ps) => {
                    if sim.components.iter().any(|c| c.exists) {
                        let phases = [
                            PodPhase::Pending,
                            PodPhase::Running,
                            PodPhase::Succeeded,
                            PodPhase::Failed,
                        ];
                        sim.set_pods(&ps.iter().map(|&i| phases[i as usize]).collect::<Vec<_>>());
                    }
                }
                Ev::LoseComponent => sim.components[0] = ObservedComponent::MISSING,
                Ev::FailComponent => {
                    if sim.components[0].exists {
                        sim.components[0].failed = true
                    }
                }
                Ev::Delete => sim.aw.deletion_requested = true,
                Ev::Sticky(b) => sim.sticky = b,
                Ev::AllSucceeded => {
                    if sim.components.iter().any(|c| c.exists) {
                        sim.set_pods(&[PodPhase::Succeeded; 3]);
                    }
                }
                Ev::ClearPods => sim.pods.clear(),
            }
            if sim.finalizer_removed {
                break;
            }
            // `Sim::step` asserts no create happens while suspended
            let suspended_before = sim.aw.spec.suspend;
            let step = sim.at(clock).step();
            seen.borrow_mut().insert(sim.phase());
            if suspended_before || sim.aw.deletion_requested {
                prop_assert!(!step
                    .actions
                    .iter()
                    .any(|a| matches!(a, Action::CreateComponents(_))));
            }
            if sim.finalizer_removed {
                prop_assert!(
                    sim.components.iter().all(|c| !c.exists),
                    "finalizer removed with components left"
                );
                prop_assert!(sim.pods.is_empty(), "finalizer removed with pods left");
                prop_assert!(!sim.aw.status.is_true(QUOTA_RESERVED));
            }
            prop_assert!(sim.aw.status.resetting_count <= limit.max(0));
            if sim.aw.deletion_requested && sim.aw.has_finalizer {
                let p = sim.phase();
                prop_assert!(
                    !sim.aw.status.is_true(RESOURCES_DEPLOYED)
                        || p == Phase::Terminating
                        || sim.finalizer_removed,
                    "{p:?}"
                );
            }
        }
        // once deletion is requested, the machine finishes it
        sim.aw.deletion_requested = true;
        sim.sticky = false;
        for i in 0..10 {
            if sim.finalizer_removed {
                break;
            }
            sim.at(clock + 1000 * (i + 1)).step();
        }
        prop_assert!(sim.finalizer_removed || !sim.aw.has_finalizer);
        prop_assert!(sim.components.iter().all(|c| !c.exists));
        Ok(())
    }

    #[test]
    fn never_creates_while_suspended_and_never_leaves_terminating_early() {
        let config = ProptestConfig {
            cases: 512,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        let seen = RefCell::new(HashSet::new());
        let strategy = (prop::collection::vec(ev(), 1..60), -1i32..3);
        TestRunner::new(config)
            .run(&strategy, |(events, limit)| history(events, limit, &seen))
            .unwrap();
        // the histories are not vacuous: they visit every phase
        let seen = seen.into_inner();
        for p in [
            Phase::Suspended,
            Phase::Resuming,
            Phase::Running,
            Phase::Resetting,
            Phase::Suspending,
            Phase::Succeeded,
            Phase::Failed,
            Phase::Terminating,
        ] {
            assert!(seen.contains(&p), "no history reached {p:?}: {seen:?}");
        }
    }
}
