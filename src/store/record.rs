//! The records of the store: one line of `runs.ndjson` per trial, one line of
//! `sessions.ndjson` per session start and end. Field names are the contract of
//! docs/design.md §5 and docs/store.md.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::jsontext::{push_integer, push_string};
use crate::spec::Experiment;
use vocab::{Better, MeanKind};

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

    /// Its name in a record (`ok`, `parse_error`, …), as serde writes it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::ParseError => "parse_error",
            Status::Imported => "imported",
        }
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

impl TrialRecord {
    /// Trial `trial` of cell `cell` (with its `levels`) on `host` in `session`, with only
    /// its `status` known: its cell's first attempt, first in the first round, no warm-up,
    /// started at an unknown time; no exit code, metrics, wall time, raw output, error,
    /// warnings, source, telemetry or flags. The caller sets what it knows
    /// (`TrialRecord { round, ..TrialRecord::new(…) }`): a field the record gains is
    /// added here, once.
    pub fn new(
        trial: String,
        cell: String,
        levels: IndexMap<String, String>,
        host: String,
        session: String,
        status: Status,
    ) -> Self {
        TrialRecord {
            schema: SCHEMA,
            trial,
            cell,
            levels,
            repetition: 1,
            warmup: false,
            host,
            session,
            round: 1,
            position: 1,
            started_at: None,
            status,
            exit_code: None,
            metrics: IndexMap::new(),
            metric_info: IndexMap::new(),
            wall_time: 0.0,
            raw: None,
            error: None,
            warnings: Vec::new(),
            source: None,
            source_hash: None,
            telemetry: None,
            flags: Vec::new(),
        }
    }

    /// The record as one line of the trial log (without its newline), appended to `out`:
    /// serde_json's text of it, byte for byte (a test compares), written field by field
    /// rather than through serde, so that a run's trial costs no serializer state and its
    /// line goes into a buffer kept for the run (`Appender::append_trial`): what margin
    /// does between two trials is held within 5 % of a durable record alone.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"schema\":");
        push_integer(out, self.schema);
        out.extend_from_slice(b",\"trial\":");
        push_string(out, &self.trial);
        out.extend_from_slice(b",\"cell\":");
        push_string(out, &self.cell);
        out.extend_from_slice(b",\"levels\":");
        push_object(out, &self.levels, |out, v| push_string(out, v));
        out.extend_from_slice(b",\"repetition\":");
        push_integer(out, self.repetition);
        out.extend_from_slice(b",\"warmup\":");
        push_bool(out, self.warmup);
        out.extend_from_slice(b",\"host\":");
        push_string(out, &self.host);
        out.extend_from_slice(b",\"session\":");
        push_string(out, &self.session);
        out.extend_from_slice(b",\"round\":");
        push_integer(out, self.round);
        out.extend_from_slice(b",\"position\":");
        push_integer(out, self.position);
        out.extend_from_slice(b",\"started_at\":");
        match &self.started_at {
            Some(at) => push_string(out, at),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"status\":\"");
        out.extend_from_slice(self.status.name().as_bytes());
        out.extend_from_slice(b"\",\"exit_code\":");
        match self.exit_code {
            Some(code) => push_integer(out, code),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"metrics\":");
        push_object(out, &self.metrics, |out, v| push_float(out, *v));
        out.extend_from_slice(b",\"metric_info\":");
        push_object(out, &self.metric_info, |out, info| {
            out.extend_from_slice(b"{\"unit\":");
            push_string(out, &info.unit);
            out.extend_from_slice(match info.better {
                Better::Higher => b",\"better\":\"higher\"",
                Better::Lower => b",\"better\":\"lower\"",
            });
            out.extend_from_slice(match info.mean {
                MeanKind::Arithmetic => b",\"mean\":\"arithmetic\"}",
                MeanKind::Harmonic => b",\"mean\":\"harmonic\"}",
            });
        });
        out.extend_from_slice(b",\"wall_time\":");
        push_float(out, self.wall_time);
        out.extend_from_slice(b",\"raw\":");
        match &self.raw {
            Some(raw) => {
                out.extend_from_slice(b"{\"stdout\":");
                push_string(out, &raw.stdout);
                out.extend_from_slice(b",\"stderr\":");
                push_string(out, &raw.stderr);
                out.push(b'}');
            }
            None => out.extend_from_slice(b"null"),
        }
        if let Some(error) = &self.error {
            out.extend_from_slice(b",\"error\":");
            push_string(out, error);
        }
        if !self.warnings.is_empty() {
            out.extend_from_slice(b",\"warnings\":");
            push_strings(out, &self.warnings);
        }
        if let Some(source) = &self.source {
            out.extend_from_slice(b",\"source\":");
            push_string(out, source);
        }
        if let Some(hash) = &self.source_hash {
            out.extend_from_slice(b",\"source_hash\":");
            push_string(out, hash);
        }
        if let Some(t) = &self.telemetry {
            out.extend_from_slice(b",\"telemetry\":{\"sources\":");
            push_strings(out, &t.sources);
            out.extend_from_slice(b",\"metrics\":");
            push_object(out, &t.metrics, |out, v| push_float(out, *v));
            if let Some(raw) = &t.raw {
                out.extend_from_slice(b",\"raw\":");
                push_string(out, raw);
            }
            if let Some(offset) = t.offset {
                out.extend_from_slice(b",\"offset\":");
                push_integer(out, offset);
            }
            out.push(b'}');
        }
        if !self.flags.is_empty() {
            out.extend_from_slice(b",\"flags\":");
            push_strings(out, &self.flags);
        }
        out.push(b'}');
    }
}

/// `[..]` of JSON strings.
fn push_strings(out: &mut Vec<u8>, texts: &[String]) {
    out.push(b'[');
    for (i, t) in texts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_string(out, t);
    }
    out.push(b']');
}

/// A map as a JSON object, each value written by `value`.
fn push_object<V>(out: &mut Vec<u8>, map: &IndexMap<String, V>, value: impl Fn(&mut Vec<u8>, &V)) {
    out.push(b'{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_string(out, k);
        out.push(b':');
        value(out, v);
    }
    out.push(b'}');
}

fn push_bool(out: &mut Vec<u8>, b: bool) {
    out.extend_from_slice(if b { b"true" } else { b"false" });
}

/// A number as serde_json writes an `f64`: the shortest text that reads back as the same
/// value (`0.0`, `1e-7`), and `null` for what JSON cannot hold (NaN, infinities).
fn push_float(out: &mut Vec<u8>, v: f64) {
    // writing into a Vec cannot fail
    let _ = serde_json::to_writer(&mut *out, &v);
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
    pub what: ProblemKind,
    pub why: String,
}

/// What went wrong with a cell in a session, as the session log and summary.json spell it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProblemKind {
    /// Given up for the session (`run::GaveUp` says why).
    #[serde(rename = "abandoned")]
    Abandoned,
    /// Its `cleanup` failed.
    #[serde(rename = "cleanup failed")]
    CleanupFailed,
}

impl std::fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProblemKind::Abandoned => "abandoned",
            ProblemKind::CleanupFailed => "cleanup failed",
        })
    }
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
    /// Facts about the host (docs/design.md §6.8) and the detected environment levels.
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

impl SessionRecord {
    /// The start of session `session` of `exp` on `host`, now, by this margin, with the
    /// seed of its order and the hash of the experiment file's text; no facts,
    /// environment, problems, outcome or label yet, not an import, workdirs not kept.
    /// The caller sets what it knows (`SessionRecord { import: true,
    /// ..SessionRecord::start(…) }`); the end is the same record with `event: End`.
    pub fn start(session: String, host: String, exp: &Experiment, seed: u64) -> Self {
        SessionRecord {
            schema: SCHEMA,
            session,
            event: Event::Start,
            at: jiff::Timestamp::now().to_string(),
            host,
            experiment: exp.name.clone(),
            margin_version: env!("CARGO_PKG_VERSION").to_string(),
            seed,
            spec_hash: super::spec_hash(&exp.source),
            facts: IndexMap::new(),
            environment: IndexMap::new(),
            abandoned: Vec::new(),
            problems: Vec::new(),
            keep_workdir: false,
            import: false,
            outcome: None,
            label: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn sample() -> TrialRecord {
        let levels =
            [("cmd", "true"), ("bs", "1k")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        TrialRecord {
            repetition: 12,
            round: 3,
            started_at: Some("2026-12-02T01:02:03.456789Z".into()),
            exit_code: Some(0),
            metrics: [("wall_time", 0.000_523_1), ("user_time", 0.0), ("system_time", 1e-6)]
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            metric_info: [
                ("wall_time", Better::Lower, MeanKind::Arithmetic),
                ("rate", Better::Higher, MeanKind::Harmonic),
            ]
            .iter()
            .map(|(k, better, mean)| {
                (k.to_string(), MetricInfo { unit: "s".into(), better: *better, mean: *mean })
            })
            .collect(),
            wall_time: 0.000_523_1,
            raw: Some(RawPaths { stdout: "raw/a.out".into(), stderr: "raw/a.err".into() }),
            telemetry: Some(Telemetry {
                sources: vec!["cpu".into(), "disks".into()],
                metrics: [("cpu_user_pct", 50.0), ("disk_written_bytes:vda", 4096.0)]
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect(),
                raw: Some("raw/s.telemetry".into()),
                offset: Some(123_456_789),
            }),
            ..TrialRecord::new(
                "019ad0b4-5c1e-7e2a-9a51-0c2b6f1f3e11".into(),
                "dc1f0b6928e5f5ed".into(),
                levels,
                "local".into(),
                "019ad0b4-5b00-7000-8000-000000000000".into(),
                Status::Ok,
            )
        }
    }

    fn by_hand(r: &TrialRecord) -> String {
        let mut out = Vec::new();
        r.write_json(&mut out);
        String::from_utf8(out).unwrap()
    }

    /// The trial log's line written by hand is serde_json's, byte for byte, whichever
    /// optional fields a record has.
    #[test]
    fn a_record_written_by_hand_is_serde_jsons_text() {
        let mut r = sample();
        assert_eq!(by_hand(&r), serde_json::to_string(&r).unwrap());
        r.status = Status::ParseError;
        r.exit_code = Some(-3);
        r.error = Some("exit code 1: \"quoted\" \\ back\nnew line \t tab \u{1} ctl é ✓".into());
        r.warnings = vec!["one".into(), "two \"2\"".into()];
        r.flags = vec!["not_converged".into()];
        r.source = Some("data/x.txt".into());
        r.source_hash = Some("0319fd".into());
        r.metrics.insert("nan".into(), f64::NAN);
        r.metrics.insert("inf".into(), f64::INFINITY);
        r.metrics.insert("big".into(), 1.5e300);
        r.metrics.insert("neg".into(), -0.0);
        r.wall_time = 123_456.789;
        assert_eq!(by_hand(&r), serde_json::to_string(&r).unwrap());
        for status in [Status::Ok, Status::Failed, Status::Timeout, Status::ParseError, Status::Imported] {
            r.status = status;
            assert_eq!(by_hand(&r), serde_json::to_string(&r).unwrap());
        }
        r.started_at = None;
        r.exit_code = None;
        r.raw = None;
        r.warmup = true;
        r.levels.clear();
        r.metrics.clear();
        r.metric_info.clear();
        r.telemetry =
            Some(Telemetry { sources: Vec::new(), metrics: IndexMap::new(), raw: None, offset: None });
        assert_eq!(by_hand(&r), serde_json::to_string(&r).unwrap());
        r.telemetry = None;
        assert_eq!(by_hand(&r), serde_json::to_string(&r).unwrap());
        let back: TrialRecord = serde_json::from_str(&by_hand(&sample())).unwrap();
        assert_eq!(back, sample());
    }

    proptest! {
        /// Any text and any number come out as serde_json writes them.
        #[test]
        fn any_text_and_number_is_written_as_serde_json_writes_it(
            key in any::<String>(),
            value in any::<String>(),
            number in any::<f64>(),
            code in any::<i32>(),
            offset in any::<u64>(),
        ) {
            let mut r = sample();
            r.levels.insert(key.clone(), value.clone());
            r.metrics.insert(key.clone(), number);
            r.error = Some(value.clone());
            r.exit_code = Some(code);
            r.wall_time = number;
            if let Some(t) = r.telemetry.as_mut() {
                t.offset = Some(offset);
                t.sources.push(key);
            }
            prop_assert_eq!(by_hand(&r), serde_json::to_string(&r).unwrap());
        }
    }
}
