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
    /// A boot `margin bisect` asked for: the label of its bisection (its `boot` numbered
    /// among that bisection's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bisect: Option<String>,
}

/// A host whose adaptive boots stopped at a look because more boots could not settle the
/// comparisons across boots (futility; docs/statistics.md, Adaptive boots).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct BootsStopped {
    pub host: String,
    /// Boots of each combination of levels when it stopped, and the look's place.
    pub blocks: u32,
    pub look: usize,
    pub looks: usize,
    /// `max` of the host's `boots:`.
    pub max: u32,
    /// The fewest boots of each level any unsettled comparison would need (`None`: more
    /// than 100).
    pub needed: Option<usize>,
}

/// A comparison across fixed boots whose trials per boot used the reboots poorly: from
/// its variance components and the measured times of a reboot and of a trial, another
/// number of trials per boot reaches the same standard error for a fraction of the time
/// (docs/statistics.md, Sessions and boots).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct BootDesign {
    pub factor: String,
    pub baseline: String,
    pub level: String,
    pub metric: String,
    /// Trials per boot as run (the mean over both sides' boots), and the cheapest.
    pub trials_per_boot: f64,
    pub better_trials_per_boot: usize,
    /// Both sides' spreads, within a boot and between boots, pooled as variances (%).
    pub within_cv_pct: f64,
    pub between_cv_pct: f64,
    /// Mean seconds from a reboot to the host answering, and mean wall time of a trial.
    pub boot_seconds: f64,
    pub trial_seconds: f64,
    /// The time the design as run takes for a given standard error of the comparison,
    /// over the time the better one takes (at least 1.5 when reported).
    pub cost_ratio: f64,
    /// Boots the better design needs for that standard error, as a multiple of those
    /// the design as run needs.
    pub boots_ratio: f64,
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
