//! Cells of two regimes in the summary (docs/statistics.md, Two regimes in a cell): each
//! regime's share, mean and interval; the cell's other metrics where its regimes differ
//! (what may decide the regime); and, for a comparison with such a side, that its means
//! compare mixtures and how the regimes' shares differ between the sides. The test
//! itself is [`stats::regimes`].

use std::sync::Arc;

use super::analysed::Analysed;
use super::comparisons::Arms;
use super::prior::Prior;
use crate::plan::Plan;
use crate::store::Names;
use crate::summary::{
    CellStat, ComparisonStat, MetricMeta, Mixtures, RegimeAfter, RegimeBefore, RegimeBeside, RegimeStat,
    RegimesStat,
};
use stats::regimes::{BEFORE_ALPHA, Before, Regimes, decided_by_before};
use stats::verdict::VerdictKind;

/// Another metric's regimes differ when their means differ by this factor or more, and
/// the ranges of its values in the two regimes do not overlap.
const BESIDE_FACTOR: f64 = 1.25;

/// CPU time below this (seconds) is a few of the kernel's ticks (1–10 ms): `user_time`
/// and `system_time` of a short trial are 0, 1 or 2 ticks, and the clock's granularity
/// alone makes two groups of them.
pub(crate) const CPU_TICKS_BELOW: f64 = 0.05;

/// Whether a cell's two groups would be the kernel's clock, not the benchmark: CPU time
/// (margin's own `user_time`, `system_time`) whose every value is below
/// [`CPU_TICKS_BELOW`]. Such a cell is not tested for two regimes.
pub(crate) fn by_the_clock(metric: &str, values: &[f64]) -> bool {
    matches!(metric, "user_time" | "system_time") && values.iter().all(|&v| v < CPU_TICKS_BELOW)
}

/// Where the regimes part: the geometric mean of the lower regime's largest value and
/// the upper's smallest (their mean when one is not positive).
fn boundary(regimes: &Regimes) -> f64 {
    let [low, high] = &regimes.regimes;
    let (a, b) = (low.summary.max, high.summary.min);
    if a > 0.0 && b > 0.0 { (a * b).sqrt() } else { (a + b) / 2.0 }
}

/// Whether the regimes are `a`'s sessions (boots): two or more, each of whose trials all
/// lie in one regime. What decides the regime is then the session, and a comparison
/// across disjoint sessions already takes their spread for what it is.
pub(crate) fn by_session(a: &Analysed, regimes: &Regimes) -> bool {
    let sessions = &a.group.rows.sessions;
    let upper = &regimes.regimes[1].trials;
    let mut seen: Vec<(crate::store::Name, bool)> = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let high = upper.binary_search(&i).is_ok();
        match seen.iter().find(|(name, _)| name == s) {
            Some(&(_, h)) if h != high => return false,
            Some(_) => {}
            None => seen.push((*s, high)),
        }
    }
    seen.len() >= 2 && sessions.len() == a.all.len()
}

/// The test of what ran just before `a`'s trials against their regimes
/// ([`decided_by_before`]): the kinds of trial before, in the order first met (a cell's
/// name, or none: a session's first trial on its host), and the test's answer; `None`
/// when the trials had fewer than two kinds.
fn tested_before(a: &Analysed, regimes: &Regimes) -> Option<(Vec<Prior>, Before)> {
    let mut kinds: Vec<Prior> = Vec::new();
    let kind: Vec<usize> = a
        .group
        .rows
        .before
        .iter()
        .map(|b| {
            kinds.iter().position(|k| k == b).unwrap_or_else(|| {
                kinds.push(*b);
                kinds.len() - 1
            })
        })
        .collect();
    let mut upper = vec![false; kind.len()];
    for &i in &regimes.regimes[1].trials {
        *upper.get_mut(i)? = true;
    }
    // a seed of the cell and metric: the same answer at every report
    let seed = (a.group.cell as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ a.meta as u64;
    Some((kinds, decided_by_before(&upper, &kind, seed)?))
}

/// What ran before `a`'s trials, against their regimes ([`tested_before`]): each kind of
/// trial before (this cell, another cell by its label, or nothing: a session's first
/// trial on its host) with its trials in each regime, and the test's p-value.
fn before_stat(a: &Analysed, regimes: &Regimes, plan: &Plan, names: &Names) -> Option<RegimeBefore> {
    let (kinds, found) = tested_before(a, regimes)?;
    let own = plan.cells[a.group.cell].id.0;
    let label = |k: &Prior| match k.name(names) {
        None => "nothing (the session's first trial on its host)".to_owned(),
        Some(name) => {
            let id = u64::from_str_radix(names.get(name), 16).ok();
            match id.and_then(|id| plan.cells.iter().find(|c| c.id.0 == id)) {
                Some(c) if c.id.0 == own => "this cell".to_owned(),
                Some(c) => plan.label(c),
                None => format!("cell {} (not in the plan)", names.get(name)),
            }
        }
    };
    let mut after: Vec<RegimeAfter> = kinds
        .iter()
        .zip(&found.counts)
        .map(|(k, &[lower, upper])| RegimeAfter { after: label(k), lower, upper })
        .collect();
    after.sort_by(|x, y| (y.lower + y.upper).cmp(&(x.lower + x.upper)).then_with(|| x.after.cmp(&y.after)));
    Some(RegimeBefore {
        p_value: found.p_value,
        decides: found.p_value <= BEFORE_ALPHA,
        predicted: found.predicted,
        after,
    })
}

/// The published form of `a`'s regimes, with the other metrics of its cell whose
/// regimes differ (`same_cell`: the indices into `analysed` of its cell's metrics) and
/// what ran before its trials.
pub(crate) fn regimes_stat(
    a: &Analysed,
    analysed: &[Analysed],
    same_cell: &[usize],
    metrics: &[MetricMeta],
    plan: &Plan,
    names: &Names,
) -> Option<Box<RegimesStat>> {
    let found = a.analysis.regimes.as_ref()?;
    let finite = |x: f64| x.is_finite().then_some(x);
    let regimes = found
        .regimes
        .iter()
        .map(|r| {
            let interval = r.summary.interval.as_ref();
            RegimeStat {
                trials: r.trials.clone(),
                n: r.trials.len(),
                share: r.share,
                mean: r.summary.mean,
                ci_low: interval.and_then(|i| finite(i.low)),
                ci_high: interval.and_then(|i| finite(i.high)),
                min: r.summary.min,
                max: r.summary.max,
            }
        })
        .collect();
    let beside = same_cell
        .iter()
        .map(|&i| &analysed[i])
        .filter(|o| {
            o.group.cell == a.group.cell && o.meta != a.meta && Arc::ptr_eq(&o.group.rows, &a.group.rows)
        })
        .filter_map(|o| differs_by_regime(found, o.all.values()).map(|means| (o, means)))
        .map(|(o, means)| RegimeBeside {
            metric: metrics[o.meta].name.clone(),
            unit: metrics[o.meta].unit.clone(),
            means: means.to_vec(),
        })
        .collect();
    Some(Box::new(RegimesStat {
        split_ratio: found.ratio,
        critical: found.critical,
        regimes,
        boundary: boundary(found),
        by_session: by_session(a, found),
        beside,
        before: before_stat(a, found, plan, names),
    }))
}

/// Another metric of the same trials (`values`, parallel to the regimes' cell's): its
/// mean in each regime, when they differ ([`BESIDE_FACTOR`], ranges apart).
fn differs_by_regime(regimes: &Regimes, values: &[f64]) -> Option<[f64; 2]> {
    let part = |trials: &[usize]| -> Option<(f64, f64, f64)> {
        let xs: Vec<f64> = trials.iter().map(|&i| values.get(i).copied()).collect::<Option<_>>()?;
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some((mean, min, max))
    };
    let [low, high] = &regimes.regimes;
    let (m0, min0, max0) = part(&low.trials)?;
    let (m1, min1, max1) = part(&high.trials)?;
    let apart = max0 < min1 || max1 < min0;
    let (small, large) = (m0.abs().min(m1.abs()), m0.abs().max(m1.abs()));
    let factor = large >= BESIDE_FACTOR * small && large > 0.0;
    (apart && factor && m0.is_finite() && m1.is_finite()).then_some([m0, m1])
}

/// Marks every comparison with a side of two regimes: its means compare mixtures, and
/// each side's share of trials above the regimes' boundary; an advice to run more trials
/// becomes what would help instead (`comparisons` and `arms` in step).
pub(crate) fn annotate_mixtures(
    comparisons: &mut [ComparisonStat],
    arms: &[Arms],
    analysed: &[Analysed],
    cells: &[CellStat],
) {
    for (c, arm) in comparisons.iter_mut().zip(arms) {
        // regimes that are the sessions of a comparison across disjoint sessions are the
        // spread between sessions, which its verdict and advice are already made of
        let replicated = c.replication.is_some();
        let regimes_of = |cells: &[usize]| {
            cells.iter().find_map(|&i| {
                let a = analysed.get(i)?;
                let r = a.analysis.regimes.as_ref()?;
                (!(replicated && by_session(a, r))).then_some(r)
            })
        };
        let (from, regimes) = match (regimes_of(&arm.baseline), regimes_of(&arm.level)) {
            (Some(r), _) => ("baseline", r),
            (None, Some(r)) => ("level", r),
            (None, None) => continue,
        };
        let cut = boundary(regimes);
        let upper = |cells: &[usize]| {
            let values = cells.iter().filter_map(|&i| analysed.get(i)).flat_map(|a| a.all.values().iter());
            let (above, all) = values.fold((0usize, 0usize), |(a, n), &v| (a + usize::from(v > cut), n + 1));
            if all == 0 { 0.0 } else { above as f64 / all as f64 }
        };
        let (base, level) = (upper(&arm.baseline), upper(&arm.level));
        let mixtures = Mixtures {
            from: from.to_owned(),
            boundary: cut,
            baseline_upper_share: base,
            level_upper_share: level,
            share_difference: level - base,
        };
        c.sentence = mixture_sentence(c, &mixtures, by_trial_before(cells, &arm.baseline, &arm.level));
        c.more_trials = None;
        c.mixtures = Some(Box::new(mixtures));
    }
}

/// Whether what ran just before decides the regimes of a side of two regimes: a cell of
/// `baseline` or `level` whose published regimes say so (`cells`, parallel to the
/// analysed cells: the test [`before_stat`] ran, read rather than run again).
fn by_trial_before(cells: &[CellStat], baseline: &[usize], level: &[usize]) -> bool {
    baseline.iter().chain(level).filter_map(|&i| cells.get(i)).any(CellStat::decided_by_trial_before)
}

/// The verdict's sentence said of mixtures: the advice to run more trials cut off (more
/// trials settle the mixture's mean, not which regime a trial lands in), and what the
/// means compare added, with the regimes' shares on each side; `before`: the trial before
/// decides a side's regimes.
fn mixture_sentence(c: &ComparisonStat, m: &Mixtures, before: bool) -> String {
    let mut sentence = c.sentence.clone();
    if matches!(c.verdict, VerdictKind::Inconclusive | VerdictKind::UncertainSize) {
        let cuts = ["; about ", "; the difference lies close to", "; it would take more trials"];
        if let Some(at) = cuts.iter().filter_map(|cut| sentence.find(cut)).min() {
            sentence.truncate(at);
        }
    }
    let whose = if m.from == "baseline" { &c.baseline } else { &c.level };
    let pct = |x: f64| format!("{:.0} %", x * 100.0);
    let points = (m.share_difference * 100.0).round();
    let difference = if points == 0.0 { "the same share".to_owned() } else { format!("{points:+} points") };
    let decides = if before {
        "the trial that ran just before on the host decides it (the cell's regimes, in its section): \
         hold that fixed, e.g. with a `prepare` that starts every trial from the same state"
    } else {
        "find that (the cell's regimes, in its section) and hold it fixed"
    };
    sentence.push_str(&format!(
        "; the means compare mixtures: {whose} is two regimes, and {} of {}'s trials against {} of {}'s lie \
         in the upper one ({difference}); more trials will not settle what decides a trial's regime: {decides}",
        pct(m.baseline_upper_share),
        c.baseline,
        pct(m.level_upper_share),
        c.level,
    ));
    sentence
}

#[cfg(test)]
mod tests {
    use super::*;
    use stats::StatsSettings;
    use stats::observations::Observations;
    use stats::regimes::find_regimes;
    use vocab::MeanKind;

    fn regimes(values: &[f64]) -> Regimes {
        let sample = Observations::new(values, MeanKind::Arithmetic).unwrap();
        find_regimes(&sample, &StatsSettings::default()).unwrap().expect("two regimes")
    }

    #[test]
    fn the_boundary_lies_between_the_regimes() {
        let r = regimes(&[10.0, 10.2, 50.0, 9.9, 51.0, 10.1, 49.5, 10.0, 10.3, 50.2]);
        let b = boundary(&r);
        assert!((b - (10.3f64 * 49.5).sqrt()).abs() < 1e-9, "{b}");
    }

    #[test]
    fn a_metric_beside_differs_by_regime_only_when_apart_and_far() {
        let r = regimes(&[10.0, 10.2, 50.0, 9.9, 51.0, 10.1, 49.5, 10.0, 10.3, 50.2]);
        // disk bytes written: many in the fast trials, few in the slow ones
        let written = [1.0, 1.1, 9.0, 1.2, 9.5, 0.9, 8.8, 1.0, 1.1, 9.1];
        assert_eq!(differs_by_regime(&r, &written).map(|m| m[1] > m[0]), Some(true));
        // the same everywhere, or overlapping ranges: nothing to show
        assert_eq!(differs_by_regime(&r, &[5.0; 10]), None);
        let mixed = [1.0, 9.0, 9.0, 1.2, 1.0, 0.9, 8.8, 1.0, 1.1, 9.1];
        assert_eq!(differs_by_regime(&r, &mixed), None);
        // a shorter list (another metric missing a trial) says nothing rather than panic
        assert_eq!(differs_by_regime(&r, &written[..5]), None);
    }
}
