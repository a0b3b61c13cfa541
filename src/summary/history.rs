//! What `margin history` answers (`--json`, and the Markdown made of it): the runs of one
//! or more stores in time order, and for each cell and metric the change points across
//! them, each run one observation (docs/statistics.md, Change points across runs).

use indexmap::IndexMap;
use serde::Serialize;

use stats::series::Series;
use vocab::Better;

/// One run: the sessions of one `margin run --label` (or one session without a label).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct HistoryRun {
    /// The label, or the session's id when the run had none.
    pub name: String,
    pub label: Option<String>,
    /// When its first session started (RFC 3339).
    pub started: String,
    pub sessions: usize,
    /// The store it is in.
    pub store: String,
}

/// One cell and metric across the runs that measured it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct HistoryRow {
    pub cell: String,
    /// The cell's levels, as its label reads them (`bs=1M sync=none`).
    pub label: String,
    pub levels: IndexMap<String, String>,
    pub metric: String,
    pub unit: String,
    pub better: Better,
    /// The runs (indices into [`HistoryOutput::runs`]) that measured it, in time order,
    /// and their trials.
    pub runs: Vec<usize>,
    pub trials: Vec<usize>,
    /// The change points across those runs (`after`: an index into `runs`), or why none
    /// was looked for (fewer runs than a change needs).
    #[serde(flatten)]
    pub series: Option<Series>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_analysed: Option<String>,
    /// The newest change is in the worse direction beyond ±δ: what `--fail-on worse` trips.
    pub newest_worse: bool,
    /// For each change point, the labels on either side to run again, and the commands.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rerun: Vec<Rerun>,
}

/// What to run again to tell a change of the runs from a change of their periods: the
/// labels on either side of a change point, each measured anew, back to back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Rerun {
    /// The last run before the change and the first after it.
    pub before: String,
    pub after: String,
    /// `margin run FILE --label BEFORE-again`, then the same for AFTER, then `margin history`.
    pub commands: Vec<String>,
}

/// `margin history`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct HistoryOutput {
    pub runs: Vec<HistoryRun>,
    pub rows: Vec<HistoryRow>,
    /// The practical threshold δ, in per cent, beyond which a worse change trips the gate.
    pub threshold_pct: f64,
    pub alpha: f64,
    /// The experiment's comparisons made in two or more of the runs, side by side and
    /// pooled with the run as the unit (docs/statistics.md, Runs as a level).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub across_runs: Vec<crate::summary::across_runs::RunsComparison>,
}
