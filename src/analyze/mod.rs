//! Statistics of benchmark results, as STATISTICS.md specifies them: per-cell summaries,
//! outliers, comparisons of a level against its baseline, and the verdicts of the report.
//!
//! The statistics core is a set of plain functions of one cell's values. The caller wraps
//! them in a [`Sample`], saying once whether the metric's mean is arithmetic or harmonic;
//! every statistic then works on the right scale (the reciprocals for a harmonic mean)
//! and reports on the metric's own scale. Around it, [`table`] turns the store into the
//! tidy polars table and groups it into cells, [`summary`] analyses every cell and
//! comparison of an experiment into the serialisable [`Summary`], [`lint`] adds the
//! methodology warnings, and [`export`] writes the table for other tools. [`memory`]
//! builds an experiment's store in memory, for the tests and the calibration suite.
//!
//! Relative quantities (CV, margins, ratios, effects, thresholds) are fractions:
//! 0.05 means 5 %. Percent signs belong to the report.

pub mod compare;
pub mod dist;
pub mod export;
pub mod lint;
pub mod memory;
pub mod outliers;
pub mod sample;
pub mod stats;
pub mod stopping;
pub mod summary;
pub mod table;
pub mod verdict;

#[cfg(test)]
pub(crate) mod fixture;
#[cfg(test)]
mod properties;
#[cfg(test)]
pub(crate) mod reference;

pub use compare::{Comparison, Design, RatioInterval, compare_independent, compare_paired, holm};
pub use export::{Format, export};
pub use memory::MemoryStore;
pub use outliers::{OutlierRule, Outliers, find_outliers};
pub use sample::{MeanKind, Sample};
pub use stats::{CellAnalysis, CellSummary, MeanInterval, analyze_cell, summarize};
pub use summary::{AnalyzeError, Pending, Summary, summarize_store};
pub use table::Table;
pub use verdict::{Verdict, VerdictKind, verdict};

use serde::Serialize;

use crate::spec::Repetitions;

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

/// The share of α an adaptive experiment's intervals keep: its cells stop when their
/// interval is narrow enough, which happens more often when the spread came out small by
/// chance, so a plain 95 % t-interval covered only 0.92 at CV 5 % (target ±2 %, 5–30
/// trials). Intervals at 1 − 0.6·α (97 % for 95 %), used by the stopping rule and the
/// report alike, cover ≥ 0.95 at CV 0.5–10 % with mean n within 8 % of the fixed n that
/// reaches the target (docs/statistics.md, Adaptive repetitions; `margin calibrate`).
pub const ADAPTIVE_ALPHA_SHARE: f64 = 0.6;

/// The confidence level of the intervals of an experiment of `nominal` confidence: the
/// same for a fixed number of trials; widened by [`ADAPTIVE_ALPHA_SHARE`] when its cells
/// stop on their margin of error; and 1 − α/K when they stop on the answer
/// (`until: verdict`), K being the looks of its schedule ([`Repetitions::looks`]): α
/// spent in equal parts over a schedule fixed in advance, so that the chance that any
/// look's interval misses the truth is at most α (Bonferroni), whatever the data do
/// (docs/statistics.md, Stopping on the answer). The report's intervals are the same.
pub fn interval_confidence(nominal: f64, repetitions: &Repetitions) -> f64 {
    match repetitions {
        Repetitions::Fixed(_) => nominal,
        Repetitions::Adaptive { .. } => 1.0 - ADAPTIVE_ALPHA_SHARE * (1.0 - nominal),
        Repetitions::Verdict { .. } => 1.0 - (1.0 - nominal) / repetitions.looks().len().max(1) as f64,
    }
}

/// The knobs of the analysis (the `analysis:` block of an experiment file).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    /// Confidence level of every interval; α = 1 − confidence (STATISTICS §0: 0.95).
    pub confidence: f64,
    /// Practical-significance band δ: differences within ±δ do not matter (0.05).
    pub threshold: f64,
    /// Relative margin of error that "runs needed" aims at (0.02, DESIGN §3's example).
    pub target_margin: f64,
    /// Power at which the minimum detectable effect is quoted (0.80).
    pub power: f64,
    /// How outliers are found (docs/statistics.md, Outliers: modified z-score above 3.5).
    pub outliers: OutlierRule,
    /// Whether flagged values are left out of the statistics; by default they stay in
    /// and the verdict without them is given beside (the calibration suite's finding).
    pub set_aside: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            confidence: 0.95,
            threshold: 0.05,
            target_margin: 0.02,
            power: 0.80,
            outliers: OutlierRule::default(),
            set_aside: false,
        }
    }
}

impl Settings {
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
