//! Per-cell statistics (STATISTICS §1): summary, margin of error, runs needed, median
//! interval and the stability warnings.

use serde::Serialize;

use super::dist;
use super::outliers::{self, Outliers};
use super::{MeanKind, Sample, Settings, StatsError};

/// A CV at or above this is flagged as unstable (STATISTICS §1).
pub const HIGH_CV: f64 = 0.10;
/// A min or max this far from the mean, relatively, is flagged.
pub const FAR_FROM_MEAN: f64 = 0.50;
/// Modified z-score above which the first trial counts as a robust outlier. Fixed at the
/// Iglewicz–Hoaglin value whatever outlier rule is configured: it is a warning about
/// warm-up, not a decision about which trials to keep.
pub const FIRST_TRIAL_Z: f64 = 3.5;
/// The trend test needs this many trials (STATISTICS §1).
pub const TREND_MIN_N: usize = 6;
/// The distribution-free median interval is given from this many trials (STATISTICS §1).
pub const MEDIAN_CI_MIN_N: usize = 6;
/// "Runs needed" searches no further than this; beyond it the answer is "more than".
pub const MAX_RUNS: usize = 1_000_000;

/// Everything the report tables show for one cell and metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellSummary {
    pub mean_kind: MeanKind,
    pub n: usize,
    /// Arithmetic or harmonic mean, as `mean_kind` says.
    pub mean: f64,
    /// Standard deviation (n − 1). For a harmonic mean it is CV × mean: the spread of
    /// the reciprocals carried back to the metric's scale (delta method), so that
    /// sd / mean = cv holds on every row. `None` for a single trial.
    pub sd: Option<f64>,
    /// sd / mean on the analysis scale; `None` for a single trial or a mean ≤ 0.
    pub cv: Option<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Median absolute deviation from the median, unscaled, in the metric's unit.
    pub mad: f64,
    /// Confidence interval of the mean; `None` for a single trial: no error estimate.
    pub interval: Option<MeanInterval>,
    /// Distribution-free interval of the median, from n = 6.
    pub median_interval: Option<MedianInterval>,
    /// Trials needed for the target margin, from this cell's CV.
    pub runs_needed: Option<RunsNeeded>,
}

/// The t-interval of a mean: mean ± t(1 − α/2, n − 1)·sd/√n on the analysis scale.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeanInterval {
    pub low: f64,
    /// +∞ (null in JSON) when a harmonic mean's reciprocal interval reaches zero.
    pub high: f64,
    /// Margin of error in the metric's unit: h itself for an arithmetic mean. A harmonic
    /// mean's interval is not symmetric; its `moe` is `moe_rel` × mean.
    pub moe: f64,
    /// h / mean on the analysis scale (the ±% of the report), or `None` for a mean ≤ 0.
    pub moe_rel: Option<f64>,
    pub df: f64,
    /// n = 2: t(0.975, 1) = 12.7 makes the interval very wide, and the report says so.
    pub very_wide: bool,
}

/// [x(k), x(n−k+1)], the distribution-free confidence interval of the median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianInterval {
    pub low: f64,
    pub high: f64,
    /// The 1-based rank k of the lower bound.
    pub rank: usize,
    /// The coverage the order statistics achieve, at least the confidence asked for.
    pub coverage: f64,
}

/// The smallest number of trials reaching a relative margin of error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunsNeeded {
    Runs(usize),
    /// Beyond [`MAX_RUNS`]: a different benchmark is needed, not more runs.
    MoreThan(usize),
}

/// Spearman's rank correlation of the values with their trial order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Trend {
    pub rho: f64,
    /// Two-sided, from the t approximation with n − 2 df (as scipy's `spearmanr`).
    pub p_value: f64,
}

/// A warning about how a cell was measured; never part of a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StabilityFlag {
    /// CV at or above [`HIGH_CV`].
    HighVariation { cv: f64 },
    /// The min or max is [`FAR_FROM_MEAN`] or more away from the mean.
    FarFromMean { value: f64, distance: f64 },
    /// The first trial is a robust outlier: a cold cache or a warm-up effect.
    FirstTrialOutlier { value: f64, modified_z: f64 },
    /// The values drift with the trial order.
    Trend(Trend),
}

/// One cell analysed the way the report needs it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellAnalysis {
    /// Statistics of the trials kept, after setting outliers aside.
    pub summary: CellSummary,
    pub outliers: Outliers,
    /// The flagged trials the rule would leave out (from 5 trials, at most a fifth), by
    /// index: set aside when the settings say so, else kept, and the verdict without
    /// them is given beside the verdict.
    pub candidates: Vec<usize>,
    /// The values set aside, in trial order (`set_aside` of summary.json).
    pub set_aside: Vec<f64>,
    /// Warnings about all trials, in the order they ran.
    pub flags: Vec<StabilityFlag>,
}

/// Finds the outliers by the configured rule, summarises the trials kept, and flags
/// instabilities over all trials (a set-aside slow first run is still worth a warning).
pub fn analyze_cell(sample: &Sample, settings: &Settings) -> Result<CellAnalysis, StatsError> {
    settings.validate()?;
    let mut outliers = outliers::find_outliers(sample, &settings.outliers);
    let candidates = outliers.set_aside.clone();
    if !settings.set_aside {
        outliers.set_aside.clear();
    }
    let kept = sample.without(&outliers.set_aside)?;
    Ok(CellAnalysis {
        summary: summarize(&kept, settings)?,
        set_aside: outliers.set_aside.iter().map(|&i| sample.values()[i]).collect(),
        flags: stability_flags(sample, settings)?,
        outliers,
        candidates,
    })
}

/// The statistics of STATISTICS §1 for all trials of `sample`.
pub fn summarize(sample: &Sample, settings: &Settings) -> Result<CellSummary, StatsError> {
    settings.validate()?;
    let kind = sample.kind();
    let n = sample.len();
    let analysed = sample.analysed();
    let centre = mean(analysed);
    let mean = kind.transform(centre);
    let spread = (n >= 2).then(|| variance(analysed).sqrt());
    let cv = spread.filter(|_| centre > 0.0).map(|sd| sd / centre);
    let sd = spread.map(|sd| match kind {
        MeanKind::Arithmetic => sd,
        // Harmonic: centre = 1/mean > 0, so this is cv × mean.
        MeanKind::Harmonic => sd / centre * mean,
    });
    let sorted = sorted(sample.values());
    Ok(CellSummary {
        mean_kind: kind,
        n,
        mean,
        sd,
        cv,
        median: median_of_sorted(&sorted),
        min: sorted[0],
        max: sorted[n - 1],
        mad: mad(sample.values()),
        interval: mean_interval(sample, settings.confidence),
        median_interval: median_interval(&sorted, settings.confidence),
        runs_needed: cv.and_then(|cv| runs_needed(cv, settings.target_margin, settings.confidence)),
    })
}

/// Half-width h = t(1 − α/2, n − 1)·sd/√n of the t-interval of a mean; `None` for n < 2
/// or invalid arguments.
pub fn t_half_width(sd: f64, n: usize, confidence: f64) -> Option<f64> {
    if n < 2 || !(sd >= 0.0 && sd.is_finite()) {
        return None;
    }
    let t = dist::t_quantile(1.0 - (1.0 - confidence) / 2.0, (n - 1) as f64)?;
    Some(t * sd / (n as f64).sqrt())
}

/// The t-interval of the sample's mean, on the metric's scale; `None` for n < 2.
pub fn mean_interval(sample: &Sample, confidence: f64) -> Option<MeanInterval> {
    let n = sample.len();
    let analysed = sample.analysed();
    let centre = mean(analysed);
    let h = t_half_width(variance(analysed).sqrt(), n, confidence)?;
    let moe_rel = (centre > 0.0).then(|| h / centre);
    let (low, high) = sample.kind().transform_interval(centre - h, centre + h);
    let moe = match sample.kind() {
        MeanKind::Arithmetic => h,
        // moe_rel × mean: (h / centre) × (1 / centre).
        MeanKind::Harmonic => h / (centre * centre),
    };
    Some(MeanInterval { low, high, moe, moe_rel, df: (n - 1) as f64, very_wide: n == 2 })
}

/// h / mean of the sample: what adaptive repetitions compare with their target
/// (STATISTICS §5). `None` while there is no estimate (n < 2) or the mean is ≤ 0.
pub fn relative_margin(sample: &Sample, confidence: f64) -> Option<f64> {
    mean_interval(sample, confidence)?.moe_rel
}

/// The smallest n ≥ 2 with t(1 − α/2, n − 1)·cv/√n ≤ `target`.
///
/// t(n − 1)/√n falls strictly as n grows, so the first n that passes is the answer and
/// the search only ever goes up. It starts at the normal-theory bound (z·cv/target)²:
/// t > z, so no smaller n can pass. From there it is a handful of steps (about
/// (1 + z²)/2), and iterating the closed form, which oscillates, is never needed.
pub fn runs_needed(cv: f64, target: f64, confidence: f64) -> Option<RunsNeeded> {
    if !(cv >= 0.0 && cv.is_finite() && target > 0.0 && target.is_finite()) {
        return None;
    }
    let q = 1.0 - (1.0 - confidence) / 2.0;
    let z = dist::normal_quantile(q)?;
    let bound = (z * cv / target).powi(2);
    search_upward(bound, |n| {
        let t = dist::t_quantile(q, (n - 1) as f64)?;
        Some(t * cv / (n as f64).sqrt() <= target)
    })
}

/// The first n ≥ 2 (and ≥ `bound`, below which the caller knows none passes) for which
/// `passes` holds, up to [`MAX_RUNS`]; `None` if `passes` cannot decide.
pub(crate) fn search_upward(bound: f64, mut passes: impl FnMut(usize) -> Option<bool>) -> Option<RunsNeeded> {
    // A NaN bound means the spread was not a number: nothing could ever pass.
    if bound.is_nan() {
        return None;
    }
    if bound >= MAX_RUNS as f64 {
        return Some(RunsNeeded::MoreThan(MAX_RUNS));
    }
    for n in (bound as usize).max(2)..=MAX_RUNS {
        if passes(n)? {
            return Some(RunsNeeded::Runs(n));
        }
    }
    Some(RunsNeeded::MoreThan(MAX_RUNS))
}

/// The distribution-free median interval from sorted values; `None` below
/// [`MEDIAN_CI_MIN_N`] or when no pair of order statistics reaches the confidence.
fn median_interval(sorted: &[f64], confidence: f64) -> Option<MedianInterval> {
    let n = sorted.len();
    if n < MEDIAN_CI_MIN_N {
        return None;
    }
    let (rank, coverage) = dist::median_rank(n, confidence)?;
    Some(MedianInterval { low: sorted[rank - 1], high: sorted[n - rank], rank, coverage })
}

/// The stability warnings of STATISTICS §1 for all trials of `sample`, in trial order.
pub fn stability_flags(sample: &Sample, settings: &Settings) -> Result<Vec<StabilityFlag>, StatsError> {
    let summary = summarize(sample, settings)?;
    let mut flags = Vec::new();
    if let Some(cv) = summary.cv.filter(|&cv| cv >= HIGH_CV) {
        flags.push(StabilityFlag::HighVariation { cv });
    }
    // Judged against the mean the report prints, so the warning matches the table.
    if summary.n >= 2 && summary.mean > 0.0 {
        for value in [summary.min, summary.max] {
            let distance = (value - summary.mean).abs() / summary.mean;
            if distance >= FAR_FROM_MEAN {
                flags.push(StabilityFlag::FarFromMean { value, distance });
            }
        }
    }
    if let Some(scores) = outliers::modified_z_scores(sample.analysed())
        && scores[0] > FIRST_TRIAL_Z
    {
        flags.push(StabilityFlag::FirstTrialOutlier { value: sample.values()[0], modified_z: scores[0] });
    }
    if sample.len() >= TREND_MIN_N
        && let Some(trend) = spearman_trend(sample.values())
        && trend.p_value < settings.alpha()
    {
        flags.push(StabilityFlag::Trend(trend));
    }
    Ok(flags)
}

/// Spearman's ρ between the values and their order, with scipy's p-value:
/// t = ρ·√((n − 2)/((1 + ρ)(1 − ρ))) on n − 2 df. The ranks of 1/x are those of x
/// reversed, so on a harmonic metric only the sign of ρ would change: the raw values
/// are used. `None` below 3 values, for constant or non-finite values.
pub fn spearman_trend(values: &[f64]) -> Option<Trend> {
    let n = values.len();
    if n < 3 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let (ranks, _) = average_ranks(values);
    // The order ranks are 1..=n; both rank vectors have mean (n + 1)/2.
    let centre = (n as f64 + 1.0) / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (i, r) in ranks.iter().enumerate() {
        let (dx, dy) = (i as f64 + 1.0 - centre, r - centre);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if syy == 0.0 {
        return None;
    }
    let rho = (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0);
    let df = (n - 2) as f64;
    let t = rho * (df / ((1.0 + rho) * (1.0 - rho))).max(0.0).sqrt();
    Some(Trend { rho, p_value: dist::t_two_sided_p(t, df)? })
}

pub(crate) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample variance with n − 1 in the denominator (two passes, for accuracy); 0 for n < 2
/// so callers need not special-case a single value before they check n.
pub(crate) fn variance(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let m = mean(values);
    values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64
}

pub(crate) fn sorted(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

/// Median of sorted values: the mean of the middle two for even n (numpy, R).
pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 }
}

/// Quantile by linear interpolation between order statistics: numpy's default, R type 7
/// (statrs's `Data::quantile` is type 8, which puts Tukey's fences elsewhere).
pub(crate) fn quantile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let below = h.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    sorted[below] + (h - below as f64) * (sorted[above] - sorted[below])
}

/// |x − median| for every value, in order.
pub(crate) fn absolute_deviations(values: &[f64]) -> Vec<f64> {
    let centre = median_of_sorted(&sorted(values));
    values.iter().map(|v| (v - centre).abs()).collect()
}

/// Median absolute deviation from the median, unscaled.
pub(crate) fn mad(values: &[f64]) -> f64 {
    median_of_sorted(&sorted(&absolute_deviations(values)))
}

/// Ranks 1..=n with ties given their average rank, and the size of every group of tied
/// values (1 for an untied value), as the rank tests need them.
pub(crate) fn average_ranks(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut groups = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end; their average:
        let rank = (start + end + 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        groups.push(end - start);
        start = end;
    }
    (ranks, groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::reference::{REFERENCE, assert_close, entries, number, sample};

    fn cells() -> impl Iterator<Item = (&'static String, &'static serde_json::Value)> {
        REFERENCE["cells"].as_object().expect("cells").iter()
    }

    #[test]
    fn cell_statistics_match_numpy_and_scipy() {
        let settings = Settings::default();
        for (name, expected) in cells() {
            let summary = summarize(&sample(name), &settings).unwrap();
            let close =
                |got: f64, key: &str| assert_close(got, number(&expected[key]), &format!("{name}.{key}"));
            assert_eq!(summary.n as u64, expected["n"].as_u64().unwrap(), "{name}.n");
            close(summary.mean, "mean");
            close(summary.median, "median");
            close(summary.min, "min");
            close(summary.max, "max");
            close(summary.mad, "mad");
            match (summary.interval, expected.get("ci_low")) {
                (Some(interval), Some(_)) => {
                    close(summary.sd.unwrap(), "sd");
                    close(summary.cv.unwrap(), "cv");
                    close(interval.moe_rel.unwrap(), "moe_rel");
                    close(interval.low, "ci_low");
                    close(interval.high, "ci_high");
                    close(interval.moe, "moe");
                }
                (None, None) => assert_eq!((summary.sd, summary.cv), (None, None), "{name}"),
                (got, _) => panic!("{name}: interval {got:?} disagrees with scipy"),
            }
            match (summary.median_interval, expected["median_ci"].as_array()) {
                (Some(ci), Some(bounds)) => {
                    assert_close(ci.low, number(&bounds[0]), &format!("{name} median low"));
                    assert_close(ci.high, number(&bounds[1]), &format!("{name} median high"));
                }
                (None, None) => {}
                (got, _) => panic!("{name}: median interval {got:?} disagrees with scipy"),
            }
        }
    }

    #[test]
    fn spearman_trend_matches_scipy() {
        for (name, expected) in cells() {
            let trend = spearman_trend(sample(name).values());
            match (trend, expected["spearman"].as_object()) {
                (Some(trend), Some(scipy)) => {
                    assert_close(trend.rho, number(&scipy["rho"]), &format!("{name} rho"));
                    assert_close(trend.p_value, number(&scipy["p"]), &format!("{name} p"));
                }
                (None, None) => {}
                (got, _) => panic!("{name}: trend {got:?} disagrees with scipy"),
            }
        }
    }

    #[test]
    fn runs_needed_matches_the_formula_evaluated_with_scipy() {
        for point in entries("runs_needed") {
            let (cv, target) = (number(&point["cv"]), number(&point["target"]));
            let runs = point["runs"].as_u64().unwrap() as usize;
            assert_eq!(
                runs_needed(cv, target, 0.95),
                Some(RunsNeeded::Runs(runs)),
                "cv {cv}, target {target}"
            );
        }
    }

    /// The worked examples of STATISTICS.md §1 (all confirmed by scipy).
    #[test]
    fn runs_needed_reproduces_the_examples_of_the_contract() {
        for (cv, target, runs) in [(0.01, 0.02, 4), (0.05, 0.02, 27), (0.05, 0.05, 7), (0.10, 0.05, 18)] {
            assert_eq!(runs_needed(cv, target, 0.95), Some(RunsNeeded::Runs(runs)));
        }
    }

    #[test]
    fn runs_needed_edges() {
        assert_eq!(runs_needed(0.0, 0.02, 0.95), Some(RunsNeeded::Runs(2)));
        assert_eq!(runs_needed(1.0, 1e-6, 0.95), Some(RunsNeeded::MoreThan(MAX_RUNS)));
        assert_eq!(runs_needed(f64::NAN, 0.02, 0.95), None);
        assert_eq!(runs_needed(0.05, 0.0, 0.95), None);
        assert_eq!(runs_needed(0.05, 0.02, 1.0), None);
    }

    #[test]
    fn one_trial_has_no_error_estimate_and_two_are_very_wide() {
        let settings = Settings::default();
        let one = summarize(&sample("n1"), &settings).unwrap();
        assert_eq!((one.sd, one.cv, one.interval, one.runs_needed), (None, None, None, None));
        assert_eq!((one.mean, one.median, one.mad), (12.5, 12.5, 0.0));
        let two = summarize(&sample("n2"), &settings).unwrap();
        assert!(two.interval.unwrap().very_wide);
        assert!(!summarize(&sample("n3"), &settings).unwrap().interval.unwrap().very_wide);
    }

    #[test]
    fn harmonic_interval_is_the_reciprocal_interval_turned_around() {
        let rates = Sample::new(&[50.0, 100.0], MeanKind::Harmonic).unwrap();
        let interval = mean_interval(&rates, 0.95).unwrap();
        // Reciprocals 0.02 and 0.01: mean 0.015, h = 12.706·0.005 > 0.015, so the
        // reciprocal interval reaches zero and the rate has no finite upper bound.
        assert_eq!(interval.high, f64::INFINITY);
        assert!(interval.low > 0.0 && interval.low < 1.0 / 0.015);
        let tight = Sample::new(&[99.0, 100.0, 101.0], MeanKind::Harmonic).unwrap();
        let interval = mean_interval(&tight, 0.95).unwrap();
        let hmean = 3.0 / (1.0 / 99.0 + 1.0 / 100.0 + 1.0 / 101.0);
        assert!(interval.low < hmean && hmean < interval.high);
    }

    #[test]
    fn relative_margin_is_the_half_width_over_the_mean() {
        let cell = sample("dnetc_xen");
        let expected = &REFERENCE["cells"]["dnetc_xen"]["moe_rel"];
        assert_close(relative_margin(&cell, 0.95).unwrap(), number(expected), "h/mean");
        assert_eq!(relative_margin(&sample("n1"), 0.95), None);
    }

    #[test]
    fn stability_flags_catch_each_warning() {
        let settings = Settings::default();
        let flags = |name: &str| stability_flags(&sample(name), &settings).unwrap();
        assert_eq!(flags("dnetc_bare"), vec![]);
        let slow_first = flags("n6_slow_first");
        assert!(matches!(slow_first[0], StabilityFlag::HighVariation { .. }));
        assert!(matches!(slow_first[1], StabilityFlag::FirstTrialOutlier { value: 14.2, .. }));
        assert!(matches!(flags("n12_trend")[..], [StabilityFlag::Trend(Trend { rho, .. })] if rho > 0.9));
        // A harmonic metric: the decreasing rates of seed 000's domU putc column.
        assert!(flags("putc_domu").iter().any(|f| matches!(f, StabilityFlag::Trend(t) if t.rho < 0.0)));
        let spread = Sample::new(&[1.0, 1.0, 1.0, 3.0], MeanKind::Arithmetic).unwrap();
        assert_eq!(
            stability_flags(&spread, &settings).unwrap()[1],
            StabilityFlag::FarFromMean { value: 3.0, distance: 1.0 }
        );
    }

    #[test]
    fn trend_needs_six_trials() {
        let five = Sample::new(&[1.0, 2.0, 3.0, 4.0, 5.0], MeanKind::Arithmetic).unwrap();
        let flags = stability_flags(&five, &Settings::default()).unwrap();
        assert!(!flags.iter().any(|f| matches!(f, StabilityFlag::Trend(_))));
        assert_eq!(spearman_trend(&[2.0, 2.0, 2.0]), None, "constant: undefined");
    }

    #[test]
    fn analyze_cell_keeps_flagged_values_unless_told_to_set_them_aside() {
        // by default the flagged value stays in, named as the one a rule would set aside
        let kept = analyze_cell(&sample("seeks_domu"), &Settings::default()).unwrap();
        assert_eq!((kept.set_aside.len(), kept.summary.n, kept.summary.min), (0, 8, 185.3));
        assert_eq!(kept.outliers.flagged, kept.candidates);
        assert_eq!(sample("seeks_domu").values()[kept.candidates[0]], 185.3);
        let settings = Settings { set_aside: true, ..Settings::default() };
        let analysis = analyze_cell(&sample("seeks_domu"), &settings).unwrap();
        assert_eq!(analysis.set_aside, vec![185.3]);
        assert_eq!(analysis.summary.n, 7);
        assert_eq!(analysis.summary.min, 193.2);
        let first = analyze_cell(&sample("n6_slow_first"), &settings).unwrap();
        assert_eq!(first.set_aside, vec![14.2]);
        assert!(
            first.flags.iter().any(|f| matches!(f, StabilityFlag::FirstTrialOutlier { .. })),
            "the warning survives setting the trial aside"
        );
    }

    #[test]
    fn quantiles_interpolate_linearly_like_numpy() {
        let sorted = [1.0, 2.0, 4.0, 8.0];
        // numpy.percentile([1, 2, 4, 8], [0, 25, 50, 75, 100]) = [1, 1.75, 3, 5, 8]
        let got: Vec<f64> =
            [0.0, 0.25, 0.5, 0.75, 1.0].iter().map(|&p| quantile_of_sorted(&sorted, p)).collect();
        assert_eq!(got, vec![1.0, 1.75, 3.0, 5.0, 8.0]);
    }

    #[test]
    fn invalid_settings_are_errors() {
        let settings = Settings { confidence: 1.5, ..Settings::default() };
        assert!(matches!(
            summarize(&sample("n3"), &settings),
            Err(StatsError::InvalidSetting { name: "confidence", .. })
        ));
    }
}
