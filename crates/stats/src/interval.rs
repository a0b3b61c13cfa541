//! Confidence intervals of one cell (docs/statistics.md, One cell): the t-interval of the
//! mean, its relative margin of error, and the distribution-free interval of the median.

use serde::Serialize;

use super::dist;
use super::elementary::{mean, variance};
use super::observations::Observations;
use vocab::MeanKind;

/// The distribution-free median interval is given from this many trials (docs/statistics.md, One cell).
pub(crate) const MEDIAN_CI_MIN_N: usize = 6;

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
/// Half-width h = t(1 − α/2, n − 1)·sd/√n of the t-interval of a mean; `None` for n < 2
/// or invalid arguments.
pub(crate) fn t_half_width(sd: f64, n: usize, confidence: f64) -> Option<f64> {
    if n < 2 || !(sd >= 0.0 && sd.is_finite()) {
        return None;
    }
    let t = dist::t_quantile(1.0 - (1.0 - confidence) / 2.0, (n - 1) as f64)?;
    Some(t * sd / (n as f64).sqrt())
}

/// The t-interval of the sample's mean, on the metric's scale; `None` for n < 2.
pub fn mean_interval(sample: &Observations, confidence: f64) -> Option<MeanInterval> {
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
/// (docs/statistics.md, One cell; `margin calibrate`). `None` while there is no estimate (n < 2) or the mean is ≤ 0.
pub fn relative_margin(sample: &Observations, confidence: f64) -> Option<f64> {
    mean_interval(sample, confidence)?.moe_rel
}
/// The distribution-free median interval from sorted values; `None` below
/// [`MEDIAN_CI_MIN_N`] or when no pair of order statistics reaches the confidence.
pub fn median_interval(sorted: &[f64], confidence: f64) -> Option<MedianInterval> {
    let n = sorted.len();
    if n < MEDIAN_CI_MIN_N {
        return None;
    }
    let (rank, coverage) = dist::median_rank(n, confidence)?;
    Some(MedianInterval { low: sorted[rank - 1], high: sorted[n - rank], rank, coverage })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{REFERENCE, assert_close, number, sample};

    #[test]
    fn harmonic_interval_is_the_reciprocal_interval_turned_around() {
        let rates = Observations::new(&[50.0, 100.0], MeanKind::Harmonic).unwrap();
        let interval = mean_interval(&rates, 0.95).unwrap();
        // Reciprocals 0.02 and 0.01: mean 0.015, h = 12.706·0.005 > 0.015, so the
        // reciprocal interval reaches zero and the rate has no finite upper bound.
        assert_eq!(interval.high, f64::INFINITY);
        assert!(interval.low > 0.0 && interval.low < 1.0 / 0.015);
        let tight = Observations::new(&[99.0, 100.0, 101.0], MeanKind::Harmonic).unwrap();
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
}
