//! The statistics core: numbers in, numbers out (docs/statistics.md). No tables, no store,
//! no experiment types; the pipeline of `analyze` and the stopping rule both call it.
//!
//! The caller wraps one cell's values in a [`Observations`](observations::Observations), saying once
//! whether the metric's mean is arithmetic or harmonic; every statistic then works on the
//! right scale (the reciprocals for a harmonic mean) and reports on the metric's own scale.
//!
//! Relative quantities (CV, margins, ratios, effects, thresholds) are fractions:
//! 0.05 means 5 %. Percent signs belong to the report.

pub mod bisect;
pub mod cell;
pub mod compare;
pub mod components;
pub mod describe;
pub mod dist;
pub mod drift;
pub mod elementary;
pub mod interval;
pub mod notation;
pub mod observations;
pub mod outliers;
pub mod pool;
pub mod prediction;
pub mod regimes;
pub mod robust;
pub mod runs;
pub mod series;
pub mod settle;
pub mod stability;
pub mod tolerance;
pub mod units;
pub mod verdict;

#[cfg(test)]
mod properties;
#[cfg(test)]
pub(crate) mod reference;

use serde::Serialize;

use outliers::OutlierRule;
use vocab::{MeanKind, Method};

/// Why a statistic could not be computed from the data or settings it was given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("a sample needs at least one value, found none")]
    Empty,
    #[error("value #{index} is {value}: statistics need finite numbers")]
    NotFinite { index: usize, value: f64 },
    #[error("value #{index} is {value}: a harmonic mean needs positive values")]
    NotPositive { index: usize, value: f64 },
    #[error("value #{index} is {value}: a paired log-ratio needs positive values")]
    NotPositiveForLog { index: usize, value: f64 },
    #[error("index {index} is outside a sample of {len} values")]
    IndexOutOfRange { index: usize, len: usize },
    #[error("setting `{name}` is {value}, expected {expected}")]
    InvalidSetting { name: &'static str, value: f64, expected: &'static str },
    #[error("cannot compare a {a} mean with a {b} mean: one metric has one kind of mean")]
    MixedMeanKinds { a: MeanKind, b: MeanKind },
    #[error("a paired comparison needs one value of each level per pair, found {a} and {b}")]
    UnequalPairs { a: usize, b: usize },
    #[error("the {level} mean is {mean}: a ratio needs positive means")]
    NonPositiveMean { level: &'static str, mean: f64 },
    #[error("p-value #{index} is {value}, expected a number in [0, 1]")]
    InvalidPValue { index: usize, value: f64 },
}

/// The knobs of the analysis (the `analysis:` block of an experiment file).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsSettings {
    /// Confidence level of every interval; α = 1 − confidence (0.95).
    pub confidence: f64,
    /// Practical-significance band δ: differences within ±δ do not matter (0.05).
    pub threshold: f64,
    /// Relative margin of error that "runs needed" aims at (0.02).
    pub target_margin: f64,
    /// Power at which the minimum detectable effect is quoted (0.80).
    pub power: f64,
    /// How outliers are found (docs/statistics.md, Outliers: the studentized deviation
    /// beyond its Bonferroni cutoff at 1 % per cell, MAD 3.5 labels beside).
    pub outliers: OutlierRule,
    /// Whether the rule's selection is left out of the statistics: by default for the
    /// calibrated rule; for the MAD and IQR rules flagged values stay in and the verdict
    /// without them is given beside (the calibration suite's finding).
    pub set_aside: bool,
    /// Means or ranks (`analysis.method`, a metric's `method`; docs/statistics.md, The
    /// robust method). The robust method compares every value: ranks need no outlier rule.
    pub method: Method,
    /// The most trials a cell may get when its repetitions are adaptive (`max:`): advice
    /// beyond it says so, and what else would help. None for a fixed number.
    pub max_trials: Option<usize>,
}

impl Default for StatsSettings {
    fn default() -> Self {
        StatsSettings {
            confidence: 0.95,
            threshold: 0.05,
            target_margin: 0.02,
            power: 0.80,
            outliers: OutlierRule::default(),
            set_aside: true,
            method: Method::Parametric,
            max_trials: None,
        }
    }
}

impl StatsSettings {
    /// Checks every field; the analysis functions call this before using them.
    pub fn validate(&self) -> Result<(), StatsError> {
        let check = |name, value: f64, ok: bool, expected| {
            if ok { Ok(()) } else { Err(StatsError::InvalidSetting { name, value, expected }) }
        };
        let c = self.confidence;
        check("confidence", c, c > 0.0 && c < 1.0, "a level strictly between 0 and 1")?;
        let t = self.threshold;
        check("threshold", t, t >= 0.0 && t.is_finite(), "a non-negative fraction")?;
        let m = self.target_margin;
        check("target_margin", m, m > 0.0 && m.is_finite(), "a positive fraction")?;
        // Below ½ the power quantile turns negative and the MDE formula stops meaning
        // "an effect this large would usually be detected".
        let p = self.power;
        check("power", p, (0.5..1.0).contains(&p), "a probability in [0.5, 1)")?;
        if let OutlierRule::Studentized { rate } = self.outliers {
            check("outliers.rate", rate, rate > 0.0 && rate <= 0.5, "a probability in (0, 0.5]")?;
        }
        match self.outliers.cutoff() {
            Some(c) => check("outliers.cutoff", c, c > 0.0 && c.is_finite(), "a positive number"),
            None => Ok(()),
        }
    }

    /// α, the two-sided error rate of the intervals and tests.
    pub fn alpha(&self) -> f64 {
        1.0 - self.confidence
    }
}
