//! Where the sides of a comparison differ in their secondary metrics, and which
//! comparisons rest on trials the tool said had not converged.

use std::collections::{HashMap, HashSet};

use super::super::analysed::Analysed;
use super::super::comparisons::Arms;
use crate::summary::{
    ComparisonKey, ComparisonNotConverged, ComparisonStat, SecondaryStat, TelemetryDifference,
    TelemetrySummary,
};

/// Two sides differ in a percentage only by at least this many points.
pub(super) const PCT_POINTS: f64 = 1.0;

/// Whether two sides differ in a secondary metric: their ranges over the trials do not
/// overlap, the means differ by more than the analysis threshold of the larger, and a
/// percentage by at least [`PCT_POINTS`] points. An explicit, descriptive rule, not a
/// test: these numbers enter no verdict.
pub(super) fn differ(a: &SecondaryStat, b: &SecondaryStat, unit: &str, threshold: f64) -> bool {
    let apart = a.max < b.min || b.max < a.min;
    let larger = a.mean.abs().max(b.mean.abs());
    let gap = (a.mean - b.mean).abs();
    apart && gap > threshold * larger && (unit != "%" || gap >= PCT_POINTS)
}

/// A comparison's sides whatever its metric: factor, baseline, level, the other levels.
type SidesKey<'a> = (&'a str, &'a str, &'a str, Vec<(&'a str, &'a str)>);

/// Where the sides of each comparison differ, and which comparisons rest on trials the
/// tool said had not converged.
pub(super) fn sides(
    summary: &mut TelemetrySummary,
    analysed: &[Analysed],
    comparisons: &[ComparisonStat],
    arms: &[Arms],
    index: &HashMap<usize, usize>,
    threshold: f64,
) {
    let cells_of = |side: &[usize]| -> Vec<usize> {
        let mut v: Vec<usize> =
            side.iter().filter_map(|&a| index.get(&analysed[a].group.cell).copied()).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    // the comparisons of one pair of sides (one a metric) are looked at once; a set, as
    // a list searched for each was quadratic (minutes at 10⁴ cells)
    let mut seen: HashSet<SidesKey<'_>> = HashSet::new();
    for (c, arm) in comparisons.iter().zip(arms) {
        let (base, level) = (cells_of(&arm.baseline), cells_of(&arm.level));
        let flagged: usize = base.iter().chain(&level).map(|&i| summary.cells[i].not_converged).sum();
        if flagged > 0 {
            summary.not_converged.push(ComparisonNotConverged { of: ComparisonKey::of(c), trials: flagged });
        }
        let key = (
            c.factor.as_str(),
            c.baseline.as_str(),
            c.level.as_str(),
            c.context.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
        );
        if base.is_empty() || level.is_empty() || !seen.insert(key) {
            continue;
        }
        for column in summary.columns.clone() {
            let pooled = |cells: &[usize]| -> Option<SecondaryStat> {
                let stats: Vec<&SecondaryStat> =
                    cells.iter().filter_map(|&i| summary.cells[i].values.get(&column.name)).collect();
                let n: usize = stats.iter().map(|s| s.n).sum();
                (n > 0).then(|| SecondaryStat {
                    n,
                    mean: stats.iter().map(|s| s.mean * s.n as f64).sum::<f64>() / n as f64,
                    min: stats.iter().map(|s| s.min).fold(f64::INFINITY, f64::min),
                    max: stats.iter().map(|s| s.max).fold(f64::NEG_INFINITY, f64::max),
                    differs: false,
                })
            };
            let (Some(b), Some(l)) = (pooled(&base), pooled(&level)) else { continue };
            if !differ(&b, &l, &column.unit, threshold) {
                continue;
            }
            for &i in base.iter().chain(&level) {
                if let Some(s) = summary.cells[i].values.get_mut(&column.name) {
                    s.differs = true;
                }
            }
            summary.differences.push(TelemetryDifference {
                of: ComparisonKey { metric: column.name.clone(), ..ComparisonKey::of(c) },
                unit: column.unit.clone(),
                baseline_mean: b.mean,
                level_mean: l.mean,
            });
        }
    }
}
