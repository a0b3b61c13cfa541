//! Sessions whose trials changed while they ran (`drifts`) or depended on their place in
//! their round (`order_effects`).

use serde::Serialize;

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
