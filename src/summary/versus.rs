//! What `margin compare` answers (`--json`, and the Markdown made of it): the two sides,
//! a row per compared cell and metric, what could not be compared, how the machines
//! differ, and the gate. [`crate::analyze::versus`] fills it, [`crate::report::versus`]
//! writes it as Markdown.

use std::str::FromStr;

use serde::Serialize;

use super::{AnalysisSettings, ComparisonStat, Warning};
use stats::verdict::VerdictKind;

/// The name of the factor's level the baseline's trials get, and its label in the output.
pub(crate) const BASELINE: &str = "baseline";
/// The level of the candidate's trials.
pub(crate) const CANDIDATE: &str = "candidate";

/// What makes `compare` exit 1 (`--fail-on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// A metric is worse beyond ±δ: verdict `significant` in the worse direction.
    Worse,
    /// A metric changed beyond ±δ, either way: verdict `significant`.
    Change,
}

impl FailOn {
    /// The word `--fail-on` takes.
    pub(crate) fn word(self) -> &'static str {
        match self {
            FailOn::Worse => "worse",
            FailOn::Change => "change",
        }
    }
}

impl FromStr for FailOn {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "worse" => Ok(FailOn::Worse),
            "change" => Ok(FailOn::Change),
            _ => Err(format!("`{s}`: expected `worse` (a metric worse beyond ±δ) or `change` (either way)")),
        }
    }
}

/// What one side holds, for the output.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SideInfo {
    pub(crate) experiment: String,
    pub(crate) experiment_file: String,
    pub(crate) store: String,
    /// The selection as given (`label=v2`), or `None`: every trial of the store.
    pub(crate) selection: Option<String>,
    pub(crate) sessions: Vec<String>,
    pub(crate) labels: Vec<String>,
    /// Measured trials (not warm-ups) selected, of every cell.
    pub(crate) trials: usize,
}

/// A cell both sides have whose trials ran with different rules.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NotComparable {
    /// `bs=1k sync=none`.
    pub(crate) cell: String,
    /// The cell ids of each side: they hash the commands, vars, parser and extractors.
    pub(crate) baseline_ids: Vec<String>,
    pub(crate) candidate_ids: Vec<String>,
}

/// A fact whose values differ between the sides' sessions.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FactDifference {
    pub(crate) fact: String,
    pub(crate) baseline: Vec<String>,
    pub(crate) candidate: Vec<String>,
}

/// A comparison that trips the gate.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Tripped {
    pub(crate) metric: String,
    pub(crate) cell: String,
    pub(crate) change: String,
    pub(crate) verdict: VerdictKind,
}

/// `margin compare --json`: everything the Markdown says.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Versus {
    pub(crate) baseline: SideInfo,
    pub(crate) candidate: SideInfo,
    /// The analysis settings (the baseline experiment's), as in summary.json.
    pub(crate) settings: AnalysisSettings,
    /// A row per compared cell and metric: `level` is `candidate`, the context the cell.
    pub(crate) comparisons: Vec<ComparisonStat>,
    pub(crate) not_comparable: Vec<NotComparable>,
    pub(crate) only_baseline: Vec<String>,
    pub(crate) only_candidate: Vec<String>,
    pub(crate) environment_differences: Vec<FactDifference>,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) fail_on: Option<FailOn>,
    /// The comparisons that trip `fail_on`; a gate fails when there are any.
    pub(crate) failed: Vec<Tripped>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_takes_worse_or_change() {
        assert_eq!("worse".parse::<FailOn>(), Ok(FailOn::Worse));
        assert_eq!("change".parse::<FailOn>().map(FailOn::word), Ok("change"));
        assert!("better".parse::<FailOn>().unwrap_err().contains("`worse`"));
    }
}
