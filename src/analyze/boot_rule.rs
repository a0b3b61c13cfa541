//! Adaptive boots (`boots: { min, max, until: verdict }`, docs/statistics.md, Adaptive
//! boots): at a look, whether every comparison across boots is resolved, or more boots
//! cannot resolve it (futility), and how many trials each further boot runs. The runner asks through its `Stopping` trait; the
//! calibration suite asks the same functions.

use crate::analyze::summarize::statistics;
use crate::plan::Plan;
use crate::plan::boots::combinations;
use crate::run::BootLook;
use crate::spec::Boots;
use crate::spec::Experiment;
use crate::store::Snapshot;
use crate::summary::{BootsStopped, ComparisonStat, Summary};
use stats::components::{MAX_BOOTS, MAX_TRIALS_PER_BOOT, trials_per_boot};
use stats::dist::t_quantile;
use stats::verdict::VerdictKind;

/// The metrics whose comparisons decide: those the experiment declares, else the wall
/// time (as `until: verdict` watches them).
fn watched(exp: &Experiment) -> Vec<String> {
    let named: Vec<String> = exp.spec.metrics.keys().map(|k| k.value.clone()).collect();
    if named.is_empty() { vec!["wall_time".to_string()] } else { named }
}

/// The comparisons across boots (levels from disjoint boots) of the watched metrics.
pub(crate) fn across_boots<'s>(
    exp: &Experiment,
    comparisons: &'s [ComparisonStat],
) -> Vec<&'s ComparisonStat> {
    let watched = watched(exp);
    comparisons.iter().filter(|c| c.replication.is_some() && watched.contains(&c.metric)).collect()
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

/// How many times `max` the boots a look finds needed must exceed before it stops for
/// futility (docs/statistics.md, Adaptive boots: calibrated with `margin calibrate
/// --scenario boots`).
pub(crate) const FUTILITY_FACTOR: f64 = 2.0;

/// The look at the trials recorded so far, the host's boots going up to `max` blocks;
/// `futility`: the factor a look stops at when the boots needed exceed `max` by it
/// ([`FUTILITY_FACTOR`]; `None`: no stop for futility).
pub(crate) fn look(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
    max: u32,
    futility: Option<f64>,
) -> BootLook {
    let Ok(stats) = statistics(exp, plan, snapshot) else { return BootLook::Open };
    let (threshold, confidence) = (stats.settings.threshold, stats.settings.confidence);
    judge(exp, &stats.comparisons, (threshold, confidence), max, futility)
}

/// [`look`] on comparisons already made, at (threshold δ, the intervals' confidence).
pub(crate) fn judge(
    exp: &Experiment,
    comparisons: &[ComparisonStat],
    (threshold, confidence): (f64, f64),
    max: u32,
    futility: Option<f64>,
) -> BootLook {
    let across = across_boots(exp, comparisons);
    if across.is_empty() {
        return BootLook::Open;
    }
    let open: Vec<&&ComparisonStat> = across.iter().filter(|c| !resolved(c.verdict)).collect();
    if open.is_empty() {
        return BootLook::Settled;
    }
    let Some(factor) = futility else { return BootLook::Open };
    let mut fewest: Option<Option<usize>> = None;
    for c in open {
        // unmeasured components (a side of one boot, or of one trial a boot): boot on
        let Some(needed) = boots_needed(c, threshold, confidence) else { return BootLook::Open };
        if needed.is_some_and(|b| b as f64 <= factor * f64::from(max)) {
            return BootLook::Open;
        }
        fewest = Some(match (fewest.flatten(), needed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        });
    }
    BootLook::Futile { needed: fewest.flatten() }
}

/// Whether a verdict resolves a comparison across boots.
fn resolved(verdict: VerdictKind) -> bool {
    matches!(
        verdict,
        VerdictKind::Significant | VerdictKind::WithinBand | VerdictKind::NoMeaningfulDifference
    )
}

/// The boots of each level a comparison across boots would need to be resolved, if its
/// variance components are as measured, even with [`MAX_TRIALS_PER_BOOT`] trials a
/// boot: the fewest b whose expected interval (Welch's half-width t_ν·√((V_A + V_B)/b),
/// V = σ²_b + σ²_w/m, Satterthwaite's ν, at the intervals' confidence) is as narrow as
/// the distance from the measured change to the nearer edge of ±δ, or as ±δ, whichever
/// is wider. No interval wider than ±δ settles a change measured within 2δ, so this
/// errs towards booting on: the measured change is not taken at its word where it sits
/// near an edge. `Some(None)`: more than [`MAX_BOOTS`]; `None`: components unmeasured.
pub(crate) fn boots_needed(c: &ComparisonStat, threshold: f64, confidence: f64) -> Option<Option<usize>> {
    let r = c.replication.as_ref()?;
    let (a, b) = (r.baseline_components.as_ref()?, r.level_components.as_ref()?);
    let change = if c.ratio.is_finite() { (c.ratio - 1.0).abs() } else { 0.0 };
    let target = (threshold - change).abs().max(threshold);
    let m = MAX_TRIALS_PER_BOOT as f64;
    let (va, vb) =
        (a.between_cv.powi(2) + a.within_cv.powi(2) / m, b.between_cv.powi(2) + b.within_cv.powi(2) / m);
    if va + vb == 0.0 {
        return Some(Some(2));
    }
    let q = 1.0 - (1.0 - confidence) / 2.0;
    let share = (va + vb).powi(2) / (va * va + vb * vb);
    Some((2..=MAX_BOOTS).find(|&boots| {
        let nu = share * (boots as f64 - 1.0);
        t_quantile(q, nu).is_some_and(|t| t * ((va + vb) / boots as f64).sqrt() <= target)
    }))
}

/// The hosts whose adaptive boots stopped for futility, as the report finds them: their
/// verified boots make whole blocks, a look short of `max`, and the comparisons of the
/// summary (every trial recorded, what that look analysed) show futility there.
pub(crate) fn stopped(exp: &Experiment, plan: &Plan, summary: &Summary) -> Vec<BootsStopped> {
    let settings = (summary.settings.threshold_pct / 100.0, summary.settings.interval_confidence);
    let mut out = Vec::new();
    for (host, entry) in &exp.spec.hosts {
        let Some(recipe) = entry.value.boot.as_ref() else { continue };
        let Boots::UntilVerdict { max, .. } = recipe.value.count() else { continue };
        let looks = recipe.value.count().looks();
        let block = combinations(exp, plan, &host.value).len().max(1);
        let mut verified: Vec<u32> = summary
            .boots
            .iter()
            .filter(|b| b.host == host.value && b.outcome == "verified")
            .map(|b| b.boot)
            .collect();
        verified.dedup();
        if verified.is_empty() || !verified.len().is_multiple_of(block) {
            continue;
        }
        let blocks = (verified.len() / block) as u32;
        let Some(at) = looks.iter().position(|&l| l == blocks).filter(|_| blocks < max) else { continue };
        let factor = Some(FUTILITY_FACTOR);
        if let BootLook::Futile { needed } = judge(exp, &summary.comparisons, settings, max, factor) {
            let host = host.value.clone();
            out.push(BootsStopped { host, blocks, look: at + 1, looks: looks.len(), max, needed });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::MemoryStore;
    use crate::summary::Replication;
    use stats::components::Components;

    /// A comparison across boots of `ratio`, each side's components (between-boot CV,
    /// within-boot CV), or `None` for a side without them.
    fn across(ratio: f64, sides: Option<((f64, f64), (f64, f64))>) -> ComparisonStat {
        let s = MemoryStore::two_levels_summary();
        let mut c = s.comparisons[0].clone();
        c.ratio = ratio;
        let side = |(between_cv, within_cv)| Components { units: 3, trials: 9, within_cv, between_cv };
        c.replication = Some(Box::new(Replication {
            unit: "boot",
            baseline_units: 3,
            level_units: 3,
            baseline_trials: 9,
            level_trials: 9,
            trials_per_unit: (3, 3),
            baseline_components: sides.map(|(a, _)| side(a)),
            level_components: sides.map(|(_, b)| side(b)),
            advice: None,
        }));
        c
    }

    #[test]
    fn boots_needed_are_the_fewest_whose_expected_welch_interval_fits_the_band() {
        // V = 0.05² on each side: t(0.975, 2(b − 1)) · √(0.005 / b) ≤ 0.05 ⇔ b ≥ 2 t²;
        // b = 8: t(14) = 2.1448, 2t² = 9.20 > 8; b = 9: t(16) = 2.1199, 2t² = 8.99 ≤ 9
        let boots = ((0.05, 0.0), (0.05, 0.0));
        assert_eq!(boots_needed(&across(1.0, Some(boots)), 0.05, 0.95), Some(Some(9)));
        // the same V from the trials alone, at 30 trials a boot: σ²_w / 30 = 0.05²
        let trials = ((0.0, 0.05 * 30f64.sqrt()), (0.0, 0.05 * 30f64.sqrt()));
        assert_eq!(boots_needed(&across(1.0, Some(trials)), 0.05, 0.95), Some(Some(9)));
        // a change of +12 % sits 7 % from the band's edge: b ≥ t² · 0.005 / 0.07²;
        // b = 5: t(8) = 2.3060, 5.43 > 5; b = 6: t(10) = 2.2281, 5.07 ≤ 6
        assert_eq!(boots_needed(&across(1.12, Some(boots)), 0.05, 0.95), Some(Some(6)));
        // a change of +4 % is held to ±δ itself, not to the 1 % left to the edge
        assert_eq!(boots_needed(&across(1.04, Some(boots)), 0.05, 0.95), Some(Some(9)));
        // boots that never vary: the fewest there can be
        let quiet = ((0.0, 0.0), (0.0, 0.0));
        assert_eq!(boots_needed(&across(1.0, Some(quiet)), 0.05, 0.95), Some(Some(2)));
        // boots ±60 % apart: more than MAX_BOOTS
        let wild = ((0.6, 0.1), (0.6, 0.1));
        assert_eq!(boots_needed(&across(1.0, Some(wild)), 0.05, 0.95), Some(None));
        // no components yet (a side of one boot): unknown
        assert_eq!(boots_needed(&across(1.0, None), 0.05, 0.95), None);
    }
}
