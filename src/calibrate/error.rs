//! Why the calibration suite did not run: what `margin calibrate` was asked for, or a
//! scenario that margin's own loader refuses.

use crate::diag::Diagnostics;
use stats::StatsError;

/// Why `margin calibrate` ran nothing, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The filters name no scenario, check or suite; the names that exist.
    #[error("no scenario matches {}; the scenarios are: {}", filters.join(", "), names.join(", "))]
    NoMatch { filters: Vec<String>, names: Vec<String> },
    #[error("--experiments must be at least 1")]
    NoExperiments,
    /// A scenario's or a check's experiment file (`what`: `scenario NAME`, `check NAME`)
    /// does not load: a fault of the suite, not of the input.
    #[error("{what}: its experiment file: {source}")]
    Experiment { what: String, source: Diagnostics },
    /// The regime test refused a simulated cell.
    #[error(transparent)]
    Stats(#[from] StatsError),
}
