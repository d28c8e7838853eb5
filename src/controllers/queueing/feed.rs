//! Feeding the engine from the watches: ResourceFlavors, ClusterQueues,
//! Cohorts, LocalQueues, Namespaces and Workloads in, as the engine's inputs.

use super::*;
use crate::queueing::finalizers::Guarded;

impl Controller {
    pub(super) fn input(&mut self, input: Input) {
        match input {
            Input::Flavor(ev) => self.on_event(FLAVORS, ev, |c, rf| {
                c.guarded.insert(
                    (Guarded::ResourceFlavor, rf.name_any()),
                    finalizers::Guard::of(rf),
                );
                let f = translation::flavor(rf);
                if c.started {
                    c.engine.upsert_flavor(f);
                } else {
                    c.initial.flavors.push(f);
                }
            }),
            Input::Topology(ev) => self.on_event(TOPOLOGIES, ev, |c, t| {
                c.guarded
                    .insert((Guarded::Topology, t.name_any()), finalizers::Guard::of(t));
                let levels = t.spec.levels.iter().map(|l| l.node_label.clone()).collect();
                if c.started {
                    c.engine.upsert_topology(&t.name_any(), levels);
                } else {
                    c.initial.topologies.push((t.name_any(), levels));
                }
                // ClusterQueues naming it may become (in)active.
                c.status_due = true;
            }),
            Input::Node(ev) => self.on_event(NODES, *ev, |c, n| {
                let node = translation::node(n);
                if c.started {
                    c.engine.sync_node(node);
                } else {
                    c.initial_nodes.insert(node.name.clone(), node);
                }
            }),
            Input::Pod(ev) => self.on_event(PODS, *ev, |c, p| {
                let k = key(p.metadata.namespace.as_deref(), &p.name_any());
                let usage = translation::non_tas_usage(p);
                if c.started {
                    c.engine.update_pod_usage(&k, usage);
                } else {
                    match usage {
                        Some(u) => c.initial_pods.insert(k, u),
                        None => c.initial_pods.remove(&k),
                    };
                }
            }),
            Input::ClusterQueue(ev) => self.on_event(CLUSTER_QUEUES, ev, |c, cq| {
                c.guarded.insert(
                    (Guarded::ClusterQueue, cq.name_any()),
                    finalizers::Guard::of(cq),
                );
                c.on_cluster_queue_checks(cq);
                c.on_fair_weight(false, &cq.name_any(), cq.spec.fair_sharing.as_ref());
                match translation::cluster_queue(cq) {
                    Ok(q) if c.started => c.engine.upsert_cluster_queue(q),
                    Ok(q) => c.initial.cluster_queues.push(q),
                    Err(e) => {
                        warn!(cluster_queue = %cq.name_any(), error = %e, "ClusterQueue not usable")
                    }
                }
            }),
            Input::LocalQueue(ev) => self.on_event(LOCAL_QUEUES, ev, |c, lq| {
                let q = translation::local_queue(lq);
                if c.started {
                    c.engine.upsert_local_queue(q);
                } else {
                    c.initial.local_queues.push(q);
                }
                // Its status (stopped or not) may change with no workload
                // moving.
                c.status_due = true;
            }),
            Input::Namespace(ev) => self.on_event(NAMESPACES, ev, |c, ns| {
                let labels = ns.labels().clone();
                if c.started {
                    c.engine.upsert_namespace(&ns.name_any(), labels);
                } else {
                    c.initial.namespaces.push((ns.name_any(), labels));
                }
            }),
            Input::Workload(ev) => self.on_event(WORKLOADS, ev, |c, wl| c.on_workload(wl)),
            Input::Cohort(ev) => self.on_event(COHORTS, ev, |c, co| {
                c.on_fair_weight(true, &co.name_any(), co.spec.fair_sharing.as_ref());
                match translation::cohort(co) {
                    Ok(q) if c.started => c.engine.upsert_cohort(q),
                    Ok(q) => c.initial.cohorts.push(q),
                    Err(e) => warn!(cohort = %co.name_any(), error = %e, "Cohort not usable"),
                }
                // ClusterQueues' availability may change with no workload
                // moving.
                c.status_due = true;
            }),
            Input::AdmissionCheck(ev) => self.on_admission_check(ev),
            Input::PriorityClass(ev) => self.priorities.on_class(ev),
            Input::PriorityRecheck(k) => self.priorities.recheck_one(&k),
            Input::Deactivate(k, rv) => self.deactivate_again(k, rv),
            Input::ClaimTemplate(ev) => self.on_event(TEMPLATES, ev, |c, t| {
                let named = c.claims.template(
                    t.metadata.namespace.as_deref().unwrap_or_default(),
                    &t.name_any(),
                    Some(&t.spec.spec),
                );
                c.recount(named);
            }),
            Input::ResourceSlice(ev) => self.on_event(SLICES, ev, |c, sl| {
                let pending = c.claims.slice(&sl.name_any(), Some(&sl.spec));
                c.recount(pending);
            }),
            Input::DeviceClass(ev) => self.on_event(CLASSES, ev, |c, dc| {
                let created = dc
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map_or(0, |t| t.0.as_second());
                let pending = c.claims.class(&dc.name_any(), Some(&dc.spec), created);
                c.recount(pending);
            }),
            Input::Written {
                key,
                outcome,
                written,
                based_on,
            } => {
                if let (Some(wl), Some(m)) = (written, self.meta.get_mut(&key)) {
                    // No newer event from the watch yet: the next write
                    // starts from what this one left, not from a stale
                    // resourceVersion bound to conflict.
                    if m.resource_version == based_on {
                        m.refresh(&wl);
                    }
                }
                self.newer.forget(&key);
                match outcome {
                    Outcome::Admitted => {
                        self.engine.confirm_admission(&key);
                        self.finish_replaced(&key);
                    }
                    Outcome::AdmissionRefused => {
                        self.devices.refused(&key);
                        self.engine.reject_admission(&key)
                    }
                    Outcome::ReplacementRefused => self.engine.refuse_replacement(&key),
                    Outcome::Done => {}
                }
                self.unsent.remove(&key);
                self.busy.remove(&key);
                self.next_write(&key);
            }
            Input::GuardWritten { kind, name } => {
                self.guard_in_flight.remove(&(kind, name));
            }
            Input::StatusWritten { queue, ok } => {
                self.status_in_flight.remove(&queue);
                if !ok {
                    // Written again at the next tick.
                    match &queue {
                        QueueKey::Cluster(name) => self.cq_written.remove(name),
                        QueueKey::Local(ns, name) => {
                            self.lq_written.remove(&(ns.clone(), name.clone()))
                        }
                        QueueKey::Cohort(name) => self.cohort_written.remove(name),
                    };
                }
                // What changed while it was in flight is written next.
                self.status_due = true;
            }
        }
        if !self.started && self.listings.iter().all(|l| l.done) {
            let mut initial = std::mem::take(&mut self.initial);
            // Workloads with claims are counted once every template is
            // known (see `on_workload`).
            let mut held = Vec::new();
            for k in self.claims.keys() {
                match self.claims.count(&k) {
                    Some(claims::Counted::Queue(v)) if !v.finished => initial.workloads.push(*v),
                    Some(claims::Counted::Held(message)) => held.push((k, message)),
                    _ => {}
                }
            }
            // Only Workloads that claim devices need their ClusterQueue
            // found (a scan) to be charged their devices.
            for wl in &mut initial.workloads {
                let key = wl.key();
                if !self.devices.claims_devices(&key) {
                    continue;
                }
                let cq = initial
                    .local_queues
                    .iter()
                    .find(|l| *l.namespace == *wl.namespace && *l.name == *wl.queue_name)
                    .and_then(|l| {
                        initial
                            .cluster_queues
                            .iter()
                            .find(|c| c.name == l.cluster_queue)
                    });
                super::devices::charge(&self.devices, &key, wl, cq);
            }
            self.engine = self.engine.rebuilt(initial);
            // Fair sharing's weights reach the engine once it has started.
            self.engine.set_fair_sharing(self.fair.clone());
            self.apply_checks();
            for (_, node) in std::mem::take(&mut self.initial_nodes) {
                self.engine.sync_node(node);
            }
            for (k, usage) in std::mem::take(&mut self.initial_pods) {
                self.engine.update_pod_usage(&k, Some(usage));
            }
            self.started = true;
            for (k, message) in held {
                self.hold_for_claims(k, message);
            }
            info!(
                workloads = self.meta.len(),
                "queueing engine rebuilt from the API"
            );
        }
    }

    pub(super) fn on_event<K: Resource + ResourceExt>(
        &mut self,
        kind: usize,
        ev: Event<K>,
        mut upsert: impl FnMut(&mut Self, &K),
    ) {
        let k = |o: &K| -> Key { key(o.namespace().as_deref(), &o.name_any()).into() };
        match ev {
            Event::Init => self.listings[kind].seen = Some(HashSet::new()),
            Event::InitApply(o) => {
                let k = self.known_key(kind, k(&o));
                if let Some(seen) = &mut self.listings[kind].seen {
                    seen.insert(k);
                }
                upsert(self, &o);
            }
            Event::InitDone => {
                let seen = self.listings[kind].seen.take().unwrap_or_default();
                let gone: Vec<Key> = self.known[kind]
                    .iter()
                    .filter(|k| !seen.contains(*k))
                    .cloned()
                    .collect();
                for g in gone {
                    self.delete(kind, &g);
                }
                self.listings[kind].done = true;
            }
            Event::Apply(o) => {
                self.known_key(kind, k(&o));
                upsert(self, &o);
            }
            Event::Delete(o) => self.delete(kind, &k(&o)),
        }
    }

    /// The known set's copy of `k`, added if new.
    pub(super) fn known_key(&mut self, kind: usize, k: Key) -> Key {
        match self.known[kind].get(&k) {
            Some(known) => known.clone(),
            None => {
                self.known[kind].insert(k.clone());
                k
            }
        }
    }

    /// The shared copy of a Workload's key.
    pub(super) fn shared_key(&self, k: &str) -> Key {
        match self.meta.get_key_value(k) {
            Some((k, _)) => k.clone(),
            None => k.into(),
        }
    }

    pub(super) fn delete(&mut self, kind: usize, k: &str) {
        self.known[kind].remove(k);
        match kind {
            FLAVORS => {
                self.guarded
                    .remove(&(Guarded::ResourceFlavor, k.to_string()));
                self.engine.delete_flavor(k)
            }
            CLUSTER_QUEUES => {
                self.guarded.remove(&(Guarded::ClusterQueue, k.to_string()));
                self.engine.delete_cluster_queue(k);
                self.cq_status.remove(k);
                self.cq_written.remove(k);
                self.status_written_at
                    .remove(&QueueKey::Cluster(k.to_string()));
            }
            LOCAL_QUEUES => {
                if let Some((ns, name)) = k.split_once('/') {
                    self.engine.delete_local_queue(ns, name);
                    self.lq_written.remove(&(ns.to_string(), name.to_string()));
                    self.status_written_at
                        .remove(&QueueKey::Local(ns.to_string(), name.to_string()));
                }
            }
            NAMESPACES => self.engine.delete_namespace(k),
            NODES if self.started => self.engine.delete_node(k),
            NODES => {
                self.initial_nodes.remove(k);
            }
            PODS if self.started => self.engine.update_pod_usage(k, None),
            PODS => {
                self.initial_pods.remove(k);
            }
            TOPOLOGIES => {
                self.guarded.remove(&(Guarded::Topology, k.to_string()));
                self.engine.delete_topology(k);
                self.status_due = true;
            }
            COHORTS => self.engine.delete_cohort(k),
            TEMPLATES => {
                let (ns, name) = split_key(k);
                let named = self.claims.template(ns, name, None);
                self.recount(named);
            }
            SLICES => {
                let pending = self.claims.slice(k, None);
                self.recount(pending);
            }
            CLASSES => {
                let pending = self.claims.class(k, None, 0);
                self.recount(pending);
            }
            _ => {
                if self.devices.forget(k) {
                    self.engine.requeue_set_aside();
                }
                self.engine.delete_workload(k);
                self.claims.forget(k);
                self.meta.remove(k);
                self.finished.remove(k);
                self.queued.remove(k);
                self.drained.remove(k);
                self.priorities.forget(k);
                self.jobless.forget(k);
            }
        }
        self.status_due = true;
    }

    pub(super) fn on_workload(&mut self, wl: &api::Workload) {
        let k = key(wl.metadata.namespace.as_deref(), &wl.name_any());
        let k = self.known_key(WORKLOADS, k.into());
        let conds = wl.status.as_ref().and_then(|s| s.conditions.as_ref());
        let mut engine_wl = match translation::workload(wl) {
            Ok(w) => w,
            Err(e) => {
                warn!(workload = %k, error = %e, "Workload not usable");
                return;
            }
        };
        let first = self
            .meta
            .insert(k.clone(), Meta::of(wl, &engine_wl))
            .is_none();
        if self.busy.contains(&k) {
            self.newer.note(&k, wl);
        }
        self.priorities.observe(&k, wl);
        let owned = self.meta.get(&k).is_some_and(|m| m.owned);
        self.observe_jobless(&k, wl, owned);
        // Finished ones leave `meta`: their later events are not arrivals.
        if first && !engine_wl.finished {
            debug!(workload = %k, "workload seen");
        }
        // Requeued after a PodsReadyTimeout, it may queue by when it was
        // evicted (after the Workload's metadata took its creation time).
        engine_wl.created = crate::jobs::readiness::queue_order_time(
            self.requeuing_timestamp,
            engine_wl.created,
            conds
                .into_iter()
                .flatten()
                .find(|c| c.type_ == condition::EVICTED)
                .map(|c| {
                    (
                        c.status == "True",
                        c.reason.as_str(),
                        c.last_transition_time.0.as_millisecond(),
                    )
                }),
        );
        if engine_wl.finished {
            let lq = (
                engine_wl.namespace.to_string(),
                engine_wl.queue_name.to_string(),
            );
            self.finished.insert(k.clone(), lq);
        } else {
            self.finished.remove(&k);
        }
        if self.devices.observe(&k, wl) {
            self.engine.requeue_set_aside();
        }
        if self.started && self.devices.claims_devices(&k) {
            let cq = self
                .engine
                .local_queue(&engine_wl.namespace, &engine_wl.queue_name)
                .and_then(|lq| self.engine.cluster_queue(&lq.cluster_queue));
            super::devices::charge(&self.devices, &k, &mut engine_wl, cq);
        }
        if drained_by(conds.map_or(&[][..], Vec::as_slice)).is_some() {
            self.drained.insert(k.clone());
        } else {
            self.drained.remove(&k);
        }
        if engine_wl.finished {
            // Finished Workloads stay in the API until their job is deleted;
            // nothing more to write for them.
            self.meta.remove(&k);
            self.queued.remove(&k);
            self.drained.remove(&k);
        }
        let engine_wl = match self.claims.observe(&k, wl, engine_wl) {
            claims::Counted::Queue(v) => *v,
            // Before the first lists are in, a template may not be known
            // yet: counted when the engine is rebuilt.
            claims::Counted::Held(_) if !self.started => return,
            claims::Counted::Held(message) => {
                self.hold_for_claims(k, message);
                return;
            }
        };
        if self.started {
            self.engine.upsert_workload(engine_wl);
        } else if !engine_wl.finished && !self.claims.uses(&k) {
            self.initial.workloads.push(engine_wl);
        }
        self.status_due = true;
    }

    /// Counts again the Workloads whose templates changed.
    fn recount(&mut self, named: Vec<Key>) {
        if !self.started {
            return;
        }
        for k in named {
            // Only what changed: a slice event recounts every pending
            // DRA Workload, most of them to the same answer.
            match self.claims.recount(&k) {
                Some(claims::Counted::Queue(v)) if !v.finished => self.engine.upsert_workload(*v),
                Some(claims::Counted::Held(message)) => self.hold_for_claims(k, message),
                _ => {}
            }
        }
        self.status_due = true;
    }

    /// `kubectl kueue simulate`: the Workload a job would get, counted as
    /// its claims would count it (held for its devices, or charged with
    /// them) and then nominated on a copy of the quota tree; nothing kept.
    pub(super) fn simulate(
        &mut self,
        wl: &api::Workload,
        view: crate::queueing::Workload,
    ) -> crate::queueing::scheduler::Explanation {
        let key: Key = format!(
            "{}/{} (simulated)",
            view.namespace,
            wl.metadata.name.as_deref().unwrap_or_default()
        )
        .into();
        let counted = self.claims.observe(&key, wl, view);
        self.claims.forget(&key);
        match counted {
            claims::Counted::Queue(v) => self.engine.simulate(&v),
            claims::Counted::Held(message) => {
                let mut e = crate::queueing::scheduler::Explanation::held_for_devices(
                    &wl.spec.queue_name.clone().unwrap_or_default(),
                    &message,
                );
                e.summary.insert(0, "If it were created now:".into());
                e
            }
        }
    }

    /// Keeps a Workload whose claims cannot be counted out of the engine,
    /// pending with Kueue's message (written only when it changes).
    fn hold_for_claims(&mut self, k: Key, message: String) {
        self.engine.delete_workload(&k);
        self.decide(Decision::Pending {
            workload: k.to_string(),
            reason: PendingReason::Misconfigured,
            message,
        });
        self.status_due = true;
    }
}

/// What the controller watches.
pub(super) trait Watched:
    Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static
{
}

impl<K> Watched for K where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static
{
}

pub(super) fn watch<K: Watched>(
    api: Api<K>,
    tx: mpsc::UnboundedSender<Input>,
    wrap: fn(Event<K>) -> Input,
) {
    watch_with(api, watcher::Config::default(), tx, wrap)
}

/// [`watch`] with a selector.
pub(super) fn watch_with<K: Watched>(
    api: Api<K>,
    config: watcher::Config,
    tx: mpsc::UnboundedSender<Input>,
    wrap: fn(Event<K>) -> Input,
) {
    tokio::spawn(async move {
        let mut health =
            crate::cluster::watch::Health::new(crate::cluster::watch::name_of::<K>(&()));
        let stream = watcher::watcher(api, config.any_semantic()).default_backoff();
        futures::pin_mut!(stream);
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(ev) => {
                    health.delivered();
                    if tx.send(wrap(ev)).is_err() {
                        return;
                    }
                }
                Err(e) => health.failed(&e),
            }
        }
    });
}
