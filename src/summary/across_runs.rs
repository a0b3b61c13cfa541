//! The runs as a level (docs/statistics.md, Runs as a level): the same comparison made in
//! several labelled runs, their verdicts side by side and pooled with the run as the unit,
//! or said to depend on the run; and, for one run compared across boots, the period its
//! boots spanned.

use serde::Serialize;
use stats::verdict::VerdictKind;

/// One run: the sessions of one `margin run --label`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RunSpan {
    pub name: String,
    /// When its first session started and its last one ended (RFC 3339).
    pub started: String,
    pub ended: String,
}

/// What the runs of one comparison say together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunsAnswer {
    /// Every run claims the difference in the same direction, the runs do not differ
    /// beyond their noise, and the pooled interval excludes no change.
    Holds,
    /// The runs differ beyond their noise (Welch's test at α), or two of them claim
    /// opposite directions: not pooled into one figure.
    DependsOnTheRun,
    /// No sign that the runs differ, but not every run claims the difference: the pooled
    /// interval is the answer.
    Pooled,
    /// Fewer than two runs have an interval of their own: nothing pooled.
    TooFewRuns,
}

/// One run's verdict of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RunVerdict {
    /// Index into the runs listed beside (`runs` of `across_runs`, or of the history).
    pub run: usize,
    pub ratio: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: VerdictKind,
}

/// One comparison (level vs baseline, metric, context) across the runs that made it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RunsComparison {
    pub factor: String,
    pub baseline: String,
    pub level: String,
    pub metric: String,
    /// The other factors' levels, as a cell's label reads them (`bs=1M`); empty for none.
    pub context: String,
    pub per_run: Vec<RunVerdict>,
    /// Runs with an interval of their own, pooled; the others are listed, not pooled.
    pub runs_pooled: usize,
    /// The pooled ratio (the runs as units: Hartung–Knapp, t on runs − 1 df), present
    /// when two or more runs have an interval, also when the answer is that it depends
    /// on the run (for scripts; the Markdown does not pool those).
    pub ratio: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub confidence: f64,
    /// Welch's test that every run has the same effect, and I² (%).
    pub p_differs: Option<f64>,
    pub i2_pct: Option<f64>,
    pub answer: RunsAnswer,
    pub sentence: String,
}

/// The period one run's boots spanned, and how to replicate it in another.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Period {
    /// The first boot's start and the run's end (RFC 3339).
    pub started: String,
    pub ended: String,
    pub minutes: f64,
    /// `boots` (booted by margin) or `sessions` (the units the comparison was across).
    pub units: String,
    pub sentence: String,
}

/// summary.json's `across_runs`: present when the store holds two or more labelled runs
/// of a comparison, or one run compared across boots.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct AcrossRuns {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunSpan>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<RunsComparison>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
}
