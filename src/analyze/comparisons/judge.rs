//! A comparison's sides, whatever their design, judged: the method (the robust one falls
//! back to the parametric across disjoint boots), the comparison of the trials kept and
//! of all trials, the verdict and whether the outliers would change it, the row of
//! summary.json.

use super::{Arms, Job, Sides};
use crate::summary::{Arm, ComparisonStat, Median, MetricMeta};
use stats::compare::{Comparison, RatioInterval, compare_unit_logs};
use stats::elementary::{mean, median_of_sorted, sorted};
use stats::interval::{mean_interval, median_interval};
use stats::observations::Observations;
use stats::robust::compare_design;
use stats::units::UnitLogs;
use stats::verdict::{Replicate, VerdictKind, Vocabulary, Wording, unreplicated, verdict_per};
use stats::{StatsError, StatsSettings};
use vocab::Method;

/// The row of `job`, compared on `sides` by the metric's method, with its verdict, and
/// the cells behind each side.
pub(super) fn judge(
    job: Job,
    meta: &MetricMeta,
    settings: &StatsSettings,
    sides: Sides<'_>,
) -> Result<(ComparisonStat, Arms), String> {
    let fail = |e: StatsError| format!("{}: {e}", job.what(&meta.name));
    let kind = meta.mean_kind;
    // the metric's own method (`method:` of the metric, else `analysis.method`)
    let own = StatsSettings { method: meta.method, ..settings.clone() };
    let settings = &own;
    let Sides { kept: [a_kept, b_kept], all: [a_all, b_all], pairs, mut replication, single, unit_logs } =
        sides;
    // The robust method compares trials by their ranks, every value (no outlier rule);
    // across disjoint boots the boots' means are the observations, too few for ranks, so
    // there it falls back to the parametric method and says so.
    let positive = |o: &Observations| o.values().iter().all(|v| *v > 0.0);
    let falls_back = match settings.method {
        Method::Robust if replication.is_some() => Some(format!(
            "the robust method ranks trials, and these levels were measured in disjoint {unit}s: their \
             {unit}s' means are compared by the parametric method",
            unit = replication.as_ref().map_or("boot", |r| r.unit)
        )),
        Method::Robust if !positive(&a_all) || !positive(&b_all) => Some(
            "the robust method ranks the logarithms of the values, and a value here is 0 or below: \
             compared by the parametric method"
                .to_owned(),
        ),
        _ => None,
    };
    let parametric = StatsSettings { method: Method::Parametric, ..settings.clone() };
    let settings = if falls_back.is_some() { &parametric } else { settings };
    let robust = settings.method == Method::Robust;
    let (a_kept, b_kept) = if robust { (a_all.clone(), b_all.clone()) } else { (a_kept, b_kept) };
    let compare = |a: &Observations, b: &Observations, logs: Option<&[UnitLogs; 2]>| match logs {
        Some([la, lb]) => {
            let centre = |o: &Observations| kind.transform(mean(o.analysed()));
            compare_unit_logs(&la.means, &lb.means, kind, (centre(a), centre(b)), settings)
        }
        None => compare_design(job.paired_by.is_some(), a, b, settings),
    };
    let comparison = compare(&a_kept, &b_kept, unit_logs.as_ref().map(|(kept, _)| kept)).map_err(fail)?;
    let vocabulary = match meta.unit.as_str() {
        "s" | "B/s" | "bit/s" | "op/s" => Vocabulary::Speed,
        _ => Vocabulary::Quality,
    };
    let wording =
        Wording { baseline: &job.baseline, level: &job.level, better: Some(meta.better), vocabulary };
    let replicate = match &replication {
        Some(r) => Replicate::Unit {
            unit: r.unit,
            trials: r.trials_per_unit.1.max(1),
            components: r.baseline_components.zip(r.level_components),
            units: r.baseline_units.min(r.level_units),
        },
        None => Replicate::Trial,
    };
    let judge = |c: &Comparison| match &replication {
        Some(r) if r.baseline_units < 2 || r.level_units < 2 => {
            unreplicated(c, settings, &wording, r.unit, (r.baseline_units, r.level_units))
        }
        _ => verdict_per(c, settings, &wording, replicate),
    };
    let judged = judge(&comparison);
    // Every value compared, the outliers set aside on either side kept in: for the
    // verdict with them, and for a single trial's prediction interval, made from every
    // value of the other side (docs/statistics.md, A single number)
    let set_aside = a_kept != a_all || b_kept != b_all;
    let all = if set_aside {
        compare(&a_all, &b_all, unit_logs.as_ref().map(|(_, all)| all)).map_err(fail)?
    } else {
        comparison.clone()
    };
    // Outliers were set aside on either side: would keeping them change the verdict?
    let verdict_with_outliers = set_aside.then(|| judge(&all).kind).filter(|k| *k != judged.kind);
    // Flagged values stayed in: would setting them aside change the verdict? (Trial by
    // trial only: a boot's mean is not one value to set aside.)
    let verdict_without_outliers = match (single, &replication) {
        (Some((a, b)), None) if !robust && (a.trimmed.is_some() || b.trimmed.is_some()) => {
            let a = a.trimmed.as_ref().unwrap_or(&a.kept);
            let b = b.trimmed.as_ref().unwrap_or(&b.kept);
            let without = compare(a, b, None).map_err(fail)?;
            Some(judge(&without).kind).filter(|k| *k != judged.kind)
        }
        _ => None,
    };
    if let Some(r) = &mut replication {
        r.advice = judged.advice;
    }
    let mut judged = judged;
    if let Some(why) = &falls_back {
        judged.sentence.push_str(&format!(" ({why})"));
    }
    let arms = Arms {
        baseline: job.base.iter().map(|(_, i)| *i).collect(),
        level: job.other.iter().map(|(_, i)| *i).collect(),
        entry: job.entry,
    };
    let unreplicated = judged.kind == VerdictKind::Unreplicated;
    let (ci_low, ci_high) = match comparison.interval {
        // unreplicated: the interval within the boots is no interval of the levels' ratio
        // (it leaves out how boots differ); the sentence gives it for what it is
        _ if unreplicated => (None, None),
        RatioInterval::Bounded { low, high } => (Some(low), Some(high)),
        RatioInterval::NoEstimate | RatioInterval::Unbounded | RatioInterval::TooFew { .. } => (None, None),
    };
    let mut stat = ComparisonStat {
        factor: job.factor,
        baseline: job.baseline,
        level: job.level,
        context: job.context,
        metric: meta.name.clone(),
        unit: meta.unit.clone(),
        design: comparison.design,
        paired_by: job.paired_by,
        pairs,
        baseline_arm: arm(&a_kept, settings),
        level_arm: arm(&b_kept, settings),
        ratio: comparison.ratio,
        change_pct: (comparison.ratio - 1.0) * 100.0,
        ci_low,
        ci_high,
        // nor are the test and the detectable effect of the trials within the boots
        p_value: comparison.p_value.filter(|_| !unreplicated),
        p_adjusted: None,
        mde_pct: comparison.mde.map(|m| m * 100.0).filter(|_| !unreplicated),
        verdict: judged.kind,
        sentence: judged.sentence,
        more_trials: judged.more_trials,
        verdict_with_outliers,
        verdict_without_outliers,
        replication: replication.map(Box::new),
        mixtures: None,
        prediction: None,
        log_ratio: None,
        log_ratio_all: None,
        method: comparison.method,
        coverage_pct: comparison.coverage.map(|c| c * 100.0),
    };
    super::super::answers::annotate(
        &mut stat,
        (&comparison, &all),
        (&a_all, &b_all),
        meta,
        settings,
        single.is_some(),
    );
    Ok((stat, arms))
}

fn arm(sample: &Observations, settings: &StatsSettings) -> Arm {
    let median = (settings.method == Method::Robust).then(|| {
        // order statistics are the same on either scale: those of the values themselves
        let values = sorted(sample.values());
        let interval = median_interval(&values, settings.confidence);
        Median {
            value: median_of_sorted(&values),
            ci_low: interval.map(|i| i.low),
            ci_high: interval.map(|i| i.high),
        }
    });
    let centre = mean(sample.analysed());
    let interval = mean_interval(sample, settings.confidence);
    let finite = |x: f64| x.is_finite().then_some(x);
    Arm {
        n: sample.len(),
        mean: sample.kind().transform(centre),
        moe: interval.map(|i| i.moe),
        moe_pct: interval.and_then(|i| i.moe_rel).map(|r| r * 100.0),
        ci_low: interval.and_then(|i| finite(i.low)),
        ci_high: interval.and_then(|i| finite(i.high)),
        median,
    }
}
