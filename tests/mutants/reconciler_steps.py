#!/usr/bin/env python3
"""Mutation check of the reconcilers' steps (jobs::machine and its pods and
owners modules, jobs::workload::follow, jobs::autoscaling, jobs::topology_gate, prescale::sync,
queueing::check_states, queueing::provisioning::pass, multikueue::dispatch, and the slice rule
of queueing::scheduler): each rule is removed in turn and `cargo
test --lib` of the step's module must fail. Not part of `make test` (one build per mutation,
about a minute each); run it after changing a step:

    python3 tests/mutants/reconciler_steps.py [NAME ...]
    python3 tests/mutants/reconciler_steps.py --check   # each rule still found once (no build; make test runs it)

It works on a copy of the checkout (git archive of HEAD plus the working
tree's changed and new files under src/) with a target directory of its own:
cargo hashes a workspace crate by its path relative to the workspace, so a
copy sharing this checkout's target would overwrite its artifacts.
Prints one line per mutation; exits 1 if any mutation is not caught.
"""
import os, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
J, P, O = "src/jobs/machine.rs", "src/jobs/machine/pods.rs", "src/jobs/machine/owners.rs"
S, C = "src/prescale/sync.rs", "src/queueing/check_states.rs"
V = "src/queueing/provisioning/pass.rs"
W = "src/jobs/workload.rs"
A = "src/jobs/autoscaling.rs"
T, M = "src/jobs/topology_gate.rs", "src/multikueue/dispatch.rs"
Q = "src/queueing/scheduler.rs"
# The tests that must catch a mutation of each file.
TESTS = {J: "jobs::machine", P: "jobs::machine", O: "jobs::machine", S: "prescale::sync", C: "queueing::check_states",
         V: "queueing::provisioning::pass", W: "jobs::workload::follow_tests",
         A: "jobs::autoscaling", T: "jobs::topology_gate", M: "multikueue::dispatch",
         Q: "queueing::scheduler::tests::slice_cases"}

# (file, name, the rule as written, the rule removed)
MUTATIONS = [
    (J, "another owner's Workload", "    } else if !owned(wl) {", "    } else if false && !owned(wl) {"),
    (J, "a missing prebuilt Workload is waited for, never made", "        if subject.prebuilt {\n            return Ok(prebuilt_missing(suspended, stop));", "        if false {\n            return Ok(prebuilt_missing(suspended, stop));"),
    (J, "a prebuilt Workload another object controls is left alone", "            Some(uid) if uid != subject.uid => {", "            Some(uid) if false && uid != subject.uid => {"),
    (J, "an ownerless prebuilt Workload is taken", "            None => return Ok(Step::wait(vec![adopt(wl, facts.policy, subject)])),", "            None => {}"),
    (J, "a prebuilt Workload out of sync is finished", "    if let Some(s) = prebuilt_out_of_sync(facts, subject, job, wl, &conds, read)? {", "    if let Some(s) = prebuilt_out_of_sync(facts, subject, job, wl, &conds, read)?.filter(|_| false) {"),
    (J, "a going job", 'if job.at("/metadata/deletionTimestamp").is_some() {', "if false {"),
    (J, "a job started without a Workload is stopped", "        if !suspended && !scaling_up {\n            // Started without an admission", "        if false {\n            // Started without an admission"),
    (J, "a running elastic job that outgrew its slice is not stopped", "        if !suspended && !scaling_up {", "        if !suspended {"),
    (J, "a scale-up slice names the slice it replaces", "                chain.replaces = Some(facts[r].key.clone());", "                let _ = r;"),
    (J, "a slice the job no longer matches is finished", "    if !plan.finish.is_empty() {", "    if false {"),
    (J, "a TrainJob's readiness reads its runtime's view", "        _ => view(policy, job, read).map(Some),", "        _ => view(policy, job, read).map(|_| Some(job)),"),
    (J, "a TrainJob whose runtime is gone reports nothing", "        Some(Err(_)) => Ok(None),\n        _ => view(policy, job, read)", "        Some(Err(_)) => Ok(Some(job)),\n        _ => view(policy, job, read)"),
    (J, "a running TrainJob is compared through its view", "    let current = workload::pod_sets(policy, view(policy, job, read).ok()?).ok()?;", "    let current = workload::pod_sets(policy, view(policy, job, read).ok().filter(|_| policy.runtime_ref.is_none())?).ok()?;"),
    (J, "a finished Workload is let go", "    if conds.is_true(condition::FINISHED) {\n        // Kueue's job reconciler", "    if false {\n        // Kueue's job reconciler"),
    (J, "a Workload being deleted", "    if wl.metadata.deletion_timestamp.is_some() {", "    if false {"),
    (J, "a deactivation target", "    if conds.is_true(condition::DEACTIVATION_TARGET) && wl.spec.active != Some(false) {\n        // Kueue's workload controller", "    if false {\n        // Kueue's workload controller"),
    (J, "deadlines: a deactivation target", "    if conds.is_true(condition::DEACTIVATION_TARGET) && wl.spec.active != Some(false) {\n        return Timer::Expired", "    if false {\n        return Timer::Expired"),
    (J, "a running job no longer matching is replaced", "            if let Some(s) = no_longer_matching(facts, subject, job, wl, read) {", "            if let Some(s) = no_longer_matching(facts, subject, job, wl, read).filter(|_| false) {"),
    (J, "a running job is compared at its admitted counts", "        &workload::admitted_pod_sets(wl),", "        &workload::recorded_pod_sets(wl),"),
    (J, "a pending job is restored only while it carries an admission", "    if workload::carries_admission(policy, job) {", "    if true {"),
    (J, "a finished job", "    if let Some((reason, message)) = finished {", "    if let Some((reason, message)) = finished.filter(|_| false) {"),
    (J, "readiness written", "        return Ok(Step::wait(vec![Write::WorkloadStatus(status)]));", "        let _ = status;"),
    (J, "an evicted job", "    if reserved && conds.is_true(condition::EVICTED) {", "    if false {"),
    (J, "pods still stopping", "        if !dispatched(policy, job) && policy.status.as_ref().is_some_and(|s| s.is_active(job)) {", "        if false {"),
    (J, "a MultiKueue job has no pods here", "        .is_some_and(|v| v == keys::MULTIKUEUE_CONTROLLER)\n}", "        .is_some_and(|v| v == keys::MULTIKUEUE_CONTROLLER && false)\n}"),
    (J, "a job deleted under its operator's cleanup keeps its Workload", "                .is_some_and(|k| k.on(job))\n        {", "                .is_some_and(|k| k.on(job) && false)\n        {"),
    (J, "a Workload deleted itself is not kept", "        let deleting = wl.is_some_and(|wl| wl.metadata.deletion_timestamp.is_some());", "        let deleting = false;"),
    (J, "a dispatched job's pods are not looked for here", "    if dispatched(policy, job) {\n        return None;", "    if false {\n        return None;"),
    (J, "execution time expiry", "        wl.spec.maximum_execution_time_seconds,\n        accumulated,", "        None,\n        accumulated,"),
    (J, "pods not ready in time evict", "    Timer::Expired(vec![\n        Write::WorkloadStatus(status),\n        Write::WorkloadEvent(Note::normal(&reason, message)),\n    ])", "    let _ = (status, reason, message);\n    Timer::Idle"),
    (J, "past the requeuing limit deactivate", '            return Timer::Expired(vec![Write::WorkloadStatus(json!({"conditions": c.0}))]);', "            return Timer::Idle;"),
    (J, "a flavor not cached", "    let Some(mut infos) = (facts.infos)(wl, &subject.queue) else {", "    let Some(mut infos) = (facts.infos)(wl, &subject.queue).or(Some(Vec::new())) else {"),
    (J, "failed to start", "        let writes = match workload::with_check_updates(&mut infos, checks)\n", "        let writes = match workload::with_check_updates(&mut infos, checks).or(Ok(()))\n"),
    (J, "checks pending", "    if reserved && suspended {", "    if false {"),
    (J, "an unadmitted run is stopped", "        return Ok(Step::wait(vec![stop(NOT_ADMITTED)]));\n    }\n    let recorded", "        return Ok(Step::wait(Vec::new()));\n    }\n    let recorded"),
    (J, "an unadmitted elastic job keeps running", "        if subject.slice.is_some() {\n            return Ok(Step::wait(Vec::new()));", "        if false {\n            return Ok(Step::wait(Vec::new()));"),
    (J, "templates restored", "    if ops.is_empty() {\n        return None;\n    }\n    if let Some(status)", "    if true || ops.is_empty() {\n        return None;\n    }\n    if let Some(status)"),
    (J, "status reset first", "    if let Some(status) = status_reset(policy, job) {", "    if let Some(status) = status_reset(policy, job).filter(|_| false) {"),
    (J, "the requeue backoff", "    if let Some(s) = backoff(wl, &conds, now) {", "    if let Some(s) = backoff(wl, &conds, now).filter(|_| false) {"),
    (J, "a changed job updates its Workload", "    if !workload::equivalent(", "    if false && !workload::equivalent("),
    (J, "the queue name follows", "    if wl.spec.queue_name.as_deref() == Some(subject.queue.as_str()) {", "    if true {"),
    (J, "the priority class follows", "    match workload::priority_update(policy, job, facts.classes, wl, reserved_now) {", "    match workload::priority_update(policy, job, facts.classes, wl, reserved_now).map(|_| None::<Value>) {"),
    (J, "the referenced view is read first", "    if policy.runtime_ref.is_none() {\n        return Ok(job);", "    if true {\n        return Ok(job);"),
    (J, "the finalizer only when held", "    if holds_quota_finalizer(wl) {", "    if true {"),
    (J, "an orphan is finished first", "    if wl.metadata.deletion_timestamp.is_none() && !conds.is_true(condition::FINISHED) {", "    if false {"),
    (J, "after a takeover a finished job's pass first", "    if finished {\n        Duration::ZERO\n    } else {", "    if false {\n        Duration::ZERO\n    } else {"),
    (J, "an unknown priority class is told", "            Ok(p) => p,\n            Err(e) => return Ok(compose_error(&e)),", "            Ok(p) => p,\n            Err(_) if true => workload::priority(policy, &json!({}), facts.classes).unwrap(),\n            Err(e) => return Ok(compose_error(&e)),"),
    (P, "pods: a finished Workload lets its pods go", "    if conds.is_true(condition::FINISHED) {\n        // Accounted for", "    if false {\n        // Accounted for"),
    (P, "pods: a deleted Workload deletes its pods", "    if wl.metadata.deletion_timestamp.is_some() {\n        // The Workload is going", "    if false {\n        // The Workload is going"),
    (P, "pods: finished pods finish the Workload", "    if let Some((succeeded, message)) = pod::finished(gate, &pods) {", "    if let Some((succeeded, message)) = pod::finished(gate, &pods).filter(|_| false) {"),
    (P, "pods: an eviction deletes running pods", "        if !stops.is_empty() {", "        if false {"),
    (P, "pods: only an admission ungates", "    if !(reserved && conds.is_true(condition::ADMITTED)) {", "    if !reserved {"),
    (P, "pods: a pod admitted on a MultiKueue worker stays gated", "    if status.cluster_name.is_some() {", "    if false {"),
    (P, "pods: an ownerless prebuilt Workload is taken", "    if let Some(adopt) = adoption(this, members, wl, group) {", "    if let Some(adopt) = adoption(this, members, wl, group).filter(|_| false) {"),
    (P, "pods: a group waits for its pods", "                Err(GroupProblem::TooFew(_)) => return Step::wait(writes),", "                Err(GroupProblem::TooFew(_)) => {}"),
    (P, "pods: a prebuilt Workload is waited for", "            return Step::after(writes, Duration::from_secs(5));\n        }\n        if let (true", "            let _ = &writes;\n        }\n        if let (true"),
    (P, "pods: a deleted single pod is let go", "    if !group && deleting(this) {", "    if false {"),
    (P, "pods: a flavor not cached", "    let Some(infos) = (facts.infos)(wl, queue) else {", "    let Some(infos) = (facts.infos)(wl, queue).or(Some(Vec::new())) else {"),
    (P, "pods: excess pods deleted", "            .filter(|&&i| !deleting(pods[i]))", "            .filter(|_| false)"),
    (P, "pods: replaced pods let go", "        r.excess.iter().chain(&r.replaced).map(|&i| (i, pods[i])),", "        r.excess.iter().map(|&i| (i, pods[i])),"),
    (P, "pods: replacements own the Workload", "            if let Some(w) = new_owners(wl, &r.kept, &pods) {", "            if let Some(w) = new_owners(wl, &r.kept, &pods).filter(|_| false) {"),
    (P, "pods: a group missing pods waits for them", "replacement_condition(&conds, r.absent > 0, wl, now)", "replacement_condition(&conds, false, wl, now)"),
    (P, "pods: the rest of the step sees the pods kept", "    let kept = |i: usize| kept.as_ref().is_none_or(|k| k.binary_search(&i).is_ok());", "    let kept = |i: usize| kept.as_ref().is_none_or(|k| k.binary_search(&i).is_ok() || true);"),
    (O, "owners: an old revision is ungated", "        if pod_owner::old_revision(obj, pod) {", "        if false {"),
    (O, "owners: another owner's Workload", "    if !workload::is_owned_by(wl.metadata.owner_references.as_deref(), uid) {", "    if false {"),
    (O, "owners: an admitted group wakes its pods", "        writes.extend(members.iter().map(|&pod| Write::WakePod { pod }));", ""),
    (O, "owners: groups beyond the replicas deleted", "            if wl.metadata.deletion_timestamp.is_none() {\n                writes.push(Write::DeleteWorkload", "            if false {\n                writes.push(Write::DeleteWorkload"),
    (O, "owners: the finalizer first", "            if super::holds_quota_finalizer(wl) {\n                writes.push(Write::RemoveFinalizer", "            if false {\n                writes.push(Write::RemoveFinalizer"),
    (O, "owners: a deleted Workload of a set without pods lets go", "        if members.is_empty() && super::holds_quota_finalizer(wl) {", "        if false {"),
    (O, "owners: a deleted Workload is left to its deletion", "    if wl.metadata.deletion_timestamp.is_some() {\n        if members", "    if false {\n        if members"),
    (O, "owners: a legacy Workload is followed only when the set's", "        !uid.is_empty() && workload::is_owned_by(w.metadata.owner_references.as_deref(), uid)", "        !uid.is_empty()"),
    (O, "owners: pods join the followed Workload's group", "        Some(w) => w.metadata.name.clone().unwrap_or_default(),", "        Some(_) => pod_owner::workload_name(facts.policy, obj),"),
    (O, "owners: the queue follows", "        if wl.spec.queue_name.as_deref() != Some(q) {", "        if false {"),
    (O, "owners: the group's Workload created", "        if replicas > 0 && queue.is_some() && !pod_owner::is_multikueue_copy(obj) {", "        if false {"),
    (O, "owners: a MultiKueue copy makes no Workload", "        if replicas > 0 && queue.is_some() && !pod_owner::is_multikueue_copy(obj) {", "        if replicas > 0 && queue.is_some() {"),
    (O, "owners: a MultiKueue copy takes the manager's copy", "        if let Some(metadata) = multikueue_adoption(facts.policy, obj, wl, replicas) {", "        if let Some(metadata) = multikueue_adoption(facts.policy, obj, wl, replicas).filter(|_| false) {"),
    (O, "owners: a MultiKueue copy's groups are the manager's", "    let create = if pod_owner::is_multikueue_copy(obj) {", "    let create = if false {"),
    (S, "prescale: a deleted object", "    if psc.metadata.deletion_timestamp.is_some() {", "    if false {"),
    (S, "prescale: a foreign CronJob is left alone", "    if !cronjob::controlled_by(live, uid) {", "    if false {"),
    (S, "prescale: a CronJob in step is not written", "    let Some(path) = cronjob::drift(live, &d.cronjob, uid) else {", "    let Some(path) = cronjob::drift(live, &d.cronjob, uid).or(Some(String::new())) else {"),
    (S, "prescale: a changed spec is an update", "    let (done, outcome) = if spec_changed {", "    let (done, outcome) = if false && spec_changed {"),
    (S, "prescale: a conflict is silent", "            Write::Replace(_) if conflict => Refusal {", "            Write::Replace(_) if false && conflict => Refusal {"),
    (S, "prescale: an unchanged status is not written", "    if same_condition\n", "    if false && same_condition\n"),
    (S, "prescale: the transition time kept", "            Some(c) if c.status == word => c.last_transition_time.clone(),", "            Some(c) if false && c.status == word => c.last_transition_time.clone(),"),
    (S, "prescale: the last sync kept when not ready", "        last_sync_time: if o.ready {", "        last_sync_time: if true {"),
    (C, "checks: a finished or going Workload", "    if conds.is_true(condition::FINISHED) || wl.metadata.deletion_timestamp.is_some() {", "    if false {"),
    (C, "checks: the states follow the queue first", "    if let Some(synced) = checks::sync(&states, &required, now) {", "    if let Some(synced) = checks::sync(&states, &required, now).filter(|_| false) {"),
    (C, "checks: every check ready admits", "    if !admitted {", "    if false {"),
    (C, "checks: deactivation marked once", "        Some(Verdict::Deactivate { .. }) if conds.is_true(condition::DEACTIVATION_TARGET) => {", "        Some(Verdict::Deactivate { .. }) if false => {"),
    (C, "checks: a jobless Workload's quota released", "    if !owned {", "    if false {"),
    (C, "checks: a retry delay held", "    if let Some(at) = checks::requeue_at(states, current, now.0.as_millisecond()) {", "    if let Some(at) = checks::requeue_at(states, current, now.0.as_millisecond()).filter(|_| false) {"),
    (C, "checks: a delay waited out", "    if left > 0 {", "    if false {"),
    (C, "checks: a pods-ready backoff left to the job reconciler", "    if !by_check || pods_ready || wl.spec.active == Some(false) {", "    if !by_check || wl.spec.active == Some(false) {"),
    (C, "checks: the MultiKueue worker forgotten on eviction", "    if status.cluster_name.is_some() || status.nominated_cluster_names.is_some() {", "    if false {"),
    (V, "provisioning: nothing without its checks", "    if f.checks.is_empty() {\n        return Ok(Pass::Nothing);", "    if false {\n        return Ok(Pass::Nothing);"),
    (V, "provisioning: an ending Workload's requests go", "    if stage(f.wl) == Stage::Ending {", "    if false {"),
    (V, "provisioning: an evicted Workload is ending", "    if conds.is_true(condition::FINISHED) || conds.is_true(condition::EVICTED) {", "    if conds.is_true(condition::FINISHED) {"),
    (V, "provisioning: the states first", "    if new_states != states {", "    if false {"),
    (V, "provisioning: unused requests deleted", "        .filter(|r| !last.values().any(|l| l.name == r.name))", "        .filter(|_| false)"),
    (V, "provisioning: an inactive check", "            None => Need::Inactive,", "            None => continue,"),
    (V, "provisioning: a template not made for the Workload is not adopted", "    if !controls(workload_uid) {", "    if false {"),
    (V, "provisioning: the Workload's reference goes", "        .filter(|o| o.uid != workload_uid)", "        .filter(|_| true)"),
    (V, "provisioning: Active written only when it flips", "        == Some(status)\n    {\n        return None;", "        == Some(status) && false\n    {\n        return None;"),
    (V, "provisioning: a refused create in the check's message", "    s.message = message.chars().take(32 * 1024).collect();", "    let _ = message;"),
    (W, "follow: a Workload holding quota is replaced, not updated", "    match (same, suspended && !reserved) {", "    match (same, suspended) {"),
    (W, "follow: defaults the CRD fills in are no change", "                    covers(kept, asked)\n", "                    kept == asked\n"),
    (W, "follow: tolerations ignored once admitted", "    let fields: &[&str] = if admitted {", "    let fields: &[&str] = if false {"),
    (P, "a group's succeeded pods are reclaimable", "            if let Some(s) = reclaim_status(wl, &found) {", "            if let Some(s) = reclaim_status(wl, &found).filter(|_| false) {"),
    (P, "a serving group reclaims nothing", "        if !pod::is_serving(Some(rule), this) {", "        if true {"),
    (P, "pods keep their Workload's deadlines", "        Timer::Expired(writes) => {\n            return Step::wait(writes.into_iter().filter_map(workload_write).collect())\n        }", "        Timer::Expired(_) => {}"),
    (P, "pods look again at their next deadline", "    let then = |writes: Vec<Write>| match next {", "    let then = |writes: Vec<Write>| match next.filter(|_| false) {"),
    (P, "a dispatched pod's readiness is the worker's", "        .filter(|_| !dispatched)", "        .filter(|_| true)"),
    (P, "a group is ready only when whole", "    i64::try_from(pods.len()).is_ok_and(|n| n >= total) && pods.iter().all(|p| ready(p))", "    pods.iter().all(|p| ready(p))"),
    (O, "scaled to zero, on hold", "            reservation::ON_HOLD,", "            \"Pending\","),
    (O, "scaled up, off hold", "    if replicas > 0 && reservation::is_on_hold(&conds.0) {", "    if false {"),
    (J, "an autoscaled job's annotations are written first", "        Ok(f) if f.patch.is_empty() => Following::Job(f.job),", "        Ok(f) => Following::Job(f.job),"),
    (J, "an autoscaled job's group mismatch is told", "        Err(message) => Following::Step(Step::after(", "        Err(_) => Following::Job(job.clone()),\n        #[allow(unreachable_patterns)]\n        Err(message) => Following::Step(Step::after("),
    (A, "autoscaled: the cluster's counts only under autoscaling", "        if let (true, Some(obj)) = (self.autoscaling(job), object) {", "        if let (_, Some(obj)) = (self.autoscaling(job), object) {"),
    (A, "autoscaled: a group without replicas keeps the job's count", "            if self.count.resolve(group).is_none_or(Value::is_null) {", "            if false {"),
    (A, "autoscaled: a group the job has not is refused", "            else {\n                return Err(format!(", "            else {\n                if true {\n                    continue;\n                }\n                return Err(format!("),
    (A, "autoscaled: the slice named with the cluster's generation", "            Some(g) => format!(\"{generation}_{g}\"),", "            Some(_) => generation.to_string(),"),
    (P, "a going pod of a released Workload is let go", "    if !reserved {\n        // Holding no quota, a pod going", "    if false {\n        // Holding no quota, a pod going"),
    (J, "a prebuilt elastic job's pods are let go by its prebuilt Workload", "    if !(subject.prebuilt && policy.elastic_jobs && is_elastic(job)) {", "    if true {"),
    (J, "a prebuilt Workload lets pods go only once the job's own", '        workload::is_owned_by(wl.metadata.owner_references.as_deref(), uid.unwrap_or(""))', "        true"),
    (T, "only a replaced slice's pods follow another slice", "    if !replaced(named) {", "    if false {"),
    (T, "a successor releases pods once admitted", "                && conds.is_true(condition::ADMITTED)", "                && true"),
    (T, "a replaced slice's finish is waited for only before it", "        && !replaced(wl)", "        && true"),
    (M, "the worker's job names the slice it runs", "        if named != Some(workload_name) {", "        if false {"),
    (M, "a synced spec field is forwarded", "                    .or_else(|| self.kind.spec_sync(local, r))", "                    .or_else(|| None)"),
    (M, "a synced field in step is not patched again", "    if want == at.resolve(remote) {\n        return;", "    if false && want == at.resolve(remote) {\n        return;"),
    (M, "an outgrown slice's elastic sync is left alone", "        if total(&have) < total(&want) && workload_name != self.current_slice(local) {", "        if false {"),
    (M, "groups of equal counts are in sync", "        if let (Some(g), false) = (&self.elastic_groups, have == want) {", "        if let (Some(g), false) = (&self.elastic_groups, false) {"),
    (Q, "a worker's copies of one chain are one job's", "            || (a.copy_chain.is_some() && a.copy_chain == b.copy_chain))", "            || false)"),
]


def check():
    """Each rule is found once in its file, as written now."""
    stale = 0
    for f, name, rule, _ in MUTATIONS:
        n = open(os.path.join(ROOT, f)).read().count(rule)
        if n != 1:
            print(f"{name}: the rule is found {n} times in {f}; update this list")
            stale += 1
        if f not in TESTS:
            print(f"{name}: no tests named for {f} in TESTS")
            stale += 1
    print(f"{len(MUTATIONS)} rules, {stale} stale")
    sys.exit(1 if stale else 0)


def main():
    if sys.argv[1:] == ["--check"]:
        check()
    only = set(sys.argv[1:])
    work = tempfile.mkdtemp(prefix="batchgate-mutants-")
    tree = os.path.join(work, "tree")
    os.mkdir(tree)
    archive = subprocess.run(["git", "-C", ROOT, "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
    changed = subprocess.run(["git", "-C", ROOT, "ls-files", "-m", "-o", "--exclude-standard", "src"],
                             check=True, capture_output=True, text=True).stdout.split()
    for f in changed:
        os.makedirs(os.path.dirname(os.path.join(tree, f)), exist_ok=True)
        shutil.copy(os.path.join(ROOT, f), os.path.join(tree, f))
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(work, "target"))
    missed = 0
    try:
        for f, name, rule, removed in MUTATIONS:
            if only and name not in only:
                continue
            path = os.path.join(tree, f)
            original = open(path).read()
            if original.count(rule) != 1:
                print(f"{name}: the rule is not found once in {f}; update this list")
                missed += 1
                continue
            open(path, "w").write(original.replace(rule, removed))
            r = subprocess.run(["cargo", "test", "--lib", TESTS[f], "--", "--quiet"],
                               cwd=tree, env=env, capture_output=True, text=True)
            open(path, "w").write(original)
            out = r.stdout + r.stderr
            if "test result" not in out:
                print(f"{name}: the mutation does not compile; update this list")
                missed += 1
            elif r.returncode == 0:
                print(f"{name}: NOT CAUGHT")
                missed += 1
            else:
                failed = sorted({l.split()[0].split("::")[-1] for l in out.splitlines()
                                 if l.startswith("    " + TESTS[f])})
                print(f"{name}: caught by {', '.join(failed)}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
