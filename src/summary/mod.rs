//! The summary.json contract: the serialisable types a summary is made of, which the
//! report formats and `margin answer` reads. The analysis pipeline fills them.
//!
//! Relative quantities are fractions inside the statistics core; here, at the boundary
//! to readers, every `*_pct` field is a percentage (5.0 means 5 %).
//!
//! Every type summary.json serialises is in this folder, [`Summary`] (the file itself,
//! here) and one file per part of it: [`settings`] (the settings in force, the trial
//! counts, the metrics), [`cells`] (a cell × metric, its regimes), [`comparisons`] (a
//! level against the baseline, its sides, the effects pooled over contexts),
//! [`warnings`], [`telemetry`] (what the hosts did), [`runs`] (boots, failures, pending
//! cells), [`drifts`] (sessions whose trials drifted or depended on their order),
//! [`environment`] (the machines' facts, how to run it again). Every one is re-exported
//! here: `crate::summary::CellStat`. Beside them: [`json`] writes the file, `schema.rs`
//! (tests) derives its JSON Schema, [`versus`] is what `margin compare` answers, [`across_runs`] the runs as a level.

pub(crate) mod across_runs;
pub(crate) mod bisect;
mod cells;
mod comparisons;
mod drifts;
mod environment;
pub(crate) mod history;
pub(crate) mod json;
mod runs;
#[cfg(test)]
mod schema;
mod series;
mod settings;
mod telemetry;
pub(crate) mod versus;
mod warnings;

pub(crate) use cells::{
    CellStat, CellUnits, RegimeAfter, RegimeBefore, RegimeBeside, RegimeStat, RegimesStat, UnitMean,
};
pub(crate) use comparisons::{Arm, ComparisonStat, Effect, Median, Mixtures, Prediction, Replication};
pub(crate) use drifts::{DriftStat, OrderStat};
pub(crate) use environment::{EnvColumn, Environment, FactRow, Reproduce, SessionInfo};
pub(crate) use runs::{BootDesign, BootRow, BootsStopped, CellFailure, Pending, TrialFailure};
pub(crate) use series::SeriesStat;
pub(crate) use settings::{AnalysisSettings, MetricMeta, RunsAtCv, TrialCounts};
pub(crate) use telemetry::{
    CellTelemetry, ComparisonKey, ComparisonNotConverged, SecondaryStat, TelemetryColumn,
    TelemetryDifference, TelemetrySummary,
};
pub(crate) use warnings::{Warning, WarningKind};

use serde::Serialize;

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Summary {
    pub experiment: String,
    pub description: Option<String>,
    pub settings: AnalysisSettings,
    pub trials: TrialCounts,
    pub metrics: Vec<MetricMeta>,
    #[serde(serialize_with = "json::left_out")]
    pub cells: Vec<CellStat>,
    #[serde(serialize_with = "json::left_out")]
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
    /// Hosts whose adaptive boots stopped because more boots could not settle it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boots_stopped: Vec<BootsStopped>,
    /// Comparisons across fixed boots whose trials per boot used the reboots poorly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boot_design: Vec<BootDesign>,
    /// The bisections the store holds (`margin bisect`, docs/bisect.md), replayed: the
    /// report's Bisect section; not in summary.json (`margin bisect --json` has each).
    #[serde(skip)]
    pub(crate) bisections: Vec<bisect::BisectOutput>,
    /// The bisections it holds that have not answered yet: where each stands.
    #[serde(skip)]
    pub(crate) bisections_under_way: Vec<bisect::BisectUnderWay>,
    /// Sessions whose trials drifted while they ran (docs/statistics.md, Drift within a
    /// session).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drifts: Vec<DriftStat>,
    /// Sessions whose trials depended on their place in their round (docs/statistics.md,
    /// Order within a round).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub order_effects: Vec<OrderStat>,
    /// The series the experiment asks for (`analysis.series`): each metric along each
    /// series factor, in each context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<SeriesStat>,
    /// The same comparisons in several labelled runs, side by side and pooled with the
    /// run as the unit; or one run's period (docs/statistics.md, Runs as a level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across_runs: Option<across_runs::AcrossRuns>,
}
