//! What the runs did besides the measured trials: the boots margin made (`boots`), the
//! trials that yielded no metrics (`failures`), the cells given up or whose cleanup failed
//! (`cell_failures`), and the cells that wait for another host (`pending`).

use serde::Serialize;

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
    #[cfg_attr(test, schemars(with = "String"))]
    pub what: crate::store::ProblemKind,
    pub why: String,
}

/// A cell that cannot run where margin ran, and what it waits for (computed by the runner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Pending {
    /// The cell's label, `kernel=bare dom0_mem=unlimited`.
    pub cell: String,
    pub reason: String,
}
