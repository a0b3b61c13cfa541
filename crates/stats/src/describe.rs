//! The descriptive statistics of one cell (docs/statistics.md, One cell): mean, spread,
//! median, extremes, intervals and runs needed, on the metric's own scale.

use serde::Serialize;

use super::elementary::{mad_of_sorted, mean, median_of_sorted, sorted, variance};
use super::interval::{MeanInterval, MedianInterval, mean_interval, median_interval};
use super::observations::Observations;
use super::runs::{RunsNeeded, runs_needed};
use super::{StatsError, StatsSettings};
use vocab::MeanKind;

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

/// The statistics of docs/statistics.md (One cell) for all trials of `sample`.
pub fn summarize(sample: &Observations, settings: &StatsSettings) -> Result<CellSummary, StatsError> {
    summarize_sorted(sample, &sorted(sample.values()), settings)
}

/// [`summarize`] with the sample's values sorted at hand (`sorted` =
/// `elementary::sorted(sample.values())`).
pub(crate) fn summarize_sorted(
    sample: &Observations,
    sorted: &[f64],
    settings: &StatsSettings,
) -> Result<CellSummary, StatsError> {
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
    let median = median_of_sorted(sorted);
    Ok(CellSummary {
        mean_kind: kind,
        n,
        mean,
        sd,
        cv,
        median,
        min: sorted[0],
        max: sorted[n - 1],
        mad: mad_of_sorted(sorted, median),
        interval: mean_interval(sample, settings.confidence),
        median_interval: median_interval(sorted, settings.confidence),
        runs_needed: cv.and_then(|cv| runs_needed(cv, settings.target_margin, settings.confidence)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{REFERENCE, assert_close, number, sample};

    fn cells() -> impl Iterator<Item = (&'static String, &'static serde_json::Value)> {
        REFERENCE["cells"].as_object().expect("cells").iter()
    }

    #[test]
    fn cell_statistics_match_numpy_and_scipy() {
        let settings = StatsSettings::default();
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
    fn one_trial_has_no_error_estimate_and_two_are_very_wide() {
        let settings = StatsSettings::default();
        let one = summarize(&sample("n1"), &settings).unwrap();
        assert_eq!((one.sd, one.cv, one.interval, one.runs_needed), (None, None, None, None));
        assert_eq!((one.mean, one.median, one.mad), (12.5, 12.5, 0.0));
        let two = summarize(&sample("n2"), &settings).unwrap();
        assert!(two.interval.unwrap().very_wide);
        assert!(!summarize(&sample("n3"), &settings).unwrap().interval.unwrap().very_wide);
    }

    #[test]
    fn invalid_settings_are_errors() {
        let settings = StatsSettings { confidence: 1.5, ..StatsSettings::default() };
        assert!(matches!(
            summarize(&sample("n3"), &settings),
            Err(StatsError::InvalidSetting { name: "confidence", .. })
        ));
    }
}
