//! A level against the baseline for one metric in one context (`comparisons`): its two
//! sides, the ratio and its verdict, what rests on boots, regimes or a single trial; and
//! each level's effect pooled over the contexts it was compared in (`effects`).

use indexmap::IndexMap;
use serde::Serialize;

use stats::compare::Design;
use stats::components::{Advice, Components};
use stats::pool::LogRatio;
use stats::prediction::Place;
use stats::verdict::VerdictKind;
use vocab::Method;

/// One side of a comparison: the trials (or, paired, the per-block means) it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Arm {
    pub n: usize,
    pub mean: f64,
    pub moe: Option<f64>,
    pub moe_pct: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The robust method: the side's median and its distribution-free interval (from
    /// binomial order statistics; none below 6 values at 95 %).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median: Option<Median>,
}

/// A median with its order-statistic interval, at the report's confidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Median {
    pub value: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// A level against the baseline for one metric in one context: its field names are a contract with scripts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ComparisonStat {
    pub factor: String,
    pub baseline: String,
    pub level: String,
    /// The levels of the other factors this comparison holds fixed.
    pub context: IndexMap<String, String>,
    pub metric: String,
    pub unit: String,
    pub design: Design,
    /// How the comparison was computed: `parametric` (means: Fieller, Welch; paired t) or
    /// `robust` (ranks: Hodges–Lehmann with the Mann–Whitney or signed-rank interval); a
    /// robust metric across disjoint boots is `parametric` (docs/statistics.md, The
    /// robust method).
    pub method: Method,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired_by: Option<String>,
    /// Paired: the blocks (levels of `paired_by`) both sides have.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<String>,
    pub baseline_arm: Arm,
    pub level_arm: Arm,
    /// mean_level / mean_baseline (paired: the geometric mean of the ratios).
    pub ratio: f64,
    /// (ratio − 1) as a percentage.
    pub change_pct: f64,
    /// The ratio's interval; `None` when there is none (too few trials, unbounded).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// An exact robust interval's own coverage in %, at least the confidence (its null
    /// distribution is discrete: 96.8 for 5 trials a side at 95 %).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage_pct: Option<f64>,
    pub p_value: Option<f64>,
    /// Holm-adjusted across every comparison of the report.
    pub p_adjusted: Option<f64>,
    pub mde_pct: Option<f64>,
    pub verdict: VerdictKind,
    pub sentence: String,
    /// Inconclusive: about how many more trials per level would settle it.
    pub more_trials: Option<usize>,
    /// The verdict if the outliers set aside were kept, when it differs.
    pub verdict_with_outliers: Option<VerdictKind>,
    /// The verdict if the flagged values (kept by default) were set aside, when it
    /// differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict_without_outliers: Option<VerdictKind>,
    /// The levels came from disjoint boots (or sessions): how many of each, and that the
    /// comparison is of their means (docs/statistics.md, Sessions and boots).
    #[serde(skip_serializing_if = "Option::is_none")]
    // boxed, as `prediction` is: most comparisons have neither, and a report of 10⁵
    // comparisons held 25 MB of room for them
    pub replication: Option<Box<Replication>>,
    /// One side or both two regimes: the means compare mixtures, and the regimes' shares
    /// on each side (docs/statistics.md, Two regimes in a cell).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixtures: Option<Box<Mixtures>>,
    /// One side a single trial, the other measured: where the single figure lies against
    /// the prediction interval of one more trial of the other side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prediction: Option<Box<Prediction>>,
    /// The comparison's log-ratio and its variance, for pooling over contexts; `None`
    /// where it has no interval of its own (too few trials, unbounded, unreplicated).
    #[serde(skip)]
    pub log_ratio: Option<LogRatio>,
    /// The same from every value, outliers set aside or not: what the test of whether
    /// the effect differs between contexts is made from (docs/statistics.md, Effects
    /// across the matrix).
    #[serde(skip)]
    pub log_ratio_all: Option<LogRatio>,
}

impl ComparisonStat {
    /// The cell it holds fixed, `disk=lvm size=5000` (or empty): the words the report and
    /// `compare --fail-on`'s gate name it by.
    pub fn context_text(&self) -> String {
        self.context.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }
}

/// A single trial against the measured trials of the other side of a comparison
/// (docs/statistics.md, A single number against measured runs).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Prediction {
    /// The level with one trial, and its value.
    pub single_level: String,
    pub value: f64,
    /// The level whose trials predict, and how many they are.
    pub measured_level: String,
    pub measured_n: usize,
    /// The prediction interval of one more trial of `measured_level`, at `confidence`.
    pub confidence: f64,
    pub low: f64,
    /// `None` when a harmonic mean's interval has no finite upper end.
    pub high: Option<f64>,
    pub place: Place,
    /// Outside by more than the interval's width.
    pub far: bool,
}

/// A comparison one of whose sides (or both) is two regimes: its means compare mixtures.
/// Every trial of each side is placed below or above the boundary of the regimes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Mixtures {
    /// Whose regimes draw the boundary: `baseline` or `level`.
    pub from: String,
    pub boundary: f64,
    /// The share of each side's trials in the upper regime (above the boundary), and
    /// the level's less the baseline's, fractions.
    pub baseline_upper_share: f64,
    pub level_upper_share: f64,
    pub share_difference: f64,
}

/// The boots (or sessions) a comparison between disjoint ones rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Replication {
    /// `boot` when every session recorded its boot, else `session`.
    pub unit: &'static str,
    pub baseline_units: usize,
    pub level_units: usize,
    /// The trials behind each side, over all its units.
    pub baseline_trials: usize,
    pub level_trials: usize,
    /// The most trials one of the units holds, and the fewest.
    pub trials_per_unit: (usize, usize),
    /// Each side's spread within its units and between them (one-way random-effects
    /// ANOVA, method of moments; docs/statistics.md, Sessions and boots), with 2 or more
    /// units on the side. For a paired comparison, of the log-values less their blocks'
    /// centres.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_components: Option<Components>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level_components: Option<Components>,
    /// How to spread further runs, when the verdict is not settled: how many more units
    /// of each level, how many trials in each, and whether more trials per unit help.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<Advice>,
}

/// One compared level's effect pooled over the contexts (combinations of the other
/// factors) it was compared in, and whether it differs between them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Effect {
    pub factor: String,
    pub baseline: String,
    pub level: String,
    pub metric: String,
    /// The factors whose levels differ between the contexts pooled.
    pub over: Vec<String>,
    /// Contexts pooled, and those left out (no interval of their own).
    pub contexts: usize,
    pub left_out: usize,
    /// The geometric-mean ratio over the contexts, random-effects weighted, and its
    /// Hartung–Knapp interval at `confidence`.
    pub ratio: f64,
    pub change_pct: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub confidence: f64,
    /// Cochran's Q on `contexts − 1` df and its χ² p (which takes the contexts'
    /// variances as known: reported, not used for `differs`), I² in %, τ² (of the
    /// log-ratios).
    pub q: f64,
    pub q_p: f64,
    pub i2_pct: f64,
    pub tau2: f64,
    /// Welch's F test that the effect is the same in every context: its p, and whether
    /// it is below α.
    pub p_differs: f64,
    pub differs: bool,
    pub sentence: String,
}
