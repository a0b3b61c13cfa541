//! One cell × metric of the table analysed: its values as observations, all and kept,
//! their statistics, and the published row of summary.json they make.

use super::table::Group;
use crate::plan::Plan;
use crate::summary::{CellStat, MetricMeta};
use stats::cell::CellAnalysis;
use stats::observations::Observations;
use stats::runs::RunsNeeded;

/// One analysed cell × metric, with what the comparisons and lints need besides the
/// published statistics.
pub(crate) struct Analysed {
    pub group: Group,
    pub meta: usize,
    pub all: Observations,
    pub kept: Observations,
    /// Without the flagged values the rule would set aside, when they were kept.
    pub trimmed: Option<Observations>,
    pub analysis: CellAnalysis,
}

pub(crate) fn cell_stat(plan: &Plan, meta: &MetricMeta, a: &Analysed) -> CellStat {
    let cell = &plan.cells[a.group.cell];
    let s = &a.analysis.summary;
    let interval = s.interval.as_ref();
    let finite = |x: f64| x.is_finite().then_some(x);
    let values = a.all.values();
    // a quantity that is never negative (a time, a size, a rate, a share): its interval
    // is cut at 0, the mean's own bound, which only raises its coverage — CPU time of
    // trials shorter than the kernel's tick reads 0 in most trials, and a symmetric
    // interval of such a cell reached below 0 (issue 39)
    let floor = (vocab::never_negative(&meta.unit) && values.iter().all(|&v| v >= 0.0)).then_some(0.0);
    let cut = |low: f64| floor.map_or(low, |f: f64| low.max(f));
    let flagged = a.analysis.outliers.flagged.iter().filter(|i| !a.analysis.outliers.set_aside.contains(i));
    let (runs_needed, runs_needed_exceeds) = match s.runs_needed {
        Some(RunsNeeded::Runs(n)) => (Some(n), None),
        Some(RunsNeeded::MoreThan(n)) => (None, Some(n)),
        None => (None, None),
    };
    CellStat {
        cell: cell.id.to_string(),
        label: plan.label(cell),
        levels: plan.levels(cell).map(|(k, v)| (k.to_owned(), v.text.clone())).collect(),
        metric: meta.name.clone(),
        unit: meta.unit.clone(),
        mean_kind: s.mean_kind,
        n: s.n,
        mean: s.mean,
        sd: s.sd,
        cv: s.cv,
        median: s.median,
        min: s.min,
        max: s.max,
        mad: s.mad,
        ci_low: interval.and_then(|i| finite(i.low)).map(cut),
        ci_high: interval.and_then(|i| finite(i.high)),
        moe: interval.map(|i| i.moe),
        moe_pct: interval.and_then(|i| i.moe_rel).map(|r| r * 100.0),
        very_wide: interval.is_some_and(|i| i.very_wide),
        median_ci_low: s.median_interval.map(|m| cut(m.low)),
        median_ci_high: s.median_interval.map(|m| m.high),
        set_aside: a.analysis.set_aside.clone(),
        flagged: flagged.map(|&i| values[i]).collect(),
        runs_needed,
        runs_needed_exceeds,
        flags: a.analysis.flags.clone(),
        values: a.all.shared_values(),
        sessions: distinct(&a.group.rows.sessions),
        // filled by the caller, who has the cell's other metrics
        regimes: None,
    }
}

/// How many different names `names` holds: sorted and counted rather than hashed (a cell's
/// few sessions, for every cell of a large report).
fn distinct(names: &[crate::store::Name]) -> usize {
    let mut names = names.to_vec();
    names.sort_unstable();
    names.dedup();
    names.len()
}
