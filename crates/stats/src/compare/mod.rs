//! Comparing level B against baseline A (docs/statistics.md, Comparing level B with baseline A): the ratio of means with its
//! confidence interval, the tests, the minimum detectable effect, and Holm's adjustment.
//!
//! The effect is R = mean_B / mean_A. For a harmonic metric everything is computed on
//! the reciprocals and carried back: R = 1 / (ratio of the reciprocal means), and the
//! interval's bounds are inverted and swap places.
//!
//! Here the comparison's types; [`parametric`] the comparisons by means (Fieller's
//! interval, Welch's and the paired t-test, boots as units); [`power`] the minimum
//! detectable effect and how many more trials would settle a verdict;
//! [`holm`](mod@holm) the adjustment of a family of p-values. The robust method is
//! [`super::robust`].

mod holm;
mod parametric;
mod power;

pub use holm::holm;
pub(crate) use parametric::{back_transform, checked_positive_means};
pub use parametric::{block_means, compare_unit_logs};
pub(crate) use parametric::{compare_independent, compare_paired};
pub use power::welch_df;
pub(crate) use power::{mde_independent, mde_paired};
pub(crate) use power::{size_target, trials_to_settle, trials_to_size};

use serde::Serialize;

use vocab::{MeanKind, Method};

/// How the two levels' trials relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// Separate trials: Fieller's interval with Welch–Satterthwaite df, Welch's test.
    Independent,
    /// Trial i of A and trial i of B share a block (`paired_by`): log-ratio analysis.
    Paired,
}

/// Confidence interval of the ratio R.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RatioInterval {
    /// A level has fewer than two trials: no error estimate.
    NoEstimate,
    /// Fieller's interval is not a finite interval: the baseline mean is not known to
    /// be away from zero (for a harmonic metric: the reciprocal ratio's is not).
    Unbounded,
    Bounded {
        low: f64,
        high: f64,
    },
    /// The robust method's interval does not exist at this confidence with so few trials
    /// (docs/statistics.md, The robust method): even its widest covers less. `needed`:
    /// the fewest trials per level (pairs, for a paired design) at which it would.
    TooFew {
        needed: usize,
    },
}

impl RatioInterval {
    /// The interval of the relative effect R − 1, when it is bounded.
    pub fn effect(&self) -> Option<(f64, f64)> {
        match *self {
            RatioInterval::Bounded { low, high } => Some((low - 1.0, high - 1.0)),
            RatioInterval::NoEstimate | RatioInterval::Unbounded | RatioInterval::TooFew { .. } => None,
        }
    }
}

/// The relative spread behind a comparison, which the MDE and "how many more trials"
/// are computed from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "design", rename_all = "snake_case")]
pub enum Spread {
    Independent {
        cv_a: f64,
        cv_b: f64,
    },
    /// Standard deviation of the log-ratios ln(B_i / A_i).
    Paired {
        sd_log: f64,
    },
}

/// Welch's unequal-variances t-test of mean_B − mean_A.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct WelchTest {
    pub t: f64,
    pub df: f64,
    /// Two-sided.
    pub p_value: f64,
}

/// Level B against baseline A for one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub design: Design,
    pub mean_kind: MeanKind,
    pub n_a: usize,
    pub n_b: usize,
    /// The cells' means (arithmetic or harmonic) on the metric's scale.
    pub mean_a: f64,
    pub mean_b: f64,
    /// mean_B / mean_A; for a paired design the geometric mean of the ratios B_i / A_i.
    pub ratio: f64,
    pub interval: RatioInterval,
    /// Degrees of freedom of the interval's t quantile; `None` without an estimate or
    /// when neither level varies.
    pub df: Option<f64>,
    /// Welch's test (independent) or the paired t-test on the log-ratios; two-sided.
    /// `None` when it is undefined: fewer than two trials, or no variation at all.
    pub p_value: Option<f64>,
    /// Minimum detectable effect at the configured power, as a fraction (docs/statistics.md, Comparing level B with baseline A).
    pub mde: Option<f64>,
    pub spread: Option<Spread>,
    /// Means (Fieller, Welch, t) or ranks (Hodges–Lehmann, Mann–Whitney, Wilcoxon).
    pub method: Method,
    /// An exact robust interval's own coverage, 1 − 2·P(tail) (at least the confidence:
    /// the null distribution is discrete). `None` for the parametric method and for the
    /// normal approximation, whose coverage is the confidence.
    pub coverage: Option<f64>,
}

impl Comparison {
    /// The comparison's sizes, means and ratio, before any error estimate.
    fn unestimated(
        design: Design,
        mean_kind: MeanKind,
        (n_a, n_b): (usize, usize),
        (mean_a, mean_b): (f64, f64),
        ratio: f64,
    ) -> Comparison {
        Comparison {
            design,
            mean_kind,
            n_a,
            n_b,
            mean_a,
            mean_b,
            ratio,
            interval: RatioInterval::NoEstimate,
            df: None,
            p_value: None,
            mde: None,
            spread: None,
            method: Method::Parametric,
            coverage: None,
        }
    }
}
