//! What Kueue's built-in AppWrapper integration (its `GenericJob`, which
//! vendors upstream's `pkg/utils`) reads and writes, as pure functions:
//! pod-set info mapping onto components, and the `Finished`, `IsActive`
//! and `PodsReady` answers derived from the status.

use super::machine::Component;
use super::podsets::PodSetInfo;
use super::status::{
    ComponentStatus, Phase, Status, PODS_READY, QUOTA_RESERVED, RESOURCES_DEPLOYED,
};

/// `utils.SetPodSetInfos`: Kueue's flat list (one entry per pod set, in
/// component order, as cached in `status.componentStatus[].podSets`) mapped
/// back onto `spec.components[].podSetInfos`.
pub fn set_pod_set_infos(
    components: &mut [Component],
    component_status: &[ComponentStatus],
    infos: &[PodSetInfo],
) -> Result<(), String> {
    let mut next = 0usize;
    for (c, cs) in components.iter_mut().zip(component_status) {
        if c.pod_set_infos.len() != cs.pod_sets.len() {
            c.pod_set_infos = vec![PodSetInfo::default(); cs.pod_sets.len()];
        }
        for slot in c.pod_set_infos.iter_mut() {
            next += 1;
            if let Some(info) = infos.get(next - 1) {
                *slot = info.clone();
            }
        }
    }
    if next != infos.len() {
        return Err(format!("expecting {next} podsets, got {}", infos.len()));
    }
    Ok(())
}

/// `utils.ClearPodSetInfos` (Kueue's `RestorePodSetsInfo`; always "changed").
pub fn clear_pod_set_infos(components: &mut [Component]) -> bool {
    for c in components.iter_mut() {
        c.pod_set_infos.clear();
    }
    true
}

/// Kueue's `Finished()`: `(message, success, finished)`.
pub fn finished(status: &Status) -> (&'static str, bool, bool) {
    match status.phase {
        Phase::Succeeded => ("AppWrapper finished successfully", true, true),
        Phase::Failed if status.is_true(RESOURCES_DEPLOYED) => (
            "Still deleting resources for failed AppWrapper",
            false,
            false,
        ),
        Phase::Failed => ("AppWrapper failed", false, true),
        _ => ("", false, false),
    }
}

/// Kueue's `IsActive()`: quota stays counted until resources are gone.
pub fn is_active(status: &Status) -> bool {
    status.is_true(QUOTA_RESERVED)
}

/// Kueue's `PodsReady()` (feeds `waitForPodsReady`).
pub fn pods_ready(status: &Status) -> bool {
    status.is_true(PODS_READY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::appwrapper::podsets::PodSet;
    use crate::appwrapper::status::{set_condition, ConditionStatus};
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    fn info(tag: &str) -> PodSetInfo {
        PodSetInfo {
            labels: [("tag".to_string(), tag.to_string())].into(),
            ..Default::default()
        }
    }

    fn cs(n: usize) -> ComponentStatus {
        ComponentStatus {
            pod_sets: (0..n)
                .map(|i| PodSet {
                    replicas: None,
                    path: format!("p{i}"),
                    annotations: Default::default(),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn pod_set_infos_map_by_running_index_across_components() {
        let mut comps = vec![
            Component {
                template: json!({}),
                ..Default::default()
            };
            3
        ];
        let status = vec![cs(2), cs(0), cs(1)];
        set_pod_set_infos(&mut comps, &status, &[info("a"), info("b"), info("c")]).unwrap();
        let tags: Vec<Vec<String>> = comps
            .iter()
            .map(|c| {
                c.pod_set_infos
                    .iter()
                    .map(|i| i.labels["tag"].clone())
                    .collect()
            })
            .collect();
        assert_eq!(
            tags,
            vec![vec!["a".to_string(), "b".into()], vec![], vec!["c".into()]]
        );
        assert_eq!(
            set_pod_set_infos(&mut comps, &status, &[info("a")]),
            Err("expecting 3 podsets, got 1".to_string())
        );
        assert_eq!(
            set_pod_set_infos(
                &mut comps,
                &status,
                &[info("a"), info("b"), info("c"), info("d")]
            ),
            Err("expecting 3 podsets, got 4".to_string())
        );
        assert!(clear_pod_set_infos(&mut comps));
        assert!(comps.iter().all(|c| c.pod_set_infos.is_empty()));
    }

    #[test]
    fn finished_active_ready() {
        let now = Timestamp::UNIX_EPOCH;
        let mut s = Status {
            phase: Phase::Running,
            ..Default::default()
        };
        assert_eq!(finished(&s), ("", false, false));
        set_condition(
            &mut s.conditions,
            QUOTA_RESERVED,
            ConditionStatus::True,
            "r",
            "",
            now,
        );
        set_condition(
            &mut s.conditions,
            RESOURCES_DEPLOYED,
            ConditionStatus::True,
            "r",
            "",
            now,
        );
        set_condition(
            &mut s.conditions,
            PODS_READY,
            ConditionStatus::True,
            "r",
            "",
            now,
        );
        assert!(is_active(&s) && pods_ready(&s));
        s.phase = Phase::Failed;
        assert_eq!(
            finished(&s),
            (
                "Still deleting resources for failed AppWrapper",
                false,
                false
            )
        );
        set_condition(
            &mut s.conditions,
            RESOURCES_DEPLOYED,
            ConditionStatus::False,
            "Failed",
            "",
            now,
        );
        assert_eq!(finished(&s), ("AppWrapper failed", false, true));
        s.phase = Phase::Succeeded;
        assert_eq!(
            finished(&s),
            ("AppWrapper finished successfully", true, true)
        );
    }
}
