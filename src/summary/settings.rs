//! What a summary was computed with and from: the analysis settings in force, how many
//! trials were analysed or left out, and how each metric is read.

use serde::Serialize;

use stats::outliers::OutlierRule;
use vocab::{Better, MeanKind, Method};

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
