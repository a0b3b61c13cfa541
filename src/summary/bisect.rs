//! What `margin bisect` answers (`--json`, and the Markdown made of it): which level of
//! an ordered factor made a metric worse, each step of the bisection with its decision,
//! and what it cost (docs/bisect.md; the method: docs/statistics.md, Bisection).

use indexmap::IndexMap;
use serde::Serialize;

use stats::bisect::Decision;
use vocab::Better;

/// How the bisection ended, as a script reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// The first bad level, right after the last good one.
    Found,
    /// The change lies between `last_good` and `first_bad`; the levels between could not
    /// be decided, or the steps were spent.
    Narrowed,
    /// The ends do not differ beyond ±δ.
    NoRegression,
    /// The "bad" end is better than the good one beyond ±δ.
    Improvement,
    /// The ends' comparison was not settled within its budget.
    Inconclusive,
}

impl Verdict {
    /// Whether the bisection located a change (exit 0; the others exit 1).
    pub(crate) fn located(self) -> bool {
        matches!(self, Verdict::Found | Verdict::Narrowed)
    }
}

/// One test of the bisection: the ends' comparison first (`level` null), then each step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BisectStep {
    /// The level tested; `None` for the ends' comparison.
    pub level: Option<String>,
    /// The good and bad ends it was measured against.
    pub good: String,
    pub bad: String,
    pub decision: Decision,
    /// Units of this test, of every level: trials, or across boots boots.
    pub units: u32,
    /// Trials of this test, of every level.
    pub trials: u32,
    /// Across boots: the boots of this test, of every level (`None` within a session).
    pub boots: Option<u32>,
    pub looks: u32,
    /// The confidence of each look's interval.
    pub confidence: f64,
    /// At the last look, the interval of the tested level's ratio to the good end (for
    /// the ends' comparison: bad / good), and to the bad end.
    pub against_good: Option<(f64, f64)>,
    pub against_bad: Option<(f64, f64)>,
}

/// `margin bisect`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BisectOutput {
    pub experiment: String,
    pub factor: String,
    pub metric: String,
    pub unit: String,
    pub better: Better,
    /// The other factors' levels the bisected cells have (`--set`, or their only level).
    pub fixed: IndexMap<String, String>,
    /// The label of the bisection's sessions in the store.
    pub label: String,
    pub verdict: Verdict,
    /// The ends asked for (`--good`, `--bad`).
    pub good: String,
    pub bad: String,
    /// For found and narrowed: the change lies between these.
    pub last_good: Option<String>,
    pub first_bad: Option<String>,
    /// For found and narrowed: first bad / last good; otherwise bad / good. With its
    /// interval at `confidence`; `None` when it has no bounded one.
    pub ratio: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub confidence: f64,
    /// δ, in per cent.
    pub threshold_pct: f64,
    pub steps: Vec<BisectStep>,
    /// Trials the bisection used, and the levels they measured, of `levels` from the
    /// good end to the bad one.
    pub trials: u64,
    /// Across boots: the boots whose means were the units, and the trials of each
    /// (`None` within a session).
    pub boots: Option<u64>,
    pub trials_per_boot: Option<u32>,
    pub levels_measured: usize,
    pub levels: usize,
    /// The time the bisection took, in seconds: each of its sessions from its start to
    /// its end (or its last trial's end, when killed), and across boots each of its boots
    /// from the reboot command to the verdict on the booted host. Time between a killed
    /// bisection and the command run again is not counted.
    pub seconds: f64,
    /// Labelled trials of the bisected cells that were not what the bisection asked for
    /// when replayed (left in the store, not used).
    pub unused_trials: usize,
}

/// A bisection the store holds that has not answered yet (stopped, or still running):
/// where it stands, for the report's Bisect section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BisectUnderWay {
    pub factor: String,
    pub good: String,
    pub bad: String,
    pub label: String,
    /// The tests decided so far (the ends' comparison first).
    pub decided: usize,
    /// Trials so far, and across boots the boots whose means were units.
    pub trials: u64,
    pub boots: Option<u64>,
    /// The level it measures next.
    pub next: String,
    /// As [`BisectOutput::seconds`].
    pub seconds: f64,
    /// The command that goes on with it.
    pub command: String,
}
