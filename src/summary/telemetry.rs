//! What the hosts did during the trials (`telemetry`): secondary metrics per cell, where
//! the sides of a comparison differ in them, and the comparisons whose tool did not
//! converge.

use indexmap::IndexMap;
use serde::Serialize;

use super::ComparisonStat;

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
