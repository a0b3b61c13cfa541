//! The trial log held column-wise: what analysis, progress and status need of each
//! record, with the text that repeats (cell ids, hosts, sessions, metric names, units)
//! stored once. A million records as [`TrialRecord`]s take gigabytes; here, about 200 MB.
//!
//! The log is read a block at a time; each block's lines are parsed in parallel into
//! chunks that borrow from the block, and the chunks are appended in order.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use indexmap::IndexMap;
use serde::de::IgnoredAny;

use super::ids::Ids;
use super::line::{Info, Line, Pairs, TelemetryLine, Text};
use super::names::{Name, Names};
use super::record::{MetricInfo, Status, TrialRecord};
use super::secondary::SecondaryMetrics;
use crate::plan::Plan;
use vocab::MeanKind;

/// The plan's index of the cell each name is the id of, by the name's number.
#[derive(Debug, Clone)]
pub struct CellIndex(Vec<u32>);

/// Not a cell of the plan.
const NONE: u32 = u32::MAX;

impl CellIndex {
    /// The plan's index of the cell `name` is the id of, if it is one of the plan's and
    /// some record names it.
    pub fn get(&self, name: Name) -> Option<usize> {
        self.0.get(name.index()).filter(|&&i| i != NONE).map(|&i| i as usize)
    }

    /// A slot for each cell of the plan the records name, numbered from 0, by the name's
    /// number: two spellings of one id (`00ab`, `ab`) share their cell's slot. For
    /// gathering per cell in a vector rather than a map. Also each slot's cell: its index
    /// in the plan.
    fn slots(&self) -> (Vec<Option<usize>>, Vec<usize>) {
        let mut slot_of: HashMap<u32, usize> = HashMap::new();
        let mut cells = Vec::new();
        let slots = self
            .0
            .iter()
            .map(|&i| {
                (i != NONE).then(|| {
                    *slot_of.entry(i).or_insert_with(|| {
                        cells.push(i as usize);
                        cells.len() - 1
                    })
                })
            })
            .collect();
        (slots, cells)
    }
}

/// The trials of each cell of the plan that the records name, in log order, one cell
/// after another ([`Trials::by_cell`]). Two spellings of one id (`00ab`, `ab`) are one
/// cell. Each cell here has at least one trial.
#[derive(Debug, Clone)]
pub struct ByCell {
    /// The plan's index of each cell.
    cells: Vec<usize>,
    /// Where each cell's trials start in `order` (and, one past the last, where they end).
    start: Vec<usize>,
    order: Vec<u32>,
    /// Records of cell ids the plan does not have (an older version of the commands).
    pub outside: usize,
}

impl ByCell {
    /// How many cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The `k`th cell: its index in the plan, and its trials (indices into the columns)
    /// in log order.
    pub fn get(&self, k: usize) -> (usize, &[u32]) {
        (self.cells[k], &self.order[self.start[k]..self.start[k + 1]])
    }
}

/// A trial's start time in microseconds since the epoch, or none (not recorded, or not a
/// time), in 8 bytes where an `Option<i64>` takes 16: a million trials' start times are
/// held by the trial columns and again by the analysis' rows. Ordered by time, none last:
/// the order a cell's values are analysed in (docs/statistics.md, stability).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Started(i64);

impl Started {
    /// No start time: `i64::MIN` µs is no time jiff reads (its range ends at year −9999,
    /// about −3.8 × 10¹⁷ µs).
    pub const NONE: Started = Started(i64::MIN);

    /// `None` is [`Started::NONE`]; so is `i64::MIN`, which no record's time reads as.
    pub fn new(micros: Option<i64>) -> Started {
        micros.map_or(Started::NONE, Started)
    }

    /// The time, µs since the epoch.
    pub fn get(self) -> Option<i64> {
        (self != Started::NONE).then_some(self.0)
    }

    /// One key that orders by time with none last: the sign bit flipped makes the times'
    /// order the unsigned one, and none (then 0) wraps around to the top.
    fn key(self) -> u64 {
        ((self.0 as u64) ^ (1 << 63)).wrapping_sub(1)
    }
}

impl Ord for Started {
    fn cmp(&self, other: &Started) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Started {
    fn partial_cmp(&self, other: &Started) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// What a trial that yielded no metrics left to say about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// Its index in [`Trials`].
    pub trial: usize,
    /// Its id, when the table was read without the ids of the others
    /// ([`Needed::Report`]); otherwise it is [`Trials::id`].
    pub id: Option<String>,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    pub started_at: Option<String>,
}

/// Which of the trial columns a read of the log keeps (docs/store.md, Where the cells
/// stand, and Reading for a report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needed {
    /// Every column.
    All,
    /// Those a cell's progress needs ([`Trials::keep_progress_columns`]).
    Progress,
    /// Those a report reads ([`Trials::keep_report_columns`]).
    Report,
}

/// The trial log, one entry per record in log order in each column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trials {
    pub names: Names,
    pub cell: Vec<Name>,
    pub host: Vec<Name>,
    pub session: Vec<Name>,
    pub status: Vec<Status>,
    pub warmup: Vec<bool>,
    pub repetition: Vec<u32>,
    pub round: Vec<u32>,
    /// The trial's place in its round (the record's `position`).
    pub position: Vec<u32>,
    /// Start time, µs since the epoch; none when not recorded (an import without
    /// `--started-at`) or unreadable.
    pub started: Vec<Started>,
    pub wall_time: Vec<f64>,
    /// Trial ids, mostly as a UUID's 16 bytes.
    pub(super) ids: Ids,
    /// Trial i's metrics are rows `row_end[i - 1]..row_end[i]` of `metric`, `value`, `unit`.
    pub(super) row_end: Vec<usize>,
    pub metric: Vec<Name>,
    pub value: Vec<f64>,
    /// The unit the record gave the metric (empty when it gave none).
    pub unit: Vec<Name>,
    /// The mean the record said suits the metric (arithmetic when it said none).
    pub mean: Vec<MeanKind>,
    /// Every metric in the order the records first report it, with the unit and
    /// interpretation of the first record that described it.
    pub metrics: IndexMap<Name, Option<MetricInfo>>,
    /// The trials that yielded no metrics, in log order.
    pub failed: Vec<Failed>,
    /// What the parsers noticed, each distinct message once with how many trials said it.
    pub warnings: IndexMap<String, usize>,
    /// The secondary metrics of telemetry (docs/design.md §6.9), of every trial (none
    /// for most), in log order.
    pub secondary: SecondaryMetrics,
    /// The `monitor:` sources read around each trial, joined by commas (empty: none).
    pub monitored: Vec<Name>,
    /// The flags the tools gave trials (`not_converged`), in log order.
    pub flags: Vec<(usize, Name)>,
}

impl Trials {
    pub fn len(&self) -> usize {
        self.cell.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cell.is_empty()
    }

    /// The id of trial `i` (of a table with every column: [`Needed::All`]).
    pub fn id(&self, i: usize) -> Cow<'_, str> {
        self.ids.get(i)
    }

    /// The rows of trial `i`'s metrics.
    pub fn rows(&self, i: usize) -> Range<usize> {
        let start = if i == 0 { 0 } else { self.row_end[i - 1] };
        start..self.row_end[i]
    }

    /// The rows of the metrics of trials `range`.
    pub(super) fn rows_of(&self, range: Range<usize>) -> Range<usize> {
        match range.is_empty() {
            true => 0..0,
            false => self.rows(range.start).start..self.row_end[range.end - 1],
        }
    }

    /// Each cell's trials, cell by cell ([`ByCell`]): a count of each cell's trials, then
    /// one pass that puts each trial's index in its cell's place (a counting sort). The
    /// trials of a cell lie far apart in the log (interleaved): a cell's work then reads
    /// its own trials, on every core, where appending each trial's values to its cell's
    /// lists as the log went wrote to thousands of lists at once, on one core.
    pub fn by_cell(&self, plan: &Plan) -> ByCell {
        let (slot, cells) = self.cell_index(plan).slots();
        let slots = cells.len();
        let mut start = vec![0; slots + 1];
        let mut outside = 0;
        for &cell in &self.cell {
            match slot[cell.index()] {
                Some(s) => start[s + 1] += 1,
                None => outside += 1,
            }
        }
        for s in 0..slots {
            start[s + 1] += start[s];
        }
        let mut next = start[..slots].to_vec();
        let mut order = vec![0; start[slots]];
        for (i, &cell) in self.cell.iter().enumerate() {
            if let Some(s) = slot[cell.index()] {
                order[next[s]] = u32::try_from(i).expect("fewer than 4 billion trials");
                next[s] += 1;
            }
        }
        ByCell { cells, start, order, outside }
    }

    /// The plan's index of each cell id the records name (an id the plan does not have
    /// belongs to an older version of the commands).
    pub fn cells_in(&self, plan: &Plan) -> HashMap<Name, usize> {
        let index = self.cell_index(plan);
        (0..self.names.len()).filter_map(|n| Some((Name::new(n), index.get(Name::new(n))?))).collect()
    }

    /// [`Trials::cells_in`] as a lookup by the name's number, for a pass over every
    /// record: no hashing per record (a store may hold millions).
    pub fn cell_index(&self, plan: &Plan) -> CellIndex {
        let mut seen = vec![false; self.names.len()];
        for &cell in &self.cell {
            seen[cell.index()] = true;
        }
        let index: HashMap<u64, usize> = plan.cells.iter().enumerate().map(|(i, c)| (c.id.0, i)).collect();
        let of = |n: usize| -> Option<u32> {
            let id = u64::from_str_radix(self.names.get(Name::new(n)), 16).ok()?;
            index.get(&id).and_then(|&i| u32::try_from(i).ok())
        };
        CellIndex(
            seen.iter()
                .enumerate()
                .map(|(n, &seen)| if seen { of(n).unwrap_or(NONE) } else { NONE })
                .collect(),
        )
    }

    /// The column-wise form of whole records.
    pub fn from_records(records: &[TrialRecord]) -> Trials {
        let mut trials = Trials::default();
        for r in records {
            trials.push_record(r);
        }
        trials
    }

    /// Append a whole record.
    pub fn push_record(&mut self, r: &TrialRecord) {
        let line = Line {
            trial: Text(Cow::Borrowed(&r.trial)),
            cell: Text(Cow::Borrowed(&r.cell)),
            repetition: r.repetition,
            warmup: r.warmup,
            host: Text(Cow::Borrowed(&r.host)),
            session: Text(Cow::Borrowed(&r.session)),
            round: r.round,
            started_at: r.started_at.as_deref().map(|s| Text(Cow::Borrowed(s))),
            status: r.status,
            exit_code: r.exit_code,
            metrics: Pairs(r.metrics.iter().map(|(k, v)| (Text(Cow::Borrowed(k.as_str())), *v)).collect()),
            metric_info: Pairs(
                r.metric_info
                    .iter()
                    .map(|(k, i)| {
                        let info =
                            Info { unit: Text(Cow::Borrowed(&i.unit)), better: i.better, mean: i.mean };
                        (Text(Cow::Borrowed(k.as_str())), info)
                    })
                    .collect(),
            ),
            wall_time: r.wall_time,
            error: r.error.as_deref().map(|s| Text(Cow::Borrowed(s))),
            warnings: r.warnings.iter().map(|w| Text(Cow::Borrowed(w.as_str()))).collect(),
            telemetry: r.telemetry.as_ref().map(|t| TelemetryLine {
                sources: t.sources.iter().map(|s| Text(Cow::Borrowed(s.as_str()))).collect(),
                metrics: Pairs(
                    t.metrics.iter().map(|(k, v)| (Text(Cow::Borrowed(k.as_str())), *v)).collect(),
                ),
            }),
            flags: r.flags.iter().map(|f| Text(Cow::Borrowed(f.as_str()))).collect(),
            _schema: r.schema,
            _levels: IgnoredAny,
            position: r.position,
            _raw: None,
        };
        self.push(line);
    }

    /// Parse one line of `runs.ndjson` into the columns; `Err` leaves them as they were.
    pub fn push_json(&mut self, line: &[u8]) -> serde_json::Result<()> {
        // read as text once checked whole: from bytes, serde_json checks each string of the
        // line on its own (60-odd a record, a tenth of the parse); a line that is
        // not UTF-8 is read as bytes, for the error a torn line has always been told by
        let line: Line<'_> = match std::str::from_utf8(line) {
            Ok(text) => serde_json::from_str(text)?,
            Err(_) => serde_json::from_slice(line)?,
        };
        self.push(line);
        Ok(())
    }

    fn push(&mut self, line: Line<'_>) {
        let index = self.len();
        self.cell.push(self.names.intern(&line.cell.0));
        self.host.push(self.names.intern(&line.host.0));
        self.session.push(self.names.intern(&line.session.0));
        self.status.push(line.status);
        self.warmup.push(line.warmup);
        self.repetition.push(line.repetition);
        self.round.push(line.round);
        self.position.push(line.position);
        let started = line.started_at.as_ref().map(|t| &*t.0);
        self.started.push(Started::new(
            started.and_then(|t| t.parse::<jiff::Timestamp>().ok()).map(|t| t.as_microsecond()),
        ));
        self.wall_time.push(line.wall_time);
        self.ids.push(&line.trial.0);
        for (name, value) in line.metrics.0 {
            let metric = self.names.intern(&name.0);
            let info = line.metric_info.0.iter().find(|(k, _)| k.0 == name.0).map(|(_, i)| i);
            let unit = self.names.intern(info.map_or("", |i| &i.unit.0));
            self.metric.push(metric);
            self.value.push(value);
            self.unit.push(unit);
            self.mean.push(info.map(|i| i.mean).unwrap_or_default());
            let known = self.metrics.entry(metric).or_insert(None);
            if known.is_none()
                && let Some(i) = info
            {
                *known = Some(MetricInfo { unit: i.unit.0.to_string(), better: i.better, mean: i.mean });
            }
        }
        self.row_end.push(self.metric.len());
        if !line.status.is_measurement() {
            self.failed.push(Failed {
                trial: index,
                id: None,
                exit_code: line.exit_code,
                error: line.error.map(|e| e.0.into_owned()),
                started_at: started.map(str::to_owned),
            });
        }
        let monitored = match &line.telemetry {
            Some(t) => t.sources.iter().map(|s| &*s.0).collect::<Vec<&str>>().join(","),
            None => String::new(),
        };
        self.monitored.push(self.names.intern(&monitored));
        let (names, values): (Vec<Name>, Vec<f64>) = match line.telemetry {
            Some(t) => {
                t.metrics.0.into_iter().map(|(name, value)| (self.names.intern(&name.0), value)).unzip()
            }
            None => Default::default(),
        };
        self.secondary.push(&names, &values);
        for flag in line.flags {
            let flag = self.names.intern(&flag.0);
            self.flags.push((index, flag));
        }
        for w in line.warnings {
            match self.warnings.get_mut(&*w.0) {
                Some(n) => *n += 1,
                None => {
                    self.warnings.insert(w.0.into_owned(), 1);
                }
            }
        }
    }

    /// Keeps only the columns a cell's progress is made of (`Progress::of`, and a run's
    /// start, which counts a label's sessions: cell, session, status, warm-up, repetition,
    /// start, wall time, and each trial's metrics with their values and means; the names,
    /// failures and warnings): the others are emptied. What
    /// `runs.columns` gives when only these are read (`columns::read`), and what a read
    /// that appended the log's last lines to those makes of its table, so that no column
    /// holds only some trials.
    pub(super) fn keep_progress_columns(&mut self) {
        self.host = Vec::new();
        self.round = Vec::new();
        self.position = Vec::new();
        self.ids = Ids::default();
        self.unit = Vec::new();
        self.secondary = SecondaryMetrics::default();
        self.monitored = Vec::new();
        self.flags = Vec::new();
    }

    /// Keeps the columns `needed` says.
    pub(super) fn keep(&mut self, needed: Needed) {
        match needed {
            Needed::All => {}
            Needed::Progress => self.keep_progress_columns(),
            Needed::Report => self.keep_report_columns(),
        }
    }

    /// Keeps the columns a report reads: all but the trials' ids (a failed trial's is kept
    /// with its failure, [`Failed::id`]: a report names the trials that failed), their
    /// rounds (their places in a round are kept: the order test's) and their metrics' units (the metrics' descriptions say each metric's). At
    /// 10⁷ trials of one metric these are a quarter of the table.
    pub(super) fn keep_report_columns(&mut self) {
        if self.ids.len() == self.len() {
            for f in &mut self.failed {
                if f.id.is_none() {
                    f.id = Some(self.ids.get(f.trial).into_owned());
                }
            }
        }
        self.ids = Ids::default();
        self.round = Vec::new();
        self.unit = Vec::new();
    }

    /// Keeps only the columns the analysis groups its values by (`analyze::table::groups`):
    /// each trial's cell, host, session, status, warm-up, start and place in its round,
    /// and its metrics' names and values; the names, the metrics' descriptions and the parsers' warnings.
    /// The others (repetitions, rounds, wall times, ids, units, means, secondary metrics,
    /// sources, flags, failures) are let go: what a report does once it has taken what
    /// else it needs of them (`analyze::summarize_owned`).
    pub fn keep_grouping_columns(&mut self) {
        self.repetition = Vec::new();
        self.round = Vec::new();
        self.wall_time = Vec::new();
        self.ids = Ids::default();
        self.unit = Vec::new();
        self.mean = Vec::new();
        self.secondary = SecondaryMetrics::default();
        self.monitored = Vec::new();
        self.flags = Vec::new();
        self.failed = Vec::new();
    }

    /// Lets go of everything of the trials but the names and the metrics' descriptions:
    /// each trial's cell, host, session, status, times, id, metrics, secondary metrics,
    /// sources and flags, the failures and the parsers' warnings. What a report does once
    /// it has taken from them all its summary needs (`analyze::summarize_owned`); the
    /// trials are then none, and a reader of a column finds it empty.
    pub fn let_go_of_columns(&mut self) {
        let Trials { names, metrics, .. } = std::mem::take(self);
        *self = Trials { names, metrics, ..Trials::default() };
    }

    /// Append `other`'s records after these.
    pub fn append(&mut self, other: Trials) {
        let offset = self.len();
        let names: Vec<Name> = other.names.0.items.iter().map(|s| self.names.intern(s)).collect();
        let map = |n: &Name| names[n.index()];
        self.cell.extend(other.cell.iter().map(map));
        self.host.extend(other.host.iter().map(map));
        self.session.extend(other.session.iter().map(map));
        self.status.extend(other.status);
        self.warmup.extend(other.warmup);
        self.repetition.extend(other.repetition);
        self.round.extend(other.round);
        self.position.extend(other.position);
        self.started.extend(other.started);
        self.wall_time.extend(other.wall_time);
        self.ids.append(other.ids);
        let rows = self.metric.len();
        self.row_end.extend(other.row_end.iter().map(|e| e + rows));
        self.metric.extend(other.metric.iter().map(map));
        self.value.extend(other.value);
        self.unit.extend(other.unit.iter().map(map));
        self.mean.extend(other.mean);
        for (metric, info) in other.metrics {
            let known = self.metrics.entry(map(&metric)).or_insert(None);
            if known.is_none() {
                *known = info;
            }
        }
        self.failed.extend(other.failed.into_iter().map(|f| Failed { trial: f.trial + offset, ..f }));
        for (w, n) in other.warnings {
            *self.warnings.entry(w).or_default() += n;
        }
        self.secondary.append(&other.secondary, map);
        self.monitored.extend(other.monitored.iter().map(map));
        self.flags.extend(other.flags.iter().map(|(t, f)| (t + offset, map(f))));
    }
}
