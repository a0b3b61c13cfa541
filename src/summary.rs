//! The summary.json contract: the serialisable types a summary is made of, which the
//! report formats and `margin answer` reads. The analysis pipeline fills them.
//!
//! Relative quantities are fractions inside the statistics core; here, at the boundary
//! to readers, every `*_pct` field is a percentage (5.0 means 5 %).

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;

use crate::stats::compare::Design;
use crate::stats::components::{Advice, Components};
use crate::stats::outliers::OutlierRule;
use crate::stats::pool::LogRatio;
use crate::stats::prediction::Place;
use crate::stats::stability::StabilityFlag;
use crate::stats::verdict::VerdictKind;
use crate::vocab::{Better, MeanKind, Method};

/// A cell that cannot run where margin ran, and what it waits for (computed by the runner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Pending {
    /// The cell's label, `kernel=bare dom0_mem=unlimited`.
    pub cell: String,
    pub reason: String,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Summary {
    pub experiment: String,
    pub description: Option<String>,
    pub settings: AnalysisSettings,
    pub trials: TrialCounts,
    pub metrics: Vec<MetricMeta>,
    #[serde(serialize_with = "json::cells")]
    pub cells: Vec<CellStat>,
    pub comparisons: Vec<ComparisonStat>,
    /// Each compared level's effect over the contexts it was compared in
    /// (docs/statistics.md, Effects across the matrix).
    pub effects: Vec<Effect>,
    pub warnings: Vec<Warning>,
    pub pending: Vec<Pending>,
    pub failures: Vec<TrialFailure>,
    /// What went wrong with cells outside their trials, session by session.
    pub cell_failures: Vec<CellFailure>,
    pub environment: Environment,
    pub reproduce: Reproduce,
    /// What the hosts did during the trials: secondary metrics per cell (docs/design.md §8);
    /// left out when no trial has telemetry or a convergence flag (imports).
    #[serde(skip_serializing_if = "TelemetrySummary::is_empty")]
    pub telemetry: TelemetrySummary,
    /// The boots margin made (docs/experiment-file.md, boots), host by host in the order
    /// they ran, each try of a boot once; left out when it made none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boots: Vec<BootRow>,
    /// Sessions whose trials drifted while they ran (docs/statistics.md, Drift within a
    /// session).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drifts: Vec<DriftStat>,
    /// Sessions whose trials depended on their place in their round (docs/statistics.md,
    /// Order within a round).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub order_effects: Vec<OrderStat>,
}

/// One try of one boot of a host's boot plan, as it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct BootRow {
    pub host: String,
    /// Its place in the host's boot plan, from 1.
    pub boot: u32,
    pub attempt: u32,
    /// The levels it was for: `kernel=xen`.
    pub wanted: String,
    /// `verified`, `rejected`, `lost`, or `requested` (margin stopped while it waited).
    pub outcome: String,
    pub boot_id: Option<String>,
    /// Seconds from the reboot command to ssh answering in the new boot.
    pub ready_seconds: Option<f64>,
    pub why: Option<String>,
    /// Measured trials in that boot.
    pub trials: usize,
}

/// The secondary metrics of telemetry, and the tools' convergence flags, per cell. They
/// never enter a verdict unless `metrics:` names them (then they are main metrics too).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TelemetrySummary {
    /// The compact table's columns: per-trial figures of the whole host (the busiest disk,
    /// the busiest interface), in this order.
    pub columns: Vec<TelemetryColumn>,
    pub cells: Vec<CellTelemetry>,
    /// Where the sides of a comparison differ in a column (docs/design.md §8).
    pub differences: Vec<TelemetryDifference>,
    /// Comparisons with a side whose trials the tool said had not converged.
    pub not_converged: Vec<ComparisonNotConverged>,
}

impl TelemetrySummary {
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TelemetryColumn {
    pub name: String,
    pub unit: String,
    /// A header for the report.
    pub title: String,
}

/// One cell's secondary metrics over its analysed trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CellTelemetry {
    pub cell: String,
    pub label: String,
    pub levels: IndexMap<String, String>,
    /// Analysed trials with telemetry.
    pub trials: usize,
    /// Analysed trials the tool flagged `not_converged`, of `analysed`.
    pub not_converged: usize,
    pub analysed: usize,
    /// Every secondary metric (the columns and each device's, interface's, domain's).
    pub values: IndexMap<String, SecondaryStat>,
}

/// A secondary metric over a cell's trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SecondaryStat {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// The cell is a side of a comparison whose other side differs in this metric.
    pub differs: bool,
}

/// Which comparison a telemetry line is about: a level against the baseline of a factor
/// in a context, for one metric (the fields of [`ComparisonStat`] that name it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ComparisonKey {
    pub factor: String,
    pub baseline: String,
    pub level: String,
    pub context: IndexMap<String, String>,
    pub metric: String,
}

impl ComparisonKey {
    pub fn of(c: &ComparisonStat) -> Self {
        ComparisonKey {
            factor: c.factor.clone(),
            baseline: c.baseline.clone(),
            level: c.level.clone(),
            context: c.context.clone(),
            metric: c.metric.clone(),
        }
    }

    pub fn names(&self, c: &ComparisonStat) -> bool {
        self.factor == c.factor
            && self.baseline == c.baseline
            && self.level == c.level
            && self.context == c.context
            && self.metric == c.metric
    }
}

/// The sides of a comparison differ in a secondary metric (`metric` is the secondary one).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TelemetryDifference {
    #[serde(flatten)]
    pub of: ComparisonKey,
    pub unit: String,
    pub baseline_mean: f64,
    pub level_mean: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ComparisonNotConverged {
    #[serde(flatten)]
    pub of: ComparisonKey,
    /// Flagged trials on the two sides.
    pub trials: usize,
}

/// The analysis settings in force, as a reader wants to see them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct AnalysisSettings {
    /// The confidence the experiment states.
    pub confidence: f64,
    /// The level the intervals are computed at: higher than `confidence` when cells stop
    /// adaptively, so that they still cover at `confidence`.
    pub interval_confidence: f64,
    /// `until: verdict`: the trial counts at which the comparisons were looked at; the
    /// intervals are at 1 − α/K for these K looks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub looks: Vec<u32>,
    /// Adaptive boots (`boots: { until: verdict }`): the boots of each level at which the
    /// comparisons across boots were looked at; the intervals are at 1 − α/K for these K.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boot_looks: Vec<u32>,
    /// The practical-significance band ±δ.
    pub threshold_pct: f64,
    /// The relative margin of error "runs needed" aims at.
    pub target_pct: f64,
    pub outliers: OutlierRule,
    /// How the p-values of the report are adjusted for multiplicity.
    pub p_adjustment: &'static str,
    /// Runs needed for the target margin at a few typical CVs: what a cell of one trial,
    /// whose spread is unknown, would take (docs/statistics.md, One cell).
    pub runs_needed_at_cv: Vec<RunsAtCv>,
}

/// Runs needed for the target margin if the trials varied by `cv_pct`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RunsAtCv {
    pub cv_pct: u32,
    pub runs: usize,
}

/// How many trials the analysis leaves out, and why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TrialCounts {
    /// Measured trials of current cells: their metrics enter the statistics.
    pub analysed: usize,
    /// Warm-up trials (recorded, never analysed).
    pub warmups: usize,
    /// Failed, timed-out or unparsed trials (not warm-ups).
    pub failed: usize,
    /// Records whose cell id the plan no longer has: set aside, the command changed.
    pub stale: usize,
}

/// How a metric is read: unit, direction and mean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct MetricMeta {
    pub name: String,
    pub unit: String,
    pub better: Better,
    pub mean_kind: MeanKind,
    /// How its comparisons are computed: `parametric` or `robust` (docs/statistics.md,
    /// The robust method).
    pub method: Method,
}

/// One cell × metric: its field names are a contract with scripts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CellStat {
    /// The cell id.
    pub cell: String,
    pub label: String,
    pub levels: IndexMap<String, String>,
    pub metric: String,
    pub unit: String,
    pub mean_kind: MeanKind,
    /// Trials kept (outliers set aside are not counted).
    pub n: usize,
    pub mean: f64,
    pub sd: Option<f64>,
    /// sd / mean, a fraction.
    pub cv: Option<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mad: f64,
    pub ci_low: Option<f64>,
    /// `None` also when a harmonic mean's interval has no finite upper end.
    pub ci_high: Option<f64>,
    /// Margin of error ± in the metric's unit.
    pub moe: Option<f64>,
    pub moe_pct: Option<f64>,
    /// n = 2: the t quantile is 12.7 and the interval very wide.
    pub very_wide: bool,
    pub median_ci_low: Option<f64>,
    pub median_ci_high: Option<f64>,
    /// Values left out of the statistics by the outlier rule, in trial order.
    pub set_aside: Vec<f64>,
    /// Values the rule flags but keeps (the cell is too small to set them aside).
    pub flagged: Vec<f64>,
    pub runs_needed: Option<usize>,
    /// Set when reaching the target would take more than this many runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_needed_exceeds: Option<usize>,
    pub flags: Vec<StabilityFlag>,
    /// Every analysed value, in the order the trials started.
    // The analysis' own list, shared: a report on 10⁶ trials held a second copy here.
    #[serde(serialize_with = "shared_values")]
    pub values: Arc<[f64]>,
    pub sessions: usize,
    /// The cell's trials are two regimes (docs/statistics.md, Two regimes in a cell): its
    /// mean mixes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    // boxed: most cells have none
    pub regimes: Option<Box<RegimesStat>>,
}

/// A cell whose trials fall into two regimes, as the test of docs/statistics.md (Two
/// regimes in a cell) found them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RegimesStat {
    /// The split ratio W (the share of the spread left within the two groups) and the
    /// critical value for this n it fell below.
    pub split_ratio: f64,
    pub critical: f64,
    /// The lower regime, then the upper, on the metric's scale.
    pub regimes: Vec<RegimeStat>,
    /// Between the two regimes (the geometric mean of the lower's largest value and the
    /// upper's smallest): where a comparison divides the trials of its sides.
    pub boundary: f64,
    /// The regimes are the cell's sessions (boots): two or more, each of whose trials
    /// all lie in one regime.
    pub by_session: bool,
    /// The cell's other metrics (telemetry included) whose regimes differ: what may
    /// decide the regime.
    pub beside: Vec<RegimeBeside>,
}

/// One regime of a cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RegimeStat {
    /// Positions of its trials among the cell's values (0 is the first), in trial order.
    pub trials: Vec<usize>,
    pub n: usize,
    /// n / the cell's trials, a fraction.
    pub share: f64,
    /// Its mean (of the metric's kind) and interval, and its extremes.
    pub mean: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub min: f64,
    pub max: f64,
}

/// Another metric of the same trials, by regime: its mean in the lower regime's trials
/// and in the upper's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RegimeBeside {
    pub metric: String,
    pub unit: String,
    pub means: Vec<f64>,
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

/// A session in which a metric's trials changed while it ran: the trials of every cell in
/// the order they started, the change after `before` of them (docs/statistics.md, Drift
/// within a session).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct DriftStat {
    pub session: String,
    pub host: String,
    pub metric: String,
    pub trials: usize,
    pub cells: usize,
    /// Trials before the change, and the start time of the first after it.
    pub before: usize,
    pub change_at: String,
    /// After against before, the median over the cells that ran on both sides of the
    /// ratio of their medians, in %.
    pub change_pct: Option<f64>,
    /// The permutation test's p-value, and the level it fell below (1 % over the
    /// session's metrics).
    pub p_value: f64,
    pub alpha: f64,
    /// Every trial of the session, in the order they started: seconds after the first
    /// started, and its value's difference from its cell's median in the session, in %.
    /// For the report's plot of the drift; not in summary.json.
    #[serde(skip)]
    pub points: Vec<(f64, f64)>,
}

/// A session in which a metric's trials depended on their place in their round (the
/// record's `position`): the trials of every cell by place, the change after place
/// `up_to_place` (docs/statistics.md, Order within a round).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct OrderStat {
    pub session: String,
    pub host: String,
    pub metric: String,
    pub trials: usize,
    pub cells: usize,
    /// The most places a round had, and the last place before the change.
    pub places: u32,
    pub up_to_place: u32,
    /// Later places against earlier, the median over the cells at both of the ratio of
    /// their medians, in %.
    pub change_pct: Option<f64>,
    /// The permutation test's p-value, and the level it fell below (1 % over the
    /// session's metrics).
    pub p_value: f64,
    pub alpha: f64,
}

/// A shared list of values written as the list it is (serde writes an `Arc` only with its
/// `rc` feature, which would rebuild every crate that uses serde).
fn shared_values<S: serde::Serializer>(values: &Arc<[f64]>, s: S) -> Result<S::Ok, S::Error> {
    values[..].serialize(s)
}

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
    // comparisons held 25 MB of room for them (issue 17)
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

/// The boots (or sessions) a comparison between disjoint ones rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Replication {
    /// `boot` when every session recorded its boot, else `session`.
    pub unit: &'static str,
    pub baseline_units: usize,
    pub level_units: usize,
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

/// What a warning is about, for scripts that filter them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// Reading the store: a torn record was skipped.
    Store,
    /// Records set aside because their cell is no longer in the plan.
    Stale,
    /// Something a parser noticed in a trial's output.
    Trial,
    /// A cell × metric whose values the statistics cannot use.
    NotAnalysed,
    /// A `compare` entry that could not be carried out.
    Compare,
    /// A compared level never measured with the other factors as at the baseline.
    Confounded,
    DdWithoutSync,
    SmallTestFile,
    /// No session recorded the memory of the host (imported trials), so whether the page
    /// cache could hold the test file is unknown.
    MemoryUnknown,
    FewTrials,
    HighVariation,
    FarFromMean,
    SlowFirstTrial,
    Trend,
    /// A cell's trials are two regimes: its mean mixes them.
    Regimes,
    /// A session's trials changed while it ran.
    Drift,
    /// A session's trials depended on their place in their round.
    Order,
    DisjointTimeWindows,
    /// Trials imported without a time: when the compared levels were measured is unknown.
    UnknownTimes,
    HostsDiffer,
    SingleSession,
    /// Keeping the outliers set aside would change a verdict.
    OutlierSensitivity,
    /// A write throughput the disks did not write: the page cache absorbed it.
    PageCache,
    /// CPU steal time during a host's trials: other guests had the CPU.
    Steal,
    /// The tool said its measurement did not converge (fio steadystate, netperf -I).
    NotConverged,
    /// A gang's members started far apart for the length of its trials: they overlapped
    /// less than the experiment meant (docs/experiment-file.md, gangs).
    GangSkew,
    /// A disk wrote clearly more during a local trial than the trial's own writes and the
    /// pages already dirty could explain: another process wrote to it.
    ForeignWrites,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Warning {
    pub kind: WarningKind,
    pub message: String,
}

impl Warning {
    pub fn new(kind: WarningKind, message: impl Into<String>) -> Self {
        Warning { kind, message: message.into() }
    }
}

/// A trial that did not yield metrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TrialFailure {
    pub cell: String,
    pub trial: String,
    pub repetition: u32,
    pub warmup: bool,
    pub host: String,
    pub session: String,
    pub started_at: Option<String>,
    pub status: &'static str,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
}

/// A cell abandoned by a session, or whose `cleanup` failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CellFailure {
    pub cell: String,
    pub host: String,
    pub session: String,
    /// When the session ended.
    pub at: String,
    /// `abandoned` or `cleanup failed`.
    pub what: String,
    pub why: String,
}

/// The facts of every machine state trials ran in: one column per host and distinct set
/// of facts (a host rebooted into another kernel is two columns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Environment {
    pub columns: Vec<EnvColumn>,
    pub rows: Vec<FactRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct EnvColumn {
    pub host: String,
    pub sessions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct FactRow {
    pub fact: String,
    /// One per column; `None` where that column lacks the fact.
    pub values: Vec<Option<String>>,
    pub differs: bool,
}

/// Everything needed to run the experiment again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Reproduce {
    pub experiment_file: String,
    /// The command line that repeats the runs.
    pub command: String,
    /// The experiment's command templates by key (`setup`, `run`, …).
    pub commands: IndexMap<String, String>,
    /// blake3 of the experiment file as it is now.
    pub spec_hash: String,
    /// The version of margin writing this summary.
    pub margin_version: String,
    pub sessions: Vec<SessionInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SessionInfo {
    pub session: String,
    pub host: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub seed: u64,
    pub spec_hash: String,
    pub margin_version: String,
    /// The experiment file has changed since this session ran.
    pub spec_changed: bool,
    /// The run's label (`margin run --label`), when it was given one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

pub(crate) mod compare;
pub(crate) mod json;
#[cfg(test)]
mod schema;
