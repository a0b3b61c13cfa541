//! The prediction interval of one more trial (docs/statistics.md, A single number against
//! measured runs): where a single figure stands against the trials of the other side.
//!
//! For a sample x₁…xₙ of a normal distribution, one further draw x lies in
//! x̄ ± t(1 − α/2, n − 1)·s·√(1 + 1/n) with probability 1 − α: the t-interval of the
//! mean widened by the new draw's own spread. It is computed on the analysis scale (the
//! reciprocals for a harmonic mean, where the times per unit of work are what vary
//! normally) and carried back to the metric's scale.

use serde::Serialize;

use super::dist;
use super::elementary::{mean, variance};
use super::observations::Observations;

/// Where a single value lies against an interval.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    Inside,
    Above,
    Below,
}

impl Place {
    /// "inside", "above", "far above", …: `far` when outside by more than the interval's
    /// width ([`PredictionInterval::far`]).
    pub fn words(self, far: bool) -> &'static str {
        match (self, far) {
            (Place::Inside, _) => "inside",
            (Place::Above, true) => "far above",
            (Place::Above, false) => "above",
            (Place::Below, true) => "far below",
            (Place::Below, false) => "below",
        }
    }
}

/// A prediction interval on the metric's scale, and the trials it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PredictionInterval {
    pub low: f64,
    /// +∞ when a harmonic metric's reciprocal interval reaches zero.
    pub high: f64,
    pub n: usize,
}

/// The `confidence` prediction interval of one more trial of `sample`; `None` below two
/// trials (no spread to predict with) or for an invalid level.
pub fn prediction_interval(sample: &Observations, confidence: f64) -> Option<PredictionInterval> {
    let n = sample.len();
    if n < 2 {
        return None;
    }
    let x = sample.analysed();
    let (centre, sd) = (mean(x), variance(x).sqrt());
    let t = dist::t_quantile(1.0 - (1.0 - confidence) / 2.0, (n - 1) as f64)?;
    let h = t * sd * (1.0 + 1.0 / n as f64).sqrt();
    let (low, high) = sample.kind().transform_interval(centre - h, centre + h);
    Some(PredictionInterval { low, high, n })
}

impl PredictionInterval {
    /// Where `value` (on the metric's scale) lies: inside the closed interval, or beyond
    /// one end.
    pub fn place(&self, value: f64) -> Place {
        if value < self.low {
            Place::Below
        } else if value > self.high {
            Place::Above
        } else {
            Place::Inside
        }
    }

    /// Outside by more than the interval's own width: "far above", "far below". An
    /// unbounded interval has no width to go beyond.
    pub fn far(&self, value: f64) -> bool {
        let width = self.high - self.low;
        width.is_finite() && (value > self.high + width || value < self.low - width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vocab::MeanKind;

    /// By hand: 10, 11, 12 have mean 11, sd 1; t(0.975, 2) = 4.302652729749464 (scipy);
    /// h = 4.30265·1·√(4/3) = 4.968275.
    #[test]
    fn the_interval_is_the_mean_widened_by_one_more_trial() {
        let sample = Observations::new(&[10.0, 11.0, 12.0], MeanKind::Arithmetic).unwrap();
        let p = prediction_interval(&sample, 0.95).unwrap();
        let h = 4.302_652_729_749_464 * (4.0f64 / 3.0).sqrt();
        assert!((p.low - (11.0 - h)).abs() < 1e-9 && (p.high - (11.0 + h)).abs() < 1e-9, "{p:?}");
        assert_eq!(p.place(11.0), Place::Inside);
        assert_eq!(p.place(16.0), Place::Above);
        assert!(!p.far(16.0));
        assert!(p.far(11.0 + h + 2.0 * h + 0.1));
        assert_eq!(p.place(5.0), Place::Below);
        assert!(
            prediction_interval(&Observations::new(&[1.0], MeanKind::Arithmetic).unwrap(), 0.95).is_none()
        );
    }

    /// A harmonic metric's interval is the reciprocals' interval turned around: rates
    /// 100/0.9, 100/1.0, 100/1.1 are times 0.009, 0.01, 0.011 per MB (mean 0.01, sd 0.001).
    #[test]
    fn a_rate_is_predicted_on_the_reciprocals() {
        let rates = [100.0 / 0.9, 100.0, 100.0 / 1.1];
        let sample = Observations::new(&rates, MeanKind::Harmonic).unwrap();
        let p = prediction_interval(&sample, 0.95).unwrap();
        let h = 4.302_652_729_749_464 * 0.001 * (4.0f64 / 3.0).sqrt();
        assert!((p.low - 1.0 / (0.01 + h)).abs() < 1e-9, "{p:?}");
        assert!((p.high - 1.0 / (0.01 - h)).abs() < 1e-9, "{p:?}");
        assert_eq!(p.place(502.0), Place::Above);
        assert!(p.far(502.0));
    }
}
