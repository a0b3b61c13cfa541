//! A warning (`warnings`): what it is about, for scripts that filter them, and its words.

use serde::Serialize;

/// What a warning is about, for scripts that filter them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// Reading the store: a torn record was skipped.
    Store,
    /// Records set aside because their cell is no longer in the plan.
    Stale,
    /// Something a parser noticed in a trial's output.
    Trial,
    /// A cell × metric whose values the statistics cannot use.
    NotAnalysed,
    /// A `compare` entry that could not be carried out.
    Compare,
    /// A compared level never measured with the other factors as at the baseline.
    Confounded,
    DdWithoutSync,
    SmallTestFile,
    /// No session recorded the memory of the host (imported trials), so whether the page
    /// cache could hold the test file is unknown.
    MemoryUnknown,
    FewTrials,
    HighVariation,
    FarFromMean,
    SlowFirstTrial,
    Trend,
    /// A cell's trials are two regimes: its mean mixes them.
    Regimes,
    /// A session's trials changed while it ran.
    Drift,
    /// A session's trials depended on their place in their round.
    Order,
    DisjointTimeWindows,
    /// Trials imported without a time: when the compared levels were measured is unknown.
    UnknownTimes,
    HostsDiffer,
    SingleSession,
    /// Keeping the outliers set aside would change a verdict.
    OutlierSensitivity,
    /// A write throughput the disks did not write: the page cache absorbed it.
    PageCache,
    /// CPU steal time during a host's trials: other guests had the CPU.
    Steal,
    /// The tool said its measurement did not converge (fio steadystate, netperf -I).
    NotConverged,
    /// A gang's members started far apart for the length of its trials: they overlapped
    /// less than the experiment meant (docs/experiment-file.md, gangs).
    GangSkew,
    /// A disk wrote clearly more during a local trial than the trial's own writes and the
    /// pages already dirty could explain: another process wrote to it.
    ForeignWrites,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Warning {
    pub kind: WarningKind,
    pub message: String,
}

impl Warning {
    pub fn new(kind: WarningKind, message: impl Into<String>) -> Self {
        Warning { kind, message: message.into() }
    }
}
