//! The records of the store: one line of `runs.ndjson` per trial, one line of
//! `sessions.ndjson` per session start and end. Field names are the contract of DESIGN.md §5.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::vocab::{Better, MeanKind};

/// Version of the record layout; bumped on any incompatible change.
pub const SCHEMA: u32 = 1;

/// What became of a trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Ran, exited 0, and the parser found its metrics.
    Ok,
    /// Exited non-zero, was killed by a signal, or a hook around it failed.
    Failed,
    /// Killed when the timeout expired.
    Timeout,
    /// Ran fine but the parser found nothing it expected.
    ParseError,
    /// Added by `margin import` from output captured elsewhere.
    Imported,
}

impl Status {
    /// Whether the trial's metrics enter the statistics.
    pub fn is_measurement(self) -> bool {
        matches!(self, Status::Ok | Status::Imported)
    }
}

/// Unit and interpretation of a metric, as the parser or the experiment declared them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricInfo {
    /// Canonical unit: `B/s`, `bit/s`, `s`, `op/s`, `B`, `%`, or empty for a count.
    pub unit: String,
    pub better: Better,
    pub mean: MeanKind,
}

/// The saved output of a trial, relative to the store directory. A stream that printed
/// nothing has no file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawPaths {
    pub stdout: String,
    pub stderr: String,
}

/// What the host did during a trial (docs/design.md §6.9): the counters read right before
/// and right after it, kept raw, and the secondary metrics derived from them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Telemetry {
    /// The `monitor:` sources that were read (`cpu`, `disks`, `vmstat`, `net`, `xl`).
    pub sources: Vec<String>,
    /// Secondary metric → value (`cpu_steal_pct`, `disk_written_bytes:vda`); a device or
    /// interface that moved nothing has no entry.
    #[serde(default)]
    pub metrics: IndexMap<String, f64>,
    /// The snapshots as read: the session's file, relative to the store
    /// (`raw/<session>.telemetry`), and where the trial's block starts in it (a line
    /// `margin-telemetry trial <trial>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// One trial, appended to `runs.ndjson` and made durable before the next one starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    pub schema: u32,
    /// Unique id (UUID v7: sorts by start time).
    pub trial: String,
    /// The cell id of the plan that ran it.
    pub cell: String,
    /// The cell's levels, key → YAML spelling, in declared order.
    pub levels: IndexMap<String, String>,
    /// 1-based attempt number within the cell (warm-ups are numbered apart); unique per
    /// (cell, warmup) across sessions.
    pub repetition: u32,
    pub warmup: bool,
    pub host: String,
    pub session: String,
    /// The round of the session it ran in (1-based) and its place in that round.
    pub round: u32,
    pub position: u32,
    /// RFC 3339, UTC. `None` (JSON null) for a trial imported without `--started-at`:
    /// when it was measured is unknown, and the time of the import is not that time.
    pub started_at: Option<String>,
    pub status: Status,
    pub exit_code: Option<i32>,
    /// Metric name → value in canonical units; includes `wall_time`, and `user_time` /
    /// `system_time` where the OS reports them.
    pub metrics: IndexMap<String, f64>,
    #[serde(default)]
    pub metric_info: IndexMap<String, MetricInfo>,
    /// Seconds, from a monotonic clock.
    pub wall_time: f64,
    pub raw: Option<RawPaths>,
    /// Why the trial failed, or what the parser found instead of its metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// For imported trials: the file it came from and the blake3 of its content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    /// The host's counters around the trial, when `monitor:` selected any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// What the tool said of its own measurement: `not_converged` (fio's steady state not
    /// attained, netperf's confidence not achieved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// A session starting or ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    Start,
    End,
}

/// Something that went wrong with a cell in a session, outside its trials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellProblem {
    /// The cell's id.
    pub cell: String,
    /// `abandoned` or `cleanup failed`.
    pub what: String,
    pub why: String,
}

/// The fact naming the boot a session ran in (`/proc/sys/kernel/random/boot_id`): two
/// sessions of one boot are one unit of the analysis (docs/statistics.md).
pub const BOOT_ID: &str = "boot_id";

/// One line of `sessions.ndjson`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub schema: u32,
    pub session: String,
    pub event: Event,
    pub at: String,
    pub host: String,
    pub experiment: String,
    pub margin_version: String,
    /// The seed of the interleaved order.
    pub seed: u64,
    /// blake3 of the experiment file's text.
    pub spec_hash: String,
    /// Facts about the host (DESIGN.md §6) and the detected environment levels.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub facts: IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub environment: IndexMap<String, String>,
    /// At the end: cells abandoned after too many failures, and why the session ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub abandoned: Vec<String>,
    /// At the end: what went wrong with cells beyond their trials (an abandoned cell and
    /// why, a `cleanup` that failed), which no trial record holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<CellProblem>,
    /// The run was asked to keep its workdirs (`--keep-workdir`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_workdir: bool,
    /// A session of `margin import`, which runs nothing (and so abandons nothing).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub import: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The label the run was given (`margin run --label v2`), for `margin compare` to
    /// select by; absent in stores written before labels, and when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}
