//! Adaptive boots (`boots: { min, max, until: verdict }`, docs/statistics.md, Adaptive
//! boots): at a look, whether every comparison across boots is resolved, and how many
//! trials each further boot runs. The runner asks through its `Stopping` trait; the
//! calibration suite asks the same functions.

use crate::analyze::summarize::statistics;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::Snapshot;
use crate::summary::ComparisonStat;
use stats::components::trials_per_boot;
use stats::verdict::VerdictKind;

/// The metrics whose comparisons decide: those the experiment declares, else the wall
/// time (as `until: verdict` watches them).
fn watched(exp: &Experiment) -> Vec<String> {
    let named: Vec<String> = exp.spec.metrics.keys().map(|k| k.value.clone()).collect();
    if named.is_empty() { vec!["wall_time".to_string()] } else { named }
}

/// The comparisons across boots (levels from disjoint boots) of the watched metrics.
fn across_boots<'s>(exp: &Experiment, comparisons: &'s [ComparisonStat]) -> Vec<&'s ComparisonStat> {
    let watched = watched(exp);
    comparisons.iter().filter(|c| c.replication.is_some() && watched.contains(&c.metric)).collect()
}

/// Whether the trials recorded so far settle every comparison across boots: each one's
/// interval (the report's, at 1 − α/K) wholly beyond ±δ or wholly within it. False
/// while there is none (before a level has a boot) or while one is `unreplicated`.
pub(crate) fn settled(exp: &Experiment, plan: &Plan, snapshot: &Snapshot) -> bool {
    let Ok(stats) = statistics(exp, plan, snapshot) else { return false };
    let across = across_boots(exp, &stats.comparisons);
    !across.is_empty()
        && across.iter().all(|c| {
            matches!(
                c.verdict,
                VerdictKind::Significant | VerdictKind::WithinBand | VerdictKind::NoMeaningfulDifference
            )
        })
}

/// The trials each further boot should run in every cell: Cochran's optimum from each
/// comparison's variance components, a boot costing `boot_cost` trials; the most any
/// comparison asks for. `None` while no comparison has components on both sides.
pub(crate) fn further_trials(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
    boot_cost: f64,
) -> Option<u32> {
    let stats = statistics(exp, plan, snapshot).ok()?;
    across_boots(exp, &stats.comparisons)
        .iter()
        .filter_map(|c| {
            let r = c.replication.as_ref()?;
            Some(trials_per_boot(r.baseline_components.as_ref()?, r.level_components.as_ref()?, boot_cost))
        })
        .max()
        .map(|m| m as u32)
}
