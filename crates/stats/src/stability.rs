//! Stability warnings about how a cell was measured (docs/statistics.md, One cell): high
//! variation, extremes far from the mean, a slow first trial, a trend with trial order.

use serde::Serialize;

use super::StatsSettings;
use super::describe::CellSummary;
use super::dist;
use super::elementary::average_ranks_in;
use super::observations::Observations;

/// A CV at or above this is flagged as unstable (docs/statistics.md, One cell).
pub(crate) const HIGH_CV: f64 = 0.10;
/// A min or max this far from the mean, relatively, is flagged.
pub(crate) const FAR_FROM_MEAN: f64 = 0.50;
/// Modified z-score above which the first trial counts as a robust outlier. Fixed at the
/// Iglewicz–Hoaglin value whatever outlier rule is configured: it is a warning about
/// warm-up, not a decision about which trials to keep.
pub(crate) const FIRST_TRIAL_Z: f64 = 3.5;
/// The trend test needs this many trials (docs/statistics.md, One cell).
pub(crate) const TREND_MIN_N: usize = 6;

/// Spearman's rank correlation of the values with their trial order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Trend {
    pub rho: f64,
    /// Two-sided, from the t approximation with n − 2 df (as scipy's `spearmanr`).
    pub p_value: f64,
}

/// A warning about how a cell was measured; never part of a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
/// The stability warnings of docs/statistics.md (One cell) for all trials of `sample`, in trial order.
#[cfg(test)]
pub(crate) fn stability_flags(
    sample: &Observations,
    settings: &StatsSettings,
) -> Result<Vec<StabilityFlag>, super::StatsError> {
    let modified_z = crate::reference::modified_z_scores(sample.analysed());
    let summary = super::describe::summarize(sample, settings)?;
    let ascending = super::elementary::ascending(sample.values());
    Ok(stability_flags_of(sample, &summary, settings, modified_z.as_deref(), &ascending))
}

/// `stability_flags` with the sample's summary, its values' modified z-scores and their
/// order at hand (`summary` = `summarize(sample)`, `modified_z` =
/// `outliers::modified_z_scores_sorted` of its values on the analysis scale, which the outlier
/// rules read too, `ascending` = `elementary::ascending(sample.values())`).
pub(crate) fn stability_flags_of(
    sample: &Observations,
    summary: &CellSummary,
    settings: &StatsSettings,
    modified_z: Option<&[f64]>,
    ascending: &[u32],
) -> Vec<StabilityFlag> {
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
    if let Some(scores) = modified_z
        && scores[0] > FIRST_TRIAL_Z
    {
        flags.push(StabilityFlag::FirstTrialOutlier { value: sample.values()[0], modified_z: scores[0] });
    }
    if sample.len() >= TREND_MIN_N
        && let Some(trend) = spearman_trend_in(sample.values(), ascending)
        && trend.p_value < settings.alpha()
    {
        flags.push(StabilityFlag::Trend(trend));
    }
    flags
}

/// Spearman's ρ between the values and their order, with scipy's p-value:
/// t = ρ·√((n − 2)/((1 + ρ)(1 − ρ))) on n − 2 df. The ranks of 1/x are those of x
/// reversed, so on a harmonic metric only the sign of ρ would change: the raw values
/// are used. `None` below 3 values, for constant or non-finite values.
#[cfg(test)]
pub(crate) fn spearman_trend(values: &[f64]) -> Option<Trend> {
    spearman_trend_in(values, &super::elementary::ascending(values))
}

/// `spearman_trend` of `values` whose order is at hand (`elementary::ascending`).
fn spearman_trend_in(values: &[f64], ascending: &[u32]) -> Option<Trend> {
    let n = values.len();
    if n < 3 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let (ranks, _) = average_ranks_in(values, ascending);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{REFERENCE, assert_close, number, sample};
    use vocab::MeanKind;

    fn cells() -> impl Iterator<Item = (&'static String, &'static serde_json::Value)> {
        REFERENCE["cells"].as_object().expect("cells").iter()
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
    fn stability_flags_catch_each_warning() {
        let settings = StatsSettings::default();
        let flags = |name: &str| stability_flags(&sample(name), &settings).unwrap();
        assert_eq!(flags("dnetc_bare"), vec![]);
        let slow_first = flags("n6_slow_first");
        assert!(matches!(slow_first[0], StabilityFlag::HighVariation { .. }));
        assert!(matches!(slow_first[1], StabilityFlag::FirstTrialOutlier { value: 14.2, .. }));
        assert!(matches!(flags("n12_trend")[..], [StabilityFlag::Trend(Trend { rho, .. })] if rho > 0.9));
        // A harmonic metric: the decreasing rates of seed 000's domU putc column.
        assert!(flags("putc_domu").iter().any(|f| matches!(f, StabilityFlag::Trend(t) if t.rho < 0.0)));
        let spread = Observations::new(&[1.0, 1.0, 1.0, 3.0], MeanKind::Arithmetic).unwrap();
        assert_eq!(
            stability_flags(&spread, &settings).unwrap()[1],
            StabilityFlag::FarFromMean { value: 3.0, distance: 1.0 }
        );
    }

    #[test]
    fn trend_needs_six_trials() {
        let five = Observations::new(&[1.0, 2.0, 3.0, 4.0, 5.0], MeanKind::Arithmetic).unwrap();
        let flags = stability_flags(&five, &StatsSettings::default()).unwrap();
        assert!(!flags.iter().any(|f| matches!(f, StabilityFlag::Trend(_))));
        assert_eq!(spearman_trend(&[2.0, 2.0, 2.0]), None, "constant: undefined");
    }
}
